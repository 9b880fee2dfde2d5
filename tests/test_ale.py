"""Accumulated local effects against closed forms and an independent float64 NumPy reference."""

import jax.numpy as jnp
import matplotlib
import numpy as np
import pandas as pd
import pytest
from conftest import ON_CPU, assert_same_program

from jaximp.data._checks import as_key
from jaximp.data._edge import replicate_weights
from jaximp.methods._ale import ale, ale_importance, ale_interaction
from jaximp.methods._pd import partial_dependence

matplotlib.use("Agg")


# ----------------------------------------------------------------------------- reference


def ref_edges(x, w, k):
    """Weighted type-1 quantiles at 1/k..1 plus the minimum, deduplicated."""
    order = np.argsort(x)
    xs, share = x[order], np.cumsum(w[order]) / w.sum()
    out = [x.min()]
    for j in range(1, k + 1):
        out.append(xs[np.nonzero(share >= j / k - 1e-12)[0][0]])
    return np.unique(np.array(out + [x.max()]))


def ref_bins(x, edges):
    codes = np.array([max(0, min(len(edges) - 2, int(np.sum(edges < v)) - 1)) for v in x])
    t = (x - edges[codes]) / (edges[codes + 1] - edges[codes])
    return codes, np.clip(t, 0, 1)


def ref_ale_numeric(f, X, j, edges, w):
    """(uncentred, centred) curves at the edges, each (k + 1, o)."""
    codes, t = ref_bins(X[:, j], edges)
    lo, hi = X.copy(), X.copy()
    lo[:, j], hi[:, j] = edges[codes], edges[codes + 1]
    diff = np.atleast_2d(np.asarray(f(hi), np.float64).T).T - np.atleast_2d(
        np.asarray(f(lo), np.float64).T).T
    steps = np.array([np.average(diff[codes == k], axis=0, weights=w[codes == k])
                      for k in range(len(edges) - 1)])
    curve = np.vstack([np.zeros((1, diff.shape[1])), np.cumsum(steps, axis=0)])
    rows = curve[codes] * (1 - t)[:, None] + curve[codes + 1] * t[:, None]
    return curve, curve - np.average(rows, axis=0, weights=w)


def ref_ale_categorical(f, X, j, order, w):
    """Levels ``order`` (values of column j); steps average both neighbours' rows."""
    pos = np.array([list(order).index(v) for v in X[:, j]])
    out = [0.0]
    for s in range(len(order) - 1):
        up, down = X[pos == s].copy(), X[pos == s + 1].copy()
        d_up = f(np.where(np.arange(X.shape[1]) == j, order[s + 1], up)) - f(up)
        d_down = f(down) - f(np.where(np.arange(X.shape[1]) == j, order[s], down))
        ww = np.concatenate([w[pos == s], w[pos == s + 1]])
        out.append(out[-1] + np.average(np.concatenate([d_up, d_down]), weights=ww))
    curve = np.array(out)
    return curve - np.average(curve[pos], weights=w)


def ref_ale_pair(f, X, j, l, e1, e2, w):
    """ALEPlot's second-order steps, centred by the weighted mean of the bilinear
    interpolation at the rows; also the weighted sd (the interaction strength)."""
    c1, t1 = ref_bins(X[:, j], e1)
    c2, t2 = ref_bins(X[:, l], e2)
    k1, k2 = len(e1) - 1, len(e2) - 1

    def at(a, b):
        Z = X.copy()
        Z[:, j], Z[:, l] = a, b
        return np.asarray(f(Z), np.float64)

    second = (at(e1[c1 + 1], e2[c2 + 1]) - at(e1[c1], e2[c2 + 1])
              - at(e1[c1 + 1], e2[c2]) + at(e1[c1], e2[c2]))
    delta, b = np.zeros((k1, k2)), np.zeros((k1, k2))
    for a in range(k1):
        for c in range(k2):
            cell = (c1 == a) & (c2 == c)
            b[a, c] = w[cell].sum()
            if cell.any():
                delta[a, c] = np.average(second[cell], weights=w[cell])
    assert (b > 0).all(), "the reference assumes no empty cell"
    F = np.zeros((k1 + 1, k2 + 1))
    F[1:, 1:] = delta.cumsum(0).cumsum(1)
    d = F[1:] - F[:-1]
    f1 = np.concatenate([[0], np.cumsum((b * (d[:, :-1] + d[:, 1:]) / 2).sum(1) / b.sum(1))])
    d = F[:, 1:] - F[:, :-1]
    f2 = np.concatenate([[0], np.cumsum((b * (d[:-1] + d[1:]) / 2).sum(0) / b.sum(0))])
    pure = F - f1[:, None] - f2[None, :]
    rows = ((1 - t1) * (1 - t2) * pure[c1, c2] + t1 * (1 - t2) * pure[c1 + 1, c2]
            + (1 - t1) * t2 * pure[c1, c2 + 1] + t1 * t2 * pure[c1 + 1, c2 + 1])
    mean = np.average(rows, weights=w)
    return pure - mean, np.sqrt(np.average((rows - mean) ** 2, weights=w))


def smooth(X):
    return np.sin(2 * X[:, 0]) * X[:, 1] + 0.5 * X[:, 2] ** 2 + X[:, 0] * X[:, 2]


def smooth_jax(X):
    return jnp.sin(2 * X[:, 0]) * X[:, 1] + 0.5 * X[:, 2] ** 2 + X[:, 0] * X[:, 2]


def linear_jax(X):
    return X @ jnp.array([1.5, -2.0, 0.0])


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(160, 3))
    X[:, 1] += 0.6 * X[:, 0]
    return X, rng.uniform(0.2, 2.0, size=160)


# ----------------------------------------------------------------------------- closed forms


def test_linear_model_is_coefficient_times_centred_feature(data):
    X, w = data
    result = ale(linear_jax, X, "x1", bins=7, sample_weight=w)
    edges = result.edges[0]
    np.testing.assert_allclose(result.centred[:, 0], -2.0 * (edges - np.average(X[:, 1],
                                                                                 weights=w)),
                               atol=2e-5)
    np.testing.assert_allclose(result.uncentred[:, 0], -2.0 * (edges - edges[0]), atol=2e-5)
    np.testing.assert_allclose(edges, ref_edges(X[:, 1], w, 7))
    unweighted = ale(linear_jax, X, "x1", bins=7).edges[0]  # order statistics, no sort
    np.testing.assert_allclose(unweighted, ref_edges(X[:, 1], np.ones(len(X)), 7))


def test_additive_model_recovers_components_up_to_a_constant(data):
    X, _ = data
    f = lambda X: jnp.sin(2 * X[:, 0]) + X[:, 1] ** 2 + jnp.exp(0.3 * X[:, 2])  # noqa: E731
    for j, g in [(0, lambda z: np.sin(2 * z)), (1, lambda z: z ** 2)]:
        result = ale(f, X, j, bins=12)
        offset = result.centred[:, 0] - g(result.edges[0])
        np.testing.assert_allclose(offset, offset[0], atol=2e-5)


def test_correlated_unused_feature_ale_flat_where_pd_extrapolates():
    rng = np.random.default_rng(0)
    x0 = rng.uniform(size=400)
    X = np.column_stack([x0, x0 + rng.normal(scale=0.01, size=400)])

    def f(X):  # x0 on the data; x1 matters only where |x0 - x1| > 0.1: off the data
        return X[:, 0] + 10 * jnp.maximum(jnp.abs(X[:, 0] - X[:, 1]) - 0.1, 0)

    flat = ale(f, X, "x1", bins=20)
    np.testing.assert_allclose(flat.centred, 0, atol=1e-6)
    used = ale(f, X, "x0", bins=20)
    assert np.ptp(used.centred) > 0.9
    pdp = partial_dependence(f, X, "x1", grid_resolution=10)
    assert np.ptp(pdp.average) > 1.0  # the PD moves x1 far from x0: extrapolation


# ----------------------------------------------------------------------------- reference


def test_numeric_equals_numpy_reference_weighted_multi_output(data):
    X, w = data
    f2 = lambda X: np.column_stack([smooth(X), np.tanh(X[:, 1] * X[:, 2])])  # noqa: E731
    fj = lambda X: jnp.stack([smooth_jax(X), jnp.tanh(X[:, 1] * X[:, 2])], axis=1)  # noqa
    for j in range(3):
        result = ale(fj, X, j, bins=6, sample_weight=w)
        edges = ref_edges(X[:, j], w, 6)
        uncentred, centred = ref_ale_numeric(f2, X, j, edges, w)
        np.testing.assert_allclose(result.edges[0], edges)
        np.testing.assert_allclose(result.uncentred, uncentred, atol=2e-5)
        np.testing.assert_allclose(result.centred, centred, atol=2e-5)
        codes, _ = ref_bins(X[:, j], edges)
        np.testing.assert_array_equal(result.counts, np.bincount(codes, minlength=len(edges) - 1))


def test_explicit_edges_and_host_model_equal_reference(data):
    from sklearn.linear_model import LinearRegression

    X, w = data
    y = smooth(X)
    model = LinearRegression().fit(X ** 2, y)

    class Squared:
        def predict(self, Z):
            return model.predict(np.asarray(Z) ** 2)

    edges = np.array([-4.0, -1.0, 0.0, 0.5, 4.0])
    result = ale(Squared(), X, "x2", bins=edges, sample_weight=w)
    _, centred = ref_ale_numeric(Squared().predict, X, 2, edges, w)
    np.testing.assert_allclose(result.centred, centred, atol=1e-9)


def test_categorical_equals_reference_and_level_order():
    rng = np.random.default_rng(1)
    n = 160
    level_of_mean = np.array([2, 0, 3, 1])  # code k has its x1 mean at position level_of_mean[k]
    codes = rng.integers(0, 4, n)
    x1 = level_of_mean[codes] + rng.normal(scale=0.8, size=n)
    x2 = level_of_mean[codes] + rng.normal(scale=0.8, size=n)
    X = np.column_stack([codes, x1, x2]).astype(float)
    w = rng.uniform(0.5, 1.5, n)
    result = ale(smooth_jax, X, "x0", categorical=["x0"], sample_weight=w)
    order = result.edges[0]
    # levels ordered by the similarity of x1's and x2's distributions: by their mean
    assert list(order) in ([1, 3, 0, 2], [2, 0, 3, 1])
    np.testing.assert_allclose(result.centred[:, 0],
                               ref_ale_categorical(smooth, X, 0, np.array(order, float), w),
                               atol=2e-5)
    frame = result.to_frame()
    assert list(frame["value"]) == list(order)


def test_level_order_compares_the_distributions_at_100_quantiles_as_iml():
    """iml's ``order_levels`` and ALEPlot compare each level's ECDF of a numeric feature at
    100 type-7 quantiles of it, not at every value: with 300 rows here that orders the
    levels c b a, where exact Kolmogorov-Smirnov distances order them a c b. Reference: iml
    0.11.4 and ALEPlot 1.1 (R 4.2.2) on these rows (written to CSV),
    ``FeatureEffect$new(Predictor$new(model = NULL, data = X, predict.function = f), "c",
    method = "ale")$results`` and ``ALEPlot(X, NULL, pf, J = 4)$f.values``, both c -1.2319435684,
    b 1.1504670075, a 0.0459671032, with ``f`` the model below."""
    rng = np.random.default_rng(4)
    n = 300
    c = rng.integers(0, 3, n)
    shift = np.array([0.0, 0.15, 0.3])[c]
    X = pd.DataFrame({"x1": rng.normal(size=n) + shift, "x2": rng.normal(size=n) - shift,
                      "x3": rng.normal(size=n) + 0.5 * shift,
                      "c": pd.Categorical(np.array(["a", "b", "c"])[c], categories=list("abc"))})
    effect = jnp.array([0.0, 1.0, -1.0])

    def f(A):
        return A[:, 0] + A[:, 1] * A[:, 2] + effect[A[:, 3].astype(jnp.int32)] * (1 + A[:, 0])

    result = ale(f, X, "c", centered="bins")
    assert tuple(result.edges[0]) in (("a", "b", "c"), ("c", "b", "a"))
    values = dict(zip(result.edges[0], result.centred[:, 0]))
    np.testing.assert_allclose([values["c"], values["b"], values["a"]],
                               [-1.2319435684, 1.1504670075, 0.0459671032], atol=2e-6)


# alibi 0.9.6 (numpy 1.26.4): ALE(f, feature_names=["x0", "x1", "x2"]).explain(X) on the
# data and model of the test below; data["feature_values"] and data["ale_values"][:, 0]
_ALIBI_EDGES = [
    [-2.52, -1.295, -0.94, -0.626, -0.454, -0.09, 0.06, 0.11299999999999998,
     0.5080000000000002, 0.862, 2.0],
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
    [0.005178865815432143, 0.11837737303141371, 0.2217730935797322, 0.34317501710222964,
     0.39849252412632696, 0.4384443147529674, 0.5193066531869246, 0.5763827785451633,
     0.697739389076725, 0.7721914519834004, 0.8765469833274393, 0.9346447813993775,
     0.9803947508805895],
]
_ALIBI_ALE = [
    [4.057657867496254, 0.17187271450317754, -0.4478956721195706, -0.7686528025891324,
     -0.8683141071903107, -0.8156898467110958, -0.7443099273067117, -0.7039602708341928,
     -0.2721572194651598, 0.3713170079270096, 4.116543976055203],
    [-0.17966043821046762, 0.6618105465974289, 0.7296369886152141, -0.03854043015060049,
     -0.9364629335183959, -1.1385847128736062],
    [0.09417011596920742, 0.12609209500411422, 0.06033241673538368, 0.01954137043182448,
     0.008035328970812258, 0.0010837174017768597, -0.004738370965467989,
     0.0037088955875513585, -0.01862072075025588, -0.024427981656976613,
     -0.05886530700050947, -0.10383300270818964, -0.11078699806933372],
]


def test_alibi_bins_and_bin_centring_give_alibis_edges_and_curves():
    """bins="alibi": the distinct values of a feature with at most 10 (x1), else the most
    linear percentiles that keep more than 4 rows in every bin (x0, x2)."""
    rng = np.random.default_rng(7)
    X = np.column_stack([rng.normal(size=60).round(2), rng.integers(0, 6, 60).astype(float),
                         rng.uniform(size=60)])

    def f(A):
        return A[:, 0] ** 2 + A[:, 0] * A[:, 2] + np.sin(A[:, 1])

    class Host:
        def predict(self, A):
            return f(np.asarray(A, np.float64))

    for j in range(3):
        result = ale(Host(), X, j, bins="alibi", centered="bins")
        np.testing.assert_allclose(result.edges[0], _ALIBI_EDGES[j], rtol=1e-15)
        np.testing.assert_allclose(result.centred[:, 0], _ALIBI_ALE[j], atol=1e-12)
    with pytest.raises(ValueError, match=r"bins must be an int >= 1, 'alibi' or a 1-D"):
        ale(Host(), X, 0, bins="quantile")
    # alibi 0.9.6: the same with ALE(...).explain(X, min_bin_points=10), features x0 and x2
    for j, edges, values in [
        (0, [-2.52, -0.94, -0.454, 0.06, 0.5080000000000002, 2.0],
         [3.7796724129357004, -0.7927653905965162, -1.2163011989357422, -1.1154585200066593,
          -0.6258106049573815, 3.770206565555098]),
        (2, [0.005178865815432143, 0.26741954517997985, 0.42928621569649034,
             0.5845081112275794, 0.8267668641089916, 0.9803947508805895],
         [0.08125858895772835, 0.05088237693133492, -0.0017242909865309713,
          0.012116328031657839, -0.04420883201327051, -0.11538975288411081])]:
        result = ale(Host(), X, j, bins="alibi", min_bin_points=10, centered="bins")
        np.testing.assert_allclose(result.edges[0], edges, rtol=1e-15)
        np.testing.assert_allclose(result.centred[:, 0], values, atol=1e-12)
    with pytest.raises(ValueError, match="min_bin_points applies to bins='alibi' only"):
        ale(Host(), X, 0, bins=10, min_bin_points=10)
    # a bin of every row holding no more than min_bin_points: refused by name (alibi fails)
    with pytest.raises(ValueError, match=rf"min_bin_points={len(X)} rows in every bin, but "
                                         rf"feature 'x0' has only {len(X)} rows"):
        ale(Host(), X, 0, bins="alibi", min_bin_points=len(X))
    assert ale(Host(), X, 0, bins="alibi", min_bin_points=len(X) - 1).edges[0].size == 2


def test_level_shares_of_a_categorical_other_count_its_missing_rows_as_iml():
    """iml's order_levels divides a level's counts of another categorical feature by all
    the level's rows, those where the other is missing included. Reference: iml 0.11.4,
    ``levels(X$c)[iml:::order_levels(data.table(X), "c")]`` on these rows (CSV): L1 L0 L2
    L4 L3; shares of the known rows alone order them L2 L1 L0 L3 L4."""
    rng = np.random.default_rng(2050)
    n, k = 50, int(rng.integers(3, 9))
    lev = rng.integers(0, k, n)
    mu = rng.normal(size=k)
    x1 = mu[lev] + rng.normal(size=n)
    x2 = rng.exponential(size=n) * (1 + 0.3 * lev)
    other = [f"o{v}" for v in (lev + rng.integers(0, 3, n)) % 4]
    other = [None if rng.random() < 0.15 else v for v in other]
    X = pd.DataFrame({"c": pd.Categorical([f"L{v}" for v in lev]), "x1": x1, "x2": x2,
                      "o": pd.Categorical(other)})

    class Zero:  # the order does not depend on the model
        def predict(self, A):
            return np.zeros(len(A))

    order = list(ale(Zero(), X, "c", categorical=["c", "o"]).edges[0])
    assert order in (["L1", "L0", "L2", "L4", "L3"], ["L3", "L4", "L2", "L0", "L1"])


def test_ordered_categories_keep_their_declared_order_as_iml():
    """An ordered factor's ALE runs over its declared levels, as iml's. Reference: iml 0.11.4,
    ``FeatureEffect$new(Predictor$new(model = NULL, data = X, predict.function = f), "c",
    method = "ale")$results`` with ``c`` an ordered factor lo < mid < hi on these rows (CSV):
    lo -1.87020028439, mid -0.81121635582, hi 2.17707888228."""
    rng = np.random.default_rng(11)
    n = 90
    c = rng.integers(0, 3, n)
    x1 = (np.array([0.0, 2.0, 1.0])[c] + 0.3 * rng.normal(size=n)).round(4)
    X = pd.DataFrame({"x1": x1, "c": pd.Categorical(np.array(["lo", "mid", "hi"])[c],
                                                      categories=["lo", "mid", "hi"],
                                                      ordered=True)})
    effect = jnp.array([0.0, 1.0, 3.0])

    def f(A):
        return A[:, 0] * 2 + effect[A[:, 1].astype(jnp.int32)] * A[:, 0]

    result = ale(f, X, "c", centered="bins")
    assert tuple(result.edges[0]) == ("lo", "mid", "hi")
    np.testing.assert_allclose(result.centred[:, 0],
                               [-1.87020028439, -0.81121635582, 2.17707888228], atol=2e-6)
    # bins="alibi" is accepted for a categorical feature (its levels are its bins)
    assert_same_program(ale(f, X, "c", bins="alibi").centred, ale(f, X, "c").centred)


def test_onehot_group_matches_integer_coding():
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 3, 160)
    other = rng.normal(size=160) + codes
    onehot = np.eye(3)[codes]
    Xo = pd.DataFrame({"a": onehot[:, 0], "b": onehot[:, 1], "c": onehot[:, 2], "z": other})
    Xi = np.column_stack([codes, other]).astype(float)
    beta = jnp.array([0.0, 2.0, -1.0])
    res_o = ale(lambda X: X[:, :3] @ beta + X[:, 3], Xo, "g", groups={"g": ["a", "b", "c"]})
    res_i = ale(lambda X: beta[X[:, 0].astype(int)] + X[:, 1], Xi, "x0", categorical=["x0"])
    assert [("a", "b", "c").index(v) for v in res_o.edges[0]] == list(res_i.edges[0])
    np.testing.assert_allclose(res_o.centred, res_i.centred, atol=1e-5)


def test_second_order_equals_reference_and_interaction(data):
    X, w = data
    result = ale(smooth_jax, X, ("x0", "x2"), bins=4, sample_weight=w)
    e1, e2 = ref_edges(X[:, 0], w, 4), ref_edges(X[:, 2], w, 4)
    surface, spread = ref_ale_pair(smooth, X, 0, 2, e1, e2, w)
    assert result.centred.shape == (len(e1), len(e2), 1)
    np.testing.assert_allclose(result.centred[..., 0], surface, atol=3e-5)
    inter = ale_interaction(smooth_jax, X, pairs=[("x0", "x2"), ("x1", "x2")], bins=4,
                            sample_weight=w)
    np.testing.assert_allclose(inter.values[0, 0], spread, rtol=1e-4)
    assert inter.values[1, 0] < 1e-5  # x1 and x2 enter additively
    assert result.to_frame().shape == (len(e1) * len(e2), 5)


def test_bootstrap_replicates_reweight_the_same_bins(data):
    X, w = data
    result = ale(smooth_jax, X, "x0", bins=4, sample_weight=w, n_bootstrap=3, random_state=7)
    weights, _ = replicate_weights(w, 3, as_key(7))
    for j in range(3):
        _, centred = ref_ale_numeric(smooth, X, 0, result.edges[0], weights[j + 1])
        np.testing.assert_allclose(result.replicates[..., j], centred, atol=3e-5)
    assert result.replicates.shape == (*result.centred.shape, 3)  # replicates last
    low, high = result.intervals()
    assert np.all(low <= high)
    np.testing.assert_allclose(result.intervals(0.9),
                               np.quantile(result.replicates, [0.05, 0.95], axis=-1))
    frame = result.to_frame()
    np.testing.assert_allclose(frame["q025"], low[:, 0])
    np.testing.assert_allclose(frame["q975"], high[:, 0])


def test_importance_closed_form_and_bootstrap(data):
    X, w = data
    imp = ale_importance(linear_jax, X, bins=8,
                         sample_weight=w, n_bootstrap=3)
    sd = np.sqrt(np.average((X - np.average(X, axis=0, weights=w)) ** 2, axis=0, weights=w))
    np.testing.assert_allclose(imp.importances_mean[:, 0], [1.5 * sd[0], 2 * sd[1], 0],
                               rtol=1e-5, atol=1e-6)
    assert imp.importances.shape == (3, 1, 3) and imp.top(1) == ["x1"]


def test_derivative_equals_finite_differences_on_smooth_model(mlp3):
    X = np.random.default_rng(4).uniform(-1.5, 1.5, size=(160, 3))
    f_jax, _, _ = mlp3
    fd = ale_importance(f_jax, X, bins=30)
    grad = ale_importance(f_jax, X, bins=30, derivative=True)
    np.testing.assert_allclose(grad.importances_mean, fd.importances_mean, rtol=0.02)
    for name in ("x0", "x1", "x2"):
        a, b = fd.info["ale"][name], grad.info["ale"][name]
        scale = np.ptp(a.centred)
        np.testing.assert_allclose(b.centred, a.centred, atol=0.02 * scale)
    # forward mode (one feature, one output) agrees with reverse mode (three features)
    one = ale(f_jax, X, "x1", bins=30, derivative=True)
    np.testing.assert_allclose(one.centred, grad.info["ale"]["x1"].centred, atol=1e-5)


def test_small_memory_budget_chunks_rows_and_gradients(mlp3):
    """A budget that forces many row blocks and chunks gives the reference curves, for
    differences (the float64 twin of the model) and for gradients (per-bin means of
    ``jax.grad`` at the rows, times the widths, accumulated and centred in float64)."""
    import jax

    f_jax, f_np, _ = mlp3
    X = np.random.default_rng(5).normal(size=(2000, 3))
    ones = np.ones(len(X))
    small = ale_importance(f_jax, X, bins=6, memory_budget=1 << 16)
    grads = np.asarray(jax.grad(lambda Z: f_jax(Z).sum())(jnp.asarray(X, jnp.float32)))
    small_d = ale_importance(f_jax, X, bins=6, derivative=True, memory_budget=1 << 16)
    for j, name in enumerate(("x0", "x1", "x2")):
        edges = small.info["ale"][name].edges[0]
        _, centred = ref_ale_numeric(f_np, X, j, edges, ones)
        np.testing.assert_allclose(small.info["ale"][name].centred, centred, atol=2e-5)
        codes, t = ref_bins(X[:, j], edges)
        steps = np.bincount(codes, grads[:, j]) / np.bincount(codes) * np.diff(edges)
        curve = np.concatenate([[0], np.cumsum(steps)])
        curve -= np.mean(curve[codes] * (1 - t) + curve[codes + 1] * t)
        np.testing.assert_allclose(small_d.info["ale"][name].centred[:, 0], curve, atol=2e-5)


def test_alibi_agrees_on_uncentred_curve(data):
    """alibi picks its own (linearly interpolated, adaptive) quantiles; given those edges the
    bin assignment and steps agree. alibi centres by the bin-weighted mean of each bin's end
    values, so the uncentred curves (its ``ale + ale0``) are compared."""
    alibi_ale = pytest.importorskip("alibi.explainers.ale")
    X, _ = data
    q, values, offset = alibi_ale.ale_num(smooth, X, 0, min_bin_points=4)
    result = ale(smooth_jax, X, "x0", bins=np.asarray(q))
    assert result.uncentred.shape[0] == len(q)
    np.testing.assert_allclose(result.uncentred, values + offset, atol=1e-4)


def test_bins_centring_equals_alibi():
    """centered="bins" is ALEPlot's, iml's and alibi's convention. Reference: alibi 0.9.6,
    ``alibi.explainers.ale.ale_num(f, X, 0, min_bin_points=5)`` on this X and f (float64 NumPy
    model); its edges ``q`` are passed as jaximp's bins."""
    i = np.arange(40.0)
    X = np.column_stack([np.sin(i), np.cos(2 * i), i / 40])
    q = np.array([-0.9999902065507035, -0.8015114497415493, -0.42818266949615097,
                  0.0705600040299336, 0.529082686120024, 0.8753842058167896,
                  0.9999118601072672])
    alibi_values = np.array([-1.3264902457341166, -1.0024667614112261, -0.48696935616192194,
                             0.03380386761049148, 0.5313566147087969, 1.0369558353945132,
                             1.2604365542459346])

    def f(Z):
        return Z[:, 0] ** 3 + Z[:, 0] * Z[:, 1] + jnp.exp(Z[:, 2])

    by_bins = ale(f, X, "x0", bins=q, centered="bins")
    assert by_bins.info["centered"] == "bins"
    np.testing.assert_allclose(by_bins.centred[:, 0], alibi_values, atol=2e-6)
    by_rows = ale(f, X, "x0", bins=q)
    np.testing.assert_allclose(by_bins.uncentred, by_rows.uncentred)
    shift = by_rows.centred - by_bins.centred  # the conventions differ by a constant
    # two programs: on a GPU equal to float32 rounding of the curves
    atol = 1e-12 if ON_CPU else 1e-6 * np.abs(by_rows.centred).max()
    np.testing.assert_allclose(shift, shift[:1].repeat(len(q), axis=0), atol=atol)
    assert abs(shift[0, 0]) > 1e-3


def test_bins_centring_of_pairs_bootstrap_and_categorical(data):
    """Pairs: minus the cell-weighted mean of each cell's four corners (ALEPlot's second-order
    centring), replicates alike; categorical curves are centred the same both ways; the spread
    behind the importances does not change."""
    X, _ = data
    f = lambda Z: Z[:, 0] * Z[:, 1] + jnp.sin(Z[:, 2])  # noqa: E731
    rows = ale(f, X, ("x0", "x1"), bins=4, n_bootstrap=3)
    bins = ale(f, X, ("x0", "x1"), bins=4, n_bootstrap=3, centered="bins")
    u = rows.uncentred
    assert_same_program(bins.uncentred, u, cpu_rtol=1e-7)  # ALE's scatter-adds, on a GPU
    counts = bins.bin_weights.astype(np.float64)  # (k1, k2), the full data's cells
    corners = (u[:-1, :-1] + u[:-1, 1:] + u[1:, :-1] + u[1:, 1:]) / 4
    mean = np.einsum("ab,abo->o", counts, corners) / counts.sum()
    atol = 1e-12 if ON_CPU else 1e-6 * np.abs(u).max()  # two programs, as above
    np.testing.assert_allclose(bins.centred, rows.uncentred - mean, atol=atol)
    assert_same_program(bins.info["spread"], rows.info["spread"], cpu_rtol=1e-7)
    np.testing.assert_allclose(bins.replicates - bins.replicates[:1, :1],
                               rows.replicates - rows.replicates[:1, :1], atol=atol)
    Xc = np.column_stack([np.arange(len(X)) % 3, X[:, :2]])
    g = lambda Z: Z[:, 0] ** 2 + Z[:, 1]  # noqa: E731
    levels = [ale(g, Xc, "x0", categorical=["x0"], centered=c).centred for c in ("rows", "bins")]
    assert_same_program(levels[0], levels[1], cpu_rtol=1e-7)


def test_old_centring_keyword_still_works_and_warns(data):
    """centring= is the deprecated spelling of centered=: same values, same result, a
    DeprecationWarning naming the new keyword; both at once or a bad value are refused."""
    X, _ = data
    def f(Z):
        return Z[:, 0] ** 3 + Z[:, 1]

    with pytest.warns(DeprecationWarning, match=r"ale\(centring=\.\.\.\) is deprecated; use "
                                                r"centered=\.\.\."):
        old = ale(f, X, "x0", bins=5, centring="bins")
    new = ale(f, X, "x0", bins=5, centered="bins")
    assert_same_program(old.centred, new.centred)  # a GPU's scatter-adds vary in order
    assert not np.allclose(new.centred, ale(f, X, "x0", bins=5).centred)  # "bins" took effect
    with pytest.raises(TypeError, match="got both centring= and centered="):
        ale(f, X, "x0", centring="bins", centered="rows")
    with pytest.raises(ValueError, match=r"centered must be one of \('rows', 'bins'\); got "
                                         r"True\. ALE curves are always centred"):
        ale(f, X, "x0", centered=True)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="centered must be"):
        ale(f, X, "x0", centring="mean")


# ----------------------------------------------------------------------------- edge


def test_errors_name_the_parameter(data):
    X, _ = data
    f = lambda X: X[:, 0]  # noqa: E731
    with pytest.raises(ValueError, match=r"bins must be an int >= 1; got 0\."):
        ale(f, X, "x0", bins=0)
    with pytest.raises(ValueError, match="must cover the data"):
        ale(f, X, "x0", bins=[0.0, 1.0])
    with pytest.raises(ValueError, match="one feature or a pair of features; got 3"):
        ale(f, X, ["x0", "x1", "x2"])
    with pytest.raises(ValueError, match="derivative=True computes first-order ALE of numeric"):
        ale(f, X, ("x0", "x1"), derivative=True)
    with pytest.raises(TypeError, match="derivative must be True or False"):
        ale(f, X, "x0", derivative="yes")
    from sklearn.linear_model import LinearRegression

    host = LinearRegression().fit(X, X[:, 0])
    with pytest.raises(ValueError, match="derivative=True differentiates the model"):
        ale(host, X, "x0", derivative=True)
    Xc = np.column_stack([np.arange(len(X)) % 3, X[:, 0]])
    with pytest.raises(ValueError, match="is categorical: its bins are its levels"):
        ale(f, Xc, "x0", categorical=["x0"], bins=[0.0, 1.0, 2.0])


def test_repr_frame_and_plots(data):
    X, _ = data
    one = ale(smooth_jax, X, "x0", bins=5, n_bootstrap=3)
    assert repr(one).startswith("AccumulatedLocalEffects(x0: first-order, 5 bins")
    assert list(one.to_frame().columns) == ["value", "count", "output", "ale", "ale_uncentred",
                                            "q025", "q975"]
    ax = one.plot()
    curve = [line for line in ax.get_lines() if len(line.get_xdata()) == len(one.edges[0])]
    np.testing.assert_allclose(curve[0].get_ydata(), one.centred[:, 0])
    assert ax.get_xlabel() == "x0" and ax.get_ylabel() == f"ALE ({one.output_names[0]})"
    assert len(ax.collections) >= 2  # the bootstrap band and the rug
    ax2 = ale(smooth_jax, X, ("x0", "x1"), bins=3).plot()
    assert (ax2.get_xlabel(), ax2.get_ylabel()) == ("x1", "x0")
    Xc = np.column_stack([np.arange(len(X)) % 3, X[:, 1:]])
    ale(smooth_jax, Xc, "x0", categorical=["x0"], n_bootstrap=3).plot()
    import matplotlib.pyplot as plt

    plt.close("all")


def test_quantile_edges_follow_aleplots_r_arithmetic():
    """ALEPlot's edges, quantile(x, seq(1/K, 1, length.out = K), type = 1): R's seq puts
    1/14 + 8 * (13/14) / 13 a hair below 9/14, so x = 0..41 with K = 14 has an edge at 26
    (an arange(1, K + 1) / K product, a hair above 27, took 27); the weighted path agrees."""
    from jaximp.methods._ale_plan import _numeric_edges

    x = np.arange(42.0)
    expected = np.r_[0.0, [x[int(np.ceil(42 * p)) - 1] for p in
                           np.r_[1 / 14 + np.arange(13) * ((1 - 1 / 14) / 13), 1.0]]]
    assert 26.0 in expected and 27.0 not in expected
    np.testing.assert_array_equal(_numeric_edges(x, np.ones(42), 14, "x"), np.unique(expected))
    nearly = np.ones(42)
    nearly[0] += 1e-9
    np.testing.assert_array_equal(_numeric_edges(x, nearly, 14, "x"), np.unique(expected))
