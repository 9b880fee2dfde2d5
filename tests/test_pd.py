"""Partial dependence and ICE against scikit-learn and a float64 NumPy loop."""

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from conftest import random_mlp

import jaximp
from jaximp.data._grid import mquantiles


def numpy_pd(f_np, X, column, grid, weights=None):
    """Float64 reference: loop over grid points, average over rows."""
    w = np.ones(len(X)) if weights is None else np.asarray(weights, float)
    ice = []
    for z in grid:
        Xz = X.copy()
        Xz[:, column] = z
        ice.append(f_np(Xz))
    ice = np.stack(ice, axis=1)  # (n, g)
    return (w[:, None] * ice).sum(0) / w.sum(), ice


def test_mquantiles_matches_scipy():
    from scipy.stats.mstats import mquantiles as scipy_mq

    x = np.random.default_rng(0).normal(size=37)
    probs = [0.0, 0.05, 0.3, 0.95, 1.0]
    np.testing.assert_allclose(mquantiles(x, probs), scipy_mq(x, prob=probs), rtol=1e-12)


def test_type1_ranks_are_r_type_1_quantiles():
    """R's quantile(type = 1), without a fuzz, as numpy's inverted_cdf: n p a hair above an
    integer (15 * 0.6000000000000001, from seq(0, 1, length.out = 6)) takes the next order
    statistic."""
    from jaximp.data import type1_ranks

    rng = np.random.default_rng(2)
    for _ in range(300):
        n, m = int(rng.integers(1, 800)), int(rng.integers(1, 12))
        x = np.sort(rng.normal(size=n))
        for probs in (np.linspace(0, 1, m + 1), np.array([0.01, 0.5, 0.99])):
            np.testing.assert_array_equal(x[type1_ranks(n, probs)],
                                          np.quantile(x, probs, method="inverted_cdf"))
    assert type1_ranks(15, np.linspace(0, 1, 6))[3] == 9  # the 10th value; the 9th with one


def test_pd_and_ice_equal_numpy_loop(mlp3, data3):
    f_jax, f_np, _ = mlp3
    result = jaximp.partial_dependence(f_jax, data3, "x1", kind="both", grid_resolution=9)
    grid = np.asarray(result.grid_values[0])
    ref_avg, ref_ice = numpy_pd(f_np, data3, 1, grid)
    np.testing.assert_allclose(result.average[:, 0], ref_avg, atol=2e-5)
    np.testing.assert_allclose(result.individual[:, :, 0], ref_ice, atol=2e-5)
    low, high = mquantiles(data3[:, 1], [0.05, 0.95])
    np.testing.assert_allclose(grid, np.linspace(low, high, 9))


def test_pd_matches_sklearn_brute():
    pytest.importorskip("sklearn")
    from sklearn.inspection import partial_dependence as sk_pd
    from sklearn.neural_network import MLPRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 4))
    y = np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2]
    est = MLPRegressor(hidden_layer_sizes=(16,), max_iter=300, random_state=0).fit(X, y)
    W = [np.asarray(w, np.float32) for w in est.coefs_]
    b = [np.asarray(v, np.float32) for v in est.intercepts_]

    def f(Xj):
        import jax.numpy as jnp

        h = jnp.maximum(Xj @ W[0] + b[0], 0)
        return (h @ W[1] + b[1])[:, 0]

    for feature in (0, 2):
        ours = jaximp.partial_dependence(f, X, feature, kind="both", grid="sklearn",
                                         grid_resolution=15)
        ref = sk_pd(est, X, [feature], method="brute", kind="both", grid_resolution=15)
        np.testing.assert_allclose(ours.grid_values[0], ref["grid_values"][0], rtol=1e-6)
        np.testing.assert_allclose(ours.average[:, 0], ref["average"][0], atol=1e-5)
        np.testing.assert_allclose(ours.individual[:, :, 0], ref["individual"][0], atol=1e-5)
    # a host (scikit-learn) model through the callback gives the same numbers
    host = jaximp.partial_dependence(est, X, 0, grid="sklearn", grid_resolution=15)
    ref = sk_pd(est, X, [0], method="brute", grid_resolution=15)
    np.testing.assert_allclose(host.average[:, 0], ref["average"][0], rtol=1e-5, atol=1e-6)


def test_sklearn_classifier_keeps_class_axis():
    pytest.importorskip("sklearn")
    from sklearn.inspection import partial_dependence as sk_pd
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
    clf = LogisticRegression(max_iter=500).fit(X, y)
    ours = jaximp.partial_dependence(clf, X, "x0", grid="sklearn", grid_resolution=7)
    assert ours.output_names == ("0", "1", "2")
    ref = sk_pd(clf, X, [0], method="brute", grid_resolution=7)
    np.testing.assert_allclose(ours.average.T, ref["average"], atol=1e-6)
    one = jaximp.partial_dependence(clf, X, "x0", grid_resolution=7, output="2")
    np.testing.assert_allclose(one.average[:, 0], ours.average[:, 2])


def test_two_way_pd_and_weights(mlp3, data3):
    f_jax, f_np, _ = mlp3
    w = np.random.default_rng(2).uniform(size=len(data3))
    result = jaximp.partial_dependence(f_jax, data3, ["x0", "x2"], grid_resolution=4,
                                       sample_weight=w)
    g0, g2 = (np.asarray(g) for g in result.grid_values)
    assert result.average.shape == (4, 4, 1)
    for a, z0 in enumerate(g0):
        for b, z2 in enumerate(g2):
            Xz = data3.copy()
            Xz[:, 0], Xz[:, 2] = z0, z2
            ref = np.sum(w * f_np(Xz)) / w.sum()
            assert abs(result.average[a, b, 0] - ref) < 2e-5
    frame = result.to_frame()
    assert list(frame.columns) == ["x0", "x2", "output", "yhat"] and len(frame) == 16


def test_centered_ice(mlp3, data3):
    f_jax, _, _ = mlp3
    raw = jaximp.partial_dependence(f_jax, data3, "x0", kind="both", grid_resolution=5)
    cen = jaximp.partial_dependence(f_jax, data3, "x0", kind="both", grid_resolution=5,
                                    centered=True)
    np.testing.assert_allclose(cen.individual, raw.individual - raw.individual[:, :1])
    np.testing.assert_allclose(cen.average, raw.average - raw.average[:1], atol=1e-6)
    avg_only = jaximp.partial_dependence(f_jax, data3, "x0", grid_resolution=5, centered=True)
    np.testing.assert_allclose(avg_only.average, cen.average, atol=1e-5)


def test_grid_strategies():
    x = np.r_[np.arange(10.0), np.arange(10.0)][:, None] * np.ones((1, 2))
    data = jaximp.as_dataset(x)
    from jaximp.data._grid import feature_grid

    feat = data.features[0]
    unique, _ = feature_grid(data, feat, strategy="unique")
    np.testing.assert_array_equal(unique[:, 0], np.arange(10.0))
    # no more distinct values than the resolution: the distinct values are used
    auto, _ = feature_grid(data, feat, strategy="uniform", grid_resolution=10)
    np.testing.assert_array_equal(auto[:, 0], np.arange(10.0))
    # scikit-learn switches only when there are fewer distinct values
    sk, _ = feature_grid(data, feat, strategy="sklearn", grid_resolution=10,
                         percentiles=(0.2, 0.8))
    assert len(sk) == 10 and not np.array_equal(sk[:, 0], np.arange(10.0))
    q, _ = feature_grid(data, feat, strategy="quantile", grid_resolution=5,
                        percentiles=(0, 1))
    np.testing.assert_allclose(q[:, 0], mquantiles(x[:, 0], np.linspace(0, 1, 5)))
    explicit = jaximp.partial_dependence(lambda X: X[:, 0], x, "x0", grid={"x0": [1.0, 4.0]})
    np.testing.assert_allclose(explicit.average[:, 0], [1.0, 4.0])
    # an infinite resolution is every distinct value, whatever the strategy (alibi's np.inf)
    for strategy in ("sklearn", "quantile", "pdp", "hstats"):
        every, _ = feature_grid(data, feat, strategy=strategy, grid_resolution=np.inf)
        np.testing.assert_array_equal(every[:, 0], np.arange(10.0))
    assert jaximp.partial_dependence(lambda X: X[:, 0], x, "x0",
                                     grid_resolution=np.inf).grid_values[0] == tuple(range(10))
    with pytest.raises(ValueError, match="an int >= 2, inf"):
        jaximp.partial_dependence(lambda X: X[:, 0], x, "x0", grid_resolution=2.5)


def test_categorical_and_onehot_features():
    rng = np.random.default_rng(0)
    color = rng.integers(0, 3, size=60)
    frame = pd.DataFrame({
        "size": rng.normal(size=60),
        "color": pd.Categorical.from_codes(color, ["red", "green", "blue"]),
    })
    effect = np.array([0.0, 1.0, 5.0], np.float32)

    def f(X):
        import jax.numpy as jnp

        return X[:, 0] + jnp.asarray(effect)[X[:, 1].astype(int)]

    result = jaximp.partial_dependence(f, frame, "color")
    assert result.grid_values[0] == ("red", "green", "blue")
    mean_size = frame["size"].mean()
    np.testing.assert_allclose(result.average[:, 0], mean_size + effect, atol=1e-5)

    onehot = np.eye(3)[color]
    X = np.column_stack([frame["size"], onehot])
    names = ["size", "c_red", "c_green", "c_blue"]

    def g(X):
        return X[:, 0] + X[:, 1:] @ effect

    res = jaximp.partial_dependence(g, X, "color", feature_names=names,
                                    groups={"color": ["c_red", "c_green", "c_blue"]})
    assert res.grid_values[0] == ("c_red", "c_green", "c_blue")
    np.testing.assert_allclose(res.average[:, 0], mean_size + effect, atol=1e-5)
    all_pds = jaximp.partial_dependence_all(g, X, feature_names=names,
                                            groups={"color": ["c_red", "c_green", "c_blue"]})
    assert list(all_pds) == ["size", "color"]


def test_explicit_levels_of_a_text_column_of_an_array():
    """Grid values naming some levels of a text column of an object or str array (as
    scikit-learn's custom_values): the PD at those levels, as for the same DataFrame."""
    rng = np.random.default_rng(3)
    text = rng.choice(["a", "b", "c"], size=40)
    size = rng.normal(size=40)
    effect = {"a": 0.0, "b": 1.0, "c": 5.0}

    class Host:
        def predict(self, X):
            return (np.asarray(X[:, 0], np.float64)
                    + np.array([effect[v] for v in np.asarray(X)[:, 1]]))

    for X in (np.array(list(zip(size, text)), dtype=object), np.column_stack([size, text])):
        result = jaximp.partial_dependence(Host(), X, 1, grid={1: ["c", "a"]})
        assert result.grid_values[0] == ("c", "a")
        mean = np.asarray(X[:, 0], np.float64).mean()
        np.testing.assert_allclose(result.average[:, 0], [mean + 5.0, mean], rtol=1e-12)


def test_dataframe_equals_array(mlp3, data3):
    f_jax, _, _ = mlp3
    frame = pd.DataFrame(data3, columns=["a", "b", "c"])
    from_frame = jaximp.partial_dependence(f_jax, frame, "b", grid_resolution=6)
    from_array = jaximp.partial_dependence(f_jax, data3, 1, grid_resolution=6,
                                           feature_names=["a", "b", "c"])
    np.testing.assert_array_equal(from_frame.average, from_array.average)


def test_pd_all_matches_single(mlp3, data3):
    f_jax, _, _ = mlp3
    together = jaximp.partial_dependence_all(f_jax, data3, grid_resolution=7, kind="both")
    for name, result in together.items():
        alone = jaximp.partial_dependence(f_jax, data3, name, grid_resolution=7, kind="both")
        np.testing.assert_allclose(result.average, alone.average, atol=1e-6)
        np.testing.assert_allclose(result.individual, alone.individual, atol=1e-6)


def test_multi_output_model():
    f_jax, f_np, _ = random_mlp(3, sizes=(3, 8, 2))
    X = np.random.default_rng(4).normal(size=(50, 3))
    result = jaximp.partial_dependence(f_jax, X, "x2", grid_resolution=5)
    assert result.average.shape == (5, 2) and result.output_names == ("y0", "y1")
    for k, z in enumerate(result.grid_values[0]):
        Xz = X.copy()
        Xz[:, 2] = z
        np.testing.assert_allclose(result.average[k], f_np(Xz).mean(0), atol=2e-5)
    assert set(result.to_frame()["output"]) == {"y0", "y1"}


def test_derivative_ice_equals_the_analytic_partial_derivative():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(30, 3))

    def f(A):
        return jnp.stack([A[:, 0] ** 2 * A[:, 1], jnp.sin(A[:, 0]) + A[:, 2]], axis=1)

    r = jaximp.partial_dependence(f, X, "x0", kind="both", derivative=True, grid_resolution=5)
    z = np.asarray(r.grid_values[0], np.float64)
    expected = np.stack([2 * z[None, :] * X[:, 1:2], np.cos(z)[None, :] + 0 * X[:, 1:2]], -1)
    np.testing.assert_allclose(r.individual, expected, atol=1e-6)
    np.testing.assert_allclose(r.average, expected.mean(axis=0), atol=1e-6)
    assert r.output_names == ("y0", "y1")
    with pytest.raises(ValueError, match=r"^derivative=True needs method='brute'; got "
                                         r"method='recursion'\.$"):
        jaximp.partial_dependence(f, X, "x0", derivative=True, method="recursion")
    with pytest.raises(ValueError, match=r"derivative=True needs one numeric feature; got "
                                         r"\['x0 \(continuous\)', 'x1 \(continuous\)'\]"):
        jaximp.partial_dependence(f, X, ["x0", "x1"], derivative=True)


def test_a_huge_joint_grid_is_refused_with_the_fix():
    """A list of ten features asks for their joint PD over 50**10 grid points (every distinct
    value of 50 rows): refused before the product grid is built, with the call that gives one
    PD per feature."""
    X = np.random.default_rng(0).uniform(size=(50, 10))
    model = lambda A: A.sum(axis=1)  # noqa: E731
    with pytest.raises(ValueError, match=r"has 50 x 50 x .* = 9.77e\+16 points .* "
                                         r"partial_dependence_all"):
        jaximp.partial_dependence(model, X, list(range(10)))
    joint = jaximp.partial_dependence(model, X, [0, 1], grid_resolution=5)  # 25 points: fine
    g0, g1 = (np.asarray(g) for g in joint.grid_values)
    expected = g0[:, None] + g1[None, :] + X[:, 2:].sum(axis=1).mean()  # additive model
    np.testing.assert_allclose(joint.average[..., 0], expected, rtol=1e-5)


def test_pd_by_group_of_rows_equals_a_float64_loop_per_group():
    """by= (hstats' BY, dalex's groups): a numeric grouping cut at its type-1 quantiles into
    right-closed intervals (pandas' cut as the reference), a categorical one by its
    categories; each group's PD is the weighted mean of its own rows' curves on the grid of
    all rows, in one pass, centred per group; the Explainer gives the same."""
    rng = np.random.default_rng(4)
    n = 90
    X = rng.normal(size=(n, 3))
    w = rng.uniform(0.5, 2.0, size=n)
    coef = np.array([1.0, -0.5, 0.25], np.float32)
    f = lambda A: A[:, 0] * A[:, 1] + jnp.sin(A[:, 2]) + A @ jnp.asarray(coef)  # noqa: E731
    f64 = lambda A: A[:, 0] * A[:, 1] + np.sin(A[:, 2]) + A @ coef.astype(float)  # noqa: E731
    breaks = np.unique(np.quantile(X[:, 1], np.linspace(0, 1, 5), method="inverted_cdf"))
    codes = pd.cut(X[:, 1], breaks, include_lowest=True).codes
    levels = pd.Categorical(rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi"])
    for by, group_codes, names in [("x1", codes, None), (levels, levels.codes, ["lo", "mid",
                                                                              "hi"])]:
        for kind, centered in [("average", False), ("average", True), ("both", True)]:
            got = jaximp.partial_dependence(f, X, "x0", by=by, kind=kind, centered=centered,
                                            grid_resolution=6, sample_weight=w)
            assert len(got) == len(np.unique(group_codes))
            if names is not None:
                assert list(got) == names
            else:
                assert [label.right for label in got] == list(breaks[1:])
            for k, result in enumerate(got.values()):
                rows = group_codes == k
                curve = []
                for z in result.grid_values[0]:
                    Z = X[rows].copy()
                    Z[:, 0] = z
                    curve.append(np.average(f64(Z), weights=w[rows]))
                curve = np.asarray(curve) - (curve[0] if centered else 0.0)
                np.testing.assert_allclose(result.average[:, 0], curve, rtol=1e-5, atol=1e-5)
                if kind == "both":
                    assert result.individual.shape == (rows.sum(), 6, 1)
    plain = jaximp.partial_dependence(f, X, "x0", by="x1", grid_resolution=6, sample_weight=w)
    bound = jaximp.Explainer(f, X, sample_weight=w).partial_dependence("x0", by="x1",
                                                                       grid_resolution=6)
    assert list(bound) == list(plain)
    for label, result in plain.items():
        np.testing.assert_allclose(bound[label].average, result.average, rtol=1e-6)
    # partial_dependence_all: every feature's PDs by group from one call, the same curves
    every = jaximp.partial_dependence_all(f, X, by="x1", grid_resolution=6, sample_weight=w)
    assert list(every) == list(plain)
    for label, pds in every.items():
        assert list(pds) == ["x0", "x1", "x2"]
        np.testing.assert_allclose(pds["x0"].average, plain[label].average, rtol=1e-6)
    # R's quantile(rep(1:15, each = 6), seq(0, 1, length.out = 6), type = 1): 90 times
    # 0.6000000000000001 is above 54, so the fourth break is the 55th value, 10 (no fuzz)
    cuts = jaximp.partial_dependence(f, X, "x0", by=np.repeat(np.arange(1.0, 16.0), 6),
                                     by_size=5, grid_resolution=3)
    assert [label.right for label in cuts] == [3.0, 6.0, 10.0, 12.0, 15.0]
    with pytest.raises(ValueError, match="group 1 of by has no weight"):
        jaximp.partial_dependence(f, X, "x0", by=(X[:, 1] > 0).astype(int),
                                  sample_weight=(X[:, 1] <= 0).astype(float))
    shuffled = pd.DataFrame(X).sample(frac=1.0, random_state=0)
    with pytest.warns(UserWarning, match="by's index holds the same labels as X's"):
        jaximp.partial_dependence(f, shuffled, 0, by=pd.Series(X[:, 1] > 0), grid_resolution=3)
    with pytest.raises(ValueError, match="by= averages the ICE curves .* method='brute'"):
        jaximp.partial_dependence(f, X, "x0", by="x1", method="recursion")
    # a missing grouping is a group of its own, last (hstats' NA group), with a warning
    with pytest.warns(UserWarning, match="by has 2 missing values .* labelled None"):
        grouped = jaximp.partial_dependence(f, X, "x0", by=np.r_[np.nan, np.ones(n - 2), None],
                                            grid_resolution=3)
    assert list(grouped) == [1.0, None]
    alone = jaximp.partial_dependence(f, X[[0, n - 1]], "x0",
                                      grid={"x0": grouped[None].grid_values[0]})
    np.testing.assert_allclose(grouped[None].average, alone.average, rtol=1e-6)
    with pytest.raises(ValueError, match="by is missing .* in all 90 rows"):
        jaximp.partial_dependence(f, X, "x0", by=np.full(n, np.nan))
    with pytest.raises(ValueError, match="by='z' names no column of X"):
        jaximp.partial_dependence(f, X, "x0", by="z")
    with pytest.raises(ValueError, match=r"one value per row \(90\)"):
        jaximp.partial_dependence(f, X, "x0", by=np.ones(5))
