"""The result of :func:`jaximp.h_statistic`: the statistics read from their numerators and
denominators, so that options that change only the read-out (normalized, squared, eps) and
hstats' read-outs (h2, h2_overall, pd_importance, ...) need no model evaluation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from jaximp.kernels import _pd_stats as K

from ..data import check_bool, summaries
from ..results import FeatureImportance, FeatureInteraction, HDetails, plot_h

__all__ = ["HStatistic", "RawStatistic", "check_eps", "read_statistic", "select_sets"]


_STATISTICS = ("pairwise", "overall", "three_way", "total", "all")


@dataclasses.dataclass(frozen=True, eq=False)
class HStatistic:
    """Friedman's H-statistics of a model: overall, pairwise, three-way and total.

    Every array keeps an output axis ``o``. Values are ``H^2`` (``squared=True``) or ``H``, and
    normalized (a share of the joint effect's variance) or not (the numerator alone, on the
    prediction's squared scale, so pairs can be compared in absolute terms).

    A result is a value: nothing changes it after it is built. Pairs or triples not computed
    yet, asked for through :meth:`h2_pairwise` or :meth:`h2_threeway`, are evaluated with the
    model the result keeps and returned, and held in a private cache so that asking again
    costs nothing; ``pairwise``, ``repr``, :meth:`to_frame`, :meth:`with_options` and the
    pickle stay as built. A pickle leaves the model out: the copy reads everything it was
    built with, and refuses sets it would have to evaluate.

    Attributes
    ----------
    overall : FeatureImportance or None
        ``H2_j`` of each feature (``method="h_overall"``), shape (p, o): the share of the
        prediction's variance explained by interactions of feature j with any other feature.
    pairwise : FeatureInteraction or None
        ``H2_jk`` of each pair (``method="h_pairwise"``): the share of the joint effect of j and
        k that is not the sum of their main effects.
    three_way : FeatureInteraction or None
        ``H2_jkl`` of each triple (``method="h_three_way"``).
    total : ndarray of shape (o,) or None
        ``H2``: the share of the prediction's variance due to any interaction.
    total_std : ndarray of shape (o,) or None
        Bootstrap standard error of ``total``.
    total_replicates : ndarray of shape (o, r) or None
    output_names : tuple of str
    normalized, squared : bool
        The options the values were computed with.
    n_rows : int
        Rows used (after ``n_max`` subsampling).
    info : HStatisticDetails
        ``rows`` (indices of the rows used), ``bootstrap_counts`` (r, n_rows), ``eps``,
        ``feature_names`` (every feature of X), and the total's ``numerator`` and
        ``denominator``. Each part's own info (``HDetails``) holds its
        numerators and denominators (weighted means over the rows, before normalizing).
    """

    overall: FeatureImportance | None
    pairwise: FeatureInteraction | None
    three_way: FeatureInteraction | None
    total: np.ndarray | None
    total_std: np.ndarray | None
    total_replicates: np.ndarray | None
    output_names: tuple[str, ...]
    normalized: bool
    squared: bool
    n_rows: int
    info: Any = None
    _raw: dict = dataclasses.field(default_factory=dict, repr=False)
    _floor: np.ndarray | None = dataclasses.field(default=None, repr=False)
    _extension: Any = dataclasses.field(default=None, repr=False)

    @classmethod
    def _read_out(cls, raw, floor, output_names, n_rows, info, normalized, squared, eps,
                  extension=None):
        """The result whose parts are read from the numerators and denominators ``raw``
        (kind -> RawStatistic, never changed afterwards); ``extension`` (an
        ``HExtension`` or None) evaluates sets asked for later."""
        def part(kind):
            return None if kind not in raw else read_statistic(
                kind, raw[kind], floor, output_names, normalized, squared, eps)

        total = part("total")
        info = dataclasses.replace(info, eps=eps)
        if total is not None:
            info = dataclasses.replace(info, numerator=raw["total"].numerator[0, :, 0],
                                       denominator=raw["total"].denominator[0, :, 0])
        return cls(
            overall=part("overall"), pairwise=part("pairwise"), three_way=part("three_way"),
            total=None if total is None else total.importances_mean[0],
            total_std=None if total is None or total.importances_std is None
            else total.importances_std[0],
            total_replicates=None if total is None or total.importances is None
            else total.importances[0],
            output_names=output_names, normalized=normalized, squared=squared, n_rows=n_rows,
            info=info, _raw=raw, _floor=floor, _extension=extension,
        )

    def __getstate__(self) -> dict:
        """Pickled as built, without the model: every read-out works on the copy, and the
        sets it was built with are read, but pairs or triples asked for later (evaluated
        before pickling or not) need the original."""
        return {**self.__dict__, "_extension": None}

    def with_options(self, *, normalized: bool | None = None, squared: bool | None = None,
                     eps: float | None = None) -> HStatistic:
        """The same statistics under other options, read from the stored numerators and
        denominators: no model evaluation (hstats' ``normalize``, ``squared``, ``eps``).

        Parameters
        ----------
        normalized, squared : bool, optional
            Default: as computed. See :func:`h_statistic`.
        eps : float, optional
            Default: as computed.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.random.default_rng(0).uniform(-1, 1, size=(30, 3))
        >>> from jaximp import h_statistic
        >>> h = h_statistic(lambda X: X[:, 0] * X[:, 1] + X[:, 2], X)
        >>> raw = h.with_options(normalized=False)  # numerators, on the prediction's scale
        >>> bool(np.allclose(raw.pairwise.values, h.pairwise.info["numerator"]))
        True
        """
        normalized, squared, eps = self._options(normalized, squared, eps)
        return HStatistic._read_out(self._raw, self._floor, self.output_names, self.n_rows,
                                    self.info, normalized, squared, eps, self._extension)

    def h2(self, **options) -> np.ndarray:
        """Total interaction strength ``H^2`` per output, shape (o,) (hstats' ``h2``);
        ``options`` as :meth:`with_options`."""
        self._part("total")
        return self.with_options(**options).total

    def h2_overall(self, **options) -> FeatureImportance:
        """Overall ``H^2_j`` (hstats' ``h2_overall``); ``options`` as :meth:`with_options`."""
        self._part("overall")
        return self.with_options(**options).overall

    def pd_importance(self, **options) -> FeatureImportance:
        """PD-based importance at the rows (hstats' ``pd_importance``), read from the PDs the
        overall statistic evaluated: no model evaluation. For feature j,
        ``sum_i (F(x_i) - F_\\j(x_i))^2 / sum_i F(x_i)^2`` (weighted, centred PDs as for H):
        the share of the prediction's variance that the other features' joint PD leaves
        unexplained, main effect and interactions of j together (``method="h_pd_importance"``).
        ``options`` as :meth:`with_options`.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.random.default_rng(0).uniform(-1, 1, size=(40, 2))
        >>> from jaximp import h_statistic
        >>> h = h_statistic(lambda X: 2 * X[:, 0] + X[:, 1], X)
        >>> share = h.pd_importance().importances_mean[:, 0]  # additive: var(b_j x_j) / var(f)
        >>> bool(np.allclose(share, [4, 1] * X.var(axis=0) / (X @ [2.0, 1.0]).var(), rtol=1e-4))
        True
        """
        if "pd_importance" not in self._raw:
            raise ValueError("this result holds no pd_importance statistics; pass "
                             "overall=True.")
        normalized, squared, eps = self._options(**options)
        return read_statistic("pd_importance", self._raw["pd_importance"], self._floor,
                          self.output_names, normalized, squared, eps)

    def h2_pairwise(self, pairs=None, **options) -> FeatureInteraction:
        """Pairwise ``H^2_jk`` (hstats' ``h2_pairwise``); ``options`` as
        :meth:`with_options`.

        ``pairs`` (a list of feature pairs) gives exactly those pairs, in that order: pairs
        computed before are read, the others are evaluated now (on the same rows and
        weights, reusing the 1-D PDs), with the same values as :func:`h_statistic` called
        with these pairs and the same ``random_state`` and ``n_max``.

        The result itself does not change: its ``pairwise``, ``repr``, ``to_frame``,
        :meth:`with_options` and pickle stay as built, and no value returned before changes.
        Pairs evaluated here are kept in a private cache, so asking for them again costs no
        model evaluation. A result read back from a pickle holds no model: it reads the pairs
        it was built with and refuses others with a ``ValueError``.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.random.default_rng(0).uniform(-1, 1, size=(30, 3))
        >>> from jaximp import h_statistic
        >>> h = h_statistic(lambda X: X[:, 0] * X[:, 1] + X[:, 2], X, pairs=None)
        >>> h.h2_pairwise(pairs=[("x0", "x1"), ("x1", "x2")]).top(1)
        [('x0', 'x1')]
        """
        return self._sets("pairwise", pairs, options)

    def h2_threeway(self, triples=None, **options) -> FeatureInteraction:
        """Three-way ``H^2_jkl`` (hstats' ``h2_threeway``); ``options`` as
        :meth:`with_options`; ``triples`` as ``pairs`` of :meth:`h2_pairwise`."""
        return self._sets("three_way", triples, options)

    def _sets(self, kind: str, listed, options) -> FeatureInteraction:
        if listed is None:
            self._part(kind)
            return getattr(self.with_options(**options), kind)
        built = self._raw.get(kind)
        if self._extension is not None:
            chosen = self._extension.raw(kind, self._extension.names(kind, listed), built)
        else:  # read back from a pickle: no model, only the sets it was built with
            names = tuple(tuple(fs) for fs in listed)
            done = set() if built is None else {frozenset(fs) for fs in built.feature_sets}
            absent = [fs for fs in names if frozenset(fs) not in done]
            if absent:
                raise ValueError(
                    f"this result holds no model to evaluate the {kind} statistics of "
                    f"{absent} (it was read back from a pickle); ask for sets it computed, or "
                    "pass these to h_statistic.")
            chosen = select_sets([built], names)
        normalized, squared, eps = self._options(**options)
        return read_statistic(kind, chosen, self._floor, self.output_names, normalized, squared,
                          eps)

    def _options(self, normalized=None, squared=None, eps=None):
        return (self.normalized if normalized is None
                else check_bool(normalized, "normalized"),
                self.squared if squared is None else check_bool(squared, "squared"),
                self.info["eps"] if eps is None else check_eps(eps))

    def __repr__(self) -> str:
        kinds = [f"{name} ({len(getattr(self, name))} sets)" for name in ("pairwise", "three_way")
                 if getattr(self, name) is not None]
        if self.overall is not None:
            kinds.insert(0, f"overall ({len(self.overall.feature_names)} features)")
        total = "" if self.total is None else "; total " + ", ".join(
            f"{name}={value:.4g}" for name, value in zip(self.output_names, self.total))
        label = ("H^2" if self.squared else "H") + (
            "" if self.normalized else " (unnormalized)")
        return (f"HStatistic({label} on {self.n_rows} rows, outputs {list(self.output_names)}: "
                f"{', '.join(kinds)}{total})")

    def plot(self, statistic: str | None = None, output: int | str | None = None,
             top: int | None = None):
        """Bars of the strongest statistics: one panel each for overall, pairwise and
        three-way (as computed), or only ``statistic``; returns the Figure.

        Each panel shows its ``top`` strongest features or sets (default all up to 30, the
        strongest 30 past that), with bootstrap interval whiskers when computed; the title
        names the output, the total ``H^2`` and any truncation. For a feature x feature heat
        map use ``result.pairwise.plot(kind="heatmap")``.
        """
        return plot_h(self, statistic=statistic, output=output, top=top)

    def _part(self, statistic: str):
        if statistic not in _STATISTICS[:-1]:
            raise ValueError(f"statistic must be one of {_STATISTICS}; got {statistic!r}.")
        part = getattr(self, statistic)
        if part is None:
            hint = {
                "pairwise": "pass pairs='all', an int m or a list of pairs (an int m pairs "
                            "only features with a positive overall statistic, which fewer "
                            "than 2 may have)",
                "three_way": "pass three_way=m (int >= 3) or a list of triples (an int m "
                             "combines only features with a positive overall statistic, which "
                             "fewer than 3 may have)",
                "overall": "pass overall=True",
                "total": "pass overall=True",
            }[statistic]
            raise ValueError(f"this result holds no {statistic} statistics; {hint}.")
        return part

    def to_frame(self, statistic: str = "pairwise", sort: bool = True) -> pd.DataFrame:
        """Tidy table of one statistic, strongest first.

        Parameters
        ----------
        statistic : {"pairwise", "overall", "three_way", "total", "all"}, default "pairwise"
            ``"all"`` stacks every statistic computed, with columns ``statistic``,
            ``features`` (names joined by ``":"``), ``output``, ``interaction`` and, with
            bootstrap, ``std``, ``q025``, ``q975``.
        sort : bool, default True
        """
        if statistic == "all":
            frames = []
            for name in ("overall", "pairwise", "three_way", "total"):
                if getattr(self, name) is None:
                    continue
                frame = self.to_frame(name, sort)
                cols = [c for c in frame.columns if c.startswith("feature")]
                joined = frame[cols].astype(str).agg(":".join, axis=1) if cols else ""
                frame = frame.drop(columns=cols)
                frame.insert(0, "features", joined)
                frame.insert(0, "statistic", name)
                frames.append(frame)
            return pd.concat(frames, ignore_index=True)
        part = self._part(statistic)
        if statistic == "overall":
            return part.to_frame(sort).rename(columns={"importance": "interaction"})
        if statistic == "total":
            frame = pd.DataFrame({"output": list(self.output_names), "interaction": part})
            if self.total_std is not None:
                frame["std"] = self.total_std
                frame["q025"], frame["q975"] = np.quantile(
                    self.total_replicates, [0.025, 0.975], axis=-1
                )
            return frame
        return part.to_frame(sort)

    def top(self, k: int, statistic: str = "pairwise", output: int | str | None = None) -> list:
        """The ``k`` strongest features (``"overall"``) or feature sets for one output."""
        if statistic not in ("pairwise", "overall", "three_way"):
            raise ValueError(
                f"statistic must be 'pairwise', 'overall' or 'three_way'; got {statistic!r}."
            )
        return self._part(statistic).top(k, output)


# ---------------------------------------------------------------------------------------------
# Kernels batched over statistics, outputs and replicates.
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RawStatistic:
    """Numerators and denominators (s, o, 1 + r) of one kind of statistic: the full-sample
    value, then one per bootstrap replicate."""

    feature_sets: tuple
    numerator: np.ndarray
    denominator: np.ndarray


def select_sets(sources, names) -> RawStatistic:
    """The numerators and denominators of the sets ``names`` (their features in any order),
    each from the first of ``sources`` (RawStatistic) that holds it.

    Examples
    --------
    >>> raw = RawStatistic((("a", "b"),), np.ones((1, 1, 1)), np.full((1, 1, 1), 2.0))
    >>> select_sets([raw], [("b", "a")]).feature_sets
    (('b', 'a'),)
    """
    located = {}
    for raw in reversed(sources):
        located.update({frozenset(fs): (raw, i) for i, fs in enumerate(raw.feature_sets)})
    picked = [located[frozenset(fs)] for fs in names]
    return RawStatistic(tuple(names), np.stack([raw.numerator[i] for raw, i in picked]),
                        np.stack([raw.denominator[i] for raw, i in picked]))


def read_statistic(kind: str, raw: RawStatistic, floor, output_names, normalized, squared, eps):
    """One kind of statistic as a result object, read from its numerators and denominators.

    A denominator (the joint PD's mean square) at most ``floor`` (o, r) is a PD constant up
    to rounding; over it a numerator within the floor is rounding too and the statistic 0, a
    larger one (a joint PD flat on the rows whose parts are not) infinite when normalized, as
    in hstats. Otherwise a statistic is 0 where its numerator is at most ``eps`` times its
    denominator."""
    num, den = raw.numerator, raw.denominator  # (s, o, 1 + r)
    flat = den <= floor[None]
    num_read = np.where(flat & (num <= floor[None]), 0.0, num)
    value = K.h_value(num_read, np.where(flat, 0.0, den), normalized, squared, eps, np)
    if normalized:
        value = np.where(flat & (num_read > 0), np.inf, value)
    point, std, replicates = summaries(value)
    info = HDetails(numerator=num[..., 0], denominator=den[..., 0], normalized=normalized,
                    squared=squared)
    if kind in ("overall", "total", "pd_importance"):
        return FeatureImportance(
            method=f"h_{kind}", feature_names=tuple(fs[0] for fs in raw.feature_sets),
            output_names=output_names, importances_mean=point, importances_std=std,
            importances=replicates, info=info)
    return FeatureInteraction(
        method=f"h_{kind}", feature_sets=raw.feature_sets, output_names=output_names,
        values=point, values_std=std, replicates=replicates, info=info)


def check_eps(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating)) or not (
        0 <= eps < 1
    ):
        raise ValueError(f"eps must be a number in [0, 1) (default 1e-10); got {eps!r}.")
    return float(eps)
