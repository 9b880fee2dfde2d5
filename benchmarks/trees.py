"""Tree ensembles: jaximp's JAX node arrays against scikit-learn's own predictions.

One random forest regressor, four ways to get the partial dependence of every feature on
scikit-learn's grid (``grid="sklearn"``, ``--grid`` points):

(a) the forest read into node arrays (:func:`jaximp.tree_predictor`, what ``as_predictor`` does
    by default) and evaluated by the engine on every grid copy of ``X``
    (``partial_dependence_all``: one batched engine call);
(b) the recursion PD from the same arrays (:func:`jaximp.tree_partial_dependence`, Friedman's
    weighted traversal, no data rows);
(c) ``sklearn.inspection.partial_dependence(method="brute")``;
(d) ``sklearn.inspection.partial_dependence(method="recursion")``;

and permutation importance (``--repeats`` repeats, MSE) through the node arrays against the
same engine calling scikit-learn's ``predict`` on host batches (``as_predictor(...,
trees="host")``). Before timing, (a) is checked against (c), (b) against (d), and the two
permutation importances against each other (same permutations), all to float32 precision.
Each case is called once to compile, then timed once (``--rounds`` for the best of several);
ratios come from this one run. Run: ``.venv/bin/python benchmarks/trees.py`` (defaults: 500
trees of depth 8 on n = 1,000 rows, p = 5); ``--quick`` for 50 trees.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import machine  # noqa: E402

import jaximp  # noqa: E402
from jaximp.methods._tree_stats import tree_partial_dependence
from jaximp.models._trees import tree_predictor  # noqa: E402


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
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--p", type=int, default=5)
    parser.add_argument("--grid", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="50 trees")
    args = parser.parse_args()
    if args.quick:
        args.trees = 50
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.inspection import partial_dependence as sk_pd

    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n, args.p))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=args.n)
    start = time.perf_counter()
    forest = RandomForestRegressor(n_estimators=args.trees, max_depth=args.depth,
                                   random_state=0, n_jobs=-1).fit(X, y)
    fit_s = time.perf_counter() - start
    arrays = tree_predictor(forest)
    host = jaximp.as_predictor(forest, n_features=args.p, trees="host", sample=X[:2])
    features = list(range(args.p))
    g = args.grid

    def engine_pd():
        pds = jaximp.partial_dependence_all(arrays, X, grid="sklearn", grid_resolution=g)
        return np.stack([pds[f"x{j}"].average[:, 0] for j in features])

    def recursion_pd():
        return np.stack([tree_partial_dependence(forest, X, j, grid_resolution=g)[1][:, 0]
                         for j in features])

    def sklearn_pd(method):
        return lambda: np.stack([sk_pd(forest, X, [j], method=method, grid_resolution=g)
                                 ["average"][0] for j in features])

    def pfi(model):
        return lambda: jaximp.permutation_importance(
            model, X, y, n_repeats=args.repeats, random_state=0).importances

    cases = {
        "(a) arrays + engine (brute)": engine_pd,
        "(b) arrays recursion": recursion_pd,
        "(c) scikit-learn brute": sklearn_pd("brute"),
        "(d) scikit-learn recursion": sklearn_pd("recursion"),
        "PFI arrays + engine": pfi(arrays),
        "PFI host callback": pfi(host),
    }
    first, times, results = {}, {}, {}
    for name, fn in cases.items():
        first[name], results[name] = _best(fn, 1)  # compiles (the JAX cases)
    checks = [("(a) arrays + engine (brute)", "(c) scikit-learn brute"),
              ("(b) arrays recursion", "(d) scikit-learn recursion"),
              ("PFI arrays + engine", "PFI host callback")]
    for ours, theirs in checks:
        np.testing.assert_allclose(results[ours], results[theirs], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{ours} != {theirs}")
    for name, fn in cases.items():
        times[name], _ = _best(fn, args.rounds)

    nodes = int(arrays.params["feature"].shape[1])
    print(f"# trees benchmark: {machine()}")
    print(f"# RandomForestRegressor: {args.trees} trees, max_depth {args.depth}, up to {nodes} "
          f"nodes; n = {args.n}, p = {args.p}, grid {g}, PFI repeats {args.repeats}; "
          f"fit {fit_s:.1f} s")
    print("# results checked: (a) = (c), (b) = (d), PFI arrays = PFI host (rtol 1e-4)")
    print(f"{'case':32s} {'first call s':>12s} {'timed s':>9s}")
    for name in cases:
        print(f"{name:32s} {first[name]:12.3f} {times[name]:9.3f}")
    ratio = {
        "scikit-learn brute / arrays + engine":
            times["(c) scikit-learn brute"] / times["(a) arrays + engine (brute)"],
        "scikit-learn recursion / arrays recursion":
            times["(d) scikit-learn recursion"] / times["(b) arrays recursion"],
        "arrays + engine brute / arrays recursion":
            times["(a) arrays + engine (brute)"] / times["(b) arrays recursion"],
        "PFI host callback / PFI arrays":
            times["PFI host callback"] / times["PFI arrays + engine"],
    }
    for name, value in ratio.items():
        print(f"ratio {name}: {value:.2f}x")


if __name__ == "__main__":
    main()
