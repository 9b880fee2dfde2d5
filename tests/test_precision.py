"""Float64 grids at large magnitudes and precision-collapse warnings (jaximp.engine._precision)."""

import warnings

import numpy as np
import pytest

from jaximp.data._data import as_dataset
from jaximp.data._grid import feature_grid
from jaximp.engine import _precision
from jaximp.engine._precision import PrecisionWarning, check_collapse

FIX = (
    "centre or scale the feature inside the model, or enable float64 with "
    "jax.config.update('jax_enable_x64', True) and float64 model parameters"
)


def timestamps(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([1.6e9 + rng.uniform(0, 1000, n), rng.normal(size=n)])


def test_timestamp_grid_is_float64_and_uniform():
    ds = as_dataset(timestamps(), feature_names=["ts", "x"])
    rows, labels = feature_grid(ds, ds.feature("ts"), grid_resolution=20)
    assert rows.dtype == np.float64 and rows.shape == (20, 1)
    assert np.unique(rows).size == 20
    np.testing.assert_allclose(np.diff(rows[:, 0]), np.diff(rows[:, 0])[0], rtol=1e-6)
    assert 800 < rows[-1, 0] - rows[0, 0] < 1000
    assert labels == tuple(rows[:, 0].tolist())


def test_equal_percentiles_still_rejected():
    X = np.column_stack([np.r_[np.full(98, 1.6e9), 1.6e9 + 1, 1.6e9 + 2], np.arange(100.0)])
    ds = as_dataset(X)
    with pytest.raises(ValueError, match=r"the percentiles \(0.05, 0.95\) of feature 'x0' are "
                                         r"equal \(1.6e\+09\); widen percentiles"):
        feature_grid(ds, ds.feature("x0"), grid_resolution=2)


def test_timestamp_grid_warns_in_float32_only():
    ds = as_dataset(timestamps(), feature_names=["ts", "x"])
    rows, _ = feature_grid(ds, ds.feature("ts"), grid_resolution=20)
    n32 = np.unique(rows.astype(np.float32)).size
    assert n32 < 20
    with pytest.warns(PrecisionWarning) as record:
        check_collapse("ts", rows, np.float32, "grid points")
    message = str(record[0].message)
    assert message.startswith(f"feature 'ts': 20 grid points give {n32} distinct float32 values")
    assert FIX in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_collapse("ts", rows, np.float64, "grid points")


def test_observed_timestamps_warn():
    with pytest.warns(PrecisionWarning, match="500 observed values give .* distinct float32"):
        check_collapse("ts", timestamps()[:, 0], np.float32, "observed values")


def test_ordinary_features_do_not_warn():
    rng = np.random.default_rng(3)
    ds = as_dataset(rng.normal(size=(200, 2)) * [1.0, 1e4])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for feat in ds.features:
            rows, _ = feature_grid(ds, feat, grid_resolution=50)
            check_collapse(feat.name, rows, np.float32, "grid points")
            check_collapse(feat.name, ds.X[:, feat.columns[0]], np.float32, "observed values")
        # many rows in [0, 1] lose a few near-duplicates in float32 but are well resolved
        check_collapse("u", rng.uniform(size=10**6), np.float32, "observed values")
        check_collapse("i", [1.6e9, 1.6e9 + 1], np.int32, "grid points")  # not a float dtype
        check_collapse("one", [5.0], np.float32, "grid points")  # nothing to collapse


def test_spread_below_a_few_ulps_warns_without_losing_values():
    values = 1.0 + np.arange(3) * 2.0**-23  # three distinct float32 values, 2 ulps apart
    with pytest.warns(PrecisionWarning, match="3 grid points give 3 distinct float32 values"):
        check_collapse("x", values, np.float32, "grid points")
    # timestamps 1.6e9 + 10 .. 900 s: distinct in float32, but rounded to steps of 128
    with pytest.warns(PrecisionWarning, match=r"rounded by up to 64, 7\.2% of their spread"):
        check_collapse("t", 1.6e9 + np.array([10.0, 260, 500, 900]), np.float32, "bin edges")
    # a spread of 100 steps or more is resolved well enough, and values the dtype holds
    # exactly reach the model as they are: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_collapse("t", 1.6e9 + np.arange(0, 128 * 100, 128.0), np.float32, "bin edges")
        check_collapse("x", 2.0 ** 22 + np.arange(11.0), np.float32, "values")


def test_other_low_precision_dtypes():
    import jax.numpy as jnp

    with pytest.warns(PrecisionWarning, match="give 1 distinct bfloat16 values"):
        check_collapse("ts", np.linspace(1.6e9, 1.6e9 + 900, 20), jnp.bfloat16, "grid points")
    with pytest.warns(PrecisionWarning, match="become inf in float16"):
        check_collapse("big", [1e5, 2e5], np.float16, "grid points")


def test_exports():
    assert issubclass(PrecisionWarning, UserWarning)
    assert set(_precision.__all__) == {"PrecisionWarning", "check_collapse",
                                       "check_collapse_columns"}


@pytest.mark.parametrize("n", [200, 5003])  # a small X, and one read by column ranges
def test_column_check_warns_exactly_where_the_one_column_check_does(n):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(size=n), 1.6e9 + rng.uniform(0, 900, n),
                         np.full(n, 3.0), 1e-30 * rng.uniform(size=n)])
    names = ["u", "stamp", "const", "tiny"]
    for dtype in (np.float32, np.float16):
        with warnings.catch_warnings(record=True) as one:
            warnings.simplefilter("always")
            for j, name in enumerate(names):
                _precision.check_collapse(name, X[:, j], dtype, "permuted values")
        with warnings.catch_warnings(record=True) as many:
            warnings.simplefilter("always")
            _precision.check_collapse_columns(names, X, range(4), dtype, "permuted values")
        assert [str(w.message) for w in many] == [str(w.message) for w in one]
        assert any("'stamp'" in str(w.message) for w in many)


@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (5003, 10), (4099, 1), (3000, 2000)])
def test_column_ranges_equal_numpys_column_min_and_max(shape):
    X = np.random.default_rng(1).normal(size=shape)
    for view in (X, X[::-1], X[:, ::2]):  # contiguous, and views NumPy must copy to reshape
        low, high = _precision._column_ranges(view)
        np.testing.assert_array_equal(low, view.min(axis=0))
        np.testing.assert_array_equal(high, view.max(axis=0))


def test_tree_models_whose_float32_outputs_lose_their_effects_warn():
    """A regression tree model read into float32 arrays on a target far from 0 with small
    effects (y = 1e7 + 0.25 tanh(x0): float32 steps of 1 there) rounds every effect away:
    reading it warns at the user's line, naming both fixes; not on a target near 0, nor
    with float64 arrays."""
    import jax
    import jaximp
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    effect = 0.25 * np.tanh(X[:, 0])
    for model in (RandomForestRegressor(5, max_depth=3, random_state=0),
                  GradientBoostingRegressor(n_estimators=10, max_depth=2)):
        model.fit(X, 1e7 + effect)
        with pytest.warns(PrecisionWarning, match=r"vary by at most .* around 1e\+07.*"
                                                  r"jax_enable_x64.*trees='host'") as record:
            jaximp.tree_predictor(model)
        assert record[0].filename == __file__
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrecisionWarning)
            jaximp.tree_predictor(model.fit(X, effect))  # near 0: resolved
            with jax.enable_x64(True):  # float64 arrays
                jaximp.tree_predictor(model.fit(X, 1e7 + effect))


def test_gradient_methods_and_ale_warn_on_values_float32_rounds_coarsely():
    """Timestamps 1.6e9 + 10 .. 900 s reach a float32 model in steps of 128: integrated
    gradients and ALE's steps came out 7% off without a word."""
    import jaximp

    X = 1.6e9 + np.array([[10.0], [500.0], [260.0], [900.0]])
    model = lambda A: (A[:, 0] - 1.6e9) / 100.0
    with pytest.warns(PrecisionWarning, match=r"feature 'x0': its values reach the model "
                                              r"rounded by up to 64"):
        jaximp.integrated_gradients(model, X, baselines=np.array([1.6e9 + 50]))
    with pytest.warns(PrecisionWarning, match=r"feature 'x0': its bin edges reach the model "
                                              r"rounded by up to 64"):
        jaximp.ale(model, X, 0, bins=3)


def test_methods_that_place_the_datas_values_warn_where_float32_merges_them():
    """A column at 1e8 + N(0, 1) is about one float32 step wide: conditional importance,
    SAGE, Shapley values and H explained the rounding (zeros) without a word, as permutation
    importance did not; each now warns once per data, naming the feature."""
    import jaximp

    X = np.random.default_rng(18).normal(size=(60, 3)) + [1e8, 0.0, 0.0]
    beta = np.ones(3)
    model, y = (lambda A: A @ beta), X @ beta
    calls = {
        "conditional": lambda: jaximp.conditional_importance(model, X, y, n_repeats=2),
        "sage": lambda: jaximp.sage_importance(model, X, y, estimator="exact",
                                               background_size=10),
        "shapley": lambda: jaximp.shapley_values(model, X[:3], X[:20]),
        "h": lambda: jaximp.h_statistic(model, X[:20]),
    }
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        messages = [str(w.message) for w in caught if w.category is PrecisionWarning]
        assert len(messages) == 1, (name, messages)
        assert messages[0].startswith("feature 'x0': ") and "float32" in messages[0], name
    explainer = jaximp.Explainer(model, X, y)
    with pytest.warns(PrecisionWarning, match="feature 'x0'"):
        explainer.conditional_importance(n_repeats=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)  # checked once per data
        explainer.conditional_importance(n_repeats=2)
