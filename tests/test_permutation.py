"""Permutation importance: closed forms, scikit-learn, groups, losses, keys, validation."""

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from conftest import engine_permutations, written_out_loss
from sklearn.inspection import permutation_importance as sk_permutation_importance
from sklearn.linear_model import LinearRegression, LogisticRegression

import jaximp
from jaximp.methods._permutation import permutation_importance

N = 1000
COEF = np.array([3.0, -2.0, 1.0, 0.0])
SD = np.array([1.0, 0.5, 2.0, 1.0])


@pytest.fixture(scope="module")
def linear_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 4)) * SD
    y = X @ COEF + 1.0 + rng.normal(size=N)
    return X, y


@pytest.fixture(scope="module")
def ols(linear_data):
    X, y = linear_data
    A = np.c_[np.ones(N), X]
    b = np.linalg.lstsq(A, y, rcond=None)[0]
    w = jnp.asarray(b[1:], jnp.float32)

    def f(Z):
        return Z @ w + b[0]

    return f, b


@pytest.fixture(scope="module")
def classification_data():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 3))
    logits = X @ np.array([2.0, -1.0, 0.0])
    y = (rng.uniform(size=600) < 1 / (1 + np.exp(-logits))).astype(int)
    return X, y


def logistic(Z):
    p = jax.nn.sigmoid(Z @ jnp.array([2.0, -1.0, 0.0]))
    return jnp.stack([1 - p, p], axis=1)


def test_ols_matches_closed_form_delta_mse(linear_data, ols):
    X, y = linear_data
    f, b = ols
    result = permutation_importance(f, X, y, n_repeats=50, random_state=1)
    # E[delta MSE_j] = 2 b_j^2 Var(x_j) (exactly 2 b_j^2 n/(n-1) Var_n(x_j) for OLS residuals)
    expected = 2 * b[1:] ** 2 * X.var(axis=0) * N / (N - 1)
    got = result.importances_mean[:, 0]
    np.testing.assert_allclose(got[:3], expected[:3], rtol=0.10)
    assert abs(got[3]) < 0.01
    assert result.importances.shape == (4, 1, 50)
    assert result.feature_names == ("x0", "x1", "x2", "x3")
    assert result.info["loss"] == "mse" and result.info["n_repeats"] == 50
    mse = np.mean((y - np.asarray(f(jnp.asarray(X, jnp.float32)))) ** 2)
    np.testing.assert_allclose(result.info["baseline"], [mse], rtol=1e-5)


def test_ratio_is_perturbed_over_baseline(linear_data, ols):
    X, y = linear_data
    diff = permutation_importance(ols[0], X, y, n_repeats=3)
    ratio = permutation_importance(ols[0], X, y, n_repeats=3, kind="ratio")
    base = diff.info["baseline"][0]
    np.testing.assert_allclose(ratio.importances, (diff.importances + base) / base, rtol=1e-6)
    # hstats' normalize = TRUE: (perm - perf) / perf, per repeat, for built-in losses; a
    # scorer's ratio less 1 (score_orig / score_perm - 1)
    relative = permutation_importance(ols[0], X, y, n_repeats=3, kind="relative")
    np.testing.assert_allclose(relative.importances, diff.importances / base, rtol=1e-6)
    from sklearn.metrics import get_scorer
    model = LinearRegression().fit(X, y)
    scorer = get_scorer("neg_mean_squared_error")
    scored = {kind: permutation_importance(model, X, y, scoring=scorer, n_repeats=3, kind=kind)
              for kind in ("ratio", "relative")}
    np.testing.assert_allclose(scored["relative"].importances,
                               scored["ratio"].importances - 1, rtol=1e-12)


@pytest.mark.parametrize("loss", ["mse", "rmse", "mae", "r2"])
def test_constant_model_gives_exactly_zero(linear_data, loss):
    X, y = linear_data
    result = permutation_importance(lambda Z: jnp.full(Z.shape[0], 1.5), X, y, loss=loss)
    assert np.all(result.importances == 0.0)


@pytest.mark.parametrize("loss", ["log_loss", "accuracy", "auc"])
def test_constant_classifier_gives_exactly_zero(classification_data, loss):
    X, y = classification_data
    result = permutation_importance(
        lambda Z: jnp.tile(jnp.array([[0.3, 0.7]]), (Z.shape[0], 1)), X, y, loss=loss)
    assert np.all(result.importances == 0.0)


def within_standard_errors(ours, theirs, n_repeats, k=4.0):
    se = np.sqrt(ours.importances_std[:, 0] ** 2 / n_repeats
                 + theirs.importances_std ** 2 / n_repeats)
    gap = np.abs(ours.importances_mean[:, 0] - theirs.importances_mean)
    assert np.all(gap <= k * se + 1e-6), (gap, se)


def test_means_agree_with_sklearn_within_standard_errors(linear_data):
    X, y = linear_data
    model = LinearRegression().fit(X, y)
    R = 30
    theirs = sk_permutation_importance(model, X, y, scoring="neg_mean_squared_error",
                                       n_repeats=R, random_state=0)
    ours = permutation_importance(model, X, y, loss="mse", n_repeats=R)  # host model path
    within_standard_errors(ours, theirs, R)
    theirs_r2 = sk_permutation_importance(model, X, y, scoring="r2", n_repeats=R,
                                          random_state=0)
    ours_r2 = permutation_importance(model, X, y, loss="r2", n_repeats=R)
    within_standard_errors(ours_r2, theirs_r2, R)


@pytest.mark.parametrize("loss,scoring", [("log_loss", "neg_log_loss"),
                                          ("accuracy", "accuracy"), ("auc", "roc_auc")])
def test_classification_agrees_with_sklearn(classification_data, loss, scoring):
    X, y = classification_data
    model = LogisticRegression().fit(X, y)
    R = 20
    theirs = sk_permutation_importance(model, X, y, scoring=scoring, n_repeats=R,
                                       random_state=0)
    ours = permutation_importance(model, X, y, loss=loss, n_repeats=R)
    assert ours.output_names == ("y",)
    within_standard_errors(ours, theirs, R)


def test_sklearn_scoring_names_are_the_same_losses(linear_data, classification_data):
    X, y = linear_data
    f = LinearRegression().fit(X, y)
    for scoring, loss in [("neg_mean_squared_error", "mse"), ("neg_root_mean_squared_error",
                                                              "rmse"),
                          ("neg_mean_absolute_error", "mae")]:
        theirs = permutation_importance(f, X, y, loss=scoring, n_repeats=3)
        ours = permutation_importance(f, X, y, loss=loss, n_repeats=3)
        assert theirs.info["loss"] == loss
        np.testing.assert_array_equal(theirs.importances, ours.importances)
    Xc, yc = classification_data
    model = LogisticRegression().fit(Xc, yc)
    several = permutation_importance(model, Xc, yc, loss=["neg_log_loss", "roc_auc"],
                                     n_repeats=3)
    assert set(several) == {"neg_log_loss", "roc_auc"}
    for scoring, loss in [("neg_log_loss", "log_loss"), ("roc_auc", "auc")]:
        np.testing.assert_array_equal(
            several[scoring].importances,
            permutation_importance(model, Xc, yc, loss=loss, n_repeats=3).importances)
    logits = permutation_importance(lambda Z: Z @ jnp.array([2.0, -1.0, 0.0]), Xc, yc,
                                    loss="roc_auc", response="logits", n_repeats=3)
    assert logits.info["loss"] == "auc"


def test_scorer_callables_are_scored_on_the_same_permutations(linear_data):
    """scikit-learn's scorer callables (make_scorer objects, a callable returning a dict, a
    dict of scorers) give the importances of the same-named scoring, on a DataFrame through
    a pipeline too; and equal scikit-learn's scorer called by hand on the permutations."""
    from sklearn.metrics import get_scorer, make_scorer, mean_squared_error, r2_score

    X, y = linear_data
    model = LinearRegression().fit(X, y)
    names = ["r2", "neg_mean_squared_error"]
    single = {name: permutation_importance(model, X, y, scoring=name, n_repeats=3,
                                           random_state=1) for name in names}

    def both(estimator, X, y):
        prediction = estimator.predict(X)
        return {"r2": r2_score(y, prediction),
                "neg_mean_squared_error": -mean_squared_error(y, prediction)}

    for scoring in ({name: get_scorer(name) for name in names}, both,
                    {"r2": "r2", "neg_mean_squared_error": get_scorer("neg_mean_squared_error")}):
        several = permutation_importance(model, X, y, scoring=scoring, n_repeats=3,
                                         random_state=1)
        assert set(several) == set(names)
        for name in names:
            np.testing.assert_allclose(several[name].importances, single[name].importances,
                                       rtol=1e-9, atol=1e-12)
    # by hand: the engine's permutations of each feature, scored by scikit-learn
    from jaximp.engine import key_bits
    from jaximp.methods._permutation import _plan

    p, R = X.shape[1], 3
    plan = _plan(p, tuple((j,) for j in range(p)), tuple(range(p)), R,
                 tuple(key_bits(jax.random.key(1))))
    perms = engine_permutations(plan, len(X))
    scorer = get_scorer("r2")
    base = scorer(model, X, y)
    expected = np.empty((p, 1, R))
    for j in range(p):
        for r in range(R):
            Z = X.copy()
            Z[:, j] = X[perms[1 + j * R + r], j]
            expected[j, 0, r] = base - scorer(model, Z, y)
    got = permutation_importance(model, X, y, scoring=scorer, n_repeats=R, random_state=1)
    np.testing.assert_allclose(got.importances, expected, rtol=1e-12, atol=1e-14)
    # a small budget draws the permutations a few items at a time: the same ones
    assert 1 <= (1 << 16) // (32 * len(X)) < p * R + 1
    small = permutation_importance(model, X, y, scoring=scorer, n_repeats=R, random_state=1,
                                   memory_budget=1 << 16)
    np.testing.assert_array_equal(small.importances, got.importances)
    assert got.output_names == ("score",) and got.info["baseline"][0] == pytest.approx(base)
    # a pipeline on a DataFrame with a category column gets DataFrames
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)]).assign(
        d=pd.Categorical(np.where(X[:, 0] > 0, "u", "v")))
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["d"]),
                                                 remainder="passthrough"),
                         LinearRegression()).fit(frame, y)
    mse = make_scorer(mean_squared_error, greater_is_better=False)
    np.testing.assert_allclose(
        permutation_importance(pipe, frame, y, scoring=mse, n_repeats=2).importances,
        permutation_importance(pipe, frame, y, scoring="neg_mean_squared_error",
                               n_repeats=2).importances, rtol=1e-9)
    # a bound call on an Explainer, on a row subsample, equals the function
    explainer = jaximp.Explainer(model, X, y)
    np.testing.assert_allclose(
        explainer.permutation_importance(scoring=get_scorer("r2"), max_samples=50).importances,
        permutation_importance(model, X, y, scoring="r2", max_samples=50).importances,
        rtol=1e-9, atol=1e-12)


def test_a_metric_with_a_sample_weight_keyword_gets_the_weights_by_it(linear_data):
    """scikit-learn's metrics take weights as the keyword sample_weight: a callable loss with
    that keyword gets them by it (it was refused as taking only (y, prediction))."""
    from sklearn.metrics import mean_absolute_error

    X, y = linear_data
    model = LinearRegression().fit(X, y)
    w = np.random.default_rng(3).uniform(0.2, 2.0, size=len(y))
    ours = permutation_importance(model, X, y, loss=mean_absolute_error, sample_weight=w,
                                  n_repeats=3)
    named = permutation_importance(model, X, y, loss="mae", sample_weight=w, n_repeats=3)
    np.testing.assert_allclose(ours.importances, named.importances, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="third parameter, weights, or a sample_weight"):
        permutation_importance(model, X, y, loss=lambda t, p: np.mean(np.abs(t - p)),
                               sample_weight=w)


def test_greater_is_better_speaks_for_the_callables_among_several_losses(classification_data):
    """A dict of a named score and a callable score: greater_is_better is the callable's
    (the named loss knows its direction); among named losses only it is refused."""
    X, y = classification_data
    model = LogisticRegression().fit(X, y)

    def accuracy(t, p):
        return np.mean(np.argmax(p, axis=1) == t)

    both = permutation_importance(model, X, y, loss={"named": "accuracy", "own": accuracy},
                                  greater_is_better=True, n_repeats=3)
    np.testing.assert_allclose(both["own"].importances, both["named"].importances, atol=1e-6)
    with pytest.raises(ValueError, match="named losses \\['accuracy', 'log_loss'\\]"):
        permutation_importance(model, X, y, loss=["accuracy", "log_loss"],
                               greater_is_better=True)


def test_scorer_callables_take_sample_weight_only_when_given_and_refuse_other_options():
    """As scikit-learn: a scorer without sample_weight works unweighted and raises
    TypeError when weights are given; options a scorer decides itself are named."""
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    y = np.array([1.0, 2.0])
    model = LinearRegression().fit(X, y)

    def constant(estimator, X, y):
        return 1.0

    result = permutation_importance(model, X, y, scoring=constant, n_repeats=1)
    np.testing.assert_array_equal(result.importances, np.zeros((2, 1, 1)))
    with pytest.raises(TypeError, match="sample_weight"):
        permutation_importance(model, X, y, scoring=constant, sample_weight=[1.0, 1.0])
    for option in ({"output": 0}, {"n_bootstrap": 3}, {"loss": "mse"},
                   {"response": "logits"}):
        with pytest.raises(ValueError, match=next(iter(option))):
            permutation_importance(model, X, y, scoring=constant, **option)
    with pytest.raises(TypeError, match="estimator"):
        jaximp.Explainer(lambda Z: Z[:, 0], X, y).permutation_importance(scoring=constant)
    with pytest.raises(TypeError, match="estimator's predict methods; got function"):
        permutation_importance(lambda Z: Z[:, 0], X, y, scoring=constant)
    with pytest.raises(ValueError, match="a scorer must return a number, or a dict"):
        permutation_importance(model, X, y, scoring=lambda e, X, y: np.ones(2))


def test_probabilities_one_column_two_columns_and_labels(classification_data):
    X, y = classification_data
    two = permutation_importance(logistic, X, y, loss="accuracy", n_repeats=4)
    one = permutation_importance(lambda Z: logistic(Z)[:, 1], X, y, loss="accuracy",
                                 n_repeats=4)
    labels = permutation_importance(lambda Z: jnp.argmax(logistic(Z), axis=1), X, y,
                                    loss="accuracy", n_repeats=4)
    np.testing.assert_array_equal(one.importances, two.importances)
    np.testing.assert_array_equal(labels.importances, two.importances)
    for loss in ("log_loss", "auc"):
        a = permutation_importance(logistic, X, y, loss=loss, n_repeats=4)
        b = permutation_importance(lambda Z: logistic(Z)[:, 1], X, y, loss=loss, n_repeats=4)
        np.testing.assert_allclose(a.importances, b.importances, rtol=1e-5, atol=1e-6)


def test_string_labels_and_multiclass_labels():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 2))
    codes = np.digitize(X[:, 0], [-0.5, 0.5])  # 3 classes driven by x0
    names = np.array(["lo", "mid", "hi"])[codes]

    def proba(Z):
        centers = jnp.array([-1.0, 0.0, 1.0])
        return jax.nn.softmax(-4 * (Z[:, :1] - centers) ** 2, axis=1)

    from jaximp import as_predictor

    named = as_predictor(proba, n_features=2, output_names=["lo", "mid", "hi"])
    by_name = permutation_importance(named, X, names, loss="log_loss", n_repeats=3)
    by_code = permutation_importance(proba, X, codes, loss="log_loss", n_repeats=3)
    np.testing.assert_allclose(by_name.importances, by_code.importances, rtol=1e-6)
    assert by_code.importances_mean[0, 0] > 0.1 and by_code.importances_mean[1, 0] == 0
    labels = permutation_importance(lambda Z: jnp.argmax(proba(Z), axis=1), X, codes,
                                    loss="accuracy", n_repeats=3)
    acc = permutation_importance(proba, X, codes, loss="accuracy", n_repeats=3)
    np.testing.assert_array_equal(labels.importances, acc.importances)


def test_grouped_onehot_block_gives_one_importance_per_group():
    rng = np.random.default_rng(4)
    n = 800
    level = rng.integers(0, 3, size=n)
    frame = pd.DataFrame({"x": rng.normal(size=n)})
    for k, name in enumerate(["red", "green", "blue"]):
        frame[name] = (level == k).astype(float)
    effects = jnp.array([0.0, 2.0, -1.0])

    def f(Z):
        block = Z[:, 1:]
        valid = jnp.all(jnp.sum(block, axis=1) == 1.0)  # permuted rows stay one-hot
        return jnp.where(valid, Z[:, 0] + block @ effects, jnp.nan)

    y = np.asarray(f(jnp.asarray(frame.to_numpy(), jnp.float32)))
    result = permutation_importance(f, frame, y, n_repeats=30,
                                    groups={"color": ["red", "green", "blue"]})
    assert result.feature_names == ("x", "color")
    assert result.importances.shape == (2, 1, 30)
    # y = f exactly: delta MSE = mean (e(level_pi(i)) - e(level_i))^2 -> 2 Var(e(level))
    e = np.asarray(effects)[level]
    np.testing.assert_allclose(result.importances_mean[1, 0], 2 * e.var(), rtol=0.1)


def test_results_do_not_depend_on_chunking_or_feature_subset(linear_data, ols):
    X, y = linear_data
    full = permutation_importance(ols[0], X, y, n_repeats=4, random_state=7)
    chunked = permutation_importance(ols[0], X, y, n_repeats=4, random_state=7,
                                     memory_budget=1 << 16)
    np.testing.assert_allclose(chunked.importances, full.importances, rtol=1e-5, atol=1e-6)
    one = permutation_importance(ols[0], X, y, n_repeats=4, random_state=7, features=["x2"])
    np.testing.assert_allclose(one.importances[0], full.importances[2], rtol=1e-5, atol=1e-6)
    keyed = permutation_importance(ols[0], X, y, n_repeats=4, random_state=jax.random.key(7))
    np.testing.assert_array_equal(keyed.importances, full.importances)
    other = permutation_importance(ols[0], X, y, n_repeats=4, random_state=8)
    assert not np.allclose(other.importances, full.importances)


def test_numpy_equals_dataframe(linear_data, ols):
    X, y = linear_data
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    a = permutation_importance(ols[0], X, y, n_repeats=3)
    b = permutation_importance(ols[0], frame, pd.Series(y), n_repeats=3)
    np.testing.assert_array_equal(a.importances, b.importances)
    assert b.feature_names == ("a", "b", "c", "d")


def test_every_builtin_loss_relation(linear_data, ols):
    X, y = linear_data
    mse = permutation_importance(ols[0], X, y, loss="mse", n_repeats=3)
    r2 = permutation_importance(ols[0], X, y, loss="r2", n_repeats=3)
    rmse = permutation_importance(ols[0], X, y, loss="rmse", n_repeats=3)
    np.testing.assert_allclose(r2.importances, mse.importances / y.var(), rtol=1e-4,
                               atol=1e-7)
    base = mse.info["baseline"][0]
    np.testing.assert_allclose(rmse.importances, np.sqrt(mse.importances + base) - np.sqrt(base),
                               rtol=1e-4, atol=1e-6)
    r2_ratio = permutation_importance(ols[0], X, y, loss="r2", n_repeats=3, kind="ratio")
    mse_ratio = permutation_importance(ols[0], X, y, loss="mse", n_repeats=3, kind="ratio")
    np.testing.assert_allclose(r2_ratio.importances, mse_ratio.importances, rtol=1e-4)


def test_callable_losses_traceable_numpy_and_scores(linear_data, ols):
    from sklearn.metrics import mean_squared_error, r2_score

    X, y = linear_data
    ref = permutation_importance(ols[0], X, y, n_repeats=3)
    traced = permutation_importance(ols[0], X, y, n_repeats=3,
                                    loss=lambda t, p: jnp.mean((t - p) ** 2))
    on_numpy = permutation_importance(ols[0], X, y, n_repeats=3, loss=mean_squared_error)
    np.testing.assert_allclose(traced.importances, ref.importances, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(on_numpy.importances, ref.importances, rtol=1e-4, atol=1e-6)
    assert on_numpy.info["loss"] == "mean_squared_error"
    score = permutation_importance(ols[0], X, y, n_repeats=3, loss=r2_score,
                                   greater_is_better=True)
    builtin = permutation_importance(ols[0], X, y, n_repeats=3, loss="r2")
    np.testing.assert_allclose(score.importances, builtin.importances, rtol=1e-4, atol=1e-6)
    assert np.all(score.importances_mean[:3] > 0)


def test_sample_weight_enters_the_loss(linear_data, ols):
    X, y = linear_data
    w = np.random.default_rng(5).uniform(0, 2, size=N)
    result = permutation_importance(ols[0], X, y, n_repeats=2, sample_weight=w)
    pred = np.asarray(ols[0](jnp.asarray(X, jnp.float32)))
    np.testing.assert_allclose(result.info["baseline"], [np.average((y - pred) ** 2, weights=w)],
                               rtol=1e-5)
    weighted = permutation_importance(ols[0], X, y, n_repeats=2, sample_weight=w,
                                      loss=lambda t, p, weights: jnp.sum(weights * (t - p) ** 2)
                                      / jnp.sum(weights))
    np.testing.assert_allclose(weighted.importances, result.importances, rtol=1e-5, atol=1e-6)


def test_raw_kind_is_the_permuted_loss_as_dalex_reports_it(linear_data, ols,
                                                            classification_data):
    """kind="raw": the permuted loss itself (DALEX's type="variable_importance"), on the same
    permutations as the difference; a score with best value 1 as its loss, 1 - AUC."""
    X, y = linear_data
    options = dict(n_repeats=3, random_state=4)
    difference = permutation_importance(ols[0], X, y, **options)
    raw = permutation_importance(ols[0], X, y, kind="raw", **options)
    np.testing.assert_allclose(raw.importances,
                               difference.importances + difference.info.baseline[0],
                               rtol=1e-12)
    Xc, yc = classification_data
    auc = permutation_importance(logistic, Xc, yc, loss="auc", **options)
    raw = permutation_importance(logistic, Xc, yc, loss="auc", kind="raw", **options)
    np.testing.assert_allclose(raw.importances,
                               1 - (auc.info.baseline[0] - auc.importances), rtol=1e-12)
    np.testing.assert_allclose(raw.info.baseline, 1 - auc.info.baseline, rtol=1e-12)


def test_max_samples_subsamples_rows_once(linear_data, ols):
    X, y = linear_data
    for value, m in ((200, 200), (0.25, 250), (0.2507, 250)):  # floored, as scikit-learn
        result = permutation_importance(ols[0], X, y, n_repeats=2, max_samples=value)
        rows = result.info["sample_rows"]
        assert result.info["n_samples"] == m and rows.shape == (m,)
        assert np.all(np.diff(rows) > 0)
        assert not rows.flags.writeable  # shared by the repeats of a kept set-up
        pred = np.asarray(ols[0](jnp.asarray(X[rows], jnp.float32)))
        np.testing.assert_allclose(result.info["baseline"], [np.mean((y[rows] - pred) ** 2)],
                                   rtol=1e-5)
    assert permutation_importance(ols[0], X, y, n_repeats=1, max_samples=1.0).info[
        "sample_rows"] is None


def test_multi_output_regression(linear_data, ols):
    X, y = linear_data
    f = ols[0]
    both = permutation_importance(lambda Z: jnp.stack([f(Z), 2 * f(Z)], axis=1), X,
                                  np.c_[y, 2 * y], n_repeats=3)
    assert both.output_names == ("y0", "y1")
    single = permutation_importance(f, X, y, n_repeats=3)
    # float32 predictions, summed in other blocks: differences of losses of about 10 agree
    # to float32 rounding of the losses
    np.testing.assert_allclose(both.importances[:, 0], single.importances[:, 0], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(both.importances[:, 1], 4 * single.importances[:, 0], rtol=1e-4,
                               atol=1e-5)
    second = permutation_importance(lambda Z: jnp.stack([f(Z), 2 * f(Z)], axis=1), X, 2 * y,
                                    n_repeats=3, output="y1")
    assert second.output_names == ("y1",)


def test_quantile_bands_and_frame(linear_data, ols):
    X, y = linear_data
    result = permutation_importance(ols[0], X, y, n_repeats=10)
    bands = result.quantiles((0.05, 0.5, 0.95))
    assert bands.shape == (3, 4, 1)
    assert np.all(bands[0] <= bands[2])
    frame = result.to_frame()
    assert list(frame.columns) == ["feature", "output", "importance", "std", "q025", "q975"]
    assert frame["feature"].tolist()[:3] == ["x0", "x2", "x1"]


def test_validation_messages(linear_data, ols, classification_data):
    X, y = linear_data
    f = ols[0]
    cases = [
        (dict(kind="diff"), "kind must be one of ('difference', 'ratio', 'relative', 'raw'); "
                            "got 'diff'."),
        (dict(n_repeats=0), "n_repeats must be an int >= 1; got 0."),
        (dict(loss="nll"), "loss must be one of ('mse', 'rmse', 'mae', 'medae', 'mape', 'msle', "
                           "'rmsle', 'r2', 'poisson', 'gamma', 'cross_entropy', 'rse', "
                           "'rrse', 'rae', 'smape', 'percent_bias', 'log_loss', 'brier', "
                           "'accuracy', 'auc') (or scikit-learn's scoring names "
                           "['neg_brier_score', 'neg_log_loss', "
                           "'neg_mean_absolute_error', 'neg_mean_absolute_percentage_error', "
                           "'neg_mean_gamma_deviance', 'neg_mean_poisson_deviance', "
                           "'neg_mean_squared_error', 'neg_mean_squared_log_error', "
                           "'neg_median_absolute_error', 'neg_root_mean_squared_error', "
                           "'neg_root_mean_squared_log_error', 'roc_auc', 'roc_auc_ovr'], R's "
                           "['absolute_error', 'ce', 'classification_error', 'logLoss', "
                           "'logloss', 'mdae', 'mlogloss', "
                           "'mn_log_loss', 'rsq_trad', 'squared_error'] or dalex's ['1-auc', "
                           "'mad']) or a callable (y, "
                           "prediction[, weights]); got 'nll'."),
        (dict(max_samples=0), "max_samples must be an int in [1, 1000] or a float in (0, 1]; "
                              "got 0."),
        (dict(max_samples=0.0005), "max_samples=0.0005 of 1000 rows is floor(0.0005 * 1000) = 0 "
                                   "rows; use a fraction of at least 0.001 or an int count."),
        (dict(max_samples=1.5), "max_samples must be an int in [1, 1000] or a float in (0, 1]; "
                                "got 1.5."),
        (dict(loss="r2", greater_is_better=True),
         "greater_is_better applies to a callable loss only; got it with loss='r2'."),
        (dict(loss=lambda t, p: 0.0, sample_weight=np.ones(N)),
         "sample_weight was given but the loss callable takes only (y, prediction); give it a "
         "third parameter, weights, or a sample_weight keyword."),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError) as err:
            permutation_importance(f, X, y, **kwargs)
        assert str(err.value) == message
    with pytest.raises(TypeError, match="random_state must be an int seed, a JAX PRNG key"):
        permutation_importance(f, X, y, random_state="seed")
    with pytest.raises(ValueError, match=r"scoring names \['f1'\].*for a scikit-learn "
                       r"estimator, the names scikit-learn's get_scorer knows"):
        permutation_importance(f, X, y, scoring="f1")
    # losses undefined on the rows scored name the loss, not the model's predictions
    with pytest.raises(ValueError, match=r"loss='r2' is undefined where y does not vary.*1 rows"):
        permutation_importance(f, X, y, loss="r2", max_samples=1)
    for constant in (1.0, 0.1, 0.3):  # the sum of squares of 0.1s rounds above 0
        with pytest.raises(ValueError, match=r"loss='r2' is undefined.*1000 rows"):
            permutation_importance(f, X, np.full(N, constant), loss="r2")
    with pytest.raises(ValueError, match=r"y must have n = 1000 rows like X; got 999\."):
        permutation_importance(f, X, y[:-1])
    with pytest.raises(ValueError, match=r"y has 2 column\(s\) but 1 model output\(s\) are "
                                         r"scored; pass y of shape \(n, 1\)"):
        permutation_importance(f, X, np.c_[y, y])
    Xc, yc = classification_data
    with pytest.raises(ValueError, match=r"loss='auc' needs at least two classes.*only \[1\]"):
        permutation_importance(logistic, Xc, np.ones(len(yc), int), loss="auc")
    three = lambda Z: jax.nn.softmax(jnp.c_[Z[:, 0], Z[:, 1], -Z[:, 0]])  # classes 0, 1, 2
    y_two = (Xc[:, 0] > 0).astype(int)  # classes 0 and 1 only: class 2's AUC is undefined
    y_three = np.digitize(Xc[:, 0], [-0.5, 0.5])
    for target, weights in ((y_two, None), (y_three, np.where(y_three == 2, 0.0, 1.0))):
        with pytest.raises(ValueError, match=r"loss='auc' averages one-vs-rest AUCs over the "
                                             r"model's classes \['y0', 'y1', 'y2'\]; y lacks "
                                             r"\['y2'\]"):
            permutation_importance(three, Xc, target, loss="auc", sample_weight=weights)
    # the classes y holds, chosen with output=, are scored
    assert permutation_importance(three, Xc, y_two, loss="auc", output=[0, 1],
                                  n_repeats=1).importances_mean.shape == (Xc.shape[1], 1)
    # a loss undefined on finite predictions is named with them
    with pytest.raises(FloatingPointError, match=r"predictions, or the loss computed on them, "
                                                 r"are NaN or infinite"):
        permutation_importance(f, X, y, loss=lambda t, p: jnp.mean(jnp.log(p - 1e6)))
    with pytest.raises(ValueError, match=r"y holds the classes \[0, 1, 2\], which do not "
                                         r"match the model's 2 output columns"):
        permutation_importance(logistic, Xc, np.r_[yc[:-1], 2], loss="log_loss")
    with pytest.raises(ValueError, match=r"but 2 model output\(s\) are scored; .* For a "
                                         r"classifier's class probabilities and y of class "
                                         r"labels, use loss='log_loss', 'accuracy' or 'auc'\. "
                                         r"hstats' loss names"):
        permutation_importance(logistic, Xc, yc + 0.5)  # not class codes: the default is mse
    # class codes 0..k-1 against k outputs: the default is accuracy, as for a classifier
    assert permutation_importance(logistic, Xc, yc).info["loss"] == "accuracy"
    with pytest.raises(ValueError, match="kind='ratio' divides by the baseline mse loss, which "
                                         "is 0"):
        # a model whose outputs are exact in any batch shape (a GPU may round a linear model's
        # outputs differently in another batch), so the baseline is exactly 0
        permutation_importance(lambda A: jnp.round(A[:, 0]), X, np.round(X[:, 0]),
                               kind="ratio")


# ------------------------------------------------------------------------------------------
# Classifier outputs: probabilities checked, logits through response="logits".
# ------------------------------------------------------------------------------------------


def _logit_problem(k):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 3))
    W = np.array([[2.0, -1.0, 0.5], [0.0, 1.5, -2.0], [1.0, 0.3, 0.0]])[:, :k]
    if k == 1:
        W = np.array([[2.0], [-1.0], [0.2]])
    logits = X @ W
    if k == 1:
        y = (rng.uniform(size=300) < 1 / (1 + np.exp(-logits[:, 0]))).astype(int)
    else:
        y = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)
    return X, y, (lambda A: A @ jnp.asarray(W, jnp.float32)), W


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("loss", ["log_loss", "auc", "accuracy"])
def test_logits_are_refused_with_the_fix_and_accepted_as_response_logits(k, loss):
    X, y, logit_model, W = _logit_problem(k)
    if (loss == "accuracy" and k > 1) or (loss == "auc" and k == 1):
        # the arg max of logits is that of their softmax; a binary AUC ranks the logits as
        # it ranks their sigmoid (scikit-learn's roc_auc scores a decision function)
        direct = permutation_importance(logit_model, X, y, loss=loss, n_repeats=3)
        same = permutation_importance(logit_model, X, y, loss=loss, n_repeats=3,
                                      response="logits")
        np.testing.assert_allclose(direct.importances, same.importances, atol=1e-6)
    else:
        with pytest.raises(ValueError, match=r"needs class probabilities.*response='logits'"):
            permutation_importance(logit_model, X, y, loss=loss, n_repeats=2)

    def proba_model(A):
        z = A @ jnp.asarray(W, jnp.float32)
        return jax.nn.sigmoid(z) if k == 1 else jax.nn.softmax(z, axis=1)

    ours = permutation_importance(logit_model, X, y, loss=loss, n_repeats=3,
                                  response="logits")
    want = permutation_importance(proba_model, X, y, loss=loss, n_repeats=3)
    np.testing.assert_allclose(ours.importances, want.importances, rtol=1e-4, atol=1e-6)
    if loss == "log_loss":  # the baseline against a float64 NumPy log loss
        z = X @ W
        softmax = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        proba = 1 / (1 + np.exp(-z[:, 0])) if k == 1 else softmax
        picked = np.where(y == 1, proba, 1 - proba) if k == 1 else proba[np.arange(300), y]
        assert ours.info["baseline"][0] == pytest.approx(-np.mean(np.log(picked)), rel=1e-5)


def test_probability_check_catches_rows_that_do_not_sum_to_one():
    X, y, _, W = _logit_problem(3)
    unnormalized = lambda A: jax.nn.sigmoid(A @ jnp.asarray(W, jnp.float32))  # noqa: E731
    with pytest.raises(ValueError, match=r"3 output columns do not sum to 1 on X"):
        permutation_importance(unnormalized, X, y, loss="log_loss")
    with pytest.raises(ValueError, match=r"response='logits' turns a classifier's logits"):
        permutation_importance(unnormalized, X, y, loss="mse", response="logits")
    with pytest.raises(ValueError, match=r"response must be one of \('probability', 'logits'\)"):
        permutation_importance(unnormalized, X, y, loss="log_loss", response="softmax")


def test_loco_accepts_logits_the_same_way():
    from jaximp import loco_importance

    X, y, logit_model, W = _logit_problem(3)
    with pytest.raises(ValueError, match=r"response='logits'"):
        loco_importance(logit_model, X, y, loss="log_loss", strategy="mean")
    ours = loco_importance(logit_model, X, y, loss="log_loss", strategy="mean",
                           response="logits")
    want = loco_importance(lambda A: jax.nn.softmax(A @ jnp.asarray(W, jnp.float32), axis=1),
                           X, y, loss="log_loss", strategy="mean")
    np.testing.assert_allclose(ours.importances_mean, want.importances_mean, rtol=1e-4)


def test_several_losses_share_the_permutations_and_match_single_calls():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.normal(size=200)
    model = lambda A: A @ jnp.asarray([1.0, -2.0, 0.4], jnp.float32)  # noqa: E731

    def median_abs(y, p):
        return jnp.median(jnp.abs(y - p))

    several = permutation_importance(model, X, y, loss=["mse", "r2", median_abs], n_repeats=3)
    assert list(several) == ["mse", "r2", "median_abs"]
    for name, loss in (("mse", "mse"), ("r2", "r2"), ("median_abs", median_abs)):
        alone = permutation_importance(model, X, y, loss=loss, n_repeats=3)
        np.testing.assert_allclose(several[name].importances, alone.importances, rtol=1e-5,
                                   atol=1e-7)
    named = permutation_importance(model, X, y, loss={"error": "mae", "fit": "r2"}, n_repeats=3)
    assert list(named) == ["error", "fit"] and named["fit"].info["loss"] == "r2"
    with pytest.raises(ValueError, match="several losses need distinct string names"):
        permutation_importance(model, X, y, loss=["mse", "mse"])
    with pytest.raises(ValueError, match="at least one loss"):
        permutation_importance(model, X, y, loss=[])


def _engine_permutations(p, n_repeats, n, seed):
    """The permutations (p, r, n) permutation_importance(random_state=seed) applies: the
    engine's keyed permutations with stream labels (feature, repeat)."""
    from jaximp.data._checks import as_key
    from jaximp.engine._plans import at_permuted_rows

    labels = [(j, r) for j in range(p) for r in range(n_repeats)]
    plan = at_permuted_rows(np.eye(p, dtype=bool), np.repeat(np.arange(p), n_repeats),
                            as_key(seed), labels)
    return engine_permutations(plan, n).reshape(p, n_repeats, n)


def test_missing_values_reach_a_host_model_that_handles_them():
    """NaN in X goes to a model that handles it, as in scikit-learn: the importances equal a
    float64 NumPy loop over the same permutations, NaN moving with its row."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3))
    y = 2 * X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=300)
    X[rng.uniform(size=X.shape) < 0.15] = np.nan
    model = HistGradientBoostingRegressor(max_iter=40, random_state=0).fit(X, y)
    result = permutation_importance(model, X, y, n_repeats=3, random_state=4)
    perms = _engine_permutations(3, 3, 300, 4)
    base = np.mean((y - model.predict(X)) ** 2)
    for j in range(3):
        for r in range(3):
            Xp = X.copy()
            Xp[:, j] = X[perms[j, r], j]
            expected = np.mean((y - model.predict(Xp)) ** 2) - base
            np.testing.assert_allclose(result.importances[j, 0, r], expected, rtol=1e-10,
                                       atol=1e-12)
    assert result.importances_mean[0, 0] > result.importances_mean[1, 0] > 0
    with pytest.raises(ValueError, match="infinite values .* impute or drop"):
        permutation_importance(model, np.where(np.isnan(X), np.inf, X), y)
    with pytest.raises(ValueError, match=r"NaN values .* JAX model .* cannot take missing"):
        permutation_importance(lambda A: A[:, 0], X, y)


def test_classifiers_default_to_accuracy_and_mixed_frames_with_missing_values_work():
    """scikit-learn's default score for a classifier is accuracy: the default loss here too.
    A Pipeline imputing a numeric column and encoding a text column is explained directly."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    X = np.array([[1.0, 2.0, 3.0, np.nan], [2, 1, 2, 1]]).T
    y = np.array([0, 1, 0, 1])
    clf = make_pipeline(SimpleImputer(), LogisticRegression()).fit(X, y)
    default = permutation_importance(clf, X, y, n_repeats=4, random_state=0)
    accuracy = permutation_importance(clf, X, y, n_repeats=4, random_state=0, loss="accuracy")
    assert default.info["loss"] == "accuracy"
    np.testing.assert_array_equal(default.importances, accuracy.importances)
    assert default.importances_mean[1, 0] > default.importances_mean[0, 0]

    # a classifier without predict_proba: its predicted labels (numbers, here not 0..k-1)
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(3)
    Z = rng.normal(size=(150, 3))
    score = 2 * Z[:, 0] + Z[:, 1] + 0.3 * rng.normal(size=150)
    labels = np.array([-1, 1, 5])[np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))]
    svc = LinearSVC().fit(Z, labels)
    default = permutation_importance(svc, Z, labels, n_repeats=4, random_state=0)
    assert default.info["loss"] == "accuracy"
    np.testing.assert_array_equal(
        default.importances,
        permutation_importance(svc, Z, labels, n_repeats=4, random_state=0,
                               loss="accuracy").importances)
    rows = Z[rng.permutation(150)]  # accuracy drop of one permutation of x0, by hand
    moved = np.column_stack([rows[:, 0], Z[:, 1:]])
    by_hand = np.mean(svc.predict(Z) == labels) - np.mean(svc.predict(moved) == labels)
    assert 0.2 < by_hand and abs(default.importances_mean[0, 0] - by_hand) < 0.2

    frame = pd.DataFrame({"col1": [1.0, 2.0, 3.0, np.nan], "col2": ["a", "b", "a", "b"]})
    encode = ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()),
                                 ["col1"]), ("cat", OneHotEncoder(), ["col2"])])
    clf = make_pipeline(encode, LogisticRegression()).fit(frame, y)
    result = permutation_importance(clf, frame, y, n_repeats=5, random_state=0)
    assert result.importances.shape == (2, 1, 5)
    assert result.importances_mean[1, 0] > result.importances_mean[0, 0]


def test_numpy_random_states_and_none_seed_a_key_as_in_scikit_learn(linear_data, ols):
    """A RandomState or Generator gives a seed drawn from it: equal states give equal results,
    and the state moves on, so the next call differs (scikit-learn's behaviour); None draws
    from NumPy's global state."""
    X, y = linear_data
    f, _ = ols
    first = permutation_importance(f, X, y, n_repeats=3, random_state=np.random.RandomState(7))
    again = permutation_importance(f, X, y, n_repeats=3, random_state=np.random.RandomState(7))
    np.testing.assert_array_equal(first.importances, again.importances)
    seed = np.random.RandomState(7).randint(np.iinfo(np.int32).max + 1)
    by_seed = permutation_importance(f, X, y, n_repeats=3, random_state=int(seed))
    np.testing.assert_array_equal(first.importances, by_seed.importances)
    state = np.random.RandomState(7)
    one = permutation_importance(f, X, y, n_repeats=3, random_state=state)
    two = permutation_importance(f, X, y, n_repeats=3, random_state=state)
    assert not np.allclose(one.importances, two.importances)
    generator = permutation_importance(f, X, y, n_repeats=3,
                                       random_state=np.random.default_rng(7))
    assert generator.importances.shape == (4, 1, 3)
    np.random.seed(11)
    a = permutation_importance(f, X, y, n_repeats=3, random_state=None)
    np.random.seed(11)
    b = permutation_importance(f, X, y, n_repeats=3, random_state=None)
    np.testing.assert_array_equal(a.importances, b.importances)


def test_scikit_learn_signature_scoring_and_n_jobs(linear_data, ols):
    """scoring (scikit-learn's name for loss) gives the same importances as loss; n_jobs is
    accepted and changes nothing; a list holding a callable (scikit-learn's lists hold names)
    and both names at once are refused."""
    X, y = linear_data
    f, _ = ols
    by_loss = permutation_importance(f, X, y, loss="mse", n_repeats=3)
    by_scoring = permutation_importance(f, X, y, scoring="neg_mean_squared_error",
                                        n_repeats=3, n_jobs=4)
    np.testing.assert_array_equal(by_loss.importances, by_scoring.importances)
    several = permutation_importance(f, X, y, scoring=["r2", "neg_mean_absolute_error"],
                                     n_repeats=3)
    assert list(several) == ["r2", "neg_mean_absolute_error"]
    with pytest.raises(ValueError, match="give loss or scoring .* not both"):
        permutation_importance(f, X, y, loss="mse", scoring="r2")
    with pytest.raises(TypeError, match="scoring takes .* or a list of names"):
        permutation_importance(f, X, y, scoring=["r2", lambda est, X, y: 0.0])
    with pytest.raises(TypeError, match="n_jobs must be an int or None"):
        permutation_importance(f, X, y, n_jobs="all")


def test_scoring_names_without_a_built_in_loss_call_scikit_learn_scorers(classification_data):
    """A scikit-learn estimator takes any scoring name scikit-learn knows: balanced_accuracy
    and f1 are its scorers on the engine's permutations, scored by hand here; in a list,
    every name is scikit-learn's scorer."""
    from sklearn.metrics import f1_score, get_scorer

    X, y = classification_data
    model = LogisticRegression().fit(X, y)
    R, p = 3, X.shape[1]
    perms = _engine_permutations(p, R, len(X), 1)
    expected = np.empty((p, R))
    base = f1_score(y, model.predict(X))
    for j in range(p):
        for r in range(R):
            Z = X.copy()
            Z[:, j] = X[perms[j, r], j]
            expected[j, r] = base - f1_score(y, model.predict(Z))
    got = permutation_importance(model, X, y, scoring="f1", n_repeats=R, random_state=1)
    np.testing.assert_allclose(got.importances[:, 0], expected, rtol=1e-12, atol=1e-14)
    several = permutation_importance(model, X, y, scoring=["f1", "balanced_accuracy",
                                                           "neg_log_loss"],
                                     n_repeats=R, random_state=1)
    assert list(several) == ["f1", "balanced_accuracy", "neg_log_loss"]
    np.testing.assert_array_equal(several["f1"].importances, got.importances)
    with pytest.raises(ValueError, match=r"scoring mixes names only scikit-learn's scorers "
                                         r"know \['f1'\] .* jaximp's loss names \['log_loss'\]"):
        permutation_importance(model, X, y, scoring=["log_loss", "f1"])
    with pytest.raises(TypeError, match="scoring takes scikit-learn's scoring names"):
        permutation_importance(model, X, y, scoring=["f1", get_scorer("accuracy")])
    for name in ("balanced_accuracy", "neg_log_loss"):
        alone = permutation_importance(model, X, y, scoring=get_scorer(name), n_repeats=R,
                                       random_state=1)
        np.testing.assert_allclose(several[name].importances, alone.importances, rtol=1e-12)
    explainer = jaximp.Explainer(model, X, y)
    np.testing.assert_array_equal(
        explainer.permutation_importance(scoring="f1", n_repeats=R,
                                         random_state=1).importances, got.importances)


def test_row_bootstrap_replicates_reweight_the_per_row_losses():
    """n_bootstrap: each replicate is the mean over repeats of the importance under a
    row-bootstrap weighting, computed from the same evaluations; the point estimate equals the
    plain call's, and the replicates equal a NumPy recomputation from the kept permutations."""
    import jax.numpy as jnp

    import jaximp
    from jaximp.data import as_key, replicate_weights

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=80)

    def f(A):
        return A[:, 0] + 0.5 * A[:, 1] ** 2

    plain = jaximp.permutation_importance(f, X, y, n_repeats=3, random_state=2)
    boot = jaximp.permutation_importance(f, X, y, n_repeats=3, random_state=2, n_bootstrap=25)
    np.testing.assert_allclose(boot.importances_mean, plain.importances_mean, rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(boot.info.repeats, plain.importances, rtol=1e-5, atol=1e-7)
    assert boot.importances.shape == (3, 1, 25) and boot.info.n_bootstrap == 25
    # the replicates from NumPy: the same permutations (read back from the repeats' data)
    weights, _ = replicate_weights(np.ones(80), 25, jax.random.fold_in(as_key(2), 1))
    base = (y - np.asarray(f(jnp.asarray(X, jnp.float32)), np.float64)) ** 2
    plan_rows = [np.asarray(p) for p in engine_permutations(
        jaximp.methods._permutation._plan(3, ((0,), (1,), (2,)), (0, 1, 2), 3,
                                          tuple(jaximp.engine.key_bits(as_key(2)))), 80)]
    expected = np.zeros((3, 25))
    for j in range(3):
        for r in range(3):
            Z = X.copy()
            Z[:, j] = X[plan_rows[1 + 3 * j + r], j]
            terms = (y - np.asarray(f(jnp.asarray(Z, jnp.float32)), np.float64)) ** 2
            expected[j] += (weights[1:] @ (terms - base)) / weights[1:].sum(axis=1) / 3
    np.testing.assert_allclose(boot.importances[:, 0, :], expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(boot.importances_std[:, 0], expected.std(axis=1), rtol=1e-5,
                               atol=1e-7)
    with pytest.raises(ValueError, match=r"n_bootstrap=5 reweights per-row losses, so it "
                                         r"needs one loss that sums over rows"):
        jaximp.permutation_importance(f, X, y, loss=["mse", "mae"],
                                      n_bootstrap=5)


def test_log_loss_clips_at_float64_epsilon_as_scikit_learn_for_trees_in_float32():
    """A decision tree read into float32 arrays gives exactly 0 to the true class of some
    rows of shuffled data; scikit-learn's log loss of its float64 probabilities clips them at
    2.2e-16 (36.0 a row), and so does jaximp's, not at float32's 1.2e-7 (15.9)."""
    from sklearn.metrics import log_loss
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    shuffled = X.copy()
    shuffled[:, 0] = X[::-1, 0]
    proba = tree.predict_proba(shuffled)
    assert (proba[np.arange(300), y] == 0).sum() > 10  # what is tested
    for model in (tree, jaximp.as_predictor(tree, trees="host", n_features=2)):
        ours = permutation_importance(model, shuffled, y, loss="log_loss", n_repeats=1)
        assert ours.info["baseline"][0] == pytest.approx(log_loss(y, proba), rel=1e-6)


@pytest.mark.parametrize("labels", ["numbers", "text"])
def test_log_loss_and_auc_of_hard_labels_are_refused_and_decision_functions_ranked(labels):
    """A classifier without predict_proba is scored by its hard labels: scikit-learn's
    neg_log_loss refuses it, and so does jaximp with the fix; its roc_auc ranks
    decision_function, as jaximp's scoring name does (it refused it), and a loss="auc" of
    the labels is refused naming decision_function."""
    from sklearn.metrics import get_scorer
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=200) > 0).astype(int)
    y = np.where(y == 1, "yes", "no") if labels == "text" else y
    svm = LinearSVC().fit(X, y)
    with pytest.raises(ValueError, match=r"log_loss.*hard class labels.*predict_proba"):
        permutation_importance(svm, X, y, scoring="neg_log_loss", n_repeats=1)
    with pytest.raises(ValueError, match=r"auc.*hard class labels.*decision_function"):
        permutation_importance(svm, X, y, loss="auc", n_repeats=1)
    scores = jaximp.as_predictor(svm, response_method="decision_function", n_features=3)
    for model in (scores, svm):
        ours = permutation_importance(model, X, y, scoring="roc_auc", n_repeats=2)
        assert ours.info["baseline"][0] == pytest.approx(get_scorer("roc_auc")(svm, X, y),
                                                         rel=1e-12)
    np.testing.assert_allclose(
        ours.importances, permutation_importance(svm, X, y, scoring=get_scorer("roc_auc"),
                                                 n_repeats=2).importances, atol=1e-12)
    accuracy = permutation_importance(svm, X, y, scoring="accuracy", n_repeats=1)
    assert accuracy.info["baseline"][0] == pytest.approx(svm.score(X, y), rel=1e-12)


def test_a_binary_classifiers_class_0_column_scores_the_model_as_its_class_1_column():
    """One column is read as the probability of class 1; output=0 of a binary classifier
    selects class 0's, so the model is scored by its class-1 column: log loss, accuracy
    and AUC of output=0 equal output=1's and scikit-learn's (they read P(class 0) as
    P(class 1) before, which changed the log loss from 0.30 to 2.1)."""
    from sklearn.metrics import log_loss, roc_auc_score

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    proba = model.predict_proba(X)
    expected = {"log_loss": log_loss(y, proba), "accuracy": model.score(X, y),
                "auc": roc_auc_score(y, proba[:, 1])}
    for loss, value in expected.items():
        results = [permutation_importance(model, X, y, loss=loss, output=output, n_repeats=2)
                   for output in (0, 1, None)]
        for result in results:
            assert result.info["baseline"][0] == pytest.approx(value, rel=1e-9)
            np.testing.assert_array_equal(result.importances, results[-1].importances)
    sage = [jaximp.sage_importance(model, X, y, background=X[:10], estimator="exact",
                                   loss="log_loss", output=output) for output in (0, 1)]
    np.testing.assert_array_equal(sage[0].importances_mean, sage[1].importances_mean)


def test_a_dict_of_feature_sets_may_overlap_as_dalex_variable_groups(linear_data, ols):
    """features={name: [features]} permutes each set's columns together, sets sharing
    features (dalex's variable_groups): equal to a float64 loop over the engine's
    permutations of each set, through the Explainer and a scorer callable too."""
    from sklearn.metrics import get_scorer

    from jaximp.engine import key_bits
    from jaximp.methods._permutation import _plan

    X, y = linear_data
    f, b = ols
    sets = {"x0+x1": ["x0", "x1"], "x1+x2": [1, 2], "x3": ["x3"]}
    columns = ((0, 1), (1, 2), (3,))
    R = 4
    result = permutation_importance(f, X, y, features=sets, n_repeats=R, random_state=3)
    assert result.feature_names == tuple(sets) and result.importances.shape == (3, 1, R)
    # the sets' permutation streams follow the four features' (labels 4, 5, 6)
    perms = engine_permutations(_plan(4, columns, (4, 5, 6), R,
                                      tuple(key_bits(jax.random.key(3)))), N)

    def mse(Z):
        return np.mean((y - (Z @ b[1:] + b[0])) ** 2)

    expected = np.empty((3, 1, R))
    for j, cols in enumerate(columns):
        for r in range(R):
            Z = X.copy()
            Z[:, cols] = X[perms[1 + j * R + r]][:, cols]
            expected[j, 0, r] = mse(Z) - mse(X)
    np.testing.assert_allclose(result.importances, expected, rtol=1e-4, atol=1e-4)
    # the union of a set's columns: E[delta MSE] = 2 Var(sum of the set's terms)
    explainer = jaximp.Explainer(f, X, y)
    many = explainer.permutation_importance(features=sets, n_repeats=200, random_state=3)
    np.testing.assert_allclose(many.importances_mean[:2, 0],
                               [2 * np.var(X[:, cols] @ b[1:][list(cols)]) for cols in
                                columns[:2]], rtol=0.1)
    np.testing.assert_array_equal(
        explainer.permutation_importance(features=sets, n_repeats=R,
                                         random_state=3).importances, result.importances)
    # another dict of the same size on the same Explainer is not the kept one
    other = explainer.permutation_importance(features={"a": [0], "b": [2], "c": [1]},
                                             n_repeats=R, random_state=3)
    assert other.feature_names == ("a", "b", "c")
    assert not np.allclose(other.importances, result.importances)
    # a scorer callable on the host sees the same permutations
    model = LinearRegression().fit(X, y)
    scored = permutation_importance(model, X, y, features=sets, n_repeats=R, random_state=3,
                                    scoring=get_scorer("neg_mean_squared_error"))
    np.testing.assert_allclose(scored.importances, expected, rtol=1e-7, atol=1e-9)
    for bad, error, match in [({}, ValueError, "empty dict"),
                              ({1: [0]}, TypeError, "by a str"),
                              ({"a": ["zz"]}, ValueError, "unknown feature 'zz'")]:
        with pytest.raises(error, match=match):
            permutation_importance(f, X, y, features=bad)


def test_accuracy_of_a_scikit_learn_classifier_scores_its_predict_labels():
    """scikit-learn's accuracy scores predict, which a tuned threshold (and SVC's Platt
    probabilities) sets apart from the most probable class: the default loss, the name and
    several losses (accuracy run apart from log loss) equal scikit-learn's accuracy scorer on
    the same permutations; the other losses still read predict_proba."""
    from sklearn.datasets import make_classification
    from sklearn.metrics import get_scorer
    from sklearn.model_selection import FixedThresholdClassifier

    X, y = make_classification(n_samples=300, n_features=4, n_informative=3,
                               n_redundant=0, weights=[0.8], random_state=0)
    model = FixedThresholdClassifier(LogisticRegression(), threshold=0.2).fit(X, y)
    labels = np.where(y == 1, "yes", "no")
    text_model = FixedThresholdClassifier(LogisticRegression(), threshold=0.2,
                                          pos_label="yes").fit(X, labels)
    assert (model.predict(X) != model.predict_proba(X).argmax(axis=1)).sum() > 20
    for clf, target in [(model, y), (text_model, labels)]:
        reference = permutation_importance(clf, X, target, scoring=get_scorer("accuracy"),
                                           n_repeats=4, random_state=2)
        assert reference.info["baseline"][0] == pytest.approx(clf.score(X, target))
        for options in [{}, {"loss": "accuracy"}, {"scoring": "accuracy"},
                        {"loss": "classification_error"}, {"loss": "ce"}]:  # R's names too
            got = permutation_importance(clf, X, target, n_repeats=4, random_state=2,
                                         **options)
            np.testing.assert_allclose(got.importances, reference.importances, atol=1e-12)
            np.testing.assert_allclose(got.info["baseline"], reference.info["baseline"])
        both = permutation_importance(clf, X, target, loss=["log_loss", "accuracy"],
                                      n_repeats=4, random_state=2)
        assert list(both) == ["log_loss", "accuracy"]
        np.testing.assert_allclose(both["accuracy"].importances, reference.importances,
                                   atol=1e-12)
        np.testing.assert_allclose(
            both["log_loss"].importances,
            permutation_importance(clf, X, target, loss="log_loss", n_repeats=4,
                                   random_state=2).importances, rtol=1e-12)
    explainer = jaximp.Explainer(model, X, y)
    named = explainer.permutation_importance(scoring=["accuracy", "neg_log_loss"],
                                             n_repeats=4, random_state=2)
    reference = permutation_importance(model, X, y, scoring=get_scorer("accuracy"),
                                       n_repeats=4, random_state=2)
    np.testing.assert_allclose(named["accuracy"].importances, reference.importances,
                               atol=1e-12)
    np.testing.assert_allclose(
        explainer.permutation_importance(n_repeats=4, random_state=2).importances,
        reference.importances, atol=1e-12)
    # conditional importance shares the losses: its accuracy is the classifier's score
    conditional = jaximp.conditional_importance(model, X, y, n_repeats=2)
    assert conditional.info["baseline"][0] == pytest.approx(model.score(X, y))


def test_roc_auc_of_a_binary_scikit_learn_classifier_ranks_its_decision_function():
    """scikit-learn's "roc_auc" scores a binary classifier's decision_function, which
    probabilities tie where they saturate (a steep logistic regression) or round (trees
    read into float32 arrays): equal to its scorer on the same permutations, alone, among
    other losses (each scored on its own method) and on an Explainer; "roc_auc_ovr" scores
    predict_proba, as scikit-learn does."""
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.metrics import get_scorer

    X = np.random.default_rng(0).normal(size=(300, 4))
    y = (8 * X[:, 0] + X[:, 1] > 0).astype(int)
    steep = LogisticRegression(C=1e4, max_iter=5000).fit(X, y)
    assert (steep.predict_proba(X)[:, 1] == 1.0).sum() > 30  # ties among probabilities
    boosted = GradientBoostingClassifier(n_estimators=100, random_state=0).fit(X, y)
    options = dict(n_repeats=3, random_state=4)
    for model in (steep, boosted):
        reference = permutation_importance(model, X, y, scoring=get_scorer("roc_auc"),
                                           **options)
        np.testing.assert_allclose(
            permutation_importance(model, X, y, scoring="roc_auc", **options).importances,
            reference.importances, atol=1e-12)
        several = permutation_importance(model, X, y, loss=["roc_auc", "log_loss", "accuracy"],
                                         **options)
        assert list(several) == ["roc_auc", "log_loss", "accuracy"]
        np.testing.assert_allclose(several["roc_auc"].importances, reference.importances,
                                   atol=1e-12)
        np.testing.assert_allclose(
            several["log_loss"].importances,
            permutation_importance(model, X, y, loss="log_loss", **options).importances,
            rtol=1e-12)
        np.testing.assert_allclose(
            jaximp.Explainer(model, X, y).permutation_importance(scoring="roc_auc",
                                                                 **options).importances,
            reference.importances, atol=1e-12)
        np.testing.assert_allclose(
            permutation_importance(model, X, y, scoring="roc_auc_ovr", **options).importances,
            permutation_importance(model, X, y, scoring=get_scorer("roc_auc_ovr"),
                                   **options).importances, atol=1e-6)


def test_r_loss_names_are_the_same_losses(linear_data, ols, classification_data):
    """hstats' and yardstick's names give the importances of jaximp's losses of the same
    definition, on the same permutations."""
    X, y = linear_data
    for r_name, name in [("squared_error", "mse"), ("absolute_error", "mae"),
                         ("rsq_trad", "r2")]:
        np.testing.assert_array_equal(
            permutation_importance(ols[0], X, y, loss=r_name, n_repeats=2).importances,
            permutation_importance(ols[0], X, y, loss=name, n_repeats=2).importances)
    Xc, yc = classification_data
    for r_name, name in [("logloss", "log_loss"), ("mlogloss", "log_loss"),
                         ("mn_log_loss", "log_loss"), ("classification_error", "accuracy")]:
        np.testing.assert_array_equal(
            permutation_importance(logistic, Xc, yc, loss=r_name, n_repeats=2).importances,
            permutation_importance(logistic, Xc, yc, loss=name, n_repeats=2).importances)
    with pytest.raises(ValueError, match=r"R's \['absolute_error'"):
        permutation_importance(ols[0], X, y, loss="tweedie")


def test_hstats_logloss_of_probabilities_and_one_target_for_several_outputs(linear_data,
                                                                            ols):
    """hstats' logloss of probabilities as targets is the cross-entropy, written out over the
    engine's permutations; its regression names score one column of y against every output,
    as R recycles it; jaximp's own names ask for one column per output."""
    from conftest import written_out_loss

    X, y = linear_data
    X3 = X[:, :3]
    soft = np.clip(1 / (1 + np.exp(-(X3 @ np.array([2.0, -1.0, 0.0])))) +
                   np.random.default_rng(3).normal(scale=0.2, size=len(y)), 0.0, 1.0)
    got = permutation_importance(logistic, X3, soft, loss="logloss", output=1, n_repeats=2,
                                 random_state=4)
    assert got.info["loss"] == "cross_entropy"
    np.testing.assert_array_equal(got.importances, permutation_importance(
        logistic, X3, soft, loss="cross_entropy", output=1, n_repeats=2,
        random_state=4).importances)
    probability = lambda Z: 1 / (1 + np.exp(-(Z @ np.array([2.0, -1.0, 0.0]))))
    base = written_out_loss("logloss", soft, probability(X3)).mean()
    perms = _engine_permutations(3, 2, len(y), 4)
    for j in range(3):
        for r in range(2):
            Z = X3.copy()
            Z[:, j] = X3[perms[j, r], j]
            assert got.importances[j, 0, r] == pytest.approx(
                written_out_loss("logloss", soft, probability(Z)).mean() - base, abs=2e-6)
    with pytest.raises(ValueError, match="needs targets in"):
        permutation_importance(logistic, X3, soft * 2, loss="cross_entropy", output=1)

    def two(Z):  # two outputs scored against the same y
        return jnp.stack([ols[0](Z), 0.5 * ols[0](Z)], axis=1)

    for r_name, name in [("squared_error", "mse"), ("absolute_error", "mae")]:
        recycled = permutation_importance(two, X, y, loss=r_name, n_repeats=2)
        np.testing.assert_array_equal(recycled.importances, permutation_importance(
            two, X, np.c_[y, y], loss=name, n_repeats=2).importances)
        with pytest.raises(ValueError, match="hstats' loss names .* score one column"):
            permutation_importance(two, X, y, loss=name)


def test_median_absolute_error_matches_sklearn_and_takes_dalexs_names(linear_data, ols):
    """loss='medae' (dalex's 'mad', scikit-learn's 'neg_median_absolute_error') equals
    scikit-learn's scorer on the same permutations, weighted too; dalex's '1-auc' is 'auc'."""
    from sklearn.metrics import get_scorer

    X, y = linear_data
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    model = LinearRegression().fit(X, y)
    theirs = permutation_importance(model, X, y, sample_weight=w, n_repeats=3,
                                    scoring=get_scorer("neg_median_absolute_error"))
    for options in ({"loss": "medae"}, {"loss": "mad"},
                    {"scoring": "neg_median_absolute_error"}):
        ours = permutation_importance(model, X, y, sample_weight=w, n_repeats=3, **options)
        assert ours.info["loss"] == "medae"
        np.testing.assert_allclose(ours.importances, theirs.importances, rtol=1e-12,
                                   atol=1e-14)
    # a JAX model on the device: the float64 median of NumPy over the engine's permutations
    got = permutation_importance(ols[0], X, y, loss="medae", n_repeats=2, random_state=3)
    perms = _engine_permutations(X.shape[1], 2, len(X), 3)
    f64 = lambda Z: Z @ np.asarray(np.float32(ols[1][1:]), np.float64) + ols[1][0]
    base = np.median(np.abs(y - f64(X)))
    for j in range(X.shape[1]):
        for r in range(2):
            Z = X.copy()
            Z[:, j] = X[perms[j, r], j]
            assert got.importances[j, 0, r] == pytest.approx(
                np.median(np.abs(y - f64(Z))) - base, rel=1e-5, abs=1e-6)
    Xc, yc = X[:, :3], (y > 1).astype(int)
    np.testing.assert_array_equal(
        permutation_importance(logistic, Xc, yc, loss="1-auc", n_repeats=2).importances,
        permutation_importance(logistic, Xc, yc, loss="auc", n_repeats=2).importances)
    with pytest.raises(ValueError, match=r"got \['medae'\]\. Use n_bootstrap=0 .* the "
                                         r"median absolute error"):
        permutation_importance(ols[0], X, y, loss="medae", n_bootstrap=3)


@pytest.mark.parametrize("name", ["mape", "msle", "rmsle"])
def test_percentage_and_log_errors_match_sklearn_scorers(name):
    """loss='mape', 'msle', 'rmsle' (and scikit-learn's scoring names for them) equal
    scikit-learn's scorers on the same permutations, weighted; a JAX model gives the host
    model's numbers; targets and predictions out of range are refused."""
    from sklearn.metrics import get_scorer

    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 3))
    y = np.exp(0.5 * X[:, 0] - 0.3 * X[:, 1]) + 0.1 * rng.uniform(size=300)
    w = rng.uniform(0.5, 2.0, size=300)
    from sklearn.compose import TransformedTargetRegressor

    host = TransformedTargetRegressor(LinearRegression(), func=np.log,
                                      inverse_func=np.exp).fit(X, y)
    coef = jnp.asarray(host.regressor_.coef_, jnp.float32)

    def model(Z):
        return jnp.exp(Z @ coef + host.regressor_.intercept_)

    scoring = {"mape": "neg_mean_absolute_percentage_error",
               "msle": "neg_mean_squared_log_error",
               "rmsle": "neg_root_mean_squared_log_error"}[name]
    theirs = permutation_importance(host, X, y, scoring=get_scorer(scoring), n_repeats=3,
                                    sample_weight=w)
    for options in ({"loss": name}, {"scoring": scoring}):
        ours = permutation_importance(host, X, y, n_repeats=3, sample_weight=w, **options)
        assert ours.info["loss"] == name
        np.testing.assert_allclose(ours.importances, theirs.importances, rtol=1e-9,
                                   atol=1e-12)
    on_device = permutation_importance(model, X, y, loss=name, n_repeats=3, sample_weight=w)
    np.testing.assert_allclose(on_device.importances, theirs.importances, rtol=1e-4,
                               atol=1e-6)
    if name != "mape":
        with pytest.raises(ValueError, match=f"loss='{name}' needs targets above -1.* row 4"):
            permutation_importance(model, X, np.where(np.arange(300) == 4, -2.0, y),
                                   loss=name)
        with pytest.raises(ValueError, match=f"loss='{name}' needs predictions above -1"):
            permutation_importance(lambda Z: Z[:, 0] * 3, X, y, loss=name)


def test_brier_score_matches_sklearns_scorer(classification_data):
    """loss='brier' and scoring='neg_brier_score' equal scikit-learn's scorer on the same
    permutations for two classes, three, and text labels, weighted; with n_bootstrap and a
    JAX model too; a classifier of hard labels is refused."""
    from sklearn.metrics import get_scorer
    from sklearn.svm import LinearSVC

    X, y = classification_data
    w = np.random.default_rng(3).uniform(0.5, 2.0, size=len(y))
    three = np.digitize(X[:, 0] + X[:, 1], [-0.7, 0.7])
    for target in (y, three, np.array(["a", "b", "c"])[three]):
        model = LogisticRegression().fit(X, target)
        theirs = permutation_importance(model, X, target, scoring=get_scorer(
            "neg_brier_score"), n_repeats=3, sample_weight=w)
        for options in ({"loss": "brier"}, {"scoring": "neg_brier_score", "n_bootstrap": 3}):
            ours = permutation_importance(model, X, target, n_repeats=3, sample_weight=w,
                                          **options)
            np.testing.assert_allclose(ours.importances_mean, theirs.importances_mean,
                                       rtol=1e-9, atol=1e-12)
    # a JAX model's two probability columns: (y - p1)^2 written out over the permutations
    got = permutation_importance(logistic, X, y, loss="brier", n_repeats=2, random_state=4)
    perms = _engine_permutations(3, 2, len(X), 4)
    p1 = lambda Z: 1 / (1 + np.exp(-(Z @ np.array([2.0, -1.0, 0.0]))))
    base = np.mean((y - p1(X)) ** 2)
    for j in range(3):
        for r in range(2):
            Z = X.copy()
            Z[:, j] = X[perms[j, r], j]
            assert got.importances[j, 0, r] == pytest.approx(np.mean((y - p1(Z)) ** 2) - base,
                                                             rel=1e-5, abs=1e-7)
    with pytest.raises(ValueError, match="'neg_brier_score' needs predict_proba too"):
        permutation_importance(LinearSVC().fit(X, y), X, y, loss="brier")


def test_iml_loss_names_are_the_same_losses(linear_data, ols, classification_data):
    """iml's (the Metrics package's) names: 'mdae', 'logLoss', 'ce'."""
    X, y = linear_data
    Xc, yc = classification_data
    for r_name, name, f, data in [("mdae", "medae", ols[0], (X, y)),
                                  ("logLoss", "log_loss", logistic, (Xc, yc)),
                                  ("ce", "accuracy", logistic, (Xc, yc))]:
        np.testing.assert_array_equal(
            permutation_importance(f, *data, loss=r_name, n_repeats=2).importances,
            permutation_importance(f, *data, loss=name, n_repeats=2).importances)


@pytest.mark.parametrize("name", ["poisson", "gamma"])
def test_deviance_losses_match_sklearn_and_hstats(name):
    """loss='poisson'/'gamma' (and scikit-learn's scoring names for them) equal scikit-learn's
    scorer on the same permutations for a host GLM, and hstats' deviances in a float64 loop
    for a JAX log-link model; targets and predictions out of range are refused."""
    from sklearn.linear_model import GammaRegressor, PoissonRegressor
    from sklearn.metrics import get_scorer

    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3))
    mean = np.exp(0.5 * X[:, 0] - 0.3 * X[:, 1] + 0.1)
    y = rng.poisson(mean).astype(float) if name == "poisson" else rng.gamma(2.0, mean / 2)
    w = rng.uniform(0.5, 2.0, size=len(y))
    glm = (PoissonRegressor if name == "poisson" else GammaRegressor)(alpha=1e-4).fit(X, y)
    scoring = f"neg_mean_{name}_deviance"
    theirs = permutation_importance(glm, X, y, scoring=get_scorer(scoring), n_repeats=3,
                                    sample_weight=w)
    for options in ({"loss": name}, {"scoring": scoring}):
        ours = permutation_importance(glm, X, y, n_repeats=3, sample_weight=w, **options)
        assert ours.info["loss"] == name
        np.testing.assert_allclose(ours.importances, theirs.importances, rtol=1e-9,
                                   atol=1e-10)  # scikit-learn rounds too
    # a JAX model on the device: hstats' deviances over the engine's permutations
    coef = jnp.array([0.5, -0.3, 0.0], jnp.float32)

    def f(Z):
        return jnp.exp(Z @ coef + 0.1)

    R = 4
    got = permutation_importance(f, X, y, loss=name, n_repeats=R, random_state=2,
                                 n_bootstrap=5)
    perms = _engine_permutations(3, R, len(X), 2)
    f64 = (lambda Z: np.exp(Z @ np.asarray(coef, np.float64) + 0.1))
    base = written_out_loss(name, y, f64(X)).mean()
    expected = np.empty((3, R))
    for j in range(3):
        for r in range(R):
            Z = X.copy()
            Z[:, j] = X[perms[j, r], j]
            expected[j, r] = written_out_loss(name, y, f64(Z)).mean() - base
    np.testing.assert_allclose(got.info["baseline"], [base], rtol=1e-5)
    np.testing.assert_allclose(got.importances_mean[:, 0], expected.mean(axis=1), rtol=1e-4,
                               atol=1e-6)
    # out of range: targets at once, predicted means as soon as they are scored
    bad = y.copy()
    bad[7] = -1.0 if name == "poisson" else 0.0
    with pytest.raises(ValueError, match=f"loss='{name}' needs .* targets.*; .* row 7"):
        permutation_importance(f, X, bad, loss=name)
    with pytest.raises(ValueError, match=f"loss='{name}' needs .* predicted means"):
        permutation_importance(lambda Z: Z[:, 0] + 0.5, X, y, loss=name)
