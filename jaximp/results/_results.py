"""Result objects shared by the importance methods."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..data import (
    Deferred,
    InputLayout,
    ReadsDeferred,
    check_choice,
    output_index,
    replicate_quantiles,
    replicate_spread,
)
from ._details import Details
from ._plots import plot_importance, plot_input_map, plot_interaction

__all__ = ["FeatureImportance", "FeatureInteraction", "check_k", "input_image",
           "interval_probabilities", "mean_and_std", "pair_values_frame", "replicate_std",
           "with_input_layout"]


@dataclasses.dataclass(frozen=True, eq=False)
class FeatureImportance(ReadsDeferred):
    """Importance of each feature (or feature group), for each model output.

    Every importance method returns this object. Field names follow
    :func:`sklearn.inspection.permutation_importance`; unlike scikit-learn, arrays always keep
    an output axis ``o`` (size 1 for a single-output model).

    Attributes
    ----------
    method : str
        Name of the method that produced the result, e.g. ``"permutation"``.
    feature_names : tuple of str, length p
        Names of the features or feature groups, in input order.
    output_names : tuple of str, length o
        Names of the model outputs.
    importances_mean : ndarray of shape (p, o)
        Point estimate of each feature's importance.
    importances_std : ndarray of shape (p, o) or None
        Standard deviation (``ddof=0``, as scikit-learn) over repeats or bootstrap replicates;
        ``None`` for deterministic methods. :meth:`std` gives other ``ddof``.
    importances : ndarray of shape (p, o, r) or None
        Raw values for each repeat or replicate, when the method has any.
    info : Details or dict
        Method-specific settings and extra arrays (loss name, baseline score, ...): a typed
        record (``info.baseline``) that also reads as a mapping (``info["baseline"]``).
    """

    method: str
    feature_names: tuple[str, ...]
    output_names: tuple[str, ...]
    importances_mean: np.ndarray
    importances_std: np.ndarray | None = None
    importances: np.ndarray | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        p, o = len(self.feature_names), len(self.output_names)

        def checked(mean):
            mean = np.asarray(mean, dtype=np.float64)
            if mean.shape != (p, o):
                raise ValueError(
                    f"importances_mean must have shape (p, o) = ({p}, {o}); got {mean.shape}."
                )
            return mean

        def as_float64(values):
            return None if values is None else np.asarray(values, np.float64)

        # a field still computed on a device (a Deferred) is converted when it is read
        fields = object.__getattribute__
        object.__setattr__(self, "importances_mean",
                           Deferred.apply(checked, fields(self, "importances_mean")))
        for name in ("importances_std", "importances"):
            object.__setattr__(self, name, Deferred.apply(as_float64, fields(self, name)))

    def __repr__(self) -> str:
        return _short_repr(self, f"{len(self.feature_names)} features",
                           self.importances_mean, self.feature_names, self.importances)

    def quantiles(self, q: Sequence[float] = (0.025, 0.975)) -> np.ndarray:
        """Quantiles over repeats, shape (len(q), p, o); needs raw ``importances``."""
        if self.importances is None:
            raise ValueError(f"method {self.method!r} has no repeats to take quantiles over.")
        return replicate_quantiles(self.importances, q)

    def intervals(self, confidence: float = 0.95) -> np.ndarray:
        """Percentile intervals over repeats or replicates, shape (2, p, o)."""
        return self.quantiles(interval_probabilities(confidence))

    def std(self, ddof: int = 0) -> np.ndarray:
        """Standard deviation over repeats or replicates, shape (p, o); ``ddof=1`` is R's
        ``sd()`` (vip's ``StDev``), ``ddof=0`` equals ``importances_std``."""
        return replicate_std(self.importances, ddof, self.method)

    def to_frame(self, sort: bool = True) -> pd.DataFrame:
        """Tidy table: one row per (feature, output), sorted by decreasing importance.

        Columns: ``feature``, ``output``, ``importance``, and ``std``, ``q025``, ``q975``
        when the method has repeats.
        """
        p, o = self.importances_mean.shape
        frame = pd.DataFrame(
            {
                "feature": np.repeat(np.asarray(self.feature_names, dtype=object), o),
                "output": np.tile(np.asarray(self.output_names, dtype=object), p),
                "importance": self.importances_mean.reshape(-1),
            }
        )
        if self.importances_std is not None:
            frame["std"] = self.importances_std.reshape(-1)
        if self.importances is not None and self.importances.shape[-1] > 1:
            low, high = self.quantiles((0.025, 0.975))
            frame["q025"] = low.reshape(-1)
            frame["q975"] = high.reshape(-1)
        if sort:
            frame = frame.sort_values(
                ["output", "importance"], ascending=[True, False], kind="stable"
            ).reset_index(drop=True)
        return frame

    def top(self, k: int, output: int | str | None = None) -> list[str]:
        """Names of the ``k`` most important features for one output."""
        check_k(k)
        column = output_index(self.output_names, output)
        order = np.argsort(-self.importances_mean[:, column], kind="stable")
        return [self.feature_names[i] for i in order[:k]]

    def plot(self, output: int | str | None = None, ax=None, top: int | None = None,
             style: str = "bar", errors: str = "auto", kind: str = "bar",
             sequence: bool = False, channel_axis: int = -1):
        """Horizontal bars (or dots) of one output's importances, strongest at the top; or,
        for examples with more axes, the importances as an image.

        Parameters
        ----------
        output : int or str, optional
            One output, by index or name. Default: the positive class (the second output)
            for a binary classifier's probabilities, else the first output; ``output=0``
            gives class 0 (R pdp's ``which.class = 1`` for a random forest).
        ax : matplotlib Axes, optional
            Default: a new Figure sized to the number of features.
        top : int, optional
            Features to show, strongest first. Default: all up to 30 features, the 30
            strongest past that (the title says so).
        style : {"bar", "dot"}, default "bar"
        errors : {"auto", "std", "interval", "none"}, default "auto"
            Error bars: ``importances_std`` (``"std"``), the 95% percentile interval over
            ``importances`` (``"interval"``), or the first of these the result has.
        kind : {"bar", "image"}, default "bar"
            ``"image"``: :meth:`image` drawn on the example's positions (results of X of
            shape ``(n, h, w[, c])`` or ``(n, t, c)``): an ``(h, w, c)`` image shows the mean
            over its channel axis (``channel_axis``, default last), ``sequence=True`` draws a
            ``(t, c)`` example as a heat map over time. Signed values use a diverging colour
            map centred on zero.

        Returns
        -------
        matplotlib.axes.Axes

        Notes
        -----
        Signed results (e.g. Olden's) are ranked by magnitude and coloured by sign (negative
        red), with a line at zero. :func:`jaximp.plot_importances` compares several methods.
        """
        check_choice(kind, "kind", ("bar", "image"))
        if kind == "image":
            name = self.output_names[output_index(self.output_names, output)]
            return plot_input_map(self.image(output), ax, label=f"{self.method} importance "
                                  f"({name})", sequence=sequence,
                                  channel_axis=channel_axis)
        return plot_importance(self, output=output, ax=ax, top=top, style=style, errors=errors)

    def image(self, output: int | str | None = None) -> np.ndarray:
        """One output's importances on the positions of an example (X of shape
        ``(n, h, w[, c])`` or ``(n, t, c)``): shape ``input_shape``, a feature's (patch's,
        channel's, time step's) importance on each of its positions, NaN where no feature
        was computed. Raises ValueError for a table's result."""
        values = self.importances_mean[:, output_index(self.output_names, output)]
        return input_image(self.info, values, f"{self.method} importance")


@dataclasses.dataclass(frozen=True, eq=False)
class FeatureInteraction:
    """Interaction strength of feature pairs (or triples), for each model output.

    Returned by :func:`pd_interaction` and, inside :class:`HStatistic`, by
    :func:`h_statistic`. Arrays keep an output axis ``o`` (size 1 for a single-output model)
    and list the feature sets in the order they were requested; :meth:`to_frame`,
    :meth:`sorted` and :meth:`top` order them by strength.

    Attributes
    ----------
    method : str
        The statistic: ``"pd_interaction"``, ``"h_pairwise"``, ``"h_three_way"``,
        ``"shapley_interaction"``, ``"sobol_second"``...
    feature_sets : tuple of tuples of str, length s
        The pairs (or triples) of feature names.
    output_names : tuple of str, length o
    values : ndarray of shape (s, o)
        Point estimate on all rows.
    values_std : ndarray of shape (s, o) or None
        Bootstrap standard error: the standard deviation over the replicates, ``ddof=0`` as
        every ``*_std`` field; :meth:`std` gives other ``ddof``.
    replicates : ndarray of shape (s, o, r) or None
        The statistic on each bootstrap replicate.
    info : dict
        Settings and extra arrays; arrays with one row per feature set (e.g. the H-statistic's
        ``"numerator"`` and ``"denominator"``, shape (s, o)) follow :meth:`sorted`.
    """

    method: str
    feature_sets: tuple[tuple[str, ...], ...]
    output_names: tuple[str, ...]
    values: np.ndarray
    values_std: np.ndarray | None = None
    replicates: np.ndarray | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        s, o = len(self.feature_sets), len(self.output_names)
        values = np.asarray(self.values, dtype=np.float64)
        if values.shape != (s, o):
            raise ValueError(f"values must have shape (s, o) = ({s}, {o}); got {values.shape}.")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "feature_sets", tuple(tuple(fs) for fs in self.feature_sets))
        for name in ("values_std", "replicates"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, np.asarray(getattr(self, name), np.float64))

    def __len__(self) -> int:
        return len(self.feature_sets)

    def __repr__(self) -> str:
        names = tuple(" x ".join(fs) for fs in self.feature_sets)
        kind = "triples" if self.feature_sets and len(self.feature_sets[0]) == 3 else "pairs"
        return _short_repr(self, f"{len(self)} {kind}", self.values, names, self.replicates)

    def quantiles(self, q: Sequence[float] = (0.025, 0.975)) -> np.ndarray:
        """Quantiles over bootstrap replicates, shape (len(q), s, o)."""
        if self.replicates is None:
            raise ValueError(
                f"method {self.method!r} has no bootstrap replicates; rerun with n_bootstrap >= 2."
            )
        return replicate_quantiles(self.replicates, q)

    def intervals(self, confidence: float = 0.95) -> np.ndarray:
        """Percentile bootstrap intervals, shape (2, s, o): lower and upper bounds.

        The H-statistic is non-negative and biased upwards in small samples, so an interval whose
        lower end is near 0 is compatible with no interaction.
        """
        return self.quantiles(interval_probabilities(confidence))

    def std(self, ddof: int = 0) -> np.ndarray:
        """Standard deviation over the bootstrap replicates, shape (s, o); ``ddof=0`` equals
        ``values_std``."""
        return replicate_std(self.replicates, ddof, self.method)

    def to_frame(self, sort: bool = True) -> pd.DataFrame:
        """Tidy table: one row per (feature set, output), strongest first.

        Columns: ``feature_1``, ``feature_2`` (``feature_3`` for triples), ``output``,
        ``interaction``, and ``std``, ``q025``, ``q975`` (95% percentile interval) with bootstrap
        replicates.
        """
        s, o = self.values.shape
        k = len(self.feature_sets[0]) if s else 2
        columns: dict[str, Any] = {}
        for j in range(k):
            names = np.asarray([fs[j] for fs in self.feature_sets], dtype=object)
            columns[f"feature_{j + 1}"] = np.repeat(names, o)
        columns["output"] = np.tile(np.asarray(self.output_names, dtype=object), s)
        columns["interaction"] = self.values.reshape(-1)
        frame = pd.DataFrame(columns)
        if self.values_std is not None:
            frame["std"] = self.values_std.reshape(-1)
        if self.replicates is not None and self.replicates.shape[-1] > 1:
            low, high = self.intervals(0.95)
            frame["q025"] = low.reshape(-1)
            frame["q975"] = high.reshape(-1)
        if sort:
            frame = frame.sort_values(
                ["output", "interaction"], ascending=[True, False], kind="stable"
            ).reset_index(drop=True)
        return frame

    def sorted(self, output: int | str | None = None) -> "FeatureInteraction":
        """The same result with feature sets in decreasing order of strength for one output."""
        column = output_index(self.output_names, output)
        return self._take(np.argsort(-self.values[:, column], kind="stable"))

    def top(self, k: int, output: int | str | None = None) -> list[tuple[str, ...]]:
        """The ``k`` strongest feature sets for one output."""
        check_k(k)
        return list(self.sorted(output).feature_sets[:k])

    def matrix(self, output: int | str | None = None) -> pd.DataFrame:
        """Pairwise values as a symmetric feature x feature table (NaN where not computed)."""
        if self.feature_sets and len(self.feature_sets[0]) != 2:
            raise ValueError("matrix() needs pairwise statistics; this result holds triples.")
        column = output_index(self.output_names, output)
        names = list(dict.fromkeys(name for fs in self.feature_sets for name in fs))
        table = pd.DataFrame(np.nan, index=names, columns=names)
        for (a, b), value in zip(self.feature_sets, self.values[:, column]):
            table.loc[a, b] = table.loc[b, a] = value
        return table

    def plot(self, output: int | str | None = None, top: int | None = None, ax=None,
             kind: str = "bar", errors: str = "auto"):
        """Bars of the strongest feature sets, or a feature x feature heat map of pairs.

        Parameters
        ----------
        output : int or str, optional
            One output, by index or name. Default: the positive class (the second output)
            for a binary classifier's probabilities, else the first output; ``output=0``
            gives class 0 (R pdp's ``which.class = 1`` for a random forest).
        top : int, optional
            ``kind="bar"``: feature sets to show, strongest first; ``kind="heatmap"``: features
            to show, those with the strongest pairs. Default: all up to 30, the strongest 30
            past that (the title says so).
        ax : matplotlib Axes, optional
        kind : {"bar", "heatmap"}, default "bar"
            The heat map (pairs only) leaves pairs that were not computed blank.
        errors : {"auto", "std", "interval", "none"}, default "auto"
            Whiskers on the bars: the 95% bootstrap percentile interval (``"interval"``) or
            ``values_std`` (``"std"``); ``"auto"`` takes the first the result has.

        Returns the Axes.
        """
        return plot_interaction(self, output=output, ax=ax, top=top, kind=kind, errors=errors)

    def _take(self, index: np.ndarray) -> "FeatureInteraction":
        s = len(self.feature_sets)
        info = {}
        for key, value in self.info.items():
            per_set = isinstance(value, np.ndarray) and value.shape[:1] == (s,)
            info[key] = value[index] if per_set else value
        if dataclasses.is_dataclass(self.info):  # typed details keep their type
            info = dataclasses.replace(self.info, **info)
        return FeatureInteraction(
            method=self.method,
            feature_sets=tuple(self.feature_sets[i] for i in index),
            output_names=self.output_names,
            values=self.values[index],
            values_std=None if self.values_std is None else self.values_std[index],
            replicates=None if self.replicates is None else self.replicates[index],
            info=info,
        )


def with_input_layout(info, layout: InputLayout | None):
    """``info`` (a dict or typed :class:`Details`) that also holds ``info["input_layout"]``,
    the feature geometry of examples with more than one axis; ``info`` itself for a table
    (``layout`` None)."""
    if layout is None:
        return info
    if isinstance(info, Details):
        info = dataclasses.replace(info)  # a copy: details are frozen and may be shared
        object.__setattr__(info, "input_layout", layout)
        return info
    return {**(info or {}), "input_layout": layout}


def input_image(info, values, what: str) -> np.ndarray:
    """Per-feature ``values`` (p, ...) painted on the example's positions through
    ``info["input_layout"]``; a clear ValueError for a table's result."""
    layout = info.get("input_layout") if info is not None else None
    if layout is None:
        raise ValueError(f"image() shows {what} on the positions of examples with more than "
                         "two axes (X of shape (n, h, w[, c]) or (n, t, c)); this result keeps "
                         "no such positions (X was a table, or the method keeps none). Use "
                         "plot() for bars.")
    return layout.paint(values)


def mean_and_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (ddof 0) over the last axis: the same operations as
    ``values.mean(-1)`` and ``values.std(-1)`` (so the same numbers), without NumPy's
    Python-level wrappers, which cost more than the arithmetic on a few repeats."""
    count = values.shape[-1]
    mean = np.add.reduce(values, axis=-1) / count
    spread = values - mean[..., None]
    return mean, np.sqrt(np.add.reduce(spread * spread, axis=-1) / count)


def replicate_std(replicates, ddof, method: str) -> np.ndarray:
    """Standard deviation over the last axis of ``replicates`` (repeats or bootstrap
    replicates), with ``ddof`` checked; ``method`` names the result in the messages."""
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise ValueError(f"ddof must be an int >= 0; got {ddof!r}.")
    if replicates is None or replicates.shape[-1] <= ddof:
        have = 0 if replicates is None else replicates.shape[-1]
        raise ValueError(
            f"method {method!r} has {have} repeats or replicates; std(ddof={ddof}) needs more "
            "than ddof of them."
        )
    return replicate_spread(replicates, ddof)


def interval_probabilities(confidence) -> tuple[float, float]:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)) \
            or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number in (0, 1), e.g. 0.95; got {confidence!r}.")
    alpha = (1 - confidence) / 2
    return alpha, 1 - alpha


def _short_repr(result, size: str, values, names, replicates) -> str:
    """``Type(method, size, outputs; strongest: a=1.2, b=0.3, ...)`` for the default output
    (the positive class of a binary classifier, else the first)."""
    j = output_index(result.output_names, None)
    order = np.argsort(-values[:, j], kind="stable")[:3] if len(values) else []
    best = ", ".join(f"{names[i]}={values[i, j]:.4g}" for i in order)
    more = ", ..." if len(values) > 3 else ""
    spread = f", {replicates.shape[-1]} replicates" if replicates is not None else ""
    return (f"{type(result).__name__}({result.method!r}, {size}, outputs "
            f"{list(result.output_names)}{spread}; strongest for {result.output_names[j]!r}: "
            f"{best}{more})")


def check_k(k) -> None:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive int (how many to list); got {k!r}.")


def pair_values_frame(values: np.ndarray, feature_names, output_names,
                      column: str = "value") -> pd.DataFrame:
    """Tidy table of per-row pair values (n, p, p, o): ``row``, ``feature_1``, ``feature_2``,
    ``output`` and ``column`` (Shapley interaction values, integrated Hessians)."""
    n, p, _, o = values.shape
    names = np.asarray(feature_names, object)
    return pd.DataFrame({
        "row": np.repeat(np.arange(n), p * p * o),
        "feature_1": np.tile(np.repeat(names, p * o), n),
        "feature_2": np.tile(np.repeat(names, o), n * p),
        "output": np.tile(np.asarray(output_names, object), n * p * p),
        column: values.reshape(-1),
    })
