"""Counter-based random row indices: permutations and draws computed row by row from a seed.

The engine never stores an (items, n) index table: a chunk of rows asks for the source row of
each of its rows, and gets the same answer whatever the chunking. A permutation of ``0..n-1`` is
a keyed Feistel network on a near-square mixed-radix domain ``a * b >= n``, restricted to
``[0, n)`` by cycle walking (values that land outside are pushed through the network again,
which stays a bijection of ``[0, n)``). Uniform draws with replacement hash the row number.
Every function is written for arrays of any shape, with ``xp`` left to ``jax.numpy``.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, UInt32

__all__ = ["feistel_permutation", "feistel_radices", "mix32", "seed_of", "uniform_rows", "weighted_rows"]

# rounds of a keyed hash; even, so the radices return to (a, b). Four (Luby-Rackoff's minimum)
# left a trace of order: twice a uniform permutation's count of i -> i + 1 successions at
# n = 1,000, 17 times at radices (25, 400); eight match a uniform permutation's statistics
_ROUNDS = 8
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


def seed_of(key_bits: UInt32[Array, "2"], stream: Int[Array, " k"]) -> UInt32[Array, ""]:
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


def _radices(n: Int[Array, ""]) -> tuple[Int[Array, ""], Int[Array, ""]]:
    """Two radices with ``a * b >= n`` for the Feistel domain: an exact factorization
    ``a * b == n`` with ``16 <= a <= b <= 16 a`` when ``n`` has one (no spare values, so no
    cycle walking), else the near-square ``a = ceil(sqrt(n))``, ``b = ceil(n / a)``, whose
    spare values (fewer than ``a``) are walked back into ``0..n-1``. A narrow digit would
    leave the network too few round values to mix: at ``a = 1`` (a prime ``n``) every
    permutation was a rotation."""
    n = jnp.maximum(jnp.asarray(n, jnp.int32), 1)
    root = jnp.maximum(jnp.floor(jnp.sqrt(n.astype(jnp.float32))).astype(jnp.int32), 1)
    # float32's sqrt may round either way; the comparisons divide, as squares near 2**31
    # overflow int32
    root = jnp.where(root > n // root, root - 1, root)
    root = jnp.where(root + 1 <= n // (root + 1), root + 1, root)
    lowest = _lowest_radix(root, n)

    def not_found(a):
        return (a >= lowest) & (n % jnp.maximum(a, 1) != 0)

    divisor = jax.lax.while_loop(not_found, lambda a: a - 1, root)
    exact = divisor >= lowest
    near = jnp.where(root * root < n, root + 1, root)
    a = jnp.where(exact, divisor, near)
    b = n // a + (n % a != 0)
    return a.astype(jnp.uint32), b.astype(jnp.uint32)


@functools.lru_cache(maxsize=64)  # asked again for every call on the same n
def feistel_radices(n: int) -> tuple[int, int]:
    """The radices ``(a, b)`` of :func:`feistel_permutation`'s domain, computed on the host.

    The same values as the device computation (tested). Passing them as ``radices`` spares
    every call on the device a sequential search for a divisor, up to ``3 sqrt(n) / 4`` loop
    steps (66 at n = 100,000), which costs more than the permutation itself on CPU.

    Examples
    --------
    >>> feistel_radices(100_000), feistel_radices(10_007)
    ((250, 400), (101, 100))
    """
    n = max(int(n), 1)
    root = math.isqrt(n)
    for a in range(root, _lowest_radix(root, n) - 1, -1):
        if n % a == 0:
            return a, n // a
    a = root + 1 if root * root < n else root
    return a, -(-n // a)


def _lowest_radix(root, n):
    """The smallest radix ``a`` of an exact factorization: at least 16 (narrower digits
    keep a trace of order: 1.06-1.09 successions i -> i + 1 a permutation at a = 6 to 8,
    where a uniform one has 1), and ``n / a <= 16 a`` (``4 a >= ceil(sqrt(n))``), from
    ``root = isqrt(n)``; for host ints or device arrays. Near-square domains walk their
    spare values back, a pass of the whole network each, so an exact one is worth taking."""
    ceil_root = root + (root * root < n)
    quarter = (ceil_root + 3) // 4
    return max(quarter, 16) if isinstance(quarter, int) else jnp.maximum(quarter, 16)


def _feistel(seed, x, a, b):
    """A keyed bijection of ``0..a*b-1``: Feistel rounds on the mixed-radix digits
    ``x = left * b + right`` with addition modulo the digit's radix (sizes swap each round,
    so an even number of rounds returns to (a, b))."""
    # On a CPU, the vector units have no integer division: a float64 quotient (and a 64-bit
    # high product, _mulhi32) give the same digits 1.7x faster (5.1 million rows: 6.5 ms
    # against 11.0)
    cpu = jax.default_backend() == "cpu"
    left, right = _divmod_by_float(x, b) if cpu else (x // b, x % b)
    size_left, size_right = a, b
    for r in range(_ROUNDS):
        f = mix32(right ^ (seed + jnp.uint32(((r + 1) * _GOLDEN) & 0xFFFFFFFF)))
        # f scaled into 0..size_left-1 by a multiply-shift, then an addition modulo size_left
        total = left + _mulhi32(f, size_left)
        left, right = right, jnp.where(total >= size_left, total - size_left, total)
        size_left, size_right = size_right, size_left
    return left * b + right


def feistel_permutation(
    seed: UInt32[Array, ""], rows: Int[Array, "..."], n: Int[Array, ""], radices=None
) -> Int[Array, "..."]:
    """Position ``pi(i)`` of each row ``i`` (in ``0..n-1``) under the seeded permutation
    ``pi`` of ``0..n-1``.

    Each ``i`` is mapped independently, so any subset of rows can be asked for. The network
    runs on a mixed-radix domain ``a * b >= n`` (exactly ``n`` when ``n`` factors into two
    numbers of at least 16 within a factor 16 of each other; otherwise fewer than ``sqrt(n)``
    spare values, walked back into ``0..n-1``). ``radices``: ``feistel_radices(n)`` computed
    on the host, which spares the device a divisor search (default: searched on the device).
    Up to ``n = 256`` the permutation is instead the ranks of ``n`` hashed keys, uniform over
    all ``n!`` orders (up to ties of 32-bit keys, broken by row): digits that small leave a
    Feistel network too few round values to reach them all.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> rows = jnp.arange(10)
    >>> p = feistel_permutation(jnp.uint32(7), rows, jnp.int32(10))
    >>> sorted(p.tolist()) == list(range(10))
    True
    """
    if radices is None:
        a, b = _radices(n)
    else:  # from feistel_radices(n)
        a, b = (jnp.asarray(r, jnp.uint32) for r in radices)
    seed = mix32(seed)
    limit = jnp.asarray(n, jnp.uint32)
    rows = jnp.asarray(rows, jnp.uint32)

    def network(rows):
        x = _feistel(seed, rows, a, b)

        def walk(state):
            x, _ = state
            outside = x >= limit
            return jnp.where(outside, _feistel(seed, x, a, b), x), outside.any()

        return jax.lax.while_loop(lambda s: s[1], walk, (x, (x >= limit).any()))[0]

    x = jax.lax.cond(limit <= _SORTED_UP_TO, lambda r: _ranked(seed, r, limit), network, rows)
    return x.astype(jnp.int32)


_SORTED_UP_TO = 256  # permutations of at most this many rows rank hashed keys


def _ranked(seed, rows, n):
    """Ranks of the keys ``mix32(mix32(i) ^ seed)`` of ``i < n`` among them (``n`` at most
    ``_SORTED_UP_TO``; the keys of ``i >= n`` sort after, as do ties, in order of ``i``)."""
    i = jnp.arange(_SORTED_UP_TO, dtype=jnp.uint32)
    keys = jnp.where(i < n, mix32(mix32(i) ^ seed), jnp.uint32(0xFFFFFFFF))
    order = jnp.argsort(keys, stable=True)  # order[r]: the row of rank r
    ranks = jnp.zeros(_SORTED_UP_TO, jnp.uint32).at[order].set(i)
    return ranks[jnp.minimum(rows, _SORTED_UP_TO - 1)]


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


def _divmod_by_float(x, b):
    """``x // b`` and ``x % b`` of uint32 arrays through a float64 quotient: exact while the
    quotient's rounding (below ``x / b * 2**-53``) stays under the gap ``1 / b`` to the next
    integer, which holds for the Feistel domain (quotients below 2**16, ``b`` below 2**18)."""
    with jax.enable_x64(True):
        quotient = jnp.floor(x.astype(jnp.float64) / b.astype(jnp.float64)).astype(jnp.uint32)
    return quotient, x - quotient * b


def _mulhi32(a, b):
    """The high 32 bits of the 64-bit product of two uint32 arrays: one 64-bit product on a
    CPU, 16-bit limbs elsewhere (accelerators emulate 64-bit integers)."""
    if jax.default_backend() == "cpu":
        with jax.enable_x64(True):
            product = a.astype(jnp.uint64) * jnp.asarray(b, jnp.uint32).astype(jnp.uint64)
            return (product >> 32).astype(jnp.uint32)
    low16 = jnp.uint32(0xFFFF)
    a_hi, a_lo, b_hi, b_lo = a >> 16, a & low16, b >> 16, b & low16
    lo_lo, hi_lo, lo_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi
    carry = ((lo_lo >> 16) + (hi_lo & low16) + (lo_hi & low16)) >> 16
    return a_hi * b_hi + (hi_lo >> 16) + (lo_hi >> 16) + carry


def weighted_rows(
    seed: UInt32[Array, ""], rows: Int[Array, "..."], cdf: Float[Array, " n"], n: Int[Array, ""]
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
