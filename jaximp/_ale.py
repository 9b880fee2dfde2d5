"""Accumulated local effects (Apley & Zhu 2020): first and second order, finite-difference or
gradient, and the ALE-based importance and interaction strength.

ALE is one engine plan with per-row replacement values: every row is evaluated at the lower and
the upper edge of the bin it falls in (``at_coded_values``: the table holds the edges, the row's
code picks them), and a reducer sums the differences per bin (:class:`_PairSums`). A feature
costs 2 model calls per row, a pair 4, whatever the number of bins; all features of a call go to
the engine together. Bootstrap replicates are further weightings of the same per-row differences
inside the reducer, so the bands cost no extra model call. Derivative ALE evaluates the model's
gradient at the rows through the same engine (a derived predictor whose outputs are partial
derivatives) and groups it per bin (:class:`_GradientSums`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._details import ALECurveDetails, ALEDetails
from ._params import Choice, Flag, Replicates, validate_params
from ._common import as_key, check_bool, check_int, prepare, select_outputs
from ._data import Dataset, Feature
from ._edge import check_n_bootstrap, replicate_weights, resolve_pairs, row_weights, summaries
from ._engine import evaluate
from ._model import Predictor, stable_apply
from ._plans import at_coded_values, at_values
from ._reducers import Reducer
from ._results import FeatureImportance, FeatureInteraction

__all__ = ["AccumulatedLocalEffects", "ale", "ale_importance", "ale_interaction",
           "gradient_predictor"]

_RUG_POINTS = 500
_CENTRINGS = ("rows", "bins")


# ---------------------------------------------------------------------------------------------
# Reducers.
# ---------------------------------------------------------------------------------------------


def _group_sums(values, codes, n_groups: int, xp):
    """Sums per group: values (k, n, m), codes (k, n) in 0..n_groups-1 -> (k, n_groups, m).
    A scatter-add, so memory stays O(n m) whatever the number of groups."""
    if xp is np:
        out = np.zeros((values.shape[0], n_groups, values.shape[2]))
        for j in range(values.shape[0]):
            np.add.at(out[j], codes[j], values[j])
        return out
    return jax.vmap(lambda v, c: jax.ops.segment_sum(v, c, n_groups))(values, codes)


def _weighted_group_sums(values, codes, w, n_groups: int, xp):
    """values (k, o, n), codes (k, n), weights w (n, r) -> (k, r, n_groups, o + 1): per
    weighting, the weighted sums of each group and (last column) its total weight."""
    k, o, n = values.shape
    r = w.shape[1]
    terms = xp.concatenate([xp.moveaxis(values, 1, 2)[:, :, None, :] * w[None, :, :, None],
                            xp.broadcast_to(w[None, :, :, None], (k, n, r, 1))], axis=-1)
    sums = _group_sums(terms.reshape(k, n, r * (o + 1)), codes, n_groups, xp)
    return xp.moveaxis(sums.reshape(k, n_groups, r, o + 1), 2, 1)


@dataclasses.dataclass(frozen=True, eq=False)
class _PairSums(Reducer):
    """Items come in pairs (lower, upper); per pair, the weighted sums over the rows of each
    group of ``upper - lower`` and the group's total weight, for every weighting.

    Row ``i`` of pair ``k`` is in group ``row_codes[item_code[2k], i]``. Partial per pair:
    (r, n_groups, o + 1), the last column the weights.
    """

    row_codes: np.ndarray  # (q, n)
    item_code: np.ndarray  # (b,)
    n_groups: int
    weights: np.ndarray  # (r, n)
    group = 2

    def row_arrays(self):
        return {"w": np.ascontiguousarray(self.weights.T, dtype=np.float32),
                "codes": np.ascontiguousarray(self.row_codes.T, dtype=np.int32)}

    def consts(self):
        return {"item_code": np.asarray(self.item_code, np.int32)}

    def key(self):
        return ("ale-pairs", self.n_groups)

    def partial_shape(self, n_outputs):
        return (self.weights.shape[0], self.n_groups, n_outputs + 1)

    def partial(self, preds, rows, valid, items, consts, xp):
        diff = preds[1::2] - preds[0::2]  # (pairs, o, n)
        codes = rows["codes"][:, consts["item_code"][items[::2]]].T  # (pairs, n)
        w = rows["w"].astype(preds.dtype) * valid[:, None]  # (n, r)
        return _weighted_group_sums(diff, codes, w, self.n_groups, xp)


@dataclasses.dataclass(frozen=True, eq=False)
class _GradientSums(Reducer):
    """One item whose ``F * o`` outputs are partial derivatives (feature-major); per feature
    ``f``, the weighted sums over the rows of each bin ``row_codes[f, i]`` and the bin's
    weight, for every weighting. Partial: (F, r, n_groups, o + 1)."""

    row_codes: np.ndarray  # (F, n)
    n_groups: int
    weights: np.ndarray  # (r, n)

    def row_arrays(self):
        return {"w": np.ascontiguousarray(self.weights.T, dtype=np.float32),
                "codes": np.ascontiguousarray(self.row_codes.T, dtype=np.int32)}

    def key(self):
        return ("ale-gradient", self.n_groups, self.row_codes.shape[0])

    def partial_shape(self, n_outputs):
        n_features = self.row_codes.shape[0]
        return (n_features, self.weights.shape[0], self.n_groups,
                n_outputs // n_features + 1)

    def partial(self, preds, rows, valid, items, consts, xp):
        ib, width, n = preds.shape
        n_features = self.row_codes.shape[0]
        grads = preds.reshape(ib * n_features, width // n_features, n)
        codes = xp.broadcast_to(rows["codes"].T[None], (ib, n_features, n)).reshape(-1, n)
        w = rows["w"].astype(preds.dtype) * valid[:, None]
        sums = _weighted_group_sums(grads, codes, w, self.n_groups, xp)
        return sums.reshape(ib, n_features, *sums.shape[1:])


def gradient_predictor(predictor: Predictor, columns: list[int], n_columns: int) -> Predictor:
    """The model's partial derivatives along ``columns`` as a predictor with ``F * o``
    outputs (feature-major): forward mode (one ``jvp`` per column) when there are no more
    columns than outputs, else reverse mode (one ``vjp`` per output). Rows must be predicted
    independently of each other, as every method here assumes."""
    o = predictor.n_outputs
    mode = "forward" if len(columns) <= o else "reverse"
    directions = np.zeros((len(columns), n_columns), np.float32)
    directions[np.arange(len(columns)), columns] = 1.0

    def make():
        def apply_gradient(params, X):
            base, dirs = params
            fn = lambda Z: predictor.apply(base, Z)  # noqa: E731
            dirs = dirs.astype(X.dtype)
            if mode == "forward":
                tangents = jax.vmap(lambda d: jax.jvp(
                    fn, (X,), (jnp.broadcast_to(d, X.shape),))[1])(dirs)  # (F, m, o)
                out = jnp.transpose(tangents, (1, 0, 2))
            else:
                value, pullback = jax.vjp(fn, X)
                basis = jnp.eye(value.shape[1], dtype=value.dtype)[:, None, :]
                grads = jax.vmap(lambda ct: pullback(jnp.broadcast_to(ct, value.shape))[0])(
                    basis)  # (o, m, c)
                out = jnp.einsum("kmc,fc->mfk", grads, dirs, precision="highest")
            return out.reshape(X.shape[0], -1).astype(jnp.float32)

        return apply_gradient

    apply = stable_apply(("ale-gradient", mode, predictor.apply), make)
    names = tuple(f"d{j}/{name}" for j in columns for name in predictor.output_names)
    return dataclasses.replace(
        predictor, apply=apply, params=(predictor.params, jnp.asarray(directions)),
        n_outputs=len(columns) * o, output_names=names, name=f"gradient of {predictor.name}")


# ---------------------------------------------------------------------------------------------
# Bins and level orders.
# ---------------------------------------------------------------------------------------------


def _weighted_quantiles_type1(x: np.ndarray, w: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Inverse of the weighted empirical CDF (R's ``quantile(type = 1)`` for equal weights):
    the smallest value whose cumulative weight share reaches each probability."""
    if np.all(w == w[0]):  # equal weights: order statistics, no full sort
        ranks = np.ceil(x.size * probs * (1 - 1e-12)).astype(np.int64) - 1
        ranks = np.clip(ranks, 0, x.size - 1)
        return np.partition(x, np.unique(ranks))[ranks]
    order = np.argsort(x, kind="stable")
    share = np.cumsum(w[order])
    share = share / share[-1]
    index = np.searchsorted(share, probs * (1 - 1e-12), side="left")
    return x[order][np.minimum(index, x.size - 1)]


def _numeric_edges(x: np.ndarray, w: np.ndarray, bins, name: str) -> np.ndarray:
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        quantiles = _weighted_quantiles_type1(x, w, np.arange(1, bins + 1) / bins)
        edges = np.unique(np.concatenate([[x.min()], quantiles, [x.max()]]))
        if edges.size < 2:
            raise ValueError(
                f"feature {name!r} has a single distinct value ({x[0]:g}); its accumulated "
                "local effect is undefined. Drop the feature."
            )
        return edges
    edges = np.asarray(bins, dtype=np.float64)
    if edges.ndim != 1 or edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(
            np.diff(edges) <= 0):
        raise ValueError(
            f"bins for feature {name!r} must be an int >= 1 or a 1-D strictly increasing array "
            f"of at least 2 finite bin edges; got {bins!r:.80}."
        )
    if edges[0] > x.min() or edges[-1] < x.max():
        raise ValueError(
            f"the bin edges of feature {name!r} must cover the data, [{x.min():g}, "
            f"{x.max():g}]; got [{edges[0]:g}, {edges[-1]:g}]. Extend the first and last edge."
        )
    return edges


def _bin_codes(x: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bin ``k`` (0-based) holds ``edges[k] < x <= edges[k + 1]``, the first bin also
    ``x == edges[0]``; and each row's position in its bin (0 at the lower edge, 1 at the
    upper)."""
    codes = np.clip(np.searchsorted(edges, x, side="left") - 1, 0, edges.size - 2)
    lower, upper = edges[codes], edges[codes + 1]
    return codes.astype(np.int32), np.clip((x - lower) / (upper - lower), 0.0, 1.0)


def _level_positions(dataset: Dataset, feat: Feature) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Each row's level index, the table rows (levels, columns) and the level labels."""
    block = dataset.X[:, list(feat.columns)]
    if feat.kind == "onehot":
        present, positions = np.unique(np.argmax(block, axis=1), return_inverse=True)
        table = np.eye(len(feat.columns))[present]
        labels = tuple(feat.levels[i] for i in present)
    else:
        values, positions = np.unique(block[:, 0], return_inverse=True)
        table = values[:, None]
        if feat.levels is None:
            labels = tuple(values.tolist())
        elif len(feat.levels) == values.size:
            labels = tuple(feat.levels)
        else:  # pandas categories: the codes index the declared levels, some unobserved
            labels = tuple(feat.levels[int(v)] for v in values)
    if table.shape[0] < 2:
        raise ValueError(
            f"categorical feature {feat.name!r} has a single level in the data; its "
            "accumulated local effect is undefined. Drop the feature."
        )
    return positions.astype(np.int32), table, labels


def _ecdfs(column: np.ndarray, positions: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """Weighted empirical CDF of ``column`` within each of ``k`` levels, at its distinct
    values: (k, u)."""
    values, index = np.unique(column, return_inverse=True)
    out = np.zeros((k, values.size))
    for level in range(k):
        rows = positions == level
        out[level] = np.cumsum(np.bincount(index[rows], w[rows], values.size))
        out[level] /= max(out[level, -1], 1e-300)
    return out


def _level_order(dataset: Dataset, feat: Feature, positions: np.ndarray,
                 w: np.ndarray) -> np.ndarray:
    """The order of a categorical feature's levels by the similarity of the other features
    (iml's rule): the distance of two levels is the sum, over the other features, of the
    Kolmogorov-Smirnov distance of a numeric feature's distribution among the rows of each
    level, or the total variation distance of a categorical feature's level frequencies;
    the levels are then ordered along the first axis of classical multidimensional scaling."""
    k = int(positions.max()) + 1
    if k <= 2:
        return np.arange(k)
    distance = np.zeros((k, k))
    for other in dataset.features:
        if other.name == feat.name:
            continue
        if other.is_categorical:
            codes = _level_positions(dataset, other)[0]
            freq = np.stack([np.bincount(codes[positions == a], w[positions == a],
                                         codes.max() + 1) for a in range(k)])
            freq /= np.maximum(freq.sum(axis=1, keepdims=True), 1e-300)
            distance += 0.5 * np.abs(freq[:, None] - freq[None]).sum(axis=-1)
            continue
        for column in other.columns:
            cdf = _ecdfs(dataset.X[:, column], positions, w, k)
            for a in range(k):
                distance[a] += np.abs(cdf[a][None] - cdf).max(axis=1)
    centring = np.eye(k) - 1.0 / k
    gram = -0.5 * centring @ (distance ** 2) @ centring
    _, vectors = np.linalg.eigh(gram)
    axis = vectors[:, -1]
    if axis[0] > axis[-1]:  # orient: the data's first level to the left of its last
        axis = -axis
    return np.argsort(axis, kind="stable")


# ---------------------------------------------------------------------------------------------
# Specifications of what one call evaluates.
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Spec:
    """One ALE to compute: a numeric feature, a categorical feature or a numeric pair."""

    kind: str  # "numeric" | "categorical" | "pair"
    features: tuple[Feature, ...]
    edges: tuple[np.ndarray, ...] = ()  # numeric: bin edges per feature
    codes: tuple[np.ndarray, ...] = ()  # bin (or ordered level) of each row, per feature
    within: tuple[np.ndarray, ...] = ()  # position in the bin, per feature
    labels: tuple = ()  # categorical: level labels in ALE order
    table: np.ndarray | None = None  # categorical: the levels' column values in ALE order

    @property
    def n_bins(self) -> tuple[int, ...]:
        if self.kind == "categorical":
            return (len(self.labels),)
        return tuple(e.size - 1 for e in self.edges)


def _numeric_spec(dataset, feat, bins, w):
    if feat.is_categorical or len(feat.columns) != 1:
        raise ValueError(
            f"feature {feat.name!r} is {'categorical' if feat.is_categorical else 'a group'}; "
            "a second-order ALE needs two numeric single-column features."
        )
    x = dataset.X[:, feat.columns[0]]
    edges = _numeric_edges(x, w, bins, feat.name)
    codes, within = _bin_codes(x, edges)
    return edges, codes, within


def _make_spec(dataset: Dataset, feats, bins, w) -> _Spec:
    if len(feats) == 2:
        parts = [_numeric_spec(dataset, f, b, w) for f, b in zip(feats, bins)]
        return _Spec("pair", tuple(feats), *map(tuple, zip(*parts)))
    (feat,) = feats
    if feat.is_categorical:
        if not (isinstance(bins, (int, np.integer)) and not isinstance(bins, bool)):
            raise ValueError(
                f"feature {feat.name!r} is categorical: its bins are its levels; give bins as an "
                f"int (ignored for it), not edges; got {bins!r:.60}."
            )
        positions, table, labels = _level_positions(dataset, feat)
        order = _level_order(dataset, feat, positions, w)
        rank = np.argsort(order)
        return _Spec("categorical", (feat,), codes=(rank[positions].astype(np.int32),),
                     within=(np.zeros(dataset.n_rows),),
                     labels=tuple(labels[i] for i in order), table=table[order])
    if len(feat.columns) != 1:
        raise ValueError(
            f"feature {feat.name!r} is a group of {len(feat.columns)} columns that is not "
            "one-hot; ALE needs a numeric column, a categorical column or a one-hot block."
        )
    edges, codes, within = _numeric_spec(dataset, feat, bins, w)
    return _Spec("numeric", (feat,), (edges,), (codes,), (within,))


class _PlanBuilder:
    """Collects the table rows, masks, per-row codes and item pairs of several specs."""

    def __init__(self, c: int):
        self.c = c
        self.tables, self.masks, self.plan_codes, self.group_codes = [], [], [], []
        self.item_mask, self.item_code, self.item_offset, self.item_group = [], [], [], []
        self.n_table = 0

    def code(self, store: list, values) -> int:
        store.append(np.asarray(values, np.int32))
        return len(store) - 1

    def add(self, spec: _Spec) -> list[int]:
        """Add a spec's items; returns the indices of its pairs."""
        mask = np.zeros(self.c, bool)
        for f in spec.features:
            mask[list(f.columns)] = True
        self.masks.append(mask)
        m = len(self.masks) - 1
        base = self.n_table
        if spec.kind == "numeric":
            (f,), (edges,), (codes,) = spec.features, spec.edges, spec.codes
            table = np.zeros((edges.size, self.c))
            table[:, f.columns[0]] = edges
            c = self.code(self.plan_codes, codes)
            g = self.code(self.group_codes, codes)
            pairs = [((c, base), (c, base + 1), g)]
        elif spec.kind == "categorical":
            (f,), (pos,) = spec.features, spec.codes
            k = len(spec.labels)
            table = np.zeros((k, self.c))
            table[:, list(f.columns)] = spec.table
            own = self.code(self.plan_codes, pos)
            up = self.code(self.plan_codes, np.minimum(pos + 1, k - 1))
            down = self.code(self.plan_codes, np.maximum(pos - 1, 0))
            # step s joins levels s and s + 1; group k - 1 collects rows without that step
            forward = self.code(self.group_codes, np.where(pos < k - 1, pos, k - 1))
            backward = self.code(self.group_codes, np.where(pos > 0, pos - 1, k - 1))
            pairs = [((own, base), (up, base), forward), ((down, base), (own, base), backward)]
        else:
            (f1, f2), (e1, e2), (c1, c2) = spec.features, spec.edges, spec.codes
            k2 = e2.size
            grid1, grid2 = np.meshgrid(e1, e2, indexing="ij")
            table = np.zeros((e1.size * k2, self.c))
            table[:, f1.columns[0]] = grid1.reshape(-1)
            table[:, f2.columns[0]] = grid2.reshape(-1)
            corner = self.code(self.plan_codes, c1 * k2 + c2)
            cell = self.code(self.group_codes, c1 * (k2 - 1) + c2)
            # f(1,1) - f(0,1) and f(0,0) - f(1,0): their sum is the second difference
            pairs = [((corner, base + 1), (corner, base + k2 + 1), cell),
                     ((corner, base + k2), (corner, base), cell)]
        self.tables.append(table)
        self.n_table += table.shape[0]
        first = len(self.item_group) // 2
        for lower, upper, group in pairs:
            for code, offset in (lower, upper):
                self.item_mask.append(m)
                self.item_code.append(code)
                self.item_offset.append(offset)
                self.item_group.append(group)
        return list(range(first, first + len(pairs)))

    def plan(self):
        return at_coded_values(np.stack(self.masks), self.item_mask, np.concatenate(self.tables),
                               np.stack(self.plan_codes), self.item_code, self.item_offset)


# ---------------------------------------------------------------------------------------------
# Accumulation and centring (host, float64; arrays of bins, not of model evaluations).
# ---------------------------------------------------------------------------------------------


def _fill_empty(delta: np.ndarray, weight: np.ndarray, fallback: np.ndarray | None):
    """Steps of empty bins: the full data's step for a replicate (``fallback``), else 0."""
    empty = ~(weight > 0)
    if not empty.any():
        return delta
    delta = np.where(empty[..., None], 0.0 if fallback is None else fallback, delta)
    return delta


def _interp_weights(codes, within, weights, size) -> np.ndarray:
    """(r, size): the weight each curve point gets when the curve is linearly interpolated at
    every row's value and averaged with ``weights`` (r, n)."""
    out = np.empty((weights.shape[0], size))
    for j, w in enumerate(weights):
        out[j] = np.bincount(codes, w * (1 - within), size)
        out[j] += np.bincount(np.minimum(codes + 1, size - 1), w * within, size)
    return out


def _per_row_1d(curve, codes, within):
    """The curve (size, o) linearly interpolated at every row: (n, o)."""
    return curve[codes] * (1 - within)[:, None] + curve[np.minimum(codes + 1,
                                                                    len(curve) - 1)] * within[:, None]


def _nearest_filled(delta: np.ndarray, weight: np.ndarray, spec: _Spec) -> np.ndarray:
    """Second-order steps (k1, k2, o) of empty cells from the nearest non-empty cell, cells
    placed at their bins' midpoints scaled to the features' ranges (as ALEPlot does)."""
    empty = ~(weight > 0)
    if not empty.any() or empty.all():
        return np.where(empty[..., None], 0.0, delta)
    mids = []
    for e in spec.edges:
        mids.append(((e[:-1] + e[1:]) / 2 - e[0]) / (e[-1] - e[0]))
    g1, g2 = np.meshgrid(*mids, indexing="ij")
    points = np.stack([g1.reshape(-1), g2.reshape(-1)], axis=1)
    full = np.flatnonzero(~empty.reshape(-1))
    holes = np.flatnonzero(empty.reshape(-1))
    d2 = ((points[holes, None] - points[None, full]) ** 2).sum(-1)
    flat = delta.reshape(-1, delta.shape[-1]).copy()
    flat[holes] = flat[full[np.argmin(d2, axis=1)]]
    return flat.reshape(delta.shape)


def _first_order(spec: _Spec, delta, weight, weights, widths=None):
    """Curves of every weighting from per-bin steps (r, k, o) and bin weights (r, k):
    (uncentred, centred), each (r, points, o), and each replicate's per-row spread."""
    delta = np.asarray(delta, np.float64)
    if widths is not None:
        delta = delta * widths[None, :, None]
    point = _fill_empty(delta[:1], weight[:1], None)
    delta = np.concatenate([point, _fill_empty(delta[1:], weight[1:], point)])
    zeros = np.zeros((delta.shape[0], 1, delta.shape[2]))
    uncentred = np.concatenate([zeros, np.cumsum(delta, axis=1)], axis=1)
    mix = _interp_weights(spec.codes[0], spec.within[0], weights, uncentred.shape[1])
    mean = np.einsum("rk,rko->ro", mix, uncentred) / weights.sum(axis=1)[:, None]
    centred = uncentred - mean[:, None, :]
    spread = np.stack([
        np.sqrt(np.average(_per_row_1d(curve, spec.codes[0], spec.within[0]) ** 2, axis=0,
                           weights=w)) for curve, w in zip(centred, weights)])
    return uncentred, centred, spread


def _per_row_2d(surface, spec: _Spec):
    """The surface (k1 + 1, k2 + 1, o) bilinearly interpolated at every row: (n, o)."""
    (c1, c2), (t1, t2) = spec.codes, spec.within
    t1, t2 = t1[:, None], t2[:, None]
    return ((1 - t1) * (1 - t2) * surface[c1, c2] + t1 * (1 - t2) * surface[c1 + 1, c2]
            + (1 - t1) * t2 * surface[c1, c2 + 1] + t1 * t2 * surface[c1 + 1, c2 + 1])


def _second_order(spec: _Spec, delta, weight, weights):
    """Pure second-order surfaces (Apley & Zhu; ALEPlot's steps): the second differences
    accumulated over both axes, minus their first-order parts, centred to weighted mean 0
    over the rows. Returns (uncentred, centred, spread) with surfaces (r, k1+1, k2+1, o)."""
    k1, k2 = spec.n_bins
    r, o = delta.shape[0], delta.shape[-1]
    delta = delta.reshape(r, k1, k2, o)
    weight = weight.reshape(r, k1, k2)
    out_u, out_c, spread = [], [], []
    for j in range(r):
        d = _nearest_filled(delta[j], weight[j], spec)
        b = weight[j]
        f = np.zeros((k1 + 1, k2 + 1, o))
        f[1:, 1:] = np.cumsum(np.cumsum(d, axis=0), axis=1)
        step1 = f[1:] - f[:-1]  # (k1, k2 + 1, o)
        b1 = b.sum(axis=1)
        ave1 = np.einsum("ab,abo->ao", b, (step1[:, :-1] + step1[:, 1:]) / 2)
        ave1 = np.where(b1[:, None] > 0, ave1 / np.maximum(b1, 1e-300)[:, None], 0.0)
        step2 = f[:, 1:] - f[:, :-1]  # (k1 + 1, k2, o)
        b2 = b.sum(axis=0)
        ave2 = np.einsum("ab,abo->bo", b, (step2[:-1] + step2[1:]) / 2)
        ave2 = np.where(b2[:, None] > 0, ave2 / np.maximum(b2, 1e-300)[:, None], 0.0)
        main1 = np.concatenate([np.zeros((1, o)), np.cumsum(ave1, axis=0)])
        main2 = np.concatenate([np.zeros((1, o)), np.cumsum(ave2, axis=0)])
        pure = f - main1[:, None] - main2[None]
        rows = _per_row_2d(pure, spec)
        mean = np.average(rows, axis=0, weights=weights[j])
        out_u.append(pure)
        out_c.append(pure - mean)
        spread.append(np.sqrt(np.average((rows - mean) ** 2, axis=0, weights=weights[j])))
    return np.stack(out_u), np.stack(out_c), np.stack(spread)


def _bin_centred(uncentred: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """ALEPlot's, iml's and alibi's centring of numeric curves (r, k + 1, o) or surfaces
    (r, k1 + 1, k2 + 1, o): minus the mean over bins (cells) of each bin's average of its end
    (corner) values, weighted by the bin weights ``weight`` (r, k) or (r, k1 * k2)."""
    if uncentred.ndim == 3:
        ends = (uncentred[:, :-1] + uncentred[:, 1:]) / 2
    else:
        ends = (uncentred[:, :-1, :-1] + uncentred[:, :-1, 1:] + uncentred[:, 1:, :-1]
                + uncentred[:, 1:, 1:]) / 4
    b = weight.reshape(ends.shape[0], -1)  # (r, bins)
    mean = np.einsum("rk,rko->ro", b, ends.reshape(b.shape + ends.shape[-1:]))
    mean /= b.sum(axis=1)[:, None]
    return uncentred - mean.reshape(mean.shape[0], *(1,) * (ends.ndim - 2), mean.shape[1])


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
    replicates : ndarray of shape (r, ...) or None
        The centred curve of each bootstrap replicate (same bins).
    info : ALECurveDetails
        ``rug``: about 500 of the feature's values (every (n / 500)-th row), sorted;
        ``spread``: (o,) the weighted standard deviation of the centred effect over the rows
        (:func:`ale_importance` / :func:`ale_interaction`), ``spread_replicates``: (o, r) the
        same per bootstrap replicate, or None; ``n_bootstrap``.
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
        values = self.centred[..., 0]
        extra = f", {self.replicates.shape[0]} replicates" if self.replicates is not None else ""
        return (f"AccumulatedLocalEffects({' x '.join(self.feature_names)}: {order}, "
                f"{shape} {'levels' if self.feature_kinds[0] != 'continuous' else 'bins'}, "
                f"outputs {list(self.output_names)}, centred in [{values.min():.4g}, "
                f"{values.max():.4g}]{extra})")

    def intervals(self, confidence: float = 0.95) -> np.ndarray:
        """Percentile bootstrap band of the centred curve, shape (2, ...)."""
        from ._results import interval_probabilities

        if self.replicates is None:
            raise ValueError("this ALE has no bootstrap replicates; rerun with n_bootstrap >= 2.")
        return np.quantile(self.replicates, interval_probabilities(confidence), axis=0)

    def std(self, ddof: int = 0) -> np.ndarray:
        """Standard deviation of the centred curve over the bootstrap replicates, the shape of
        ``centred``; ``ddof=1`` is R's ``sd()``."""
        from ._results import replicate_std

        replicates = None if self.replicates is None else np.moveaxis(self.replicates, 0, -1)
        return replicate_std(replicates, ddof, "ale")

    def to_frame(self) -> pd.DataFrame:
        """Tidy table, one row per curve point and output: ``value`` (``value_1``,
        ``value_2`` for a pair), ``output``, ``ale`` (centred), ``ale_uncentred``, ``count``
        (rows in the bin ending at the point; NaN at the first edge), and ``lower``/``upper``
        (95% band) with bootstrap replicates."""
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
                frame["lower"] = band[0][..., j].reshape(size)
                frame["upper"] = band[1][..., j].reshape(size)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    def plot(self, output: int | str = 0, ax=None):
        """First order: the centred curve (and its band) with a rug of the data, or points
        per level with the levels' weights as bars; second order: a heat map over the two
        features' values. Returns the Axes."""
        import matplotlib.pyplot as plt
        from matplotlib import transforms

        j = select_outputs(self.output_names, output)[0]
        if ax is None:
            _, ax = plt.subplots(figsize=(4, 3))
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
            ax.plot(x, y, color="tab:blue", lw=2, marker="o", ms=2)
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
            ax.plot(x, y, "o", color="tab:blue")
            ax.set_xticks(x, [str(v) for v in self.edges[0]])
        ax.axhline(0, color="0.6", lw=0.5)
        ax.set_xlabel(self.feature_names[0])
        ax.set_ylabel(f"ALE ({self.output_names[j]})")
        return ax


# ---------------------------------------------------------------------------------------------
# The computation.
# ---------------------------------------------------------------------------------------------


def _rug(dataset: Dataset, spec: _Spec):
    if spec.kind != "numeric":
        return None
    x = dataset.X[:, spec.features[0].columns[0]]
    return np.sort(x[:: max(1, x.size // _RUG_POINTS)])


def _power_of_two(size: int) -> int:
    return max(8, 1 << (int(size) - 1).bit_length())


def _compute(dataset: Dataset, predictor: Predictor, specs: list[_Spec], weights: np.ndarray,
             out_idx: list[int], derivative: bool, engine: dict, centring: str = "rows"
             ) -> list[AccumulatedLocalEffects]:
    """Every spec's ALE in one engine call; ``weights`` (1 + r, n): the case weights, then one
    weighting per bootstrap replicate. The spreads come from the curves centred over the rows
    whatever ``centring`` the returned curves use."""
    # sizes rounded up (groups and weightings that stay empty), so that nearby bin and replicate
    # counts reuse one compiled evaluation
    n_groups = _power_of_two(max(int(np.prod(s.n_bins)) for s in specs))
    n_weightings = weights.shape[0]
    padded = np.zeros((1 if n_weightings == 1 else _power_of_two(n_weightings),
                       weights.shape[1]))
    padded[:n_weightings] = weights
    c = dataset.X.shape[1]
    if derivative:
        columns = [s.features[0].columns[0] for s in specs]
        codes = np.stack([s.codes[0] for s in specs])
        gradient = gradient_predictor(predictor, columns, c)
        plan = at_values(np.zeros((1, c), bool), [0], np.zeros((1, c)), [0])
        totals = evaluate(gradient, dataset, plan, _GradientSums(codes, n_groups, padded),
                          label="derivative ALE", **engine)[0]  # (F, r, G, o + 1)
        per_spec = [(t[..., :-1], t[..., -1]) for t in totals]
    else:
        builder = _PlanBuilder(c)
        pairs = [builder.add(s) for s in specs]
        reducer = _PairSums(np.stack(builder.group_codes),
                            np.asarray(builder.item_group, np.int32), n_groups, padded)
        totals = evaluate(predictor, dataset, builder.plan(), reducer,
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
        sums = sums[:n_weightings, :size][..., out_idx]
        weight = weight[:n_weightings, :size]
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = sums / weight[..., None]
        if s.kind == "pair":
            uncentred, centred, spread = _second_order(s, delta, weight, weights)
            counts = np.bincount(s.codes[0] * s.n_bins[1] + s.codes[1],
                                 minlength=size).reshape(s.n_bins)
            bin_w = np.bincount(s.codes[0] * s.n_bins[1] + s.codes[1], weights[0],
                                size).reshape(s.n_bins)
        else:
            widths = np.diff(s.edges[0]) if derivative else None
            uncentred, centred, spread = _first_order(s, delta, weight, weights, widths)
            k = s.n_bins[0]
            counts = np.bincount(s.codes[0], minlength=k)
            bin_w = np.bincount(s.codes[0], weights[0], k)
        if centring == "bins" and s.kind != "categorical":  # a categorical curve's two
            centred = _bin_centred(uncentred, weight)  # conventions agree: level means
        edges = tuple(s.edges) if s.kind != "categorical" else (s.labels,)
        results.append(AccumulatedLocalEffects(
            feature_names=tuple(f.name for f in s.features),
            feature_kinds=tuple(f.kind for f in s.features),
            edges=edges, output_names=names, uncentred=uncentred[0], centred=centred[0],
            counts=counts, bin_weights=bin_w, derivative=derivative,
            replicates=centred[1:] if weights.shape[0] > 1 else None,
            info=ALECurveDetails(
                rug=_rug(dataset, s), spread=spread[0],
                spread_replicates=spread[1:].T if weights.shape[0] > 1 else None,
                n_bootstrap=weights.shape[0] - 1),
        ))
    return results


def _check_bins(bins, name: str = "bins"):
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        return check_int(bins, name, 1)
    if isinstance(bins, (bool, str)) or bins is None:
        raise ValueError(
            f"{name} must be an int >= 1 or a 1-D strictly increasing array of bin edges; got "
            f"{bins!r}."
        )
    return bins


def _setup(model, X, *, sample_weight, n_bootstrap, random_state, derivative, output,
           feature_names, categorical, groups, variables, memory_budget, progress):
    derivative = check_bool(derivative, "derivative")
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    key = as_key(random_state)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress,
    )
    if derivative and predictor.host:
        raise ValueError(
            f"derivative=True differentiates the model with jax.grad, but {predictor.name} "
            "runs on the host (NumPy / scikit-learn) and has no gradient; use derivative=False "
            "(finite differences between bin edges)."
        )
    out_idx = select_outputs(predictor.output_names, output)
    weights, _ = replicate_weights(row_weights(dataset), n_bootstrap, key)
    engine = {"memory_budget": memory_budget, "progress": progress}
    return dataset, predictor, out_idx, weights, derivative, engine


def _spread_summaries(results: list[AccumulatedLocalEffects]):
    """Point estimate, bootstrap std and replicates of each result's per-row spread."""
    estimates = np.stack([np.concatenate([r.info["spread"][:, None]] + (
        [r.info["spread_replicates"]] if r.replicates is not None else []), axis=1)
        for r in results])  # (sets, o, 1 + r)
    return summaries(estimates)


def _check_derivative_specs(specs: list[_Spec]) -> None:
    for s in specs:
        if s.kind != "numeric":
            what = "a pair" if s.kind == "pair" else f"categorical feature {s.features[0].name!r}"
            raise ValueError(
                f"derivative=True computes first-order ALE of numeric features; got {what}. "
                "Use derivative=False."
            )


@validate_params(derivative=Flag(), n_bootstrap=Replicates(), centring=Choice(*_CENTRINGS))
def ale(
    model,
    X,
    features,
    *,
    bins=20,
    derivative: bool = False,
    centring: str = "rows",
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

    Bins: ``bins=K`` puts the edges at the weighted quantiles of type 1 (the smallest data value
    whose cumulative weight share reaches k/K, k = 1..K; with equal weights R's
    ``quantile(type = 1)``), plus the minimum as the first edge; tied quantiles are merged, so
    there may be fewer than K bins and every bin holds data. Bin k holds
    ``z_{k-1} < x <= z_k``; the first bin also holds the minimum. This is ALEPlot's binning; alibi
    uses the same assignment but linearly interpolated quantiles (``np.percentile``) and picks
    their number adaptively. Explicit edges may be given instead (they must cover the data; an
    empty bin contributes a zero step).

    Categorical (or one-hot) features: the levels are the points of the curve, ordered by the
    similarity of the other features' distributions within each level (iml's rule: summed
    Kolmogorov-Smirnov distances for numeric features, total variation distance of level
    frequencies for categorical ones, then the first axis of classical multidimensional
    scaling, oriented so that the data's first level comes before its last). The step between
    consecutive levels averages the rows of both: rows at level s moved up to s + 1 and rows
    at s + 1 moved down to s.

    Centring: the uncentred curve is interpolated linearly between edges at each row's value
    and its weighted mean over the rows is subtracted, so a linear model's ALE is exactly its
    coefficient times the centred feature. ALEPlot, iml and alibi subtract instead the
    bin-weighted mean of each bin's two end values, which differs by a constant
    (``centring="bins"``).

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

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        The data; every row is evaluated at its own bin's edges.
    features : str or int, or a pair of them
        One feature (first order) or two numeric features (second order).
    bins : int or array, default 20
        Number of quantile bins, or explicit increasing bin edges (numeric features). For a
        pair: an int for both, or a tuple ``(bins_1, bins_2)``.
    derivative : bool, default False
        Steps from the model's partial derivatives at the rows (JAX models, one numeric
        feature).
    centring : {"rows", "bins"}, default "rows"
        How ``centred`` is centred. ``"rows"``: the curve (surface) interpolated at every row
        has weighted mean 0. ``"bins"``: ALEPlot's, iml's and alibi's convention, minus the
        mean over bins of each bin's average of its two end values (a pair: of its four
        corners), weighted by the bins' row weights. The two differ by a constant; they agree
        for categorical features. ``replicates`` are centred the same way; ``uncentred`` and
        the importances read from the curve's spread over the rows do not depend on it.
    output : int, str or list, optional
        Model outputs to keep (default all).
    sample_weight : array of shape (n,), optional
        Case weights: weighted quantile bins, weighted means per bin, weighted centring.
    n_bootstrap : int, default 0
        Bootstrap replicates over the rows (0: none, else >= 2), with the bins of the full data.
        Each replicate reweights the per-row differences inside the same evaluation; no extra
        model call. A bin empty in a replicate takes the full data's step.
    random_state : int or JAX PRNG key, default 0
        Seed of the bootstrap.
    feature_names, categorical, groups
        Data description; see :func:`jaximp.as_dataset`.
    variables : pytree, optional
        Variables of a Flax linen module.
    memory_budget : int, optional
        Bytes the call may use (see :func:`jaximp.default_memory_budget`).
    progress : bool, optional
        Progress line on stderr.

    Returns
    -------
    AccumulatedLocalEffects

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
            bins = tuple(_check_bins(b) for b in bins)
        else:
            bins = (_check_bins(bins),) * 2
    else:
        bins = _check_bins(bins)
    spec = _make_spec(dataset, feats, bins, weights[0])
    if derivative:
        _check_derivative_specs([spec])
    return _compute(dataset, predictor, [spec], weights, out_idx, derivative, engine,
                    centring)[0]


@validate_params(derivative=Flag(), n_bootstrap=Replicates())
def ale_importance(
    model,
    X,
    *,
    features=None,
    bins=20,
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
    one gradient evaluation per row for all features).

    Parameters
    ----------
    model, X
        As in :func:`ale`.
    features : str, int or list, optional
        Features to score (default all).
    bins, derivative, output, sample_weight, n_bootstrap, random_state
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
    bins = _check_bins(bins)
    chosen = dataset.resolve(features)
    specs = [_make_spec(dataset, [f], bins, weights[0]) for f in chosen]
    if derivative:
        _check_derivative_specs(specs)
    results = _compute(dataset, predictor, specs, weights, out_idx, derivative, engine)
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
    specs = [_make_spec(dataset, list(pair), (bins, bins), weights[0]) for pair in pair_list]
    results = _compute(dataset, predictor, specs, weights, out_idx, False, engine)
    point, std, replicates = _spread_summaries(results)
    return FeatureInteraction(
        method="ale_interaction",
        feature_sets=tuple((a.name, b.name) for a, b in pair_list),
        output_names=results[0].output_names, values=point, values_std=std,
        replicates=replicates,
        info=ALEDetails(ale={(a.name, b.name): r for (a, b), r in zip(pair_list, results)},
                        n_bootstrap=weights.shape[0] - 1),
    )
