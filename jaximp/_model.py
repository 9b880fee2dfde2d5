"""Model adapters: anything that predicts becomes a pure ``predict(X) -> (n, o)``."""

from __future__ import annotations

import dataclasses
import collections
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Predictor", "as_predictor"]


@dataclasses.dataclass(frozen=True, eq=False)
class Predictor:
    """A model as a pure function of a float matrix.

    Attributes
    ----------
    apply : callable
        ``apply(params, X: (m, c) float32) -> (m, o) float32``; traceable by ``jax.jit`` (host
        models go through ``jax.pure_callback``). The same function object is reused for the
        same model (or the same Flax graph), so compiled evaluations are cached across calls.
    params : pytree
        The model's arrays, passed to ``apply`` as traced arguments, not baked-in constants.
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

    apply: Callable[[Any, jax.Array], jax.Array]
    params: Any
    n_outputs: int
    output_names: tuple[str, ...]
    name: str
    host: bool = False

    def __call__(self, X) -> jax.Array:
        return self.apply(self.params, X)


_APPLY_CACHE: "collections.OrderedDict" = collections.OrderedDict()
_APPLY_CACHE_SIZE = 64


def _stable_apply(key, make: Callable[[], Callable]) -> Callable:
    """One ``apply`` function per model key (LRU of 64), so jit caches keyed on it are reused.

    Unhashable keys are cached by identity; the entry holds the key, so the identity stays
    valid while cached.
    """
    try:
        hash(key)
        cache_key = ("value", key)
    except TypeError:
        cache_key = ("id", id(key))
    if cache_key in _APPLY_CACHE:
        _APPLY_CACHE.move_to_end(cache_key)
        return _APPLY_CACHE[cache_key][1]
    apply = make()
    _APPLY_CACHE[cache_key] = (key, apply)
    if len(_APPLY_CACHE) > _APPLY_CACHE_SIZE:
        _APPLY_CACHE.popitem(last=False)
    return apply


def _as_2d_float32(out, n_rows: int, name: str) -> jax.Array:
    """Model output as (n, o) float32; a wrong shape is an error naming the model."""
    out = jnp.asarray(out)
    _check_output_shape(out.shape, n_rows, name)
    if out.ndim == 1:
        out = out[:, None]
    return out.astype(jnp.float32)


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
    is_classifier = getattr(model, "_estimator_type", None) == "classifier"
    if not is_classifier and hasattr(model, "__sklearn_tags__"):
        try:  # scikit-learn >= 1.6 describes estimators by tags
            is_classifier = model.__sklearn_tags__().estimator_type == "classifier"
        except Exception:  # noqa: BLE001 - a foreign object with a look-alike attribute
            is_classifier = False
    if is_classifier and hasattr(model, "predict_proba"):
        return model.predict_proba, f"{type(model).__name__}.predict_proba"
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
    if variables is not None:
        if not _is_flax_linen(model):
            raise TypeError(
                "variables is only used with a Flax linen Module; got a model of type "
                f"{type(model).__name__}."
            )
        module, params, name = model, variables, f"linen {type(model).__name__}"
        apply = _stable_apply(module, lambda: lambda params, X: _as_2d_float32(
            module.apply(params, X), X.shape[0], name))
    elif _is_flax_linen(model):
        raise TypeError(
            f"the Flax linen module {type(model).__name__} needs its parameters: pass "
            "variables=... (the dict returned by module.init)."
        )
    elif _is_flax_nnx(model):
        from flax import nnx

        graphdef, params = nnx.split(model)
        name = f"nnx {type(model).__name__}"
        apply = _stable_apply(graphdef, lambda: lambda state, X: _as_2d_float32(
            nnx.merge(graphdef, state)(X), X.shape[0], name))
    elif _is_equinox(model):
        import equinox as eqx

        params, static = eqx.partition(model, eqx.is_array)
        name = f"equinox {type(model).__name__}"

        def make_equinox_apply():
            def apply_equinox(arrays, X):
                module = eqx.combine(arrays, static)
                out = module(X) if batched else jax.vmap(module)(X)
                return _as_2d_float32(out, X.shape[0], name)

            return apply_equinox

        apply = _stable_apply((static, bool(batched)), make_equinox_apply)
    elif hasattr(model, "predict") and not isinstance(model, type):
        return _host_predictor(model, n_features, output_names)
    elif callable(model):
        function, params = model, None
        name = getattr(model, "__name__", type(model).__name__)
        apply = _stable_apply(function, lambda: lambda _, X: _as_2d_float32(
            function(X), X.shape[0], name))
    else:
        raise TypeError(
            "model must be a JAX function, a Flax or Equinox module, or an object with a "
            f"predict method; got {type(model).__name__}."
        )

    n_outputs = None if n_features is None else _n_outputs(apply, params, n_features, name)
    return _finish(apply, params, n_outputs, output_names, name)


_N_OUTPUTS: "collections.OrderedDict" = collections.OrderedDict()


def _n_outputs(apply, params, n_features: int, name: str) -> int:
    """Outputs of ``apply`` on a (2, n_features) probe, traced once per model and shapes."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    key = (apply, n_features, treedef,
           tuple((np.shape(leaf), str(getattr(leaf, "dtype", type(leaf)))) for leaf in leaves))
    if key in _N_OUTPUTS:
        return _N_OUTPUTS[key]
    probe = jax.ShapeDtypeStruct((2, n_features), jnp.float32)
    try:
        shape = jax.eval_shape(lambda X: apply(params, X), probe).shape
    except Exception as err:  # noqa: BLE001 - re-raised with the model named
        if isinstance(err, ValueError) and str(err).startswith("the model "):
            raise
        raise ValueError(
            f"calling the model {name} on a batch of shape (2, {n_features}) failed: {err}"
        ) from err
    _N_OUTPUTS[key] = shape[1]
    if len(_N_OUTPUTS) > 256:
        _N_OUTPUTS.popitem(last=False)
    return shape[1]


def _check_output_shape(shape: tuple, m: int, name: str) -> int:
    if len(shape) == 1 and shape[0] == m:
        return 1
    if len(shape) == 2 and shape[0] == m:
        return shape[1]
    raise ValueError(
        f"the model {name} must return shape (n,) or (n, outputs) for a batch of n = {m} rows; "
        f"got shape {tuple(shape)}."
    )


def _finish(apply, params, n_outputs, output_names, name, classes=None, host=False
            ) -> Predictor:
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
    return Predictor(apply, params, n_outputs, output_names, name, host)


def _host_predictor(model, n_features, output_names) -> Predictor:
    host_fn, name = _host_predict(model)
    classes = getattr(model, "classes_", None) if name.endswith("predict_proba") else None
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

    def make_host_apply():
        def callback(X):
            result = np.asarray(_host_predict(model)[0](np.asarray(X)), dtype=np.float32)
            return result.reshape(result.shape[0], -1)

        def apply_host(_, X):
            spec = jax.ShapeDtypeStruct((X.shape[0], n_outputs), jnp.float32)
            return jax.pure_callback(callback, spec, X, vmap_method="broadcast_all")

        return apply_host

    apply = _stable_apply((model, n_outputs), make_host_apply)
    return _finish(apply, None, n_outputs, output_names, name, classes, host=True)
