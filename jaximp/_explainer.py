"""A model and its data, validated once, with every method as a bound call."""

from __future__ import annotations

import copy
import functools
import inspect

import jax
import numpy as np

from ._explain import explain
from .data import Dataset, validate_params
from .methods import (
    ablation_attributions,
    ale,
    booster_importance,
    break_down,
    conditional_importance,
    dgsm,
    expected_gradients,
    gradient_interactions,
    ale_importance,
    ale_interaction,
    average_loss,
    background_dataset,
    check_target,
    h_statistic,
    input_x_gradient,
    integrated_gradients,
    loco_importance,
    partial_dependence,
    partial_dependence_all,
    partial_importance,
    pd_importance,
    pd_interaction,
    permutation_attributions,
    permutation_importance,
    prepare,
    read_only_copy,
    recorded_runs,
    repeated_call_key,
    rows_dataset,
    sage_importance,
    saliency,
    sensitivity_importance,
    shapley_interactions,
    shapley_values,
    smoothgrad,
    sobol_indices,
    tree_shap,
)
from .models import boosting_library

__all__ = ["Explainer"]

# the runs of this many bound calls (method and options) are kept, each holding its set-up
# (with the dataset's 16 warm calls, at most 24 set-ups are kept)
_REPEATED_CALLS_KEPT = 8
# options fixed when the Explainer is made: a method call cannot change them
_DATA_OPTIONS = frozenset({"feature_names", "categorical", "groups", "sample_weight", "variables"})
# the arguments the Explainer itself passes
_FIXED_ARGUMENTS = frozenset({"model", "X", "y", "explained"})


class _Same:
    """A value compared by identity, and held, so that a new object cannot take its id."""

    __slots__ = ("value",)
    __hash__ = None

    def __init__(self, value):
        self.value = value

    def __eq__(self, other) -> bool:
        return isinstance(other, _Same) and other.value is self.value


class _Equal(_Same):
    """A small array compared by value (an nnx transform replaces it by an equal copy)."""

    __slots__ = ()

    def __eq__(self, other) -> bool:
        return (isinstance(other, _Equal) and np.shape(other.value) == np.shape(self.value)
                and bool(np.array_equal(other.value, self.value)))


def _fitted_state(model, hyperparameters=frozenset()) -> tuple | None:
    """What a refit or further training changes in a model the Explainer read once: each
    attribute but the ``hyperparameters`` (which ``set_params`` changes) by identity, a list's
    or object array's items too (which warm_start grows and an assignment replaces in
    place), and a booster's count of rounds (which its ``update`` grows in place); an nnx
    module's structure (:func:`_module_structure`). None for a plain function, whose state
    the Explainer does not hold."""
    if _is_nnx_module(model):
        return _module_structure(model)
    try:
        attributes = vars(model)
    except TypeError:
        return None
    if not hasattr(model, "predict"):
        return None
    return (*((name, _Same(value), _items(value)) for name, value in attributes.items()
              if name not in hyperparameters), _boosted_rounds(model))


def _items(value) -> tuple | None:
    """The items of a list or an object array (trees), by identity."""
    if isinstance(value, list) or (isinstance(value, np.ndarray) and value.dtype == object):
        return tuple(map(_Same, value.ravel() if isinstance(value, np.ndarray) else value))
    return None


def _boosted_rounds(model) -> int | None:
    """The rounds of an XGBoost, LightGBM or CatBoost model (None for another)."""
    booster = getattr(model, "booster_", model)  # LightGBM's scikit-learn model
    if callable(getattr(model, "get_booster", None)):  # XGBoost's
        booster = model.get_booster()
    for rounds in ("num_boosted_rounds", "current_iteration"):
        if callable(getattr(booster, rounds, None)):
            return int(getattr(booster, rounds)())
    return getattr(model, "tree_count_", None)  # CatBoost's


def _is_nnx_module(model) -> bool:
    return any(base.__module__.startswith("flax.nnx") for base in type(model).__mro__)


def _module_structure(module) -> tuple:
    """An nnx module's public attributes, by name (nnx's transforms reorder them): submodules,
    Variables (their new values are followed) and other objects (activation functions) by
    identity, numbers and strings and small arrays by value."""
    found, stack = [], [module]
    while stack:
        for name, value in sorted(vars(stack.pop()).items()):
            if name.startswith("_"):  # nnx's own bookkeeping
                continue
            kind = _kind(type(value))
            if kind == "module":
                stack.append(value)
            elif kind == "sequence":  # layers kept in a list
                stack.extend(v for v in value if _kind(type(v)) == "module")
            if kind == "plain":
                found.append((name, value))
            elif kind == "array" and np.size(value) <= 64:
                found.append((name, _Equal(value)))
            else:
                found.append((name, _Same(value), _items(list(value)) if kind == "sequence"
                              else None))
    return tuple(found)


@functools.cache
def _kind(cls: type) -> str:
    """What :func:`_module_structure` reads of a value of type ``cls``, found once per type
    (isinstance against nnx's classes costs a microsecond a value)."""
    from flax import nnx

    if issubclass(cls, nnx.Module):
        return "module"
    if issubclass(cls, (list, tuple)):
        return "sequence"
    if issubclass(cls, (np.ndarray, jax.Array)):
        return "array"
    return "plain" if issubclass(cls, (int, float, str, bool, type(None))) else "other"


def _description(dataset: Dataset) -> tuple:
    """The ``categorical`` and ``groups`` that describe rows as ``dataset`` is described: its
    integer-coded categorical columns (text is read as such anyway) and its groups of
    columns, by position (None where there are none)."""
    categorical = [f.columns[0] for f in dataset.features if f.is_categorical
                   and len(f.columns) == 1 and not any(isinstance(v, str) for v in f.levels)]
    groups = {f.name: list(f.columns) for f in dataset.features if len(f.columns) > 1}
    return categorical or None, groups or None


def _copy_of_mutable(value):
    """A read-only copy of a NumPy array, a deep copy of a DataFrame; other values as given
    (a ``jax.Array`` cannot change; a Dataset is validated data the caller hands over)."""
    if isinstance(value, np.ndarray):
        return read_only_copy(value)
    if hasattr(value, "iloc") and hasattr(value, "copy"):
        return value.copy(deep=True)
    return value


@functools.cache
def _parameters(function) -> frozenset | None:
    """The keyword options of ``function`` (None when it takes any keyword)."""
    parameters = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters)


class Explainer:
    """A model and its data, validated once; every method is a bound call.

    The data are checked and described once (features, categories, groups, weights), the
    model is wrapped once (and probed for its outputs), and each method then runs on them:
    ``ex.permutation_importance(n_repeats=5)`` equals
    ``jaximp.permutation_importance(model, X, y, n_repeats=5)`` (the functions are the
    methods' one implementation; the Explainer passes them the validated data and model). The
    engine keeps what a repeated call can reuse: the data's device copy, plans and their
    tables, and the compiled chunks; a new option or random state builds new ones. A partial
    dependence or a permutation importance (one summed loss, ``kind="difference"``) small
    enough for one device call returns as soon as the call is dispatched:
    its values are read from the device (and finished) when first used, so a loop of calls
    keeps the device busy and waits only where it reads.

    The Explainer holds what it validated: the rows on the devices, a copy of ``y``, and a
    tree model's nodes, read into arrays once. A call after the model was refit or trained
    further (a model read into arrays: its trees replaced, a booster's rounds added), after an
    nnx module was given other submodules or attributes, or after ``jax_enable_x64`` was
    switched raises rather than answering from the old state: make a new Explainer. Not seen:
    edits of a tree's own arrays in place, and a booster changed through its own setters with
    the same number of rounds (XGBoost's ``set_param`` or ``load_model``, CatBoost's
    ``set_scale_and_bias``). A host model (one called through ``predict``)
    is called at each evaluation and follows a refit that keeps its outputs, as a torch or
    nnx module follows its parameters updated in place (SAGE and Sobol indices, which keep the
    model's predictions on the data between calls, call such a model on the data again and
    start afresh where they differ).

    Parameters
    ----------
    model : callable or estimator
        Anything :func:`jaximp.as_predictor` accepts.
    X : array-like of shape (n, c), DataFrame or Dataset
        The data the methods explain. A NumPy array or DataFrame is copied (its size again in
        host memory), so later changes to the caller's do not reach the Explainer; a
        ``jax.Array`` or a :class:`jaximp.Dataset` is used in place.
    y : array-like of shape (n,) or (n, o), optional
        Targets, for the loss-based methods (permutation importance, LOCO, sensitivity,
        partial importance). Copied, read-only, as ``ex.y``: like ``X``, which is kept on
        the devices, later changes to the caller's array do not reach the Explainer (make a
        new one for new targets).
    background : array-like or DataFrame, optional
        Background rows (or examples of X's shape) of Shapley values, SAGE and expected
        gradients (default: ``X``); copied as ``X`` is, validated once and kept on the
        device.
    sample_weight, feature_names, categorical, groups
        As in :func:`jaximp.as_dataset`; fixed for every method call.
    variables : pytree, optional
        As in :func:`jaximp.as_predictor`; fixed for every method call.
    memory_budget : int, optional
        Bytes the whole call may use beyond its result and the data (default
        :func:`jaximp.default_memory_budget`); a result that cannot fit is refused before any
        model evaluation.
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        The default ``random_state`` of every method call (a call may pass its own).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(200, 3))
    >>> y = 3 * X[:, 0] + X[:, 1]
    >>> ex = Explainer(lambda A: 3 * A[:, 0] + A[:, 1], X, y)
    >>> ex.permutation_importance(n_repeats=3).top(2)
    ['x0', 'x1']
    >>> ex.partial_dependence("x0", grid_resolution=5).average.shape
    (5, 1)
    """

    @validate_params()
    def __init__(self, model, X, y=None, *, background=None, sample_weight=None,
                 feature_names=None, categorical=None, groups=None, variables=None,
                 memory_budget=None, random_state=0):
        # X and background are copied, as y is: later changes to the caller's arrays (which
        # the host rows would otherwise share) do not reach the Explainer's calls
        X, background = _copy_of_mutable(X), _copy_of_mutable(background)
        self.dataset, self.predictor = prepare(
            model, X, feature_names=feature_names, categorical=categorical, groups=groups,
            sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
            allow_missing=True,  # NaN reaches models that handle it; other JAX models refuse
        )
        self.dataset.pin()  # its device copy is made once and kept
        self.model = model
        # a read-only copy: later changes to the caller's array do not reach the Explainer
        # (as for X, kept on the devices), and a warm call need not hash it again
        self.y = None if y is None else read_only_copy(
            check_target(y, self.dataset.n_rows, self.dataset.source))
        self.background = background  # the copy, unvalidated, for a call that weights it
        # new rows and the background are described as the data is (also a Dataset given)
        self._categorical, self._groups = _description(self.dataset)
        # validated once and kept on the devices, so that a repeated Shapley or SAGE call
        # reuses its plans and sends nothing again (a Dataset given is used as it is)
        self._background_data = None if background is None else background_dataset(
            background, self.dataset, categorical=self._categorical, groups=self._groups,
            allow_missing=self.predictor.host or self.predictor.handles_missing)
        if self._background_data is not None and self._background_data is not background:
            self._background_data.pin(defer_reads=False)
        self.memory_budget = memory_budget
        self.random_state = random_state
        # what the kept data and model depend on, checked at every call (_check_unchanged)
        self._x64 = bool(jax.config.jax_enable_x64)
        get_params = getattr(model, "get_params", None)
        self._hyperparameters = frozenset(get_params(deep=False) if callable(get_params)
                                          else ())
        self._read_state = (None if self.predictor.host
                            else _fitted_state(model, self._hyperparameters))

    def __reduce__(self):
        raise TypeError(
            "an Explainer holds its data on the devices and its model's compiled evaluations, "
            "and does not pickle; pickle its results (they hold no model), or make a new "
            "Explainer where it is needed.")

    def __copy__(self):  # copies, unlike pickles, stay in this process
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone

    def __deepcopy__(self, memo):
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        clone.__dict__.update(copy.deepcopy(self.__dict__, memo))
        if clone._read_state is not None:  # the copy's model is a copy too
            clone._read_state = _fitted_state(clone.model, clone._hyperparameters)
        return clone

    def __repr__(self) -> str:
        n = self.dataset.n_rows
        return (f"Explainer({self.predictor.name}, {n} rows x {len(self.dataset.features)} "
                f"features, outputs {list(self.predictor.output_names)}"
                f"{', with y' if self.y is not None else ''})")

    # -- the one way every bound method reaches its function --------------------------------

    def _call(self, function, *args, _explained=None, _model=None, **options):
        """``function(model, explained, *args, **options)`` with the Explainer's model (or
        ``_model``), data (or the rows ``_explained``) and defaults. A call of a warm function
        on the Explainer's own model and data is kept by its arguments, options and model
        (another Explainer may share the data): repeated, it is the run its first call set
        up (:func:`recorded_runs`)."""
        taken = sorted(_FIXED_ARGUMENTS.intersection(options))
        if taken:
            raise TypeError(
                f"Explainer.{function.__name__} takes no {taken[0]!r}: the Explainer's model, "
                "data and targets are fixed when it is made (new rows to explain are the "
                "first argument of the methods that take them).")
        self._check_unchanged()
        explained, model = _explained, _model
        key = (repeated_call_key(function, args, options, self.predictor, self.memory_budget,
                                 self.random_state)
               if explained is None and model is None
               and getattr(function, "__jaximp_warm__", False) else None)
        if key is None:
            return self._answer(function, args, explained, model, options)
        answer = []

        def first_call():  # the run to repeat, or None where the call made no single one
            with recorded_runs() as runs:
                answer.append(self._answer(function, args, None, None, options))
            return runs[0] if len(runs) == 1 else None

        run = self.dataset.recent("repeated calls", key, first_call, _REPEATED_CALLS_KEPT)
        if answer:
            return answer[0]
        return self._answer(function, args, None, None, options) if run is None else run()

    def _answer(self, function, args, explained, model, options):
        """The function called on the Explainer's model, data and defaults, options checked."""
        fixed = sorted(_DATA_OPTIONS.intersection(options))
        if fixed:
            raise TypeError(
                f"{function.__name__}: {fixed} are fixed when the Explainer is made "
                f"(Explainer(model, X, {fixed[0]}=...)); a method call cannot change them.")
        accepted = _parameters(function)
        if accepted is not None:
            unknown = sorted(set(options) - accepted)
            if unknown:
                own = list(inspect.signature(function).parameters)[2:]  # after model and X
                raise TypeError(
                    f"Explainer.{function.__name__} has no option {unknown[0]!r}; its options "
                    f"are {[name for name in own if name not in _DATA_OPTIONS | {'y'}]}.")
        for name in ("memory_budget", "random_state"):
            if (accepted is None or name in accepted) and name not in options:
                options[name] = getattr(self, name)
        return function(self.predictor if model is None else model,
                        self.dataset if explained is None else explained, *args, **options)

    def _check_unchanged(self) -> None:
        """Refuse a call that the kept data or model would answer wrongly: after a switch of
        the float mode (the rows and the model are kept in the mode they were made in), or
        after a refit of a model read into arrays (a tree model's nodes are read once)."""
        if bool(jax.config.jax_enable_x64) != self._x64:
            raise RuntimeError(
                f"this Explainer was made with jax_enable_x64={self._x64}, and its data and "
                f"model are kept in that float mode; jax_enable_x64 is now "
                f"{not self._x64}. Make a new Explainer after switching the float mode.")
        if (self._read_state is not None
                and _fitted_state(self.model, self._hyperparameters) != self._read_state):
            what = ("its submodules or attributes (parameters' new values are followed)"
                    if _is_nnx_module(self.model) else "its trees into arrays")
            raise RuntimeError(
                f"{type(self.model).__name__} changed (refit?) after this Explainer read "
                f"{what}; they are read once. Make a new Explainer for the new model.")

    def _estimator(self):
        """The scikit-learn estimator itself, for the options that read its trees (None for
        another model: the wrapped one is the same)."""
        return self.model if type(self.model).__module__.startswith("sklearn.") else None

    def _tree_model(self, options):
        """The model itself where ``method="recursion"`` reads its trees (a scikit-learn or a
        boosting library's model); None otherwise."""
        if options.get("method", "brute") == "brute":
            return None
        return self._estimator() or (
            self.model if boosting_library(self.model) is not None else None)

    def _targets(self, method: str):
        if self.y is None:
            raise ValueError(f"Explainer.{method} needs the targets; pass them as "
                             "Explainer(model, X, y).")
        return self.y

    def _rows(self, rows):
        """Rows to explain: the Explainer's data (None), or new rows as a Dataset with its
        columns, groups and categories."""
        if rows is None:
            return None
        return rows_dataset(rows, self.dataset, self._categorical, self._groups)

    # -- bound methods ----------------------------------------------------------------------

    def partial_dependence(self, features, **options):
        """:func:`jaximp.partial_dependence` of this model and data."""
        # recursion reads a scikit-learn estimator's trees, which the wrapped model hides
        model = self._tree_model(options)
        return self._call(partial_dependence, features, _model=model, **options)

    def partial_dependence_all(self, **options):
        """:func:`jaximp.partial_dependence_all` of this model and data."""
        return self._call(partial_dependence_all, **options)

    def pd_importance(self, **options):
        """:func:`jaximp.pd_importance` of this model and data."""
        model = self._tree_model(options)
        return self._call(pd_importance, _model=model, **options)

    def pd_interaction(self, **options):
        """:func:`jaximp.pd_interaction` of this model and data."""
        model = self._tree_model(options)
        return self._call(pd_interaction, _model=model, **options)

    def h_statistic(self, **options):
        """:func:`jaximp.h_statistic` of this model and data."""
        return self._call(h_statistic, **options)

    def permutation_importance(self, **options):
        """:func:`jaximp.permutation_importance` of this model, data and targets."""
        # a scorer callable scorer(estimator, X, y) calls the model itself, which the wrapped
        # one hides (a scikit-learn forest read into arrays)
        scorers = _listed(options.get("scoring"))
        model = self.model if any(callable(scorer) for scorer in scorers) else (
            self._roc_auc_estimator(options))
        return self._call(permutation_importance, self._targets("permutation_importance"),
                          _model=model, **options)

    def _roc_auc_estimator(self, options):
        """The scikit-learn estimator where the losses name ``"roc_auc"``, which scikit-learn
        scores on its ``decision_function`` (trees read into arrays give probabilities)."""
        named = _listed(options.get("scoring")) + _listed(options.get("loss"))
        return self._estimator() if "roc_auc" in [n for n in named if isinstance(n, str)] else None

    def average_loss(self, **options):
        """:func:`jaximp.average_loss` of this model, data and targets."""
        return self._call(average_loss, self._targets("average_loss"),
                          _model=self._roc_auc_estimator(options), **options)

    def conditional_importance(self, **options):
        """:func:`jaximp.conditional_importance` of this model, data and targets."""
        # the strata sampler reads a scikit-learn estimator's splits, as recursion its trees
        model = (self._estimator() if options.get("sampler") == "strata" else
                 self._roc_auc_estimator(options))
        return self._call(conditional_importance, self._targets("conditional_importance"),
                          _model=model, **options)

    def sage_importance(self, **options):
        """:func:`jaximp.sage_importance` of this model, data and targets, against the
        Explainer's background (default: this data)."""
        if self.background is not None:
            options.setdefault("background", self._background_data)
        explains_the_loss = options.get("target", "y") == "y"  # else Shapley effects
        y = self._targets("sage_importance") if explains_the_loss else None
        return self._call(sage_importance, y, **options)

    def sobol_indices(self, **options):
        """:func:`jaximp.sobol_indices` of this model and data."""
        return self._call(sobol_indices, **options)

    def tree_shap(self, rows=None, **options):
        """:func:`jaximp.tree_shap` of this tree model on ``rows`` (default: this data);
        path-dependent unless a ``background`` is passed."""
        return tree_shap(self.model, self.dataset if rows is None else self._rows(rows),
                         **options)

    def booster_importance(self, importance_type=None, **options):
        """:func:`jaximp.booster_importance` of this model (an XGBoost, LightGBM or CatBoost
        model: the importances its trees record, without the data)."""
        return booster_importance(self.model, importance_type, **options)

    def loco_importance(self, **options):
        """:func:`jaximp.loco_importance` of this model, data and targets."""
        return self._call(loco_importance, self._targets("loco_importance"), **options)

    def sensitivity_importance(self, **options):
        """:func:`jaximp.sensitivity_importance` of this model, data and targets."""
        return self._call(sensitivity_importance, self._targets("sensitivity_importance"),
                          **options)

    def partial_importance(self, feature, **options):
        """:func:`jaximp.partial_importance` of one feature of this model, data and targets."""
        return self._call(partial_importance, self._targets("partial_importance"), feature,
                          **options)

    def ale(self, features, **options):
        """:func:`jaximp.ale` of this model and data."""
        return self._call(ale, features, **options)

    def ale_importance(self, **options):
        """:func:`jaximp.ale_importance` of this model and data."""
        return self._call(ale_importance, **options)

    def ale_interaction(self, **options):
        """:func:`jaximp.ale_interaction` of this model and data."""
        return self._call(ale_interaction, **options)

    def shapley_values(self, rows=None, **options):
        """:func:`jaximp.shapley_values` of ``rows`` (default: this data) against the
        Explainer's background (default: this data)."""
        options.setdefault("background", self._shapley_background(options))
        return self._call(shapley_values, _explained=self._rows(rows), **options)

    def shapley_interactions(self, rows=None, **options):
        """:func:`jaximp.shapley_interactions` of ``rows``, as :meth:`shapley_values`."""
        options.setdefault("background", self._shapley_background(options))
        return self._call(shapley_interactions, _explained=self._rows(rows), **options)

    def break_down(self, rows=None, **options):
        """:func:`jaximp.break_down` of ``rows`` (default: this data) against the
        Explainer's background (default: this data)."""
        options.setdefault("background", self._shapley_background(options))
        return self._call(break_down, _explained=self._rows(rows), **options)

    def _shapley_background(self, options):
        """The background of a Shapley call: this data, or the background given, validated
        once (as given when the call weights it: a Dataset carries its own weights)."""
        weighted = options.get("background_weight") is not None
        if self.background is None:
            if weighted and "background" not in options:
                raise ValueError(
                    "background_weight needs an explicit background; this Explainer's "
                    "background is its data, whose weights are its sample_weight. Pass "
                    "background= with the weights, or Explainer(..., background=...).")
            return self.dataset
        return self.background if weighted else self._background_data

    # -- gradient attributions (differentiable JAX models) ----------------------------------

    def integrated_gradients(self, rows=None, **options):
        """:func:`jaximp.integrated_gradients` of ``rows`` (default: this data)."""
        return self._call(integrated_gradients, _explained=self._rows(rows), **options)

    def expected_gradients(self, rows=None, **options):
        """:func:`jaximp.expected_gradients` of ``rows`` (default: this data), baselines drawn
        from the Explainer's background (default: this data)."""
        background = self.dataset if self.background is None else self._background_data
        return self._call(expected_gradients, options.pop("background", background),
                          _explained=self._rows(rows), **options)

    def smoothgrad(self, rows=None, **options):
        """:func:`jaximp.smoothgrad` of ``rows`` (default: this data)."""
        return self._call(smoothgrad, _explained=self._rows(rows), **options)

    def saliency(self, rows=None, **options):
        """:func:`jaximp.saliency` of ``rows`` (default: this data)."""
        return self._call(saliency, _explained=self._rows(rows), **options)

    def input_x_gradient(self, rows=None, **options):
        """:func:`jaximp.input_x_gradient` of ``rows`` (default: this data)."""
        return self._call(input_x_gradient, _explained=self._rows(rows), **options)

    def permutation_attributions(self, rows=None, **options):
        """:func:`jaximp.permutation_attributions` of ``rows`` (default: this data)."""
        return self._call(permutation_attributions, _explained=self._rows(rows), **options)

    def ablation_attributions(self, rows=None, **options):
        """:func:`jaximp.ablation_attributions` of ``rows`` (default: this data)."""
        return self._call(ablation_attributions, _explained=self._rows(rows), **options)

    def dgsm(self, **options):
        """:func:`jaximp.dgsm` of this model and data."""
        return self._call(dgsm, **options)

    def gradient_interactions(self, **options):
        """:func:`jaximp.gradient_interactions` of this model and data."""
        return self._call(gradient_interactions, **options)

    def explain(self, **options):
        """:func:`jaximp.explain` of this model, data and (if given) targets."""
        return self._call(explain, self.y, **options)


def _listed(option) -> list:
    """A loss or scoring option as a list of its entries (a dict's values)."""
    if isinstance(option, dict):
        return list(option.values())
    return list(option) if isinstance(option, (list, tuple)) else [option]
