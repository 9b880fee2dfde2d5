"""Checks of single options at the user-facing edge, the selection of model outputs, and the
PRNG key of a ``random_state``.

Each check names the parameter, what it expects and what came in; the layers above raise
these messages unchanged.
"""

from __future__ import annotations

import functools
import sys
import warnings
from typing import Sequence

import jax
import numpy as np
import pandas as pd

from ._params import SHARED

__all__ = ["PositiveClass", "PrecisionWarning", "as_key", "check_bool", "check_choice",
           "check_int", "default_output", "key_data_on_host", "numpy_rng", "output_index",
           "pandas_numbers", "select_outputs", "user_stacklevel", "warn_misaligned"]


class PrecisionWarning(UserWarning):
    """Distinct float64 values (features, or a model's outputs) collapse in the model's
    (lower) precision."""


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` in the calling function that names the first
    frame outside jaximp: the user's line, however deep the call went."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("jaximp."):
        frame, level = frame.f_back, level + 1
    return level


def pandas_numbers(values) -> np.ndarray:
    """``np.asarray(values)``, except a pandas Series or DataFrame of numeric extension dtypes
    (nullable ``Float64``/``Int64``, pyarrow's numbers and decimals), which NumPy reads as
    objects: float64 then, missing values NaN."""
    if isinstance(values, (pd.Series, pd.DataFrame)):
        dtypes = [values.dtype] if isinstance(values, pd.Series) else list(values.dtypes)
        if any(isinstance(d, pd.api.extensions.ExtensionDtype) for d in dtypes) and all(
                pd.api.types.is_numeric_dtype(d) for d in dtypes):
            array = np.asarray(values)
            return array if array.dtype != object else values.to_numpy(
                dtype=np.float64, na_value=np.nan)
    return np.asarray(values)


def warn_misaligned(y, source, name: str, of: str = "X") -> None:
    """X's row labels, not 0..n-1 in order, held by ``y`` (a pandas object read by position,
    named ``name``; X named ``of``) in another order: it was almost surely taken before X
    was sorted or shuffled, and reading it by position would pair rows with other rows'
    values. (X labelled 0..n-1 in order was most likely renumbered after ``y`` was lined up
    with it, as by a transformer returning a new frame: no warning.)"""
    y_index, X_index = getattr(y, "index", None), getattr(source, "index", None)
    if not isinstance(y_index, pd.Index) or not isinstance(X_index, pd.Index):
        return
    if len(y_index) != len(X_index) or y_index.equals(X_index):
        return
    if X_index.equals(pd.RangeIndex(len(X_index))):
        return
    if X_index.is_unique and y_index.is_unique and y_index.isin(X_index).all():
        warnings.warn(
            f"{name}'s index holds the same labels as {of}'s in another order; {name} is read "
            f"by position (as scikit-learn reads y), which pairs rows of {of} with other rows' "
            f"values. Pass {name}.loc[{of}.index] to align them, or {name}.to_numpy() if the "
            "order is right.", UserWarning, stacklevel=user_stacklevel())


class PositiveClass(str):
    """The output name of a binary classifier's positive class: a ``str`` equal to the class
    label of its second probability column (scikit-learn's ``classes_[1]``).

    A :class:`~jaximp.Predictor` that scores exactly two classes (``predict_proba`` of a
    binary classifier, or its labels read as two one-hot columns) names its second output
    so; the name travels with the output into every result (a selection of outputs keeps
    it), and :func:`default_output` reads it. It compares, hashes, prints and serialises as
    the plain label.

    Examples
    --------
    >>> names = ("benign", PositiveClass("malignant"))
    >>> default_output(names), names[1] == "malignant"
    (1, True)
    """

    __slots__ = ()

    def __reduce__(self):
        return PositiveClass, (str(self),)


def default_output(output_names: Sequence[str]) -> int:
    """The index of the output shown when one is picked by default: the positive class of a
    binary classifier's probabilities (its :class:`PositiveClass` name, the second output),
    as scikit-learn's ``partial_dependence``, shap and DALEX report; else the first output.

    The rule needs the classes: a model whose outputs are not known to score a classifier's
    classes (a JAX function or module returning two logits, a regressor with two targets)
    keeps the first output. Pass ``output=0`` for class 0 (R pdp's default for a random forest,
    ``which.class = 1``), or ``output=1`` for a JAX model's second logit.

    Examples
    --------
    >>> default_output(("0", PositiveClass("1"))), default_output(("y0", "y1"))
    (1, 0)
    """
    marked = [j for j, name in enumerate(output_names) if isinstance(name, PositiveClass)]
    return marked[0] if len(marked) == 1 else 0


def select_outputs(
    output_names: Sequence[str], output: int | str | Sequence[int | str] | None
) -> list[int]:
    """Indices of the outputs a user asked for (``None``: all of them)."""
    if output is None:
        return list(range(len(output_names)))
    if isinstance(output, (np.ndarray, jax.Array)) or type(output).__name__ == "Series" or \
            hasattr(output, "__dlpack__"):
        raise TypeError(
            "output as an array (one output index per row, captum's target tensor) is taken "
            "by the per-row attributions only (integrated_gradients, expected_gradients, "
            "smoothgrad, saliency, input_x_gradient, permutation_attributions, "
            f"ablation_attributions); here pass an output index or name, or a list of them "
            f"(outputs {list(output_names)[:5]}).")
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
            label = (f"; an int is a position: for the output named {str(item)!r} pass "
                     f"output={str(item)!r}" if str(item) in output_names else "")
            raise ValueError(
                f"output index {item} is out of range for a model with {len(output_names)} "
                f"outputs{label}."
            )
    if len(set(indices)) < len(indices):
        raise ValueError(
            f"output lists some outputs more than once ({list(wanted)[:8]}); name each output "
            "once. For one output per row (captum's target list), pass an integer array of "
            "shape (n,) to a per-row attribution.")
    return indices


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


def output_index(output_names: Sequence[str], output: int | str | None) -> int:
    """The index of one output: a position (negative counts from the end), a name, or None
    for :func:`default_output` (the positive class of a binary classifier, else the first)."""
    if output is None:
        return default_output(output_names)
    if isinstance(output, str):
        if output not in output_names:
            raise ValueError(f"output must be one of {list(output_names)}; got {output!r}.")
        return list(output_names).index(output)
    if not -len(output_names) <= output < len(output_names):
        raise ValueError(
            f"output must be an index below {len(output_names)} or an output name; got {output}."
        )
    return int(output) % len(output_names)


def as_key(random_state) -> jax.Array:
    """A typed JAX PRNG key from an int seed or a key (typed, or raw ``uint32[2]``).

    As in scikit-learn, a NumPy ``RandomState`` or ``Generator`` gives a seed drawn from it
    (so it moves on, and the next call differs), and None one drawn from NumPy's global
    random state (not reproducible)."""
    SHARED["random_state"].check("random_state", random_state)
    if random_state is None:
        random_state = np.random.mtrand._rand
    if isinstance(random_state, np.random.RandomState):
        random_state = int(random_state.randint(np.iinfo(np.int32).max + 1))
    elif isinstance(random_state, np.random.Generator):
        random_state = int(random_state.integers(np.iinfo(np.int32).max + 1))
    if isinstance(random_state, (int, np.integer)):
        # the float mode and the key type are part of the key's making (cached by them)
        return _int_key(int(random_state), jax.config.jax_enable_x64,
                        jax.config.jax_default_prng_impl)
    if jax.dtypes.issubdtype(random_state.dtype, jax.dtypes.prng_key):
        return random_state
    return jax.random.wrap_key_data(random_state)


@functools.lru_cache(maxsize=64)
def _int_key(seed: int, x64: bool, impl: str) -> jax.Array:
    """The key of an int seed, made once (keys are immutable; making one costs ~0.5 ms). On
    an accelerator its data is also made on the CPU, for the draws made on the host: reading
    the key itself would wait for the device's queue (every call made before it). A seed
    outside ``[0, 2**32)`` folds its high 32 bits into the key of its low ones, in both float
    modes (``jax.random.key`` would keep only the low bits without x64, so 0 and 2**32 drew
    the same numbers)."""
    key = _seed_key(seed)
    if next(iter(key.devices())).platform != "cpu":
        try:
            cpu = jax.local_devices(backend="cpu")[0]
        except RuntimeError:  # JAX started without its CPU backend
            return key
        with jax.default_device(cpu):
            _remember(key, jax.random.key_data(_seed_key(seed)))
    return key


def _seed_key(seed: int) -> jax.Array:
    low, high = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    key = jax.random.key(low)
    return key if 0 <= seed < 1 << 32 else jax.random.fold_in(key, high)


_KEY_DATA: dict[int, tuple] = {}  # id(key) -> (key, its data): one device read per key


def key_data_on_host(key: jax.Array) -> np.ndarray:
    """A PRNG key's data (uint32) on the host, kept per key object: an int seed's from the
    CPU, another key's read explicitly from its device (a user's transfer guard flags only
    implicit reads)."""
    hit = _KEY_DATA.get(id(key))
    if hit is not None and hit[0] is key:
        return hit[1]
    return _remember(key, jax.random.key_data(key))


def _remember(key: jax.Array, data: jax.Array) -> np.ndarray:
    if len(_KEY_DATA) >= 64:
        _KEY_DATA.pop(next(iter(_KEY_DATA)))
    _KEY_DATA[id(key)] = (key, np.asarray(jax.device_get(data), np.uint32))
    return _KEY_DATA[id(key)][1]


def numpy_rng(random_state) -> np.random.Generator:
    """A NumPy generator for draws made with NumPy, from any ``random_state`` jaximp takes:
    an int seeds it directly (``np.random.default_rng(seed)``), a Generator is used as is,
    and a JAX key (or None, or a RandomState) seeds it with the bits of :func:`as_key`."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    key = as_key(random_state)
    return np.random.default_rng(key_data_on_host(key).ravel().tolist())
