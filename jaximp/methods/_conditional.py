"""Conditional permutation importance (Strobl et al. 2008; Chamma et al. 2023 "CFI") and the
conditional predictive impact test (Watson & Wright 2021 "CPI").

Feature ``j``'s columns are replaced by a draw from their distribution given the other
features, and the model is scored exactly as permutation importance scores it. The samplers
(:mod:`._samplers`) fit once per feature on the host; the model evaluations are one engine plan:

- ``"gaussian"``, ``"knockoff"``, ``"residual"``: the draw for row ``i`` is ``M[i] + A[pi(i)]``
  (a conditional mean plus a row of exchangeable noise: permuted residuals, or a knockoff
  noise draw of its own for each repeat). The engine evaluates the model on ``[X | M | A |
  A]`` (knockoffs: once per repeat, with that repeat's draw), whose item ``(j, r)`` permutes
  feature ``j``'s columns of the first ``A`` with a permutation computed on the device from
  the key and the label ``(j, r)``, as permutation importance does; the model sees ``X`` with
  ``x_j`` set to ``M + A[pi]`` wherever the permuted noise differs from the row's own (a row
  the permutation maps to itself keeps its value, as in permutation importance).
- ``"strata"`` and a callable sampler: replacement rows per item (a within-strata permutation,
  or the user's draws) read through a per-row code table.

The loss is the plan's reducer (the same losses and checks as permutation importance). With
``test="cpi"`` or ``n_bootstrap`` the predictions of every item are kept, and the per-row losses
give the test and row-bootstrap intervals without further model evaluations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..data import (
    Choice,
    Dataset,
    Feature,
    Int,
    Real,
    Replicates,
    as_key,
    row_weights,
    validate_params,
)
from ..engine import (
    ROW_LOSSES,
    Keep,
    at_coded_values,
    at_permuted_rows,
    evaluate,
    key_bits,
    predict_rows,
    rng_stream,
)
from ..models import HostData, Predictor, stable_apply
from ..results import FeatureImportance, mean_and_std
from ._loss import (
    RESPONSES,
    check_response,
    check_target,
    default_loss,
    logits_to_probabilities,
    resolve_loss,
    row_loss_terms,
    scored_predictor,
    weighted_loss_metrics,
)
from ._samplers import (
    association,
    knockoff_parameters,
    knockoff_sampler,
    linear_samplers,
    quantile_cuts,
    regressor_sampler,
    split_points,
    strata_codes,
    within_strata,
)
from ._setup import (bootstrap_weights, cached_stage, digest, keep_layout, prepare,
                     warn_unresolved_values)

__all__ = ["ConditionalImportance", "conditional_importance"]

SAMPLERS = ("gaussian", "knockoff", "residual", "strata")
TEST_METHODS = ("t", "wilcoxon", "fisher")
STRATA = ("auto", "quantiles", "splits")
# the losses whose per-row terms a test can compare
_PER_ROW_LOSSES = ("mse", "mae", "mape", "msle", "poisson", "gamma", "log_loss", "brier",
                   "accuracy")
_TEST_NAMES = {"t": "t-test", "wilcoxon": "Wilcoxon signed-rank", "fisher": "Fisher sign-flip"}
_STREAM = 0x5A17  # rng stream tag of the host-side draws (knockoff noise, strata)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class ConditionalImportance(FeatureImportance):
    """:class:`FeatureImportance` of :func:`conditional_importance`; with ``test="cpi"``,
    :meth:`to_frame` adds the test's columns ``statistic``, ``std_error``, ``pvalue`` and
    ``ci_low`` (also in ``info["test"]``, arrays (p, o))."""

    def to_frame(self, sort: bool = True) -> pd.DataFrame:
        frame = super().to_frame(sort=False)
        test = self.info.get("test") if isinstance(self.info, Mapping) else None
        if test is not None:
            for name in ("statistic", "std_error", "pvalue", "ci_low"):
                frame[name] = np.asarray(test[name]).reshape(-1)
        if sort:
            frame = frame.sort_values(["output", "importance"], ascending=[True, False],
                                      kind="stable").reset_index(drop=True)
        return frame


@validate_params(n_repeats=Int(1), test=Choice("cpi", none=True),
                 test_method=Choice(*TEST_METHODS), strata=Choice(*STRATA),
                 strata_threshold=Real(0, 1), n_bins=Int(2), n_bootstrap=Replicates(),
                 confidence=Real(0, 1, "neither"), n_flips=Int(1),
                 response=Choice(*RESPONSES))
def conditional_importance(
    model,
    X,
    y,
    *,
    sampler: str | Callable = "gaussian",
    n_repeats: int = 5,
    test: Literal["cpi"] | None = None,
    test_method: Literal["t", "wilcoxon", "fisher"] = "t",
    loss: str | Callable | None = None,
    features=None,
    groups=None,
    regressor=None,
    strata: Literal["auto", "quantiles", "splits"] = "auto",
    strata_threshold: float = 0.2,
    n_bins: int = 4,
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    n_flips: int = 1999,
    output=None,
    sample_weight=None,
    random_state: int | jax.Array = 0,
    greater_is_better: bool | None = None,
    response: Literal["probability", "logits"] = "probability",
    feature_names=None,
    categorical=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> ConditionalImportance:
    """Conditional permutation importance, with the CPI test (Watson & Wright 2021).

    For each feature (or group) ``j`` and repeat ``r``, ``x_j`` is replaced by a draw from its
    distribution given the other features, and the loss is compared with the loss on the
    intact data: ``e_cond - e_orig``, as :func:`jaximp.permutation_importance` with
    ``kind="difference"``. A feature that only carries information the others also carry
    (a noisy copy of another) keeps little importance, unlike its marginal permutation
    importance. For a linear model with squared error and a Gaussian sampler the expected
    importance is ``2 beta_j^2 Var(x_j | x_-j)`` (marginal: ``2 beta_j^2 Var(x_j)``).

    Parameters
    ----------
    model, X, y, loss, output, sample_weight, greater_is_better, response, feature_names, \
categorical, groups, variables, memory_budget, progress
        As :func:`jaximp.permutation_importance` (one loss). The columns of a group are
        replaced jointly, given the columns outside the group. ``sample_weight`` weights the
        loss and the samplers' fits, while residuals (and values within strata) are permuted
        uniformly over the rows, as ``permutation_importance`` permutes (scikit-learn's
        convention): integer weights then differ from repeating rows where the residuals'
        spread varies with the weights.
    sampler : {"gaussian", "knockoff", "residual", "strata"} or callable, default "gaussian"
        How ``x_j | x_-j`` is drawn:

        - ``"gaussian"``: least-squares regression (with intercept, case weights) of ``x_j``
          on all other columns; the fitted values plus the residuals permuted over the rows
          (the CFI convention of Chamma et al. 2023, hidimstat's ``CFI`` with a linear
          imputation model).
        - ``"knockoff"``: Gaussian model-X knockoffs (Candes et al. 2018), equicorrelated
          construction from the estimated mean and covariance; the knockoff of ``x_j`` is
          drawn given all of ``X``. (R's cpi also uses Gaussian knockoffs, by default
          ``knockoff::create.second_order``'s approximate SDP construction; the
          equicorrelated one is ``method="equi"`` there.) Each repeat draws its own
          knockoff noise, as hidimstat's knockoffs. For a linear model with squared error
          the importance is ``2 beta_j^2 s_j``.
        - ``"residual"``: ``regressor`` (any scikit-learn-like regressor, cloned and fitted
          once per feature on ``x_-j``), fitted values plus permuted in-sample residuals
          (hidimstat's ``CFI`` with ``imputation_model_continuous=regressor``).
        - ``"strata"``: ``x_j`` permuted within strata of the features associated with it
          (Strobl et al. 2008); see ``strata``. The only built-in sampler for categorical
          features.
        - a callable ``sampler(key, X, columns) -> values``: ``X`` the float64 data (n, c)
          (categories as codes), ``columns`` the feature's column (an int) or a group's
          columns (a tuple), ``key`` a JAX PRNG key, one per (feature, repeat); ``values``
          (n,) or (n, k), the replacement columns.

        The numeric samplers refuse categorical features (which ``"strata"`` handles).
    n_repeats : int, default 5
        Draws per feature.
    test : {"cpi"} or None
        ``"cpi"``: the conditional predictive impact test of each feature. Per row ``i``,
        ``d_i`` = the row's loss with ``x_j`` replaced (mean over repeats) minus its loss on
        the intact data (``1 - correct`` for ``"accuracy"``); H0: ``E[d] <= 0``. Needs a loss
        that is a mean over rows: ``"mse"``, ``"mae"``, ``"mape"``, ``"msle"``, ``"poisson"``,
        ``"gamma"``, ``"log_loss"``, ``"brier"`` or ``"accuracy"``.
    test_method : {"t", "wilcoxon", "fisher"}, default "t"
        One-sided paired t-test of ``d`` (statistic ``mean / (sd / sqrt(n))``, ``ci_low`` the
        one-sided lower confidence bound, as R's ``t.test(d, alternative="greater")``);
        Wilcoxon's signed-rank test (``scipy.stats.wilcoxon(d, alternative="greater")``,
        needs scipy; ``ci_low`` is NaN: R's Hodges-Lehmann bound is not computed); or
        Fisher's sign-flip test of the mean, ``n_flips`` random sign vectors,
        ``p = (1 + #{flipped mean >= mean}) / (1 + n_flips)`` and
        ``ci_low = mean - quantile(flipped means, confidence)``, as R's cpi. As there, a
        mean difference of exactly 0 gives ``p = 1``, statistic 0 and ``ci_low = 0``.
    regressor : scikit-learn-like regressor
        For ``sampler="residual"``.
    strata : {"auto", "quantiles", "splits"}, default "auto"
        For ``sampler="strata"``: the features whose association with ``x_j`` exceeds
        ``strata_threshold`` (the absolute Pearson correlation; the correlation ratio with a categorical feature;
        Cramer's V between two) are cut into bins, and their joint bins are the strata. A
        numeric feature is cut at ``n_bins`` quantiles (``"quantiles"``) or at the model's
        own split points (``"splits"``: a scikit-learn decision tree, random or extra-trees
        forest or gradient boosting, as Strobl et al. and R's party/permimp); a categorical
        one at its levels. ``"auto"``: the split points of such a tree model, else quantiles.
        As in party and permimp, the split points are one tree's: repeat ``r`` cuts at those
        of tree ``r`` (cycling through the trees when ``n_repeats`` exceeds their number),
        and the whole model is scored; set ``n_repeats`` to the number of trees to use every
        tree's. Pooling the points of many trees would cut the data into strata of single
        rows, and the importance would shrink with every tree added.
    strata_threshold : float, default 0.2
    n_bins : int, default 4
    n_bootstrap : int, default 0
        Row-bootstrap replicates of the importance (``>= 2``), from the per-row losses of the
        same evaluations (no further model calls): then ``importances`` holds the replicates,
        ``importances_std`` is the bootstrap standard error and ``intervals()`` percentile
        intervals. Needs a loss that sums over rows (any built-in loss but ``"auc"`` and
        ``"medae"``).
    confidence : float, default 0.95
        Level of the test's one-sided lower bound ``ci_low``.
    n_flips : int, default 1999
        Sign vectors of ``test_method="fisher"``.
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Seeds the permutations (computed on the device from the key and the label
        ``(feature position, repeat)``, as permutation importance), the knockoff noise, the
        strata permutations, the bootstrap and the sign flips.

    Returns
    -------
    ConditionalImportance
        A :class:`FeatureImportance`: ``importances_mean`` (p, o); ``importances`` (p, o, r)
        the value of each repeat (or, with ``n_bootstrap``, of each bootstrap replicate);
        ``importances_std`` over them. ``info`` (a dict) holds ``loss``, ``sampler``,
        ``baseline`` (o,), ``n_repeats``, ``repeats`` (p, o, r), ``n_samples``,
        ``n_bootstrap`` and ``test``: None, or a dict of ``method``, ``estimate``,
        ``statistic``, ``std_error``, ``pvalue``, ``ci_low`` (each (p, o)), ``confidence``
        and ``row_differences`` (p, n, o), the per-row ``d``. ``to_frame()`` adds the
        test's columns.

    Notes
    -----
    The draw for row ``i`` under the permuting samplers is ``M[i] + A[pi(i)]``; a row that a
    permutation maps to itself (about one per item) keeps its own value, as in permutation
    importance. Predictions of all items are kept (items x rows x outputs, within the memory
    budget) when a test or bootstrap is asked for.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> rng = np.random.default_rng(0)
    >>> x0 = rng.normal(size=2000)
    >>> X = np.column_stack([x0, x0 + 0.5 * rng.normal(size=2000), rng.normal(size=2000)])
    >>> y = X @ np.array([1.0, 1.0, 0.0])
    >>> result = conditional_importance(lambda X: X @ jnp.array([1.0, 1.0, 0.0]), X, y)
    >>> np.round(result.importances_mean[:, 0], 1)  # 2 Var(x_j | x_-j): 0.4, 0.4, 0
    array([0.4, 0.4, 0. ])
    """
    if not (callable(sampler) or (isinstance(sampler, str) and sampler in SAMPLERS)):
        raise ValueError(
            f"sampler must be one of {SAMPLERS} or a callable sampler(key, X, columns); got "
            f"{sampler!r:.60}."
        )
    if sampler == "residual" and regressor is None:
        raise ValueError(
            "sampler='residual' needs regressor=, a scikit-learn-like regressor fitted on the "
            "other features (e.g. sklearn.ensemble.RandomForestRegressor()); got None."
        )
    if isinstance(loss, (list, tuple, dict)):
        raise TypeError(f"loss must be one loss (a name or a callable); got {loss!r:.60}.")
    if loss is not None:
        check_response(response, loss)
    key = as_key(random_state)
    bits = key_bits(key)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress,
    )
    warn_unresolved_values(predictor, dataset)
    n = dataset.n_rows
    target = check_target(y, n, dataset.source)
    if loss is None:
        loss = default_loss(predictor, target)
        check_response(response, loss)
    predictor = scored_predictor(predictor, model, [loss], response, output, dataset)
    if response == "logits":
        predictor = logits_to_probabilities(predictor)
    spec = resolve_loss(loss, target, predictor, output, dataset.weights, greater_is_better)
    _check_test(test, n_bootstrap, spec, dataset.weights, n)  # an Explainer's data's too
    chosen = dataset.resolve(features)
    ids = dataset.positions(chosen)
    if isinstance(sampler, str) and sampler != "strata":
        _check_categorical(sampler, dataset, chosen)
    engine = {"memory_budget": memory_budget, "progress": progress}
    p = len(chosen)

    def build():
        """The evaluations (data, model, plan) and the reducer: one evaluation of every item,
        or for knockoffs one per repeat, over its own noise draw."""
        if callable(sampler):
            passes = [(dataset, predictor, _drawn_plan(sampler, dataset, chosen, ids,
                                                       n_repeats, key))]
        elif sampler == "strata":
            cuts = _strata_cuts(strata, model, dataset, n_bins)
            passes = [(dataset, predictor, _strata_plan(
                dataset, chosen, ids, n_repeats, bits, cuts, strata_threshold))]
        else:
            means, noises = _mean_and_noise(sampler, dataset, chosen, ids, regressor,
                                            n_repeats, bits)
            repeats = ([[r] for r in range(n_repeats)] if noises[0].shape[0] > 1
                       else [list(range(n_repeats))])
            passes = []
            for block, covered in enumerate(repeats):
                data, evaluated, plan = _permuted_noise(
                    dataset, predictor, chosen, ids, means, [a[block] for a in noises],
                    covered, bits)
                # sent to the devices once
                passes.append((data.pin() if dataset.pinned else data, evaluated, plan))
        base: list = []  # the predictions on the intact data, computed once if needed

        def baseline_predictions():
            if not base:
                base.append(predict_rows(predictor, dataset, **engine))
            return base[0]

        return passes, spec.reducer(baseline_predictions, predictor.n_outputs)

    # kept on an Explainer for its repeats: everything but a callable sampler's draws and a
    # regressor's fit (objects that may change between calls)
    passes, reducer = cached_stage(
        dataset, ("conditional importance", sampler, tuple(ids), n_repeats, tuple(bits), strata,
                  n_bins, strata_threshold, predictor, loss, response, output, greater_is_better,
                  digest(target) if dataset.pinned else None),
        build, uncached=callable(sampler) or regressor is not None)
    label = "conditional importance"
    per_row = test is not None or n_bootstrap > 0
    if not per_row:
        metric = _joined([evaluate(evaluated, data, plan, reducer, label=label, **engine)
                          for data, evaluated, plan in passes], p)[:, None]
        terms = None
    else:
        kept = _joined([evaluate(evaluated, data, plan, Keep(), label=label,
                                 result_hint="use fewer features, repeats or rows, or no "
                                 "test and no bootstrap (which keep every prediction)", **engine)
                        for data, evaluated, plan in passes], p)
        terms = row_loss_terms(reducer, kept)  # (b, n, k)
        del kept
        weights, _ = bootstrap_weights(dataset, n_bootstrap, key)
        metric = weighted_loss_metrics(reducer, terms, weights)  # (b, m, k)

    baseline = metric[0, 0]
    k = baseline.shape[0]
    perturbed = metric[1:].reshape(p, n_repeats, metric.shape[1], k)
    differences = spec.importance(perturbed, metric[0][None, None], "difference")  # (p,r,m,k)
    repeats = differences[:, :, 0].transpose(0, 2, 1)  # (p, k, r)
    info = {"loss": spec.name, "sampler": sampler if isinstance(sampler, str) else "callable",
            "baseline": baseline, "n_repeats": n_repeats, "repeats": repeats, "n_samples": n,
            "n_bootstrap": n_bootstrap, "test": None}
    if n_bootstrap:
        replicates = differences[:, :, 1:].mean(axis=1).transpose(0, 2, 1)  # (p, k, B)
        mean, std, values = repeats.mean(axis=-1), replicates.std(axis=-1), replicates
    else:
        (mean, std), values = mean_and_std(repeats), repeats
    if test is not None:
        rows = _row_differences(terms, p, n_repeats, spec.score)  # (p, n, k)
        info["test"] = _cpi(rows, test_method, confidence, n_flips, bits)
    return ConditionalImportance(
        method="conditional",
        feature_names=tuple(f.name for f in chosen),
        output_names=spec.result_names(k),
        importances_mean=mean,
        importances_std=std,
        importances=values,
        info=keep_layout(info, dataset, chosen),
    )


# ------------------------------------------------------------------------------- checks


def _check_test(test, n_bootstrap, spec, weights, n):
    if test is not None:
        if spec.name not in _PER_ROW_LOSSES:
            raise ValueError(
                f"test='cpi' compares per-row losses, so the loss must be a mean of per-row "
                f"terms, one of {_PER_ROW_LOSSES}; got loss={spec.name!r}."
            )
        if weights is not None:
            raise ValueError(
                "test='cpi' tests the unweighted mean of the per-row loss differences; "
                "sample_weight is not supported with it. Drop sample_weight or test=None."
            )
        if n < 3:
            raise ValueError(f"test='cpi' needs at least 3 rows; got {n}.")
    if n_bootstrap and (spec.task == "callable" or spec.name not in ROW_LOSSES):
        raise ValueError(
            f"n_bootstrap reweights per-row losses, so the loss must be one of {ROW_LOSSES}; "
            f"got loss={spec.name!r}."
        )


def _check_categorical(sampler: str, dataset: Dataset, chosen) -> None:
    """The numeric samplers draw real numbers and regress on the other columns' values."""
    for feat in chosen:
        if feat.is_categorical:
            raise ValueError(
                f"sampler={sampler!r} draws numeric values and cannot replace the categorical "
                f"feature {feat.name!r}; use sampler='strata', which permutes its values "
                "within strata of the features associated with it (or a callable sampler)."
            )
    if sampler in ("gaussian", "knockoff"):
        for feat in dataset.features:
            if feat.kind == "categorical":
                raise ValueError(
                    f"sampler={sampler!r} regresses each feature on the others and cannot read "
                    f"the codes of the categorical feature {feat.name!r} as numbers; use "
                    "sampler='strata' (which handles categorical features), one-hot encode it "
                    "as a group of indicator columns, or sampler='residual' with a regressor "
                    "that handles the codes."
                )


# ------------------------------------------------------------------------------- plans


def _mean_and_noise(sampler, dataset, chosen, ids, regressor, n_repeats, bits):
    """Per feature, the conditional mean (n, k) and its exchangeable noise (b, n, k): the
    permuted residuals' one draw (b = 1), or one independent knockoff noise draw per repeat
    (b = n_repeats), whose permutations are then independent draws of the knockoff."""
    X, w = dataset.X, row_weights(dataset)
    if sampler == "gaussian":
        pairs = linear_samplers(X, [feat.columns for feat in chosen], w)
        return [m for m, _ in pairs], [a[None] for _, a in pairs]
    knockoffs = knockoff_parameters(X, w) if sampler == "knockoff" else None
    means, noises = [], []
    for feat, fid in zip(chosen, ids):
        if sampler == "knockoff":
            mean, noise = knockoff_sampler(X, feat.columns, knockoffs,
                                           rng_stream(bits, _STREAM, fid), draws=n_repeats)
        else:
            mean, noise = regressor_sampler(X, feat.columns, regressor)
            noise = noise[None]
        means.append(mean)
        noises.append(noise)
    return means, noises


def _joined(results: list, p: int):
    """The results of evaluations (item 0 the intact data, then items (j, r)) as one, in
    the order of a single evaluation (item ``1 + j R + r``): one evaluation's as it is; one
    per repeat (items j) interleaved."""
    if len(results) == 1:
        return results[0]
    items = np.stack([np.asarray(result)[1:] for result in results], axis=1)  # (p, R, ...)
    return np.concatenate([np.asarray(results[0])[:1],
                           items.reshape(p * len(results), *items.shape[2:])])


def _permuted_noise(dataset, predictor, chosen, ids, means, noises, repeats, bits):
    """The data ``[X | M | A | A]``, the model reading it, and the plan whose item (j, r),
    for each repeat r of ``repeats``, permutes feature j's columns of the first ``A``."""
    X = dataset.X
    _n, c = X.shape
    targets = tuple(col for feat in chosen for col in feat.columns)
    q = len(targets)
    M, A = np.concatenate(means, axis=1), np.concatenate(noises, axis=1)
    Z = np.concatenate([X, M, A, A], axis=1)
    width = Z.shape[1]
    data = Dataset(X=Z, column_names=tuple(f"z{i}" for i in range(width)),
                   features=tuple(Feature(f"z{i}", (i,)) for i in range(width)),
                   weights=dataset.weights)
    p = len(chosen)
    masks = np.zeros((p + 1, width), bool)  # the last mask replaces nothing: the baseline
    start = 0
    for j, feat in enumerate(chosen):
        masks[j, c + q + start: c + q + start + len(feat.columns)] = True
        start += len(feat.columns)
    streams = [(-1, 0)] + [(ids[j], r) for j in range(p) for r in repeats]
    item_mask = np.concatenate([[p], np.repeat(np.arange(p), len(repeats))])
    plan = at_permuted_rows(masks, item_mask, tuple(bits), streams)
    return data, _reading_draws(predictor, dataset, c, targets), plan


def _reading_draws(predictor: Predictor, dataset: Dataset, c: int, targets: tuple) -> Predictor:
    """The model on ``[X | M | A' | A]`` (width c + 3q): ``X`` with columns ``targets`` set to
    ``M + A'`` where the permuted noise ``A'`` differs from the row's own ``A``."""
    q = len(targets)
    # int32 indices: JAX fails to trace int64 array indices under jax.enable_x64 after the
    # same indexing was traced without it (int32 vs int64 in its index normalization)
    index = np.asarray(targets, np.int32)

    def make():
        def apply(params, Z):
            X = Z[:, :c]
            mean, noise, own = Z[:, c:c + q], Z[:, c + q:c + 2 * q], Z[:, c + 2 * q:]
            drawn = jnp.where(noise != own, mean + noise, X[:, index])
            return predictor.apply(params, X.at[:, index].set(drawn))

        return apply

    apply = stable_apply(("conditional draws", predictor.apply, c, targets), make)
    host_fn = None
    if predictor.host_fn is not None:
        source = dataset.source
        # float64 arrays go to the model as they are; other data in the user's own type
        plain = source is None or (isinstance(source, np.ndarray) and source.dtype == np.float64)
        user = None if plain else HostData(source, dataset)
        inner = predictor.host_fn

        def host_fn(batch):
            Z = np.asarray(batch, np.float64)
            X = Z[:, :c].copy()
            mean, noise, own = Z[:, c:c + q], Z[:, c + q:c + 2 * q], Z[:, c + 2 * q:]
            X[:, index] = np.where(noise != own, mean + noise, X[:, index])
            return inner(X if user is None else user.batch(np.zeros(len(Z), np.int64), X,
                                                           range(c)))

    # a model on another framework runs on the host batches: its draws are built there
    return dataclasses.replace(predictor, apply=apply, host_fn=host_fn, device_fn=None)


def _strata_cuts(strata: str, model, dataset: Dataset, n_bins: int) -> list:
    """One or more sets of cuts (a sorted array per column): a tree model's, one set per
    tree, or the quantiles."""
    c = dataset.n_columns
    cuts = split_points(model, c) if strata in ("auto", "splits") else None
    if cuts is None:
        if strata == "splits":
            raise ValueError(
                "strata='splits' reads the split points of a fitted scikit-learn tree model "
                "(a decision tree, random or extra-trees forest, or gradient boosting); got "
                f"{type(model).__name__}. Use strata='quantiles'."
            )
        cuts = [[quantile_cuts(dataset.X[:, k], n_bins) for k in range(c)]]
    return cuts


def _strata_plan(dataset, chosen, ids, n_repeats, bits, cut_sets, threshold):
    """Item (j, r) takes feature j's columns from row ``sigma_jr(i)`` of its own stratum,
    cut at ``cut_sets[r % len(cut_sets)]`` (a tree model's repeat r: its tree r's splits)."""
    X = dataset.X
    n, c = X.shape
    categorical = {col for f in dataset.features if f.kind == "categorical" for col in f.columns}
    p = len(chosen)
    codes = [np.arange(n)]
    for feat, fid in zip(chosen, ids):
        conditioning = [col for other in dataset.features if other.name != feat.name
                        if any(association(X, a, b, categorical) > threshold
                               for a in feat.columns for b in other.columns)
                        for col in other.columns]
        strata = {}
        for r in range(n_repeats):
            t = r % len(cut_sets)
            if t not in strata:
                strata[t] = strata_codes(X, conditioning, categorical, cut_sets[t])
            codes.append(within_strata(strata[t], rng_stream(bits, _STREAM, fid, r)))
    masks = np.zeros((p + 1, c), bool)
    for j, feat in enumerate(chosen):
        masks[j, list(feat.columns)] = True
    b = 1 + p * n_repeats
    item_mask = np.concatenate([[p], np.repeat(np.arange(p), n_repeats)])
    return at_coded_values(masks, item_mask, X, np.stack(codes), np.arange(b), np.zeros(b))


def _drawn_plan(sampler, dataset, chosen, ids, n_repeats, key):
    """Item (j, r) sets feature j's columns to ``sampler(key_jr, X, columns)``."""
    X = dataset.X
    n, c = X.shape
    p = len(chosen)
    table = np.zeros((p * n_repeats * n, c))
    view = X.copy()
    view.flags.writeable = False
    for j, (feat, fid) in enumerate(zip(chosen, ids)):
        columns = feat.columns[0] if len(feat.columns) == 1 else tuple(feat.columns)
        for r in range(n_repeats):
            item_key = jax.random.fold_in(jax.random.fold_in(key, fid), r)
            values = np.asarray(sampler(item_key, view, columns), np.float64)
            k = len(feat.columns)
            if values.shape not in ((n, k), (n,) if k == 1 else (n, k)):
                raise ValueError(
                    f"the sampler must return the replacement columns of feature "
                    f"{feat.name!r}, shape ({n},) or ({n}, {k}); got {values.shape}."
                )
            if not np.all(np.isfinite(values)):
                raise ValueError(f"the sampler returned NaN or infinite values for feature "
                                 f"{feat.name!r}.")
            start = (j * n_repeats + r) * n
            table[start:start + n, list(feat.columns)] = values.reshape(n, k)
    masks = np.zeros((p + 1, c), bool)
    for j, feat in enumerate(chosen):
        masks[j, list(feat.columns)] = True
    item_mask = np.concatenate([[p], np.repeat(np.arange(p), n_repeats)])
    offsets = np.concatenate([[0], np.arange(p * n_repeats) * n])
    return at_coded_values(masks, item_mask, table, np.arange(n)[None], np.zeros_like(offsets),
                           offsets)


# ------------------------------------------------------------------- per-row losses


def _row_differences(terms: np.ndarray, p: int, n_repeats: int, score: bool) -> np.ndarray:
    """Per row, the loss with the feature replaced (mean over repeats) minus the intact
    loss: (p, n, k). For a score (accuracy) the loss is ``1 - score``."""
    base = terms[0]
    # the mean of differences: a row the draws leave unchanged gets exactly 0
    change = (terms[1:].reshape(p, n_repeats, *base.shape) - base).mean(axis=1)
    return -change if score else change


# ------------------------------------------------------------------------------- tests


def _t_tail(t: np.ndarray, df: int) -> np.ndarray:
    """``P(T_df > t)`` in float64."""
    t = np.asarray(t, np.float64)
    with jax.enable_x64(True):
        # sent explicitly: a warm call under a transfer guard makes no implicit transfer
        arguments = jax.device_put((np.float64(df / 2.0), np.float64(0.5), df / (df + t * t)))
        two_sided = np.asarray(jax.scipy.special.betainc(*arguments))
    return np.where(t > 0, two_sided / 2, 1 - two_sided / 2)


def _t_quantile(level: float, df: int) -> float:
    """The ``level`` quantile (> 0.5) of Student's t with ``df`` degrees of freedom: a grid
    search zoomed six times (one compiled tail function of 1001 points)."""
    low, high = 0.0, 64.0
    while _t_tail(np.array([high]), df)[0] > 1 - level:
        low, high = high, 2 * high
    for _ in range(6):
        grid = np.linspace(low, high, 1001)
        above = np.flatnonzero(_t_tail(grid, df) <= 1 - level)[0]  # tails decrease
        low, high = grid[max(above - 1, 0)], grid[above]
    return (low + high) / 2


def _cpi(rows: np.ndarray, method: str, confidence: float, n_flips: int, bits) -> dict:
    """One-sided tests of ``E[d] > 0`` for per-row differences ``rows`` (p, n, k)."""
    n = rows.shape[1]
    mean = rows.mean(axis=1)
    error = rows.std(axis=1, ddof=1) / np.sqrt(n)
    ci_low = np.full(mean.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(error > 0, mean / error, np.where(mean > 0, np.inf, 0.0))
    if method == "t":
        statistic, pvalue = t, _t_tail(t, n - 1)
        pvalue = np.where(error > 0, pvalue, np.where(mean > 0, 0.0, 1.0))
        ci_low = mean - _t_quantile(confidence, n - 1) * error
    elif method == "wilcoxon":
        statistic, pvalue = _wilcoxon(rows)
    else:
        statistic = mean
        pvalue, flipped_quantile = _sign_flips(rows, n_flips, confidence,
                                               rng_stream(bits, _STREAM, 1 << 20))
        ci_low = mean - flipped_quantile
    # no evidence at all (a mean difference of exactly 0): p = 1, as R's cpi
    none = mean == 0
    statistic = np.where(none, 0.0, statistic)
    pvalue = np.where(none, 1.0, pvalue)
    ci_low = np.where(none, 0.0, ci_low)
    return {"method": _TEST_NAMES[method], "estimate": mean, "statistic": statistic,
            "std_error": error, "pvalue": pvalue, "ci_low": ci_low, "confidence": confidence,
            "row_differences": rows}


def _wilcoxon(rows: np.ndarray):
    try:
        from scipy import stats
    except ImportError as err:  # pragma: no cover - scipy comes with scikit-learn
        raise ImportError("test_method='wilcoxon' uses scipy.stats.wilcoxon; pip install "
                          "scipy, or use test_method='t' or 'fisher'.") from err
    p, _, k = rows.shape
    statistic, pvalue = np.zeros((p, k)), np.ones((p, k))
    for j in range(p):
        for o in range(k):
            d = rows[j, :, o]
            if np.any(d != 0):  # all zero: no evidence, p = 1
                result = stats.wilcoxon(d, alternative="greater")
                statistic[j, o], pvalue[j, o] = result.statistic, result.pvalue
    return statistic, pvalue


def _sign_flips(rows: np.ndarray, n_flips: int, confidence: float,
                   rng: np.random.Generator):
    """Fisher's sign-flip test of the mean of ``rows`` (p, n, k) along axis 1: the p-value
    ``(1 + #{mean of s * d >= mean of d}) / (1 + n_flips)`` over ``n_flips`` random sign
    vectors ``s`` (drawn from ``rng`` in blocks of 256), and the ``confidence`` quantile of
    the flipped means."""
    p, n, k = rows.shape
    flat = rows.transpose(1, 0, 2).reshape(n, p * k)
    observed = flat.mean(axis=0)
    flipped = np.empty((n_flips, p * k))
    for start in range(0, n_flips, 256):
        size = min(256, n_flips - start)
        signs = rng.integers(0, 2, size=(size, n)) * 2.0 - 1.0
        flipped[start:start + size] = signs @ flat / n
    exceed = (flipped >= observed[None] - 1e-12 * np.abs(observed[None])).sum(axis=0)
    pvalue = (1.0 + exceed) / (1.0 + n_flips)
    quantile = np.quantile(flipped, confidence, axis=0)
    return pvalue.reshape(p, k), quantile.reshape(p, k)

