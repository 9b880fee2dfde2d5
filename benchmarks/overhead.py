"""Host overhead per call: a near-free model, so what is timed is jaximp's own work.

The model adds two columns (a jitted function: the bare call on the same rows takes a few
microseconds), at n = 1,000 rows and p = 10 features. Each case is timed as the best of
300 warm calls (H: 100), in turn, for a reused :class:`jaximp.Explainer` and for the plain
function (which validates the data and wraps the model on every call), next to the bare
jitted model on the call's rows (the floor). Before timing, each case checks that the
Explainer and the function give the same numbers. "Explainer, 10 in flight" is the time per
call of ten calls made before any result is read (an Explainer's partial dependence and
permutation importance return once dispatched), then all ten read: a loop's cost per call.

Targets on the CPU: a reused Explainer at most 0.15 ms per call for PD of one feature (20
grid points) and for permutation importance (5 repeats), the plain functions at most 0.3 ms,
and all 45 H pairs at p = 10, n = 100 at most 1 ms. Exact Shapley values of 20 rows against
themselves (all 1,024 coalitions, 410k model rows) are timed too, without a target.
Run: ``.venv/bin/python benchmarks/overhead.py``.
"""

from __future__ import annotations

import datetime
import sys

import jax
import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import interleaved_best, machine, print_table  # noqa: E402

import jaximp  # noqa: E402

N, P = 1000, 10
TARGETS_MS = {"pd": (0.15, 0.3), "pfi": (0.15, 0.3), "h": (1.0, 1.0)}
N_SHAPLEY = 20  # exact Shapley values of 20 rows against themselves: 20 x 1,024 x 20 rows


def main() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, P)).astype(np.float32)
    y = X[:, 0] + X[:, 1]
    model = jax.jit(lambda A: A[:, 0] + A[:, 1])
    X_h, X_s = X[:100], X[:N_SHAPLEY]
    explainer, explainer_h = jaximp.Explainer(model, X, y), jaximp.Explainer(model, X_h)
    explainer_s = jaximp.Explainer(model, X_s)
    cases = {
        "pd": (lambda: explainer.partial_dependence(0, grid_resolution=20).average,
               lambda: jaximp.partial_dependence(model, X, 0, grid_resolution=20).average,
               20 * N, 300),
        "pfi": (lambda: explainer.permutation_importance(n_repeats=5).importances,
                lambda: jaximp.permutation_importance(model, X, y, n_repeats=5).importances,
                (5 * P + 1) * N, 300),
        "h": (lambda: explainer_h.h_statistic(pairs="all").pairwise.values,
              lambda: jaximp.h_statistic(model, X_h, pairs="all").pairwise.values,
              None, 100),
        "exact Shapley": (lambda: explainer_s.shapley_values().values,
                          lambda: jaximp.shapley_values(model, X_s).values,
                          N_SHAPLEY * 2**P * N_SHAPLEY, 100),
    }
    reads = {"pd": (lambda: explainer.partial_dependence(0, grid_resolution=20),
                    lambda r: r.average),
             "pfi": (lambda: explainer.permutation_importance(n_repeats=5),
                     lambda r: r.importances)}
    rows = []
    for name, (bound, function, floor_rows, repeats) in cases.items():
        np.testing.assert_array_equal(np.asarray(bound()), np.asarray(function()))
        floor_X = jax.device_put(np.resize(X, (floor_rows or 100 * 100 * 46, P)))
        floor = (lambda data=floor_X: model(data))
        jax.block_until_ready(floor())
        timed = {"explainer": bound, "function": function, "floor": floor}
        if name in reads:
            call, read = reads[name]
            timed["in flight"] = lambda call=call, read=read: [read(r) for r in
                                                               [call() for _ in range(10)]]
        best = interleaved_best(timed, repeats)
        target_bound, target_function = TARGETS_MS.get(name, (None, None))
        rows.append({
            "case": name, "Explainer ms": best["explainer"] * 1e3,
            "Explainer, 10 in flight ms": best["in flight"] * 1e2 if "in flight" in best else "-",
            "function ms": best["function"] * 1e3, "floor ms": best["floor"] * 1e3,
            "Explainer target": _against(best["explainer"], target_bound),
            "function target": _against(best["function"], target_function),
        })
    print(f"# host overhead per call, {machine()}, {datetime.date.today()}")
    print(f"# near-free jitted model (two columns added), n = {N}, p = {P}; H at n = 100")
    print_table(rows, ["case", "Explainer ms", "Explainer, 10 in flight ms", "function ms",
                       "floor ms",
                       "Explainer target", "function target"])


def _against(seconds: float, target_ms: float | None) -> str:
    if target_ms is None:
        return "-"
    return f"{target_ms} ms: " + ("met" if seconds * 1e3 <= target_ms else "not met")


if __name__ == "__main__":
    main()
