"""jaximp under ``jax.distributed``: 2 local processes x 2 CPU devices over loopback.

Each test launches tests/_multiprocess_worker.py as separate processes (a coordinator on a free
loopback port, gloo CPU collectives) and compares their .npz results with a single-process,
single-device run. ``test_two_processes_psum`` checks the launch itself with plain JAX, so that a
failure of the jaximp tests can be told apart from a broken harness.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from jaximp.engine import _distributed as dist

WORKER = Path(__file__).with_name("_multiprocess_worker.py")
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 240


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(devices_per_process: int) -> dict:
    # jax.distributed warns that *_proxy variables can hang the coordinator's gRPC connection.
    env = {k: v for k, v in os.environ.items()
           if "_proxy" not in k.lower() and not k.startswith("JAXIMP_")}
    env.update(
        # the suite's compile flags (tests/conftest.py), and the host devices asked for
        XLA_FLAGS=" ".join([os.environ.get("XLA_FLAGS", ""),
                            f"--xla_force_host_platform_device_count={devices_per_process}"]),
        JAX_PLATFORMS="cpu",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    return env


def launch(mode: str, out_dir: Path, num_processes: int, devices_per_process: int,
           timeout: float = TIMEOUT_S) -> list[dict]:
    """Run the worker as ``num_processes`` processes; their results, by process index.

    Fails (never hangs) after ``timeout`` seconds, printing every process's output.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = _env(devices_per_process)
    procs, logs = [], []
    for i in range(num_processes):
        log = open(out_dir / f"log_{i}.txt", "w+b")
        logs.append(log)
        procs.append(subprocess.Popen(
            [sys.executable, str(WORKER), mode, str(out_dir), str(i), str(num_processes),
             str(port)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        ))
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while any(p.poll() is None for p in procs):
            if time.monotonic() > deadline:
                timed_out = True
                break
            if any(p.poll() not in (None, 0) for p in procs):
                time.sleep(5)  # let the others report their side, then stop them
                break
            time.sleep(0.2)
    finally:
        for p in procs:  # only the processes started here, by handle
            if p.poll() is None:
                p.kill()
                p.wait()
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read().decode(errors="replace"))
        log.close()
    codes = [p.returncode for p in procs]
    if timed_out or any(codes):
        report = "\n".join(
            f"--- process {i} (exit {codes[i]}) ---\n{out[-6000:]}" for i, out in enumerate(outputs)
        )
        what = f"timed out after {timeout:.0f}s" if timed_out else "failed"
        pytest.fail(f"{mode} with {num_processes} process(es) {what}:\n{report}", pytrace=False)
    results = []
    for i in range(num_processes):
        with np.load(out_dir / f"result_{i}.npz") as data:
            results.append({k: data[k] for k in data.files})
    return results


def assert_same(a: dict, b: dict, rtol: float = 1e-5, atol: float = 0.0, label: str = "") -> None:
    assert sorted(a) == sorted(b), label
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=rtol, atol=atol,
                                   err_msg=f"{label}: {key}")


# ---------------------------------------------------------------- single-process unit tests


def test_process_queries_single_process():
    assert dist.process_count() == jax.process_count() == 1
    assert dist.process_index() == 0
    assert dist.is_main_process()


def test_global_mesh():
    assert dist.global_mesh(jax.devices()[:1]) is None
    mesh = dist.global_mesh()
    if len(jax.devices()) == 1:
        assert mesh is None
    else:
        assert mesh.axis_names == ("rows",) and mesh.devices.size == len(jax.devices())
    with pytest.raises(ValueError, match="devices must name at least one device"):
        dist.global_mesh([])
    if len(jax.devices()) == 1:
        with pytest.raises(ValueError, match="devices must be distinct"):
            dist.global_mesh(jax.devices() * 2)


def test_agree_min_single_process():
    assert dist.agree_min(7) == 7
    assert dist.agree_min(np.int64(1 << 40)) == 1 << 40
    with pytest.raises(TypeError, match="value must be an int; got 1.5"):
        dist.agree_min(1.5)
    with pytest.raises(TypeError, match="value must be an int"):
        dist.agree_min(True)


def test_no_mesh_paths():
    X = np.arange(12.0, dtype=np.float32).reshape(6, 2)
    x = dist.shard_rows(X, None)
    assert isinstance(x, jax.Array)
    np.testing.assert_array_equal(dist.to_host(x), X)
    tree = dist.replicate({"a": X, "b": np.ones(3)}, None)
    np.testing.assert_array_equal(dist.to_host(tree["a"]), X)
    np.testing.assert_array_equal(dist.to_host(np.arange(3)), np.arange(3))
    dist.check_same_on_all_processes(X)  # a no-op with one process


def test_a_host_copy_starts_early_on_an_accelerator_only():
    """start_host_copy asks an accelerator's fully addressable output to start its copy to
    the host; a CPU's output (already there) and a part of a global array are left alone."""
    import types

    asked = []

    def array(platform, addressable=True, memory="device"):
        return types.SimpleNamespace(
            is_fully_addressable=addressable,
            devices=lambda: [types.SimpleNamespace(platform=platform)],
            sharding=types.SimpleNamespace(memory_kind=memory),
            copy_to_host_async=lambda: asked.append((platform, memory)))

    started = [dist.start_host_copy(array(*how)) for how in (
        ("gpu",), ("cpu",), ("tpu", False), ("gpu", True, "pinned_host"))]
    # an output the program wrote to the host's pinned memory is there already
    assert asked == [("gpu", "device")] and started == [True, False, False, False]
    x = jax.device_put(np.arange(4.0))
    assert not dist.start_host_copy(x)  # a real CPU array: nothing to start, still readable
    np.testing.assert_array_equal(dist.to_host(x), np.arange(4.0))


def test_an_output_in_pinned_host_memory_is_read_explicitly_without_a_copy():
    """An accelerator's output its program wrote to pinned host memory is read as an explicit
    transfer (a user's transfer guard allows it) without device_get's copy first."""
    import types

    guards = []

    class Pinned:
        sharding = types.SimpleNamespace(memory_kind="pinned_host")
        is_fully_addressable = True

        def devices(self):
            return [types.SimpleNamespace(platform="gpu")]

        def copy_to_host_async(self):  # device_get's first step, not taken here
            raise AssertionError("a copy was started")

        def __array__(self, dtype=None, copy=None):
            guards.append(jax.config.jax_transfer_guard_device_to_host)
            return np.arange(3.0)

    read, early = dist.host_reader(Pinned())  # as a launch reads it: once placed, no copy
    with jax.transfer_guard("disallow"):
        np.testing.assert_array_equal(dist._read(Pinned()), np.arange(3.0))
        np.testing.assert_array_equal(read(Pinned()), np.arange(3.0))
    assert guards == ["allow", "allow"] and not early


def test_a_launchs_reader_follows_its_outputs_placement():
    """host_reader picks, from a chunk's first output, how every output of its launch is
    read: a CPU's with np.asarray, pinned host memory's explicitly without a copy, an
    accelerator's device memory through to_host with its copy to start early, and an array
    over several devices or processes through to_host; it starts no copy itself."""
    import types

    asked = []

    def array(platforms, addressable=True, memory="device"):
        return types.SimpleNamespace(
            is_fully_addressable=addressable,
            devices=lambda: [types.SimpleNamespace(platform=p) for p in platforms],
            sharding=types.SimpleNamespace(memory_kind=memory),
            copy_to_host_async=lambda: asked.append((platforms, memory)))

    x = jax.device_put(np.arange(4.0))
    read, early = dist.host_reader(x)
    assert read is np.asarray and not early
    np.testing.assert_array_equal(read(x), np.arange(4.0))
    assert dist.host_reader(array(["gpu"], memory="pinned_host"))[1] is False
    assert dist.host_reader(array(["gpu"])) == (dist.to_host, True)
    assert dist.host_reader(array(["gpu", "gpu"])) == (dist.to_host, True)
    assert dist.host_reader(array(["gpu"], addressable=False)) == (dist.to_host, False)
    assert asked == []


def test_bad_mesh_is_rejected():
    with pytest.raises(ValueError, match=r"mesh must be a 1-D jax.sharding.Mesh"):
        dist.shard_rows(np.zeros((4, 2)), "rows")


# ---------------------------------------------------------------- several processes


def test_two_processes_psum(tmp_path):
    """The harness itself: 2 processes x 2 CPU devices, a jitted sum and a shard_map psum."""
    results = launch("psum", tmp_path, num_processes=2, devices_per_process=2)
    for r in results:
        assert int(r["process_count"]) == 2
        assert int(r["global_devices"]) == 4
        assert float(r["sum"]) == float(r["expected_sum"])
        assert float(r["device_count"]) == 4.0


def test_distributed_helpers_two_processes(tmp_path):
    results = launch("helpers", tmp_path, num_processes=2, devices_per_process=2)
    for i, r in enumerate(results):
        assert int(r["process_count"]) == 2
        assert int(r["process_index"]) == i
        assert bool(r["is_main"]) == (i == 0)
        assert int(r["mesh_size"]) == 4
        assert int(r["agreed"]) == (5 << 33) + 7 - 1  # the minimum over both processes
        np.testing.assert_array_equal(r["col_sums"], r["expected_col_sums"])
        assert int(r["local_rows"]) == 6  # 2 local devices x 3 rows each, of 12
        assert bool(r["mismatch_detected"])
        assert bool(r["bad_rows_rejected"])


def test_distributed_helpers_one_process_four_devices(tmp_path):
    (r,) = launch("helpers", tmp_path, num_processes=1, devices_per_process=4)
    assert int(r["mesh_size"]) == 4
    assert int(r["agreed"]) == (5 << 33) + 7
    np.testing.assert_array_equal(r["col_sums"], r["expected_col_sums"])
    assert int(r["local_rows"]) == 12
    assert bool(r["bad_rows_rejected"])


def test_jaximp_two_processes_match_one_process(tmp_path):
    """PD, permutation importance and H-statistic: 2 processes x 2 devices == 1 device."""
    if len(jax.devices()) == 1:  # this process is the single-device reference: no launch
        from _multiprocess_worker import run_jaximp

        reference = run_jaximp(jax)
    else:
        (reference,) = launch("jaximp", tmp_path / "single", num_processes=1,
                              devices_per_process=1)
    results = launch("jaximp", tmp_path / "multi", num_processes=2, devices_per_process=2)
    assert_same(results[0], results[1], rtol=0, label="process 0 vs process 1")
    assert_same(results[0], reference, rtol=1e-5, atol=1e-7, label="2 processes vs 1 device")
