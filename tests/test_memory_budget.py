"""The memory budget binds the whole call: with ``memory_budget=2 MiB`` on 50,000 rows x 10
features (blocks of a few thousand rows, many chunks) every model-based method completes and
equals its result at the default budget (within float32 rounding), and results that cannot fit
in memory are refused before any evaluation."""

import dataclasses
from collections.abc import Mapping

import jax
import numpy as np
import pytest
from conftest import random_mlp

import jaximp
import jaximp.engine._engine

N, C = 50_000, 10
SMALL = 2 << 20  # 2 MiB
GRID = 8
RTOL, ATOL = 1e-5, 1e-6
# Within a block, rows are reduced by float32 dot products whose summation order depends on the
# block's size (a budget-dependent ~1e-6 relative); blocks are folded in float64 on the host.
# Kept float32 predictions (ICE, AUC) differ by an ulp between batch shapes, and losses are
# compared at the scale of the loss (see _loss_scale).

X = np.random.default_rng(2024).normal(size=(N, C))
F, F_NP, _ = random_mlp(11, sizes=(C, 16, 1))  # fixed-weight [10, 16, 1] tanh MLP
Y = F_NP(X) + 0.3 * np.random.default_rng(7).normal(size=N)
_LOGITS, _LOGITS_NP, _ = random_mlp(12, sizes=(C, 16, 2))


def F_CLS(X):
    """A 2-output softmax classifier: the class probabilities."""
    return jax.nn.softmax(_LOGITS(X), axis=-1)


def _softmax_np(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


Y_CLS = (np.random.default_rng(8).uniform(size=N) < _softmax_np(_LOGITS_NP(X))[:, 1]).astype(int)
PAIRS = [("x0", "x1"), ("x2", "x5")]

CASES = {
    "pd_all": lambda **kw: jaximp.partial_dependence_all(F, X, kind="average",
                                                        grid_resolution=GRID, **kw),
    "ice": lambda **kw: jaximp.partial_dependence(F, X, "x3", kind="individual",
                                                  grid_resolution=GRID, **kw),
    "pd_importance": lambda **kw: jaximp.pd_importance(F, X, grid_resolution=GRID, **kw),
    "pd_importance_boot": lambda **kw: jaximp.pd_importance(F, X, grid_resolution=GRID,
                                                            n_bootstrap=5, **kw),
    "pd_interaction": lambda **kw: jaximp.pd_interaction(F, X, pairs=PAIRS,
                                                         grid_resolution=GRID, **kw),
    "pd_interaction_boot": lambda **kw: jaximp.pd_interaction(F, X, pairs=PAIRS,
                                                              grid_resolution=GRID,
                                                              n_bootstrap=3, **kw),
    "h_statistic": lambda **kw: jaximp.h_statistic(F, X, n_max=300, **kw),
    "h_statistic_boot": lambda **kw: jaximp.h_statistic(F, X, n_max=300, n_bootstrap=5, **kw),
    "permutation_mse": lambda **kw: jaximp.permutation_importance(F, X, Y, loss="mse",
                                                                  n_repeats=3, **kw),
    "permutation_log_loss": lambda **kw: jaximp.permutation_importance(
        F_CLS, X, Y_CLS, loss="log_loss", n_repeats=3, **kw),
    # AUC keeps whole items (an n-row sort each): 4 features keep the file fast while the
    # 13 items still run in several groups at 2 MiB, the last one partial
    "permutation_auc": lambda **kw: jaximp.permutation_importance(
        F_CLS, X, Y_CLS, loss="auc", n_repeats=3, features=["x0", "x1", "x2", "x3"], **kw),
    "loco_mean": lambda **kw: jaximp.loco_importance(F, X, Y, strategy="mean", **kw),
    "sensitivity_random": lambda **kw: jaximp.sensitivity_importance(F, X, Y, n_repeats=2, **kw),
    "sensitivity_max": lambda **kw: jaximp.sensitivity_importance(F, X, Y, variant="max", **kw),
}


def _leaves(obj, path="result"):
    """Every numeric array or number inside a result (dataclass fields, info dicts, lists)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for field in dataclasses.fields(obj):
            yield from _leaves(getattr(obj, field.name), f"{path}.{field.name}")
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _leaves(value, f"{path}[{key!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from _leaves(value, f"{path}[{i}]")
    elif isinstance(obj, (np.ndarray, jax.Array, float, np.floating, np.integer)) and not \
            isinstance(obj, bool):
        array = np.asarray(obj)
        if array.dtype.kind in "biuf":
            yield path, array


def _loss_scale(result):
    """Importances that are differences of two losses carry the float32 rounding of the
    losses themselves (partial sums over blocks of rows whose size depends on the budget):
    their absolute tolerance is RTOL times the loss, not times the (smaller) difference."""
    info = getattr(result, "info", None) or {}
    return float(np.max(np.abs(info["baseline"]))) if "baseline" in info else 0.0


def _assert_same(small, default, rtol=RTOL, atol=ATOL):
    atol = max(atol, rtol * _loss_scale(default))
    got, want = dict(_leaves(small)), dict(_leaves(default))
    assert got.keys() == want.keys()
    assert want, "the result holds no arrays to compare"
    for path, expected in want.items():
        assert got[path].shape == expected.shape, path
        np.testing.assert_allclose(got[path], expected, rtol=rtol, atol=atol, err_msg=path)


class _Budgets:
    """Records the budget every engine call (and nested call) resolved to."""

    def __init__(self):
        self.seen = []

    def __call__(self, memory_budget):
        budget = _VALIDATE(memory_budget)
        self.seen.append(budget)
        return budget


_VALIDATE = jaximp.engine._engine.resolve_budget


def _run(name, memory_budget):
    budgets = _Budgets()
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("JAXIMP_MEMORY_BUDGET", raising=False)
        mp.setattr(jaximp.engine._engine, "resolve_budget", budgets)
        result = CASES[name](memory_budget=memory_budget)
    return result, budgets.seen


@pytest.fixture(scope="module")
def at_default():
    """Each method's result at the default budget, computed once."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = _run(name, None)
        return cache[name]

    return get


@pytest.mark.parametrize("name", list(CASES))
def test_small_budget_equals_default(name, at_default):
    default, default_budgets = at_default(name)
    small, small_budgets = _run(name, SMALL)
    # the budget reached the engine (so the comparison is not vacuous) and bound every call
    assert small_budgets and max(small_budgets) <= SMALL, small_budgets
    assert default_budgets and min(default_budgets) > SMALL, default_budgets
    _assert_same(small, default)


def _pd_reference(feature, grid):
    """float64 PD of one feature at ``grid`` by brute force."""
    out = []
    for z in grid:
        Xz = X.copy()
        Xz[:, feature] = z
        out.append(F_NP(Xz).mean())
    return np.asarray(out)


def test_pd_against_float64_reference(at_default):
    results, _ = at_default("pd_all")
    assert list(results) == [f"x{j}" for j in range(C)]
    for j in (0, 7):
        result = results[f"x{j}"]
        assert result.feature_names == (f"x{j}",)
        grid = np.asarray(result.grid_values[0], dtype=np.float64)
        assert grid.shape == (GRID,)
        # uniform grid between the 5% and 95% quantiles (scikit-learn's mquantiles)
        lo, hi = jaximp.mquantiles(X[:, j], prob=[0.05, 0.95])
        np.testing.assert_allclose(grid, np.linspace(lo, hi, GRID), rtol=1e-6)
        np.testing.assert_allclose(result.average[:, 0], _pd_reference(j, grid), rtol=1e-5,
                                   atol=1e-5)
    ice, _ = at_default("ice")
    grid = np.asarray(ice.grid_values[0], dtype=np.float64)
    assert ice.individual.shape == (N, GRID, 1)
    for k in (0, GRID - 1):
        Xz = X.copy()
        Xz[:, 3] = grid[k]
        np.testing.assert_allclose(ice.individual[:, k, 0], F_NP(Xz), rtol=1e-5, atol=2e-5)


def test_permutation_baseline_against_float64_reference(at_default):
    result, _ = at_default("permutation_mse")
    np.testing.assert_allclose(result.info["baseline"], [np.mean((F_NP(X) - Y) ** 2)],
                               rtol=1e-5)
    result, _ = at_default("permutation_log_loss")
    proba = _softmax_np(_LOGITS_NP(X))[np.arange(N), Y_CLS]
    np.testing.assert_allclose(result.info["baseline"], [-np.mean(np.log(proba))], rtol=1e-5)


def test_default_budget_is_used_when_none(monkeypatch):
    calls = []

    def fake_default():
        calls.append(1)
        return 3 << 20

    seen = _Budgets()
    monkeypatch.setattr(jaximp.engine._engine, "default_memory_budget", fake_default)
    monkeypatch.setattr(jaximp.engine._engine, "resolve_budget", seen)
    result = jaximp.partial_dependence(F, X[:5000], "x0", grid_resolution=4)
    assert calls and seen.seen and set(seen.seen) == {3 << 20}
    assert result.average.shape == (4, 1)
    # an explicit budget does not consult the default
    calls.clear()
    jaximp.partial_dependence(F, X[:5000], "x0", grid_resolution=4, memory_budget=SMALL)
    assert not calls


def test_default_memory_budget_reads_environment(monkeypatch):
    monkeypatch.setenv("JAXIMP_MEMORY_BUDGET", str(5 << 20))
    assert jaximp.default_memory_budget() == 5 << 20
    monkeypatch.delenv("JAXIMP_MEMORY_BUDGET")
    assert jaximp.default_memory_budget() >= 1 << 20


def test_ice_too_large_is_refused_before_evaluation(monkeypatch):
    monkeypatch.setattr(jaximp.engine._engine, "_available_host_bytes", lambda: float(1 << 20))

    def no_evaluation(*args, **kwargs):
        raise AssertionError("the engine evaluated the model before refusing the result")

    monkeypatch.setattr(jaximp.engine._engine, "_jax_run", no_evaluation)
    monkeypatch.setattr(jaximp.engine._engine, "_run_host", no_evaluation)
    monkeypatch.setattr(jaximp.engine._engine, "_bytes_per_row", no_evaluation)
    with pytest.raises(MemoryError) as info:
        jaximp.partial_dependence(F, X, "x3", kind="individual", grid_resolution=GRID,
                                  memory_budget=SMALL)
    message = str(info.value)
    # names the size of the result: 8 grid points x 50000 rows x 1 output of float32
    assert f"{GRID} items x {N} rows x 1 outputs" in message, message
    assert "GiB" in message and "kind='average'" in message, message
