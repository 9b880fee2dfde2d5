"""Leave-one-covariate-out importance (Lei et al. 2018).

Two variants share the loss machinery of :mod:`jaximp.methods._permutation`:

- replacement (no refit): feature ``j``'s columns are set to their mean, median or zero in every
  row; one engine call evaluates the baseline and every feature as items;
- refit: the model is refitted without feature ``j`` by a user ``fit(X, y) -> model``. When
  ``fit`` is jaximp's own :func:`jaximp.fit_mlp` (or a ``functools.partial`` of it), the full
  model and all refits train as ONE ``vmap``-ped Optax job (:func:`train_mlp_params` under
  ``jax.vmap``) in which the dropped columns are masked to zero, every fit with the same
  explicit PRNG key. A user ``fit`` marked ``traceable_fit=True`` (a pure JAX function
  returning a pytree model) is ``vmap``-ped over column masks the same way. Either way the
  refits come back as one stacked pytree and their predictions from one engine call.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, Callable, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..data import (
    Choice,
    Dataset,
    Feature,
    Flag,
    Replicates,
    as_dataset,
    as_key,
    select_outputs,
    validate_params,
)
from ..engine import (ROW_LOSSES, Keep, LossSums, at_values, evaluate, fold_in,
                      predict_rows)
from ..models import (
    ACTIVATIONS,
    MLP,
    as_2d_output,
    as_predictor,
    fit_mlp,
    fit_mlp_options,
    init_mlp_params,
    standardization,
    train_mlp_params,
)
from ..results import FeatureImportance, LocoDetails
from ._loss import (
    RESPONSES,
    check_response,
    check_target,
    default_loss,
    logits_to_probabilities,
    probabilities,
    resolve_loss,
    row_loss_terms,
    scored_predictor,
    weighted_loss_metrics,
)
from ._setup import (bootstrap_weights, column_means, column_medians, keep_layout, prepare,
                     rows_dataset)

__all__ = ["loco_importance"]

_STRATEGIES = ("refit", "mean", "median", "zero")
_KINDS = ("difference", "ratio")


def _train_options() -> tuple[str, ...]:
    """Keyword options of :func:`train_mlp_params` (static in the vmapped job)."""
    return tuple(
        name for name, param in inspect.signature(train_mlp_params).parameters.items()
        if param.kind is param.KEYWORD_ONLY
    )


@functools.partial(jax.jit, static_argnames=("sizes", "options"))
def _train_mlps(masks, keys, x, y, *, sizes, options):
    """One vmapped training job: fit ``m`` of :func:`fit_mlp`'s networks, one per mask and key.

    Each fit splits its key exactly as :func:`fit_mlp` does, so fit ``m`` equals
    ``fit_mlp(X, y, input_mask=masks[m], random_state=keys[m])`` up to float rounding.
    ``options`` are the keyword options of :func:`train_mlp_params`, as sorted pairs.
    """

    def one(mask, key):
        init_key, train_key = jax.random.split(key)
        params = init_mlp_params(init_key, sizes)
        return train_mlp_params(params, x, y, mask, train_key, **dict(options))

    return jax.vmap(one)(masks, keys)


def _fit_mlps(X: np.ndarray, y: np.ndarray, masks: np.ndarray, keys, options: dict,
              batched: bool) -> MLP:
    """The MLPs of ``fit_mlp(X, y, input_mask=masks[m], random_state=keys[m], **options)``,
    stacked into one :class:`MLP` pytree whose leaves have a leading axis of size m."""
    train_names = _train_options()
    if not batched or any(k not in train_names and k != "hidden" for k in options):
        # an option the vmapped job cannot reproduce: fit one after another
        return _stack([
            fit_mlp(X, y, input_mask=mask, random_state=key, **options)
            for mask, key in zip(masks, keys)
        ])
    x = np.asarray(X, dtype=np.float32)
    target = np.asarray(y, dtype=np.float32)
    target = target.reshape(x.shape[0], -1) if target.ndim == 1 else target
    hidden = tuple(int(h) for h in options["hidden"])
    if any(h < 1 for h in hidden):
        raise ValueError(f"hidden widths must be positive ints; got {hidden}.")
    activation = options.get("activation", "relu")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; got {activation!r}.")
    casts = {"steps": int, "learning_rate": float, "weight_decay": float, "l2": float}
    train = tuple(sorted(
        (k, casts.get(k, lambda v: v)(v)) for k, v in options.items() if k in train_names
    ))
    x_mean, x_scale, varies = standardization(x)
    y_mean, y_scale, _ = standardization(target)
    masks = np.asarray(masks, np.float32) * varies  # constant columns dropped, as fit_mlp
    params, losses = _train_mlps(
        jnp.asarray(masks, jnp.float32), jnp.stack(list(keys)),
        (x - x_mean) / x_scale, (target - y_mean) / y_scale,
        sizes=(x.shape[1], *hidden, target.shape[1]), options=train,
    )
    m = len(masks)
    # the fits share the standardization; repeat it so that every leaf is stacked on axis 0
    shared = [jnp.broadcast_to(jnp.asarray(a), (m, *a.shape)) for a in (x_mean, x_scale, y_mean,
                                                                         y_scale)]
    return MLP(params, *shared, jnp.asarray(masks, jnp.float32), losses, activation)


def _stack(models: list):
    """Models of one pytree structure as one pytree with a leading model axis."""
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *models)


def _unstack(stacked, m: int) -> list:
    return [jax.tree_util.tree_map(lambda leaf, i=i: leaf[i], stacked) for i in range(m)]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True, eq=False)
class _StackedModels:
    """m pytree models stacked on axis 0 as ONE callable pytree: ``(n, c) -> (n, m * o)``.

    Model ``k`` sees ``X * masks[k]``, the data it was fitted on. Being a pytree, it goes
    through :func:`as_predictor` like any model: its arrays are traced arguments and its
    ``apply`` is shared by all stacks of one structure, so later LOCO runs reuse the compiled
    chunks.
    """

    models: Any
    masks: jax.Array  # (m, c)

    def __call__(self, X):
        out = jax.vmap(lambda model, mask: as_2d_output(
            model(X * mask), X.shape[0], "refitted model"))(self.models, self.masks)  # (m, n, o)
        return jnp.transpose(out, (1, 0, 2)).reshape(X.shape[0], -1)


def _stacked_predictions(stacked, masks: np.ndarray, X: np.ndarray, memory_budget, progress
                         ) -> np.ndarray:
    """Predictions (m, n, o) of m stacked models, model k on ``X * masks[k]``, in one engine
    call."""
    m, c = masks.shape
    predictor = as_predictor(_StackedModels(stacked, jnp.asarray(masks, jnp.float32)),
                             n_features=c)
    flat = predict_rows(predictor, X, memory_budget=memory_budget, progress=progress)
    return np.transpose(flat.reshape(X.shape[0], m, -1), (1, 0, 2))


def _traced_fits(fit: Callable, X: jax.Array, y: jax.Array, masks: jax.Array):
    """``fit(X * mask, y)`` for every mask as one jitted ``vmap``: the models stacked on axis 0.

    ``fit`` is a static argument, so repeated runs with the same ``fit`` compile once.
    """
    try:
        hash(fit)
    except TypeError:  # an unhashable callable object: compiled afresh
        return jax.jit(lambda *a: _vmapped_fits(fit, *a))(X, y, masks)
    return _jitted_fits(fit, X, y, masks)


def _vmapped_fits(fit, X, y, masks):
    return jax.vmap(lambda mask: fit(X * mask, y))(masks)


_jitted_fits = jax.jit(_vmapped_fits, static_argnums=0)


def _replacement(dataset: Dataset, feature: Feature, strategy: str) -> np.ndarray:
    if feature.is_categorical:
        raise ValueError(
            f"strategy={strategy!r} replaces a feature by one number, which for the categorical "
            f"feature {feature.name!r} would be a code, not a level (its levels: "
            f"{list(feature.levels)[:10]}); use strategy='refit', or leave the feature out "
            "with features=...")
    columns = dataset.X[:, list(feature.columns)]
    if strategy == "zero":
        return np.zeros(columns.shape[1])
    weights = dataset.weights
    known = ~np.isnan(columns) if weights is None else ~np.isnan(columns) & (weights > 0)[:, None]
    if not known.any(axis=0).all():
        raise ValueError(
            f"feature {feature.name!r} has no value present (all NaN, or only on rows of "
            f"weight 0), so its {strategy} is undefined; use strategy='zero' or 'refit', or "
            "leave the feature out with features=...")
    if strategy == "mean":
        return column_means(columns, weights)
    return column_medians(columns, weights)


def _held_out(X_test, y_test, strategy, dataset, categorical, groups, jax_fits: bool):
    """The held-out (Dataset, targets) of the refits, described like ``X``; None without."""
    if X_test is None and y_test is None:
        return None
    if strategy != "refit":
        raise ValueError(f"X_test and y_test hold out data for strategy='refit'; with "
                         f"strategy={strategy!r} pass the data to score as X and y.")
    if X_test is None or y_test is None:
        raise ValueError("X_test and y_test go together: pass both held-out arrays or neither.")
    if np.ndim(X_test) == 2 and np.shape(X_test)[1] != dataset.n_columns:
        raise ValueError(f"X_test must have the {dataset.n_columns} columns of X; got "
                         f"{np.shape(X_test)[1]}.")
    if jax_fits:  # text and category columns coded with X's labels, which the fits learnt
        held = rows_dataset(X_test, dataset, categorical, groups, names=("X_test", "X"))
    else:  # a host fit gets X_test as it is (its encoder may take labels X lacks)
        held = as_dataset(X_test, feature_names=None if hasattr(X_test, "columns")
                          else dataset.column_names, categorical=categorical, groups=groups,
                          allow_missing=True)
        if held.column_names != dataset.column_names:
            raise ValueError(f"X_test must have the columns of X {list(dataset.column_names)};"
                             f" got {list(held.column_names)}.")
    try:
        return held, check_target(y_test, held.n_rows, held.source)
    except ValueError as error:  # named as the user passed them
        raise ValueError(str(error).replace("y must", "y_test must").replace(
            "like X", "like X_test")) from None


def _refuse_missing_in_jax_fits(dataset: Dataset, held_out, what: str) -> None:
    """JAX fits train on the numbers as they are: NaN would spread through every weight."""
    for data in (dataset, None if held_out is None else held_out[0]):
        if data is not None and not np.isfinite(data.X.sum()):
            rows, cols = np.nonzero(np.isnan(data.X))
            raise ValueError(
                f"X{'_test' if data is not dataset else ''} contains {rows.size} NaN values "
                f"(first at row {rows[0]}, column {data.column_names[cols[0]]!r}), and {what} "
                "cannot take missing values; impute or drop them first, or refit with a fit "
                "of a host estimator that handles them (e.g. scikit-learn's "
                "HistGradientBoosting).")


def _drop_columns(X, dataset: Dataset, feature: Feature):
    """``X`` without the feature's columns, in the user's own container."""
    if isinstance(X, pd.DataFrame):
        return X.drop(columns=[X.columns[i] for i in feature.columns])
    return np.delete(np.asarray(X), list(feature.columns), axis=1)


@validate_params(strategy=Choice(*_STRATEGIES), kind=Choice(*_KINDS), batched=Flag(),
                 traceable_fit=Flag(), response=Choice(*RESPONSES), n_bootstrap=Replicates())
def loco_importance(
    model,
    X,
    y,
    *,
    strategy: Literal["refit", "mean", "median", "zero"] = "refit",
    fit: Callable | None = None,
    loss: str | Callable | None = None,
    kind: Literal["difference", "ratio"] = "difference",
    features=None,
    output=None,
    sample_weight=None,
    random_state: int | jax.Array = 0,
    batched: bool = True,
    traceable_fit: bool = False,
    greater_is_better: bool | None = None,
    response: str = "probability",
    X_test=None,
    y_test=None,
    n_bootstrap: int = 0,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> FeatureImportance:
    """Leave-one-covariate-out (LOCO) importance, by refitting or by replacement.

    ``e_orig = L(y, f(X))``; for each feature (or group) ``j``, ``e_j`` is the loss of the
    model refitted without ``j`` (``strategy="refit"``), or of ``f`` on ``X`` with ``j``'s
    columns set to their mean, median or zero (no refit). Importance is ``e_j - e_orig``
    (``kind="difference"``) or ``e_j / e_orig`` (``"ratio"``); scores become losses as in
    :func:`permutation_importance`.

    Missing values (NaN) go, as they are, to a host model that handles them (scikit-learn's
    ``HistGradientBoosting*``, a ``Pipeline`` with an imputer) and to boosting trees read into
    arrays; a JAX model is refused them. The replacement value is the mean or median of the
    values present (``np.nanmean``, ``np.nanmedian``), and a row whose left-out feature is
    missing gets it like any other row. ``strategy="refit"`` passes the data with their NaN to
    ``fit``; :func:`jaximp.fit_mlp` and traceable fits are refused them.

    Parameters
    ----------
    model : model or None
        The fitted full model (see :func:`jaximp.as_predictor`). With ``strategy="refit"`` it
        may be None: the full model is then ``fit(X, y)``, trained like the refits (with
        :func:`jaximp.fit_mlp`, in the same batched job).
    X : array of shape (n, c) or DataFrame
        Training data for the refits; the losses are measured on it too.
    y : array of shape (n,) or (n, o)
    strategy : {"refit", "mean", "median", "zero"}, default "refit"
        ``"refit"`` refits without the feature; the others replace its columns by their
        (weighted) mean, (weighted) median or 0 (of the values present), as in Hall et
        al. (2017). A one-hot group gets its columns' means (a soft one-hot row), medians or
        zeros.
    fit : callable or scikit-learn estimator, optional
        ``fit(X_minus_j, y) -> model``, needed for ``"refit"``; ``X_minus_j`` is ``X`` without
        the feature's columns (a DataFrame for DataFrame input). A scikit-learn estimator is
        cloned and fitted for each fit (``sklearn.base.clone(fit).fit(X_minus_j, y)``); with
        ``model=None`` the full model is fitted first, so its outputs set the default loss
        (accuracy for a classifier). When ``fit`` is :func:`jaximp.fit_mlp` or
        ``functools.partial(fit_mlp, hidden=..., steps=...)``, no column is dropped: every fit
        sees all columns with the dropped ones masked to 0 (``input_mask``), so all fits share
        one architecture and train together.
    X_test, y_test : array-like or DataFrame, optional
        Held-out data for ``"refit"``: the full model and the refits are fitted on ``X, y``
        and scored on ``X_test, y_test`` (with its own columns dropped for each refit), so the
        importance is a generalization loss, not a training loss. Default: scored on
        ``X, y``. The replacement strategies score the ``X, y`` they are given.
    n_bootstrap : int, default 0
        Row-bootstrap replicates of the importances over the scored rows, from the per-row
        losses of the same predictions (no further model calls or refits): ``importances``
        (p, o, B), ``importances_std`` and percentile ``intervals()``. Needs a loss that sums
        over rows.
    loss, kind, greater_is_better, response
        As in :func:`permutation_importance`.
    features : str, int or list, optional
        Features (or groups) to leave out; default all.
    output : int, str or list, optional
        Model outputs the loss sees.
    sample_weight : array of shape (n,), optional
        Case weights of the loss and of the mean/median replacement (not passed to ``fit``).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        For :func:`fit_mlp` refits: the key of every fit, the full model's and each refit's
        (``fit_mlp(X, y, input_mask=..., random_state=key)``). Sharing it (common random
        numbers: the same initial weights and minibatches) keeps initialization noise out of
        the loss differences.
    batched : bool, default True
        For :func:`fit_mlp` refits: train all fits as one ``vmap``-ped job (True) or one after
        another by :func:`fit_mlp` with the same keys (False). The two agree up to float
        rounding; note that Adam, run long enough to fit noise, can amplify rounding
        differences into visibly different networks.
    traceable_fit : bool, default False
        ``fit`` is a pure JAX function of ``(X, y) -> pytree model``, e.g. an Optax loop or a
        closed-form solve returning a registered dataclass; the refits run as one ``vmap`` over
        column masks (under ``jit``), the dropped columns set to 0 instead of removed, so
        ``fit`` gets ``X`` as a JAX array with all ``c`` columns. Each refit is then evaluated
        on ``X`` with its columns set to 0 as well. For least squares with an intercept a zero
        column is the same as a dropped one; for other fits it is the usual masking
        approximation. Ignored when ``fit`` is :func:`jaximp.fit_mlp` (always batched).
    feature_names, categorical, groups, variables, memory_budget, progress
        As in :func:`permutation_importance`.

    Returns
    -------
    FeatureImportance
        ``importances_mean`` (p, o); no repeats. ``info`` holds ``strategy``, ``loss``,
        ``kind``, ``baseline`` (metric of the full model, shape (o,)), ``losses`` (metric of
        each refit or replacement, shape (p, o)), and ``models`` (name -> refitted model) with
        ``full_model`` for ``"refit"``, or ``values`` (name -> replacement row) otherwise.
        With ``traceable_fit=True`` a refit in ``models`` expects its feature's columns set
        to 0 in its input (it was fitted that way).

    Examples
    --------
    >>> import functools, numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> y = X @ np.array([2.0, 1.0, 0.0])
    >>> f = lambda X: X @ jnp.array([2.0, 1.0, 0.0])
    >>> loco_importance(f, X, y, strategy="zero").importances_mean.round(1)[:, 0]
    array([4.1, 1. , 0. ])
    >>> fit = functools.partial(fit_mlp, hidden=(8,), steps=200)
    >>> result = loco_importance(None, X, y, fit=fit)
    >>> result.top(2)
    ['x0', 'x1']
    """
    if loss is not None:
        check_response(response, loss)
    if traceable_fit and strategy != "refit":
        raise ValueError(
            f"traceable_fit is used by strategy='refit' only; got it with strategy={strategy!r}."
        )
    key = as_key(random_state)
    if strategy == "refit":
        if _is_estimator(fit):
            if traceable_fit:
                raise ValueError("traceable_fit needs a pure JAX fit(X, y); got a "
                                 f"scikit-learn estimator, fit={fit!r:.60}.")
            fit = functools.partial(_fit_clone, fit)
        if fit is None or not callable(fit):
            raise ValueError(
                "strategy='refit' needs fit=...: a function fit(X, y) -> model, e.g. "
                f"jaximp.fit_mlp, or an unfitted scikit-learn estimator; got fit={fit!r:.60}."
            )
        mlp_options = fit_mlp_options(fit, "fit", "loco_importance")
    elif fit is not None:
        raise ValueError(
            f"fit is used by strategy='refit' only; got it with strategy={strategy!r}."
        )
    elif model is None:
        raise ValueError(f"strategy={strategy!r} needs a fitted model; got model=None.")

    dataset = as_dataset(X, feature_names=feature_names, categorical=categorical,
                         groups=groups, sample_weight=sample_weight, allow_missing=True)
    n, c = dataset.n_rows, dataset.n_columns
    target = check_target(y, n, dataset.source)
    jax_fits = strategy == "refit" and (mlp_options is not None or traceable_fit)
    held_out = _held_out(X_test, y_test, strategy, dataset, categorical, groups, jax_fits)
    if jax_fits:
        _refuse_missing_in_jax_fits(dataset, held_out, "fit_mlp" if mlp_options is not None
                                    else "a traceable fit")
    chosen = dataset.resolve(features)  # a bad feature is refused before any fit
    whole = next((f for f in chosen if len(f.columns) == c), None)
    if strategy == "refit" and whole is not None:
        raise ValueError(f"strategy='refit' fits a model without {whole.name!r}, which holds "
                         "every column of X: no column is left to fit. Use strategy='mean' "
                         "(or 'median', 'zero') to replace it instead.")
    given = model is not None
    user_X = dataset.source if isinstance(X, Dataset) else X  # the user's container
    if not given and strategy == "refit" and not jax_fits:
        model = fit(user_X, y)  # the full model, fitted like the refits, first
        if model is None:
            raise ValueError("fit returned None for the full data; it must return the fitted "
                             "model.")
    if model is not None:  # its outputs decide the default loss; a bad output is refused now
        _, model_predictor = prepare(model, dataset, variables=variables if given else None,
                                     allow_missing=True)
        select_outputs(model_predictor.output_names, output)
    if loss is None:
        loss = "mse" if model is None else default_loss(
            model_predictor, target if held_out is None else held_out[1])
        check_response(response, loss)
    p = len(chosen)
    fitted: dict = {}

    # a scikit-learn classifier's accuracy scores its predict, as permutation importance's
    score = functools.partial(_scored, loss=loss, response=response, output=output)
    metric = None
    if strategy != "refit":
        predictor = score(model_predictor, model, dataset)  # wrapped once above
        if response == "logits":
            predictor = logits_to_probabilities(predictor)
        masks = np.zeros((p + 1, c), bool)  # the last mask replaces nothing: the baseline
        values = np.zeros((p + 1, c))
        for j, feat in enumerate(chosen):
            masks[j, list(feat.columns)] = True
            values[j, list(feat.columns)] = _replacement(dataset, feat, strategy)
        spec = resolve_loss(loss, target, predictor, output, dataset.weights, greater_is_better)
        engine = dict(memory_budget=memory_budget, progress=progress)
        reducer = spec.reducer(lambda: predict_rows(predictor, dataset, **engine),
                               predictor.n_outputs)
        plan = at_values(masks, np.r_[p, np.arange(p)], values, np.r_[p, np.arange(p)])
        if n_bootstrap:  # every item's predictions, for the per-row losses
            predictions = evaluate(predictor, dataset, plan, Keep(), label="LOCO",
                                   result_hint="use fewer features or rows, or n_bootstrap=0",
                                   **engine)
        else:
            metric = evaluate(predictor, dataset, plan, reducer, label="LOCO", **engine)
        fitted["values"] = {f.name: values[j, list(f.columns)] for j, f in enumerate(chosen)}
    else:
        scored = dataset if held_out is None else held_out[0]
        if mlp_options is not None:
            predictor, predictions, models, full = _refit_mlps(
                model, X, target, dataset, scored, chosen, key, mlp_options, batched,
                variables, memory_budget, progress,
            )
        elif traceable_fit:
            predictor, predictions, models, full = _refit_traceable(
                model, target, dataset, scored, chosen, fit, variables, memory_budget, progress
            )
        else:
            predictor, predictions, models, full = _refit_generic(
                model, user_X, y, dataset, scored, chosen, fit,
                variables if given else None, memory_budget, progress, score)
        fitted.update(models=models, full_model=full)
        if held_out is not None:  # scored on the held-out rows
            dataset, target = held_out

    if metric is None:
        spec = resolve_loss(loss, target, predictor, output, dataset.weights,
                            greater_is_better)
        if response == "logits" and strategy == "refit":
            predictions = probabilities(np.asarray(predictions, np.float64))
        spec.check_probabilities(np.asarray(predictions)[0], predictions.shape[-1])
        metric = spec.values(predictions)  # (1 + p, o): the full model first
    baseline, dropped = metric[0], metric[1:]
    importances = spec.importance(dropped, baseline[None], kind)
    replicates = None
    if n_bootstrap:
        replicates = _bootstrap_importances(spec, predictions, dataset, kind, n_bootstrap,
                                            fold_in(key, 2))
    return FeatureImportance(
        method="loco" if strategy == "refit" else f"loco_{strategy}",
        feature_names=tuple(f.name for f in chosen),
        output_names=spec.result_names(baseline.shape[0]),
        importances_mean=importances,
        importances_std=None if replicates is None else replicates.std(axis=-1),
        importances=replicates,
        info=keep_layout(LocoDetails(strategy=strategy, loss=spec.name, kind=kind,
                                     baseline=baseline, losses=dropped, **fitted),
                         dataset, chosen),
    )


def _bootstrap_importances(spec, predictions, dataset: Dataset, kind: str, n_bootstrap: int,
                           key) -> np.ndarray:
    """Row-bootstrap replicates (p, o, B) of the importances, from the per-row losses of the
    predictions (1 + p, n, o) that gave them: no further model calls or refits."""
    reducer = spec.reducer(lambda: np.asarray(predictions)[0], np.shape(predictions)[-1])
    if not isinstance(reducer, LossSums):
        raise ValueError(
            f"n_bootstrap={n_bootstrap} reweights per-row losses, so it needs a loss that sums "
            f"over rows ({ROW_LOSSES}); got {spec.name!r}. Use n_bootstrap=0.")
    weightings, _ = bootstrap_weights(dataset, n_bootstrap, key)
    metric = weighted_loss_metrics(reducer, row_loss_terms(reducer, predictions), weightings)
    importances = spec.importance(metric[1:], metric[:1], kind)  # (p, 1 + B, o)
    return np.moveaxis(importances[:, 1:], 1, -1)


def _refit_masks(c: int, chosen, with_full: bool) -> np.ndarray:
    """(m, c) column masks: all ones for the full model (if fitted here), then 0 on each
    chosen feature's columns."""
    masks = [np.ones(c, np.float32)] if with_full else []
    for feat in chosen:
        mask = np.ones(c, np.float32)
        mask[list(feat.columns)] = 0.0
        masks.append(mask)
    return np.stack(masks)


def _refit_mlps(model, X, target, dataset, scored, chosen, key, options, batched, variables,
                memory_budget, progress):
    """Full model and refits with :func:`fit_mlp`; predictions (1 + p, n, o) in the baseline-
    first order."""
    if target.dtype.kind not in "biuf":
        raise ValueError(f"fit_mlp fits numeric targets; y has dtype {target.dtype}.")
    masks = _refit_masks(dataset.n_columns, chosen, model is None)
    keys = [key] * len(masks)  # common random numbers: same initial weights and minibatches
    stacked = _fit_mlps(dataset.X, target, masks, keys, options, batched)
    return _collect_stacked(model, stacked, masks, scored, chosen, variables, "fit_mlp",
                            memory_budget, progress)


def _refit_traceable(model, target, dataset, scored, chosen, fit, variables, memory_budget,
                     progress):
    """Full model and refits by a JAX-traceable ``fit``: one jitted ``vmap`` over the column
    masks (dropped columns set to 0), then one engine call for all refits."""
    if target.dtype.kind not in "biuf":
        raise ValueError(
            f"traceable_fit=True needs a numeric y; got dtype {target.dtype}. Encode the "
            "labels as numbers or pass traceable_fit=False."
        )
    masks = _refit_masks(dataset.n_columns, chosen, model is None)
    X = jnp.asarray(dataset.X)  # float32, or float64 under jax_enable_x64
    try:
        stacked = _traced_fits(fit, X, jnp.asarray(target), jnp.asarray(masks, X.dtype))
    except Exception as err:  # noqa: BLE001 - re-raised with what traceable_fit needs
        first_line = (str(err).strip().splitlines() or [""])[0].rstrip(".")
        raise ValueError(
            "traceable_fit=True needs fit(X, y) to be a pure JAX function returning a pytree "
            "of arrays (e.g. a registered dataclass); tracing it under jax.vmap failed with "
            f"{type(err).__name__}: {first_line}. Pass traceable_fit=False to call fit on the "
            "host, once per feature."
        ) from err
    return _collect_stacked(model, stacked, masks, scored, chosen, variables, "fit",
                            memory_budget, progress)


def _collect_stacked(model, stacked, masks, dataset, chosen, variables, what, memory_budget,
                     progress):
    """Predictor, predictions (1 + p, n, o) baseline first, refits by name and full model,
    from the stacked fits (the full model first when ``model`` is None)."""
    c = dataset.n_columns
    predictions = _stacked_predictions(stacked, masks, dataset.X, memory_budget, progress)
    fitted = _unstack(stacked, len(masks))
    if model is None:
        full, refits = fitted[0], fitted[1:]
        predictor = as_predictor(full, n_features=c)
    else:
        full, refits = model, fitted
        predictor = as_predictor(model, n_features=c, variables=variables)
        base = predict_rows(predictor, dataset.X, memory_budget=memory_budget,
                            progress=progress)
        _check_outputs(base.shape[1], predictions.shape[2], what)
        predictions = np.concatenate([base[None], predictions], axis=0)
    models = {f.name: m for f, m in zip(chosen, refits)}
    return predictor, predictions, models, full


def _is_estimator(fit) -> bool:
    """An (unfitted) scikit-learn-like estimator: it has ``fit`` and ``get_params``."""
    return callable(getattr(fit, "fit", None)) and callable(getattr(fit, "get_params", None))


def _fit_clone(estimator, X, y):
    """A fresh copy of ``estimator`` fitted to ``X, y`` (a refit never sees another's fit)."""
    from sklearn.base import clone

    return clone(estimator).fit(X, y)


def _scored(predictor, model, data, *, loss, response, output):
    """The predictor whose outputs the loss scores (:func:`scored_predictor`)."""
    return scored_predictor(predictor, model, [loss], response, output, data)


def _refit_generic(full, X, y, dataset, scored, chosen, fit, variables, memory_budget,
                   progress, score):
    """Refits of the full model with the user's ``fit`` on ``X, y``, each given and
    evaluated on data in the user's own container (a DataFrame stays a DataFrame, for
    pipelines that select columns by name); predictions on ``scored`` (the training or
    held-out rows) by the predictors ``score(predictor, model, data)`` makes."""
    engine = dict(memory_budget=memory_budget, progress=progress)
    _, predictor = prepare(full, scored, variables=variables, allow_missing=True)
    predictor = score(predictor, full, scored)
    outputs = [predict_rows(predictor, scored, **engine)]
    models = {}
    for feat in chosen:
        rest = _drop_columns(X, dataset, feat)
        refit = fit(rest, y)
        if refit is None:
            raise ValueError(f"fit returned None for the data without {feat.name!r}; it must "
                             "return the fitted model.")
        rest_data, refit_predictor = prepare(refit, _drop_columns(scored.source, scored, feat),
                                             allow_missing=True)
        refit_predictor = score(refit_predictor, refit, rest_data)
        _check_outputs(predictor.n_outputs, refit_predictor.n_outputs, f"fit without "
                       f"{feat.name!r}")
        outputs.append(predict_rows(refit_predictor, rest_data, **engine))
        models[feat.name] = refit
    return predictor, np.stack(outputs), models, full


def _check_outputs(expected: int, got: int, what: str) -> None:
    if expected != got:
        raise ValueError(
            f"the refitted model ({what}) has {got} outputs but the full model has {expected}; "
            "fit must return models with the same outputs."
        )
