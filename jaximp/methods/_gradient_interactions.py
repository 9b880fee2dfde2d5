"""Derivative-based global sensitivity (DGSM) and gradient-based interactions of
differentiable (JAX) models: the mean absolute Hessian and integrated Hessians.

As the attributions of :mod:`._gradients`, each is one engine call with a derived predictor
whose outputs are per-row derivatives: squared gradients (DGSM) and absolute Hessians, averaged
over the rows (and bootstrap weightings of them) by the engine's :class:`~jaximp.engine.Mean`
reducer, and integrated Hessians kept per row. Hessians are forward-over-reverse (one ``jvp``
of the row gradients per column).
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..data import (
    Choice,
    Flag,
    Int,
    Replicates,
    as_key,
    check_choice,
    output_index,
    replicate_weights,
    summaries,
    user_stacklevel,
    validate_params,
)
from ..engine import Keep, Mean, predict_rows
from ..models import stable_apply
from ..results import FeatureImportance, FeatureInteraction, pair_values_frame
from ._attributions import COMPLETENESS_TOLERANCE
from ._gradients import (
    METHODS,
    Attributions,
    completeness_gap,
    feature_membership,
    gradient_setup,
    gradients,
    quadrature,
    resolve_baselines,
    run_derived,
    selected,
)
from ._setup import bootstrap_weights, keep_layout

__all__ = ["IntegratedHessians", "dgsm", "gradient_interactions"]


def _squared_gradient_apply(predictor, out_idx):
    def make():
        def apply(params, X):
            _, g = gradients(selected(predictor, params, out_idx), X)  # (o, m, c)
            return jnp.transpose(g * g, (1, 2, 0)).reshape(X.shape[0], -1)

        return apply

    return stable_apply(("dgsm", predictor.apply, tuple(out_idx)), make)


def _row_hessians(fn, Z):
    """Per-row Hessians (c, o, m, c) of a row-wise ``fn``: [j, k, i, l] = d2 f_k / dz_j dz_l
    at row i; one jvp of the row gradients per column j."""
    c = Z.shape[1]
    grad_of = lambda Z: gradients(fn, Z)[1]
    return jax.vmap(lambda e: jax.jvp(grad_of, (Z,), (jnp.broadcast_to(e, Z.shape),))[1])(
        jnp.eye(c, dtype=Z.dtype))


def _abs_hessian_apply(predictor, out_idx):
    def make():
        def apply(params, X):
            H = _row_hessians(selected(predictor, params, out_idx), X)  # (c, o, m, c)
            m = X.shape[0]
            return jnp.abs(jnp.transpose(H, (2, 0, 3, 1))).reshape(m, -1)

        return apply

    return stable_apply(("abs-hessian", predictor.apply, tuple(out_idx)), make)


def _integrated_hessian_apply(predictor, out_idx, n_alpha, n_baselines):
    """Per row: Gamma (c, c, o) flattened, f(x) (o), mean f(b) (o). Gamma_ij = (x_j - b_j)
    sum_beta w_beta d/dz_j IG_i(z_beta), z_beta = b + beta (x - b), with IG_i(z) = (z_i - b_i)
    sum_alpha w_alpha df/dz_i(b + alpha (z - b)) (Janizek et al. 2021, as path_explain)."""
    def make():
        def apply(params, X):
            base, baselines, alphas, weights = params
            fn = selected(predictor, base, out_idx)
            X = X.astype(baselines.dtype)
            o = len(out_idx)

            def one_baseline(total, b):
                def ig(Z):  # (m, c) -> (o, m, c), the inner integral over alpha
                    def step(acc, k):
                        _, g = gradients(fn, b + alphas[k] * (Z - b))
                        return acc + weights[k] * g, None

                    acc, _ = jax.lax.scan(step, jnp.zeros((o, *Z.shape), Z.dtype),
                                          jnp.arange(n_alpha))
                    return acc * (Z - b)[None]

                delta = X - b

                def outer(acc, k):  # d IG_i / dz_j at z_beta, one jvp per column j
                    Z = b + alphas[k] * delta
                    J = jax.vmap(lambda e: jax.jvp(ig, (Z,), (jnp.broadcast_to(e, Z.shape),))[1])(
                        jnp.eye(X.shape[1], dtype=X.dtype))  # (j, o, m, i)
                    return acc + weights[k] * J, None

                J, _ = jax.lax.scan(outer, jnp.zeros((X.shape[1], o, *X.shape), X.dtype),
                                    jnp.arange(n_alpha))
                gamma = jnp.transpose(J, (2, 3, 0, 1)) * delta[:, None, :, None]  # (m, i, j, o)
                return total + gamma / n_baselines, None

            m, c = X.shape
            gamma, _ = jax.lax.scan(one_baseline, jnp.zeros((m, c, c, o), X.dtype), baselines)
            f_b = jnp.broadcast_to(fn(baselines).mean(axis=0), (m, o))
            return jnp.concatenate([gamma.reshape(m, -1), fn(X).astype(X.dtype),
                                    f_b.astype(X.dtype)], axis=1)

        return apply

    key = ("integrated-hessians", predictor.apply, tuple(out_idx), n_alpha, n_baselines)
    return stable_apply(key, make)


def _bootstrap(dataset, n_bootstrap, random_state):
    weights, _ = bootstrap_weights(dataset, int(n_bootstrap), as_key(random_state))
    return weights  # (1 + r, n)


@validate_params(n_bootstrap=Replicates(), normalize=Flag())
def dgsm(
    model, X, *, normalize: bool = False, bounds=None, n_bootstrap: int = 100, random_state=0,
    output=None, feature_names=None, groups=None, sample_weight=None, variables=None,
    memory_budget: int | None = None, progress: bool | None = None,
) -> FeatureImportance:
    """Derivative-based global sensitivity measures (Sobol & Kucherenko 2009):
    ``nu_j = E[(df/dx_j)^2]`` over the rows of X.

    Parameters
    ----------
    model : JAX callable, Flax/Equinox module or jaximp.MLP
    X : array of shape (n, c) or DataFrame
        Rows drawn from the input distribution (the expectation is their weighted mean).
    normalize : bool, default False
        Return ``nu_j (b_j - a_j)^2 / (pi^2 Var f)``, the upper bound of the total Sobol
        index of a uniform input on ``[a_j, b_j]`` (Sobol & Kucherenko 2009; SALib's
        ``dgsm``), with ``Var f`` the variance of the predictions over the rows. ``nu`` stays
        in ``info["nu"]``.
    bounds : array of shape (c, 2), optional
        ``[a_j, b_j]`` for ``normalize``; default the observed minimum and maximum.
    n_bootstrap : int, default 100
        Bootstrap replicates over the rows for the intervals (weightings of the same
        gradients: no extra model call); 0 for none.
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        The bootstrap's key.
    output, feature_names, groups, sample_weight, variables, memory_budget, progress
        As in :func:`integrated_gradients`; a group's measure is ``E[|grad_S f|^2]``, the sum
        over its columns.

    Returns
    -------
    FeatureImportance
        ``method="dgsm"``; ``importances`` (p, o, r) the bootstrap replicates.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).uniform(size=(1000, 2))
    >>> imp = dgsm(lambda X: (X ** 2) @ jnp.array([1.0, 3.0]), X, n_bootstrap=0)
    >>> bool(np.allclose(imp.importances_mean[:, 0], [4 * np.mean(X[:, 0] ** 2),
    ...                                                36 * np.mean(X[:, 1] ** 2)], rtol=1e-5))
    True
    """
    dataset, predictor, out_idx, engine = gradient_setup(
        model, X, "dgsm", output=output, feature_names=feature_names, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress)
    _n, c = dataset.n_rows, dataset.n_columns
    o = len(out_idx)
    weights = _bootstrap(dataset, n_bootstrap, random_state)
    totals = run_derived(_squared_gradient_apply(predictor, out_idx), predictor.params, c * o,
                         predictor, dataset, Mean(weights), "dgsm", engine)[0]  # (1 + r, c*o)
    nu = np.einsum("pc,rco->por", feature_membership(dataset), totals.reshape(-1, c, o))
    info: dict[str, Any] = {"n_bootstrap": int(n_bootstrap), "normalize": bool(normalize)}
    if normalize:
        if bounds is None:
            low, high = dataset.X.min(axis=0), dataset.X.max(axis=0)
        else:
            bounds = np.asarray(bounds, np.float64)
            if bounds.shape != (c, 2):
                raise ValueError(f"bounds must have shape ({c}, 2); got {bounds.shape}.")
            low, high = bounds[:, 0], bounds[:, 1]
        if len(dataset.features) != c:
            raise ValueError("normalize=True needs single-column features; got groups.")
        preds = predict_rows(predictor, dataset, **engine)[:, out_idx].astype(np.float64)
        w = weights / weights.sum(axis=1, keepdims=True)  # (1 + r, n)
        mean = w @ preds
        variance = np.einsum("rn,rno->ro", w, (preds[None] - mean[:, None]) ** 2)  # (1 + r, o)
        if np.any((variance[0] <= 0) | (np.ptp(preds, axis=0) == 0)):  # rounding of a constant
            raise ValueError("the predictions are constant over the rows (Var f = 0); "
                             "normalize=True cannot scale by it.")
        scale = ((high - low) ** 2 / np.pi ** 2)[:, None, None]  # (p, 1, 1)
        info.update(nu=nu[..., 0], variance=variance[0], bounds=np.stack([low, high], 1))
        nu = nu * scale / variance.T[None]
    point, std, replicates = summaries(nu)
    return FeatureImportance(
        method="dgsm", feature_names=dataset.feature_names,
        output_names=tuple(predictor.output_names[i] for i in out_idx),
        importances_mean=point, importances_std=std, importances=replicates,
        info=keep_layout(info, dataset),
    )


@dataclasses.dataclass(frozen=True, eq=False)
class IntegratedHessians:
    """Integrated Hessians of explained rows (Janizek et al. 2021).

    Attributes
    ----------
    values : ndarray of shape (n, p, p, o)
        ``values[i, j, k]``: the interaction of features ``j`` and ``k`` at row ``i``; the
        diagonal holds the main effects. Summed over ``k`` they give the integrated gradients
        of ``j``, and over ``j, k`` ``f(x_i) - f(b)``.
    predictions, baseline_values : ndarray of shape (n, o)
    feature_names, output_names : tuple of str
    info : dict
        ``n_steps``, ``method``, ``baselines``, ``completeness_gap`` (o,), ``sample_weight``.
    """

    values: np.ndarray
    predictions: np.ndarray
    baseline_values: np.ndarray
    feature_names: tuple[str, ...]
    output_names: tuple[str, ...]
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        n, p, _, _o = self.values.shape
        return (f"IntegratedHessians({n} rows x {p} features, outputs {list(self.output_names)}"
                f", completeness gap {float(np.max(self.info['completeness_gap'])):.2e})")

    def attributions(self) -> Attributions:
        """The row sums: integrated gradients along the same path, as an Attributions."""
        n, p, _, _o = self.values.shape
        return Attributions(
            values=self.values.sum(axis=2), data=np.full((n, p), np.nan),
            feature_names=self.feature_names, output_names=self.output_names,
            method="integrated_gradients", predictions=self.predictions,
            baseline_values=self.baseline_values, info=dict(self.info))

    def interaction(self, n_bootstrap: int = 100, random_state=0) -> FeatureInteraction:
        """Mean over rows of each pair's full interaction ``|Gamma_jk + Gamma_kj|`` (both
        halves), with bootstrap replicates over the rows; ``info["matrix"]`` (p, p, o) holds
        the mean ``|Gamma_jk|`` with the main effects on the diagonal."""
        Replicates().check("n_bootstrap", n_bootstrap)
        n, p, _, _o = self.values.shape
        w = self.info.get("sample_weight")
        w = np.ones(n) if w is None else np.asarray(w, np.float64)
        weightings, _ = replicate_weights(w, int(n_bootstrap), as_key(random_state))
        weightings = weightings / weightings.sum(axis=1, keepdims=True)
        pairs = list(itertools.combinations(range(p), 2))
        j, k = (np.asarray(v, int) for v in zip(*pairs)) if pairs else (np.zeros(0, int),) * 2
        full = np.abs(self.values[:, j, k] + self.values[:, k, j])  # (n, s, o)
        means = np.einsum("rn,nso->sor", weightings, full)
        point, std, replicates = summaries(means)
        matrix = np.einsum("n,npqo->pqo", weightings[0], np.abs(self.values))
        return FeatureInteraction(
            method="integrated_hessians",
            feature_sets=tuple((self.feature_names[a], self.feature_names[b]) for a, b in pairs),
            output_names=self.output_names, values=point, values_std=std, replicates=replicates,
            info={"matrix": matrix, "n_bootstrap": int(n_bootstrap)})

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: ``row``, ``feature_1``, ``feature_2``, ``output``, ``interaction``."""
        return pair_values_frame(self.values, self.feature_names, self.output_names,
                                 "interaction")

    def plot(self, output: int | str | None = None, ax=None, **kwargs):
        """Heat map of the mean pair interactions (:meth:`interaction`)."""
        output_index(self.output_names, output)
        return self.interaction().plot(output=output, ax=ax, kind="heatmap", **kwargs)


def _warn_if_flat(second_derivatives: np.ndarray, method: str) -> None:
    """Warn where every second derivative (main effects included) is exactly 0: a linear or
    piecewise-linear model (ReLU), whose interactions at its kinks gradients cannot see."""
    if not second_derivatives.any():
        warnings.warn(
            f"{method}: every second derivative is exactly 0 on the rows: the model is linear "
            "or piecewise linear in its inputs (ReLU activations), where a Hessian sees no "
            "interaction even if the model has some. For such a model use jaximp.h_statistic "
            "or jaximp.shapley_interactions, which replace values.",
            RuntimeWarning, stacklevel=user_stacklevel())


@validate_params(kind=Choice("hessian", "integrated_hessians"), n_steps=Int(1),
                 method=Choice(*METHODS), n_bootstrap=Replicates())
def gradient_interactions(
    model, X, *, kind: str = "hessian", baselines=None, n_steps: int = 20,
    method: str = "gausslegendre", n_bootstrap: int = 100, random_state=0, output=None,
    feature_names=None, groups=None, sample_weight=None, variables=None,
    memory_budget: int | None = None, progress: bool | None = None,
):
    """Gradient-based feature interactions of a differentiable model.

    ``kind="hessian"``: the mean over the rows of ``|d2 f / dx_j dx_k|`` for every pair (a
    group pair: the sum over its block), as a :class:`~jaximp.FeatureInteraction` whose
    ``info["matrix"]`` (p, p, o) also holds the diagonal; bootstrap replicates over the rows.

    ``kind="integrated_hessians"`` (Janizek et al. 2021, as their path_explain package):
    ``Gamma_jk(x) = (x_k - b_k) int_0^1 d/dz_k IG_j(b + beta (x - b)) d beta`` with ``IG_j(z)
    = (z_j - b_j) int_0^1 df/dz_j(b + alpha (z - b)) d alpha``; off the diagonal this is
    ``(x_j - b_j)(x_k - b_k) int int alpha beta d2f/dx_j dx_k`` and each row sums to the
    integrated gradient, the whole matrix to ``f(x) - f(b)``. Both integrals use ``n_steps``
    nodes of ``method`` (path_explain's own grid is a ``linspace(0, 1, k)`` with equal
    weights; Gauss-Legendre reaches completeness with far fewer nodes). Returns an
    :class:`IntegratedHessians` (per row; ``.interaction()`` the global pairs, ``.plot()`` a
    heat map). Cost: ``n_steps^2 x c`` gradient evaluations per row and baseline.

    Parameters
    ----------
    kind : {"hessian", "integrated_hessians"}, default "hessian"
    baselines : None, float, "mean", "median", array of shape (c,) or (b, c), default None
        Integrated Hessians: as :func:`integrated_gradients` (zeros by default; several are
        averaged).
    n_steps : int, default 20
        Nodes per integral (integrated Hessians).
    method : str, default "gausslegendre"
        captum's approximations (:func:`quadrature`).
    n_bootstrap, random_state
        As in :func:`dgsm`: bootstrap replicates over the rows (``kind="hessian"``).
    output, feature_names, groups, sample_weight, variables, memory_budget, progress
        As in :func:`integrated_gradients`.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(20, 3))
    >>> h = gradient_interactions(lambda X: X[:, 0] * X[:, 1] + X[:, 2], X, n_bootstrap=0)
    >>> h.values[:, 0].round(4).tolist()  # pairs (x0, x1), (x0, x2), (x1, x2)
    [1.0, 0.0, 0.0]
    """
    dataset, predictor, out_idx, engine = gradient_setup(
        model, X, "gradient_interactions", output=output, feature_names=feature_names,
        groups=groups, sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress)
    check_choice(kind, "kind", ("hessian", "integrated_hessians"))
    n, c = dataset.n_rows, dataset.n_columns
    o = len(out_idx)
    member = feature_membership(dataset)
    p = member.shape[0]
    names = tuple(predictor.output_names[i] for i in out_idx)
    if kind == "hessian":
        weights = _bootstrap(dataset, n_bootstrap, random_state)
        totals = run_derived(_abs_hessian_apply(predictor, out_idx), predictor.params,
                             c * c * o, predictor, dataset, Mean(weights), "hessian",
                             engine)[0]  # (1 + r, c*c*o)
        matrix = np.einsum("pc,rcdo,qd->pqor", member, totals.reshape(-1, c, c, o), member)
        _warn_if_flat(matrix[..., 0], "gradient_interactions")
        pairs = list(itertools.combinations(range(p), 2))
        values = np.stack([matrix[a, b] for a, b in pairs]) if pairs else np.zeros((0, o, 1))
        point, std, replicates = summaries(values)
        return FeatureInteraction(
            method="mean_abs_hessian",
            feature_sets=tuple((dataset.feature_names[a], dataset.feature_names[b])
                               for a, b in pairs),
            output_names=names, values=point, values_std=std, replicates=replicates,
            info={"matrix": matrix[..., 0], "n_bootstrap": int(n_bootstrap)})
    base = resolve_baselines(baselines, dataset)
    alphas, weights = quadrature(method, n_steps)
    dtype = np.dtype(predictor.dtype)
    params = (predictor.params, np.asarray(base, dtype), alphas.astype(dtype),
              weights.astype(dtype))
    apply = _integrated_hessian_apply(predictor, out_idx, n_steps, base.shape[0])
    raw = run_derived(apply, params, c * c * o + 2 * o, predictor, dataset, Keep(),
                      "integrated hessians", engine)[0]
    gamma = raw[:, : c * c * o].reshape(n, c, c, o).astype(np.float64)
    gamma = np.einsum("pc,ncdo,qd->npqo", member, gamma, member)
    predictions = raw[:, c * c * o: c * c * o + o].astype(np.float64)
    baseline_values = raw[:, c * c * o + o:].astype(np.float64)
    _warn_if_flat(gamma, "integrated hessians")
    gap = completeness_gap(gamma.sum(axis=2), predictions, baseline_values)
    if np.max(gap) > COMPLETENESS_TOLERANCE:
        warnings.warn(
            f"integrated hessians miss completeness by a relative gap of {np.max(gap):.2%} "
            f"(> {COMPLETENESS_TOLERANCE:.0%}): raise n_steps, or see whether the model's "
            "second derivatives exist (ReLU networks have none at their kinks).",
            RuntimeWarning, stacklevel=user_stacklevel())
    return IntegratedHessians(
        values=gamma, predictions=predictions, baseline_values=baseline_values,
        feature_names=dataset.feature_names,
        output_names=names,
        info={"n_steps": n_steps, "method": method, "baselines": base,
              "completeness_gap": gap,
              "sample_weight": dataset.weights})
