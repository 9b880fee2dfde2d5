"""Tree ensembles: jaximp's JAX node arrays against scikit-learn, side by side in one run.

One random forest regressor (``--trees`` trees of depth ``--depth``, fitted on ``--n`` rows of
``--p`` features), on the CPU unless JAX has another default device:

partial dependence of every feature on scikit-learn's grid (``grid="sklearn"``, ``--grid``
points), using the first ``--n-pd`` rows:

(a) the forest read into node arrays (:func:`jaximp.tree_predictor`, what ``as_predictor`` does
    by default) and evaluated by the engine on every grid copy of the rows
    (``partial_dependence_all``: one batched engine call);
(b) the recursion PD (:func:`jaximp.tree_partial_dependence`, Friedman's weighted traversal as
    weighted leaf sums on the host, no data rows), one call per feature;
(c) ``sklearn.inspection.partial_dependence(method="brute")``, one call per feature;
(d) ``sklearn.inspection.partial_dependence(method="recursion")``, one call per feature;

and permutation importance on all ``--n`` rows (``--repeats`` repeats, MSE):

(e) through the node arrays (``as_predictor(forest)``, the default);
(f) through the same engine calling scikit-learn's ``predict`` on host batches
    (``as_predictor(forest, trees="host")``);
(g) ``sklearn.inspection.permutation_importance`` (``scoring="neg_mean_squared_error"``).

The forest predicts with all cores (``n_jobs=-1``), as jaximp's XLA does. Before timing, (a)
is checked against (c), (b) against (d) and (e) against (f) (same permutations), all to float32
precision; (g) draws other permutations, so its importances are compared only for the ranking
of the features. Each case is called once (compiles the JAX cases; reads the trees), then
timed as the best of ``--rounds`` calls; the ratios come from this one run. Targets (issue 26):
(b) at least as fast as (d); (e) at least as fast as (f) and at least 2x (g).

Run: ``.venv/bin/python benchmarks/trees.py`` (defaults: 100 trees of depth 8, n = 10,000,
p = 10, PD on 2,000 rows and 20 grid points); ``--quick`` for 20 trees and n = 2,000;
``--no-brute`` skips (a) and (c).
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import machine

import jaximp
from jaximp.methods._tree_stats import tree_partial_dependence
from jaximp.models._trees import tree_predictor


def _best(fn, rounds: int) -> tuple[float, object]:
    """Best wall time of ``rounds`` calls (results blocked on), and the last result."""
    best, out = np.inf, None
    for _ in range(rounds):
        start = time.perf_counter()
        out = jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--n-pd", type=int, default=2000)
    parser.add_argument("--p", type=int, default=10)
    parser.add_argument("--grid", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20 trees, n = 2,000")
    parser.add_argument("--no-brute", action="store_true", help="skip the brute PD cases")
    args = parser.parse_args()
    if args.quick:
        args.trees, args.n = 20, 2000
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.inspection import partial_dependence as sk_pd
    from sklearn.inspection import permutation_importance as sk_permutation_importance

    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n, args.p))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=args.n)
    X_pd = X[:args.n_pd]
    start = time.perf_counter()
    forest = RandomForestRegressor(n_estimators=args.trees, max_depth=args.depth,
                                   random_state=0, n_jobs=-1).fit(X, y)
    fit_s = time.perf_counter() - start
    arrays = tree_predictor(forest)
    host = jaximp.as_predictor(forest, n_features=args.p, trees="host", sample=X[:2])
    features = list(range(args.p))
    g = args.grid

    def engine_pd():
        pds = jaximp.partial_dependence_all(arrays, X_pd, grid="sklearn", grid_resolution=g)
        return np.stack([pds[f"x{j}"].average[:, 0] for j in features])

    def recursion_pd():
        return np.stack([tree_partial_dependence(forest, X_pd, j, grid_resolution=g)[1][:, 0]
                         for j in features])

    def sklearn_pd(method):
        return lambda: np.stack([sk_pd(forest, X_pd, [j], method=method, grid_resolution=g)
                                 ["average"][0] for j in features])

    def pfi(model):
        return lambda: jaximp.permutation_importance(
            model, X, y, n_repeats=args.repeats, random_state=0).importances_mean[:, 0]

    def sklearn_pfi():
        return sk_permutation_importance(forest, X, y, n_repeats=args.repeats, random_state=0,
                                         scoring="neg_mean_squared_error").importances_mean

    cases = {}
    if not args.no_brute:
        cases["(a) PD arrays + engine (brute)"] = engine_pd
    cases["(b) PD recursion, jaximp"] = recursion_pd
    if not args.no_brute:
        cases["(c) PD brute, scikit-learn"] = sklearn_pd("brute")
    cases["(d) PD recursion, scikit-learn"] = sklearn_pd("recursion")
    cases["(e) PFI arrays + engine"] = pfi(arrays)
    cases["(f) PFI host predict + engine"] = pfi(host)
    cases["(g) PFI scikit-learn"] = sklearn_pfi
    first, times, results = {}, {}, {}
    for name, fn in cases.items():
        first[name], results[name] = _best(fn, 1)  # compiles (the JAX cases), reads the trees
    checks = [("(a) PD arrays + engine (brute)", "(c) PD brute, scikit-learn"),
              ("(b) PD recursion, jaximp", "(d) PD recursion, scikit-learn"),
              ("(e) PFI arrays + engine", "(f) PFI host predict + engine")]
    for ours, theirs in checks:
        if ours in results:
            np.testing.assert_allclose(results[ours], results[theirs], rtol=1e-4, atol=1e-5,
                                       err_msg=f"{ours} != {theirs}")
    # scikit-learn's importance is the drop of the score -MSE, i.e. the increase of the MSE
    top = np.argsort(results["(e) PFI arrays + engine"])[::-1][:3]
    top_sklearn = np.argsort(results["(g) PFI scikit-learn"])[::-1][:3]
    assert set(top) == set(top_sklearn), (top, top_sklearn)
    for _ in range(args.rounds):  # interleaved rounds: a busy spell hits every case alike
        for name, fn in cases.items():
            elapsed, _ = _best(fn, 1)
            times[name] = min(times.get(name, np.inf), elapsed)

    nodes = int(arrays.params["feature"].shape[1])
    print(f"# trees benchmark: {machine()}")
    print(f"# RandomForestRegressor: {args.trees} trees, max_depth {args.depth}, up to {nodes} "
          f"nodes, fitted on n = {args.n}, p = {args.p} ({fit_s:.1f} s); PD on {args.n_pd} "
          f"rows, grid {g}, every feature; PFI on n = {args.n}, {args.repeats} repeats")
    print("# checked: (a) = (c), (b) = (d), (e) = (f) to rtol 1e-4; (e) and (g) rank the same "
          "top 3 features")
    print(f"{'case':34s} {'first call s':>12s} {'best s':>9s}  (best of {args.rounds})")
    for name in cases:
        print(f"{name:34s} {first[name]:12.3f} {times[name]:9.3f}")
    ratios = [("(d) / (b): scikit-learn recursion / jaximp recursion (target >= 1)",
               "(d) PD recursion, scikit-learn", "(b) PD recursion, jaximp"),
              ("(f) / (e): PFI host / PFI arrays (target >= 1)",
               "(f) PFI host predict + engine", "(e) PFI arrays + engine"),
              ("(g) / (e): PFI scikit-learn / PFI arrays (target >= 2)",
               "(g) PFI scikit-learn", "(e) PFI arrays + engine")]
    if not args.no_brute:
        ratios.insert(0, ("(c) / (a): scikit-learn brute / arrays + engine brute",
                          "(c) PD brute, scikit-learn", "(a) PD arrays + engine (brute)"))
    for label, num, den in ratios:
        print(f"ratio {label}: {times[num] / times[den]:.2f}x")


if __name__ == "__main__":
    main()
