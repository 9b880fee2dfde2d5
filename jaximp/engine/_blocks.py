"""Chunk geometry: how many items and rows one block holds, and how many blocks one chunk
(one jitted call) holds, within a memory budget."""

from __future__ import annotations

import dataclasses
import functools
import math

from ._device_arrays import bucket

__all__ = ["Sizes", "sizes"]

# One chunk (one jitted call) holds at most this many blocks, so that progress keeps moving
# and the partials of a chunk stay small.
MAX_BLOCKS_PER_CHUNK = 64


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Chunk geometry: items and per-device rows of one block, blocks of one chunk."""

    items_per_block: int
    rows_per_block: int  # per device
    item_blocks: int  # per chunk
    row_blocks: int  # per chunk

    @property
    def items_per_chunk(self) -> int:
        return self.items_per_block * self.item_blocks

    @property
    def rows_per_chunk(self) -> int:
        return self.rows_per_block * self.row_blocks


@functools.lru_cache(maxsize=256)  # a pure function of numbers, asked again by every call
def sizes(n_items: int, n_local: int, n_devices: int, row_bytes: float, partial_bytes: float,
           budget: float, block_rows: int, group: int, row_unit: int = 256,
           kept_bytes: float = 0.0) -> Sizes:
    """Block and chunk sizes: a block's rows (all devices) fit ``block_rows`` and half the
    budget; a chunk's partials (one per block), and the ``kept_bytes`` per item and row it
    keeps until its reduction, fit a quarter of it.

    When one block holds every row, the rows are padded to a bucket size (a new n in the same
    bucket reuses the compiled chunk) and several items share the block, where they can as
    many as fill whole multiples of ``row_unit`` rows. Otherwise blocks hold
    a multiple of ``row_unit`` rows, from half the largest block to all of it, that pads the
    rows least (balanced multiples of 256 when ``row_unit`` does not fit that range).
    """
    rows_fit = max(1, int(budget // (2 * row_bytes)))
    block_total = max(1, min(block_rows, rows_fit))
    rows_per_block = max(1, block_total // (n_devices * group))
    if rows_per_block >= n_local:  # all rows in one block, shared by several items
        rows_per_block = min(bucket(n_local), rows_per_block)
        block_rows_total = rows_per_block * n_devices
        items_per_block = _items_per_block(
            n_items, min(rows_fit, block_total) // max(1, block_rows_total), group,
            row_unit // math.gcd(row_unit, block_rows_total))
        row_blocks = 1
    else:
        items_per_block = group
        rows_per_block = _rows_per_block(n_local, rows_per_block, row_unit)
        row_blocks = math.ceil(n_local / rows_per_block)
    item_blocks_total = math.ceil(n_items / items_per_block)
    per_block = max(1.0, (partial_bytes + kept_bytes * rows_per_block * n_devices)
                    * items_per_block)
    blocks = max(1, min(MAX_BLOCKS_PER_CHUNK, int(budget // 4 // per_block)))
    row_blocks_per_chunk = min(row_blocks, blocks)
    row_chunks = math.ceil(row_blocks / row_blocks_per_chunk)
    row_blocks_per_chunk = math.ceil(row_blocks / row_chunks)  # balance the row chunks
    item_blocks = max(1, min(item_blocks_total, blocks // row_blocks_per_chunk))
    n_chunks = math.ceil(item_blocks_total / item_blocks)
    item_blocks = math.ceil(item_blocks_total / n_chunks)  # balance: no mostly-padding chunk
    return Sizes(items_per_block, rows_per_block, item_blocks, row_blocks_per_chunk)


def _rows_per_block(n_local: int, most: int, unit: int) -> int:
    """Rows per block for ``n_local`` rows in blocks of at most ``most``: the multiple of
    ``unit`` from ``most / 2`` to ``most`` that pads least (ties to the larger); with none
    or too many of them (an accelerator's huge blocks), the balanced block rounded up to a
    multiple of 256."""
    candidates = range(-(-most // 2 // unit) * unit, most // unit * unit + 1, unit)
    if 0 < len(candidates) <= 64:
        return min(candidates, key=lambda rows: (-(-n_local // rows) * rows, -rows))
    blocks = math.ceil(n_local / most)
    return min(most, -(-math.ceil(n_local / blocks) // 256) * 256)


def _items_per_block(n_items: int, most: int, group: int, tile: int = 1) -> int:
    """Items per block: the fewest blocks of at most ``most`` items (a multiple of
    ``group``), balanced so that they pad least, then rounded up to a multiple of ``tile``
    where that fits ``most`` and adds at most an eighth.

    Every block costs XLA's fixed price per operation again: all H pairs at p = 10, n = 500
    (27,500 items of 512 rows, an [10, 64, 64, 1] MLP) ran 1.10x the floor in 860 blocks of
    32 items, 1.23x in 1,100 of 25 (the fewest padding items) and 1.29x in 1,146 of 24.
    ``tile``: the items whose rows fill whole row tiles of every thread (see ``sizes``):
    permutation importance at n = 1,000 (51 items of 1,024 rows, the same MLP, 2 threads)
    ran its chunks at 1.06-1.25x the floor in 4 blocks of 14 items, 1.24-1.59x in 4 of 13
    (three runs, the two side by side).

    Examples
    --------
    >>> _items_per_block(51, 12, 1), _items_per_block(51, 60, 1), _items_per_block(10, 4, 3)
    (11, 51, 3)
    >>> _items_per_block(51, 16, 1, tile=2), _items_per_block(51, 13, 1, tile=2)
    (14, 13)
    >>> _items_per_block(7, 50, 1, tile=128)  # 121 padding items would cost more
    7
    """
    most = max(group, most // group * group)
    n_blocks = -(-n_items // most)
    balanced = -(-(-(-n_items // n_blocks)) // group) * group
    step = math.lcm(group, tile)
    tiled = -(-balanced // step) * step
    return tiled if tiled <= most and 8 * (tiled - balanced) <= balanced else balanced
