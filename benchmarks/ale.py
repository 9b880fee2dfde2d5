"""Derivative ALE vs finite-difference ALE of every feature of a small smooth MLP.

n = 100,000 rows, 20 features, 20 quantile bins. Finite differences cost 2 model calls per row
and feature (40 n evaluations); the derivative form one reverse-mode gradient per row for all
features together. The script first checks that the two agree (smooth tanh model, so they
differ only by the bins' curvature error), then times each once after a compiling warm-up
call, blocking on the results (they are host arrays), and prints the ratio from this one run.
Run: ``.venv/bin/python benchmarks/ale.py`` (``--n`` to change the rows).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time

import jax.numpy as jnp
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import machine  # noqa: E402

from jaximp.methods._ale import ale_importance  # noqa: E402

P, BINS = 20, 20


def tanh_mlp(sizes, seed=0):
    rng = np.random.default_rng(seed)
    layers = [(jnp.asarray(rng.normal(size=(a, b)) / np.sqrt(a), jnp.float32),
               jnp.asarray(rng.normal(size=b) * 0.1, jnp.float32))
              for a, b in zip(sizes[:-1], sizes[1:])]

    def f(X):
        h = X
        for W, b in layers[:-1]:
            h = jnp.tanh(h @ W + b)
        W, b = layers[-1]
        return (h @ W + b)[:, 0]

    return f


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    f = tanh_mlp((P, 32, 32, 1))
    X = np.random.default_rng(1).uniform(-2, 2, size=(args.n, P))
    print(f"# ALE benchmark, {datetime.date.today()}, {machine()}")
    print(f"# n = {args.n}, {P} features, {BINS} bins, tanh MLP {P}-32-32-1; one timed run each "
          "after a warm-up")

    def run(derivative):
        return ale_importance(f, X, bins=BINS, derivative=derivative)

    fd, grad = run(False), run(True)  # compile, and the values checked
    for name in fd.feature_names:
        a, b = fd.info["ale"][name].centred, grad.info["ale"][name].centred
        scale = max(np.ptp(a), 1e-6)
        assert np.abs(a - b).max() <= 0.05 * scale, f"derivative ALE differs on {name}"
    np.testing.assert_allclose(grad.importances_mean, fd.importances_mean, rtol=0.05)
    times = {}
    for label, derivative in (("finite differences", False), ("derivative", True)):
        start = time.perf_counter()
        run(derivative)
        times[label] = time.perf_counter() - start
        print(f"{label:>20}: {times[label]:.3f} s")
    print(f"ratio finite differences / derivative: "
          f"{times['finite differences'] / times['derivative']:.2f}x")


if __name__ == "__main__":
    main()
