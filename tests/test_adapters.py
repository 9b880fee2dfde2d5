"""Model adapters and input validation at the edge."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import jaximp


@pytest.fixture
def weights():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 5)).astype(np.float32), rng.normal(size=(5, 1)).astype(np.float32)


def reference(X, weights):
    W1, W2 = weights
    return (np.tanh(X @ W1) @ W2)[:, 0]


def pd_values(model, X, **kw):
    return jaximp.partial_dependence(model, X, "x0", grid_resolution=4, **kw).average[:, 0]


def test_plain_and_jitted_functions(weights, data3):
    W1, W2 = weights
    f = lambda X: (jnp.tanh(X @ W1) @ W2)[:, 0]  # noqa: E731
    np.testing.assert_allclose(pd_values(jax.jit(f), data3), pd_values(f, data3), atol=1e-6)


def test_flax_nnx_module(weights, data3):
    from flax import nnx

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(3, 5, use_bias=False, rngs=rngs)
            self.l2 = nnx.Linear(5, 1, use_bias=False, rngs=rngs)

        def __call__(self, x):
            return self.l2(jnp.tanh(self.l1(x)))

    net = Net(nnx.Rngs(0))
    net.l1.kernel.value = jnp.asarray(weights[0])
    net.l2.kernel.value = jnp.asarray(weights[1])
    f = lambda X: (jnp.tanh(X @ weights[0]) @ weights[1])[:, 0]  # noqa: E731
    np.testing.assert_allclose(pd_values(net, data3), pd_values(f, data3), atol=1e-5)


def test_flax_linen_module_needs_variables(weights, data3):
    import flax.linen as nn

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            hidden = jnp.tanh(nn.Dense(5, use_bias=False)(x))
            return nn.Dense(1, use_bias=False)(hidden)

    variables = {"params": {"Dense_0": {"kernel": weights[0]}, "Dense_1": {"kernel": weights[1]}}}
    f = lambda X: (jnp.tanh(X @ weights[0]) @ weights[1])[:, 0]  # noqa: E731
    np.testing.assert_allclose(pd_values(Net(), data3, variables=variables), pd_values(f, data3),
                               atol=1e-5)
    with pytest.raises(TypeError, match="needs its parameters: pass variables="):
        pd_values(Net(), data3)


def test_equinox_module(data3):
    eqx = pytest.importorskip("equinox")
    mlp = eqx.nn.MLP(3, "scalar", 8, 2, key=jax.random.key(0))
    manual = jax.vmap(mlp)
    np.testing.assert_allclose(pd_values(mlp, data3), pd_values(manual, data3), atol=1e-6)


def test_numpy_predictor_through_callback(weights, data3):
    class NumpyModel:
        def predict(self, X):
            return reference(np.asarray(X, np.float64), weights)

    f = lambda X: (jnp.tanh(X @ weights[0]) @ weights[1])[:, 0]  # noqa: E731
    np.testing.assert_allclose(pd_values(NumpyModel(), data3), pd_values(f, data3), atol=1e-5)


def test_wrong_output_shape_names_the_model(data3):
    def bad_model(X):
        return X.reshape(-1)

    with pytest.raises(ValueError, match=r"the model bad_model must return shape \(n,\) or "
                       r"\(n, outputs\) for a batch of n = 2 rows; got shape \(6,\)"):
        jaximp.partial_dependence(bad_model, data3, "x0")


@pytest.mark.parametrize(
    "X, kwargs, error, message",
    [
        (np.array([[1.0, np.nan], [2.0, 3.0]]), {}, ValueError,
         r"X contains 1 NaN or infinite values \(first at row 0, column 'x1'\)"),
        (np.array([[1.0, np.inf], [2.0, 3.0]]), {}, ValueError, "NaN or infinite"),
        (np.zeros((0, 2)), {}, ValueError, r"X is empty: got shape \(0, 2\)"),
        (np.ones(5), {}, ValueError,
         r"X must be 2-D \(rows, columns\), or \(rows, ...\) for examples with more axes; "
         r"got shape \(5,\)"),
        (np.array([["a", 1.0], [2.0, "b"]], dtype=object), {}, TypeError,
         "column 'x0' has dtype object with values that are not all numbers nor all text"),
        (np.array([[b"a", b"b"]]), {}, TypeError, "X must hold numbers"),
        (np.array([["a", 1.0]], dtype=object), {"feature_names": ["p"]}, ValueError,
         "feature_names has 1 names but X has 2 columns"),
        (np.ones((4, 2)), {"feature_names": ["a"]}, ValueError,
         "feature_names has 1 names but X has 2 columns"),
        (np.ones((4, 2)), {"sample_weight": np.ones(3)}, ValueError,
         r"sample_weight must have shape \(4,\), one weight per row; got \(3,\)"),
        (np.ones((4, 2)), {"sample_weight": -np.ones(4)}, ValueError, "non-negative"),
    ],
)
def test_bad_data(X, kwargs, error, message):
    with pytest.raises(error, match=message):
        jaximp.as_dataset(X, **kwargs)


@pytest.mark.filterwarnings("ignore:X has feature names")  # the frame's names, not the fit's
def test_numbers_held_as_objects_and_array_likes_are_read_as_numbers():
    """scikit-learn takes an object array of numbers (its PD display makes one from a list)
    and an array-like with only ``__array__``; so does jaximp, with the same numbers."""
    from sklearn.linear_model import LinearRegression

    X = np.random.default_rng(0).normal(size=(40, 3))
    y = X @ [1.0, 2.0, 3.0]
    model = LinearRegression().fit(X, y)
    plain = jaximp.partial_dependence(model, X, 0, grid_resolution=5).average
    objects = X.astype(object)
    objects[3, 1] = None  # missing, for a model that takes it
    frame = pd.DataFrame(X.astype(object), columns=["a", "b", "c"])
    np.testing.assert_array_equal(jaximp.as_dataset(objects, allow_missing=True).X[3],
                                  [X[3, 0], np.nan, X[3, 2]])
    for data in (X.astype(object), frame):
        np.testing.assert_allclose(
            jaximp.partial_dependence(model, data, 0, grid_resolution=5).average, plain,
            rtol=1e-12)

    class ArrayOnly:  # no __getitem__, no shape
        def __array__(self, dtype=None, copy=None):
            return X if dtype is None else X.astype(dtype)

    np.testing.assert_allclose(
        jaximp.permutation_importance(model, ArrayOnly(), y, n_repeats=2).importances_mean,
        jaximp.permutation_importance(model, X, y, n_repeats=2).importances_mean, rtol=1e-12)


def test_text_columns_are_categorical_and_mixed_objects_are_refused():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["y", "x", "y"],
                          "c": pd.Series(["q", "p", "q"], dtype=object),
                          "d": pd.array(["u", "v", "u"], dtype="string")})
    dataset = jaximp.as_dataset(frame)
    kinds = [(f.name, f.kind, f.levels) for f in dataset.features]
    assert kinds == [("a", "continuous", None), ("b", "categorical", ("x", "y")),
                     ("c", "categorical", ("p", "q")), ("d", "categorical", ("u", "v"))]
    np.testing.assert_array_equal(dataset.X[:, 1:], [[1, 1, 0], [0, 0, 1], [1, 1, 0]])
    mixed = pd.DataFrame({"a": [1.0, 2.0], "b": pd.Series([1, "x"], dtype=object)})
    with pytest.raises(TypeError, match="column 'b' has dtype object with values that are "
                                        "not all numbers nor all text"):
        jaximp.as_dataset(mixed)
    with pytest.raises(ValueError, match="column 'b' has missing categories"):
        jaximp.as_dataset(pd.DataFrame({"b": pd.Series(["x", None], dtype=object)}))


def test_bad_pd_arguments(data3):
    f = lambda X: X.sum(axis=1)  # noqa: E731
    with pytest.raises(ValueError, match=r"grid_resolution must be an int >= 2, inf \(every "
                                         r"distinct value\) or None \(the grid's default\); "
                                         r"got 1"):
        jaximp.partial_dependence(f, data3, "x0", grid_resolution=1)
    with pytest.raises(ValueError, match=r"grid_resolution=1,000,000,000 points per feature "
                                         r"is more than a partial dependence can use"):
        jaximp.partial_dependence(f, data3, "x0", grid="pdp", grid_resolution=10 ** 9)
    with pytest.raises(TypeError, match=r"features must be a name, an index, a list of them or "
                                        r"a boolean mask; got float 1\.0"):
        jaximp.partial_dependence(f, data3, 1.0)
    with pytest.raises(ValueError, match=r"grid values for the numeric feature 'x0' must be "
                                         r"numbers; got \['low', 'high'\]"):
        jaximp.partial_dependence(f, data3, 0, grid={0: ["low", "high"]})
    with pytest.raises(ValueError, match=r"stdev must be a number >= 0 or an array of 3 of "
                                         r"them; got array\(\[1\., 1\.\]\)"):
        jaximp.smoothgrad(f, data3, stdev=np.ones(2))
    with pytest.raises(ValueError, match=r"unknown feature 'nope'; known features are "
                       r"\['x0', 'x1', 'x2'\]"):
        jaximp.partial_dependence(f, data3, "nope")
    with pytest.raises(ValueError, match="kind must be one of"):
        jaximp.partial_dependence(f, data3, "x0", kind="mean")
    with pytest.raises(ValueError,
                       match=r"percentiles must be a pair \(low, high\) with 0 <= low < high"):
        jaximp.partial_dependence(f, data3, "x0", percentiles=(0.9, 0.1))
    constant = np.column_stack([data3[:, :2], np.full(len(data3), 2.0)])
    with pytest.raises(ValueError, match=r"feature 'x2' has a single distinct value \(2\)"):
        jaximp.partial_dependence(f, constant, "x2")
    with pytest.raises(ValueError, match="output must be one of"):
        jaximp.partial_dependence(f, data3, "x0", output="z")


# Models as pytrees: arrays are traced arguments, one apply per structure.


def test_mlp_is_a_pytree_with_static_activation():
    X = np.random.default_rng(0).normal(size=(40, 2))
    model = jaximp.fit_mlp(X, X[:, 0], hidden=(4,), steps=20, activation="tanh")
    leaves, treedef = jax.tree_util.tree_flatten(model)
    assert len(leaves) == 4 + 6  # two layers of (kernel, bias), 4 scalings, mask, losses
    assert all(isinstance(leaf, jax.Array) for leaf in leaves)
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(rebuilt, jaximp.MLP) and rebuilt.activation == "tanh"
    relu = jaximp.fit_mlp(X, X[:, 0], hidden=(4,), steps=20, activation="relu")
    assert jax.tree_util.tree_structure(relu) != treedef  # the activation is structure
    jitted = jax.jit(lambda m, Z: m(Z))(model, X)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(model(X)), rtol=1e-6, atol=1e-6)
    stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), model, model)
    both = jax.vmap(lambda m: m(X))(stacked)
    np.testing.assert_allclose(np.asarray(both[1]), np.asarray(model(X)), rtol=1e-6, atol=1e-6)
    assert [W.shape for W, _ in rebuilt.weights()] == [(2, 4), (4, 1)]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TanhNet:
    W1: jax.Array
    W2: jax.Array
    scale: float = 1.0  # a non-array leaf: compiled in, part of the apply's key

    def __call__(self, X):
        return self.scale * (jnp.tanh(X @ self.W1) @ self.W2)[:, 0]


def test_registered_dataclass_model(weights, data3):
    W1, W2 = (jnp.asarray(w) for w in weights)
    f = lambda X: (jnp.tanh(X @ W1) @ W2)[:, 0]  # noqa: E731
    np.testing.assert_allclose(pd_values(TanhNet(W1, W2), data3), pd_values(f, data3),
                               atol=1e-6)
    p1 = jaximp.as_predictor(TanhNet(W1, W2), n_features=3)
    p2 = jaximp.as_predictor(TanhNet(2 * W1, W2), n_features=3)
    p3 = jaximp.as_predictor(TanhNet(W1, W2, scale=2.0), n_features=3)
    assert p1.apply is p2.apply and p1.apply is not p3.apply
    assert p1.name == "TanhNet" and len(p1.params) == 2  # the arrays only
    X = jnp.asarray(data3, jnp.float32)
    np.testing.assert_allclose(p3(X), 2 * p1(X), rtol=1e-6)
    np.testing.assert_allclose(p2(X)[:, 0], TanhNet(2 * W1, W2)(X), rtol=1e-6)


def test_predictor_dtype(weights):
    W1, W2 = (jnp.asarray(w) for w in weights)
    assert jaximp.as_predictor(TanhNet(W1, W2), n_features=3).dtype == np.float32
    assert jaximp.as_predictor(lambda X: X.sum(1), n_features=3).dtype == np.float32
    with jax.enable_x64(True):
        net64 = TanhNet(jnp.asarray(weights[0], jnp.float64), jnp.asarray(weights[1], jnp.float64))
        assert jaximp.as_predictor(net64, n_features=3).dtype == np.float64
        assert jaximp.as_predictor(TanhNet(W1, W2), n_features=3).dtype == np.float32
        assert jaximp.as_predictor(lambda X: X.sum(1), n_features=3).dtype == np.float64


def test_flax_nnx_module_in_training_mode_gets_the_eval_hint():
    from flax import nnx

    class Dropped(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 1, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.linear(self.dropout(x))

    model = Dropped(nnx.Rngs(0))
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match=r"call model\.eval\(\) before explaining it"):
        jaximp.partial_dependence(model, X, 0)
    model.eval()  # dropout off: the PD is the linear model's
    pd = jaximp.partial_dependence(model, X, 0, grid={0: [0.0, 1.0]})
    slope = float(model.linear.kernel[0, 0])
    assert pd.average[1, 0] - pd.average[0, 0] == pytest.approx(slope, rel=1e-5)


# ------------------------------------------------------------------ combined outputs


def _two_outputs(Z):
    return jnp.stack([jnp.sin(Z[:, 0]) * Z[:, 1], Z[:, 2] ** 2 + Z[:, 0] * Z[:, 2]], axis=1)


def _two_outputs_np(Z):
    return np.stack([np.sin(Z[:, 0]) * Z[:, 1], Z[:, 2] ** 2 + Z[:, 0] * Z[:, 2]], axis=1)


def test_combined_outputs_are_explained_as_one_model(data3):
    """PD of a weighted sum equals the weighted PDs (linear); the H-statistic of the sum is a
    statistic of the summed function (not of the per-output values), checked against a float64
    NumPy loop over the rows."""
    X = np.asarray(data3)[:40]
    w = np.array([0.25, -2.0])
    combined = jaximp.combine_outputs(_two_outputs, w, n_features=3)
    assert combined.n_outputs == 1 and combined.output_names == ("weighted sum",)
    both = jaximp.partial_dependence(_two_outputs, X, "x0", grid_resolution=6)
    one = jaximp.partial_dependence(combined, X, "x0", grid_resolution=6)
    np.testing.assert_allclose(one.average[:, 0], both.average @ w, rtol=1e-5, atol=1e-6)

    def g(Z):
        return _two_outputs_np(Z) @ w

    def pd_rows(cols):  # PD of g at every row over the rows, centred
        out = []
        for i in range(len(X)):
            Z = X.copy()
            Z[:, cols] = X[i, cols]
            out.append(g(Z).mean())
        out = np.array(out)
        return out - out.mean()

    joint, a, b = pd_rows([0, 2]), pd_rows([0]), pd_rows([2])
    expected = np.sum((joint - a - b) ** 2) / np.sum(joint ** 2)
    h = jaximp.h_statistic(combined, X, pairs=[("x0", "x2")], overall=False)
    np.testing.assert_allclose(h.pairwise.values[0, 0], expected, rtol=1e-4)
    per_output = jaximp.h_statistic(_two_outputs, X, pairs=[("x0", "x2")], overall=False)
    assert not np.allclose(per_output.pairwise.values[0] @ np.abs(w) / np.abs(w).sum(),
                           expected, rtol=1e-2)


def test_combined_outputs_of_a_host_classifier_stay_float64():
    """A classifier's expected class value, E[class] = sum_k k p_k, on the host in float64."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
    est = LogisticRegression().fit(X, y)
    expected = jaximp.combine_outputs(est, {"0": 0.0, "1": 1.0, "2": 2.0}, name="E[class]",
                                      sample=X[:8])
    assert expected.host and expected.output_names == ("E[class]",)
    pd_ = jaximp.partial_dependence(expected, X, "x1", grid_resolution=5)
    grid = np.asarray(pd_.grid_values[0])
    ref = []
    for v in grid:
        Z = X.copy()
        Z[:, 1] = v
        ref.append((est.predict_proba(Z) @ np.arange(3.0)).mean())
    np.testing.assert_allclose(pd_.average[:, 0], ref, rtol=1e-12)
    mean = jaximp.combine_outputs(est, "mean", sample=X[:8])
    np.testing.assert_allclose(
        jaximp.partial_dependence(mean, X, "x1", grid_resolution=5).average, 1 / 3, rtol=1e-12)


@pytest.mark.parametrize("weights,message", [
    ("median", r"weights must be one of \('mean', 'sum'\) or one number per output or a "
               r"mapping of output name to weight; got 'median'\."),
    ([1.0], r"weights must hold 2 finite numbers, one per output \['y0', 'y1'\]; got \[1.0\]."),
    ([1.0, np.nan], "weights must hold 2 finite numbers"),
    ({"y2": 1.0}, r"weights names unknown outputs \['y2'\]; the outputs are \['y0', 'y1'\]."),
])
def test_combined_outputs_validation(weights, message):
    with pytest.raises(ValueError, match=message):
        jaximp.combine_outputs(_two_outputs, weights, n_features=3)


def test_a_polars_frame_is_read_through_pandas_with_its_names():
    """A polars DataFrame (anything from polars with ``to_pandas``) keeps its column names;
    polars itself is not a test dependency, so a stand-in with its module name plays it."""
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": pd.Categorical(["u", "v", "u"])})

    class Frame:
        __module__ = "polars.dataframe.frame"

        def to_pandas(self):
            return frame

    dataset = jaximp.as_dataset(Frame())
    assert dataset.feature_names == ("a", "b")
    assert [f.kind for f in dataset.features] == ["continuous", "categorical"]
    assert dataset.source is frame
