"""TreeSHAP: exact Shapley values of tree ensembles from their node arrays.

Each root-to-leaf path of each tree is a product game (:mod:`._tree_shap_paths` extracts the
paths once on the host). For a path with leaf value ``v`` and merged elements ``j`` (one per
feature on the path), a coalition S of features is worth

    v(S) = v * prod_{j in S} o_j * prod_{j not in S} z_j

where ``o_j`` is 1 when the explained row satisfies element j's condition (else 0) and
``z_j`` is what an absent feature contributes: the zero fraction (the cover share going the
path's way) for path-dependent TreeSHAP (Lundberg et al. 2020, Algorithm 2 of shap's
``TreeExplainer(feature_perturbation="tree_path_dependent")``), or ``b_j``, the indicator for a
background row, for interventional TreeSHAP (averaged over the background rows). The model's
game is the sum of the path games, so the Shapley values are sums over paths, and the Shapley
value of element i in one path is

    phi_i = v (o_i - z_i) * integral_0^1 prod_{j != i} (z_j (1 - u) + o_j u) du

since ``integral u^s (1 - u)^(d-1-s) du = s! (d-1-s)! / d!`` is the Shapley weight of a
coalition of size s (the polynomial form of Linear TreeSHAP, Yu et al. 2022). The integrand is
a polynomial of degree below the path length, so a Gauss-Legendre rule with ``ceil(D / 2)``
nodes integrates it exactly. The pairwise interaction index is the same integral without
elements i and j, multiplied by ``(o_i - z_i)(o_j - z_j)``; shap's convention halves it off
the diagonal and puts the main effect on it.

The kernel is one array program over (paths x elements x rows), products over the other
elements by prefix and suffix products (no division), jitted and chunked over rows, paths and
background rows within the memory budget; the sums over paths are segment sums of whole rows
into (features x outputs). Path-dependent values depend on a row only through the pattern of
conditions it meets, so with enough rows a table of every pattern's values per path replaces
the polynomial by a lookup. Interventional values (0/1 fractions) have a closed form: with u
elements only the explained row meets and v only the background row meets (and none that
neither meets), they are ``(u-1)! v! / (u+v)!`` and ``-u! (v-1)! / (u+v)!``. It all runs
unchanged on CPU, GPU and TPU.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..data import Flag, as_dataset, as_rows, select_outputs, validate_params
from ..engine import ProgressMeter, resolve_budget
from ..models import (
    boosting_library,
    check_columns,
    read_boosted,
    stored_names,
    training_codes,
    tree_predictor,
)
from ..results import ShapleyDetails
from ._shapley import ShapleyInteractions, ShapleyValues
from ._tree_shap_paths import (
    TreePaths,
    background_outputs,
    ensemble_paths,
    interventional_chunk,
    pair_weights,
    path_dependent_chunk,
    pattern_table,
    quadrature,
    table_chunk,
)

__all__ = ["check_fitted_columns", "tree_shap"]

_MODELS = ("a fitted scikit-learn DecisionTree, RandomForest or ExtraTrees regressor or "
           "classifier, GradientBoosting regressor or classifier (constant init), "
           "HistGradientBoosting regressor or classifier without categorical splits, or an "
           "XGBoost, LightGBM or CatBoost model")


# ---------------------------------------------------------------------------------------------
# Model and data
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Ensemble:
    paths: TreePaths
    output_names: tuple[str, ...]
    boosting: bool  # one output per path (V == 1), else every path adds to every output
    n_features: int
    dtype: np.dtype
    name: str
    check_rows: Callable | None  # warns where float32 splits send rows elsewhere


def _reason(err: TypeError) -> str:
    """What the tree reader found wrong with the model (``" with a non-constant init..."``,
    ``" (an unfitted one)"``), without the reader's fix, which is not this function's."""
    reason = str(err).split(" Fix:")[0].rstrip(". ")
    detail = reason.split("; got ", 1)[1] if "; got " in reason else reason
    detail = detail.split(" ", 1)[1] if detail.startswith(type(err).__name__) else detail
    words = detail.split(" ", 1)
    return f" {words[1]}" if len(words) == 2 and words[1].startswith("with ") else (
        "" if len(words) == 1 else f" ({detail})")


def _refusal(model, why: str) -> TypeError:
    # a boosting library's model the arrays cannot read is evaluated by the library itself
    explained = ("jaximp.as_predictor(model, trees='host', sample=X[:5])"
                 if boosting_library(model) is not None else "model")
    return TypeError(
        f"tree_shap reads the trees of {_MODELS}; got {type(model).__name__}{why}. Fix: use "
        f"jaximp.shapley_values({explained}, X, background), which explains any model by "
        "evaluating it.")


def _boosted_arrays(model) -> tuple[dict, tuple[str, ...], float, int, Callable | None]:
    """Node arrays, output names, leaf scale, width and row check of an XGBoost, LightGBM or
    CatBoost model (its raw margin: ``init + scale * the sum of each output's trees``)."""
    try:
        predictor = tree_predictor(model)  # parses the model once
        # LightGBM's random forest averages its trees: the margin scales the sum
        scale = (float(read_boosted(model).margin_scale)
                 if boosting_library(model) == "lightgbm" else 1.0)
    except TypeError as err:
        raise _refusal(model, _reason(err)) from None
    params = predictor.params
    if "zero_missing" in params:
        raise _refusal(model, " with zero-as-missing splits (LightGBM missing_type Zero), "
                       "which tree_shap does not implement")
    K, classes = int(params["init"].shape[0]), getattr(predictor, "classes", None)
    if classes is not None and len(classes) == K:
        names = tuple(str(c) for c in classes)
    elif classes is not None and K == 1:  # binary margin: the positive class's log-odds
        names = (str(classes[-1]),)
    else:
        names = ("y",) if K == 1 else tuple(f"y{j}" for j in range(K))
    n_features = getattr(model, "n_features_in_", 0)  # a CatBoost model loaded from a
    if not n_features:  # file says 0; a Booster has its own count, cheaper than a parse
        n_features = (model.num_feature() if hasattr(model, "num_feature") else
                      model.num_features() if hasattr(model, "num_features") else
                      read_boosted(model).n_features)
    return params, names, scale, int(n_features), predictor.check_rows


def _read(model) -> _Ensemble:
    """The paths of a supported tree model, or a TypeError naming the alternative."""
    if boosting_library(model) is not None:
        params, names, scale, n_features, check_rows = _boosted_arrays(model)
        arrays = {name: np.asarray(a) for name, a in params.items()}
        tree_output = arrays["tree_class"]
    else:
        try:
            predictor = tree_predictor(model)
        except TypeError as err:
            raise _refusal(model, _reason(err)) from None
        arrays = {name: np.asarray(a) for name, a in predictor.params.items()}
        n_features, check_rows = int(model.n_features_in_), predictor.check_rows
        tree_output, scale, names = None, 1.0 / arrays["feature"].shape[0], None
        if "init" in arrays:  # F = init + learning_rate * sum of the stage trees
            K = int(arrays["init"].shape[0])
            tree_output = np.arange(arrays["feature"].shape[0]) % K
            scale = float(arrays["learning_rate"])
            classes = getattr(model, "classes_", None)
            if K > 1:
                names = tuple(str(c) for c in classes)
            else:  # a binary classifier's log-odds of classes_[1], or a regressor's score
                names = ("y",) if classes is None else (str(classes[1]),)
        else:
            names = tuple(predictor.output_names)
    paths = ensemble_paths(arrays, n_features, tree_output=tree_output, n_outputs=len(names),
                           scale=scale, init=arrays.get("init"))
    boosting = tree_output is not None and len(names) > 1
    if tree_output is not None and not boosting:
        paths = dataclasses.replace(paths, output=np.zeros_like(paths.output))
    return _Ensemble(paths, names, boosting, n_features, np.dtype(arrays["value"].dtype),
                     type(model).__name__, check_rows)


def check_fitted_columns(model, X, n_columns: int, n_features: int | None, what: str):
    """ValueError unless ``X`` (of ``n_columns`` columns) has the tree model's fitted
    columns: as many, and a DataFrame's names in the fitted order, since the trees read their
    columns by position. Returns the fitted names (None where the model has none)."""
    if n_features is not None and n_columns != n_features:
        raise ValueError(
            f"{what} must have the {n_features} features the model was fitted on; got "
            f"{n_columns} columns. Fix: pass the columns the model was trained with, "
            "in the same order.")
    fitted = getattr(model, "feature_names_in_", None)
    fitted = None if fitted is None else tuple(str(c) for c in fitted)
    if isinstance(X, pd.DataFrame):
        if fitted is not None and tuple(stored_names(X.columns, boosting_library(model))) \
                != fitted:
            raise ValueError(
                f"{what} must have the model's columns {list(fitted)[:8]} in order; got "
                f"{[str(c) for c in X.columns][:8]}. Fix: X = X[model.feature_names_in_].")
        if boosting_library(model) is not None:  # names a Booster or CatBoost model stores
            check_columns(read_boosted(model), n_features, X)
    return fitted


def _rows(model, X, feature_names, n_features: int, what: str):
    """The rows of ``X`` as a float64 array (n, c) and the feature names; ``what``: their
    name in messages."""
    try:
        dataset = as_dataset(X, feature_names=feature_names, allow_missing=True)
    except ValueError as error:  # "X is empty..." of the background
        if what == "X" or not str(error).startswith("X "):
            raise
        raise ValueError(f"{what} {str(error)[2:]}") from None
    fitted = check_fitted_columns(model, X, dataset.n_columns, n_features, what)
    names = tuple(dataset.column_names)
    if fitted is not None and feature_names is None and not isinstance(X, pd.DataFrame):
        names = fitted
    rows = dataset.X
    if isinstance(X, pd.DataFrame) and boosting_library(model) is not None:
        rows = training_codes(read_boosted(model), X, rows)  # categories by level
    return rows, names


def _select(ensemble: _Ensemble, output) -> tuple[TreePaths, tuple[str, ...], int]:
    """The paths and names of the selected outputs, and the number of output slots of a
    boosting ensemble's segments (1 for dense values)."""
    chosen = select_outputs(ensemble.output_names, output)
    names = tuple(ensemble.output_names[j] for j in chosen)
    paths = ensemble.paths
    if ensemble.boosting:
        position = np.full(len(ensemble.output_names), -1)
        position[chosen] = np.arange(len(chosen))
        keep = position[paths.output] >= 0
        paths = paths.select(keep)
        paths = dataclasses.replace(paths, output=position[paths.output].astype(np.int32),
                                    base=paths.base[chosen], init=paths.init[chosen])
        return paths, names, len(chosen)
    return (dataclasses.replace(paths, value=paths.value[:, chosen], base=paths.base[chosen],
                                init=paths.init[chosen]), names, 1)


# ---------------------------------------------------------------------------------------------
# Chunked evaluation
# ---------------------------------------------------------------------------------------------


def _device_paths(paths: TreePaths, slots: int, n_features: int, interactions: bool,
                  dtype) -> dict:
    """The paths as device arrays, with each element's (or pair's) output segment."""
    seg = paths.feature.astype(np.int64)
    if interactions:
        seg = seg[:, :, None] * n_features + seg[:, None, :]  # (P, D, D)
    seg = seg * slots + paths.output.reshape((-1,) + (1,) * (seg.ndim - 1))
    arrays = {
        "feature": jnp.asarray(paths.feature),
        "lower": jnp.asarray(paths.lower),
        "upper": jnp.asarray(paths.upper),
        "nan_ok": jnp.asarray(paths.nan_ok),
        "zero": jnp.asarray(paths.zero.astype(dtype)),
        "value": jnp.asarray(paths.value.astype(dtype)),
        "segment": jnp.asarray(seg.reshape(paths.n_paths, -1).astype(np.int32)),
    }
    if paths.categories is not None:
        arrays["categories"] = jnp.asarray(paths.categories)
        arrays["negative_outside"] = jnp.full(paths.n_paths, paths.negative_outside)
    return arrays


def _chunks(n_rows: int, n_paths: int, n_background: int, pair_bytes: int, budget: int):
    """Rows, paths and background rows per chunk so that one chunk's temporaries, about
    ``rows x paths x background x pair_bytes``, stay within the budget."""
    cap = max(1, budget // max(1, pair_bytes))
    m = min(n_background, max(1, cap // (8 * min(n_paths, 1024))))
    cap = max(1, cap // m)
    paths = n_paths if cap >= 8 * n_paths else max(1, min(n_paths, cap // 8))
    rows = min(n_rows, max(1, cap // paths))
    return rows, paths, m


def _use_table(n_rows: int, n_paths: int, depth: int, elements: int, itemsize: int,
               budget: int) -> bool:
    """Whether path-dependent values go through the pattern table: when its ``2^D``
    patterns per path cost less than the rows themselves (building it costs what the
    polynomial costs for ``2^D`` rows, a lookup about a fifth of the polynomial) and it
    takes at most half the budget."""
    patterns = 2 ** depth
    return depth <= 16 and patterns <= n_rows and \
        n_paths * elements * patterns * itemsize * 2 <= budget


def _table(zero, nodes, weights, interactions: bool, budget: int) -> jax.Array:
    """The pattern table of paths (P, D), built a slice of paths at a time so that the
    polynomial's temporaries (about ``6 Q`` times the table's slice) stay within the
    budget."""
    P, D = zero.shape
    E = D * D if interactions else D
    per_path = 2 ** D * E * 6 * nodes.shape[0] * zero.dtype.itemsize
    step = max(1, min(P, budget // (2 * per_path)))
    return jnp.concatenate([pattern_table(zero[start:start + step], nodes, weights,
                                          interactions) for start in range(0, P, step)])


def _run(ensemble, paths, slots, x, background, bg_weights, interactions, budget, progress):
    """Values (n, S, V) in float64, summed over path chunks."""
    dtype = ensemble.dtype
    p = ensemble.n_features
    n, D, V = x.shape[0], paths.depth, paths.value.shape[1]
    Q = max(1, (D + 1) // 2)
    itemsize = np.dtype(dtype).itemsize
    E = D * D if interactions else D
    table = background is None and _use_table(n, paths.n_paths, D, E, itemsize, budget)
    if table:  # the lookup's code, gathered values and contributions
        pair_bytes = itemsize * (E * (2 + 2 * V) + 3 * D)
        budget = budget - paths.n_paths * E * 2 ** D * itemsize
    else:  # the factors, prefix and suffix products and contributions
        pair_bytes = itemsize * (E * (4 * Q + 3 * V) + 3 * D * Q + 4 * D)
    m = 1 if background is None else background.shape[0]
    rows, per_chunk, m_chunk = _chunks(n, paths.n_paths, m, pair_bytes, budget)
    n_path_chunks = -(-paths.n_paths // per_chunk)
    paths = paths.padded(n_path_chunks * per_chunk)
    device = _device_paths(paths, slots, p, interactions, dtype)
    nodes, weights = (jnp.asarray(a) for a in quadrature(D, dtype))
    pair_w = jnp.asarray(pair_weights(D, dtype))
    n_segments = (p * p if interactions else p) * slots
    thr_dtype = paths.lower.dtype
    chunks = [jax.tree.map(lambda a, c=c: a[c * per_chunk:(c + 1) * per_chunk], device)
              for c in range(n_path_chunks)]
    tables = [_table(chunk["zero"], nodes, weights, interactions, budget) if table else None
              for chunk in chunks]
    n_row_chunks, n_bg_chunks = -(-n // rows), -(-m // m_chunk)
    meter = ProgressMeter(n_row_chunks * n_path_chunks * n_bg_chunks, progress, "TreeSHAP")
    if background is not None:
        pad = n_bg_chunks * m_chunk - m
        background = np.concatenate([background, np.zeros((pad, background.shape[1]))])
        bg_weights = np.concatenate([bg_weights, np.zeros(pad)])
        background_t = background.T.astype(thr_dtype)
    out = np.zeros((n, n_segments, V))
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        block = np.zeros((x.shape[1], rows), thr_dtype)  # rows as columns
        block[:, :stop - start] = x[start:stop].T
        block = jnp.asarray(block)
        total = None
        for chunk, lookup in zip(chunks, tables):
            for b in range(n_bg_chunks):
                if background is None and table:
                    part = table_chunk(block, chunk, lookup, n_segments)
                elif background is None:
                    part = path_dependent_chunk(block, chunk, nodes, weights, n_segments,
                                                 interactions)
                else:
                    sl = slice(b * m_chunk, (b + 1) * m_chunk)
                    part = interventional_chunk(
                        block, jnp.asarray(background_t[:, sl]),
                        jnp.asarray(bg_weights[sl].astype(dtype)), chunk, nodes, weights,
                        pair_w, n_segments, interactions)
                total = part if total is None else total + part
                meter.update()
        out[start:stop] = np.moveaxis(np.asarray(total, np.float64), 1, 0)[:stop - start]
    return out


def _interventional_base(paths: TreePaths, slots: int, background, bg_weights, dtype):
    """Weighted mean over the background rows of the (selected) raw outputs, (o,)."""
    V = paths.value.shape[1]
    step = max(1, (1 << 22) // max(1, background.shape[0] * paths.depth))
    sums = []
    for start in range(0, paths.n_paths, step):
        part = paths.select(np.arange(start, min(paths.n_paths, start + step)))
        device = _device_paths(part, slots, 1, False, dtype)
        sums.append(np.asarray(background_outputs(
            jnp.asarray(background.T.astype(paths.lower.dtype)),
            jnp.asarray(bg_weights.astype(dtype)), device), np.float64))
    per_path = np.concatenate(sums)  # (P, V)
    if V == 1 and slots > 1:
        return paths.init + np.bincount(paths.output, weights=per_path[:, 0], minlength=slots)
    return paths.init + per_path.sum(axis=0)


# ---------------------------------------------------------------------------------------------
# Public function
# ---------------------------------------------------------------------------------------------


@validate_params(interactions=Flag())
def tree_shap(
    model,
    X,
    *,
    background=None,
    interactions: bool = False,
    background_weight=None,
    output=None,
    feature_names=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> ShapleyValues | ShapleyInteractions:
    """Exact Shapley values (TreeSHAP) of a tree ensemble, computed from its node arrays.

    Without ``background``: path-dependent TreeSHAP (Lundberg et al. 2020), as shap's
    ``TreeExplainer(model, feature_perturbation="tree_path_dependent")``, XGBoost's
    ``predict(..., pred_contribs=True)``, LightGBM's ``predict(..., pred_contrib=True)`` and
    CatBoost's ``ShapValues`` (their bias column is ``base_values``): an absent feature follows both branches of a split,
    weighted by the training cover (``weighted_n_node_samples``) that went each way, and the
    base value is each tree's cover-weighted mean leaf value. With ``background``:
    interventional TreeSHAP, the exact Shapley values of the game
    ``v(S) = mean over background rows z of f(x_S, z_rest)``, equal to
    :func:`jaximp.shapley_values` ``(model, X, background, method="exact",
    background_size=None)`` and to shap's ``TreeExplainer(model, background,
    feature_perturbation="interventional")``, at the cost of the trees' paths rather than
    ``2^p`` model evaluations.

    Scale: the raw output the trees add up, one attribution per output as shap gives it.
    Trees and forests: the mean of the trees' leaf values (the prediction of a regressor, the
    class probabilities of a classifier, one output per class); gradient boosting: the raw
    score (margin) ``init + learning_rate * sum of the trees``, for a binary classifier one
    output, the log-odds of ``classes_[1]``, for a multiclass classifier one per class
    (before the softmax); HistGradientBoosting: its raw score (before the inverse link);
    XGBoost, LightGBM and CatBoost: the raw margin (``output_margin=True`` /
    ``raw_score=True``), one output per class of a multiclass model. Missing values (NaN)
    follow each split's default direction.

    Parameters
    ----------
    model : fitted tree model
        scikit-learn ``DecisionTree``, ``ExtraTree``, ``RandomForest`` or ``ExtraTrees``
        regressor or classifier, ``GradientBoostingRegressor/Classifier`` with a constant
        init, ``HistGradientBoostingRegressor/Classifier`` without categorical splits
        (path-dependent values use its node sample counts as covers; its float64 thresholds
        are compared in float32 unless ``jax_enable_x64`` is on, with a ``PrecisionWarning``
        where rows go another way), or an XGBoost, LightGBM or
        CatBoost model as :func:`jaximp.tree_predictor` reads it (covers: XGBoost's hessian
        sums, LightGBM's counts, CatBoost's leaf weights; XGBoost's and LightGBM's categorical
        splits included), without LightGBM's zero-as-missing splits. Anything else is refused: use
        :func:`jaximp.shapley_values`, which explains any model.
    X : array of shape (n, p) or DataFrame
        The rows to explain, with the model's columns (NaN allowed); one row may come as a
        pandas Series or a 1-D array of p values (then n = 1).
    background : array of shape (m, p) or DataFrame, optional
        Background rows of the interventional game (all of them are used). Default: None,
        path-dependent TreeSHAP.
    interactions : bool, default False
        Return SHAP interaction values (shap's ``shap_interaction_values``): half the pairwise
        Shapley interaction index off the diagonal, the main effects on it, so each row of a
        row's matrix sums to its Shapley value.
    background_weight : array of shape (m,), optional
        Case weights of the background rows.
    output : int, str or list, optional
        The outputs to explain (index or name); default all.
    feature_names : sequence of str, optional
        Names for an array ``X`` (default: the model's ``feature_names_in_``, else
        ``x0, x1, ...``).
    memory_budget, progress
        As in :func:`jaximp.permutation_importance`.

    Returns
    -------
    ShapleyValues or ShapleyInteractions
        ``values`` (n, p, o) (or (n, p, p, o) with ``interactions=True``), ``base_values``
        (o,), ``data`` (n, p); ``method`` is ``"tree_path_dependent"`` or
        ``"tree_interventional"``; ``to_frame()``, ``plot()`` and ``to_shap()``, and
        ``importance()`` (values) or ``shapley_values()`` and ``interaction()``
        (interactions). For every row ``values.sum(axis=1) + base_values`` is the model's raw
        output (efficiency); ``base_values`` is the cover-weighted expected output
        (path-dependent) or the weighted mean output over the background (interventional).
        float32 by default (about 1e-6 relative from shap's float64), float64 under
        ``jax_enable_x64`` (build nothing in advance: the trees are read on every call).

    Notes
    -----
    Each root-to-leaf path is a product game whose Shapley values are a one-dimensional
    polynomial integral (Linear TreeSHAP, Yu et al. 2022), integrated exactly by
    Gauss-Legendre quadrature; paths are extracted once on the host with repeated features
    merged (GPUTreeShap, Mitchell et al. 2022) and evaluated as one jitted array program over
    chunks of rows x paths within the memory budget. A path-dependent value depends on a row
    only through which of the path's ``D`` conditions it meets, so when there are more rows
    than ``2^D`` and the table fits half the budget, the values of all ``2^D``
    patterns are computed once per path and each row costs a lookup: ``n x paths x D``
    (else ``n x paths x D^2 / 2``; times ``D`` for interactions). Interventional values use
    the closed form of a game with 0/1 fractions, ``n x m x paths x D`` for ``m``
    background rows (interactions: the polynomial).

    References
    ----------
    Lundberg, Erion, Chen et al. (2020), "From local explanations to global understanding
    with explainable AI for trees", Nat. Mach. Intell. 2.
    Yu, Li, Zhang & Zhou (2022), "Linear TreeShap", NeurIPS.
    Mitchell, Frank & Holmes (2022), "GPUTreeShap: massively parallel exact calculation of
    SHAP scores for tree ensembles", PeerJ Comput. Sci. 8.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> rf = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0)
    >>> rf = rf.fit(X, X[:, 0] + X[:, 1] * X[:, 2])
    >>> sv = tree_shap(rf, X[:4])
    >>> sv.values.shape
    (4, 3, 1)
    >>> bool(np.allclose(sv.values.sum(axis=1)[:, 0] + sv.base_values[0], rf.predict(X[:4]),
    ...                  atol=1e-5))
    True
    """
    budget = resolve_budget(memory_budget)
    ensemble = _read(model)
    x, names = _rows(model, as_rows(X, ensemble.n_features), feature_names,
                     ensemble.n_features, "X")
    paths, output_names, slots = _select(ensemble, output)
    bg = weights = None
    if background is not None:
        bg, _ = _rows(model, background, feature_names, ensemble.n_features, "background")
    if ensemble.check_rows is not None:
        ensemble.check_rows(x if bg is None else np.concatenate([x, bg]), names)
    if background is not None:
        weights = np.ones(bg.shape[0]) if background_weight is None else np.asarray(
            background_weight, np.float64)
        if weights.shape != (bg.shape[0],) or not np.all(weights >= 0) or \
                not weights.sum() > 0:
            raise ValueError(
                f"background_weight must be {bg.shape[0]} non-negative weights, one per "
                f"background row, with a positive sum; got shape {weights.shape}.")
        weights = weights / weights.sum()
    elif background_weight is not None:
        raise ValueError("background_weight needs a background; got background=None.")
    raw = _run(ensemble, paths, slots, x, bg, weights, interactions, budget, progress)
    n, p, o = x.shape[0], ensemble.n_features, len(output_names)
    if slots > 1:  # (n, segments * slots, 1) -> (n, segments, o)
        raw = raw.reshape(n, -1, slots)
    values = raw.reshape((n, p, p, o) if interactions else (n, p, o))
    if bg is None:
        base, method = paths.base, "tree_path_dependent"
    else:
        base = _interventional_base(paths, slots, bg, weights, ensemble.dtype)
        method = "tree_interventional"
    info = ShapleyDetails(n_background=0 if bg is None else int(bg.shape[0]))
    base = np.asarray(base, np.float64)
    if interactions:
        return ShapleyInteractions(values, base, x.copy(), names, output_names, method, info)
    return ShapleyValues(values, base, x.copy(), names, output_names, None, method, info)
