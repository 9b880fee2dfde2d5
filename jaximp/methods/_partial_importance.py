"""Partial importance (PI) and individual conditional importance (ICI) curves (Casalicchio,
Molnar & Bischl 2018): the PD/ICE analogue of permutation importance.

One engine plan: the intact data (the baseline item) and the feature set to each grid value in
every row (one item per grid point). ICI keeps each row's loss per item (``Itemwise``: whole
items, as many at a time as fit the memory budget, turned into per-row losses); PI alone needs
only weighted loss sums (``LossSums``), whatever n.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..data import (
    Flag,
    check_bool,
    feature_grid,
    grid_option,
    output_index,
    resolve_grid,
    select_outputs,
    validate_grid_options,
    validate_params,
)
from ..engine import (
    Itemwise,
    LossSums,
    TARGET_LOSSES,
    at_values,
    check_prediction_range,
    check_result_fits,
    evaluate,
    predict_rows,
    target_terms,
)
from ..results import PartialImportanceDetails, new_figure
from ._loss import canonical_loss, check_target, resolve_loss
from ._setup import prepare

__all__ = ["PartialImportance", "partial_importance"]

#: Losses that are a weighted mean of a per-row term.
PER_ROW_LOSSES = ("mse", "mae", "mape", "msle", "poisson", "gamma", "log_loss")


@dataclasses.dataclass(frozen=True, eq=False)
class PartialImportance:
    """Partial importance of one feature over a grid, and each row's curve.

    Attributes
    ----------
    feature_name : str
    feature_kind : str
        ``"continuous"``, ``"categorical"`` or ``"onehot"``.
    grid_values : tuple, length g
        Grid values (levels of a categorical feature).
    output_names : tuple of str, length o
        One per loss value: the model's outputs for regression losses, ``("y",)`` for log loss.
    pi : ndarray of shape (g, o)
        ``PI(z) = sum_i w_i ICI_i(z) / sum_i w_i``: the mean change of the loss when the
        feature is set to ``z`` in every row.
    ici : ndarray of shape (n, g, o) or None
        ``ICI_i(z) = L(y_i, f(z, x_iC)) - L(y_i, f(x_i))``; None when ``individual=False``.
    baseline : ndarray of shape (o,)
        Weighted mean loss on the intact data.
    grid_counts : ndarray of shape (g,) or None
        When the grid holds every distinct value of the feature in the data: the number of rows
        with each value (the default weights of :meth:`integrate`).
    loss : str
    info : PartialImportanceDetails
        ``grid_rows``: the grid, one row of feature values per grid point.
    """

    feature_name: str
    feature_kind: str
    grid_values: tuple
    output_names: tuple[str, ...]
    pi: np.ndarray
    ici: np.ndarray | None
    baseline: np.ndarray
    grid_counts: np.ndarray | None
    loss: str
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        curves = f", {self.ici.shape[0]} ICI curves" if self.ici is not None else ""
        return (f"PartialImportance({self.feature_name}: {len(self.grid_values)} grid points, "
                f"loss {self.loss!r}, outputs {list(self.output_names)}, PI in "
                f"[{self.pi[:, 0].min():.4g}, {self.pi[:, 0].max():.4g}]{curves})")

    def integrate(self, weights=None) -> np.ndarray:
        """Weighted mean of PI over the grid, shape (o,).

        ``weights`` (g,) default: :attr:`grid_counts` when the grid is the feature's distinct
        values (then the result is the expected permutation importance, see
        :func:`partial_importance`), else equal weights.
        """
        if weights is None:
            weights = self.grid_counts if self.grid_counts is not None else np.ones(
                len(self.grid_values))
        weights = np.asarray(weights, np.float64)
        if weights.shape != (len(self.grid_values),) or not np.all(weights >= 0) or not (
                weights.sum() > 0):
            raise ValueError(
                f"weights must be {len(self.grid_values)} non-negative numbers, one per grid "
                f"point, with a positive sum; got {weights!r:.60}."
            )
        return weights @ self.pi / weights.sum()

    def to_frame(self, kind: str = "average") -> pd.DataFrame:
        """Tidy table: ``value``, ``output`` and ``pi``; or, with ``kind="individual"``,
        ``row``, ``value``, ``output`` and ``ici``."""
        g, o = self.pi.shape
        values = np.asarray(self.grid_values, dtype=object)
        if kind == "average":
            return pd.DataFrame({"value": np.tile(values, o),
                                 "output": np.repeat(np.asarray(self.output_names, object), g),
                                 "pi": self.pi.T.reshape(-1)})
        if kind != "individual":
            raise ValueError(f"kind must be 'average' or 'individual'; got {kind!r}.")
        if self.ici is None:
            raise ValueError("this result holds no ICI curves; compute with individual=True.")
        n = self.ici.shape[0]
        return pd.DataFrame({
            "row": np.tile(np.repeat(np.arange(n), g), o),
            "value": np.tile(values, n * o),
            "output": np.repeat(np.asarray(self.output_names, object), n * g),
            "ici": np.moveaxis(self.ici, 2, 0).reshape(-1),
        })

    def plot(self, output: int | str | None = None, ax=None, max_curves: int = 100):
        """ICI curves (up to ``max_curves``, thin) under the PI curve (bold); returns the
        Axes."""

        j = output_index(self.output_names, output)
        if ax is None:
            _, ax = new_figure(4, 3)
        numeric = self.feature_kind == "continuous"
        x = np.asarray(self.grid_values, np.float64) if numeric else np.arange(
            len(self.grid_values))
        if self.ici is not None:
            from ..results import ice_rows

            rows = ice_rows(self.ici.shape[0], max_curves)
            ax.plot(x, self.ici[rows, :, j].T, color="0.6", lw=0.5, alpha=0.4)
        ax.plot(x, self.pi[:, j], color="tab:red", lw=2.5, marker=None if numeric else "o")
        ax.axhline(0, color="0.3", lw=0.5)
        if not numeric:
            ax.set_xticks(x, [str(v) for v in self.grid_values])
        ax.set_xlabel(self.feature_name)
        ax.set_ylabel(f"change in {self.loss} ({self.output_names[j]})")
        return ax


def _row_losses(spec, name: str, fn: Callable | None, predictions: np.ndarray) -> np.ndarray:
    """Per-row losses (b, n, k) of predictions (b, n, o_model), in float64."""
    p = np.asarray(predictions, np.float64)[..., list(spec.out_idx)]
    if fn is not None:
        per = p[..., 0] if p.shape[-1] == 1 else p
        y = spec.y[:, 0] if spec.y.ndim == 2 and spec.y.shape[1] == 1 else spec.y
        out = np.stack([np.asarray(fn(y, item), np.float64) for item in per])
        if out.ndim < 2 or out.shape[1] != y.shape[0]:
            raise ValueError(
                f"loss {getattr(fn, '__name__', fn)!r} must return one loss per row, shape "
                f"({y.shape[0]},) or ({y.shape[0]}, o); it returned shape {out.shape[1:]} (a "
                "mean over the rows, as scikit-learn's metrics, cannot give each row's change "
                "in loss). E.g. loss=lambda y, p: (y - p) ** 2.")
        return out.reshape(out.shape[0], out.shape[1], -1)
    if name in TARGET_LOSSES:
        with np.errstate(invalid="ignore", divide="ignore"):  # refused below, by name
            terms = target_terms(name, p, spec.y[None], np)
        check_prediction_range(name, terms)
        return terms
    if p.shape[-1] == 1:  # probability of class 1 of two
        p = np.concatenate([1 - p, p], axis=-1)
    proba = np.take_along_axis(p, spec.y[None, :, None].astype(np.int64), axis=-1)
    eps = np.finfo(np.float64).eps  # scikit-learn's clip, as the summed log loss's
    return -np.log(np.clip(proba, eps, 1 - eps))


@dataclasses.dataclass(frozen=True)
class _CallableLoss:
    out_idx: tuple[int, ...]
    y: np.ndarray
    output_names: tuple[str, ...]


def _grid_counts(column_block: np.ndarray, grid: np.ndarray) -> np.ndarray | None:
    """Rows with each grid row's values, when the grid rows are exactly the data's distinct
    values, else None."""
    values, counts = np.unique(column_block, axis=0, return_counts=True)
    distinct = np.unique(grid, axis=0)
    if len(distinct) != len(grid) or values.shape != distinct.shape or np.any(
            values != distinct):
        return None
    lookup = {tuple(v): k for v, k in zip(values.tolist(), counts)}
    return np.asarray([lookup[tuple(r)] for r in grid.tolist()], np.float64)


@validate_params(individual=Flag())
def partial_importance(
    model,
    X,
    y,
    feature,
    *,
    grid="quantile",
    grid_resolution: int = 20,
    percentiles: tuple[float, float] = (0.0, 1.0),
    loss: str | Callable = "mse",
    individual: bool = True,
    output=None,
    sample_weight=None,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> PartialImportance:
    """Partial importance (PI) and individual conditional importance (ICI) of one feature.

    Casalicchio, Molnar & Bischl (2018): for each grid value ``z`` and row ``i``,
    ``ICI_i(z) = L(y_i, f(z, x_iC)) - L(y_i, f(x_i))``, the change of the row's loss when the
    feature is set to ``z``; ``PI(z)`` is its weighted mean over the rows. Where permutation
    importance summarizes the loss change in one number, PI shows for which values of the
    feature the loss changes, and ICI for which rows.

    Relation to permutation importance: one permutation ``pi`` of the rows gives
    ``e_perm - e_orig = sum_i w_i ICI_i(x_{pi(i)}) / sum_i w_i``. Row ``pi(i)`` is uniform over
    the n rows for a random permutation, so the expected permutation importance (difference,
    same per-row loss) is ``(1/n) sum_k PI(x_k)``: :meth:`PartialImportance.integrate` with the
    grid of every distinct value (``grid="unique"``), each weighted by its number of rows (the
    case weights weight the rows' losses, not the values the permutation draws). The mean over
    ``n_repeats`` permutations is a Monte Carlo estimate of it, with standard error about
    ``importances_std / sqrt(n_repeats)``.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        Data on which the loss is measured.
    y : array of shape (n,) or (n, o)
        Targets.
    feature : str or int
        The feature (a categorical feature or a one-hot group counts as one).
    grid : str or dict, default "quantile"
        Grid of the feature, as in :func:`jaximp.partial_dependence`; categorical features use
        their levels. A dict that does not name the feature gives its ``"__default__"`` or
        ``"quantile"``.
    grid_resolution : int, default 20
    percentiles : (float, float), default (0, 1)
    loss : {"mse", "mae", "mape", "msle", "poisson", "gamma", "log_loss"} or callable
        A loss that is a mean of per-row terms (default ``"mse"``): squared, absolute,
        absolute percentage or squared log error, or a Poisson or gamma unit deviance (one
        value per model output; see :func:`permutation_importance`), log loss (class
        probabilities; ``y`` class labels), or a callable ``loss(y, prediction) -> (n,) or
        (n, k)`` of per-row losses (NumPy arrays; ``prediction`` (n,) for one output, else
        (n, o)).
    individual : bool, default True
        Keep the ICI curves (n, g, o), which must fit in memory. With False and a named loss,
        only the weighted loss sums are kept.
    output : int, str or list, optional
        Model outputs the loss sees (default all).
    sample_weight : array of shape (n,), optional
        Case weights of the mean over rows.
    feature_names, categorical, groups, variables, memory_budget, progress
        As in :func:`jaximp.partial_dependence`.

    Returns
    -------
    PartialImportance

    References
    ----------
    Casalicchio, Molnar & Bischl (2018), "Visualizing the feature importance for black box
    models", ECML PKDD.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> y = 2 * X[:, 0] + X[:, 1]
    >>> res = partial_importance(lambda X: 2 * X[:, 0] + X[:, 1], X, y, "x0", grid="unique")
    >>> res.pi.shape, res.ici.shape
    ((200, 1), (200, 200, 1))
    >>> expected = 4 * ((X[:, 0][:, None] - X[:, 0][None]) ** 2).mean()  # E[permutation imp.]
    >>> bool(np.isclose(res.integrate()[0], expected, rtol=1e-4))
    True
    """
    individual = check_bool(individual, "individual")
    validate_grid_options(grid, grid_resolution, percentiles)
    fn = None
    loss = canonical_loss(loss)
    if callable(loss) and not isinstance(loss, str):
        fn = loss
    elif not isinstance(loss, str) or loss not in PER_ROW_LOSSES:
        raise ValueError(
            f"loss must be one of {PER_ROW_LOSSES} or a callable loss(y, prediction) returning "
            f"per-row losses; got {loss!r:.60}."
        )
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress, allow_missing=True,
    )
    n, c = dataset.n_rows, dataset.n_columns
    target = check_target(y, n, dataset.source)
    if fn is None:
        spec = resolve_loss(loss, target, predictor, output, dataset.weights)
    else:
        out_idx = tuple(select_outputs(predictor.output_names, output))
        spec = _CallableLoss(out_idx, target, tuple(predictor.output_names[i] for i in out_idx))
    engine = {"memory_budget": memory_budget, "progress": progress}
    if fn is None and spec.task == "classification":
        spec.check_probabilities(predict_rows(predictor, dataset, **engine),
                                 predictor.n_outputs)
    feat = dataset.feature(feature)
    strategy, explicit = grid_option(resolve_grid(grid, dataset), feat.name, "quantile")
    rows, labels = feature_grid(dataset, feat, strategy=strategy,
                                grid_resolution=grid_resolution, percentiles=percentiles,
                                values=explicit)
    g = rows.shape[0]
    masks = np.zeros((2, c), bool)
    masks[0, list(feat.columns)] = True
    table = np.zeros((g + 1, c))
    table[:g, list(feat.columns)] = rows
    plan = at_values(masks, [1] + [0] * g, table, [g] + list(range(g)))  # baseline first
    w = np.ones(n) if dataset.weights is None else dataset.weights
    if individual or fn is not None:
        width = 1 if fn is None and spec.task == "classification" else len(spec.out_idx)
        check_result_fits(8.0 * n * (g + 1) * width,
                          f"{n} rows x {g + 1} items x {width} losses of ICI curves",
                          "use individual=False, fewer grid points or fewer rows.")
        losses = evaluate(predictor, dataset, plan,
                          Itemwise(lambda preds: _row_losses(spec, loss, fn, preds)),
                          label="partial importance", **engine)  # (g + 1, n, k)
        ici = np.moveaxis(losses[1:] - losses[:1], 0, 1)  # (n, g, k)
        baseline = w @ losses[0] / w.sum()
        pi = np.einsum("n,ngk->gk", w, ici) / w.sum()
        if not individual:
            ici = None
    else:
        mean = evaluate(predictor, dataset, plan,
                        LossSums(loss, spec.y, w, spec.out_idx),
                        label="partial importance", **engine)  # (g + 1, k)
        baseline, pi, ici = mean[0], mean[1:] - mean[:1], None
    block = dataset.X[:, list(feat.columns)]
    names = spec.output_names if pi.shape[1] == len(spec.output_names) else ("y",)
    return PartialImportance(
        feature_name=feat.name, feature_kind=feat.kind, grid_values=tuple(labels),
        output_names=tuple(names), pi=pi, ici=ici, baseline=np.asarray(baseline),
        grid_counts=_grid_counts(block, rows), loss=loss if fn is None else getattr(
            fn, "__name__", "callable"),
        info=PartialImportanceDetails(grid_rows=rows),
    )
