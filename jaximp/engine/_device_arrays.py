"""What the engine sends to the devices: the data rows in their device layout, a plan's
tables, the source rows of permutation and draw plans, and the small arrays an Explainer's
repeated calls keep there instead of sending them again."""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from jaximp.kernels import _streams

from ..data import Recent
from ._distributed import replicate, shard_rows, to_host
from ._plans import Plan

__all__ = ["bucket", "device_rows", "kept_on_device", "layout_rows", "pad_items", "plan_tables",
           "plan_source_row_blocks", "plan_source_rows", "source_index", "source_rows",
           "with_drawn_sources", "with_kept_source_rows"]

_PLAN_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# device tables of recent plans by content, so that an equal plan built again reuses them
_TABLES_BY_CONTENT: "collections.OrderedDict" = collections.OrderedDict()
_TABLES_BY_CONTENT_SIZE = 64
# the source rows of the last few permutation and draw plans of plain calls, by what they are
# drawn from (with_kept_source_rows)
_KEPT_SOURCE_ROWS = Recent()
_KEPT_SOURCE_ROWS_SIZE = 2


def bucket(size: int, minimum: int = 8) -> int:
    """``size`` rounded up to a multiple of an eighth of its power of two (at most 12.5% more),
    so that a new size often reuses a compiled chunk."""
    size = max(int(size), minimum)
    step = max(1, 1 << max(0, (size - 1).bit_length() - 4))
    return -(-size // step) * step


def source_index(index: str, key, streams, g, n, radices, cdf=None):
    """Source data rows (ib, ...) for items with stream labels (ib, s) at global rows g;
    ``radices`` (2,) of the permutations from ``_streams.feistel_radices(n)``."""
    seeds = jax.vmap(lambda s: _streams.seed_of(key, s))(streams)
    if index == "permutation":
        return jax.vmap(lambda seed: _streams.feistel_permutation(seed, g, n, radices))(seeds)
    if cdf is None:
        return jax.vmap(lambda seed: _streams.uniform_rows(seed, g, n))(seeds)
    return jax.vmap(lambda seed: _streams.weighted_rows(seed, g, cdf, n))(seeds)


def layout_rows(array: np.ndarray, n_devices: int, n_local: int, n_local_pad: int, dtype=None):
    """(n, ...) -> (devices, n_local_pad, ...): device d holds rows d*n_local .. +n_local.

    Padding rows repeat row 0, so a model sees only real rows (their weight is 0)."""
    array = np.asarray(array)
    dtype = array.dtype if dtype is None else np.dtype(dtype)
    if n_devices == 1 and array.shape[0] == n_local_pad:
        return array.astype(dtype, copy=False)[None]
    out = np.empty((n_devices, n_local_pad, *array.shape[1:]), dtype)
    for d in range(n_devices):  # rows cast to ``dtype`` as they are copied: one pass
        part = array[d * n_local:(d + 1) * n_local]
        out[d, : part.shape[0]] = part
        out[d, part.shape[0]:] = array[0]
    return out


def pad_items(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` with zero rows appended up to ``size`` rows."""
    out = np.zeros((size, *array.shape[1:]), array.dtype)
    out[: array.shape[0]] = array
    return out


def plan_tables(plan: Plan, items_pad: int, dtype, mesh, device=None) -> tuple[dict, bool]:
    """The plan's tables padded to ``items_pad`` items, replicated on the devices (``device``
    where one was asked for without a mesh; kept for the plan's lifetime: a plan is
    immutable, and a method asked again with the same settings builds the same plan object),
    and whether every mask replaces one column."""
    per_plan = _PLAN_TABLES.setdefault(plan, {})
    key = (items_pad, np.dtype(dtype).str,
           device if mesh is None else tuple(mesh.devices.flat))
    if key in per_plan:
        return per_plan[key]
    content = _plan_digest(plan)  # an equal plan built again (a method asked again)
    if content is not None and (content, key) in _TABLES_BY_CONTENT:
        _TABLES_BY_CONTENT.move_to_end((content, key))
        per_plan[key] = _TABLES_BY_CONTENT[content, key]
        return per_plan[key]
    tables = {"masks": plan.masks, "item_mask": pad_items(plan.item_mask, items_pad)}
    if plan.table is not None:
        tables["table"] = np.pad(plan.table, ((0, bucket(len(plan.table), 1)
                                               - len(plan.table)), (0, 0))).astype(dtype)
    for name in ("item_index", "item_code"):
        value = getattr(plan, name)
        if value is not None:
            tables[name] = pad_items(value, items_pad)
    if plan.item_stream is not None:
        tables["stream"] = pad_items(plan.item_stream, items_pad)
        tables["key"] = plan.key_bits
    if plan.draw_cdf is not None:
        tables["cdf"] = plan.draw_cdf.astype(np.float32)
    # every mask replaces at most one column: data-row replacements gather just that column
    single_column = plan.index in ("permutation", "draw") and plan.masks.sum(axis=1).max() <= 1
    if single_column:
        tables["column"] = np.argmax(plan.masks, axis=1).astype(np.int32)
    per_plan[key] = replicate(tables, mesh), bool(single_column)
    if content is not None:
        _TABLES_BY_CONTENT[content, key] = per_plan[key]
        if len(_TABLES_BY_CONTENT) > _TABLES_BY_CONTENT_SIZE:
            _TABLES_BY_CONTENT.popitem(last=False)
    return per_plan[key]


def _plan_digest(plan: Plan) -> bytes | None:
    """A digest of a small plan's arrays (None past 1 MiB: hashing would cost more than the
    copy it saves)."""
    arrays = [(field.name, getattr(plan, field.name)) for field in dataclasses.fields(plan)]
    arrays = [(name, a) for name, a in arrays if isinstance(a, np.ndarray)]
    if sum(a.nbytes for _, a in arrays) > 1 << 20:
        return None
    digest = hashlib.blake2b(plan.index.encode(), digest_size=16)
    for name, a in arrays:
        digest.update(f"{name}{a.dtype.str}{a.shape}".encode())
        digest.update(np.ascontiguousarray(a).data)
    return digest.digest()


@functools.partial(jax.jit, static_argnames=("index", "n_rows"))
def _source_rows_of(index, key, streams, radices, cdf, n, n_rows):
    g = jnp.arange(n_rows)
    g = jnp.where(g < n, g, 0)
    return source_index(index, key, streams, g[None, :], n, radices, cdf)[:, 0, :]


def source_rows(index: str, tables: dict, n: int, n_rows: int):
    """The source row of every (item, row) of a permutation or draw plan, (items, n_rows):
    the draws the chunks would make, made once for an Explainer's repeated calls."""
    radices = jax.device_put(np.asarray(_streams.feistel_radices(n), np.int32))
    return _source_rows_of(index, tables["key"], tables["stream"], radices, tables.get("cdf"),
                           jax.device_put(np.int32(n)), n_rows)


def plan_source_rows(plan: Plan, n: int, memory_budget: int) -> np.ndarray:
    """The source row of every item and row of a permutation or draw ``plan`` over ``n``
    rows, (items, n) int32 on the host: the rows the engine's chunks take each item's
    replaced values from, drawn on the device in calls of as many items as fit the budget.

    Examples
    --------
    >>> from jaximp.engine import at_permuted_rows
    >>> plan = at_permuted_rows(np.ones((1, 1), bool), [0, 0], (0, 7), [(0, 0), (0, 1)])
    >>> rows = plan_source_rows(plan, 5, 1 << 20)
    >>> rows.shape, sorted(rows[1].tolist())
    ((2, 5), [0, 1, 2, 3, 4])
    """
    return np.concatenate(list(plan_source_row_blocks(plan, n, memory_budget)))


def plan_source_row_blocks(plan: Plan, n: int, memory_budget: int):
    """:func:`plan_source_rows` in blocks of consecutive items, (items in the block, n) int32
    each, made as they are asked for: as many items at a time as fit the budget.

    Examples
    --------
    >>> from jaximp.engine import at_permuted_rows
    >>> plan = at_permuted_rows(np.ones((1, 1), bool), [0] * 3, (0, 7), [(0, 0), (0, 1), (0, 2)])
    >>> [block.shape for block in plan_source_row_blocks(plan, 4, 2 * 32 * 4)]
    [(2, 4), (1, 4)]
    """
    streams = plan.item_stream
    tables = {"key": jax.device_put(np.asarray(plan.key_bits))}
    if plan.draw_cdf is not None:
        tables["cdf"] = jax.device_put(np.asarray(plan.draw_cdf, np.float32))
    step = min(len(streams), max(1, memory_budget // (32 * n)))  # ~8 int32 temporaries a row
    for i in range(0, len(streams), step):
        block = source_rows(plan.index, dict(tables, stream=jax.device_put(
            pad_items(streams[i:i + step], step))), n, n)
        yield to_host(block)[: len(streams) - i]


@jax.jit
def _source_values_of(X, rows, column, item_mask):
    return X[0][rows, column[item_mask][:, None]]


def with_drawn_sources(index: str, tables: dict, X, n: int, single_column: bool) -> dict:
    """The masks of ``tables`` and the draws of a permutation or draw plan, made once for an
    Explainer's repeated calls on one device holding X (1, n_rows, c): ``"source_values"``
    (items, n_rows), the replacement value itself when every item replaces one column (a
    chunk then reads it without gathering an index and then a row), else ``"source_rows"``."""
    rows = source_rows(index, tables, n, X.shape[1])
    # the chunk then reads the masks and the draws alone: the keys, streams and columns the
    # draws were made from stay out of its arguments (each costs its dispatch time)
    kept = {"masks": tables["masks"], "item_mask": tables["item_mask"]}
    if single_column:
        return dict(kept, source_values=_source_values_of(X, rows, tables["column"],
                                                          tables["item_mask"]))
    return dict(kept, source_rows=rows)


def with_kept_source_rows(plan: Plan, tables: dict, n: int, n_rows: int,
                          single_column: bool, device=None) -> dict:
    """The tables of a permutation or draw ``plan`` with its source rows, (items, n_rows),
    drawn once and kept by what they are drawn from (the key, the items' streams, the draw
    weights, n): the rows only, never the data, so a plain call on a new array (which keeps
    nothing of it) repeated with the same random state reuses them for any data or model.
    The last two are kept. Permutation importance at n = 100,000 on a 2-core CPU spent about
    12 ms of every call on its permutations."""
    cdf = (None if plan.draw_cdf is None
           else hashlib.blake2b(np.ascontiguousarray(plan.draw_cdf).tobytes()).digest())
    key = (plan.index, tuple(np.asarray(plan.key_bits).tolist()), plan.item_stream.shape,
           np.ascontiguousarray(plan.item_stream).tobytes(), tables["stream"].shape[0], cdf,
           n, n_rows, device)
    rows = _KEPT_SOURCE_ROWS.get(key, lambda: source_rows(plan.index, tables, n, n_rows),
                                 keep=_KEPT_SOURCE_ROWS_SIZE)
    kept = {"masks": tables["masks"], "item_mask": tables["item_mask"], "source_rows": rows}
    if single_column:  # the chunk gathers that column of each source row
        kept["column"] = tables["column"]
    return kept


def device_rows(data, n_dev: int, n_local: int, n_local_pad: int, dtype, mesh, device=None):
    """The dataset's rows in the engine's device layout (on ``device`` where one was asked
    for without a mesh). Rows the user gave as a ``jax.Array`` on one device are padded
    there, or moved to ``device`` directly: they never travel through the host."""
    given = data.device_X
    if given is None or mesh is not None or n_dev != 1:
        return shard_rows(layout_rows(data.X, n_dev, n_local, n_local_pad, dtype), mesh)
    if device is not None and given.devices() != {device}:
        given = jax.device_put(given, device)
    rows = given.astype(dtype)
    if n_local_pad > rows.shape[0]:  # padding repeats row 0, as layout does
        rows = jnp.concatenate([rows, jnp.broadcast_to(
            rows[:1], (n_local_pad - rows.shape[0], rows.shape[1]))])
    return rows[None]


def kept_on_device(data, kind, tree, put):
    """``put()`` of a pytree whose host leaves are small, kept per dataset and content: an
    Explainer's repeated call then sends nothing to the devices. Host contents past 1 MiB
    are sent again each call (hashing them costs more than the copy); leaves already on a
    device (a model's parameters) are known by identity, never read back to hash them (the
    kept entry holds them, so their ids are not reused while it is kept)."""
    leaves = jax.tree_util.tree_leaves(tree)
    on_host = [np.asarray(leaf) for leaf in leaves if not isinstance(leaf, jax.Array)]
    if sum(leaf.nbytes for leaf in on_host) > 1 << 20:
        return put()
    digest = hashlib.blake2b(repr(kind).encode(), digest_size=16)
    for leaf in leaves:
        if isinstance(leaf, jax.Array):
            digest.update(f"device array {id(leaf)}".encode())
            continue
        leaf = np.asarray(leaf)
        digest.update(f"{leaf.dtype.str}{leaf.shape}".encode())
        digest.update(np.ascontiguousarray(leaf).data)
    return data.recent("device arguments", digest.digest(), lambda: (tree, put()),
                       _TABLES_BY_CONTENT_SIZE)[1]


