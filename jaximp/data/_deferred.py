"""Values still being computed on a device, read on first use.

A warm call on an :class:`jaximp.Explainer` dispatches its device work and returns at once;
the result holds :class:`Deferred` values where the device's output has not been read yet, and
reading an attribute (``result.average``) waits for the device, copies to the host and
finishes the read-out then, once. A loop of calls thus runs the device and the host side by
side and blocks only where the user reads.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Deferred", "ReadsDeferred"]

_PENDING = object()


class Deferred:
    """A value computed by ``compute()`` on the first :meth:`get`, then kept.

    Examples
    --------
    >>> calls = []
    >>> value = Deferred(lambda: calls.append(1) or 41).then(lambda v: v + 1)
    >>> calls
    []
    >>> value.get(), value.get(), calls
    (42, 42, [1])
    """

    __slots__ = ("_compute", "_source", "_value")

    def __init__(self, compute):
        # compute(), or compute(source.get()) for a link of then(): one call per link
        self._compute, self._source, self._value = compute, None, _PENDING

    @classmethod
    def ready(cls, value) -> Deferred:
        """A value already computed."""
        deferred = cls(None)
        deferred._value = value
        return deferred

    def get(self):
        if self._value is _PENDING:
            source = self._source
            self._value = self._compute() if source is None else self._compute(source.get())
            self._compute = self._source = None  # the device buffers they held can go
        return self._value

    def then(self, function) -> Deferred:
        """``function(value)``, deferred too (computed at most once)."""
        link = Deferred(function)
        link._source = self
        return link

    @staticmethod
    def apply(function, value):
        """``function(value)``: now for a value, deferred for a :class:`Deferred`."""
        return value.then(function) if type(value) is Deferred else function(value)

    def __repr__(self) -> str:
        return "Deferred(pending)" if self._value is _PENDING else f"Deferred({self._value!r})"


class ReadsDeferred:
    """Mixin for a result dataclass whose fields may hold :class:`Deferred` values: reading a
    field returns its computed value (kept in the field from then on), so a result looks the
    same whether its call has finished or not; pickling and copying read every field first."""

    __slots__ = ()

    def __getattribute__(self, name: str):
        value = object.__getattribute__(self, name)
        if type(value) is Deferred:
            value = value.get()
            object.__setattr__(self, name, value)
        return value

    def __getstate__(self) -> dict:
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
