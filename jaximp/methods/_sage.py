"""SAGE: Shapley additive global importance (Covert, Lundberg & Lee 2020), and Shapley effects.

The players are features (or groups). A coalition S is worth the drop in expected loss when the
model sees the features of S and has the others averaged out over background rows b:

    v(S) = E[loss(y, f_0)] - E[loss(y, f_S(x_S))],   f_S(x_S) = sum_b w_b f(x_S, b_notS) / sum_b w_b,

with ``f_0`` the mean prediction over the background (marginal imputation, as the sage
package's ``MarginalImputer``). Each (explained row, coalition) pair is one item of an engine
plan whose data are the background rows and whose replacement table holds the explained rows;
the engine's weighted mean over the background gives ``f_S``, and the losses are taken on the
host in float64. The permutation estimator credits each player with the drop in a row's loss
as it joins the players before it in an order; by default it visits the rows in shuffled
passes with each order and its reverse (``_sage_estimators``), or draws a row and an order per
sample as the sage package's ``PermutationEstimator`` (``sampler="iid"``). A batch of samples
is one engine evaluation, and sampling stops when the largest standard error falls below
``convergence`` times the range of the values. The exact estimator enumerates all 2^p
coalitions for every row.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
from collections.abc import Callable
from typing import Literal

import jax
import numpy as np
import pandas as pd

from jaximp.kernels import brier_terms

from ..data import (
    Choice,
    Dataset,
    Flag,
    Int,
    Real,
    as_key,
    select_outputs,
    validate_params,
)
from ..engine import (
    Mean,
    check_prediction_range,
    target_terms,
    at_values,
    evaluate,
    key_bits,
    predict_rows,
    resolve_budget,
    sample_rows,
)
from ..results import Details, FeatureImportance
from ._loss import (
    RESPONSES,
    canonical_loss,
    check_target,
    class_labels,
    logits_to_probabilities,
    resolve_loss,
)
from ._sage_estimators import (
    SAGE_MAX_PERMUTATIONS,
    SAMPLERS,
    exact_values,
    sampled_values,
)
from ._setup import (
    background_dataset,
    cached_stage,
    digest,
    keep_layout,
    prepare_explained,
    rows_of,
    warn_unresolved_values,
)
from ._shapley import KEPT_PLAN_BYTES, coalition_masks

__all__ = [
    "SAGE_EXACT_LIMIT",
    "SAGE_LOSSES",
    "SAGE_MAX_PERMUTATIONS",
    "SageDetails",
    "SageImportance",
    "sage_importance",
]

#: Losses SAGE accepts: means over rows of a per-row loss of the averaged prediction.
SAGE_LOSSES = ("mse", "mae", "mape", "msle", "poisson", "gamma", "log_loss", "brier",
               "accuracy")
#: ``estimator="exact"`` refuses more players than this (2^p coalitions per row).
SAGE_EXACT_LIMIT = 12
_ESTIMATORS = ("permutation", "exact")
_TARGETS = ("y", "output")
_EPS = 1e-12  # probabilities are clipped to [eps, 1 - eps] for the log loss, as the sage package


# ---------------------------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class SageDetails(Details):
    """Details of :func:`jaximp.sage_importance`.

    Attributes
    ----------
    loss : str
    target : {"y", "output"}
        ``"output"``: Shapley effects (the model's own output as the target).
    estimator : {"permutation", "exact"}
    n_permutations : int or None
        Orders of the players the permutation estimator drew (each ``(p - 1) x m`` model
        rows); None for exact.
    converged : bool or None
        Whether the permutation estimator met ``convergence`` (None for exact values).
    convergence_ratio : float or None
        Largest standard error over the range of the values, at the end.
    base_loss : ndarray of shape (o,)
        ``E[loss(y, f_0)]``: the loss of the mean background prediction.
    full_loss : ndarray of shape (o,)
        ``E[loss(y, f(x))]``: the model's loss.
    total : ndarray of shape (o,)
        ``base_loss - full_loss``, which the values sum to (exactly for ``"exact"``).
    normalized : bool
        Whether the values were divided by ``total``.
    n_background : int
    background_rows : ndarray or None
        Rows of X (or of ``background``) sampled as the background; None when all are used.
    sampler : {"antithetic", "iid"} or None
        The permutation estimator's sampler (None for exact values).
    """

    loss: str
    target: str
    estimator: str
    n_permutations: int | None
    converged: bool | None
    convergence_ratio: float | None
    base_loss: np.ndarray
    full_loss: np.ndarray
    total: np.ndarray
    normalized: bool
    n_background: int
    background_rows: np.ndarray | None = None
    sampler: str | None = None


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class SageImportance(FeatureImportance):
    """SAGE values (or Shapley effects) with their standard errors.

    A :class:`FeatureImportance` whose ``importances_std`` holds the standard error of each
    value (the sage package's ``std``): the Monte Carlo error of the permutation estimator
    (its sampler's formula), the spread over the rows for the exact one. There are no repeats
    (``importances`` is None); :meth:`quantiles` and :meth:`intervals` are normal
    (``value +- z * standard error``).
    """

    def quantiles(self, q=(0.025, 0.975)) -> np.ndarray:
        """Normal quantiles ``value + z_q * standard error``, shape (len(q), p, o)."""
        q = np.atleast_1d(np.asarray(q, np.float64))
        if not np.all((q > 0) & (q < 1)):
            raise ValueError(f"q must hold probabilities in (0, 1); got {q.tolist()}.")
        z = np.array([statistics.NormalDist().inv_cdf(float(each)) for each in q])
        return self.importances_mean[None] + z[:, None, None] * self.importances_std[None]

    def to_frame(self, sort: bool = True) -> pd.DataFrame:
        """As :meth:`FeatureImportance.to_frame`, with ``std`` (the standard error) and the
        95% normal interval ``q025``, ``q975``."""
        frame = super().to_frame(sort=False)
        low, high = self.intervals(0.95)
        frame["q025"], frame["q975"] = low.reshape(-1), high.reshape(-1)
        if sort:
            frame = frame.sort_values(["output", "importance"], ascending=[True, False],
                                      kind="stable").reset_index(drop=True)
        return frame


# ---------------------------------------------------------------------------------------------
# The game: coalition values over the background, losses on the host
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Game:
    """What every coalition evaluation needs (internal)."""

    predictor: object
    background: Dataset
    background_weights: np.ndarray  # (m,)
    explained: np.ndarray  # (n, c) float64: the rows of X
    player_columns: np.ndarray  # (p, c) bool
    base: np.ndarray  # (o,) f_0, the weighted mean background prediction
    full: np.ndarray  # (n, o) f(x) on the rows of X
    row_loss: Callable  # (rows (R,), predictions (R, K, o)) -> losses (R, K, o_loss)
    engine: dict
    budget: int
    # the plans of coalitions shared by every row (the exact estimator's), kept while the game
    # is (an Explainer's) up to KEPT_PLAN_BYTES, as Shapley values': a repeated call sends and
    # plans nothing
    shared_plans: dict = dataclasses.field(default_factory=dict, repr=False)

    @functools.cached_property
    def reducer(self) -> Mean:
        """The weighted mean over the background: one object, so that a repeated call's
        plans meet the engine's launch kept for them."""
        return Mean(self.background_weights[None, :])

    def values(self, rows: np.ndarray, coalitions: np.ndarray, label: str) -> np.ndarray:
        """``f_S`` at explained rows: ``coalitions`` (R, K, p) bool, or (K, p) shared by
        every row -> (R, K, o) float64, a group of rows per engine call within the budget."""
        c = self.explained.shape[1]
        p, o = self.player_columns.shape[0], self.predictor.n_outputs
        shared = coalitions.ndim == 2
        k = coalitions.shape[-2]
        out = np.empty((rows.size, k, o))
        if k == 0:
            return out
        # per row and coalition: its value (the engine's float64 result and ours), two int32
        # plan entries and, when not shared, the coalition and its column mask
        per_row_bytes = k * (16 * o + 8 + (0 if shared else p + c))
        group = max(1, min(rows.size, int(self.budget // max(1, per_row_bytes))))

        def plan(part):
            chosen = coalitions if shared else coalitions[part].reshape(-1, p)
            masks = coalition_masks(self.player_columns, chosen)  # (K, c), or (R' K, c)
            item_mask = np.tile(np.arange(k), part.size) if shared else np.arange(part.size * k)
            return at_values(masks, item_mask, self.explained[rows[part]],
                             np.repeat(np.arange(part.size), k))

        for start in range(0, rows.size, group):
            part = np.arange(start, min(rows.size, start + group))
            if shared:
                key = (rows[part].tobytes(), coalitions.shape, coalitions.tobytes())
                kept = self.shared_plans.get(key)
                if kept is None:
                    kept = plan(part)
                    if 8 * (len(self.shared_plans) + 1) * part.size * k <= KEPT_PLAN_BYTES:
                        self.shared_plans[key] = kept
            result = evaluate(self.predictor, self.background, kept if shared else plan(part),
                              self.reducer, label=label, **self.engine)  # (R' K, 1, o)
            out[part] = result[:, 0, :].reshape(part.size, k, o)
        return out

    def chain_losses(self, rows: np.ndarray, inner: np.ndarray) -> np.ndarray:
        """Losses (R, K + 2, o_loss) of the empty coalition, ``inner`` (R, K, o) and the
        full coalition at ``rows``."""
        r, _, o = inner.shape
        chain = np.concatenate([np.broadcast_to(self.base, (r, 1, o)), inner,
                                self.full[rows][:, None, :]], axis=1)
        return self.row_loss(rows, chain)


def _row_loss(spec) -> Callable:
    """Per-row loss of averaged predictions, float64: (rows (R,), preds (R, K, o_model)) ->
    (R, K, o_loss). Regression losses give one column per scored output; classification
    losses one column."""
    columns = list(spec.out_idx)

    def regression(rows, preds):
        with np.errstate(invalid="ignore", divide="ignore"):  # refused below, by name
            terms = target_terms(spec.name, preds[..., columns], spec.y[rows][:, None, :], np)
        check_prediction_range(spec.name, terms)
        return terms

    def soft(rows, preds):  # the cross entropy of the full model's probabilities
        proba, target = preds[..., columns], spec.y[rows][:, None, :]
        if proba.shape[-1] == 1:
            proba = np.concatenate([1 - proba, proba], axis=-1)
            target = np.concatenate([1 - target, target], axis=-1)
        return -(target * np.log(np.clip(proba, _EPS, 1 - _EPS))).sum(axis=-1, keepdims=True)

    def classification(rows, preds):
        proba = preds[..., columns]
        if proba.shape[-1] == 1:  # the probability of the larger of two classes
            proba = np.concatenate([1 - proba, proba], axis=-1)
        codes = spec.y[rows][:, None, None]  # (R, 1, 1)
        if spec.name == "accuracy":  # the zero-one loss: 1 - accuracy
            wrong = np.argmax(proba, axis=-1)[..., None] != codes
            return wrong.astype(np.float64)
        if spec.name == "brier":
            return brier_terms(proba, codes[..., 0], -1, np)[..., None]
        picked = np.take_along_axis(proba, np.broadcast_to(codes, proba.shape[:-1] + (1,)),
                                    axis=-1)
        return -np.log(np.clip(picked, _EPS, 1 - _EPS))

    return {"regression": regression, "soft": soft}.get(spec.task, classification)


def _check_sage_probabilities(spec, base: np.ndarray, n_outputs: int) -> None:
    """Averaging over the background needs probabilities: the checks of permutation
    importance, plus refusals of a column of class labels and of unnormalised scores for
    accuracy (an arg max of averaged logits is not one of averaged probabilities)."""
    if spec.task == "soft":  # the model's own probabilities are the targets
        scored = np.asarray(base, np.float64)[:, list(spec.out_idx)]
        if scored.min() < -1e-6 or scored.max() > 1 + 1e-6:
            raise ValueError(
                f"target='output' with loss='log_loss' needs class probabilities, but the "
                f"model's outputs range over [{scored.min():.3g}, {scored.max():.3g}]; pass "
                "response='logits' for logits, or use loss='mse'.")
        return
    if spec.task != "classification":
        return
    spec.check_probabilities(base, n_outputs)
    scored = np.asarray(base, np.float64)[:, list(spec.out_idx)]
    if spec.classes is not None and scored.shape[1] == 1 and np.all(np.isin(scored,
                                                                             spec.classes)):
        raise ValueError(
            f"loss={spec.name!r}: SAGE averages the model's outputs over background rows, "
            "which needs class probabilities, but the model returns class labels on X; pass "
            "a model that returns probabilities (e.g. predict_proba).")
    if spec.classes is not None and scored.shape[1] == 1 and len(spec.classes) > 2:
        raise ValueError(
            f"the model returns one column and y has {len(spec.classes)} classes; return one "
            "probability column per class.")
    if scored.shape[1] >= 2:
        low, high = float(scored.min()), float(scored.max())
        worst = float(np.abs(scored.sum(axis=1) - 1).max()) if scored.shape[1] == n_outputs \
            else 0.0
        if low < -1e-6 or high > 1 + 1e-6 or worst > 1e-3:
            raise ValueError(
                f"loss={spec.name!r} needs class probabilities, but the model's outputs range "
                f"over [{low:.3g}, {high:.3g}] on X (rows off a sum of 1 by up to "
                f"{worst:.3g}); if they are logits (scores before a softmax), pass "
                "response='logits', which applies a softmax (a sigmoid for one column).")


# ---------------------------------------------------------------------------------------------
# Setup
# ---------------------------------------------------------------------------------------------


def _resolve_sage_loss(loss, target: str):
    """The loss name, checked before any model work."""
    if target == "output":
        name = "mse" if loss is None else canonical_loss(loss)
        if name not in ("mse", "log_loss"):
            raise ValueError(
                "target='output' (Shapley effects) scores the model's output against itself, "
                "with the squared error or, for class probabilities, the cross entropy; got "
                f"loss={loss!r:.60}. Use loss='mse' (or None) or 'log_loss'.")
        return name
    if loss is None:
        return None
    name = canonical_loss(loss)
    if not isinstance(name, str) or name not in SAGE_LOSSES:
        raise ValueError(
            f"SAGE needs a loss that is a mean over rows of a per-row loss, one of "
            f"{SAGE_LOSSES} (or scikit-learn's names for them); got {loss!r:.60}. rmse, "
            "rmsle, medae, r2 and auc do not decompose over rows: use 'mse' for rmse and r2, "
            "'msle' for rmsle, 'mae' for medae.")
    return name


@validate_params(estimator=Choice(*_ESTIMATORS), target=Choice(*_TARGETS),
                 n_permutations=Int(2, none=True), batch_size=Int(2),
                 convergence=Real(0, 1, "neither", none=True),
                 background_size=Int(1, none=True), response=Choice(*RESPONSES),
                 normalize=Flag(none=True), sampler=Choice(*SAMPLERS))
def sage_importance(
    model,
    X,
    y=None,
    *,
    background=None,
    loss: str | None = None,
    target: Literal["y", "output"] = "y",
    estimator: Literal["permutation", "exact"] = "permutation",
    n_permutations: int | None = None,
    sampler: Literal["antithetic", "iid"] = "antithetic",
    convergence: float | None = 0.02,
    batch_size: int = 512,
    background_size: int | None = 100,
    normalize: bool | None = None,
    output=None,
    sample_weight=None,
    response: Literal["probability", "logits"] = "probability",
    random_state: int | jax.Array | None = 0,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> SageImportance:
    """SAGE: the Shapley values of the features' contributions to the model's loss (Covert,
    Lundberg & Lee 2020), or Shapley effects (Owen 2014) with ``target="output"``.

    Coalition S is worth ``v(S) = E[loss(y, f_0)] - E[loss(y, f_S(x_S))]``, where
    ``f_S(x_S)`` is the model's weighted mean over the background rows with the features
    outside S taken from the background (marginal imputation, the sage package's
    ``MarginalImputer``) and ``f_0`` the mean background prediction. Feature ``j``'s value is
    its average marginal contribution ``v(S + j) - v(S)`` over the orders of the features;
    the values sum to ``v(all) = E[loss(y, f_0)] - E[loss(y, f)]``.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        The rows the loss is measured on (typically held-out data).
    y : array of shape (n,) or (n, o), optional
        Targets (numbers for the regression losses, class labels for ``"log_loss"``,
        ``"brier"`` and ``"accuracy"``); not given with ``target="output"``.
    background : array of shape (m, c), DataFrame or Dataset, optional
        Rows that stand in for absent features. Default: the rows of X.
    loss : {"mse", "mae", "mape", "msle", "poisson", "gamma", "log_loss", "brier", "accuracy"}
        A per-row loss of the averaged prediction (scikit-learn's and R's names for them are
        accepted; ``"poisson"`` and ``"gamma"`` are unit deviances of a predicted mean).
        Default ``"mse"``, or ``"log_loss"`` (the sage package's ``"cross entropy"``) for a
        classifier scored against class labels. ``"accuracy"`` is scored as the zero-one
        loss, so values are gains in accuracy. Log loss clips probabilities to
        ``[1e-12, 1 - 1e-12]`` as the sage package. Losses that do not average over rows
        (rmse, rmsle, medae, r2, auc, callables) are refused.
    target : {"y", "output"}, default "y"
        ``"output"``: Shapley effects, the game with the model's own output ``f(x)`` as the
        target and the squared error as the loss (the sage package's ``Y=None``); then
        ``v(S) = Var(E[f | x_S])`` for independent features. With ``loss="log_loss"`` the
        loss is the cross entropy of the model's own class probabilities (soft labels, as
        the sage package's cross entropy with ``Y=None``).
    estimator : {"permutation", "exact"}, default "permutation"
        ``"exact"`` enumerates all 2^p coalitions at every row of X (at most 12 players):
        exact values given the rows and the background; standard errors over rows.
        ``"permutation"``: Monte Carlo over orders of the players (see ``sampler``).
    n_permutations : int, optional
        Most orders of the players the permutation estimator draws (rounded up to an even
        number for ``sampler="antithetic"``). Default: until convergence, with a warning past
        :data:`SAGE_MAX_PERMUTATIONS` (2^20) orders.
    sampler : {"antithetic", "iid"}, default "antithetic"
        How the permutation estimator picks rows and orders; both estimate the same values
        (the weighted mean over the rows of X of each row's Shapley values of its loss).
        ``"iid"`` is the sage package's ``PermutationEstimator``: a row drawn with
        replacement (in proportion to its weight) and a random order per sample, standard
        error ``sqrt(sum (score - mean)^2) / N``. ``"antithetic"`` (default) visits the rows
        in passes over a shuffle of the rows: 32 pilot rows first get a pair each (an order
        and its reverse), then a second each (``convergence`` is not tested before: the
        spread within rows is unknown until then), then pass 0 scores a random order at each other row, pass 1
        its reverse at the same row, and each later pass (a fresh shuffle) an order and its
        reverse per visit; the estimate is the mean over the visited rows of their pairs'
        mean scores (the pass-0 score until the pair is complete; a weighted row's scaled by
        its weight over the mean weight). The reverse order gives every player the
        coalition the forward order left out, which cancels most of the spread of the
        scores within a row, and using every row equally often removes the spread between
        rows, which dominates the iid sampler's error. Its standard error is that of this
        design: the spread between rows with the finite-population correction while pass 0
        runs, plus the spread within rows, estimated at the pilot rows and the rows with two
        pairs or more. Up to about ``n`` orders it behaves as the iid sampler (rows drawn
        without replacement); past ``n`` the spread between rows is gone. On the 10-feature
        MLP of ``benchmarks/sage.py`` (1,000 rows) the variance per order of the feature
        with the largest error was 35 times smaller than the iid sampler's once every row
        had a pair.
    convergence : float in (0, 1) or None, default 0.02
        Stop when the largest standard error is below ``convergence`` times the range (max -
        min) of the values, checked after every batch: the sage package's ``thresh``. Its
        default is 0.025 (``convergence=0.025`` stops where it stops); jaximp's is a little
        stricter. None: draw exactly ``n_permutations``.
    batch_size : int, default 512
        Orders per batch (the sage package's default): each batch is one engine evaluation
        of ``batch_size x (p - 1)`` coalitions over the background, chunked by the memory
        budget.
    background_size : int or None, default 100
        A background with more rows is subsampled to this many, without replacement, from
        ``random_state`` (as :func:`shapley_values`); None keeps every row.
    normalize : bool, optional
        Divide values and standard errors by ``v(all)`` (so they sum to 1). Default: True for
        ``target="output"`` (Owen's Shapley effects, shares of ``E[(f - f_0)^2]``, which is
        ``Var(f)`` when the background is X), False for ``target="y"`` (the sage package's
        values, in units of the loss). ``normalize=False`` with ``target="output"`` gives the
        sage package's Shapley effects.
    output : int, str or list, optional
        Model outputs the loss sees (default all); regression losses give one value per
        output, classification losses read the selected columns as class probabilities.
    sample_weight : array of shape (n,), optional
        Case weights of the rows of X: weighted means over rows (exact), rows drawn in
        proportion to them (permutation).
    response : {"probability", "logits"}, default "probability"
        What a classifier's columns hold; ``"logits"`` applies a softmax (a sigmoid for one
        column) before averaging over the background. Probabilities are checked on X as
        :func:`permutation_importance` checks them, and a column of class labels is refused
        (their average over the background is no label).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Background subsample, sampled rows and orders.
    feature_names, categorical, groups
        Data description (see :func:`jaximp.as_dataset`); a group is one player.
    variables, memory_budget, progress
        As in :func:`jaximp.permutation_importance`.

    Returns
    -------
    SageImportance
        ``importances_mean`` (p, o) values, ``importances_std`` (p, o) their standard errors
        (the sage package's ``std``), ``intervals()`` normal intervals; ``method`` is
        ``"sage"`` or ``"shapley_effects"``; ``info`` (:class:`SageDetails`) holds the loss,
        the estimator, samples drawn, convergence, ``base_loss``, ``full_loss`` and ``total``.

    Notes
    -----
    Cost: ``(p - 1) x m`` model rows per order (``m`` background rows; the empty and full
    coalitions are known without the background: the sage package evaluates them over it,
    ``(p + 1) x m``), plus one prediction per row of X; exact: ``n x (2^p - 2) x m``.

    References
    ----------
    Covert, Lundberg & Lee (2020), "Understanding global feature contributions with additive
    importance measures", NeurIPS.
    Owen (2014), "Sobol' indices and Shapley value", SIAM/ASA J. Uncertainty Quantification 2.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> y = X @ np.array([2.0, 1.0, 0.0])
    >>> sage = sage_importance(lambda X: X @ jnp.array([2.0, 1.0, 0.0]), X, y,
    ...                        estimator="exact", background_size=50)
    >>> np.abs(np.round(sage.importances_mean[:, 0] / np.var(X, axis=0), 1))  # beta^2
    array([4., 1., 0.])
    """
    loss_name = _resolve_sage_loss(loss, target)
    if n_permutations is None and convergence is None and estimator == "permutation":
        raise ValueError("give n_permutations, convergence or both: with neither the "
                         "permutation estimator would never stop.")
    if target == "output" and y is not None:
        raise ValueError("target='output' uses the model's own output as the target; got y "
                         "as well. Pass y=None, or target='y' to score against y.")
    key_background, key_rest = jax.random.split(as_key(random_state))
    dataset, predictor, background = prepare_explained(
        model, X, background, feature_names=feature_names, categorical=categorical,
        groups=groups, sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress)
    players = dataset.resolve(None)
    p = len(players)
    if estimator == "exact" and p > SAGE_EXACT_LIMIT:
        raise ValueError(
            f"estimator='exact' handles at most {SAGE_EXACT_LIMIT} features or groups (2^p "
            f"coalitions per row); got {p}. Use estimator='permutation' or groups.")
    spec = None
    if target == "y":  # targets and loss checked before any model evaluation
        target_values = check_target(y, dataset.n_rows, dataset.source)
        if loss_name is None:
            loss_name = "log_loss" if class_labels(predictor, target_values) else "mse"
        spec = resolve_loss(loss_name, target_values, predictor, output, dataset.weights)
    if response == "logits" and loss_name not in ("log_loss", "brier", "accuracy"):
        raise ValueError(f"response='logits' turns a classifier's logits into probabilities "
                         f"for the losses 'log_loss', 'brier' and 'accuracy'; got "
                         f"loss={loss_name!r}.")
    bg = dataset if background is None else background_dataset(
        background, dataset, None, categorical, groups, predictor=predictor)
    warn_unresolved_values(predictor, bg)  # the rows that fill absent features
    if response == "logits":
        predictor = logits_to_probabilities(predictor)
    engine = {"memory_budget": memory_budget, "progress": progress}
    weights = np.ones(dataset.n_rows) if dataset.weights is None else dataset.weights

    kept, background_rows = bg, None
    if background_size is not None and bg.n_rows > background_size:
        background_rows = sample_rows(key_background, bg.n_rows, background_size)
        kept = rows_of(bg, background_rows)

    def predictions():
        """The model on the rows of X and of the background, float64: (n, o), (m, o)."""
        return tuple(predict_rows(predictor, rows, **engine).astype(np.float64)
                     for rows in (dataset, kept))

    # a model that can change in place (a host model refitted, a module trained in place) is
    # called again: its predictions key the kept game, which depends on the model through them
    current = predictions() if predictor.stateful else None

    def build(spec):
        """The game and the losses of its empty and full coalitions: kept on an Explainer
        for its repeats, as permutation importance keeps its plans."""
        full, background_predictions = current or predictions()
        if spec is None:  # Shapley effects: the model's own output is the target
            target_values = full[:, select_outputs(predictor.output_names, output)]
            spec = resolve_loss("mse", target_values, predictor, output, dataset.weights)
            if loss_name == "log_loss":  # soft labels: the sage package's Y=None
                spec = dataclasses.replace(spec, name="log_loss", task="soft")
        _check_sage_probabilities(spec, full, predictor.n_outputs)
        bg_weights = np.ones(kept.n_rows) if kept.weights is None else kept.weights
        base = np.einsum("m,mo->o", bg_weights, background_predictions) / bg_weights.sum()
        player_columns = np.zeros((p, dataset.n_columns), bool)
        for j, feat in enumerate(players):
            player_columns[j, list(feat.columns)] = True
        game = _Game(predictor, kept, bg_weights, dataset.X, player_columns, base, full,
                     _row_loss(spec), engine, resolve_budget(memory_budget))
        ends = game.chain_losses(np.arange(dataset.n_rows),
                                 np.zeros((dataset.n_rows, 0, predictor.n_outputs)))
        losses = [np.einsum("n,no->o", weights, ends[:, i]) / weights.sum() for i in (0, 1)]
        losses.append(losses[0] - losses[1])  # v(all)
        for array in losses:  # kept for repeated calls, and handed out in every result
            array.flags.writeable = False
        return spec, game, *losses

    spec, game, base_loss, full_loss, total = cached_stage(
        dataset, ("SAGE game", predictor, target, loss_name, output, bg, background_size,
                  tuple(key_bits(key_background)), memory_budget, progress,
                  digest(spec.y) if spec is not None and dataset.pinned else None,
                  None if current is None else tuple(map(digest, current))),
        functools.partial(build, spec))
    if estimator == "exact" or p == 1:
        values, errors = exact_values(game, weights)
        drawn, converged, ratio = None, None, None
        estimator = "exact"
    else:
        values, errors, drawn, converged, ratio = sampled_values(
            game, key_rest, weights, n_permutations, convergence, batch_size, sampler)
    if normalize is None:
        normalize = target == "output"
    if normalize:
        if np.any(total <= 0):
            raise ValueError(
                f"normalize=True divides by v(all) = E[loss(y, f_0)] - E[loss(y, f)], which is "
                f"{total.tolist()} (not positive): the model does no better than its mean "
                "prediction. Use normalize=False.")
        values, errors = values / total[None], errors / total[None]
    return SageImportance(
        method="shapley_effects" if target == "output" else "sage",
        feature_names=tuple(f.name for f in players),
        output_names=spec.result_names(values.shape[1]),
        importances_mean=values,
        importances_std=errors,
        info=keep_layout(SageDetails(
            loss=spec.name, target=target, estimator=estimator, n_permutations=drawn,
            converged=converged, convergence_ratio=None if ratio is None else float(ratio),
            base_loss=base_loss, full_loss=full_loss, total=total, normalized=bool(normalize),
            n_background=game.background.n_rows, background_rows=background_rows,
            sampler=None if estimator == "exact" else sampler), dataset, players),
    )
