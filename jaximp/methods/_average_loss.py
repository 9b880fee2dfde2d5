"""The model's average loss on data, overall or by group of rows (R hstats' ``average_loss``)."""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
import pandas as pd

from ..data import Flag, Int, validate_params
from ..engine import LossSums, predict_rows
from ._loss import (
    canonical_loss,
    check_response,
    check_target,
    default_loss,
    logits_to_probabilities,
    resolve_loss,
    row_loss_terms,
    scored_predictor,
    weighted_loss_metrics,
)
from ._row_groups import row_groups
from ._setup import prepare

__all__ = ["average_loss"]


@validate_params(by_size=Int(1), as_score=Flag())
def average_loss(
    model,
    X,
    y,
    *,
    loss=None,
    by=None,
    by_size: int = 4,
    as_score: bool = False,
    output=None,
    sample_weight=None,
    response: Literal["probability", "logits"] = "probability",
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """The model's (weighted) average loss on ``X, y``, overall or by group of rows.

    R hstats' ``average_loss``: the loss of the model's predictions, the quantity permutation
    importance perturbs (its ``info["baseline"]``; for a score, ``1 -`` it unless
    ``as_score=True``), for every group of ``by``.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
    y : array of shape (n,) or (n, o)
    loss : str or callable, optional
        A loss of :func:`permutation_importance` (its names, scikit-learn's and R's), default
        as there. A score (``"r2"``, ``"accuracy"``, ``"auc"``) is reported as the loss
        ``1 - score`` (hstats' ``"classification_error"`` for accuracy, dalex's ``"1-auc"``)
        unless ``as_score=True``.
    by : str or array of shape (n,), optional
        Groups of rows (hstats' ``BY``): a column of X by name or position, or one value per
        row (read by position); a numeric grouping with more than ``by_size`` distinct values
        is cut at its type-1 quantiles, as in :func:`partial_dependence`; missing values
        form a last group of their own (hstats' ``NA`` group). A group scores its
        own rows: a group without weight, R^2 of a constant group and AUC of a group without
        every class are refused.
    by_size : int, default 4
    as_score : bool, default False
        Report the scores themselves.
    output, sample_weight, response
        As in :func:`permutation_importance`.
    feature_names, categorical, groups, variables, memory_budget, progress
        As in :func:`permutation_importance`.

    Returns
    -------
    pandas.DataFrame
        One row per group (``"all"`` without ``by``), one column per scored output (``"y"``
        for a classification loss).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.arange(8.0).reshape(4, 2)
    >>> y = np.array([1.0, 5.0, 9.0, 14.0])
    >>> table = average_loss(lambda X: X[:, 0] + X[:, 1], X, y, by=np.array([0, 0, 1, 1]))
    >>> table.index.tolist(), table["y"].tolist()
    ([0, 1], [0.0, 0.5])
    """
    if loss is not None:
        check_response(response, loss)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress, allow_missing=True)
    n = dataset.n_rows
    target = check_target(y, n, dataset.source)
    if loss is None:
        loss = default_loss(predictor, target)
        check_response(response, loss)
    loss = canonical_loss(loss)
    weights = np.ones(n) if dataset.weights is None else dataset.weights
    labels, codes = (["all"], np.zeros(n, np.int64)) if by is None else row_groups(
        by, dataset, by_size, weights)
    in_group = codes[None] == np.arange(len(labels))[:, None]  # (G, n)
    # the predictor the loss scores first (a scikit-learn classifier's accuracy: predict)
    predictor = scored_predictor(predictor, model, [loss], response, output, dataset)
    if response == "logits":
        predictor = logits_to_probabilities(predictor)
    spec = resolve_loss(loss, target, predictor, output, dataset.weights)
    _check_groups(spec, labels, in_group & (weights > 0))
    predictions = predict_rows(predictor, dataset, memory_budget=memory_budget,
                               progress=progress)
    reducer = spec.reducer(lambda: predictions, predictor.n_outputs)  # checks probabilities
    if isinstance(reducer, LossSums):  # per-row terms, weighted by group, on the host
        terms = row_loss_terms(reducer, predictions[None])  # (1, n, k)
        values = weighted_loss_metrics(reducer, terms, weights[None] * in_group)[0]
    else:  # AUC, the median absolute error, a callable: each group's rows
        # (the targets as coded for all rows: a group may lack a class)
        values = np.concatenate([
            dataclasses.replace(spec, y=spec.y[members], weights=weights[members]).values(
                predictions[None, members]) for members in in_group])
    if spec.bounded and not as_score:
        values = 1.0 - values
    return pd.DataFrame(values, index=pd.Index(labels, name=None if by is None else "group"),
                        columns=list(spec.result_names(values.shape[1])))


def _check_groups(spec, labels: list, scored: np.ndarray) -> None:
    """Refuse a group where the loss is undefined, naming it: R^2 of a constant y, AUC
    without every class (both classes of a binary problem)."""
    for label, rows in zip(labels, scored):
        target = spec.y[rows]
        if spec.name == "r2" and np.any(np.ptp(target, axis=0) == 0):
            raise ValueError(
                f"loss='r2' is undefined in group {label!r}: y does not vary on its rows (its "
                "total sum of squares is 0). Use loss='mse', or fewer groups (by_size).")
        needed = max(2, len(spec.out_idx))
        if spec.name == "auc" and np.unique(target).size < needed:
            raise ValueError(
                f"loss='auc' needs all {needed} classes in y in every group; group {label!r} "
                f"has {np.unique(target).size}. Use fewer groups (by_size) or "
                "loss='log_loss'.")
