"""Friedman's H-statistic, all pairs: jaximp vs the floor vs a plain NumPy loop (vs artemis).

Case 1: all 45 pairwise H2 for p = 10, n = 300, a random ReLU MLP [10, 64, 64, 1]. Every method
needs the 10 one-feature PDs and the 45 pair PDs at the 300 rows, plus the predictions
(55 x 300 x 300 + 300 = 4.95M model rows). artemis (``FriedmanHStatisticMethod``, pandas-based,
only when pyartemis is installed) gets the same weights wrapped as an object with a NumPy
``predict``. The floor (``_common.scan_floor``) is one jitted ``lax.scan`` of the model over
the same total rows in blocks of about 16k rows: the model evaluations alone. Target: jaximp
within 1.25x of the floor. Case 2: p = 50, n = 500 (1225 pairs, 319M model rows). Cases 3-5:
p = 10 on data of n = 1,000, 10,000 and 100,000 rows with the default ``n_max = 500`` (as
hstats: the statistics come from 500 rows drawn from the data, 13.8M model rows).

Every case first asserts that the methods agree, then times jaximp, the floor and the peers
called in turn (best of several rounds, each blocked until ready); ratios come from this one
run. Run: ``.venv/bin/python benchmarks/hstat.py`` (``--quick`` for a smoke run with smaller
sizes).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import itertools
import sys
import time

import jax
import numpy as np
import pandas as pd

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import (  # noqa: E402
    float32_rtol,
    interleaved_best,
    jax_mlp,
    machine,
    matmul_flops,
    print_table,
    random_relu_mlp,
    scan_floor,
    timed_against_floor_and_peers,
)

from jaximp.methods._hstat import h_statistic  # noqa: E402

TARGET = 1.25
HAVE_ARTEMIS = importlib.util.find_spec("artemis") is not None


class NumpyMLP:
    """The same weights with a NumPy ``predict`` (float32 matmuls), for artemis and the loop."""

    def __init__(self, layers):
        self.layers = layers

    def predict(self, X):
        h = np.asarray(X, np.float32)
        for W, b in self.layers[:-1]:
            h = np.maximum(h @ W + b, 0.0)
        W, b = self.layers[-1]
        return (h @ W + b)[:, 0]


def numpy_loop_h2(model: NumpyMLP, X: np.ndarray, pairs) -> np.ndarray:
    """Pairwise H2 with a plain NumPy loop: one (n*n, p) batch per feature set, 1-D PDs reused."""
    n = X.shape[0]

    def pd_at_rows(cols):
        block = np.tile(X, (n, 1))  # row i*n + b: background row b ...
        block[:, cols] = np.repeat(X[:, cols], n, axis=0)  # ... with row i's values of S
        pd_ = model.predict(block).reshape(n, n).astype(np.float64).mean(axis=1)
        return pd_ - pd_.mean()

    single = {j: pd_at_rows([j]) for j in sorted({j for pair in pairs for j in pair})}
    out = []
    for j, k in pairs:
        joint = pd_at_rows([j, k])
        out.append(np.sum((joint - single[j] - single[k]) ** 2) / np.sum(joint**2))
    return np.array(out)


def jaximp_h2(f, X, pairs=None):
    h = h_statistic(f, X, pairs="all" if pairs is None else pairs, overall=False, n_max=None)
    return h.pairwise.values[:, 0]


def case_small(n: int, p: int, repeats: int, artemis_features: int | None) -> dict:
    sizes = [p, 64, 64, 1]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    X = np.random.default_rng(1).normal(size=(n, p))
    names = [f"x{j}" for j in range(p)]
    pairs = list(itertools.combinations(range(p), 2))
    numpy_model = NumpyMLP(layers)

    # 1. Results agree: jaximp vs the NumPy loop on all pairs, vs artemis on the pairs it runs.
    ours = jaximp_h2(f, X)  # also compiles
    loop = numpy_loop_h2(numpy_model, X, pairs)
    assert np.allclose(ours, loop, rtol=10 * float32_rtol(), atol=1e-6), np.abs(ours - loop).max()
    sets = p + len(pairs)  # 1-D PDs once, then one PD per pair
    total_rows = sets * n * n + n  # and the predictions at the rows
    fns = {"ours": lambda: jaximp_h2(f, X), "floor": scan_floor(f, X, total_rows),
           "loop": lambda: numpy_loop_h2(numpy_model, X, pairs)}
    notes = [f"jaximp and floor timed in turn, then jaximp, loop"
             f"{', artemis' if HAVE_ARTEMIS else ''} in turn; best of at least {repeats}"]
    if HAVE_ARTEMIS:
        from artemis.interactions_methods.model_agnostic import FriedmanHStatisticMethod

        frame = pd.DataFrame(X, columns=names)
        k = p if artemis_features is None else artemis_features
        art_features = names[:k]

        def theirs():
            method = FriedmanHStatisticMethod()
            method.fit(numpy_model, frame, features=art_features, calculate_ova=False)
            return method.ovo

        ovo = theirs()
        value_col = ovo.columns[-1]
        art = {tuple(sorted((a, b))): v for a, b, v in zip(ovo["Feature 1"], ovo["Feature 2"],
                                                            ovo[value_col])}
        for (j, l), v in zip(pairs, ours):
            key = (names[j], names[l])
            if key in art:
                assert abs(art[key] - v) <= 1e-3 * abs(v) + 1e-6, (key, art[key], v)
        n_art_pairs = len(art)
        fns["artemis"] = theirs
    else:
        notes.append("pyartemis is not installed: no artemis column")

    # 2. Timings, all in this run.
    peers = {name: fn for name, fn in fns.items() if name not in ("ours", "floor")}
    t = timed_against_floor_and_peers(fns["ours"], fns["floor"], peers, repeats)
    t_ours = t["ours"]
    row = {
        "case": f"p={p}, n={n}, MLP {sizes}", "pairs": len(pairs), "model_rows": total_rows,
        "jaximp_s": t_ours, "floor_s": t["floor"], "ratio_floor": t_ours / t["floor"],
        f"target_{TARGET}x": "met" if t_ours / t["floor"] <= TARGET else "NOT met",
        "numpy_loop_s": t["loop"], "speedup_vs_numpy": t["loop"] / t_ours,
        "gflops": total_rows * matmul_flops(layers) / t_ours / 1e9,
        "max_abs_diff_vs_numpy": float(np.abs(ours - loop).max()),
    }
    if HAVE_ARTEMIS:
        art_sets = k + n_art_pairs
        t_art = t["artemis"] * sets / art_sets  # artemis evaluates n*n rows per set, like us
        row["artemis_s"], row["speedup_vs_artemis"] = t_art, t_art / t_ours
        if art_sets < sets:
            notes.append(f"artemis timed on {n_art_pairs} pairs of {k} features "
                         f"({t['artemis']:.2f} s for {art_sets} feature sets), extrapolated x "
                         f"{sets}/{art_sets} to all {len(pairs)} pairs")
        else:
            notes.append("artemis timed on all pairs (calculate_ova=False)")
    row["note"] = "; ".join(notes)
    return row


def case_large(n: int, p: int, repeats: int) -> dict:
    sizes = [p, 64, 64, 1]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    X = np.random.default_rng(2).normal(size=(n, p))
    pairs = list(itertools.combinations(range(p), 2))
    # Check a few pairs against the NumPy loop before timing everything.
    few = pairs[:3]
    ours_few = jaximp_h2(f, X, [(f"x{a}", f"x{b}") for a, b in few])
    loop_few = numpy_loop_h2(NumpyMLP(layers), X, few)
    assert np.allclose(ours_few, loop_few, rtol=10 * float32_rtol(), atol=1e-6)
    sets = p + len(pairs)
    total_rows = sets * n * n + n
    start = time.perf_counter()
    values = jax.block_until_ready(jaximp_h2(f, X))
    t_first = time.perf_counter() - start  # includes compiling the engine for this shape
    assert values.shape == (len(pairs),) and np.all(np.isfinite(values))
    t = interleaved_best({"ours": lambda: jaximp_h2(f, X),
                          "floor": scan_floor(f, X, total_rows)}, repeats)
    ratio = t["ours"] / t["floor"]
    return {
        "case": f"p={p}, n={n}, MLP {sizes}", "pairs": len(pairs), "model_rows": total_rows,
        "jaximp_s": t["ours"], "jaximp_first_call_s": t_first, "floor_s": t["floor"],
        "ratio_floor": ratio, f"target_{TARGET}x": "met" if ratio <= TARGET else "NOT met",
        "gflops": total_rows * matmul_flops(layers) / t["ours"] / 1e9,
        "note": f"jaximp and floor timed in turn, best of {repeats}",
    }


def case_subsampled(n: int, p: int, repeats: int) -> dict:
    """Data of n rows with hstats' default ``n_max = 500``: the statistics are computed on
    500 rows drawn from them, so every n costs the same model rows."""
    sizes = [p, 64, 64, 1]
    layers = random_relu_mlp(sizes)
    f = jax_mlp(layers)
    X = np.random.default_rng(3).normal(size=(n, p))
    pairs = list(itertools.combinations(range(p), 2))

    def ours():
        return h_statistic(f, X, pairs="all", overall=False)

    result = ours()
    rows = np.asarray(result.info.rows)
    loop = numpy_loop_h2(NumpyMLP(layers), X[rows], pairs[:3])
    assert np.allclose(result.pairwise.values[:3, 0], loop, rtol=10 * float32_rtol(), atol=1e-6)
    m = rows.size
    total_rows = (p + len(pairs)) * m * m + m
    t = interleaved_best({"ours": lambda: ours().pairwise.values,
                          "floor": scan_floor(f, X[rows], total_rows)}, repeats)
    ratio = t["ours"] / t["floor"]
    return {
        "case": f"p={p}, n={n} (n_max=500), MLP {sizes}", "pairs": len(pairs),
        "model_rows": total_rows, "jaximp_s": t["ours"], "floor_s": t["floor"],
        "ratio_floor": ratio, f"target_{TARGET}x": "met" if ratio <= TARGET else "NOT met",
        "gflops": total_rows * matmul_flops(layers) / t["ours"] / 1e9,
        "note": f"{m} rows drawn from {n}; jaximp and floor timed in turn, best of {repeats}",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args()
    print(f"# H-statistic benchmark (all pairwise H2), {datetime.date.today()}, {machine()}")
    if args.quick:
        rows = [case_small(60, 6, 5, 3)]
    else:
        rows = [case_small(300, 10, 3, None), case_large(500, 50, 2)]
        rows += [case_subsampled(n, 10, 3) for n in (1000, 10_000, 100_000)]
    keys = ["case", "pairs", "model_rows", "jaximp_s", "floor_s", "ratio_floor",
            f"target_{TARGET}x", "numpy_loop_s", "speedup_vs_numpy"]
    if HAVE_ARTEMIS:
        keys += ["artemis_s", "speedup_vs_artemis"]
    keys += ["jaximp_first_call_s", "gflops", "max_abs_diff_vs_numpy"]
    print_table(rows, keys)
    for row in rows:
        print(f"- {row['case']}: {row['note']}")


if __name__ == "__main__":
    main()
