"""The plan side of Friedman's H-statistic: which rows, weightings and feature sets it needs
(:class:`HPlan`), the store that evaluates their PDs through the engine and keeps them as long
as a statistic needs them (:class:`PDStore`), the pure kernels that turn PDs into numerators
and denominators (:func:`compute_group`), and the model-side state a result keeps to evaluate
pairs or triples asked for later (:class:`HExtension`).
:mod:`jaximp.methods._hstat` builds :func:`jaximp.h_statistic` on these.

A feature set is named by a *key*: ``frozenset`` of feature names for the PD of those
features, ``("not", name)`` for the PD of every feature but one, ``"F"`` for the centred
prediction (for a few rows evaluated as the PD of every feature, ``("not",)``: row i's
prediction under every weighting) and ``"sum"`` for the sum of the 1-D PDs the total subtracts.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any

import jax
import numpy as np

from ..data import Dataset, Recent, replicate_weights, resolve_feature_sets, row_weights
from ..engine import Mean, at_data_rows, evaluate, predict_rows, resolve_budget, sample_rows
from ..models import Predictor
from ._hstat_result import RawStatistic, select_sets
from ._setup import cached_stage, digest

__all__ = ["HExtension", "HPlan", "HStat", "PDStore", "centre", "compute_group", "make_plan",
           "overall_and_set_statistics", "overall_statistics", "set_statistics"]


# ---------------------------------------------------------------------------------------------
# Statistics and the plan.
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HStat:
    """One H-statistic to compute: the key of its joint PD, the keys of its parts and their
    signs; the numerator is ``sum_i w_i (F_joint - sum_t sign_t F_t)^2``."""

    kind: str
    joint: Any
    parts: tuple
    signs: tuple


def overall_statistics(names) -> tuple[HStat, ...]:
    """The overall statistic of each feature of ``names``, the total, and hstats'
    ``pd_importance`` (the same PDs without the feature's own main effect), in that order.

    Examples
    --------
    >>> [st.kind for st in overall_statistics(["a", "b"])]
    ['overall', 'overall', 'total', 'pd_importance', 'pd_importance']
    """
    return _overall_statistics(tuple(names))


@functools.lru_cache(maxsize=64)  # a repeated call reuses the statistics and their keys' hashes
def _overall_statistics(names: tuple) -> tuple[HStat, ...]:
    overall = [HStat("overall", "F", (frozenset((name,)), ("not", name)), (1.0, 1.0))
               for name in names]
    total = [HStat("total", "F", ("sum",), (1.0,))]
    importance = [HStat("pd_importance", "F", (("not", name),), (1.0,)) for name in names]
    return tuple(overall + total + importance)


def set_statistics(pairs=(), triples=()) -> tuple[HStat, ...]:
    """The pairwise statistic of each pair of feature names, then the three-way statistic of
    each triple.

    Examples
    --------
    >>> pair, = set_statistics([("a", "b")])
    >>> pair.joint == frozenset("ab"), pair.parts == (frozenset("a"), frozenset("b"))
    (True, True)
    """
    return _set_statistics(tuple(map(tuple, pairs)), tuple(map(tuple, triples)))


@functools.lru_cache(maxsize=64)
def _set_statistics(pairs: tuple, triples: tuple) -> tuple[HStat, ...]:
    statistics = [HStat("pairwise", frozenset((a, b)), (frozenset((a,)), frozenset((b,))),
                        (1.0, 1.0)) for a, b in pairs]
    for a, b, d in triples:
        statistics.append(HStat(
            "three_way", frozenset((a, b, d)),
            tuple(frozenset(p) for p in ((a, b), (a, d), (b, d), (a,), (b,), (d,))),
            (1.0, 1.0, 1.0, -1.0, -1.0, -1.0)))
    return tuple(statistics)


def overall_and_set_statistics(names, pairs=(), triples=()) -> tuple[HStat, ...]:
    """:func:`overall_statistics` of ``names`` then :func:`set_statistics` of ``pairs`` and
    ``triples``: the same tuple object for the same names, so that a repeated call reuses
    what was planned for it.

    Examples
    --------
    >>> first = overall_and_set_statistics(["a", "b"], [("a", "b")])
    >>> [st.kind for st in first][-1], first is overall_and_set_statistics(["a", "b"], [("a", "b")])
    ('pairwise', True)
    """
    return _overall_and_set_statistics(tuple(names), tuple(map(tuple, pairs)),
                                       tuple(map(tuple, triples)))


@functools.lru_cache(maxsize=64)
def _overall_and_set_statistics(names: tuple, pairs: tuple, triples: tuple) -> tuple:
    return _overall_statistics(names) + _set_statistics(pairs, triples)


@dataclasses.dataclass(frozen=True, eq=False)
class HPlan:
    """What one H-statistic computation evaluates: immutable, so that a result may keep it.

    Attributes
    ----------
    rows : int array (n,)
        Indices of the rows kept (after the ``n_max`` subsample).
    weights : float64 array (1 + r, n)
        The case weights of those rows, then each bootstrap replicate's weights.
    counts : int array (r, n)
        Each bootstrap replicate's row counts.
    out_idx : tuple of int
        The model outputs kept.
    columns : dict
        Feature name -> its columns of X (a group has several).
    n_columns : int
    group_size : int
        Statistics (and feature sets) per engine call and kernel call: what the memory budget
        holds.
    statistics : tuple of HStat
    summed : tuple of str or None
        The features whose 1-D PDs the total's ``"sum"`` adds (None: every feature).
    """

    rows: np.ndarray
    weights: np.ndarray
    counts: np.ndarray
    out_idx: tuple
    columns: dict
    n_columns: int
    group_size: int
    statistics: tuple = ()
    summed: tuple | None = None

    @property
    def singles(self) -> list:
        """The keys of the 1-D PDs the total's ``"sum"`` adds: every feature's, in the order
        of X, or those of ``summed``."""
        return [frozenset((name,)) for name in (self.columns if self.summed is None
                                                else self.summed)]

    def with_statistics(self, statistics) -> HPlan:
        """The same rows and weightings, computing ``statistics``."""
        return dataclasses.replace(self, statistics=tuple(statistics))

    def mask(self, key) -> np.ndarray:
        """The column mask (c,) of the feature set ``key`` (a complement: a tuple)."""
        complement = isinstance(key, tuple)
        mask = np.zeros(self.n_columns, bool)
        for name in (key[1:] if complement else key):
            mask[list(self.columns[name])] = True
        return ~mask if complement else mask


def make_plan(dataset: Dataset, key, n_max: int | None, n_bootstrap: int, out_idx,
              memory_budget) -> HPlan:
    """The rows (an explicit-key subsample of at most ``n_max``, keeping case weights), the
    bootstrap weightings and the group size of an H-statistic computation, no statistics yet."""
    key_rows, key_boot = jax.random.split(key)
    n = dataset.n_rows
    if n_max is not None and n > n_max:
        rows = sample_rows(key_rows, n, n_max)
    else:
        rows = np.arange(n)
    ws = row_weights(dataset)[rows]
    if ws.sum() <= 0:
        raise ValueError(
            "the rows kept by n_max all have zero sample_weight; raise n_max or use another "
            "random_state."
        )
    if np.count_nonzero(ws) < 2:  # one row: every centred PD at the rows is 0
        raise ValueError(
            f"h_statistic needs at least 2 rows of X with positive weight (after n_max); got "
            f"{np.count_nonzero(ws)}. Pass more rows (or a larger n_max)."
        )
    weights, counts = replicate_weights(ws, n_bootstrap, key_boot)
    # Statistics run in groups whose PDs fit the memory budget: a bootstrap keeps (sets x n x
    # replicates) values per group, not for all pairs at once. Per statistic: the engine's
    # float64 means of its new sets (a triple brings up to four), the same centred and the
    # residual: 24 float64 PDs budgeted (a group of one statistic peaked at 20, measured).
    set_bytes = 8.0 * len(out_idx) * weights.shape[0] * rows.size
    group_size = max(1, int(resolve_budget(memory_budget) // (24 * set_bytes)))
    for array in (rows, weights, counts):  # an Explainer shares the plan between calls
        array.flags.writeable = False
    return HPlan(rows=rows, weights=weights, counts=counts, out_idx=tuple(out_idx),
                 columns={f.name: tuple(f.columns) for f in dataset.features},
                 n_columns=dataset.n_columns, group_size=group_size)


# ---------------------------------------------------------------------------------------------
# Pure kernels.
# ---------------------------------------------------------------------------------------------


def centre(pd: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """PDs at the rows ``pd`` (o, r, n) less their weighted mean under each weighting
    ``weights`` (r, n), in float64 (a new array).

    Examples
    --------
    >>> centre(np.array([[[1.0, 3.0]]]), np.ones((1, 2)))
    array([[[-1.,  1.]]])
    """
    pd = np.asarray(pd, np.float64)
    return pd - _weighted_means(pd, weights)[..., None]


def _weighted_means(pd: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted mean over the rows (..., r) of PDs (..., r, n), under each weighting."""
    return np.einsum("...rn,rn->...r", pd, weights) / weights.sum(axis=1)


def compute_group(statistics, pds: dict, weights: np.ndarray) -> dict[str, tuple]:
    """Numerator and denominator (s, o, r) of each statistic, weighted means over the rows
    ``sum_i w_i (F_joint - sum_t sign_t F_t)^2`` and ``sum_i w_i F_joint^2`` (divided by
    ``sum_i w_i``) of the centred float64 PDs ``pds``, grouped by kind.

    Examples
    --------
    >>> x1, x2 = np.array([-1.0, -1.0, 1.0, 1.0]), np.array([-1.0, 1.0, -1.0, 1.0])
    >>> pds = {k: v[None, None] for k, v in (("j", x1), ("k", x2), ("jk", x1 + x2 + x1 * x2))}
    >>> pair = HStat("pairwise", "jk", ("j", "k"), (1.0, 1.0))
    >>> num, den = compute_group([pair], pds, np.ones((1, 4)))["pairwise"]
    >>> float(num[0, 0, 0]), float(den[0, 0, 0])
    (1.0, 3.0)
    """
    keys, joints, steps, by_kind = _group_program(statistics)
    stacked = np.stack([pds[k] for k in keys])  # (keys, o, r, n)
    residual = stacked[joints]  # (s, o, r, n), a copy
    total = weights.sum(axis=1)
    den = np.einsum("sorn,sorn,rn->sor", residual, residual, weights) / total
    # part t of every statistic that has one at once: the same differences, in the same order,
    # as one statistic at a time
    for having, signs, parts in steps:
        residual[having] -= stacked[parts] if signs is None else signs * stacked[parts]
    num = np.einsum("sorn,sorn,rn->sor", residual, residual, weights) / total
    return {kind: (num[where], den[where]) for kind, where in by_kind.items()}


# A repeated call (an Explainer's, or the same arguments again) passes the same statistics
# tuple: its program and schedule are read, not rebuilt. Entries hold their tuple, so its id
# is not reused while they are kept.
_PROGRAMS = Recent()
_PROGRAMS_KEPT = 32


def _kept_for(statistics, what, make):
    """``make()``, kept per tuple of statistics (by identity) and ``what``."""
    if not isinstance(statistics, tuple):
        return make()
    return _PROGRAMS.get((id(statistics), what), lambda: (statistics, make()),
                         keep=_PROGRAMS_KEPT)[1]


def _group_program(statistics) -> tuple:
    """The keys a group of statistics reads, in order, the position of each statistic's
    joint PD among them, the steps of its residuals (for each part t: the statistics having
    one, their signs, or None for all 1, and the positions of their parts) and its kinds'
    positions (:func:`_by_kind`); kept per tuple of statistics."""
    return _kept_for(statistics, "program", lambda: _build_program(statistics))


def _build_program(statistics) -> tuple:
    keys = list(dict.fromkeys(k for st in statistics for k in (st.joint, *st.parts)))
    position = {k: i for i, k in enumerate(keys)}
    steps = []
    for t in range(max(len(st.parts) for st in statistics)):
        having = [i for i, st in enumerate(statistics) if len(st.parts) > t]
        signs = np.array([statistics[i].signs[t] for i in having])
        steps.append((
            slice(having[0], having[-1] + 1) if having[-1] - having[0] == len(having) - 1
            else np.array(having),
            None if np.all(signs == 1.0) else signs[:, None, None, None],
            np.array([position[statistics[i].parts[t]] for i in having])))
    return (keys, np.array([position[st.joint] for st in statistics]), steps,
            _by_kind(statistics))


@dataclasses.dataclass(frozen=True)
class _Schedule:
    """How :meth:`PDStore.run` goes through a plan's statistics: whether it needs the sum of
    the 1-D PDs, the sets evaluated with them (all of a single group's), and per group its
    statistics, the sets it evaluates, those of several features that no later group reads
    (freed after it) and the keys later groups read."""

    needs_sum: bool
    first: list
    groups: list


def _schedule(statistics: tuple, size: int) -> _Schedule:
    """The :class:`_Schedule` of ``statistics`` in groups of ``size``, kept as
    :func:`_group_program` is."""
    return _kept_for(statistics, ("schedule", size), lambda: _build_schedule(statistics, size))


def _build_schedule(statistics: tuple, size: int) -> _Schedule:
    reads = [[k for k in (st.joint, *st.parts) if not isinstance(k, str)] for st in statistics]
    groups = []
    for start in range(0, len(statistics), size):
        sets = list(dict.fromkeys(k for keys in reads[start:start + size] for k in keys))
        later = frozenset(k for keys in reads[start + size:] for k in keys)
        done = [k for k in sets if len(k) > 1 and k not in later]
        groups.append((statistics[start:start + size], sets, done, later))
    return _Schedule(needs_sum=any("sum" in st.parts for st in statistics),
                     first=groups[0][1] if len(groups) == 1 else [], groups=groups)


def _by_kind(statistics) -> dict:
    """The positions of each kind's statistics: a slice where they are consecutive (as the
    plans list them), else a list of indices."""
    positions: dict[str, list] = {}
    for i, st in enumerate(statistics):
        positions.setdefault(st.kind, []).append(i)
    return {kind: slice(at[0], at[-1] + 1) if at[-1] - at[0] == len(at) - 1 else at
            for kind, at in positions.items()}


def _concatenated(parts: dict) -> dict[str, tuple]:
    """Per kind, the (numerator, denominator) chunks of every group joined along sets."""
    return {kind: tuple(np.concatenate(x) for x in zip(*chunks))  # num, den (s, o, r)
            for kind, chunks in parts.items()}


# ---------------------------------------------------------------------------------------------
# The PD store.
# ---------------------------------------------------------------------------------------------


# A group's centred PDs up to this size stay views of one array (one subtraction for all).
_SHARED_BLOCK_BYTES = 1 << 20


# The PD of every feature: at row i, row i itself under every weighting (its prediction).
_EVERY_FEATURE = ("not",)
# Up to this many rows, the prediction at the rows is one more set of the first engine call:
# its n^2 model rows (one CPU block) cost less than a call of its own and its read (all H
# pairs at p = 10, n = 100, a near-free model: 0.72 ms against 0.80); above, they cost more
# (n = 300, an MLP: 1.8% more model rows).
_PREDICTION_AS_SET_ROWS = 128


class PDStore:
    """Centred float64 PDs at the rows (o, r, n), by key, of one model on one plan's rows.

    A plan's statistics are computed by :meth:`run`, which evaluates the sets they need in
    budget-sized groups and frees, after each group, the PDs no later statistic of the plan
    needs; the centred prediction ``"F"``, and with it the rounding floor of the read-out,
    comes with the first group (for a few rows, as the PD of every feature in the same engine
    call). 1-D PDs stay (every later pair and triple reuses them), so a result can evaluate
    more sets later.
    """

    def __init__(self, plan: HPlan, predictor: Predictor, data: Dataset, *,
                 memory_budget=None, progress=None):
        self._predictor, self._data = predictor, data
        self._engine_kw = {"memory_budget": memory_budget, "progress": progress}
        self._pds: dict[Any, np.ndarray] = {}
        self._floor: np.ndarray | None = None
        self._level: np.ndarray | None = None
        self._prediction = None  # the prediction as a set of the first engine call
        if plan.rows.size > _PREDICTION_AS_SET_ROWS:  # predicted apart, read when needed
            self._prediction = predict_rows(predictor, data, defer=True, **self._engine_kw)

    def _keep_prediction(self, plan: HPlan) -> None:
        """Keep the centred prediction ``"F"`` and the rounding floor (o, r) of the
        read-out."""
        if self._prediction is None:  # evaluated as the PD of every feature
            centred = self._pds.pop(_EVERY_FEATURE)  # (o, r, n): centred per weighting
            prediction = centred[:, 0, :] + self._level[:, None]  # (o, n)
        else:
            prediction = self._prediction.get()[:, list(plan.out_idx)].astype(np.float64).T
            centred = centre(np.broadcast_to(prediction[:, None, :],
                                             (prediction.shape[0], *plan.weights.shape)),
                             plan.weights)
        self._pds["F"] = centred
        # A centred PD whose weighted mean square is below this floor (o, r) is constant up to
        # rounding: its statistic is 0, not a ratio of two rounding errors. Rounding is the
        # model's, relative to the prediction's spread, and the float64 sums', relative to the
        # prediction's level: centring a constant prediction leaves a few ulps of it, which
        # its spread (that same rounding) cannot tell from an effect.
        model = (16 * np.finfo(np.dtype(self._predictor.dtype)).eps) ** 2 * centred[:, 0, :] ** 2
        sums = (16 * np.finfo(np.float64).eps) ** 2 * prediction ** 2
        self._floor = (model + sums) @ plan.weights.T / plan.weights.sum(axis=1)

    @property
    def floor(self) -> np.ndarray:
        """The rounding floor (o, r) of the read-out: a joint PD whose weighted mean square is
        below it is constant up to the model's rounding."""
        return self._floor

    def run(self, plan: HPlan) -> dict[str, tuple]:
        """Numerators and denominators (s, o, r) of ``plan.statistics``, by kind."""
        schedule = _schedule(plan.statistics, plan.group_size)
        first = [_EVERY_FEATURE] if self._prediction is None and self._floor is None else []
        if schedule.needs_sum and "sum" not in self._pds:
            # the sets of a single group go to the engine in the call of the 1-D PDs
            self.evaluate(plan, first + plan.singles + schedule.first)
            first = []
            self._pds["sum"] = np.sum([self._pds[k] for k in plan.singles], axis=0)
        parts: dict[str, list] = collections.defaultdict(list)
        for group, sets, done, later in schedule.groups:
            self.evaluate(plan, first + sets)
            first = []
            if self._floor is None:
                self._keep_prediction(plan)
            for kind, values in compute_group(group, self._pds, plan.weights).items():
                parts[kind].append(values)
            # PDs of several features (complements included) no later group reads; 1-D PDs
            # stay for sets asked for later
            for k in done:
                self._pds.pop(k, None)
            for k in [k for k in self._pds if type(k) is tuple and k not in later]:
                del self._pds[k]  # complements no later group reads
        return _concatenated(parts)

    def evaluate(self, plan: HPlan, keys) -> None:
        """The PDs at the rows of the sets ``keys`` not evaluated yet, one engine call per
        group of sets: row ``i`` of set S put into every background row, averaged under every
        weighting (the case weights, then each bootstrap replicate)."""
        todo = [k for k in dict.fromkeys(keys) if k not in self._pds]
        n, r = plan.rows.size, plan.weights.shape[0]
        out_idx = list(plan.out_idx)
        for start in range(0, len(todo), plan.group_size):
            group = todo[start:start + plan.group_size]
            m = len(group)
            engine_plan, reducer = cached_stage(
                self._data, ("H-statistic sets", tuple(group), digest(plan.weights)),
                lambda group=group, m=m: (
                    at_data_rows(np.stack([plan.mask(k) for k in group]),
                                 np.repeat(np.arange(m), n), np.tile(np.arange(n), m)),
                    Mean(plan.weights)))
            out = evaluate(self._predictor, self._data, engine_plan, reducer,
                           label="H-statistic", **self._engine_kw).reshape(m, n, r, -1)
            # centred as centre() does, the means of the group's sets in one pass; each set
            # of a large group gets its own array, so that dropping it frees its memory
            block = np.asarray(np.transpose(out[..., out_idx], (0, 3, 2, 1)), np.float64)
            means = _weighted_means(block, plan.weights)[..., None]  # (m, o, r, 1)
            if _EVERY_FEATURE in group:  # the prediction's case-weighted mean (o,)
                self._level = means[group.index(_EVERY_FEATURE), :, 0, 0]
            if block.nbytes <= _SHARED_BLOCK_BYTES:  # one subtraction; the sets share it
                self._pds.update(zip(group, block - means))
            else:
                self._pds.update((k, pd - mean) for k, pd, mean in zip(group, block, means))
            del out, block


# ---------------------------------------------------------------------------------------------
# Sets asked for after the result was built.
# ---------------------------------------------------------------------------------------------


class HExtension:
    """What a result keeps to evaluate pairs or triples it was not built with: the data (to
    resolve names), the plan and the PD store (same rows, weights, model and 1-D PDs).

    Sets evaluated here are kept in a private cache, so that asking again costs no model
    evaluation; nothing of the result that holds this changes. Not pickled: a result read back
    from a pickle has none (see :meth:`jaximp.HStatistic.h2_pairwise`).
    """

    # no instance dict: this is the result's model-side state, not part of its value
    __slots__ = ("_computed", "_dataset", "_plan", "_store")

    def __init__(self, dataset: Dataset, plan: HPlan, store: PDStore):
        self._dataset, self._plan, self._store = dataset, plan, store
        self._computed: dict[str, RawStatistic] = {}

    def __reduce__(self):
        raise TypeError("an H-statistic's model-side state (HExtension) holds the model and "
                        "does not pickle; pickle the HStatistic, which leaves it out.")

    def names(self, kind: str, listed) -> tuple:
        """The names of the pairs (``kind="pairwise"``) or triples ``listed``, validated."""
        size = 2 if kind == "pairwise" else 3
        what = "pairs" if size == 2 else "triples"
        feats = resolve_feature_sets(
            self._dataset, listed, size,
            f"{what} must be a non-empty list of feature {what}; got {listed!r}.",
            f"a {what[:-1]} must hold {size} different features")
        return tuple(tuple(f.name for f in fs) for fs in feats)

    def raw(self, kind: str, names, built: RawStatistic | None) -> RawStatistic:
        """Numerators and denominators of the sets ``names`` in that order: read from
        ``built`` (the result's own) or the cache, the others evaluated now and cached."""
        known = [raw for raw in (built, self._computed.get(kind)) if raw is not None]
        done = {frozenset(fs) for raw in known for fs in raw.feature_sets}
        missing = []
        for fs in names:  # each set once, in the order asked, whatever its features' order
            if frozenset(fs) not in done:
                done.add(frozenset(fs))
                missing.append(fs)
        if missing:
            plan = self._plan.with_statistics(
                set_statistics(*((missing, ()) if kind == "pairwise" else ((), missing))))
            num, den = self._store.run(plan)[kind]
            cached = self._computed.get(kind)
            new = RawStatistic(tuple(missing), num, den)
            self._computed[kind] = new if cached is None else RawStatistic(
                cached.feature_sets + new.feature_sets,
                np.concatenate([cached.numerator, num]),
                np.concatenate([cached.denominator, den]))
            known = [raw for raw in (built, self._computed[kind]) if raw is not None]
        return select_sets(known, names)

