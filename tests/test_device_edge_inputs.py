"""Edge inputs of rows given as a ``jax.Array`` and of the plain functions' call caches.

Every public method called with X on one device answers as with ``np.asarray(X)``; shapes and
dtypes that are refused get the NumPy path's message; the caches of recent data and of plain
functions' wrappers follow every change to what they are keyed on, across array layouts,
model kinds and threads."""

import dataclasses
import functools
import pickle
import sys
import textwrap
import threading

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from conftest import ON_CPU, assert_same_program, run_on_host_devices

import jaximp
from jaximp.data import GRID_STRATEGIES, as_dataset, feature_grid
from jaximp.data import _device
from jaximp.methods import _setup

RNG = np.random.default_rng(3)
N = 40
HOST = np.column_stack([RNG.normal(size=N), RNG.uniform(-1, 1, N), RNG.integers(0, 3, N),
                        RNG.normal(size=N)]).astype(np.float32)
DEVICE = jnp.asarray(HOST)
Y = np.asarray(HOST[:, 0] * HOST[:, 1] + HOST[:, 3], np.float64)


def model(A):
    return A[:, 0] * A[:, 1] + jnp.tanh(A[:, 3]) + 0.1 * A[:, 2]


def product(A):
    return A[:, 0] * A[:, 1] + A[:, 2]


def _pd_reference(X, grid, scale=1.0, weights=None):
    """PD of x0 for ``scale * product``, in float64: ``g * mean(x1) + mean(x2)``."""
    X = np.asarray(X, np.float64)
    w = np.ones(len(X)) if weights is None else np.asarray(weights, np.float64)
    mean = lambda column: np.sum(w * X[:, column]) / w.sum()  # noqa: E731
    return scale * (np.asarray(grid) * mean(1) + mean(2))


def _arrays(result, path="result", depth=0, out=None):
    """Every numeric array and number a result holds, by its path (timings left out)."""
    out = {} if out is None else out
    if depth > 3 or path.endswith("timings"):
        return out
    if isinstance(result, (np.ndarray, jax.Array)) and np.asarray(result).dtype.kind in "fiub":
        out[path] = np.asarray(result, np.float64)
    elif isinstance(result, (float, int, np.floating)):
        out[path] = np.float64(result)
    elif isinstance(result, dict):
        for key, value in result.items():
            _arrays(value, f"{path}[{key!r}]", depth + 1, out)
    elif isinstance(result, (list, tuple)):
        for i, value in enumerate(result):
            _arrays(value, f"{path}[{i}]", depth + 1, out)
    else:
        names = ([field.name for field in dataclasses.fields(result)]
                 if dataclasses.is_dataclass(result) else list(getattr(result, "__dict__", ())))
        for name in names:  # getattr: a deferred field is read
            if not name.startswith("_"):
                _arrays(getattr(result, name), f"{path}.{name}", depth + 1, out)
    return out


def _assert_same(got, want):
    got, want = _arrays(got), _arrays(want)
    assert want and got.keys() == want.keys()
    for path, value in want.items():
        assert got[path].shape == value.shape, path
        if ON_CPU:
            np.testing.assert_allclose(got[path], value, rtol=1e-6, atol=1e-9, err_msg=path)
        else:
            assert_same_program(got[path], value)


# ---------------------------------------------------------------- shapes and dtypes refused


@pytest.mark.parametrize("shape, message", [
    ((), r"X must be 2-D \(rows, columns\).*got shape \(\)"),
    ((5,), r"X must be 2-D \(rows, columns\).*got shape \(5,\)"),
    ((0, 3), r"X is empty: got shape \(0, 3\)"),
    ((5, 0), r"X is empty: got shape \(5, 0\)"),
    ((0, 3, 2), r"X is empty: got shape \(0, 3, 2\)"),
    ((4, 0, 2), r"X is empty: got shape \(4, 0, 2\)"),
])
def test_shapes_without_rows_or_columns_get_one_message_on_device_and_host(shape, message):
    for X in (jnp.zeros(shape, jnp.float32), np.zeros(shape)):
        with pytest.raises(ValueError, match=message):
            as_dataset(X)


def test_a_bfloat16_numpy_array_is_numbers_as_on_a_device():
    values = np.round(HOST * 4) / 4  # exact in bfloat16
    host = values.astype(ml_dtypes.bfloat16)
    assert np.array_equal(as_dataset(host).X, values.astype(np.float64))
    assert np.array_equal(as_dataset(jnp.asarray(host)).X, values.astype(np.float64))
    with pytest.raises(TypeError, match=r"X must hold numbers; got an array of dtype "
                                        r"\[\('a', '<f4'\)\]"):
        as_dataset(np.zeros((3, 2), dtype=[("a", "<f4")]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "uint8", "bool"])
def test_device_rows_of_any_numeric_dtype_answer_as_numpy(dtype):
    values = HOST * 3 if dtype != "bool" else HOST > 0
    X = jnp.asarray(values).astype(dtype)
    numpy_X = np.asarray(X)
    dataset, reference = as_dataset(X, categorical=[2]), as_dataset(numpy_X, categorical=[2])
    assert dataset.features == reference.features
    assert np.array_equal(dataset.X, reference.X)
    _assert_same(jaximp.partial_dependence(model, X, [0, 2], grid_resolution=5),
                 jaximp.partial_dependence(model, numpy_X, [0, 2], grid_resolution=5))
    _assert_same(jaximp.permutation_importance(model, X, Y, n_repeats=2),
                 jaximp.permutation_importance(model, numpy_X, Y, n_repeats=2))


@pytest.fixture(params=["device sort", "numpy sort of a cpu view"])
def sort_where(request, monkeypatch):
    if request.param == "device sort":
        monkeypatch.setattr(_device, "SORTED_BY_NUMPY", ())
    return request.param


def test_quantiles_of_a_column_with_one_present_value_are_that_value(sort_where):
    values = HOST.copy()
    values[1:, 0] = np.nan
    prob = np.arange(1, 10) / 10
    for X in (jnp.asarray(values), values.astype(np.float64)):
        order = as_dataset(X, allow_missing=True).column_order(0)
        assert order.size == 1
        np.testing.assert_array_equal(order.quantiles(prob), np.full(9, values[0, 0], float))


@pytest.mark.parametrize("name, column", [
    ("constant", np.full(N, 7.0)),
    ("signed zeros", np.where(np.arange(N) % 2, 0.0, -0.0) + (np.arange(N) > 30)),
    ("large", RNG.normal(size=N) * 1e30),
    ("two present values", np.where(np.arange(N) < 2, np.arange(N), np.nan)),
])
def test_device_grids_of_edge_columns_equal_numpys(name, column, sort_where):
    values = HOST.copy()
    values[:, 1] = column
    device, host = as_dataset(jnp.asarray(values), allow_missing=True), as_dataset(
        values.astype(np.float64), allow_missing=True)
    for strategy in GRID_STRATEGIES:
        for resolution in (3, 50):
            options = dict(strategy=strategy, grid_resolution=resolution)
            try:
                want = feature_grid(host, host.features[1], **options)
            except ValueError as error:  # one distinct value: refused alike
                with pytest.raises(ValueError, match=r"single distinct value \(7\)"):
                    feature_grid(device, device.features[1], **options)
                assert "single distinct value (7)" in str(error)
                continue
            got = feature_grid(device, device.features[1], **options)
            assert np.array_equal(got[0], want[0]) and got[1] == want[1]


# ---------------------------------------------------------------- every method, device = host

TREE = None


def _tree():
    global TREE
    if TREE is None:
        from sklearn.tree import DecisionTreeRegressor
        TREE = DecisionTreeRegressor(max_depth=3, random_state=0).fit(HOST, Y)
    return TREE


def _explained(explanation):
    return {name: explanation[name] for name in explanation}, explanation.partial_dependence


METHODS = {
    "ale": lambda X: jaximp.ale(model, X, 0, bins=5),
    "ale_interaction": lambda X: jaximp.ale_interaction(model, X, pairs=[(0, 1)], bins=4),
    "loco": lambda X: jaximp.loco_importance(model, X, Y, strategy="mean"),
    "sensitivity": lambda X: jaximp.sensitivity_importance(model, X, Y, n_repeats=2),
    "shapley": lambda X: jaximp.shapley_values(model, X[:4], X, n_permutations=4,
                                               background_size=10),
    "sage": lambda X: jaximp.sage_importance(model, X, Y, n_permutations=4),
    "conditional": lambda X: jaximp.conditional_importance(model, X, Y, n_repeats=2),
    "trends": lambda X: jaximp.trends(model, X, Y),
    "integrated_gradients": lambda X: jaximp.integrated_gradients(model, X, n_steps=4),
    "saliency": lambda X: jaximp.saliency(model, X),
    "sobol": lambda X: jaximp.sobol_indices(model, X, n_repeats=2, n_bootstrap=2),
    "h_statistic": lambda X: jaximp.h_statistic(model, X, n_max=20),
    "tree_shap": lambda X: jaximp.tree_shap(_tree(), X[:5], background=X[:10]),
    "tree_pd": lambda X: jaximp.tree_partial_dependence(_tree(), X, 0, grid_resolution=5),
    "tree_permutation": lambda X: jaximp.permutation_importance(_tree(), X, Y, n_repeats=2),
    "explain": lambda X: _explained(jaximp.explain(model, X, Y, grid_resolution=4)),
    "categorical": lambda X: jaximp.partial_dependence(model, X, 2, categorical=[2]),
    "groups": lambda X: jaximp.permutation_importance(model, X, Y, groups={"g": [0, 1]},
                                                      n_repeats=2),
    "device weights": lambda X: jaximp.partial_dependence(
        model, X, 0, sample_weight=jnp.arange(1.0, N + 1), grid_resolution=4),
    "feature names": lambda X: jaximp.partial_dependence(model, X, "b", grid_resolution=4,
                                                         feature_names=list("abcd")),
}


@pytest.mark.parametrize("name", METHODS)
def test_every_method_answers_for_device_rows_as_for_numpy(name):
    _assert_same(METHODS[name](DEVICE), METHODS[name](np.asarray(DEVICE)))


def test_images_on_a_device_with_channel_groups_answer_as_numpy():
    images = jnp.asarray(RNG.normal(size=(12, 2, 3, 2)), jnp.float32)
    target = np.zeros(12)
    groups = jaximp.input_groups(images.shape[1:], axis=-1)

    def cnn(A):
        return jnp.sum(A[..., 0] * A[..., 1], axis=(1, 2))

    for options in ({}, {"groups": groups}):
        _assert_same(jaximp.permutation_importance(cnn, images, target, n_repeats=2, **options),
                     jaximp.permutation_importance(cnn, np.asarray(images), target,
                                                   n_repeats=2, **options))
    _assert_same(jaximp.saliency(cnn, images), jaximp.saliency(cnn, np.asarray(images)))


def test_one_row_and_one_column_answer_or_are_refused_as_numpy():
    one_row = DEVICE[:1]
    _assert_same(jaximp.shapley_values(product, one_row, one_row),
                 jaximp.shapley_values(product, np.asarray(one_row), np.asarray(one_row)))
    for X in (one_row, np.asarray(one_row)):
        with pytest.raises(ValueError, match="feature 'x0' has a single distinct value"):
            jaximp.partial_dependence(product, X, 0)
    one_column = DEVICE[:, :1]

    def square(A):
        return A[:, 0] ** 2

    _assert_same(jaximp.ale(square, one_column, 0, bins=4),
                 jaximp.ale(square, np.asarray(one_column), 0, bins=4))
    for X in (one_column, np.asarray(one_column)):
        with pytest.raises(ValueError, match="pairs='all' needs at least 2 features"):
            jaximp.h_statistic(square, X)


def test_a_column_of_only_missing_values_reaches_a_host_model_as_from_numpy():
    from sklearn.ensemble import HistGradientBoostingRegressor
    values = HOST.copy()
    booster = HistGradientBoostingRegressor(max_iter=5).fit(values, Y)
    values[:, 2] = np.nan
    X = jnp.asarray(values)
    _assert_same(jaximp.permutation_importance(booster, X, Y, n_repeats=2),
                 jaximp.permutation_importance(booster, values, Y, n_repeats=2))
    for data in (X, values):
        with pytest.raises(ValueError, match="column 'x2' holds only missing values"):
            jaximp.partial_dependence(booster, data, 2)
        with pytest.raises(ValueError, match=r"X contains 40 NaN values \(first at row 0, "
                                             r"column 'x2'\), and the JAX model product"):
            jaximp.partial_dependence(product, data, 0)


def test_an_explainer_of_device_rows_repeats_pickles_and_takes_as_numpy():
    explainer = jaximp.Explainer(model, DEVICE, Y)
    reference = jaximp.Explainer(model, np.asarray(DEVICE), Y)
    first = explainer.permutation_importance(n_repeats=2)
    _assert_same(explainer.permutation_importance(n_repeats=2), first)
    _assert_same(first, reference.permutation_importance(n_repeats=2))
    pd = pickle.loads(pickle.dumps(explainer.partial_dependence(0, grid_resolution=4)))
    _assert_same(pd, reference.partial_dependence(0, grid_resolution=4))
    taken = explainer.dataset.take([3, 1, 3])
    assert np.array_equal(taken.X, np.asarray(HOST, np.float64)[[3, 1, 3]])


SHARDED_SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np, jaximp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    assert len(jax.devices()) == 4
    X = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    y = X[:, 0].astype(np.float64)
    mesh = Mesh(np.array(jax.devices()), ("rows",))
    f = lambda A: A[:, 0] * A[:, 1] + A[:, 2]
    out = {}
    for name, spec in (("sharded", PartitionSpec("rows")), ("replicated", PartitionSpec())):
        for where, data in ((name, jax.device_put(X, NamedSharding(mesh, spec))),
                            (name + "_numpy", X)):
            out[where + "_pfi"] = jaximp.permutation_importance(f, data, y).importances
            out[where + "_pd"] = jaximp.partial_dependence(f, data, 0).average
            out[where + "_shap"] = jaximp.shapley_values(f, data[:3], data).values
            out[where + "_ex"] = jaximp.Explainer(f, data, y).permutation_importance().importances
    out["second_device_pd"] = jaximp.partial_dependence(
        f, jax.device_put(X, jax.devices()[2]), 0).average
    np.savez(OUT, **out)
    """
)


def test_rows_sharded_over_several_devices_take_the_host_path(tmp_path):
    got = run_on_host_devices(SHARDED_SCRIPT, tmp_path / "sharded.npz")
    for name in ("sharded", "replicated"):
        for what in ("pfi", "pd", "shap", "ex"):
            np.testing.assert_allclose(got[f"{name}_{what}"], got[f"{name}_numpy_{what}"],
                                       rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got["second_device_pd"], got["sharded_numpy_pd"], rtol=1e-6)


# ---------------------------------------------------------------- the call caches


def _pd_checked(f, X, scale=1.0, weights=None):
    """Two calls of PD of x0 on X (the second may reuse the first's setup), each checked
    against the float64 reference."""
    for _ in range(2):
        result = jaximp.partial_dependence(f, X, 0, grid_resolution=5, sample_weight=weights)
        np.testing.assert_allclose(result.average[:, 0],
                                   _pd_reference(X, result.grid_values[0], scale, weights),
                                   rtol=2e-5, atol=2e-5)


class _Subclass(np.ndarray):
    pass


def _layouts(tmp_path):
    wide = RNG.normal(size=(N, 6)).astype(np.float32)
    read_only = HOST + 3
    read_only.flags.writeable = False
    memmap = np.memmap(tmp_path / "rows.dat", dtype=np.float32, mode="w+", shape=HOST.shape)
    memmap[:] = HOST + 4
    return {
        "non-contiguous view": wide[:, ::2],
        "fortran order": np.asfortranarray(HOST + 1),
        "negative strides": (HOST + 2)[::-1, ::-1],
        "read-only": read_only,
        "memmap": memmap,
        "subclass": (HOST + 5).view(_Subclass),
        "float16": HOST.astype(np.float16),
        "big-endian": HOST.astype(">f4"),
        "float64": HOST.astype(np.float64),
    }


def test_the_recent_data_cache_follows_every_layout_and_dtype(tmp_path):
    for name, X in _layouts(tmp_path).items():
        _pd_checked(jax.jit(product), X)
        X = np.array(X)  # the same values, a fresh array: the cached dataset, same answer
        _pd_checked(jax.jit(product), X)


def test_the_same_bytes_in_another_shape_or_dtype_are_other_data():
    X = RNG.normal(size=(N, 4)).astype(np.float32)
    _pd_checked(product, X)
    _pd_checked(product, X.reshape(N // 2, 8))
    as_int = X.view(np.int32)  # integers: validated anew, never the float dataset
    assert np.array_equal(jaximp.as_dataset(as_int).X, as_int.astype(np.float64))
    _pd_checked(product, np.abs(as_int) % 7)


def test_weights_changed_in_place_and_nan_still_checked_for_a_jax_model():
    weights = np.arange(1.0, N + 1)
    _pd_checked(product, HOST, weights=weights)
    weights[:10] = 100.0
    _pd_checked(product, HOST, weights=weights)
    _pd_checked(product, HOST, weights=jnp.asarray(weights))
    missing = HOST.copy()
    missing[3, 1] = np.nan
    for _ in range(2):  # the second call finds the dataset cached, and still refuses
        with pytest.raises(ValueError, match=r"X contains 1 NaN values \(first at row 3, "
                                             r"column 'x1'\), and the JAX model product"):
            jaximp.partial_dependence(product, missing, 0)


class _Scaled:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, A):
        return self.scale * product(A)

    def apply(self, A):
        return self.scale * product(A)


def test_the_predictor_cache_follows_every_kind_of_function():
    _pd_checked(functools.partial(lambda A, s: s * product(A), s=2.0), HOST, scale=2.0)
    for scale in (3.0, 4.0):
        _pd_checked(_Scaled(scale).apply, HOST, scale=scale)  # a bound method
        _pd_checked(_Scaled(scale), HOST, scale=scale)  # a callable object
    for scale in (1.0, 5.0):
        redefined = lambda A: scale * product(A)  # noqa: E731 (the same code, a new function)
        _pd_checked(redefined, HOST, scale=scale)
    static = jax.jit(lambda A, k: k * product(A), static_argnums=1)
    _pd_checked(functools.partial(static, k=3.0), HOST, scale=3.0)
    _pd_checked(lambda A: static(A, 6.0), HOST, scale=6.0)


def test_a_result_changed_in_place_leaves_the_next_call_alone():
    first = jaximp.partial_dependence(product, HOST, 0, grid_resolution=5, kind="both")
    for name in ("average", "individual"):
        values = getattr(first, name)
        if isinstance(values, np.ndarray) and values.flags.writeable:
            values[...] = 1e9
    _pd_checked(product, HOST)
    importance = jaximp.permutation_importance(product, HOST, Y, n_repeats=2)
    want = importance.importances.copy()
    if importance.importances.flags.writeable:
        importance.importances[...] = 7.0
    again = jaximp.permutation_importance(product, HOST, Y, n_repeats=2)
    np.testing.assert_array_equal(again.importances, want)


def test_threads_share_the_caches_without_errors_or_wrong_entries(monkeypatch):
    # caches of one entry: every call of another thread evicts
    monkeypatch.setattr(_setup, "_RECENT_DATA_KEPT", 1)
    monkeypatch.setattr(_setup, "_PLAIN_PREDICTORS_KEPT", 1)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    arrays = [RNG.normal(size=(30, 3)).astype(np.float32) for _ in range(3)]
    models = [jax.jit(functools.partial(lambda A, s: s * product(A), s=s)) for s in (1.0, 2.0)]
    errors = []

    def work(i):
        try:
            for j in range(12):
                X, k = arrays[(i + j) % 3], (i * 5 + j) % 2
                dataset, predictor = _setup.prepare(models[k], X, reuse=True,
                                                    allow_missing=True)
                assert np.array_equal(dataset.X, X.astype(np.float64))
                if j % 4 == 0:
                    _pd_checked(models[k], X, scale=k + 1.0)
        except Exception as error:  # reported below, with the thread's failure
            errors.append(error)

    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors


def test_dataset_recent_keeps_the_most_recent_under_threads():
    dataset = as_dataset(HOST)
    errors = []

    def work(i):
        try:
            for j in range(300):
                key = (i, j % 7)
                assert dataset.recent("test entries", key, lambda: key, 3) == key
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(dataset.memo("test entries", dict)) == 3


def test_a_dataframe_next_to_device_rows_answers_as_numpy():
    import pandas as pd
    frame = pd.DataFrame(np.asarray(HOST[:, :3]), columns=["a", "b", "c"])
    rows = DEVICE[:, :3]
    _assert_same(jaximp.shapley_values(product, rows[:3], frame, feature_names=["a", "b", "c"]),
                 jaximp.shapley_values(product, np.asarray(rows[:3]), frame,
                                       feature_names=["a", "b", "c"]))
    _assert_same(jaximp.shapley_values(product, frame.iloc[:3], rows),
                 jaximp.shapley_values(product, frame.iloc[:3], np.asarray(rows)))
