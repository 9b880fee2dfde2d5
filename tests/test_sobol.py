"""Sobol indices: a float64 NumPy twin of the estimators, closed forms, host models, checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaximp

from jaximp.data import as_key
from jaximp.engine import key_bits, rng_stream
from jaximp.methods._sobol import SobolIndices, sobol_indices

V_UNIFORM = 1 / 12  # variance of U(0, 1)


def as32(a):
    return np.asarray(a, np.float32).astype(np.float64)


def reference(f_np, X, n_repeats, seed, columns):
    """Float64 Saltelli 2010 (first) and Jansen 1999 (total) estimators with the row
    permutations jaximp draws (the documented streams of ``random_state``)."""
    bits = key_bits(jax.random.split(as_key(seed))[0])
    n = len(X)
    perms = [rng_stream(bits, 29, k).permutation(n) for k in range(n_repeats)]
    fa = f_np(X)
    variance = fa.var()
    first, total = [], []
    for cols in columns:
        s1 = s2 = 0.0
        for perm in perms:
            mixed = X.copy()
            mixed[:, cols] = X[perm][:, cols]
            d = f_np(mixed) - fa
            s2 += np.mean(d ** 2) / 2
            s1 += np.mean((fa[perm] - fa.mean()) * d)
        first.append(s1 / n_repeats / variance)
        total.append(s2 / n_repeats / variance)
    return np.array(first), np.array(total)


def test_equals_a_float64_numpy_twin_of_the_estimators():
    rng = np.random.default_rng(0)
    X = as32(rng.uniform(size=(300, 3)))
    f_np = lambda A: A[:, 0] + 2 * A[:, 1] ** 2 + 3 * A[:, 1] * A[:, 2]
    result = sobol_indices(f_np, X, n_repeats=3, n_bootstrap=0, random_state=4, second=True)
    assert isinstance(result, SobolIndices)
    first, total = reference(f_np, X, 3, 4, [[0], [1], [2]])
    np.testing.assert_allclose(result.first.importances_mean[:, 0], first, rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(result.total.importances_mean[:, 0], total, rtol=1e-4,
                               atol=1e-6)
    # second order: the pair's first-order (closed) estimate less its two features'
    closed, _ = reference(f_np, X, 3, 4, [[0, 1], [0, 2], [1, 2]])
    pairs = [(0, 1), (0, 2), (1, 2)]
    assert result.second.feature_sets == tuple((f"x{a}", f"x{b}") for a, b in pairs)
    np.testing.assert_allclose(result.second.values[:, 0],
                               [closed[k] - first[a] - first[b] for k, (a, b) in
                                enumerate(pairs)], rtol=1e-4, atol=1e-6)
    explainer = jaximp.Explainer(f_np, X)  # asking for pairs is a new plan, not a stale one
    assert explainer.sobol_indices(n_repeats=3, n_bootstrap=0, random_state=4).second is None
    again = explainer.sobol_indices(n_repeats=3, n_bootstrap=0, random_state=4, second=True)
    np.testing.assert_array_equal(again.second.values, result.second.values)
    assert result.first.importances is None and result.total.importances_std is None
    assert result.info.variance[0] == pytest.approx(f_np(X).var(), rel=1e-5)


def test_additive_model_on_uniform_data_equals_the_closed_form():
    rng = np.random.default_rng(1)
    X = as32(rng.uniform(size=(4000, 3)))
    f = lambda A: 2 * A[:, 0] + jnp.sin(2 * A[:, 1])
    # Var(g_j) on U(0, 1): Var(2x) = 4/12; Var(sin 2x) = (1/2 - sin(4)/8) - ((1 - cos 2)/2)^2
    var_sin = 0.5 - np.sin(4) / 8 - ((1 - np.cos(2)) / 2) ** 2
    parts = np.array([4 * V_UNIFORM, var_sin, 0.0])
    expected = parts / parts.sum()
    result = sobol_indices(f, X, n_repeats=5, n_bootstrap=100)
    for part in (result.first, result.total):
        error = part.importances_std[:, 0]
        assert np.all(np.abs(part.importances_mean[:, 0] - expected) < 4 * error + 1e-6), (
            part.importances_mean[:, 0], expected, error)
        low, _high = part.intervals(0.95)
        assert low.shape == (3, 1) and np.all(low <= part.importances_mean + 1e-12)
        assert part.importances.shape == (3, 1, 100)
    # additive: total = first up to sampling noise; the unused feature's total is exactly 0
    assert result.total.importances_mean[2, 0] == pytest.approx(0.0, abs=1e-7)


def test_interactions_make_total_exceed_first():
    rng = np.random.default_rng(2)
    X = as32(rng.uniform(-1, 1, size=(4000, 3)))
    f = lambda A: A[:, 0] * A[:, 1] + A[:, 2]
    # Var(x0 x1) = 1/9, Var(x2) = 1/3: x0 and x1 explain nothing alone, a quarter together
    result = sobol_indices(f, X, n_repeats=5, n_bootstrap=50, second=True)
    first, total = result.first.importances_mean[:, 0], result.total.importances_mean[:, 0]
    np.testing.assert_allclose(first, [0.0, 0.0, 0.75], atol=0.04)
    np.testing.assert_allclose(total, [0.25, 0.25, 0.75], atol=0.04)
    assert total[0] - first[0] > 0.15 and total[1] - first[1] > 0.15
    # second order: x0 x1 holds the quarter; x2 enters additively (exactly 0 with the
    # same permutations for the pair and its members)
    matrix = result.second.matrix()
    assert matrix.loc["x0", "x1"] == pytest.approx(0.25, abs=0.04)
    assert abs(matrix.loc["x0", "x2"]) < 1e-6 and abs(matrix.loc["x1", "x2"]) < 1e-6
    assert result.second.replicates.shape == (3, 1, 50) and result.second.method == "sobol_second"
    frame = result.to_frame()
    assert list(frame["index"].unique()) == ["first", "total", "second"] and len(frame) == 9
    assert frame["feature"].iloc[6:].tolist() == ["x0:x1", "x0:x2", "x1:x2"]
    assert result.top(1, index="total") == ["x2"] and "second: x0:x1=" in repr(result)
    only = sobol_indices(f, X[:500], first=False, total=False, second=True, n_bootstrap=0)
    assert only.first is None and only.total is None and len(only.to_frame()) == 3
    assert repr(only).startswith("SobolIndices(3 features")
    with pytest.raises(ValueError, match=r"second-order indices only .* result\.second\.top"):
        only.top(1)


def test_groups_host_models_and_outputs():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(3)
    X = as32(rng.uniform(size=(500, 3)))
    y = X @ np.array([1.0, 2.0, 0.5])
    model = LinearRegression().fit(X, y)
    twin = lambda A: A @ jnp.asarray(model.coef_, jnp.float32) + model.intercept_
    host = sobol_indices(model, X, n_bootstrap=10)
    ours = sobol_indices(twin, X, n_bootstrap=10)
    np.testing.assert_allclose(host.total.importances_mean, ours.total.importances_mean,
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(host.first.importances, ours.first.importances, rtol=1e-3,
                               atol=1e-5)
    grouped = sobol_indices(twin, X, groups={"g": ["x0", "x1"]}, n_bootstrap=0)
    assert grouped.total.feature_names == ("g", "x2")
    _first, total = reference(lambda A: A @ model.coef_ + model.intercept_, X, 5, 0,
                             [[0, 1], [2]])
    np.testing.assert_allclose(grouped.total.importances_mean[:, 0], total, rtol=1e-4)
    two = lambda A: jnp.stack([A[:, 0], A[:, 0] + A[:, 1]], axis=1)
    both = sobol_indices(two, X, n_bootstrap=0, output=1, first=False)
    assert both.first is None and both.total.output_names == ("y1",)
    assert both.total.importances_mean[2, 0] == pytest.approx(0.0, abs=1e-7)


def test_checks():
    X = np.random.default_rng(4).uniform(size=(20, 2))
    with pytest.raises(ValueError, match="at least one index"):
        sobol_indices(lambda A: A[:, 0], X, first=False, total=False)
    with pytest.raises(ValueError, match="second=True needs at least 2 features"):
        sobol_indices(lambda A: A[:, 0], X, features=["x0"], second=True)
    with pytest.raises(ValueError, match="n_repeats must be an int >= 1"):
        sobol_indices(lambda A: A[:, 0], X, n_repeats=0)
    with pytest.raises(ValueError, match="n_bootstrap must be 0"):
        sobol_indices(lambda A: A[:, 0], X, n_bootstrap=1)
    with pytest.raises(ValueError, match="constant"):
        sobol_indices(lambda A: 0 * A[:, 0] + 1, X)
    # a float64 mean of 500 equal values rounds: Var f of 4e-31, still a constant
    many = np.random.default_rng(5).uniform(size=(500, 3))
    with pytest.raises(ValueError, match="constant"):
        sobol_indices(lambda A: 0 * A[:, 0] + 1, many)
    with pytest.raises(ValueError, match="constant over the rows"):
        jaximp.dgsm(lambda A: 0 * A[:, 0] + 1, many, normalize=True, n_bootstrap=0)
    with pytest.raises(TypeError, match="first must be True or False"):
        sobol_indices(lambda A: A[:, 0], X, first="yes")


def test_result_contract():
    import pickle

    X = np.random.default_rng(5).uniform(size=(200, 3))
    result = sobol_indices(lambda A: A[:, 0] + A[:, 1] * A[:, 2], X, n_bootstrap=5)
    text = repr(result)
    assert text.startswith("SobolIndices(3 features") and len(text) < 300, text
    copy = pickle.loads(pickle.dumps(result))
    assert repr(copy) == repr(result) and copy.to_frame().equals(result.to_frame())
    assert result.info.n_repeats == 5 and result.info["n_bootstrap"] == 5
    ax = result.plot("first")
    assert len(ax.patches) == 3
    with pytest.raises(ValueError, match="index must be one of"):
        result.plot("second")


def test_results_do_not_depend_on_the_memory_budget():
    X = np.random.default_rng(6).uniform(size=(300, 3))
    f = lambda A: A[:, 0] + A[:, 1] * A[:, 2]
    roomy = sobol_indices(f, X, n_bootstrap=4)
    tight = sobol_indices(f, X, n_bootstrap=4, memory_budget=1 << 16)
    np.testing.assert_allclose(roomy.total.importances, tight.total.importances, rtol=1e-5)
    np.testing.assert_allclose(roomy.first.importances_mean, tight.first.importances_mean,
                               rtol=1e-5, atol=1e-7)


def test_correlated_inputs_warn_that_the_indices_assume_independence():
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=300)
    X = np.c_[x0, x0 + 0.3 * rng.normal(size=300), rng.normal(size=300)]
    with pytest.warns(UserWarning, match=r"assumes independent inputs, but 'x0' and 'x1' "
                                         r"correlate at 0\.9\d"):
        sobol_indices(lambda A: A.sum(axis=1), X, n_bootstrap=0)
    # the correlated columns in one group are resampled together: no warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grouped = sobol_indices(lambda A: A.sum(axis=1), X, n_bootstrap=0,
                                groups={"g": ["x0", "x1"]})
    assert grouped.first.feature_names == ("g", "x2")
