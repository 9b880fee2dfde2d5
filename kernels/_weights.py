"""Connection-weight importance of dense networks: Garson (Goh's form), Olden and Gedeon.

Every kernel takes the weight matrices of a dense network in forward order, each in
``(fan_in, fan_out)`` orientation (a layer computes ``x @ W + b``): the first has shape
``(p, h1)``, the last ``(hL, o)``. Biases and activations play no part in these measures.
The kernels are pure ``jax.numpy`` functions of a tuple (or list) of matrices: ``jax.jit``
them directly, and ``jax.vmap`` them over a leading axis to score an ensemble of networks of one
architecture at once. They check nothing beyond static shapes; validation lives in
:mod:`jaximp.methods._nn_weights`.

Matrix products use ``Precision.HIGHEST`` so float32 results agree with a float64 reference on
accelerators too (where the default float32 matmul may round through TF32 or bfloat16).
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

__all__ = ["column_shares", "garson", "gedeon", "gedeon_shares", "olden"]

_HIGHEST = jax.lax.Precision.HIGHEST


def _chain(matrices: Sequence[Float[Array, "a b"]]) -> Float[Array, "a c"]:
    """Product of matrices in order, evaluated in the cheapest order for their static shapes."""
    if len(matrices) == 1:
        return matrices[0]
    return jnp.linalg.multi_dot(list(matrices), precision=_HIGHEST)


def _check_chain(weights: Sequence[Float[Array, "a b"]], minimum: int, name: str) -> None:
    """Static shape check: enough 2-D matrices whose shapes chain."""
    if len(weights) < minimum:
        raise ValueError(
            f"{name} needs at least {minimum} weight matrices; got {len(weights)}."
        )
    for index, w in enumerate(weights):
        if jnp.ndim(w) != 2:
            raise ValueError(
                f"weights[{index}] must be a 2-D (fan_in, fan_out) matrix; got shape "
                f"{jnp.shape(w)}."
            )
        if index and jnp.shape(w)[0] != jnp.shape(weights[index - 1])[1]:
            raise ValueError(
                f"weights[{index}] has shape {jnp.shape(w)} but weights[{index - 1}] outputs "
                f"{jnp.shape(weights[index - 1])[1]} units."
            )


def column_shares(w: Float[Array, "fan_in fan_out"]) -> Float[Array, "fan_in fan_out"]:
    """Each unit's absolute incoming weights as shares of their sum: ``|w_ij| / sum_i' |w_i'j|``.

    Every column sums to 1, except a column of zeros (a unit with no incoming weights), which
    stays zero instead of becoming 0/0.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(column_shares(jnp.array([[3.0, 0.0], [-1.0, 0.0]])))
    [[0.75 0.  ]
     [0.25 0.  ]]
    """
    a = jnp.abs(w)
    total = jnp.sum(a, axis=0, keepdims=True)
    positive = total > 0
    return jnp.where(positive, a / jnp.where(positive, total, 1), 0)


def olden(weights: Sequence[Float[Array, "fan_in fan_out"]]) -> Float[Array, "p o"]:
    """Olden's connection-weight importance: the signed product ``W_1 W_2 ... W_L``.

    Entry ``(i, o)`` sums, over every path from input ``i`` to output ``o``, the product of the
    raw weights along the path (Olden, Joy & Death 2004); biases are dropped. For one hidden
    layer this is ``sum_h w_ih v_ho``, R's ``NeuralNetTools::olden()``.

    Parameters
    ----------
    weights : sequence of arrays, shapes (p, h1), (h1, h2), ..., (hL, o)
        The network's weight matrices in forward order, ``(fan_in, fan_out)`` orientation.

    Returns
    -------
    Array of shape (p, o)
        Signed, unnormalized importance of each input for each output.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> w1 = jnp.array([[1.49, -0.19], [0.16, -0.16]])
    >>> w2 = jnp.array([[-0.52], [0.81]])
    >>> print(olden((w1, w2)).round(4))
    [[-0.9287]
     [-0.2128]]
    """
    _check_chain(weights, 1, "olden")
    return _chain(tuple(weights))


def garson(weights: Sequence[Float[Array, "fan_in fan_out"]]) -> Float[Array, "p o"]:
    """Garson's relative importance in Goh's form, generalized to several hidden layers.

    One hidden layer (Garson 1991; Goh 1995; R's ``NeuralNetTools::garson()``): for output
    ``o`` each hidden unit ``h`` is split among the inputs in proportion to ``|w_ih v_ho|``, i.e.
    ``Q_ih = |w_ih| / sum_i' |w_i'h|`` (the output weight ``|v_ho|`` cancels);
    ``S_i = sum_h Q_ih`` and the importance is ``S_i / sum_i' S_i``.

    Several hidden layers (jaximp's generalization): Goh's product of absolute weights along a
    path becomes the sum over all paths from input ``i`` to unit ``k`` of the last hidden layer
    of the product of absolute weights along the path, ``T = |W_1| |W_2| ... |W_{L-1}|``
    (shape (p, hL)). Each unit ``k`` is split among the inputs in proportion to its column,
    ``Q_ik = T_ik / sum_i' T_i'k``, and, as in Goh's form, the output weights only decide which
    units feed output ``o``: ``S_io = sum of Q_ik over the units k with v_ko != 0``, and the
    importance is ``S_io / sum_i' S_i'o``. With one hidden layer ``T = |W_1|`` and this is exactly
    the formula above.

    Properties: non-negative; each column sums to 1; unchanged by permuting hidden units, by
    rescaling a last-hidden-layer unit's outgoing weights by any nonzero factor, and by the
    rescaling that leaves a ReLU network's function unchanged (a hidden unit's incoming weights
    times ``c > 0``, its outgoing weights divided by ``c``). Every output gets the same
    importances unless some output weights are exactly zero: NeuralNetTools returns NaN for a
    hidden unit with ``v_ho = 0``; here that unit is left out for output ``o``. A unit that no
    input reaches contributes nothing, and an output that no unit feeds gets all zeros.

    Parameters
    ----------
    weights : sequence of arrays, shapes (p, h1), ..., (hL, o)
        At least two weight matrices (one hidden layer) in forward order, ``(fan_in, fan_out)``.

    Returns
    -------
    Array of shape (p, o)
        Relative importance of each input for each output; columns sum to 1.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> w1 = jnp.array([[1.49, -0.19], [0.16, -0.16]])
    >>> w2 = jnp.array([[-0.52], [0.81]])
    >>> print(garson((w1, w2)).round(4))
    [[0.7229]
     [0.2771]]
    """
    _check_chain(weights, 2, "garson")
    # Each |W| is divided by a positive scalar (its mean column sum) so that the product of many
    # wide layers stays in floating-point range; scalars cancel in the column normalization.
    scaled = [_unit_scale(jnp.abs(w)) for w in weights[:-1]]
    # Column sums of T = |W_1| ... |W_{L-1}| by a cheap vector-matrix chain, so that
    # S = T diag(1 / colsum) M is evaluated right to left without forming the (p, hL) matrix T.
    colsum = jnp.sum(scaled[0], axis=0)
    for a in scaled[1:]:
        colsum = jnp.matmul(colsum, a, precision=_HIGHEST)
    positive = colsum > 0
    inverse = jnp.where(positive, 1 / jnp.where(positive, colsum, 1), 0)
    feeds = (weights[-1] != 0).astype(inverse.dtype) * inverse[:, None]
    return column_shares(_chain((*scaled, feeds)))


def _unit_scale(a: Float[Array, "a b"]) -> Float[Array, "a b"]:
    """``a`` divided by its mean column sum (left alone if that is zero)."""
    mean = jnp.sum(a) / a.shape[1]
    return a / jnp.where(mean > 0, mean, 1)


def gedeon_shares(weights: Sequence[Float[Array, "fan_in fan_out"]]) -> Float[Array, "p h"]:
    """Gedeon's contribution of each input to each unit of the second weight layer.

    ``P_ij = |w_ij| / sum_i' |w_i'j|`` for the first layer and ``P_jk`` likewise for the second,
    carried through by ``Q_ik = sum_j P_ij P_jk`` (Gedeon 1997). The units ``k`` are those of the
    second hidden layer, or the outputs for a network with one hidden layer. Only the first two
    weight matrices are read. Columns sum to 1 (except for units with all-zero weights).

    Parameters
    ----------
    weights : sequence of arrays, shapes (p, h1), (h1, h2), ...
        At least two weight matrices in forward order, ``(fan_in, fan_out)``.

    Returns
    -------
    Array of shape (p, h2)
        ``Q[i, k]``, the share of input ``i`` in unit ``k`` of the second layer.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> w1 = jnp.array([[1.0, 0.0], [1.0, 2.0]])
    >>> w2 = jnp.array([[1.0], [3.0]])
    >>> print(gedeon_shares((w1, w2)))
    [[0.125]
     [0.875]]
    """
    _check_chain(weights, 2, "gedeon")
    return jnp.matmul(column_shares(weights[0]), column_shares(weights[1]), precision=_HIGHEST)


def gedeon(
    weights: Sequence[Float[Array, "fan_in fan_out"]], reduce: str = "mean"
) -> Float[Array, "p"]:
    """Gedeon's input importance: :func:`gedeon_shares` summed or averaged over second-layer units.

    Parameters
    ----------
    weights : sequence of arrays, shapes (p, h1), (h1, h2), ...
        At least two weight matrices in forward order, ``(fan_in, fan_out)``.
    reduce : {"mean", "sum"}, default "mean"
        How to combine the units of the second layer (static). ``"mean"`` gives shares that
        sum to 1; ``"sum"`` gives Gedeon's total, which sums to the number of units.

    Returns
    -------
    Array of shape (p,)

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> w1 = jnp.array([[1.0, 0.0], [1.0, 2.0]])
    >>> w2 = jnp.array([[1.0, 1.0], [3.0, 1.0]])
    >>> print(gedeon((w1, w2)))
    [0.1875 0.8125]
    """
    _check_chain(weights, 2, "gedeon")
    if reduce not in ("mean", "sum"):
        raise ValueError(f"reduce must be 'mean' or 'sum'; got {reduce!r}.")
    # sum_k Q_ik = sum_j P_ij (sum_k P_jk): reduce the second layer first, a matrix-vector product
    second = column_shares(weights[1])
    combined = jnp.mean(second, axis=1) if reduce == "mean" else jnp.sum(second, axis=1)
    return jnp.matmul(column_shares(weights[0]), combined, precision=_HIGHEST)
