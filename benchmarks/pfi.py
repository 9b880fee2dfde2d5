"""Permutation importance: jaximp vs the floor vs scikit-learn's ``permutation_importance``.

One model, two implementations: a ReLU MLP [10, 64, 64, 1] with fixed random weights, as a JAX
function for jaximp and as a scikit-learn ``MLPRegressor`` carrying exactly the same weights.
The floor (``_common.scan_floor``) is one jitted ``lax.scan`` of the model over the same total
rows ((p * repeats + 1) * n: every permuted copy plus the baseline) in blocks of about 16k rows:
the model evaluations alone. Target: jaximp within 1.25x of the floor at every n.

Before timing, each case checks that jaximp's importances equal a float64 NumPy loop over the
very same permutations (the engine's keyed Feistel permutations, recomputed here from the plan's
key and the stream labels ``(feature, repeat)``), and agree with scikit-learn's within their
standard errors (the two use different random permutations). Times are the best of several
rounds in which jaximp and the floor are called in turn, then of rounds of jaximp and
scikit-learn (and pyartemis, when installed), each call blocked until its results are ready;
ratios come from this one run. scikit-learn is
skipped at n >= 100,000 when its time extrapolated from the previous n exceeds 60 s.
Run: ``.venv/bin/python benchmarks/pfi.py`` (``--quick`` for n = 1,000 only).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import (  # noqa: E402
    float32_rtol,
    jax_mlp,
    machine,
    print_table,
    random_relu_mlp,
    scan_floor,
    sklearn_mlp,
    timed_against_floor_and_peers,
)
from jaximp.kernels import _streams  # noqa: E402

import jaximp  # noqa: E402
from jaximp.data._checks import as_key  # noqa: E402
from jaximp.engine._plans import at_permuted_rows  # noqa: E402
from jaximp.methods._permutation import permutation_importance  # noqa: E402

SIZES = [10, 64, 64, 1]
REPEATS = 5
SKLEARN_LIMIT_S = 60.0
HAVE_ARTEMIS = importlib.util.find_spec("artemis") is not None


@jax.jit
def _permutation_of(bits, stream, rows, n):
    return _streams.feistel_permutation(_streams.seed_of(bits, stream), rows, n)


def engine_permutations(p: int, n_repeats: int, n: int, seed) -> np.ndarray:
    """The engine's permutations (p, r, n) of permutation_importance(random_state=seed) on an
    array X: item (j, r) has stream label (j, r), j the feature's position in X."""
    labels = [(j, r) for j in range(p) for r in range(n_repeats)]
    plan = at_permuted_rows(np.eye(p, dtype=bool), np.repeat(np.arange(p), n_repeats),
                            as_key(seed), labels)
    bits, rows = jnp.asarray(plan.key_bits), jnp.arange(n, dtype=jnp.int32)
    perms = np.stack([np.asarray(_permutation_of(bits, jnp.asarray(s), rows, jnp.int32(n)))
                      for s in plan.item_stream])
    return perms.reshape(p, n_repeats, n)


def numpy_reference(layers, X, y, n_repeats, seed):
    """Float64 NumPy permutation importance over the engine's own permutations."""

    def f64(A):
        h = A
        for W, b in layers[:-1]:
            h = np.maximum(h @ W.astype(np.float64) + b, 0.0)
        W, b = layers[-1]
        return (h @ W.astype(np.float64) + b)[:, 0]

    n, p = X.shape
    X32 = X.astype(np.float32).astype(np.float64)  # the engine evaluates float32 inputs
    base = np.mean((y - f64(X32)) ** 2)
    perms = engine_permutations(p, n_repeats, n, seed)
    assert all(np.array_equal(np.sort(q), np.arange(n)) for q in perms.reshape(-1, n))
    out = np.empty((p, n_repeats))
    for j in range(p):
        for r in range(n_repeats):
            Xp = X32.copy()
            Xp[:, j] = X32[perms[j, r], j]
            out[j, r] = np.mean((y - f64(Xp)) ** 2) - base
    return out


def artemis_importance(est, X, y):
    """pyartemis' PermutationImportance (MSE) on the scikit-learn model: mean importance (p,)."""
    import pandas as pd
    from artemis.importance_methods.model_agnostic import PermutationImportance
    from artemis._utilities.performance_metrics import MSE  # pyartemis 0.1.5

    names = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    out = PermutationImportance(metric=MSE()).importance(est, frame, y, n_repeat=REPEATS,
                                                         features=names)
    values = dict(zip(out["Feature"], out["Importance"]))
    return np.array([values[name] for name in names])


def case(n: int, timing_repeats: int, sklearn_estimate: float | None) -> dict:
    """One n. ``sklearn_estimate``: predicted scikit-learn seconds (None: run it)."""
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

    # 1. exact: float64 NumPy over the engine's own permutations
    ref = numpy_reference(layers, X, y, REPEATS, 0)
    err = np.abs(result.importances[:, 0, :] - ref).max()
    assert err <= float32_rtol() * np.abs(ref).max() + 1e-6, f"mismatch with the NumPy loop: {err}"

    fns = {"ours": lambda: ours().importances}
    total_rows = (p * REPEATS + 1) * n
    floor = scan_floor(f, X, total_rows)
    fns["floor"] = floor
    rounds, notes = {}, []
    est = sklearn_mlp(layers, p)

    # 2. statistical: scikit-learn with its own permutations, same weights
    run_sklearn = sklearn_estimate is None or n < 100_000 or sklearn_estimate <= SKLEARN_LIMIT_S
    t_sk_first = None
    if run_sklearn:
        from sklearn.inspection import permutation_importance as sk_pi

        def theirs():
            return sk_pi(est, X, y, scoring="neg_mean_squared_error", n_repeats=REPEATS,
                         random_state=0)

        start = time.perf_counter()
        sk = theirs()
        t_sk_first = time.perf_counter() - start
        se = np.sqrt((result.importances_std[:, 0] ** 2 + sk.importances_std ** 2) / REPEATS)
        gap = np.abs(result.importances_mean[:, 0] - sk.importances_mean)
        assert np.all(gap <= 5 * se + 1e-3 * np.abs(sk.importances_mean).max()), (gap, se)
        fns["sklearn"] = theirs
        rounds["sklearn"] = max(1, min(timing_repeats, int(20 / max(t_sk_first, 1e-3))))
    else:
        notes.append(f"n={n}: scikit-learn skipped (extrapolated {sklearn_estimate:.0f} s per "
                     f"call > {SKLEARN_LIMIT_S:.0f} s)")
    if HAVE_ARTEMIS:
        start = time.perf_counter()
        art = artemis_importance(est, X, y)
        t_art_first = time.perf_counter() - start
        se = result.importances_std[:, 0] * np.sqrt(2 / REPEATS)
        gap = np.abs(result.importances_mean[:, 0] - art)
        assert np.all(gap <= 5 * se + 1e-3 * np.abs(art).max()), (gap, se)
        fns["artemis"] = lambda: artemis_importance(est, X, y)
        rounds["artemis"] = max(1, min(timing_repeats, int(20 / max(t_art_first, 1e-3))))

    peers = {name: fn for name, fn in fns.items() if name not in ("ours", "floor")}
    times = timed_against_floor_and_peers(fns["ours"], fns["floor"], peers, timing_repeats,
                                          rounds)
    t_ours = times["ours"]
    row = {
        "n": n, "rows": total_rows, "jaximp_s": t_ours, "floor_s": times["floor"],
        "ratio_floor": t_ours / times["floor"],
        "target_1.25x": "met" if t_ours / times["floor"] <= 1.25 else "NOT met",
        "jaximp_cold_s": t_cold, "max_err_vs_numpy": err,
        "sklearn_s": "skipped", "speedup_vs_sklearn": "-",
    }
    for name in ("sklearn", "artemis"):
        if name in times:
            row[f"{name}_s"] = times[name]
            row[f"speedup_vs_{name}"] = times[name] / t_ours
            if rounds[name] < timing_repeats:
                notes.append(f"n={n}: {name} best of {rounds[name]} call(s)")
    row["notes"] = notes
    # for the next n: seconds scikit-learn would take, linear in n
    row["_sklearn_per_row"] = None if t_sk_first is None else row["sklearn_s"] / n
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="n = 1,000 only")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per measurement")
    parser.add_argument("--sizes", type=int, nargs="+", help="values of n (default 1k, 10k, 100k)")
    args = parser.parse_args()
    print(f"# permutation importance benchmark, {datetime.date.today()}, {machine()}")
    print(f"# MLP {SIZES}, p = {SIZES[0]}, {REPEATS} repeats, loss MSE; best of at least "
          f"{args.repeats} rounds, up to 200 (about 2 s) for fast calls (jaximp and floor in "
          "turn; then jaximp and peers); floor = one jitted lax.scan over ~16k-row blocks of "
          "the same total rows")
    sizes = [1000] if args.quick else (args.sizes or [1000, 10_000, 100_000])
    rows, per_row = [], None
    for n in sizes:
        rows.append(case(n, args.repeats, None if per_row is None else per_row * n))
        per_row = rows[-1]["_sklearn_per_row"] or per_row
    header = ["n", "rows", "jaximp_s", "floor_s", "ratio_floor", "target_1.25x", "sklearn_s",
              "speedup_vs_sklearn"]
    if HAVE_ARTEMIS:
        header += ["artemis_s", "speedup_vs_artemis"]
    header += ["jaximp_cold_s", "max_err_vs_numpy"]
    print_table(rows, header)
    if not HAVE_ARTEMIS:
        print("- pyartemis is not installed: no artemis column")
    for row in rows:
        for note in row["notes"]:
            print(f"- {note}")


if __name__ == "__main__":
    main()
