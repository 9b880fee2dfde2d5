"""Data checks and column statistics computed where the rows live.

Rows given as a ``jax.Array`` on one device are validated and summarized there: each check is
one device reduction whose scalar is read, and a grid reads back only its values (the distinct
values, or the few order statistics of its quantiles). Rows on the host get the same answers
from NumPy; the two agree bit for bit, since a grid only selects and interpolates data values
in float64 on the host."""

from __future__ import annotations

import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["ColumnOrder", "DeviceColumnOrder", "HostColumnOrder", "bad_values",
           "device_column_order", "integer_levels", "is_onehot", "plotting_quantiles"]

# platforms whose device memory is host memory: a column there is sorted by NumPy on a view
# of it (XLA's CPU sort is about 40x slower than NumPy's); nothing is copied off a device
SORTED_BY_NUMPY = ("cpu",)


def plotting_quantiles(at, n: int, prob: Sequence[float], alphap: float,
                       betap: float) -> np.ndarray:
    """Sample quantiles with plotting positions ``(k - alphap) / (n + 1 - alphap - betap)`` of
    a sorted sample of size ``n`` whose values at (0-based) positions ``k`` are ``at(k)``.

    Examples
    --------
    >>> data = np.arange(10.0)
    >>> plotting_quantiles(data.__getitem__, 10, [0.05, 0.5, 0.95], 0.4, 0.4).tolist()
    [0.0, 4.5, 9.0]
    """
    p = np.asarray(prob, dtype=np.float64)
    m = alphap + p * (1.0 - alphap - betap)
    aleph = n * p + m
    # np.minimum/np.maximum, not np.clip: this runs per feature per call on a few values
    k = np.floor(np.minimum(np.maximum(aleph, 1), n - 1)).astype(int)
    gamma = np.minimum(np.maximum(aleph - k, 0.0), 1.0)
    # one read of both order statistics (a device column sends back 2 values per quantile);
    # position k - 1 is -1 for a sample of one, whose only value it is (a device column's
    # position -1 is its last row, a NaN where the column has any)
    below, above = np.split(np.asarray(at(np.concatenate([np.maximum(k - 1, 0), k])),
                                       np.float64), 2)
    return (1.0 - gamma) * below + gamma * above


class ColumnOrder:
    """The present (non-NaN) values of one column in ascending order, read as a grid needs:
    their count, the number of distinct values, the distinct values, and order statistics."""

    size: int
    n_distinct: int

    def at(self, positions) -> np.ndarray:
        """The float64 values at the 0-based sorted ``positions``."""
        raise NotImplementedError

    def distinct(self) -> np.ndarray:
        """The distinct values, ascending, float64."""
        raise NotImplementedError

    def quantiles(self, prob, alphap: float = 0.4, betap: float = 0.4) -> np.ndarray:
        """Quantiles as ``jaximp.mquantiles`` gives them (scipy's ``mquantiles``)."""
        return plotting_quantiles(self.at, self.size, prob, alphap, betap)

    def span(self, low: float, high: float) -> np.ndarray:
        """The smallest and the largest value in ``[low, high]`` (2,); the interval must hold
        one."""
        raise NotImplementedError


class HostColumnOrder(ColumnOrder):
    """A column order over a sorted float64 NumPy array.

    Examples
    --------
    >>> order = HostColumnOrder(np.array([1.0, 1.0, 2.0, 5.0]))
    >>> order.n_distinct, order.distinct().tolist(), order.at([0, 3]).tolist()
    (3, [1.0, 2.0, 5.0], [1.0, 5.0])
    """

    def __init__(self, ordered: np.ndarray):
        self.ordered = ordered
        self.size = ordered.size
        first = np.concatenate([[True], ordered[1:] != ordered[:-1]])[:ordered.size]
        self._distinct = ordered[first]
        self.n_distinct = self._distinct.size

    def at(self, positions) -> np.ndarray:
        return self.ordered[np.asarray(positions)]

    def distinct(self) -> np.ndarray:
        return self._distinct

    def span(self, low: float, high: float) -> np.ndarray:
        first = np.searchsorted(self.ordered, low, side="left")
        return self.ordered[[first, np.searchsorted(self.ordered, high, side="right") - 1]]


@jax.jit
def _span_positions(ordered, low, high):
    """Sorted positions of the first value >= low and the last <= high (NaN compares false,
    so the missing values sorted last count in neither)."""
    return jnp.stack([jnp.sum(ordered < low), jnp.sum(ordered <= high) - 1]).astype(jnp.int32)


@jax.jit
def _gather(values, positions):
    """values[positions] on the values' device: (m,), (k,) int32 -> (k,)."""
    return values[positions]


@functools.partial(jax.jit, static_argnums=2)
def _distinct(ordered, first, count: int):
    """The ``count`` distinct values of a sorted column: (m,), (m,) bool -> (count,)."""
    return ordered[jnp.nonzero(first, size=count)[0]]


@jax.jit
def _sort_column(column):
    """The column ascending (NaN last), its count of present values, the mask of the first of
    each distinct present value, and their count."""
    if column.dtype == jnp.bool_:
        column = column.astype(jnp.uint8)
    ordered = jnp.sort(column)
    present = (jnp.sum(~jnp.isnan(column)) if jnp.issubdtype(column.dtype, jnp.inexact)
               else jnp.asarray(column.shape[0]))
    position = jnp.arange(column.shape[0])
    first = jnp.concatenate([jnp.ones(1, bool), ordered[1:] != ordered[:-1]])
    first = first & (position < present)
    return ordered, present, first, jnp.sum(first)


class DeviceColumnOrder(ColumnOrder):
    """A column order sorted on the device; reading it sends back only what is asked.

    Examples
    --------
    >>> order = DeviceColumnOrder(jnp.array([5.0, 1.0, jnp.nan, 2.0, 1.0]))
    >>> order.size, order.n_distinct, order.distinct().tolist()
    (4, 3, [1.0, 2.0, 5.0])
    >>> order.quantiles([0.5]).tolist()
    [1.5]
    """

    def __init__(self, column):
        self._ordered, present, self._first, distinct = _sort_column(column)
        self.size, self.n_distinct = (int(v) for v in jax.device_get((present, distinct)))

    def at(self, positions) -> np.ndarray:
        # the positions sent explicitly, and gathered in a jitted call (eager indexing sends
        # its bounds): a warm call under a transfer guard sends nothing implicitly
        values = _gather(self._ordered, jax.device_put(np.asarray(positions, np.int32)))
        return np.asarray(jax.device_get(values), np.float64)

    def distinct(self) -> np.ndarray:
        return np.asarray(jax.device_get(_distinct(self._ordered, self._first,
                                                   self.n_distinct)), np.float64)

    def span(self, low: float, high: float) -> np.ndarray:
        bounds = _inward(np.dtype(self._ordered.dtype), low, high)
        return self.at(jax.device_get(_span_positions(self._ordered, *jax.device_put(bounds))))


def _inward(dtype: np.dtype, low: float, high: float):
    """float64 bounds as the nearest values of ``dtype`` inside them: a value of ``dtype``
    is ``>= low`` exactly when it is ``>=`` the first, so the device compares in its dtype."""
    dtype = np.dtype(np.float32) if dtype.kind == "V" else dtype  # bfloat16: compared as float32
    if dtype.kind in "biu":
        info = np.iinfo(dtype)
        return (dtype.type(np.clip(np.ceil(low), info.min, info.max)),
                dtype.type(np.clip(np.floor(high), info.min, info.max)))
    lo, hi = dtype.type(low), dtype.type(high)
    lo = np.nextafter(lo, dtype.type(np.inf)) if lo < low else lo
    hi = np.nextafter(hi, dtype.type(-np.inf)) if hi > high else hi
    return lo, hi


def device_column_order(column) -> ColumnOrder:
    """The order of a column of rows on a device: sorted there, or by NumPy on a view of it
    where the device's memory is the host's (``SORTED_BY_NUMPY``).

    Examples
    --------
    >>> device_column_order(jnp.array([2.0, jnp.nan, 1.0])).distinct().tolist()
    [1.0, 2.0]
    """
    if {d.platform for d in column.devices()} <= set(SORTED_BY_NUMPY):
        values = np.asarray(column)
        if values.dtype.kind == "f" or values.dtype.kind == "V":  # floats, bfloat16
            values = values.astype(np.float64)
            values = values[~np.isnan(values)]
        return HostColumnOrder(np.sort(values).astype(np.float64, copy=False))
    return DeviceColumnOrder(column)


def _host_bad(values: np.ndarray, allow_missing: bool):
    # the sum is finite for finite data short of overflow: one pass, no boolean copy
    if np.isfinite(values.sum()):
        return None
    bad = np.isinf(values) if allow_missing else ~np.isfinite(values)
    if not bad.any():
        return None
    rows, cols = np.nonzero(bad)
    return int(bad.sum()), int(rows[0]), int(cols[0])


@jax.jit
def _device_bad_mask(rows, allow_missing):
    return jnp.where(allow_missing, jnp.isinf(rows), ~jnp.isfinite(rows))


def bad_values(rows, allow_missing: bool) -> tuple[int, int, int] | None:
    """(count, first row, first column) of the values a dataset refuses: NaN or infinite,
    or only infinite under ``allow_missing``; None when there are none. Rows on a device
    are checked there by one reduction; the first bad value is located only when there is one.

    Examples
    --------
    >>> bad_values(np.array([[0.0, np.inf], [np.nan, 1.0]]), allow_missing=True)
    (1, 0, 1)
    >>> bad_values(jnp.array([[0.0, 1.0]]), allow_missing=False) is None
    True
    """
    if not isinstance(rows, jax.Array):
        return _host_bad(rows, allow_missing)
    if not jnp.issubdtype(rows.dtype, jnp.inexact):
        return None  # integers and booleans are finite
    bad = _device_bad_mask(rows, allow_missing)
    if not jax.device_get(jnp.any(bad)):  # explicit reads: allowed under a transfer guard
        return None
    count, first = jax.device_get((jnp.sum(bad), jnp.argmax(bad.reshape(-1))))
    return int(count), *divmod(int(first), rows.shape[1])


def integer_levels(column) -> tuple | None:
    """The distinct integer codes of a categorical column, NaN (a missing code) left out;
    None when a present value is not an integer.

    Examples
    --------
    >>> integer_levels(np.array([2.0, 0.0, np.nan, 2.0]))
    (0, 2)
    >>> integer_levels(jnp.array([0.5, 1.0])) is None
    True
    """
    if not isinstance(column, jax.Array):
        column = column[~np.isnan(column)]
        if not np.all(column == np.round(column)):
            return None
        return tuple(np.unique(column).astype(int).tolist())
    if jnp.issubdtype(column.dtype, jnp.inexact):
        whole = jnp.all(jnp.isnan(column) | (column == jnp.round(column)))
        if not jax.device_get(whole):
            return None
    order = device_column_order(column)
    return tuple(order.distinct().astype(int).tolist()) if order.size else ()


def is_onehot(block) -> bool:
    """Whether ``block`` (n, k), k > 1, holds 0/1 indicators with one 1 per row.

    Examples
    --------
    >>> is_onehot(np.array([[1.0, 0.0], [0.0, 1.0]])), is_onehot(jnp.array([[1, 1], [0, 1]]))
    (True, False)
    """
    if block.shape[1] < 2:
        return False
    if isinstance(block, jax.Array):
        return bool(jax.device_get(jnp.all((block == 0) | (block == 1))
                                   & jnp.all(block.sum(axis=1) == 1)))
    return bool(np.all((block == 0) | (block == 1)) and np.all(block.sum(axis=1) == 1))
