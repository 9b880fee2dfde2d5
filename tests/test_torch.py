"""PyTorch modules as models: the same numbers as the same network in JAX."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaximp

torch = pytest.importorskip("torch")


def _twins(seed=0, sizes=(3, 8, 2)):
    """A torch MLP and the same network (same float32 weights) as a JAX function."""
    torch.manual_seed(seed)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.Tanh()]
    module = torch.nn.Sequential(*layers[:-1]).eval()
    weights = [(jnp.asarray(m.weight.detach().numpy().T), jnp.asarray(m.bias.detach().numpy()))
               for m in module if isinstance(m, torch.nn.Linear)]

    def f_jax(X):
        h = X
        for W, b in weights[:-1]:
            h = jnp.tanh(h @ W + b)
        W, b = weights[-1]
        return h @ W + b

    return module, f_jax


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3)).astype(np.float32)
    return X, X[:, 0] - 2 * X[:, 1] ** 2


def test_predictor_equals_the_jax_twin(data):
    X, _ = data
    module, f_jax = _twins()
    predictor = jaximp.as_predictor(module, n_features=3)
    assert predictor.host and predictor.name == "torch Sequential"
    assert predictor.n_outputs == 2
    out = np.asarray(predictor(jnp.asarray(X)))
    np.testing.assert_allclose(out, np.asarray(f_jax(jnp.asarray(X))), rtol=1e-5, atol=1e-6)


def test_methods_equal_the_jax_twin(data):
    X, y = data
    module, f_jax = _twins(sizes=(3, 8, 1))
    pd_torch = jaximp.partial_dependence(module, X, 0, grid_resolution=7)
    pd_jax = jaximp.partial_dependence(f_jax, X, 0, grid_resolution=7)
    np.testing.assert_allclose(pd_torch.average, pd_jax.average, rtol=1e-5, atol=1e-6)
    fi_torch = jaximp.permutation_importance(module, X, y, n_repeats=3)
    fi_jax = jaximp.permutation_importance(f_jax, X, y, n_repeats=3)
    np.testing.assert_allclose(fi_torch.importances, fi_jax.importances, rtol=1e-4, atol=1e-5)


def test_explainer_with_a_torch_module(data):
    X, y = data
    module, f_jax = _twins(sizes=(3, 8, 1))
    ex = jaximp.Explainer(module, X, y)
    np.testing.assert_allclose(ex.h_statistic().pairwise.values,
                               jaximp.h_statistic(f_jax, X).pairwise.values, rtol=1e-3,
                               atol=1e-6)


def test_training_mode_with_dropout_warns():
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.5),
                                 torch.nn.Linear(4, 1))
    with pytest.warns(UserWarning, match=r"training mode .* module.eval\(\)"):
        jaximp.as_predictor(module, n_features=3)


def test_a_module_returning_a_tuple_is_refused():
    class Pair(torch.nn.Module):
        def forward(self, X):
            return X, X

    with pytest.raises(TypeError, match="returned a tuple; jaximp explains modules that "
                                        "return one tensor"):
        jaximp.as_predictor(Pair(), n_features=3)
