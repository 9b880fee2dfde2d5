"""Trend estimators: in which direction does each feature move the target?

Following Gerstorfer, Krieg & Hahn-Klimroth (2023), for every feature at once:

- ``"pearson"``, ``"spearman"``: Pearson's r(x, y) and Spearman's rho(x, y) (average ranks for
  ties, as ``scipy.stats.spearmanr``) of the raw data;
- ``"linear"``: the coefficient of the feature in a least-squares linear model of y on all
  features with an intercept (:func:`jaximp.linear_importance`), with its two-sided t-test
  p-value (``2 P(T_{n-k} > |t|)``, computed in float64 from the regularized incomplete beta
  function);
- ``"shapley_pearson"``, ``"shapley_spearman"``: r(x, s(x)) and rho(x, s(x)), where ``s(x)``
  are the feature's Shapley values for the model: a positive trend is a feature whose larger
  values push the prediction up;
- ``"atr"``, ``"rtr"``: the absolute and relative transversal rates of a tree ensemble (split by
  split, is the average target right of the threshold above the one left of it?), read from
  the fitted trees by :func:`jaximp.transversal_rates`. They are left out when that function
  is not available or the model is not a scikit-learn tree ensemble.

Bootstrap, as the authors (mean and sd over 100 fits on 70 % subsets): ``n_bootstrap`` subsets
of ``subsample * n`` rows drawn without replacement. With ``fit`` the model is refitted on each
subset (and its Shapley values and transversal rates recomputed); without it the statistics are
recomputed on the subset's rows with the one given model (its Shapley values are computed once,
on all rows, and the subset's rows taken), so the transversal rates, which depend on the model
only, get no spread.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from jaximp.kernels import _decorrelation as K

from ..data import (
    Index,
    Real,
    Replicates,
    as_key,
    numeric_matrix,
    output_index,
    validate_params,
)
from ..engine import key_bits, rng_stream
from ..results import TrendsDetails, new_figure
from ._loss import check_target

__all__ = ["Trends", "trends"]

ESTIMATORS = ("pearson", "spearman", "linear", "shapley_pearson", "shapley_spearman", "atr",
              "rtr")
_SHAPLEY = ("shapley_pearson", "shapley_spearman")
_TREES = ("atr", "rtr")


@dataclasses.dataclass(frozen=True, eq=False)
class Trends:
    """Trend estimates of every feature: the sign says the direction, the size the strength.

    Attributes
    ----------
    feature_names : tuple of str, length p
    estimators : tuple of str, length e
        The estimators computed, in the order of ``jaximp.methods._trends.ESTIMATORS``.
    output_names : tuple of str, length o
        The targets: ``("y",)``, one (an output axis as every result keeps).
    values : ndarray of shape (e, p, o)
        Estimates on all rows.
    values_std : ndarray of shape (e, p, o) or None
        Standard deviation over the bootstrap subsets (ddof 0, as every ``*_std``), those
        where the feature varies (on a subset where it is constant its estimates are NaN);
        NaN for the transversal rates when the model is not refitted (they do not depend on
        the rows).
        None without bootstrap.
    replicates : ndarray of shape (e, p, o, r) or None
        The estimates on each subset.
    p_values : ndarray of shape (p, o) or None
        Two-sided p-values of the linear-model coefficients (when ``"linear"`` was computed).
    info : TrendsDetails
        ``n_bootstrap``, ``subsample``, ``refit``, ``skipped`` (estimators left out, with why),
        and ``linear_t`` (the t statistics) when ``"linear"`` was computed.
    """

    feature_names: tuple[str, ...]
    estimators: tuple[str, ...]
    output_names: tuple[str, ...]
    values: np.ndarray
    values_std: np.ndarray | None = None
    replicates: np.ndarray | None = None
    p_values: np.ndarray | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        spread = (f", {self.replicates.shape[-1]} bootstrap subsets"
                  if self.replicates is not None else "")
        head = "; ".join(
            f"{name}: " + ", ".join(f"{f}={v:+.2f}" for f, v in
                                    zip(self.feature_names[:3], self.values[e, :3, 0]))
            + (", ..." if len(self.feature_names) > 3 else "")
            for e, name in enumerate(self.estimators[:2]))
        return (f"Trends({len(self.estimators)} estimators x {len(self.feature_names)} "
                f"features{spread}; {head})")

    def to_frame(self) -> pd.DataFrame:
        """Tidy table, one row per (estimator, feature, output): ``feature``, ``estimator``,
        ``output``, ``value``, ``std`` (NaN without bootstrap), ``q025``, ``q975`` (the 95%
        percentile interval over the subsets, with bootstrap) and ``p_value`` (the linear
        coefficient's; NaN for the other estimators)."""
        e, p, o = self.values.shape
        sd = self.values_std if self.values_std is not None else np.full((e, p, o), np.nan)
        p_value = np.full((e, p, o), np.nan)
        if self.p_values is not None and "linear" in self.estimators:
            p_value[self.estimators.index("linear")] = self.p_values
        frame = pd.DataFrame({
            "feature": np.tile(np.repeat(np.asarray(self.feature_names, dtype=object), o), e),
            "estimator": np.repeat(np.asarray(self.estimators, dtype=object), p * o),
            "output": np.tile(np.asarray(self.output_names, dtype=object), e * p),
            "value": self.values.reshape(-1),
            "std": sd.reshape(-1),
        })
        if self.replicates is not None:
            low, high = self.intervals()
            frame["q025"], frame["q975"] = low.reshape(-1), high.reshape(-1)
        frame["p_value"] = p_value.reshape(-1)
        return frame

    def intervals(self, confidence: float = 0.95) -> np.ndarray:
        """Percentile intervals over the bootstrap subsets, shape (2, e, p, o)."""
        from ..results import interval_probabilities

        if self.replicates is None:
            raise ValueError("these trends have no bootstrap subsets; rerun with n_bootstrap "
                             ">= 2.")
        with warnings.catch_warnings():  # all NaN: the transversal rates without refits
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanquantile(self.replicates, interval_probabilities(confidence),
                                  axis=-1)

    def std(self, ddof: int = 0) -> np.ndarray:
        """Standard deviation over the bootstrap subsets, shape (e, p, o); ``ddof=0`` equals
        ``values_std``, ``ddof=1`` is R's ``sd()``."""
        from ..results import replicate_std

        return replicate_std(self.replicates, ddof, "trends")

    def plot(self, output: int | str | None = None, axes=None):
        """One dot plot per estimator for one output (features down, value across, error bars
        of one sd, a line at 0); returns the array of Axes."""
        j = output_index(self.output_names, output)
        e, p, _ = self.values.shape
        if axes is None:
            _, axes = new_figure(2.2 * e + 1, 0.3 * p + 1.2, ncols=e, sharey=True,
                                   squeeze=False)
            axes = axes[0]
        positions = np.arange(p)[::-1]
        for k, ax in enumerate(np.ravel(axes)[:e]):
            err = None if self.values_std is None else np.nan_to_num(self.values_std[k, :, j])
            ax.errorbar(self.values[k, :, j], positions, xerr=err, fmt="o", color="tab:blue",
                        ecolor="tab:gray", capsize=2)
            ax.axvline(0.0, color="k", lw=0.6)
            ax.set_title(self.estimators[k], fontsize=9)
            ax.set_yticks(positions, self.feature_names)
        return axes


def _check_methods(methods) -> tuple[tuple[str, ...], bool]:
    """The estimators asked for, in canonical order, and whether the user named them."""
    if methods is None:
        return ESTIMATORS, False
    listed = [methods] if isinstance(methods, str) else list(methods)
    unknown = [m for m in listed if m not in ESTIMATORS]
    if unknown or not listed:
        raise ValueError(f"methods must be a non-empty list of {ESTIMATORS}; got {methods!r}.")
    return tuple(m for m in ESTIMATORS if m in listed), True


def _two_sided_p(t: np.ndarray, df: int) -> np.ndarray:
    """``2 P(T_df > |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2)`` in float64."""
    t = np.asarray(t, np.float64)
    with jax.enable_x64(True):
        p = jax.scipy.special.betainc(df / 2.0, 0.5, df / (df + t * t))
        return np.asarray(p, np.float64)


@jax.jit
def _correlations(X, y, S):
    """Pearson and Spearman of (x, y) and of (x, s(x)) for every column: (4, p). S may be
    all-NaN (no Shapley values)."""
    by_column = jax.vmap(lambda x: jnp.stack([K.pearson(x, y), K.spearman(x, y)]), in_axes=1)
    with_shapley = jax.vmap(lambda x, s: jnp.stack([K.pearson(x, s), K.spearman(x, s)]),
                            in_axes=(1, 1))
    return jnp.concatenate([by_column(X).T, with_shapley(X, S).T])


def _shapley_array(values, n: int, p: int, output: int | None, model=None) -> np.ndarray:
    """Shapley values (n, p) for one output from an array or an object with ``.values``;
    ``output`` None is the default output (:func:`_default_shapley_output`)."""
    names = getattr(values, "output_names", None)
    values = np.asarray(getattr(values, "values", values), np.float64)
    if values.ndim == 3:
        if output is None:
            output = _default_shapley_output(names, values.shape[2], model)
        if not -values.shape[2] <= output < values.shape[2]:
            raise ValueError(
                f"output must be an index below {values.shape[2]} (the Shapley values' outputs); "
                f"got {output}."
            )
        values = values[:, :, output]
    if values.shape != (n, p):
        raise ValueError(
            f"shapley values must have shape (n, p) = ({n}, {p}) or (n, p, o); got "
            f"{values.shape}. Fix: pass the values of the rows of X, one column per feature."
        )
    return values


def _default_shapley_output(names, n_outputs: int, model) -> int:
    """The positive class (1) for the two outputs of a binary classifier, as the transversal
    rates compare; else the first. Known from the values' output names (jaximp's results) or,
    for a bare array with two outputs, from a model with two ``classes_`` (shap's values of
    a scikit-learn classifier)."""
    if names is not None:
        return output_index(names, None)
    classes = getattr(model, "classes_", None)
    two_classes = classes is not None and np.ndim(classes) == 1 and len(classes) == 2
    return 1 if two_classes and n_outputs == 2 else 0


class _Unavailable(Exception):
    """An estimator that cannot be computed here (left out when not asked for by name)."""


def _shapley_of(model, X, shapley, background, n, p, output):
    if model is None and (shapley is None or callable(shapley)):
        raise _Unavailable("no model was given (model=None and no fit)")
    if shapley is None:
        try:
            from ._shapley import shapley_values
        except ImportError as err:
            raise _Unavailable("jaximp.shapley_values is not available") from err
        return _shapley_array(shapley_values(model, X, background=background), n, p, output,
                              model)
    if callable(shapley) and not hasattr(shapley, "values"):
        return _shapley_array(shapley(model, X), n, p, output, model)
    return _shapley_array(shapley, n, p, output, model)


def _transversal_rates(model, p):
    if model is None:
        raise _Unavailable("no model was given (model=None and no fit)")
    try:
        from ._tree_stats import transversal_rates
    except ImportError as err:
        raise _Unavailable("jaximp.transversal_rates is not available") from err
    try:
        rates = transversal_rates(model)
    except TypeError as err:
        raise _Unavailable(f"the model is not a scikit-learn tree ensemble ({err})") from err
    return np.stack([np.asarray(rates.atr, np.float64).reshape(p),
                     np.asarray(rates.rtr, np.float64).reshape(p)])


@validate_params(n_bootstrap=Replicates(),
                 subsample=Real(0, 1, "right", fix="The share of the rows in each subset, "
                                "e.g. 0.7."),
                 output=Index(none=True, fix="The output of (n, p, o) Shapley values to use."))
def trends(
    model,
    X,
    y,
    *,
    shapley=None,
    methods: Sequence[str] | None = None,
    fit: Callable | None = None,
    n_bootstrap: int = 0,
    subsample: float = 0.7,
    output: int | None = None,
    background=None,
    random_state: int | jax.Array = 0,
    feature_names=None,
) -> Trends:
    """Trend of every feature: Pearson, Spearman, the linear-model coefficient, Shapley trends
    and transversal rates (Gerstorfer, Krieg & Hahn-Klimroth 2023).

    See :mod:`jaximp.methods._trends` for the definitions. The linear coefficient is the trend
    practitioners often read off a linear model; it can have the wrong sign when features are
    correlated and the relation is not linear, where in the authors' experiments the Shapley
    trends of a forest and its transversal rates kept the sign of the marginal relation.

    Parameters
    ----------
    model : fitted model or None
        The model whose Shapley values (and, for a scikit-learn tree ensemble, transversal
        rates) are read. None with ``fit``: ``fit(X, y)``.
    X : array of shape (n, p) or DataFrame
        Numeric features, one column each.
    y : array of shape (n,)
        Numeric target.
    shapley : array, object, callable or None
        The model's Shapley values on ``X``: an array (n, p) or (n, p, o), an object whose
        ``.values`` is one (as ``jaximp.shapley_values`` returns), or ``shapley(model, X)``
        returning either. Default: :func:`jaximp.shapley_values` ``(model, X,
        background=background)``; the Shapley estimators are left out (``info["skipped"]``)
        when that is unavailable, unless named in ``methods``. Precomputed values cannot be
        combined with ``fit`` (they belong to one model).
    methods : list of str, optional
        Estimators to compute (default all available): ``"pearson"``, ``"spearman"``,
        ``"linear"``, ``"shapley_pearson"``, ``"shapley_spearman"``, ``"atr"``, ``"rtr"``.
        Naming one that cannot be computed raises an error.
    fit : callable, optional
        ``fit(X, y) -> model`` to refit the model on every bootstrap subset (X in the user's
        types: a DataFrame's rows, or an array's).
    n_bootstrap : int, default 0
        Subsets (0: none; else >= 2). The authors used 100.
    subsample : float, default 0.7
        Share of the rows in each subset, drawn without replacement.
    output : int, optional
        Which output of (n, p, o) Shapley values to use. Default: the positive class (the
        second output) for a binary classifier's probabilities, which the transversal rates
        also compare, else the first output; ``output=0`` gives class 0.
    background : array, optional
        Passed to ``shapley_values`` (default there: X).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Draws the subsets.
    feature_names : sequence of str, optional

    Returns
    -------
    Trends
        ``values`` (e, p, o) with one output (o = 1, the target ``y``), ``values_std`` and
        ``replicates`` (e, p, o, r) over the subsets, ``p_values`` (p, o) of the linear
        coefficients, ``to_frame()`` and ``plot()``.

    References
    ----------
    Gerstorfer, Y., Krieg, L. and Hahn-Klimroth, M. (2023). A notion of feature importance by
    decorrelation and detection of trends by random forest regression. arXiv:2303.01156.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.normal(size=200)
    >>> shap = X * np.array([1.0, -2.0])   # Shapley values of the linear model (centred X)
    >>> t = trends(None, X, y, shapley=shap, methods=["pearson", "linear", "shapley_pearson"])
    >>> np.sign(t.values[..., 0])   # (estimators, features) of the one output
    array([[ 1., -1.],
           [ 1., -1.],
           [ 1., -1.]])
    """
    estimators, named = _check_methods(methods)
    n_bootstrap, subsample = int(n_bootstrap), float(subsample)
    if fit is not None and not callable(fit):
        raise TypeError(f"fit must be a function fit(X, y) -> model or None; got {fit!r:.60}.")
    if fit is not None and shapley is not None and not (
            callable(shapley) and not hasattr(shapley, "values")):
        raise ValueError(
            "precomputed shapley values belong to one model, but fit=... refits it on every "
            "subset. Fix: pass shapley=None (jaximp.shapley_values) or a function "
            "shapley(model, X) -> values."
        )
    key = as_key(random_state)
    dataset, F = numeric_matrix(X, feature_names, "trends need")
    n, p = F.shape
    target = check_target(y, n, dataset.source)
    if target.ndim != 1 or target.dtype.kind not in "biuf":
        raise ValueError(
            f"y must be a numeric array of shape ({n},); got dtype {target.dtype} and shape "
            f"{target.shape}."
        )
    target = target.astype(np.float64)
    names = dataset.feature_names
    source = dataset.source if dataset.source is not None else F
    if model is None and fit is not None:
        model = fit(source, target)

    skipped: dict[str, str] = {}

    def model_parts(model, X_user, rows):
        """Shapley values (n_rows, p) or NaN, and transversal rates (2, p) or NaN."""
        shap = np.full((len(rows), p), np.nan)
        rates = np.full((2, p), np.nan)
        if any(e in estimators for e in _SHAPLEY) and _SHAPLEY[0] not in skipped:
            try:
                shap = _shapley_of(model, X_user, shapley, background, len(rows), p, output)
            except _Unavailable as why:
                if named:
                    raise ValueError(f"{why}; it is needed for {list(_SHAPLEY)}.") from None
                skipped.update(dict.fromkeys(_SHAPLEY, str(why)))
        if any(e in estimators for e in _TREES) and _TREES[0] not in skipped:
            try:
                rates = _transversal_rates(model, p)
            except _Unavailable as why:
                if named:
                    raise ValueError(f"{why}; it is needed for {list(_TREES)}.") from None
                skipped.update(dict.fromkeys(_TREES, str(why)))
        return shap, rates

    def statistics(rows, shap, rates, subset=False):
        """All estimators on the given rows, (7, p), and the linear t statistics; on a
        ``subset``, a feature constant there has NaN estimates (it has no slope there)."""
        Xr, yr = F[rows], target[rows]
        with jax.enable_x64(True):  # float64 data ranked as given (float32, or centring
            # first, makes ties of distinct values); Pearson centres them itself
            corr = np.asarray(_correlations(*(jnp.asarray(a, jnp.float64) for a in (
                Xr, yr, shap))), np.float64)
        coef, t = np.full(p, np.nan), np.full(p, np.nan)
        df = 0
        varies = np.ptp(Xr, axis=0) > 0 if subset else np.ones(p, bool)
        if "linear" in estimators:
            from ._linear import linear_importance

            if varies.any():
                kept = [f for f, v in zip(names, varies) if v]
                lin = linear_importance(Xr[:, varies], yr, feature_names=kept)
                coef[varies] = [lin.info["coefficients"][f] for f in kept]
                t[varies] = [lin.info["statistics"][f] for f in kept]
                df = lin.info["df_residual"]
        out = np.stack([corr[0], corr[1], coef, corr[2], corr[3], rates[0], rates[1]])
        out[:, ~varies] = np.nan
        return out, t, df

    all_rows = np.arange(n)
    shap, rates = model_parts(model, source, all_rows)
    values, t, df = statistics(all_rows, shap, rates)

    replicates = None
    if n_bootstrap:
        size = max(2, int(round(subsample * n)))
        bits = key_bits(key)
        reps = []
        for b in range(n_bootstrap):
            rows = np.sort(rng_stream(bits, 3, b).choice(n, size, replace=False))
            if fit is not None:
                X_user = dataset.take(rows).source if dataset.source is not None else F[rows]
                refit = fit(X_user, target[rows])
                parts = model_parts(refit, X_user, rows)
            else:
                parts = (shap[rows], np.full_like(rates, np.nan))
            reps.append(statistics(rows, *parts, subset=True)[0])
        replicates = np.stack(reps, axis=-1)  # (7, p, r)

    keep = [ESTIMATORS.index(e) for e in estimators if e not in skipped]
    kept = tuple(ESTIMATORS[i] for i in keep)
    linear = "linear" in kept
    info = TrendsDetails(n_bootstrap=n_bootstrap, subsample=subsample, refit=fit is not None,
                         skipped={e: why for e, why in skipped.items() if e in estimators},
                         linear_t=t[:, None] if linear else None)
    p_values = _two_sided_p(t, df)[:, None] if linear else None  # (p, o = 1)
    sd = None
    if replicates is not None:
        replicates = replicates[keep][:, :, None]  # (e, p, o = 1, r)
        with warnings.catch_warnings():  # all NaN: the transversal rates without refits
            warnings.simplefilter("ignore", RuntimeWarning)
            sd = np.nanstd(replicates, axis=-1)
    return Trends(feature_names=names, estimators=kept, output_names=("y",),
                  values=values[keep][:, :, None], values_std=sd, replicates=replicates,
                  p_values=p_values, info=info)
