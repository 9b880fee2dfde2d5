"""Conditional samplers: draws of a feature (or group) given the other features.

Every sampler works on the dataset's float64 matrix ``X`` (n, c) on the host and returns, for
the columns ``cols`` of one feature, either

- a *mean* ``M`` (n, k) and a *noise* ``A`` (n, k) whose rows are exchangeable: the draw for
  row ``i`` is ``M[i] + A[pi(i)]`` for a random permutation ``pi`` of the rows (the Gaussian,
  knockoff and residual samplers; the permutation is generated on the device from a key), or
- a within-strata permutation of the rows (Strobl et al. 2008), generated here.

The regressions (n x c) are fitted once per feature; nothing here evaluates the model.
"""

from __future__ import annotations

import copy

import numpy as np

__all__ = ["association", "knockoff_parameters", "knockoff_sampler", "linear_sampler",
           "linear_samplers", "quantile_cuts", "regressor_sampler", "split_points", "strata_codes", "within_strata"]


# ---------------------------------------------------------------------------- Gaussian


def _moments(X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted mean (c,) and covariance (c, c) of X (n, c), weights summing to anything."""
    w = w / w.sum()
    mean = w @ X
    centred = X - mean
    return mean, (centred * w[:, None]).T @ centred


def linear_sampler(X: np.ndarray, cols, w: np.ndarray | None = None, moments=None):
    """Least-squares regression (with intercept, case weights ``w``) of ``X[:, cols]`` on the
    other columns: fitted values ``M`` (n, k) and residuals ``A`` (n, k), ``M + A = X[:, cols]``.

    The coefficients solve the normal equations from the weighted covariance, with a
    least-squares solve so that collinear regressors (one-hot blocks) give the unique
    projection. Permuting the residuals is the CFI sampler of Chamma et al. (2023).
    ``moments``: the weighted mean and covariance, if already computed.
    """
    n, c = X.shape
    w = np.ones(n) if w is None else np.asarray(w, np.float64)
    cols = list(cols)
    rest = [k for k in range(c) if k not in cols]
    mean, cov = _moments(X, w) if moments is None else moments
    target = X[:, cols]
    if not rest:  # nothing to condition on: the mean, and the centred values as noise
        fitted = np.broadcast_to(mean[cols], target.shape).copy()
        return fitted, target - fitted
    coef = np.linalg.lstsq(cov[np.ix_(rest, rest)], cov[np.ix_(rest, cols)], rcond=None)[0]
    fitted = mean[cols] + (X[:, rest] - mean[rest]) @ coef  # (n, k)
    residual = target - fitted
    # a column the others determine (an exact linear combination) leaves a residual of
    # rounding alone: none, so that its draws are its values and its tests read no change
    spread = np.sqrt(w @ residual ** 2 / w.sum())
    determined = spread <= _DETERMINED * np.sqrt(np.maximum(np.diag(cov)[cols], 0))
    residual[:, determined] = 0.0
    fitted[:, determined] = target[:, determined]
    return fitted, residual


_DETERMINED = 1e-9  # residual spread (relative to the column's) read as rounding


def linear_samplers(X: np.ndarray, features, w: np.ndarray | None = None) -> list:
    """:func:`linear_sampler` for every feature (a list of column lists) at once. With a
    well-conditioned covariance the residuals of all of them come from its inverse ``Omega``:
    the residual of ``x_G`` on the others is ``(X - mu) Omega[:, G] Omega_GG^-1``; else one
    least-squares solve per feature."""
    n, c = X.shape
    w = np.ones(n) if w is None else np.asarray(w, np.float64)
    moments = _moments(X, w)
    mean, cov = moments
    scale = np.sqrt(np.diag(cov))
    if c < 2 or np.any(scale == 0) or np.linalg.cond(cov / np.outer(scale, scale)) > 1e6:
        return [linear_sampler(X, cols, w, moments) for cols in features]
    precision = np.linalg.inv(cov)
    # one (c, total k) map from the centred data to every feature's residuals
    maps = [np.linalg.solve(precision[np.ix_(list(cols), list(cols))], precision[list(cols)]).T
            for cols in features]
    residuals = (X - mean) @ np.concatenate(maps, axis=1)  # (n, total k)
    out, start = [], 0
    for cols in features:
        residual = residuals[:, start:start + len(cols)]
        out.append((X[:, list(cols)] - residual, residual))
        start += len(cols)
    return out


def knockoff_parameters(X: np.ndarray, w: np.ndarray | None = None) -> dict:
    """The Gaussian model-X knockoff construction (Candes et al. 2018) from the estimated mean
    and covariance, equicorrelated: ``s = min(1, 2 lambda_min(C)) * diag(Sigma)`` with ``C``
    the correlation matrix (the R package knockoff's ``create.solve_equi``, on the correlation
    scale). Returns ``mean`` (c,), ``cov`` (c, c), ``precision`` (c, c) and ``s`` (c,)."""
    n, _c = X.shape
    w = np.ones(n) if w is None else np.asarray(w, np.float64)
    mean, cov = _moments(X, w)
    scale = np.sqrt(np.diag(cov))
    if np.any(scale == 0):
        raise ValueError(
            "sampler='knockoff' needs every column to vary; a constant column has no "
            "knockoff. Drop it, or use sampler='gaussian'."
        )
    corr = cov / np.outer(scale, scale)
    smallest = float(np.linalg.eigvalsh(corr)[0])
    if smallest <= 1e-10:
        raise ValueError(
            "sampler='knockoff' needs an invertible covariance of the columns, but they are "
            f"collinear (smallest correlation eigenvalue {smallest:.3g}; e.g. a one-hot block "
            "or a column that is a sum of others). Drop redundant columns, or use "
            "sampler='gaussian', which handles collinear columns."
        )
    s = min(1.0, 2.0 * smallest) * scale ** 2
    return {"mean": mean, "cov": cov, "precision": np.linalg.inv(cov), "s": s}


def knockoff_sampler(X: np.ndarray, cols, params: dict, rng: np.random.Generator,
                     draws: int | None = None):
    """The knockoff of ``X[:, cols]`` given all of X: ``x~_G | x ~ N(x_G - s_G (Omega (x -
    mu))_G, 2 diag(s_G) - diag(s_G) Omega_GG diag(s_G))``. Returns the conditional mean ``M``
    (n, k) and one Gaussian noise draw ``A`` (n, k), or ``draws`` independent ones
    (draws, n, k) (the mean does not depend on the row of the noise, so a permutation of a
    noise draw is another draw of the knockoff, though not one independent of it)."""
    cols = list(cols)
    s, omega = params["s"][cols], params["precision"]
    mean = X[:, cols] - ((X - params["mean"]) @ omega[:, cols]) * s
    cov = 2 * np.diag(s) - s[:, None] * omega[np.ix_(cols, cols)] * s[None, :]
    values, vectors = np.linalg.eigh(cov)  # PSD, possibly singular at s = 2 lambda_min
    root = vectors * np.sqrt(np.clip(values, 0, None))
    shape = (X.shape[0], len(cols)) if draws is None else (draws, X.shape[0], len(cols))
    return mean, rng.standard_normal(shape) @ root.T


def regressor_sampler(X: np.ndarray, cols, regressor):
    """A fresh clone of the scikit-learn-like ``regressor`` fitted on the other columns to
    ``X[:, cols]`` (one column: a 1-D target); in-sample fitted values ``M`` and residuals
    ``A``, as hidimstat's CFI."""
    cols = list(cols)
    rest = [k for k in range(X.shape[1]) if k not in cols]
    target = X[:, cols[0]] if len(cols) == 1 else X[:, cols]
    try:
        from sklearn.base import clone

        model = clone(regressor)
    except (ImportError, TypeError):  # not a scikit-learn estimator: a deep copy
        model = copy.deepcopy(regressor)
    features = X[:, rest] if rest else np.zeros((X.shape[0], 1))
    fitted = model.fit(features, target)
    model = model if fitted is None else fitted
    predicted = np.asarray(model.predict(features), np.float64).reshape(X.shape[0], len(cols))
    if not np.all(np.isfinite(predicted)):
        raise ValueError(
            f"the regressor {type(regressor).__name__} predicted NaN or infinite values for "
            f"columns {cols}; check the regressor."
        )
    return predicted, X[:, cols] - predicted


# ----------------------------------------------------------------------------- strata


def _eta(codes: np.ndarray, values: np.ndarray) -> float:
    """Correlation ratio of a numeric column on a categorical one (sqrt of the one-way
    ANOVA R^2)."""
    total = np.sum((values - values.mean()) ** 2)
    if total == 0:
        return 0.0
    _, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, values) / counts
    between = np.sum(counts * (means - values.mean()) ** 2)
    return float(np.sqrt(between / total))


def _cramers_v(a: np.ndarray, b: np.ndarray) -> float:
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(table, (ia, ib), 1)
    k = min(table.shape) - 1
    if k == 0:
        return 0.0
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    chi2 = np.sum((table - expected) ** 2 / expected)
    return float(np.sqrt(chi2 / (table.sum() * k)))


def association(X: np.ndarray, a: int, b: int, categorical: set) -> float:
    """Association of columns ``a`` and ``b`` in [0, 1]: |Pearson r| for two numeric columns,
    the correlation ratio for a categorical and a numeric one, Cramer's V for two categorical
    ones."""
    x, z = X[:, a], X[:, b]
    if a in categorical and b in categorical:
        return _cramers_v(x, z)
    if a in categorical or b in categorical:
        return _eta(x, z) if a in categorical else _eta(z, x)
    if x.std() == 0 or z.std() == 0:
        return 0.0
    return float(abs(np.corrcoef(x, z)[0, 1]))


def split_points(model, c: int) -> list[list[np.ndarray]] | None:
    """The split thresholds each tree of a fitted scikit-learn tree model (a decision tree,
    random and extra-trees forests, gradient boosting) uses on each of its ``c`` input
    columns, one list of ``c`` sorted arrays per tree; None for another model. Each tree's
    own points, as Strobl et al.'s per-tree grid: the points of many trees pooled would cut
    the data into strata of single rows."""
    trees = []
    if hasattr(model, "tree_"):
        trees = [model]
    elif hasattr(model, "estimators_"):
        trees = [t for t in np.asarray(model.estimators_, dtype=object).ravel()
                 if hasattr(t, "tree_")]
    if not trees:
        return None
    per_tree = []
    for tree in trees:
        feature, threshold = tree.tree_.feature, tree.tree_.threshold
        per_tree.append([np.unique(np.asarray(threshold[feature == k], np.float64))
                         for k in range(c)])
    return per_tree


def quantile_cuts(column: np.ndarray, n_bins: int) -> np.ndarray:
    return np.unique(np.quantile(column, np.arange(1, n_bins) / n_bins))


def strata_codes(X: np.ndarray, conditioning, categorical: set, cuts) -> np.ndarray:
    """Stratum of every row (n,) int: the joint bin of the conditioning columns. A
    categorical column's bins are its codes; a numeric column ``k``'s bins are cut at
    ``cuts[k]`` (a row equal to a cut goes below it, as a tree's ``x <= threshold``)."""
    n = X.shape[0]
    if not conditioning:
        return np.zeros(n, np.int64)
    bins = np.empty((n, len(conditioning)), np.int64)
    for m, k in enumerate(conditioning):
        if k in categorical:
            bins[:, m] = np.unique(X[:, k], return_inverse=True)[1]
        else:
            bins[:, m] = np.searchsorted(cuts[k], X[:, k], side="left")
    return np.unique(bins, axis=0, return_inverse=True)[1].reshape(-1)


def within_strata(strata: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random permutation ``sigma`` (n,) that maps every row to a row of its own stratum,
    uniform over such permutations: row ``i`` takes its values from row ``sigma[i]``."""
    by_stratum = np.argsort(strata, kind="stable")
    shuffled = np.lexsort((rng.random(strata.size), strata))  # same strata order, shuffled
    sigma = np.empty(strata.size, np.int64)
    sigma[by_stratum] = shuffled
    return sigma
