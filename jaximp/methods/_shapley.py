"""Interventional Shapley values and Shapley interaction values for any model.

The players are features (or feature groups: the columns of a one-hot block enter and leave
together). The value of a coalition S at an explained row x is the model's weighted mean over
the background rows b with the columns of S set to x's values,

    v_x(S) = sum_b w_b f(x_S, b_{not S}) / sum_b w_b,

so ``v_x(empty)`` is the mean background prediction (the base value) and ``v_x(all) = f(x)``.
Each (coalition, explained row) pair is one item of an engine plan whose data are the background
rows and whose replacement table holds the explained rows; the engine's weighted mean reducer
averages over the background, chunked within the memory budget like every method. Exact
values are then a fixed linear map of the 2^p coalition values (a (2^p, p) weight matrix in
float64); beyond :data:`EXACT_AUTO_LIMIT` players an unbiased estimator averages marginal
contributions along sampled antithetic permutation pairs, with standard errors from the spread
over the pairs.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import numpy as np
import pandas as pd

from ..data import (
    Choice,
    Dataset,
    as_dataset,
    as_key,
    check_choice,
    check_int,
    mean_abs_over_rows,
    output_index,
    select_outputs,
    validate_params,
)
from ..engine import (
    Mean,
    at_values,
    evaluate,
    key_bits,
    resolve_budget,
    rng_stream,
    sample_rows,
)
from ..results import (
    FeatureImportance,
    FeatureInteraction,
    ShapleyDetails,
    ShapleyImportanceDetails,
    input_image,
    new_figure,
    pair_values_frame,
    plot_input_map,
    with_input_layout,
)
from ._setup import keep_layout, prepare

__all__ = ["ShapleyValues", "ShapleyInteractions", "shapley_values", "shapley_interactions",
           "EXACT_AUTO_LIMIT", "EXACT_LIMIT", "INTERACTION_LIMIT"]

#: ``method="auto"`` enumerates every coalition up to this many players, else samples.
EXACT_AUTO_LIMIT = 14
#: ``method="exact"`` refuses more players than this (2^p coalitions per explained row).
EXACT_LIMIT = 16
#: :func:`shapley_interactions` refuses more players than this.
INTERACTION_LIMIT = 12
_METHODS = ("auto", "exact", "permutation")
_ORDER_STREAM = 11  # label of the sampled orders' random streams


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class ShapleyValues:
    """Shapley values of explained rows, per feature (or group) and model output.

    Attributes
    ----------
    values : ndarray of shape (n, p, o)
        Value of feature ``j`` at explained row ``i`` for output ``k``; over ``j`` they sum to
        the coalition value of all features minus ``base_values`` (``f(x_i) - base`` when
        every feature is a player).
    base_values : ndarray of shape (o,)
        The weighted mean prediction over the background rows.
    data : ndarray of shape (n, p)
        The explained rows' feature values as floats: the column of a single-column feature
        (the code of a categorical one), the level index of a one-hot group, NaN for any other
        group.
    feature_names : tuple of str, length p
    output_names : tuple of str, length o
    standard_errors : ndarray of shape (n, p, o) or None
        Standard errors of the sampling estimator (None for exact values).
    method : {"exact", "permutation", "tree_path_dependent", "tree_interventional"}
        The estimator: :func:`jaximp.shapley_values` (exact or sampled) or
        :func:`jaximp.tree_shap` (path-dependent, or interventional over a background).
    info : ShapleyDetails
        ``n_background``, ``background_rows`` (rows of X used as background, or None),
        ``n_permutations`` (sampling), ``sample_weight`` (weights of the explained rows,
        or None).
    """

    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    feature_names: tuple[str, ...]
    output_names: tuple[str, ...]
    standard_errors: np.ndarray | None = None
    method: str = "exact"
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        n, p, o = self.values.shape
        top = self.importance().top(min(3, p))
        return (f"ShapleyValues({self.method!r}, {n} rows x {p} features, outputs "
                f"{list(self.output_names)}, base {self.base_values[0]:.4g}; largest mean "
                f"|value| for {self.output_names[output_index(self.output_names, None)]!r}: "
                f"{', '.join(top)})")

    def importance(self, n_bootstrap: int = 100, random_state=0) -> FeatureImportance:
        """Mean absolute Shapley value over the explained rows (weighted by their sample
        weights, if any), per feature and output: ``method="shapley"``, with ``n_bootstrap``
        row-bootstrap replicates for ``intervals()`` (0: none; no model evaluations)."""
        mean, std, replicates = mean_abs_over_rows(
            self.values, self.info.get("sample_weight"), n_bootstrap, as_key(random_state))
        return FeatureImportance(
            method="shapley", feature_names=self.feature_names, output_names=self.output_names,
            importances_mean=mean, importances_std=std, importances=replicates,
            info=with_input_layout(ShapleyImportanceDetails(
                estimator=self.method, base_values=self.base_values,
                n_rows=self.values.shape[0]), self.info.get("input_layout")))

    def image(self, row: int = 0, output: int | str | None = None) -> np.ndarray:
        """Row ``row``'s Shapley values on the positions of its example (X of shape
        ``(n, h, w[, c])`` or ``(n, t, c)``): shape ``input_shape``, a feature's (patch's,
        channel's, time step's) value on each of its positions, NaN where no feature was a
        player. Raises ValueError for the values of a table."""
        n = self.values.shape[0]
        if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not -n <= row < n:
            raise ValueError(f"row must be the index of an explained row (below {n}); got "
                             f"{row!r}.")
        column = output_index(self.output_names, output)
        return input_image(self.info, self.values[row, :, column], "Shapley values")

    def to_frame(self) -> pd.DataFrame:
        """Tidy table, one line per (row, feature, output): columns ``row``, ``feature``,
        ``output``, ``value``, ``feature_value`` and, for sampled values, ``std``."""
        n, p, o = self.values.shape
        frame = pd.DataFrame({
            "row": np.repeat(np.arange(n), p * o),
            "feature": np.tile(np.repeat(np.asarray(self.feature_names, object), o), n),
            "output": np.tile(np.asarray(self.output_names, object), n * p),
            "value": self.values.reshape(-1),
            "feature_value": np.repeat(self.data.reshape(-1), o),
        })
        if self.standard_errors is not None:
            frame["std"] = self.standard_errors.reshape(-1)
        return frame

    def to_shap(self, output=None):
        """The values as a ``shap.Explanation`` (needs the ``shap`` package), for shap's plots.

        Parameters
        ----------
        output : int or str, optional
            One output: values (n, p) and base values (n,), as shap gives for a single-output
            model. Default: the only output, or all of them as (n, p, o) and (n, o).
        """
        try:
            import shap
        except ImportError as err:
            raise ImportError("to_shap needs the shap package: pip install shap.") from err
        n = self.values.shape[0]
        if output is None and len(self.output_names) > 1:
            values = self.values
            base = np.broadcast_to(self.base_values, (n, len(self.output_names)))
        else:
            j = 0 if output is None else select_outputs(self.output_names, output)[0]
            values, base = self.values[..., j], np.full(n, self.base_values[j])
        return shap.Explanation(values=np.array(values), base_values=np.array(base),
                                data=np.array(self.data), feature_names=list(self.feature_names))

    def plot(self, kind: str = "summary", feature=None, output: int | str | None = None, ax=None,
             row: int = 0, sequence: bool = False, channel_axis: int = -1):
        """``kind="summary"``: one row of points per feature (most important on top), a point
        per explained row at its Shapley value, coloured by the feature's value (rank scale),
        vertically jittered where points crowd. ``kind="dependence"``: Shapley value of
        ``feature`` against its value. ``kind="image"``: :meth:`image` of ``row`` with a
        diverging colour map centred on zero; an ``(h, w, c)`` example shows the mean over its
        channel axis (``channel_axis``), ``sequence=True`` draws ``(t, c)`` as a heat map over
        time (see :meth:`FeatureImportance.plot`). Returns the Axes."""

        check_choice(kind, "kind", ("summary", "dependence", "image"))
        column = output_index(self.output_names, output)
        if kind == "image":
            return plot_input_map(self.image(row, column), ax, sequence=sequence,
                                  channel_axis=channel_axis, label=f"Shapley value, row "
                                  f"{row} ({self.output_names[column]})")
        if ax is None:
            height = 0.4 * len(self.feature_names) + 1 if kind == "summary" else 3.5
            _, ax = new_figure(6, height)
        if kind == "dependence":
            j = self._feature_index(feature)
            ax.scatter(self.data[:, j], self.values[:, j, column], s=8, alpha=0.7)
            ax.axhline(0.0, color="grey", lw=0.8)
            ax.set_xlabel(self.feature_names[j])
            ax.set_ylabel(f"Shapley value ({self.output_names[column]})")
            return ax
        order = np.argsort(self.importance().importances_mean[:, column], kind="stable")
        for position, j in enumerate(order):
            values = self.values[:, j, column]
            ax.scatter(values, position + _jitter(values), c=_ranks(self.data[:, j]),
                       cmap="coolwarm", vmin=0, vmax=1, s=6, alpha=0.8)
        ax.axvline(0.0, color="grey", lw=0.8)
        ax.set_yticks(range(len(order)), [self.feature_names[j] for j in order])
        ax.set_xlabel(f"Shapley value ({self.output_names[column]})\ncolour: feature value "
                      "(low blue, high red)")
        return ax

    def _feature_index(self, feature) -> int:
        if feature is None:
            raise ValueError("a dependence plot needs feature= (a name or an index); got None.")
        if isinstance(feature, str):
            if feature not in self.feature_names:
                raise ValueError(f"feature must be one of {list(self.feature_names)}; got "
                                 f"{feature!r}.")
            return self.feature_names.index(feature)
        if isinstance(feature, (int, np.integer)) and not isinstance(feature, bool) \
                and -len(self.feature_names) <= feature < len(self.feature_names):
            return int(feature) % len(self.feature_names)
        raise ValueError(f"feature must be a feature name or an index below "
                         f"{len(self.feature_names)}; got {feature!r}.")


@dataclasses.dataclass(frozen=True, eq=False)
class ShapleyInteractions:
    """Shapley interaction values, in the convention of shap's ``TreeExplainer``.

    Attributes
    ----------
    values : ndarray of shape (n, p, p, o)
        Off the diagonal, ``values[i, j, k] = values[i, k, j]`` is half the pairwise Shapley
        interaction index of features j and k at row i; the diagonal holds the main effects,
        so that ``values.sum(axis=2)`` equals the Shapley values.
    base_values, data, feature_names, output_names, info
        As :class:`ShapleyValues`.
    method : str
        ``"exact"``.
    """

    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    feature_names: tuple[str, ...]
    output_names: tuple[str, ...]
    method: str = "exact"
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        n, p, _, o = self.values.shape
        best = self.interaction().top(1)[0] if p > 1 else ()
        return (f"ShapleyInteractions({self.method!r}, {n} rows x {p} features, outputs "
                f"{list(self.output_names)}; strongest pair for "
                f"{self.output_names[output_index(self.output_names, None)]!r}: "
                f"{' x '.join(best)})")

    def shapley_values(self) -> ShapleyValues:
        """The Shapley values (row sums of the interaction values); no model evaluation."""
        return ShapleyValues(self.values.sum(axis=2), self.base_values, self.data,
                             self.feature_names, self.output_names, None, self.method,
                             self.info)

    def interaction(self) -> FeatureInteraction:
        """Mean over explained rows of the absolute pairwise interaction index
        (``2 |values[i, j, k]|``), for every pair: ``method="shapley_interaction"``."""
        n, p, _, o = self.values.shape
        weights = self.info.get("sample_weight")
        weights = np.ones(n) if weights is None else np.asarray(weights)
        mean = 2 * np.einsum("n,njko->jko", weights, np.abs(self.values)) / weights.sum()
        first, second = np.triu_indices(p, k=1)
        return FeatureInteraction(
            method="shapley_interaction",
            feature_sets=tuple((self.feature_names[a], self.feature_names[b])
                               for a, b in zip(first, second)),
            output_names=self.output_names, values=mean[first, second])

    def to_frame(self) -> pd.DataFrame:
        """Tidy table, one line per (row, feature_1, feature_2, output): ``value``."""
        return pair_values_frame(self.values, self.feature_names, self.output_names,
                                 "value")

    def plot(self, output: int | str | None = None, ax=None):
        """Heat map of the mean absolute interaction value per pair (main effects on the
        diagonal); returns the Axes."""

        column = output_index(self.output_names, output)
        p = len(self.feature_names)
        if ax is None:
            _, ax = new_figure(0.5 * p + 2, 0.5 * p + 1.5)
        image = ax.imshow(np.abs(self.values[..., column]).mean(axis=0), cmap="viridis")
        ax.set_xticks(range(p), self.feature_names, rotation=90)
        ax.set_yticks(range(p), self.feature_names)
        ax.figure.colorbar(image, ax=ax, label="mean |Shapley interaction value|")
        return ax


def _ranks(values: np.ndarray) -> np.ndarray:
    """Values mapped to [0, 1] by rank (NaN: 0.5), for colouring."""
    out = np.full(values.shape, 0.5)
    finite = np.isfinite(values)
    if finite.sum() > 1:
        order = pd.Series(values[finite]).rank(method="average").to_numpy()
        out[finite] = (order - 1) / max(1.0, order.max() - 1)
    return out


def _jitter(values: np.ndarray, width: float = 0.35) -> np.ndarray:
    """Vertical offsets that spread points by how crowded their value's bin is (fixed
    pattern, no randomness)."""
    if values.size < 2 or np.ptp(values) == 0:
        return np.zeros(values.shape)
    bins = np.minimum(99, ((values - values.min()) / np.ptp(values) * 100).astype(int))
    counts = np.bincount(bins, minlength=100)
    order = np.argsort(bins, kind="stable")
    rank_in_bin = np.empty(values.size)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank_in_bin[order] = np.arange(values.size) - starts[bins[order]]
    spread = counts[bins] / counts.max()
    alternating = np.where(rank_in_bin % 2 == 0, 1.0, -1.0) * np.ceil(rank_in_bin / 2)
    return width * spread * alternating / np.maximum(1.0, counts[bins] / 2)


# ---------------------------------------------------------------------------------------------
# Coalition weights (float64)
# ---------------------------------------------------------------------------------------------


def _members(p: int) -> np.ndarray:
    """(2^p, p) bool: coalition t holds player j when bit j of t is set."""
    return (np.arange(2 ** p)[:, None] >> np.arange(p)[None, :]) & 1 == 1


def shapley_weights(p: int) -> np.ndarray:
    """(2^p, p) float64 matrix M with ``phi_j = sum_t v(t) M[t, j]``.

    ``phi_j = sum_{S not containing j} |S|! (p - |S| - 1)! / p! (v(S + j) - v(S))``, so
    M[t, j] is ``+w(|t| - 1)`` if j is in t and ``-w(|t|)`` otherwise.
    """
    members = _members(p)
    size = members.sum(axis=1)[:, None]
    w = np.array([math.factorial(s) * math.factorial(p - s - 1) / math.factorial(p)
                  for s in range(p)] + [0.0])
    return np.where(members, w[np.maximum(size - 1, 0)], -w[np.minimum(size, p)])


def interaction_weights(p: int) -> np.ndarray:
    """(2^p, p, p) float64 tensor of the pairwise Shapley interaction index (Grabisch &
    Roubens 1999): ``I_jk = sum_t v(t) W[t, j, k]`` for j != k, 0 on the diagonal.

    ``I_jk = sum_{S in N - {j, k}} |S|! (p - |S| - 2)! / (p - 1)! (v(S+jk) - v(S+j) - v(S+k)
    + v(S))``.
    """
    members = _members(p)
    size = members.sum(axis=1)[:, None, None]
    w = np.array([0.0] + [math.factorial(s) * math.factorial(p - s - 2) / math.factorial(p - 1)
                          for s in range(p - 1)] + [0.0, 0.0])  # w[s + 1] = weight of |S| = s
    a, b = members[:, :, None], members[:, None, :]
    out = np.where(a & b, w[np.clip(size - 1, 0, p + 1)],
                   np.where(a ^ b, -w[np.clip(size, 0, p + 1)], w[np.clip(size + 1, 0, p + 1)]))
    out[:, np.arange(p), np.arange(p)] = 0.0
    return out


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Game:
    """Everything the coalition evaluations need."""

    predictor: Any
    background: Dataset
    background_weights: np.ndarray
    explained: np.ndarray  # (n, c) float64
    player_columns: np.ndarray  # (p, c) bool
    engine: dict
    budget: int

    def groups(self, coalitions, k: int, label: str):
        """Coalition values of the explained rows, a group of rows at a time: ``coalitions``
        is a (k, p) bool array (the same for every row) or a function of the rows giving
        (rows, k, p). Yields ``(rows, base (o,), values (rows, k, o))`` in float64. The empty
        coalition is one item of each engine call; a group's values, masks and plan fit the
        memory budget."""
        n, c = self.explained.shape
        o, p = self.predictor.n_outputs, self.player_columns.shape[0]
        shared = not callable(coalitions)
        # per explained row and coalition: its value (float64, in the engine's result and
        # ours), two int32 plan entries and, when not shared, the coalition and its mask
        per_row_bytes = k * (16 * o + 8 + (0 if shared else 5 * p + c))
        group = max(1, min(n, int(self.budget // max(1, per_row_bytes))))
        reducer = Mean(self.background_weights[None, :])
        columns = self.player_columns.astype(np.float32)
        for start in range(0, n, group):
            rows = np.arange(start, min(n, start + group))
            chosen = coalitions if shared else coalitions(rows).reshape(-1, p)
            masks = np.concatenate([np.zeros((1, c), bool),
                                    (chosen.astype(np.float32) @ columns) > 0])
            item_mask = np.concatenate([[0], 1 + (np.tile(np.arange(k), rows.size) if shared
                                                  else np.arange(rows.size * k))])
            item_value = np.concatenate([[0], np.repeat(np.arange(rows.size), k)])
            plan = at_values(masks, item_mask, self.explained[rows], item_value)
            result = evaluate(self.predictor, self.background, plan, reducer, label=label,
                              **self.engine)[:, 0, :]  # (1 + rows * k, o)
            yield rows, result[0], result[1:].reshape(rows.size, k, o)


def _setup(model, X, background, features, background_size, background_weight, sample_weight,
           random_state, feature_names, categorical, groups, variables, memory_budget,
           progress):
    """Validated game, the players' names and data, and the remaining random key."""
    if background_size is not None:
        background_size = check_int(background_size, "background_size")
    key_background, key_rest = jax.random.split(as_key(random_state))
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, categorical=categorical, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress, allow_missing=True)
    players = dataset.resolve(features)
    if background is None:
        if background_weight is not None:
            raise ValueError("background_weight needs an explicit background; with "
                             "background=None the rows of X keep their sample_weight.")
        bg = dataset
    else:
        bg = _background_dataset(background, dataset, background_weight, categorical, groups,
                                 allow_missing=predictor.host)
    background_rows = None
    if background_size is not None and bg.n_rows > background_size:
        background_rows = sample_rows(key_background, bg.n_rows, background_size)
        bg = bg.take(background_rows)
    bg_weights = np.ones(bg.n_rows) if bg.weights is None else bg.weights
    if not bg_weights.sum() > 0:
        raise ValueError("the background rows all have zero weight; give some rows a positive "
                         "weight or use another random_state.")
    c = dataset.n_columns
    player_columns = np.zeros((len(players), c), bool)
    for j, feat in enumerate(players):
        player_columns[j, list(feat.columns)] = True
    data = np.full((dataset.n_rows, len(players)), np.nan)
    for j, feat in enumerate(players):
        block = dataset.X[:, list(feat.columns)]
        if len(feat.columns) == 1:
            data[:, j] = block[:, 0]
        elif feat.kind == "onehot":
            data[:, j] = np.argmax(block, axis=1)
    game = _Game(predictor, bg, bg_weights, dataset.X, player_columns,
                 dict(memory_budget=memory_budget, progress=progress),
                 resolve_budget(memory_budget))
    info = keep_layout(ShapleyDetails(n_background=bg.n_rows, background_rows=background_rows,
                                      sample_weight=dataset.weights), dataset, players)
    names = tuple(f.name for f in players)
    return game, names, tuple(predictor.output_names), data, info, key_rest


def _background_dataset(background, dataset: Dataset, weight, categorical, groups,
                        allow_missing: bool = False) -> Dataset:
    if isinstance(background, Dataset):
        if weight is not None:
            raise ValueError("background is a Dataset, which carries its own weights; pass "
                             "background_weight=None.")
        bg = background
    else:
        names = None if isinstance(background, pd.DataFrame) else dataset.column_names
        if not isinstance(background, pd.DataFrame) and np.ndim(background) == 2 \
                and np.shape(background)[1] != len(dataset.column_names):
            raise ValueError(
                f"background must have the {len(dataset.column_names)} columns of X; got "
                f"shape {np.shape(background)}.")
        bg = as_dataset(background, feature_names=names, categorical=categorical,
                        groups=groups, sample_weight=weight, allow_missing=allow_missing)
    if bg.column_names != dataset.column_names:
        raise ValueError(f"background must have the columns of X, {list(dataset.column_names)};"
                         f" got {list(bg.column_names)}.")
    if isinstance(dataset.source, pd.DataFrame) and isinstance(bg.source, pd.DataFrame):
        for name in dataset.column_names:
            ours, theirs = dataset.source[name].dtype, bg.source[name].dtype
            if isinstance(ours, pd.CategoricalDtype) and not (
                    isinstance(theirs, pd.CategoricalDtype)
                    and list(theirs.categories) == list(ours.categories)):
                raise ValueError(
                    f"background column {name!r} must have the same categories as X's, so "
                    f"that their codes agree; got {_dtype(theirs)} for {_dtype(ours)}. Use "
                    "background[name].astype(X[name].dtype).")
    return bg


def _dtype(dtype) -> str:
    if isinstance(dtype, pd.CategoricalDtype):
        return f"categories {list(dtype.categories)}"
    return str(dtype)


def _check_permutations(n_permutations) -> int:
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, (int, np.integer)) \
            or n_permutations < 4 or n_permutations % 2:
        raise ValueError(
            "n_permutations must be an even int >= 4 (antithetic pairs, at least two of them "
            f"for a standard error); got {n_permutations!r}.")
    return int(n_permutations)


def _player_positions(bits: list[int], rows: np.ndarray, m: int, p: int) -> np.ndarray:
    """(rows, m, p): the place of each player in row i's ``m`` sampled orders: the ranks of
    uniform draws hashed from the key and the draw's (row, order, player), so they do not
    depend on how rows are grouped. One vectorised hash, where a generator per row cost
    12 ms at 1,000 rows."""
    base = rng_stream(bits, _ORDER_STREAM).integers(0, 2**63, dtype=np.uint64)
    counter = ((rows.astype(np.uint64)[:, None, None] * np.uint64(m)
                + np.arange(m, dtype=np.uint64)[None, :, None]) * np.uint64(p)
               + np.arange(p, dtype=np.uint64)[None, None, :])
    return _splitmix64(counter ^ base).argsort(axis=-1).argsort(axis=-1)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (Steele, Lea & Flood 2014): a bijective mix of uint64
    counters into uniformly distributed words (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@validate_params(method=Choice(*_METHODS))
def shapley_values(
    model,
    X,
    background=None,
    *,
    features=None,
    method: str = "auto",
    n_permutations: int = 100,
    background_size: int | None = 100,
    background_weight=None,
    sample_weight=None,
    random_state: int | jax.Array | None = 0,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> ShapleyValues:
    """Interventional Shapley values of any model (Lundberg & Lee 2017; Strumbelj &
    Kononenko 2014).

    Coalition S at explained row x is worth ``v_x(S) = sum_b w_b f(x_S, b_rest) / sum_b w_b``
    over the background rows b: features in S take x's values, the others the background's
    (the "interventional" or "baseline Shapley" game, as shap's ``ExactExplainer`` with an
    ``Independent`` masker). Feature ``j``'s value is its average marginal contribution
    ``v_x(S + j) - v_x(S)`` over the orders of the features.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        The rows to explain.
    background : array of shape (m, c), DataFrame or Dataset, optional
        Rows that stand in for absent features. Default: the rows of ``X`` themselves (with
        their ``sample_weight``).
    features : str, int or list, optional
        The players: features or groups (one-hot groups play as one). Default all. Columns of
        features that are not players always take the background's values, so the values
        then sum to ``v_x(players) - base``.
    method : {"auto", "exact", "permutation"}, default "auto"
        ``"exact"`` enumerates all 2^p coalitions (at most 16 players); ``"permutation"``
        averages over ``n_permutations`` sampled orders; ``"auto"`` is exact for at most 14
        players.
    n_permutations : int, default 100
        Sampled orders per explained row (an even number: each order is paired with its
        reverse, an antithetic pair; orders differ between rows). Each pair costs
        ``2 (p - 1)`` coalition evaluations per row.
    background_size : int or None, default 100
        A background with more rows is subsampled to this many, drawn without replacement
        (uniformly, keeping their weights) from ``random_state``; None keeps every row.
    background_weight : array of shape (m,), optional
        Case weights of an explicit ``background`` (a Dataset carries its own).
    sample_weight : array of shape (n,), optional
        Case weights of the rows of X: they weight the background when it is X and the mean
        ``|value|`` of :meth:`ShapleyValues.importance`.
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Background subsample and sampled orders (exact values need no randomness when the
        background is not subsampled). None draws a seed from NumPy's global random state,
        as everywhere in jaximp.
    feature_names, categorical, groups
        Data description (see :func:`jaximp.as_dataset`).
    variables : pytree, optional
        Variables of a Flax linen module.
    memory_budget : int, optional
        Bytes the whole call may use beyond its result and the data (default
        :func:`jaximp.default_memory_budget`); a result that cannot fit is refused before any
        model evaluation.
    progress : bool, optional
        A progress line on stderr (default: in an interactive terminal, for calls of more than
        one chunk, or with ``JAXIMP_PROGRESS=1``; process 0 only).

    Returns
    -------
    ShapleyValues
        ``values`` (n, p, o), ``base_values`` (o,), ``data`` (n, p), ``standard_errors``
        (n, p, o) for sampled values (standard deviation of the pair estimates over the pairs,
        ddof 1, over sqrt(pairs)), ``importance()``, ``to_frame()``, ``plot()``.

    Notes
    -----
    Efficiency: for every row the values sum to ``f(x) - base_values`` (all features as
    players) up to float32 rounding of the model, for sampled values too (each order's
    marginal contributions telescope). Exact cost: ``n x 2^p x m`` model rows; sampled:
    ``n x (n_permutations (p - 1) + 1) x m``.

    References
    ----------
    Lundberg & Lee (2017), "A unified approach to interpreting model predictions", NeurIPS.
    Strumbelj & Kononenko (2014), "Explaining prediction models and individual predictions
    with feature contributions", Knowl. Inf. Syst. 41.
    Mitchell, Cooper, Frank & Holmes (2022), "Sampling permutations for Shapley value
    estimation", JMLR 23 (antithetic pairs).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> f = lambda X: X[:, 0] * X[:, 1] + X[:, 2]
    >>> sv = shapley_values(f, X[:5], X)
    >>> sv.values.shape
    (5, 3, 1)
    >>> total = sv.values.sum(axis=1)[:, 0] + sv.base_values[0]
    >>> bool(np.allclose(total, f(X[:5]), atol=1e-5))
    True
    """
    check_choice(method, "method", _METHODS)
    n_permutations = _check_permutations(n_permutations)
    game, names, output_names, data, info, key = _setup(
        model, X, background, features, background_size, background_weight, sample_weight,
        random_state, feature_names, categorical, groups, variables, memory_budget, progress)
    p = len(names)
    if method == "exact" and p > EXACT_LIMIT:
        raise ValueError(
            f"method='exact' handles at most {EXACT_LIMIT} features or groups (2^p coalitions "
            f"per row); got {p}. Use method='permutation', fewer features, or groups.")
    if method == "auto":
        method = "exact" if p <= EXACT_AUTO_LIMIT else "permutation"
    if p == 1:  # one player: every order gives it everything
        method = "exact"
    if method == "exact":
        base, values, _ = _exact(game, p, interactions=False)
        errors = None
    else:
        values, errors, base = _sampled(game, p, n_permutations, key)
        info = with_input_layout(dataclasses.replace(info, n_permutations=n_permutations),
                                 info.input_layout)
    return ShapleyValues(values, base, data, names, output_names, errors, method, info)


def _exact(game: _Game, p: int, interactions: bool) -> tuple:
    """Base (o,), Shapley values (n, p, o) and, if asked, interaction values (n, p, p, o)
    from all 2^p coalition values, a group of explained rows at a time."""
    n, o = game.explained.shape[0], game.predictor.n_outputs
    members = _members(p)
    weights = shapley_weights(p)
    pair_weights = interaction_weights(p) if interactions else None
    values = np.empty((n, p, o))
    pairs = np.empty((n, p, p, o)) if interactions else None
    base = None
    label = "Shapley interactions" if interactions else "Shapley values"
    for rows, base, v in game.groups(members[1:], 2 ** p - 1, label):
        v = np.concatenate([np.broadcast_to(base, (rows.size, 1, o)), v], axis=1)
        values[rows] = _weighted_coalitions(v, weights)
        if interactions:
            half = 0.5 * _weighted_coalitions(v, pair_weights)
            diagonal = np.arange(p)
            half[:, diagonal, diagonal] = values[rows] - half.sum(axis=2)
            pairs[rows] = half
    return base, values, pairs


def _weighted_coalitions(v: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``einsum("nto,t...->n...o", v, weights)``: coalition values (n, t, o) weighted into
    per-player values, as one matrix product (einsum's loop took 5 ms at n = 1,000, p = 10,
    the product 0.4 ms)."""
    n, t, o = v.shape
    flat = v.transpose(0, 2, 1).reshape(n * o, t) @ weights.reshape(t, -1)
    return np.moveaxis(flat.reshape(n, o, *weights.shape[1:]), 1, -1)


def _sampled(game: _Game, p: int, n_permutations: int, key) -> tuple:
    """Antithetic permutation sampling: per explained row, ``n_permutations / 2`` orders and
    their reverses. The coalitions are each order's proper prefixes (the forward pass) and
    their complements (the reverse order's prefixes), then the full coalition."""
    n, o = game.explained.shape[0], game.predictor.n_outputs
    m = n_permutations // 2
    cut = np.arange(1, p)  # proper prefixes: 1..p-1 players
    bits = key_bits(key)

    last = {}

    def coalitions(rows):
        last["positions"] = _player_positions(bits, rows, m, p)
        prefix = last["positions"][:, :, None, :] < cut[None, None, :, None]  # (r, m, p-1, p)
        both = np.concatenate([prefix, ~prefix], axis=2).reshape(rows.size, -1, p)
        return np.concatenate([both, np.ones((rows.size, 1, p), bool)], axis=1)

    values, errors = np.empty((n, p, o)), np.empty((n, p, o))
    k = 2 * m * (p - 1) + 1
    for rows, base, v in game.groups(coalitions, k, "Shapley values (sampled)"):
        r = rows.size
        full = np.broadcast_to(v[:, -1][:, None, None], (r, m, 1, o))
        empty = np.broadcast_to(base, (r, m, 1, o))
        inner = v[:, :-1].reshape(r, m, 2, p - 1, o)
        forward = np.concatenate([empty, inner[:, :, 0], full], axis=2)  # v(first k), k=0..p
        reverse = np.concatenate([full, inner[:, :, 1], empty], axis=2)  # v(all but first k)
        # the player at place k - 1 gains V[k] - V[k-1] forward and U[k-1] - U[k] in reverse
        gain = 0.5 * (np.diff(forward, axis=2) - np.diff(reverse, axis=2))  # (r, m, p, o)
        per_pair = np.take_along_axis(gain, last["positions"][..., None], axis=2)
        values[rows] = per_pair.mean(axis=1)
        errors[rows] = per_pair.std(axis=1, ddof=1) / np.sqrt(m)
    return values, errors, base


@validate_params()
def shapley_interactions(
    model,
    X,
    background=None,
    *,
    features=None,
    background_size: int | None = 100,
    background_weight=None,
    sample_weight=None,
    random_state: int | jax.Array | None = 0,
    feature_names=None,
    categorical=None,
    groups=None,
    variables=None,
    memory_budget: int | None = None,
    progress: bool | None = None,
) -> ShapleyInteractions:
    """Exact Shapley interaction values of any model, for at most 12 features or groups.

    The pairwise Shapley interaction index (Grabisch & Roubens 1999) of features j and k at
    row x is ``I_jk = sum_{S in N - {j, k}} |S|! (p - |S| - 2)! / (p - 1)! (v_x(S + jk)
    - v_x(S + j) - v_x(S + k) + v_x(S))`` with the interventional game of
    :func:`shapley_values`. Convention of shap's ``TreeExplainer`` (Lundberg et al. 2020):
    ``values[i, j, k] = values[i, k, j] = I_jk / 2`` off the diagonal, and the diagonal is the
    main effect ``phi_j - sum_{k != j} values[i, j, k]``, so every row of ``values[i]`` sums
    to the Shapley value. The index is zero for features that the model combines additively.

    Parameters
    ----------
    model, X, background, features, background_size, background_weight, sample_weight
        As :func:`shapley_values`.
    random_state, feature_names, categorical, groups, variables, memory_budget, progress
        As :func:`shapley_values`.

    Returns
    -------
    ShapleyInteractions
        ``values`` (n, p, p, o); ``shapley_values()``, ``interaction()`` (mean ``|I_jk|`` per pair),
        ``to_frame()``, ``plot()``.

    References
    ----------
    Grabisch & Roubens (1999), "An axiomatic approach to the concept of interaction among
    players in cooperative games", Int. J. Game Theory 28.
    Lundberg et al. (2020), "From local explanations to global understanding with explainable
    AI for trees", Nat. Mach. Intell. 2.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> si = shapley_interactions(lambda X: X[:, 0] * X[:, 1] + X[:, 2], X[:4], X)
    >>> si.values.shape
    (4, 3, 3, 1)
    >>> bool(np.allclose(si.values[:, 0, 2], 0, atol=1e-6))  # x0 and x2 do not interact
    True
    """
    game, names, output_names, data, info, _ = _setup(
        model, X, background, features, background_size, background_weight, sample_weight,
        random_state, feature_names, categorical, groups, variables, memory_budget, progress)
    p = len(names)
    if p > INTERACTION_LIMIT:
        raise ValueError(
            f"shapley_interactions handles at most {INTERACTION_LIMIT} features or groups "
            f"(2^p coalitions per row); got {p}. Pass fewer features= or group columns.")
    base, _, values = _exact(game, p, interactions=True)
    return ShapleyInteractions(values, base, data, names, output_names, "exact", info)
