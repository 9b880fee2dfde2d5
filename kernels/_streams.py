"""Counter-based random row indices: permutations and draws computed row by row from a seed.

The engine never stores an (items, n) index table: a chunk of rows asks for the source row of
each of its rows, and gets the same answer whatever the chunking. A permutation of ``0..n-1`` is
a keyed Feistel network on the smallest even number of bits that covers ``n``, restricted to
``[0, n)`` by cycle walking (values that land outside are pushed through the network again,
which stays a bijection of ``[0, n)``). Uniform draws with replacement hash the row number.
Every function is written for arrays of any shape, with ``xp`` left to ``jax.numpy``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, UInt32

__all__ = ["feistel_permutation", "mix32", "seed_of", "uniform_rows", "weighted_rows"]

_ROUNDS = 6
_GOLDEN = 0x9E3779B9


def mix32(x: UInt32[Array, "..."]) -> UInt32[Array, "..."]:
    """A 32-bit integer finalizer (xor-shift-multiply) with full avalanche.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> mix32(jnp.array([0, 1, 2], jnp.uint32)).dtype
    dtype('uint32')
    """
    x = jnp.asarray(x, jnp.uint32)
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def seed_of(key_bits: UInt32[Array, "2"], stream: Int[Array, "k"]) -> UInt32[Array, ""]:
    """One 32-bit seed from a key's two words and a stream label (e.g. feature, repeat).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> bits = jnp.array([0, 42], jnp.uint32)
    >>> bool(seed_of(bits, jnp.array([1, 2])) != seed_of(bits, jnp.array([2, 1])))
    True
    """
    h = mix32(key_bits[0] ^ mix32(key_bits[1] + jnp.uint32(_GOLDEN)))
    for k in range(stream.shape[0]):
        h = mix32(h ^ mix32(jnp.asarray(stream[k], jnp.uint32) + jnp.uint32(((k + 1) * _GOLDEN) & 0xFFFFFFFF)))
    return h


def _half_bits(n: Int[Array, ""]) -> Int[Array, ""]:
    """Half the bits of the Feistel domain: the least h with 4**h >= n (at least 1)."""
    bits = jnp.ceil(jnp.log2(jnp.maximum(n, 2).astype(jnp.float32))).astype(jnp.int32)
    # log2 in float32 can be one short at exact powers of two: fix it up with integers.
    bits = jnp.where(jnp.left_shift(1, bits) < n, bits + 1, bits)
    return jnp.maximum((bits + 1) // 2, 1)


def _feistel(seed, x, half):
    mask = jnp.left_shift(jnp.uint32(1), half.astype(jnp.uint32)) - jnp.uint32(1)
    left, right = x >> half.astype(jnp.uint32), x & mask
    for r in range(_ROUNDS):
        f = mix32(right ^ mix32(seed + jnp.uint32(((r + 1) * _GOLDEN) & 0xFFFFFFFF))) & mask
        left, right = right, left ^ f
    return (left << half.astype(jnp.uint32)) | right


def feistel_permutation(
    seed: UInt32[Array, ""], rows: Int[Array, "..."], n: Int[Array, ""]
) -> Int[Array, "..."]:
    """Position ``pi(i)`` of each row ``i`` under the seeded permutation ``pi`` of ``0..n-1``.

    Each ``i`` is mapped independently, so any subset of rows can be asked for.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> rows = jnp.arange(10)
    >>> p = feistel_permutation(jnp.uint32(7), rows, jnp.int32(10))
    >>> sorted(p.tolist()) == list(range(10))
    True
    """
    half = _half_bits(jnp.asarray(n))
    limit = jnp.asarray(n, jnp.uint32)
    x = _feistel(seed, jnp.asarray(rows, jnp.uint32), half)

    def walk(state):
        x, _ = state
        outside = x >= limit
        return jnp.where(outside, _feistel(seed, x, half), x), outside.any()

    x, _ = jax.lax.while_loop(lambda s: s[1], walk, (x, jnp.bool_(True)))
    return x.astype(jnp.int32)


def uniform_rows(
    seed: UInt32[Array, ""], rows: Int[Array, "..."], n: Int[Array, ""]
) -> Int[Array, "..."]:
    """A row drawn uniformly from ``0..n-1`` for each row ``i`` (with replacement).

    A 32-bit hash ``u`` of ``(seed, i)`` is mapped to ``floor(u * n / 2**32)`` (Lemire's
    multiply-shift), whose bias is below ``n / 2**32`` per row.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> draws = uniform_rows(jnp.uint32(3), jnp.arange(1000), jnp.int32(5))
    >>> sorted(set(draws.tolist()))
    [0, 1, 2, 3, 4]
    """
    u = mix32(jnp.asarray(rows, jnp.uint32) ^ mix32(seed ^ jnp.uint32(_GOLDEN)))
    return _mulhi32(u, jnp.asarray(n, jnp.uint32)).astype(jnp.int32)


def _mulhi32(a, b):
    """The high 32 bits of the 64-bit product of two uint32 arrays, with 16-bit limbs."""
    low16 = jnp.uint32(0xFFFF)
    a_hi, a_lo, b_hi, b_lo = a >> 16, a & low16, b >> 16, b & low16
    lo_lo, hi_lo, lo_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi
    carry = ((lo_lo >> 16) + (hi_lo & low16) + (lo_hi & low16)) >> 16
    return a_hi * b_hi + (hi_lo >> 16) + (lo_hi >> 16) + carry


def weighted_rows(
    seed: UInt32[Array, ""], rows: Int[Array, "..."], cdf: Float[Array, "n"], n: Int[Array, ""]
) -> Int[Array, "..."]:
    """A row drawn with probability proportional to its weight for each row ``i``, by the
    inverse of the cumulative weights ``cdf`` (normalized to end at 1) at a 24-bit uniform.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> cdf = jnp.array([0.0, 0.5, 0.5, 1.0])  # rows 0 and 2 have weight 0
    >>> draws = weighted_rows(jnp.uint32(1), jnp.arange(200), cdf, jnp.int32(4))
    >>> sorted(set(draws.tolist()))
    [1, 3]
    """
    u = mix32(jnp.asarray(rows, jnp.uint32) ^ mix32(seed ^ jnp.uint32(0x85EBCA6B)))
    uniform = ((u >> 8).astype(jnp.float32) + 0.5) * (1.0 / (1 << 24))
    index = jnp.searchsorted(cdf[:cdf.shape[0]], uniform, side="right")
    return jnp.minimum(index, n - 1).astype(jnp.int32)
