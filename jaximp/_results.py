"""Result objects shared by the importance methods."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
import pandas as pd

__all__ = ["FeatureImportance"]


@dataclasses.dataclass(frozen=True, eq=False)
class FeatureImportance:
    """Importance of each feature (or feature group), for each model output.

    Every importance method returns this object. Field names follow
    :func:`sklearn.inspection.permutation_importance`; unlike scikit-learn, arrays always keep
    an output axis ``o`` (size 1 for a single-output model).

    Attributes
    ----------
    method : str
        Name of the method that produced the result, e.g. ``"permutation"``.
    feature_names : tuple of str, length p
        Names of the features or feature groups, in input order.
    output_names : tuple of str, length o
        Names of the model outputs.
    importances_mean : ndarray of shape (p, o)
        Point estimate of each feature's importance.
    importances_std : ndarray of shape (p, o) or None
        Spread over repeats or bootstrap replicates; ``None`` for deterministic methods.
    importances : ndarray of shape (p, o, r) or None
        Raw values for each repeat or replicate, when the method has any.
    info : dict
        Method-specific settings and extra arrays (loss name, baseline score, ...).
    """

    method: str
    feature_names: tuple[str, ...]
    output_names: tuple[str, ...]
    importances_mean: np.ndarray
    importances_std: np.ndarray | None = None
    importances: np.ndarray | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        p, o = len(self.feature_names), len(self.output_names)
        mean = np.asarray(self.importances_mean, dtype=np.float64)
        if mean.shape != (p, o):
            raise ValueError(
                f"importances_mean must have shape (p, o) = ({p}, {o}); got {mean.shape}."
            )
        object.__setattr__(self, "importances_mean", mean)
        if self.importances_std is not None:
            object.__setattr__(
                self, "importances_std", np.asarray(self.importances_std, dtype=np.float64)
            )
        if self.importances is not None:
            object.__setattr__(self, "importances", np.asarray(self.importances, np.float64))

    def quantiles(self, q: Sequence[float] = (0.025, 0.975)) -> np.ndarray:
        """Quantiles over repeats, shape (len(q), p, o); needs raw ``importances``."""
        if self.importances is None:
            raise ValueError(f"method {self.method!r} has no repeats to take quantiles over.")
        return np.quantile(self.importances, np.asarray(q), axis=-1)

    def to_frame(self, sort: bool = True) -> pd.DataFrame:
        """Tidy table: one row per (feature, output), sorted by decreasing importance.

        Columns: ``feature``, ``output``, ``importance``, and ``std``, ``q025``, ``q975``
        when the method has repeats.
        """
        p, o = self.importances_mean.shape
        frame = pd.DataFrame(
            {
                "feature": np.repeat(np.asarray(self.feature_names, dtype=object), o),
                "output": np.tile(np.asarray(self.output_names, dtype=object), p),
                "importance": self.importances_mean.reshape(-1),
            }
        )
        if self.importances_std is not None:
            frame["std"] = self.importances_std.reshape(-1)
        if self.importances is not None and self.importances.shape[-1] > 1:
            low, high = self.quantiles((0.025, 0.975))
            frame["q025"] = low.reshape(-1)
            frame["q975"] = high.reshape(-1)
        if sort:
            frame = frame.sort_values(
                ["output", "importance"], ascending=[True, False], kind="stable"
            ).reset_index(drop=True)
        return frame

    def top(self, k: int, output: int | str = 0) -> list[str]:
        """Names of the ``k`` most important features for one output."""
        column = _output_index(self.output_names, output)
        order = np.argsort(-self.importances_mean[:, column], kind="stable")
        return [self.feature_names[i] for i in order[:k]]

    def plot(self, output: int | str = 0, ax=None):
        """Horizontal bar chart with error bars where available; returns the Axes."""
        import matplotlib.pyplot as plt

        column = _output_index(self.output_names, output)
        order = np.argsort(self.importances_mean[:, column], kind="stable")
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 0.3 * len(order) + 1))
        err = None if self.importances_std is None else self.importances_std[order, column]
        ax.barh(
            [self.feature_names[i] for i in order],
            self.importances_mean[order, column],
            xerr=err,
            color="tab:blue",
        )
        ax.set_xlabel(f"{self.method} importance")
        ax.set_title(str(self.output_names[column]))
        return ax


def _output_index(output_names: Sequence[str], output: int | str) -> int:
    if isinstance(output, str):
        if output not in output_names:
            raise ValueError(f"output must be one of {list(output_names)}; got {output!r}.")
        return list(output_names).index(output)
    if not -len(output_names) <= output < len(output_names):
        raise ValueError(
            f"output must be an index below {len(output_names)} or an output name; got {output}."
        )
    return int(output) % len(output_names)
