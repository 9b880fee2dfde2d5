"""A binary classifier's default output is its positive class (scikit-learn's ``classes_[1]``),
as scikit-learn's ``partial_dependence``, shap and DALEX report; ``output=0`` still gives
class 0 (R's pdp and vip ``which.class = 1``). Models not known to score two classes (a
regressor, a multiclass classifier, a JAX function with two outputs) keep the first output.

References are float64 NumPy computations on the model's own ``predict_proba`` /
``predict``, and scikit-learn's ``partial_dependence``."""

from __future__ import annotations

import dataclasses
import json
import pickle

import jax.numpy as jnp
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.inspection import partial_dependence as sklearn_partial_dependence
from sklearn.linear_model import LinearRegression, LogisticRegression

import jaximp
from jaximp.data import PositiveClass, default_output, output_index
from jaximp.results import FeatureImportance

matplotlib.use("Agg")  # figures are read, never shown

GRID = 8


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def cancer():
    """LogisticRegression on the first 5 columns and 200 rows of the breast cancer data."""
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:200, :5], y[:200]
    model = LogisticRegression(max_iter=10_000).fit(X, y)
    return model, X, y


def pd_reference(predict, X, column, grid, output):
    """Mean over the rows of ``predict(X)[:, output]`` with ``column`` set to each grid
    value, in float64."""
    curve = []
    for value in grid:
        modified = np.array(X, dtype=np.float64, copy=True)
        modified[:, column] = value
        curve.append(np.asarray(predict(modified), np.float64)[:, output].mean())
    return np.array(curve)


def drawn_line(ax):
    """The y values of the one line a PD plot without ICE draws."""
    (line,) = [line for line in ax.lines if len(line.get_ydata()) > 2]
    return np.asarray(line.get_ydata(), np.float64)


def test_binary_classifier_names_its_second_output_the_positive_class(cancer):
    model, X, _ = cancer
    predictor = jaximp.as_predictor(model, n_features=X.shape[1])
    assert predictor.output_names == ("0", "1")
    assert isinstance(predictor.output_names[1], PositiveClass)
    assert not isinstance(predictor.output_names[0], PositiveClass)
    assert predictor.positive_output == 1
    assert default_output(predictor.output_names) == 1
    assert output_index(predictor.output_names, 0) == 0  # explicit class 0 still works


def test_pd_plot_draws_the_positive_class_and_output_0_class_0(cancer):
    model, X, _ = cancer
    pd_x0 = jaximp.partial_dependence(model, X, 0, grid_resolution=GRID)
    grid = np.asarray(pd_x0.grid_values[0], np.float64)
    positive = pd_reference(model.predict_proba, X, 0, grid, 1)
    negative = pd_reference(model.predict_proba, X, 0, grid, 0)
    assert np.ptp(positive) > 0.05  # the two classes' curves are told apart

    ax = pd_x0.plot(ice=False)
    np.testing.assert_allclose(drawn_line(ax), positive, rtol=1e-6, atol=1e-9)
    assert ax.get_ylabel().endswith("(1)")
    ax0 = pd_x0.plot(output=0, ice=False)
    np.testing.assert_allclose(drawn_line(ax0), negative, rtol=1e-6, atol=1e-9)


def test_default_output_matches_sklearn_partial_dependence(cancer):
    """scikit-learn's PD of a binary classifier is the positive class's probability."""
    model, X, _ = cancer
    reference = sklearn_partial_dependence(model, X, [0], grid_resolution=GRID,
                                           kind="average")
    ours = jaximp.partial_dependence(model, X, 0, grid_resolution=GRID)
    np.testing.assert_allclose(ours.grid_values[0], reference["grid_values"][0])
    j = output_index(ours.output_names, None)
    np.testing.assert_allclose(ours.average[:, j], reference["average"][0], rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(drawn_line(ours.plot(ice=False)), reference["average"][0],
                               rtol=1e-6, atol=1e-9)


def test_result_defaults_read_the_positive_class(cancer):
    """``top`` and ``plot`` pick the positive class: shown on results whose two
    columns rank features differently."""
    model, X, _ = cancer
    names = jaximp.as_predictor(model, n_features=X.shape[1]).output_names
    result = FeatureImportance("demo", ("a", "b"), names, np.array([[1.0, 2.0], [3.0, 0.0]]))
    assert result.top(1) == ["a"]  # class 1: a=2 > b=0
    assert result.top(1, output=0) == ["b"]  # class 0: b=3 > a=1
    assert result.top(1, output="0") == ["b"]
    ax = result.plot()
    assert ax.get_title() == "demo importance, output 1"
    np.testing.assert_allclose(sorted(bar.get_width() for bar in ax.patches), [0.0, 2.0])

    pds = jaximp.PartialDependences({
        name: jaximp.partial_dependence(model, X, k, grid_resolution=GRID)
        for k, name in enumerate(["x0", "x1", "x2"])})
    spread = {name: np.std(pd_reference(model.predict_proba, X, k, np.asarray(
        pds[name].grid_values[0], np.float64), 1), ddof=1)
        for k, name in enumerate(["x0", "x1", "x2"])}
    assert pds.top(3) == sorted(spread, key=lambda name: -spread[name])


def test_explain_report_shows_the_positive_class(cancer, tmp_path):
    model, X, y = cancer
    explanation = jaximp.explain(model, X, y, methods=["pd_importance", "permutation"],
                                 grid_resolution=GRID, progress=False)
    assert explanation.output_names == ("0", "1")
    importance = explanation["pd_importance"]
    table = explanation.importances()
    np.testing.assert_allclose(table["pd_importance"], importance.importances_mean[:, 1])
    # the report's PD figure is the positive class's PD, computed independently
    figure = explanation.partial_dependence.plot(ice=False)
    for k, ax in enumerate(figure.axes[:X.shape[1]]):
        grid = np.linspace(X[:, k].min(), X[:, k].max(), GRID)
        np.testing.assert_allclose(
            drawn_line(ax), pd_reference(model.predict_proba, X, k, grid, 1),
            rtol=1e-6, atol=1e-9)
    from jaximp import write_report

    out = write_report(explanation, tmp_path / "report")
    markdown = (out / "report.md").read_text()
    assert "output 1, the positive class" in markdown
    document = json.loads((out / "results.json").read_text())
    assert {row["output"] for row in document["results"]} >= {"0", "1"}


def test_regressor_and_multiclass_keep_the_first_output():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    targets = np.column_stack([X @ [1.0, -2.0, 0.5], X @ [-1.0, 0.0, 3.0]])
    regressor = LinearRegression().fit(X, targets)
    predictor = jaximp.as_predictor(regressor, n_features=3)
    assert predictor.positive_output is None
    pd_reg = jaximp.partial_dependence(regressor, X, 0, grid_resolution=GRID)
    grid = np.asarray(pd_reg.grid_values[0], np.float64)
    np.testing.assert_allclose(drawn_line(pd_reg.plot(ice=False)),
                               pd_reference(regressor.predict, X, 0, grid, 0), rtol=1e-6,
                               atol=1e-9)

    Xi, yi = load_iris(return_X_y=True)
    multiclass = LogisticRegression(max_iter=5_000).fit(Xi, yi)
    predictor = jaximp.as_predictor(multiclass, n_features=4)
    assert predictor.positive_output is None and default_output(predictor.output_names) == 0
    pd_iris = jaximp.partial_dependence(multiclass, Xi, 2, grid_resolution=GRID)
    grid = np.asarray(pd_iris.grid_values[0], np.float64)
    np.testing.assert_allclose(drawn_line(pd_iris.plot(ice=False)),
                               pd_reference(multiclass.predict_proba, Xi, 2, grid, 0),
                               rtol=1e-6, atol=1e-9)


def test_jax_model_with_two_outputs_keeps_the_first_unless_marked():
    """Two logits from a JAX function are not known to be a binary classifier's; marking
    the predictor's classes makes the second output the default."""
    def two_logits(X):
        return jnp.stack([-X[:, 0], X[:, 0] + X[:, 1]], axis=1)

    predictor = jaximp.as_predictor(two_logits, n_features=2)
    assert predictor.output_names == ("y0", "y1") and predictor.positive_output is None
    marked = dataclasses.replace(predictor, classes=(0, 1))
    assert marked.positive_output == 1
    X = np.random.default_rng(1).uniform(size=(40, 2))
    plain = jaximp.partial_dependence(predictor, X, 0, grid_resolution=GRID)
    chosen = jaximp.partial_dependence(marked, X, 0, grid_resolution=GRID)
    grid = np.asarray(plain.grid_values[0], np.float64)

    def numpy_logits(A):
        return np.column_stack([-A[:, 0], A[:, 0] + A[:, 1]])

    np.testing.assert_allclose(drawn_line(plain.plot(ice=False)),
                               pd_reference(numpy_logits, X, 0, grid, 0), rtol=1e-5)
    np.testing.assert_allclose(drawn_line(chosen.plot(ice=False)),
                               pd_reference(numpy_logits, X, 0, grid, 1), rtol=1e-5)


def test_ale_plot_defaults_to_the_positive_class(cancer):
    model, X, _ = cancer
    effect = jaximp.ale(model, X, 0, bins=5)
    ax = effect.plot()
    (line,) = [line for line in ax.lines if line.get_label() == "ALE"]
    np.testing.assert_allclose(line.get_ydata(), effect.centred[:, 1])
    assert ax.get_ylabel() == "ALE (1)"
    assert np.ptp(effect.centred[:, 1]) > 0  # class 0's curve is the mirror image
    np.testing.assert_allclose(effect.centred[:, 0], -effect.centred[:, 1], atol=1e-9)


def test_positive_class_survives_selection_pickling_and_json(cancer):
    model, X, _ = cancer
    pd_x0 = jaximp.partial_dependence(model, X, 0, grid_resolution=GRID, output=["1", "0"])
    assert pd_x0.output_names == ("1", "0")
    assert output_index(pd_x0.output_names, None) == 0  # the positive class, moved first
    restored = pickle.loads(pickle.dumps(pd_x0))
    assert isinstance(restored.output_names[0], PositiveClass)
    assert json.dumps(list(restored.output_names)) == '["1", "0"]'
    assert repr(restored.output_names[0]) == "'1'"


def test_trends_compare_the_positive_class_with_the_transversal_rates(cancer):
    """The Shapley trend of a logistic model's positive class has the sign of its
    coefficient (class 0's has the opposite sign)."""
    model, X, y = cancer
    result = jaximp.trends(model, X, y, methods=["shapley_pearson"], background=X[:40])
    estimator = result.estimators.index("shapley_pearson")
    signs = np.sign(result.values[estimator, :, 0])
    expected = np.sign(model.coef_[0])
    strong = np.abs(model.coef_[0] * X.std(axis=0)) > 1e-3
    np.testing.assert_array_equal(signs[strong], expected[strong])
    class_0 = jaximp.trends(model, X, y, methods=["shapley_pearson"], background=X[:40],
                            output=0)
    np.testing.assert_array_equal(np.sign(class_0.values[estimator, :, 0])[strong],
                                  -expected[strong])


def test_tree_models_mark_the_positive_class_in_every_path(cancer):
    """A forest classifier's JAX trees, TreeSHAP and the host path agree on the default."""
    from sklearn.ensemble import RandomForestClassifier

    _, X, y = cancer
    forest = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    assert jaximp.tree_predictor(forest).positive_output == 1
    assert jaximp.as_predictor(forest, n_features=X.shape[1]).positive_output == 1
    values = jaximp.tree_shap(forest, X[:20])
    assert output_index(values.output_names, None) == 1
    # the default summary plot's x label names the positive class; its values are class 1's
    ax = values.plot()
    assert ax.get_xlabel().startswith("Shapley value (1)")
    np.testing.assert_allclose(values.values[..., 1], -values.values[..., 0], atol=1e-6)
