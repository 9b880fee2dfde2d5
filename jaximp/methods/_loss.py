"""The loss layer: targets and losses validated at the edge, and their reducers.

:func:`resolve_loss` checks a loss (a name in :data:`LOSSES` or a callable) against the targets
and the model's outputs; :meth:`LossSpec.reducer` gives the engine a streaming reducer for it:
weighted sums over rows for losses that decompose (:class:`jaximp.LossSums`), whole items
group by group for AUC and user callables.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from jaximp.kernels import _losses

from ..data import pandas_numbers, select_outputs, warn_misaligned
from ..engine import ROW_LOSSES, Itemwise, LossSums, check_prediction_range
from ..models import (Predictor, predicts_class_labels, probability_classifier, probe_rows,
                      response_predictor)

__all__ = ["LOSSES", "RESPONSES", "SKLEARN_SCORING", "LossSpec", "canonical_loss",
           "check_target", "class_labels", "default_loss", "logits_to_probabilities",
           "one_hot_targets", "probabilities", "resolve_loss", "row_loss_terms",
           "scored_predictor", "sklearn_response", "weighted_loss_metrics"]

#: Built-in losses and scores, by name.
LOSSES = ("mse", "rmse", "mae", "medae", "mape", "msle", "rmsle", "r2", "poisson", "gamma",
          "cross_entropy", "rse", "rrse", "rae", "smape", "percent_bias", "log_loss", "brier",
          "accuracy", "auc")
#: What a classifier's output columns hold: probabilities, or logits to pass through a softmax
#: (a sigmoid for one column) before scoring.
RESPONSES = ("probability", "logits")
_REGRESSION = {
    "mse": _losses.mean_squared_error,
    "rmse": _losses.root_mean_squared_error,
    "mae": _losses.mean_absolute_error,
    "medae": _losses.median_absolute_error,
    "mape": _losses.mean_absolute_percentage_error,
    "msle": _losses.mean_squared_log_error,
    "rmsle": _losses.root_mean_squared_log_error,
    "r2": _losses.r2_score,
    "poisson": _losses.mean_poisson_deviance,
    "gamma": _losses.mean_gamma_deviance,
    "cross_entropy": _losses.mean_cross_entropy,
    # the R package Metrics' (iml's) relative and symmetric errors
    "rse": _losses.relative_squared_error,
    "rrse": _losses.root_relative_squared_error,
    "rae": _losses.relative_absolute_error,
    "smape": _losses.symmetric_mean_absolute_percentage_error,
    "percent_bias": _losses.percent_bias,
}
_CLASSIFICATION = {
    "log_loss": _losses.log_loss,
    "brier": _losses.brier_score,
    "accuracy": _losses.accuracy_score,
    "auc": _losses.roc_auc_score,
}
_SCORES = ("r2", "accuracy", "auc")
#: scikit-learn's scoring names for the same metrics: importances are the same differences
#: (scikit-learn's score_orig - score_perm, with its negated losses as scores).
SKLEARN_SCORING = {
    "neg_mean_squared_error": "mse",
    "neg_root_mean_squared_error": "rmse",
    "neg_mean_absolute_error": "mae",
    "neg_median_absolute_error": "medae",
    "neg_mean_absolute_percentage_error": "mape",
    "neg_mean_squared_log_error": "msle",
    "neg_root_mean_squared_log_error": "rmsle",
    "neg_mean_poisson_deviance": "poisson",
    "neg_mean_gamma_deviance": "gamma",
    "neg_log_loss": "log_loss",
    "neg_brier_score": "brier",
    "roc_auc": "auc",
    "roc_auc_ovr": "auc",
}


#: R's names for the same losses: hstats' (``squared_error``...; its ``poisson`` and ``gamma``
#: are jaximp's names), yardstick's (vip's) and those of the Metrics package (iml's; its
#: ``mse``, ``mae``, ``mape``, ``msle``, ``rmsle`` are jaximp's names).
R_LOSS_NAMES = {
    "squared_error": "mse",
    "absolute_error": "mae",
    "logloss": "log_loss",
    "mlogloss": "log_loss",
    "classification_error": "accuracy",  # 1 - accuracy, as jaximp scores accuracy
    "rsq_trad": "r2",
    "mn_log_loss": "log_loss",
    "logLoss": "log_loss",
    "ce": "accuracy",  # the classification error, 1 - accuracy
    "mdae": "medae",
}


#: hstats' losses that score one column of y against each of several outputs (R recycles it).
_RECYCLING_NAMES = ("squared_error", "absolute_error", "poisson", "gamma", "logloss")


#: dalex's names (its ``model_parts(loss_function=...)``) that are not jaximp's.
DALEX_LOSS_NAMES = {"mad": "medae", "1-auc": "auc"}


def _sent(*arrays):
    """Host arrays sent to the device explicitly (None stays None): a warm call under
    ``jax.transfer_guard("disallow")`` makes no implicit transfer."""
    return tuple(None if a is None else jax.device_put(a) for a in arrays)


def canonical_loss(loss):
    """A built-in loss by its jaximp name (scikit-learn's scoring names, R's and dalex's loss
    names are translated); any other value unchanged."""
    if not isinstance(loss, str):
        return loss
    for names in (SKLEARN_SCORING, R_LOSS_NAMES, DALEX_LOSS_NAMES):
        if loss in names:
            return names[loss]
    return loss


def default_loss(predictor: Predictor, y) -> str:
    """The loss when none is given: ``"accuracy"`` for a classifier (the score scikit-learn's
    ``permutation_importance`` uses by default): a scikit-learn classifier's per-class
    outputs or predicted labels, or a model with ``k >= 2`` outputs (probabilities or logits)
    scored against one column of labels (text, or integers ``0 .. k-1``); else ``"mse"``."""
    return ("accuracy" if class_labels(predictor, y) or predicts_class_labels(predictor)
            else "mse")


#: What scikit-learn scores a classifier's loss on where it is not ``predict_proba``: the
#: labels of ``predict`` for accuracy, ``decision_function`` for its binary ``roc_auc``.
_SKLEARN_RESPONSES = {"accuracy": "predict", "roc_auc": "decision_function"}


def sklearn_response(loss) -> str | None:
    """The classifier method scikit-learn scores ``loss`` (a name) on, if not predict_proba:
    accuracy by any of its names (R's ``"classification_error"`` counts predicted classes
    too), but AUC by scikit-learn's ``"roc_auc"`` only (jaximp's ``"auc"`` ranks the
    probabilities, as DALEX)."""
    if not isinstance(loss, str):
        return None
    return _SKLEARN_RESPONSES.get("accuracy" if canonical_loss(loss) == "accuracy" else loss)


def scored_predictor(predictor: Predictor, model, losses, response: str, output, dataset
                     ) -> Predictor:
    """The predictor that the losses ``losses`` (names or callables) of ``model`` score: a
    scikit-learn classifier's ``predict`` where every one is accuracy and the predictor
    calls its ``predict_proba`` on the host (trees read into arrays predict the most probable
    class, as their ``predict``), its ``decision_function`` where every one is the binary
    ``"roc_auc"``, as scikit-learn scores them; ``predictor`` itself otherwise."""
    kinds = {sklearn_response(each) for each in losses}
    if response != "probability" or output is not None or len(kinds) != 1 or None in kinds:
        return predictor
    kind = kinds.pop()
    estimator = (probability_classifier(model, kind) if kind == "decision_function"
                 else probability_classifier(predictor))
    if estimator is None or (kind == "decision_function"
                             and len(getattr(estimator, "classes_", ())) != 2):
        return predictor
    sample = probe_rows(dataset.source if dataset.source is not None else dataset.X)
    return response_predictor(estimator, kind, sample) or predictor


def class_labels(predictor: Predictor, y) -> bool:
    """Whether ``y`` holds one class label per row for the model's per-class outputs."""
    labels = np.asarray(y)
    if labels.ndim != 1 and labels.shape[1:] != (1,):
        return False
    if predictor.classes is not None:
        return True
    if predictor.n_outputs < 2:
        return False
    if labels.dtype.kind not in "biuf":
        return True
    return bool(np.all(labels == np.round(labels)) and labels.min() >= 0
                and labels.max() < predictor.n_outputs)


def one_hot_targets(predictor: Predictor, y) -> np.ndarray:
    """Class labels (n,) as indicator columns (n, k), one per output: labels named like the
    outputs (a scikit-learn classifier's classes) or codes 0 .. k-1, as the classification
    losses read them."""
    codes = _class_codes(np.asarray(y).reshape(-1), predictor.output_names)
    return (codes[:, None] == np.arange(predictor.n_outputs)[None, :]).astype(np.float64)


# ----------------------------------------------------------------------------- edge checks


def check_target(y, n: int, source=None) -> np.ndarray:
    """``y`` as an array with n rows (pandas Series/DataFrame accepted), read by position as
    scikit-learn reads it; a warning when y and X (``source``, the user's data) are pandas
    objects whose indexes hold the same labels in another order."""
    if y is None:
        raise ValueError(f"y must be an array of {n} targets; got None.")
    warn_misaligned(y, source, "y")
    values = pandas_numbers(y)
    if values.dtype.kind == "V" and jnp.issubdtype(values.dtype, jnp.floating):
        values = values.astype(np.float64)  # bfloat16 and the other ml_dtypes floats
    if values.ndim == 0 or values.ndim > 2:
        raise ValueError(f"y must have shape (n,) or (n, outputs); got shape {values.shape}.")
    if values.shape[0] != n:
        raise ValueError(f"y must have n = {n} rows like X; got {values.shape[0]}.")
    if values.dtype.kind in "fc" and not np.all(np.isfinite(values)):
        raise ValueError("y contains NaN or infinite values; drop or impute those rows.")
    if values.dtype == object and pd.isna(values).any():  # labels with None, NaN or pd.NA
        rows = np.flatnonzero(pd.isna(values).reshape(len(values), -1).any(axis=1))
        raise ValueError(f"y has {rows.size} missing labels (None or NaN; first at row "
                         f"{rows[0]}); drop or impute those rows.")
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
        w = None if self.weights is None else np.asarray(self.weights, np.float64)
        if self.task == "regression":
            with jax.enable_x64(True):  # float64 targets and sums: float32 targets of 1e4
                # moved a baseline MSE of 0.25 by 3e-5 (a float32 prediction stays as it is)
                out = _regression_items(self.name, *_sent(np.asarray(self.y, np.float64),
                                                         np.asarray(preds, np.float64), w))
            check_prediction_range(self.name, np.asarray(out))
        elif self.task == "classification":
            with jax.enable_x64(True):  # sums in float64, as scikit-learn's AUC of float64
                # scores: float32 sums differ by ~1e-7 and tie close float64 scores
                out = _classification_items(self.name, *_sent(
                    np.asarray(self.y, np.int32),
                    np.asarray(self._class_predictions(preds), np.float64), w))
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

    def check_probabilities(self, predictions: np.ndarray, n_model_outputs: int) -> None:
        """Refuse a classifier whose scored columns (of ``predictions`` (n, o_model) on the
        intact data) are not probabilities: values outside [0, 1], or rows of all the
        model's columns that do not sum to 1. Logits would be scored silently wrong."""
        if self.task != "classification" and self.name != "cross_entropy":
            return
        p = np.asarray(predictions, np.float64)[:, list(self.out_idx)]
        if self.classes is not None and p.shape[1] == 1 and np.all(np.isin(p, self.classes)):
            _refuse_hard_labels(self.name)  # one column of class labels: accuracy only
            return
        if self.name == "accuracy" and p.shape[1] >= 2:
            return  # the arg max of scores: the same class for logits and probabilities
        if self.name == "auc" and p.shape[1] == 1:
            return  # binary AUC ranks the scores: a decision function's margins too
        fix = ("if they are logits (scores before a softmax), pass response='logits', which "
               "applies a softmax (a sigmoid for one column)")
        low, high = float(p.min()), float(p.max())
        if low < -1e-6 or high > 1 + 1e-6:
            raise ValueError(
                f"loss={self.name!r} needs class probabilities, but the model's outputs "
                f"{list(self.output_names) if len(self.out_idx) > 1 else ''} range over "
                f"[{low:.3g}, {high:.3g}] on X; {fix}."
            )
        if p.shape[1] >= 2 and p.shape[1] == n_model_outputs:
            worst = float(np.abs(p.sum(axis=1) - 1).max())
            if worst > 1e-3:
                raise ValueError(
                    f"loss={self.name!r} needs class probabilities, but the model's "
                    f"{p.shape[1]} output columns do not sum to 1 on X (off by up to "
                    f"{worst:.3g}); {fix}."
                )

    def reducer(self, baseline_predictions: Callable[[], np.ndarray], n_model_outputs: int):
        """The engine reducer that scores items like :meth:`values`. A classifier's
        predictions on the intact data (``baseline_predictions()``, (n, o_model)) are checked
        to be probabilities (or, in one column, class labels: then they are scored as
        labels)."""
        base = None
        if self.task == "classification" or self.name == "cross_entropy":
            base = baseline_predictions()
            self.check_probabilities(base, n_model_outputs)
        if self.task == "callable" or self.name not in ROW_LOSSES:
            return Itemwise(self.values)
        w = np.ones(self.y.shape[0]) if self.weights is None else self.weights
        if self.task == "regression":
            total = None
            if self.name == "r2":
                center = np.average(self.y, axis=0, weights=w)
                total = np.einsum("nk,n->k", (self.y - center) ** 2, w)
            return LossSums(self.name, self.y, w, self.out_idx, r2_total=total)
        labels = None
        if self.classes is not None and len(self.out_idx) == 1:
            self._class_predictions(base[None][..., list(self.out_idx)])  # checks the column
            if np.all(np.isin(base[:, self.out_idx[0]], self.classes)):
                labels = self.classes.astype(np.float64)
        return LossSums(self.name, self.y, w, self.out_idx, labels=labels)

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
            codes, found = _class_positions(self.classes, preds[..., 0])
            codes = np.where(found, codes, -1)
            if self.name == "accuracy":
                return codes.astype(np.float32)
            onehot = codes[..., None] == np.arange(len(self.classes))
            return onehot.astype(np.float32)
        if len(self.classes) == 1:
            raise ValueError(
                f"y holds one class, {self.classes[0].item()!r}, and the model one probability "
                "column: which class it is the probability of is unknown. Code y as 0/1 (1: "
                "the class of the column), or give a classifier that knows its classes.")
        if len(self.classes) > 2:
            picked = (f"output= keeps one column ({self.output_names[0]!r}) of the model's "
                      "outputs and y has" if len(self.output_names) == 1 and self.output_names[
                          0] in {str(c) for c in self.classes} else
                      "the model returns one column and y has")
            raise ValueError(
                f"{picked} {len(self.classes)} classes; one column must hold class labels "
                "(values of y), but it holds other values. A classification loss reads one "
                "probability column per class: leave output out, or return them all."
            )
        return preds

    def _callable_values(self, preds: np.ndarray) -> np.ndarray:
        y = self.y
        passing = _weight_passing(self.fn)
        per_item = preds[..., 0] if preds.shape[-1] == 1 else preds

        def call(y, p, w):
            if passing is None:
                return self.fn(y, p)
            return self.fn(y, p, w) if passing == "positional" else self.fn(y, p,
                                                                             sample_weight=w)

        try:
            y_dev = jnp.asarray(y) if y.dtype.kind in "biuf" else None
        except TypeError:
            y_dev = None
        if y_dev is not None:
            w_dev = None if self.weights is None else jnp.asarray(self.weights)
            try:
                batched = jax.jit(jax.vmap(lambda p: jnp.asarray(call(y_dev, p, w_dev))))
                return np.asarray(batched(jnp.asarray(per_item)))
            except Exception:  # noqa: BLE001 - not traceable: call it on NumPy arrays below
                pass
        return np.stack([np.asarray(call(y, p, self.weights), dtype=np.float64)
                         for p in per_item])

    def importance(self, perturbed: np.ndarray, baseline: np.ndarray, kind: str) -> np.ndarray:
        """Importance of perturbed metric values against the baseline (broadcast); ``"raw"``:
        the perturbed loss itself (a score with best value 1 as its loss, ``1 - score``);
        ``"relative"``: the ratio less 1."""
        if kind == "relative":
            return self.importance(perturbed, baseline, "ratio") - 1.0
        if kind == "raw":
            return 1.0 - perturbed if self.bounded else np.array(perturbed, np.float64)
        if kind == "difference":
            return baseline - perturbed if self.score else perturbed - baseline
        if self.bounded:  # a score with best value 1: its loss is 1 - score
            perturbed, baseline = 1.0 - perturbed, 1.0 - baseline
        elif self.score:
            perturbed, baseline = baseline, perturbed
        if np.any(baseline == 0):
            raise ValueError(
                f"kind='{kind}' divides by the baseline {self.name} loss, which is 0 (the model "
                "fits these data exactly); use kind='difference'."
            )
        ratio = perturbed / baseline
        # a baseline 1e7 times below a perturbed loss is the model's rounding, not a loss: its
        # ratios (1e13 for a float32 model that fits exactly) would mean nothing
        if np.max(np.abs(ratio)) > _RATIO_LIMIT:
            raise ValueError(
                f"kind='{kind}' divides by the baseline {self.name} loss, "
                f"{float(np.min(np.abs(baseline))):.3g}, which is float rounding next to the "
                f"perturbed losses (up to {float(np.max(np.abs(perturbed))):.3g}): the model "
                "fits these data exactly up to rounding. Use kind='difference'."
            )
        return ratio


_RATIO_LIMIT = 1e7  # largest meaningful ratio of a perturbed loss to the baseline loss


def probabilities(logits, xp=np):
    """Class probabilities from logits (..., k): a softmax over the last axis, or a sigmoid
    for one column (the logit of class 1 of two)."""
    if logits.shape[-1] == 1:
        return 1 / (1 + xp.exp(-logits))
    shifted = logits - logits.max(axis=-1, keepdims=True)
    e = xp.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def logits_to_probabilities(predictor: Predictor) -> Predictor:
    """The model followed by :func:`probabilities` (one compiled function per model)."""
    from ..models import stable_apply

    def make_apply():
        def apply_probabilities(params, X):
            return probabilities(predictor.apply(params, X), jnp)

        return apply_probabilities

    apply = stable_apply(("probabilities", predictor.apply), make_apply)
    def host_probabilities(batch, _fn=predictor.host_fn):
        out = np.asarray(_fn(batch), np.float64)
        return probabilities(out.reshape(out.shape[0], -1))

    def device_probabilities(rows, _fn=predictor.device_fn):
        out = _fn(rows)
        return probabilities(out.reshape(out.shape[0], -1), jnp)

    host_fn = None if predictor.host_fn is None else host_probabilities
    device_fn = None if predictor.device_fn is None else device_probabilities
    return dataclasses.replace(predictor, apply=apply, host_fn=host_fn, device_fn=device_fn,
                               name=f"softmax({predictor.name})")


def check_response(response, loss) -> str:
    """``response`` validated: ``"logits"`` only with a built-in classification loss."""
    if not isinstance(response, str) or response not in RESPONSES:
        raise ValueError(f"response must be one of {RESPONSES}; got {response!r}.")
    loss = canonical_loss(loss)
    takes = (*_CLASSIFICATION, "cross_entropy")
    if response == "logits" and not (isinstance(loss, str) and loss in takes):
        raise ValueError(
            f"response='logits' turns a classifier's logits into probabilities for the losses "
            f"{takes}; got loss={loss!r}."
        )
    return response


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


def _weight_passing(fn: Callable) -> str | None:
    """How a loss callable takes case weights: ``"positional"`` (a third parameter),
    ``"keyword"`` (a ``sample_weight`` parameter, as scikit-learn's metrics) or None."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return "positional"
    values = list(params.values())
    positional = [p for p in values if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in values) or len(positional) >= 3:
        return "positional"
    keyword = params.get("sample_weight")
    if keyword is not None and keyword.kind is not keyword.POSITIONAL_ONLY:
        return "keyword"
    return None


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
    all_targets: np.ndarray | None = None,
) -> LossSpec:
    """Validate ``loss`` against the targets and the model's outputs (internal);
    ``all_targets``: those of every row, where ``y`` is a sample of them."""
    out_idx = tuple(select_outputs(predictor.output_names, output))
    names = tuple(predictor.output_names[i] for i in out_idx)
    o = len(out_idx)
    if callable(loss) and not isinstance(loss, str):
        if greater_is_better is not None and not isinstance(greater_is_better, bool):
            raise ValueError(f"greater_is_better must be True or False; got {greater_is_better!r}.")
        if weights is not None and _weight_passing(loss) is None:
            raise ValueError(
                "sample_weight was given but the loss callable takes only (y, prediction); "
                "give it a third parameter, weights, or a sample_weight keyword."
            )
        name = getattr(loss, "__name__", type(loss).__name__)
        return LossSpec(name, "callable", bool(greater_is_better), False, names,
                        out_idx, y, weights, fn=loss)
    if greater_is_better is not None:
        raise ValueError(
            f"greater_is_better applies to a callable loss only; got it with loss={loss!r}."
        )
    given, loss = loss, canonical_loss(loss)
    if loss == "log_loss" and _soft_labels(y):
        loss = "cross_entropy"  # hstats' logloss of probabilities as targets
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(
            f"loss must be one of {LOSSES} (or scikit-learn's scoring names "
            f"{sorted(SKLEARN_SCORING)}, R's {sorted(R_LOSS_NAMES)} or dalex's "
            f"{sorted(DALEX_LOSS_NAMES)}) or a callable "
            f"(y, prediction[, weights]); got {loss!r:.60}."
        )
    score = loss in _SCORES
    if loss in _REGRESSION:
        if y.dtype.kind not in "biuf":
            raise ValueError(
                f"loss={loss!r} needs numeric targets; y has dtype {y.dtype}. For class labels "
                "use loss='log_loss', 'accuracy' or 'auc'."
            )
        target = y.astype(np.float64).reshape(y.shape[0], -1)
        if target.shape[1] == 1 and o > 1 and given in _RECYCLING_NAMES:
            target = np.repeat(target, o, axis=1)
        if target.shape[1] != o:
            raise ValueError(
                f"y has {target.shape[1]} column(s) but {o} model output(s) are scored; pass y "
                f"of shape (n, {o}) or choose outputs with output=..."
                + (" For a classifier's class probabilities and y of class labels, use "
                   "loss='log_loss', 'accuracy' or 'auc'. hstats' loss names (e.g. "
                   "'squared_error') score one column of y against every output."
                   if target.shape[1] == 1 else "")
            )
        if loss == "r2":
            _check_varies(target, weights)
        _check_target_range(loss, target)
        return LossSpec(loss, "regression", score, score, names, out_idx, target, weights)
    if y.ndim == 2:
        if y.shape[1] != 1:
            raise ValueError(
                f"loss={loss!r} needs y of class labels, shape (n,); got shape {y.shape}."
            )
        y = y[:, 0]
    if getattr(predictor.host_fn, "hard_labels", False):  # one 0/1 column per class
        _refuse_hard_labels(loss)
    if out_idx == (0,) and predictor.classes is not None and len(predictor.classes) == 2:
        # a binary classifier's class-0 column: one column is read as the probability of
        # class 1, so the model is scored by that column (its losses are the model's)
        out_idx = (1,)
    if loss == "auc":
        present = np.unique(y if weights is None else y[np.asarray(weights) > 0])
        if present.size < 2:
            raise ValueError(
                f"loss='auc' needs at least two classes in y, on the rows scored; got only "
                f"{present.tolist()[:3]} ({y.shape[0]} rows). AUC is undefined there "
                "(scikit-learn gives NaN); use more rows or loss='log_loss' or 'accuracy'.")
    if o == 1:
        classes = _column_classes(y, predictor, all_targets)
        codes, found = _class_positions(classes, y)
        if not found.all():
            raise ValueError(f"y holds {y[~found][0].item()!r}, which is not one of the model's "
                             f"classes {classes.tolist()}.")
        return LossSpec(loss, "classification", score, score, ("y",), out_idx,
                        codes.astype(np.int32), weights, classes=classes)
    codes = _class_codes(y, names)
    if loss == "auc":  # one-vs-rest: a class without rows has no AUC
        present = np.unique(codes if weights is None else codes[np.asarray(weights) > 0])
        absent = [names[k] for k in range(len(names)) if k not in present]
        if absent:
            raise ValueError(
                f"loss='auc' averages one-vs-rest AUCs over the model's classes {list(names)}; "
                f"y lacks {absent} on the rows scored ({y.shape[0]} rows), whose AUC is "
                "undefined (scikit-learn's roc_auc_ovr raises). Score rows that hold every "
                "class, choose the classes' columns with output=[...], or use "
                "loss='log_loss'.")
    return LossSpec(loss, "classification", score, score, ("y",), out_idx, codes, weights)


def _soft_labels(y: np.ndarray) -> bool:
    """Whether ``y`` is one numeric column in [0, 1] that is not all 0 and 1: probabilities
    as targets, which a log loss scores as a cross-entropy."""
    if y.dtype.kind not in "fc" or (y.ndim == 2 and y.shape[1] != 1):
        return False
    return bool(np.all((y >= 0) & (y <= 1)) and not np.all((y == 0) | (y == 1)))


def _class_positions(classes: np.ndarray, values: np.ndarray):
    """Each value's position in ``classes`` (in the classifier's own order, not necessarily
    sorted) and whether it is one of them."""
    order = np.argsort(classes, kind="stable")
    at = np.clip(np.searchsorted(classes[order], values), 0, classes.size - 1)
    return order[at], classes[order][at] == values


def _column_classes(y: np.ndarray, predictor: Predictor, all_targets) -> np.ndarray:
    """The classes of a model scored by one column: a binary classifier's own two, else
    those of y (of all the rows, where y is some of them); a numeric y of 0 or 1 alone has
    both, since the column is the probability of the larger class (y = 1 alone is it)."""
    if predictor.classes is not None and len(predictor.classes) == 2:
        classes = np.asarray(predictor.classes)
        # text labels of numeric classes are read as their names, as several columns' are
        return classes.astype(str) if y.dtype.kind in "OUS" else classes
    classes = np.unique(y if all_targets is None else all_targets)
    if classes.size == 1 and classes.dtype.kind in "biuf" and classes[0] in (0, 1):
        classes = np.array([0, 1]).astype(classes.dtype)
    return classes


#: the targets a loss needs where not every number will do: (test of the bad ones, what it needs)
_TARGET_RANGES = {
    "poisson": (lambda y: y < 0, "non-negative targets (counts or rates)"),
    "gamma": (lambda y: y <= 0, "positive targets"),
    "cross_entropy": (lambda y: (y < 0) | (y > 1), "targets in [0, 1]"),
    "msle": (lambda y: y <= -1, "targets above -1"),
    "rmsle": (lambda y: y <= -1, "targets above -1"),
}


def _check_target_range(loss: str, target: np.ndarray) -> None:
    """Poisson deviance scores counts or rates (y >= 0), gamma deviance positive amounts,
    the log errors values above -1 (hstats and scikit-learn refuse other targets)."""
    if loss not in _TARGET_RANGES:
        return
    outside, need = _TARGET_RANGES[loss]
    bad = outside(target)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        raise ValueError(
            f"loss={loss!r} needs {need}; y has {rows.size} row(s) outside that (first at row "
            f"{rows[0]}: {target[rows[0]].tolist()}). Use loss='mse', or "
            + ("loss='poisson' for targets that may be 0." if loss == "gamma" else
               "drop those rows."))


def _check_varies(target: np.ndarray, weights: np.ndarray | None) -> None:
    """R^2 divides by the (weighted) total sum of squares of y: each column must vary on the
    rows scored."""
    rows = target if weights is None else target[np.asarray(weights) > 0]
    # the range, not the sum of squares, which may round above 0 for a constant y
    constant = np.flatnonzero(np.ptp(rows, axis=0) == 0) if len(rows) else np.zeros(0, int)
    if constant.size:
        raise ValueError(
            f"loss='r2' is undefined where y does not vary on the rows scored (column "
            f"{int(constant[0])} of y, {target.shape[0]} rows): its total sum of squares is 0 "
            "(scikit-learn's r2_score then reports 0 or NaN). Use loss='mse', or more rows.")


def _refuse_hard_labels(loss: str) -> None:
    """Log loss, Brier score and AUC of hard class labels are not scikit-learn's (its
    'neg_log_loss' and 'neg_brier_score' need ``predict_proba``, its 'roc_auc'
    ``decision_function`` or ``predict_proba``): refused, not scored silently otherwise."""
    if loss in ("log_loss", "brier"):
        scoring = "neg_log_loss" if loss == "log_loss" else "neg_brier_score"
        raise ValueError(
            f"loss={loss!r} needs class probabilities, but the model's outputs are hard class "
            "labels (a classifier without predict_proba is scored by its predict); "
            f"scikit-learn's {scoring!r} needs predict_proba too. Use loss='accuracy' or a "
            "model with predict_proba.")
    if loss == "auc":
        raise ValueError(
            "loss='auc' needs class scores, but the model's outputs are hard class labels (a "
            "classifier without predict_proba is scored by its predict); scikit-learn's "
            "'roc_auc' ranks its decision_function instead. Pass "
            "jaximp.as_predictor(model, response_method='decision_function'), or use "
            "loss='accuracy'.")


def row_loss_terms(reducer: LossSums, preds: np.ndarray) -> np.ndarray:
    """Per-row loss terms (b, n, k) in float64 of kept predictions (b, n, o), the terms
    :class:`jaximp.LossSums` sums (probabilities clipped at float64's machine epsilon)."""
    preds = np.asarray(preds)
    terms = reducer.row_terms(np.moveaxis(preds.astype(np.float64), 2, 1),
                              reducer.row_arrays()["y"], reducer.consts(), np)
    return np.moveaxis(terms, 1, 2)


def weighted_loss_metrics(reducer: LossSums, terms: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The metric of every item under every row weighting: (b, m, k) from terms (b, n, k)
    and weights (m, n), as ``LossSums.finalize`` turns its sums into the metric."""
    sums = np.einsum("bnk,mn->bmk", terms, weights)
    total = weights.sum(axis=1)[None, :, None]
    if reducer.name == "r2":
        y = np.asarray(reducer.y, np.float64).reshape(terms.shape[1], -1)
        centre = weights @ y / weights.sum(axis=1, keepdims=True)  # (m, k)
        spread = np.einsum("mn,mnk->mk", weights, (y[None] - centre[:, None]) ** 2)
        return 1.0 - sums / spread[None]
    mean = sums / total
    check_prediction_range(reducer.name, mean)
    return np.sqrt(mean) if reducer.name in ("rmse", "rmsle") else mean
