"""Break-down attributions against a float64 NumPy loop written from iBreakDown's and dalex's
definitions: per row, the mean prediction over the data after fixing the features at the
row's values one at a time, in the order of their effects alone."""

import numpy as np
import pandas as pd
import pytest

import jaximp


def reference(f, rows, data, weights=None, ordering="abs", order=None, players=None):
    """Attributions (n, p, o), orders (n, p) and cumulative means (n, p + 1, o); ``players``:
    the columns of each feature (default one each)."""
    players = [[j] for j in range(rows.shape[1])] if players is None else players
    p = len(players)
    weights = np.ones(len(data)) if weights is None else weights
    values, orders, paths = [], [], []
    for x in rows:
        def v(fixed):
            columns = [c for j in fixed for c in players[j]]
            changed = data.copy()
            changed[:, columns] = x[columns]
            return np.average(np.asarray(f(changed), np.float64).reshape(len(data), -1),
                              axis=0, weights=weights)

        base = v([])
        effects = np.array([v([j]) - base for j in range(p)])  # (p, o)
        if order is not None:
            path = list(order)
        elif ordering == "abs":  # iBreakDown: root mean square over the outputs, ties kept
            size = np.sqrt((effects ** 2).mean(axis=1))
            path = sorted(range(p), key=lambda j: -size[j])
        else:  # dalex: the signed effect, ties in reverse column order
            path = sorted(range(p), key=lambda j: (-effects[j].mean(), -j))
        cumulative = np.array([base] + [v(path[:k]) for k in range(1, p + 1)])
        value = np.empty_like(effects)
        value[path] = np.diff(cumulative, axis=0)
        values.append(value)
        orders.append(path)
        paths.append(cumulative)
    return np.array(values), np.array(orders), np.array(paths)


def model(X):
    return 2.0 * X[:, 0] * X[:, 1] - X[:, 2] ** 2 + 0.5 * X[:, 3]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(60, 4)), rng.normal(size=(5, 4))


@pytest.mark.parametrize("ordering", ["abs", "signed"])
def test_break_down_equals_the_loop(data, ordering):
    background, rows = data
    got = jaximp.break_down(model, rows, background, ordering=ordering)
    values, orders, cumulative = reference(model, rows, background, ordering=ordering)
    np.testing.assert_array_equal(got.info["order"], orders)
    np.testing.assert_allclose(got.values, values, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.info["cumulative"], cumulative, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.predictions[:, 0], model(rows), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.baseline_values, np.broadcast_to(cumulative[:, 0], (5, 1)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.values.sum(axis=1), got.predictions - got.baseline_values,
                               atol=1e-5)
    assert got.method == "break_down" and got.info["ordering"] == ordering


def test_the_orderings_differ_where_a_feature_lowers_the_prediction():
    """A large negative effect comes first by size (iBreakDown) and last by sign (dalex)."""
    background = np.random.default_rng(1).normal(size=(40, 3))
    f = lambda X: -5.0 * X[:, 0] + X[:, 1] + 0.1 * X[:, 2]  # noqa: E731
    row = np.array([[1.0, 1.0, 1.0]])
    by_size = jaximp.break_down(f, row, background).info["order"][0]
    by_sign = jaximp.break_down(f, row, background, ordering="signed").info["order"][0]
    assert list(by_size) == [0, 1, 2] and list(by_sign) == [1, 2, 0]


def test_explicit_order_weights_groups_and_outputs():
    """A given order (names or positions); a weighted background; a one-hot group fixed in
    one step; several outputs of a host model ranked by their root mean square, with output
    selection keeping that ranking over the chosen outputs only."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    background, rows = rng.normal(size=(50, 3)), rng.normal(size=(4, 3))
    weights = rng.uniform(0.5, 2.0, size=50)
    given = jaximp.break_down(model3 := (lambda X: X[:, 0] * X[:, 2] + X[:, 1]), rows,
                              background, order=["x2", 0, "x1"], background_weight=weights)
    values, orders, _ = reference(model3, rows, background, weights, order=[2, 0, 1])
    np.testing.assert_allclose(given.values, values, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(given.info["order"], orders)
    assert given.info["ordering"] == "given"

    y = np.digitize(background[:, 0] + background[:, 1], [-0.5, 0.5])
    classifier = LogisticRegression().fit(background, y)
    got = jaximp.break_down(classifier, rows, background)
    values, orders, _ = reference(classifier.predict_proba, rows, background)
    np.testing.assert_array_equal(got.info["order"], orders)
    np.testing.assert_allclose(got.values, values, rtol=1e-10, atol=1e-12)
    assert got.output_names == ("0", "1", "2")
    one = jaximp.break_down(classifier, rows, background, output=2)
    values, orders, _ = reference(lambda X: classifier.predict_proba(X)[:, 2], rows, background)
    np.testing.assert_array_equal(one.info["order"], orders)
    np.testing.assert_allclose(one.values, values, rtol=1e-10, atol=1e-12)

    frame = pd.DataFrame(background, columns=["a", "b", "c"]).assign(
        color=np.where(background[:, 0] > 0, "red", "blue"))
    onehot = pd.get_dummies(frame, columns=["color"], dtype=float)
    f = lambda X: X[:, 0] + 3.0 * X[:, 3] * X[:, 1]  # noqa: E731  (color_blue x b)
    grouped = jaximp.break_down(f, onehot.iloc[:3], onehot,
                                groups={"color": ["color_blue", "color_red"]})
    assert grouped.feature_names == ("a", "b", "c", "color")
    values, orders, _ = reference(f, onehot.to_numpy()[:3], onehot.to_numpy(),
                                  players=[[0], [1], [2], [3, 4]])
    np.testing.assert_allclose(grouped.values, values, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(grouped.info["order"], orders)


def test_one_and_two_features_and_bad_orders():
    background = np.random.default_rng(3).normal(size=(30, 2))
    f = lambda X: X[:, 0] * X[:, 1]  # noqa: E731
    two = jaximp.break_down(f, background[:3], background)
    values, orders, _ = reference(f, background[:3], background)
    np.testing.assert_allclose(two.values, values, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(two.info["order"], orders)
    one = jaximp.break_down(lambda X: 2.0 * X[:, 0], background[:2, :1], background[:, :1])
    np.testing.assert_allclose(one.values[:, 0, 0],
                               2.0 * (background[:2, 0] - background[:, 0].mean()), atol=1e-5)
    for order, words in ((["x0"], "missing \\['x1'\\]"), (["x0", "x0", "x1"], "repeated"),
                         (["x0", "zz"], "'zz' is neither"), ([0, 5], "5 is neither")):
        with pytest.raises(ValueError, match=words):
            jaximp.break_down(f, background[:2], background, order=order)
    with pytest.raises(ValueError, match="ordering must be one of"):
        jaximp.break_down(f, background[:2], background, ordering="abs_signed")


def test_waterfall_plots_draw_each_step_from_the_baseline():
    """Break-down steps in their order, Shapley values largest first, from the baseline to the
    prediction; more steps than max_steps are one bar; attributions without a baseline are
    refused."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    background = np.random.default_rng(4).normal(size=(40, 4))
    bd = jaximp.break_down(model, background[:2], background)
    ax = bd.plot("waterfall", row=1)
    order = bd.info["order"][1]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[:-1] == [f"x{j} = {background[1, j]:.4g}" for j in order]
    assert labels[-1] == f"prediction {bd.predictions[1, 0]:.4g}"
    np.testing.assert_allclose([bar.get_x() for bar in ax.patches],
                               bd.info["cumulative"][1, :-1, 0], rtol=1e-6)
    np.testing.assert_allclose([bar.get_width() for bar in ax.patches],
                               bd.values[1, order, 0], rtol=1e-6)
    lumped = bd.plot("waterfall", max_steps=2)
    assert [t.get_text() for t in lumped.get_yticklabels()][1] == "3 other features"
    assert len(lumped.patches) == 2
    sv = jaximp.shapley_values(model, background[:2], background)
    ax = sv.plot("waterfall")
    widths = [bar.get_width() for bar in ax.patches]
    np.testing.assert_allclose(np.abs(widths), np.sort(np.abs(sv.values[0, :, 0]))[::-1])
    assert ax.patches[0].get_x() == pytest.approx(sv.base_values[0])
    with pytest.raises(ValueError, match="saliency attributions have none"):
        jaximp.saliency(model, background[:2]).plot("waterfall")
    plt.close("all")


def test_waterfall_labels_name_a_text_features_level():
    """The codes of a text column index the explained rows' own levels (one row: one level);
    the labels show the level, as dalex's 'color = red', and a row out of range is refused."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"color": rng.choice(["blue", "green", "red"], 40),
                          "z": rng.normal(size=40)})

    class Host:
        def predict(self, X):
            return (X["color"] == "red").to_numpy() * 2.0 + X["z"].to_numpy()

    red = frame.iloc[[int(np.flatnonzero(frame["color"] == "red")[0])]]
    for result in (jaximp.break_down(Host(), red, frame),
                   jaximp.shapley_values(Host(), red, frame)):
        labels = [t.get_text() for t in result.plot("waterfall").get_yticklabels()]
        assert "color = red" in labels
        with pytest.raises(ValueError, match="row must be the index of an explained row"):
            result.plot("waterfall", row=3)
    sv = jaximp.shapley_values(Host(), frame.iloc[:6], frame)
    table = sv.to_frame().query("feature == 'color'")
    assert table["feature_level"].tolist() == frame["color"].iloc[:6].tolist()
    ticks = sv.plot("dependence", feature="color").get_xticklabels()
    assert [t.get_text() for t in ticks] == list(sv.info.levels["color"])
    # an integer column marked categorical holds its own values, not codes of its levels
    codes = np.column_stack([rng.integers(3, 8, 40), rng.normal(size=40)])
    integer = jaximp.break_down(lambda A: A[:, 0] + A[:, 1], codes[:1], codes, categorical=[0])
    assert integer.info["levels"] is None
    labels = [t.get_text() for t in integer.plot("waterfall").get_yticklabels()]
    assert f"x0 = {codes[0, 0]:.4g}" in labels
    plt.close("all")
