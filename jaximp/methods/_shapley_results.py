"""The results of Shapley values and Shapley interaction values: per-row values with their
read-outs (global importance, frames, shap's Explanation) and plots (summary, dependence,
image maps, interaction heat maps)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from ..data import (
    ReadsDeferred,
    as_key,
    check_choice,
    mean_abs_over_rows,
    output_index,
    select_outputs,
)
from ..results import (
    FeatureImportance,
    FeatureInteraction,
    ShapleyImportanceDetails,
    input_image,
    new_figure,
    pair_values_frame,
    plot_input_map,
    plot_waterfall,
    with_input_layout,
)
from ._attributions import checked_row, feature_labels

__all__ = ["ShapleyInteractions", "ShapleyValues"]


@dataclasses.dataclass(frozen=True, eq=False)
class ShapleyValues(ReadsDeferred):
    """Shapley values of explained rows, per feature (or group) and model output.

    Attributes
    ----------
    values : ndarray of shape (n, p, o)
        Value of feature ``j`` at explained row ``i`` for output ``k``; over ``j`` they sum to
        the coalition value of all features minus ``base_values`` (``f(x_i) - base`` when
        every feature is a player).
    base_values : ndarray of shape (o,)
        The weighted mean prediction over the background rows.
    data : ndarray of shape (n, p)
        The explained rows' feature values as floats: the column of a single-column feature
        (the code of a categorical one), the level index of a one-hot group, NaN for any other
        group.
    feature_names : tuple of str, length p
    output_names : tuple of str, length o
    standard_errors : ndarray of shape (n, p, o) or None
        Standard errors of the sampling estimator (None for exact values).
    method : {"exact", "permutation", "tree_path_dependent", "tree_interventional"}
        The estimator: :func:`jaximp.shapley_values` (exact or sampled) or
        :func:`jaximp.tree_shap` (path-dependent, or interventional over a background).
    info : ShapleyDetails
        ``n_background``, ``background_rows`` (rows of X used as background, or None),
        ``n_permutations`` (sampling), ``sample_weight`` (weights of the explained rows,
        or None).
    """

    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    feature_names: tuple[str, ...]
    output_names: tuple[str, ...]
    standard_errors: np.ndarray | None = None
    method: str = "exact"
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        n, p, o = self.values.shape
        top = self.importance().top(min(3, p))
        shown = output_index(self.output_names, None)  # the positive class's, or the first
        return (f"ShapleyValues({self.method!r}, {n} rows x {p} features, outputs "
                f"{list(self.output_names)}; for {self.output_names[shown]!r}: base "
                f"{self.base_values[shown]:.4g}, largest mean |value| {', '.join(top)})")

    def importance(self, n_bootstrap: int = 100, random_state=0) -> FeatureImportance:
        """Mean absolute Shapley value over the explained rows (weighted by their sample
        weights, if any), per feature and output: ``method="shapley"``, with ``n_bootstrap``
        row-bootstrap replicates for ``intervals()`` (0: none; no model evaluations)."""
        mean, std, replicates = mean_abs_over_rows(
            self.values, self.info.get("sample_weight"), n_bootstrap, as_key(random_state))
        return FeatureImportance(
            method="shapley", feature_names=self.feature_names, output_names=self.output_names,
            importances_mean=mean, importances_std=std, importances=replicates,
            info=with_input_layout(ShapleyImportanceDetails(
                estimator=self.method, base_values=self.base_values,
                n_rows=self.values.shape[0]), self.info.get("input_layout")))

    def image(self, row: int = 0, output: int | str | None = None) -> np.ndarray:
        """Row ``row``'s Shapley values on the positions of its example (X of shape
        ``(n, h, w[, c])`` or ``(n, t, c)``): shape ``input_shape``, a feature's (patch's,
        channel's, time step's) value on each of its positions, NaN where no feature was a
        player. Raises ValueError for the values of a table."""
        row = checked_row(row, self.values.shape[0])
        column = output_index(self.output_names, output)
        return input_image(self.info, self.values[row, :, column], "Shapley values")

    def to_frame(self) -> pd.DataFrame:
        """Tidy table, one line per (row, feature, output): columns ``row``, ``feature``,
        ``output``, ``value``, ``feature_value``, for categorical features ``feature_level``
        (the level a code in ``feature_value`` stands for) and, for sampled values, ``std``."""
        n, p, o = self.values.shape
        frame = pd.DataFrame({
            "row": np.repeat(np.arange(n), p * o),
            "feature": np.tile(np.repeat(np.asarray(self.feature_names, object), o), n),
            "output": np.tile(np.asarray(self.output_names, object), n * p),
            "value": self.values.reshape(-1),
            "feature_value": np.repeat(self.data.reshape(-1), o),
        })
        levels = self.info.get("levels")
        if levels:
            named = np.full((n, p), None, object)
            for j, name in enumerate(self.feature_names):
                if name in levels:
                    codes = self.data[:, j]
                    named[:, j] = [None if np.isnan(code) else levels[name][int(code)]
                                   for code in codes]
            frame["feature_level"] = np.repeat(named.reshape(-1), o)
        if self.standard_errors is not None:
            frame["std"] = self.standard_errors.reshape(-1)
        return frame

    def to_shap(self, output=None):
        """The values as a ``shap.Explanation`` (needs the ``shap`` package), for shap's plots.

        Parameters
        ----------
        output : int or str, optional
            One output: values (n, p) and base values (n,), as shap gives for a single-output
            model. Default: the only output, or all of them as (n, p, o) and (n, o).
        """
        return _explanation(self, output)

    def plot(self, kind: str = "summary", feature=None, output: int | str | None = None, ax=None,
             row: int = 0, sequence: bool = False, channel_axis: int = -1):
        """``kind="summary"``: one row of points per feature (most important on top), a point
        per explained row at its Shapley value, coloured by the feature's value (rank scale),
        vertically jittered where points crowd. ``kind="dependence"``: Shapley value of
        ``feature`` against its value. ``kind="image"``: :meth:`image` of ``row`` with a
        diverging colour map centred on zero; an ``(h, w, c)`` example shows the mean over its
        channel axis (``channel_axis``), ``sequence=True`` draws ``(t, c)`` as a heat map over
        time (see :meth:`FeatureImportance.plot`). ``kind="waterfall"``: row ``row``'s values
        as steps from ``base_values`` to its prediction, largest ``|value|`` first (shap's
        waterfall). Returns the Axes."""

        check_choice(kind, "kind", ("summary", "dependence", "image", "waterfall"))
        column = output_index(self.output_names, output)
        if kind == "waterfall":
            values = self.values[checked_row(row, self.values.shape[0]), :, column]
            order = np.argsort(-np.abs(values), kind="stable")
            return plot_waterfall(feature_labels(self.feature_names, self.data[row], order,
                                                 self.info.get("levels")),
                                  values[order], float(self.base_values[column]), ax,
                                  title=f"Shapley values, row {row} "
                                        f"({self.output_names[column]})",
                                  start_label="the mean background prediction")
        if kind == "image":
            return plot_input_map(self.image(row, column), ax, sequence=sequence,
                                  channel_axis=channel_axis, label=f"Shapley value, row "
                                  f"{row} ({self.output_names[column]})")
        if ax is None:
            height = 0.4 * len(self.feature_names) + 1 if kind == "summary" else 3.5
            _, ax = new_figure(6, height)
        if kind == "dependence":
            j = self._feature_index(feature)
            ax.scatter(self.data[:, j], self.values[:, j, column], s=8, alpha=0.7)
            ax.axhline(0.0, color="grey", lw=0.8)
            levels = (self.info.get("levels") or {}).get(self.feature_names[j])
            if levels is not None:  # a categorical feature: its codes on its levels' ticks
                ax.set_xticks(range(len(levels)), [str(level) for level in levels])
            ax.set_xlabel(self.feature_names[j])
            ax.set_ylabel(f"Shapley value ({self.output_names[column]})")
            return ax
        order = np.argsort(self.importance().importances_mean[:, column], kind="stable")
        for position, j in enumerate(order):
            values = self.values[:, j, column]
            ax.scatter(values, position + _jitter(values), c=_ranks(self.data[:, j]),
                       cmap="coolwarm", vmin=0, vmax=1, s=6, alpha=0.8)
        ax.axvline(0.0, color="grey", lw=0.8)
        ax.set_yticks(range(len(order)), [self.feature_names[j] for j in order])
        ax.set_xlabel(f"Shapley value ({self.output_names[column]})\ncolour: feature value "
                      "(low blue, high red)")
        return ax

    def _feature_index(self, feature) -> int:
        if feature is None:
            raise ValueError("a dependence plot needs feature= (a name or an index); got None.")
        if isinstance(feature, str):
            if feature not in self.feature_names:
                raise ValueError(f"feature must be one of {list(self.feature_names)}; got "
                                 f"{feature!r}.")
            return self.feature_names.index(feature)
        if isinstance(feature, (int, np.integer)) and not isinstance(feature, bool) \
                and -len(self.feature_names) <= feature < len(self.feature_names):
            return int(feature) % len(self.feature_names)
        raise ValueError(f"feature must be a feature name or an index below "
                         f"{len(self.feature_names)}; got {feature!r}.")


@dataclasses.dataclass(frozen=True, eq=False)
class ShapleyInteractions(ReadsDeferred):
    """Shapley interaction values, in the convention of shap's ``TreeExplainer``.

    Attributes
    ----------
    values : ndarray of shape (n, p, p, o)
        Off the diagonal, ``values[i, j, k] = values[i, k, j]`` is half the pairwise Shapley
        interaction index of features j and k at row i; the diagonal holds the main effects,
        so that ``values.sum(axis=2)`` equals the Shapley values.
    base_values, data, feature_names, output_names, info
        As :class:`ShapleyValues`.
    method : str
        ``"exact"``.
    """

    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    feature_names: tuple[str, ...]
    output_names: tuple[str, ...]
    method: str = "exact"
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        n, p, _, o = self.values.shape
        best = self.interaction().top(1)[0] if p > 1 else ()
        return (f"ShapleyInteractions({self.method!r}, {n} rows x {p} features, outputs "
                f"{list(self.output_names)}; strongest pair for "
                f"{self.output_names[output_index(self.output_names, None)]!r}: "
                f"{' x '.join(best)})")

    def shapley_values(self) -> ShapleyValues:
        """The Shapley values (row sums of the interaction values); no model evaluation."""
        return ShapleyValues(self.values.sum(axis=2), self.base_values, self.data,
                             self.feature_names, self.output_names, None, self.method,
                             self.info)

    def interaction(self) -> FeatureInteraction:
        """Mean over explained rows of the absolute pairwise interaction index
        (``2 |values[i, j, k]|``), for every pair: ``method="shapley_interaction"``."""
        n, p, _, o = self.values.shape
        weights = self.info.get("sample_weight")
        weights = np.ones(n) if weights is None else np.asarray(weights)
        mean = 2 * np.einsum("n,njko->jko", weights, np.abs(self.values)) / weights.sum()
        first, second = np.triu_indices(p, k=1)
        return FeatureInteraction(
            method="shapley_interaction",
            feature_sets=tuple((self.feature_names[a], self.feature_names[b])
                               for a, b in zip(first, second)),
            output_names=self.output_names, values=mean[first, second])

    def to_frame(self) -> pd.DataFrame:
        """Tidy table, one line per (row, feature_1, feature_2, output): ``value``."""
        return pair_values_frame(self.values, self.feature_names, self.output_names,
                                 "value")

    def to_shap(self, output=None):
        """The interaction values as a ``shap.Explanation`` (needs the ``shap`` package):
        values (n, p, p) and base values (n,) for one output, as shap's ``TreeExplainer``
        gives them, or (n, p, p, o) and (n, o) for all (see :meth:`ShapleyValues.to_shap`)."""
        return _explanation(self, output)

    def plot(self, output: int | str | None = None, ax=None):
        """Heat map of the mean absolute interaction value per pair (main effects on the
        diagonal); returns the Axes."""

        column = output_index(self.output_names, output)
        p = len(self.feature_names)
        if ax is None:
            _, ax = new_figure(0.5 * p + 2, 0.5 * p + 1.5)
        image = ax.imshow(np.abs(self.values[..., column]).mean(axis=0), cmap="viridis")
        ax.set_xticks(range(p), self.feature_names, rotation=90)
        ax.set_yticks(range(p), self.feature_names)
        ax.figure.colorbar(image, ax=ax, label="mean |Shapley interaction value|")
        return ax


def _explanation(result, output):
    """A ``shap.Explanation`` of ``result``'s values (outputs on their last axis), of one
    output or, by default, of the only one or all of them."""
    try:
        import shap
    except ImportError as err:
        raise ImportError("to_shap needs the shap package: pip install shap.") from err
    n = result.values.shape[0]
    if output is None and len(result.output_names) > 1:
        values, names = result.values, list(result.output_names)
        base = np.broadcast_to(result.base_values, (n, len(result.output_names)))
    else:
        j = 0 if output is None else select_outputs(result.output_names, output)[0]
        values, base = result.values[..., j], np.full(n, result.base_values[j])
        names = result.output_names[j]
    return shap.Explanation(values=np.array(values), base_values=np.array(base),
                            data=np.array(result.data), feature_names=list(result.feature_names),
                            output_names=names)


def _ranks(values: np.ndarray) -> np.ndarray:
    """Values mapped to [0, 1] by rank (NaN: 0.5), for colouring."""
    out = np.full(values.shape, 0.5)
    finite = np.isfinite(values)
    if finite.sum() > 1:
        order = pd.Series(values[finite]).rank(method="average").to_numpy()
        out[finite] = (order - 1) / max(1.0, order.max() - 1)
    return out


def _jitter(values: np.ndarray, width: float = 0.35) -> np.ndarray:
    """Vertical offsets that spread points by how crowded their value's bin is (fixed
    pattern, no randomness)."""
    if values.size < 2 or np.ptp(values) == 0:
        return np.zeros(values.shape)
    bins = np.minimum(99, ((values - values.min()) / np.ptp(values) * 100).astype(int))
    counts = np.bincount(bins, minlength=100)
    order = np.argsort(bins, kind="stable")
    rank_in_bin = np.empty(values.size)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank_in_bin[order] = np.arange(values.size) - starts[bins[order]]
    spread = counts[bins] / counts.max()
    alternating = np.where(rank_in_bin % 2 == 0, 1.0, -1.0) * np.ceil(rank_in_bin / 2)
    return width * spread * alternating / np.maximum(1.0, counts[bins] / 2)
