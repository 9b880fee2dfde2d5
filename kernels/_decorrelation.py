"""Gram-Schmidt decorrelation of feature columns, and the correlations that trends are read with.

- :func:`gram_schmidt`: for a feature order ``o_1, ..., o_p`` the residual of each column given
  the columns before it, ``W_j = F_j - sum_{i<j} Cov(F_j, W_i) / Var(W_i) (W_i - mean W_i)``
  (``F_j`` short for ``F[:, o_j]``), so every ``W_j`` is uncorrelated with ``W_1..W_{j-1}`` and
  hence with ``F_{o_1}..F_{o_{j-1}}``; ``W_1 = F_1`` and each residual keeps its feature's mean.
- :func:`average_ranks`, :func:`pearson`, :func:`spearman`: Pearson's r, and Spearman's rho as
  Pearson's r of average ranks (tied values share the mean of their ranks, as
  ``scipy.stats.rankdata``).

All are pure ``jax.numpy`` functions of one unit (one order, one pair of columns); ``jax.vmap``
them over orders or features. Matrix products use ``Precision.HIGHEST`` (no TF32 on GPUs).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

__all__ = ["average_ranks", "gram_schmidt", "pearson", "spearman"]

_HIGHEST = jax.lax.Precision.HIGHEST


def gram_schmidt(F: Float[Array, "n p"], order: Int[Array, " p"]) -> Float[Array, "n p"]:
    """Gram-Schmidt residuals of the columns of ``F`` taken in ``order``.

    Column ``order[j]`` of the result is the part of ``F[:, order[j]]`` not linearly explained
    by the columns ``order[:j]``:
    ``W_j = F_j - sum_{i<j} Cov(F_j, W_i) / Var(W_i) (W_i - mean(W_i))``. The covariance is
    the usual inner product of the Gram-Schmidt process; the projection runs twice
    (re-orthogonalization, "CGS2"), which changes nothing in exact arithmetic but keeps the
    residuals uncorrelated to working precision for nearly collinear columns. A residual that
    is zero up to rounding (a column in the span of earlier ones) gets no weight as a
    direction to project on.

    Parameters
    ----------
    F : array of shape (n, p)
        Feature columns.
    order : int array of shape (p,)
        A permutation of ``0..p-1``; ``order[0]`` is kept as it is.

    Returns
    -------
    array of shape (n, p)
        The residuals, in the columns of ``F`` (not in ``order``); each has its feature's mean.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> F = jnp.asarray(np.random.default_rng(0).normal(size=(50, 3)))
    >>> W = gram_schmidt(F, jnp.array([2, 0, 1]))
    >>> bool(jnp.allclose(W[:, 2], F[:, 2]))
    True
    >>> C = jnp.corrcoef(W.T)
    >>> bool(jnp.abs(C[0, 2]) < 1e-5 and jnp.abs(C[1, 0]) < 1e-5 and jnp.abs(C[1, 2]) < 1e-5)
    True
    """
    n, p = F.shape
    ordered = F[:, order]
    mean = ordered.mean(axis=0)
    Z = ordered - mean
    # a residual whose sum of squares is below this share of its column's is rounding noise
    eps = jnp.finfo(Z.dtype).eps
    floor = (jnp.sum(Z * Z, axis=0) + jnp.finfo(Z.dtype).tiny) * (100 * eps) ** 2

    def project_out(W, scale, v):
        return v - jnp.matmul(W, jnp.matmul(v, W, precision=_HIGHEST) * scale,
                              precision=_HIGHEST)

    def step(j, W):
        ss = jnp.sum(W * W, axis=0)
        scale = jnp.where((jnp.arange(p) < j) & (ss > floor), 1.0 / jnp.where(ss > 0, ss, 1.0),
                          0.0)
        w = project_out(W, scale, project_out(W, scale, Z[:, j]))
        return W.at[:, j].set(w)

    W = jax.lax.fori_loop(0, p, step, jnp.zeros_like(Z))
    return jnp.zeros_like(F).at[:, order].set(W + mean)


def average_ranks(x: Float[Array, " n"]) -> Float[Array, " n"]:
    """Ranks 1..n of ``x``; tied values share the mean of their ranks (``rankdata``'s
    ``"average"``).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> average_ranks(jnp.array([3.0, 1.0, 3.0, 2.0]))
    Array([3.5, 1. , 3.5, 2. ], dtype=float32)
    """
    s = jnp.sort(x)
    below = jnp.searchsorted(s, x, side="left")
    up_to = jnp.searchsorted(s, x, side="right")
    return (below + up_to + 1).astype(jnp.result_type(x, jnp.float32)) / 2


def pearson(x: Float[Array, " n"], y: Float[Array, " n"]) -> Float[Array, ""]:
    """Pearson's correlation ``Cov(x, y) / (sd(x) sd(y))``; NaN when either is constant.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> float(pearson(jnp.array([1.0, 2.0, 3.0]), jnp.array([2.0, 4.0, 7.0])))
    0.99339...
    """
    xc = x - x.mean()
    yc = y - y.mean()
    r = jnp.sum(xc * yc) / jnp.sqrt(jnp.sum(xc * xc) * jnp.sum(yc * yc))
    # a constant's float32 mean can miss its value, leaving tiny residuals instead of zeros
    constant = (jnp.max(x) == jnp.min(x)) | (jnp.max(y) == jnp.min(y))
    return jnp.where(constant, jnp.nan, r)


def spearman(x: Float[Array, " n"], y: Float[Array, " n"]) -> Float[Array, ""]:
    """Spearman's rank correlation: Pearson's r of the average ranks.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> float(spearman(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 8.0, 27.0])))
    1.0
    """
    return pearson(average_ranks(x), average_ranks(y))
