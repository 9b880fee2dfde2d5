"""One call that runs several methods on one model and data, sharing what they can share."""

from __future__ import annotations

import functools
import inspect
import sys
import time
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .data import (
    Int,
    Replicates,
    as_key,
    resolve_pairs,
    select_outputs,
    validate_params,
)
from .methods import (
    MEASURE_RULE,
    PartialDependences,
    ale_importance,
    bootstrap_weights,
    extract_weights,
    garson_importance,
    h_statistic,
    importance_from_pds,
    interaction_from_pds,
    loco_importance,
    olden_importance,
    permutation_importance,
    planned_pd,
    prepare,
    sensitivity_importance,
    shapley_values,
)
from .results import FeatureImportance, FeatureInteraction, importance_column, plot_importances

__all__ = ["Explanation", "explain", "kendall_tau_b"]

METHODS = ("pd_importance", "pd_interaction", "h_statistic", "permutation", "loco",
           "sensitivity", "garson", "olden", "ale", "shapley")
_NEEDS_Y = ("permutation", "loco", "sensitivity")
_WEIGHT_METHODS = {"garson": garson_importance, "olden": olden_importance}
_FUNCTIONS = {"h_statistic": h_statistic, "permutation": permutation_importance,
              "loco": loco_importance, "sensitivity": sensitivity_importance,
              "ale": ale_importance, "shapley": shapley_values}
# Arguments explain passes itself; the per-method options may not set them.
_RESERVED = {"model", "X", "y", "features", "output", "random_state", "sample_weight",
             "feature_names", "categorical", "groups", "variables", "memory_budget", "progress",
             "fit", "n_bootstrap"}
_PD_OPTIONS = {"pd_importance": ("measure",), "pd_interaction": ("measure", "pairs", "reference")}
_SIGNED = ("olden",)  # ranked by magnitude
_FRAME_COLUMNS = ["method", "statistic", "feature", "output", "value", "std", "q025", "q975"]


def kendall_tau_b(a, b) -> float:
    """Kendall's tau-b of two score vectors (ties in either count as in scipy's default).

    ``(C - D) / sqrt((P - T_a) (P - T_b))`` over the ``P = n (n - 1) / 2`` pairs: ``C`` and
    ``D`` concordant and discordant pairs, ``T_a`` (``T_b``) pairs tied in ``a`` (``b``).
    NaN when either vector is constant.

    Examples
    --------
    >>> kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4])
    0.666...
    """
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length; got {a.size} and {b.size}.")
    upper = np.triu_indices(a.size, k=1)
    sa = np.sign(a[:, None] - a[None, :])[upper]
    sb = np.sign(b[:, None] - b[None, :])[upper]
    denominator = np.sqrt(np.sum(sa != 0) * np.sum(sb != 0))
    return float(np.sum(sa * sb) / denominator) if denominator > 0 else float("nan")


class Explanation(Mapping):
    """Every result of one :func:`explain` call: a read-only mapping of method name to result.

    Attributes
    ----------
    partial_dependence : PartialDependences or None
        The 1-D PDs shared by the PD-based methods (on their grid), for plots.
    feature_names : tuple of str
        The features scored.
    output_names : tuple of str
        The model's outputs explained; a binary classifier's second is its positive class,
        which :meth:`importances`, :meth:`agreement`, :meth:`plot` and the report show by
        default (``output=0``: class 0).
    n_rows : int
    settings : dict
        The options of the call (methods, seed, grid resolution, bootstrap, per-method options).
    timings : dict
        Seconds spent in each step (``"partial_dependence"`` covers both PD-based methods).
    data_summary : DataFrame
        One row per feature: kind, columns, mean, standard deviation, minimum, maximum (levels
        for categorical features).
    model_summary : dict
        The model's type, outputs, dtype and, for networks, layer sizes.
    """

    def __init__(self, results, *, partial_dependence, feature_names, output_names, n_rows,
                 settings, timings, data_summary, model_summary):
        self._results = dict(results)
        self.partial_dependence = partial_dependence
        self.feature_names = tuple(feature_names)
        self.output_names = tuple(output_names)
        self.n_rows = n_rows
        self.settings = settings
        self.timings = timings
        self.data_summary = data_summary
        self.model_summary = model_summary

    def __getitem__(self, method: str):
        try:
            return self._results[method]
        except KeyError:
            raise KeyError(f"no result for {method!r}; this explanation holds "
                           f"{list(self._results)}.") from None

    def __iter__(self):
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)

    def __repr__(self) -> str:
        lead = self.importance_methods[:1]
        best = f"; top by {lead[0]}: {', '.join(self._scores(lead[0], None).nlargest(3).index)}" \
            if lead else ""
        return (f"Explanation({len(self)} methods on {self.n_rows} rows x "
                f"{len(self.feature_names)} features: {', '.join(self)}{best})")

    @property
    def importance_methods(self) -> list[str]:
        """Methods whose result ranks single features (their importance)."""
        return [name for name, r in self._results.items() if isinstance(r, FeatureImportance)]

    def _scores(self, method: str, output) -> pd.Series:
        result = self[method]
        column = importance_column(result, output, self.output_names)
        values = result.importances_mean[:, column]
        return pd.Series(np.abs(values) if method in _SIGNED else values,
                         index=list(result.feature_names), name=method)

    def importances(self, output: int | str | None = None) -> pd.DataFrame:
        """Feature x method table of importances for one output (Olden's signed values as
        magnitudes), features in input order; a method of one column (a loss over all of a
        classifier's classes) gives it for every output."""
        frame = pd.concat([self._scores(m, output) for m in self.importance_methods], axis=1)
        return frame.reindex(index=[f for f in self.feature_names if f in frame.index])

    def agreement(self, output: int | str | None = None) -> pd.DataFrame:
        """Kendall's tau-b between the importance rankings of every pair of methods.

        Each pair is compared on the features both scored; 1 means the same order, -1 the
        reverse, NaN a constant ranking. Interaction statistics are not rankings of
        importance and are left out.

        Returns
        -------
        DataFrame of shape (m, m)
            Symmetric, 1 on the diagonal; rows and columns are the importance methods.
        """
        table = self.importances(output)
        names = list(table.columns)
        tau = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                both = table[[a, b]].dropna()
                tau.loc[a, b] = tau.loc[b, a] = kendall_tau_b(both[a], both[b])
        return tau

    def to_frame(self) -> pd.DataFrame:
        """Every result in one tidy table.

        Columns ``method``, ``statistic`` (``"importance"``, ``"pairwise"``, or the
        H-statistic's ``"overall"``, ``"pairwise"``, ``"three_way"``, ``"total"``),
        ``feature`` (a feature set joined by ``":"``; empty for the total H), ``output``,
        ``value``, and ``std``, ``q025``, ``q975`` where the method has repeats or
        replicates (else NaN). Each method's rows are strongest first.
        """
        frames = []
        for method, result in self._results.items():
            if isinstance(result, FeatureImportance):
                frame = result.to_frame().rename(columns={"importance": "value"})
                frame.insert(0, "statistic", "importance")
            elif isinstance(result, FeatureInteraction):
                frame = result.to_frame().rename(columns={"interaction": "value"})
                parts = [c for c in frame.columns if c.startswith("feature_")]
                frame["feature"] = frame[parts].astype(str).agg(":".join, axis=1)
                frame = frame.drop(columns=parts)
                frame.insert(0, "statistic", "pairwise")
            else:  # HStatistic
                frame = result.to_frame("all").rename(
                    columns={"features": "feature", "interaction": "value"})
            frame.insert(0, "method", method)
            frames.append(frame)
        if not frames:
            return pd.DataFrame(columns=_FRAME_COLUMNS)
        return pd.concat(frames, ignore_index=True).reindex(columns=_FRAME_COLUMNS)

    def plot(self, methods=None, output: int | str | None = None, top: int | None = None):
        """The importance methods side by side, one panel each, features in one shared order
        (the first method's ranking; :func:`jaximp.plot_importances`); returns the Figure."""
        names = self.importance_methods if methods is None else list(methods)
        unknown = [m for m in names if m not in self.importance_methods]
        if unknown or not names:
            raise ValueError(f"methods must name importance results among "
                             f"{self.importance_methods}; got {names!r}.")
        return plot_importances({name: self[name] for name in names}, output=output, top=top)


def _check_methods(methods) -> list[str] | None:
    if methods is None:
        return None
    listed = [methods] if isinstance(methods, str) else list(methods)
    unknown = [m for m in listed if m not in METHODS]
    if unknown or not listed:
        raise ValueError(f"methods must be a non-empty list of names from {METHODS}; got "
                         f"{methods!r}.")
    if len(set(listed)) != len(listed):
        raise ValueError(f"methods lists a method twice; got {listed}.")
    return listed


def _default_methods(n_features: int, has_y: bool, has_fit: bool, network: bool) -> list:
    """The methods run when none are named."""
    listed = ["pd_importance"] + (["pd_interaction", "h_statistic"] if n_features > 1 else [])
    listed += ["permutation", "sensitivity"] if has_y else []
    listed += ["loco"] if has_y and has_fit else []
    return listed + (list(_WEIGHT_METHODS) if network else [])


def _check_options(options, methods) -> dict[str, dict]:
    if options is None:
        return {}
    if not isinstance(options, Mapping) or not all(isinstance(v, Mapping)
                                                   for v in options.values()):
        raise TypeError("options must map a method name to its keyword arguments, e.g. "
                        f"{{'permutation': {{'n_repeats': 20}}}}; got {options!r:.80}.")
    checked = {}
    for method, kwargs in options.items():
        if method not in methods:
            raise ValueError(f"options names {method!r}, which is not among the methods run "
                             f"{methods}; add it to methods or drop its options.")
        if method in _PD_OPTIONS:
            allowed = set(_PD_OPTIONS[method])
        elif method in _WEIGHT_METHODS:
            allowed = set()
        else:
            allowed = set(inspect.signature(_FUNCTIONS[method]).parameters) - _RESERVED
        wrong = sorted(set(kwargs) - allowed)
        if wrong:
            raise ValueError(f"options[{method!r}] takes {sorted(allowed)}; got {wrong}.")
        checked[method] = dict(kwargs)
    return checked


def _describe(fit) -> str:
    """A fit function in words, without memory addresses: ``fit_mlp(hidden=(8,), ...)``."""
    if fit is None:
        return "none"
    if isinstance(fit, functools.partial):
        arguments = [repr(a) for a in fit.args] + [f"{k}={v!r}" for k, v in fit.keywords.items()]
        return f"{_describe(fit.func)}({', '.join(arguments)})"
    return getattr(fit, "__qualname__", type(fit).__name__)


def _readable_network(model, n_columns: int) -> bool:
    """Whether Garson's and Olden's methods can read the model's weights."""
    try:
        layers = extract_weights(model)
    except (TypeError, ValueError):
        return False
    return len(layers) >= 2 and layers[0][0].shape[0] == n_columns


def _data_summary(dataset) -> pd.DataFrame:
    rows = []
    for feat in dataset.features:
        values = dataset.X[:, list(feat.columns)]
        row = {"feature": feat.name, "kind": feat.kind, "columns": len(feat.columns)}
        if feat.is_categorical:
            row["levels"] = len(feat.levels) if feat.levels is not None else len(
                np.unique(values))
        else:  # of the values present
            column = values[:, 0][~np.isnan(values[:, 0])]
            if column.size:
                row.update(mean=column.mean(),
                           std=column.std(ddof=1) if column.size > 1 else 0.0,
                           min=column.min(), max=column.max())
        row["missing"] = int(np.isnan(values).any(axis=1).sum())
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame = frame.reindex(columns=["feature", "kind", "columns", "mean", "std", "min", "max",
                                   "levels", "missing"]).dropna(axis=1, how="all")
    return frame if frame["missing"].any() else frame.drop(columns="missing")


def _model_summary(model, predictor, network: bool) -> dict:
    named = model if inspect.isfunction(model) else type(model)
    summary = {"type": ("function " if named is model else "") +
               f"{named.__module__}.{named.__qualname__}",
               "outputs": ", ".join(predictor.output_names),
               "dtype": str(np.dtype(predictor.dtype)),
               "runs on": ("its framework, on JAX's device batches (DLPack)"
                           if predictor.device_fn is not None else
                           "host (NumPy / scikit-learn)" if predictor.host else "JAX")}
    if network:
        layers = extract_weights(model)
        sizes = [layers[0][0].shape[0], *(w.shape[1] for w, _ in layers)]
        summary["layer sizes"] = " -> ".join(map(str, sizes))
    return summary


def _progress_bar(steps: list[str], progress):
    """A tqdm bar over the steps (``tqdm.auto``: a widget in notebooks), or None."""
    from .engine import is_main_process

    show = progress if progress is not None else sys.stderr.isatty()
    if not (show and is_main_process()):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=len(steps), desc="jaximp explain", unit="method")


@validate_params(grid_resolution=Int(2), n_bootstrap=Replicates())
def explain(
    model,
    X,
    y=None,
    *,
    methods=None,
    features=None,
    fit=None,
    output=None,
    loss=None,
    grid_resolution: int = 21,
    n_bootstrap: int = 0,
    options=None,
    random_state=0,
    sample_weight=None,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> Explanation:
    """Explain a model with several methods in one call, sharing evaluations between them.

    The 1-D PDs of every feature and the 2-D PDs of every pair come from ONE engine call,
    from which PD importance, the PD interaction statistic and the PD plots are all read; the
    H-statistic is computed once and its overall, pairwise and total statistics (and their
    unnormalized numerators) are read-outs of that one computation. Other methods run once
    each on the same validated data and model.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        May hold missing values (NaN) when the model handles them (a scikit-learn model
        such as HistGradientBoosting or a Pipeline with an imputer, a boosting library's
        model); a JAX model is refused them. Each method treats them as its function does.
    y : array of shape (n,) or (n, o), optional
        Targets; needed by ``"permutation"``, ``"loco"`` and ``"sensitivity"``.
    methods : list of str, optional
        From ``"pd_importance"``, ``"pd_interaction"``, ``"h_statistic"``, ``"permutation"``,
        ``"loco"``, ``"sensitivity"``, ``"garson"``, ``"olden"``, ``"ale"`` (ALE importance),
        ``"shapley"`` (mean absolute Shapley value; exact up to 14 features, on ``X`` as
        explained rows and a background of 100 of them). Default: the three PD-based
        methods (interactions only with at least two features); with ``y`` also permutation
        and sensitivity importance; LOCO when ``fit`` is given; Garson and Olden when
        :func:`jaximp.extract_weights` reads the model's weights.
    features : list of str or int, optional
        Features to score (default all); the model still sees every column of ``X``.
    fit : callable, optional
        ``fit(X, y) -> model`` for LOCO's refits (e.g. a ``functools.partial`` of
        :func:`jaximp.fit_mlp`).
    output : int, str or list, optional
        Model outputs to keep (default all).
    loss : str or callable, optional
        Loss of permutation importance and LOCO (as their ``loss``; ``options`` may set
        another per method). Default: accuracy for a classifier, else the mean squared error.
    grid_resolution : int, default 21
        Grid points per feature, at most (evenly spaced from minimum to maximum, as R's pdp:
        ``min(n_unique, grid_resolution)``), shared by the PD plots, PD importance and the PD
        interaction statistic, whose cost grows with its square. ``pd_importance`` gives the
        same importances with ``grid_resolution=21`` for features of more distinct values.
    n_bootstrap : int, default 0
        Bootstrap replicates of the PD-based methods and of H: further weightings of the same
        evaluations (no extra model calls).
    options : dict, optional
        Keyword arguments per method, e.g. ``{"permutation": {"n_repeats": 20},
        "h_statistic": {"n_max": 200}, "pd_interaction": {"pairs": [("x1", "x2")]}}``.
        PD importance takes ``measure``; PD interaction ``measure``, ``pairs``,
        ``reference``; the other methods any argument of their own function except those set
        here.
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Seed of every method's randomness (the same seed for each).
    sample_weight, feature_names, categorical, groups, variables
        Data and model description; see :func:`jaximp.as_dataset` and
        :func:`jaximp.as_predictor`.
    memory_budget : int, optional
        Bytes the whole call may use beyond its result and the data (default
        :func:`jaximp.default_memory_budget`); a result that cannot fit is refused before any
        model evaluation.
    progress : bool, optional
        A progress bar over the methods (``tqdm.auto``; a widget in notebooks). Default: on
        in interactive terminals.

    Returns
    -------
    Explanation
        A mapping of method name to its result (:class:`FeatureImportance`,
        :class:`FeatureInteraction` or :class:`HStatistic`), with ``to_frame()``,
        ``agreement()`` (Kendall's tau-b between importance rankings), ``importances()`` and
        ``plot()``.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).uniform(size=(60, 3))
    >>> f = lambda X: X @ jnp.array([3.0, 1.0, 0.0])
    >>> ex = explain(f, X, f(X), methods=["pd_importance", "permutation"])
    >>> ex["pd_importance"].top(2), ex["permutation"].top(2)
    (['x0', 'x1'], ['x0', 'x1'])
    >>> float(ex.agreement().loc["pd_importance", "permutation"])
    1.0
    """
    listed = _check_methods(methods)
    grid_resolution, n_bootstrap = int(grid_resolution), int(n_bootstrap)
    key = as_key(random_state)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress, allow_missing=True,  # for models that handle them, as the methods
    )
    chosen = dataset.resolve(features)
    names = [f.name for f in chosen]
    network = _readable_network(model, dataset.n_columns)
    if listed is None:
        listed = _default_methods(len(chosen), y is not None, fit is not None, network)
    options = _check_options(options, listed)
    if loss is not None:  # the loss-based methods' loss, unless their options set one
        for method in ("permutation", "loco"):
            if method in listed:
                options.setdefault(method, {}).setdefault("loss", loss)
    for method in listed:
        if method in _NEEDS_Y and y is None:
            raise ValueError(f"method {method!r} needs the targets y; pass y=... or leave "
                             f"{method!r} out of methods.")
    if "loco" in listed and fit is None and options.get("loco", {}).get(
            "strategy", "refit") == "refit":
        raise ValueError("method 'loco' refits the model without each feature and needs "
                         "fit=... (e.g. functools.partial(jaximp.fit_mlp, ...)); or pass "
                         "options={'loco': {'strategy': 'mean'}} to replace instead.")
    for method in ("pd_importance", "pd_interaction"):
        MEASURE_RULE.check(f"options[{method!r}]['measure']",
                           options.get(method, {}).get("measure", "auto"))
    pd_methods = [m for m in listed if m in _PD_OPTIONS]
    pair_list = []
    if "pd_interaction" in listed:
        opts = options.get("pd_interaction", {})
        pair_list = resolve_pairs(dataset, chosen, opts.get("pairs", "all"),
                                  opts.get("reference"))

    steps = (["partial_dependence"] if pd_methods else []) + [
        m for m in listed if m not in _PD_OPTIONS]
    bar = _progress_bar(steps, progress)
    engine = dict(memory_budget=memory_budget, progress=False if bar is not None else progress)
    shared = dict(features=names, output=output, random_state=random_state, **engine)
    results, timings, pds = {}, {}, None
    try:
        for step in steps:
            if bar is not None:
                bar.set_postfix_str(step)
            start = time.perf_counter()
            if step == "partial_dependence":
                pds = _pd_methods(results, dataset, predictor, chosen, pair_list, listed,
                                  options, grid_resolution, n_bootstrap, key, output, engine)
            elif step == "ale":
                results[step] = ale_importance(predictor, dataset, n_bootstrap=n_bootstrap,
                                               **shared, **options.get(step, {}))
            elif step == "shapley":
                results[step] = _shapley_importance(predictor, dataset, names, output, engine,
                                                    random_state, options.get(step, {}))
            elif step == "h_statistic":
                results[step] = h_statistic(predictor, dataset, n_bootstrap=n_bootstrap,
                                            **shared, **options.get(step, {}))
            elif step in _WEIGHT_METHODS:
                results[step] = _weight_method(step, model, dataset, predictor, names, output)
            elif step == "loco":
                refit = options.get(step, {}).get("strategy", "refit") == "refit"
                results[step] = loco_importance(
                    model, X, y, fit=fit if refit else None, sample_weight=sample_weight,
                    feature_names=feature_names, categorical=categorical, groups=groups,
                    variables=variables, **shared, **options.get(step, {}))
            else:
                results[step] = _FUNCTIONS[step](predictor, dataset, y, **shared,
                                                 **options.get(step, {}))
            timings[step] = time.perf_counter() - start
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    settings = {
        "methods": ", ".join(results),
        "features": "all" if features is None else ", ".join(names),
        "random_state": random_state if isinstance(random_state, (int, np.integer))
        else "a JAX key",
        "grid_resolution": grid_resolution,
        "n_bootstrap": n_bootstrap,
        "options": repr(options) if options else "none",
        # the loss each loss-based method used, given or its default (accuracy, MSE)
        "loss": ", ".join(f"{m}: {results[m].info['loss']}" for m in ("permutation", "loco")
                          if m in results) or "none",
        "fit": _describe(fit),
        "memory_budget": "default" if memory_budget is None else memory_budget,
    }
    return Explanation(
        {m: results[m] for m in listed}, partial_dependence=pds, feature_names=names,
        output_names=tuple(predictor.output_names[j]
                           for j in select_outputs(predictor.output_names, output)),
        n_rows=dataset.n_rows, settings=settings, timings=timings,
        data_summary=_data_summary(dataset),
        model_summary=_model_summary(model, predictor, network),
    )


def _pd_methods(results, dataset, predictor, chosen, pair_list, listed, options,
                grid_resolution, n_bootstrap, key, output, engine) -> PartialDependences:
    """PD importance and PD interaction from one engine call over every 1-D and 2-D PD."""
    weights, counts = bootstrap_weights(dataset, n_bootstrap, key)
    evaluated = planned_pd(
        dataset, predictor, [[f] for f in chosen] + [list(pair) for pair in pair_list],
        kind="average", grid="pdp", grid_resolution=None, pdp_points=grid_resolution,
        percentiles=(0.0, 1.0), output=output, weightings=weights, **engine,
    )()
    replicated = None
    if isinstance(evaluated, tuple):
        evaluated, replicated = evaluated
    p = len(chosen)
    common = dict(average="mean", trim=0.1, n_bootstrap=n_bootstrap)
    if "pd_importance" in listed:
        results["pd_importance"] = importance_from_pds(
            chosen, evaluated[:p], None if replicated is None else replicated[:p], weights,
            counts, ice=False, measure=options.get("pd_importance", {}).get("measure", "auto"),
            **common)
    if "pd_interaction" in listed:
        results["pd_interaction"] = interaction_from_pds(
            pair_list, evaluated[p:], None if replicated is None else replicated[p:], weights,
            counts, measure=options.get("pd_interaction", {}).get("measure", "auto"),
            **common)
    return PartialDependences({f.name: r for f, r in zip(chosen, evaluated[:p])})


def _shapley_importance(predictor, dataset, names, output, engine, random_state, options):
    """Mean absolute Shapley value of every row of the data, for the outputs asked for."""
    values = shapley_values(predictor, dataset, features=names, random_state=random_state,
                            **engine, **options)
    result = values.importance()
    keep = select_outputs(result.output_names, output)
    return FeatureImportance(
        method=result.method, feature_names=result.feature_names,
        output_names=tuple(result.output_names[j] for j in keep),
        importances_mean=result.importances_mean[:, keep], info=result.info)


def _weight_method(method, model, dataset, predictor, names, output) -> FeatureImportance:
    """Garson or Olden on the network's weights, for the features and outputs asked for."""
    columns = dataset.column_names
    groups = {f.name: list(f.columns) for f in dataset.features if len(f.columns) > 1}
    outputs = predictor.output_names
    result = _WEIGHT_METHODS[method](model, feature_names=columns, output_names=outputs,
                                     groups=groups or None)
    rows = [result.feature_names.index(name) for name in names]
    keep = select_outputs(outputs, output)
    return FeatureImportance(
        method=result.method, feature_names=tuple(names),
        output_names=tuple(outputs[j] for j in keep),
        importances_mean=result.importances_mean[np.ix_(rows, keep)], info=result.info)
