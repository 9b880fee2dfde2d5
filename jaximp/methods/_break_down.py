"""Break-down attributions (Staniak & Biecek 2018): R's ``iBreakDown::local_attributions`` and
dalex's ``predict_parts(type="break_down")``.

At an explained row x, the features are fixed at x's values one after another, in an order,
and each is credited with the change of the mean prediction over the background rows b that
fixing it makes. With ``v_x(S) = sum_b w_b f(x_S, b_rest) / sum_b w_b`` (the game of
:func:`jaximp.shapley_values`) and the order ``j_1, ..., j_p``,

    attribution(j_k) = v_x({j_1, ..., j_k}) - v_x({j_1, ..., j_(k-1)}),

so a row's attributions sum to ``f(x) - v_x(empty)``, the mean background prediction. The
default order, per row, puts the features with the largest effect alone first:
``|v_x({j}) - v_x(empty)|`` (its root mean square over several outputs), as iBreakDown does.
Two rounds of engine evaluations: every single feature (shared by all rows), then each row's
p - 2 inner steps along its own order.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from ..data import Choice, select_outputs, validate_params
from ..results import with_input_layout
from ._attributions import Attributions
from ._shapley import base_and_values, coalition_game, rows_like

__all__ = ["break_down"]

_ORDERINGS = ("abs", "signed")


@validate_params(ordering=Choice(*_ORDERINGS))
def break_down(
    model,
    X,
    background=None,
    *,
    order=None,
    ordering: str = "abs",
    background_size: int | None = None,
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
) -> Attributions:
    """Break-down attributions of any model: each feature's step along a path that fixes the
    features at the explained row's values one by one (iBreakDown, dalex).

    Step k fixes feature ``j_k``: its attribution is ``v_x(first k) - v_x(first k - 1)``, with
    ``v_x(S)`` the weighted mean prediction over the background rows with the features in S
    set to x's values (the others keep the background's). The steps start at the mean
    background prediction and end at ``f(x)``.

    Parameters
    ----------
    model : callable, Flax/Equinox module or scikit-learn-like estimator
        See :func:`jaximp.as_predictor`.
    X : array of shape (n, c) or DataFrame
        The rows to explain; one row may come as a pandas Series, or as a 1-D array of c
        values with a ``background`` (then n = 1).
    background : array of shape (m, c), DataFrame or Dataset, optional
        The data the path starts from (dalex's and iBreakDown's ``data``). Default: the rows
        of ``X`` themselves (with their ``sample_weight``).
    order : list of str or int, optional
        One order for every row: all features (or groups), by name or position, each once
        (iBreakDown's and dalex's ``order``). Default: per row, by ``ordering``.
    ordering : {"abs", "signed"}, default "abs"
        How the default order ranks the features by their effect alone,
        ``d_j = v_x({j}) - v_x(empty)``: ``"abs"``, largest ``|d_j|`` first (its root mean
        square over the outputs; ties in column order), as R's iBreakDown; ``"signed"``,
        largest ``d_j`` first (its mean over the outputs; ties in reverse column order), as
        dalex's Python ``break_down``, where a feature that lowers the prediction comes last
        however large its effect.
    background_size : int or None, default None
        A background with more rows is subsampled to this many (dalex's ``N``), drawn without
        replacement from ``random_state``; None keeps every row, as both references do by
        default.
    background_weight : array of shape (m,), optional
        Case weights of an explicit ``background`` (a Dataset carries its own). The
        references weigh every row alike.
    sample_weight : array of shape (n,), optional
        Case weights of the rows of X: they weight the background when it is X and the mean
        ``|attribution|`` of :meth:`Attributions.importance`.
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        The background subsample (nothing else is random).
    feature_names, categorical, groups
        Data description (see :func:`jaximp.as_dataset`); a group is fixed in one step.
    variables : pytree, optional
        Variables of a Flax linen module.
    memory_budget, progress
        As in :func:`jaximp.shapley_values`.
    output : int, str or list, optional
        Model outputs to explain (default all); one order serves them all.

    Returns
    -------
    Attributions
        ``method="break_down"``; ``values`` (n, p, o) in the features' order, summing per
        row to ``predictions - baseline_values``; ``predictions`` (n, o) ``f(x)``;
        ``baseline_values`` (n, o) the mean background prediction (dalex's "intercept");
        ``info``: ``order`` (n, p), the features' positions in the order they were fixed
        (dalex's rows from top to bottom), ``cumulative`` (n, p + 1, o), the mean prediction
        after each step (the first is the intercept, the last ``f(x)``), ``ordering``,
        ``n_background``, ``background_rows``, ``sample_weight``, ``levels`` (the levels
        that a categorical feature's codes in ``data`` index).

    Notes
    -----
    dalex's default ``predict_parts`` type, ``"break_down_interactions"``, also ranks pairs
    of features and may fix two in one step; that variant is not implemented. Cost: about
    ``n x 2p x m`` model rows.

    References
    ----------
    Staniak & Biecek (2018), "Explanations of model predictions with live and breakDown
    packages", The R Journal 10(2).
    Gosiewska & Biecek (2019), "Do not trust additive explanations", arXiv:1903.11420.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> f = lambda X: 3 * X[:, 0] - X[:, 1] + 0.1 * X[:, 2]
    >>> bd = break_down(f, np.array([[1.0, 2.0, 0.0]]), X)
    >>> [bd.feature_names[j] for j in bd.info["order"][0]]  # |effect| 3.0, 2.0, 0.0
    ['x0', 'x1', 'x2']
    >>> bool(np.allclose(bd.values.sum(axis=1), bd.predictions - bd.baseline_values))
    True
    """
    game, names, output_names, data, details, _ = coalition_game(
        model, rows_like(X, background), background, None, background_size,
        background_weight, sample_weight, random_state, feature_names, categorical, groups,
        variables, memory_budget, progress)
    game = dataclasses.replace(game, defers=False)  # the first round's values set the second's
    out_idx = select_outputs(output_names, output)
    n, p, o = game.explained.shape[0], len(names), game.predictor.n_outputs
    fixed = None if order is None else _checked_order(order, names)
    # round 1: each feature alone, and all of them (f(x)), for every row
    singles_and_all = np.concatenate([np.eye(p, dtype=bool), np.ones((1, p), bool)])
    base, first = np.empty(o), np.empty((n, p + 1, o))

    def keep(rows, _, empty, v):  # v: (rows, p + 1, o)
        base[:], first[rows] = empty, v

    game.evaluated(game.plans(singles_and_all, p + 1), game.reducer,
                   lambda result: base_and_values(result, p + 1), "break-down", keep)
    singles, full = first[:, :p], first[:, p]
    effects = (singles - base)[..., out_idx]  # (n, p, o')
    if fixed is not None:
        order = np.tile(fixed, (n, 1))
    elif ordering == "abs":
        order = np.argsort(-np.sqrt(np.mean(effects ** 2, axis=-1)), axis=1, kind="stable")
    else:
        order = np.argsort(effects.mean(axis=-1), axis=1, kind="stable")[:, ::-1]
    # round 2: the path's inner steps, fixing 2 .. p - 1 features, along each row's order
    cumulative = np.empty((n, p + 1, o))
    cumulative[:, 0], cumulative[:, 1] = base, singles[np.arange(n), order[:, 0]]
    cumulative[:, p] = full
    if p > 2:
        positions = np.argsort(order, axis=1)  # (n, p): where each feature is fixed

        def steps(rows):
            fixed_first = np.arange(2, p)[None, :, None]  # the steps' sizes
            return positions[rows][:, None, :] < fixed_first, None  # (rows, p - 2, p)

        def inner(rows, _, v):
            cumulative[rows, 2:p] = v

        game.evaluated(game.plans(steps, p - 2, empty_item=False), game.reducer,
                       lambda result: (result[:, 0, :].reshape(-1, p - 2, o),),
                       "break-down", inner)
    cumulative = cumulative[..., out_idx]
    values = np.empty((n, p, len(out_idx)))
    np.put_along_axis(values, order[:, :, None], np.diff(cumulative, axis=1), axis=1)
    for array in (order, cumulative):
        array.flags.writeable = False
    info = with_input_layout(
        {"order": order, "cumulative": cumulative, "ordering": "given" if fixed is not None
         else ordering, "n_background": details.n_background,
         "background_rows": details.background_rows, "sample_weight": details.sample_weight,
         "levels": details.levels},
        details.input_layout)
    return Attributions(values=values, data=data.copy(), feature_names=names,
                        output_names=tuple(output_names[i] for i in out_idx),
                        method="break_down", predictions=full[:, out_idx],
                        baseline_values=np.tile(base[out_idx], (n, 1)), info=info)


def _checked_order(order, names: tuple) -> np.ndarray:
    """An explicit order: each player once, by name or position -> (p,) positions."""
    p = len(names)
    items = [order] if isinstance(order, (str, int, np.integer)) else list(order)
    positions = []
    for item in items:
        if isinstance(item, str) and item in names:
            positions.append(names.index(item))
        elif (isinstance(item, (int, np.integer)) and not isinstance(item, bool)
              and -p <= item < p):
            positions.append(int(item) % p)
        else:
            raise ValueError(f"order must list the features by name or position (0 .. "
                             f"{p - 1}); {item!r:.40} is neither. The features: "
                             f"{list(names)[:20]}.")
    if sorted(positions) != list(range(p)):
        missing = [names[j] for j in range(p) if j not in positions]
        twice = sorted({names[j] for j in positions if positions.count(j) > 1})
        raise ValueError(
            f"order must name each of the {p} features once; "
            + (f"missing {missing[:10]}" if missing else "") + ("; " if missing and twice
                                                                 else "")
            + (f"repeated {twice[:10]}" if twice else "") + ".")
    return np.asarray(positions)
