"""Missing values (NaN) in ALE and LOCO: a host model that handles them gets them, against
independent float64 NumPy references of the documented semantics.

ALE of feature j: bins from the values of x_j present; rows missing x_j are left out of j's
steps, centring and spread; NaN in other columns reach the model as they are. LOCO: the
replacement is the (weighted) mean / median of the values present, given to every row."""

import warnings

import jax
import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor

import jaximp
from jaximp.methods._ale import ale, ale_importance, ale_interaction
from jaximp.methods._loco import loco_importance
from jaximp.models import as_predictor

N = 300


@pytest.fixture(scope="module")
def with_missing():
    """~10% NaN in x0 and x1, a category code x3 with ~10% NaN, and a HistGradientBoosting
    model (which handles NaN natively) fitted on them."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(N, 4))
    X[:, 3] = rng.integers(0, 4, size=N)
    y = np.sin(2 * X[:, 0]) + X[:, 0] * X[:, 1] + 0.5 * X[:, 2] ** 2 + np.array(
        [0.0, 1.0, -1.0, 0.5])[X[:, 3].astype(int)] + 0.1 * rng.normal(size=N)
    for j in (0, 1, 3):
        X[rng.uniform(size=N) < 0.1, j] = np.nan
    w = rng.uniform(0.5, 2.0, size=N)
    model = HistGradientBoostingRegressor(max_iter=40, max_leaf_nodes=8, random_state=0)
    return X, y, w, model.fit(X, y)


# ----------------------------------------------------------------------------- references


def ref_edges(x, w, k):
    """Weighted type-1 quantiles at 1/k..1 plus the minimum, deduplicated."""
    order = np.argsort(x)
    xs, share = x[order], np.cumsum(w[order]) / w.sum()
    out = [x.min()] + [xs[np.nonzero(share >= j / k - 1e-12)[0][0]] for j in range(1, k + 1)]
    return np.unique(np.array(out + [x.max()]))


def ref_bins(x, edges):
    codes = np.array([max(0, min(len(edges) - 2, int(np.sum(edges < v)) - 1)) for v in x])
    return codes, np.clip((x - edges[codes]) / (edges[codes + 1] - edges[codes]), 0, 1)


def ref_ale_dropping_missing(predict, X, j, k, w):
    """First-order ALE on the rows where x_j is present (the others dropped): (edges,
    uncentred, centred, spread, counts)."""
    keep = ~np.isnan(X[:, j])
    X, w = X[keep], w[keep]
    edges = ref_edges(X[:, j], w, k)
    codes, t = ref_bins(X[:, j], edges)
    lo, hi = X.copy(), X.copy()
    lo[:, j], hi[:, j] = edges[codes], edges[codes + 1]
    diff = predict(hi).astype(np.float64) - predict(lo).astype(np.float64)
    steps = [np.average(diff[codes == b], weights=w[codes == b]) for b in range(len(edges) - 1)]
    curve = np.concatenate([[0.0], np.cumsum(steps)])
    rows = curve[codes] * (1 - t) + curve[codes + 1] * t
    centred = curve - np.average(rows, weights=w)
    spread = np.sqrt(np.average((rows - np.average(rows, weights=w)) ** 2, weights=w))
    return edges, curve, centred, spread, np.bincount(codes, minlength=len(edges) - 1)


def ref_pair_dropping_missing(predict, X, j, l, k, w):
    """Second-order ALE (ALEPlot's steps, centred over the rows) on the rows where x_j and
    x_l are present: (surface, spread)."""
    keep = ~np.isnan(X[:, j]) & ~np.isnan(X[:, l])
    X, w = X[keep], w[keep]
    e1, e2 = ref_edges(X[:, j], w, k), ref_edges(X[:, l], w, k)
    (c1, t1), (c2, t2) = ref_bins(X[:, j], e1), ref_bins(X[:, l], e2)

    def at(a, b):
        Z = X.copy()
        Z[:, j], Z[:, l] = a, b
        return predict(Z).astype(np.float64)

    second = (at(e1[c1 + 1], e2[c2 + 1]) - at(e1[c1], e2[c2 + 1])
              - at(e1[c1 + 1], e2[c2]) + at(e1[c1], e2[c2]))
    k1, k2 = len(e1) - 1, len(e2) - 1
    delta, b = np.zeros((k1, k2)), np.zeros((k1, k2))
    for a in range(k1):
        for c in range(k2):
            cell = (c1 == a) & (c2 == c)
            assert cell.any(), "the reference assumes no empty cell"
            b[a, c], delta[a, c] = w[cell].sum(), np.average(second[cell], weights=w[cell])
    F = np.zeros((k1 + 1, k2 + 1))
    F[1:, 1:] = delta.cumsum(0).cumsum(1)
    d = F[1:] - F[:-1]
    f1 = np.concatenate([[0], np.cumsum((b * (d[:, :-1] + d[:, 1:]) / 2).sum(1) / b.sum(1))])
    d = F[:, 1:] - F[:, :-1]
    f2 = np.concatenate([[0], np.cumsum((b * (d[:-1] + d[1:]) / 2).sum(0) / b.sum(0))])
    pure = F - f1[:, None] - f2[None, :]
    rows = ((1 - t1) * (1 - t2) * pure[c1, c2] + t1 * (1 - t2) * pure[c1 + 1, c2]
            + (1 - t1) * t2 * pure[c1, c2 + 1] + t1 * t2 * pure[c1 + 1, c2 + 1])
    mean = np.average(rows, weights=w)
    return pure - mean, np.sqrt(np.average((rows - mean) ** 2, weights=w))


def ref_ale_categorical_dropping_missing(predict, X, j, order, w):
    """Categorical ALE over the levels ``order`` on the rows where x_j is present."""
    keep = ~np.isnan(X[:, j])
    X, w = X[keep], w[keep]
    pos = np.array([list(order).index(v) for v in X[:, j]])
    out = [0.0]
    for s in range(len(order) - 1):
        up, down = X[pos == s].copy(), X[pos == s + 1].copy()
        up_moved, down_moved = up.copy(), down.copy()
        up_moved[:, j], down_moved[:, j] = order[s + 1], order[s]
        diffs = np.concatenate([predict(up_moved) - predict(up),
                                predict(down) - predict(down_moved)])
        out.append(out[-1] + np.average(diffs, weights=np.concatenate([w[pos == s],
                                                                       w[pos == s + 1]])))
    curve = np.array(out)
    return curve - np.average(curve[pos], weights=w)


def mse(y, p, w=None):
    return np.average((y - p) ** 2, weights=w)


# ----------------------------------------------------------------------------- ALE


def test_ale_leaves_out_rows_missing_the_feature(with_missing):
    """Each feature's curve equals a NumPy ALE on the rows where it is present (NaN in other
    columns going to the model), weighted; one warning names the rows left out."""
    X, _, w, model = with_missing
    for j in (0, 1, 2):
        edges, curve, centred, spread, counts = ref_ale_dropping_missing(
            model.predict, X, j, 8, w)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = ale(model, X, j, bins=8, sample_weight=w)
        missing = int(np.isnan(X[:, j]).sum())
        left_out = [c for c in caught if "left out" in str(c.message)]
        assert len(left_out) == (1 if missing else 0)
        assert result.info["n_missing"] == missing
        np.testing.assert_allclose(result.edges[0], edges, rtol=0, atol=0)
        np.testing.assert_array_equal(result.counts, counts)
        np.testing.assert_allclose(result.uncentred[:, 0], curve, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(result.centred[:, 0], centred, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(result.info["spread"][0], spread, rtol=1e-5)
        assert not np.isnan(result.info["rug"]).any()
    assert 20 < np.isnan(X[:, 0]).sum() < 45 and 20 < np.isnan(X[:, 1]).sum() < 45
    with pytest.warns(UserWarning, match="left out"):  # replicates reweight the rows kept
        boot = ale(model, X, 0, bins=8, sample_weight=w, n_bootstrap=4)
    assert np.isfinite(boot.replicates).all() and np.isfinite(boot.info["spread_replicates"]).all()


def test_ale_importance_and_interaction_leave_out_missing_rows(with_missing):
    X, _, w, model = with_missing
    with pytest.warns(UserWarning, match=r"left out .*'x0': \d+, 'x1': \d+"):
        imp = ale_importance(model, X, features=[0, 1, 2], bins=6, sample_weight=w)
    expected = [ref_ale_dropping_missing(model.predict, X, j, 6, w)[3] for j in (0, 1, 2)]
    np.testing.assert_allclose(imp.importances_mean[:, 0], expected, rtol=1e-5)
    with pytest.warns(UserWarning, match=r"'x0 x x1': \d+"):
        inter = ale_interaction(model, X, pairs=[("x0", "x1"), ("x0", "x2")], bins=3,
                                sample_weight=w)
    for row, (j, l) in enumerate([(0, 1), (0, 2)]):
        surface, spread = ref_pair_dropping_missing(model.predict, X, j, l, 3, w)
        curve = inter.info["ale"][inter.feature_sets[row]]
        np.testing.assert_allclose(curve.centred[..., 0], surface, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(inter.values[row, 0], spread, rtol=1e-5, atol=1e-7)
        both = np.isnan(X[:, j]) | np.isnan(X[:, l])
        assert curve.info["n_missing"] == both.sum()


def test_categorical_ale_leaves_out_a_missing_level(with_missing):
    X, _, w, model = with_missing
    with pytest.warns(UserWarning, match=r"'x3': \d+"):
        result = ale(model, X, "x3", categorical=["x3"], sample_weight=w)
    order = np.array(result.edges[0], float)
    assert sorted(order) == [0.0, 1.0, 2.0, 3.0]
    np.testing.assert_allclose(
        result.centred[:, 0],
        ref_ale_categorical_dropping_missing(model.predict, X, 3, order, w), atol=1e-5)
    present = X[~np.isnan(X[:, 3]), 3]
    np.testing.assert_array_equal(result.counts, [np.sum(present == v) for v in order])


def test_boosting_trees_read_into_arrays_take_missing_values_in_ale(with_missing):
    """An XGBoost model read into node arrays (which route NaN as XGBoost does) gives the
    same ALE as the NumPy reference on XGBoost's own predict."""
    xgb = pytest.importorskip("xgboost")
    X, y, w, _ = with_missing
    model = xgb.XGBRegressor(n_jobs=1, n_estimators=20, max_depth=3).fit(X, y)
    assert as_predictor(model, n_features=4).handles_missing
    with pytest.warns(UserWarning, match="left out"):
        result = ale(model, X, 0, bins=6, sample_weight=w)
    centred = ref_ale_dropping_missing(model.predict, X, 0, 6, w)[2]
    np.testing.assert_allclose(result.centred[:, 0], centred, rtol=1e-4, atol=2e-5)


def test_ale_refuses_jax_models_and_all_missing_features(with_missing):
    X, _, _, model = with_missing
    with pytest.raises(ValueError, match=r"X contains \d+ NaN values .* JAX model .* cannot "
                                         r"take missing values; impute or drop"):
        ale(lambda A: A[:, 0], X, 0)
    empty = X.copy()
    empty[:, 2] = np.nan
    with pytest.raises(ValueError, match="'x2' holds only missing values"):
        ale_importance(model, empty, features=["x2"])


# ----------------------------------------------------------------------------- LOCO


def _weighted_lower_median(x, w):
    order = np.argsort(x, kind="stable")
    share = np.cumsum(w[order]) / w.sum()
    return x[order][np.nonzero(share >= 0.5)[0][0]]


@pytest.mark.parametrize("weighted", [False, True])
def test_loco_replacement_uses_the_values_present(with_missing, weighted):
    """Every row (a missing one too) gets the mean / median of the values present; the
    importances equal a NumPy loop over model.predict."""
    X, y, w, model = with_missing
    w = w if weighted else None
    base = mse(y, model.predict(X), w)
    for strategy in ("mean", "median", "zero"):
        result = loco_importance(model, X, y, strategy=strategy, sample_weight=w,
                                 features=[0, 1, 2])
        for j in range(3):
            x = X[:, j]
            present = ~np.isnan(x)
            ww = np.ones(N) if w is None else w
            value = {"mean": np.average(x[present], weights=ww[present]),
                     "median": (np.median(x[present]) if w is None else
                                _weighted_lower_median(x[present], ww[present])),
                     "zero": 0.0}[strategy]
            replaced = X.copy()
            replaced[:, j] = value
            np.testing.assert_allclose(result.info["values"][f"x{j}"], [value], rtol=1e-12)
            np.testing.assert_allclose(result.importances_mean[j, 0],
                                       mse(y, model.predict(replaced), w) - base,
                                       rtol=1e-9, atol=1e-12)


def test_loco_refit_passes_missing_values_to_fit(with_missing):
    X, y, _, _ = with_missing

    def fit(data, target):
        return HistGradientBoostingRegressor(max_iter=20, max_leaf_nodes=8,
                                             random_state=0).fit(data, target)

    result = loco_importance(None, X, y, fit=fit, features=[0, 1, 2])
    base = mse(y, fit(X, y).predict(X))
    for j in range(3):
        rest = np.delete(X, j, axis=1)
        expected = mse(y, fit(rest, y).predict(rest)) - base
        np.testing.assert_allclose(result.importances_mean[j, 0], expected, rtol=1e-5, atol=1e-6)
    assert result.top(1) == ["x0"]


def test_loco_refuses_jax_models_and_jax_fits_missing_values(with_missing):
    from jaximp.models import fit_mlp

    X, y, _, _ = with_missing
    with pytest.raises(ValueError, match=r"NaN values .* JAX model .* cannot take missing"):
        loco_importance(lambda A: A[:, 0], X, y, strategy="mean")
    with pytest.raises(ValueError, match=r"NaN values .* fit_mlp cannot take missing values"):
        loco_importance(None, X, y, fit=fit_mlp)


def test_an_explainer_passes_missing_values_to_a_model_that_handles_them(with_missing):
    """The Explainer validates its data as the functions do: NaN reaches a host model that
    handles it, and a JAX model is refused it with the same message."""
    import jaximp

    X, y, _, model = with_missing
    ex = jaximp.Explainer(model, X, y)
    np.testing.assert_array_equal(
        ex.loco_importance(strategy="mean").importances_mean,
        loco_importance(model, X, y, strategy="mean").importances_mean)
    np.testing.assert_array_equal(ex.ale(0).centred, ale(model, X, 0).centred)
    with pytest.raises(ValueError, match="cannot take missing values"):
        jaximp.Explainer(lambda A: A.sum(axis=1), X)


def test_explain_passes_missing_values_to_a_model_that_handles_them(with_missing):
    """explain() runs its methods on data with NaN for a host model, with the numbers of the
    functions called one by one, and refuses NaN for a JAX model with the fix."""
    import jaximp

    X, y, _, model = with_missing
    methods = ["pd_importance", "h_statistic", "permutation", "ale"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ALE's rows left out, tested above
        explanation = jaximp.explain(model, X, y, methods=methods, random_state=2,
                                     progress=False)
    separate = {
        "h_statistic": jaximp.h_statistic(model, X, random_state=2).h2_overall(),
        "permutation": jaximp.permutation_importance(model, X, y, random_state=2),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        separate["ale"] = ale_importance(model, X)
    for name, result in separate.items():
        ours = explanation[name]
        ours = ours.h2_overall() if name == "h_statistic" else ours
        np.testing.assert_allclose(ours.importances_mean, result.importances_mean, rtol=1e-9,
                                   err_msg=name)
    assert np.isfinite(explanation["pd_importance"].importances_mean).all()
    with pytest.raises(ValueError, match="the JAX model .* cannot take missing values"):
        jaximp.explain(lambda A: A.sum(axis=1), X, y)


def test_scikit_learn_trees_in_arrays_take_missing_values_as_scikit_learn_routes_them():
    """Decision trees, forests and HistGradientBoosting (in arrays, also under x64) route a
    missing value by each split's missing_go_to_left, as scikit-learn predicts: the methods
    pass them NaN instead of refusing it."""
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + X[:, 1] ** 2
    X[rng.random(X.shape) < 0.15] = np.nan
    models = [DecisionTreeRegressor(max_depth=5).fit(X, y),
              RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(X, y),
              HistGradientBoostingRegressor(max_iter=10).fit(X, y)]
    for model in models:
        for x64 in (False, True):
            with jax.enable_x64(x64):
                predictor = jaximp.as_predictor(model, n_features=3)
                if "JAX trees" not in predictor.name:
                    continue  # HistGradientBoosting is read into arrays under x64 only
                assert predictor.handles_missing
                np.testing.assert_allclose(np.asarray(predictor(X))[:, 0], model.predict(X),
                                           rtol=1e-5, atol=1e-5)
                pd_ = jaximp.partial_dependence(model, X, 0, grid_resolution=4)
                host = jaximp.partial_dependence(
                    jaximp.as_predictor(model, trees="host", n_features=3), X, 0,
                    grid_resolution=4)
                np.testing.assert_allclose(pd_.average, host.average, rtol=1e-5, atol=1e-5)
