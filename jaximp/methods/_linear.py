"""Model-based importance of linear and logistic regression: the |t| or |z| statistic.

:func:`linear_importance` fits, on all features with an intercept, a linear regression
(``family="gaussian"``, as R's ``lm``) or a logistic regression (``family="binomial"``, as R's
``glm(family = binomial)``) and scores each feature by the absolute value of its coefficient's
test statistic, the convention of ``caret::varImp`` for ``lm`` and ``glm`` models.

Definitions (``k`` coefficients including the intercept, ``n`` rows of positive weight,
``w`` the case weights, 1 without ``sample_weight``):

- gaussian: weighted least squares ``b = (X'WX)^-1 X'Wy``, ``sigma^2 = sum w r^2 / (n - k)``
  (R's ``lm`` with case weights), ``Cov(b) = sigma^2 (X'WX)^-1`` and ``t_j = b_j / se_j``;
- binomial: maximum likelihood by Newton's method (IRLS), ``Cov(b) = (X'WX)^-1`` with
  ``W = w p (1 - p)`` at convergence, and ``z_j = b_j / se_j``. The larger of the two labels
  (``np.unique(y)[1]``) is the event coded 1;
- a feature of several design columns ``G`` (a group, or a categorical feature expanded into
  indicators) is tested jointly: ``Wald = b_G' Cov_GG^-1 b_G`` on ``q = |G|`` degrees of
  freedom. For the gaussian family ``Wald / q`` is the partial F statistic of dropping ``G``,
  ``((RSS_without_G - RSS) / q) / (RSS / (n - k))``; for the binomial family ``Wald`` is the
  Wald chi-square statistic. To keep them comparable with the single-column ``|t|`` and
  ``|z|``, the importance of such a feature is ``sqrt(Wald / q)`` (``sqrt(F)`` for the gaussian
  family): a root mean square of ``q`` decorrelated t (or z) statistics, equal to ``|t|`` (or
  ``|z|``) when ``q = 1``, and near 1 for a feature without effect whatever ``q``. The raw F or
  chi-square is in ``info["statistics"]``;
- one-hot blocks (a group whose indicator columns sum to 1) and integer-coded categorical
  features use treatment coding as R's ``lm``: the first level present is the reference and
  its column is dropped, otherwise the indicators and the intercept are collinear.

Precision: the fits run in JAX in the default float dtype, float32 unless
``jax_enable_x64`` is on. To make float32 accurate, the columns are centred and scaled to
unit (weighted) standard deviation, and the linear algebra uses Householder QR of the weighted
design (never the normal equations ``X'WX``, whose condition number is the square), with
matrix products at ``Precision.HIGHEST`` (no TF32 on GPUs). The t and z statistics and the
joint Wald statistics of the slopes are invariant to centring and scaling the columns, so they
are read off the standardized fit; the coefficients and standard errors are transformed back
to the original units. Only the small (k x k) products ``R^-1 R^-T`` of the returned factor
and the q x q group solves run in NumPy float64. On well-conditioned data the statistics agree
with float64 references to about 1e-5 relative; a nearly collinear design (condition number of
the standardized columns above 1e3) warns with a :class:`~jaximp.PrecisionWarning` under
float32, and a singular one raises a ValueError naming the collinear columns.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.scipy.linalg import solve_triangular

from ..data import (Choice, Dataset, Feature, Int, Real, as_dataset, is_text, is_text_array,
                   validate_params)
from ..engine import PrecisionWarning
from ..results import FeatureImportance, LinearDetails
from ._loss import check_target

__all__ = ["linear_importance"]

_FAMILIES = ("gaussian", "binomial")
_HIGHEST = jax.lax.Precision.HIGHEST
#: an eigenvalue ratio of the standardized columns' correlation matrix below this is singular
_SINGULAR_RATIO = 1e-12
#: condition number of the standardized columns above which float32 statistics lose digits
_FLOAT32_CONDITION = 1e3
#: |eta| beyond which a fitted probability is numerically 0 or 1 (R's glm: 10 * double eps)
_SATURATED_ETA = 36.0
_X64_FIX = "enable float64 with jax.config.update('jax_enable_x64', True)"


# ----------------------------------------------------------------------------- JAX fits


def _matmul(a, b):
    return jnp.matmul(a, b, precision=_HIGHEST)


def _inverse_triangular(r):
    """``R^-1`` of an upper-triangular factor."""
    return solve_triangular(r, jnp.eye(r.shape[0], dtype=r.dtype), lower=False)


@jax.jit
def _least_squares(A, y, sw):
    """Weighted least squares by QR of ``sqrt(w) A``: coefficients, weighted RSS, ``R^-1``."""
    Aw = A * sw[:, None]
    yw = y * sw
    q, r = jnp.linalg.qr(Aw)
    coef = solve_triangular(r, _matmul(q.T, yw), lower=False)
    resid = yw - _matmul(Aw, coef)
    return coef, jnp.sum(resid * resid), _inverse_triangular(r)


def _fisher_factor(A, w, b):
    """R of the QR factorization of ``sqrt(W) A``, ``W = w p (1 - p)`` at ``b``."""
    eta = _matmul(A, b)
    W = w * jax.nn.sigmoid(eta) * jax.nn.sigmoid(-eta)
    return jnp.linalg.qr(A * jnp.sqrt(W)[:, None], mode="r")


@jax.jit
def _logistic_irls(A, y, w, b0, max_iter, tol):
    """Newton-Raphson (IRLS) for the weighted logistic log-likelihood, in a while_loop.

    Each step solves ``(A'WA) delta = A'w(y - p)`` through the R factor of ``sqrt(W) A``. The
    loop stops when the largest |step| is below ``max(tol, 1000 eps (1 + max|b|))`` (the
    floor: steps smaller than the rounding of the working dtype cannot be resolved), after
    ``max_iter`` steps, or at a non-finite step (which is not applied). Returns the
    coefficients, the number of steps, the last |step| and whether every step was finite.
    """
    eps = jnp.finfo(A.dtype).eps

    def newton_step(b):
        eta = _matmul(A, b)
        gradient = _matmul(A.T, w * (y - jax.nn.sigmoid(eta)))
        r = _fisher_factor(A, w, b)
        half = solve_triangular(r.T, gradient, lower=True)
        return solve_triangular(r, half, lower=False)

    def cond(state):
        it, b, change, finite = state
        floor = jnp.maximum(tol, 1e3 * eps * (1.0 + jnp.max(jnp.abs(b))))
        return (it < max_iter) & (change >= floor) & finite

    def body(state):
        it, b, _, _ = state
        delta = newton_step(b)
        finite = jnp.all(jnp.isfinite(delta))
        change = jnp.where(finite, jnp.max(jnp.abs(delta)), jnp.inf)
        return it + 1, jnp.where(finite, b + delta, b), change, finite

    state = (jnp.int32(0), b0, jnp.asarray(jnp.inf, A.dtype), jnp.bool_(True))
    it, b, change, finite = jax.lax.while_loop(cond, body, state)
    floor = jnp.maximum(tol, 1e3 * eps * (1.0 + jnp.max(jnp.abs(b))))
    return b, it, change, finite, change < floor, _inverse_triangular(_fisher_factor(A, w, b))


# ----------------------------------------------------------------------------- design


def _category_labels(dataset: Dataset, feature: Feature, codes: np.ndarray) -> list:
    """Labels of the observed codes of a categorical column (categories and text: their names;
    numbers marked categorical are their own codes)."""
    source = dataset.source
    column = feature.columns[0]
    if isinstance(source, pd.DataFrame):
        coded = not pd.api.types.is_numeric_dtype(source.iloc[:, column])
    else:
        coded = is_text_array(source) and is_text(pd.Series(np.asarray(source)[:, column]))
    if coded:
        return [feature.levels[int(code)] for code in codes]
    return [int(code) if float(code).is_integer() else code for code in codes]


def _design_blocks(dataset: Dataset, X: np.ndarray) -> list[dict]:
    """One block of design columns per feature (reference levels dropped), in feature order."""
    names = dataset.column_names
    blocks = []
    for feature in dataset.features:
        reference = None
        if feature.kind == "categorical":
            column = X[:, feature.columns[0]]
            codes = np.unique(column)
            labels = _category_labels(dataset, feature, codes)
            reference = labels[0]
            block = (column[:, None] == codes[None, 1:]).astype(np.float64)
            columns = tuple(f"{feature.name}[{label}]" for label in labels[1:])
        elif feature.kind == "onehot":
            present = [i for i in feature.columns if np.any(X[:, i] != 0)]
            reference = names[present[0]]
            block = X[:, present[1:]]
            columns = tuple(names[i] for i in present[1:])
        else:
            block = X[:, list(feature.columns)]
            columns = tuple(names[i] for i in feature.columns)
        if block.shape[1] == 0:
            raise ValueError(
                f"feature {feature.name!r} takes a single level on the rows of positive weight, "
                "so with the intercept it has no effect to estimate; drop it (or pass it in "
                "features= only after adding rows with other levels)."
            )
        blocks.append(
            {"feature": feature, "block": block, "columns": columns, "reference": reference}
        )
    return blocks


def _check_rank(Z: np.ndarray, w: np.ndarray, labels: list[str], dtype) -> None:
    """Refuse a singular standardized design (naming the columns) and warn when float32 loses
    accuracy on a nearly collinear one. ``Z`` is centred and scaled, float64."""
    gram = (Z * w[:, None]).T @ Z / w.sum()
    values, vectors = np.linalg.eigh(gram)
    largest = max(values[-1], np.finfo(np.float64).tiny)
    null = values < _SINGULAR_RATIO * largest
    if np.any(null):
        weight = np.abs(vectors[:, null]).max(axis=1)
        involved = [labels[i] for i in np.flatnonzero(weight > 0.05 * weight.max())]
        raise ValueError(
            f"the design matrix is singular: columns {involved} are collinear (one is a linear "
            "combination of the others and the intercept), so their coefficients are not "
            "identified. Drop one of them, or, for a one-hot block, pass its columns as a "
            "group (groups={'name': [...]}) so that its first level is dropped as the "
            "reference."
        )
    condition = float(np.sqrt(largest / values[0]))
    if np.dtype(dtype) == np.float32 and condition > _FLOAT32_CONDITION:
        vector = np.abs(vectors[:, 0])
        involved = [labels[i] for i in np.flatnonzero(vector > 0.05 * vector.max())]
        warnings.warn(
            f"the design is nearly collinear (condition number {condition:.3g} of the "
            f"standardized columns, mostly {involved}); float32 statistics are accurate to "
            f"only about {condition * np.finfo(np.float32).eps:.1g} relative. To fix it, "
            f"{_X64_FIX}, or drop one of the correlated columns.",
            PrecisionWarning,
            stacklevel=3,
        )


def _response(target: np.ndarray, family: str) -> tuple[np.ndarray, tuple | None]:
    """``y`` as float64 (n,): numeric for gaussian, 0/1 for binomial (with its two labels)."""
    y = target
    if y.ndim == 2:
        if y.shape[1] != 1:
            raise ValueError(
                f"linear_importance fits one response; y must have shape (n,) or (n, 1); got "
                f"{y.shape}. Call it once per column of y."
            )
        y = y[:, 0]
    if family == "binomial":
        classes = np.unique(y)
        if len(classes) != 2:
            raise ValueError(
                f"family='binomial' needs y with exactly two classes; got {len(classes)}: "
                f"{classes.tolist()[:10]}. Use family='gaussian' for a numeric response."
            )
        return (y == classes[1]).astype(np.float64), tuple(classes.tolist())
    if y.dtype.kind not in "biuf":
        raise TypeError(
            f"family='gaussian' needs a numeric y; got dtype {y.dtype}. For two classes use "
            "family='binomial'."
        )
    return y.astype(np.float64), None


# ----------------------------------------------------------------------------- public


@validate_params(family=Choice(*_FAMILIES), max_iter=Int(1), tol=Real(0))
def linear_importance(
    X,
    y,
    *,
    family: str = "gaussian",
    features=None,
    feature_names=None,
    categorical=None,
    groups=None,
    sample_weight=None,
    max_iter: int = 50,
    tol: float = 1e-10,
) -> FeatureImportance:
    """Importance as the ``|t|`` (linear) or ``|z|`` (logistic) statistic of each coefficient.

    Fits a linear regression (``family="gaussian"``, as R's ``lm``) or a logistic regression
    (``family="binomial"``, as R's ``glm``) on all features with an intercept and reports
    ``|coefficient / standard error|``, as ``caret::varImp`` does for these models. A feature of
    several columns (a group, or a categorical feature expanded into indicators) gets
    ``sqrt(F)`` (gaussian: F of dropping its columns) or ``sqrt(Wald / q)`` (binomial: Wald
    chi-square on q degrees of freedom), on the same scale as ``|t|`` and equal to it for one
    column. See the module :mod:`jaximp.methods._linear` for the definitions and the precision.

    Parameters
    ----------
    X : array-like of shape (n, c) or pandas.DataFrame
        Numeric data (see :func:`jaximp.as_dataset`). Categorical features (pandas
        ``category`` columns or ``categorical=``) enter as indicators of their levels with the
        first level present as the reference; one-hot groups drop their first column.
    y : array-like of shape (n,)
        Numeric response (gaussian) or two classes of any labels (binomial): the larger label,
        ``np.unique(y)[1]``, is the event coded 1 (e.g. ``"yes"`` over ``"no"``, 1 over 0).
    family : {"gaussian", "binomial"}, default "gaussian"
        Linear regression by least squares, or logistic regression by Newton's method (IRLS).
    features : str, int, list or boolean mask, optional
        Features to report (default all). The model is always fitted on all features.
    feature_names, categorical, groups, sample_weight
        As in :func:`jaximp.as_dataset`. ``sample_weight`` are case weights (weighted least
        squares with ``sigma^2 = sum w r^2 / (n - k)`` as R's ``lm``; a weighted likelihood
        for the binomial family); rows of weight 0 are dropped, so ``n`` counts the others.
    max_iter : int, default 50
        Most Newton steps (binomial only).
    tol : float, default 1e-10
        Newton stops when the largest absolute change of the coefficients of the standardized
        design is below ``tol``, floored at ``1000 * eps * (1 + max|b|)`` of the working float
        dtype (float32 cannot resolve smaller changes; Newton's quadratic convergence leaves
        a negligible error there).

    Returns
    -------
    FeatureImportance
        ``method`` is ``"linear_gaussian"`` or ``"linear_binomial"``; ``importances_mean`` has
        shape (p, 1) for the output ``"y"``. ``info`` holds ``family`` and dictionaries keyed
        by every feature of the fitted model: ``statistic`` (``"t"``, ``"z"``, or ``"F"`` /
        ``"wald"`` for several columns), ``statistics`` (signed t or z, or the F or Wald
        chi-square), ``df`` (columns tested), ``coefficients`` and ``std_errors`` (original
        units; arrays for several columns), ``design_columns`` and ``reference`` (the dropped
        level); and ``intercept``, ``n_obs``, with ``sigma`` and ``df_residual`` (gaussian) or
        ``classes``, ``positive_class``, ``n_iter`` and ``converged`` (binomial).

    Raises
    ------
    ValueError
        For a singular design (collinear or constant columns, named), fewer rows than
        coefficients, a constant response, or a binomial ``y`` without exactly two classes.

    Warns
    -----
    RuntimeWarning
        When Newton does not converge in ``max_iter`` steps, or when the classes are
        (quasi-)perfectly separated (fitted probabilities 0 or 1, diverging coefficients: the
        statistics are then meaningless, possibly NaN), and for an essentially perfect linear
        fit.
    PrecisionWarning
        Under float32 for a nearly collinear design.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X @ np.array([2.0, 0.5, 0.0]) + rng.normal(size=200)
    >>> result = linear_importance(X, y)
    >>> result.top(2), result.info["statistic"]["x0"]
    (['x0', 'x1'], 't')
    >>> labels = np.where(y > 0, "yes", "no")
    >>> fit = linear_importance(X, labels, family="binomial")
    >>> fit.top(1), fit.info["positive_class"], fit.info["converged"]
    (['x0'], 'yes', True)
    """
    dataset = as_dataset(
        X,
        feature_names=feature_names,
        categorical=categorical,
        groups=groups,
        sample_weight=sample_weight,
    )
    reported = dataset.resolve(features)
    response, classes = _response(check_target(y, dataset.n_rows, dataset.source), family)

    weights = dataset.weights
    rows = np.ones(dataset.n_rows, bool) if weights is None else weights > 0
    Xr, yr = dataset.X[rows], response[rows]
    w = np.ones(len(yr)) if weights is None else weights[rows]
    blocks = _design_blocks(dataset, Xr)
    Z = np.concatenate([b["block"] for b in blocks], axis=1)
    labels = [label for b in blocks for label in b["columns"]]
    n, k = Z.shape[0], Z.shape[1] + 1
    if n <= k:
        raise ValueError(
            f"the model has k = {k} coefficients (intercept included) but only n = {n} rows of "
            "positive weight; need n > k (more rows, or fewer features / levels)."
        )
    mean = w @ Z / w.sum()
    scale = np.sqrt(w @ (Z - mean) ** 2 / w.sum())
    constant = scale <= 1e-12 * np.maximum(np.abs(Z).max(axis=0), 1e-300)
    if np.any(constant):
        raise ValueError(
            f"columns {[labels[i] for i in np.flatnonzero(constant)]} are constant on the rows "
            "of positive weight; with the intercept their coefficients are not identified "
            "(the design matrix is singular). Drop them."
        )
    Zs = (Z - mean) / scale
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    _check_rank(Zs, w, labels, dtype)
    A = jnp.asarray(np.column_stack([np.ones(n), Zs]), dtype)

    info: dict = {}
    if family == "gaussian":
        y_mean = w @ yr / w.sum()
        y_scale = np.sqrt(w @ (yr - y_mean) ** 2 / w.sum())
        if y_scale <= 1e-12 * max(np.abs(yr).max(), 1e-300):
            raise ValueError("y is constant; there is nothing for the features to explain.")
        coef, rss, rinv = _least_squares(
            A, jnp.asarray((yr - y_mean) / y_scale, dtype), jnp.asarray(np.sqrt(w), dtype)
        )
        coef, rss = np.asarray(coef, np.float64), float(rss)
        if rss <= (100 * np.finfo(dtype).eps) ** 2 * w.sum():
            warnings.warn(
                "essentially perfect fit: the residuals are at the rounding level of "
                f"{np.dtype(dtype).name}, so the t statistics are unreliable. Check that y is "
                "not an exact function of the features"
                + (f", or {_X64_FIX}." if np.dtype(dtype) == np.float32 else "."),
                RuntimeWarning,
                stacklevel=2,
            )
        sigma2 = rss / (n - k)
        y_unit = y_scale
        info.update(sigma=float(np.sqrt(sigma2) * y_scale), df_residual=n - k)
    else:
        if np.all(yr == yr[0]):
            raise ValueError(
                f"family='binomial': every row of positive weight has the class "
                f"{classes[int(yr[0])]!r}; both classes need rows of positive weight."
            )
        p0 = w @ yr / w.sum()
        b0 = np.zeros(k)
        b0[0] = np.log(p0 / (1 - p0))
        coef, n_iter, change, finite, converged, rinv = _logistic_irls(
            A, jnp.asarray(yr, dtype), jnp.asarray(w, dtype), jnp.asarray(b0, dtype),
            max_iter, tol,
        )
        coef = np.asarray(coef, np.float64)
        _check_logistic(coef, np.column_stack([np.ones(n), Zs]), w, labels, float(change),
                        bool(finite), bool(converged), max_iter, tol)
        sigma2, y_unit = 1.0, 1.0
        info.update(classes=classes, positive_class=classes[1], n_iter=int(n_iter),
                    converged=bool(converged) and bool(finite))
    rinv = np.asarray(rinv, np.float64)
    cov = sigma2 * (rinv @ rinv.T)  # of the standardized coefficients

    single, joint = ("t", "F") if family == "gaussian" else ("z", "wald")
    out = {key: {} for key in ("statistic", "statistics", "df", "coefficients", "std_errors",
                               "design_columns", "reference")}
    importance = {}
    start = 1
    for block in blocks:
        feature, q = block["feature"], len(block["columns"])
        idx = np.arange(start, start + q)
        start += q
        b_s, se_s = coef[idx], np.sqrt(np.diag(cov)[idx])
        if q == 1:
            stat = float(b_s[0] / se_s[0])
            importance[feature.name] = abs(stat)
            out["statistic"][feature.name] = single
        else:
            try:
                wald = float(b_s @ np.linalg.solve(cov[np.ix_(idx, idx)], b_s))
            except np.linalg.LinAlgError:  # only after separation, which has warned
                wald = float("nan")
            stat = wald / q if family == "gaussian" else wald
            importance[feature.name] = float(np.sqrt(wald / q))
            out["statistic"][feature.name] = joint
        out["statistics"][feature.name] = stat
        out["df"][feature.name] = q
        factor = y_unit / scale[idx - 1]
        out["coefficients"][feature.name] = float(b_s[0] * factor[0]) if q == 1 else b_s * factor
        out["std_errors"][feature.name] = float(se_s[0] * factor[0]) if q == 1 else se_s * factor
        out["design_columns"][feature.name] = block["columns"]
        if block["reference"] is not None:
            out["reference"][feature.name] = block["reference"]
    slopes = coef[1:] * y_unit / scale
    intercept = coef[0] * y_unit - mean @ slopes
    if family == "gaussian":
        intercept += y_mean
    info.update(out, intercept=float(intercept))
    names = [f.name for f in reported]
    return FeatureImportance(
        method=f"linear_{family}",
        feature_names=tuple(names),
        output_names=("y",),
        importances_mean=np.array([[importance[name]] for name in names]),
        info=LinearDetails(family=family, n_obs=n, **info),
    )


def _check_logistic(coef, A, w, labels, change, finite, converged, max_iter, tol):
    """Warn for (quasi-)separation or for a Newton run that did not converge."""
    eta = A @ coef  # float64
    if not finite or np.any(np.abs(eta) > _SATURATED_ETA):
        largest = np.argsort(-np.abs(coef[1:]))[:3]
        warnings.warn(
            "logistic regression: the classes are (quasi-)perfectly separated: fitted "
            "probabilities numerically 0 or 1 occurred and the coefficients diverge (largest "
            f"on {[labels[i] for i in largest]}), so the maximum-likelihood estimate does not "
            "exist and the z statistics are meaningless (possibly NaN). "
            "To fix it, drop or merge the separating feature(s) or levels, or use a penalized "
            "model.",
            RuntimeWarning,
            stacklevel=3,
        )
    elif not converged:
        warnings.warn(
            f"logistic regression did not converge in max_iter={max_iter} Newton steps (last "
            f"largest coefficient change {change:.3g}, tol={tol:g}); the z statistics are "
            f"approximate. To fix it, increase max_iter (e.g. max_iter={max(100, 4 * max_iter)})"
            " or loosen tol.",
            RuntimeWarning,
            stacklevel=3,
        )
