"""Model adapters: anything that predicts becomes a pure ``predict(X) -> (n, o)``."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Choice, Flag, Int, validate_params
from ._predictor import Predictor, compute_dtype, stable_apply
from ._dlpack import DLPackModel
from ._torch import TorchModel, is_torch_module

__all__ = ["as_2d_output", "as_predictor", "combine_outputs", "gradient_predictor",
           "predicts_class_labels"]


def _is_array(leaf) -> bool:
    return isinstance(leaf, (jax.Array, np.ndarray, np.generic))


def _pytree_parts(model):
    """``(arrays, treedef, static)`` of a pytree model with array leaves, else None.

    ``static`` holds ``(position, leaf)`` for the non-array leaves (strings, Python numbers,
    functions), which are compiled in like Equinox's ``eqx.partition(model, eqx.is_array)``.
    """
    leaves, treedef = jax.tree_util.tree_flatten(model)
    if jax.tree_util.treedef_is_leaf(treedef):  # not a registered pytree: a function, jit...
        return None
    arrays = tuple(leaf for leaf in leaves if _is_array(leaf))
    if not arrays:
        return None
    static = tuple((i, leaf) for i, leaf in enumerate(leaves) if not _is_array(leaf))
    return arrays, treedef, static


def _pytree_apply(treedef, static: tuple, name: str) -> Callable:
    """``apply(arrays, X)`` rebuilding the model from its array leaves, one per structure.

    Keyed by the tree structure and the static leaves (not by the model), so every model of
    one architecture gets the same function and the engine's compiled chunks are reused.
    """

    def make():
        n_leaves = treedef.num_leaves
        fixed = dict(static)

        def apply_pytree(arrays, X):
            it = iter(arrays)
            leaves = [fixed[i] if i in fixed else next(it) for i in range(n_leaves)]
            module = jax.tree_util.tree_unflatten(treedef, leaves)
            return as_2d_output(module(X), X.shape[0], name)

        return apply_pytree

    return stable_apply(("pytree", treedef, static, name), make)


def as_2d_output(out, n_rows: int, name: str) -> jax.Array:
    """Model output as (n, o) float32, or float64 where the model computes in float64
    (under ``jax_enable_x64``, so that its methods keep float64's digits); a wrong shape is
    an error naming the model."""
    out = jnp.asarray(out)
    if jnp.iscomplexobj(out):
        raise ValueError(f"the model {name} returned complex values; jaximp explains real "
                         "outputs (explain the real part, the modulus or each separately).")
    _check_output_shape(out.shape, n_rows, name)
    if out.ndim == 1:
        out = out[:, None]
    return out if out.dtype == jnp.float64 else out.astype(jnp.float32)


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


RESPONSE_METHODS = ("auto", "predict_proba", "decision_function", "predict", "raw")


def _host_predict(model, response_method: str = "auto") -> tuple[Callable, str]:
    """The NumPy-side prediction of a scikit-learn-like object: ``response_method``, where
    ``"auto"`` is probabilities for classifiers, else ``predict``."""
    if response_method not in RESPONSE_METHODS:
        raise ValueError(
            f"response_method must be one of {RESPONSE_METHODS}; got {response_method!r}."
        )
    from ._boosting import boosting_library, host_prediction

    if boosting_library(model) is not None:  # margins and XGBoost's Booster on the host
        host = host_prediction(model, response_method)
        if host is not None:
            return host
    if response_method == "raw":
        raise ValueError(
            f"response_method='raw' (the raw margin) is for XGBoost, LightGBM and CatBoost "
            f"models; got {type(model).__name__}. Use 'decision_function' or 'auto'."
        )
    if response_method in ("predict_proba", "decision_function"):
        if not hasattr(model, response_method):
            raise ValueError(
                f"response_method={response_method!r} but {type(model).__name__} has no "
                f"{response_method} method; use one of "
                f"{[m for m in RESPONSE_METHODS[1:] if hasattr(model, m)]}."
            )
        return getattr(model, response_method), f"{type(model).__name__}.{response_method}"
    is_classifier = getattr(model, "_estimator_type", None) == "classifier"
    if not is_classifier and hasattr(model, "__sklearn_tags__"):
        try:  # scikit-learn >= 1.6 describes estimators by tags
            is_classifier = model.__sklearn_tags__().estimator_type == "classifier"
        except Exception:  # noqa: BLE001 - a foreign object with a look-alike attribute
            is_classifier = False
    if is_classifier and hasattr(model, "predict_proba") and response_method == "auto":
        return model.predict_proba, f"{type(model).__name__}.predict_proba"
    classes = getattr(model, "classes_", None)
    if is_classifier and classes is not None and np.asarray(classes).dtype.kind not in "biuf":
        # labels that are not numbers (e.g. "yes"/"no"): one 0/1 column per class instead
        return _OneHotLabels(model.predict, np.asarray(classes)), \
            f"{type(model).__name__}.predict"
    return model.predict, f"{type(model).__name__}.predict"


class _OneHotLabels:
    """A classifier's ``predict`` whose labels are not numbers (strings, objects), as one 0/1
    column per class of ``classes_``: the hard-label analogue of ``predict_proba``."""

    hard_labels = True  # the columns are not probabilities: losses that need scores refuse them

    def __init__(self, predict: Callable, classes: np.ndarray):
        self.predict, self.classes = predict, classes

    def __call__(self, X) -> np.ndarray:
        labels = np.asarray(self.predict(X))
        if labels.ndim != 1:
            return labels  # call_host reports the shape
        onehot = labels[:, None] == self.classes[None, :]
        found = onehot.sum(axis=1) == 1
        if not np.all(found):
            raise ValueError(
                f"the classifier's predict returned labels {labels[~found][:3].tolist()} that "
                f"are not among its classes_ {self.classes.tolist()[:10]}; jaximp reads one "
                "label of classes_ per row."
            )
        return onehot.astype(np.float64)


@validate_params(n_features=Int(1, none=True), batched=Flag(none=True),
                 response_method=Choice(*RESPONSE_METHODS),
                 trees=Choice("arrays", "host", fix="Use 'host' to keep scikit-learn's own "
                              "predict for tree models."))
def as_predictor(
    model,
    *,
    variables=None,
    n_features: int | None = None,
    output_names: Sequence[str] | None = None,
    batched: bool | None = None,
    sample=None,
    response_method: str = "auto",
    trees: str = "arrays",
    input_shape: Sequence[int] | None = None,
) -> Predictor:
    """Turn a model into a :class:`Predictor`.

    Parameters
    ----------
    model : callable, flax Module, equinox Module or scikit-learn-like estimator
        - a JAX function ``f(X) -> (n,) | (n, o)`` (jitted or not). It is traced, as
          ``jax.jit`` traces it, and the trace kept per function: values it reads from
          outside (a global, a closure) are constants of that trace, so a later change to
          them is not seen; pass changing values as arrays of a callable pytree (below) or
          ``variables``, or wrap a new function;
        - a Flax nnx ``Module`` called on a batch;
        - a Flax linen ``Module``, with its ``variables``;
        - an Equinox ``Module``; Equinox layers take one example, so it is ``vmap``-ped over
          rows unless ``batched=True``;
        - a PyTorch ``nn.Module`` (on the CPU or a GPU), called on each batch of rows built on
          a JAX device through DLPack, without a host round trip where both run on the same
          device (see :mod:`jaximp.models._torch`);
        - a :class:`jaximp.DLPackModel`: any function of another framework's arrays (torch
          tensors, CuPy arrays), called the same way;
        - any object with ``predict`` (``predict_proba`` for a scikit-learn classifier, the
          class axis kept as outputs), called on NumPy arrays through ``jax.pure_callback``.
          Wrap a plain NumPy function as an object with a ``predict`` method;
        - a callable pytree with array leaves (a :class:`jaximp.MLP`, a dataclass registered
          with ``jax.tree_util.register_dataclass``...) called on a batch: its array leaves
          become ``params`` (traced arguments, not compiled-in constants) and ``apply``
          rebuilds the model from them, so models of the same structure share one ``apply``
          and their compiled evaluations.

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
    sample : DataFrame or array, optional
        A few real rows of the data, in the user's types: host models are probed on them
        (default: zeros of width ``n_features``).
    response_method : {"auto", "predict_proba", "decision_function", "predict", "raw"}
        For objects with ``predict`` only: ``"auto"`` uses ``predict_proba`` for a classifier
        that has it and ``predict`` otherwise; a classifier's hard labels come as one column
        (numeric labels) or one 0/1 column per class (other labels), which log loss and AUC
        refuse. Where a classifier has no ``predict_proba``, scikit-learn's partial dependence
        and its ``roc_auc`` scorer use ``decision_function`` instead: pass
        ``response_method="decision_function"`` for their values. For XGBoost, LightGBM
        and CatBoost models ``"raw"`` (or ``"decision_function"``) is the raw margin
        (``output_margin`` / ``raw_score`` / ``RawFormulaVal``) and ``"auto"`` the
        library's own ``predict`` (a ``Booster``) or ``predict_proba`` (a classifier). Every method accepts
        the returned Predictor in place of the model.
    trees : {"arrays", "host"}, default "arrays"
        For fitted scikit-learn trees, forests and gradient boosting (``DecisionTree*``,
        ``ExtraTree*``, ``RandomForest*``, ``ExtraTrees*``, ``GradientBoosting*``; and
        ``HistGradientBoosting*`` when ``jax_enable_x64`` is on): ``"arrays"`` reads the
        model into node arrays and predicts in JAX (:func:`jaximp.tree_predictor`), so the
        methods run it compiled and batched instead of calling scikit-learn; its splits are
        exactly scikit-learn's, its outputs are float32 (float64 under x64). ``"host"`` keeps
        scikit-learn's own ``predict`` / ``predict_proba`` on host batches (float64). Models
        the array form does not cover (categorical splits, other responses, a DataFrame whose
        columns differ from the fitted names...) stay on the host either way. XGBoost,
        LightGBM and CatBoost models are read into the same arrays (their splits, missing
        values and categorical splits as the library applies them); one the arrays cannot
        read (an unsupported objective, linear trees, CatBoost's categorical features)
        raises a TypeError naming ``trees="host"``, which predicts with the library itself;
        data lacking the model's features raise a ValueError.
    input_shape : tuple of int, optional
        The shape of one example, for data with more than two axes (images, sequences): the
        methods work on flat rows of ``prod(input_shape)`` columns and the model (a JAX
        function or module, or a torch module) receives them reshaped to
        ``(n, *input_shape)``. Set by the methods from ``X``'s shape.

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
    if response_method != "auto" and (isinstance(model, Predictor)
                                      or not hasattr(model, "predict")):
        raise ValueError(
            f"response_method={response_method!r} chooses the method of a scikit-learn-like "
            f"estimator; {type(model).__name__} is not one (it has no predict method)."
        )
    if isinstance(model, Predictor):
        return model
    if trees == "arrays" and variables is None and hasattr(model, "predict"):
        from ._trees import array_form

        converted = array_form(model, response_method, sample, n_features)
        if converted is not None:
            named = _finish(converted.apply, converted.params, converted.n_outputs,
                            output_names, converted.name, classes=converted.output_names)
            # the tree reader's predictor with the names asked for: every flag it set
            # (missing values, piecewise constant, category recoding) kept
            predictor = dataclasses.replace(converted, n_outputs=named.n_outputs,
                                            output_names=named.output_names, classes=None)
            if _is_sklearn_classifier(model):
                predictor = _with_classes(predictor, getattr(model, "classes_", None))
            return predictor
    if variables is not None:
        if not _is_flax_linen(model):
            raise TypeError(
                "variables is only used with a Flax linen Module; got a model of type "
                f"{type(model).__name__}."
            )
        module, params, name = model, variables, f"linen {type(model).__name__}"
        apply = stable_apply(module, lambda: lambda params, X: as_2d_output(
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
        apply = stable_apply(graphdef, lambda: lambda state, X: as_2d_output(
            nnx.merge(graphdef, state)(X), X.shape[0], name))
    elif _is_equinox(model):
        import equinox as eqx

        params, static = eqx.partition(model, eqx.is_array)
        name = f"equinox {type(model).__name__}"

        def make_equinox_apply():
            def apply_equinox(arrays, X):
                module = eqx.combine(arrays, static)
                out = module(X) if batched else jax.vmap(module)(X)
                return as_2d_output(out, X.shape[0], name)

            return apply_equinox

        apply = stable_apply((static, bool(batched)), make_equinox_apply)
    elif is_torch_module(model):
        torch_model = TorchModel(model, input_shape)
        predictor = _host_predictor(torch_model, n_features, output_names, sample)
        return dataclasses.replace(predictor, name=torch_model.name,
                                   device_fn=torch_model.device_call,
                                   device=torch_model.jax_device,
                                   dtype=torch_model.numpy_dtype)
    elif isinstance(model, DLPackModel):
        model = model if input_shape is None else model.with_input_shape(input_shape)
        predictor = _host_predictor(model, n_features, output_names, sample)
        return dataclasses.replace(predictor, name=model.name, device_fn=model.device_call,
                                   device=model.jax_device,
                                   dtype=np.dtype(np.float32))
    elif hasattr(model, "predict") and not isinstance(model, type):
        if input_shape is not None:
            raise TypeError(
                f"X has examples of shape {tuple(input_shape)}, but {type(model).__name__} "
                "predicts on 2-D rows; pass X flattened to (n, features), or explain a JAX or "
                "torch model, which gets the examples in their shape.")
        return _host_predictor(model, n_features, output_names, sample, response_method)
    elif callable(model) and not isinstance(model, type) and (
            parts := _pytree_parts(model)) is not None:
        params, treedef, static = parts
        name = type(model).__name__
        apply = _pytree_apply(treedef, static, name)
    elif callable(model):
        function, params = model, None
        name = getattr(model, "__name__", type(model).__name__)
        apply = stable_apply(function, lambda: lambda _, X: as_2d_output(
            function(X), X.shape[0], name))
    else:
        raise TypeError(
            "model must be a JAX function, a Flax or Equinox module, or an object with a "
            f"predict method; got {type(model).__name__}."
        )

    if input_shape is not None:
        apply = _with_input_shape(apply, tuple(int(d) for d in input_shape))
    n_outputs = None if n_features is None else _n_outputs(apply, params, n_features, name)
    return _finish(apply, params, n_outputs, output_names, name)


def _with_input_shape(apply, input_shape: tuple[int, ...]):
    """``apply`` on flat rows (n, prod(input_shape)), calling the model on (n, *input_shape)."""
    def make_apply():
        def apply_shaped(params, X):
            return apply(params, X.reshape(X.shape[0], *input_shape))

        return apply_shaped

    return stable_apply((apply, input_shape), make_apply)


_N_OUTPUTS: "collections.OrderedDict" = collections.OrderedDict()


def _n_outputs(apply, params, n_features: int, name: str) -> int:
    """Outputs of ``apply`` on a (2, n_features) probe, traced once per model and shapes."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    key = (apply, n_features, treedef,
           tuple((np.shape(leaf), str(getattr(leaf, "dtype", type(leaf)))) for leaf in leaves))
    if key in _N_OUTPUTS:
        return _N_OUTPUTS[key]
    # rows of the dtype the model will be computed in (float64 under x64 for a plain
    # function), so that a model whose operations insist on one dtype is probed with it
    dtype = compute_dtype(params)
    probe = jax.ShapeDtypeStruct((2, n_features), dtype)
    try:
        shape = jax.eval_shape(lambda X: apply(params, X), probe).shape
    except Exception as err:  # noqa: BLE001 - re-raised with the model named
        if isinstance(err, ValueError) and str(err).startswith("the model "):
            raise
        hint = ""
        if type(err).__name__ in ("TracerArrayConversionError", "ConcretizationTypeError",
                                  "TracerBoolConversionError", "TracerIntegerConversionError"):
            hint = (" The model computes with NumPy (or Python control flow) on its input, "
                    "which JAX traces; write it with jax.numpy, or give jaximp an object with "
                    "a predict method (e.g. types.SimpleNamespace(predict=f)), which is called "
                    "on the host with NumPy arrays.")
        if "dtype" in str(err):
            hint = (f" The model was given {dtype} rows, the dtype jaximp computes it in "
                    "(float64 under jax_enable_x64 unless its parameters are float32); cast "
                    "them inside the model to the dtype its operations need.")
        if type(err).__name__ == "TraceContextError" or "different trace level" in str(err):
            hint = (" The model changes its own state when called (an nnx module in training "
                    "mode: Dropout draws random numbers, BatchNorm updates its statistics); "
                    "call model.eval() before explaining it (model.train() switches back).")
        raise ValueError(
            f"calling the model {name} on a {dtype} batch of 2 rows of {n_features} columns "
            f"failed: {err}"
            f"{hint}"
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


def _is_sklearn_classifier(model) -> bool:
    try:
        from sklearn.base import is_classifier
    except ImportError:  # no scikit-learn: no scikit-learn classifier either
        return False
    try:
        return bool(is_classifier(model))
    except Exception:  # noqa: BLE001 - an object scikit-learn cannot inspect is no classifier
        return False


def predicts_class_labels(predictor: Predictor) -> bool:
    """Whether the model's one output is a scikit-learn classifier's ``predict``: class labels
    that are numbers (others are read as one 0/1 column per class)."""
    fn = predictor.host_fn
    return (predictor.n_outputs == 1 and getattr(fn, "__name__", None) == "predict"
            and _is_sklearn_classifier(getattr(fn, "__self__", None)))


def probability_classifier(model, method: str = "predict_proba"):
    """The scikit-learn classifier (not a boosting library's) that ``model`` is, with a
    ``method`` (``predict_proba`` by default; ``decision_function`` for an SVC without
    probabilities), or whose ``predict_proba`` the Predictor ``model`` calls on the host;
    None for any other model."""
    from ._boosting import boosting_library

    if isinstance(model, Predictor):
        fn = model.host_fn
        if not model.host or getattr(fn, "__name__", None) != "predict_proba":
            return None
        model = getattr(fn, "__self__", None)
    if (not hasattr(model, method) or not _is_sklearn_classifier(model)
            or boosting_library(model) is not None):
        return None
    return model


def response_predictor(model, response_method: str, sample=None) -> Predictor | None:
    """The Predictor of ``response_method`` (``"predict"`` or ``"decision_function"``) of the
    scikit-learn classifier ``model`` is or calls on the host (:func:`probability_classifier`),
    probed on ``sample``; None for any other model, or a classifier without that method.
    scikit-learn's accuracy scores the labels of ``predict``, which need not be the most
    probable class (a tuned decision threshold, SVC's Platt-scaled probabilities), and its
    binary ``roc_auc`` ranks ``decision_function``, which saturated probabilities tie."""
    estimator = probability_classifier(model, response_method)
    if estimator is None:
        return None
    return _host_predictor(estimator, None, None, sample, response_method=response_method)


def _finish(apply, params, n_outputs, output_names, name, classes=None, host=False
            ) -> Predictor:
    """Validate ``output_names`` against ``n_outputs`` and build the :class:`Predictor`."""
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
    return Predictor(apply, params, n_outputs, output_names, name, host, compute_dtype(params))


def _host_predictor(model, n_features, output_names, sample=None,
                    response_method: str = "auto") -> Predictor:
    """A host model, probed on ``sample`` (real rows of the data, in the user's types)."""
    from ._host import call_host

    host_fn, name = _host_predict(model, response_method)
    classes = getattr(model, "classes_", None) if (
        name.endswith(("predict_proba", "decision_function"))
        or isinstance(host_fn, _OneHotLabels)) else None
    if sample is None:
        if n_features is None:  # a fitted scikit-learn estimator knows its width
            n_features = getattr(model, "n_features_in_", None)
        for count in ("num_feature", "num_features"):  # a LightGBM or XGBoost Booster
            if n_features is None and callable(getattr(model, count, None)):
                n_features = int(getattr(model, count)())
        if n_features is None:
            raise ValueError(f"n_features is needed to wrap the host model {name}; pass "
                             "as_predictor(model, n_features=X.shape[1]).")
        probe, on = np.zeros((2, n_features)), "2 rows of zeros (no sample= was given)"
    else:
        probe, on = sample, f"{np.shape(sample)[0]} rows of the data"
    try:
        out = call_host(host_fn, probe, name)
    except Exception as err:
        # the model's own exception, unchanged (type, arguments, attributes), with context
        err.add_note(f"(raised by the model {name} on {on}, while jaximp probed its outputs"
                     + ("; pass as_predictor(model, sample=X[:2]), a few rows of the data in "
                        "the types the model was fitted on)" if sample is None else ")"))
        raise
    n_outputs = out.shape[1]

    def make_host_apply():
        def callback(X):
            result = np.asarray(host_fn(np.asarray(X)), dtype=np.float32)
            return result.reshape(result.shape[0], -1)

        def apply_host(_, X):
            spec = jax.ShapeDtypeStruct((X.shape[0], n_outputs), jnp.float32)
            return jax.pure_callback(callback, spec, X, vmap_method="broadcast_all")

        return apply_host

    # by the method too: one model's predict_proba and decision_function are two applies
    apply = stable_apply((model, name, n_outputs), make_host_apply)
    predictor = _finish(apply, None, n_outputs, output_names, name, classes, host=True)
    predictor = _with_classes(predictor, classes)
    return dataclasses.replace(predictor, host_fn=host_fn, dtype=np.dtype(np.float64))


def _with_classes(predictor: Predictor, classes) -> Predictor:
    """The predictor marked as scoring the classes ``classes`` (one per output)."""
    if classes is None or len(classes) != predictor.n_outputs:
        return predictor
    return dataclasses.replace(predictor, classes=tuple(np.asarray(classes).tolist()))


@validate_params(weights=Choice("mean", "sum", also="one number per output or a mapping of "
                                "output name to weight"))
def combine_outputs(model, weights="mean", *, name: str | None = None, **options) -> Predictor:
    """A model whose one output is a weighted sum of ``model``'s outputs.

    Every method then explains that aggregate: the partial dependence, H-statistic, ALE or
    Shapley values of, say, the mean over several targets or a classifier's expected class
    value, which for the non-linear statistics differ from aggregating per-output results.

    Parameters
    ----------
    model : model or Predictor
        Anything :func:`as_predictor` accepts.
    weights : {"mean", "sum"}, array-like of shape (o,) or mapping, default "mean"
        The weight of each output: equal weights summing to 1 (``"mean"``) or all 1
        (``"sum"``), one number per output, or ``{output name: weight}`` (other outputs 0).
    name : str, optional
        The output's name (default ``"mean"``, ``"sum"`` or ``"weighted sum"``).
    **options
        Passed to :func:`as_predictor` (``variables``, ``n_features``, ``sample``,
        ``response_method``, ``trees``). A host model is probed when it is wrapped: pass
        ``sample=X[:8]`` to probe it with rows of the data.

    Returns
    -------
    Predictor
        One output; host models stay on the host, in float64.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> f = lambda X: jnp.stack([X[:, 0], 3 * X[:, 1]], axis=1)
    >>> mean = combine_outputs(f, "mean", n_features=2)
    >>> mean.output_names, np.asarray(mean(jnp.ones((1, 2))))
    (('mean',), array([[2.]], dtype=float32))
    >>> combine_outputs(f, {"y1": 1.0}, n_features=2)(jnp.ones((1, 2))).tolist()
    [[3.0]]
    """
    predictor = as_predictor(model, **options)
    o = predictor.n_outputs
    if isinstance(weights, str):
        w = np.full(o, 1.0 / o if weights == "mean" else 1.0)
        label = weights
    else:
        if isinstance(weights, Mapping):
            unknown = [k for k in weights if k not in predictor.output_names]
            if unknown:
                raise ValueError(f"weights names unknown outputs {unknown}; the outputs are "
                                 f"{list(predictor.output_names)}.")
            w = np.array([float(weights.get(k, 0.0)) for k in predictor.output_names])
        else:
            w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.shape != (o,) or not np.all(np.isfinite(w)):
            raise ValueError(f"weights must hold {o} finite numbers, one per output "
                             f"{list(predictor.output_names)}; got {weights!r:.80}.")
        label = "weighted sum"
    inner = predictor.apply

    def make_apply():
        def apply_combined(params, X):
            inner_params, w_device = params
            return inner(inner_params, X) @ w_device[:, None]

        return apply_combined

    host_fn = None
    if predictor.host_fn is not None:
        def host_fn(batch, _fn=predictor.host_fn, _name=predictor.name):
            from ._host import call_host

            return call_host(_fn, batch, _name) @ w

    device_fn = None
    if predictor.device_fn is not None:
        def device_fn(rows, _fn=predictor.device_fn):
            out = _fn(rows)
            return out.reshape(out.shape[0], -1) @ jnp.asarray(w, jnp.float32)[:, None]

    return dataclasses.replace(
        predictor, apply=stable_apply(("combine", inner), make_apply),
        params=(predictor.params, np.asarray(w, predictor.dtype)), n_outputs=1,
        output_names=(name or label,), name=f"{label}({predictor.name})", host_fn=host_fn,
        device_fn=device_fn)


def gradient_predictor(predictor: Predictor, columns: list[int], n_columns: int) -> Predictor:
    """The model's partial derivatives along ``columns`` as a predictor with ``F * o``
    outputs (feature-major): forward mode (one ``jvp`` per column) when there are no more
    columns than outputs, else reverse mode (one ``vjp`` per output). Rows must be predicted
    independently of each other, as every method here assumes."""
    o = predictor.n_outputs
    mode = "forward" if len(columns) <= o else "reverse"
    directions = np.zeros((len(columns), n_columns), np.float32)
    directions[np.arange(len(columns)), columns] = 1.0

    def make():
        def apply_gradient(params, X):
            base, dirs = params
            fn = lambda Z: predictor.apply(base, Z)  # noqa: E731
            dirs = dirs.astype(X.dtype)
            if mode == "forward":
                tangents = jax.vmap(lambda d: jax.jvp(
                    fn, (X,), (jnp.broadcast_to(d, X.shape),))[1])(dirs)  # (F, m, o)
                out = jnp.transpose(tangents, (1, 0, 2))
            else:
                value, pullback = jax.vjp(fn, X)
                basis = jnp.eye(value.shape[1], dtype=value.dtype)[:, None, :]
                grads = jax.vmap(lambda ct: pullback(jnp.broadcast_to(ct, value.shape))[0])(
                    basis)  # (o, m, c)
                out = jnp.einsum("kmc,fc->mfk", grads, dirs, precision="highest")
            return out.reshape(X.shape[0], -1).astype(jnp.float32)

        return apply_gradient

    apply = stable_apply(("ale-gradient", mode, predictor.apply), make)
    names = tuple(f"d{j}/{name}" for j in columns for name in predictor.output_names)
    return dataclasses.replace(
        predictor, apply=apply, params=(predictor.params, jnp.asarray(directions)),
        n_outputs=len(columns) * o, output_names=names, name=f"gradient of {predictor.name}")
