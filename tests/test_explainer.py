"""jaximp.Explainer: every bound method equals its function, options and random states give
fresh results, and misuse is refused with messages that name the option."""

import pickle

import jax
import jax.numpy as jnp
import types

import numpy as np
import pandas as pd
import pytest
from conftest import assert_same_frame, assert_same_program

import jaximp
from jaximp.data import Deferred

RNG = np.random.default_rng(0)
N = 80
FRAME = pd.DataFrame({
    "a": RNG.normal(size=N),
    "b": RNG.uniform(size=N),
    "c": pd.Categorical(RNG.choice(["u", "v", "w"], N)),
    "d": RNG.normal(size=N),
})
WEIGHTS = RNG.uniform(0.5, 2.0, size=N)


NUMERIC = FRAME[["a", "b", "d"]].to_numpy()  # the gradient methods take numeric features


def smooth_model(A):
    return A[:, 0] * A[:, 1] + jnp.sin(A[:, 2])


def model(A):
    return jnp.stack([A[:, 0] * A[:, 1] + A[:, 2] - 0.5 * A[:, 3],
                      jnp.sin(A[:, 0]) + A[:, 3]], axis=1)


Y = np.asarray(model(jnp.asarray(jaximp.as_dataset(FRAME).X, jnp.float32)))
Y = Y + 0.1 * RNG.normal(size=Y.shape)
DATA = dict(sample_weight=WEIGHTS)


@pytest.fixture(scope="module")
def explainer():
    return jaximp.Explainer(model, FRAME, Y, **DATA)


def _same(a, b):
    """Two results hold equal arrays (every field that is an array)."""
    if hasattr(a, "to_frame"):
        fa, fb = a.to_frame(), b.to_frame()
        if isinstance(fa, dict):
            assert fa.keys() == fb.keys()
            for k in fa:
                assert_same_frame(fa[k], fb[k])
        else:
            assert_same_frame(fa, fb)
    for name in ("importances", "importances_mean", "values", "average", "individual",
                 "total", "base_values"):
        x, y = getattr(a, name, None), getattr(b, name, None)
        if isinstance(x, np.ndarray):
            assert_same_program(x, y)


BOUND = {  # method -> (bound call, the function call on the raw inputs)
    "partial_dependence": (
        lambda ex: ex.partial_dependence("b", kind="both", grid_resolution=6),
        lambda: jaximp.partial_dependence(model, FRAME, "b", kind="both", grid_resolution=6,
                                          **DATA)),
    "partial_dependence_all": (
        lambda ex: ex.partial_dependence_all(grid_resolution=5),
        lambda: jaximp.partial_dependence_all(model, FRAME, grid_resolution=5, **DATA)),
    "pd_importance": (
        lambda ex: ex.pd_importance(n_bootstrap=3),
        lambda: jaximp.pd_importance(model, FRAME, n_bootstrap=3, **DATA)),
    "pd_interaction": (
        lambda ex: ex.pd_interaction(grid_resolution=5),
        lambda: jaximp.pd_interaction(model, FRAME, grid_resolution=5, **DATA)),
    "h_statistic": (
        lambda ex: ex.h_statistic(n_max=40),
        lambda: jaximp.h_statistic(model, FRAME, n_max=40, **DATA)),
    "permutation_importance": (
        lambda ex: ex.permutation_importance(n_repeats=4),
        lambda: jaximp.permutation_importance(model, FRAME, Y, n_repeats=4, **DATA)),
    "average_loss": (
        lambda ex: ex.average_loss(by="b"),
        lambda: jaximp.average_loss(model, FRAME, Y, by="b", **DATA)),
    "loco_importance": (
        lambda ex: ex.loco_importance(strategy="mean", features=["a", "b", "d"]),
        lambda: jaximp.loco_importance(model, FRAME, Y, strategy="mean", features=["a", "b", "d"],
                                       **DATA)),
    "sensitivity_importance": (
        lambda ex: ex.sensitivity_importance(n_repeats=3),
        lambda: jaximp.sensitivity_importance(model, FRAME, Y, n_repeats=3, **DATA)),
    "partial_importance": (
        lambda ex: ex.partial_importance("a", grid_resolution=6),
        lambda: jaximp.partial_importance(model, FRAME, Y, "a", grid_resolution=6, **DATA)),
    "ale": (
        lambda ex: ex.ale("a", bins=5),
        lambda: jaximp.ale(model, FRAME, "a", bins=5, **DATA)),
    "ale_importance": (
        lambda ex: ex.ale_importance(features=["a", "b"], bins=5),
        lambda: jaximp.ale_importance(model, FRAME, features=["a", "b"], bins=5, **DATA)),
    "ale_interaction": (
        lambda ex: ex.ale_interaction(features=["a", "b", "d"], bins=4),
        lambda: jaximp.ale_interaction(model, FRAME, features=["a", "b", "d"], bins=4,
                                       **DATA)),
    "shapley_values": (
        lambda ex: ex.shapley_values(FRAME.iloc[:5], background_size=20),
        lambda: jaximp.shapley_values(model, FRAME.iloc[:5], FRAME, background_size=20,
                                      background_weight=WEIGHTS)),
    "shapley_interactions": (
        lambda ex: ex.shapley_interactions(FRAME.iloc[:3], background_size=20),
        lambda: jaximp.shapley_interactions(model, FRAME.iloc[:3], FRAME, background_size=20,
                                            background_weight=WEIGHTS)),
    "break_down": (
        lambda ex: ex.break_down(FRAME.iloc[:4], background_size=20),
        lambda: jaximp.break_down(model, FRAME.iloc[:4], FRAME, background_size=20,
                                  background_weight=WEIGHTS)),
    "explain": (
        lambda ex: ex.explain(methods=["pd_importance", "permutation"]),
        lambda: jaximp.explain(model, FRAME, Y, methods=["pd_importance", "permutation"],
                               **DATA)),
    "conditional_importance": (
        lambda ex: ex.conditional_importance(sampler="strata", n_repeats=2),
        lambda: jaximp.conditional_importance(model, FRAME, Y, sampler="strata", n_repeats=2,
                                              **DATA)),
    "sage_importance": (
        lambda ex: ex.sage_importance(estimator="exact", background_size=15),
        lambda: jaximp.sage_importance(model, FRAME, Y, estimator="exact",
                                       background_size=15, **DATA)),
    "sobol_indices": (
        lambda ex: jaximp.Explainer(model, FRAME).sobol_indices(n_bootstrap=3),
        lambda: jaximp.sobol_indices(model, FRAME, n_bootstrap=3)),
    "integrated_gradients": (
        lambda ex: jaximp.Explainer(smooth_model, NUMERIC).integrated_gradients(NUMERIC[:5], n_steps=8),
        lambda: jaximp.integrated_gradients(smooth_model, NUMERIC[:5], n_steps=8)),
    "expected_gradients": (
        lambda ex: jaximp.Explainer(smooth_model, NUMERIC).expected_gradients(NUMERIC[:5], n_samples=6),
        lambda: jaximp.expected_gradients(smooth_model, NUMERIC[:5], NUMERIC, n_samples=6)),
    "smoothgrad": (
        lambda ex: jaximp.Explainer(smooth_model, NUMERIC).smoothgrad(NUMERIC[:5], n_samples=3),
        lambda: jaximp.smoothgrad(smooth_model, NUMERIC[:5], n_samples=3)),
    "saliency": (
        lambda ex: jaximp.Explainer(smooth_model, NUMERIC).saliency(NUMERIC[:5]),
        lambda: jaximp.saliency(smooth_model, NUMERIC[:5])),
    "permutation_attributions": (
        lambda ex: ex.permutation_attributions(n_repeats=2, random_state=3),
        lambda: jaximp.permutation_attributions(model, FRAME, n_repeats=2, random_state=3,
                                                **DATA)),
    "ablation_attributions": (
        lambda ex: jaximp.Explainer(smooth_model, NUMERIC).ablation_attributions(
            NUMERIC[:6], baselines="mean"),
        lambda: jaximp.ablation_attributions(smooth_model, NUMERIC[:6], baselines="mean")),
    "input_x_gradient": (
        lambda ex: jaximp.Explainer(smooth_model, NUMERIC).input_x_gradient(NUMERIC[:5]),
        lambda: jaximp.input_x_gradient(smooth_model, NUMERIC[:5])),
    "dgsm": (
        lambda ex: jaximp.Explainer(smooth_model, NUMERIC).dgsm(n_bootstrap=3),
        lambda: jaximp.dgsm(smooth_model, NUMERIC, n_bootstrap=3)),
    "gradient_interactions": (
        lambda ex: jaximp.Explainer(smooth_model, NUMERIC).gradient_interactions(n_bootstrap=3),
        lambda: jaximp.gradient_interactions(smooth_model, NUMERIC, n_bootstrap=3)),
    "tree_shap": (
        lambda ex: jaximp.Explainer(_booster(), FRAME[["a", "b", "d"]]).tree_shap(),
        lambda: jaximp.tree_shap(_booster(), FRAME[["a", "b", "d"]])),
    "booster_importance": (
        lambda ex: jaximp.Explainer(_booster(), FRAME[["a", "b", "d"]]).booster_importance(
            "gain"),
        lambda: jaximp.booster_importance(_booster(), "gain")),
}


def _booster():
    lightgbm = pytest.importorskip("lightgbm")
    return lightgbm.LGBMRegressor(n_estimators=4, num_leaves=4, verbose=-1).fit(
        FRAME[["a", "b", "d"]], Y[:, 0])


def test_every_bound_method_is_covered():
    public = {name for name in vars(jaximp.Explainer) if not name.startswith("_")}
    assert public == set(BOUND)


@pytest.mark.parametrize("name", sorted(BOUND))
def test_bound_method_equals_its_function(explainer, name):
    bound, function = BOUND[name]
    _same(bound(explainer), function())


def test_a_reused_explainer_never_returns_a_stale_result(explainer):
    """Changing the random state or an option gives the fresh result, and going back gives
    the first one again."""
    def fresh(**options):
        return jaximp.permutation_importance(model, FRAME, Y, **DATA, **options)

    for options in ({"random_state": 0}, {"random_state": 1}, {"n_repeats": 2},
                    {"features": ["a", "c"]}, {"loss": "mae"}, {"kind": "ratio"},
                    {"random_state": 0}):
        _same(explainer.permutation_importance(**options), fresh(**options))
    for options in ({"grid_resolution": 4}, {"grid_resolution": 7}, {"grid": "quantile"},
                    {"percentiles": (0.1, 0.9)}, {"centered": True}, {"grid_resolution": 4}):
        _same(explainer.partial_dependence("a", **options),
              jaximp.partial_dependence(model, FRAME, "a", **DATA, **options))
    for options in ({"random_state": 3}, {"random_state": 4}, {"n_bootstrap": 3},
                    {"pairs": [("a", "c")]}, {"features": ["b", "c"]},
                    {"features": ["b", "c"], "total_over": "features"}, {"random_state": 3}):
        _same(explainer.h_statistic(n_max=30, **options),
              jaximp.h_statistic(model, FRAME, n_max=30, **DATA, **options))


def test_methods_that_keep_draws_bins_or_weightings_never_return_a_stale_result(explainer):
    """ALE, permutation attributions, sensitivity, Sobol indices, SAGE, conditional and PD
    importance keep what they drew or binned per option: each option gives the fresh result,
    and going back gives the first one again."""
    # ALE keeps its bins and plan per feature, bin count and bootstrap weighting
    for options in ({"bins": 5}, {"bins": 6}, {"bins": 5, "n_bootstrap": 3},
                    {"bins": 5, "n_bootstrap": 3, "random_state": 1},
                    {"bins": np.array([-3.0, 0.0, 3.0])}, {"bins": 5}):
        _same(explainer.ale("a", **options), jaximp.ale(model, FRAME, "a", **DATA, **options))
    for options in ({"features": ["a", "b"]}, {"features": ["a", "c"]}, {"bins": 4},
                    {"n_bootstrap": 3}, {"features": ["a", "b"]}):
        _same(explainer.ale_importance(**options),
              jaximp.ale_importance(model, FRAME, **DATA, **options))
    # permutation attributions keep their permutations and source rows per option
    for options in ({"random_state": 0}, {"random_state": 1}, {"n_repeats": 2},
                    {"random_state": 0}):
        first = explainer.permutation_attributions(**options)
        fresh = jaximp.permutation_attributions(model, FRAME, **DATA, **options)
        _same(first, fresh)
        np.testing.assert_array_equal(first.info["source_rows"], fresh.info["source_rows"])
    # sensitivity keeps its draws (or grids) and plan per option
    for options in ({"n_repeats": 2}, {"n_repeats": 2, "random_state": 1}, {"n_repeats": 3},
                    {"variant": "max"}, {"variant": "max", "n_values": 3},
                    {"features": ["a", "c"]}, {"n_repeats": 2}):
        _same(explainer.sensitivity_importance(**options),
              jaximp.sensitivity_importance(model, FRAME, Y, **DATA, **options))
    # Sobol indices keep their resampled rows, predictions and plan per option
    unweighted = jaximp.Explainer(smooth_model, NUMERIC)
    for options in ({"random_state": 0}, {"random_state": 1}, {"n_repeats": 2},
                    {"features": [0, 2]}, {"n_bootstrap": 4}, {"random_state": 0}):
        first = unweighted.sobol_indices(**options)
        fresh = jaximp.sobol_indices(smooth_model, NUMERIC, **options)
        _same(first.first, fresh.first)
        _same(first.total, fresh.total)
    numeric = jaximp.Explainer(smooth_model, NUMERIC, NUMERIC[:, 0] + 0.1)
    # SAGE keeps its game (predictions, background subsample, loss) per option
    for options in ({"background_size": 10}, {"background_size": 10, "random_state": 1},
                    {"background_size": 12}, {"loss": "mae", "background_size": 10},
                    {"target": "output", "background_size": 10},
                    {"n_permutations": 8, "estimator": "permutation", "background_size": 10},
                    {"background_size": 10}):
        y = None if options.get("target") == "output" else NUMERIC[:, 0] + 0.1
        exact = {"estimator": "exact"} if "estimator" not in options else {}
        _same(numeric.sage_importance(**exact, **options),
              jaximp.sage_importance(smooth_model, NUMERIC, y, **exact, **options))
    # conditional importance keeps its samplers' draws and plan per option
    for options in ({"random_state": 0}, {"random_state": 1}, {"n_repeats": 2},
                    {"features": [0, 2]}, {"sampler": "knockoff"}, {"loss": "mae"},
                    {"sampler": "strata"}, {"random_state": 0}):
        _same(numeric.conditional_importance(**options),
              jaximp.conditional_importance(smooth_model, NUMERIC, NUMERIC[:, 0] + 0.1,
                                            **options))
    # bootstrap weightings are kept with the PD plans by their contents
    for options in ({"n_bootstrap": 3, "random_state": 0}, {"n_bootstrap": 3, "random_state": 1},
                    {}, {"n_bootstrap": 4}, {"grid_resolution": 7},
                    {"n_bootstrap": 3, "random_state": 0}):
        _same(explainer.pd_importance(**options),
              jaximp.pd_importance(model, FRAME, **DATA, **options))
        pairs = dict({"grid_resolution": 5}, **options)
        _same(explainer.pd_interaction(features=["a", "b", "c"], **pairs),
              jaximp.pd_interaction(model, FRAME, features=["a", "b", "c"], **DATA, **pairs))


def test_a_reused_explainer_never_returns_stale_shapley_values():
    """Shapley values keep their plans per option: each option and random state gives the
    fresh result, with the Explainer's background, a subsample of it, or weights given to
    the call."""
    ex = jaximp.Explainer(model, FRAME, background=FRAME.iloc[:30])
    for options in ({"method": "permutation", "n_permutations": 4, "random_state": 0},
                    {"method": "permutation", "n_permutations": 4, "random_state": 1},
                    {"method": "permutation", "n_permutations": 6, "random_state": 0},
                    {}, {"features": ["a", "c"]}, {"background_size": 10},
                    {"background_size": 10, "random_state": 2},
                    {"background_weight": WEIGHTS[:30]},
                    {"method": "permutation", "n_permutations": 4, "random_state": 0}):
        _same(ex.shapley_values(FRAME.iloc[:6] if "features" in options else None, **options),
              jaximp.shapley_values(model, FRAME.iloc[:6] if "features" in options else FRAME,
                                    FRAME.iloc[:30], **options))
    for options in ({}, {"background_size": 12}, {}):
        _same(ex.shapley_interactions(FRAME.iloc[:4], **options),
              jaximp.shapley_interactions(model, FRAME.iloc[:4], FRAME.iloc[:30], **options))


def test_later_changes_to_the_callers_arrays_do_not_reach_the_explainer():
    """The Explainer copies X and its background, as it copies y: changing the caller's
    arrays or frames in place after it was made (even before its first call, while its
    device copy is not made yet) changes none of its results, weighted Shapley calls (which
    validate the background again) included."""
    from sklearn.neighbors import KNeighborsRegressor

    numeric = FRAME[["a", "b", "d"]]
    host_model = KNeighborsRegressor(5).fit(numeric, Y[:, 0])  # called through predict
    cases = [(smooth_model, NUMERIC[:60], NUMERIC[:30]), (model, FRAME, FRAME.iloc[:30]),
             (host_model, numeric, None)]
    for f, X, background in cases:
        X = X.copy()
        background = None if background is None else background.copy()
        original = X.copy(), None if background is None else background.copy()
        ex = jaximp.Explainer(f, X, background=background)
        for given in (X, background):
            if isinstance(given, np.ndarray):
                given[:] = 0.0
            elif given is not None:
                given.loc[:, "a"] = 0.0
        X, background = original
        _same(ex.partial_dependence(ex.dataset.feature_names[0], grid_resolution=4),
              jaximp.partial_dependence(f, X, ex.dataset.feature_names[0], grid_resolution=4))
        if background is not None:
            _same(ex.shapley_values(X[:4]), jaximp.shapley_values(f, X[:4], background))
            _same(ex.shapley_values(X[:4], background_weight=WEIGHTS[:30]),
                  jaximp.shapley_values(f, X[:4], background, background_weight=WEIGHTS[:30]))


def test_later_changes_to_the_callers_groups_and_categorical_do_not_reach_the_explainer():
    """New rows are described by the groups and categories the Explainer was made with, not
    by the caller's dict or list edited afterwards."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=(40, 2)), np.eye(3)[rng.integers(0, 3, 40)],
                         rng.integers(0, 3, 40)])
    f = lambda A: A[:, 0] * A[:, 1] + A[:, 2] - A[:, 4] + A[:, 5]  # noqa: E731
    groups, categorical = {"g": [2, 3, 4]}, [5]
    ex = jaximp.Explainer(f, X, groups=groups, categorical=categorical)
    groups["g"], groups["h"] = [2, 3], [4]
    categorical.clear()
    expected = jaximp.shapley_values(f, X[:3], X, groups={"g": [2, 3, 4]}, categorical=[5])
    _same(ex.shapley_values(X[:3]), expected)
    assert ex.permutation_attributions(X[:5]).feature_names == ("x0", "x1", "g", "x5")
    # an Explainer of a Dataset describes new rows and its background as the Dataset is
    data = jaximp.as_dataset(X, groups={"g": [2, 3, 4]}, categorical=[5])
    for background in (None, X[:20]):
        _same(jaximp.Explainer(f, data, background=background).shapley_values(X[:3]),
              jaximp.shapley_values(f, X[:3], X if background is None else background,
                                    groups={"g": [2, 3, 4]}, categorical=[5]))


def test_the_weights_a_result_hands_out_are_read_only():
    """info["sample_weight"] is the data's own copy of the weights: an edit of a result
    cannot change the Explainer's later calls."""
    ex = jaximp.Explainer(smooth_model, NUMERIC[:60], sample_weight=WEIGHTS[:60])
    weights = ex.permutation_attributions().info["sample_weight"]
    assert weights is ex.dataset.weights
    with pytest.raises(ValueError, match="read-only"):
        weights[:] = 1.0
    np.testing.assert_array_equal(weights, WEIGHTS[:60])


def test_the_explainers_random_state_is_the_default_of_every_call():
    ex = jaximp.Explainer(model, FRAME, Y, random_state=5)
    _same(ex.permutation_importance(),
          jaximp.permutation_importance(model, FRAME, Y, random_state=5))
    _same(ex.permutation_importance(random_state=6),
          jaximp.permutation_importance(model, FRAME, Y, random_state=6))


def test_a_numpy_array_and_its_dataframe_give_one_result():
    X = RNG.normal(size=(50, 3))
    f = lambda A: A[:, 0] - 2 * A[:, 1] * A[:, 2]  # noqa: E731
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    _same(jaximp.Explainer(f, X).pd_importance(), jaximp.Explainer(f, frame).pd_importance())


@pytest.mark.parametrize("call, error, message", [
    (lambda ex: ex.permutation_importance(sample_weight=WEIGHTS), TypeError,
     r"permutation_importance: \['sample_weight'\] are fixed when the Explainer is made"),
    (lambda ex: ex.partial_dependence("a", feature_names=list("abcd")), TypeError,
     r"\['feature_names'\] are fixed"),
    (lambda ex: ex.partial_dependence("a", n_repeats=3), TypeError,
     r"Explainer.partial_dependence has no option 'n_repeats'; its options are \['features', "
     r"'kind', 'grid', 'grid_resolution'"),
    (lambda ex: ex.ale("a", grid_resolution=5), TypeError,
     r"Explainer.ale has no option 'grid_resolution'; its options are \['features', 'bins'"),
    (lambda ex: ex.partial_dependence("a", rows=FRAME[:5]), TypeError,
     r"Explainer.partial_dependence has no option 'rows'"),
    (lambda ex: ex.shapley_values(FRAME[["a", "b"]]), ValueError,
     r"rows must have the columns of the Explainer's data \['a', 'b', 'c', 'd'\]"),
    (lambda ex: ex.shapley_values(np.zeros((2, 5))), ValueError,
     r"rows must have the 4 columns of the Explainer's data; got rows of shape \(5,\)"),
    (lambda ex: ex.permutation_importance(model=model), TypeError,
     r"Explainer.permutation_importance takes no 'model': the Explainer's model, data"),
    (lambda ex: ex.permutation_importance(y=Y), TypeError, r"takes no 'y'"),
    (lambda ex: ex.partial_dependence("zz"), ValueError, r"unknown feature 'zz'"),
    (lambda ex: ex.permutation_importance(random_state="x"), TypeError,
     r"random_state must be an int seed"),
])
def test_misuse_is_refused_with_a_message(explainer, call, error, message):
    with pytest.raises(error, match=message):
        call(explainer)


def test_a_model_whose_outputs_change_is_refused_by_name():
    """A model wrapped with one output that later returns two (its code changed under the
    Explainer) is refused when a new computation is traced, with the fix."""
    outputs = {"k": 1}

    def changing(A):
        return jnp.repeat(A[:, :1], outputs["k"], axis=1)

    X = RNG.normal(size=(40, 3)).astype(np.float32)
    ex = jaximp.Explainer(changing, X, X[:, 0])
    outputs["k"] = 2
    with pytest.raises(ValueError, match=r"returned shape \(\d+, 2\) for a batch of \d+ rows, "
                                         r"but 1 output\(s\) per row when it was wrapped .*"
                                         r"\(a new Explainer\)"):
        ex.permutation_importance()


def test_construction_is_checked():
    with pytest.raises(ValueError, match=r"Explainer.permutation_importance needs the targets"):
        jaximp.Explainer(model, FRAME).permutation_importance()
    with pytest.raises(ValueError, match=r"y must have n = 80 rows like X; got 3"):
        jaximp.Explainer(model, FRAME, Y[:3])
    with pytest.raises(ValueError,
                       match=r"background must have the 4 columns of X; got shape \(3, 2\)"):
        jaximp.Explainer(model, FRAME, background=np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"memory_budget must be at least 65536 bytes"):
        jaximp.Explainer(model, FRAME, memory_budget=10)
    with pytest.raises(TypeError, match=r"random_state must be an int seed"):
        jaximp.Explainer(model, FRAME, random_state=1.5)
    with pytest.raises(ValueError, match=r"output"):
        jaximp.Explainer(lambda A: A[:, :, None] * A[:, None, :], FRAME)
    assert repr(jaximp.Explainer(model, FRAME, Y)).startswith("Explainer(")


def test_the_data_goes_to_the_device_once(explainer):
    """A pinned dataset (the Explainer's) keeps its device copy: later calls reuse it, and a
    plain function call (a throw-away dataset) keeps nothing."""
    explainer.permutation_importance(n_repeats=2)
    copies = {k: v for k, v in explainer.dataset._memo.items() if k[0] == "device rows"}
    assert copies and all(isinstance(v, jax.Array) for v in copies.values())
    explainer.permutation_importance(n_repeats=3, random_state=9)
    again = {k: v for k, v in explainer.dataset._memo.items() if k[0] == "device rows"}
    assert all(again[k] is v for k, v in copies.items())
    dataset = jaximp.as_dataset(FRAME)
    jaximp.permutation_importance(model, dataset, Y, n_repeats=2)
    assert not [k for k in dataset._memo if k[0] == "device rows"]


def test_an_equal_plan_built_again_reuses_its_device_tables():
    from jaximp.engine import _device_arrays

    def plan():
        return jaximp.at_values(np.eye(2, dtype=bool), [0, 1], np.ones((2, 2)), [0, 1])

    first, second = plan(), plan()
    assert first is not second
    tables = _device_arrays.plan_tables(first, 8, np.float32, None)
    assert _device_arrays.plan_tables(second, 8, np.float32, None)[0] is tables[0]
    other = jaximp.at_values(np.eye(2, dtype=bool), [0, 1], 2 * np.ones((2, 2)), [0, 1])
    assert _device_arrays.plan_tables(other, 8, np.float32, None)[0] is not tables[0]


def test_sobol_indices_refuse_the_weights_of_a_weighted_explainer(explainer):
    with pytest.raises(ValueError, match="sobol_indices resamples the rows of X .* takes no "
                                         "case weights"):
        explainer.sobol_indices()


def test_device_rows_are_used_in_place_and_a_warm_call_sends_nothing():
    """X given as a jax.Array feeds the engine from its own device buffer, and a repeated call
    of partial dependence, permutation importance, ALE or Shapley values (against the
    Explainer's data or a background given to it) makes no transfer at all (every argument
    of the compiled chunks is kept on the device, results are read explicitly)."""
    X = jnp.asarray(NUMERIC, jnp.float32)
    ex = jaximp.Explainer(smooth_model, X, np.asarray(smooth_model(X)) + 0.1)
    calls = {
        "pd": (lambda: ex.partial_dependence(0, grid_resolution=9),
               lambda: jaximp.partial_dependence(smooth_model, NUMERIC, 0, grid_resolution=9)),
        "pfi": (lambda: ex.permutation_importance(n_repeats=3),
                lambda: jaximp.permutation_importance(smooth_model, NUMERIC, ex.y,
                                                      n_repeats=3)),
        "ale": (lambda: ex.ale(1), lambda: jaximp.ale(smooth_model, NUMERIC, 1)),
        "exact shapley": (
            lambda: ex.shapley_values(background_size=20),
            lambda: jaximp.shapley_values(smooth_model, NUMERIC, NUMERIC, background_size=20)),
        "sampled shapley": (
            lambda: with_background.shapley_values(method="permutation", n_permutations=4),
            lambda: jaximp.shapley_values(smooth_model, NUMERIC, NUMERIC[:30],
                                          method="permutation", n_permutations=4)),
    }
    with_background = jaximp.Explainer(smooth_model, X, background=NUMERIC[:30])
    for name, (bound, function) in calls.items():
        first = bound()
        with jax.transfer_guard("disallow"):
            again = bound()
        _same(first, again)
        _same(again, function())
    rows = [v for k, v in ex.dataset._memo.items() if k[0] == "device rows"]
    assert rows and all(np.array_equal(np.asarray(r[0, :N]), np.asarray(X)) for r in rows)


WARM = {  # every bound method of a JAX model, on rows kept on the device
    "partial_dependence": lambda ex: ex.partial_dependence(0, grid_resolution=9),
    "partial_dependence_all": lambda ex: ex.partial_dependence_all(grid_resolution=5),
    "pd_importance": lambda ex: ex.pd_importance(grid_resolution=9, n_bootstrap=3),
    "pd_interaction": lambda ex: ex.pd_interaction(grid_resolution=5),
    "h_statistic": lambda ex: ex.h_statistic(n_max=30),
    "permutation_importance": lambda ex: ex.permutation_importance(n_repeats=3),
    "loco_importance": lambda ex: ex.loco_importance(strategy="mean"),
    "average_loss": lambda ex: ex.average_loss(by=0),
    "sensitivity_importance": lambda ex: ex.sensitivity_importance(n_repeats=2),
    "partial_importance": lambda ex: ex.partial_importance(0, grid_resolution=6),
    "ale": lambda ex: ex.ale(1, bins=5),
    "ale_importance": lambda ex: ex.ale_importance(bins=5, n_bootstrap=3),
    "ale_interaction": lambda ex: ex.ale_interaction(bins=4),
    "shapley_values": lambda ex: ex.shapley_values(background_size=20),
    "shapley_interactions": lambda ex: ex.shapley_interactions(background_size=10),
    "break_down": lambda ex: ex.break_down(background_size=10),
    "sage_importance": lambda ex: ex.sage_importance(estimator="exact", background_size=15),
    "conditional_importance": lambda ex: ex.conditional_importance(n_repeats=2),
    "sobol_indices": lambda ex: ex.sobol_indices(n_bootstrap=3),
    "permutation_attributions": lambda ex: ex.permutation_attributions(n_repeats=2),
    "ablation_attributions": lambda ex: ex.ablation_attributions(baselines="mean"),
    "integrated_gradients": lambda ex: ex.integrated_gradients(n_steps=8),
    "expected_gradients": lambda ex: ex.expected_gradients(n_samples=4),
    "smoothgrad": lambda ex: ex.smoothgrad(n_samples=3),
    "saliency": lambda ex: ex.saliency(),
    "input_x_gradient": lambda ex: ex.input_x_gradient(),
    "dgsm": lambda ex: ex.dgsm(n_bootstrap=3),
    "gradient_interactions": lambda ex: ex.gradient_interactions(n_bootstrap=3),
    "explain": lambda ex: ex.explain(),
    # options that send something of their own: bootstrap keys, a row subset, host-scored
    # losses, the CPI test's t distribution
    "permutation_importance, n_bootstrap": lambda ex: ex.permutation_importance(
        n_repeats=2, n_bootstrap=3),
    "permutation_importance, max_samples": lambda ex: ex.permutation_importance(
        n_repeats=2, max_samples=25),
    "loco_importance, n_bootstrap": lambda ex: ex.loco_importance(strategy="mean",
                                                                  n_bootstrap=3),
    "average_loss, medae": lambda ex: ex.average_loss(loss="medae"),
    "conditional_importance, cpi": lambda ex: ex.conditional_importance(n_repeats=2,
                                                                        test="cpi"),
}


def test_every_method_of_a_jax_model_is_checked_for_transfers():
    """The methods WARM leaves out take tree models (no JAX model to keep on a device)."""
    assert set(BOUND) - set(WARM) == {"tree_shap", "booster_importance"}
    assert {name.split(",")[0] for name in WARM} <= set(BOUND)


@pytest.mark.parametrize("name", sorted(WARM))
def test_a_warm_call_of_every_method_sends_nothing_implicitly(name, monkeypatch):
    """With X (and y) given on the device, a repeated call of each method makes no implicit
    transfer: its set-up, plans, draws and derived rows stay on the devices, and what it
    sends is sent explicitly. The columns are sorted as on an accelerator, on the device (a
    CPU reads them with NumPy), where a GPU found a warm call's quantiles sent implicitly."""
    from jaximp.data import _device

    monkeypatch.setattr(_device, "SORTED_BY_NUMPY", ())
    X = jnp.asarray(NUMERIC[:40], jnp.float32)
    ex = jaximp.Explainer(smooth_model, X, np.asarray(smooth_model(X)) + 0.1)
    call = WARM[name]
    first = call(ex)
    with jax.transfer_guard("disallow"):
        again = call(ex)
    _same(first, again)


def test_a_call_returns_before_its_result_is_read():
    """A partial dependence on an Explainer returns with its device work dispatched and
    unread (on a GPU the call does not wait for it): the values are copied and finished on
    the first read, once, and equal the function's; pickling reads them first."""
    ex = jaximp.Explainer(smooth_model, NUMERIC)
    pending = [ex.partial_dependence(j, grid_resolution=9) for j in range(3)]
    pending.append(ex.partial_dependence_all(grid_resolution=9)["x1"])
    pending.append(ex.partial_dependence(2, grid_resolution=9, centered=True))
    for result in pending:
        assert isinstance(object.__getattribute__(result, "average"), Deferred)
    for feature, result in zip([0, 1, 2, 1], pending):
        reference = jaximp.partial_dependence(smooth_model, NUMERIC, feature, grid_resolution=9)
        assert isinstance(reference.average, np.ndarray)
        np.testing.assert_array_equal(result.average, reference.average)
        assert object.__getattribute__(result, "average") is result.average  # read once
    centered = jaximp.partial_dependence(smooth_model, NUMERIC, 2, grid_resolution=9,
                                         centered=True)
    restored = pickle.loads(pickle.dumps(pending[4]))
    np.testing.assert_array_equal(restored.average, centered.average)
    assert restored.individual is None and restored.centered


def test_shapley_values_return_before_they_are_read():
    """Exact and sampled Shapley values and interactions on an Explainer return with their
    coalition values dispatched and unread; the first read finishes them, once, equal to the
    function's; a plain call reads at once; pickling reads first."""
    ex = jaximp.Explainer(smooth_model, NUMERIC[:12], background=NUMERIC[40:60])
    calls = {"exact": lambda f, *a: f(*a),
             "sampled": lambda f, *a: f(*a, method="permutation", n_permutations=4)}
    for name, call in calls.items():
        pending = call(ex.shapley_values)
        fields = ["values", "base_values"] + (["standard_errors"] if name == "sampled" else [])
        for field in fields:
            assert isinstance(object.__getattribute__(pending, field), Deferred), (name, field)
        reference = call(jaximp.shapley_values, smooth_model, NUMERIC[:12], NUMERIC[40:60])
        assert not isinstance(object.__getattribute__(reference, "values"), Deferred)
        restored = pickle.loads(pickle.dumps(call(ex.shapley_values)))
        for field in fields:
            np.testing.assert_array_equal(getattr(pending, field), getattr(reference, field))
            assert object.__getattribute__(pending, field) is getattr(pending, field)
            np.testing.assert_array_equal(getattr(restored, field), getattr(reference, field))
    pending = ex.shapley_interactions()
    assert isinstance(object.__getattribute__(pending, "values"), Deferred)
    np.testing.assert_array_equal(
        pending.values,
        jaximp.shapley_interactions(smooth_model, NUMERIC[:12], NUMERIC[40:60]).values)


def test_a_permutation_importance_returns_before_its_result_is_read():
    """The same for permutation importance with one summed loss: every field, the details
    included, is read on first use and equals the function's."""
    y = np.asarray(smooth_model(NUMERIC)) + 0.1
    ex = jaximp.Explainer(smooth_model, NUMERIC, y)
    pending = ex.permutation_importance(n_repeats=3, random_state=4)
    assert isinstance(object.__getattribute__(pending, "importances"), Deferred)
    reference = jaximp.permutation_importance(smooth_model, NUMERIC, y, n_repeats=3,
                                              random_state=4)
    _same(pending, reference)
    np.testing.assert_array_equal(pending.info["baseline"], reference.info["baseline"])
    restored = pickle.loads(pickle.dumps(ex.permutation_importance(n_repeats=3, random_state=4)))
    _same(restored, reference)
    with pytest.raises(ValueError, match="kind='ratio' divides by the baseline"):
        jaximp.Explainer(smooth_model, NUMERIC, np.asarray(smooth_model(NUMERIC))
                         ).permutation_importance(kind="ratio")  # refused at the call


def test_a_cached_plan_follows_every_option_and_the_targets():
    """The plans an Explainer keeps are keyed by every option they read: a different grid,
    loss, target or random state never reuses another's plan."""
    ex = jaximp.Explainer(model, FRAME, Y, **DATA)
    for grid_resolution in (5, 6, 5):
        _same(ex.partial_dependence("a", grid_resolution=grid_resolution, kind="both"),
              jaximp.partial_dependence(model, FRAME, "a", grid_resolution=grid_resolution,
                                        kind="both", **DATA))
    other = jaximp.Explainer(model, FRAME, Y + 1.0, **DATA)
    for explainer, targets in ((ex, Y), (other, Y + 1.0), (ex, Y)):
        for loss in ("mse", "mae"):
            _same(explainer.permutation_importance(loss=loss, n_repeats=2),
                  jaximp.permutation_importance(model, FRAME, targets, loss=loss, n_repeats=2,
                                                **DATA))


def test_new_rows_take_the_explainers_groups_names_and_labels():
    """Rows passed to a row-wise call are read with the Explainer's groups, feature names
    and categories (they were passed raw: the bound call explained x0..x3 where the
    function explained the group), and text labels are coded with its data's labels."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    f = lambda A: A[:, 0] * A[:, 1] + jnp.sin(A[:, 2]) + 0.5 * A[:, 3]  # noqa: E731
    rows = X[:5].copy()
    for options in (dict(groups={"g": [0, 1]}), dict(feature_names=["p", "q", "r", "s"])):
        ex = jaximp.Explainer(f, X, **options)
        calls = {"shapley_values": dict(background_size=20), "integrated_gradients":
                 dict(n_steps=8), "permutation_attributions": {}, "saliency": {}}
        for name, extra in calls.items():
            bound = getattr(ex, name)(rows, **extra)
            plain = getattr(jaximp, name)(f, rows, *([X] if name == "shapley_values" else []),
                                          **options, **extra)
            assert bound.feature_names == plain.feature_names
            np.testing.assert_allclose(np.asarray(bound.values), np.asarray(plain.values),
                                       rtol=1e-6, atol=1e-7)
    frame = pd.DataFrame({"x": rng.normal(size=60), "c": rng.choice(["a", "b", "c"], 60)})
    effect = {"a": 0.0, "b": 5.0, "c": -5.0}
    model = types.SimpleNamespace(
        predict=lambda D: D["x"].to_numpy() + D["c"].map(effect).to_numpy())
    ex = jaximp.Explainer(model, frame)
    subset = pd.DataFrame({"x": [0.0, 0.5], "c": ["b", "c"]})  # lacks label "a"
    np.testing.assert_allclose(ex.shapley_values(subset).values,
                               jaximp.shapley_values(model, subset, frame).values, atol=1e-12)
    with pytest.raises(ValueError, match=r"column 'c' of rows must hold the labels"):
        ex.shapley_values(pd.DataFrame({"x": [0.0], "c": ["z"]}))
    # X's column a category: rows of text, or of fewer categories, are coded with X's
    categorized = jaximp.Explainer(model, frame.astype({"c": "category"}))
    for rows in (subset, subset.astype({"c": "category"})):
        np.testing.assert_allclose(categorized.shapley_values(rows).values,
                                   jaximp.shapley_values(model, subset, frame).values,
                                   atol=1e-12)


def test_options_that_read_a_scikit_learn_estimators_trees_and_weighted_data():
    """PD's recursion and the conditional strata sampler read the estimator's trees, and a
    scorer callable calls the estimator, which the Explainer's wrapped model hid (auto fell
    back to brute, recursion, strata='splits' and scorers failed); a weighted Explainer
    refuses the CPI test as the function refuses sample_weight."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    rng = np.random.default_rng(0)
    X_train = rng.normal(size=(200, 3))
    y_train = X_train[:, 0] ** 2 + X_train[:, 1]
    forest = RandomForestRegressor(10, max_depth=4, random_state=0).fit(X_train, y_train)
    X = rng.normal(loc=1.0, size=(60, 3))
    ex = jaximp.Explainer(forest, X)
    for method in ("auto", "recursion"):
        np.testing.assert_array_equal(
            ex.partial_dependence(0, grid_resolution=5, method=method).average,
            jaximp.partial_dependence(forest, X, 0, grid_resolution=5, method=method).average)
    # a scorer callable calls the estimator, not the trees read into arrays
    from sklearn.metrics import make_scorer, mean_squared_error

    scorer = make_scorer(mean_squared_error, greater_is_better=False)
    y_forest = forest.predict(X) + 0.1 * rng.normal(size=60)
    for scoring in (scorer, {"mse": scorer}):
        got = jaximp.Explainer(forest, X, y_forest).permutation_importance(scoring=scoring)
        expected = jaximp.permutation_importance(forest, X, y_forest, scoring=scoring)
        for a, b in zip(got.values() if isinstance(got, dict) else [got],
                        expected.values() if isinstance(expected, dict) else [expected]):
            np.testing.assert_array_equal(a.importances, b.importances)
    boosted = GradientBoostingRegressor(n_estimators=20, max_depth=2).fit(X_train, y_train)
    y = boosted.predict(X) + 0.1 * rng.normal(size=60)
    ex = jaximp.Explainer(boosted, X, y)
    for strata in ("auto", "splits"):
        np.testing.assert_allclose(
            ex.conditional_importance(sampler="strata", strata=strata).importances_mean,
            jaximp.conditional_importance(boosted, X, y, sampler="strata",
                                          strata=strata).importances_mean, rtol=1e-12)
    weighted = jaximp.Explainer(boosted, X, y, sample_weight=np.full(60, 2.0))
    with pytest.raises(ValueError, match="sample_weight is not supported"):
        weighted.conditional_importance(test="cpi")


def test_a_tree_model_refit_or_a_float_mode_switch_is_refused_not_answered_stale():
    """A forest's trees are read into arrays once, and the rows and model are kept in the
    float mode of the Explainer's making: after a refit (in place, warm_start included) or a
    switch of jax_enable_x64 a call raises, naming the fix, where it answered from the old
    trees or mode; a host model, called at each evaluation, follows its refit."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    forest = RandomForestRegressor(n_estimators=5, random_state=0).fit(X, X[:, 0])
    ex = jaximp.Explainer(forest, X)
    before = ex.partial_dependence(0, grid_resolution=3).average
    np.testing.assert_array_equal(ex.partial_dependence(0, grid_resolution=3).average, before)
    forest.fit(X, 3 * X[:, 2])
    with pytest.raises(RuntimeError, match="RandomForestRegressor changed .* new Explainer"):
        ex.partial_dependence(2, grid_resolution=3)
    fresh = jaximp.Explainer(forest, X).partial_dependence(2, grid={"x2": [-1.0, 1.0]})
    grid_rows = [np.column_stack([X[:, :2], np.full(len(X), v)]) for v in (-1.0, 1.0)]
    np.testing.assert_allclose(fresh.average[:, 0], [forest.predict(r).mean() for r in grid_rows],
                               rtol=1e-5)
    growing = RandomForestRegressor(n_estimators=3, warm_start=True, random_state=0)
    ex = jaximp.Explainer(growing.fit(X, X[:, 0]), X)
    growing.set_params(n_estimators=6).fit(X, X[:, 0])  # trees added to the same list
    with pytest.raises(RuntimeError, match="changed"):
        ex.h_statistic()
    linear = LinearRegression().fit(X, X[:, 0])
    ex = jaximp.Explainer(linear, X)
    linear.fit(X, 2 * X[:, 1])
    followed = ex.partial_dependence(1, grid={"x1": [0.0, 1.0]}).average[:, 0]
    np.testing.assert_allclose(followed, [linear.predict(np.column_stack(
        [X[:, 0], np.full(80, v), X[:, 2]])).mean() for v in (0.0, 1.0)], rtol=1e-6, atol=1e-9)
    ex = jaximp.Explainer(lambda A: A[:, 0] * 2.0, X[:, :1].astype(np.float32))
    with jax.enable_x64(True):
        with pytest.raises(RuntimeError, match="jax_enable_x64=False.* new Explainer"):
            ex.partial_dependence(0)
    ex.partial_dependence(0)  # the mode it was made in again


def test_kept_predictions_follow_a_model_changed_in_place():
    """SAGE and Sobol indices keep the model's predictions on X (and the background) between
    an Explainer's calls; a host model refitted or an nnx module updated in place is called
    again, and the repeated call equals a fresh function call, where it mixed the old
    predictions with the new model."""
    from flax import nnx
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3)).astype(np.float32)
    y = X @ np.array([1.0, 2.0, 0.0], np.float32)
    module = nnx.Linear(3, 1, rngs=nnx.Rngs(0))
    linear = LinearRegression().fit(X, y)
    sage = {"n_permutations": 20, "background_size": 15}
    for model, change in ((module, lambda: module.kernel.set_value(
                               jnp.array([[3.0], [0.0], [1.0]]))),
                          (linear, lambda: linear.fit(X, X[:, 2] - X[:, 0]))):
        ex = jaximp.Explainer(model, X, y)
        before = ex.sobol_indices(n_bootstrap=0).first.importances_mean
        ex.sage_importance(**sage)
        change()
        after = ex.sobol_indices(n_bootstrap=0).first.importances_mean
        assert not np.allclose(after, before)
        np.testing.assert_allclose(
            after, jaximp.sobol_indices(model, X, n_bootstrap=0).first.importances_mean,
            rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(
            ex.sage_importance(**sage).importances_mean,
            jaximp.sage_importance(model, X, y, **sage).importances_mean, rtol=1e-6, atol=1e-9)
    # a function of its arguments alone cannot change: its kept stages are not checked
    assert not jaximp.as_predictor(lambda A: A[:, 0], n_features=3).stateful


def test_arrays_a_result_shares_with_kept_state_are_read_only():
    """ALE edges, SAGE's losses and Shapley values' background rows are kept for repeated
    calls and handed out in every result: an edit raises instead of changing what the next
    call reports; an explicit edges array is copied, not frozen."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 3))
    y = X @ np.array([1.0, 2.0, 0.0])
    ex = jaximp.Explainer(lambda A: A @ jnp.array([1.0, 2.0, 0.0]), X, y)
    edges = np.linspace(-4.0, 4.0, 6)
    shared = [ex.ale(0).edges[0], ex.ale(1, bins=edges).edges[0],
              ex.shapley_values(background_size=20).info.background_rows]
    sage = ex.sage_importance(n_permutations=5, background_size=20).info
    shared += [sage.total, sage.base_loss, sage.full_loss]
    for array in shared:
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 7.0
    edges[0] = -5.0  # the caller's array is copied, not frozen
    assert shared[1][0] == -4.0


def test_models_changed_in_place_are_refused_where_the_explainer_read_them():
    """Boosters trained further in place (update), a forest whose tree is replaced in its
    list, an nnx module given another submodule or attribute: the Explainer read them once
    and raised nothing, answering from the old model; now a call raises naming the fix. A
    host model refitted to another number of outputs is refused with the same advice."""
    import xgboost
    from flax import nnx
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4)).astype(np.float32)
    y, other = 2 * X[:, 0] + X[:, 1] * X[:, 2], X[:, 0] - 3 * X[:, 3]

    def refused(ex, change, match="changed .* Make a new Explainer"):
        ex.partial_dependence(3, grid_resolution=3)
        change()
        with pytest.raises(RuntimeError, match=match):
            ex.partial_dependence(3, grid_resolution=3)

    booster = xgboost.train({"max_depth": 2}, xgboost.DMatrix(X, y), 3)
    refused(jaximp.Explainer(booster, X),
            lambda: booster.update(xgboost.DMatrix(X, other), 3))
    lightgbm = pytest.importorskip("lightgbm")
    trained = lightgbm.train({"verbose": -1, "num_leaves": 4}, lightgbm.Dataset(X, y), 3,
                             keep_training_booster=True)
    refused(jaximp.Explainer(trained, X), trained.update)
    forest = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    refused(jaximp.Explainer(forest, X), lambda: forest.estimators_.__setitem__(
        0, DecisionTreeRegressor(max_depth=2).fit(X, other)))

    class Net(nnx.Module):
        def __init__(self):
            self.hidden = nnx.Linear(4, 6, rngs=nnx.Rngs(0))
            self.head = nnx.Linear(6, 1, rngs=nnx.Rngs(1))
            self.scale = 1.0

        def __call__(self, x):
            return self.scale * self.head(jnp.tanh(self.hidden(x)))

    net = Net()
    ex = jaximp.Explainer(net, X)
    net.hidden.kernel[...] = 2 * net.hidden.kernel[...]  # new values: followed
    np.testing.assert_allclose(ex.partial_dependence(3, grid_resolution=3).average,
                               jaximp.partial_dependence(net, X, 3, grid_resolution=3).average,
                               rtol=1e-6)
    refused(ex, lambda: setattr(net, "scale", 3.0), "submodules or attributes")
    net = Net()
    refused(jaximp.Explainer(net, X),
            lambda: setattr(net, "head", nnx.Linear(6, 1, rngs=nnx.Rngs(7))))
    linear = LinearRegression().fit(X, y)
    ex = jaximp.Explainer(linear, X, y)
    linear.fit(X, np.column_stack([y, other]))
    with pytest.raises(ValueError, match="returned 2 outputs .* make a new Explainer"):
        ex.partial_dependence(0)


def test_an_explainer_refuses_pickling_by_name_and_copies():
    """Pickling failed on a local lambda deep inside; it now says what to pickle instead.
    copy and deepcopy still work and answer as the original."""
    import copy

    ex = jaximp.Explainer(smooth_model, NUMERIC)
    with pytest.raises(TypeError, match="does not pickle; pickle its results"):
        pickle.dumps(ex)
    want = ex.partial_dependence(0, grid_resolution=4).average
    for clone in (copy.copy(ex), copy.deepcopy(ex)):
        np.testing.assert_array_equal(clone.partial_dependence(0, grid_resolution=4).average,
                                      want)


def test_the_refit_check_holds_what_it_compares_and_ignores_what_does_not_predict():
    """A tree refitted twice could land at the freed address of the one first read (the
    check kept ids only) and was answered stale; set_params without a refit, nnx.jit on the
    module (which reorders its attributes and copies an array attribute) and a deepcopy of
    the Explainer were refused though nothing that predicts changed. An activation swapped
    in an nnx module is refused."""
    import copy

    from flax import nnx
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    y = 2 * X[:, 0] + X[:, 1] * X[:, 2]

    def answers(ex):
        return ex.partial_dependence(0, grid_resolution=3).average

    tree = DecisionTreeRegressor(max_depth=3).fit(X, y)
    ex = jaximp.Explainer(tree, X)
    for target in (X[:, 3], 3 * y):  # two refits: the first tree's id cannot come back
        tree.fit(X, target)
        with pytest.raises(RuntimeError, match="changed"):
            answers(ex)
    forest = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    ex = jaximp.Explainer(forest, X)
    forest.set_params(n_jobs=1)
    np.testing.assert_array_equal(answers(ex), answers(copy.deepcopy(ex)))

    class Net(nnx.Module):
        def __init__(self):
            self.hidden = nnx.Linear(4, 6, rngs=nnx.Rngs(0))
            self.act, self.scale = nnx.tanh, jnp.asarray(2.0)

        def __call__(self, x):
            return self.scale * self.act(self.hidden(x)).sum(axis=1)

    net = Net()
    ex = jaximp.Explainer(net, X)
    nnx.jit(lambda module, rows: module(rows))(net, jnp.ones((2, 4)))
    np.testing.assert_allclose(answers(ex), jaximp.partial_dependence(
        net, X, 0, grid_resolution=3).average, rtol=1e-6)
    net.act = nnx.relu
    with pytest.raises(RuntimeError, match="submodules or attributes"):
        answers(ex)
