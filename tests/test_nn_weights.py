"""Garson, Olden and Gedeon: kernels (jaximp.kernels._weights) and the user-facing functions."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaximp
from jaximp.kernels import _weights as kernels

from jaximp.methods._nn_weights import (
    NeuralNetToolsWeights,
    extract_weights,
    from_neuralnettools,
    garson_importance,
    gedeon_importance,
    olden_importance,
)

# float32 kernels against float64 references
RTOL, ATOL = 2e-5, 1e-6

# The example of R NeuralNetTools 1.5.3 (?garson, ?olden): with
#   wts_in <- c(13.12, 1.49, 0.16, -0.11, -0.19, -0.16, 0.56, -0.52, 0.81); struct <- c(2, 2, 1)
#   garson(wts_in, struct, bar_plot = FALSE)  # rel_imp X1 0.7229437, X2 0.2770563
#   olden(wts_in, struct, bar_plot = FALSE)   # importance X1 -0.9287, X2 -0.2128
NNT_WEIGHTS = [13.12, 1.49, 0.16, -0.11, -0.19, -0.16, 0.56, -0.52, 0.81]
NNT_STRUCT = (2, 2, 1)


def random_net(sizes, seed=0, zero_bias=False):
    rng = np.random.default_rng(seed)
    return [
        (rng.normal(size=(a, b)), np.zeros(b) if zero_bias else rng.normal(size=b))
        for a, b in zip(sizes[:-1], sizes[1:])
    ]


def matrices(layers):
    return [np.asarray(w, dtype=np.float64) for w, _ in layers]


# ---------------------------------------------------------------- float64 NumPy references
# Written from the published definitions with explicit loops, independently of the kernels.


def ref_garson_one_hidden(w, v):
    """NeuralNetTools::garson for one hidden layer and output column v: |w_ih v_h| shares."""
    p, h = w.shape
    s = np.zeros(p)
    for j in range(h):
        products = np.abs(w[:, j] * v[j])
        s += products / products.sum()
    return s / s.sum()


def ref_garson(ws):
    """Documented generalization: |weight| products summed over every path from input i to
    last-hidden unit k, normalized per k (Goh), then summed over the units that feed output o."""
    p, o = ws[0].shape[0], ws[-1].shape[1]
    widths = [w.shape[1] for w in ws[:-1]]
    t = np.zeros((p, widths[-1]))
    for i in range(p):
        for path in itertools.product(*(range(h) for h in widths)):
            product = abs(ws[0][i, path[0]])
            for layer in range(1, len(widths)):
                product *= abs(ws[layer][path[layer - 1], path[layer]])
            t[i, path[-1]] += product
    s = np.zeros((p, o))
    for k in range(widths[-1]):
        for out in range(o):
            if ws[-1][k, out] != 0 and t[:, k].sum() > 0:
                s[:, out] += t[:, k] / t[:, k].sum()
    return s / s.sum(axis=0, keepdims=True)


def ref_olden(ws):
    p, o = ws[0].shape[0], ws[-1].shape[1]
    out = np.zeros((p, o))
    if len(ws) == 2:  # explicit sum over paths for one hidden layer
        w, v = ws
        for i in range(p):
            for k in range(o):
                out[i, k] = sum(w[i, j] * v[j, k] for j in range(w.shape[1]))
        return out
    product = ws[0]
    for w in ws[1:]:
        product = product @ w
    return product


def ref_gedeon_shares(w1, w2):
    p, h1 = w1.shape
    h2 = w2.shape[1]
    q = np.zeros((p, h2))
    for i in range(p):
        for k in range(h2):
            for j in range(h1):
                pij = abs(w1[i, j]) / np.abs(w1[:, j]).sum()
                pjk = abs(w2[j, k]) / np.abs(w2[:, k]).sum()
                q[i, k] += pij * pjk
    return q


# ---------------------------------------------------------------- NeuralNetTools example


def test_neuralnettools_example_garson():
    result = garson_importance(
        NeuralNetToolsWeights(NNT_WEIGHTS, NNT_STRUCT), feature_names=["X1", "X2"]
    )
    assert result.method == "garson"
    assert result.feature_names == ("X1", "X2")
    np.testing.assert_allclose(
        result.importances_mean[:, 0], [0.7229437, 0.2770563], rtol=0, atol=2e-7
    )
    frame = result.to_frame()
    assert list(frame["feature"]) == ["X1", "X2"]
    assert result.info["layer_sizes"] == (2, 2, 1)


def test_neuralnettools_example_olden():
    layers = from_neuralnettools(NNT_WEIGHTS, NNT_STRUCT)
    result = olden_importance(layers, feature_names=["X1", "X2"])
    np.testing.assert_allclose(result.importances_mean[:, 0], [-0.9287, -0.2128], atol=1e-6)
    frame = result.to_frame()  # sorted by decreasing importance
    assert list(frame["feature"]) == ["X2", "X1"]
    assert list(frame.columns) == ["feature", "output", "importance"]


def test_weights_given_in_float64_are_scored_in_float64():
    """R's NeuralNetTools computes in double precision: a float64 weight vector (or float64
    matrices) is scored in float64, whatever the process's float mode (float32 rounding put
    Olden's values 7e-6 off, relatively)."""
    rng = np.random.default_rng(11)
    struct = (5, 7, 6, 3)
    sizes = [(a + 1) * b for a, b in zip(struct[:-1], struct[1:])]
    vector = rng.normal(scale=3.0, size=sum(sizes))
    layers = from_neuralnettools(vector, struct)
    ws = [w for w, _ in layers]
    net = NeuralNetToolsWeights(vector, struct)
    np.testing.assert_allclose(olden_importance(net).importances_mean, ws[0] @ ws[1] @ ws[2],
                               rtol=1e-12, atol=1e-12)
    one_hidden = [ws[0], rng.normal(size=(7, 2))]
    garson = garson_importance(one_hidden).importances_mean
    for k in range(2):
        np.testing.assert_allclose(garson[:, k], ref_garson_one_hidden(*one_hidden[:1],
                                                                       one_hidden[1][:, k]),
                                   rtol=1e-12)
    np.testing.assert_allclose(gedeon_importance(one_hidden).importances_mean,
                               ref_gedeon_shares(*one_hidden), rtol=1e-12)


def test_from_neuralnettools_layout_node_by_node():
    # struct 3-2-2: hidden 1: b, x1, x2, x3; hidden 2: ...; out 1: b, h1, h2; out 2: ...
    struct = (3, 2, 2)
    flat = np.arange(1.0, 15.0)  # (3+1)*2 + (2+1)*2 = 14
    (w1, b1), (w2, b2) = from_neuralnettools(flat, struct)
    np.testing.assert_array_equal(b1, [1.0, 5.0])
    np.testing.assert_array_equal(w1, [[2.0, 6.0], [3.0, 7.0], [4.0, 8.0]])
    np.testing.assert_array_equal(b2, [9.0, 12.0])
    np.testing.assert_array_equal(w2, [[10.0, 13.0], [11.0, 14.0]])
    # the parsed network equals the NeuralNetToolsWeights model
    a = olden_importance(NeuralNetToolsWeights(flat, struct)).importances_mean
    np.testing.assert_allclose(a, w1 @ w2, rtol=RTOL)


# ---------------------------------------------------------------- references and closed forms


@pytest.mark.parametrize("sizes", [(5, 7, 3), (6, 5, 4, 2), (3, 4, 4, 4, 2)])
def test_kernels_match_float64_reference(sizes):
    ws = matrices(random_net(sizes, seed=len(sizes)))
    w32 = tuple(jnp.asarray(w, jnp.float32) for w in ws)
    olden, garson, gedeon_shares = (
        jax.jit(kernels.olden), jax.jit(kernels.garson), jax.jit(kernels.gedeon_shares)
    )
    gedeon = jax.jit(kernels.gedeon, static_argnames="reduce")
    np.testing.assert_allclose(olden(w32), ref_olden(ws), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(garson(w32), ref_garson(ws), rtol=RTOL, atol=ATOL)
    q = ref_gedeon_shares(ws[0], ws[1])
    np.testing.assert_allclose(gedeon_shares(w32), q, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(gedeon(w32), q.mean(axis=1), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(gedeon(w32, reduce="sum"), q.sum(axis=1), rtol=RTOL, atol=ATOL)


def test_garson_one_hidden_layer_is_neuralnettools_formula_for_every_output():
    w, v = matrices(random_net((5, 6, 3), seed=3))
    result = garson_importance([w, v]).importances_mean
    for k in range(3):
        np.testing.assert_allclose(result[:, k], ref_garson_one_hidden(w, v[:, k]), rtol=RTOL)
    # the output weights cancel: every output gets the same importances
    np.testing.assert_allclose(result, result[:, :1].repeat(3, axis=1), rtol=RTOL)


def test_olden_is_the_matrix_product():
    ws = matrices(random_net((6, 8, 5, 3), seed=4))
    result = olden_importance([(w, None) for w in ws]).importances_mean
    np.testing.assert_allclose(result, ws[0] @ ws[1] @ ws[2], rtol=RTOL, atol=ATOL)
    single = olden_importance([ws[0]]).importances_mean  # no hidden layer: W itself
    np.testing.assert_allclose(single, ws[0], rtol=RTOL)


@pytest.mark.parametrize("sizes", [(5, 6, 2), (4, 6, 5, 3)])
def test_garson_shares_are_nonnegative_and_sum_to_one(sizes):
    result = garson_importance(random_net(sizes, seed=5)).importances_mean
    assert (result >= 0).all()
    np.testing.assert_allclose(result.sum(axis=0), 1.0, rtol=1e-6)


@pytest.mark.parametrize("sizes", [(5, 6, 2), (4, 6, 5, 3)])
def test_garson_unchanged_by_rescaling_outgoing_weights(sizes):
    # a unit of the last hidden layer: its outgoing (output) weights times any nonzero factor
    ws = matrices(random_net(sizes, seed=6))
    base = garson_importance(ws).importances_mean
    scaled = [w.copy() for w in ws]
    scaled[-1][0] *= 7.5
    scaled[-1][-1] *= -0.01
    np.testing.assert_allclose(
        garson_importance(scaled).importances_mean, base, rtol=RTOL, atol=ATOL
    )


@pytest.mark.parametrize("sizes", [(5, 6, 2), (4, 6, 5, 3), (3, 4, 5, 4, 2)])
def test_garson_and_olden_unchanged_by_relu_rescaling(sizes):
    # any hidden unit: incoming weights times c > 0, outgoing weights divided by c
    ws = matrices(random_net(sizes, seed=16))
    for layer in range(len(ws) - 1):
        scaled = [w.copy() for w in ws]
        scaled[layer][:, 1] *= 40.0
        scaled[layer + 1][1] /= 40.0
        for method in (garson_importance, olden_importance):
            np.testing.assert_allclose(
                method(scaled).importances_mean, method(ws).importances_mean, rtol=1e-4,
                atol=ATOL,
            )


@pytest.mark.parametrize("sizes", [(5, 6, 2), (4, 6, 5, 3)])
def test_permuting_hidden_units_changes_nothing(sizes):
    ws = matrices(random_net(sizes, seed=7))
    rng = np.random.default_rng(0)
    permuted = [w.copy() for w in ws]
    for layer in range(len(ws) - 1):  # permute the units between W_layer and W_layer+1
        order = rng.permutation(permuted[layer].shape[1])
        permuted[layer] = permuted[layer][:, order]
        permuted[layer + 1] = permuted[layer + 1][order, :]
    for method in (garson_importance, olden_importance, gedeon_importance):
        np.testing.assert_allclose(
            method(permuted).importances_mean, method(ws).importances_mean, rtol=RTOL, atol=ATOL
        )


def test_garson_zero_output_weights_and_dead_units():
    w = np.array([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 5.0], [4.0, 0.0]])  # unit 2 has no incoming weights
    result = garson_importance([w, v]).importances_mean
    assert np.isfinite(result).all()
    np.testing.assert_allclose(result[:, 0], [0.25, 0.75])  # only unit 0 feeds output 0
    np.testing.assert_allclose(result[:, 1], [1.0, 0.0])  # only unit 1 feeds output 1
    disconnected = garson_importance([w, np.zeros((3, 1))]).importances_mean
    np.testing.assert_array_equal(disconnected, [[0.0], [0.0]])


def test_gedeon_shapes_and_reduce():
    one = gedeon_importance(random_net((4, 5, 3), seed=8), output_names=["a", "b", "c"])
    assert one.importances_mean.shape == (4, 3)
    assert one.output_names == ("a", "b", "c")
    assert one.info["units"] == "outputs"
    np.testing.assert_allclose(one.importances_mean.sum(axis=0), 1.0, rtol=1e-6)
    layers = random_net((4, 5, 6, 3), seed=9)
    ws = matrices(layers)
    q = ref_gedeon_shares(ws[0], ws[1])
    deep = gedeon_importance(layers)
    assert deep.output_names == ("all",)
    assert deep.info["units"] == "second hidden layer"
    np.testing.assert_allclose(deep.importances_mean[:, 0], q.mean(axis=1), rtol=RTOL)
    total = gedeon_importance(layers, reduce="sum").importances_mean[:, 0]
    np.testing.assert_allclose(total, q.sum(axis=1), rtol=RTOL)
    np.testing.assert_allclose(total.sum(), 6.0, rtol=1e-6)


# ---------------------------------------------------------------- eager == jit == vmap


@pytest.mark.parametrize("name", ["garson", "olden", "gedeon", "gedeon_shares"])
def test_kernels_eager_jit_vmap_agree(name):
    kernel = getattr(kernels, name)
    nets = [tuple(jnp.asarray(w, jnp.float32) for w in matrices(random_net((5, 4, 3, 2), s)))
            for s in range(2)]
    eager = [np.asarray(kernel(net)) for net in nets]
    jitted = [np.asarray(jax.jit(kernel)(net)) for net in nets]
    stacked = tuple(jnp.stack(ws) for ws in zip(*nets))
    batched = np.asarray(jax.vmap(kernel)(stacked))
    for k in range(2):
        np.testing.assert_allclose(jitted[k], eager[k], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(batched[k], eager[k], rtol=1e-6, atol=1e-7)


def test_kernels_module_imports_no_pandas_or_matplotlib():
    code = (
        "import sys, kernels._weights; "
        "bad = [m for m in ('pandas', 'matplotlib', 'jaximp') if m in sys.modules]; "
        "assert not bad, bad"
    )
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)


# ---------------------------------------------------------------- extraction


def _same_layers(model, layers):
    got = extract_weights(model)
    assert len(got) == len(layers)
    for (w, b), (w0, b0) in zip(got, layers):
        np.testing.assert_array_equal(w, w0)
        if b0 is None:
            assert b is None
        else:
            np.testing.assert_array_equal(b, b0)


def test_extract_from_lists():
    layers = random_net((3, 4, 2), seed=10)
    pairs = extract_weights(layers)
    plain = extract_weights([w for w, _ in layers])
    for (w, b), (w2, b2), (w0, b0) in zip(pairs, plain, layers):
        np.testing.assert_allclose(w, w0, rtol=1e-6)
        np.testing.assert_allclose(w2, w0, rtol=1e-6)
        np.testing.assert_allclose(b, b0, rtol=1e-6)
        assert b2 is None
    np.testing.assert_allclose(
        olden_importance(plain).importances_mean, olden_importance(layers).importances_mean,
        rtol=1e-6,
    )


def test_extract_from_nnx_with_list_attribute():
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.hidden = nnx.List([nnx.Linear(3, 5, rngs=rngs), nnx.Linear(5, 4, rngs=rngs)])
            self.norm = nnx.LayerNorm(4, rngs=rngs)
            self.out = nnx.Linear(4, 2, use_bias=False, rngs=rngs)

        def __call__(self, x):
            for layer in self.hidden:
                x = nnx.relu(layer(x))
            return self.out(self.norm(x))

    model = MLP(nnx.Rngs(0))
    layers = extract_weights(model)
    assert [w.shape for w, _ in layers] == [(3, 5), (5, 4), (4, 2)]
    assert layers[2][1] is None
    np.testing.assert_array_equal(layers[0][0], model.hidden[0].kernel[...])
    np.testing.assert_array_equal(layers[1][1], model.hidden[1].bias[...])
    # nnx.Sequential with activations in between
    seq = nnx.Sequential(model.hidden[0], nnx.relu, model.hidden[1], nnx.relu, model.out)
    _same_layers(seq, layers)


def test_extract_from_linen_tuple_and_params():
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for width in (4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4):  # Dense_0 ... Dense_10
                x = nn.relu(nn.Dense(width)(x))
            return nn.Dense(2)(x)

    module = MLP()
    variables = module.init(jax.random.PRNGKey(0), jnp.ones((1, 3)))
    dense = variables["params"]
    expected = [(dense[f"Dense_{k}"]["kernel"], dense[f"Dense_{k}"]["bias"]) for k in range(12)]
    for model in ((module, variables), variables, dense):
        layers = extract_weights(model)
        assert len(layers) == 12
        for (w, b), (w0, b0) in zip(layers, expected):
            np.testing.assert_array_equal(w, w0)
            np.testing.assert_array_equal(b, b0)
    # alphabetically sorted keys (Dense_10 before Dense_2) are put back in numeric order
    shuffled = {key: dense[key] for key in sorted(dense)}
    assert list(shuffled)[2] == "Dense_10"
    for (w, _), (w0, _) in zip(extract_weights(shuffled), expected):
        np.testing.assert_array_equal(w, w0)


@pytest.mark.parametrize("scan", [False, True])
def test_extract_from_equinox_mlp(scan):
    eqx = pytest.importorskip("equinox")
    try:
        model = eqx.nn.MLP(3, 2, 5, 3, key=jax.random.PRNGKey(1), scan=scan)
    except TypeError:  # older Equinox without scan
        if scan:
            pytest.skip("this Equinox has no MLP(scan=...)")
        model = eqx.nn.MLP(3, 2, 5, 3, key=jax.random.PRNGKey(1))
    layers = extract_weights(model)
    assert [w.shape for w, _ in layers] == [(3, 5), (5, 5), (5, 5), (5, 2)]
    first = model.layers[0]
    np.testing.assert_array_equal(layers[0][0], first.weight.T)
    np.testing.assert_array_equal(layers[0][1], first.bias)
    last = model.layers[-1]
    np.testing.assert_array_equal(layers[-1][0], last.weight.T)


def test_same_weights_through_every_adapter_give_identical_results():
    import equinox as eqx
    import flax.linen as nn
    from flax import nnx

    layers = random_net((3, 5, 2), seed=11)
    (w1, b1), (w2, b2) = [(np.float32(w), np.float32(b)) for w, b in layers]

    class Net(nnx.Module):
        def __init__(self):
            rngs = nnx.Rngs(0)
            self.layers = nnx.List([nnx.Linear(3, 5, rngs=rngs), nnx.Linear(5, 2, rngs=rngs)])

    net = Net()
    for layer, (w, b) in zip(net.layers, ((w1, b1), (w2, b2))):
        layer.kernel[...] = jnp.asarray(w)
        layer.bias[...] = jnp.asarray(b)
    linen = {"params": {"Dense_0": {"kernel": w1, "bias": b1},
                        "Dense_1": {"kernel": w2, "bias": b2}}}
    mlp = eqx.nn.MLP(3, 2, 5, 1, key=jax.random.PRNGKey(0))
    mlp = eqx.tree_at(
        lambda m: (m.layers[0].weight, m.layers[0].bias, m.layers[1].weight, m.layers[1].bias),
        mlp,
        (jnp.asarray(w1.T), jnp.asarray(b1), jnp.asarray(w2.T), jnp.asarray(b2)),
    )
    flat = np.concatenate(
        [np.column_stack([b1, w1.T]).ravel(), np.column_stack([b2, w2.T]).ravel()]
    )
    models = [
        [(w1, b1), (w2, b2)],
        [w1, w2],
        net,
        (nn.Dense(2), linen),
        linen,
        mlp,
        NeuralNetToolsWeights(flat, (3, 5, 2)),
    ]
    for method in (garson_importance, olden_importance, gedeon_importance):
        reference = method(models[0]).importances_mean
        for model in models[1:]:
            np.testing.assert_allclose(method(model).importances_mean, reference, rtol=1e-6)


def test_extract_from_jaximp_mlp_and_param_dicts():
    from jaximp.models._mlp import MLP, init_mlp_params

    params = init_mlp_params(jax.random.PRNGKey(0), [3, 5, 2])
    mask = jnp.array([1.0, 0.0, 1.0])
    model = MLP(params, jnp.zeros(3), jnp.ones(3), jnp.zeros(2), jnp.ones(2), mask, jnp.zeros(1))
    layers = extract_weights(model)
    np.testing.assert_array_equal(layers[0][0][1], 0.0)  # the dropped input has no weights
    kernel = np.asarray(params[0]["kernel"])
    np.testing.assert_array_equal(np.asarray(layers[0][0])[[0, 2]], kernel[[0, 2]])
    np.testing.assert_array_equal(layers[1][0], params[1]["kernel"])
    assert garson_importance(model).importances_mean[1, 0] == 0.0
    _same_layers(params, [(p["kernel"], p["bias"]) for p in params])


# ---------------------------------------------------------------- groups


def test_groups_sum_members_by_name_and_index():
    layers = random_net((5, 6, 2), seed=12)
    names = ["age", "c_red", "c_blue", "income", "c_green"]
    base = garson_importance(layers, feature_names=names)
    grouped = garson_importance(
        layers, feature_names=names, groups={"color": ["c_red", "c_blue", 4]}
    )
    assert grouped.feature_names == ("age", "color", "income")
    m = base.importances_mean
    np.testing.assert_allclose(grouped.importances_mean[0], m[0])
    np.testing.assert_allclose(grouped.importances_mean[1], m[1] + m[2] + m[4])
    np.testing.assert_allclose(grouped.importances_mean[2], m[3])
    np.testing.assert_allclose(grouped.importances_mean.sum(axis=0), 1.0, rtol=1e-6)
    assert grouped.info["groups"] == {"color": ("c_red", "c_blue", "c_green")}
    olden = olden_importance(layers, groups={"pair": [3, 0]})
    assert olden.feature_names == ("pair", "x1", "x2", "x4")
    o = olden_importance(layers).importances_mean
    np.testing.assert_allclose(olden.importances_mean[0], o[0] + o[3], rtol=1e-6)
    assert set(grouped.to_frame()["feature"]) == {"age", "color", "income"}


# ---------------------------------------------------------------- errors (wording)


def test_error_shapes_do_not_chain():
    with pytest.raises(ValueError) as error:
        garson_importance([np.ones((2, 5)), np.ones((3, 4))])
    assert str(error.value).startswith(
        "weights must be a list of 2-D matrices whose shapes chain (fan_in, fan_out); "
        "layer 1 has shape (3, 4) but layer 0 outputs 5 units."
    )
    assert "transpose (out, in) matrices" in str(error.value)


def test_error_not_two_dimensional_and_bias():
    with pytest.raises(ValueError, match=r"layer 1 has shape \(4,\)"):
        extract_weights([np.ones((3, 4)), np.ones(4)])
    with pytest.raises(
        ValueError,
        match=r"the bias of layer 0 must have shape \(4,\) to match its weight matrix "
        r"\(3, 4\); got \(3,\)\.",
    ):
        extract_weights([(np.ones((3, 4)), np.ones(3))])


def test_error_non_finite_and_empty():
    w = np.ones((3, 4))
    w[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"weights must be finite; layer 0 has 1 NaN"):
        olden_importance([w, np.ones((4, 1))])
    with pytest.raises(ValueError, match="got an empty list"):
        olden_importance([])


def test_error_model_type_and_depth():
    with pytest.raises(TypeError, match=r"model must be a Flax nnx Module, .*; got str\."):
        garson_importance("net")
    with pytest.raises(
        ValueError,
        match=r"garson needs a network with at least one hidden layer \(two weight matrices\); "
        r"model has 1 weight matrix\.",
    ):
        garson_importance([np.ones((3, 2))])
    with pytest.raises(ValueError, match=r"reduce must be one of \('mean', 'sum'\); got 'max'\."):
        gedeon_importance([np.ones((3, 2)), np.ones((2, 1))], reduce="max")


def test_error_nnx_layers_out_of_order():
    from flax import nnx

    class Backwards(nnx.Module):
        def __init__(self, rngs):
            self.out = nnx.Linear(4, 1, rngs=rngs)
            self.hidden = nnx.Linear(3, 4, rngs=rngs)

    with pytest.raises(ValueError) as error:
        extract_weights(Backwards(nnx.Rngs(0)))
    message = str(error.value)
    assert message.startswith(
        "the dense layers of model must chain (fan_in, fan_out); layer 1 (model.hidden) has "
        "shape (3, 4) but layer 0 outputs 1 units."
    )
    assert "Found, in order: model.out: (4, 1), model.hidden: (3, 4)." in message


def test_error_neuralnettools_vector_length_and_struct():
    with pytest.raises(
        ValueError,
        match=r"weights must have 9 values for struct \(2, 2, 1\) \(\(2\+1\)\*2 \+ \(2\+1\)\*1, "
        r".*; got 8\.",
    ):
        from_neuralnettools(NNT_WEIGHTS[:-1], NNT_STRUCT)
    with pytest.raises(ValueError, match=r"struct must list at least two positive integer"):
        from_neuralnettools(NNT_WEIGHTS, (9,))
    with pytest.raises(ValueError, match=r"struct must list at least two positive integer"):
        from_neuralnettools(NNT_WEIGHTS, (2, 2.5, 1))


def test_error_names_and_groups():
    layers = random_net((3, 4, 2), seed=13)
    with pytest.raises(
        ValueError,
        match=r"feature_names must have one name per input of the network \(3\); got 2\.",
    ):
        garson_importance(layers, feature_names=["a", "b"])
    with pytest.raises(
        ValueError,
        match=r"output_names must have one name per output of the network \(2\); got 1\.",
    ):
        olden_importance(layers, output_names=["y"])
    names = ["a", "b", "c"]
    with pytest.raises(
        ValueError,
        match=r"groups\['g'\] refers to unknown feature 'z'; feature_names are \['a', 'b', 'c'\]\.",
    ):
        garson_importance(layers, feature_names=names, groups={"g": ["a", "z"]})
    with pytest.raises(
        ValueError,
        match=r"feature 'b' is in groups 'g' and 'h'; each input may belong to one group only\.",
    ):
        garson_importance(layers, feature_names=names, groups={"g": ["a", "b"], "h": [1, 2]})
    with pytest.raises(ValueError, match=r"groups\['g'\] refers to column 3, but the network has"):
        garson_importance(layers, groups={"g": [3]})
    with pytest.raises(ValueError, match=r"groups name 'c' is also the name of an ungrouped"):
        garson_importance(layers, feature_names=names, groups={"c": ["a", "b"]})


def test_a_constant_column_is_dropped_by_fit_mlp():
    """A column constant in training carries nothing: scale 1 (scikit-learn's StandardScaler
    rule; std + 1e-8 made new values of it explode) and masked out, so its untrained weights
    do not show in Garson's and Olden's importances."""
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=(80, 2)), np.zeros(80), np.full(80, 0.1)]  # float32's mean of
    model = jaximp.fit_mlp(X, X[:, 0] - X[:, 1], hidden=(6,), steps=300)  # 0.1s is not 0.1
    np.testing.assert_array_equal(np.asarray(model.x_scale[2:]), [1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(model.input_mask), [1.0, 1.0, 0.0, 0.0])
    moved = X.copy()
    moved[:, 2:] = 0.7
    np.testing.assert_array_equal(np.asarray(model(moved)), np.asarray(model(X)))
    for method in (jaximp.garson_importance, jaximp.olden_importance):
        np.testing.assert_array_equal(method(model).importances_mean[2:, 0], [0.0, 0.0])


def test_fit_mlp_and_mlp_refuse_bad_shapes_and_targets_by_name():
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = X[:, 0]
    for kwargs, match in (
            (dict(y=y[:-1]), r"y must have shape \(20,\) or \(20, outputs\)"),
            (dict(y=np.where(np.arange(20) == 3, np.nan, y)), r"y holds 1 NaN or infinite"),
            (dict(y=y, input_mask=[1, 0]), r"input_mask must hold one value per column"),
            (dict(y=y, hidden=4), r"hidden must be a sequence of positive ints"),
            (dict(y=y, hidden=(4.7,)), r"hidden must be a sequence of positive ints")):
        with pytest.raises(ValueError, match=match):
            jaximp.fit_mlp(X, **{"steps": 2, **kwargs})
    model = jaximp.fit_mlp(X, y, hidden=(4,), steps=2)
    with pytest.raises(ValueError, match=r"the MLP takes rows of 3 columns, shape \(n, 3\); "
                                         r"got shape \(20, 2\)"):
        model(X[:, :2])
