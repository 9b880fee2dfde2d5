"""PD-based variable importance and the PD interaction statistic (Greenwell et al. 2018).

Both are thin methods: the engine (through ``planned_pd`` of :mod:`jaximp.methods._pd`)
evaluates every PD or ICE curve in one batched call, and the flatness algebra lives in
``jaximp.kernels``. Bootstrap replicates over the background rows re-weight the stored ICE
curves; the model is not evaluated again.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaximp.kernels import _pd_stats as K

from ..data import (
    Choice,
    Replicates,
    as_dataset,
    as_key,
    resolve_pairs,
    validate_grid_options,
    validate_params,
)
from ..results import (
    FeatureImportance,
    FeatureInteraction,
)
from ._pd import PartialDependences, planned_pd, recursion_pd
from ._pd_measures import MEASURE_RULE, importance_from_pds, interaction_from_pds
from ._setup import bootstrap_weights, keep_layout, prepare

__all__ = ["pd_importance", "pd_interaction"]

_VIP_POINTS = 51  # grid points of a grid other than "pdp" given no grid_resolution


# ---------------------------------------------------------------------------------------------
# Edge validation.
# ---------------------------------------------------------------------------------------------


def _check_trim(trim) -> float:
    if isinstance(trim, bool) or not isinstance(trim, (int, float, np.floating)) or not (
        0 <= trim < 0.5
    ):
        raise ValueError(f"trim must be a fraction in [0, 0.5); got {trim!r}.")
    return float(trim)


# ---------------------------------------------------------------------------------------------
# Public methods.
# ---------------------------------------------------------------------------------------------


def _validate_common(measure, average, trim, grid, grid_resolution, percentiles, n_bootstrap,
                     random_state):
    """The options the parameter table cannot check alone (measure, average and n_bootstrap
    are in the table of both methods)."""
    trim = _check_trim(trim)
    validate_grid_options(grid, grid_resolution, percentiles)
    if isinstance(grid, dict) and "__default__" not in grid:  # the others keep pdp's grid
        grid = {**grid, "__default__": "pdp"}
    return grid, trim, int(n_bootstrap), as_key(random_state)


@validate_params(measure=MEASURE_RULE, average=Choice(*K.AVERAGES),
                 n_bootstrap=Replicates(), method=Choice("brute", "recursion"))
def pd_importance(
    model,
    X,
    features=None,
    *,
    ice: bool = False,
    measure: str = "auto",
    average: str = "mean",
    trim: float = 0.1,
    grid="pdp",
    grid_resolution: int | None = None,
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
    method: str = "brute",
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
    measure : {"auto", "sd", "mad", "range4"}, callable or pair, default "auto"
        Flatness measure. ``"auto"``: ``"sd"`` for continuous and ``"range4"`` for categorical and
        one-hot features (Greenwell et al.'s rule). ``"mad"``: median absolute deviation (scaled by
        1.4826 to estimate a standard deviation), robust to a few extreme PD values. R's vip
        takes the range only for factors: a character column (R >= 4.0 keeps strings as such)
        gets the sd there, which ``measure="sd"`` reproduces for a text feature. A callable is
        any other measure (vip's ``var_fun``): a ``jax.numpy`` function of a curve (g,) to a
        scalar, compiled once per function object (one that reads changing state must be a new
        function for the change to count). A pair ``(continuous, categorical)`` of measures sets
        the two apart (vip's ``var_continuous`` and ``var_categorical``).
    average : {"mean", "median", "trimmed"}, default "mean"
        How ICE curves are averaged into the PD (weighted by ``sample_weight``); the ICE variant
        averages the per-row flatness the same way. ``"median"`` and ``"trimmed"`` are the seed
        paper's robust alternatives to the mean.
    trim : float in [0, 0.5), default 0.1
        Fraction of the total weight trimmed from each tail by ``average="trimmed"``.
    grid, grid_resolution, percentiles
        The grid of each feature, as in :func:`jaximp.partial_dependence`. The defaults are
        those of the ``pdp``/``vip`` R packages used by Greenwell et al. (2018):
        ``min(n_distinct, 51)`` evenly spaced points from the minimum to the maximum
        (``grid="pdp"``); a given ``grid_resolution`` is that many points, as pdp's
        ``grid.resolution``. Other grids take 51 points by default; ``grid="uniform"`` takes
        the distinct values themselves when there are at most that many. A dict of explicit
        values leaves the features it does not name on pdp's grid (or its
        ``"__default__"``).
    output : int, str or list, optional
        Model outputs to keep (default all); importance is computed per output.
    sample_weight : array of shape (n,), optional
        Case weights of the background rows.
    n_bootstrap : int, default 0
        Bootstrap replicates over the background rows (0: none, else >= 2). Each replicate
        re-weights the stored ICE curves by its row counts; the model is evaluated once.
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
    method : {"brute", "recursion"}, default "brute"
        How each PD is computed, as in :func:`jaximp.partial_dependence`: the model on the
        modified rows of ``X``, or (a scikit-learn tree model) Friedman's recursion over the
        training data stored in the trees, as alibi's ``TreePartialDependenceVariance``
        (its grid: ``grid="sklearn", grid_resolution=100, percentiles=(0, 1)``).

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
    grid, trim, n_bootstrap, key = _validate_common(
        measure, average, trim, grid, grid_resolution, percentiles, n_bootstrap, random_state
    )
    if method == "recursion":
        _check_recursion(ice=bool(ice), average=average != "mean",
                         n_bootstrap=n_bootstrap > 0, sample_weight=sample_weight is not None,
                         groups=groups is not None)
        names = as_dataset(X, feature_names=feature_names, categorical=categorical,
                           allow_missing=True).resolve(features)
        return PartialDependences({feat.name: recursion_pd(
            model, X, feat.name, "average", grid, grid_resolution, percentiles, False, output,
            None, feature_names, categorical, default_resolution=_VIP_POINTS)
            for feat in names}).importance(measure)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress, allow_missing=True,
    )
    chosen = dataset.resolve(features)
    # ICE curves are kept only where the statistic needs each row's curve; a bootstrap of the
    # PD re-weights rows inside the engine (O(replicates x grid) memory).
    keep_ice = bool(ice) or average != "mean"
    weights, counts = bootstrap_weights(dataset, n_bootstrap, key)
    results = planned_pd(
        dataset, predictor, [[f] for f in chosen], kind="individual" if keep_ice else "average",
        grid=grid, grid_resolution=grid_resolution, percentiles=percentiles, output=output,
        memory_budget=memory_budget, progress=progress, default_resolution=_VIP_POINTS,
        weightings=None if keep_ice else weights,
    )()
    replicated = None
    if isinstance(results, tuple):
        results, replicated = results
    importance = importance_from_pds(chosen, results, replicated, weights, counts,
                                     ice=bool(ice), measure=measure, average=average,
                                     trim=trim, n_bootstrap=n_bootstrap)
    return dataclasses.replace(importance,
                               info=keep_layout(importance.info, dataset, chosen))


def _check_recursion(**given) -> None:
    """Refuse the options that ``method="recursion"`` does not read (those set in ``given``)."""
    if any(given.values()):
        raise ValueError(
            f"method='recursion' reads each PD from the trees' training data; "
            f"{[name for name, on in given.items() if on]} do not apply to it. Leave them "
            "out, or use method='brute'.")


@validate_params(measure=MEASURE_RULE, average=Choice(*K.AVERAGES),
                 n_bootstrap=Replicates(), method=Choice("brute", "recursion"))
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
    grid="pdp",
    grid_resolution: int | None = None,
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
    method: str = "brute",
) -> FeatureInteraction:
    """The PD interaction statistic of feature pairs (Greenwell et al. 2018, section 3.2).

    For a pair (i, j) the 2-D PD is computed on the grid ``G_i x G_j``. For each grid value of
    ``x_j`` the flatness of the PD as ``x_i`` varies, ``imp(x_i | x_j)``, is taken, and the spread
    of these over the grid of ``x_j``; likewise with i and j swapped; the statistic is the mean of
    the two. Additive models give 0; ``f = x1 * x2`` gives ``(sd(G1) sd(|G2|) + sd(|G1|)
    sd(G2)) / 2``, ``sd(G1) sd(G2)`` for grids of values >= 0. The 2-D PDs of all pairs come
    from one engine call.

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
    measure : {"auto", "sd", "mad", "range4"}, callable or pair, default "auto"
        Flatness measure of both steps; ``"auto"`` uses ``"sd"`` over a continuous feature's grid
        and ``"range4"`` over a categorical one's. A callable or a pair as in
        :func:`pd_importance`.
    average, trim, grid, grid_resolution, percentiles, output, sample_weight
        As in :func:`pd_importance` (the grid is the product of the two features' grids, so
        its size is ``grid_resolution ** 2`` per pair).
    n_bootstrap : int, default 0
        Bootstrap replicates over the background rows; they re-weight the stored 2-D ICE
        surfaces (n x g x g per pair, which must fit in memory).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
    feature_names, categorical, groups, variables, memory_budget, progress
        As in :func:`pd_importance`.
    method : {"brute", "recursion"}, default "brute"
        As in :func:`pd_importance`: ``"recursion"`` reads each pair's 2-D PD from the trees
        of a scikit-learn tree model, as alibi's ``TreePartialDependenceVariance``.

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
    grid, trim, n_bootstrap, key = _validate_common(
        measure, average, trim, grid, grid_resolution, percentiles, n_bootstrap, random_state
    )
    if method == "recursion":
        _check_recursion(average=average != "mean", n_bootstrap=n_bootstrap > 0,
                         sample_weight=sample_weight is not None, groups=groups is not None)
        dataset = as_dataset(X, feature_names=feature_names, categorical=categorical,
                             allow_missing=True)
        pair_list = resolve_pairs(dataset, dataset.resolve(features), pairs, reference)
        results = [recursion_pd(model, X, [a.name, b.name], "average", grid, grid_resolution,
                                percentiles, False, output, None, feature_names, categorical,
                                default_resolution=_VIP_POINTS)
                   for a, b in pair_list]
        return interaction_from_pds(pair_list, results, None, None, None, measure=measure,
                                    average=average, trim=trim, n_bootstrap=0)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress, allow_missing=True,
    )
    chosen = dataset.resolve(features)
    pair_list = resolve_pairs(dataset, chosen, pairs, reference)
    keep_ice = average != "mean"
    weights, counts = bootstrap_weights(dataset, n_bootstrap, key)
    results = planned_pd(
        dataset, predictor, [list(pair) for pair in pair_list],
        kind="individual" if keep_ice else "average", grid=grid,
        grid_resolution=grid_resolution, percentiles=percentiles, output=output,
        memory_budget=memory_budget, progress=progress, default_resolution=_VIP_POINTS,
        weightings=None if keep_ice else weights,
    )()
    replicated = None
    if isinstance(results, tuple):
        results, replicated = results
    return interaction_from_pds(pair_list, results, replicated, weights, counts,
                                measure=measure, average=average, trim=trim,
                                n_bootstrap=n_bootstrap)

