"""Loss kernels: float64 references, eager == jit == vmap, closed forms, array-likes."""

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from conftest import written_out_loss
from jaximp.kernels import _losses as _K
from sklearn import metrics

RNG = np.random.default_rng(0)


class _Jitted:
    """The kernels under jax.jit (one compile per signature); eager runs are tested below."""

    def __getattr__(self, name):
        return jax.jit(getattr(_K, name))


K = _Jitted()

N = 300
Y_REG = RNG.normal(size=N)
P_REG = Y_REG + RNG.normal(scale=0.5, size=N)
W = RNG.uniform(0.2, 2.0, size=N)
Y_BIN = (RNG.uniform(size=N) < 0.4).astype(int)
P_BIN = np.clip(0.4 * Y_BIN + 0.6 * RNG.uniform(size=N), 0.01, 0.99)
Y_MC = RNG.integers(0, 3, size=N)
LOGITS = RNG.normal(size=(N, 3)) + 1.5 * np.eye(3)[Y_MC]
P_MC = np.exp(LOGITS) / np.exp(LOGITS).sum(1, keepdims=True)


def f32(a):
    return jnp.asarray(a, jnp.float32)


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_losses_match_float64_reference(weighted):
    w = W if weighted else None
    wj = None if w is None else f32(w)
    y, p = f32(Y_REG), f32(P_REG)
    cases = {
        K.mean_squared_error: metrics.mean_squared_error(Y_REG, P_REG, sample_weight=w),
        K.root_mean_squared_error: np.sqrt(
            metrics.mean_squared_error(Y_REG, P_REG, sample_weight=w)),
        K.mean_absolute_error: metrics.mean_absolute_error(Y_REG, P_REG, sample_weight=w),
        K.r2_score: metrics.r2_score(Y_REG, P_REG, sample_weight=w),
    }
    for kernel, expected in cases.items():
        np.testing.assert_allclose(float(kernel(y, p, wj)), expected, rtol=2e-6,
                                   err_msg=kernel.__name__)


@pytest.mark.parametrize("weighted", [False, True])
def test_brier_score_matches_sklearn_and_its_definition(weighted):
    """scikit-learn's scale_by_half='auto': halved for two classes, a sum for more."""
    w = W if weighted else None
    wj = None if w is None else f32(w)
    two = np.c_[1 - P_BIN, P_BIN]
    expected = metrics.brier_score_loss(Y_BIN, P_BIN, sample_weight=w)
    np.testing.assert_allclose(float(K.brier_score(Y_BIN, f32(P_BIN[:, None]), wj)), expected,
                               rtol=1e-6)
    np.testing.assert_allclose(float(K.brier_score(Y_BIN, f32(two), wj)), expected, rtol=1e-6)
    multi = metrics.brier_score_loss(Y_MC, P_MC, sample_weight=w)
    np.testing.assert_allclose(float(K.brier_score(Y_MC, f32(P_MC), wj)), multi, rtol=1e-6)
    by_hand = np.average(((np.eye(3)[Y_MC] - P_MC) ** 2).sum(axis=1), weights=w)
    np.testing.assert_allclose(multi, by_hand, rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_percentage_and_log_errors_match_sklearn(weighted):
    w = W if weighted else None
    y = np.where(np.arange(N) % 50 == 0, 0.0, np.exp(Y_REG))  # zeros: scikit-learn's eps
    p = np.exp(P_REG)
    with jax.enable_x64(True):
        for kernel, sk in [(K.mean_absolute_percentage_error,
                            metrics.mean_absolute_percentage_error),
                           (K.mean_squared_log_error, metrics.mean_squared_log_error),
                           (K.root_mean_squared_log_error,
                            metrics.root_mean_squared_log_error)]:
            got = float(kernel(jnp.asarray(y), jnp.asarray(p),
                               None if w is None else jnp.asarray(w)))
            np.testing.assert_allclose(got, sk(y, p, sample_weight=w), rtol=1e-12,
                                       err_msg=sk.__name__)
    # the Metrics package's definitions where y is not 0: the same numbers
    away = y != 0
    np.testing.assert_allclose(
        float(K.mean_absolute_percentage_error(f32(y[away]), f32(p[away]))),
        np.mean(np.abs((y[away] - p[away]) / y[away])), rtol=1e-5)
    np.testing.assert_allclose(float(K.mean_squared_log_error(f32(y), f32(p))),
                               np.mean((np.log(1 + y) - np.log(1 + p)) ** 2), rtol=1e-5)
    assert np.isnan(float(K.mean_squared_log_error(f32([1.0, 2.0]), f32([1.0, -1.0]))))


@pytest.mark.parametrize("n", [1, 2, 3, 10, 11, 300])
def test_median_absolute_error_matches_sklearn_with_and_without_weights(n):
    """scikit-learn's rule: the median, and with weights the error where the cumulative weight
    passes half (the mean of the two around it where it reaches half exactly: integer weights
    with zeros among them, ten weights of 0.1)."""
    rng = np.random.default_rng(n)
    y, p = rng.normal(size=n), rng.normal(size=n)
    counts = rng.integers(0, 4, size=n).astype(float)
    counts[0] = 1.0
    with jax.enable_x64(True):
        for w in (None, counts, rng.uniform(0.1, 2.0, size=n), np.full(n, 0.1)):
            got = float(K.median_absolute_error(jnp.asarray(y), jnp.asarray(p),
                                                None if w is None else jnp.asarray(w)))
            # equal weights give the median; scikit-learn 1.9's exact comparison of the
            # cumulative weight with half misses it for 300 weights of 0.1 (rounding)
            expected = (np.median(np.abs(y - p)) if w is not None and np.ptp(w) == 0 else
                        metrics.median_absolute_error(y, p, sample_weight=w))
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("weighted", [False, True])
def test_deviances_match_sklearn_and_hstats_formula(weighted):
    w = W if weighted else None
    wj = None if w is None else f32(w)
    mean = np.exp(0.3 * Y_REG)
    counts = RNG.poisson(mean).astype(float)  # zeros among them: the 2 f term
    amounts = RNG.gamma(2.0, mean / 2.0)
    assert (counts == 0).any()
    poisson = written_out_loss("poisson", counts, mean)
    gamma = written_out_loss("gamma", amounts, mean)
    for kernel, y, rows, sk in [(K.mean_poisson_deviance, counts, poisson,
                                 metrics.mean_poisson_deviance),
                                (K.mean_gamma_deviance, amounts, gamma,
                                 metrics.mean_gamma_deviance)]:
        got = float(kernel(jnp.asarray(y), jnp.asarray(mean), None if w is None else
                           jnp.asarray(w)))
        np.testing.assert_allclose(got, np.average(rows, weights=w), rtol=1e-6)
        np.testing.assert_allclose(got, sk(y, mean, sample_weight=w), rtol=1e-6)
        np.testing.assert_allclose(float(kernel(f32(y), f32(mean), wj)), got, rtol=1e-5)
    # float32 counts near 1e6 and their close means keep their digits (0.4% off, computed as
    # y log(y / f) - y + f), and so does the squared log error
    big_mean = 1e6 * np.exp(0.002 * RNG.normal(size=N))
    big = RNG.poisson(big_mean).astype(float)
    for kernel, sk in [(K.mean_poisson_deviance, metrics.mean_poisson_deviance),
                       (K.mean_gamma_deviance, metrics.mean_gamma_deviance),
                       (K.mean_squared_log_error, metrics.mean_squared_log_error)]:
        np.testing.assert_allclose(float(kernel(f32(big), f32(big_mean))), sk(
            np.float32(big).astype(float), np.float32(big_mean).astype(float)), rtol=1e-4,
            err_msg=sk.__name__)
    # float64: within 1e-13 of a 50-digit evaluation across the series' switch
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    for t in np.r_[np.linspace(-0.2, 0.2, 81), 0.0059, 0.0061, -0.0061, 0.099, 0.101]:
        mean = 1000.0 * (1 + t)
        exact = 2 * (1000 * mpmath.log(mpmath.mpf(1000) / mpmath.mpf(mean)) - 1000 + mean)
        got = _K.poisson_unit_deviance(np.float64(1000.0), np.float64(mean), np)
        assert abs(got - float(exact)) <= 1e-13 * max(float(exact), 1e-300), t
    # outside the family's range: NaN, never a finite number
    assert np.isnan(float(K.mean_poisson_deviance(f32([1.0, 0.0]), f32([1.0, -0.5]))))
    assert np.isnan(float(K.mean_gamma_deviance(f32([1.0, 2.0]), f32([1.0, 0.0]))))


@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_matches_hstats_formula_and_the_log_loss_of_labels(weighted):
    """hstats' logloss of probabilities as targets (0 and 1 among them), written out; of 0/1
    targets it is the binary log loss."""
    w = W if weighted else None
    wj = None if w is None else jnp.asarray(w)
    soft = np.clip(P_BIN + RNG.normal(scale=0.3, size=N), 0.0, 1.0)
    assert (soft == 0).any() and (soft == 1).any()
    got = float(_K.mean_cross_entropy(jnp.asarray(soft), jnp.asarray(P_BIN), wj))
    np.testing.assert_allclose(got, np.average(written_out_loss("logloss", soft, P_BIN),
                                               weights=w), rtol=1e-6)
    labels = float(_K.mean_cross_entropy(jnp.asarray(Y_BIN, jnp.float64), jnp.asarray(P_BIN),
                                         wj))
    np.testing.assert_allclose(labels, metrics.log_loss(Y_BIN, P_BIN, sample_weight=w),
                               rtol=1e-6)
    np.testing.assert_allclose(float(K.mean_cross_entropy(f32(soft), f32(P_BIN), wj)), got,
                               rtol=1e-5)


@pytest.mark.parametrize("weighted", [False, True])
def test_classification_losses_match_sklearn(weighted):
    w = W if weighted else None
    wj = None if w is None else f32(w)
    two = np.c_[1 - P_BIN, P_BIN]
    np.testing.assert_allclose(
        float(K.log_loss(jnp.asarray(Y_BIN), f32(P_BIN[:, None]), wj)),
        metrics.log_loss(Y_BIN, P_BIN, sample_weight=w), rtol=1e-5)
    np.testing.assert_allclose(
        float(K.log_loss(jnp.asarray(Y_BIN), f32(two), wj)),
        metrics.log_loss(Y_BIN, two, sample_weight=w), rtol=1e-5)
    np.testing.assert_allclose(
        float(K.log_loss(jnp.asarray(Y_MC), f32(P_MC), wj)),
        metrics.log_loss(Y_MC, P_MC, sample_weight=w), rtol=1e-5)
    acc_bin = metrics.accuracy_score(Y_BIN, P_BIN >= 0.5, sample_weight=w)
    np.testing.assert_allclose(float(K.accuracy_score(jnp.asarray(Y_BIN), f32(P_BIN[:, None]),
                                                      wj)), acc_bin, rtol=1e-6)
    np.testing.assert_allclose(float(K.accuracy_score(jnp.asarray(Y_MC), f32(P_MC), wj)),
                               metrics.accuracy_score(Y_MC, P_MC.argmax(1), sample_weight=w),
                               rtol=1e-6)
    labels = P_MC.argmax(1)
    np.testing.assert_allclose(float(K.accuracy_score(jnp.asarray(Y_MC), f32(labels), wj)),
                               metrics.accuracy_score(Y_MC, labels, sample_weight=w), rtol=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
def test_auc_by_ranks_matches_sklearn_with_ties(weighted):
    w = W if weighted else None
    wj = None if w is None else f32(w)
    tied = np.round(P_BIN, 1)  # many ties
    for score in (P_BIN, tied):
        expected = metrics.roc_auc_score(Y_BIN, score, sample_weight=w)
        np.testing.assert_allclose(float(K.binary_roc_auc(jnp.asarray(Y_BIN), f32(score), wj)),
                                   expected, rtol=1e-5)
        np.testing.assert_allclose(
            float(K.roc_auc_score(jnp.asarray(Y_BIN), f32(np.c_[1 - score, score]), wj)),
            expected, rtol=1e-5)
    expected = metrics.roc_auc_score(Y_MC, P_MC, multi_class="ovr", average="macro",
                                     sample_weight=w)
    np.testing.assert_allclose(float(K.roc_auc_score(jnp.asarray(Y_MC), f32(P_MC), wj)),
                               expected, rtol=1e-5)


def test_auc_brute_force_float64_pairs():
    """The rank formula equals the O(n^2) definition over all (positive, negative) pairs."""
    y = Y_BIN[:80]
    s = np.round(P_BIN[:80], 1)
    w = W[:80]
    pos, neg = y == 1, y == 0
    diff = s[pos][:, None] - s[neg][None, :]
    pair_w = w[pos][:, None] * w[neg][None, :]
    expected = (pair_w * ((diff > 0) + 0.5 * (diff == 0))).sum() / pair_w.sum()
    got = float(K.binary_roc_auc(jnp.asarray(y), f32(s), f32(w)))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


KERNELS = [
    (_K.mean_squared_error, Y_REG, P_REG),
    (_K.root_mean_squared_error, Y_REG, P_REG),
    (_K.mean_absolute_error, Y_REG, P_REG),
    (_K.r2_score, Y_REG, P_REG),
    (_K.log_loss, Y_MC, P_MC),
    (_K.accuracy_score, Y_MC, P_MC),
    (_K.roc_auc_score, Y_MC, P_MC),
    (_K.binary_roc_auc, Y_BIN, P_BIN),
]


@pytest.mark.parametrize("kernel,y,pred", KERNELS, ids=lambda v: getattr(v, "__name__", ""))
def test_eager_equals_jit_equals_vmap(kernel, y, pred):
    y = jnp.asarray(y)
    preds = jnp.stack([f32(pred), f32(pred[::-1])])  # two items along a leading axis
    w = f32(W)
    eager = np.asarray([kernel(y, preds[0], w), kernel(y, preds[1], w)])
    jitted = np.asarray([jax.jit(kernel)(y, preds[0], w), jax.jit(kernel)(y, preds[1], w)])
    batched = np.asarray(jax.jit(jax.vmap(kernel, in_axes=(None, 0, None)))(y, preds, w))
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    np.testing.assert_allclose(batched, eager, rtol=1e-6)


def test_closed_form_cases():
    y = f32([0.0, 1.0, 2.0, 3.0])
    assert float(K.mean_squared_error(y, y)) == 0.0
    assert float(K.r2_score(y, y)) == 1.0
    assert float(K.r2_score(y, jnp.full(4, 1.5))) == 0.0
    labels = jnp.asarray([0, 0, 1, 1])
    assert float(K.binary_roc_auc(labels, f32([0.1, 0.2, 0.3, 0.4]))) == 1.0
    assert float(K.binary_roc_auc(labels, f32([0.4, 0.3, 0.2, 0.1]))) == 0.0
    assert float(K.binary_roc_auc(labels, jnp.zeros(4))) == 0.5  # all ties
    assert float(K.accuracy_score(labels, f32([[0.0], [0.49], [0.5], [1.0]]))) == 1.0
    # clipping keeps log loss finite for certain but wrong predictions
    assert np.isfinite(float(K.log_loss(labels, f32([[1.0], [1.0], [0.0], [0.0]]))))


def test_weights_equal_repeated_rows_and_zero_weight_drops_rows():
    y, p = Y_REG[:50], P_REG[:50]
    counts = RNG.integers(0, 4, size=50)
    rep_y, rep_p = np.repeat(y, counts), np.repeat(p, counts)
    for kernel in (K.mean_squared_error, K.mean_absolute_error, K.r2_score):
        np.testing.assert_allclose(float(kernel(f32(y), f32(p), f32(counts))),
                                   float(kernel(f32(rep_y), f32(rep_p))), rtol=1e-5)
    yb, sb = Y_BIN[:50], P_BIN[:50]
    np.testing.assert_allclose(
        float(K.binary_roc_auc(jnp.asarray(yb), f32(sb), f32(counts))),
        float(K.binary_roc_auc(jnp.asarray(np.repeat(yb, counts)), f32(np.repeat(sb, counts)))),
        rtol=1e-6)


def test_pandas_inputs_equal_numpy_inputs():
    frame = pd.DataFrame({"y": Y_REG, "p": P_REG})
    assert float(K.mean_squared_error(jnp.asarray(frame["y"].to_numpy()),
                                      jnp.asarray(frame["p"].to_numpy()))) == float(
        K.mean_squared_error(jnp.asarray(Y_REG), jnp.asarray(P_REG)))
    np.testing.assert_allclose(
        float(K.log_loss(jnp.asarray(pd.Series(Y_MC).to_numpy()),
                         f32(pd.DataFrame(P_MC).to_numpy()))),
        float(K.log_loss(jnp.asarray(Y_MC), f32(P_MC))))


def test_static_shape_checks_name_the_kernel():
    with pytest.raises(ValueError, match="mean_squared_error: y, prediction and weights must "
                                         "have the same rows"):
        _K.mean_squared_error(jnp.zeros(3), jnp.zeros(4))
    with pytest.raises(ValueError, match=r"probabilities must have shape \(n, o\)"):
        _K.log_loss(jnp.zeros(3, jnp.int32), jnp.zeros(3))


@pytest.mark.parametrize("weighted", [False, True])
def test_metrics_package_losses_match_their_r_definitions(weighted):
    """The R package Metrics' rse, rrse, rae, smape and percent_bias (iml's loss names),
    written out from its sources in float64 (case weights weigh every sum), as kernels and
    as permutation-importance losses: on the intact data (average_loss) and as ratios, which
    for rse, rrse and rae are those of mse, rmse and mae (their denominators are fixed)."""
    import jaximp

    w = np.ones(N) if not weighted else W
    y, p = Y_REG, P_REG

    def mean(t):
        return np.sum(w * t) / np.sum(w)

    rse = np.sum(w * (y - p) ** 2) / np.sum(w * (y - mean(y)) ** 2)
    expected = {"rse": rse, "rrse": np.sqrt(rse),
                "rae": np.sum(w * np.abs(y - p)) / np.sum(w * np.abs(y - mean(y))),
                "smape": mean(2 * np.abs(y - p) / (np.abs(y) + np.abs(p))),
                "percent_bias": mean((y - p) / np.abs(y))}
    kernels = {"rse": K.relative_squared_error, "rrse": K.root_relative_squared_error,
               "rae": K.relative_absolute_error,
               "smape": K.symmetric_mean_absolute_percentage_error,
               "percent_bias": K.percent_bias}
    weights = None if not weighted else W
    for name, kernel in kernels.items():
        np.testing.assert_allclose(float(kernel(f32(y), f32(p), None if weights is None
                                                else f32(weights))), expected[name],
                                   rtol=2e-5, err_msg=name)
    X = np.column_stack([p, RNG.normal(size=N)])
    model = lambda A: A[:, 0]  # noqa: E731  (predicts p; the second column is noise)
    for name in kernels:
        got = jaximp.average_loss(model, X, y, loss=name, sample_weight=weights)
        np.testing.assert_allclose(got.to_numpy().ravel(), expected[name], rtol=1e-6)
    for relative, plain in (("rse", "mse"), ("rrse", "rmse"), ("rae", "mae")):
        a, b = (jaximp.permutation_importance(model, X, y, loss=loss, kind="ratio",
                                              n_repeats=3, sample_weight=weights)
                for loss in (relative, plain))
        np.testing.assert_allclose(a.importances, b.importances, rtol=1e-6)  # float32 sums


def test_a_row_of_weight_zero_is_left_out_even_where_its_term_is_infinite():
    """percent_bias of y = 0 is infinite; at weight 0 the row is left out, as dropping it
    does (0 * inf gave NaN)."""
    import jaximp

    X = np.column_stack([P_REG, RNG.normal(size=N)])
    y = Y_REG.copy()
    y[0] = 0.0
    w = np.ones(N)
    w[0] = 0.0
    for loss in ("percent_bias", "smape", "mape"):
        got = jaximp.average_loss(lambda A: A[:, 0], X, y, loss=loss, sample_weight=w)
        dropped = jaximp.average_loss(lambda A: A[:, 0], X[1:], y[1:], loss=loss)
        np.testing.assert_allclose(got.to_numpy(), dropped.to_numpy(), rtol=1e-12,
                                   err_msg=loss)
