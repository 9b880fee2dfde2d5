"""XGBoost, LightGBM and CatBoost models read into JAX node arrays, against the libraries.

Precision: XGBoost and CatBoost compare float32 rows (the data are cast to float32 before
both predict); XGBoost sums its leaves in float32, so its predictions agree to float32
rounding in both modes. LightGBM and CatBoost sum in float64: under x64 the arrays equal
them to 1e-12 relative, by default to float32 rounding (1e-6).
"""

import warnings

import jax
import numpy as np
import pandas as pd
import pytest

import jaximp
from jaximp import as_predictor, booster_importance, tree_partial_dependence

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
cb = pytest.importorskip("catboost")

N, P = 300, 4


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, P))
    X[:, 2] = rng.integers(0, 6, size=N)  # a category code for LightGBM
    X[::6, 1] = np.nan
    X[::7, 3] = 0.0
    y = X[:, 0] + np.nan_to_num(X[:, 1], nan=1.5) ** 2 + 3 * np.isin(X[:, 2], [1, 4]) + X[:, 3]
    y_bin = (y > np.median(y)).astype(int)
    y_3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    X = X.astype(np.float32).astype(np.float64)  # float32 values: both sides see the same
    return X, y, y_bin, y_3


def _library_output(model, X, margin=False):
    if margin:
        name = type(model).__module__.split(".")[0]
        if name == "xgboost":
            out = model.predict(X, output_margin=True)
        elif name == "lightgbm":
            out = model.predict(X, raw_score=True)
        else:
            out = model.predict(X, prediction_type="RawFormulaVal")
    elif hasattr(model, "predict_proba"):
        out = model.predict_proba(X)
    else:
        out = model.predict(X)
    return np.asarray(out, np.float64).reshape(len(X), -1)


def _check(model, X, rtol, atol, margin=False):
    pred = as_predictor(model, n_features=X.shape[1],
                        response_method="raw" if margin else "auto")
    assert not pred.host and "JAX trees" in pred.name
    out = np.asarray(pred(X), np.float64)
    ref = _library_output(model, X, margin)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
    return pred


XGB = {
    "reg": lambda: xgb.XGBRegressor(n_jobs=1, n_estimators=12, max_depth=3),
    "poisson": lambda: xgb.XGBRegressor(n_jobs=1, n_estimators=8, max_depth=3,
                                        objective="count:poisson"),
    "dart": lambda: xgb.XGBRegressor(n_jobs=1, n_estimators=8, max_depth=3, booster="dart",
                                     rate_drop=0.3, random_state=0),
    "forest": lambda: xgb.XGBRFRegressor(n_jobs=1, n_estimators=5, max_depth=3),
    "binary": lambda: xgb.XGBClassifier(n_jobs=1, n_estimators=12, max_depth=3),
    "multi": lambda: xgb.XGBClassifier(n_jobs=1, n_estimators=6, max_depth=3),
}


@pytest.mark.parametrize("name", sorted(XGB))
def test_xgboost_predictions_and_margins(data, name):
    X, y, y_bin, y_3 = data
    target = {"binary": y_bin, "multi": y_3, "poisson": np.round(np.exp(y / 4))}.get(name, y)
    model = XGB[name]().fit(X, target)
    _check(model, X, rtol=2e-6, atol=1e-6)
    _check(model, X, rtol=2e-6, atol=2e-6, margin=True)
    with jax.enable_x64(True):  # XGBoost sums in float32: still float32 rounding
        _check(model, X, rtol=2e-6, atol=1e-6)


def test_xgboost_booster_and_best_iteration(data):
    X, _, _, y_3 = data
    model = xgb.XGBClassifier(n_jobs=1, n_estimators=40, max_depth=3, early_stopping_rounds=2)
    model.fit(X[:200], y_3[:200], eval_set=[(X[200:], y_3[200:])], verbose=False)
    assert model.best_iteration < 39  # predict uses the best iteration, so must the arrays
    _check(model, X, rtol=2e-6, atol=1e-6)
    booster = model.get_booster()  # a Booster predicts with all its trees
    pred = as_predictor(booster, n_features=P)
    np.testing.assert_allclose(np.asarray(pred(X)), booster.inplace_predict(X),
                               rtol=2e-6, atol=1e-6)
    assert pred.output_names == ("y0", "y1", "y2")


def test_xgboost_categorical_splits(data):
    X, y, _, _ = data
    Xc = X.copy()
    Xc[:, 2] = np.random.default_rng(1).integers(0, 12, size=N)
    yc = y + 2.0 * np.isin(Xc[:, 2], [1, 5, 8, 11])
    types = ["q", "q", "c", "q"]
    train = xgb.DMatrix(Xc, label=yc, feature_types=types, enable_categorical=True)
    booster = xgb.train({"max_depth": 3, "max_cat_to_onehot": 1, "nthread": 1}, train, 10)
    params = jaximp.tree_predictor(booster).params
    assert np.asarray(params["is_categorical"]).any()
    test = Xc.copy()
    # negative, beyond the bitset, missing, fraction; in (-1, 0) XGBoost tests the sign
    # before the cast (outside, left), -0.0 is category 0
    test[:6, 2] = [-1.0, 40.0, np.nan, 2.7, -0.5, -0.0]
    ref = booster.predict(xgb.DMatrix(test, feature_types=types, enable_categorical=True))
    out = np.asarray(as_predictor(booster, n_features=P)(test))[:, 0]
    np.testing.assert_allclose(out, ref, rtol=2e-6, atol=1e-6)
    contributions = booster.predict(xgb.DMatrix(test[:8], feature_types=types,
                                                enable_categorical=True), pred_contribs=True)
    np.testing.assert_allclose(jaximp.tree_shap(booster, test[:8]).values[:, :, 0],
                               contributions[:, :-1], atol=2e-6)


def test_pandas_categories_through_the_methods():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"a": rng.normal(size=N), "c": pd.Categorical(rng.choice(list("pqrstu"), N)),
                       "b": rng.normal(size=N)})
    y = df.a + 2.0 * df.c.isin(["q", "s", "u"]) + df.b
    models = [
        xgb.XGBRegressor(n_jobs=1, n_estimators=8, max_depth=3, enable_categorical=True,
                         max_cat_to_onehot=1).fit(df, y),
        lgb.LGBMRegressor(n_jobs=1, n_estimators=8, num_leaves=6, verbose=-1, min_child_samples=5,
                          min_data_per_group=5, cat_smooth=1).fit(df, y),
    ]
    for model in models:
        pred = as_predictor(model, sample=df)
        assert not pred.host
        assert np.asarray(pred.params["is_categorical"]).any()
        coded = jaximp.as_dataset(df).X
        np.testing.assert_allclose(np.asarray(pred(coded))[:, 0], model.predict(df),
                                   rtol=2e-6, atol=2e-6)
        # the DataFrame itself, coded as the methods code it; a host Predictor gets it as is
        np.testing.assert_array_equal(np.asarray(pred(df)), np.asarray(pred(coded)))
        host_pred = as_predictor(model, trees="host", sample=df)
        np.testing.assert_allclose(np.asarray(host_pred(df))[:, 0], model.predict(df),
                                   rtol=1e-12)
        arrays = jaximp.permutation_importance(model, df, y, n_repeats=1, random_state=0)
        host = jaximp.permutation_importance(as_predictor(model, trees="host", sample=df), df,
                                             y, n_repeats=1, random_state=0)
        np.testing.assert_allclose(arrays.importances, host.importances, rtol=1e-5, atol=1e-6)


LGB = {
    "reg": lambda: lgb.LGBMRegressor(n_jobs=1, n_estimators=10, num_leaves=8, verbose=-1,
                                     min_child_samples=5, min_data_per_group=5),
    "zero_missing": lambda: lgb.LGBMRegressor(n_jobs=1, n_estimators=10, num_leaves=8, verbose=-1,
                                              min_child_samples=5, zero_as_missing=True),
    "rf": lambda: lgb.LGBMRegressor(n_jobs=1, boosting_type="rf", bagging_freq=1, bagging_fraction=0.6,
                                    n_estimators=6, num_leaves=8, verbose=-1),
    "binary": lambda: lgb.LGBMClassifier(n_jobs=1, n_estimators=10, num_leaves=8, verbose=-1,
                                         min_child_samples=5, min_data_per_group=5),
    "multi": lambda: lgb.LGBMClassifier(n_jobs=1, n_estimators=5, num_leaves=6, verbose=-1),
}


@pytest.mark.parametrize("name", sorted(LGB))
def test_lightgbm_predictions_and_margins(data, name):
    X, y, y_bin, y_3 = data
    target = {"binary": y_bin, "multi": y_3}.get(name, y)
    cats = [] if name in ("zero_missing", "rf", "multi") else [2]
    model = LGB[name]().fit(X, target, categorical_feature=cats or "auto")
    test = X.copy()
    test[:3, 2] = [-1.0, 9.0, np.nan]  # categories LightGBM sends right
    if cats:
        assert np.asarray(jaximp.tree_predictor(model).params["is_categorical"]).any()
    _check(model, test, rtol=2e-6, atol=2e-6)
    _check(model, test, rtol=2e-6, atol=2e-5, margin=True)
    with jax.enable_x64(True):  # float64 thresholds and sums, as LightGBM
        _check(model, test, rtol=1e-12, atol=1e-12)
        _check(model, test, rtol=1e-12, atol=1e-12, margin=True)


CAT = {
    "reg": lambda: cb.CatBoostRegressor(thread_count=1, iterations=10, depth=3),
    "nan_max": lambda: cb.CatBoostRegressor(thread_count=1, iterations=10, depth=3, nan_mode="Max"),
    "binary": lambda: cb.CatBoostClassifier(thread_count=1, iterations=10, depth=3),
    "multi": lambda: cb.CatBoostClassifier(thread_count=1, iterations=6, depth=3),
}


@pytest.mark.parametrize("name", sorted(CAT))
def test_catboost_predictions_and_margins(data, name):
    X, y, y_bin, y_3 = data
    target = {"binary": y_bin, "multi": y_3}.get(name, y)
    model = CAT[name]()
    model.set_params(verbose=0, random_seed=0, allow_writing_files=False)
    model.fit(X, target)
    _check(model, X, rtol=2e-6, atol=1e-6)
    _check(model, X, rtol=2e-6, atol=2e-6, margin=True)
    with jax.enable_x64(True):
        _check(model, X, rtol=1e-12, atol=1e-12)


def test_native_importances_equal_the_libraries(data):
    X, y, _, y_3 = data
    model = xgb.XGBClassifier(n_jobs=1, n_estimators=30, max_depth=3, early_stopping_rounds=2)
    model.fit(X[:200], y_3[:200], eval_set=[(X[200:], y_3[200:])], verbose=False)
    booster = model.get_booster()
    for kind in ("gain", "weight", "cover", "total_gain", "total_cover"):
        score = booster.get_score(importance_type=kind)
        ref = np.array([score.get(f"f{j}", 0.0) for j in range(P)])
        got = booster_importance(model, kind)
        assert got.method == "booster" and got.info.criterion == f"xgboost:{kind}"
        np.testing.assert_allclose(got.importances_mean[:, 0], ref, rtol=1e-6)
    for model in (lgb.LGBMRegressor(n_jobs=1, n_estimators=10, num_leaves=8, verbose=-1).fit(X, y),
                  lgb.LGBMClassifier(n_jobs=1, n_estimators=5, num_leaves=6, verbose=-1).fit(X, y_3)):
        for kind in ("split", "gain"):
            np.testing.assert_allclose(booster_importance(model, kind).importances_mean[:, 0],
                                       model.booster_.feature_importance(kind), rtol=1e-6)
    for model in (cb.CatBoostRegressor(thread_count=1, iterations=10, depth=3, verbose=0,
                                       allow_writing_files=False).fit(X, y),
                  cb.CatBoostClassifier(thread_count=1, iterations=6, depth=3, verbose=0,
                                        allow_writing_files=False).fit(X, y_3)):
        ref = model.get_feature_importance(type="PredictionValuesChange")
        np.testing.assert_allclose(booster_importance(model).importances_mean[:, 0], ref,
                                   rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="LossFunctionChange needs data"):
        booster_importance(model, "LossFunctionChange")
    with pytest.raises(TypeError, match="booster_importance"):
        jaximp.impurity_importance(model)
    # a model the arrays do not read: the library's own report is the fix
    cox = xgb.XGBRegressor(objective="survival:cox", n_estimators=2, max_depth=2,
                           n_jobs=1).fit(np.nan_to_num(X), np.abs(y) + 1)
    with pytest.raises(TypeError, match=r"survival:cox.*Fix: ask the library itself, "
                                        r"model.get_booster\(\).get_score"):
        booster_importance(cox)


def test_methods_through_arrays_equal_the_host_path(data):
    X, y, _, _ = data
    X = np.nan_to_num(X)  # the methods refuse NaN for JAX models
    models = [
        xgb.XGBRegressor(n_jobs=1, n_estimators=10, max_depth=1),
        lgb.LGBMRegressor(n_jobs=1, n_estimators=10, num_leaves=2, verbose=-1, min_child_samples=5),
        cb.CatBoostRegressor(thread_count=1, iterations=10, depth=1, verbose=0, bootstrap_type="No",
                             allow_writing_files=False),
    ]
    for model in models:
        model.fit(X, y)
        host = as_predictor(model, trees="host", n_features=P)
        assert host.host
        arrays = jaximp.permutation_importance(model, X, y, n_repeats=3, random_state=0)
        ref = jaximp.permutation_importance(host, X, y, n_repeats=3, random_state=0)
        np.testing.assert_allclose(arrays.importances, ref.importances, rtol=1e-5, atol=1e-6)
        brute = jaximp.partial_dependence(model, X, [0], grid_resolution=6)
        brute_host = jaximp.partial_dependence(host, X, [0], grid_resolution=6)
        np.testing.assert_allclose(brute.average, brute_host.average, rtol=1e-6, atol=1e-6)
        # stumps on the training rows, squared error and no subsampling: the recursion's
        # cover-weighted averages are the data averages, so recursion PD = brute PD
        _, rec = tree_partial_dependence(model, X, 0, grid=np.asarray(
            brute.grid_values[0]))
        np.testing.assert_allclose(rec[:, 0], np.asarray(brute.average)[:, 0], rtol=1e-5,
                                   atol=1e-5)
        rec2 = jaximp.partial_dependence(model, X, [0], method="recursion", grid_resolution=6)
        np.testing.assert_allclose(rec2.average, rec[:, None] if rec.ndim == 1 else rec,
                                   rtol=1e-12)


def _recursion_reference(params, X_grid_col, column):
    """Float64 NumPy weighted traversal of the stacked numeric trees (no categories)."""
    feat = np.asarray(params["feature"])
    thr = np.asarray(params["threshold"], np.float64)
    left, right = np.asarray(params["children_left"]), np.asarray(params["children_right"])
    miss = np.asarray(params["missing_left"])
    cover = np.asarray(params["weighted_n_node_samples"], np.float64)
    value = np.asarray(params["value"], np.float64)[..., 0]
    out = np.zeros((feat.shape[0], len(X_grid_col)))
    for t in range(feat.shape[0]):
        for g, z in enumerate(X_grid_col):
            stack = [(0, 1.0)]
            while stack:
                node, w = stack.pop()
                if left[t, node] == node:
                    out[t, g] += w * value[t, node]
                elif feat[t, node] == column:
                    go = miss[t, node] if np.isnan(z) else z <= thr[t, node]
                    stack.append((left[t, node] if go else right[t, node], w))
                else:
                    c = cover[t, node]
                    for child in (left[t, node], right[t, node]):
                        stack.append((child, w * cover[t, child] / c))
    return out


def test_recursion_pd_equals_a_numpy_traversal(data):
    X, _, _, y_3 = data
    model = xgb.XGBClassifier(n_jobs=1, n_estimators=4, max_depth=3).fit(X, y_3)
    X = np.nan_to_num(X)  # the grid's data: the methods refuse NaN
    values, average = tree_partial_dependence(model, X, 0, grid_resolution=5)
    _, _, params, _ = jaximp.models.read_trees(model)
    per_tree = _recursion_reference(params, np.asarray(values, np.float32), 0)
    tree_class = np.asarray(params["tree_class"])
    init = np.asarray(params["init"], np.float64)
    ref = np.stack([per_tree[tree_class == k].sum(axis=0) + init[k] for k in range(3)], axis=1)
    np.testing.assert_allclose(average, ref, rtol=1e-5, atol=1e-6)


def test_recursion_pd_of_a_lightgbm_random_forest_is_its_raw_margin():
    """LightGBM's random forest stores leaves that average; its raw margin is their sum,
    which the recursion PD gives as for every booster (one feature: the PD is the raw
    score itself)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 1))
    model = lgb.LGBMRegressor(boosting_type="rf", n_estimators=5, subsample=0.7,
                              subsample_freq=1, verbose=-1).fit(X, 3 * X[:, 0] + 1)
    values, average = tree_partial_dependence(model, X, 0, grid_resolution=7)
    grid = np.asarray(values, np.float64).reshape(-1, 1)
    np.testing.assert_allclose(np.ravel(average), model.predict(grid, raw_score=True),
                               rtol=1e-5)


def test_recursion_pd_of_lightgbm_compares_in_float64_as_lightgbm_does():
    """Timestamps in ms over one hour: float32 moves them by up to 128 ms across LightGBM's
    float64 thresholds; the recursion compares as LightGBM does (one feature: the PD is the
    raw score at the grid)."""
    rng = np.random.default_rng(0)
    t = 1.7e12 + rng.uniform(0, 3.6e6, 300)
    model = lgb.LGBMRegressor(n_estimators=10, verbose=-1).fit(
        t[:, None], np.sin((t - 1.7e12) / 3e5) + 0.1 * rng.normal(size=300))
    values, average = tree_partial_dependence(model, t[:, None], 0, grid_resolution=20)
    np.testing.assert_allclose(np.ravel(average), model.predict(
        np.asarray(values)[:, None], raw_score=True), rtol=1e-6, atol=1e-6)


def test_methods_pass_missing_values_to_the_arrays_as_to_the_library(data):
    """NaN rows reach the node arrays (which route them as each library does) in permutation
    importance and PD, equal to the library's own predict on the host."""
    X, y, _, _ = data
    assert np.isnan(X).any()
    models = [
        xgb.XGBRegressor(n_jobs=1, n_estimators=8, max_depth=2),
        lgb.LGBMRegressor(n_jobs=1, n_estimators=8, num_leaves=4, verbose=-1,
                          min_child_samples=5),
    ]
    for model in models:
        model.fit(X, y)
        host = as_predictor(model, trees="host", n_features=P)
        arrays = jaximp.permutation_importance(model, X, y, n_repeats=2, random_state=0)
        ref = jaximp.permutation_importance(host, X, y, n_repeats=2, random_state=0)
        np.testing.assert_allclose(arrays.importances, ref.importances, rtol=1e-5, atol=1e-6)
        pd_arrays = jaximp.partial_dependence(model, X, [0], grid_resolution=5)
        pd_host = jaximp.partial_dependence(host, X, [0], grid_resolution=5)
        np.testing.assert_allclose(pd_arrays.average, pd_host.average, rtol=1e-6, atol=1e-6)


def test_permutation_importance_end_to_end(data):
    X, _, y_bin, _ = data
    X = np.nan_to_num(X)
    model = xgb.XGBClassifier(n_jobs=1, n_estimators=6, max_depth=2).fit(X, y_bin)
    result = jaximp.permutation_importance(model, X, y_bin, n_repeats=2, random_state=0)
    ref = jaximp.permutation_importance(as_predictor(model, trees="host", n_features=P), X,
                                        y_bin, n_repeats=2, random_state=0)
    accuracy = np.mean(model.predict(X) == y_bin)  # the classifier's default score
    np.testing.assert_allclose(result.info.baseline, accuracy, rtol=1e-12)
    np.testing.assert_allclose(result.importances, ref.importances, rtol=1e-12, atol=1e-12)


def test_lightgbm_thresholds_between_adjacent_float32_data_values():
    """LightGBM's thresholds lie between two data values; rounded down to float32 they keep
    every float32-representable value on its side, here consecutive integers near 1e7, which
    are adjacent float32s (rounding to the nearest float32 sent 39 of 40 of them the wrong
    way). A row between the two, within one float32 step of the threshold, may go either
    way: jax_enable_x64 compares in float64."""
    rng = np.random.default_rng(0)
    x = rng.integers(10_000_000, 10_000_040, 2000).astype(np.float64)
    X = np.column_stack([x, rng.normal(size=2000)])
    y = 10 * np.sin((x - 1e7) / 3.0) + 0.1 * rng.normal(size=2000)
    model = lgb.LGBMRegressor(n_estimators=30, min_child_samples=5, verbose=-1).fit(X, y)
    grid = np.column_stack([np.arange(10_000_000, 10_000_040, dtype=np.float64), np.zeros(40)])
    np.testing.assert_allclose(np.asarray(jaximp.tree_predictor(model)(grid))[:, 0],
                               model.predict(grid), rtol=1e-5, atol=1e-5)


def test_rows_that_float32_splits_send_elsewhere_warn_and_float32_rows_do_not():
    """LightGBM and HistGradientBoosting compare float64 rows, the arrays float32 ones: on
    timestamps (float32 steps of 128 s) some rows take another branch. The methods and the
    predictor warn, counting at least every row whose prediction moved, and only on that
    feature; LightGBM's thresholds, rounded down, send float32 rows (the same rows rounded
    first) where LightGBM does, without a warning; under x64 nothing is checked."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    stamps = 1.6e9 + np.sort(rng.integers(0, 20_000, 600)).astype(np.float64)
    X = np.column_stack([stamps, rng.normal(size=600)])
    y = np.sin((stamps - 1.6e9) / 3000) + 0.1 * X[:, 1]
    rounded = X.astype(np.float32).astype(np.float64)
    for model in (lgb.LGBMRegressor(n_estimators=20, num_leaves=16, verbose=-1),
                  HistGradientBoostingRegressor(max_iter=20)):
        model.fit(X, y)
        predictor = jaximp.tree_predictor(model)
        with pytest.warns(jaximp.PrecisionWarning, match="another branch.*x64"):
            ours = np.asarray(predictor(X))[:, 0]
        moved = np.abs(ours - model.predict(X)) > 1e-6
        apart = predictor.check_rows.rows_apart(X)
        assert set(apart) == {0} and apart[0] >= moved.sum() > 0
        if isinstance(model, lgb.LGBMRegressor):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                np.testing.assert_allclose(np.asarray(predictor(rounded))[:, 0],
                                           model.predict(rounded), rtol=1e-6, atol=1e-6)
                jaximp.tree_shap(model, rounded[:50])
        methods = [lambda: jaximp.tree_shap(model, X[:300])]
        if isinstance(model, lgb.LGBMRegressor):  # HistGradientBoosting predicts on the host
            methods += [lambda: jaximp.shapley_values(model, rounded[:2], X[:300]),
                        lambda: jaximp.permutation_importance(model, X, y, n_repeats=1)]
        for method in methods:
            with pytest.warns(jaximp.PrecisionWarning, match="rows per feature: 'x0'"):
                method()
        with jax.enable_x64(True):
            assert jaximp.tree_predictor(model).check_rows is None


def test_bad_inputs_name_the_fix(data):
    X, y, _, y_3 = data
    X = np.nan_to_num(X)
    model = xgb.XGBRegressor(n_jobs=1, n_estimators=3, max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="fitted on 4 features.*3 columns"):
        jaximp.permutation_importance(model, X[:, :3], y, n_repeats=1)
    frame = pd.DataFrame(X, columns=list("abcd"))
    named = lgb.LGBMRegressor(n_jobs=1, n_estimators=3, verbose=-1).fit(frame, y)
    with pytest.raises(ValueError, match=r"lacking \['d'\].*Fix"):
        as_predictor(named, sample=frame.rename(columns={"d": "e"}))
    with pytest.raises(ValueError, match="another order"):
        as_predictor(named, sample=frame[list("abdc")])
    # the predictor called on a frame, and TreeSHAP of a model storing its names elsewhere
    # (a Booster, CatBoost): a frame in another order is refused, not read by position
    shuffled = frame[list("dcba")]
    booster = xgb.train({"max_depth": 2}, xgb.DMatrix(frame, y), num_boost_round=3)
    catboost = cb.CatBoostRegressor(iterations=3, depth=2, verbose=0).fit(frame, y)
    for model in (named, booster, catboost):
        with pytest.raises(ValueError, match="another order"):
            jaximp.tree_predictor(model)(shuffled)
        with pytest.raises(ValueError, match="another order|columns .* in order"):
            jaximp.tree_shap(model, shuffled)
    np.testing.assert_allclose(np.asarray(jaximp.tree_predictor(catboost)(frame))[:, 0],
                               catboost.predict(frame), rtol=1e-5, atol=1e-6)
    for unfitted in (lgb.LGBMRegressor(), cb.CatBoostRegressor()):
        with pytest.raises(TypeError, match="got an unfitted one. Fix: call fit"):
            jaximp.tree_predictor(unfitted)
        with pytest.raises(TypeError, match="got an unfitted one. Fix: call fit"):
            booster_importance(unfitted)
    linear = lgb.LGBMRegressor(n_jobs=1, n_estimators=3, linear_tree=True, verbose=-1).fit(X, y)
    with pytest.raises(TypeError, match="linear trees.*trees='host'"):
        jaximp.permutation_importance(linear, X, y, n_repeats=1)
    host = as_predictor(linear, trees="host", n_features=P)  # the fix works
    np.testing.assert_allclose(np.asarray(host(X))[:, 0], linear.predict(X), rtol=1e-6)
    cox = xgb.XGBRegressor(n_jobs=1, n_estimators=3, objective="survival:cox").fit(
        X, np.abs(y) + 1)
    with pytest.raises(TypeError, match="objective 'survival:cox'.*trees='host'"):
        as_predictor(cox, n_features=P)
    frame_cat = pd.DataFrame({"a": X[:, 0], "c": np.where(X[:, 1] > 0, "u", "v")})
    catmodel = cb.CatBoostRegressor(thread_count=1, iterations=3, verbose=0, allow_writing_files=False,
                                    cat_features=["c"]).fit(frame_cat, y)
    with pytest.raises(TypeError, match="categorical.*trees='host'"):
        as_predictor(catmodel, sample=frame_cat)
    # text features: CatBoost exports no JSON; refused naming the fix, which works
    words = np.array(["good day", "bad day", "good night", "bad night"])
    frame_text = pd.DataFrame({"a": X[:, 0], "t": words[np.arange(len(X)) % 4]})
    textmodel = cb.CatBoostClassifier(thread_count=1, iterations=3, depth=2, verbose=0,
                                      allow_writing_files=False, text_features=["t"]).fit(
        frame_text, frame_text.t.str.contains("good").astype(int))
    with pytest.raises(TypeError, match="cannot be exported to JSON.*trees='host'"):
        as_predictor(textmodel, sample=frame_text[:5])
    host = as_predictor(textmodel, trees="host", sample=frame_text[:5])
    np.testing.assert_allclose(np.asarray(host(frame_text)), textmodel.predict_proba(
        frame_text), rtol=1e-12)


def test_transversal_rates_of_xgboost_stumps():
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(N, 2))
    model = xgb.XGBRegressor(n_jobs=1, n_estimators=15, max_depth=1).fit(
        X, 3 * X[:, 0] - np.sin(6 * X[:, 1]))
    rates = jaximp.transversal_rates(model)
    # reference from XGBoost's own table: a stump's children are its leaves; Yes is x < c
    table = model.get_booster().trees_to_dataframe().set_index("ID")
    splits = table[table.Feature != "Leaf"]
    sign = np.sign(table.loc[splits.No, "Gain"].to_numpy()
                   - table.loc[splits.Yes, "Gain"].to_numpy())
    for j in range(2):
        on_j = (splits.Feature == f"f{j}").to_numpy()
        assert rates.n_splits[j] == on_j.sum()
        np.testing.assert_allclose(rates.atr[j], sign[on_j].mean(), rtol=1e-12)


def test_an_explainers_recursion_reads_a_boosters_trees_as_the_functions_do():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 3))
    model = lgb.LGBMRegressor(n_estimators=10, verbose=-1).fit(X, X[:, 0] * X[:, 1] + X[:, 2])
    explainer = jaximp.Explainer(model, X)
    np.testing.assert_array_equal(
        explainer.pd_interaction(method="recursion").values,
        jaximp.pd_interaction(model, X, method="recursion").values)
    np.testing.assert_array_equal(
        explainer.pd_importance(method="recursion").importances_mean,
        jaximp.pd_importance(model, X, method="recursion").importances_mean)
    np.testing.assert_array_equal(
        np.asarray(explainer.partial_dependence(0, method="recursion").average),
        np.asarray(jaximp.partial_dependence(model, X, 0, method="recursion").average))
