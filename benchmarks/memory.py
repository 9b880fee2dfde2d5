"""Peak resident memory of jaximp methods against their ``memory_budget``.

Each case runs in a fresh subprocess, so peaks do not mix. In the subprocess the data and the
model (a jitted tanh MLP [c, 64, 64, 1] with fixed random weights) are built and the method is
called once on a few rows (a warm-up, so that JAX's runtime and the first compile are part of the
baseline); then the baseline RSS is read (``VmRSS`` of ``/proc/self/status``), the high-water
mark ``VmHWM`` is reset (by writing ``5`` to ``/proc/self/clear_refs``, where permitted) and the
case runs while a background thread samples ``VmRSS`` every 5 ms. The peak is the larger of the
sampled maximum and ``VmHWM`` (when it could be reset); the table reports ``peak - baseline``.

A case is *within* its allowance when

    peak - baseline <= budget + result + DATA_COPIES * data + RUNTIME_CONSTANT

where ``result`` is the bytes of the arrays in the returned object (what the user asked for:
the ICE array, the replicate matrices) and ``data`` the bytes of X (and y).

Cases (n shrunk 10x by ``--quick``), each at budgets of 64 MiB and 1 GiB:

- ``pd_all``: ``partial_dependence_all(model, X, kind="average")``, n = 500,000, p = 10, grid 20;
- ``ice``: ``partial_dependence(model, X, "x0", kind="individual")``, same data;
- ``pfi``: ``permutation_importance(model, X, y, n_repeats=30)``, n = 500,000, p = 10;
- ``hstat``: ``h_statistic(model, X, n_max=None, n_bootstrap=100, pairs="all")``, n = 2,000,
  p = 20 (190 pairs);
- ``sensitivity``: ``sensitivity_importance(model, X, y)``, n = 500,000, p = 10, n_repeats = 10.

A case that fails (an exception, a crash, a timeout, RSS above the guard) prints its error in
the table and the script goes on.

Run: ``.venv/bin/python benchmarks/memory.py [--quick] [--cases pd_all,ice] [--budgets 64,1024]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import os
import subprocess
import sys
import threading
import time

MIB = 1 << 20

# Bytes above the baseline that a call may use beyond its budget, its result and its data
# copies: executables compiled for the full-size chunk shapes (the warm-up compiled only the
# small ones), XLA's CPU thread-pool stacks and allocator arenas, Python objects of the plan,
# and malloc fragmentation. A fixed amount, independent of n.
RUNTIME_CONSTANT = 64 * MIB
# Copies of the data (X and y) a call may make: the float array of the dataset and one
# device-side copy.
DATA_COPIES = 2
# Budgets measured, bytes.
BUDGETS = (64 * MIB, 1024 * MIB)
SAMPLE_INTERVAL_S = 0.005
HIDDEN = (64, 64)
GRID_RESOLUTION = 20
PFI_REPEATS = 30
HSTAT_BOOTSTRAP = 100
SENSITIVITY_REPEATS = 10  # the method's default; lower with --sensitivity-repeats if too slow


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    call: str  # what is measured, for the table
    n: int
    p: int
    needs_y: bool
    warmup_rows: int


def cases(quick: bool, sensitivity_repeats: int) -> dict[str, Case]:
    s = 10 if quick else 1
    big = 500_000 // s
    # the H-statistic costs (pairs + 2 p) n^2 evaluations: its warm-up uses 100 rows, not 1,000
    return {c.name: c for c in (
        Case("pd_all", f"partial_dependence_all(kind='average', grid_resolution={GRID_RESOLUTION})",
             big, 10, False, 1000),
        Case("ice", f"partial_dependence('x0', kind='individual', grid_resolution="
             f"{GRID_RESOLUTION})", big, 10, False, 1000),
        Case("pfi", f"permutation_importance(n_repeats={PFI_REPEATS})", big, 10, True, 1000),
        Case("hstat", f"h_statistic(n_max=None, n_bootstrap={HSTAT_BOOTSTRAP}, pairs='all')",
             2000 // s, 20, False, 100),
        Case("sensitivity", f"sensitivity_importance(n_repeats={sensitivity_repeats})", big, 10,
             True, 1000),
    )}


# ----------------------------------------------------------------------------- the subprocess


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_hwm() -> bool:
    """Reset VmHWM to the current RSS; True when the kernel allowed it."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return _status_kib("VmHWM") <= _status_kib("VmRSS") + 1024


class _Sampler(threading.Thread):
    """Samples VmRSS every ``SAMPLE_INTERVAL_S``; kills the process above ``guard`` KiB."""

    def __init__(self, guard_kib: int):
        super().__init__(daemon=True)
        self.peak_kib = 0
        self.guard_kib = guard_kib
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            rss = _status_kib("VmRSS")
            self.peak_kib = max(self.peak_kib, rss)
            if rss > self.guard_kib:
                _emit({"error": f"RSS {rss / 1024:.0f} MiB above the guard "
                                f"{self.guard_kib / 1024:.0f} MiB; stopped"})
                os._exit(3)
            self._stop_event.wait(SAMPLE_INTERVAL_S)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
        self.peak_kib = max(self.peak_kib, _status_kib("VmRSS"))


def _emit(record: dict) -> None:
    sys.stdout.write("RESULT " + json.dumps(record) + "\n")
    sys.stdout.flush()


def _array_bytes(obj, seen=None) -> int:
    """Bytes of the NumPy / JAX arrays reachable from a result object (each counted once)."""
    import jax
    import numpy as np

    seen = {} if seen is None else seen  # id -> object, kept alive so that ids are not reused
    if id(obj) in seen:
        return 0
    seen[id(obj)] = obj
    if isinstance(obj, (np.ndarray, jax.Array)):
        return int(obj.nbytes)
    if isinstance(obj, dict):
        return sum(_array_bytes(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_array_bytes(v, seen) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(_array_bytes(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    return 0


def _tanh_mlp(p: int, seed: int = 0):
    """A jitted tanh MLP [p, *HIDDEN, 1] with fixed random weights, and its weights."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(seed)
    sizes = (p, *HIDDEN, 1)
    layers = [(jnp.asarray(rng.normal(size=(a, b)) / np.sqrt(a), jnp.float32),
               jnp.asarray(rng.normal(size=b) * 0.1, jnp.float32))
              for a, b in zip(sizes[:-1], sizes[1:])]

    @jax.jit
    def model(X):
        h = X
        for W, b in layers[:-1]:
            h = jnp.tanh(h @ W + b)
        W, b = layers[-1]
        return (h @ W + b)[:, 0]

    return model


def _call(case: Case, sensitivity_repeats: int, model, X, y, budget: int):
    import jaximp

    if case.name == "pd_all":
        return jaximp.partial_dependence_all(model, X, kind="average",
                                             grid_resolution=GRID_RESOLUTION,
                                             memory_budget=budget)
    if case.name == "ice":
        return jaximp.partial_dependence(model, X, "x0", kind="individual",
                                         grid_resolution=GRID_RESOLUTION, memory_budget=budget)
    if case.name == "pfi":
        return jaximp.permutation_importance(model, X, y, n_repeats=PFI_REPEATS,
                                             memory_budget=budget)
    if case.name == "hstat":
        return jaximp.h_statistic(model, X, n_max=None, n_bootstrap=HSTAT_BOOTSTRAP,
                                  pairs="all", memory_budget=budget)
    if case.name == "sensitivity":
        return jaximp.sensitivity_importance(model, X, y, n_repeats=sensitivity_repeats,
                                             memory_budget=budget)
    raise ValueError(f"unknown case {case.name!r}")


def worker(args) -> None:
    """One case at one budget; prints one ``RESULT {json}`` line."""
    import jax
    import numpy as np

    case = cases(args.quick, args.sensitivity_repeats)[args.worker]
    budget = args.budget
    record: dict = {"n": case.n, "p": case.p}
    try:
        model = _tanh_mlp(case.p)
        rng = np.random.default_rng(0)
        X = rng.uniform(-1.0, 1.0, size=(case.n, case.p)).astype(np.float32)
        y = None
        if case.needs_y:  # the model's prediction plus noise, in blocks (no n x 64 temporaries)
            y = np.concatenate([np.asarray(model(X[i:i + 16384]))
                                for i in range(0, case.n, 16384)])
            y = (y + rng.normal(scale=0.1, size=case.n)).astype(np.float32)
        record["data_bytes"] = int(X.nbytes + (0 if y is None else y.nbytes))
        w = case.warmup_rows
        jax.block_until_ready(_call(case, args.sensitivity_repeats, model, X[:w],
                                    None if y is None else y[:w], budget))
        gc.collect()
        baseline = _status_kib("VmRSS")
        hwm_reset = _reset_hwm()
        sampler = _Sampler(guard_kib=baseline + args.guard_mib * 1024)
        sampler.start()
        start = time.perf_counter()
        try:
            result = _call(case, args.sensitivity_repeats, model, X, y, budget)
            jax.block_until_ready(result)
        finally:
            wall = time.perf_counter() - start
            sampler.stop()
        peak = sampler.peak_kib
        if hwm_reset:
            peak = max(peak, _status_kib("VmHWM"))
        record.update(baseline_bytes=baseline * 1024, peak_above_bytes=(peak - baseline) * 1024,
                      hwm_reset=hwm_reset, wall_s=wall, result_bytes=_array_bytes(result))
    except BaseException as exc:  # noqa: BLE001 - reported in the table
        message = " ".join(str(exc).split())
        record["error"] = f"{type(exc).__name__}: {message[:160]}"
    _emit(record)


# ------------------------------------------------------------------------------ the driver


def run_case(script: str, name: str, budget: int, args) -> dict:
    command = [sys.executable, script, "--worker", name, "--budget", str(budget),
               "--sensitivity-repeats", str(args.sensitivity_repeats),
               "--guard-mib", str(args.guard_mib)] + (["--quick"] if args.quick else [])
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {args.timeout} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = [s for s in proc.stderr.strip().splitlines() if s.strip()]
    return {"error": f"exit status {proc.returncode}: " + (tail[-1][:160] if tail else "")}


def _available_mib() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 16 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="every n 10x smaller")
    parser.add_argument("--cases", default=None, help="comma-separated subset of the cases")
    parser.add_argument("--budgets", default=None,
                        help="comma-separated budgets in MiB (default 64,1024)")
    parser.add_argument("--sensitivity-repeats", type=int, default=SENSITIVITY_REPEATS)
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per case")
    parser.add_argument("--guard-mib", type=int, default=None,
                        help="stop a case whose RSS rises this far above its baseline "
                             "(default 75%% of the available memory)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.guard_mib is None:
        args.guard_mib = int(0.75 * _available_mib())
    if args.worker is not None:
        worker(args)
        return

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _common import machine, print_table

    table = cases(args.quick, args.sensitivity_repeats)
    names = list(table) if args.cases is None else [c.strip() for c in args.cases.split(",")]
    unknown = [c for c in names if c not in table]
    if unknown:
        parser.error(f"--cases: unknown {unknown}; choose from {list(table)}")
    budgets = BUDGETS if args.budgets is None else tuple(
        int(float(b) * MIB) for b in args.budgets.split(","))
    script = os.path.abspath(__file__)
    rows = []
    for name in names:
        case = table[name]
        for budget in budgets:
            start = time.perf_counter()
            r = run_case(script, name, budget, args)
            row = {"case": name, "n x p": f"{case.n:,} x {case.p}",
                   "budget MiB": f"{budget / MIB:.0f}"}
            if "error" in r:
                row["within"] = "-"
                row["note"] = r["error"]
            else:
                allowance = (budget + r["result_bytes"] + DATA_COPIES * r["data_bytes"]
                             + RUNTIME_CONSTANT)
                peak = r["peak_above_bytes"]
                row.update({
                    "wall s": r["wall_s"], "baseline MiB": r["baseline_bytes"] / MIB,
                    "peak above baseline MiB": peak / MIB, "result MiB": r["result_bytes"] / MIB,
                    "data MiB": r["data_bytes"] / MIB, "allowance MiB": allowance / MIB,
                    "within": "yes" if peak <= allowance else "NO",
                    "note": "" if r["hwm_reset"] else "VmHWM not reset: sampled peak only",
                })
            rows.append(row)
            print(f"  {name} @ {budget / MIB:.0f} MiB: {row['within']} "
                  f"({time.perf_counter() - start:.1f} s with start-up) {row['note']}",
                  file=sys.stderr, flush=True)

    print(f"# Memory benchmark{' (--quick)' if args.quick else ''}, {datetime.date.today()}, "
          f"{machine()}")
    print(f"Model: jitted tanh MLP [p, {', '.join(map(str, HIDDEN))}, 1]. Allowance = budget + "
          f"result + {DATA_COPIES} x data + {RUNTIME_CONSTANT / MIB:.0f} MiB runtime constant. "
          f"Peak = max(VmRSS sampled every {SAMPLE_INTERVAL_S * 1e3:.0f} ms, VmHWM after reset), "
          f"minus the baseline after a warm-up call.")
    print("Calls: " + "; ".join(f"{c.name}: {c.call}" for c in table.values() if c.name in names)
          + ".")
    if args.sensitivity_repeats != SENSITIVITY_REPEATS:
        print(f"Note: sensitivity_importance ran with n_repeats={args.sensitivity_repeats} "
              f"instead of its default {SENSITIVITY_REPEATS}, to keep the case short.")
    print()
    print_table(rows, ["case", "n x p", "budget MiB", "wall s", "baseline MiB",
                       "peak above baseline MiB", "result MiB", "data MiB", "allowance MiB",
                       "within", "note"])


if __name__ == "__main__":
    main()
