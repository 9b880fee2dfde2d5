"""Root-to-leaf paths of a tree ensemble, extracted once on the host for TreeSHAP.

Every leaf of every tree is one path. Along a path the splits on one feature are merged into
one *element* (as GPUTreeShap does, Mitchell et al. 2022): a row follows the path through all
of them exactly when its value ``x`` of that feature satisfies

    lower < x <= upper      (``lower`` NaN: no lower bound; ``upper`` +inf: no upper bound)

or, for a missing ``x`` (NaN), when every one of those splits sends missing values the way
the path goes (``nan_ok``). The splits of a categorical feature (XGBoost's and LightGBM's
category bitsets) are merged into the set of category codes that follow the path
(``categories``: one entry per code the bitsets hold, then one for every code outside them),
and a row follows the element when its code, truncated as the libraries do, is in the set. The element's *zero fraction* is the product of the cover ratios
``cover(child) / cover(parent)`` of its splits: the share of the training cover that goes the
path's way when the feature is unknown. Paths with fewer elements than the longest are padded
with null elements (no bounds, zero fraction 1), which change no Shapley value.

All of it is vectorized NumPy over the leaves of all trees: the ancestors of every leaf are
found by climbing the parent array one level at a time, and the repeated features of a path
are merged with grouped reductions.

The second half holds the JAX kernels over the paths (see :mod:`._tree_shap` for the
formulas): rows are laid out as columns (c, r) and every intermediate is (paths x elements x
rows), so gathers and segment sums move whole rows.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["TreePaths", "background_outputs", "ensemble_paths", "interventional_chunk",
           "pair_weights", "path_dependent_chunk", "pattern_table", "quadrature", "table_chunk"]


@dataclasses.dataclass(frozen=True)
class TreePaths:
    """The paths of an ensemble (P paths, D elements each, V values per path).

    feature : int32 (P, D); lower, upper : (P, D) in the thresholds' dtype; nan_ok : bool
    (P, D); categories : bool (P, D, S) or None, whether each category code (S - 1 codes,
    then every code outside them) follows the element (all True for a numeric feature);
    zero : float64 (P, D) zero fractions; value : float64 (P, V) the leaf value times
    the ensemble's scale (1/T for forests, the learning rate for boosting); output : int32
    (P,) the output a path adds to when ``V == 1`` and the ensemble has several outputs
    (boosting: the tree's class), else 0; base : float64 (o,) the cover-weighted expected
    output (the init score included), ``sum_paths value * prod zero`` plus the init; init :
    float64 (o,) the init score (boosting), else 0; negative_outside : whether a value
    below 0 is outside every category before its truncation (XGBoost's rule).
    """

    feature: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    nan_ok: np.ndarray
    zero: np.ndarray
    value: np.ndarray
    output: np.ndarray
    base: np.ndarray
    init: np.ndarray
    categories: np.ndarray | None = None
    negative_outside: bool = False

    @property
    def n_paths(self) -> int:
        return int(self.feature.shape[0])

    @property
    def depth(self) -> int:
        return int(self.feature.shape[1])

    def select(self, keep: np.ndarray) -> TreePaths:
        """The paths where ``keep`` (P,) is True (``base`` unchanged)."""
        return dataclasses.replace(
            self, feature=self.feature[keep], lower=self.lower[keep], upper=self.upper[keep],
            nan_ok=self.nan_ok[keep], zero=self.zero[keep], value=self.value[keep],
            output=self.output[keep],
            categories=None if self.categories is None else self.categories[keep])

    def padded(self, n_paths: int) -> TreePaths:
        """The paths padded with null paths (value 0) to ``n_paths``."""
        extra = n_paths - self.n_paths
        if extra <= 0:
            return self

        def pad(a, fill):
            return np.concatenate([a, np.full((extra,) + a.shape[1:], fill, a.dtype)])

        return dataclasses.replace(
            self, feature=pad(self.feature, 0), lower=pad(self.lower, np.nan),
            upper=pad(self.upper, np.inf), nan_ok=pad(self.nan_ok, True),
            zero=pad(self.zero, 1.0), value=pad(self.value, 0.0), output=pad(self.output, 0),
            categories=None if self.categories is None else pad(self.categories, True))


def _parents(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parent of every node (-1 for roots and unreachable padding), whether it is its parent's
    left child, and whether each node is a split, all (T, N)."""
    T, N = left.shape
    split = left != np.arange(N)[None, :]
    parent = np.full((T, N), -1, np.int64)
    went_left = np.zeros((T, N), bool)
    tree, node = np.nonzero(split)
    parent[tree, left[tree, node]] = node
    parent[tree, right[tree, node]] = node
    went_left[tree, left[tree, node]] = True
    return parent, went_left, split


def _leaf_splits(arrays: dict) -> tuple[np.ndarray, np.ndarray, dict]:
    """Tree and node of every reachable leaf (L,), and the splits above them, flattened: a
    dict of (E,) arrays ``leaf`` (index into the leaves), ``feature``, ``threshold``,
    ``went_left``, ``nan_ok`` (missing values go the path's way) and ``ratio`` (cover ratio)."""
    left, right = arrays["children_left"], arrays["children_right"]
    parent, went_left, split = _parents(left, right)
    reachable = parent >= 0
    reachable[:, 0] = True
    leaf_tree, leaf_node = np.nonzero(~split & reachable)
    cover = arrays["weighted_n_node_samples"].astype(np.float64)
    cur = leaf_node.copy()
    records = []
    while True:
        par = parent[leaf_tree, cur]
        active = np.nonzero(par >= 0)[0]
        if active.size == 0:
            break
        t, child, above = leaf_tree[active], cur[active], par[active]
        parent_cover = cover[t, above]
        record = {
            "leaf": active,
            "feature": arrays["feature"][t, above].astype(np.int64),
            "threshold": arrays["threshold"][t, above],
            "went_left": went_left[t, child],
            "nan_ok": arrays["missing_left"][t, above] == went_left[t, child],
            "ratio": np.where(parent_cover > 0, cover[t, child]
                              / np.where(parent_cover > 0, parent_cover, 1.0), 0.0),
        }
        if "is_categorical" in arrays:
            record["categorical"] = np.asarray(arrays["is_categorical"][t, above], bool)
            record["words"] = np.asarray(arrays["category_left"][t, above], np.uint32)
            outside = np.asarray(arrays["category_outside_left"], bool)  # one per model
            record["outside_left"] = np.broadcast_to(
                outside if outside.ndim == 0 else outside[t, above], active.shape)
        records.append(record)
        cur[active] = above
    if not records:  # every tree is a single leaf
        empty = {"leaf": np.zeros(0, np.int64), "feature": np.zeros(0, np.int64),
                 "threshold": np.zeros(0, arrays["threshold"].dtype),
                 "went_left": np.zeros(0, bool), "nan_ok": np.zeros(0, bool),
                 "ratio": np.zeros(0)}
        return leaf_tree, leaf_node, empty
    flat = {name: np.concatenate([r[name] for r in records]) for name in records[0]}
    return leaf_tree, leaf_node, flat


def _category_sets(flat: dict, group: np.ndarray, G: int) -> np.ndarray | None:
    """For each element (G,), whether each category code follows it: (G, S) bool, the codes
    ``0 .. S - 2`` of the bitsets and, last, every code outside them (the intersection of
    its categorical splits' sides; all True for an element without one); None without
    categorical splits."""
    categorical = flat.get("categorical")
    if categorical is None or not categorical.any():
        return None
    words = flat["words"][categorical]  # (E, W): code c is bit c % 32 of word c // 32
    bits = (words[..., None] >> np.arange(32, dtype=np.uint32)) & np.uint32(1)  # (E, W, 32)
    in_left = bits.reshape(len(words), -1).astype(bool)  # (E, 32 W), in code order
    in_left = np.concatenate([in_left, flat["outside_left"][categorical][:, None]], axis=1)
    follows = in_left == flat["went_left"][categorical][:, None]
    sets = np.ones((G, follows.shape[1]), bool)
    np.logical_and.at(sets, group[categorical], follows)
    return sets


def _merge(flat: dict, n_leaves: int, n_features: int, dtype) -> dict:
    """The splits of each path merged per feature into padded (L, D) element arrays."""
    key = flat["leaf"] * n_features + flat["feature"]
    keys, group = np.unique(key, return_inverse=True)
    G = keys.size
    upper = np.full(G, np.inf, dtype)
    lower = np.full(G, -np.inf, dtype)
    numeric = ~flat.get("categorical", np.zeros(key.size, bool))  # a bitset bounds no value
    goes_left = flat["went_left"] & numeric
    goes_right = ~flat["went_left"] & numeric
    np.minimum.at(upper, group[goes_left], flat["threshold"][goes_left])
    np.maximum.at(lower, group[goes_right], flat["threshold"][goes_right])
    lower[lower == -np.inf] = np.nan  # no lower bound (see the module docstring)
    nan_ok = np.ones(G, bool)
    np.logical_and.at(nan_ok, group, flat["nan_ok"])
    zero = np.ones(G)
    np.multiply.at(zero, group, flat["ratio"])
    leaf, feature = keys // n_features, keys % n_features
    first = np.searchsorted(leaf, leaf, side="left")
    slot = np.arange(G) - first
    D = max(1, int(slot.max()) + 1) if G else 1
    out = {
        "feature": np.zeros((n_leaves, D), np.int32),
        "lower": np.full((n_leaves, D), np.nan, dtype),
        "upper": np.full((n_leaves, D), np.inf, dtype),
        "nan_ok": np.ones((n_leaves, D), bool),
        "zero": np.ones((n_leaves, D)),
    }
    for name, values in (("feature", feature), ("lower", lower), ("upper", upper),
                         ("nan_ok", nan_ok), ("zero", zero)):
        out[name][leaf, slot] = values
    sets = _category_sets(flat, group, G)
    out["categories"] = None
    if sets is not None:
        out["categories"] = np.ones((n_leaves, D, sets.shape[1]), bool)
        out["categories"][leaf, slot] = sets
    return out


def ensemble_paths(arrays: dict, n_features: int, *, tree_output: np.ndarray | None,
                   n_outputs: int, scale: float, init: np.ndarray | None = None) -> TreePaths:
    """The :class:`TreePaths` of stacked node arrays (NumPy, as the tree reader lays them out).

    Boosting (``tree_output`` (T,) given): tree ``t`` adds ``scale * value[..., 0]`` to output
    ``tree_output[t]`` and ``init`` (o,) is added to the base; otherwise every tree adds
    ``scale * value`` (k) to the k outputs (a forest's mean when ``scale = 1/T``)."""
    dtype = arrays["threshold"].dtype
    leaf_tree, leaf_node, flat = _leaf_splits(arrays)
    width = max(n_features, int(flat["feature"].max()) + 1 if flat["feature"].size else 1)
    merged = _merge(flat, leaf_tree.size, width, dtype)
    leaf_value = arrays["value"][leaf_tree, leaf_node].astype(np.float64) * scale  # (L, k)
    reach = merged["zero"].prod(axis=1)  # cover share of each leaf
    if tree_output is not None:
        value = leaf_value[:, :1]
        output = np.asarray(tree_output, np.int32)[leaf_tree]
        offset = np.zeros(n_outputs) if init is None else np.asarray(init, np.float64)
        base = np.bincount(output, weights=value[:, 0] * reach, minlength=n_outputs) + offset
    else:
        value = leaf_value
        output = np.zeros(leaf_tree.size, np.int32)
        offset = np.zeros(value.shape[1])
        base = (value * reach[:, None]).sum(axis=0)
    return TreePaths(feature=merged["feature"], lower=merged["lower"], upper=merged["upper"],
                     nan_ok=merged["nan_ok"], zero=merged["zero"], value=value, output=output,
                     base=base, init=offset.reshape(-1), categories=merged["categories"],
                     negative_outside=bool(arrays.get("category_outside_left", False)))


# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------


def quadrature(depth: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [0, 1], exact for polynomials of degree < depth."""
    nodes, weights = np.polynomial.legendre.leggauss(max(1, (depth + 1) // 2))
    return ((nodes + 1) / 2).astype(dtype), (weights / 2).astype(dtype)


def _one_fractions(xt: jax.Array, paths: dict) -> jax.Array:
    """Whether each row satisfies each path element's condition: rows as columns (c, r) ->
    bool (P, D, r) (rows last, so that gathers and sums move whole rows)."""
    xv = xt[paths["feature"]]  # (P, D, r)
    # a NaN lower bound is no bound: ~(x <= NaN) is True
    inside = ~(xv <= paths["lower"][..., None]) & (xv <= paths["upper"][..., None])
    if "categories" in paths:  # the code's entry (truncated as the libraries cast it)
        S = paths["categories"].shape[-1]
        negative_outside = paths["negative_outside"][:, None, None]  # (P,): XGBoost's sign
        outside = jnp.isnan(xv) | (negative_outside & (xv < 0))
        code = jnp.clip(jnp.where(outside, -1.0, xv), -1.0, float(S - 1))
        code = code.astype(jnp.int32)
        code = jnp.where((code >= 0) & (code < S - 1), code, S - 1)
        inside &= jnp.take_along_axis(paths["categories"], code, axis=-1)
    return jnp.where(jnp.isnan(xv), paths["nan_ok"][..., None], inside)


def _others(f: jax.Array, axis: int) -> jax.Array:
    """Product over the other entries along ``axis`` (prefix times suffix products, exact
    with zeros)."""
    f = jnp.moveaxis(f, axis, 0)
    D = f.shape[0]
    ones = jnp.ones_like(f[0])
    prefix, suffix = [ones], [ones]
    for k in range(1, D):
        prefix.append(prefix[-1] * f[k - 1])
        suffix.append(suffix[-1] * f[D - k])
    return jnp.moveaxis(jnp.stack([prefix[k] * suffix[D - 1 - k] for k in range(D)]), 0, axis)


def _factors(o: jax.Array, z: jax.Array, nodes: jax.Array) -> jax.Array:
    """``z (1 - u) + o u`` at each quadrature node: (..., D) -> (..., D, Q)."""
    return z[..., None] * (1 - nodes) + o[..., None] * nodes


def _unit_values(o: jax.Array, z: jax.Array, nodes, weights) -> jax.Array:
    """Shapley value of each element of each path game with leaf value 1: (..., D)."""
    return (o - z) * (_others(_factors(o, z, nodes), axis=-2) @ weights)


def _unit_interactions(o: jax.Array, z: jax.Array, nodes, weights) -> jax.Array:
    """Interaction values of the path games with leaf value 1, shap's convention:
    (..., D) -> (..., D, D), half the index off the diagonal, main effects on it."""
    f = _factors(o, z, nodes)  # (..., D, Q)
    D = f.shape[-2]
    eye = np.eye(D, dtype=bool)
    without_i = jnp.where(eye[:, :, None], 1, f[..., None, :, :])  # (..., D_i, D_j, Q)
    pair = _others(without_i, axis=-2) @ weights  # (..., D, D): prod over k != i, j
    delta = o - z
    half = 0.5 * delta[..., :, None] * delta[..., None, :] * jnp.where(eye, 0, pair)
    main = _unit_values(o, z, nodes, weights) - half.sum(axis=-1)
    return jnp.where(eye, main[..., :, None], half)


def _unit(o, z, nodes, weights, interactions: bool) -> jax.Array:
    """Unit values (..., D) or interactions flattened to (..., D * D)."""
    if interactions:
        out = _unit_interactions(o, z, nodes, weights)
        return out.reshape(out.shape[:-2] + (-1,))
    return _unit_values(o, z, nodes, weights)


def _scatter(unit: jax.Array, paths: dict, n_segments: int) -> jax.Array:
    """Sum over paths of ``unit * value`` into the elements' segments: unit (P, E, r),
    value (P, V), segment (P, E) -> (n_segments, r, V)."""
    P, E, r = unit.shape
    contributions = unit[..., None] * paths["value"][:, None, None, :]
    return jax.ops.segment_sum(contributions.reshape(P * E, r, -1),
                               paths["segment"].reshape(-1), num_segments=n_segments)


@functools.partial(jax.jit, static_argnames="interactions")
def pattern_table(zero, nodes, weights, interactions: bool) -> jax.Array:
    """Unit values of every path for every pattern of satisfied elements (bit j of the
    pattern: element j), (P, E, 2^D): path-dependent values depend on a row only through
    its pattern, so rows then cost a lookup instead of the polynomial."""
    P, D = zero.shape
    bits = (np.arange(2 ** D)[:, None] >> np.arange(D)[None, :]) & 1  # (2^D, D)
    o = jnp.broadcast_to(jnp.asarray(bits, zero.dtype), (P, 2 ** D, D))
    z = jnp.broadcast_to(zero[:, None, :], o.shape)
    return jnp.moveaxis(_unit(o, z, nodes, weights, interactions), 1, 2)


@functools.partial(jax.jit, static_argnames="n_segments")
def table_chunk(xt, paths, table, n_segments: int) -> jax.Array:
    """Path-dependent values of rows (c, r) by pattern lookup: (n_segments, r, V)."""
    o = _one_fractions(xt, paths)  # (P, D, r)
    D = o.shape[1]
    code = (o.astype(jnp.int32) << jnp.arange(D, dtype=jnp.int32)[:, None]).sum(axis=1)
    code = jnp.broadcast_to(code[:, None, :], table.shape[:2] + code.shape[1:])
    return _scatter(jnp.take_along_axis(table, code, axis=2), paths, n_segments)


@functools.partial(jax.jit, static_argnames=("n_segments", "interactions"))
def path_dependent_chunk(xt, paths, nodes, weights, n_segments: int, interactions: bool):
    """Path-dependent values of rows (c, r) by the polynomial: (n_segments, r, V)."""
    o = jnp.swapaxes(_one_fractions(xt, paths), 1, 2).astype(paths["zero"].dtype)  # (P, r, D)
    z = jnp.broadcast_to(paths["zero"][:, None, :], o.shape)
    unit = jnp.swapaxes(_unit(o, z, nodes, weights, interactions), 1, 2)  # (P, E, r)
    return _scatter(unit, paths, n_segments)


def pair_weights(depth: int, dtype) -> np.ndarray:
    """(D + 1, D + 1) Shapley weights ``W[u, v] = (u - 1)! v! / (u + v)!`` (0 for u = 0) of a
    path game with 0/1 fractions: u elements only the explained row satisfies, v only the
    background row, the rest both."""
    lg = [math.lgamma(k + 1) for k in range(2 * depth + 2)]
    table = np.zeros((depth + 1, depth + 1))
    for i in range(1, depth + 1):
        for j in range(depth + 1):
            table[i, j] = math.exp(lg[i - 1] + lg[j] - lg[i + j])
    return table.astype(dtype)


def _interventional_unit(a, b, pair_table) -> jax.Array:
    """Shapley values of the path games of explained rows against background rows, leaf
    value 1, in closed form: a, b bool (..., D) -> (..., D). An element neither row
    satisfies zeroes the game; otherwise an element only x satisfies gets ``W[u, v]``, one
    only the background row satisfies ``-W[v, u]``, the others 0."""
    only_x, only_b = a & ~b, ~a & b
    alive = ~jnp.any(~a & ~b, axis=-1, keepdims=True)
    u = only_x.sum(axis=-1, keepdims=True)
    v = only_b.sum(axis=-1, keepdims=True)
    gain, loss = pair_table[u, v], pair_table[v, u]
    return jnp.where(alive, jnp.where(only_x, gain, 0) - jnp.where(only_b, loss, 0), 0)


@functools.partial(jax.jit, static_argnames=("n_segments", "interactions"))
def interventional_chunk(xt, background_t, bg_weights, paths, nodes, weights, pair_table,
                         n_segments: int, interactions: bool):
    """Interventional values of rows (c, r) over background rows (c, m) with normalized
    weights (m,): the weighted sum over the background, (n_segments, r, V)."""
    dtype = paths["zero"].dtype
    a = jnp.swapaxes(_one_fractions(xt, paths), 1, 2)  # (P, r, D)
    b = jnp.swapaxes(_one_fractions(background_t, paths), 1, 2)  # (P, m, D)
    a, b = jnp.broadcast_arrays(a[:, :, None], b[:, None])  # (P, r, m, D)
    if interactions:
        unit = _unit(a.astype(dtype), b.astype(dtype), nodes, weights, True)
    else:
        unit = _interventional_unit(a, b, pair_table)
    return _scatter(jnp.einsum("m,prme->per", bg_weights, unit), paths, n_segments)


@jax.jit
def background_outputs(background_t, bg_weights, paths):
    """Weighted sum over the background rows (c, m) of each path's values: (P, V)."""
    reach = _one_fractions(background_t, paths).all(axis=1).astype(bg_weights.dtype)  # (P, m)
    return (reach @ bg_weights)[:, None] * paths["value"]
