"""Sobol indices of the model output on independent inputs (Sobol 1993; Saltelli et al. 2010).

The rows of X are the sample ``A``; a row permutation ``pi_r`` of them is the sample ``B``
(repeat ``r``), so ``f(B)`` is ``f(A)`` permuted and costs nothing. Item ``(j, r)`` of one
engine plan evaluates ``A_B^j``: row ``i`` with feature ``j``'s columns taken from row
``pi_r(i)``. A reducer folds, per item and per row weighting (the case weights, then the
bootstrap replicates), the two sums the estimators need:

- total (Jansen 1999): ``sum_i w_i (f(A)_i - f(A_B^j)_i)^2 / 2``,
- first order (Saltelli 2010): ``sum_i w_i (f(B)_i - mean f) (f(A_B^j)_i - f(A)_i)``,

each divided by ``sum_i w_i`` and the weighted variance of ``f(A)``. No prediction outlives its
block; bootstrap intervals cost no model evaluation.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from typing import Any

import jax
import numpy as np
import pandas as pd

from ..data import (
    Flag,
    Int,
    Replicates,
    as_key,
    output_index,
    select_outputs,
    validate_params,
)
from ..engine import (
    Reducer,
    at_coded_values,
    evaluate,
    key_bits,
    predict_rows,
    rng_stream,
)
from ..results import Details, FeatureImportance, FeatureInteraction, mean_and_std
from ._setup import (bootstrap_weights, cached_stage, digest, keep_layout, prepare,
                     warn_unresolved_values)

__all__ = ["SobolDetails", "SobolIndices", "sobol_indices"]

_PERMUTATION_STREAM = 29  # label of the B samples' row permutations


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class SobolDetails(Details):
    """Details of :func:`jaximp.sobol_indices`.

    Attributes
    ----------
    variance : ndarray of shape (o,)
        Weighted variance of the model output over the rows of X (``ddof=0``).
    n_repeats : int
        Resampled copies ``B`` of X.
    n_bootstrap : int
        Bootstrap replicates over rows behind the intervals (0: none).
    estimators : tuple of str
        ``("saltelli2010", "jansen1999")``: first order, total.
    """

    variance: np.ndarray
    n_repeats: int
    n_bootstrap: int
    estimators: tuple = ("saltelli2010", "jansen1999")


@dataclasses.dataclass(frozen=True, eq=False)
class SobolIndices:
    """First-order and total Sobol indices, per feature (or group) and model output.

    Attributes
    ----------
    first : FeatureImportance or None
        ``Var(E[f | x_j]) / Var(f)`` (``method="sobol_first"``), with bootstrap
        ``importances`` (p, o, r) behind ``intervals()``; None when not asked for.
    total : FeatureImportance or None
        ``E[Var(f | x_-j)] / Var(f)`` (``method="sobol_total"``); None when not asked for.
    info : SobolDetails
    second : FeatureInteraction or None
        Second-order indices of every pair, ``(Var(E[f | x_j, x_k]) - Var(E[f | x_j])
        - Var(E[f | x_k])) / Var(f)`` (``method="sobol_second"``; ``matrix()`` as a table);
        None unless asked for (``second=True``).
    """

    first: FeatureImportance | None
    total: FeatureImportance | None
    info: Any = None
    second: FeatureInteraction | None = None

    def _parts(self) -> dict[str, FeatureImportance]:
        return {name: part for name, part in (("first", self.first), ("total", self.total))
                if part is not None}

    def __repr__(self) -> str:
        def strongest(part) -> str:  # the default output's (the positive class's) top 3
            j = output_index(part.output_names, None)
            values = dict(zip(part.feature_names, part.importances_mean[:, j]))
            return ", ".join(f"{feat}={values[feat]:.3g}"
                             for feat in part.top(min(3, len(part.feature_names))))

        parts = [f"{name}: {strongest(part)}" for name, part in self._parts().items()]
        if self.second is not None:
            pairs = self.second.sorted()
            value = pairs.values[0, output_index(pairs.output_names, None)]
            parts.append(f"second: {':'.join(pairs.feature_sets[0])}={value:.3g}")
        some = next(iter(self._parts().values()), None)
        count = len(some.feature_names) if some else len(self.second.matrix())
        outputs = list((some or self.second).output_names)
        return f"SobolIndices({count} features, outputs {outputs}; {'; '.join(parts)})"

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per (index, feature, output): ``index`` ("first" or
        "total"), ``feature``, ``output``, ``value``, and with bootstrap replicates ``std``,
        ``q025``, ``q975``; second-order indices (``index`` "second") name their pair
        ``"a:b"``."""
        frames = []
        for name, part in self._parts().items():
            frame = part.to_frame(sort=False).rename(columns={"importance": "value"})
            frame.insert(0, "index", name)
            frames.append(frame)
        if self.second is not None:
            frame = self.second.to_frame(sort=False).rename(columns={"interaction": "value"})
            frame.insert(0, "feature", frame.pop("feature_1") + ":" + frame.pop("feature_2"))
            frame.insert(0, "index", "second")
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    def top(self, k: int, output: int | str | None = None, index: str = "total") -> list[str]:
        """The ``k`` features with the largest ``index`` ("total" or "first")."""
        return self._part(index).top(k, output)

    def plot(self, index: str = "total", output: int | str | None = None, ax=None, **kwargs):
        """Bars of one index ("total", "first") with bootstrap interval whiskers, or the
        second-order indices' pairs (``index="second"``, as ``second.plot()``); returns the
        Axes."""
        if index == "second" and self.second is not None:
            return self.second.plot(output=output, ax=ax, **kwargs)
        return self._part(index).plot(output=output, ax=ax, **kwargs)

    def _part(self, index: str) -> FeatureImportance:
        parts = self._parts()
        if index not in parts:
            raise ValueError(
                f"index must be one of {list(parts)} (those computed); got {index!r}." if parts
                else "this result holds second-order indices only (first=False, total=False); "
                     "their pairs: result.second.top(k), result.second.plot().")
        return parts[index]


@dataclasses.dataclass(frozen=True, eq=False)
class _SobolSums(Reducer):
    """Per item ``(j, r)`` (item ``k = j * n_repeats + r``) and weighting ``w``: the weighted
    means over rows of ``(f(A_B^j) - f(A))^2`` and ``(f(B) - mean) (f(A_B^j) - f(A))``.
    Result (b, weightings, 2, o)."""

    weights: np.ndarray  # (W, n)
    fa: np.ndarray  # (n, o) f(A)
    fb: np.ndarray  # (n, R, o) f(B) for each repeat, centred
    n_repeats: int

    def row_arrays(self):
        w = self.weights.T
        if w.shape[1] == 1:  # a second, zero column: see the engine's Mean reducer
            w = np.concatenate([w, np.zeros_like(w)], axis=1)
        return {"w": np.ascontiguousarray(w, np.float32), "fa": self.fa, "fb": self.fb}

    def key(self):
        return ("SobolSums", self.weights.shape[0] == 1, self.n_repeats)

    def partial_shape(self, n_outputs):
        return (self.weights.shape[0], 2, n_outputs)

    def partial(self, preds, rows, valid, items, consts, xp):
        difference = preds - xp.transpose(rows["fa"])[None].astype(preds.dtype)  # (ib, o, n)
        fb = xp.transpose(rows["fb"][:, items % self.n_repeats], (1, 2, 0))  # (ib, o, n)
        w = rows["w"].astype(preds.dtype) * valid[:, None]  # (n, W')
        terms = xp.stack([difference * difference, fb.astype(preds.dtype) * difference], 1)
        sums = xp.einsum("bton,nw->bwto", terms, w)  # (ib, W', 2, o)
        return sums[:, :self.weights.shape[0]]

    def finalize(self, total):
        return total / self.weights.sum(axis=1)[None, :, None, None]


def _warn_if_dependent(dataset, threshold: float = 0.5) -> None:
    """Sobol indices assume independent inputs; resampling one column of correlated data
    scores the model off the data. Warn when two columns of different features correlate
    above ``threshold`` (a group's columns are resampled together)."""
    X = dataset.X
    spread = X.std(axis=0)
    varying = spread > 0
    if varying.sum() < 2:
        return
    owner = np.empty(X.shape[1], int)
    for k, feat in enumerate(dataset.features):
        owner[list(feat.columns)] = k
    owner = owner[varying]
    corr = np.corrcoef(X[:, varying], rowvar=False)
    corr[owner[:, None] == owner[None, :]] = 0.0  # the diagonal, and columns of one group
    a, b = np.unravel_index(np.argmax(np.abs(corr)), corr.shape)
    if abs(corr[a, b]) > threshold:
        names = [name for name, keep in zip(dataset.column_names, varying) if keep]
        warnings.warn(
            f"sobol_indices assumes independent inputs, but {names[a]!r} and {names[b]!r} "
            f"correlate at {corr[a, b]:.2f}: resampling one of them alone evaluates the model "
            "off the data, and the indices are not those of the dependent inputs. "
            "conditional_importance or sage_importance respect the dependence.",
            UserWarning, stacklevel=3)


@validate_params(first=Flag(), total=Flag(), second=Flag(), n_repeats=Int(1),
                 n_bootstrap=Replicates())
def sobol_indices(
    model,
    X,
    *,
    first: bool = True,
    total: bool = True,
    second: bool = False,
    features=None,
    output=None,
    n_repeats: int = 5,
    n_bootstrap: int = 100,
    random_state: int | jax.Array | None = 0,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> SobolIndices:
    """First-order and total Sobol indices of the model output, for independent inputs.

    ``first_j = Var(E[f | x_j]) / Var(f)`` is the share of the output's variance that ``x_j``
    explains alone; ``total_j = E[Var(f | x_-j)] / Var(f) = E[(f(x) - f(x with x_j
    resampled))^2] / (2 Var(f))`` the share it takes part in, interactions included (the
    total index is permutation importance with the model's own output as the target,
    normalised by its variance). ``total_j - first_j`` measures the interactions of ``x_j``.
    The rows of X stand for the input distribution; the indices assume independent features.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        Rows drawn from the input distribution.
    first, total : bool, default True
        Which indices to return (both cost the same evaluations).
    second : bool, default False
        Also the second-order index of every pair of features (SALib's ``S2``), from the
        first-order estimator of the pair taken together less those of its two features:
        ``n_repeats x n`` more model rows per pair.
    features : str, int or list, optional
        Features (or groups) to score; default all.
    output : int, str or list, optional
        Model outputs (default all); indices are per output.
    n_repeats : int, default 5
        Resampled copies ``B`` of X (row permutations): ``n_repeats x p x n`` model rows,
        averaged into one estimate.
    n_bootstrap : int, default 100
        Bootstrap replicates over the rows of X (0: none): ``importances`` (p, o, r),
        ``importances_std`` and percentile ``intervals()`` of each index, at no model cost
        (each row keeps its resampled partners).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Row permutations and bootstrap replicates.
    feature_names, categorical, groups
        Data description (see :func:`jaximp.as_dataset`); a group is resampled as one.
    variables, memory_budget, progress
        As in :func:`jaximp.permutation_importance`.

    Returns
    -------
    SobolIndices
        ``first`` and ``total`` (:class:`FeatureImportance`, ``method="sobol_first"`` and
        ``"sobol_total"``), ``to_frame()``, ``plot()``; ``info.variance`` is ``Var(f)``;
        ``second`` (:class:`FeatureInteraction`) with ``second=True``.

    Notes
    -----
    Estimators (Saltelli et al. 2010, table 2): first order ``mean((f(B) - mean f)
    (f(A_B^j) - f(A))) / V`` (Saltelli 2010; centring ``f(B)`` lowers the variance and keeps
    it unbiased), total ``mean((f(A) - f(A_B^j))^2) / (2 V)`` (Jansen 1999), with
    ``A_B^j`` the rows of X with ``x_j`` from the permuted rows ``B`` and ``V`` the variance of
    ``f`` over X (``ddof=0``). Both are averaged over the repeats. Second order: the
    first-order estimator with ``x_j`` and ``x_k`` both from ``B`` gives the closed index
    ``Var(E[f | x_j, x_k]) / V``, less the two first-order estimates.

    References
    ----------
    Sobol' (1993), "Sensitivity estimates for nonlinear mathematical models", Math. Model.
    Comput. Exp. 1. Jansen (1999), "Analysis of variance designs for model output", Comput.
    Phys. Commun. 117. Saltelli et al. (2010), "Variance based sensitivity analysis of model
    output. Design and estimator for the total sensitivity index", Comput. Phys. Commun. 181.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(2000, 3))
    >>> indices = sobol_indices(lambda X: X[:, 0] + 2 * X[:, 1], X, n_bootstrap=0)
    >>> np.round(indices.total.importances_mean[:, 0], 1)  # 1/5, 4/5, 0
    array([0.2, 0.8, 0. ])
    """
    key = as_key(random_state)
    key_permutations, key_bootstrap = jax.random.split(key)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        variables=variables, memory_budget=memory_budget, progress=progress)
    warn_unresolved_values(predictor, dataset)
    n, c = dataset.n_rows, dataset.n_columns
    if n < 2:
        raise ValueError(f"sobol_indices needs at least 2 rows of X to resample; got {n}.")
    if dataset.weights is not None:  # e.g. the Dataset of a weighted Explainer
        raise ValueError("sobol_indices resamples the rows of X as draws from the input "
                         "distribution and takes no case weights; pass unweighted rows (an "
                         "Explainer made without sample_weight).")
    if not (first or total or second):
        raise ValueError("ask for at least one index: first=True, total=True or second=True.")
    out_idx = select_outputs(predictor.output_names, output)
    chosen = dataset.resolve(features)
    p, r = len(chosen), n_repeats
    if second and p < 2:
        raise ValueError(f"second=True needs at least 2 features to pair; got {p}.")
    # the sets whose columns come from B: each feature, then each pair (second order)
    sets = [(j,) for j in range(p)] + (list(itertools.combinations(range(p), 2)) if second
                                       else [])
    engine = {"memory_budget": memory_budget, "progress": progress}
    _warn_if_dependent(dataset)

    bits = key_bits(key_permutations)
    all_weights, _ = bootstrap_weights(dataset, n_bootstrap, key_bootstrap)  # (1 + b, n)

    def predictions():  # f(A): (n, o)
        return predict_rows(predictor, dataset, **engine).astype(np.float64)

    # a model that can change in place (a host model refitted, a module trained in place) is
    # called again: f(A) keys the kept stage, which depends on the model through it alone
    current = predictions() if predictor.stateful else None

    def build():
        """f(A), the resampled rows' plan and the reducer (kept on an Explainer for its
        repeats, as permutation importance keeps its plans)."""
        fa = predictions() if current is None else current
        perms = np.stack([rng_stream(bits, _PERMUTATION_STREAM, k).permutation(n)
                          for k in range(r)])  # (R, n): row i of B_k is row perms[k, i] of X
        fb = fa[perms].transpose(1, 0, 2) - fa.mean(axis=0)  # (n, R, o), centred
        masks = np.zeros((len(sets), c), bool)
        for k, members in enumerate(sets):
            for j in members:
                masks[k, list(chosen[j].columns)] = True
        plan = at_coded_values(masks, np.repeat(np.arange(len(sets)), r), dataset.X, perms,
                               np.tile(np.arange(r), len(sets)),
                               np.zeros(len(sets) * r, np.int32))
        return fa, plan, _SobolSums(all_weights, fa, fb, r)

    fa, plan, reducer = cached_stage(
        dataset, ("Sobol indices", predictor, tuple(dataset.positions(chosen)), r, second,
                  tuple(bits), n_bootstrap, tuple(key_bits(key_bootstrap)), digest(current)),
        build)
    sums = evaluate(predictor, dataset, plan, reducer, label="Sobol indices", **engine)
    sums = sums.reshape(len(sets), r, *sums.shape[1:]).mean(axis=1)  # (sets, W, 2, o)

    means = all_weights @ fa / all_weights.sum(axis=1)[:, None]  # (W, o)
    variance = np.einsum("wn,wno->wo", all_weights, (fa[None] - means[:, None]) ** 2) \
        / all_weights.sum(axis=1)[:, None]
    if np.any(((variance[0] <= 0) | (np.ptp(fa, axis=0) == 0))[out_idx]):  # a constant
        raise ValueError("the model output is constant over X (zero variance), so Sobol "
                         "indices are undefined.")
    with np.errstate(divide="ignore", invalid="ignore"):  # a replicate may hold one row
        closed = sums[:, :, 1] / variance[None]  # (sets, W, o): Var(E[f | x_set]) / V
        estimates = {"total": sums[:p, :, 0] / (2 * variance[None]), "first": closed[:p],
                     "second": np.stack([closed[k] - closed[a] - closed[b]
                                         for k, (a, b) in enumerate(sets[p:], p)])
                     if second else None}  # (p or pairs, W, o)
    names = tuple(f.name for f in chosen)
    outputs = tuple(predictor.output_names[k] for k in out_idx)

    def parts(kind):
        values = estimates[kind][..., out_idx].transpose(0, 2, 1)  # (p, o, W)
        replicates = values[..., 1:] if n_bootstrap else None
        std = None if replicates is None else mean_and_std(replicates)[1]
        return values[..., 0], std, replicates

    def result(kind):
        mean, std, replicates = parts(kind)
        return FeatureImportance(method=f"sobol_{kind}", feature_names=names,
                                 output_names=outputs, importances_mean=mean,
                                 importances_std=std, importances=replicates,
                                 info=keep_layout({}, dataset, chosen))

    pairs = None
    if second:
        mean, std, replicates = parts("second")
        pairs = FeatureInteraction("sobol_second", tuple((names[a], names[b])
                                                         for a, b in sets[p:]),
                                   outputs, mean, std, replicates)
    details = SobolDetails(variance=variance[0, out_idx], n_repeats=r, n_bootstrap=n_bootstrap)
    return SobolIndices(result("first") if first else None,
                        result("total") if total else None, details, pairs)
