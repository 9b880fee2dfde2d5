"""Friedman's H-statistic, all pairs: jaximp vs artemis vs a plain NumPy loop vs the floor.

Case 1: all 45 pairwise H2 for p = 10, n = 300, a random ReLU MLP [10, 64, 64, 1]. Every method
needs the 10 one-feature PDs and the 45 pair PDs at the 300 rows (55 x 300 x 300 = 4.95M model
rows). artemis (``FriedmanHStatisticMethod``, pandas-based) gets the same weights wrapped as an
object with a NumPy ``predict``. Two floors: one jitted predict over the same total rows in a
single call (``floor_s``), and the same predict called back to back on blocks of the engine's
chunk size (``floor_blocks_s``). jaximp runs with the engine's default memory budget and with a
16 MiB budget, whose chunks keep a small MLP's activations in the CPU caches. Case 2: p = 50,
n = 500 (1225 pairs, 319M model rows), jaximp (16 MiB budget) against the blocked floor.

Every case first asserts that the methods agree, blocks on device results, and reports ratios
measured in this one run (jaximp and the floors interleaved, best of several runs). Run:
``.venv/bin/python benchmarks/hstat.py`` (``--quick`` for a smoke run with smaller sizes).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import jax_mlp, machine, matmul_flops, random_relu_mlp  # noqa: E402

from jaximp._hstat import h_statistic  # noqa: E402


class NumpyMLP:
    """The same weights with a NumPy ``predict`` (float32 matmuls), for artemis and the loop."""

    def __init__(self, layers):
        self.layers = layers

    def predict(self, X):
        h = np.asarray(X, np.float32)
        for W, b in self.layers[:-1]:
            h = np.maximum(h @ W + b, 0.0)
        W, b = self.layers[-1]
        return (h @ W + b)[:, 0]


def numpy_loop_h2(model: NumpyMLP, X: np.ndarray, pairs) -> np.ndarray:
    """Pairwise H2 with a plain NumPy loop: one (n*n, p) batch per feature set, 1-D PDs reused."""
    n = X.shape[0]

    def pd_at_rows(cols):
        block = np.tile(X, (n, 1))  # row i*n + b: background row b ...
        block[:, cols] = np.repeat(X[:, cols], n, axis=0)  # ... with row i's values of S
        pd_ = model.predict(block).reshape(n, n).astype(np.float64).mean(axis=1)
        return pd_ - pd_.mean()

    single = {j: pd_at_rows([j]) for j in sorted({j for pair in pairs for j in pair})}
    out = []
    for j, k in pairs:
        joint = pd_at_rows([j, k])
        out.append(np.sum((joint - single[j] - single[k]) ** 2) / np.sum(joint**2))
    return np.array(out)


CACHE_BUDGET = 16 << 20  # bytes per engine chunk that keep a small MLP's activations in cache


def jaximp_h2(f, X, pairs=None, memory_budget=None):
    h = h_statistic(f, X, pairs="all" if pairs is None else pairs, overall=False, n_max=None,
                    memory_budget=memory_budget)
    return h.pairwise.values[:, 0]


def chunk_rows(f, X, sets: int, memory_budget) -> int:
    """Rows per engine chunk for this model and budget (to time the floor on equal blocks)."""
    import jaximp
    from jaximp._engine import _bytes_per_row, _plan, default_memory_budget

    n, p = X.shape
    predictor = jaximp.as_predictor(f, n_features=p)
    budget = default_memory_budget() if memory_budget is None else memory_budget
    items, rows = _plan(sets * n, n, _bytes_per_row(predictor, p), budget, 1)
    return items * rows


def floor_fn(f, X, total_rows: int, block_rows: int | None):
    """A jitted predict over ``total_rows`` rows: one call, or back-to-back calls on blocks of
    ``block_rows`` rows (dispatched asynchronously, blocked once at the end)."""
    n, p = X.shape
    predict = jax.jit(f)
    rows = total_rows if block_rows is None else min(block_rows, total_rows)
    data = jnp.asarray(np.resize(X.astype(np.float32), (rows, p)))
    calls = int(round(total_rows / rows))
    jax.block_until_ready(predict(data))
    return lambda: [predict(data) for _ in range(calls)]


def interleaved_best(fns: dict, repeats: int) -> dict:
    """Best wall time of each function, the functions run in turn ``repeats`` times, so that
    a busy machine slows all of them alike."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def case_small(n: int, p: int, repeats: int, artemis_features: int | None) -> dict:
    sizes = [p, 64, 64, 1]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    X = np.random.default_rng(1).normal(size=(n, p))
    names = [f"x{j}" for j in range(p)]
    pairs = list(itertools.combinations(range(p), 2))
    numpy_model = NumpyMLP(layers)

    # 1. Results agree: jaximp vs the NumPy loop on all pairs, vs artemis on the pairs it runs.
    ours = jaximp_h2(f, X)  # also compiles
    loop = numpy_loop_h2(numpy_model, X, pairs)
    assert np.allclose(ours, loop, rtol=1e-3, atol=1e-6), np.abs(ours - loop).max()
    from artemis.interactions_methods.model_agnostic import FriedmanHStatisticMethod

    frame = pd.DataFrame(X, columns=names)
    k = p if artemis_features is None else artemis_features
    art_features = names[:k]

    def theirs():
        method = FriedmanHStatisticMethod()
        method.fit(numpy_model, frame, features=art_features, calculate_ova=False)
        return method.ovo

    ovo = theirs()
    value_col = ovo.columns[-1]
    art = {tuple(sorted((a, b))): v for a, b, v in zip(ovo["Feature 1"], ovo["Feature 2"],
                                                        ovo[value_col])}
    for (j, l), v in zip(pairs, ours):
        key = (names[j], names[l])
        if key in art:
            assert abs(art[key] - v) <= 1e-3 * abs(v) + 1e-6, (key, art[key], v)
    n_art_pairs = len(art)

    # 2. Timings, all in this run. jaximp runs with the engine's default memory budget and with
    # a cache-sized one; the floor is one jitted predict over all rows (as the target is
    # stated) and the same predict on blocks of the engine's chunk size.
    sets = p + len(pairs)  # 1-D PDs once, then one PD per pair
    total_rows = sets * n * n + n
    block = chunk_rows(f, X, sets, CACHE_BUDGET)
    jaximp_h2(f, X, memory_budget=CACHE_BUDGET)  # compile this chunk shape too
    t = interleaved_best({
        "ours": lambda: jaximp_h2(f, X),
        "ours_cache": lambda: jaximp_h2(f, X, memory_budget=CACHE_BUDGET),
        "floor": floor_fn(f, X, total_rows, None),
        "floor_block": floor_fn(f, X, total_rows, block),
        "loop": lambda: numpy_loop_h2(numpy_model, X, pairs),
        "artemis": theirs,
    }, repeats)
    t_ours, t_ours_cache, t_floor, t_floor_block = (
        t["ours"], t["ours_cache"], t["floor"], t["floor_block"])
    t_loop, t_art_run = t["loop"], t["artemis"]
    art_sets = k + n_art_pairs
    t_art = t_art_run * sets / art_sets  # artemis evaluates n*n rows per set, like us
    row = {
        "case": f"p={p}, n={n}, MLP {sizes}", "pairs": len(pairs), "model_rows": total_rows,
        "jaximp_s": t_ours, "floor_s": t_floor, "ratio_floor": t_ours / t_floor,
        "jaximp_16MiB_s": t_ours_cache, "floor_blocks_s": t_floor_block,
        "ratio_floor_blocks": t_ours_cache / t_floor_block,
        "numpy_loop_s": t_loop, "speedup_vs_numpy": t_loop / t_ours,
        "artemis_s": t_art, "speedup_vs_artemis": t_art / t_ours,
        "speedup_vs_artemis_16MiB": t_art / t_ours_cache,
        "gflops": total_rows * matmul_flops(layers) / t_ours / 1e9,
        "gflops_16MiB": total_rows * matmul_flops(layers) / t_ours_cache / 1e9,
    }
    notes = [f"floor_blocks: jitted predict on {block}-row blocks (the engine's chunk at "
             f"memory_budget=16 MiB) called back to back over the total rows; every time is "
             f"the best of {repeats} runs of all six methods in turn"]
    if art_sets < sets:
        notes.append(f"artemis timed on {n_art_pairs} pairs of {k} features ({t_art_run:.2f} s "
                     f"for {art_sets} feature sets), extrapolated x {sets}/{art_sets} to all "
                     f"{len(pairs)} pairs")
    else:
        notes.append("artemis timed on all pairs (calculate_ova=False)")
    row["note"] = "; ".join(notes)
    row["max_abs_diff_vs_numpy"] = float(np.abs(ours - loop).max())
    return row


def case_large(n: int, p: int, repeats: int) -> dict:
    sizes = [p, 64, 64, 1]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    X = np.random.default_rng(2).normal(size=(n, p))
    pairs = list(itertools.combinations(range(p), 2))
    # Check a few pairs against the NumPy loop before timing everything.
    few = pairs[:3]
    ours_few = jaximp_h2(f, X, [(f"x{a}", f"x{b}") for a, b in few], CACHE_BUDGET)
    loop_few = numpy_loop_h2(NumpyMLP(layers), X, few)
    assert np.allclose(ours_few, loop_few, rtol=1e-3, atol=1e-6)
    sets = p + len(pairs)
    total_rows = sets * n * n + n
    start = time.perf_counter()
    values = jax.block_until_ready(jaximp_h2(f, X, memory_budget=CACHE_BUDGET))
    t_first = time.perf_counter() - start  # includes compiling the engine for this shape
    assert values.shape == (len(pairs),) and np.all(np.isfinite(values))
    block = chunk_rows(f, X, sets, CACHE_BUDGET)
    t = interleaved_best({
        "ours": lambda: jaximp_h2(f, X, memory_budget=CACHE_BUDGET),
        "floor": floor_fn(f, X, total_rows, block),
    }, repeats)
    t_ours, t_floor = t["ours"], t["floor"]
    return {
        "case": f"p={p}, n={n}, MLP {sizes}", "pairs": len(pairs), "model_rows": total_rows,
        "jaximp_16MiB_s": t_ours, "jaximp_first_call_s": t_first, "floor_blocks_s": t_floor,
        "ratio_floor_blocks": t_ours / t_floor,
        "gflops_16MiB": total_rows * matmul_flops(layers) / t_ours / 1e9,
        "note": f"memory_budget=16 MiB; floor_blocks: jitted predict on {block}-row blocks "
                "called back to back over the total rows (one call over all rows would need "
                f"~64 GB); best of {repeats} interleaved runs",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args()
    print(f"# H-statistic benchmark (all pairwise H2), {datetime.date.today()}, {machine()}")
    if args.quick:
        rows = [case_small(60, 6, 2, 3)]
    else:
        rows = [case_small(300, 10, 3, None), case_large(500, 50, 2)]
    keys = ["case", "pairs", "model_rows", "jaximp_s", "floor_s", "ratio_floor",
            "jaximp_16MiB_s", "floor_blocks_s", "ratio_floor_blocks", "numpy_loop_s",
            "speedup_vs_numpy", "artemis_s", "speedup_vs_artemis", "speedup_vs_artemis_16MiB",
            "jaximp_first_call_s", "gflops", "gflops_16MiB", "max_abs_diff_vs_numpy"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        cells = []
        for key in keys:
            v = row.get(key, "")
            cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        print("| " + " | ".join(cells) + " |")
    for row in rows:
        print(f"- {row['case']}: {row['note']}")
    small = rows[0]
    for label, speedup, ratio in (
        ("default memory_budget", small["speedup_vs_artemis"], small["ratio_floor"]),
        ("memory_budget=16 MiB", small["speedup_vs_artemis_16MiB"],
         small["ratio_floor_blocks"]),
    ):
        print(f"targets ({label}): >= 10x faster than artemis: {speedup:.1f}x "
              f"({'met' if speedup >= 10 else 'NOT met'}); within 1.3x of the floor: "
              f"{ratio:.2f}x ({'met' if ratio <= 1.3 else 'NOT met'})")

if __name__ == "__main__":
    main()
