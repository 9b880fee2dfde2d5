"""Permutation feature importance (Breiman 2001; Fisher et al. 2019).

Every feature (or group) and every repeat is one *item* of a single engine plan: item ``(j, r)``
takes feature ``j``'s columns of row ``i`` from row ``pi_jr(i)`` of a permutation computed on the
device from the key and the label ``(j, r)``. The loss is the plan's reducer: weighted sums over
rows for losses that decompose, whole items group by group for AUC and user callables, so no
permuted prediction outlives its block.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Callable, Literal

import jax
import numpy as np

from ..data import (
    Choice,
    Deferred,
    Feature,
    Int,
    Replicates,
    as_key,
    validate_params,
)
from ..engine import (
    ROW_LOSSES,
    Keep,
    LossSums,
    Stacked,
    at_permuted_rows,
    check_collapse_columns,
    evaluate,
    fold_in,
    key_bits,
    predict_rows,
    rng_stream,
)
from ..models import Predictor, probability_classifier
from ..results import FeatureImportance, PermutationDetails, mean_and_std
from ._loss import (
    LOSSES,
    RESPONSES,
    SKLEARN_SCORING,
    check_response,
    check_target,
    default_loss,
    logits_to_probabilities,
    resolve_loss,
    row_loss_terms,
    scored_predictor,
    sklearn_response,
    weighted_loss_metrics,
)
from ._scorers import has_scorer, scorer_importances
from ._setup import (bootstrap_weights, cached_stage, digest, keep_layout, prepare, rows_of,
                     warm_call, warm_function)

__all__ = ["LOSSES", "permutation_importance"]

_KINDS = ("difference", "ratio", "relative", "raw")


def _baseline(spec, metric: np.ndarray, kind: str) -> np.ndarray:
    """The intact data's metric, on the importances' scale: for ``kind="raw"`` a score with
    best value 1 as its loss ``1 - score``, as the importances."""
    return spec.importance(metric, metric, "raw") if kind == "raw" else metric


def _sample_rows(max_samples, n: int, bits: list[int]) -> np.ndarray | None:
    if max_samples is None:
        return None
    if isinstance(max_samples, bool) or not isinstance(
        max_samples, (int, float, np.integer, np.floating)
    ):
        raise ValueError(
            f"max_samples must be an int in [1, {n}] or a float in (0, 1]; got {max_samples!r}."
        )
    if isinstance(max_samples, (float, np.floating)):
        if not 0 < max_samples <= 1:
            raise ValueError(
                f"max_samples must be an int in [1, {n}] or a float in (0, 1]; got "
                f"{max_samples!r}."
            )
        m = int(max_samples * n)  # floored, as scikit-learn does
        if m == 0:
            raise ValueError(
                f"max_samples={max_samples!r} of {n} rows is floor({max_samples!r} * {n}) = 0 "
                f"rows; use a fraction of at least {1 / n:.3g} or an int count.")
    else:
        if not 1 <= max_samples <= n:
            raise ValueError(
                f"max_samples must be an int in [1, {n}] or a float in (0, 1]; got "
                f"{max_samples!r}."
            )
        m = int(max_samples)
    if m == n:
        return None
    rows = np.sort(rng_stream(bits, 2).choice(n, m, replace=False))
    rows.flags.writeable = False  # shared by every run of a kept set-up and its results
    return rows


@warm_function
@validate_params(kind=Choice(*_KINDS), n_repeats=Int(1), response=Choice(*RESPONSES),
                 n_bootstrap=Replicates())
def permutation_importance(
    model,
    X,
    y,
    *,
    loss: str | Callable | None = None,
    kind: Literal["difference", "ratio", "relative", "raw"] = "difference",
    n_repeats: int = 5,
    max_samples: int | float | None = None,
    n_bootstrap: int = 0,
    features=None,
    output=None,
    sample_weight=None,
    random_state: int | jax.Array = 0,
    greater_is_better: bool | None = None,
    response: Literal["probability", "logits"] = "probability",
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
    scoring=None,
    n_jobs: int | None = None,
) -> FeatureImportance:
    """Permutation feature importance (Breiman 2001; Fisher, Rudin & Dominici 2018).

    For each feature (or feature group) ``j`` and repeat ``r``, the rows of ``j``'s columns are
    shuffled and the model's loss is compared with its loss on the intact data:
    ``e_perm - e_orig`` (``kind="difference"``) or ``e_perm / e_orig`` (``"ratio"``). All
    features and repeats run as one batched, chunked engine evaluation.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        Data on which the loss is measured (typically held-out data). NaN (missing values)
        is passed on to a host model that handles it (scikit-learn's ``HistGradientBoosting*``,
        a ``Pipeline`` with an imputer), as scikit-learn does; a JAX model is refused it.
    y : array of shape (n,) or (n, o)
        Targets: numbers for regression losses, class labels for classification losses.
    loss : str, callable, or a list or dict of them, optional
        Default ``"mse"``, or ``"accuracy"`` for a scikit-learn classifier (scikit-learn's
        default score; for a regressor scikit-learn scores R^2, here ``loss="r2"``).
        ``"mse"``, ``"rmse"``, ``"mae"``, ``"medae"`` (the median absolute error), ``"mape"``
        (the mean absolute percentage error, as a fraction), ``"msle"``, ``"rmsle"`` (the
        mean squared logarithmic error and its root), ``"r2"``, ``"poisson"``, ``"gamma"``
        (regression, one value per model output; the last two mean Poisson and gamma
        deviances of predicted means, for counts and for positive amounts),
        ``"cross_entropy"`` (one probability column against targets in [0, 1]), the R
        package Metrics' (iml's) ``"rse"``, ``"rrse"``, ``"rae"`` (relative squared error,
        its root, relative absolute error), ``"smape"`` and ``"percent_bias"`` (fractions),
        ``"log_loss"`` (of targets in [0, 1] that are not all 0 and 1: ``"cross_entropy"``),
        ``"brier"`` (the Brier score, halved for two classes as scikit-learn's),
        ``"accuracy"``, ``"auc"`` (classification; binary or one-vs-rest
        macro AUC), or a callable ``loss(y, prediction[, weights])`` returning a scalar or one
        value per output; a callable with a ``sample_weight`` keyword (scikit-learn's metrics)
        gets the weights by it. ``prediction`` is (n,) for one output, else (n, o). A callable that
        ``jax.jit`` can trace is batched over all items; any other is called on NumPy arrays.
        Scores (``"r2"``, ``"accuracy"``, ``"auc"``) become the loss ``1 - score`` so that
        importance is positive: the difference is ``score_orig - score_perm``.
        scikit-learn's scoring names for the same metrics are accepted
        (``"neg_mean_squared_error"``, ``"neg_root_mean_squared_error"``,
        ``"neg_mean_absolute_error"``, ``"neg_median_absolute_error"``,
        ``"neg_mean_absolute_percentage_error"``, ``"neg_mean_squared_log_error"``,
        ``"neg_root_mean_squared_log_error"``, ``"neg_mean_poisson_deviance"``,
        ``"neg_mean_gamma_deviance"``, ``"neg_log_loss"``, ``"neg_brier_score"``,
        ``"roc_auc"``, ``"roc_auc_ovr"``, ``"r2"``, ``"accuracy"``), and R's loss names
        (hstats' ``"squared_error"``, ``"absolute_error"``, ``"poisson"``, ``"gamma"``,
        ``"logloss"``, ``"mlogloss"``, ``"classification_error"``; yardstick's
        ``"rsq_trad"``, ``"mn_log_loss"``; iml's ``"ce"``, ``"logLoss"``, ``"mdae"``), and
        dalex's (``"mad"``, ``"1-auc"``), and give their importances (R's names take y as
        jaximp's losses do, except that hstats' names score one column of y against each of
        several outputs, as R recycles it): a scikit-learn
        classifier's accuracy (by any of its names) scores the labels of its ``predict`` (a
        tuned threshold, SVC's probabilities), ``"roc_auc"`` of a binary one its
        ``decision_function`` (which saturated probabilities tie), the other losses its
        ``predict_proba``.
        Several losses (a list, or a dict of name to loss, as scikit-learn's ``scoring``)
        are scored on the very same permutations, those that decompose over rows in one pass,
        and give a dict of results by name.
    kind : {"difference", "ratio", "relative", "raw"}, default "difference"
        ``"relative"``: ``e_perm / e_orig - 1``, R hstats' ``perm_importance(normalize =
        TRUE)`` (a scorer callable's ``score_orig / score_perm - 1``, as its ratio).
        ``"raw"``: the permuted loss itself, DALEX's ``model_parts(type="variable_importance")``
        (a score with best value 1 as its loss ``1 - score``, DALEX's ``1 - AUC``; a scorer
        callable's permuted score as it returns it); ``info.baseline`` is the intact data's
        on the same scale.
    n_repeats : int, default 5
        Permutations per feature.
    max_samples : int or float, optional
        Rows to use: an int count or a fraction of ``n`` (``floor(max_samples * n)`` rows,
        as scikit-learn takes). One row subset, drawn without
        replacement from ``random_state``, serves the baseline and every permutation (unlike
        scikit-learn, whose baseline uses all rows).
    n_bootstrap : int, default 0
        Row-bootstrap replicates for intervals over the data, read from the per-row losses
        of the same evaluations (no further model calls; the predictions of every item are
        kept, checked against the memory budget). ``importances`` then holds the replicates
        of the mean over repeats, ``importances_std`` their standard deviation and
        ``intervals()`` percentile intervals; the repeats move to ``info.repeats``. Needs one
        loss that sums over rows (not AUC, a callable or several losses).
    features : str, int, list or dict, optional
        Features (or groups) to score; default all. A dict of names to lists of features
        scores each list as one set, its columns permuted together, and the sets may share
        features (dalex's ``variable_groups``; ``groups=`` declares sets that do not overlap,
        which every method then reads as features). A set's permutations follow its place in
        the dict.
    output : int, str or list, optional
        Model outputs the loss sees (default all). Regression losses give one importance per
        output; classification losses read all selected columns as class probabilities (with
        ``output`` given, a scikit-learn classifier's accuracy is that of the most probable
        selected class, not of its ``predict``, and its binary ``"roc_auc"`` ranks the
        probability, not ``decision_function``).
    sample_weight : array of shape (n,), optional
        Case weights of the loss.
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Permutation ``r`` of feature ``j`` (its position in ``X``) is a keyed bijection of the
        rows computed on the device from the key and the label ``(j, r)``, so results do not
        depend on chunking, devices, on which other features are scored, or (for the first
        repeats) on ``n_repeats``.
    greater_is_better : bool, optional
        For a callable ``loss`` only: True if it is a score. Then the difference is
        ``score_orig - score_perm`` and the ratio ``score_orig / score_perm``. With several
        losses it applies to the callables among them (at least one).
    response : {"probability", "logits"}, default "probability"
        What a classifier's columns hold for ``"log_loss"``, ``"accuracy"`` and ``"auc"``.
        Probabilities are checked on ``X`` (in [0, 1], rows summing to 1 when every column
        is scored) and refused otherwise; ``"logits"`` applies a softmax (a sigmoid for one
        column) first.
    feature_names, categorical, groups
        Data description (see :func:`jaximp.as_dataset`); the columns of a group are permuted
        together, as one feature.
    variables : pytree, optional
        Variables of a Flax linen module.
    memory_budget : int, optional
        Bytes the whole call may use beyond its result and the data (default
        :func:`jaximp.default_memory_budget`); a result that cannot fit is refused before any
        model evaluation.
    progress : bool, optional
        A progress line on stderr (default: in an interactive terminal, for calls of more than
        one chunk, or with ``JAXIMP_PROGRESS=1``; process 0 only).
    scoring : str, callable, or a list or dict of them, optional
        scikit-learn's name for ``loss`` (its scoring names, e.g. ``"neg_mean_squared_error"``
        or ``"accuracy"``); give ``loss`` or ``scoring``, not both. A scikit-learn estimator
        takes any name scikit-learn knows: one without a built-in loss here (e.g.
        ``"balanced_accuracy"``, ``"f1"``) is scored by ``sklearn.metrics.get_scorer(name)``,
        as below, and so is every name in the same call. A scorer callable
        ``scorer(estimator, X, y[, sample_weight=])`` (``sklearn.metrics.make_scorer``, or one
        returning a dict of scores), or a dict of names to scorers and scoring names, is
        called on the host with each permuted copy of ``X`` (a DataFrame stays one), as
        scikit-learn does: on the same permutations as the batched losses, one model call at
        a time. ``sample_weight`` is passed to it only when given; ``output``, ``response``,
        ``greater_is_better`` and ``n_bootstrap`` do not apply. Its ratio is
        ``score_orig / score_perm``.
    n_jobs : int, optional
        Accepted for scikit-learn's signature and not used: jaximp evaluates every feature and
        repeat in batches on its devices, and the results do not depend on it.

    Returns
    -------
    FeatureImportance, or a dict of them for several losses
        ``importances`` (p, o, r) raw values, ``importances_mean`` and ``importances_std``
        (ddof 0, as scikit-learn) over repeats; ``quantiles()`` gives bands. ``info`` holds
        ``loss``, ``kind``, ``baseline`` (metric on intact data, shape (o,)), ``n_repeats``,
        ``n_samples`` and ``sample_rows`` (the rows used, or None for all).

    Notes
    -----
    One-column classifiers: a column whose predictions on ``X`` are all class labels (values
    of ``y``) is read as labels; otherwise as the probability of the larger of two classes.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> y = X @ np.array([2.0, 1.0, 0.0])
    >>> result = permutation_importance(lambda X: X @ jnp.array([2.0, 1.0, 0.0]), X, y,
    ...                                 n_repeats=10)
    >>> result.importances.shape
    (3, 1, 10)
    >>> np.round(result.importances_mean[:, 0] / (2 * np.var(X, axis=0)))  # = coef^2
    array([4., 1., 0.])
    """
    options = dict(loss=loss, kind=kind, n_repeats=n_repeats, max_samples=max_samples,
                   n_bootstrap=n_bootstrap, features=features, output=output,
                   sample_weight=sample_weight, random_state=random_state,
                   greater_is_better=greater_is_better, response=response,
                   feature_names=feature_names, categorical=categorical, groups=groups,
                   variables=variables, memory_budget=memory_budget, progress=progress,
                   scoring=scoring, n_jobs=n_jobs)
    parts = None if n_bootstrap else _apart_by_response(  # refused below with one pass
        model, loss if scoring is None else scoring, greater_is_better)
    if parts is not None:  # on the same permutations, one set of losses after the other
        named = "loss" if scoring is None else "scoring"
        results = {}
        for part in parts:
            gib = greater_is_better if any(map(callable, part.values())) else None
            results.update(warm_call("permutation importance", _set_up, model, X, y,
                                     dict(options, greater_is_better=gib, **{named: part}))())
        return {name: results[name] for name in _named_losses(options[named])}
    # a repeated call on an Explainer's data skips its setup: the call, set up once per
    # model, targets and options, still evaluates (and dispatches its device work) anew
    return warm_call("permutation importance", _set_up, model, X, y, options)()


def _apart_by_response(model, loss, greater_is_better) -> list[dict] | None:
    """Several losses of a scikit-learn classifier that scikit-learn scores on different
    methods (accuracy on ``predict``, ``"roc_auc"`` on ``decision_function``, the others on
    ``predict_proba``): the losses of each method, which run apart; else None (and for
    losses the set-up refuses)."""
    if (not _several(loss) or (isinstance(loss, Mapping) and has_scorer(loss))
            or probability_classifier(model) is None):
        return None
    named = _named_losses(loss)
    if greater_is_better is not None and not any(map(callable, named.values())):
        return None  # refused by the set-up, naming them all
    parts: dict = {}  # response method -> losses
    for name, each in named.items():
        parts.setdefault(sklearn_response(each), {})[name] = each
    return list(parts.values()) if len(parts) > 1 else None


def _set_up(model, X, y, *, loss, kind, n_repeats, max_samples, n_bootstrap, features, output,
            sample_weight, random_state, greater_is_better, response, feature_names,
            categorical, groups, variables, memory_budget, progress, scoring, n_jobs):
    """Validate and plan a permutation importance; returns ``run()``, which evaluates it."""
    if n_jobs is not None and (isinstance(n_jobs, bool)
                               or not isinstance(n_jobs, (int, np.integer))):
        raise TypeError(f"n_jobs must be an int or None (it is not used); got {n_jobs!r:.40}.")
    scoring = _sklearn_scorers(scoring, model)
    scorer = scoring if scoring is not None and has_scorer(scoring) else None
    if scorer is not None:
        _check_scorer_options(loss, output, greater_is_better, response, n_bootstrap)
    elif scoring is not None:
        loss = _from_scoring(scoring, loss)
    # a given loss is checked before any model work; the default needs the model's outputs
    losses = None if loss is None else _named_losses(loss)
    for each in (losses or {}).values():
        check_response(response, each)
    if losses is not None and len(losses) > 1 and greater_is_better is not None and not any(
            callable(each) and not isinstance(each, str) for each in losses.values()):
        raise ValueError(f"greater_is_better applies to a callable loss only; got it with the "
                         f"named losses {list(losses)}.")
    key = as_key(random_state)
    bits = key_bits(key)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress, allow_missing=True, reuse=True,
    )
    n = dataset.n_rows
    target = check_target(y, n, dataset.source)
    if scorer is not None:
        rows = _sample_rows(max_samples, n, bits)
        taken = dataset if rows is None else rows_of(dataset, rows)
        chosen, labels = scored_items(taken, features)
        plan = _plan(taken.n_columns, tuple(feat.columns for feat in chosen), labels,
                     n_repeats, tuple(bits))
        return functools.partial(scorer_importances, _estimator(model), taken, y, chosen, plan,
                                 rows, kind, n_repeats, scorer, memory_budget)
    if losses is None:
        default = default_loss(predictor, target)
        check_response(response, default)
        losses = _named_losses(default)
    predictor = scored_predictor(predictor, model, losses.values(), response, output, dataset)
    if response == "logits":
        predictor = logits_to_probabilities(predictor)
    rows = _sample_rows(max_samples, n, bits)
    all_targets = target  # their classes are those of the subsample's targets too
    if rows is not None:
        # kept on an Explainer's data, its device copy with it
        dataset, target = rows_of(dataset, rows), target[rows]
    chosen, feature_ids = scored_items(dataset, features)
    columns = tuple(feat.columns for feat in chosen)
    c = dataset.n_columns
    engine = dict(memory_budget=memory_budget, progress=progress)

    def build():
        specs = {name: resolve_loss(each, target, predictor, output, dataset.weights,
                                    _sign_of(each, greater_is_better, len(losses)),
                                    all_targets.reshape(len(all_targets), -1)[:, 0])
                 for name, each in losses.items()}
        checked = [(feat.name, column) for feat in chosen for column in feat.columns]
        check_collapse_columns([name for name, _ in checked], dataset.resident_X,
                               [column for _, column in checked], predictor.dtype,
                               "permuted values", stacklevel=5)
        plan = _plan(c, columns, feature_ids, n_repeats, tuple(bits))
        base: list = []  # the predictions on the intact data, computed once if needed

        def baseline_predictions():
            if not base:
                base.append(predict_rows(predictor, dataset, **engine))
            return base[0]

        reducers = {name: spec.reducer(baseline_predictions, predictor.n_outputs)
                    for name, spec in specs.items()}
        return specs, plan, reducers

    specs, plan, reducers = cached_stage(
        dataset, ("permutation importance", tuple(losses.items()), output, greater_is_better,
                  predictor, feature_ids, columns, n_repeats, tuple(bits),
                  digest(target) if dataset.pinned else None),  # unpinned data keeps nothing
        build, uncached=rows is not None)
    return functools.partial(_run, predictor, dataset, key, chosen, rows, n_repeats, kind,
                             n_bootstrap, engine, specs, plan, reducers, loss)


def _run(predictor, dataset, key, chosen, rows, n_repeats, kind, n_bootstrap, engine, specs,
         plan, reducers, loss):
    """Evaluate a planned permutation importance (from :func:`_set_up`) and read it out."""
    p = len(chosen)
    if n_bootstrap:
        (name, reducer), = _bootstrappable(reducers, n_bootstrap, specs)
        weightings, _ = bootstrap_weights(dataset, n_bootstrap, fold_in(key, 1))
        kept = evaluate(predictor, dataset, plan, Keep(), label="permutation importance",
                        result_hint="use fewer features, repeats or rows, or n_bootstrap=0",
                        **engine)
        metric = weighted_loss_metrics(reducer, row_loss_terms(reducer, kept), weightings)
        return _bootstrap_result(specs[name], metric, p, n_repeats, kind, chosen, dataset,
                                 rows, n_bootstrap)
    # losses that decompose share one pass; AUC and callables keep whole items, one pass each
    summing = [name for name, r in reducers.items() if isinstance(r, LossSums)]
    metrics = {}
    if len(summing) == 1:
        # one loss of sums: the result is built while the devices run, and an Explainer's
        # call returns once dispatched, read when used
        metrics[summing[0]] = evaluate(predictor, dataset, plan, reducers[summing[0]],
                                       label="permutation importance",
                                       defer=len(reducers) == 1, **engine)
    elif summing:
        stacked = Stacked(tuple(reducers[name] for name in summing), predictor.n_outputs)
        values = evaluate(predictor, dataset, plan, stacked, label="permutation importance",
                          **engine)
        metrics.update(zip(summing, stacked.split(values)))
    for name in reducers:
        if name not in metrics:
            metrics[name] = evaluate(predictor, dataset, plan, reducers[name],
                                     label="permutation importance", **engine)

    def result(spec, metric, reducer):
        width = (reducer.partial_shape(predictor.n_outputs)[0] if isinstance(metric, Deferred)
                 else metric.shape[1])  # the outputs scored

        def importances_of(metric):
            perturbed = metric[1:].reshape(p, n_repeats, -1).transpose(0, 2, 1)  # (p, o, r)
            return spec.importance(perturbed, metric[0][None, :, None], kind)

        importances = Deferred.apply(importances_of, metric)
        # the mean and spread are read from the importances when first asked for
        spread = Deferred.apply(mean_and_std, importances)
        return FeatureImportance(
            method="permutation",
            feature_names=tuple(f.name for f in chosen),
            output_names=spec.result_names(width),
            importances_mean=Deferred.apply(lambda parts: parts[0], spread),
            importances_std=Deferred.apply(lambda parts: parts[1], spread),
            importances=importances,
            info=Deferred.apply(lambda metric: keep_layout(PermutationDetails(
                loss=spec.name, kind=kind, baseline=_baseline(spec, metric[0], kind),
                n_repeats=n_repeats,
                n_samples=dataset.n_rows, sample_rows=rows,
            ), dataset, chosen), metric),
        )

    results = {name: result(specs[name], metrics[name], reducers[name]) for name in specs}
    if not dataset.defers_reads or kind in ("ratio", "relative"):
        # read now: a plain call refuses bad predictions at the call, and kind="ratio" may
        # refuse a baseline of float rounding
        for each in results.values():
            each.importances
    return results if _several(loss) else results[next(iter(results))]


def _bootstrappable(reducers: dict, n_bootstrap: int, specs: dict) -> list:
    """The one loss that row-bootstrap replicates can reweight (a sum over rows)."""
    if len(reducers) != 1 or not isinstance(next(iter(reducers.values())), LossSums):
        given = [spec.name for spec in specs.values()]
        raise ValueError(
            f"n_bootstrap={n_bootstrap} reweights per-row losses, so it needs one loss that "
            f"sums over rows ({ROW_LOSSES}); got {given!r:.120}. Use n_bootstrap=0 for "
            "several losses and for the others (AUC, the median absolute error, the "
            "relative and symmetric errors, callables).")
    return list(reducers.items())


def _bootstrap_result(spec, metric, p, n_repeats, kind, chosen, dataset, rows, n_bootstrap):
    """The result from the metric of every item under every weighting (b, 1 + B, k): the
    repeats' importances under the case weights, and B replicates of their mean."""
    m, k = metric.shape[1], metric.shape[2]
    baseline = metric[0]  # (1 + B, k)
    perturbed = metric[1:].reshape(p, n_repeats, m, k).transpose(2, 0, 3, 1)  # (1+B, p, k, r)
    importances = spec.importance(perturbed, baseline[:, None, :, None], kind)
    repeats, replicates = importances[0], importances[1:].mean(axis=-1)  # (p, k, r), (B, p, k)
    return FeatureImportance(
        method="permutation",
        feature_names=tuple(f.name for f in chosen),
        output_names=spec.result_names(k),
        importances_mean=repeats.mean(axis=-1),
        importances_std=replicates.std(axis=0),
        importances=np.moveaxis(replicates, 0, -1),
        info=keep_layout(PermutationDetails(
            loss=spec.name, kind=kind, baseline=_baseline(spec, baseline[0], kind),
            n_repeats=n_repeats,
            n_samples=dataset.n_rows, sample_rows=rows, n_bootstrap=n_bootstrap,
            repeats=repeats), dataset, chosen),
    )


def scored_items(dataset, features) -> tuple[list[Feature], tuple[int, ...]]:
    """The items a permutation importance scores and their permutation stream labels: the
    dataset's features (``features`` a selection, labelled by position), or named sets of
    them, which may overlap (``features`` a dict, as dalex's ``variable_groups``; labelled
    after the features, in the dict's order)."""
    if not isinstance(features, Mapping):
        chosen = dataset.resolve(features)
        return chosen, tuple(dataset.positions(chosen))
    if not features:
        raise ValueError("features is an empty dict; give a name and a list of features for "
                         "each set to permute together, or None for every feature.")
    items = []
    for name, members in features.items():
        if not isinstance(name, str):
            raise TypeError(f"features as a dict names each set of features by a str; got "
                            f"{type(name).__name__} {name!r:.40}.")
        members = dataset.resolve(members)  # refuses an empty list
        columns = sorted({column for feat in members for column in feat.columns})
        items.append(Feature(name, tuple(columns)))
    first = len(dataset.features)
    return items, tuple(range(first, first + len(items)))


@functools.lru_cache(maxsize=16)  # the same settings again give the same plan object
def _plan(c: int, columns: tuple, feature_ids: tuple, n_repeats: int, bits: tuple):
    """Item 0 is the intact data (the baseline); item ``1 + j * n_repeats + r`` permutes the
    columns of feature ``j`` (``columns[j]``) with the stream label ``(feature_ids[j], r)``."""
    p = len(columns)
    masks = np.zeros((p + 1, c), bool)  # the last mask replaces nothing: the baseline
    for j, cols in enumerate(columns):
        masks[j, list(cols)] = True
    streams = [(-1, 0)] + [(feature_ids[j], r) for j in range(p) for r in range(n_repeats)]
    item_mask = np.concatenate([[p], np.repeat(np.arange(p), n_repeats)])
    return at_permuted_rows(masks, item_mask, bits, streams)


def _sign_of(loss, greater_is_better, n_losses: int):
    """``greater_is_better`` for one of ``n_losses`` losses: among several, it speaks for the
    callables (a named loss knows its own direction)."""
    if n_losses == 1 or (callable(loss) and not isinstance(loss, str)):
        return greater_is_better
    return None


def _check_scorer_options(loss, output, greater_is_better, response, n_bootstrap):
    """Refuse the options a scorer callable decides itself (or that need per-row losses)."""
    given = {"loss": loss is not None, "output": output is not None,
             "greater_is_better": greater_is_better is not None,
             "response": response != "probability", "n_bootstrap": bool(n_bootstrap)}
    if any(given.values()):
        raise ValueError(
            f"a scorer callable scorer(estimator, X, y) picks the estimator's response and "
            f"its sign itself and returns one score per call; "
            f"{[name for name, on in given.items() if on]} do not apply with it. Leave them "
            "out, or pass a loss(y, prediction) as loss= instead of scoring=.")


def _estimator(model):
    """The user's estimator that a scorer calls: the model, or a host Predictor's."""
    if not isinstance(model, Predictor):
        if not any(hasattr(model, name) for name in ("predict", "predict_proba",
                                                     "decision_function")):
            raise TypeError(
                f"a scorer callable scorer(estimator, X, y) calls a scikit-learn-like "
                f"estimator's predict methods; got {type(model).__name__}, which has none. "
                "Pass loss(y, prediction) as loss= instead.")
        return model
    estimator = getattr(model.host_fn, "__self__", None)
    if estimator is None:
        raise TypeError(
            f"a scorer callable scorer(estimator, X, y) calls a scikit-learn-like estimator; "
            f"this Explainer holds {model.name}, which has none. Pass loss(y, prediction) "
            "as loss= instead.")
    return estimator


def _scoring_names(scoring) -> list:
    return list(scoring.values()) if isinstance(scoring, Mapping) else (
        list(scoring) if isinstance(scoring, (list, tuple)) else [scoring])


def _sklearn_scorers(scoring, model):
    """``scoring`` with scikit-learn's scorers for the scoring names that have no built-in
    loss here (``"balanced_accuracy"``, ``"f1"``...), when ``model`` is an estimator they can
    call: then every name is scikit-learn's scorer, as in its ``permutation_importance``.
    Other ``scoring`` unchanged."""
    if scoring is None or callable(scoring):
        return scoring
    if isinstance(scoring, (list, tuple)) and not all(isinstance(s, str) for s in scoring):
        return scoring  # scikit-learn's lists hold names: refused below
    names = [name for name in _scoring_names(scoring) if isinstance(name, str)]
    if all(name in SKLEARN_SCORING or name in LOSSES for name in names):
        return scoring
    try:
        from sklearn.metrics import get_scorer, get_scorer_names
        _estimator(model)
    except (ImportError, TypeError):
        return scoring  # refused below, with the fix
    known = get_scorer_names()
    if not all(name in known or name in SKLEARN_SCORING or name in LOSSES for name in names):
        return scoring  # a name nobody knows: refused below
    jaximp_names = [name for name in names if name not in known]
    if jaximp_names:
        raise ValueError(
            f"scoring mixes names only scikit-learn's scorers know "
            f"{[name for name in names if name not in SKLEARN_SCORING and name not in LOSSES]}"
            f" (called on the host) with jaximp's loss names {jaximp_names}, which those "
            "scorers cannot run. Give every loss by its scikit-learn scoring name (e.g. "
            "'neg_log_loss' for 'log_loss').")
    if isinstance(scoring, str):
        return get_scorer(scoring)
    return {name: get_scorer(name) for name in names} if isinstance(scoring, (list, tuple)) \
        else {key: get_scorer(each) if isinstance(each, str) else each
              for key, each in scoring.items()}


def _from_scoring(scoring, loss):
    """scikit-learn's ``scoring`` (names, or a list or dict of names) as ``loss``."""
    if loss is not None:
        raise ValueError(
            f"give loss or scoring (scikit-learn's name for it), not both; got loss={loss!r:.40} "
            f"and scoring={scoring!r:.40}."
        )
    names = _scoring_names(scoring)
    if not all(isinstance(name, str) for name in names):
        raise TypeError(
            "scoring takes scikit-learn's scoring names (e.g. 'neg_mean_squared_error'), a "
            "scorer callable(estimator, X, y), or a list of names or dict of names and "
            f"scorers; got {scoring!r:.60}."
        )
    unknown = [name for name in names if name not in SKLEARN_SCORING and name not in LOSSES]
    if unknown:
        raise ValueError(
            f"scoring names {unknown[:3]} have no built-in loss here; the scoring names taken "
            f"are {sorted(SKLEARN_SCORING)} (and jaximp's losses {LOSSES}), and, for a "
            "scikit-learn estimator, the names scikit-learn's get_scorer knows (called on the "
            "host). Pass a loss(y, prediction) as loss= instead.")
    return scoring


def _several(loss) -> bool:
    return isinstance(loss, (list, tuple, Mapping))


def _named_losses(loss) -> dict:
    """``loss`` as ``{name: loss}``: one loss, a list of them (named by themselves) or a
    dict of name to loss, as scikit-learn's ``scoring``."""
    if not _several(loss):
        return {"loss": loss}
    items = list(loss.items()) if isinstance(loss, Mapping) else [
        (each if isinstance(each, str) else getattr(each, "__name__", repr(each)), each)
        for each in loss]
    if not items:
        raise ValueError("loss must name at least one loss; got an empty collection.")
    names = [name for name, _ in items]
    if any(not isinstance(name, str) for name in names) or len(set(names)) != len(names):
        raise ValueError(
            f"several losses need distinct string names (dict keys, loss names or callables' "
            f"__name__); got {names}."
        )
    return dict(items)
