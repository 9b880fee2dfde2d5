"""TreeSHAP: jaximp's array program against shap's TreeExplainer and XGBoost's pred_contribs.

One XGBoost regressor (``--trees`` trees of depth ``--depth``, p = ``--p`` features, fitted on
5,000 rows), path-dependent TreeSHAP of ``--n`` rows three ways, side by side in one run:

(a) ``jaximp.tree_shap(model, X)``: the paths extracted once from the node arrays (timed
    separately as "read"), then one jitted kernel over chunks of rows x paths;
(b) ``shap.TreeExplainer(model).shap_values(X)`` (shap's C++ Algorithm 2, one thread);
(c) ``model.get_booster().predict(DMatrix(X), pred_contribs=True)`` (XGBoost's own C++,
    all cores).

Then SHAP interaction values of the first ``--n-interactions`` rows (default 200) the same
three ways (shap's ``shap_interaction_values``, XGBoost's ``pred_interactions``). Before
timing, (a) is checked against (b) and (c) to float32 precision. Each is called once
to warm up, then timed interleaved (best of ``--rounds``). Without the XGBoost reader
(``jaximp.models.read_boosted``) it falls back to a scikit-learn GradientBoostingRegressor
of the same size and drops (c). Run: ``.venv/bin/python benchmarks/tree_shap.py``
(defaults: 300 trees of depth 6, n = 2,000, p = 10); ``--quick`` for 50 trees.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import interleaved_best, machine

from jaximp.methods._tree_shap import _read, tree_shap


def _model(trees: int, depth: int, p: int):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, p)).astype(np.float32)
    y = X[:, 0] + X[:, 1] * X[:, 2] + np.sin(2 * X[:, 3]) + 0.3 * rng.normal(size=5000)
    try:
        import xgboost as xgb

        from jaximp.models import read_boosted  # noqa: F401

        model = xgb.XGBRegressor(n_estimators=trees, max_depth=depth, learning_rate=0.1,
                                 n_jobs=2, random_state=0).fit(X, y)
        return model, X, "xgboost"
    except ImportError:
        from sklearn.ensemble import GradientBoostingRegressor

        model = GradientBoostingRegressor(n_estimators=trees, max_depth=depth,
                                          random_state=0).fit(X, y)
        return model, X, "sklearn"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", type=int, default=300)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--p", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-interactions", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="50 trees")
    args = parser.parse_args()
    if args.quick:
        args.trees = 50
    import shap

    model, X, kind = _model(args.trees, args.depth, args.p)
    rows = np.ascontiguousarray(X[: args.n])
    print(machine())
    start = time.perf_counter()
    paths = _read(model).paths
    read = time.perf_counter() - start
    print(f"{kind} model: {args.trees} trees of depth {args.depth}, p = {args.p}; "
          f"{paths.n_paths} paths of up to {paths.depth} features; n = {args.n} rows")

    explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    cases = {
        "jaximp.tree_shap": lambda: tree_shap(model, rows).values,
        "shap TreeExplainer": lambda: explainer.shap_values(rows, check_additivity=False),
    }
    if kind == "xgboost":
        import xgboost as xgb

        booster, matrix = model.get_booster(), xgb.DMatrix(rows)
        cases["xgboost pred_contribs"] = lambda: booster.predict(matrix, pred_contribs=True)

    ours = np.asarray(cases["jaximp.tree_shap"]())[..., 0]
    ref = np.asarray(cases["shap TreeExplainer"]())
    scale = np.abs(ref).max()
    print(f"max |jaximp - shap| / max |shap| = {np.abs(ours - ref).max() / scale:.1e}")
    if kind == "xgboost":
        native = cases["xgboost pred_contribs"]()[:, :-1]
        print(f"max |jaximp - pred_contribs| / max = {np.abs(ours - native).max() / scale:.1e}")

    times = interleaved_best(cases, args.rounds)
    print(f"{'case':<24}{'seconds':>10}{'vs jaximp':>12}")
    print(f"{'path extraction (read)':<24}{read:>10.3f}")
    for name, t in times.items():
        print(f"{name:<24}{t:>10.3f}{t / times['jaximp.tree_shap']:>11.2f}x")

    # interaction values of the first --n-interactions rows
    few = rows[: args.n_interactions]
    pairs = {
        "jaximp interactions": lambda: tree_shap(model, few, interactions=True).values,
        "shap interactions": lambda: explainer.shap_interaction_values(few),
    }
    if kind == "xgboost":
        small = xgb.DMatrix(few)
        pairs["xgboost pred_interactions"] = lambda: booster.predict(small,
                                                                     pred_interactions=True)
    ours = np.asarray(pairs["jaximp interactions"]())[..., 0]
    ref = np.asarray(pairs["shap interactions"]())
    print(f"\ninteractions, n = {len(few)}: max |jaximp - shap| / max |shap| = "
          f"{np.abs(ours - ref).max() / np.abs(ref).max():.1e}")
    times = interleaved_best(pairs, args.rounds)
    for name, t in times.items():
        print(f"{name:<26}{t:>8.3f}{t / times['jaximp interactions']:>11.2f}x")
    jax.clear_caches()


if __name__ == "__main__":
    main()
