"""Permutation importance: jaximp vs scikit-learn's ``permutation_importance`` vs the floor.

One model, two implementations: a ReLU MLP [10, 64, 64, 1] with fixed random weights, as a JAX
function for jaximp and as a scikit-learn ``MLPRegressor`` carrying exactly the same weights.
The floor is one jitted predict over the same total rows ((p * repeats + 1) * n: every permuted
copy plus the baseline), i.e. the model evaluations alone.

Before timing, each case checks that jaximp's importances equal a float64 NumPy loop over the
very same permutations, and agree with scikit-learn's within their standard errors (the two use
different random permutations). Times are the best of several rounds in which the three are
called in turn, each blocked until its results are ready; ratios come from one run.
Run: ``.venv/bin/python benchmarks/pfi.py`` (``--quick`` for n = 1,000 only).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import jax_mlp, machine, print_table, random_relu_mlp, sklearn_mlp  # noqa: E402

import jaximp  # noqa: E402
from jaximp._permutation import (  # noqa: E402
    _permutations,
    as_key,
    key_bits,
    permutation_importance,
)

SIZES = [10, 64, 64, 1]
REPEATS = 5


def interleaved_best(fns: dict, repeats: int) -> dict:
    """Best wall time of each function over ``repeats`` rounds, calling them in turn each
    round (so that load from other processes hits all of them alike); results are blocked."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def numpy_reference(layers, X, y, n_repeats, seed):
    """Float64 NumPy permutation importance over jaximp's own permutations."""

    def f64(A):
        h = A
        for W, b in layers[:-1]:
            h = np.maximum(h @ W.astype(np.float64) + b, 0.0)
        W, b = layers[-1]
        return (h @ W.astype(np.float64) + b)[:, 0]

    n, p = X.shape
    X32 = X.astype(np.float32).astype(np.float64)  # the engine evaluates float32 inputs
    base = np.mean((y - f64(X32)) ** 2)
    perms = _permutations(key_bits(as_key(seed)), range(p), n_repeats, n)
    out = np.empty((p, n_repeats))
    for j in range(p):
        for r in range(n_repeats):
            Xp = X32.copy()
            Xp[:, j] = X32[perms[j, r], j]
            out[j, r] = np.mean((y - f64(Xp)) ** 2) - base
    return out


def case(n: int, timing_repeats: int):
    p = SIZES[0]
    layers = random_relu_mlp(SIZES)
    f = jax_mlp(layers)
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(n, p))
    signal = np.asarray(f(jnp.asarray(X, jnp.float32)), np.float64)
    y = signal + 0.1 * signal.std() * rng.normal(size=n)
    predictor = jaximp.as_predictor(f, n_features=p)  # built once: compiled chunks are reused

    def ours():
        return permutation_importance(predictor, X, y, n_repeats=REPEATS, random_state=0)

    start = time.perf_counter()
    result = ours()  # first call: compiles
    t_cold = time.perf_counter() - start

    # 1. exact: float64 NumPy over the same permutations
    ref = numpy_reference(layers, X, y, REPEATS, 0)
    err = np.abs(result.importances[:, 0, :] - ref).max()
    assert err <= 1e-4 * np.abs(ref).max() + 1e-6, f"mismatch with the NumPy loop: {err}"

    # 2. statistical: scikit-learn with its own permutations, same weights
    from sklearn.inspection import permutation_importance as sk_pi

    est = sklearn_mlp(layers, p)

    def theirs():
        return sk_pi(est, X, y, scoring="neg_mean_squared_error", n_repeats=REPEATS,
                     random_state=0)

    sk = theirs()
    se = np.sqrt((result.importances_std[:, 0] ** 2 + sk.importances_std ** 2) / REPEATS)
    gap = np.abs(result.importances_mean[:, 0] - sk.importances_mean)
    assert np.all(gap <= 5 * se + 1e-3 * np.abs(sk.importances_mean).max()), (gap, se)

    total_rows = (p * REPEATS + 1) * n
    big = jnp.asarray(np.tile(X.astype(np.float32), (p * REPEATS + 1, 1)))
    floor_fn = jax.jit(f)
    jax.block_until_ready(floor_fn(big))

    def ours_blocked():
        return ours().importances

    times = interleaved_best(
        {"ours": ours_blocked, "floor": lambda: floor_fn(big), "sklearn": theirs},
        timing_repeats,
    )
    t_ours, t_floor, t_sklearn = times["ours"], times["floor"], times["sklearn"]
    return {
        "n": n, "rows": total_rows, "jaximp_s": t_ours, "jaximp_cold_s": t_cold,
        "floor_s": t_floor, "sklearn_s": t_sklearn, "ratio_floor": t_ours / t_floor,
        "speedup_vs_sklearn": t_sklearn / t_ours, "max_err_vs_numpy": err,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="n = 1,000 only")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per measurement")
    args = parser.parse_args()
    print(f"# permutation importance benchmark, {datetime.date.today()}, {machine()}")
    print(f"# MLP {SIZES}, p = {SIZES[0]}, {REPEATS} repeats, loss MSE; best of "
          f"{args.repeats} calls")
    sizes = [1000] if args.quick else [1000, 10_000]
    rows = [case(n, args.repeats) for n in sizes]
    header = ("n", "rows", "jaximp_s", "floor_s", "ratio_floor", "sklearn_s",
              "speedup_vs_sklearn", "jaximp_cold_s", "max_err_vs_numpy")
    print_table(rows, header)


if __name__ == "__main__":
    main()
