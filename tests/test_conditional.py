"""conditional_importance: samplers against float64 NumPy references and closed forms, the
engine route against permutation importance on the same permutations, the CPI test against
scipy and an exact sign-flip enumeration, row-bootstrap replicates, and hidimstat's CFI."""

import itertools

import jax

import jax.numpy as jnp
import numpy as np
import pytest

import jaximp
from jaximp.data import replicate_weights
from jaximp.methods import _samplers as S
from jaximp.methods._conditional import _STREAM, _sign_flips

stats = pytest.importorskip("scipy.stats")

BETA = np.array([1.0, 2.0, 0.5])


def _correlated(n, seed=0):
    """x1 a noisy copy of x0, x2 independent: Var(x1) = 1.25, Var(x1 | x0, x2) = 0.25."""
    rng = np.random.default_rng(seed)
    x0 = rng.normal(size=n)
    X = np.column_stack([x0, x0 + 0.5 * rng.normal(size=n), rng.normal(size=n)])
    return X, X @ BETA + rng.normal(size=n)


def _linear(X):
    return X @ jnp.asarray(BETA, X.dtype)


# ------------------------------------------------------------------------------ samplers


def test_linear_sampler_equals_weighted_least_squares():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 5)) @ rng.normal(size=(5, 5))
    w = rng.uniform(0.2, 2.0, 400)
    for cols in ([1], [0, 3]):
        fitted, residual = S.linear_sampler(X, cols, w)
        rest = [k for k in range(5) if k not in cols]
        design = np.column_stack([np.ones(400), X[:, rest]]) * np.sqrt(w)[:, None]
        coef = np.linalg.lstsq(design, X[:, cols] * np.sqrt(w)[:, None], rcond=None)[0]
        reference = np.column_stack([np.ones(400), X[:, rest]]) @ coef
        np.testing.assert_allclose(fitted, reference, rtol=0, atol=1e-10)
        np.testing.assert_allclose(fitted + residual, X[:, cols], atol=1e-12)


def test_knockoffs_have_the_knockoff_covariance():
    rng = np.random.default_rng(2)
    n = 40_000
    L = np.array([[1.0, 0, 0], [0.8, 0.6, 0], [0.3, -0.2, 0.9]])
    X = rng.normal(size=(n, 3)) @ L.T + np.array([1.0, -2.0, 0.5])
    params = S.knockoff_parameters(X)
    sigma = np.cov(X.T, bias=True)
    corr = sigma / np.sqrt(np.outer(np.diag(sigma), np.diag(sigma)))
    s = min(1.0, 2 * np.linalg.eigvalsh(corr)[0]) * np.diag(sigma)
    np.testing.assert_allclose(params["s"], s, rtol=1e-10)
    mean, noise = S.knockoff_sampler(X, [0, 1, 2], params, rng)  # the joint knockoff
    knock = mean + noise
    joint = np.cov(np.column_stack([knock, X]).T, bias=True)
    # sampling error of a covariance of unit-scale Gaussians at n = 40,000: ~0.007
    np.testing.assert_allclose(joint[:3, :3], sigma, atol=0.04)
    np.testing.assert_allclose(joint[:3, 3:], sigma - np.diag(s), atol=0.04)
    np.testing.assert_allclose(knock.mean(axis=0), X.mean(axis=0), atol=0.03)


def test_within_strata_permutes_inside_each_stratum():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.normal(size=600), rng.integers(0, 3, 600).astype(float),
                         rng.normal(size=600)])
    cuts = [S.quantile_cuts(X[:, k], 4) for k in range(3)]
    strata = S.strata_codes(X, [1, 2], {1}, cuts)
    expected = np.unique(np.column_stack([X[:, 1], np.searchsorted(cuts[2], X[:, 2])]),
                         axis=0, return_inverse=True)[1].reshape(-1)
    assert np.array_equal(strata, expected)
    sigma = S.within_strata(strata, rng)
    assert np.array_equal(np.sort(sigma), np.arange(600))
    assert np.array_equal(strata[sigma], strata)
    for s in np.unique(strata):
        rows = strata == s
        assert np.array_equal(np.sort(X[sigma][rows, 0]), np.sort(X[rows, 0]))
    assert np.mean(sigma != np.arange(600)) > 0.9


def test_split_points_are_the_trees_thresholds():
    from sklearn.ensemble import RandomForestRegressor

    X, y = _correlated(300)
    forest = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
    cuts = S.split_points(forest, 3)
    assert len(cuts) == 3  # one set per tree, each tree's own thresholds
    for tree, tree_cuts in zip(forest.estimators_, cuts):
        for k in range(3):
            expected = np.unique(tree.tree_.threshold[tree.tree_.feature == k])
            np.testing.assert_array_equal(tree_cuts[k], expected)
    assert S.split_points(lambda X: X, 3) is None


def test_strata_of_a_forest_are_each_trees_own_and_do_not_shrink_with_more_trees():
    """Repeat r cuts at tree r's splits (Strobl et al.'s per-tree grid): the importance
    equals the within-strata permutation by hand, and a forest of 200 trees gives about the
    importance of one of 10 (pooled, the splits of 200 trees cut the data into strata of
    single rows and the importance fell to a fifth)."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    n = 300
    x0 = rng.normal(size=n)
    X = np.column_stack([x0, x0 + 0.7 * rng.normal(size=n), rng.normal(size=n)])
    y = 2 * X[:, 1] + X[:, 2] + 0.5 * rng.normal(size=n)
    means = []
    for trees in (10, 200):
        forest = RandomForestRegressor(n_estimators=trees, max_depth=6,
                                       random_state=0).fit(X, y)
        result = jaximp.conditional_importance(forest, X, y, sampler="strata", n_repeats=10,
                                               features=[1])
        means.append(result.importances_mean[0, 0])
    assert 0.75 < means[1] / means[0] < 1.33
    # by hand for the 200-tree forest: feature 1 conditions on x0 (|r| > 0.2), not x2
    from jaximp.engine import key_bits, rng_stream

    bits = key_bits(jax.random.key(0))
    cut_sets = S.split_points(forest, 3)
    base = np.mean((y - forest.predict(X)) ** 2)
    expected = []
    for r in range(10):
        strata = S.strata_codes(X, [0], set(), cut_sets[r])
        sigma = S.within_strata(strata, rng_stream(bits, _STREAM, 1, r))
        Z = X.copy()
        Z[:, 1] = X[sigma, 1]
        expected.append(np.mean((y - forest.predict(Z)) ** 2) - base)
    np.testing.assert_allclose(result.importances[0, 0], expected, rtol=1e-6, atol=1e-9)


# ------------------------------------------------------------------------- known answers


def test_gaussian_known_answer_and_marginal_contrast():
    X, y = _correlated(5000)
    result = jaximp.conditional_importance(_linear, X, y, n_repeats=10, test="cpi")
    expected = 2 * BETA ** 2 * np.array([0.2, 0.25, 1.0])  # 2 beta^2 Var(x_j | x_-j)
    error = result.info["test"]["std_error"][:, 0]
    assert np.all(np.abs(result.importances_mean[:, 0] - expected) < 4 * error + 0.02 * expected)
    marginal = jaximp.permutation_importance(_linear, X, y, n_repeats=10)
    m_expected = 2 * BETA ** 2 * np.array([1.0, 1.25, 1.0])  # 2 beta^2 Var(x_j)
    np.testing.assert_allclose(marginal.importances_mean[:, 0], m_expected, rtol=0.08)
    assert marginal.importances_mean[1, 0] > 4 * result.importances_mean[1, 0]


def test_gaussian_route_is_permutation_importance_of_the_residual():
    """Item (j, r) uses permutation importance's permutation (j, r): the conditional
    importance of x1 is the permutation importance of a model that reads x1 as fitted part
    (an extra column) plus residual (in x1's place), up to float32 rounding."""
    X, y = _correlated(2000, seed=4)
    fitted, residual = S.linear_sampler(X, [1])
    W = np.column_stack([X[:, 0], residual[:, 0], X[:, 2], fitted[:, 0]])

    def split_model(W):
        return W[:, 0] + 2.0 * (W[:, 1] + W[:, 3]) + 0.5 * W[:, 2]

    ours = jaximp.conditional_importance(_linear, X, y, features=[1], n_repeats=4,
                                         random_state=7)
    reference = jaximp.permutation_importance(split_model, W, y, features=[1], n_repeats=4,
                                              random_state=7)
    np.testing.assert_allclose(ours.importances, reference.importances, rtol=2e-4, atol=2e-5)


def test_group_known_answer_and_knockoff_known_answer():
    X, y = _correlated(5000, seed=5)
    group = jaximp.conditional_importance(_linear, X, y, groups={"g": [0, 1]},
                                          n_repeats=10, test="cpi")
    # 2 beta_G' Cov(x_G | x2) beta_G with Cov(x_G) = [[1, 1], [1, 1.25]]
    expected = 2 * np.array([1.0, 2.0]) @ np.array([[1, 1], [1, 1.25]]) @ np.array([1.0, 2.0])
    assert group.feature_names == ("g", "x2")
    error = group.info["test"]["std_error"][0, 0]
    assert abs(group.importances_mean[0, 0] - expected) < 4 * error + 0.02 * expected
    knock = jaximp.conditional_importance(_linear, X, y, sampler="knockoff", n_repeats=10,
                                          test="cpi")
    s = S.knockoff_parameters(X)["s"]  # E (x~_j - x_j)^2 = 2 s_j
    error = knock.info["test"]["std_error"][:, 0]
    assert np.all(np.abs(knock.importances_mean[:, 0] - 2 * BETA ** 2 * s)
                  < 4 * error + 0.02 * 2 * BETA ** 2 * s)


def test_host_model_residual_sampler_and_jax_model_agree():
    from sklearn.linear_model import LinearRegression

    X, y = _correlated(1000, seed=6)
    fitted = LinearRegression().fit(X, y)
    jax_model = jaximp.conditional_importance(
        lambda Z: Z @ jnp.asarray(fitted.coef_, Z.dtype) + fitted.intercept_, X, y)
    host = jaximp.conditional_importance(fitted, X, y)
    residual = jaximp.conditional_importance(fitted, X, y, sampler="residual",
                                             regressor=LinearRegression())
    np.testing.assert_allclose(host.importances, jax_model.importances, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(residual.importances, host.importances, rtol=1e-8, atol=1e-10)
    # a DataFrame reaches the model as a DataFrame (its own column names and dtypes)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).astype({"c": np.float32})
    on_frame = jaximp.conditional_importance(LinearRegression().fit(frame, y), frame, y)
    np.testing.assert_allclose(on_frame.importances, host.importances, rtol=1e-5, atol=1e-6)


def test_callable_sampler_against_numpy():
    X, y = _correlated(800, seed=8)

    def reversed_rows(key, X, columns):  # a deterministic "draw": rows in reverse order
        return X[::-1, columns] + 0.0

    result = jaximp.conditional_importance(_linear, X, y, sampler=reversed_rows, n_repeats=2,
                                           test="cpi")
    base = (y - X @ BETA) ** 2
    for j in range(3):
        Xj = X.copy()
        Xj[:, j] = X[::-1, j]
        rows = (y - Xj @ BETA) ** 2 - base
        np.testing.assert_allclose(result.info["test"]["row_differences"][j, :, 0], rows,
                                   rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(result.importances[j, 0], rows.mean(), rtol=1e-5)
    with pytest.raises(ValueError, match=r"shape \(800,\)"):
        jaximp.conditional_importance(_linear, X, y, sampler=lambda k, X, c: X[:10, c])


def test_strata_known_answer_with_a_categorical_stratifier():
    rng = np.random.default_rng(9)
    n = 1500
    level = rng.integers(0, 3, n)
    X = np.column_stack([10.0 * level + rng.normal(size=n) * (1 + level), level])
    y = X[:, 0].copy()
    result = jaximp.conditional_importance(lambda X: X[:, 0], X, y, sampler="strata",
                                           categorical=[1], n_repeats=20, features=[0])
    # E over within-level permutations of mean (x_sigma(i) - x_i)^2: 2 * population variance
    expected = sum(np.mean(level == k) * 2 * X[level == k, 0].var() for k in range(3))
    assert abs(result.importances_mean[0, 0] - expected) < 0.05 * expected
    marginal = 2 * X[:, 0].var()
    assert marginal > 10 * expected
    # the categorical feature itself is permuted within strata of x0 (strata handles it)
    categorical = jaximp.conditional_importance(lambda X: X[:, 1], X, X[:, 1],
                                                sampler="strata", categorical=[1])
    assert categorical.importances_mean[0, 0] >= 0


def test_strata_splits_of_a_tree_model():
    from sklearn.tree import DecisionTreeRegressor

    X, y = _correlated(1000, seed=10)
    tree = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    result = jaximp.conditional_importance(tree, X, y, sampler="strata", strata="splits",
                                           n_repeats=3)
    assert np.all(np.isfinite(result.importances_mean))
    with pytest.raises(ValueError, match="split points of a fitted scikit-learn tree"):
        jaximp.conditional_importance(_linear, X, y, sampler="strata", strata="splits")


# ------------------------------------------------------------------------------- refusals


def test_categorical_refusals_name_the_strata_sampler():
    rng = np.random.default_rng(11)
    X = np.column_stack([rng.normal(size=200), rng.integers(0, 3, 200)])
    y = X[:, 0]
    with pytest.raises(ValueError, match=r"cannot replace the categorical feature 'x1'.*"
                                         r"sampler='strata'"):
        jaximp.conditional_importance(lambda X: X[:, 0], X, y, categorical=[1])
    with pytest.raises(ValueError, match=r"codes of the categorical feature 'x1'.*"
                                         r"sampler='strata'"):
        jaximp.conditional_importance(lambda X: X[:, 0], X, y, categorical=[1], features=[0],
                                      sampler="knockoff")
    with pytest.raises(ValueError, match="needs regressor="):
        jaximp.conditional_importance(lambda X: X[:, 0], X, y, sampler="residual")
    with pytest.raises(ValueError, match="sampler must be one of"):
        jaximp.conditional_importance(lambda X: X[:, 0], X, y, sampler="copula")
    with pytest.raises(ValueError, match="loss must be a mean of per-row terms"):
        jaximp.conditional_importance(lambda X: X[:, 0], X, y, features=[0], loss="r2",
                                      test="cpi")


# ------------------------------------------------------------------------------- CPI tests


def test_cpi_null_pvalues_are_uniform_and_a_used_feature_is_tiny():
    """120 features the model uses with a wrong coefficient but that are independent of y
    given x0: E[d] = 0, so their p-values are uniform; x0's is tiny."""
    rng = np.random.default_rng(12)
    n, p_null = 1500, 120
    X = rng.normal(size=(n, 1 + p_null))
    y = X[:, 0] + rng.normal(size=n)
    coef = np.concatenate([[1.0], np.full(p_null, 0.1)])
    result = jaximp.conditional_importance(lambda X: X @ jnp.asarray(coef, X.dtype), X, y,
                                           n_repeats=1, test="cpi")
    pvalues = result.info["test"]["pvalue"][:, 0]
    assert pvalues[0] < 1e-6
    assert stats.kstest(pvalues[1:], "uniform").pvalue > 0.01
    assert 0.3 < np.mean(pvalues[1:]) < 0.7


def test_cpi_t_wilcoxon_and_fisher_against_references():
    X, y = _correlated(600, seed=13)
    y = y + np.random.default_rng(0).normal(size=600) * 3
    model = lambda X: X @ jnp.asarray([1.0, 2.0, 0.02], X.dtype)
    t = jaximp.conditional_importance(model, X, y, test="cpi", confidence=0.9)
    rows = t.info["test"]["row_differences"][:, :, 0]
    for j in range(3):
        ref = stats.ttest_1samp(rows[j], 0.0, alternative="greater")
        np.testing.assert_allclose(t.info["test"]["statistic"][j, 0], ref.statistic, rtol=1e-9)
        np.testing.assert_allclose(t.info["test"]["pvalue"][j, 0], ref.pvalue, rtol=1e-6,
                                   atol=1e-300)
        np.testing.assert_allclose(t.info["test"]["ci_low"][j, 0],
                                   ref.confidence_interval(0.9).low, rtol=1e-7)
        np.testing.assert_allclose(t.info["test"]["std_error"][j, 0],
                                   rows[j].std(ddof=1) / np.sqrt(600), rtol=1e-12)
    frame = t.to_frame()
    assert {"pvalue", "statistic", "std_error", "ci_low"} <= set(frame.columns)
    assert frame.set_index("feature").loc["x2", "pvalue"] == t.info["test"]["pvalue"][2, 0]

    w = jaximp.conditional_importance(model, X, y, test="cpi", test_method="wilcoxon")
    rows = w.info["test"]["row_differences"][:, :, 0]
    for j in range(3):
        ref = stats.wilcoxon(rows[j], alternative="greater")
        np.testing.assert_allclose(w.info["test"]["pvalue"][j, 0], ref.pvalue, rtol=1e-9)

    f = jaximp.conditional_importance(model, X, y, test="cpi", test_method="fisher",
                                      n_flips=4000)
    rows = f.info["test"]["row_differences"][:, :, 0]
    draws = np.random.default_rng(99).choice([-1.0, 1.0], size=(4000, 600))
    for j in range(3):
        flipped = draws @ rows[j] / 600
        ref = (1 + np.sum(flipped >= rows[j].mean())) / 4001
        got = f.info["test"]["pvalue"][j, 0]
        assert abs(got - ref) < 4 * np.sqrt(ref * (1 - ref) / 4000) + 2 / 4001


def test_sign_flip_pvalue_against_exact_enumeration():
    d = np.array([0.8, -0.3, 1.1, 0.4, -0.9, 0.6, 0.2, -0.1, 0.7, 0.5, -0.4, 0.3])
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=12)))
    exact = np.mean(signs @ d >= d.sum() - 1e-12)
    pvalue, _ = _sign_flips(d[None, :, None], 20_000, 0.95, np.random.default_rng(5))
    assert abs(pvalue[0, 0] - exact) < 4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4


# ------------------------------------------------------------------------------ bootstrap


def test_bootstrap_replicates_from_the_same_evaluations():
    X, y = _correlated(1000, seed=14)
    plain = jaximp.conditional_importance(_linear, X, y, random_state=3)
    boot = jaximp.conditional_importance(_linear, X, y, random_state=3, n_bootstrap=50,
                                         test="cpi")
    np.testing.assert_allclose(boot.importances_mean, plain.importances_mean, rtol=1e-5)
    np.testing.assert_allclose(boot.info["repeats"], plain.importances, rtol=1e-5, atol=1e-7)
    weights, _ = replicate_weights(np.ones(1000), 50, jaximp.data.as_key(3))
    rows = boot.info["test"]["row_differences"][:, :, 0]  # (p, n)
    expected = (weights[1:] @ rows.T / weights[1:].sum(axis=1, keepdims=True)).T
    np.testing.assert_allclose(boot.importances[:, 0, :], expected, rtol=1e-9, atol=1e-12)
    low, high = boot.intervals()
    assert np.all(low <= boot.importances_mean) and np.all(boot.importances_mean <= high)
    np.testing.assert_allclose(boot.importances_std, expected[:, None].std(axis=-1))


def test_classification_per_row_losses_equal_the_streaming_losses():
    rng = np.random.default_rng(15)
    X = rng.normal(size=(500, 3))
    X[:, 1] += X[:, 0]
    labels = (X[:, 0] + X[:, 1] + rng.normal(size=500) > 0).astype(int)

    def proba(X):
        p1 = 1 / (1 + jnp.exp(-(X[:, 0] + X[:, 1])))
        return jnp.stack([1 - p1, p1], axis=1)

    for loss in ("log_loss", "accuracy"):
        stream = jaximp.conditional_importance(proba, X, labels, loss=loss)
        kept = jaximp.conditional_importance(proba, X, labels, loss=loss, test="cpi")
        np.testing.assert_allclose(kept.importances, stream.importances, rtol=1e-5,
                                   atol=1e-6)
        rows = kept.info["test"]["row_differences"]
        np.testing.assert_allclose(rows.mean(axis=1), kept.importances_mean, rtol=1e-6,
                                   atol=1e-9)
        # x2 is unused: every row's difference is exactly 0, so p = 1 (as R's cpi)
        assert np.all(rows[2] == 0) and kept.info["test"]["pvalue"][2, 0] == 1.0
        assert kept.info["test"]["ci_low"][2, 0] == 0.0


# ------------------------------------------------------------------------------- hidimstat


def test_against_hidimstat_cfi():
    hidimstat = pytest.importorskip("hidimstat")
    from sklearn.linear_model import LinearRegression

    X, y = _correlated(2000, seed=16)
    model = LinearRegression().fit(X, y)
    cfi = hidimstat.CFI(model, imputation_model_continuous=LinearRegression(),
                        n_permutations=50, feature_types="continuous", random_state=0)
    cfi.fit(X, y)
    theirs = cfi.importance(X, y)
    ours = jaximp.conditional_importance(model, X, y, n_repeats=50)
    their_se = np.array([np.std(cfi.loss_[j]) for j in range(3)]) / np.sqrt(50)
    our_se = ours.importances_std[:, 0] / np.sqrt(50)
    assert np.all(np.abs(ours.importances_mean[:, 0] - theirs)
                  < 4 * np.hypot(our_se, their_se))


def test_a_column_the_others_determine_has_no_residual_and_no_evidence():
    """x3 = x0 + 2 x1 exactly: x0, x1 and x3 are each determined by the others, so the
    Gaussian sampler draws their own values (residuals of rounding alone are set to 0), the
    importances are exactly 0 and every test reads no evidence (p = 1); x2 is unaffected."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    X = np.column_stack([X, X[:, 0] + 2 * X[:, 1]])
    fitted, residual = S.linear_sampler(X, [3])
    assert not residual.any() and np.array_equal(fitted[:, 0], X[:, 3])
    beta = jnp.array([1.0, 0.5, 0.3, 1.0])
    y = X @ np.asarray(beta) + rng.normal(size=100)
    for method in ("t", "wilcoxon", "fisher"):
        result = jaximp.conditional_importance(lambda Z: Z @ beta, X, y, test="cpi",
                                               test_method=method)
        np.testing.assert_array_equal(result.importances_mean[[0, 1, 3], 0], 0.0)
        np.testing.assert_array_equal(result.info["test"]["pvalue"][[0, 1, 3], 0], 1.0)
        assert result.importances_mean[2, 0] > 0


def test_each_repeat_draws_its_own_knockoff_noise():
    """The knockoff of a repeat is a fresh Gaussian draw, not a permutation of one draw
    shared by the repeats: over many repeats the importance of a linear model reaches, for
    every seed, its expectation over the knockoff noise on these rows, beta_j^2 (mean (M_j -
    x_j)^2 + Var A_j) - 2 beta_j mean((M_j - x_j) e) with e = y - f(x) (one shared draw
    converged to a limit of its own per seed), and the repeats' standard error covers the
    seeds' spread."""
    X, y = _correlated(500, seed=9)
    params = S.knockoff_parameters(X)
    s, omega = params["s"], params["precision"]
    shift = -((X - params["mean"]) @ omega) * s  # M - x, per feature
    noise_var = 2 * s - s ** 2 * np.diag(omega)
    residual = y - X @ BETA
    expected = (BETA ** 2 * ((shift ** 2).mean(axis=0) + noise_var)
                - 2 * BETA * (shift * residual[:, None]).mean(axis=0)) * (499 / 500)
    means, errors = [], []
    for seed in range(3):
        result = jaximp.conditional_importance(_linear, X, y, sampler="knockoff",
                                               n_repeats=120, random_state=seed)
        means.append(result.importances_mean[:, 0])
        errors.append(result.importances_std[:, 0] / np.sqrt(120))
    means, errors = np.array(means), np.array(errors)
    assert np.all(np.abs(means - expected) < 5 * errors + 0.005 * expected)
    assert np.all(means.std(axis=0, ddof=1) < 3 * errors.mean(axis=0))
