"""Edge handling shared by the model-based methods: data + model in, validated pair out."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._data import Dataset, as_dataset
from ._model import Predictor, as_predictor

__all__ = ["prepare", "select_outputs"]


def prepare(
    model,
    X,
    *,
    feature_names=None,
    categorical=None,
    groups=None,
    sample_weight=None,
    variables=None,
    output_names=None,
) -> tuple[Dataset, Predictor]:
    """Validate the data, wrap the model, and check the model against the data's width."""
    dataset = as_dataset(
        X,
        feature_names=feature_names,
        categorical=categorical,
        groups=groups,
        sample_weight=sample_weight,
    )
    predictor = as_predictor(
        model, variables=variables, n_features=dataset.X.shape[1], output_names=output_names
    )
    return dataset, predictor


def select_outputs(
    output_names: Sequence[str], output: int | str | Sequence[int | str] | None
) -> list[int]:
    """Indices of the outputs a user asked for (``None``: all of them)."""
    if output is None:
        return list(range(len(output_names)))
    wanted = [output] if isinstance(output, (int, str, np.integer)) else list(output)
    indices = []
    for item in wanted:
        if isinstance(item, str):
            if item not in output_names:
                raise ValueError(f"output must be one of {list(output_names)}; got {item!r}.")
            indices.append(list(output_names).index(item))
        elif -len(output_names) <= int(item) < len(output_names):
            indices.append(int(item) % len(output_names))
        else:
            raise ValueError(
                f"output index {item} is out of range for a model with {len(output_names)} "
                "outputs."
            )
    return indices
