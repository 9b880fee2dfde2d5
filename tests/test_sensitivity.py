"""Huh & Lee sensitivity importance: Huh & Lee (2003) Table 2, closed forms, draws, validation."""

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from jaximp.kernels import _streams

import jaximp
from jaximp.data._checks import as_key
from jaximp.engine._plans import at_drawn_rows
from jaximp.methods._sensitivity import sensitivity_importance

TABLE2_LINEAR = np.array([0.72, 0.54, 0.37, 0.19])  # Huh & Lee (2003), Table 2, linear regression


@pytest.fixture(scope="module")
def table2():
    X, y = jaximp.make_linear()  # Y = 4X1 + 3X2 + 2X3 + X4 + e, n = 1000
    A = np.c_[np.ones(len(y)), X.to_numpy()]
    b = np.linalg.lstsq(A, y, rcond=None)[0]
    w = jnp.asarray(b[1:], jnp.float32)

    def ols(Z):
        return Z @ w + b[0]

    beta = b[1:] * X.to_numpy().std(axis=0) / y.std()  # standardized coefficients
    return X, y, ols, beta


def test_reproduces_table2_linear_column(table2):
    X, y, ols, beta = table2
    result = sensitivity_importance(ols, X, y)  # R = 10 repeats, N = 10 n pairs
    got = result.importances_mean[:, 0]
    assert result.importances.shape == (4, 1, 10)
    assert result.info["n_pairs"] == 10_000
    np.testing.assert_allclose(got, TABLE2_LINEAR, atol=0.03)
    np.testing.assert_allclose(got, beta, atol=0.02)  # equal to the betas, sampling error
    assert np.all(np.diff(got) < 0)
    # D_y estimates E|y* - y**| = 2 sd(y) / sqrt(pi) (the paper reports 6.18)
    np.testing.assert_allclose(result.info["D_y"].mean(), 2 * y.std() / np.sqrt(np.pi),
                               rtol=0.03)


def test_mlp_on_table2_data_gives_the_same_pattern(table2):
    X, y, _, beta = table2
    mlp = jaximp.fit_mlp(X, y, hidden=(8,), steps=300, random_state=0)
    got = sensitivity_importance(mlp, X, y, n_repeats=5).importances_mean[:, 0]
    np.testing.assert_allclose(got, TABLE2_LINEAR, atol=0.05)
    np.testing.assert_allclose(got / got[0], beta / beta[0], atol=0.06)  # 4 : 3 : 2 : 1


def test_linear_model_closed_form_with_empirical_draws(table2):
    """For f linear, D_p = |b_p| * mean_i |x*_i - x**_i| over the very same draws."""
    X, y, ols, _ = table2
    b = np.asarray(ols(jnp.eye(4)) - ols(jnp.zeros((4, 4))))
    result = sensitivity_importance(ols, X, y, n_repeats=2, random_state=5)
    x = X.to_numpy()
    n = len(y)
    bits = jnp.asarray(at_drawn_rows(np.ones((1, 4), bool), [0], as_key(5), [0]).key_bits)

    def draws(*label):  # the engine's draws for item label (feature, repeat, draw)
        seed = _streams.seed_of(bits, jnp.asarray(label))
        return np.asarray(_streams.uniform_rows(seed, jnp.arange(n), jnp.int32(n)))

    for j in range(4):
        for r in range(2):
            first, second = draws(j, r, 0), draws(j, r, 1)
            expected = abs(b[j]) * np.mean(np.abs(x[first, j] - x[second, j]))
            np.testing.assert_allclose(result.info["D_p"][j, 0, r], expected, rtol=2e-5)


def test_max_variant_closed_form_for_linear_model(table2):
    X, y, ols, _ = table2
    b = np.asarray(ols(jnp.eye(4)) - ols(jnp.zeros((4, 4))))
    result = sensitivity_importance(ols, X, y, variant="max")
    x = X.to_numpy()
    expected = np.abs(b) * np.ptp(x, axis=0) / np.ptp(y)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-4)
    assert result.method == "sensitivity_max" and result.importances_std is None
    assert result.info["n_values"] == 5


def test_feature_without_effect_is_exactly_zero_and_subsets_agree(table2):
    X, y, ols, _ = table2

    def f(Z):
        return ols(Z.at[:, 3].set(0.0))

    full = sensitivity_importance(f, X, y, n_repeats=3, random_state=2)
    assert np.all(full.importances[3] == 0.0)
    one = sensitivity_importance(f, X, y, n_repeats=3, random_state=2, features="X2")
    # equal up to float32 rounding: a GPU may sum a batch of another shape in another order
    np.testing.assert_allclose(one.importances[0], full.importances[1], rtol=1e-6)
    again = sensitivity_importance(f, X, y, n_repeats=3, random_state=2,
                                   memory_budget=1 << 16)
    np.testing.assert_allclose(again.importances, full.importances, rtol=1e-6)


def test_groups_are_drawn_from_one_row_and_categorical_max_uses_levels():
    rng = np.random.default_rng(1)
    n = 300
    level = rng.integers(0, 3, size=n)
    frame = pd.DataFrame({"x": rng.normal(size=n), "code": rng.integers(0, 4, size=n)})
    for k, name in enumerate(["r", "g", "b"]):
        frame[name] = (level == k).astype(float)

    def f(Z):
        block = Z[:, 2:]
        valid = jnp.all(jnp.sum(block, axis=1) == 1.0)
        return jnp.where(valid, Z[:, 0] + 0.5 * Z[:, 1] + block @ jnp.array([0.0, 1.0, 3.0]),
                         jnp.nan)

    y = np.asarray(f(jnp.asarray(frame.to_numpy(), jnp.float32)))
    kwargs = dict(groups={"color": ["r", "g", "b"]}, categorical=["code"])
    result = sensitivity_importance(f, frame, y, n_repeats=3, **kwargs)
    assert result.feature_names == ("x", "code", "color")
    maximum = sensitivity_importance(f, frame, y, variant="max", **kwargs)
    np.testing.assert_allclose(maximum.info["D_p"][:, 0],
                               [np.ptp(frame["x"]), 0.5 * 3, 3.0], rtol=1e-5)


def test_weighted_draws_skip_zero_weight_rows():
    cdf = jnp.asarray(np.cumsum(np.r_[np.zeros(5), np.ones(5)] / 5), jnp.float32)
    draws = _streams.weighted_rows(jnp.uint32(0), jnp.arange(2000), cdf, jnp.int32(10))
    assert int(draws.min()) == 5 and int(draws.max()) == 9
    X = np.random.default_rng(0).normal(size=(10, 1))
    X[:5] = 100.0  # rows of weight 0: never drawn, so D_p stays small
    w = np.r_[np.zeros(5), np.ones(5)]
    result = sensitivity_importance(lambda Z: Z[:, 0], X, X[:, 0] + 1.0, sample_weight=w)
    assert result.info["D_p"].max() < 10


def test_multi_output_and_frame(table2):
    X, y, ols, _ = table2
    result = sensitivity_importance(lambda Z: jnp.stack([ols(Z), -2 * ols(Z)], axis=1), X,
                                    np.c_[y, -2 * y], n_repeats=2)
    np.testing.assert_allclose(result.importances[:, 0], result.importances[:, 1], rtol=1e-5)
    frame = result.to_frame()
    assert list(frame.columns) == ["feature", "output", "importance", "std", "q025", "q975"]
    assert frame["feature"].tolist()[:4] == ["X1", "X2", "X3", "X4"]


def test_validation_messages(table2):
    X, y, ols, _ = table2
    cases = [
        (dict(variant="mean"), "variant must be one of ('random', 'max'); got 'mean'."),
        (dict(n_repeats=0), "n_repeats must be an int >= 1; got 0."),
        (dict(n_pairs=2.5), "n_pairs must be an int >= 1 or None; got 2.5."),
        (dict(n_values=1), "n_values must be an int >= 2; got 1."),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError) as err:
            sensitivity_importance(ols, X, y, **kwargs)
        assert str(err.value) == message
    with pytest.raises(ValueError, match=r"y has 2 column\(s\) but 1 model output\(s\) are "
                                         r"scored"):
        sensitivity_importance(ols, X, np.c_[y, y])
    with pytest.raises(ValueError, match="y must hold numbers; got dtype <U1."):
        sensitivity_importance(ols, X, np.array(["a"] * len(y)))
    with pytest.raises(ValueError, match=r"y is constant \(every target pair is equal\)"):
        sensitivity_importance(ols, X, np.ones(len(y)), n_repeats=1)
    with pytest.raises(ValueError, match="y is constant; its range D_y = 0"):
        sensitivity_importance(ols, X, np.ones(len(y)), variant="max")
    with pytest.raises(ValueError, match="variant='max' needs single columns or one-hot "
                                         "groups; feature 'g' is a group of 2 columns"):
        sensitivity_importance(ols, X, y, variant="max", groups={"g": ["X1", "X2"]})


def test_max_variant_leaves_rows_of_weight_zero_out_of_its_ranges():
    """The max variant's grids and max(y) - min(y) span the rows of positive weight: a row
    of weight 0 (an outlier here) changes nothing, as dropping it (as in the random
    variant, which never draws it)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    X[0] = [8.0, -9.0]
    f = lambda A: jnp.sin(A[:, 0]) + 0.5 * A[:, 1]  # noqa: E731
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=40)
    y[0] = 25.0
    w = np.ones(40)
    w[0] = 0.0
    weighted = sensitivity_importance(f, X, y, variant="max", sample_weight=w)
    dropped = sensitivity_importance(f, X[1:], y[1:], variant="max")
    np.testing.assert_allclose(weighted.importances_mean, dropped.importances_mean, rtol=1e-6)
    np.testing.assert_allclose(weighted.info.D_y, dropped.info.D_y, rtol=1e-12)
