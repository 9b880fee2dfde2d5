"""Importance and interaction read from computed PDs (Greenwell et al. 2018): the flatness of
each PD (or the spread of its ICE curves) and of each pair's PD surface beyond its two main
effects.

Shared by :func:`jaximp.pd_importance` / :func:`jaximp.pd_interaction` (which evaluate the PDs)
and the read-outs of :class:`jaximp.PartialDependence` and :class:`jaximp.PartialDependences`
(which reuse the PDs they hold), so both reach the same numbers through one module.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from jaximp.kernels import _pd_stats as K

from ..data import Choice, Feature, summaries
from ..results import (
    FeatureImportance,
    FeatureInteraction,
    PDImportanceDetails,
    PDInteractionDetails,
)

__all__ = ["MEASURE_CHOICES", "MEASURE_RULE", "importance_from_pds", "interaction_from_pds"]

MEASURE_CHOICES = ("auto", *K.MEASURES)


class _MeasureRule(Choice):
    """A measure for every feature, or a pair (continuous, categorical) of them."""

    def accepts(self, value) -> bool:
        if isinstance(value, tuple):
            return len(value) == 2 and all(callable(m) or m in K.MEASURES for m in value)
        return callable(value) or super().accepts(value)

    def expected(self) -> str:
        return (f"one of {self.choices}, a jax.numpy function of a curve, or a pair "
                f"(continuous, categorical) of them such as ('mad', 'range4')")


MEASURE_RULE = _MeasureRule(*MEASURE_CHOICES)


def _measure_for(feature: Feature, measure) -> str:
    if isinstance(measure, tuple):
        return measure[1] if feature.is_categorical else measure[0]
    if measure != "auto":
        return measure
    return "range4" if feature.is_categorical else "sd"


# ---------------------------------------------------------------------------------------------
# Batched kernels (jit; one compile per grid shape and mode).
# ---------------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("measure",))
def _flatness(pds_kgro: jax.Array, measure: str) -> jax.Array:
    """Flatness of k PDs for each output and weighting: (k, g, r, o) -> (k, o, r)."""
    per_output = jax.vmap(lambda curve: K.flatness(curve, measure), in_axes=1)
    return jax.vmap(jax.vmap(per_output, in_axes=1, out_axes=1))(pds_kgro)


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


@functools.partial(jax.jit, static_argnames=("measure",))
def _interaction_strengths(pds_kabro, measure):
    """PD interaction of k pairs for each output and weighting, ``measure`` the pair's two
    measures: (k, g1, g2, r, o) -> (k, o, r)."""
    per_output = jax.vmap(lambda pd2: K.pd_interaction_strength(pd2, *measure), in_axes=2)
    return jax.vmap(jax.vmap(per_output, in_axes=2, out_axes=1))(pds_kabro)


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


def _in_float64(kernel, *host_arrays, **static):
    """``kernel`` on float64 device copies of host arrays (sent explicitly), read back: the
    PDs are float64 sums, and float32 measures of them were 1e-7 off (an additive model's
    interaction 1e-7, not 0)."""
    with jax.enable_x64(True):
        arrays = [jax.device_put(np.asarray(a, np.float64)) for a in host_arrays]
        return jax.device_get(kernel(*arrays, **static))


def _batched(estimates: list, batches: dict, kernel) -> None:
    """Fill ``estimates[i]`` (o, r) for each batch of PDs of one shape and measure: one
    kernel call and one read per batch, not per feature (each costs a launch on a GPU)."""
    for (_, measure), members in batches.items():
        stacked = np.stack([pd for _, pd in members])
        for (i, _), est in zip(members, _in_float64(kernel, stacked, measure=measure)):
            estimates[i] = est


# ---------------------------------------------------------------------------------------------
# From evaluated PDs (shared with explain).
# ---------------------------------------------------------------------------------------------


def importance_from_pds(chosen, results, replicated, weights, counts, *, ice, measure,
                        average, trim, n_bootstrap) -> FeatureImportance:
    """PD importance from 1-D PDs already evaluated (:func:`jaximp.methods._pd.planned_pd`, one
    set per feature): ``results`` with ICE curves where ``ice`` or a non-mean ``average``
    needs them, ``replicated`` (one (g, r, o) array per feature) under bootstrap weightings.
    Used by :func:`pd_importance` and by ``explain``, which shares the PDs with other methods.
    """
    measures, curves = [], {}
    estimates: list = [None] * len(chosen)
    batches: dict = {}  # (PD shape, measure) -> [(feature position, (g, r, o) PD)]
    for i, (feat, result) in enumerate(zip(chosen, results)):
        m = _measure_for(feat, measure)
        measures.append(m)
        if result.individual is not None:
            estimates[i], curves[feat.name] = _in_float64(
                _importance_replicates, result.individual, weights, measure=m,
                average=average, trim=trim, ice=bool(ice))  # ICE (n, g, o)
            continue
        # one (g, r, o) PD per weighting, or the PD alone (r = 1)
        pd = replicated[i] if replicated is not None else result.average[:, None, :]
        batches.setdefault((pd.shape, m), []).append((i, pd))
        curves[feat.name] = result.average
    _batched(estimates, batches, _flatness)
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
    surfaces = {}
    estimates: list = [None] * len(pair_list)
    batches: dict = {}  # (PD shape, measures) -> [(pair position, (g1, g2, r, o) PD)]
    for i, ((fa, fb), result) in enumerate(zip(pair_list, results)):
        measures = (_measure_for(fa, measure), _measure_for(fb, measure))
        shape = result.grid_shape
        if result.individual is not None:
            n, o = result.individual.shape[0], len(result.output_names)
            estimates[i], surface = _in_float64(
                _interaction_replicates, result.individual.reshape(n, -1, o), weights,
                shape=shape, measures=measures, average=average, trim=trim)
            surfaces[(fa.name, fb.name)] = surface.reshape(*shape, o)
            continue
        # one (g1, g2, r, o) PD per weighting, or the PD alone (r = 1)
        pd = replicated[i] if replicated is not None else result.average[:, :, None, :]
        batches.setdefault((pd.shape, measures), []).append((i, pd))
        surfaces[(fa.name, fb.name)] = result.average
    _batched(estimates, batches, _interaction_strengths)
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
