"""PRNG keys from the user's ``random_state``, and host-side random streams: one NumPy
generator per labelled stream of a JAX key.

Used for the few draws made on the host (row subsamples, target pairs); the engine draws its
row indices on the device from the same key (:mod:`jaximp.kernels._streams`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["as_key", "key_bits", "rng_stream"]


_BITS: dict[int, tuple] = {}  # id(key) -> (key, bits): int seeds reuse one key object


def key_bits(key: jax.Array) -> list[int]:
    """The raw bits of a PRNG key, as Python ints (one device read per key object)."""
    hit = _BITS.get(id(key))
    if hit is None or hit[0] is not key:
        if len(_BITS) >= 64:
            _BITS.pop(next(iter(_BITS)))
        hit = _BITS[id(key)] = (key, np.asarray(jax.random.key_data(key), np.uint32).ravel())
    return hit[1].tolist()


def rng_stream(bits: list[int], *indices: int) -> np.random.Generator:
    """A NumPy generator for one labelled stream of a key: seeded by the key's ``bits`` and
    ``indices`` (a stream tag, then e.g. a feature's position), so each stream depends only on
    the key and its labels."""
    return np.random.default_rng([*bits, *[int(i) for i in indices]])


def as_key(random_state) -> jax.Array:
    """A typed JAX PRNG key from an int seed or a key (typed, or raw ``uint32[2]``).

    As in scikit-learn, a NumPy ``RandomState`` or ``Generator`` gives a seed drawn from it
    (so it moves on, and the next call differs), and None one drawn from NumPy's global
    random state (not reproducible)."""
    if random_state is None:
        random_state = np.random.mtrand._rand
    if isinstance(random_state, np.random.RandomState):
        random_state = int(random_state.randint(np.iinfo(np.int32).max + 1))
    elif isinstance(random_state, np.random.Generator):
        random_state = int(random_state.integers(np.iinfo(np.int32).max + 1))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return _int_key(int(random_state))
    if isinstance(random_state, jax.Array):
        if jax.dtypes.issubdtype(random_state.dtype, jax.dtypes.prng_key):
            if random_state.shape == ():
                return random_state
        elif random_state.dtype == jnp.uint32 and random_state.shape == (2,):
            return jax.random.wrap_key_data(random_state)
    raise TypeError(
        "random_state must be an int seed, a JAX PRNG key such as jax.random.key(0), a NumPy "
        f"RandomState or Generator, or None; got {random_state!r:.60}."
    )


@functools.lru_cache(maxsize=64)
def _int_key(seed: int) -> jax.Array:
    """The key of an int seed, made once (keys are immutable; making one costs ~0.5 ms)."""
    return jax.random.key(seed)
