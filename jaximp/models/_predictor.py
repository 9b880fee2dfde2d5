"""The one model type every method evaluates (:class:`Predictor`, a pure ``apply(params, X)``)
and the helpers that keep its compiled functions reusable and its precision known. The
adapters (:mod:`._model`) and the tree reader (:mod:`._trees`) build on it.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable

import jax
import numpy as np
import pandas as pd

from ..data import PositiveClass, as_dataset, as_pandas, default_output

__all__ = ["Predictor", "compute_dtype", "stable_apply", "x64_enabled"]


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
        One name per output (class labels for classifiers). A binary classifier's second
        name (``classes[1]``) is a :class:`~jaximp.data.PositiveClass`, which every result
        keeps and :attr:`positive_output` reads.
    name : str
        Description of the wrapped model, used in error messages.
    host : bool
        True when predictions run outside JAX (NumPy / scikit-learn models): the engine then
        calls ``host_fn`` on batches built on the host in the user's own types (a DataFrame
        stays a DataFrame, float64 stays float64) and reduces in float64, unless the model
        has a ``device_fn``.
    host_fn : callable or None
        The host model's prediction function (``predict`` or ``predict_proba``).
    classes : tuple or None
        The class labels, one per output, when the outputs score a classifier's classes
        (``predict_proba``, ``decision_function``, or labels read as one-hot columns). Two
        classes make the second output the positive class (:attr:`positive_output`); set
        them (``dataclasses.replace(predictor, classes=(0, 1))``) to mark a JAX model's two
        outputs as a binary classifier's, which jaximp cannot tell from two targets.
    dtype : numpy dtype
        The float dtype the model computes in: float64 when ``jax_enable_x64`` is on and a
        floating parameter is float64 (JAX would promote the computation to float64), else
        float32. A JAX model without floating parameters (a plain function or closure)
        follows the input: float64 under x64, float32 otherwise. A host model is float64
        (NumPy's default). ``apply`` returns float32, except under x64 a model that
        computes in float64, whose outputs keep their digits, and the array form of tree
        ensembles, which returns float64 so that it equals scikit-learn's float64
        predictions.
    handles_missing : bool
        True when ``apply`` itself routes missing values (NaN) as the model's library does
        (XGBoost, LightGBM and CatBoost read into node arrays), so the methods pass NaN to it
        as they do to host models.
    device_fn : callable or None
        For a model on another framework's arrays (a torch module, a function of CuPy
        arrays): ``device_fn(rows: jax.Array (m, c)) -> jax.Array (m, o) or (m,)``, the model
        called through DLPack on the device that holds the rows. The engine then builds each
        batch on that device and reduces the predictions there, without a host round trip
        (``host_fn`` stays for the rest: probes, callbacks).
    device : jax.Device or None
        The device whose arrays ``device_fn`` takes (a torch module's, a ``DLPackModel``'s
        ``device``): the engine builds its batches there. None: where the rows are.
    piecewise_constant : bool
        True for trees read into node arrays: their gradient is 0 almost everywhere, so the
        gradient methods refuse them.
    recode : callable or None
        For a model read from a boosting library: ``recode(frame, X) -> X``, the codes
        ``X`` (n, c) of a DataFrame's columns renumbered to the category levels the model
        was fitted on (``X`` itself when they are those levels).
    check_rows : callable or None
        For trees whose library compares rows in float64 while the arrays compare them in
        float32 (LightGBM; HistGradientBoosting read by :func:`jaximp.tree_predictor`):
        ``check_rows(X, column_names)`` warns with a :class:`~jaximp.PrecisionWarning`
        where rows of the float64 ``X`` take another branch than the library's. The methods
        call it on the data.
    n_features : int or None
        The number of columns the model reads by position (tree models): the methods refuse
        data of another width, which the arrays would read past or short of.
    """

    apply: Callable[[Any, jax.Array], jax.Array]
    params: Any
    n_outputs: int
    output_names: tuple[str, ...]
    name: str
    host: bool = False
    dtype: np.dtype = np.dtype(np.float32)
    host_fn: Callable | None = None
    classes: tuple | None = None
    handles_missing: bool = False
    device_fn: Callable | None = None
    device: Any = None
    piecewise_constant: bool = False
    recode: Callable | None = None
    check_rows: Callable | None = None
    n_features: int | None = None

    def __post_init__(self) -> None:
        names = tuple(name if isinstance(name, PositiveClass) else str(name)
                      for name in self.output_names)
        if self.classes is not None and len(self.classes) == 2 == len(names):
            names = (names[0], PositiveClass(names[1]))
        object.__setattr__(self, "output_names", names)

    @property
    def stateful(self) -> bool:
        """True where the same Predictor may predict otherwise later: a host model (refitted
        in place), a model on another framework's arrays (a torch module trained in place) or
        an nnx module (whose parameters are its live Variables). What a method keeps between
        an Explainer's calls must not hold such a model's predictions unchecked."""
        return (self.host or self.device_fn is not None
                or type(self.params).__module__.startswith("flax.nnx"))

    def __call__(self, X) -> jax.Array:
        """Predictions (n, o) for the rows ``X``: a float matrix, or a DataFrame, which a host
        model gets as it is (a NumPy array too, float64 rows unrounded) and a JAX model as
        :func:`jaximp.as_dataset` codes it (category codes, 0/1 for booleans; a boosting
        library's model: its own categories' codes)."""
        X = as_pandas(X)
        if isinstance(X, pd.DataFrame):
            if self.host and self.host_fn is not None:
                from ._host import call_host

                return call_host(self.host_fn, X, self.name, n_outputs=self.n_outputs)
            frame, X = X, as_dataset(X, allow_missing=True).X
            if self.recode is not None:  # categories by the levels the model knows
                X = self.recode(frame, X)
        if self.n_features is not None and (np.ndim(X) != 2
                                            or np.shape(X)[1] != self.n_features):
            raise ValueError(f"the model {self.name} reads rows of {self.n_features} columns; "
                             f"got shape {np.shape(X)}.")
        if self.check_rows is not None and isinstance(X, np.ndarray) and X.ndim == 2:
            self.check_rows(np.asarray(X, np.float64), [f"x{j}" for j in range(X.shape[1])])
        if self.host and self.host_fn is not None and isinstance(X, np.ndarray):
            from ._host import call_host

            return call_host(self.host_fn, X, self.name, n_outputs=self.n_outputs)  # as given
        return self.apply(self.params, X)

    @property
    def positive_output(self) -> int | None:
        """The index of the positive class (1) when the model scores exactly two classes (a
        binary classifier's ``predict_proba``), else None. The methods' results then show
        it wherever they pick one output by default (``plot()``, ``top()``, the report);
        ``output=0`` still selects class 0."""
        index = default_output(self.output_names)
        return index if isinstance(self.output_names[index], PositiveClass) else None


_APPLY_CACHE: "collections.OrderedDict" = collections.OrderedDict()
_APPLY_CACHE_SIZE = 64


def stable_apply(key, make: Callable[[], Callable]) -> Callable:
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


def x64_enabled() -> bool:
    """Whether float64 arrays stay float64 (``jax_enable_x64``, also inside ``jax.enable_x64``)."""
    return jax.dtypes.canonicalize_dtype(np.float64) == np.float64


def compute_dtype(params) -> np.dtype:
    """float64 if x64 is on and a floating leaf of ``params`` is float64 (or there is none)."""
    if not x64_enabled():
        return np.dtype(np.float32)
    floating = [
        np.dtype(leaf.dtype) for leaf in jax.tree_util.tree_leaves(params)
        if hasattr(leaf, "dtype") and np.issubdtype(leaf.dtype, np.floating)
    ]
    if floating and all(dtype != np.float64 for dtype in floating):
        return np.dtype(np.float32)
    return np.dtype(np.float64)
