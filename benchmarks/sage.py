"""SAGE: jaximp vs the floor vs the sage package (``sage-importance``) at equal standard error.

One model: a ReLU MLP [10, 32, 32, 1] with fixed random weights (``--sizes`` for another), as a
JAX function for jaximp and, for the sage package, (a) a NumPy float32 function with the same
weights and (b) the very same jitted JAX function behind a NumPy callable (batches padded to a
power of two, so each size compiles once). 1,000 rows of uniform data, targets the model's
output plus noise, 100 background rows (the sage package's ``MarginalImputer``).

Both estimators are the same sampler (a row drawn with replacement and a random order of the
features per sample; a feature's score is the drop in the row's squared error as it joins), so
at an equal number of samples their standard errors are equal in expectation: each runs
``--samples`` samples (the sage package in batches of 512, its default, without convergence
detection; jaximp with ``n_permutations=samples, convergence=None``), and the printout shows
both estimators' largest standard error and the largest difference between their values in
units of the combined standard error. The floor (``_common.scan_floor``) is one jitted
``lax.scan`` of the model over the same number of model rows, ``samples x (p - 1) x m``.
Times are the best of ``--repeats`` interleaved calls after a warm-up; the ratios come from
this one run.
Run: ``.venv/bin/python benchmarks/sage.py`` (``--quick``: 1,024 samples).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

import jax
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import (
    interleaved_best,
    jax_mlp,
    machine,
    print_table,
    random_relu_mlp,
    scan_floor,
)

import jaximp
from jaximp.methods._sage import sage_importance

N_ROWS, N_BACKGROUND, BATCH = 1000, 100, 512


def import_sage_package():
    """The sage package, not this file (whose folder heads ``sys.path`` when run)."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = sys.path[:]
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    sys.modules.pop("sage", None)
    try:
        import sage
    finally:
        sys.path[:] = saved
    return sage


def numpy_mlp(layers):
    """The MLP in NumPy float32, returning (n,)."""

    def f(X):
        h = np.asarray(X, np.float32)
        for W, b in layers[:-1]:
            h = np.maximum(h @ W + b, 0)
        W, b = layers[-1]
        return (h @ W + b)[:, 0].astype(np.float64)

    return f


def numpy_callable(f):
    """The jitted model behind NumPy: float32 in, float64 out, padded to a power of two."""
    jitted = jax.jit(f)

    def predict(A):
        m = A.shape[0]
        size = 1 << max(10, (m - 1).bit_length())
        padded = np.zeros((size, A.shape[1]), np.float32)
        padded[:m] = A
        return np.asarray(jitted(padded), np.float64)[:m]

    return predict


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1,024 samples")
    parser.add_argument("--samples", type=int, default=4096, help="samples of each estimator")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls of each")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 32, 32, 1])
    args = parser.parse_args()
    sage = import_sage_package()

    samples = 1024 if args.quick else args.samples
    sizes = args.sizes
    p = sizes[0]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    f_numpy = numpy_mlp(layers)
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(N_ROWS, p)).astype(np.float32)
    y = f_numpy(X) + 0.1 * rng.normal(size=N_ROWS)
    B = X[:N_BACKGROUND]
    predictor = jaximp.as_predictor(f, n_features=p)
    print(f"# SAGE benchmark, {datetime.date.today()}, {machine()}")
    print(f"# MLP {sizes}, p = {p}, {N_ROWS} rows, {N_BACKGROUND} background rows, {samples} "
          f"samples each; sage-importance (batch {BATCH}, no convergence detection)")

    def ours():
        return sage_importance(predictor, X, y, background=B, n_permutations=samples,
                               convergence=None, batch_size=BATCH, random_state=0)

    def theirs(model):
        imputer = sage.MarginalImputer(model, B)
        estimator = sage.PermutationEstimator(imputer, "mse", random_state=0)
        return lambda: estimator(X, y, batch_size=BATCH, n_permutations=samples,
                                 detect_convergence=False, bar=False)

    start = time.perf_counter()
    result = ours()
    cold = time.perf_counter() - start
    jitted_model = numpy_callable(f)
    peers = {"sage, NumPy model": theirs(f_numpy), "sage, jitted JAX model": theirs(jitted_model)}
    explanations = {name: run() for name, run in peers.items()}  # warm-up, and the check
    for name, explanation in explanations.items():
        combined = np.hypot(result.importances_std[:, 0], explanation.std)
        z = np.abs(result.importances_mean[:, 0] - explanation.values) / combined
        print(f"- {name}: largest |difference| / combined standard error = {z.max():.2f}; "
              f"largest standard error {explanation.std.max():.3g} (jaximp "
              f"{result.importances_std.max():.3g})")
        assert z.max() < 5, z

    model_rows = samples * (p - 1) * N_BACKGROUND
    floor = scan_floor(f, X, model_rows)
    times = interleaved_best({"jaximp": ours, "floor": floor, **peers}, args.repeats)
    table = [{"estimator": name, "seconds": seconds,
              "ratio_to_floor": seconds / times["floor"],
              "sage_over_jaximp": seconds / times["jaximp"]}
             for name, seconds in times.items()]
    print_table(table, ["estimator", "seconds", "ratio_to_floor", "sage_over_jaximp"])
    for name in peers:
        ratio = times[name] / times["jaximp"]
        print(f"- jaximp is {ratio:.1f}x faster than {name} at equal samples (target 10x: "
              f"{'met' if ratio >= 10 else 'NOT met'})")
    print(f"- model rows per call: {model_rows:,}; jaximp cold call (compiles) {cold:.2f} s")


if __name__ == "__main__":
    main()
