"""Trend estimators: correlations against scipy.stats, the linear coefficient and its p-value
against a float64 least-squares reference, Shapley trends from test-side brute-force Shapley
values, and the sign error of the linear model on SYN2 (Gerstorfer et al. 2023)."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from jaximp.kernels import _decorrelation as K  # noqa: E402

from jaximp.methods._trends import ESTIMATORS, Trends, trends  # noqa: E402

stats = pytest.importorskip("scipy.stats")


def brute_force_shapley(predict, X: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Exact interventional Shapley values in float64 by enumerating all 2^p coalitions."""
    n, p = X.shape
    values = np.zeros((n, p))
    for coalition in itertools.product([False, True], repeat=p):
        mask = np.array(coalition)
        mixed = np.where(mask, X[:, None, :], background[None, :, :]).reshape(-1, p)
        v = np.asarray(predict(mixed), np.float64).reshape(n, len(background)).mean(axis=1)
        s = int(mask.sum())
        fact = math.factorial
        for j in range(p):
            if mask[j]:  # v(S) enters j's value with weight |S - j|! (p - |S|)! / p!
                values[:, j] += fact(s - 1) * fact(p - s) / fact(p) * v
            else:  # and v(S) for S without j with the weight of S, negated
                values[:, j] -= fact(s) * fact(p - s - 1) / fact(p) * v
    return values


def ols_reference(X: np.ndarray, y: np.ndarray):
    """Coefficients and two-sided p-values of least squares with an intercept, in float64."""
    A = np.column_stack([np.ones(len(y)), X])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    df = len(y) - A.shape[1]
    cov = resid @ resid / df * np.linalg.inv(A.T @ A)
    t = coef / np.sqrt(np.diag(cov))
    return coef[1:], 2 * stats.t.sf(np.abs(t[1:]), df)


def data(seed=0, n=120):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[:, 2] = np.round(X[:, 0] + 0.5 * rng.normal(size=n), 1)  # ties for the ranks
    y = 2 * X[:, 0] - X[:, 1] + 0.3 * X[:, 2] ** 3 + rng.normal(size=n)
    return X, y


# ------------------------------------------------------------------------------ kernels


def test_correlation_kernels_match_scipy_eager_jit_vmap():
    rng = np.random.default_rng(0)
    y = rng.normal(size=50)
    x = np.round(rng.normal(size=(4, 50)), 1)  # many ties
    x[0] += y
    # closed forms: a monotone transform of y has rho = 1, a falling line r = rho = -1
    x = np.concatenate([x, [np.exp(y / 3), 3 - 2 * y]])
    both = jax.jit(jax.vmap(lambda a, b: jnp.stack([K.pearson(a, b), K.spearman(a, b)]),
                            in_axes=(0, None)))
    values = np.asarray(both(jnp.asarray(x), jnp.asarray(y)))
    np.testing.assert_allclose(values[:, 0], [stats.pearsonr(r, y)[0] for r in x], atol=1e-6)
    np.testing.assert_allclose(values[:, 1], [stats.spearmanr(r, y)[0] for r in x], atol=1e-6)
    np.testing.assert_allclose(values[4, 1], 1.0, rtol=1e-6)
    np.testing.assert_allclose(values[5], -1.0, rtol=1e-6)
    eager = float(K.spearman(jnp.asarray(x[1]), jnp.asarray(y)))
    assert eager == pytest.approx(values[1, 1], rel=1e-6)
    np.testing.assert_allclose(K.average_ranks(jnp.asarray(x[1])), stats.rankdata(x[1]))


# ------------------------------------------------------------------------------ trends


def test_data_trends_match_scipy_and_float64_ols():
    X, y = data()
    shap = X - X.mean(axis=0)
    result = trends(None, X, y, shapley=shap, methods=["pearson", "spearman", "linear"])
    assert result.estimators == ("pearson", "spearman", "linear")
    assert result.output_names == ("y",) and result.values.shape == (3, 3, 1)  # (e, p, o)
    assert result.p_values.shape == result.info["linear_t"].shape == (3, 1)
    pearson = [stats.pearsonr(X[:, j], y)[0] for j in range(3)]
    spearman = [stats.spearmanr(X[:, j], y)[0] for j in range(3)]
    np.testing.assert_allclose(result.values[0, :, 0], pearson, atol=1e-6)
    np.testing.assert_allclose(result.values[1, :, 0], spearman, atol=1e-6)
    coef, p_values = ols_reference(X, y)
    np.testing.assert_allclose(result.values[2, :, 0], coef, rtol=1e-4)
    np.testing.assert_allclose(result.p_values[:, 0], p_values, rtol=1e-3, atol=1e-12)
    frame = result.to_frame()
    assert list(frame.columns) == ["feature", "estimator", "output", "value", "std", "p_value"]
    assert len(frame) == 9 and frame["std"].isna().all() and (frame["output"] == "y").all()
    np.testing.assert_allclose(frame.query("estimator == 'pearson'")["value"], pearson,
                               atol=1e-6)
    np.testing.assert_allclose(frame.query("estimator == 'linear'")["p_value"], p_values,
                               rtol=1e-3, atol=1e-12)


def test_shapley_trends_accept_arrays_objects_and_functions():
    X, y = data(1)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    shap = np.sin(X) + 0.1 * X**2  # any values: the trend is r(x, s) and rho(x, s)
    expected = [[stats.pearsonr(X[:, j], shap[:, j])[0] for j in range(3)],
                [stats.spearmanr(X[:, j], shap[:, j])[0] for j in range(3)]]
    methods = ["shapley_pearson", "shapley_spearman"]

    class Values:
        values = np.stack([np.zeros_like(shap), shap], axis=-1)  # (n, p, o)

    for given, output in [(shap, 0), (shap[:, :, None], 0), (Values(), 1),
                          (lambda model, X_: shap, 0)]:
        result = trends(object(), frame, y, shapley=given, methods=methods, output=output)
        assert result.feature_names == ("a", "b", "c")
        np.testing.assert_allclose(result.values[..., 0], expected, atol=1e-6)


def test_a_subset_where_a_feature_is_constant_gives_it_nan_estimates_there():
    """A rare binary feature is constant on some 70% subsets: there its estimates are NaN
    (no slope, no correlation) and the other features' linear slopes are the least squares
    without it; the spread is over the subsets where it varies (the call used to fail)."""
    rng = np.random.default_rng(0)
    n = 40
    X = np.c_[rng.normal(size=n), np.zeros(n)]
    X[:2, 1] = 1.0
    y = X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=n)
    result = trends(None, X, y, shapley=X - X.mean(0), n_bootstrap=30,
                    methods=["pearson", "linear"])
    from jaximp.engine import key_bits, rng_stream

    bits = key_bits(jax.random.key(0))
    subsets = [np.sort(rng_stream(bits, 3, b).choice(n, 28, replace=False)) for b in range(30)]
    constant = np.array([np.ptp(X[rows, 1]) == 0 for rows in subsets])
    assert constant.any() and not constant.all()
    reps = result.replicates[:, :, 0]  # (e, p, r)
    np.testing.assert_array_equal(np.isnan(reps[:, 1]), np.tile(constant, (2, 1)))
    for b in np.flatnonzero(constant):
        rows = subsets[b]
        slope = np.polyfit(X[rows, 0], y[rows], 1)[0]
        np.testing.assert_allclose(reps[1, 0, b], slope, rtol=1e-6)
    np.testing.assert_allclose(result.values_std[:, :, 0], np.nanstd(reps, axis=-1),
                               rtol=1e-12)
    assert np.all(np.isfinite(result.intervals()))


def test_correlations_are_of_the_float64_values():
    """Shapley values that differ by 1e-9 (equal in float32) keep their order: the Shapley
    Spearman trend is scipy's of the float64 values, also without jax_enable_x64."""
    from scipy import stats

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    y = X[:, 0] + rng.normal(size=60)
    shap = 1.0 + 1e-9 * np.column_stack([rng.permutation(60), X[:, 1]])
    assert len(np.unique(shap[:, 0].astype(np.float32))) < 60
    result = trends(None, X, y, shapley=shap, methods=["spearman", "shapley_spearman"])
    np.testing.assert_allclose(result.values[1, :, 0],
                               [stats.spearmanr(X[:, j], shap[:, j])[0] for j in range(2)],
                               rtol=1e-10)
    np.testing.assert_allclose(result.values[0, :, 0],
                               [stats.spearmanr(X[:, j], y)[0] for j in range(2)], rtol=1e-10)
    # values distinct only far below the column's mean stay distinct (not centred first)
    x = np.array([0.0, 1e-20, 2e-20, 1.0, 2.0, 3.0, 4.0, 5.0])
    y = np.array([3.0, 1.0, 2.0, 4.0, 5.0, 6.0, 8.0, 7.0])
    result = trends(None, np.c_[x, np.arange(8.0) ** 2], y, methods=["spearman"])
    np.testing.assert_allclose(result.values[0, 0, 0], stats.spearmanr(x, y)[0], rtol=1e-12)


def test_bootstrap_without_and_with_refits():
    X, y = data(2)
    shap = X * np.array([2.0, -1.0, 0.5])
    methods = ["pearson", "linear", "shapley_pearson"]
    full = trends(None, X, y, shapley=shap, methods=methods, n_bootstrap=3, subsample=1.0)
    np.testing.assert_allclose(full.replicates, np.repeat(full.values[..., None], 3, -1),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(full.values_std, 0.0, atol=1e-5)
    half = trends(None, X, y, shapley=shap, methods=methods, n_bootstrap=4, subsample=0.5)
    assert half.replicates.shape == (3, 3, 1, 4)  # (e, p, o, r): replicates last
    np.testing.assert_allclose(half.values_std, half.replicates.std(axis=-1))
    assert np.all(half.values_std[0] > 0)
    frame = half.to_frame()
    low, high = np.quantile(half.replicates, [0.025, 0.975], axis=-1)
    np.testing.assert_allclose(frame["q025"], low.reshape(-1))
    np.testing.assert_allclose(frame["q975"], high.reshape(-1))
    assert list(frame.columns) == ["feature", "estimator", "output", "value", "std", "q025",
                                   "q975", "p_value"]

    calls = []

    def fit(X_, y_):
        calls.append(len(y_))
        coef = np.linalg.lstsq(np.c_[np.ones(len(y_)), X_], y_, rcond=None)[0]
        return lambda Z: coef[0] + np.asarray(Z) @ coef[1:]

    def linear_shapley(model, X_):  # a linear model's Shapley values: b_j (x_j - mean x_j)
        X_ = np.asarray(X_)
        slopes = np.array([model(np.eye(3)[j]) - model(np.zeros(3)) for j in range(3)])
        return (X_ - X_.mean(axis=0)) * slopes

    refit = trends(None, X, y, shapley=linear_shapley, fit=fit, methods=methods,
                   n_bootstrap=3, subsample=0.5)
    assert calls == [120, 60, 60, 60]
    # the Shapley trend of a linear model is the sign of its slope, on every subset
    np.testing.assert_allclose(np.abs(refit.replicates[2]), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(np.sign(refit.replicates[2]),
                                  np.sign(refit.replicates[1]))


def test_syn2_linear_coefficient_gets_the_sign_wrong():
    """On SYN2 the noisy copy A0 of X0 rises with y (r = 0.9), yet its least-squares
    coefficient is negative; the Shapley trends of a forest (and its transversal rate, where
    available) keep the positive sign, as the paper reports for the linear model."""
    from sklearn.ensemble import RandomForestRegressor
    from test_decorrelation import NAMES, syn

    X, y = syn(1)
    forest = RandomForestRegressor(20, max_depth=4, random_state=0, n_jobs=1).fit(X, y)
    shap = brute_force_shapley(forest.predict, X, X[:30])
    result = trends(forest, X, y, shapley=shap, feature_names=NAMES)
    value = {e: dict(zip(NAMES, result.values[k, :, 0]))
             for k, e in enumerate(result.estimators)}
    assert value["pearson"]["A0"] > 0.8 and value["spearman"]["A0"] > 0.8
    assert value["linear"]["A0"] < 0
    assert value["shapley_pearson"]["A0"] > 0.5 and value["shapley_spearman"]["A0"] > 0.5
    for name in ("X0", "X1"):  # the informative monotone features: every estimator agrees
        assert all(value[e][name] > 0 for e in result.estimators), name
    if "atr" in result.estimators:
        assert value["atr"]["A0"] > 0
    else:
        assert set(result.info["skipped"]) == {"atr", "rtr"}


def test_result_vocabulary():
    X, y = data(3)
    result = trends(None, X, y, shapley=X, methods=["pearson", "linear", "shapley_spearman"],
                    n_bootstrap=2)
    assert isinstance(result, Trends)
    text = repr(result)
    assert text.startswith("Trends(3 estimators x 3 features, 2 bootstrap subsets;")
    assert "array" not in text and len(text) < 300
    axes = result.plot()
    assert len(axes) == 3 and [ax.get_title() for ax in axes] == list(result.estimators)
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["x0", "x1", "x2"]
    plt.close("all")


def test_missing_pieces_are_skipped_or_refused():
    X, y = data(4)
    result = trends(None, X, y, shapley=X)  # no model: no transversal rates
    assert result.estimators == tuple(e for e in ESTIMATORS if e not in ("atr", "rtr"))
    assert "no model was given" in result.info["skipped"]["atr"]
    with pytest.raises(ValueError, match=r"no model was given .*needed for \['atr', 'rtr'\]"):
        trends(None, X, y, methods=["atr"])
    with pytest.raises(ValueError, match="not a scikit-learn tree ensemble"):
        trends(lambda Z: Z[:, 0], X, y, methods=["rtr"])


@pytest.mark.parametrize("kwargs, match", [
    (dict(methods=["pearson", "kendall"]), "methods must be a non-empty list of"),
    (dict(subsample=0.0), r"subsample must be a number in \(0, 1\]; got 0.0. The share of the "
     r"rows in each subset, e.g. 0.7."),
    (dict(n_bootstrap=1), "n_bootstrap must be 0 .no bootstrap. or an int >= 2; got 1"),
    (dict(shapley=np.zeros((5, 3))), r"shapley values must have shape \(n, p\) = \(120, 3\)"),
    (dict(shapley=np.zeros((120, 3)), fit=lambda X, y: None),
     "precomputed shapley values belong to one model"),
    (dict(output=1.5), "output must be an int"),
])
def test_validation_messages(kwargs, match):
    X, y = data()
    with pytest.raises((ValueError, TypeError), match=match):
        trends(None, X, y, **{"methods": ["pearson", "shapley_pearson"], **kwargs})


@pytest.mark.parametrize("n", [3, 16, 30, 64])
def test_correlations_of_a_constant_feature_are_nan(n):
    """A constant column has no correlation: NaN as scipy's, for every n (its float32 mean
    or mean rank can miss its value, which left a correlation of ~1e-7 at n = 30)."""
    rng = np.random.default_rng(1)
    constant, y = np.ones(n, np.float32), rng.normal(size=n).astype(np.float32)
    assert np.isnan(float(K.pearson(jnp.asarray(constant), jnp.asarray(y))))
    assert np.isnan(float(K.spearman(jnp.asarray(constant), jnp.asarray(y))))
    assert np.isnan(float(K.spearman(jnp.asarray(y), jnp.asarray(constant))))
    assert np.isfinite(float(K.spearman(jnp.asarray(y), jnp.asarray(y))))
