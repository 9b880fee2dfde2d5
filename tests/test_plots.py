"""Plots are checked by what they draw: titles, axis labels, bars, lines, cells, tick labels,
error-bar lengths, and that every label lies inside the figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection, PathCollection, QuadMesh  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

import jaximp  # noqa: E402
from jaximp.methods._hstat import h_statistic  # noqa: E402
from jaximp.methods._pd import PartialDependence, PartialDependences, partial_dependence  # noqa: E402
from jaximp.results._plots import compact, plot_importances  # noqa: E402
from jaximp.results._results import FeatureImportance, FeatureInteraction  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def assert_inside(fig, tolerance: float = 1.0):
    """Everything drawn (tick labels, axis labels, titles, colour bars) lies inside the figure,
    so neither the screen nor ``savefig`` clips it; measured with the renderer's extents."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    texts = [t for ax in fig.axes if ax.get_visible() for t in
             (ax.xaxis.label, ax.yaxis.label, ax.title, *shown_ticks(ax.xaxis, 0),
              *shown_ticks(ax.yaxis, 1))]
    checked = 0
    for text in texts:
        if not (text.get_visible() and text.get_text()):
            continue
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - tolerance and extent.x1 <= box.x1 + tolerance, text
        assert extent.y0 >= box.y0 - tolerance and extent.y1 <= box.y1 + tolerance, text
        checked += 1
    tight = fig.get_tightbbox(renderer)  # what savefig(bbox_inches="tight") would keep
    width, height = fig.get_size_inches()
    assert tight.x0 >= -0.02 and tight.y0 >= -0.02
    assert tight.x1 <= width + 0.02 and tight.y1 <= height + 0.02
    assert checked > 0


def shown_ticks(axis, coordinate):
    """Tick labels inside the axis' view interval (the locator also proposes others that
    matplotlib does not draw)."""
    low, high = sorted(axis.get_view_interval())
    return [t for t in axis.get_ticklabels()
            if low - 1e-9 <= t.get_position()[coordinate] <= high + 1e-9]


def tick_texts(labels):
    return [t.get_text() for t in labels]


def bar_widths(ax):
    return np.array([patch.get_width() for patch in ax.patches])


def error_lengths(ax):
    """Left and right ends of the horizontal error bars drawn on ``ax``."""
    (container,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    (segments,) = [c.get_segments() for c in container.lines[2]]
    left = np.array([s[0][0] for s in segments])
    right = np.array([s[1][0] for s in segments])
    return left, right


def importance(p=10, r=None, std=True, signs=False, method="permutation", names=None):
    mean = RNG.uniform(0.1, 2.0, size=(p, 1))
    if signs:
        mean = mean * np.where(np.arange(p) % 3 == 0, -1, 1)[:, None]
    reps = None if r is None else mean[..., None] + RNG.normal(0, 0.1, size=(p, 1, r))
    names = names or tuple(f"x{i}" for i in range(p))
    return FeatureImportance(method, tuple(names), ("y",), mean,
                             RNG.uniform(0.01, 0.2, (p, 1)) if std else None, reps)


def test_the_layout_check_sees_a_clipped_label():
    fig, ax = plt.subplots(figsize=(3, 2))  # no layout engine: long tick labels fall off
    ax.barh([0, 1], [1, 2])
    ax.set_yticks([0, 1], ["a feature with a very long name indeed", "b"])
    with pytest.raises(AssertionError):
        assert_inside(fig)


def test_compact_labels():
    assert [compact(v) for v in (1995.0, 0.052631, 1234.56, 1e7, 2.5e-6, -3.14159, "red", 3)] \
        == ["1995", "0.0526", "1235", "1e+07", "2.5e-06", "-3.14", "red", "3"]


def test_importance_bars_title_order_errors_and_layout():
    result = importance(10)
    ax = result.plot()
    mean, std = result.importances_mean[:, 0], result.importances_std[:, 0]
    order = np.argsort(mean)  # bottom to top: weakest to strongest
    assert ax.get_title() == "permutation importance, output y"
    assert ax.get_xlabel() == "permutation importance\n(error bars: \u00b11 std)"
    assert tick_texts(ax.get_yticklabels()) == [f"x{i}" for i in order]
    np.testing.assert_allclose(bar_widths(ax), mean[order])
    left, right = error_lengths(ax)
    np.testing.assert_allclose(mean[order] - left, std[order])
    np.testing.assert_allclose(right - mean[order], std[order])
    assert_inside(ax.figure)
    ax = result.plot(style="dot", errors="none")
    (dots,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    np.testing.assert_allclose(dots.get_offsets()[:, 0], mean[order])
    assert len(ax.patches) == 0 and ax.get_xlabel() == "permutation importance"


def test_importance_interval_errors_and_messages():
    result = importance(6, r=20, std=False, method="pd")
    ax = result.plot()
    mean = result.importances_mean[:, 0]
    order = np.argsort(mean)
    low, high = np.quantile(result.importances[:, 0], [0.025, 0.975], axis=-1)
    left, right = error_lengths(ax)
    np.testing.assert_allclose(left, np.minimum(low, mean)[order])
    np.testing.assert_allclose(right, np.maximum(high, mean)[order])
    assert "95% interval" in ax.get_xlabel()
    with pytest.raises(ValueError, match=r"errors='std' needs a standard error .* Use "
                                         r"errors='none'"):
        result.plot(errors="std")
    with pytest.raises(ValueError, match=r"errors must be one of \('auto', 'std', 'interval', "
                                         r"'none'\); got 'bars'\."):
        result.plot(errors="bars")
    with pytest.raises(ValueError, match=r"style must be one of \('bar', 'dot'\); got 'pie'\."):
        result.plot(style="pie")
    with pytest.raises(ValueError, match=r"top must be an int >= 1; got 0\."):
        result.plot(top=0)


def test_500_features_show_top_30_with_long_names_inside_the_figure():
    names = [f"a_rather_long_feature_name_number_{i}" for i in range(500)]
    result = importance(500, names=names)
    ax = result.plot()
    assert ax.get_title() == "permutation importance, output y\n(top 30 of 500 features)"
    assert len(ax.patches) == 30
    assert tick_texts(ax.get_yticklabels())[::-1] == result.top(30)
    assert_inside(ax.figure)
    assert len(result.plot(top=7).patches) == 7
    assert len(importance(30).plot().patches) == 30  # up to 30: every feature


def test_olden_bars_ranked_by_magnitude_coloured_by_sign():
    result = importance(9, std=False, signs=True, method="olden")
    ax = result.plot()
    mean = result.importances_mean[:, 0]
    order = np.argsort(np.abs(mean))
    np.testing.assert_allclose(bar_widths(ax), mean[order])
    colours = [patch.get_facecolor() for patch in ax.patches]
    expected = [to_rgba("tab:red" if v < 0 else "tab:blue") for v in mean[order]]
    assert colours == expected
    assert any(np.allclose(line.get_xdata(), 0) for line in ax.lines)  # the zero line
    assert ax.get_title() == "olden importance, output y"


def test_plot_importances_side_by_side_in_one_feature_order():
    first = importance(8)
    second = importance(8, std=False, signs=True, method="olden")
    third = FeatureImportance("garson", first.feature_names[:6], ("y",),
                              RNG.uniform(size=(6, 1)))  # lacks x6, x7
    fig = plot_importances({"PD": first, "Olden": second, "Garson": third})
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["PD", "Olden", "Garson"]
    assert fig.get_suptitle() == "output y"
    order = np.argsort(first.importances_mean[:, 0])
    names = [first.feature_names[i] for i in order]
    assert tick_texts(axes[0].get_yticklabels()) == names
    np.testing.assert_allclose(bar_widths(axes[1]), second.importances_mean[order, 0])
    garson = dict(zip(third.feature_names, third.importances_mean[:, 0]))
    np.testing.assert_allclose(bar_widths(axes[2]), [garson.get(n, 0.0) for n in names])
    assert all(len(ax.patches) == 8 for ax in axes)
    assert_inside(fig)
    fig = plot_importances([importance(40), importance(40, method="loco")], top=5)
    assert [ax.get_title() for ax in fig.axes] == ["permutation", "loco"]
    assert fig.get_suptitle() == "output y; top 5 of 40 features by permutation"
    assert all(len(ax.patches) == 5 for ax in fig.axes)
    _, given = plt.subplots(1, 3)
    with pytest.raises(ValueError, match=r"ax must hold one Axes per result \(2\); got 3\."):
        plot_importances([first, second], ax=given)
    with pytest.raises(TypeError, match="results must be a non-empty list"):
        plot_importances([])


def interaction(s=6, replicates=None, triples=False):
    names = [f"x{i}" for i in range(s + 1)]
    sets = [(names[i], names[i + 1], names[i + 2]) if triples else (names[i], names[i + 1])
            for i in range(s - 1)]
    values = RNG.uniform(size=(len(sets), 1))
    reps = None if replicates is None else values[..., None] + RNG.normal(
        0, 0.05, (len(sets), 1, replicates))
    return FeatureInteraction("h_pairwise", sets, ("y",), values, None, reps)


def test_interaction_bars_and_heat_map():
    result = interaction(8, replicates=10)
    ax = result.plot(top=4)
    best = np.argsort(-result.values[:, 0])[:4][::-1]
    assert tick_texts(ax.get_yticklabels()) == [" x ".join(result.feature_sets[i]) for i in best]
    np.testing.assert_allclose(bar_widths(ax), result.values[best, 0])
    assert ax.get_title() == "h_pairwise, output y\n(top 4 of 7 pairs)"
    assert "95% interval" in ax.get_xlabel()
    assert_inside(ax.figure)

    ax = result.plot(kind="heatmap")
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    table = result.matrix()
    assert mesh.get_array().size == table.size == 64
    np.testing.assert_array_equal(np.ma.getmaskarray(mesh.get_array()).reshape(8, 8),
                                  table.isna().to_numpy())
    np.testing.assert_allclose(np.ma.filled(mesh.get_array(), np.nan).reshape(8, 8),
                               table.to_numpy())
    assert tick_texts(ax.get_xticklabels()) == list(table.columns)
    assert tick_texts(ax.get_yticklabels()) == list(table.index)
    assert len(ax.texts) == table.notna().to_numpy().sum()  # values written in the cells
    assert len(ax.figure.axes) == 2  # and a colour bar
    assert_inside(ax.figure)
    with pytest.raises(ValueError, match="kind='heatmap' needs pairwise statistics"):
        interaction(5, triples=True).plot(kind="heatmap")
    with pytest.raises(ValueError, match=r"kind must be one of \('bar', 'heatmap'\)"):
        result.plot(kind="matrix")


def test_interaction_plots_of_many_features_show_the_strongest():
    names = [f"f{i}" for i in range(60)]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    values = RNG.uniform(size=(len(pairs), 1))
    result = FeatureInteraction("pd_interaction", pairs, ("y",), values)
    ax = result.plot()
    assert len(ax.patches) == 30
    assert ax.get_title() == "pd_interaction, output y\n(top 30 of 1770 pairs)"
    ax = result.plot(kind="heatmap")
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert mesh.get_array().size == 30 * 30 and not ax.texts  # no numbers past 10 features
    strongest = {name: 0.0 for name in names}
    for (a, b), value in zip(pairs, values[:, 0]):
        strongest[a], strongest[b] = max(strongest[a], value), max(strongest[b], value)
    expected = sorted(sorted(names, key=lambda n: -strongest[n])[:30], key=names.index)
    assert tick_texts(ax.get_yticklabels()) == expected
    assert ax.get_title() == "pd_interaction, output y\n(top 30 of 60 features)"


def pd_result(grid, n=300, kinds=None, deciles=None, ice=True):
    shape = tuple(len(g) for g in grid)
    average = RNG.normal(size=(*shape, 1))
    individual = average + RNG.normal(size=(n, *shape, 1)) if ice else None
    return PartialDependence(tuple(f"f{i}" for i in range(len(grid))), tuple(grid), ("y",),
                             average, individual,
                             feature_kinds=kinds or ("continuous",) * len(grid),
                             deciles=deciles or tuple(None for _ in grid))


def ice_lines(ax):
    return [line for line in ax.lines if line.get_color() == "0.55"]


def test_pd_draws_exactly_max_curves_ice_curves_and_a_rug():
    grid = tuple(np.linspace(0, 1, 7).tolist())
    deciles = tuple(np.linspace(0.1, 0.9, 9).tolist())
    result = pd_result((grid,), n=120, deciles=(deciles,))
    for k in (100, 1, 500):  # 100 of 120 rows drew all 120 before
        ax = result.plot(max_curves=k)
        curves = ice_lines(ax)
        assert len(curves) == min(k, 120)
        drawn = np.array([line.get_ydata() for line in curves])
        rows = result.individual[:, :, 0]
        matches = (drawn[:, None, :] == rows[None]).all(-1)  # each curve is one data row's
        assert (matches.sum(1) >= 1).all() and len({tuple(m.nonzero()[0]) for m in matches}) \
            == len(curves)
        (average,) = [line for line in ax.lines if line.get_color() == "tab:red"]
        np.testing.assert_allclose(average.get_ydata(), result.average[:, 0])
        np.testing.assert_allclose(average.get_xdata(), grid)
    (rug,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    np.testing.assert_allclose([s[0][0] for s in rug.get_segments()], deciles)
    assert ax.get_xlabel() == "f0" and ax.get_ylabel() == "partial dependence (y)"
    assert len(result.plot(ice=False).lines) == 1
    assert not result.plot(rug=False).collections
    assert_inside(ax.figure)
    with pytest.raises(ValueError, match=r"max_curves must be an int >= 0; got -1\."):
        result.plot(max_curves=-1)


def test_categorical_pd_is_points_at_named_levels():
    levels = ("blue", "green", "red")
    result = pd_result((levels,), n=50, kinds=("categorical",))
    ax = result.plot(max_curves=20)
    assert len(ice_lines(ax)) == 20 and len(ax.lines) == 21
    assert all(line.get_linestyle() == "None" and line.get_marker() not in (None, "None")
               for line in ax.lines)
    assert tick_texts(ax.get_xticklabels()) == list(levels)
    np.testing.assert_allclose(ax.get_xticks(), [0, 1, 2])
    assert not ax.collections  # no rug for levels
    assert_inside(ax.figure)


def test_2d_pd_heat_map_has_value_ticks_colour_bar_and_unclipped_labels():
    a = tuple(np.linspace(-0.9, 0.9, 5).tolist())
    b = (0.0521, 1.5, 20.25, 300.0)
    result = pd_result((a, b), ice=False)
    ax = result.plot()
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert mesh.get_array().size == 20
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(4, 5),
                               result.average[..., 0].T)  # first feature along x
    assert tick_texts(ax.get_xticklabels()) == ["-0.9", "-0.45", "0", "0.45", "0.9"]
    assert tick_texts(ax.get_yticklabels()) == ["0.0521", "1.5", "20.2", "300"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("f0", "f1")
    assert ax.get_title() == "PD of f0 and f1"
    (bar,) = [other for other in ax.figure.axes if other is not ax]
    assert bar.get_ylabel() == "partial dependence (y)"
    assert_inside(ax.figure)

    fine = tuple(np.linspace(0, 1, 40).tolist())
    levels = ("low", "mid", "high")
    ax = pd_result((fine, levels), kinds=("continuous", "categorical"), ice=False).plot()
    ticks = ax.get_xticks().astype(int)
    assert 2 <= len(ticks) <= 8
    assert tick_texts(ax.get_xticklabels()) == [compact(fine[i]) for i in ticks]
    assert tick_texts(ax.get_yticklabels()) == list(levels)
    assert_inside(ax.figure)


def test_partial_dependences_panels_and_top_by_default_past_30():
    grid = tuple(np.linspace(0, 1, 4).tolist())
    many = PartialDependences({f"f{i}": PartialDependence(
        (f"f{i}",), (grid,), ("y",), i * np.arange(4.0)[:, None], None) for i in range(35)})
    fig = many.plot()
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 30
    assert [ax.get_xlabel() for ax in visible] == [f"f{i}" for i in range(34, 4, -1)]
    assert fig.get_suptitle() == ("partial dependence: top 30 of 35 features "
                                        "(largest PD spread)")
    fig = PartialDependences(dict(list(many.items())[:4])).plot(ncols=2, top=3)
    assert [ax.get_xlabel() for ax in fig.axes if ax.get_visible()] == ["f3", "f2", "f1"]
    assert [ax.get_ylabel() for ax in fig.axes[:2]] == ["partial dependence (y)", ""]
    assert_inside(fig)


def test_computed_pd_carries_deciles_for_the_rug():
    mstats = pytest.importorskip("scipy.stats.mstats")
    X = pd.DataFrame({"a": RNG.uniform(size=60),
                      "c": pd.Categorical(RNG.choice(["u", "v"], 60))})
    result = partial_dependence(lambda X: X[:, 0] + X[:, 1], X, ["a", "c"], grid_resolution=3)
    np.testing.assert_allclose(result.deciles[0],
                               mstats.mquantiles(X["a"], np.arange(1, 10) / 10))
    assert result.deciles[1] is None
    assert tick_texts(result.plot().get_yticklabels()) == ["u", "v"]


@pytest.fixture(scope="module")
def hstat():
    X = np.random.default_rng(1).uniform(-1, 1, size=(20, 4))
    return h_statistic(lambda X: X[:, 0] * X[:, 1] + X[:, 2], X)


def test_h_statistic_overall_and_pairwise_panels(hstat):
    fig = hstat.plot(top=3)
    assert [ax.get_title() for ax in fig.axes] == ["overall H^2", "pairwise H^2"]
    assert [len(ax.patches) for ax in fig.axes] == [3, 3]
    assert fig.get_suptitle() == (f"output y; total H^2 = {hstat.total[0]:.3g}; "
                                        "overall: top 3 of 4; pairwise: top 3 of 6")
    assert tick_texts(fig.axes[1].get_yticklabels())[-1] == "x0 x x1"
    assert [ax.get_xlabel() for ax in fig.axes] == ["H^2", "H^2"]
    assert_inside(fig)
    fig = hstat.with_options(normalized=False).plot("pairwise")
    assert [ax.get_title() for ax in fig.axes] == ["pairwise H^2, unnormalized"]
    assert len(fig.axes[0].patches) == 6


def test_method_plots_keep_their_labels_inside_the_figure():
    """ALE, partial importance, Shapley summaries, transversal rates and trends draw on
    constrained-layout figures: long feature names and axis labels are not clipped."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    names = ["a_rather_long_feature_name", "another_long_feature_name", "x"]
    X = rng.normal(size=(80, 3)) * [1000.0, 1.0, 1.0]
    y = X[:, 0] / 1000 + X[:, 1] * X[:, 2]

    def f(A):
        return A[:, 0] / 1000 + A[:, 1] * A[:, 2]

    forest = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    axes = [
        jaximp.ale(f, X, 0, feature_names=names).plot(),
        jaximp.partial_importance(f, X, y, 0, feature_names=names).plot(),
        jaximp.shapley_values(f, X[:5], background=X[:20], feature_names=names).plot(),
        jaximp.transversal_rates(forest, feature_names=names).plot(),
        jaximp.trends(None, X, y, methods=["pearson", "linear"], feature_names=names).plot(),
    ]
    for ax in axes:
        figure = ax.figure if hasattr(ax, "figure") else np.ravel(ax)[0].figure
        assert_inside(figure)


def test_ale_curve_is_the_labelled_line_so_a_legend_names_it():
    """Only the ALE curve carries a label (not the rug or the zero line), so ``ax.legend()``
    after overlaying a PD names each curve correctly."""
    X = RNG.uniform(size=(60, 2))

    def f(A):
        return A[:, 0] ** 2 + A[:, 1]

    effect = jaximp.ale(f, X, 0, bins=5)
    ax = effect.plot()
    ax.plot([0, 1], [0, 0.5], label="PD (centred)")
    legend = ax.legend()
    assert [t.get_text() for t in legend.get_texts()] == ["ALE", "PD (centred)"]
    ale_line = [line for line in ax.lines if line.get_label() == "ALE"][0]
    np.testing.assert_allclose(ale_line.get_ydata(), effect.centred[:, 0])


def test_pd_groups_share_one_axes_with_a_legend():
    """partial_dependence(by=...) groups drawn on one Axes: each PD in the next colour of the
    cycle with its group as the legend entry, the heights the group's curve."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 2))
    groups = partial_dependence(lambda A: A[:, 0] * A[:, 1], X, "x0", grid_resolution=5,
                                by=np.where(X[:, 1] > 0, "up", "down"))
    ax = None
    for label, result in groups.items():
        ax = result.plot(ax=ax, ice=False, label=label)
    lines = [line for line in ax.get_lines() if line.get_label() in groups]
    assert [line.get_label() for line in lines] == ["down", "up"]
    assert lines[0].get_color() != lines[1].get_color()
    for line in lines:
        np.testing.assert_allclose(line.get_ydata(), groups[line.get_label()].average[:, 0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["down", "up"]
    plt.close("all")
