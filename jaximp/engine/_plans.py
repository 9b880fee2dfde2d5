"""Evaluation plans: which copies of the data the engine evaluates the model on.

A plan has ``b`` *items*. Item ``k`` replaces the columns of ``masks[item_mask[k]]`` in every row
``i`` of the data by values read from a replacement table at an index chosen by the plan's
``index`` rule:

- ``"item"``: the same table row ``item_index[k]`` for all rows (PD grids, LOCO replacement
  values), or with no table the same data row (H-statistic rows);
- ``"permutation"``: data row ``pi_k(i)`` of a seeded permutation ``pi_k`` (permutation
  importance); the seed is the plan's key and the item's stream label ``item_stream[k]``;
- ``"draw"``: a data row drawn uniformly, with replacement, for each row (sensitivity analysis);
- ``"code"``: table row ``item_index[k] + row_codes[item_code[k], i]``, values chosen per row
  (e.g. the lower and upper edge of the bin each row falls in, for accumulated local effects).

Random and regular indices are computed inside each chunk from the seed, the item and the row
number, so no (items, n) index table exists and the answer does not depend on the chunking.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ._rng import key_bits

__all__ = ["Plan", "at_values", "at_data_rows", "at_permuted_rows", "at_drawn_rows",
           "at_coded_values"]

INDEX_RULES = ("item", "permutation", "draw", "code")


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """What the engine evaluates (see the module docstring).

    Attributes
    ----------
    masks : bool array (m, c)
    item_mask : int32 array (b,)
    index : {"item", "permutation", "draw", "code"}
    table : float64 array (v, c) or None
        Replacement rows; None reads the data rows themselves.
    item_index : int32 array (b,)
        Table row (``"item"``) or offset (``"code"``) of each item.
    item_stream : int32 array (b, s)
        Stream label of each item's random indices (``"permutation"``, ``"draw"``).
    key_bits : uint32 array (2,)
        The random key's data.
    row_codes : int32 array (q, n) or None
        Per-row codes (``"code"``), and ``item_code`` (b,) says which row of them an item uses.
    draw_cdf : float array (n,) or None
        ``"draw"`` with case weights: the cumulative weights, normalized to end at 1; rows are
        drawn with probability proportional to their weight.
    """

    masks: np.ndarray
    item_mask: np.ndarray
    index: str
    table: np.ndarray | None = None
    item_index: np.ndarray | None = None
    item_stream: np.ndarray | None = None
    key_bits: np.ndarray | None = None
    row_codes: np.ndarray | None = None
    item_code: np.ndarray | None = None
    draw_cdf: np.ndarray | None = None

    def __post_init__(self):
        if self.index not in INDEX_RULES:
            raise ValueError(f"index must be one of {INDEX_RULES}; got {self.index!r}.")
        b = self.item_mask.shape[0]
        for name in ("item_index", "item_stream", "item_code"):
            value = getattr(self, name)
            if value is not None and value.shape[0] != b:
                raise ValueError(f"{name} must have {b} entries, one per item; got {value.shape}.")
        # immutable, so that the engine may keep a plan's device tables for its lifetime
        freeze_arrays(self)

    @property
    def n_items(self) -> int:
        return int(self.item_mask.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.masks.shape[1])

    def items(self, start: int, stop: int) -> "Plan":
        """The plan restricted to items ``start..stop-1`` (same masks, table and key)."""
        cut = lambda a: None if a is None else a[start:stop]  # noqa: E731
        return dataclasses.replace(
            self, item_mask=self.item_mask[start:stop], item_index=cut(self.item_index),
            item_stream=cut(self.item_stream), item_code=cut(self.item_code),
        )


def freeze_arrays(instance) -> None:
    """Make every array field of a frozen dataclass read-only, in its ``__post_init__``
    (copying those that others could still write to)."""
    for field in dataclasses.fields(instance):
        value = getattr(instance, field.name)
        if isinstance(value, np.ndarray):
            object.__setattr__(instance, field.name, _read_only(value))


def _read_only(array: np.ndarray) -> np.ndarray:
    """``array`` if no one can write to it (read-only, owning its data or viewing read-only
    data that does), else a read-only copy."""
    owner = array if array.flags.owndata else array.base
    if not array.flags.writeable and isinstance(owner, np.ndarray) and owner.flags.owndata \
            and not owner.flags.writeable:
        return array
    array = array.copy()
    array.flags.writeable = False
    return array


def _masks(masks) -> np.ndarray:
    masks = np.asarray(masks, dtype=bool)
    if masks.ndim != 2:
        raise ValueError(f"masks must be a 2-D boolean array (m, c); got shape {masks.shape}.")
    return masks


def _ints(values, name: str) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int32).reshape(-1))


def at_values(masks, item_mask, values, item_value) -> Plan:
    """Item ``k`` sets its mask's columns to ``values[item_value[k]]`` in every row.

    Examples
    --------
    >>> import numpy as np
    >>> plan = at_values(np.eye(2, dtype=bool), [0, 0, 1], np.zeros((3, 2)), [0, 1, 2])
    >>> plan.n_items, plan.index
    (3, 'item')
    """
    masks = _masks(masks)
    table = np.asarray(values, dtype=np.float64).reshape(-1, masks.shape[1])
    return Plan(masks, _ints(item_mask, "item_mask"), "item", table=table,
                item_index=_ints(item_value, "item_value"))


def at_data_rows(masks, item_mask, item_row) -> Plan:
    """Item ``k`` sets its mask's columns to those of data row ``item_row[k]`` in every row:
    :func:`at_values` with the data's own rows as the table, read where the rows are kept
    (no copy of them is made or sent).

    Examples
    --------
    >>> import numpy as np
    >>> plan = at_data_rows(np.eye(2, dtype=bool), [0, 1], [5, 5])
    >>> plan.index, plan.table is None, plan.item_index.tolist()
    ('item', True, [5, 5])
    """
    return Plan(_masks(masks), _ints(item_mask, "item_mask"), "item",
                item_index=_ints(item_row, "item_row"))


def _streams(item_stream, b: int) -> np.ndarray:
    streams = np.asarray(item_stream, dtype=np.int64)
    streams = streams.reshape(b, -1) if streams.size else np.zeros((b, 1), np.int64)
    return np.ascontiguousarray((streams & 0x7FFFFFFF).astype(np.int32))


def _key_bits(key) -> np.ndarray:
    """The last two words of a PRNG key's data, or of raw key words (a tuple of ints)."""
    return np.asarray((key if isinstance(key, tuple) else key_bits(key))[-2:], dtype=np.uint32)


def at_permuted_rows(masks, item_mask, key, item_stream) -> Plan:
    """Item ``k`` takes its mask's columns of row ``i`` from row ``pi_k(i)``, a permutation
    seeded by ``key`` (a PRNG key, or its data as a tuple of ints) and the item's stream label
    (e.g. ``(feature, repeat)``)."""
    item_mask = _ints(item_mask, "item_mask")
    return Plan(_masks(masks), item_mask, "permutation",
                item_stream=_streams(item_stream, item_mask.shape[0]), key_bits=_key_bits(key))


def at_drawn_rows(masks, item_mask, key, item_stream, weights=None) -> Plan:
    """Item ``k`` takes its mask's columns of row ``i`` from a row drawn with replacement,
    uniformly or with probability proportional to ``weights``, seeded by ``key``, the item's
    stream label and ``i``."""
    item_mask = _ints(item_mask, "item_mask")
    cdf = None
    if weights is not None:
        cdf = np.cumsum(np.asarray(weights, np.float64))
        cdf = cdf / cdf[-1]
    return Plan(_masks(masks), item_mask, "draw",
                item_stream=_streams(item_stream, item_mask.shape[0]), key_bits=_key_bits(key),
                draw_cdf=cdf)


def at_coded_values(masks, item_mask, table, row_codes, item_code, item_offset) -> Plan:
    """Item ``k`` sets row ``i``'s masked columns to ``table[item_offset[k] +
    row_codes[item_code[k], i]]``: values chosen per row (e.g. the edges of its ALE bin)."""
    masks = _masks(masks)
    codes = np.asarray(row_codes, dtype=np.int32)
    codes = codes[None] if codes.ndim == 1 else codes
    return Plan(masks, _ints(item_mask, "item_mask"), "code",
                table=np.asarray(table, np.float64).reshape(-1, masks.shape[1]),
                item_index=_ints(item_offset, "item_offset"), row_codes=codes,
                item_code=_ints(item_code, "item_code"))
