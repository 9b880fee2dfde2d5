"""Host models: batches built on the host in the user's own types, and checked calls.

A scikit-learn estimator or ``Pipeline`` is fitted on the user's data (a NumPy array or a pandas
DataFrame with its column names and dtypes); it must be called on batches of the same kind. The
engine works on the float64 matrix of :func:`jaximp.as_dataset`; :class:`HostData` turns
"rows of the data with some columns replaced by float64 values" back into the user's type,
column-wise and without per-row Python loops.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from ..data import Dataset, is_text, is_text_array, text_as_category

__all__ = ["HostData", "probe_rows", "call_host"]


def _numpy_decoder(dtype: np.dtype, name: str) -> Callable[[np.ndarray], np.ndarray]:
    """Float64 replacement values -> the column's NumPy dtype when representable, else float64."""
    kind = dtype.kind
    if kind == "f":
        finite_max = float(np.finfo(dtype).max)

        def decode_float(v):
            if dtype == np.float64:
                return v
            if v.size and np.abs(v).max() > finite_max:  # would overflow to inf
                return v
            return v.astype(dtype)

        return decode_float
    if kind in "iu":
        info = np.iinfo(dtype)
        low, high = float(info.min), info.max + 1.0  # high: exclusive, exact as a float

        def decode_int(v):
            if v.size and (
                not np.array_equal(v, np.trunc(v)) or v.min() < low or v.max() >= high
            ):
                return v
            return v.astype(dtype)

        return decode_int
    if kind == "b":

        def decode_bool(v):
            if v.size and not np.all((v == 0) | (v == 1)):
                return v
            return v != 0

        return decode_bool
    return lambda v: v  # any other kind: the float64 values as they are


def _categorical_decoder(dtype: pd.CategoricalDtype, name: str):
    n_levels = len(dtype.categories)

    def decode_categorical(v):
        missing = np.isnan(v)
        codes = np.where(missing, -1, v).astype(np.int64)  # -1: a missing value, as pandas
        wrong = ((v != codes) | (codes < 0) | (codes >= n_levels)) & ~missing
        if v.size and wrong.any():
            bad = v[wrong][0]
            raise ValueError(
                f"column {name!r} is categorical with {n_levels} categories, so replacement "
                f"values must be integer codes 0..{n_levels - 1}; got {bad:g}. Build "
                "replacement values from the dataset's codes (feature.levels gives the labels)."
            )
        return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)

    return decode_categorical


def _text_decoder(column: pd.Series, name: str, levels: Sequence | None = None):
    """Codes -> the column's strings, in its own dtype (object or a pandas string dtype).

    ``levels``: the strings the codes index (the dataset's, so a subset of the rows decodes
    codes of the full data); default the column's own sorted distinct strings."""
    dtype = text_as_category(column).dtype if levels is None else pd.CategoricalDtype(levels)
    categorical = _categorical_decoder(dtype, name)

    def decode_text(v):
        return pd.array(np.asarray(categorical(v), dtype=object), dtype=column.dtype)

    return decode_text


def _extension_decoder(dtype, name: str):
    """Nullable and other numeric pandas extension dtypes ("Int64", "Float32", "boolean"...)."""
    base = getattr(dtype, "numpy_dtype", None)
    if base is None:
        base = getattr(dtype, "subtype", None)  # SparseDtype
    if base is None:
        return lambda v: v
    inner = _numpy_decoder(np.dtype(base), name)

    def decode_extension(v):
        missing = np.isnan(v)  # NaN: the column's missing value (pd.NA for nullable dtypes)
        decoded = inner(np.where(missing, 0.0, v))
        if decoded.dtype != np.dtype(base):
            return v
        try:
            values = pd.array(decoded, dtype=dtype)
            if missing.any():
                values[missing] = None
            return values
        except (TypeError, ValueError):
            return v

    return decode_extension


class HostData:
    """The user's data kept in its own type, for building batches a host model accepts.

    Parameters
    ----------
    X_user : numpy.ndarray or pandas.DataFrame of shape (n, c)
        The data exactly as the user passed it.
    dataset : Dataset
        ``as_dataset(X_user, ...)``: its float64 matrix ``X`` (n, c) is the encoding that
        replacement values use (category codes for pandas ``category`` columns, 0/1 for
        ``bool``).

    Notes
    -----
    A batch is built column-wise: replaced columns are decoded from the float64 values, the
    other columns are the user's own columns taken at the requested rows. A DataFrame batch
    keeps the column names, order and dtypes (a ``category`` column stays ``category`` with the
    same categories; an integer column stays integer when its new values are integral, else it
    becomes float64; a ``bool`` column stays ``bool`` for 0/1 values) and has a fresh
    ``RangeIndex``. An array batch keeps the user's dtype when the new values are representable
    (float32 stays float32; integers stay integers only for integral values), else float64.

    Examples
    --------
    >>> import pandas as pd
    >>> from jaximp import as_dataset
    >>> df = pd.DataFrame({"a": [1, 2, 3], "c": pd.Categorical(["x", "y", "x"])})
    >>> host = HostData(df, as_dataset(df))
    >>> b = host.batch(np.array([2, 0]), np.array([[7.0, 1.0], [8.0, 1.0]]), [1])
    >>> b
       a  c
    0  3  y
    1  1  y
    >>> bool((b.dtypes == df.dtypes).all())
    True
    """

    def __init__(self, X_user, dataset: Dataset):
        self.dataset = dataset
        n, c = dataset.n_rows, dataset.n_columns
        self.is_frame = isinstance(X_user, pd.DataFrame)
        # an array of text and numbers is built as a DataFrame's batch, returned as an array
        self._text_array = not self.is_frame and is_text_array(np.asarray(X_user))
        if self._text_array:
            X_user = pd.DataFrame(np.asarray(X_user), columns=dataset.column_names, dtype=object)
        if self.is_frame or self._text_array:
            if X_user.shape != (n, c):
                raise ValueError(
                    f"X_user has shape {X_user.shape} but dataset.X has shape {(n, c)}; pass the "
                    "same data to HostData that as_dataset encoded."
                )
            self._columns = X_user.columns
            self._arrays: list[Any] = []
            self._decoders: list[Callable] = []
            # object columns stay object: pandas 3 would infer a string dtype for their text
            self._object: list[bool] = []
            levels = {f.columns[0]: f.levels for f in dataset.features
                      if f.kind == "categorical"}
            levels.update((i, given) for i, given in enumerate(dataset.text_levels or ())
                          if given is not None)  # a grouped column's too
            for i, name in enumerate(dataset.column_names):
                col = X_user.iloc[:, i]
                dtype = col.dtype
                self._object.append(dtype == object)
                if is_text(col):  # codes of the sorted distinct strings, as as_dataset's
                    self._arrays.append(col.array)
                    self._decoders.append(_text_decoder(col, name, levels.get(i)))
                elif isinstance(dtype, pd.CategoricalDtype):
                    self._arrays.append(col.array)  # Categorical: take() keeps the dtype
                    self._decoders.append(_categorical_decoder(dtype, name))
                elif isinstance(dtype, np.dtype):
                    self._arrays.append(col.to_numpy())
                    self._decoders.append(_numpy_decoder(dtype, name))
                else:
                    self._arrays.append(col.array)
                    self._decoders.append(_extension_decoder(dtype, name))
        else:
            array = np.asarray(X_user)
            if array.shape != (n, c):
                raise ValueError(
                    f"X_user has shape {array.shape} but dataset.X has shape {(n, c)}; pass the "
                    "same data to HostData that as_dataset encoded."
                )
            # float64 input: the dataset's matrix is the user's array (no second copy kept)
            self._array = dataset.X if array.dtype == np.float64 else array
            self._decode = _numpy_decoder(array.dtype, "X")

    @property
    def n_rows(self) -> int:
        return self.dataset.n_rows

    def batch(self, rows, values=None, columns: Sequence[int] = ()):
        """The user-typed rows ``rows`` with ``columns`` set from ``values``.

        Parameters
        ----------
        rows : int array of shape (B,)
            Row positions in the user's data (0-based, like ``iloc``).
        values : float64 array of shape (B, c), optional
            Full-width rows in the dataset's float64 encoding; only ``values[:, columns]`` is
            read. May be omitted when ``columns`` is empty.
        columns : sequence of int
            Column positions to replace.

        Returns
        -------
        numpy.ndarray or pandas.DataFrame of shape (B, c)
            Same kind as the user's data; row ``b`` is the user's row ``rows[b]`` with the
            listed columns set from ``values[b, columns]``.
        """
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise ValueError(
                f"rows must be a 1-D integer array; got dtype {rows.dtype} and shape {rows.shape}."
            )
        columns = [int(j) for j in columns]
        n_cols = self.dataset.n_columns
        if columns:
            values = np.asarray(values, dtype=np.float64)
            if values.shape != (rows.shape[0], n_cols):
                raise ValueError(
                    f"values must have shape (len(rows), n_columns) = {(rows.shape[0], n_cols)}; "
                    f"got {values.shape}. Pass full-width rows in the dataset's float64 encoding."
                )
            if min(columns) < 0 or max(columns) >= n_cols:
                raise ValueError(
                    f"columns must be positions 0..{n_cols - 1}; got {columns}."
                )
        if not (self.is_frame or self._text_array):
            return self._array_batch(rows, values, columns)
        replaced = set(columns)
        data = {}
        index = pd.RangeIndex(rows.shape[0])
        for j in range(n_cols):
            if j in replaced:
                data[j] = self._decoders[j](values[:, j])
            else:
                data[j] = self._arrays[j].take(rows)
            if self._object[j]:
                data[j] = pd.Series(data[j], index=index, dtype=object, copy=False)
        frame = pd.DataFrame(data, index=index, copy=False)
        if self._text_array:
            return frame.to_numpy(dtype=object)
        frame.columns = self._columns
        return frame

    def _array_batch(self, rows, values, columns):
        out = self._array[rows]
        if not columns:
            return out
        new = values[:, columns]
        decoded = self._decode(new)
        if decoded.dtype != out.dtype:  # not representable in the user's dtype
            out = out.astype(np.float64)
        out[:, columns] = decoded
        return out


def probe_rows(X_user, k: int = 2):
    """The first ``k`` rows of the user's data, in the user's type, to probe a model's output.

    Parameters
    ----------
    X_user : numpy.ndarray or pandas.DataFrame of shape (n, c)
    k : int, default 2
        Number of rows (fewer when the data has fewer).

    Returns
    -------
    numpy.ndarray or pandas.DataFrame of shape (min(k, n), c)
        A DataFrame keeps its dtypes and gets a fresh ``RangeIndex``.

    Examples
    --------
    >>> probe_rows(np.arange(12.0).reshape(4, 3)).tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an int >= 1; got {k!r}.")
    if isinstance(X_user, pd.DataFrame):
        return X_user.iloc[:k].reset_index(drop=True)
    if not hasattr(X_user, "__getitem__"):  # an array-like with only __array__
        X_user = np.asarray(X_user)
    return np.asarray(X_user[:k])  # rows on a device: only these come to the host


def call_host(fn: Callable, batch, name: str, *, n_outputs: int | None = None) -> np.ndarray:
    """Call a host model on a batch and return its predictions as float64 (B, o).

    Parameters
    ----------
    fn : callable
        The model's prediction function, e.g. ``model.predict`` or ``model.predict_proba``.
    batch : numpy.ndarray or pandas.DataFrame of shape (B, c)
        Built by :meth:`HostData.batch` or :func:`probe_rows`.
    name : str
        The model's name for messages, e.g. ``"Pipeline.predict"``.
    n_outputs : int, optional
        Expected outputs per row (from probing the model); checked when given.

    Returns
    -------
    ndarray of shape (B, o), float64
        A 1-D prediction (B,) becomes (B, 1).

    Raises
    ------
    ValueError
        When the output is not numeric or has the wrong shape. Exceptions raised by the model
        itself propagate unchanged.

    Examples
    --------
    >>> call_host(lambda X: X.sum(axis=1), np.ones((3, 2), np.float32), "sum").tolist()
    [[2.0], [2.0], [2.0]]
    """
    n_rows = int(np.shape(batch)[0])
    out = fn(batch)  # the model's own errors propagate as they are
    if hasattr(out, "toarray"):  # scipy sparse
        out = out.toarray()
    if np.iscomplexobj(out):
        raise ValueError(f"the model {name} returned complex values; jaximp explains real "
                         "outputs (explain the real part, the modulus or each separately).")
    try:
        result = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"the model {name} returned {type(out).__name__} values that are not numbers "
            f"(dtype {getattr(out, 'dtype', 'unknown')}: {err}); explain a numeric output, "
            "e.g. predict_proba for a classifier."
        ) from err
    if result.ndim == 1:
        result = result[:, None]
    if result.ndim != 2 or result.shape[0] != n_rows:
        raise ValueError(
            f"the model {name} returned shape {np.shape(out)} for a batch of {n_rows} rows; "
            f"expected ({n_rows},) or ({n_rows}, outputs). Wrap it so that it returns one row "
            "of predictions per input row."
        )
    if n_outputs is not None and result.shape[1] != n_outputs:
        raise ValueError(
            f"the model {name} returned {result.shape[1]} outputs per row on a batch of "
            f"{n_rows} rows, but {n_outputs} were expected from probing it; the model must "
            "return the same number of outputs on every call (refitted with other classes or "
            "targets since it was wrapped? Wrap it again: make a new Explainer)."
        )
    return np.ascontiguousarray(result)
