"""Typed method details: what a method reports beside its estimates (``result.info``).

Each method's details are a small frozen dataclass with documented fields (``info.baseline``);
it is also a read-only mapping (``info["baseline"]``, ``dict(info)``), so code written for a
plain dictionary keeps working. Fields a method does not use in a given call are None.
"""

from __future__ import annotations

import collections.abc
import dataclasses
from typing import Any

import numpy as np

__all__ = ["ALECurveDetails", "ALEDetails", "DecorrelationDetails", "Details", "FilterDetails",
           "HDetails", "HStatisticDetails", "LinearDetails", "LocoDetails",
           "PartialImportanceDetails", "PDImportanceDetails", "PDInteractionDetails",
           "PermutationDetails", "SensitivityDetails", "ShapleyDetails",
           "ShapleyImportanceDetails", "TreeDetails", "TrendsDetails", "WeightDetails"]


class Details(collections.abc.Mapping):
    """Base of the typed details: fields as attributes and as a read-only mapping.

    Details of examples with more than one axis (images, sequences) also hold
    ``input_layout`` (a :class:`jaximp.data.InputLayout`, set by the methods through
    :func:`with_input_layout`), which tables' details lack."""

    input_layout = None  # not a field: only results of images and sequences list it

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str) or name not in self._names():
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self):
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> tuple[str, ...]:
        names = tuple(f.name for f in dataclasses.fields(self))
        return names if self.input_layout is None else (*names, "input_layout")

    def __repr__(self) -> str:
        def short(value):
            if isinstance(value, np.ndarray):
                return f"array{value.shape}"
            if isinstance(value, (dict, list, tuple)) and len(value) > 4:
                return f"{type(value).__name__}(len={len(value)})"
            return repr(value)

        fields = ", ".join(f"{name}={short(getattr(self, name))}" for name in self._names()
                           if getattr(self, name) is not None)
        return f"{type(self).__name__}({fields})"

    __eq__ = object.__eq__
    __hash__ = object.__hash__


_frozen = dataclasses.dataclass(frozen=True, repr=False, eq=False)


@_frozen
class PermutationDetails(Details):
    """Details of :func:`jaximp.permutation_importance`.

    Attributes
    ----------
    loss : str
        The loss (or score) name.
    kind : {"difference", "ratio", "relative", "raw"}
    baseline : ndarray of shape (o,)
        The loss on the intact rows (on the importances' scale for ``"raw"``).
    n_repeats : int
    n_samples : int
        Rows used.
    sample_rows : ndarray of shape (n_samples,) or None
        Indices of the rows used (``max_samples``), None for all rows.
    n_bootstrap : int
        Row-bootstrap replicates (0: none).
    repeats : ndarray of shape (p, o, n_repeats) or None
        With ``n_bootstrap``, the importance of every repeat (the result's ``importances``
        then holds the bootstrap replicates).
    """

    loss: str
    kind: str
    baseline: np.ndarray
    n_repeats: int
    n_samples: int
    sample_rows: np.ndarray | None = None
    n_bootstrap: int = 0
    repeats: np.ndarray | None = None


@_frozen
class LocoDetails(Details):
    """Details of :func:`jaximp.loco_importance`.

    Attributes
    ----------
    strategy : {"refit", "mean", "median", "zero"}
    loss : str
    kind : {"difference", "ratio"}
    baseline : ndarray of shape (o,)
        The full model's loss.
    losses : ndarray of shape (p, o)
        The loss without each feature.
    values : dict or None
        Replacement values per feature (replacement strategies).
    models : list or None
        The refitted models, one per feature (``"refit"``).
    full_model : object or None
        The model refitted on every feature (``"refit"``).
    """

    strategy: str
    loss: str
    kind: str
    baseline: np.ndarray
    losses: np.ndarray
    values: dict | None = None
    models: list | None = None
    full_model: Any = None


@_frozen
class SensitivityDetails(Details):
    """Details of :func:`jaximp.sensitivity_importance`.

    Attributes
    ----------
    variant : {"random", "max"}
    D_p : ndarray of shape (p, o) or (p, o, r)
        Mean absolute prediction difference per feature (per repeat for ``"random"``).
    D_y : ndarray of shape (o,) or (o, r)
        The target's scale: mean absolute difference of random pairs (per repeat) or range.
    n_repeats, n_pairs : int or None
        ``"random"`` only.
    n_values : int or None
        ``"max"`` only.
    """

    variant: str
    D_p: np.ndarray
    D_y: np.ndarray
    n_repeats: int | None = None
    n_pairs: int | None = None
    n_values: int | None = None


@_frozen
class LinearDetails(Details):
    """Details of :func:`jaximp.linear_importance`.

    Attributes
    ----------
    family : {"gaussian", "binomial"}
    n_obs : int
    statistic : dict
        Per feature: the name of its statistic, ``"t"``/``"z"`` (one column) or ``"F"``/
        ``"wald"`` (a categorical or grouped feature).
    statistics : dict
        Per feature: the t or z statistic, or the F / Wald chi-square of a group.
    df : dict
        Per feature: its number of design columns.
    coefficients, std_errors : dict
        Per feature: coefficient(s) and standard error(s) in the data's units.
    design_columns, reference : dict
        Per feature: its design columns, and the reference level of a categorical feature.
    intercept : float
    sigma : float or None
        Residual standard deviation (``"gaussian"``).
    df_residual : int or None
        Residual degrees of freedom (``"gaussian"``).
    classes, positive_class, n_iter, converged
        ``"binomial"``: the two classes, the one modelled, IRLS iterations, convergence.
    """

    family: str
    n_obs: int
    statistic: dict
    statistics: dict
    df: dict
    coefficients: dict
    std_errors: dict
    design_columns: dict
    reference: dict
    intercept: float
    sigma: float | None = None
    df_residual: int | None = None
    classes: Any = None
    positive_class: Any = None
    n_iter: int | None = None
    converged: bool | None = None


@_frozen
class FilterDetails(Details):
    """Details of :func:`jaximp.filter_importance`.

    Attributes
    ----------
    method : {"auc", "t", "loess"}
        The filter applied (``"auto"`` resolved).
    task : {"classification", "regression"}
    weighted : bool
        Whether case weights were used.
    classes : ndarray or None
        Class labels (``"auc"``).
    df : float or None
        Residual degrees of freedom of the slope's t (``"t"``).
    span, degree, surface : float, int, str or None
        The LOESS settings (``"loess"``): span, local polynomial degree, and how the surface is
        evaluated (``"interpolate"``: from local fits at the kd-tree's cell ends, R's default;
        ``"direct"``: a local fit at every row).
    linear : tuple of str or None
        The features ``"loess"`` scored by a straight-line fit's R^2 instead, as caret does:
        fewer than 20% distinct values, or a LOESS neighbourhood of zero width.
    """

    method: str
    task: str
    weighted: bool
    classes: Any = None
    df: float | None = None
    span: float | None = None
    degree: int | None = None
    linear: tuple | None = None
    surface: str | None = None


@_frozen
class PDImportanceDetails(Details):
    """Details of :func:`jaximp.pd_importance` (and the ICE variant).

    Attributes
    ----------
    measure : dict
        Per feature: the flatness measure used (``"sd"``, ``"mad"``, ``"range"``...).
    average : str
    trim : float
    grid_values : dict
        Per feature: its grid (g,).
    pd : dict
        Per feature: its PD curve (g, o).
    n_bootstrap : int
    bootstrap_counts : ndarray of shape (r, n) or None
        How often each row was drawn in each bootstrap replicate.
    """

    measure: dict
    average: str
    trim: float
    grid_values: dict
    pd: dict
    n_bootstrap: int
    bootstrap_counts: np.ndarray | None = None


@_frozen
class PDInteractionDetails(Details):
    """Details of :func:`jaximp.pd_interaction`.

    Attributes
    ----------
    measure, average, trim
        As :class:`PDImportanceDetails`.
    pd : dict
        Per pair: its 2-D PD (g1, g2, o).
    n_bootstrap : int
    bootstrap_counts : ndarray of shape (r, n) or None
    """

    measure: Any
    average: str
    trim: float
    pd: dict
    n_bootstrap: int
    bootstrap_counts: np.ndarray | None = None


@_frozen
class HDetails(Details):
    """Details of one kind of H-statistic (``HStatistic.overall``, ``.pairwise``...).

    Attributes
    ----------
    numerator, denominator : ndarray of shape (s, o)
        Full-sample numerator and denominator of each feature set's statistic.
    normalized, squared : bool
        The read-out options.
    """

    numerator: np.ndarray
    denominator: np.ndarray
    normalized: bool
    squared: bool


@_frozen
class WeightDetails(Details):
    """Details of :func:`jaximp.garson_importance`, :func:`jaximp.olden_importance` and
    :func:`jaximp.gedeon_importance`.

    Attributes
    ----------
    layer_sizes : tuple of int
        The network's layer sizes.
    units, reduce : str or None
        Gedeon's settings.
    groups : dict or None
        The input columns summed into each group.
    """

    layer_sizes: tuple
    units: str | None = None
    reduce: str | None = None
    groups: dict | None = None


@_frozen
class HStatisticDetails(Details):
    """Details of :func:`jaximp.h_statistic` (``HStatistic.info``).

    Attributes
    ----------
    rows : ndarray or None
        Indices of the rows used (``n_max`` subsampling), None for all.
    bootstrap_counts : ndarray of shape (r, n_rows) or None
    eps : float
        Numerators at most ``eps`` times their denominators read as 0.
    n_bootstrap : int
    feature_names : tuple of str
        Every feature of X.
    numerator, denominator : ndarray of shape (o,) or None
        The total statistic's, when computed.
    """

    rows: np.ndarray | None
    bootstrap_counts: np.ndarray | None
    eps: float
    n_bootstrap: int
    feature_names: tuple
    numerator: np.ndarray | None = None
    denominator: np.ndarray | None = None


@_frozen
class ALECurveDetails(Details):
    """Details of one :class:`jaximp.AccumulatedLocalEffects` curve or surface.

    Attributes
    ----------
    rug : ndarray or None
        About 500 of the feature's values, sorted (drawn as a rug); None for a pair.
    spread : ndarray of shape (o,)
        Weighted standard deviation of the centred effect over the data rows.
    spread_replicates : ndarray of shape (o, r) or None
        The same per bootstrap replicate.
    n_bootstrap : int
    centered : str
        How the curve is centred: ``"rows"`` or ``"bins"`` (see :func:`jaximp.ale`).
    n_missing : int
        Rows left out because the feature (either feature of a pair) is missing (NaN).
    """

    rug: np.ndarray | None
    spread: np.ndarray
    spread_replicates: np.ndarray | None
    n_bootstrap: int
    centered: str = "rows"
    n_missing: int = 0


@_frozen
class ALEDetails(Details):
    """Details of :func:`jaximp.ale_importance` and :func:`jaximp.ale_interaction`.

    Attributes
    ----------
    ale : dict
        Per feature (or pair): its :class:`jaximp.AccumulatedLocalEffects`.
    n_bootstrap : int
    derivative : bool or None
        Whether the steps are gradients (importance only).
    """

    ale: dict
    n_bootstrap: int
    derivative: bool | None = None


@_frozen
class ShapleyDetails(Details):
    """Details of :func:`jaximp.shapley_values` and :func:`jaximp.shapley_interactions`.

    Attributes
    ----------
    n_background : int
        Background rows the absent features are drawn from.
    background_rows : ndarray or None
        Indices of the background rows sampled from the data, None when all or given.
    sample_weight : ndarray or None
        Weights of the explained rows.
    n_permutations : int or None
        Orders sampled by the permutation estimator; None for exact values.
    levels : dict or None
        The levels of each categorical feature (name -> levels), which its codes in ``data``
        index; None where there are none.
    """

    n_background: int
    background_rows: np.ndarray | None = None
    sample_weight: np.ndarray | None = None
    n_permutations: int | None = None
    levels: dict | None = None


@_frozen
class ShapleyImportanceDetails(Details):
    """Details of ``ShapleyValues.importance()`` (mean absolute Shapley values).

    Attributes
    ----------
    estimator : str
        ``"exact"`` or ``"permutation"``.
    base_values : ndarray of shape (o,)
        Mean prediction over the background rows.
    n_rows : int
        Explained rows averaged over.
    """

    estimator: str
    base_values: np.ndarray
    n_rows: int


@_frozen
class TrendsDetails(Details):
    """Details of :func:`jaximp.trends`.

    Attributes
    ----------
    n_bootstrap : int
    subsample : float
        Fraction of rows in each bootstrap subset.
    refit : bool
        Whether the model was refitted on each subset.
    skipped : dict
        Estimators left out, with the reason.
    linear_t : ndarray of shape (p, o) or None
        t statistics of the linear-model coefficients, when computed.
    """

    n_bootstrap: int
    subsample: float
    refit: bool
    skipped: dict
    linear_t: np.ndarray | None = None


@_frozen
class TreeDetails(Details):
    """Details of the tree-ensemble statistics: :func:`jaximp.impurity_importance` and
    :func:`jaximp.transversal_rates`.

    Attributes
    ----------
    estimator : str
        The estimator's class name.
    n_trees : int
    criterion : str or None
        The split criterion (impurity importance).
    n_trees_used : int or None
        Trees with at least one split (impurity importance).
    node_means : str or None
        What the children's averages are read from (transversal rates).
    sign : float or None
        +1, or -1 where the ensemble's values decrease with the class (transversal rates).
    """

    estimator: str
    n_trees: int
    criterion: str | None = None
    n_trees_used: int | None = None
    node_means: str | None = None
    sign: float | None = None


@_frozen
class PartialImportanceDetails(Details):
    """Details of :func:`jaximp.partial_importance`.

    Attributes
    ----------
    grid_rows : ndarray of shape (g, k)
        The grid: the values written into the feature's k columns, one row per grid point.
    """

    grid_rows: np.ndarray


@_frozen
class DecorrelationDetails(Details):
    """Details of :func:`jaximp.decorrelation_importance`.

    Attributes
    ----------
    residuals : str
        ``"gram_schmidt"`` or ``"learned"``.
    importance : str
        The inner importance (its name).
    n_orders : int
        Sampled feature orders per feature.
    weights : ndarray of shape (p,)
        The single-feature fit weights ``r(R(F_i), Y)``.
    raw : ndarray of shape (p, n_orders)
        Inner importances of the last feature's residual, before weighting.
    orders : ndarray of shape (p, n_orders, p)
        The sampled orders.
    """

    residuals: str
    importance: str
    n_orders: int
    weights: np.ndarray
    raw: np.ndarray
    orders: np.ndarray
