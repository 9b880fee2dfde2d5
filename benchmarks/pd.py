"""Partial dependence of every feature: jaximp vs the floor vs scikit-learn's brute PD.

The floor (``_common.scan_floor``) is one jitted ``lax.scan`` of the model over the same total
rows (grid points x features x n) in blocks of about 16k rows: the model evaluations alone.
Target: jaximp within 1.25x of the floor at every n. Each case first checks jaximp's PDs against
scikit-learn's (same weights, same grid), then times jaximp and the floor called in turn, then
jaximp and scikit-learn called in turn (``_common.timed_against_floor_and_peers``), best of
several rounds, each blocked until ready; ratios come from this one run.
Run: ``.venv/bin/python benchmarks/pd.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import (  # noqa: E402
    float32_rtol,
    jax_mlp,
    machine,
    matmul_flops,
    print_table,
    random_relu_mlp,
    scan_floor,
    sklearn_mlp,
    timed_against_floor_and_peers,
)

import jaximp  # noqa: E402

GRID = 20
TARGET = 1.25


def case(name, sizes, n, repeats):
    p = sizes[0]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    X = np.random.default_rng(1).uniform(size=(n, p))

    def ours():
        return jaximp.partial_dependence_all(f, X, grid="sklearn", grid_resolution=GRID)

    result = ours()  # compiles, and gives the values checked below
    from sklearn.inspection import partial_dependence as sk_pd

    est = sklearn_mlp(layers, p)

    def theirs():
        return [sk_pd(est, X, [j], method="brute", grid_resolution=GRID)["average"][0]
                for j in range(p)]

    start = time.perf_counter()
    ref = theirs()
    t_sk_first = time.perf_counter() - start
    scale = max(np.abs(r).max() for r in ref)
    for j, name_j in enumerate(result):
        err = np.abs(result[name_j].average[:, 0] - ref[j]).max()
        assert err <= float32_rtol() * scale + 1e-5, f"PD mismatch on {name_j}: {err}"

    grid_points = sum(len(r.grid_values[0]) for r in result.values())
    total_rows = grid_points * n
    floor = scan_floor(f, X, total_rows)
    rounds = {"sklearn": max(1, min(repeats, int(30 / max(t_sk_first, 1e-3))))}
    t = timed_against_floor_and_peers(ours, floor, {"sklearn": theirs}, repeats, rounds)
    ratio = t["ours"] / t["floor"]
    return {"case": name, "n": n, "rows": total_rows, "jaximp_s": t["ours"],
            "floor_s": t["floor"], "ratio_floor": ratio,
            f"target_{TARGET}x": "met" if ratio <= TARGET else "NOT met",
            "sklearn_s": t["sklearn"], "speedup_vs_sklearn": t["sklearn"] / t["ours"],
            "sklearn_rounds": rounds["sklearn"],
            "gflops": total_rows * matmul_flops(layers) / t["ours"] / 1e9}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the small MLP at n = 1,000 only")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per case")
    args = parser.parse_args()
    print(f"# partial dependence benchmark, {datetime.date.today()}, {machine()}")
    print(f"# every feature, scikit-learn grid {GRID}; best of at least {args.repeats} rounds, "
          "up to 200 (about 2 s) for fast calls (jaximp and floor in turn, then jaximp and "
          "scikit-learn); "
          "floor = one jitted lax.scan over ~16k-row blocks of the same total rows")
    small = [10, 64, 64, 1]
    large = [10, 1024, 1024, 1024, 1]
    cases = [("small MLP", small, 1000)]
    if not args.quick:
        cases += [("small MLP", small, 10_000), ("small MLP", small, 100_000),
                  ("large MLP", large, 2000)]
    rows = [case(*c, 3 if c[1] is large else args.repeats) for c in cases]
    header = ("case", "n", "rows", "jaximp_s", "floor_s", "ratio_floor", f"target_{TARGET}x",
              "sklearn_s", "speedup_vs_sklearn", "sklearn_rounds", "gflops")
    print_table(rows, header)


if __name__ == "__main__":
    main()
