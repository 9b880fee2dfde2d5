"""Losses and scores of predictions against targets: pure ``jax.numpy`` kernels.

Each kernel scores ONE set of predictions, ``(y, prediction, weights) -> scalar``; batch it with
``jax.vmap`` over a leading axis of predictions (repeats, features, permuted copies) and
``jax.jit`` it directly. ``weights`` are case weights (``None``: all 1), so every mean below is a
weighted mean ``sum_i w_i t_i / sum_i w_i``. The kernels check static shapes only; validation
lives in :mod:`jaximp.methods._permutation`.

Regression kernels take one output column, ``y`` and ``prediction`` of shape (n,); vmap them over
the output axis for several outputs. Classification kernels take integer class codes ``y`` in
``0 .. k-1`` and either probabilities of shape (n, o) (one column per class, or a single column
holding the probability of class 1 of a binary problem) or, where noted, hard labels of shape
(n,).

Scores (R^2, accuracy, AUC) are returned as scores; an importance method turns them into losses
(``1 - score``) so that importance is positive.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, Real

__all__ = [
    "absolute_percentage_error",
    "accuracy_score",
    "binary_roc_auc",
    "brier_score",
    "brier_terms",
    "cross_entropy_terms",
    "gamma_unit_deviance",
    "log_loss",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_cross_entropy",
    "mean_gamma_deviance",
    "mean_poisson_deviance",
    "mean_squared_error",
    "mean_squared_log_error",
    "median_absolute_error",
    "percent_bias",
    "poisson_unit_deviance",
    "r2_score",
    "relative_absolute_error",
    "relative_squared_error",
    "roc_auc_score",
    "root_mean_squared_error",
    "root_mean_squared_log_error",
    "root_relative_squared_error",
    "squared_log_error",
    "symmetric_mean_absolute_percentage_error",
    "weighted_mean",
]


def _weights(weights, like: Array) -> Float[Array, "n"]:
    if weights is None:
        return jnp.ones(like.shape[0], dtype=jnp.result_type(like.dtype, jnp.float32))
    return jnp.asarray(weights)


def _check_rows(name: str, *arrays) -> None:
    rows = [jnp.shape(a)[0] for a in arrays if a is not None]
    if len(set(rows)) > 1:
        raise ValueError(f"{name}: y, prediction and weights must have the same rows; got {rows}.")


def weighted_mean(
    values: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Weighted mean ``sum_i w_i v_i / sum_i w_i`` (plain mean when ``weights`` is None); a
    row of weight 0 is left out, whatever its value (an infinite term included).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(weighted_mean(jnp.array([1.0, 3.0]), jnp.array([3.0, 1.0])))
    1.5
    """
    values = jnp.asarray(values)
    w = _weights(weights, values)
    return jnp.sum(jnp.where(w != 0, w * values, 0.0)) / jnp.sum(w)


def mean_squared_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Mean squared error ``mean_i (y_i - f_i)^2``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(mean_squared_error(jnp.array([0.0, 1.0, 2.0]), jnp.array([0.0, 2.0, 4.0])))
    1.6666666
    """
    _check_rows("mean_squared_error", y, prediction, weights)
    return weighted_mean(jnp.square(jnp.asarray(y) - jnp.asarray(prediction)), weights)


def root_mean_squared_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Square root of :func:`mean_squared_error`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(root_mean_squared_error(jnp.array([0.0, 0.0]), jnp.array([3.0, -3.0])))
    3.0
    """
    return jnp.sqrt(mean_squared_error(y, prediction, weights))


def mean_absolute_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Mean absolute error ``mean_i |y_i - f_i|``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(mean_absolute_error(jnp.array([0.0, 1.0]), jnp.array([1.0, -1.0])))
    1.5
    """
    _check_rows("mean_absolute_error", y, prediction, weights)
    return weighted_mean(jnp.abs(jnp.asarray(y) - jnp.asarray(prediction)), weights)


def absolute_percentage_error(y, prediction, xp=jnp):
    """Per-row ``|y - f| / max(|y|, eps)``, elementwise and broadcast, ``eps`` float64's
    machine epsilon (scikit-learn's). ``xp`` is :mod:`jax.numpy` or :mod:`numpy`.

    Examples
    --------
    >>> import numpy as np
    >>> print(absolute_percentage_error(np.array([2.0, 0.0]), np.array([1.0, 0.0]), np))
    [0.5 0. ]
    """
    return xp.abs(y - prediction) / xp.maximum(xp.abs(y), float(np.finfo(np.float64).eps))


def brier_terms(proba, codes, axis: int = -1, xp=jnp):
    """Per-row Brier scores ``sum_k (p_k - [y = k])^2`` of class probabilities ``proba``
    (classes along ``axis``) against class codes ``codes`` (``proba``'s shape without that
    axis, or broadcast to it), halved for two classes as scikit-learn's. ``xp`` is
    :mod:`jax.numpy` or :mod:`numpy`.

    Examples
    --------
    >>> import numpy as np
    >>> print(brier_terms(np.array([[0.2, 0.8], [0.6, 0.4]]), np.array([1, 1]), 1, np))
    [0.04 0.36]
    """
    k = proba.shape[axis]
    shape = [1] * proba.ndim
    shape[axis] = k
    hit = xp.arange(k).reshape(shape) == xp.expand_dims(codes, axis)
    gap = proba - hit.astype(proba.dtype)
    return (gap * gap).sum(axis=axis) * (0.5 if k == 2 else 1.0)


def mean_absolute_percentage_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Mean absolute percentage error ``mean_i |y_i - f_i| / max(|y_i|, eps)`` as a fraction
    (not times 100), ``eps`` float64's machine epsilon, as
    :func:`sklearn.metrics.mean_absolute_percentage_error`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(mean_absolute_percentage_error(jnp.array([1.0, -4.0]), jnp.array([1.5, -3.0])))
    0.375
    """
    _check_rows("mean_absolute_percentage_error", y, prediction, weights)
    return weighted_mean(absolute_percentage_error(jnp.asarray(y), jnp.asarray(prediction)),
                         weights)


def mean_squared_log_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Mean squared logarithmic error ``mean_i (log(1 + y_i) - log(1 + f_i))^2``, as
    :func:`sklearn.metrics.mean_squared_log_error`; NaN where a prediction is at or below -1.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(mean_squared_log_error(jnp.array([0.0, 3.0]), jnp.array([0.0, 3.0])))
    0.0
    """
    _check_rows("mean_squared_log_error", y, prediction, weights)
    return weighted_mean(squared_log_error(jnp.asarray(y), jnp.asarray(prediction)), weights)


def squared_log_error(y, prediction, xp=jnp):
    """Per-row ``(log(1 + f) - log(1 + y))^2``, elementwise and broadcast, computed as
    ``log1p((f - y) / (1 + y))^2`` so that large close values keep their digits; NaN where
    ``f <= -1``. ``xp`` is :mod:`jax.numpy` or :mod:`numpy`.

    Examples
    --------
    >>> import numpy as np
    >>> print(squared_log_error(np.array([0.0]), np.array([np.e - 1]), np))
    [1.]
    """
    ratio = (prediction - y) / (1 + y)
    gap = xp.log1p(xp.where(prediction > -1, ratio, xp.nan))
    return gap * gap


def root_mean_squared_log_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Square root of :func:`mean_squared_log_error`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(root_mean_squared_log_error(jnp.array([0.0]), jnp.array([jnp.e - 1])))
    1.0
    """
    return jnp.sqrt(mean_squared_log_error(y, prediction, weights))


def median_absolute_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Median absolute error ``median_i |y_i - f_i|``, weighted: the error at which the
    cumulative weight of the sorted errors passes half the total, or the mean of the two
    errors around it where it reaches half exactly (the rule of
    :func:`sklearn.metrics.median_absolute_error`, so that equal weights give the median).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> y = jnp.array([0.0, 0.0, 0.0, 0.0])
    >>> print(median_absolute_error(y, jnp.array([1.0, -2.0, 3.0, 9.0])))
    2.5
    >>> print(median_absolute_error(y, jnp.array([1.0, -2.0, 3.0, 9.0]),
    ...                             jnp.array([1.0, 1.0, 3.0, 1.0])))
    3.0
    """
    _check_rows("median_absolute_error", y, prediction, weights)
    errors = jnp.abs(jnp.asarray(y) - jnp.asarray(prediction))
    w = _weights(weights, errors)
    order = jnp.argsort(errors)
    errors, cumulative = errors[order], jnp.cumsum(w[order])
    half = 0.5 * cumulative[-1]
    tolerance = 1e-12 * cumulative[-1]  # half reached exactly, up to the sums' rounding
    lower = jnp.minimum(jnp.searchsorted(cumulative, half - tolerance), errors.size - 1)
    exact = jnp.abs(cumulative[lower] - half) <= tolerance
    # the next error with weight: zero weights between the two do not count
    upper = jnp.minimum(jnp.searchsorted(cumulative, cumulative[lower], side="right"),
                        errors.size - 1)
    return jnp.where(exact, 0.5 * (errors[lower] + errors[upper]), errors[lower])


def mean_poisson_deviance(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Mean Poisson deviance ``mean_i 2 (y_i log(y_i / f_i) - y_i + f_i)`` of predicted means
    ``f > 0`` (``2 f_i`` where ``y_i = 0``), as :func:`sklearn.metrics.mean_poisson_deviance`;
    NaN where a prediction is negative.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(mean_poisson_deviance(jnp.array([0.0, 2.0]), jnp.array([1.0, 2.0])))
    1.0
    """
    _check_rows("mean_poisson_deviance", y, prediction, weights)
    return weighted_mean(poisson_unit_deviance(jnp.asarray(y), jnp.asarray(prediction)),
                         weights)


def mean_gamma_deviance(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Mean gamma deviance ``mean_i 2 (log(f_i / y_i) + y_i / f_i - 1)`` of predicted means
    ``f > 0`` against targets ``y > 0``, as :func:`sklearn.metrics.mean_gamma_deviance`; NaN
    where a prediction is not positive.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(mean_gamma_deviance(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.0])))
    0.0
    """
    _check_rows("mean_gamma_deviance", y, prediction, weights)
    return weighted_mean(gamma_unit_deviance(jnp.asarray(y), jnp.asarray(prediction)),
                         weights)


def _excess_over_log1p(t, xp):
    """``t - log(1 + t)`` without its cancellation near ``t = 0``: a float32 Poisson deviance
    of counts near 1e6 computed as ``y log(y / f) - y + f`` lost 0.4% to it. The series
    (to ``t^8``) is used where its first term left out, ``t^9 / 9``, is below the dtype's
    rounding: ``|t| < 0.1`` in float32, ``|t| < 0.006`` in float64."""
    series = t * t * (1 / 2 - t * (1 / 3 - t * (1 / 4 - t * (1 / 5 - t * (1 / 6 - t * (
        1 / 7 - t / 8))))))
    limit = 0.1 if np.finfo(t.dtype).bits <= 32 else 0.006
    return xp.where(xp.abs(t) < limit, series, t - xp.log1p(t))


def poisson_unit_deviance(y, mean, xp=jnp):
    """Per-row Poisson unit deviances ``2 (y log(y / f) - y + f)`` (``2 f`` at ``y = 0``),
    elementwise and broadcast, computed as ``2 y g((f - y) / y)`` with ``g(t) = t - log(1 + t)``
    so that they keep their digits where ``f`` is close to a large ``y``; NaN where ``f < 0``.
    ``xp`` is :mod:`jax.numpy` or :mod:`numpy`.

    Examples
    --------
    >>> import numpy as np
    >>> print(poisson_unit_deviance(np.array([0.0, 2.0]), np.array([1.0, 2.0]), np))
    [2. 0.]
    """
    positive = y > 0
    safe = xp.where(positive, y, 1)
    counted = 2 * safe * _excess_over_log1p((mean - safe) / safe, xp)
    return xp.where(mean < 0, xp.nan, xp.where(positive, counted, 2 * mean))


def gamma_unit_deviance(y, mean, xp=jnp):
    """Per-row gamma unit deviances ``2 (log(f / y) + y / f - 1)``, elementwise and
    broadcast, computed as ``2 g((y - f) / f)`` with ``g(t) = t - log(1 + t)``; NaN where
    ``f <= 0``. ``xp`` is :mod:`jax.numpy` or :mod:`numpy`.

    Examples
    --------
    >>> import numpy as np
    >>> print(gamma_unit_deviance(np.array([1.0, 2.0]), np.array([1.0, 1.0]), np))
    [0.         0.61370564]
    """
    safe = xp.where(mean > 0, mean, 1)
    return xp.where(mean > 0, 2 * _excess_over_log1p((y - safe) / safe, xp), xp.nan)


def cross_entropy_terms(y, proba, xp=jnp):
    """Per-row binary cross-entropy ``-(y log p + (1 - y) log(1 - p))`` of the probability
    ``proba`` of class 1 against targets ``y`` in [0, 1] (class indicators or probabilities),
    with ``p`` clipped to ``[eps, 1 - eps]`` (float64's machine epsilon, as :func:`log_loss`).
    A term whose factor ``y`` or ``1 - y`` is 0 is 0, as R's hstats computes it."""
    eps = float(np.finfo(np.float64).eps)
    p = xp.clip(proba, eps, 1.0 - eps)
    return -(xp.where(y == 0, 0.0, y * xp.log(p))
             + xp.where(y == 1, 0.0, (1.0 - y) * xp.log(1.0 - p)))


def mean_cross_entropy(
    y: Float[Array, "n"], proba: Float[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Mean binary cross-entropy (:func:`cross_entropy_terms`) of one probability column
    against targets in [0, 1]: :func:`log_loss` of 0/1 targets, and of soft labels too.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(round(float(mean_cross_entropy(jnp.array([0.2, 1.0]), jnp.array([0.5, 0.8]))), 5))
    0.45815
    """
    _check_rows("mean_cross_entropy", y, proba, weights)
    return weighted_mean(cross_entropy_terms(jnp.asarray(y), jnp.asarray(proba)), weights)


def r2_score(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Coefficient of determination ``1 - sum w (y - f)^2 / sum w (y - ybar_w)^2``.

    A score (higher is better), as :func:`sklearn.metrics.r2_score`; ``-inf`` or NaN when ``y``
    is constant.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> y = jnp.array([1.0, 2.0, 3.0])
    >>> print(r2_score(y, y), r2_score(y, jnp.full(3, 2.0)))
    1.0 0.0
    """
    _check_rows("r2_score", y, prediction, weights)
    y = jnp.asarray(y)
    w = _weights(weights, y)
    center = jnp.sum(w * y) / jnp.sum(w)
    residual = jnp.sum(w * jnp.square(y - jnp.asarray(prediction)))
    total = jnp.sum(w * jnp.square(y - center))
    return 1.0 - residual / total


def relative_squared_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Relative squared error ``sum w (y - f)^2 / sum w (y - ybar_w)^2`` (``1 - R^2``), as the
    R package Metrics' ``rse``; ``inf`` or NaN when ``y`` is constant.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(relative_squared_error(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 2.0, 1.0])))
    2.0
    """
    return 1.0 - r2_score(y, prediction, weights)


def root_relative_squared_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """The square root of :func:`relative_squared_error`, as Metrics' ``rrse``."""
    return jnp.sqrt(relative_squared_error(y, prediction, weights))


def relative_absolute_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Relative absolute error ``sum w |y - f| / sum w |y - ybar_w|``, as Metrics' ``rae``
    (deviations from the mean of ``y``, not its median).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(relative_absolute_error(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 2.0, 1.0])))
    1.0
    """
    _check_rows("relative_absolute_error", y, prediction, weights)
    y = jnp.asarray(y)
    w = _weights(weights, y)
    center = jnp.sum(w * y) / jnp.sum(w)
    return (jnp.sum(w * jnp.abs(y - jnp.asarray(prediction)))
            / jnp.sum(w * jnp.abs(y - center)))


def symmetric_mean_absolute_percentage_error(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """``mean_i 2 |y_i - f_i| / (|y_i| + |f_i|)`` as a fraction, as Metrics' ``smape`` (NaN
    where a target and its prediction are both 0, as in R).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(symmetric_mean_absolute_percentage_error(jnp.array([1.0, 3.0]),
    ...                                                jnp.array([3.0, 3.0])))
    0.5
    """
    _check_rows("symmetric_mean_absolute_percentage_error", y, prediction, weights)
    y, prediction = jnp.asarray(y), jnp.asarray(prediction)
    return weighted_mean(2 * jnp.abs(y - prediction) / (jnp.abs(y) + jnp.abs(prediction)),
                         weights)


def percent_bias(
    y: Real[Array, "n"], prediction: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """``mean_i (y_i - f_i) / |y_i|``, signed and as a fraction, as Metrics' ``percent_bias``
    (an infinite term where ``y_i = 0``, as in R).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(percent_bias(jnp.array([2.0, -4.0]), jnp.array([1.0, -2.0])))
    0.0
    """
    _check_rows("percent_bias", y, prediction, weights)
    y = jnp.asarray(y)
    return weighted_mean((y - jnp.asarray(prediction)) / jnp.abs(y), weights)


def _as_columns(proba: Float[Array, "n o"]) -> Float[Array, "n o"]:
    """One column per class: a single column is the probability of class 1 of two."""
    proba = jnp.asarray(proba)
    if proba.ndim != 2:
        raise ValueError(f"probabilities must have shape (n, o); got shape {proba.shape}.")
    if proba.shape[1] == 1:
        return jnp.concatenate([1.0 - proba, proba], axis=1)
    return proba


def log_loss(
    y: Int[Array, "n"], proba: Float[Array, "n o"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Cross-entropy ``-mean_i log p_i[y_i]`` with probabilities clipped to ``[eps, 1 - eps]``.

    ``eps`` is float64's machine epsilon (2.2e-16), what :func:`sklearn.metrics.log_loss`
    uses for scikit-learn's float64 probabilities, whatever the dtype here: a tree ensemble
    evaluated in float32 gives exactly 0 to a class its leaf never saw, which costs 36.0
    there, not the 15.9 of float32's epsilon. Rows are not renormalized.

    Parameters
    ----------
    y : int array of shape (n,)
        Class codes ``0 .. k-1``.
    proba : float array of shape (n, o)
        ``o = k`` class probabilities, or ``o = 1``: the probability of class 1 (binary).
    weights : float array of shape (n,), optional

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> y = jnp.array([1, 0, 0, 1])
    >>> proba = jnp.array([[0.1, 0.9], [0.9, 0.1], [0.8, 0.2], [0.35, 0.65]])
    >>> print(round(float(log_loss(y, proba)), 5))
    0.21616
    >>> print(round(float(log_loss(y, proba[:, 1:])), 5))
    0.21616
    """
    _check_rows("log_loss", y, proba, weights)
    columns = _as_columns(proba)
    eps = float(np.finfo(np.float64).eps)
    picked = jnp.take_along_axis(columns, jnp.asarray(y, jnp.int32)[:, None], axis=1)[:, 0]
    return weighted_mean(-jnp.log(jnp.clip(picked, eps, 1.0 - eps)), weights)


def brier_score(
    y: Int[Array, "n"], proba: Float[Array, "n o"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Brier score ``mean_i sum_k (p_ik - [y_i = k])^2``, halved for two classes, as
    :func:`sklearn.metrics.brier_score_loss` (its ``scale_by_half="auto"``): for a binary
    problem the mean squared error of the probability of class 1.

    Parameters
    ----------
    y : int array of shape (n,)
        Class codes ``0 .. k-1``.
    proba : float array of shape (n, o)
        ``o = k`` class probabilities, or ``o = 1``: the probability of class 1 (binary).
    weights : float array of shape (n,), optional

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(brier_score(jnp.array([1, 0]), jnp.array([[0.8], [0.4]])))
    0.1
    >>> print(round(float(brier_score(jnp.array([2]), jnp.array([[0.2, 0.3, 0.5]]))), 6))
    0.38
    """
    _check_rows("brier_score", y, proba, weights)
    return weighted_mean(brier_terms(_as_columns(proba), jnp.asarray(y, jnp.int32), 1),
                         weights)


def accuracy_score(
    y: Int[Array, "n"],
    prediction: Real[Array, "n"] | Float[Array, "n o"],
    weights: Float[Array, "n"] | None = None,
) -> Float[Array, ""]:
    """Share of rows whose predicted class is ``y``, for labels or probabilities.

    The shape of ``prediction`` says what it holds:

    - (n,): class codes (labels), compared with ``y`` after rounding;
    - (n, 1): the probability of class 1 of a binary problem, thresholded at 0.5 (0/1 labels in
      one column give the same answer);
    - (n, k): class probabilities or scores; the predicted class is the arg max.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> y = jnp.array([0, 1, 2, 1])
    >>> print(accuracy_score(y, jnp.array([0, 1, 1, 1])))
    0.75
    >>> print(accuracy_score(y, jnp.eye(3)[jnp.array([0, 1, 2, 0])]))
    0.75
    >>> print(accuracy_score(jnp.array([0, 1]), jnp.array([[0.2], [0.7]])))
    1.0
    """
    _check_rows("accuracy_score", y, prediction, weights)
    prediction = jnp.asarray(prediction)
    y = jnp.asarray(y, jnp.int32)
    if prediction.ndim == 1:
        labels = jnp.round(prediction).astype(jnp.int32)
    elif prediction.shape[1] == 1:
        labels = (prediction[:, 0] >= 0.5).astype(jnp.int32)
    else:
        labels = jnp.argmax(prediction, axis=1).astype(jnp.int32)
    return weighted_mean((labels == y).astype(jnp.float32), weights)


def binary_roc_auc(
    y: Real[Array, "n"], score: Real[Array, "n"], weights: Float[Array, "n"] | None = None
) -> Float[Array, ""]:
    """Area under the ROC curve of a binary problem, by weighted mid-ranks.

    ``AUC = sum_{i: y_i = 1} w_i (W_-(s < s_i) + W_-(s = s_i) / 2) / (W_+ W_-)``: the weighted
    Mann-Whitney statistic, where ``W_-(.)`` sums the weights of the negatives with a smaller
    (or tied) score. Ties count one half, as in :func:`sklearn.metrics.roc_auc_score`. One
    ``O(n log n)`` sort; NaN when a class is absent.

    Parameters
    ----------
    y : array of shape (n,)
        1 for positives, 0 for negatives.
    score : array of shape (n,)
        Higher means more likely positive.
    weights : float array of shape (n,), optional

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(binary_roc_auc(jnp.array([0, 0, 1, 1]), jnp.array([0.1, 0.4, 0.35, 0.8])))
    0.75
    """
    _check_rows("binary_roc_auc", y, score, weights)
    score = jnp.asarray(score)
    w = _weights(weights, score)
    positive = jnp.asarray(y).astype(w.dtype)
    order = jnp.argsort(score)
    sorted_score = score[order]
    neg = ((1.0 - positive) * w)[order]
    pos = (positive * w)[order]
    cum_neg = jnp.concatenate([jnp.zeros(1, neg.dtype), jnp.cumsum(neg)])
    left = jnp.searchsorted(sorted_score, sorted_score, side="left")
    right = jnp.searchsorted(sorted_score, sorted_score, side="right")
    below = cum_neg[left]
    tied = cum_neg[right] - below
    return jnp.sum(pos * (below + 0.5 * tied)) / (jnp.sum(pos) * jnp.sum(neg))


def roc_auc_score(
    y: Int[Array, "n"],
    score: Real[Array, "n"] | Float[Array, "n o"],
    weights: Float[Array, "n"] | None = None,
) -> Float[Array, ""]:
    """ROC AUC of class codes ``y`` against scores or probabilities.

    - ``score`` of shape (n,) or (n, 1): binary, the score of class 1;
    - (n, 2): binary, the second column is the score of class 1;
    - (n, k), k > 2: one-vs-rest, the unweighted mean over classes of the AUC of
      ``y == c`` against column ``c`` (scikit-learn's ``multi_class="ovr"``,
      ``average="macro"``).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> y = jnp.array([0, 1, 2, 2])
    >>> print(roc_auc_score(y, jnp.eye(3)[y]))
    1.0
    >>> print(roc_auc_score(jnp.array([0, 1]), jnp.array([[0.6, 0.4], [0.3, 0.7]])))
    1.0
    """
    _check_rows("roc_auc_score", y, score, weights)
    score = jnp.asarray(score)
    y = jnp.asarray(y, jnp.int32)
    if score.ndim == 1:
        return binary_roc_auc(y, score, weights)
    if score.shape[1] <= 2:
        return binary_roc_auc(y, score[:, -1], weights)
    classes = jnp.arange(score.shape[1])
    per_class = jax.vmap(
        lambda c, s: binary_roc_auc((y == c).astype(jnp.float32), s, weights),
        in_axes=(0, 1),
    )(classes, score)
    return jnp.mean(per_class)
