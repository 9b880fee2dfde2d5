"""Checks of single options at the user-facing edge, and the selection of model outputs.

Each check names the parameter, what it expects and what came in; the layers above raise
these messages unchanged.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["check_bool", "check_choice", "check_int", "output_index", "select_outputs"]


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


def output_index(output_names: Sequence[str], output: int | str) -> int:
    if isinstance(output, str):
        if output not in output_names:
            raise ValueError(f"output must be one of {list(output_names)}; got {output!r}.")
        return list(output_names).index(output)
    if not -len(output_names) <= output < len(output_names):
        raise ValueError(
            f"output must be an index below {len(output_names)} or an output name; got {output}."
        )
    return int(output) % len(output_names)
