"""Matplotlib figures of jaximp results: importance bars or dots with error bars, several methods
side by side, partial dependence with ICE curves and a rug, and heat maps whose axes are labelled
with the grid values.

Every function returns what it drew on (the Axes, or the Figure of a multi-panel plot). Figures
made here use matplotlib's constrained layout, so tick labels, axis labels and titles stay inside
the figure on screen and when saved. Past ``TOP`` features (or pairs), bar charts show the
strongest ``TOP`` and say so in the title. matplotlib is imported inside the functions:
importing jaximp does not import it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..data import (
    Choice,
    Index,
    Int,
    check_bool,
    check_choice,
    check_int,
    output_index,
    replicate_quantiles,
    validate_params,
)

__all__ = ["plot_importances", "plot_input_map"]

TOP = 30
"""Bar charts of more features (or pairs) than this show only the strongest ``TOP`` by default."""

_POSITIVE, _NEGATIVE, _ICE = "tab:blue", "tab:red", "0.55"
_SIGNED_METHODS = ("olden",)  # signed by definition: ranked by magnitude, bars coloured by sign
_ERRORS = ("auto", "std", "interval", "none")
_MAX_TICKS = 8  # tick labels on a numeric grid axis
_MAX_LEVELS = 30  # on a categorical axis


# ------------------------------------------------------------------------------------------------
# Small helpers
# ------------------------------------------------------------------------------------------------

def resolve_top(top, size: int) -> int:
    """How many of ``size`` items to draw: ``top``, or all up to ``TOP`` and ``TOP`` past it."""
    if top is None:
        return size if size <= TOP else TOP
    return min(check_int(top, "top"), size)


def compact(value) -> str:
    """A grid value as a short tick label: integers exactly, other numbers to 3 significant
    digits (never dropping integer digits), categorical levels by name."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (int, float, np.number)) \
            or isinstance(value, (bool, np.bool_)):
        return str(value)
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if v == int(v) and abs(v) < 1e6:
        return str(int(v))
    if 1e-3 <= abs(v) < 1e6:
        digits = max(3, int(math.floor(math.log10(abs(v)))) + 1)
        return np.format_float_positional(v, precision=digits, unique=True, fractional=False,
                                          trim="-")
    return f"{v:.3g}"


def new_figure(width: float, height: float, ncols: int = 1, nrows: int = 1, **kwargs):
    """A Figure with constrained layout (nothing clipped when drawn or saved) and its Axes."""
    import matplotlib.pyplot as plt

    return plt.subplots(nrows, ncols, figsize=(min(width, 24.0), min(height, 30.0)),
                        layout="constrained", **kwargs)


def _label_inches(labels) -> float:
    """Rough width of the widest tick label at the default font size."""
    return 0.075 * max((len(str(label)) for label in labels), default=0)


def _title(what: str, output: str, shown: int, total: int, items: str) -> str:
    title = f"{what}, output {output}"
    return title + (f"\n(top {shown} of {total} {items})" if shown < total else "")


def error_bars(mean, std, replicates, errors: str, prefer: str):
    """Lower and upper error-bar lengths, shape (2, k), and a note for the axis label; or
    ``(None, "")``. ``errors="auto"`` takes ``prefer`` ("std" or "interval") when the result
    has it, else the other one, else none."""
    check_choice(errors, "errors", _ERRORS)
    has = {"std": std is not None,
           "interval": replicates is not None and replicates.shape[-1] > 1}
    if errors == "auto":
        other = "interval" if prefer == "std" else "std"
        errors = prefer if has[prefer] else other if has[other] else "none"
    if errors == "none":
        return None, ""
    if not has[errors]:
        what = "a standard error (importances_std or values_std)" if errors == "std" else \
            "replicates (repeats or bootstrap)"
        raise ValueError(f"errors={errors!r} needs {what}; this result has none. Use "
                         "errors='none' or compute with repeats or bootstrap.")
    if errors == "std":
        return np.stack([std, std]), "error bars: \u00b11 std"
    low, high = replicate_quantiles(replicates, [0.025, 0.975])
    with np.errstate(invalid="ignore"):  # an infinite bar or bound draws no whisker
        err = np.stack([mean - low, high - mean])
    return np.where(np.isfinite(err), err, 0.0).clip(min=0), "error bars: 95% interval"


def draw_rows(ax, labels, values, err=None, style: str = "bar", color: str = _POSITIVE):
    """One horizontal bar (or dot) per label, the first label at the bottom; bars coloured by
    sign when some values are negative, with a line at zero."""
    check_choice(style, "style", ("bar", "dot"))
    values = np.asarray(values, dtype=np.float64)
    infinite = np.isinf(values)  # drawn to the largest finite length and marked
    if infinite.any():
        finite = np.abs(values[np.isfinite(values)])
        reach = 1.1 * finite.max() if finite.size and finite.max() > 0 else 1.0
        values = np.where(infinite, np.sign(values) * reach, values)
    y = np.arange(len(labels))
    negative = bool(np.any(values < 0))
    colors = np.where(values < 0, _NEGATIVE, _POSITIVE).tolist() if negative else color
    if style == "bar":
        ax.barh(y, np.nan_to_num(values), xerr=err, color=colors,
                error_kw={"ecolor": "0.2", "elinewidth": 1, "capsize": 2})
    else:
        ax.hlines(y, 0, np.nan_to_num(values), color="0.8", lw=1, zorder=1)
        if err is not None:
            ax.errorbar(values, y, xerr=err, fmt="none", ecolor="0.2", elinewidth=1, capsize=2)
        ax.scatter(values, y, c=colors, s=25, zorder=3)
    if negative or style == "dot":
        ax.axvline(0, color="0.3", lw=0.8)
    for row in np.flatnonzero(infinite):
        ax.text(values[row], row, " inf " if values[row] > 0 else " -inf ", va="center",
                ha="right" if values[row] > 0 else "left", color="white", fontsize=8)
    ax.set_yticks(y, [str(label) for label in labels])
    ax.set_ylim(-0.6, len(y) - 0.4)
    if len(y) > 40:
        ax.tick_params(axis="y", labelsize=7)


def value_ticks(ax, which: str, labels, rotate: bool = False, most: int = _MAX_TICKS) -> None:
    """Ticks at positions 0..g-1 labelled with the grid values: every one up to ``most`` of
    them, else every k-th from the first (at most ``most``)."""
    index = np.arange(0, len(labels), -(-len(labels) // most))
    text = [compact(labels[i]) for i in index]
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_ticks(index, text)
    if rotate and which == "x" and (sum(map(len, text)) > 30 or max(map(len, text)) > 10):
        ax.tick_params(axis="x", labelrotation=45)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")


def heatmap(ax, values, row_labels, col_labels, *, xlabel: str, ylabel: str,
            colorbar_label: str, annotate: bool = False, cmap: str = "viridis",
            levels: tuple[bool, bool] = (False, False)):
    """Cells ``values[i, j]`` at row ``i`` (y) and column ``j`` (x), NaN cells blank, axes
    labelled with the grid values (every level of an axis flagged in ``levels`` = (x, y), up
    to ``_MAX_LEVELS``), and a colour bar; returns the QuadMesh."""
    values = np.asarray(values, dtype=np.float64)
    rows, cols = values.shape
    mesh = ax.pcolormesh(np.arange(cols + 1) - 0.5, np.arange(rows + 1) - 0.5,
                         np.ma.masked_invalid(values), cmap=cmap, shading="flat")
    value_ticks(ax, "x", col_labels, rotate=True, most=_MAX_LEVELS if levels[0] else _MAX_TICKS)
    value_ticks(ax, "y", row_labels, most=_MAX_LEVELS if levels[1] else _MAX_TICKS)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.figure.colorbar(mesh, ax=ax, label=colorbar_label)
    finite = values[np.isfinite(values)]
    if annotate and finite.size:
        middle = (finite.min() + finite.max()) / 2
        scale = np.abs(finite).max()
        decimals = max(0, 1 - math.floor(math.log10(scale))) if scale > 0 else 0
        for i, j in zip(*np.nonzero(np.isfinite(values))):
            ax.text(j, i, f"{values[i, j]:.{decimals}f}", ha="center", va="center", fontsize=7,
                    color="black" if values[i, j] > middle else "white")
    return mesh


# ------------------------------------------------------------------------------------------------
# Importance and interaction
# ------------------------------------------------------------------------------------------------

def _ranking(result, column: int) -> np.ndarray:
    """Feature indices, strongest first (by magnitude for signed methods such as Olden's)."""
    values = result.importances_mean[:, column]
    key = np.abs(values) if result.method in _SIGNED_METHODS else values
    return np.argsort(-np.nan_to_num(key, nan=-np.inf), kind="stable")


def _importance_errors(result, column: int, errors: str):
    std = None if result.importances_std is None else result.importances_std[:, column]
    reps = None if result.importances is None else result.importances[:, column]
    return error_bars(result.importances_mean[:, column], std, reps, errors, prefer="std")


def plot_importance(result, output=None, ax=None, top=None,
                    style: str = "bar", errors: str = "auto", what: str | None = None):
    """The body of :meth:`FeatureImportance.plot`; ``what`` names the quantity (default
    "<method> importance")."""
    what = what or f"{result.method} importance"
    column = output_index(result.output_names, output)
    p = len(result.feature_names)
    shown = _ranking(result, column)[:resolve_top(top, p)][::-1]
    err, note = _importance_errors(result, column, errors)
    labels = [result.feature_names[i] for i in shown]
    if ax is None:
        _, ax = new_figure(3.5 + _label_inches(labels), 0.25 * len(labels) + 1.4)
    draw_rows(ax, labels, result.importances_mean[shown, column],
              None if err is None else err[:, shown], style)
    ax.set_xlabel(what + (f"\n({note})" if note else ""))
    ax.set_title(_title(what, result.output_names[column], len(shown), p, "features"))
    return ax


def plot_interaction(result, output=None, ax=None, top=None, kind: str = "bar",
                     errors: str = "auto", what: str | None = None):
    """The body of :meth:`FeatureInteraction.plot`; ``what`` names the quantity (default the
    method)."""
    what = what or result.method
    check_choice(kind, "kind", ("bar", "heatmap"))
    column = output_index(result.output_names, output)
    if not len(result):
        raise ValueError("this result holds no feature sets to plot.")
    if kind == "heatmap":
        return _interaction_heatmap(result, column, ax, top, what)
    s = len(result)
    best = result.sorted(column)._take(np.arange(resolve_top(top, s))[::-1])
    labels = [" x ".join(fs) for fs in best.feature_sets]
    std = None if best.values_std is None else best.values_std[:, column]
    reps = None if best.replicates is None else best.replicates[:, column]
    err, note = error_bars(best.values[:, column], std, reps, errors, prefer="interval")
    if ax is None:
        _, ax = new_figure(3.5 + _label_inches(labels), 0.25 * len(labels) + 1.4)
    draw_rows(ax, labels, best.values[:, column], err, color="tab:purple")
    ax.set_xlabel(what + (f"\n({note})" if note else ""))
    kind_name = "triples" if s and len(result.feature_sets[0]) == 3 else "pairs"
    ax.set_title(_title(what, result.output_names[column], len(labels), s, kind_name))
    return ax


def _interaction_heatmap(result, column: int, ax, top, what: str):
    """Feature x feature heat map of pairwise values; past ``TOP`` features, those with the
    strongest pairs."""
    if len(result) and len(result.feature_sets[0]) != 2:
        raise ValueError("kind='heatmap' needs pairwise statistics; this result holds triples. "
                         "Use kind='bar'.")
    names = list(dict.fromkeys(name for fs in result.feature_sets for name in fs))
    position = {name: i for i, name in enumerate(names)}
    a, b = (np.array([position[fs[i]] for fs in result.feature_sets], dtype=int)
            for i in (0, 1))
    table = np.full((len(names), len(names)), np.nan)  # as result.matrix(), for many pairs
    table[a, b] = table[b, a] = result.values[:, column]
    strongest = np.nan_to_num(table, nan=-np.inf).max(axis=1)
    keep = np.sort(np.argsort(-strongest, kind="stable")[:resolve_top(top, len(names))])
    chosen = [names[i] for i in keep]
    values = table[np.ix_(keep, keep)]
    if ax is None:
        side = 2.5 + 0.3 * len(chosen) + _label_inches(chosen)
        _, ax = new_figure(side + 1.2, side)
    heatmap(ax, values, chosen, chosen, xlabel="feature", ylabel="feature",
            colorbar_label=what, annotate=len(chosen) <= 10, cmap="magma",
            levels=(True, True))
    ax.invert_yaxis()  # first feature at the top, as a table
    ax.set_aspect("equal")
    ax.set_title(_title(what, result.output_names[column], len(chosen), len(names),
                        "features"))
    return ax


def plot_input_map(picture, ax=None, *, label: str, sequence: bool = False,
                   channel_axis: int = -1):
    """Values on the positions of one example (``result.image()``), drawn with ``imshow``.

    An ``(h, w)`` example is an image; an ``(h, w, c)`` one shows the mean over its channel
    axis (``channel_axis``, default last: a patch spanning every channel shows its own value);
    ``sequence=True`` draws a ``(t, c)`` example as a heat map over time (time across, one
    line per channel). Signed values (any below zero) use a diverging colour map centred on
    zero, others a sequential one from zero; positions of no feature stay blank. Returns the
    Axes; its image's array is the 2-D map drawn."""
    check_bool(sequence, "sequence")
    picture = np.asarray(picture, dtype=np.float64)
    if picture.ndim == 3:
        axis = check_int(channel_axis, "channel_axis", minimum=-3)
        if axis > 2:
            raise ValueError(f"channel_axis must index the 3 axes of the examples; got {axis}.")
        with warnings.catch_warnings():  # positions of no feature: NaN, blank if all are
            warnings.simplefilter("ignore", RuntimeWarning)
            picture = np.nanmean(picture, axis=axis)
    elif picture.ndim != 2:
        raise ValueError(f"an image needs examples of 2 or 3 axes; these have shape "
                         f"{picture.shape}. Draw result.image() yourself, e.g. one slice.")
    if sequence:
        picture = picture.T  # (c, t): time across
    if ax is None:
        rows, cols = picture.shape
        scale = 4.0 / max(rows, cols)
        _, ax = new_figure(max(3.0, cols * scale) + 1.2 if not sequence else 6.0,
                           max(2.0, rows * scale) if not sequence else 0.3 * rows + 1.5)
    finite = picture[np.isfinite(picture)]
    if finite.size and finite.min() < 0:
        limit = float(np.abs(finite).max())
        style = {"cmap": "RdBu_r", "vmin": -limit, "vmax": limit}
    else:
        style = {"cmap": "viridis", "vmin": 0.0, "vmax": float(finite.max()) if finite.size
                 and finite.max() > 0 else 1.0}
    shown = ax.imshow(picture, aspect="auto" if sequence else "equal",
                      interpolation="nearest", **style)
    if sequence:
        ax.set_xlabel("time step")
        ax.set_ylabel("channel")
    ax.figure.colorbar(shown, ax=ax, label=label)
    return ax


def _is_importance(result) -> bool:
    """Whether ``result`` reads as a FeatureImportance (this module draws results by their
    fields, so it does not import the result types)."""
    return all(hasattr(result, name) for name in ("importances_mean", "feature_names", "method"))


def _as_named(results) -> list[tuple[str, object]]:
    if _is_importance(results):
        results = [results]
    items = list(results.items()) if isinstance(results, Mapping) else \
        [(getattr(r, "method", None), r) for r in results]
    if not items or not all(_is_importance(r) for _, r in items):
        raise TypeError("results must be a non-empty list (or dict of name -> result) of "
                        "FeatureImportance results, e.g. [pd_importance(...), "
                        f"garson_importance(...)]; got {results!r:.80}.")
    return [(str(name), r) for name, r in items]


def importance_column(result, output, outputs) -> int:
    """The column of an importance ``result`` that shows ``output``, one of ``outputs`` (the
    model's, as the caller names them): a result of one column scores the whole model (a
    loss over all of a classifier's classes) and shows it for any of them."""
    if len(result.output_names) == 1:
        output_index(outputs, output)  # a name or index of the model's outputs
        return 0
    return output_index(result.output_names, output)


@validate_params(top=Int(1, none=True), output=Index(names=True, none=True),
                 style=Choice("bar", "dot"), errors=Choice(*_ERRORS))
def plot_importances(results, ax=None, top=None, output=None, style: str = "bar",
                     errors: str = "auto"):
    """Several importance results side by side, one panel per method, features in one shared
    order (as Greenwell, Boehmke & McCarthy 2018, Figure 4, compare the PD-based, Garson and
    Olden importances).

    Parameters
    ----------
    results : sequence of FeatureImportance, or dict of str to FeatureImportance
        The results to compare; a dict's keys title the panels (default: each ``method``).
        Features are matched by name; a feature a result lacks is left blank in its panel.
    ax : sequence of matplotlib Axes, optional
        One Axes per result (default: a new Figure with one row of panels sharing the y axis).
    top : int, optional
        Features to show: the ``top`` strongest by the first result (by magnitude for a signed
        method such as Olden's). Default: all up to 30 features, the strongest 30 past that.
    output : int or str, optional
        One output, by index or name. Default: the positive class (the second output)
        for a binary classifier's probabilities, else the first output; ``output=0``
        gives class 0 (R's pdp and vip ``which.class = 1``). Picked in each result; a
        result of one column (a loss over all of a classifier's classes) shows it for any.
    style : {"bar", "dot"}, default "bar"
    errors : {"auto", "std", "interval", "none"}, default "auto"
        Error bars: ``importances_std`` (``"std"``), the 95% percentile interval over repeats
        or replicates (``"interval"``), where each result has them (``"auto"``, std first).

    Returns
    -------
    matplotlib.figure.Figure
        Panels in the order of ``results``; bars with negative values (Olden) are red.

    Examples
    --------
    >>> import numpy as np
    >>> from jaximp import garson_importance, olden_importance
    >>> weights = [np.array([[1.0, -2.0], [0.5, 0.1], [0.0, 0.3]]), np.array([[1.0], [-1.0]])]
    >>> fig = plot_importances([garson_importance(weights), olden_importance(weights)])
    >>> [ax.get_title() for ax in fig.axes]
    ['garson', 'olden']
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    named = _as_named(results)
    first = named[0][1]
    outputs = max((r.output_names for _, r in named), key=len)  # the model's, where shown
    column = importance_column(first, output, outputs)
    p = len(first.feature_names)
    order = _ranking(first, column)[:resolve_top(top, p)][::-1]
    labels = [first.feature_names[i] for i in order]
    if ax is None:
        fig, axes = new_figure(2.8 * len(named) + _label_inches(labels),
                               0.25 * len(labels) + 1.6, ncols=len(named), sharey=True,
                               squeeze=False)
        axes = list(axes[0])
    else:
        axes = [ax] if not isinstance(ax, (Sequence, np.ndarray)) else list(np.ravel(ax))
        if len(axes) != len(named):
            raise ValueError(f"ax must hold one Axes per result ({len(named)}); got "
                             f"{len(axes)}.")
        fig = axes[0].figure
    chosen_outputs = []
    for panel, (name, result) in zip(axes, named):
        j = importance_column(result, output, outputs)
        chosen_outputs.append(result.output_names[j])
        position = {feature: i for i, feature in enumerate(result.feature_names)}
        rows = np.asarray([position.get(label, -1) for label in labels])
        present = rows >= 0
        values = np.where(present, result.importances_mean[rows, j], np.nan)
        err, note = _importance_errors(result, j, errors)
        if err is not None:
            err = np.where(present, err[:, rows], 0.0)
        draw_rows(panel, labels, values, err, style)
        panel.set_title(name)
        panel.set_xlabel("importance" + (f"\n({note})" if note else ""))
    outputs = sorted(set(chosen_outputs))
    heading = f"output {outputs[0]}" if len(outputs) == 1 else \
        "outputs " + ", ".join(chosen_outputs)
    if len(labels) < p:
        heading += f"; top {len(labels)} of {p} features by {named[0][0]}"
    fig.suptitle(heading)
    return fig


# ------------------------------------------------------------------------------------------------
# Partial dependence
# ------------------------------------------------------------------------------------------------

def ice_rows(n: int, max_curves: int) -> np.ndarray:
    """Indices of exactly ``min(n, max_curves)`` rows, evenly spaced over ``0..n-1``."""
    if n <= max_curves:
        return np.arange(n)
    return np.linspace(0, n - 1, max_curves).round().astype(int)  # steps >= 1: distinct


def plot_pd(result, output=None, ax=None, ice: bool = True, max_curves: int = 200,
            rug: bool = True, label=None):
    """The body of :meth:`PartialDependence.plot`."""
    check_bool(ice, "ice")
    check_bool(rug, "rug")
    max_curves = check_int(max_curves, "max_curves", minimum=0)
    j = output_index(result.output_names, output)
    k = len(result.feature_names)
    kinds = result.feature_kinds or ("continuous",) * k
    what = "centered partial dependence" if result.centered else "partial dependence"
    if k == 2 and result.average is not None:
        if ax is None:
            _, ax = new_figure(5.0, 4.0)
        heatmap(ax, result.average[..., j].T, result.grid_values[1], result.grid_values[0],
                xlabel=result.feature_names[0], ylabel=result.feature_names[1],
                colorbar_label=f"{what} ({result.output_names[j]})",
                levels=(kinds[0] != "continuous", kinds[1] != "continuous"))
        ax.set_title(f"PD of {result.feature_names[0]} and {result.feature_names[1]}")
        return ax
    if k != 1:
        raise ValueError(f"plot draws 1-D curves and 2-D averages only; this result is a "
                         f"{k}-D {'PD' if result.average is not None else 'ICE'}. Plot "
                         "result.to_frame() yourself, or compute 1-D or 2-D partial dependence.")
    labels = result.grid_values[0]
    numeric = kinds[0] == "continuous"
    x = np.asarray(labels, dtype=float) if numeric else np.arange(len(labels), dtype=float)
    if ax is None:
        _, ax = new_figure(4.0 + (0 if numeric else 0.05 * len(labels)), 3.0)
    line = {} if numeric else {"linestyle": "none"}
    if ice and result.individual is not None and max_curves > 0:
        rows = ice_rows(result.individual.shape[0], max_curves)
        curves = result.individual[rows][:, :, j]
        if numeric:
            ax.plot(x, curves.T, color=_ICE, lw=0.5, alpha=0.4)
        else:
            ax.plot(x, curves.T, color=_ICE, marker="_", markersize=10, alpha=0.4, **line)
    if result.average is not None:
        ax.plot(x, result.average[:, j], color="tab:red" if label is None else None, lw=2,
                marker=None if numeric else "D", markersize=7, zorder=3,
                label=None if label is None else str(label), **line)
        if label is not None:
            ax.legend(fontsize="small")
    deciles = result.deciles[0] if result.deciles else None
    if rug and numeric and deciles is not None:
        ax.vlines(deciles, 0, 0.05, transform=ax.get_xaxis_transform(), color="black", lw=1,
                  zorder=4)
    if numeric:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(nbins=5))  # room for labels such as "-0.75"
    else:
        value_ticks(ax, "x", labels, rotate=True, most=_MAX_LEVELS)
        ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_xlabel(result.feature_names[0])
    ax.set_ylabel(f"{what} ({result.output_names[j]})")
    return ax


def plot_pds(results, output=None, ice: bool = True, max_curves: int = 100, ncols=None,
             top=None, sharey: bool = True):
    """The body of :meth:`PartialDependences.plot`."""
    check_bool(sharey, "sharey")
    names = list(results)
    shown = resolve_top(top, len(names))
    if shown < len(names):
        names = results.top(shown, output)
    n = len(names)
    ncols = (3 if n <= 9 else 5) if ncols is None else check_int(ncols, "ncols")
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = new_figure(3.2 * ncols, 2.6 * nrows, ncols=ncols, nrows=nrows, squeeze=False,
                           sharey=sharey)
    for ax, name in zip(axes.flat, names):
        plot_pd(results[name], output=output, ax=ax, ice=ice, max_curves=max_curves)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    if sharey:
        for ax in axes[:, 1:].flat:
            ax.set_ylabel("")
    if n < len(results):
        fig.suptitle(f"partial dependence: top {n} of {len(results)} features "
                     "(largest PD spread)")
    return fig


# ------------------------------------------------------------------------------------------------
# Friedman's H
# ------------------------------------------------------------------------------------------------

def plot_h(h, statistic=None, output=None, top=None):
    """The body of :meth:`HStatistic.plot`."""
    parts = ("overall", "pairwise", "three_way")
    names = [statistic] if statistic is not None else [
        name for name in parts if getattr(h, name) is not None]
    if any(name not in parts for name in names):
        raise ValueError(f"statistic must be 'overall', 'pairwise' or 'three_way'; got "
                         f"{statistic!r}.")
    results = [h._part(name) for name in names]
    j = output_index(h.output_names, output)
    labels = [r.feature_names if name == "overall" else [" x ".join(fs) for fs in r.feature_sets]
              for name, r in zip(names, results)]
    shown = [resolve_top(top, len(lab)) for lab in labels]
    fig, axes = new_figure(sum(3.5 + _label_inches(lab) for lab in labels),
                           0.25 * max(shown) + 1.8, ncols=len(names), squeeze=False)
    label = ("H^2" if h.squared else "H") + ("" if h.normalized else ", unnormalized")
    heading = [f"output {h.output_names[j]}"]
    if h.total is not None:
        heading.append(f"total {label} = {h.total[j]:.3g}")
    for ax, name, part, k, lab in zip(axes[0], names, results, shown, labels):
        if name == "overall":  # bootstrap interval whiskers, as the pairs'
            reps = part.importances is not None and part.importances.shape[-1] > 1
            plot_importance(part, output=j, ax=ax, top=k, what=label,
                            errors="interval" if reps else "auto")
        else:
            plot_interaction(part, output=j, ax=ax, top=k, what=label)
        ax.set_title(f"{name.replace('_', '-')} {label}")
        if k < len(lab):
            heading.append(f"{name.replace('_', '-')}: top {k} of {len(lab)}")
    fig.suptitle("; ".join(heading))
    return fig


# ------------------------------------------------------------------------------------------------
# Waterfall of one row's attributions
# ------------------------------------------------------------------------------------------------


def plot_waterfall(labels, steps: np.ndarray, start: float, ax=None, *, title: str = "",
                   max_steps: int = 12, start_label: str = "the mean prediction",
                   prediction: float | None = None):
    """One row's attributions as a waterfall: from ``start`` (``start_label``: the mean
    background prediction, or the prediction at a baseline) each step ``steps[k]`` moves the
    running total, in the order given, to the ``prediction`` (where the steps fall short of
    it, as integrated gradients' may, a last grey bar "not attributed" closes the gap).
    Beyond ``max_steps`` steps the rest are one bar, "k other features". Returns the Axes."""
    steps = np.asarray(steps, np.float64)
    labels = [str(label) for label in labels]
    if steps.size > max_steps:
        rest = steps.size - (max_steps - 1)
        labels = labels[:max_steps - 1] + [f"{rest} other features"]
        steps = np.append(steps[:max_steps - 1], steps[max_steps - 1:].sum())
    colors = np.where(steps >= 0, _POSITIVE, _NEGATIVE).astype(object)
    if prediction is not None:
        gap = prediction - start - steps.sum()
        if abs(gap) > 1e-6 * max(1.0, abs(prediction), np.abs(steps).sum()):
            labels.append("not attributed")
            steps = np.append(steps, gap)
            colors = np.append(colors, "0.6")
    ends = start + np.cumsum(steps)
    begins = ends - steps
    if ax is None:
        _, ax = new_figure(6 + _label_inches(labels), 0.4 * len(steps) + 1.4)
    rows = np.arange(len(steps))[::-1] + 1  # the first step on top, the prediction below
    ax.barh(rows, steps, left=begins, color=list(colors), height=0.7)
    for row, end, step in zip(rows, ends, steps):
        ax.annotate(f"{step:+.3g}", (end, row), xytext=(3 if step >= 0 else -3, 0),
                    textcoords="offset points", va="center", ha="left" if step >= 0 else "right",
                    fontsize=8)
    final = start + steps.sum()
    ax.axvline(start, color="0.5", lw=0.8, ls="--")
    ax.axvline(final, color="0.2", lw=0.8)
    ax.set_yticks([*rows, 0], [*labels, f"prediction {final:.4g}"])
    ax.set_ylim(-0.6, len(steps) + 0.6)
    low, high = min(start, begins.min(), ends.min()), max(start, begins.max(), ends.max())
    margin = 0.18 * (high - low) or 1.0  # room for the step labels
    ax.set_xlim(low - margin, high + margin)
    ax.set_xlabel(f"from {start_label} {start:.4g}")
    if title:
        ax.set_title(title)
    return ax
