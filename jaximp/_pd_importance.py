"""PD-based variable importance and the PD interaction statistic (Greenwell et al. 2018).

Both are thin methods: the engine (through :func:`jaximp._pd.compute_pd`) evaluates every PD or
ICE curve in one batched call, and the flatness algebra lives in ``jaximp.kernels``. Bootstrap
replicates over the background rows re-weight the stored ICE curves; the model is not evaluated
again.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaximp.kernels import _pd_stats as K

from ._params import Choice, Replicates, validate_params
from ._common import as_key, check_choice, prepare
from ._details import PDImportanceDetails, PDInteractionDetails
from ._edge import (
    check_n_bootstrap,
    replicate_weights,
    resolve_pairs,
    row_weights,
    summaries,
)
from ._data import Feature
from ._grid import validate_grid_options
from ._pd import compute_pd
from ._results import FeatureImportance, FeatureInteraction

__all__ = ["pd_importance", "pd_interaction", "MEASURE_CHOICES", "importance_from_pds",
           "interaction_from_pds"]

MEASURE_CHOICES = ("auto", *K.MEASURES)


# ---------------------------------------------------------------------------------------------
# Edge validation.
# ---------------------------------------------------------------------------------------------


def _check_trim(trim) -> float:
    if isinstance(trim, bool) or not isinstance(trim, (int, float, np.floating)) or not (
        0 <= trim < 0.5
    ):
        raise ValueError(f"trim must be a fraction in [0, 0.5); got {trim!r}.")
    return float(trim)


def _measure_for(feature: Feature, measure: str) -> str:
    if measure != "auto":
        return measure
    return "range4" if feature.is_categorical else "sd"


# ---------------------------------------------------------------------------------------------
# Batched kernels (jit; one compile per grid shape and mode).
# ---------------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("measure",))
def _flatness_outputs(average_go: jax.Array, measure: str) -> jax.Array:
    """Flatness of a PD for each output: (g, o) -> (o,)."""
    return jax.vmap(lambda curve: K.flatness(curve, measure), in_axes=1)(average_go)


@functools.partial(jax.jit, static_argnames=("measure",))
def _flatness_replicates(average_gro: jax.Array, measure: str) -> jax.Array:
    """Flatness of a PD for each output and weighting: (g, r, o) -> (o, r)."""
    per_output = jax.vmap(lambda curve: K.flatness(curve, measure), in_axes=1)
    return jax.vmap(per_output, in_axes=1, out_axes=1)(average_gro)


@functools.partial(jax.jit, static_argnames=("measure", "average", "trim", "ice"))
def _importance_replicates(ice_ngo, weights_rn, measure, average, trim, ice):
    """PD (or ICE) importance for each output and weighting, and the PD of the first weighting.

    (n, g, o), (r, n) -> importance (o, r), PD (g, o).
    """
    kernel = K.ice_importance if ice else K.pd_importance_from_ice

    def one(curves, w):
        return kernel(curves, w, measure, average, trim)

    per_weight = jax.vmap(one, in_axes=(None, 0))
    estimates = jax.vmap(per_weight, in_axes=(2, None))(ice_ngo, weights_rn)
    curve = jax.vmap(lambda c: K.pd_curve(c, weights_rn[0], average, trim), in_axes=2,
                     out_axes=1)(ice_ngo)
    return estimates, curve


@functools.partial(jax.jit, static_argnames=("measures",))
def _interaction_outputs(pd_abo, measures):
    """PD interaction of one pair for each output: (g1, g2, o) -> (o,)."""
    return jax.vmap(lambda pd2: K.pd_interaction_strength(pd2, *measures), in_axes=2)(pd_abo)


@functools.partial(jax.jit, static_argnames=("measures",))
def _interaction_replicates_pd(pd_abro, measures):
    """PD interaction of one pair for each output and weighting: (g1, g2, r, o) -> (o, r)."""
    per_output = jax.vmap(lambda pd2: K.pd_interaction_strength(pd2, *measures), in_axes=2)
    return jax.vmap(per_output, in_axes=2, out_axes=1)(pd_abro)


@functools.partial(jax.jit, static_argnames=("shape", "measures", "average", "trim"))
def _interaction_replicates(ice_ngo, weights_rn, shape, measures, average, trim):
    """PD interaction of one pair from ICE for each output and weighting -> (o, r); and the
    2-D PD of the first weighting, (g1 * g2, o)."""

    def one(curves, w):
        pd2 = K.pd_curve(curves, w, average, trim).reshape(shape)
        return K.pd_interaction_strength(pd2, *measures)

    per_weight = jax.vmap(one, in_axes=(None, 0))
    estimates = jax.vmap(per_weight, in_axes=(2, None))(ice_ngo, weights_rn)
    surface = jax.vmap(lambda c: K.pd_curve(c, weights_rn[0], average, trim), in_axes=2,
                       out_axes=1)(ice_ngo)
    return estimates, surface


def _shifted(values: np.ndarray, axis) -> jax.Array:
    """float32 device copy after removing the mean (flatness is shift-invariant): keeps digits."""
    values = np.asarray(values, np.float64)
    return jnp.asarray(values - values.mean(axis=axis, keepdims=True), jnp.float32)


# ---------------------------------------------------------------------------------------------
# From evaluated PDs (shared with explain).
# ---------------------------------------------------------------------------------------------


def importance_from_pds(chosen, results, replicated, weights, counts, *, ice, measure,
                        average, trim, n_bootstrap) -> FeatureImportance:
    """PD importance from 1-D PDs already evaluated (:func:`jaximp._pd.compute_pd` with one
    set per feature): ``results`` with ICE curves where ``ice`` or a non-mean ``average``
    needs them, ``replicated`` (one (g, r, o) array per feature) under bootstrap weightings.
    Used by :func:`pd_importance` and by ``explain``, which shares the PDs with other methods.
    """
    weights_d = jnp.asarray(weights, jnp.float32)
    measures, estimates, curves = [], [], {}
    for feat, result in zip(chosen, results):
        m = _measure_for(feat, measure)
        measures.append(m)
        if result.individual is not None:
            ice_ngo = result.individual  # (n, g, o)
            shift = ice_ngo.mean(axis=(0, 1))
            est, curve = _importance_replicates(
                jnp.asarray(ice_ngo - shift, jnp.float32), weights_d, m, average, trim,
                bool(ice),
            )
            curves[feat.name] = np.asarray(curve, np.float64) + shift
        elif replicated is not None:  # (g, r, o) PDs, one per weighting
            est = np.asarray(_flatness_replicates(_shifted(replicated[len(curves)], 0), m))
            curves[feat.name] = result.average
        else:
            est = np.asarray(_flatness_outputs(_shifted(result.average, 0), m))[:, None]
            curves[feat.name] = result.average
        estimates.append(np.asarray(est, np.float64))
    point, std, replicates = summaries(np.stack(estimates))
    return FeatureImportance(
        method="ice" if ice else "pd",
        feature_names=tuple(f.name for f in chosen),
        output_names=results[0].output_names,
        importances_mean=point,
        importances_std=std,
        importances=replicates,
        info=PDImportanceDetails(
            measure=dict(zip((f.name for f in chosen), measures)), average=average, trim=trim,
            grid_values={f.name: r.grid_values[0] for f, r in zip(chosen, results)},
            pd=curves, n_bootstrap=n_bootstrap, bootstrap_counts=counts,
        ),
    )


def interaction_from_pds(pair_list, results, replicated, weights, counts, *, measure, average,
                         trim, n_bootstrap) -> FeatureInteraction:
    """PD interaction from 2-D PDs already evaluated (one set per pair of ``pair_list``), as
    :func:`importance_from_pds` for importance."""
    weights_d = jnp.asarray(weights, jnp.float32)
    estimates, surfaces = [], {}
    for (fa, fb), result in zip(pair_list, results):
        measures = (_measure_for(fa, measure), _measure_for(fb, measure))
        shape = result.grid_shape
        if result.individual is not None:
            n, o = result.individual.shape[0], len(result.output_names)
            ice_ngo = result.individual.reshape(n, -1, o)
            shift = ice_ngo.mean(axis=(0, 1))
            est, surface = _interaction_replicates(
                jnp.asarray(ice_ngo - shift, jnp.float32), weights_d, shape, measures, average,
                trim,
            )
            surfaces[(fa.name, fb.name)] = (np.asarray(surface, np.float64) + shift).reshape(
                *shape, o)
        elif replicated is not None:  # (g1, g2, r, o) PDs, one per weighting
            est = np.asarray(_interaction_replicates_pd(
                _shifted(replicated[len(surfaces)], (0, 1)), measures))
            surfaces[(fa.name, fb.name)] = result.average
        else:
            est = np.asarray(_interaction_outputs(_shifted(result.average, (0, 1)), measures))
            est = est[:, None]
            surfaces[(fa.name, fb.name)] = result.average
        estimates.append(np.asarray(est, np.float64))
    point, std, replicates = summaries(np.stack(estimates))
    return FeatureInteraction(
        method="pd_interaction",
        feature_sets=tuple((fa.name, fb.name) for fa, fb in pair_list),
        output_names=results[0].output_names,
        values=point,
        values_std=std,
        replicates=replicates,
        info=PDInteractionDetails(measure=measure, average=average, trim=trim, pd=surfaces,
                                  n_bootstrap=n_bootstrap, bootstrap_counts=counts),
    )


# ---------------------------------------------------------------------------------------------
# Public methods.
# ---------------------------------------------------------------------------------------------


def _validate_common(measure, average, trim, grid, grid_resolution, percentiles, n_bootstrap,
                     random_state):
    check_choice(measure, "measure", MEASURE_CHOICES)
    check_choice(average, "average", K.AVERAGES)
    trim = _check_trim(trim)
    validate_grid_options(grid, grid_resolution, percentiles)
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    key = as_key(random_state)
    return trim, n_bootstrap, key


@validate_params(measure=Choice(*MEASURE_CHOICES), average=Choice(*K.AVERAGES),
                 n_bootstrap=Replicates())
def pd_importance(
    model,
    X,
    features=None,
    *,
    ice: bool = False,
    measure: str = "auto",
    average: str = "mean",
    trim: float = 0.1,
    grid="uniform",
    grid_resolution: int = 51,
    percentiles: tuple[float, float] = (0.0, 1.0),
    output=None,
    sample_weight=None,
    n_bootstrap: int = 0,
    random_state=0,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> FeatureImportance:
    """PD-based variable importance: how far each feature's partial dependence is from flat.

    Greenwell et al. (2018): the importance of a continuous feature is the sample standard
    deviation (ddof = 1) of its PD values over the grid; for a categorical (or one-hot)
    feature it is the range of the PD over its levels divided by 4. The ICE variant averages the
    flatness of each row's ICE curve instead. All PDs of all features come from one engine call.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        Background data.
    features : str, int or sequence of them, optional
        Features to score (default all).
    ice : bool, default False
        Score by the (weighted) mean flatness of the ICE curves instead of the flatness of the
        PD; an effect that averages out in the PD (a pure interaction) still counts.
    measure : {"auto", "sd", "mad", "range4"}, default "auto"
        Flatness measure. ``"auto"``: ``"sd"`` for continuous and ``"range4"`` for categorical and
        one-hot features (Greenwell et al.'s rule). ``"mad"``: median absolute deviation (scaled by
        1.4826 to estimate a standard deviation), robust to a few extreme PD values.
    average : {"mean", "median", "trimmed"}, default "mean"
        How ICE curves are averaged into the PD (weighted by ``sample_weight``); the ICE variant
        averages the per-row flatness the same way. ``"median"`` and ``"trimmed"`` are the seed
        paper's robust alternatives to the mean.
    trim : float in [0, 0.5), default 0.1
        Fraction of the total weight trimmed from each tail by ``average="trimmed"``.
    grid, grid_resolution, percentiles
        The grid of each feature, as in :func:`jaximp.partial_dependence`. The defaults follow
        the ``pdp``/``vip`` R packages used by Greenwell et al. (2018): 51 evenly spaced points from the minimum
        to the maximum (every distinct value when there are at most 51).
    output : int, str or list, optional
        Model outputs to keep (default all); importance is computed per output.
    sample_weight : array of shape (n,), optional
        Case weights of the background rows.
    n_bootstrap : int, default 0
        Bootstrap replicates over the background rows (0: none, else >= 2). Each replicate
        re-weights the stored ICE curves by its row counts; the model is evaluated once.
    random_state : int or JAX PRNG key, default 0
        Seed of the bootstrap.
    feature_names, categorical, groups
        Data description; see :func:`jaximp.as_dataset`.
    variables : pytree, optional
        Variables of a Flax linen module.
    memory_budget : int, optional
        Bytes per evaluation chunk (see :func:`jaximp.default_memory_budget`).
    progress : bool, optional
        Progress line on stderr.

    Returns
    -------
    FeatureImportance
        ``method="pd"`` (or ``"ice"``). ``importances_mean`` (p, o) is the estimate on all rows;
        with ``n_bootstrap``: ``importances_std`` the bootstrap standard error,
        ``importances`` (p, o, r) the replicates (``to_frame()`` adds a 95% percentile
        interval). ``info`` holds the measure of each feature, the grids, the PD curves
        (``info["pd"]``, name -> (g, o)) and the bootstrap row counts.

    References
    ----------
    Greenwell, Boehmke & McCarthy (2018), "A simple and effective model-based variable
    importance measure", arXiv:1805.04755.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(50, 2))
    >>> same = {"x0": np.linspace(0, 1, 11), "x1": np.linspace(0, 1, 11)}
    >>> imp = pd_importance(lambda X: 3 * X[:, 0] - 5 * X[:, 1], X, grid=same)
    >>> ratio = imp.importances_mean[1, 0] / imp.importances_mean[0, 0]
    >>> round(float(ratio), 4), imp.top(1)
    (1.6667, ['x1'])
    """
    trim, n_bootstrap, key = _validate_common(
        measure, average, trim, grid, grid_resolution, percentiles, n_bootstrap, random_state
    )
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress,
    )
    chosen = dataset.resolve(features)
    # ICE curves are kept only where the statistic needs each row's curve; a bootstrap of the
    # PD re-weights rows inside the engine (O(replicates x grid) memory).
    keep_ice = bool(ice) or average != "mean"
    weights, counts = replicate_weights(row_weights(dataset), n_bootstrap, key)
    results = compute_pd(
        dataset, predictor, [[f] for f in chosen], kind="individual" if keep_ice else "average",
        grid=grid, grid_resolution=grid_resolution, percentiles=percentiles, output=output,
        memory_budget=memory_budget, progress=progress,
        weightings=None if keep_ice else weights,
    )
    replicated = None
    if isinstance(results, tuple):
        results, replicated = results
    return importance_from_pds(chosen, results, replicated, weights, counts, ice=bool(ice),
                               measure=measure, average=average, trim=trim,
                               n_bootstrap=n_bootstrap)


@validate_params(measure=Choice(*MEASURE_CHOICES), average=Choice(*K.AVERAGES),
                 n_bootstrap=Replicates())
def pd_interaction(
    model,
    X,
    features=None,
    *,
    pairs="all",
    reference=None,
    measure: str = "auto",
    average: str = "mean",
    trim: float = 0.1,
    grid="uniform",
    grid_resolution: int = 51,
    percentiles: tuple[float, float] = (0.0, 1.0),
    output=None,
    sample_weight=None,
    n_bootstrap: int = 0,
    random_state=0,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> FeatureInteraction:
    """The PD interaction statistic of feature pairs (Greenwell et al. 2018, section 3.2).

    For a pair (i, j) the 2-D PD is computed on the grid ``G_i x G_j``. For each grid value of
    ``x_j`` the flatness of the PD as ``x_i`` varies, ``imp(x_i | x_j)``, is taken, and the spread
    of these over the grid of ``x_j``; likewise with i and j swapped; the statistic is the mean of
    the two. Additive models give 0; ``f = x1 * x2`` gives ``sd(G1) * sd(G2)``. The 2-D PDs of
    all pairs come from one engine call.

    Parameters
    ----------
    model, X
        As in :func:`pd_importance`.
    features : sequence of str or int, optional
        Features whose pairs are scored with ``pairs="all"`` (default all features).
    pairs : "all" or list of pairs, default "all"
        Every pair among ``features``, or explicit pairs such as ``[("x1", "x2")]``.
    reference : str or int, optional
        Score the pairs of this feature with every other feature in ``features`` instead.
    measure : {"auto", "sd", "mad", "range4"}, default "auto"
        Flatness measure of both steps; ``"auto"`` uses ``"sd"`` over a continuous feature's grid
        and ``"range4"`` over a categorical one's.
    average, trim, grid, grid_resolution, percentiles, output, sample_weight
        As in :func:`pd_importance` (the grid is the product of the two features' grids, so
        its size is ``grid_resolution ** 2`` per pair).
    n_bootstrap : int, default 0
        Bootstrap replicates over the background rows; they re-weight the stored 2-D ICE
        surfaces (n x g x g per pair, which must fit in memory).
    random_state : int or JAX PRNG key, default 0
    feature_names, categorical, groups, variables, memory_budget, progress
        As in :func:`pd_importance`.

    Returns
    -------
    FeatureInteraction
        ``method="pd_interaction"``; ``values`` (pairs, o); with bootstrap also ``values_std``
        and ``replicates``. ``info["pd"]`` maps each pair to its 2-D PD (g1, g2, o).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(40, 3))
    >>> f = lambda X: X[:, 0] * X[:, 1] + X[:, 2]
    >>> res = pd_interaction(f, X, grid_resolution=6)
    >>> res.top(1), float(res.values[2, 0]) < 1e-6   # pairs: (x0,x1), (x0,x2), (x1,x2)
    ([('x0', 'x1')], True)
    """
    trim, n_bootstrap, key = _validate_common(
        measure, average, trim, grid, grid_resolution, percentiles, n_bootstrap, random_state
    )
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress,
    )
    chosen = dataset.resolve(features)
    pair_list = resolve_pairs(dataset, chosen, pairs, reference)
    keep_ice = average != "mean"
    weights, counts = replicate_weights(row_weights(dataset), n_bootstrap, key)
    results = compute_pd(
        dataset, predictor, [list(pair) for pair in pair_list],
        kind="individual" if keep_ice else "average", grid=grid,
        grid_resolution=grid_resolution, percentiles=percentiles, output=output,
        memory_budget=memory_budget, progress=progress,
        weightings=None if keep_ice else weights,
    )
    replicated = None
    if isinstance(results, tuple):
        results, replicated = results
    return interaction_from_pds(pair_list, results, replicated, weights, counts,
                                measure=measure, average=average, trim=trim,
                                n_bootstrap=n_bootstrap)

