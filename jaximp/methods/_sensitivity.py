"""Sensitivity-analysis importance of Huh and Lee (2003).

Random variant: for feature ``j`` and every row ``i``, the model is evaluated with ``x_ij``
replaced by two values drawn from the observed values of feature ``j``; ``D_j`` is the mean
absolute difference of the two predictions and ``Imp_j = D_j / D_y``, with ``D_y`` the mean
absolute difference of ``N`` random pairs of observed targets. Both draws of every feature and
repeat are items of one engine call (per-row replacement rows).

Max variant (SPSS Clementine's, which the paper compares with): each row's largest prediction
difference over five equally spaced values of the feature's range (every level of a
categorical feature), averaged over rows and divided by the range of ``y``.
"""

from __future__ import annotations

from typing import Literal

import jax
import numpy as np

from ..data import (
    Choice,
    Dataset,
    Feature,
    Int,
    as_key,
    select_outputs,
    validate_params,
)
from ..engine import Spread, at_drawn_rows, at_values, evaluate, key_bits, rng_stream
from ..results import FeatureImportance, SensitivityDetails
from ._loss import check_target, class_labels, one_hot_targets
from ._setup import cached_stage, keep_layout, prepare

__all__ = ["sensitivity_importance"]

_VARIANTS = ("random", "max")


def _draw(rng: np.random.Generator, n: int, prob: np.ndarray | None, shape) -> np.ndarray:
    """Indices of rows 0..n-1 drawn with replacement, uniformly or with probabilities ``prob``
    (rows of probability 0 are never drawn)."""
    if prob is None:
        return rng.integers(0, n, size=shape)
    return rng.choice(n, size=shape, replace=True, p=prob)


def _max_values(dataset: Dataset, feature: Feature, n_values: int,
                weighted: np.ndarray) -> np.ndarray:
    """Replacement rows (g, len(columns)) of the max variant for one feature, spanning the
    rows of positive weight (``weighted``, (n,) bool)."""
    columns = dataset.X[weighted][:, list(feature.columns)]
    if feature.kind == "onehot":
        return np.eye(len(feature.columns))
    if len(feature.columns) > 1:
        raise ValueError(
            f"variant='max' needs single columns or one-hot groups; feature {feature.name!r} "
            f"is a group of {len(feature.columns)} columns that is not one-hot."
        )
    if feature.kind == "categorical":
        return np.unique(columns[:, 0])[:, None]
    return np.linspace(np.nanmin(columns), np.nanmax(columns), n_values)[:, None]


@validate_params(variant=Choice(*_VARIANTS), n_repeats=Int(1), n_pairs=Int(1, none=True),
                 n_values=Int(2))
def sensitivity_importance(
    model,
    X,
    y,
    *,
    variant: Literal["random", "max"] = "random",
    n_repeats: int = 10,
    n_pairs: int | None = None,
    n_values: int = 5,
    features=None,
    output=None,
    sample_weight=None,
    random_state: int | jax.Array = 0,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> FeatureImportance:
    """Sensitivity-analysis importance ``D_p / D_y`` of Huh and Lee (2003).

    ``D_p = mean_i |f(x_i; x_ip = x*) - f(x_i; x_ip = x**)|`` with ``x*``, ``x**`` drawn from
    the observed values of feature ``p`` for each row; ``D_y = mean_k |y*_k - y**_k|`` over
    ``N`` random pairs of observed targets. For a linear model it estimates the standardized
    coefficient ``|b_p| sd(x_p) / sd(y)`` (exactly so for normal inputs and target).

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
    y : array of shape (n,) or (n, o)
        Numeric targets, one column per scored model output.
    variant : {"random", "max"}, default "random"
        ``"random"``: the measure above, averaged over ``n_repeats`` repeats (each with its own
        draws and its own ``D_y``). ``"max"``: for each row the largest difference of the
        predictions over ``n_values`` equally spaced values between the feature's minimum and
        maximum (every level of a categorical or one-hot feature), averaged over rows and
        divided by ``max(y) - min(y)``; deterministic.
    n_repeats : int, default 10
        Repeats of the random variant (the paper uses 10).
    n_pairs : int, optional
        Target pairs ``N`` for ``D_y`` per repeat; default ``10 n`` as in the paper.
    n_values : int, default 5
        Grid size of the max variant for continuous features.
    features : str, int or list, optional
        Features (or groups, whose columns are drawn together from one row) to score.
    output : int, str or list, optional
        Model outputs to score (default all); ``y`` needs one column per scored output.
    sample_weight : array of shape (n,), optional
        Case weights: rows and target pairs are drawn with probability proportional to them,
        and ``D_p`` is a weighted mean over rows; the max variant's grids and
        ``max(y) - min(y)`` span the rows of positive weight (a row of weight 0 is absent).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        The draws of feature ``j`` (its position in ``X``) are computed on the device from the
        key, the label ``(j, repeat, draw)`` and the row number; the target pairs come from a
        NumPy generator seeded with the key's bits: results do not depend on chunking, devices
        or on which other features are scored.
    feature_names, categorical, groups, variables, memory_budget, progress
        As in :func:`permutation_importance`.

    Returns
    -------
    FeatureImportance
        Random variant: ``importances`` (p, o, r), their mean and standard deviation; ``info``
        holds ``D_p`` (p, o, r) and ``D_y`` (o, r). Max variant: ``importances_mean`` only;
        ``info`` holds ``D_p`` (p, o) and ``D_y`` (o,).

    References
    ----------
    Huh, M.-H. and Lee, Y. G. (2003). Input variable importance in supervised learning models.
    Communications for Statistical Applications and Methods 10(1), 239-246.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(400, 2))
    >>> y = X @ np.array([2.0, 1.0])
    >>> imp = sensitivity_importance(lambda X: X @ jnp.array([2.0, 1.0]), X, y)
    >>> beta = np.array([2.0, 1.0]) * X.std(axis=0) / y.std()  # standardized coefficients
    >>> bool(np.allclose(imp.importances_mean[:, 0], beta, atol=0.05))
    True
    """
    key = as_key(random_state)
    bits = key_bits(key)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress, allow_missing=True,
    )
    n, c = dataset.n_rows, dataset.n_columns
    n_pairs = 10 * n if n_pairs is None else n_pairs
    out_idx = select_outputs(predictor.output_names, output)
    o = len(out_idx)
    target = check_target(y, n, dataset.source)
    if class_labels(predictor, target):  # a classifier: D_y of the class indicators
        target = one_hot_targets(predictor, target)[:, out_idx]
    if target.dtype.kind not in "biuf":
        raise ValueError(f"y must hold numbers; got dtype {target.dtype}.")
    target = target.astype(np.float64).reshape(n, -1)
    if target.shape[1] != o:
        raise ValueError(
            f"y has {target.shape[1]} column(s) but {o} model output(s) are scored; pass y of "
            f"shape (n, {o}) or choose outputs with output=..."
        )
    chosen = dataset.resolve(features)
    p = len(chosen)
    w = np.ones(n) if dataset.weights is None else dataset.weights
    masks = np.zeros((p, c), bool)
    for j, feat in enumerate(chosen):
        masks[j, list(feat.columns)] = True
    common = dict(memory_budget=memory_budget, progress=progress, label="sensitivity")
    names = tuple(f.name for f in chosen)
    outputs = tuple(predictor.output_names[i] for i in out_idx)

    feature_ids = dataset.positions(chosen)

    def build():
        """The plan and reducer (kept on an Explainer for its repeats)."""
        if variant == "max":
            grids = [_max_values(dataset, feat, n_values, w > 0) for feat in chosen]
            size = max(g.shape[0] for g in grids)
            values = np.zeros((p * size, c))
            for j, (feat, rows) in enumerate(zip(chosen, grids)):
                # a shorter grid repeats its last value: the range over the group is unchanged
                padded = np.concatenate([rows, np.repeat(rows[-1:], size - rows.shape[0],
                                                         axis=0)])
                values[j * size:(j + 1) * size][:, list(feat.columns)] = padded
            return (at_values(masks, np.repeat(np.arange(p), size), values,
                              np.arange(p * size)), Spread(w, size))
        streams = [(feature_ids[j], r, k) for j in range(p) for r in range(n_repeats)
                   for k in range(2)]
        return (at_drawn_rows(masks, np.repeat(np.arange(p), 2 * n_repeats), key, streams,
                              weights=dataset.weights), Spread(w, 2))

    plan, reducer = cached_stage(
        dataset, ("sensitivity", variant, tuple(feature_ids), n_values if variant == "max"
                  else (n_repeats, tuple(bits))), build)
    if variant == "max":
        d_p = evaluate(predictor, dataset, plan, reducer, **common)[:, out_idx]
        d_y = np.ptp(target[w > 0], axis=0)  # a row of weight 0 is absent
        if np.any(d_y == 0):
            raise ValueError("y is constant; its range D_y = 0 cannot scale the importances.")
        return FeatureImportance(
            method="sensitivity_max", feature_names=names, output_names=outputs,
            importances_mean=d_p / d_y,
            info=keep_layout(SensitivityDetails(variant=variant, D_p=d_p, D_y=d_y,
                                                n_values=n_values), dataset, chosen),
        )

    prob = None if dataset.weights is None else w / w.sum()
    d_p = evaluate(predictor, dataset, plan, reducer, **common)[:, out_idx]
    d_p = d_p.reshape(p, n_repeats, o).transpose(0, 2, 1)  # (p, o, r)
    pair_rng = rng_stream(bits, 4)
    d_y = np.zeros((o, n_repeats))
    # N = 10 n pairs per repeat, drawn in pieces of a fixed size (so the draws do not depend
    # on the budget) and memory stays O(piece), not O(N)
    piece = 1 << 16
    for r in range(n_repeats):
        for start in range(0, n_pairs, piece):
            first, second = _draw(pair_rng, n, prob, (2, min(piece, n_pairs - start)))
            d_y[:, r] += np.abs(target[first] - target[second]).sum(axis=0)
    d_y /= n_pairs
    if np.any(d_y == 0):
        raise ValueError("y is constant (every target pair is equal); D_y = 0 cannot scale.")
    importances = d_p / d_y[None]
    return FeatureImportance(
        method="sensitivity", feature_names=names, output_names=outputs,
        importances_mean=importances.mean(axis=-1),
        importances_std=importances.std(axis=-1),
        importances=importances,
        info=keep_layout(SensitivityDetails(variant=variant, D_p=d_p, D_y=d_y,
                                            n_repeats=n_repeats, n_pairs=n_pairs),
                         dataset, chosen),
    )
