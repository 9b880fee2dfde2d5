"""Examples with more than two axes (images, sequences): the methods on X of shape (n, ...)
equal the same computation on the flattened table, with features as groups of positions."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaximp

RNG = np.random.default_rng(0)
IMAGES = RNG.normal(size=(40, 6, 4, 2))  # (n, h, w, c)
SEQUENCES = RNG.normal(size=(30, 5, 3))  # (n, t, c)
WEIGHTS = jnp.asarray(RNG.normal(size=(6, 4, 2)), jnp.float32)


def image_model(X):
    """A non-linear function of (n, h, w, c) images: a weighted sum, squared, plus a product
    of two regions."""
    linear = jnp.einsum("nhwc,hwc->n", X, WEIGHTS)
    return linear ** 2 / 10 + X[:, :2, :2, 0].mean(axis=(1, 2)) * X[:, 4:, 2:, 1].mean(axis=(1, 2))


def flat_model(X):
    return image_model(X.reshape(X.shape[0], 6, 4, 2))


def test_input_groups_against_loops():
    shape = (5, 4, 3)
    flat_index = np.arange(60).reshape(shape)
    patches = jaximp.input_groups(shape, patch=(2, 3))
    assert len(patches) == 3 * 2  # ceil(5/2) x ceil(4/3): edge patches are smaller
    for name, columns in patches.items():
        i, j = map(int, name[len("patch["):-1].split(","))
        expected = [flat_index[r, c, k] for r in range(5) for c in range(4) for k in range(3)
                    if r // 2 == i and c // 3 == j]
        assert columns == sorted(expected)
    channels = jaximp.input_groups(shape, axis=-1, prefix="channel")
    assert channels["channel[2]"] == sorted(flat_index[..., 2].ravel().tolist())
    mask = np.full(shape, -1)
    mask[0, 0, :] = 7
    mask[4, 3, 1] = 2
    regions = jaximp.input_groups(shape, mask=mask)
    assert regions == {"region[2]": [flat_index[4, 3, 1]],
                       "region[7]": flat_index[0, 0, :].tolist()}


@pytest.mark.parametrize("options, message", [
    (dict(), "exactly one of patch=, axis= or mask="),
    (dict(patch=(2, 2), axis=0), "exactly one of"),
    (dict(patch=(2, 2, 2, 2)), "patch must give a positive size"),
    (dict(axis=3), "axis must index the 3 axes"),
    (dict(mask=np.zeros((2, 2))), "mask must be an integer array of shape"),
    (dict(mask=np.full((5, 4, 3), -2)), r"-1 for none\); got int64 .* labels down to -2"),
])
def test_input_groups_refusals(options, message):
    with pytest.raises(ValueError, match=message):
        jaximp.input_groups((5, 4, 3), **options)
    with pytest.raises(TypeError, match=r"patch must be a tuple of int sizes; got \(2.5, 2\)"):
        jaximp.input_groups((5, 4, 3), patch=(2.5, 2))


def test_messages_about_many_positions_stay_short():
    """An image of 784 positions: a clashing group name or an unknown position is named, and
    the list of names shortened."""
    X = np.zeros((4, 1, 28, 28), np.float32)
    with pytest.raises(ValueError, match=r"'x\[0,0,0\]' names two of .* \(783 in all\)\. "
                                         "Rename") as clash:
        jaximp.as_dataset(X, groups={"x[0,0,0]": [1, 2]})
    with pytest.raises(ValueError, match=r"unknown column 'x\[0,28,0\]'.*\(784 in all\)") as \
            unknown:
        jaximp.as_dataset(X, groups={"a": ["x[0,28,0]"]})
    assert len(str(clash.value)) < 400 and len(str(unknown.value)) < 400


def test_permutation_importance_of_patches_equals_the_flat_table():
    y = np.asarray(image_model(jnp.asarray(IMAGES))) + RNG.normal(size=40) * 0.1
    groups = jaximp.input_groups(IMAGES.shape[1:], patch=(2, 2))
    shaped = jaximp.permutation_importance(image_model, IMAGES, y, groups=groups,
                                           n_repeats=3, random_state=4)
    flat = jaximp.permutation_importance(flat_model, IMAGES.reshape(40, -1), y, groups=groups,
                                         n_repeats=3, random_state=4)
    assert shaped.feature_names == flat.feature_names == tuple(groups)
    np.testing.assert_array_equal(shaped.importances, flat.importances)


def test_shapley_values_over_channels_of_sequences_equal_the_flat_table():
    def sequence_model(X):  # (n, t, c)
        return jnp.tanh(X[:, :, 0]).sum(axis=1) * X[:, -1, 2] + X[:, :, 1].mean(axis=1)

    channels = jaximp.input_groups(SEQUENCES.shape[1:], axis=-1, prefix="channel")
    shaped = jaximp.shapley_values(sequence_model, SEQUENCES[:5], background=SEQUENCES[5:],
                                   groups=channels)
    flat = jaximp.shapley_values(
        lambda A: sequence_model(A.reshape(A.shape[0], 5, 3)), SEQUENCES[:5].reshape(5, -1),
        background=SEQUENCES[5:].reshape(25, -1), groups=channels)
    assert shaped.feature_names == ("channel[0]", "channel[1]", "channel[2]")
    np.testing.assert_allclose(shaped.values, flat.values, rtol=1e-6, atol=1e-7)
    # efficiency: the values add up to f(x) - mean f(background), in float64
    f = np.asarray(sequence_model(jnp.asarray(SEQUENCES)), np.float64)
    np.testing.assert_allclose(shaped.values[..., 0].sum(axis=1), f[:5] - f[5:].mean(),
                               rtol=1e-4, atol=1e-5)


def test_an_explainer_takes_a_background_of_examples_and_refuses_another_shape():
    """The background of examples of X's shape (or of flattened rows) serves Shapley values,
    expected gradients and SAGE on an Explainer as in the functions; examples of another
    shape with as many positions (a transposed sequence) are refused, not silently
    flattened."""
    def sequence_model(X):  # (n, t, c)
        return jnp.tanh(X[:, :, 0]).sum(axis=1) * X[:, -1, 2] + X[:, :, 1].mean(axis=1)

    channels = jaximp.input_groups(SEQUENCES.shape[1:], axis=-1, prefix="channel")
    y = np.asarray(sequence_model(jnp.asarray(SEQUENCES)), np.float64)
    for background in (SEQUENCES[5:], SEQUENCES[5:].reshape(25, -1)):
        ex = jaximp.Explainer(sequence_model, SEQUENCES[:5], y[:5], background=background,
                              groups=channels)
        np.testing.assert_array_equal(
            ex.shapley_values().values,
            jaximp.shapley_values(sequence_model, SEQUENCES[:5], SEQUENCES[5:],
                                  groups=channels).values)
        np.testing.assert_array_equal(
            ex.expected_gradients(n_samples=4).values,
            jaximp.expected_gradients(sequence_model, SEQUENCES[:5], SEQUENCES[5:],
                                      n_samples=4, groups=channels).values)
        np.testing.assert_array_equal(
            ex.sage_importance(estimator="exact").importances_mean,
            jaximp.sage_importance(sequence_model, SEQUENCES[:5], y[:5],
                                   background=SEQUENCES[5:], groups=channels,
                                   estimator="exact").importances_mean)
    for call in (lambda: jaximp.Explainer(sequence_model, SEQUENCES, background=np.zeros(
                     (4, 3, 5))),
                 lambda: jaximp.shapley_values(sequence_model, SEQUENCES[:5],
                                               np.zeros((4, 3, 5)))):
        with pytest.raises(ValueError, match=r"background must have the 15 columns of X \(or "
                                             r"examples of X's shape \(5, 3\)\); got shape "
                                             r"\(4, 3, 5\)"):
            call()


def test_positions_are_features_by_default_and_named_by_index():
    dataset = jaximp.as_dataset(SEQUENCES)
    assert dataset.input_shape == (5, 3) and dataset.X.shape == (30, 15)
    assert dataset.column_names[:4] == ("x[0,0]", "x[0,1]", "x[0,2]", "x[1,0]")
    np.testing.assert_array_equal(dataset.X, SEQUENCES.reshape(30, -1))


def test_torch_module_gets_examples_in_their_shape():
    torch = pytest.importorskip("torch")

    class ChannelSum(torch.nn.Module):
        def forward(self, X):  # (n, t, c)
            return X[:, :, 0].sum(dim=1) * X[:, 0, 1]

    def jax_twin(X):
        return X[:, :, 0].sum(axis=1) * X[:, 0, 1]

    y = RNG.normal(size=30)
    ours = jaximp.permutation_importance(ChannelSum(), SEQUENCES.astype(np.float32), y,
                                         n_repeats=2)
    twin = jaximp.permutation_importance(jax_twin, SEQUENCES.astype(np.float32), y, n_repeats=2)
    np.testing.assert_allclose(ours.importances, twin.importances, rtol=1e-4, atol=1e-6)


def test_host_models_and_feature_names_are_refused_with_the_fix():
    from sklearn.linear_model import LinearRegression

    model = LinearRegression().fit(SEQUENCES.reshape(30, -1), RNG.normal(size=30))
    with pytest.raises(TypeError, match=r"examples of shape \(5, 3\), but LinearRegression "
                                        r"predicts on 2-D rows; pass X flattened"):
        jaximp.permutation_importance(model, SEQUENCES, RNG.normal(size=30))
    with pytest.raises(ValueError, match="feature_names cannot name the positions"):
        jaximp.as_dataset(SEQUENCES, feature_names=["a"] * 15)


def test_input_map_paints_each_feature_on_its_positions():
    """The inverse of input_groups, in the methods' feature order: against a loop over the
    positions, for patches, a partial mask (ungrouped positions are features of their own)
    and no groups, with a trailing output axis."""
    shape = (4, 6, 2)
    patches = jaximp.input_groups(shape, patch=(2, 3))
    values = RNG.normal(size=(len(patches), 3))
    painted = jaximp.input_map(values, shape, patches)
    flat = painted.reshape(-1, 3)
    for g, columns in enumerate(patches.values()):
        np.testing.assert_array_equal(flat[columns], np.repeat(values[g][None], len(columns), 0))
    mask = np.full(shape, -1)
    mask[:2, :2, :] = 0
    regions = jaximp.input_groups(shape, mask=mask)
    dataset = jaximp.as_dataset(RNG.normal(size=(3, *shape)), groups=regions)
    order = [f.name for f in dataset.features]  # the methods' feature order
    values = np.arange(len(order), dtype=float)
    painted = jaximp.input_map(values, shape, regions).reshape(-1)
    for feature, value in zip(dataset.features, values):
        np.testing.assert_array_equal(painted[list(feature.columns)], value)
    np.testing.assert_array_equal(jaximp.input_map(np.arange(48.0), shape),
                                  np.arange(48.0).reshape(shape))
    with pytest.raises(ValueError, match=r"one entry per feature \(4 for examples"):
        jaximp.input_map(np.zeros(5), shape, patches)
