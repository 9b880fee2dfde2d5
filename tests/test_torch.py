"""PyTorch modules as models: the same numbers as the same network in JAX."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaximp

torch = pytest.importorskip("torch")


def _twins(seed=0, sizes=(3, 8, 2)):
    """A torch MLP and the same network (same float32 weights) as a JAX function."""
    torch.manual_seed(seed)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.Tanh()]
    module = torch.nn.Sequential(*layers[:-1]).eval()
    weights = [(jnp.asarray(m.weight.detach().numpy().T), jnp.asarray(m.bias.detach().numpy()))
               for m in module if isinstance(m, torch.nn.Linear)]

    def f_jax(X):
        h = X
        for W, b in weights[:-1]:
            h = jnp.tanh(h @ W + b)
        W, b = weights[-1]
        return h @ W + b

    return module, f_jax


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3)).astype(np.float32)
    return X, X[:, 0] - 2 * X[:, 1] ** 2


def test_predictor_equals_the_jax_twin(data):
    X, _ = data
    module, f_jax = _twins()
    predictor = jaximp.as_predictor(module, n_features=3)
    assert predictor.host and predictor.name == "torch Sequential"
    assert predictor.n_outputs == 2
    out = np.asarray(predictor(jnp.asarray(X)))
    np.testing.assert_allclose(out, np.asarray(f_jax(jnp.asarray(X))), rtol=1e-5, atol=1e-6)


def test_methods_equal_the_jax_twin(data):
    X, y = data
    module, f_jax = _twins(sizes=(3, 8, 1))
    pd_torch = jaximp.partial_dependence(module, X, 0, grid_resolution=7)
    pd_jax = jaximp.partial_dependence(f_jax, X, 0, grid_resolution=7)
    np.testing.assert_allclose(pd_torch.average, pd_jax.average, rtol=1e-5, atol=1e-6)
    fi_torch = jaximp.permutation_importance(module, X, y, n_repeats=3)
    fi_jax = jaximp.permutation_importance(f_jax, X, y, n_repeats=3)
    np.testing.assert_allclose(fi_torch.importances, fi_jax.importances, rtol=1e-4, atol=1e-5)


def test_explainer_with_a_torch_module(data):
    X, y = data
    module, f_jax = _twins(sizes=(3, 8, 1))
    ex = jaximp.Explainer(module, X, y)
    np.testing.assert_allclose(ex.h_statistic().pairwise.values,
                               jaximp.h_statistic(f_jax, X).pairwise.values, rtol=1e-3,
                               atol=1e-6)
    assert jaximp.explain(module, X, y, methods=["permutation"]).model_summary["runs on"] \
        == "its framework, on JAX's device batches (DLPack)"
    plain = jaximp.permutation_importance(module, X, y, n_repeats=3).importances
    for _ in range(2):  # the Explainer's permutations drawn once, its launch kept
        np.testing.assert_array_equal(ex.permutation_importance(n_repeats=3).importances, plain)


def test_training_mode_with_dropout_warns():
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.5),
                                 torch.nn.Linear(4, 1))
    with pytest.warns(UserWarning, match=r"training mode .* module.eval\(\)"):
        jaximp.as_predictor(module, n_features=3)


def test_a_module_returning_a_tuple_is_refused():
    class Pair(torch.nn.Module):
        def forward(self, X):
            return X, X

    with pytest.raises(TypeError, match="returned a tuple; jaximp explains modules that "
                                        "return one tensor"):
        jaximp.as_predictor(Pair(), n_features=3)


def test_the_engine_hands_its_device_rows_to_a_module_through_dlpack(data, monkeypatch):
    """After the probe, every batch reaches the module as a tensor sharing the buffer of the
    JAX array the engine built (DLPack, no copy on the CPU); predict (NumPy rows) is never
    called, and the partial dependence, ICE curves and permutation importance equal the JAX
    twin's."""
    from jaximp.models._torch import TorchModel

    X, y = data
    module, f_jax = _twins(sizes=(3, 8, 1))
    exported, received = [], []
    from_dlpack = torch.from_dlpack

    def recording_from_dlpack(array):
        exported.append(array.unsafe_buffer_pointer())
        return from_dlpack(array)

    module.register_forward_pre_hook(lambda _, args: received.append(args[0].data_ptr()))
    predictor = jaximp.as_predictor(module, n_features=3)
    assert predictor.device_fn is not None and predictor.dtype == np.float32
    monkeypatch.setattr(torch, "from_dlpack", recording_from_dlpack)
    monkeypatch.setattr(TorchModel, "predict", lambda *_: pytest.fail("predict was called"))
    received.clear()
    pd_torch = jaximp.partial_dependence(predictor, X, 0, grid_resolution=7, kind="both")
    pd_jax = jaximp.partial_dependence(f_jax, X, 0, grid_resolution=7, kind="both")
    np.testing.assert_allclose(pd_torch.average, pd_jax.average, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(pd_torch.individual, pd_jax.individual, rtol=1e-6, atol=1e-7)
    fi_torch = jaximp.permutation_importance(predictor, X, y, n_repeats=3)
    fi_jax = jaximp.permutation_importance(f_jax, X, y, n_repeats=3)
    # the losses' float32 sums, of other blocks: equal to a few ulps of the losses (near 12
    # here, whose float32 ulp is 9.5e-7)
    ulp = np.spacing(np.float32(np.max(fi_jax.info.baseline)))
    np.testing.assert_allclose(fi_torch.importances, fi_jax.importances, rtol=0, atol=8 * ulp)
    assert received and set(received) <= set(exported)


def test_a_function_of_tensors_or_of_numpy_arrays_through_dlpack(data):
    """A DLPackModel: a function of torch tensors, or of NumPy arrays (as a CuPy model gets
    CuPy arrays), equals the same function in JAX, two outputs included."""
    X, y = data
    module, f_jax = _twins()

    def on_tensors(rows):
        with torch.inference_mode():
            return module(rows)

    def on_numpy(rows):
        return np.stack([rows[:, 0] * rows[:, 1], np.sin(rows[:, 2])], axis=1)

    def on_jax(rows):
        return jnp.stack([rows[:, 0] * rows[:, 1], jnp.sin(rows[:, 2])], axis=1)

    # the module's weights are on the CPU: its function takes CPU tensors (on a machine with
    # a GPU, JAX's rows would otherwise be there)
    for model, twin in ((jaximp.DLPackModel(on_tensors, torch.from_dlpack, device="cpu"), f_jax),
                        (jaximp.DLPackModel(on_numpy, np.from_dlpack, name="numpy f"), on_jax)):
        predictor = jaximp.as_predictor(model, n_features=3)
        assert predictor.n_outputs == 2 and predictor.device_fn is not None
        ours = jaximp.partial_dependence_all(model, X, grid_resolution=5)
        theirs = jaximp.partial_dependence_all(twin, X, grid_resolution=5)
        for name in ours:
            np.testing.assert_allclose(ours[name].average, theirs[name].average, rtol=1e-6,
                                       atol=1e-7)
        h = jaximp.h_statistic(model, X[:40], pairs="all").pairwise.values
        np.testing.assert_allclose(h, jaximp.h_statistic(twin, X[:40], pairs="all")
                                   .pairwise.values, rtol=1e-4, atol=1e-7)


def test_a_model_through_dlpack_gets_its_batches_on_its_own_device(data):
    """The engine builds a foreign model's batches on the model's device: a torch module's
    (its parameters'), a DLPackModel's ``device``, the CPU for NumPy's importer (NumPy reads
    host memory alone); a device JAX lacks is refused by name."""
    import jax

    from jaximp.models._dlpack import jax_device_of

    X, _ = data
    cpu = jax.local_devices(backend="cpu")[0]
    module, _ = _twins()
    assert jaximp.as_predictor(module, n_features=3).device == cpu
    numpy_model = jaximp.DLPackModel(lambda rows: rows[:, :1], np.from_dlpack)
    assert numpy_model.jax_device == cpu and jaximp.as_predictor(
        numpy_model, n_features=3).device == cpu
    assert jaximp.DLPackModel(lambda rows: rows, torch.from_dlpack).jax_device is None
    assert jax_device_of(torch.device("cpu")) == jax_device_of("cpu") == cpu
    seen = []

    def recording(rows):
        seen.append(rows.device)
        return rows[:, 0] * 2.0

    model = jaximp.DLPackModel(recording, torch.from_dlpack, device="cpu")
    pd = jaximp.partial_dependence(model, X, 0, grid_resolution=3)
    np.testing.assert_allclose(pd.average[:, 0], 2 * np.asarray(pd.grid_values[0]), rtol=1e-6)
    assert seen and {d.type for d in seen} == {"cpu"}
    if jax.default_backend() == "cpu":  # a GPU JAX has one
        with pytest.raises(ValueError, match="device 'gpu' names no device of this JAX"):
            jaximp.DLPackModel(recording, torch.from_dlpack, device="gpu")
    with pytest.raises(TypeError, match="device must be a jax.Device or a platform name"):
        jaximp.DLPackModel(recording, torch.from_dlpack, device=0)


def test_a_model_through_dlpack_that_misbehaves_is_refused_by_name():
    X = np.random.default_rng(1).normal(size=(40, 3)).astype(np.float32)
    calls = []

    def growing(rows):  # one output at the probe, two afterwards
        calls.append(1)
        out = np.asarray(rows)[:, :1]
        return out if len(calls) == 1 else np.concatenate([out, out], axis=1)

    with pytest.raises(ValueError, match="returned shape .* but 1 output"):
        jaximp.partial_dependence(jaximp.DLPackModel(growing, np.from_dlpack), X, 0)
    with pytest.raises(TypeError, match="returned a list; a model called through DLPack"):
        jaximp.as_predictor(jaximp.DLPackModel(lambda rows: [1.0], np.from_dlpack),
                            n_features=3)
    with pytest.raises(TypeError, match="DLPackModel takes the model and its framework"):
        jaximp.DLPackModel(lambda rows: rows, None)


def test_wrappers_of_a_module_through_dlpack_transform_its_predictions(data):
    """Logits read as probabilities, outputs combined and conditional draws apply to a module
    called through DLPack as to its JAX twin."""
    X, _ = data
    module, f_jax = _twins()  # two outputs: the logits of two classes
    labels = (np.asarray(f_jax(jnp.asarray(X))).argmax(axis=1) + (X[:, 2] > 1)) % 2
    for loss in ("log_loss", "accuracy"):
        ours = jaximp.permutation_importance(module, X, labels, loss=loss, response="logits",
                                            n_repeats=2)
        theirs = jaximp.permutation_importance(f_jax, X, labels, loss=loss, response="logits",
                                              n_repeats=2)
        np.testing.assert_allclose(ours.importances, theirs.importances, rtol=1e-4, atol=1e-6)
    combined = jaximp.combine_outputs(module, {"y0": 1.0, "y1": -2.0}, n_features=3)
    twin = jaximp.combine_outputs(f_jax, {"y0": 1.0, "y1": -2.0}, n_features=3)
    assert combined.device_fn is not None
    np.testing.assert_allclose(jaximp.partial_dependence(combined, X, 1).average,
                               jaximp.partial_dependence(twin, X, 1).average, rtol=1e-5,
                               atol=1e-6)
    y = np.asarray(twin(jnp.asarray(X)))[:, 0]
    ours = jaximp.conditional_importance(combined, X, y, n_repeats=2)
    theirs = jaximp.conditional_importance(twin, X, y, n_repeats=2)
    np.testing.assert_allclose(ours.importances, theirs.importances, rtol=1e-3, atol=1e-5)


def test_a_torch_build_that_cannot_import_the_rows_gets_a_host_copy(data, monkeypatch):
    """Where torch cannot take the engine's rows through DLPack (a CPU-only torch with JAX on
    a GPU), the module gets a host copy of them and its predictions go back to the engine's
    device: the same numbers."""
    X, y = data
    module, f_jax = _twins(sizes=(3, 8, 1))
    expected = jaximp.permutation_importance(module, X, y, n_repeats=2).importances

    def refuse(_):
        raise BufferError("no DLPack for this device")

    monkeypatch.setattr(torch, "from_dlpack", refuse)
    got = jaximp.permutation_importance(module, X + 0.0, y, n_repeats=2).importances
    np.testing.assert_array_equal(got, expected)


def test_a_module_cast_after_it_was_wrapped_is_followed(data):
    """module.double() after the Explainer was made failed inside torch (float32 rows into
    float64 weights); the rows now take the parameters' dtype at each call, and the answer
    equals a fresh call and the JAX twin."""
    X, _ = data
    module, f_jax = _twins(sizes=(3, 8, 1))
    ex = jaximp.Explainer(module, X)
    before = ex.partial_dependence(0, grid_resolution=5).average
    module.double()
    after = ex.partial_dependence(0, grid_resolution=5).average
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(after, jaximp.partial_dependence(f_jax, X, 0,
                                                                grid_resolution=5).average,
                               rtol=1e-5, atol=1e-6)
