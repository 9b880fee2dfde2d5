"""Partial dependence of every feature: jaximp vs scikit-learn's brute PD vs the floor.

The floor is one jitted predict over the same total rows (features x grid x n), i.e. the model
evaluations alone; the blocked floor runs that predict as back-to-back calls on cache-sized
blocks (the best of three block sizes), the way jaximp's engine evaluates on CPU. Run: ``.venv/bin/python benchmarks/pd.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import datetime
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import (  # noqa: E402
    best_time, blocked_floor, jax_mlp, machine, matmul_flops, print_table, random_relu_mlp, sklearn_mlp,
)

import jaximp  # noqa: E402

GRID = 20


def case(name, sizes, n, with_sklearn=True, repeats=3):
    p = sizes[0]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    X = np.random.default_rng(1).uniform(size=(n, p))

    def ours():
        return jaximp.partial_dependence_all(f, X, grid="sklearn", grid_resolution=GRID)

    result = ours()  # compiles, and gives the values checked below
    total_rows = p * GRID * n
    big = jnp.asarray(np.tile(X.astype(np.float32), (p * GRID, 1)))
    floor_fn = jax.jit(f)
    jax.block_until_ready(floor_fn(big))
    t_ours = best_time(ours, repeats)
    t_floor = best_time(lambda: floor_fn(big), repeats)
    t_blocked, _ = blocked_floor(f, X, total_rows, repeats)
    row = {"case": name, "n": n, "rows": total_rows, "jaximp_s": t_ours, "floor_s": t_floor,
           "ratio_floor": t_ours / t_floor, "blocked_floor_s": t_blocked,
           "ratio_blocked_floor": t_ours / t_blocked}
    row["gflops"] = total_rows * matmul_flops(layers) / t_ours / 1e9
    if with_sklearn:
        from sklearn.inspection import partial_dependence as sk_pd

        est = sklearn_mlp(layers, p)

        def theirs():
            return [sk_pd(est, X, [j], method="brute", grid_resolution=GRID)["average"][0]
                    for j in range(p)]

        ref = theirs()
        scale = max(np.abs(r).max() for r in ref)
        for j, name_j in enumerate(result):
            err = np.abs(result[name_j].average[:, 0] - ref[j]).max()
            assert err <= 1e-4 * scale + 1e-5, f"PD mismatch on {name_j}: {err}"
        row["sklearn_s"] = best_time(theirs, 1 if n > 5000 else repeats)
        row["speedup_vs_sklearn"] = row["sklearn_s"] / t_ours
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args()
    print(f"# partial dependence benchmark, {datetime.date.today()}, {machine()}")
    small = [10, 64, 64, 1]
    large = [10, 1024, 1024, 1024, 1]
    cases = [("small MLP", small, 1000)]
    if not args.quick:
        cases += [("small MLP", small, 10_000), ("large MLP", large, 2000)]
    rows = [case(*c) for c in cases]
    header = ("case", "n", "rows", "jaximp_s", "floor_s", "ratio_floor", "blocked_floor_s",
              "ratio_blocked_floor", "sklearn_s",
              "speedup_vs_sklearn", "gflops")
    print_table(rows, header)


if __name__ == "__main__":
    main()
