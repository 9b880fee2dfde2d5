"""Fitted scikit-learn tree models as JAX arrays: predictions, impurity importance, and PD.

:func:`tree_predictor` reads a fitted scikit-learn ``DecisionTreeRegressor``,
``DecisionTreeClassifier``, ``RandomForestRegressor``, ``RandomForestClassifier``,
``ExtraTreesRegressor``, ``ExtraTreesClassifier``, ``GradientBoostingRegressor`` or
``GradientBoostingClassifier`` into node arrays padded to the largest tree and stacked over the
``T`` trees, and predicts with a pure JAX function, so the engine's methods run the model on the
accelerator instead of calling scikit-learn on the host.

Node arrays (``N`` the largest node count; padding nodes are leaves of weight 0):

- feature : int32 (T, N), the split feature (0 at leaves);
- threshold : float32 (T, N), the split threshold (0 at leaves);
- children_left, children_right : int32 (T, N), child indices; a leaf points to itself;
- missing_left : bool (T, N), where a missing value (NaN) goes at a split;
- value : float (T, N, k), the leaf values; forests: the class probabilities (each leaf's row
  of ``tree_.value`` normalized to sum 1, as ``predict_proba`` does) or the ``k`` regression
  outputs; gradient boosting: ``k = 1``, the stage tree's raw value;
- impurity, weighted_n_node_samples : float (T, N), the node impurity and the weighted number
  of training samples that reached the node.

Definitions:

- traversal: ``node <- where(x[feature[node]] <= threshold[node], left[node], right[node])``
  repeated ``max_depth`` times from the root (leaves point to themselves), a NaN going to
  ``missing_left``. scikit-learn casts ``X`` to float32 and compares it with the float64
  threshold; a float32 ``x`` satisfies ``x <= t`` exactly when ``x <= t32``, ``t32`` the
  largest float32 not above ``t``, so thresholds are stored rounded down to float32 and the
  splits agree exactly without float64;
- forests (and a single tree): the mean over trees of the leaf values, i.e. ``predict`` for
  regressors and ``predict_proba`` for classifiers;
- gradient boosting: the raw score ``F(x) = F0 + learning_rate * sum_s tree_s(x)`` (one tree
  per class and stage in ``estimators_`` of shape (n_stages, K)); ``F0`` is the init
  estimator's raw prediction, read once from ``_raw_predict_init`` (the init must be
  constant: ``init=None``, ``"zero"`` or a scikit-learn ``Dummy`` estimator). Regressors
  return ``F``; binary classifiers ``(1 - sigmoid(F), sigmoid(F))``; multiclass classifiers
  ``softmax(F)``, as ``predict_proba``;
- impurity importance (:func:`impurity_importance`): for each tree, feature ``j`` gets
  ``sum over splits on j of w_node i_node - w_left i_left - w_right i_right`` divided by the
  root weight (mean decrease in impurity). As scikit-learn's ``feature_importances_``, trees
  that are a single leaf are skipped; forests normalize each tree to sum 1, gradient boosting
  does not; the mean over the kept trees is normalized to sum 1;
- recursion partial dependence (:func:`tree_partial_dependence`): Friedman's weighted
  traversal, as scikit-learn's ``method="recursion"``: a split on the feature follows the
  grid value's branch, any other split follows both branches weighted by the fraction of
  training weight that went each way; the PD is the weighted sum of the leaf values. It uses
  the training weights stored in the trees, not the rows of ``X``.

Unsupported estimators (e.g. ``HistGradientBoostingRegressor``, multi-output classifiers,
gradient boosting with a non-constant init estimator) raise a TypeError; pass such an estimator
directly to the methods, which then predict on the host.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ._data import as_dataset
from ._grid import feature_grid
from ._model import Predictor, _compute_dtype, _stable_apply, _x64_enabled
from ._results import FeatureImportance

__all__ = ["tree_predictor", "impurity_importance", "tree_partial_dependence"]

_FOREST_TYPES = (
    "DecisionTreeRegressor", "DecisionTreeClassifier", "ExtraTreeRegressor",
    "ExtraTreeClassifier", "RandomForestRegressor", "RandomForestClassifier",
    "ExtraTreesRegressor", "ExtraTreesClassifier",
)
_GB_TYPES = ("GradientBoostingRegressor", "GradientBoostingClassifier")
_SUPPORTED = (
    "DecisionTreeRegressor/Classifier, RandomForestRegressor/Classifier, "
    "ExtraTreesRegressor/Classifier, GradientBoostingRegressor/Classifier"
)


def _float_dtype():
    return np.float64 if _x64_enabled() else np.float32


def _is_classifier(est) -> bool:
    return hasattr(est, "classes_")


def _unsupported(est, why: str = "") -> TypeError:
    return TypeError(
        f"expected a fitted scikit-learn tree model ({_SUPPORTED}); got "
        f"{type(est).__name__}{why}. Fix: pass the estimator itself to the jaximp method "
        "(it then predicts on the host)."
    )


def _kind(est) -> str:
    """``"forest"`` or ``"gb"``; TypeError for anything else."""
    name = type(est).__name__
    module = type(est).__module__ or ""
    if not module.startswith("sklearn."):
        raise _unsupported(est)
    if name in _FOREST_TYPES:
        kind = "forest"
    elif name in _GB_TYPES:
        kind = "gb"
    else:
        raise _unsupported(est)
    fitted = hasattr(est, "tree_") or hasattr(est, "estimators_")
    if not fitted:
        raise TypeError(
            f"expected a fitted {name}; got an unfitted one. Fix: call fit(X, y) first."
        )
    if _is_classifier(est) and isinstance(est.classes_, list):
        raise _unsupported(est, " with several outputs (multi-output classifier)")
    return kind


def _trees_of(est, kind: str) -> list:
    if hasattr(est, "tree_"):
        return [est.tree_]
    if kind == "gb":
        return [tree.tree_ for tree in np.asarray(est.estimators_).ravel()]
    return [tree.tree_ for tree in est.estimators_]


def _round_down_float32(threshold: np.ndarray) -> np.ndarray:
    """Largest float32 not above each float64 threshold (exact float32 comparisons)."""
    t32 = threshold.astype(np.float32)
    above = t32.astype(np.float64) > threshold
    t32[above] = np.nextafter(t32[above], np.float32(-np.inf))
    return t32


def _node_arrays(trees: list, normalize_rows: bool) -> tuple[dict, int]:
    """Padded node arrays of the trees (see the module docstring) and the largest depth."""
    T = len(trees)
    N = max(tree.node_count for tree in trees)
    _, n_targets, n_classes = trees[0].value.shape
    k = n_classes if normalize_rows else n_targets * n_classes
    ftype = _float_dtype()
    idx = np.broadcast_to(np.arange(N, dtype=np.int32), (T, N))
    feature = np.zeros((T, N), np.int32)
    threshold = np.zeros((T, N), np.float32)
    left, right = idx.copy(), idx.copy()
    missing_left = np.zeros((T, N), bool)
    value = np.zeros((T, N, k), np.float64)
    impurity = np.zeros((T, N), np.float64)
    weight = np.zeros((T, N), np.float64)
    for t, tree in enumerate(trees):
        n = tree.node_count
        split = tree.children_left[:n] != -1
        feature[t, :n] = np.where(split, tree.feature[:n], 0)
        threshold[t, :n] = np.where(split, _round_down_float32(tree.threshold[:n]), 0)
        left[t, :n] = np.where(split, tree.children_left[:n], np.arange(n))
        right[t, :n] = np.where(split, tree.children_right[:n], np.arange(n))
        missing_left[t, :n] = np.asarray(tree.missing_go_to_left[:n], bool) & split
        val = np.asarray(tree.value[:n], np.float64)
        if normalize_rows:  # classifier: counts or fractions -> probabilities
            val = val[:, 0, :]
            total = val.sum(axis=1, keepdims=True)
            val = val / np.where(total == 0, 1.0, total)
        else:
            val = val.reshape(n, -1)
        value[t, :n] = val
        impurity[t, :n] = tree.impurity[:n]
        weight[t, :n] = tree.weighted_n_node_samples[:n]
    depth = max(tree.max_depth for tree in trees)
    params = {
        "feature": jnp.asarray(feature),
        "threshold": jnp.asarray(threshold),
        "children_left": jnp.asarray(left),
        "children_right": jnp.asarray(right),
        "missing_left": jnp.asarray(missing_left),
        "value": jnp.asarray(value.astype(ftype)),
        "impurity": jnp.asarray(impurity.astype(ftype)),
        "weighted_n_node_samples": jnp.asarray(weight.astype(ftype)),
    }
    return params, int(depth)


def _gb_init(est) -> np.ndarray:
    """The constant raw init prediction ``F0`` of a gradient boosting model, shape (K,)."""
    init = est.init_
    constant = isinstance(init, str) and init == "zero" or type(init).__name__ in (
        "DummyRegressor", "DummyClassifier")
    if not constant:
        raise _unsupported(
            est, f" with a non-constant init estimator ({type(init).__name__})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # feature-name warnings for the dummy row
        row = np.zeros((1, est.n_features_in_))
        if hasattr(est, "feature_names_in_"):
            import pandas as pd

            row = pd.DataFrame(row, columns=est.feature_names_in_)
        return np.asarray(est._raw_predict_init(row), np.float64)[0]


@functools.partial(jax.jit, static_argnames="depth")
def _leaves(params, X, depth: int) -> jax.Array:
    """Leaf index of each row in each tree, int32 (m, T)."""
    x = X.astype(jnp.float32)
    T = params["feature"].shape[0]
    tree_ids = jnp.arange(T)

    def one(x_row):
        def step(_, node):
            f = params["feature"][tree_ids, node]
            xv = x_row[f]
            go_left = jnp.where(jnp.isnan(xv), params["missing_left"][tree_ids, node],
                                xv <= params["threshold"][tree_ids, node])
            return jnp.where(go_left, params["children_left"][tree_ids, node],
                             params["children_right"][tree_ids, node])

        return jax.lax.fori_loop(0, depth, step, jnp.zeros(T, jnp.int32))

    return jax.vmap(one)(x)


def _leaf_values(params, X, depth: int) -> jax.Array:
    """Leaf values of each row in each tree, (m, T, k)."""
    nodes = _leaves(params, X, depth)
    T = params["feature"].shape[0]
    return params["value"][jnp.arange(T)[None, :], nodes]


def _make_apply(kind: str, depth: int, n_classes_gb: int, link: str):
    def make():
        def apply_trees(params, X):
            vals = _leaf_values(params, X, depth)  # (m, T, k)
            if kind == "forest":
                out = jnp.mean(vals, axis=1)
            else:
                m = vals.shape[0]
                raw = vals[..., 0].reshape(m, -1, n_classes_gb).sum(axis=1)
                raw = params["init"] + params["learning_rate"] * raw
                if link == "sigmoid":
                    p1 = jax.nn.sigmoid(raw[:, 0])
                    out = jnp.stack([1.0 - p1, p1], axis=1)
                elif link == "softmax":
                    out = jax.nn.softmax(raw, axis=1)
                else:
                    out = raw
            return out.astype(jnp.float32)

        return jax.jit(apply_trees)

    return _stable_apply(("sklearn-trees", kind, depth, n_classes_gb, link), make)


def _read(est):
    kind = _kind(est)
    classifier = _is_classifier(est)
    params, depth = _node_arrays(_trees_of(est, kind), normalize_rows=classifier
                                 and kind == "forest")
    return kind, classifier, params, depth


def tree_predictor(estimator) -> Predictor:
    """A fitted scikit-learn tree model as a JAX :class:`~jaximp.Predictor`.

    Parameters
    ----------
    estimator : fitted scikit-learn tree model
        ``DecisionTreeRegressor/Classifier``, ``RandomForestRegressor/Classifier``,
        ``ExtraTreesRegressor/Classifier`` or ``GradientBoostingRegressor/Classifier`` (see the
        module docstring for the node arrays and the prediction it computes).

    Returns
    -------
    Predictor
        ``apply(params, X) -> (m, o) float32``, equal to ``estimator.predict`` (regressors,
        ``o`` = number of targets) or ``estimator.predict_proba`` (classifiers, ``o`` = number
        of classes, ``output_names`` the class labels as str). ``params`` holds the node arrays
        (``value`` etc. in float64 when ``jax_enable_x64`` is on, else float32); gradient
        boosting adds ``init`` (K,) and ``learning_rate`` ().

    Raises
    ------
    TypeError
        For any other estimator (e.g. ``HistGradientBoostingRegressor``): pass it directly to
        the jaximp method instead, which predicts on the host.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> rf = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0)
    >>> rf = rf.fit(X, X[:, 0])
    >>> pred = tree_predictor(rf)
    >>> pred.n_outputs, pred.output_names
    (1, ('y',))
    >>> bool(np.allclose(np.asarray(pred(X))[:, 0], rf.predict(X), rtol=1e-5, atol=1e-6))
    True
    """
    kind, classifier, params, depth = _read(estimator)
    if kind == "gb":
        K = int(estimator.estimators_.shape[1])
        params = dict(params)
        ftype = _float_dtype()
        params["init"] = jnp.asarray(_gb_init(estimator).astype(ftype))
        params["learning_rate"] = jnp.asarray(np.asarray(estimator.learning_rate, ftype))
        link = ("sigmoid" if K == 1 else "softmax") if classifier else "identity"
        n_out = (2 if K == 1 else K) if classifier else 1
    else:
        K, link = 0, "mean"
        n_out = int(params["value"].shape[2])
    if classifier:
        output_names = tuple(str(c) for c in estimator.classes_)
    elif n_out == 1:
        output_names = ("y",)
    else:
        output_names = tuple(f"y{j}" for j in range(n_out))
    return Predictor(
        apply=_make_apply(kind, depth, K, link),
        params=params,
        n_outputs=n_out,
        output_names=output_names,
        name=f"{type(estimator).__name__} (JAX trees)",
        dtype=_compute_dtype(params),
    )


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


def impurity_importance(estimator, feature_names=None) -> FeatureImportance:
    """Impurity-based (mean decrease in impurity) importance of a fitted tree model.

    Computed in JAX from the node arrays of :func:`tree_predictor`, vectorized over trees, and
    equal to ``estimator.feature_importances_`` (see the module docstring for the definition).

    Parameters
    ----------
    estimator : fitted scikit-learn tree model
        As :func:`tree_predictor`.
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
    kind, _, params, _ = _read(estimator)
    p = int(estimator.n_features_in_)
    if feature_names is None:
        if hasattr(estimator, "feature_names_in_"):
            feature_names = tuple(str(c) for c in estimator.feature_names_in_)
        else:
            feature_names = tuple(f"x{j}" for j in range(p))
    feature_names = tuple(str(c) for c in feature_names)
    if len(feature_names) != p:
        raise ValueError(
            f"feature_names must have one name per feature ({p}); got {len(feature_names)}. "
            "Fix: pass p names or leave feature_names=None."
        )
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
        info={
            "estimator": type(estimator).__name__,
            "criterion": getattr(estimator, "criterion", None),
            "n_trees": T,
            "n_trees_used": n_used,
        },
    )


@functools.partial(jax.jit, static_argnames="depth")
def _recursion_pd(params, grid, j, depth: int) -> jax.Array:
    """Weighted-traversal PD of every tree at every grid value, (T, g, k)."""
    z = grid.astype(jnp.float32)

    def one(feature, left, right, missing, thr, weight, value):
        N = feature.shape[0]
        idx = jnp.arange(N)
        split = left != idx
        # parent of each node (the root is its own parent)
        parent = jnp.zeros(N, jnp.int32)
        parent = parent.at[jnp.where(split, left, N)].set(idx, mode="drop")
        parent = parent.at[jnp.where(split, right, N)].set(idx, mode="drop")
        is_left = jnp.zeros(N, bool).at[jnp.where(split, left, N)].set(True, mode="drop")
        pw = weight[parent]
        frac = jnp.where(pw > 0, weight / jnp.where(pw > 0, pw, 1.0), 0.0)
        on_j = feature[parent] == j
        pthr = thr[parent]

        def factors(zv):
            go_left = jnp.where(jnp.isnan(zv), missing[parent], zv <= pthr)
            follow = jnp.where(is_left, go_left, ~go_left).astype(frac.dtype)
            f = jnp.where(on_j, follow, frac)
            return f.at[0].set(1.0)

        fac = jax.vmap(factors)(z)  # (g, N)
        path = jax.lax.fori_loop(0, depth, lambda _, w: fac * w[:, parent],
                                 jnp.ones_like(fac))
        leaf_w = jnp.where(split, 0.0, path)
        return leaf_w @ value  # (g, k)

    return jax.vmap(one)(params["feature"], params["children_left"],
                         params["children_right"], params["missing_left"],
                         params["threshold"], params["weighted_n_node_samples"],
                         params["value"])


def tree_partial_dependence(estimator, X, feature, grid="sklearn", *,
                            grid_resolution: int = 100,
                            percentiles: tuple[float, float] = (0.05, 0.95)) -> np.ndarray:
    """Partial dependence of a tree model on one feature by Friedman's weighted traversal.

    Equal to ``sklearn.inspection.partial_dependence(estimator, X, [j],
    method="recursion")["average"].T`` on the same grid. As scikit-learn's recursion, it
    averages over the training distribution stored in the trees (node weights), not over the
    rows of ``X``, and returns: the mean of the trees' values for trees and forests
    (regressors: the prediction; classifiers: the class probabilities, which scikit-learn's
    recursion does not offer); for gradient boosting ``learning_rate * sum of the stage
    trees`` per class (the raw decision function without the init prediction ``F0``, exactly
    what scikit-learn returns; a binary classifier gives one column, the log-odds part).

    Parameters
    ----------
    estimator : fitted scikit-learn tree model
        As :func:`tree_predictor`.
    X : array-like of shape (n, p) or DataFrame
        Data used only to build the grid and resolve ``feature``.
    feature : int or str
        The feature (column index or name).
    grid : str or array-like of shape (g,), default "sklearn"
        A strategy of :func:`jaximp.partial_dependence` (``"sklearn"`` reproduces
        scikit-learn's grid) or explicit grid values.
    grid_resolution : int, default 100
        Number of grid points of a strategy.
    percentiles : tuple of float, default (0.05, 0.95)
        Range of a ``"uniform"`` or ``"sklearn"`` grid.

    Returns
    -------
    grid_values : ndarray of shape (g,)
    average : ndarray of shape (g, o)
        ``o`` = number of classes (forest classifiers), K (gradient boosting: 1 for binary
        classification and regression) or the number of targets.

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
    """
    kind, classifier, params, depth = _read(estimator)
    dataset = as_dataset(X)
    feat = dataset.feature(feature)
    if len(feat.columns) != 1:
        raise ValueError(
            f"expected a single-column feature; got {feat.name!r} with columns "
            f"{feat.columns}. Fix: pass one column."
        )
    if isinstance(grid, str):
        rows, _ = feature_grid(dataset, feat, strategy=grid, grid_resolution=grid_resolution,
                               percentiles=percentiles)
    else:
        rows, _ = feature_grid(dataset, feat, values=grid)
    values = rows[:, 0]
    ftype = _float_dtype()
    j = int(feat.columns[0])
    per_tree = _recursion_pd(params, jnp.asarray(values.astype(ftype)), j, depth)
    per_tree = np.asarray(per_tree, np.float64)  # (T, g, k)
    if kind == "forest":
        average = per_tree.mean(axis=0)
    else:
        K = int(estimator.estimators_.shape[1])
        g = per_tree.shape[1]
        average = per_tree[..., 0].reshape(-1, K, g).sum(axis=0).T * estimator.learning_rate
    return values, average
