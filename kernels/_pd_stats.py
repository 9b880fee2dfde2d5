"""Array algebra of PD-based importance, the PD interaction statistic and Friedman's H-statistic.

Every function here is a pure ``jax.numpy`` function of arrays that have already been produced by
the evaluation engine: partial dependence (PD) curves on a grid, ICE curves (one row per data
row), or PD values at the data rows themselves. Each is written for one unit (one curve, one
pair, one replicate) and batched by the caller with ``jax.vmap``; mode strings (``measure``,
``average``) and sizes are static arguments. Case weights enter every average, so a bootstrap
replicate is just another weight vector: the data row counts of the resample times the case
weights (:func:`bootstrap_weights`). Nothing here evaluates a model.

References
----------
Greenwell, Boehmke & McCarthy (2018), "A simple and effective model-based variable importance
measure", arXiv:1805.04755 (PD importance and the PD interaction statistic).
Friedman & Popescu (2008), "Predictive learning via rule ensembles", Ann. Appl. Stat. 2(3)
(the H-statistic), in the convention of R's ``hstats`` package (Mayer 2023).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

__all__ = [
    "AVERAGES",
    "MEASURES",
    "bootstrap_counts",
    "bootstrap_weights",
    "flatness",
    "h_parts",
    "h_value",
    "ice_importance",
    "pd_at_rows",
    "pd_curve",
    "pd_importance_from_ice",
    "pd_interaction_strength",
    "weighted_average",
    "weighted_center",
]

MEASURES = ("sd", "mad", "range4")
"""Flatness measures: sample standard deviation, scaled median absolute deviation, range / 4."""

AVERAGES = ("mean", "median", "trimmed")
"""Ways to average over rows: weighted mean, weighted median, weighted trimmed mean."""

# R's stats::mad constant, exactly (1 / Phi^{-1}(3/4) = 1.4826022...): with it the MAD of a
# normal sample estimates sigma, and jaximp's values equal R's.
_MAD_SCALE = 1.4826
_HIGHEST = jax.lax.Precision.HIGHEST


def _check_measure(measure) -> None:
    if not callable(measure) and measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}; got {measure!r}.")


def _check_average(average: str, trim: float) -> None:
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}; got {average!r}.")
    if not 0.0 <= trim < 0.5:
        raise ValueError(f"trim must be a fraction in [0, 0.5); got {trim!r}.")


def flatness(values: Float[Array, " g"], measure="sd") -> Float[Array, ""]:
    """How far a curve is from flat: the spread of its values over the grid.

    Parameters
    ----------
    values : array of shape (g,), g >= 2
        A PD (or ICE) curve on its grid; every grid point counts once.
    measure : {"sd", "mad", "range4"}, default "sd"
        ``"sd"``: sample standard deviation (ddof = 1), Greenwell et al.'s (2018) measure for continuous
        features. ``"range4"``: ``(max - min) / 4``, its measure for categorical features.
        ``"mad"``: median absolute deviation from the median, times 1.4826 (as R's
        ``stats::mad``) so that it estimates the standard deviation of normal data; the robust
        choice suggested in Greenwell et al.'s (2018) discussion. A callable is any other
        measure: a ``jax.numpy`` function of the curve (g,) to a scalar (vip's ``var_fun``).

    Returns
    -------
    scalar array

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> curve = jnp.array([0.0, 1.0, 2.0, 3.0, 10.0])
    >>> [round(float(flatness(curve, m)), 4) for m in ("sd", "mad", "range4")]
    [3.9623, 1.4826, 2.5]
    """
    _check_measure(measure)
    if values.ndim != 1 or values.shape[0] < 2:
        raise ValueError(f"flatness needs a curve of shape (g,) with g >= 2; got {values.shape}.")
    if callable(measure):
        return _called_measure(measure, values)
    if measure == "sd":
        centred = values - jnp.mean(values)
        return jnp.sqrt(jnp.sum(centred * centred) / (values.shape[0] - 1))
    if measure == "range4":
        return (jnp.max(values) - jnp.min(values)) / 4
    median = jnp.median(values)
    return _MAD_SCALE * jnp.median(jnp.abs(values - median))


def _called_measure(measure, values: Float[Array, " g"]) -> Float[Array, ""]:
    try:
        spread = jnp.asarray(measure(values))
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as error:
        raise TypeError(
            f"measure {getattr(measure, '__name__', measure)!r} must be traceable by JAX (it "
            "gets the curve as a jax array under jit); write it with jax.numpy, e.g. "
            "lambda v: jnp.std(v, ddof=1).") from error
    if spread.shape != ():
        raise ValueError(f"measure must map a curve of shape {values.shape} to a scalar; "
                         f"{getattr(measure, '__name__', measure)!r} returned shape "
                         f"{spread.shape}.")
    return spread.astype(values.dtype)


def weighted_average(
    values: Float[Array, " n"],
    weights: Float[Array, " n"],
    average: str = "mean",
    trim: float = 0.1,
) -> Float[Array, ""]:
    """Weighted mean, median or trimmed mean of values over rows.

    Parameters
    ----------
    values : array of shape (n,)
    weights : array of shape (n,)
        Non-negative weights with a positive sum (case weights, bootstrap counts, or both).
    average : {"mean", "median", "trimmed"}, default "mean"
        ``"median"``: the value at which the cumulative weight of the sorted values reaches half
        the total, averaging the two middle values when it falls exactly between them (equal
        weights give ``numpy.median``). ``"trimmed"``: the weighted mean after removing the
        fraction ``trim`` of the total weight from each tail, splitting a boundary row (equal
        weights with ``n * trim`` an integer give ``scipy.stats.trim_mean``).
    trim : float in [0, 0.5), default 0.1
        Fraction trimmed from each tail by ``"trimmed"``.

    Returns
    -------
    scalar array

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> v = jnp.array([1.0, 2.0, 3.0, 4.0, 100.0])
    >>> w = jnp.ones(5)
    >>> [float(weighted_average(v, w, a, trim=0.2)) for a in ("mean", "median", "trimmed")]
    [22.0, 3.0, 3.0]
    >>> float(weighted_average(v, jnp.array([2.0, 1.0, 0.0, 0.0, 1.0]), "median"))  # of 1,1,2,100
    1.5
    """
    _check_average(average, trim)
    total = jnp.sum(weights)
    if average == "mean":
        return jnp.dot(values, weights, precision=_HIGHEST) / total
    order = jnp.argsort(values)
    v, w = values[order], weights[order]
    cum = jnp.cumsum(w)
    if average == "median":
        half = total / 2
        low = v[jnp.argmax(cum >= half)]
        high = v[jnp.argmax(cum > half)]
        return (low + high) / 2
    lo, hi = trim * total, (1.0 - trim) * total
    kept = jnp.clip(cum, lo, hi) - jnp.clip(cum - w, lo, hi)
    return jnp.dot(kept, v, precision=_HIGHEST) / jnp.sum(kept)


def pd_curve(
    ice: Float[Array, "n g"],
    weights: Float[Array, " n"],
    average: str = "mean",
    trim: float = 0.1,
) -> Float[Array, " g"]:
    """Partial dependence from ICE curves: the (robust) weighted average over rows at each point.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> ice = jnp.array([[0.0, 1.0], [2.0, 3.0], [10.0, 50.0]])
    >>> print(pd_curve(ice, jnp.ones(3)), pd_curve(ice, jnp.ones(3), "median"))
    [ 4. 18.] [2. 3.]
    """
    _check_average(average, trim)
    if average == "mean":
        return jnp.matmul(weights, ice, precision=_HIGHEST) / jnp.sum(weights)
    return jax.vmap(lambda column: weighted_average(column, weights, average, trim), 1)(ice)


def pd_importance_from_ice(
    ice: Float[Array, "n g"],
    weights: Float[Array, " n"],
    measure: str = "sd",
    average: str = "mean",
    trim: float = 0.1,
) -> Float[Array, ""]:
    """PD-based importance: the flatness of the PD averaged from ICE curves with row weights.

    With ``average="mean"`` this is ``flatness(weights @ ice / sum(weights))``; a bootstrap
    replicate over rows is the same call with the replicate's weights.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> grid = jnp.linspace(0.0, 1.0, 5)
    >>> ice = 3.0 * grid[None, :] + jnp.arange(4.0)[:, None]   # f = 3 x + offset per row
    >>> round(float(pd_importance_from_ice(ice, jnp.ones(4))), 5)
    1.18585
    """
    return flatness(pd_curve(ice, weights, average, trim), measure)


def ice_importance(
    ice: Float[Array, "n g"],
    weights: Float[Array, " n"],
    measure: str = "sd",
    average: str = "mean",
    trim: float = 0.1,
) -> Float[Array, ""]:
    """ICE variant of PD importance: the (robust) weighted average of each row's ICE flatness.

    Unlike the PD variant, an effect that cancels on average (``f = x1 * x2`` with ``x2``
    centred) still counts.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> ice = jnp.array([[0.0, 1.0], [0.0, -1.0]])  # two opposite slopes: flat PD
    >>> w = jnp.ones(2)
    >>> float(pd_importance_from_ice(ice, w)), round(float(ice_importance(ice, w)), 4)
    (0.0, 0.7071)
    """
    _check_average(average, trim)
    per_row = jax.vmap(lambda curve: flatness(curve, measure))(ice)
    return weighted_average(per_row, weights, average, trim)


def pd_interaction_strength(
    pd: Float[Array, "g1 g2"], measure_1: str = "sd", measure_2: str = "sd"
) -> Float[Array, ""]:
    """The PD interaction statistic of a pair from its 2-D partial dependence (Greenwell et al. 2018, section 3.2).

    For each grid value of feature 2, the flatness of the PD as feature 1 varies,
    ``imp(x1 | x2)``; the spread of these over the grid of feature 2. The same with the roles
    swapped; the statistic is the mean of the two. Each flatness uses the measure of the feature
    whose grid it runs over (``"sd"`` for continuous, ``"range4"`` for categorical features).

    Parameters
    ----------
    pd : array of shape (g1, g2)
        PD of the pair on the product grid, feature 1 along axis 0.
    measure_1, measure_2 : {"sd", "mad", "range4"}
        Flatness measures for the grids of features 1 and 2.

    Returns
    -------
    scalar array
        0 for an additive PD; ``sd(G1) * sd(G2)`` for ``PD = x1 * x2``.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> g1 = g2 = jnp.linspace(0.0, 1.0, 51)
    >>> strength = jax.jit(pd_interaction_strength, static_argnums=(1, 2))
    >>> s = strength(g1[:, None] * g2[None, :], "sd", "sd")
    >>> round(float(s / (jnp.std(g1, ddof=1) * jnp.std(g2, ddof=1))), 5)
    1.0
    >>> float(strength(jnp.sin(g1)[:, None] + g2[None, :] ** 2, "sd", "sd")) < 1e-6
    True
    """
    if pd.ndim != 2:
        raise ValueError(f"pd must be a 2-D (g1, g2) array; got shape {pd.shape}.")
    imp_1_given_2 = jax.vmap(lambda column: flatness(column, measure_1), 1)(pd)  # (g2,)
    imp_2_given_1 = jax.vmap(lambda row: flatness(row, measure_2), 0)(pd)  # (g1,)
    return (flatness(imp_1_given_2, measure_2) + flatness(imp_2_given_1, measure_1)) / 2


def bootstrap_counts(key: PRNGKeyArray, n: int) -> Int[Array, " n"]:
    """How often each of ``n`` rows is drawn in one bootstrap resample (sums to ``n``).

    ``vmap`` over split keys for several replicates.

    Examples
    --------
    >>> import jax
    >>> counts = bootstrap_counts(jax.random.key(0), 6)
    >>> counts.shape, int(counts.sum())
    ((6,), 6)
    """
    draws = jax.random.randint(key, (n,), 0, n)
    return jnp.zeros(n, jnp.int32).at[draws].add(1)


def bootstrap_weights(
    key: PRNGKeyArray, weights: Float[Array, " n"], n_replicates: int
) -> tuple[Int[Array, "r n"], Float[Array, "r n"]]:
    """Row counts of ``n_replicates`` bootstrap resamples and the case weights they imply.

    Rows are drawn with equal probability and keep their case weights, so replicate ``r``
    weights row ``i`` by ``counts[r, i] * weights[i]``. One key per replicate, split from
    ``key``.

    Returns
    -------
    counts : int array of shape (r, n)
    replicate_weights : array of shape (r, n)

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> counts, w = bootstrap_weights(jax.random.key(1), jnp.array([1.0, 2.0, 0.5]), 4)
    >>> bool(jnp.allclose(w, counts * jnp.array([1.0, 2.0, 0.5])))
    True
    """
    n = weights.shape[0]
    keys = jax.random.split(key, n_replicates)
    counts = jax.vmap(lambda k: bootstrap_counts(k, n))(keys)
    return counts, counts * weights[None, :]


def pd_at_rows(
    predictions: Float[Array, "n n"], weights: Float[Array, "r n"]
) -> Float[Array, "r n"]:
    """PD values at the data rows from the full prediction matrix, for several weightings.

    ``predictions[i, b] = f(x_iS, x_bC)``: row ``i``'s values of S put into background row ``b``.
    Replicate ``r`` averages over the background with its weights: ``PD_S^r(x_i)``. The engine
    with ``reduce="none"`` gives this matrix, so bootstrap replicates re-weight it instead of
    evaluating the model again.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> m = jnp.array([[1.0, 3.0], [5.0, 7.0]])
    >>> print(pd_at_rows(m, jnp.array([[1.0, 1.0], [1.0, 0.0]])))
    [[2. 6.]
     [1. 5.]]
    """
    sums = jnp.matmul(weights, predictions.T, precision=_HIGHEST)
    return sums / jnp.sum(weights, axis=1, keepdims=True)


def weighted_center(values: Float[Array, " n"], weights: Float[Array, " n"]) -> Float[Array, " n"]:
    """Values minus their weighted mean.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> print(weighted_center(jnp.array([1.0, 2.0, 4.0]), jnp.array([1.0, 1.0, 0.0])))
    [-0.5  0.5  2.5]
    """
    return values - jnp.dot(values, weights, precision=_HIGHEST) / jnp.sum(weights)


def h_parts(
    joint: Float[Array, " n"],
    parts: Float[Array, "k n"],
    signs: Float[Array, " k"],
    weights: Float[Array, " n"],
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Numerator and denominator of an H-statistic, as weighted means over the rows.

    All PDs are centred to weighted mean 0 first; then
    ``numerator = mean_w (F_joint - sum_t signs_t F_t)^2`` and
    ``denominator = mean_w F_joint^2``. With ``joint = F_jk``, ``parts = (F_j, F_k)`` and signs
    ``(1, 1)`` this is the pairwise ``H2_jk``; ``joint = F``, ``parts = (F_j, F_\\j)`` gives the
    overall ``H2_j``; ``parts = (F_1, ..., F_p)`` the total ``H2``; and
    ``parts = (F_jk, F_jl, F_kl, F_j, F_k, F_l)`` with signs ``(1, 1, 1, -1, -1, -1)`` the
    three-way ``H2_jkl``.

    Parameters
    ----------
    joint : array of shape (n,)
        PD of the joint feature set at each row (or the prediction ``F``).
    parts : array of shape (k, n)
        PDs of the parts at each row.
    signs : array of shape (k,)
    weights : array of shape (n,)
        Row weights (case weights times bootstrap counts).

    Returns
    -------
    numerator, denominator : scalar arrays

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> x1, x2 = jnp.array([-1.0, -1.0, 1.0, 1.0]), jnp.array([-1.0, 1.0, -1.0, 1.0])
    >>> num, den = h_parts(x1 * x2, jnp.zeros((2, 4)), jnp.ones(2), jnp.ones(4))
    >>> float(num / den)
    1.0
    """
    total = jnp.sum(weights)

    def centre(f):
        return f - jnp.sum(f * weights, axis=-1, keepdims=True) / total

    # Elementwise products and sums (no dot): exact float32 on every backend, and quick to
    # compile when vmapped over statistics, outputs and replicates.
    joint_c = centre(joint)
    residual = joint_c - jnp.sum(signs[:, None] * centre(parts), axis=0)
    numerator = jnp.sum(residual * residual * weights) / total
    denominator = jnp.sum(joint_c * joint_c * weights) / total
    return numerator, denominator


def h_value(
    numerator: Float[Array, "..."],
    denominator: Float[Array, "..."],
    normalized: bool | Bool[Array, ""] = True,
    squared: bool | Bool[Array, ""] = True,
    eps: float | Float[Array, ""] = 1e-10,
    xp=jnp,
) -> Float[Array, "..."]:
    """The reported H-statistic from its numerator and denominator.

    ``numerator / denominator`` (normalized) or the numerator alone (on the squared prediction
    scale); its square root unless ``squared``. Numerators at most ``eps * denominator`` are
    rounding noise and give exactly 0 (also 0/0). The options may be traced values, so one
    compiled function serves every combination. ``xp=numpy`` computes in NumPy (float64).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> num, den = jnp.array([0.25, 1e-14, 0.0]), jnp.array([1.0, 1.0, 0.0])
    >>> print(h_value(num, den), h_value(num, den, squared=False))
    [0.25 0.   0.  ] [0.5 0.  0. ]
    """
    zero = numerator <= eps * denominator
    ratio = numerator / xp.where(denominator > 0, denominator, 1)
    value = xp.where(zero, 0.0, xp.where(normalized, ratio, numerator))
    return xp.where(squared, value, xp.sqrt(value))
