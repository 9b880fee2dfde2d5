"""The plain functions' reuse of recent data and model wrappers never returns a stale result.

``partial_dependence``, ``partial_dependence_all``, ``permutation_importance`` and
``h_statistic`` keep the validated data of a small NumPy
array they were called on (found by its bytes and options) and the Predictor of a plain or
jitted function. Each test changes one thing those caches read and compares the second call
with a float64 NumPy reference, or with a call that takes no cached path (X as a list, the
model as a ``functools.partial``, neither of which is reused).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_same_program

import jaximp
from jaximp.methods._setup import prepare

N, P = 200, 4


def _data(seed=0, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=(N, P)).astype(dtype)


def _pd_reference(X, grid, weights=None, scale=1.0):
    """PD of x0 for f(X) = scale * (x0 * x1 + x2), in float64: g * mean(x1) + mean(x2)."""
    X = np.asarray(X, np.float64)
    w = np.ones(len(X)) if weights is None else np.asarray(weights, np.float64)
    mean = lambda column: np.sum(w * X[:, column]) / w.sum()  # noqa: E731
    return scale * (np.asarray(grid) * mean(1) + mean(2))


def _model(scale=1.0):
    return jax.jit(lambda A: scale * (A[:, 0] * A[:, 1] + A[:, 2]))


def _pd(model, X, **options):
    result = jaximp.partial_dependence(model, X, 0, grid_resolution=7, **options)
    return result, np.asarray(result.grid_values[0]), result.average[:, 0]


def test_pd_follows_an_array_changed_in_place():
    X, model = _data(), _model()
    _, grid, first = _pd(model, X)
    np.testing.assert_allclose(first, _pd_reference(X, grid), rtol=1e-5, atol=1e-6)
    X[:, 1] += 1.0  # the same object, other values
    X[:, 0] *= 2.0  # and another grid
    _, grid2, second = _pd(model, X)
    assert not np.allclose(grid, grid2)
    np.testing.assert_allclose(second, _pd_reference(X, grid2), rtol=1e-5, atol=1e-6)


def test_pd_of_every_feature_follows_an_array_changed_in_place_and_its_options():
    X, model = _data(), _model()

    def check(**options):
        pds = jaximp.partial_dependence_all(model, X, **options)
        fresh = jaximp.partial_dependence_all(model, X.tolist(), **options)  # never reused
        assert list(pds) == list(fresh)
        for name in pds:
            np.testing.assert_array_equal(pds[name].grid_values[0], fresh[name].grid_values[0])
            np.testing.assert_allclose(pds[name].average, fresh[name].average, rtol=1e-6)
        return pds

    first = check(grid_resolution=7)
    np.testing.assert_allclose(first["x0"].average[:, 0], _pd_reference(
        X, first["x0"].grid_values[0]), rtol=1e-5, atol=1e-6)
    X[:, 1] += 1.0  # the same object, other values
    X[:, 0] *= 2.0
    second = check(grid_resolution=7)
    assert not np.allclose(first["x0"].average, second["x0"].average)
    check(grid_resolution=5)
    check(grid_resolution=5, features=[2, 0])
    check(grid_resolution=5, percentiles=(0.1, 0.9))


def test_pd_follows_the_model_the_values_the_dtype_and_the_weights():
    X = _data()
    for scale in (1.0, 3.0):  # a different jitted function on the same data
        _, grid, average = _pd(_model(scale), X)
        np.testing.assert_allclose(average, _pd_reference(X, grid, scale=scale), rtol=1e-5,
                                   atol=1e-6)
    model = _model()
    for other in (_data(1), _data(0, np.float64) + 1e-3, _data(0, np.float64)):
        _, grid, average = _pd(model, other)  # other values, then the other dtype
        np.testing.assert_allclose(average, _pd_reference(other, grid), rtol=1e-5, atol=1e-6)
    weights = np.random.default_rng(2).uniform(size=N)
    for w in (weights, 2 * weights + 1, None):
        _, grid, average = _pd(model, X, sample_weight=w)
        np.testing.assert_allclose(average, _pd_reference(X, grid, w), rtol=1e-5, atol=1e-6)


def test_pd_follows_feature_and_output_names():
    X, model = _data(), _model()
    for names in (["a", "b", "c", "d"], ["p", "q", "r", "s"]):
        result = jaximp.partial_dependence(model, X, names[0], grid_resolution=5,
                                           feature_names=names)
        assert result.feature_names == (names[0],)
    two = jax.jit(lambda A: jnp.stack([A[:, 2], 2 * A[:, 2]], axis=1))
    mean = np.mean(X[:, 2].astype(np.float64))
    for outputs in (("u", "v"), ("v", "w"), None):
        model = two if outputs is None else jaximp.as_predictor(two, n_features=P,
                                                                output_names=outputs)
        result = jaximp.partial_dependence(model, X, 0, grid_resolution=5)
        assert result.output_names == (outputs or ("y0", "y1"))
        np.testing.assert_allclose(result.average, np.tile([mean, 2 * mean], (5, 1)),
                                   rtol=1e-5, atol=1e-6)


def test_the_wrapper_of_a_function_follows_its_width_names_and_example_shape():
    X = _data()
    two = jax.jit(lambda A: jnp.stack([A.sum(axis=tuple(range(1, A.ndim))),
                                       A.reshape(A.shape[0], -1)[:, 0]], axis=1))
    for outputs in (("u", "v"), ("v", "w"), None):
        _, predictor = prepare(two, X, output_names=outputs, reuse=True)
        assert predictor.output_names == (outputs or ("y0", "y1"))
    with pytest.raises(ValueError, match="output_names has 3 names"):
        prepare(two, X, output_names=("a", "b", "c"), reuse=True)
    for shape in ((N, P), (N, 2 * P), (N, 2, 3)):
        data = np.ones(shape, np.float32)
        dataset, predictor = prepare(two, data, reuse=True)
        rows = np.asarray(predictor(jnp.asarray(dataset.X[:2], jnp.float32)))
        np.testing.assert_allclose(rows, [[np.prod(shape[1:]), 1.0]] * 2)


def test_a_reused_call_still_refuses_bad_predictions_at_the_call():
    X = _data()
    jaximp.partial_dependence(_model(), X, 0, grid_resolution=5)
    bad = jax.jit(lambda A: jnp.log(A[:, 0]))  # NaN for the negative grid values
    with pytest.raises(FloatingPointError, match="NaN or infinite"):
        jaximp.partial_dependence(bad, X, 0, grid_resolution=5)


def _pfi(model, X, y, **options):
    return jaximp.permutation_importance(model, X, y, n_repeats=3, **options)


def _fresh_pfi(model, X, y, **options):
    """No cached path: X as a list and the model as a partial are never reused."""
    return jaximp.permutation_importance(functools.partial(model), np.asarray(X).tolist(), y,
                                         n_repeats=3, **options)


def _assert_same_importances(result, fresh):
    # the fresh call's model (a partial) is compiled apart: on a GPU it rounds otherwise
    assert_same_program(result.importances, fresh.importances, cpu_rtol=1e-6, cpu_atol=1e-9)
    np.testing.assert_allclose(result.info.baseline, fresh.info.baseline, rtol=1e-6)


def test_permutation_importance_follows_data_model_targets_and_key():
    X, model = _data(), _model()
    y = np.asarray(X[:, 0] * X[:, 1] + X[:, 2], np.float64) + 0.1
    for call in range(2):  # a repeated call gives the fresh call's numbers
        result = _pfi(model, X, y)
        _assert_same_importances(result, _fresh_pfi(model, X, y))
    prediction = X[:, 0].astype(np.float64) * X[:, 1] + X[:, 2]
    np.testing.assert_allclose(result.info.baseline, [np.mean((y - prediction) ** 2)],
                               rtol=1e-5)
    assert np.all(result.importances[3] == 0)  # x3 is not used by the model
    changes = [
        (_model(2.0), X, y, {}),  # another model
        (model, X, 2 * y, {}),  # other targets
        (model, X, y, {"random_state": 7}),  # other permutations
        (model, X, y, {"sample_weight": np.arange(N) % 3 + 1.0}),
    ]
    X[:, 2] = -X[:, 2]  # the same array, changed in place
    changes.append((model, X, y, {}))
    changes.append((model, X.astype(np.float64) + 1e-3, y, {}))  # another dtype and values
    for model_, X_, y_, options in changes:
        result = _pfi(model_, X_, y_, **options)
        _assert_same_importances(result, _fresh_pfi(model_, X_, y_, **options))


def test_permutation_importance_follows_output_names_and_losses():
    X = _data()
    y = np.stack([X[:, 0], X[:, 1]], axis=1).astype(np.float64)
    two = jax.jit(lambda A: jnp.stack([A[:, 0], 0.5 * A[:, 1]], axis=1))
    first = _pfi(two, X, y, loss="mse")
    renamed = jaximp.permutation_importance(two, X, y, n_repeats=3, loss="mse",
                                            feature_names=["a", "b", "c", "d"])
    assert renamed.feature_names == ("a", "b", "c", "d")
    np.testing.assert_array_equal(renamed.importances, first.importances)
    absolute = _pfi(two, X, y, loss="mae")
    _assert_same_importances(absolute, _fresh_pfi(two, X, y, loss="mae"))
    assert not np.allclose(absolute.importances, first.importances)


def test_a_plain_call_on_reused_data_is_set_up_once_per_options_data_and_targets(monkeypatch):
    """A plain permutation importance or H-statistic on a small array is set up once per
    model, data, targets and options: a repeated call skips the set-up, and a change to any
    of them (in place too, or an equal value of another type) sets up again and equals the
    call that takes no cached path."""
    from jaximp.methods import _hstat, _permutation

    set_ups = []
    for module in (_permutation, _hstat):
        original = module._set_up
        monkeypatch.setattr(module, "_set_up", lambda *a, original=original, **k: (
            set_ups.append(1), original(*a, **k))[1])
    X, model = _data(11), _model()
    y = np.asarray(X[:, 0] * X[:, 1] + X[:, 2], np.float64) + 0.1

    def check(X_, y_, expected_set_ups, **options):
        before = len(set_ups)
        result = _pfi(model, X_, y_, **options)
        assert len(set_ups) - before == expected_set_ups
        _assert_same_importances(result, _fresh_pfi(model, X_, y_, **options))
        return result

    first = check(X, y, 1)
    check(X, y, 0)  # repeated: kept
    check(X.copy(), y.copy(), 0)  # equal bytes in other arrays: kept
    for options in ({"random_state": 3}, {"kind": "ratio"}, {"loss": "mae"},
                    {"features": [0, 1]}, {"features": (0, 1)}):
        check(X, y, 1, **options)
    y[:] = 2 * y  # the targets changed in place
    assert not np.allclose(check(X, y, 1).info.baseline, first.info.baseline)
    X[:, 1] += 1.0  # the data changed in place
    check(X, y, 1)
    check(X, y, 1, sample_weight=np.arange(N) % 3 + 1.0)  # weights: set up every call
    check(X, y, 1, sample_weight=np.arange(N) % 3 + 1.0)
    h = jaximp.h_statistic(model, X, n_max=60)
    before = len(set_ups)
    again = jaximp.h_statistic(model, X, n_max=60)
    assert len(set_ups) == before
    np.testing.assert_array_equal(again.pairwise.values, h.pairwise.values)
    fresh = jaximp.h_statistic(functools.partial(model), X.tolist(), n_max=60)
    np.testing.assert_allclose(again.pairwise.values, fresh.pairwise.values, rtol=1e-6)


def test_equal_bytes_and_options_give_the_same_dataset_and_predictor():
    X, model = _data(), _model()
    first = prepare(model, X, reuse=True)
    again = prepare(model, X.copy(), reuse=True)
    assert again[0] is first[0] and again[1] is first[1]
    assert prepare(model, X, reuse=False)[0] is not first[0]
    assert prepare(functools.partial(model), X, reuse=True)[0] is not first[0]
    assert prepare(model, X, reuse=True, feature_names=list("abcd"))[0] is not first[0]
    X[0, 0] += 1.0
    changed = prepare(model, X, reuse=True)[0]
    assert changed is not first[0] and changed.X[0, 0] == np.float64(X[0, 0])
    assert first[0].X[0, 0] != changed.X[0, 0]  # the kept copy is not the caller's


def test_a_function_with_a_predict_method_stays_a_host_model():
    X = _data()

    def linear(A):
        return np.asarray(A, np.float64) @ np.arange(P)

    linear.predict = linear  # an object with predict: called on the host, never traced
    _, predictor = prepare(linear, X, reuse=True)
    assert predictor.host
    result = jaximp.partial_dependence(linear, X, 1, grid_resolution=4)
    grid = np.asarray(result.grid_values[0])
    expected = grid + np.asarray(X, np.float64)[:, [0, 2, 3]].mean(axis=0) @ [0, 2, 3]
    np.testing.assert_allclose(result.average[:, 0], expected, rtol=1e-6)


def test_an_explainers_repeated_call_follows_every_option_seed_and_its_targets():
    """An Explainer sets a permutation importance up once per options: each call, repeated
    or changed (an option, the seed, equal values of another type, a random state that
    draws), equals the plain function's fresh call; the Explainer keeps a read-only copy of
    its targets, which the caller's later changes do not reach."""
    X, model = _data(), _model()
    y = np.asarray(X[:, 0] * X[:, 1] + X[:, 2], np.float64) + 0.1
    ex = jaximp.Explainer(model, X, y)

    def check(**options):
        result = ex.permutation_importance(**options)
        fresh = jaximp.permutation_importance(model, X, y, **options)
        np.testing.assert_array_equal(result.importances, fresh.importances)
        np.testing.assert_array_equal(result.info.baseline, fresh.info.baseline)
        return result

    first = check()
    prediction = X[:, 0].astype(np.float64) * X[:, 1] + X[:, 2]
    np.testing.assert_allclose(first.info.baseline, [np.mean((y - prediction) ** 2)],
                               rtol=1e-5)
    assert np.all(first.importances[3] == 0)  # x3 is not used by the model
    for options in ({}, {"random_state": 7}, {"random_state": 0}, {"n_repeats": 2},
                    {"features": [1, 0]}, {"features": (1, 0)},
                    {"features": [True, False, True, False]}, {"loss": "mae"},
                    {"kind": "ratio"}, {"output": 0}, {"memory_budget": 1 << 20},
                    {"max_samples": 50}, {"n_bootstrap": 2}, {}):
        check(**options)
    mask = ex.permutation_importance(features=[True, False, True, False])
    assert mask.feature_names == ("x0", "x2")  # not the positions 1 and 0
    assert ex.permutation_importance(random_state=7).importances.tolist() != \
        first.importances.tolist()
    kept = y.copy()
    y[:] = 2 * y  # the caller's targets changed in place: the Explainer holds its own copy
    again = ex.permutation_importance()
    np.testing.assert_array_equal(again.importances, first.importances)
    assert not ex.y.flags.writeable and np.array_equal(ex.y, kept)
    ex = jaximp.Explainer(model, X, y)  # a new Explainer for the new targets
    changed = check()
    assert not np.allclose(changed.info.baseline, first.info.baseline)
    drawn = ex.permutation_importance(random_state=np.random.default_rng(3))
    fresh = jaximp.permutation_importance(model, X, y, random_state=np.random.default_rng(3))
    np.testing.assert_array_equal(drawn.importances, fresh.importances)


def _counted_calls(monkeypatch, name: str) -> list:
    """The calls an Explainer's bound method makes of the function ``name`` (the options of
    each), counted from now on."""
    import jaximp._explainer as explainer_module

    calls, original = [], getattr(explainer_module, name)

    @functools.wraps(original)  # keeps its marks (a warm function)
    def counted(*args, **options):
        calls.append(options)
        return original(*args, **options)

    monkeypatch.setattr(explainer_module, name, counted)
    return calls


def test_an_explainers_repeated_bound_call_is_its_first_calls_run(monkeypatch):
    """A bound call repeated with the same options, seed and default budget skips its
    function (its validation and set-up look-up) and evaluates the run the first call set
    up; a new option, a new default seed or budget, or a seed that draws goes through the
    function again, and every answer equals the plain function's."""
    X, model = _data(), _model()
    y = np.asarray(X[:, 0] * X[:, 1] + X[:, 2], np.float64)
    ex = jaximp.Explainer(model, X, y)
    calls = _counted_calls(monkeypatch, "permutation_importance")

    def check(expected_calls, **options):
        result = ex.permutation_importance(n_repeats=3, **options).importances
        fresh = jaximp.permutation_importance(
            model, X, y, n_repeats=3, **{"random_state": ex.random_state, **options})
        np.testing.assert_array_equal(result, fresh.importances)
        assert len(calls) == expected_calls
        return result

    first = check(1)
    np.testing.assert_array_equal(check(1), first)  # repeated: the kept run
    check(2, loss="mae")
    check(2, loss="mae")
    ex.random_state = 5  # a new default seed: a new call, then kept
    assert not np.array_equal(check(3), first)
    check(3)
    monkeypatch.setenv("JAXIMP_MEMORY_BUDGET", str(1 << 16))  # a new default budget
    check(4)
    drawn = [ex.permutation_importance(n_repeats=3, random_state=None).importances
             for _ in range(2)]
    assert len(calls) == 6 and not np.array_equal(*drawn)  # a draw each call


def test_an_explainers_repeated_pd_is_its_first_calls_run(monkeypatch):
    """A PD repeated on an Explainer with the same features and options is its first call's
    run; new features or options go through the function again; every curve equals the
    plain function's and a float64 reference."""
    X, model = _data(), _model()
    ex = jaximp.Explainer(model, X)
    calls = _counted_calls(monkeypatch, "partial_dependence")
    for feature, resolution, expected_calls in ((0, 8, 1), (0, 8, 1), ("x0", 8, 2),
                                                (0, 5, 3), (0, 8, 3)):
        result = ex.partial_dependence(feature, grid_resolution=resolution)
        fresh = jaximp.partial_dependence(model, X, feature, grid_resolution=resolution)
        np.testing.assert_array_equal(result.average, fresh.average)
        np.testing.assert_allclose(result.average[:, 0],
                                   _pd_reference(X, result.grid_values[0]), rtol=1e-5,
                                   atol=1e-6)
        assert len(result.grid_values[0]) == resolution and len(calls) == expected_calls


def test_a_repeated_loss_of_whole_items_plans_its_groups_once(monkeypatch):
    """A permutation importance with a loss that needs each item's predictions whole (a
    callable loss, evaluated a group of items at a time) plans and launches its groups once on
    an Explainer, here in three groups under a small budget; each repeat equals the plain
    function's call and a NumPy reference of its baseline."""
    from jaximp.engine import _engine

    launched = []
    launch = _engine._launch
    monkeypatch.setattr(_engine, "_launch", lambda *args: launched.append(launch(*args))
                        or launched[-1])
    X, model = np.random.default_rng(1).normal(size=(2730, P)).astype(np.float32), _model()
    y = np.asarray(X[:, 0] * X[:, 1] + X[:, 2], np.float64) + 0.5

    def mean_absolute(y_true, y_pred):
        return np.mean(np.abs(np.asarray(y_true) - np.asarray(y_pred)))

    # 9 items of 2,730 float32 predictions, 3 to half of a 64 KiB budget
    options = dict(loss=mean_absolute, n_repeats=2, memory_budget=1 << 16)
    ex = jaximp.Explainer(model, X, y)
    first = ex.permutation_importance(**options)
    groups = len(launched)
    assert groups == 3
    for _ in range(2):
        again = ex.permutation_importance(**options)
        np.testing.assert_array_equal(again.importances, first.importances)
    assert len(launched) == groups
    np.testing.assert_array_equal(
        first.importances, jaximp.permutation_importance(model, X, y, **options).importances)
    prediction = np.asarray(X[:, 0], np.float64) * X[:, 1] + X[:, 2]
    np.testing.assert_allclose(first.info.baseline, [np.mean(np.abs(y - prediction))],
                               rtol=1e-5)


def test_explainers_sharing_a_dataset_answer_with_their_own_models():
    """Two Explainers made on one Dataset object (the data validated once, two models
    compared on it) keep their repeated calls apart: each answers with its own model, as
    the plain function of that model does."""
    X = _data()
    y = np.asarray(X[:, 0], np.float64)
    dataset = jaximp.as_dataset(X)
    first, second = _model(), _model(scale=100.0)
    ex_first, ex_second = jaximp.Explainer(first, dataset, y), jaximp.Explainer(second, dataset, y)
    assert ex_first.dataset is ex_second.dataset
    for _ in range(2):  # the second round repeats each call
        for ex, model, scale in ((ex_first, first, 1.0), (ex_second, second, 100.0)):
            result = ex.partial_dependence(0, grid_resolution=5)
            np.testing.assert_allclose(result.average[:, 0], _pd_reference(
                X, result.grid_values[0], scale=scale), rtol=1e-5, atol=1e-5 * scale)
            np.testing.assert_array_equal(
                ex.permutation_importance(n_repeats=2).importances,
                jaximp.permutation_importance(model, X, y, n_repeats=2).importances)
            np.testing.assert_array_equal(ex.shapley_values().values,
                                          jaximp.shapley_values(model, X, X).values)


def test_a_repeated_call_follows_model_parameters_changed_in_place():
    """A model whose parameters are NumPy arrays (a callable pytree, Flax variables read
    from a file) may have them changed in place between calls: an Explainer's repeated call,
    and a plain call repeated on the same small array and Predictor, answer with the new
    values, as a fresh call does."""
    import dataclasses

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Linear:
        w: np.ndarray

        def __call__(self, A):
            return A @ self.w

    X = _data(dtype=np.float64)
    y = X @ np.arange(1.0, P + 1)
    model = Linear(np.arange(1.0, P + 1).astype(np.float32))
    ex = jaximp.Explainer(model, X, y)
    predictor = jaximp.as_predictor(model, n_features=P)
    for scale in (1.0, 10.0, 1.0):
        model.w[:] = scale * np.arange(1.0, P + 1)
        fresh_model = Linear(model.w.copy())
        pd = ex.partial_dependence(0, grid_resolution=4)
        np.testing.assert_allclose(pd.average, jaximp.partial_dependence(
            fresh_model, X, 0, grid_resolution=4).average, rtol=1e-6)
        np.testing.assert_allclose(pd.average[:, 0], scale * (np.asarray(pd.grid_values[0])
                                   + (X[:, 1:] @ np.arange(2.0, P + 1)).mean()), rtol=1e-5)
        np.testing.assert_allclose(
            jaximp.partial_dependence(predictor, X, 0, grid_resolution=4).average, pd.average,
            rtol=1e-6)
        np.testing.assert_array_equal(
            ex.permutation_importance(n_repeats=2).importances,
            jaximp.permutation_importance(fresh_model, X, y, n_repeats=2).importances)


def test_an_explainers_repeated_h_statistic_follows_every_option_and_seed():
    """An Explainer sets an H-statistic up once per options: each call, repeated or changed,
    equals the plain function's fresh call, and a product of two features interacts."""
    X = _data()
    model = _model()
    ex = jaximp.Explainer(model, X)

    def check(**options):
        result = ex.h_statistic(n_max=60, **options)
        fresh = jaximp.h_statistic(model, X, n_max=60, **options)
        np.testing.assert_array_equal(result.pairwise.values, fresh.pairwise.values)
        np.testing.assert_array_equal(result.overall.importances, fresh.overall.importances)
        return result

    first = check()
    for options in ({}, {"random_state": 1}, {"random_state": 0}, {"pairs": [(0, 2)]},
                    {"features": [0, 1, 2]}, {"normalized": False}, {"squared": False},
                    {"n_bootstrap": 2}, {"eps": 1e-3}, {}):
        check(**options)
    frame = first.to_frame().set_index(["feature_1", "feature_2"])["interaction"]
    assert frame[("x0", "x1")] > 0.1  # x0 * x1 in the model
    assert abs(frame[("x2", "x3")]) < 1e-6  # additive: no interaction
    assert ex.h_statistic(n_max=60, random_state=1).pairwise.values.tolist() != \
        first.pairwise.values.tolist()


def test_a_warm_call_follows_the_default_budget_and_refuses_another_float_mode(monkeypatch):
    """A repeated Explainer call sets up again when the default memory budget from the
    environment changes; after a switch of the float mode (x64) it raises, since the rows
    and model it keeps are in the mode it was made in (a fresh Explainer in the new mode
    matches); a plain call follows the float mode."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] * X[:, 1]
    ex = jaximp.Explainer(lambda A: A[:, 0] * A[:, 1], X, y)
    first = ex.permutation_importance(n_repeats=2).importances
    with jax.enable_x64(True):
        with pytest.raises(RuntimeError, match="jax_enable_x64=False"):
            ex.permutation_importance(n_repeats=2)
        wide = jaximp.Explainer(lambda A: A[:, 0] * A[:, 1], X, y).permutation_importance(
            n_repeats=2)
        plain = jaximp.permutation_importance(lambda A: A[:, 0] * A[:, 1], X, y, n_repeats=2)
    np.testing.assert_allclose(wide.importances, first, rtol=1e-5)
    np.testing.assert_array_equal(plain.importances, wide.importances)
    monkeypatch.setenv("JAXIMP_MEMORY_BUDGET", str(1 << 20))
    small = ex.permutation_importance(n_repeats=2).importances
    np.testing.assert_array_equal(small, first)
    assert len(ex.dataset.memo("warm calls", dict)) == 2


def test_an_explainers_repeated_evaluation_is_planned_once_per_default_budget(monkeypatch):
    """A PD repeated on an Explainer reuses its evaluation (its checks, chunk plan and device
    arrays: the kept plan and reducer are the same objects) until the default memory budget
    from the environment changes; then it is planned again, in blocks that fit the new
    budget, and gives the same numbers."""
    from jaximp.engine import _engine

    launched = []
    launch = _engine._launch
    monkeypatch.setattr(_engine, "_launch", lambda *args: launched.append(launch(*args))
                        or launched[-1])
    X = _data()
    ex = jaximp.Explainer(_model(), X)
    result = ex.partial_dependence(0, grid_resolution=20)
    first = result.average
    np.testing.assert_array_equal(ex.partial_dependence(0, grid_resolution=20).average, first)
    assert len(launched) == 1
    monkeypatch.setenv("JAXIMP_MEMORY_BUDGET", str(1 << 16))
    small = ex.partial_dependence(0, grid_resolution=20).average
    assert len(launched) == 2
    assert launched[1].sizes.items_per_block < launched[0].sizes.items_per_block
    np.testing.assert_allclose(small, first, rtol=1e-6)
    np.testing.assert_allclose(first[:, 0], _pd_reference(X, result.grid_values[0]),
                               rtol=1e-5, atol=1e-6)


def test_a_read_only_copy_is_hashed_once_and_forgotten_with_it(monkeypatch):
    """digest() of a read_only_copy (an Explainer's targets) hashes it once; a writeable
    array, a view, or a caller's array marked read-only (a view may still write to it) is
    hashed on every call; the kept digest goes with its array."""
    from jaximp.methods import _setup

    hashed = []
    sha = _setup._sha
    monkeypatch.setattr(_setup, "_sha", lambda content: hashed.append(1) or sha(content))
    big = np.random.default_rng(0).normal(size=(1 << 18) + 1)  # past the small-array memo
    frozen = _setup.read_only_copy(big)
    first = _setup.digest(frozen)
    assert _setup.digest(frozen) == first and len(hashed) == 1
    assert _setup.digest(big) == first and len(hashed) == 2  # writeable: hashed again
    assert _setup.digest(frozen[1:]) != first and len(hashed) == 3  # a view: not kept
    marked = big.copy()
    view = marked[:]
    marked.flags.writeable = False  # the caller's flag: the view still writes
    assert _setup.digest(marked) == first and len(hashed) == 4
    view[0] += 1.0
    assert _setup.digest(marked) != first and len(hashed) == 5
    key = id(frozen)
    assert key in _setup._READ_ONLY_DIGESTS
    del frozen
    assert key not in _setup._READ_ONLY_DIGESTS


def test_a_plain_call_on_a_large_array_keeps_its_draws_not_its_data(monkeypatch):
    """A plain call on an array too large to keep (over 1 MB) keeps only its permutations,
    by the random state and n: a call on other data with the same state reuses them and
    still reads its own data (a float64 NumPy reference over the engine's permutations); a
    new random state draws anew."""
    from conftest import engine_permutations

    from jaximp.engine import _device_arrays, key_bits
    from jaximp.methods._permutation import _plan

    n, R = 40_000, 2  # 40,000 x 4 float64: 1.28 MB
    rng = np.random.default_rng(5)
    model = _model()
    monkeypatch.setattr(_device_arrays, "_KEPT_SOURCE_ROWS", jaximp.data.Recent())

    def reference(X, y, seed):
        plan = _plan(P, tuple((j,) for j in range(P)), tuple(range(P)), R,
                     tuple(key_bits(jax.random.key(seed))))
        perms = engine_permutations(plan, n)
        f = lambda A: A[:, 0] * A[:, 1] + A[:, 2]  # noqa: E731
        base = np.mean((y - f(X)) ** 2)
        out = np.empty((P, 1, R))
        for j in range(P):
            for r in range(R):
                Z = X.copy()
                Z[:, j] = X[perms[1 + j * R + r], j]
                out[j, 0, r] = np.mean((y - f(Z)) ** 2) - base
        return out

    for k, seed in enumerate((0, 0, 3)):
        X = rng.normal(size=(n, P)).astype(np.float32).astype(np.float64)
        y = X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(size=n)
        got = jaximp.permutation_importance(model, X, y, n_repeats=R, random_state=seed)
        np.testing.assert_allclose(got.importances, reference(X, y, seed), rtol=2e-4,
                                   atol=2e-5)
        assert len(_device_arrays._KEPT_SOURCE_ROWS) == (1 if k < 2 else 2)


def test_a_plain_shapley_call_on_a_small_background_is_set_up_once_per_its_bytes(monkeypatch):
    """A small background array among the options is kept by its bytes: a repeated plain
    Shapley call skips its set-up (plans included); the same background changed in place,
    or another one, sets up again and equals the exact values of the game by hand (the model
    x0 x1 + x2, each v(S) a mean over the background, in float64)."""
    from jaximp.methods import _shapley

    set_ups = []
    original = _shapley._set_up_values
    monkeypatch.setattr(_shapley, "_set_up_values", lambda *a, **k: (
        set_ups.append(1), original(*a, **k))[1])
    X, model = _data(12)[:20], _model()
    B = _data(13)[:30].astype(np.float64)

    def by_hand(B):
        # x0 and x1 share the game of x0 x1 (its four coalition values); x2 gets
        # x2 - mean(z2), x3 nothing
        x, z = X.astype(np.float64), B
        v = {(): np.mean(z[:, 0] * z[:, 1]), (0,): x[:, 0] * z[:, 1].mean(),
             (1,): x[:, 1] * z[:, 0].mean(), (0, 1): x[:, 0] * x[:, 1]}
        phi0 = 0.5 * ((v[(0,)] - v[()]) + (v[(0, 1)] - v[(1,)]))
        phi1 = 0.5 * ((v[(1,)] - v[()]) + (v[(0, 1)] - v[(0,)]))
        phi2 = x[:, 2] - z[:, 2].mean()
        return np.stack([phi0, phi1, phi2, np.zeros(len(x))], axis=1)

    def check(B_, expected_set_ups):
        before = len(set_ups)
        values = np.asarray(jaximp.shapley_values(model, X, B_).values)[..., 0]
        assert len(set_ups) - before == expected_set_ups
        np.testing.assert_allclose(values, by_hand(B_), rtol=1e-5, atol=1e-5)

    check(B, 1)
    check(B, 0)  # repeated: kept
    kept_bytes = B.copy()
    check(kept_bytes, 0)  # equal bytes in another array: kept
    B[:, 2] += 1.0  # changed in place: set up again
    check(B, 1)
    check(kept_bytes, 0)  # the old bytes again: the kept set-up holds a copy of them
    check(B[:25], 1)  # another background
    check(B.astype(np.float32), 1)  # another dtype


def test_an_evaluation_on_an_explainers_data_cannot_go_stale_through_its_reducer():
    """``evaluate`` keeps an evaluation per plan and reducer object on an Explainer's data (its
    arrays on the devices). A reducer holds read-only copies of its arrays, as a plan does: the
    caller's weights changed in place afterwards leave its result as it was, and its own
    arrays refuse a change, so a kept evaluation never answers with stale weights."""
    X = _data()
    ex = jaximp.Explainer(_model(), X)
    weights = np.ones((1, X.shape[0]))
    reducer = jaximp.Mean(weights)
    plan = jaximp.at_values([[True] + [False] * (X.shape[1] - 1)], [0], X[:1], [0])
    first = jaximp.evaluate(ex.predictor, ex.dataset, plan, reducer)
    weights[:, : X.shape[0] // 2] = 0.0
    np.testing.assert_array_equal(jaximp.evaluate(ex.predictor, ex.dataset, plan, reducer),
                                  first)
    with pytest.raises(ValueError, match="read-only"):
        reducer.weights[0, 0] = 2.0
    changed = jaximp.evaluate(ex.predictor, ex.dataset, plan, jaximp.Mean(weights))
    kept = np.asarray(X[X.shape[0] // 2:], np.float64)  # the rows still weighted
    np.testing.assert_allclose(changed[0, 0, 0], np.mean(X[0, 0] * kept[:, 1] + kept[:, 2]),
                               rtol=1e-5)
