"""TreeSHAP against shap's TreeExplainer, a float64 NumPy Algorithm 2, additivity and jaximp's
exact interventional Shapley values."""

import itertools
import math

import jax
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeRegressor

import jaximp
from jaximp.methods import _tree_shap as tree_shap_module
from jaximp.methods._tree_shap import tree_shap

shap = pytest.importorskip("shap")

RTOL = 1e-5  # float32 against shap's float64


def _data(n=200, p=4, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * np.sin(3 * X[:, -1]) + 0.1 * rng.normal(size=n)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, y


def _close(ours, ref, rtol=RTOL):
    """Elementwise relative agreement, with an absolute floor at rtol times the largest."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


# ------------------------------------------------------------------ a float64 Algorithm 2


def _algorithm2(tree, x):
    """Path-dependent TreeSHAP of one scikit-learn tree at row x (Lundberg et al. 2020,
    Algorithm 2: EXTEND and UNWIND over the unique path), float64, NaN -> default branch."""
    phi = np.zeros(x.size)
    cover = tree.weighted_n_node_samples
    value = tree.value[:, 0, 0]

    def extend(path, zero, one, feature):
        path = [list(e) for e in path] + [[feature, zero, one, 1.0 if not path else 0.0]]
        depth = len(path) - 1
        for i in range(depth - 1, -1, -1):
            path[i + 1][3] += one * path[i][3] * (i + 1) / (depth + 1)
            path[i][3] = zero * path[i][3] * (depth - i) / (depth + 1)
        return path

    def unwind(path, k):
        depth = len(path) - 1
        zero, one = path[k][1], path[k][2]
        path = [list(e) for e in path]
        carry = path[depth][3]
        for i in range(depth - 1, -1, -1):
            if one != 0:
                keep = path[i][3]
                path[i][3] = carry * (depth + 1) / ((i + 1) * one)
                carry = keep - path[i][3] * zero * (depth - i) / (depth + 1)
            else:
                path[i][3] = path[i][3] * (depth + 1) / (zero * (depth - i))
        weights = [e[3] for e in path[:depth]]
        rest = path[:k] + path[k + 1:]
        return [[e[0], e[1], e[2], w] for e, w in zip(rest, weights)]

    def recurse(node, path, zero, one, feature):
        path = extend(path, zero, one, feature)
        left, right = tree.children_left[node], tree.children_right[node]
        if left == -1:
            for k in range(1, len(path)):
                w = sum(e[3] for e in unwind(path, k))
                phi[path[k][0]] += w * (path[k][2] - path[k][1]) * value[node]
            return
        f = tree.feature[node]
        if np.isnan(x[f]):
            hot = left if tree.missing_go_to_left[node] else right
        else:
            hot = left if x[f] <= tree.threshold[node] else right
        cold = right if hot == left else left
        in_zero, in_one = 1.0, 1.0
        seen = [k for k, e in enumerate(path) if k > 0 and e[0] == f]
        if seen:
            in_zero, in_one = path[seen[0]][1], path[seen[0]][2]
            path = unwind(path, seen[0])
        recurse(hot, path, in_zero * cover[hot] / cover[node], in_one, f)
        recurse(cold, path, in_zero * cover[cold] / cover[node], 0.0, f)

    recurse(0, [], 1.0, 1.0, -1)
    return phi


def test_algorithm2_reference_on_a_small_tree_with_missing_values(kernel):
    X, y = _data(n=150, missing=0.15, seed=1)
    tree = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)
    rows = X[:12]
    ref = np.stack([_algorithm2(tree.tree_, x) for x in rows])
    sv = tree_shap(tree, rows)
    _close(sv.values[..., 0], ref)
    # the reference itself is additive, and so are we (a NaN row follows the default branch)
    np.testing.assert_allclose(ref.sum(axis=1) + sv.base_values[0], tree.predict(rows),
                               atol=1e-12)
    np.testing.assert_allclose(sv.values[..., 0].sum(axis=1) + sv.base_values[0],
                               tree.predict(rows), rtol=1e-5, atol=1e-5)
    assert np.isnan(rows).any()
    with jax.enable_x64(True):
        sv64 = tree_shap(tree, rows)
    assert sv64.values.dtype == np.float64
    np.testing.assert_allclose(sv64.values[..., 0], ref, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ shap's TreeExplainer


def _models():
    X, y = _data()
    labels = np.digitize(y, [-0.5, 0.8])
    return X, [
        DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y),
        RandomForestRegressor(n_estimators=8, max_depth=5, random_state=0).fit(X, y),
        RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0).fit(X, labels),
        GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0).fit(X, y),
        GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(X, y > 0),
    ]


def _shap_values(explainer, X):
    ref = explainer.shap_values(X, check_additivity=False)
    ref = np.asarray(ref)
    return ref if ref.ndim == 3 else ref[..., None]


@pytest.fixture(params=["table", "polynomial"])
def kernel(request, monkeypatch):
    """Both path-dependent kernels: the pattern lookup and the polynomial per row."""
    monkeypatch.setattr(tree_shap_module, "_use_table",
                        lambda *args: request.param == "table")
    return request.param


@pytest.mark.parametrize("index", range(5))
def test_path_dependent_equals_shap(index, kernel):
    X, models = _models()
    model, rows = models[index], X[:25]
    explainer = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    sv = tree_shap(model, rows)
    _close(sv.values, _shap_values(explainer, rows))
    np.testing.assert_allclose(sv.base_values, np.ravel(explainer.expected_value), rtol=1e-6,
                               atol=1e-7)
    # additivity on the raw scale
    raw = (model.decision_function(rows) if isinstance(model, GradientBoostingClassifier)
           else model.predict_proba(rows) if hasattr(model, "predict_proba")
           else model.predict(rows))
    raw = raw.reshape(len(rows), -1)
    np.testing.assert_allclose(sv.values.sum(axis=1) + sv.base_values, raw, rtol=1e-5,
                               atol=1e-5)


def test_path_dependent_float64_equals_shap_to_1e10():
    X, models = _models()
    rows = X[:10]
    with jax.enable_x64(True):
        for model in (models[1], models[4]):
            sv = tree_shap(model, rows)
            ref = _shap_values(shap.TreeExplainer(model), rows)
            np.testing.assert_allclose(sv.values, ref, rtol=1e-10, atol=1e-12)


def test_multiclass_boosting_outputs_and_selection():
    X, y = _data()
    gb = GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0).fit(
        X, np.digitize(y, [-0.5, 0.8]))
    rows = X[:15]
    sv = tree_shap(gb, rows)
    assert sv.output_names == ("0", "1", "2")
    np.testing.assert_allclose(sv.values.sum(axis=1) + sv.base_values,
                               gb.decision_function(rows), rtol=1e-5, atol=1e-5)
    # class 2 alone: the trees of class 2 by Algorithm 2, times the learning rate
    ref = sum(_algorithm2(est.tree_, x) for est in gb.estimators_[:, 2] for x in [rows[0]])
    one = tree_shap(gb, rows[:1], output="2")
    _close(one.values[0, :, 0], gb.learning_rate * ref)
    # one output's program is not all outputs' one: float32 sums may differ in the last bit
    np.testing.assert_allclose(one.values[..., 0], sv.values[:1, :, 2], rtol=1e-6, atol=1e-9)


def test_hist_gradient_boosting_with_missing_values():
    X, y = _data(missing=0.2)
    model = HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(X, y)
    rows = X[:20]
    sv = tree_shap(model, rows)
    _close(sv.values, _shap_values(shap.TreeExplainer(model), rows))
    np.testing.assert_allclose(sv.values[..., 0].sum(axis=1) + sv.base_values[0],
                               model.predict(rows), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ interactions


@pytest.mark.parametrize("index", [2, 4])
def test_interactions_equal_shap(index, kernel):
    X, models = _models()
    model, rows = models[index], X[:10]
    explainer = shap.TreeExplainer(model)
    si = tree_shap(model, rows, interactions=True)
    ref = np.asarray(explainer.shap_interaction_values(rows))
    ref = ref if ref.ndim == 4 else ref[..., None]
    _close(si.values, ref)
    np.testing.assert_allclose(si.values.sum(axis=2), tree_shap(model, rows).values,
                               rtol=1e-5, atol=1e-6)
    assert si.interaction().values.shape == (6, si.values.shape[-1])
    explanation = si.to_shap(output=0)  # shap's layout for one output: (n, p, p), (n,)
    _close(explanation.values, ref[..., 0])
    np.testing.assert_allclose(explanation.base_values, si.base_values[0])


# ------------------------------------------------------------------ interventional


def test_interventional_equals_exact_shapley_values_and_shap():
    X, models = _models()
    rows, background = X[:6], X[100:130]
    for model in (models[1], models[3]):
        sv = tree_shap(model, rows, background=background)
        exact = jaximp.shapley_values(model, rows, background, method="exact",
                                      background_size=None)
        _close(sv.values, exact.values)
        np.testing.assert_allclose(sv.base_values, exact.base_values, rtol=1e-5)
        ref = shap.TreeExplainer(model, background, feature_perturbation="interventional")
        _close(sv.values, _shap_values(ref, rows))
    # the random forest classifier's probabilities, and weights on the background
    weights = np.random.default_rng(0).uniform(0.5, 2.0, size=len(background))
    sv = tree_shap(models[2], rows, background=background, background_weight=weights)
    exact = jaximp.shapley_values(models[2], rows, background, method="exact",
                                  background_size=None, background_weight=weights)
    _close(sv.values, exact.values)
    np.testing.assert_allclose(sv.base_values, exact.base_values, rtol=1e-5)


def test_interventional_interactions_equal_exact():
    X, models = _models()
    rows, background = X[:4], X[100:120]
    si = tree_shap(models[1], rows, background=background, interactions=True)
    exact = jaximp.shapley_interactions(models[1], rows, background, background_size=None)
    _close(si.values, exact.values)


# ------------------------------------------------------------------ result and bad inputs


def test_result_read_outs():
    X, y = _data()
    et = ExtraTreesRegressor(n_estimators=4, max_depth=4, random_state=0).fit(X, y)
    sv = tree_shap(et, X[:8], feature_names=["a", "b", "c", "d"])
    assert sv.feature_names == ("a", "b", "c", "d")
    assert sv.method == "tree_path_dependent"
    frame = sv.to_frame()
    assert len(frame) == 8 * 4 and set(frame.columns) >= {"row", "feature", "value"}
    np.testing.assert_allclose(sv.importance().importances_mean[:, 0],
                               np.abs(sv.values[..., 0]).mean(axis=0))
    np.testing.assert_array_equal(sv.data, X[:8])


def test_bad_inputs():
    X, y = _data()
    with pytest.raises(TypeError, match="shapley_values"):
        tree_shap(LinearRegression().fit(X, y), X)
    rf = RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="4 features"):
        tree_shap(rf, X[:, :3])
    with pytest.raises(TypeError, match="interactions must be True or False"):
        tree_shap(rf, X, interactions="yes")
    with pytest.raises(ValueError, match="background_weight needs a background"):
        tree_shap(rf, X, background_weight=np.ones(3))
    with pytest.raises(ValueError, match="background_weight must be 5"):
        tree_shap(rf, X[:2], background=X[:5], background_weight=np.ones(3))
    with pytest.raises(ValueError, match=r"^background is empty: got shape \(0, 4\)"):
        tree_shap(rf, X[:2], background=X[:0])
    with pytest.raises(ValueError, match="out of range"):
        tree_shap(rf, X[:2], output=3)


def test_a_booster_the_arrays_cannot_read_is_sent_to_the_fix_that_works():
    """A LightGBM objective the arrays refuse: tree_shap names shapley_values of the host
    predictor, which a Booster gets without n_features, and whose exact values are the
    library's predictions' Shapley values (a float64 brute force over coalitions)."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _data()
    booster = lgb.train({"objective": "multiclassova", "num_class": 3, "verbosity": -1,
                         "num_threads": 1}, lgb.Dataset(X, np.digitize(y, np.quantile(
                             y, [1 / 3, 2 / 3]))), 4)
    with pytest.raises(TypeError, match=r"shapley_values\(jaximp.as_predictor\(model, "
                                        r"trees='host', sample=X\[:5\]\), X, background\)"):
        tree_shap(booster, X[:3])
    host = jaximp.as_predictor(booster, trees="host", sample=X[:5])
    values = jaximp.shapley_values(host, X[:2], X[:6], method="exact").values  # (2, 4, 3)
    p = X.shape[1]
    expected = np.zeros((2, p, 3))
    for i in range(2):
        def game(S):
            Z = X[:6].copy()
            Z[:, list(S)] = X[i, list(S)]
            return booster.predict(Z).mean(axis=0)
        for j in range(p):
            others = [k for k in range(p) if k != j]
            for r in range(p):
                for S in itertools.combinations(others, r):
                    weight = math.factorial(r) * math.factorial(p - 1 - r) / math.factorial(p)
                    expected[i, j] += weight * (game(S + (j,)) - game(S))
    np.testing.assert_allclose(values, expected, rtol=1e-9, atol=1e-12)
    # a model that needs its frame (CatBoost's text features): the fix as named works
    catboost = pytest.importorskip("catboost")
    frame = pd.DataFrame({"x": X[:, 0], "k": np.where(X[:, 1] > 0, "p", "q")})
    model = catboost.CatBoostRegressor(iterations=5, verbose=0, cat_features=["k"],
                                       allow_writing_files=False, thread_count=1).fit(frame, y)
    with pytest.raises(TypeError, match=r"trees='host', sample=X\[:5\]"):
        tree_shap(model, frame[:3])
    host = jaximp.as_predictor(model, trees="host", sample=frame[:5])
    sv = jaximp.shapley_values(host, frame[:3], frame[:20])
    np.testing.assert_allclose(sv.values[..., 0].sum(axis=1) + sv.base_values[0],
                               model.predict(frame[:3]), rtol=1e-9)


# ------------------------------------------------------------------ boosting libraries


def _library_contributions(model, rows, K):
    """The library's own path-dependent TreeSHAP: (n, p, K) values and (K,) bias."""
    name = type(model).__module__.split(".")[0]
    if name == "xgboost":
        xgb = pytest.importorskip("xgboost")
        ref = model.get_booster().predict(xgb.DMatrix(rows), pred_contribs=True)
    elif name == "lightgbm":
        ref = model.predict(rows, pred_contrib=True)
    else:
        catboost = pytest.importorskip("catboost")
        ref = model.get_feature_importance(catboost.Pool(rows), type="ShapValues")
    ref = np.asarray(ref).reshape(len(rows), K, -1)  # bias column last
    return np.moveaxis(ref[..., :-1], 1, -1), ref[0, :, -1]


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_boosting_libraries_equal_their_own_contributions(library):
    module = pytest.importorskip(library)
    X, y = _data(n=300, p=4)
    missing = X.copy()
    missing[np.random.default_rng(1).random(X.shape) < 0.1] = np.nan
    labels = np.digitize(y, [-0.5, 0.8])
    if library == "xgboost":
        models = [module.XGBRegressor(n_estimators=15, max_depth=4, n_jobs=1).fit(missing, y),
                  module.XGBClassifier(n_estimators=10, max_depth=3, n_jobs=1).fit(missing, y > 0),
                  module.XGBClassifier(n_estimators=5, max_depth=3, n_jobs=1).fit(missing, labels)]
    elif library == "lightgbm":
        models = [module.LGBMRegressor(n_estimators=15, num_leaves=12, verbose=-1)
                  .fit(missing, y),
                  module.LGBMClassifier(n_estimators=5, num_leaves=8, verbose=-1)
                  .fit(missing, labels)]
    else:  # CatBoost: oblivious trees, no missing values here
        missing = X
        models = [module.CatBoostRegressor(iterations=15, depth=4, verbose=0).fit(X, y),
                  module.CatBoostClassifier(iterations=10, depth=3, verbose=0).fit(X, y > 0)]
    rows = missing[:25]
    for model in models:
        sv = tree_shap(model, rows)
        values, bias = _library_contributions(model, rows, len(sv.output_names))
        _close(sv.values, values)
        np.testing.assert_allclose(sv.base_values, bias, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_categorical_splits_equal_the_librarys_contributions(library):
    """Category bitsets merged per path into sets of codes: path-dependent values and
    interactions equal the library's own, with missing, negative, fractional and unseen
    categories; interventional values equal the exact Shapley values of the same model."""
    module = pytest.importorskip(library)
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 300
    codes = rng.integers(0, 40, n)
    x, z = rng.normal(size=(2, n))
    y = np.sin(codes) * 2 + x + (codes % 3) * z + 0.1 * rng.normal(size=n)
    frame = pd.DataFrame({"c": pd.Categorical(codes, categories=range(45)), "x": x, "z": z})
    frame.loc[rng.uniform(size=n) < 0.05, "x"] = np.nan
    frame.loc[rng.uniform(size=n) < 0.05, "c"] = np.nan
    if library == "xgboost":
        models = [module.XGBRegressor(n_estimators=12, max_depth=4, enable_categorical=True,
                                      max_cat_to_onehot=1, n_jobs=1).fit(frame, y),
                  module.XGBClassifier(n_estimators=8, max_depth=3, enable_categorical=True,
                                       max_cat_to_onehot=1, n_jobs=1).fit(frame, y > 0)]
    else:
        models = [module.LGBMRegressor(n_estimators=12, num_leaves=12, min_data_per_group=5,
                                       cat_smooth=1, verbose=-1).fit(frame, y),
                  module.LGBMClassifier(n_estimators=8, num_leaves=8, min_data_per_group=5,
                                        cat_smooth=1, verbose=-1).fit(frame, y > 0)]
    rows = frame[:30].copy()
    rows["c"] = rows["c"].cat.set_categories(range(45))
    rows.loc[:3, "c"] = [44, np.nan, 41, 43]  # unseen categories and a missing one
    for model in models:
        assert np.asarray(jaximp.tree_predictor(model).params["is_categorical"]).any()
        sv = tree_shap(model, rows)
        if library == "xgboost":
            dmatrix = module.DMatrix(rows, enable_categorical=True)
            ref = model.get_booster().predict(dmatrix, pred_contribs=True)
            pairs = model.get_booster().predict(dmatrix, pred_interactions=True)
            _close(tree_shap(model, rows, interactions=True).values[..., 0],
                   pairs[:, :-1, :-1])
        else:
            ref = model.predict(rows, pred_contrib=True)
        _close(sv.values[..., 0], ref[:, :-1])
        np.testing.assert_allclose(sv.base_values[0], ref[0, -1], rtol=1e-5, atol=1e-6)
    coded = jaximp.as_dataset(frame, allow_missing=True).X.copy()  # the codes the readers see
    coded[:4, 0] = [-1.0, 2.7, 50.0, np.nan]  # negative, fractional, beyond the sets, missing
    background = coded[100:130]
    interventional = tree_shap(models[0], coded[:8], background=background)
    exact = jaximp.shapley_values(models[0], coded[:8], background, method="exact",
                                  background_size=None)
    _close(interventional.values, exact.values)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_categories_are_read_by_the_levels_the_model_was_fitted_on(library):
    """A frame whose category column holds other levels (a subset, another order) than the
    training frame's: tree_shap and a tree_predictor called on it map them by level, as the
    library does (they read its codes); a method given the Predictor and such a frame
    refuses it; an unseen level is missing for LightGBM and refused for XGBoost."""
    module = pytest.importorskip(library)
    import pandas as pd

    rng = np.random.default_rng(1)
    n = 400
    labels = rng.choice(list("abcdef"), n)
    effect = dict(zip("abcdef", [3.0, -2.0, 1.0, 0.0, -1.0, 2.0]))
    x = rng.normal(size=n)
    y = np.array([effect[v] for v in labels]) + 0.5 * x
    frame = pd.DataFrame({"c": pd.Categorical(labels), "x": x})
    if library == "xgboost":
        model = module.XGBRegressor(n_estimators=20, max_depth=3, enable_categorical=True,
                                    max_cat_to_onehot=1).fit(frame, y)
    else:
        model = module.LGBMRegressor(n_estimators=20, num_leaves=8, verbose=-1,
                                     min_data_per_group=5, cat_smooth=1).fit(frame, y)
    other = pd.DataFrame({"c": pd.Categorical(["f", "b", "e"], categories=["f", "e", "b"]),
                          "x": [0.0, 1.0, -1.0]})
    sv = tree_shap(model, other)
    np.testing.assert_allclose(sv.values.sum(axis=1)[:, 0] + sv.base_values[0],
                               model.predict(other), rtol=1e-5, atol=1e-5)
    predictor = jaximp.tree_predictor(model)
    np.testing.assert_allclose(np.asarray(predictor(other))[:, 0], model.predict(other),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="other levels, or another order, than the ones"):
        jaximp.permutation_importance(predictor, other, np.zeros(3))
    unseen = pd.DataFrame({"c": pd.Categorical(["b", "zz"]), "x": [0.0, 0.0]})
    if library == "xgboost":
        with pytest.raises(ValueError, match=r"categories \['zz'\] that the XGBoost model"):
            tree_shap(model, unseen)
    else:
        sv = tree_shap(model, unseen)
        np.testing.assert_allclose(sv.values.sum(axis=1)[:, 0] + sv.base_values[0],
                                   model.predict(unseen), rtol=1e-5, atol=1e-5)


def test_lightgbm_fitted_on_names_with_spaces_takes_that_data():
    """LightGBM stores a column 'sepal length' as 'sepal_length' and still predicts on the
    DataFrame it was fitted on; so do jaximp's readers, keeping the user's names."""
    lightgbm = pytest.importorskip("lightgbm")
    import pandas as pd

    X, y = _data(n=200, p=3)
    frame = pd.DataFrame(X, columns=["sepal length", "c", "d"])
    model = lightgbm.LGBMRegressor(n_estimators=5, verbose=-1).fit(frame, y)
    sv = tree_shap(model, frame[:10])
    assert sv.feature_names == ("sepal length", "c", "d")
    values, bias = _library_contributions(model, frame[:10], 1)
    _close(sv.values, values)
    result = jaximp.permutation_importance(model, frame, y, n_repeats=2)
    assert result.feature_names == ("sepal length", "c", "d")
    with pytest.raises(ValueError, match="lacking"):
        jaximp.as_predictor(model, sample=frame.rename(columns={"c": "d"}))


def test_xgboost_logitraw_base_score_is_a_margin_and_zero_splits_send_zero_right():
    """XGBoost adds a binary:logitraw model's base_score to the margin as it is (no logit);
    and a split ``x < 0`` sends x = 0 right, which a threshold stored as the subnormal below
    0 (flushed to zero on the CPU) sent left."""
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(300, 2)), 1)  # rounded: rows at 0.0, splits at 0
    y = (X[:, 0] > -0.05).astype(float) + 0.1 * rng.normal(size=300)
    rows = np.array([[0.0, 0.0], [-0.0, 0.3], [0.05, 0.0], [-0.05, -0.1], *X[:20]])
    models = [xgboost.XGBClassifier(n_estimators=3, max_depth=2, objective="binary:logitraw",
                                    base_score=0.3, n_jobs=1).fit(X, y > 0.5),
              xgboost.XGBRegressor(n_estimators=1, max_depth=1, learning_rate=1.0,
                                   n_jobs=1).fit(X, y)]
    for model in models:
        margin = model.predict(rows, output_margin=True)
        predictor = jaximp.as_predictor(model, response_method="raw", n_features=2)
        np.testing.assert_allclose(np.asarray(predictor(rows))[:, 0], margin, rtol=1e-6,
                                   atol=1e-6)
        sv = tree_shap(model, rows)
        values, bias = _library_contributions(model, rows, 1)
        _close(sv.values, values)
        np.testing.assert_allclose(sv.base_values, bias, rtol=1e-5, atol=1e-6)


def test_xgboost_hard_label_objectives_explain_their_margin():
    """multi:softmax and binary:hinge predict hard labels (a Booster: the class index, or 0/1;
    the classifier wrappers' predict_proba: the softmax, or (1 - label, label)), a logitraw
    classifier's predict_proba is (1 - margin, margin); TreeSHAP explains their margins, as
    XGBoost's own contributions do."""
    xgboost = pytest.importorskip("xgboost")
    X, y = _data(n=300, p=4)
    labels, positive = np.digitize(y, [-0.5, 0.8]), y > 0
    models = [
        (xgboost.train({"objective": "multi:softmax", "num_class": 3, "max_depth": 3,
                        "nthread": 1}, xgboost.DMatrix(X, label=labels), 8), 3),
        (xgboost.train({"objective": "binary:hinge", "max_depth": 3, "nthread": 1},
                       xgboost.DMatrix(X, label=positive), 8), 1),
        (xgboost.XGBClassifier(objective="multi:softmax", n_estimators=5, n_jobs=1).fit(
            X, labels), 3),
        (xgboost.XGBClassifier(objective="binary:hinge", n_estimators=5, n_jobs=1).fit(
            X, positive), 1),
        # logitraw: the wrapper's predict_proba is (1 - margin, margin)
        (xgboost.XGBClassifier(objective="binary:logitraw", n_estimators=5, n_jobs=1).fit(
            X, positive), 1)]
    for model, K in models:
        booster = isinstance(model, xgboost.Booster)
        ref = model.predict(xgboost.DMatrix(X)) if booster else model.predict_proba(X)
        predictor = jaximp.as_predictor(model, n_features=4)
        np.testing.assert_allclose(np.asarray(predictor(X)), ref.reshape(len(X), -1),
                                   rtol=1e-6, atol=1e-6)
        sv = tree_shap(model, X[:30])
        contributions = model.predict(xgboost.DMatrix(X[:30]), pred_contribs=True) if \
            booster else model.get_booster().predict(xgboost.DMatrix(X[:30]),
                                                      pred_contribs=True)
        contributions = np.asarray(contributions).reshape(30, K, -1)
        _close(sv.values, np.moveaxis(contributions[..., :-1], 1, -1))
        np.testing.assert_allclose(sv.base_values, contributions[0, :, -1], rtol=1e-5)


def test_a_catboost_model_loaded_from_a_file_is_read(tmp_path):
    """CatBoost reports n_features_in_ = 0 for a model loaded from a file; its width comes
    from the model itself."""
    catboost = pytest.importorskip("catboost")
    X, y = _data(n=200, p=3)
    fitted = catboost.CatBoostRegressor(iterations=5, depth=3, verbose=0).fit(X, y)
    fitted.save_model(str(tmp_path / "model.cbm"))
    loaded = catboost.CatBoostRegressor()
    loaded.load_model(str(tmp_path / "model.cbm"))
    assert loaded.n_features_in_ == 0  # what is tested
    np.testing.assert_array_equal(tree_shap(loaded, X[:5]).values,
                                  tree_shap(fitted, X[:5]).values)


def test_one_row_as_a_series_or_vector():
    """shap's convention for a single explained row: a Series or a 1-D array of p values."""
    import pandas as pd
    from sklearn.ensemble import GradientBoostingRegressor

    X, y = _data(n=100, p=3)
    model = GradientBoostingRegressor(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    row = tree_shap(model, X[:1]).values
    np.testing.assert_array_equal(tree_shap(model, X[0]).values, row)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    framed = GradientBoostingRegressor(n_estimators=5, max_depth=2, random_state=0).fit(frame, y)
    np.testing.assert_allclose(tree_shap(framed, frame.iloc[0]).values, row, rtol=1e-6)
