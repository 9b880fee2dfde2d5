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


def _loess_fitted(x, y, span=0.75, weights=None):
    """Direct LOESS (degree 2, tricube) at every point, float64 loop. The quadratic is in the
    globally standardized feature, only to keep [1, z, z^2] well conditioned."""
    n = len(y)
    w = np.ones(n) if weights is None else weights
    q = min(n, int(np.floor(span * n)))
    z = (x - x.mean()) / x.std()
    design = np.column_stack([np.ones(n), z, z**2])
    fitted = np.empty(n)
    for i in range(n):
        d = np.abs(x - x[i])
        dmax = np.sort(d)[q - 1] * max(1.0, span)
        root = np.sqrt(np.where(d < dmax, (1 - (d / dmax) ** 3) ** 3, 0.0) * w)
        beta, _, _, _ = np.linalg.lstsq(design * root[:, None], y * root, rcond=None)
        fitted[i] = design[i] @ beta
    return fitted


def _line_reference(x, y, weights=None):
    """R^2 of the weighted least-squares line (R's lm with case weights)."""
    w = np.ones(len(y)) if weights is None else weights
    A = np.column_stack([np.ones_like(x), x]) * np.sqrt(w)[:, None]
    coef = np.linalg.lstsq(A, y * np.sqrt(w), rcond=None)[0]
    rss = np.sum(w * (y - coef[0] - coef[1] * x) ** 2)
    return 1.0 - rss / np.sum(w * (y - np.average(y, weights=w)) ** 2)


def _caret_reference(x, y, span, weights=None):
    """caret's nonpara filter: a line's R^2 below 20% distinct values, else LOESS's."""
    if 100 * np.unique(x).size < 20 * len(x):
        return max(0.0, _line_reference(x, y, weights))
    return _loess_reference(x, y, span, weights)


def _loess_reference(x, y, span=0.75, weights=None, clip=True):
    """Pseudo R^2 of the reference LOESS fit (weighted sums with case weights)."""
    w = np.ones(len(y)) if weights is None else weights
    rss = np.sum(w * (y - _loess_fitted(x, y, span, weights)) ** 2)
    tss = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    return max(0.0, 1.0 - rss / tss) if clip else 1.0 - rss / tss


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


@pytest.mark.parametrize("weighted,span", [(False, 0.75), (True, 0.75), (False, 0.3),
                                           (True, 1.5)])
def test_loess_matches_direct_reference(weighted, span):
    rng, X, weights = _data(4)
    w = weights if weighted else None
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + rng.normal(scale=0.5, size=N)
    result = filter_importance(X, y, method="loess", sample_weight=w, span=span)
    # the rounded column has fewer than 20% distinct values: a line's R^2, as caret's
    expected = [_caret_reference(X[:, j], y, span, w) for j in range(X.shape[1])]
    assert result.method == "filter_loess" and result.info["span"] == span
    assert result.info.linear == ("x1",)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-4, atol=1e-5)


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
    smoother = np.column_stack([_loess_fitted(x, e, 0.75) for e in np.eye(40)])
    residual_maker = (np.eye(40) - smoother) @ (np.eye(40) - 1 / 40)
    y = np.linalg.svd(residual_maker)[2][0]
    assert _loess_reference(x, y, clip=False) < -0.01
    X = np.column_stack([x, y + 0.01 * rng.normal(size=40)])
    result = filter_importance(X, y, method="loess")
    assert result.importances_mean[0, 0] == 0.0
    assert result.importances_mean[1, 0] == pytest.approx(_loess_reference(X[:, 1], y), 1e-4)


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
