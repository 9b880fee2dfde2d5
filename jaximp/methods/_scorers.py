"""Permutation importance scored by scikit-learn scorer callables ``scorer(estimator, X, y)``.

A scorer calls the estimator itself, so it cannot be batched: each permuted copy of the user's
own data (a DataFrame keeps its dtypes) goes to it in turn, on the host. The permutations are
the engine's (:func:`jaximp.engine.plan_source_rows` of the same plan), so a scorer and the
loss of the same name give the same differences. A ratio is ``score_orig / score_perm``, the
ratio of a score, not the named loss's ``loss_perm / loss_orig``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..data import Dataset
from ..engine import plan_source_row_blocks, resolve_budget
from ..results import FeatureImportance, PermutationDetails, mean_and_std
from ._setup import keep_layout

__all__ = ["has_scorer", "scorer_importances"]


def has_scorer(scoring) -> bool:
    """Whether ``scoring`` (one scoring, or a dict of them) holds a callable scorer."""
    values = scoring.values() if isinstance(scoring, Mapping) else [scoring]
    return any(callable(each) and not isinstance(each, str) for each in values)


def _scorers(scoring) -> tuple[dict, bool]:
    """``{name: scorer}`` and whether they came as a dict (a scoring name in it becomes
    scikit-learn's scorer of that name)."""
    if not isinstance(scoring, Mapping):
        return {"score": scoring}, False
    from sklearn.metrics import get_scorer

    return {name: get_scorer(each) if isinstance(each, str) else each
            for name, each in scoring.items()}, True


def _permuted(source, rows: np.ndarray, columns) -> object:
    """A copy of ``source`` (a DataFrame or array, (n, c)) whose ``columns`` of row ``i`` are
    those of row ``rows[i]``."""
    if isinstance(source, pd.DataFrame):
        out = source.copy()
        for j in columns:
            taken = source.iloc[rows, j]
            taken.index = out.index
            out[out.columns[j]] = taken
        return out
    out = np.array(source, copy=True)
    out[:, list(columns)] = out[rows][:, list(columns)]
    return out


def _call(scorer, model, X, y, weights) -> dict:
    """The scorer's value(s) as ``{name: float}`` (a scorer may return a dict of scores);
    ``sample_weight`` is passed only when given, as scikit-learn does."""
    value = scorer(model, X, y) if weights is None else scorer(model, X, y,
                                                               sample_weight=weights)
    scores = value if isinstance(value, Mapping) else {None: value}
    try:
        return {k if k is None else str(k): float(v) for k, v in scores.items()}
    except (TypeError, ValueError):
        raise ValueError(f"a scorer must return a number, or a dict of names to numbers; "
                         f"{scorer!r:.60} returned {value!r:.80}.") from None


def scorer_importances(model, dataset: Dataset, y, chosen, plan, rows, kind: str,
                       n_repeats: int, scoring, memory_budget):
    """Permutation importances of the scorers ``scoring`` (one, or a dict of names to
    scorers and scoring names) over the items of ``plan`` (item 0 the intact data), on the
    rows ``rows`` of the user's data (None: all). ``y`` and the weights are the user's.

    Importance is ``score_orig - score_perm`` (scikit-learn's), or ``score_orig /
    score_perm`` for ``kind="ratio"``."""
    scorers, several = _scorers(scoring)
    source = dataset.source
    if rows is not None:
        y = y.iloc[rows] if isinstance(y, (pd.Series, pd.DataFrame)) else np.asarray(y)[rows]
    weights = dataset.weights
    n = dataset.n_rows
    columns = [feat.columns for feat in chosen for _ in range(n_repeats)]
    scores = {}  # (scorer name, returned key) -> (items,)
    # the items' source rows, (items, n), drawn a budget's worth at a time
    blocks = plan_source_row_blocks(plan, n, resolve_budget(memory_budget))
    for k, rows_k in enumerate(row for block in blocks for row in block):
        X = source if k == 0 else _permuted(source, rows_k, columns[k - 1])
        for name, scorer in scorers.items():
            for key, value in _call(scorer, model, X, y, weights).items():
                scores.setdefault((name, key), []).append(value)
    p = len(chosen)
    results = {}
    for (name, key), values in scores.items():
        values = np.asarray(values, np.float64)
        base, permuted = values[0], values[1:].reshape(p, 1, n_repeats)
        if kind in ("ratio", "relative"):
            with np.errstate(divide="ignore", invalid="ignore"):
                importances = base / permuted - (kind == "relative")
        elif kind == "raw":  # the permuted score, as the scorer returns it
            importances = permuted
        else:
            importances = base - permuted
        mean, std = mean_and_std(importances)
        label = key if key is not None else name
        results[label] = FeatureImportance(
            method="permutation", feature_names=tuple(f.name for f in chosen),
            output_names=("score",), importances_mean=mean, importances_std=std,
            importances=importances,
            info=keep_layout(PermutationDetails(
                loss=str(label), kind=kind, baseline=np.array([base]), n_repeats=n_repeats,
                n_samples=n, sample_rows=rows), dataset, chosen))
    if several or any(key is not None for _, key in scores):
        return results
    return results["score"]
