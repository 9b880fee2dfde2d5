"""Model-free filter importance: each feature used alone, in the convention of R's
``caret::filterVarImp``.

No model is involved: every feature is scored by how well it alone relates to the target.

- ``"auc"`` (classification): the ROC AUC of the feature used as a score, oriented so that it is
  at least 0.5 (``max(auc, 1 - auc)``). The AUC is the Mann-Whitney statistic divided by
  ``n_pos * n_neg``; a tie between a positive and a negative row counts 1/2. It is computed from
  mid-ranks (average ranks of tied values) of the negative rows, with case weights as
  frequencies: ``sum_i w_i [W_neg(x < x_i) + W_neg(x == x_i) / 2] / (W_pos W_neg)`` over the
  positive rows ``i``. With more than two classes, class ``k`` gets one output column: the
  maximum over the other classes ``j`` of the oriented AUC on the rows of classes ``j`` and
  ``k`` only (caret's documented convention). From four classes caret's code differs from
  its documentation: class ``k`` gets the maximum over the two class pairs numbered by the
  classes of the ``k``-th pair (in ``combn`` order); ``class_pairs="caret"`` reproduces that
  (the same numbers for three classes).
- ``"t"`` (regression): ``|t|`` of the slope ``b`` of the least-squares line
  ``y ~ a + b x_j``, ``t = b / se(b)`` with the residual variance on ``n - 2`` degrees of freedom
  (weighted least squares with case weights; ``n`` then counts the rows of positive weight, as
  R's ``lm`` does).
- ``"loess"`` (regression): pseudo ``R^2 = max(0, 1 - RSS / TSS)`` of Cleveland's LOESS fit of
  ``y`` on the feature alone, or, as caret does, of a straight line where the feature has fewer
  than 20% distinct values or a LOESS neighbourhood has zero width (too many ties for the
  span). The fit has the defaults of R's ``loess``: local quadratic (degree 2),
  tricube weights ``(1 - (d / d_max)^3)^3`` on the ``q = floor(n * span + 1e-5)`` nearest rows
  (R's rounding, so that 0.29 * 100 is 29), ``d_max``
  the ``q``-th smallest distance (``span > 1``: every row, ``d_max = sqrt(span) * max d``, as
  R's Fortran scales squared distances by the span). R's default surface, ``"interpolate"``, is
  reproduced: the range of the feature, widened by 0.5% at each end, is cut into cells at
  medians of their rows (ties kept on one side) until a cell holds at most
  ``floor(n * (span * 0.2))`` rows (``loess.control(cell = 0.2)``); the local fit and its slope
  are computed at the cells' ends, and the fitted value at a row is the cubic Hermite
  interpolant between the ends of its cell. ``surface="direct"`` fits at every row instead
  (``loess.control(surface = "direct")``). Case weights multiply the tricube weights (R's
  ``weights``) and weight the sums ``RSS = sum w (y - fit)^2`` and
  ``TSS = sum w (y - mean_w y)^2``.

Precision: every statistic is a ``jax.numpy`` kernel for one feature, batched over the features
with ``jax.vmap`` and run in float32 (the project default). Before that, ``X`` and ``y`` are
centred and scaled in float64 on the host (the statistics do not change), the LOESS design at
each point uses ``u = (x - x_0) / d_max`` in ``[-1, 1]``, and each local weighted least-squares
problem is solved by an SVD (a pseudo-inverse, dropping singular values below 1e-5 of the largest,
for degenerate neighbourhoods), so float32 results agree with float64 references to about 1e-5
(relative). The AUC kernel sees each feature's dense ranks (exact in float32), so nearby
values of a feature with a large offset are not merged into ties. An exactly linear relation
gives ``|t| = inf`` (or a very large value, from float32 rounding).
"""

from __future__ import annotations

import collections
import functools
import math
import numbers

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from ..data import Choice, Feature, Flag, as_dataset, validate_params
from ..results import FeatureImportance, FilterDetails
from ._loss import check_target

__all__ = ["filter_importance"]

METHODS = ("auto", "auc", "t", "loess")
_MAX_CLASSES = 100
_RCOND = 1e-5
_BATCH_ELEMENTS = 1 << 22  # floats per LOESS batch (points x features x neighbours)
_CELL = 0.2  # R's loess.control(cell = 0.2): a kd-tree cell holds at most n * span * cell rows


@validate_params(method=Choice(*METHODS), surface=Choice("interpolate", "direct"),
                 class_pairs=Choice("holding", "caret"), weighted_r2=Flag())
def filter_importance(
    X,
    y,
    *,
    method: str = "auto",
    features=None,
    feature_names=None,
    categorical=None,
    groups=None,
    sample_weight=None,
    span: float = 0.75,
    surface: str = "interpolate",
    class_pairs: str = "holding",
    weighted_r2: bool = True,
) -> FeatureImportance:
    """Model-free importance of each feature used alone (R's ``caret::filterVarImp``).

    Parameters
    ----------
    X : array-like of shape (n, c) or pandas.DataFrame
        Numeric data (see :func:`jaximp.as_dataset`).
    y : array-like of shape (n,)
        Class labels of any dtype (``"auc"``) or a numeric target (``"t"``, ``"loess"``).
    method : {"auto", "auc", "t", "loess"}, default "auto"
        ``"auc"``: ROC AUC of the feature as a score, oriented to be >= 0.5; one column per class
        when there are more than two classes (the maximum one-vs-one AUC against the other
        classes). ``"t"``: ``|t|`` of the slope of a straight-line fit of ``y`` on the feature.
        ``"loess"``: pseudo R^2 (clipped at 0) of a LOESS fit (R's defaults: degree 2, the
        surface interpolated from a kd-tree). ``"auto"`` picks ``"t"`` when ``y`` has a
        floating-point dtype and ``"auc"`` otherwise (integers, booleans, strings, objects,
        pandas categories): pass
        ``method="t"`` for an integer-valued regression target such as counts.
    features : str, int, or list of them, optional
        Features to score (default all).
    feature_names, categorical, groups, sample_weight
        As in :func:`jaximp.as_dataset`. A categorical feature (one integer-coded column)
        is scored through its codes. A group of several columns (e.g. a one-hot block) is not a
        single score and raises a ValueError: score its columns separately. Case weights enter
        every statistic (weighted Mann-Whitney, weighted least squares, LOESS prior weights).
    span : float, default 0.75
        LOESS neighbourhood: the ``floor(span * n)`` nearest rows (``span > 1``: all rows, with
        the maximum distance stretched by ``sqrt(span)``, as R's code does). Used by
        ``"loess"`` only.
    surface : {"interpolate", "direct"}, default "interpolate"
        How the LOESS fit is evaluated at the rows, as R's ``loess.control(surface=)``:
        interpolated between local fits at the ends of kd-tree cells (R's default, which
        ``caret::filterVarImp(nonpara = TRUE)`` uses), or a local fit at every row.
    class_pairs : {"holding", "caret"}, default "holding"
        With more than two classes, the pairs of classes whose AUCs class ``k``'s score is the
        maximum of: every pair holding class ``k`` (caret's documentation), or, from four
        classes, the pairs caret's code picks (see the module notes).
    weighted_r2 : bool, default True
        With case weights, the ``"loess"`` R^2 sums the squared residuals and the total sum of
        squares with them; ``False`` gives caret's, whose weights enter the fits only (its
        R^2 sums the unweighted residuals of the weighted fit against the unweighted mean, so
        it may fall below 0 and is clipped).

    Returns
    -------
    FeatureImportance
        ``method="filter_<method>"``, ``importances_mean`` of shape (p, o): ``o = 1`` (output
        ``"y"``) for regression and two classes, else one column per class named by its label.
        ``info`` holds ``"method"``, ``"task"`` and ``"classes"`` (AUC) or ``"span"`` and
        ``"surface"`` (LOESS).

    Notes
    -----
    A constant feature scores 0.5 (AUC) or 0 (``"t"``, ``"loess"``). ``"loess"`` scores a
    feature with fewer than 20% distinct values, or one where ``floor(span * n)`` or more rows
    share one value (a neighbourhood of zero width, where R's ``loess`` stops), by a straight
    line's R^2, as ``caret::filterVarImp`` does; ``info.linear`` names them.

    Examples
    --------
    >>> import numpy as np
    >>> from jaximp import filter_importance
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X[:, 0] + 0.1 * rng.normal(size=200)
    >>> filter_importance(X, y).top(1)  # float y: "t"
    ['x0']
    >>> labels = np.where(X[:, 2] > 0, "yes", "no")
    >>> result = filter_importance(X, labels)  # string labels: "auc"
    >>> result.method, result.top(1)
    ('filter_auc', ['x2'])
    >>> round(float(filter_importance(X, X[:, 1] ** 2, method="loess").importances_mean[1, 0]), 3)
    1.0
    """
    dataset = as_dataset(
        X,
        feature_names=feature_names,
        categorical=categorical,
        groups=groups,
        sample_weight=sample_weight,
    )
    n = dataset.n_rows
    target = _one_column(check_target(y, n, dataset.source))
    if method == "auto":
        labels = isinstance(getattr(y, "dtype", None), pd.CategoricalDtype)
        method = "auc" if labels else _auto_method(target)
    chosen = dataset.resolve(features)
    columns = [_single_column(feat, method) for feat in chosen]
    names = tuple(feat.name for feat in chosen)
    X_sel = dataset.X[:, columns]
    weights = np.ones(n) if dataset.weights is None else dataset.weights
    if method == "auc":
        values, output_names, info = _auc_importance(X_sel, target, weights, class_pairs)
    else:
        y_num = _numeric_target(target, method)
        if method == "t":
            values, info = _t_importance(X_sel, y_num, weights)
        else:
            values, info = _loess_importance(X_sel, y_num, weights, _check_span(span, n),
                                             surface, names, weighted_r2)
        output_names = ("y",)
    info = FilterDetails(method=method, weighted=dataset.weights is not None, **info)
    return FeatureImportance(
        method=f"filter_{method}",
        feature_names=names,
        output_names=output_names,
        importances_mean=values,
        importances_std=None,
        importances=None,
        info=info,
    )


# ----------------------------------------------------------------------------- validation


def _one_column(target: np.ndarray) -> np.ndarray:
    """``y`` as a 1-D array; an (n, 1) column is flattened."""
    if target.ndim == 2:
        if target.shape[1] != 1:
            raise ValueError(
                f"filter_importance scores one target; got y of shape {target.shape}. "
                "Call it once per column of y."
            )
        target = target[:, 0]
    return target


def _auto_method(target: np.ndarray) -> str:
    """``"t"`` for a floating-point target, ``"auc"`` for anything else (class labels)."""
    if target.dtype.kind == "c":
        raise ValueError(f"y must be real numbers or class labels; got dtype {target.dtype}.")
    return "t" if target.dtype.kind == "f" else "auc"


def _numeric_target(target: np.ndarray, method: str) -> np.ndarray:
    """A real regression target as float64, not constant."""
    if target.dtype.kind not in "biuf":
        raise ValueError(
            f"method={method!r} needs a numeric y (a regression target); got dtype "
            f"{target.dtype}. Use method='auc' for class labels."
        )
    values = target.astype(np.float64)
    if np.ptp(values) == 0:
        raise ValueError(
            f"y is constant (every value is {values[0]!r}); method={method!r} needs a target "
            "that varies."
        )
    return values


def _single_column(feat: Feature, method: str) -> int:
    """The one column of ``feat``; a multi-column group cannot be scored alone."""
    if len(feat.columns) != 1:
        raise ValueError(
            f"feature {feat.name!r} is a {feat.kind} group of {len(feat.columns)} columns; "
            f"method={method!r} scores one column at a time. Score its columns separately "
            "(leave them out of groups) or drop the group with features=[...]."
        )
    return feat.columns[0]


def _check_span(span, n: int) -> float:
    """``span`` as a positive float whose neighbourhood holds at least 4 rows."""
    if (
        isinstance(span, (bool, np.bool_))
        or not isinstance(span, numbers.Real)
        or not np.isfinite(span)
        or span <= 0
    ):
        raise ValueError(f"span must be a positive finite number (default 0.75); got {span!r}.")
    if _neighbours(float(span), n) < 4:
        raise ValueError(
            f"span={span} is too small for n = {n} rows: the neighbourhood holds "
            f"floor(span * n) = {_neighbours(float(span), n)} rows; a local quadratic needs at "
            f"least 4 (3 of positive weight). Use span >= {4 / n:.3g}."
        )
    return float(span)


def _neighbours(span: float, n: int) -> int:
    """Rows in each LOESS neighbourhood: ``floor(span * n)``, at most ``n``; as R's loessc.c,
    ``floor(n * span + 1e-5)``, so that 100 * 0.29 (28.999... in floating point) is 29."""
    return min(n, int(np.floor(n * span + 1e-5)))


def _standardize(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Columns centred at their weighted mean and scaled to unit weighted SD (float64);
    a constant column becomes exactly 0. Each column is first scaled by a power of two near
    its largest magnitude (exactly), where squares of 1e160 would overflow and of 1e-200
    vanish."""
    _, exponents = np.frexp(np.max(np.abs(values), axis=0))
    values = np.ldexp(values, -exponents)
    w = weights / weights.sum()
    centred = values - w @ values
    sd = np.sqrt(w @ centred**2)
    constant = np.ptp(values, axis=0) == 0
    return np.where(constant, 0.0, centred / np.where(constant | (sd == 0), 1.0, sd))


def _dense_ranks(values: np.ndarray) -> np.ndarray:
    """Each column replaced by the rank of its value among the column's distinct values
    (0, 1, ...): the same order and ties, exact in float32 up to 2^24 distinct values."""
    order = np.argsort(values, axis=0, kind="stable")
    ordered = np.take_along_axis(values, order, axis=0)
    steps = np.concatenate([np.zeros((1, values.shape[1])), np.diff(ordered, axis=0) > 0])
    ranks = np.empty_like(values)
    np.put_along_axis(ranks, order, np.cumsum(steps, axis=0), axis=0)
    return ranks


# ----------------------------------------------------------------------------- AUC


def _auc_importance(X: np.ndarray, target: np.ndarray, weights: np.ndarray, class_pairs: str):
    """Oriented AUC of every column: (p, 1) for two classes, (p, K) for K > 2."""
    classes, codes = np.unique(target, return_inverse=True)
    codes = codes.reshape(-1)
    k = len(classes)
    if k < 2:
        raise ValueError(
            f"method='auc' needs at least two classes in y; got only {classes.tolist()}."
        )
    if k > _MAX_CLASSES:
        raise ValueError(
            f"method='auc' treats y as class labels; got {k} distinct values (at most "
            f"{_MAX_CLASSES}). For a numeric target use method='t' or method='loess'."
        )
    totals = np.bincount(codes, weights=weights, minlength=k)
    if np.any(totals <= 0):
        empty = [str(c) for c, t in zip(classes, totals) if t <= 0]
        raise ValueError(f"classes {empty} have zero total sample_weight; drop those rows.")
    w = weights / weights.mean()
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    w_pos = np.stack([w * (codes == b) for a, b in pairs])
    w_neg = np.stack([w * (codes == a) for a, b in pairs])
    auc = np.asarray(
        _auc_kernel(
            jnp.asarray(_dense_ranks(X), jnp.float32),
            jnp.asarray(w_pos, jnp.float32),
            jnp.asarray(w_neg, jnp.float32),
        ),
        np.float64,
    )
    oriented = np.maximum(auc, 1.0 - auc)  # (p, pairs)
    info = {"task": "classification", "classes": classes}
    if k == 2:
        return oriented, ("y",), info
    if class_pairs == "caret":  # caret's outStat[, j] <- max(Stat[, CombsN[, j]]): the j-th
        # pair's two class numbers taken as pair numbers (the pairs holding j for 3 classes)
        return (np.stack([np.maximum(oriented[:, a], oriented[:, b]) for a, b in pairs[:k]], 1),
                tuple(str(c) for c in classes), info)
    per_class = np.full((X.shape[1], k), -np.inf)
    for m, (a, b) in enumerate(pairs):
        per_class[:, a] = np.maximum(per_class[:, a], oriented[:, m])
        per_class[:, b] = np.maximum(per_class[:, b], oriented[:, m])
    return per_class, tuple(str(c) for c in classes), info


def _auc_one(x: Array, w_pos: Array, w_neg: Array) -> Array:
    """Weighted AUC of score ``x`` (n,) for ``m`` (positive, negative) weightings of the rows,
    ``w_pos`` and ``w_neg`` (m, n); returns (m,).

    Sorts ``x`` once; for each positive row, the weight of negatives below it plus half the
    weight of negatives tied with it (its mid-rank among the negatives).
    """
    order = jnp.argsort(x)
    xs = x[order]
    lo = jnp.searchsorted(xs, xs, side="left")
    hi = jnp.searchsorted(xs, xs, side="right")

    def one(wp: Array, wn: Array) -> Array:  # (n,), (n,) -> ()
        cum = jnp.concatenate([jnp.zeros(1, wn.dtype), jnp.cumsum(wn[order])])
        below, upto = cum[lo], cum[hi]
        u = jnp.sum(wp[order] * (below + 0.5 * (upto - below)))
        return u / (jnp.sum(wp) * jnp.sum(wn))

    return jax.vmap(one)(w_pos, w_neg)


@jax.jit
def _auc_kernel(X: Array, w_pos: Array, w_neg: Array) -> Array:
    """Unoriented AUC of every column of ``X`` (n, p) for every weighting pair (m, n):
    (p, m)."""
    return jax.vmap(_auc_one, in_axes=(1, None, None))(X, w_pos, w_neg)


# ----------------------------------------------------------------------------- linear t


def _t_importance(X: np.ndarray, y: np.ndarray, weights: np.ndarray):
    """``|t|`` of the slope of ``y ~ a + b x_j`` for every column, shape (p, 1)."""
    df = int(np.count_nonzero(weights > 0)) - 2
    if df < 1:
        raise ValueError(
            f"method='t' needs at least 3 rows of positive weight; got {df + 2}."
        )
    w = weights / weights.mean()
    t = _t_kernel(
        jnp.asarray(_standardize(X, w), jnp.float32),
        jnp.asarray(_standardize(y[:, None], w)[:, 0], jnp.float32),
        jnp.asarray(w, jnp.float32),
        jnp.float32(df),
    )
    return np.asarray(t, np.float64)[:, None], {"task": "regression", "df": df}


def _t_one(x: Array, y: Array, w: Array, df: Array) -> Array:
    """``|b| / se(b)`` of the weighted least-squares line of ``y`` on ``x`` (both (n,), case
    weights ``w`` (n,), ``df`` a scalar); a scalar, 0 for a constant ``x``."""
    total = jnp.sum(w)
    xc = x - jnp.sum(w * x) / total
    yc = y - jnp.sum(w * y) / total
    sxx = jnp.sum(w * xc * xc)
    safe = jnp.where(sxx > 0, sxx, 1.0)
    b = jnp.sum(w * xc * yc) / safe
    s2 = jnp.sum(w * (yc - b * xc) ** 2) / df
    return jnp.where(sxx > 0, jnp.abs(b) * jnp.sqrt(safe / s2), 0.0)


@jax.jit
def _t_kernel(X: Array, y: Array, w: Array, df: Array) -> Array:
    """``|t|`` of every column of ``X`` (n, p): (p,)."""
    return jax.vmap(_t_one, in_axes=(1, None, None, None))(X, y, w, df)


# ----------------------------------------------------------------------------- LOESS


def _loess_importance(
    X: np.ndarray, y: np.ndarray, weights: np.ndarray, span: float, surface: str,
    names: tuple[str, ...], weighted_r2: bool,
):
    """LOESS pseudo R^2 of every column, shape (p, 1)."""
    n, p = X.shape
    q = _neighbours(span, n)
    w = weights / weights.mean()
    Xs = _standardize(X, w)
    ys = _standardize(y[:, None], w)[:, 0]
    constant = np.ptp(X, axis=0) == 0
    if surface == "direct":
        at = Xs  # a local fit at every row
    else:  # local fits at the ends of the kd-tree's cells, as many for every column
        cell_rows = math.floor(n * (span * _CELL))  # R passes span * cell to its Fortran
        ends = [_cell_ends(Xs[:, j], cell_rows) if not constant[j] else np.array([-1.0, 1.0])
                for j in range(p)]
        width = max(e.size for e in ends)
        at = np.stack([np.pad(e, (0, width - e.size), mode="edge") for e in ends], axis=1)
    value, slope, radius = (np.asarray(a, np.float64) for a in _loess_kernel(
        jnp.asarray(Xs, jnp.float32), jnp.asarray(ys, jnp.float32), jnp.asarray(w, jnp.float32),
        jnp.asarray(at, jnp.float32), q=q, stretch=float(np.sqrt(max(1.0, span))),
        batch=max(1, min(at.shape[0], _BATCH_ELEMENTS // (p * q)))))
    if surface == "direct":
        fitted = value.T
    else:
        fitted = np.stack([_hermite(Xs[:, j], ends[j], value[j], slope[j]) for j in range(p)], 1)
    # caret scores a feature with fewer than 20% distinct values (nearZeroVar's
    # percentUnique), or one whose LOESS fails, by a straight line's R^2 instead
    present = weights > 0
    distinct = np.array([np.unique(X[present, j]).size for j in range(p)])
    linear = ~constant & ((100 * distinct < 20 * np.count_nonzero(present))
                          | (radius.min(axis=1) <= 0))
    fitted = np.where(linear, _line_fits(Xs, ys, w), fitted)
    summed = w if weighted_r2 else np.ones(n)  # caret: the weights enter the fits only
    mean = summed @ ys / summed.sum()
    r2 = 1.0 - (summed @ (ys[:, None] - fitted) ** 2) / (summed @ (ys - mean) ** 2)
    r2 = np.where(constant, 0.0, np.maximum(r2, 0.0))
    return r2[:, None], {"task": "regression", "span": span, "degree": 2, "surface": surface,
                         "linear": tuple(np.asarray(names)[linear].tolist())}


def _line_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted least-squares line of ``y`` on each column of ``X`` at the rows (n, p),
    float64 (the mean of ``y`` for a constant column)."""
    w = weights / weights.sum()
    xc = X - w @ X
    sxx = w @ xc ** 2
    slope = w @ (xc * (y - w @ y)[:, None]) / np.where(sxx > 0, sxx, 1.0)
    return w @ y + xc * slope


def _cell_ends(x: np.ndarray, cell_rows: int) -> np.ndarray:
    """The sorted ends of the cells of R's LOESS kd-tree on one feature ``x`` (n,), the points
    where the surface is fitted (``loess``'s vertices, built by its Fortran ``ehg126`` and
    ``ehg124`` for one dimension).

    The feature's range, widened by 0.5% at each end, is one cell; a cell of more than
    ``cell_rows`` rows is cut at the value of its median row (position ``floor((l + u) / 2)``
    of its rows ``l..u`` in sorted order, 1-based), moved to the nearest position, alternately
    above and below, where the next row's value differs, so that ties stay in one child; a cut
    at one of the cell's ends leaves it whole. Cells are cut in the order they are made, while
    R's workspace (``max(200, n)`` cells and ends) has room.
    """
    xs = np.sort(x)
    n = xs.size
    low, high = xs[0], xs[-1]
    margin = 0.005 * max(high - low, 1e-10 * max(abs(low), abs(high)) + 1e-30)
    ends = [low - margin, high + margin]
    room = max(200, n)
    cells = collections.deque([(0, n - 1, ends[0], ends[1])])  # rows l..u (0-based), ends
    n_cells = 1
    while cells:
        l, u, left, right = cells.popleft()
        if u - l + 1 <= cell_rows or right <= left or room < n_cells + 2 or room < len(ends) + 1:
            continue
        m = (l + u + 2) // 2 - 1
        offset = 0
        while l <= m + offset < u:
            if xs[m + offset] != xs[m + offset + 1]:
                m += offset
                break
            offset = -offset
            if offset >= 0:
                offset += 1
        cut = xs[m]
        if cut == left or cut == right:
            continue
        ends.append(cut)
        n_cells += 2
        cells.extend([(l, m, left, cut), (m + 1, u, cut, right)])
    return np.sort(np.asarray(ends))


def _hermite(x: np.ndarray, ends: np.ndarray, value: np.ndarray, slope: np.ndarray):
    """At each of ``x`` (n,), the cubic Hermite interpolant of the ``value`` and ``slope`` given
    at the sorted cell ``ends`` (m,) (padded entries beyond them are ignored) over the cell
    holding it (a value on an end belongs to the cell below, as in R's ``ehg128``)."""
    m = ends.size
    cell = np.clip(np.searchsorted(ends, x, side="left") - 1, 0, m - 2)
    left, right = ends[cell], ends[cell + 1]
    width = right - left
    h = (x - left) / width
    return ((1 - h) ** 2 * (1 + 2 * h) * value[cell] + h ** 2 * (3 - 2 * h) * value[cell + 1]
            + (h * (1 - h) ** 2 * slope[cell] - h ** 2 * (1 - h) * slope[cell + 1]) * width)


def _window(x0: Array, xs: Array, q: int) -> tuple[Array, Array]:
    """The ``q`` nearest rows of the scalar ``x0`` among the sorted ``xs`` (n,): they are the
    contiguous window ``xs[start:start + q]`` that minimizes its farthest distance to ``x0``;
    that distance is the ``q``-th smallest distance. Returns (start, distance).

    The window's near end moves away as its far end moves in, so the best start is where
    ``xs[s] + xs[s + q - 1]`` crosses ``2 x0`` (a binary search), or the one before it.
    """
    n = xs.shape[0]
    ends = xs[: n - q + 1] + xs[q - 1 :]  # non-decreasing in the start
    after = jnp.clip(jnp.searchsorted(ends, 2 * x0, side="left"), 0, n - q)
    before = jnp.maximum(after - 1, 0)

    def farthest(start):
        return jnp.maximum(x0 - xs[start], xs[start + q - 1] - x0)

    far_after, far_before = farthest(after), farthest(before)
    start = jnp.where(far_after <= far_before, after, before)
    return start, jnp.minimum(far_after, far_before)


def _loess_point(
    x0: Array, xs: Array, ys: Array, ws: Array, q: int, stretch: float
) -> tuple[Array, Array, Array]:
    """Local quadratic fit at the scalar ``x0`` on its ``q`` nearest rows of the rows sorted by
    ``xs`` (``xs``, ``ys``, ``ws`` (n,)): three scalars, the fitted value, its slope and the
    radius.

    Every row of positive tricube weight (distance < radius) lies in the window.
    """
    start, radius = _window(x0, xs, q)
    radius = radius * stretch
    near = [jax.lax.dynamic_slice(v, (start,), (q,)) for v in (xs, ys, ws)]
    safe = jnp.where(radius > 0, radius, 1.0)
    u = (near[0] - x0) / safe
    r = jnp.abs(u)
    tricube = jnp.where(r < 1, (1 - jnp.minimum(r, 1.0) ** 3) ** 3, 0.0)
    root = jnp.sqrt(tricube * near[2])
    design = root[:, None] * jnp.stack([jnp.ones_like(u), u, u * u], axis=1)
    beta = jnp.linalg.lstsq(design, root * near[1], rcond=_RCOND)[0]
    return beta[0], beta[1] / safe, radius  # at x0, u = 0


def _loess_one(
    x: Array, y: Array, w: Array, at: Array, q: int, stretch: float, batch: int
) -> tuple[Array, Array, Array]:
    """The LOESS fit of ``y`` on ``x`` (both (n,), case weights ``w`` (n,)) at the points
    ``at`` (m,): fitted values, slopes and radii, (m,) each. The rows are sorted by ``x``
    once."""
    order = jnp.argsort(x)
    point = functools.partial(_loess_point, xs=x[order], ys=y[order], ws=w[order], q=q,
                              stretch=stretch)
    return jax.lax.map(point, at, batch_size=batch)


@functools.partial(jax.jit, static_argnames=("q", "stretch", "batch"))
def _loess_kernel(
    X: Array, y: Array, w: Array, at: Array, *, q: int, stretch: float, batch: int
) -> tuple[Array, Array, Array]:
    """The LOESS fits of ``y`` on every column of ``X`` (n, p) at that column's points of
    ``at`` (m, p): values, slopes and radii, (p, m) each."""
    one = functools.partial(_loess_one, q=q, stretch=stretch, batch=batch)
    return jax.vmap(one, in_axes=(1, None, None, 1))(X, y, w, at)
