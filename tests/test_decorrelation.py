"""Decorrelation (residual-based) importance: the Gram-Schmidt kernel against float64 NumPy,
Algorithm 1 against a float64 reference with a deterministic inner model, and reduced versions
of the SYN2 / SYN3 experiments of Gerstorfer, Krieg & Hahn-Klimroth (2023)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from jaximp.kernels import _decorrelation as K

from jaximp import fit_mlp
from jaximp.methods._decorrelation import _all_gram_schmidt, decorrelation_importance

sklearn = pytest.importorskip("sklearn")
from sklearn.ensemble import RandomForestRegressor  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402

NAMES = ["X0", "X1", "X2", "A0", "A1", "A2"]


def syn(seed: int, n: int = 100, syn3: bool = False):
    """SYN2 (or SYN3): X0 ~ 3 N(0,1), X1 ~ 2 N(0,1), X2 ~ N(0,1) and noisy copies of X0.

    The printed target 4 X0^1.5 is undefined for negative X0; we use the odd power
    sign(X0) |X0|^1.5, which keeps the monotone trend."""
    rng = np.random.default_rng(seed)
    x0, x1, x2 = 3 * rng.normal(size=n), 2 * rng.normal(size=n), rng.normal(size=n)
    a0 = x0 + rng.normal(size=n)
    a1 = x0 + 10 * rng.normal(size=n)
    a2 = x0**2 + 10 * rng.normal(size=n)
    y = 4 * np.sign(x0) * np.abs(x0) ** 1.5
    if not syn3:
        y = y + 2 * x1 + 0.5 * x2**2
    return np.c_[x0, x1, x2, a0, a1, a2], y


def gram_schmidt_reference(F: np.ndarray, order) -> np.ndarray:
    """The textbook formula in float64: W_j = F_j - sum_i Cov(F_j, W_i) / Var(W_i) W_i, a
    residual that is zero up to rounding being no direction to project on."""
    W = np.zeros_like(F)
    for j, col in enumerate(order):
        w = F[:, col].copy()
        for i in order[:j]:
            wi = W[:, i]
            if np.var(wi) <= 1e-20 * np.var(F[:, i]):
                continue
            cov = np.mean((F[:, col] - F[:, col].mean()) * (wi - wi.mean()))
            w -= cov / np.var(wi) * (wi - wi.mean())
        W[:, col] = w
    return W


def forest(W, y):
    return RandomForestRegressor(10, max_depth=4, random_state=0, n_jobs=1).fit(W, y)


# ------------------------------------------------------------------------------ kernel


def test_gram_schmidt_matches_float64_decorrelates_eager_jit_vmap():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(60, 5)) @ rng.normal(size=(5, 5))  # correlated columns
    F[:, 3] = F[:, 0] + 0.05 * rng.normal(size=60)  # a nearly collinear pair
    orders = np.array([[3, 1, 0, 4, 2], [0, 1, 2, 3, 4], [4, 2, 3, 0, 1]])
    batched = np.asarray(_all_gram_schmidt(jnp.asarray(F), jnp.asarray(orders)), np.float64)
    for W, order in zip(batched, orders):
        np.testing.assert_allclose(W, gram_schmidt_reference(F, order),
                                   atol=2e-5 * np.abs(F).max())
        np.testing.assert_allclose(W[:, order[0]], F[:, order[0]], rtol=1e-6)
        np.testing.assert_allclose(W.mean(axis=0), F.mean(axis=0), atol=1e-5)
        # each residual is uncorrelated with every feature before it in the order
        for j in range(1, 5):
            for i in order[:j]:
                r = np.corrcoef(W[:, order[j]], F[:, i])[0, 1]
                assert abs(r) < 1e-4, (order, order[j], i, r)
    eager = np.asarray(K.gram_schmidt(jnp.asarray(F), jnp.asarray(orders[2])))
    jitted = np.asarray(jax.jit(K.gram_schmidt)(jnp.asarray(F), jnp.asarray(orders[2])))
    np.testing.assert_allclose(jitted, eager, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(batched[2], eager, rtol=1e-5, atol=1e-5)


def test_gram_schmidt_column_in_the_span_of_earlier_ones():
    rng = np.random.default_rng(1)
    F = rng.normal(size=(60, 5))
    F[:, 2] = F[:, 0] - 2 * F[:, 1]  # exactly in the span of columns 0 and 1
    orders = np.array([[0, 1, 2, 3, 4], [2, 0, 1, 4, 3], [1, 0, 4, 3, 2]])
    batched = np.asarray(_all_gram_schmidt(jnp.asarray(F), jnp.asarray(orders)), np.float64)
    # column 2 after columns 0 and 1: nothing left but its mean; the rest as the formula
    np.testing.assert_allclose(batched[0][:, 2], F[:, 2].mean(), atol=1e-4)
    np.testing.assert_allclose(batched[1][:, 1], F[:, 1].mean(), atol=1e-4)
    for W, order in zip(batched, orders):
        np.testing.assert_allclose(W, gram_schmidt_reference(F, order), atol=1e-4)


# ------------------------------------------------------------------- the algorithm itself


def test_algorithm_matches_float64_reference():
    """A deterministic inner model (least squares, importance |coef| sd(W)) makes the whole
    algorithm comparable with a float64 NumPy transcription, order by order."""
    X, y = syn(3, n=60)
    X = X[:, :4]

    def importance(model, W, y):
        return np.abs(model.coef_) * W.std(axis=0)

    def ols(W, y):
        return LinearRegression().fit(W, y)

    result = decorrelation_importance(X, y, ols, importance=importance, n_orders=4,
                                      random_state=5)
    orders = result.info["orders"]  # (p, n_orders, p), the target feature last
    p = X.shape[1]
    assert orders.shape == (p, 4, p) and np.all(orders[:, :, -1] == np.arange(p)[:, None])
    assert all(sorted(o) == list(range(p)) for o in orders.reshape(-1, p))
    raw = np.empty((p, 4))
    for i in range(p):
        for r in range(4):
            W = gram_schmidt_reference(X, orders[i, r])
            coef = np.linalg.lstsq(np.c_[np.ones(len(y)), W], y, rcond=None)[0][1:]
            raw[i, r] = abs(coef[i]) * W[:, i].std()
    weights = np.abs([np.corrcoef(X[:, i], y)[0, 1] for i in range(p)])  # |r| of a line fit
    weighted = weights[:, None] * raw
    expected = weighted / np.abs(weighted.mean(axis=1)).sum()
    np.testing.assert_allclose(result.info["weights"], weights, rtol=1e-5)
    np.testing.assert_allclose(result.importances[:, 0, :], expected, rtol=2e-3, atol=1e-6)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected.mean(axis=1),
                               rtol=2e-3)
    assert result.importances_mean.sum() == pytest.approx(1.0)
    low, high = result.intervals(0.9)
    assert np.all(low <= result.importances_mean) and np.all(result.importances_mean <= high)


def test_learned_residuals_by_least_squares_equal_gram_schmidt():
    """The in-sample residual of least squares on uncorrelated W's is the Gram-Schmidt one."""
    X, y = syn(4, n=60)
    X = X[:, [0, 1, 3]]

    def importance(model, W, y):
        return np.abs(model.coef_) * W.std(axis=0)

    def ols(W, y):
        return LinearRegression().fit(W, y)

    kwargs = dict(importance=importance, n_orders=2, random_state=1)
    linear = decorrelation_importance(X, y, ols, **kwargs)
    learned = decorrelation_importance(X, y, ols, residuals="learned", residual_fit=ols,
                                       **kwargs)
    np.testing.assert_allclose(learned.importances, linear.importances, rtol=2e-3, atol=1e-6)


def test_dataframe_input_and_weighting_off():
    X, y = syn(5, n=60)
    frame = pd.DataFrame(X[:, :3], columns=NAMES[:3])
    result = decorrelation_importance(frame, y, forest, n_orders=2, weighting=False)
    same = decorrelation_importance(X[:, :3], y, forest, n_orders=2, weighting=False,
                                    feature_names=NAMES[:3])
    assert result.feature_names == tuple(NAMES[:3]) and result.method == "decorrelation"
    np.testing.assert_array_equal(result.info["weights"], np.ones(3))
    np.testing.assert_allclose(result.importances, same.importances)
    raw = result.info["raw"]
    np.testing.assert_allclose(result.importances[:, 0, :], raw / raw.mean(axis=1).sum())


# ------------------------------------------------------------------------ SYN2 / SYN3


def test_syn2_informative_features_and_noisy_copies():
    X, y = syn(0)
    result = decorrelation_importance(X, y, forest, n_orders=3, feature_names=NAMES)
    share = dict(zip(NAMES, result.importances_mean[:, 0]))
    impurity = dict(zip(NAMES, forest(X, y).feature_importances_))
    # every informative feature gets a non-negligible share, far above its impurity share
    assert share["X0"] > 0.1
    for name in ("X1", "X2"):
        assert share[name] > 0.03 and share[name] > 3 * impurity[name], name
    # the noisy copies of X0 share the cluster's importance instead of leaving it all to X0,
    # and the very noisy A1 scores higher than under impurity importance
    cluster = ["X0", "A0", "A1", "A2"]
    assert all(share[name] > 0.003 for name in cluster)
    assert max(share[c] for c in cluster) < 0.8 * sum(share[c] for c in cluster)
    assert impurity["X0"] > 0.9 * sum(impurity[c] for c in cluster)
    assert share["A1"] > 3 * impurity["A1"]


def test_syn2_default_forest_shares_x0_with_its_copy_a0():
    """The paper's Figure 7: X0 and its slightly noisy copy A0 get roughly the same score. The
    default forest (a third of the features tried per split) shows it; a forest that tries
    every feature splits on the exact X0, leaving A0's residual given X0 (pure noise) little."""
    X, y = syn(0)
    shares = decorrelation_importance(X, y, n_orders=3, feature_names=NAMES).importances_mean
    share = dict(zip(NAMES, shares[:, 0]))
    every_feature = decorrelation_importance(X, y, forest, n_orders=3, feature_names=NAMES)
    greedy = dict(zip(NAMES, every_feature.importances_mean[:, 0]))
    assert share["A0"] > 0.35 * share["X0"]
    assert greedy["A0"] < 0.2 * greedy["X0"]
    assert all(share[name] > 0.05 for name in NAMES)  # every feature keeps a real share


def test_syn3_single_informative_feature():
    X, y = syn(0, syn3=True)
    result = decorrelation_importance(X, y, forest, n_orders=3, feature_names=NAMES)
    share = dict(zip(NAMES, result.importances_mean[:, 0]))
    assert share["X0"] > 0.1
    assert share["X0"] > max(share["X1"], share["X2"])
    assert all(share[name] > 0.003 for name in ("A0", "A1", "A2"))


@pytest.mark.slow  # compiling the vmapped Optax training costs ~10 s of CPU
def test_mlp_fits_are_batched_with_permutation_importance():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(80, 3))
    X[:, 2] = X[:, 0] + 0.5 * rng.normal(size=80)
    y = X[:, 0] + 0.5 * X[:, 1]
    fit = functools.partial(fit_mlp, hidden=(8,), steps=150)
    result = decorrelation_importance(X, y, fit, importance="permutation", n_orders=2,
                                      importance_options={"n_repeats": 2})
    assert result.importances.shape == (3, 1, 2)
    assert result.importances_mean.sum() == pytest.approx(1.0)
    assert result.top(1) == ["x0"]
    assert np.all(result.info["weights"][:2] > 0.3)


@pytest.mark.slow  # compiles the vmapped Optax training of the default residual regressor
def test_default_learned_residuals_by_batched_mlps():
    X, y = syn(2, n=80)
    X = X[:, [0, 1, 3]]
    result = decorrelation_importance(X, y, forest, residuals="learned", n_orders=2,
                                      feature_names=["X0", "X1", "A0"])
    assert result.importances.shape == (3, 1, 2) and result.info["residuals"] == "learned"
    assert result.importances_mean.sum() == pytest.approx(1.0)
    assert result.top(1) == ["X0"] and np.all(result.importances_mean > 0)


# ------------------------------------------------------------------------ validation


@pytest.mark.parametrize("kwargs, match", [
    (dict(residuals="qr"), r"residuals must be one of \('gram_schmidt', 'learned'\); got 'qr'"),
    (dict(n_orders=0), "n_orders must be an int >= 1; got 0"),
    (dict(importance="shap"), "importance must be one of"),
    (dict(weighting="yes"), "weighting must be True or False; got 'yes'"),
    (dict(residual_fit=forest), "residual_fit is used by residuals='learned' only"),
    (dict(importance_options={"n_repeats": 3}), "importance_options are passed to"),
    (dict(fit=fit_mlp), "importance='impurity' needs tree models, but fit is fit_mlp"),
    (dict(fit=functools.partial(fit_mlp, random_state=3), importance="pd"),
     r"fit=partial\(fit_mlp, ...\) must not set \['random_state'\]"),
])
def test_validation_messages(kwargs, match):
    X, y = syn(0, n=30)
    kwargs = {"fit": forest, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        decorrelation_importance(X, y, **kwargs)


def test_validation_of_data_and_inner_model():
    X, y = syn(0, n=30)
    with pytest.raises(ValueError, match="needs numeric features of one column each"):
        decorrelation_importance(pd.DataFrame({"a": X[:, 0], "b": pd.Categorical(X[:, 1] > 0)}),
                                 y, forest)
    with pytest.raises(ValueError, match=r"y must be a numeric array of shape \(30,\)"):
        decorrelation_importance(X, np.c_[y, y], forest)
    with pytest.raises(ValueError, match="importance='impurity' needs fit to return a fitted"):
        decorrelation_importance(X, y, lambda W, y: LinearRegression().fit(W, y), n_orders=1)
