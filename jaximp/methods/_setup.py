"""Edge handling shared by the model-based methods: data + model in, validated pair out."""

from __future__ import annotations

import hashlib

import numpy as np

from ..data import SHARED, Dataset, InputLayout, as_dataset
from ..engine import resolve_budget
from ..models import Predictor, as_predictor, probe_rows
from ..results import with_input_layout

__all__ = ["cached_stage", "digest", "keep_layout", "prepare"]

_STAGES_KEPT = 16


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
    memory_budget=None,
    progress=None,
    allow_missing: bool = False,
) -> tuple[Dataset, Predictor]:
    """Validate the data and the engine options, wrap the model, and check the model against
    the data's width: everything a method checks before evaluating the model.

    ``allow_missing``: NaN in X is passed to a host model (scikit-learn and other models with
    ``predict``, which may handle missing values) and to boosting libraries' trees read into
    arrays (which route them as the library does); any other JAX model is refused it."""
    resolve_budget(memory_budget)
    SHARED["progress"].check("progress", progress)
    dataset = as_dataset(
        X,
        feature_names=feature_names,
        categorical=categorical,
        groups=groups,
        sample_weight=sample_weight,
        allow_missing=allow_missing,
    )
    predictor = as_predictor(
        model, variables=variables, n_features=dataset.n_columns, output_names=output_names,
        input_shape=dataset.input_shape,
        sample=probe_rows(dataset.source if dataset.source is not None else dataset.X)
        if hasattr(model, "predict") else None,
    )
    if (allow_missing and not (predictor.host or predictor.handles_missing)
            and dataset.has_missing):
        rows, cols = np.nonzero(np.isnan(dataset.X))
        raise ValueError(
            f"X contains {rows.size} NaN values (first at row {rows[0]}, column "
            f"{dataset.column_names[cols[0]]!r}), and the JAX model {predictor.name} cannot "
            "take missing values; impute or drop them first. (Host models that handle them, "
            "such as scikit-learn's HistGradientBoosting or a Pipeline with an imputer, get "
            "the NaN as they are.)"
        )
    return dataset, predictor


def keep_layout(info, dataset: Dataset, features=None):
    """``info`` (a dict or typed details) holding ``info["input_layout"]``, where each of
    ``features`` (default: all of the dataset's; the result's features, in its order) lies
    in an example, when X had more than two axes; ``info`` unchanged for a table. Called
    where a method builds a per-feature result, so that it paints itself (``image()``)."""
    return with_input_layout(info, InputLayout.of(dataset, features))


def cached_stage(dataset: Dataset, key: tuple, build, *, uncached: bool = False):
    """``build()``: a method's plan and reducer for its options ``key``, kept on an
    Explainer's (pinned) dataset, so that a repeated call reuses them, and with them the
    engine's device arrays and compiled chunk. ``key`` must name everything ``build`` reads
    besides the dataset; options that are not hashable (explicit arrays) build anew."""
    if uncached or not dataset.pinned:
        return build()
    try:
        hash(key)
    except TypeError:
        return build()
    return dataset.recent("method stages", key, build, _STAGES_KEPT)


def digest(array) -> bytes | None:
    """A short digest of an array's contents (None for None), for :func:`cached_stage` keys."""
    if array is None:
        return None
    array = np.ascontiguousarray(array)
    return hashlib.blake2b(f"{array.dtype.str}{array.shape}".encode() + array.data.tobytes(),
                           digest_size=16).digest()
