"""Inputs that were accepted silently or refused unclearly: each is now refused with a message
that says what is wrong and the fix, or handled as the reference packages handle it."""

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import jaximp

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y = X @ np.array([1.0, -1.0, 0.5])


def linear(A):
    return A @ jnp.array([1.0, -1.0, 0.5])


@pytest.mark.parametrize("call", [
    lambda f: jaximp.pd_importance(linear, X, features=f),
    lambda f: jaximp.permutation_importance(linear, X, Y, features=f),
    lambda f: jaximp.partial_dependence_all(linear, X, features=f),
])
def test_a_features_list_with_a_tuple_gets_jaximps_message(call):
    with pytest.raises(TypeError, match=r"features must list single features \(names or "
                                        r"positions\) or be a boolean mask; got \(0, 1\)"):
        call([0, 1, (0, 1)])


def test_boolean_masks_and_names_still_select_features():
    dataset = jaximp.as_dataset(X)
    for features in ([True, False, True], np.array([True, False, True]), ["x0", 2]):
        assert [f.name for f in dataset.resolve(features)] == ["x0", "x2"]


FRAME = pd.DataFrame({
    "a": RNG.normal(size=60),
    "b": RNG.choice(["u", "v", "w"], 60),
    "c": pd.Categorical(RNG.choice([10, 20, 30], 60)),
})


def frame_model(A):
    return A[:, 0] + 2 * A[:, 1] + A[:, 2]


@pytest.mark.parametrize("feature, values, labels, codes", [
    ("b", ["v"], ("v",), [1.0]),                 # a text level
    ("b", ["w", "u"], ("w", "u"), [2.0, 0.0]),
    ("b", [1], ("v",), [1.0]),                   # its code in X, labelled by its level
    ("c", [20], (20,), [1.0]),                   # a numeric category: the level, not a code
])
def test_grid_values_of_a_categorical_feature_name_its_levels(feature, values, labels, codes):
    result = jaximp.partial_dependence(frame_model, FRAME, feature, grid={feature: values})
    assert result.grid_values[0] == labels
    # reference: the model at each code, averaged over the rows (the other columns as they are)
    base = jaximp.as_dataset(FRAME).X
    column = list(FRAME.columns).index(feature)
    expected = []
    for code in codes:
        modified = base.copy()
        modified[:, column] = code
        expected.append(frame_model(modified).mean())
    np.testing.assert_allclose(result.average[:, 0], expected, rtol=1e-5)


@pytest.mark.parametrize("feature, values, message", [
    ("b", ["zz"], r"grid value 'zz' is not a level of the categorical feature 'b'; its levels "
                  r"are \['u', 'v', 'w'\]"),
    ("b", [7], r"grid value 7 is not a level of the categorical feature 'b'"),
    ("c", [40], r"grid value 40 is not a level of the categorical feature 'c'; its levels are "
                r"\[10, 20, 30\]"),
])
def test_unknown_levels_and_codes_out_of_range_are_refused(feature, values, message):
    with pytest.raises(ValueError, match=message):
        jaximp.partial_dependence(frame_model, FRAME, feature, grid={feature: values})


def test_an_integer_coded_categorical_takes_its_levels_and_refuses_others():
    X_codes = np.c_[RNG.normal(size=40), RNG.choice([0, 2, 5], 40)]
    result = jaximp.partial_dependence(lambda A: A[:, 0] + A[:, 1], X_codes, 1,
                                       categorical=[1], grid={1: [0, 5]})
    assert result.grid_values[0] == (0, 5)
    np.testing.assert_allclose(result.average[:, 0], X_codes[:, 0].mean() + np.array([0, 5]),
                               rtol=1e-5)
    with pytest.raises(ValueError, match=r"grid value 7 is not a level .* \[0, 2, 5\]"):
        jaximp.partial_dependence(lambda A: A[:, 0] + A[:, 1], X_codes, 1, categorical=[1],
                                  grid={1: [7]})


@pytest.mark.parametrize("call, error, message", [
    (lambda: jaximp.partial_dependence(linear, X + 1j, 0), TypeError,
     r"X must hold real numbers; got complex values"),
    (lambda: jaximp.partial_dependence(linear, pd.DataFrame({"a": X[:, 0] + 1j, "b": X[:, 1],
                                                             "c": X[:, 2]}), 0),
     TypeError, r"column 'a' holds complex values"),
    (lambda: jaximp.partial_dependence(lambda A: linear(A) * (1 + 1j), X, 0), ValueError,
     r"the model <lambda> returned complex values"),
    (lambda: jaximp.permutation_importance(_ComplexHost(), X, Y), ValueError,
     r"the model .* returned complex values"),
    (lambda: jaximp.pd_importance(linear, X, sample_weight=["1"] * 60), TypeError,
     r"sample_weight must hold numbers \(one weight per row\); got an array of dtype <U1"),
    (lambda: jaximp.permutation_importance(linear, X, Y, memory_budget=float("inf")),
     ValueError, r"memory_budget must be a finite number of bytes"),
    (lambda: jaximp.permutation_importance(linear, X, Y, random_state=2 ** 70), ValueError,
     r"random_state must be an int seed from -2\*\*63 to 2\*\*63 - 1"),
])
def test_inputs_once_accepted_silently_are_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


class _ComplexHost:
    """A host model (it has predict) whose predictions are complex."""

    def predict(self, A):
        return np.asarray(A).sum(axis=1) * (1 + 1j)


def test_an_infinite_budget_in_the_environment_is_refused(monkeypatch):
    monkeypatch.setenv("JAXIMP_MEMORY_BUDGET", "inf")
    with pytest.raises(ValueError, match=r"JAXIMP_MEMORY_BUDGET must be a number of "
                                         r"bytes >= 65536"):
        jaximp.default_memory_budget()


def test_ratio_over_a_baseline_of_float_rounding_is_refused():
    """A model that fits exactly up to float32 rounding: the baseline mse is ~1e-15, and the
    ratios would be ~1e15; kind='difference' stays available."""
    X32 = X.astype(np.float32)
    exact = np.asarray(linear(jnp.asarray(X32)), np.float64) + 1e-8  # off by rounding only
    with pytest.raises(ValueError, match=r"kind='ratio' divides by the baseline mse loss, "
                                         r".* which is float rounding next to the perturbed"):
        jaximp.permutation_importance(linear, X32, exact, kind="ratio")
    difference = jaximp.permutation_importance(linear, X32, exact, kind="difference")
    assert difference.importances_mean[0, 0] > 1


def test_the_default_pd_grid_is_scikit_learns():
    """A feature with exactly grid_resolution distinct values: scikit-learn spaces the grid
    between the percentiles (distinct values only when there are fewer)."""
    from sklearn.inspection import partial_dependence as sk_partial_dependence
    from sklearn.linear_model import LinearRegression

    values = np.tile(np.arange(10.0) ** 2, 6)
    X_grid = np.c_[values, RNG.normal(size=60)]
    est = LinearRegression().fit(X_grid, values + X_grid[:, 1])
    ours = jaximp.partial_dependence(est, X_grid, 0, grid_resolution=10)
    theirs = sk_partial_dependence(est, X_grid, [0], grid_resolution=10, kind="average")
    np.testing.assert_allclose(ours.grid_values[0], theirs["grid_values"][0], rtol=1e-12)
    np.testing.assert_allclose(ours.average[:, 0], theirs["average"][0], rtol=1e-10)


@pytest.fixture(scope="module")
def wine():
    from sklearn.datasets import load_wine

    X_wine, y_wine = load_wine(return_X_y=True, as_frame=True)
    return X_wine.iloc[::2].reset_index(drop=True), y_wine.iloc[::2].to_numpy()


def test_explain_takes_a_scikit_learn_classifier_with_classification_defaults(wine):
    from sklearn.ensemble import RandomForestClassifier

    X_wine, y_wine = wine
    clf = RandomForestClassifier(n_estimators=10, random_state=0).fit(X_wine, y_wine)
    result = jaximp.explain(clf, X_wine, y_wine, methods=["permutation", "sensitivity"])
    assert result["permutation"].info["loss"] == "accuracy"
    # sensitivity scales by D_y of the class indicators: equal to passing them explicitly
    onehot = (y_wine[:, None] == np.arange(3)[None, :]).astype(float)
    explicit = jaximp.sensitivity_importance(clf, X_wine, onehot)
    np.testing.assert_allclose(result["sensitivity"].importances_mean,
                               explicit.importances_mean, rtol=1e-12)
    # the Explainer's bound call sees the classifier through its wrapped model
    bound = jaximp.Explainer(clf, X_wine, y_wine).permutation_importance()
    np.testing.assert_array_equal(bound.importances,
                                  jaximp.permutation_importance(clf, X_wine, y_wine).importances)


def test_a_jax_model_returning_logits_is_scored_by_accuracy_against_its_labels(wine):
    X_wine, y_wine = wine
    weights = jnp.asarray(RNG.normal(size=(13, 3)))
    mean, std = X_wine.to_numpy().mean(0), X_wine.to_numpy().std(0)

    def logits(A):
        return (A - mean) / std @ weights

    result = jaximp.explain(logits, X_wine, y_wine, methods=["permutation"])
    assert result["permutation"].info["loss"] == "accuracy"
    # reference: accuracy of the arg max, the same for logits and their softmax
    scores = np.asarray(logits(jnp.asarray(X_wine.to_numpy(), jnp.float32)))
    np.testing.assert_allclose(result["permutation"].info["baseline"],
                               [np.mean(scores.argmax(1) == y_wine)], rtol=1e-6)
    # one column of labels that are not class codes keeps the regression default, and says so
    with pytest.raises(ValueError, match=r"y has 1 column\(s\) but 3 model output\(s\)"):
        jaximp.permutation_importance(logits, X_wine, y_wine + 0.5)


def test_max_samples_keeps_the_full_datas_text_levels():
    """A row subset that lacks a rare level still decodes the full data's codes: the result
    equals permutation importance on the same rows passed directly."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    n = 200
    frame = pd.DataFrame({"a": RNG.normal(size=n),
                          "t": RNG.choice(["a", "b", "c"], n, p=[0.02, 0.49, 0.49])})
    target = frame["a"].to_numpy() + 2.0 * (frame["t"] == "b").to_numpy()
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["t"]),
                                remainder="passthrough"),
        LinearRegression()).fit(frame, target)
    for seed in range(4):
        result = jaximp.permutation_importance(pipe, frame, target, max_samples=20,
                                               random_state=seed)
        rows = result.info["sample_rows"]
        direct = jaximp.permutation_importance(pipe, frame.iloc[rows].reset_index(drop=True),
                                               target[rows], random_state=seed)
        np.testing.assert_allclose(result.importances, direct.importances, rtol=1e-12)


def test_a_numpy_function_gets_the_fix_and_the_fix_works():
    import types

    def numpy_model(A):
        return np.asarray(A) @ np.array([1.0, -1.0, 0.5])

    with pytest.raises(ValueError, match=r"computes with NumPy .* give jaximp an object with "
                                         r"a predict method \(e\.g\. types\.SimpleNamespace"):
        jaximp.partial_dependence(numpy_model, X, 0)
    wrapped = jaximp.partial_dependence(types.SimpleNamespace(predict=numpy_model), X, 0,
                                        grid_resolution=4)
    grid = wrapped.grid_values[0]
    expected = [np.mean(numpy_model(np.c_[np.full(60, g), X[:, 1:]])) for g in grid]
    np.testing.assert_allclose(wrapped.average[:, 0], expected, rtol=1e-12)


def _column_pipeline(frame, target):
    """A Pipeline that selects columns by name (one-hot of the text column when present)."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    text = [c for c in ("t",) if c in frame.columns]
    encode = make_column_transformer((OneHotEncoder(), text), remainder="passthrough") \
        if text else "passthrough"
    return make_pipeline(encode, LinearRegression()).fit(frame, target)


def test_loco_refits_a_dataframe_pipeline_on_dataframes():
    n = 150
    frame = pd.DataFrame({"a": RNG.normal(size=n), "b": RNG.normal(size=n),
                          "t": RNG.choice(["p", "q", "r"], n)})
    target = frame["a"].to_numpy() + 2.0 * (frame["t"] == "q").to_numpy() + 0.5 * frame["b"]
    result = jaximp.loco_importance(None, frame, target, fit=_column_pipeline)
    # reference: scikit-learn refits on the DataFrame without each column, float64 mse
    base = np.mean((_column_pipeline(frame, target).predict(frame) - target) ** 2)
    expected = []
    for column in frame.columns:
        rest = frame.drop(columns=[column])
        expected.append(np.mean((_column_pipeline(rest, target).predict(rest) - target) ** 2)
                        - base)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-5)
    # through an Explainer (the data as a validated Dataset) the refits get the same frames
    bound = jaximp.Explainer(_column_pipeline(frame, target), frame, target)
    np.testing.assert_allclose(bound.loco_importance(fit=_column_pipeline).importances_mean,
                               result.importances_mean, rtol=1e-6)


@pytest.mark.parametrize("strategy", ["mean", "median", "zero"])
def test_loco_replacement_refuses_a_categorical_feature(strategy):
    frame = pd.DataFrame({"a": RNG.normal(size=40), "t": RNG.choice(["p", "q"], 40)})
    target = frame["a"].to_numpy()
    model = _column_pipeline(frame, target)
    with pytest.raises(ValueError, match=rf"strategy='{strategy}' replaces a feature by one "
                                         r"number, which for the categorical feature 't'"):
        jaximp.loco_importance(model, frame, target, strategy=strategy)
    kept = jaximp.loco_importance(model, frame, target, strategy=strategy, features=["a"])
    assert kept.feature_names == ("a",)


@pytest.fixture(scope="module")
def with_missing():
    """Data with NaN in one column, and a HistGradientBoosting model that handles them."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    n = 300
    data = RNG.normal(size=(n, 3))
    target = data[:, 0] + np.sin(data[:, 1]) + 0.5 * data[:, 2]
    data[RNG.uniform(size=n) < 0.2, 2] = np.nan
    model = HistGradientBoostingRegressor(max_iter=30, random_state=0).fit(data, target)
    return data, target, model


def test_host_models_take_missing_values_in_pd_as_scikit_learn(with_missing):
    from sklearn.inspection import partial_dependence as sk_partial_dependence

    data, _, model = with_missing
    for feature in (0, 1):  # NaN in another column: the rows keep them, as scikit-learn's
        ours = jaximp.partial_dependence(model, data, feature, kind="both", grid_resolution=8)
        theirs = sk_partial_dependence(model, data, [feature], grid_resolution=8, kind="both",
                                       method="brute")
        np.testing.assert_allclose(ours.grid_values[0], theirs["grid_values"][0], rtol=1e-12)
        np.testing.assert_allclose(ours.average[:, 0], theirs["average"][0], rtol=1e-10)
        np.testing.assert_allclose(ours.individual[..., 0], theirs["individual"][0],
                                   rtol=1e-6)
    # the column with NaN: its grid is built from the values present
    grid = jaximp.partial_dependence(model, data, 2, grid_resolution=5,
                                     percentiles=(0, 1)).grid_values[0]
    present = data[~np.isnan(data[:, 2]), 2]
    np.testing.assert_allclose(grid, np.linspace(present.min(), present.max(), 5))


def test_missing_values_reach_host_models_in_pd_importance_and_h(with_missing):
    data, _, model = with_missing
    importance = jaximp.pd_importance(model, data, grid_resolution=6)
    assert np.all(np.isfinite(importance.importances_mean))
    h = jaximp.h_statistic(model, data, n_max=40)
    assert np.all(np.isfinite(h.overall.importances_mean))


def test_missing_values_reach_host_models_in_shapley_values(with_missing):
    """Exact Shapley values of a host model on rows and a background with NaN equal a float64
    brute force over coalitions calling the model's own predict."""
    import itertools
    import math

    data, _, model = with_missing
    rows, background = data[:4], data[4:34]
    assert np.isnan(background).any()
    ours = jaximp.shapley_values(model, rows, background=background)
    p = data.shape[1]

    def value(x, coalition):
        mixed = background.copy()
        mixed[:, list(coalition)] = x[list(coalition)]
        return model.predict(mixed).mean()

    expected = np.zeros((rows.shape[0], p))
    for i, x in enumerate(rows):
        for j in range(p):
            others = [k for k in range(p) if k != j]
            for size in range(p):
                for s in itertools.combinations(others, size):
                    weight = math.factorial(size) * math.factorial(p - size - 1) / math.factorial(p)
                    expected[i, j] += weight * (value(x, s + (j,)) - value(x, s))
    np.testing.assert_allclose(ours.values[..., 0], expected, rtol=1e-5, atol=1e-9)


def test_missing_values_reach_host_models_in_partial_importance_and_sensitivity(with_missing):
    data, target, model = with_missing
    # partial importance of feature 0: ICI_i(z) = (y_i - f(z, x_iC))^2 - (y_i - f(x_i))^2
    result = jaximp.partial_importance(model, data, target, 0, grid_resolution=5)
    base = (target - model.predict(data)) ** 2
    expected = []
    for z in result.grid_values:
        changed = data.copy()
        changed[:, 0] = z
        expected.append(((target - model.predict(changed)) ** 2 - base).mean())
    np.testing.assert_allclose(result.pi[:, 0], expected, rtol=1e-5, atol=1e-9)
    # sensitivity, max variant: D_p = mean_i range over the grid of f(z, x_iC), grids
    # spanning the values present
    result = jaximp.sensitivity_importance(model, data, target, variant="max", n_values=4)
    for j in range(3):
        present = data[~np.isnan(data[:, j]), j]
        curves = []
        for z in np.linspace(present.min(), present.max(), 4):
            changed = data.copy()
            changed[:, j] = z
            curves.append(model.predict(changed))
        d_p = np.ptp(np.stack(curves), axis=0).mean()
        np.testing.assert_allclose(result.importances_mean[j, 0], d_p / np.ptp(target),
                                   rtol=1e-5)


def test_jax_models_are_refused_missing_values_with_the_fix(with_missing):
    data, _, _ = with_missing
    with pytest.raises(ValueError, match=r"X contains \d+ NaN values .* the JAX model "
                                         r"<lambda> cannot take missing values"):
        jaximp.partial_dependence(lambda A: A.sum(axis=1), data, 0)


def test_h_statistic_on_one_row_is_refused_and_on_two_rows_is_zero():
    """One row leaves every centred PD 0; two rows of equal weight decompose every prediction
    exactly into its parts, so every statistic is 0 (hstats 1.2.1 gives 0 too)."""
    with pytest.raises(ValueError, match=r"h_statistic needs at least 2 rows of X with positive "
                                         r"weight \(after n_max\); got 1"):
        jaximp.h_statistic(lambda A: A[:, 0] * A[:, 1], X[:1])
    for rows, n_max in [(2, None), (50, 2)]:
        h = jaximp.h_statistic(lambda A: A[:, 0] * A[:, 1], X[:rows], n_max=n_max)
        assert h.n_rows == 2 and not h.pairwise.values.any()
        assert not h.overall.importances_mean.any()


def _recursion_models():
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.linear_model import LinearRegression

    data = RNG.normal(size=(50, 3))
    target = data[:, 0]
    return [
        (LinearRegression().fit(data, target), r"got LinearRegression\. Use method='brute'"),
        (GradientBoostingRegressor(init=LinearRegression(), n_estimators=5).fit(data, target),
         r"got GradientBoostingRegressor with a non-constant init \(LinearRegression\)\. Use "
         r"method='brute'"),
        (jaximp.as_predictor(GradientBoostingRegressor(n_estimators=5).fit(data, target),
                             response_method="predict"),
         r"got a wrapped Predictor, whose trees it cannot see\. Use method='brute'"),
    ], data


def test_recursion_on_a_model_without_trees_says_use_brute():
    models, data = _recursion_models()
    for model, message in models:
        with pytest.raises(TypeError, match=r"method='recursion' traverses the trees of a "
                                            r"fitted scikit-learn tree model .*" + message):
            jaximp.partial_dependence(model, data, 0, method="recursion")


def test_missing_text_reaches_a_pipeline_that_imputes_it():
    from sklearn.compose import make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    n = 200
    text = RNG.choice(["a", "b", "c"], n).astype(object)
    text[RNG.uniform(size=n) < 0.15] = None
    frame = pd.DataFrame({"x": RNG.normal(size=n), "t": text})
    target = frame["x"].to_numpy() + 2.0 * (frame["t"] == "b").to_numpy()
    encode = make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder())
    pipe = make_pipeline(make_column_transformer((encode, ["t"]), remainder="passthrough"),
                         LinearRegression()).fit(frame, target)
    result = jaximp.partial_dependence(pipe, frame, "t")
    assert result.grid_values[0] == ("a", "b", "c")  # the levels; missing is no grid point
    for level, value in zip("abc", result.average[:, 0]):
        modified = frame.copy()
        modified["t"] = level
        assert value == pytest.approx(pipe.predict(modified).mean(), rel=1e-12)
    importance = jaximp.permutation_importance(pipe, frame, target, n_repeats=3)
    assert np.all(np.isfinite(importance.importances))
    assert importance.importances_mean[1, 0] > 0.5  # the text feature matters
    with pytest.raises(ValueError, match=r"the JAX model .* cannot take missing values"):
        jaximp.partial_dependence(lambda A: A.sum(axis=1), frame, "x")


def test_loco_refits_are_scored_on_held_out_data():
    """X_test, y_test: fitted on the training rows, scored on the held-out ones, equal to a
    scikit-learn refit loop scored on the held-out rows."""
    n = 150
    frame = pd.DataFrame({"a": RNG.normal(size=2 * n), "b": RNG.normal(size=2 * n),
                          "t": RNG.choice(["p", "q", "r"], 2 * n)})
    target = (frame["a"].to_numpy() + 2.0 * (frame["t"] == "q").to_numpy()
              + 0.3 * RNG.normal(size=2 * n))
    train, test = frame.iloc[:n].reset_index(drop=True), frame.iloc[n:].reset_index(drop=True)
    y_train, y_test = target[:n], target[n:]
    result = jaximp.loco_importance(None, train, y_train, fit=_column_pipeline, X_test=test,
                                    y_test=y_test)
    full = _column_pipeline(train, y_train)
    base = np.mean((full.predict(test) - y_test) ** 2)
    expected = []
    for column in frame.columns:
        refit = _column_pipeline(train.drop(columns=[column]), y_train)
        expected.append(np.mean((refit.predict(test.drop(columns=[column])) - y_test) ** 2)
                        - base)
    # float32 predictions: differences of losses agree to about 1e-8 absolute
    np.testing.assert_allclose(result.info["baseline"], [base], rtol=1e-6)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-5, atol=1e-6)


def test_loco_held_out_data_with_fit_mlp_and_misuse():
    import functools

    X_all = RNG.normal(size=(200, 3))
    y_all = X_all @ np.array([2.0, 1.0, 0.0])
    fit = functools.partial(jaximp.fit_mlp, hidden=(8,), steps=100)
    result = jaximp.loco_importance(None, X_all[:100], y_all[:100], fit=fit,
                                    X_test=X_all[100:], y_test=y_all[100:])
    full = result.info["full_model"]
    held_out = np.mean((np.asarray(full(X_all[100:]), np.float64).reshape(-1)
                        - y_all[100:]) ** 2)
    np.testing.assert_allclose(result.info["baseline"], [held_out], rtol=1e-5)
    with pytest.raises(ValueError, match=r"X_test and y_test go together"):
        jaximp.loco_importance(None, X_all[:100], y_all[:100], fit=fit, X_test=X_all[100:])
    with pytest.raises(ValueError, match=r"X_test and y_test hold out data for "
                                         r"strategy='refit'"):
        jaximp.loco_importance(linear, X_all, y_all, strategy="mean", X_test=X_all,
                               y_test=y_all)
    with pytest.raises(ValueError, match=r"y_test must have n = 100 rows like X_test; got 99"):
        jaximp.loco_importance(None, X_all[:100], y_all[:100], fit=fit, X_test=X_all[100:],
                               y_test=y_all[101:])


def test_loco_held_out_text_is_coded_with_the_training_labels():
    """A held-out text column lacking a training label is coded with X's labels, which the
    JAX fits learnt (it was coded on its own: 'b' read as 'a'); a label X lacks is refused."""
    import functools

    rng = np.random.default_rng(5)

    def data(n, labels):
        label = rng.choice(labels, n)
        frame = pd.DataFrame({"c": label, "u": rng.normal(size=n)})
        return frame, np.select([label == "a", label == "b"], [0.0, 2.0], 4.0) + frame["u"]

    X, y = data(200, ["a", "b", "c"])
    X_test, y_test = data(100, ["b", "c"])
    fit = functools.partial(jaximp.fit_mlp, hidden=(8,), steps=100)
    as_text = jaximp.loco_importance(None, X, y, fit=fit, X_test=X_test, y_test=y_test)
    levels = X_test.assign(c=pd.Categorical(X_test["c"], categories=["a", "b", "c"]))
    as_levels = jaximp.loco_importance(None, X, y, fit=fit, X_test=levels, y_test=y_test)
    np.testing.assert_array_equal(as_text.importances, as_levels.importances)
    with pytest.raises(ValueError, match=r"column 'c' of X_test must hold the labels of X"):
        jaximp.loco_importance(None, X, y, fit=fit, X_test=X_test.assign(c="z"),
                               y_test=y_test)


def test_y_whose_index_follows_another_order_than_xs_warns():
    """y taken before X was sorted holds X's row labels in another order: read by position
    (scikit-learn's reading), it pairs rows with other rows' targets, so every method that
    takes y warns; an aligned y, one without X's labels, or a NumPy y does not."""
    import warnings

    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    y = pd.Series(Y, index=frame.index)
    shuffled = frame.sort_values("a")
    calls = [lambda X_, y_: jaximp.permutation_importance(linear, X_, y_, n_repeats=1),
             lambda X_, y_: jaximp.loco_importance(linear, X_, y_, strategy="zero"),
             lambda X_, y_: jaximp.Explainer(linear, X_, y_),
             lambda X_, y_: jaximp.filter_importance(X_, y_)]
    for call in calls:
        with pytest.warns(UserWarning, match=r"y's index holds the same labels as X's in "
                                             r"another order.*y.loc\[X.index\]") as caught:
            call(shuffled, y)
        assert caught[0].filename == __file__  # the user's line
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            renumbered = shuffled.reset_index(drop=True)  # y.loc[shuffled.index] lines up
            mixed = pd.Series(Y, index=pd.Index([1, "a"] + list(range(2, 60)), dtype=object))
            for X_, y_ in [(shuffled, y.loc[shuffled.index]), (shuffled, Y[shuffled.index]),
                           (renumbered, y.loc[shuffled.index]), (frame, y), (frame, mixed)]:
                call(X_, y_)
    aligned = jaximp.permutation_importance(linear, shuffled, y.loc[shuffled.index])
    by_hand = jaximp.permutation_importance(linear, shuffled.to_numpy(),
                                            Y[shuffled.index.to_numpy()])
    np.testing.assert_array_equal(aligned.importances, by_hand.importances)


def test_sample_weight_whose_index_follows_another_order_than_xs_warns():
    """Weights are read by position as y is, and warned about as y is."""
    import warnings

    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    w = pd.Series(np.linspace(0.5, 2.0, len(frame)), index=frame.index)
    shuffled = frame.sort_values("a")
    y = Y[shuffled.index.to_numpy()]
    with pytest.warns(UserWarning, match=r"sample_weight's index holds the same labels as X's"
                                         r" in another order.*sample_weight.loc\[X.index\]"):
        jaximp.average_loss(linear, shuffled, y, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        aligned = jaximp.average_loss(linear, shuffled, y, sample_weight=w.loc[shuffled.index])
    by_hand = jaximp.average_loss(linear, shuffled.to_numpy(), y,
                                  sample_weight=w.to_numpy()[shuffled.index.to_numpy()])
    pd.testing.assert_frame_equal(aligned, by_hand)
    with pytest.warns(UserWarning, match=r"background_weight's index holds the same labels "
                                         r"as background's.*background_weight.loc\[background"):
        jaximp.shapley_values(linear, frame.iloc[:2], shuffled, background_weight=w)


def test_targets_and_weights_of_nullable_numeric_dtypes_are_numbers():
    """A y frame of nullable floats (NumPy reads it as objects) and nullable weights give
    the float64 result; a missing target is refused as NaN."""
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    two = np.column_stack([Y, -Y])
    model = lambda A: jnp.stack([linear(A), -linear(A)], axis=1)  # noqa: E731
    w = np.linspace(0.5, 2.0, len(frame))
    want = jaximp.permutation_importance(model, frame, two, sample_weight=w, n_repeats=2)
    got = jaximp.permutation_importance(
        model, frame, pd.DataFrame(two, columns=["u", "v"]).astype("Float64"),
        sample_weight=pd.Series(w, dtype="Float64"), n_repeats=2)
    np.testing.assert_array_equal(got.importances, want.importances)
    missing = pd.Series(Y, dtype="Float64")
    missing[3] = pd.NA
    with pytest.raises(ValueError, match="y contains NaN"):
        jaximp.average_loss(linear, frame, missing)


def test_column_names_that_clash_as_text_are_named():
    """Columns 1 and "1" differ in pandas but name the same feature."""
    frame = pd.DataFrame(X[:, :2], columns=[1, "1"])
    with pytest.raises(ValueError, match=r"unique as text.*got \['1', '1'\] from \[1, '1'\]"):
        jaximp.partial_dependence(linear, frame, 0)
    with pytest.raises(ValueError, match=r"unique as text.*got \['a', 'a'\]\. Rename"):
        jaximp.as_dataset(pd.DataFrame(X[:, :2], columns=["a", "a"]))
