import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaximp.kernels import _streams


@jax.jit
def _permutation_of(bits, stream, rows, n):
    return _streams.feistel_permutation(_streams.seed_of(bits, stream), rows, n)


def engine_permutations(plan, n):
    """The permutations the engine uses for each item of a permutation plan, (b, n)."""
    bits, rows = jnp.asarray(plan.key_bits), jnp.arange(n)
    return np.stack([np.asarray(_permutation_of(bits, jnp.asarray(s), rows, jnp.int32(n)))
                     for s in plan.item_stream])


def random_mlp(key_seed: int, sizes=(3, 16, 16, 1)):
    """Random-weight tanh MLP as a pure JAX function and its float64 NumPy twin."""
    rng = np.random.default_rng(key_seed)
    layers = [
        (rng.normal(size=(a, b)) / np.sqrt(a), rng.normal(size=b) * 0.1)
        for a, b in zip(sizes[:-1], sizes[1:])
    ]

    def f_jax(X):
        h = X
        for W, b in layers[:-1]:
            h = jnp.tanh(h @ jnp.asarray(W, jnp.float32) + jnp.asarray(b, jnp.float32))
        W, b = layers[-1]
        out = h @ jnp.asarray(W, jnp.float32) + jnp.asarray(b, jnp.float32)
        return out[:, 0] if out.shape[1] == 1 else out

    def f_np(X):
        h = np.asarray(X, np.float64)
        for W, b in layers[:-1]:
            h = np.tanh(h @ W + b)
        W, b = layers[-1]
        out = h @ W + b
        return out[:, 0] if out.shape[1] == 1 else out

    return f_jax, f_np, layers


@pytest.fixture
def mlp3():
    return random_mlp(0)


@pytest.fixture
def data3():
    return np.random.default_rng(1).normal(size=(120, 3))
