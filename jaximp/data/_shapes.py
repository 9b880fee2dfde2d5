"""Features of examples with more than one axis: patches, channels, time steps, masks.

An X of shape (n, *input_shape) is explained as flat rows of ``prod(input_shape)`` columns (see
:func:`jaximp.as_dataset`); a feature is then a group of those columns, and every method replaces
or perturbs a group as one feature. :func:`input_groups` builds the ``groups=`` mapping.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["input_groups", "input_map"]


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
        sizes = tuple(int(s) for s in patch)
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
    if labels.shape != shape or labels.dtype.kind not in "iu":
        raise ValueError(f"mask must be an integer array of shape {shape} (one label per "
                         f"position, -1 for none); got {labels.dtype} of shape {labels.shape}.")
    return {f"{prefix or 'region'}[{label}]": positions[labels == label].tolist()
            for label in np.unique(labels) if label >= 0}


def input_map(values, input_shape: Sequence[int], groups=None) -> np.ndarray:
    """Per-feature values painted back onto the positions of one example.

    The inverse view of :func:`input_groups`: every position takes the value of the feature it
    belongs to, so an importance or attribution over patches, channels or mask regions shows
    as an image (or a heat map over time). Positions outside every group are features of their
    own, in the order the methods list features (see :func:`jaximp.as_dataset`).

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
    shape = tuple(int(d) for d in input_shape)
    size = int(np.prod(shape))
    values = np.asarray(values)
    # the methods' feature order: each group or lone position where its first column stands
    members = [list(columns) for columns in (groups or {}).values()]
    grouped = {c for columns in members for c in columns}
    features = sorted(members + [[c] for c in range(size) if c not in grouped], key=min)
    feature_of = np.empty(size, int)
    for j, columns in enumerate(features):
        feature_of[columns] = j
    if values.shape[0] != len(features):
        raise ValueError(f"values must hold one entry per feature ({len(features)} for "
                         f"examples of shape {shape} with these groups); got shape "
                         f"{values.shape}.")
    return values[feature_of].reshape(*shape, *values.shape[1:])
