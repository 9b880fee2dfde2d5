"""The evaluation engine: chunking, sharding, jit, accuracy, errors."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaximp
import jaximp._engine
from jaximp._engine import _plan, evaluate


def permutation_batch(n, n_items, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n) for _ in range(n_items)])


@pytest.mark.parametrize("block_bytes", [16 << 20, 3000])
def test_chunked_equals_unchunked(mlp3, data3, block_bytes, monkeypatch):
    monkeypatch.setattr(jaximp._engine, "_CPU_BLOCK_BYTES", block_bytes)
    f_jax, f_np, _ = mlp3
    pred = jaximp.as_predictor(f_jax, n_features=3)
    masks = np.eye(3, dtype=bool)
    items = np.repeat(np.arange(3), 4)
    src = permutation_batch(len(data3), len(items))
    whole = evaluate(pred, data3, masks, items, source_rows=src, reduce="none")
    tiny = evaluate(pred, data3, masks, items, source_rows=src, reduce="none",
                    memory_budget=1 << 16)
    np.testing.assert_allclose(whole, tiny, atol=1e-6)
    # float64 reference for every item
    for b, (m, s) in enumerate(zip(items, src)):
        Xb = data3.copy()
        Xb[:, m] = data3[s, m]
        np.testing.assert_allclose(whole[b, :, 0], f_np(Xb), atol=2e-5)
    means = evaluate(pred, data3, masks, items, source_rows=src, memory_budget=1 << 16)
    np.testing.assert_allclose(means, whole.mean(1), atol=1e-6)


@pytest.mark.parametrize("n_items, n_rows, block", [(1000, 10_000, None), (1000, 10_000, 2e5),
                                                    (7, 100, 5e3), (3, 10**6, 1e6)])
def test_plan_respects_budget_and_blocks(n_items, n_rows, block):
    plan = _plan(n_items=n_items, n_rows=n_rows, row_bytes=100.0, budget=10**7, n_devices=4,
                 block_bytes=block)
    assert plan.items_per_chunk * plan.rows_per_chunk * 100 <= 10**7 + 400 * plan.items_per_chunk
    assert plan.rows_per_chunk % 4 == 0 and plan.rows_per_block % 4 == 0
    assert plan.items_per_chunk % plan.items_per_block == 0
    assert plan.rows_per_chunk % plan.rows_per_block == 0
    if block is not None:
        assert plan.items_per_block * plan.rows_per_block * 100 <= max(block, 100 * n_rows)
    whole = _plan(n_items=10, n_rows=100, row_bytes=10.0, budget=10**9, n_devices=1)
    assert (whole.items_per_chunk, whole.rows_per_chunk) == (10, 100)


def test_callable_reducer_is_a_loss_per_item(mlp3, data3):
    f_jax, f_np, _ = mlp3
    pred = jaximp.as_predictor(f_jax, n_features=3)
    y = f_np(data3) + 0.1
    src = permutation_batch(len(data3), 3, seed=3)

    def mse(predictions):
        return jnp.mean((predictions[:, 0] - y) ** 2)

    losses = evaluate(pred, data3, np.eye(3, dtype=bool), np.arange(3), source_rows=src,
                      reduce=mse, memory_budget=1 << 16)
    for b in range(3):
        Xb = data3.copy()
        Xb[:, b] = data3[src[b], b]
        assert abs(losses[b] - np.mean((f_np(Xb) - y) ** 2)) < 1e-5


def test_eager_equals_jit(mlp3, data3):
    f_jax, _, _ = mlp3
    pred = jaximp.as_predictor(f_jax, n_features=3)
    vals = np.zeros((5, 3))
    vals[:, 0] = np.linspace(-1, 1, 5)
    args = (pred, data3, np.array([[True, False, False]]), np.zeros(5, int))
    jitted = evaluate(*args, values=vals, item_value=np.arange(5))
    with jax.disable_jit():
        eager = evaluate(*args, values=vals, item_value=np.arange(5))
    np.testing.assert_allclose(jitted, eager, atol=1e-6)


def test_weighted_mean_accuracy_on_many_float32_rows():
    """Means over 400k float32 rows stay within 1e-6 relative of float64."""
    rng = np.random.default_rng(0)
    X = rng.normal(loc=100.0, size=(400_000, 2))
    pred = jaximp.as_predictor(lambda X: X[:, 0] * 1000.0 + X[:, 1], n_features=2)
    out = evaluate(pred, X, np.zeros((1, 2), bool), np.zeros(1, int), values=np.zeros((1, 2)),
                   item_value=np.zeros(1, int))
    exact = np.mean(X.astype(np.float32).astype(np.float64) @ np.array([1000.0, 1.0]))
    assert abs(out[0, 0] - exact) / abs(exact) < 1e-6


def test_nonfinite_predictions_are_an_error():
    X = np.linspace(-1, 1, 20).reshape(10, 2)
    with pytest.raises(FloatingPointError, match="returned NaN or infinite predictions"):
        jaximp.partial_dependence(lambda X: jnp.log(X[:, 0]), X, "x0")


def test_reduce_and_source_validation(mlp3, data3):
    pred = jaximp.as_predictor(mlp3[0], n_features=3)
    with pytest.raises(ValueError, match="reduce must be 'mean', 'none' or a callable; got 'sum'"):
        evaluate(pred, data3, np.ones((1, 3), bool), [0], values=np.zeros((1, 3)),
                 item_value=[0], reduce="sum")
    with pytest.raises(ValueError, match="give exactly one of values"):
        evaluate(pred, data3, np.ones((1, 3), bool), [0])
    with pytest.raises(ValueError, match="memory_budget must be at least 65536 bytes; got 10"):
        evaluate(pred, data3, np.ones((1, 3), bool), [0], values=np.zeros((1, 3)),
                 item_value=[0], memory_budget=10)


def test_progress_line(mlp3, data3, capsys):
    pred = jaximp.as_predictor(mlp3[0], n_features=3)
    evaluate(pred, data3, np.eye(3, dtype=bool), np.arange(3),
             source_rows=permutation_batch(len(data3), 3), memory_budget=1 << 16,
             progress=True, label="test")
    assert "test: chunk" in capsys.readouterr().err


MULTI_DEVICE_SCRIPT = textwrap.dedent(
    """
    import numpy as np, jax, jax.numpy as jnp, jaximp
    assert len(jax.devices()) == 4, jax.devices()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(203, 3))  # not a multiple of 4: padding is exercised
    W = rng.normal(size=(3, 8)).astype(np.float32)
    f = lambda X: jnp.tanh(X @ W).sum(axis=1)
    res = jaximp.partial_dependence_all(f, X, grid_resolution=6, kind="both",
                                        memory_budget=1 << 16)
    mean_only = jaximp.partial_dependence_all(f, X, grid_resolution=6, memory_budget=1 << 16,
                                              sample_weight=np.arange(203.0))
    out = {k: v.individual for k, v in res.items()}
    out.update({k + "_weighted": v.average for k, v in mean_only.items()})
    y = np.asarray(f(X))
    out["permutation"] = jaximp.permutation_importance(f, X, y, n_repeats=3,
                                                       random_state=7).importances
    out.update({k + "_avg": v.average for k, v in res.items()})
    np.savez(OUT, **out)
    """
)


def test_one_device_equals_four_forced_host_devices(tmp_path):
    out = tmp_path / "multi.npz"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu")
    script = MULTI_DEVICE_SCRIPT.replace("OUT", repr(str(out)))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=300)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(203, 3))
    W = rng.normal(size=(3, 8)).astype(np.float32)
    res = jaximp.partial_dependence_all(lambda X: jnp.tanh(X @ W).sum(axis=1), X,
                                        grid_resolution=6, kind="both")
    multi = np.load(out)
    weighted = jaximp.partial_dependence_all(lambda X: jnp.tanh(X @ W).sum(axis=1), X,
                                             grid_resolution=6, sample_weight=np.arange(203.0))
    for name, r in weighted.items():
        np.testing.assert_allclose(multi[name + "_weighted"], r.average, atol=1e-5)
    f = lambda X: jnp.tanh(X @ W).sum(axis=1)  # noqa: E731
    perm = jaximp.permutation_importance(f, X, np.asarray(f(X)), n_repeats=3, random_state=7)
    np.testing.assert_allclose(multi["permutation"], perm.importances, rtol=1e-4, atol=1e-6)
    for name, r in res.items():
        np.testing.assert_allclose(multi[name], r.individual, atol=1e-5)
        np.testing.assert_allclose(multi[name + "_avg"], r.average, atol=1e-5)
