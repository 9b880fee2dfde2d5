"""The result of per-row attributions (gradient and perturbation methods): the
:class:`Attributions` class, the unpacking of a derived predictor's outputs into it, and the
per-row output selection (captum's ``target`` tensor: one output index per row)."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import jax
import numpy as np
import pandas as pd

from ..data import (Dataset, as_key, check_choice, mean_abs_over_rows, output_index,
                    user_stacklevel)
from ..results import (
    FeatureImportance,
    input_image,
    new_figure,
    plot_input_map,
    plot_waterfall,
    with_input_layout,
)
from ._setup import keep_layout

__all__ = [
    "integer_columns",
    "ROW_OUTPUT_NAME",
    "Attributions",
    "build_attributions",
    "completeness_gap",
    "checked_row",
    "feature_data",
    "feature_labels",
    "feature_membership",
    "labelled_values",
    "make_attributions",
    "row_outputs",
    "warn_incomplete",
]

COMPLETENESS_TOLERANCE = 0.01
ROW_OUTPUT_NAME = "output per row"


def row_outputs(output, output_names, n_rows: int) -> np.ndarray | None:
    """``output`` as one output index per row (n,) int32 when it is an array (NumPy, JAX or
    a pandas Series), else None (an index, a name, a list of them or None: the outputs to
    explain, every row the same). captum's ``target`` tensor: row ``i`` is explained for
    output ``output[i]`` alone, e.g. each row's predicted class; one index (a 0-d array or
    one entry) serves every row."""
    if isinstance(output, pd.Series):
        output = output.to_numpy()
    elif hasattr(output, "__dlpack__") and not isinstance(output, jax.Array):
        output = np.asarray(output.cpu() if hasattr(output, "cpu") else output)  # a tensor
    if not isinstance(output, (np.ndarray, jax.Array)):
        return None
    o = len(output_names)
    values = np.asarray(output)
    if values.size == 1 and values.ndim <= 1:  # one index for every row, as captum broadcasts
        values = np.broadcast_to(values.reshape(-1), (n_rows,))
    if values.ndim != 1 or values.shape[0] != n_rows:
        raise ValueError(
            f"output as an array gives one output index per row of X, so it must have shape "
            f"({n_rows},); got shape {values.shape}. Pass e.g. the predicted classes "
            "prediction.argmax(axis=1), or an int, a name or a list for the same outputs on "
            "every row.")
    if values.dtype.kind not in "iu":
        raise TypeError(
            f"output as an array must hold integer output indices (one per row); got dtype "
            f"{values.dtype}. Convert it, e.g. np.asarray(output, dtype=int), or map output "
            f"names {list(output_names)[:5]} to their positions.")
    bad = (values < 0) | (values >= o)
    if bad.any():
        first = int(np.argmax(bad))
        raise ValueError(
            f"output as an array must hold output indices in [0, {o - 1}] for a model with "
            f"{o} outputs; got {int(values[first])} at row {first}. Pass each row's output "
            "position (negative indices are not taken).")
    return values.astype(np.int32)


def feature_membership(dataset: Dataset) -> np.ndarray:
    """(p, c) 0/1 matrix: feature (or group) j holds column k. A group's attribution is the
    sum of its columns' (completeness is kept)."""
    member = np.zeros((len(dataset.features), dataset.n_columns))
    for j, feat in enumerate(dataset.features):
        member[j, list(feat.columns)] = 1.0
    return member



# ---------------------------------------------------------------------------------------------
# The result.
# ---------------------------------------------------------------------------------------------


def completeness_gap(values, predictions, baseline_values) -> np.ndarray:
    """Relative completeness gap per output: ``mean_i |sum_j a_ij - (f(x_i) - f(b_i))| /
    mean_i |f(x_i) - f(b_i)|`` (0 when every difference is 0)."""
    target = predictions - baseline_values  # (n, o)
    gap = np.abs(values.sum(axis=1) - target).mean(axis=0)
    scale = np.abs(target).mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, gap / np.where(scale > 0, scale, 1), gap)


@dataclasses.dataclass(frozen=True, eq=False)
class Attributions:
    """Per-row attributions (gradient or perturbation), per feature (or group) and model
    output.

    Attributes
    ----------
    values : ndarray of shape (n, p, o)
        Attribution of feature ``j`` at row ``i`` for output ``k`` (a group's is the sum of
        its columns').
    data : ndarray of shape (n, p)
        The rows' feature values (NaN for a group of several columns).
    feature_names : tuple of str, length p
    output_names : tuple of str, length o
    method : str
        ``"integrated_gradients"``, ``"expected_gradients"``, ``"smoothgrad"``,
        ``"saliency"``, ``"input_x_gradient"``, ``"permutation"`` or ``"ablation"``.
    predictions : ndarray of shape (n, o)
        ``f(x_i)``.
    baseline_values : ndarray of shape (n, o) or None
        ``f`` at the baselines (integrated gradients: the mean over the baselines; expected
        gradients: the mean over each row's drawn baselines), None for the other methods.
    info : dict
        Settings (``n_steps``, ``method``, ``n_samples``, ...), ``completeness_gap`` (o,) for
        integrated and expected gradients (see :func:`completeness_gap`),
        ``sample_weight``, and with a per-row ``output`` array ``output_per_row`` (n,) (the
        one output column is then named ``"output per row"``).
    """

    values: np.ndarray
    data: np.ndarray
    feature_names: tuple[str, ...]
    output_names: tuple[str, ...]
    method: str
    predictions: np.ndarray
    baseline_values: np.ndarray | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        n, p, _o = self.values.shape
        gap = self.info.get("completeness_gap")
        extra = "" if gap is None else f", completeness gap {float(np.max(gap)):.2e}"
        return (f"Attributions({self.method!r}, {n} rows x {p} features, outputs "
                f"{list(self.output_names)}{extra})")

    def importance(self, n_bootstrap: int = 100, random_state=0) -> FeatureImportance:
        """Mean absolute attribution over the rows (weighted by the sample weights, if any),
        with ``n_bootstrap`` bootstrap replicates over the rows for intervals (0: none)."""
        n = self.values.shape[0]
        point, std, replicates = mean_abs_over_rows(
            self.values, self.info.get("sample_weight"), n_bootstrap, as_key(random_state))
        return FeatureImportance(
            method=self.method, feature_names=self.feature_names,
            output_names=self.output_names, importances_mean=point, importances_std=std,
            importances=replicates,
            info=with_input_layout({"n_rows": n, "n_bootstrap": int(n_bootstrap),
                                    "measure": "mean |attribution|"},
                                   self.info.get("input_layout")),
        )

    def to_frame(self) -> pd.DataFrame:
        """Tidy table, one line per (row, feature, output): ``row``, ``feature``, ``output``,
        ``attribution``, ``feature_value``."""
        n, p, o = self.values.shape
        return pd.DataFrame({
            "row": np.repeat(np.arange(n), p * o),
            "feature": np.tile(np.repeat(np.asarray(self.feature_names, object), o), n),
            "output": np.tile(np.asarray(self.output_names, object), n * p),
            "attribution": self.values.reshape(-1),
            "feature_value": np.repeat(self.data.reshape(-1), o),
        })

    def plot(self, kind: str = "bar", output: int | str | None = None, ax=None, row: int = 0,
             **kwargs):
        """``kind="bar"``: the importance (mean ``|attribution|``) with bootstrap error bars;
        ``kind="summary"``: a point per row at its attribution, one line per feature;
        ``kind="image"`` (examples with more than two axes): :meth:`image` of ``row``, drawn
        by :func:`jaximp.results.plot_input_map` (the mean over an image's channel axis;
        ``sequence=True`` for a heat map over time); ``kind="waterfall"``: row ``row``'s
        attributions as steps from its baseline value to its prediction (break-down: in its
        order; others: largest ``|attribution|`` first), for attributions that add up to
        that difference. Returns the Axes."""
        check_choice(kind, "kind", ("bar", "summary", "image", "waterfall"))
        if kind == "bar":
            return self.importance().plot(output=output, ax=ax, **kwargs)
        if kind == "waterfall":
            if self.baseline_values is None:
                raise ValueError(
                    f"a waterfall draws attributions that add up to the prediction minus a "
                    f"baseline value; {self.method} attributions have none. Use kind='bar' or "
                    "'summary'.")
            column = output_index(self.output_names, output)
            values = self.values[checked_row(row, self.values.shape[0]), :, column]
            order = (self.info["order"][row] if "order" in self.info
                     else np.argsort(-np.abs(values), kind="stable"))
            return plot_waterfall(
                feature_labels(self.feature_names, self.data[row], order,
                               self.info.get("levels")),
                values[order], float(self.baseline_values[row, column]), ax,
                title=f"{self.method}, row {row} ({self.output_names[column]})",
                start_label=("the mean prediction" if self.method == "break_down"
                             else "the prediction at the baseline"),
                prediction=float(self.predictions[row, column]), **kwargs)
        if kind == "image":
            return plot_input_map(self.image(row, output), ax, label=f"{self.method}, row {row}",
                                  **kwargs)
        column = output_index(self.output_names, output)
        if ax is None:
            _, ax = new_figure(6, 0.4 * len(self.feature_names) + 1)
        order = np.argsort(np.abs(self.values[:, :, column]).mean(axis=0), kind="stable")
        for position, j in enumerate(order):
            values = self.values[:, j, column]
            ax.scatter(values, np.full(values.shape, position), s=6, alpha=0.6)
        ax.axvline(0.0, color="grey", lw=0.8)
        ax.set_yticks(range(len(order)), [self.feature_names[j] for j in order])
        ax.set_xlabel(f"{self.method} ({self.output_names[column]})")
        return ax

    def image(self, row: int = 0, output: int | str | None = None) -> np.ndarray:
        """Row ``row``'s attributions on the positions of its example (``input_shape``), a
        group's value on each of its positions."""
        column = output_index(self.output_names, output)
        return input_image(self.info, self.values[row, :, column], "attributions")


def feature_labels(names, values: np.ndarray, order, levels=None) -> list[str]:
    """``"name = value"`` of the features at ``order``: a categorical feature's level (its
    code in ``values`` indexes ``levels[name]``), a number, or the name alone where the value
    is not one number (a group)."""
    levels = levels or {}

    def value(j):
        if names[j] in levels:
            return levels[names[j]][int(values[j])]
        return f"{values[j]:.4g}"

    return [f"{names[j]} = {value(j)}" if np.isfinite(values[j]) else str(names[j])
            for j in order]


def checked_row(row, n: int) -> int:
    """``row`` as the index of one of ``n`` explained rows, or a ValueError."""
    if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not -n <= row < n:
        raise ValueError(f"row must be the index of an explained row (below {n}); got "
                         f"{row!r}.")
    return int(row)


def feature_data(dataset: Dataset) -> np.ndarray:
    out = np.full((dataset.n_rows, len(dataset.features)), np.nan)
    for j, feat in enumerate(dataset.features):
        if len(feat.columns) == 1:
            out[:, j] = dataset.X[:, feat.columns[0]]
    return out


def build_attributions(raw, dataset, predictor, out_idx, method, info, *, with_baseline,
                       per_row=None):
    """Unpack the derived predictor's (n, c*o + o [+ o]) outputs into an Attributions; with
    ``per_row`` (n,) output indices, one output column (``o = 1``) named
    :data:`ROW_OUTPUT_NAME`, the indices kept as ``info["output_per_row"]``."""
    n, c = dataset.n_rows, dataset.n_columns
    o = 1 if per_row is not None else len(out_idx)
    values = raw[:, : c * o].reshape(n, c, o).astype(np.float64)
    values = np.einsum("pc,nco->npo", feature_membership(dataset), values)
    predictions = raw[:, c * o: c * o + o].astype(np.float64)
    baseline = raw[:, c * o + o: c * o + 2 * o].astype(np.float64) if with_baseline else None
    info = dict(info)
    if with_baseline:
        info["completeness_gap"] = completeness_gap(values, predictions, baseline)
    # all zero where the predictions vary (and, with baselines, differ from theirs, which
    # completeness asks the attributions to add up to): gradients that are 0 everywhere
    moved = np.ptp(predictions, axis=0).any() and (
        baseline is None or bool(np.any(predictions != baseline)))
    if not values.any() and moved:
        warnings.warn(
            f"{method}: every attribution is exactly 0 while the predictions vary over the "
            "rows: the model is likely piecewise constant in its inputs (integer or boolean "
            "outputs, rounding, thresholds, an arg max), where gradients are 0 and cannot see "
            "its effects. Differentiate its scores or probabilities instead, or use "
            "jaximp.shapley_values or jaximp.permutation_importance, which replace values.",
            RuntimeWarning, stacklevel=user_stacklevel())
    return make_attributions(values, predictions, dataset, predictor, out_idx, method, info,
                             per_row=per_row, baseline_values=baseline)


def make_attributions(values, predictions, dataset, predictor, out_idx, method, info, *,
                      per_row=None, baseline_values=None) -> Attributions:
    """The result from per-feature values (n, p, o) and predictions (n, o): output names
    (one ``"output per row"`` column with ``per_row``), sample weights and, for examples of
    more than two axes, where each feature lies."""
    info = keep_layout(dict(info, sample_weight=dataset.weights), dataset)
    if per_row is not None:
        info["output_per_row"] = per_row
        names = (ROW_OUTPUT_NAME,)
    else:
        names = tuple(predictor.output_names[i] for i in out_idx)
    return Attributions(
        values=values, data=feature_data(dataset), feature_names=dataset.feature_names,
        output_names=names, method=method, predictions=predictions,
        baseline_values=baseline_values, info=info,
    )


def warn_incomplete(result: Attributions, fix: str) -> None:
    gap = result.info["completeness_gap"]
    if np.max(gap) > COMPLETENESS_TOLERANCE:
        warnings.warn(
            f"{result.method}: the attributions miss completeness by a relative gap of "
            f"{float(np.max(gap)):.2%} (> {COMPLETENESS_TOLERANCE:.0%}): mean |sum of "
            f"attributions - (f(x) - f(baseline))| / mean |f(x) - f(baseline)|. {fix}",
            RuntimeWarning, stacklevel=4,
        )


def labelled_values(values, dataset, name: str):
    """A DataFrame's or Series' values in the order of X's columns (a baseline, a
    background): their labels must be X's column names, in X's order (as Shapley values'
    background); unlabelled ones (a RangeIndex) are taken in order. Anything else passes."""
    if isinstance(values, pd.DataFrame):
        labels = values.columns
    elif isinstance(values, pd.Series):
        labels = values.index
    else:
        return values
    if not isinstance(labels, pd.RangeIndex) and [str(label) for label in labels] != list(
            dataset.column_names):
        raise ValueError(
            f"{name} must have the columns of X, {list(dataset.column_names)}; got "
            f"{[str(label) for label in labels]}. Select them in X's order, e.g. "
            f"{name}[X.columns].")
    return values.to_numpy()


def integer_columns(X) -> list[str]:
    """The integer and boolean columns of a DataFrame (or all, for an integer array): not
    differentiable inputs."""
    if isinstance(X, pd.DataFrame):
        return [str(c) for c, t in X.dtypes.items()
                if pd.api.types.is_integer_dtype(t) or pd.api.types.is_bool_dtype(t)]
    dtype = getattr(X, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind in "biu":
        return [f"all (X has dtype {np.dtype(dtype)})"]
    return []
