"""Models of the boosting libraries (XGBoost, LightGBM, CatBoost) read into the node arrays of
:mod:`._trees`: what the three readers share.

Each reader (:mod:`._xgboost`, :mod:`._lightgbm`, :mod:`._catboost`) turns a fitted model into
a :class:`BoostedModel`: one small dict of NumPy arrays per tree, the tree -> output map, the
constant raw offset and the inverse link. :func:`pack_boosted` pads and stacks the trees into
the arrays that :func:`jaximp.tree_predictor` evaluates (field meanings: the docstring of
:mod:`._trees`). A library is recognised by the module of the model's type, so it is imported
only when such a model is given.
"""

from __future__ import annotations

import dataclasses
import warnings

import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..data import PrecisionWarning, user_stacklevel
from ._predictor import x64_enabled

__all__ = ["BoostedModel", "Float32Splits", "below_float32", "boosting_library", "check_columns",
           "host_prediction", "level_keys", "node_params", "pack_boosted", "refuse", "round_down_float32",
           "stored_names", "training_codes"]

#: link applied to the raw score -> the prediction, per name: see :func:`._trees._link`
LINKS = ("identity", "exp", "sigmoid", "softmax", "argmax", "hinge")
#: LightGBM's ``kZeroThreshold``: |x| at most this is "zero" for ``missing_type`` Zero
ZERO_THRESHOLD = 1e-35


@dataclasses.dataclass
class BoostedModel:
    """A boosting library's model in the shared form (NumPy, before padding).

    Attributes
    ----------
    library : {"xgboost", "lightgbm", "catboost"}
    trees : list of dict
        Per tree, arrays over its ``n`` nodes: ``feature`` int, ``threshold`` float64 (a row
        goes left when ``x <= threshold``, compared in float32 when ``float32_rows``),
        ``left``/``right`` int (a leaf points to itself), ``missing_left`` bool (NaN),
        ``zero_missing`` bool (|x| <= 1e-35 is missing too: LightGBM's ``missing_type`` Zero),
        ``value`` float64 (leaf values, already scaled: shrinkage, CatBoost's scale),
        ``cover`` float64 (the library's cover: XGBoost ``sum_hessian``, LightGBM
        ``internal_count``/``leaf_count``, CatBoost leaf weights summed up), ``gain`` float64
        (the split's loss reduction, 0 at leaves), ``hessian`` float64 (sum of hessians where
        the library keeps it, else the cover), ``categories`` dict node -> int array (the
        category set of a categorical split) and ``depth`` int.
    tree_class : ndarray of int (T,)
        The raw output each tree adds to.
    init : ndarray (K,)
        Constant raw offset: XGBoost's ``base_score`` as a margin, CatBoost's bias, else 0.
    link : str
        One of :data:`LINKS` for the library's own prediction (``"identity"`` if it is the
        margin); ``link_scale`` multiplies the raw score inside a sigmoid (LightGBM's
        ``sigmoid`` parameter).
    two_columns : bool
        A binary classifier wrapper: ``predict_proba`` gives ``(1 - p, p)``.
    set_goes_left : bool
        Categorical splits: True if the categories of the set go left (LightGBM), False if
        they go right (XGBoost); ``outside_left`` is where a category outside the stored
        range (negative or beyond the largest listed) goes.
    float32_rows : bool
        Whether the library compares float32 rows (XGBoost, CatBoost) or float64 (LightGBM).
    """

    library: str
    trees: list
    tree_class: np.ndarray
    init: np.ndarray
    link: str
    n_features: int
    feature_names: tuple | None
    objective: str
    classes: tuple | None = None
    two_columns: bool = False
    link_scale: float = 1.0
    set_goes_left: bool = True
    outside_left: bool = False
    float32_rows: bool = True
    categories: dict = dataclasses.field(default_factory=dict)  # column -> training levels
    margin_scale: float = 1.0  # raw margin = margin_scale * (the sum of the leaf values)
    name: str = ""

    @property
    def n_raw(self) -> int:
        return int(self.init.shape[0])

    def numeric_splits(self) -> tuple[np.ndarray, np.ndarray]:
        """The column and float64 threshold of every numeric split of every tree."""
        columns, thresholds = [], []
        for tree in self.trees:
            split = tree["left"] != np.arange(len(tree["left"]))
            split[list(tree["categories"])] = False
            columns.append(tree["feature"][split])
            thresholds.append(tree["threshold"][split])
        return np.concatenate(columns), np.concatenate(thresholds)


def boosting_library(model) -> str | None:
    """``"xgboost"``, ``"lightgbm"`` or ``"catboost"`` by the module of the model's type (no
    import), else None."""
    for cls in type(model).__mro__:
        root = (getattr(cls, "__module__", "") or "").split(".")[0]
        if root in ("xgboost", "lightgbm", "catboost"):
            return root
    return None


def refuse(model, what: str) -> TypeError:
    """The TypeError for a model the array form does not cover, naming ``trees="host"``."""
    return TypeError(
        f"{type(model).__name__} {what}, which jaximp's tree arrays do not support. Fix: "
        "jaximp.as_predictor(model, trees='host', sample=X[:5]) predicts with the library "
        "itself on the host (sample: a few rows of the data, in the types the model was fitted "
        "on); pass that Predictor to the method in place of the model."
    )


def level_keys(levels) -> list:
    """Category levels in a comparable form: numbers as float, anything else as str."""
    keys = []
    for v in levels:
        is_number = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
            v, (bool, np.bool_))
        keys.append(float(v) if is_number else str(v))
    return keys


def round_down_float32(threshold: np.ndarray) -> np.ndarray:
    """Largest float32 not above each float64 threshold (exact float32 comparisons) that
    is not subnormal (:func:`_normal_float32`). For LightGBM's float64 comparisons of rows
    rounded to float32, every float32-representable value keeps its side of a threshold
    between two of them (consecutive integers near 1e7 included); only a row within one
    float32 step below an unrepresentable threshold may go right (x64 is exact)."""
    with np.errstate(over="ignore"):  # beyond float32's range: inf, stepped down below
        t32 = np.asarray(threshold, np.float64).astype(np.float32)
    above = t32.astype(np.float64) > threshold
    t32[above] = np.nextafter(t32[above], np.float32(-np.inf))
    return _normal_float32(t32)


_CHECKED_ROWS = 1 << 16  # rows Float32Splits reads at most


@dataclasses.dataclass(frozen=True, eq=False)
class Float32Splits:
    """A tree ensemble's numeric splits that its library compares in float64 (LightGBM,
    scikit-learn's HistGradientBoosting) and the node arrays in float32: per column, the
    sorted float64 thresholds and the float32 ones compared in their place (a row goes left
    when ``x <= threshold``). Called on float64 rows, it warns where some take another
    branch in float32 (the rows rounded to the nearest float32) than in float64."""

    name: str
    thresholds: dict  # column -> (float64 (m,) sorted, float32 (m,) as the arrays compare)

    @classmethod
    def of(cls, name: str, feature, threshold, as_compared) -> "Float32Splits":
        """From the splits' columns ``feature`` and float64 ``threshold`` (numeric splits
        only), and ``as_compared(threshold)``, their float32 form in the arrays."""
        feature, threshold = np.asarray(feature), np.asarray(threshold, np.float64)
        columns = {}
        for column in np.unique(feature):
            t64 = np.unique(threshold[feature == column])
            columns[int(column)] = (t64, np.asarray(as_compared(t64), np.float32))
        return cls(name, columns)

    def rows_apart(self, X: np.ndarray) -> dict[int, int]:
        """Column -> how many rows of ``X`` (float64, (n, c)) take another branch of one of
        its splits in float32 than in float64 (columns with none left out). Both orders of
        the thresholds agree, so a row's branches all agree when as many thresholds lie
        below it in both."""
        apart = {}
        for column, (t64, t32) in self.thresholds.items():
            x = X[:, column]
            with np.errstate(over="ignore"):
                x32 = x.astype(np.float32)
            moved = (np.searchsorted(t64, x) != np.searchsorted(t32, x32)) & ~np.isnan(x)
            if moved.any():
                apart[column] = int(np.count_nonzero(moved))
        return apart

    def __call__(self, X: np.ndarray, column_names) -> None:
        # every row up to 65,536 of them, else evenly spaced ones: a warning, not a count
        step = max(1, -(-X.shape[0] // _CHECKED_ROWS))
        checked_rows = X[::step]
        apart = self.rows_apart(checked_rows)
        if apart:
            shown = ", ".join(f"{column_names[c]!r}: {k}" for c, k in list(apart.items())[:4])
            checked = "" if step == 1 else f" of {len(checked_rows)} checked"
            warnings.warn(
                f"rows of X lie within float32 rounding of split thresholds of {self.name} "
                f"(rows per feature{checked}: {shown}) and take another branch in the JAX "
                f"trees' float32 comparisons than in the library's float64 ones, so their "
                "predictions may differ from the library's. Fix: enable float64 before "
                "reading the model "
                "(jax.config.update('jax_enable_x64', True)), or predict on the host "
                "(as_predictor(model, trees='host')).", PrecisionWarning,
                stacklevel=user_stacklevel())


def below_float32(condition: np.ndarray) -> np.ndarray:
    """``x < c`` as ``x <= below``: the largest float32 below each float32 ``c`` that is not
    subnormal (XGBoost's splits; ``x < 0`` as ``x <= -tiny``, not ``x <= -1.4e-45``)."""
    condition = np.asarray(condition, np.float32)
    return _normal_float32(np.nextafter(condition, np.float32(-np.inf)))


def _normal_float32(t32: np.ndarray) -> np.ndarray:
    """float32 thresholds with each subnormal one moved down to the next float32 that is
    not (0, or minus the smallest normal): XLA's CPU backend flushes subnormals to zero,
    which would move a threshold up (-1.4e-45 to -0, sending x = 0 the wrong way)."""
    tiny = np.finfo(np.float32).tiny
    subnormal = (t32 != 0) & (np.abs(t32) < tiny)
    return np.where(subnormal, np.where(t32 < 0, -tiny, 0), t32).astype(np.float32)


def _bitsets(model: BoostedModel, T: int, N: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``is_categorical`` (T, N) and ``category_left`` (T, N, W) uint32 bitsets of the
    categories that go left (W words cover the largest category listed), or None."""
    largest = -1
    for tree in model.trees:
        for cats in tree["categories"].values():
            if len(cats):
                largest = max(largest, int(np.max(cats)))
    if not any(tree["categories"] for tree in model.trees):
        return None
    W = largest // 32 + 1
    is_cat = np.zeros((T, N), bool)
    bits = np.zeros((T, N, W * 32), bool)
    for t, tree in enumerate(model.trees):
        for node, cats in tree["categories"].items():
            is_cat[t, node] = True
            member = np.zeros(W * 32, bool)
            member[np.asarray(cats, np.int64)] = True
            bits[t, node] = member if model.set_goes_left else ~member
    words = (bits.reshape(T, N, W, 32).astype(np.uint64)
             << np.arange(32, dtype=np.uint64)).sum(axis=-1).astype(np.uint32)
    return is_cat, words


def node_params(host: bool, ftype, feature, threshold, left, right, missing_left, value,
                weights, **extra) -> dict:
    """The padded node arrays every traversal reads (see :mod:`._trees`), (T, N) each and
    ``value`` (T, N, k), with ``extra`` arrays of a kind of model: NumPy arrays where
    ``host``, else JAX arrays; values and weights in ``ftype``, impurities zero."""
    convert = np.asarray if host else jnp.asarray
    params = {"feature": feature, "threshold": threshold, "children_left": left,
              "children_right": right, "missing_left": missing_left,
              "value": value.astype(ftype), "impurity": np.zeros(np.shape(feature), ftype),
              "weighted_n_node_samples": weights.astype(ftype), **extra}
    return {name: convert(array) for name, array in params.items()}


def pack_boosted(model: BoostedModel, host: bool = False) -> tuple[dict, int]:
    """The padded node arrays of ``model`` (see :mod:`._trees`) and the largest depth; where
    ``host`` (NumPy's traversal), a library that compares float64 rows (LightGBM) keeps its
    float64 thresholds whatever JAX's float mode."""
    trees = model.trees
    T, N = len(trees), max(len(tree["feature"]) for tree in trees)
    x64 = x64_enabled()
    ftype = np.float64 if x64 else np.float32
    idx = np.broadcast_to(np.arange(N, dtype=np.int32), (T, N))
    feature = np.zeros((T, N), np.int32)
    threshold = np.zeros((T, N), np.float64)
    left, right = idx.copy(), idx.copy()
    missing_left = np.zeros((T, N), bool)
    zero_missing = np.zeros((T, N), bool)
    value = np.zeros((T, N, 1), np.float64)
    cover = np.zeros((T, N), np.float64)
    gain = np.zeros((T, N), np.float64)
    for t, tree in enumerate(trees):
        n = len(tree["feature"])
        feature[t, :n] = tree["feature"]
        threshold[t, :n] = tree["threshold"]
        left[t, :n] = tree["left"]
        right[t, :n] = tree["right"]
        missing_left[t, :n] = tree["missing_left"]
        zero_missing[t, :n] = tree.get("zero_missing", False)
        value[t, :n, 0] = tree["value"]
        cover[t, :n] = tree["cover"]
        gain[t, :n] = tree["gain"]
    if model.float32_rows:  # thresholds are float32 values already
        thr = threshold.astype(np.float32)
    else:
        thr = threshold if x64 or host else round_down_float32(threshold)
    extra = {"zero_missing": zero_missing} if zero_missing.any() else {}
    sets = _bitsets(model, T, N)
    if sets is not None:
        extra.update(is_categorical=sets[0], category_left=sets[1],
                     category_outside_left=np.asarray(bool(model.outside_left)))
    params = node_params(host, ftype, feature, thr, left, right, missing_left, value, cover,
                         split_gain=gain.astype(ftype), init=model.init.astype(ftype),
                         tree_class=np.asarray(model.tree_class, np.int32),
                         link_scale=np.asarray(model.link_scale, ftype), **extra)
    depth = max(int(tree["depth"]) for tree in trees)
    return params, depth


def tree_depths(left: np.ndarray, right: np.ndarray) -> int:
    """Depth of a tree given as child arrays (a leaf points to itself), root 0."""
    depth = np.zeros(len(left), np.int64)
    order = [0]
    for node in order:  # breadth first: parents before children
        for child in (left[node], right[node]):
            if child != node:
                depth[child] = depth[node] + 1
                order.append(int(child))
    return int(depth.max())


def check_columns(model: BoostedModel, n_features: int | None, sample) -> None:
    """ValueError when the data lacks the model's features (count, or names of a DataFrame)."""
    names = model.feature_names
    columns = getattr(sample, "columns", None)
    width = len(columns) if columns is not None else n_features
    shown = "" if names is None else f" named {list(names)[:8]}"
    if width is not None and width != model.n_features:
        raise ValueError(
            f"the {model.name} model was fitted on {model.n_features} features{shown}; the "
            f"data has {width} columns. Fix: pass the columns the model was fitted on, in the "
            "fitted order."
        )
    if columns is not None and names is not None and not _default_names(names, model.library):
        got = stored_names(columns, model.library)
        if got != list(names):
            missing = [c for c in names if c not in got]
            raise ValueError(
                f"the {model.name} model was fitted on features {list(names)[:8]}; the data's "
                f"columns are {got[:8]}" + (f" (lacking {missing[:5]})" if missing else
                                            " (in another order)")
                + ". Fix: pass X[model's feature names] in the fitted order."
            )


def training_codes(model: BoostedModel, frame, X: np.ndarray) -> np.ndarray:
    """The rows ``X`` (n, c), codes of ``frame``'s columns as :func:`jaximp.as_dataset` reads
    them, with each category column's codes renumbered to the levels the model was fitted
    on, as the libraries map a DataFrame by level: a level the model never saw is missing
    (LightGBM's rule) or refused (XGBoost's). ``X`` itself when nothing differs."""
    out = X
    for j, dtype in enumerate(getattr(frame, "dtypes", ())):
        trained = model.categories.get(j)
        if not isinstance(dtype, pd.CategoricalDtype) or trained is None:
            continue
        given = level_keys(dtype.categories)
        if given == list(trained):
            continue
        position = {key: i for i, key in enumerate(trained)}
        unseen = [str(level) for level, key in zip(dtype.categories, given)
                  if key not in position]
        if unseen and model.library == "xgboost":
            raise ValueError(
                f"column {frame.columns[j]!r} has categories {unseen[:5]} that the XGBoost "
                f"model was not fitted on (it knows {list(trained)[:8]}); XGBoost refuses "
                "them too. Drop those rows or map them to known categories.")
        lookup = np.array([position.get(key, np.nan) for key in given] + [np.nan])
        codes = X[:, j]
        index = np.where(np.isnan(codes), len(given), np.nan_to_num(codes)).astype(np.int64)
        out = X.copy() if out is X else out
        out[:, j] = lookup[index]
    return out


def stored_names(columns, library: str | None) -> list[str]:
    """Column names as the library stores them: LightGBM writes a space as ``_``.

    Examples
    --------
    >>> stored_names(["sepal length (cm)", "b"], "lightgbm")
    ['sepal_length_(cm)', 'b']
    """
    names = [str(c) for c in columns]
    return [name.replace(" ", "_") for name in names] if library == "lightgbm" else names


def _default_names(names, library: str) -> bool:
    """Whether the names are the library's defaults for unnamed columns."""
    n = len(names)
    defaults = {"xgboost": [f"f{j}" for j in range(n)],
                "lightgbm": [f"Column_{j}" for j in range(n)],
                "catboost": [str(j) for j in range(n)]}
    return list(names) == defaults[library] or all(name == "" for name in names)


def host_prediction(model, response_method: str):
    """``(function, name)`` predicting on the host with the library itself where scikit-learn's
    conventions do not reach: the raw margin (``"raw"``, or ``"decision_function"``, which
    the wrappers lack) and XGBoost's ``Booster`` (whose ``predict`` takes a DMatrix); else
    None (the wrappers' own ``predict`` / ``predict_proba``)."""
    library = boosting_library(model)
    margin = response_method in ("raw", "decision_function")
    name = f"{type(model).__name__}.{'margin' if margin else 'predict'}"
    if library == "xgboost":
        if not hasattr(model, "get_booster"):  # a Booster
            kind = "margin" if margin else "value"
            return (lambda X: model.inplace_predict(X, predict_type=kind)), name
        if margin:
            return (lambda X: model.predict(X, output_margin=True)), name
    elif library == "lightgbm" and margin:
        return (lambda X: model.predict(X, raw_score=True)), name
    elif library == "catboost" and margin:
        return (lambda X: model.predict(X, prediction_type="RawFormulaVal")), name
    return None
