"""Host models (scikit-learn and other NumPy predictors) through the public API, each checked
against an independent reference (scikit-learn itself, closed forms, or the model's own score).
"""

import warnings

import numpy as np
import pandas as pd
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.cluster import KMeans  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import GradientBoostingRegressor  # noqa: E402
from sklearn.inspection import partial_dependence as sk_partial_dependence  # noqa: E402
from sklearn.linear_model import LinearRegression, Ridge  # noqa: E402
from sklearn.neighbors import RadiusNeighborsClassifier  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

import jaximp  # noqa: E402
from jaximp.engine._precision import PrecisionWarning  # noqa: E402

# ------------------------------------------------------------------ 1. Pipeline vs sklearn


def _mixed_frame(n=160, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.integers(0, 40, size=n),
            "c": pd.Categorical(rng.choice(["x", "y", "z"], size=n)),
        },
        index=np.arange(1000, 1000 + n),  # a non-default index must not matter
    )
    y = 2 * df["a"] + np.sin(df["b"] / 5) + 1.5 * (df["c"] == "y") + 0.1 * rng.normal(size=n)
    return df, y.to_numpy()


def _pipeline(model):
    prep = ColumnTransformer(
        [("num", StandardScaler(), ["a", "b"]), ("cat", OneHotEncoder(), ["c"])]
    )
    return Pipeline([("prep", prep), ("model", model)])


@pytest.fixture(scope="module", params=["ridge", "gbr"])
def fitted_pipeline(request):
    df, y = _mixed_frame()
    model = Ridge(alpha=0.5) if request.param == "ridge" else GradientBoostingRegressor(
        n_estimators=25, max_depth=3, random_state=0)
    return _pipeline(model).fit(df, y), df


def _sklearn_pd(pipe, df, feature, grid_resolution, kind="average"):
    # scikit-learn refuses integer columns for partial dependence; the pipeline computes the
    # same thing on the column as float64 (StandardScaler casts it anyway).
    df_float = df.astype({"b": np.float64})
    return sk_partial_dependence(
        pipe, df_float, [feature], kind=kind, grid_resolution=grid_resolution, method="brute",
        categorical_features=["c"] if feature == "c" else None,
    )


@pytest.mark.parametrize("feature", ["a", "b", "c"])
@pytest.mark.parametrize("grid_resolution", [20, 100])
def test_pipeline_pd_matches_sklearn(fitted_pipeline, feature, grid_resolution):
    pipe, df = fitted_pipeline
    ref = _sklearn_pd(pipe, df, feature, grid_resolution)
    ref_grid = ref["grid_values"][0]
    expected = ref["average"][0]

    # grid="sklearn" reproduces scikit-learn's grid (levels for the category)
    got = jaximp.partial_dependence(pipe, df, feature, grid="sklearn",
                                    grid_resolution=grid_resolution)
    assert list(got.grid_values[0]) == list(ref_grid)
    assert got.average.shape == (len(ref_grid), 1)
    np.testing.assert_allclose(got.average[:, 0], expected, rtol=1e-10, atol=1e-12)

    if feature != "c":  # explicit grid values
        got = jaximp.partial_dependence(pipe, df, feature, grid={feature: ref_grid})
        np.testing.assert_allclose(got.average[:, 0], expected, rtol=1e-10, atol=1e-12)


def test_pipeline_sklearn_grid_when_uniques_equal_resolution(fitted_pipeline):
    # scikit-learn switches to the distinct values only when there are FEWER than
    # grid_resolution of them; with exactly as many it uses the percentile linspace.
    pipe, df = fitted_pipeline
    k = df["b"].nunique()
    ref = _sklearn_pd(pipe, df, "b", k)
    got = jaximp.partial_dependence(pipe, df, "b", grid="sklearn", grid_resolution=k)
    np.testing.assert_array_equal(np.asarray(got.grid_values[0]), ref["grid_values"][0])
    np.testing.assert_allclose(got.average[:, 0], ref["average"][0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("feature", ["a", "c"])
def test_pipeline_ice_matches_sklearn(fitted_pipeline, feature):
    pipe, df = fitted_pipeline
    ref = _sklearn_pd(pipe, df, feature, 10, kind="individual")
    got = jaximp.partial_dependence(pipe, df, feature, grid="sklearn", grid_resolution=10,
                                    kind="individual")
    np.testing.assert_allclose(got.individual[..., 0], ref["individual"][0], rtol=1e-10,
                               atol=1e-12)


def test_pipeline_frame_batches_keep_user_types():
    df, y = _mixed_frame(n=60)
    seen = []

    class Spy:
        def predict(self, X):
            seen.append(X)
            return X["a"].to_numpy() + X["b"].to_numpy() + X["c"].cat.codes.to_numpy()

    jaximp.partial_dependence(Spy(), df, "c")
    assert len(seen) >= 2
    for batch in seen:
        assert isinstance(batch, pd.DataFrame)
        assert list(batch.columns) == ["a", "b", "c"]
        assert batch["a"].dtype == np.float64
        assert batch["b"].dtype == df["b"].dtype
        assert batch["c"].dtype == df["c"].dtype


# ------------------------------------------------------------------ 2. timestamps, float64


def test_linear_regression_on_timestamps_is_exact_and_float64():
    rng = np.random.default_rng(0)
    n = 300
    t = 1.6e9 + rng.uniform(0, 1000, n)
    z = rng.normal(size=n)
    X = np.column_stack([t, z])
    slope = 0.003
    y = slope * (t - 1.6e9) + 2.0 * z + 1.0
    model = LinearRegression().fit(X, y)

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        pd_t = jaximp.partial_dependence(model, X, "x0", grid_resolution=20)
        pi = jaximp.permutation_importance(model, X, y, loss="mse", n_repeats=3)

    values = pd_t.average[:, 0]
    grid = np.asarray(pd_t.grid_values[0])
    assert values.shape == (20,)
    assert len(np.unique(grid)) == 20
    spacing = np.diff(grid)
    scale = slope * spacing.mean()
    assert np.allclose(np.diff(values, 2), 0, atol=1e-6 * scale)
    np.testing.assert_allclose(np.diff(values) / spacing, slope, rtol=1e-6)
    # reference: the model itself on the data with the column set to each grid point
    ref = [model.predict(np.column_stack([np.full(n, g), z])).mean() for g in grid]
    np.testing.assert_allclose(values, ref, rtol=1e-12)

    assert pi.info["baseline"].shape == (1,)
    assert pi.info["baseline"][0] < 1e-10
    assert pi.importances_mean[0, 0] > 0 and pi.importances_mean[1, 0] > 0


# ------------------------------------------------------------------ 3. KMeans labels


def test_a_numpy_array_of_text_and_numbers_reaches_a_pipeline_as_an_array():
    """An object (or unicode) NumPy array with text columns is read as a DataFrame's text
    columns are (categorical features of their sorted levels), while the host model keeps
    getting object arrays like the one it was fitted on: the same importances and PDs as
    the DataFrame, and scikit-learn's PD of the text column."""
    rng = np.random.default_rng(5)
    n = 120
    X = np.empty((n, 2), dtype=object)
    X[:, 0] = rng.choice(["b", "a", "c"], n)
    X[:, 1] = rng.normal(size=n)
    y = np.select([X[:, 0] == "a", X[:, 0] == "b"], [2.0, -1.0], 0.5) + X[:, 1].astype(float)
    pipe = Pipeline([("encode", ColumnTransformer([("onehot", OneHotEncoder(), [0])],
                                                  remainder="passthrough")),
                     ("fit", LinearRegression())]).fit(X, y)
    seen = []

    class Recording:
        def predict(self, rows):
            seen.append(rows)
            return pipe.predict(rows)

    frame = pd.DataFrame({"t": X[:, 0], "v": X[:, 1].astype(float)})
    framed = Pipeline([("encode", ColumnTransformer([("onehot", OneHotEncoder(), ["t"])],
                                                    remainder="passthrough")),
                       ("fit", LinearRegression())]).fit(frame, y)
    ours = jaximp.permutation_importance(Recording(), X, y, feature_names=["t", "v"])
    theirs = jaximp.permutation_importance(framed, frame, y)
    np.testing.assert_allclose(ours.importances, theirs.importances, rtol=1e-10)
    assert seen and all(isinstance(r, np.ndarray) and r.dtype == object for r in seen)
    assert set(np.unique(np.concatenate([r[:, 0] for r in seen]))) == {"a", "b", "c"}
    pd_ = jaximp.partial_dependence(pipe, X, 0)
    assert pd_.feature_kinds == ("categorical",) and pd_.grid_values == (("a", "b", "c"),)
    ref = sk_partial_dependence(pipe, X, [0], categorical_features=[0])
    assert tuple(ref["grid_values"][0]) == ("a", "b", "c")
    np.testing.assert_allclose(pd_.average[:, 0], ref["average"][0], rtol=1e-10)
    unicode = X.astype(str)
    unicode[:, 1] = X[:, 1].astype(float).round(1).astype(str)  # text of numbers: levels
    assert [f.kind for f in jaximp.as_dataset(unicode).features] == ["categorical"] * 2


def test_kmeans_labels_in_partial_dependence():
    X = np.random.default_rng(3).normal(size=(150, 3))
    km = KMeans(n_clusters=3, n_init=3, random_state=0).fit(X)
    result = jaximp.partial_dependence(km, X, 0, grid_resolution=10)
    assert result.average.shape == (10, 1)
    assert np.all((result.average >= 0) & (result.average <= 2))
    # reference: mean predicted label with column 0 set to each grid point
    ref = []
    for g in result.grid_values[0]:
        Xg = X.copy()
        Xg[:, 0] = g
        ref.append(km.predict(Xg).mean())
    np.testing.assert_allclose(result.average[:, 0], ref, rtol=1e-12)


# ------------------------------------------------------------------ 4. no neighbours at zero


def test_radius_neighbors_is_probed_on_real_rows():
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(200, 2)) + 10.0  # zeros have no neighbours within the radius
    y = (X[:, 0] > 10.5).astype(int)
    model = RadiusNeighborsClassifier(radius=0.5).fit(X, y)
    with pytest.raises(ValueError):
        model.predict_proba(np.zeros((2, 2)))  # what probing with zeros would hit

    result = jaximp.partial_dependence(model, X, 0, grid_resolution=8)
    assert result.average.shape == (8, 2)
    assert result.output_names == ("0", "1")
    assert np.all((result.average >= 0) & (result.average <= 1))
    ref = []
    for g in result.grid_values[0]:
        Xg = X.copy()
        Xg[:, 0] = g
        ref.append(model.predict_proba(Xg).mean(axis=0))
    np.testing.assert_allclose(result.average, ref, rtol=1e-12)

    pi = jaximp.permutation_importance(model, X, y, loss="accuracy", n_repeats=3)
    assert pi.info["baseline"][0] == model.score(X, y)
    assert pi.importances_mean[0, 0] > pi.importances_mean[1, 0]
    # wrapped alone, it is probed on zeros: the note says so and how to give real rows
    with pytest.raises(ValueError) as caught:
        jaximp.as_predictor(model)
    assert "2 rows of zeros (no sample= was given)" in caught.value.__notes__[0]
    assert "sample=X[:2]" in caught.value.__notes__[0]
    assert jaximp.as_predictor(model, sample=X[:2]).n_outputs == 2


# ------------------------------------------------------------------ 5. string labels, no proba


def test_svc_string_labels_accuracy():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] + 0.2 * X[:, 1] > 0, "yes", "no")
    model = SVC().fit(X, y)
    assert not hasattr(model, "predict_proba")

    pi = jaximp.permutation_importance(model, X, y, loss="accuracy", n_repeats=5,
                                       random_state=1)
    assert pi.info["baseline"][0] == model.score(X, y)
    assert pi.info["baseline"][0] > 0.9
    assert np.argmax(pi.importances_mean[:, 0]) == 0
    assert pi.importances_mean[0, 0] > 0.2
    # reference: sklearn's accuracy on the same permuted data is not available (jaximp's
    # permutations are its own), but every importance is a difference of accuracies on n rows
    n = X.shape[0]
    np.testing.assert_allclose(pi.importances * n, np.round(pi.importances * n), atol=1e-9)

    # also through a DataFrame and in partial dependence (fraction predicted per class)
    df = pd.DataFrame(X, columns=["u", "v", "w"])
    model_df = SVC().fit(df, y)
    pi_df = jaximp.permutation_importance(model_df, df, y, loss="accuracy", n_repeats=5,
                                          random_state=1)
    np.testing.assert_array_equal(pi_df.importances, pi.importances)
    pd_u = jaximp.partial_dependence(model_df, df, "u", grid_resolution=6)
    assert pd_u.average.shape[0] == 6
    np.testing.assert_allclose(pd_u.average.sum(axis=-1), 1.0)
    yes = list(pd_u.output_names).index("yes")
    ref = []
    for g in pd_u.grid_values[0]:
        Xg = df.copy()
        Xg["u"] = g
        ref.append(np.mean(model_df.predict(Xg) == "yes"))
    np.testing.assert_allclose(pd_u.average[:, yes], ref, rtol=1e-12)


# ------------------------------------------------------------------ 6. the model's own errors


class _FailsOnBigBatches:
    def predict(self, X):
        if np.shape(X)[0] > 2:
            raise ValueError("boom")
        return np.asarray(X)[:, 0]


class _CustomError(Exception):
    def __init__(self, code, detail):  # not constructible from one message
        super().__init__(code, detail)
        self.code = code


class _FailsAtProbe:
    def __init__(self, error):
        self.error = error

    def predict(self, X):
        raise self.error


def test_model_error_after_probe_propagates():
    X = np.random.default_rng(6).normal(size=(30, 2))
    with pytest.raises(ValueError, match="boom"):
        jaximp.partial_dependence(_FailsOnBigBatches(), X, 0, grid_resolution=5)
    y = X[:, 0]
    with pytest.raises(ValueError, match="boom"):
        jaximp.permutation_importance(_FailsOnBigBatches(), X, y)


@pytest.mark.parametrize("error", [ValueError("boom"), KeyError("boom"),
                                   _CustomError(7, "boom"), ZeroDivisionError("boom")])
def test_model_error_at_probe_keeps_its_type(error):
    X = np.random.default_rng(6).normal(size=(30, 2))
    with pytest.raises(type(error), match="boom") as info:
        jaximp.partial_dependence(_FailsAtProbe(error), X, 0, grid_resolution=5)
    if isinstance(error, _CustomError):
        assert info.value.code == 7


# ------------------------------------------------------------------ 7. memory budget


@pytest.mark.parametrize("loss", ["mse", "r2"])
def test_small_memory_budget_gives_same_permutation_importance(loss):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(700, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.normal(size=700)
    model = Ridge(alpha=1.0).fit(X, y)
    default = jaximp.permutation_importance(model, X, y, loss=loss, n_repeats=4,
                                            random_state=3)
    small = jaximp.permutation_importance(model, X, y, loss=loss, n_repeats=4,
                                          random_state=3, memory_budget=1 << 16)
    np.testing.assert_allclose(small.importances, default.importances, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(small.info["baseline"], default.info["baseline"], rtol=1e-12)


def test_small_memory_budget_gives_same_pd_for_a_pipeline():
    df, y = _mixed_frame(n=300)
    pipe = _pipeline(Ridge()).fit(df, y)
    default = jaximp.partial_dependence(pipe, df, "a", grid_resolution=30, kind="both")
    small = jaximp.partial_dependence(pipe, df, "a", grid_resolution=30, kind="both",
                                      memory_budget=1 << 16)
    np.testing.assert_allclose(small.average, default.average, rtol=1e-12)
    np.testing.assert_allclose(small.individual, default.individual, rtol=1e-12)


def test_string_and_integer_labels_give_the_same_importances():
    # integer labels reach the loss as one column of labels, strings as one 0/1 column per
    # class: the accuracy is the same either way
    rng = np.random.default_rng(8)
    X = rng.normal(size=(150, 3))
    codes = np.digitize(X[:, 0] + 0.3 * X[:, 2], [-0.5, 0.5])
    names = np.array(["low", "mid", "high"])[codes]
    by_code = SVC().fit(X, codes)
    by_name = SVC().fit(X, names)
    a = jaximp.permutation_importance(by_code, X, codes, loss="accuracy", n_repeats=3)
    b = jaximp.permutation_importance(by_name, X, names, loss="accuracy", n_repeats=3)
    assert a.info["baseline"][0] == by_code.score(X, codes)
    assert b.info["baseline"][0] == by_name.score(X, names)
    np.testing.assert_array_equal(a.importances, b.importances)


def test_response_method_as_scikit_learn():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=120) > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    for method in ("predict_proba", "decision_function"):
        predictor = jaximp.as_predictor(clf, n_features=3, response_method=method, sample=X[:4])
        ours = jaximp.partial_dependence(predictor, X, 0, grid="sklearn", grid_resolution=7)
        theirs = sk_partial_dependence(clf, X, [0], response_method=method,
                                       grid_resolution=7, kind="average")
        # scikit-learn keeps the positive class's column for a binary classifier
        column = -1
        np.testing.assert_allclose(ours.average[:, column], theirs["average"][0], rtol=1e-10)
    scores = jaximp.as_predictor(clf, n_features=3, response_method="decision_function")
    with pytest.raises(ValueError, match=r"response='logits'"):
        jaximp.permutation_importance(scores, X, y, loss="log_loss")
    logits = jaximp.permutation_importance(scores, X, y, loss="log_loss", response="logits",
                                           n_repeats=3)
    proba = jaximp.permutation_importance(clf, X, y, loss="log_loss", n_repeats=3)
    np.testing.assert_allclose(logits.importances, proba.importances, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match=r"response_method must be one of"):
        jaximp.as_predictor(clf, response_method="proba")
    with pytest.raises(ValueError, match=r"has no decision_function method"):
        from sklearn.tree import DecisionTreeClassifier
        jaximp.as_predictor(DecisionTreeClassifier().fit(X, y), n_features=3,
                            response_method="decision_function")
    with pytest.raises(ValueError, match=r"is not one \(it has no predict method\)"):
        jaximp.as_predictor(lambda A: A[:, 0], response_method="predict")


def test_as_predictor_reads_the_width_of_a_fitted_estimator():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(40, 3)) + 5.0
    est = LinearRegression().fit(X, X @ np.array([1.0, -2.0, 0.5]))
    predictor = jaximp.as_predictor(est)  # no n_features: n_features_in_ says 3
    assert predictor.n_outputs == 1
    ours = jaximp.partial_dependence(predictor, X, 1, grid="sklearn", grid_resolution=7)
    ref = sk_partial_dependence(est, X, [1], grid_resolution=7)  # brute for a linear model
    np.testing.assert_allclose(ours.average[:, 0], ref["average"][0], rtol=1e-10)

    class Unfitted:
        def predict(self, X):
            return X[:, 0]

    with pytest.raises(ValueError, match=r"pass as_predictor\(model, n_features=X.shape\[1\]\)"):
        jaximp.as_predictor(Unfitted())


def test_text_columns_reach_a_pipeline_as_text():
    """Text columns (object and pandas string dtypes) are categorical features; a Pipeline
    that one-hot encodes them gets the strings back, and its PD equals scikit-learn's."""
    rng = np.random.default_rng(12)
    n = 150
    df = pd.DataFrame({"a": rng.normal(size=n),
                       "s": pd.Series(rng.choice(["lo", "mid", "hi"], n), dtype=object),
                       "t": pd.array(rng.choice(["u", "v"], n), dtype="string")})
    y = (2 * df["a"] + 1.5 * (df["s"] == "hi").to_numpy(float)
         - (df["t"] == "v").to_numpy(float) + 0.1 * rng.normal(size=n))
    encode = ColumnTransformer([("oh", OneHotEncoder(), ["s", "t"])], remainder="passthrough")
    pipe = Pipeline([("encode", encode), ("ridge", Ridge())]).fit(df, y)
    seen = []

    class Spy:  # the pipeline, recording the batches it is called on
        def predict(self, batch):
            seen.append(batch)
            return pipe.predict(batch)

    ours = jaximp.partial_dependence(Spy(), df, "s")
    ref = sk_partial_dependence(pipe, df, ["s"], categorical_features=["s"])
    assert ours.grid_values == (tuple(ref["grid_values"][0]),) == (("hi", "lo", "mid"),)
    np.testing.assert_allclose(ours.average[:, 0], ref["average"][0], rtol=1e-12)
    assert all((b.dtypes == df.dtypes).all() for b in seen[1:])
    assert set(seen[-1]["s"]) <= {"lo", "mid", "hi"}
    for feature in ("s", "t"):  # the same permutations of codes or of strings
        importance = jaximp.permutation_importance(pipe, df, y.to_numpy(), n_repeats=2,
                                                   features=[feature])
        assert importance.importances_mean[0, 0] > 0.05


def test_each_response_method_of_one_classifier_has_its_own_apply():
    """Two Predictors of one classifier, by predict_proba then decision_function, each apply
    their own method (their applies were kept by the model alone: the second evaluated
    probabilities)."""
    import jax.numpy as jnp
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    clf = LogisticRegression().fit(X, np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5]))
    for method in ("predict_proba", "decision_function"):
        predictor = jaximp.as_predictor(clf, response_method=method)
        applied = np.asarray(predictor.apply(predictor.params, jnp.asarray(X[:5], jnp.float32)))
        np.testing.assert_allclose(applied, getattr(clf, method)(X[:5].astype(np.float32)),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(jaximp.predict_rows(predictor, X[:5]),
                                   getattr(clf, method)(X[:5]), rtol=1e-5, atol=1e-6)


def test_a_host_predictor_called_on_a_float64_array_gets_its_rows_unrounded():
    """Predictor(X) of a host model passes a NumPy array as it is, as the methods and a
    DataFrame do: a categorical HistGradientBoosting model (host only) equals its predict
    exactly, where float32 rows moved some predictions."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(9)
    codes = rng.integers(0, 5, 2000)
    X = np.column_stack([rng.normal(size=(2000, 2)), codes])
    y = X[:, 0] + np.array([0.0, 1.0, -1.0, 2.0, 0.0])[codes]
    model = HistGradientBoostingRegressor(max_iter=10, categorical_features=[2]).fit(X, y)
    predictor = jaximp.as_predictor(model, sample=X[:5])
    assert predictor.host
    np.testing.assert_array_equal(np.asarray(predictor(X))[:, 0], model.predict(X))
    assert np.abs(model.predict(X.astype(np.float32).astype(np.float64))
                  - model.predict(X)).max() > 1e-3  # rounding would show
