"""The one evaluation engine behind every model-based method: a plan plus a reducer.

A :class:`~jaximp.Plan` says which modified copies of the data to evaluate (items); a
:class:`~jaximp.Reducer` says what to keep of the predictions. The engine owns the
rest, once: the chunk plan (items x rows per jitted call, cache-sized blocks inside it) that
keeps the whole call within ``memory_budget`` plus the result, ``jit`` with the model's
parameters as arguments (one compiled chunk serves every chunk, every model of the same
architecture and every n in the same size bucket), rows sharded over all devices of all
processes, random indices computed inside the chunk, float64 folding of the partial sums on the
host, progress, host models (NumPy / scikit-learn) called on host-built batches in the
user's own types, and models on other frameworks' arrays (torch, CuPy) called through DLPack
on batches built on a device.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import math
import os
import sys
import time
import weakref
from typing import Any

import jax
import numpy as np

from jaximp.kernels import _streams

from ..data import SHARED, Dataset, Deferred, as_dataset, validate_params
from ..models import Predictor
from ._blocks import sizes as _sizes
from ._chunks import chunk_function as _chunk_function
from ._device_arrays import (
    bucket,
    device_rows,
    kept_on_device,
    layout_rows,
    pad_items,
    plan_tables,
    source_index,
    with_drawn_sources,
    with_kept_source_rows,
)
from ._distributed import (
    agree_min,
    global_mesh,
    host_reader,
    is_main_process,
    replicate,
    shard_rows,
    start_host_copy,
    to_host,
)
from ._plans import Plan, at_values
from ._reducers import Keep, Reducer

__all__ = ["evaluate", "predict_rows", "default_memory_budget", "resolve_budget", "ProgressMeter",
           "check_result_fits"]

_BYTES_PER_ROW: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_EVALUATIONS_KEPT = 8  # per pinned dataset: each holds its reducer's per-row arrays on the devices
# the largest table of drawn source rows an Explainer keeps: this, or a sixteenth of the
# budget (a GPU's 1M rows x 51 permutations, 204 MB), against drawing them in every call
# (permutation importance at n = 1M on CPU: 330 -> 167 ms per call with a near-free model)
_SOURCE_ROWS_BYTES = 16 << 20
# and a plain call keeps its draws (with_kept_source_rows) up to this size, twice at most
_KEPT_SOURCE_ROWS_BYTES = 64 << 20
_PROBE_ROWS = 1024
# On CPU a model evaluated on blocks of about 8-16k rows whose activations stay in cache is
# several times faster than one huge batch; accelerators take one block per chunk. Within that
# range larger blocks amortize XLA's fixed cost per operation in the loop (all H pairs at p = 10,
# n = 300: 347 ms with blocks of 10,560 rows, 301 ms with 16,320, the floor 266 ms). Kept
# predictions (ICE) stay at 12,288 rows: 16,384 raised ICE's peak at a 64 MiB budget by 20 MiB.
_CPU_BLOCK_ROWS = 16384
# A model XLA fuses whole (no temporaries) has no activations to keep in cache: its blocks
# are bounded by the budget, and fewer blocks cost fewer loop steps (all H pairs at p = 10,
# n = 100: one block of 676k rows, 0.38-0.39 ms for the device's part, against 42 blocks of
# 16k rows, 0.74-0.83 ms)
_CPU_FUSED_BLOCK_ROWS = 1 << 20
_CPU_KEEP_BLOCK_ROWS = 12288
# XLA's CPU backend splits a product's rows over its threads in tiles of 1024: a block of a
# whole number of tiles per thread keeps every thread busy (an [10, 64, 64, 1] MLP on 2 cores:
# 54 ns per row at 12,288 or 14,336 rows, 58-61 at 11,264 or 13,312).
_CPU_ROW_TILE = 1024
_CPU_BLOCK_BYTES = 16 << 20
# Bytes per item, row and output that a chunk reduced at once keeps: its predictions and the
# reducer's temporaries on them (a mean's float64 copy of them).
_KEPT_BYTES_PER_OUTPUT = 20.0
# ...where a block holds at least this many rows: with many items of few rows each (the
# H-statistic's 6,600 items of 104 rows), one reduction of the kept predictions costs more
# than the per-block ones (all H pairs at p = 10, n = 100: 1.23-1.30 ms against 0.93-0.95)
_REDUCE_ONCE_MIN_ROWS = 1024
_HOST_BLOCK_ROWS = 65536
_FOREIGN_BLOCK_BYTES = 64 << 20  # a foreign model's input per block on an accelerator


def default_memory_budget() -> int:
    """Bytes a whole call may use beyond its result: a quarter of the accelerator's memory, or
    1 GiB on CPU.

    Override with the ``JAXIMP_MEMORY_BUDGET`` environment variable (bytes) or the
    ``memory_budget`` argument of any method.
    """
    env = os.environ.get("JAXIMP_MEMORY_BUDGET")
    if env:
        try:
            value = float(env)
        except ValueError:
            value = float("nan")
        if not (1 << 16) <= value < float("inf"):  # also NaN
            raise ValueError(
                f"JAXIMP_MEMORY_BUDGET must be a number of bytes >= 65536 (e.g. 2e9); got "
                f"{env!r}. Fix or unset the environment variable."
            )
        return int(value)
    return _device_budget(jax.local_devices()[0])


@functools.lru_cache(maxsize=None)
def _device_budget(device) -> int:
    """A quarter of an accelerator's memory (asked once per device); 1 GiB on CPU."""
    if device.platform != "cpu":
        try:
            return int(device.memory_stats()["bytes_limit"] // 4)
        except (AttributeError, KeyError, TypeError, RuntimeError):
            pass
    return 1 << 30


def resolve_budget(memory_budget) -> int:
    """``memory_budget`` validated, or the default budget for None."""
    SHARED["memory_budget"].check("memory_budget", memory_budget)
    return default_memory_budget() if memory_budget is None else int(memory_budget)


def _bytes_per_row(predictor: Predictor, n_columns: int, dtype) -> tuple[float, float]:
    """Device bytes one evaluated row costs (the modified input, the model's temporaries and
    its output), and of them the model's temporaries, from the compiler's memory analysis of
    a probe batch (0 where the model needs none, inf where the compiler gives no estimate)."""
    cache = _BYTES_PER_ROW.setdefault(predictor.apply, {})
    key = (n_columns, np.dtype(dtype).str, predictor.n_outputs)
    if key not in cache:
        spec = jax.ShapeDtypeStruct((_PROBE_ROWS, n_columns), dtype)
        temp = math.inf  # also for a model on another framework: no compiler sees it
        try:
            if predictor.device_fn is None:
                compiled = jax.jit(predictor.apply).lower(predictor.params, spec).compile()
                temp = float(getattr(compiled.memory_analysis(), "temp_size_in_bytes", None))
        except Exception:  # noqa: BLE001 - memory analysis is optional on some backends
            pass
        itemsize = np.dtype(dtype).itemsize
        io = itemsize * (2 * n_columns + 2 * predictor.n_outputs) + 16
        per_row = temp / _PROBE_ROWS
        # Without a compiler estimate, assume activations a few times the input width.
        cache[key] = (io + max(per_row if math.isfinite(per_row) else 0.0,
                               4.0 * itemsize * n_columns), per_row)
    return cache[key]


class ProgressMeter:
    """A one-line progress meter on stderr (process 0 only); silent unless switched on."""

    def __init__(self, total: int, enabled: bool | None, label: str):
        if enabled is None:
            env = os.environ.get("JAXIMP_PROGRESS")
            enabled = env == "1" if env is not None else (total > 1 and sys.stderr.isatty())
        self.enabled = bool(enabled) and is_main_process()
        self.total, self.label, self.done, self.start = total, label, 0, time.perf_counter()
        self.last_print = -1.0

    def update(self) -> None:
        self.done += 1
        now = time.perf_counter()
        # at most two lines a second, and always the last one
        if self.enabled and (now - self.last_print >= 0.5 or self.done == self.total):
            self.last_print = now
            elapsed = now - self.start
            eta = elapsed / self.done * (self.total - self.done)
            end = "\n" if self.done == self.total else ""
            print(f"\r{self.label}: chunk {self.done}/{self.total}, {elapsed:.1f}s elapsed, "
                  f"~{eta:.1f}s left", end=end, file=sys.stderr, flush=True)


@functools.lru_cache(maxsize=1)
def _cpu_threads() -> int:
    """The CPUs this process may run on: the threads of XLA's CPU backend."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def _available_host_bytes() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float("inf")


def check_result_fits(result_bytes: float, what: str, fix: str) -> None:
    if result_bytes < 1 << 20:  # a result under 1 MiB fits: skip reading /proc/meminfo
        return
    available = _available_host_bytes()
    if result_bytes > 0.8 * available:
        raise MemoryError(
            f"the result ({what}) needs {result_bytes / 2**30:.2f} GiB but only "
            f"{available / 2**30:.2f} GiB of memory is available; {fix}"
        )


@validate_params()
def evaluate(
    predictor: Predictor,
    data,
    plan: Plan,
    reducer: Reducer,
    *,
    memory_budget: int | None = None,
    progress: bool | None = None,
    devices=None,
    label: str = "jaximp",
    result_hint: str = "use fewer items (features, grid points, repeats) or rows",
    defer: bool = False,
) -> np.ndarray:
    """Evaluate ``predictor`` on the items of ``plan`` and reduce the predictions by ``reducer``.

    Parameters
    ----------
    predictor : Predictor
        The model, from :func:`jaximp.as_predictor`.
    data : Dataset or array of shape (n, c)
        The data (:func:`jaximp.as_dataset`); host models get their batches built from the
        user's own data it holds.
    plan : Plan
        What to evaluate: see :mod:`jaximp.engine._plans`.
    reducer : Reducer
        What to keep: see :mod:`jaximp.engine._reducers`.
    memory_budget : int, optional
        Bytes the whole call may use beyond its result and the data (default
        :func:`jaximp.default_memory_budget`); a result that cannot fit is refused before any
        model evaluation.
    progress : bool, optional
        A progress line on stderr (default: in an interactive terminal, for calls of more than
        one chunk, or with ``JAXIMP_PROGRESS=1``; process 0 only).
    devices : sequence of jax.Device, optional
        Devices to shard rows over (default: all devices of all processes).
    label : str
        Name on the progress line.
    result_hint : str
        How to shrink a result that cannot fit, for the error message.
    defer : bool
        Return a :class:`~jaximp.data.Deferred` at once instead of waiting for the device: a
        call of one chunk is then read (and its predictions checked) on the first ``get()``;
        larger calls are computed before returning.

    Returns
    -------
    ndarray or Deferred
        ``reducer.finalize`` of the float64 totals: (b, ...) for a reducer of single items.

    Examples
    --------
    A partial dependence by hand: x0 set to each of three values in every row, weighted
    means over rows.

    >>> import numpy as np, jaximp
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> model = jaximp.as_predictor(lambda X: 2 * X[:, 0] + X[:, 1], n_features=2)
    >>> grid = np.array([[-1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    >>> plan = jaximp.at_values([[True, False]], [0, 0, 0], grid, [0, 1, 2])
    >>> pd = evaluate(model, X, plan, jaximp.Mean(np.ones((1, 100))))  # (items, weightings, o)
    >>> bool(np.allclose(pd[:, 0, 0], 2 * grid[:, 0] + X[:, 1].mean(), atol=1e-5))
    True
    """
    if not isinstance(data, Dataset):
        data = as_dataset(np.asarray(data, dtype=np.float64))
    if data.pinned:  # an Explainer's data: a call repeated with the same plan, reducer and
        # model objects (a method's kept plan) plans and sends nothing again
        key = (id(plan), id(reducer), id(predictor), memory_budget,
               os.environ.get("JAXIMP_MEMORY_BUDGET"), None if devices is None else tuple(devices))
        # the entry holds the three objects, so their ids are not reused while it is kept
        run = data.recent("evaluations", key, lambda: (plan, reducer, predictor, _prepared(
            predictor, data, plan, reducer, memory_budget, devices, result_hint)),
            _EVALUATIONS_KEPT)[3]
    else:
        run = _prepared(predictor, data, plan, reducer, memory_budget, devices, result_hint)
    out = run(progress, label).then(lambda values: _checked_finite(values, predictor, reducer))
    return out if defer else out.get()


def _prepared(predictor, data, plan, reducer, memory_budget, devices, result_hint):
    """The evaluation checked and planned: ``run(progress, label) -> Deferred`` of the
    totals. A run checks again that the result fits the host's memory (it may have shrunk); a
    reducer of whole items runs its groups, planned here, each as such an evaluation."""
    n, c = data.n_rows, data.n_columns
    if plan.n_columns != c:
        raise ValueError(f"the plan's masks have {plan.n_columns} columns but X has {c}.")
    budget = resolve_budget(memory_budget)
    if plan.n_items == 0:
        raise ValueError("the plan has no items to evaluate.")
    if reducer.combine == "items":
        groups = _item_groups(predictor, data, plan, budget)
        return lambda progress, label: Deferred.ready(_evaluate_items(
            predictor, data, groups, reducer, budget, progress, devices, label))
    o = predictor.n_outputs
    if reducer.combine == "keep":
        fits = functools.partial(
            check_result_fits, 4.0 * plan.n_items * n * o,
            f"{plan.n_items} items x {n} rows x {o} outputs of predictions", result_hint + ".")
    else:
        size = 8.0 * math.ceil(plan.n_items / reducer.group) * math.prod(reducer.partial_shape(o))
        fits = functools.partial(check_result_fits, size, "reduced values", result_hint + ".")
    fits()  # before planning (and compiling) a result that cannot fit
    if predictor.device_fn is not None:  # another framework's model: on one device
        devices = [_foreign_device(data, devices, predictor.device)]
    if predictor.host and predictor.device_fn is None:
        def run_host(progress, label):
            fits()
            return Deferred.ready(_run_host(predictor, data, plan, reducer, budget, progress,
                                            label))

        return run_host
    return _jax_run(predictor, data, plan, reducer, budget, devices, fits)


def _foreign_device(data, devices, model_device):
    """The one device where a model on another framework's arrays gets its batches: the first
    of ``devices``, else the model's own (a torch module's), else the one holding the user's
    rows, else the first local one."""
    if devices:
        return list(devices)[0]
    if model_device is not None:
        return model_device
    if data.device_X is not None:
        return next(iter(data.device_X.devices()))
    return jax.local_devices()[0]


def _checked_finite(out: np.ndarray, predictor: Predictor, reducer: Reducer) -> np.ndarray:
    finite = np.isfinite(out)
    if not finite.all() and not (reducer.may_be_nan and np.all(finite | np.isnan(out))):
        raise FloatingPointError(
            (f"the model {predictor.name}'s predictions, or the loss computed on them, are NaN "
             "or infinite; check that the loss is defined on the model's outputs (a log of "
             "negative predictions is not), and " if reducer.scores else
             f"the model {predictor.name} returned NaN or infinite predictions; check ")
            + "that the model is defined on the rows of X themselves and over the values the "
            "method puts in them (grid range, categorical levels, permuted rows)."
        )
    return out


def _item_groups(predictor, data, plan, budget) -> list:
    """The plan in groups of whole items, as many as fit half the budget, each with its
    reducer: made once per kept evaluation, so that a repeat finds each group's evaluation."""
    per_item = 4.0 * data.n_rows * predictor.n_outputs
    group = max(1, min(plan.n_items, int(budget // 2 // per_item)))
    if group == plan.n_items:
        return [(plan, Keep())]
    return [(plan.items(start, min(plan.n_items, start + group)), Keep())
            for start in range(0, plan.n_items, group)]


def _evaluate_items(predictor, data, groups, reducer, budget, progress, devices, label):
    """Whole items, a group at a time, through ``reducer.fn``."""
    outputs = []
    for items, keep in groups:
        kept = evaluate(predictor, data, items, keep, memory_budget=max(budget // 2, 1 << 16),
                        progress=progress, devices=devices, label=label)
        outputs.append(np.asarray(reducer.fn(kept)))
        del kept
    return np.concatenate(outputs, axis=0)


# ---------------------------------------------------------------------------------------------
# JAX models: jitted chunks on the devices.
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Launch:
    """Everything a JAX evaluation sends to the devices, and how its chunks are cut; ``read``:
    how its one chunk's output is read (:func:`host_reader`), found at its first call."""

    chunk: Any
    sizes: Any
    n_row_chunks: int
    n_item_chunks: int
    n_local: int
    n_dev: int
    mesh: Any
    arrays: tuple  # (X_dev, tables, rowdata, consts, counts): the chunks' arguments
    offsets: list  # (first item, first row) of each chunk, as int32 scalars
    read: Any = None


def _jax_run(predictor, data, plan, reducer, budget, devices, fits):
    """``run(progress, label)``: the launch's chunks dispatched (on the one device asked for,
    where that is not the default one: everything sent goes there). The model's parameters
    are placed at each run: host leaves may have changed in place, and large ones are not
    kept on the devices (:func:`kept_on_device`)."""
    asked = list(devices) if devices is not None else []
    place = (functools.partial(jax.default_device, asked[0]) if len(asked) == 1
             and asked[0] != jax.local_devices()[0] else contextlib.nullcontext)
    with place():
        # The plan is a pure function of global shapes and a budget agreed by every process.
        launch = _launch(predictor, data, plan, reducer, agree_min(budget), devices)

    def run(progress, label):
        fits()
        with place():
            params = predictor.params
            if data.pinned and (launch.mesh is not None or not all(
                    isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(params))):
                mesh_key = None if launch.mesh is None else tuple(launch.mesh.devices.flat)
                params = kept_on_device(data, ("params", mesh_key), params,
                                         lambda: replicate(params, launch.mesh))
            elif not data.pinned:
                params = (params if launch.mesh is None and len(launch.offsets) == 1
                          else replicate(params, launch.mesh))
            return _dispatch(launch, params, predictor.n_outputs, data.n_rows, plan.n_items,
                             reducer, progress, label)

    return run


def _launch(predictor, data, plan, reducer, budget, devices) -> _Launch:
    n, c = data.n_rows, data.n_columns
    o = predictor.n_outputs
    dtype = np.dtype(predictor.dtype)
    mesh = global_mesh(devices)
    n_dev = 1 if mesh is None else mesh.devices.size
    first = jax.local_devices()[0] if devices is None else list(devices)[0]
    row_bytes, model_temp_bytes = _bytes_per_row(predictor, c, dtype)
    partial_bytes = 4.0 * (math.prod(reducer.partial_shape(o)) if reducer.combine == "sum"
                           else 0) / reducer.group
    block_rows, row_unit = 1 << 40, 256
    # on CPU some summing reducers read the predictions of all of a chunk's blocks at once
    reduce_once = (first.platform == "cpu" and mesh is None and reducer.combine == "sum"
                   and reducer.at_once and predictor.device_fn is None)
    kept_bytes = _KEPT_BYTES_PER_OUTPUT * o if reduce_once else 0.0
    if first.platform == "cpu" and mesh is None:
        if reducer.combine != "keep" and not model_temp_bytes:
            block_rows = _CPU_FUSED_BLOCK_ROWS
        else:
            block_rows = _CPU_KEEP_BLOCK_ROWS if reducer.combine == "keep" else _CPU_BLOCK_ROWS
            block_rows = max(256, min(block_rows, int(_CPU_BLOCK_BYTES // row_bytes)))
        row_unit = _CPU_ROW_TILE * _cpu_threads()
    if predictor.device_fn is not None:  # its memory per row is unknown: host-sized batches,
        # and on an accelerator blocks of a set input size: each block costs its hand-overs
        # between the frameworks (a torch MLP on an H200: 0.92 s for 51M rows in 780 blocks)
        block_rows = min(block_rows, _HOST_BLOCK_ROWS if first.platform == "cpu" else
                         max(256, int(_FOREIGN_BLOCK_BYTES // (dtype.itemsize * c))))
    n_local = math.ceil(n / n_dev)
    sizes = _sizes(plan.n_items, n_local, n_dev, row_bytes, partial_bytes, budget,
                   block_rows, reducer.group, row_unit, kept_bytes)
    if reduce_once and sizes.rows_per_block < _REDUCE_ONCE_MIN_ROWS:  # blocks of few rows
        reduce_once = False
        sizes = _sizes(plan.n_items, n_local, n_dev, row_bytes, partial_bytes, budget,
                       block_rows, reducer.group, row_unit, 0.0)
    n_row_chunks = math.ceil(n_local / sizes.rows_per_chunk)
    n_local_pad = n_row_chunks * sizes.rows_per_chunk
    n_item_chunks = math.ceil(plan.n_items / sizes.items_per_chunk)
    items_pad = bucket(n_item_chunks * sizes.items_per_chunk, sizes.items_per_chunk)
    items_pad = math.ceil(items_pad / sizes.items_per_chunk) * sizes.items_per_chunk

    target = list(devices)[0] if devices is not None and mesh is None else None
    tables, single_column = plan_tables(plan, items_pad, dtype, mesh, target)
    # cast to the device's dtype here: a NumPy cast costs less than the one in the jit call
    rowdata = {k: layout_rows(v, n_dev, n_local, n_local_pad, jax.dtypes.canonicalize_dtype(v.dtype))
               for k, v in reducer.row_arrays().items()}
    if plan.row_codes is not None:
        rowdata["_codes"] = layout_rows(plan.row_codes.T, n_dev, n_local, n_local_pad)
    consts = {k: pad_items(v, items_pad) if k == "item_code" else v
              for k, v in reducer.consts().items()}
    # the permutations' radices, found on the host (on the device, a sequential search)
    counts = np.asarray([n, n_local, plan.n_items, *_streams.feistel_radices(n)], np.int32)
    offsets = [(np.int32(ic * sizes.items_per_chunk), np.int32(rc * sizes.rows_per_chunk))
               for ic in range(n_item_chunks) for rc in range(n_row_chunks)]
    drawn_once = (plan.index in ("permutation", "draw") and mesh is None
                  and 4 * items_pad * n_local_pad <= max(_SOURCE_ROWS_BYTES, budget // 16))
    if data.pinned:  # the rows go to the devices once per layout and stay
        rows_key = ("device rows", n_dev, n_local_pad, dtype.str,
                    (target,) if mesh is None else tuple(mesh.devices.flat))
        X_dev = data.memo(rows_key, lambda: device_rows(data, n_dev, n_local, n_local_pad,
                                                        dtype, mesh, target))
        mesh_key = rows_key[-1]
        if drawn_once:
            tables = with_drawn_sources(plan.index, tables, X_dev, n, single_column)
        rowdata = kept_on_device(data, ("rows", mesh_key), rowdata,
                                  lambda: shard_rows(rowdata, mesh))
        consts, counts, offsets = kept_on_device(
            data, ("whole", mesh_key), (consts, counts, offsets),
            lambda: replicate((consts, counts, offsets), mesh))
    elif data.device_X is not None and mesh is None:  # rows on the device are used there
        X_dev = device_rows(data, n_dev, n_local, n_local_pad, dtype, mesh, target)
        if n_item_chunks * n_row_chunks > 1:
            rowdata = shard_rows(rowdata, mesh)
            consts, counts = replicate((consts, counts), mesh)
    elif mesh is None and n_item_chunks * n_row_chunks == 1:
        # one call: its host arguments go with it, cheaper than a device_put first
        X_dev = layout_rows(data.X, n_dev, n_local, n_local_pad, dtype)
    else:
        X_dev, rowdata = shard_rows((layout_rows(data.X, n_dev, n_local, n_local_pad, dtype),
                                     rowdata), mesh)
        consts, counts = replicate((consts, counts), mesh)
    if drawn_once and not data.pinned and 4 * items_pad * n_local_pad <= _KEPT_SOURCE_ROWS_BYTES:
        # a plain call: its draws (not the data) are kept, in little memory beyond the call
        tables = with_kept_source_rows(plan, tables, n, n_local_pad, single_column, target)
    drawn = next((name for name in ("source_values", "source_rows") if name in tables), None)
    chunk = _chunk_function(predictor, plan.index, reducer, sizes, mesh, dtype, single_column,
                            drawn, reduce_once,
                            _host_output_device(X_dev, first, mesh, reducer, predictor, devices))
    return _Launch(chunk, sizes, n_row_chunks, n_item_chunks, n_local, n_dev, mesh,
                   (X_dev, tables, rowdata, consts, counts), offsets)


_HOST_OUTPUT_ON_CPU = False  # tests set it: the CPU's outputs are on the host already
# measured on JAX 0.11 and a GPU (an H200); elsewhere the copy follows the program
_HOST_OUTPUT_JAX = jax.__version_info__ >= (0, 11)
_PINNED_HOST: dict = {}  # device -> whether it has a pinned host memory


def _host_output_device(X_dev, first, mesh, reducer, predictor, devices):
    """The GPU whose pinned host memory takes a chunk's totals, or None. On an H200 a warm
    call's read of its few totals took 0.18-0.49 ms after its kernels ended (a separate copy,
    started by the read or by ``copy_to_host_async``); written to pinned host memory by the
    program itself, they are read as soon as it ends. Only a single device's summed totals
    (kept predictions are large; a model on another framework's arrays has no such program),
    and only where the model's parameters are not committed to another device, where the
    program then runs."""
    if mesh is not None or reducer.combine == "keep" or predictor.device_fn is not None:
        return None
    if isinstance(X_dev, jax.Array):
        if len(X_dev.devices()) != 1:
            return None
        device = next(iter(X_dev.devices()))
    elif devices is not None or jax.config.jax_default_device is None:
        device = first  # where the host's rows go
    else:
        return None
    if not (_HOST_OUTPUT_ON_CPU if device.platform == "cpu"
            else _HOST_OUTPUT_JAX and device.platform == "gpu"):
        return None
    if any(isinstance(leaf, jax.Array) and leaf.committed and leaf.devices() != {device}
           for leaf in jax.tree_util.tree_leaves(predictor.params)):
        return None
    if device not in _PINNED_HOST:
        _PINNED_HOST[device] = any(m.kind == "pinned_host" for m in device.addressable_memories())
    return device if _PINNED_HOST[device] else None


def _dispatch(launch: _Launch, params, o: int, n: int, b: int, reducer, progress, label):
    """Run a launch's chunks, a few in flight, and fold their outputs on the host (a call of
    one chunk: when its value is read)."""
    sizes, n_row_chunks = launch.sizes, launch.n_row_chunks
    X_dev, tables, rowdata, consts, counts = launch.arrays
    keep = reducer.combine == "keep"
    if len(launch.offsets) == 1 and progress is not True and (
            launch.mesh is None if keep else sizes.row_blocks == 1):
        # one chunk (small calls): its items' totals (of one row block), or its predictions
        # on one device, as they come
        out = launch.chunk(params, X_dev, tables, rowdata, consts, counts, *launch.offsets[0])
        if launch.read is None:
            launch.read = host_reader(out)
        read, copy_early = launch.read
        if copy_early and not keep:  # a few totals: on their way to the host while the
            out.copy_to_host_async()  # caller goes on

        def fold():
            block = read(out)
            if keep:
                result = np.zeros((b, n, o), block.dtype)
                _write_kept(result, block, sizes, 0, 0, n, launch.n_local, launch.n_dev)
                return result
            totals = block.astype(np.float64).reshape(-1, *block.shape[2:])
            return reducer.finalize(totals[: math.ceil(b / reducer.group)])

        return Deferred(fold)
    if keep:
        result = np.zeros((b, n, o), X_dev.dtype)
    else:
        per_chunk = sizes.items_per_chunk // reducer.group
        result = np.zeros((launch.n_item_chunks * per_chunk, *reducer.partial_shape(o)),
                          np.float64)
    meter = ProgressMeter(len(launch.offsets), progress, label)
    pending: collections.deque = collections.deque()

    def collect():
        (i0, r0), out = pending.popleft()
        if keep and not (out.is_fully_addressable or out.is_fully_replicated):
            # kept rows live on several processes: every process gets the whole result
            from jax.experimental import multihost_utils

            out = multihost_utils.process_allgather(out, tiled=True)
        block = to_host(out)
        if keep:
            _write_kept(result, block, sizes, i0, r0, n, launch.n_local, launch.n_dev)
        else:  # (item blocks * row blocks, per block, ...) -> sum over row blocks
            block = block.astype(np.float64)
            if sizes.row_blocks > 1:
                block = block.reshape(sizes.item_blocks, sizes.row_blocks, *block.shape[1:])
                block = block.sum(axis=1)
            block = block.reshape(-1, *block.shape[2:])
            g0 = i0 // reducer.group
            result[g0:g0 + block.shape[0]] += block
        meter.update()

    copy_early = None  # whether the chunks' totals start to the host as dispatched
    for k, (i0, r0) in enumerate(launch.offsets):
        out = launch.chunk(params, X_dev, tables, rowdata, consts, counts, i0, r0)
        if copy_early is None:  # asked once: a call may run hundreds of small chunks
            copy_early = not keep and start_host_copy(out)
        elif copy_early:
            out.copy_to_host_async()
        pending.append(((k // n_row_chunks * sizes.items_per_chunk,
                         k % n_row_chunks * sizes.rows_per_chunk), out))
        if len(pending) > 2:  # keep the devices busy while the host folds
            collect()
    while pending:
        collect()
    if keep:
        return Deferred.ready(result)
    return Deferred.ready(reducer.finalize(result[: math.ceil(b / reducer.group)]))


def _write_kept(result, block, sizes, i0, r0, n, n_local, n_dev):
    """Write a chunk's kept predictions (blocks, ib, D * rbl, o) into result (b, n, o)."""
    ib, rbl = sizes.items_per_block, sizes.rows_per_block
    b = result.shape[0]
    for k in range(block.shape[0]):
        first_item = i0 + (k // sizes.row_blocks) * ib
        first_row = r0 + (k % sizes.row_blocks) * rbl
        if n_dev == 1:  # whole ranges of items and rows: a slice copy, not a fancy-index one
            n_items, n_rows = min(ib, b - first_item), min(rbl, n - first_row)
            if n_items > 0 and n_rows > 0:
                result[first_item:first_item + n_items, first_row:first_row + n_rows] = (
                    block[k, :n_items, :n_rows])
            continue
        items = first_item + np.arange(ib)
        local = first_row + np.arange(rbl)
        g = (np.arange(n_dev)[:, None] * n_local + local[None, :]).reshape(-1)
        ok_rows = ((local[None, :] < n_local) & (g.reshape(n_dev, rbl) < n)).reshape(-1)
        ok_items = items < b
        if ok_items.any() and ok_rows.any():
            result[np.ix_(items[ok_items], g[ok_rows])] = block[k][ok_items][:, ok_rows]


# ---------------------------------------------------------------------------------------------
# Host models: batches built on the host in the user's types, reduced in float64.
# ---------------------------------------------------------------------------------------------


_host_indices = jax.jit(source_index, static_argnums=0)


def _run_host(predictor, data, plan, reducer, budget, progress, label):
    from ..models import HostData, call_host

    X = data.X
    n, c = X.shape
    o = predictor.n_outputs
    host_data = HostData(X if data.source is None else data.source, data)
    row_bytes = 8.0 * (4 * c + 4 * o) + 64
    block_total = max(reducer.group, min(_HOST_BLOCK_ROWS, int(budget // (2 * row_bytes))))
    rows_per_block = min(n, block_total)
    ib = reducer.group
    if rows_per_block == n:
        ib = max(reducer.group, block_total // n // reducer.group * reducer.group)
    ib = min(ib, math.ceil(plan.n_items / reducer.group) * reducer.group)
    b = plan.n_items
    keep = reducer.combine == "keep"
    row_arrays = {k: np.asarray(v, np.float64) if v.dtype.kind == "f" else v
                  for k, v in reducer.row_arrays().items()}
    consts = reducer.consts()
    if "item_code" in consts:
        consts["item_code"] = pad_items(consts["item_code"], math.ceil(b / ib) * ib)
    if keep:
        result = np.zeros((b, n, o), np.float64)
    else:
        result = np.zeros((math.ceil(b / reducer.group), *reducer.partial_shape(o)))
    item_blocks = math.ceil(b / ib)
    row_blocks = math.ceil(n / rows_per_block)
    meter = ProgressMeter(item_blocks * row_blocks, progress, label)
    for kb in range(item_blocks):
        items = kb * ib + np.arange(ib)
        live = np.minimum(items, b - 1)  # padded items repeat the last one, then are dropped
        masks = plan.masks[plan.item_mask[live]]  # (ib, c)
        columns = np.flatnonzero(masks.any(axis=0))
        for kr in range(row_blocks):
            rows = np.arange(kr * rows_per_block, min(n, (kr + 1) * rows_per_block))
            values = np.broadcast_to(X[rows][None], (ib, rows.size, c)).copy()
            if columns.size:
                replacement = _host_replacement(plan, X, live, rows, n)
                values = np.where(masks[:, None, :], replacement, values)
            batch = host_data.batch(np.tile(rows, ib), values.reshape(-1, c), columns)
            preds = call_host(predictor.host_fn, batch, predictor.name,
                              n_outputs=o).reshape(ib, rows.size, o)
            if keep:
                ok = items < b
                result[items[ok][:, None], rows[None, :]] = preds[ok]
            else:
                sliced = {k: v[rows] for k, v in row_arrays.items()}
                part = reducer.partial(preds.transpose(0, 2, 1), sliced, np.ones(rows.size),
                                       items, consts, np)
                g0 = kb * ib // reducer.group
                stop = min(result.shape[0], g0 + part.shape[0])
                result[g0:stop] += part[: stop - g0]
            meter.update()
    return result if keep else reducer.finalize(result)


def _host_replacement(plan: Plan, X, items, rows, n):
    """Replacement values (ib, rows, c) in float64 for host models."""
    if plan.index == "item":
        table = X if plan.table is None else plan.table
        return table[plan.item_index[items]][:, None, :]
    if plan.index == "code":
        idx = plan.item_index[items][:, None] + plan.row_codes[plan.item_code[items]][:, rows]
        return plan.table[idx]
    cdf = None if plan.draw_cdf is None else plan.draw_cdf.astype(np.float32)
    src = np.asarray(_host_indices(plan.index, plan.key_bits, plan.item_stream[items],
                                   rows.astype(np.int32), np.int32(n),
                                   np.asarray(_streams.feistel_radices(n), np.int32), cdf))
    return X[src]


@validate_params()
def predict_rows(predictor: Predictor, data, *, memory_budget=None, progress=None,
                 devices=None, label: str = "predict", defer: bool = False) -> np.ndarray:
    """Predictions on the data itself (a Dataset or an array), shape (n, o), float32.

    Parameters
    ----------
    predictor : Predictor
        The model, from :func:`jaximp.as_predictor`.
    data : Dataset or array of shape (n, c)
        The rows to predict.
    memory_budget : int, optional
        Bytes the whole call may use beyond its result and the data (default
        :func:`jaximp.default_memory_budget`); a result that cannot fit is refused before any
        model evaluation.
    progress : bool, optional
        A progress line on stderr (default: in an interactive terminal, for calls of more than
        one chunk, or with ``JAXIMP_PROGRESS=1``; process 0 only).
    devices : sequence of jax.Device, optional
        As in :func:`evaluate`.
    label : str, default "predict"
        The name of the progress line.
    defer : bool, default False
        Return a :class:`~jaximp.data.Deferred` of the predictions, as :func:`evaluate` does.
    """
    c = data.n_columns if isinstance(data, Dataset) else np.shape(data)[1]

    def make():
        return at_values(np.zeros((1, c), bool), [0], np.zeros((1, c)), [0]), Keep()

    # an Explainer's data keeps the plan, so a repeated call reuses its launch
    plan, keep = (data.memo("predict plan", make) if isinstance(data, Dataset) and data.pinned
                  else make())
    out = evaluate(predictor, data, plan, keep, memory_budget=memory_budget,
                   progress=progress, devices=devices, label=label, defer=True)
    out = out.then(lambda kept: kept[0])
    return out if defer else out.get()
