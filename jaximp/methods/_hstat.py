"""Friedman's H-statistic (Friedman & Popescu 2008) in the convention of R's hstats.

Every PD is evaluated at the data rows themselves with the same rows as background: item ``i`` of
a feature set S puts row ``i``'s values of S into every row, so one feature set costs ``n x n``
model evaluations. All feature sets (1-D, complements, pairs, triples) go to the engine in one
call, which chunks, shards and reduces them; each 1-D PD is computed once and reused by every
pair, triple, overall and total statistic that needs it. A bootstrap replicate is another
weighting of the rows: the engine's mean reducer averages every PD under all weightings at
once (memory O(sets x n x replicates)), and the H algebra re-weights the outer rows, so the
model is evaluated once.

The PDs at the rows are kept, centred, differenced and summed in float64 on the host: the
numerators are sums of squares of differences of nearly equal PDs (``F_jk - F_j - F_k``), to
which float32 algebra adds relative errors of up to about 1e-6.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
from typing import Any

import jax
import numpy as np

from ..data import (
    Flag,
    Replicates,
    as_key,
    replicate_weights,
    resolve_feature_sets,
    resolve_pairs,
    row_weights,
    select_outputs,
    validate_params,
)
from ..engine import Mean, at_values, evaluate, predict_rows, resolve_budget
from ..results import HStatisticDetails
from ._hstat_result import HStatistic, RawStatistic, check_eps
from ._setup import prepare

__all__ = ["HStatistic", "h_statistic"]

# ---------------------------------------------------------------------------------------------
# Edge validation.
# ---------------------------------------------------------------------------------------------


def _check_n_max(n_max):
    if n_max is None:
        return None
    if isinstance(n_max, bool) or not isinstance(n_max, (int, np.integer)) or n_max < 2:
        raise ValueError(
            f"n_max must be an int >= 2 (rows kept, hstats uses 500) or None for all rows; "
            f"got {n_max!r}."
        )
    return int(n_max)


def _resolve_triples(dataset, three_way):
    if three_way is None or (isinstance(three_way, (int, np.integer)) and three_way == 0
                             and not isinstance(three_way, bool)):
        return []
    if isinstance(three_way, (int, np.integer)) and not isinstance(three_way, bool):
        if three_way < 3:
            raise ValueError(
                f"three_way as an int is the number m of top features whose triples are "
                f"computed; it must be 0 or >= 3; got {three_way}."
            )
        return int(three_way)
    return resolve_feature_sets(
        dataset, three_way, 3,
        "three_way must be None, an int m >= 3 or a non-empty list of feature triples such "
        f"as [('x1', 'x2', 'x3')]; got {three_way!r}.",
        "a triple must hold three different features",
    )


# ---------------------------------------------------------------------------------------------
# The method.
# ---------------------------------------------------------------------------------------------


@validate_params(overall=Flag(), normalized=Flag(), squared=Flag(),
                 n_bootstrap=Replicates())
def h_statistic(
    model,
    X,
    features=None,
    *,
    pairs="all",
    reference=None,
    three_way=None,
    overall: bool = True,
    normalized: bool = True,
    squared: bool = True,
    n_max: int | None = 500,
    eps: float = 1e-10,
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
) -> HStatistic:
    """Friedman's H-statistics: overall, pairwise, three-way and total interaction strength.

    PDs are evaluated at the data rows with the same rows as background and centred to weighted
    mean 0: ``F_j(x_ij)``, ``F_jk``, ``F_\\j`` (all features but j) and the centred prediction
    ``F``. Then (all sums weighted by ``sample_weight``)

    - pairwise ``H2_jk = sum_i (F_jk - F_j - F_k)^2 / sum_i F_jk^2``,
    - overall ``H2_j = sum_i (F - F_j - F_\\j)^2 / sum_i F^2``,
    - total ``H2 = sum_i (F - sum_j F_j)^2 / sum_i F^2``,
    - three-way ``H2_jkl = sum_i (F_jkl - F_jk - F_jl - F_kl + F_j + F_k + F_l)^2 / sum_i F_jkl^2``.

    Each feature set costs ``n^2`` model evaluations, all run by the engine in one batched call;
    1-D PDs are computed once and shared by every statistic.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        Data: both the evaluation points and the background.
    features : sequence of str or int, optional
        Features for the overall statistic and for pair selection (default all). The total
        statistic always uses every feature of ``X``.
    pairs : "all", int, list of pairs or None, default "all"
        Pairwise statistics for every pair among ``features``; an int ``m``: the pairs among the
        features selected as hstats' ``pairwise_m`` does (needs ``overall=True``): for each
        output the ``m`` features with the largest positive overall numerator, the union over
        outputs, paired in the order of ``features``; an explicit list such as
        ``[("x1", "x2")]``; ``None``: none.
    reference : str or int, optional
        Pairs of this feature with every other feature in ``features`` (leave ``pairs="all"``).
    three_way : None, int or list of triples, default None
        Three-way statistics: an int ``m >= 3`` for the triples among the features selected
        as for ``pairs=m`` (hstats' ``threeway_m``), or explicit triples.
    overall : bool, default True
        Compute the overall ``H2_j`` of each feature and the total ``H2`` (costs ``2 p n^2``
        evaluations: the 1-D PDs and the PDs of every complement).
    normalized : bool, default True
        Divide by the denominator; ``False`` reports the numerator alone, a weighted mean of
        squared differences on the prediction's scale (hstats' ``normalize=FALSE``).
    squared : bool, default True
        Report ``H^2``; ``False`` reports its square root.
    n_max : int or None, default 500
        Use a random subsample of at most ``n_max`` rows (without replacement, drawn with
        ``random_state``; hstats' default), keeping their case weights. ``None``: all rows.
    eps : float, default 1e-10
        Numerators at most ``eps`` times their denominator are rounding noise and reported as 0.
        So is a statistic whose joint PD is constant up to the model's rounding (its mean
        square below ``(16 eps_dtype)^2`` times the output's mean squared centred prediction,
        ``eps_dtype`` the machine epsilon of the model's dtype): where hstats zaps numerators
        below an absolute ``eps``, this rule does not depend on the prediction's scale.
    output : int, str or list, optional
        Model outputs to keep (default all); every statistic is computed per output.
    sample_weight : array of shape (n,), optional
        Case weights: every mean over rows (PD backgrounds, centring, sums) is weighted.
    n_bootstrap : int, default 0
        Bootstrap replicates over the rows (0: none, else >= 2). A replicate re-weights both
        row axes of the PDs by its row counts: the engine averages every PD under every
        replicate's weights in the same pass, so the model is evaluated only once and memory
        grows as ``sets x n x replicates`` (not ``n^2``).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Seed of the row subsample and of the bootstrap.
    feature_names, categorical, groups
        Data description; see :func:`jaximp.as_dataset`. A group (e.g. one-hot block) is one
        feature: its columns are replaced together.
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
    HStatistic

    Notes
    -----
    Duplicated rows need no special treatment: hstats compresses them into one row with their
    multiplicity as a weight, which gives exactly the same statistics as keeping every row.
    H can exceed 1 when features are correlated (the PDs then extrapolate). It is 0 for an
    additive model and 1 for ``x_j * x_k`` with independent centred inputs.

    References
    ----------
    Friedman & Popescu (2008), "Predictive learning via rule ensembles", Ann. Appl. Stat. 2(3).
    Mayer (2023), hstats: Interaction Statistics, R package.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.array([[1, 0, 2], [1, 0, 2], [1, 2, 1], [2, 1, 4.0]])
    >>> f = lambda X: X[:, 0] + X[:, 1] * jnp.sqrt(X[:, 2])
    >>> h = h_statistic(f, X, feature_names=["x1", "x2", "x3"])
    >>> print(h.to_frame().round(6))
      feature_1 feature_2 output  interaction
    0        x2        x3      y     0.078125
    1        x1        x2      y     0.000000
    2        x1        x3      y     0.000000
    """
    overall, normalized, squared = bool(overall), bool(normalized), bool(squared)
    n_max = _check_n_max(n_max)
    eps = check_eps(eps)
    n_bootstrap = int(n_bootstrap)
    key = as_key(random_state)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress, allow_missing=True,
    )
    chosen = dataset.resolve(features)
    pair_spec = [] if pairs is None else resolve_pairs(
        dataset, chosen, pairs, reference, allow_int=True
    )
    triple_spec = _resolve_triples(dataset, three_way)
    for name, spec in (("pairs", pair_spec), ("three_way", triple_spec)):
        if isinstance(spec, int) and not overall:
            raise ValueError(
                f"{name}={spec} picks the top features by overall H, which needs overall=True; "
                "pass explicit feature sets instead."
            )
    if not overall and not pair_spec and not triple_spec:
        raise ValueError(
            "nothing to compute: overall=False with pairs=None and no three_way; set "
            "overall=True or ask for pairs or triples."
        )
    out_idx = select_outputs(predictor.output_names, output)
    output_names = tuple(predictor.output_names[i] for i in out_idx)

    # Rows: an explicit-key subsample of at most n_max, keeping case weights.
    key_rows, key_boot = jax.random.split(key)
    n = dataset.n_rows
    if n_max is not None and n > n_max:
        rows = np.sort(np.asarray(jax.random.choice(key_rows, n, (n_max,), replace=False)))
    else:
        rows = np.arange(n)
    data = dataset.take(rows)
    Xs = data.X
    ws = row_weights(dataset)[rows]
    if ws.sum() <= 0:
        raise ValueError(
            "the rows kept by n_max all have zero sample_weight; raise n_max or use another "
            "random_state."
        )
    if np.count_nonzero(ws) < 3:  # fewer rows leave every PD at the rows 0/0
        raise ValueError(
            f"h_statistic needs at least 3 rows of X with positive weight (after n_max); got "
            f"{np.count_nonzero(ws)}. Pass more rows (or a larger n_max)."
        )
    n_s = rows.size
    weights, counts = replicate_weights(ws, n_bootstrap, key_boot)

    # The prediction F, centred under every weighting like the PDs.
    engine_kw = dict(memory_budget=memory_budget, progress=progress)
    pred = predict_rows(predictor, data, **engine_kw)[:, out_idx].astype(np.float64)  # (n, o)
    n_columns = dataset.X.shape[1]
    r = weights.shape[0]
    o = len(out_idx)
    prediction = _centre(np.broadcast_to(pred.T[:, None, :], (o, r, n_s)), weights)
    # A joint PD whose weighted mean square is below this floor (o, r) is constant up to the
    # model's rounding: its statistic is 0, not a ratio of two rounding errors.
    centred = pred - (ws @ pred) / ws.sum()
    resolution = 16 * np.finfo(np.dtype(predictor.dtype)).eps
    floor = resolution ** 2 * (weights @ centred ** 2 / weights.sum(axis=1)[:, None]).T
    # centred float64 PDs at the rows, (o, r, n), by set key
    pds: dict[Any, np.ndarray] = {"F": prediction}
    masks: dict[Any, np.ndarray] = {}  # column mask of every feature set, by key
    # Statistics run in groups whose PDs fit the memory budget: a bootstrap keeps (sets x n x
    # replicates) values per group, not for all pairs at once. Per statistic: the engine's
    # float64 means of its new sets (a triple brings up to four), the same centred and the
    # residual: 24 float64 PDs budgeted (a group of one statistic peaked at 20, measured).
    set_bytes = 8.0 * o * r * n_s
    group_size = max(1, int(resolve_budget(memory_budget) // (24 * set_bytes)))

    keys: dict[tuple, Any] = {}  # (features, complement) -> set key, asked many times

    def key_of(feats, complement=False):
        feats = tuple(feats)
        known = keys.get((feats, complement))
        if known is not None:
            return known
        names = frozenset(f.name for f in feats)
        key = ("not", next(iter(names))) if complement else names
        if key not in masks:
            mask = np.zeros(n_columns, bool)
            for f in feats:
                mask[list(f.columns)] = True
            masks[key] = ~mask if complement else mask
        keys[(feats, complement)] = key
        return key

    def evaluate_sets(keys) -> None:
        """The PDs at the rows of the sets not evaluated yet, in one engine call: row ``i`` of
        set S put into every background row, averaged under every weighting (the case
        weights, then each bootstrap replicate)."""
        todo = [k for k in dict.fromkeys(keys) if k not in pds]
        for start in range(0, len(todo), group_size):  # a budget-sized group of sets per call
            group = todo[start:start + group_size]
            m = len(group)
            plan = at_values(np.stack([masks[k] for k in group]), np.repeat(np.arange(m), n_s),
                             Xs, np.tile(np.arange(n_s), m))
            out = evaluate(predictor, data, plan, Mean(weights), label="H-statistic",
                           **engine_kw).reshape(m, n_s, r, -1)
            for k, block in zip(group, out):
                pds[k] = _centre(np.transpose(block[..., out_idx], (2, 1, 0)), weights)
            del out

    def compute(statistics: list[_Stat]) -> dict[str, tuple]:
        """Statistics in groups of one batched kernel call each; results grouped by kind.
        After each group, PDs that no later statistic needs are dropped (1-D PDs stay)."""
        needed_later = collections.Counter(k for st in statistics for k in (st.joint, *st.parts))
        parts: dict[str, list] = collections.defaultdict(list)
        for start in range(0, len(statistics), group_size):
            group = statistics[start:start + group_size]
            evaluate_sets([k for st in group for k in (st.joint, *st.parts)
                           if not isinstance(k, str)])
            for kind, values in _compute_group(group, pds, weights).items():
                parts[kind].append(values)
            for st in group:
                for k in (st.joint, *st.parts):
                    needed_later[k] -= 1
                    if needed_later[k] == 0 and not isinstance(k, str) and len(k) > 1:
                        pds.pop(k, None)
            for k in [k for k in pds if isinstance(k, tuple)]:  # complements: overall only
                if needed_later[k] <= 0:
                    pds.pop(k)
        return {kind: tuple(np.concatenate(x) for x in zip(*chunks))  # num, den (s, o, r)
                for kind, chunks in parts.items()}

    def pair_and_triple_statistics(pair_list, triple_list) -> list[_Stat]:
        statistics = []
        for pair in pair_list:
            statistics.append(_Stat("pairwise", key_of(pair),
                                    (key_of(pair[:1]), key_of(pair[1:])), (1.0, 1.0)))
        for a, b, d in triple_list:
            statistics.append(_Stat(
                "three_way", key_of((a, b, d)),
                tuple(key_of(p) for p in ((a, b), (a, d), (b, d), (a,), (b,), (d,))),
                (1.0, 1.0, 1.0, -1.0, -1.0, -1.0),
            ))
        return statistics

    results: dict[str, tuple] = {}
    # pairs and triples named up front join the overall statistics in one engine call when
    # they fit one group; the top-m rule needs the overall values first
    known_sets = not isinstance(pair_spec, int) and not isinstance(triple_spec, int)
    if overall:
        statistics = [_Stat("overall", "F", (key_of((f,)), key_of((f,), complement=True)),
                            (1.0, 1.0)) for f in chosen]
        statistics.append(_Stat("total", "F", ("sum",), (1.0,)))
        # hstats' pd_importance: the same PDs without the feature's own main effect
        statistics += [_Stat("pd_importance", "F", (key_of((f,), complement=True),), (1.0,))
                       for f in chosen]
        if known_sets:
            statistics += pair_and_triple_statistics(pair_spec, triple_spec)
        singles = [key_of((f,)) for f in dataset.features]
        first = [k for st in statistics[:group_size] for k in (st.joint, *st.parts)
                 if not isinstance(k, str)]
        # the total statistic needs the sum of every feature's 1-D PD
        evaluate_sets(singles + (first if len(statistics) <= group_size else []))
        pds["sum"] = np.sum([pds[key] for key in singles], axis=0)
        results.update(compute(statistics))
    if isinstance(pair_spec, int):
        top = _top_features(chosen, results["overall"], pair_spec, eps)
        pair_spec = list(itertools.combinations(top, 2))
    if isinstance(triple_spec, int):
        top = _top_features(chosen, results["overall"], triple_spec, eps)
        triple_spec = list(itertools.combinations(top, 3))
    later = [] if overall and known_sets else pair_and_triple_statistics(pair_spec, triple_spec)
    if later:
        results.update(compute(later))

    sets = {"overall": tuple((f.name,) for f in chosen), "total": (("all features",),),
            "pd_importance": tuple((f.name,) for f in chosen),
            "pairwise": tuple(tuple(f.name for f in fs) for fs in pair_spec),
            "three_way": tuple(tuple(f.name for f in fs) for fs in triple_spec)}
    raw = {kind: RawStatistic(sets[kind], num, den) for kind, (num, den) in results.items()}
    info = HStatisticDetails(rows=rows, bootstrap_counts=counts, eps=eps,
                             n_bootstrap=n_bootstrap, feature_names=dataset.feature_names)

    def extend(kind: str, listed) -> tuple:
        """The names of the pairs or triples ``listed``, after evaluating into ``raw`` those
        not computed yet, on the same rows, weights and model (the 1-D PDs are kept)."""
        size = 2 if kind == "pairwise" else 3
        feats = resolve_feature_sets(
            dataset, listed, size,
            f"{'pairs' if size == 2 else 'triples'} must be a non-empty list of feature "
            f"{'pairs' if size == 2 else 'triples'}; got {listed!r}.",
            f"a {'pair' if size == 2 else 'triple'} must hold {size} different features")
        names = tuple(tuple(f.name for f in fs) for fs in feats)
        known = raw.get(kind)
        done = set() if known is None else {frozenset(fs) for fs in known.feature_sets}
        missing = [fs for fs, name in zip(feats, names) if frozenset(name) not in done]
        if missing:
            statistics = pair_and_triple_statistics(
                *((missing, []) if size == 2 else ([], missing)))
            num, den = compute(statistics)[kind]
            new = tuple(tuple(f.name for f in fs) for fs in missing)
            raw[kind] = RawStatistic(new, num, den) if known is None else RawStatistic(
                known.feature_sets + new, np.concatenate([known.numerator, num]),
                np.concatenate([known.denominator, den]))
        return names

    return HStatistic._read_out(raw, floor, output_names, n_s, info, normalized, squared, eps,
                                extend)


def _top_features(chosen, overall, m: int, eps: float) -> list:
    """hstats' selection for ``pairwise_m`` / ``threeway_m``: for each output, the ``m``
    features with the largest positive overall numerator (the denominator is common to all
    features of an output; numerators within ``eps`` of 0 count as 0); the union over
    outputs, in the order of ``chosen``."""
    numerators, denominators = overall[0][..., 0], overall[1][..., 0]  # (p, o)
    selected = set()
    for num, den in zip(numerators.T, denominators.T):
        order = np.argsort(-num, kind="stable")
        selected.update(int(j) for j in order[:m] if num[j] > eps * den[j])
    return [f for j, f in enumerate(chosen) if j in selected]


@dataclasses.dataclass(frozen=True)
class _Stat:
    """One H-statistic to compute: joint PD, parts and their signs (keys into the PD store)."""

    kind: str
    joint: Any
    parts: tuple
    signs: tuple


def _centre(pd: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """PDs at the rows ``pd`` (o, r, n) less their weighted mean under each weighting
    ``weights`` (r, n), in float64 (a new array)."""
    pd = np.asarray(pd, np.float64)
    return pd - (np.einsum("orn,rn->or", pd, weights) / weights.sum(axis=1))[..., None]


def _compute_group(statistics: list[_Stat], pds: dict, weights: np.ndarray) -> dict[str, tuple]:
    """Numerator and denominator (s, o, r) of each statistic, weighted means over the rows
    ``sum_i w_i (F_joint - sum_t sign_t F_t)^2`` and ``sum_i w_i F_joint^2`` (divided by
    ``sum_i w_i``) of the centred float64 PDs ``pds``, grouped by kind.

    Examples
    --------
    >>> x1, x2 = np.array([-1.0, -1.0, 1.0, 1.0]), np.array([-1.0, 1.0, -1.0, 1.0])
    >>> pds = {k: v[None, None] for k, v in (("j", x1), ("k", x2), ("jk", x1 + x2 + x1 * x2))}
    >>> pair = _Stat("pairwise", "jk", ("j", "k"), (1.0, 1.0))
    >>> num, den = _compute_group([pair], pds, np.ones((1, 4)))["pairwise"]
    >>> float(num[0, 0, 0]), float(den[0, 0, 0])
    (1.0, 3.0)
    """
    residual = np.stack([pds[st.joint] for st in statistics])  # (s, o, r, n), a copy
    den = np.einsum("sorn,sorn,rn->sor", residual, residual, weights)
    for row, st in zip(residual, statistics):
        for part, sign in zip(st.parts, st.signs):
            row -= sign * pds[part]
    num = np.einsum("sorn,sorn,rn->sor", residual, residual, weights)
    total = weights.sum(axis=1)
    num, den = num / total, den / total
    kinds = np.array([st.kind for st in statistics])
    return {kind: (num[kinds == kind], den[kinds == kind]) for kind in dict.fromkeys(kinds)}
