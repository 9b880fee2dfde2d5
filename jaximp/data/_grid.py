"""Grids of replacement values for partial dependence."""

from __future__ import annotations

import math
import warnings
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ._data import Dataset, Feature
from ._device import plotting_quantiles
from ._params import Flag, Interval, Real, validate_params

__all__ = ["GRID_STRATEGIES", "PERCENTILES", "mquantiles", "feature_grid", "product_grid_index",
           "grid_option", "r_seq", "resolve_grid", "type1_ranks", "validate_grid_options"]

GRID_STRATEGIES = ("uniform", "quantile", "unique", "sklearn", "pdp", "pdp_trim", "pdp_quantiles",
                   "hstats")

#: the rule of every grid's ``percentiles``
PERCENTILES = Interval(0, 1, fix="E.g. percentiles=(0.05, 0.95).")


@validate_params(alphap=Real(0, 1), betap=Real(0, 1), assume_sorted=Flag())
def mquantiles(x: np.ndarray, prob: Sequence[float], alphap=0.4, betap=0.4, *,
               assume_sorted: bool = False) -> np.ndarray:
    """Sample quantiles with plotting positions ``(k - alphap) / (n + 1 - alphap - betap)``.

    The defaults equal ``scipy.stats.mstats.mquantiles``, which scikit-learn uses for the
    percentiles of its partial-dependence grid.

    Parameters
    ----------
    x : array-like
        The sample (flattened).
    prob : sequence of float
        Probabilities in [0, 1].
    alphap, betap : float, default 0.4
        Plotting-position parameters in [0, 1] (0.4, 0.4: Cunnane's, approximately quantile
        unbiased; 1, 1: the linear interpolation of ``numpy.quantile``).
    assume_sorted : bool, default False
        Whether ``x`` is already sorted ascending (its sort is skipped).

    Returns
    -------
    ndarray of shape (len(prob),)

    Examples
    --------
    >>> mquantiles(np.arange(10.0), [0.05, 0.5, 0.95]).tolist()
    [0.0, 4.5, 9.0]
    """
    data = np.asarray(x, dtype=np.float64)
    if not assume_sorted:
        data = np.sort(data)
    return plotting_quantiles(data.__getitem__, data.size, prob, alphap, betap)


def r_seq(start: float, stop: float, num: int) -> np.ndarray:
    """R's ``seq(start, stop, length.out = num)`` with R's arithmetic (``start + i * by`` in
    between, ``stop`` last), so that type-1 quantiles at these probabilities pick R's order
    statistics: ``1/14 + 8 * (13/14 / 13)`` is a hair below 9/14, ``9 / 14`` a hair above."""
    if num <= 2:
        return np.asarray([start, stop][:num], np.float64)
    by = (stop - start) / (num - 1)
    return np.concatenate([[start], start + np.arange(1, num - 1) * by, [stop]])


def type1_ranks(size: int, probs) -> np.ndarray:
    """0-based positions among ``size`` sorted values of R's ``quantile(type = 1)`` at
    ``probs``: the smallest order statistic whose share reaches each probability. As in R,
    without a fuzz: ``n p`` a hair above an integer (``15 * 0.6000000000000001``, from
    ``seq(0, 1, length.out = 6)``) takes the next one."""
    ranks = np.ceil(size * np.asarray(probs, np.float64)).astype(np.int64) - 1
    return np.clip(ranks, 0, size - 1)


def tukey_fences(col, coef: float = 1.5) -> tuple[float, float]:
    """R's ``boxplot.stats`` fences of a column's present values: Tukey's hinges (R's
    ``fivenum``) ``-+ coef`` times their distance; values outside them are its outliers."""
    n4 = np.floor((col.size + 3) / 2) / 2  # 1-based position of the lower hinge
    positions = np.array([n4, col.size + 1 - n4]) - 1
    values = col.at(np.concatenate([np.floor(positions), np.ceil(positions)]).astype(int))
    lower, upper = 0.5 * (values[:2] + values[2:])
    return lower - coef * (upper - lower), upper + coef * (upper - lower)


_HSTATS_POINTS = 49  # hstats' grid_size
_HSTATS_TRIM = (0.01, 0.99)  # hstats' trim


def feature_grid(
    dataset: Dataset,
    feature: Feature,
    *,
    strategy: str = "uniform",
    grid_resolution: int | None = None,
    percentiles: tuple[float, float] = (0.05, 0.95),
    values=None,
    default_resolution: int = 100,
    pdp_points: int = 51,
) -> tuple[np.ndarray, tuple]:
    """Replacement rows for one feature and their display labels.

    ``grid_resolution=None`` is the strategy's default: ``default_resolution`` points; for
    ``"pdp"`` and ``"pdp_trim"`` R pdp's ``min(n_unique, pdp_points)`` (pdp takes a given
    resolution as it is); for ``"pdp_quantiles"`` pdp's 9 deciles; for ``"hstats"`` 49.

    Returns
    -------
    rows : float64 ndarray of shape (g, len(feature.columns))
        Values written into the feature's columns, one grid point per row. Grids are built in
        float64 whatever the model's dtype; a range that is narrow for its magnitude (e.g.
        timestamps) is accepted, and ``jaximp.engine._precision.check_collapse`` warns when the
        model's dtype cannot tell the points apart.
    labels : tuple, length g
        The grid point as shown to the user (the value, or the level of a categorical).
    """
    if feature.kind == "onehot":
        k = len(feature.columns)
        if values is not None:
            raise ValueError(
                f"feature {feature.name!r} is a one-hot group; its grid is its levels "
                f"{list(feature.levels)} and cannot be set by values."
            )
        return np.eye(k), tuple(feature.levels)
    if len(feature.columns) > 1:
        raise ValueError(
            f"feature {feature.name!r} is a group of {len(feature.columns)} columns that is "
            "not one-hot; partial dependence needs a one-hot block or single columns."
        )
    if values is not None and feature.kind == "categorical":
        return _level_grid(dataset, feature, values)
    if values is not None:
        try:
            grid = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"grid values for the numeric feature {feature.name!r} must be numbers; got "
                f"{values!r:.80}. Levels as grid values are for categorical features "
                "(categorical=[...], or a text or category column).") from None
        if grid.ndim != 1:
            raise ValueError(
                f"grid values for feature {feature.name!r} must be a 1-D list of numbers; got "
                f"shape {grid.shape}. Give each feature its own entry in the grid dict."
            )
        if grid.size < 1 or not np.all(np.isfinite(grid)):
            raise ValueError(
                f"grid values for feature {feature.name!r} must be a non-empty list of finite "
                f"numbers; got {values!r}."
            )
        return grid[:, None], tuple(grid.tolist())
    # the column's order, read for what the grid needs (for rows on a device: sorted there,
    # and only the grid's values come back)
    col = dataset.column_order(feature.columns[0])
    if col.n_distinct < 2:
        raise ValueError(
            f"feature {feature.name!r} has a single distinct value ({col.at([0])[0]:g}); its "
            "partial dependence is undefined. Leave it out of the features explained "
            "(features=[...]) or pass grid values explicitly."
        )
    if feature.kind == "categorical":
        uniques = col.distinct()
        labels = feature.levels if feature.levels is not None else tuple(uniques.tolist())
        if len(labels) == uniques.size:
            return uniques[:, None], tuple(labels)
        # pandas categories: codes index into the declared levels, some may be unobserved
        present = uniques.astype(int)
        return uniques[:, None], tuple(labels[i] for i in present)
    if strategy not in GRID_STRATEGIES:
        raise ValueError(f"grid must be one of {GRID_STRATEGIES} or explicit values; got {strategy!r}.")
    if grid_resolution == math.inf:  # as many points as values: every distinct one (alibi's)
        strategy = "unique"
    if strategy in ("pdp", "pdp_trim"):  # R pdp / vip: seq(min, max, length =
        # grid.resolution), whose default (NULL) is min(n_unique, 51); with trim.outliers =
        # TRUE the min and max of the values inside the boxplot fences
        low, high = col.at([0, col.size - 1]) if strategy == "pdp" else col.span(
            *tukey_fences(col))
        if low == high:  # all but a few values equal (zero-inflated): pdp's grid repeats it
            warnings.warn(
                f"feature {feature.name!r} has a single value ({low:g}) inside its boxplot "
                "fences: grid='pdp_trim' repeats it, as pdp's trim.outliers does, so its PD "
                "is flat; grid='pdp' spans all its values.", UserWarning, stacklevel=2)
        count = min(col.n_distinct, pdp_points) if grid_resolution is None else grid_resolution
        return _pdp_cast(dataset, feature, np.linspace(low, high, count))
    if strategy == "pdp_quantiles":  # pdp's quantiles = TRUE: R's type-7 quantiles (NumPy's
        # linear ones) at probs = 1:9/10, or k / (grid_resolution + 1); repeats merged
        count = 9 if grid_resolution is None else grid_resolution
        rows, _ = _pdp_cast(dataset, feature, col.quantiles(
            np.arange(1, count + 1) / (count + 1), 1.0, 1.0))
        return _pdp_cast(dataset, feature, np.unique(rows[:, 0]))  # integers stay integers
    if strategy == "hstats":  # R hstats' univariate_grid (strategy "uniform", its default trim)
        count = _HSTATS_POINTS if grid_resolution is None else grid_resolution
        if col.n_distinct <= count:
            grid = col.distinct()
        else:  # evenly spaced between the type-1 quantiles at 1% and 99%
            low, high = col.at(type1_ranks(col.size, _HSTATS_TRIM))
            grid = np.linspace(low, high, count)
        return grid[:, None], tuple(grid.tolist())
    if grid_resolution is None:
        grid_resolution = default_resolution
    use_unique = (
        strategy == "unique"
        or (strategy == "sklearn" and col.n_distinct < grid_resolution)
        or (strategy in ("uniform", "quantile") and col.n_distinct <= grid_resolution)
    )
    if use_unique:
        grid = col.distinct()
    elif strategy == "quantile":
        grid = np.unique(col.quantiles(np.linspace(*percentiles, grid_resolution)))
    else:
        low, high = col.quantiles(percentiles)
        # exact equality only: a narrow range at a large magnitude (a 900-wide range of
        # timestamps at 1.6e9) is a valid float64 grid; whether the model's dtype resolves it
        # is for jaximp.engine._precision.check_collapse to say.
        if low == high:
            raise ValueError(
                f"the percentiles {percentiles} of feature {feature.name!r} are equal "
                f"({low:g}); widen percentiles, e.g. percentiles=(0, 1)."
            )
        grid = np.linspace(low, high, grid_resolution)
    return grid[:, None], tuple(grid.tolist())


def _pdp_cast(dataset: Dataset, feature: Feature, grid: np.ndarray) -> tuple[np.ndarray, tuple]:
    """pdp's grid of a column of integers (R's integer type): its points truncated to
    integers, repeats kept, as pdp's ``copy_classes`` casts them; other columns as they are."""
    source = dataset.source
    dtype = (source.dtypes.iloc[feature.columns[0]] if isinstance(source, pd.DataFrame)
             else getattr(source, "dtype", None))
    if dtype is None or not pd.api.types.is_integer_dtype(dtype):
        return grid[:, None], tuple(grid.tolist())
    grid = np.trunc(grid)
    return grid[:, None], tuple(int(v) for v in grid)


def _level_codes(dataset: Dataset, feature: Feature) -> np.ndarray:
    """The value in X of each of a categorical feature's levels: the position of the level for
    a DataFrame's category or text column, or for text in an array (X holds their codes),
    the level itself for an integer-coded column."""
    if isinstance(dataset.source, pd.DataFrame):
        dtype = dataset.source.dtypes.iloc[feature.columns[0]]
        if isinstance(dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(dtype):
            return np.arange(len(feature.levels), dtype=np.float64)
    if any(isinstance(level, str) for level in feature.levels):
        return np.arange(len(feature.levels), dtype=np.float64)
    return np.asarray(feature.levels, dtype=np.float64)


def _level_grid(dataset: Dataset, feature: Feature, values) -> tuple[np.ndarray, tuple]:
    """Explicit grid values of a categorical feature: its levels (as scikit-learn's
    ``custom_values``), or their codes in X; anything else is refused."""
    levels = list(feature.levels)
    codes = _level_codes(dataset, feature)
    listed = list(values) if isinstance(values, (list, tuple, np.ndarray, pd.Series)) \
        else [values]
    if not listed:
        raise ValueError(f"grid values for feature {feature.name!r} must list at least one of "
                         f"its levels {levels}; got {values!r}.")
    rows, labels = [], []
    for value in listed:
        index = next((i for i, level in enumerate(levels) if _same_level(level, value)), None)
        if index is None and not isinstance(value, str) and np.isscalar(value):
            index = next((i for i, code in enumerate(codes) if code == value), None)  # a code
        if index is None:
            raise ValueError(
                f"grid value {value!r} is not a level of the categorical feature "
                f"{feature.name!r}; its levels are {levels}.")
        rows.append(codes[index])
        labels.append(levels[index])
    return np.asarray(rows, np.float64)[:, None], tuple(labels)


def _same_level(level, value) -> bool:
    try:
        return bool(level == value)
    except (TypeError, ValueError):
        return False


def validate_grid_options(strategy, grid_resolution, percentiles) -> None:
    """Edge checks shared by every grid-based method."""
    if grid_resolution is not None and grid_resolution != math.inf and (
        isinstance(grid_resolution, bool) or not isinstance(grid_resolution, (int, np.integer))
        or grid_resolution < 2
    ):
        raise ValueError(
            f"grid_resolution must be an int >= 2, inf (every distinct value) or None (the "
            f"grid's default); got {grid_resolution!r}.")
    if grid_resolution is not None and math.inf > grid_resolution > _MAX_JOINT_GRID:
        raise ValueError(  # refused before a grid of that size is built
            f"grid_resolution={grid_resolution:,} points per feature is more than a partial "
            f"dependence can use ({_MAX_JOINT_GRID:,} at most; each point costs a model call "
            "per row); use inf for every distinct value, or a smaller number.")
    if not isinstance(strategy, (str, dict)):
        raise TypeError(
            f"grid must be a strategy name {GRID_STRATEGIES} or a dict of feature -> values; got "
            f"{type(strategy).__name__}."
        )
    if isinstance(strategy, str) and strategy not in GRID_STRATEGIES:
        raise ValueError(f"grid must be one of {GRID_STRATEGIES} or explicit values; got {strategy!r}.")
    PERCENTILES.check("percentiles", percentiles)


def grid_option(grid, name: str, default: str = "sklearn"):
    """The strategy and explicit values for one feature from the user's ``grid`` argument;
    a dict that does not name the feature gives its ``"__default__"`` or ``default``."""
    if isinstance(grid, Mapping):
        if name in grid:
            return "uniform", grid[name]
        return grid.get("__default__", default), None
    return grid, None


def resolve_grid(grid, dataset: Dataset):
    """``grid`` with a dict's keys (feature names or column indices, and ``"__default__"``)
    checked and turned into feature names; strategy names pass through."""
    if not isinstance(grid, Mapping):
        return grid
    resolved = {}
    for key, values in grid.items():
        if key == "__default__":
            if values not in GRID_STRATEGIES:
                raise ValueError(
                    f"grid['__default__'] must be one of {GRID_STRATEGIES}; got {values!r}."
                )
            resolved[key] = values
            continue
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (str, int, np.integer)):
            raise TypeError(
                f"grid keys must be feature names or column indices; got {key!r}."
            )
        try:
            name = dataset.feature(key).name
        except ValueError as err:
            raise ValueError(f"grid key {key!r} names no feature: {err}") from None
        if name in resolved:
            raise ValueError(f"grid gives feature {name!r} twice (as {key!r} and by name).")
        resolved[name] = values
    return resolved


# a joint grid this large is a mistaken feature list (one PD per feature), not a request
_MAX_JOINT_GRID = 10_000_000


def product_grid_index(shape: tuple[int, ...], names) -> np.ndarray:
    """Grid indices (len(shape), prod(shape)) of the product of per-feature grids of the given
    sizes, the last feature varying fastest (as scikit-learn); refused, with the fix, when the
    product is too large to be meant."""
    if math.prod(shape) > _MAX_JOINT_GRID:
        raise ValueError(
            f"the joint grid of features {list(names)} has {' x '.join(map(str, shape))} = "
            f"{math.prod(shape):.3g} points (a list of features asks for their joint PD over "
            "the product of their grids, as scikit-learn's features=[(0, 1)]); for one PD per "
            "feature use partial_dependence_all or one call per feature, and for a joint PD "
            "pass two or three features or a smaller grid_resolution."
        )
    return np.indices(shape).reshape(len(shape), -1)
