"""The validating edge: each bad input gets a clear error (the message is asserted), and each
accepted form gives the documented result, before any model evaluation."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import jaximp

X = np.random.default_rng(0).normal(size=(60, 3))
Y = X[:, 0] + X[:, 1] * X[:, 2]


def model(X):
    return X[:, 0] + X[:, 1] * X[:, 2]


class Exploding:
    """A host model that answers jaximp's 2-row probe of its outputs but must never be
    evaluated on the data: the edge rejects the input first."""

    def predict(self, X):
        if len(X) > 2:
            raise AssertionError("the model was evaluated before the input was checked")
        return np.zeros(len(X))


@pytest.mark.parametrize("call, error, message", [
    (lambda m: jaximp.partial_dependence(m, X, 0, grid={0: np.ones((3, 2))}), ValueError,
     r"grid values for feature 'x0' must be a 1-D list of numbers; got shape \(3, 2\)"),
    (lambda m: jaximp.partial_dependence_all(m, X, grid={"nope": [0.0, 1.0]}), ValueError,
     r"grid key 'nope' names no feature: unknown feature 'nope'"),
    (lambda m: jaximp.partial_dependence_all(m, X, grid={0: [0.0, 1.0], "x0": [2.0]}),
     ValueError, r"grid gives feature 'x0' twice"),
    (lambda m: jaximp.partial_dependence(m, X, 0, percentiles=12345), ValueError,
     r"percentiles must be a pair \(low, high\) with 0 <= low < high <= 1; got 12345. "
     r"E.g. percentiles=\(0.05, 0.95\)."),
    (lambda m: jaximp.permutation_importance(m, X, Y, groups=[[0, 1]]), TypeError,
     r"groups must be a mapping of group name to its columns"),
    (lambda m: jaximp.permutation_importance(m, X, Y, features={0, 1}), TypeError,
     r"got a set, whose order is not defined. Pass a list"),
    (lambda m: jaximp.permutation_importance(m, X, Y, features=[0, "x0"]), ValueError,
     r"features lists \['x0'\] more than once"),
    (lambda m: jaximp.permutation_importance(m, X, Y, features=[True, False]), ValueError,
     r"a boolean features mask must have one entry per feature \(3\); got shape \(2,\)"),
    (lambda m: jaximp.permutation_importance(m, X, Y, sample_weight=np.ones((60, 2))),
     ValueError, r"sample_weight must have shape \(60,\), one weight per row; got \(60, 2\)"),
    (lambda m: jaximp.h_statistic(m, X, pairs=[("x0", "x1"), ("x1", "x0")]), ValueError,
     r"the feature set \('x0', 'x1'\) is listed more than once"),
    (lambda m: jaximp.h_statistic(m, X, pairs=("x0", "x1", "x2")), ValueError,
     r"pairs must be 'all', an int m or a non-empty list of feature pairs"),
    (lambda m: jaximp.permutation_importance(m, X, Y, memory_budget=0), ValueError,
     r"memory_budget must be at least 65536 bytes; got 0"),
    (lambda m: jaximp.permutation_importance(m, X, Y, memory_budget=float("nan")), ValueError,
     r"memory_budget must be at least 65536 bytes"),
    (lambda m: jaximp.permutation_importance(m, X, Y, progress="yes"), TypeError,
     r"progress must be True, False or None \(a progress line in interactive terminals\); "
     r"got 'yes'"),
    (lambda m: jaximp.partial_dependence(m, X, 0, centered="yes"), TypeError,
     r"centered must be True or False; got 'yes'"),
    (lambda m: jaximp.h_statistic(m, X, memory_budget="1GB"), TypeError,
     r"memory_budget must be a number of bytes; got '1GB'"),
    (lambda m: jaximp.permutation_importance(m, X, Y, output=5), ValueError,
     r"output index 5 is out of range for a model with 1 outputs"),
    (lambda m: jaximp.permutation_importance(m, jaximp.as_dataset(X), Y,
                                             feature_names=["a", "b", "c"]),
     ValueError, r"X is already a Dataset"),
    (lambda m: jaximp.permutation_importance(m, X, Y, groups={"g": ["x0", "x0"]}), ValueError,
     r"column 'x0' is listed twice in group 'g'; list each column once"),
    (lambda m: jaximp.permutation_importance(m, X, Y, groups={"g": "x0"}), TypeError,
     r"group 'g' must list its columns, e.g. \{'g': \['a', 'b'\]\}; got the single str 'x0'"),
    (lambda m: jaximp.partial_importance(m, X, Y, np.array(["x0", "x1"])), TypeError,
     r"a feature is named by its name \(str\) or position \(int\); got ndarray"),
])
def test_bad_input_is_refused_before_any_evaluation(call, error, message):
    with pytest.raises(error, match=message):
        call(Exploding())


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan"])
def test_bad_memory_budget_environment_variable(monkeypatch, value):
    monkeypatch.setenv("JAXIMP_MEMORY_BUDGET", value)
    with pytest.raises(ValueError, match=rf"JAXIMP_MEMORY_BUDGET must be a number of bytes "
                                         rf">= 65536 \(e.g. 2e9\); got '{value}'"):
        jaximp.default_memory_budget()


def test_one_categorical_column_may_be_named_alone():
    codes = np.c_[X[:, :2], np.arange(60) % 3]
    for key in (2, "x2", [2], [False, False, True], np.array([False, False, True])):
        kinds = [f.kind for f in jaximp.as_dataset(codes, categorical=key).features]
        assert kinds == ["continuous", "continuous", "categorical"]
    with pytest.raises(ValueError, match=r"boolean categorical mask must have one entry per "
                                         r"column \(3\); got shape \(2,\)"):
        jaximp.as_dataset(codes, categorical=[True, False])


def test_a_sparse_matrix_is_refused_naming_toarray():
    sparse = pytest.importorskip("scipy.sparse")
    for matrix in (sparse.csr_matrix(X), sparse.csc_array(X)):
        with pytest.raises(TypeError, match=r"X is a sparse .* of shape \(60, 3\).*X.toarray"):
            jaximp.partial_dependence(lambda Z: Z[:, 0], matrix, 0)


def test_top_rejects_non_positive_k():
    result = jaximp.permutation_importance(model, X, Y, n_repeats=2)
    for k in (-1, 0, 1.5, True):
        with pytest.raises(ValueError, match="k must be a positive int"):
            result.top(k)
    pairs = jaximp.h_statistic(model, X).pairwise
    with pytest.raises(ValueError, match="k must be a positive int"):
        pairs.top(-1)
    assert len(result.top(2)) == 2


def test_accepted_forms_give_the_documented_results():
    reference = jaximp.permutation_importance(model, X, Y, features=[0, 2], n_repeats=3)
    # a numpy integer budget, a boolean mask, a Dataset, an (n, 1) weight column
    masked = jaximp.permutation_importance(model, jaximp.as_dataset(X), Y,
                                           features=np.array([True, False, True]), n_repeats=3,
                                           memory_budget=np.int64(1 << 24))
    assert masked.feature_names == ("x0", "x2")
    np.testing.assert_array_equal(masked.importances, reference.importances)
    weighted = jaximp.permutation_importance(model, X, Y, features=[0, 2], n_repeats=3,
                                             sample_weight=np.ones((60, 1)))
    np.testing.assert_allclose(weighted.importances, reference.importances, rtol=1e-6)
    # one pair given alone is that pair
    h = jaximp.h_statistic(model, X, pairs=("x1", "x2"), overall=False)
    assert h.pairwise.feature_sets == (("x1", "x2"),)
    # integer grid keys address columns; the result equals the named key
    by_index = jaximp.partial_dependence(model, X, 1, grid={1: [-1.0, 0.0, 1.0]})
    by_name = jaximp.partial_dependence(model, X, "x1", grid={"x1": [-1.0, 0.0, 1.0]})
    np.testing.assert_array_equal(by_index.average, by_name.average)
    assert np.asarray(by_index.grid_values[0]).tolist() == [-1.0, 0.0, 1.0]


def test_hstats_grid_is_hstats_univariate_grid():
    """R hstats 1.2.1: ``partial_dep(NULL, v, X, pred_fun = pf)`` with its default
    ``grid_size = 49`` and ``trim = c(0.01, 0.99)``: 49 points between the type-1 quantiles
    at 1% and 99% for a column with more distinct values, its sorted values otherwise. hstats
    gives x0's grid -5.197, -4.97414583333333, ..., 5.5 and PD 7.85489549806674,
    7.91381907691982, (25th) 6.58919173498847, (last) 5.20096163358966; x1's grid 0..4 and PD
    -0.10735214884848, 0.89264785115152, ..., 15.8926478511515."""
    rng = np.random.default_rng(21)
    n = 300
    X = np.column_stack([rng.standard_t(3, size=n).round(3), rng.integers(0, 5, n),
                         rng.normal(size=n)]).astype(float)

    class Host:
        def predict(self, A):
            A = np.asarray(A, np.float64)
            return A[:, 0] * A[:, 2] + np.sin(A[:, 0]) + A[:, 1] ** 2

    pd0 = jaximp.partial_dependence(Host(), X, 0, grid="hstats")
    grid = np.asarray(pd0.grid_values[0])
    assert grid.size == 49
    np.testing.assert_allclose(grid[[0, 1, -1]], [-5.197, -4.97414583333333, 5.5], rtol=1e-13)
    np.testing.assert_allclose(pd0.average[[0, 1, 24, -1], 0],
                               [7.85489549806674, 7.91381907691982, 6.58919173498847,
                                5.20096163358966], rtol=1e-12)
    pd1 = jaximp.partial_dependence(Host(), X, 1, grid="hstats")
    np.testing.assert_array_equal(pd1.grid_values[0], [0, 1, 2, 3, 4])
    np.testing.assert_allclose(pd1.average[[0, 1, -1], 0],
                               [-0.10735214884848, 0.89264785115152, 15.8926478511515],
                               rtol=1e-12)


def test_pdp_grid_is_r_pdp_sequence():
    """R pdp 0.8.2's ``pred_grid``: ``seq(min(x), max(x), length = grid.resolution)``, where
    only a NULL ``grid.resolution`` (the default) becomes ``min(n_unique, 51)``."""
    column = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    data = np.stack([column, np.arange(8.0)], axis=1)
    pd5 = jaximp.partial_dependence(lambda X: X[:, 0], data, 0, grid="pdp", grid_resolution=5)
    np.testing.assert_allclose(np.asarray(pd5.grid_values[0]), np.linspace(1.0, 9.0, 5))
    few = np.stack([np.array([0.0, 0.0, 2.0, 2.0, 10.0, 10.0]), np.arange(6.0)], axis=1)
    pd3 = jaximp.partial_dependence(lambda X: X[:, 0], few, 0, grid="pdp")
    # three distinct values: three evenly spaced points (0, 5, 10), not the values themselves
    np.testing.assert_allclose(np.asarray(pd3.grid_values[0]), [0.0, 5.0, 10.0])
    # a given resolution is taken as it is, also above the number of distinct values
    pd4 = jaximp.partial_dependence(lambda X: X[:, 0], few, 0, grid="pdp", grid_resolution=4)
    np.testing.assert_allclose(np.asarray(pd4.grid_values[0]), np.linspace(0.0, 10.0, 4))
    assert np.asarray(jaximp.pd_importance(lambda X: X[:, 0], few, grid_resolution=4)
                      .info.grid_values["x0"]).size == 4


def test_pdp_trimmed_and_quantile_grids_are_r_pdps():
    """pdp's ``trim.outliers = TRUE``: the sequence from the smallest to the largest value
    inside ``boxplot.stats``' fences (Tukey's hinges -+ 1.5 times their distance), written
    here with the hinges as the medians of the lower and upper halves; ``quantiles = TRUE``:
    type-7 quantiles (NumPy's linear ones) at ``probs = 1:9/10``."""
    rng = np.random.default_rng(7)
    for n in (9, 12, 201):
        x = rng.standard_t(2, size=n)  # heavy tails: outliers on both sides
        x[0] = -999.0  # as pdp's own test of trim.outliers
        half = np.sort(x)[:(n + 1) // 2], np.sort(x)[n // 2:]
        lower, upper = np.median(half[0]), np.median(half[1])
        inside = x[(x >= lower - 1.5 * (upper - lower)) & (x <= upper + 1.5 * (upper - lower))]
        data = np.stack([x, np.arange(n)], axis=1)
        trimmed = jaximp.partial_dependence(lambda X: X[:, 0], data, 0, grid="pdp_trim")
        np.testing.assert_allclose(trimmed.grid_values[0], np.linspace(
            inside.min(), inside.max(), min(n, 51)), rtol=1e-12)
        assert trimmed.grid_values[0][0] > -999
        for resolution, probs in ((None, np.arange(1, 10) / 10), (4, np.arange(1, 5) / 5))[
                :1 if n < 201 else 2]:
            quantiles = jaximp.partial_dependence(lambda X: X[:, 0], data, 0,
                                                  grid="pdp_quantiles",
                                                  grid_resolution=resolution)
            np.testing.assert_allclose(quantiles.grid_values[0], np.quantile(x, probs),
                                       rtol=1e-12)
    # one value inside the fences (a zero-inflated feature): pdp repeats it, importance 0
    flat = np.stack([np.r_[np.zeros(20), 1.0], np.arange(21.0)], axis=1)
    with pytest.warns(UserWarning, match="single value \\(0\\) inside its boxplot fences"):
        result = jaximp.pd_importance(lambda X: X[:, 0], flat, grid="pdp_trim")
    assert result.importances_mean[0, 0] == 0.0


def test_seeds_beyond_32_bits_make_their_own_keys_in_both_float_modes():
    """Without x64 jax.random.key keeps a seed's low 32 bits: 0 and 2**32 drew the same
    permutations. Their keys now differ, equal under x64 and without it."""
    import jax

    from jaximp.data import as_key

    def data(seed):
        return tuple(np.asarray(jax.random.key_data(as_key(seed))).tolist())

    seeds = (0, 1, 2**32 - 1, 2**32, 2**32 + 1, -1, 2**63 - 1)
    plain = [data(seed) for seed in seeds]
    assert len(set(plain)) == len(seeds)
    assert plain[:3] == [data(seed) for seed in (0, 1, 2**32 - 1)]
    with jax.enable_x64(True):
        assert [data(seed) for seed in seeds] == plain


def test_dates_and_durations_are_refused_naming_a_unit():
    import pandas as pd

    days = np.array(["2020-01-01", "2020-02-01", "2020-03-01"], "datetime64[D]")[:, None]
    for data, what in [(days, "X"), (days - days.min(), "X"),
                       (pd.DataFrame({"t": pd.to_timedelta([1, 2, 3], unit="D")}), "column 't'"),
                       (pd.DataFrame({"t": pd.to_datetime(["2020-01-01"] * 3)}), "column 't'")]:
        with pytest.raises(TypeError, match=rf"{what} holds dates or durations .*timedelta64"):
            jaximp.as_dataset(data)


def test_bfloat16_targets_and_weights_are_numbers():
    """A bfloat16 y (ml_dtypes, or a JAX array) is a regression target and bfloat16 weights
    are weights: the same results as their float64 values (filter_importance read such a y
    as class labels)."""
    import jax.numpy as jnp
    import ml_dtypes

    rng = np.random.default_rng(0)
    data = rng.normal(size=(200, 3))
    target = (data @ np.array([2.0, 0.5, 0.0])).astype(ml_dtypes.bfloat16)
    exact = target.astype(np.float64)
    weights = rng.uniform(0.5, 2.0, 200).astype(ml_dtypes.bfloat16)
    for y in (target, jnp.asarray(target)):
        result = jaximp.filter_importance(data, y)
        assert result.info["method"] == "t"
        np.testing.assert_array_equal(result.importances_mean,
                                      jaximp.filter_importance(data, exact).importances_mean)
        np.testing.assert_array_equal(
            jaximp.permutation_importance(lambda Z: Z[:, 0], data, y, n_repeats=2,
                                          sample_weight=weights).importances,
            jaximp.permutation_importance(lambda Z: Z[:, 0], data, exact, n_repeats=2,
                                          sample_weight=weights.astype(np.float64)
                                          ).importances)


def test_missing_class_labels_are_refused_by_row():
    labels = np.array(["a", "b", None, "a"] * 15, dtype=object)
    for call in (lambda: jaximp.filter_importance(X, labels),
                 lambda: jaximp.permutation_importance(
                     lambda Z: jnp.stack([Z[:, 0], 1 - Z[:, 0]], axis=1), X, labels)):
        with pytest.raises(ValueError, match=r"y has 15 missing labels \(None or NaN; first "
                                             r"at row 2\)"):
            call()


def test_case_weights_far_outside_float32_range_are_relative_as_any_others():
    """Weights only count relative to each other (scikit-learn's w and c w agree); scaled by
    1e-40 they underflowed float32 (all importances 0) and by 1e40 they overflowed."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = X[:, 0] + X[:, 1] + rng.normal(size=30)
    model = lambda A: A[:, 0] + A[:, 1]
    w = rng.uniform(0.5, 2.0, 30)
    want = jaximp.permutation_importance(model, X, y, sample_weight=w).importances_mean
    shapley = jaximp.shapley_values(model, X[:1], X, background_weight=w).values
    for scale in (1e-40, 1e40):
        np.testing.assert_allclose(jaximp.permutation_importance(
            model, X, y, sample_weight=scale * w).importances_mean, want, rtol=1e-6)
        np.testing.assert_allclose(jaximp.shapley_values(
            model, X[:1], X, background_weight=scale * w).values, shapley, rtol=1e-6)


def test_negative_positions_count_from_the_end():
    """Features, grids and categorical columns by negative position, as Python indexes (they
    were refused as out of range); beyond the ends the message gives both ranges."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(60, 3))
    A[:, 0] = rng.integers(0, 3, 60)
    y = A[:, 0] + 2 * A[:, 2]

    def f(X):
        return X[:, 0] + 2 * X[:, 2] * X[:, 1]

    by_end = jaximp.partial_dependence(f, A, -1, grid={-1: [0.0, 1.0]}, categorical=[-3])
    by_start = jaximp.partial_dependence(f, A, 2, grid={2: [0.0, 1.0]}, categorical=[0])
    assert by_end.feature_names == ("x2",)
    np.testing.assert_array_equal(by_end.average, by_start.average)
    np.testing.assert_allclose(by_end.average[:, 0], A[:, 0].mean() + 2 * np.array(
        [0.0, 1.0]) * A[:, 1].mean(), rtol=1e-5)
    assert jaximp.as_dataset(A, categorical=[-3]).features[0].is_categorical
    assert jaximp.permutation_importance(f, A, y, features=[-1, 0]).feature_names == ("x2",
                                                                                     "x0")
    pd.testing.assert_frame_equal(jaximp.average_loss(f, A, y, by=-3),
                                  jaximp.average_loss(f, A, y, by=0))
    with pytest.raises(ValueError, match=r"index -4 is out of range; the data has 3 features "
                                         r"\(0 \.\. 2, or -3 \.\. -1 from the end\)"):
        jaximp.partial_dependence(f, A, -4)


def test_an_int_output_beyond_the_outputs_that_names_a_class_says_to_pass_the_label():
    """Classes [-5, -1, 3]: output=3 is a position (out of range); the message says that
    output='3' picks the class labelled 3, which then equals the third column."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 2))
    y = np.array([-5, -1, 3])[np.digitize(X[:, 0], [-0.4, 0.4])]
    model = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"out of range for a model with 3 outputs; an int is "
                                         r"a position: for the output named '3' pass "
                                         r"output='3'\."):
        jaximp.partial_dependence(model, X, 0, output=3)
    by_label = jaximp.partial_dependence(model, X, 0, output="3", grid_resolution=4)
    by_position = jaximp.partial_dependence(model, X, 0, output=-1, grid_resolution=4)
    np.testing.assert_array_equal(by_label.average, by_position.average)
