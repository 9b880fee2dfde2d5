import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version

# Most of the suite's time is XLA compiling small programs that then run for microseconds:
# compile them at LLVM's lowest optimization level (-19% CPU on the PD and H tests) and with
# XLA:CPU's older elemental emitters for fusions, which compile faster than its MLIR fusion
# emitters (-36% CPU on the H and PD-importance tests). The arithmetic is the same (no
# fast-math either way); subprocesses inherit the flags (the multi-device tests add their
# device count; the compute-bound notebook drops the level). Compiling each program as one
# LLVM module (--xla_cpu_parallel_codegen_split_count=1) saved another 8% but changed the
# last bit of some results, so two paths that agree bit for bit for users no longer did.
# Two test processes share two cores: the OpenMP and BLAS pools of scikit-learn, LightGBM,
# XGBoost, torch and NumPy each start a thread per core and spin while they wait, so two of
# them oversubscribe the cores (-19% time on the tree, boosting and host-model tests with one
# thread each). XLA's own thread pool is not affected. A value set by the caller is kept.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")
# shap's numba functions compile for seconds per process and then run on a few rows here:
# interpreted, shap's tests (and the GPU side by side at its quick sizes) take 40% less time.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")
# jaxlib 0.11 dropped the older emitters and aborts on the flag that picks them.
_OLD_EMITTERS = tuple(int(part) for part in version("jaxlib").split(".")[:2]) < (0, 11)
os.environ["XLA_FLAGS"] = " ".join([
    os.environ.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0",
    *(["--xla_cpu_use_fusion_emitters=false"] if _OLD_EMITTERS else [])]).strip()

import jax  # noqa: E402 (after XLA_FLAGS, which the backend reads when it starts)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from jaximp.kernels import _streams  # noqa: E402

# Most of the suite's time is XLA compilation, and tests in different files (and the two xdist
# workers) compile many identical programs: share them through JAX's persistent compilation
# cache in a directory made for this run (by the xdist controller, whose environment the
# workers inherit) and removed when the run ends. Measured on the whole suite: ~7% less CPU.
# Only programs that took 0.5 s or more to compile are written: serializing an executable
# (jaxlib 0.10.2, CPU) crashed workers with a segmentation fault, each time in a different
# small program, and the long compiles hold most of the time saved. (XLA's compiler itself
# crashed once too; `make test` runs a test whose worker crashed once more.)
_CACHE_ENV = "PYTEST_JAXIMP_XLA_CACHE"
_CACHE_OWNER = _CACHE_ENV not in os.environ
if _CACHE_OWNER:
    os.environ[_CACHE_ENV] = tempfile.mkdtemp(prefix="jaximp-xla-cache-")
jax.config.update("jax_compilation_cache_dir", os.environ[_CACHE_ENV])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


ON_CPU = jax.default_backend() == "cpu"
# On a GPU the engine picks other blocks than the CPU's cache-sized ones.
on_cpu = pytest.mark.skipif(not ON_CPU, reason="tests the CPU's block geometry")


def assert_same_program(actual, desired, cpu_rtol=0.0, cpu_atol=0.0):
    """Two programs that compute one result (a bound method and its function, a fresh plan
    and a cached one): equal to ``cpu_rtol`` and ``cpu_atol`` on the CPU (bit for bit by
    default); on a GPU,
    XLA may sum float32 values of differently compiled programs in another order, which
    moves their last bits, relative to the array's scale (values near zero included)."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    if ON_CPU:
        np.testing.assert_allclose(actual, desired, rtol=cpu_rtol, atol=cpu_atol)
    else:
        scale = float(np.nanmax(np.abs(desired))) if desired.size else 0.0
        np.testing.assert_allclose(actual, desired, rtol=1e-5, atol=1e-6 * scale)


def assert_same_frame(actual, desired):
    """:func:`assert_same_program` for data frames: numeric columns so, the rest equal."""
    if ON_CPU:
        pd.testing.assert_frame_equal(actual, desired)
        return
    assert list(actual.columns) == list(desired.columns)
    pd.testing.assert_index_equal(actual.index, desired.index)
    for column in desired.columns:
        if pd.api.types.is_float_dtype(desired[column]):
            assert_same_program(actual[column].to_numpy(), desired[column].to_numpy())
        else:
            pd.testing.assert_series_equal(actual[column], desired[column])


def pytest_unconfigure(config):
    if _CACHE_OWNER:
        shutil.rmtree(os.environ.pop(_CACHE_ENV), ignore_errors=True)


def python_command() -> list:
    """This Python for a child script, with -P: the script's folder (the checkout, for
    ``-c``) does not come first on its path, so it imports the jaximp this process imports
    (an installed one, on a machine without the editable install)."""
    return [sys.executable, "-P"]


def run_on_host_devices(script: str, out, devices: int = 4):
    """Run ``script`` (Python source writing an ``.npz`` to the path ``out``, which it names
    ``OUT``) in a process with ``devices`` forced CPU devices and the suite's compile flags;
    returns the loaded arrays."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=" ".join(
        [os.environ["XLA_FLAGS"], f"--xla_force_host_platform_device_count={devices}"]))
    subprocess.run([*python_command(), "-c", script.replace("OUT", repr(str(out)))],
                   check=True, env=env, timeout=300)
    return np.load(out)


@jax.jit
def _permutation_of(bits, stream, rows, n):
    return _streams.feistel_permutation(_streams.seed_of(bits, stream), rows, n)


def engine_permutations(plan, n):
    """The permutations the engine uses for each item of a permutation plan, (b, n)."""
    bits, rows = jnp.asarray(plan.key_bits), jnp.arange(n)
    return np.stack([np.asarray(_permutation_of(bits, jnp.asarray(s), rows, jnp.int32(n)))
                     for s in plan.item_stream])


def random_mlp(key_seed: int, sizes=(3, 16, 16, 1)):
    """Random-weight tanh MLP as a pure JAX function and its float64 NumPy twin."""
    rng = np.random.default_rng(key_seed)
    layers = [
        (rng.normal(size=(a, b)) / np.sqrt(a), rng.normal(size=b) * 0.1)
        for a, b in zip(sizes[:-1], sizes[1:])
    ]

    def f_jax(X):
        h = X
        for W, b in layers[:-1]:
            h = jnp.tanh(h @ jnp.asarray(W, jnp.float32) + jnp.asarray(b, jnp.float32))
        W, b = layers[-1]
        out = h @ jnp.asarray(W, jnp.float32) + jnp.asarray(b, jnp.float32)
        return out[:, 0] if out.shape[1] == 1 else out

    def f_np(X):
        h = np.asarray(X, np.float64)
        for W, b in layers[:-1]:
            h = np.tanh(h @ W + b)
        W, b = layers[-1]
        out = h @ W + b
        return out[:, 0] if out.shape[1] == 1 else out

    return f_jax, f_np, layers


@pytest.fixture
def mlp3():
    return random_mlp(0)


@pytest.fixture
def data3():
    return np.random.default_rng(1).normal(size=(120, 3))


# Tests that each take seconds (notebooks, subprocesses, the docs build): started first, so
# that the two test processes end together instead of one waiting on the other's last one.
_LONG_FIRST = ("test_notebooks.py", "test_multiprocess.py", "test_docs.py", "test_readme.py",
               "test_packaging.py", "test_engine_modes.py", "test_memory_budget.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name not in _LONG_FIRST)  # stable: order kept


def written_out_loss(name: str, target, mean):
    """Per-row losses in float64, written out from their definitions (hstats' losses.R for
    the deviances, the Metrics package for the percentage and log errors)."""
    target, mean = np.asarray(target, np.float64), np.asarray(mean, np.float64)
    if name == "poisson":
        safe = np.where(target > 0, target, 1.0)
        return 2 * np.where(target > 0, target * np.log(safe / mean) - (target - mean), mean)
    if name == "gamma":
        return -2 * (np.log(target / mean) - (target - mean) / mean)
    if name == "mape":
        return np.abs(target - mean) / np.abs(target)
    if name == "msle":
        return (np.log(1 + target) - np.log(1 + mean)) ** 2
    if name == "logloss":  # hstats' xlogy: a term whose factor is 0 is 0
        with np.errstate(divide="ignore", invalid="ignore"):
            return -(np.where(target == 0, 0.0, target * np.log(mean))
                     + np.where(target == 1, 0.0, (1 - target) * np.log(1 - mean)))
    raise ValueError(name)
