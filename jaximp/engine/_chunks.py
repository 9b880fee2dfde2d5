"""The evaluation of a chunk of blocks of items x rows: a block's modified rows, the model on
them and the reducer's partials; one jitted call for a JAX model, jitted pieces around the
model for a model on another framework's arrays."""

from __future__ import annotations

import functools
import weakref

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

from ..data import Recent
from ..models import Predictor
from ._blocks import Sizes as _Sizes
from ._device_arrays import source_index
from ._reducers import Reducer

__all__ = ["chunk_function", "zeros"]

_CHUNK_FUNCTIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_FOREIGN_PIECES = Recent()  # the jitted pieces around models on other frameworks
_FOREIGN_PIECES_KEPT = 32


def _block_pieces(index: str, reducer: Reducer, sizes: _Sizes, mesh, dtype,
                  single_column: bool, drawn: str | None, o: int, name: str):
    """A block's evaluation without the model, in three traceable pieces:
    ``inputs(X, tables, rowdata, counts, item0, row0) -> (flat (D * ib * rbl, c), valid)``,
    the modified rows the model is called on; ``outputs(pred, D * ib * rbl) -> (ib, o,
    D * rbl)``, its predictions checked and laid out for the reducer; and ``reduced(pred,
    valid, rowdata, consts, items, row0, n_rows)``, the reducer's partials."""
    ib, rbl = sizes.items_per_block, sizes.rows_per_block
    row_sharding = None if mesh is None else NamedSharding(mesh, PartitionSpec("rows"))

    def inputs(X, tables, rowdata, counts, item0, row0):
        n, n_local = counts[0], counts[1]
        n_dev = X.shape[0]
        items = item0 + jnp.arange(ib)
        local = row0 + jnp.arange(rbl)  # (rbl,)
        g = jnp.arange(n_dev)[:, None] * n_local + local[None, :]  # (D, rbl) global rows
        valid = (local[None, :] < n_local) & (g < n)
        g = jnp.where(valid, g, 0)
        base = jax.lax.dynamic_slice_in_dim(X, row0, rbl, axis=1)  # (D, rbl, c)
        mask = tables["masks"][tables["item_mask"][items]][:, None, None, :]  # (ib,1,1,c)
        if index == "item" and "table" in tables:
            values = tables["table"][tables["item_index"][items]][:, None, None, :]
        elif index == "item":  # data rows: gathered from the rows on the devices
            src = tables["item_index"][items]  # (ib,) global rows
            if n_dev > 1:  # the flat position of global row src in the (D, n_local_pad) layout
                src = (src // n_local) * X.shape[1] + src % n_local
            values = X.reshape(-1, X.shape[-1])[src][:, None, None, :]  # (ib, 1, 1, c)
        elif index == "code":
            codes = jax.lax.dynamic_slice_in_dim(rowdata["_codes"], row0, rbl, axis=1)
            picked = jnp.take(codes, tables["item_code"][items], axis=2)  # (D, rbl, ib)
            idx = tables["item_index"][items][:, None, None] + jnp.moveaxis(picked, 2, 0)
            values = tables["table"][idx]  # (ib, D, rbl, c)
        elif drawn == "source_values":  # an Explainer's replacement values, drawn once
            start = tuple(jnp.asarray(i, jnp.int32) for i in (items[0], row0))  # under x64 too
            values = jax.lax.dynamic_slice(tables["source_values"], start, (ib, rbl))
            values = values[:, None, :, None]  # (ib, 1, rbl, 1): the replaced column
        else:
            if drawn == "source_rows":  # an Explainer's permutations, drawn once
                src = jax.lax.dynamic_slice_in_dim(tables["source_rows"][items], row0, rbl,
                                                   axis=1)[:, None, :]  # (ib, 1, rbl)
            else:
                src = source_index(index, tables["key"], tables["stream"][items], g, n,
                                    counts[3:], tables.get("cdf"))  # (ib, D, rbl) global rows
            if n_dev > 1:  # the flat position of global row src in the (D, n_local_pad) layout
                src = (src // n_local) * X.shape[1] + src % n_local
            flat_X = X.reshape(-1, X.shape[-1])
            if single_column:  # gather only the replaced column: 4 bytes per row, not a row
                column = tables["column"][tables["item_mask"][items]]  # (ib,)
                values = flat_X[src, column[:, None, None]][..., None]  # (ib, D, rbl, 1)
            else:
                values = flat_X[src]  # (ib, D, rbl, c)
        modified = jnp.where(mask, values, base[None]).astype(dtype)  # (ib, D, rbl, c)
        flat = jnp.moveaxis(modified, 1, 0).reshape(n_dev * ib * rbl, -1)
        if row_sharding is not None:
            flat = jax.lax.with_sharding_constraint(flat, row_sharding)
        return flat, valid

    def outputs(pred, n_rows):
        """(ib, o, rows): rows last, so the reducer's loops vectorize along them. Padding rows
        repeat a real row's modification (finite predictions); reducers weight them 0."""
        if pred.size != n_rows * o:  # found while tracing, before any evaluation
            raise ValueError(
                f"the model {name} returned shape {tuple(pred.shape)} for a batch of {n_rows} "
                f"rows, but {o} output(s) per row when it was wrapped (as_predictor, or when "
                "the Explainer was made): a model's outputs must not change between calls. "
                "Wrap the changed model again (a new Explainer).")
        n_dev = n_rows // (ib * rbl)
        pred = pred.reshape(n_dev, ib, rbl, o).astype(dtype)
        return jnp.transpose(pred, (1, 3, 0, 2)).reshape(ib, o, n_dev * rbl)

    def reduced(pred, valid, rowdata, consts, items, row0, n_rows):
        """The reducer's partials of predictions (items, o, D * n_rows) of rows row0..."""
        rows = {name: jax.lax.dynamic_slice_in_dim(a, row0, n_rows, axis=1).reshape(
            -1, *a.shape[2:]) for name, a in rowdata.items() if name != "_codes"}
        return reducer.partial(pred, rows, valid.reshape(-1).astype(dtype), items, consts, jnp)

    return inputs, outputs, reduced


def chunk_function(predictor: Predictor, index: str, reducer: Reducer, sizes: _Sizes,
                    mesh, dtype, single_column: bool, drawn: str | None = None,
                    reduce_once: bool = False, host_output=None):
    """The jitted evaluation of one chunk, cached per model apply function and geometry;
    ``drawn``: the table of draws made once (``with_drawn_sources``), or None;
    ``reduce_once``: the chunk's predictions reduced together, not block by block;
    ``host_output``: a device whose pinned host memory takes the chunk's output (its few
    totals then need no copy of their own when read), or None. A model on
    another framework's arrays gets :func:`_foreign_chunk`, with the same arguments and
    output."""
    if predictor.device_fn is not None:
        return _foreign_chunk(predictor, index, reducer, sizes, dtype, single_column, drawn)
    cache = _CHUNK_FUNCTIONS.setdefault(predictor.apply, {})
    key = (index, reducer.key(), reducer.combine, reducer.group, sizes, predictor.n_outputs,
           np.dtype(dtype).str, None if mesh is None else tuple(mesh.devices.flat),
           single_column, drawn, reduce_once, host_output)
    if key in cache:
        return cache[key]
    apply, o = predictor.apply, predictor.n_outputs
    ib, rbl = sizes.items_per_block, sizes.rows_per_block
    n_rb = sizes.row_blocks
    inputs, outputs, reduced = _block_pieces(index, reducer, sizes, mesh, dtype, single_column,
                                             drawn, o, predictor.name)

    def predictions(params, X, tables, rowdata, counts, item0, row0):
        """(ib, o, D * rbl) predictions of one block, and its rows' validity (D, rbl)."""
        flat, valid = inputs(X, tables, rowdata, counts, item0, row0)
        return outputs(apply(params, flat), flat.shape[0]), valid

    def block(params, X, tables, rowdata, consts, counts, item0, row0):
        pred, valid = predictions(params, X, tables, rowdata, counts, item0, row0)
        return reduced(pred, valid, rowdata, consts, item0 + jnp.arange(ib), row0, rbl)

    def chunk(params, X, tables, rowdata, consts, counts, item0, row0):
        def over_blocks(per_block):
            """``per_block(first item, first row)`` of each of the chunk's blocks, stacked;
            the last chunk's padding item blocks are skipped (zeros), not evaluated."""
            def one(k):
                first = item0 + (k // n_rb) * ib
                run = functools.partial(per_block, first, row0 + (k % n_rb) * rbl)
                skipped = jax.eval_shape(run)
                return jax.lax.cond(first < counts[2], run, lambda: zeros(skipped))

            return jax.lax.map(one, jnp.arange(sizes.item_blocks * n_rb))

        if sizes.item_blocks * n_rb == 1:  # a chunk's first item is always real
            return block(params, X, tables, rowdata, consts, counts, item0, row0)[None]
        if not reduce_once:
            return over_blocks(lambda first, row: block(params, X, tables, rowdata, consts,
                                                        counts, first, row))
        pred = over_blocks(lambda first, row: predictions(params, X, tables, rowdata, counts,
                                                          first, row)[0])
        return reduced_at_once(pred, rowdata, consts, counts, item0, row0)

    def reduced_at_once(pred, rowdata, consts, counts, item0, row0):
        """One reduction of a chunk's predictions (blocks, ib, o, rbl), in the layout of
        per-block partials: a mean's small operations per block cost up to ~9% of a small
        model's evaluation on CPU (partial dependence, [10, 64, 64, 1] MLP, n = 100,000:
        1.09x the floor against 1.19x); a loss's few fused ones cost less than keeping them
        (1.17x against 1.22x at n = 100,000)."""
        pred = pred.reshape(sizes.item_blocks, n_rb, ib, o, rbl)
        pred = jnp.transpose(pred, (0, 2, 3, 1, 4)).reshape(sizes.items_per_chunk, o, -1)
        local = row0 + jnp.arange(sizes.rows_per_chunk)
        valid = (local < counts[1]) & (local < counts[0])
        out = reduced(pred, valid, rowdata, consts, item0 + jnp.arange(sizes.items_per_chunk),
                      row0, sizes.rows_per_chunk)
        # (item blocks x row blocks, ib / group, ...): the first row block's partials hold the
        # sums over all the chunk's rows
        out = out.reshape(sizes.item_blocks, 1, -1, *out.shape[1:])
        out = jnp.pad(out, [(0, 0), (0, n_rb - 1)] + [(0, 0)] * (out.ndim - 2))
        return out.reshape(sizes.item_blocks * n_rb, *out.shape[2:])

    cache[key] = jax.jit(chunk, out_shardings=None if host_output is None else
                         SingleDeviceSharding(host_output, memory_kind="pinned_host"))
    return cache[key]


def zeros(like):
    """Zeros of the shape and dtype of ``like``, float64 too (CPU means' partials) in a
    process without ``jax_enable_x64``."""
    with jax.enable_x64(True):
        return jnp.zeros(like.shape, like.dtype)


def _foreign_chunk(predictor: Predictor, index: str, reducer: Reducer, sizes: _Sizes, dtype,
                   single_column: bool, drawn: str | None):
    """A chunk of a model on another framework's arrays (``predictor.device_fn``: a torch
    module, a function of CuPy arrays), called as a jitted chunk is and giving its output: for
    each block, jitted JAX builds the rows on the rows' device, the model gets them through
    DLPack (no copy where it runs on that device), and jitted JAX reduces its predictions
    there. The chunk is made per call (its model may differ where ``apply`` is shared); its
    jitted pieces, which do not read the model, are kept per geometry and reducer kind."""
    o, name = predictor.n_outputs, predictor.name
    key = (reducer.key(), reducer.combine, reducer.group, sizes, o, name, index,
           np.dtype(dtype).str, single_column, drawn)

    def make():
        inputs, outputs, reduced = _block_pieces(index, reducer, sizes, None, dtype,
                                                 single_column, drawn, o, name)

        def finish(pred, valid, rowdata, consts, item0, row0):
            return reduced(outputs(pred, ib * rbl), valid, rowdata, consts,
                           item0 + jnp.arange(ib), row0, rbl)

        return jax.jit(inputs), jax.jit(finish)

    ib, rbl, n_rb = sizes.items_per_block, sizes.rows_per_block, sizes.row_blocks
    inputs, finish = _FOREIGN_PIECES.get(key, make, keep=_FOREIGN_PIECES_KEPT)

    def chunk(params, X, tables, rowdata, consts, counts, item0, row0):
        n_items, item0, row0 = int(counts[2]), int(item0), int(row0)
        outs = []
        for k in range(sizes.item_blocks * n_rb):
            first, row = np.int32(item0 + k // n_rb * ib), np.int32(row0 + k % n_rb * rbl)
            if first >= n_items:  # the last chunk's padding item blocks: zeros
                outs.append(jnp.zeros_like(outs[0]))
                continue
            flat, valid = inputs(X, tables, rowdata, counts, first, row)
            pred = predictor.device_fn(flat)
            if not isinstance(pred, jax.Array):
                raise TypeError(f"the model {name} returned a {type(pred).__name__}; a model "
                                "called through DLPack returns a jax.Array.")
            if pred.devices() != flat.devices():  # a model on the host or another device
                pred = jax.device_put(pred, next(iter(flat.devices())))
            outs.append(finish(pred, valid, rowdata, consts, first, row))
        return jnp.stack(outs)

    return chunk
