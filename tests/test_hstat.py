"""Friedman's H-statistic: published values, closed forms, a float64 NumPy reference, bootstrap."""

import itertools
import warnings

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import random_mlp
from jaximp.kernels import h_parts, h_value, pd_at_rows

from jaximp.methods._hstat import HStatistic, h_statistic

# ------------------------------------------------------------------------------------------
# A separately written float64 NumPy reference (loops, no shared code with jaximp).
# ------------------------------------------------------------------------------------------


def ref_pd_at_rows(f, X, w, cols):
    """PD of the columns ``cols`` at every row, background = all rows weighted by w: (n, o)."""
    out = []
    for i in range(X.shape[0]):
        Xr = X.copy()
        Xr[:, cols] = X[i, cols]
        pred = np.asarray(f(Xr), np.float64).reshape(X.shape[0], -1)
        out.append((w[:, None] * pred).sum(0) / w.sum())
    return np.array(out)


def ref_center(F, w):
    return F - (w[:, None] * F).sum(0) / w.sum()


def ref_stat(joint, parts, signs, w, normalized=True, squared=True, eps=1e-10):
    joint = ref_center(joint, w)
    resid = joint - sum(s * ref_center(p, w) for s, p in zip(signs, parts))
    num = (w[:, None] * resid**2).sum(0) / w.sum()
    den = (w[:, None] * joint**2).sum(0) / w.sum()
    value = np.where(num <= eps * den, 0.0, num / np.where(den > 0, den, 1) if normalized else num)
    return value if squared else np.sqrt(value)


def ref_h_all(f, X, w, pairs, triples, **options):
    """Overall, pairwise, total and three-way H (each (., o)) for columns = features."""
    p = X.shape[1]
    F = np.asarray(f(X), np.float64).reshape(X.shape[0], -1)
    single = {j: ref_pd_at_rows(f, X, w, [j]) for j in range(p)}
    minus = {j: ref_pd_at_rows(f, X, w, [k for k in range(p) if k != j]) for j in range(p)}
    overall = np.array([ref_stat(F, [single[j], minus[j]], [1, 1], w, **options)
                        for j in range(p)])
    total = ref_stat(F, [single[j] for j in range(p)], [1] * p, w, **options)
    pairwise = np.array([
        ref_stat(ref_pd_at_rows(f, X, w, [j, k]), [single[j], single[k]], [1, 1], w, **options)
        for j, k in pairs
    ])
    three = []
    for j, k, l in triples:
        parts = [ref_pd_at_rows(f, X, w, list(c)) for c in ((j, k), (j, l), (k, l))]
        parts += [single[j], single[k], single[l]]
        three.append(ref_stat(ref_pd_at_rows(f, X, w, [j, k, l]), parts,
                              [1, 1, 1, -1, -1, -1], w, **options))
    return overall, pairwise, total, np.array(three)


# ------------------------------------------------------------------------------------------
# Published values (R's iml and hstats). Produced by this R script (hstats 1.1.2, iml 0.11.1):
#   X <- data.frame(x1 = c(1, 1, 1, 2), x2 = c(0, 0, 2, 1), x3 = c(2, 2, 1, 4))
#   pf <- function(m, newdata) newdata[, 1] + newdata[, 2] * sqrt(newdata[, 3])
#   h2_pairwise(hstats(X = X, pred_fun = pf))            # x2:x3 0.078125
#   h2_pairwise(hstats(X = X, pred_fun = pf, w = 0:3))   # x2:x3 0.1010093
#   iml::Interaction$new(iml::Predictor$new(data = X, predict.function = pf),
#                        grid.size = 5, feature = "x3")$results  # x2:x3, squared: 0.078125
# ------------------------------------------------------------------------------------------

X_PUB = np.array([[1, 0, 2], [1, 0, 2], [1, 2, 1], [2, 1, 4.0]])
NAMES = ["x1", "x2", "x3"]


def f_pub(X):
    return X[:, 0] + X[:, 1] * jnp.sqrt(X[:, 2])


def test_published_value_unweighted():
    h = h_statistic(f_pub, X_PUB, feature_names=NAMES, pairs=[("x2", "x3")])
    assert h.pairwise.values[0, 0] == pytest.approx(0.078125, abs=1e-6)


def test_published_value_with_case_weights():
    h = h_statistic(f_pub, X_PUB, feature_names=NAMES, pairs=[("x2", "x3")],
                    sample_weight=[0, 1, 2, 3])
    assert h.pairwise.values[0, 0] == pytest.approx(0.1010093, abs=1e-6)


def test_duplicate_rows_equal_deduplicated_rows_with_counts():
    """hstats compresses duplicate rows into weights; keeping them is the same statistic."""
    unique, counts = np.unique(X_PUB, axis=0, return_counts=True)
    kept = h_statistic(f_pub, X_PUB, feature_names=NAMES)
    compressed = h_statistic(f_pub, unique, feature_names=NAMES, sample_weight=counts)
    np.testing.assert_allclose(kept.pairwise.values, compressed.pairwise.values, atol=1e-6)
    np.testing.assert_allclose(kept.overall.importances_mean,
                               compressed.overall.importances_mean, atol=1e-6)
    # Dropping the duplicates without their counts would give another (wrong) value.
    dropped = h_statistic(f_pub, unique, feature_names=NAMES, pairs=[("x2", "x3")])
    assert abs(dropped.pairwise.values[0, 0] - 0.078125) > 1e-3


# ------------------------------------------------------------------------------------------
# Closed forms.
# ------------------------------------------------------------------------------------------


def test_additive_model_gives_zero_everywhere():
    X = np.random.default_rng(0).normal(size=(30, 3))
    f = lambda X: jnp.sin(X[:, 0]) + X[:, 1] ** 2 + 3 * X[:, 2]  # noqa: E731
    h = h_statistic(f, X, three_way=[("x0", "x1", "x2")])
    assert np.all(h.pairwise.values == 0)
    assert np.all(h.overall.importances_mean == 0)
    assert np.all(h.three_way.values == 0)
    assert np.all(h.total == 0)
    # Unnormalized and unsquared versions are 0 too (tiny numerators reported as 0).
    h = h_statistic(f, X, normalized=False, squared=False)
    assert np.all(h.pairwise.values == 0) and np.all(h.total == 0)


def test_product_of_independent_centred_inputs_gives_one():
    grid = np.array(list(itertools.product([-2.0, -1.0, 1.0, 2.0], [-1.0, 0.0, 1.0])))
    h = h_statistic(lambda X: X[:, 0] * X[:, 1], grid)
    assert h.pairwise.values[0, 0] == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(h.overall.importances_mean, 1.0, atol=1e-6)
    assert h.total[0] == pytest.approx(1.0, abs=1e-6)
    assert h.to_frame("pairwise")["interaction"].iloc[0] == pytest.approx(1.0, abs=1e-6)


def test_three_way_product_gives_one_and_no_pairwise():
    grid = np.array(list(itertools.product([-1.0, 1.0], [-2.0, 2.0], [-1.0, 0.0, 1.0])))
    h = h_statistic(lambda X: X[:, 0] * X[:, 1] * X[:, 2], grid, three_way=3)
    assert h.three_way.feature_sets[0] == tuple(sorted(h.three_way.feature_sets[0]))
    assert h.three_way.values[0, 0] == pytest.approx(1.0, abs=1e-6)
    # F_jk = x_j x_k E[x_l] = 0, so the pairwise statistics are 0/0 -> reported as 0.
    np.testing.assert_allclose(h.pairwise.values, 0.0, atol=1e-6)


# ------------------------------------------------------------------------------------------
# Against the float64 NumPy reference on random small MLPs. The tests share one model and one
# data shape so that compiled evaluations are reused (keeps the suite fast).
# ------------------------------------------------------------------------------------------

F3, F3_NP, _ = random_mlp(3, sizes=(3, 12, 12, 1))
X12 = np.random.default_rng(4).normal(size=(12, 3))
W12 = np.random.default_rng(5).uniform(0.2, 2.0, size=12)
PAIRS3 = [(0, 1), (0, 2), (1, 2)]


@pytest.mark.parametrize("normalized,squared", [(True, True), (False, True), (True, False)])
def test_matches_numpy_reference_on_random_mlp(normalized, squared):
    h = h_statistic(F3, X12, sample_weight=W12, three_way=[("x0", "x1", "x2")],
                    normalized=normalized, squared=squared)
    overall, pairwise, total, three = ref_h_all(F3_NP, X12, W12, PAIRS3, [(0, 1, 2)],
                                                normalized=normalized, squared=squared)
    assert h.pairwise.feature_sets == (("x0", "x1"), ("x0", "x2"), ("x1", "x2"))
    np.testing.assert_allclose(h.pairwise.values, pairwise, rtol=2e-4, atol=1e-7)
    np.testing.assert_allclose(h.overall.importances_mean, overall, rtol=2e-4, atol=1e-7)
    np.testing.assert_allclose(h.total, total, rtol=2e-4, atol=1e-7)
    np.testing.assert_allclose(h.three_way.values, three, rtol=2e-4, atol=1e-7)
    assert h.normalized is normalized and h.squared is squared


def test_total_over_features_subtracts_their_main_effects_alone():
    """hstats' h2() after hstats(v = ...): the total subtracts the main effects of v only; the
    other statistics are those of the default rule."""
    F = np.asarray(F3_NP(X12), np.float64).reshape(12, -1)
    singles = [ref_pd_at_rows(F3_NP, X12, W12, [j]) for j in (0, 2)]
    h = h_statistic(F3, X12, ["x0", "x2"], sample_weight=W12, total_over="features")
    np.testing.assert_allclose(h.total, ref_stat(F, singles, [1, 1], W12), rtol=2e-4,
                               atol=1e-7)
    default = h_statistic(F3, X12, ["x0", "x2"], sample_weight=W12)
    assert not np.allclose(h.total, default.total)
    np.testing.assert_array_equal(h.overall.importances_mean, default.overall.importances_mean)
    np.testing.assert_array_equal(h.pairwise.values, default.pairwise.values)
    every = h_statistic(F3, X12, sample_weight=W12, total_over="features")
    np.testing.assert_allclose(every.total, h_statistic(F3, X12, sample_weight=W12).total,
                               rtol=1e-12)
    with pytest.raises(ValueError, match="total_over"):
        h_statistic(F3, X12, total_over="v")


@pytest.mark.parametrize("as_set_rows", [0, 10**6])
def test_prediction_at_the_rows_as_a_set_or_apart_gives_the_reference(monkeypatch,
                                                                      as_set_rows):
    """The prediction at the rows comes from the sets' engine call (few rows) or from a call
    of its own: the statistics and their bootstrap replicates are the reference's either way."""
    import jaximp.methods._hstat_plan as plan

    monkeypatch.setattr(plan, "_PREDICTION_AS_SET_ROWS", as_set_rows)
    h = h_statistic(F3, X12, sample_weight=W12, three_way=[("x0", "x1", "x2")],
                    n_bootstrap=3, random_state=2)
    counts = h.info["bootstrap_counts"]
    for weights, point in ((W12, True), (W12 * counts[1], False)):
        overall, pairwise, total, three = ref_h_all(F3_NP, X12, weights, PAIRS3, [(0, 1, 2)])
        got = ((h.overall.importances_mean, h.pairwise.values, h.total, h.three_way.values)
               if point else (h.overall.importances[..., 1], h.pairwise.replicates[..., 1],
                              h.total_replicates[:, 1], h.three_way.replicates[..., 1]))
        for value, expected in zip(got, (overall, pairwise, total, three)):
            np.testing.assert_allclose(value, expected, rtol=5e-4, atol=1e-6)


@pytest.mark.parametrize("normalized,squared", [(True, True), (False, True), (True, False)])
def test_pd_importance_matches_numpy_reference(normalized, squared):
    """hstats' pd_importance: (F - F_not_j)^2 over F^2, from the overall statistic's PDs."""
    h = h_statistic(F3, X12, sample_weight=W12, pairs=None)
    F = np.asarray(F3_NP(X12), np.float64).reshape(12, -1)
    ref = np.array([ref_stat(F, [ref_pd_at_rows(F3_NP, X12, W12, [k for k in range(3)
                                                                   if k != j])], [1], W12,
                             normalized=normalized, squared=squared) for j in range(3)])
    pdi = h.pd_importance(normalized=normalized, squared=squared)
    assert pdi.method == "h_pd_importance" and pdi.feature_names == ("x0", "x1", "x2")
    np.testing.assert_allclose(pdi.importances_mean, ref, rtol=2e-4, atol=1e-7)
    with pytest.raises(ValueError, match="no pd_importance statistics; pass overall=True"):
        h_statistic(F3, X12, overall=False).pd_importance()


def test_multi_output_equals_each_output_alone():
    f_jax, f_np, _ = random_mlp(5, sizes=(3, 10, 2))
    both = h_statistic(f_jax, X12)
    one = h_statistic(f_jax, X12, output="y1")
    np.testing.assert_allclose(both.pairwise.values[:, 1], one.pairwise.values[:, 0],
                               rtol=1e-6, atol=1e-9)
    _, pairwise, total, _ = ref_h_all(f_np, X12, np.ones(12), PAIRS3, [])
    np.testing.assert_allclose(both.pairwise.values, pairwise, rtol=2e-4, atol=1e-7)
    np.testing.assert_allclose(both.total, total, rtol=2e-4, atol=1e-7)
    assert both.output_names == ("y0", "y1") and one.output_names == ("y1",)


def test_n_max_subsample_is_reproducible_and_matches_reference():
    X = np.random.default_rng(8).normal(size=(40, 3))
    h = h_statistic(F3, X, n_max=12, random_state=3)
    rows = h.info["rows"]
    assert h.n_rows == 12 and len(np.unique(rows)) == 12
    again = h_statistic(F3, X, n_max=12, random_state=jax.random.key(3))
    np.testing.assert_array_equal(again.info["rows"], rows)
    np.testing.assert_array_equal(again.pairwise.values, h.pairwise.values)
    other = h_statistic(F3, X, n_max=12, random_state=4)
    assert not np.array_equal(other.info["rows"], rows)
    _, pairwise, _, _ = ref_h_all(F3_NP, X[rows], np.ones(12), PAIRS3, [])
    np.testing.assert_allclose(h.pairwise.values, pairwise, rtol=2e-4, atol=1e-7)
    assert h_statistic(F3, X12, n_max=None).n_rows == 12


def _exact_polynomial(X):
    """Every pair and one triple interact; on small integers a float32 JAX evaluation (and the
    engine's float32 weighted sums over rows) is exact, as is the float64 NumPy one."""
    x0, x1, x2, x3 = X[:, 0], X[:, 1], X[:, 2], X[:, 3]
    return (x0 + 2 * x1 - x2 + x3 + 2 * x0 * x1 + x1 * x2 - 3 * x0 * x2 + x2 * x3 + x0 * x3
            - x1 * x3 + x0 * x1 * x2)


def test_float32_model_statistics_carry_no_float32_rounding():
    """A float32 JAX model whose predictions and PD sums are exact: what is left to round is
    the H algebra (differences of nearly equal PDs, their squares and sums), which must match
    the float64 reference to float64 rounding: float32 algebra is 2.1e-7 off here, so a 1e-6
    tolerance would not tell them apart."""
    rng = np.random.default_rng(0)
    X = rng.integers(-3, 4, size=(60, 4)).astype(float)
    w = rng.integers(1, 5, size=60).astype(float)
    h = h_statistic(jax.jit(_exact_polynomial), X, sample_weight=w, n_bootstrap=2,
                    random_state=2, three_way=[("x0", "x1", "x2")])
    pairs = list(itertools.combinations(range(4), 2))
    counts = h.info["bootstrap_counts"]
    replicates = (h.overall.importances, h.pairwise.replicates, h.total_replicates[None],
                  h.three_way.replicates)
    for r, weights in enumerate([w, w * counts[0], w * counts[1]]):
        # r = 0: the point estimate, then each bootstrap replicate's re-weighting
        ref = ref_h_all(_exact_polynomial, X, weights, pairs, [(0, 1, 2)])
        got = (h.overall.importances_mean, h.pairwise.values, h.total[None],
               h.three_way.values) if r == 0 else [a[..., r - 1] for a in replicates]
        for got_r, ref_r in zip(got, ref):
            assert np.all(ref_r > 1e-3)  # no statistic near 0: relative errors are meaningful
            np.testing.assert_allclose(got_r, ref_r.reshape(got_r.shape), rtol=1e-10, atol=0)


# ------------------------------------------------------------------------------------------
# Bootstrap.
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def boot():
    return h_statistic(F3, X12, sample_weight=W12, n_bootstrap=20, random_state=1,
                       three_way=[("x0", "x1", "x2")])


def test_bootstrap_replicates_are_reweighted_reference_statistics(boot):
    counts = boot.info["bootstrap_counts"]
    assert counts.shape == (20, 12) and np.all(counts.sum(axis=1) == 12)
    for r in range(3):
        overall, pairwise, total, three = ref_h_all(F3_NP, X12, W12 * counts[r], PAIRS3,
                                                    [(0, 1, 2)])
        np.testing.assert_allclose(boot.pairwise.replicates[..., r], pairwise, rtol=5e-4,
                                   atol=1e-6)
        np.testing.assert_allclose(boot.overall.importances[..., r], overall, rtol=5e-4,
                                   atol=1e-6)
        np.testing.assert_allclose(boot.total_replicates[:, r], total, rtol=5e-4, atol=1e-6)
        np.testing.assert_allclose(boot.three_way.replicates[..., r], three, rtol=5e-4,
                                   atol=1e-6)
    # The point estimate is the statistic on all rows, the same as without bootstrap.
    plain = h_statistic(F3, X12, sample_weight=W12, three_way=[("x0", "x1", "x2")])
    np.testing.assert_allclose(boot.pairwise.values, plain.pairwise.values, rtol=1e-5,
                               atol=1e-8)
    np.testing.assert_allclose(boot.pairwise.values_std,
                               boot.pairwise.replicates.std(axis=-1))
    frame = boot.to_frame()
    assert list(frame.columns) == ["feature_1", "feature_2", "output", "interaction", "std",
                                   "q025", "q975"]
    low, high = boot.pairwise.intervals(0.5)
    assert np.all(low <= high)
    assert {"std", "q025", "q975"} <= set(boot.to_frame("total").columns)


def test_bootstrap_replicate_equals_statistic_on_resampled_rows(boot):
    """Re-weighting the stored matrices by counts is the same as resampling the rows."""
    counts = boot.info["bootstrap_counts"][0]
    resampled = h_statistic(F3, np.repeat(X12, counts, axis=0),
                            sample_weight=np.repeat(W12, counts))
    np.testing.assert_allclose(boot.pairwise.replicates[..., 0], resampled.pairwise.values,
                               rtol=2e-4, atol=1e-7)
    np.testing.assert_allclose(boot.total_replicates[:, 0], resampled.total, rtol=2e-4)


def test_real_interaction_interval_excludes_zero_and_additive_pair_is_zero():
    f = lambda X: X[:, 0] * X[:, 1] + X[:, 2]  # noqa: E731
    h = h_statistic(f, X12, n_bootstrap=20, random_state=0)
    low, _ = h.pairwise.intervals(0.95)
    assert low[0, 0] > 0.1  # (x0, x1): clearly away from 0
    assert np.all(h.pairwise.replicates[1:] == 0)  # (x0, x2), (x1, x2): additive


# ------------------------------------------------------------------------------------------
# Pair selection, results, inputs, engine.
# ------------------------------------------------------------------------------------------


def _interacting(X):
    return 2 * X[:, 0] * X[:, 1] + 0.5 * X[:, 2] * X[:, 3] + X[:, 4]


X20 = np.random.default_rng(14).uniform(-1, 1, size=(20, 5))


@pytest.fixture(scope="module")
def full():
    return h_statistic(_interacting, X20)


def test_pair_selection_modes(full):
    top = h_statistic(_interacting, X20, pairs=2)
    assert top.pairwise.feature_sets in ((("x0", "x1"),), (("x1", "x0"),))
    assert set(top.overall.top(5)[:2]) == {"x0", "x1"}
    ref = h_statistic(_interacting, X20, reference="x2", overall=False)
    assert ref.pairwise.feature_sets == (("x2", "x0"), ("x2", "x1"), ("x2", "x3"), ("x2", "x4"))
    assert ref.overall is None and ref.total is None
    i = full.pairwise.feature_sets.index(("x2", "x3"))
    np.testing.assert_allclose(ref.pairwise.values[2], full.pairwise.values[i], rtol=1e-6)
    subset = h_statistic(_interacting, X20, features=["x0", "x1", "x2"], pairs=None)
    assert subset.overall.feature_names == ("x0", "x1", "x2") and subset.pairwise is None
    np.testing.assert_allclose(subset.total, full.total, rtol=1e-6)
    np.testing.assert_allclose(subset.overall.importances_mean,
                               full.overall.importances_mean[:3], rtol=1e-6)
    with pytest.raises(ValueError, match="no pairwise statistics"):
        subset.to_frame("pairwise")


def test_top_m_of_an_additive_model_says_why_no_pairs_came():
    """hstats pads pairwise_m with features of zero overall statistic and reports their pairs
    as 0 unevaluated; jaximp pairs only positive features, so an additive model has none and
    the message says why."""
    X = np.random.default_rng(2).normal(size=(25, 4))
    h = h_statistic(lambda A: A[:, 0] + A[:, 1] ** 2 + A[:, 2] + A[:, 3], X, pairs=5,
                    three_way=3, n_max=None)
    assert not h.overall.importances_mean.any()
    with pytest.raises(ValueError, match=r"holds no pairwise statistics; .*an int m pairs only "
                                         r"features with a positive overall statistic"):
        h.h2_pairwise()
    with pytest.raises(ValueError, match=r"holds no three_way statistics; .* fewer than 3"):
        h.h2_threeway()


def test_result_helpers(full):
    assert isinstance(full, HStatistic)
    # Both products are pure interactions (H2 near 1); the other pairs are additive (0).
    assert set(full.top(2)) == {("x0", "x1"), ("x2", "x3")}
    assert full.top(2, statistic="overall")[0] in ("x0", "x1")
    frame = full.to_frame()
    assert frame["interaction"].is_monotonic_decreasing
    everything = full.to_frame("all")
    assert set(everything["statistic"]) == {"overall", "pairwise", "total"}
    assert "x0:x1" in set(everything["features"])
    matrix = full.pairwise.matrix()
    assert matrix.loc["x1", "x0"] == matrix.loc["x0", "x1"] == full.pairwise.values[0, 0]
    ordered = full.pairwise.sorted()
    assert ordered.feature_sets[:2] == tuple(full.top(2))
    i = full.pairwise.feature_sets.index(ordered.feature_sets[0])
    np.testing.assert_allclose(ordered.info["numerator"][0], full.pairwise.info["numerator"][i])
    np.testing.assert_allclose(ordered.values[:, 0], np.sort(full.pairwise.values[:, 0])[::-1])
    assert full.to_frame("total").shape == (1, 2)
    with pytest.raises(ValueError, match="no bootstrap replicates"):
        full.pairwise.intervals()


def test_unnormalized_is_numerator_and_unsquared_is_root(full):
    raw = h_statistic(_interacting, X20, normalized=False, squared=False)
    num, den = full.pairwise.info["numerator"], full.pairwise.info["denominator"]
    np.testing.assert_allclose(raw.pairwise.values ** 2, np.where(num <= 1e-10 * den, 0, num),
                               rtol=1e-5)
    assert np.all((raw.pairwise.values == 0) == (full.pairwise.values == 0))


def test_dataframe_input_equals_numpy_input():
    a = h_statistic(F3, X12, feature_names=["a", "b", "c"])
    b = h_statistic(F3, pd.DataFrame(X12, columns=["a", "b", "c"]))
    np.testing.assert_array_equal(a.pairwise.values, b.pairwise.values)
    assert a.pairwise.feature_sets == b.pairwise.feature_sets


def test_chunked_engine_run_gives_the_same_values():
    big = h_statistic(F3, X12)
    small = h_statistic(F3, X12, memory_budget=1 << 16)
    np.testing.assert_allclose(small.pairwise.values, big.pairwise.values, rtol=1e-5)


def test_one_hot_group_is_one_feature():
    rng = np.random.default_rng(21)
    level = rng.integers(0, 3, size=24)
    onehot = np.eye(3)[level]
    x = rng.normal(size=24)
    X = np.column_stack([x, onehot])
    names = ["x", "red", "green", "blue"]
    f = lambda X: X[:, 0] * (X[:, 1] - X[:, 3]) + X[:, 2]  # noqa: E731
    h = h_statistic(f, X, feature_names=names, groups={"color": ["red", "green", "blue"]})
    assert h.pairwise.feature_sets == (("x", "color"),)
    assert h.pairwise.values[0, 0] > 0.1


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"n_max": 1}, ValueError, "n_max must be an int >= 2 .* got 1"),
        ({"pairs": "some"}, ValueError, "pairs must be 'all'.*got 'some'"),
        ({"pairs": 1}, ValueError, "must be >= 2; got 1"),
        ({"pairs": [("x0",)]}, ValueError, "list of feature pairs"),
        ({"pairs": [("x0", "x0")]}, ValueError, "two different features"),
        ({"pairs": [("x0", "x1")], "reference": "x0"}, ValueError,
         "give either pairs or reference, not both"),
        ({"three_way": 2}, ValueError, "must be 0 or >= 3; got 2"),
        ({"three_way": [("x0", "x1")]}, ValueError, "list of feature triples"),
        ({"pairs": 2, "overall": False}, ValueError, "needs overall=True"),
        ({"n_bootstrap": 1}, ValueError, "n_bootstrap must be 0 .* or an int >= 2; got 1"),
        ({"random_state": "seed"}, TypeError, "random_state must be an int seed, a JAX"),
        ({"overall": "yes"}, TypeError, "overall must be True or False; got 'yes'"),
        ({"eps": -1.0}, ValueError, r"eps must be a number in \[0, 1\)"),
        ({"pairs": None, "overall": False}, ValueError, "nothing to compute"),
        ({"pairs": [("x0", "zz")]}, ValueError, "unknown feature 'zz'"),
    ],
)
def test_validation_messages(kwargs, error, message):
    X = np.random.default_rng(22).normal(size=(6, 3))
    with pytest.raises(error, match=message):
        h_statistic(lambda X: X[:, 0] * X[:, 1], X, **kwargs)


def test_fewer_than_two_rows_of_positive_weight_are_refused_before_evaluation():
    calls = []

    class Counted:  # a host model: prepare probes its outputs once, the engine would call more
        def predict(self, X):
            calls.append(len(X))
            return np.asarray(X)[:, 0] * np.asarray(X)[:, 1]

    X = np.random.default_rng(24).normal(size=(5, 3))
    message = (r"h_statistic needs at least 2 rows of X with positive weight \(after n_max\); "
               r"got 1\. Pass more rows \(or a larger n_max\)\.")
    with pytest.raises(ValueError, match=message):  # zero-weight rows do not count
        h_statistic(Counted(), X, sample_weight=[0, 0, 2, 0, 0])
    assert len(calls) <= 1  # the probe at most: no PD evaluated


def test_two_rows_of_positive_weight_give_the_reference_and_hstats():
    """Two rows of unequal weight leave PDs that are not 0/0. hstats 1.2.1 (R):
    ``h2_overall(hstats(NULL, X, pred_fun = pf, w = c(1, 0, 2)))`` with
    ``pf <- function(m, X) X$x0 * X$x1 + X$x2`` gives 0.2418705 for x0 and x1, 0 for x2;
    two rows of equal weight give 0 everywhere."""
    X = np.array([[0.3, 1.1, 0.5], [-1.2, 0.4, 0.1], [0.8, -0.7, 2.0]])
    w = np.array([1.0, 0.0, 2.0])

    def f(A):
        return A[:, 0] * A[:, 1] + A[:, 2]

    h = h_statistic(f, X, sample_weight=w, n_max=None)
    overall, pairwise, _, _ = ref_h_all(f, X, w, [(0, 1), (0, 2), (1, 2)], [])
    np.testing.assert_allclose(h.overall.importances_mean, overall, atol=1e-6)
    np.testing.assert_allclose(h.pairwise.values, pairwise, atol=1e-6)
    np.testing.assert_allclose(h.overall.importances_mean[:, 0], [0.2418705, 0.2418705, 0],
                               atol=1e-6)
    equal = h_statistic(f, X[:2], n_max=None)
    assert not equal.overall.importances_mean.any() and not equal.pairwise.values.any()


def test_a_constant_model_gives_zero_and_a_model_flat_on_the_rows_infinity():
    """A constant prediction is rounding alone once centred: every statistic is 0 (the floor
    scaled by the centred spread alone read its noise as H = 1). A model that is 0 on every row but
    not between them has a flat joint PD and non-flat parts: infinite normalized statistics
    and finite numerators, as in hstats 1.2.1 (overall numerators 0.02469136, 0.02469136, 0;
    normalized Inf, Inf, 0)."""
    X = np.random.default_rng(3).normal(size=(25, 3))
    for level in (0.37, 150.0):
        h = h_statistic(lambda A: 0 * A[:, 0] + level, X, n_max=None)
        assert not h.overall.importances_mean.any() and not h.pairwise.values.any()
        assert not h.h2().any()
    X = np.array([[0.9, 0.1, 1], [0.8, 0.2, 2], [0.1, 0.9, 3], [0.2, 0.7, 4], [0.3, 0.3, 5],
                  [0.15, 0.05, 6]])

    def step(A):
        return ((A[:, 0] > 0.5) & (A[:, 1] > 0.5)).astype(A.dtype) + 0 * A[:, 2]

    h = h_statistic(step, X, n_max=None)
    np.testing.assert_array_equal(h.overall.importances_mean[:, 0], [np.inf, np.inf, 0])
    np.testing.assert_allclose(h.h2_overall(normalized=False).importances_mean[:, 0],
                               [0.02469136, 0.02469136, 0], atol=1e-8)
    # the plot marks infinite bars, and a report's JSON (which has no infinity) names them
    figure = h.plot(statistic="overall")
    assert [t.get_text().strip() for t in figure.axes[0].texts] == ["inf", "inf"]
    plt.close(figure)
    import jaximp._report as report
    assert report._jsonable([np.inf, -np.inf, np.nan, 1.5]) == ["inf", "-inf", None, 1.5]
    # bootstrap replicates that are all infinite spread by 0, a mix of inf and finite by inf;
    # the intervals and the table hold no NaN, and the whiskers draw without warnings
    boot = h_statistic(step, X, n_max=None, n_bootstrap=6, random_state=2).overall
    reps = boot.importances[:, 0]
    assert np.isinf(reps[:2]).any() and not np.isnan(boot.intervals()).any()
    expected = [0.0 if np.all(r == r[0]) else (np.inf if np.isinf(r).any() else np.std(r))
                for r in reps]
    np.testing.assert_array_equal(boot.importances_std[:, 0], expected)
    np.testing.assert_array_equal(boot.std(ddof=0)[:, 0], expected)
    assert not boot.to_frame().drop(columns=["feature", "output"]).isna().any().any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        boot.plot(errors="interval")
    plt.close("all")
    # an effect of 2e-5 of a float32 model's level is 170 of its ulps, not rounding: the
    # float64 statistic of a model without the level is 0.0542 (overall) and 0.1357 (pair)
    X = np.random.default_rng(1).uniform(size=(200, 3))
    h = h_statistic(lambda A: 1e3 + 2e-2 * A[:, 0] * A[:, 1] + 2e-2 * A[:, 2], X, n_max=None)
    np.testing.assert_allclose(h.overall.importances_mean[:2, 0], 0.0542, atol=3e-3)
    np.testing.assert_allclose(h.pairwise.values[0, 0], 0.1357, atol=5e-3)


# ------------------------------------------------------------------------------------------
# Kernels: eager == jit == vmap, and the NumPy reference.
# ------------------------------------------------------------------------------------------


def test_kernels_eager_jit_vmap_agree():
    rng = np.random.default_rng(23)
    joint = jnp.asarray(rng.normal(size=(3, 9)), jnp.float32)
    parts = jnp.asarray(rng.normal(size=(3, 2, 9)), jnp.float32)
    w = jnp.asarray(rng.uniform(0.1, 1, size=9), jnp.float32)
    signs = jnp.ones(2)
    eager = h_parts(joint[0], parts[0], signs, w)
    jitted = jax.jit(h_parts)(joint[0], parts[0], signs, w)
    mapped = jax.vmap(h_parts, in_axes=(0, 0, None, None))(joint, parts, signs, w)
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mapped)[:, 0], eager, rtol=1e-6)
    for i in range(3):
        ref = ref_stat(np.asarray(joint[i], np.float64)[:, None],
                       [np.asarray(parts[i, k], np.float64)[:, None] for k in range(2)], [1, 1],
                       np.asarray(w, np.float64))
        assert float(mapped[0][i] / mapped[1][i]) == pytest.approx(ref[0], rel=1e-5)
    num, den = mapped
    np.testing.assert_allclose(jax.jit(h_value)(num, den, True, False, 1e-10),
                               h_value(num, den, squared=False))
    matrix = jnp.asarray(rng.normal(size=(9, 9)), jnp.float32)
    weights = jnp.asarray(rng.uniform(size=(3, 9)), jnp.float32)
    got = pd_at_rows(matrix, weights)
    want = (np.asarray(weights, np.float64) @ np.asarray(matrix, np.float64).T) / np.asarray(
        weights, np.float64).sum(1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jax.jit(pd_at_rows)(matrix, weights), got, rtol=1e-6)


def _hstats_get_v(numerators, m):
    """R hstats' get_v (hstats 1.2, R/hstats.R), written again: per output column the m
    largest positive numerators, the union over columns, in the original feature order."""
    chosen = set()
    for column in numerators.T:
        positive = [j for j in np.argsort(-column, kind="stable") if column[j] > 0]
        chosen.update(positive[:m])
    return sorted(chosen)


def test_top_m_selection_is_the_per_output_union_as_hstats():
    # Output 0: strong two-way interactions among x0, x1, x2. Output 1: a small pure three-way
    # interaction of x3, x4, x5, which a ranking summed over outputs would place last.
    def two_outputs(X, xp=jnp):
        first = 10 * X[:, 0] * X[:, 1] + 8 * X[:, 0] * X[:, 2] + 5 * X[:, 1] * X[:, 2]
        second = 0.1 * X[:, 3] * X[:, 4] * X[:, 5]
        return xp.stack([first, second], axis=1)

    X = np.random.default_rng(3).uniform(-1, 1, size=(40, 6))
    h = h_statistic(two_outputs, X, pairs=3, three_way=3)
    num = h.overall.info["numerator"]
    den = h.overall.info["denominator"]
    clean = np.where(num > 1e-10 * den, num, 0.0)
    expected = _hstats_get_v(clean, 3)
    assert expected == [0, 1, 2, 3, 4, 5]
    names = [f"x{j}" for j in expected]
    assert h.pairwise.feature_sets == tuple(itertools.combinations(names, 2))
    assert h.three_way.feature_sets == tuple(itertools.combinations(names, 3))
    # the second output's triple: a strong interaction there; output 0 does not depend on
    # x3, x4, x5 (exactly 0, not a ratio of float32 rounding errors)
    k = h.three_way.feature_sets.index(("x3", "x4", "x5"))
    *_, ref = ref_h_all(lambda A: two_outputs(A, np), X, np.ones(40), [], [(3, 4, 5)])
    assert ref[0, 1] > 0.9  # (ref[0, 0] is float64 noise over noise; hstats zaps it to 0)
    assert h.three_way.values[k, 0] == 0.0
    assert h.three_way.values[k, 1] == pytest.approx(ref[0, 1], rel=1e-4)
    # with m = 2 each output contributes its own top two: the union of both pairs
    h2 = h_statistic(two_outputs, X, pairs=2)
    assert set(itertools.chain(*h2.pairwise.feature_sets)) == {
        f"x{j}" for j in _hstats_get_v(clean, 2)}


def test_options_are_read_outs_without_model_evaluations():
    calls = []

    class Counted:  # a host model: every batch the engine sends is one predict call
        def predict(self, X):
            calls.append(X.shape[0])
            return _interacting(np.asarray(X))

    counted = Counted()

    X = np.random.default_rng(5).uniform(-1, 1, size=(25, 5))
    h = h_statistic(counted, X, three_way=3, n_bootstrap=4)
    n_calls = len(calls)
    assert n_calls > 0
    w = np.ones(25)
    pairs = list(h.pairwise.feature_sets)
    triples = list(h.three_way.feature_sets)
    index = {f"x{j}": j for j in range(5)}
    for normalized in (True, False):
        for squared in (True, False):
            read = h.with_options(normalized=normalized, squared=squared)
            ref_overall, ref_pairwise, ref_total, ref_three = ref_h_all(
                _interacting, X, w, [tuple(index[a] for a in p) for p in pairs],
                [tuple(index[a] for a in t) for t in triples],
                normalized=normalized, squared=squared)
            np.testing.assert_allclose(read.overall.importances_mean[:, 0], ref_overall[:, 0],
                                       rtol=2e-4, atol=1e-6)
            np.testing.assert_allclose(read.pairwise.values[:, 0], ref_pairwise[:, 0],
                                       rtol=2e-4, atol=1e-6)
            np.testing.assert_allclose(read.three_way.values[:, 0], ref_three[:, 0],
                                       rtol=2e-4, atol=1e-6)
            np.testing.assert_allclose(read.total, ref_total, rtol=2e-4, atol=1e-6)
            assert read.pairwise.replicates.shape == (len(pairs), 1, 4)
            # the hstats-named read-outs give the same values
            np.testing.assert_array_equal(
                h.h2_pairwise(normalized=normalized, squared=squared).values,
                read.pairwise.values)
            np.testing.assert_array_equal(h.h2(normalized=normalized, squared=squared),
                                          read.total)
    np.testing.assert_array_equal(h.h2_overall().importances_mean, h.overall.importances_mean)
    np.testing.assert_array_equal(h.h2_threeway(eps=0.5).values == 0,
                                  h.three_way.info["numerator"]
                                  <= 0.5 * h.three_way.info["denominator"])
    assert len(calls) == n_calls  # nothing evaluated again
    with pytest.raises(TypeError, match="normalized must be True or False"):
        h.with_options(normalized="yes")
    with pytest.raises(ValueError, match="no three_way statistics"):
        h_statistic(counted, X, pairs=None).h2_threeway()


def test_missing_pairs_and_triples_are_evaluated_lazily_and_kept():
    calls = []

    class Counted:
        def predict(self, X):
            calls.append(X.shape[0])
            return _interacting(np.asarray(X))

    X = np.random.default_rng(6).uniform(-1, 1, size=(25, 5))
    h = h_statistic(Counted(), X, pairs=[("x0", "x1")])
    w = np.ones(25)
    before = len(calls)
    # a known pair is read; (x2, x3) and (x3, x4) are evaluated now, in the order asked for
    got = h.h2_pairwise(pairs=[("x3", "x2"), ("x0", "x1"), (3, 4)])
    assert got.feature_sets == (("x3", "x2"), ("x0", "x1"), ("x3", "x4"))
    assert len(calls) > before
    _, ref, _, _ = ref_h_all(_interacting, X, w, [(3, 2), (0, 1), (3, 4)], [])
    np.testing.assert_allclose(got.values[:, 0], ref[:, 0], rtol=2e-4, atol=1e-6)
    after = len(calls)
    again = h.h2_pairwise(pairs=[("x2", "x3")], normalized=False)  # kept: no evaluation
    assert len(calls) == after
    np.testing.assert_allclose(again.values[0], got.info["numerator"][0], rtol=1e-12)
    triple = h.h2_threeway(triples=[("x0", "x1", "x2")])
    _, _, _, ref3 = ref_h_all(_interacting, X, w, [], [(0, 1, 2)])
    np.testing.assert_allclose(triple.values[:, 0], ref3[:, 0], rtol=2e-4, atol=1e-6)
    with pytest.raises(ValueError, match="unknown feature 'x9'"):
        h.h2_pairwise(pairs=[("x0", "x9")])


@pytest.mark.parametrize("seed", [0, 1])
def test_float32_mlp_h_matches_the_float64_reference_to_1e6(seed):
    """The engine sums a float32 model's predictions over rows without float32 rounding (a
    high part whose sums are exact plus a small low part), so what remains is the model's own
    float32 evaluation: pairwise, overall and total H within 1e-6 relative of a float64 NumPy
    evaluation of the same network (plain float32 row sums left up to 1.3e-6 here)."""
    f_jax, f_np, _ = random_mlp(seed, sizes=(4, 16, 16, 1))
    X = np.random.default_rng(seed).normal(size=(500, 4))
    h = h_statistic(f_jax, X)
    pairs = list(itertools.combinations(range(4), 2))
    overall, pairwise, total, _ = ref_h_all(f_np, X, np.ones(500), pairs, [])
    np.testing.assert_allclose(h.pairwise.values, pairwise, rtol=1e-6)
    np.testing.assert_allclose(h.overall.importances_mean, overall, rtol=1e-6)
    np.testing.assert_allclose(h.total, total, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# The result is a value: extensions leave it as built, and it pickles.
# ------------------------------------------------------------------------------------------


def _frames(h):
    return {name: h.to_frame(name) for name in ("all", "pairwise", "overall", "total")}


def test_an_extension_leaves_the_result_as_built_and_matches_a_fresh_call():
    X = np.random.default_rng(11).uniform(-1, 1, size=(40, 5))
    options = {"n_max": 25, "random_state": 7, "n_bootstrap": 3}
    h = h_statistic(_interacting, X, pairs=[("x0", "x1")], **options)
    frames, text = _frames(h), repr(h)
    kept = {name: frame.copy(deep=True) for name, frame in frames.items()}
    got = h.h2_pairwise(pairs=[("x2", "x3")])
    returned = got.values.copy(), got.replicates.copy()
    h.h2_pairwise(pairs=[("x1", "x3")])  # a second extension
    h.h2_threeway(triples=[("x0", "x1", "x2")])
    # the result, its frames (taken before and after), repr and read-outs stay as built
    assert repr(h) == text
    for name, frame in _frames(h).items():
        assert frame.equals(kept[name]) and frames[name].equals(kept[name]), name
    assert h.pairwise.feature_sets == (("x0", "x1"),) and h.three_way is None
    assert h.with_options(normalized=False).pairwise.feature_sets == (("x0", "x1"),)
    np.testing.assert_array_equal(got.values, returned[0])
    np.testing.assert_array_equal(got.replicates, returned[1])
    # the same numbers as h_statistic asked for the new pair on the same rows and replicates
    fresh = h_statistic(_interacting, X, pairs=[("x2", "x3")], **options)
    np.testing.assert_allclose(got.values, fresh.pairwise.values, rtol=1e-9, atol=0)
    np.testing.assert_allclose(got.replicates, fresh.pairwise.replicates, rtol=1e-9, atol=0)
    # and the float64 reference on the rows kept
    rows = h.info["rows"]
    _, ref, _, _ = ref_h_all(_interacting, X[rows], np.ones(rows.size), [(2, 3)], [])
    np.testing.assert_allclose(got.values[:, 0], ref[:, 0], rtol=2e-4, atol=1e-6)


def test_a_result_pickles_as_built_and_refuses_new_sets_without_its_model():
    import pickle

    X = np.random.default_rng(12).uniform(-1, 1, size=(30, 5))
    h = h_statistic(_interacting, X, pairs=[("x0", "x1"), ("x1", "x2")],
                    three_way=[("x0", "x1", "x2")], n_bootstrap=2)
    h.h2_pairwise(pairs=[("x2", "x3")])  # evaluated after building: not part of the pickle
    copy = pickle.loads(pickle.dumps(h))
    assert type(copy) is HStatistic and repr(copy) == repr(h)
    for name in ("all", "pairwise", "three_way", "overall", "total"):
        assert copy.to_frame(name).equals(h.to_frame(name)), name
    for read in (lambda r: r.pairwise.values, lambda r: r.pairwise.replicates,
                 lambda r: r.three_way.values, lambda r: r.overall.importances,
                 lambda r: r.total_replicates, lambda r: r.info["rows"],
                 lambda r: r.info["bootstrap_counts"], lambda r: r.pd_importance().importances,
                 lambda r: r.with_options(normalized=False, squared=False).pairwise.values):
        np.testing.assert_array_equal(read(copy), read(h))
    # sets it was built with are read in any order of their features; others need the model
    np.testing.assert_array_equal(copy.h2_pairwise(pairs=[("x2", "x1")]).values,
                                  h.pairwise.values[1:])
    with pytest.raises(ValueError, match=r"holds no model to evaluate the pairwise statistics "
                                         r"of \[\('x2', 'x3'\)\]"):
        copy.h2_pairwise(pairs=[("x2", "x3")])
    # the original keeps its model: the same pair is read from its cache
    _, ref, _, _ = ref_h_all(_interacting, X, np.ones(30), [(2, 3)], [])
    np.testing.assert_allclose(h.h2_pairwise(pairs=[("x2", "x3")]).values[:, 0], ref[:, 0],
                               rtol=2e-4, atol=1e-6)


def test_approx_is_hstats_quantile_approximation_of_the_chosen_features():
    """hstats(approx = TRUE, grid_size = m): each chosen numeric feature with more than m
    distinct values replaced by the midpoints of its intervals between m + 1 type-7 quantiles
    (R's approx_vector, translated below), the others as they are; then the statistics of
    that data, against the float64 reference."""
    def approx_vector(x, m):
        if np.unique(x).size <= m:
            return x
        q = np.unique(np.quantile(x, np.linspace(0.0, 1.0, m + 1)))  # type 7
        mids = (q[:-1] + q[1:]) / 2
        interval = np.searchsorted(q, x, side="right")  # findInterval, 1-based
        return mids[np.minimum(interval, mids.size) - 1]  # rightmost.closed = TRUE

    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 4))
    X[:, 2] = rng.integers(0, 5, 60)  # 5 distinct values: left alone

    def f(A):
        return A[:, 0] * A[:, 1] + jnp.sin(A[:, 2]) * A[:, 0] + A[:, 3] ** 2

    w = rng.uniform(0.5, 2.0, 60)
    got = h_statistic(f, X, features=[0, 1, 2], approx=True, grid_size=8, n_max=None,
                      sample_weight=w)
    approximated = X.copy()
    for j in (0, 1, 2):  # x3 is not chosen: hstats approximates v only
        approximated[:, j] = approx_vector(X[:, j], 8)
    assert np.unique(approximated[:, 0]).size == 8
    overall, pairwise, _, _ = ref_h_all(lambda A: np.asarray(f(A)), approximated, w,
                                        [(0, 1), (0, 2), (1, 2)], [])
    np.testing.assert_allclose(got.overall.importances_mean, overall[:3], rtol=1e-4, atol=1e-7)
    want = dict(zip([("x0", "x1"), ("x0", "x2"), ("x1", "x2")], pairwise))
    for pair, value in zip(got.pairwise.feature_sets, got.pairwise.values):
        np.testing.assert_allclose(value, want[tuple(sorted(pair))], rtol=1e-4, atol=1e-7)
    # at most grid_size distinct values (60 rows): nothing is approximated
    np.testing.assert_allclose(
        h_statistic(f, X, approx=True, grid_size=60, n_max=None).overall.importances_mean,
        h_statistic(f, X, n_max=None).overall.importances_mean, rtol=1e-12)
