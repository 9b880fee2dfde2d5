"""Statistics of fitted tree models read from their node arrays: impurity importance,
Friedman's recursion partial dependence and transversal rates.

The arrays come from the tree reader (:func:`jaximp.tree_predictor`); definitions:

- impurity importance (:func:`impurity_importance`): for each tree, feature ``j`` gets
  ``sum over splits on j of w_node i_node - w_left i_left - w_right i_right`` divided by the
  root weight (mean decrease in impurity). As scikit-learn's ``feature_importances_``, trees
  that are a single leaf are skipped; forests normalize each tree to sum 1, gradient boosting
  does not; the mean over the kept trees is normalized to sum 1;
- recursion partial dependence (:func:`tree_partial_dependence`): Friedman's weighted
  traversal, as scikit-learn's ``method="recursion"``: a split on the feature follows the
  grid value's branch, any other split follows both branches weighted by the fraction of
  training weight that went each way; the PD is the weighted sum of the leaf values. It uses
  the training weights stored in the trees, not the rows of ``X``. Computed on the host as
  those weighted leaf sums, vectorized over all leaves of all trees: for one feature under the
  plain rule ``x <= t``, each leaf's grid interval ``(lo, hi]`` gets its weighted value by a
  cumulative sum over the sorted grid; otherwise (several features, categorical splits,
  zero_missing, a NaN grid value) :func:`jaximp.models.split_goes_left` decides each split on
  the set for every grid point.
- transversal rates (:func:`transversal_rates`): see there.
"""

from __future__ import annotations

import collections
import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..data import (
    GRID_STRATEGIES,
    PERCENTILES,
    Choice,
    Index,
    as_dataset,
    feature_grid,
    product_grid_index,
    select_outputs,
    validate_grid_options,
    validate_params,
)
from ..models import (
    boosting_library,
    read_boosted,
    read_trees,
    split_goes_left,
)
from ..results import FeatureImportance, TreeDetails, new_figure
from ._tree_shap import check_fitted_columns

__all__ = ["TransversalRates", "impurity_importance", "transversal_rates",
           "tree_partial_dependence"]


@functools.partial(jax.jit, static_argnames="n_features")
def _per_tree_importance(params, n_features: int) -> jax.Array:
    """Unnormalized mean decrease in impurity of each tree, (T, p), divided by the root weight."""

    def one(feature, left, right, impurity, weight):
        split = left != jnp.arange(left.shape[0])
        wi = weight * impurity
        gain = jnp.where(split, wi - wi[left] - wi[right], 0.0)
        imp = jax.ops.segment_sum(gain, feature, num_segments=n_features)
        return imp / jnp.where(weight[0] > 0, weight[0], 1.0)

    return jax.vmap(one)(params["feature"], params["children_left"],
                         params["children_right"], params["impurity"],
                         params["weighted_n_node_samples"])


def _feature_names(estimator, feature_names) -> tuple[str, ...]:
    """``feature_names`` checked against the model's width, or the model's own names."""
    if boosting_library(estimator) is not None:
        boosted = read_boosted(estimator)
        p = boosted.n_features
        default = boosted.feature_names
    else:
        p = int(estimator.n_features_in_)
        default = None
    if feature_names is None and default is not None and len(default) == p:
        return tuple(str(c) for c in default)
    if feature_names is None:
        if hasattr(estimator, "feature_names_in_"):
            return tuple(str(c) for c in estimator.feature_names_in_)
        return tuple(f"x{j}" for j in range(p))
    feature_names = tuple(str(c) for c in feature_names)
    if len(feature_names) != p:
        raise ValueError(
            f"feature_names must have one name per feature ({p}); got {len(feature_names)}. "
            "Fix: pass p names or leave feature_names=None."
        )
    if len(set(feature_names)) != p:
        raise ValueError(f"feature_names must be unique; got {list(feature_names)}.")
    return feature_names


@validate_params()
def impurity_importance(estimator, feature_names=None) -> FeatureImportance:
    """Impurity-based (mean decrease in impurity) importance of a fitted tree model.

    Computed in JAX from the node arrays of :func:`tree_predictor`, vectorized over trees, and
    equal to ``estimator.feature_importances_`` (see the module docstring for the definition).

    Parameters
    ----------
    estimator : fitted scikit-learn tree model
        As :func:`tree_predictor`, except ``HistGradientBoosting*``.
    feature_names : sequence of str, optional
        Default: ``estimator.feature_names_in_`` when fitted on a DataFrame, else
        ``x0, x1, ...``.

    Returns
    -------
    FeatureImportance
        ``method="impurity"``, ``output_names=("y",)``; ``importances_mean`` (p, 1) equals
        ``feature_importances_``; ``importances`` (p, 1, T) holds each tree's importance
        (forests: normalized to sum 1 per tree; gradient boosting: unnormalized), scaled by the
        final normalization so that its mean over the kept trees is ``importances_mean``
        (single-leaf trees are 0 and not kept); ``importances_std`` (p, 1) is their standard
        deviation over all trees (ddof 0, as the usual forest importance plot), None for a
        single tree. ``info`` has ``estimator``, ``criterion``, ``n_trees`` and ``n_trees_used``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import ExtraTreesClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 3))
    >>> et = ExtraTreesClassifier(n_estimators=5, max_depth=3, random_state=0)
    >>> et = et.fit(X, X[:, 1] > 0)
    >>> imp = impurity_importance(et)
    >>> imp.importances_mean.shape, imp.importances.shape
    ((3, 1), (3, 1, 5))
    >>> bool(np.allclose(imp.importances_mean[:, 0], et.feature_importances_, rtol=1e-5))
    True
    """
    if boosting_library(estimator) is not None:
        raise TypeError(
            f"impurity_importance reads scikit-learn's node impurities; {type(estimator).__name__}"
            " keeps none. Fix: jaximp.booster_importance(model, importance_type=...) gives "
            "the library's own gain, cover and split counts."
        )
    kind, _, params, _ = _statistic_trees(estimator, "scikit-learn's "
                                          "estimator.feature_importances_ where it has them")
    feature_names = _feature_names(estimator, feature_names)
    p = len(feature_names)
    raw = np.asarray(_per_tree_importance(params, p), np.float64)  # (T, p)
    is_split = np.asarray(params["children_left"][:, 0] != 0)  # root is not a leaf
    if kind == "forest":
        totals = raw.sum(axis=1, keepdims=True)
        raw = np.where(totals > 0, raw / np.where(totals > 0, totals, 1.0), 0.0)
    raw = np.where(is_split[:, None], raw, 0.0)
    n_used = int(is_split.sum())
    if n_used == 0:
        mean = np.zeros(p)
        scale = 1.0
    else:
        mean = raw[is_split].mean(axis=0)
        scale = 1.0 / mean.sum() if mean.sum() > 0 else 1.0
        mean = mean * scale
    per_tree = (raw * scale).T[:, None, :]  # (p, 1, T)
    T = raw.shape[0]
    std = per_tree.std(axis=-1) if T > 1 else None
    return FeatureImportance(
        method="impurity",
        feature_names=feature_names,
        output_names=("y",),
        importances_mean=mean[:, None],
        importances_std=std,
        importances=per_tree,
        info=TreeDetails(estimator=type(estimator).__name__, n_trees=T,
                         criterion=_criterion(estimator), n_trees_used=n_used),
    )


def _criterion(estimator) -> str | None:
    """The split criterion the trees were grown with: the fitted trees' own, where the
    ensemble's parameter is a placeholder (scikit-learn 1.9's GradientBoosting "deprecated")."""
    trees = getattr(estimator, "estimators_", None)
    first = np.ravel(trees)[0] if trees is not None and np.size(trees) else estimator
    return getattr(first, "criterion", getattr(estimator, "criterion", None))


#: grid points x leaves (or split entries) evaluated at once by the recursion PD
_RECURSION_BLOCK = 1 << 21


#: leaf paths of recently seen node arrays (the reader hands out the same read-only arrays for
#: an unchanged estimator), by the identity of the arrays they are read from
_PATHS: collections.OrderedDict = collections.OrderedDict()
_PATHS_SIZE = 8


def _cached_leaf_paths(params, depth: int) -> dict:
    """:func:`_leaf_paths`, reused while the same read-only arrays come back."""
    arrays = tuple(params[name] for name in (
        "children_left", "children_right", "weighted_n_node_samples", "feature", "threshold",
        "value"))
    if not all(isinstance(a, np.ndarray) and not a.flags.writeable for a in arrays):
        return _leaf_paths(params, depth)
    key = tuple(id(a) for a in arrays) + (depth,)
    entry = _PATHS.get(key)
    if entry is not None and all(a is b for a, b in zip(entry[0], arrays)):
        return entry[1]
    paths = _leaf_paths(params, depth)
    _PATHS[key] = (arrays, paths)  # holds the arrays: their ids cannot be reused meanwhile
    while len(_PATHS) > _PATHS_SIZE:
        _PATHS.popitem(last=False)
    return paths


def _leaf_paths(params, depth: int) -> dict:
    """Every reachable leaf of every tree and the splits above it, on the host: ``leaf`` (L,)
    flat node index ``tree * N + node`` (sorted by tree), ``tree`` (L,) its tree, ``starts``
    (T,) each tree's first leaf, and (depth, L) arrays from the leaf upwards: ``above`` the
    flat index of the split above, ``went_left`` whether the path goes left there, ``frac``
    the fraction of the split's training weight that takes the path, ``valid`` whether that
    level exists (below the root), ``split_feature`` and ``split_threshold`` of the split
    above; ``value`` (L, k) the leaf values in float64."""
    left = np.asarray(params["children_left"])
    right = np.asarray(params["children_right"])
    T, N = left.shape
    offset = np.arange(T)[:, None] * N
    split = (left != np.arange(N)).reshape(-1)
    parent = np.arange(T * N)  # the root (and padding) is its own parent
    is_left = np.zeros(T * N, bool)
    reached = np.zeros(T * N, bool)
    reached[offset[:, 0]] = True
    for children, side in ((left, True), (right, False)):
        child = (children + offset).reshape(-1)[split]
        parent[child] = np.flatnonzero(split)
        is_left[child] = side
        reached[child] = True
    leaf = np.flatnonzero(~split & reached)
    weight = np.asarray(params["weighted_n_node_samples"], np.float64).reshape(-1)
    shape = (depth, len(leaf))
    above, frac = np.empty(shape, np.int64), np.empty(shape)
    went_left, valid = np.empty(shape, bool), np.empty(shape, bool)
    node = leaf
    for level in range(depth):
        up = parent[node]
        w_up = weight[up]
        above[level], went_left[level], valid[level] = up, is_left[node], up != node
        frac[level] = np.where(w_up > 0, weight[node] / np.where(w_up > 0, w_up, 1.0), 0.0)
        node = up
    tree = leaf // N
    value = np.asarray(params["value"], np.float64)
    return {"leaf": leaf, "tree": tree, "starts": np.searchsorted(tree, np.arange(T)),
            "above": above, "went_left": went_left, "frac": frac, "valid": valid,
            "split_feature": np.asarray(params["feature"]).reshape(-1)[above],
            "split_threshold": np.asarray(params["threshold"]).reshape(-1)[above],
            "value": value.reshape(T * N, value.shape[-1])[leaf]}


def _bounds(threshold, went_left, on) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each leaf's interval ``(lo, hi]`` of values of one feature that reach it under the
    plain rule ``x <= t`` (``on`` (D, L): the levels splitting on the feature), and whether
    it has a lower bound at all (without one, ``-inf`` reaches the leaf too)."""
    inf = np.asarray(np.inf, threshold.dtype)
    right = on & ~went_left
    hi = np.where(on & went_left, threshold, inf).min(axis=0, initial=inf)
    lo = np.where(right, threshold, -inf).max(axis=0, initial=-inf)
    return lo, hi, right.any(axis=0)


def _pd_one_feature(paths, bounds, contrib, z, T: int) -> np.ndarray:
    """(T, g, k) PD of one feature under the plain rule, grid ``z`` (g,) without NaN: the
    grid points in ``(lo, hi]`` of a leaf receive its contribution, added as +c at the first
    such point and -c past the last (in sorted grid order), then summed cumulatively."""
    lo, hi, bounded_below = bounds
    order = np.argsort(z, kind="stable")
    sorted_z = z[order]
    g, k = len(z), contrib.shape[1]
    first = np.where(bounded_below, np.searchsorted(sorted_z, lo, side="right"), 0)
    past = np.maximum(np.searchsorted(sorted_z, hi, side="right"), first)  # empty: nothing
    index = np.concatenate([paths["tree"] * (g + 1) + first, paths["tree"] * (g + 1) + past])
    diff = np.stack([np.bincount(index, np.concatenate([contrib[:, j], -contrib[:, j]]),
                                 minlength=T * (g + 1)) for j in range(k)], axis=-1)
    out = np.cumsum(diff.reshape(T, g + 1, k)[:, :g], axis=1)
    result = np.empty_like(out)
    result[:, order] = out
    return result


def _reach_by_intervals(fields, paths, on_slot, z) -> np.ndarray:
    """(g, L) whether each grid point reaches each leaf, for the plain rule ``x <= t`` and
    grid values without NaN: the splits on the set bound each leaf's values to an interval
    ``(lo, hi]`` per feature."""
    threshold = paths["split_threshold"]  # (D, L)
    reach = np.ones((z.shape[0], threshold.shape[1]), bool)
    for j, on in enumerate(on_slot):
        lo, hi, bounded_below = _bounds(threshold, paths["went_left"], on)
        zj = z[:, j:j + 1]
        reach &= ((zj > lo) | ~bounded_below) & (zj <= hi)
    return reach


def _reach_by_rule(fields, paths, on_slot, z) -> np.ndarray:
    """(g, L) whether each grid point reaches each leaf, by :func:`split_goes_left` at the
    splits on the set (missing values, zero_missing and categorical splits included)."""
    on_set = np.logical_or.reduce(on_slot)
    slot = np.argmax(np.stack(on_slot), axis=0)  # (D, L): which column the split compares
    entry_level, entry_leaf = np.nonzero(on_set)
    at = paths["above"][entry_level, entry_leaf]
    wanted = paths["went_left"][entry_level, entry_leaf]
    xv = z[:, slot[entry_level, entry_leaf]]  # (g, E)
    go_left = split_goes_left(fields, np.broadcast_to(at, xv.shape), xv, xp=np)
    g, L = z.shape[0], paths["leaf"].shape[0]
    failed = (np.arange(g)[:, None] * L + entry_leaf[None, :])[go_left != wanted[None, :]]
    return np.bincount(failed, minlength=g * L).reshape(g, L) == 0


def _recursion_pd(params, points, columns, depth: int) -> np.ndarray:
    """Weighted-traversal PD of every tree at every grid point, (T, g, k) float64, on the
    host: ``points`` (g, s) hold values of the data columns ``columns`` (s,).

    The traversal is the sum over the leaves of ``value x (product of the training fractions
    at the splits on other features) x (whether the grid point takes the leaf's side at every
    split on the set)``, computed for all leaves of all trees at once."""
    T, N = np.shape(params["feature"])
    names = ("feature", "threshold", "missing_left", "zero_missing", "is_categorical",
             "category_left")
    fields = {name: np.asarray(params[name]).reshape((T * N,) + np.shape(params[name])[2:])
              for name in names if name in params}
    if "category_outside_left" in params:
        fields["category_outside_left"] = np.asarray(params["category_outside_left"])
    paths = _cached_leaf_paths(params, depth)
    value = paths["value"]  # (L, k)
    k = value.shape[-1]
    # scikit-learn's recursion casts the grid to float32 (under x64 too): with the thresholds
    # rounded down to float32 the splits are exact (HistGradientBoosting's and LightGBM's
    # thresholds are float64 here: their grid is compared in float64, as they compare rows)
    z = np.asarray(points).astype(fields["threshold"].dtype)
    on_slot = [paths["valid"] & (paths["split_feature"] == c) for c in np.asarray(columns)]
    on_set = np.logical_or.reduce(on_slot)
    weight = np.where(paths["valid"] & ~on_set, paths["frac"], 1.0).prod(axis=0)  # (L,)
    contrib = weight[:, None] * value  # (L, k)
    plain = not any(name in fields for name in ("zero_missing", "is_categorical"))
    if plain and len(on_slot) == 1 and not np.isnan(z).any():
        bounds = _bounds(paths["split_threshold"], paths["went_left"], on_slot[0])
        return _pd_one_feature(paths, bounds, contrib, z[:, 0], T)
    L = len(paths["leaf"])
    out = np.empty((T, z.shape[0], k))
    width = fields["category_left"].shape[-1] if "category_left" in fields else 1
    step = max(1, _RECURSION_BLOCK // max(1, L, int(on_set.sum()) * width))
    for start in range(0, z.shape[0], step):
        zb = z[start:start + step]
        if plain and not np.isnan(zb).any():
            reach = _reach_by_intervals(fields, paths, on_slot, zb)
        else:
            reach = _reach_by_rule(fields, paths, on_slot, zb)
        reached = reach[:, :, None] * contrib[None]  # (g, L, k)
        out[:, start:start + step] = np.add.reduceat(
            reached, paths["starts"], axis=1).transpose(1, 0, 2)
    return out


@validate_params(grid=Choice(*GRID_STRATEGIES, also="explicit grid values (one entry per "
                                                   "feature for several)"),
                 percentiles=PERCENTILES)
def tree_partial_dependence(estimator, X, feature, grid="sklearn", *,
                            grid_resolution: int | None = None,
                            percentiles: tuple[float, float] = (0.05, 0.95)):
    """Partial dependence of a tree model on one feature, or jointly on several, by Friedman's
    weighted traversal.

    Equal to ``sklearn.inspection.partial_dependence(estimator, X, [j],
    method="recursion")["average"].T`` on the same grid (and, for several features
    ``[j, k]``, to scikit-learn's ``[(j, k)]`` with its output axis moved last). As
    scikit-learn's recursion, it averages over the training distribution stored in the trees
    (node weights), not over the rows of ``X``: at a split on a feature of the set the
    traversal follows the grid point, at any other split it takes both children, weighted by
    their training samples. It returns the mean of the trees' values for trees and forests
    (regressors: the prediction; classifiers: the class probabilities, which scikit-learn's
    recursion does not offer); for gradient boosting ``learning_rate * sum of the stage
    trees`` per class (the raw decision function without the init prediction ``F0``, exactly
    what scikit-learn returns; a binary classifier gives one column, the log-odds part), and
    likewise the sum of the trees without the baseline for ``HistGradientBoosting*`` (whose
    thresholds are compared in float64, as scikit-learn does); for
    XGBoost, LightGBM and CatBoost the raw margin with its constant (``init`` plus the sum of
    each output's trees; no reference library offers their recursion), the weights being the
    library's cover (XGBoost: sums of hessians, which are training counts for squared error
    only; LightGBM: training counts; CatBoost: training weights).
    It is computed on the host with NumPy as the weighted leaf sums the traversal amounts to
    (per leaf: its value times the training fractions at the splits on other features, kept
    for the grid points that take the leaf's side at every split on the set), for all leaves
    of all trees at once; the paths are reused while the estimator's trees are unchanged. The
    sums are float64 over the node arrays' weights and values, which are float32 by default
    (about 1e-6 relative from scikit-learn) and float64 under ``jax_enable_x64`` (equal to
    scikit-learn's to 1e-7 relative); the grid values are compared with the thresholds as
    each library compares rows: in float32 for scikit-learn's trees (as its recursion does),
    XGBoost and CatBoost, in float64 for HistGradientBoosting and LightGBM.

    Parameters
    ----------
    estimator : fitted scikit-learn tree model, or XGBoost, LightGBM or CatBoost model
        As :func:`tree_predictor`; ``HistGradientBoosting*`` without categorical splits or
        fit-time sample weights (scikit-learn refuses the latter too).
    X : array-like of shape (n, p) or DataFrame
        Data used only to build the grid and resolve the features.
    feature : int or str, or a list of them
        The feature (column index or name), or several for their joint partial dependence on
        the product of their grids (the last feature varying fastest, as scikit-learn).
    grid : str or array-like, default "sklearn"
        A strategy of :func:`jaximp.partial_dependence` (``"sklearn"`` reproduces
        scikit-learn's grid) or explicit grid values (g,); for several features, one strategy
        for all or a list with a strategy or explicit values per feature.
    grid_resolution : int or inf, optional
        Number of grid points of a strategy, per feature; default 100 (pdp's
        ``min(n_unique, 51)`` for ``"pdp"``).
    percentiles : tuple of float, default (0.05, 0.95)
        Range of a ``"uniform"`` or ``"sklearn"`` grid.

    Returns
    -------
    grid_values : ndarray of shape (g,), or a tuple of them for several features
    average : ndarray of shape (g, o), or (g_1, ..., g_s, o) for several features
        ``o`` = number of classes (forest classifiers), K (gradient boosting: 1 for binary
        classification and regression) or the number of targets.

    Raises
    ------
    TypeError
        For a model whose trees it cannot traverse (any other estimator, a
        :class:`~jaximp.Predictor`, gradient boosting with a non-constant init): use
        ``jaximp.partial_dependence(..., method="brute")`` instead.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import GradientBoostingRegressor
    >>> from sklearn.inspection import partial_dependence
    >>> X = np.random.default_rng(0).normal(size=(60, 2))
    >>> gb = GradientBoostingRegressor(n_estimators=10, max_depth=2).fit(X, X[:, 0] ** 2)
    >>> values, pd_ = tree_partial_dependence(gb, X, 0, grid_resolution=5)
    >>> ref = partial_dependence(gb, X, [0], method="recursion", grid_resolution=5)
    >>> bool(np.allclose(pd_[:, 0], ref["average"][0], rtol=1e-5, atol=1e-6))
    True
    >>> values, pd_ = tree_partial_dependence(gb, X, [0, 1], grid_resolution=4)
    >>> pd_.shape
    (4, 4, 1)
    """
    kind, _, params, depth = read_trees(estimator, recursion="estimator", host=True)
    validate_grid_options(grid if isinstance(grid, str) else "sklearn", grid_resolution,
                          percentiles)  # an int >= 2, inf (every distinct value) or None
    dataset = as_dataset(X, allow_missing=True)  # the grid reads the values present
    # the traversal reads columns by position: X must have the fitted ones, in order
    check_fitted_columns(estimator, X, dataset.n_columns, read_boosted(estimator).n_features
                         if boosting_library(estimator) else
                         getattr(estimator, "n_features_in_", None), "X")
    several = not isinstance(feature, (str, int, np.integer))
    features = [dataset.feature(f) for f in (feature if several else [feature])]
    if not features:
        raise ValueError("feature must name at least one feature; got an empty list.")
    options = list(grid) if several and not isinstance(grid, str) else [grid] * len(features)
    if len(options) != len(features):
        raise ValueError(
            f"grid must be one strategy or one entry per feature ({len(features)}); got "
            f"{len(options)} entries."
        )
    values = []
    for feat, option in zip(features, options):
        if len(feat.columns) != 1:
            raise ValueError(
                f"expected a single-column feature; got {feat.name!r} with columns "
                f"{feat.columns}. Fix: pass one column."
            )
        if isinstance(option, str):
            rows, labels = feature_grid(dataset, feat, strategy=option,
                                        grid_resolution=grid_resolution, percentiles=percentiles)
        else:
            rows, labels = feature_grid(dataset, feat, values=option)
        if feat.is_categorical and boosting_library(estimator) is None:
            # scikit-learn fits a category column on its values, not on X's codes of them
            try:
                rows = np.asarray(labels, np.float64)[:, None]
            except (TypeError, ValueError):
                raise TypeError(f"feature {feat.name!r} holds text levels, which a scikit-learn "
                                "tree cannot have been fitted on; use method='brute'.") from None
        values.append(rows[:, 0])
    shape = tuple(len(v) for v in values)
    index = product_grid_index(shape, [feat.name for feat in features])
    points = np.stack([v[k] for v, k in zip(values, index)], axis=1)  # (g, s)
    columns = np.array([feat.columns[0] for feat in features], np.int32)
    per_tree = _recursion_pd(params, points, columns, depth)  # (T, g, k)
    if kind == "forest":
        average = per_tree.mean(axis=0)
    elif "tree_class" in params:  # XGBoost, LightGBM, CatBoost: init + sum per output
        tree_class = np.asarray(params["tree_class"])
        init = np.asarray(params["init"], np.float64)
        # LightGBM's random forest keeps leaves that average: its raw margin scales the sum
        scale = read_boosted(estimator).margin_scale
        average = np.stack([scale * per_tree[tree_class == k, :, 0].sum(axis=0) + init[k]
                            for k in range(init.shape[0])], axis=1)
    elif kind == "hist":  # leaf values are shrunk already; no baseline, as scikit-learn
        K = int(estimator.n_trees_per_iteration_)
        average = per_tree[..., 0].reshape(-1, K, per_tree.shape[1]).sum(axis=0).T
    else:
        K = int(estimator.estimators_.shape[1])
        g = per_tree.shape[1]
        average = per_tree[..., 0].reshape(-1, K, g).sum(axis=0).T * estimator.learning_rate
    if not several:
        return values[0], average
    return tuple(values), average.reshape(*shape, average.shape[-1])


# ------------------------------------------------------------------ transversal rates


@dataclasses.dataclass(frozen=True, eq=False)
class TransversalRates:
    """Absolute and relative transversal rates (ATR, RTR) of a tree model, per feature.

    Attributes
    ----------
    feature_names : tuple of str, length p
    atr : ndarray of shape (p,)
        Absolute transversal rate in [-1, 1]; NaN for a feature the trees never split on.
    rtr : ndarray of shape (p,)
        Relative transversal rate, the sum over the feature's splits as printed by Gerstorfer et al.
        (0 for a feature without splits; infinite when a split's child means sum to 0).
    n_splits : ndarray of int of shape (p,)
        Number of split nodes on each feature, over all trees used.
    output_name : str
        The output whose node means were compared (a class label for classifiers).
    info : TreeDetails
        ``estimator``, ``n_trees`` (trees read), ``node_means`` (``"node values"`` or
        ``"leaf averages"``) and ``sign`` (-1 when a binary gradient boosting classifier was
        read for its negative class).
    """

    feature_names: tuple[str, ...]
    atr: np.ndarray
    rtr: np.ndarray
    n_splits: np.ndarray
    output_name: str = "y"
    info: dict = dataclasses.field(default_factory=dict)

    @property
    def rtr_mean(self) -> np.ndarray:
        """``rtr / n_splits``: the RTR averaged over the splits like the ATR (NaN if none)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n_splits > 0, self.rtr / np.maximum(self.n_splits, 1), np.nan)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={a:+.3g}" for name, a in
                          zip(self.feature_names[:4], self.atr[:4]))
        more = ", ..." if len(self.feature_names) > 4 else ""
        return (f"TransversalRates({self.info.get('estimator', 'trees')}, output "
                f"{self.output_name!r}, {len(self.feature_names)} features, "
                f"{int(self.n_splits.sum())} splits; atr: {shown}{more})")

    def to_frame(self):
        """One row per feature: ``feature``, ``atr``, ``rtr``, ``rtr_mean``, ``n_splits``."""
        import pandas as pd

        return pd.DataFrame({
            "feature": list(self.feature_names), "atr": self.atr, "rtr": self.rtr,
            "rtr_mean": self.rtr_mean, "n_splits": self.n_splits,
        })

    def plot(self, rate: str = "atr", ax=None):
        """Horizontal bars of ``rate`` (``"atr"``, ``"rtr"`` or ``"rtr_mean"``) per feature,
        in input order; returns the Axes."""

        if rate not in ("atr", "rtr", "rtr_mean"):
            raise ValueError(f"rate must be one of ('atr', 'rtr', 'rtr_mean'); got {rate!r}.")
        values = np.asarray(getattr(self, rate))
        if ax is None:
            _, ax = new_figure(5, 0.3 * len(values) + 1)
        names = list(self.feature_names)[::-1]
        ax.barh(names, values[::-1],
                color=np.where(values[::-1] >= 0, "tab:blue", "tab:red"))
        ax.axvline(0.0, color="0.5", linewidth=0.8)
        if rate == "atr":
            ax.set_xlim(-1.05, 1.05)
        ax.set_xlabel(rate.upper().replace("_MEAN", " / splits"))
        ax.set_title(str(self.output_name))
        return ax


@functools.partial(jax.jit, static_argnames=("n_features", "depth", "leaf_averages"))
def _transversal_sums(params, value, n_features: int, depth: int, leaf_averages: bool):
    """Per tree and feature: sum of sign(R - L), sum of 2 (R - L) / |L + R| and the number of
    splits, each (T, p); ``value`` (T, N) is the compared output of every node."""

    def one(feature, left, right, weight, value):
        split = left != jnp.arange(left.shape[0])
        if leaf_averages:  # weighted mean of the leaf values below each node, bottom-up
            sums = jnp.where(split, 0.0, weight * value)
            sums = jax.lax.fori_loop(
                0, depth, lambda _, s: jnp.where(split, s[left] + s[right], s), sums)
            value = jnp.where(split, sums / jnp.where(weight > 0, weight, 1.0), value)
        low, high = value[left], value[right]
        diff = high - low
        relative = jnp.where(diff == 0, 0.0, 2.0 * diff / jnp.abs(low + high))
        # a child without training weight (CatBoost's oblivious trees have them) has no mean
        compared = split & (weight[left] > 0) & (weight[right] > 0)

        def total(a):
            return jax.ops.segment_sum(jnp.where(compared, a, 0), feature,
                                       num_segments=n_features)

        return total(jnp.sign(diff)), total(relative), total(compared.astype(jnp.int32))

    return jax.vmap(one)(params["feature"], params["children_left"], params["children_right"],
                         params["weighted_n_node_samples"], value)


@validate_params(output=Index(names=True, none=True, fix="Each class has its own trend: pass "
                                                        "one class label or index."))
def transversal_rates(estimator, feature_names=None, *, output=None) -> TransversalRates:
    """Absolute and relative transversal rates (ATR, RTR) of a fitted tree model.

    Gerstorfer et al. (2023) read a trend of the target in feature ``F`` off a random forest:
    at each of the ``n`` split nodes on ``F``, compare the mean target ``L`` of the left child
    (small values of ``F``) with the mean target ``R`` of the right child,

    - ``ATR = (1/n) sum (1{L < R} - 1{L > R})``, in [-1, 1]: +1 when every split on ``F`` sends
      larger values of ``F`` to a larger mean target;
    - ``RTR = 2 sum (R - L) / |L + R|``, exactly as the paper prints it: a sum over the splits
      of the difference relative to the children's midpoint. The paper gives ATR a ``1/n`` but
      RTR none, so RTR grows with the number of splits (and trees); the per-split average is
      the read-out :attr:`TransversalRates.rtr_mean`. A split whose child means sum to 0
      makes RTR infinite, and means near 0 make it unstable (the paper's observation on noisy
      data); a tie ``L = R`` counts in ``n`` and adds 0 to both. A split with an empty child
      (no training weight, as CatBoost's oblivious trees have) has no mean there and is not
      counted.

    The means are computed in JAX from the node arrays of :func:`tree_predictor`, vectorized
    over trees:

    - trees and forests: the child's node value, i.e. the (bootstrap- and sample-weighted)
      mean target of the training samples in the child for squared-error (and Poisson)
      regression trees; classifiers: the child's class fraction of the compared class;
    - gradient boosting: the weighted average of the stage tree's leaf values below the child
      (the mean over the child's training samples of what the stage adds to the raw score),
      because the internal node values of a stage hold the mean negative gradient while its
      leaves hold the loss's line-search values (the two agree for squared error). All
      stages are pooled; for classifiers the trees of the compared class are read (raw
      log-odds for a binary classifier).

    Parameters
    ----------
    estimator : fitted scikit-learn tree model
        As :func:`tree_predictor`, except ``HistGradientBoosting*``.
    feature_names : sequence of str, optional
        Default: ``estimator.feature_names_in_`` when fitted on a DataFrame, else
        ``x0, x1, ...``.
    output : int or str, optional
        The compared output: for classifiers an index into ``classes_`` (an int) or a class
        label as its string (``"5"`` for the label 5), for a multi-output regressor an
        index. Default: the only output of a regressor, the
        positive class ``classes_[1]`` of a binary classifier; required otherwise (several
        classes or targets), since each class has its own trend.

    Returns
    -------
    TransversalRates
        ``atr`` (p,), ``rtr`` (p,), ``n_splits`` (p,), ``to_frame()``, ``plot()``.

    References
    ----------
    Gerstorfer, Y., Krieg, L. and Hahn-Klimroth, M. (2023). A notion of feature importance
    by decorrelation and detection of trends by random forest regression (Definition 1).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X = np.random.default_rng(0).uniform(size=(200, 2))
    >>> rf = RandomForestRegressor(n_estimators=10, max_depth=3, random_state=0)
    >>> rf = rf.fit(X, 3 * X[:, 0] - X[:, 1] + 5)
    >>> rates = transversal_rates(rf)
    >>> rates.atr.shape, bool(rates.atr[0] > 0.5), bool(rates.atr[1] < -0.5)
    ((2,), True, True)
    """
    # float64 node values and sums whatever the process's mode: float32 values of a target
    # near 2e5 moved the ATR by 1% (the comparisons of a child's means are the statistic)
    with jax.enable_x64(True):
        return _transversal_rates(estimator, feature_names, output)


def _statistic_trees(estimator, alternative: str):
    """:func:`read_trees` of a statistic read from the trees themselves: its refusal names
    ``alternative``, not the host predictions that help the methods evaluating a model."""
    try:
        return read_trees(estimator)
    except TypeError as err:
        if "pass the estimator itself" not in str(err):
            raise
        raise TypeError(f"{str(err).split(' Fix:')[0]} Fix: {alternative}; or "
                        "jaximp.permutation_importance, which evaluates any model.") from None


def _transversal_rates(estimator, feature_names, output) -> TransversalRates:
    kind, classifier, params, depth = _statistic_trees(
        estimator, "transversal_rates of a model fitted on one output at a time")
    feature_names = _feature_names(estimator, feature_names)
    if classifier:
        names = [str(c) for c in estimator.classes_]
    else:
        k = int(params["init"].shape[0]) if "tree_class" in params else (
            1 if kind == "gb" else int(params["value"].shape[2]))
        names = ["y"] if k == 1 else [f"y{j}" for j in range(k)]
    if output is None:
        if len(names) > 2 or (len(names) == 2 and not classifier):
            raise ValueError(
                f"output must name the compared output of a model with {len(names)} outputs "
                f"{names[:5]}; got None. Fix: pass output=<class label or index>, e.g. "
                f"output={names[0]!r}."
            )
        column = len(names) - 1  # the regressor's output, or the positive class
    else:
        column = select_outputs(names, output)[0]
    value = params["value"]
    sign = 1.0
    if kind == "gb":
        if "tree_class" in params:  # XGBoost, LightGBM, CatBoost
            K, tree_class = int(params["init"].shape[0]), np.asarray(params["tree_class"])
        else:
            K = int(estimator.estimators_.shape[1])
            tree_class = np.arange(value.shape[0]) % K
        if K == 1 and classifier:  # one tree per stage: the positive class's log-odds
            sign, keep = (1.0 if column == 1 else -1.0), tree_class == 0
        else:
            keep = tree_class == column
        params = {name: a[keep] for name, a in params.items()
                  if name in ("feature", "children_left", "children_right",
                              "weighted_n_node_samples", "value")}
        value = sign * params["value"][..., 0]
    else:
        value = value[..., column]
    # pad the node axis to a power of two, so that forests of similar size share one compile
    T, N = value.shape
    pad = ((0, 0), (0, max(8, 1 << (N - 1).bit_length()) - N))
    extra = jnp.broadcast_to(jnp.arange(N, N + pad[1][1], dtype=jnp.int32), (T, pad[1][1]))
    arrays = {
        "feature": jnp.pad(params["feature"], pad),
        "children_left": jnp.concatenate([params["children_left"], extra], axis=1),
        "children_right": jnp.concatenate([params["children_right"], extra], axis=1),
        "weighted_n_node_samples": jnp.pad(params["weighted_n_node_samples"], pad),
    }
    signs, relative, counts = _transversal_sums(arrays, jnp.pad(value, pad),
                                                len(feature_names), depth, kind == "gb")
    n = np.asarray(counts).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        atr = np.where(n > 0, np.asarray(signs, np.float64).sum(axis=0) / np.maximum(n, 1),
                       np.nan)
    return TransversalRates(
        feature_names=feature_names,
        atr=atr,
        rtr=np.asarray(relative, np.float64).sum(axis=0),
        n_splits=n.astype(np.int64),
        output_name=names[column],
        info=TreeDetails(estimator=type(estimator).__name__, n_trees=int(value.shape[0]),
                         node_means="leaf averages" if kind == "gb" else "node values",
                         sign=sign),
    )
