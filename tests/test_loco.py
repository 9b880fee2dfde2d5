"""LOCO: replacement closed forms, refits with a user fit, one vmapped job for fit_mlp."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from _linear_fit import LinearModel, fit_lstsq
from sklearn.linear_model import LinearRegression, LogisticRegression

import jaximp
from jaximp.methods._loco import loco_importance

COEF = np.array([2.0, -1.0, 0.5, 0.0])


@pytest.fixture(scope="module")
def linear():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4)) + np.array([1.0, -2.0, 0.0, 3.0])
    y = X @ COEF + rng.normal(scale=0.5, size=400)
    return X, y


def f_linear(Z):
    return Z @ jnp.asarray(COEF, jnp.float32)


@pytest.mark.parametrize("strategy", ["mean", "median", "zero"])
def test_replacement_matches_closed_form(linear, strategy):
    X, y = linear
    w = np.random.default_rng(1).uniform(0.5, 1.5, size=len(y))
    result = loco_importance(f_linear, X, y, strategy=strategy, sample_weight=w)
    if strategy == "mean":
        centre = np.average(X, axis=0, weights=w)
    elif strategy == "median":
        centre = np.array([
            np.sort(X[:, j])[np.searchsorted(np.cumsum(w[np.argsort(X[:, j])]), w.sum() / 2)]
            for j in range(4)])
    else:
        centre = np.zeros(4)
    pred = X @ COEF
    base = np.average((y - pred) ** 2, weights=w)
    for j in range(4):
        changed = pred + COEF[j] * (centre[j] - X[:, j])
        expected = np.average((y - changed) ** 2, weights=w) - base
        np.testing.assert_allclose(result.importances_mean[j, 0], expected, rtol=2e-5,
                                   atol=1e-5)
    np.testing.assert_allclose(result.info["values"]["x0"], centre[:1], rtol=1e-12)
    assert result.method == f"loco_{strategy}" and result.importances is None


def test_refit_with_user_fit_equals_ols_closed_form(linear):
    X, y = linear
    result = loco_importance(None, X, y, fit=lambda A, b: LinearRegression().fit(A, b))

    def sse(A):
        A1 = np.c_[np.ones(len(A)), A]
        resid = y - A1 @ np.linalg.lstsq(A1, y, rcond=None)[0]
        return np.mean(resid ** 2)

    expected = [sse(np.delete(X, j, axis=1)) - sse(X) for j in range(4)]
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-4, atol=1e-5)
    ratio = loco_importance(None, X, y, kind="ratio",
                            fit=lambda A, b: LinearRegression().fit(A, b))
    np.testing.assert_allclose(ratio.importances_mean[:, 0],
                               (np.asarray(expected) + sse(X)) / sse(X), rtol=1e-4)
    assert set(result.info["models"]) == {"x0", "x1", "x2", "x3"}


def test_losses_read_targets_in_float64_and_weighted_medians_as_numpy():
    """Targets far from 0 (|y| ~ 1e4) keep their float64 digits in the losses of host
    models (float32 targets moved a baseline MSE of 0.25 by 3e-5), and equal weights that
    reach half the total only up to rounding (ten of 0.1) give np.median's median."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) + [0, 1e4, 0]
    y = X @ [2.0, -1.0, 0.0] + 0.5 * rng.normal(size=200)
    fit = lambda A, b: LinearRegression().fit(A, b)  # noqa: E731
    result = loco_importance(None, X, y, fit=fit)
    full = fit(X, y)
    baseline = np.mean((y - full.predict(X)) ** 2)
    dropped = [np.mean((y - fit(np.delete(X, j, 1), y).predict(np.delete(X, j, 1))) ** 2)
               for j in range(3)]
    np.testing.assert_allclose(result.info["baseline"][0], baseline, rtol=1e-12)
    np.testing.assert_allclose(result.importances_mean[:, 0], np.array(dropped) - baseline,
                               rtol=1e-9)
    Z = np.column_stack([np.arange(10.0), np.linspace(-1, 1, 10) ** 2])
    for weights in (None, np.full(10, 0.1), np.full(10, 0.3)):
        median = loco_importance(lambda A: A[:, 0], Z, Z[:, 0], strategy="median",
                                 sample_weight=weights)
        np.testing.assert_allclose(median.info["values"]["x0"], [4.5], rtol=1e-15)


def test_refit_sees_dataframe_without_the_group():
    rng = np.random.default_rng(2)
    level = rng.integers(0, 3, size=300)
    frame = pd.DataFrame({"x": rng.normal(size=300)})
    for k, name in enumerate(["a", "b", "c"]):
        frame[name] = (level == k).astype(float)
    y = frame["x"].to_numpy() + np.array([0.0, 3.0, -3.0])[level]
    seen = []

    def fit(A, b):
        seen.append(list(A.columns))
        return LinearRegression().fit(A.to_numpy(), b)

    result = loco_importance(None, frame, y, fit=fit, groups={"level": ["a", "b", "c"]})
    assert seen == [["x", "a", "b", "c"], ["a", "b", "c"], ["x"]]
    assert result.feature_names == ("x", "level")
    assert result.importances_mean[1, 0] > result.importances_mean[0, 0] > 0.5


def test_refit_classifier_with_log_loss():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.2 * rng.normal(size=300) > 0).astype(int)
    result = loco_importance(None, X, y, loss="log_loss",
                             fit=lambda A, b: LogisticRegression().fit(A, b))
    assert result.output_names == ("y",)
    assert result.importances_mean[0, 0] > 0.3
    assert abs(result.importances_mean[2, 0]) < 0.02


MLP_OPTIONS = dict(hidden=(8,), steps=120, activation="tanh", l2=0.01, weight_decay=1e-4)
MLP_FIT = functools.partial(jaximp.fit_mlp, **MLP_OPTIONS)  # every option reaches the job


@pytest.fixture(scope="module")
def friedman():
    X, y = jaximp.make_friedman1(n=200, p=6)
    return X, y


@pytest.fixture(scope="module")
def batched_and_sequential(friedman):
    X, y = friedman
    batched = loco_importance(None, X, y, fit=MLP_FIT, random_state=3)
    sequential = loco_importance(None, X, y, fit=MLP_FIT, random_state=3, batched=False)
    return batched, sequential


def test_vmapped_refits_equal_sequential_refits(batched_and_sequential):
    batched, sequential = batched_and_sequential
    np.testing.assert_allclose(batched.importances_mean, sequential.importances_mean,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(batched.info["baseline"], sequential.info["baseline"],
                               rtol=1e-5)
    for name in batched.feature_names:
        a, b = batched.info["models"][name], sequential.info["models"][name]
        np.testing.assert_allclose(a.losses, b.losses, rtol=1e-4, atol=1e-6)
        for la, lb in zip(jax.tree_util.tree_leaves(a.params), jax.tree_util.tree_leaves(b.params)):
            np.testing.assert_allclose(la, lb, rtol=1e-4, atol=1e-5)


def test_explicit_keys_reproduce_each_refit(friedman, batched_and_sequential):
    """Refit j is fit_mlp(X, y, input_mask=drop j, random_state=key), as is the full model."""
    X, y = friedman
    batched, _ = batched_and_sequential
    key = jax.random.key(3)
    mask = np.ones(6, np.float32)
    mask[2] = 0.0
    alone = jaximp.fit_mlp(X, y, input_mask=mask, random_state=key, **MLP_OPTIONS)
    refit = batched.info["models"]["x3"]
    np.testing.assert_array_equal(np.asarray(refit.input_mask), mask)
    np.testing.assert_allclose(np.asarray(refit(X)), np.asarray(alone(X)), rtol=1e-4, atol=1e-4)
    full = jaximp.fit_mlp(X, y, random_state=key, **MLP_OPTIONS)
    assert batched.info["full_model"].activation == "tanh"
    np.testing.assert_allclose(np.asarray(batched.info["full_model"](X)), np.asarray(full(X)),
                               rtol=1e-4, atol=1e-4)


def test_mlp_refits_rank_friedman_features(batched_and_sequential):
    batched, _ = batched_and_sequential
    imp = batched.importances_mean[:, 0]
    assert imp[3] > max(imp[2], imp[5]) and imp[5] < 0.5  # x4 (linear 10 x4) >> noise x6


def test_given_full_model_and_feature_subset(friedman, batched_and_sequential):
    X, y = friedman
    batched, _ = batched_and_sequential
    full = batched.info["full_model"]
    subset = loco_importance(full, X, y, fit=MLP_FIT, random_state=3, features=["x2", "x4"],
                             batched=False)
    assert subset.feature_names == ("x2", "x4")
    np.testing.assert_allclose(subset.importances_mean, batched.importances_mean[[1, 3]],
                               rtol=1e-4, atol=1e-4)


def test_validation_messages(linear):
    X, y = linear
    cases = [
        (dict(strategy="drop"), "strategy must be one of ('refit', 'mean', 'median', 'zero'); "
                                "got 'drop'."),
        (dict(kind="log"), "kind must be one of ('difference', 'ratio'); got 'log'."),
        (dict(), "strategy='refit' needs fit=...: a function fit(X, y) -> model, e.g. "
                 "jaximp.fit_mlp, or an unfitted scikit-learn estimator; got fit=None."),
        (dict(strategy="mean", fit=MLP_FIT),
         "fit is used by strategy='refit' only; got it with strategy='mean'."),
        (dict(fit=functools.partial(jaximp.fit_mlp, random_state=1)),
         "fit=partial(fit_mlp, ...) must not set ['random_state']: loco_importance supplies "
         "the data, the input masks and the keys; pass the seed as random_state=... instead."),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError) as err:
            loco_importance(f_linear, X, y, **kwargs)
        assert str(err.value) == message
    with pytest.raises(TypeError, match=r"^batched must be True or False; got 1\.$"):
        loco_importance(f_linear, X, y, fit=MLP_FIT, batched=1)
    with pytest.raises(ValueError, match=r"strategy='zero' needs a fitted model; got "
                                         r"model=None\."):
        loco_importance(None, X, y, strategy="zero")
    with pytest.raises(ValueError, match="fit returned None for the data without 'x0'"):
        loco_importance(f_linear, X, y, fit=lambda A, b: None)


# Refits by a JAX-traceable fit: one vmap over column masks.


def lstsq_mse_np(A, y):
    """float64 NumPy reference: in-sample MSE of least squares with an intercept."""
    A1 = np.c_[np.ones(len(A)), A]
    resid = y - A1 @ np.linalg.lstsq(A1, y, rcond=None)[0]
    return np.mean(resid ** 2)


def test_traceable_fit_matches_float64_numpy_reference(linear):
    X, y = linear
    result = loco_importance(None, X, y, fit=fit_lstsq, traceable_fit=True)
    zeroed = [np.where(np.arange(4) == j, 0.0, X) for j in range(4)]
    expected = np.array([lstsq_mse_np(Z, y) for Z in zeroed]) - lstsq_mse_np(X, y)
    # a zero column is a dropped column for least squares with an intercept
    dropped = [lstsq_mse_np(np.delete(X, j, axis=1), y) - lstsq_mse_np(X, y) for j in range(4)]
    np.testing.assert_allclose(expected, dropped, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-3, atol=2e-4)
    np.testing.assert_allclose(result.info["baseline"], [lstsq_mse_np(X, y)], rtol=1e-3)
    assert result.method == "loco" and result.top(2) == ["x0", "x1"]
    full, refit = result.info["full_model"], result.info["models"]["x1"]
    assert isinstance(full, LinearModel) and full.coef.shape == (4,)
    np.testing.assert_allclose(np.asarray(full.coef), np.linalg.lstsq(
        np.c_[np.ones(len(X)), X], y, rcond=None)[0][1:], rtol=1e-3, atol=1e-3)
    assert abs(float(refit.coef[1])) < 1e-3  # fitted with x1 set to 0


def test_traceable_fit_with_given_model_and_feature_subset(linear):
    X, y = linear
    full = fit_lstsq(jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.float32))
    both = loco_importance(None, X, y, fit=fit_lstsq, traceable_fit=True)
    subset = loco_importance(full, X, y, fit=fit_lstsq, traceable_fit=True,
                             features=["x1", "x3"], kind="ratio")
    assert subset.feature_names == ("x1", "x3") and set(subset.info["models"]) == {"x1", "x3"}
    ratio = (both.info["losses"][[1, 3]] / both.info["baseline"])[:, 0]
    np.testing.assert_allclose(subset.importances_mean[:, 0], ratio, rtol=1e-4)


def test_traceable_fit_errors_name_the_fix(linear):
    X, y = linear

    def host_fit(A, b):  # NumPy inside: not traceable
        return LinearRegression().fit(np.asarray(A), np.asarray(b))

    with pytest.raises(ValueError, match=r"traceable_fit=True needs fit\(X, y\) to be a pure JAX "
                       r"function returning a pytree of arrays .* Pass traceable_fit=False"):
        loco_importance(None, X, y, fit=host_fit, traceable_fit=True)
    with pytest.raises(TypeError, match=r"^traceable_fit must be True or False; got 1\.$"):
        loco_importance(None, X, y, fit=fit_lstsq, traceable_fit=1)
    with pytest.raises(ValueError) as err:
        loco_importance(f_linear, X, y, strategy="mean", traceable_fit=True)
    assert str(err.value) == ("traceable_fit is used by strategy='refit' only; got it with "
                              "strategy='mean'.")


def test_mlp_refits_are_one_stacked_pytree(friedman, batched_and_sequential):
    """fit_mlp refits come from one stacked MLP pytree: every refit has the same structure."""
    batched, _ = batched_and_sequential
    models = list(batched.info["models"].values()) + [batched.info["full_model"]]
    treedefs = {jax.tree_util.tree_structure(m) for m in models}
    assert len(treedefs) == 1
    assert all(m.x_mean.shape == (6,) and m.input_mask.shape == (6,) for m in models)


def test_a_classifier_defaults_to_accuracy():
    """As permutation importance: scikit-learn's default score for a classifier."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    default = loco_importance(clf, X, y, strategy="mean")
    accuracy = loco_importance(clf, X, y, strategy="mean", loss="accuracy")
    assert default.info["loss"] == "accuracy"
    np.testing.assert_array_equal(default.importances_mean, accuracy.importances_mean)
    predict = (clf.predict(X) == y).mean()
    replaced = X.copy()
    replaced[:, 0] = X[:, 0].mean()
    np.testing.assert_allclose(default.importances_mean[0, 0],
                               predict - (clf.predict(replaced) == y).mean(), atol=1e-12)


def test_row_bootstrap_replicates_from_the_per_row_losses():
    """n_bootstrap: replicates of the importance under row-bootstrap weightings of the same
    predictions, for a replacement strategy and for generic refits, against NumPy."""
    from jaximp.data import as_key, replicate_weights

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    y = X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.normal(size=60)
    weights, _ = replicate_weights(np.ones(60), 15, jax.random.fold_in(as_key(4), 2))
    model = LinearRegression().fit(X, y)

    def numpy_replicates(predictions):  # (1 + p, n) predictions, the full model first
        losses = (y[None] - predictions) ** 2 @ weights[1:].T / weights[1:].sum(axis=1)
        return (losses[1:] - losses[:1])  # (p, B)

    result = jaximp.loco_importance(model, X, y, strategy="mean", n_bootstrap=15,
                                    random_state=4)
    replaced = [X] + [np.where(np.arange(3) == j, X.mean(axis=0), X) for j in range(3)]
    expected = numpy_replicates(np.stack([model.predict(Z) for Z in replaced]))
    np.testing.assert_allclose(result.importances[:, 0, :], expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(result.importances_std[:, 0], expected.std(axis=1), rtol=1e-6,
                               atol=1e-9)

    def fit(A, b):
        return LinearRegression().fit(A, b)

    result = jaximp.loco_importance(model, X, y, fit=fit, n_bootstrap=15, random_state=4)
    refits = [fit(np.delete(X, j, axis=1), y).predict(np.delete(X, j, axis=1))
              for j in range(3)]
    expected = numpy_replicates(np.stack([fit(X, y).predict(X), *refits]))
    np.testing.assert_allclose(result.importances[:, 0, :], expected, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match=r"n_bootstrap=5 reweights per-row losses"):
        jaximp.loco_importance(model, X, y, strategy="mean",
                               loss=lambda t, f: np.mean((t - f) ** 2), n_bootstrap=5)


def test_weighted_median_of_equal_weights_is_the_median():
    """Where the cumulative weight reaches exactly half, the weighted median is the mean of
    the two values around it, so unit weights give np.median's value (the lower median
    before: 1.0 against 1.5 here); zero weights are skipped."""
    X = np.column_stack([np.arange(4.0), [1.0, 0.0, 2.0, 1.0]])
    y = X[:, 0] ** 2
    f = lambda A: A[:, 0] ** 2 + 0 * A[:, 1]  # noqa: E731
    plain = loco_importance(f, X, y, strategy="median", loss="mse")
    unit = loco_importance(f, X, y, strategy="median", loss="mse", sample_weight=np.ones(4))
    assert plain.info["values"]["x0"][0] == unit.info["values"]["x0"][0] == 1.5
    np.testing.assert_array_equal(plain.importances_mean, unit.importances_mean)
    assert unit.importances_mean[0, 0] == pytest.approx(np.mean((y - 2.25) ** 2), rel=1e-6)
    skipped = loco_importance(f, X, y, strategy="median", loss="mse",
                              sample_weight=np.array([1.0, 0.0, 0.0, 1.0]))
    assert skipped.info["values"]["x0"][0] == 1.5  # between 0 and 3
    odd = loco_importance(f, X, y, strategy="median", loss="mse",
                          sample_weight=np.array([1.0, 2.0, 1.0, 1.0]))
    assert odd.info["values"]["x0"][0] == 1.0


def test_a_scikit_learn_estimator_as_fit_and_a_deviance_loss():
    """fit= takes an unfitted scikit-learn estimator, cloned for every refit: the Poisson
    deviances equal scikit-learn's for the same fits, by hand."""
    from sklearn.base import clone
    from sklearn.linear_model import PoissonRegressor
    from sklearn.metrics import mean_poisson_deviance

    rng = np.random.default_rng(4)
    X = rng.normal(size=(250, 3))
    y = rng.poisson(np.exp(0.6 * X[:, 0] - 0.4 * X[:, 1])).astype(float)
    glm = PoissonRegressor(alpha=1e-3)
    result = loco_importance(None, X, y, fit=glm, loss="poisson")
    full = clone(glm).fit(X, y)
    base = mean_poisson_deviance(y, full.predict(X))
    expected = [mean_poisson_deviance(y, clone(glm).fit(np.delete(X, j, 1), y).predict(
        np.delete(X, j, 1))) - base for j in range(3)]
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(result.info["baseline"], [base], rtol=1e-12)
    assert not hasattr(glm, "coef_")  # the estimator given is never fitted itself
    assert result.info["models"]["x0"] is not result.info["models"]["x1"]
    with pytest.raises(ValueError, match="traceable_fit needs a pure JAX fit"):
        loco_importance(None, X, y, fit=glm, traceable_fit=True)


def test_a_classifier_to_fit_defaults_to_the_accuracy_of_its_predict():
    """With model=None the full model is fitted first, so a classifier's loss defaults to
    accuracy (it was 'mse', refused for class labels), scored on predict as scikit-learn's
    scorer (a tuned threshold moves it away from the most probable class), for the
    replacement strategies too."""
    from sklearn.base import clone
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import FixedThresholdClassifier

    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.5 * rng.normal(size=200) > 0.3, "yes", "no")
    clf = FixedThresholdClassifier(LogisticRegression(), threshold=0.3)
    result = loco_importance(None, X, y, fit=clf)
    assert result.info["loss"] == "accuracy"
    full = clone(clf).fit(X, y)
    base = accuracy_score(y, full.predict(X))
    assert base != np.mean(full.classes_[full.predict_proba(X).argmax(1)] == y)
    expected = [base - accuracy_score(y, clone(clf).fit(np.delete(X, j, 1), y).predict(
        np.delete(X, j, 1))) for j in range(3)]
    np.testing.assert_allclose(result.importances_mean[:, 0], expected, atol=1e-7)
    zero = loco_importance(full, X, y, strategy="zero")
    Z = [X.copy() for _ in range(3)]
    for j in range(3):
        Z[j][:, j] = 0.0
    np.testing.assert_allclose(zero.importances_mean[:, 0],
                               [base - accuracy_score(y, full.predict(Z[j])) for j in range(3)],
                               atol=1e-7)


def test_held_out_data_and_a_lone_feature_are_refused_by_name():
    rng = np.random.default_rng(0)
    X, X_test = rng.normal(size=(50, 3)), rng.normal(size=(30, 3))
    y, y_test = X.sum(axis=1), X_test.sum(axis=1)
    model = LinearRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"X_test must have the 3 columns of X; got 2"):
        loco_importance(model, X, y, fit=LinearRegression(), X_test=X_test[:, :2],
                        y_test=y_test)
    with pytest.raises(ValueError, match=r"y_test must have n = 30 rows like X_test; got 5"):
        loco_importance(model, X, y, fit=LinearRegression(), X_test=X_test, y_test=y_test[:5])
    with pytest.raises(ValueError, match=r"without 'x0', which holds every column of X: no "
                                         r"column is left to fit\. Use strategy='mean'"):
        loco_importance(None, X[:, :1], y, fit=LinearRegression())
