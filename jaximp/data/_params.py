"""Declarative parameter checks for the public functions (the one validating edge).

A public function states its options' constraints once, in a table next to its signature::

    @validate_params(n_repeats=Int(1), kind=Choice("difference", "ratio"), progress=Flag(none=True))
    def permutation_importance(model, X, y, *, n_repeats=5, kind="difference", progress=None): ...

and every listed argument is checked before the function body runs, so before any model
evaluation, with one message style: the parameter, what was expected, what came in and, where
one helps, the fix. Checks of data shapes that need the data itself stay in the data layer
(:func:`jaximp.as_dataset`). The table is kept on the function as ``__jaximp_params__`` so tests
can feed every constraint a bad value.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import warnings

import jax
import numpy as np

__all__ = ["SHARED", "Budget", "Choice", "Flag", "Index", "Int", "Interval", "Output", "Progress",
           "Real", "Replicates", "Seed", "renamed_keywords", "validate_params"]


class _Rule:
    """One constraint: ``accepts(value)``, the words for what it expects, an optional fix;
    ``none=True`` also accepts None (a documented default)."""

    error = ValueError

    def __init__(self, *, none: bool = False, fix: str = ""):
        self.none, self.fix = none, fix

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.expected()!r})"

    def accepts(self, value) -> bool:
        raise NotImplementedError

    def expected(self) -> str:
        raise NotImplementedError

    def bad_value(self):
        """A value this rule refuses (for the contract tests)."""
        raise NotImplementedError

    def check(self, name: str, value) -> None:
        if (value is None and self.none) or (value is not None and self.accepts(value)):
            return
        expected = self.expected() + (" or None" if self.none else "")
        fix = f" {self.fix}" if self.fix else ""
        raise self.error(f"{name} must be {expected}; got {value!r:.80}.{fix}")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


class Int(_Rule):
    """An int (Python or NumPy, not bool) ``>= minimum``."""

    def __init__(self, minimum: int = 1, *, none: bool = False, fix: str = ""):
        super().__init__(none=none, fix=fix)
        self.minimum = minimum

    def accepts(self, value) -> bool:
        return _is_int(value) and value >= self.minimum

    def expected(self) -> str:
        return f"an int >= {self.minimum}"

    def bad_value(self):
        return self.minimum - 1


class Replicates(_Rule):
    """A number of bootstrap replicates: 0 (none) or an int >= 2."""

    def accepts(self, value) -> bool:
        return _is_int(value) and (value == 0 or value >= 2)

    def expected(self) -> str:
        return "0 (no bootstrap) or an int >= 2"

    def bad_value(self):
        return 1


class Real(_Rule):
    """A finite real number (not bool) from ``low`` to ``high``; ``closed`` says which ends
    belong: "both", "left", "right" or "neither"."""

    def __init__(self, low=-np.inf, high=np.inf, closed="both", *, none=False, fix=""):
        super().__init__(none=none, fix=fix)
        self.low, self.high, self.closed = low, high, closed

    def accepts(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            return False
        value = float(value)
        if not np.isfinite(value):
            return False
        above = value >= self.low if self.closed in ("both", "left") else value > self.low
        below = value <= self.high if self.closed in ("both", "right") else value < self.high
        return above and below

    def expected(self) -> str:
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        if np.isinf(self.high):
            sign = ">=" if left == "[" else ">"
            return f"a finite number {sign} {self.low:g}"
        return f"a number in {left}{self.low:g}, {self.high:g}{right}"

    def bad_value(self):
        return float("nan")


class Choice(_Rule):
    """One of a fixed set of strings; with ``also`` (the words for them), values that are not
    strings pass too, for the function to check against its data (explicit grid values, one
    weight per output)."""

    def __init__(self, *choices: str, also: str = "", none: bool = False, fix: str = ""):
        super().__init__(none=none, fix=fix)
        self.choices, self.also = tuple(choices), also

    def accepts(self, value) -> bool:
        if not isinstance(value, str):
            return bool(self.also)
        return value in self.choices

    def expected(self) -> str:
        return f"one of {self.choices}" + (f" or {self.also}" if self.also else "")

    def bad_value(self):
        return "no such option"


class Index(_Rule):
    """One position: an int (not bool; negative counts from the end), or with ``names=True``
    also a name; whether it exists is for the function to check against its data."""

    error = TypeError

    def __init__(self, *, names: bool = False, none: bool = False, fix: str = ""):
        super().__init__(none=none, fix=fix)
        self.names = names

    def accepts(self, value) -> bool:
        return _is_int(value) or (self.names and isinstance(value, str))

    def expected(self) -> str:
        return "an int index or a name" if self.names else "an int index"

    def bad_value(self):
        return 1.5


class Interval(_Rule):
    """A pair ``(low, high)`` of numbers with ``minimum <= low < high <= maximum``."""

    def __init__(self, minimum: float = 0.0, maximum: float = 1.0, *, none: bool = False,
                 fix: str = ""):
        super().__init__(none=none, fix=fix)
        self.minimum, self.maximum = minimum, maximum

    def accepts(self, value) -> bool:
        if isinstance(value, (str, bytes)):
            return False
        try:
            low, high = (float(v) for v in value)
        except (TypeError, ValueError):  # not a pair of numbers
            return False
        return self.minimum <= low < high <= self.maximum  # also refuses NaN

    def expected(self) -> str:
        return f"a pair (low, high) with {self.minimum:g} <= low < high <= {self.maximum:g}"

    def bad_value(self):
        return (self.maximum, self.minimum)


class Flag(_Rule):
    """True or False (Python or NumPy bool)."""

    error = TypeError

    def accepts(self, value) -> bool:
        return isinstance(value, (bool, np.bool_))

    def expected(self) -> str:
        return "True or False"

    def bad_value(self):
        return "yes"


class Budget(_Rule):
    """A memory budget in bytes, at least 64 KiB (None: :func:`jaximp.default_memory_budget`)."""

    minimum = 1 << 16

    def __init__(self):
        super().__init__(none=True)

    def accepts(self, value) -> bool:
        return (not isinstance(value, (bool, np.bool_))
                and isinstance(value, (int, float, np.integer, np.floating))
                and self.minimum <= value < float("inf"))  # also refuses NaN

    def expected(self) -> str:
        return f"at least {self.minimum} bytes"

    def bad_value(self):
        return 10

    def check(self, name: str, value) -> None:
        if value is None or self.accepts(value):
            return
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a number of bytes; got {value!r:.80}.")
        if value == float("inf"):
            raise ValueError(f"{name} must be a finite number of bytes (None: the default, "
                             f"jaximp.default_memory_budget()); got {value!r}.")
        raise ValueError(f"{name} must be {self.expected()}; got {value!r:.80}.")


class Progress(_Rule):
    """Whether to show a progress line: True, False or None (in interactive terminals)."""

    error = TypeError

    def accepts(self, value) -> bool:
        return value is None or isinstance(value, (bool, np.bool_))

    def expected(self) -> str:
        return "True, False or None (a progress line in interactive terminals)"

    def bad_value(self):
        return "yes"

    def check(self, name: str, value) -> None:
        if not self.accepts(value):
            raise TypeError(f"{name} must be {self.expected()}; got {value!r:.80}.")


class Seed(_Rule):
    """A ``random_state``: an int seed, a JAX PRNG key (typed, or raw ``uint32[2]``), a NumPy
    ``RandomState`` or ``Generator``, or None (a seed drawn from NumPy's global state), as
    scikit-learn takes it."""

    error = TypeError

    def accepts(self, value) -> bool:
        if value is None or isinstance(value, (np.random.RandomState, np.random.Generator)):
            return True
        if isinstance(value, (int, np.integer)):
            return not isinstance(value, (bool, np.bool_))
        if isinstance(value, jax.Array):
            if jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
                return value.shape == ()
            return value.dtype == np.uint32 and value.shape == (2,)
        return False

    def expected(self) -> str:
        return ("an int seed, a JAX PRNG key such as jax.random.key(0), a NumPy RandomState or "
                "Generator, or None")

    def bad_value(self):
        return "seed"

    def check(self, name: str, value) -> None:
        if not self.accepts(value):
            raise TypeError(f"{name} must be {self.expected()}; got {value!r:.60}.")
        if isinstance(value, (int, np.integer)) and not -2 ** 63 <= value < 2 ** 63:
            raise ValueError(f"{name} must be an int seed from -2**63 to 2**63 - 1; got "
                             f"{value!r:.60}.")


class Output(_Rule):
    """The model outputs to explain: an index or a name, a list of them, or None (all); or an
    array of one output index per row, which the per-row attributions check and take."""

    error = TypeError

    def __init__(self):
        super().__init__(none=True)

    @staticmethod
    def _one(item) -> bool:
        return isinstance(item, str) or (isinstance(item, (int, np.integer))
                                         and not isinstance(item, (bool, np.bool_)))

    def accepts(self, value) -> bool:
        if isinstance(value, (list, tuple)):
            return len(value) > 0 and all(self._one(item) for item in value)
        if isinstance(value, (np.ndarray, jax.Array)) or type(value).__name__ == "Series" \
                or hasattr(value, "__dlpack__"):  # a torch tensor, as captum's target
            return True  # one output index per row: checked by the methods that take it
        return self._one(value)

    def expected(self) -> str:
        return "an output index or name, a non-empty list of them"

    def bad_value(self):
        return 1.5


SHARED: dict[str, _Rule] = {
    "memory_budget": Budget(),
    "progress": Progress(),
    "random_state": Seed(),
    "output": Output(),
}
"""The rules of the keywords many functions share, declared once: :func:`validate_params`
applies them to every decorated function that has such a parameter (a function's own table
may override one, as :func:`jaximp.trends`, :func:`jaximp.transversal_rates` and
:func:`jaximp.plot_importances` do for their single ``output``, an :class:`Index`)."""


def validate_params(**table: _Rule):
    """Check the named arguments of the decorated function against ``table`` on every call.

    Parameters
    ----------
    **table : rule
        Parameter name to constraint (:class:`Int`, :class:`Real`, :class:`Choice`,
        :class:`Flag`, :class:`Index`, :class:`Interval`, :class:`Replicates`). Every name must
        be a parameter of the function. The shared keywords (:data:`SHARED`:
        ``memory_budget``, ``progress``, ``random_state``, ``output``) are checked without
        being listed.

    Examples
    --------
    >>> @validate_params(n=Int(2))
    ... def f(*, n=3):
    ...     return n
    >>> f(n=1)
    Traceback (most recent call last):
    ...
    ValueError: n must be an int >= 2; got 1.
    """

    def decorate(function):
        signature = inspect.signature(function)
        unknown = sorted(set(table) - set(signature.parameters))
        rules = {name: rule for name, rule in SHARED.items() if name in signature.parameters}
        rules.update(table)
        if unknown:
            raise TypeError(f"{function.__name__} has no parameters {unknown}.")

        # a checked option arrives in kwargs unless passed by position: the signature is
        # bound only when a call passes one of them by position (binding costs microseconds)
        parameters = list(signature.parameters.values())
        first_positional = min(
            (i for i, parameter in enumerate(parameters) if parameter.name in rules
             and parameter.kind is not inspect.Parameter.KEYWORD_ONLY), default=len(parameters))

        @functools.wraps(function)
        def checked(*args, **kwargs):
            arguments = kwargs if len(args) <= first_positional else signature.bind(
                *args, **kwargs).arguments
            for name, rule in rules.items():
                if name in arguments:
                    rule.check(name, arguments[name])
            return function(*args, **kwargs)

        checked.__jaximp_params__ = rules
        return checked

    return decorate


def renamed_keywords(**renames: str):
    """Keep old keyword spellings working: ``old=value`` is passed on as ``new=value`` with a
    :class:`DeprecationWarning` that names the new spelling.

    Parameters
    ----------
    **renames : str
        Old keyword name to new keyword name; every new name must be a parameter of the
        decorated function, no old name may be one. Put the decorator outside
        :func:`validate_params`, so the new name's rule checks the value.

    Examples
    --------
    >>> import warnings
    >>> @renamed_keywords(colour="color")
    ... def f(*, color="red"):
    ...     return color
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     f(colour="blue"), str(caught[0].message)
    ('blue', 'f(colour=...) is deprecated; use color=... (same values).')
    """

    def decorate(function):
        parameters = inspect.signature(function).parameters
        bad = sorted(old for old, new in renames.items()
                     if new not in parameters or old in parameters)
        if bad:
            raise TypeError(f"{function.__name__}: cannot rename {bad}: the new names must be "
                            "parameters and the old ones not.")

        @functools.wraps(function)
        def renamed(*args, **kwargs):
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(f"{function.__name__}() got both {old}= and {new}=; "
                                    f"{old} is the deprecated spelling of {new}: pass {new} "
                                    "alone.")
                warnings.warn(f"{function.__name__}({old}=...) is deprecated; use {new}=... "
                              "(same values).", DeprecationWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        renamed.__jaximp_renamed__ = dict(renames)
        return renamed

    return decorate
