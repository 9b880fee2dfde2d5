"""Connection-weight importance of dense networks: Garson (Goh's form), Olden and Gedeon.

Every kernel takes the weight matrices of a dense network in forward order, each in
``(fan_in, fan_out)`` orientation (a layer computes ``x @ W + b``): the first has shape
``(p, h1)``, the last ``(hL, o)``. Biases and activations play no part in these measures.
The kernels are pure ``jax.numpy`` functions of a tuple (or list) of matrices: ``jax.jit``
them directly, and ``jax.vmap`` them over a leading axis to score an ensemble of networks of one
architecture at once. They check nothing beyond static shapes; validation lives in
:mod:`jaximp._nn_weights`.

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
    ``o`` each hidden unit ``h`` splits itself among the inputs in proportion to
    ``|w_ih v_ho|``, i.e. ``Q_ih = |w_ih| / sum_i' |w_i'h|`` (the output weight ``|v_ho|``
    cancels); ``S_i = sum_h Q_ih`` and the importance is ``S_i / sum_i' S_i``.

    Several hidden layers (jaximp's generalization): every hidden layer ``l`` splits each of its
    units among the units of the layer below in proportion to the absolute weights,
    ``Q_l = column_shares(W_l)``, and the shares are chained, ``R = Q_1 Q_2 ... Q_{L-1}``
    (shape (p, hL)): ``R[i, k]`` is the share of input ``i`` in last-hidden-layer unit ``k``.
    As in Goh's form, the output weights only select which last-layer units feed output
    ``o``: ``S = R M`` with ``M[k, o] = 1`` where ``v_ko != 0``, and the importance is each
    column of ``S`` divided by its sum. With one hidden layer this is exactly the formula above.

    Consequences: every output gets the same importances unless some output weights are exactly
    zero (NeuralNetTools would return NaN for a hidden unit with ``v_ho = 0``; here that unit
    is left out for output ``o``); a unit whose incoming weights are all zero contributes
    nothing; an output that no unit feeds gets all zeros. Results are non-negative, each column
    sums to 1, and are unchanged by permuting hidden units or rescaling any unit's outgoing
    weights by a nonzero factor.

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
    shares = [column_shares(w) for w in weights[:-1]]
    feeds = (weights[-1] != 0).astype(shares[0].dtype)
    s = _chain((*shares, feeds))
    total = jnp.sum(s, axis=0, keepdims=True)
    positive = total > 0
    return jnp.where(positive, s / jnp.where(positive, total, 1), 0)


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
    q = gedeon_shares(weights)
    if reduce == "mean":
        return jnp.mean(q, axis=1)
    if reduce == "sum":
        return jnp.sum(q, axis=1)
    raise ValueError(f"reduce must be 'mean' or 'sum'; got {reduce!r}.")
