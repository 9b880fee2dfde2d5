"""Integrated gradients of a [100, 1024, 1024, 1] ReLU MLP: jaximp against captum (CPU torch,
the same weights, float32) and against the floor, in one run.

The floor is the model's forward and backward pass alone over the same rows x steps (one jitted
call: blocks of 1,024 rows, and for each a ``lax.scan`` over the 50 interpolation points of
``jax.grad`` of the summed outputs), with nothing else: no quadrature weights, no baseline, no
engine. (Without the blocks, one scan over all 10,000 rows at once ran 1.25x slower than
jaximp on CPU: its activations leave the cache.) captum runs
``IntegratedGradients(net).attribute(X, n_steps=50)`` (Gauss-Legendre, its default) with
``internal_batch_size`` rows x steps per batch and the weights frozen (gradients with respect to
the inputs only). The script first checks that jaximp and captum agree on a slice of rows, then
times them in interleaved rounds (the best of each; ours and the floor in turn, then ours and
captum in turn) after a warm-up call, blocking on the results, and prints the ratios.

Run: ``.venv/bin/python benchmarks/gradients.py`` (10,000 rows, 50 steps: about 2.3 TFLOP per
method, minutes on a 2-core machine); ``--small`` for 1,000 rows.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import (
    jax_mlp,
    machine,
    matmul_flops,
    random_relu_mlp,
    timed_against_floor_and_peers,
    torch_twin,
)

import jaximp
from jaximp.methods._gradients import quadrature

SIZES = (100, 1024, 1024, 1)


def floor_function(f, n_steps, block=1024):
    """The forward and backward pass alone: for each block of ``block`` rows (cache-sized on
    CPU, as the engine's), ``jax.grad`` of the summed outputs at the ``n_steps`` points."""
    alphas, _ = quadrature("gausslegendre", n_steps)
    alphas = jnp.asarray(alphas, jnp.float32)
    grad = jax.grad(lambda Z: f(Z).sum())

    def one_block(X):
        def step(total, a):
            return total + grad(a * X), None

        return jax.lax.scan(step, jnp.zeros_like(X), alphas)[0]

    @jax.jit
    def floor(X):
        n, c = X.shape
        pad = -n % block
        blocks = jnp.pad(X, ((0, pad), (0, 0))).reshape(-1, block, c)
        return jax.lax.map(one_block, blocks).reshape(-1, c)[:n]

    return floor


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--small", action="store_true", help="1,000 rows")
    parser.add_argument("--repeats", type=int, default=3,
                        help="rounds; the best time of each is kept")
    parser.add_argument("--batch", type=int, default=10_000,
                        help="captum's internal_batch_size (rows x steps per batch)")
    args = parser.parse_args()
    n = 1000 if args.small else args.n
    import torch
    from captum.attr import IntegratedGradients

    torch.set_num_threads(os.cpu_count() or 1)
    layers = random_relu_mlp(SIZES)
    f = jax_mlp(layers)
    net = torch_twin(layers)
    X = np.random.default_rng(1).normal(size=(n, SIZES[0])).astype(np.float32)
    tflop = 2 * matmul_flops(layers) * n * args.steps / 1e12  # forward + backward to the inputs
    print(f"# integrated gradients benchmark, {datetime.date.today()}, {machine()}, "
          f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    print(f"# MLP {list(SIZES)} ReLU, n = {n}, {args.steps} steps (Gauss-Legendre), "
          f"~{tflop:.2f} TFLOP per method; best of {args.repeats} interleaved rounds after a warm-up")

    def ours(rows):
        return jaximp.integrated_gradients(f, rows, n_steps=args.steps).values[:, :, 0]

    def theirs(rows):
        inputs = torch.tensor(rows)
        return IntegratedGradients(net).attribute(
            inputs, n_steps=args.steps, internal_batch_size=args.batch).numpy()

    floor = floor_function(f, args.steps)
    check = X[:64]
    a, b = ours(check), theirs(check)
    error = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
    print(f"check on 64 rows: max |jaximp - captum| / max |captum| = {error:.2e}")
    assert error < 1e-4, error

    fns = {"jaximp": lambda: ours(X), "captum": lambda: theirs(X),
           "floor": lambda: np.asarray(floor(jnp.asarray(X)))}
    for run in fns.values():
        run()  # warm-up: compiles (jaximp, floor) and allocates
    times = timed_against_floor_and_peers(fns["jaximp"], fns["floor"],
                                          {"captum": fns["captum"]}, args.repeats)
    times["jaximp"] = times.pop("ours")
    for name in ("jaximp", "captum", "floor"):
        print(f"{name:>7}: {times[name]:8.2f} s  ({tflop / times[name] * 1e3:6.1f} GFLOP/s)")
    print(f"ratios: jaximp / floor = {times['jaximp'] / times['floor']:.2f}, "
          f"captum / jaximp = {times['captum'] / times['jaximp']:.2f}, "
          f"captum / floor = {times['captum'] / times['floor']:.2f}")


if __name__ == "__main__":
    main()
