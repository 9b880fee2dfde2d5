"""Interventional Shapley values and Shapley interaction values for any model.

The players are features (or feature groups: the columns of a one-hot block enter and leave
together). The value of a coalition S at an explained row x is the model's weighted mean over
the background rows b with the columns of S set to x's values,

    v_x(S) = sum_b w_b f(x_S, b_{not S}) / sum_b w_b,

so ``v_x(empty)`` is the mean background prediction (the base value) and ``v_x(all) = f(x)``.
Each (coalition, explained row) pair is one item of an engine plan whose data are the background
rows and whose replacement table holds the explained rows; the engine's weighted mean reducer
averages over the background, chunked within the memory budget like every method. Exact
values are then a fixed linear map of each row's 2^p coalition values (a (2^p, p) weight matrix
in float64), on the device where it is an accelerator; beyond :data:`EXACT_AUTO_LIMIT` players
an unbiased estimator averages marginal contributions along sampled antithetic permutation
pairs, with standard errors from the spread over the pairs.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import numpy as np
import pandas as pd

from ..data import (
    Choice,
    Dataset,
    Deferred,
    as_key,
    as_rows,
    check_choice,
    check_int,
    select_outputs,
    validate_params,
)
from ..engine import (
    FoldedMean,
    Mean,
    at_values,
    evaluate,
    key_bits,
    resolve_budget,
    rng_stream,
    sample_rows,
    splitmix64,
)
from ..results import ShapleyDetails, with_input_layout
from ._setup import (background_dataset, keep_layout, prepare_explained, rows_of, warm_call,
                     warm_function, warn_unresolved_values)
from ._shapley_results import ShapleyInteractions, ShapleyValues

__all__ = ["ShapleyValues", "ShapleyInteractions", "shapley_values", "shapley_interactions",
           "EXACT_AUTO_LIMIT", "EXACT_LIMIT", "INTERACTION_LIMIT"]

#: ``method="auto"`` enumerates every coalition up to this many players, else samples.
EXACT_AUTO_LIMIT = 14
#: ``method="exact"`` refuses more players than this (2^p coalitions per explained row).
EXACT_LIMIT = 16
#: :func:`shapley_interactions` refuses more players than this.
INTERACTION_LIMIT = 12
_METHODS = ("auto", "exact", "permutation")
_LINKS = ("identity", "logit")
_ORDER_STREAM = 11  # label of the sampled orders' random streams
#: A call's coalition plan (two int32 entries per explained row and coalition) is kept for its
#: repeats up to this size (Shapley values, SAGE): 1,000 rows x 1,024 coalitions take 8 MB.
KEPT_PLAN_BYTES = 32 << 20


# ---------------------------------------------------------------------------------------------
# Coalition weights (float64)
# ---------------------------------------------------------------------------------------------


def coalition_members(p: int) -> np.ndarray:
    """(2^p, p) bool: coalition t holds player j when bit j of t is set."""
    return (np.arange(2 ** p)[:, None] >> np.arange(p)[None, :]) & 1 == 1


def coalition_masks(player_columns: np.ndarray, coalitions: np.ndarray) -> np.ndarray:
    """(K, c) bool column masks of (K, p) coalitions, given each player's columns (p, c).
    Each column belongs to at most one player, so a mask is a gather (a float matrix product
    over every coalition cost up to 43 ms on a cold BLAS)."""
    player, column = np.nonzero(player_columns)
    masks = np.zeros((coalitions.shape[0], player_columns.shape[1]), bool)
    masks[:, column] = coalitions[:, player]
    return masks


def shapley_weights(p: int) -> np.ndarray:
    """(2^p, p) float64 matrix M with ``phi_j = sum_t v(t) M[t, j]``.

    ``phi_j = sum_{S not containing j} |S|! (p - |S| - 1)! / p! (v(S + j) - v(S))``, so
    M[t, j] is ``+w(|t| - 1)`` if j is in t and ``-w(|t|)`` otherwise.
    """
    members = coalition_members(p)
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
    members = coalition_members(p)
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
    defers: bool = False  # an Explainer's call returns before the device finishes

    @functools.cached_property
    def reducer(self) -> Mean:
        """The weighted mean over the background: one object, so that a repeated call's
        plans meet the engine's launch kept for them."""
        return Mean(self.background_weights[None, :])

    def plans(self, coalitions, k: int, empty_item: bool = True):
        """``plans()``: ``(rows, plan, orders)`` for each group of explained rows.
        ``coalitions`` is a (k, p) bool array (the same for every row) or a function of the
        rows giving (rows, k, p) coalitions and the orders they came from. With
        ``empty_item``, the empty coalition is one more item, the first of each plan; a
        group's values, masks and plan fit the memory budget. One small group's plan is
        built now and kept (a warm call evaluates it again with nothing rebuilt or sent);
        larger ones are built as they are evaluated."""
        n, c = self.explained.shape
        o, p = self.predictor.n_outputs, self.player_columns.shape[0]
        shared = not callable(coalitions)
        # per explained row and coalition: its value (float64, in the engine's result and
        # ours), two int32 plan entries and, when not shared, the coalition and its mask
        per_row_bytes = k * (16 * o + 8 + (0 if shared else 5 * p + c))
        group = max(1, min(n, int(self.budget // max(1, per_row_bytes))))

        def plan(rows):
            chosen, orders = (coalitions, None) if shared else coalitions(rows)
            masks = coalition_masks(self.player_columns, chosen.reshape(-1, p))
            item_mask = np.tile(np.arange(k), rows.size) if shared else np.arange(rows.size * k)
            item_value = np.repeat(np.arange(rows.size), k)
            if empty_item:
                masks = np.concatenate([np.zeros((1, c), bool), masks])
                item_mask, item_value = np.concatenate([[0], 1 + item_mask]), np.concatenate(
                    [[0], item_value])
            return rows, at_values(masks, item_mask, self.explained[rows], item_value), orders

        groups = [np.arange(start, min(n, start + group)) for start in range(0, n, group)]
        if len(groups) == 1 and 8 * n * k <= KEPT_PLAN_BYTES:
            kept = [plan(groups[0])]
            return lambda: kept
        return lambda: map(plan, groups)

    def evaluated(self, plans, reducer, split, label: str, finish):
        """``finish(rows, orders, *split(result))`` of each group of ``plans()``, where
        ``result`` is the engine's for ``reducer``, collected by ``finish`` itself; for one
        kept group of a deferring call, a :class:`Deferred` of its one result instead
        (dispatched now, read when first asked for)."""
        def values(plan, defer=False):
            return Deferred.apply(split, evaluate(self.predictor, self.background, plan,
                                                  reducer, label=label, defer=defer,
                                                  **self.engine))

        groups = plans()
        if self.defers and isinstance(groups, list) and len(groups) == 1:
            (rows, plan, orders), = groups
            return values(plan, defer=True).then(lambda parts: finish(rows, orders, *parts))
        out = None
        for rows, plan, orders in groups:
            out = finish(rows, orders, *values(plan))
        return out


def coalition_game(model, X, background, features, background_size, background_weight,
                   sample_weight, random_state, feature_names, categorical, groups, variables,
                   memory_budget, progress):
    """Validated game, the players' names and data, the outputs' names, the details and the
    remaining random key (Shapley values, break-down)."""
    if background_size is not None:
        background_size = check_int(background_size, "background_size")
    key_background, key_rest = jax.random.split(as_key(random_state))
    dataset, predictor, background = prepare_explained(
        model, X, background, feature_names=feature_names, categorical=categorical,
        groups=groups, sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress, allow_missing=True, reuse=True)
    players = dataset.resolve(features)
    if background is None:
        if background_weight is not None:
            raise ValueError("background_weight needs an explicit background; with "
                             "background=None the rows of X keep their sample_weight.")
        bg = dataset
    else:
        bg = background_dataset(background, dataset, background_weight, categorical, groups,
                                allow_missing=predictor.host or predictor.handles_missing,
                                predictor=predictor)
    warn_unresolved_values(predictor, bg)  # the rows that fill absent features
    background_rows = None
    if background_size is not None and bg.n_rows > background_size:
        background_rows = sample_rows(key_background, bg.n_rows, background_size)
        bg = rows_of(bg, background_rows)
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
    # kept with the set-up for repeated calls, and handed out in every result: read-only
    for array in (data, background_rows):
        if array is not None:
            array.flags.writeable = False
    game = _Game(predictor, bg, bg_weights, dataset.X, player_columns,
                 dict(memory_budget=memory_budget, progress=progress),
                 resolve_budget(memory_budget), defers=dataset.defers_reads)
    info = keep_layout(ShapleyDetails(n_background=bg.n_rows, background_rows=background_rows,
                                      sample_weight=dataset.weights,
                                      levels=_coded_levels(dataset, players)),
                       dataset, players)
    names = tuple(f.name for f in players)
    return game, names, tuple(predictor.output_names), data, info, key_rest


def _coded_levels(dataset: Dataset, players) -> dict | None:
    """The levels of the categorical features whose values in X are codes of them (text and
    pandas categories; an integer column marked categorical holds its own values)."""
    source = dataset.source
    coded = {}
    for feat in players:
        if feat.kind != "categorical" or len(feat.columns) != 1 or not feat.levels:
            continue
        column = (source.iloc[:, feat.columns[0]] if isinstance(source, pd.DataFrame)
                  else None)
        if (any(isinstance(level, str) for level in feat.levels) if column is None
                else isinstance(column.dtype, pd.CategoricalDtype)
                or not pd.api.types.is_numeric_dtype(column.dtype)):
            coded[feat.name] = feat.levels
    return coded or None


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
    return splitmix64(counter ^ base).argsort(axis=-1).argsort(axis=-1)


@warm_function
@validate_params(method=Choice(*_METHODS), link=Choice(*_LINKS))
def shapley_values(
    model,
    X,
    background=None,
    *,
    features=None,
    method: str = "auto",
    link: str = "identity",
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
    output=None,
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
        The rows to explain; one row may come as a pandas Series, or as a 1-D array of c
        values with a ``background`` (then n = 1).
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
    link : {"identity", "logit"}, default "identity"
        ``"logit"`` explains ``logit(v_x(S))``, the log-odds of each coalition's mean
        probability: values and base on the log-odds scale, summing to ``logit(f(x))``
        (shap's ``KernelExplainer(link="logit")``, and its other explainers with
        ``link=shap.links.logit, linearize_link=False``; their default linearizes the link,
        another game). It needs outputs in [0, 1].
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
    output : int, str or list, optional
        Model outputs to explain (default all); the game is played once for all of them.

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
    options = dict(background=background, features=features, method=method, link=link,
                   n_permutations=n_permutations, background_size=background_size,
                   background_weight=background_weight, sample_weight=sample_weight,
                   random_state=random_state, feature_names=feature_names,
                   categorical=categorical, groups=groups, variables=variables,
                   memory_budget=memory_budget, progress=progress, output=output)
    # a repeated call (an Explainer's, or on the same small array) reuses its plans
    X = rows_like(X, background)
    return warm_call("shapley values", _set_up_values, model, X, None, options)()


def _set_up_values(model, X, _, *, background, features, method, link, n_permutations,
                   background_size, background_weight, sample_weight, random_state,
                   feature_names, categorical, groups, variables, memory_budget, progress,
                   output):
    """Validate and plan :func:`shapley_values`; returns ``run()``, which evaluates it."""
    game, names, output_names, data, info, key = coalition_game(
        model, X, background, features, background_size, background_weight, sample_weight,
        random_state, feature_names, categorical, groups, variables, memory_budget,
        progress)
    chosen, output_names = _chosen_outputs(output_names, output)
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
        exact = _exact(game, p, interactions=False, link=link)

        def run():
            out = chosen(exact())  # (base, values, None), or a Deferred of them
            return ShapleyValues(Deferred.apply(lambda parts: parts[1], out),
                                 Deferred.apply(lambda parts: parts[0], out), data.copy(),
                                 names, output_names, None, method, info)

        return run
    sampled = _sampled(game, p, n_permutations, key, link)
    info = with_input_layout(dataclasses.replace(info, n_permutations=n_permutations),
                             info.input_layout)

    def run():
        out = chosen(sampled())  # (values, errors, base), or a Deferred of them
        return ShapleyValues(Deferred.apply(lambda parts: parts[0], out),
                             Deferred.apply(lambda parts: parts[2], out), data.copy(), names,
                             output_names, Deferred.apply(lambda parts: parts[1], out),
                             method, info)

    return run


def _chosen_outputs(output_names: tuple, output):
    """``select(parts)``: a game's parts (arrays with outputs on their last axis, or None;
    or a Deferred of them) at the outputs ``output`` selects, and those outputs' names."""
    index = select_outputs(output_names, output)
    if list(index) == list(range(len(output_names))):
        return (lambda parts: parts), output_names

    def select(parts):
        return Deferred.apply(lambda parts: tuple(
            None if part is None else part[..., index] for part in parts), parts)

    return select, tuple(output_names[i] for i in index)


def _linked(values: np.ndarray, link: str) -> np.ndarray:
    """Coalition values on the ``link`` scale: as they are, or their log-odds."""
    if link == "identity":
        return values
    values = np.asarray(values, np.float64)
    if np.any((values < 0) | (values > 1)):
        raise ValueError(
            f"link='logit' takes the log-odds of mean probabilities; the model's mean "
            f"outputs over the background (of some coalitions) reach {values.min():.4g} .. "
            f"{values.max():.4g}, outside [0, 1]. Use link='identity', or explain the "
            "probabilities.")
    with np.errstate(divide="ignore"):  # 0 and 1 are -inf and inf, as shap's logit
        return np.log(values) - np.log1p(-values)


def _exact(game: _Game, p: int, interactions: bool, link: str = "identity"):
    """``run()`` giving base (o,), Shapley values (n, p, o) and, if asked, interaction values
    (n, p, p, o) from all 2^p coalition values of each explained row, a group of explained
    rows at a time (a :class:`Deferred` of them for a deferring call of one group)."""
    n, o, k = game.explained.shape[0], game.predictor.n_outputs, 2 ** p
    # one linear map of a row's coalition values, to the p values and the p * p halved pair
    # values
    parts = [shapley_weights(p)]
    if interactions:
        parts.append(0.5 * interaction_weights(p).reshape(k, p * p))
    fold = np.concatenate(parts, axis=1)
    label = "Shapley interactions" if interactions else "Shapley values"
    if _folds_on_device(game.predictor) and link == "identity":
        # one more column: the empty coalition's value, the base (the same for every row)
        reducer = FoldedMean(game.background_weights[None, :],
                             np.concatenate([fold, np.eye(k, 1)], axis=1))
        plans = game.plans(coalition_members(p), k, empty_item=False)

        def split(result):  # (rows, 1, m + 1, o)
            return result[0, 0, -1], result[:, 0, :-1]
    else:
        reducer, plans = game.reducer, game.plans(coalition_members(p)[1:], k - 1)

        def split(result):
            base, v = (_linked(part, link) for part in base_and_values(result, k - 1))
            return base, _weighted_coalitions(base, v, fold)

    def run():
        values = np.empty((n, p, o))
        pairs = np.empty((n, p, p, o)) if interactions else None

        def finish(rows, _, base, folded):  # (rows, p [+ p * p], o)
            values[rows] = folded[:, :p]
            if interactions:
                half = folded[:, p:].reshape(rows.size, p, p, o)
                diagonal = np.arange(p)
                half[:, diagonal, diagonal] = values[rows] - half.sum(axis=2)
                pairs[rows] = half
            return base, values, pairs

        return game.evaluated(plans, reducer, split, label, finish)

    return run


def _folds_on_device(predictor) -> bool:
    """Whether exact values weigh their coalition values on the device: on an accelerator,
    which then sends p values per explained row instead of 2^p; not on a CPU, whose BLAS
    weighs them on the host faster than XLA's float64 loops (all pairs at p = 10, n = 1,000,
    a near-free model: 79 against 122 ms a call), nor for a host model."""
    return not predictor.host and jax.local_devices()[0].platform != "cpu"


def base_and_values(result: np.ndarray, k: int):
    """The engine's means (1 + rows * k, 1, o) of a plan whose first item is the empty
    coalition: the base (o,) and the coalition values (rows, k, o)."""
    result = result[:, 0, :]
    return result[0], result[1:].reshape(-1, k, result.shape[-1])


def _weighted_coalitions(base: np.ndarray, v: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``einsum("nto,t...->n...o", [base, v], weights)``: the values (n, t, o) of every
    coalition but the empty one, whose value is ``base`` (o,), weighted into per-player
    values, as one matrix product (einsum's loop took 5 ms at n = 1,000, p = 10, the
    product 0.4 ms)."""
    n, t, o = v.shape
    flat = v.transpose(0, 2, 1).reshape(n * o, t) @ weights[1:].reshape(t, -1)
    out = np.moveaxis(flat.reshape(n, o, *weights.shape[1:]), 1, -1)
    out += np.multiply.outer(weights[0], base)  # the empty coalition's share
    return out


def _sampled(game: _Game, p: int, n_permutations: int, key, link: str = "identity"):
    """``run()`` giving Shapley values, their standard errors (n, p, o) and the base (o,)
    by antithetic permutation sampling: per explained row, ``n_permutations / 2`` orders and
    their reverses. The coalitions are each order's proper prefixes (the forward pass) and
    their complements (the reverse order's prefixes), then the full coalition."""
    n, o = game.explained.shape[0], game.predictor.n_outputs
    m = n_permutations // 2
    cut = np.arange(1, p)  # proper prefixes: 1..p-1 players
    bits = key_bits(key)

    def coalitions(rows):
        positions = _player_positions(bits, rows, m, p)
        prefix = positions[:, :, None, :] < cut[None, None, :, None]  # (r, m, p-1, p)
        both = np.concatenate([prefix, ~prefix], axis=2).reshape(rows.size, -1, p)
        return np.concatenate([both, np.ones((rows.size, 1, p), bool)], axis=1), positions

    k = 2 * m * (p - 1) + 1
    plans = game.plans(coalitions, k)

    def run():
        values, errors = np.empty((n, p, o)), np.empty((n, p, o))

        def finish(rows, positions, base, v):
            base, v = _linked(base, link), _linked(v, link)
            r = rows.size
            full = np.broadcast_to(v[:, -1][:, None, None], (r, m, 1, o))
            empty = np.broadcast_to(base, (r, m, 1, o))
            inner = v[:, :-1].reshape(r, m, 2, p - 1, o)
            forward = np.concatenate([empty, inner[:, :, 0], full], axis=2)  # v(first k)
            reverse = np.concatenate([full, inner[:, :, 1], empty], axis=2)  # v(all but k)
            # the player at place k - 1 gains V[k] - V[k-1] forward, U[k-1] - U[k] in reverse
            gain = 0.5 * (np.diff(forward, axis=2) - np.diff(reverse, axis=2))  # (r, m, p, o)
            per_pair = np.take_along_axis(gain, positions[..., None], axis=2)
            values[rows] = per_pair.mean(axis=1)
            errors[rows] = per_pair.std(axis=1, ddof=1) / np.sqrt(m)
            return values, errors, base

        return game.evaluated(plans, game.reducer, functools.partial(base_and_values, k=k),
                              "Shapley values (sampled)", finish)

    return run


@warm_function
@validate_params(link=Choice(*_LINKS))
def shapley_interactions(
    model,
    X,
    background=None,
    *,
    features=None,
    link: str = "identity",
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
    output=None,
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
    model, X, background, features, link, background_size, background_weight, sample_weight
        As :func:`shapley_values`.
    random_state, feature_names, categorical, groups, variables, memory_budget, progress
        As :func:`shapley_values`.
    output : int, str or list, optional
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
    options = dict(background=background, features=features, link=link,
                   background_size=background_size, background_weight=background_weight,
                   sample_weight=sample_weight, random_state=random_state,
                   feature_names=feature_names, categorical=categorical, groups=groups,
                   variables=variables, memory_budget=memory_budget, progress=progress,
                   output=output)
    X = rows_like(X, background)
    return warm_call("shapley interactions", _set_up_interactions, model, X, None, options)()


def rows_like(X, background):
    """The rows to explain as rows of the background's width and, for a DataFrame
    background, its columns (one row may come as a vector; rows as an array take the
    DataFrame's columns)."""
    shape = np.shape(background) if not isinstance(background, Dataset) else (
        background.n_rows, background.n_columns)
    width = shape[1] if background is not None and len(shape) == 2 else None
    return as_rows(X, width,
                   background.columns if isinstance(background, pd.DataFrame) else None)


def _set_up_interactions(model, X, _, *, background, features, link, background_size,
                         background_weight, sample_weight, random_state, feature_names,
                         categorical, groups, variables, memory_budget, progress, output):
    """Validate and plan :func:`shapley_interactions`; returns ``run()``."""
    game, names, output_names, data, info, _ = coalition_game(
        model, X, background, features, background_size, background_weight, sample_weight,
        random_state, feature_names, categorical, groups, variables, memory_budget, progress)
    chosen, output_names = _chosen_outputs(output_names, output)
    p = len(names)
    if p > INTERACTION_LIMIT:
        raise ValueError(
            f"shapley_interactions handles at most {INTERACTION_LIMIT} features or groups "
            f"(2^p coalitions per row); got {p}. Pass fewer features= or group columns.")
    exact = _exact(game, p, interactions=True, link=link)

    def run():
        out = chosen(exact())  # (base, values, interaction values), or a Deferred of them
        return ShapleyInteractions(Deferred.apply(lambda parts: parts[2], out),
                                   Deferred.apply(lambda parts: parts[0], out), data.copy(),
                                   names, output_names, "exact", info)

    return run
