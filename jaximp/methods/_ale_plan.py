"""The plan side of accumulated local effects: bins and level orders of each feature, the
engine plan that evaluates every row at its bin's edges, the reducers that sum the differences
(or the gradients) per bin, and the accumulation of those sums into first- and second-order
effects. :mod:`jaximp.methods._ale` builds the result and the public functions on these.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pandas as pd

from ..data import (
    Dataset,
    Feature,
    r_seq,
    type1_ranks,
)
from ..engine import Reducer, at_coded_values

__all__ = ["ALEPlanBuilder", "ALESpec", "AlibiBins", "CENTRINGS", "GradientSums", "PairSums",
           "RUG_POINTS",
           "bin_centred", "first_order", "make_spec", "second_order", "spec_weights"]

RUG_POINTS = 500
CENTRINGS = ("rows", "bins")


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
class PairSums(Reducer):
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
class GradientSums(Reducer):
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


# ---------------------------------------------------------------------------------------------
# Bins and level orders.
# ---------------------------------------------------------------------------------------------


def _weighted_quantiles_type1(x: np.ndarray, w: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Inverse of the weighted empirical CDF (R's ``quantile(type = 1)`` for equal weights):
    the smallest value whose cumulative weight share reaches each probability."""
    if np.all(w == w[0]):  # equal weights: order statistics, no full sort
        ranks = type1_ranks(x.size, probs)
        return np.partition(x, np.unique(ranks))[ranks]
    order = np.argsort(x, kind="stable")
    share = np.cumsum(w[order])
    share = share / share[-1]
    index = np.searchsorted(share, probs * (1 - 1e-12), side="left")
    return x[order][np.minimum(index, x.size - 1)]


@dataclasses.dataclass(frozen=True)
class AlibiBins:
    """``bins="alibi"``: alibi's edges, with its ``ALE.explain(min_bin_points=)``."""

    min_points: int = 4


def _alibi_edges(x: np.ndarray, min_points: int, name: str) -> np.ndarray:
    """alibi's ALE edges (``ALE`` with its ``low_resolution_threshold=10``): the distinct
    values when there are at most 10 of them, else the distinct linear percentiles at the
    largest count ``m`` (found by bisection, as alibi) for which every bin holds more than
    ``min_points`` rows, a bin holding the values above its lower edge up to its upper one
    (the minimum in the first)."""
    distinct = np.unique(x)
    if distinct.size <= 10:
        return distinct

    def edges(count):
        return np.unique(np.percentile(x, np.linspace(0, 100, count)))

    def too_few(count):
        bin_of = np.maximum(np.searchsorted(edges(count), x, side="left"), 1)
        return not np.all(np.bincount(bin_of)[1:] > min_points)

    if too_few(2):  # one bin of every row is too few (alibi fails there too)
        raise ValueError(
            f"bins='alibi' keeps more than min_bin_points={min_points} rows in every bin, but "
            f"feature {name!r} has only {x.size} rows; lower min_bin_points (alibi's default "
            "is 4) or pass bins=K.")
    low, high = 0, x.size  # the first count whose bins fall short
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if too_few(middle) else (middle + 1, high)
    return edges(low - 1)


def _numeric_edges(x: np.ndarray, w: np.ndarray, bins, name: str) -> np.ndarray:
    if isinstance(bins, AlibiBins):
        edges = _alibi_edges(x, bins.min_points, name)
        if edges.size >= 2:
            return edges
        bins = 1  # one value: refused below
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        # ALEPlot's quantile(x, seq(1/K, 1, length.out = K), type = 1), R's arithmetic
        quantiles = _weighted_quantiles_type1(x, w, r_seq(1 / bins, 1.0, bins))
        edges = np.unique(np.concatenate([[x.min()], quantiles, [x.max()]]))
        if edges.size < 2:
            raise ValueError(
                f"feature {name!r} has a single distinct value ({x[0]:g}); its accumulated "
                "local effect is undefined. Drop the feature."
            )
        return edges
    edges = np.array(bins, dtype=np.float64)  # a copy: the results hold it, read-only
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
    """Each row's level index (-1 where the level is missing), the table rows (levels,
    columns) and the level labels (of the levels present)."""
    block = dataset.X[:, list(feat.columns)]
    known = ~np.isnan(block).any(axis=1)
    if not known.any():
        raise ValueError(f"feature {feat.name!r} holds only missing values (NaN); its "
                         "accumulated local effect is undefined. Drop it or fill it.")
    positions = np.full(block.shape[0], -1, np.int64)
    if feat.kind == "onehot":
        present, positions[known] = np.unique(np.argmax(block[known], axis=1),
                                              return_inverse=True)
        table = np.eye(len(feat.columns))[present]
        labels = tuple(feat.levels[i] for i in present)
    else:
        values, positions[known] = np.unique(block[known, 0], return_inverse=True)
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
    """Weighted empirical CDF of ``column`` within each of ``k`` levels at 100 quantiles of
    the column (R's default type 7, at ``seq(0, 1, length.out = 100)``, where iml and
    ALEPlot compare them): (k, 100). Rows where ``column`` is missing are left out."""
    known = ~np.isnan(column)
    if not known.any():  # a column all missing: no distance
        return np.zeros((k, 1))
    points = np.quantile(column[known], np.linspace(0.0, 1.0, 100))
    out = np.zeros((k, points.size))
    for level in range(k):
        rows = known & (positions == level)
        order = np.argsort(column[rows], kind="stable")
        below = np.concatenate([[0.0], np.cumsum(w[rows][order])])
        out[level] = below[np.searchsorted(column[rows][order], points, side="right")]
        out[level] /= max(below[-1], 1e-300)
    return out


def _ordered_category(dataset: Dataset, feat: Feature) -> bool:
    """Whether the feature is a DataFrame column of ordered pandas categories (whose codes,
    and so the levels' positions, follow the declared order)."""
    if not isinstance(dataset.source, pd.DataFrame) or len(feat.columns) != 1:
        return False
    dtype = dataset.source.dtypes.iloc[feat.columns[0]]
    return isinstance(dtype, pd.CategoricalDtype) and bool(dtype.ordered)


def _level_order(dataset: Dataset, feat: Feature, positions: np.ndarray,
                 w: np.ndarray) -> np.ndarray:
    """The order of a categorical feature's levels by the similarity of the other features
    (iml's and ALEPlot's rule): the distance of two levels is the sum, over the other
    features, of the Kolmogorov-Smirnov distance of a numeric feature's distribution among
    the rows of each level (at 100 quantiles of the feature, as theirs), or the total
    variation distance of a categorical feature's level frequencies;
    the levels are then ordered along the first axis of classical multidimensional scaling."""
    k = int(positions.max()) + 1
    if k <= 2 or _ordered_category(dataset, feat):  # an ordered factor keeps its order (iml)
        return np.arange(k)
    distance = np.zeros((k, k))
    for other in dataset.features:
        if other.name == feat.name:
            continue
        if other.is_categorical:
            codes = _level_positions(dataset, other)[0]  # -1: missing, left out
            freq = np.stack([np.bincount(codes[(positions == a) & (codes >= 0)],
                                         w[(positions == a) & (codes >= 0)], codes.max() + 1)
                             for a in range(k)])
            # shares of all the level's rows, those missing the other feature included (iml's
            # table(feature, other) / table(feature))
            level_weight = np.array([w[positions == a].sum() for a in range(k)])
            freq /= np.maximum(level_weight[:, None], 1e-300)
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
class ALESpec:
    """One ALE to compute: a numeric feature, a categorical feature or a numeric pair."""

    kind: str  # "numeric" | "categorical" | "pair"
    features: tuple[Feature, ...]
    edges: tuple[np.ndarray, ...] = ()  # numeric: bin edges per feature
    codes: tuple[np.ndarray, ...] = ()  # bin (or ordered level) of each row, per feature
    within: tuple[np.ndarray, ...] = ()  # position in the bin, per feature
    labels: tuple = ()  # categorical: level labels in ALE order
    table: np.ndarray | None = None  # categorical: the levels' column values in ALE order
    # rows whose features are all present (not NaN); None: every row. The others are left
    # out: their codes are 0 and their positions 0, and their differences go to a discarded
    # group (see ``group_codes``)
    present: np.ndarray | None = None

    @property
    def n_bins(self) -> tuple[int, ...]:
        if self.kind == "categorical":
            return (len(self.labels),)
        return tuple(e.size - 1 for e in self.edges)

    @property
    def n_missing(self) -> int:
        """Rows left out because one of the spec's features is missing."""
        return 0 if self.present is None else int(self.present.size - self.present.sum())

    @property
    def n_groups(self) -> int:
        """Groups the reducer needs: the bins (cells; a categorical feature's steps and one
        group of rows without a step), plus a discarded one for rows left out."""
        size = int(np.prod(self.n_bins))
        return size + (1 if self.present is not None and self.kind != "categorical" else 0)

    def discard(self, codes: np.ndarray, group: int) -> np.ndarray:
        """``codes`` with the rows left out sent to ``group`` (a group nobody reads)."""
        return codes if self.present is None else np.where(self.present, codes, group)


def spec_weights(spec: ALESpec, weights: np.ndarray) -> np.ndarray:
    """The weightings (r, n) with the rows the spec leaves out set to 0."""
    return weights if spec.present is None else weights * spec.present[None]


def _present(x: np.ndarray, name: str) -> np.ndarray | None:
    """Mask of the values present (not NaN), None when all are."""
    if not np.isnan(x.sum()):
        return None
    present = ~np.isnan(x)
    if not present.any():
        raise ValueError(f"feature {name!r} holds only missing values (NaN); its accumulated "
                         "local effect is undefined. Drop it or fill it.")
    return present


def _joint(*masks) -> np.ndarray | None:
    masks = [m for m in masks if m is not None]
    return None if not masks else np.logical_and.reduce(masks)


def _numeric_spec(dataset, feat, bins, w, present=None):
    """Edges, codes, positions and the rows present (None: all) of a numeric feature;
    ``present``: the rows to use (a pair's rows with both features present)."""
    if feat.is_categorical or len(feat.columns) != 1:
        raise ValueError(
            f"feature {feat.name!r} is {'categorical' if feat.is_categorical else 'a group'}; "
            "a second-order ALE needs two numeric single-column features."
        )
    x = dataset.X[:, feat.columns[0]]
    if present is None:
        present = _present(x, feat.name)
    # bins from the values present; a missing row sits at position 0 of bin 0, left out
    edges = (_numeric_edges(x, w, bins, feat.name) if present is None else
             _numeric_edges(x[present], w[present], bins, feat.name))
    edges.flags.writeable = False  # kept for repeated calls, and handed out in results
    codes, within = _bin_codes(x if present is None else np.where(present, x, edges[0]), edges)
    return edges, codes, within, present


def make_spec(dataset: Dataset, feats, bins, w) -> ALESpec:
    if len(feats) == 2:
        # the rows with both features present, for the bins too
        present = _joint(*(_present(dataset.X[:, f.columns[0]], f.name) for f in feats
                           if not f.is_categorical and len(f.columns) == 1))
        if present is not None and not present.any():
            raise ValueError(f"no row has both {feats[0].name!r} and {feats[1].name!r} "
                             "present (not NaN); their second-order ALE is undefined.")
        parts = [_numeric_spec(dataset, f, b, w, present) for f, b in zip(feats, bins)]
        edges, codes, within, _ = map(tuple, zip(*parts))
        return ALESpec("pair", tuple(feats), edges, codes, within, present=present)
    (feat,) = feats
    if feat.is_categorical:
        if not (isinstance(bins, (int, np.integer, AlibiBins)) and not isinstance(bins, bool)):
            raise ValueError(
                f"feature {feat.name!r} is categorical: its bins are its levels; give bins as an "
                f"int or 'alibi' (ignored for it), not edges; got {bins!r:.60}."
            )
        positions, table, labels = _level_positions(dataset, feat)
        order = _level_order(dataset, feat, positions, w)
        rank = np.argsort(order)
        present = None if positions.min() >= 0 else positions >= 0
        codes = np.where(positions >= 0, rank[positions], 0).astype(np.int32)
        return ALESpec("categorical", (feat,), codes=(codes,),
                       within=(np.zeros(dataset.n_rows),),
                       labels=tuple(labels[i] for i in order), table=table[order],
                       present=present)
    if len(feat.columns) != 1:
        raise ValueError(
            f"feature {feat.name!r} is a group of {len(feat.columns)} columns that is not "
            "one-hot; ALE needs a numeric column, a categorical column or a one-hot block."
        )
    edges, codes, within, present = _numeric_spec(dataset, feat, bins, w)
    return ALESpec("numeric", (feat,), (edges,), (codes,), (within,), present=present)


class ALEPlanBuilder:
    """Collects the table rows, masks, per-row codes and item pairs of several specs."""

    def __init__(self, c: int):
        self.c = c
        self.tables, self.masks, self.plan_codes, self.group_codes = [], [], [], []
        self.item_mask, self.item_code, self.item_offset, self.item_group = [], [], [], []
        self.n_table = 0

    def code(self, store: list, values) -> int:
        store.append(np.asarray(values, np.int32))
        return len(store) - 1

    def add(self, spec: ALESpec) -> list[int]:
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
            g = self.code(self.group_codes, spec.discard(codes, edges.size - 1))
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
            forward = self.code(self.group_codes,
                                spec.discard(np.where(pos < k - 1, pos, k - 1), k - 1))
            backward = self.code(self.group_codes,
                                 spec.discard(np.where(pos > 0, pos - 1, k - 1), k - 1))
            pairs = [((own, base), (up, base), forward), ((down, base), (own, base), backward)]
        else:
            (f1, f2), (e1, e2), (c1, c2) = spec.features, spec.edges, spec.codes
            k2 = e2.size
            grid1, grid2 = np.meshgrid(e1, e2, indexing="ij")
            table = np.zeros((e1.size * k2, self.c))
            table[:, f1.columns[0]] = grid1.reshape(-1)
            table[:, f2.columns[0]] = grid2.reshape(-1)
            corner = self.code(self.plan_codes, c1 * k2 + c2)
            cell = self.code(self.group_codes,
                             spec.discard(c1 * (k2 - 1) + c2, (e1.size - 1) * (k2 - 1)))
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


def _nearest_filled(delta: np.ndarray, weight: np.ndarray, spec: ALESpec) -> np.ndarray:
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


def first_order(spec: ALESpec, delta, weight, weights, widths=None):
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


def _per_row_2d(surface, spec: ALESpec):
    """The surface (k1 + 1, k2 + 1, o) bilinearly interpolated at every row: (n, o)."""
    (c1, c2), (t1, t2) = spec.codes, spec.within
    t1, t2 = t1[:, None], t2[:, None]
    return ((1 - t1) * (1 - t2) * surface[c1, c2] + t1 * (1 - t2) * surface[c1 + 1, c2]
            + (1 - t1) * t2 * surface[c1, c2 + 1] + t1 * t2 * surface[c1 + 1, c2 + 1])


def second_order(spec: ALESpec, delta, weight, weights):
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


def bin_centred(uncentred: np.ndarray, weight: np.ndarray) -> np.ndarray:
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
