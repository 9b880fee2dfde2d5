"""The engine's paths across modes and geometries, against float64 NumPy references.

64-bit JAX (``jax.enable_x64``), several model outputs, memory budgets that split a call into
several chunks and row blocks, bootstrap-count weights, a scikit-learn model, low-precision
(float16/bfloat16) predictions, and four forced host devices: an Explainer's permutation
importance, H-statistic and partial dependence (and their warm repeats) equal the same
quantity computed in NumPy with the same permutations and rows.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_same_program, engine_permutations, random_mlp, run_on_host_devices

import jaximp

N = 48
RNG = np.random.default_rng(11)
X = RNG.normal(size=(N, 3))
WEIGHTS = RNG.integers(0, 4, size=N).astype(float)
F1, F1_NP, _ = random_mlp(0)
F3, F3_NP, _ = random_mlp(2, (3, 8, 3))
Y1 = F1_NP(X) + 0.1 * RNG.normal(size=N)
Y3 = F3_NP(X) + 0.1 * RNG.normal(size=(N, 3))


def _permutations(p, n_repeats, n, seed):
    """The permutations (p, r, n) that permutation importance with ``random_state=seed``
    applies: the engine's keyed permutations labelled (feature, repeat)."""
    from jaximp.data._checks import as_key
    from jaximp.engine._plans import at_permuted_rows

    labels = [(j, r) for j in range(p) for r in range(n_repeats)]
    plan = at_permuted_rows(np.eye(p, dtype=bool), np.repeat(np.arange(p), n_repeats),
                            as_key(seed), labels)
    return engine_permutations(plan, n).reshape(p, n_repeats, n)


def _permutation_reference(f_np, y, weights, loss, perms, kind="difference"):
    """Float64 permutation importances (p, o, r) of ``loss(y, prediction, weights) -> (o,)``."""
    base = loss(y, f_np(X), weights)
    out = np.empty((perms.shape[0], np.size(base), perms.shape[1]))
    for j in range(perms.shape[0]):
        for r in range(perms.shape[1]):
            Xp = X.copy()
            Xp[:, j] = X[perms[j, r], j]
            e = loss(y, f_np(Xp), weights)
            out[j, :, r] = e - base if kind == "difference" else e / base
    return out


def _mse(y, p, w):
    w = np.ones(len(y)) if w is None else w
    return np.atleast_1d(np.average((y - p) ** 2, axis=0, weights=w))


def _log_loss(y, p, w):
    w = np.ones(len(y)) if w is None else w
    p = np.clip(p, 1e-7, 1 - 1e-7)  # no row in these data comes near the clip
    return np.atleast_1d(np.average(-(y * np.log(p) + (1 - y) * np.log(1 - p)), weights=w))


def _pd_reference(f_np, column, grid, weights=None):
    """Float64 partial dependence (g, o) of one column at ``grid``."""
    rows = []
    for value in grid:
        Xs = X.copy()
        Xs[:, column] = value
        rows.append(np.average(np.asarray(f_np(Xs)).reshape(N, -1), axis=0, weights=weights))
    return np.array(rows)


def _centred_pd_at_rows(f_np, columns, w):
    """``F_S(x_i)``, (n, o): the PD of the columns S at each data row, centred to weighted
    mean 0 (Friedman's H-statistic's building block)."""
    values = np.empty((N, np.asarray(f_np(X[:1])).reshape(1, -1).shape[1]))
    for i in range(N):
        Xs = X.copy()
        Xs[:, list(columns)] = X[i, list(columns)]
        values[i] = np.average(np.asarray(f_np(Xs)).reshape(N, -1), axis=0, weights=w)
    return values - np.average(values, axis=0, weights=w)


def _h_reference(f_np, w=None):
    """Float64 squared pairwise, overall and three-way H-statistics of the three columns."""
    w = np.ones(N) if w is None else w
    one = {j: _centred_pd_at_rows(f_np, (j,), w) for j in range(3)}
    two = {(j, k): _centred_pd_at_rows(f_np, (j, k), w) for j in range(3) for k in range(j + 1, 3)}
    full = np.asarray(f_np(X)).reshape(N, -1)
    full = full - np.average(full, axis=0, weights=w)

    def ratio(num, den):
        return np.average(num ** 2, axis=0, weights=w) / np.average(den ** 2, axis=0, weights=w)

    pairwise = np.array([ratio(two[p] - one[p[0]] - one[p[1]], two[p]) for p in two])
    rest = {0: two[(1, 2)], 1: two[(0, 2)], 2: two[(0, 1)]}
    overall = np.array([ratio(full - one[j] - rest[j], full) for j in range(3)])
    three = full - sum(two.values()) + sum(one.values())
    return pairwise, overall, ratio(three, full)


def _assert_h(result, f_np, w, rtol):
    pairwise, overall, three = _h_reference(f_np, w)
    assert result.pairwise.feature_sets == (("x0", "x1"), ("x0", "x2"), ("x1", "x2"))
    np.testing.assert_allclose(result.pairwise.values, pairwise, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(result.overall.importances_mean, overall, rtol=rtol, atol=1e-6)
    if result.three_way is not None:
        np.testing.assert_allclose(result.three_way.values[0], three, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("budget", [None, 1 << 16])
def test_x64_explainer_matches_float64_references(budget):
    """Under ``jax_enable_x64`` an Explainer (weights, small budgets) and its warm repeats
    give the float64 permutation importances (difference, ratio, bootstrap), H and PD."""
    perms = _permutations(3, 3, N, 4)
    with jax.enable_x64(True):
        ex = jaximp.Explainer(F1, X, Y1, sample_weight=WEIGHTS, memory_budget=budget,
                              random_state=4)
        for kind in ("difference", "ratio", "difference"):  # the last one is warm
            got = ex.permutation_importance(n_repeats=3, kind=kind)
            want = _permutation_reference(F1_NP, Y1, WEIGHTS, _mse, perms, kind)
            np.testing.assert_allclose(got.importances, want, rtol=2e-4, atol=1e-6)
        boot = ex.permutation_importance(n_repeats=3, n_bootstrap=4)
        np.testing.assert_allclose(boot.importances_mean, want.mean(axis=2), rtol=2e-4,
                                   atol=1e-6)
        assert np.all(np.isfinite(boot.importances_std))
        sub = ex.permutation_importance(n_repeats=3, max_samples=30)
        cold = jaximp.permutation_importance(F1, X.tolist(), Y1.tolist(), n_repeats=3,
                                             max_samples=30, sample_weight=WEIGHTS,
                                             random_state=4)
        np.testing.assert_allclose(sub.importances, cold.importances, rtol=1e-5, atol=1e-7)
        for _ in range(2):
            _assert_h(ex.h_statistic(three_way=3), F1_NP, WEIGHTS, rtol=2e-3)
        h_boot = ex.h_statistic(n_bootstrap=3)
        np.testing.assert_allclose(h_boot.pairwise.values, _h_reference(F1_NP, WEIGHTS)[0],
                                   rtol=2e-3, atol=1e-6)
        pd = ex.partial_dependence("x1", grid_resolution=5)
        np.testing.assert_allclose(pd.average, _pd_reference(F1_NP, 1, pd.grid_values[0], WEIGHTS),
                                   rtol=1e-5, atol=1e-6)
        pds = ex.partial_dependence_all(grid_resolution=4)
        for j, name in enumerate(("x0", "x1", "x2")):
            np.testing.assert_allclose(
                pds[name].average, _pd_reference(F1_NP, j, pds[name].grid_values[0], WEIGHTS),
                rtol=1e-5, atol=1e-6)


def test_x64_classifier_log_loss_and_draw_plans():
    """64-bit log-loss importances of a classifier equal the float64 loop; sensitivity,
    conditional and SAGE importances (draw plans) equal their 32-bit calls."""
    y = (Y1 > np.median(Y1)).astype(int)
    model = jax.jit(lambda A: jax.nn.sigmoid(F1(A)))
    perms = _permutations(3, 3, N, 2)
    want = _permutation_reference(lambda A: 1 / (1 + np.exp(-F1_NP(A))), y, None, _log_loss,
                                  perms)
    plain = {name: getattr(jaximp, name)(F1, X, Y1, random_state=3)
             for name in ("sensitivity_importance", "conditional_importance", "sage_importance")}
    with jax.enable_x64(True):
        ex = jaximp.Explainer(model, X, y, random_state=2)
        got = ex.permutation_importance(n_repeats=3, loss="log_loss")
        np.testing.assert_allclose(got.importances, want, rtol=2e-4, atol=1e-6)
        several = ex.permutation_importance(n_repeats=3, loss=["log_loss", "accuracy", "auc"])
        np.testing.assert_allclose(several["log_loss"].importances, want, rtol=2e-4, atol=1e-6)
        ex1 = jaximp.Explainer(F1, X, Y1, random_state=3)
        for name, result in plain.items():
            np.testing.assert_allclose(getattr(ex1, name)().importances_mean,
                                       result.importances_mean, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("budget", [1 << 16, 1 << 20])
def test_several_outputs_and_small_budgets(budget):
    """A model of three outputs, bootstrap-count weights and budgets of several chunks and
    row blocks: every output's importances, PD and H equal float64; ``output=`` picks one."""
    perms = _permutations(3, 2, N, 5)
    ex = jaximp.Explainer(F3, X, Y3, sample_weight=WEIGHTS, memory_budget=budget,
                          random_state=5)
    for _ in range(2):  # cold, then warm
        got = ex.permutation_importance(n_repeats=2)
        want = _permutation_reference(F3_NP, Y3, WEIGHTS, _mse, perms)
        np.testing.assert_allclose(got.importances, want, rtol=2e-4, atol=1e-6)
    boot = ex.permutation_importance(n_repeats=2, n_bootstrap=3)
    np.testing.assert_allclose(boot.importances_mean, want.mean(axis=2), rtol=2e-4, atol=1e-6)
    _assert_h(ex.h_statistic(three_way=3), F3_NP, WEIGHTS, rtol=2e-3)
    picked = ex.h_statistic(output=1)
    np.testing.assert_allclose(picked.pairwise.values[:, 0], _h_reference(F3_NP, WEIGHTS)[0][:, 1],
                               rtol=2e-3, atol=1e-6)
    pds = ex.partial_dependence_all(grid_resolution=4, kind="both")
    for j, name in enumerate(("x0", "x1", "x2")):
        np.testing.assert_allclose(
            pds[name].average, _pd_reference(F3_NP, j, pds[name].grid_values[0], WEIGHTS),
            rtol=1e-5, atol=1e-6)
    one = ex.partial_dependence("x2", grid_resolution=4, output=2)
    np.testing.assert_allclose(one.average[:, 0], pds["x2"].average[:, 2], rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("budget", [None, 1 << 16])
def test_totals_written_to_pinned_host_memory_equal_the_default(monkeypatch, budget):
    """On an accelerator a chunk's summed totals go to pinned host memory from the program
    itself. Forced on the CPU, in one chunk and in several, every summing method's numbers are
    the default path's, its chunks' outputs are in pinned host memory, and kept predictions
    (ICE) stay where they are."""
    from jaximp.engine import _engine

    def calls():
        ex = jaximp.Explainer(F3, X, Y3, sample_weight=WEIGHTS, memory_budget=budget)
        return [ex.permutation_importance(n_repeats=2).importances,
                ex.h_statistic().pairwise.values,
                *(r.average for r in ex.partial_dependence_all(grid_resolution=4).values()),
                ex.partial_dependence("x1", grid_resolution=4, kind="both").individual,
                jaximp.permutation_importance(F1, X, Y1, n_repeats=2,
                                              memory_budget=budget).importances]

    default = calls()
    kinds = []
    chunk_function = _engine._chunk_function

    def recording(*args):
        chunk = chunk_function(*args)

        def call(*inputs):
            out = chunk(*inputs)
            kinds.append((args[2].combine, out.sharding.memory_kind))
            return out

        return call

    monkeypatch.setattr(_engine, "_HOST_OUTPUT_ON_CPU", True)
    monkeypatch.setattr(_engine, "_chunk_function", recording)
    for got, want in zip(calls(), default):
        np.testing.assert_array_equal(got, want)
    assert set(kinds) == {("sum", "pinned_host"), ("keep", "device")}


def test_which_calls_write_their_totals_to_pinned_host_memory(monkeypatch):
    """One GPU's summed totals, on a JAX where that was measured: the device of rows given on
    it, else the first one asked for or the default one; not kept predictions, meshes,
    models on another framework's arrays or with parameters committed to another device, a
    device without pinned host memory, another accelerator, an older JAX, a default device
    set by the user (for rows on the host), or the CPU (unless a test forces it)."""
    import types

    from jaximp.engine import _engine

    class Device:  # hashable, as a device is
        def __init__(self, platform="gpu", kinds=("device", "pinned_host")):
            self.platform, self.kinds = platform, kinds

        def addressable_memories(self):
            return [types.SimpleNamespace(kind=kind) for kind in self.kinds]

    summing, kept = types.SimpleNamespace(combine="sum"), types.SimpleNamespace(combine="keep")
    jax_model = types.SimpleNamespace(device_fn=None, params={})
    gpu, bare, cpu = Device(), Device(kinds=("device",)), Device("cpu")
    monkeypatch.setattr(_engine, "_HOST_OUTPUT_JAX", True)

    def chosen(first, reducer=summing, mesh=None, predictor=jax_model, devices=(None,),
               rows=np.zeros(3)):
        return _engine._host_output_device(rows, first, mesh, reducer, predictor, devices)

    assert chosen(gpu) is gpu
    assert chosen(bare) is None and chosen(cpu) is None and chosen(Device("tpu")) is None
    assert chosen(gpu, reducer=kept) is None and chosen(gpu, mesh="rows") is None
    assert chosen(gpu, predictor=types.SimpleNamespace(device_fn=abs)) is None
    monkeypatch.setattr(_engine, "_HOST_OUTPUT_ON_CPU", True)
    host = jax.devices("cpu")[0]
    on_host = jax.device_put(jnp.zeros(3), host)  # rows given on a device: that device
    assert chosen(cpu) is cpu and chosen(gpu, rows=on_host) == host
    with jax.default_device(host):  # the user's default: rows on the host go there
        assert chosen(gpu, devices=None) is None and chosen(gpu) is gpu
    assert chosen(gpu, devices=None) is gpu
    committed = types.SimpleNamespace(device_fn=None,
                                      params={"w": jax.device_put(jnp.ones(2), host)})
    assert chosen(gpu, predictor=committed) is None and chosen(host, predictor=committed) == host
    monkeypatch.setattr(_engine, "_HOST_OUTPUT_JAX", False)
    assert chosen(Device()) is None and chosen(cpu) is cpu


def test_host_model_through_the_explainer():
    """A scikit-learn regressor: permutation importance, H and PD equal float64 NumPy (to
    the float32 the engine reduces a host model's predictions in)."""
    from sklearn.ensemble import RandomForestRegressor

    model = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(X, Y1)
    perms = _permutations(3, 3, N, 6)
    ex = jaximp.Explainer(model, X, Y1, sample_weight=WEIGHTS, memory_budget=1 << 16,
                          random_state=6)
    for _ in range(2):
        got = ex.permutation_importance(n_repeats=3)
        want = _permutation_reference(model.predict, Y1, WEIGHTS, _mse, perms)
        np.testing.assert_allclose(got.importances, want, rtol=2e-6, atol=1e-9)
        _assert_h(ex.h_statistic(), model.predict, WEIGHTS, rtol=1e-6)
    pd = ex.partial_dependence("x0", grid_resolution=5)
    np.testing.assert_allclose(pd.average, _pd_reference(model.predict, 0, pd.grid_values[0],
                                                         WEIGHTS), rtol=1e-6)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_low_precision_predictions_through_pd_and_h(dtype):
    """float16/bfloat16 predictions: PD and H equal float64 sums of those predictions."""
    def model(A):
        return F1(A).astype(dtype)

    def model_np(A):
        return np.asarray(model(jnp.asarray(A, jnp.float32)), np.float64)

    ex = jaximp.Explainer(model, X, Y1, sample_weight=WEIGHTS)
    for _ in range(2):
        pd = ex.partial_dependence("x1", grid_resolution=5)
        np.testing.assert_allclose(pd.average, _pd_reference(model_np, 1, pd.grid_values[0],
                                                             WEIGHTS), rtol=1e-6, atol=1e-7)
        _assert_h(ex.h_statistic(three_way=3), model_np, WEIGHTS, rtol=1e-4)


FOUR_DEVICES = """
import sys
sys.path.insert(0, TESTS)
import jax, numpy as np, jaximp
import test_engine_modes as m
assert jax.device_count() == 4
ex = jaximp.Explainer(m.F1, m.X, m.Y1, sample_weight=m.WEIGHTS, random_state=4)
out = {}
for r in range(2):
    out[f"perm{r}"] = ex.permutation_importance(n_repeats=3).importances
    h = ex.h_statistic(three_way=3)
    out[f"pairwise{r}"], out[f"overall{r}"] = h.pairwise.values, h.overall.importances_mean
    out[f"three{r}"] = h.three_way.values[0]
    pds = ex.partial_dependence_all(grid_resolution=4)
    for name in pds:
        out[f"pd_{name}{r}"], out[f"grid_{name}"] = pds[name].average, pds[name].grid_values[0]
out["sensitivity"] = ex.sensitivity_importance(n_repeats=3).importances_mean
from jaximp.methods import _shapley
_shapley._folds_on_device = lambda predictor: True  # an accelerator's fold, on the CPU
for r in range(2):
    out[f"shapley{r}"] = ex.shapley_values().values
np.savez(OUT, **out)
"""


def test_four_forced_host_devices_match_float64(tmp_path):
    """On four host devices the Explainer's permutation importance (source values), H
    (device data rows) and PD, cold and warm, equal float64; sensitivity and exact Shapley
    values (folded on the devices) equal one device."""
    got = run_on_host_devices(FOUR_DEVICES.replace("TESTS", repr(os.path.dirname(__file__))),
                              tmp_path / "four.npz")
    want = _permutation_reference(F1_NP, Y1, WEIGHTS, _mse, _permutations(3, 3, N, 4))
    pairwise, overall, three = _h_reference(F1_NP, WEIGHTS)
    for r in range(2):
        np.testing.assert_allclose(got[f"perm{r}"], want, rtol=2e-4, atol=1e-6)
        np.testing.assert_allclose(got[f"pairwise{r}"], pairwise, rtol=2e-3, atol=1e-6)
        np.testing.assert_allclose(got[f"overall{r}"], overall, rtol=2e-3, atol=1e-6)
        np.testing.assert_allclose(got[f"three{r}"], three, rtol=2e-3, atol=1e-6)
        for j, name in enumerate(("x0", "x1", "x2")):
            np.testing.assert_allclose(
                got[f"pd_{name}{r}"], _pd_reference(F1_NP, j, got[f"grid_{name}"], WEIGHTS),
                rtol=1e-5, atol=1e-6)
    one = jaximp.sensitivity_importance(F1, X, Y1, n_repeats=3, sample_weight=WEIGHTS,
                                        random_state=4)
    np.testing.assert_allclose(got["sensitivity"], one.importances_mean, rtol=1e-4, atol=1e-6)
    shapley = jaximp.shapley_values(F1, X, sample_weight=WEIGHTS).values  # the host's fold
    for r in range(2):
        # on a GPU, this process's model rounds its float32 predictions otherwise
        assert_same_program(got[f"shapley{r}"], shapley, cpu_rtol=1e-10, cpu_atol=1e-12)


def test_x64_float64_model_keeps_float64_outputs():
    """Under ``jax_enable_x64`` a model with float64 parameters predicts in float64 and the
    methods keep its digits: ablation and exact Shapley values of a model offset by 1,000
    equal a float64 NumPy reference to 1e-12 (float32 outputs were off by 5e-5)."""
    rng = np.random.default_rng(0)
    W, v = rng.normal(size=(3, 5)), rng.normal(size=5)
    rows, base = rng.normal(size=(6, 3)), rng.normal(size=3)

    def f_np(Z):
        return np.tanh(Z @ W) @ v + 1000.0

    with jax.enable_x64(True):
        f = lambda Z: jnp.tanh(Z @ jnp.asarray(W)) @ jnp.asarray(v) + 1000.0  # noqa: E731
        predictor = jaximp.as_predictor(f, n_features=3)
        assert predictor(jnp.asarray(rows)).dtype == jnp.float64
        ablation = jaximp.ablation_attributions(f, rows, baselines=base).values[:, :, 0]
        shapley = jaximp.shapley_values(f, rows, base[None]).values[:, :, 0]
    expected = np.stack([f_np(rows) - f_np(np.where(np.arange(3) == j, base, rows))
                         for j in range(3)], axis=1)
    np.testing.assert_allclose(ablation, expected, rtol=0, atol=1e-11)
    np.testing.assert_allclose(shapley.sum(axis=1), f_np(rows) - f_np(base[None]), rtol=0,
                               atol=1e-11)
    with jax.enable_x64(False):  # float32 outside x64, as before
        assert jaximp.as_predictor(f, n_features=3)(jnp.asarray(rows)).dtype == jnp.float32


def test_x64_plain_function_is_probed_in_the_dtype_it_is_computed_in():
    """Under x64 a plain function is computed in float64, and its output count is probed with
    float64 rows too: a float64 convolution (dtype-strict) works; one with float32 weights
    is refused at the probe with the dtype named and the cast to make."""
    X = np.random.default_rng(1).normal(size=(3, 1, 4, 4))
    with jax.enable_x64(True):
        kernel = jnp.asarray(np.random.default_rng(0).normal(size=(2, 1, 3, 3)))

        def conv(kernel):
            def model(Z):
                out = jax.lax.conv_general_dilated(Z, kernel, (1, 1), "SAME",
                                                   dimension_numbers=("NCHW", "OIHW", "NCHW"))
                return out.reshape(Z.shape[0], -1).sum(1)
            return model

        values = jaximp.saliency(conv(kernel), X).values
        assert values.dtype == np.float64 and values.shape == (3, 16, 1)
        with pytest.raises(ValueError, match=r"float64 batch of 2 rows of 16 columns failed.*"
                                             r"cast them inside the model"):
            jaximp.saliency(conv(kernel.astype(jnp.float32)), X)
