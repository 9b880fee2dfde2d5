"""Gradient attributions, DGSM and gradient interactions: closed forms, float64 NumPy
references with the same draws, and captum run live on a torch twin of a JAX MLP."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import jaximp

from _torch_twin import max_relative, torch_twin
from jaximp.methods._gradients import expected_gradient_draws, quadrature

RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 4))
W1 = RNG.normal(size=(4, 8)) / 2
B1 = RNG.normal(size=8) / 4
W2 = RNG.normal(size=(8, 2)) / 2
B2 = np.array([0.1, -0.2])


def mlp(Z):
    h = jnp.tanh(Z @ jnp.asarray(W1, jnp.float32) + jnp.asarray(B1, jnp.float32))
    return h @ jnp.asarray(W2, jnp.float32) + jnp.asarray(B2, jnp.float32)


def mlp_np(Z):
    return np.tanh(Z @ W1 + B1) @ W2 + B2


def mlp_grad_np(Z):
    """(n, c, o) float64 gradients of the MLP."""
    h = np.tanh(Z @ W1 + B1)
    return np.einsum("ch,nh,ho->nco", W1, 1 - h ** 2, W2)


def test_integrated_gradients_of_a_linear_model_are_exact():
    w = np.array([1.0, -2.0, 0.5, 3.0])
    model = lambda Z: Z @ jnp.asarray(w, jnp.float32) + 1.0
    base = RNG.normal(size=4)
    for method in ("gausslegendre", "riemann_right"):
        ig = jaximp.integrated_gradients(model, X, baselines=base, method=method)
        np.testing.assert_allclose(ig.values[:, :, 0], (X - base) * w, rtol=2e-6, atol=2e-6)
    several = RNG.normal(size=(3, 4))  # averaged over baselines: (x - mean b) * w
    ig = jaximp.integrated_gradients(model, X, baselines=several, n_steps=3)
    np.testing.assert_allclose(ig.values[:, :, 0], (X - several.mean(0)) * w, atol=5e-6)
    np.testing.assert_allclose(ig.baseline_values[:, 0], (several @ w + 1).mean(), rtol=1e-6)
    mean = jaximp.integrated_gradients(model, X, baselines="mean")
    np.testing.assert_allclose(mean.values[:, :, 0], (X - X.mean(0)) * w, atol=5e-6)


def test_integrated_gradients_match_a_float64_quadrature_and_are_complete():
    ig = jaximp.integrated_gradients(mlp, X)  # defaults: zeros, 50 Gauss-Legendre nodes
    alphas, weights = quadrature("gausslegendre", 50)
    expected = sum(w * mlp_grad_np(a * X) for a, w in zip(alphas, weights)) * X[:, :, None]
    np.testing.assert_allclose(ig.values, expected, atol=2e-6)
    np.testing.assert_allclose(ig.predictions, mlp_np(X), atol=2e-6)
    assert np.all(ig.info["completeness_gap"] < 0.01)  # at the default steps
    np.testing.assert_allclose(ig.values.sum(1), mlp_np(X) - mlp_np(np.zeros((1, 4))),
                               atol=1e-5)
    with pytest.warns(RuntimeWarning, match="completeness by a relative gap"):
        jaximp.integrated_gradients(mlp, X, method="riemann_trapezoid", n_steps=4)


def test_expected_gradients_equal_a_float64_reference_with_the_same_draws():
    background = RNG.normal(size=(30, 4))
    eg = jaximp.expected_gradients(mlp, X, background, n_samples=16, random_state=3,
                                   memory_budget=1 << 18)
    index, alpha = expected_gradient_draws(64, 16, 30, random_state=3)
    b = background[index]  # (n, k, c)
    points = b + alpha[..., None] * (X[:, None] - b)
    grads = mlp_grad_np(points.reshape(-1, 4)).reshape(64, 16, 4, 2)
    expected = ((X[:, None] - b)[..., None] * grads).mean(axis=1)
    np.testing.assert_allclose(eg.values, expected, atol=3e-6)
    np.testing.assert_allclose(eg.baseline_values, mlp_np(b.reshape(-1, 4)).reshape(
        64, 16, 2).mean(1), atol=3e-6)
    # the same key, another chunking: the same draws
    again = jaximp.expected_gradients(mlp, X, background, n_samples=16, random_state=3)
    np.testing.assert_array_equal(again.values, eg.values)


def test_expected_gradients_with_input_noise_as_captums_gradient_shap():
    """stdev: each draw explains x + e, e ~ N(0, stdev^2) (captum's GradientShap stdevs);
    the float64 reference rebuilds the documented draws: row i's key folded with 1, split
    into one key per draw."""
    background = RNG.normal(size=(30, 4))
    rows = X[:6]
    eg = jaximp.expected_gradients(mlp, rows, background, n_samples=8, random_state=3,
                                   stdev=0.2)
    index, alpha = expected_gradient_draws(6, 8, 30, random_state=3)
    keys = jax.vmap(lambda i: jax.random.split(jax.random.fold_in(
        jax.random.fold_in(jax.random.key(3), i), 1), 8))(jnp.arange(6))
    noise = np.asarray(jax.vmap(jax.vmap(lambda key: jax.random.normal(key, (4,))))(keys),
                       np.float64) * 0.2
    b = background[index]
    delta = rows[:, None] + noise - b
    grads = mlp_grad_np((b + alpha[..., None] * delta).reshape(-1, 4)).reshape(6, 8, 4, 2)
    np.testing.assert_allclose(eg.values, (delta[..., None] * grads).mean(axis=1), atol=3e-6)
    np.testing.assert_array_equal(
        jaximp.expected_gradients(mlp, rows, background, n_samples=8, random_state=3,
                                  stdev=0.0).values,
        jaximp.expected_gradients(mlp, rows, background, n_samples=8, random_state=3).values)
    with pytest.raises(ValueError, match="stdev must be a number >= 0"):
        jaximp.expected_gradients(mlp, rows, stdev=-1.0)


def test_expected_gradients_estimate_integrated_gradients_averaged_over_the_background():
    background = RNG.normal(size=(8, 4))
    rows = X[:6]
    eg = jaximp.expected_gradients(mlp, rows, background, n_samples=64_000)
    ig = jaximp.integrated_gradients(mlp, rows, baselines=background)  # mean over baselines
    # the Monte-Carlo error of 64,000 draws: about a hundredth at most for these magnitudes
    # (4,000 left 0.033 and 0.045 with the draws of other JAX versions and devices)
    np.testing.assert_allclose(eg.values, ig.values, atol=0.03)


def test_saliency_and_gradient_times_input_are_analytic_gradients():
    A = RNG.normal(size=(4, 4))
    A = A + A.T
    quad = lambda Z: 0.5 * jnp.einsum("nc,cd,nd->n", Z, jnp.asarray(A, jnp.float32), Z)
    grad = X @ A
    signed = jaximp.saliency(quad, X, abs=False)
    np.testing.assert_allclose(signed.values[:, :, 0], grad, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jaximp.saliency(quad, X).values[:, :, 0], np.abs(grad),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jaximp.input_x_gradient(quad, X).values[:, :, 0], X * grad,
                               rtol=1e-5, atol=1e-5)


def _smooth_noise(n, k, c, seed, stdev):
    """An independent reconstruction of smoothgrad's documented draws: row i's key is the
    seed's key folded with i, split into k, one standard normal vector per key."""
    keys = jax.vmap(lambda i: jax.random.split(jax.random.fold_in(jax.random.key(seed), i),
                                               k))(jnp.arange(n))
    noise = jax.vmap(jax.vmap(lambda key: jax.random.normal(key, (c,))))(keys)
    return np.asarray(noise, np.float64) * stdev


def test_smoothgrad_equals_a_float64_reference_with_the_same_noise():
    rows = X[:5]
    sg = jaximp.smoothgrad(mlp, rows, stdev=0.3, n_samples=6, random_state=1)
    noisy = rows[:, None] + _smooth_noise(5, 6, 4, 1, 0.3)
    grads = mlp_grad_np(noisy.reshape(-1, 4)).reshape(5, 6, 4, 2)
    np.testing.assert_allclose(sg.values, grads.mean(1), atol=3e-6)
    by_inputs = jaximp.smoothgrad(mlp, rows, stdev=0.3, n_samples=6, random_state=1,
                                  multiply_by_inputs=True, abs=True)
    np.testing.assert_allclose(by_inputs.values, (np.abs(grads) * noisy[..., None]).mean(1),
                               atol=3e-6)
    # captum's NoiseTunnel nt_type: the mean square and the (population) variance
    squared = jaximp.smoothgrad(mlp, rows, stdev=0.3, n_samples=6, random_state=1,
                                nt_type="smoothgrad_sq")
    np.testing.assert_allclose(squared.values, (grads ** 2).mean(1), atol=3e-6)
    var = jaximp.smoothgrad(mlp, rows, stdev=0.3, n_samples=6, random_state=1,
                            nt_type="vargrad")
    np.testing.assert_allclose(var.values, grads.var(axis=1), atol=3e-6)
    assert var.info["nt_type"] == "vargrad"


def test_dgsm_equals_its_closed_form():
    a = np.array([1.0, 2.0, 3.0])
    U = np.random.default_rng(1).uniform(size=(2000, 3))
    model = lambda Z: (Z ** 2) @ jnp.asarray(a, jnp.float32)
    imp = jaximp.dgsm(model, U)
    same_rows = np.mean((2 * a * U) ** 2, axis=0)  # float64 on the same rows
    np.testing.assert_allclose(imp.importances_mean[:, 0], same_rows, rtol=1e-5)
    population = 4 * a ** 2 / 3  # E[(2 a x)^2], x ~ U(0, 1)
    assert np.all(np.abs(imp.importances_mean[:, 0] - population)
                  < 4 * imp.importances_std[:, 0])
    assert imp.importances.shape == (3, 1, 100)
    normalized = jaximp.dgsm(model, U, normalize=True, n_bootstrap=0)
    preds = (U ** 2) @ a
    span = U.max(0) - U.min(0)
    np.testing.assert_allclose(normalized.importances_mean[:, 0],
                               same_rows * span ** 2 / (np.pi ** 2 * preds.var()), rtol=1e-4)


def test_hessian_interactions_are_the_mean_absolute_second_derivatives():
    model = lambda Z: Z[:, 0] * Z[:, 1] + jnp.sin(Z[:, 2]) + Z[:, 3] ** 2
    h = jaximp.gradient_interactions(model, X, n_bootstrap=0)
    matrix = h.info["matrix"][..., 0]
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[1, 0] = 1.0
    expected[2, 2] = np.abs(np.sin(X[:, 2])).mean()
    expected[3, 3] = 2.0
    np.testing.assert_allclose(matrix, expected, atol=1e-6)
    assert h.top(1) == [("x0", "x1")]


def test_integrated_hessians_of_a_product():
    model = lambda Z: Z[:, 0] * Z[:, 1] + 2 * Z[:, 2]
    rows = X[:6, :3]
    ih = jaximp.gradient_interactions(model, rows, kind="integrated_hessians", n_steps=4)
    gamma = ih.values[..., 0]
    quarter = rows[:, 0] * rows[:, 1] / 4  # int int alpha beta = 1/4, zero baseline
    for j, k in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        np.testing.assert_allclose(gamma[:, j, k], quarter, atol=1e-6)
    np.testing.assert_allclose(gamma[:, 2, 2], 2 * rows[:, 2], atol=1e-6)
    assert np.all(gamma[:, 2, :2] == 0) and np.all(gamma[:, :2, 2] == 0)
    # the pair's full interaction (both halves) and the main effects give f(x) - f(0)
    pair = ih.interaction(n_bootstrap=0)
    np.testing.assert_allclose(pair.values[0, 0], np.abs(2 * quarter).mean(), rtol=1e-6)
    np.testing.assert_allclose(gamma.sum(axis=(1, 2)), model(rows), atol=1e-5)
    ig = jaximp.integrated_gradients(model, rows, n_steps=4)
    np.testing.assert_allclose(ih.attributions().values, ig.values, atol=1e-6)


def test_integrated_hessians_rows_sum_to_integrated_gradients_on_an_mlp():
    rows = X[:4]
    ih = jaximp.gradient_interactions(mlp, rows, kind="integrated_hessians",
                                      baselines="mean", output=0)
    ig = jaximp.integrated_gradients(mlp, rows, baselines=X[:4].mean(0), output=0, n_steps=20)
    np.testing.assert_allclose(ih.values.sum(axis=2), ig.values, atol=2e-5)
    assert ih.info["completeness_gap"][0] < 1e-4


def test_groups_sum_their_columns_and_importance_has_intervals():
    ig = jaximp.integrated_gradients(mlp, X, groups={"g": ["x0", "x1"]})
    plain = jaximp.integrated_gradients(mlp, X)
    assert ig.feature_names == ("g", "x2", "x3")
    np.testing.assert_allclose(ig.values[:, 0], plain.values[:, :2].sum(1), atol=1e-6)
    imp = plain.importance(n_bootstrap=50)
    np.testing.assert_allclose(imp.importances_mean, np.abs(plain.values).mean(0))
    assert imp.importances.shape == (4, 2, 50) and np.all(imp.importances_std > 0)
    ax = plain.plot(output=1)  # bars of the importance, strongest on top
    assert ax.get_yticklabels()[-1].get_text() == imp.top(1, output=1)[0]
    frame = plain.to_frame()
    assert len(frame) == 64 * 4 * 2 and list(frame.columns)[:3] == ["row", "feature", "output"]


def test_refuses_host_models_categorical_and_integer_inputs():
    from sklearn.linear_model import LinearRegression

    fitted = LinearRegression().fit(X, X[:, 0])
    with pytest.raises(TypeError, match="outside JAX.*shapley_values"):
        jaximp.integrated_gradients(fitted, X)
    frame = pd.DataFrame({"a": X[:, 0], "b": pd.Categorical(np.arange(64) % 3)})
    with pytest.raises(TypeError, match="categorical features.*permutation_importance"):
        jaximp.saliency(lambda Z: Z.sum(1), frame)
    with pytest.raises(TypeError, match="integer or boolean columns"):
        jaximp.dgsm(lambda Z: Z.sum(1), np.arange(12).reshape(6, 2))
    with pytest.raises(ValueError, match="baselines must be"):
        jaximp.integrated_gradients(mlp, X, baselines=np.zeros(3))
    with pytest.raises(ValueError, match="n_steps must be an int >= 1"):
        jaximp.integrated_gradients(mlp, X, n_steps=0)


def test_a_number_as_baseline_is_that_value_in_every_column():
    """As captum's scalar baseline (and ablation_attributions'): 0.25 everywhere."""
    full = jaximp.integrated_gradients(mlp, X[:5], baselines=np.full(X.shape[1], 0.25))
    np.testing.assert_array_equal(
        jaximp.integrated_gradients(mlp, X[:5], baselines=0.25).values, full.values)
    with pytest.raises(ValueError, match="baselines contain NaN or infinite values"):
        jaximp.integrated_gradients(mlp, X[:5], baselines=float("nan"))


def test_refuses_trees_read_into_arrays_whose_gradient_is_zero():
    """A forest read into node arrays is a JAX model whose gradient is 0 almost everywhere:
    every gradient method, and the derivative PD and ALE, refuse it (they returned zeros)."""
    from sklearn.ensemble import RandomForestRegressor

    forest = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(
        X, X[:, 0] + X[:, 1] * X[:, 2])
    assert jaximp.as_predictor(forest).piecewise_constant
    calls = [jaximp.saliency, jaximp.input_x_gradient, jaximp.smoothgrad, jaximp.dgsm,
             jaximp.integrated_gradients, jaximp.gradient_interactions,
             lambda m, A: jaximp.expected_gradients(m, A, n_samples=4),
             lambda m, A: jaximp.Explainer(m, A).saliency()]
    for call in calls:
        with pytest.raises(TypeError, match="piecewise constant.*tree_shap"):
            call(forest, X[:8])
    for call in (jaximp.partial_dependence, jaximp.ale):
        with pytest.raises(ValueError, match="piecewise constant.*derivative=False"):
            call(forest, X, 0, derivative=True)


# --------------------------------------------------------------------------------------------
# captum, live, on a torch twin of the JAX MLP (float32 both)
# --------------------------------------------------------------------------------------------


def test_against_captum_integrated_gradients_saliency_and_input_x_gradient():
    torch, net = torch_twin([(W1, B1), (W2, B2)])
    from captum.attr import InputXGradient, IntegratedGradients, NoiseTunnel, Saliency

    inputs = torch.tensor(X, dtype=torch.float32)
    for method in ("gausslegendre", "riemann_trapezoid"):
        with warnings.catch_warnings():  # captum's trapezoid weights sum to 1 - 1/n: a 2% gap
            warnings.simplefilter("ignore", RuntimeWarning)
            ours = jaximp.integrated_gradients(mlp, X, method=method, output=1, n_steps=50)
        theirs = IntegratedGradients(net).attribute(inputs, target=1, n_steps=50,
                                                    method=method).detach().numpy()
        assert max_relative(ours.values[:, :, 0], theirs) < 1e-5
    # a baseline per row (captum's baselines of the inputs' shape)
    paired = RNG.normal(size=X.shape)
    with pytest.warns(UserWarning, match="captum pairs row i with baseline i"):
        averaged = jaximp.integrated_gradients(mlp, X, baselines=paired)  # every row, each
    np.testing.assert_array_equal(  # baseline: the same as saying so, which does not warn
        jaximp.integrated_gradients(mlp, X, baselines=paired, paired_baselines=False).values,
        averaged.values)
    ours = jaximp.integrated_gradients(mlp, X, baselines=paired, paired_baselines=True,
                                       output=0)
    theirs = IntegratedGradients(net).attribute(
        inputs, baselines=torch.tensor(paired, dtype=torch.float32), target=0,
        n_steps=50).detach().numpy()
    assert max_relative(ours.values[:, :, 0], theirs) < 1e-5
    np.testing.assert_allclose(ours.baseline_values[:, 0], mlp_np(paired)[:, 0], atol=2e-6)
    # the integrated gradient alone (captum's multiply_by_inputs=False), paired or not
    for baselines, pair in ((None, False), (paired, True)):
        ours = jaximp.integrated_gradients(mlp, X, baselines=baselines, output=0,
                                           paired_baselines=pair, multiply_by_inputs=False)
        given = None if baselines is None else torch.tensor(baselines, dtype=torch.float32)
        theirs = IntegratedGradients(net, multiply_by_inputs=False).attribute(
            inputs, baselines=given, target=0, n_steps=50).detach().numpy()
        assert max_relative(ours.values[:, :, 0], theirs) < 1e-5
        assert "completeness_gap" not in ours.info
    ours = jaximp.saliency(mlp, X, output=0)
    theirs = Saliency(net).attribute(inputs, target=0).numpy()
    assert max_relative(ours.values[:, :, 0], theirs) < 1e-5
    ours = jaximp.input_x_gradient(mlp, X, output=0)
    theirs = InputXGradient(net).attribute(inputs, target=0).detach().numpy()
    assert max_relative(ours.values[:, :, 0], theirs) < 1e-5
    # SmoothGrad: captum's Saliency on our noisy rows, averaged, is ours; NoiseTunnel with its
    # own noise agrees in expectation (here to Monte-Carlo error)
    rows = X[:5]
    noisy = rows[:, None] + _smooth_noise(5, 6, 4, 2, 0.2)
    flat = torch.tensor(noisy.reshape(-1, 4), dtype=torch.float32)
    theirs = Saliency(net).attribute(flat, target=0, abs=False).numpy().reshape(5, 6, 4)
    ours = jaximp.smoothgrad(mlp, rows, stdev=0.2, n_samples=6, random_state=2, output=0)
    assert max_relative(ours.values[:, :, 0], theirs.mean(1)) < 1e-5
    torch.manual_seed(0)
    tunnel = NoiseTunnel(Saliency(net)).attribute(
        torch.tensor(rows, dtype=torch.float32), nt_type="smoothgrad", nt_samples=1000,
        stdevs=0.2, target=0, abs=False).numpy()
    many = jaximp.smoothgrad(mlp, rows, stdev=0.2, n_samples=1000, output=0)
    np.testing.assert_allclose(many.values[:, :, 0], tunnel, atol=0.02)
    # nt_type, on our noise: captum's NoiseTunnel takes the mean square or the variance of
    # the per-sample attributions it computed (its formulas applied to Saliency on our rows)
    for nt_type, reduce in (("smoothgrad_sq", lambda a: (a ** 2).mean(1)),
                            ("vargrad", lambda a: (a ** 2).mean(1) - a.mean(1) ** 2)):
        ours = jaximp.smoothgrad(mlp, rows, stdev=0.2, n_samples=6, random_state=2, output=0,
                                 nt_type=nt_type)
        assert max_relative(ours.values[:, :, 0], reduce(theirs)) < 1e-4


def test_attributions_of_images_paint_back_onto_the_image():
    """Integrated gradients of (n, 4, 4, 1) images: image() puts each pixel's attribution (a
    patch group's value on each of its pixels) at its position, and plot(kind="image") draws
    it; a table's attributions are refused."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(2)
    X = rng.normal(size=(3, 4, 4, 1))
    w = jnp.asarray(rng.normal(size=(4, 4, 1)), jnp.float32)

    def linear(A):
        return jnp.einsum("nhwc,hwc->n", A, w)

    pixels = jaximp.integrated_gradients(linear, X)
    np.testing.assert_allclose(pixels.image(row=1), X[1] * np.asarray(w), rtol=1e-5,
                               atol=1e-6)  # IG of a linear model: x * w
    patches = jaximp.integrated_gradients(
        linear, X, groups=jaximp.input_groups((4, 4, 1), patch=(2, 2)))
    painted = patches.image(row=1)
    block = (X[1] * np.asarray(w))[:2, :2].sum()
    np.testing.assert_allclose(painted[:2, :2], block, rtol=1e-5, atol=1e-6)
    ax = pixels.plot(kind="image", row=1)
    np.testing.assert_allclose(ax.images[0].get_array(), (X[1] * np.asarray(w))[..., 0],
                               rtol=1e-5, atol=1e-6)
    plt.close("all")
    with pytest.raises(ValueError, match="image\\(\\) shows attributions"):
        jaximp.integrated_gradients(lambda A: A.sum(axis=1), X.reshape(3, -1)).image()


# --------------------------------------------------------------------------------------------
# One output per row (captum's target tensor)
# --------------------------------------------------------------------------------------------

PREDICTED = np.argmax(mlp_np(X), axis=1)  # each row's "predicted class" of the two outputs


def test_per_row_output_is_each_rows_column_of_the_all_outputs_attributions():
    """Row i's attributions for output[i] alone equal column output[i] of the attributions for
    every output (the same draws, one pullback instead of two), and completeness and the
    baseline values follow each row's output."""
    rows = np.arange(len(X))
    calls = {
        "integrated_gradients": lambda **kw: jaximp.integrated_gradients(
            mlp, X, baselines="mean", **kw),
        "paired": lambda **kw: jaximp.integrated_gradients(
            mlp, X, baselines=X[::-1], paired_baselines=True, **kw),
        "expected_gradients": lambda **kw: jaximp.expected_gradients(mlp, X, n_samples=8, **kw),
        "smoothgrad": lambda **kw: jaximp.smoothgrad(mlp, X, stdev=0.3, **kw),
        "saliency": lambda **kw: jaximp.saliency(mlp, X, **kw),
        "input_x_gradient": lambda **kw: jaximp.input_x_gradient(mlp, X, **kw),
    }
    for name, call in calls.items():
        every, per_row = call(), call(output=PREDICTED)
        assert per_row.values.shape == (len(X), 4, 1), name
        assert per_row.output_names == ("output per row",), name
        np.testing.assert_array_equal(per_row.info["output_per_row"], PREDICTED)
        np.testing.assert_allclose(per_row.values[:, :, 0], every.values[rows, :, PREDICTED],
                                   rtol=1e-6, atol=1e-7, err_msg=name)
        np.testing.assert_allclose(per_row.predictions[:, 0], mlp_np(X)[rows, PREDICTED],
                                   atol=2e-6, err_msg=name)
        if every.baseline_values is not None:
            np.testing.assert_allclose(per_row.baseline_values[:, 0],
                                       every.baseline_values[rows, PREDICTED], atol=1e-6)
    # the same on an Explainer over rows kept on the device: its rows are extended there
    # (row numbers, per-row outputs, paired baselines) and a repeat sends nothing implicitly
    ex = jaximp.Explainer(mlp, jnp.asarray(X, jnp.float32))
    bound = {
        "integrated_gradients": lambda **kw: ex.integrated_gradients(baselines="mean", **kw),
        "paired": lambda **kw: ex.integrated_gradients(baselines=X[::-1],
                                                       paired_baselines=True, **kw),
        "expected_gradients": lambda **kw: ex.expected_gradients(n_samples=8, **kw),
        "smoothgrad": lambda **kw: ex.smoothgrad(stdev=0.3, **kw),
    }
    for name, call in bound.items():
        first = call(output=PREDICTED)
        with jax.transfer_guard("disallow"):
            again = call(output=PREDICTED)
        np.testing.assert_array_equal(again.values, first.values, err_msg=name)
        np.testing.assert_allclose(first.values, calls[name](output=PREDICTED).values,
                                   rtol=1e-6, atol=1e-7, err_msg=name)
    # completeness of the per-row output against a float64 reference
    ig = jaximp.integrated_gradients(mlp, X, output=PREDICTED)
    target = mlp_np(X)[rows, PREDICTED] - mlp_np(np.zeros((1, 4)))[0, PREDICTED]
    gap = np.abs(ig.values[:, :, 0].sum(axis=1) - target).mean() / np.abs(target).mean()
    np.testing.assert_allclose(ig.info["completeness_gap"][0], gap, rtol=1e-3, atol=1e-7)
    assert gap < 1e-5
    # a pandas Series and a JAX array work as well; importance() reads the one column
    series = jaximp.saliency(mlp, X, output=pd.Series(PREDICTED))
    jax_array = jaximp.saliency(mlp, X, output=jnp.asarray(PREDICTED))
    np.testing.assert_array_equal(series.values, jax_array.values)
    assert series.importance(n_bootstrap=0).output_names == ("output per row",)
    # one index as an array (captum's target=torch.tensor(1) or tensor([1])) serves every row
    one = jaximp.saliency(mlp, X, output=1).values
    for same in (np.array(1), np.array([1]), jnp.asarray([1])):
        np.testing.assert_array_equal(jaximp.saliency(mlp, X, output=same).values, one)


def test_against_captum_with_a_target_per_row():
    torch, net = torch_twin([(W1, B1), (W2, B2)])
    from captum.attr import InputXGradient, IntegratedGradients, Saliency

    inputs = torch.tensor(X, dtype=torch.float32)
    target = torch.tensor(PREDICTED)
    ours = jaximp.integrated_gradients(mlp, X, output=PREDICTED)
    theirs = IntegratedGradients(net).attribute(inputs, target=target,
                                                n_steps=50).detach().numpy()
    assert max_relative(ours.values[:, :, 0], theirs) < 1e-5
    paired = RNG.normal(size=X.shape)
    with pytest.warns(UserWarning, match="captum pairs row i with baseline i"):
        averaged = jaximp.integrated_gradients(mlp, X, baselines=paired)  # every row, each
    np.testing.assert_array_equal(  # baseline: the same as saying so, which does not warn
        jaximp.integrated_gradients(mlp, X, baselines=paired, paired_baselines=False).values,
        averaged.values)
    ours = jaximp.integrated_gradients(mlp, X, baselines=paired, paired_baselines=True,
                                       output=PREDICTED, method="riemann_middle", n_steps=20)
    theirs = IntegratedGradients(net).attribute(
        inputs, baselines=torch.tensor(paired, dtype=torch.float32), target=target,
        n_steps=20, method="riemann_middle").detach().numpy()
    assert max_relative(ours.values[:, :, 0], theirs) < 1e-5
    for abs_ in (True, False):
        ours = jaximp.saliency(mlp, X, output=PREDICTED, abs=abs_)
        theirs = Saliency(net).attribute(inputs, target=target, abs=abs_).numpy()
        assert max_relative(ours.values[:, :, 0], theirs) < 1e-5
    ours = jaximp.input_x_gradient(mlp, X, output=PREDICTED)
    theirs = InputXGradient(net).attribute(inputs, target=target).detach().numpy()
    assert max_relative(ours.values[:, :, 0], theirs) < 1e-5
    # captum's target as a torch tensor is read as the same per-row outputs
    np.testing.assert_array_equal(jaximp.input_x_gradient(mlp, X, output=target).values,
                                  ours.values)


def test_a_bad_per_row_output_is_refused_with_the_fix():
    for bad, error, message in [
        (PREDICTED[:10], ValueError, r"must have shape \(64,\); got shape \(10,\)"),
        (PREDICTED[:, None], ValueError, r"must have shape \(64,\); got shape \(64, 1\)"),
        (PREDICTED.astype(float), TypeError, "must hold integer output indices"),
        (PREDICTED.astype(bool), TypeError, "must hold integer output indices"),
        (PREDICTED + 1, ValueError, r"indices in \[0, 1\] for a model with 2 outputs; got 2"),
        (PREDICTED - 1, ValueError, r"got -1 at row \d+"),
    ]:
        for method in (jaximp.integrated_gradients, jaximp.saliency):
            with pytest.raises(error, match=message):
                method(mlp, X, output=bad)
    # a list names outputs: one named twice is refused (captum's target list is per row)
    for twice in ([0, 1, 0], [0, -2]):  # by index, not by spelling
        with pytest.raises(ValueError, match=r"more than once.*integer array of shape \(n,\)"):
            jaximp.saliency(mlp, X, output=twice)
    # methods without per-row outputs say which ones take them
    with pytest.raises(TypeError, match="taken by the per-row attributions only"):
        jaximp.dgsm(mlp, X, output=PREDICTED)
    with pytest.raises(TypeError, match="taken by the per-row attributions only"):
        jaximp.permutation_importance(mlp, X, mlp_np(X), output=PREDICTED)


@pytest.mark.parametrize("method", ["saliency", "integrated_gradients", "expected_gradients"])
def test_a_piecewise_constant_model_warns_that_every_gradient_is_zero(method):
    """Integer, boolean or rounded outputs vary over the rows while jax.grad gives exactly 0
    everywhere: a warning says so (a constant model's zeros are right and pass quietly)."""
    X = np.random.default_rng(0).normal(size=(6, 2)).astype(np.float32)
    call = getattr(jaximp, method)
    for model in (lambda A: (A[:, 0] > 0).astype(jnp.int32), lambda A: jnp.round(3 * A[:, 0])):
        with pytest.warns(RuntimeWarning, match=f"{method}: every attribution is exactly 0 "
                                                "while the predictions vary") as caught:
            result = call(model, X)
        assert not result.values.any()
        assert any(each.filename == __file__ for each in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not call(lambda A: 0 * A[:, 0] + 1, X).values.any()
        if method == "integrated_gradients":  # baselines at the rows: 0 is right
            assert not call(lambda A: jnp.sin(A[:, 0]), X, baselines=X,
                            paired_baselines=True).values.any()
        assert call(lambda A: A[:, 0] ** 2, X).values.any()


@pytest.mark.parametrize("method", ["dgsm", "saliency"])
def test_infinite_gradients_are_named_as_gradients(method):
    """sqrt at 0 has a finite value and an infinite gradient: the error says gradients."""
    X = np.random.default_rng(0).uniform(size=(20, 2))
    X[3, 0] = 0.0
    with pytest.raises(FloatingPointError, match=f"{method} of the model .* is NaN or infinite: "
                       "its predictions or gradients"):
        getattr(jaximp, method)(lambda X: jnp.sqrt(X[:, 0]) + X[:, 1], X)


def test_second_derivatives_of_a_relu_network_warn_instead_of_reading_zero():
    """A ReLU MLP's Hessian is 0 almost everywhere: every gradient interaction read 0 with no
    warning, and integrated hessians missed completeness by a third silently. Both warn now,
    naming methods that see the interactions; a smooth model does not warn."""
    X, y = jaximp.make_friedman1(n=120, random_state=0)
    relu = jaximp.fit_mlp(X, y, hidden=(16, 16))
    with pytest.warns(RuntimeWarning, match="every second derivative is exactly 0.*h_statistic"):
        flat = jaximp.gradient_interactions(relu, X[:40], n_bootstrap=0)
    assert not flat.values.any()
    with pytest.warns(RuntimeWarning, match="integrated hessians miss completeness"):
        jaximp.gradient_interactions(relu, X[:10], kind="integrated_hessians")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        smooth = jaximp.gradient_interactions(lambda A: A[:, 0] * A[:, 1], X[:40],
                                              n_bootstrap=0)
    assert smooth.values[0, 0] == pytest.approx(1.0)
