"""Every result type answers the same vocabulary: to_frame(), plot() (checked by what it
draws), top(k), a short repr, and the names of spreads and intervals."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jaximp  # noqa: E402

X = np.random.default_rng(2).uniform(-1, 1, size=(40, 4))
Y = 3 * X[:, 0] * X[:, 1] + X[:, 2]


def model(X):
    return 3 * X[:, 0] * X[:, 1] + X[:, 2]


@pytest.fixture(scope="module")
def results():
    return {
        "permutation": jaximp.permutation_importance(model, X, Y, n_repeats=4),
        "pd_importance": jaximp.pd_importance(model, X, n_bootstrap=4, grid_resolution=5),
        "pd_interaction": jaximp.pd_interaction(model, X, grid_resolution=5),
        "h": jaximp.h_statistic(model, X, n_bootstrap=3),
        "pd": jaximp.partial_dependence(model, X, 0, kind="both", grid_resolution=5),
        "pds": jaximp.partial_dependence_all(model, X, kind="both", grid_resolution=5),
    }


def _bar_labels(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


def test_feature_importance_vocabulary(results):
    for name in ("permutation", "pd_importance"):
        r = results[name]
        frame = r.to_frame()
        assert {"feature", "output", "importance", "std"} <= set(frame.columns)
        assert frame["importance"].is_monotonic_decreasing
        assert r.top(2) == list(frame["feature"][:2])
        with pytest.raises(ValueError, match="k must be a positive int"):
            r.top(0)
        low, high = r.intervals(0.9)
        np.testing.assert_allclose(low, np.quantile(r.importances, 0.05, axis=-1))
        np.testing.assert_allclose(high, np.quantile(r.importances, 0.95, axis=-1))
        ax = r.plot()
        assert len(ax.patches) == 4 and set(_bar_labels(ax)) == set(r.feature_names)
        text = repr(r)
        assert text.startswith("FeatureImportance(") and "4 features" in text
        assert "array" not in text and len(text) < 300
        plt.close("all")
        # one ddof convention: *_std is ddof 0 for repeats and bootstrap replicates alike
        np.testing.assert_allclose(r.importances_std, r.importances.std(axis=-1))
        np.testing.assert_allclose(r.std(), r.importances_std)
        m = r.importances.shape[-1]
        np.testing.assert_allclose(r.std(ddof=1), r.importances_std * np.sqrt(m / (m - 1)))


def test_typed_details():
    info = jaximp.permutation_importance(lambda A: A @ np.ones(4), X, Y, n_repeats=2).info
    assert info.loss == info["loss"] == "mse" and info.n_repeats == 2
    assert set(info) == {"loss", "kind", "baseline", "n_repeats", "n_samples", "sample_rows",
                         "n_bootstrap", "repeats"}
    assert dict(info)["baseline"].shape == (1,) and info.sample_rows is None
    assert repr(info).startswith("PermutationDetails(") and "baseline=array(1,)" in repr(info)
    with pytest.raises(KeyError):
        info["no such field"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.loss = "mae"


def test_feature_interaction_vocabulary(results):
    for r in (results["pd_interaction"], results["h"].pairwise):
        frame = r.to_frame()
        assert {"feature_1", "feature_2", "output", "interaction"} <= set(frame.columns)
        assert r.top(1) == [("x0", "x1")]
        ax = r.plot(top=3)
        assert len(ax.patches) == 3 and _bar_labels(ax)[-1] == "x0 x x1"
        text = repr(r)
        assert text.startswith("FeatureInteraction(") and "6 pairs" in text
        assert "x0 x x1=" in text and len(text) < 300
        plt.close("all")
    pairs = results["h"].pairwise
    np.testing.assert_allclose(pairs.intervals(0.8),
                               np.quantile(pairs.replicates, [0.1, 0.9], axis=-1))
    np.testing.assert_allclose(pairs.values_std, pairs.replicates.std(axis=-1))
    # one ddof convention (0, as scikit-learn); R's sd() on request
    r = pairs.replicates
    np.testing.assert_allclose(pairs.std(), pairs.values_std)
    np.testing.assert_allclose(pairs.std(ddof=1),
                               np.sqrt(((r - r.mean(-1, keepdims=True)) ** 2).sum(-1)
                                       / (r.shape[-1] - 1)))
    with pytest.raises(ValueError, match=r"^ddof must be an int >= 0; got -1\.$"):
        pairs.std(ddof=-1)
    with pytest.raises(ValueError, match=r"has 0 repeats or replicates; std\(ddof=1\)"):
        results["pd_interaction"].std(ddof=1)


def test_h_statistic_vocabulary(results):
    h = results["h"]
    assert h.top(1) == [("x0", "x1")]
    assert set(h.to_frame("all")["statistic"]) == {"overall", "pairwise", "total"}
    fig = h.plot(top=4)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["overall H^2", "pairwise H^2"]
    assert len(fig.axes[0].patches) == 4 and len(fig.axes[1].patches) == 4
    assert len(h.plot("pairwise", top=2).axes[0].patches) == 2
    with pytest.raises(ValueError, match="statistic must be 'overall', 'pairwise'"):
        h.plot("total")
    text = repr(h)
    assert text.startswith("HStatistic(H^2 on 40 rows") and "pairwise (6 sets)" in text
    assert "array" not in text
    plt.close("all")


def test_partial_dependence_vocabulary(results):
    pd1, pds = results["pd"], results["pds"]
    assert repr(pd1).startswith("PartialDependence(x0: grid 5, outputs ['y']")
    assert "40 ICE curves" in repr(pd1)
    ax = pd1.plot(max_curves=10)
    assert len(ax.lines) == 10 + 1 and ax.get_xlabel() == "x0"
    assert isinstance(pds, jaximp.PartialDependences) and list(pds) == ["x0", "x1", "x2", "x3"]
    frame = pds.to_frame()
    assert list(frame.columns) == ["feature", "value", "output", "yhat"]
    assert len(frame) == 4 * 5
    # the flattest PD is x3 (unused by the model); x2's PD is the steepest line
    spread = {f: np.std(pds[f].average[:, 0], ddof=1) for f in pds}
    assert pds.top(4) == sorted(spread, key=lambda f: -spread[f]) and pds.top(4)[-1] == "x3"
    fig = pds.plot(max_curves=5, ncols=2)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_xlabel() for ax in visible] == ["x0", "x1", "x2", "x3"]
    assert all(len(ax.lines) == 5 + 1 for ax in visible)
    assert repr(pds) == "PartialDependences(4 features: x0, x1, x2, x3)"
    with pytest.raises(KeyError, match="no partial dependence of 'x9'"):
        pds["x9"]
    plt.close("all")


def test_the_newer_result_types_share_the_vocabulary():
    """ALE, Shapley values and interactions, trends, transversal rates, partial importance and
    decorrelation importance: typed details, a short repr, a tidy frame, a plot that draws
    their content, and ``std``/``intervals`` where they have replicates."""
    from sklearn.ensemble import RandomForestRegressor

    from jaximp.results import _details as D

    def check_details(info, kind):
        assert isinstance(info, kind) and repr(info).startswith(kind.__name__ + "(")
        name = next(iter(info))
        assert info[name] is getattr(info, name)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(info, name, None)

    def check_repr(result, start):
        text = repr(result)
        assert text.startswith(start) and "array(" not in text and len(text) < 300, text

    curve = jaximp.ale(model, X, 0, bins=5, n_bootstrap=3)
    check_details(curve.info, D.ALECurveDetails)
    check_repr(curve, "AccumulatedLocalEffects(x0:")
    assert curve.intervals(0.9).shape == (2, *curve.centred.shape)
    assert curve.replicates.shape == (*curve.centred.shape, 3)  # replicates last
    np.testing.assert_allclose(curve.std(), curve.replicates.std(axis=-1))
    assert {"value", "output", "ale", "q025", "q975"} <= set(curve.to_frame().columns)
    ax = curve.plot()
    drawn = [line for line in ax.lines if len(line.get_xdata()) == len(curve.edges[0])]
    assert len(drawn) == 1 and np.allclose(drawn[0].get_ydata(), curve.centred[:, 0])
    assert len(ax.collections) >= 2  # the band and the rug
    check_details(jaximp.ale_importance(model, X, bins=5).info, D.ALEDetails)

    values = jaximp.shapley_values(model, X[:6], X[:10])
    check_details(values.info, D.ShapleyDetails)
    check_repr(values, "ShapleyValues(")
    assert set(values.to_frame()["feature"]) == {"x0", "x1", "x2", "x3"}
    ax = values.plot()
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == values.importance().top(1)[0]
    check_details(values.importance().info, D.ShapleyImportanceDetails)
    pairs = jaximp.shapley_interactions(model, X[:4], X[:8])
    check_details(pairs.info, D.ShapleyDetails)
    check_repr(pairs, "ShapleyInteractions(")
    assert pairs.interaction().top(1) == [("x0", "x1")]

    forest = RandomForestRegressor(5, max_depth=3, random_state=0).fit(X, Y)
    rates = jaximp.transversal_rates(forest)
    check_details(rates.info, D.TreeDetails)
    check_repr(rates, "TransversalRates(")
    assert len(rates.to_frame()) == 4
    rates.plot()
    check_details(jaximp.impurity_importance(forest).info, D.TreeDetails)

    def fit(A, b):
        return RandomForestRegressor(5, max_depth=3, random_state=0).fit(A, b)

    trend = jaximp.trends(model, X, Y, methods=["pearson", "linear"], fit=fit, n_bootstrap=3)
    check_details(trend.info, D.TrendsDetails)
    check_repr(trend, "Trends(2 estimators x 4 features, 3 bootstrap subsets")
    np.testing.assert_allclose(trend.std(), trend.values_std)
    assert trend.intervals().shape == (2, 2, 4, 1)
    assert list(trend.to_frame().columns) == ["feature", "estimator", "output", "value", "std",
                                              "q025", "q975", "p_value"]
    assert len(trend.plot()) == 2

    partial = jaximp.partial_importance(model, X, Y, 0, grid_resolution=5)
    check_details(partial.info, D.PartialImportanceDetails)
    check_repr(partial, "PartialImportance(")
    assert len(partial.to_frame()) > 0
    partial.plot()

    decorrelated = jaximp.decorrelation_importance(X, Y, fit, n_orders=2)
    check_details(decorrelated.info, D.DecorrelationDetails)
    assert decorrelated.std().shape == (4, 1)
    plt.close("all")


@pytest.mark.parametrize("shape", [(10, 1, 5), (3, 2, 7), (4, 1, 1), (2, 3, 100)])
def test_mean_and_std_are_numpys_numbers(shape):
    """The lean mean and std over repeats give exactly NumPy's mean and std (ddof 0)."""
    from jaximp.results._results import mean_and_std

    values = np.random.default_rng(sum(shape)).normal(size=shape) * 1e3 + 7.0
    mean, std = mean_and_std(values)
    np.testing.assert_array_equal(mean, values.mean(axis=-1))
    np.testing.assert_array_equal(std, values.std(axis=-1))


@pytest.fixture(scope="module")
def every_result_type(results):
    from sklearn.ensemble import RandomForestRegressor

    forest = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, Y)
    return [
        results["permutation"], results["pd_interaction"], results["h"], results["pd"],
        results["pds"],
        jaximp.ale(model, X, 0, n_bootstrap=3),
        jaximp.shapley_values(model, X[:4], background=X[:10]),
        jaximp.shapley_interactions(model, X[:3], background=X[:10]),
        jaximp.partial_importance(model, X, Y, 0),
        jaximp.transversal_rates(forest),
        jaximp.trends(None, X, Y, methods=["linear", "pearson"], n_bootstrap=3),
        jaximp.explain(model, X, Y, methods=["pd_importance", "permutation"]),
        jaximp.conditional_importance(model, X, Y, test="cpi"),
        jaximp.sage_importance(model, X, Y, estimator="exact", background_size=10),
        jaximp.sobol_indices(model, X, n_bootstrap=3),
        jaximp.integrated_gradients(model, X[:4]),
        jaximp.gradient_interactions(model, X[:3], kind="integrated_hessians", n_steps=4),
    ]


def _arrays(value, depth=0):
    """Every ndarray reachable from a result (its fields, mappings and sequences)."""
    if depth > 6:
        return
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _arrays(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _arrays(item, depth + 1)
    elif hasattr(value, "__dict__") and type(value).__module__.startswith("jaximp"):
        for item in vars(value).values():
            yield from _arrays(item, depth + 1)


def test_every_result_type_pickles_and_round_trips(every_result_type):
    import inspect
    import pickle

    exported = {name for name in jaximp.__all__
                if inspect.isclass(getattr(jaximp, name))
                and hasattr(getattr(jaximp, name), "to_frame")}
    assert {type(r).__name__ for r in every_result_type} == exported
    for result in every_result_type:
        copy = pickle.loads(pickle.dumps(result))
        assert type(copy) is type(result) and repr(copy) == repr(result)
        before, after = list(_arrays(result)), list(_arrays(copy))
        assert len(before) == len(after) and before, type(result).__name__
        for a, b in zip(before, after):
            np.testing.assert_array_equal(a, b)
        frame = result.to_frame()
        frame = frame if isinstance(frame, dict) else {"": frame}
        copied = copy.to_frame()
        copied = copied if isinstance(copied, dict) else {"": copied}
        for key in frame:
            assert frame[key].equals(copied[key]), (type(result).__name__, key)


def test_a_pickled_h_statistic_reads_out_without_the_model(results):
    import pickle

    h = results["h"]
    copy = pickle.loads(pickle.dumps(h))
    np.testing.assert_array_equal(copy.with_options(normalized=False).pairwise.values,
                                  h.with_options(normalized=False).pairwise.values)
    first = h.pairwise.feature_sets[0]
    np.testing.assert_array_equal(copy.h2_pairwise(pairs=[first]).values,
                                  h.h2_pairwise(pairs=[first]).values)
    with pytest.raises(ValueError, match=r"holds no model to evaluate the three_way statistics"):
        copy.h2_threeway(triples=[("x0", "x1", "x2")])
