"""Residual-based (decorrelation) feature importance (Gerstorfer, Krieg & Hahn-Klimroth 2023).

For feature ``i`` and a sampled order ``pi`` of all features with ``i`` last, every feature is
replaced by its residual given the features before it, ``W_j = F_j - A_j(W_1, ..., W_{j-1})``,
a model is fitted to ``y`` on the W's, and the importance of ``W_i`` in that model is recorded.
The mean over orders is weighted by how well ``y`` is explained by ``F_i`` alone (Pearson's r
between ``y`` and the predictions of a model fitted on ``F_i`` only) and the weighted means are
normalized to sum 1 (in absolute value), the authors' Algorithm 1.

Residual algorithms ``A_j``:

- ``"gram_schmidt"``: linear projection, ``W_j = F_j - sum_{i<j} Cov(F_j, W_i) / Var(W_i) W_i``
  (the pure kernel :func:`jaximp.kernels.gram_schmidt`, ``vmap``-ped over all orders at once);
- ``"learned"``: ``A_j`` is a regressor of ``F_j`` on ``W_1..W_{j-1}`` and ``W_j`` its in-sample
  residual. The default regressor is jaximp's :func:`fit_mlp` with one hidden layer of 32
  units and 500 steps, trained for all orders as one ``vmap``-ped job per position; any
  ``residual_fit(X, y) -> model`` works (the authors used random forests), called per order
  and position.

When ``fit`` is :func:`jaximp.fit_mlp` (or a keyword ``functools.partial`` of it) the models on
the W's of all orders, and the single-feature models of the weighting, train as ONE
``vmap``-ped Optax job each; any other ``fit`` is called once per order (with a progress line).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaximp.kernels import _decorrelation as K

from ..data import (
    Choice,
    Flag,
    Int,
    as_key,
    check_choice,
    numeric_matrix,
    validate_params,
)
from ..engine import ProgressMeter, key_bits, predict_rows, rng_stream
from ..models import (
    MLP,
    as_2d_output,
    as_predictor,
    fit_mlp,
    fit_mlp_options,
    init_mlp_params,
    standardization,
    train_mlp_params,
)
from ..results import DecorrelationDetails, FeatureImportance
from ._loss import check_target

__all__ = ["decorrelation_importance"]

_RESIDUALS = ("gram_schmidt", "learned")
_IMPORTANCES = ("impurity", "permutation", "pd")
#: the default learned-residual regressor
DEFAULT_RESIDUAL_FIT = functools.partial(fit_mlp, hidden=(32,), steps=500)


# ---------------------------------------------------------------------------------- fits


@functools.partial(jax.jit, static_argnames=("sizes", "options"))
def _train_each(x, y, masks, keys, *, sizes, options):
    """m MLP fits, one per (data, mask, key), as one vmapped job; key use as :func:`fit_mlp`."""

    def one(x, y, mask, key):
        init_key, train_key = jax.random.split(key)
        params = init_mlp_params(init_key, sizes)
        return train_mlp_params(params, x, y, mask, train_key, **dict(options))

    return jax.vmap(one)(x, y, masks, keys)


def _fit_mlps(X: np.ndarray, y: np.ndarray, masks: np.ndarray, keys, options: dict) -> MLP:
    """``fit_mlp(X[k], y[k], input_mask=masks[k], random_state=keys[k], **options)`` for every
    k, as ONE stacked :class:`MLP` (leaves with a leading axis m). X (m, n, c), y (m, n),
    keys an array of m keys."""
    x = np.asarray(X, np.float32)
    target = np.asarray(y, np.float32)[..., None]
    x_mean, x_scale, varies = standardization(x, axis=1)
    y_mean, y_scale, _ = standardization(target, axis=1)
    masks = np.asarray(masks, np.float32) * varies  # constant columns dropped, as fit_mlp
    names = [k for k, v in inspect.signature(train_mlp_params).parameters.items()
             if v.kind is v.KEYWORD_ONLY]
    casts = {"steps": int, "learning_rate": float, "weight_decay": float, "l2": float}
    train = tuple(sorted((k, casts.get(k, lambda v: v)(v)) for k, v in options.items()
                         if k in names))
    params, losses = _train_each(
        (x - x_mean[:, None]) / x_scale[:, None], (target - y_mean[:, None]) / y_scale[:, None],
        jnp.asarray(masks, jnp.float32), keys,
        sizes=(x.shape[2], *[int(h) for h in options["hidden"]], 1), options=train,
    )
    return MLP(params, jnp.asarray(x_mean), jnp.asarray(x_scale), jnp.asarray(y_mean),
               jnp.asarray(y_scale), jnp.asarray(masks, jnp.float32), losses,
               options["activation"])


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True, eq=False)
class _EachOnItsOwn:
    """m stacked pytree models as one callable: input (n, m * c), model k reads columns
    ``k * c .. (k + 1) * c``; output (n, m * o)."""

    models: Any
    width: int = dataclasses.field(metadata={"static": True})

    def __call__(self, X):
        n = X.shape[0]
        blocks = jnp.swapaxes(X.reshape(n, -1, self.width), 0, 1)  # (m, n, c)
        out = jax.vmap(lambda model, x: as_2d_output(model(x), n, "fitted model"))(
            self.models, blocks)
        return jnp.swapaxes(out, 0, 1).reshape(n, -1)


def _predict_each(stacked, X: np.ndarray, engine: dict) -> np.ndarray:
    """Predictions (m, n) of m stacked models, model k on ``X[k]`` (m, n, c): ONE engine call."""
    m, n, c = X.shape
    flat = np.swapaxes(X, 0, 1).reshape(n, m * c)
    predictor = as_predictor(_EachOnItsOwn(stacked, c), n_features=m * c)
    return predict_rows(predictor, flat, **engine).reshape(n, m, -1)[..., 0].T


# Every order fits a new forest that is evaluated once or a few times: reading it into JAX
# node arrays would compile a program per forest size, so scikit-learn predicts on the host.
def _as_predictor(model, p: int, what: str):
    if model is None:
        raise ValueError(f"{what} returned None; it must return the fitted model.")
    return as_predictor(model, n_features=p, trees="host")


def _predict(model, X: np.ndarray, engine: dict, what: str) -> np.ndarray:
    """Predictions (n,) of one fitted model on X, through the engine."""
    predictor = _as_predictor(model, X.shape[1], what)
    if predictor.n_outputs != 1:
        raise ValueError(
            f"the model returned by {what} has {predictor.n_outputs} outputs; decorrelation "
            "importance needs a single-output regressor."
        )
    return predict_rows(predictor, X, **engine)[:, 0]


def _unstack(stacked, m: int) -> list:
    return [jax.tree_util.tree_map(lambda leaf, k=k: leaf[k], stacked) for k in range(m)]


def _default_forest(seed: int):
    """The authors' model: a scikit-learn random forest of 100 trees that tries a third of the
    features at each split (R randomForest's regression default, ``mtry = p / 3``)."""
    try:
        from sklearn.ensemble import RandomForestRegressor
    except ImportError as err:  # pragma: no cover - scikit-learn is the usual companion
        raise ImportError(
            "fit=None fits scikit-learn random forests, but scikit-learn is not installed. "
            "Fix: pip install scikit-learn, or pass fit=jaximp.fit_mlp."
        ) from err

    def fit(X, y):
        return RandomForestRegressor(max_features=1 / 3, random_state=seed).fit(X, y)

    return fit


# ------------------------------------------------------------------------------ residuals


_all_gram_schmidt = jax.jit(jax.vmap(K.gram_schmidt, in_axes=(None, 0)))
_pearson_each = jax.jit(jax.vmap(K.pearson, in_axes=(0, None)))
_fold_each = jax.jit(jax.vmap(jax.random.fold_in, in_axes=(0, None)))


def _learned_residuals(F, orders, residual_fit, options, keys, meter, engine):
    """Residuals (m, n, p) of every order by a learned regressor, position by position."""
    m, p = orders.shape
    n = F.shape[0]
    W = np.zeros((m, n, p))
    rows = np.arange(m)
    W[rows, :, orders[:, 0]] = F[:, orders[:, 0]].T
    for j in range(1, p):
        targets = F[:, orders[:, j]].T  # (m, n)
        if options is not None:
            masks = np.zeros((m, p), np.float32)
            masks[rows[:, None], orders[:, :j]] = 1.0
            fits = _fit_mlps(W, targets, masks, _fold_each(keys, j), options)
            predicted = _predict_each(fits, W, engine)
            meter.update()
        else:
            predicted = np.empty((m, n))
            for k in range(m):
                before = W[k][:, orders[k, :j]]
                predicted[k] = _predict(residual_fit(before, targets[k]), before, engine,
                                        "residual_fit")
                meter.update()
        W[rows, :, orders[:, j]] = targets - predicted
    return W


# ------------------------------------------------------------------------------ importance


def _inner(importance, model, W, y, i, key, options, engine) -> float:
    """Importance of column ``i`` of ``W`` in ``model``."""
    if importance == "impurity":
        if not (hasattr(model, "tree_") or hasattr(model, "estimators_")):
            raise ValueError(
                "importance='impurity' needs fit to return a fitted scikit-learn tree model "
                f"(e.g. a RandomForestRegressor); got {type(model).__name__}. Fix: use "
                "importance='permutation' or 'pd' for other models."
            )
        # scikit-learn's own attribute equals jaximp.impurity_importance (tested there) and
        # spares a compilation for every forest's node count
        values = getattr(model, "feature_importances_", None)
        if values is None:
            from ._tree_stats import impurity_importance

            values = impurity_importance(model).importances_mean[:, 0]
        return float(values[i])
    if importance == "permutation":
        from ._permutation import permutation_importance

        return float(permutation_importance(_as_predictor(model, W.shape[1], "fit"), W, y,
                                            features=[i], random_state=key, **engine,
                                            **options).importances_mean[0, 0])
    if importance == "pd":
        from ._pd_importance import pd_importance

        return float(pd_importance(_as_predictor(model, W.shape[1], "fit"), W, features=[i],
                                   **engine, **options).importances_mean[0, 0])
    result = importance(model, W, y)
    if isinstance(result, FeatureImportance):
        return float(result.importances_mean[i, 0])
    values = np.asarray(result, np.float64).reshape(-1)
    if values.shape != (W.shape[1],):
        raise ValueError(
            f"importance(model, W, y) must return a FeatureImportance or one value per feature "
            f"({W.shape[1]}); got shape {np.shape(result)}."
        )
    return float(values[i])


@validate_params(residuals=Choice(*_RESIDUALS), n_orders=Int(1), weighting=Flag())
def decorrelation_importance(
    X,
    y,
    fit: Callable | None = None,
    *,
    residuals: str = "gram_schmidt",
    residual_fit: Callable | None = None,
    importance: str | Callable = "impurity",
    importance_options: dict | None = None,
    n_orders: int = 20,
    weighting: bool = True,
    random_state: int | jax.Array = 0,
    feature_names=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> FeatureImportance:
    """Residual-based (decorrelation) feature importance, Algorithm 1 of Gerstorfer et al. (2023).

    For every feature ``i``, ``n_orders`` random orders of the features with ``i`` last are
    drawn; in each, every feature is replaced by its residual given the features before it
    (``W``), a model is fitted to ``y`` on the W's and the importance of ``W_i`` is read. The
    mean over orders is multiplied by the correlation of ``y`` with the predictions of a model
    fitted on ``F_i`` alone, and the results are normalized to sum 1 in absolute value. What
    ``W_i`` adds is only what no other feature explains, so a cluster of correlated features
    does not hide its members as in impurity or permutation importance.

    Parameters
    ----------
    X : array of shape (n, p) or DataFrame
        Numeric features, one column each (no categorical features or groups).
    y : array of shape (n,)
        Numeric target.
    fit : callable, optional
        ``fit(W, y) -> model``: fits the model on the residuals (a float64 NumPy array (n, p),
        columns in the order of ``X``) and on ``F_i`` alone (an (n, 1) array) for the
        weighting. Default: a scikit-learn ``RandomForestRegressor`` of 100 trees with
        ``max_features=1/3`` (R randomForest's regression default) and a seed drawn from
        ``random_state``. This forest reproduces the authors' SYN2/SYN3 figure, where a noisy
        copy of a feature shares its importance; with all features tried at every split
        (scikit-learn's default) the forest splits on the exact feature and the copy's
        residual is left with little. :func:`jaximp.fit_mlp` or
        ``functools.partial(fit_mlp, ...)`` trains all orders as one ``vmap``-ped job (the
        single-feature models as a second one; other inputs masked to zero).
    residuals : {"gram_schmidt", "learned"}, default "gram_schmidt"
        How ``W_j`` is obtained: ``F_j`` minus its linear projection on the earlier W's
        (``W_j = F_j - sum_{i<j} Cov(F_j, W_i) / Var(W_i) W_i``, projecting on the centred
        ``W_i`` so that each residual keeps its feature's mean), or minus a regressor's
        in-sample prediction of ``F_j`` from the earlier W's.
    residual_fit : callable, optional
        ``residual_fit(W_before, F_j) -> model`` for ``residuals="learned"``; default
        ``functools.partial(fit_mlp, hidden=(32,), steps=500)``, trained for all orders as one
        ``vmap``-ped job per position. Any other callable is called once per order and
        position.
    importance : {"impurity", "permutation", "pd"} or callable, default "impurity"
        The importance of ``W_i`` in the model on the W's: impurity importance (mean decrease
        in impurity; needs a scikit-learn tree model, as the authors),
        :func:`permutation_importance` or :func:`pd_importance` of the fitted model on the
        W's, or
        ``importance(model, W, y)`` returning a FeatureImportance or one value per feature.
    importance_options : dict, optional
        Keyword arguments for :func:`permutation_importance` or :func:`pd_importance`
        (e.g. ``{"n_repeats": 10}``).
    n_orders : int, default 20
        Orders sampled per feature (the authors used 20); all features together fit
        ``p * n_orders`` models.
    weighting : bool, default True
        Multiply by Pearson's r between ``y`` and the single-feature model's predictions (in
        sample, as the authors). False uses weight 1.
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Draws the orders, the default forests' seeds, the MLP keys and the permutations.
    feature_names : sequence of str, optional
    memory_budget : int, optional
        Bytes the whole call may use beyond its result and the data (default
        :func:`jaximp.default_memory_budget`); a result that cannot fit is refused before any
        model evaluation.
    progress : bool, optional
        A progress line on stderr (default: in an interactive terminal, for calls of more than
        one chunk, or with ``JAXIMP_PROGRESS=1``; process 0 only).

    Returns
    -------
    FeatureImportance
        ``method="decorrelation"``, output ``"y"``. ``importances`` (p, 1, n_orders) holds each
        order's weighted, normalized importance (their mean is ``importances_mean``, which sums
        to 1 in absolute value), ``importances_std`` their spread (ddof 0), so ``intervals()``
        works. ``info``: ``residuals``, ``importance``, ``n_orders``, ``weights`` (p,) the
        single-feature correlations, ``raw`` (p, n_orders) the unweighted importances of
        ``W_i``, and ``orders`` (p, n_orders, p) the feature orders (target last).

    References
    ----------
    Gerstorfer, Y., Krieg, L. and Hahn-Klimroth, M. (2023). A notion of feature importance by
    decorrelation and detection of trends by random forest regression. arXiv:2303.01156.

    Examples
    --------
    >>> import numpy as np, functools
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 3))
    >>> X[:, 2] = X[:, 0] + 0.3 * rng.normal(size=100)
    >>> y = X[:, 0] + 0.5 * X[:, 1]
    >>> forest = lambda W, y: RandomForestRegressor(20, max_depth=4, random_state=0).fit(W, y)
    >>> result = decorrelation_importance(X, y, forest, n_orders=3)
    >>> result.importances.shape, round(float(result.importances_mean.sum()), 6)
    ((3, 1, 3), 1.0)
    """
    if not callable(importance):
        check_choice(importance, "importance", _IMPORTANCES)
    n_orders, weighting = int(n_orders), bool(weighting)
    if fit is not None and not callable(fit):
        raise TypeError(f"fit must be a function fit(X, y) -> model or None; got {fit!r:.60}.")
    if residual_fit is not None:
        if residuals != "learned":
            raise ValueError(
                "residual_fit is used by residuals='learned' only; got it with "
                f"residuals={residuals!r}."
            )
        if not callable(residual_fit):
            raise TypeError(
                f"residual_fit must be a function fit(X, y) -> model; got {residual_fit!r:.60}."
            )
    options = dict(importance_options or {})
    if options and importance not in ("permutation", "pd"):
        raise ValueError(
            "importance_options are passed to permutation_importance or pd_importance; got "
            f"them with importance={importance!r}."
        )
    key = as_key(random_state)
    bits = key_bits(key)
    mlp = None if fit is None else fit_mlp_options(fit, "fit", "decorrelation_importance")
    residual_mlp = None
    if residuals == "learned":
        residual_fit = DEFAULT_RESIDUAL_FIT if residual_fit is None else residual_fit
        residual_mlp = fit_mlp_options(residual_fit, "residual_fit",
                                       "decorrelation_importance")
    if mlp is not None and importance == "impurity":
        raise ValueError(
            "importance='impurity' needs tree models, but fit is fit_mlp. Fix: use "
            "importance='permutation' or 'pd' with MLPs."
        )

    dataset, F = numeric_matrix(X, feature_names, "decorrelation importance needs")
    n, p = F.shape
    if p < 2:
        raise ValueError(f"decorrelation importance needs at least 2 features; got {p}.")
    target = check_target(y, n, dataset.source)
    if target.ndim != 1 or target.dtype.kind not in "biuf":
        raise ValueError(
            f"y must be a numeric array of shape ({n},); got dtype {target.dtype} and shape "
            f"{target.shape}."
        )
    target = target.astype(np.float64)
    seeds = rng_stream(bits, 1).integers(0, 2**31 - 1, size=p * n_orders + p)

    # orders: feature i last, the others shuffled; order k = i * n_orders + r
    orders = np.empty((p, n_orders, p), np.int64)
    for i in range(p):
        rng = rng_stream(bits, 0, i)
        others = np.delete(np.arange(p), i)
        for r in range(n_orders):
            orders[i, r] = np.r_[rng.permutation(others), i]
    flat_orders = orders.reshape(-1, p)
    m = len(flat_orders)
    # keys: fits on the W's (m) and on single features (p); permutations; learned residuals
    fit_keys, permutation_keys, residual_keys = jax.random.split(key, (3, m + p))

    loops = (m if mlp is None else 1) + (p if mlp is None and weighting else 0)
    if residuals == "learned":
        loops += (p - 1) * (m if residual_mlp is None else 1)
    meter = ProgressMeter(loops, progress, "decorrelation importance")
    engine_quiet = dict(memory_budget=memory_budget, progress=False)

    if residuals == "gram_schmidt":
        # centred on the host in float64 so that float32 keeps the digits of offset columns;
        # the residuals keep their feature's mean, so adding it back restores the formula's W
        mean = F.mean(axis=0)
        W = np.asarray(_all_gram_schmidt(jnp.asarray(F - mean), jnp.asarray(flat_orders)),
                       np.float64) + mean
    else:
        W = _learned_residuals(F, flat_orders, residual_fit, residual_mlp, residual_keys[:m],
                               meter, engine_quiet)

    # the model on the W's of every order (and the single-feature models of the weighting)
    if mlp is not None:
        # one vmapped job: the m models on the W's, then p models on F with one input each
        inputs = np.concatenate([W, np.broadcast_to(F, (p, n, p))]) if weighting else W
        masks = np.concatenate([np.ones((m, p)), np.eye(p)]) if weighting else np.ones((m, p))
        stacked = _fit_mlps(inputs, np.broadcast_to(target, (len(inputs), n)), masks,
                            fit_keys[:len(inputs)], mlp)
        models = _unstack(stacked, m)
        meter.update()
    raw = np.empty(m)
    for k in range(m):
        if mlp is None:
            model = (fit or _default_forest(int(seeds[k])))(W[k], target)
            meter.update()
        else:
            model = models[k]
        raw[k] = _inner(importance, model, W[k], target, int(flat_orders[k, -1]),
                        permutation_keys[k], options, engine_quiet)
    raw = raw.reshape(p, n_orders)

    # weighting: how well y is explained by F_i alone
    weights = np.ones(p)
    if weighting:
        if mlp is not None:  # the stack of all fits, one engine call; keep the last p
            predicted = _predict_each(stacked, inputs, engine_quiet)[m:]
        else:
            predicted = np.empty((p, n))
            for i in range(p):
                column = F[:, [i]]
                single = (fit or _default_forest(int(seeds[m + i])))(column, target)
                predicted[i] = _predict(single, column, engine_quiet, "fit")
                meter.update()
        weights = np.asarray(_pearson_each(jnp.asarray(predicted - predicted.mean(1)[:, None]),
                                           jnp.asarray(target - target.mean())), np.float64)
        weights = np.nan_to_num(weights)  # a constant prediction explains nothing

    weighted = weights[:, None] * raw  # (p, n_orders)
    total = np.abs(weighted.mean(axis=1)).sum()
    replicates = weighted / (total if total > 0 else 1.0)
    return FeatureImportance(
        method="decorrelation",
        feature_names=dataset.feature_names,
        output_names=("y",),
        importances_mean=replicates.mean(axis=1)[:, None],
        importances_std=replicates.std(axis=1)[:, None],
        importances=replicates[:, None, :],
        info=DecorrelationDetails(
            residuals=residuals,
            importance=importance if isinstance(importance, str) else getattr(
                importance, "__name__", "callable"),
            n_orders=n_orders, weights=weights, raw=raw, orders=orders),
    )
