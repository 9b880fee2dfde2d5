"""Models on another framework's arrays (a function of torch tensors, of CuPy arrays...),
called on JAX's arrays through DLPack.

The engine builds each batch of modified rows on a JAX device, as for a JAX model, and hands
it to the model as the framework's array without a copy where both live on the same device
(``torch.from_dlpack``, ``cupy.from_dlpack``); the predictions come back the same way and are
reduced on that device. Nothing goes through the host but the reduced values.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["DLPackModel", "jax_device_of", "to_jax"]


def jax_device_of(device):
    """The JAX device a model's arrays live on, from a ``jax.Device``, a platform name
    ("cpu", "gpu") or a torch device ("cpu", "cuda:1"); None for None or a device JAX lacks
    here (the engine then builds the batches where the rows are)."""
    if device is None or isinstance(device, jax.Device):
        return device
    kind, _, index = str(device).partition(":")  # a torch device prints as "cuda:1"
    index = int(index or 0)
    platforms = {"cuda": "gpu", "rocm": "gpu"}
    try:
        devices = jax.local_devices(backend=platforms.get(kind, kind))
    except RuntimeError:  # no such backend in this JAX (a CPU-only build)
        return None
    return devices[index] if index < len(devices) else None


def to_jax(out, name: str) -> jax.Array:
    """A model's output array (anything with ``__dlpack__``: a torch tensor, a CuPy or NumPy
    array) as a float32 ``jax.Array``, shared without a copy where DLPack allows."""
    if isinstance(out, (jax.Array, np.ndarray)):  # NumPy's are on the host: copied, and
        return jnp.asarray(out, jnp.float32)  # a read-only view cannot be exported anyway
    if not hasattr(out, "__dlpack__"):
        raise TypeError(f"the model {name} returned a {type(out).__name__}; a model called "
                        "through DLPack returns an array of its framework (a torch tensor, a "
                        "CuPy array) of shape (n,) or (n, o).")
    return jax.dlpack.from_dlpack(out).astype(jnp.float32)


class DLPackModel:
    """A model on another framework's arrays, for :func:`jaximp.as_predictor`.

    ``fn(from_dlpack(rows))`` predicts a batch: ``rows`` is the JAX array of modified rows
    (n, c), or ``(n, *input_shape)`` for images and sequences, ``from_dlpack`` the framework's
    importer (``torch.from_dlpack``, ``cupy.from_dlpack``), and ``fn`` returns the
    framework's array of shape (n,) or (n, o). A ``torch.nn.Module`` is recognised by
    ``as_predictor`` without this wrapper.

    Parameters
    ----------
    fn : callable
        The model on the framework's arrays.
    from_dlpack : callable
        The framework's DLPack importer.
    name : str, optional
        The model's name in messages (default: ``fn``'s).
    input_shape : tuple of int, optional
        Set by the methods for data with more than two axes.
    device : jax.Device or str, optional
        Where ``fn`` takes its arrays (a JAX device or a platform: "cpu", "gpu"): the engine
        builds its batches there. Default: the CPU for NumPy's ``np.from_dlpack`` (NumPy
        reads host memory only), else the device that holds the rows.

    Examples
    --------
    >>> import numpy as np, jaximp
    >>> double = DLPackModel(lambda rows: 2 * rows[:, 0], np.from_dlpack)  # NumPy's arrays
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> pd = jaximp.partial_dependence(double, X, 0, grid_resolution=3)
    >>> np.round(pd.average[:, 0] / pd.grid_values[0], 6).tolist()
    [2.0, 2.0, 2.0]
    """

    def __init__(self, fn, from_dlpack, *, name: str | None = None, input_shape=None,
                 device=None):
        if not callable(fn) or not callable(from_dlpack):
            raise TypeError(f"DLPackModel takes the model and its framework's from_dlpack, "
                            f"both callable; got {type(fn).__name__} and "
                            f"{type(from_dlpack).__name__}.")
        if device is not None and not isinstance(device, (jax.Device, str)):
            raise TypeError(f"device must be a jax.Device or a platform name ('cpu', 'gpu'); "
                            f"got {type(device).__name__}.")
        self.fn, self.from_dlpack = fn, from_dlpack
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self.input_shape = None if input_shape is None else tuple(input_shape)
        self.device = "cpu" if device is None and from_dlpack is np.from_dlpack else device
        self.jax_device = jax_device_of(self.device)
        if self.device is not None and self.jax_device is None:
            raise ValueError(f"device {self.device!r} names no device of this JAX; its "
                             f"devices: {jax.devices()}. Pass one of them or leave device out.")

    def with_input_shape(self, input_shape) -> DLPackModel:
        return DLPackModel(self.fn, self.from_dlpack, name=self.name, input_shape=input_shape,
                           device=self.device)

    def device_call(self, rows: jax.Array) -> jax.Array:
        """Predictions (n, o) or (n,) of the JAX rows (n, c), computed by ``fn``."""
        if self.input_shape is not None:
            rows = rows.reshape(rows.shape[0], *self.input_shape)
        return to_jax(self.fn(self.from_dlpack(rows)), self.name)

    def predict(self, X) -> np.ndarray:
        """Predictions of host rows (the probes): the same call on a JAX copy of them."""
        rows = jax.device_put(np.asarray(X, np.float32), self.jax_device)
        return np.asarray(self.device_call(rows))
