"""The GPU side by side: jaximp, the floor and the peers a GPU user would pick, in one run.

One command on a machine with a GPU: ``make bench-gpu`` (``.venv/bin/python benchmarks/gpu.py``).
Every case uses ReLU MLPs with fixed random weights (``_common.random_relu_mlp``) and times, in
interleaved rounds (the best of each, every call blocked until its results are ready):

- jaximp's plain function and a reused :class:`jaximp.Explainer` (its data kept on the device),
  and for PD and permutation importance a loop's cost per call: ten Explainer calls made
  before any is read, against ten floor calls made the same way, and the Explainer against
  the floor with its one-number sum read on the host (a method's results end there);
- the floor: the jitted model alone over the same rows and nothing else, the faster of the
  16k-row ``lax.scan`` and one with the largest blocks that fit (up to 2^20 rows);
- the peers: scikit-learn's ``partial_dependence`` and ``permutation_importance`` calling the
  same jitted model, shap's ``ExactExplainer`` and ``PermutationExplainer`` on it, and captum's
  ``ShapleyValueSampling`` and ``FeaturePermutation`` on a torch twin of the MLP (the same
  weights) on the same device (CUDA when torch sees one);
- jaximp on that torch twin itself (called through DLPack on the engine's device batches)
  against jaximp on the JAX model. shap and captum run on a subset of
  the rows where they are slow, their time scaled to all rows (said in the ``note`` column).

Before timing, each case checks its numbers: partial dependence equals scikit-learn's on the
same grid, permutation importance agrees with scikit-learn's within their standard errors
(different permutations), the H-statistic equals a float64 NumPy loop, exact Shapley values
equal shap's, sampled ones are within their sampling error of the exact values, and captum's
permutation attributions agree with jaximp's in the mean over rows of their absolute values.

Targets on a GPU (issue 24): PD and permutation importance within 1.5x of the floor from n =
10,000 up (permutation importance at n = 1,000,000 too), H and exact Shapley values at or
under the floor. ``--quick`` runs small sizes, on any device (the script's own check on a CPU);
``--parts`` picks cases (a device session's time is short); a peer that is not installed skips
its cases, said in the output. ``--json FILE`` also writes every row as a JSON line.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import itertools
import json
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
    torch_twin,
)
from hstat import NumpyMLP, numpy_loop_h2  # noqa: E402
from shapley import numpy_callable  # noqa: E402

import jaximp  # noqa: E402

P, GRID, REPEATS, BACKGROUND = 10, 20, 5, 100
IN_FLIGHT = 10  # calls made before any is read: a loop's cost per call
COLUMNS = ["case", "n", "model_rows", "jaximp_s", "explainer_s", "floor_s", "ratio_floor",
           "explainer_ratio_floor", "floor_read_s", "explainer_ratio_floor_read", "in_flight_s", "in_flight_ratio_floor", "peer", "peer_s", "peer_over_jaximp", "check", "note"]


def floor_of(f, X, rows: int):
    """The faster of the 16k-row scan floor and the largest-block one, and its best time."""
    floors = {"16k": scan_floor(f, X, rows),
              "large": scan_floor(f, X, rows, block=max(16384, min(rows, 1 << 20)))}
    times = interleaved_best(floors, 3)
    best = min(times, key=times.get)
    return floors[best]


def sklearn_wrapper(f):
    """A scikit-learn regressor whose ``predict`` is the jitted model (what a user hands it)."""
    from sklearn.base import BaseEstimator, RegressorMixin

    predict = numpy_callable(f)

    class JittedModel(RegressorMixin, BaseEstimator):
        def fit(self, X, y=None):
            return self

        def predict(self, X):
            return predict(np.asarray(X, np.float32))

        def __sklearn_is_fitted__(self):
            return True

    return JittedModel()


def timed_row(case, n, rows, fns, repeats, rounds=None, peer=None, check="", note=""):
    """Time ``fns`` (jaximp, explainer, floor and the peer by name) and build the table row."""
    t = interleaved_best(fns, repeats, rounds)
    row = {"case": case, "n": n, "model_rows": rows, "jaximp_s": t["jaximp"],
           "floor_s": t["floor"], "ratio_floor": t["jaximp"] / t["floor"], "check": check,
           "note": note, "peer": peer or "-"}
    if "explainer" in t:
        row.update(explainer_s=t["explainer"], explainer_ratio_floor=t["explainer"] / t["floor"])
    if "floor read" in t:  # the floor's sum read on the host, as a method's results are
        row.update(floor_read_s=t["floor read"],
                   explainer_ratio_floor_read=t["explainer"] / t["floor read"])
    if "in flight" in t:  # per call, against the floor's calls made the same way
        row.update(in_flight_s=t["in flight"] / IN_FLIGHT,
                   in_flight_ratio_floor=t["in flight"] / t["floor in flight"])
    if peer is not None:
        row.update(peer_s=t[peer], peer_over_jaximp=t[peer] / t["jaximp"])
    return row


def in_flight(call, read, floor):
    """A loop's cost: ``IN_FLIGHT`` calls made before any result is read, then all read
    (an Explainer's partial dependence and permutation importance return once dispatched),
    and the floor's calls made the same way; and the floor with its sum read on the host (a
    method's results end there: on a GPU the read is a device-to-host copy)."""
    return {"in flight": lambda: [read(r) for r in [call() for _ in range(IN_FLIGHT)]],
            "floor in flight": lambda: [floor() for _ in range(IN_FLIGHT)],
            "floor read": lambda: float(floor())}


def case_pd(f, n, repeats, rng):
    from sklearn.inspection import partial_dependence

    X = rng.uniform(size=(n, P))
    predictor = jaximp.as_predictor(f, n_features=P)
    explainer = jaximp.Explainer(predictor, X)
    ours = lambda: [r.average for r in jaximp.partial_dependence_all(  # noqa: E731
        predictor, X, grid="sklearn", grid_resolution=GRID).values()]
    bound = lambda: [r.average for r in explainer.partial_dependence_all(  # noqa: E731
        grid="sklearn", grid_resolution=GRID).values()]
    est = sklearn_wrapper(f)
    theirs = lambda: [partial_dependence(est, X, [j], grid_resolution=GRID,  # noqa: E731
                                         method="brute")["average"][0] for j in range(P)]
    reference = theirs()
    error = max(np.abs(a[:, 0] - b).max() for a, b in zip(ours(), reference))
    scale = max(np.abs(b).max() for b in reference)
    assert error <= 10 * float32_rtol() * scale, error
    fns = {"jaximp": ours, "explainer": bound, "floor": floor_of(f, X, n * GRID * P)}
    fns.update(in_flight(lambda: explainer.partial_dependence_all(
        grid="sklearn", grid_resolution=GRID), lambda r: [v.average for v in r.values()],
        fns["floor"]))
    peer = "sklearn" if n <= 10_000 else None
    if peer:
        fns[peer] = theirs
    return timed_row("PD, every feature", n, n * GRID * P, fns, repeats, {"sklearn": 3}, peer,
                     f"= sklearn: max err {error:.1e}")


def case_pfi(f, n, repeats, rng):
    from sklearn.inspection import permutation_importance

    X = rng.uniform(size=(n, P))
    signal = np.asarray(f(jnp.asarray(X, jnp.float32)), np.float64)
    y = signal + 0.1 * signal.std() * rng.normal(size=n)
    predictor = jaximp.as_predictor(f, n_features=P)
    explainer = jaximp.Explainer(predictor, X, y)
    ours = lambda: jaximp.permutation_importance(  # noqa: E731
        predictor, X, y, n_repeats=REPEATS).importances
    bound = lambda: explainer.permutation_importance(n_repeats=REPEATS).importances  # noqa: E731
    est = sklearn_wrapper(f)
    theirs = lambda: permutation_importance(  # noqa: E731
        est, X, y, n_repeats=REPEATS, random_state=0, scoring="neg_mean_squared_error")
    result = jaximp.permutation_importance(predictor, X, y, n_repeats=REPEATS)
    check = ""
    peer = "sklearn" if n <= 100_000 else None
    if peer:
        sk = theirs()
        se = np.sqrt((result.importances_std[:, 0] ** 2 + sk.importances_std ** 2) / REPEATS)
        gap = np.abs(result.importances_mean[:, 0] - sk.importances_mean)
        assert np.all(gap <= 5 * se + 1e-3 * np.abs(sk.importances_mean).max()), (gap, se)
        check = f"~ sklearn: max gap {np.max(gap / (se + 1e-12)):.1f} SE"
    fns = {"jaximp": ours, "explainer": bound,
           "floor": floor_of(f, X, (P * REPEATS + 1) * n)}
    fns.update(in_flight(lambda: explainer.permutation_importance(n_repeats=REPEATS),
                         lambda r: r.importances, fns["floor"]))
    if peer:
        fns[peer] = theirs
    return timed_row("permutation importance", n, (P * REPEATS + 1) * n, fns, repeats,
                     {"sklearn": 2}, peer, check)


def case_h(p, n, repeats, rng):
    layers = random_relu_mlp([p, 64, 64, 1])
    f = jax_mlp(layers)
    X = rng.uniform(size=(n, p))
    predictor = jaximp.as_predictor(f, n_features=p)
    explainer = jaximp.Explainer(predictor, X)
    ours = lambda: jaximp.h_statistic(  # noqa: E731
        predictor, X, pairs="all", overall=False, n_max=None).pairwise.values
    bound = lambda: explainer.h_statistic(  # noqa: E731
        pairs="all", overall=False, n_max=None).pairwise.values
    pairs = list(itertools.combinations(range(p), 2))
    loop = numpy_loop_h2(NumpyMLP(layers), X, pairs)
    error = np.abs(np.asarray(ours())[:, 0] - loop).max()
    assert error <= 100 * float32_rtol() * max(loop.max(), 1e-3), error
    rows = (len(pairs) + 2 * p) * n * n
    return timed_row(f"H, all pairs, p = {p}", n, rows,
                     {"jaximp": ours, "explainer": bound, "floor": floor_of(f, X, rows)},
                     repeats, check=f"= NumPy loop: max err {error:.1e}")


def case_shapley(n, n_shap, background, repeats, rng, device):
    """Exact and sampled Shapley values against shap and captum, on a [10, 32, 32, 1] MLP,
    with ``background`` rows."""
    import shap
    import torch
    from captum.attr import ShapleyValueSampling

    layers = random_relu_mlp([P, 32, 32, 1])
    f = jax_mlp(layers)
    X, B = rng.uniform(size=(n, P)), rng.uniform(size=(background, P))
    predictor = jaximp.as_predictor(f, n_features=P)
    explainer = jaximp.Explainer(predictor, X, background=B)
    masker = shap.maskers.Independent(B, max_samples=background)
    model = numpy_callable(f)
    k = min(n_shap, n)
    scale = f"shap and captum on {k} of the {n} rows, times scaled"

    exact = lambda: jaximp.shapley_values(predictor, X, B).values  # noqa: E731
    bound = lambda: explainer.shapley_values().values  # noqa: E731
    reference = np.asarray(exact())[..., 0]
    shap_exact = shap.ExactExplainer(model, masker)
    theirs = shap_exact(X[:k], silent=True).values
    error = np.abs(theirs - reference[:k]).max()
    assert error <= float32_rtol() * np.abs(reference).max() + 1e-6, error
    rows = n * (2 ** P - 1) * background
    exact_row = timed_row(
        "Shapley, exact", n, rows,
        {"jaximp": exact, "explainer": bound, "floor": floor_of(f, X, rows),
         "shap Exact": lambda: shap_exact(X[:k], silent=True).values},
        repeats, {"shap Exact": 1}, "shap Exact", f"= shap: max err {error:.1e}", scale)

    permutations = 2 * (500 // (2 * P + 1))  # shap's PermutationExplainer at max_evals=500
    sampled = lambda: jaximp.shapley_values(  # noqa: E731
        predictor, X, B, method="permutation", n_permutations=permutations).values
    shap_perm = shap.PermutationExplainer(model, masker)
    net = torch_twin(layers).to(device)
    sampling = ShapleyValueSampling(lambda rows: net(rows)[:, 0])
    inputs = torch.tensor(np.repeat(X[:k], background, axis=0), dtype=torch.float32,
                          device=device)
    baselines = torch.tensor(np.tile(B, (k, 1)), dtype=torch.float32, device=device)

    def captum():
        values = sampling.attribute(inputs, baselines=baselines, n_samples=permutations,
                                    perturbations_per_eval=16)
        return values.reshape(k, background, P).mean(1).cpu().numpy()

    def rms(values):
        return float(np.sqrt(np.mean((np.asarray(values) - reference[:len(values)]) ** 2)))

    errors = {"jaximp": rms(np.asarray(sampled())[..., 0]),
              "shap": rms(shap_perm(X[:k], max_evals=500, silent=True).values),
              "captum": rms(captum())}
    spread = float(np.sqrt(np.mean(reference ** 2)))
    assert max(errors.values()) <= 0.2 * spread, (errors, spread)
    rows = n * (permutations * (P - 1) + 1) * background
    bound_sampled = lambda: explainer.shapley_values(  # noqa: E731
        method="permutation", n_permutations=permutations).values
    np.testing.assert_array_equal(np.asarray(bound_sampled()), np.asarray(sampled()))
    fns = {"jaximp": sampled, "explainer": bound_sampled, "floor": floor_of(f, X, rows),
           "shap Permutation": lambda: shap_perm(X[:k], max_evals=500, silent=True).values,
           "captum": captum}
    t = interleaved_best(fns, repeats, {"shap Permutation": 1, "captum": 1})
    check = "RMS error vs exact: " + ", ".join(f"{k_} {v:.1e}" for k_, v in errors.items())
    sampled_rows = []
    for peer in ("shap Permutation", "captum"):
        peer_s = t[peer] * n / k
        sampled_rows.append({
            "case": f"Shapley, {permutations} permutations", "n": n, "model_rows": rows,
            "jaximp_s": t["jaximp"], "floor_s": t["floor"],
            "ratio_floor": t["jaximp"] / t["floor"], "explainer_s": t["explainer"],
            "explainer_ratio_floor": t["explainer"] / t["floor"], "peer": peer, "peer_s": peer_s,
            "peer_over_jaximp": peer_s / t["jaximp"], "check": check, "note": scale})
    exact_row["peer_s"] *= n / k
    exact_row["peer_over_jaximp"] *= n / k
    return [exact_row] + sampled_rows


def case_feature_permutation(n, repeats, rng, device):
    """Per-row permutation attributions: jaximp against captum's FeaturePermutation."""
    import torch
    from captum.attr import FeaturePermutation

    layers = random_relu_mlp([P, 64, 64, 1])
    f = jax_mlp(layers)
    X = rng.uniform(size=(n, P))
    predictor = jaximp.as_predictor(f, n_features=P)
    ours = lambda: jaximp.permutation_attributions(  # noqa: E731
        predictor, X, n_repeats=REPEATS).values
    explainer = jaximp.Explainer(predictor, X)
    bound = lambda: explainer.permutation_attributions(n_repeats=REPEATS).values  # noqa: E731
    np.testing.assert_array_equal(np.asarray(bound()), np.asarray(ours()))
    net = torch_twin(layers).to(device)
    permutation = FeaturePermutation(lambda rows: net(rows)[:, 0])
    inputs = torch.tensor(X, dtype=torch.float32, device=device)

    def captum():
        total = sum(permutation.attribute(inputs, perturbations_per_eval=P)
                    for _ in range(REPEATS))
        return (total / REPEATS).cpu().numpy()

    mine = np.abs(np.asarray(ours())[..., 0]).mean(axis=0)
    theirs = np.abs(captum()).mean(axis=0)
    gap = np.abs(mine - theirs).max() / theirs.max()
    assert gap <= 0.1, (mine, theirs)
    rows = (P * REPEATS + 1) * n
    return timed_row("permutation attributions", n, rows,
                     {"jaximp": ours, "explainer": bound, "floor": floor_of(f, X, rows),
                      "captum": captum},
                     repeats, {"captum": 2}, "captum",
                     f"mean abs attribution ~ captum: max gap {gap:.1%}")


def case_torch_module(n, repeats, rng, device):
    """Permutation importance of the MLP's torch twin (called through DLPack on the engine's
    device batches) against the same call on the JAX model."""
    layers = random_relu_mlp([P, 64, 64, 1])
    f = jax_mlp(layers)
    net = torch_twin(layers).to(device)
    X = rng.uniform(size=(n, P))
    y = np.asarray(f(jnp.asarray(X, jnp.float32)), np.float64) + 0.1 * rng.normal(size=n)
    on_torch = lambda: jaximp.permutation_importance(  # noqa: E731
        net, X, y, n_repeats=REPEATS).importances
    on_jax = lambda: jaximp.permutation_importance(  # noqa: E731
        f, X, y, n_repeats=REPEATS).importances
    ours, theirs = np.asarray(on_torch()), np.asarray(on_jax())
    error = np.abs(ours - theirs).max() / np.abs(theirs).max()
    assert error <= 10 * float32_rtol(), error
    rows = (P * REPEATS + 1) * n
    return timed_row("permutation importance, torch twin", n, rows,
                     {"jaximp": on_torch, "floor": floor_of(f, X, rows),
                      "jaximp, JAX model": on_jax}, repeats, peer="jaximp, JAX model",
                     check=f"= JAX model: max rel err {error:.1e}",
                     note=f"torch on {device}, through DLPack")


PARTS = ("pd", "pfi", "h", "shapley", "attributions", "torch")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (any device)")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per case")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                        help="cases to run (default all)")
    parser.add_argument("--json", help="also write every row as a JSON line to this file")
    args = parser.parse_args()
    missing = [name for name in ("sklearn", "shap", "captum", "torch")
               if importlib.util.find_spec(name) is None]
    needs = {"pd": {"sklearn"}, "pfi": {"sklearn"}, "shapley": {"shap", "captum", "torch"},
             "attributions": {"captum", "torch"}, "torch": {"torch"}}
    parts = [part for part in args.parts if not needs.get(part, set()) & set(missing)]
    device = "cpu"
    if "torch" not in missing:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    f = jax_mlp(random_relu_mlp([P, 64, 64, 1]))
    rng = np.random.default_rng(1)
    quick = args.quick
    repeats = 2 if quick else args.repeats
    print(f"# GPU side by side, {datetime.date.today()}, {machine()}, torch on {device}")
    print(f"# MLP [{P}, 64, 64, 1] unless said; best of {repeats} interleaved rounds "
          "(the slow peers: 1 to 3); ratios from this one run")
    if missing:
        print(f"# not installed: {missing}; skipped: {sorted(set(args.parts) - set(parts))}")
    if device == "cpu" and jax.default_backend() != "cpu":
        print("# torch sees no GPU (a CPU build?): captum and the torch twin run on the CPU")
    sizes = {"pd": [(f, n) for n in ([500] if quick else [1_000, 10_000, 100_000])],
             "pfi": [(f, n) for n in ([500] if quick else [1_000, 10_000, 100_000, 1_000_000])],
             "h": [(4, 50)] if quick else [(10, 300), (10, 1_000)],
             "shapley": [(8, 2, 20) if quick else (1_000, 20, BACKGROUND)],
             "attributions": [(n,) for n in ([500] if quick else [10_000, 100_000, 1_000_000])],
             "torch": [(n,) for n in ([500] if quick else [10_000, 1_000_000])]}
    runs = {"pd": case_pd, "pfi": case_pfi, "h": case_h, "shapley": case_shapley,
            "attributions": case_feature_permutation, "torch": case_torch_module}
    on_torch = {"shapley", "attributions", "torch"}
    rows = []
    for part in parts:  # in the order asked, so a short device session runs its first choice
        for size in sizes[part]:
            case_args = (*size, repeats, rng) + ((device,) if part in on_torch else ())
            start = time.perf_counter()
            new_rows = runs[part](*case_args)
            new_rows = new_rows if isinstance(new_rows, list) else [new_rows]
            # reported as each case ends, so a run cut short keeps what it measured
            for row in new_rows:
                said = [f"{row['ratio_floor']:.3g}x floor"]
                if "explainer_ratio_floor" in row:
                    said.append(f"Explainer {row['explainer_ratio_floor']:.3g}x floor")
                if "explainer_ratio_floor_read" in row:
                    said.append(f"Explainer {row['explainer_ratio_floor_read']:.3g}x the floor "
                                "read")
                if "in_flight_ratio_floor" in row:
                    said.append(f"{IN_FLIGHT} in flight {row['in_flight_ratio_floor']:.3g}x")
                if "peer_over_jaximp" in row:
                    said.append(f"{row['peer']} {row['peer_over_jaximp']:.3g}x jaximp's time")
                print(f"# {row['case']}, n = {row['n']}: {', '.join(said)} "
                      f"({time.perf_counter() - start:.0f} s)", flush=True)
            if args.json:
                with open(args.json, "a") as out:
                    for row in new_rows:
                        out.write(json.dumps({"date": str(datetime.date.today()),
                                              "machine": machine(), "torch_device": device,
                                              **row}, default=float) + "\n")
            rows += new_rows
    print_table(rows, COLUMNS)


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"# {time.perf_counter() - start:.0f} s")
