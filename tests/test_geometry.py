"""Results of images and sequences keep where each feature lies (``info["input_layout"]``):
``image()`` paints per-feature values on the example's positions and ``plot(kind="image")``
draws that map. Checked against a separate NumPy painting, with Shapley values of an additive
model in closed form (phi_j = sum over the group of w (x - background mean))."""

import matplotlib

matplotlib.use("Agg")

import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import pytest

import jaximp
from jaximp.data import InputLayout

RNG = np.random.default_rng(3)
IMAGES = RNG.normal(size=(24, 4, 4))  # (n, h, w)
COLOUR = RNG.normal(size=(24, 4, 4, 2))  # (n, h, w, c)
SEQUENCES = RNG.normal(size=(24, 6, 3))  # (n, t, c)


def additive(shape, seed):
    """f(x) = sum w * x over the example's positions, and its weights w (float64)."""
    w = np.random.default_rng(seed).normal(size=shape)
    weights = jnp.asarray(w, jnp.float32)
    axes = "".join("abcd"[: len(shape)])

    def model(X):
        return jnp.einsum(f"n{axes},{axes}->n", X, weights)

    return model, w


def paint_patches(values, shape, size):
    """NumPy painting of per-patch values (patches in row-major grid order), by slicing."""
    out = np.full(shape, np.nan)
    cols = -(-shape[1] // size[1])
    for k, value in enumerate(values):
        i, j = divmod(k, cols)
        out[i * size[0]:(i + 1) * size[0], j * size[1]:(j + 1) * size[1]] = value
    return out


def paint_axis(values, shape, axis):
    """NumPy painting of one value per index along ``axis``."""
    out = np.empty(shape)
    for i, value in enumerate(values):
        np.moveaxis(out, axis, 0)[i] = value
    return out


def closed_form_shapley(X, w, groups):
    """Exact Shapley values of f = sum w x with the rows of X as background: for each group,
    sum over its positions of w (x - mean x), shape (n, p)."""
    flat = (X - X.mean(axis=0)) * w
    flat = flat.reshape(len(X), -1)
    return np.stack([flat[:, columns].sum(axis=1) for columns in groups.values()], axis=1)


def drawn(ax) -> np.ndarray:
    return np.asarray(ax.images[0].get_array(), dtype=np.float64)


# ------------------------------------------------------------------------------- the layout

def test_layout_paints_as_input_map_and_leaves_others_blank():
    groups = jaximp.input_groups((4, 4), patch=(2, 2))
    layout = InputLayout.from_groups((4, 4), groups)
    assert layout.input_shape == (4, 4) and layout.n_features == 4
    values = np.array([1.0, -2.0, 3.0, 4.0])
    expected = paint_patches(values, (4, 4), (2, 2))
    np.testing.assert_array_equal(layout.paint(values), expected)
    np.testing.assert_array_equal(jaximp.input_map(values, (4, 4), groups), expected)
    # trailing axes (outputs) travel along
    both = layout.paint(np.stack([values, 2 * values], axis=1))
    np.testing.assert_array_equal(both[..., 1], 2 * expected)
    # a result over some features: the rest blank
    some = InputLayout((4, 4), (groups["patch[0,1]"],))
    painted = some.paint(np.array([5.0]))
    assert np.isnan(painted[:2, :2]).all() and (painted[:2, 2:] == 5).all()
    assert np.isnan(painted[2:]).all()
    assert repr(some) == "InputLayout((4, 4), 1 features)"
    with pytest.raises(ValueError, match=r"one entry per feature \(4 for examples"):
        layout.paint(np.zeros(3))
    with pytest.raises(ValueError, match="feature_columns must give each feature distinct"):
        InputLayout((2, 2), ((0, 1), (1, 2)))


def test_layout_of_datasets():
    assert InputLayout.of(jaximp.as_dataset(RNG.normal(size=(5, 3)))) is None
    groups = jaximp.input_groups((4, 4, 2), axis=-1, prefix="channel")
    dataset = jaximp.as_dataset(COLOUR, groups=groups)
    layout = InputLayout.of(dataset)
    assert layout.feature_columns == tuple(tuple(c) for c in groups.values())
    assert InputLayout.of(dataset, dataset.features[1:]).feature_columns == \
        (tuple(groups["channel[1]"]),)


# ------------------------------------------------------------------------------- Shapley values

@pytest.mark.parametrize("X, groups, paint", [
    (IMAGES, jaximp.input_groups((4, 4), patch=(2, 2)),
     lambda v: paint_patches(v, (4, 4), (2, 2))),
    (COLOUR, jaximp.input_groups((4, 4, 2), patch=(2, 2)),
     lambda v: paint_patches(v, (4, 4, 2), (2, 2))),
    (COLOUR, jaximp.input_groups((4, 4, 2), axis=-1),
     lambda v: paint_axis(v, (4, 4, 2), -1)),
    (SEQUENCES, jaximp.input_groups((6, 3), axis=0, prefix="step"),
     lambda v: paint_axis(v, (6, 3), 0)),
], ids=["4x4 patches", "4x4x2 patches", "4x4x2 channels", "(t, c) time steps"])
def test_shapley_image_is_the_closed_form_painted(X, groups, paint):
    model, w = additive(X.shape[1:], seed=X.ndim)
    sv = jaximp.shapley_values(model, X[:5], background=X, groups=groups)
    phi = closed_form_shapley(X, w, groups)[:5]
    np.testing.assert_allclose(sv.values[..., 0], phi, atol=2e-5)  # float32 model
    for row in (0, 4):
        np.testing.assert_allclose(sv.image(row), paint(phi[row]), atol=2e-5)
        np.testing.assert_array_equal(sv.image(row),
                                      jaximp.input_map(sv.values[row, :, 0], X.shape[1:],
                                                       groups))
    sequence = X is SEQUENCES
    ax = sv.plot(kind="image", row=4, sequence=sequence)
    picture = sv.image(4)
    expected = picture.T if sequence else picture.mean(axis=-1) if picture.ndim == 3 else picture
    np.testing.assert_allclose(drawn(ax), expected, rtol=1e-12)
    low, high = ax.images[0].get_clim()
    assert ax.images[0].get_cmap().name == "RdBu_r" and low == -high  # signed: diverging
    plt.close("all")
    # importance(): mean |phi| over the rows, still on the positions
    importance = sv.importance(n_bootstrap=0)
    assert importance.info["input_layout"] == sv.info["input_layout"]
    np.testing.assert_allclose(importance.image(), paint(np.abs(phi).mean(axis=0)), atol=2e-5)


def test_shapley_of_some_features_leaves_the_others_blank():
    groups = jaximp.input_groups((4, 4), patch=(2, 2))
    model, w = additive((4, 4), seed=2)
    sv = jaximp.shapley_values(model, IMAGES[:3], background=IMAGES, groups=groups,
                               features=["patch[1,0]", "patch[0,1]"])
    phi = closed_form_shapley(IMAGES, w, groups)[:3]
    expected = paint_patches([np.nan, phi[2, 1], phi[2, 2], np.nan], (4, 4), (2, 2))
    np.testing.assert_allclose(sv.image(2), expected, atol=2e-5)  # NaN where equal NaN
    with pytest.raises(ValueError, match="row must be the index of an explained row"):
        sv.image(3)


def test_sampled_shapley_keeps_the_layout():
    groups = jaximp.input_groups((4, 4), patch=(2, 2))
    model, w = additive((4, 4), seed=2)
    sv = jaximp.shapley_values(model, IMAGES[:2], background=IMAGES, groups=groups,
                               method="permutation", n_permutations=4)
    phi = closed_form_shapley(IMAGES, w, groups)[:2]  # exact for an additive model
    assert sv.info.n_permutations == 4
    np.testing.assert_allclose(sv.image(1), paint_patches(phi[1], (4, 4), (2, 2)), atol=2e-5)


# ------------------------------------------------------------------------------- importances

def test_permutation_importance_image_and_plot():
    groups = jaximp.input_groups((4, 4), patch=(2, 2))
    model, _ = additive((4, 4), seed=5)
    y = np.asarray(model(jnp.asarray(IMAGES)), np.float64)
    imp = jaximp.permutation_importance(model, IMAGES, y, groups=groups, n_repeats=3)
    assert "input_layout" in imp.info and set(imp.info) >= {"loss", "input_layout"}
    painted = paint_patches(imp.importances_mean[:, 0], (4, 4), (2, 2))
    np.testing.assert_array_equal(imp.image(), painted)
    np.testing.assert_array_equal(
        imp.image(), jaximp.input_map(imp.importances_mean[:, 0], (4, 4), groups))
    ax = imp.plot(kind="image")
    np.testing.assert_array_equal(drawn(ax), imp.image())
    if imp.importances_mean.min() >= 0:  # unsigned: a sequential map from zero
        assert ax.images[0].get_clim()[0] == 0.0
    plt.close("all")
    # with bootstrap replicates (another return site)
    boot = jaximp.permutation_importance(model, IMAGES, y, groups=groups, n_repeats=2,
                                         n_bootstrap=3)
    np.testing.assert_array_equal(
        boot.image(), paint_patches(boot.importances_mean[:, 0], (4, 4), (2, 2)))


def test_sequence_heat_map_over_time():
    groups = jaximp.input_groups((6, 3), axis=0, prefix="step")
    model, _ = additive((6, 3), seed=7)
    y = np.asarray(model(jnp.asarray(SEQUENCES)), np.float64)
    imp = jaximp.permutation_importance(model, SEQUENCES, y, groups=groups, n_repeats=2)
    picture = imp.image()
    np.testing.assert_array_equal(picture, paint_axis(imp.importances_mean[:, 0], (6, 3), 0))
    ax = imp.plot(kind="image", sequence=True)
    np.testing.assert_array_equal(drawn(ax), picture.T)  # (c, t): time across
    assert ax.get_xlabel() == "time step" and ax.get_ylabel() == "channel"
    plt.close("all")


def test_channel_axis_of_channels_first_images():
    chw = np.moveaxis(COLOUR, -1, 1)  # (n, c, h, w), as torch models take them
    groups = jaximp.input_groups((2, 4, 4), axis=0, prefix="channel")
    model, w = additive((2, 4, 4), seed=1)
    sv = jaximp.shapley_values(model, chw[:2], background=chw, groups=groups)
    ax = sv.plot(kind="image", row=1, channel_axis=0)
    np.testing.assert_allclose(drawn(ax), sv.image(1).mean(axis=0), rtol=1e-12)
    phi = closed_form_shapley(chw, w, groups)[1]
    np.testing.assert_allclose(drawn(ax), np.full((4, 4), phi.mean()), atol=2e-5)
    with pytest.raises(ValueError, match="channel_axis must index the 3 axes"):
        sv.plot(kind="image", channel_axis=3)
    plt.close("all")


@pytest.mark.filterwarnings("ignore:sobol_indices assumes independent inputs")
def test_other_importance_methods_keep_the_layout():
    groups = jaximp.input_groups((4, 4), patch=(2, 2))
    model, _ = additive((4, 4), seed=5)
    y = np.asarray(model(jnp.asarray(IMAGES)), np.float64)
    results = {
        "loco": jaximp.loco_importance(model, IMAGES, y, strategy="mean", groups=groups),
        "sensitivity": jaximp.sensitivity_importance(model, IMAGES, y, groups=groups,
                                                     n_repeats=2),
        "conditional": jaximp.conditional_importance(model, IMAGES, y, groups=groups,
                                                     n_repeats=2),
        "sage": jaximp.sage_importance(model, IMAGES, y, groups=groups, estimator="exact",
                                       background_size=8),
        "dgsm": jaximp.dgsm(model, IMAGES, groups=groups),
    }
    sobol = jaximp.sobol_indices(model, IMAGES, groups=groups, n_repeats=2, n_bootstrap=0)
    results.update(sobol_first=sobol.first, sobol_total=sobol.total)
    for name, result in results.items():
        painted = paint_patches(result.importances_mean[:, 0], (4, 4), (2, 2))
        np.testing.assert_array_equal(result.image(), painted, err_msg=name)
    # partial dependence takes single positions (not patches): the others are blank
    pd = jaximp.pd_importance(model, IMAGES, features=["x[0,3]", "x[2,1]"], n_bootstrap=0,
                              grid_resolution=3)
    expected = np.full((4, 4), np.nan)
    expected[0, 3], expected[2, 1] = pd.importances_mean[:, 0]
    np.testing.assert_array_equal(pd.image(), expected)


# ------------------------------------------------------------------------------- tables

def test_results_of_tables_are_refused():
    X = RNG.normal(size=(20, 3))
    model = lambda A: A @ jnp.ones(3)
    imp = jaximp.permutation_importance(model, X, X.sum(axis=1), n_repeats=2)
    assert "input_layout" not in imp.info and imp.info.input_layout is None
    message = r"examples with more than two axes .* this result keeps no such positions"
    with pytest.raises(ValueError, match=message):
        imp.image()
    with pytest.raises(ValueError, match=message):
        imp.plot(kind="image")
    sv = jaximp.shapley_values(model, X[:2], background=X)
    with pytest.raises(ValueError, match=message):
        sv.plot(kind="image")
    with pytest.raises(ValueError, match=message):
        sv.importance(n_bootstrap=0).image()
    with pytest.raises(ValueError, match="kind must be"):
        imp.plot(kind="heatmap")
