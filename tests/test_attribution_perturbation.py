"""Per-row perturbation attributions (feature permutation and ablation): float64 NumPy
references on the same permutations, the engine's own permutations, a host model, images, and
captum's FeaturePermutation and FeatureAblation run live on a torch twin of a JAX MLP."""

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from conftest import engine_permutations

import jaximp

from _torch_twin import max_relative, torch_twin
from jaximp.methods._perturbation_attributions import source_rows

RNG = np.random.default_rng(1)
X = RNG.normal(size=(48, 4))
W1 = RNG.normal(size=(4, 8)) / 2
B1 = RNG.normal(size=8) / 4
W2 = RNG.normal(size=(8, 3)) / 2
B2 = np.array([0.1, -0.2, 0.3])
GROUPS = {"ab": [0, 1], "c": [2], "d": [3]}
COLUMNS = [[0, 1], [2], [3]]


def mlp(Z):
    h = jnp.tanh(Z @ jnp.asarray(W1, jnp.float32) + jnp.asarray(B1, jnp.float32))
    return h @ jnp.asarray(W2, jnp.float32) + jnp.asarray(B2, jnp.float32)


def mlp_np(Z):
    return np.tanh(Z @ W1 + B1) @ W2 + B2


PREDICTED = np.argmax(mlp_np(X), axis=1)


def permutation_reference(f, X, columns, sources):
    """float64 (n, p, o): f(x_i) - mean_r f(x_i with columns[j] from row sources[j, r, i])."""
    n, p, r = X.shape[0], len(columns), sources.shape[1]
    out = np.zeros((n, p, f(X[:1]).shape[1]))
    for j, cols in enumerate(columns):
        for k in range(r):
            Z = X.copy()
            Z[:, cols] = X[sources[j, k]][:, cols]
            out[:, j] += (f(X) - f(Z)) / r
    return out


def ablation_reference(f, X, columns, baseline):
    """float64 (n, p, o): f(x_i) - f(x_i with columns[j] set to the baseline (row))."""
    out = np.zeros((X.shape[0], len(columns), f(X[:1]).shape[1]))
    for j, cols in enumerate(columns):
        Z = X.copy()
        Z[:, cols] = np.broadcast_to(baseline, X.shape)[:, cols]
        out[:, j] = f(X) - f(Z)
    return out


def test_permutation_attributions_equal_a_float64_reference_on_the_same_permutations():
    result = jaximp.permutation_attributions(mlp, X, n_repeats=3, random_state=4)
    sources = result.info["source_rows"]
    assert sources.shape == (4, 3, 48)
    for j in range(4):  # each a permutation of the rows, and not the identity
        for k in range(3):
            np.testing.assert_array_equal(np.sort(sources[j, k]), np.arange(48))
            assert not np.array_equal(sources[j, k], np.arange(48))
    reference = permutation_reference(mlp_np, X, [[j] for j in range(4)], sources)
    np.testing.assert_allclose(result.values, reference, atol=3e-6)
    np.testing.assert_allclose(result.predictions, mlp_np(X), atol=2e-6)
    assert result.output_names == ("y0", "y1", "y2") and result.method == "permutation"
    # groups are permuted together; a per-row output is each row's column of all outputs
    grouped = jaximp.permutation_attributions(mlp, X, n_repeats=2, groups=GROUPS,
                                              output=PREDICTED)
    reference = permutation_reference(mlp_np, X, COLUMNS, grouped.info["source_rows"])
    np.testing.assert_allclose(grouped.values[:, :, 0],
                               reference[np.arange(48), :, PREDICTED], atol=3e-6)
    assert grouped.output_names == ("output per row",)
    np.testing.assert_array_equal(grouped.info["output_per_row"], PREDICTED)
    # the global importance is the mean |attribution| with bootstrap intervals
    importance = result.importance(n_bootstrap=20)
    np.testing.assert_allclose(importance.importances_mean, np.abs(reference_all := (
        permutation_reference(mlp_np, X, [[j] for j in range(4)], sources))).mean(0),
        atol=3e-6)
    assert reference_all.shape == (48, 4, 3) and importance.importances.shape == (4, 3, 20)


def test_a_permutation_that_moves_no_row_is_drawn_again_as_captums():
    """captum's FeaturePermutation never keeps the identity: with 2 and 3 rows every draw
    moves a row, and each feature's attribution is the model's change at those rows."""
    linear = lambda A: A @ jnp.arange(1.0, 5.0)
    for n in (2, 3):
        result = jaximp.permutation_attributions(linear, X[:n], n_repeats=40, random_state=0)
        rows = result.info["source_rows"]  # (p, r, n)
        assert not (rows == np.arange(n)).all(axis=-1).any()
        engine = source_rows(n, range(4), 40, 0)
        kept = ~(engine == np.arange(n)).all(axis=-1)
        assert (~kept).any()  # the engine's own draws include the identity
        np.testing.assert_array_equal(rows[kept], engine[kept])
        moved = X[:n][rows, np.arange(4)[:, None, None]]  # (p, r, n) source values
        expected = (X[:n].T[:, None, :] - moved) * np.arange(1.0, 5.0)[:, None, None]
        np.testing.assert_allclose(result.values[..., 0], expected.mean(axis=1).T, atol=2e-6)


def test_source_rows_are_the_engines_permutations_of_permutation_importance():
    """The rows come from the engine's keyed permutations: those of a permutation_importance
    plan with the same key and the labels (feature position, repeat)."""
    key = jax.random.key(7)
    rows = source_rows(48, [0, 2, 3], 2, key)
    plan = jaximp.at_permuted_rows(np.ones((1, 4), bool), np.zeros(6, int), key,
                                   [(j, r) for j in (0, 2, 3) for r in range(2)])
    np.testing.assert_array_equal(rows.reshape(6, 48), engine_permutations(plan, 48))
    result = jaximp.permutation_attributions(mlp, X, n_repeats=2, random_state=key)
    np.testing.assert_array_equal(result.info["source_rows"][[0, 2, 3]], rows)


def test_a_host_model_and_a_classifier_with_a_class_per_row():
    from sklearn.linear_model import LinearRegression, LogisticRegression

    y = X @ np.array([1.0, 2.0, -1.0, 0.5])
    linear = LinearRegression().fit(X, y)
    result = jaximp.permutation_attributions(linear, X, n_repeats=2, groups=GROUPS)
    reference = permutation_reference(lambda A: linear.predict(A)[:, None], X, COLUMNS,
                                      result.info["source_rows"])
    np.testing.assert_allclose(result.values, reference, rtol=1e-12, atol=1e-12)
    ablated = jaximp.ablation_attributions(linear, X, baselines="median", groups=GROUPS)
    reference = ablation_reference(lambda A: linear.predict(A)[:, None], X, COLUMNS,
                                   np.median(X, axis=0))
    np.testing.assert_allclose(ablated.values, reference, rtol=1e-12, atol=1e-12)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    frame = pd.DataFrame(X, columns=list("abcd"))
    classifier = LogisticRegression().fit(frame, labels)
    predicted = classifier.predict(frame)
    result = jaximp.permutation_attributions(classifier, frame, output=predicted)
    proba = lambda A: classifier.predict_proba(pd.DataFrame(A, columns=list("abcd")))
    reference = permutation_reference(proba, X, [[j] for j in range(4)],
                                      result.info["source_rows"])
    np.testing.assert_allclose(result.values[:, :, 0],
                               reference[np.arange(48), :, predicted], atol=1e-12)
    assert result.feature_names == tuple("abcd")


def test_ablation_attributions_equal_a_float64_reference():
    for baselines, baseline in [(None, np.zeros(4)), (0.5, np.full(4, 0.5)),
                                ("mean", X.mean(axis=0)), (X[3], X[3]), (X[3:4], X[3]),
                                (X[::-1], X[::-1])]:  # (n, c): a baseline per row
        result = jaximp.ablation_attributions(mlp, X, baselines=baselines)
        reference = ablation_reference(mlp_np, X, [[j] for j in range(4)], baseline)
        np.testing.assert_allclose(result.values, reference, atol=3e-6)
    grouped = jaximp.ablation_attributions(mlp, X, baselines=X[::-1], groups=GROUPS,
                                           output=PREDICTED)
    reference = ablation_reference(mlp_np, X, COLUMNS, X[::-1])
    np.testing.assert_allclose(grouped.values[:, :, 0], reference[np.arange(48), :, PREDICTED],
                               atol=3e-6)


def test_images_with_patches_equal_the_flattened_table_and_paint_back():
    rng = np.random.default_rng(3)
    images = rng.normal(size=(10, 4, 4, 1))
    w = rng.normal(size=(4, 4, 1))

    def linear(A):
        return jnp.tanh(jnp.einsum("nhwc,hwc->n", A, jnp.asarray(w, jnp.float32)))

    patches = jaximp.input_groups((4, 4, 1), patch=(2, 2))
    result = jaximp.ablation_attributions(linear, images, groups=patches)
    flat = images.reshape(10, -1)
    columns = [list(cols) for cols in patches.values()]
    reference = ablation_reference(lambda A: np.tanh(A @ w.reshape(-1))[:, None], flat,
                                   columns, np.zeros(16))
    np.testing.assert_allclose(result.values, reference, atol=3e-6)
    np.testing.assert_allclose(result.image(row=2)[:2, :2, 0], reference[2, 0, 0], atol=3e-6)
    permuted = jaximp.permutation_attributions(linear, images, groups=patches)
    reference = permutation_reference(lambda A: np.tanh(A @ w.reshape(-1))[:, None], flat,
                                      columns, permuted.info["source_rows"])
    np.testing.assert_allclose(permuted.values, reference, atol=3e-6)


def test_bad_inputs_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="n_repeats must be an int >= 1"):
        jaximp.permutation_attributions(mlp, X, n_repeats=0)
    with pytest.raises(ValueError, match="needs at least 2 rows; got 1"):
        jaximp.permutation_attributions(mlp, X[:1])
    with pytest.raises(ValueError, match=r"must have shape \(48,\); got shape \(5,\)"):
        jaximp.permutation_attributions(mlp, X, output=PREDICTED[:5])
    with pytest.raises(ValueError, match=r"indices in \[0, 2\] for a model with 3 outputs"):
        jaximp.ablation_attributions(mlp, X, output=PREDICTED + 3)
    with pytest.raises(TypeError, match="integer output indices"):
        jaximp.ablation_attributions(mlp, X, output=PREDICTED * 1.0)
    with pytest.raises(ValueError, match=r"one example's shape \(4,\) .* X's shape \(48, 4\)"):
        jaximp.ablation_attributions(mlp, X, baselines=np.zeros((2, 4)))
    with pytest.raises(ValueError, match="baselines must be None, a number, 'mean'"):
        jaximp.ablation_attributions(mlp, X, baselines="mode")
    with pytest.raises(ValueError, match="NaN or infinite"):
        jaximp.ablation_attributions(mlp, X, baselines=np.full(4, np.nan))
    frame = pd.DataFrame({"a": X[:, 0], "b": pd.Categorical(np.arange(48) % 3)})
    with pytest.raises(TypeError, match="categorical.*permutation_attributions"):
        jaximp.ablation_attributions(lambda A: A.sum(axis=1), frame)


# --------------------------------------------------------------------------------------------
# captum, live, on a torch twin of the JAX MLP (float32 both)
# --------------------------------------------------------------------------------------------


def _our_permutation(sources, columns, torch):
    """A captum perm_func that permutes the rows as jaximp did: it recognizes the feature by
    its mask and takes row i's masked values from row sources[j, 0, i]."""
    def perm_func(x, mask):
        masked = np.flatnonzero(mask.reshape(-1).numpy())
        j = next(k for k, cols in enumerate(columns) if list(masked) == list(cols))
        moved = x[torch.as_tensor(sources[j, 0])]
        return moved * mask.to(x.dtype) + x * (~mask).to(x.dtype)

    return perm_func


def test_against_captum_feature_permutation_and_ablation():
    torch, net = torch_twin([(W1, B1), (W2, B2)])
    from captum.attr import FeatureAblation, FeaturePermutation

    inputs = torch.tensor(X, dtype=torch.float32)
    target = torch.tensor(PREDICTED)
    for groups, columns in [(None, [[j] for j in range(4)]), (GROUPS, COLUMNS)]:
        mask = torch.zeros((1, 4), dtype=torch.long)
        for j, cols in enumerate(columns):
            mask[0, cols] = j
        ours = jaximp.permutation_attributions(mlp, X, groups=groups, output=PREDICTED,
                                               random_state=2)
        sources = ours.info["source_rows"]
        theirs = FeaturePermutation(net, perm_func=_our_permutation(sources, columns, torch))
        theirs = theirs.attribute(inputs, target=target, feature_mask=mask).numpy()
        # captum spreads a group's attribution over each of its columns
        first = [cols[0] for cols in columns]
        assert max_relative(ours.values[:, :, 0], theirs[:, first]) < 1e-5
        for baselines in (None, 0.25, X[::-1]):
            ours = jaximp.ablation_attributions(mlp, X, baselines=baselines, groups=groups,
                                                output=PREDICTED)
            given = (None if baselines is None else baselines if np.isscalar(baselines)
                     else torch.tensor(baselines.copy(), dtype=torch.float32))
            theirs = FeatureAblation(net).attribute(inputs, baselines=given, target=target,
                                                    feature_mask=mask).numpy()
            assert max_relative(ours.values[:, :, 0], theirs[:, first]) < 1e-5
    # one output for every row, as captum's int target
    ours = jaximp.ablation_attributions(mlp, X, output=1)
    theirs = FeatureAblation(net).attribute(inputs, target=1).numpy()
    assert max_relative(ours.values[:, :, 0], theirs) < 1e-5


def test_time_steps_of_one_hot_tokens_are_positions_not_levels():
    """Sequences of one-hot tokens (n, T, V) grouped by time step: each group holds one 1 per
    row, yet in an X of more than two axes it is a position, ablated as captum's
    FeatureAblation ablates a time-step feature_mask (it was refused as categorical)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("captum")
    from captum.attr import FeatureAblation

    rng = np.random.default_rng(0)
    n, T, V = 6, 4, 5
    tokens = np.eye(V, dtype=np.float32)[rng.integers(0, V, (n, T))]
    W = rng.normal(size=(T * V, 2)).astype(np.float32)
    groups = jaximp.input_groups((T, V), axis=0)
    assert {f.kind for f in jaximp.as_dataset(tokens, groups=groups).features} == {"continuous"}
    ours = jaximp.ablation_attributions(lambda Z: jnp.tanh(Z.reshape(len(Z), -1) @ W),
                                        tokens, groups=groups, output=0)
    mask = torch.arange(T).repeat_interleave(V).reshape(1, T, V)
    theirs = FeatureAblation(lambda t: torch.tanh(t.reshape(len(t), -1) @ torch.tensor(W)))
    theirs = theirs.attribute(torch.tensor(tokens), target=0, feature_mask=mask).numpy()
    assert max_relative(ours.values[:, :, 0], theirs[:, :, 0]) < 1e-5


def test_pandas_baselines_and_backgrounds_must_name_the_columns_of_x_in_order():
    """A DataFrame or Series baseline (or expected gradients' background) is read in X's
    column order only when its labels are X's columns in that order, as Shapley values'
    background; a reordered one is refused, not read by position (which turned the
    attributions [1, 20, 0] of this linear model into [-2, 20, 300])."""
    X = pd.DataFrame([[1.0, 2.0, 3.0]], columns=["a", "b", "c"], dtype=np.float32)
    f = lambda Z: Z @ jnp.array([1.0, 10.0, 100.0])  # noqa: E731
    B = pd.DataFrame([[0.0, 0.0, 3.0]], columns=["a", "b", "c"], dtype=np.float32)
    reordered = B[["c", "b", "a"]]
    np.testing.assert_allclose(jaximp.integrated_gradients(f, X, baselines=B).values[0, :, 0],
                               [1.0, 20.0, 0.0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        jaximp.ablation_attributions(f, X, baselines=B.iloc[0]).values[0, :, 0],
        [1.0, 20.0, 0.0], rtol=1e-6)
    unlabelled = pd.Series([0.0, 0.0, 3.0])  # a RangeIndex: taken in order
    np.testing.assert_allclose(
        jaximp.ablation_attributions(f, X, baselines=unlabelled).values[0, :, 0],
        [1.0, 20.0, 0.0], rtol=1e-6)
    calls = [lambda: jaximp.integrated_gradients(f, X, baselines=reordered),
             lambda: jaximp.ablation_attributions(f, X, baselines=reordered.iloc[0]),
             lambda: jaximp.expected_gradients(f, X, reordered, n_samples=4),
             lambda: jaximp.shapley_values(f, X, reordered)]
    for call in calls:
        with pytest.raises(ValueError, match=r"must have the columns of X, \['a', 'b', 'c'\]"):
            call()


def test_mean_and_median_baselines_are_weighted_by_sample_weight():
    """``baselines="mean"`` or ``"median"`` are those of X's columns under sample_weight (as
    LOCO's replacement values and Shapley values' default background): unweighted without
    weights, weighted with them."""
    X = np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 4.0], [10.0, 8.0]])
    w = np.array([3.0, 1.0, 1.0, 1.0])
    f = lambda Z: Z @ jnp.array([1.0, -2.0])  # noqa: E731
    for baselines, centre in (("mean", np.average(X, axis=0, weights=w)),
                              ("median", np.array([0.5, 1.5]))):  # half the weight at row 0
        expected = (X - centre) * np.array([1.0, -2.0])
        ablation = jaximp.ablation_attributions(f, X, baselines=baselines, sample_weight=w)
        np.testing.assert_allclose(ablation.values[..., 0], expected, rtol=1e-5, atol=1e-5)
        gradients = jaximp.integrated_gradients(f, X, baselines=baselines, sample_weight=w)
        np.testing.assert_allclose(gradients.values[..., 0], expected, rtol=1e-5, atol=1e-5)
    plain = jaximp.ablation_attributions(f, X, baselines="median").values[..., 0]
    np.testing.assert_allclose(plain, (X - np.median(X, axis=0)) * [1.0, -2.0], rtol=1e-6)
