"""Fitted scikit-learn tree models read into JAX arrays, and their predictions.

:func:`tree_predictor` reads a fitted scikit-learn ``DecisionTreeRegressor``,
``DecisionTreeClassifier``, ``RandomForestRegressor``, ``RandomForestClassifier``,
``ExtraTreesRegressor``, ``ExtraTreesClassifier``, ``GradientBoostingRegressor`` or
``GradientBoostingClassifier`` into node arrays padded to the largest tree and stacked over the
``T`` trees, and predicts with a pure JAX function, so the engine's methods run the model on the
accelerator instead of calling scikit-learn on the host. ``HistGradientBoostingRegressor`` and
``HistGradientBoostingClassifier`` are read from their predictor nodes for predictions only.

Node arrays (``N`` the largest node count; padding nodes are leaves of weight 0; "float" is
float32, or float64 under ``jax_enable_x64``, see Precision):

- feature : int32 (T, N), the split feature (0 at leaves);
- threshold : float32 (T, N), the split threshold (0 at leaves), rounded down to float32 (see
  traversal); HistGradientBoosting: float, its raw float64 threshold under x64;
- children_left, children_right : int32 (T, N), child indices; a leaf points to itself;
- missing_left : bool (T, N), where a missing value (NaN) goes at a split;
- value : float (T, N, k), the leaf values; forests: the class probabilities (each leaf's row
  of ``tree_.value`` normalized to sum 1, as ``predict_proba`` does) or the ``k`` regression
  outputs; gradient boosting: ``k = 1``, the stage tree's raw value;
- impurity, weighted_n_node_samples : float (T, N), the node impurity and the weighted number
  of training samples that reached the node.

XGBoost, LightGBM and CatBoost models (``Booster``, ``XGBRegressor``/``XGBClassifier``,
``LGBMRegressor``/``LGBMClassifier``, ``CatBoost``/``CatBoostRegressor``/
``CatBoostClassifier``) are read by :mod:`._xgboost`, :mod:`._lightgbm` and :mod:`._catboost`
(each library is imported only when given such a model) into the same arrays, with:

- value : float (T, N, 1), the leaf values as the library adds them (shrinkage included;
  CatBoost's ``scale`` included; LightGBM's random forest: divided by the iterations);
- threshold: the rule stays ``x <= threshold``: XGBoost's ``x < split_condition`` is stored
  as the float32 just below the condition; XGBoost and CatBoost compare float32 rows (their
  thresholds are float32 in both modes), LightGBM float64 rows (its thresholds are float64
  under x64, else rounded down to float32 as scikit-learn's);
- missing_left: where a NaN goes (XGBoost ``default_left``; LightGBM by ``missing_type``:
  "NaN" and "Zero" by ``default_left``, "None" as the value 0.0; CatBoost left unless
  ``nan_mode="Max"``);
- weighted_n_node_samples : the library's cover, the weights its TreeSHAP uses: XGBoost
  ``sum_hessian``, LightGBM ``internal_count`` / ``leaf_count``, CatBoost the leaf weights
  summed up the tree; impurity is 0 (the libraries keep none);
- split_gain : float (T, N), the split's loss reduction (XGBoost ``loss_changes``, LightGBM
  ``split_gain``; 0 for CatBoost and at leaves);
- init : float (K,), the constant raw score (XGBoost's ``base_score`` as a margin, CatBoost's
  bias, 0 for LightGBM, whose first tree holds its average); tree_class : int32 (T,), the raw
  output each tree adds to; link_scale : float (), the factor inside a sigmoid (LightGBM's
  ``sigmoid`` parameter, else 1);
- zero_missing : bool (T, N), only where LightGBM's ``missing_type`` is "Zero": a value of
  magnitude at most 1e-35 is missing too;
- is_categorical : bool (T, N), category_left : uint32 (T, N, W), category_outside_left :
  bool (), only where a model has categorical splits: at a categorical node the row's value
  is truncated to an integer category ``c`` (XGBoost's, whose outside categories go left,
  first tested for a sign: below 0 is outside) and goes left when bit ``c % 32`` of word
  ``c // 32`` is set, a NaN by ``missing_left``, a category outside ``[0, 32 W)`` by
  ``category_outside_left`` (XGBoost sends its listed categories right and the rest, out of
  range too, left; LightGBM sends its listed categories left and the rest, NaN and negative
  values too, right).

Their raw score is ``F_k(x) = init[k] + sum over the trees t of class k of value[t, leaf]``
(``response_method="raw"`` or ``"decision_function"``), and the prediction the library's
inverse link of it: identity, exp (Poisson, Gamma, Tweedie), sigmoid (binary; a classifier
wrapper returns ``(1 - p, p)`` as its ``predict_proba``) or softmax (multiclass). The trees
are those the library's ``predict`` uses (XGBoost's wrappers and LightGBM: up to
``best_iteration`` after early stopping). Refused with a TypeError naming
``trees="host"``: other objectives, LightGBM's linear trees, CatBoost's categorical features
and non-symmetric trees, XGBoost's ``gblinear``, vector leaves and a ``missing`` other than
NaN. A data width or DataFrame columns other than the model's features raise a ValueError.

Definitions:

- traversal: ``node <- where(x[feature[node]] <= threshold[node], left[node], right[node])``
  repeated ``max_depth`` times from the root (leaves point to themselves), a NaN going to
  ``missing_left``. scikit-learn casts ``X`` to float32 and compares it with the float64
  threshold; a float32 ``x`` satisfies ``x <= t`` exactly when ``x <= t32``, ``t32`` the
  largest float32 not above ``t``, so thresholds are stored rounded down to float32 and the
  splits agree exactly without float64. It runs level by level over all rows and trees at
  once (:mod:`._traversal`: trees of depth at most 10 re-laid as complete binary trees inside
  the jitted function, so a level gathers only the split fields; deeper trees walk the
  arrays flattened over the trees); the leaf reached is the same in every layout;
- forests (and a single tree): the mean over trees of the leaf values, i.e. ``predict`` for
  regressors and ``predict_proba`` for classifiers;
- gradient boosting: the raw score ``F(x) = F0 + learning_rate * sum_s tree_s(x)`` (one tree
  per class and stage in ``estimators_`` of shape (n_stages, K)); ``F0`` is the init
  estimator's raw prediction, read once from ``_raw_predict_init`` (the init must be
  constant: ``init=None``, ``"zero"`` or a scikit-learn ``Dummy`` estimator). Regressors
  return ``F``; binary classifiers ``(1 - sigmoid(F), sigmoid(F))``; multiclass classifiers
  ``softmax(F)``, as ``predict_proba``;
- HistGradientBoosting: ``F(x) = baseline + sum of the stage trees`` (leaf values already
  shrunk), then the loss's inverse link (identity, exp, sigmoid or softmax) as ``predict`` /
  ``predict_proba``. scikit-learn compares float64 rows with the raw float64
  ``num_threshold``: under ``jax_enable_x64`` the thresholds stay float64 and the splits are
  exact; otherwise thresholds and rows are both rounded to the nearest float32, so a row equal
  to a threshold still goes left, and only a value within half a float32 step of a threshold
  (but not on it) can go the other way. Categorical splits are refused (TypeError).

Precision: by default the values, weights and sums are float32, so predictions, partial
dependence and permutation importance differ from scikit-learn's float64 results by about 1e-6
relative. Under ``jax_enable_x64`` (``jax.config.update("jax_enable_x64", True)``, or inside
``with jax.enable_x64(True):``) they are float64 and equal scikit-learn's to 1e-7 relative or
better (about 1e-14 measured). The splits follow scikit-learn's exactly in both modes
(HistGradientBoosting: under x64, see above). The dtype is fixed when the trees are read: a
:func:`tree_predictor` built without x64 stays float32 under x64 (and one built under x64
computes in float32 without it), so build it in the mode it is used in; the methods, given the
estimator itself, read it again on every call.

Unsupported estimators (e.g. multi-output classifiers, gradient boosting with a non-constant
init estimator, HistGradientBoosting outside :func:`tree_predictor`) raise a TypeError; pass
such an estimator directly to the methods, which then predict on the host. The recursion
partial dependence, which needs the trees themselves, says to use ``method='brute'`` instead.
The statistics read from these arrays (impurity importance, recursion PD, transversal rates)
are methods, in :mod:`jaximp.methods._tree_stats`.
"""

from __future__ import annotations

import functools
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from ..data import PrecisionWarning, user_stacklevel, validate_params
from ._boosting import (
    BoostedModel,
    Float32Splits,
    boosting_library,
    check_columns,
    level_keys,
    node_params,
    pack_boosted,
    round_down_float32,
    training_codes,
)
from ._catboost import read_catboost
from ._lightgbm import read_lightgbm
from ._predictor import Predictor, compute_dtype, stable_apply, x64_enabled
from ._traversal import leaf_values, split_goes_left
from ._xgboost import read_xgboost

__all__ = ["array_form", "boosted_predictor", "read_boosted", "read_trees", "split_goes_left",
           "tree_float_dtype", "tree_predictor"]

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


def tree_float_dtype():
    """The float dtype of the node values: float64 under ``jax_enable_x64``, else float32."""
    return np.float64 if x64_enabled() else np.float32


def _is_classifier(est) -> bool:
    return hasattr(est, "classes_")


def _unsupported(est, why: str = "", hist: bool = False,
                 recursion: str | None = None) -> TypeError:
    if recursion is not None:
        return _recursion_refusal(est, why, recursion)
    supported = _SUPPORTED + (", HistGradientBoostingRegressor/Classifier" if hist else "")
    return TypeError(
        f"expected a fitted scikit-learn tree model ({supported}); got "
        f"{type(est).__name__}{why}. Fix: pass the estimator itself to the jaximp method "
        "(it then predicts on the host)."
    )


def _recursion_refusal(est, why: str, param: str) -> TypeError:
    """The recursion PD's TypeError for ``est`` (held by the parameter ``param``): the recursion
    traverses the trees themselves, so the host path that :func:`_unsupported` suggests cannot
    help; the fix is the brute PD."""
    got = type(est).__name__ + why
    fix = ("Use method='brute' of jaximp.partial_dependence, which evaluates the model on the "
           "rows of X")
    if isinstance(est, Predictor):
        got = "a wrapped Predictor, whose trees it cannot see"
        fix += (f", or pass the fitted tree estimator itself rather than a Predictor (this one "
                f"is {est.name!r})")
    elif type(est).__name__ in _FOREST_TYPES:  # refused only as a multi-output classifier
        fix = "Fit one classifier per output (method='brute' needs a single output array too)"
    return TypeError(
        "method='recursion' traverses the trees of a fitted scikit-learn tree model "
        f"({param}: a DecisionTree, RandomForest or ExtraTrees regressor or classifier, a "
        f"GradientBoosting regressor or classifier with a constant init, or a "
        f"HistGradientBoosting one without categorical splits or fit-time sample weights); "
        f"got {got}. {fix}."
    )


def _kind(est, hist: bool = False, recursion: str | None = None) -> str:
    """``"forest"``, ``"gb"`` or (when ``hist``) ``"hist"``; TypeError for anything else
    (:func:`_recursion_refusal`'s when ``recursion`` names the parameter holding ``est``)."""
    name = type(est).__name__
    module = type(est).__module__ or ""
    if not module.startswith("sklearn."):
        raise _unsupported(est, hist=hist, recursion=recursion)
    if name in _FOREST_TYPES:
        kind = "forest"
    elif name in _GB_TYPES:
        kind = "gb"
    elif hist and name in _HIST_TYPES:
        kind = "hist"
    else:
        raise _unsupported(est, hist=hist, recursion=recursion)
    fitted = hasattr(est, "tree_") or hasattr(est, "estimators_") or hasattr(est, "_predictors")
    if not fitted:
        raise TypeError(
            f"expected a fitted {name}; got an unfitted one. Fix: call fit(X, y) first."
        )
    if _is_classifier(est) and isinstance(est.classes_, list):
        raise _unsupported(est, " with several outputs (multi-output classifier)",
                           recursion=recursion)
    return kind


def _trees_of(est, kind: str) -> list:
    if hasattr(est, "tree_"):
        return [est.tree_]
    if kind == "gb":
        return [tree.tree_ for tree in np.asarray(est.estimators_).ravel()]
    return [tree.tree_ for tree in est.estimators_]


def _node_arrays(trees: list, normalize_rows: bool, host: bool = False) -> tuple[dict, int]:
    """Padded node arrays of the trees (see the module docstring) and the largest depth;
    NumPy arrays when ``host``, else JAX arrays. The trees' nodes are concatenated and
    scattered into the padded arrays at once (no loop over the trees' fields)."""
    T = len(trees)
    counts = np.array([tree.node_count for tree in trees], np.int64)
    N = int(counts.max())
    _, n_targets, n_classes = trees[0].value.shape
    k = n_classes if normalize_rows else n_targets * n_classes
    ftype = tree_float_dtype()
    # slot of every real node in the flattened (T * N) arrays, and its index within its tree
    starts = np.repeat(np.arange(T, dtype=np.int64) * N - np.cumsum(counts) + counts, counts)
    node = np.arange(int(counts.sum()), dtype=np.int64) + starts
    own = (node % N).astype(np.int32)

    def joined(name):
        return np.concatenate([getattr(tree, name)[:tree.node_count] for tree in trees])

    children_left, children_right = joined("children_left"), joined("children_right")
    split = children_left != -1
    idx = np.broadcast_to(np.arange(N, dtype=np.int32), (T, N))
    left, right = idx.copy().reshape(-1), idx.copy().reshape(-1)
    left[node] = np.where(split, children_left, own)
    right[node] = np.where(split, children_right, own)
    feature = np.zeros(T * N, np.int32)
    feature[node] = np.where(split, joined("feature"), 0)
    threshold = np.zeros(T * N, np.float32)
    threshold[node] = np.where(split, round_down_float32(joined("threshold")), 0)
    missing_left = np.zeros(T * N, bool)
    missing_left[node] = np.asarray(joined("missing_go_to_left"), bool) & split
    val = np.asarray(joined("value"), np.float64)
    if normalize_rows:  # classifier: counts or fractions -> probabilities
        val = val[:, 0, :]
        total = val.sum(axis=1, keepdims=True)
        val = val / np.where(total == 0, 1.0, total)
    else:
        val = val.reshape(len(val), -1)
    value = np.zeros((T * N, k), np.float64)
    value[node] = val
    impurity = np.zeros(T * N, np.float64)
    impurity[node] = joined("impurity")
    weight = np.zeros(T * N, np.float64)
    weight[node] = joined("weighted_n_node_samples")
    depth = max(tree.max_depth for tree in trees)
    convert = np.asarray if host else jnp.asarray
    params = {
        "feature": convert(feature.reshape(T, N)),
        "threshold": convert(threshold.reshape(T, N)),
        "children_left": convert(left.reshape(T, N)),
        "children_right": convert(right.reshape(T, N)),
        "missing_left": convert(missing_left.reshape(T, N)),
        "value": convert(value.reshape(T, N, k).astype(ftype)),
        "impurity": convert(impurity.reshape(T, N).astype(ftype)),
        "weighted_n_node_samples": convert(weight.reshape(T, N).astype(ftype)),
    }
    return params, int(depth)


#: host node arrays of recently read scikit-learn estimators (weakly keyed by the estimator):
#: an entry serves while the estimator holds the very same tree objects (a refit or
#: warm start makes new ones) and the float dtype is the same; its arrays are read-only
_HOST_ARRAYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _host_node_arrays(est, trees: list, normalize_rows: bool) -> tuple[dict, int]:
    """:func:`_node_arrays` as NumPy arrays, read once per estimator and float dtype."""
    ftype = tree_float_dtype()
    try:
        cached = _HOST_ARRAYS.get(est)
    except TypeError:  # an estimator that cannot be weakly referenced
        cached = None
    if (cached is not None and cached[1] == ftype and len(cached[0]) == len(trees)
            and all(a is b for a, b in zip(cached[0], trees))):
        return dict(cached[2]), cached[3]
    params, depth = _node_arrays(trees, normalize_rows, host=True)
    for array in params.values():
        array.flags.writeable = False
    try:
        _HOST_ARRAYS[est] = (tuple(trees), ftype, params, depth)
    except TypeError:
        pass
    return dict(params), depth


def _constant_init(est) -> bool:
    """Whether the fitted init of a gradient boosting model predicts one constant."""
    init = est.init_
    return isinstance(init, str) and init == "zero" or type(init).__name__ in (
        "DummyRegressor", "DummyClassifier")


def _gb_init(est) -> np.ndarray:
    """The constant raw init prediction ``F0`` of a gradient boosting model, shape (K,)."""
    init = est.init_
    if not _constant_init(est):
        raise _unsupported(
            est, f" with a non-constant init estimator ({type(init).__name__})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # feature-name warnings for the dummy row
        row = np.zeros((1, est.n_features_in_))
        if hasattr(est, "feature_names_in_"):
            import pandas as pd

            row = pd.DataFrame(row, columns=est.feature_names_in_)
        return np.asarray(est._raw_predict_init(row), np.float64)[0]


def _inverse_link(raw, link: str, two_columns: bool):
    """Raw scores (m, K) -> predictions: ``sigmoid`` or ``hinge`` (1 where the score is
    positive), ``softmax``, ``argmax`` (the class index, one column), ``exp`` or the raw
    scores themselves; one column ``p`` of a binary classifier as ``(1 - p, p)`` where
    ``two_columns``, as ``predict_proba``."""
    if link == "sigmoid":
        out = jax.nn.sigmoid(raw[:, :1])
    elif link == "hinge":
        out = (raw[:, :1] > 0).astype(raw.dtype)
    elif link == "softmax":
        out = jax.nn.softmax(raw, axis=1)
    elif link == "argmax":
        out = jnp.argmax(raw, axis=1)[:, None].astype(raw.dtype)
    else:
        out = jnp.exp(raw) if link == "exp" else raw
    return jnp.concatenate([1.0 - out, out], axis=1) if two_columns and out.shape[1] == 1 \
        else out


def _make_apply(kind: str, depth: int, n_classes_gb: int, link: str, size: tuple):
    """One ``apply`` per (kind, depth, link, trees x values): the engine sizes its chunks by
    the compiled memory of an ``apply``, which grows with the number of trees and values."""

    def make():
        def apply_trees(params, X):
            vals = leaf_values(params, X, depth)  # (m, T, k)
            if kind == "forest":
                out = jnp.mean(vals, axis=1)
            else:
                m = vals.shape[0]
                raw = vals[..., 0].reshape(m, -1, n_classes_gb).sum(axis=1)
                raw = params["init"] + params["learning_rate"] * raw
                out = _inverse_link(raw, link, two_columns=link == "sigmoid")  # a classifier
            # float64 under x64 (float64 node values), so the engine's float64 path stays exact
            return out.astype(params["value"].dtype)

        return jax.jit(apply_trees)

    return stable_apply(("sklearn-trees", kind, depth, n_classes_gb, link, size), make)


def read_boosted(model, all_trees: bool = False) -> BoostedModel:
    """The model of a boosting library in the shared form (TypeError if it cannot be read).

    ``all_trees``: XGBoost's trees beyond the wrappers' ``best_iteration`` too (as
    ``get_score`` counts them); by default the trees its ``predict`` uses."""
    library = boosting_library(model)
    if library == "xgboost":
        return read_xgboost(model, all_trees=all_trees)
    if library == "lightgbm":
        return read_lightgbm(model)
    if library == "catboost":
        return read_catboost(model)
    raise TypeError(
        f"expected an XGBoost, LightGBM or CatBoost model; got {type(model).__name__}.")


def _boost_apply(depth: int, link: str, two_columns: bool, size: tuple):
    """``apply`` of a boosting library's trees: ``raw = init + sum of the leaf values of the
    trees of each output`` (``tree_class``), then ``link`` (``"identity"`` for the margin)."""

    def make():
        def apply_boosted(params, X):
            vals = leaf_values(params, X, depth)[..., 0]  # (m, T)
            K = params["init"].shape[0]
            raw = params["init"] + jax.ops.segment_sum(
                vals.T, params["tree_class"], num_segments=K).T  # (m, K)
            scaled = params["link_scale"] * raw if link == "sigmoid" else raw
            return _inverse_link(scaled, link, two_columns).astype(params["value"].dtype)

        return jax.jit(apply_boosted)

    return stable_apply(("boosted-trees", depth, link, two_columns, size), make)


def _boosted_form(model, response_method: str, sample, n_features) -> Predictor | None:
    """:func:`array_form` of a boosting library's model: raises for a model the arrays cannot
    read or data lacking its features; None for a classifier's labels (``"predict"``) and a
    DataFrame whose category levels differ from the fitted ones (the host then encodes)."""
    boosted = read_boosted(model)
    classifier = boosted.classes is not None
    if (response_method == "predict" and classifier) or (
            response_method == "predict_proba" and not classifier):
        return None
    check_columns(boosted, n_features, sample)
    dtypes = getattr(sample, "dtypes", None)
    if dtypes is not None:
        for j, (column, dt) in enumerate(zip(sample.columns, dtypes)):
            if str(dt) == "category":
                levels = boosted.categories.get(j)
                if j not in boosted.categories or (levels is not None and level_keys(
                        sample[column].cat.categories) != levels):
                    return None
            elif getattr(dt, "kind", "O") not in "biuf":
                return None
    return boosted_predictor(model, response_method, boosted=boosted)


#: float32 steps across a model's output range below which its effects are reported as lost
_COARSE_OUTPUT_STEPS = 1024.0


def _check_output_resolution(ranges: np.ndarray, averaged: bool, init, rate: float,
                             name: str) -> None:
    """A PrecisionWarning where float32 node arrays cannot resolve a scikit-learn regression
    model's own outputs: a target far from 0 with small effects (``y = 1e7 + 0.5 x``: float32
    keeps steps of 1 near 1e7, so the partial dependence is flat and the importances 0). The
    boosting libraries read their targets in float32 themselves, so their arrays lose
    nothing more.

    ``ranges`` (T, 2): the smallest and largest node value of each tree, in float64. The
    outputs lie within the mean of these (``averaged``, forests), or ``init`` plus ``rate``
    times their sum (boosting)."""
    if x64_enabled() or not len(ranges):  # float64 arrays resolve them
        return
    low, high = ranges.mean(axis=0) if averaged else init + rate * ranges.sum(axis=0)
    scale = max(abs(low), abs(high))
    step = float(np.ldexp(np.finfo(np.float32).eps, np.frexp(scale)[1] - 1))
    if 0 < high - low < _COARSE_OUTPUT_STEPS * step:
        warnings.warn(
            f"{name}'s outputs vary by at most {high - low:.3g} around {scale:.7g}, where "
            f"float32 (the node arrays' precision) has steps of {step:.3g}: smaller effects "
            "are rounded away. Enable float64 before reading the model "
            "(jax.config.update('jax_enable_x64', True)), or predict on the host "
            "(as_predictor(model, trees='host')).", PrecisionWarning, stacklevel=user_stacklevel())


def _value_ranges(values) -> np.ndarray:
    """(T, 2) float64: the smallest and largest of each tree's node values."""
    return np.array([[np.min(v), np.max(v)] for v in values], np.float64).reshape(-1, 2)


def boosted_predictor(model, response_method: str = "auto", *, boosted=None) -> Predictor:
    """An XGBoost, LightGBM or CatBoost model as a JAX :class:`~jaximp.Predictor`: the
    library's prediction (``response_method="auto"``, ``"predict"`` or ``"predict_proba"``)
    or its raw margin (``"raw"`` or ``"decision_function"``); see :func:`tree_predictor`."""
    boosted = read_boosted(model) if boosted is None else boosted
    params, depth = pack_boosted(boosted)
    K = boosted.n_raw
    margin = response_method in ("raw", "decision_function")
    if margin and boosted.margin_scale != 1.0:  # LightGBM's random forest: the sum
        params = dict(params, value=params["value"] * boosted.margin_scale)
    link = "identity" if margin else boosted.link
    two_columns = boosted.two_columns and not margin
    n_out = 2 if two_columns else 1 if link == "argmax" else K
    if boosted.classes is not None and len(boosted.classes) == n_out:
        output_names = tuple(str(c) for c in boosted.classes)
    elif boosted.classes is not None and n_out == 1:  # binary margin: the positive class
        output_names = (str(boosted.classes[-1]),)
    else:
        output_names = ("y",) if n_out == 1 else tuple(f"y{j}" for j in range(n_out))
    T = params["value"].shape[0]
    return Predictor(
        apply=_boost_apply(depth, link, two_columns, (T, K)),
        params=params,
        n_outputs=n_out,
        output_names=output_names,
        name=f"{type(model).__name__} (JAX trees{', margin' if margin else ''})",
        dtype=compute_dtype(params),
        classes=boosted.classes if boosted.classes is not None and n_out == len(
            boosted.classes) else None,
        handles_missing=True,
        piecewise_constant=True,
        recode=functools.partial(_frame_codes, boosted),
        check_rows=None if boosted.float32_rows or x64_enabled() else Float32Splits.of(
            type(model).__name__, *boosted.numeric_splits(), round_down_float32),
        n_features=boosted.n_features,
    )


def _frame_codes(boosted: BoostedModel, frame, X: np.ndarray) -> np.ndarray:
    """A boosted model's ``recode``: a DataFrame's columns checked against the fitted ones
    (by name where the model stores them; XGBoost refuses another order and CatBoost reads by
    name, so positions would be wrong either way), its category codes by level."""
    check_columns(boosted, None, frame)
    return training_codes(boosted, frame, X) if boosted.categories else X


def _hist_input_columns(est) -> np.ndarray:
    """The column of X that each feature index of a HistGradientBoosting model's nodes reads:
    with categorical features, scikit-learn's preprocessing puts them first, so the nodes
    index its output, not X (also where no categorical split was made)."""
    preprocessor = getattr(est, "_preprocessor", None)
    if preprocessor is None:
        return np.arange(est.n_features_in_)
    column_of = np.empty(est.n_features_in_, np.int64)
    for name, _, columns in preprocessor.transformers_:
        if name in preprocessor.output_indices_:
            columns = np.asarray(columns)
            column_of[preprocessor.output_indices_[name]] = (
                np.flatnonzero(columns) if columns.dtype == bool else columns)
    return column_of


def _hist_arrays(est, host: bool = False) -> tuple[dict, int, str]:
    """Padded node arrays of a fitted HistGradientBoosting model, its depth and its link
    (NumPy arrays with float64 thresholds when ``host``).

    Thresholds are the raw ``num_threshold``, which scikit-learn compares with float64 rows:
    float64 under x64 (exact); otherwise rounded to the nearest float32, as the rows are, so a
    row equal to a threshold (percentile thresholds are often data values) still goes left."""
    link = _HIST_LINKS.get(type(est._loss.link).__name__)
    if link is None:
        raise _unsupported(est, f" with loss {est.loss!r}", hist=True)
    nodes = [predictor.nodes for stage in est._predictors for predictor in stage]
    column_of = _hist_input_columns(est)
    T, N = len(nodes), max(len(n) for n in nodes)
    ftype = tree_float_dtype()
    idx = np.broadcast_to(np.arange(N, dtype=np.int32), (T, N))
    feature = np.zeros((T, N), np.int32)
    threshold = np.zeros((T, N), np.float64 if host else ftype)
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
        feature[t, :n] = np.where(split, column_of[nd["feature_idx"]], 0)
        threshold[t, :n] = np.where(split, nd["num_threshold"], 0)
        left[t, :n] = np.where(split, nd["left"], np.arange(n))
        right[t, :n] = np.where(split, nd["right"], np.arange(n))
        missing_left[t, :n] = (nd["missing_go_to_left"] != 0) & split
        value[t, :n, 0] = nd["value"]
        count[t, :n] = nd["count"]
    depth = int(max(int(nd["depth"].max()) for nd in nodes))
    params = node_params(host, ftype, feature, threshold, left, right, missing_left, value,
                         count, init=np.asarray(est._baseline_prediction, np.float64)
                         .reshape(-1).astype(ftype), learning_rate=np.asarray(1.0, ftype))
    return params, depth, link


def read_trees(est, recursion: str | None = None, host: bool = False):
    """The kind, whether a classifier, the stacked node arrays and the depth of ``est``
    (NumPy arrays when ``host``, e.g. for statistics computed on the host; else JAX arrays).

    XGBoost, LightGBM and CatBoost models are of kind ``"gb"`` and their arrays carry
    ``init`` (K,), ``tree_class`` (T,) and ``link_scale`` (see the module docstring): their
    raw score is ``init + the sum of the leaf values of each output's trees``, without
    ``learning_rate`` (their leaf values are already shrunk).

    ``recursion`` names the parameter holding ``est`` for the recursion PD: its refusals then
    say to use ``method='brute'``, and gradient boosting also needs a constant init (the
    recursion leaves the init prediction out, which is right only for a constant)."""
    if boosting_library(est) is not None:  # the same raw score: init + sum of the trees
        boosted = read_boosted(est)
        params, depth = pack_boosted(boosted, host=host)
        return "gb", boosted.classes is not None, params, depth
    kind = _kind(est, hist=recursion is not None, recursion=recursion)
    if recursion is not None and kind == "gb" and not _constant_init(est):
        raise _recursion_refusal(
            est, f" with a non-constant init ({type(est.init_).__name__})", recursion)
    if kind == "hist":  # the recursion of HistGradientBoosting: its stages' trees
        if getattr(est, "_fitted_with_sw", False):
            raise _recursion_refusal(est, " fitted with sample weights (its node counts are "
                                     "unweighted, as scikit-learn refuses too)", recursion)
        try:
            params, depth, _ = _hist_arrays(est, host=host)
        except TypeError:  # categorical splits
            raise _recursion_refusal(est, " with categorical splits", recursion) from None
        return kind, _is_classifier(est), params, depth
    classifier = _is_classifier(est)
    trees, normalize = _trees_of(est, kind), classifier and kind == "forest"
    if host:
        params, depth = _host_node_arrays(est, trees, normalize)
    else:
        params, depth = _node_arrays(trees, normalize)
    return kind, classifier, params, depth


@validate_params()
def tree_predictor(estimator) -> Predictor:
    """A fitted scikit-learn tree model as a JAX :class:`~jaximp.Predictor`.

    Parameters
    ----------
    estimator : fitted scikit-learn tree model, or XGBoost, LightGBM or CatBoost model
        ``DecisionTreeRegressor/Classifier``, ``RandomForestRegressor/Classifier``,
        ``ExtraTreesRegressor/Classifier``, ``GradientBoostingRegressor/Classifier`` or
        ``HistGradientBoostingRegressor/Classifier`` without categorical splits (see the
        module docstring for the node arrays, the prediction and its float32 caveat for
        HistGradientBoosting); or a boosting library's model (the library's ``predict`` /
        ``predict_proba``; :func:`boosted_predictor` gives its raw margin).

    Returns
    -------
    Predictor
        ``apply(params, X) -> (m, o)`` equal to ``estimator.predict`` (regressors, ``o`` =
        number of targets) or ``estimator.predict_proba`` (classifiers, ``o`` = number of
        classes, ``output_names`` the class labels as str). float32 by default, about 1e-6
        relative from scikit-learn; float64 and equal to scikit-learn to 1e-7 relative when
        built and called under ``jax_enable_x64`` (see the module docstring's Precision).
        ``params`` holds the node arrays (``value`` etc. float64 under x64, else float32);
        gradient boosting adds ``init`` (K,) and ``learning_rate`` ().

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
    if boosting_library(estimator) is not None:
        return boosted_predictor(estimator)
    kind = _kind(estimator, hist=True)
    # scikit-learn's trees, forests and HistGradientBoosting route missing values (NaN) by
    # each split's missing_go_to_left, which the arrays keep; GradientBoosting refuses them
    handles_missing = kind != "gb"
    classifier = _is_classifier(estimator)
    if kind == "hist":
        params, depth, link = _hist_arrays(estimator)
        K = int(estimator.n_trees_per_iteration_)
        n_out = (2 if K == 1 else K) if classifier else 1
        kind = "gb"  # the same raw score: init + sum of the stage trees (values are shrunk)
    elif kind == "gb":
        _, _, params, depth = read_trees(estimator)
        K = int(estimator.estimators_.shape[1])
        params = dict(params)
        ftype = tree_float_dtype()
        params["init"] = jnp.asarray(_gb_init(estimator).astype(ftype))
        params["learning_rate"] = jnp.asarray(np.asarray(estimator.learning_rate, ftype))
        link = ("sigmoid" if K == 1 else "softmax") if classifier else "identity"
        n_out = (2 if K == 1 else K) if classifier else 1
    else:
        _, _, params, depth = read_trees(estimator)
        K, link = 0, "mean"
        n_out = int(params["value"].shape[2])
    if not classifier and kind == "gb" and hasattr(estimator, "_predictors"):  # hist
        _check_output_resolution(
            _value_ranges(p.nodes["value"] for stage in estimator._predictors for p in stage),
            False, float(estimator._baseline_prediction.ravel()[0]), 1.0,
            type(estimator).__name__)
    elif not classifier and n_out == 1:  # trees' values (node, output, 1)
        ranges = _value_ranges(t.value for t in _trees_of(estimator, kind))
        if link == "mean":
            _check_output_resolution(ranges, True, 0.0, 1.0, type(estimator).__name__)
        else:
            _check_output_resolution(ranges, False, float(_gb_init(estimator)[0]),
                                     float(estimator.learning_rate), type(estimator).__name__)
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
        classes=tuple(np.asarray(estimator.classes_).tolist()) if classifier else None,
        handles_missing=handles_missing,
        piecewise_constant=True,
        check_rows=_hist_splits(estimator) if hasattr(estimator, "_predictors") else None,
        n_features=getattr(estimator, "n_features_in_", None),
        recode=functools.partial(_fitted_names, getattr(estimator, "feature_names_in_", None),
                                 type(estimator).__name__),
    )


def _fitted_names(fitted, name: str, frame, X: np.ndarray) -> np.ndarray:
    """A scikit-learn tree's ``recode``: a DataFrame must have the fitted columns in order
    (the arrays read columns by position, where scikit-learn refuses other names)."""
    if fitted is not None and [str(c) for c in frame.columns] != [str(c) for c in fitted]:
        raise ValueError(f"the {name} model was fitted on the columns {list(fitted)[:8]}; the "
                         f"data's are {[str(c) for c in frame.columns][:8]}. Fix: pass "
                         "X[model.feature_names_in_].")
    return X


def _hist_splits(est) -> Float32Splits | None:
    """The numeric splits of a HistGradientBoosting model, compared in float32 by its
    arrays (thresholds rounded to the nearest float32) unless x64 is on (None)."""
    if x64_enabled():
        return None
    nodes = [p.nodes for stage in est._predictors for p in stage]
    split = [nd["is_leaf"] == 0 for nd in nodes]
    return Float32Splits.of(
        type(est).__name__, np.concatenate([nd["feature_idx"][s] for nd, s in zip(nodes, split)]),
        np.concatenate([nd["num_threshold"][s] for nd, s in zip(nodes, split)]),
        lambda t: t.astype(np.float32))


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
    if boosting_library(model) is not None:
        return _boosted_form(model, response_method, sample, n_features)
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
