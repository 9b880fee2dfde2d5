"""Fitted scikit-learn tree models as JAX arrays: predictions, impurity importance, and PD.

:func:`tree_predictor` reads a fitted scikit-learn ``DecisionTreeRegressor``,
``DecisionTreeClassifier``, ``RandomForestRegressor``, ``RandomForestClassifier``,
``ExtraTreesRegressor``, ``ExtraTreesClassifier``, ``GradientBoostingRegressor`` or
``GradientBoostingClassifier`` into node arrays padded to the largest tree and stacked over the
``T`` trees, and predicts with a pure JAX function, so the engine's methods run the model on the
accelerator instead of calling scikit-learn on the host. ``HistGradientBoostingRegressor`` and
``HistGradientBoostingClassifier`` are read from their predictor nodes for predictions only.

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

- HistGradientBoosting: ``F(x) = baseline + sum of the stage trees`` (leaf values already
  shrunk), then the loss's inverse link (identity, exp, sigmoid or softmax) as ``predict`` /
  ``predict_proba``. scikit-learn compares float64 rows with the raw float64
  ``num_threshold``: under ``jax_enable_x64`` the thresholds stay float64 and the splits are
  exact; otherwise thresholds and rows are both rounded to the nearest float32, so a row equal
  to a threshold still goes left, and only a value within half a float32 step of a threshold
  (but not on it) can go the other way. Categorical splits are refused (TypeError).
- transversal rates (:func:`transversal_rates`): see there.

Unsupported estimators (e.g. multi-output classifiers, gradient boosting with a non-constant
init estimator, HistGradientBoosting outside :func:`tree_predictor`) raise a TypeError; pass
such an estimator directly to the methods, which then predict on the host.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ._data import as_dataset
from ._details import TreeDetails
from ._grid import feature_grid, product_grid_index
from ._model import Predictor, compute_dtype, stable_apply, x64_enabled
from ._results import FeatureImportance

__all__ = ["TransversalRates", "impurity_importance", "transversal_rates",
           "tree_partial_dependence", "tree_predictor"]

_FOREST_TYPES = (
    "DecisionTreeRegressor", "DecisionTreeClassifier", "ExtraTreeRegressor",
    "ExtraTreeClassifier", "RandomForestRegressor", "RandomForestClassifier",
    "ExtraTreesRegressor", "ExtraTreesClassifier",
)
_GB_TYPES = ("GradientBoostingRegressor", "GradientBoostingClassifier")
_HIST_TYPES = ("HistGradientBoostingRegressor", "HistGradientBoostingClassifier")
_SUPPORTED = (
    "DecisionTreeRegressor/Classifier, RandomForestRegressor/Classifier, "
    "ExtraTreesRegressor/Classifier, GradientBoostingRegressor/Classifier"
)
#: scikit-learn link of a HistGradientBoosting loss -> the inverse link applied to the raw score
_HIST_LINKS = {"IdentityLink": "identity", "LogLink": "exp", "LogitLink": "sigmoid",
               "MultinomialLogit": "softmax"}


def _float_dtype():
    return np.float64 if x64_enabled() else np.float32


def _is_classifier(est) -> bool:
    return hasattr(est, "classes_")


def _unsupported(est, why: str = "", hist: bool = False) -> TypeError:
    supported = _SUPPORTED + (", HistGradientBoostingRegressor/Classifier" if hist else "")
    return TypeError(
        f"expected a fitted scikit-learn tree model ({supported}); got "
        f"{type(est).__name__}{why}. Fix: pass the estimator itself to the jaximp method "
        "(it then predicts on the host)."
    )


def _kind(est, hist: bool = False) -> str:
    """``"forest"``, ``"gb"`` or (when ``hist``) ``"hist"``; TypeError for anything else."""
    name = type(est).__name__
    module = type(est).__module__ or ""
    if not module.startswith("sklearn."):
        raise _unsupported(est, hist=hist)
    if name in _FOREST_TYPES:
        kind = "forest"
    elif name in _GB_TYPES:
        kind = "gb"
    elif hist and name in _HIST_TYPES:
        kind = "hist"
    else:
        raise _unsupported(est, hist=hist)
    fitted = hasattr(est, "tree_") or hasattr(est, "estimators_") or hasattr(est, "_predictors")
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
    """Leaf index of each row in each tree, int32 (m, T); rows are compared in the thresholds'
    dtype (float32 for scikit-learn's trees, which cast ``X`` to float32 as well)."""
    x = X.astype(params["threshold"].dtype)
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


def _make_apply(kind: str, depth: int, n_classes_gb: int, link: str, size: tuple):
    """One ``apply`` per (kind, depth, link, trees x values): the engine sizes its chunks by
    the compiled memory of an ``apply``, which grows with the number of trees and values."""

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
                elif link == "exp":
                    out = jnp.exp(raw)
                else:
                    out = raw
            # float64 under x64 (float64 node values), so the engine's float64 path stays exact
            return out.astype(params["value"].dtype)

        return jax.jit(apply_trees)

    return stable_apply(("sklearn-trees", kind, depth, n_classes_gb, link, size), make)


def _hist_arrays(est) -> tuple[dict, int, str]:
    """Padded node arrays of a fitted HistGradientBoosting model, its depth and its link.

    Thresholds are the raw ``num_threshold``, which scikit-learn compares with float64 rows:
    float64 under x64 (exact); otherwise rounded to the nearest float32, as the rows are, so a
    row equal to a threshold (percentile thresholds are often data values) still goes left."""
    link = _HIST_LINKS.get(type(est._loss.link).__name__)
    if link is None:
        raise _unsupported(est, f" with loss {est.loss!r}", hist=True)
    nodes = [predictor.nodes for stage in est._predictors for predictor in stage]
    T, N = len(nodes), max(len(n) for n in nodes)
    ftype = _float_dtype()
    idx = np.broadcast_to(np.arange(N, dtype=np.int32), (T, N))
    feature = np.zeros((T, N), np.int32)
    threshold = np.zeros((T, N), ftype)
    left, right = idx.copy(), idx.copy()
    missing_left = np.zeros((T, N), bool)
    value = np.zeros((T, N, 1), np.float64)
    count = np.zeros((T, N), np.float64)
    for t, nd in enumerate(nodes):
        n = len(nd)
        split = nd["is_leaf"] == 0
        if np.any(nd["is_categorical"][split]):
            raise TypeError(
                f"{type(est).__name__} has categorical splits, which the JAX array form does "
                "not support; got a model fitted with categorical_features. Fix: pass the "
                "estimator itself to the jaximp method (it then predicts on the host)."
            )
        feature[t, :n] = np.where(split, nd["feature_idx"], 0)
        threshold[t, :n] = np.where(split, np.asarray(nd["num_threshold"]).astype(ftype), 0)
        left[t, :n] = np.where(split, nd["left"], np.arange(n))
        right[t, :n] = np.where(split, nd["right"], np.arange(n))
        missing_left[t, :n] = (nd["missing_go_to_left"] != 0) & split
        value[t, :n, 0] = nd["value"]
        count[t, :n] = nd["count"]
    depth = int(max(int(nd["depth"].max()) for nd in nodes))
    params = {
        "feature": jnp.asarray(feature),
        "threshold": jnp.asarray(threshold),
        "children_left": jnp.asarray(left),
        "children_right": jnp.asarray(right),
        "missing_left": jnp.asarray(missing_left),
        "value": jnp.asarray(value.astype(ftype)),
        "impurity": jnp.zeros((T, N), ftype),
        "weighted_n_node_samples": jnp.asarray(count.astype(ftype)),
        "init": jnp.asarray(np.asarray(est._baseline_prediction, np.float64).reshape(-1)
                            .astype(ftype)),
        "learning_rate": jnp.asarray(np.asarray(1.0, ftype)),
    }
    return params, depth, link


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
        ``ExtraTreesRegressor/Classifier``, ``GradientBoostingRegressor/Classifier`` or
        ``HistGradientBoostingRegressor/Classifier`` without categorical splits (see the
        module docstring for the node arrays, the prediction and its float32 caveat for
        HistGradientBoosting).

    Returns
    -------
    Predictor
        ``apply(params, X) -> (m, o)``, float32 (float64 under x64), equal to
        ``estimator.predict`` (regressors, ``o`` = number of targets) or
        ``estimator.predict_proba`` (classifiers, ``o`` = number of classes, ``output_names``
        the class labels as str). ``params`` holds the node arrays (``value`` etc. in float64
        when ``jax_enable_x64`` is on, else float32); gradient boosting adds ``init`` (K,) and
        ``learning_rate`` ().

    Raises
    ------
    TypeError
        For any other estimator (e.g. ``KNeighborsRegressor``) or categorical splits: pass it
        directly to the jaximp method instead, which predicts on the host.

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
    kind = _kind(estimator, hist=True)
    classifier = _is_classifier(estimator)
    if kind == "hist":
        params, depth, link = _hist_arrays(estimator)
        K = int(estimator.n_trees_per_iteration_)
        n_out = (2 if K == 1 else K) if classifier else 1
        kind = "gb"  # the same raw score: init + sum of the stage trees (values are shrunk)
    elif kind == "gb":
        _, _, params, depth = _read(estimator)
        K = int(estimator.estimators_.shape[1])
        params = dict(params)
        ftype = _float_dtype()
        params["init"] = jnp.asarray(_gb_init(estimator).astype(ftype))
        params["learning_rate"] = jnp.asarray(np.asarray(estimator.learning_rate, ftype))
        link = ("sigmoid" if K == 1 else "softmax") if classifier else "identity"
        n_out = (2 if K == 1 else K) if classifier else 1
    else:
        _, _, params, depth = _read(estimator)
        K, link = 0, "mean"
        n_out = int(params["value"].shape[2])
    if classifier:
        output_names = tuple(str(c) for c in estimator.classes_)
    elif n_out == 1:
        output_names = ("y",)
    else:
        output_names = tuple(f"y{j}" for j in range(n_out))
    return Predictor(
        apply=_make_apply(kind, depth, K, link, (params["value"].shape[0],
                                                  params["value"].shape[2])),
        params=params,
        n_outputs=n_out,
        output_names=output_names,
        name=f"{type(estimator).__name__} (JAX trees)",
        dtype=compute_dtype(params),
    )


def array_form(model, response_method: str = "auto", sample=None,
               n_features: int | None = None) -> Predictor | None:
    """:func:`tree_predictor` of ``model`` where it computes exactly what the host would, else
    None (the model then stays on the host path of :func:`jaximp.as_predictor`).

    None for: anything but a supported fitted scikit-learn tree model (unfitted, multi-output
    classifier, non-constant init...); a response other than ``predict_proba`` of a classifier
    or ``predict`` of a regressor; a width other than ``n_features``; a DataFrame ``sample``
    whose columns are not the fitted feature names in order or not all numeric (the host
    path then reports or encodes them as scikit-learn does); and ``HistGradientBoosting*``
    unless ``jax_enable_x64`` is on, since it compares float64 rows with float64 thresholds.
    """
    try:
        kind = _kind(model, hist=True)
    except TypeError:
        return None
    natural = "predict_proba" if _is_classifier(model) else "predict"
    if response_method not in ("auto", natural):
        return None
    if kind == "hist" and not x64_enabled():
        return None
    width = getattr(model, "n_features_in_", None)
    if n_features is not None and width != n_features:
        return None
    columns = getattr(sample, "columns", None)
    if columns is not None:
        names = getattr(model, "feature_names_in_", None)
        if names is not None and [str(c) for c in columns] != [str(c) for c in names]:
            return None
        if not all(getattr(dt, "kind", "O") in "biuf" for dt in getattr(sample, "dtypes", [])):
            return None
    try:
        return tree_predictor(model)
    except TypeError:
        return None


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
    p = int(estimator.n_features_in_)
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
    return feature_names


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
    kind, _, params, _ = _read(estimator)
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
                         criterion=getattr(estimator, "criterion", None), n_trees_used=n_used),
    )


@functools.partial(jax.jit, static_argnames="depth")
def _recursion_pd(params, points, columns, depth: int) -> jax.Array:
    """Weighted-traversal PD of every tree at every grid point, (T, g, k): ``points`` (g, s)
    hold values of the data columns ``columns`` (s,)."""
    z = points.astype(jnp.float32)

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
        matches = feature[parent][:, None] == columns[None, :]  # (N, s)
        on_set = matches.any(axis=1)  # the parent splits on a column of the set
        slot = jnp.argmax(matches, axis=1)  # which of the point's values it compares
        pthr = thr[parent]

        def factors(point):
            zv = point[slot]  # (N,)
            go_left = jnp.where(jnp.isnan(zv), missing[parent], zv <= pthr)
            follow = jnp.where(is_left, go_left, ~go_left).astype(frac.dtype)
            f = jnp.where(on_set, follow, frac)
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
    what scikit-learn returns; a binary classifier gives one column, the log-odds part).

    Parameters
    ----------
    estimator : fitted scikit-learn tree model
        As :func:`tree_predictor`, except ``HistGradientBoosting*``.
    X : array-like of shape (n, p) or DataFrame
        Data used only to build the grid and resolve the features.
    feature : int or str, or a list of them
        The feature (column index or name), or several for their joint partial dependence on
        the product of their grids (the last feature varying fastest, as scikit-learn).
    grid : str or array-like, default "sklearn"
        A strategy of :func:`jaximp.partial_dependence` (``"sklearn"`` reproduces
        scikit-learn's grid) or explicit grid values (g,); for several features, one strategy
        for all or a list with a strategy or explicit values per feature.
    grid_resolution : int, default 100
        Number of grid points of a strategy, per feature.
    percentiles : tuple of float, default (0.05, 0.95)
        Range of a ``"uniform"`` or ``"sklearn"`` grid.

    Returns
    -------
    grid_values : ndarray of shape (g,), or a tuple of them for several features
    average : ndarray of shape (g, o), or (g_1, ..., g_s, o) for several features
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
    >>> values, pd_ = tree_partial_dependence(gb, X, [0, 1], grid_resolution=4)
    >>> pd_.shape
    (4, 4, 1)
    """
    kind, classifier, params, depth = _read(estimator)
    dataset = as_dataset(X)
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
            rows, _ = feature_grid(dataset, feat, strategy=option,
                                   grid_resolution=grid_resolution, percentiles=percentiles)
        else:
            rows, _ = feature_grid(dataset, feat, values=option)
        values.append(rows[:, 0])
    shape = tuple(len(v) for v in values)
    index = product_grid_index(shape, [feat.name for feat in features])
    points = np.stack([v[k] for v, k in zip(values, index)], axis=1)  # (g, s)
    columns = np.array([feat.columns[0] for feat in features], np.int32)
    ftype = _float_dtype()
    per_tree = _recursion_pd(params, jnp.asarray(points.astype(ftype)), jnp.asarray(columns),
                             depth)
    per_tree = np.asarray(per_tree, np.float64)  # (T, g, k)
    if kind == "forest":
        average = per_tree.mean(axis=0)
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
        import matplotlib.pyplot as plt

        if rate not in ("atr", "rtr", "rtr_mean"):
            raise ValueError(f"rate must be one of ('atr', 'rtr', 'rtr_mean'); got {rate!r}.")
        values = np.asarray(getattr(self, rate))
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 0.3 * len(values) + 1))
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

        def total(a):
            return jax.ops.segment_sum(jnp.where(split, a, 0), feature, num_segments=n_features)

        return total(jnp.sign(diff)), total(relative), total(split.astype(jnp.int32))

    return jax.vmap(one)(params["feature"], params["children_left"], params["children_right"],
                         params["weighted_n_node_samples"], value)


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
      data); a tie ``L = R`` counts in ``n`` and adds 0 to both.

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
        The compared output: a class label (or index into ``classes_``) for classifiers, an
        index for a multi-output regressor. Default: the only output of a regressor, the
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
    kind, classifier, params, depth = _read(estimator)
    feature_names = _feature_names(estimator, feature_names)
    if classifier:
        names = [str(c) for c in estimator.classes_]
    else:
        k = 1 if kind == "gb" else int(params["value"].shape[2])
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
        from ._common import select_outputs

        if isinstance(output, (list, tuple)):
            raise ValueError(f"output must be one class label or index; got {output!r}.")
        column = select_outputs(names, output)[0]
    value = params["value"]
    sign = 1.0
    if kind == "gb":
        K = int(estimator.estimators_.shape[1])
        tree_class = np.arange(value.shape[0]) % K
        if K == 1 and classifier:  # one tree per stage: the positive class's log-odds
            sign, keep = (1.0 if column == 1 else -1.0), tree_class == 0
        else:
            keep = tree_class == column
        params = {name: a[keep] for name, a in params.items()}
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
