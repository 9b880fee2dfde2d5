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

:func:`h_statistic` validates, builds the plan (:mod:`jaximp.methods._hstat_plan`: rows,
weightings, feature sets and statistics), runs its statistics through the PD store and reads
the numerators and denominators out into an :class:`HStatistic`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import numpy as np
import pandas as pd

from ..data import (
    Choice,
    Dataset,
    Flag,
    Int,
    Replicates,
    as_key,
    resolve_feature_sets,
    resolve_pairs,
    select_outputs,
    validate_params,
)
from ..results import HStatisticDetails
from ._hstat_plan import (
    HExtension,
    PDStore,
    make_plan,
    overall_and_set_statistics,
    overall_statistics,
    set_statistics,
)
from ._hstat_result import HStatistic, RawStatistic, check_eps
from ._setup import (cached_stage, prepare, rows_of, warm_call, warm_function,
                     warn_unresolved_values)

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


@warm_function
@validate_params(overall=Flag(), total_over=Choice("all", "features"), normalized=Flag(),
                 squared=Flag(), n_bootstrap=Replicates(), approx=Flag(), grid_size=Int(2))
def h_statistic(
    model,
    X,
    features=None,
    *,
    pairs="all",
    reference=None,
    three_way=None,
    overall: bool = True,
    total_over: str = "all",
    normalized: bool = True,
    squared: bool = True,
    n_max: int | None = 500,
    approx: bool = False,
    grid_size: int = 50,
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
        statistic subtracts the main effects of every feature of ``X`` unless
        ``total_over="features"``.
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
    total_over : {"all", "features"}, default "all"
        Whose main effects the total ``H2`` subtracts: every feature of ``X``, or ``features``
        alone (then only their 1-D PDs are evaluated). hstats' ``h2()`` after
        ``hstats(v = ...)`` is ``"features"``: it sums the main effects of ``v``. The two agree
        when ``features`` is every feature.
    normalized : bool, default True
        Divide by the denominator; ``False`` reports the numerator alone, a weighted mean of
        squared differences on the prediction's scale (hstats' ``normalize=FALSE``).
    squared : bool, default True
        Report ``H^2``; ``False`` reports its square root.
    n_max : int or None, default 500
        Use a random subsample of at most ``n_max`` rows (without replacement, drawn with
        ``random_state``; hstats' default), keeping their case weights. ``None``: all rows.
    approx : bool, default False
        hstats' quantile approximation: after the subsample, each of ``features`` that is
        numeric with more than ``grid_size`` distinct values has each value replaced by the
        midpoint of its interval between ``grid_size + 1`` quantiles (R's default type 7,
        unweighted), so that the PDs are evaluated at far fewer distinct values (the
        statistics are then those of the approximated data, as in hstats).
    grid_size : int, default 50
        Quantile intervals of ``approx`` (hstats' ``grid_size``).
    eps : float, default 1e-10
        Numerators at most ``eps`` times their denominator are rounding noise and reported as 0.
        So are numerators and denominators at rounding level: mean squares at most
        ``(16 eps_dtype)^2`` times the output's mean squared centred prediction
        (``eps_dtype`` the machine epsilon of the model's dtype) plus ``(16 eps_float64)^2``
        times its mean squared prediction (the float64 sums' rounding, which centring a
        constant leaves); a constant model gives 0. Where hstats zaps
        numerators below an absolute ``eps``, this rule does not depend on the prediction's
        scale. A positive numerator over a zero denominator gives ``inf`` (normalized), as in
        hstats.
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
    options = dict(features=features, pairs=pairs, reference=reference, three_way=three_way,
                   overall=overall, total_over=total_over, normalized=normalized,
                   squared=squared, n_max=n_max, approx=approx, grid_size=grid_size, eps=eps,
                   output=output,
                   sample_weight=sample_weight, n_bootstrap=n_bootstrap, random_state=random_state,
                   feature_names=feature_names, categorical=categorical, groups=groups,
                   variables=variables, memory_budget=memory_budget, progress=progress)
    # a repeated call on an Explainer's data skips its setup; each call evaluates anew
    return warm_call("H-statistic", _set_up, model, X, None, options)()


def _set_up(model, X, y, *, features, pairs, reference, three_way, overall, total_over,
            normalized, squared, n_max, approx, grid_size, eps, output, sample_weight,
            n_bootstrap, random_state, feature_names, categorical, groups, variables,
            memory_budget, progress):
    """Validate and plan an H-statistic call; returns ``run()``, which evaluates it."""
    overall, normalized, squared = bool(overall), bool(normalized), bool(squared)
    n_max = _check_n_max(n_max)
    eps = check_eps(eps)
    n_bootstrap = int(n_bootstrap)
    key = as_key(random_state)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress, allow_missing=True, reuse=True,
    )
    warn_unresolved_values(predictor, dataset)
    chosen = dataset.resolve(features)
    pair_spec, triple_spec = _resolve_sets(dataset, chosen, pairs, reference, three_way, overall)
    chosen = [f.name for f in chosen]
    out_idx = select_outputs(predictor.output_names, output)
    output_names = tuple(predictor.output_names[i] for i in out_idx)

    plan = _plan_of(dataset, key, random_state, n_max, n_bootstrap, out_idx, memory_budget)
    if total_over == "features":
        plan = dataclasses.replace(plan, summed=tuple(chosen))
    rows = rows_of(dataset, plan.rows)
    if approx:  # kept with the set-up: a repeated call sends it once
        rows = _quantile_midpoints(rows, int(grid_size), chosen)
        rows = rows.pin() if dataset.pinned else rows
    return functools.partial(_evaluate, dataset, rows, predictor, plan, chosen, pair_spec,
                             triple_spec, output_names, overall, normalized, squared, eps,
                             n_bootstrap, memory_budget, progress)


def _quantile_midpoints(dataset: Dataset, m: int, names: list) -> Dataset:
    """hstats' ``approx_vector`` of the numeric features ``names`` with more than ``m`` distinct
    values:
    each value replaced by the midpoint of its interval among the distinct type-7 quantiles at
    ``0, 1/m, ..., 1`` (missing values stay missing), in ``X`` and in the rows a host model
    gets."""
    X, source = dataset.X.astype(np.float64), dataset.source
    if isinstance(source, pd.DataFrame):
        source = source.copy()
    elif source is not None:
        source = np.array(source, dtype=np.float64)  # a NumPy or JAX array of numbers
    for feat in dataset.features:
        if feat.is_categorical or len(feat.columns) != 1 or feat.name not in names:
            continue
        j = feat.columns[0]
        x = X[:, j]
        present = ~np.isnan(x)
        if np.unique(x).size <= m:  # R's unique() counts NA as one value too
            continue
        q = np.unique(np.quantile(x[present], np.linspace(0.0, 1.0, m + 1)))
        mids = (q[:-1] + q[1:]) / 2
        interval = np.clip(np.searchsorted(q, x[present], side="right") - 1, 0, mids.size - 1)
        X[present, j] = mids[interval]
        if isinstance(source, pd.DataFrame):
            source[source.columns[j]] = X[:, j]
        elif source is not None:
            source[:, j] = X[:, j]
    return dataclasses.replace(dataset, X=X, source=source, device_X=None)


def _evaluate(dataset, rows, predictor, plan, chosen, pair_spec, triple_spec, output_names,
              overall, normalized, squared, eps, n_bootstrap, memory_budget, progress):
    """Evaluate a planned H-statistic call (from :func:`_set_up`) and read it out."""
    store = PDStore(plan, predictor, rows, memory_budget=memory_budget, progress=progress)
    results, pair_spec, triple_spec = _run(store, plan, chosen, pair_spec, triple_spec, overall,
                                           eps)
    sets = {"overall": tuple((name,) for name in chosen), "total": (("all features",),),
            "pd_importance": tuple((name,) for name in chosen),
            "pairwise": tuple(pair_spec), "three_way": tuple(triple_spec)}
    raw = {kind: RawStatistic(sets[kind], num, den) for kind, (num, den) in results.items()}
    info = HStatisticDetails(rows=plan.rows, bootstrap_counts=plan.counts, eps=eps,
                             n_bootstrap=n_bootstrap, feature_names=dataset.feature_names)
    return HStatistic._read_out(raw, store.floor, output_names, plan.rows.size, info,
                                normalized, squared, eps, HExtension(dataset, plan, store))


def _plan_of(dataset, key, random_state, n_max, n_bootstrap, out_idx, memory_budget):
    """:func:`make_plan`, kept on an Explainer's data for an int seed (the same seed draws the
    same rows and replicates), so that a repeated call draws nothing again."""
    seeded = isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)
    return cached_stage(
        dataset, ("H-statistic plan", int(random_state) if seeded else None, n_max,
                  n_bootstrap, tuple(out_idx), memory_budget),
        lambda: make_plan(dataset, key, n_max, n_bootstrap, out_idx, memory_budget),
        uncached=not seeded)


def _run(store: PDStore, plan, chosen, pair_spec, triple_spec, overall: bool, eps: float):
    """Numerators and denominators by kind, and the pairs and triples they are of: an int
    ``m`` for either is read as the sets among the top ``m`` features by overall H."""
    results: dict[str, tuple] = {}
    # pairs and triples named up front join the overall statistics in one engine call when
    # they fit one group; the top-m rule needs the overall values first
    known_sets = not isinstance(pair_spec, int) and not isinstance(triple_spec, int)
    if overall:
        statistics = (overall_and_set_statistics(chosen, pair_spec, triple_spec) if known_sets
                      else overall_statistics(chosen))
        results.update(store.run(plan.with_statistics(statistics)))
    if isinstance(pair_spec, int):
        pair_spec = list(itertools.combinations(
            _top_features(chosen, results["overall"], pair_spec, eps), 2))
    if isinstance(triple_spec, int):
        triple_spec = list(itertools.combinations(
            _top_features(chosen, results["overall"], triple_spec, eps), 3))
    if not (overall and known_sets) and (pair_spec or triple_spec):
        results.update(store.run(plan.with_statistics(set_statistics(pair_spec, triple_spec))))
    return results, pair_spec, triple_spec


def _resolve_sets(dataset, chosen, pairs, reference, three_way, overall) -> tuple:
    """The pairs and triples asked for, as tuples of feature names, or an int ``m`` for the
    sets among the top ``m`` features by overall H (which needs ``overall``)."""
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
    return tuple(_names(spec) for spec in (pair_spec, triple_spec))


def _names(spec):
    return spec if isinstance(spec, int) else [tuple([f.name for f in fs]) for fs in spec]


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
    return [name for j, name in enumerate(chosen) if j in selected]
