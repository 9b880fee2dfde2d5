"""A torch twin of a small tanh MLP with given weights, for the captum comparisons."""

import numpy as np
import pytest


def torch_twin(layers):
    """``(torch, net)``: a ``Sequential`` of ``Linear`` layers with the weights ``layers``
    (``[(W (in, out), b), ...]``) and ``Tanh`` between them; skips without torch or captum."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("captum")
    modules = []
    for W, b in layers:
        linear = torch.nn.Linear(*np.shape(W))
        with torch.no_grad():
            linear.weight.copy_(torch.tensor(np.asarray(W).T, dtype=torch.float32))
            linear.bias.copy_(torch.tensor(b, dtype=torch.float32))
        modules += [linear, torch.nn.Tanh()]
    return torch, torch.nn.Sequential(*modules[:-1])


def max_relative(a, b) -> float:
    """Largest absolute difference relative to the largest magnitude of ``b``."""
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
