"""The evaluation engine: chunking, sharding, jit, accuracy, errors."""

import itertools
import textwrap
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from conftest import assert_same_program, engine_permutations, on_cpu, run_on_host_devices
from jaximp.kernels import _streams

import jaximp
import jaximp.engine._engine
from jaximp.engine._device_arrays import bucket as _bucket
from jaximp.engine._engine import _sizes, evaluate, predict_rows
from jaximp.engine._plans import (
    at_coded_values,
    at_drawn_rows,
    at_permuted_rows,
    at_values,
)
from jaximp.engine._reducers import (
    FoldedMean,
    GroupedMean,
    Itemwise,
    Keep,
    LossSums,
    Mean,
    Spread,
)


@pytest.fixture
def permuted(mlp3, data3):
    f_jax, f_np, _ = mlp3
    pred = jaximp.as_predictor(f_jax, n_features=3)
    plan = at_permuted_rows(np.eye(3, dtype=bool), np.repeat(np.arange(3), 4), jax.random.key(3),
                            [(j, r) for j in range(3) for r in range(4)])
    return pred, f_np, plan, engine_permutations(plan, len(data3))


@pytest.mark.parametrize("block_rows", [12288, 7])
def test_chunked_equals_unchunked_and_float64_reference(permuted, data3, block_rows,
                                                       monkeypatch):
    monkeypatch.setattr(jaximp.engine._engine, "_CPU_KEEP_BLOCK_ROWS", block_rows)
    pred, f_np, plan, src = permuted
    whole = evaluate(pred, data3, plan, Keep())
    tiny = evaluate(pred, data3, plan, Keep(), memory_budget=1 << 16)
    np.testing.assert_allclose(whole, tiny, atol=1e-6)
    for b, (m, s) in enumerate(zip(plan.item_mask, src)):
        Xb = data3.copy()
        Xb[:, m] = data3[s, m]
        np.testing.assert_allclose(whole[b, :, 0], f_np(Xb), atol=2e-5)
    means = evaluate(pred, data3, plan, Mean(np.ones((1, len(data3)))), memory_budget=1 << 16)
    np.testing.assert_allclose(means[:, 0], whole.mean(1), atol=1e-6)


def test_permutations_are_bijections_and_independent_of_other_items(permuted, data3):
    _, _, plan, src = permuted
    n = len(data3)
    assert all(sorted(p.tolist()) == list(range(n)) for p in src)
    assert len({p.tobytes() for p in src}) == len(src)  # every (feature, repeat) differs
    alone = engine_permutations(plan.items(5, 6), n)
    np.testing.assert_array_equal(alone[0], src[5])


def test_host_radices_equal_the_device_search():
    """The engine passes radices found on the host; the permutations must not change."""
    device = jax.jit(_streams._radices)
    sizes = [*range(1, 600), 1000, 10_007, 65_536, 99_991, 100_000, 1_234_567, 999_983 * 2,
             46_340 ** 2, 46_340 ** 2 + 1, 2**31 - 1]
    for n in sizes:
        assert tuple(int(v) for v in device(jnp.int32(n))) == _streams.feistel_radices(n), n
    rows, n = jnp.arange(997), jnp.int32(997)  # prime: a near-square domain, cycle walking
    host = _streams.feistel_permutation(jnp.uint32(5), rows, n, _streams.feistel_radices(997))
    np.testing.assert_array_equal(host, _streams.feistel_permutation(jnp.uint32(5), rows, n))
    assert sorted(np.asarray(host).tolist()) == list(range(997))


def test_bootstrap_weightings_in_one_pass(permuted, data3):
    pred, _, plan, _ = permuted
    rng = np.random.default_rng(0)
    weights = rng.integers(0, 3, size=(4, len(data3))).astype(float)
    means = evaluate(pred, data3, plan, Mean(weights), memory_budget=1 << 16)
    kept = evaluate(pred, data3, plan, Keep())[..., 0].astype(np.float64)
    np.testing.assert_allclose(means[..., 0], kept @ weights.T / weights.sum(1), atol=1e-5)


@on_cpu
def test_an_accelerators_split_sums_equal_float64_sums(monkeypatch):
    """On an accelerator a mean sums each float32 prediction's high part (exact in float32
    for integer weights) and its small low part; forced here on the CPU (which sums in
    float64), the weighted means of predictions near 1e3 with cancelling digits equal a float64
    sum of the same float32 predictions to ~1e-12 of their size, plain, bootstrap-weighted
    and folded, where a float32 sum would err by ~1e-5."""
    import jaximp.engine._reducers as reducers

    rng = np.random.default_rng(12)
    X = rng.normal(size=(20_000, 2))
    # a model of its own: the chunks compiled for the CPU's sums are not reused
    pred = jaximp.as_predictor(lambda A: 1000.0 + jnp.sin(7.0 * A[:, 0]) * A[:, 1],
                               n_features=2)
    plan = at_values([[True, False]], np.zeros(6, int), np.c_[np.linspace(-1, 1, 6),
                                                              np.zeros(6)], np.arange(6))
    kept = evaluate(pred, X, plan, Keep())[..., 0].astype(np.float64)  # (6, n)
    weights = np.vstack([np.ones(len(X)), rng.integers(0, 4, size=(2, len(X)))])
    monkeypatch.setattr(reducers.jax, "default_backend", lambda: "gpu")
    traced = []
    split_sums = reducers._split_sums
    monkeypatch.setattr(reducers, "_split_sums",
                        lambda *args: traced.append(1) or split_sums(*args))
    means = evaluate(pred, X, plan, Mean(weights))[..., 0]  # (6, 3)
    np.testing.assert_allclose(means, kept @ weights.T / weights.sum(axis=1), rtol=1e-12)
    # pairs of consecutive items folded into their difference
    folded = evaluate(pred, X, plan, FoldedMean(weights, np.array([[1.0], [-1.0]])))
    differences = (kept[0::2] - kept[1::2]) @ weights.T / weights.sum(axis=1)  # (3, 3)
    np.testing.assert_allclose(folded[:, :, 0, 0], differences, rtol=1e-9, atol=1e-10)
    assert len(traced) == 2  # both reducers took the accelerator's sums


@pytest.mark.parametrize("host", [False, True])
def test_folded_mean_equals_a_float64_fold_of_the_means(data3, host):
    """Groups of items mapped by a fixed matrix (on the device for a JAX model, in NumPy for
    a host one), over several chunks of a small budget, against the float64 map of the
    float64 means of the kept predictions."""
    rng = np.random.default_rng(8)
    f = lambda A: jnp.stack([jnp.tanh(A[:, 0]) * A[:, 1], A[:, 2] ** 2], axis=1)  # noqa: E731
    model = types.SimpleNamespace(predict=lambda A: np.asarray(f(jnp.asarray(A)))) if host else f
    pred = jaximp.as_predictor(model, n_features=3)
    values = rng.normal(size=(24, 3))
    plan = at_values(rng.random((6, 3)) < 0.5, np.tile(np.arange(6), 24), values,
                     np.repeat(np.arange(24), 6))
    fold = rng.normal(size=(6, 4)) / 3.0
    kept = evaluate(pred, data3, plan, Keep()).astype(np.float64)  # (144, n, 2)
    for r in (1, 3):  # weightings: a weighted mean, bootstrap counts
        weights = (rng.uniform(0.5, 2.0, size=(1, len(data3))) if r == 1 else
                   rng.integers(0, 3, size=(r, len(data3))).astype(float))
        folded = evaluate(pred, data3, plan, FoldedMean(weights, fold), memory_budget=1 << 16)
        assert folded.shape == (24, r, 4, 2)
        means = evaluate(pred, data3, plan, Mean(weights))  # (144, r, 2)
        expected = np.einsum("gtro,tm->grmo", means.reshape(24, 6, r, 2), fold)
        # a GPU folds a JAX model's groups on the device, in float32
        assert_same_program(folded, expected, cpu_rtol=1e-13, cpu_atol=1e-14)
        means = np.einsum("bno,rn->bro", kept, weights) / weights.sum(axis=1)[:, None]
        expected = np.einsum("gtro,tm->grmo", means.reshape(24, 6, r, 2), fold)
        np.testing.assert_allclose(folded, expected, rtol=1e-6, atol=1e-7)


@on_cpu
def test_mean_over_chunks_of_several_item_and_row_blocks(monkeypatch):
    """A mean reduces all the blocks of a chunk at once on CPU (several items and row blocks
    here): weighted means equal a float64 sum of the float32 predictions."""
    for blocks in ("_CPU_BLOCK_ROWS", "_CPU_FUSED_BLOCK_ROWS"):  # the model is fused whole
        monkeypatch.setattr(jaximp.engine._engine, blocks, 512)
    monkeypatch.setattr(jaximp.engine._engine, "_REDUCE_ONCE_MIN_ROWS", 256)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 2))
    pred = jaximp.as_predictor(lambda A: jnp.sin(A[:, 0]) * 3.0 + A[:, 1] ** 2, n_features=2)
    grid = np.c_[np.linspace(-2, 2, 7), np.zeros(7)]
    plan = at_values([[True, False]], np.zeros(7, int), grid, np.arange(7))
    weights = rng.integers(0, 4, size=(2, len(X))).astype(float)
    built = []
    chunk_function = jaximp.engine._engine._chunk_function
    monkeypatch.setattr(jaximp.engine._engine, "_chunk_function",
                        lambda *args: built.append(args) or chunk_function(*args))
    means = evaluate(pred, X, plan, Mean(weights))
    sizes, reduce_once = built[0][3], built[0][8]
    assert reduce_once and sizes.row_blocks > 1 and sizes.item_blocks > 1  # what is tested
    X32 = X.astype(np.float32).astype(np.float64)
    for k, value in enumerate(grid[:, 0].astype(np.float32)):
        f = np.sin(np.float32(value)) * 3.0 + X32[:, 1] ** 2
        np.testing.assert_allclose(means[k, :, 0], weights @ f / weights.sum(1), rtol=1e-6)


@pytest.mark.parametrize("name", ["mse", "rmse", "mae", "r2"])
def test_loss_sums_equal_the_loss_of_kept_predictions(permuted, data3, name):
    pred, f_np, plan, src = permuted
    y = f_np(data3) + 0.1
    w = np.random.default_rng(1).uniform(size=len(y))
    total = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    reducer = LossSums(name, y[:, None], w, (0,), r2_total=np.array([total]))
    losses = evaluate(pred, data3, plan, reducer, memory_budget=1 << 16)[:, 0]
    for b, (m, s) in enumerate(zip(plan.item_mask, src)):
        Xb = data3.copy()
        Xb[:, m] = data3[s, m]
        err = f_np(Xb) - y
        mse = np.average(err**2, weights=w)
        expected = {"mse": mse, "rmse": np.sqrt(mse), "mae": np.average(np.abs(err), weights=w),
                    "r2": 1 - np.sum(w * err**2) / total}[name]
        assert abs(losses[b] - expected) < 1e-5 * max(1, abs(expected))


def test_itemwise_reducer_sees_whole_items(permuted, data3):
    pred, f_np, plan, src = permuted
    out = evaluate(pred, data3, plan, Itemwise(lambda p: np.median(p[..., 0], axis=1)),
                   memory_budget=1 << 16)
    for b, (m, s) in enumerate(zip(plan.item_mask, src)):
        Xb = data3.copy()
        Xb[:, m] = data3[s, m]
        assert abs(out[b] - np.median(f_np(Xb))) < 2e-5


def test_drawn_rows_and_spread_over_pairs(mlp3, data3):
    f_jax, f_np, _ = mlp3
    pred = jaximp.as_predictor(f_jax, n_features=3)
    n = len(data3)
    plan = at_drawn_rows(np.eye(3, dtype=bool)[[0, 0]], [0, 1], jax.random.key(0),
                         [(0, 0), (0, 1)])
    kept = evaluate(pred, data3, plan, Keep())[..., 0].astype(np.float64)
    bits = jnp.asarray(plan.key_bits)
    for b, stream in enumerate(plan.item_stream):
        src = np.asarray(_streams.uniform_rows(_streams.seed_of(bits, jnp.asarray(stream)),
                                               jnp.arange(n), jnp.int32(n)))
        Xb = data3.copy()
        Xb[:, 0] = data3[src, 0]
        np.testing.assert_allclose(kept[b], f_np(Xb), atol=2e-5)
    spread = evaluate(pred, data3, plan, Spread(np.ones(n), 2), memory_budget=1 << 16)
    np.testing.assert_allclose(spread[0, 0], np.abs(kept[0] - kept[1]).mean(), atol=1e-5)


def test_coded_values_and_grouped_mean(mlp3, data3):
    """Values chosen per row (bin edges) and means per group (bin), as ALE needs them."""
    f_jax, f_np, _ = mlp3
    pred = jaximp.as_predictor(f_jax, n_features=3)
    edges = np.quantile(data3[:, 0], [0, 0.25, 0.5, 0.75, 1])
    bins = np.clip(np.searchsorted(edges, data3[:, 0], side="right") - 1, 0, 3)
    table = np.zeros((5, 3))
    table[:, 0] = edges
    mask = np.array([[True, False, False]])
    plan = at_coded_values(mask, [0, 0], table, bins, [0, 0], [0, 1])  # lower, upper edge
    kept = evaluate(pred, data3, plan, Keep())[..., 0].astype(np.float64)
    for b, offset in enumerate([0, 1]):
        Xb = data3.copy()
        Xb[:, 0] = edges[bins + offset]
        np.testing.assert_allclose(kept[b], f_np(Xb), atol=2e-5)
    w = np.random.default_rng(0).uniform(size=len(data3))
    grouped = evaluate(pred, data3, plan, GroupedMean(bins[None], np.zeros(2, int), 4, w),
                       memory_budget=1 << 16)
    for k in range(4):
        sel = bins == k
        np.testing.assert_allclose(grouped[:, k, 0], kept[:, sel] @ w[sel] / w[sel].sum(),
                                   atol=1e-5)


@pytest.mark.parametrize("n_items, n_local, devices, block", [
    (1000, 10_000, 4, 1 << 40), (1000, 10_000, 1, 2000), (7, 100, 1, 5000), (3, 10**6, 1, 12288),
    (9, 50, 1, 12288)])
def test_sizes_respect_budget_and_blocks(n_items, n_local, devices, block):
    for group in (1, 3):
        sizes = _sizes(n_items, n_local, devices, row_bytes=100.0, partial_bytes=8.0,
                       budget=10**7, block_rows=block, group=group)
        rows = sizes.items_per_block * sizes.rows_per_block * devices
        assert rows * 100 <= max(10**7 / 2, 100 * devices * group)  # a block fits the budget
        assert rows <= max(block, group * devices)
        assert sizes.items_per_block % group == 0
        covered = -(-n_local // sizes.rows_per_chunk) * sizes.rows_per_chunk
        assert n_local <= covered <= 1.125 * n_local + 256 * covered / sizes.rows_per_block


@pytest.mark.parametrize("n_local, most, unit", [
    (100_000, 16384, 2048), (30_000, 16384, 2048), (10**6, 16384, 4096), (5000, 16384, 2048),
    (100_000, 1000, 2048), (10**7, 10**6, 256)])
def test_rows_per_block_are_whole_tiles_that_pad_least(n_local, most, unit):
    from jaximp.engine._blocks import _rows_per_block

    rows = _rows_per_block(n_local, most, unit)
    padded = -(-n_local // rows) * rows
    fits = [r for r in range(unit, most + 1, unit) if r * 2 >= most]
    if 0 < len(fits) <= 64:  # whole tiles: none pads less
        assert rows % unit == 0 and rows in fits
        assert padded == min(-(-n_local // r) * r for r in fits)
    else:  # balanced blocks of a multiple of 256
        assert rows <= most and (rows % 256 == 0 or rows == most)
        assert padded - n_local < 256 * -(-n_local // rows)
    if (n_local, most) == (100_000, 16384):
        assert rows == 14336  # 7 blocks, 352 padding rows


@pytest.mark.parametrize("n_items,most,group", [
    (51, 12, 1), (200, 24, 1), (5, 12, 1), (51, 16, 1), (97, 40, 3), (27_500, 32, 1),
    (10**7, 10**6, 7), (2, 1, 3),
])
def test_items_per_block_are_the_fewest_balanced_blocks(n_items, most, group):
    from jaximp.engine._blocks import _items_per_block

    size = _items_per_block(n_items, most, group)
    blocks = -(-n_items // size)
    assert size % group == 0 and size <= max(most, group)
    assert blocks == -(-n_items // max(group, most // group * group))  # no fewer fit
    assert blocks * size - n_items < group * blocks  # balanced: under a group each


def test_bucket_sizes_pad_at_most_an_eighth():
    assert [_bucket(n) for n in (1, 8, 9, 12, 13, 100, 1000)] == [8, 8, 9, 12, 13, 104, 1024]
    sizes = np.arange(8, 100_000, 37)
    buckets = np.array([_bucket(n) for n in sizes])
    assert np.all(buckets >= sizes) and np.all(buckets <= 1.125 * sizes)
    assert len(set(buckets)) < len(sizes) / 10  # many sizes share a bucket


def test_eager_equals_jit(mlp3, data3):
    f_jax, _, _ = mlp3
    pred = jaximp.as_predictor(f_jax, n_features=3)
    vals = np.zeros((5, 3))
    vals[:, 0] = np.linspace(-1, 1, 5)
    plan = at_values(np.array([[True, False, False]]), np.zeros(5, int), vals, np.arange(5))
    reducer = Mean(np.ones((1, 20)))
    jitted = evaluate(pred, data3[:20], plan, reducer)
    with jax.disable_jit():
        eager = evaluate(pred, data3[:20], plan, reducer)
    np.testing.assert_allclose(jitted, eager, atol=1e-6)


def test_weighted_mean_accuracy_on_many_float32_rows():
    """Means over 400k float32 rows stay within 1e-6 relative of float64."""
    rng = np.random.default_rng(0)
    X = rng.normal(loc=100.0, size=(400_000, 2))
    pred = jaximp.as_predictor(lambda X: X[:, 0] * 1000.0 + X[:, 1], n_features=2)
    plan = at_values(np.zeros((1, 2), bool), [0], np.zeros((1, 2)), [0])
    out = evaluate(pred, X, plan, Mean(np.ones((1, len(X)))))
    exact = np.mean(X.astype(np.float32).astype(np.float64) @ np.array([1000.0, 1.0]))
    assert abs(out[0, 0, 0] - exact) / abs(exact) < 1e-6


def test_predict_rows_matches_the_model(mlp3, data3):
    f_jax, f_np, _ = mlp3
    pred = jaximp.as_predictor(f_jax, n_features=3)
    np.testing.assert_allclose(predict_rows(pred, data3, memory_budget=1 << 16)[:, 0],
                               f_np(data3), atol=2e-5)


def test_nonfinite_predictions_are_an_error():
    X = np.linspace(-1, 1, 20).reshape(10, 2)
    with pytest.raises(FloatingPointError, match="returned NaN or infinite predictions"):
        jaximp.partial_dependence(lambda X: jnp.log(X[:, 0]), X, "x0")


def test_plans_are_immutable_so_their_device_tables_can_be_kept(mlp3, data3):
    """The engine keeps a plan's tables on the devices for the plan's lifetime: writing into
    the arrays a plan was built from must not change what the plan evaluates."""
    pred = jaximp.as_predictor(mlp3[0], n_features=3)
    masks, values = np.array([[True, False, False]]), np.array([[0.5, 0.0, 0.0]])
    plan = at_values(masks, [0], values, [0])
    first = evaluate(pred, data3, plan, Mean(np.ones((1, len(data3)))))
    masks[0] = [False, True, False]
    values[0, 0] = 9.0
    np.testing.assert_array_equal(evaluate(pred, data3, plan, Mean(np.ones((1, len(data3))))),
                                  first)
    with pytest.raises(ValueError, match="read-only"):
        plan.table[0, 0] = 1.0
    sliced = plan.items(0, 1)  # views of the plan's own read-only arrays: not copied again
    assert sliced.masks is plan.masks and np.shares_memory(sliced.item_mask, plan.item_mask)
    X = data3.copy()
    X[:, 0] = 0.5  # what the plan sets: evaluating the plan equals the model on these rows
    expected = np.asarray(mlp3[0](jnp.asarray(X, jnp.float32))).mean()
    np.testing.assert_allclose(first[0, 0, 0], expected, rtol=1e-5)


def test_plan_and_budget_validation(mlp3, data3):
    pred = jaximp.as_predictor(mlp3[0], n_features=3)
    plan = at_values(np.ones((1, 3), bool), [0], np.zeros((1, 3)), [0])
    with pytest.raises(ValueError, match="memory_budget must be at least 65536 bytes; got 10"):
        evaluate(pred, data3, plan, Keep(), memory_budget=10)
    with pytest.raises(ValueError, match="the plan's masks have 2 columns but X has 3"):
        evaluate(pred, data3, at_values(np.ones((1, 2), bool), [0], np.zeros((1, 2)), [0]),
                 Keep())
    with pytest.raises(ValueError, match="item_index must have 2 entries"):
        at_values(np.ones((1, 3), bool), [0, 0], np.zeros((1, 3)), [0])


def test_progress_line(permuted, data3, capsys):
    pred, _, plan, _ = permuted
    evaluate(pred, data3, plan, Keep(), memory_budget=1 << 16, progress=True, label="test")
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


ONE_OTHER_DEVICE_SCRIPT = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np, jaximp
    first, second = jax.devices()[:2]
    seen = []

    def model(rows):  # a model on another framework's arrays (here JAX's own)
        seen.append(sorted(d.id for d in rows.devices()))
        return jnp.tanh(rows[:, :1] * 2.0 - rows[:, 1:2])

    X = np.random.default_rng(0).normal(size=(300, 3))
    y = np.tanh(2 * X[:, 0] - X[:, 1])
    on_second = jaximp.DLPackModel(model, lambda rows: rows, device=second)
    fi = jaximp.permutation_importance(on_second, X, y, n_repeats=2)
    pd = jaximp.partial_dependence(on_second, jax.device_put(X, first), 0, grid_resolution=4)
    ex = jaximp.Explainer(on_second, jax.device_put(X, first), y)
    bound = np.asarray(ex.permutation_importance(n_repeats=2).importances)
    np.savez(OUT, seen=np.array(seen), fi=fi.importances, pd=pd.average, bound=bound)
""")


def test_a_foreign_model_runs_on_its_own_device_not_the_default_one(tmp_path):
    """A model asking for another device than the default one gets every batch there, rows
    given on the default device included, with the numbers of the default device."""
    out = run_on_host_devices(ONE_OTHER_DEVICE_SCRIPT, tmp_path / "other.npz", devices=2)
    assert out["seen"].size and np.all(out["seen"] == 1)
    X = np.random.default_rng(0).normal(size=(300, 3))
    y = np.tanh(2 * X[:, 0] - X[:, 1])
    model = lambda rows: jnp.tanh(rows[:, :1] * 2.0 - rows[:, 1:2])  # noqa: E731
    fi = jaximp.permutation_importance(model, X, y, n_repeats=2)
    np.testing.assert_allclose(out["fi"], fi.importances, rtol=1e-6)
    np.testing.assert_allclose(out["bound"], fi.importances, rtol=1e-6)
    pd = jaximp.partial_dependence(model, X, 0, grid_resolution=4)
    np.testing.assert_allclose(out["pd"], pd.average, rtol=1e-6)


def test_one_device_equals_four_forced_host_devices(tmp_path):
    multi = run_on_host_devices(MULTI_DEVICE_SCRIPT, tmp_path / "multi.npz")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(203, 3))
    W = rng.normal(size=(3, 8)).astype(np.float32)
    res = jaximp.partial_dependence_all(lambda X: jnp.tanh(X @ W).sum(axis=1), X,
                                        grid_resolution=6, kind="both")
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


def test_mean_of_float32_predictions_is_as_exact_as_a_float64_sum():
    """Partial dependence of a float32 model averages its float32 predictions over 100,000
    rows as a float64 sum of them would, to 1e-10 (a plain float32 sum is ~1e-6 off here)."""
    rng = np.random.default_rng(0)
    X = np.c_[rng.uniform(size=100_000), rng.uniform(1000, 2000, size=100_000)]

    def f(A):
        return A[:, 1] * 1.0001 + A[:, 0] * 0

    pd = jaximp.partial_dependence(f, X, 0, grid_resolution=3)
    expected = np.asarray(f(jnp.asarray(X, jnp.float32)), np.float64).mean()
    np.testing.assert_allclose(pd.average[:, 0], expected, rtol=1e-10)
    weights = rng.integers(0, 4, size=100_000).astype(float)
    pd = jaximp.partial_dependence(f, X, 0, grid_resolution=3, sample_weight=weights)
    expected = np.average(np.asarray(f(jnp.asarray(X, jnp.float32)), np.float64),
                          weights=weights)
    np.testing.assert_allclose(pd.average[:, 0], expected, rtol=1e-10)


def test_split_sums_of_float32_predictions_are_as_exact_as_a_float64_sum():
    """The high/low split that an accelerator's means use (a CPU sums in float64): each of
    its weighted sums over 100,000 float32 predictions agrees with the float64 sum to 1e-9
    (NumPy adds them in order here; XLA's tree of sums does better), for unit weights and for
    bootstrap counts: a hundred times closer than a plain float32 sum."""
    from jaximp.engine._reducers import _split_sums

    rng = np.random.default_rng(1)
    preds = rng.uniform(1000, 2000, size=(3, 2, 100_000)).astype(np.float32)
    weights = np.stack([np.ones(100_000), rng.integers(0, 4, size=100_000)]).T
    sums = _split_sums(preds, weights.astype(np.float32), np)  # (b, r, o, 2)
    assert sums.dtype == np.float32
    got = sums[..., 0].astype(np.float64) + sums[..., 1]
    expected = np.einsum("bon,nr->bro", preds.astype(np.float64), weights)
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    plain = np.einsum("bon,nr->bro", preds, weights.astype(np.float32))
    assert np.abs(plain / expected - 1).max() > 100 * np.abs(got / expected - 1).max()


@on_cpu
def test_a_model_fused_whole_runs_in_blocks_bounded_by_the_budget_alone(monkeypatch):
    """On CPU, blocks of a model with activations hold about 16,384 rows (they stay in
    cache); a model XLA fuses whole has none, and its rows go in blocks as large as the
    budget allows. The means equal a float64 sum of the float32 predictions either way."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1000, 3))
    W = jnp.asarray(rng.normal(size=(3, 32)), jnp.float32)
    v = jnp.asarray(rng.normal(size=32), jnp.float32)
    models = {"fused": lambda A: jnp.sin(A[:, 0]) + A[:, 1] * A[:, 2],
              "activations": lambda A: jnp.tanh(A @ W) @ v}
    grid = np.c_[np.linspace(-2, 2, 40), np.zeros((40, 2))]
    plan = at_values([[True, False, False]], np.zeros(40, int), grid, np.arange(40))
    built = []
    chunk_function = jaximp.engine._engine._chunk_function
    monkeypatch.setattr(jaximp.engine._engine, "_chunk_function",
                        lambda *args: built.append(args) or chunk_function(*args))
    for name, model in models.items():
        means = evaluate(jaximp.as_predictor(model, n_features=3), X, plan,
                         Mean(np.ones((1, 1000))))
        sizes = built[-1][3]
        rows = sizes.items_per_block * sizes.rows_per_block
        if name == "fused":
            assert sizes.item_blocks == 1 and rows >= 40 * 1000, sizes
        else:  # about 16,384 rows (items per block may go 1.5x above, to pad less)
            assert sizes.item_blocks > 1 and rows <= 1.5 * 16384, sizes
        modified = np.repeat(X[None], 40, axis=0).astype(np.float32)
        modified[:, :, 0] = grid[:, :1].astype(np.float32)
        expected = np.asarray(model(jnp.asarray(modified.reshape(-1, 3))), np.float64)
        np.testing.assert_allclose(means[:, 0, 0], expected.reshape(40, 1000).mean(axis=1),
                                   rtol=1e-6, atol=1e-7)


_MASK32 = np.uint64(0xFFFFFFFF)


def _numpy_mix32(x):
    """The engine's 32-bit finalizer in NumPy's uint64."""
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & _MASK32
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & _MASK32
    return x ^ (x >> np.uint64(16))


def _numpy_feistel_permutation(seed: int, rows: np.ndarray, n: int) -> np.ndarray:
    """The engine's keyed permutation written again in NumPy integers (uint64 products, plain
    division): the rows' positions under an 8-round Feistel network on the radices (a, b),
    walked back into 0..n-1; up to 256 rows, the ranks of hashed keys."""
    a, b = (np.uint64(r) for r in _streams.feistel_radices(n))
    seed = _numpy_mix32(np.uint64(seed))

    def network(x):
        left, right, size_left = x // b, x % b, a
        sizes = (a, b)
        for r in range(8):
            round_key = (seed + np.uint64(((r + 1) * 0x9E3779B9) & 0xFFFFFFFF)) & _MASK32
            f = _numpy_mix32(right ^ round_key)
            total = left + ((f * size_left) >> np.uint64(32))
            left, right = right, np.where(total >= size_left, total - size_left, total)
            size_left = sizes[(r + 1) % 2]
        return left * b + right

    if n <= 256:  # the ranks of hashed keys
        i = np.arange(256, dtype=np.uint64)
        keys = np.where(i < n, _numpy_mix32(_numpy_mix32(i) ^ seed), _MASK32)
        ranks = np.empty(256, np.int64)
        ranks[np.argsort(keys, kind="stable")] = np.arange(256)
        return ranks[np.asarray(rows)]
    x = network(np.asarray(rows, np.uint64))
    while (x >= n).any():
        x = np.where(x >= n, network(x), x)
    return x.astype(np.int64)


@pytest.mark.parametrize("n", [1, 2, 7, 256, 257, 997, 10_000, 99_991, 100_000, 2**31 - 1])
def test_permutations_equal_a_numpy_integer_feistel_network(n):
    """The device's permutation (its products and divisions written for speed) equals the
    same network in NumPy's integers, at exact and near-square radices, up to n = 2**31 - 1
    (rows sampled there)."""
    rows = np.arange(n) if n <= 100_000 else np.random.default_rng(0).integers(0, n, 5000)
    for seed in (0, 12345, 0xFFFFFFFF):
        device = _streams.feistel_permutation(jnp.uint32(seed), jnp.asarray(rows, jnp.int32),
                                              jnp.int32(n), _streams.feistel_radices(n))
        np.testing.assert_array_equal(np.asarray(device),
                                      _numpy_feistel_permutation(seed, rows, n))


def _seeded_permutations(n: int, count: int) -> np.ndarray:
    rows = jnp.arange(n)
    radices = _streams.feistel_radices(n)
    one = lambda seed: _streams.feistel_permutation(seed, rows, jnp.int32(n), radices)  # noqa: E731
    seeds = _streams.mix32(jnp.arange(count, dtype=jnp.uint32))
    return np.asarray(jax.jit(jax.vmap(one))(seeds))


@pytest.mark.parametrize("n", [3, 5, 6])
def test_small_permutations_are_uniform_over_all_orders(n):
    """Every one of the n! orders is equally likely (chi-square over 24,000 seeds). Feistel
    digits of 1 to 3 values reached some orders only (at n = 5, radices (1, 5): rotations)."""
    orders = {p: k for k, p in enumerate(itertools.permutations(range(n)))}
    counts = np.bincount([orders[tuple(p)] for p in _seeded_permutations(n, 24_000)],
                         minlength=len(orders))
    assert scipy.stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("n", [37, 74, 138, 257, 1000, 2048])
def test_permutations_leave_no_trace_of_order(n):
    """Consecutive rows land at uniformly spread distances, (pi(i + 1) - pi(i)) mod n equally
    likely over 1..n-1 (chi-square), and i -> i + 1 successions average (n - 1) / n, as for a
    uniform permutation (within 4 standard errors). Four rounds, or a factorisation as
    uneven as (2, 37), gave 1.9 to 35 successions a permutation, and digits of 6 to 8 values
    (n = 138: (6, 23)) 1.06 to 1.09."""
    perms = _seeded_permutations(n, 4000)
    steps = (perms[:, 1:] - perms[:, :-1]) % n
    assert scipy.stats.chisquare(np.bincount(steps.ravel(), minlength=n)[1:]).pvalue > 1e-3
    successions = (steps == 1).sum(axis=1)
    assert abs(successions.mean() - (n - 1) / n) < 4 * successions.std() / np.sqrt(4000)


def test_uniform_draws_equal_a_numpy_multiply_shift():
    """Draws with replacement: the high 32 bits of hash(row) * n, in NumPy's uint64."""
    rows = np.arange(100_000, dtype=np.uint64)
    for seed, n in ((3, 5), (0xFFFFFFFF, 99_991), (7, 2**31 - 1)):
        hashed = _numpy_mix32(rows ^ _numpy_mix32(np.uint64(seed) ^ np.uint64(0x9E3779B9)))
        expected = (hashed * np.uint64(n)) >> np.uint64(32)
        device = _streams.uniform_rows(jnp.uint32(seed), jnp.asarray(rows, jnp.int32),
                                       jnp.int32(n))
        np.testing.assert_array_equal(np.asarray(device), expected.astype(np.int64))


@on_cpu
def test_a_model_without_a_memory_estimate_keeps_cache_sized_blocks(monkeypatch):
    """Where the compiler gives no memory analysis, a model is not taken for one XLA fuses
    whole: its blocks stay cache-sized."""
    monkeypatch.setattr(jax.stages.Compiled, "memory_analysis", lambda self: None)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(1000, 3))
    predictor = jaximp.as_predictor(lambda A: jnp.sin(A[:, 0]) + A[:, 1], n_features=3)
    row_bytes, temp = jaximp.engine._engine._bytes_per_row(predictor, 3, np.float32)
    assert temp == np.inf and row_bytes > 0
    built = []
    chunk_function = jaximp.engine._engine._chunk_function
    monkeypatch.setattr(jaximp.engine._engine, "_chunk_function",
                        lambda *args: built.append(args) or chunk_function(*args))
    grid = np.c_[np.linspace(-2, 2, 40), np.zeros((40, 2))]
    plan = at_values([[True, False, False]], np.zeros(40, int), grid, np.arange(40))
    evaluate(predictor, X, plan, Mean(np.ones((1, 1000))))
    assert built[-1][3].item_blocks > 1, built[-1][3]


def test_a_keys_data_on_the_host_is_the_keys_own():
    """The host draws read a key's data: an int seed's and a user's key's are the key's."""
    from jaximp.data import as_key, key_data_on_host

    for random_state in (7, 2**40 + 3, jax.random.key(11)):
        key = as_key(random_state)
        np.testing.assert_array_equal(key_data_on_host(key),
                                      np.asarray(jax.random.key_data(key), np.uint32))


def test_sampled_rows_are_distinct_reproducible_and_uniform():
    """Row subsamples (H's n_max, Shapley and SAGE backgrounds): k distinct rows in order, the
    same for the same key, and each row drawn about k / n of the time."""
    from jaximp.engine import sample_rows

    key = jax.random.key(3)
    rows = sample_rows(key, 10**7, 500)
    assert rows.shape == (500,) and np.all(np.diff(rows) > 0) and rows[-1] < 10**7
    np.testing.assert_array_equal(rows, sample_rows(key, 10**7, 500))
    assert not np.array_equal(rows, sample_rows(jax.random.key(4), 10**7, 500))
    counts = np.bincount(np.concatenate([sample_rows(jax.random.key(s), 20, 5)
                                         for s in range(4000)]), minlength=20)
    assert abs(counts / 4000 - 5 / 20).max() < 0.03  # 1,000 expected per row, sd ~27


def test_weighted_means_of_a_constant_are_that_constant_whatever_the_weights():
    """The sums over rows weigh in float32: the mean divides by the sum of the same float32
    weights, so a constant's weighted mean is the constant (weights of 0.1 on a host model's
    float64 predictions at 1e6 were off by 0.015)."""
    import types

    X = np.random.default_rng(3).normal(size=(200, 2))
    model = types.SimpleNamespace(predict=lambda A: np.full(len(A), 1e6) + 0 * A[:, 0])
    pred = jaximp.as_predictor(model, n_features=2)
    plan = at_values([[True, False]], np.zeros(3, int), np.c_[[0.0, 1.0, 2.0], np.zeros(3)],
                     np.arange(3))
    for w in (0.1, 1 / 3):
        weights = np.full((1, len(X)), w)
        np.testing.assert_array_equal(evaluate(pred, X, plan, Mean(weights))[:, 0, 0], 1e6)
        spread = evaluate(pred, X, plan, Spread(weights[0], 3))
        np.testing.assert_array_equal(spread, 0.0)
