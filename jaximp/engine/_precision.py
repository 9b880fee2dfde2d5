"""Warnings for feature values that a low-precision model cannot tell apart.

Grids and replacement values are built in float64, but a JAX model usually computes in float32:
a timestamp-like feature (1.6e9 + a few hundred seconds) has float32 steps of 128, so a
20-point grid over its range reaches the model as a handful of distinct values and the partial
dependence is a staircase (or flat). :func:`check_collapse` detects that cheaply and says how to
fix it.
"""

from __future__ import annotations

import functools
import warnings

import jax
import numpy as np

from ..data import PrecisionWarning

__all__ = ["PrecisionWarning", "check_collapse", "check_collapse_columns"]

#: a spread narrower than this many steps of the model's dtype is not resolved at all
_MIN_STEPS = 4.0
#: values in a spread narrower than this many steps, unless the dtype holds them exactly, move
#: by up to 1/128 of it when cast (timestamps 1.6e9 + 890 s: steps of 128, an error of 7%)
_ROUNDED_STEPS = 64.0
#: lost distinct values are reported when the dtype resolves the spread this coarsely or worse
_COARSE_STEPS = 1024.0

_FIX = (
    "centre or scale the feature inside the model, or enable float64 with "
    "jax.config.update('jax_enable_x64', True) and float64 model parameters"
)


@functools.lru_cache(maxsize=16)
def _finfo(dtype: np.dtype):
    """``finfo`` of a floating dtype with less than 64 bits (NumPy or ml_dtypes), else None."""
    if dtype.kind == "f":
        info = np.finfo(dtype)
    else:
        try:
            import ml_dtypes  # bfloat16 and friends, installed with JAX
        except ImportError:  # pragma: no cover - JAX depends on ml_dtypes
            return None
        try:
            info = ml_dtypes.finfo(dtype)
        except (TypeError, ValueError, KeyError):
            return None
    return info if info.bits < 64 else None


def _resolution(low, high, info):
    """For ranges ``[low, high]`` (scalars or arrays): the dtype's step at their magnitude,
    how many steps the spread covers, and whether the magnitude overflows the dtype."""
    scale = np.maximum(np.abs(low), np.abs(high))
    # frexp's exponent minus one is floor(log2(scale)), exactly and without a log
    step = np.maximum(np.ldexp(float(info.eps), np.frexp(scale)[1] - 1),
                      float(info.smallest_subnormal))
    return step, (high - low) / step, scale > float(info.max)


def check_collapse(
    feature_name: str, values: np.ndarray, dtype, what: str, *, stacklevel: int = 2
) -> None:
    """Warn when distinct float64 feature values collapse in the model's dtype.

    Parameters
    ----------
    feature_name : str
        Feature named in the message.
    values : array-like of float64
        The values the model will see for this feature: a grid, or the feature's observed
        values (for permutation). Any shape; non-finite values are ignored.
    dtype : dtype-like
        The model's input dtype (``np.float32`` typically). Nothing is checked for float64,
        integer or unknown dtypes.
    what : str
        What ``values`` are, as a plural noun phrase for the message: ``"grid points"``,
        ``"observed values"``.
    stacklevel : int, default 2
        Passed to :func:`warnings.warn`.

    Warns
    -----
    PrecisionWarning
        When casting to ``dtype`` leaves fewer distinct values and the dtype resolves the
        values' spread in fewer than about 1000 steps, when the spread (max - min) is below
        a few steps of ``dtype`` at the values' magnitude, or when values overflow ``dtype``.
        Ordinary data that merely loses a few near-duplicate values (e.g. millions of rows in
        [0, 1]) does not warn: its spread is resolved in millions of float32 steps.

    Examples
    --------
    >>> import warnings
    >>> grid = np.linspace(1.6e9, 1.6e9 + 900, 20)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_collapse("timestamp", grid, np.float32, "grid points")
    >>> print(str(caught[0].message).split(" (")[0])
    feature 'timestamp': 20 grid points give 8 distinct float32 values
    >>> check_collapse("timestamp", grid, np.float64, "grid points")  # silent
    """
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return
    info = _finfo(dt)
    if info is None:
        return
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    flat = flat[np.isfinite(flat)]
    if flat.size < 2:
        return
    low, high = float(flat.min()), float(flat.max())
    spread = high - low
    scale = max(abs(low), abs(high))
    if spread == 0:
        return
    step, steps, overflow = (float(v) for v in _resolution(low, high, info))
    if not (overflow or steps < _COARSE_STEPS):
        return  # finely resolved: no need to count distinct values (a sort of all of them)
    uniques = np.unique(flat)
    n_before = uniques.size
    with np.errstate(over="ignore", invalid="ignore"):
        cast = uniques.astype(dt)
    n_after = np.unique(cast).size
    rounded = steps < _ROUNDED_STEPS and not np.array_equal(cast.astype(np.float64), uniques)
    if not (overflow or steps < _MIN_STEPS or rounded
            or (n_after < n_before and steps < _COARSE_STEPS)):
        return
    detail = (
        f"values beyond {float(info.max):.3g} become inf in {dt.name}"
        if overflow
        else f"their spread {spread:.3g} at magnitude {scale:.3g} is about {steps:.3g} "
        f"{dt.name} steps of {step:.3g}"
    )
    effect = (f"{n_before} {what} give {n_after} distinct {dt.name} values ({detail}), so the "
              "model barely sees this feature vary" if not rounded or n_after < n_before else
              f"its {what} reach the model rounded by up to {step / 2:.3g}, "
              f"{50 / steps:.2g}% of their spread ({detail})")
    warnings.warn(f"feature {feature_name!r}: {effect}; to fix it, {_FIX}.", PrecisionWarning,
                  stacklevel=stacklevel)


def _column_ranges(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column's min and max of a float matrix. NumPy reduces a row-major matrix over its
    rows with an inner loop as wide as a row: k rows side by side make it k times wider
    (100,000 x 10 float64: 0.28 ms, against 1.2 ms column by column and 4.6 ms for
    ``X.min(axis=0)``)."""
    n, p = X.shape
    k = max(1, min(n, 1024 // max(p, 1)))
    whole = n // k * k
    side_by_side = X[:whole].reshape(-1, k * p)
    low = np.minimum.reduce(side_by_side, axis=0).reshape(k, p).min(axis=0)
    high = np.maximum.reduce(side_by_side, axis=0).reshape(k, p).max(axis=0)
    if whole < n:
        low = np.minimum(low, X[whole:].min(axis=0))
        high = np.maximum(high, X[whole:].max(axis=0))
    return low, high


def check_collapse_columns(feature_names, X: np.ndarray, columns, dtype, what: str, *,
                           stacklevel: int = 2) -> None:
    """:func:`check_collapse` for columns of a finite float64 matrix ``X``, one per name.

    Only each column's range is read; a column is read again (and its distinct values
    counted) only when its range is coarsely resolved in ``dtype``. ``X`` may be rows on a
    device (a ``jax.Array``): the ranges are found there, and only they come back, with a
    coarse column.
    """
    try:
        info = _finfo(np.dtype(dtype))
    except TypeError:
        return
    if info is None or X.shape[0] < 2 or not len(columns):
        return
    columns = np.asarray(columns, dtype=int)
    if isinstance(X, jax.Array):
        chosen = X[:, columns]
        low, high = (np.asarray(v, np.float64) for v in jax.device_get(
            (chosen.min(axis=0), chosen.max(axis=0))))
    elif X.shape[0] <= 4096:  # small X: two passes over a copy cost less than calls per column
        chosen = X[:, columns]
        low, high = chosen.min(axis=0), chosen.max(axis=0)
    elif np.array_equal(columns, np.arange(X.shape[1])):  # every column: rows side by side
        low, high = _column_ranges(X)
    else:  # some columns of a wide X: each read in place, not the whole X
        low = np.array([X[:, j].min() for j in columns])
        high = np.array([X[:, j].max() for j in columns])
    _, steps, overflow = _resolution(low, high, info)
    coarse = (high > low) & (overflow | (steps < _COARSE_STEPS))
    if not coarse.any():
        return
    for k in np.flatnonzero(coarse):
        column = np.asarray(X[:, columns[k]], np.float64)
        check_collapse(feature_names[k], column, dtype, what,
                       stacklevel=stacklevel + 1)
