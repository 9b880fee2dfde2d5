"""SAGE and Shapley effects: float64 NumPy game, closed forms, the sage package, validation."""

import importlib.util
import itertools
import math

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_mlp, written_out_loss

from jaximp.methods._sage import SageImportance, sage_importance

HAVE_SAGE = importlib.util.find_spec("sage") is not None
EPS = 1e-12


def as32(a):
    """Values the model sees exactly (it evaluates float32 inputs)."""
    return np.asarray(a, np.float32).astype(np.float64)


def mse_rows(y, pred):
    return ((pred - y.reshape(pred.shape)) ** 2).reshape(len(y), -1)


def reference_sage(f_np, X, y, B, players, row_loss, weights=None):
    """Float64 SAGE by the subset formula on every row: per-row Shapley values of
    ``-loss(y_i, mean_b f(x_i,S, b_rest))`` (n, p, o), their weighted mean and its standard
    error ``sqrt(sum w^2 (phi - mean)^2) / sum w``."""
    n, p = len(X), len(players)
    w = np.ones(n) if weights is None else weights

    def v(S):
        Z = np.repeat(B[None], n, axis=0)  # (n, m, c)
        for j in S:
            Z[:, :, players[j]] = X[:, None, players[j]]
        preds = f_np(Z.reshape(-1, X.shape[1]))
        mean = preds.reshape(n, len(B), -1).mean(axis=1)  # (n, o)
        return -row_loss(y, mean)

    values = {S: v(S) for k in range(p + 1) for S in itertools.combinations(range(p), k)}
    phi = np.zeros((n, p, next(iter(values.values())).shape[1]))
    for j in range(p):
        for S, value in values.items():
            if j in S:
                continue
            weight = math.factorial(len(S)) * math.factorial(p - len(S) - 1) / math.factorial(p)
            phi[:, j] += weight * (values[tuple(sorted(S + (j,)))] - value)
    mean = np.einsum("n,njo->jo", w, phi) / w.sum()
    error = np.sqrt(np.einsum("n,njo->jo", w ** 2, (phi - mean) ** 2)) / w.sum()
    return mean, error


def linear_data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = as32(rng.normal(size=(n, 4)) * np.array([1.0, 2.0, 0.5, 1.0]))
    beta = np.array([1.0, 0.5, 2.0, 0.0])
    y = X @ beta + 0.3 * rng.normal(size=n)
    return X, y, beta


def test_exact_linear_equals_the_game_and_its_closed_form():
    X, y, beta = linear_data()
    B = X[:40]
    f = lambda A: A @ jnp.asarray(beta, jnp.float32)
    result = sage_importance(f, X, y, background=B, estimator="exact")
    assert isinstance(result, SageImportance) and result.method == "sage"
    ref, ref_error = reference_sage(lambda A: A @ beta, X, y, B, [[0], [1], [2], [3]],
                                    mse_rows)
    np.testing.assert_allclose(result.importances_mean, ref, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(result.importances_std, ref_error, rtol=2e-5, atol=1e-6)
    # closed form of the linear game: phi_j = mean(d_j (2 y - f - f_0)), d_j = beta_j (x_j - m_j)
    f_full, f0 = X @ beta, B.mean(axis=0) @ beta
    d = beta * (X - B.mean(axis=0))
    closed = (d * (2 * y - f_full - f0)[:, None]).mean(axis=0)
    np.testing.assert_allclose(result.importances_mean[:, 0], closed, rtol=2e-5, atol=1e-6)
    # efficiency: the values sum to E loss(y, f_0) - E loss(y, f)
    total = np.mean((y - f0) ** 2) - np.mean((y - f_full) ** 2)
    assert result.importances_mean.sum() == pytest.approx(total, rel=1e-5)
    np.testing.assert_allclose(result.info.total, [total], rtol=1e-5)


def test_linear_model_with_independent_features_gives_beta_squared_variance():
    X, y, beta = linear_data(n=4000, seed=1)
    f = lambda A: A @ jnp.asarray(beta, jnp.float32)
    expected = beta ** 2 * np.array([1.0, 4.0, 0.25, 1.0])  # beta_j^2 Var(x_j)
    exact = sage_importance(f, X, y, estimator="exact", background_size=200)
    # within a few standard errors over rows (and the background's own sampling error)
    assert np.all(np.abs(exact.importances_mean[:, 0] - expected)
                  < 4 * exact.importances_std[:, 0] + 0.03 * expected + 1e-6)
    sampled = sage_importance(f, X, y, background_size=200, convergence=0.02)
    assert sampled.info.converged and sampled.info.convergence_ratio < 0.02
    error = np.hypot(sampled.importances_std, exact.importances_std)[:, 0]
    assert np.all(np.abs(sampled.importances_mean[:, 0] - exact.importances_mean[:, 0])
                  < 4 * error + 1e-6)


def test_permutation_estimator_is_within_its_standard_errors_of_the_exact_values():
    f_jax, f_np, _ = random_mlp(3, sizes=(4, 8, 1))
    rng = np.random.default_rng(2)
    X = as32(rng.normal(size=(150, 4)))
    y = f_np(X) + 0.2 * rng.normal(size=150)
    exact = sage_importance(f_jax, X, y, estimator="exact", background_size=25)
    sampled = sage_importance(f_jax, X, y, background_size=25, n_permutations=3000,
                              convergence=None)
    assert sampled.info.n_permutations == 3000 and sampled.info.converged is False
    z = (sampled.importances_mean - exact.importances_mean) / sampled.importances_std
    assert np.all(np.abs(z) < 4), z
    # the same background rows: exact values of the game sum to its total
    assert exact.importances_mean.sum() == pytest.approx(exact.info.total[0], rel=1e-5)
    # normal intervals from the standard errors
    low, high = sampled.intervals(0.95)
    np.testing.assert_allclose(high - sampled.importances_mean,
                               1.959964 * sampled.importances_std, rtol=1e-5)
    np.testing.assert_allclose(sampled.importances_mean - low, high - sampled.importances_mean)
    frame = sampled.to_frame()
    assert {"std", "q025", "q975"} <= set(frame.columns)


@pytest.mark.parametrize("sampler, n, orders", [
    ("antithetic", 200, 240),  # 32 pilot rows with two pairs, then pass 0 half done
    ("antithetic", 200, 380),  # pass 1: some rows have a pair, the others one order
    ("antithetic", 200, 600),  # later passes: rows with one to two pairs
    ("antithetic", 40, 200),  # every row a pilot row, then later passes
    ("iid", 40, 200),
])
def test_reported_standard_errors_match_the_spread_over_seeds(sampler, n, orders):
    """Over 20 seeds the estimates' spread around the float64 game's values matches the
    reported standard errors: pooled over the features, the ratio of the empirical root mean
    square error to the root mean reported variance is within [0.7, 1.35] (about 3 times its
    sampling spread with 20 seeds x 4 features; it was 0.8 to 1.2 over four data sets)."""
    f_jax, f_np, _ = random_mlp(14, sizes=(4, 8, 1))
    rng = np.random.default_rng(15)
    X = as32(rng.normal(size=(n, 4)))
    y = f_np(X) + 0.3 * rng.normal(size=n)
    B = X[:10]
    truth, _ = reference_sage(f_np, X, y, B, [[0], [1], [2], [3]], mse_rows)
    estimates, errors = [], []
    for seed in range(20):
        result = sage_importance(f_jax, X, y, background=B, sampler=sampler,
                                 n_permutations=orders, convergence=None, batch_size=orders,
                                 random_state=seed)
        assert result.info.sampler == sampler and result.info.n_permutations == orders
        estimates.append(result.importances_mean[:, 0])
        errors.append(result.importances_std[:, 0])
        if sampler == "antithetic" and orders >= 2 * n:  # every row visited: efficiency
            assert result.importances_mean.sum() == pytest.approx(result.info.total[0],
                                                                  rel=1e-6)
    estimates, errors = np.array(estimates), np.array(errors)
    ratio = np.sqrt(((estimates - truth[:, 0]) ** 2).mean() / (errors ** 2).mean())
    assert 0.7 < ratio < 1.35, ratio


def test_the_antithetic_sampler_needs_fewer_orders_for_a_standard_error():
    """Past two passes over the rows the antithetic sampler's standard errors are several
    times smaller than the sage package's sampler's at the same number of orders."""
    f_jax, f_np, _ = random_mlp(16, sizes=(5, 8, 1))
    rng = np.random.default_rng(17)
    X = as32(rng.uniform(size=(60, 5)))
    y = f_np(X) + 0.1 * rng.normal(size=60)
    kwargs = {"background": X[:12], "n_permutations": 400, "convergence": None}
    iid = sage_importance(f_jax, X, y, sampler="iid", **kwargs)
    antithetic = sage_importance(f_jax, X, y, **kwargs)
    assert antithetic.info.sampler == "antithetic" and iid.info.sampler == "iid"
    assert iid.importances_std.max() > 3 * antithetic.importances_std.max()
    # the spread within rows is unknown until every pilot row has two pairs: small batches do
    # not stop before (from a few rows a standard error may come out tiny by chance)
    early = sage_importance(f_jax, X, y, background=X[:12], convergence=0.9, batch_size=4)
    assert early.info.converged and early.info.n_permutations >= 4 * 32
    with pytest.raises(ValueError, match="needs at least 2 rows to explain; got 1"):
        sage_importance(f_jax, X[:1], y[:1], background=X[:12])
    # convergence detection stops each once the largest standard error is below 5% of the range
    for sampler in ("iid", "antithetic"):
        result = sage_importance(f_jax, X, y, background=X[:12], sampler=sampler,
                                 convergence=0.05, batch_size=64)
        assert result.info.converged and result.info.convergence_ratio < 0.05
        spread = np.ptp(result.importances_mean)
        assert result.importances_std.max() < 0.05 * spread


def test_grouped_features_play_as_one():
    X, y, beta = linear_data(n=120, seed=3)
    B = X[:20]
    f = lambda A: A @ jnp.asarray(beta, jnp.float32) + A[:, 0] * A[:, 1]
    f_np = lambda A: A @ beta + A[:, 0] * A[:, 1]
    result = sage_importance(f, X, y, background=B, estimator="exact",
                             groups={"g": ["x0", "x1"]})
    assert result.feature_names == ("g", "x2", "x3")
    ref, _ = reference_sage(f_np, X, y, B, [[0, 1], [2], [3]], mse_rows)
    np.testing.assert_allclose(result.importances_mean, ref, rtol=2e-5, atol=1e-6)


def softmax_model(seed=4, k=3, c=3):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(c, k))

    def f_np(A):
        z = A @ W
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def f_jax(A):
        z = A @ jnp.asarray(W, jnp.float32)
        return jnp.exp(z - jax_logsumexp(z))

    def logits(A):
        return A @ jnp.asarray(W, jnp.float32)

    return f_jax, f_np, logits


def jax_logsumexp(z):
    import jax.scipy.special

    return jax.scipy.special.logsumexp(z, axis=1, keepdims=True)


def log_loss_rows(labels, proba):
    picked = np.clip(proba[np.arange(len(labels)), labels], EPS, 1 - EPS)
    return -np.log(picked)[:, None]


def zero_one_rows(labels, proba):
    return (np.argmax(proba, axis=1) != labels).astype(float)[:, None]


@pytest.mark.parametrize("name", ["poisson", "gamma", "mape", "msle"])
def test_deviance_and_relative_losses_against_the_game(name):
    """SAGE of a log-link model under hstats' unit deviances, or percentage or log errors
    (float64, written out), of the averaged predicted mean."""
    rng = np.random.default_rng(3)
    X = as32(rng.normal(size=(80, 3)))
    coef = np.array([0.6, -0.4, 0.2])
    mean = np.exp(X @ coef)
    y = rng.poisson(mean).astype(float) if name in ("poisson", "msle") else rng.gamma(
        2.0, mean / 2)

    def deviance_rows(target, mu):
        return written_out_loss(name, target.reshape(mu.shape), mu)

    B = X[:12]
    result = sage_importance(lambda A: jnp.exp(A @ jnp.asarray(coef, jnp.float32)), X, y,
                             background=B, estimator="exact", loss=name)
    ref, _ = reference_sage(lambda A: np.exp(A @ coef), X, y, B, [[0], [1], [2]],
                            deviance_rows)
    np.testing.assert_allclose(result.importances_mean, ref, rtol=1e-4, atol=1e-6)
    if name != "mape":  # a mean out of the loss's range is refused by name, not NaN
        with pytest.raises(ValueError, match=f"loss='{name}' needs .* but the model "
                                             "predicted a value outside that"):
            sage_importance(lambda A: A[:, 0] - 1.5, X, y, background=B, estimator="exact",
                            loss=name)


def test_classification_losses_against_the_game():
    f_jax, f_np, logits = softmax_model()
    rng = np.random.default_rng(5)
    X = as32(rng.normal(size=(100, 3)))
    labels = np.argmax(f_np(X) + 0.5 * rng.gumbel(size=(100, 3)), axis=1)
    B = X[:15]
    players = [[0], [1], [2]]
    result = sage_importance(f_jax, X, labels, background=B, estimator="exact")
    assert result.info.loss == "log_loss" and result.output_names == ("y",)  # the default
    ref, _ = reference_sage(f_np, X, labels, B, players, log_loss_rows)
    np.testing.assert_allclose(result.importances_mean, ref, rtol=1e-4, atol=1e-6)
    # logits through response="logits" give the same values
    from_logits = sage_importance(logits, X, labels, background=B, estimator="exact",
                                  response="logits")
    np.testing.assert_allclose(from_logits.importances_mean, ref, rtol=1e-4, atol=1e-6)
    accuracy = sage_importance(f_jax, X, labels, background=B, estimator="exact",
                               loss="accuracy")
    ref, _ = reference_sage(f_np, X, labels, B, players, zero_one_rows)
    np.testing.assert_allclose(accuracy.importances_mean, ref, atol=1e-9)
    brier = sage_importance(f_jax, X, labels, background=B, estimator="exact", loss="brier")
    ref, _ = reference_sage(f_np, X, labels, B, players, lambda codes, proba: (
        (np.eye(3)[codes] - proba) ** 2).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(brier.importances_mean, ref, rtol=1e-4, atol=1e-6)


def test_a_probability_column_of_a_binary_classifier():
    rng = np.random.default_rng(6)
    X = as32(rng.normal(size=(120, 3)))
    w = np.array([1.5, -1.0, 0.0])
    f_np = lambda A: 1 / (1 + np.exp(-(A @ w)))
    f_jax = lambda A: 1 / (1 + jnp.exp(-(A @ jnp.asarray(w, jnp.float32))))
    labels = (rng.uniform(size=120) < f_np(X)).astype(int)
    B = X[:20]
    result = sage_importance(f_jax, X, labels, background=B, estimator="exact",
                             loss="log_loss")

    def two_columns(labels, p):
        return log_loss_rows(labels, np.column_stack([1 - p[:, 0], p[:, 0]]))

    ref, _ = reference_sage(lambda A: f_np(A)[:, None], X, labels, B, [[0], [1], [2]],
                            two_columns)
    np.testing.assert_allclose(result.importances_mean, ref, rtol=1e-4, atol=1e-6)


def test_shapley_effects_of_an_additive_model():
    rng = np.random.default_rng(7)
    X = as32(rng.uniform(size=(150, 3)))
    g = [lambda x: 2 * x, lambda x: x ** 2, lambda x: 0 * x]
    f_jax = lambda A: 2 * A[:, 0] + A[:, 1] ** 2
    result = sage_importance(f_jax, X, target="output", estimator="exact",
                             background_size=None)
    assert result.method == "shapley_effects" and result.info.normalized
    # closed form with the background = X: phi_j = Cov(g_j, f) / Var(f), summing to 1
    parts = np.column_stack([gj(X[:, j]) for j, gj in enumerate(g)])
    f = parts.sum(axis=1)
    closed = ((parts - parts.mean(axis=0)) * (f - f.mean())[:, None]).mean(axis=0) / f.var()
    np.testing.assert_allclose(result.importances_mean[:, 0], closed, rtol=1e-4, atol=1e-6)
    assert result.importances_mean.sum() == pytest.approx(1.0, rel=1e-5)
    raw = sage_importance(f_jax, X, target="output", estimator="exact",
                          background_size=None, normalize=False)
    np.testing.assert_allclose(raw.importances_mean[:, 0], closed * f.var(), rtol=1e-4,
                               atol=1e-6)


@pytest.mark.skipif(not HAVE_SAGE, reason="the sage package is not installed")
def test_agrees_with_the_sage_package_within_standard_errors():
    import sage

    f_jax, f_np, _ = random_mlp(8, sizes=(5, 8, 1))
    rng = np.random.default_rng(9)
    X = as32(rng.normal(size=(400, 5)))
    y = f_np(X) + 0.1 * rng.normal(size=400)
    B = X[:32]
    ours = sage_importance(f_jax, X, y, background=B, convergence=0.05)
    imputer = sage.MarginalImputer(f_np, B)
    theirs = sage.PermutationEstimator(imputer, "mse", random_state=0)(X, y, bar=False,
                                                                        thresh=0.05)
    error = np.hypot(ours.importances_std[:, 0], theirs.std)
    assert np.all(np.abs(ours.importances_mean[:, 0] - theirs.values) < 4 * error + 1e-6)
    # Shapley effects: the package's Y=None, unnormalised
    ours = sage_importance(f_jax, X, target="output", background=B, normalize=False,
                           convergence=0.05)
    theirs = sage.PermutationEstimator(imputer, "mse", random_state=0)(X, None, bar=False,
                                                                        thresh=0.05)
    error = np.hypot(ours.importances_std[:, 0], theirs.std)
    assert np.all(np.abs(ours.importances_mean[:, 0] - theirs.values) < 4 * error + 1e-6)


def soft_log_loss_rows(proba_full, proba):
    return -(proba_full * np.log(np.clip(proba, EPS, 1 - EPS))).sum(axis=1)[:, None]


@pytest.mark.skipif(not HAVE_SAGE, reason="the sage package is not installed")
def test_shapley_effects_with_the_cross_entropy_of_the_models_own_probabilities():
    """target='output', loss='log_loss': the game scores each coalition's mean probabilities
    against the full model's (soft labels): exact values equal the float64 game, and the
    sage package's cross entropy with Y=None within standard errors."""
    import sage

    f_jax, f_np, _ = softmax_model(seed=11)
    rng = np.random.default_rng(12)
    X = as32(rng.normal(size=(150, 3)))
    B = X[:20]
    ours = sage_importance(f_jax, X, target="output", loss="log_loss", background=B,
                           estimator="exact", normalize=False)
    assert ours.info.loss == "log_loss" and ours.importances_mean.shape == (3, 1)
    ref, _ = reference_sage(f_np, X, f_np(X), B, [[0], [1], [2]], soft_log_loss_rows)
    np.testing.assert_allclose(ours.importances_mean, ref, rtol=1e-4, atol=1e-6)
    theirs = sage.PermutationEstimator(sage.MarginalImputer(f_np, B), "cross entropy",
                                       random_state=0)(X, None, bar=False, thresh=0.05)
    sampled = sage_importance(f_jax, X, target="output", loss="log_loss", background=B,
                              normalize=False, convergence=0.05)
    error = np.hypot(sampled.importances_std[:, 0], theirs.std)
    assert np.all(np.abs(sampled.importances_mean[:, 0] - theirs.values) < 4 * error + 1e-6)
    with pytest.raises(ValueError, match="needs class probabilities"):
        sage_importance(lambda A: 3 * A, X, target="output", loss="log_loss",
                        estimator="exact")


def test_loss_and_option_checks():
    _f_jax, _f_np, logits = softmax_model()
    X = as32(np.random.default_rng(10).normal(size=(40, 3)))
    labels = np.arange(40) % 3
    with pytest.raises(ValueError, match="needs class probabilities.*response='logits'"):
        sage_importance(logits, X, labels, loss="log_loss", estimator="exact")
    with pytest.raises(ValueError, match="needs class probabilities.*response='logits'"):
        sage_importance(logits, X, labels, loss="accuracy", estimator="exact")
    with pytest.raises(ValueError, match="class labels"):
        sage_importance(lambda A: jnp.argmax(A, axis=1).astype(jnp.float32), X, labels,
                        loss="log_loss", estimator="exact")
    y = X[:, 0]
    for bad in ("auc", "r2", "rmse", np.mean):
        with pytest.raises(ValueError, match="mean over rows of a per-row loss"):
            sage_importance(lambda A: A[:, 0], X, y, loss=bad)
    with pytest.raises(ValueError, match="target='output'.*got y"):
        sage_importance(lambda A: A[:, 0], X, y, target="output")
    with pytest.raises(ValueError, match="squared error or, for class probabilities, the "
                                         "cross entropy; got loss='mae'"):
        sage_importance(lambda A: A[:, 0], X, target="output", loss="mae")
    with pytest.raises(ValueError, match="response='logits' turns"):
        sage_importance(lambda A: A[:, 0], X, y, response="logits")
    with pytest.raises(ValueError, match="never stop"):
        sage_importance(lambda A: A[:, 0], X, y, convergence=None)
    with pytest.raises(ValueError, match="at most 12"):
        sage_importance(lambda A: A[:, 0], np.zeros((5, 13)), np.zeros(5), estimator="exact")
    with pytest.raises(ValueError, match="convergence must be a number in \\(0, 1\\)"):
        sage_importance(lambda A: A[:, 0], X, y, convergence=1.5)
    with pytest.raises(ValueError, match="estimator must be one of"):
        sage_importance(lambda A: A[:, 0], X, y, estimator="kernel")
    with pytest.raises(ValueError, match="columns of X"):
        sage_importance(lambda A: A[:, 0], X, y, background=np.zeros((5, 2)))


def test_weights_host_models_and_the_result_contract():
    import pickle

    from sklearn.linear_model import LinearRegression

    X, y, _ = linear_data(n=80, seed=11)
    B = X[:15]
    model = LinearRegression().fit(X, y)
    twin = lambda A: A @ jnp.asarray(model.coef_, jnp.float32) + model.intercept_
    host = sage_importance(model, X, y, background=B, estimator="exact")
    ours = sage_importance(twin, X, y, background=B, estimator="exact")
    np.testing.assert_allclose(host.importances_mean, ours.importances_mean, rtol=1e-4,
                               atol=1e-6)
    weights = np.arange(80) % 3 + 0.5
    weighted = sage_importance(twin, X, y, background=B, estimator="exact",
                               sample_weight=weights)
    ref, ref_error = reference_sage(lambda A: A @ model.coef_ + model.intercept_, X, y, B,
                                    [[0], [1], [2], [3]], mse_rows, weights)
    np.testing.assert_allclose(weighted.importances_mean, ref, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(weighted.importances_std, ref_error, rtol=1e-4, atol=1e-6)
    for sampler in ("antithetic", "iid"):  # weighted rows: the same values, sampled
        estimate = sage_importance(twin, X, y, background=B, sample_weight=weights,
                                   n_permutations=800, convergence=None, sampler=sampler)
        # (for a linear model and the squared error a pair's mean is exact: a row's game is
        # quadratic; then the standard error is float32 rounding, hence the 1e-6)
        gap = np.abs(estimate.importances_mean - ref)
        assert np.all(gap < 4 * estimate.importances_std + 1e-6), (sampler, gap)
    sampled = sage_importance(twin, X, y, background=B, n_permutations=64, convergence=None,
                              batch_size=32)
    for result in (weighted, sampled):
        text = repr(result)
        assert text.startswith("SageImportance('sage'") and len(text) < 300, text
        copy = pickle.loads(pickle.dumps(result))
        assert type(copy) is SageImportance and repr(copy) == repr(result)
        assert copy.to_frame().equals(result.to_frame())
        assert result.info.loss == result.info["loss"] == "mse"
        ax = result.plot()
        assert len(ax.patches) == 4
    assert sampled.info.n_permutations == 64 and sampled.info.background_rows is None


def test_warns_when_sampling_stops_before_converging(monkeypatch):
    from jaximp.methods import _sage_estimators

    monkeypatch.setattr(_sage_estimators, "SAGE_MAX_PERMUTATIONS", 64)
    X, y, beta = linear_data(n=50, seed=12)
    f = lambda A: A @ jnp.asarray(beta, jnp.float32)
    with pytest.warns(RuntimeWarning, match="did not converge in 64 samples"):
        result = sage_importance(f, X, y, background=X[:10], convergence=1e-6, batch_size=32)
    assert result.info.n_permutations == 64 and result.info.converged is False


def test_results_do_not_depend_on_the_memory_budget():
    X, y, beta = linear_data(n=60, seed=13)
    f = lambda A: A @ jnp.asarray(beta, jnp.float32)
    for options in ({"estimator": "exact"}, {"n_permutations": 100, "convergence": None}):
        roomy = sage_importance(f, X, y, background=X[:12], **options)
        tight = sage_importance(f, X, y, background=X[:12], memory_budget=1 << 16, **options)
        np.testing.assert_array_equal(roomy.importances_mean, tight.importances_mean)
        np.testing.assert_array_equal(roomy.importances_std, tight.importances_std)
