"""Partial importance (PI) and ICI curves against a float64 NumPy reference, and their
relation to permutation importance."""

import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest
from conftest import written_out_loss

from jaximp.methods._partial_importance import partial_importance
from jaximp.methods._permutation import permutation_importance

matplotlib.use("Agg")


def two_outputs(X):
    return jnp.stack([X[:, 0] * X[:, 1] + X[:, 2], jnp.sin(X[:, 0]) - X[:, 2] ** 2], axis=1)


def two_outputs_np(X):
    return np.stack([X[:, 0] * X[:, 1] + X[:, 2], np.sin(X[:, 0]) - X[:, 2] ** 2], axis=1)


def ref_ici(f, X, y, j, grid, row_loss):
    """(n, g, o) per-row loss changes with column j set to each grid value."""
    base = row_loss(y, f(X))
    out = []
    for z in grid:
        Z = X.copy()
        Z[:, j] = z
        out.append(row_loss(y, f(Z)) - base)
    return np.stack(out, axis=1)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    X[:, 0] = np.round(X[:, 0], 1)  # ties: fewer distinct values than rows
    y = two_outputs_np(X) + rng.normal(scale=0.3, size=(80, 2))
    return X, y, rng.uniform(0.5, 2.0, size=80)


def test_ici_and_pi_equal_reference_weighted_multi_output(data):
    X, y, w = data
    res = partial_importance(two_outputs, X, y, "x0", grid_resolution=7, sample_weight=w)
    grid = np.asarray(res.grid_values)
    ici = ref_ici(two_outputs_np, X, y, 0, grid, lambda y, p: (y - p) ** 2)
    np.testing.assert_allclose(res.ici, ici, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(res.pi, np.einsum("n,ngo->go", w, ici) / w.sum(), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(res.baseline,
                               np.average((y - two_outputs_np(X)) ** 2, axis=0, weights=w),
                               rtol=1e-5)
    sums = partial_importance(two_outputs, X, y, "x0", grid_resolution=7, sample_weight=w,
                              individual=False)
    assert sums.ici is None
    np.testing.assert_allclose(sums.pi, res.pi, rtol=1e-4, atol=1e-5)


def test_log_loss_clips_as_scikit_learn_in_both_forms():
    """Probabilities near 0 are clipped at float64's epsilon, as scikit-learn's log_loss,
    whether ICIs are kept or not (the per-row form clipped at float32's: 7.19 against
    13.55)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss

    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3)) * 5
    y = (X[:, 0] * 1.6 + rng.logistic(size=150) > 0).astype(int)
    model = LogisticRegression(C=1e8, max_iter=100000).fit(X, y)
    kept = partial_importance(model, X, y, "x0", loss="log_loss", individual=True)
    summed = partial_importance(model, X, y, "x0", loss="log_loss", individual=False)
    Z = X.copy()
    Z[:, 0] = kept.grid_values[0]
    expected = log_loss(y, model.predict_proba(Z), labels=[0, 1]) - log_loss(
        y, model.predict_proba(X))
    np.testing.assert_allclose([kept.pi[0, 0], summed.pi[0, 0]], expected, rtol=1e-9)


def test_integral_is_expected_permutation_importance(data):
    X, y, w = data
    res = partial_importance(two_outputs, X, y, "x0", grid="unique", sample_weight=w)
    assert res.grid_counts.sum() == len(X)
    # E over uniform permutations: row pi(i) is uniform over all rows
    f, n = two_outputs_np, len(X)
    base = np.average((y - f(X)) ** 2, axis=0, weights=w)
    expected = np.zeros(2)
    for k in range(n):
        Z = X.copy()
        Z[:, 0] = X[k, 0]
        expected += np.average((y - f(Z)) ** 2, axis=0, weights=w) / n
    expected -= base
    np.testing.assert_allclose(res.integrate(), expected, rtol=1e-5)
    # the permutation importance is a Monte Carlo estimate of it
    pfi = permutation_importance(two_outputs, X, y, features=["x0"], n_repeats=60,
                                 sample_weight=w, random_state=3)
    se = pfi.importances_std[0] / np.sqrt(60)
    assert np.all(np.abs(pfi.importances_mean[0] - expected) < 4 * se)


def test_log_loss_host_classifier_and_categorical(data):
    from sklearn.linear_model import LogisticRegression

    X, _, w = data
    X = X.copy()
    X[:, 1] = np.arange(len(X)) % 3
    labels = (X[:, 0] + 0.5 * X[:, 1] + X[:, 2] > 0.5).astype(int)
    clf = LogisticRegression().fit(X, labels)
    res = partial_importance(clf, X, labels, "x1", loss="log_loss", categorical=["x1"],
                             sample_weight=w)
    assert res.grid_values == (0, 1, 2) and res.output_names == ("y",)

    def log_loss_rows(y, p):
        return -np.log(np.clip(p[np.arange(len(y)), y], 1e-7, 1))[:, None]

    ici = ref_ici(clf.predict_proba, X, labels, 1, [0.0, 1.0, 2.0], log_loss_rows)
    np.testing.assert_allclose(res.ici, ici, atol=1e-9)
    np.testing.assert_allclose(res.integrate(), res.grid_counts @ res.pi / len(X))


def test_callable_loss_equals_named_loss(data):
    X, y, _ = data

    def absolute(y, p):
        return np.abs(y - p)

    a = partial_importance(two_outputs, X, y, "x2", grid_resolution=5, loss=absolute)
    b = partial_importance(two_outputs, X, y, "x2", grid_resolution=5, loss="mae")
    np.testing.assert_allclose(a.ici, b.ici, atol=1e-5)
    assert a.loss == "absolute"


def test_errors_frame_plot_and_repr(data):
    X, y, _ = data
    with pytest.raises(ValueError, match=r"loss must be one of \('mse', 'mae', 'mape', 'msle', "
                                         r"'poisson', 'gamma', 'log_loss'\)"):
        partial_importance(two_outputs, X, y, "x0", loss="r2")
    with pytest.raises(TypeError, match="individual must be True or False"):
        partial_importance(two_outputs, X, y, "x0", individual=1)
    res = partial_importance(two_outputs, X, y, "x2", grid_resolution=5)
    with pytest.raises(ValueError, match="weights must be 5 non-negative numbers"):
        res.integrate([1.0, 2.0])
    with pytest.raises(ValueError, match="kind must be 'average' or 'individual'"):
        res.to_frame("both")
    assert res.grid_counts is None
    assert res.to_frame().shape == (10, 3)
    assert res.to_frame("individual").shape == (80 * 5 * 2, 4)
    assert repr(res).startswith("PartialImportance(x2: 5 grid points, loss 'mse'")
    ax = res.plot(output=1, max_curves=30)
    lines = [line for line in ax.get_lines() if len(line.get_xdata()) == 5]
    assert len(lines) == 30 + 1  # exactly max_curves ICI curves, then the PI curve
    np.testing.assert_allclose(lines[-1].get_ydata(), res.pi[:, 1])
    assert ax.get_xlabel() == "x2" and ax.get_ylabel() == f"change in mse ({res.output_names[1]})"
    import matplotlib.pyplot as plt

    plt.close("all")


def test_grid_dict_without_the_feature_keeps_the_quantile_default(data):
    """A grid dict that does not name the feature falls back to partial_importance's own
    default grid ("quantile"), or the dict's "__default__"; naming it gives those values."""
    X, y, _ = data
    quantile = partial_importance(two_outputs, X, y, "x1", grid_resolution=6)
    other = partial_importance(two_outputs, X, y, "x1", grid_resolution=6,
                               grid={"x0": [0.0, 1.0]})
    assert other.grid_values == quantile.grid_values
    np.testing.assert_allclose(other.pi, quantile.pi)
    unique = partial_importance(two_outputs, X, y, "x0", grid={"__default__": "unique"})
    assert unique.grid_values == tuple(np.unique(X[:, 0]).tolist())
    named = partial_importance(two_outputs, X, y, "x1", grid={"x1": [-1.0, 0.5]})
    assert named.grid_values == (-1.0, 0.5)


@pytest.mark.parametrize("loss", ["poisson", "gamma", "mape", "msle"])
def test_deviance_and_relative_losses_equal_reference(loss):
    """ICI curves and PI under the Poisson or gamma deviance (hstats' formulas), the absolute
    percentage error or the squared log error, float64 NumPy written out, in both forms."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    coef = np.array([0.5, -0.2])
    mean = np.exp(X @ coef)
    y = rng.poisson(mean).astype(float) if loss in ("poisson", "msle") else rng.gamma(
        2.0, mean / 2)

    def row_loss(target, mu):
        return written_out_loss(loss, target.reshape(mu.shape), mu)

    res = partial_importance(lambda A: jnp.exp(A @ jnp.asarray(coef, jnp.float32)), X, y,
                             "x0", grid_resolution=6, loss=loss)
    ici = ref_ici(lambda A: np.exp(A @ coef)[:, None], X, y[:, None], 0,
                  np.asarray(res.grid_values), row_loss)
    np.testing.assert_allclose(res.ici, ici, rtol=1e-4, atol=1e-5)
    sums = partial_importance(lambda A: jnp.exp(A @ jnp.asarray(coef, jnp.float32)), X, y,
                              "x0", grid_resolution=6, loss=loss, individual=False)
    np.testing.assert_allclose(sums.pi, ici.mean(axis=0), rtol=1e-4, atol=1e-5)
    if loss != "mape":  # a mean out of the loss's range is refused by name in both forms
        for individual in (True, False):
            with pytest.raises(ValueError, match=f"loss='{loss}' needs .* but the model "
                                                 "predicted a value outside that"):
                partial_importance(lambda A: A[:, 0] - 1.5, X, y, "x0", loss=loss,
                                   individual=individual)


def test_a_loss_averaged_over_the_rows_is_refused_with_the_fix():
    from sklearn.metrics import mean_squared_error

    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match=r"loss 'mean_squared_error' must return one loss per "
                                         r"row, shape \(50,\) or \(50, o\); it returned shape"):
        partial_importance(lambda A: A[:, 0], X, X[:, 0], "x0", loss=mean_squared_error)
