"""Edge handling shared by the model-based methods: data + model in, validated pair out."""

from __future__ import annotations

import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._data import Dataset, as_dataset
from ._engine import resolve_budget
from ._host import probe_rows
from ._model import Predictor, as_predictor

__all__ = ["as_key", "check_bool", "check_choice", "check_int", "prepare", "select_outputs"]


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
    ``predict``, which may handle missing values); a JAX model is refused it."""
    resolve_budget(memory_budget)
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(
            f"progress must be True, False or None (a progress line in interactive terminals); "
            f"got {progress!r}."
        )
    dataset = as_dataset(
        X,
        feature_names=feature_names,
        categorical=categorical,
        groups=groups,
        sample_weight=sample_weight,
        allow_missing=allow_missing,
    )
    predictor = as_predictor(
        model, variables=variables, n_features=dataset.X.shape[1], output_names=output_names,
        sample=probe_rows(dataset.source if dataset.source is not None else dataset.X)
        if hasattr(model, "predict") else None,
    )
    if allow_missing and not predictor.host and not np.isfinite(dataset.X.sum()):
        rows, cols = np.nonzero(np.isnan(dataset.X))
        raise ValueError(
            f"X contains {rows.size} NaN values (first at row {rows[0]}, column "
            f"{dataset.column_names[cols[0]]!r}), and the JAX model {predictor.name} cannot "
            "take missing values; impute or drop them first. (Host models that handle them, "
            "such as scikit-learn's HistGradientBoosting or a Pipeline with an imputer, get "
            "the NaN as they are.)"
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


def as_key(random_state) -> jax.Array:
    """A typed JAX PRNG key from an int seed or a key (typed, or raw ``uint32[2]``).

    As in scikit-learn, a NumPy ``RandomState`` or ``Generator`` gives a seed drawn from it
    (so it moves on, and the next call differs), and None one drawn from NumPy's global
    random state (not reproducible)."""
    if random_state is None:
        random_state = np.random.mtrand._rand
    if isinstance(random_state, np.random.RandomState):
        random_state = int(random_state.randint(np.iinfo(np.int32).max + 1))
    elif isinstance(random_state, np.random.Generator):
        random_state = int(random_state.integers(np.iinfo(np.int32).max + 1))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return _int_key(int(random_state))
    if isinstance(random_state, jax.Array):
        if jax.dtypes.issubdtype(random_state.dtype, jax.dtypes.prng_key):
            if random_state.shape == ():
                return random_state
        elif random_state.dtype == jnp.uint32 and random_state.shape == (2,):
            return jax.random.wrap_key_data(random_state)
    raise TypeError(
        "random_state must be an int seed, a JAX PRNG key such as jax.random.key(0), a NumPy "
        f"RandomState or Generator, or None; got {random_state!r:.60}."
    )


@functools.lru_cache(maxsize=64)
def _int_key(seed: int) -> jax.Array:
    """The key of an int seed, made once (keys are immutable; making one costs ~0.5 ms)."""
    return jax.random.key(seed)


def check_int(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``, or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}.")
    return int(value)


def check_bool(value, name: str) -> bool:
    """``value`` as a bool, or a TypeError naming the parameter."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {value!r}.")
    return bool(value)


def check_choice(value, name: str, choices) -> str:
    """``value`` if it is one of ``choices``, else a ValueError listing them."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}; got {value!r}.")
    return value
