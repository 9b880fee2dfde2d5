"""Streaming reducers: what the engine keeps of the predictions of each item.

A reducer turns the predictions of one block (``ib`` items x ``o`` outputs x ``rows`` rows: rows
last, so that XLA vectorizes its loops along them) into a *partial* per item (or per group of
items), which the engine adds up over row blocks and chunks in float64; :meth:`Reducer.finalize` turns the totals into the result. Partials are
written once with ``xp`` standing for ``jax.numpy`` (inside the jitted chunk) or ``numpy``
(host models, in float64), so JAX and host models share one implementation.

``combine`` says how partials meet: ``"sum"`` (they add up), ``"keep"`` (every prediction is
written into one preallocated result) or ``"items"`` (a non-decomposable function of all of an
item's predictions, e.g. AUC: the engine keeps whole items, group by group, and applies it).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable

import jax
import numpy as np

from jaximp.kernels import (absolute_percentage_error, brier_terms, cross_entropy_terms,
                            gamma_unit_deviance, poisson_unit_deviance, squared_log_error)

from ._plans import freeze_arrays

__all__ = ["Reducer", "Mean", "FoldedMean", "Keep", "LossSums", "Spread", "GroupedMean",
           "Itemwise", "Stacked", "ROW_LOSSES", "TARGET_LOSSES", "CLASS_LOSSES",
           "check_prediction_range", "target_terms"]

_HIGHEST = "highest"


def _two_columns(weights: np.ndarray) -> np.ndarray:
    """Weights (n, r) as float32, with a zero second column when r = 1: XLA's CPU backend
    runs a weighted sum over rows as a product with one column several times slower than one
    with two (partial dependence at n = 100,000: 1.5x the floor against 1.2x)."""
    if weights.shape[1] == 1:
        weights = np.concatenate([weights, np.zeros_like(weights)], axis=1)
    return np.ascontiguousarray(weights, dtype=np.float32)


def _summed_as_used(weights: np.ndarray, axis: int) -> np.ndarray:
    """The float64 sum of weights as the sums over rows use them (float32, see
    :func:`_two_columns`): a weighted mean of a constant is then that constant (weights of
    0.1 summed unrounded scaled a mean at 1e6 by 1.5e-8)."""
    return weights.astype(np.float32).astype(np.float64).sum(axis=axis)


def _einsum(xp, spec, *arrays):
    if xp is np:
        return np.einsum(spec, *arrays)
    return xp.einsum(spec, *arrays, precision=_HIGHEST)


class Reducer:
    """Base class: a decomposable reduction over rows, one partial per item."""

    combine = "sum"
    group = 1  # items reduced together; they always share a block
    may_be_nan = False  # True when NaN in the result is meaningful (an empty group)
    scores = False  # True when the result is a loss or score of the predictions
    # on CPU, one reduction of all the predictions of a chunk rather than one per block: for
    # reducers whose many small operations per block cost more than keeping the predictions
    at_once = False

    def __post_init__(self):  # for the dataclass reducers
        # immutable, as a Plan is: an Explainer's data keeps an evaluation per reducer object,
        # its arrays on the devices, which a change in place would leave stale
        freeze_arrays(self)

    def row_arrays(self) -> dict[str, np.ndarray]:
        """Arrays with one entry per data row (weights, targets...), sliced per block."""
        return {}

    def consts(self) -> dict[str, np.ndarray]:
        """Small arrays every block sees whole."""
        return {}

    def key(self) -> tuple:
        """Static description for the compile cache (shapes of the arrays are keyed by jit)."""
        return (type(self).__name__,)

    def partial_shape(self, n_outputs: int) -> tuple[int, ...]:
        raise NotImplementedError

    def partial(self, preds, rows, valid, items, consts, xp):
        """``(ib, o, rows)`` predictions -> ``(ib // group, *partial_shape)`` partial sums."""
        raise NotImplementedError

    def finalize(self, total: np.ndarray) -> np.ndarray:
        return total


def _split_for_exact_sums(preds, w, xp):
    """``preds = high + low`` (both exact) such that every sum over rows of ``high * w`` is
    exact in float32 when the weights are integers (unit weights, bootstrap counts).

    ``high`` is ``preds`` rounded to a multiple of ``ulp(sigma) / 2``, ``sigma`` a power of 2
    at least twice the largest possible sum ``max |preds| * max_r sum_i |w_ir|``, so all its
    partial sums are multiples of that step below ``sigma / 2``: 23 bits, exactly representable
    in any order of addition. ``low`` is below ``ulp(sigma)``, so its float32 sum adds an error
    of about 1e-11 of the total at 100,000 rows, against some 1e-6 for the plain float32 sum
    (which the differences of nearly equal partial dependences in the H-statistic amplify)."""
    bound = xp.max(xp.abs(preds), axis=-1, keepdims=True) * xp.max(xp.sum(xp.abs(w), axis=0))
    exponent = xp.ceil(xp.log2(xp.maximum(bound, xp.finfo(preds.dtype).tiny))) + 1
    sigma = xp.exp2(exponent).astype(preds.dtype)
    high = (sigma + preds) - sigma  # the error-free split (Rump, Ogita & Oishi's extractor)
    return high, preds - high


def _split_sums(preds, w, xp):
    """``(b, o, n)`` float32 predictions -> ``(b, r, o, 2)`` weighted sums over rows of their
    high and low parts (:func:`_split_for_exact_sums`), both parts in one matrix product of
    rows by weights: a product of plain matrices runs about twice as fast on XLA's CPU backend
    as the batched einsum, which transposes its operand first."""
    high, low = _split_for_exact_sums(preds, w, xp)
    b, o, n = preds.shape
    parts = xp.concatenate([high, low]).reshape(2 * b * o, n)
    sums = parts @ w if xp is np else xp.matmul(parts, w, precision=_HIGHEST)  # (2 b o, r)
    return xp.moveaxis(sums.reshape(2, b, o, w.shape[1]), (0, 3), (3, 1))


def _float64_sums(preds, w, xp):
    """``(b, o, n)`` predictions -> ``(b, r, o, 2)`` weighted sums over rows in float64, with
    a zero low part: float64 predictions (host models, x64), and float32 ones on a CPU, which
    computes in float64 at about the speed of float32, so one product in float64 (exact
    terms, rounding of about n * 1e-16 of the total) costs less than the split's passes over
    the predictions (all H pairs at p = 10, n = 100 with ``A[:, 0] + A[:, 1]``: 1.0 ms a call
    against 1.4). Traced in float64 whatever the process's mode: only the sums are, not the
    model."""
    with jax.enable_x64(True):
        sums = _einsum(xp, "bon,nr->bro", preds.astype(np.float64), w.astype(np.float64))
        return xp.stack([sums, xp.zeros_like(sums)], axis=-1)


@dataclasses.dataclass(frozen=True, eq=False)
class Mean(Reducer):
    """Weighted means over rows, for one or several weightings (bootstrap replicates).

    ``weights`` (r, n): the result is (b, r, o) with ``[k, j] = sum_i w_ji f_ki / sum_i w_ji``.
    Memory is O(items x r), whatever n. Float32 predictions are summed in float64 on a CPU
    (:func:`_float64_sums`); on an accelerator, as a high part whose sums are exact and a small
    low part (:func:`_split_for_exact_sums`). Either way, for integer weights a block's sum
    agrees with a float64 sum of the float32 predictions to about 1e-10.
    """

    weights: np.ndarray
    # the sums' few small operations per block cost up to ~9% of a small MLP's evaluation
    at_once = True

    def row_arrays(self):
        return {"w": _two_columns(self.weights.T)}

    def partial_shape(self, n_outputs):
        return (self.weights.shape[0], n_outputs, 2)  # last axis: the high and low parts

    def key(self):
        return ("Mean", self.weights.shape[0] == 1)

    def partial(self, preds, rows, valid, items, consts, xp):
        w = rows["w"] * valid[:, None]
        if preds.dtype.itemsize >= 8 or (xp is not np and jax.default_backend() == "cpu"):
            total = _float64_sums(preds, w, xp)
        else:
            total = _split_sums(preds, w, xp)
        return total[:, :1] if self.weights.shape[0] == 1 else total  # without _two_columns

    def finalize(self, total):
        total = total[..., 0] + total[..., 1]  # high + low, in float64 (a sum over a
        # last axis of two is several times slower)
        total /= self.weight_sums[None, :, None]  # in place: the totals can be large
        return total

    @functools.cached_property
    def weight_sums(self) -> np.ndarray:
        """The sum of each weighting (r,), once: a repeated call reads it again."""
        return _summed_as_used(self.weights, axis=1)


@dataclasses.dataclass(frozen=True, eq=False)
class FoldedMean(Mean):
    """Weighted means over rows (under each weighting, as :class:`Mean`), then a fixed linear
    map of each group of ``group`` consecutive items, on the device: the result is
    (b // group, r, m, o) with ``[g, j] = sum_t fold[t] mean[g * group + t, j]`` for ``fold``
    (group, m).

    Only the folded values leave the device: exact Shapley values at 1,000 rows and p = 10
    read 88 kB instead of 8.2 MB of coalition values, and nothing is left to weight on the
    host. The map runs in float64 (traced so whatever the process's mode) on the items'
    float64 sums; ``fold`` travels as float32 high and low parts, whose float64 sum is within
    2^-48 of it.
    """

    fold: np.ndarray

    @property
    def group(self) -> int:
        return self.fold.shape[0]

    def consts(self):
        high = self.fold.astype(np.float32)
        return {"fold": np.stack([high, (self.fold - high).astype(np.float32)])}

    def key(self):
        return ("FoldedMean", self.weights.shape[0] == 1, self.fold.shape)

    def partial_shape(self, n_outputs):
        return (self.weights.shape[0], self.fold.shape[1], n_outputs)

    def partial(self, preds, rows, valid, items, consts, xp):
        sums = super().partial(preds, rows, valid, items, consts, xp)  # (ib, r, o, 2)
        with jax.enable_x64(True):
            if xp is np:
                totals, fold = sums[..., 0] + sums[..., 1], self.fold
            else:
                totals = sums[..., 0].astype(np.float64) + sums[..., 1].astype(np.float64)
                fold = consts["fold"].astype(np.float64).sum(axis=0)
            grouped = totals.reshape(-1, self.group, *totals.shape[1:])  # (g, group, r, o)
            return _einsum(xp, "gtro,tm->grmo", grouped, fold)

    def finalize(self, total):
        total /= self.weight_sums[None, :, None, None]
        return total


class Keep(Reducer):
    """Every prediction, written into one (b, n, o) float32 result (ICE curves)."""

    combine = "keep"

    def partial(self, preds, rows, valid, items, consts, xp):
        return xp.moveaxis(preds, 1, 2)  # (ib, rows, o), the layout of the result


@dataclasses.dataclass(frozen=True, eq=False)
class Spread(Reducer):
    """Weighted mean over rows of each row's range (max - min) across a group of ``group``
    consecutive items: ``mean_i |f(x*) - f(x**)|`` for pairs, or the largest difference over a
    grid. Result (b // group, o)."""

    weights: np.ndarray
    group: int = 2

    def row_arrays(self):
        return {"w": _two_columns(self.weights[:, None])}

    def key(self):
        return ("Spread", self.group)

    def partial_shape(self, n_outputs):
        return (n_outputs,)

    def partial(self, preds, rows, valid, items, consts, xp):
        ib, o, n = preds.shape
        grouped = preds.reshape(ib // self.group, self.group, o, n)
        spread = grouped.max(axis=1) - grouped.min(axis=1)
        return _einsum(xp, "gon,nr->gor", spread, rows["w"] * valid[:, None])[..., 0]

    def finalize(self, total):
        return total / self.weight_sum

    @functools.cached_property
    def weight_sum(self) -> float:
        return _summed_as_used(self.weights, axis=0)


@dataclasses.dataclass(frozen=True, eq=False)
class GroupedMean(Reducer):
    """Weighted means over the rows of each group (e.g. ALE bins): item ``k`` groups row ``i``
    by ``row_codes[item_code[k], i]`` in ``0..n_groups-1``. Result (b, n_groups, o), NaN for
    an empty group."""

    row_codes: np.ndarray  # (q, n)
    item_code: np.ndarray  # (b,)
    n_groups: int
    weights: np.ndarray
    may_be_nan = True

    def row_arrays(self):
        return {"w": np.asarray(self.weights, np.float32),
                "codes": np.ascontiguousarray(self.row_codes.T, dtype=np.int32)}

    def consts(self):
        return {"item_code": np.asarray(self.item_code, np.int32)}

    def key(self):
        return ("GroupedMean", self.n_groups)

    def partial_shape(self, n_outputs):
        return (self.n_groups, n_outputs + 1)

    def partial(self, preds, rows, valid, items, consts, xp):
        codes = rows["codes"][:, consts["item_code"][items]].T  # (ib, n)
        onehot = (codes[..., None] == xp.arange(self.n_groups)).astype(preds.dtype)
        w = rows["w"] * valid
        sums = _einsum(xp, "bon,bng,n->bgo", preds, onehot, w)
        counts = _einsum(xp, "bng,n->bg", onehot, w)
        return xp.concatenate([sums, counts[..., None]], axis=-1)

    def finalize(self, total):
        with np.errstate(invalid="ignore", divide="ignore"):
            return total[..., :-1] / total[..., -1:]


# Losses that are weighted means of a per-row term, and how the mean becomes the metric.
# Those that score numeric targets, one metric per scored output, and those that score class
# labels (class codes) against class probabilities, one metric.
TARGET_LOSSES = ("mse", "rmse", "mae", "mape", "msle", "rmsle", "r2", "poisson", "gamma",
                 "cross_entropy")
CLASS_LOSSES = ("log_loss", "brier", "accuracy")
ROW_LOSSES = TARGET_LOSSES + CLASS_LOSSES
# the predictions each needs, where some are refused: the loss is infinite or undefined there
_PREDICTION_RANGES = {
    "poisson": "non-negative predicted means (positive where y > 0)",
    "gamma": "positive predicted means",
    "msle": "predictions above -1",
    "rmsle": "predictions above -1",
}


def target_terms(name: str, prediction, y, xp):
    """Per-row terms of a loss in :data:`TARGET_LOSSES`, of predictions against targets
    ``y`` (broadcast): squared residuals (``"mse"``, ``"rmse"``, ``"r2"``), absolute ones,
    absolute ones relative to ``max(|y|, eps)`` (``"mape"``, scikit-learn's), squared
    residuals of ``log(1 + .)`` (``"msle"``, ``"rmsle"``), the unit deviances of predicted
    means (:func:`jaximp.kernels.poisson_unit_deviance`, ``gamma_unit_deviance``) or the
    binary cross-entropy of probabilities against targets in [0, 1]
    (:func:`jaximp.kernels.cross_entropy_terms`). NaN where a prediction is outside the
    loss's range (a negative Poisson mean, a gamma mean at or below 0, a log error's
    prediction at or below -1), so that the metric is NaN, not a number of no meaning."""
    if name == "poisson":
        return poisson_unit_deviance(y, prediction, xp)
    if name == "gamma":
        return gamma_unit_deviance(y, prediction, xp)
    if name == "cross_entropy":
        return cross_entropy_terms(y, prediction, xp)
    if name in ("msle", "rmsle"):
        return squared_log_error(y, prediction, xp)
    residual = prediction - y
    if name == "mae":
        return xp.abs(residual)
    if name == "mape":
        return absolute_percentage_error(y, prediction, xp)
    return residual * residual


def check_prediction_range(name: str, metric: np.ndarray) -> None:
    """Refuse a metric left NaN or infinite by a loss whose predictions have a range (a
    Poisson or gamma deviance, a log error): some prediction, on the data or on perturbed
    data, left it (hstats and scikit-learn refuse them too)."""
    if name in _PREDICTION_RANGES and not np.all(np.isfinite(metric)):
        fix = ("score a model with a log link (e.g. exp of a linear predictor)"
               if name in ("poisson", "gamma") else "clip the model's predictions")
        raise ValueError(
            f"loss={name!r} needs {_PREDICTION_RANGES[name]}, but the model predicted a value "
            f"outside that (or NaN) on the data or on perturbed data; {fix}, or use "
            "loss='mse'.")


@dataclasses.dataclass(frozen=True, eq=False)
class LossSums(Reducer):
    """A decomposable loss against targets, accumulated as weighted sums over rows.

    ``name`` in :data:`ROW_LOSSES`. Regression (:data:`TARGET_LOSSES`): ``y`` (n, k) values
    scored against the model's outputs ``columns`` (k of them), one metric per column.
    Classification (:data:`CLASS_LOSSES`): ``y`` (n,) class codes; the outputs ``columns``
    are class probabilities (one column: the probability of class 1 of two), or, with
    ``labels`` given, one column of class labels that are mapped to codes. Result (b, k): the
    metric (a loss, or R^2 as a score).
    """

    name: str
    y: np.ndarray
    weights: np.ndarray
    columns: tuple[int, ...]
    labels: np.ndarray | None = None
    r2_total: np.ndarray | None = None  # weighted sum of squares of y about its mean, (k,)
    scores = True

    def row_arrays(self):
        if self.name in CLASS_LOSSES:
            y = self.y.astype(np.int32)  # (n,) class codes
        else:
            y = self.y.astype(np.float64).reshape(self.y.shape[0], -1)  # (n, k) values
        return {"w": np.asarray(self.weights, np.float64), "y": y}

    def consts(self):
        return {} if self.labels is None else {"labels": np.asarray(self.labels, np.float64)}

    def key(self):
        return ("LossSums", self.name, tuple(self.columns), self.labels is not None)

    def partial_shape(self, n_outputs):
        return (len(self.columns) if self.name in TARGET_LOSSES else 1,)

    def row_terms(self, preds, y, consts, xp):
        """Per-row loss terms (ib, k, n) of predictions (ib, o, n): :func:`target_terms`, or
        (k = 1) the log loss of the true class, the Brier score (the squared distance of the
        probabilities from the true class's indicators, halved for two classes, as
        scikit-learn's) or correctness. Probabilities are clipped by float64's machine
        epsilon, scikit-learn's for its float64 probabilities, whatever their dtype here
        (:func:`jaximp.kernels.log_loss`)."""
        columns = list(self.columns)
        p = preds if columns == list(range(preds.shape[1])) else preds[:, columns]  # (ib, k, n)
        if self.name in TARGET_LOSSES:
            return target_terms(self.name, p, y.astype(p.dtype).T[None], xp)  # (ib, k, n)
        return self._class_terms(p, y, consts, xp)[:, None, :]

    def partial(self, preds, rows, valid, items, consts, xp):
        w = rows["w"].astype(preds.dtype) * valid
        terms = self.row_terms(preds, rows["y"], consts, xp)
        # a dot product per item and column, batched: it sums every item in the same order
        # (equal predictions, equal losses), which a matrix product need not, and runs about
        # 4x faster than a plain sum over the rows on CPU
        return _einsum(xp, "bkn,bkn->bk", terms, xp.broadcast_to(w, terms.shape))

    def _class_terms(self, p, y, consts, xp):
        """Per-row log loss, Brier score or correctness, (ib, n), of class probabilities p
        (ib, k, n)."""
        if "labels" in consts:  # one column of labels: their codes, -1 when not a class
            labels = consts["labels"].astype(p.dtype)
            hits = p[:, :1, :] == labels[None, :, None]  # (ib, classes, n)
            codes = xp.where(hits.any(axis=1), xp.argmax(hits, axis=1), -1)
            if self.name == "accuracy":
                return (codes == y[None]).astype(p.dtype)
            proba = (codes == y[None]).astype(p.dtype)
        else:
            if p.shape[1] == 1:  # probability of class 1 of two
                p = xp.concatenate([1 - p, p], axis=1)
            if self.name == "accuracy":
                return (xp.argmax(p, axis=1) == y[None]).astype(p.dtype)
            if self.name == "brier":
                return brier_terms(p, y[None], 1, xp)
            index = xp.broadcast_to(y[None, None, :], (p.shape[0], 1, p.shape[2]))
            proba = xp.take_along_axis(p, index.astype(xp.int32), axis=1)[:, 0]
        eps = float(np.finfo(np.float64).eps)
        return -xp.log(xp.clip(proba, eps, 1 - eps))

    @functools.cached_property
    def weight_sum(self) -> float:
        return self.weights.sum()

    def finalize(self, total):
        mean = total / self.weight_sum
        check_prediction_range(self.name, mean)
        if self.name in ("rmse", "rmsle"):
            return np.sqrt(mean)
        if self.name == "r2":
            return 1.0 - total / self.r2_total[None]
        return mean


@dataclasses.dataclass(frozen=True, eq=False)
class Itemwise(Reducer):
    """A function of all of an item's predictions at once (AUC, a user's loss): the engine
    keeps whole items, as many as fit the budget at a time, and calls
    ``fn(predictions (g, n, o)) -> (g, ...)`` on each group."""

    fn: Callable[[np.ndarray], np.ndarray]
    combine = "items"
    scores = True


@dataclasses.dataclass(frozen=True, eq=False)
class Stacked(Reducer):
    """Several summing reducers of single items in one pass (e.g. several losses), their
    partials side by side. Result (b, total width), each part's values in its own columns
    (:meth:`split`); parts must finalize to their partials' width, as :class:`LossSums` does.
    """

    parts: tuple
    n_outputs: int

    def __post_init__(self):
        super().__post_init__()
        if not self.parts or any(p.combine != "sum" or p.group != 1 for p in self.parts):
            raise ValueError("Stacked reducers must be summing reducers of single items.")

    @functools.cached_property
    def widths(self) -> list[int]:
        return [math.prod(p.partial_shape(self.n_outputs)) for p in self.parts]

    @property
    def scores(self) -> bool:
        return any(part.scores for part in self.parts)

    def row_arrays(self):
        return {f"{i}/{k}": v for i, p in enumerate(self.parts) for k, v in p.row_arrays().items()}

    def consts(self):
        return {f"{i}/{k}": v for i, p in enumerate(self.parts) for k, v in p.consts().items()}

    def key(self):
        return ("Stacked",) + tuple(p.key() for p in self.parts)

    def partial_shape(self, n_outputs):
        return (sum(self.widths),)

    def partial(self, preds, rows, valid, items, consts, xp):
        out = []
        for i, part in enumerate(self.parts):
            mine = {k.split("/", 1)[1]: v for k, v in rows.items() if k.startswith(f"{i}/")}
            own = {k.split("/", 1)[1]: v for k, v in consts.items() if k.startswith(f"{i}/")}
            value = part.partial(preds, mine, valid, items, own, xp)
            out.append(value.reshape(value.shape[0], -1))
        return xp.concatenate(out, axis=1)

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """Each part's columns of (b, total width) values."""
        bounds = np.cumsum([0] + self.widths)
        return [values[:, a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def finalize(self, total):
        return np.concatenate([np.asarray(part.finalize(chunk)).reshape(total.shape[0], -1)
                               for part, chunk in zip(self.parts, self.split(total))], axis=1)
