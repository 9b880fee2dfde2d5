"""PD-based importance and the PD interaction statistic: closed forms, a float64 NumPy reference,
robust options, bootstrap, and Greenwell et al.'s (2018) Friedman experiment."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from conftest import random_mlp
from jaximp.kernels import (
    flatness,
    ice_importance,
    pd_importance_from_ice,
    pd_interaction_strength,
    weighted_average,
)
from scipy import stats

import jaximp
from jaximp import FeatureImportance, FeatureInteraction, pd_importance, pd_interaction

# ------------------------------------------------------------------------------------------
# A separately written float64 NumPy reference.
# ------------------------------------------------------------------------------------------


def ref_ice(f, X, cols, grid_rows):
    """ICE of the columns ``cols`` at each grid row: (n, g, o)."""
    out = []
    for z in grid_rows:
        Xr = X.copy()
        Xr[:, cols] = z
        out.append(np.asarray(f(Xr), np.float64).reshape(X.shape[0], -1))
    return np.stack(out, axis=1)


def ref_average(v, w, average, trim=0.1):
    if average == "mean":
        return float(np.sum(v * w) / np.sum(w))
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    total = w.sum()
    if average == "median":
        cum = np.cumsum(w)
        low = v[np.nonzero(cum >= total / 2)[0][0]]
        high = v[np.nonzero(cum > total / 2)[0][0]]
        return float((low + high) / 2)
    lo, hi, start, acc, kept = trim * total, (1 - trim) * total, 0.0, 0.0, 0.0
    for value, weight in zip(v, w):
        a, b = max(start, lo), min(start + weight, hi)
        if b > a:
            acc += (b - a) * value
            kept += b - a
        start += weight
    return acc / kept


def ref_flatness(v, measure):
    if measure == "sd":
        return float(np.std(v, ddof=1))
    if measure == "range4":
        return float((v.max() - v.min()) / 4)
    # R's stats::mad (R 4.x, src/library/stats/R/mad.R): constant = 1.4826, exactly
    return float(1.4826 * np.median(np.abs(v - np.median(v))))


def ref_pd(ice, w, average, trim=0.1):
    """(n, g, o) ICE -> (g, o) PD."""
    _, g, o = ice.shape
    return np.array([[ref_average(ice[:, k, j], w, average, trim) for j in range(o)]
                     for k in range(g)])


def ref_importance(ice, w, measure, average, ice_variant, trim=0.1):
    o = ice.shape[2]
    if ice_variant:
        return np.array([ref_average(np.array([ref_flatness(c, measure) for c in ice[:, :, j]]),
                                     w, average, trim) for j in range(o)])
    pd_go = ref_pd(ice, w, average, trim)
    return np.array([ref_flatness(pd_go[:, j], measure) for j in range(o)])


def ref_interaction(pd2, m1="sd", m2="sd"):
    """2-D PD (g1, g2) -> the seed's statistic."""
    imp1 = np.array([ref_flatness(pd2[:, b], m1) for b in range(pd2.shape[1])])
    imp2 = np.array([ref_flatness(pd2[a, :], m2) for a in range(pd2.shape[0])])
    return (ref_flatness(imp1, m2) + ref_flatness(imp2, m1)) / 2


# ------------------------------------------------------------------------------------------
# Closed forms.
# ------------------------------------------------------------------------------------------


def test_linear_model_importance_is_coefficient_times_grid_sd():
    """Seed 002 section 3.1: Y = 1 + 3 X1 - 5 X2 + e, X ~ U(0, 1), n = 1000, an OLS fit."""
    rng = np.random.default_rng(2018)
    X = rng.uniform(size=(1000, 2))
    y = 1 + 3 * X[:, 0] - 5 * X[:, 1] + rng.normal(scale=0.01, size=1000)
    coef, *_ = np.linalg.lstsq(np.column_stack([np.ones(1000), X]), y, rcond=None)
    model = lambda X: coef[0] + X @ jnp.asarray(coef[1:], jnp.float32)  # noqa: E731
    imp = pd_importance(model, X, feature_names=["X1", "X2"])
    for j, name in enumerate(["X1", "X2"]):
        grid = np.asarray(imp.info["grid_values"][name])
        assert grid.size == 51 and grid[0] == X[:, j].min() and grid[-1] == X[:, j].max()
        expected = abs(coef[j + 1]) * np.std(grid, ddof=1)
        assert imp.importances_mean[j, 0] == pytest.approx(expected, rel=1e-5)
    ratio = imp.importances_mean[1, 0] / imp.importances_mean[0, 0]
    assert ratio == pytest.approx(5 / 3, abs=0.02)  # the seed reports 1.65
    assert imp.top(2) == ["X2", "X1"] and imp.method == "pd"
    # On one common grid the ratio is exactly |b2 / b1|.
    same = {"X1": np.linspace(0, 1, 51), "X2": np.linspace(0, 1, 51)}
    imp = pd_importance(model, X, feature_names=["X1", "X2"], grid=same)
    assert imp.importances_mean[1, 0] / imp.importances_mean[0, 0] == pytest.approx(
        abs(coef[2] / coef[1]), rel=1e-5)


EFFECT = np.array([0.0, 2.0, -1.0, 5.0])


def _categorical_model(X):
    return X[:, 0] + jnp.take(jnp.asarray(EFFECT, jnp.float32), X[:, 1].astype(jnp.int32))


def test_recursion_pds_of_a_tree_model_as_alibis_tree_variance():
    """method="recursion": the sd of scikit-learn's recursion PD of each feature (alibi's
    TreePartialDependenceVariance), which differs from the brute-force PD's; options that
    need rows of X are refused by name."""
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.inspection import partial_dependence

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    model = GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0).fit(
        X, X[:, 0] ** 2 + np.sin(2 * X[:, 1]) + 0.1 * X[:, 2])
    grid = dict(grid="sklearn", grid_resolution=100, percentiles=(0, 1))
    result = pd_importance(model, X, method="recursion", **grid)
    expected = [np.std(partial_dependence(model, X, [j], method="recursion", **{
        k: v for k, v in grid.items() if k != "grid"})["average"][0], ddof=1) for j in range(3)]
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-6)
    np.testing.assert_array_equal(
        jaximp.Explainer(model, X).pd_importance(method="recursion", **grid).importances_mean,
        result.importances_mean)
    brute = pd_importance(model, X, **grid).importances_mean[:, 0]
    assert np.abs(brute - expected).max() > 1e-3
    with pytest.raises(ValueError, match=r"\['ice', 'n_bootstrap'\] do not apply"):
        pd_importance(model, X, method="recursion", ice=True, n_bootstrap=2)
    # the interaction of each pair from scikit-learn's 2-D recursion PD: the sd over one
    # feature's grid of the sd over the other's, both ways, averaged
    pairs = [(0, 1), (0, 2), (1, 2)]
    interaction = jaximp.pd_interaction(model, X, pairs=pairs, method="recursion", **grid)
    expected = []
    for pair in pairs:
        surface = partial_dependence(model, X, list(pair), method="recursion", **{
            k: v for k, v in grid.items() if k != "grid"})["average"][0]
        expected.append((np.std(np.std(surface, axis=0, ddof=1), ddof=1)
                         + np.std(np.std(surface, axis=1, ddof=1), ddof=1)) / 2)
    np.testing.assert_allclose(interaction.values[:, 0], expected, rtol=1e-6)
    np.testing.assert_array_equal(
        jaximp.Explainer(model, X).pd_interaction(pairs=pairs, method="recursion",
                                                  **grid).values, interaction.values)
    with pytest.raises(ValueError, match=r"\['average'\] do not apply"):
        jaximp.pd_interaction(model, X, method="recursion", average="median")
    # without grid_resolution a grid other than pdp's takes 51 points with either method
    default = pd_importance(model, X, method="recursion", grid="sklearn",
                            percentiles=(0, 1)).importances_mean[:, 0]
    expected = [np.std(partial_dependence(model, X, [j], method="recursion", grid_resolution=51,
                                          percentiles=(0, 1))["average"][0], ddof=1)
                for j in range(3)]
    np.testing.assert_allclose(default, expected, rtol=1e-6)


def test_categorical_feature_uses_range_over_four():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(size=40), rng.integers(0, 4, size=40)])
    imp = pd_importance(_categorical_model, X, feature_names=["x", "c"], categorical=["c"])
    assert imp.info["measure"] == {"x": "sd", "c": "range4"}
    assert imp.importances_mean[1, 0] == pytest.approx(6 / 4, rel=1e-6)
    forced = pd_importance(_categorical_model, X, feature_names=["x", "c"], categorical=["c"],
                           measure="sd", features="c")
    assert forced.importances_mean[0, 0] == pytest.approx(np.std(EFFECT, ddof=1), rel=1e-6)
    # A one-hot block is one categorical feature with the same importance.
    onehot = np.eye(4)[X[:, 1].astype(int)]
    Xo = np.column_stack([X[:, 0], onehot])
    f_onehot = lambda X: X[:, 0] + X[:, 1:] @ jnp.asarray(EFFECT, jnp.float32)  # noqa: E731
    imp_o = pd_importance(f_onehot, Xo, feature_names=["x", "a", "b", "c", "d"],
                          groups={"level": ["a", "b", "c", "d"]})
    assert imp_o.feature_names == ("x", "level")
    assert imp_o.importances_mean[1, 0] == pytest.approx(6 / 4, rel=1e-6)


def test_pd_interaction_of_product_on_51_point_grids_is_product_of_grid_sds():
    X = np.random.default_rng(2).uniform(size=(30, 2))
    grids = {"x0": np.linspace(0, 1, 51), "x1": np.linspace(0, 1, 51)}
    res = pd_interaction(lambda X: X[:, 0] * X[:, 1], X, grid=grids)
    sd = np.std(np.linspace(0, 1, 51), ddof=1)
    assert res.values[0, 0] == pytest.approx(sd * sd, rel=1e-5)
    # grids with negative values: the flatness of v * z is |v| sd(z)
    signed = {"x0": np.linspace(-1, 1, 21), "x1": np.linspace(-0.5, 2, 11)}
    res = pd_interaction(lambda X: X[:, 0] * X[:, 1], X, grid=signed)
    sd = {k: np.std(g, ddof=1) for k, g in signed.items()}
    sd_abs = {k: np.std(np.abs(g), ddof=1) for k, g in signed.items()}
    assert res.values[0, 0] == pytest.approx(
        (sd["x0"] * sd_abs["x1"] + sd_abs["x0"] * sd["x1"]) / 2, rel=1e-5)


def test_additive_model_has_zero_pd_interaction():
    X = np.random.default_rng(3).normal(size=(25, 3))
    res = pd_interaction(lambda X: jnp.sin(X[:, 0]) + X[:, 1] ** 2 + 3 * X[:, 2], X,
                         grid_resolution=9)
    scale = pd_importance(lambda X: jnp.sin(X[:, 0]) + X[:, 1] ** 2 + 3 * X[:, 2], X,
                          grid_resolution=9).importances_mean.max()
    assert np.all(np.abs(res.values) < 1e-5 * scale)


def test_explicit_grid_of_one_feature_leaves_the_others_on_pdps_grid():
    """vip's importance of a factor with an unused level needs all its levels as the grid;
    the features the dict does not name keep the function's default grid, pdp's, not
    partial dependence's scikit-learn default."""
    X = np.column_stack([np.tile([0.0, 1.0, 3.0], 20), np.linspace(-2, 5, 60)])

    def f(A):
        return A[:, 0] ** 2 + jnp.sin(A[:, 1])

    named = pd_importance(f, X, grid={"x0": [0.0, 1.0, 2.0, 3.0]})
    assert named.info.grid_values["x0"] == (0.0, 1.0, 2.0, 3.0)
    np.testing.assert_allclose(named.info.grid_values["x1"], np.linspace(-2, 5, 51))
    plain = pd_importance(f, X)
    assert named.importances_mean[1, 0] == pytest.approx(plain.importances_mean[1, 0],
                                                          rel=1e-12)


def test_measures_of_a_float64_model_carry_no_float32_rounding():
    """The flatness and interaction measures run in float64 on the float64 PDs: a float64
    host model's importance equals a float64 NumPy reference to 1e-12, and an additive
    model's interaction is 0 to 1e-12 of its importances (float32 measures left ~1e-7)."""

    class Host:
        def __init__(self, f):
            self.f = f

        def predict(self, X):
            return self.f(np.asarray(X, np.float64))

    X = np.random.default_rng(5).normal(size=(40, 3)) + 100.0  # offsets cost float32 digits
    product = Host(lambda A: A[:, 0] * A[:, 1] + np.exp(A[:, 2] - 100))
    got = pd_importance(product, X, grid_resolution=7).importances_mean[:, 0]
    for j in range(3):
        grid = np.linspace(X[:, j].min(), X[:, j].max(), 7)
        pd = [product.predict(np.where(np.arange(3) == j, z, X)).mean() for z in grid]
        assert got[j] == pytest.approx(np.std(pd, ddof=1), rel=1e-12)
    additive = Host(lambda A: np.sin(A[:, 0]) + A[:, 1] ** 2 + 3 * A[:, 2])
    scale = pd_importance(additive, X, grid_resolution=9).importances_mean.max()
    res = pd_interaction(additive, X, grid_resolution=9)
    assert np.abs(res.values).max() < 1e-12 * scale


# ------------------------------------------------------------------------------------------
# Against the NumPy reference on random small MLPs (two outputs, case weights).
# ------------------------------------------------------------------------------------------

F2, F2_NP, _ = random_mlp(30, sizes=(3, 10, 10, 2))
X30 = np.random.default_rng(31).normal(size=(30, 3))
W30 = np.random.default_rng(32).uniform(0.2, 2.0, size=30)


@pytest.mark.parametrize(
    "ice, measure, average",
    [(False, "auto", "mean"), (False, "mad", "median"), (True, "sd", "trimmed"),
     (True, "range4", "mean"), (False, "sd", "trimmed")],
)
def test_importance_matches_numpy_reference(ice, measure, average):
    imp = pd_importance(F2, X30, ice=ice, measure=measure, average=average, trim=0.2,
                        grid_resolution=7, sample_weight=W30)
    m = "sd" if measure == "auto" else measure
    for j in range(3):
        grid = np.asarray(imp.info["grid_values"][f"x{j}"])[:, None]
        ice_ref = ref_ice(F2_NP, X30, [j], grid)
        want = ref_importance(ice_ref, W30, m, average, ice, trim=0.2)
        np.testing.assert_allclose(imp.importances_mean[j], want, rtol=2e-4, atol=1e-6)
        np.testing.assert_allclose(imp.info["pd"][f"x{j}"],
                                   ref_pd(ice_ref, W30, average, 0.2), rtol=1e-4, atol=1e-6)
    assert imp.output_names == ("y0", "y1") and imp.method == ("ice" if ice else "pd")


def test_a_pair_of_measures_scores_continuous_and_categorical_features_apart():
    """vip's var_continuous / var_categorical: measure=("mad", "range4") takes the MAD of a
    numeric feature's PD and range/4 of a categorical one's, in both methods."""
    X = X30.copy()
    X[:, 2] = np.arange(30) % 4  # a categorical feature of four codes
    options = dict(categorical=[2], grid_resolution=6, sample_weight=W30)
    imp = pd_importance(F2, X, measure=("mad", "range4"), **options)
    assert imp.info["measure"] == {"x0": "mad", "x1": "mad", "x2": "range4"}
    for j, m in ((0, "mad"), (1, "mad"), (2, "range4")):
        grid = np.asarray(imp.info["grid_values"][f"x{j}"])[:, None]
        want = ref_importance(ref_ice(F2_NP, X, [j], grid), W30, m, "mean", False)
        np.testing.assert_allclose(imp.importances_mean[j], want, rtol=2e-4, atol=1e-6)
    inter = pd_interaction(F2, X, pairs=[("x0", "x2")], measure=("mad", "range4"), **options)
    g0, g2 = (np.asarray(imp.info["grid_values"][name]) for name in ("x0", "x2"))
    grid = np.array([[a, b] for a in g0 for b in g2])
    pd2 = ref_pd(ref_ice(F2_NP, X, [0, 2], grid), W30, "mean").reshape(len(g0), len(g2), -1)
    for o in range(2):
        np.testing.assert_allclose(inter.values[0, o], ref_interaction(pd2[..., o], "mad",
                                                                       "range4"), rtol=2e-4)


def test_a_function_is_any_other_measure():
    """vip's var_fun: a jax.numpy function of a curve (here the interquartile range) against
    NumPy's on the reference PDs, in both methods and the ICE variant; a function JAX cannot
    trace, or one that does not return a scalar, is refused naming the fix."""
    def iqr(v):
        return jnp.percentile(v, 75) - jnp.percentile(v, 25)

    options = dict(grid_resolution=6, sample_weight=W30)
    imp = pd_importance(F2, X30, measure=iqr, **options)
    ice = pd_importance(F2, X30, measure=iqr, ice=True, **options)
    for j in range(3):
        grid = np.asarray(imp.info["grid_values"][f"x{j}"])[:, None]
        curves = ref_ice(F2_NP, X30, [j], grid)  # (n, g, o)
        spread = np.percentile(curves, 75, axis=1) - np.percentile(curves, 25, axis=1)
        np.testing.assert_allclose(imp.importances_mean[j], np.subtract(*np.percentile(
            ref_pd(curves, W30, "mean"), [75, 25], axis=0)), rtol=2e-4, atol=1e-6)
        np.testing.assert_allclose(ice.importances_mean[j], W30 @ spread / W30.sum(),
                                   rtol=2e-4, atol=1e-6)
    inter = pd_interaction(F2, X30, pairs=[(0, 1)], measure=iqr, **options)
    g0, g1 = (np.asarray(imp.info["grid_values"][name]) for name in ("x0", "x1"))
    grid = np.array([[a, b] for a in g0 for b in g1])
    pd2 = ref_pd(ref_ice(F2_NP, X30, [0, 1], grid), W30, "mean").reshape(6, 6, -1)

    def spread(v, axis):
        return np.percentile(v, 75, axis=axis) - np.percentile(v, 25, axis=axis)

    want = (spread(spread(pd2, 0), 0) + spread(spread(pd2, 1), 0)) / 2
    np.testing.assert_allclose(inter.values[0], want, rtol=2e-4, atol=1e-6)
    with pytest.raises(TypeError, match="must be traceable by JAX"):
        pd_importance(F2, X30, measure=np.median, grid_resolution=4)
    with pytest.raises(ValueError, match="to a scalar"):
        pd_importance(F2, X30, measure=lambda v: 2 * v, grid_resolution=4)


def test_importance_bootstrap_replicates_are_reweighted_reference():
    imp = pd_importance(F2, X30, grid_resolution=5, sample_weight=W30, n_bootstrap=4,
                        random_state=7, average="median")
    counts = imp.info["bootstrap_counts"]
    assert counts.shape == (4, 30) and np.all(counts.sum(axis=1) == 30)
    for j in range(3):
        grid = np.asarray(imp.info["grid_values"][f"x{j}"])[:, None]
        ice_ref = ref_ice(F2_NP, X30, [j], grid)
        for r in range(4):
            want = ref_importance(ice_ref, W30 * counts[r], "sd", "median", False)
            np.testing.assert_allclose(imp.importances[j, :, r], want, rtol=2e-4, atol=1e-6)
    np.testing.assert_allclose(imp.importances_std, imp.importances.std(axis=-1))
    plain = pd_importance(F2, X30, grid_resolution=5, sample_weight=W30, average="median")
    np.testing.assert_allclose(imp.importances_mean, plain.importances_mean, rtol=1e-6)
    frame = imp.to_frame()
    assert {"std", "q025", "q975"} <= set(frame.columns)
    again = pd_importance(F2, X30, grid_resolution=5, sample_weight=W30, n_bootstrap=4,
                          random_state=jax.random.key(7), average="median")
    np.testing.assert_array_equal(again.info["bootstrap_counts"], counts)


def test_interaction_matches_numpy_reference_with_bootstrap():
    res = pd_interaction(F2, X30, grid_resolution=4, sample_weight=W30, n_bootstrap=4,
                         random_state=1)
    counts = res.info["bootstrap_counts"]
    assert res.feature_sets == (("x0", "x1"), ("x0", "x2"), ("x1", "x2"))
    plain = pd_interaction(F2, X30, grid_resolution=4, sample_weight=W30)
    np.testing.assert_allclose(res.values, plain.values, rtol=1e-5, atol=1e-7)
    for s, (a, b) in enumerate(itertools.combinations(range(3), 2)):
        ga = np.linspace(X30[:, a].min(), X30[:, a].max(), 4)
        gb = np.linspace(X30[:, b].min(), X30[:, b].max(), 4)
        grid = np.array(list(itertools.product(ga, gb)))
        ice_ref = ref_ice(F2_NP, X30, [a, b], grid)  # (n, 16, o)
        for r, w in enumerate([W30] + [W30 * c for c in counts[:2]]):
            pd2 = ref_pd(ice_ref, w, "mean").reshape(4, 4, 2)
            want = [ref_interaction(pd2[:, :, o]) for o in range(2)]
            got = res.values[s] if r == 0 else res.replicates[s, :, r - 1]
            np.testing.assert_allclose(got, want, rtol=5e-4, atol=1e-6)
        np.testing.assert_allclose(res.info["pd"][(f"x{a}", f"x{b}")],
                                   ref_pd(ice_ref, W30, "mean").reshape(4, 4, 2), rtol=1e-4,
                                   atol=1e-6)


def test_interaction_robust_average_and_categorical_measure():
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.normal(size=24), rng.integers(0, 4, size=24)])
    f = lambda X: X[:, 0] * jnp.take(jnp.asarray(EFFECT, jnp.float32),  # noqa: E731
                                     X[:, 1].astype(jnp.int32))
    f_np = lambda X: X[:, 0] * EFFECT[X[:, 1].astype(int)]  # noqa: E731
    res = pd_interaction(f, X, feature_names=["x", "c"], categorical=["c"], grid_resolution=5,
                         average="median")
    gx = np.linspace(X[:, 0].min(), X[:, 0].max(), 5)
    grid = np.array(list(itertools.product(gx, [0.0, 1.0, 2.0, 3.0])))
    pd2 = ref_pd(ref_ice(f_np, X, [0, 1], grid), np.ones(24), "median").reshape(5, 4)
    assert res.values[0, 0] == pytest.approx(ref_interaction(pd2, "sd", "range4"), rel=1e-4)


# ------------------------------------------------------------------------------------------
# Pairs, result helpers, inputs, validation.
# ------------------------------------------------------------------------------------------


def test_pair_selection_and_result_helpers():
    X = np.random.default_rng(6).uniform(-1, 1, size=(20, 4))
    f = lambda X: 3 * X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3]  # noqa: E731
    res = pd_interaction(f, X, grid_resolution=4)
    assert isinstance(res, FeatureInteraction) and len(res) == 6
    assert res.top(2) == [("x0", "x1"), ("x2", "x3")]
    frame = res.to_frame()
    assert list(frame.columns) == ["feature_1", "feature_2", "output", "interaction"]
    assert tuple(frame.iloc[0][["feature_1", "feature_2"]]) == ("x0", "x1")
    matrix = res.matrix()
    assert matrix.shape == (4, 4) and matrix.loc["x1", "x0"] == res.values[0, 0]
    ref = pd_interaction(f, X, reference="x2", grid_resolution=4)
    assert ref.feature_sets == (("x2", "x0"), ("x2", "x1"), ("x2", "x3"))
    listed = pd_interaction(f, X, pairs=[("x3", "x2")], grid_resolution=4)
    assert listed.values[0, 0] == pytest.approx(res.values[5, 0], rel=1e-5)
    some = pd_interaction(f, X, features=["x0", "x1", "x3"], grid_resolution=4)
    assert some.feature_sets == (("x0", "x1"), ("x0", "x3"), ("x1", "x3"))
    with pytest.raises(ValueError, match=r"k must be a positive int \(how many to list\); got 0"):
        res.top(0)


def test_dataframe_input_equals_numpy_input():
    df = pd.DataFrame(X30, columns=["a", "b", "c"])
    a = pd_importance(F2, X30, feature_names=["a", "b", "c"], grid_resolution=6)
    b = pd_importance(F2, df, grid_resolution=6)
    np.testing.assert_array_equal(a.importances_mean, b.importances_mean)
    assert isinstance(b, FeatureImportance) and b.feature_names == ("a", "b", "c")
    c = pd_interaction(F2, df, grid_resolution=4, output="y1")
    d = pd_interaction(F2, X30, feature_names=["a", "b", "c"], grid_resolution=4, output=1)
    np.testing.assert_array_equal(c.values, d.values)
    assert c.output_names == ("y1",)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"measure": "std"}, ValueError,
         r"measure must be one of \('auto', 'sd', 'mad', 'range4'\), a jax.numpy function of a "
         r"curve, or a pair \(continuous, categorical\) of them such as \('mad', 'range4'\); "
         r"got 'std'"),
        ({"measure": ("mad", "iqr")}, ValueError, r"measure must be one of .* a pair"),
        ({"average": "mode"}, ValueError,
         r"average must be one of \('mean', 'median', 'trimmed'\); got 'mode'"),
        ({"trim": 0.5}, ValueError, r"trim must be a fraction in \[0, 0.5\); got 0.5"),
        ({"n_bootstrap": 1}, ValueError, "n_bootstrap must be 0 .* or an int >= 2; got 1"),
        ({"n_bootstrap": -2}, ValueError, "n_bootstrap must be 0 .* got -2"),
        ({"random_state": 1.5}, TypeError, "random_state must be an int seed, a JAX PRNG key"),
        ({"grid_resolution": 1}, ValueError,
         r"grid_resolution must be an int >= 2, inf \(every distinct value\) or None \(the "
         r"grid's default\); got 1"),
        ({"features": "zz"}, ValueError, "unknown feature 'zz'"),
    ],
)
def test_importance_validation_messages(kwargs, error, message):
    with pytest.raises(error, match=message):
        pd_importance(lambda X: X[:, 0], X30, **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"pairs": "none"}, "pairs must be 'all', a list of feature pairs; got 'none'"),
        ({"pairs": [("x0", "x1", "x2")]}, "non-empty list of feature pairs"),
        ({"pairs": [("x1", "x1")]}, r"two different features; got \('x1', 'x1'\)"),
        ({"pairs": [("x0", "x1")], "reference": "x0"}, "give either pairs or reference"),
        ({"features": ["x0"]}, "pairs='all' needs at least 2 features"),
        ({"pairs": 3}, "pairs must be 'all' or a non-empty list"),
    ],
)
def test_interaction_validation_messages(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pd_interaction(lambda X: X[:, 0], X30, **kwargs)


# ------------------------------------------------------------------------------------------
# Kernels: eager == jit == vmap, closed forms, and NumPy / SciPy.
# ------------------------------------------------------------------------------------------


def test_mad_uses_r_constant_exactly():
    # R: mad(c(1, 2, 3, 4, 100)) == 1.4826 (median 3, absolute deviations 2 1 0 1 97, median 1);
    # the unrounded 1 / qnorm(0.75) = 1.482602... would differ in the sixth digit.
    value = float(jax.jit(flatness, static_argnums=1)(jnp.array([1.0, 2, 3, 4, 100]), "mad"))
    assert value == pytest.approx(1.4826, abs=1e-6)
    assert abs(value - 1.482602218505602) > 1e-6


def test_flatness_and_averages_against_numpy_and_scipy():
    rng = np.random.default_rng(8)
    values = rng.normal(size=(4, 11)).astype(np.float32)
    for measure in ("sd", "mad", "range4"):
        eager = float(flatness(jnp.asarray(values[0]), measure))
        jitted = jax.jit(flatness, static_argnums=1)(jnp.asarray(values[0]), measure)
        mapped = jax.jit(jax.vmap(lambda v: flatness(v, measure)))(jnp.asarray(values))
        want = [ref_flatness(v.astype(np.float64), measure) for v in values]
        np.testing.assert_allclose(mapped, want, rtol=1e-5)
        assert eager == pytest.approx(want[0], rel=1e-5)
        assert float(jitted) == pytest.approx(want[0], rel=1e-5)
    # Integer weights are repeated rows: numpy.median and scipy.stats.trim_mean.
    average = jax.jit(weighted_average, static_argnums=(2, 3))
    v = rng.normal(size=9).astype(np.float32)
    counts = np.array([1, 0, 3, 2, 1, 1, 0, 1, 1])  # 10 rows in all
    rows = np.repeat(v.astype(np.float64), counts)
    w = jnp.asarray(counts, jnp.float32)
    assert float(average(v, w, "median", 0.1)) == pytest.approx(np.median(rows), rel=1e-6)
    assert float(average(v, w, "trimmed", 0.2)) == pytest.approx(stats.trim_mean(rows, 0.2),
                                                                  rel=1e-5)
    assert float(average(v, w, "mean", 0.1)) == pytest.approx(rows.mean(), rel=1e-6)
    fw = jnp.asarray(rng.uniform(0.1, 2, size=9), jnp.float32)
    for kind in ("median", "trimmed"):
        assert float(average(v, fw, kind, 0.15)) == pytest.approx(
            ref_average(v.astype(np.float64), np.asarray(fw, np.float64), kind, 0.15), rel=1e-5)
    with pytest.raises(ValueError, match="measure must be one of"):
        flatness(jnp.ones(3), "iqr")
    with pytest.raises(ValueError, match="g >= 2"):
        flatness(jnp.ones(1))


def test_importance_and_interaction_kernels_jit_vmap():
    rng = np.random.default_rng(9)
    ice = jnp.asarray(rng.normal(size=(3, 6, 5)), jnp.float32)  # (batch, n, g)
    w = jnp.asarray(rng.uniform(0.5, 1.5, size=6), jnp.float32)
    eager = pd_importance_from_ice(ice[0], w, "sd", "mean")
    for kernel in (pd_importance_from_ice, ice_importance):
        mapped = jax.jit(jax.vmap(lambda c: kernel(c, w, "sd", "trimmed", 0.2)))(ice)
        jitted = jax.jit(kernel, static_argnums=(2, 3, 4))(ice[0], w, "sd", "trimmed", 0.2)
        assert float(mapped[0]) == pytest.approx(float(jitted), rel=1e-6)
        for i in range(3):
            want = ref_importance(np.asarray(ice[i], np.float64)[:, :, None],
                                  np.asarray(w, np.float64), "sd", "trimmed",
                                  kernel is ice_importance, 0.2)
            assert float(mapped[i]) == pytest.approx(want[0], rel=1e-5)
    want = ref_importance(np.asarray(ice[0], np.float64)[:, :, None], np.asarray(w, np.float64),
                          "sd", "mean", False)
    assert float(eager) == pytest.approx(want[0], rel=1e-5)
    pd2 = jnp.asarray(rng.normal(size=(2, 4, 5)), jnp.float32)
    mapped = jax.jit(jax.vmap(lambda p: pd_interaction_strength(p, "mad", "range4")))(pd2)
    for i in range(2):
        assert float(mapped[i]) == pytest.approx(
            ref_interaction(np.asarray(pd2[i], np.float64), "mad", "range4"), rel=1e-5)


# ------------------------------------------------------------------------------------------
# Seed 002 section 4: Friedman #1 with an MLP (small grids; full size in the notebook).
# ------------------------------------------------------------------------------------------


def test_seed002_friedman_experiment_small():
    X, y = jaximp.make_friedman1(n=500, noise=1.0, random_state=0)
    model = jaximp.fit_mlp(X, y, hidden=(8,), steps=3000, weight_decay=0.1, random_state=0)
    imp = pd_importance(model, X, grid_resolution=10)
    values = imp.importances_mean[:, 0]
    assert values[:5].min() > values[5:].max()  # x1..x5 above x6..x10
    assert set(imp.top(5)) == {"x1", "x2", "x3", "x4", "x5"}
    inter = pd_interaction(model, X, grid_resolution=8)
    assert inter.top(1) == [("x1", "x2")]
    assert inter.values[:, 0].max() > 2 * np.sort(inter.values[:, 0])[-2]


def test_measure_chosen_after_the_pds_exist(monkeypatch):
    """PartialDependences.importance reads every measure from stored PDs: no model call, and
    the values of pd_importance on the same grid."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120),
                      "c": pd.Categorical(rng.choice(["u", "v", "w"], 120))})

    def f(A):
        return 2 * A[:, 0] + jnp.sin(A[:, 1]) + A[:, 2] ** 2

    pds = jaximp.partial_dependence_all(f, X, grid_resolution=9)

    def no_evaluation(*args, **kwargs):
        raise AssertionError("the model was evaluated")

    with monkeypatch.context() as m:
        for module in (jaximp.engine._engine, jaximp.methods._pd, jaximp.methods._pd_importance):
            if hasattr(module, "evaluate"):
                m.setattr(module, "evaluate", no_evaluation)
        read = {measure: pds.importance(measure) for measure in ("auto", "sd", "mad", "range4")}
    for measure, result in read.items():
        direct = jaximp.pd_importance(f, X, measure=measure, grid="uniform", grid_resolution=9,
                                      percentiles=(0.05, 0.95))
        np.testing.assert_allclose(result.importances_mean, direct.importances_mean, rtol=1e-12)
    assert read["auto"].info.measure == {"a": "sd", "b": "sd", "c": "range4"}
    with pytest.raises(ValueError, match=r"^measure must be one of \('auto'"):
        pds.importance("variance")


def test_interaction_measure_chosen_after_the_2d_pd_exists(monkeypatch):
    """PartialDependence.interaction reads every measure from a stored 2-D PD: no model call,
    and the values of pd_interaction on the same grid (numeric x numeric and x categorical)."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=100), "b": rng.uniform(size=100),
                      "c": pd.Categorical(rng.choice(["u", "v", "w"], 100))})

    def f(A):
        return A[:, 0] * A[:, 1] + jnp.sin(A[:, 0]) * A[:, 2]

    surfaces = {pair: jaximp.partial_dependence(f, X, pair, grid_resolution=7,
                                                percentiles=(0, 1))
                for pair in [("a", "b"), ("a", "c")]}
    measures = ("auto", "sd", "mad", "range4")
    with monkeypatch.context() as m:
        for module in (jaximp.engine._engine, jaximp.methods._pd, jaximp.methods._pd_importance):
            if hasattr(module, "evaluate"):
                m.setattr(module, "evaluate", lambda *a, **k: pytest.fail("model evaluated"))
        read = {(pair, measure): surface.interaction(measure)
                for pair, surface in surfaces.items() for measure in measures}
    for measure in measures:
        direct = jaximp.pd_interaction(f, X, pairs=[("a", "b"), ("a", "c")], measure=measure,
                                       grid_resolution=7)
        got = np.concatenate([read[(pair, measure)].values for pair in surfaces])
        np.testing.assert_allclose(got, direct.values, rtol=1e-6)
        assert read[(("a", "c"), measure)].feature_sets == (("a", "c"),)
    assert read[(("a", "b"), "auto")].values[0, 0] > 0.05
    with pytest.raises(ValueError, match=r"^interaction\(\) needs the average PD of a feature "
                                         r"pair; this result holds the average PD over 1"):
        jaximp.partial_dependence(f, X, "a", grid_resolution=5).interaction()


def test_default_grid_is_vips_even_spacing_also_for_few_distinct_values():
    """vip's PD importance evaluates pdp's default grid, ``seq(min, max, length =
    min(n_unique, 51))``: evenly spaced even where a feature has few distinct values (four
    here, unevenly spaced), not the values themselves (``grid="uniform"``)."""
    X = np.column_stack([np.tile([0.0, 0.1, 0.2, 3.0], 25), np.linspace(0, 1, 100)])
    f = lambda A: jnp.sqrt(A[:, 0] + 1) + A[:, 1] ** 2  # noqa: E731
    ours = pd_importance(f, X).importances_mean[:, 0]
    # additive: the PD of each feature is its own term plus a constant
    expected = [np.std(np.sqrt(np.linspace(0.0, 3.0, 4) + 1), ddof=1),
                np.std(np.linspace(0.0, 1.0, 51) ** 2, ddof=1)]
    np.testing.assert_allclose(ours, expected, rtol=1e-5)
    distinct = pd_importance(f, X, grid="uniform").importances_mean[0, 0]
    assert distinct == pytest.approx(np.std(np.sqrt([1.0, 1.1, 1.2, 4.0]), ddof=1), rel=1e-5)
    inter = pd_interaction(lambda A: A[:, 0] * A[:, 1], X).values[0, 0]
    g0, g1 = np.linspace(0.0, 3.0, 4), np.linspace(0.0, 1.0, 51)
    assert inter == pytest.approx(np.std(g0, ddof=1) * np.std(g1, ddof=1), rel=1e-5)


def test_pdp_grids_of_an_integer_column_are_truncated_as_pdp_casts_them():
    """pdp's copy_classes casts the grid of an R integer column with as.integer (truncation,
    repeats kept), and vip's FIRM takes the sd over that grid: an int64 column gets the same
    grid here (1, 3, 6, ..., not 1, 3.875, 6.75, ...); a float column keeps its points."""
    frame = pd.DataFrame({"rad": np.array([1, 2, 3, 4, 5, 6, 7, 8, 24] * 4)})
    model = lambda X: 0.1 * X[:, 0] ** 2
    truncated = np.trunc(np.linspace(1, 24, 9))  # pdp: min(n_unique = 9, 51) points
    imp = jaximp.pd_importance(model, frame)
    assert imp.info["grid_values"]["rad"] == tuple(int(v) for v in truncated)
    np.testing.assert_allclose(imp.importances_mean[0, 0], np.std(0.1 * truncated ** 2, ddof=1),
                               rtol=1e-6)
    repeats = jaximp.partial_dependence(model, frame, "rad", grid="pdp", grid_resolution=40)
    assert repeats.grid_values[0] == tuple(int(v) for v in np.trunc(np.linspace(1, 24, 40)))
    quantiles = jaximp.partial_dependence(model, frame, "rad", grid="pdp_quantiles")
    expected = np.unique(np.trunc(np.quantile(frame.rad, np.arange(1, 10) / 10)))
    assert quantiles.grid_values[0] == tuple(int(v) for v in expected)
    as_float = jaximp.partial_dependence(model, frame.astype(float), "rad", grid="pdp")
    np.testing.assert_allclose(as_float.grid_values[0], np.linspace(1, 24, 9))
