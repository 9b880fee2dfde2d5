"""X given as a jax.Array on one device stays there: it is validated and summarized on the
device, its host copy is made only when a method needs host rows, and every answer equals
the same call on the NumPy copy of X."""

import dataclasses
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_same_program

import jaximp
from jaximp.data import GRID_STRATEGIES, as_dataset, feature_grid
from jaximp.data import _device
from jaximp.data._data import HOST_COPY

RNG = np.random.default_rng(0)
N = 120
HOST = np.column_stack([
    RNG.normal(size=N),
    RNG.uniform(-2.0, 2.0, size=N).round(1),  # ties: fewer distinct values than rows
    RNG.integers(0, 4, size=N),  # an integer-coded categorical column
    RNG.normal(size=N) * 1e3,
]).astype(np.float32)
DEVICE = jnp.asarray(HOST)
Y = np.asarray(HOST[:, 0] * HOST[:, 1] + np.sin(HOST[:, 3] / 1e3), np.float64)


@pytest.fixture(params=["device sort", "numpy sort of a cpu view"])
def sort_where(request, monkeypatch):
    """Columns sorted by XLA on the device, and (on the CPU backend, where device memory is
    host memory) by NumPy on a view of the device column: both give the host path's grids."""
    if request.param == "device sort":
        monkeypatch.setattr(_device, "SORTED_BY_NUMPY", ())
    return request.param


def model(A):
    return A[:, 0] * A[:, 1] + jnp.sin(A[:, 3] / 1e3) + 0.1 * A[:, 2]


def _host_copy_made(dataset) -> bool:
    return HOST_COPY in dataset._memo


def _equal(a, b):
    """Two results agree in every array they hold, to float64 rounding."""
    if hasattr(a, "overall"):  # an H-statistic: its overall and pairwise statistics
        _equal(a.overall, b.overall)
        a, b = a.pairwise, b.pairwise
    if not hasattr(a, "average") and hasattr(a, "__iter__"):  # several partial dependences
        assert list(a) == list(b)
        for name in a:
            _equal(a[name], b[name])
        return
    names = ("average", "individual", "importances_mean", "importances", "values", "centred")
    compared = 0
    for name in names:
        left = getattr(a, name, None)
        if isinstance(left, (np.ndarray, jax.Array)):
            assert_same_program(left, getattr(b, name), cpu_rtol=1e-12)
            compared += 1
    assert compared
    for name in ("grid_values", "feature_names", "feature_sets"):
        assert getattr(a, name, None) == getattr(b, name, None)


def test_construction_reads_no_rows_and_describes_them_as_numpy(sort_where):
    with jax.transfer_guard_device_to_host("disallow"):  # enforced on accelerators
        dataset = as_dataset(DEVICE, categorical=[2])
        assert dataset.n_rows == N and dataset.n_columns == 4
    reference = as_dataset(np.asarray(DEVICE), categorical=[2])
    assert not _host_copy_made(dataset) and dataset.device_X is not None
    assert dataset.features == reference.features
    assert dataset.features[2].levels == tuple(np.unique(HOST[:, 2]).astype(int).tolist())
    assert not _host_copy_made(dataset)
    # the host copy, when read, is the NumPy path's matrix, made once
    assert np.array_equal(dataset.X, reference.X) and dataset.X is dataset.X
    assert _host_copy_made(dataset) and not dataset.X.flags.writeable


@pytest.mark.parametrize("strategy", GRID_STRATEGIES)
@pytest.mark.parametrize("grid_resolution", [2, 7, 40, 200])
def test_grids_on_the_device_equal_numpys_bit_for_bit(strategy, grid_resolution, sort_where):
    dataset = as_dataset(DEVICE, categorical=[2])
    reference = as_dataset(np.asarray(DEVICE), categorical=[2])
    for feature in dataset.features:
        got = feature_grid(dataset, feature, strategy=strategy,
                           grid_resolution=grid_resolution, percentiles=(0.1, 0.9))
        want = feature_grid(reference, feature, strategy=strategy,
                            grid_resolution=grid_resolution, percentiles=(0.1, 0.9))
        assert got[0].dtype == want[0].dtype == np.float64
        assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    assert not _host_copy_made(dataset)


def test_grids_leave_missing_values_out_as_numpy_does(sort_where):
    values = HOST.copy()
    values[::7, 0] = np.nan
    dataset = as_dataset(jnp.asarray(values), allow_missing=True)
    reference = as_dataset(values.astype(np.float64), allow_missing=True)
    for strategy in GRID_STRATEGIES:
        got = feature_grid(dataset, dataset.features[0], strategy=strategy, grid_resolution=9)
        want = feature_grid(reference, reference.features[0], strategy=strategy,
                            grid_resolution=9)
        assert np.array_equal(got[0], want[0])
    # the deciles of the column, the rug of a PD plot: np.quantile's interpolation differs,
    # so compare with scipy's plotting positions written out in float64
    present = np.sort(values[:, 0][~np.isnan(values[:, 0])].astype(np.float64))
    prob = np.arange(1, 10) / 10
    aleph = present.size * prob + (0.4 + prob * (1 - 0.4 - 0.4))
    k = np.floor(np.clip(aleph, 1, present.size - 1)).astype(int)
    gamma = np.clip(aleph - k, 0, 1)
    want = (1 - gamma) * present[k - 1] + gamma * present[k]
    np.testing.assert_array_equal(dataset.column_order(0).quantiles(prob), want)
    assert not _host_copy_made(dataset)


def test_a_column_of_one_value_or_only_missing_values_is_refused_as_with_numpy(sort_where):
    values = HOST.copy()
    values[:, 1] = 3.0
    values[:, 3] = np.nan
    for X in (jnp.asarray(values), values.astype(np.float64)):
        dataset = as_dataset(X, allow_missing=True)
        with pytest.raises(ValueError, match=r"single distinct value \(3\)"):
            feature_grid(dataset, dataset.features[1])
        with pytest.raises(ValueError, match="holds only missing values"):
            feature_grid(dataset, dataset.features[3])


CALLS = {
    "partial_dependence": lambda X: jaximp.partial_dependence(
        model, X, [0, 2], grid_resolution=8, kind="both"),
    "partial_dependence_all": lambda X: jaximp.partial_dependence_all(
        model, X, grid_resolution=6),
    "permutation_importance": lambda X: jaximp.permutation_importance(
        model, X, Y, n_repeats=3, random_state=4),
    "permutation_importance_subsample": lambda X: jaximp.permutation_importance(
        model, X, Y, n_repeats=2, max_samples=50, random_state=1),
    "h_statistic": lambda X: jaximp.h_statistic(model, X, features=[0, 1, 3], n_max=60,
                                                random_state=2),
    "pd_importance": lambda X: jaximp.pd_importance(model, X, grid_resolution=6),
    "pd_interaction": lambda X: jaximp.pd_interaction(model, X, pairs=[(0, 1)],
                                                      grid_resolution=5),
}


@pytest.mark.parametrize("name", CALLS)
def test_a_function_never_copies_device_rows_to_the_host(name, sort_where):
    dataset = as_dataset(DEVICE, categorical=[2])
    with jax.transfer_guard_device_to_host("disallow"):
        got = CALLS[name](dataset)
    assert not _host_copy_made(dataset)
    _equal(got, CALLS[name](as_dataset(np.asarray(DEVICE), categorical=[2])))


def test_an_explainer_never_copies_device_rows_to_the_host():
    explainer = jaximp.Explainer(model, DEVICE, Y, categorical=[2])
    reference = jaximp.Explainer(model, np.asarray(DEVICE), Y, categorical=[2])
    calls = {
        "pd": lambda ex: ex.partial_dependence(0, grid_resolution=8),
        "pd_all": lambda ex: ex.partial_dependence_all(grid_resolution=6),
        "pfi": lambda ex: ex.permutation_importance(n_repeats=2),
        "h": lambda ex: ex.h_statistic(features=[0, 1], n_max=50),
        "pdi": lambda ex: ex.pd_importance(grid_resolution=6),
    }
    for name, call in calls.items():
        with jax.transfer_guard_device_to_host("disallow"):
            got = call(explainer)
        _equal(got, call(reference))
    assert not _host_copy_made(explainer.dataset)


def test_a_method_that_needs_host_rows_makes_the_copy_once():
    dataset = as_dataset(DEVICE)
    result = jaximp.ale(model, dataset, 0)
    copy = dataset.X
    assert _host_copy_made(dataset) and copy is dataset.X
    _equal(result, jaximp.ale(model, np.asarray(DEVICE), 0))


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_bad_values_give_numpys_messages(bad):
    values = HOST.copy()
    values[9, 3] = bad
    values[5, 1] = bad
    for X in (jnp.asarray(values), values):
        with pytest.raises(ValueError, match=r"X contains 2 NaN or infinite values \(first at "
                                             r"row 5, column 'x1'\)"):
            as_dataset(X)


def test_infinite_values_are_refused_under_allow_missing_as_with_numpy():
    values = HOST.copy()
    values[3, 0] = np.nan
    values[7, 2] = -np.inf
    for X in (jnp.asarray(values), values):
        with pytest.raises(ValueError, match=r"1 infinite values \(first at row 7, column "
                                             r"'x2'\)"):
            as_dataset(X, allow_missing=True)
    dataset = as_dataset(jnp.asarray(np.where(np.isinf(values), 0, values)),
                         allow_missing=True)
    assert dataset.has_missing and not _host_copy_made(dataset)
    assert not as_dataset(DEVICE).has_missing


def test_categorical_codes_and_one_hot_groups_are_checked_as_with_numpy():
    values = HOST.copy()
    values[4, 2] = 1.5
    for X in (jnp.asarray(values), values):
        with pytest.raises(ValueError, match="'x2' must hold integer codes; got non-integers"):
            as_dataset(X, categorical=["x2"])
    onehot = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, N)]
    not_onehot = onehot.copy()
    not_onehot[0] = [1, 1, 0]
    for block, kind in ((onehot, "onehot"), (not_onehot, "continuous")):
        values = np.column_stack([HOST[:, :2], block])
        groups = {"color": ["x2", "x3", "x4"]}
        got = as_dataset(jnp.asarray(values), groups=groups)
        want = as_dataset(values, groups=groups)
        assert got.features == want.features and got.feature("color").kind == kind
        assert not _host_copy_made(got)
    with pytest.raises(ValueError, match="not one-hot"):
        feature_grid(got, got.feature("color"))


def test_integer_and_many_axis_device_rows_are_described_as_numpy(sort_where):
    integers = jnp.asarray(RNG.integers(0, 5, size=(40, 3)), jnp.int32)
    got, want = as_dataset(integers, categorical=[0]), as_dataset(np.asarray(integers),
                                                                    categorical=[0])
    assert got.features == want.features
    assert np.array_equal(feature_grid(got, got.features[1])[0],
                          feature_grid(want, want.features[1])[0])
    images = jnp.asarray(RNG.normal(size=(10, 2, 3)), jnp.float32)
    got = as_dataset(images)
    assert got.input_shape == (2, 3) and got.device_X.shape == (10, 6)
    assert got.column_names == as_dataset(np.asarray(images)).column_names
    assert not _host_copy_made(got)


def test_a_device_dataset_pickles_and_takes_rows_on_the_device():
    dataset = as_dataset(DEVICE, categorical=[2], sample_weight=np.arange(1.0, N + 1))
    again = pickle.loads(pickle.dumps(dataset))
    assert again.features == dataset.features and not _host_copy_made(again)
    assert np.array_equal(again.X, np.asarray(DEVICE, np.float64))
    rows = np.array([5, 0, 17, 17])
    taken = dataset.take(rows)
    assert isinstance(taken.device_X, jax.Array) and not _host_copy_made(taken)
    assert taken.n_rows == 4 and np.array_equal(taken.weights, rows + 1.0)
    assert np.array_equal(taken.X, np.asarray(HOST[rows], np.float64))
    assert not _host_copy_made(dataset)
    with pytest.raises(dataclasses.FrozenInstanceError):
        dataset.X = None
