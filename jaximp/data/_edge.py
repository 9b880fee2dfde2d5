"""Edge code shared by the PD-based methods and the H-statistic: feature pairs and triples,
the bootstrap's row weightings and the summaries of replicated estimates."""

from __future__ import annotations

import functools
import itertools

import jax
import numpy as np
import pandas as pd

from jaximp.kernels import _pd_stats as K

from ._data import Dataset, Feature, as_dataset
from ._params import Replicates

__all__ = ["as_rows", "check_n_bootstrap", "numeric_matrix", "replicate_weights", "resolve_feature_sets",
           "resolve_pairs", "replicate_quantiles", "replicate_spread", "row_weights",
           "summaries"]


def as_rows(X, width: int | None, columns=None):
    """One example given as a vector, a pandas Series or a 1-D array of ``width`` values, as
    one row (shap's convention for explaining a single row); an array of rows with
    ``columns`` (a DataFrame background's) as a DataFrame of those columns; anything else as
    it is.

    Examples
    --------
    >>> as_rows(np.array([1.0, 2.0]), 2).shape
    (1, 2)
    >>> as_rows(pd.Series({"a": 1.0, "b": "u"}), None)
         a  b
    0  1.0  u
    >>> row = as_rows(np.array([1.0, "u"], dtype=object), 2, ["a", "b"])
    >>> row.columns.tolist(), row["a"].dtype
    (['a', 'b'], dtype('float64'))
    """
    if isinstance(X, pd.Series):
        return pd.DataFrame([X.to_list()], columns=X.index)
    if isinstance(X, np.ndarray) and X.ndim == 1 and width is not None and X.size == width:
        X = X[None]
    if columns is not None and isinstance(X, np.ndarray) and X.ndim == 2 and (
            X.shape[1] == len(columns)):
        return pd.DataFrame(X, columns=list(columns)).infer_objects()
    return X


def check_n_bootstrap(n_bootstrap) -> int:
    Replicates().check("n_bootstrap", n_bootstrap)
    return int(n_bootstrap)


def resolve_pairs(
    dataset: Dataset, chosen: list[Feature], pairs, reference, *, allow_int: bool = False
) -> list[tuple[Feature, Feature]] | int:
    """Feature pairs from ``pairs`` ("all", a list of pairs, or an int m) and ``reference``.

    An int is returned as is (the caller picks the top-m features later).
    """
    if reference is not None:
        if not (isinstance(pairs, str) and pairs == "all"):
            raise ValueError(
                f"give either pairs or reference, not both; got pairs={pairs!r} with "
                f"reference={reference!r}."
            )
        ref = dataset.feature(reference)
        others = [f for f in chosen if f.name != ref.name]
        if not others:
            raise ValueError(
                f"reference {ref.name!r} needs at least one other feature in features; got "
                f"{[f.name for f in chosen]}."
            )
        return [(ref, f) for f in others]
    if isinstance(pairs, str):
        if pairs != "all":
            extra = ", or an int m" if allow_int else ""
            raise ValueError(f"pairs must be 'all', a list of feature pairs{extra}; got {pairs!r}.")
        if len(chosen) < 2:
            raise ValueError(
                f"pairs='all' needs at least 2 features; got {[f.name for f in chosen]}."
            )
        return list(itertools.combinations(chosen, 2))
    if allow_int and isinstance(pairs, (int, np.integer)) and not isinstance(pairs, bool):
        if pairs < 2:
            raise ValueError(
                f"pairs as an int is the number m of top features whose pairs are computed; it "
                f"must be >= 2; got {pairs}."
            )
        return int(pairs)
    return resolve_feature_sets(
        dataset, pairs, 2,
        "pairs must be 'all'"
        f"{', an int m' if allow_int else ''} or a non-empty list of feature pairs such as "
        f"[('x1', 'x2')]; got {pairs!r}.",
        "a pair must hold two different features",
    )


def resolve_feature_sets(dataset: Dataset, listed, size: int, shape_error: str,
                         distinct_error: str) -> list[tuple[Feature, ...]]:
    """A non-empty list of ``size``-tuples of distinct feature names as Feature tuples; one
    set given alone, as ``("x1", "x2")``, is a list of that one set."""
    single = (str, int, np.integer)
    if isinstance(listed, (tuple, list)) and listed and all(isinstance(x, single)
                                                            for x in listed):
        if len(listed) != size:
            raise ValueError(shape_error)
        listed = [listed]
    try:
        listed = [tuple(item) for item in listed]
    except TypeError:
        listed = None
    if not listed or any(len(item) != size for item in listed):
        raise ValueError(shape_error)
    resolved = []
    for item in listed:
        feats = tuple(dataset.feature(name) for name in item)
        if len({f.name for f in feats}) != size:
            raise ValueError(f"{distinct_error}; got {item!r}.")
        resolved.append(feats)
    seen = [frozenset(f.name for f in feats) for feats in resolved]
    if len(set(seen)) != len(seen):
        twice = next(sorted(names) for names in seen if seen.count(names) > 1)
        raise ValueError(f"the feature set {tuple(twice)} is listed more than once.")
    return resolved


def numeric_matrix(X, feature_names, what: str) -> tuple[Dataset, np.ndarray]:
    """The dataset and its float64 (n, p) matrix of numeric one-column features, or a ValueError
    saying which features are categorical or grouped (``what`` names the method)."""
    dataset = as_dataset(X, feature_names=feature_names)
    odd = [f.name for f in dataset.features if f.is_categorical or len(f.columns) != 1]
    if odd:
        raise ValueError(
            f"{what} numeric features of one column each; {odd} are categorical or grouped. "
            "Encode them as numbers first."
        )
    return dataset, np.asarray(dataset.X, np.float64)


def row_weights(dataset: Dataset) -> np.ndarray:
    return np.ones(dataset.n_rows) if dataset.weights is None else dataset.weights


@functools.partial(jax.jit, static_argnames=("n", "n_replicates"))
def _bootstrap_counts(key, n, n_replicates):
    return jax.vmap(lambda k: K.bootstrap_counts(k, n))(jax.random.split(key, n_replicates))


def replicate_weights(weights: np.ndarray, n_bootstrap: int, key) -> tuple[np.ndarray, np.ndarray]:
    """(1 + r, n) row weights: the case weights, then one row per bootstrap replicate.

    Replicate ``r`` draws the rows with equal probability (one key per replicate, split from
    ``key``) and keeps their case weights: ``counts[r] * weights``, as
    :func:`jaximp.kernels.bootstrap_weights`.
    """
    if n_bootstrap == 0:
        return weights[None, :], np.zeros((0, weights.size), np.int32)
    counts = np.asarray(_bootstrap_counts(key, weights.size, n_bootstrap))
    return np.concatenate([weights[None, :], counts * weights[None, :]]), counts


def mean_abs_over_rows(values: np.ndarray, weights, n_bootstrap: int, key):
    """Weighted mean of ``|values|`` over the rows (axis 0) and its row-bootstrap replicates:
    ``summaries`` of the (..., 1 + r) estimates, ``...`` the trailing shape of ``values``.
    The global importance of per-row attributions (Shapley values, gradients), whose
    intervals cost no model evaluation."""
    Replicates().check("n_bootstrap", n_bootstrap)
    n = values.shape[0]
    weights = np.ones(n) if weights is None else np.asarray(weights, np.float64)
    weightings, _ = replicate_weights(weights, int(n_bootstrap), key)  # (1 + r, n)
    means = weightings @ np.abs(values).reshape(n, -1) / weightings.sum(axis=1, keepdims=True)
    return summaries(np.moveaxis(means.reshape(-1, *values.shape[1:]), 0, -1))


def summaries(estimates: np.ndarray):
    """Point estimate, bootstrap std and replicates from (..., 1 + r) estimates.

    The std is over replicates with ``ddof=0``, the one convention of every ``*_std`` field
    (scikit-learn's ``importances_std``); results' ``std(ddof=1)`` gives R's ``sd()``."""
    point = estimates[..., 0]
    if estimates.shape[-1] == 1:
        return point, None, None
    replicates = estimates[..., 1:]
    return point, replicate_spread(replicates), replicates


def replicate_spread(replicates: np.ndarray, ddof: int = 0) -> np.ndarray:
    """Standard deviation over the last axis; replicates that are infinite (an H-statistic
    of a flat joint PD) give 0 when all are equal and inf when they differ, not NaN.

    Examples
    --------
    >>> replicate_spread(np.array([[1.0, 3.0], [np.inf, np.inf], [1.0, np.inf]]))
    array([ 1.,  0., inf])
    """
    finite = np.isfinite(replicates).all(axis=-1)
    with np.errstate(invalid="ignore"):
        std = replicates.std(axis=-1, ddof=ddof)
    same = (replicates == replicates[..., :1]).all(axis=-1)
    return np.where(finite, std, np.where(same, 0.0, np.inf))


def replicate_quantiles(replicates: np.ndarray, q) -> np.ndarray:
    """Quantiles ``q`` over the last axis (NumPy's linear rule), shape (len(q), ...); where
    an order statistic is infinite, the interpolation is its limit (NumPy's gives NaN): the
    infinite bound itself, or the finite one where the position falls on it.

    Examples
    --------
    >>> replicate_quantiles(np.array([[1.0, 3.0], [2.0, np.inf], [np.inf, np.inf]]), [0.5])
    array([[ 2., inf, inf]])
    """
    q = np.asarray(q, np.float64)
    with np.errstate(invalid="ignore"):
        linear = np.quantile(replicates, q, axis=-1)
    low = np.quantile(replicates, q, axis=-1, method="lower")
    high = np.quantile(replicates, q, axis=-1, method="higher")
    position = q * (replicates.shape[-1] - 1)
    fraction = (position - np.floor(position)).reshape((-1,) + (1,) * (low.ndim - 1))
    limit = np.where(low == high, low, np.where(fraction == 0, low, np.where(
        np.isinf(high), high, low)))  # an infinite low bound only: -inf, its limit
    return np.where(np.isfinite(low) & np.isfinite(high), linear, limit)
