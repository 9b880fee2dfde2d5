"""Groups of rows for results by group (R hstats' ``BY``, dalex's ``groups``).

:func:`row_groups` reads a grouping (a column of X by name, or one value per row) into group
labels and a group code per row; a numeric grouping with more than ``by_size`` distinct values
is binned at its type-1 quantiles, as hstats bins it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..data import Dataset, r_seq, type1_ranks, user_stacklevel, warn_misaligned

__all__ = ["row_groups"]


def row_groups(by, dataset: Dataset, by_size: int = 4,
               weights: np.ndarray | None = None) -> tuple[list, np.ndarray]:
    """Labels of the groups (in order) and each row's group code (n,) in ``0..G-1``; with
    ``weights``, a group whose rows weigh 0 in all is refused, naming it.

    ``by`` is a column of X by name (a DataFrame's column, or a feature of one column) or
    position, or ``n`` values. A numeric grouping (not boolean) with more than ``by_size``
    distinct values is cut at the unique type-1 quantiles at ``0, 1/by_size, ..., 1`` into
    right-closed intervals, the first closed on both sides (hstats' ``qcut``: R's
    ``cut(x, unique(quantile(x, type = 1)), include.lowest = TRUE)``), labelled by
    :class:`pandas.Interval`; any other grouping's groups are its values, sorted (a pandas
    categorical's in the order of its categories). ``by_size`` is checked by the callers'
    parameter tables. Rows whose grouping is missing (None or NaN) form a group of their own,
    labelled None and last, with a warning (hstats' ``NA`` group).
    """
    series = _values(by, dataset)
    missing = series.isna().to_numpy()
    if missing.all():
        raise ValueError(f"by is missing (None or NaN) in all {missing.size} rows; give the "
                         "rows groups.")
    labels, codes = _groups(series[~missing], by_size)
    if missing.any():
        warnings.warn(f"by has {int(missing.sum())} missing values (None or NaN); those rows "
                      "form a group of their own, labelled None, as hstats' NA group.",
                      UserWarning, stacklevel=user_stacklevel())
        codes = np.insert(codes, np.flatnonzero(missing) - np.arange(missing.sum()),
                          len(labels))
        labels = [*labels, None]
    if weights is not None:
        empty = np.flatnonzero(np.bincount(codes, weights, minlength=len(labels)) <= 0)
        if empty.size:
            raise ValueError(
                f"group {labels[empty[0]]!r} of by has no weight (its rows' sample_weight "
                "sums to 0), so nothing is averaged there; drop those rows or choose other "
                "groups.")
    return labels, codes


def _groups(series: pd.Series, by_size: int) -> tuple[list, np.ndarray]:
    numeric = series.dtype.kind in "iuf"
    if numeric and series.nunique() > by_size:
        x = series.to_numpy(np.float64)
        probs = r_seq(0.0, 1.0, by_size + 1)  # hstats' seq(0, 1, length.out = m + 1)
        breaks = np.unique(np.sort(x)[type1_ranks(x.size, probs)])
        codes = np.clip(np.searchsorted(breaks, x, side="left") - 1, 0, breaks.size - 2)
        labels = [pd.Interval(float(a), float(b), closed="both" if k == 0 else "right")
                  for k, (a, b) in enumerate(zip(breaks[:-1], breaks[1:]))]
        return labels, codes.astype(np.int64)
    if isinstance(series.dtype, pd.CategoricalDtype):
        present = set(series.unique())
        labels = [level for level in series.cat.categories if level in present]
    else:
        labels = list(series.unique())
        try:
            labels = sorted(labels)
        except TypeError:  # mixed kinds of labels: their order of appearance
            pass
    labels = [label.item() if isinstance(label, np.generic) else label for label in labels]
    lookup = {label: k for k, label in enumerate(labels)}
    return labels, np.asarray([lookup[value] for value in series.tolist()], np.int64)


def _values(by, dataset: Dataset) -> pd.Series:
    """The grouping's values as a Series (n,), read by position; a pandas categorical keeps
    its categories."""
    n = dataset.n_rows
    if isinstance(by, str):
        source = dataset.source
        if isinstance(source, pd.DataFrame) and by in source.columns:
            return source[by].reset_index(drop=True)
        names = [f.name for f in dataset.features]
        if by in names and len(dataset.features[names.index(by)].columns) == 1:
            return pd.Series(np.asarray(dataset.X[:, dataset.features[names.index(
                by)].columns[0]]))
        raise ValueError(
            f"by={by!r} names no column of X; give one of {list(dataset.column_names)[:10]} "
            f"or {n} values, one per row.")
    if isinstance(by, (int, np.integer)) and not isinstance(by, bool):
        c = dataset.n_columns
        if not -c <= by < c:
            raise ValueError(f"by={by} is no column position of X (0 .. {c - 1}, or -{c} .. -1 "
                             "from the end).")
        by = int(by) % c
        source = dataset.source
        if isinstance(source, pd.DataFrame):
            return source.iloc[:, by].reset_index(drop=True)
        return pd.Series(np.asarray(dataset.X[:, by]))
    if isinstance(by, (pd.Series, pd.Index, pd.Categorical)):
        warn_misaligned(by, dataset.source, "by")
        values = pd.Series(by).reset_index(drop=True)
    else:
        values = np.asarray(by)
        values = pd.Series(values) if values.ndim == 1 else values
    if not isinstance(values, pd.Series) or len(values) != n:
        raise ValueError(
            f"by must name a column of X or hold one value per row ({n}); got shape "
            f"{np.shape(by)}.")
    return values
