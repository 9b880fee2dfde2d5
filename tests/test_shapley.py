"""Shapley values and interactions: float64 NumPy brute force, shap, sampling rate, validation."""

import importlib.util
import itertools
import math

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from conftest import python_command, random_mlp

import jaximp

from jaximp.engine import FoldedMean
from jaximp.methods._shapley import (
    ShapleyValues,
    interaction_weights,
    shapley_interactions,
    shapley_values,
    shapley_weights,
)

HAVE_SHAP = importlib.util.find_spec("shap") is not None


def as32(a):
    """Values the model sees exactly (it evaluates float32 inputs)."""
    return np.asarray(a, np.float32).astype(np.float64)


def coalition_value(f_np, x, B, w, columns):
    """Float64 v_x(S): background rows with ``columns`` set to x's, weighted mean."""
    Z = B.copy()
    Z[:, columns] = x[columns]
    return np.average(f_np(Z), axis=0, weights=w)


def brute_force(f_np, X, B, w, players):
    """Shapley values (n, p, ...) by the subset formula; players are lists of columns."""
    p = len(players)
    out = []
    for x in X:
        def v(S):
            return coalition_value(f_np, x, B, w, [c for j in S for c in players[j]])

        row = []
        for j in range(p):
            others = [k for k in range(p) if k != j]
            total = 0.0
            for s in range(p):
                weight = math.factorial(s) * math.factorial(p - s - 1) / math.factorial(p)
                for S in itertools.combinations(others, s):
                    total = total + weight * (v(S + (j,)) - v(S))
            row.append(total)
        out.append(row)
    return np.array(out)


def brute_force_interactions(f_np, X, B, w, p):
    """The pairwise Shapley interaction index I (n, p, p), 0 on the diagonal."""
    out = np.zeros((len(X), p, p))
    for i, x in enumerate(X):
        def v(S):
            return coalition_value(f_np, x, B, w, list(S))

        for j, k in itertools.permutations(range(p), 2):
            others = [q for q in range(p) if q not in (j, k)]
            for s in range(p - 1):
                weight = math.factorial(s) * math.factorial(p - s - 2) / math.factorial(p - 1)
                for S in itertools.combinations(others, s):
                    out[i, j, k] += weight * (v(S + (j, k)) - v(S + (j,)) - v(S + (k,)) + v(S))
    return out


@pytest.fixture(scope="module")
def game():
    """A two-output tanh MLP on 4 features, 5 explained rows, 12 weighted background rows."""
    rng = np.random.default_rng(0)
    f_jax, f_np, _ = random_mlp(3, sizes=(4, 8, 8, 2))
    X = as32(rng.normal(size=(5, 4)))
    B = as32(rng.normal(size=(12, 4)))
    w = rng.uniform(0.2, 3.0, size=12)
    return f_jax, f_np, X, B, w


def test_weight_matrices_closed_forms():
    for p in (1, 2, 5):
        M = shapley_weights(p)
        # phi of the "unanimity" game v(S) = 1{S = N}: 1/p each; of v(S) = |S|: 1 each
        full = np.zeros(2 ** p)
        full[-1] = 1.0
        np.testing.assert_allclose(full @ M, np.full(p, 1.0 / p), rtol=1e-14)
        sizes = np.array([bin(t).count("1") for t in range(2 ** p)], float)
        np.testing.assert_allclose(sizes @ M, np.ones(p), rtol=1e-12)
    W = interaction_weights(4)
    pair = np.array([float(t & 0b11 == 0b11) for t in range(16)])  # v(S) = 1{0, 1 in S}
    I = np.einsum("t,tjk->jk", pair, W)
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[1, 0] = 1.0
    np.testing.assert_allclose(I, expected, atol=1e-14)


def test_exact_equals_numpy_brute_force_with_weighted_background(game):
    f_jax, f_np, X, B, w = game
    sv = shapley_values(f_jax, X, B, background_weight=w)
    ref = brute_force(f_np, X, B, w, [[0], [1], [2], [3]])  # (n, p, o)
    assert isinstance(sv, ShapleyValues) and sv.method == "exact"
    assert sv.values.shape == (5, 4, 2) and sv.standard_errors is None
    np.testing.assert_allclose(sv.values, ref, atol=2e-6)
    base = np.average(f_np(B), axis=0, weights=w)
    np.testing.assert_allclose(sv.base_values, base, atol=1e-6)
    # efficiency: the values sum to f(x) - base for every row and output
    np.testing.assert_allclose(sv.values.sum(axis=1), f_np(X) - sv.base_values, atol=2e-6)
    np.testing.assert_array_equal(sv.data, X)


def test_groups_play_as_one_and_dataframe_equals_array():
    rng = np.random.default_rng(2)
    levels = rng.integers(0, 3, size=30)
    onehot = np.eye(3)[levels]
    other = as32(rng.normal(size=(30, 2)))
    A = np.c_[other[:, :1], onehot, other[:, 1:]]
    frame = pd.DataFrame(A, columns=["a", "c0", "c1", "c2", "b"])
    coef = np.array([1.0, 0.5, -1.0, 2.0, -0.7])

    def f_np(Z):
        return np.sin(Z @ coef) + Z[:, 0] * Z[:, 4]

    def f_jax(Z):
        return jnp.sin(Z @ jnp.asarray(coef, jnp.float32)) + Z[:, 0] * Z[:, 4]

    groups = {"color": ["c0", "c1", "c2"]}
    sv = shapley_values(f_jax, frame.iloc[:4], frame, groups=groups, background_size=None)
    assert sv.feature_names == ("a", "color", "b")
    ref = brute_force(f_np, A[:4], A, np.ones(30), [[0], [1, 2, 3], [4]])
    np.testing.assert_allclose(sv.values[..., 0], ref, atol=2e-6)
    np.testing.assert_array_equal(sv.data[:, 1], levels[:4])  # one-hot level index
    again = shapley_values(f_jax, A[:4], A, feature_names=list(frame.columns), groups=groups,
                           background_size=None)
    np.testing.assert_allclose(again.values, sv.values, atol=1e-7)


def test_feature_subset_keeps_other_columns_at_the_background(game):
    f_jax, f_np, X, B, w = game
    sv = shapley_values(f_jax, X, B, background_weight=w, features=["x0", "x2", "x3"])
    ref = brute_force(f_np, X, B, w, [[0], [2], [3]])
    np.testing.assert_allclose(sv.values, ref, atol=2e-6)
    joint = np.array([coalition_value(f_np, x, B, w, [0, 2, 3]) for x in X])
    np.testing.assert_allclose(sv.values.sum(axis=1), joint - sv.base_values, atol=2e-6)


_SHAP_EXACT = """
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
from conftest import random_mlp

import jaximp
import shap
data = np.load(sys.argv[2])
_, f_np, _ = random_mlp(5, sizes=(5, 16, 1))
masker = shap.maskers.Independent(data["B"], max_samples=len(data["B"]))
theirs = shap.ExactExplainer(f_np, masker)(data["X"])
np.savez(sys.argv[2], values=theirs.values, base_values=theirs.base_values)
"""


def _shap_exact(X, B, tmp_path):
    """shap's ExactExplainer on the MLP of random_mlp(5, (5, 16, 1)), in a process of its own
    with numba's JIT off: its kernels compile for about a minute on first use, and run in
    milliseconds as plain Python at this size (turning the JIT off inside this process breaks
    shap once another test has imported it)."""
    import os
    import pathlib
    import subprocess

    path = tmp_path / "shap_exact.npz"
    np.savez(path, X=X, B=B)
    subprocess.run([*python_command(), "-c", _SHAP_EXACT, str(pathlib.Path(__file__).parent),
                    str(path)], check=True, env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
                   timeout=300)
    return np.load(path)


@pytest.mark.skipif(not HAVE_SHAP, reason="shap is not installed")
def test_exact_equals_shap_exact_explainer(tmp_path):
    import shap

    rng = np.random.default_rng(4)
    f_jax, f_np, _ = random_mlp(5, sizes=(5, 16, 1))
    X = as32(rng.normal(size=(3, 5)))
    B = as32(rng.normal(size=(15, 5)))
    theirs = _shap_exact(X, B, tmp_path)
    ours = shapley_values(f_jax, X, B)
    np.testing.assert_allclose(ours.values[..., 0], theirs["values"], atol=2e-6)
    np.testing.assert_allclose(ours.base_values[0], theirs["base_values"][0], atol=1e-6)
    # as a shap.Explanation: the same layout as shap's own (values (n, p), base values (n,))
    mine = ours.to_shap()
    assert isinstance(mine, shap.Explanation)
    assert mine.values.shape == theirs["values"].shape == (3, 5)
    np.testing.assert_allclose(mine.values, theirs["values"], atol=2e-6)
    np.testing.assert_allclose(mine.base_values, theirs["base_values"], atol=1e-6)
    np.testing.assert_array_equal(mine.data, X)
    assert list(mine.feature_names) == [f"x{j}" for j in range(5)]
    two = shapley_values(lambda Z: jnp.stack([f_jax(Z), 2 * f_jax(Z)], axis=1), X, B)
    both = two.to_shap()
    assert both.values.shape == (3, 5, 2) and both.base_values.shape == (3, 2)
    assert list(both.output_names) == list(two.output_names) == ["y0", "y1"]
    assert two.to_shap(output="y1").output_names == "y1"
    np.testing.assert_allclose(two.to_shap(output=1).values, 2 * mine.values, rtol=1e-5,
                               atol=1e-6)


def three_way(Z):
    """A model with three-way interactions: antithetic pairs are exact for models with only
    main effects and pairwise interactions, so a sampling test needs more."""
    return Z[:, 0] * Z[:, 1] * Z[:, 2] + jnp.sin(Z[:, 3] * Z[:, 4] * Z[:, 5] + Z[:, 0]) \
        + jnp.maximum(Z[:, 1] + Z[:, 3] + Z[:, 5], 0.0)


def test_sampling_is_unbiased_efficient_and_shrinks_like_one_over_sqrt_samples():
    rng = np.random.default_rng(5)
    X, B = rng.normal(size=(16, 6)), rng.normal(size=(20, 6))
    f = three_way
    exact = shapley_values(f, X, B).values
    counts = [4, 16, 64]
    errors, reported, z = [], [], []
    for m in counts:
        sv = shapley_values(f, X, B, method="permutation", n_permutations=m, random_state=1)
        assert sv.method == "permutation" and sv.info["n_permutations"] == m
        # efficiency holds for every sampled order, so for the estimate
        np.testing.assert_allclose(sv.values.sum(axis=1), exact.sum(axis=1), atol=2e-5)
        errors.append(np.sqrt(np.mean((sv.values - exact) ** 2)))
        reported.append(np.sqrt(np.mean(sv.standard_errors ** 2)))
        noisy = sv.standard_errors > 1e-3  # features in no three-way term are sampled exactly
        z.append(((sv.values - exact)[noisy] / sv.standard_errors[noisy]))
    slope = np.polyfit(np.log(counts), np.log(errors), 1)[0]
    assert -0.8 < slope < -0.3, (slope, errors)
    # the standard errors describe the actual error
    ratio = np.array(errors) / np.array(reported)
    assert np.all((ratio > 0.5) & (ratio < 2.0)), ratio
    # unbiased: the standardized errors average to about 0 (t statistics, heavy-ish tails)
    z = np.concatenate(z)
    assert abs(z.mean()) < 5 * z.std() / np.sqrt(z.size), (z.mean(), z.std(), z.size)


def test_interactions_equal_brute_force_and_sum_to_shapley_values(game):
    f_jax, f_np, X, B, w = game
    si = shapley_interactions(f_jax, X[:3], B, background_weight=w)
    assert si.values.shape == (3, 4, 4, 2)
    for k in range(2):
        ref = brute_force_interactions(lambda Z: f_np(Z)[:, k], X[:3], B, w, 4)
        off = ~np.eye(4, dtype=bool)
        np.testing.assert_allclose(si.values[..., k][:, off], 0.5 * ref[:, off], atol=2e-6)
    np.testing.assert_allclose(si.values, np.swapaxes(si.values, 1, 2), atol=1e-12)
    phi = brute_force(f_np, X[:3], B, w, [[0], [1], [2], [3]])
    np.testing.assert_allclose(si.values.sum(axis=2), phi, atol=2e-6)
    np.testing.assert_allclose(si.shapley_values().values, phi, atol=2e-6)


def test_the_device_fold_of_an_accelerator_equals_brute_force_and_the_host_fold(
        game, monkeypatch):
    """On an accelerator the exact values' coalition values are weighted on the device
    (FoldedMean); the CPU weighs them on the host. Forced here on the CPU: both give the
    float64 brute force, in row groups of a small budget and on an Explainer too."""
    from jaximp.data import Recent
    from jaximp.methods import _setup, _shapley

    f_jax, f_np, X, B, w = game
    on_host = [shapley_values(f_jax, X, B, background_weight=w),
               shapley_interactions(f_jax, X[:3], B, background_weight=w),
               shapley_values(f_jax, X, B)]
    monkeypatch.setattr(_shapley, "_folds_on_device", lambda predictor: True)
    # the plain calls above were set up with the host's fold: set up anew
    monkeypatch.setattr(_setup, "_PLAIN_CALLS", Recent())
    folds = []
    finalize = FoldedMean.finalize
    monkeypatch.setattr(FoldedMean, "finalize",
                        lambda self, total: folds.append(total.shape) or finalize(self, total))
    rows = np.random.default_rng(4).normal(size=(250, 4))
    for budget in (None, 1 << 16):  # 1 << 16: 102 explained rows per group
        sv = shapley_values(f_jax, X, B, background_weight=w, memory_budget=budget)
        np.testing.assert_allclose(sv.values, brute_force(f_np, X, B, w, [[0], [1], [2], [3]]),
                                   atol=2e-6)
        np.testing.assert_allclose(sv.values, on_host[0].values, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(sv.base_values, on_host[0].base_values)
        si = shapley_interactions(f_jax, X[:3], B, background_weight=w, memory_budget=budget)
        np.testing.assert_allclose(si.values, on_host[1].values, rtol=1e-12, atol=1e-14)
        many = shapley_values(f_jax, rows, B, memory_budget=budget)
        assert many.values.shape == (250, 4, 2)
        np.testing.assert_allclose(many.values.sum(axis=1),
                                   f_np(as32(rows)) - many.base_values, atol=2e-6)
    explainer = jaximp.Explainer(f_jax, X, background=B)
    for _ in range(2):  # the kept set-up and plan
        np.testing.assert_allclose(explainer.shapley_values().values, on_host[2].values,
                                   rtol=1e-12, atol=1e-14)
    # every call folded on the device: (rows, 1, p [+ p * p] + 1, o) per group of rows
    assert folds == [(5, 1, 5, 2), (3, 1, 21, 2), (250, 1, 5, 2), (5, 1, 5, 2), (3, 1, 21, 2),
                     (102, 1, 5, 2), (102, 1, 5, 2), (46, 1, 5, 2), (5, 1, 5, 2), (5, 1, 5, 2)]


def test_interactions_vanish_for_an_additive_model():
    rng = np.random.default_rng(6)
    X, B = rng.normal(size=(4, 5)), rng.normal(size=(10, 5))
    si = shapley_interactions(lambda Z: jnp.sin(Z[:, 0]) + Z[:, 1] ** 2 + jnp.exp(Z[:, 2] / 3)
                              + Z[:, 3] - Z[:, 4], X, B)
    off = ~np.eye(5, dtype=bool)
    assert np.abs(si.values[:, off]).max() < 1e-6
    table = si.interaction().matrix()
    assert np.nanmax(table.to_numpy()) < 1e-6


def test_scikit_learn_model_linear_closed_form():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 3))
    model = LinearRegression().fit(X, X @ np.array([1.5, -2.0, 0.5]) + 0.1 * rng.normal(size=60))
    w = rng.uniform(0.5, 2.0, size=60)
    sv = shapley_values(model, X[:6], X, background_weight=w, background_size=None)
    # linear model, independent background: phi_j = beta_j (x_j - weighted mean of b_j)
    ref = model.coef_ * (X[:6] - np.average(X, axis=0, weights=w))
    np.testing.assert_allclose(sv.values[..., 0], ref, atol=1e-9)
    np.testing.assert_allclose(sv.base_values[0], np.average(model.predict(X), weights=w),
                               atol=1e-9)


def test_default_background_is_a_keyed_subsample_of_x_with_its_weights():
    rng = np.random.default_rng(8)
    X = as32(rng.normal(size=(40, 3)))
    w = rng.uniform(0.5, 2.0, size=40)

    def f(Z):
        return Z[:, 0] * Z[:, 1] + Z[:, 2]

    sv = shapley_values(f, X[:4], background_size=10, random_state=3)  # X[:4] has 4 rows
    assert sv.info["background_rows"] is None and sv.info["n_background"] == 4
    sv = shapley_values(f, X, sample_weight=w, background_size=10, random_state=3)
    rows = sv.info["background_rows"]
    assert rows.shape == (10,) and len(set(rows)) == 10
    f_np = lambda Z: Z[:, 0] * Z[:, 1] + Z[:, 2]  # noqa: E731
    np.testing.assert_allclose(sv.base_values[0], np.average(f_np(X[rows]), weights=w[rows]),
                               atol=1e-6)
    ref = brute_force(lambda Z: f_np(Z)[:, None], X[:3], X[rows], w[rows], [[0], [1], [2]])
    np.testing.assert_allclose(sv.values[:3], ref, atol=2e-6)
    same = shapley_values(f, X, sample_weight=w, background_size=10, random_state=3)
    np.testing.assert_array_equal(same.values, sv.values)
    # importance: the weighted mean |value| over the explained rows
    imp = sv.importance()
    assert imp.method == "shapley"
    np.testing.assert_allclose(imp.importances_mean,
                               np.einsum("n,npo->po", w, np.abs(sv.values)) / w.sum())


def test_row_groups_under_a_small_memory_budget_give_the_same_values():
    rng = np.random.default_rng(9)
    X, B = rng.normal(size=(60, 6)), rng.normal(size=(8, 6))
    f = three_way
    whole = shapley_values(f, X, B)
    # 63 coalitions x 24 bytes per explained row: 43 rows per engine call
    pieces = shapley_values(f, X, B, memory_budget=1 << 16)
    np.testing.assert_allclose(pieces.values, whole.values, atol=2e-6)
    sampled = [shapley_values(f, X, B, method="permutation", n_permutations=4,
                              memory_budget=budget) for budget in (None, 1 << 16)]
    np.testing.assert_allclose(sampled[0].values, sampled[1].values, atol=2e-6)
    # a repeated Explainer call builds its groups' plans again (only one group's is kept)
    explainer = jaximp.Explainer(f, X, background=B, memory_budget=1 << 16)
    for _ in range(2):
        np.testing.assert_array_equal(explainer.shapley_values().values, pieces.values)


def test_result_read_outs_and_plots(game):
    import matplotlib

    matplotlib.use("Agg")
    f_jax, _, X, B, w = game
    sv = shapley_values(f_jax, X, B, method="permutation", n_permutations=4)
    frame = sv.to_frame()
    assert list(frame.columns) == ["row", "feature", "output", "value", "feature_value", "std"]
    assert len(frame) == 5 * 4 * 2
    first = frame[(frame.row == 2) & (frame.feature == "x1") & (frame.output == "y1")]
    assert first.value.item() == sv.values[2, 1, 1] and first.feature_value.item() == X[2, 1]
    assert repr(sv).startswith("ShapleyValues('permutation', 5 rows x 4 features")
    assert sv.plot().get_xlabel().startswith("Shapley value")
    assert sv.plot("dependence", feature="x2", output="y1").get_xlabel() == "x2"
    with pytest.raises(ValueError, match=r"a dependence plot needs feature= \(a name or an "
                                         r"index\); got None\."):
        sv.plot("dependence")
    si = shapley_interactions(f_jax, X[:2], B)
    assert len(si.to_frame()) == 2 * 4 * 4 * 2
    assert repr(si).startswith("ShapleyInteractions('exact', 2 rows x 4 features")
    si.plot()


def test_validation_messages(game):
    f_jax, _, X, B, _ = game
    with pytest.raises(ValueError, match=r"method must be one of \('auto', 'exact', "
                                         r"'permutation'\); got 'kernel'\."):
        shapley_values(f_jax, X, B, method="kernel")
    with pytest.raises(ValueError, match=r"n_permutations must be an even int >= 4 "
                                         r"\(antithetic pairs, .*\); got 5\."):
        shapley_values(f_jax, X, B, n_permutations=5)
    with pytest.raises(ValueError, match=r"background_size must be an int >= 1; got 0\."):
        shapley_values(f_jax, X, B, background_size=0)
    with pytest.raises(ValueError, match=r"background must have the 4 columns of X; got "
                                         r"shape \(12, 3\)\."):
        shapley_values(f_jax, X, B[:, :3])
    with pytest.raises(ValueError, match=r"background_weight needs an explicit background"):
        shapley_values(f_jax, X, background_weight=np.ones(5))
    wide = np.zeros((2, 17))
    with pytest.raises(ValueError, match=r"method='exact' handles at most 16 features or "
                                         r"groups \(2\^p coalitions per row\); got 17\."):
        shapley_values(lambda Z: Z.sum(axis=1), wide, wide, method="exact")
    with pytest.raises(ValueError, match=r"shapley_interactions handles at most 12 features "
                                         r"or groups \(2\^p coalitions per row\); got 17\."):
        shapley_interactions(lambda Z: Z.sum(axis=1), wide, wide)


def test_background_categories_are_coded_as_xs():
    """A background's category column in another order (or with fewer categories, or as
    text) is coded with X's categories, so that a code names one label on both sides; a
    category X lacks is refused."""
    X = pd.DataFrame({"a": [0.5, 1.0, 2.0], "c": pd.Categorical(["u", "v", "u"])})
    B = pd.DataFrame({"a": [1.0, 0.0], "c": pd.Categorical(["u", "v"], categories=["v", "u"])})
    want = shapley_values(lambda Z: Z.sum(axis=1), X, B.astype({"c": X["c"].dtype})).values
    for same in (B, B.astype({"c": object}), B.astype({"c": pd.CategoricalDtype(["v", "u"])})):
        np.testing.assert_array_equal(shapley_values(lambda Z: Z.sum(axis=1), X, same).values,
                                      want)
    other = B.assign(c=pd.Categorical(["u", "w"]))
    with pytest.raises(ValueError, match=r"background column 'c' must have the same categories "
                                         r"as X's, so that their codes agree; got labels X's "
                                         r"lacks, \['w'\], for categories \['u', 'v'\]"):
        shapley_values(lambda Z: Z.sum(axis=1), X, other)


def test_importance_has_row_bootstrap_intervals_from_the_values():
    """Mean |Shapley value| and its replicates: weighted means of |values| under the
    row-bootstrap weightings (no model evaluations), checked against NumPy."""
    import jaximp
    from jaximp.data import as_key, replicate_weights

    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 3))
    values = jaximp.shapley_values(lambda A: A[:, 0] * A[:, 1] + A[:, 2], X[:12],
                                   background=X)
    result = values.importance(n_bootstrap=20, random_state=3)
    weights, _ = replicate_weights(np.ones(12), 20, as_key(3))
    expected = weights @ np.abs(values.values[..., 0]) / weights.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(result.importances_mean[:, 0], expected[0], rtol=1e-12)
    np.testing.assert_allclose(result.importances[:, 0, :], expected[1:].T, rtol=1e-12)
    assert result.intervals(0.9)[0].shape == (3, 1)
    assert values.importance(n_bootstrap=0).importances is None


def test_text_columns_of_x_and_a_background_with_other_labels_are_coded_alike():
    """Each DataFrame codes its text columns by its own sorted labels; a background with
    other labels than X (X's rows lack one, or the background does) is coded with X's
    labels first, so that Shapley values equal the float64 subset formula (X's codes were
    read with the background's labels: values off by 10 on effects of 5)."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=60), "c": rng.choice(["a", "b", "c"], 60)})
    y = frame.x + frame.c.map({"a": 0.0, "b": 5.0, "c": -5.0})
    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["c"]),
                                                  remainder="passthrough"),
                          LinearRegression()).fit(frame, y)
    X = pd.DataFrame({"x": [0.0, 0.5], "c": ["b", "c"]})

    def subset_formula(background):
        def value(row, players):
            rows = background.copy()
            for column in players:
                rows[column] = row[column]
            return model.predict(rows).mean()

        return np.array([[0.5 * (value(row, [j]) - value(row, []))
                          + 0.5 * (value(row, ["x", "c"]) - value(row, [k]))
                          for j, k in (("x", "c"), ("c", "x"))]
                         for _, row in X.iterrows()])

    for background in (frame[frame.c != "b"].iloc[:10].reset_index(drop=True),  # a, c
                       frame.iloc[:12]):  # a, b, c: more labels than X's
        values = shapley_values(model, X, background).values[..., 0]
        np.testing.assert_allclose(values, subset_formula(background), atol=1e-9)


def test_grouped_text_columns_reach_a_host_model_as_text_against_a_background():
    """Rows and a background with other labels are coded on X's labels; the host model still
    gets every text column as text (not category), grouped or not, and the values equal the
    float64 subset formula (two players: x and the group of the text columns)."""
    seen = set()

    class Host:
        def predict(self, frame):
            seen.update(str(frame[c].dtype) for c in ("s", "t"))
            bonus = {"p": 1.0, "q": 2.0, "r": 4.0, "z": 8.0}
            return (frame["x"].to_numpy() * frame["s"].map(bonus).to_numpy()
                    + frame["t"].map(bonus).to_numpy())

    X = pd.DataFrame({"x": [0.5, -1.0], "s": ["r", "q"], "t": ["p", "r"]})
    background = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "s": ["z", "q", "r", "p"],
                               "t": ["q", "z", "q", "z"]})
    model, groups = Host(), {"g": ["s", "t"]}

    def value(row, players):
        rows = background.copy()
        for column in players:
            rows[column] = row[column]
        return model.predict(rows).mean()

    expected = np.array([[0.5 * (value(row, ["x"]) - value(row, []))
                          + 0.5 * (value(row, ["x", "s", "t"]) - value(row, ["s", "t"])),
                          0.5 * (value(row, ["s", "t"]) - value(row, []))
                          + 0.5 * (value(row, ["x", "s", "t"]) - value(row, ["x"]))]
                         for _, row in X.iterrows()])
    seen.clear()
    values = shapley_values(model, X, background, groups=groups).values[..., 0]
    np.testing.assert_allclose(values, expected, atol=1e-9)
    data = pd.concat([X, background], ignore_index=True)  # rows hold the data's labels
    explainer = jaximp.Explainer(model, data, background=background, groups=groups)
    again = explainer.shapley_values(rows=X).values[..., 0]
    np.testing.assert_allclose(again, expected, atol=1e-9)
    assert seen and "category" not in seen


def test_text_rows_and_background_share_one_coding_for_a_jax_model():
    """Explained rows of one label and a background of three: a JAX model sees the codes of
    the labels of both (blue 0, green 1, red 2), as an Explainer on the background codes
    them, not the rows' own (red 0). Exact value: 5 - 5/3 for red's +5."""
    import pandas as pd

    X = pd.DataFrame({"num": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
                      "col": ["blue", "green", "red"] * 2})

    def model(Z):
        return Z[:, 0] + 5.0 * (Z[:, 1] == 2)

    rows = X[X.col == "red"]
    ours = jaximp.shapley_values(model, rows, X)
    np.testing.assert_allclose(ours.values[:, 1, 0], 5 - 5 / 3, rtol=1e-6)
    np.testing.assert_allclose(jaximp.Explainer(model, X).shapley_values(rows).values,
                               ours.values, rtol=1e-6)
    # a background lacking the rows' label: both coded on the labels of both (blue, green,
    # red), as a DataFrame and as an object array; red's +5 against a background without it
    background = X[X.col != "red"]
    for given_rows, given_background in ((rows, background),
                                         (rows.to_numpy(object), background.to_numpy(object))):
        lacking = jaximp.shapley_values(model, given_rows, given_background)
        np.testing.assert_allclose(lacking.values[:, 1, 0], 5.0, rtol=1e-6)


def test_a_model_that_routes_nan_takes_nan_in_an_explicit_background():
    """A tree model read into arrays routes NaN itself: NaN rows are taken as a background
    given explicitly (function and Explainer) as they are as X, with the values of the same
    model on the host; the messages about a background name it and its weights."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X[:, 0] + X[:, 1] * X[:, 2]
    X[rng.uniform(size=X.shape) < 0.2] = np.nan
    model = HistGradientBoostingRegressor(max_iter=10).fit(X, y)
    host = jaximp.as_predictor(model, trees="host")
    expected = jaximp.shapley_values(host, X[:5], X[20:50], method="exact").values
    ours = jaximp.shapley_values(model, X[:5], X[20:50], method="exact")
    np.testing.assert_allclose(ours.values, expected, rtol=1e-5, atol=1e-6)
    bound = jaximp.Explainer(model, X[:5], background=X[20:50]).shapley_values(method="exact")
    np.testing.assert_allclose(bound.values, expected, rtol=1e-5, atol=1e-6)
    f = lambda Z: Z[:, 0] * Z[:, 1]  # noqa: E731
    clean = np.nan_to_num(X)
    with pytest.raises(ValueError, match=r"^background_weight must have shape \(60,\)"):
        jaximp.shapley_values(f, clean[:3], clean, background_weight=np.ones(5))
    holed = clean[:3].copy()
    holed[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"^background contains 1 NaN"):
        jaximp.shapley_values(f, clean[:3], holed)
    with pytest.raises(ValueError, match="background_weight needs an explicit background"):
        jaximp.Explainer(f, clean).shapley_values(background_weight=np.ones(60))


def test_one_row_as_a_series_or_vector_is_explained_as_one_row():
    """shap's convention: a Series, or a vector as wide as the background, is one row."""
    import pandas as pd

    X = np.random.default_rng(2).normal(size=(30, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    f = lambda Z: Z[:, 0] * Z[:, 1] + Z[:, 2]  # noqa: E731
    row = jaximp.shapley_values(f, X[:1], X).values
    np.testing.assert_array_equal(jaximp.shapley_values(f, X[0], X).values, row)
    series = jaximp.shapley_values(f, frame.iloc[0], frame)
    assert series.feature_names == ("a", "b", "c")
    np.testing.assert_array_equal(series.values, row)
    np.testing.assert_array_equal(jaximp.shapley_interactions(f, X[0], X).values,
                                  jaximp.shapley_interactions(f, X[:1], X).values)
    with pytest.raises(ValueError, match="must be 2-D"):
        jaximp.shapley_values(f, X[0])  # no background: nothing says it is one row


@pytest.mark.skipif(not HAVE_SHAP, reason="shap is not installed")
def test_logit_link_explains_the_log_odds_of_mean_probabilities():
    """link='logit': the game is the log-odds of each coalition's mean probability; exact
    values equal a float64 brute force and shap's ExactExplainer with the logit link
    unlinearized, the sampled ones are close, and interaction rows sum to the values."""
    import shap
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    model = LogisticRegression().fit(X, X[:, 0] + X[:, 1] * X[:, 2] > 0)
    background = X[:30]

    def probability(Z):
        return model.predict_proba(Z)[:, 1]

    def game(x, S):
        Z = background.copy()
        Z[:, list(S)] = x[list(S)]
        q = probability(Z).mean()
        return np.log(q / (1 - q))

    expected = np.zeros((3, 4))
    for i, j in itertools.product(range(3), range(4)):
        others = [k for k in range(4) if k != j]
        for r in range(4):
            for S in itertools.combinations(others, r):
                weight = math.factorial(r) * math.factorial(3 - r) / math.factorial(4)
                expected[i, j] += weight * (game(X[i], S + (j,)) - game(X[i], S))
    ours = jaximp.shapley_values(model, X[:3], background, link="logit", method="exact")
    np.testing.assert_allclose(ours.values[..., 1], expected, rtol=1e-9, atol=1e-12)
    q = probability(background).mean()
    np.testing.assert_allclose(ours.base_values[1], np.log(q / (1 - q)), rtol=1e-12)
    theirs = shap.explainers.ExactExplainer(
        probability, shap.maskers.Independent(background), link=shap.links.logit,
        linearize_link=False)(X[:3])
    np.testing.assert_allclose(ours.values[..., 1], theirs.values, rtol=1e-9, atol=1e-12)
    sampled = jaximp.shapley_values(model, X[:3], background, link="logit",
                                    method="permutation", n_permutations=200)
    np.testing.assert_allclose(sampled.values[..., 1], expected, atol=0.02)
    pairs = jaximp.shapley_interactions(model, X[:3], background, link="logit")
    np.testing.assert_allclose(pairs.values.sum(axis=2), ours.values, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match=r"link='logit' takes the log-odds of mean "
                                         r"probabilities; the model's mean outputs over"):
        jaximp.shapley_values(lambda Z: 3 * Z[:, 0], X[:3], background, link="logit")


def test_text_arrays_code_rows_and_background_alike_for_a_host_pipeline():
    """Rows of an object array holding two of a background's three labels: a pipeline gets
    each label back as itself (they were decoded with the rows' own labels, so 'y' came
    back as 'x'): the values equal the DataFrame's, by the function and the Explainer."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(1)
    n = 60
    array = np.empty((n, 2), dtype=object)
    array[:, 0] = rng.normal(size=n)
    array[:, 1] = rng.choice(["x", "y", "z"], n)
    y = array[:, 0].astype(float) + np.select([array[:, 1] == "x", array[:, 1] == "y"],
                                              [2.0, 0.0], -0.5)

    def fitted(columns):
        encode = ColumnTransformer([("onehot", OneHotEncoder(), [columns[1]])],
                                   remainder="passthrough")
        return Pipeline([("encode", encode), ("fit", Ridge())])

    frame = pd.DataFrame({"x0": array[:, 0].astype(float), "x1": array[:, 1]})
    by_array = fitted([0, 1]).fit(array, y)
    by_frame = fitted(["x0", "x1"]).fit(frame, y)
    rows = np.flatnonzero(array[:, 1] != "x")[:3]
    expected = jaximp.shapley_values(by_frame, frame.iloc[rows], frame).values
    ours = jaximp.shapley_values(by_array, array[rows], array)
    np.testing.assert_allclose(ours.values, expected, rtol=1e-10, atol=1e-12)
    bound = jaximp.Explainer(by_array, array).shapley_values(array[rows])
    np.testing.assert_allclose(bound.values, expected, rtol=1e-10, atol=1e-12)


def test_output_selects_the_outputs_explained():
    """output= (an index, a name or a list) keeps those outputs of one game: the values,
    base values, standard errors and names of the full result at those outputs, for exact,
    sampled and interaction values and on an Explainer; an unknown output is refused."""
    X = np.random.default_rng(0).normal(size=(30, 3))

    def f(Z):
        return jnp.stack([Z[:, 0] * Z[:, 1], Z[:, 2], Z[:, 0]], axis=1)

    full = jaximp.shapley_values(f, X[:4], X)
    for output, index in [(1, [1]), ("y2", [2]), ([2, 0], [2, 0])]:
        chosen = jaximp.shapley_values(f, X[:4], X, output=output)
        assert chosen.output_names == tuple(f"y{i}" for i in index)
        np.testing.assert_array_equal(chosen.values, full.values[..., index])
        np.testing.assert_array_equal(chosen.base_values, full.base_values[index])
    sampled = dict(method="permutation", n_permutations=10)
    every = jaximp.shapley_values(f, X[:4], X, **sampled)
    two = jaximp.shapley_values(f, X[:4], X, output=[2, 0], **sampled)
    np.testing.assert_array_equal(two.values, every.values[..., [2, 0]])
    np.testing.assert_array_equal(two.standard_errors, every.standard_errors[..., [2, 0]])
    pairs = jaximp.shapley_interactions(f, X[:4], X, output="y0")
    np.testing.assert_array_equal(pairs.values,
                                  jaximp.shapley_interactions(f, X[:4], X).values[..., [0]])
    np.testing.assert_array_equal(jaximp.Explainer(f, X).shapley_values(output=1).values,
                                  jaximp.shapley_values(f, X, X, output=1).values)
    with pytest.raises(ValueError, match="output index 5 is out of range"):
        jaximp.shapley_values(f, X[:4], X, output=5)


def test_a_text_column_in_a_group_keeps_its_labels_against_a_background():
    """The explained rows' text codes are those of the background's labels in a group too:
    values + base equal f(x) (efficiency), as without the group; a label the data lack is
    refused, grouped or not."""
    class Host:
        def predict(self, frame):
            return np.where(frame["s"].to_numpy() == "r", 10.0, 0.0) + frame["a"].to_numpy()

    background = pd.DataFrame({"a": [0.0, 1.0, 2.0], "s": ["p", "q", "r"]})
    row = pd.DataFrame({"a": [0.5], "s": ["r"]})
    for groups in (None, {"g": ["a", "s"]}):
        values = jaximp.shapley_values(Host(), row, background, groups=groups)
        assert values.values[0, :, 0].sum() + values.base_values[0] == pytest.approx(10.5)
        explainer = jaximp.Explainer(Host(), background, background=background, groups=groups)
        again = explainer.shapley_values(rows=row)
        assert again.values[0, :, 0].sum() + again.base_values[0] == pytest.approx(10.5)
        with pytest.raises(ValueError, match=r"column 's' of rows must hold the labels"):
            explainer.shapley_values(rows=pd.DataFrame({"a": [0.5], "s": ["z"]}))
        with pytest.raises(ValueError, match=r"column 's' of rows must hold the labels.*got rows "
                                             r"of type ndarray, whose columns carry no labels"):
            explainer.shapley_values(rows=row.to_numpy(dtype=object))
        own = jaximp.Explainer(Host(), background, groups=groups).shapley_values(rows=row)
        assert own.values[0, :, 0].sum() + own.base_values[0] == pytest.approx(10.5)


def test_rows_as_an_array_take_the_columns_of_a_dataframe_background():
    """dalex's predict_parts takes a row as an array: with a DataFrame background, a 1-D or
    2-D array of rows (text among them) is read with the background's columns."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"g": rng.choice(["a", "b"], 40), "x": rng.normal(size=40)})

    class ByName:  # needs the column names, as a ColumnTransformer by name
        def predict(self, X):
            return X["x"].to_numpy() * 2 + (X["g"] == "a").to_numpy()

    expected = jaximp.shapley_values(ByName(), frame.iloc[[0]], background=frame,
                                     background_size=None).values
    for row in (frame.iloc[0].to_numpy(), frame.iloc[[0]].to_numpy()):
        got = jaximp.shapley_values(ByName(), row, background=frame, background_size=None)
        np.testing.assert_allclose(got.values, expected, rtol=1e-12)
    np.testing.assert_allclose(expected[0, :, 0], [(frame.g[0] == "a") - (frame.g == "a").mean(),
                                                   2 * (frame.x[0] - frame.x.mean())], rtol=1e-9)
