"""Conditional importance (Gaussian sampler) against permutation importance and hidimstat's CFI.

Data: n = 10,000 rows of p = 10 Gaussian features with AR(1) correlation 0.6 and
``y = X @ beta + noise``; a ReLU MLP [10, 64, 64, 1] with fixed random weights, as a JAX function
and as a scikit-learn ``MLPRegressor`` carrying the same weights. Every call uses MSE and 5
repeats (hidimstat: ``n_permutations=5``, ``imputation_model_continuous=LinearRegression()``,
which is jaximp's ``sampler="gaussian"``: fitted part plus permuted least-squares residuals).

Before timing, the results are checked: jaximp's conditional importances on the JAX and the
scikit-learn model agree to float tolerance (same permutations), and agree with hidimstat's
within 5 combined Monte Carlo standard errors. Then whole calls are timed, best of several
rounds in which they are called in turn, and ratios are printed. Run:
``.venv/bin/python benchmarks/conditional.py`` (``--quick``: n = 2,000).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import warnings

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _common import (
    interleaved_best,
    jax_mlp,
    machine,
    print_table,
    random_relu_mlp,
    sklearn_mlp,
)

import jaximp


def data(n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    corr = 0.6 ** np.abs(np.subtract.outer(np.arange(p), np.arange(p)))
    X = rng.normal(size=(n, p)) @ np.linalg.cholesky(corr).T
    beta = np.linspace(1.0, 0.0, p)
    return X, X @ beta + 0.5 * rng.normal(size=n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="n = 2,000")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds")
    args = parser.parse_args()
    n, p, r = (2000 if args.quick else 10_000), 10, 5
    X, y = data(n, p)
    layers = random_relu_mlp([p, 64, 64, 1])
    f = jax_mlp(layers)
    host = sklearn_mlp(layers, p)
    y = y + np.asarray(f(X.astype(np.float32)))  # the model explains part of y

    def ours():
        return jaximp.conditional_importance(f, X, y, n_repeats=r)

    def ours_host():
        return jaximp.conditional_importance(host, X, y, n_repeats=r)

    def marginal():
        return jaximp.permutation_importance(f, X, y, n_repeats=r)

    fns = {"conditional (JAX)": ours, "permutation (JAX)": marginal,
           "conditional (sklearn)": ours_host}
    a, b = ours(), ours_host()
    err = np.abs(a.importances - b.importances).max() / np.abs(b.importances).max()
    assert err < 1e-4, f"JAX and scikit-learn models differ by {err:.2g} (relative)"

    try:
        import hidimstat
        from sklearn.linear_model import LinearRegression
    except ImportError:
        hidimstat = None
    if hidimstat is not None:
        def peer():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfi = hidimstat.CFI(host, imputation_model_continuous=LinearRegression(),
                                    n_permutations=r, feature_types="continuous",
                                    random_state=0)
                cfi.fit(X, y)
                cfi.importance(X, y)
            return cfi

        cfi = peer()
        theirs = cfi.importances_
        se = np.hypot(a.importances_std[:, 0], np.array([np.std(cfi.loss_[j])
                                                         for j in range(p)])) / np.sqrt(r)
        gap = np.abs(a.importances_mean[:, 0] - theirs)
        assert np.all(gap < 5 * se + 1e-3 * np.abs(theirs).max()), (gap, se)
        print(f"# hidimstat CFI agreement: max |diff| / combined SE = {np.max(gap / se):.2f}")
        fns["hidimstat CFI (sklearn)"] = peer

    best = interleaved_best(fns, args.repeats)
    print(f"# Conditional importance benchmark, {datetime.date.today()}, {machine()}")
    print(f"# n = {n}, p = {p}, {r} repeats, MSE, MLP [{p}, 64, 64, 1]")
    rows = [{"call": name, "seconds": t, "vs conditional (JAX)": t / best["conditional (JAX)"]}
            for name, t in best.items()]
    print_table(rows, ("call", "seconds", "vs conditional (JAX)"))
    print(f"# conditional / permutation (JAX model): "
          f"{best['conditional (JAX)'] / best['permutation (JAX)']:.2f}x")
    if "hidimstat CFI (sklearn)" in best:
        print(f"# hidimstat / jaximp, same scikit-learn model: "
              f"{best['hidimstat CFI (sklearn)'] / best['conditional (sklearn)']:.2f}x; "
              f"hidimstat (sklearn) / jaximp (JAX model): "
              f"{best['hidimstat CFI (sklearn)'] / best['conditional (JAX)']:.2f}x")


if __name__ == "__main__":
    main()
