"""Transversal rates (ATR, RTR) of tree models: closed-form signs on monotone targets, a float64
NumPy loop over scikit-learn's ``tree_`` arrays, and a reduced noise-mixing experiment."""

import itertools

import jax
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.tree import DecisionTreeRegressor

import jaximp
from jaximp.methods._tree_stats import TransversalRates, transversal_rates


def _grid_data():
    """A full product grid: every node of a tree grown without bootstrap is a sub-grid, so the
    other features are distributed alike in both children of any split."""
    levels = np.linspace(0.0, 1.0, 6)
    X = np.array(list(itertools.product(levels, levels, levels)))
    y = 1.0 + X[:, 0] + np.exp(X[:, 1]) + X[:, 0] * X[:, 2] + 0.5 * X[:, 2] ** 2
    return X, y


MONOTONE_MODELS = {
    "tree": lambda: DecisionTreeRegressor(max_depth=6, random_state=0),
    "rf": lambda: RandomForestRegressor(n_estimators=10, bootstrap=False, max_features=2,
                                        max_depth=6, random_state=0),
    "et": lambda: ExtraTreesRegressor(n_estimators=10, max_depth=6, random_state=0),
}


@pytest.mark.parametrize("name", sorted(MONOTONE_MODELS))
def test_monotone_target_gives_atr_plus_minus_one(name):
    X, y = _grid_data()
    for direction in (1.0, -1.0):
        rates = transversal_rates(MONOTONE_MODELS[name]().fit(X, direction * y))
        assert isinstance(rates, TransversalRates)
        assert rates.atr.shape == rates.rtr.shape == rates.n_splits.shape == (3,)
        assert np.all(rates.n_splits > 0)
        np.testing.assert_array_equal(rates.atr, direction * np.ones(3))
        # y (and -y) never changes sign, so every split's relative difference has the sign
        assert np.all(np.sign(rates.rtr) == direction)
        assert np.all(np.sign(rates.rtr_mean) == direction)


def _node_means(tree, column, leaf_averages):
    """Float64 mean of each node: its value, or the weighted mean of the leaves below it."""
    value = tree.value[:, :, :].reshape(tree.node_count, -1)
    if value.shape[1] > 1 or tree.n_classes[0] > 1:  # classifier: fractions of the class
        value = value / value.sum(axis=1, keepdims=True)
    value = value[:, column].astype(np.float64)
    if not leaf_averages:
        return value
    weight = tree.weighted_n_node_samples
    means = value.copy()

    def weighted_sum(node):
        left, right = tree.children_left[node], tree.children_right[node]
        if left == -1:
            return weight[node] * value[node]
        total = weighted_sum(left) + weighted_sum(right)
        means[node] = total / weight[node]
        return total

    weighted_sum(0)
    return means


def _reference(trees, p, column=0, leaf_averages=False, sign=1.0):
    """ATR and RTR by a plain loop over every split node of every tree."""
    signs, relative, counts = np.zeros(p), np.zeros(p), np.zeros(p, int)
    for tree in trees:
        means = sign * _node_means(tree, column, leaf_averages)
        for node in range(tree.node_count):
            left, right = tree.children_left[node], tree.children_right[node]
            if left == -1:
                continue
            f = tree.feature[node]
            low, high = means[left], means[right]
            counts[f] += 1
            signs[f] += int(low < high) - int(low > high)
            if high != low:
                relative[f] += 2.0 * (high - low) / abs(low + high)
    with np.errstate(invalid="ignore"):
        return signs / counts, relative, counts


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(160, 4))
    y = 3.0 + X[:, 0] - np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=160)
    return X, y


def test_forests_equal_numpy_loop(data):
    """Node values are compared in float64 whatever the float mode, so the signs are exact,
    on a target far from 0 too (float32 values near 2e5 moved the ATR by 1%)."""
    X, y = data
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    for offset in (0.0, 2e5):
        rf = RandomForestRegressor(n_estimators=8, max_depth=5, random_state=0).fit(X, y + offset)
        got = transversal_rates(rf)
        atr, rtr, n = _reference([t.tree_ for t in rf.estimators_], 4)
        np.testing.assert_array_equal(got.n_splits, n)
        np.testing.assert_allclose(got.atr, atr, rtol=1e-12)
        np.testing.assert_allclose(got.rtr, rtr, rtol=1e-9)
    et = ExtraTreesClassifier(n_estimators=6, max_depth=4, random_state=0).fit(X, labels)
    for output, column in ((2, 2), ("1", 1)):
        got = transversal_rates(et, output=output)
        atr, rtr, n = _reference([t.tree_ for t in et.estimators_], 4, column)
        assert got.output_name == str(column)
        np.testing.assert_allclose(got.atr, atr, rtol=1e-12)
        np.testing.assert_allclose(got.rtr, rtr, rtol=2e-5)


@pytest.mark.parametrize("x64", [False, True])
def test_gradient_boosting_equals_numpy_loop_of_leaf_averages(data, x64):
    X, y = data
    rtol = 1e-10 if x64 else 1e-4
    with jax.enable_x64(x64):
        # huber: the leaves hold line-search values, not the node means of the residuals
        gb = GradientBoostingRegressor(loss="huber", n_estimators=10, max_depth=3,
                                       random_state=0).fit(X, y)
        got = transversal_rates(gb)
        atr, rtr, _ = _reference([t.tree_ for t in gb.estimators_[:, 0]], 4, leaf_averages=True)
        assert got.info["node_means"] == "leaf averages"
        np.testing.assert_allclose(got.atr, atr, rtol=1e-12)
        np.testing.assert_allclose(got.rtr, rtr, rtol=rtol)
        labels = (y > np.median(y)).astype(int)
        gbc = GradientBoostingClassifier(n_estimators=8, max_depth=2, random_state=0)
        gbc.fit(X, labels)
        trees = [t.tree_ for t in gbc.estimators_[:, 0]]
        pos, neg = transversal_rates(gbc), transversal_rates(gbc, output=0)
        atr, rtr, _ = _reference(trees, 4, leaf_averages=True)
        np.testing.assert_allclose(pos.atr, atr, rtol=1e-12)
        np.testing.assert_allclose(pos.rtr, rtr, rtol=rtol)
        np.testing.assert_allclose(neg.atr, -atr, rtol=1e-12)
        np.testing.assert_allclose(neg.rtr, -rtr, rtol=rtol)


def test_squared_error_node_values_are_leaf_averages(data):
    """For squared error a node's value is the weighted mean of its leaves: both readings of
    'the mean target of a child' agree."""
    X, y = data
    tree = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y).tree_
    np.testing.assert_allclose(_node_means(tree, 0, True), _node_means(tree, 0, False),
                               rtol=1e-12)


def test_result_frame_repr_plot_and_names(data):
    import matplotlib

    matplotlib.use("Agg")
    X, y = data
    df = pd.DataFrame(X, columns=list("abcd"))
    rf = RandomForestRegressor(n_estimators=4, max_depth=2, random_state=0).fit(df, y)
    rates = transversal_rates(rf)
    frame = rates.to_frame()
    assert list(frame.columns) == ["feature", "atr", "rtr", "rtr_mean", "n_splits"]
    assert list(frame["feature"]) == list("abcd")
    unused = rates.n_splits == 0
    assert np.all(np.isnan(rates.atr[unused])) and np.all(rates.rtr[unused] == 0)
    used = ~unused
    np.testing.assert_allclose(frame["rtr_mean"][used], rates.rtr[used] / rates.n_splits[used])
    assert repr(rates).startswith("TransversalRates(RandomForestRegressor, output 'y', 4 ")
    ax = rates.plot()
    assert len(ax.patches) == 4
    assert transversal_rates(rf, feature_names=list("wxyz")).feature_names == tuple("wxyz")
    with pytest.raises(ValueError, match=r"rate must be one of \('atr', 'rtr', 'rtr_mean'\)"):
        rates.plot("slope")


def test_output_validation(data):
    X, y = data
    labels = np.array(["lo", "mid", "hi"])[np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))]
    rf = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, labels)
    with pytest.raises(ValueError, match=r"output must name the compared output of a model "
                                         r"with 3 outputs .*got None. Fix: pass output="):
        transversal_rates(rf)
    assert transversal_rates(rf, output="mid").output_name == "mid"
    with pytest.raises(ValueError, match=r"output must be one of"):
        transversal_rates(rf, output="middle")
    with pytest.raises(TypeError, match=r"output must be an int index or a name or None; got "
                                        r"\['lo', 'hi'\]. Each class has its own trend"):
        transversal_rates(rf, output=["lo", "hi"])
    with pytest.raises(TypeError, match=r"got HistGradientBoostingRegressor"):
        transversal_rates(HistGradientBoostingRegressor(max_iter=3).fit(X, y))


def test_syn1_noise_mixing_degrades_the_trend():
    """Reduced SYN1 (Gerstorfer et al. 2023): base data with 3 informative features of
    increasing trend, mixed with growing shares of standardized noise."""
    from sklearn.datasets import make_regression

    def standardize(A):
        return (A - A.mean(axis=0)) / A.std(axis=0)

    base, y = make_regression(n_samples=200, n_features=6, n_informative=3, shuffle=False,
                              random_state=0)
    base = standardize(base)
    noise = standardize(np.random.default_rng(1).normal(size=base.shape))
    atr = []
    for w in (0.0, 0.6, 0.95):
        forest = RandomForestRegressor(n_estimators=10, min_samples_leaf=5, random_state=0)
        atr.append(transversal_rates(forest.fit((1 - w) * base + w * noise, y)).atr)
    atr = np.array(atr)  # (shares, p)
    assert np.all(atr[0, :3] > 0.8)  # every informative feature: an increasing trend
    informative = atr[:, :3].mean(axis=1)
    assert informative[0] > informative[1] > informative[2]
    assert np.abs(atr[0, 3:]).mean() < informative[0] - 0.3


def test_catboost_splits_with_an_empty_child_are_not_counted(tmp_path):
    """CatBoost's oblivious trees split nodes that no training row reaches: those splits have
    no child mean and are left out, as a float64 loop over CatBoost's own JSON dump (leaf
    averages weighted by its leaf weights) leaves them out."""
    import json

    cb = pytest.importorskip("catboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))
    y = X[:, 0] - X[:, 1] + 10.0 + 0.2 * rng.normal(size=150)
    model = cb.CatBoostRegressor(iterations=10, depth=6, verbose=0, thread_count=1,
                                 random_seed=0).fit(X, y)
    model.save_model(str(tmp_path / "m.json"), format="json")
    signs, relative, counts, empty = np.zeros(3), np.zeros(3), np.zeros(3, int), 0
    for tree in json.loads((tmp_path / "m.json").read_text())["oblivious_trees"]:
        depth, values = len(tree["splits"]), np.array(tree["leaf_values"])
        weights = np.array(tree["leaf_weights"])
        for level in range(depth):  # splits[0] decides the leaf index's lowest bit
            bit = depth - 1 - level
            feature = tree["splits"][bit]["float_feature_index"]
            for prefix in range(2 ** level):
                below = [leaf for leaf in range(2 ** depth) if leaf >> (bit + 1) == prefix]
                left = [leaf for leaf in below if not (leaf >> bit) & 1]
                right = [leaf for leaf in below if (leaf >> bit) & 1]
                if weights[left].sum() == 0 or weights[right].sum() == 0:
                    empty += 1
                    continue
                low, high = (np.average(values[side], weights=weights[side])
                             for side in (left, right))
                counts[feature] += 1
                signs[feature] += np.sign(high - low)
                relative[feature] += 2 * (high - low) / abs(low + high) if high != low else 0
    assert empty > 100  # the case at hand
    rates = transversal_rates(model)
    np.testing.assert_array_equal(rates.n_splits, counts)
    np.testing.assert_allclose(rates.atr, signs / counts, rtol=1e-12)
    np.testing.assert_allclose(rates.rtr, relative, rtol=1e-5)


def test_tree_statistics_of_a_multi_output_classifier_name_their_alternative():
    from sklearn.ensemble import RandomForestClassifier

    X = np.random.default_rng(1).normal(size=(80, 3))
    Y = np.c_[X[:, 0] > 0, X[:, 1] > 0].astype(int)
    forest = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, Y)
    with pytest.raises(TypeError, match=r"multi-output classifier\). Fix: scikit-learn's "
                                        r"estimator.feature_importances_ where it has them"):
        jaximp.impurity_importance(forest)
    with pytest.raises(TypeError, match="Fix: transversal_rates of a model fitted on one"):
        transversal_rates(forest, output=0)
