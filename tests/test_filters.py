"""filter_importance against independent float64 references (scikit-learn, NumPy lstsq)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from jaximp.methods._filters import filter_importance

N = 200


def _data(seed=0, n=N):
    """Continuous columns, a tied (rounded) column and an offset column."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 3))
    X = np.column_stack([Z[:, 0], np.round(2 * Z[:, 1]), 1000.0 + 0.01 * Z[:, 2]])
    weights = rng.uniform(0.2, 3.0, size=n)
    return rng, X, weights


def _oriented_auc(y, score, weights=None):
    auc = roc_auc_score(y, score, sample_weight=weights)
    return max(auc, 1.0 - auc)


def _t_reference(x, y, weights=None):
    """|t| of the slope by float64 least squares on sqrt-weighted rows."""
    w = np.ones_like(y) if weights is None else weights
    root = np.sqrt(w)
    design = np.column_stack([np.ones_like(x), x]) * root[:, None]
    beta, _, _, _ = np.linalg.lstsq(design, y * root, rcond=None)
    resid = (y - beta[0] - beta[1] * x) * root
    sigma2 = resid @ resid / (len(y) - 2)
    cov = sigma2 * np.linalg.inv(design.T @ design)
    return abs(beta[1]) / np.sqrt(cov[1, 1])


def _local_fits(x, y, at, span=0.75, weights=None):
    """LOESS (degree 2, tricube) value and slope at each of ``at``, float64 loop: the
    quadratic in ``x - x0`` scaled by the radius, for conditioning. ``span > 1``: the radius
    times sqrt(span) (R's Fortran scales squared distances by the span)."""
    n = len(y)
    w = np.ones(n) if weights is None else weights
    q = min(n, int(np.floor(n * span + 1e-5)))  # loessc.c: floor(n * span + 1e-5) since R 4.0
    fits = np.empty((len(at), 2))
    for i, x0 in enumerate(at):
        d = np.abs(x - x0)
        dmax = np.sort(d)[q - 1] * np.sqrt(max(1.0, span))
        root = np.sqrt(np.where(d < dmax, (1 - (d / dmax) ** 3) ** 3, 0.0) * w)
        u = (x - x0) / dmax
        design = np.column_stack([np.ones(n), u, u**2])
        beta, _, _, _ = np.linalg.lstsq(design * root[:, None], y * root, rcond=None)
        fits[i] = beta[0], beta[1] / dmax
    return fits


def _kd_ends(x, span, cell=0.2):
    """The cell ends of R's loess kd-tree for one predictor (loessf.f: ehg126 widens the
    range by 0.5%, ehg124 cuts a cell of more than floor(n * (span * cell)) rows at its median
    row, moved off ties in the order 0, +1, -1, +2, ...; a cut at an end leaves the cell
    whole), recursively, with 1-based row numbers as in the Fortran."""
    xs = np.concatenate([[np.nan], np.sort(x)])  # xs[1..n]
    n = len(x)
    limit = int(np.floor(n * (span * cell)))  # loess.R passes span * cell to the Fortran
    low, high = xs[1], xs[n]
    margin = 0.005 * max(high - low, 1e-10 * max(abs(low), abs(high)) + 1e-30)
    ends = {low - margin, high + margin}

    def cut(first, last, left, right):
        if last - first + 1 <= limit or right - left <= 0:
            return
        m = (first + last) // 2
        for step in range(2 * n):
            offset = (step + 1) // 2 * (1 if step % 2 else -1) if step else 0
            if not first <= m + offset < last:
                break
            if xs[m + offset] != xs[m + offset + 1]:
                m += offset
                break
        if xs[m] in (left, right):
            return
        ends.add(xs[m])
        cut(first, m, left, xs[m])
        cut(m + 1, last, xs[m], right)

    cut(1, n, low - margin, high + margin)
    return np.array(sorted(ends))


def _loess_fitted(x, y, span=0.75, weights=None, surface="interpolate", at=None):
    """The LOESS surface at ``at`` (default: the rows): a local fit there (``"direct"``), or
    the cubic Hermite interpolant of the fits at the kd-tree's cell ends (R's default)."""
    at = x if at is None else np.asarray(at, float)
    if surface == "direct":
        return _local_fits(x, y, at, span, weights)[:, 0]
    ends = _kd_ends(x, span)
    fits = _local_fits(x, y, ends, span, weights)
    out = np.empty(len(at))
    for i, z in enumerate(at):
        k = max(1, int(np.searchsorted(ends, z, side="left")))  # ends[k-1] < z <= ends[k]
        a, b = ends[k - 1], ends[k]
        h = (z - a) / (b - a)
        out[i] = ((2 * h**3 - 3 * h**2 + 1) * fits[k - 1, 0] + (3 * h**2 - 2 * h**3) * fits[k, 0]
                  + ((h**3 - 2 * h**2 + h) * fits[k - 1, 1] + (h**3 - h**2) * fits[k, 1]) * (b - a))
    return out


def _r2(y, fitted, weights, weighted_sums):
    """1 - RSS / TSS, the sums weighted by the case weights or (caret's) not."""
    w = np.ones(len(y)) if weights is None or not weighted_sums else weights
    return 1.0 - np.sum(w * (y - fitted) ** 2) / np.sum(w * (y - np.average(y, weights=w)) ** 2)


def _line_reference(x, y, weights=None, weighted_sums=True):
    """R^2 of the weighted least-squares line (R's lm with case weights)."""
    w = np.ones(len(y)) if weights is None else weights
    A = np.column_stack([np.ones_like(x), x]) * np.sqrt(w)[:, None]
    coef = np.linalg.lstsq(A, y * np.sqrt(w), rcond=None)[0]
    return _r2(y, coef[0] + coef[1] * x, weights, weighted_sums)


def _caret_reference(x, y, span, weights=None, surface="interpolate", weighted_sums=True):
    """caret's nonpara filter: a line's R^2 below 20% distinct values, else LOESS's."""
    if 100 * np.unique(x).size < 20 * len(x):
        return max(0.0, _line_reference(x, y, weights, weighted_sums))
    return _loess_reference(x, y, span, weights, surface=surface, weighted_sums=weighted_sums)


def _loess_reference(x, y, span=0.75, weights=None, clip=True, surface="interpolate",
                     weighted_sums=True):
    """Pseudo R^2 of the reference LOESS fit (weighted sums with case weights, unless not)."""
    r2 = _r2(y, _loess_fitted(x, y, span, weights, surface), weights, weighted_sums)
    return max(0.0, r2) if clip else r2


# ----------------------------------------------------------------------------- AUC


@pytest.mark.parametrize("weighted", [False, True])
def test_auc_two_classes_matches_sklearn(weighted):
    rng, X, weights = _data(1)
    w = weights if weighted else None
    y = (X[:, 0] + X[:, 1] + rng.normal(size=N) > 0).astype(int)
    X = np.column_stack([X, -np.round(X[:, 0])])  # orientation < 0.5 and more ties
    result = filter_importance(X, y, method="auc", sample_weight=w)
    expected = [_oriented_auc(y, X[:, j], w) for j in range(X.shape[1])]
    assert result.method == "filter_auc"
    assert result.output_names == ("y",)
    assert result.importances_mean.shape == (4, 1)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-5, atol=1e-6)
    assert np.all(result.importances_mean >= 0.5)


@pytest.mark.parametrize("weighted", [False, True])
def test_auc_three_classes_is_max_over_pairs(weighted):
    rng, X, weights = _data(2)
    w = weights if weighted else None
    labels = np.array(["a", "b", "c"])[np.digitize(X[:, 0] + rng.normal(size=N), [-0.5, 0.5])]
    result = filter_importance(X, labels, sample_weight=w)  # auto: strings -> auc
    assert result.output_names == ("a", "b", "c")
    expected = np.zeros((X.shape[1], 3))
    for j in range(X.shape[1]):
        for k, cls in enumerate("abc"):
            best = 0.0
            for other in "abc":
                if other == cls:
                    continue
                rows = np.isin(labels, [cls, other])
                sw = None if w is None else w[rows]
                best = max(best, _oriented_auc(labels[rows] == cls, X[rows, j], sw))
            expected[j, k] = best
    np.testing.assert_allclose(result.importances_mean, expected, rtol=1e-5, atol=1e-6)
    assert result.top(1, output="a") == ["x0"]


def test_auc_with_four_classes_offers_carets_pairs():
    """From four classes caret's code (``outStat[, j] <- apply(Stat[, CombsN[, j]], 1, max)``,
    caret's R/filterVarImp.R) takes, for class j, the class pairs numbered by the two classes
    of the j-th pair in ``combn`` order; ``class_pairs="caret"`` gives that, the default the
    maximum over the pairs holding class j. Three classes: both agree."""
    rng, X, _ = _data(8)
    labels = np.digitize(X[:, 0] + rng.normal(size=N), [-1.0, 0.0, 1.0])  # classes 0..3
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]  # combn(4, 2) order
    stat = np.array([[_oriented_auc(labels[np.isin(labels, pair)] == pair[1],
                                    X[np.isin(labels, pair), j]) for pair in pairs]
                     for j in range(X.shape[1])])  # features x pairs
    carets = np.stack([stat[:, list(pairs[k])].max(axis=1) for k in range(4)], axis=1)
    holding = np.stack([stat[:, [m for m, pair in enumerate(pairs) if k in pair]].max(axis=1)
                        for k in range(4)], axis=1)
    assert np.abs(carets - holding).max() > 0.05  # the conventions differ here
    np.testing.assert_allclose(filter_importance(X, labels, method="auc").importances_mean,
                               holding, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        filter_importance(X, labels, method="auc", class_pairs="caret").importances_mean,
        carets, rtol=1e-5, atol=1e-6)
    three = np.minimum(labels, 2)
    np.testing.assert_array_equal(
        filter_importance(X, three, method="auc", class_pairs="caret").importances_mean,
        filter_importance(X, three, method="auc").importances_mean)


# ----------------------------------------------------------------------------- t


@pytest.mark.parametrize("weighted", [False, True])
def test_t_matches_lstsq(weighted):
    rng, X, weights = _data(3)
    w = weights if weighted else None
    y = 0.5 * X[:, 0] - 0.2 * X[:, 1] + 30.0 * (X[:, 2] - 1000.0) + rng.normal(size=N)
    result = filter_importance(X, y, method="t", sample_weight=w)
    expected = [_t_reference(X[:, j], y, w) for j in range(X.shape[1])]
    assert result.method == "filter_t" and result.output_names == ("y",)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-4)


# ----------------------------------------------------------------------------- LOESS


@pytest.mark.parametrize("surface", ["interpolate", "direct"])
@pytest.mark.parametrize("weighted,span", [(False, 0.75), (True, 0.75), (False, 0.3),
                                           (True, 1.5)])
def test_loess_matches_reference(weighted, span, surface):
    rng, X, weights = _data(4)
    w = weights if weighted else None
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + rng.normal(scale=0.5, size=N)
    options = {} if surface == "interpolate" else {"surface": surface}
    result = filter_importance(X, y, method="loess", sample_weight=w, span=span, **options)
    # the rounded column has fewer than 20% distinct values: a line's R^2, as caret's
    expected = [_caret_reference(X[:, j], y, span, w, surface) for j in range(X.shape[1])]
    assert result.method == "filter_loess" and result.info["span"] == span
    assert result.info.surface == surface
    assert result.info.linear == ("x1",)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("surface", ["interpolate", "direct"])
def test_weighted_r2_false_sums_as_caret(surface):
    """caret passes case weights to the fits only: its R^2 sums the unweighted residuals
    against the unweighted mean, clipped at 0."""
    rng, X, weights = _data(4)
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + rng.normal(scale=0.5, size=N)
    result = filter_importance(X, y, method="loess", sample_weight=weights, surface=surface,
                               weighted_r2=False)
    expected = [_caret_reference(X[:, j], y, 0.75, weights, surface, weighted_sums=False)
                for j in range(X.shape[1])]
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-4, atol=1e-5)
    weighted = filter_importance(X, y, method="loess", sample_weight=weights, surface=surface)
    assert not np.allclose(weighted.importances_mean, result.importances_mean)
    # caret's test (test-filterVarImp.R, "clamps negative pseudo R-squared values to zero"):
    # huge weights on two reversed extremes; the few-values path fits a weighted line
    y = np.r_[np.tile([10.0, 0.0, -10.0], 9), -100.0, 0.0, 100.0]
    x = np.tile([1.0, 2.0, 3.0], 10)[:, None]
    w = np.r_[np.full(27, 0.001), 1000.0, 0.001, 1000.0]
    assert _line_reference(x[:, 0], y, w, weighted_sums=False) < -8
    caret = filter_importance(x, y, method="loess", sample_weight=w, weighted_r2=False)
    assert caret.importances_mean[0, 0] == 0.0 and caret.info.linear == ("x0",)
    np.testing.assert_allclose(
        filter_importance(x, y, method="loess", sample_weight=w).importances_mean[0, 0],
        _line_reference(x[:, 0], y, w), rtol=1e-6)
    assert filter_importance(X, y=X[:, 0], method="loess", weighted_r2=False).importances_mean[
        0, 0] == filter_importance(X, y=X[:, 0], method="loess").importances_mean[0, 0]


@pytest.mark.parametrize("n,span,surface", [(100, 0.29, "direct"), (100, 0.29, "interpolate"),
                                            (50, 0.7, "interpolate")])
def test_loess_rounds_the_neighbourhood_and_cells_as_r(n, span, surface):
    """R counts floor(n * span + 1e-5) neighbours (100 * 0.29 is 28.999... in floating point:
    29 rows, not 28) and cells of floor(n * (span * 0.2)) rows (n = 50, span = 0.7: 6, where
    (n * span) * 0.2 gives 7); either off by one moved the R^2 by 1-4%."""
    rng = np.random.default_rng(n)
    X = rng.uniform(-2, 2, size=(n, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.5 * rng.normal(size=n)
    result = filter_importance(X, y, method="loess", span=span, surface=surface)
    expected = [_loess_reference(X[:, j], y, span, surface=surface) for j in range(2)]
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-4, atol=1e-5)


# R's documented output of ``predict(loess(dist ~ speed, cars), data.frame(speed = 5:25))``
# (the example of ?predict.loess, R's stats package), the default surface "interpolate"
_CARS_SPEED = np.array([4, 4, 7, 7, 8, 9, 10, 10, 10, 11, 11, 12, 12, 12, 12, 13, 13, 13, 13, 14,
                        14, 14, 14, 15, 15, 15, 16, 16, 17, 17, 17, 18, 18, 18, 18, 19, 19, 19,
                        20, 20, 20, 20, 20, 22, 23, 24, 24, 24, 24, 25], float)
_CARS_DIST = np.array([2, 10, 4, 22, 16, 10, 18, 26, 34, 17, 28, 14, 20, 24, 28, 26, 34, 34, 46,
                       26, 36, 60, 80, 20, 26, 54, 32, 40, 32, 40, 50, 42, 56, 76, 84, 36, 46,
                       68, 32, 48, 52, 56, 64, 66, 54, 70, 92, 93, 120, 85], float)
_CARS_PREDICTED = [7.797353, 10.002308, 12.499786, 15.281082, 18.446568, 21.865315, 25.517015,
                   29.350386, 33.230660, 37.167935, 41.205226, 45.055736, 48.355889, 49.824812,
                   51.986702, 56.461318, 61.959729, 68.569313, 76.316068, 85.212121, 95.324047]


def test_the_interpolated_loess_surface_is_rs():
    """The kd-tree, the fits at its cell ends and the interpolation reproduce R's documented
    predictions on the cars data (to its 6 decimals; the direct surface differs by up to
    0.73 there), and so does the float64 reference of these tests."""
    import jax.numpy as jnp

    from jaximp.methods import _filters

    speed, dist, at = _CARS_SPEED, _CARS_DIST, np.arange(5.0, 26.0)
    ends = _filters._cell_ends(speed, int(np.floor(50 * 0.75 * 0.2)))
    np.testing.assert_array_equal(ends, _kd_ends(speed, 0.75))
    value, slope, _ = _filters._loess_kernel(
        jnp.asarray(speed[:, None], jnp.float32), jnp.asarray(dist, jnp.float32),
        jnp.ones(50, jnp.float32), jnp.asarray(ends[:, None], jnp.float32), q=37, stretch=1.0,
        batch=ends.size)
    surface = _filters._hermite(at, ends, np.asarray(value[0], np.float64),
                                np.asarray(slope[0], np.float64))
    np.testing.assert_allclose(surface, _CARS_PREDICTED, atol=2e-5)  # float32 fits
    np.testing.assert_allclose(_loess_fitted(speed, dist, at=at), _CARS_PREDICTED, atol=6e-7)
    assert np.abs(_loess_fitted(speed, dist, at=at, surface="direct") - _CARS_PREDICTED).max() > 0.5
    expected = _loess_reference(speed, dist)
    assert filter_importance(speed[:, None], dist, method="loess").importances_mean[0, 0] == (
        pytest.approx(expected, rel=1e-6))


def test_loess_known_cases():
    rng = np.random.default_rng(5)
    x = rng.uniform(-2, 2, size=N)
    noise = rng.normal(size=N)
    X = np.column_stack([x, noise])
    quadratic = filter_importance(X, x**2, method="loess").importances_mean[:, 0]
    assert quadratic[0] == pytest.approx(1.0, abs=1e-5)
    assert quadratic[1] < 0.1
    independent = filter_importance(X, rng.normal(size=N), method="loess").importances_mean
    assert np.all(independent < 0.1)
    # a local quadratic cannot see y = x^2 through |t| of a line, but LOESS does
    assert filter_importance(X, x**2, method="t").importances_mean[0, 0] < 3.0


def test_loess_clipped_at_zero():
    # the LOESS smoother matrix L is not a projection: y = the top right singular vector of
    # (I - L)(I - 11'/n) has RSS > TSS, i.e. a negative pseudo R^2 before clipping
    rng = np.random.default_rng(6)
    x = rng.uniform(size=40)
    smoother = np.column_stack([_loess_fitted(x, e, 0.75, surface="direct") for e in np.eye(40)])
    residual_maker = (np.eye(40) - smoother) @ (np.eye(40) - 1 / 40)
    y = np.linalg.svd(residual_maker)[2][0]
    assert _loess_reference(x, y, clip=False, surface="direct") < -0.01
    X = np.column_stack([x, y + 0.01 * rng.normal(size=40)])
    result = filter_importance(X, y, method="loess", surface="direct")
    assert result.importances_mean[0, 0] == 0.0
    assert result.importances_mean[1, 0] == pytest.approx(
        _loess_reference(X[:, 1], y, surface="direct"), 1e-4)


def test_loess_where_ties_leave_a_neighbourhood_empty_is_a_lines_r2():
    """caret falls back to lm's R^2 where loess fails: here 40% of the rows share one value
    (with 60% distinct values), so the 30% nearest rows of that value span no width."""
    rng = np.random.default_rng(7)
    tied = np.where(rng.uniform(size=N) < 0.4, 0.0, rng.normal(size=N))
    X = np.column_stack([rng.normal(size=N), tied])
    y = X[:, 0] + tied ** 2 + rng.normal(size=N)
    result = filter_importance(X, y, method="loess", span=0.3)
    assert result.info.linear == ("x1",)
    assert result.importances_mean[1, 0] == pytest.approx(
        max(0.0, _line_reference(tied, y)), rel=1e-6, abs=1e-9)
    assert result.importances_mean[0, 0] == pytest.approx(
        _loess_reference(X[:, 0], y, 0.3), rel=1e-4, abs=1e-5)
    binary = filter_importance(np.column_stack([X[:, 0], tied > 0]), y, method="loess")
    assert binary.info.linear == ("x1",)  # 2 distinct values: under 20%


# ----------------------------------------------------------------------------- conventions


def test_auto_rule_and_categorical_codes():
    rng, X, _ = _data(8)
    y_float = X[:, 0] + rng.normal(size=N)
    assert filter_importance(X, y_float).method == "filter_t"
    assert filter_importance(X, (y_float > 0).astype(int)).method == "filter_auc"
    assert filter_importance(X, y_float > 0).method == "filter_auc"
    assert filter_importance(X, pd.Series(y_float > 0).map({True: "u", False: "v"}).astype(
        "category")).method == "filter_auc"
    numeric_categories = pd.Series(np.round(y_float).clip(-1, 1)).astype("category")
    assert filter_importance(X, numeric_categories).method == "filter_auc"
    codes = X.copy()
    codes[:, 1] -= codes[:, 1].min()
    as_cat = filter_importance(codes, y_float, categorical=[1], method="t")
    plain = filter_importance(codes, y_float, method="t")
    np.testing.assert_allclose(as_cat.importances_mean, plain.importances_mean)


def test_constant_feature_and_column_target():
    rng, X, _ = _data(9)
    X = np.column_stack([X[:, 0], np.full(N, 3.0)])
    y = X[:, 0] + rng.normal(size=N)
    assert filter_importance(X, y[:, None], method="t").importances_mean[1, 0] == 0.0
    assert filter_importance(X, y, method="loess").importances_mean[1, 0] == 0.0
    assert filter_importance(X, y > 0).importances_mean[1, 0] == 0.5


def test_to_frame_and_top():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(N, 4))
    y = 3 * X[:, 2] + rng.normal(size=N)
    result = filter_importance(X, y, feature_names=["a", "b", "c", "d"], features=["a", "c"])
    assert result.feature_names == ("a", "c")
    assert result.top(1) == ["c"]
    frame = result.to_frame()
    assert list(frame["feature"]) == ["c", "a"]
    assert frame["importance"].is_monotonic_decreasing
    assert result.importances_std is None and result.importances is None


@pytest.mark.parametrize(
    "kwargs,y,match",
    [
        ({"method": "gini"}, None, r"method must be one of \('auto', 'auc', 't', 'loess'\)"),
        ({}, np.zeros(N - 1), rf"y must have n = {N} rows like X; got {N - 1}"),
        ({"method": "t"}, np.array(["a", "b"] * (N // 2)), r"method='t' needs a numeric y.*"
                                                           r"method='auc'"),
        ({"method": "loess"}, np.ones(N), r"y is constant"),
        ({"method": "loess", "span": 0.01}, None, r"span=0.01 is too small.*span >="),
        ({"method": "loess", "span": -1.0}, None, r"span must be a positive finite number"),
        ({"method": "auc"}, np.zeros(N, int), r"at least two classes"),
        ({}, np.zeros((N, 2)), r"scores one target.*once per column"),
    ],
)
def test_bad_input_messages(kwargs, y, match):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(N, 3))
    y = rng.normal(size=N) if y is None else y
    with pytest.raises(ValueError, match=match):
        filter_importance(X, y, **kwargs)


@pytest.mark.parametrize("method", ["auc", "t", "loess"])
def test_multi_column_group_is_an_error(method):
    rng = np.random.default_rng(12)
    X = np.column_stack([rng.normal(size=N), np.eye(2)[rng.integers(0, 2, size=N)]])
    y = (X[:, 0] > 0).astype(int) if method == "auc" else X[:, 0] + rng.normal(size=N)
    with pytest.raises(ValueError, match=r"feature 'color' is a onehot group of 2 columns.*"
                                         r"Score its columns separately"):
        filter_importance(X, y, method=method, groups={"color": [1, 2]})
    ok = filter_importance(X, y, method=method, groups={"color": [1, 2]}, features=["x0"])
    assert ok.feature_names == ("x0",)


def test_statistics_do_not_depend_on_the_scale_of_a_column():
    """|t| and the LOESS pseudo-R^2 are invariant to scaling a column or y: at 1e160 the
    squares overflowed and at 1e-200 they vanished, and the feature scored 0 (or NaN)."""
    A = np.random.default_rng(0).normal(size=(30, 2))
    y = A[:, 0] + A[:, 1]
    for method in ("t", "loess"):
        plain = filter_importance(A, y, method=method).importances_mean
        for X, target in ((A * [1e160, 1.0], y), (A * [1e-200, 1.0], y), (A, y * 1e-200),
                          (A * [1e-310, 1.0], y * 1e200)):
            np.testing.assert_allclose(
                filter_importance(X, target, method=method).importances_mean, plain,
                rtol=1e-6)
