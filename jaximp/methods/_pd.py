"""Partial dependence and ICE curves."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from ..data import (
    Choice,
    Dataset,
    Feature,
    Flag,
    Int,
    ReadsDeferred,
    as_dataset,
    feature_grid,
    grid_option,
    output_index,
    product_grid_index,
    resolve_grid,
    select_outputs,
    validate_grid_options,
    validate_params,
)
from ..engine import Keep, Mean, at_values, check_collapse, evaluate
from ..models import Predictor
from ._setup import cached_stage, prepare, warm_call, warm_function, weightings_digest
from ._row_groups import row_groups

__all__ = ["PartialDependence", "PartialDependences", "partial_dependence",
           "partial_dependence_all", "recursion_pd"]

_KINDS = ("average", "individual", "both")


@dataclasses.dataclass(frozen=True, eq=False)
class PartialDependence(ReadsDeferred):
    """Partial dependence (and ICE) of the model on one feature set S.

    Attributes
    ----------
    feature_names : tuple of str, length k
        The features of S (k = 1 for a 1-D PD, 2 for a 2-D PD, ...).
    grid_values : tuple of tuples
        Grid of each feature of S: values, or levels of a categorical feature.
    output_names : tuple of str, length o
    average : ndarray of shape (g_1, ..., g_k, o) or None
        PD over the product grid (weighted mean of the ICE curves).
    individual : ndarray of shape (n, g_1, ..., g_k, o) or None
        ICE curves, one per data row.
    centered : bool
        Whether every curve had its value at the first grid point subtracted.
    feature_kinds : tuple of str
        ``"continuous"``, ``"categorical"`` or ``"onehot"`` for each feature of S.
    deciles : tuple
        For each feature of S, the deciles of its values in the data (a tuple of 9 numbers;
        ``None`` for a categorical or one-hot feature), drawn as a rug by :meth:`plot`.
    """

    feature_names: tuple[str, ...]
    grid_values: tuple[tuple, ...]
    output_names: tuple[str, ...]
    average: np.ndarray | None
    individual: np.ndarray | None
    centered: bool = False
    feature_kinds: tuple[str, ...] = ()
    deciles: tuple = ()

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(len(g) for g in self.grid_values)

    def __repr__(self) -> str:
        parts = [f"grid {' x '.join(map(str, self.grid_shape))}",
                 f"outputs {list(self.output_names)}"]
        if self.average is not None:
            values = self.average[..., output_index(self.output_names, None)]
            parts.append(f"average in [{values.min():.4g}, {values.max():.4g}]")
        if self.individual is not None:
            parts.append(f"{self.individual.shape[0]} ICE curves")
        if self.centered:
            parts.append("centered")
        return f"PartialDependence({' x '.join(self.feature_names)}: {', '.join(parts)})"

    def to_frame(self, kind: Literal["average", "individual"] = "average") -> pd.DataFrame:
        """Tidy table: one column per feature of S, ``output``, ``yhat`` (and ``row`` for ICE)."""
        values = self.average if kind == "average" else self.individual
        if values is None:
            raise ValueError(f"this result holds no {kind!r} values; compute with kind='both'.")
        grid_rows = list(itertools.product(*self.grid_values))
        o = len(self.output_names)
        frame_grid = pd.DataFrame(grid_rows, columns=list(self.feature_names))
        if kind == "average":
            flat = values.reshape(len(grid_rows), o)
            frames = [frame_grid.assign(output=name, yhat=flat[:, j]) for j, name in
                      enumerate(self.output_names)]
            return pd.concat(frames, ignore_index=True)
        n = values.shape[0]
        flat = values.reshape(n, len(grid_rows), o)
        frames = []
        for j, name in enumerate(self.output_names):
            block = pd.concat([frame_grid] * n, ignore_index=True)
            block.insert(0, "row", np.repeat(np.arange(n), len(grid_rows)))
            frames.append(block.assign(output=name, yhat=flat[:, :, j].reshape(-1)))
        return pd.concat(frames, ignore_index=True)

    def interaction(self, measure: str = "auto"):
        """The PD interaction statistic of this 2-D PD's pair, read from the stored surface
        without a model call, so the measure can be chosen after the PD exists (``"auto"``:
        ``"sd"`` over a numeric feature's grid, ``"range4"`` over a categorical one's). Equals
        :func:`jaximp.pd_interaction` on the same grid (``average="mean"``, no bootstrap).
        Returns a :class:`jaximp.FeatureInteraction` with one pair.

        Examples
        --------
        >>> import numpy as np, jaximp
        >>> X = np.random.default_rng(0).uniform(size=(50, 2))
        >>> surface = jaximp.partial_dependence(lambda A: A[:, 0] * A[:, 1], X, ("x0", "x1"),
        ...                                     grid_resolution=5, percentiles=(0, 1))
        >>> strength = surface.interaction("sd").values[0, 0]
        >>> bool(np.isclose(strength, jaximp.pd_interaction(lambda A: A[:, 0] * A[:, 1], X,
        ...      grid_resolution=5, measure="sd").values[0, 0], rtol=1e-5))
        True
        """
        from ._pd_measures import MEASURE_RULE, interaction_from_pds

        MEASURE_RULE.check("measure", measure)
        if len(self.feature_names) != 2 or self.average is None:
            held = "the average PD" if self.average is not None else "ICE curves only"
            raise ValueError(
                "interaction() needs the average PD of a feature pair; this result holds "
                f"{held} over {len(self.feature_names)} feature(s). Compute "
                "partial_dependence(model, X, (a, b)) with kind='average' or 'both'."
            )
        pair = tuple(Feature(name, (0,), kind) for name, kind in
                     zip(self.feature_names, self.feature_kinds or ("continuous",) * 2))
        average = dataclasses.replace(self, individual=None)
        return interaction_from_pds([pair], [average], None, np.ones((1, 1)), None,
                                    measure=measure, average="mean", trim=0.0, n_bootstrap=0)

    def plot(self, output: int | str | None = None, ax=None, ice: bool = True,
             max_curves: int = 200, rug: bool = True, label=None):
        """A 1-D PD over its ICE curves, or a 2-D PD as a heat map; returns the Axes.

        1-D: the PD (red) over exactly ``min(n, max_curves)`` ICE curves (grey; evenly spaced
        rows) and a rug at the feature's deciles; a categorical or one-hot feature is drawn
        as points at its levels, without lines. With ``label``, the PD takes the next colour
        of the Axes and a legend entry, so that the groups of ``partial_dependence(by=...)``
        share one Axes: ``for g, pd in groups.items(): ax = pd.plot(ax=ax, ice=False,
        label=g)``. 2-D: a heat map of the PD, the first feature on the x axis, ticks
        labelled with grid values (categorical levels by name), and a colour bar.
        """
        from ..results import plot_pd

        return plot_pd(self, output=output, ax=ax, ice=ice, max_curves=max_curves, rug=rug,
                       label=label)


class PartialDependences(Mapping):
    """The 1-D partial dependences of several features (from
    :func:`partial_dependence_all`): a read-only mapping of feature name to
    :class:`PartialDependence`, in input order, with a joint table and figure."""

    def __init__(self, results: dict[str, PartialDependence]):
        self._results = dict(results)

    def __getitem__(self, name: str) -> PartialDependence:
        try:
            return self._results[name]
        except KeyError:
            raise KeyError(f"no partial dependence of {name!r}; features are "
                           f"{list(self._results)}.") from None

    def __iter__(self):
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)

    def __repr__(self) -> str:
        return f"PartialDependences({len(self)} features: {', '.join(self._results)})"

    def to_frame(self, kind: Literal["average", "individual"] = "average") -> pd.DataFrame:
        """One tidy table: ``feature``, ``value`` (the grid point), ``output``, ``yhat``
        (and ``row`` for ICE)."""
        frames = []
        for name, result in self._results.items():
            frame = result.to_frame(kind).rename(columns={name: "value"})
            frame.insert(0, "feature", name)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    def importance(self, measure: str = "auto"):
        """PD importance read from these curves, without a model call: ``measure`` of each
        feature's PD over its grid (``"auto"``: ``"sd"`` for a numeric feature, ``"range4"``
        for a categorical one), so the measure can be chosen after the PDs exist. Equals
        :func:`jaximp.pd_importance` on the same grid (``average="mean"``, no bootstrap).
        Returns a :class:`jaximp.FeatureImportance`."""
        from ._pd_measures import MEASURE_RULE, importance_from_pds

        MEASURE_RULE.check("measure", measure)
        results = list(self._results.values())
        if any(len(r.feature_names) != 1 or r.average is None for r in results):
            raise ValueError("importance() needs the average 1-D PDs of partial_dependence_all"
                             "(kind='average' or 'both').")
        chosen = [Feature(name, (0,), r.feature_kinds[0]) for name, r in self._results.items()]
        averages = [dataclasses.replace(r, individual=None) for r in results]
        return importance_from_pds(chosen, averages, None, np.ones((1, 1)), None, ice=False,
                                   measure=measure, average="mean", trim=0.0, n_bootstrap=0)

    def top(self, k: int, output: int | str | None = None) -> list[str]:
        """The ``k`` features whose PD varies most (standard deviation over the grid,
        ``ddof=1``, as the PD importance ``"sd"``)."""
        from ..results import check_k

        check_k(k)
        j = output_index(self._results[next(iter(self._results))].output_names, output)
        spread = {name: float(np.std(r.average[..., j], ddof=1)) if r.average is not None
                  and r.average.shape[0] > 1 else 0.0 for name, r in self._results.items()}
        return sorted(spread, key=lambda name: -spread[name])[:k]

    def plot(self, output: int | str | None = None, ice: bool = True, max_curves: int = 100,
             ncols: int | None = None, top: int | None = None, sharey: bool = True):
        """One panel per feature (as :meth:`PartialDependence.plot`); returns the Figure.

        ``top`` features are shown, those whose PD varies most (:meth:`top`); default all up
        to 30 features, the 30 strongest past that (the figure's title says so). ``ncols``
        defaults to 3 (5 past 9 panels); ``sharey`` puts every panel on one y scale, so that
        effect sizes compare.
        """
        from ..results import plot_pds

        return plot_pds(self, output=output, ice=ice, max_curves=max_curves, ncols=ncols,
                        top=top, sharey=sharey)


_METHODS = ("brute", "recursion", "auto")


def _deciles(dataset: Dataset, feature: Feature) -> tuple | None:
    """Deciles of a numeric feature's values (the rug of a PD plot); None for levels."""
    if feature.is_categorical:
        return None
    column = feature.columns[0]
    return dataset.memo(("deciles", column), lambda: tuple(
        dataset.column_order(column).quantiles(np.arange(1, 10) / 10).tolist()))


def _recursion_by_default(model) -> bool:
    """scikit-learn's ``method="auto"``: recursion for gradient boosting with the default
    init (``init=None``), histogram gradient boosting, a regression tree (an extra tree too,
    its subclass) and a random forest regressor. Histogram gradient boosting with categorical
    splits (whose recursion is not implemented here) or fitted with sample weights (which
    scikit-learn then refuses) gets the brute PD instead."""
    name = type(model).__name__
    if name in ("GradientBoostingRegressor", "GradientBoostingClassifier"):
        return getattr(model, "init", "") is None
    if name in ("HistGradientBoostingRegressor", "HistGradientBoostingClassifier"):
        return not getattr(model, "_fitted_with_sw", False) and not np.any(
            getattr(model, "is_categorical_", None) is not None and model.is_categorical_)
    return name in ("DecisionTreeRegressor", "ExtraTreeRegressor", "RandomForestRegressor")


def recursion_pd(model, X, features, kind, grid, grid_resolution, percentiles, centered, output,
                 sample_weight, feature_names, categorical=None,
                 default_resolution=100) -> PartialDependence:
    """The recursion PD of a tree model as a PartialDependence; ``default_resolution`` as
    in :func:`planned_pd`."""
    from ..models import read_trees
    from ._tree_stats import tree_partial_dependence

    if kind != "average" or sample_weight is not None:
        raise ValueError(
            "method='recursion' gives the average over the training data stored in the trees: "
            f"it takes kind='average' and no sample_weight; got kind={kind!r}"
            f"{' and sample_weight' if sample_weight is not None else ''}. Use method='brute'."
        )
    # refuses a model without traversable trees before any work, naming method='brute'
    tree_kind, classifier, _, _ = read_trees(model, recursion="model")
    dataset = as_dataset(X, feature_names=feature_names, categorical=categorical,
                         allow_missing=True)
    chosen = dataset.resolve(features)
    resolved = resolve_grid(grid, dataset)
    options = []  # the grids, as the brute path builds them, as values or levels
    for feat in chosen:
        strategy, explicit = grid_option(resolved, feat.name)
        options.append(list(feature_grid(dataset, feat, strategy=strategy, values=explicit,
                                         grid_resolution=grid_resolution,
                                         percentiles=percentiles,
                                         default_resolution=default_resolution)[1]))
    values, average = tree_partial_dependence(  # X itself: its columns are checked there
        model, X, dataset.positions(chosen), options)
    shape = average.shape[:-1]
    average = average.reshape(-1, average.shape[-1])  # (G, o), the product grid flattened
    o = average.shape[1]
    if classifier:
        names = tuple(str(c) for c in model.classes_)
        if tree_kind in ("gb", "hist"):  # raw decision, one per class (binary: the positive)
            names = tuple(f"{c} (decision)" for c in names[-o:])
    else:
        names = ("y",) if o == 1 else tuple(f"y{j}" for j in range(o))
    out_idx = select_outputs(names, output)
    average = np.asarray(average, np.float64)[:, out_idx]
    average = average - average[:1] if centered else average
    return PartialDependence(
        feature_names=tuple(f.name for f in chosen),
        grid_values=tuple(tuple(option) for option in options),  # levels, not codes
        output_names=tuple(names[i] for i in out_idx),
        average=average.reshape(*shape, len(out_idx)), individual=None,
        centered=centered, feature_kinds=tuple(f.kind for f in chosen),
        deciles=tuple(_deciles(dataset, f) for f in chosen))


def _pd_plan(dataset, predictor, feature_sets, grid, grid_resolution, default_resolution,
             pdp_points, percentiles, keep, w):
    """The grids of ``feature_sets`` and the engine plan and reducer of their PDs: their
    means under the row weights ``w`` (n,) or each weighting of ``w`` (r, n)."""
    c = dataset.n_columns
    grid = resolve_grid(grid, dataset)
    grids: dict[str, tuple[np.ndarray, tuple]] = {}
    masks, item_mask, values = [], [], []
    shapes = []
    for s, features in enumerate(feature_sets):
        names = [f.name for f in features]
        if len(set(names)) != len(names):
            raise ValueError(f"a feature set lists a feature twice: {names}.")
        mask = np.zeros(c, bool)
        per_feature = []
        for feat in features:
            if feat.name not in grids:
                strategy, explicit = grid_option(grid, feat.name)
                grids[feat.name] = feature_grid(
                    dataset, feat, strategy=strategy, grid_resolution=grid_resolution,
                    percentiles=percentiles, values=explicit,
                    default_resolution=default_resolution, pdp_points=pdp_points,
                )
                if not feat.is_categorical:
                    check_collapse(feat.name, grids[feat.name][0], predictor.dtype,
                                   "grid points", stacklevel=6)
            mask[list(feat.columns)] = True
            per_feature.append(grids[feat.name][0])
        shape = tuple(len(g) for g in per_feature)
        index = product_grid_index(shape, names)
        block = np.zeros((index.shape[1], c))
        for feat, rows, k in zip(features, per_feature, index):
            block[:, list(feat.columns)] = rows[k]
        values.append(block)
        item_mask.append(np.full(block.shape[0], s))
        masks.append(mask)
        shapes.append(shape)
    values = np.concatenate(values)
    plan = at_values(np.stack(masks), np.concatenate(item_mask), values, np.arange(len(values)))
    return plan, Keep() if keep else Mean(np.atleast_2d(w)), grids, shapes


def planned_pd(
    dataset: Dataset,
    predictor: Predictor,
    feature_sets: Sequence[Sequence[Feature]],
    *,
    kind: str = "average",
    grid="uniform",
    grid_resolution: int | None = None,
    percentiles=(0.05, 0.95),
    centered: bool = False,
    output=None,
    memory_budget=None,
    progress=None,
    devices=None,
    weightings=None,
    default_resolution: int = 100,
    pdp_points: int = 51,
):
    """PDs of several feature sets planned for ONE engine call (internal; inputs already
    validated): ``run()`` evaluates them, each call anew, and returns their results.
    ``grid_resolution=None`` gives each grid strategy its default (``default_resolution``
    points; for ``"pdp"`` pdp's rule, ``min(n_unique, pdp_points)``).

    ``weightings`` (r, n), for ``kind="average"``: the PD under every weighting (e.g.
    bootstrap replicates) is kept in ``info``-free form: the function then returns
    ``(results, per_set)`` with ``per_set[s]`` of shape (g_1, ..., g_k, r, o) and the results'
    averages from the first weighting.
    """
    out_idx = select_outputs(predictor.output_names, output)  # refused before any evaluation
    keep = kind in ("individual", "both")
    w = np.ones(dataset.n_rows) if dataset.weights is None else dataset.weights
    if weightings is not None:
        weightings = np.asarray(weightings, np.float64)
        if weightings.shape[0] == 1 and np.array_equal(weightings[0], w):
            weightings = None  # the data's own weights: the plain PD's plan and reducer
    # bootstrap weightings are kept with the plan, by their contents
    weighted = None if weightings is None else weightings_digest(weightings)
    stage = cached_stage(
        dataset, ("partial dependence", tuple(tuple(f.name for f in fs) for fs in feature_sets),
                  keep, grid, grid_resolution, default_resolution, pdp_points, percentiles,
                  predictor.dtype, weighted),
        lambda: _pd_plan(dataset, predictor, feature_sets, grid, grid_resolution,
                         default_resolution, pdp_points, percentiles, keep,
                         w if weightings is None else weightings),
        uncached=weightings is not None and weighted is None)
    plan, reducer, grids, shapes = stage
    weightings = reducer.weights if not keep else w[None]
    described = [dict(feature_names=tuple(f.name for f in features),
                      grid_values=tuple(grids[f.name][1] for f in features),
                      output_names=tuple(predictor.output_names[i] for i in out_idx),
                      centered=centered, feature_kinds=tuple(f.kind for f in features),
                      deciles=tuple(_deciles(dataset, f) for f in features))
                 for features in feature_sets]

    def run():
        out = evaluate(
            predictor, dataset, plan, reducer,
            memory_budget=memory_budget, progress=progress, devices=devices,
            label="partial dependence",
            result_hint="use kind='average', fewer grid points (grid_resolution) or fewer rows",
            defer=True,
        )
        if not dataset.defers_reads:  # a plain call reads now (bad predictions refused at
            out.get()  # the call); an Explainer's returns before the device finishes
        per_set = []
        if not keep and weightings.shape[0] > 1:
            replicated, start = out.get(), 0
            for shape in shapes:
                size = math.prod(shape)
                per_set.append(replicated[start : start + size][..., out_idx].reshape(
                    *shape, replicated.shape[1], len(out_idx)))
                start += size
        values = out.then(lambda totals: _read_pds(totals, shapes, out_idx, kind, centered,
                                                     w, dataset.n_rows))
        results = [PartialDependence(average=values.then(lambda parts, s=s: parts[s][0]),
                                     individual=values.then(lambda parts, s=s: parts[s][1]),
                                     **description)
                   for s, description in enumerate(described)]
        return results if weightings.shape[0] == 1 or keep else (results, per_set)

    return run


def _read_pds(out, shapes, out_idx, kind, centered, w, n) -> list[tuple]:
    """(average, individual) of each feature set from the engine's output: (items, r, o)
    means (the first weighting is the result's) or (items, n, o) kept predictions."""
    parts, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        if kind == "average":
            block = out[start : start + size, 0][..., out_idx]
            average = block - block[:1] if centered else block
            parts.append((average.reshape(*shape, len(out_idx)), None))
        else:
            ice = np.moveaxis(out[start : start + size][..., out_idx], 1, 0).astype(np.float64)
            if centered:
                ice = ice - ice[:, :1]  # (n, G, o)
            average = (np.tensordot(w / w.sum(), ice, axes=(0, 0)).reshape(*shape, len(out_idx))
                       if kind == "both" else None)
            parts.append((average, ice.reshape(n, *shape, len(out_idx))))
        start += size
    return parts


def _check_kind(kind) -> None:
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}; got {kind!r}.")


@warm_function
@validate_params(centered=Flag(), method=Choice(*_METHODS), derivative=Flag(), by_size=Int(1))
def partial_dependence(
    model,
    X,
    features,
    *,
    kind: Literal["average", "individual", "both"] = "average",
    grid="sklearn",
    grid_resolution: int | None = None,
    percentiles: tuple[float, float] = (0.05, 0.95),
    centered: bool = False,
    output=None,
    sample_weight=None,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
    method: Literal["brute", "recursion", "auto"] = "brute",
    derivative: bool = False,
    by=None,
    by_size: int = 4,
) -> PartialDependence | dict:
    """Partial dependence and ICE curves of a model on one feature or a set of features.

    ``PD_S(z) = mean_i f(z, x_iC)``: the model's mean prediction when the columns of S are set
    to ``z`` in every row; ICE keeps each row's curve.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        Background data.
    features : str, int, or sequence of them
        One feature (1-D PD), or several features (a joint PD over the product grid). A
        one-hot group named in ``groups`` counts as one feature.
    kind : {"average", "individual", "both"}, default "average"
        PD, ICE, or both.
    grid : str or dict, default "sklearn"
        ``"sklearn"`` (the default) is scikit-learn's grid: a feature's distinct values when
        there are fewer than ``grid_resolution``, else ``grid_resolution`` evenly spaced
        points between its ``percentiles`` (``mquantiles``, as scikit-learn). ``"uniform"``:
        the same, with the distinct values also when there are exactly ``grid_resolution``.
        ``"quantile"``: the unique quantiles at evenly spaced probabilities between the
        percentiles. ``"unique"``: every distinct value. ``"pdp"`` reproduces R
        pdp's and vip's grid (``pred_grid``): ``grid_resolution`` evenly spaced points from
        the minimum to the maximum, by default ``min(n_unique, 51)``; ``"pdp_trim"`` the
        same from the smallest to the largest value inside the boxplot fences (pdp's
        ``trim.outliers = TRUE``: Tukey's hinges -+ 1.5 times their distance);
        ``"pdp_quantiles"`` pdp's ``quantiles = TRUE``: R's type-7 quantiles at
        ``probs = 1:9/10``, or ``k / (grid_resolution + 1)`` for ``k = 1..grid_resolution``
        (repeated values merged). The three pdp grids of an integer column are truncated to
        integers, as pdp casts them. ``"hstats"`` is R hstats' ``univariate_grid`` with its
        defaults: ``grid_resolution`` (default 49)
        evenly spaced points between the type-1 quantiles at 1% and 99%, or the distinct
        values when there are at most that many (``percentiles`` is not used; for a pair
        hstats uses ``ceiling(sqrt(grid_size))`` points per feature). A dict maps feature
        names or column indices to explicit 1-D values (other features:
        ``grid["__default__"]`` or ``"sklearn"``); a key that names no feature is an error.
        Categorical and one-hot features always use their levels.
    grid_resolution : int or inf, optional
        Points per grid; default 100 (pdp's ``min(n_unique, 51)`` for ``grid="pdp"`` and
        ``"pdp_trim"``, 9 for ``"pdp_quantiles"``, 49 for ``"hstats"``). ``math.inf``: every
        distinct value (``grid="unique"``, alibi's ``grid_resolution=np.inf``).
    percentiles : (float, float), default (0.05, 0.95)
        The range of the ``"sklearn"``, ``"uniform"`` and ``"quantile"`` grids (the other
        strategies have their own); ``(0, 1)`` for min to max.
    centered : bool, default False
        Subtract from every curve its value at the first grid point (c-ICE).
    output : int, str or list, optional
        Model outputs to keep (default all).
    sample_weight : array of shape (n,), optional
        Case weights for the average.
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
    method : {"brute", "recursion", "auto"}, default "brute"
        ``"brute"``: the model evaluated on the modified rows of ``X``. ``"recursion"``
        (scikit-learn trees, forests, gradient boosting and histogram gradient boosting, one
        feature or several jointly, ``kind="average"``):
        Friedman's weighted traversal of the trees (:func:`jaximp.tree_partial_dependence`),
        averaged over the training data stored in the trees rather than over ``X``; gradient
        boosting classifiers give their raw decision function and gradient boosting leaves out
        its initial estimate (a constant shift of the curve), as scikit-learn. ``"auto"``:
        recursion for gradient boosting with ``init=None``, histogram gradient boosting, a
        regression tree and a random forest regressor, as scikit-learn's ``method="auto"``,
        except histogram gradient boosting with categorical splits (scikit-learn's recursion
        ignores them) or fit-time sample weights (scikit-learn then raises): brute. The
        default differs from
        scikit-learn's ``"auto"`` so that the PD is always over ``X``.
    derivative : bool, default False
        Curves of the model's partial derivative along the feature instead of its value
        (derivative ICE, Goldstein et al. 2015): ``d f / d x_S`` at ``(z, x_iC)`` for every
        row and grid value, by ``jax.jvp`` through a JAX model, and their mean. One numeric
        single-column feature, ``method="brute"``.
    by : str or array of shape (n,), optional
        Partial dependence by group of rows (R hstats' ``BY``, dalex's ``groups``): a column
        of X by name or position, or one value per row (read by position, as ``y``). A
        numeric grouping with more than ``by_size`` distinct values is cut at its type-1
        quantiles into intervals, as hstats does. Every group's curves share the grid of all
        rows; a group's PD averages its own rows' ICE curves (weighted). Then the result is
        a dict of group label (a value, or a :class:`pandas.Interval`) to
        PartialDependence, in the groups' order; rows whose grouping is missing form a last
        group, labelled None, with a warning (hstats' ``NA`` group). ``method="brute"``; one
        engine pass for all groups.
    by_size : int, default 4
        Most groups a numeric ``by`` keeps as values (hstats' ``by_size``).

    Returns
    -------
    PartialDependence, or dict of them (with ``by``)

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).uniform(size=(100, 2))
    >>> pd_x0 = partial_dependence(lambda X: 3 * X[:, 0] + X[:, 1], X, "x0", grid_resolution=5)
    >>> pd_x0.average.shape
    (5, 1)
    >>> bool(np.allclose(np.diff(pd_x0.average[:, 0]) / np.diff(pd_x0.grid_values[0]), 3))
    True
    """
    options = dict(features=features, kind=kind, grid=grid, grid_resolution=grid_resolution,
                   percentiles=percentiles, centered=centered, output=output,
                   sample_weight=sample_weight, feature_names=feature_names,
                   categorical=categorical, groups=groups, variables=variables,
                   memory_budget=memory_budget, progress=progress, method=method,
                   derivative=derivative, by=by, by_size=by_size)
    # a repeated call (an Explainer's, or on the same small array) reuses its set-up
    return warm_call("partial dependence", _set_up, model, X, None, options)()


def _set_up(model, X, y, *, features, kind, grid, grid_resolution, percentiles, centered,
            output, sample_weight, feature_names, categorical, groups, variables,
            memory_budget, progress, method, derivative, by, by_size):
    """Validate and plan a partial dependence; returns ``run()``, which evaluates it."""
    _check_kind(kind)
    validate_grid_options(grid, grid_resolution, percentiles)
    if derivative and method != "brute":
        raise ValueError(f"derivative=True needs method='brute'; got method={method!r}.")
    # an Explainer's data carries its weights
    weights = sample_weight if sample_weight is not None else getattr(X, "weights", None)
    if method == "auto":  # scikit-learn's rule
        method = "recursion" if _recursion_by_default(model) and kind == "average" and \
            weights is None and by is None else "brute"
    if method == "recursion" and by is not None:
        raise ValueError("by= averages the ICE curves of each group's rows, which needs "
                         "method='brute'; the recursion averages over the trees' training "
                         "data, not over rows.")
    if method == "recursion":
        return functools.partial(recursion_pd, model, X, features, kind, grid, grid_resolution,
                                 percentiles, centered, output, weights, feature_names,
                                 categorical)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress, allow_missing=True, reuse=True,
    )
    chosen = dataset.resolve(features)
    if derivative:
        predictor = _derivative_predictor(dataset, predictor, chosen)
    run = _planned_by(dataset, predictor, [chosen], by, by_size, kind=kind, grid=grid,
                      grid_resolution=grid_resolution, percentiles=percentiles,
                      centered=centered, output=output, memory_budget=memory_budget,
                      progress=progress)
    return lambda: run()[0]


def _planned_by(dataset, predictor, feature_sets, by, by_size, *, kind, centered, **options):
    """``run()`` of the PDs of ``feature_sets`` (:func:`planned_pd`), or, with ``by``, of
    each group's: then it returns, per feature set, a dict of group label to
    PartialDependence."""
    if by is None:
        return planned_pd(dataset, predictor, feature_sets, kind=kind, centered=centered,
                          **options)
    w = np.ones(dataset.n_rows) if dataset.weights is None else dataset.weights
    labels, codes = row_groups(by, dataset, by_size, w)
    in_group = codes[None] == np.arange(len(labels))[:, None]  # (G, n)
    run = planned_pd(dataset, predictor, feature_sets, kind=kind, centered=centered,
                     weightings=w[None] * in_group if kind == "average" else None, **options)
    return lambda: _by_group(run(), labels, codes, kind, centered, w)


def _by_group(out, labels: list, codes: np.ndarray, kind: str, centered: bool,
              w: np.ndarray) -> list[dict]:
    """Per feature set of one planned run, each group's PartialDependence: its mean under
    the group's weighting (``kind="average"``), or its rows' ICE curves and their weighted
    mean."""
    if kind == "average":
        results, per_set = out if isinstance(out, tuple) else (out, None)
        if per_set is None:  # one group: the plain PDs
            return [{labels[0]: result} for result in results]
        grouped = []
        for result, replicated in zip(results, per_set):
            curves = np.moveaxis(replicated, -2, 0)  # (G, g_1, ..., o)
            if centered:  # each group's curve less its value at the first grid point
                flat = curves.reshape(len(labels), -1, curves.shape[-1])
                curves = (flat - flat[:, :1]).reshape(curves.shape)
            grouped.append({label: dataclasses.replace(result, average=curves[k])
                            for k, label in enumerate(labels)})
        return grouped
    grouped = []
    for whole in out:
        per_group = {}
        for k, label in enumerate(labels):
            rows = codes == k
            ice = whole.individual[rows]
            average = (np.tensordot(w[rows] / w[rows].sum(), ice, axes=(0, 0))
                       if kind == "both" else None)
            per_group[label] = dataclasses.replace(whole, individual=ice, average=average)
        grouped.append(per_group)
    return grouped


def _derivative_predictor(dataset, predictor, chosen):
    """The model's partial derivative along the one numeric column of ``chosen``, with the
    model's own output names."""
    from ..models import gradient_predictor

    if predictor.host or predictor.piecewise_constant:
        why = ("is a tree model, piecewise constant: its derivative is 0 almost everywhere"
               if predictor.piecewise_constant else
               "runs outside JAX (NumPy, scikit-learn, or torch through DLPack), where jax.grad "
               "cannot reach")
        raise ValueError(f"derivative=True differentiates the model with jax.jvp, but "
                         f"{predictor.name} {why}; use derivative=False.")
    if len(chosen) != 1 or chosen[0].kind != "continuous":
        raise ValueError(
            f"derivative=True needs one numeric feature; got "
            f"{[f'{f.name} ({f.kind})' for f in chosen]}."
        )
    gradient = gradient_predictor(predictor, list(chosen[0].columns), dataset.n_columns)
    return dataclasses.replace(gradient, output_names=predictor.output_names)


@warm_function
@validate_params(centered=Flag(), by_size=Int(1))
def partial_dependence_all(
    model,
    X,
    features=None,
    *,
    kind: Literal["average", "individual", "both"] = "average",
    grid="sklearn",
    grid_resolution: int | None = None,
    percentiles: tuple[float, float] = (0.05, 0.95),
    centered: bool = False,
    output=None,
    sample_weight=None,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
    by=None,
    by_size: int = 4,
) -> PartialDependences | dict:
    """1-D partial dependence of every feature (or the listed ones), in one batched run.

    All grids of all features are evaluated by a single engine call, so the model runs on
    large, evenly sized batches. Parameters as in :func:`partial_dependence`; with ``by``,
    every group's PDs (dalex's ``model_profile(groups=)``) from the same one call.

    Returns
    -------
    PartialDependences, or a dict of group label to them (with ``by``)
        A mapping of feature name to :class:`PartialDependence`, in input order, with
        ``to_frame()``, ``top(k)`` and ``plot()``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(50, 3))
    >>> pds = partial_dependence_all(lambda X: X.sum(axis=1), X, grid_resolution=4)
    >>> list(pds), pds["x2"].average.shape
    (['x0', 'x1', 'x2'], (4, 1))
    """
    options = dict(features=features, kind=kind, grid=grid, grid_resolution=grid_resolution,
                   percentiles=percentiles, centered=centered, output=output,
                   sample_weight=sample_weight, feature_names=feature_names,
                   categorical=categorical, groups=groups, variables=variables,
                   memory_budget=memory_budget, progress=progress, by=by, by_size=by_size)
    return warm_call("partial dependence of every feature", _set_up_all, model, X, None,
                     options)()


def _set_up_all(model, X, y, *, features, kind, grid, grid_resolution, percentiles, centered,
                output, sample_weight, feature_names, categorical, groups, variables,
                memory_budget, progress, by, by_size):
    """Validate and plan the PDs of every feature; returns ``run()``, which evaluates them."""
    _check_kind(kind)
    validate_grid_options(grid, grid_resolution, percentiles)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress, allow_missing=True, reuse=True,
    )
    chosen = dataset.resolve(features)
    run = _planned_by(dataset, predictor, [[f] for f in chosen], by, by_size, kind=kind,
                      grid=grid, grid_resolution=grid_resolution, percentiles=percentiles,
                      centered=centered, output=output, memory_budget=memory_budget,
                      progress=progress)
    names = [f.name for f in chosen]
    if by is None:
        return lambda: PartialDependences(dict(zip(names, run())))

    def by_group():
        per_set = run()  # per feature, a dict of group label to its PD
        return {label: PartialDependences({name: per_group[label]
                                           for name, per_group in zip(names, per_set)})
                for label in per_set[0]}

    return by_group
