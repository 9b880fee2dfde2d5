"""LOCO refits with jaximp's MLP trainer: one vmapped training job vs sequential refits.

Friedman #1 (p = 10, 30 or 50). Both modes train the full model and the p refits with the same keys;
``batched=True`` runs all p + 1 fits as one ``vmap``-ped Optax job, ``batched=False`` calls
``fit_mlp`` once per fit. Each case first checks that the two give the same importances (float
tolerance), then times whole ``loco_importance`` calls, best of several rounds in which the two
modes are called in turn. ``cold`` times are the first call of each mode in a fresh process
(compilation included). Run: ``.venv/bin/python benchmarks/loco.py`` (``--quick`` for the small
case only).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import machine, print_table  # noqa: E402

import jaximp  # noqa: E402
from jaximp.methods._loco import loco_importance  # noqa: E402

# (n, hidden, steps): training lengths at which Adam does not yet amplify float rounding, so
# that the two modes can be compared at float tolerance (see the LOCO docstring).
CASES = [(200, (8,), 120, 10), (1000, (32,), 200, 10), (1000, (64, 64), 50, 10),
         (200, (8,), 60, 50), (500, (16,), 100, 30)]


def cold_time(n: int, hidden, steps: int, p: int, batched: bool) -> float:
    """Seconds of the first call in a fresh process (compilation included)."""
    code = f"""
import functools, time, jaximp
from jaximp.methods._loco import loco_importance
X, y = jaximp.make_friedman1(n={n}, p={p}, random_state=0)
fit = functools.partial(jaximp.fit_mlp, hidden={tuple(hidden)!r}, steps={steps})
start = time.perf_counter()
loco_importance(None, X, y, fit=fit, random_state=0, batched={batched})
print(time.perf_counter() - start)
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return float(out.split()[-1])


def case(n: int, hidden, steps: int, p: int, repeats: int) -> dict:
    X, y = jaximp.make_friedman1(n=n, p=p, random_state=0)
    fit = functools.partial(jaximp.fit_mlp, hidden=hidden, steps=steps)

    def run(batched: bool):
        return loco_importance(None, X, y, fit=fit, random_state=0, batched=batched)

    vmapped = run(True)
    sequential = run(False)
    scale = np.abs(sequential.importances_mean).max()
    err = np.abs(vmapped.importances_mean - sequential.importances_mean).max()
    assert err <= 1e-4 * scale, f"vmapped and sequential refits differ by {err}"
    assert vmapped.top(2)[0] in ("x1", "x2", "x4"), vmapped.top(4)

    best = {True: float("inf"), False: float("inf")}
    for _ in range(repeats):
        for mode in (True, False):
            start = time.perf_counter()
            run(mode)  # results are host NumPy arrays: already blocked
            best[mode] = min(best[mode], time.perf_counter() - start)
    return {
        "n": n, "mlp": f"[{p}, {', '.join(map(str, hidden))}, 1]", "steps": steps,
        "fits": p + 1, "vmapped_s": best[True], "sequential_s": best[False],
        "speedup": best[False] / best[True],
        "cold_vmapped_s": cold_time(n, hidden, steps, p, True),
        "cold_sequential_s": cold_time(n, hidden, steps, p, False), "max_rel_diff": err / scale,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the small case only")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per case")
    args = parser.parse_args()
    print(f"# LOCO refit benchmark, {datetime.date.today()}, {machine()}")
    print("# Friedman #1 (p features, x6.. noise): full model + p refits, fit_mlp (AdamW, lr 1e-2, full batch)")
    cases = CASES[:1] if args.quick else CASES
    rows = [case(*c, args.repeats) for c in cases]
    header = ("n", "mlp", "steps", "fits", "vmapped_s", "sequential_s", "speedup",
              "cold_vmapped_s", "cold_sequential_s", "max_rel_diff")
    print_table(rows, header)


if __name__ == "__main__":
    main()
