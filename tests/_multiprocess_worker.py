"""One process of a multi-process jaximp run, launched by tests/test_multiprocess.py.

Usage::

    python tests/_multiprocess_worker.py MODE OUT_DIR PROCESS_ID NUM_PROCESSES PORT

MODE is ``psum`` (plain JAX, no jaximp: checks the launch itself), ``helpers``
(jaximp.engine._distributed) or ``jaximp`` (partial dependence, permutation importance and the
H-statistic on a fixed model and dataset). With NUM_PROCESSES == 1 the worker runs without
``jax.distributed`` (the single-process reference). The number of local CPU devices comes from
``XLA_FLAGS=--xla_force_host_platform_device_count=...`` set by the caller. Each process writes
``OUT_DIR/result_<PROCESS_ID>.npz``.
"""

from __future__ import annotations

import os
import sys

import numpy as np


def _init(process_id: int, num_processes: int, port: int):
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if num_processes > 1:
        jax.distributed.initialize(
            coordinator_address=f"127.0.0.1:{port}",
            num_processes=num_processes,
            process_id=process_id,
            initialization_timeout=60,
        )
    return jax


def run_psum(jax) -> dict:
    """A row-sharded global array, summed inside jit; and a shard_map psum of ones."""
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.asarray(jax.devices()), ("rows",))
    n_dev = len(jax.devices())
    rows_per_device = 2
    full = np.arange(n_dev * rows_per_device, dtype=np.float32)
    local = jax.local_devices()
    # rows of this process's devices, in mesh order
    local_rows = np.concatenate([
        full[i * rows_per_device:(i + 1) * rows_per_device]
        for i, d in enumerate(mesh.devices.flat) if d in local
    ])
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("rows")), local_rows,
                                               full.shape)
    total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(x)

    ones = jax.make_array_from_process_local_data(
        NamedSharding(mesh, P("rows")), np.ones(len(local), np.float32), (n_dev,))
    counted = jax.jit(
        jax.shard_map(lambda a: jax.lax.psum(a.sum(), "rows"), mesh=mesh, in_specs=P("rows"),
                      out_specs=P()),
    )(ones)
    return {
        "sum": np.asarray(total.addressable_data(0)),
        "expected_sum": full.sum(),
        "device_count": np.asarray(counted.addressable_data(0)),
        "process_count": np.asarray(jax.process_count()),
        "global_devices": np.asarray(n_dev),
    }


def run_helpers(jax, process_id: int) -> dict:
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from jaximp.engine import _distributed as dist

    mesh = dist.global_mesh()
    n_dev = len(jax.devices())
    out = {
        "process_count": np.asarray(dist.process_count()),
        "process_index": np.asarray(dist.process_index()),
        "is_main": np.asarray(dist.is_main_process()),
        "mesh_size": np.asarray(0 if mesh is None else mesh.devices.size),
        # differs per process; a value above 2**31 checks the exact int transport
        "agreed": np.asarray(dist.agree_min((5 << 33) + 7 - process_id)),
    }
    X = np.arange(n_dev * 3 * 2, dtype=np.float32).reshape(n_dev * 3, 2)
    Xs = dist.shard_rows(X, mesh)
    w = dist.replicate(np.asarray([1.0, 10.0], np.float32), mesh)
    replicated = None if mesh is None else NamedSharding(mesh, P())
    col_sums = jax.jit(lambda a, b: jnp.sum(a * b, axis=0), out_shardings=replicated)(Xs, w)
    out["col_sums"] = dist.to_host(col_sums)
    out["expected_col_sums"] = X.sum(axis=0) * np.asarray([1.0, 10.0], np.float32)
    out["local_rows"] = np.asarray(sum(s.data.shape[0] for s in Xs.addressable_shards))
    dist.check_same_on_all_processes(X)
    try:
        dist.check_same_on_all_processes(X + process_id)
        out["mismatch_detected"] = np.asarray(dist.process_count() == 1)
    except ValueError:
        out["mismatch_detected"] = np.asarray(True)
    try:
        dist.shard_rows(X[:-1], mesh)
        out["bad_rows_rejected"] = np.asarray(mesh is None)
    except ValueError:
        out["bad_rows_rejected"] = np.asarray(True)
    return out


def make_problem():
    """A fixed 64 x 3 dataset, targets, and a small tanh MLP as a jnp function."""
    import jax.numpy as jnp

    rng = np.random.default_rng(20240601)
    X = rng.normal(size=(64, 3)).astype(np.float32)
    W1 = rng.normal(size=(3, 8)).astype(np.float32) / np.sqrt(3)
    b1 = (0.1 * rng.normal(size=8)).astype(np.float32)
    W2 = rng.normal(size=(8, 1)).astype(np.float32) / np.sqrt(8)

    def f(Z):
        h = jnp.tanh(Z @ jnp.asarray(W1) + jnp.asarray(b1))
        return (h @ jnp.asarray(W2))[:, 0] + 0.5 * Z[:, 0] * Z[:, 1]

    y = np.asarray(f(X)) + 0.1 * rng.normal(size=64).astype(np.float32)
    return f, X, y


def run_jaximp(jax) -> dict:
    import jaximp

    f, X, y = make_problem()
    pd_x0 = jaximp.partial_dependence(f, X, "x0", grid_resolution=10)
    pfi = jaximp.permutation_importance(f, X, y, n_repeats=3, random_state=0)
    h = jaximp.h_statistic(f, X, n_max=None)
    return {
        "pd_grid": np.asarray(pd_x0.grid_values[0], np.float64),
        "pd_average": pd_x0.average,
        "pfi_mean": pfi.importances_mean,
        "pfi_importances": pfi.importances,
        "h_overall": h.overall.importances_mean,
        "h_pairwise": h.pairwise.values,
        "h_total": h.total,
    }


def main(argv: list[str]) -> int:
    mode, out_dir, process_id, num_processes, port = argv
    process_id, num_processes, port = int(process_id), int(num_processes), int(port)
    jax = _init(process_id, num_processes, port)
    if mode == "psum":
        result = run_psum(jax)
    elif mode == "helpers":
        result = run_helpers(jax, process_id)
    elif mode == "jaximp":
        result = run_jaximp(jax)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    np.savez(os.path.join(out_dir, f"result_{process_id}.npz"), **result)
    print(f"process {process_id}/{num_processes}: {mode} done", flush=True)
    if num_processes > 1:
        jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
