"""Estimators of SAGE values over a coalition game: exact, and two permutation samplers.

The game (``_sage._Game``) gives ``f_S`` at explained rows and the per-row losses of a chain
of coalitions; these functions decide which (row, coalition) pairs to evaluate and how to
average them. Both samplers estimate the same quantity, the weighted mean over the rows of X
of each row's Shapley values of its loss game (the sage package's estimand):

- ``"iid"``: the sage package's ``PermutationEstimator``. A sample is a row drawn with
  replacement (probability proportional to its weight) and a random order of the players; the
  standard error is ``sqrt(sum (score - mean)^2) / N``.
- ``"antithetic"``: rows are visited in passes over a random shuffle of the rows. 32 pilot
  rows get two pairs each (a random order and its reverse), pass 0 one random order at each
  other row, pass 1 its reverse at the same row, and every later pass (a fresh shuffle) a
  pair per visit; a row's estimate is the mean of its pairs (its pass-0 score until its
  first pair is complete) and the estimate is the mean of the visited rows' estimates. The
  reverse order credits each player with the coalition the forward order leaves out, which
  cancels most of the spread of the scores within a row; using every row equally often
  removes the spread between rows. The standard error is that of this design
  (:class:`_PassTracker`).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ..engine import key_bits, rng_stream
from ._shapley import coalition_members, shapley_weights

__all__ = ["SAGE_MAX_PERMUTATIONS", "SAMPLERS", "exact_values", "sampled_values"]

#: With ``n_permutations=None``, sampling stops (with a warning) after this many orders.
SAGE_MAX_PERMUTATIONS = 1 << 20
SAMPLERS = ("antithetic", "iid")
_ORDER_STREAM = 23  # label of the sampled rows' and orders' random streams
_PASS_STREAM = 29  # label of the shuffles of the rows, one per pass (antithetic sampler)
_PILOT_ROWS = 32  # rows given two pairs first: the spread within rows is estimated there


# ---------------------------------------------------------------------------------------------
# Exact
# ---------------------------------------------------------------------------------------------


def exact_values(game, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and standard errors (p, o_loss): every row's Shapley values of its loss game
    (``phi_i = W^T (-loss_i)``: the constant ``loss(y_i, f_0)`` has zero Shapley values),
    their weighted mean over rows, and its standard error over rows."""
    n = game.explained.shape[0]
    p = game.player_columns.shape[0]
    members = coalition_members(p)
    shapley = shapley_weights(p)  # (2^p, p) float64
    o = game.predictor.n_outputs
    # a group of rows at a time: its coalition values and losses (float64) fit the budget
    group = max(1, min(n, int(game.budget // (2 ** p * (24 * o + 8)))))
    parts = []
    for start in range(0, n, group):
        rows = np.arange(start, min(n, start + group))
        inner = game.values(rows, members[1:-1], "SAGE (exact)")  # (rows, 2^p - 2, o)
        losses = game.chain_losses(rows, inner)  # (rows, 2^p, o_loss), in bit order
        parts.append(-np.einsum("nto,tj->njo", losses, shapley))  # (rows, p, o_loss)
    return _weighted_mean_and_error(np.concatenate(parts), weights)


def _weighted_mean_and_error(per_row: np.ndarray, weights: np.ndarray):
    """Weighted mean over the first axis and its standard error ``sqrt(sum w^2 (x - mean)^2)
    / sum w`` (with unit weights, the sage package's ``std / sqrt(n)``, ddof 0)."""
    total = weights.sum()
    mean = np.einsum("n,n...->...", weights, per_row) / total
    spread = per_row - mean[None]
    error = np.sqrt(np.einsum("n,n...->...", weights ** 2, spread ** 2)) / total
    return mean, error


# ---------------------------------------------------------------------------------------------
# Scores of orders
# ---------------------------------------------------------------------------------------------


def _order_scores(game, rows: np.ndarray, places: np.ndarray) -> np.ndarray:
    """Scores (R, p, o_loss): at each row, with ``places`` (R, p) the place of each player in
    its order, a player's score is the drop in the row's loss when it joins the players
    before it."""
    p = places.shape[1]
    prefixes = places[:, None, :] < np.arange(1, p)[None, :, None]  # (R, p - 1, p)
    inner = game.values(rows, prefixes, "SAGE (permutations)")  # (R, p - 1, o)
    losses = game.chain_losses(rows, inner)  # (R, p + 1, o_loss)
    drops = losses[:, :-1] - losses[:, 1:]  # (R, p, o_loss): the player at place k joins
    return np.take_along_axis(drops, places[..., None], axis=1)


def _random_places(rng: np.random.Generator, size: int, p: int) -> np.ndarray:
    """(size, p): the place of each player in ``size`` uniformly random orders."""
    return np.argsort(np.argsort(rng.random((size, p)), axis=1), axis=1)


# ---------------------------------------------------------------------------------------------
# Trackers: running values and standard errors
# ---------------------------------------------------------------------------------------------


def _ratio(mean: np.ndarray, error: np.ndarray) -> float:
    """Largest standard error over the range of the values, the worst output."""
    gap = np.maximum(mean.max(axis=0) - mean.min(axis=0), 1e-12)
    return float(np.max(error.max(axis=0) / gap))


@dataclasses.dataclass
class _Tracker:
    """Running mean and sum of squared deviations of samples (p, o) (Chan et al.'s pairwise
    update of Welford's algorithm), as the sage package's ``ImportanceTracker``."""

    count: int = 0
    mean: np.ndarray | float = 0.0
    squares: np.ndarray | float = 0.0

    def update(self, scores: np.ndarray) -> None:
        b = scores.shape[0]
        batch_mean = scores.mean(axis=0)
        batch_squares = ((scores - batch_mean) ** 2).sum(axis=0)
        total = self.count + b
        delta = batch_mean - self.mean
        self.mean = self.mean + delta * b / total
        self.squares = self.squares + batch_squares + delta ** 2 * self.count * b / total
        self.count = total

    @property
    def standard_error(self) -> np.ndarray:
        return np.sqrt(self.squares) / self.count

    @property
    def settled(self) -> bool:
        """Whether the standard error may end the sampling (the sage package's rule)."""
        return self.count >= 2


class _PassTracker:
    """Running estimate and standard error of the antithetic sampler (scores (p, o) per row).

    A row's scores are scaled by its weight over the mean weight (``u``). The schedule (see
    :func:`_antithetic_batch`): ``K = min(32, n)`` pilot rows get a pair (an order and its
    reverse) each, then a second pair each, the other rows one order in pass 0 and its reverse in pass 1, then every
    row a fresh pair per later pass. A row's estimate is the mean of its pairs' means (its
    pass-0 score until its first pair is complete); the estimate is the mean of the row
    estimates over the k rows visited (all n after pass 0).

    The visited rows are a sample without replacement, so the variance is

        (1 - k/n) S_b^2 / k + mean_i(v_i) / k,

    ``S_b^2`` the spread between the rows' values and ``v_i`` the variance of row i's
    estimate. With ``s^2`` the sample variance of the row estimates (its expectation is
    ``S_b^2 + mean v_i``) it is estimated by ``(1 - k/n) s^2 / k + (k/n) mean_i(v_i) / k``:
    past pass 0 only the spread within rows is left. ``v_i`` is a single order's variance
    (estimated at the pilot rows from their two independent orders) for a row with one
    order, and a pair's variance over its pairs for the others (estimated at the row when it
    has two pairs or more, pooled over those rows otherwise). Until the pilot rows have their
    second pairs, ``s^2 / k`` stands in (it over-states the variance on average, but from
    few rows it is too noisy to stop on: convergence waits for the pilot, :attr:`settled`).
    """

    def __init__(self, n: int, row_weights: np.ndarray, p: int):
        self.n, self.pilot = n, min(_PILOT_ROWS, n)
        self.row_weights = row_weights * n / row_weights.sum()  # (n,) mean 1
        self.count = 0  # orders scored
        self.places = np.zeros((n, p), np.int32)  # pass 0's order at each row
        self.visited = np.zeros(n, bool)
        self.pairs = np.zeros(n, np.int64)
        self.single = self.first_reverse = self.sums = self.squares = None  # (n, p, o)
        self.single_squares, self.single_count = 0.0, 0  # (a1 - a2)^2 at the pilot rows

    def _scaled(self, rows, scores):
        if self.single is None:
            self.single, self.first_reverse, self.sums, self.squares = (
                np.zeros((self.n,) + scores.shape[1:]) for _ in range(4))
        return self.row_weights[rows][:, None, None] * scores

    def forward(self, rows: np.ndarray, scores: np.ndarray) -> None:
        """Pass 0: one order at each of ``rows`` (distinct)."""
        self.single[rows] = self._scaled(rows, scores)
        self.visited[rows] = True

    def reverse(self, rows: np.ndarray, scores: np.ndarray) -> None:
        """Pass 1: the reverse of pass 0's order at each of ``rows`` (distinct)."""
        self._add_pairs(rows, (self.single[rows] + self._scaled(rows, scores)) / 2)

    def pilot_pairs(self, rows, forward, reverse) -> None:
        """A pilot row's first or second pair (``rows`` distinct): the second gives two
        independent single orders' differences, ``E (a1 - a2)^2 = 2 var(a)``."""
        u, v = self._scaled(rows, forward), self._scaled(rows, reverse)
        second = self.pairs[rows] == 1
        if second.any():
            at = rows[second]
            self.single_squares = self.single_squares + (
                (u[second] - self.single[at]) ** 2 + (v[second] - self.first_reverse[at]) ** 2
            ).sum(axis=0)
            self.single_count += 2 * int(second.sum())
        first = rows[~second]
        self.single[first], self.first_reverse[first] = u[~second], v[~second]
        self._add_pairs(rows, (u + v) / 2)

    def pairs_of(self, rows, forward, reverse) -> None:
        """Later passes: a fresh pair at each of ``rows``."""
        self._add_pairs(rows, (self._scaled(rows, forward) + self._scaled(rows, reverse)) / 2)

    def _add_pairs(self, rows, pair_means) -> None:
        np.add.at(self.pairs, rows, 1)
        np.add.at(self.sums, rows, pair_means)
        np.add.at(self.squares, rows, pair_means ** 2)
        self.visited[rows] = True

    def _row_estimates(self) -> np.ndarray:
        c = np.maximum(self.pairs, 1)[:, None, None]
        estimates = np.where(self.pairs[:, None, None] > 0, self.sums / c, self.single)
        return estimates[self.visited]  # (k, p, o)

    @property
    def mean(self) -> np.ndarray:
        return self._row_estimates().mean(axis=0)

    @property
    def settled(self) -> bool:
        """Whether the standard error may end the sampling: every pilot row has its two
        pairs, so the spread within rows is estimated."""
        return self.single_count >= 2 * self.pilot

    @property
    def standard_error(self) -> np.ndarray:
        estimates = self._row_estimates()
        k = estimates.shape[0]
        if k < 2:
            return np.full(estimates.shape[1:], np.inf)
        spread = np.var(estimates, axis=0, ddof=1)  # s^2
        again = self.pairs >= 2
        if self.single_count < 2 * self.pilot or not again.any():  # pilot unfinished
            return np.sqrt(spread / k)
        c = self.pairs.astype(np.float64)[:, None, None]
        sums, squares, c_again = self.sums[again], self.squares[again], c[again]
        within = np.maximum(squares - sums ** 2 / c_again, 0) / (c_again - 1)  # (., p, o)
        pooled = ((c_again - 1) * within).sum(axis=0) / (c_again - 1).sum()
        row_variance = np.empty_like(self.sums)
        row_variance[:] = self.single_squares / (2 * self.single_count)  # one order
        row_variance[self.pairs == 1] = pooled
        row_variance[again] = within / c_again
        f = k / self.n
        variance = (1 - f) * spread / k + f * row_variance[self.visited].mean(axis=0) / k
        return np.sqrt(variance)


# ---------------------------------------------------------------------------------------------
# Sampling until converged
# ---------------------------------------------------------------------------------------------


def _shuffle(bits, k: int, n: int) -> np.ndarray:
    """Pass k's order of the n rows (passes 0 and 1 share one)."""
    return rng_stream(bits, _PASS_STREAM, max(0, k - 1)).permutation(n)


def _antithetic_batch(game, tracker: _PassTracker, bits, rng, start: int, size: int) -> None:
    """Orders ``start .. start + size - 1`` (both even) of the antithetic schedule, scored in
    one engine evaluation and handed to the tracker. With ``shuffle`` pass 0's order of the
    rows and K pilot rows: orders ``0 .. 4K - 1`` are pairs (an order, then its reverse), one
    at each of ``shuffle[:K]``, then a second at each (so that few orders reach many rows); the
    next ``n - K`` one order at each of ``shuffle[K:]``
    (pass 0), the next ``n - K`` their reverses (pass 1); from ``2 n + 2 K`` on pairs again,
    pair w at place ``w mod n`` of pass ``2 + w // n``'s fresh shuffle."""
    n, kk, p = tracker.n, tracker.pilot, tracker.places.shape[1]
    first = _shuffle(bits, 0, n)
    v = np.arange(start, start + size)
    pilot_pair = v[v < 4 * kk][::2] // 2  # pair w at first[w % K], its (w // K)-th there
    single = v[(v >= 4 * kk) & (v < 2 * n + 2 * kk)] - 4 * kk  # (n - K) forward, then reverse
    later = (v[v >= 2 * n + 2 * kk][::2] - 2 * n - 2 * kk) // 2
    forward_rows = first[kk + single[single < n - kk]]
    reverse_rows = first[kk + single[single >= n - kk] - (n - kk)]
    later_rows = np.empty(later.size, np.int64)
    for k in np.unique(later // n):
        here = later // n == k
        later_rows[here] = _shuffle(bits, 2 + int(k), n)[later[here] % n]
    pair_rows = np.concatenate([first[pilot_pair % kk], later_rows])
    tracker.places[forward_rows] = _random_places(rng, forward_rows.size, p)
    fresh = _random_places(rng, pair_rows.size, p)
    rows = np.concatenate([forward_rows, reverse_rows, pair_rows, pair_rows])
    places = np.concatenate([tracker.places[forward_rows], p - 1 - tracker.places[reverse_rows],
                             fresh, p - 1 - fresh])
    scores = _order_scores(game, rows, places)  # (size, p, o_loss)
    cut = np.cumsum([forward_rows.size, reverse_rows.size, pair_rows.size])
    forward, reverse, pairs, reversed_pairs = np.split(scores, cut)
    if forward_rows.size:
        tracker.forward(forward_rows, forward)
    if reverse_rows.size:
        tracker.reverse(reverse_rows, reverse)
    for parity in (0, 1):  # a pilot row's first pair, then its second (rows distinct in each)
        at = np.flatnonzero(pilot_pair // kk == parity)
        if at.size:
            tracker.pilot_pairs(pair_rows[at], pairs[at], reversed_pairs[at])
    at = np.arange(pilot_pair.size, pair_rows.size)
    for k in np.unique(later // n):  # rows distinct within a pass
        here = at[later // n == k]
        tracker.pairs_of(pair_rows[here], pairs[here], reversed_pairs[here])
    tracker.count += size


def sampled_values(game, key, weights: np.ndarray, n_permutations, convergence,
                   batch_size: int, sampler: str):
    """Sampling until converged (or ``n_permutations`` orders): values, standard errors,
    orders drawn, whether converged, and the final ratio. ``batch_size`` and
    ``n_permutations`` count orders; for the antithetic sampler both are rounded up to even
    numbers (its later passes score orders in pairs)."""
    bits = key_bits(key)
    n, p = game.explained.shape[0], game.player_columns.shape[0]
    if n < 2 and n_permutations is None and convergence is not None:
        raise ValueError("SAGE's standard error, which convergence reads, needs at least 2 rows "
                         "to explain; got 1. Use estimator='exact', or pass n_permutations.")
    most = SAGE_MAX_PERMUTATIONS if n_permutations is None else n_permutations
    if sampler == "antithetic":
        most, batch_size = most + most % 2, batch_size + batch_size % 2
        tracker = _PassTracker(n, weights, p)
    else:
        tracker = _Tracker()
        row_probability = weights / weights.sum()
    ratio, converged, batch = np.inf, False, 0
    while tracker.count < most:
        size = min(batch_size, most - tracker.count)
        rng = rng_stream(bits, _ORDER_STREAM, batch)
        if sampler == "antithetic":
            _antithetic_batch(game, tracker, bits, rng, tracker.count, size)
        else:
            rows = rng.choice(n, size, p=row_probability)
            tracker.update(_order_scores(game, rows, _random_places(rng, size, p)))
        batch += 1
        if tracker.count < 2:
            continue
        ratio = _ratio(tracker.mean, tracker.standard_error)
        if convergence is not None and ratio < convergence and tracker.settled:
            converged = True
            break
    if n_permutations is None and not converged:
        warnings.warn(
            f"SAGE did not converge in {tracker.count:,} samples: the largest standard error "
            f"is {ratio:.3g} times the range of the values (convergence={convergence}). Values "
            "of nearly equal size make the range tiny; pass n_permutations, or a larger "
            "convergence.", RuntimeWarning, stacklevel=3)
    return tracker.mean, tracker.standard_error, tracker.count, converged, ratio
