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
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.inspection import partial_dependence as sk_partial_dependence
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import jaximp
from jaximp._trees import impurity_importance, tree_partial_dependence, tree_predictor

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


def test_unsupported_estimators_raise(data):
    X, y, _, _ = data
    hgb = HistGradientBoostingRegressor(max_iter=5).fit(X, y)
    with pytest.raises(TypeError, match="got HistGradientBoostingRegressor.*pass the estimator"):
        tree_predictor(hgb)
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


def test_recursion_pd_of_forest_classifier_matches_brute_on_training_tree():
    """Forest classifiers (no sklearn recursion): a tree grown to purity on a product grid,
    whose training distribution is X itself, gives recursion PD = brute PD."""
    g = np.arange(4.0)
    X = np.array([[a, b] for a in g for b in g])
    y = (X[:, 0] + X[:, 1] > 3).astype(int)
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    values, ours = tree_partial_dependence(est, X, 0, grid=g)
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
    brute = jaximp.partial_dependence(gb, X, 1, grid="sklearn", grid_resolution=8)
    ref_brute = sk_partial_dependence(gb, X, [1], method="brute", grid_resolution=8)
    np.testing.assert_allclose(brute.average[:, 0], ref_brute["average"][0], rtol=1e-8)
    labels = (y > np.median(y)).astype(int)
    gbc = GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(X, labels)
    ours = jaximp.partial_dependence(gbc, X, 0, method="recursion", grid="sklearn",
                                     grid_resolution=6)
    ref = sk_partial_dependence(gbc, X, [0], method="recursion", grid_resolution=6)
    assert ours.output_names == ("1 (decision)",)
    np.testing.assert_allclose(ours.average[:, 0], ref["average"][0], rtol=1e-5, atol=1e-6)
    # a forest classifier: auto is brute (probabilities over X), as scikit-learn
    rf = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, labels)
    auto = jaximp.partial_dependence(rf, X, 0, method="auto", grid="sklearn", grid_resolution=6)
    ref = sk_partial_dependence(rf, X, [0], method="brute", grid_resolution=6)
    np.testing.assert_allclose(auto.average[:, 1], ref["average"][0], rtol=1e-8)
    with pytest.raises(ValueError, match="method='recursion' gives the average"):
        jaximp.partial_dependence(gb, X, 0, method="recursion", kind="both")
    with pytest.raises(ValueError, match="method must be one of"):
        jaximp.partial_dependence(gb, X, 0, method="fast")
