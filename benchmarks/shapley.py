"""Shapley values: jaximp vs the floor vs shap's exact and permutation explainers.

One model: a ReLU MLP [10, 32, 32, 1] with fixed random weights (``--sizes`` for another), as a
JAX function for jaximp and, for shap, a NumPy callable wrapping the same jitted function
(batches padded to a power of two so that shap's varying batch sizes do not recompile it).
1,000 explained rows, 100 background rows (uniform data), p = 10 features.

- jaximp exact: all 2^10 coalitions per row, 1,000 x 1,024 x 100 model rows (the empty
  coalition once). Its floor (``_common.scan_floor``) is one jitted ``lax.scan`` of the model
  over the same number of rows.
- shap exact: ``ExactExplainer`` with ``maskers.Independent(background, max_samples=100)``,
  the same game. Before any timing its values are checked against jaximp's (max abs diff).
- jaximp sampled vs shap permutation at equal accuracy: shap's ``PermutationExplainer`` with
  its default ``max_evals=500`` runs 500 // 21 = 23 forward-and-backward passes per row (antithetic
  pairs); jaximp's estimator gets the same 23 antithetic pairs (``n_permutations=46``). The
  accuracy of each is its max abs difference to jaximp's exact values (and the RMS).

shap explains rows one at a time, so it is timed on the first ``--shap-rows`` rows (after a
two-row warm-up) and its time scaled linearly to all rows; the printout says so. jaximp and
the floor are timed in rounds of their own, best of ``--repeats``; the ratios come from this
one run.
Run: ``.venv/bin/python benchmarks/shapley.py`` (``--quick``: 100 explained rows).
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
from _common import (  # noqa: E402
    float32_rtol,
    interleaved_best,
    jax_mlp,
    machine,
    print_table,
    random_relu_mlp,
    scan_floor,
)

import jaximp  # noqa: E402
from jaximp.methods._shapley import shapley_values  # noqa: E402

N_BACKGROUND = 100
SHAP_PAIRS = 500 // 21  # shap's PermutationExplainer at max_evals=500 and p=10


def numpy_callable(f):
    """The jitted model as shap sees it: NumPy in, float64 NumPy out, batches padded to a
    power of two (at least 1,024 rows) so that each padded size compiles once."""
    jitted = jax.jit(f)

    def predict(A):
        m = A.shape[0]
        size = 1 << max(10, (m - 1).bit_length())
        padded = np.zeros((size, A.shape[1]), np.float32)
        padded[:m] = A
        return np.asarray(jitted(padded), np.float64)[:m]

    return predict


def timed(fn):
    start = time.perf_counter()
    out = fn()
    jax.block_until_ready(out)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="100 explained rows")
    parser.add_argument("--repeats", type=int, default=2, help="timed calls of jaximp/floor")
    parser.add_argument("--shap-rows", type=int, default=20, help="rows shap explains")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 32, 32, 1])
    args = parser.parse_args()
    import shap

    n = 100 if args.quick else 1000
    sizes = args.sizes
    p = sizes[0]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(n, p))
    B = rng.uniform(size=(N_BACKGROUND, p))
    predictor = jaximp.as_predictor(f, n_features=p)
    print(f"# Shapley values benchmark, {datetime.date.today()}, {machine()}")
    print(f"# MLP {sizes}, p = {p}, {n} explained rows, {N_BACKGROUND} background rows; shap "
          f"{shap.__version__} on the first {args.shap_rows} rows, time scaled to {n} rows")

    def exact():
        return shapley_values(predictor, X, B).values

    def sampled():
        return shapley_values(predictor, X, B, method="permutation",
                              n_permutations=2 * SHAP_PAIRS, random_state=0).values

    full, cold_exact = timed(lambda: shapley_values(predictor, X, B))
    ours_exact = full.values
    ours_sampled, cold_sampled = timed(sampled)

    # shap, on a subset of rows, checked against jaximp exact before it is timed
    k = min(args.shap_rows, n)
    model = numpy_callable(f)
    masker = shap.maskers.Independent(B, max_samples=N_BACKGROUND)
    shap_exact = shap.ExactExplainer(model, masker)
    shap_perm = shap.PermutationExplainer(model, masker)
    shap_exact(X[:2], silent=True)  # warm-up: numba kernels and the padded batch sizes
    shap_perm(X[:2], silent=True)
    theirs_exact, t_shap_exact = timed(lambda: shap_exact(X[:k], silent=True).values)
    theirs_perm, t_shap_perm = timed(lambda: shap_perm(X[:k], max_evals=500, silent=True).values)
    reference = ours_exact[:k, :, 0]
    err_shap_exact = np.abs(theirs_exact - reference).max()
    assert err_shap_exact <= float32_rtol() / 10 * np.abs(reference).max() + 1e-6, err_shap_exact
    errors = {
        "shap permutation": theirs_perm - reference,
        "jaximp sampled": ours_sampled[:k, :, 0] - reference,
        "jaximp sampled, all rows": ours_sampled[..., 0] - ours_exact[..., 0],
    }

    rows_exact = n * (2 ** p - 1) * N_BACKGROUND + N_BACKGROUND
    rows_sampled = n * (2 * SHAP_PAIRS * (p - 1) + 1) * N_BACKGROUND + N_BACKGROUND
    floor_exact = scan_floor(f, X, rows_exact)
    floor_sampled = scan_floor(f, X, rows_sampled)
    times = interleaved_best({"exact": exact, "floor_exact": floor_exact}, args.repeats)
    times.update(interleaved_best({"sampled": sampled, "floor_sampled": floor_sampled},
                                  args.repeats))
    scale = n / k
    shap_exact_s, shap_perm_s = t_shap_exact * scale, t_shap_perm * scale
    table = [
        {"method": "exact", "model_rows": rows_exact, "jaximp_s": times["exact"],
         "floor_s": times["floor_exact"], "ratio_floor": times["exact"] / times["floor_exact"],
         "shap_s (scaled)": shap_exact_s, "speedup_vs_shap": shap_exact_s / times["exact"],
         "target_20x": "met" if shap_exact_s / times["exact"] >= 20 else "NOT met",
         "jaximp_max_err": 0.0, "shap_max_err": err_shap_exact, "jaximp_cold_s": cold_exact},
        {"method": f"sampled, {SHAP_PAIRS} antithetic pairs", "model_rows": rows_sampled,
         "jaximp_s": times["sampled"], "floor_s": times["floor_sampled"],
         "ratio_floor": times["sampled"] / times["floor_sampled"],
         "shap_s (scaled)": shap_perm_s, "speedup_vs_shap": shap_perm_s / times["sampled"],
         "target_20x": "met" if shap_perm_s / times["sampled"] >= 20 else "NOT met",
         "jaximp_max_err": np.abs(errors["jaximp sampled"]).max(),
         "shap_max_err": np.abs(errors["shap permutation"]).max(),
         "jaximp_cold_s": cold_sampled},
    ]
    print_table(table, ["method", "model_rows", "jaximp_s", "floor_s", "ratio_floor",
                        "shap_s (scaled)", "speedup_vs_shap", "target_20x", "jaximp_max_err",
                        "shap_max_err", "jaximp_cold_s"])
    print(f"- max_err: max abs difference to jaximp's exact values on the {k} rows shap "
          f"explained (max |value| there {np.abs(reference).max():.3g})")
    for name, diff in errors.items():
        print(f"- RMS error, {name}: {np.sqrt(np.mean(diff ** 2)):.3g}")
    print(f"- shap explained {k} rows in {t_shap_exact:.2f} s (exact) and {t_shap_perm:.2f} s "
          f"(permutation), one row at a time; times scaled by {scale:g} to {n} rows")
    prediction = np.asarray(f(jnp.asarray(X, jnp.float32)), np.float64)
    efficiency = np.abs(ours_exact.sum(axis=1)[:, 0] - (prediction - full.base_values[0])).max()
    print(f"- efficiency of jaximp exact: max |sum of values - (f(x) - base)| = {efficiency:.2g}")


if __name__ == "__main__":
    main()
