"""PyTorch models: an ``nn.Module`` called on batches of rows as a host model.

A torch module is not traceable by JAX, so it runs as the engine's host models do: the engine
builds each batch of modified rows, the module predicts it, and the reducer consumes the
predictions. On the CPU the batches cross between NumPy and torch without copies beyond a
cast to the module's dtype (``torch.from_numpy`` and ``Tensor.numpy`` share memory); a module on a GPU receives each batch
moved to its device and returns its predictions through the host.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

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

    def predict(self, X) -> np.ndarray:
        import torch

        rows = np.ascontiguousarray(np.asarray(X))
        with warnings.catch_warnings():  # read-only batches: the module only reads its input
            warnings.filterwarnings("ignore", "The given NumPy array is not writable")
            rows = torch.from_numpy(rows if rows.dtype.kind == "f" else rows.astype(np.float64))
        if self.input_shape is not None:  # flat rows -> examples of their own shape
            rows = rows.reshape(rows.shape[0], *self.input_shape)
        with torch.inference_mode():
            out = self.module(rows.to(device=self.device, dtype=self.dtype))
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"the torch module {type(self.module).__name__} returned a "
                            f"{type(out).__name__}; jaximp explains modules that return one "
                            "tensor of predictions, shape (n,) or (n, o).")
        return out.detach().to("cpu").numpy()

