"""SAGE: jaximp vs the floor vs the sage package (``sage-importance``) at equal standard error.

One model: a ReLU MLP [10, 32, 32, 1] with fixed random weights (``--sizes`` for another), as a
JAX function for jaximp and, for the sage package, (a) a NumPy float32 function with the same
weights and (b) the very same jitted JAX function behind a NumPy callable (batches padded to a
power of two, so each size compiles once). 1,000 rows of uniform data (``--rows``), targets
the model's output plus noise, 100 background rows (the sage package's ``MarginalImputer``).

The rule for "equal standard error": the sage package (``PermutationEstimator``, batches of
512, ``random_state=0``) first runs with its own convergence detection at its default
threshold (0.025), which fixes its number of samples N (``--samples N`` fixes N instead) and
its largest standard error ``se``. jaximp (default ``sampler="antithetic"``, same batch size)
then draws the smallest multiple of 512 orders whose largest standard error is at or below
``se`` (it reports honest standard errors: tests/test_sage.py checks them against the spread
over seeds). The timed calls run a fixed amount of work: the package N samples without
convergence detection, jaximp its orders with ``convergence=None``. The table also times
jaximp with the package's own sampler (``sampler="iid"``) for N samples: the same work as the
package, so its ratio is the speed-up at equal samples, and the rest comes from the sampler.
The printout checks the estimates agree (largest difference in combined standard errors).
The floor (``_common.scan_floor``) is one jitted ``lax.scan`` of the model over jaximp's model
rows, ``orders x (p - 1) x m``. Times are the best of ``--repeats`` interleaved calls after a
warm-up; the ratios come from this one run.
jaximp's sampler gains most once its orders pass the number of rows (see
``sage_importance``'s ``sampler``): with many rows and a loose threshold (``--rows 10000``)
the package stops before and the gain is mostly that of equal samples.
Run: ``.venv/bin/python benchmarks/sage.py`` (``--quick``: 2 repeats, 4,096 package samples).
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
IID = "jaximp, sampler='iid', the package's samples"


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


def orders_for(run, target: float, batch: int, most: int) -> int:
    """The smallest multiple of ``batch`` orders whose largest standard error is at most
    ``target`` (``run(orders)`` returns a result)."""
    orders = batch
    while orders < most and run(orders).importances_std.max() > target:
        orders += batch
    return orders


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="4,096 package samples, 2 repeats")
    parser.add_argument("--samples", type=int, default=None,
                        help="package samples (default: until its convergence at 0.025)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls of each")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 32, 32, 1])
    parser.add_argument("--rows", type=int, default=N_ROWS, help="rows of X explained")
    args = parser.parse_args()
    sage = import_sage_package()
    samples = 4096 if args.quick and args.samples is None else args.samples
    repeats = 2 if args.quick else args.repeats

    sizes = args.sizes
    p = sizes[0]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    f_numpy = numpy_mlp(layers)
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(args.rows, p)).astype(np.float32)
    y = f_numpy(X) + 0.1 * rng.normal(size=args.rows)
    B = X[:N_BACKGROUND]
    predictor = jaximp.as_predictor(f, n_features=p)
    jitted_model = numpy_callable(f)

    def theirs(model, n=None, detect=False):
        imputer = sage.MarginalImputer(model, B)
        estimator = sage.PermutationEstimator(imputer, "mse", random_state=0)
        return lambda: estimator(X, y, batch_size=BATCH, n_permutations=n,
                                 detect_convergence=detect, bar=False)

    if samples is None:  # the package's own stopping point at its default threshold
        # it does not report its number of samples: count the rows its model sees
        seen = []
        counted = sage.MarginalImputer(lambda A: seen.append(len(A)) or jitted_model(A), B)
        reference = sage.PermutationEstimator(counted, "mse", random_state=0)(
            X, y, batch_size=BATCH, thresh=0.025, bar=False)
        samples = sum(seen) // (N_BACKGROUND * (p + 1))
    else:
        reference = theirs(jitted_model, samples)()
    target = float(reference.std.max())

    def ours(orders, sampler="antithetic"):
        return lambda: sage_importance(predictor, X, y, background=B, n_permutations=orders,
                                       convergence=None, batch_size=BATCH, sampler=sampler,
                                       random_state=0)

    start = time.perf_counter()
    orders = orders_for(lambda n: ours(n)(), target, BATCH, 64 * samples)
    search = time.perf_counter() - start
    print(f"# SAGE benchmark, {datetime.date.today()}, {machine()}")
    print(f"# MLP {sizes}, p = {p}, {args.rows} rows, {N_BACKGROUND} background rows; sage "
          f"package: {samples} samples (batch {BATCH}), largest standard error {target:.3g}; "
          f"jaximp (antithetic): {orders} orders to reach it")

    calls = {"jaximp": ours(orders), IID: ours(samples, "iid")}
    peers = {"sage, NumPy model": theirs(f_numpy, samples),
             "sage, jitted JAX model": theirs(jitted_model, samples)}
    results = {name: run() for name, run in {**calls, **peers}.items()}  # warm-up, check
    result = results["jaximp"]
    for name, other in results.items():
        if name == "jaximp":
            continue
        values, errors = ((other.importances_mean[:, 0], other.importances_std[:, 0])
                          if hasattr(other, "importances_mean") else (other.values, other.std))
        z = np.abs(result.importances_mean[:, 0] - values) / np.hypot(
            result.importances_std[:, 0], errors)
        print(f"- {name}: largest standard error {errors.max():.3g} (jaximp "
              f"{result.importances_std.max():.3g}); largest |difference| / combined standard "
              f"error = {z.max():.2f}")
        assert z.max() < 5, z

    model_rows = orders * (p - 1) * N_BACKGROUND
    floor = scan_floor(f, X, model_rows)
    times = interleaved_best({**calls, "floor": floor, **peers}, repeats)
    table = [{"run": name, "seconds": seconds, "x floor": seconds / times["floor"],
              "/ jaximp": seconds / times["jaximp"]} for name, seconds in times.items()]
    print_table(table, ["run", "seconds", "x floor", "/ jaximp"])
    for name in peers:
        ratio = times[name] / times["jaximp"]
        print(f"- jaximp is {ratio:.1f}x faster than {name} at equal standard error (target "
              f"10x: {'met' if ratio >= 10 else 'NOT met'}); at equal samples (sampler='iid') "
              f"{times[name] / times[IID]:.1f}x")
    print(f"- orders: package {samples:,}, jaximp {orders:,} ({samples / orders:.1f}x fewer); "
          f"jaximp model rows {model_rows:,}; search for jaximp's orders took {search:.1f} s")


if __name__ == "__main__":
    main()
