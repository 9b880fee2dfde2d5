"""average_loss: float64 NumPy by hand and scikit-learn's metrics, per group of rows."""

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from sklearn import metrics
from sklearn.linear_model import LogisticRegression

import jaximp

RNG = np.random.default_rng(8)
N = 150
X = RNG.normal(size=(N, 3))
COEF = np.array([1.0, -2.0, 0.5], np.float32)
Y = X @ COEF + RNG.normal(size=N)


def model(A):
    return A @ jnp.asarray(COEF)


def test_regression_losses_by_group_equal_numpy():
    """Weighted MSE and RMSE per quantile group of x2 (pandas' cut of the type-1 quantiles),
    R^2 as 1 - R^2 or as the score; overall, the baseline of permutation importance."""
    w = RNG.uniform(0.5, 2.0, size=N)
    breaks = np.unique(np.quantile(X[:, 2], np.linspace(0, 1, 4), method="inverted_cdf"))
    codes = pd.cut(X[:, 2], breaks, include_lowest=True).codes
    residual = Y - X @ COEF.astype(float)
    for loss, by_hand in [
            ("mse", lambda r, y, w: np.average(r ** 2, weights=w)),
            ("rmse", lambda r, y, w: np.sqrt(np.average(r ** 2, weights=w))),
            ("r2", lambda r, y, w: np.sum(w * r ** 2) / np.sum(
                w * (y - np.average(y, weights=w)) ** 2))]:  # 1 - R^2
        table = jaximp.average_loss(model, X, Y, loss=loss, by="x2", by_size=3,
                                    sample_weight=w)
        assert table.shape == (3, 1) and [g.right for g in table.index] == list(breaks[1:])
        expected = [by_hand(residual[codes == k], Y[codes == k], w[codes == k])
                    for k in range(3)]
        np.testing.assert_allclose(table["y"], expected, rtol=1e-5)
    score = jaximp.average_loss(model, X, Y, loss="r2", by="x2", by_size=3, sample_weight=w,
                                as_score=True)
    np.testing.assert_allclose(score["y"], 1 - table["y"], rtol=1e-9)
    overall = jaximp.average_loss(model, X, Y, sample_weight=w)
    assert list(overall.index) == ["all"]
    baseline = jaximp.permutation_importance(model, X, Y, sample_weight=w).info["baseline"]
    np.testing.assert_allclose(overall["y"], baseline, rtol=1e-6)  # its sums: float32


def test_classification_losses_by_group_equal_scikit_learn():
    """A scikit-learn classifier per group: 1 - accuracy of its predict (hstats'
    classification_error), log loss with a group lacking a class, 1 - AUC, Brier score;
    text labels; the Explainer gives the same."""
    y = np.where(X[:, 0] + 0.5 * RNG.normal(size=N) > 0, "yes", "no")
    clf = LogisticRegression().fit(X, y)
    group = np.where(X[:, 1] > 0.8, "top", np.where(X[:, 0] > 1.2, "right", "rest"))
    proba = clf.predict_proba(X)
    cases = {
        "classification_error": lambda m: 1 - metrics.accuracy_score(y[m], clf.predict(X[m])),
        "log_loss": lambda m: metrics.log_loss(y[m], proba[m], labels=clf.classes_),
        "brier": lambda m: metrics.brier_score_loss(y[m], proba[m][:, 1], pos_label="yes"),
    }
    assert len(np.unique(y[group == "right"])) == 1  # a group with one class
    for loss, expected in cases.items():
        table = jaximp.average_loss(clf, X, y, loss=loss, by=group)
        assert list(table.index) == ["rest", "right", "top"]
        np.testing.assert_allclose(table["y"], [expected(group == g) for g in table.index],
                                   rtol=1e-9, atol=1e-12)
    halves = X[:, 2] > 0
    auc = jaximp.average_loss(clf, X, y, loss="1-auc", by=halves)
    np.testing.assert_allclose(auc["y"], [1 - metrics.roc_auc_score(
        y[halves == h], clf.decision_function(X[halves == h])) for h in (False, True)],
        rtol=1e-12)
    bound = jaximp.Explainer(clf, X, y).average_loss(loss="log_loss", by=group)
    pd.testing.assert_frame_equal(bound, jaximp.average_loss(clf, X, y, loss="log_loss",
                                                             by=group))
    with pytest.raises(ValueError, match="loss='auc' needs all 2 classes in y in every group; "
                                         "group 'right' has 1"):
        jaximp.average_loss(clf, X, y, loss="auc", by=group)


def test_numeric_labels_and_groups_where_a_loss_is_undefined():
    """A classifier of 0/1 (and 0/1/2) labels takes its default, the accuracy of predict
    (resolved against the predict column: it raised an IndexError); groups without weight,
    with a constant y for R^2 or without every class for AUC are refused by name."""
    labels = (X[:, 0] + 0.3 * RNG.normal(size=N) > 0).astype(int)
    for target in (labels, labels + (X[:, 1] > 1)):
        clf = LogisticRegression().fit(X, target)
        got = jaximp.average_loss(clf, X, target, by=X[:, 2] > 0)
        np.testing.assert_allclose(got["y"], [1 - metrics.accuracy_score(
            target[half], clf.predict(X[half])) for half in (X[:, 2] <= 0, X[:, 2] > 0)],
            atol=1e-12)
    halves = (X[:, 2] > 0).astype(int)
    with pytest.raises(ValueError, match="group 1 of by has no weight"):
        jaximp.average_loss(model, X, Y, by=halves, sample_weight=1.0 - halves)
    constant = np.where(halves == 1, 2.0, Y)
    with pytest.raises(ValueError, match="loss='r2' is undefined in group 1"):
        jaximp.average_loss(model, X, constant, loss="r2", by=halves)
    three = np.digitize(X[:, 0], [-0.5, 0.5])
    clf = LogisticRegression().fit(X, three)
    with pytest.raises(ValueError, match="loss='auc' needs all 3 classes"):
        jaximp.average_loss(clf, X, three, loss="auc", by=X[:, 0] > 0)


def test_one_class_y_is_that_class_of_a_one_column_model():
    """A one-column model gives the probability of the larger class, so y = 1 alone is that
    class (scikit-learn's log_loss(labels=[0, 1])), in all rows and in a max_samples subset;
    a binary classifier's own classes decide; a lone class of other labels is refused."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    p = 1 / (1 + np.exp(-2 * X[:, 0].astype(np.float32)))
    model = lambda A: 1 / (1 + jnp.exp(-2 * A[:, 0]))
    ones = np.ones(60, int)
    for loss, reference in (("log_loss", metrics.log_loss(ones, p, labels=[0, 1])),
                            ("brier", metrics.brier_score_loss(ones, p))):
        assert jaximp.average_loss(model, X, ones, loss=loss).iloc[0, 0] == pytest.approx(
            reference, rel=1e-6)
    y = ones.copy()
    y[0] = 0
    result = jaximp.permutation_importance(model, X, y, loss="log_loss", max_samples=5,
                                           n_repeats=1, random_state=2)
    rows = result.info.sample_rows
    assert set(y[rows]) == {1}
    assert result.info.baseline[0] == pytest.approx(
        metrics.log_loss(y[rows], p[rows], labels=[0, 1]), rel=1e-6)
    labels = np.where(X[:, 0] > 0, "b", "a")
    fitted = LogisticRegression().fit(X, labels)
    only_b = labels == "b"
    assert jaximp.average_loss(fitted, X[only_b], labels[only_b], loss="log_loss",
                               output=1).iloc[0, 0] == pytest.approx(
        metrics.log_loss(labels[only_b], fitted.predict_proba(X[only_b]),
                         labels=["a", "b"]), rel=1e-6)
    with pytest.raises(ValueError, match="y holds one class, 'b', and the model one "
                                         "probability column"):
        jaximp.average_loss(model, X, np.full(60, "b"), loss="log_loss")
    # labels as text of a classifier fitted on numbers: read as the classes' names
    numeric = LogisticRegression().fit(X, (X[:, 0] > 0).astype(int))
    codes = (X[:, 0] > 0).astype(int)
    assert jaximp.average_loss(numeric, X, codes.astype(str), loss="log_loss", output=1).iloc[
        0, 0] == pytest.approx(jaximp.average_loss(numeric, X, codes, loss="log_loss",
                                                   output=1).iloc[0, 0], rel=1e-12)


def test_a_missing_grouping_is_a_group_of_its_own_as_hstats():
    """hstats' test_average_loss.R, "works with missing values": BY = x3 with two NA gives
    the groups A, B and NA, each with loss 0 (pred x1 equals y)."""
    frame = pd.DataFrame({"x1": np.arange(1.0, 7.0), "x2": [np.nan, 1, 2, 1, 1, 3],
                          "x3": pd.Categorical(["A", None, None, "B", "A", "A"])})

    class First:
        def predict(self, X):
            return np.asarray(X["x1"], np.float64)

    with pytest.warns(UserWarning, match="by has 2 missing values"):
        table = jaximp.average_loss(First(), frame, np.arange(1.0, 7.0), by="x3")
    assert list(table.index[:2]) == ["A", "B"] and pd.isna(table.index[2])
    np.testing.assert_array_equal(table["y"], [0.0, 0.0, 0.0])
    # a numeric grouping: the present values are cut, the missing row is the last group
    y = X[:, 0]
    by = np.r_[np.nan, X[1:, 2]]
    with pytest.warns(UserWarning, match="by has 1 missing values"):
        table = jaximp.average_loss(model, X, y, by=by, by_size=3)
    assert pd.isna(table.index[-1]) and len(table) == 4
    np.testing.assert_allclose(table["y"].iloc[-1], (y[0] - model(X[:1])[0]) ** 2, rtol=1e-5)
