"""linear_importance against independent float64 references: NumPy least squares, a NumPy
Newton-Raphson logistic fit, nested-model F tests, and statsmodels when it is installed."""

import warnings

import numpy as np
import pandas as pd
import pytest

from jaximp.engine._precision import PrecisionWarning
from jaximp.methods._linear import linear_importance

RTOL = 1e-4  # float32 fits on centred and scaled columns


def with_intercept(X):
    return np.column_stack([np.ones(len(X)), X])


def ols_reference(X, y, w=None):
    """Float64 weighted least squares with an intercept: coefficients, t, covariance, RSS."""
    A = with_intercept(X)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    keep = w > 0  # R's lm: rows of weight 0 do not count in n
    A, y, sw = A[keep], y[keep], np.sqrt(w[keep])
    coef, *_ = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)
    rss = float(np.sum((sw * (y - A @ coef)) ** 2))
    n, k = A.shape
    cov = rss / (n - k) * np.linalg.inv((A * sw[:, None] ** 2).T @ A)
    return coef, coef / np.sqrt(np.diag(cov)), cov, rss


def newton_reference(X, y, w=None, iterations=100):
    """Float64 Newton-Raphson for logistic regression with an intercept: coefficients, z, cov."""
    A = with_intercept(X)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    b = np.zeros(A.shape[1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-A @ b))
        info = (A * (w * p * (1 - p))[:, None]).T @ A
        step = np.linalg.solve(info, A.T @ (w * (y - p)))
        b += step
        if np.max(np.abs(step)) < 1e-13:
            break
    p = 1 / (1 + np.exp(-A @ b))
    cov = np.linalg.inv((A * (w * p * (1 - p))[:, None]).T @ A)
    return b, b / np.sqrt(np.diag(cov)), cov


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 4))
    X[:, 1] = 5e4 + 1e3 * X[:, 1] + 0.5 * X[:, 0]  # far from 0, large scale, correlated
    X[:, 2] = 0.3 * X[:, 2]
    beta = np.array([1.0, -0.001, 6.0, 0.0])  # x3 has no effect
    eta = (X - X.mean(0)) @ beta
    return X, eta


def _assert_fit(info, coef, statistic):
    """Signed statistics, slopes and intercept of x0..x3 against a reference fit."""
    np.testing.assert_allclose([info["statistics"][f"x{j}"] for j in range(4)], statistic[1:],
                               rtol=RTOL)
    np.testing.assert_allclose([info["coefficients"][f"x{j}"] for j in range(4)], coef[1:],
                               rtol=RTOL)
    np.testing.assert_allclose(info["intercept"], coef[0], rtol=RTOL)


def test_gaussian_matches_lstsq(data):
    X, eta = data
    rng = np.random.default_rng(11)
    y = 3.0 + eta + rng.normal(size=len(eta))
    result = linear_importance(X, y)
    coef, t, _, rss = ols_reference(X, y)
    np.testing.assert_allclose(result.importances_mean[:, 0], np.abs(t[1:]), rtol=RTOL)
    info = result.info
    _assert_fit(info, coef, t)
    np.testing.assert_allclose(info["sigma"], np.sqrt(rss / (300 - 5)), rtol=RTOL)
    assert result.method == "linear_gaussian"
    assert result.output_names == ("y",)
    assert result.importances_std is None and result.importances is None
    assert info["statistic"] == {f"x{j}": "t" for j in range(4)}
    assert info["df_residual"] == 295
    assert result.importances_mean[3, 0] < 3.0 < 10.0 < result.importances_mean[2, 0]


def test_gaussian_sample_weights(data):
    X, eta = data
    rng = np.random.default_rng(12)
    y = eta + rng.normal(size=len(eta))
    w = rng.uniform(0.2, 3.0, size=len(y))
    w[:7] = 0.0
    result = linear_importance(X, y, sample_weight=w)
    coef, t, _, _ = ols_reference(X, y, w)
    np.testing.assert_allclose(result.importances_mean[:, 0], np.abs(t[1:]), rtol=RTOL)
    np.testing.assert_allclose(result.info["coefficients"]["x2"], coef[3], rtol=RTOL)
    assert result.info["n_obs"] == 293
    unweighted = linear_importance(X, y).importances_mean
    assert not np.allclose(unweighted, result.importances_mean, rtol=1e-3)


def test_features_selects_reported_only(data):
    X, eta = data
    rng = np.random.default_rng(13)
    y = eta + rng.normal(size=len(eta))
    full = linear_importance(X, y)
    part = linear_importance(X, y, features=["x2", "x0"])
    assert part.feature_names == ("x2", "x0")
    np.testing.assert_allclose(part.importances_mean[:, 0], full.importances_mean[[2, 0], 0],
                               rtol=1e-6)


def test_binomial_matches_newton_with_string_labels(data):
    X, eta = data
    rng = np.random.default_rng(14)
    event = rng.random(len(eta)) < 1 / (1 + np.exp(-(0.5 + eta)))
    labels = np.where(event, "yes", "no")  # "yes" > "no": the event coded 1
    result = linear_importance(X, labels, family="binomial")
    coef, z, _ = newton_reference(X, event.astype(float))
    np.testing.assert_allclose(result.importances_mean[:, 0], np.abs(z[1:]), rtol=RTOL)
    info = result.info
    _assert_fit(info, coef, z)
    assert result.method == "linear_binomial"
    assert info["classes"] == ("no", "yes") and info["positive_class"] == "yes"
    assert info["converged"] and 2 <= info["n_iter"] <= 10
    assert info["statistic"]["x0"] == "z"
    # the other labelling gives the same |z|
    flipped = linear_importance(X, np.where(event, 0, 1), family="binomial")
    np.testing.assert_allclose(flipped.importances_mean, result.importances_mean, rtol=RTOL)
    assert flipped.info["coefficients"]["x0"] * info["coefficients"]["x0"] < 0


def test_binomial_sample_weights_match_newton(data):
    X, eta = data
    rng = np.random.default_rng(15)
    y = (rng.random(len(eta)) < 1 / (1 + np.exp(-eta))).astype(float)
    w = rng.uniform(0.5, 2.0, size=len(y))
    result = linear_importance(X, y, family="binomial", sample_weight=w)
    _, z, _ = newton_reference(X, y, w)
    np.testing.assert_allclose(result.importances_mean[:, 0], np.abs(z[1:]), rtol=RTOL)


def test_binomial_matches_statsmodels(data):
    sm = pytest.importorskip("statsmodels.api")
    X, eta = data
    rng = np.random.default_rng(16)
    y = (rng.random(len(eta)) < 1 / (1 + np.exp(-eta))).astype(float)
    fit = sm.Logit(y, sm.add_constant(X)).fit(disp=0)
    z = fit.params / fit.bse
    result = linear_importance(X, y, family="binomial")
    np.testing.assert_allclose(result.importances_mean[:, 0], np.abs(z[1:]), rtol=RTOL)


@pytest.fixture(scope="module")
def onehot_data():
    rng = np.random.default_rng(1)
    n = 300
    level = rng.integers(0, 4, size=n)
    onehot = np.eye(4)[level]
    x = rng.normal(size=(n, 2))
    X = np.column_stack([x[:, 0], onehot, x[:, 1]])
    names = ["a", "c_red", "c_green", "c_blue", "c_gray", "b"]
    effect = np.array([0.0, 0.4, -0.3, 0.2])[level]
    return X, names, x, level, effect


def test_onehot_group_partial_f(onehot_data):
    X, names, x, level, effect = onehot_data
    rng = np.random.default_rng(20)
    y = x @ np.array([1.0, 0.5]) + effect + rng.normal(size=len(level))
    groups = {"color": ["c_red", "c_green", "c_blue", "c_gray"]}
    result = linear_importance(X, y, feature_names=names, groups=groups)
    assert result.feature_names == ("a", "color", "b")
    full = np.column_stack([x[:, 0], X[:, 2:5], x[:, 1]])  # c_red dropped as the reference
    _, t, _, rss_full = ols_reference(full, y)
    _, _, _, rss_reduced = ols_reference(x, y)
    n, k, q = len(y), 6, 3
    f_ref = ((rss_reduced - rss_full) / q) / (rss_full / (n - k))
    info = result.info
    np.testing.assert_allclose(info["statistics"]["color"], f_ref, rtol=RTOL)
    np.testing.assert_allclose(result.importances_mean[1, 0], np.sqrt(f_ref), rtol=RTOL)
    np.testing.assert_allclose(result.importances_mean[[0, 2], 0], np.abs(t[[1, 5]]),
                               rtol=RTOL)
    assert info["statistic"]["color"] == "F" and info["df"]["color"] == 3
    assert info["reference"]["color"] == "c_red"
    assert info["design_columns"]["color"] == ("c_green", "c_blue", "c_gray")
    assert info["coefficients"]["color"].shape == (3,)
    # the same data as a pandas categorical column: indicators with the first level dropped
    frame = pd.DataFrame({"a": x[:, 0], "color": pd.Categorical.from_codes(
        level, ["red", "green", "blue", "gray"]), "b": x[:, 1]})
    as_category = linear_importance(frame, y)
    np.testing.assert_allclose(as_category.importances_mean, result.importances_mean, rtol=RTOL)
    assert as_category.info["reference"]["color"] == "red"
    assert as_category.info["design_columns"]["color"] == (
        "color[green]", "color[blue]", "color[gray]")
    # as text, coded by its sorted labels: blue is the reference, the same fit
    as_text = linear_importance(frame.astype({"color": str}), y)
    np.testing.assert_allclose(as_text.importances_mean, result.importances_mean, rtol=RTOL)
    assert as_text.info["reference"]["color"] == "blue"
    assert as_text.info["design_columns"]["color"] == (
        "color[gray]", "color[green]", "color[red]")


def test_onehot_group_binomial_wald(onehot_data):
    X, names, x, level, effect = onehot_data
    rng = np.random.default_rng(21)
    eta = x @ np.array([1.0, 0.5]) + 3 * effect
    y = (rng.random(len(level)) < 1 / (1 + np.exp(-eta))).astype(float)
    groups = {"color": ["c_red", "c_green", "c_blue", "c_gray"]}
    result = linear_importance(X, y, family="binomial", feature_names=names, groups=groups)
    full = np.column_stack([x[:, 0], X[:, 2:5], x[:, 1]])
    b, z, cov = newton_reference(full, y)
    g = [2, 3, 4]
    wald = b[g] @ np.linalg.solve(cov[np.ix_(g, g)], b[g])
    info = result.info
    np.testing.assert_allclose(info["statistics"]["color"], wald, rtol=RTOL)
    np.testing.assert_allclose(result.importances_mean[1, 0], np.sqrt(wald / 3), rtol=RTOL)
    np.testing.assert_allclose(result.importances_mean[[0, 2], 0], np.abs(z[[1, 5]]),
                               rtol=RTOL)
    np.testing.assert_allclose(info["coefficients"]["color"], b[g], rtol=RTOL)
    assert info["statistic"]["color"] == "wald"


def test_nonconvergence_warns(data):
    X, eta = data
    rng = np.random.default_rng(17)
    y = (rng.random(len(eta)) < 1 / (1 + np.exp(-eta))).astype(float)
    with pytest.warns(RuntimeWarning, match=r"did not converge in max_iter=1 .*increase "
                                            r"max_iter"):
        result = linear_importance(X, y, family="binomial", max_iter=1)
    assert result.info["n_iter"] == 1 and not result.info["converged"]


def test_separation_warns():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(RuntimeWarning, match=r"separated.*'x0'"):
        result = linear_importance(X, y, family="binomial")
    assert not result.info["converged"]


def test_singular_design_raises(data):
    X, eta = data
    X = np.column_stack([X, X[:, 2]])
    with pytest.raises(ValueError, match=r"singular: columns \['x2', 'x4'\] are collinear"):
        linear_importance(X, eta)
    constant = np.column_stack([X[:, :2], np.full(len(X), 2.5)])
    with pytest.raises(ValueError, match=r"columns \['x2'\] are constant.*Drop them"):
        linear_importance(constant, eta)


def test_nearly_collinear_warns_under_float32(data):
    import jax

    if jax.config.jax_enable_x64:
        pytest.skip("float64 resolves the near collinearity")
    X, eta = data
    rng = np.random.default_rng(18)
    near = np.column_stack([X, X[:, 0] + 1e-5 * rng.normal(size=len(X))])
    with pytest.warns(PrecisionWarning, match=r"nearly collinear.*jax_enable_x64"):
        linear_importance(near, eta + rng.normal(size=len(eta)))


def test_bad_arguments(data):
    X, eta = data
    with pytest.raises(ValueError, match=r"family must be one of \('gaussian', 'binomial'\); "
                                         r"got 'poisson'"):
        linear_importance(X, eta, family="poisson")
    with pytest.raises(ValueError, match=r"exactly two classes; got 3"):
        linear_importance(X, np.arange(len(eta)) % 3, family="binomial")
    with pytest.raises(TypeError, match=r"numeric y.*family='binomial'"):
        linear_importance(X, np.where(eta > 0, "a", "b"))
    with pytest.raises(ValueError, match=r"max_iter must be an int >= 1"):
        linear_importance(X, eta > 0, family="binomial", max_iter=0)
    with pytest.raises(ValueError, match=r"tol must be a finite number >= 0"):
        linear_importance(X, eta, tol=-1.0)
    with pytest.raises(ValueError, match=r"both classes need rows of positive weight"):
        linear_importance(X, eta > 0, family="binomial", sample_weight=(eta > 0) * 1.0)
    with pytest.raises(ValueError, match=r"need n > k"):
        linear_importance(X[:5], eta[:5])


def test_frame_and_top(data):
    X, eta = data
    rng = np.random.default_rng(19)
    y = eta + rng.normal(size=len(eta))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = linear_importance(X, y)
    frame = result.to_frame()
    assert list(frame["importance"]) == sorted(frame["importance"], reverse=True)
    assert result.top(1) == ["x2"]
    assert frame["feature"].iloc[0] == "x2"
