"""Features of examples with more than one axis: patches, channels, time steps, masks.

An X of shape (n, *input_shape) is explained as flat rows of ``prod(input_shape)`` columns (see
:func:`jaximp.as_dataset`); a feature is then a group of those columns, and every method replaces
or perturbs a group as one feature. :func:`input_groups` builds the ``groups=`` mapping.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence

import numpy as np

from ._params import Index, validate_params

__all__ = ["InputLayout", "input_groups", "input_map"]


@validate_params(axis=Index(none=True))
def input_groups(
    input_shape: Sequence[int],
    *,
    patch: Sequence[int] | None = None,
    axis: int | None = None,
    mask=None,
    prefix: str | None = None,
) -> dict[str, list[int]]:
    """Groups of positions of one example, as features: ``groups=input_groups(...)``.

    Exactly one of ``patch``, ``axis`` and ``mask`` says how positions are grouped.

    Parameters
    ----------
    input_shape : tuple of int
        The shape of one example: ``X.shape[1:]``, e.g. ``(h, w, c)`` or ``(t, c)``.
    patch : tuple of int, optional
        Patch sizes along the leading axes of the example, e.g. ``(4, 4)`` for an ``(h, w, c)``
        image: each feature is a ``4 x 4`` patch with all its channels. Edge patches are
        smaller when a size does not divide the axis. Named ``patch[i,j]`` by the patch's
        position in the grid of patches.
    axis : int, optional
        One feature per index along this axis of the example (``-1``: channels; ``0`` of a
        ``(t, c)`` sequence: time steps), named ``{prefix}[i]`` (default prefix ``index``).
    mask : array of int of shape ``input_shape``, optional
        A label per position (superpixels, regions): one feature per label, named
        ``{prefix}[label]`` (default prefix ``region``); positions labelled ``-1`` belong to no
        group and stay features of their own.
    prefix : str, optional
        The name stem of ``axis`` and ``mask`` features.

    Returns
    -------
    dict of str to list of int
        Feature name -> the flat column indices of its positions (C order, as
        ``X.reshape(n, -1)``).

    Examples
    --------
    >>> groups = input_groups((4, 4, 3), patch=(2, 2))
    >>> list(groups)[:2], len(groups), len(groups["patch[0,0]"])
    (['patch[0,0]', 'patch[0,1]'], 4, 12)
    >>> input_groups((5, 2), axis=-1, prefix="channel")["channel[1]"]
    [1, 3, 5, 7, 9]
    """
    shape = tuple(int(d) for d in input_shape)
    if not shape or any(d < 1 for d in shape):
        raise ValueError(f"input_shape must be a tuple of positive sizes; got {input_shape!r}.")
    given = [name for name, value in (("patch", patch), ("axis", axis), ("mask", mask))
             if value is not None]
    if len(given) != 1:
        raise ValueError("input_groups needs exactly one of patch=, axis= or mask=; got "
                         f"{given or 'none'}.")
    positions = np.arange(int(np.prod(shape))).reshape(shape)
    if patch is not None:
        sizes = tuple(patch) if isinstance(patch, (tuple, list)) else (patch,)
        if any(isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral)
               for s in sizes):
            raise TypeError(f"patch must be a tuple of int sizes; got {patch!r}.")
        sizes = tuple(int(s) for s in sizes)
        if not 1 <= len(sizes) <= len(shape) or any(s < 1 for s in sizes):
            raise ValueError(f"patch must give a positive size for each of the first 1..{len(shape)}"
                             f" axes of examples of shape {shape}; got {patch!r}.")
        counts = [-(-d // s) for d, s in zip(shape, sizes)]
        groups = {}
        for at in np.ndindex(*counts):
            block = positions[tuple(slice(i * s, (i + 1) * s) for i, s in zip(at, sizes))]
            groups[f"patch[{','.join(map(str, at))}]"] = sorted(block.ravel().tolist())
        return groups
    if axis is not None:
        if not -len(shape) <= axis < len(shape):
            raise ValueError(f"axis must index the {len(shape)} axes of examples of shape "
                             f"{shape}; got {axis}.")
        moved = np.moveaxis(positions, axis, 0)
        return {f"{prefix or 'index'}[{i}]": sorted(moved[i].ravel().tolist())
                for i in range(moved.shape[0])}
    labels = np.asarray(mask)
    if labels.shape != shape or labels.dtype.kind not in "iu" or (labels < -1).any():
        low = f", labels down to {labels.min()}" if labels.size and labels.dtype.kind in "iu" \
            else ""
        raise ValueError(f"mask must be an integer array of shape {shape} (one label per "
                         f"position, -1 for none); got {labels.dtype} of shape {labels.shape}"
                         f"{low}.")
    return {f"{prefix or 'region'}[{label}]": positions[labels == label].tolist()
            for label in np.unique(labels) if label >= 0}


@validate_params()
def input_map(values, input_shape: Sequence[int], groups=None) -> np.ndarray:
    """Per-feature values painted back onto the positions of one example.

    The inverse view of :func:`input_groups`: every position takes the value of the feature it
    belongs to, so an importance or attribution over patches, channels or mask regions shows
    as an image (or a heat map over time). Positions outside every group are features of their
    own, in the order the methods list features (see :func:`jaximp.as_dataset`). Results of
    such examples paint themselves (``result.image()``, through their :class:`InputLayout`).

    Parameters
    ----------
    values : array of shape (p, ...)
        One value (or a trailing block, e.g. outputs) per feature, in the result's feature
        order: ``result.importances_mean``, ``attributions.values[i]``.
    input_shape : tuple of int
        The shape of one example, ``X.shape[1:]``.
    groups : mapping of str to list of int, optional
        The ``groups=`` the method was called with (default: every position a feature).

    Returns
    -------
    ndarray of shape (*input_shape, ...)

    Examples
    --------
    >>> groups = input_groups((4, 4), patch=(2, 2))
    >>> input_map(np.arange(4.0), (4, 4), groups)
    array([[0., 0., 1., 1.],
           [0., 0., 1., 1.],
           [2., 2., 3., 3.],
           [2., 2., 3., 3.]])
    """
    return InputLayout.from_groups(input_shape, groups).paint(values)


@dataclasses.dataclass(frozen=True, repr=False)
class InputLayout:
    """Where each feature of a result lies in one example of more than one axis.

    The methods explain an X of shape ``(n, *input_shape)`` as flat rows (C order); a feature
    is a group of flat positions. Results of such data carry their layout in
    ``info["input_layout"]`` and paint per-feature values back onto the example
    (``result.image()``); results of tables carry none.

    Attributes
    ----------
    input_shape : tuple of int
        The shape of one example, ``X.shape[1:]``.
    feature_columns : tuple of tuple of int, length p
        The flat positions of each of the result's features, in its feature order.

    Examples
    --------
    >>> layout = InputLayout.from_groups((2, 3), {"left": [0, 3]})
    >>> layout.feature_columns
    ((0, 3), (1,), (2,), (4,), (5,))
    >>> layout.paint(np.array([9.0, 1, 2, 4, 5]))
    array([[9., 1., 2.],
           [9., 4., 5.]])
    """

    input_shape: tuple[int, ...]
    feature_columns: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        shape = tuple(int(d) for d in self.input_shape)
        columns = tuple(tuple(int(c) for c in cols) for cols in self.feature_columns)
        size = int(np.prod(shape))
        if not shape or any(d < 1 for d in shape):
            raise ValueError(f"input_shape must be a tuple of positive sizes; got "
                             f"{self.input_shape!r}.")
        flat = [c for cols in columns for c in cols]
        if any(not cols for cols in columns) or len(set(flat)) != len(flat) \
                or not all(0 <= c < size for c in flat):
            raise ValueError(f"feature_columns must give each feature distinct positions in "
                             f"0..{size - 1} (examples of shape {shape}); got {columns!r:.80}.")
        object.__setattr__(self, "input_shape", shape)
        object.__setattr__(self, "feature_columns", columns)

    def __repr__(self) -> str:
        return f"InputLayout({self.input_shape}, {self.n_features} features)"

    @classmethod
    def from_groups(cls, input_shape: Sequence[int], groups=None) -> InputLayout:
        """The layout of every feature the methods list for these ``groups=``: each group,
        and each position outside every group, ordered by its first position."""
        size = int(np.prod([int(d) for d in input_shape]))
        members = [list(columns) for columns in (groups or {}).values()]
        grouped = {c for columns in members for c in columns}
        features = sorted(members + [[c] for c in range(size) if c not in grouped], key=min)
        return cls(tuple(input_shape), tuple(tuple(columns) for columns in features))

    @classmethod
    def of(cls, dataset, features=None) -> InputLayout | None:
        """The layout of ``features`` (default: all) of a :class:`Dataset`; None for a
        table (a dataset without ``input_shape``)."""
        if dataset.input_shape is None:
            return None
        chosen = dataset.features if features is None else features
        return cls(dataset.input_shape, tuple(f.columns for f in chosen))

    @property
    def n_features(self) -> int:
        return len(self.feature_columns)

    def paint(self, values) -> np.ndarray:
        """Per-feature ``values`` (shape (p, ...)) on the positions of one example: shape
        ``(*input_shape, ...)``, a feature's value on each of its positions; positions of no
        feature (a result over some features only) are NaN."""
        values = np.asarray(values)
        p = self.n_features
        if values.ndim == 0 or values.shape[0] != p:
            raise ValueError(f"values must hold one entry per feature ({p} for examples of "
                             f"shape {self.input_shape} with these groups); got shape "
                             f"{values.shape}.")
        size = int(np.prod(self.input_shape))
        feature_of = np.full(size, p)  # p: no feature, the NaN row below
        for j, columns in enumerate(self.feature_columns):
            feature_of[list(columns)] = j
        if np.any(feature_of == p):
            blank = np.full((1, *values.shape[1:]), np.nan)
            values = np.concatenate([values.astype(np.result_type(values, np.float64)), blank])
        return values[feature_of].reshape(*self.input_shape, *values.shape[1:])
