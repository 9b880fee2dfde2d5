"""PD of every feature for n = 1,000,000 rows, p = 20, grid 50 of the small MLP [20, 64, 64, 1].

Checks that the engine stays within its memory budget: it never holds more than one chunk of
replaced rows and activations. Prints time, peak resident memory and the budget. A slice of
the result is checked against a float64 NumPy computation first.
Run: ``.venv/bin/python benchmarks/pd_memory.py [--n 1000000]`` (``--quick``: n = 100,000).
"""

from __future__ import annotations

import argparse
import datetime
import resource
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import jax_mlp, machine, matmul_flops, random_relu_mlp  # noqa: E402

import jaximp  # noqa: E402


def numpy_mlp(layers, X):
    h = X.astype(np.float64)
    for W, b in layers[:-1]:
        h = np.maximum(h @ W + b, 0)
    W, b = layers[-1]
    return (h @ W + b)[:, 0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--grid", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="n = 100,000 (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.n = min(args.n, 100_000)
    layers = random_relu_mlp([args.p, 64, 64, 1])
    f = jax_mlp(layers)
    X = np.random.default_rng(0).uniform(size=(args.n, args.p)).astype(np.float32)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    budget = jaximp.default_memory_budget()
    start = time.perf_counter()
    result = jaximp.partial_dependence_all(f, X, grid_resolution=args.grid)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    # check one feature's PD at two grid points on a float64 NumPy evaluation of all rows
    pd_x0 = result["x0"]
    worst = 0.0
    for k in (0, args.grid - 1):
        Xz = X.astype(np.float64)
        Xz[:, 0] = pd_x0.grid_values[0][k]
        ref = numpy_mlp(layers, Xz).mean()
        worst = max(worst, abs(pd_x0.average[k, 0] - ref) / abs(ref))
    assert worst < 1e-5, worst
    rows = args.n * args.p * args.grid
    print(f"# PD memory benchmark, {datetime.date.today()}, {machine()}")
    print(f"n={args.n}, p={args.p}, grid={args.grid}: {rows:.3g} model rows in {elapsed:.1f}s "
          f"({rows * matmul_flops(layers) / elapsed / 1e9:.1f} GFLOP/s); peak RSS "
          f"{peak:.2f} GiB (data {X.nbytes / 2**30:.2f} GiB, before the run {rss_before:.2f} "
          f"GiB); chunk budget {budget / 2**30:.2f} GiB; relative error of the PD mean against "
          f"float64 over all {args.n} rows: {worst:.1e}")


if __name__ == "__main__":
    main()
