"""JAX tree models against scikit-learn: predictions, impurity importance, partial dependence."""

import jax
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.inspection import partial_dependence as sk_partial_dependence
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import jaximp
from jaximp.methods._tree_stats import impurity_importance, tree_partial_dependence
from jaximp.models._trees import tree_predictor

N, P = 200, 5


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, P))
    X[:, 3] = rng.integers(0, 4, size=N)  # ties: thresholds at midpoints of few values
    y_reg = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=N)
    y_bin = (y_reg > np.median(y_reg)).astype(int)
    y_3 = np.digitize(y_reg, np.quantile(y_reg, [1 / 3, 2 / 3]))
    return X, y_reg, y_bin, y_3


REGRESSORS = {
    "tree": lambda: DecisionTreeRegressor(max_depth=6, random_state=0),
    "rf": lambda: RandomForestRegressor(n_estimators=20, max_depth=6, random_state=0),
    "et": lambda: ExtraTreesRegressor(n_estimators=20, max_depth=6, random_state=0),
    "gb": lambda: GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0),
    "gb_huber": lambda: GradientBoostingRegressor(
        loss="huber", n_estimators=20, max_depth=3, subsample=0.7, random_state=0),
}
CLASSIFIERS = {
    "tree": lambda: DecisionTreeClassifier(max_depth=6, random_state=0),
    "rf": lambda: RandomForestClassifier(n_estimators=20, max_depth=6, random_state=0),
    "rf_weighted": lambda: RandomForestClassifier(
        n_estimators=20, max_depth=6, class_weight="balanced", random_state=0),
    "et": lambda: ExtraTreesClassifier(n_estimators=20, max_depth=6, random_state=0),
    "gb": lambda: GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0),
}


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_regressor_predictions_equal_sklearn(data, name):
    X, y, _, _ = data
    est = REGRESSORS[name]().fit(X, y)
    pred = tree_predictor(est)
    assert pred.n_outputs == 1 and pred.output_names == ("y",) and not pred.host
    out = np.asarray(pred(X))
    assert out.shape == (N, 1) and out.dtype == np.float32
    np.testing.assert_allclose(out[:, 0], est.predict(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_classifier_probabilities_equal_sklearn(data, name, n_classes):
    X, _, y_bin, y_3 = data
    y = np.array(["a", "b", "c"])[y_bin if n_classes == 2 else y_3]
    est = CLASSIFIERS[name]().fit(X, y)
    pred = tree_predictor(est)
    assert pred.output_names == tuple("abc"[:n_classes])
    out = np.asarray(pred(X))
    assert out.shape == (N, n_classes)
    np.testing.assert_allclose(out, est.predict_proba(X), rtol=1e-5, atol=1e-6)


def test_multioutput_regression_and_unseen_rows(data):
    X, y, _, _ = data
    Y = np.column_stack([y, -2 * y + X[:, 4]])
    est = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0).fit(X, Y)
    pred = tree_predictor(est)
    assert pred.output_names == ("y0", "y1")
    X_new = np.random.default_rng(1).normal(scale=2.0, size=(50, P))
    np.testing.assert_allclose(np.asarray(pred(X_new)), est.predict(X_new),
                               rtol=1e-5, atol=1e-6)


def test_thresholds_compare_exactly_at_split_values(data):
    """Rows equal to a threshold, and the float32 neighbours of the thresholds."""
    X, y, _, _ = data
    est = DecisionTreeRegressor(max_depth=8, random_state=0).fit(X, y)
    t = est.tree_
    split = t.children_left != -1
    rows = np.repeat(X[:1], 3 * split.sum(), axis=0).astype(np.float64)
    thr = t.threshold[split]
    for i, (f, v) in enumerate(zip(t.feature[split], thr)):
        v32 = np.float32(v)
        rows[3 * i:3 * i + 3, f] = [v, np.nextafter(v32, np.float32(-np.inf)),
                                    np.nextafter(v32, np.float32(np.inf))]
    np.testing.assert_allclose(np.asarray(tree_predictor(est)(rows))[:, 0], est.predict(rows),
                               rtol=1e-5, atol=1e-6)


def test_missing_values_follow_sklearn(data):
    X, y, _, _ = data
    Xm = X.copy()
    Xm[np.random.default_rng(2).random(Xm.shape) < 0.1] = np.nan
    est = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0).fit(Xm, y)
    np.testing.assert_allclose(np.asarray(tree_predictor(est)(Xm))[:, 0], est.predict(Xm),
                               rtol=1e-5, atol=1e-6)


def test_apply_function_is_reused(data):
    X, y, _, _ = data
    a = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(X, y)
    b = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=1).fit(X, y)
    assert tree_predictor(a).apply is tree_predictor(b).apply  # both of depth 4


def test_x64_computes_in_float64(data):
    X, y, _, y_3 = data
    with jax.enable_x64(True):
        for est in (GradientBoostingRegressor(n_estimators=10, random_state=0).fit(X, y),
                    RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y_3)):
            pred = tree_predictor(est)
            assert pred.dtype == np.float64 and pred.params["value"].dtype == np.float64
            ref = est.predict_proba(X) if hasattr(est, "classes_") else est.predict(X)[:, None]
            np.testing.assert_allclose(np.asarray(pred(X)), ref, rtol=1e-6, atol=1e-7)


def test_dataframe_fit_and_feature_names(data):
    X, y, _, _ = data
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(P)])
    est = GradientBoostingRegressor(n_estimators=10, random_state=0).fit(df, y)
    np.testing.assert_allclose(np.asarray(tree_predictor(est)(X))[:, 0], est.predict(df),
                               rtol=1e-5, atol=1e-6)
    imp = impurity_importance(est)
    assert imp.feature_names == tuple(df.columns)
    # the trees' criterion, not the ensemble's placeholder parameter (scikit-learn >= 1.9)
    assert imp.info.criterion == est.estimators_[0, 0].criterion


def test_unsupported_estimators_raise(data):
    X, y, _, _ = data
    hgb = HistGradientBoostingRegressor(max_iter=5).fit(X, y)
    with pytest.raises(TypeError, match="got HistGradientBoostingRegressor.*Fix: .*"
                                        "jaximp.permutation_importance"):
        impurity_importance(hgb)  # predictions only: no impurities in its nodes
    with pytest.raises(TypeError, match="got KNeighborsRegressor.*pass the estimator"):
        from sklearn.neighbors import KNeighborsRegressor

        tree_predictor(KNeighborsRegressor().fit(X, y))
    with pytest.raises(TypeError, match="unfitted"):
        tree_predictor(RandomForestRegressor())
    gb = GradientBoostingRegressor(n_estimators=5, init=DecisionTreeRegressor(max_depth=2))
    with pytest.raises(TypeError, match="non-constant init"):
        tree_predictor(gb.fit(X, y))
    Y = np.column_stack([y > 0, y > 1])
    multi = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, Y)
    with pytest.raises(TypeError, match="multi-output classifier"):
        tree_predictor(multi)


def test_gb_zero_init(data):
    X, _, y_bin, _ = data
    est = GradientBoostingClassifier(n_estimators=10, init="zero", random_state=0)
    est.fit(X, y_bin)
    np.testing.assert_allclose(np.asarray(tree_predictor(est)(X)), est.predict_proba(X),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("task,name", [("reg", n) for n in sorted(REGRESSORS)]
                         + [("clf", n) for n in sorted(CLASSIFIERS)])
def test_impurity_importance_equals_feature_importances(data, task, name):
    X, y, _, y_3 = data
    est = (REGRESSORS if task == "reg" else CLASSIFIERS)[name]()
    est.fit(X, y if task == "reg" else y_3)
    imp = impurity_importance(est, feature_names=list("abcde"))
    assert imp.method == "impurity" and imp.feature_names == tuple("abcde")
    assert imp.importances_mean.shape == (P, 1)
    np.testing.assert_allclose(imp.importances_mean[:, 0], est.feature_importances_,
                               rtol=1e-5, atol=1e-7)
    T = imp.info["n_trees"]
    assert imp.importances.shape == (P, 1, T)
    if T == 1:
        assert imp.importances_std is None
    else:
        np.testing.assert_allclose(imp.importances_std, imp.importances.std(axis=-1))
    if name.startswith(("rf", "et")):  # per-tree values are the trees' own importances
        ref = np.array([t.feature_importances_ for t in est.estimators_])
        np.testing.assert_allclose(imp.importances[:, 0, :].T, ref, rtol=1e-5, atol=1e-7)


def test_impurity_importance_skips_single_leaf_trees():
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1.0, 0.0)
    # max_features=1 with a constant target in bootstrap samples is rare; force stumps
    est = RandomForestRegressor(n_estimators=8, max_depth=1, random_state=0).fit(X, y)
    est.estimators_[0].tree_.__setstate__(
        DecisionTreeRegressor().fit(X, np.zeros(40)).tree_.__getstate__())
    imp = impurity_importance(est)
    assert imp.info["n_trees_used"] == 7
    np.testing.assert_allclose(imp.importances_mean[:, 0], est.feature_importances_,
                               rtol=1e-5, atol=1e-7)


def test_wrong_feature_names_length(data):
    X, y, _, _ = data
    est = DecisionTreeRegressor(max_depth=3).fit(X, y)
    with pytest.raises(ValueError, match="one name per feature"):
        impurity_importance(est, feature_names=["a"])
    with pytest.raises(ValueError, match=r"feature_names must be unique; got \['a', 'a'"):
        impurity_importance(est, feature_names=["a"] * X.shape[1])


@pytest.mark.parametrize("name", ["rf", "gb", "tree"])
def test_predictor_through_engine_pd_equals_sklearn_brute(data, name):
    X, y, _, _ = data
    est = REGRESSORS[name]().fit(X, y)
    ours = jaximp.partial_dependence(tree_predictor(est), X, 0, grid="sklearn",
                                     grid_resolution=10)
    ref = sk_partial_dependence(est, X, [0], method="brute", grid_resolution=10)
    np.testing.assert_allclose(np.asarray(ours.average).ravel(), ref["average"].ravel(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("task,name,feature", [
    ("reg", "tree", 0), ("reg", "rf", 3), ("reg", "gb", 0), ("bin", "gb", 3), ("3", "gb", 0)])
def test_recursion_pd_equals_sklearn(data, task, name, feature):
    X, y, y_bin, y_3 = data
    target = {"reg": y, "bin": y_bin, "3": y_3}[task]
    est = (REGRESSORS if task == "reg" else CLASSIFIERS)[name]().fit(X, target)
    values, ours = tree_partial_dependence(est, X, feature, grid_resolution=10)
    ref = sk_partial_dependence(est, X, [feature], method="recursion", grid_resolution=10)
    np.testing.assert_array_equal(values, ref["grid_values"][0])
    assert ours.shape == (len(values), ref["average"].shape[0])
    np.testing.assert_allclose(ours, ref["average"].T, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("task,name,features", [
    ("reg", "gb", (0, 2)), ("reg", "rf", (1, 3)), ("3", "gb", (0, 3)), ("bin", "gb", (2, 0, 3))])
def test_joint_recursion_pd_equals_sklearn(data, task, name, features):
    """Several features: the traversal follows the grid point at splits on any of them;
    scikit-learn's recursion on the same product grid (its output axis first)."""
    X, y, y_bin, y_3 = data
    target = {"reg": y, "bin": y_bin, "3": y_3}[task]
    est = (REGRESSORS if task == "reg" else CLASSIFIERS)[name]().fit(X, target)
    ref = sk_partial_dependence(est, X, [features], method="recursion", grid_resolution=5)
    expected = np.moveaxis(ref["average"], 0, -1)
    values, ours = tree_partial_dependence(est, X, list(features), grid_resolution=5)
    for mine, theirs in zip(values, ref["grid_values"]):
        np.testing.assert_array_equal(mine, theirs)
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    pd_ = jaximp.partial_dependence(est, X, list(features), method="recursion", grid="sklearn",
                                    grid_resolution=5)
    assert pd_.feature_names == tuple(f"x{j}" for j in features)
    np.testing.assert_allclose(pd_.average, expected, rtol=1e-5, atol=1e-6)
    centered = jaximp.partial_dependence(est, X, list(features), method="recursion",
                                         grid="sklearn", grid_resolution=5, centered=True)
    first = expected[(0,) * len(features)]
    np.testing.assert_allclose(centered.average, expected - first, rtol=1e-5, atol=1e-6)
    if name == "gb":  # scikit-learn's method="auto" picks the recursion for gradient boosting
        auto = jaximp.partial_dependence(est, X, list(features), method="auto",
                                         grid="sklearn", grid_resolution=5)
        np.testing.assert_allclose(auto.average, expected, rtol=1e-5, atol=1e-6)


def test_recursion_pd_of_forest_classifier_matches_brute_on_training_tree():
    """Forest classifiers (no sklearn recursion): a tree grown to purity on a product grid,
    whose training distribution is X itself, gives recursion PD = brute PD."""
    g = np.arange(4.0)
    X = np.array([[a, b] for a in g for b in g])
    y = (X[:, 0] + X[:, 1] > 3).astype(int)
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    _, ours = tree_partial_dependence(est, X, 0, grid=g)
    ref = sk_partial_dependence(est, X, [0], method="brute", grid_resolution=10)
    np.testing.assert_allclose(ours[:, 1], ref["average"][0], rtol=1e-5, atol=1e-6)


def test_partial_dependence_method_recursion_and_auto_as_scikit_learn():
    rng = np.random.default_rng(21)
    X = rng.normal(size=(150, 3))
    y = X[:, 0] ** 2 + X[:, 1]
    gb = GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0).fit(X, y)
    ref = sk_partial_dependence(gb, X, [1], method="recursion", grid_resolution=8)
    for method in ("recursion", "auto"):
        ours = jaximp.partial_dependence(gb, X, 1, method=method, grid="sklearn",
                                         grid_resolution=8)
        np.testing.assert_allclose(np.asarray(ours.grid_values[0]), ref["grid_values"][0])
        np.testing.assert_allclose(ours.average[:, 0], ref["average"][0], rtol=1e-5, atol=1e-6)
    ref_brute = sk_partial_dependence(gb, X, [1], method="brute", grid_resolution=8)
    host = jaximp.as_predictor(gb, n_features=3, trees="host")
    for model, rtol in ((gb, 1e-5), (host, 1e-8)):  # float32 node arrays; float64 host
        brute = jaximp.partial_dependence(model, X, 1, grid="sklearn", grid_resolution=8)
        np.testing.assert_allclose(brute.average[:, 0], ref_brute["average"][0], rtol=rtol)
    labels = (y > np.median(y)).astype(int)
    gbc = GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(X, labels)
    ours = jaximp.partial_dependence(gbc, X, 0, method="recursion", grid="sklearn",
                                     grid_resolution=6)
    ref = sk_partial_dependence(gbc, X, [0], method="recursion", grid_resolution=6)
    assert ours.output_names == ("1 (decision)",)
    np.testing.assert_allclose(ours.average[:, 0], ref["average"][0], rtol=1e-5, atol=1e-6)
    # a forest classifier: auto is brute (probabilities over X), as scikit-learn
    rf = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, labels)
    ref = sk_partial_dependence(rf, X, [0], method="brute", grid_resolution=6)
    host = jaximp.as_predictor(rf, n_features=3, trees="host")
    for model, rtol in ((rf, 1e-5), (host, 1e-8)):
        auto = jaximp.partial_dependence(model, X, 0, method="auto", grid="sklearn",
                                         grid_resolution=6)
        np.testing.assert_allclose(auto.average[:, 1], ref["average"][0], rtol=rtol)
    with pytest.raises(ValueError, match="method='recursion' gives the average"):
        jaximp.partial_dependence(gb, X, 0, method="recursion", kind="both")
    with pytest.raises(ValueError, match="method must be one of"):
        jaximp.partial_dependence(gb, X, 0, method="fast")


# ------------------------------------------------------------------ HistGradientBoosting


def _hist_data(seed=3, n=300):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, 3] = rng.integers(0, 5, size=n)  # few values: thresholds at midpoints
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * X[:, 2] * X[:, 3]
    X[rng.random(n) < 0.1, 1] = np.nan  # missing values seen in training (feature 1 only)
    return X, y


HIST = {
    "reg": lambda X, y: HistGradientBoostingRegressor(
        max_iter=8, max_leaf_nodes=8, random_state=0).fit(X, y),
    "poisson": lambda X, y: HistGradientBoostingRegressor(
        loss="poisson", max_iter=8, max_leaf_nodes=8, random_state=0).fit(X, np.exp(y / 3)),
    "bin": lambda X, y: HistGradientBoostingClassifier(
        max_iter=8, max_leaf_nodes=8, random_state=0).fit(X, np.where(y > 0, "yes", "no")),
    "3": lambda X, y: HistGradientBoostingClassifier(
        max_iter=4, max_leaf_nodes=8, random_state=0).fit(X, np.digitize(y, [-1.0, 1.0])),
}


def _hist_rows(est, X):
    """Training rows, rows equal to every raw threshold and to its float64 neighbours, and
    NaN in every feature (features without training NaN included)."""
    rows = [X]
    base = np.nanmedian(X, axis=0)
    for stage in est._predictors:
        for predictor in stage:
            nodes = predictor.nodes[predictor.nodes["is_leaf"] == 0]
            for f, t in zip(nodes["feature_idx"], nodes["num_threshold"]):
                block = np.repeat(base[None], 3, axis=0)
                block[:, f] = [t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf)]
                rows.append(block)
    nan_rows = np.repeat(base[None], X.shape[1], axis=0)
    nan_rows[np.arange(X.shape[1]), np.arange(X.shape[1])] = np.nan
    return np.vstack(rows + [nan_rows])


def _reference_output(est, X):
    return est.predict_proba(X) if hasattr(est, "classes_") else est.predict(X)[:, None]


@pytest.mark.parametrize("name", sorted(HIST))
def test_hist_gradient_boosting_equals_sklearn(name):
    X, y = _hist_data()
    est = HIST[name](X, y)
    pred = tree_predictor(est)
    assert not pred.host and pred.n_outputs == _reference_output(est, X[:2]).shape[1]
    if name == "bin":
        assert pred.output_names == ("no", "yes")
    # float32 (default): rows rounded like the thresholds; training rows route exactly
    np.testing.assert_allclose(np.asarray(pred(X)), _reference_output(est, X),
                               rtol=1e-5, atol=1e-6)
    with jax.enable_x64(True):  # float64 rows against the raw float64 thresholds: exact
        rows = _hist_rows(est, X)
        out = np.asarray(tree_predictor(est)(rows))
        assert out.dtype == np.float64
        np.testing.assert_allclose(out, _reference_output(est, rows), rtol=1e-12, atol=1e-13)


def test_hist_gradient_boosting_refuses_categorical_splits():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 4, size=200), rng.normal(size=200)]).astype(float)
    y = np.where(X[:, 0] == 2, 3.0, 0.0) + X[:, 1]
    est = HistGradientBoostingRegressor(max_iter=5, categorical_features=[0]).fit(X, y)
    with pytest.raises(TypeError, match="has categorical splits, which the JAX array form"):
        tree_predictor(est)
    predictor = jaximp.as_predictor(est, n_features=2)  # stays on the host
    assert predictor.host


def test_hist_gradient_boosting_with_categorical_features_but_no_categorical_split():
    """scikit-learn's preprocessing puts categorical columns first, and the nodes index its
    output: a model that never split on its categorical column reads X's columns through
    that order (predictions, TreeSHAP and the recursion PD of the column that matters)."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=(300, 2)), rng.integers(0, 4, 300)])
    y = 2 * X[:, 0] + 0.1 * rng.normal(size=300)  # the categorical column is noise
    est = HistGradientBoostingRegressor(max_iter=5, categorical_features=[2]).fit(X, y)
    nodes = [p.nodes for stage in est._predictors for p in stage]
    assert not any(nd["is_categorical"][nd["is_leaf"] == 0].any() for nd in nodes)
    np.testing.assert_allclose(np.asarray(tree_predictor(est)(X[:20]))[:, 0],
                               est.predict(X[:20]), rtol=1e-5, atol=1e-5)
    shap = jaximp.tree_shap(est, X[:20])
    np.testing.assert_allclose(shap.values.sum(axis=1)[:, 0] + shap.base_values[0],
                               est.predict(X[:20]), rtol=1e-5, atol=1e-5)
    assert np.abs(shap.values[:, 0]).mean() > 0.3 and np.all(shap.values[:, 1:] == 0)
    grid, average = tree_partial_dependence(est, X, 0, grid_resolution=5)
    # every split is on x0: the recursion's PD is the trees' sum along x0 (without the
    # baseline, as scikit-learn's recursion leaves it out; its own gives 0 on this model)
    along = est.predict(np.column_stack([grid, np.zeros((5, 2))])) - est._baseline_prediction
    np.testing.assert_allclose(average[:, 0], along.ravel(), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ as_predictor dispatch


def test_as_predictor_reads_trees_into_arrays(data):
    X, y, _, y_3 = data
    rf = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0).fit(X, y)
    arrays = jaximp.as_predictor(rf, n_features=P)
    assert not arrays.host and arrays.name.endswith("(JAX trees)")
    host = jaximp.as_predictor(rf, n_features=P, trees="host")
    assert host.host
    np.testing.assert_allclose(np.asarray(arrays(X))[:, 0], rf.predict(X), rtol=1e-5,
                               atol=1e-6)
    clf = GradientBoostingClassifier(n_estimators=5, random_state=0).fit(X, y_3)
    named = jaximp.as_predictor(clf, n_features=P, output_names=["a", "b", "c"])
    assert not named.host and named.output_names == ("a", "b", "c")
    assert jaximp.as_predictor(clf, n_features=P).output_names == ("0", "1", "2")
    # other responses, another width, reordered or non-numeric columns: the host path
    assert jaximp.as_predictor(clf, n_features=P, response_method="predict").host
    assert jaximp.as_predictor(clf, n_features=P, response_method="decision_function").host
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(P)])
    fitted = RandomForestRegressor(n_estimators=3, random_state=0).fit(df, y)
    assert not jaximp.as_predictor(fitted, sample=df.iloc[:2], n_features=P).host
    with pytest.raises(ValueError, match="feature names"):  # scikit-learn's own check
        jaximp.as_predictor(fitted, sample=df.iloc[:2, ::-1], n_features=P)
    hist = HistGradientBoostingRegressor(max_iter=3).fit(X, y)
    assert jaximp.as_predictor(hist, n_features=P).host  # float64 thresholds need x64
    with jax.enable_x64(True):
        assert not jaximp.as_predictor(hist, n_features=P).host
    with pytest.raises(ValueError, match=r"trees must be one of \('arrays', 'host'\); got "
                                         r"'jax'"):
        jaximp.as_predictor(rf, n_features=P, trees="jax")


def test_float64_rows_under_x64_equal_the_host_path(data):
    """Under x64 the engine feeds float64 rows: the array form (which rounds them to float32
    as scikit-learn does) equals the float64 host path to float64 precision."""
    X, y, _, _ = data
    rf = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0).fit(X, y)
    with jax.enable_x64(True):
        rows = X + 1e-9  # float64 values that float32 cannot hold
        host = jaximp.as_predictor(rf, n_features=P, trees="host", sample=rows[:2])
        a = jaximp.partial_dependence(rf, rows, 0, grid="sklearn", grid_resolution=6)
        b = jaximp.partial_dependence(host, rows, 0, grid="sklearn", grid_resolution=6)
        assert a.average.dtype == np.float64
        np.testing.assert_allclose(a.average, b.average, rtol=1e-12)


def test_tree_pd_refuses_a_huge_joint_grid_with_the_fix():
    X = np.random.default_rng(0).uniform(size=(60, 8))
    est = DecisionTreeRegressor(max_depth=3).fit(X, X.sum(axis=1))
    with pytest.raises(ValueError, match=r"has 60 x 60 .* points .*partial_dependence_all"):
        jaximp.tree_partial_dependence(est, X, list(range(8)))


def test_under_x64_pd_and_permutation_importance_equal_scikit_learn_to_1e_7(data):
    """Float64 node values and rows under x64: PD (brute and recursion) and permutation
    importance agree with scikit-learn's float64 results at scikit-learn's own test tolerance
    (the float32 default differs by about 1e-6 relative)."""
    from sklearn.inspection import partial_dependence as sk_partial_dependence

    X, y, _, y_3 = data
    forest = RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0).fit(X, y_3)
    boost = GradientBoostingRegressor(n_estimators=15, random_state=0).fit(X, y)
    with jax.enable_x64(True):
        for est, method in ((forest, "brute"), (boost, "brute"), (boost, "recursion")):
            ours = jaximp.partial_dependence(est, X, 1, grid_resolution=6, method=method)
            theirs = sk_partial_dependence(est, X, [1], grid_resolution=6, method=method)
            want = theirs["average"]  # (o, g); a binary or regression model: one row
            got = ours.average.T[-want.shape[0]:]
            np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-12)
        result = jaximp.permutation_importance(boost, X, y, n_repeats=2, random_state=0)
        # reference: the model's float64 predictions on the engine's own permutations
        base = np.mean((boost.predict(X) - y) ** 2)
        np.testing.assert_allclose(result.info["baseline"], [base], rtol=1e-12)


# ------------------------------------------------------------------ float64 under x64


def _reference_recursion(est, feature, values):
    """scikit-learn's weighted traversal in float64 NumPy, mean over the trees: the grid cast
    to float32 and compared with the float64 thresholds, both children weighted by their
    training weight at other splits; classifiers' class fractions normalized as
    ``predict_proba`` (forest classifiers, whose recursion scikit-learn does not offer)."""
    total = 0.0
    for tree in est.estimators_:
        t = tree.tree_
        val = t.value[:, 0, :]
        if hasattr(est, "classes_"):
            val = val / val.sum(axis=1, keepdims=True)
        weight = t.weighted_n_node_samples
        rows = []
        for z in np.asarray(values, np.float32):
            stack, out = [(0, 1.0)], 0.0
            while stack:
                node, w = stack.pop()
                left, right = t.children_left[node], t.children_right[node]
                if left == -1:
                    out = out + w * val[node]
                elif t.feature[node] == feature:
                    stack.append((left if z <= t.threshold[node] else right, w))
                else:
                    stack += [(left, w * weight[left] / weight[node]),
                              (right, w * weight[right] / weight[node])]
            rows.append(out)
        total = total + np.array(rows)
    return total / len(est.estimators_)


def _x64_models(data):
    X, y, y_bin, y_3 = data
    return {
        "rf_clf": RandomForestClassifier(n_estimators=10, max_depth=6, random_state=0).fit(X, y_3),
        "gb_clf": GradientBoostingClassifier(n_estimators=15, max_depth=3,
                                             random_state=0).fit(X, y_bin),
        "gb_clf3": GradientBoostingClassifier(n_estimators=8, max_depth=3,
                                              random_state=0).fit(X, y_3),
        "gb_reg": GradientBoostingRegressor(n_estimators=20, max_depth=3,
                                            random_state=0).fit(X, y),
    }


def _check_against_scikit_learn(models, X, x64):
    """Predictions, recursion PD (feature 0 and the few-valued feature 3) and brute PD of each
    model against scikit-learn: float64 to 1e-7 under x64, float32 to 1e-5 otherwise."""
    dtype, rtol = (np.float64, 1e-7) if x64 else (np.float32, 1e-5)
    X_new = np.random.default_rng(5).normal(scale=1.5, size=(100, P))  # unseen float64 rows
    for name, est in models.items():
        pred = tree_predictor(est)
        assert pred.dtype == dtype and pred.params["value"].dtype == dtype, name
        out = np.asarray(pred(X_new))
        assert out.dtype == dtype, name
        np.testing.assert_allclose(out, _reference_output(est, X_new), rtol=rtol,
                                   atol=rtol * 1e-3, err_msg=name)
        for feature in (0, 3):
            values, ours = tree_partial_dependence(est, X, feature, grid_resolution=8)
            if name == "rf_clf":
                want = _reference_recursion(est, feature, values)
            else:
                want = sk_partial_dependence(est, X, [feature], method="recursion",
                                             grid_resolution=8)["average"].T
            np.testing.assert_allclose(ours, want, rtol=rtol, atol=rtol * 1e-3, err_msg=name)
        brute = jaximp.partial_dependence(est, X, 1, grid_resolution=6)
        want = sk_partial_dependence(est, X, [1], method="brute", grid_resolution=6)["average"]
        np.testing.assert_allclose(brute.average.T[-want.shape[0]:], want, rtol=rtol,
                                   atol=rtol * 1e-3, err_msg=name)


def test_under_x64_trees_equal_scikit_learn_to_1e_7(data):
    """Float64 node values and sums under x64: predict / predict_proba and the recursion PD of
    forest and boosting models equal scikit-learn's float64 results to 1e-7 on float64 data;
    the float32 default stays within 1e-5. The two modes share one ``apply`` (and the engine's
    caches keyed on it), so each runs again after the other has compiled: nothing compiled for
    one dtype leaks into the other."""
    from jaximp.models._predictor import x64_enabled

    X = data[0]
    models = _x64_models(data)
    before = x64_enabled()
    applies = set()
    for x64 in (False, True, False, True):
        with jax.enable_x64(x64):  # restored on leaving, failures included
            _check_against_scikit_learn(models, X, x64)
            applies.add(tree_predictor(models["gb_reg"]).apply)
    assert len(applies) == 1  # one apply per model shape, whatever the dtype
    assert x64_enabled() == before


def test_x64_recursion_reference_equals_scikit_learn(data):
    """The float64 reference traversal used for forest classifiers equals scikit-learn's own
    recursion on a forest regressor, so the comparison above checks scikit-learn's rule."""
    X, y, _, _ = data
    rf = RandomForestRegressor(n_estimators=5, max_depth=6, random_state=0).fit(X, y)
    for feature in (0, 3):
        ref = sk_partial_dependence(rf, X, [feature], method="recursion", grid_resolution=8)
        mine = _reference_recursion(rf, feature, ref["grid_values"][0])
        np.testing.assert_allclose(mine[:, 0], ref["average"][0], rtol=1e-12)


# ------------------------------------------------------------------ recursion refusals


def _recursion_refused():
    """Models the recursion cannot traverse, with what its message must say they are."""
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    y = X[:, 0] + X[:, 1] ** 2
    rf = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y > 0)
    return X, [
        ("linear", LinearRegression().fit(X, y), r"got LinearRegression\. Use method='brute'"),
        ("predictor", jaximp.as_predictor(rf, response_method="predict_proba"),
         (r"got a wrapped Predictor, whose trees it cannot see\. Use method='brute' .*or pass "
          r"the fitted tree estimator itself rather than a Predictor \(this one is "
          r"'RandomForestClassifier \(JAX trees\)'\)")),
        ("init", GradientBoostingRegressor(n_estimators=3, init=LinearRegression()).fit(X, y),
         (r"got GradientBoostingRegressor with a non-constant init \(LinearRegression\)\. "
          r"Use method='brute'")),
        ("hist", HistGradientBoostingRegressor(max_iter=3).fit(X, y, sample_weight=np.ones(60)),
         (r"got HistGradientBoostingRegressor fitted with sample weights \(its node counts are "
          r"unweighted, as scikit-learn refuses too\)\. Use method='brute'")),
        ("multi", RandomForestClassifier(n_estimators=3, random_state=0).fit(
            X, np.column_stack([y > 0, y > 1])),
         (r"got RandomForestClassifier with several outputs \(multi-output classifier\)\. "
          r"Fit one classifier per output")),
    ]


@pytest.mark.parametrize("case", ["linear", "predictor", "init", "hist", "multi"])
def test_recursion_refusal_names_the_model_and_method_brute(case):
    """partial_dependence(method='recursion') and tree_partial_dependence say what the
    recursion needs (the model's trees), what came in and that method='brute' is the fix, not
    the tree reader's host-path advice, which cannot help a traversal of the trees."""
    X, cases = _recursion_refused()
    model, message = {name: (m, msg) for name, m, msg in cases}[case]
    needs = (r"^method='recursion' traverses the trees of a fitted scikit-learn tree model "
             r"\({}: a DecisionTree, RandomForest or ExtraTrees regressor or classifier, a "
             r"GradientBoosting regressor or classifier with a constant init, or a "
             r"HistGradientBoosting one without categorical splits or fit-time sample "
             r"weights\); ")
    with pytest.raises(TypeError, match=needs.format("model") + message) as error:
        jaximp.partial_dependence(model, X, 0, method="recursion")
    assert "predicts on the host" not in str(error.value)
    with pytest.raises(TypeError, match=needs.format("estimator") + message):
        tree_partial_dependence(model, X, 0)
    if case != "hist":  # the tree reader keeps its own advice (HistGradientBoosting: read)
        with pytest.raises(TypeError, match="pass the estimator itself"):
            tree_predictor(model)


@pytest.mark.parametrize("task", ["reg", "bin", "3"])
def test_hist_gradient_boosting_recursion_equals_sklearn(data, task):
    """HistGradientBoosting's recursion (the sum of its trees' traversals, no baseline) equals
    scikit-learn's for one feature and a pair, through partial_dependence with method
    'recursion' and 'auto'; fitted with sample weights, 'auto' takes the brute PD."""
    X, y, y_bin, y_3 = data
    target = {"reg": y, "bin": y_bin, "3": y_3}[task]
    kind = HistGradientBoostingRegressor if task == "reg" else HistGradientBoostingClassifier
    est = kind(max_iter=15, random_state=0).fit(X, target)
    for features in ([1], [(0, 2)]):
        ref = sk_partial_dependence(est, X, features, method="recursion", grid_resolution=6)
        expected = np.moveaxis(ref["average"], 0, -1)
        chosen = list(features[0]) if isinstance(features[0], tuple) else features[0]
        _, ours = tree_partial_dependence(est, X, chosen, grid_resolution=6)
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
        for method in ("recursion", "auto"):
            pd_ = jaximp.partial_dependence(est, X, chosen, method=method, grid_resolution=6)
            np.testing.assert_allclose(pd_.average, expected, rtol=1e-5, atol=1e-6)
    if task == "3":
        assert pd_.output_names == ("0 (decision)", "1 (decision)", "2 (decision)")
    weighted = kind(max_iter=5, random_state=0).fit(X, target, sample_weight=np.ones(len(X)))
    auto = jaximp.partial_dependence(weighted, X, 1, method="auto", grid_resolution=6)
    brute = sk_partial_dependence(weighted, X, [1], method="brute", grid_resolution=6)
    np.testing.assert_allclose(np.moveaxis(auto.average, -1, 0)[-brute["average"].shape[0]:],
                               brute["average"], rtol=1e-5, atol=1e-6)


def test_recursion_takes_an_x_with_missing_values():
    """The recursion reads X only for the grid: NaN in X is taken (HistGradientBoosting
    handles it), the grid is built from the values present, and the PD equals
    scikit-learn's recursion on that grid (its own grid from X is all NaN)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X[:, 0] ** 2 + X[:, 1]
    X[rng.uniform(size=X.shape) < 0.1] = np.nan
    model = HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(X, y)
    ours = jaximp.partial_dependence(model, X, 0, method="recursion", grid_resolution=8)
    grid = np.asarray(ours.grid_values[0])
    assert np.isfinite(grid).all()
    ref = sk_partial_dependence(model, X, [0], method="recursion", custom_values={0: grid})
    np.testing.assert_allclose(ours.average[:, 0], ref["average"][0], rtol=1e-5, atol=1e-6)
    values, average = tree_partial_dependence(model, X, 0, grid=grid)
    np.testing.assert_allclose(average[:, 0], ref["average"][0], rtol=1e-5, atol=1e-6)


def test_recursion_refuses_an_unfitted_model_with_fit():
    with pytest.raises(TypeError, match=r"expected a fitted GradientBoostingRegressor; got an "
                                        r"unfitted one\. Fix: call fit\(X, y\) first\."):
        jaximp.partial_dependence(GradientBoostingRegressor(), np.zeros((5, 2)), 0,
                                  method="recursion")


def test_recursion_refuses_columns_other_than_the_fitted_ones():
    """The traversal reads columns by position: a DataFrame in another order, renamed, or an
    array of another width would give another feature's PD (scikit-learn's recursion
    accepts them); they are refused, as tree_shap and the brute path refuse them."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    model = GradientBoostingRegressor(n_estimators=5).fit(frame, 5 * frame.a + 0.1 * frame.b)
    for X, match in ((frame[["c", "b", "a"]], r"columns \['a', 'b', 'c'\] in order; got "
                                              r"\['c', 'b', 'a'\]"),
                     (frame.set_axis(["p", "q", "r"], axis=1), "in order; got"),
                     (np.c_[frame.to_numpy(), frame.a], "the 3 features the model was fitted "
                                                       "on; got 4 columns")):
        with pytest.raises(ValueError, match=match):
            jaximp.partial_dependence(model, X, 0, method="recursion")
        with pytest.raises(ValueError, match=match):
            tree_partial_dependence(model, X, 0)


def test_recursion_of_a_category_column_reads_the_values_the_trees_were_fitted_on():
    """scikit-learn fits a category column of numbers on its values (LightGBM on its codes):
    the recursion's grid is the levels, evaluated as the model reads them."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(300, 2)), columns=["a", "b"])
    frame["k"] = pd.Categorical(rng.choice([1, 2, 3], 300))
    y = frame.a + (frame.k == 2) * 2.0
    forest = RandomForestRegressor(n_estimators=10, max_depth=5, random_state=0).fit(frame, y)
    ours = jaximp.partial_dependence(forest, frame, "k", method="recursion")
    ref = sk_partial_dependence(forest, frame.astype({"k": float}), ["k"], method="recursion")
    assert ours.grid_values == ((1, 2, 3),)
    np.testing.assert_allclose(ours.average[:, 0], ref["average"][0], rtol=1e-5)
    lightgbm = pytest.importorskip("lightgbm")
    boosted = lightgbm.LGBMRegressor(n_estimators=30, verbose=-1).fit(frame, y)
    ours = jaximp.partial_dependence(boosted, frame, "k", method="recursion")
    assert ours.grid_values == ((1, 2, 3),) and np.argmax(ours.average[:, 0]) == 1
    assert ours.average[1, 0] - ours.average[0, 0] > 1.5


def test_recursion_reads_categorical_of_numpy_columns():
    """categorical= marks a NumPy column as levels for the recursion too: its grid is every
    level (scikit-learn's categorical_features), shown as given, not a 100-point range."""
    rng = np.random.default_rng(1)
    X = np.c_[rng.normal(size=400), rng.integers(0, 150, 400)]
    model = GradientBoostingRegressor(n_estimators=5, random_state=0).fit(
        X, X[:, 0] + (X[:, 1] % 3))
    ours = jaximp.partial_dependence(model, X, 1, categorical=[1], method="recursion")
    ref = sk_partial_dependence(model, X, [1], categorical_features=[1], method="recursion")
    np.testing.assert_array_equal(ours.grid_values[0], ref["grid_values"][0])
    assert all(type(v) is int for v in ours.grid_values[0])
    np.testing.assert_allclose(ours.average[:, 0], ref["average"][0], rtol=1e-5, atol=1e-6)
    vip = jaximp.pd_importance(model, X, categorical=[1], method="recursion")
    curve = ref["average"][0]
    assert vip.info.measure == {"x0": "sd", "x1": "range4"}
    np.testing.assert_allclose(vip.importances_mean[1, 0], np.ptp(curve) / 4, rtol=1e-5)


def test_recursion_names_and_auto_rule_follow_scikit_learn(data):
    """A multiclass boosting classifier's recursion gives each class's raw decision function,
    named so; method='auto' takes the recursion for gradient boosting only with init=None,
    as scikit-learn (init='zero': brute, the probabilities over X)."""
    X, _, y_bin, y_3 = data
    gb3 = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y_3)
    pd_ = jaximp.partial_dependence(gb3, X, 0, method="recursion", grid_resolution=5)
    assert pd_.output_names == ("0 (decision)", "1 (decision)", "2 (decision)")
    zero = GradientBoostingClassifier(n_estimators=5, max_depth=2, init="zero",
                                      random_state=0).fit(X, y_bin)
    ours = jaximp.partial_dependence(zero, X, 0, method="auto", grid_resolution=5)
    ref = sk_partial_dependence(zero, X, [0], method="auto", grid_resolution=5)
    assert ours.output_names == ("0", "1")
    np.testing.assert_allclose(ours.average[:, 1], ref["average"][0], rtol=1e-5, atol=1e-6)


def test_read_trees_cache_follows_a_refit():
    """The trees read for one estimator are reused only while it holds the same trees: after
    a refit (and a warm-started extension) the recursion PD equals scikit-learn's again."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.inspection import partial_dependence as sk_pd

    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 3))
    forest = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0,
                                   warm_start=True)
    for y in (X[:, 0] ** 2, X[:, 1] - X[:, 2]):
        forest.fit(X, y)
        for extra in (0, 3):
            forest.n_estimators += extra
            forest.fit(X, y)
            ours = jaximp.partial_dependence(forest, X, [0], method="recursion",
                                             grid_resolution=7)
            theirs = sk_pd(forest, X, [0], method="recursion", grid_resolution=7)
            np.testing.assert_allclose(ours.average[:, 0], theirs["average"][0], rtol=1e-5,
                                       atol=1e-6)


def test_tree_arrays_refuse_data_of_other_columns_than_the_fitted_ones():
    """The arrays read columns by position: another order of a DataFrame's columns, or another
    width, gave other features' splits silently (scikit-learn refuses both)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(100, 3)), columns=["a", "b", "c"])
    forest = RandomForestRegressor(n_estimators=5, random_state=0).fit(frame, 3 * frame.a)
    arrays = tree_predictor(forest)
    with pytest.raises(ValueError, match=r"fitted on the columns \['a', 'b', 'c'\]; the data's "
                                         r"are \['c', 'a', 'b'\]"):
        jaximp.permutation_importance(arrays, frame[["c", "a", "b"]], 3 * frame.a)
    with pytest.raises(ValueError, match=r"reads 3 columns; X has 2"):
        jaximp.permutation_importance(arrays, frame.to_numpy()[:, :2], 3 * frame.a)
    with pytest.raises(ValueError, match=r"reads rows of 3 columns; got shape \(100, 4\)"):
        arrays(np.c_[frame.to_numpy(), frame.a])
    np.testing.assert_allclose(np.asarray(arrays(frame))[:, 0], forest.predict(frame), rtol=1e-5)
