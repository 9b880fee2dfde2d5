"""Permutation feature importance (METHODS.md section 5) and the loss handling it shares.

Every feature (or group) and every repeat is one *item* of a single engine call: item
``(j, r)`` takes feature ``j``'s columns from the rows of permutation ``r`` of feature ``j``,
and one extra item, nothing replaced, gives the baseline. The engine returns the predictions of
all items; the loss kernels of :mod:`jaximp.kernels._losses` then score every item at once
(``jax.vmap`` over items under one ``jax.jit``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Callable, Literal

import jax
import jax.numpy as jnp
import numpy as np

from jaximp.kernels import _losses

from ._common import as_key, check_choice, check_int, prepare, select_outputs
from ._engine import evaluate
from ._model import Predictor
from ._results import FeatureImportance

__all__ = ["LOSSES", "permutation_importance"]

#: Built-in losses and scores, by name.
LOSSES = ("mse", "rmse", "mae", "r2", "log_loss", "accuracy", "auc")
_REGRESSION = {
    "mse": _losses.mean_squared_error,
    "rmse": _losses.root_mean_squared_error,
    "mae": _losses.mean_absolute_error,
    "r2": _losses.r2_score,
}
_CLASSIFICATION = {
    "log_loss": _losses.log_loss,
    "accuracy": _losses.accuracy_score,
    "auc": _losses.roc_auc_score,
}
_SCORES = ("r2", "accuracy", "auc")
_KINDS = ("difference", "ratio")


# ----------------------------------------------------------------------------- edge checks


def check_target(y, n: int) -> np.ndarray:
    """``y`` as an array with n rows (pandas Series/DataFrame accepted)."""
    if y is None:
        raise ValueError(f"y must be an array of {n} targets; got None.")
    values = np.asarray(y)
    if values.ndim == 0 or values.ndim > 2:
        raise ValueError(f"y must have shape (n,) or (n, outputs); got shape {values.shape}.")
    if values.shape[0] != n:
        raise ValueError(f"y must have n = {n} rows like X; got {values.shape[0]}.")
    if values.dtype.kind in "fc" and not np.all(np.isfinite(values)):
        raise ValueError("y contains NaN or infinite values; drop or impute those rows.")
    return values


# ----------------------------------------------------------------------------- losses


@dataclasses.dataclass(frozen=True, eq=False)
class LossSpec:
    """A validated loss bound to its targets (internal).

    ``values`` of predictions are raw metric values (a loss, or a score when ``score``);
    :meth:`importance` turns baseline and perturbed values into importances.
    """

    name: str
    task: str  # "regression" | "classification" | "callable"
    score: bool
    bounded: bool  # a built-in score whose best value is 1
    output_names: tuple[str, ...]
    out_idx: tuple[int, ...]
    y: np.ndarray
    weights: np.ndarray | None
    classes: np.ndarray | None = None  # single-column classification: the labels of y
    fn: Callable | None = None

    def values(self, predictions: np.ndarray) -> np.ndarray:
        """Metric of every item: predictions (b, n, o_model) -> (b, o_result), float64."""
        preds = np.asarray(predictions)[..., list(self.out_idx)]
        w = None if self.weights is None else jnp.asarray(self.weights, jnp.float32)
        if self.task == "regression":
            out = _regression_items(self.name, jnp.asarray(self.y, jnp.float32),
                                    jnp.asarray(preds), w)
        elif self.task == "classification":
            out = _classification_items(self.name, jnp.asarray(self.y, jnp.int32),
                                        jnp.asarray(self._class_predictions(preds)), w)
        else:
            out = self._callable_values(preds)
        out = np.asarray(out, dtype=np.float64)
        out = out.reshape(out.shape[0], -1)
        if self.task == "callable" and out.shape[1] not in (1, len(self.out_idx)):
            raise ValueError(
                f"the loss callable must return a scalar or one value per output "
                f"({len(self.out_idx)}); got {out.shape[1]} values."
            )
        return out

    def result_names(self, width: int) -> tuple[str, ...]:
        """Output names of metric values with ``width`` columns."""
        if width == len(self.output_names):
            return self.output_names
        return ("y",)

    def _class_predictions(self, preds: np.ndarray) -> np.ndarray:
        if self.classes is None or preds.shape[-1] != 1:
            return preds
        baseline = preds[0, :, 0]
        if np.all(np.isin(baseline, self.classes)):  # one column of class labels
            codes = np.searchsorted(self.classes, preds[..., 0])
            codes = np.clip(codes, 0, len(self.classes) - 1)
            found = self.classes[codes] == preds[..., 0]
            codes = np.where(found, codes, -1)
            if self.name == "accuracy":
                return codes.astype(np.float32)
            onehot = codes[..., None] == np.arange(len(self.classes))
            return onehot.astype(np.float32)
        if len(self.classes) > 2:
            raise ValueError(
                f"the model returns one column and y has {len(self.classes)} classes; one "
                "column must hold class labels (values of y), but the model returned other "
                "values. Return one probability column per class."
            )
        return preds

    def _callable_values(self, preds: np.ndarray) -> np.ndarray:
        y = self.y
        take_weights = _takes_weights(self.fn)
        per_item = preds[..., 0] if preds.shape[-1] == 1 else preds
        args = () if not take_weights else (self.weights,)
        try:
            y_dev = jnp.asarray(y) if y.dtype.kind in "biuf" else None
        except TypeError:
            y_dev = None
        if y_dev is not None:
            w_dev = () if not take_weights else (
                None if self.weights is None else jnp.asarray(self.weights),)
            try:
                batched = jax.jit(jax.vmap(lambda p: jnp.asarray(self.fn(y_dev, p, *w_dev))))
                return np.asarray(batched(jnp.asarray(per_item)))
            except Exception:  # noqa: BLE001 - not traceable: call it on NumPy arrays below
                pass
        return np.stack([np.asarray(self.fn(y, p, *args), dtype=np.float64) for p in per_item])

    def importance(self, perturbed: np.ndarray, baseline: np.ndarray, kind: str) -> np.ndarray:
        """Importance of perturbed metric values against the baseline (broadcast)."""
        if kind == "difference":
            return baseline - perturbed if self.score else perturbed - baseline
        if self.bounded:  # a score with best value 1: its loss is 1 - score
            perturbed, baseline = 1.0 - perturbed, 1.0 - baseline
        elif self.score:
            perturbed, baseline = baseline, perturbed
        if np.any(baseline == 0):
            raise ValueError(
                f"kind='ratio' divides by the baseline {self.name} loss, which is 0 (the model "
                "fits these data exactly); use kind='difference'."
            )
        return perturbed / baseline


@functools.partial(jax.jit, static_argnames=("name",))
def _regression_items(name, y, preds, w):
    """(n, o) targets, (b, n, o) predictions -> (b, o) metric values."""
    kernel = _REGRESSION[name]
    per_output = jax.vmap(kernel, in_axes=(1, 1, None))
    return jax.vmap(per_output, in_axes=(None, 0, None))(y, preds, w)


@functools.partial(jax.jit, static_argnames=("name",))
def _classification_items(name, y, preds, w):
    """(n,) class codes, (b, n[, o]) predictions -> (b, 1) metric values."""
    return jax.vmap(_CLASSIFICATION[name], in_axes=(None, 0, None))(y, preds, w)[:, None]


def _takes_weights(fn: Callable) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3


def _class_codes(y: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """Class codes 0..k-1 of labels ``y`` for a model with one output column per class."""
    k = len(names)
    classes = np.unique(y)
    keys = []
    for c in classes:
        if isinstance(c, (float, np.floating)) and float(c).is_integer():
            keys.append(str(int(c)))
        else:
            keys.append(str(c))
    if all(key in names for key in keys):
        lookup = dict(zip(classes.tolist(), [names.index(key) for key in keys]))
        return np.asarray([lookup[v] for v in y.tolist()], dtype=np.int32)
    if y.dtype.kind in "biuf" and np.all(y == np.round(y)) and y.min() >= 0 and y.max() < k:
        return y.astype(np.int32)
    raise ValueError(
        f"y holds the classes {classes.tolist()[:10]}, which do not match the model's {k} "
        f"output columns {list(names)}; y must hold those column names or codes 0..{k - 1}."
    )


def resolve_loss(
    loss,
    y: np.ndarray,
    predictor: Predictor,
    output,
    weights: np.ndarray | None,
    greater_is_better: bool | None = None,
) -> LossSpec:
    """Validate ``loss`` against the targets and the model's outputs (internal)."""
    out_idx = tuple(select_outputs(predictor.output_names, output))
    names = tuple(predictor.output_names[i] for i in out_idx)
    o = len(out_idx)
    if callable(loss) and not isinstance(loss, str):
        if greater_is_better is not None and not isinstance(greater_is_better, bool):
            raise ValueError(f"greater_is_better must be True or False; got {greater_is_better!r}.")
        if weights is not None and not _takes_weights(loss):
            raise ValueError(
                "sample_weight was given but the loss callable takes only (y, prediction); "
                "give it a third parameter, weights."
            )
        name = getattr(loss, "__name__", type(loss).__name__)
        return LossSpec(name, "callable", bool(greater_is_better), False, names,
                        out_idx, y, weights, fn=loss)
    if greater_is_better is not None:
        raise ValueError(
            f"greater_is_better applies to a callable loss only; got it with loss={loss!r}."
        )
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(
            f"loss must be one of {LOSSES} or a callable (y, prediction[, weights]); got "
            f"{loss!r:.60}."
        )
    score = loss in _SCORES
    if loss in _REGRESSION:
        if y.dtype.kind not in "biuf":
            raise ValueError(
                f"loss={loss!r} needs numeric targets; y has dtype {y.dtype}. For class labels "
                "use loss='log_loss', 'accuracy' or 'auc'."
            )
        target = y.astype(np.float64).reshape(y.shape[0], -1)
        if target.shape[1] != o:
            raise ValueError(
                f"y has {target.shape[1]} column(s) but {o} model output(s) are scored; pass y "
                f"of shape (n, {o}) or choose outputs with output=..."
            )
        return LossSpec(loss, "regression", score, score, names, out_idx, target, weights)
    if y.ndim == 2:
        if y.shape[1] != 1:
            raise ValueError(
                f"loss={loss!r} needs y of class labels, shape (n,); got shape {y.shape}."
            )
        y = y[:, 0]
    if o == 1:
        classes = np.unique(y)
        codes = np.searchsorted(classes, y).astype(np.int32)
        return LossSpec(loss, "classification", score, score, ("y",), out_idx, codes, weights,
                        classes=classes)
    return LossSpec(loss, "classification", score, score, ("y",), out_idx,
                    _class_codes(y, names), weights)


# ----------------------------------------------------------------------------- method


def key_bits(key: jax.Array) -> list[int]:
    """The raw bits of a PRNG key, as Python ints (one device read)."""
    return np.asarray(jax.random.key_data(key), dtype=np.uint32).reshape(-1).tolist()


def rng_stream(bits: list[int], *indices: int) -> np.random.Generator:
    """A NumPy generator for one labelled stream of a key: seeded by the key's ``bits`` and
    ``indices`` (a stream tag, then e.g. the feature's position).

    Index arrays are drawn on the host, where the engine reads them, without compiling
    anything; each stream depends only on the key and its indices, so results do not depend
    on chunking or on which other features are scored.
    """
    return np.random.default_rng([*bits, *[int(i) for i in indices]])


def _permutations(bits: list[int], feature_ids, n_repeats: int, n: int) -> np.ndarray:
    """(p, r, n) row permutations; feature j's come from stream (1, j), one per repeat in
    order (so the first r repeats do not depend on ``n_repeats``)."""
    out = np.empty((len(feature_ids), n_repeats, n), dtype=np.int32)
    for index, j in enumerate(feature_ids):
        rng = rng_stream(bits, 1, j)
        for r in range(n_repeats):
            out[index, r] = rng.permutation(n)
    return out


def _sample_rows(max_samples, n: int, bits: list[int]) -> np.ndarray | None:
    if max_samples is None:
        return None
    if isinstance(max_samples, bool) or not isinstance(
        max_samples, (int, float, np.integer, np.floating)
    ):
        raise ValueError(
            f"max_samples must be an int in [1, {n}] or a float in (0, 1]; got {max_samples!r}."
        )
    if isinstance(max_samples, (float, np.floating)):
        if not 0 < max_samples <= 1:
            raise ValueError(
                f"max_samples must be an int in [1, {n}] or a float in (0, 1]; got "
                f"{max_samples!r}."
            )
        m = max(1, int(round(max_samples * n)))
    else:
        if not 1 <= max_samples <= n:
            raise ValueError(
                f"max_samples must be an int in [1, {n}] or a float in (0, 1]; got "
                f"{max_samples!r}."
            )
        m = int(max_samples)
    if m == n:
        return None
    return np.sort(rng_stream(bits, 2).choice(n, m, replace=False))


def permutation_importance(
    model,
    X,
    y,
    *,
    loss: str | Callable = "mse",
    kind: Literal["difference", "ratio"] = "difference",
    n_repeats: int = 5,
    max_samples: int | float | None = None,
    features=None,
    output=None,
    sample_weight=None,
    random_state: int | jax.Array = 0,
    greater_is_better: bool | None = None,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> FeatureImportance:
    """Permutation feature importance (Breiman 2001; Fisher, Rudin & Dominici 2018).

    For each feature (or feature group) ``j`` and repeat ``r``, the rows of ``j``'s columns are
    shuffled and the model's loss is compared with its loss on the intact data:
    ``e_perm - e_orig`` (``kind="difference"``) or ``e_perm / e_orig`` (``"ratio"``). All
    features and repeats run as one batched, chunked engine evaluation.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        Data on which the loss is measured (typically held-out data).
    y : array of shape (n,) or (n, o)
        Targets: numbers for regression losses, class labels for classification losses.
    loss : str or callable, default "mse"
        ``"mse"``, ``"rmse"``, ``"mae"``, ``"r2"`` (regression, one value per model output),
        ``"log_loss"``, ``"accuracy"``, ``"auc"`` (classification; binary or one-vs-rest
        macro AUC), or a callable ``loss(y, prediction[, weights])`` returning a scalar or one
        value per output. ``prediction`` is (n,) for one output, else (n, o). A callable that
        ``jax.jit`` can trace is batched over all items; any other is called on NumPy arrays.
        Scores (``"r2"``, ``"accuracy"``, ``"auc"``) become the loss ``1 - score`` so that
        importance is positive: the difference is ``score_orig - score_perm``.
    kind : {"difference", "ratio"}, default "difference"
    n_repeats : int, default 5
        Permutations per feature.
    max_samples : int or float, optional
        Rows to use: an int count or a fraction of ``n``. One row subset, drawn without
        replacement from ``random_state``, serves the baseline and every permutation (unlike
        scikit-learn, whose baseline uses all rows).
    features : str, int or list, optional
        Features (or groups) to score; default all.
    output : int, str or list, optional
        Model outputs the loss sees (default all). Regression losses give one importance per
        output; classification losses read all selected columns as class probabilities.
    sample_weight : array of shape (n,), optional
        Case weights of the loss.
    random_state : int or jax PRNG key, default 0
        The permutations of feature ``j`` (its position in ``X``) come from a NumPy generator
        seeded with the key's bits and ``j``, one per repeat in order, so results do not
        depend on chunking, on which other features are scored, or (for the first repeats)
        on ``n_repeats``.
    greater_is_better : bool, optional
        For a callable ``loss`` only: True if it is a score. Then the difference is
        ``score_orig - score_perm`` and the ratio ``score_orig / score_perm``.
    feature_names, categorical, groups
        Data description (see :func:`jaximp.as_dataset`); the columns of a group are permuted
        together, as one feature.
    variables : pytree, optional
        Variables of a Flax linen module.
    memory_budget : int, optional
        Bytes per evaluation chunk.
    progress : bool, optional
        Progress line on stderr.

    Returns
    -------
    FeatureImportance
        ``importances`` (p, o, r) raw values, ``importances_mean`` and ``importances_std``
        (ddof 0, as scikit-learn) over repeats; ``quantiles()`` gives bands. ``info`` holds
        ``loss``, ``kind``, ``baseline`` (metric on intact data, shape (o,)), ``n_repeats``,
        ``n_samples`` and ``sample_rows`` (the rows used, or None for all).

    Notes
    -----
    One-column classifiers: a column whose predictions on ``X`` are all class labels (values
    of ``y``) is read as labels; otherwise as the probability of the larger of two classes.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> y = X @ np.array([2.0, 1.0, 0.0])
    >>> result = permutation_importance(lambda X: X @ jnp.array([2.0, 1.0, 0.0]), X, y,
    ...                                 n_repeats=10)
    >>> result.importances.shape
    (3, 1, 10)
    >>> np.round(result.importances_mean[:, 0] / (2 * np.var(X, axis=0)), 1)  # = coef^2
    array([4., 1., 0.])
    """
    check_choice(kind, "kind", _KINDS)
    n_repeats = check_int(n_repeats, "n_repeats")
    bits = key_bits(as_key(random_state))
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables,
    )
    n = dataset.n_rows
    target = check_target(y, n)
    rows = _sample_rows(max_samples, n, bits)
    data, weights = dataset.X, dataset.weights
    if rows is not None:
        data, target = data[rows], target[rows]
        weights = None if weights is None else weights[rows]
    spec = resolve_loss(loss, target, predictor, output, weights, greater_is_better)
    chosen = dataset.resolve(features)
    feature_ids = [dataset.features.index(f) for f in chosen]
    m, c, p = data.shape[0], data.shape[1], len(chosen)

    masks = np.zeros((p + 1, c), bool)  # the last mask replaces nothing: the baseline
    for j, feat in enumerate(chosen):
        masks[j, list(feat.columns)] = True
    perms = _permutations(bits, feature_ids, n_repeats, m)
    source_rows = np.concatenate(
        [np.arange(m, dtype=np.int32)[None], perms.reshape(p * n_repeats, m)], axis=0
    )
    item_mask = np.concatenate([[p], np.repeat(np.arange(p), n_repeats)])
    predictions = evaluate(
        predictor, data, masks, item_mask, source_rows=source_rows, reduce="none",
        memory_budget=memory_budget, progress=progress, label="permutation importance",
    )
    metric = spec.values(predictions)  # (1 + p r, o)
    baseline = metric[0]
    perturbed = metric[1:].reshape(p, n_repeats, -1).transpose(0, 2, 1)  # (p, o, r)
    importances = spec.importance(perturbed, baseline[None, :, None], kind)
    return FeatureImportance(
        method="permutation",
        feature_names=tuple(f.name for f in chosen),
        output_names=spec.result_names(baseline.shape[0]),
        importances_mean=importances.mean(axis=-1),
        importances_std=importances.std(axis=-1),
        importances=importances,
        info={
            "loss": spec.name,
            "kind": kind,
            "baseline": baseline,
            "n_repeats": n_repeats,
            "n_samples": m,
            "sample_rows": rows,
        },
    )
