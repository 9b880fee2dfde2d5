"""explain(): one call, shared evaluations, the same numbers as each method on its own."""

import functools

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import jaximp
from jaximp import _explain
from jaximp._explain import explain, kendall_tau_b

RNG = np.random.default_rng(0)
X = pd.DataFrame(RNG.uniform(-1, 1, size=(40, 3)), columns=["a", "b", "c"])
Y = X["a"].to_numpy() * X["b"].to_numpy() + 2 * X["c"].to_numpy()


def model(X):
    return X[:, 0] * X[:, 1] + 2 * X[:, 2] + 0.1 * X[:, 0]


def counting(monkeypatch, name):
    """Count the calls of ``jaximp._explain.<name>``."""
    calls = []
    original = getattr(_explain, name)

    def wrapper(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_explain, name, wrapper)
    return calls


@pytest.fixture(scope="module")
def bootstrapped():
    return explain(model, X, Y, methods=["pd_importance", "pd_interaction", "h_statistic",
                                         "permutation"],
                   grid_resolution=4, n_bootstrap=3, random_state=1,
                   options={"permutation": {"n_repeats": 2}, "h_statistic": {"n_max": 30}},
                   progress=False)



def test_explain_caps_pdps_grid_at_the_distinct_values():
    """explain's grid is pdp's with at most grid_resolution points: a binary feature is
    evaluated at its two values, as pd_importance's default grid does."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 2, 200), rng.normal(size=200)]).astype(float)

    def f(A):
        return 2 * A[:, 0] + jnp.sin(A[:, 1])

    ex = jaximp.explain(f, X, methods=["pd_importance"], progress=False)
    assert tuple(ex["pd_importance"].info.grid_values["x0"]) == (0.0, 1.0)
    assert len(ex["pd_importance"].info.grid_values["x1"]) == 21
    np.testing.assert_allclose(ex["pd_importance"].importances_mean[0],
                               jaximp.pd_importance(f, X).importances_mean[0], rtol=1e-6)


def test_results_equal_each_method_run_on_its_own(bootstrapped):
    ex = bootstrapped
    alone = {
        "pd_importance": jaximp.pd_importance(model, X, grid_resolution=4, n_bootstrap=3,
                                              random_state=1),
        "permutation": jaximp.permutation_importance(model, X, Y, n_repeats=2,
                                                     random_state=1),
    }
    for name, result in alone.items():
        np.testing.assert_allclose(ex[name].importances_mean, result.importances_mean,
                                   rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(ex[name].importances, result.importances, rtol=1e-6)
    inter = jaximp.pd_interaction(model, X, grid_resolution=4, n_bootstrap=3, random_state=1)
    assert ex["pd_interaction"].feature_sets == inter.feature_sets
    np.testing.assert_allclose(ex["pd_interaction"].values, inter.values, rtol=1e-6)
    np.testing.assert_allclose(ex["pd_interaction"].replicates, inter.replicates, rtol=1e-6)
    h = jaximp.h_statistic(model, X, n_max=30, n_bootstrap=3, random_state=1)
    np.testing.assert_allclose(ex["h_statistic"].pairwise.values, h.pairwise.values,
                               rtol=1e-6)
    np.testing.assert_allclose(ex["h_statistic"].total, h.total, rtol=1e-6)


def test_pd_methods_share_one_engine_call_and_h_is_computed_once(monkeypatch, capsys):
    pd_calls = counting(monkeypatch, "planned_pd")
    h_calls = counting(monkeypatch, "h_statistic")
    ex = explain(model, X, methods=["pd_importance", "pd_interaction", "h_statistic"],
                 grid_resolution=3, options={"h_statistic": {"n_max": 20}}, progress=True)
    assert len(pd_calls) == 1 and len(h_calls) == 1
    err = capsys.readouterr().err  # one bar over the steps, no engine lines beside it
    assert "jaximp explain" in err and "2/2" in err and "chunk" not in err
    # the shared 1-D PDs are the ones PD importance measured: sd over the grid (ddof=1)
    for j, name in enumerate(ex.feature_names):
        curve = ex.partial_dependence[name].average[:, 0]
        assert ex["pd_importance"].importances_mean[j, 0] == pytest.approx(
            np.std(curve, ddof=1), rel=1e-5)
    statistics = set(ex.to_frame().query("method == 'h_statistic'")["statistic"])
    assert statistics == {"overall", "pairwise", "total"}


def test_to_frame_stacks_every_result(bootstrapped):
    frame = bootstrapped.to_frame()
    assert list(frame.columns) == ["method", "statistic", "feature", "output", "value", "std",
                                   "q025", "q975"]
    assert list(dict.fromkeys(frame["method"])) == list(bootstrapped)
    perm = frame[frame["method"] == "permutation"].set_index("feature")["value"]
    result = bootstrapped["permutation"]
    for j, name in enumerate(result.feature_names):
        assert perm[name] == result.importances_mean[j, 0]
    pairs = frame[frame["method"] == "pd_interaction"]
    assert set(pairs["feature"]) == {"a:b", "a:c", "b:c"}
    assert (pairs["statistic"] == "pairwise").all() and pairs["q025"].notna().all()
    total = frame[(frame["method"] == "h_statistic") & (frame["statistic"] == "total")]
    assert total["value"].iloc[0] == bootstrapped["h_statistic"].total[0]


@pytest.mark.parametrize("seed", range(4))
def test_kendall_tau_b_matches_scipy_with_ties(seed):
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 4, size=12), rng.integers(0, 5, size=12)
    assert kendall_tau_b(a, b) == pytest.approx(stats.kendalltau(a, b).statistic, abs=1e-12)
    c = rng.normal(size=9)
    assert kendall_tau_b(c, -c) == pytest.approx(-1.0)
    assert np.isnan(kendall_tau_b(np.ones(5), c[:5]))


def test_agreement_is_tau_b_between_rankings(bootstrapped):
    table = bootstrapped.agreement()
    names = ["pd_importance", "permutation"]
    assert list(table.index) == list(table.columns) == names
    np.testing.assert_array_equal(np.diag(table), 1.0)
    scores = bootstrapped.importances()
    for a in names:
        for b in names:
            if a != b:
                assert table.loc[a, b] == kendall_tau_b(scores[a], scores[b])


def test_a_classifiers_classes_are_shown_beside_its_one_loss_column():
    """A 3-class model: PD importance has a column per class, permutation importance one (its
    loss over all classes), which every class's table, ranking and figure show."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
    model = LogisticRegression(max_iter=500).fit(X, y)
    result = explain(model, X, y, methods=["pd_importance", "permutation"], progress=False)
    assert result["permutation"].importances_mean.shape[1] == 1
    assert result.settings["loss"] == "permutation: accuracy"  # the default, recorded
    for output in (0, 1, 2, "2"):
        table = result.importances(output=output)
        column = int(output)
        np.testing.assert_array_equal(table["pd_importance"],
                                      result["pd_importance"].importances_mean[:, column])
        np.testing.assert_array_equal(table["permutation"],
                                      result["permutation"].importances_mean[:, 0])
        result.agreement(output=output)
    result.plot(output=2)


def test_the_data_summary_reads_the_values_present_and_counts_the_missing():
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 2))
    X[::8, 0] = np.nan
    y = np.nan_to_num(X[:, 0]) + X[:, 1]
    model = HistGradientBoostingRegressor(max_iter=10).fit(X, y)
    summary = explain(model, X, y, methods=["permutation"], progress=False).data_summary
    present = X[~np.isnan(X[:, 0]), 0]
    np.testing.assert_allclose(summary.loc[0, ["mean", "std", "min", "max"]].to_numpy(float),
                               [present.mean(), present.std(ddof=1), present.min(),
                                present.max()], rtol=1e-12)
    assert summary["missing"].tolist() == [10, 0]


def small_network():
    """A jaximp.MLP with fixed weights (3 -> 4 -> 1): Garson and Olden read it."""
    rng = np.random.default_rng(3)
    params = [{"kernel": jnp.asarray(rng.normal(size=(3, 4)), jnp.float32),
               "bias": jnp.zeros(4)},
              {"kernel": jnp.asarray(rng.normal(size=(4, 1)), jnp.float32),
               "bias": jnp.zeros(1)}]
    ones = jnp.ones(3)
    return jaximp.MLP(params, 0 * ones, ones, jnp.zeros(1), jnp.ones(1), ones, jnp.zeros(1))


def test_default_methods_follow_y_fit_and_the_model():
    assert _explain._default_methods(3, False, False, False) == [
        "pd_importance", "pd_interaction", "h_statistic"]
    assert _explain._default_methods(1, True, True, True) == [
        "pd_importance", "permutation", "sensitivity", "loco", "garson", "olden"]
    assert _explain._readable_network(small_network(), 3)
    assert not _explain._readable_network(model, 3)


def test_weight_methods_keep_the_features_asked_for():
    net = small_network()
    ex = explain(net, X, methods=["garson", "olden"], features=["c", "a"], progress=False)
    garson = jaximp.garson_importance(net, feature_names=list(X.columns))
    assert ex["garson"].feature_names == ("c", "a")
    np.testing.assert_array_equal(ex["garson"].importances_mean[:, 0],
                                  garson.importances_mean[[2, 0], 0])
    # Olden is signed; importances() and agreement() rank it by magnitude
    olden = ex["olden"].importances_mean[:, 0]
    np.testing.assert_array_equal(ex.importances()["olden"], np.abs(olden))
    assert ex.model_summary["layer sizes"] == "3 -> 4 -> 1"


def test_loco_options_and_fit_description():
    ex = explain(model, X, Y, methods=["loco"], options={"loco": {"strategy": "mean"}},
                 progress=False)
    alone = jaximp.loco_importance(model, X, Y, strategy="mean")
    np.testing.assert_allclose(ex["loco"].importances_mean, alone.importances_mean,
                               rtol=1e-6)
    fit = functools.partial(jaximp.fit_mlp, hidden=(4,), steps=3)
    assert _explain._describe(fit) == "fit_mlp(hidden=(4,), steps=3)"


@pytest.mark.parametrize("kwargs, message", [
    (dict(methods=["shap"]), "methods must be a non-empty list of names from"),
    (dict(methods=["permutation"]), "method 'permutation' needs the targets y"),
    (dict(methods=["pd_importance"], options={"permutation": {"n_repeats": 2}}),
     "options names 'permutation', which is not among the methods run"),
    (dict(methods=["pd_importance"], options={"pd_importance": {"grid": "quantile"}}),
     "options['pd_importance'] takes ['measure']; got ['grid']"),
    (dict(methods=["pd_importance"], options={"pd_importance": {"measure": "iqr"}}),
     "options['pd_importance']['measure'] must be one of"),
    (dict(methods=["pd_importance"], grid_resolution=1), "grid_resolution must be an int >= 2"),
])
def test_errors_name_the_problem_before_any_evaluation(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        explain(model, X, **kwargs)


def test_loco_without_fit_is_refused():
    with pytest.raises(ValueError, match="method 'loco' refits the model"):
        explain(model, X, Y, methods=["loco"])


def test_plot_and_repr(bootstrapped):
    fig = bootstrapped.plot()
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == bootstrapped.importance_methods
    assert all(len(ax.patches) == 3 for ax in axes)  # one bar per feature
    # one shared feature order: the first method's ranking, strongest at the top
    order = bootstrapped["pd_importance"].top(3)[::-1]
    for ax in axes:
        labels = [t.get_text() for t in ax.get_yticklabels()] or \
            [t.get_text() for t in axes[0].get_yticklabels()]
        assert labels == order
    text = repr(bootstrapped)
    assert text.startswith("Explanation(4 methods on 40 rows x 3 features")
    assert "top by pd_importance: c" in text


def test_ale_and_shapley_equal_their_own_calls():
    ex = explain(model, X, methods=["ale", "shapley"], features=["a", "c"], output=0,
                 options={"shapley": {"background_size": 20}})
    ale = jaximp.ale_importance(model, X, features=["a", "c"])
    np.testing.assert_allclose(ex["ale"].importances_mean, ale.importances_mean)
    shap = jaximp.shapley_values(model, X, features=["a", "c"], background_size=20)
    np.testing.assert_allclose(ex["shapley"].importances_mean,
                               np.abs(shap.values).mean(axis=0))
    assert ex["shapley"].feature_names == ("a", "c") and ex["shapley"].method == "shapley"
