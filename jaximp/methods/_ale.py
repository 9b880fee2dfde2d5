"""Accumulated local effects (Apley & Zhu 2020): first and second order, finite-difference or
gradient, and the ALE-based importance and interaction strength.

ALE is one engine plan with per-row replacement values: every row is evaluated at the lower and
the upper edge of the bin it falls in (``at_coded_values``: the table holds the edges, the row's
code picks them), and a reducer sums the differences per bin (:class:`PairSums`). A feature
costs 2 model calls per row, a pair 4, whatever the number of bins; all features of a call go to
the engine together. Bootstrap replicates are further weightings of the same per-row differences
inside the reducer, so the bands cost no extra model call. Derivative ALE evaluates the model's
gradient at the rows through the same engine (a derived predictor whose outputs are partial
derivatives) and groups it per bin (:class:`GradientSums`).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..data import (
    Choice,
    Dataset,
    Flag,
    Replicates,
    as_key,
    check_int,
    output_index,
    renamed_keywords,
    resolve_pairs,
    select_outputs,
    summaries,
    validate_params,
)
from ..engine import at_values, check_collapse, evaluate
from ..models import Predictor, gradient_predictor
from ..results import (
    ALECurveDetails,
    ALEDetails,
    FeatureImportance,
    FeatureInteraction,
    new_figure,
)
from ._ale_plan import (
    CENTRINGS,
    RUG_POINTS,
    ALEPlanBuilder,
    ALESpec,
    AlibiBins,
    GradientSums,
    PairSums,
    bin_centred,
    first_order,
    make_spec,
    second_order,
    spec_weights,
)
from ._setup import bootstrap_weights, cached_stage, prepare, weightings_digest

__all__ = ["AccumulatedLocalEffects", "ale", "ale_importance", "ale_interaction"]

# the bins of this many (features, bins) kept per dataset: each holds O(rows) codes
_SPECS_KEPT = 64


# ---------------------------------------------------------------------------------------------
# Result.
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class AccumulatedLocalEffects:
    """The accumulated local effect of one feature (first order) or a pair (second order).

    Attributes
    ----------
    feature_names : tuple of str, length 1 or 2
    feature_kinds : tuple of str
        ``"continuous"``, ``"categorical"`` or ``"onehot"`` per feature.
    edges : tuple of arrays
        Numeric feature: its bin edges (k + 1,), the points where the curve is given.
        Categorical feature: its level labels (k,), in the ALE order.
    output_names : tuple of str, length o
    uncentred : ndarray of shape (k + 1, o), (k, o) for a categorical feature, or
        (k1 + 1, k2 + 1, o) for a pair
        The accumulated effect, 0 at the first edge (level).
    centred : ndarray, same shape
        ``uncentred`` minus its weighted mean over the data rows (for a pair: the pure
        second-order effect, first-order parts removed, then centred).
    counts : ndarray of shape (k,) or (k1, k2)
        Rows in each bin (level, cell).
    bin_weights : ndarray, same shape as counts
        Sum of the case weights in each bin.
    derivative : bool
        Whether the steps are mean partial derivatives times bin widths.
    replicates : ndarray of shape (..., r) or None
        The centred curve of each bootstrap replicate (same bins), replicates last: the shape
        of ``centred`` plus one axis of r.
    info : ALECurveDetails
        ``rug``: about 500 of the feature's values (every (n / 500)-th row), sorted;
        ``spread``: (o,) the weighted standard deviation of the centred effect over the rows
        (:func:`ale_importance` / :func:`ale_interaction`), ``spread_replicates``: (o, r) the
        same per bootstrap replicate, or None; ``n_bootstrap``; ``centered`` (``"rows"`` or
        ``"bins"``, see :func:`ale`); ``n_missing``: rows left out because the feature (either
        feature of a pair) is missing (NaN).
    """

    feature_names: tuple[str, ...]
    feature_kinds: tuple[str, ...]
    edges: tuple
    output_names: tuple[str, ...]
    uncentred: np.ndarray
    centred: np.ndarray
    counts: np.ndarray
    bin_weights: np.ndarray
    derivative: bool = False
    replicates: np.ndarray | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        order = "second-order" if len(self.feature_names) == 2 else "first-order"
        shape = " x ".join(str(len(e) - (0 if k != "continuous" else 1)) for e, k in
                           zip(self.edges, self.feature_kinds))
        values = self.centred[..., output_index(self.output_names, None)]
        extra = f", {self.replicates.shape[-1]} replicates" if self.replicates is not None else ""
        return (f"AccumulatedLocalEffects({' x '.join(self.feature_names)}: {order}, "
                f"{shape} {'levels' if self.feature_kinds[0] != 'continuous' else 'bins'}, "
                f"outputs {list(self.output_names)}, centred in [{values.min():.4g}, "
                f"{values.max():.4g}]{extra})")

    def intervals(self, confidence: float = 0.95) -> np.ndarray:
        """Percentile bootstrap band of the centred curve, shape (2, ...)."""
        from ..results import interval_probabilities

        if self.replicates is None:
            raise ValueError("this ALE has no bootstrap replicates; rerun with n_bootstrap >= 2.")
        return np.quantile(self.replicates, interval_probabilities(confidence), axis=-1)

    def std(self, ddof: int = 0) -> np.ndarray:
        """Standard deviation of the centred curve over the bootstrap replicates, the shape of
        ``centred``; ``ddof=1`` is R's ``sd()``."""
        from ..results import replicate_std

        return replicate_std(self.replicates, ddof, "ale")

    def to_frame(self) -> pd.DataFrame:
        """Tidy table, one row per curve point and output: ``value`` (``value_1``,
        ``value_2`` for a pair), ``output``, ``ale`` (centred), ``ale_uncentred``, ``count``
        (rows in the bin ending at the point; NaN at the first edge), and ``q025``, ``q975``
        (the 95% percentile band, as every result's frame) with bootstrap replicates."""
        frames = []
        band = None if self.replicates is None else self.intervals()
        if len(self.feature_names) == 2:
            g1, g2 = np.meshgrid(*self.edges, indexing="ij")
            base = {"value_1": g1.reshape(-1), "value_2": g2.reshape(-1)}
            size = g1.size
        else:
            base = {"value": np.asarray(self.edges[0], dtype=object if self.feature_kinds[0]
                                        != "continuous" else np.float64)}
            size = len(self.edges[0])
            if self.feature_kinds[0] == "continuous":
                base["count"] = np.concatenate([[np.nan], self.counts])
            else:
                base["count"] = self.counts.astype(np.float64)
        for j, name in enumerate(self.output_names):
            frame = pd.DataFrame(dict(base))
            frame["output"] = name
            frame["ale"] = self.centred[..., j].reshape(size)
            frame["ale_uncentred"] = self.uncentred[..., j].reshape(size)
            if band is not None:
                frame["q025"] = band[0][..., j].reshape(size)
                frame["q975"] = band[1][..., j].reshape(size)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    def plot(self, output: int | str | None = None, ax=None):
        """First order: the centred curve (and its band) with a rug of the data, or points
        per level with the levels' weights as bars; second order: a heat map over the two
        features' values. Returns the Axes."""
        from matplotlib import transforms

        j = output_index(self.output_names, output)
        if ax is None:
            _, ax = new_figure(4, 3)
        if len(self.feature_names) == 2:
            mesh = ax.pcolormesh(self.edges[1], self.edges[0], self.centred[..., j],
                                 shading="gouraud", cmap="RdBu_r")
            ax.figure.colorbar(mesh, ax=ax, label=f"second-order ALE ({self.output_names[j]})")
            ax.set_xlabel(self.feature_names[1])
            ax.set_ylabel(self.feature_names[0])
            return ax
        y = self.centred[:, j]
        if self.feature_kinds[0] == "continuous":
            x = np.asarray(self.edges[0], np.float64)
            if self.replicates is not None:
                low, high = self.intervals()
                ax.fill_between(x, low[:, j], high[:, j], color="tab:blue", alpha=0.2, lw=0)
            ax.plot(x, y, color="tab:blue", lw=2, marker="o", ms=2, label="ALE")
            rug = self.info.get("rug")
            if rug is not None:
                trans = transforms.blended_transform_factory(ax.transData, ax.transAxes)
                ax.vlines(rug, 0, 0.04, transform=trans, color="0.3", lw=0.5, alpha=0.5)
        else:
            x = np.arange(len(self.edges[0]))
            bars = ax.twinx()
            bars.bar(x, self.bin_weights / self.bin_weights.sum(), color="0.85", width=0.6)
            bars.set_ylabel("share of rows")
            ax.set_zorder(bars.get_zorder() + 1)
            ax.patch.set_visible(False)
            if self.replicates is not None:
                low, high = self.intervals()
                ax.errorbar(x, y, yerr=np.stack([y - low[:, j], high[:, j] - y]).clip(min=0),
                            fmt="none", color="tab:blue")
            ax.plot(x, y, "o", color="tab:blue", label="ALE")
            ax.set_xticks(x, [str(v) for v in self.edges[0]])
        ax.axhline(0, color="0.6", lw=0.5)
        ax.set_xlabel(self.feature_names[0])
        ax.set_ylabel(f"ALE ({self.output_names[j]})")
        return ax


# ---------------------------------------------------------------------------------------------
# The computation.
# ---------------------------------------------------------------------------------------------


def _rug(dataset: Dataset, spec: ALESpec):
    if spec.kind != "numeric":
        return None
    x = dataset.X[:, spec.features[0].columns[0]]
    if spec.present is not None:
        x = x[spec.present]
    return np.sort(x[:: max(1, x.size // RUG_POINTS)])


def _power_of_two(size: int) -> int:
    return max(8, 1 << (int(size) - 1).bit_length())


def _compute(dataset: Dataset, predictor: Predictor, specs: list[ALESpec], weights: np.ndarray,
             out_idx: list[int], derivative: bool, engine: dict, centered: str = "rows",
             spec_keys: tuple | None = None) -> list[AccumulatedLocalEffects]:
    """Every spec's ALE in one engine call; ``weights`` (1 + r, n): the case weights, then one
    weighting per bootstrap replicate. The spreads come from the curves centred over the rows
    whatever centring (``centered``) the returned curves use. ``spec_keys``: what the specs
    are made of (:func:`_specs`), by which their plan is kept; None: not kept."""
    # sizes rounded up (groups and weightings that stay empty), so that nearby bin and replicate
    # counts reuse one compiled evaluation
    n_weightings = weights.shape[0]
    padded = np.zeros((1 if n_weightings == 1 else _power_of_two(n_weightings),
                       weights.shape[1]))
    padded[:n_weightings] = weights
    # the plan and reducer of specs made of bin counts (``spec_keys``, see _specs), with
    # their bootstrap weightings (by their contents): a repeated call sends nothing again
    weighted = None if n_weightings == 1 else weightings_digest(padded)
    model, plan, reducer, pairs = cached_stage(
        dataset, ("ale plan", spec_keys, predictor, derivative, weighted),
        lambda: _ale_plan(dataset, predictor, specs, padded, derivative),
        uncached=spec_keys is None or (n_weightings > 1 and weighted is None))
    if derivative:
        totals = evaluate(model, dataset, plan, reducer, label="derivative ALE",
                          **engine)[0]  # (F, r, G, o + 1)
        per_spec = [(t[..., :-1], t[..., -1]) for t in totals]
    else:
        totals = evaluate(model, dataset, plan, reducer,
                          label="accumulated local effects", **engine)  # (pairs, r, G, o + 1)
        per_spec = []
        for s, idx in zip(specs, pairs):
            sums = totals[idx].sum(axis=0)
            weight = totals[idx[0], ..., -1] if s.kind == "pair" else sums[..., -1]
            per_spec.append((sums[..., :-1], weight))
    names = tuple(predictor.output_names[i] for i in out_idx)
    results = []
    for s, (sums, weight) in zip(specs, per_spec):
        size = int(np.prod(s.n_bins)) - (1 if s.kind == "categorical" else 0)
        kept = spec_weights(s, weights)  # the rows left out weigh 0 in centring and spread
        sums = sums[:n_weightings, :size][..., out_idx]
        weight = weight[:n_weightings, :size]
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = sums / weight[..., None]
        if s.kind == "pair":
            uncentred, centred, spread = second_order(s, delta, weight, kept)
            cells = s.codes[0] * s.n_bins[1] + s.codes[1]
            counts = np.bincount(cells if s.present is None else cells[s.present],
                                 minlength=size).reshape(s.n_bins)
            bin_w = np.bincount(cells, kept[0], size).reshape(s.n_bins)
        else:
            widths = np.diff(s.edges[0]) if derivative else None
            uncentred, centred, spread = first_order(s, delta, weight, kept, widths)
            k = s.n_bins[0]
            counts = np.bincount(s.codes[0] if s.present is None else s.codes[0][s.present],
                                 minlength=k)
            bin_w = np.bincount(s.codes[0], kept[0], k)
        if centered == "bins" and s.kind != "categorical":  # a categorical curve's two
            centred = bin_centred(uncentred, weight)  # conventions agree: level means
        edges = tuple(s.edges) if s.kind != "categorical" else (s.labels,)
        results.append(AccumulatedLocalEffects(
            feature_names=tuple(f.name for f in s.features),
            feature_kinds=tuple(f.kind for f in s.features),
            edges=edges, output_names=names, uncentred=uncentred[0], centred=centred[0],
            counts=counts, bin_weights=bin_w, derivative=derivative,
            replicates=np.moveaxis(centred[1:], 0, -1) if weights.shape[0] > 1 else None,
            info=ALECurveDetails(
                rug=_rug(dataset, s), spread=spread[0],
                spread_replicates=spread[1:].T if weights.shape[0] > 1 else None,
                n_bootstrap=weights.shape[0] - 1, centered=centered, n_missing=s.n_missing),
        ))
    _warn_left_out(specs)
    return results


def _ale_plan(dataset: Dataset, predictor: Predictor, specs: list[ALESpec], padded, derivative):
    """The model (its gradient for ``derivative``), engine plan and reducer of the specs'
    ALE, and each spec's items (finite differences)."""
    for s in specs:  # edges the model's dtype merges give wrong steps (e.g. timestamps)
        for feat, edges in zip(s.features, s.edges if s.kind != "categorical" else ()):
            check_collapse(feat.name, edges, predictor.dtype, "bin edges", stacklevel=5)
    n_groups = _power_of_two(max(s.n_groups for s in specs))
    c = dataset.n_columns
    if derivative:
        columns = [s.features[0].columns[0] for s in specs]
        codes = np.stack([s.discard(s.codes[0], s.n_bins[0]) for s in specs])
        plan = at_values(np.zeros((1, c), bool), [0], np.zeros((1, c)), [0])
        return (gradient_predictor(predictor, columns, c), plan,
                GradientSums(codes, n_groups, padded), None)
    builder = ALEPlanBuilder(c)
    pairs = [builder.add(s) for s in specs]
    reducer = PairSums(np.stack(builder.group_codes), np.asarray(builder.item_group, np.int32),
                       n_groups, padded)
    return predictor, builder.plan(), reducer, pairs


def _specs(dataset: Dataset, feature_sets, bins_each, w) -> tuple[list[ALESpec], tuple | None]:
    """``make_spec`` of each feature set with its bins, and what they are made of (None when
    some bins are explicit edges): specs of bins given as counts are kept on the (immutable)
    dataset, whose own case weights ``w`` they use, so that a repeated call reuses the
    edges, the rows' bins and with them the plan."""
    specs, keys = [], []
    for feats, bins in zip(feature_sets, bins_each):
        key = (tuple(f.name for f in feats), bins)
        try:
            hash(key)
        except TypeError:  # explicit edges (an array): made anew
            specs.append(make_spec(dataset, feats, bins, w))
            keys = None
            continue
        specs.append(dataset.recent("ale specs", key, lambda feats=feats, bins=bins: make_spec(
            dataset, feats, bins, w), _SPECS_KEPT))
        if keys is not None:
            keys.append(key)
    return specs, None if keys is None else tuple(keys)


def _warn_left_out(specs: list[ALESpec]) -> None:
    """One warning per call naming the features whose missing rows were left out."""
    left_out = {" x ".join(f.name for f in s.features): s.n_missing for s in specs
                if s.n_missing}
    if left_out:
        shown = ", ".join(f"{name!r}: {count}" for name, count in list(left_out.items())[:5])
        more = f" and {len(left_out) - 5} more" if len(left_out) > 5 else ""
        warnings.warn(
            f"rows whose feature is missing (NaN) cannot be placed in a bin, so they are left "
            f"out of that feature's accumulated local effects (rows left out: {shown}{more}; "
            "info['n_missing'] of each curve). Impute them first to keep them.",
            UserWarning, stacklevel=5)


def _check_bins(bins, min_bin_points=None, name: str = "bins"):
    """``bins`` checked (``"alibi"`` as :class:`AlibiBins` with ``min_bin_points``)."""
    if isinstance(bins, str) and bins == "alibi":
        return AlibiBins(4 if min_bin_points is None else
                         check_int(min_bin_points, "min_bin_points", 1))
    if min_bin_points is not None:
        raise ValueError(f"min_bin_points applies to bins='alibi' only (alibi's binning); got "
                         f"it with bins={bins!r:.40}.")
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        return check_int(bins, name, 1)
    if isinstance(bins, (bool, str)) or bins is None:
        raise ValueError(
            f"{name} must be an int >= 1, 'alibi' or a 1-D strictly increasing array of bin "
            f"edges; got {bins!r}."
        )
    return bins


def _setup(model, X, *, sample_weight, n_bootstrap, random_state, derivative, output,
           feature_names, categorical, groups, variables, memory_budget, progress):
    derivative, n_bootstrap, key = bool(derivative), int(n_bootstrap), as_key(random_state)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress, allow_missing=True,
    )
    if derivative and (predictor.host or predictor.piecewise_constant):
        why = ("is a tree model, piecewise constant: its derivative is 0 almost everywhere"
               if predictor.piecewise_constant else
               "runs outside JAX (NumPy, scikit-learn, or torch through DLPack), where jax.grad "
               "cannot reach")
        raise ValueError(
            f"derivative=True differentiates the model with jax.grad, but {predictor.name} "
            f"{why}; use derivative=False (finite differences between bin edges)."
        )
    out_idx = select_outputs(predictor.output_names, output)
    weights, _ = bootstrap_weights(dataset, n_bootstrap, key)
    engine = {"memory_budget": memory_budget, "progress": progress}
    return dataset, predictor, out_idx, weights, derivative, engine


def _spread_summaries(results: list[AccumulatedLocalEffects]):
    """Point estimate, bootstrap std and replicates of each result's per-row spread."""
    estimates = np.stack([np.concatenate([r.info["spread"][:, None]] + (
        [r.info["spread_replicates"]] if r.replicates is not None else []), axis=1)
        for r in results])  # (sets, o, 1 + r)
    return summaries(estimates)


def _check_derivative_specs(specs: list[ALESpec]) -> None:
    for s in specs:
        if s.kind != "numeric":
            what = "a pair" if s.kind == "pair" else f"categorical feature {s.features[0].name!r}"
            raise ValueError(
                f"derivative=True computes first-order ALE of numeric features; got {what}. "
                "Use derivative=False."
            )


_CENTERED_FIX = ("ALE curves are always centred (the curve before centring is .uncentred); "
                 "centered picks how: 'rows', or 'bins' as ALEPlot, iml and alibi.")


@renamed_keywords(centring="centered")
@validate_params(derivative=Flag(), n_bootstrap=Replicates(),
                 centered=Choice(*CENTRINGS, fix=_CENTERED_FIX))
def ale(
    model,
    X,
    features,
    *,
    bins=20,
    min_bin_points: int | None = None,
    derivative: bool = False,
    centered: str = "rows",
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
) -> AccumulatedLocalEffects:
    """Accumulated local effects (Apley & Zhu 2020) of one feature, or of a pair (second
    order).

    A numeric feature's range is cut into bins at its quantiles. Every row is moved to the
    lower and the upper edge of its own bin, the model's differences are averaged per bin
    (weighted), and the averages are accumulated from the first edge; the curve is then
    centred to weighted mean 0 over the data. Only the rows of a bin are moved, and only across
    that bin, so unlike partial dependence the model is not evaluated far from the data when
    features are correlated.

    Bins: ``bins=K`` puts the edges at ALEPlot's quantiles, R's ``quantile(type = 1)`` at
    ``seq(1/K, 1, length.out = K)`` in R's arithmetic (whose rounding, 0.6000000000000001,
    can take the next order statistic; with unequal weights, the smallest value whose
    cumulative weight share reaches each probability), plus the minimum as the first edge;
    tied quantiles are merged, so there may be fewer than K bins and every bin holds data. Bin k
    holds ``z_{k-1} < x <= z_k``; the first bin also holds the minimum. This is ALEPlot's
    binning (iml's probabilities ``seq(0, 1, length.out = K + 1)`` round differently); alibi
    uses the same assignment but linearly interpolated quantiles (``np.percentile``) and picks
    their number adaptively. Explicit edges may be given instead (they must cover the data; an
    empty bin contributes a zero step).

    Categorical (or one-hot) features: the levels are the points of the curve, ordered by the
    similarity of the other features' distributions within each level (iml's rule: summed
    Kolmogorov-Smirnov distances for numeric features, taken at 100 quantiles of the feature
    as iml and ALEPlot do, total variation distance of level
    frequencies for categorical ones, then the first axis of classical multidimensional
    scaling, oriented so that the data's first level comes before its last); ordered pandas
    categories keep their declared order, as in iml. The step between
    consecutive levels averages the rows of both: rows at level s moved up to s + 1 and rows
    at s + 1 moved down to s.

    Centring: the uncentred curve is interpolated linearly between edges at each row's value
    and its weighted mean over the rows is subtracted, so a linear model's ALE is exactly its
    coefficient times the centred feature. ALEPlot, iml and alibi subtract instead the
    bin-weighted mean of each bin's two end values, which differs by a constant
    (``centered="bins"``).

    Second order (a numeric pair): the second differences over the cells of the two features'
    bins are averaged per cell (an empty cell takes the nearest non-empty cell's value, cells at
    their bins' midpoints scaled to the features' ranges, as ALEPlot), accumulated over both
    axes, and the first-order parts are removed as in ALEPlot; the remaining pure interaction
    surface is centred to weighted mean 0 over the rows (bilinear interpolation).

    Derivative ALE (``derivative=True``, JAX models): the step of bin k is the weighted mean,
    over the rows of the bin, of the model's partial derivative at the row itself (``jax.jvp``
    or ``jax.vjp``) times the bin's width. One gradient evaluation per row replaces two model
    calls per row, and all features share it (:func:`ale_importance`). It equals the
    finite-difference ALE up to O(width^2) for smooth models; it differs where the model has
    kinks or jumps (a ReLU network, trees): the derivative at the rows ignores a kink between
    them, while the difference across the bin sees it.

    Missing values (NaN, for a host model that handles them or boosting trees read into
    arrays; a JAX model is refused them): a numeric feature's bins come from its values
    present; a row whose feature is missing cannot be placed in a bin, so it is left out of
    that feature's steps, centring, counts and spread (``info["n_missing"]`` counts them and
    a warning names them); a missing level of a categorical feature likewise. A pair is
    computed, bins included, on the rows with both features present. NaN in the other columns
    stays in the rows and goes to the model as it is. This is the convention of R's effectplots (rows in the missing bin
    are dropped); ALEPlot stops at missing values.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        The data; every row is evaluated at its own bin's edges.
    features : str or int, or a pair of them
        One feature (first order) or two numeric features (second order).
    bins : int, "alibi" or array, default 20
        Number of quantile bins, or explicit increasing bin edges (numeric features).
        ``"alibi"``: alibi's edges (``ALE.explain``, its ``low_resolution_threshold=10``): the
        distinct values of a feature with at most 10, else linearly interpolated percentiles,
        as many as keep more than ``min_bin_points`` rows in every bin (unweighted); with
        ``centered="bins"`` the curve is alibi's. For a pair: one of these for both, or a
        tuple ``(bins_1, bins_2)``.
    min_bin_points : int, optional
        alibi's ``min_bin_points`` (default 4), for ``bins="alibi"`` only.
    derivative : bool, default False
        Steps from the model's partial derivatives at the rows (JAX models, one numeric
        feature).
    centered : {"rows", "bins"}, default "rows"
        How ``centred`` is centred (ALE is always centred, so where partial dependence's
        ``centered`` is a bool, here it names the centring). ``"rows"``: the curve (surface)
        interpolated at every row has weighted mean 0. ``"bins"``: ALEPlot's, iml's and
        alibi's convention, minus the mean over bins of each bin's average of its two end
        values (a pair: of its four corners), weighted by the bins' row weights. The two
        differ by a constant; they agree for categorical features. ``replicates`` are centred
        the same way; ``uncentred`` and the importances read from the curve's spread over the
        rows do not depend on it. The former spelling ``centring=`` still works and warns
        (``DeprecationWarning``).
    output : int, str or list, optional
        Model outputs to keep (default all).
    sample_weight : array of shape (n,), optional
        Case weights: weighted quantile bins, weighted means per bin, weighted centring.
    n_bootstrap : int, default 0
        Bootstrap replicates over the rows (0: none, else >= 2), with the bins of the full data.
        Each replicate reweights the per-row differences inside the same evaluation; no extra
        model call. A bin empty in a replicate takes the full data's step.
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Seed of the bootstrap.
    feature_names, categorical, groups
        Data description; see :func:`jaximp.as_dataset`.
    variables : pytree, optional
        Variables of a Flax linen module.
    memory_budget : int, optional
        Bytes the whole call may use beyond its result and the data (default
        :func:`jaximp.default_memory_budget`); a result that cannot fit is refused before any
        model evaluation.
    progress : bool, optional
        A progress line on stderr (default: in an interactive terminal, for calls of more than
        one chunk, or with ``JAXIMP_PROGRESS=1``; process 0 only).

    Returns
    -------
    AccumulatedLocalEffects

    Notes
    -----
    The per-bin sums are scatter-adds on the device. On a GPU their float32 terms are added in
    an order that varies from call to call, so repeated calls agree to float32 rounding (an
    H200 gave differences of 2e-8 on values near 24), not bit for bit; on a CPU they are
    identical.

    References
    ----------
    Apley & Zhu (2020), "Visualizing the effects of predictor variables in black box supervised
    learning models", JRSS B 82(4).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(200, 2))
    >>> result = ale(lambda X: 3 * X[:, 0] + X[:, 1] ** 2, X, "x0", bins=5)
    >>> result.centred.shape
    (6, 1)
    >>> bool(np.allclose(result.centred[:, 0], 3 * (result.edges[0] - X[:, 0].mean()),
    ...                  atol=1e-5))
    True
    """
    dataset, predictor, out_idx, weights, derivative, engine = _setup(
        model, X, sample_weight=sample_weight, n_bootstrap=n_bootstrap,
        random_state=random_state, derivative=derivative, output=output,
        feature_names=feature_names, categorical=categorical, groups=groups,
        variables=variables, memory_budget=memory_budget, progress=progress)
    feats = dataset.resolve(features)
    if len(feats) > 2:
        raise ValueError(
            f"features must be one feature or a pair of features; got {len(feats)} features."
        )
    if len(feats) == 2:
        if isinstance(bins, tuple) and len(bins) == 2:
            bins = tuple(_check_bins(b, min_bin_points) for b in bins)
        else:
            bins = (_check_bins(bins, min_bin_points),) * 2
    else:
        bins = _check_bins(bins, min_bin_points)
    specs, spec_keys = _specs(dataset, [feats], [bins], weights[0])
    if derivative:
        _check_derivative_specs(specs)
    return _compute(dataset, predictor, specs, weights, out_idx, derivative, engine,
                    centered, spec_keys)[0]


@validate_params(derivative=Flag(), n_bootstrap=Replicates())
def ale_importance(
    model,
    X,
    *,
    features=None,
    bins=20,
    min_bin_points: int | None = None,
    derivative: bool = False,
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
    """ALE-based importance: how far each feature's accumulated local effect is from flat.

    The flatness idea of Greenwell et al. (2018) applied to ALE instead of partial dependence:
    the importance of a feature is the weighted standard deviation (ddof 0, the case weights)
    over the data rows of its centred ALE evaluated at each row's own value,
    ``sqrt(sum_i w_i ALE(x_ij)^2 / sum_i w_i)`` (linear interpolation between bin edges; a
    categorical feature's ALE at the row's level). Rows weight the curve where the data are,
    so a feature whose effect is strong only in an empty region counts little. For a linear
    model it is ``|b_j|`` times the weighted standard deviation of ``x_j``. On correlated
    features it ranks by the model's local use of a feature, where PD-based importance can
    credit a feature the model does not use only through extrapolation. All features come
    from one engine call (2 model evaluations per row and feature; with ``derivative=True``
    one gradient evaluation per row for all features). Rows missing a feature (NaN) are left
    out of its sum, as in :func:`ale`.

    Parameters
    ----------
    model, X
        As in :func:`ale`.
    features : str, int or list, optional
        Features to score (default all).
    bins, min_bin_points, derivative, output, sample_weight, n_bootstrap, random_state
        As in :func:`ale`; ``derivative=True`` needs numeric features and a JAX model.
    feature_names, categorical, groups, variables, memory_budget, progress
        As in :func:`ale`.

    Returns
    -------
    FeatureImportance
        ``method="ale"``; with ``n_bootstrap`` also the bootstrap standard error and
        replicates. ``info["ale"]`` maps each feature to its :class:`AccumulatedLocalEffects`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(300, 3))
    >>> imp = ale_importance(lambda X: 2 * X[:, 0] - X[:, 1], X, bins=10)
    >>> ratio = imp.importances_mean[0, 0] / imp.importances_mean[1, 0]
    >>> bool(np.isclose(ratio, 2 * X[:, 0].std() / X[:, 1].std(), rtol=1e-4)), imp.top(1)
    (True, ['x0'])
    """
    dataset, predictor, out_idx, weights, derivative, engine = _setup(
        model, X, sample_weight=sample_weight, n_bootstrap=n_bootstrap,
        random_state=random_state, derivative=derivative, output=output,
        feature_names=feature_names, categorical=categorical, groups=groups,
        variables=variables, memory_budget=memory_budget, progress=progress)
    bins = _check_bins(bins, min_bin_points)
    chosen = dataset.resolve(features)
    specs, spec_keys = _specs(dataset, [[f] for f in chosen], [bins] * len(chosen),
                              weights[0])
    if derivative:
        _check_derivative_specs(specs)
    results = _compute(dataset, predictor, specs, weights, out_idx, derivative, engine,
                       spec_keys=spec_keys)
    point, std, replicates = _spread_summaries(results)
    return FeatureImportance(
        method="ale", feature_names=tuple(f.name for f in chosen),
        output_names=results[0].output_names, importances_mean=point, importances_std=std,
        importances=replicates,
        info=ALEDetails(ale={f.name: r for f, r in zip(chosen, results)},
                        n_bootstrap=weights.shape[0] - 1, derivative=derivative),
    )


@validate_params(n_bootstrap=Replicates())
def ale_interaction(
    model,
    X,
    *,
    pairs=None,
    features=None,
    bins=10,
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
    """Interaction strength of numeric feature pairs from their second-order ALE.

    The strength of a pair is the weighted standard deviation (ddof 0, the case weights) over
    the data rows of its pure second-order ALE (first-order effects removed, centred; see
    :func:`ale`) evaluated at each row's values by bilinear interpolation between the bin edges:
    ``sqrt(sum_i w_i ALE_jk(x_ij, x_ik)^2 / sum_i w_i)``, on the prediction's scale. An
    additive model gives 0; ``f = x_j x_k`` gives about ``sd(x_j) sd(x_k)`` for independent
    features. All pairs come from one engine call, 4 model evaluations per row and pair.
    Rows missing either feature (NaN) are left out of the pair's sum, as in :func:`ale`.

    Parameters
    ----------
    model, X
        As in :func:`ale`.
    pairs : list of pairs, optional
        Pairs to score, e.g. ``[("x0", "x1")]``; default every pair among ``features``.
    features : list, optional
        Features whose pairs are scored when ``pairs`` is None (default every numeric
        single-column feature).
    bins : int, default 10
        Quantile bins per feature (so up to ``bins ** 2`` cells per pair).
    output, sample_weight, n_bootstrap, random_state
        As in :func:`ale`.
    feature_names, categorical, groups, variables, memory_budget, progress
        As in :func:`ale`.

    Returns
    -------
    FeatureInteraction
        ``method="ale_interaction"``; ``info["ale"]`` maps each pair to its second-order
        :class:`AccumulatedLocalEffects`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(300, 3))
    >>> res = ale_interaction(lambda X: X[:, 0] * X[:, 1] + X[:, 2], X, bins=5)
    >>> res.top(1), float(res.values[2, 0]) < 1e-5   # pairs: (x0,x1), (x0,x2), (x1,x2)
    ([('x0', 'x1')], True)
    """
    dataset, predictor, out_idx, weights, _, engine = _setup(
        model, X, sample_weight=sample_weight, n_bootstrap=n_bootstrap,
        random_state=random_state, derivative=False, output=output,
        feature_names=feature_names, categorical=categorical, groups=groups,
        variables=variables, memory_budget=memory_budget, progress=progress)
    bins = _check_bins(bins)
    chosen = dataset.resolve(features)
    if features is None:  # every numeric single-column feature
        chosen = [f for f in chosen if not f.is_categorical and len(f.columns) == 1]
    pair_list = resolve_pairs(dataset, chosen, "all" if pairs is None else pairs, None)
    specs, spec_keys = _specs(dataset, [list(pair) for pair in pair_list],
                              [(bins, bins)] * len(pair_list), weights[0])
    results = _compute(dataset, predictor, specs, weights, out_idx, False, engine,
                       spec_keys=spec_keys)
    point, std, replicates = _spread_summaries(results)
    return FeatureInteraction(
        method="ale_interaction",
        feature_sets=tuple((a.name, b.name) for a, b in pair_list),
        output_names=results[0].output_names, values=point, values_std=std,
        replicates=replicates,
        info=ALEDetails(ale={(a.name, b.name): r for (a, b), r in zip(pair_list, results)},
                        n_bootstrap=weights.shape[0] - 1),
    )
