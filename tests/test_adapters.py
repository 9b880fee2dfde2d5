"""Model adapters and input validation at the edge."""

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
        (np.ones(5), {}, ValueError, r"X must be 2-D \(rows, columns\); got shape \(5,\)"),
        (np.array([["a", "b"]], dtype=object), {}, TypeError, "X must hold numbers"),
        (np.ones((4, 2)), {"feature_names": ["a"]}, ValueError,
         "feature_names has 1 names but X has 2 columns"),
        (np.ones((4, 2)), {"sample_weight": np.ones(3)}, ValueError,
         r"sample_weight must have shape \(4,\); got \(3,\)"),
        (np.ones((4, 2)), {"sample_weight": -np.ones(4)}, ValueError, "non-negative"),
    ],
)
def test_bad_data(X, kwargs, error, message):
    with pytest.raises(error, match=message):
        jaximp.as_dataset(X, **kwargs)


def test_object_column_in_dataframe():
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    with pytest.raises(TypeError, match="column 'b' has dtype .*convert text to a pandas "
                       "'category' dtype|Convert text to a pandas 'category' dtype"):
        jaximp.as_dataset(frame)


def test_bad_pd_arguments(data3):
    f = lambda X: X.sum(axis=1)  # noqa: E731
    with pytest.raises(ValueError, match="grid_resolution must be an int >= 2; got 1"):
        jaximp.partial_dependence(f, data3, "x0", grid_resolution=1)
    with pytest.raises(ValueError, match=r"unknown feature 'nope'; known features are "
                       r"\['x0', 'x1', 'x2'\]"):
        jaximp.partial_dependence(f, data3, "nope")
    with pytest.raises(ValueError, match="kind must be one of"):
        jaximp.partial_dependence(f, data3, "x0", kind="mean")
    with pytest.raises(ValueError, match="percentiles must satisfy"):
        jaximp.partial_dependence(f, data3, "x0", percentiles=(0.9, 0.1))
    constant = np.column_stack([data3[:, :2], np.full(len(data3), 2.0)])
    with pytest.raises(ValueError, match=r"feature 'x2' has a single distinct value \(2\)"):
        jaximp.partial_dependence(f, constant, "x2")
    with pytest.raises(ValueError, match="output must be one of"):
        jaximp.partial_dependence(f, data3, "x0", output="z")
