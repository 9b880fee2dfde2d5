"""PyTorch models: an ``nn.Module`` called on the engine's batches through DLPack.

A torch module is not traceable by JAX, so the engine builds each batch of modified rows on a
JAX device, hands it to the module with ``torch.from_dlpack`` (no copy where the module runs
on that device, the CPU or the same GPU), takes the predictions back the same way and reduces
them on the device (:mod:`jaximp.models._dlpack`). Only a module on another device than JAX's
gets each batch copied to its own. ``predict`` (NumPy rows in and out) serves the probes.
"""

from __future__ import annotations

import sys
import warnings

import jax
import numpy as np

from ._dlpack import jax_device_of, to_jax

__all__ = ["TorchModel", "is_torch_module"]


def is_torch_module(model) -> bool:
    """Whether ``model`` is a ``torch.nn.Module`` (torch is never imported here: a module
    instance exists only where torch already is)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


class TorchModel:
    """A torch module as an object with ``predict``: float rows in, one row of outputs out.

    With ``input_shape`` the flat rows are reshaped to ``(n, *input_shape)`` (images,
    sequences). The rows are cast to the dtype and moved to the device of the module's first parameter
    (float32 on the CPU for a module without parameters); the module runs under
    ``torch.inference_mode`` and its outputs come back as a float array of shape (n, o).
    """

    def __init__(self, module, input_shape=None):
        import torch

        self.module = module
        self.input_shape = None if input_shape is None else tuple(input_shape)
        first = next(iter(module.parameters()), None)
        self.device = torch.device("cpu") if first is None else first.device
        self.dtype = torch.float32 if first is None or not first.is_floating_point() \
            else first.dtype
        self.name = f"torch {type(module).__name__}"
        random_in_training = (torch.nn.modules.dropout._DropoutNd,
                              torch.nn.modules.batchnorm._BatchNorm)
        if module.training and any(isinstance(m, random_in_training) for m in module.modules()):
            warnings.warn(
                f"the torch module {type(module).__name__} is in training mode and has dropout "
                "or batch-norm layers, so its predictions change from call to call; call "
                "module.eval() before explaining it.", UserWarning, stacklevel=4)

    @property
    def jax_device(self):
        """The JAX device of the module's own (None where JAX has none of its kind)."""
        return jax_device_of(self.device)

    @property
    def numpy_dtype(self) -> np.dtype:
        """The dtype the engine builds the module's batches in (its parameters')."""
        import torch

        wide = self.dtype == torch.float64
        return np.dtype(jax.dtypes.canonicalize_dtype(np.float64 if wide else np.float32))

    def device_call(self, rows):
        """Predictions of a batch of rows on a JAX device, as a float32 ``jax.Array`` on the
        same device: the rows reach the module through DLPack."""
        import torch

        try:
            tensor = torch.from_dlpack(rows)
        except (BufferError, RuntimeError, TypeError):  # a device this torch build lacks
            tensor = torch.from_numpy(np.array(rows))  # (a CPU-only torch, JAX on a GPU)
        out = self._forward(tensor)
        return to_jax(out.to(device=tensor.device, dtype=torch.float32).contiguous(), self.name)

    def predict(self, X) -> np.ndarray:
        """Predictions of host rows (the probes), as a NumPy array."""
        import torch

        rows = np.ascontiguousarray(np.asarray(X))
        with warnings.catch_warnings():  # read-only batches: the module only reads its input
            warnings.filterwarnings("ignore", "The given NumPy array is not writable")
            rows = torch.from_numpy(rows if rows.dtype.kind == "f" else rows.astype(np.float64))
        return self._forward(rows).to("cpu").numpy()

    def _forward(self, rows):
        """The module on a batch of flat rows (a tensor), reshaped to examples of their own
        shape and cast to its device and dtype; one tensor of predictions back."""
        import torch

        if self.input_shape is not None:
            rows = rows.reshape(rows.shape[0], *self.input_shape)
        # the parameters' device and dtype now: a module moved or cast (.double()) after it
        # was wrapped is followed, as its new weights are
        first = next(iter(self.module.parameters()), None)
        device, dtype = self.device, self.dtype
        if first is not None:
            device = first.device
            dtype = first.dtype if first.is_floating_point() else dtype
        with torch.inference_mode():
            out = self.module(rows.to(device=device, dtype=dtype))
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"the torch module {type(self.module).__name__} returned a "
                            f"{type(out).__name__}; jaximp explains modules that return one "
                            "tensor of predictions, shape (n,) or (n, o).")
        return out.detach()
