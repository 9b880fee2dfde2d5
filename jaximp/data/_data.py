"""Input data: NumPy or pandas in, a float matrix plus feature metadata out."""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import threading
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._checks import pandas_numbers, warn_misaligned
from ._device import (ColumnOrder, HostColumnOrder, bad_values, device_column_order,
                      integer_levels, is_onehot)
from ._params import Flag, validate_params

__all__ = ["HOST_COPY", "Feature", "Dataset", "Recent", "as_dataset", "as_pandas", "is_text",
           "is_text_array", "text_as_category"]

_ONLY_MISSING = ("column {!r} holds only missing values (NaN); it has no grid. Drop it or "
                 "fill it.")


@dataclasses.dataclass(frozen=True)
class Feature:
    """One feature as the methods see it: a set of columns replaced together.

    Attributes
    ----------
    name : str
        Feature (or group) name.
    columns : tuple of int
        Column indices in the float matrix.
    kind : {"continuous", "categorical", "onehot"}
        ``categorical`` is an integer-coded column (pandas categories become their codes);
        ``onehot`` is a block of indicator columns of which exactly one is set per level.
    levels : tuple or None
        Category labels of a categorical or one-hot feature (one-hot: the column names).
    """

    name: str
    columns: tuple[int, ...]
    kind: str = "continuous"
    levels: tuple | None = None

    @property
    def is_categorical(self) -> bool:
        return self.kind in ("categorical", "onehot")


class _HostRows:
    """``Dataset.X``: the rows given on the host, or the host copy of rows given on a device,
    made on the first read and kept (a grid, a check or a model call on the device reads
    none of it)."""

    def __get__(self, dataset, owner=None):
        if dataset is None:
            raise AttributeError("X")  # no default: X is a required field
        given = dataset.__dict__["_X"]
        if given is not None or dataset.device_X is None:
            return given
        # an implicit transfer, so that a device-to-host transfer guard reports it
        return dataset.memo(HOST_COPY, lambda: _read_only(np.asarray(dataset.device_X,
                                                                     dtype=np.float64)))

    def __set__(self, dataset, value):  # the dataclass's __init__ only: Dataset is frozen
        dataset.__dict__["_X"] = value


_ABSENT = object()


class Recent:
    """Values made by key, the ``keep`` most recently used kept; threads may share it: a
    look-up and its reorder, and an insertion and its evictions, go together (making a value
    runs outside the lock: it may evaluate a model).

    Examples
    --------
    >>> kept = Recent()
    >>> [kept.get(key, lambda: key * 10, keep=2) for key in (1, 2, 1, 3)]
    [10, 20, 10, 30]
    >>> list(kept)  # 2 was the least recently used
    [1, 3]
    """

    _lock = threading.Lock()  # one for all: look-ups are short

    def __init__(self):
        self._values: collections.OrderedDict = collections.OrderedDict()

    def get(self, key, make, *, keep: int):
        """The value of ``key``, made by ``make()`` when it is not kept."""
        with self._lock:
            value = self._values.get(key, _ABSENT)
            if value is not _ABSENT:
                self._values.move_to_end(key)
                return value
        value = make()
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > keep:
                self._values.popitem(last=False)
        return value

    def __iter__(self):
        return iter(list(self._values))

    def __len__(self) -> int:
        return len(self._values)


#: the memo key of a device dataset's host copy of its rows
HOST_COPY = "host copy"


def _read_only(values: np.ndarray) -> np.ndarray:
    values = values.view()
    values.flags.writeable = False
    return values


@jax.jit
def _gather_rows(array, rows):
    return array[rows]


def _rows_on_device(array: jax.Array, rows: np.ndarray) -> jax.Array:
    """``array[rows]`` taken where the array is, the indices sent there explicitly (to its
    one device; an array over several devices gets them with the call)."""
    devices = array.devices()
    index = jax.device_put(rows, next(iter(devices))) if len(devices) == 1 else rows
    return _gather_rows(array, index)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """Validated data: ``X`` float matrix (n, c), feature metadata, optional weights, and the
    user's own data (``source``: a DataFrame or array) from which host models get their rows.

    Rows given as a ``jax.Array`` on one device stay there (``device_X``, and ``X=None``):
    ``X`` is then their float64 host copy, made when first read."""

    X: np.ndarray = _HostRows()
    column_names: tuple[str, ...]
    features: tuple[Feature, ...]
    weights: np.ndarray | None = None
    source: object = None
    # the shape of one example when X had more than two axes (images, sequences): X holds each
    # example flattened to one row, and the model gets rows of this shape back
    input_shape: tuple[int, ...] | None = None
    # the rows as the user gave them on a device (a jax.Array on one device), flattened like
    # X: the engine, the checks and the grids use them in place
    device_X: object = None
    # per column, the labels whose positions code a text column of ``source`` where they are
    # not its own sorted values (rows coded with another dataset's labels), else None
    text_levels: tuple | None = None
    # what is computed from the data once and asked again (sorted columns, grids, the
    # device copy, the host copy of device rows): kept for the dataset's lifetime
    _memo: dict = dataclasses.field(default_factory=dict, init=False, repr=False)

    def __repr__(self) -> str:
        where = "host" if self.on_host else "device"
        return (f"Dataset({self.n_rows} rows x {self.n_columns} columns on the {where}, "
                f"features={list(self.feature_names)})")

    def memo(self, key, make):
        """``make()``, computed once per dataset and ``key`` (a Dataset is immutable)."""
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = make()
            return value

    def recent(self, kind: str, key, make, keep: int):
        """``make()`` kept per ``key`` among the ``keep`` most recently used of ``kind``."""
        # threads share a dataset that plain functions reuse (Recent is safe for them)
        return self.memo(kind, Recent).get(key, make, keep=keep)

    def pin(self, *, defer_reads: bool = True) -> "Dataset":
        """Keep what the engine puts on the devices for this dataset (its rows), for the
        dataset's lifetime: an Explainer's calls then send the data once. ``defer_reads``:
        calls may return before the devices finish (an Explainer's); False for data a plain
        function reuses, whose calls read, and refuse bad predictions, at once."""
        self._memo["pinned"] = True
        if defer_reads:
            self._memo["defers reads"] = True
        return self

    @property
    def pinned(self) -> bool:
        return "pinned" in self._memo

    @property
    def defers_reads(self) -> bool:
        return "defers reads" in self._memo

    @property
    def on_host(self) -> bool:
        """Whether the rows are on the host (given there, or their host copy made)."""
        return self.__dict__["_X"] is not None or HOST_COPY in self._memo

    @property
    def resident_X(self):
        """The rows where they are kept: ``X`` on the host, or the device rows (a
        ``jax.Array``) while their host copy is not made; for reads that work on either."""
        return self.X if self.on_host or self.device_X is None else self.device_X

    def sorted_column(self, j: int) -> np.ndarray:
        """The values of column ``j`` of ``X`` in ascending order, missing values (NaN) left
        out (computed once per dataset)."""
        def make():
            column = self.X[:, j]
            present = column[~np.isnan(column)]
            if present.size == 0:
                raise ValueError(_ONLY_MISSING.format(self.column_names[j]))
            return np.sort(present)

        return self.memo(("sorted", j), make)

    def column_order(self, j: int) -> ColumnOrder:
        """Column ``j``'s present values in order, read as a grid needs them: sorted on the
        device for rows kept there (only the values asked for come back), else from
        :meth:`sorted_column`."""
        def make():
            if self.on_host or self.device_X is None:
                return HostColumnOrder(self.sorted_column(j))
            order = device_column_order(self.device_X[:, j])
            if order.size == 0:
                raise ValueError(_ONLY_MISSING.format(self.column_names[j]))
            return order

        return self.memo(("order", j), make)

    @property
    def has_missing(self) -> bool:
        """Whether X holds a NaN (one reduction where the rows are)."""
        def make():
            if self.on_host or self.device_X is None:
                return not np.isfinite(self.X.sum())  # X holds no infinite value
            if not jnp.issubdtype(self.device_X.dtype, jnp.inexact):
                return False
            return bool(jax.device_get(jnp.isnan(self.device_X).any()))

        return self.memo("has missing", make)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_memo": {}}  # device copies stay behind

    def take(self, rows) -> "Dataset":
        """The dataset restricted to ``rows`` (indices), in order."""
        rows = np.asarray(rows)
        source = self.source
        if isinstance(source, pd.DataFrame):
            source = source.iloc[rows].reset_index(drop=True)
        elif isinstance(source, jax.Array):
            source = _rows_on_device(source, rows)
        elif source is not None:
            source = np.asarray(source)[rows]
        weights = None if self.weights is None else self.weights[rows]
        if not self.on_host:  # rows kept on the device are taken there
            return dataclasses.replace(self, X=None, weights=weights, source=source,
                                       device_X=_rows_on_device(self.device_X, rows))
        return dataclasses.replace(self, X=self.X[rows], weights=weights, source=source,
                                   device_X=None)

    @property
    def n_rows(self) -> int:
        rows = self.__dict__["_X"]
        return (self.device_X if rows is None else rows).shape[0]

    @property
    def n_columns(self) -> int:
        rows = self.__dict__["_X"]
        return (self.device_X if rows is None else rows).shape[1]

    def positions(self, features) -> list[int]:
        """The positions of ``features`` (Feature objects of this dataset) among its
        features; names are unique."""
        position = {f.name: i for i, f in enumerate(self.features)}
        return [position[f.name] for f in features]

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.features)

    def feature(self, key: str | int) -> Feature:
        """Look a feature up by name or position, with a clear error if it does not exist."""
        if isinstance(key, bool) or not isinstance(key, (str, int, np.integer)):
            raise TypeError(f"a feature is named by its name (str) or position (int); got "
                            f"{type(key).__name__} {key!r:.60}. Pass one feature.")
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            p = len(self.features)
            if not -p <= key < p:
                raise ValueError(
                    f"feature index {key} is out of range; the data has {p} features "
                    f"(0 .. {p - 1}, or -{p} .. -1 from the end)."
                )
            return self.features[int(key)]  # a negative position counts from the end
        for feat in self.features:
            if feat.name == key:
                return feat
        raise ValueError(
            f"unknown feature {key!r}; known features are {_some_names(self.feature_names)}."
        )

    def resolve(self, features) -> list[Feature]:
        """Turn ``None`` (all), one name/index, or a list of them into Feature objects."""
        if features is None:
            return list(self.features)
        if isinstance(features, (str, int, np.integer)):
            features = [features]
        if isinstance(features, (set, frozenset, Mapping)):
            raise TypeError(
                f"features must be a name, an index, a list of them or a boolean mask; got a "
                f"{type(features).__name__}, whose order is not defined. Pass a list."
            )
        if not isinstance(features, (np.ndarray, list, tuple)) and not hasattr(
                features, "__iter__"):
            raise TypeError(
                f"features must be a name, an index, a list of them or a boolean mask; got "
                f"{type(features).__name__} {features!r:.60}.")
        features = features if isinstance(features, np.ndarray) else list(features)
        nested = [f for f in features if isinstance(f, (list, tuple, set, np.ndarray))]
        if nested:
            raise TypeError(
                f"features must list single features (names or positions) or be a boolean "
                f"mask; got {nested[0]!r:.60} inside the list. Sets of features are pairs= "
                "(or triples=) of the interaction methods, or one list of features for a "
                "joint partial dependence."
            )
        is_mask = isinstance(features, np.ndarray) or all(
            isinstance(f, (bool, np.bool_)) for f in features)
        mask = np.asarray(features) if is_mask else np.empty(0)
        if is_mask and mask.dtype == bool:  # a boolean mask over the features, as scikit-learn's
            if mask.shape != (len(self.features),):
                raise ValueError(
                    f"a boolean features mask must have one entry per feature "
                    f"({len(self.features)}); got shape {mask.shape}."
                )
            features = [f.name for f, keep in zip(self.features, mask) if keep]
        resolved = [self.feature(f) for f in features]
        if not resolved:
            raise ValueError("features must name at least one feature; got an empty list.")
        names = [f.name for f in resolved]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(
                f"features lists {repeated} more than once; name each feature once."
            )
        return resolved


def as_pandas(X):
    """A polars DataFrame (anything from polars with ``to_pandas``) as a pandas one, its names
    and dtypes kept; anything else as it is."""
    if type(X).__module__.partition(".")[0] != "polars" or not hasattr(X, "to_pandas"):
        return X
    try:
        return X.to_pandas()
    except ImportError as error:
        raise ImportError(f"a polars DataFrame is read through pandas, which needs pyarrow "
                          f"({error}); pip install pyarrow, or pass X.to_pandas().") from error


def is_text_array(values) -> bool:
    """Whether ``values`` is a 2-D NumPy array that may hold text (object or str dtype)."""
    return isinstance(values, np.ndarray) and values.ndim == 2 and values.dtype.kind in "OU"


def is_text(column: pd.Series) -> bool:
    """Whether a DataFrame column holds text labels (a string dtype, objects that are all
    strings, or pyarrow's dictionary-encoded labels), which become a categorical feature."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return False
    if _is_dictionary(column):
        return True  # pandas' category in arrow
    if pd.api.types.is_string_dtype(column.dtype) and column.dtype != object:
        return True
    return column.dtype == object and pd.api.types.infer_dtype(column, skipna=True) == "string"


def text_as_category(column: pd.Series) -> pd.Series:
    """A column of text labels (:func:`is_text`) as a ``category`` column of its sorted
    distinct labels: the categorical feature it is read as."""
    if _is_dictionary(column):  # its own order is its values' first appearance
        column = column.astype(object)
    return column.astype("category")


def _is_dictionary(column: pd.Series) -> bool:
    """Whether a column has pyarrow's dictionary-encoded type."""
    return type(getattr(column.dtype, "pyarrow_dtype", None)).__name__ == "DictionaryType"


def _some_names(names, shown: int = 20) -> str:
    """A list of names for a message: all of a few, else the first and last ones and how many
    there are (an image has hundreds of positions)."""
    names = list(names)
    if len(names) <= shown:
        return str(names)
    head, tail = names[: shown - 2], names[-2:]
    return f"{str(head)[:-1]}, ..., {str(tail)[1:]} ({len(names)} in all)"


@functools.lru_cache(maxsize=64)  # immutable, and asked again for every call on the same data
def _continuous_features(names: tuple[str, ...]) -> tuple[Feature, ...]:
    return tuple(Feature(name, (i,)) for i, name in enumerate(names))


def _as_numbers(values: np.ndarray) -> np.ndarray | None:
    """An object array whose items are all real numbers (or None / NaN for missing) as
    float64, as scikit-learn takes it; None if any item is something else (text, ...)."""
    flat = values.ravel()
    if not all(v is None or (isinstance(v, (int, float, np.number)) and not isinstance(
            v, (complex, np.complexfloating))) for v in flat):
        return None
    return np.array([np.nan if v is None else v for v in flat], np.float64).reshape(
        values.shape)


_TIME_MESSAGE = (
    "{} holds dates or durations ({}), whose numbers depend on their unit; convert them to "
    "the numbers the model reads, e.g. days: (x - x.min()) / np.timedelta64(1, 'D').")


@validate_params(allow_missing=Flag())
def as_dataset(
    X,
    *,
    feature_names: Sequence[str] | None = None,
    categorical: Sequence[str | int] | None = None,
    groups: Mapping[str, Sequence[str | int]] | None = None,
    sample_weight=None,
    allow_missing: bool = False,
) -> Dataset:
    """Validate ``X`` and describe its features.

    Parameters
    ----------
    X : array-like of shape (n, c) or (n, ...), or pandas.DataFrame
        Numeric data. An array with more than two axes (images (n, h, w, c), sequences
        (n, t, c)) holds one example per row: each position is a column named ``x[i,j,...]``,
        the model receives examples of the original shape, and :func:`jaximp.input_groups`
        makes features of channels, time steps, patches or a mask. DataFrame columns of dtype ``category`` and text columns (a string
        dtype, or objects that are all strings; levels: the sorted distinct strings) become
        integer codes and are treated as categorical features; ``bool`` columns become 0/1.
        A 2-D NumPy array of dtype ``object`` or ``str`` is read column by column the same
        way (each column all numbers or all text). A host model still receives the text
        itself, in the user's type (a DataFrame, or an object array).
    feature_names : sequence of str, optional
        Column names for an array input (default ``x0, x1, ...``).
    categorical : str or int, a sequence of them, or a boolean mask, optional
        Integer-coded columns to treat as categorical (grid = their distinct values); a
        boolean mask has one entry per column, as scikit-learn's ``categorical_features``.
    groups : mapping of str to sequence of str or int, optional
        Columns replaced together as one feature, e.g. one-hot blocks
        ``{"color": ["color_red", "color_blue"]}``. A group whose columns are all 0/1 with one
        1 per row is a one-hot feature whose levels are its columns (in a table; the
        groups of an X with more than two axes are positions, never levels).
    sample_weight : array-like of shape (n,), optional
        Non-negative case weights; every average becomes a weighted average.
    allow_missing : bool, default False
        Accept NaN in numeric columns as missing values, for a model that handles them (a
        scikit-learn ``HistGradientBoosting*`` model, or a ``Pipeline`` with an imputer).
        Infinite values are refused either way.

    Returns
    -------
    Dataset
    """
    if isinstance(X, Dataset):
        described = (feature_names, categorical, groups, sample_weight)
        if any(option is not None for option in described):
            raise ValueError(
                "X is already a Dataset: its feature names, categorical columns, groups and "
                "sample weights are set; pass them to as_dataset, not again to the method."
            )
        return X
    if groups is not None and not isinstance(groups, Mapping):
        raise TypeError(
            "groups must be a mapping of group name to its columns, e.g. "
            f"{{'color': ['color_red', 'color_blue']}}; got {type(groups).__name__} "
            f"{groups!r:.60}."
        )
    levels_of: dict[int, tuple] = {}
    input_shape = on_device = None
    if hasattr(X, "toarray") and hasattr(X, "nnz"):  # a scipy.sparse matrix or array
        raise TypeError(
            f"X is a sparse {type(X).__name__} of shape {X.shape}; jaximp replaces columns of "
            "dense rows. Pass X.toarray() (or a DataFrame), or the rows you explain.")
    X = as_pandas(X)
    if isinstance(X, pd.DataFrame):
        names = [str(c) for c in X.columns]
        if feature_names is not None and list(feature_names) != names:
            raise ValueError(
                "feature_names must be omitted for a DataFrame (its column names are used); "
                f"got {list(feature_names)} for columns {names}."
            )
        columns = []
        for i, name in enumerate(names):
            col = X.iloc[:, i]
            if is_text(col):
                col = text_as_category(col)
            if isinstance(col.dtype, pd.CategoricalDtype):
                if col.isna().any() and not allow_missing:
                    raise ValueError(f"column {name!r} has missing categories; fill them first.")
                levels_of[i] = tuple(col.cat.categories)
                codes = col.cat.codes.to_numpy(dtype=np.float64)
                codes[codes < 0] = np.nan  # a missing level, for a model that handles it
                columns.append(codes)
            elif col.dtype.kind in "mM":
                raise TypeError(_TIME_MESSAGE.format(f"column {name!r}", col.dtype))
            elif pd.api.types.is_bool_dtype(col.dtype):  # NumPy's, nullable or pyarrow's
                columns.append(col.to_numpy(dtype=np.float64, na_value=np.nan))
            elif pd.api.types.is_complex_dtype(col.dtype):
                raise TypeError(f"column {name!r} holds complex values; jaximp needs real "
                                "numbers. Pass the real and imaginary parts as separate columns.")
            elif pd.api.types.is_numeric_dtype(col.dtype):
                columns.append(col.to_numpy(dtype=np.float64, na_value=np.nan))
            elif (numbers := _as_numbers(col.to_numpy())) is not None:  # numbers as objects
                columns.append(numbers)
            else:
                raise TypeError(
                    f"column {name!r} has dtype {col.dtype} with values that are not all "
                    "numbers nor all text; jaximp needs numeric, boolean, text or 'category' "
                    "columns. Convert it to one of them."
                )
        values = np.stack(columns, axis=1) if columns else np.empty((len(X), 0))
    else:
        on_device = _on_one_device(X)
        # rows on one device stay there: checks and grids run on them in place
        values = X if on_device is not None else np.asarray(X)
        if values.dtype == object and (numbers := _as_numbers(values)) is not None:
            values = numbers  # numbers held as Python objects
        if values.dtype.kind == "c":
            raise TypeError("X must hold real numbers; got complex values. Pass the real and "
                            "imaginary parts as separate columns.")
        if values.dtype.kind in "mM":
            raise TypeError(_TIME_MESSAGE.format("X", values.dtype))
        # object, text and structured arrays; bfloat16 and the other ml_dtypes floats are
        # numbers (NumPy gives them kind "V")
        if on_device is None and is_text_array(values) and len(
                values):  # text columns: read as a DataFrame's, the model gets the array
            names = [f"x{i}" for i in range(values.shape[1])] if feature_names is None else [
                str(name) for name in feature_names]
            if len(names) != values.shape[1]:
                raise ValueError(
                    f"feature_names has {len(names)} names but X has {values.shape[1]} columns."
                )
            frame = pd.DataFrame(values, dtype=object, columns=names)
            described = as_dataset(frame, categorical=categorical, groups=groups,
                                   sample_weight=sample_weight, allow_missing=allow_missing)
            return dataclasses.replace(described, source=X)
        if on_device is None and (values.dtype == object or values.dtype.kind in "USV") and (
                not jnp.issubdtype(values.dtype, jnp.floating)):
            raise TypeError(
                f"X must hold numbers; got an array of dtype {values.dtype}. Convert text "
                "columns to integer codes or pass a DataFrame with 'category' columns."
            )
        if values.ndim < 2:
            raise ValueError(f"X must be 2-D (rows, columns), or (rows, ...) for examples "
                             f"with more axes; got shape {values.shape}.")
        if values.ndim > 2:  # images, sequences: one row per example, the model reshapes back
            input_shape = values.shape[1:]
            # not reshape(n, -1), which has no answer for an X of no rows
            values = values.reshape(values.shape[0], math.prod(input_shape))
            positions = [f"x[{','.join(map(str, at))}]" for at in np.ndindex(*input_shape)]
            if feature_names is not None and list(feature_names) != positions:
                raise ValueError("feature_names cannot name the positions of an X with more "
                                 "than two axes; name features with groups= (see "
                                 "jaximp.input_groups).")
            feature_names = positions
            X = None  # host models get the flat rows
        if on_device is None:  # no copy of float64 data; read-only: jaximp never writes into it
            values = _read_only(np.asarray(values, dtype=np.float64))
        if feature_names is None:
            names = [f"x{i}" for i in range(values.shape[1])]
        else:
            names = [str(n) for n in feature_names]
            if len(names) != values.shape[1]:
                raise ValueError(
                    f"feature_names has {len(names)} names but X has {values.shape[1]} columns."
                )
    if len(set(names)) != len(names):
        given = list(X.columns) if isinstance(X, pd.DataFrame) else list(feature_names)
        raise ValueError(f"column names must be unique as text (jaximp names features by "
                         f"str(name)); got {names}" + (
                             f" from {given}" if [str(g) for g in given] != given else "")
                         + ". Rename the columns that clash.")
    n, c = values.shape
    if n == 0 or c == 0:
        shape = values.shape if input_shape is None else (n, *input_shape)
        raise ValueError(f"X is empty: got shape {shape}; need at least 1 row and column.")
    bad = bad_values(values, allow_missing)
    if bad is not None:
        what = "infinite" if allow_missing else "NaN or infinite"
        raise ValueError(
            f"X contains {bad[0]} {what} values (first at row {bad[1]}, column "
            f"{names[bad[2]]!r}); impute or drop them first."
        )

    def column_index(key) -> int:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not -c <= key < c:
                raise ValueError(f"column index {key} is out of range for {c} columns (0 .. "
                                 f"{c - 1}, or -{c} .. -1 from the end).")
            return int(key) % c
        if key not in names:
            raise ValueError(f"unknown column {key!r}; columns are {_some_names(names)}.")
        return names.index(key)

    if isinstance(categorical, (str, int, np.integer)):  # one column, named or indexed
        categorical = [categorical]
    mask = np.asarray(categorical if categorical is not None else [])
    if mask.dtype == bool:  # a boolean mask over the columns, as scikit-learn's
        if mask.shape != (c,):
            raise ValueError(f"a boolean categorical mask must have one entry per column ({c});"
                             f" got shape {mask.shape}.")
        categorical = np.flatnonzero(mask).tolist()
    for key in categorical or ():
        i = column_index(key)
        if i not in levels_of:
            levels = integer_levels(values[:, i])  # a missing code (NaN) is no level
            if levels is None:
                raise ValueError(
                    f"categorical column {names[i]!r} must hold integer codes; got non-integers."
                )
            levels_of[i] = levels

    grouped: dict[int, str] = {}
    features: list[Feature] = []
    group_features: dict[int, Feature] = {}
    for gname, members in (groups or {}).items():
        if isinstance(members, (str, int, np.integer)):
            raise TypeError(
                f"group {gname!r} must list its columns, e.g. {{{gname!r}: ['a', 'b']}}; got "
                f"the single {type(members).__name__} {members!r}. Fix: wrap it in a list.")
        idx = tuple(column_index(m) for m in members)
        if not idx:
            raise ValueError(f"group {gname!r} is empty; list at least one column.")
        for i in idx:
            if i in grouped:
                raise ValueError(
                    f"column {names[i]!r} is listed twice in group {gname!r}; list each "
                    "column once." if grouped[i] == gname else
                    f"column {names[i]!r} is in both groups {grouped[i]!r} and {gname!r}."
                )
            grouped[i] = gname
        # positions of an example (a channel, a time step of one-hot tokens) are inputs,
        # not levels: one-hot groups are a table's
        onehot = input_shape is None and is_onehot(values[:, list(idx)])
        group_features[min(idx)] = Feature(
            str(gname),
            idx,
            "onehot" if onehot else "continuous",
            tuple(names[i] for i in idx) if onehot else None,
        )
    if not group_features and not levels_of:  # plain numeric columns: the same objects again
        features = list(_continuous_features(tuple(names)))
    else:
        for i in range(c):
            if i in group_features:
                features.append(group_features[i])
            if i in grouped:
                continue
            kind = "categorical" if i in levels_of else "continuous"
            features.append(Feature(names[i], (i,), kind, levels_of.get(i)))
    feature_names_all = [f.name for f in features]
    if len(set(feature_names_all)) != len(feature_names_all):
        twice = next(name for name, count in collections.Counter(feature_names_all).items()
                     if count > 1)
        raise ValueError(f"feature and group names must be unique; {twice!r} names two of "
                         f"{_some_names(feature_names_all)}. Rename the group.")

    weights = None
    if sample_weight is not None:
        warn_misaligned(sample_weight, X, "sample_weight")
        weights = pandas_numbers(sample_weight)
        if weights.dtype.kind == "V" and jnp.issubdtype(weights.dtype, jnp.floating):
            weights = weights.astype(np.float64)  # bfloat16 and the other ml_dtypes floats
        if weights.dtype.kind not in "biuf":
            raise TypeError(
                f"sample_weight must hold numbers (one weight per row); got an array of dtype "
                f"{weights.dtype}. Convert the weights to numbers first."
            )
        weights = weights.astype(np.float64)
        if weights.shape not in ((n,), (n, 1)):
            raise ValueError(
                f"sample_weight must have shape ({n},), one weight per row; got "
                f"{weights.shape}."
            )
        weights = weights.reshape(-1)
        if not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError(
                "sample_weight must be finite and non-negative with a positive sum."
            )
        top = weights.max()
        if not 2.0 ** -40 <= top <= 2.0 ** 40:  # every use is relative: scaled where float32
            weights = weights / top  # sums of weighted terms would underflow or overflow
        # the dataset's own copy, which results hand out (info["sample_weight"]): read-only,
        # so that an edit of a result cannot change an Explainer's later calls
        weights.flags.writeable = False
    return Dataset(values if on_device is None else None, tuple(names), tuple(features),
                   weights, X, input_shape, on_device)


def _on_one_device(X):
    """``X`` flattened to rows when it is a ``jax.Array`` on one device, else None."""
    if isinstance(X, jax.Array) and X.is_fully_addressable and len(X.devices()) == 1:
        # fewer than 2 axes: as_dataset refuses X with NumPy's message
        return X if X.ndim < 2 else X.reshape(X.shape[0], math.prod(X.shape[1:]))
    return None
