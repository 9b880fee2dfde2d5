"""Built-in synthetic data sets for demos, tests and the seed-paper experiments."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._checks import numpy_rng
from ._params import Int, Real, validate_params

__all__ = ["make_friedman1", "make_linear"]


@validate_params(n=Int(1), p=Int(5, fix="Friedman #1 uses x1..x5."), noise=Real(0))
def make_friedman1(n: int = 500, p: int = 10, noise: float = 1.0, random_state: int = 0):
    """Friedman #1 regression data (Friedman 1991).

    ``y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + noise * e`` with
    ``x ~ U(0, 1)^p`` and standard normal ``e``; x6..xp are pure noise features.

    Parameters
    ----------
    n : int, default 500
        Rows.
    p : int, default 10
        Features (at least 5).
    noise : float, default 1.0
        Standard deviation of the noise (>= 0).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        An int seeds ``np.random.default_rng``; None draws from NumPy's global state.

    Returns
    -------
    X : DataFrame of shape (n, p), columns ``x1 .. xp``
    y : ndarray of shape (n,)

    Examples
    --------
    >>> X, y = make_friedman1(n=5)
    >>> X.shape, y.shape, list(X.columns[:3])
    ((5, 10), (5,), ['x1', 'x2', 'x3'])
    """
    rng = numpy_rng(random_state)
    x = rng.uniform(size=(n, p))
    y = (
        10 * np.sin(np.pi * x[:, 0] * x[:, 1])
        + 20 * (x[:, 2] - 0.5) ** 2
        + 10 * x[:, 3]
        + 5 * x[:, 4]
        + noise * rng.standard_normal(n)
    )
    return pd.DataFrame(x, columns=[f"x{i + 1}" for i in range(p)]), y


@validate_params(n=Int(1), noise=Real(0))
def make_linear(coef=(4.0, 3.0, 2.0, 1.0), n: int = 1000, noise: float = 1.0,
                random_state: int = 0):
    """Linear data ``y = sum_j coef_j x_j + noise * e`` with standard normal ``x`` and ``e``.

    The default is the simulation of Huh and Lee's Table 2.

    Parameters
    ----------
    coef : sequence of float, default (4, 3, 2, 1)
        One coefficient per feature.
    n : int, default 1000
        Rows.
    noise : float, default 1.0
        Standard deviation of the noise (>= 0).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        As in :func:`make_friedman1`.

    Returns
    -------
    X : DataFrame of shape (n, len(coef)), columns ``X1 ..``
    y : ndarray of shape (n,)

    Examples
    --------
    >>> X, y = make_linear(n=4)
    >>> X.shape
    (4, 4)
    """
    rng = numpy_rng(random_state)
    coef = np.asarray(coef, dtype=np.float64)
    x = rng.standard_normal((n, coef.size))
    y = x @ coef + noise * rng.standard_normal(n)
    return pd.DataFrame(x, columns=[f"X{i + 1}" for i in range(coef.size)]), y
