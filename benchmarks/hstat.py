"""Friedman's H-statistic, all pairs: jaximp vs artemis vs a plain NumPy loop vs the floor.

Case 1: all 45 pairwise H2 for p = 10, n = 300, a random ReLU MLP [10, 64, 64, 1]. Every method
needs the 10 one-feature PDs and the 45 pair PDs at the 300 rows (55 x 300 x 300 = 4.95M model
rows). artemis (``FriedmanHStatisticMethod``, pandas-based) gets the same weights wrapped as an
object with a NumPy ``predict``. Two floors: one jitted predict over the same total rows in a
single call (``floor_s``), and the same predict called back to back on cache-sized blocks, as
the engine evaluates on CPU (``floor_blocks_s``). Case 2: p = 50, n = 500 (1225 pairs, 319M
model rows), jaximp against the blocked floor.

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
from _common import (  # noqa: E402
    blocked_floor, jax_mlp, machine, matmul_flops, print_table, random_relu_mlp,
)

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


def jaximp_h2(f, X, pairs=None):
    h = h_statistic(f, X, pairs="all" if pairs is None else pairs, overall=False, n_max=None)
    return h.pairwise.values[:, 0]


def floor_fn(f, X, total_rows: int):
    """One jitted predict over all ``total_rows`` rows."""
    predict = jax.jit(f)
    data = jnp.asarray(np.resize(X.astype(np.float32), (total_rows, X.shape[1])))
    jax.block_until_ready(predict(data))
    return lambda: predict(data)


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

    # 2. Timings, all in this run: jaximp with its defaults; the floor as one jitted predict
    # over all rows (as the target is stated) and as back-to-back calls on cache-sized blocks.
    sets = p + len(pairs)  # 1-D PDs once, then one PD per pair
    total_rows = sets * n * n + n
    t = interleaved_best({
        "ours": lambda: jaximp_h2(f, X),
        "floor": floor_fn(f, X, total_rows),
        "loop": lambda: numpy_loop_h2(numpy_model, X, pairs),
        "artemis": theirs,
    }, repeats)
    t_blocks, block = blocked_floor(f, X, total_rows, repeats)
    t_ours, t_floor, t_loop, t_art_run = t["ours"], t["floor"], t["loop"], t["artemis"]
    art_sets = k + n_art_pairs
    t_art = t_art_run * sets / art_sets  # artemis evaluates n*n rows per set, like us
    row = {
        "case": f"p={p}, n={n}, MLP {sizes}", "pairs": len(pairs), "model_rows": total_rows,
        "jaximp_s": t_ours, "floor_s": t_floor, "ratio_floor": t_ours / t_floor,
        "floor_blocks_s": t_blocks, "ratio_floor_blocks": t_ours / t_blocks,
        "numpy_loop_s": t_loop, "speedup_vs_numpy": t_loop / t_ours,
        "artemis_s": t_art, "speedup_vs_artemis": t_art / t_ours,
        "gflops": total_rows * matmul_flops(layers) / t_ours / 1e9,
    }
    notes = [f"floor_blocks: jitted predict on {block}-row blocks called back to back; "
             f"jaximp, floor, loop and artemis timed in turn, best of {repeats}"]
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
    ours_few = jaximp_h2(f, X, [(f"x{a}", f"x{b}") for a, b in few])
    loop_few = numpy_loop_h2(NumpyMLP(layers), X, few)
    assert np.allclose(ours_few, loop_few, rtol=1e-3, atol=1e-6)
    sets = p + len(pairs)
    total_rows = sets * n * n + n
    start = time.perf_counter()
    values = jax.block_until_ready(jaximp_h2(f, X))
    t_first = time.perf_counter() - start  # includes compiling the engine for this shape
    assert values.shape == (len(pairs),) and np.all(np.isfinite(values))
    t_ours = interleaved_best({"ours": lambda: jaximp_h2(f, X)}, repeats)["ours"]
    t_floor, block = blocked_floor(f, X, total_rows, 1, blocks=(16384,))
    return {
        "case": f"p={p}, n={n}, MLP {sizes}", "pairs": len(pairs), "model_rows": total_rows,
        "jaximp_s": t_ours, "jaximp_first_call_s": t_first, "floor_blocks_s": t_floor,
        "ratio_floor_blocks": t_ours / t_floor,
        "gflops": total_rows * matmul_flops(layers) / t_ours / 1e9,
        "note": f"floor_blocks: jitted predict on {block}-row blocks called back to back over "
                f"the total rows (one call over all rows would need ~64 GB); best of {repeats}",
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
            "floor_blocks_s", "ratio_floor_blocks", "numpy_loop_s", "speedup_vs_numpy",
            "artemis_s", "speedup_vs_artemis", "jaximp_first_call_s", "gflops",
            "max_abs_diff_vs_numpy"]
    print_table(rows, keys)
    for row in rows:
        print(f"- {row['case']}: {row['note']}")
    small = rows[0]
    speedup, ratio = small["speedup_vs_artemis"], small["ratio_floor_blocks"]
    print(f"targets: >= 10x faster than artemis: {speedup:.1f}x "
          f"({'met' if speedup >= 10 else 'NOT met'}); within 1.3x of the blocked floor: "
          f"{ratio:.2f}x ({'met' if ratio <= 1.3 else 'NOT met'}); against the one-call "
          f"floor: {small['ratio_floor']:.2f}x")

if __name__ == "__main__":
    main()
