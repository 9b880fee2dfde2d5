"""Per-row perturbation attributions of any model (JAX or host): feature permutation and
feature ablation, captum's ``FeaturePermutation`` and ``FeatureAblation``.

Row ``i``'s attribution to feature (or group) ``j`` is ``f(x_i) - f(x_i with j perturbed)``:
its columns taken from another row (permutation, averaged over repeats) or set to a baseline
(ablation). Every feature and repeat is one item of a single engine plan, as in permutation
importance (permutations are the same keyed bijections of the rows, so the same
``random_state`` permutes a feature as :func:`jaximp.permutation_importance` does), and the
predictions are kept per row (:class:`~jaximp.engine.Keep`); the engine sizes the blocks within
``memory_budget``, shards the rows and calls host models on host-built batches.
"""

from __future__ import annotations

import numpy as np

from ..data import Dataset, Int, as_key, select_outputs, validate_params
from ..engine import (
    Keep,
    at_coded_values,
    at_permuted_rows,
    at_values,
    check_collapse_columns,
    evaluate,
    key_bits,
    plan_source_rows,
    resolve_budget,
)
from ._attributions import Attributions, labelled_values, make_attributions, row_outputs
from ._setup import cached_stage, column_means, column_medians, prepare

__all__ = ["ablation_attributions", "permutation_attributions", "source_rows"]



def _setup(model, X, *, output, feature_names, categorical, groups, sample_weight, variables,
           memory_budget, progress):
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress, allow_missing=True,
    )
    per_row = row_outputs(output, predictor.output_names, dataset.n_rows)
    out_idx = [] if per_row is not None else select_outputs(predictor.output_names, output)
    return dataset, predictor, out_idx, per_row


def _masks(dataset: Dataset) -> np.ndarray:
    """(p, c) masks, one per feature (or group), and one last that replaces nothing."""
    masks = np.zeros((len(dataset.features) + 1, dataset.n_columns), bool)
    for j, feat in enumerate(dataset.features):
        masks[j, list(feat.columns)] = True
    return masks


def _chosen(kept: np.ndarray, out_idx, per_row) -> np.ndarray:
    """Predictions (..., n, O) -> the explained outputs (..., n, o): ``out_idx``, or row
    ``i``'s own output ``per_row[i]`` (o = 1)."""
    if per_row is None:
        every = list(out_idx) == list(range(kept.shape[-1]))
        return kept if every else kept[..., list(out_idx)]
    index = np.broadcast_to(per_row[:, None], (*kept.shape[:-1], 1))
    return np.take_along_axis(kept, index, axis=-1)


def _result(kept, p, n_repeats, dataset, predictor, out_idx, per_row, method, info):
    """Attributions ``f(x_i) - mean_r f(x_i perturbed)`` from the kept predictions (b, n, O),
    item 0 the intact rows, then ``n_repeats`` items per feature."""
    kept = np.asarray(kept)
    n, width = kept.shape[1:]
    intact = _chosen(kept[0].astype(np.float64), out_idx, per_row)  # (n, o)
    # the repeats' mean first, summed in float64 without a float64 copy of every prediction
    perturbed = kept[1:].reshape(p, n_repeats, n, width).mean(axis=1, dtype=np.float64)
    perturbed = _chosen(perturbed, out_idx, per_row)  # (p, n, o)
    values = intact[:, None, :] - perturbed.transpose(1, 0, 2)
    return make_attributions(values, intact, dataset, predictor, out_idx, method, info,
                             per_row=per_row)


def source_rows(n_rows: int, feature_ids, n_repeats: int, random_state=0,
                memory_budget=None) -> np.ndarray:
    """The rows (p, r, n) that :func:`jaximp.permutation_importance` (and
    :func:`permutation_attributions`, but for a permutation that moves no row, which it draws
    again) take feature ``feature_ids[j]``'s values from in repeat ``r``: row ``i`` gets those
    of row ``out[j, r, i]``. Computed by the engine itself (its permutation of the row
    numbers), so they are the ones it uses.

    Examples
    --------
    >>> rows = source_rows(5, [0, 1], 2)
    >>> rows.shape, sorted(rows[1, 0].tolist())
    ((2, 2, 5), [0, 1, 2, 3, 4])
    """
    ids = list(feature_ids)
    bits = tuple(key_bits(as_key(random_state)))
    streams = [(j, r) for j in ids for r in range(n_repeats)]
    return _stream_rows(n_rows, streams, bits, memory_budget).reshape(len(ids), n_repeats,
                                                                      n_rows)


def _stream_rows(n_rows: int, streams: list, bits: tuple, memory_budget) -> np.ndarray:
    """The engine's permutation of ``n_rows`` rows for each stream label, (labels, n)."""
    plan = at_permuted_rows(np.ones((1, 1), bool), np.zeros(len(streams), int), bits, streams)
    return plan_source_rows(plan, n_rows, resolve_budget(memory_budget))


# A permutation that leaves every row in place is drawn again (captum's FeaturePermutation
# redraws it), under the label (feature, _REDRAWN + repeat * _REDRAWS + attempt): above every
# repeat's label. With 2 rows each attempt is the identity with probability 1/2.
_REDRAWN = 1 << 30
_REDRAWS = 32


def _moved_rows(n_rows: int, streams: list, bits: tuple, memory_budget):
    """The rows of :func:`_stream_rows` and their labels, a permutation that moves no row
    drawn again under a new label (up to ``_REDRAWS - 1`` times)."""
    drawn = list(streams)
    rows = _stream_rows(n_rows, drawn, bits, memory_budget)
    for attempt in range(1, _REDRAWS):
        still = np.flatnonzero((rows == np.arange(n_rows)).all(axis=1))
        if still.size == 0:
            break
        for i in still:
            feature, repeat = streams[i]
            drawn[i] = (feature, _REDRAWN + repeat * _REDRAWS + attempt)
        rows[still] = _stream_rows(n_rows, [drawn[i] for i in still], bits, memory_budget)
    return rows, drawn


@validate_params(n_repeats=Int(1))
def permutation_attributions(
    model, X, *, n_repeats: int = 1, output=None, feature_names=None, categorical=None,
    groups=None, sample_weight=None, variables=None, random_state=0,
    memory_budget: int | None = None, progress: bool | None = None,
) -> Attributions:
    """Per-row permutation attributions (captum's ``FeaturePermutation``): for each feature
    (or group) ``j``, its columns are permuted across the rows and row ``i``'s attribution is
    ``f(x_i) - f(x_i with j's values from row pi(i))``, averaged over ``n_repeats``
    permutations. Works for any model, JAX or host; the mean over the rows of the
    attributions' absolute values (:meth:`Attributions.importance`) is an occlusion-style
    global importance.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, ...) or DataFrame
        The rows to explain; their own values are the permutation's pool (captum permutes
        within the batch it is given).
    n_repeats : int, default 1
        Permutations per feature, averaged (captum: one, per call).
    output : int, str, list or integer array of shape (n,), optional
        Model outputs to explain (default all). An integer array gives one output index per
        row (captum's ``target`` tensor, e.g. each row's predicted class): row ``i`` is
        explained for output ``output[i]`` alone; the result then has one output column,
        ``"output per row"``, and keeps the array as ``info["output_per_row"]``.
    feature_names, categorical, groups, sample_weight, variables
        As in :func:`jaximp.permutation_importance`; a group's columns are permuted together
        (captum's ``feature_mask``).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Feature ``j``'s repeat ``r`` uses the keyed permutation of permutation importance
        with the same key, except that one that leaves every row in place is drawn again, as
        captum does (likely only for a few rows: 1 / n! of the draws);
        ``info["source_rows"]`` (p, r, n) holds the rows it takes the values from (row ``i``
        gets row ``source_rows[j, r, i]``'s).
    memory_budget, progress
        As in :func:`jaximp.permutation_importance`.

    Returns
    -------
    Attributions
        ``values`` (n, p, o), ``predictions`` ``f(x_i)``; ``info``: ``n_repeats``,
        ``source_rows``.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> a = permutation_attributions(lambda A: A @ jnp.array([1.0, 0.0]), X)
    >>> moved = X[a.info["source_rows"][0, 0], 0]  # a linear model: x_i0 - x_pi(i)0
    >>> bool(np.allclose(a.values[:, 0, 0], X[:, 0] - moved, atol=1e-6))
    True
    """
    dataset, predictor, out_idx, per_row = _setup(
        model, X, output=output, feature_names=feature_names, categorical=categorical,
        groups=groups, sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress)
    if dataset.n_rows < 2:
        raise ValueError(
            f"permutation_attributions permutes each feature across the rows of X, so it "
            f"needs at least 2 rows; got {dataset.n_rows}. Explain the row together with "
            "others (e.g. stacked onto a sample of the data), or use ablation_attributions.")
    key = as_key(random_state)
    bits = tuple(key_bits(key))
    p = len(dataset.features)
    feature_ids = dataset.positions(list(dataset.features))
    masks = _masks(dataset)
    check_collapse_columns([f.name for f in dataset.features for _ in f.columns],
                           dataset.resident_X,
                           [c for f in dataset.features for c in f.columns], predictor.dtype,
                           "permuted values", stacklevel=3)

    def build():
        """The plan and its source rows (kept on an Explainer, read-only, for its repeats)."""
        item_mask = np.concatenate([[p], np.repeat(np.arange(p), n_repeats)])
        rows, streams = _moved_rows(
            dataset.n_rows, [(feature_ids[j], r) for j in range(p) for r in range(n_repeats)],
            bits, memory_budget)
        rows = rows.reshape(p, n_repeats, dataset.n_rows)
        rows.flags.writeable = not dataset.pinned
        return at_permuted_rows(masks, item_mask, bits, [(-1, 0)] + streams), rows

    plan, rows = cached_stage(dataset, ("permutation attributions", bits, n_repeats), build)
    kept = evaluate(predictor, dataset, plan, Keep(), label="permutation attributions",
                    memory_budget=memory_budget, progress=progress,
                    result_hint="use fewer repeats, rows or features (groups)")
    info = {"n_repeats": n_repeats, "source_rows": rows}
    return _result(kept, p, n_repeats, dataset, predictor, out_idx, per_row, "permutation",
                   info)


def _ablation_baselines(baselines, dataset: Dataset) -> np.ndarray:
    """Baselines as (1, c) (the same for every row) or (n, c) (one per row, captum's tensor
    of the inputs' shape) from None (zeros), a number, "mean", "median" or an array."""
    X, (n, c) = dataset.X, dataset.X.shape
    shape = dataset.input_shape or (c,)
    if baselines is None:
        return np.zeros((1, c))
    if isinstance(baselines, str):
        if baselines not in ("mean", "median"):
            raise ValueError(f"baselines must be None, a number, 'mean', 'median' or an array; "
                             f"got {baselines!r}.")
        centre = column_means if baselines == "mean" else column_medians
        return centre(X, dataset.weights)[None]
    values = np.asarray(labelled_values(baselines, dataset, "baselines"), dtype=np.float64)
    if values.ndim == 0:
        values = np.full((1, c), float(values))
    elif values.shape in ((c,), tuple(shape), (1, c), (1, *shape)):  # captum broadcasts (1, ...)
        values = values.reshape(1, c)
    elif values.shape in ((n, c), (n, *shape)):
        values = values.reshape(n, c)
    else:
        raise ValueError(
            f"baselines must be None, a number, 'mean', 'median', an array of one example's "
            f"shape {tuple(shape)} or {(1, *shape)} (every row) or of X's shape "
            f"{(n, *shape)} (one per row); got shape {values.shape}.")
    if not np.isfinite(values).all():
        raise ValueError("baselines contain NaN or infinite values; pass finite values.")
    return values


@validate_params()
def ablation_attributions(
    model, X, *, baselines=None, output=None, feature_names=None, groups=None,
    sample_weight=None, variables=None, memory_budget: int | None = None,
    progress: bool | None = None,
) -> Attributions:
    """Per-row ablation (occlusion) attributions (captum's ``FeatureAblation``): row ``i``'s
    attribution to feature (or group) ``j`` is ``f(x_i) - f(x_i with j's columns set to the
    baseline)``. Works for any model, JAX or host.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, ...) or DataFrame
        The rows to explain (numeric features; categorical features are refused).
    baselines : None, number, "mean", "median" or array, default None
        The values an ablated feature takes: None zeros (captum's default), a number for
        every column, the columns' mean or median over ``X`` (weighted by ``sample_weight``),
        an array of one example's shape, or that with a leading axis of 1 (every row), or of
        ``X``'s shape (row ``i`` ablated to row ``i``'s, captum's baselines tensor).
    output : int, str, list or integer array of shape (n,), optional
        As in :func:`permutation_attributions`.
    feature_names, groups, sample_weight, variables
        As in :func:`jaximp.permutation_importance`; a group's columns are ablated together
        (captum's ``feature_mask``).
    memory_budget, progress
        As in :func:`jaximp.permutation_importance`.

    Returns
    -------
    Attributions
        ``values`` (n, p, o), ``predictions`` ``f(x_i)``; ``info["baselines"]``: (1, c) or
        (n, c).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.array([[1.0, 2.0], [3.0, -1.0]])
    >>> a = ablation_attributions(lambda A: A @ jnp.array([1.0, 2.0]), X)
    >>> a.values[:, :, 0].tolist()  # a linear model at a zero baseline: x * w
    [[1.0, 4.0], [3.0, -2.0]]
    """
    dataset, predictor, out_idx, per_row = _setup(
        model, X, output=output, feature_names=feature_names, categorical=None, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress)
    categorical = [f.name for f in dataset.features if f.is_categorical]
    if categorical:
        raise TypeError(
            f"ablation_attributions sets features to numeric baselines, but {categorical} are "
            "categorical. Use permutation_attributions (it swaps values between rows) or "
            "shapley_values.")
    base = _ablation_baselines(baselines, dataset)
    n, p = dataset.n_rows, len(dataset.features)
    masks, item_mask = _masks(dataset), np.r_[p, 0:p]  # item 0: the intact rows
    if base.shape[0] == 1:
        plan = at_values(masks, item_mask, base, np.zeros(p + 1, int))
    else:  # row i reads table row i: its own baseline
        plan = at_coded_values(masks, item_mask, base, np.arange(n), np.zeros(p + 1, int),
                               np.zeros(p + 1, int))
    kept = evaluate(predictor, dataset, plan, Keep(), label="ablation attributions",
                    memory_budget=memory_budget, progress=progress,
                    result_hint="use fewer rows or features (groups)")
    return _result(kept, p, 1, dataset, predictor, out_idx, per_row, "ablation",
                   {"baselines": base})
