"""Model adapters: anything that predicts becomes a pure ``predict(X) -> (n, o)``."""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Predictor", "as_predictor"]


@dataclasses.dataclass(frozen=True, eq=False)
class Predictor:
    """A model as a pure function of a float matrix.

    Attributes
    ----------
    fn : callable
        ``fn(X: (m, c) float32) -> (m, o) float32``; traceable by ``jax.jit`` (host models go
        through ``jax.pure_callback``).
    n_outputs : int
        Number of outputs ``o``.
    output_names : tuple of str
        One name per output (class labels for classifiers).
    name : str
        Description of the wrapped model, used in error messages.
    host : bool
        True when predictions run on the host (NumPy / scikit-learn models); the engine then
        evaluates on one device.
    """

    fn: Callable[[jax.Array], jax.Array]
    n_outputs: int
    output_names: tuple[str, ...]
    name: str
    host: bool = False

    def __call__(self, X) -> jax.Array:
        return self.fn(X)


def _is_flax_nnx(model) -> bool:
    try:
        from flax import nnx
    except ImportError:  # pragma: no cover - flax is a core dependency
        return False
    return isinstance(model, nnx.Module)


def _is_flax_linen(model) -> bool:
    try:
        import flax.linen as nn
    except ImportError:  # pragma: no cover
        return False
    return isinstance(model, nn.Module)


def _is_equinox(model) -> bool:
    try:
        import equinox as eqx
    except ImportError:
        return False
    return isinstance(model, eqx.Module)


def _host_predict(model) -> tuple[Callable, str]:
    """The NumPy-side prediction of a scikit-learn-like object: probabilities for classifiers."""
    if hasattr(model, "predict_proba") and getattr(model, "_estimator_type", None) == "classifier":
        return model.predict_proba, f"{type(model).__name__}.predict_proba"
    try:  # scikit-learn >= 1.6 exposes estimator tags instead of _estimator_type
        from sklearn.base import is_classifier

        if is_classifier(model) and hasattr(model, "predict_proba"):
            return model.predict_proba, f"{type(model).__name__}.predict_proba"
    except ImportError:
        pass
    return model.predict, f"{type(model).__name__}.predict"


def as_predictor(
    model,
    *,
    variables=None,
    n_features: int | None = None,
    output_names: Sequence[str] | None = None,
    batched: bool | None = None,
) -> Predictor:
    """Turn a model into a :class:`Predictor`.

    Parameters
    ----------
    model : callable, flax Module, equinox Module or scikit-learn-like estimator
        - a JAX function ``f(X) -> (n,) | (n, o)`` (jitted or not);
        - a Flax nnx ``Module`` called on a batch;
        - a Flax linen ``Module``, with its ``variables``;
        - an Equinox ``Module``; Equinox layers take one example, so it is ``vmap``-ped over
          rows unless ``batched=True``;
        - any object with ``predict`` (``predict_proba`` for a scikit-learn classifier, the
          class axis kept as outputs), called on NumPy arrays through ``jax.pure_callback``.
          Wrap a plain NumPy function as an object with a ``predict`` method.
        A :class:`Predictor` is returned unchanged.
    variables : pytree, optional
        The variables of a linen module (``module.apply(variables, X)``).
    n_features : int, optional
        Number of input columns; used to check the output shape on a probe batch.
    output_names : sequence of str, optional
        Names for the outputs (default: class labels of a classifier, else ``y`` or
        ``y0, y1, ...``).
    batched : bool, optional
        Only for Equinox modules: ``True`` if the module already takes a batch.

    Returns
    -------
    Predictor

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> pred = as_predictor(lambda X: X @ jnp.array([1.0, 2.0]), n_features=2)
    >>> pred.n_outputs, pred(jnp.ones((3, 2))).shape
    (1, (3, 1))
    """
    if isinstance(model, Predictor):
        return model
    classes = None
    if variables is not None:
        if not _is_flax_linen(model):
            raise TypeError(
                "variables is only used with a Flax linen Module; got a model of type "
                f"{type(model).__name__}."
            )
        module = model

        def raw(X):
            return module.apply(variables, X)

        name = f"linen {type(model).__name__}"
        host = False
    elif _is_flax_linen(model):
        raise TypeError(
            f"the Flax linen module {type(model).__name__} needs its parameters: pass "
            "variables=... (the dict returned by module.init)."
        )
    elif _is_flax_nnx(model):
        from flax import nnx

        graphdef, state = nnx.split(model)

        def raw(X):
            return nnx.merge(graphdef, state)(X)

        name = f"nnx {type(model).__name__}"
        host = False
    elif _is_equinox(model):
        raw = model if batched else jax.vmap(model)
        name = f"equinox {type(model).__name__}"
        host = False
    elif hasattr(model, "predict") and not isinstance(model, type):
        host_fn, name = _host_predict(model)
        classes = getattr(model, "classes_", None) if name.endswith("predict_proba") else None
        raw = host_fn
        host = True
    elif callable(model):
        raw = model
        name = getattr(model, "__name__", type(model).__name__)
        host = False
    else:
        raise TypeError(
            "model must be a JAX function, a Flax or Equinox module, or an object with a "
            f"predict method; got {type(model).__name__}."
        )

    if host:
        return _host_predictor(raw, name, n_features, output_names, classes)

    def fn(X):
        out = jnp.asarray(raw(X))
        if out.ndim == 1:
            out = out[:, None]
        return out.astype(jnp.float32)

    n_outputs = None
    if n_features is not None:
        probe = jax.ShapeDtypeStruct((2, n_features), jnp.float32)
        try:
            shape = jax.eval_shape(lambda X: raw(X), probe).shape
        except Exception as err:  # noqa: BLE001 - re-raised with the model named
            raise ValueError(
                f"calling the model {name} on a batch of shape (2, {n_features}) failed: {err}"
            ) from err
        n_outputs = _check_output_shape(shape, 2, name)
    return _finish(fn, n_outputs, output_names, name)


def _check_output_shape(shape: tuple, m: int, name: str) -> int:
    if len(shape) == 1 and shape[0] == m:
        return 1
    if len(shape) == 2 and shape[0] == m:
        return shape[1]
    raise ValueError(
        f"the model {name} must return shape (n,) or (n, outputs) for a batch of n = {m} rows; "
        f"got shape {tuple(shape)}."
    )


def _finish(fn, n_outputs, output_names, name, classes=None, host=False) -> Predictor:
    if output_names is not None:
        output_names = tuple(str(o) for o in output_names)
        if n_outputs is not None and len(output_names) != n_outputs:
            raise ValueError(
                f"output_names has {len(output_names)} names but the model {name} has "
                f"{n_outputs} outputs."
            )
        n_outputs = len(output_names)
    if n_outputs is None:
        raise ValueError("n_features is needed to determine the number of model outputs.")
    if output_names is None:
        if classes is not None and len(classes) == n_outputs:
            output_names = tuple(str(c) for c in classes)
        elif n_outputs == 1:
            output_names = ("y",)
        else:
            output_names = tuple(f"y{i}" for i in range(n_outputs))
    return Predictor(fn, n_outputs, output_names, name, host)


def _host_predictor(host_fn, name, n_features, output_names, classes) -> Predictor:
    if n_features is None:
        raise ValueError(f"n_features is needed to wrap the host model {name}.")
    probe = np.zeros((2, n_features), dtype=np.float32)
    try:
        out = np.asarray(host_fn(probe))
    except Exception as err:  # noqa: BLE001
        raise ValueError(
            f"calling the model {name} on a batch of shape (2, {n_features}) failed: {err}"
        ) from err
    n_outputs = _check_output_shape(out.shape, 2, name)

    def callback(X):
        result = np.asarray(host_fn(np.asarray(X)), dtype=np.float32)
        return result.reshape(result.shape[0], n_outputs)

    def fn(X):
        spec = jax.ShapeDtypeStruct((X.shape[0], n_outputs), jnp.float32)
        return jax.pure_callback(callback, spec, X, vmap_method="broadcast_all")

    return _finish(fn, n_outputs, output_names, name, classes, host=True)
