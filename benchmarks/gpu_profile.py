"""Where a warm call's time goes on a device, for the cases the GPU side by side finds slow.

For permutation importance (5 repeats), partial dependence of every feature (20 points) and
exact Shapley values (100 background rows) with a reused :class:`jaximp.Explainer`, on the
[10, 64, 64, 1] MLP of ``gpu.py``:

1. the phases of a warm call (until it returns, until its chunk is done, the read of its
   result), next to the floor blocked and read and the chunk alone with the call's arguments;
   the time of a warm call and the engine's block geometry at several memory budgets (the
   budget sets how many items and rows one block holds), next to the floor;
2. the device's busy time per kernel over a few warm calls, from a JAX profiler trace;
3. the host's time per function over many warm calls (cProfile), which shows the calls that
   wait for the device.

Run: ``.venv/bin/python benchmarks/gpu_profile.py [--cases pfi pd shapley] [--sizes N ...]
[--out DIR]`` (DIR keeps the traces and the profiles, taken at every size). On a CPU it runs too, at smaller sizes (``--quick``).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import glob
import gzip
import io
import json
import os
import pstats
import sys
import tempfile
import time

import jax
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import interleaved_best, jax_mlp, machine, random_relu_mlp  # noqa: E402
from gpu import floor_of  # noqa: E402

import jaximp  # noqa: E402
import jaximp.engine._engine as engine  # noqa: E402

P, GRID, REPEATS, BACKGROUND = 10, 20, 5, 100
CASES = ("pfi", "pd", "shapley")


# the calls that return before their result is read, and the reads
UNREAD = {"pfi": lambda ex: ex.permutation_importance(n_repeats=REPEATS),
          "pd": lambda ex: ex.partial_dependence_all(grid="sklearn", grid_resolution=GRID)}
READ = {"pfi": lambda result: result.importances,
        "pd": lambda results: [r.average for r in results.values()]}


def cases(n: int, rng, chosen=CASES):
    f = jax_mlp(random_relu_mlp([P, 64, 64, 1]))
    X = rng.uniform(size=(n, P))
    y = np.asarray(f(X.astype(np.float32)), np.float64).reshape(n) + 0.1 * rng.normal(size=n)
    B = rng.uniform(size=(BACKGROUND, P))
    calls = {
        "pfi": (lambda ex: READ["pfi"](UNREAD["pfi"](ex)), (P * REPEATS + 1) * n),
        "pd": (lambda ex: READ["pd"](UNREAD["pd"](ex)), n * GRID * P),
        "shapley": (lambda ex: ex.shapley_values().values, n * (2 ** P - 1) * BACKGROUND),
    }
    return f, X, y, B, {name: calls[name] for name in chosen}


@contextlib.contextmanager
def recorded_chunks():
    """The engine's chunks recorded while inside: ``built``, the block sizes of each chunk
    function built; ``last``, the last chunk called, its inputs and its output."""
    record = {"built": [], "last": {}}
    chunk_function = engine._chunk_function

    def recording(*args):
        record["built"].append(args[3])
        chunk = chunk_function(*args)

        def call(*inputs):
            out = chunk(*inputs)
            record["last"].update(chunk=chunk, inputs=inputs, out=out)
            return out

        return call

    engine._chunk_function = recording
    try:
        yield record
    finally:
        engine._chunk_function = chunk_function


def geometry_sweep(n: int, budgets, rng, chosen=CASES) -> list[dict]:
    """Time and block geometry of each case at each memory budget (None: the default)."""
    f, X, y, B, calls = cases(n, rng, chosen)
    rows = []
    with recorded_chunks() as record:
        built = record["built"]
        for name, (call, model_rows) in calls.items():
            fns = {"floor": floor_of(f, X, model_rows)}
            sizes = {}
            for budget in budgets:
                ex = jaximp.Explainer(f, X, y, background=B, memory_budget=budget)
                built.clear()
                jax.block_until_ready(call(ex))
                sizes[budget] = built[-1] if built else None
                fns[budget] = (lambda ex=ex, call=call: call(ex))
            best = interleaved_best(fns, 7)
            for budget in budgets:
                rows.append({"case": name, "n": n, "budget": budget or "default",
                             "sizes": str(sizes[budget]), "ms": 1e3 * best[budget],
                             "floor_ms": 1e3 * best["floor"],
                             "ratio": best[budget] / best["floor"]})
    return rows


def _median_ms(fn, calls: int = 300) -> float:
    """Median wall time of ``calls`` calls of ``fn`` (after 20 unmeasured), in ms."""
    for _ in range(20):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def phases(n: int, rng, chosen=CASES) -> list[str]:
    """A warm call split into the time until it returns, the wait for its (last) chunk and
    the read of its result (medians of calls each finished before the next), beside the
    floor blocked and with its sum read, and the chunk alone on the call's arguments."""
    f, X, y, B, calls = cases(n, rng, chosen)
    lines = []
    with recorded_chunks() as record:
        last = record["last"]
        for name, (call, model_rows) in calls.items():
            if name not in UNREAD:
                continue
            ex = jaximp.Explainer(f, X, y, background=B)
            floor = floor_of(f, X, model_rows)
            call(ex)
            marks = []  # per call: start, returned, chunk done, read
            for _ in range(320):
                start = time.perf_counter()
                pending = UNREAD[name](ex)
                returned = time.perf_counter()
                jax.block_until_ready(last["out"])
                done = time.perf_counter()
                READ[name](pending)
                marks.append((start, returned, done, time.perf_counter()))
            spans = 1e3 * np.median(np.diff(np.array(marks[20:]), axis=1), axis=0)
            chunk, inputs = last["chunk"], last["inputs"]
            lines.append(
                f"{name} n={n}: returns {spans[0]:.3f}, chunk done {spans[1]:.3f}, read "
                f"{spans[2]:.3f} ms; floor "
                f"blocked {_median_ms(lambda: floor().block_until_ready()):.3f}, read "
                f"{_median_ms(lambda: np.asarray(floor())):.3f} ms; the chunk alone blocked "
                f"{_median_ms(lambda: jax.block_until_ready(chunk(*inputs))):.3f}, read "
                f"{_median_ms(lambda: np.asarray(chunk(*inputs))):.3f} ms")
    return lines


def _trace_events(trace_dir: str):
    """The events of the newest Perfetto trace under ``trace_dir`` and the names of their
    processes (None when there is no trace)."""
    files = sorted(glob.glob(os.path.join(trace_dir, "**", "*.trace.json.gz"), recursive=True)
                   + glob.glob(os.path.join(trace_dir, "**", "perfetto_trace.json.gz"),
                               recursive=True), key=os.path.getmtime)
    if not files:
        return None, None
    with gzip.open(files[-1], "rt") as handle:
        events = json.load(handle)
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    names = {e["pid"]: e.get("args", {}).get("name", "") for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    return events, names


def call_timeline(trace_dir: str) -> list[str]:
    """One warm call's timeline (the middle one of the trace), in us from the launch of its
    chunk: when the launch returns, when the device's kernels start and end, and when the
    result's copy to the host starts and its read ends (a GPU trace; empty on a CPU)."""
    events, names = _trace_events(trace_dir)
    if events is None:
        return []
    spans = sorted((e for e in events if e.get("ph") == "X" and "dur" in e),
                   key=lambda e: e["ts"])
    launches = [e for e in spans if e["name"] == "PjitFunction(chunk)"]
    launches = [e for i, e in enumerate(launches)  # the outer of nested launch events
                if i == 0 or e["ts"] >= launches[i - 1]["ts"] + launches[i - 1]["dur"]]
    if len(launches) < 3:
        return []
    call = launches[len(launches) // 2]
    start, end = call["ts"], launches[len(launches) // 2 + 1]["ts"]
    window = [e for e in spans if start <= e["ts"] < end]
    on_device = [e for e in window if "GPU" in names.get(e["pid"], "")
                 or "device:" in names.get(e["pid"], "")]
    kernels = [e for e in on_device if "Memcpy" not in e["name"]]
    marks = {"launch returns": start + call["dur"]}
    if kernels:
        marks["kernels start"] = kernels[0]["ts"]
        marks["kernels end"] = max(e["ts"] + e["dur"] for e in kernels)
    for label, name in (("copy to host asked", "copy_to_host_async"),
                        ("read ends", "np.asarray")):
        found = [e for e in window if name in e["name"]]
        if found:
            marks[label] = found[-1]["ts"] + (found[-1]["dur"] if label == "read ends" else 0)
    return [f"{(at - start):9.1f} us  {label}"
            for label, at in sorted(marks.items(), key=lambda item: item[1])]


def kernel_table(trace_dir: str, top: int = 12) -> list[str]:
    """Device busy time per kernel name from the newest Perfetto trace under ``trace_dir``."""
    events, names = _trace_events(trace_dir)
    if events is None:
        return ["no trace file found"]
    device = collections.Counter()
    counts = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and "dur" in e and any(
                word in names.get(e.get("pid"), "") for word in ("GPU", "gpu", "device:")):
            device[e["name"][:70]] += float(e["dur"])
            counts[e["name"][:70]] += 1
    total = sum(device.values())
    lines = [f"device busy {total / 1e3:.2f} ms in {sum(counts.values())} events "
             f"({len(device)} names; processes: {sorted(set(names.values()))[:6]})"]
    lines += [f"{us / 1e3:9.3f} ms {counts[name]:6d}x  {name}"
              for name, us in device.most_common(top)]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (any device)")
    parser.add_argument("--out", help="a folder for the trace and the host profiles")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--sizes", nargs="+", type=int, help="rows n (default 10k and 1M; "
                        "exact Shapley values at 1,000)")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="jaximp-profile-")
    rng = np.random.default_rng(0)
    print(f"# where a warm call's time goes, {machine()}", flush=True)
    sizes = args.sizes or ([1_000, 10_000] if args.quick else [10_000, 1_000_000])
    budgets = [None, 1 << 28, 1 << 30] if args.quick else [None, 1 << 28, 1 << 30, 1 << 32]
    runs = [(n, [c for c in args.cases if c != "shapley"]) for n in sizes]
    if "shapley" in args.cases:  # 102M model rows at n = 1,000
        runs.append((args.sizes[0] if args.sizes else (20 if args.quick else 1_000), ["shapley"]))
    for n, chosen in runs:
        if not chosen:
            continue
        for line in phases(n, rng, chosen):
            print(f"# phases of a warm call (ms, medians): {line}", flush=True)
        for row in geometry_sweep(n, budgets, rng, chosen):
            print(f"# {row['case']} n={row['n']} budget={row['budget']}: {row['ms']:.3f} ms, "
                  f"{row['ratio']:.2f}x floor ({row['floor_ms']:.3f} ms); {row['sizes']}",
                  flush=True)
    for n, chosen in runs:
        if chosen:
            profile_calls(n, chosen, rng, out)


def profile_calls(n: int, chosen, rng, out: str) -> None:
    """Device time per kernel and host time per function of warm calls of each case."""
    f, X, y, B, calls = cases(n, rng, chosen)
    for name, (call, _) in calls.items():
        ex = jaximp.Explainer(f, X, y, background=B)
        for _ in range(3):
            jax.block_until_ready(call(ex))
        trace_dir = os.path.join(out, f"trace-{name}-{n}")
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            for _ in range(10):
                jax.block_until_ready(call(ex))
        try:
            lines = kernel_table(trace_dir)
            timeline = call_timeline(trace_dir)
        except Exception as err:  # noqa: BLE001 - a trace format this script does not know
            lines, timeline = [f"trace not read: {err!r}"], []
        print(f"# device time of 10 warm {name} calls at n = {n}:\n  " + "\n  ".join(lines))
        if timeline:
            print(f"# one warm {name} call at n = {n}, from its launch (under the profiler, "
                  "which slows the host):\n  " + "\n  ".join(timeline))
        repeats = 200 if n <= 10_000 and name != "shapley" else 20
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(repeats):
            jax.block_until_ready(call(ex))
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(14)
        profile.dump_stats(os.path.join(out, f"host-{name}-{n}.prof"))
        body = [line for line in text.getvalue().splitlines() if line.strip()][3:]
        print(f"# host time of {repeats} warm {name} calls at n = {n} (by own time):\n"
              + "\n".join(body), flush=True)


if __name__ == "__main__":
    main()
