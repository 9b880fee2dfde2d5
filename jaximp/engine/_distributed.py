"""Helpers for running the engine over several processes (``jax.distributed``).

The model: every process calls the same jaximp function with the same full data. The engine
puts each process's share of the rows on its own local devices (a row-sharded global array
over a 1-D mesh ``("rows",)`` of *all* global devices), evaluates inside ``jit`` so that
reductions over rows become XLA all-reduces, and every process reads the same replicated,
small result. Chunk plans must be pure functions of global shapes and of values agreed by
every process (:func:`agree_min`), so that all processes run the same sequence of programs.

With one process every helper reduces to its single-process meaning: :func:`agree_min` is the
identity, :func:`shard_rows` with ``mesh=None`` is :func:`jax.device_put`.
"""

from __future__ import annotations

import zlib
from typing import Any, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = [
    "agree_min",
    "check_same_on_all_processes",
    "global_mesh",
    "host_reader",
    "is_main_process",
    "process_count",
    "process_index",
    "replicate",
    "shard_rows",
    "start_host_copy",
    "to_host",
]

ROWS = "rows"
_LOW_BITS = 31  # ints travel as (high, low) int32 pairs: exact for |value| < 2**62


def process_count() -> int:
    """Number of JAX processes (1 unless :func:`jax.distributed.initialize` was called).

    Examples
    --------
    >>> process_count() >= 1
    True
    """
    return int(jax.process_count())


def process_index() -> int:
    """Index of this process, ``0 .. process_count() - 1``.

    Examples
    --------
    >>> 0 <= process_index() < process_count()
    True
    """
    return int(jax.process_index())


def is_main_process() -> bool:
    """True on process 0, the one that prints progress and writes files.

    Examples
    --------
    >>> is_main_process() == (process_index() == 0)
    True
    """
    return process_index() == 0


def global_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh | None:
    """A 1-D mesh with axis ``"rows"`` over all global devices, or None for one device.

    Parameters
    ----------
    devices : sequence of jax.Device, optional
        Devices of the mesh, in order (default :func:`jax.devices`: every device of every
        process). Under several processes, every process must pass the same devices in the
        same order.

    Returns
    -------
    jax.sharding.Mesh or None
        ``Mesh(devices, ("rows",))``; None when there is only one device in total, so that the
        caller can skip sharding altogether.

    Examples
    --------
    >>> mesh = global_mesh()
    >>> mesh is None or mesh.axis_names == ("rows",)
    True
    >>> global_mesh(jax.devices()[:1]) is None
    True
    """
    devices = list(jax.devices() if devices is None else devices)
    if not devices:
        raise ValueError("devices must name at least one device; got an empty sequence.")
    if len(devices) == 1:
        return None
    if len({d.id for d in devices}) != len(devices):
        raise ValueError(
            f"devices must be distinct; got {len(devices)} entries for "
            f"{len({d.id for d in devices})} devices. Pass each device once."
        )
    return Mesh(np.asarray(devices, dtype=object), (ROWS,))


def _split_int(value: int) -> np.ndarray:
    return np.asarray([value >> _LOW_BITS, value & ((1 << _LOW_BITS) - 1)], np.int32)


def _join_int(pair) -> int:
    high, low = (int(v) for v in pair)
    return (high << _LOW_BITS) | low


def _allgather_ints(values: Sequence[int]) -> list[list[int]]:
    """Every process's ``values`` (same length everywhere), exactly, as Python ints."""
    from jax.experimental import multihost_utils

    local = np.stack([_split_int(v) for v in values])  # (k, 2) int32
    gathered = np.asarray(multihost_utils.process_allgather(local))  # (processes, k, 2)
    gathered = gathered.reshape(-1, len(values), 2)
    return [[_join_int(pair) for pair in proc] for proc in gathered]


def _check_int(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int; got {value!r}.")
    value = int(value)
    if abs(value) >= 1 << (2 * _LOW_BITS - 1):
        raise ValueError(f"{name} must be smaller than 2**61 in absolute value; got {value}.")
    return value


def agree_min(value: int) -> int:
    """The minimum of ``value`` over all processes (the identity with one process).

    Use it for every process-dependent input of a chunk plan (a memory budget read from the
    local device, say), so that all processes plan the same chunks. Every process must call it
    at the same point (it is a collective).

    Parameters
    ----------
    value : int
        This process's value; exact for ``|value| < 2**61`` (any memory budget).

    Returns
    -------
    int
        The smallest ``value`` over all processes.

    Examples
    --------
    >>> agree_min(1 << 40)
    1099511627776
    """
    value = _check_int(value, "value")
    if process_count() == 1:
        return value
    return min(proc[0] for proc in _allgather_ints([value]))


def _fingerprint(array) -> tuple[int, int, int]:
    array = np.ascontiguousarray(np.asarray(array))
    shape_code = zlib.crc32(repr((array.shape, array.dtype.str)).encode())
    return shape_code, zlib.crc32(memoryview(array).cast("B")), zlib.adler32(
        memoryview(array).cast("B")
    )


def check_same_on_all_processes(array, name: str = "X") -> None:
    """Raise if ``array`` differs between processes (shape, dtype or bytes).

    Every process must pass the same data to a jaximp call; this compares CRC-32 and Adler-32
    checksums of the bytes over all processes (a collective: every process must call it). With
    one process it does nothing.

    Parameters
    ----------
    array : array_like
        The data this process holds.
    name : str, default "X"
        The parameter name used in the error message.

    Raises
    ------
    ValueError
        If some process holds different data.

    Examples
    --------
    >>> check_same_on_all_processes(np.arange(4.0))
    """
    if process_count() == 1:
        return
    local = list(_fingerprint(array))
    gathered = _allgather_ints(local)
    differ = [i for i, proc in enumerate(gathered) if proc != gathered[0]]
    if differ:
        raise ValueError(
            f"{name} must be the same on every process; processes {differ} hold different "
            f"data from process 0 (shape, dtype or values). Load the same {name} on every "
            "process (same file, same row order, same dtype) before calling jaximp."
        )


def _check_mesh(mesh: Mesh) -> None:
    if not isinstance(mesh, Mesh) or tuple(mesh.axis_names) != (ROWS,):
        raise ValueError(
            f"mesh must be a 1-D jax.sharding.Mesh with axis ('rows',), as global_mesh() "
            f"returns, or None; got {mesh!r}."
        )


def shard_rows(tree, mesh: Mesh | None) -> Any:
    """A global array (or a pytree of them) sharded on axis 0 over the mesh's ``"rows"`` axis.

    Every process passes the same full array; each process supplies only the rows that live on
    its own addressable devices (:func:`jax.make_array_from_callback`), so no process copies
    another's rows.

    Parameters
    ----------
    tree : ndarray of shape (n_pad, ...), or a pytree of them
        The full (padded) arrays, identical on every process. ``n_pad`` must be a multiple of
        the number of devices in ``mesh``.
    mesh : jax.sharding.Mesh or None
        From :func:`global_mesh`; None: one device, one :func:`jax.device_put` of the tree.

    Returns
    -------
    jax.Array or pytree of jax.Array
        Same structure; each leaf with sharding ``NamedSharding(mesh, P("rows"))``.

    Examples
    --------
    >>> x = shard_rows(np.arange(8.0).reshape(4, 2), global_mesh())
    >>> x.shape
    (4, 2)
    """
    if mesh is None:
        return jax.device_put(tree)  # one transfer for the whole tree
    _check_mesh(mesh)
    return jax.tree_util.tree_map(lambda array: _shard_array_rows(array, mesh), tree)


def _shard_array_rows(array, mesh: Mesh) -> jax.Array:
    array = np.asarray(array)
    if array.ndim < 1:
        raise ValueError(f"array must have a row axis; got a scalar of shape {array.shape}.")
    n_devices = mesh.devices.size
    if array.shape[0] % n_devices:
        raise ValueError(
            f"array must have a number of rows divisible by the {n_devices} devices of the "
            f"mesh; got {array.shape[0]} rows. Pad the rows to a multiple of {n_devices}."
        )
    sharding = NamedSharding(mesh, PartitionSpec(ROWS))
    return jax.make_array_from_callback(array.shape, sharding, lambda index: array[index])


def replicate(tree: Any, mesh: Mesh | None) -> Any:
    """A fully replicated global copy of ``tree`` (an array or a pytree of arrays).

    For small tables (masks, grid values, model parameters): every device of every process
    holds the whole array. Every process must pass the same values.

    Parameters
    ----------
    tree : array or pytree of arrays
    mesh : jax.sharding.Mesh or None
        From :func:`global_mesh`; None: :func:`jax.numpy.asarray` on each leaf.

    Returns
    -------
    jax.Array or pytree of jax.Array
        Same structure; each leaf with sharding ``NamedSharding(mesh, P())``.

    Examples
    --------
    >>> t = replicate({"w": np.ones((2, 3))}, global_mesh())
    >>> t["w"].shape
    (2, 3)
    """
    if mesh is None:
        return jax.device_put(tree)  # one transfer for the whole tree
    _check_mesh(mesh)
    sharding = NamedSharding(mesh, PartitionSpec())

    def put(leaf):
        if isinstance(leaf, jax.Array):
            if leaf.sharding == sharding:
                return leaf
            if not leaf.is_fully_addressable:  # a global array: let XLA move it
                return jax.device_put(leaf, sharding)
        host = np.asarray(leaf)
        return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

    return jax.tree_util.tree_map(put, tree)


def start_host_copy(array: jax.Array) -> bool:
    """Start copying a chunk's output to the host behind its kernels, on an accelerator (a
    CPU's output is already there), and say whether it did: reading it later then waits for
    the copy only where it has not yet come. An H200 trace of a warm call put the result's
    copy, started at the read, about 0.6 ms after the kernels ended."""
    if _copied_to_host(array):
        array.copy_to_host_async()
        return True
    return False


def _copied_to_host(array: jax.Array) -> bool:
    """Whether reading ``array`` here copies it from an accelerator's memory (a CPU's output,
    and one its program wrote to pinned host memory, are on the host already)."""
    return (array.is_fully_addressable and next(iter(array.devices())).platform != "cpu"
            and array.sharding.memory_kind != "pinned_host")


def host_reader(array: jax.Array):
    """How to read arrays placed as ``array`` is (every output of one jitted chunk function
    on the same arguments is): ``(read, copy_early)``, the read (``np.asarray`` for one CPU
    device or pinned host memory, else :func:`to_host`) and whether each one's copy to the
    host may start as it is made (where :func:`start_host_copy` would start it). Deciding once
    per launch spares a call's read its placement checks (~3 us of a warm CPU call's 22 us
    after the wait)."""
    if len(array.devices()) == 1 and array.is_fully_addressable:
        if next(iter(array.devices())).platform == "cpu":
            return np.asarray, False
        if array.sharding.memory_kind == "pinned_host":
            return _read_pinned, False
    return to_host, _copied_to_host(array)


def _read_pinned(array: jax.Array) -> np.ndarray:
    """An output its program wrote to pinned host memory, read explicitly."""
    with jax.transfer_guard_device_to_host("allow"):
        return np.asarray(array)


def _read(array: jax.Array) -> np.ndarray:
    """An array read to the host, explicitly (``jax.device_get``) from an accelerator, so that
    a user's transfer guard flags only implicit copies (of the rows, say); from the CPU by
    ``np.asarray``, the same read without device_get's tree walk (~9 us a call). An output
    its program wrote to pinned host memory is there already: it is read explicitly too, but
    without the copy device_get starts first (~40 us of host time a call on an H200)."""
    if next(iter(array.devices())).platform == "cpu":
        return np.asarray(array)
    if array.sharding.memory_kind == "pinned_host":
        return _read_pinned(array)
    return jax.device_get(array)


def to_host(array) -> np.ndarray:
    """A NumPy copy of a fully replicated (or fully addressable) array, read locally.

    Parameters
    ----------
    array : jax.Array or array_like
        A result of a jitted computation whose output is replicated over the global mesh
        (every process holds the whole value), or any array on this process's devices.

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        If the array is sharded across processes (this process holds only part of it).

    Examples
    --------
    >>> to_host(replicate(np.arange(3), global_mesh()))
    array([0, 1, 2]...)
    """
    if not isinstance(array, jax.Array):
        return np.asarray(array)
    if array.is_fully_addressable:
        return _read(array)
    if array.is_fully_replicated:
        return _read(array.addressable_data(0))
    raise ValueError(
        f"array must be fully replicated to be read on one process; got an array of shape "
        f"{array.shape} sharded as {array.sharding}. Reduce it inside jit with a replicated "
        "out_sharding, or gather it with jax.experimental.multihost_utils.process_allgather."
    )
