"""Reports: one folder holding a self-contained HTML page, the same content in Markdown, the
figures as PNG files and the raw results as CSV and JSON, written atomically."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import html
import io
import json
import math
import os
import pathlib
import platform
import shutil
import tempfile
import uuid
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ._version import __version__
from .data import Int, PositiveClass, output_index, validate_params
from .methods import HStatistic

__all__ = ["ReportSection", "check_out", "write_report"]

_REPORT_SUFFIXES = (".html", ".md", ".png", ".csv", ".json")
_TITLES = {
    "pd_importance": "PD importance (flatness of each partial dependence; Greenwell et al. 2018)",
    "pd_interaction": "PD interaction statistic (Greenwell et al. 2018)",
    "h_statistic": "Friedman's H-statistic (Friedman & Popescu 2008)",
    "permutation": "Permutation importance (increase in loss when a feature is shuffled)",
    "loco": "LOCO (increase in loss when the model is refitted without a feature)",
    "sensitivity": "Sensitivity-analysis importance D_p / D_y (Huh & Lee 2003)",
    "garson": "Garson's weight-based importance",
    "olden": "Olden's connection-weight importance (signed)",
}
_CSS = """body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;
color:#222}table{border-collapse:collapse;margin:.5rem 0 1rem}th,td{border:1px solid #ccc;
padding:.2rem .5rem;text-align:left}th{background:#f3f3f3}td.num{text-align:right;
font-variant-numeric:tabular-nums}img{max-width:100%}figure{margin:1rem 0}figcaption,.note{color:#555;
font-size:.9rem}code{background:#f3f3f3;padding:0 .2rem}"""


@dataclasses.dataclass
class ReportSection:
    """An extra section of a report: a heading, text, tables and figures, in that order.

    Attributes
    ----------
    title : str
    text : str
        Paragraphs separated by blank lines; lines starting with ``"- "`` are list items.
    tables : sequence of (caption, DataFrame)
    figures : sequence of (file name, matplotlib Figure)
        Each is saved as a PNG under that name (closed afterwards).
    """

    title: str
    text: str = ""
    tables: Sequence[tuple[str, pd.DataFrame]] = ()
    figures: Sequence[tuple[str, Any]] = ()


def _save_figure(fig, path: pathlib.Path, dpi: int) -> bytes:
    """Save ``fig`` as a PNG file and return its bytes (labels kept inside the image)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    data = buffer.getvalue()
    path.write_bytes(data)
    return data


def _cell(value) -> str:
    if isinstance(value, (float, np.floating)):
        return "" if math.isnan(value) else f"{value:.4g}"
    return str(value)


class _Document:
    """Blocks of a report rendered twice: as Markdown and as HTML."""

    def __init__(self, folder: pathlib.Path, dpi: int):
        self.folder, self.dpi = folder, dpi
        self.blocks: list[tuple] = []

    def heading(self, level: int, text: str) -> None:
        self.blocks.append(("heading", level, text))

    def text(self, text: str) -> None:
        if text:
            self.blocks.append(("text", text))

    def table(self, frame: pd.DataFrame, caption: str = "", max_rows: int = 50,
              index: bool = False) -> None:
        if index:
            frame = frame.reset_index(names="")
        note = ""
        if len(frame) > max_rows:
            note = f"First {max_rows} of {len(frame)} rows; every row is in the CSV files."
            frame = frame.head(max_rows)
        rows = [[_cell(v) for v in row] for row in frame.itertuples(index=False)]
        self.blocks.append(("table", caption, [str(c) for c in frame.columns], rows, note))

    def settings(self, pairs: dict, caption: str = "") -> None:
        self.table(pd.DataFrame({"setting": list(pairs), "value": [str(v) for v in
                                                                   pairs.values()]}), caption)

    def figure(self, fig, name: str, caption: str = "") -> None:
        import matplotlib.pyplot as plt

        try:
            data = _save_figure(fig, self.folder / name, self.dpi)
        finally:
            plt.close(fig)
        self.blocks.append(("figure", name, caption, data))

    def markdown(self) -> str:
        out = []
        for block in self.blocks:
            kind = block[0]
            if kind == "heading":
                out.append("#" * block[1] + " " + block[2])
            elif kind == "text":
                out.append(block[1])
            elif kind == "table":
                _, caption, columns, rows, note = block
                lines = ([f"*{caption}*", ""] if caption else [])
                lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
                lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                          for row in rows]
                out.append("\n".join(lines + ([f"\n{note}"] if note else [])))
            else:
                _, name, caption, _ = block
                out.append(f"![{caption or name}]({name})")
            out.append("")
        return "\n".join(out)

    def html(self, title: str) -> str:
        esc = html.escape
        toc = [f'<li><a href="#{_anchor(b[2])}">{esc(b[2])}</a></li>' for b in self.blocks
               if b[0] == "heading" and b[1] == 2]
        body = []
        for block in self.blocks:
            kind = block[0]
            if kind == "heading":
                level, text = block[1], block[2]
                ident = f' id="{_anchor(text)}"' if level == 2 else ""
                body.append(f"<h{level}{ident}>{esc(text)}</h{level}>")
                if level == 1 and toc:
                    body.append('<nav><ul>' + "".join(toc) + '</ul></nav>')
            elif kind == "text":
                body.append(_paragraphs_html(block[1]))
            elif kind == "table":
                _, caption, columns, rows, note = block
                head = "".join(f"<th>{esc(c)}</th>" for c in columns)
                cells = "".join("<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in rows)
                cap = f"<caption>{esc(caption)}</caption>" if caption else ""
                body.append(f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{cells}"
                            "</tbody></table>")
                if note:
                    body.append(f'<p class="note">{esc(note)}</p>')
            else:
                _, name, caption, data = block
                encoded = base64.b64encode(data).decode("ascii")
                body.append(f'<figure><img src="data:image/png;base64,{encoded}" '
                            f'alt="{esc(caption or name)}"><figcaption>{esc(caption or name)}'
                            "</figcaption></figure>")
        return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                f"<title>{esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
                + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def _td(text: str) -> str:
    """A table cell; numbers are right-aligned."""
    try:
        float(text)
    except ValueError:
        return f"<td>{html.escape(text)}</td>"
    return f'<td class="num">{html.escape(text)}</td>'


def _anchor(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def _paragraphs_html(text: str) -> str:
    parts = []
    for paragraph in text.strip().split("\n\n"):
        lines = paragraph.splitlines()
        if lines and all(line.startswith("- ") for line in lines):
            parts.append("<ul>" + "".join(f"<li>{_inline(line[2:])}</li>" for line in lines)
                         + "</ul>")
        else:
            parts.append(f"<p>{_inline(' '.join(lines))}</p>")
    return "\n".join(parts)


def _inline(text: str) -> str:
    """Escape text and turn Markdown's `code` spans into <code>."""
    pieces = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(pieces))


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):  # JSON has no NaN or infinity
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    return str(value)


def check_out(out) -> None:
    """Raise FileExistsError unless ``out`` is free or holds a report that may be replaced:
    call it before long work whose report goes there."""
    out = pathlib.Path(out)
    if out.exists():
        _check_replaceable(out)


def _check_replaceable(out: pathlib.Path) -> None:
    """Only a previous report (files a report writes, no sub-folders) may be replaced."""
    if not out.is_dir():
        raise FileExistsError(f"out must be a folder for the report; {str(out)!r} is a file. "
                              "Choose another path.")
    foreign = [p.name for p in out.iterdir() if not p.is_file()
               or p.suffix.lower() not in _REPORT_SUFFIXES]
    if foreign:
        raise FileExistsError(
            f"out {str(out)!r} exists and does not look like a jaximp report (it holds "
            f"{sorted(foreign)[:3]}); choose a new folder or remove it first.")


@contextlib.contextmanager
def _atomic_folder(out: pathlib.Path):
    """Yield a temporary folder beside ``out``; on success it replaces ``out`` by renames,
    on any error it is removed and ``out`` is left as it was."""
    parent = out.parent
    parent.mkdir(parents=True, exist_ok=True)
    check_out(out)
    temporary = pathlib.Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        temporary.chmod(0o777 & ~umask)
        yield temporary
        old = parent / f".{out.name}.old-{uuid.uuid4().hex[:12]}"
        if out.exists():
            os.rename(out, old)
        try:
            os.rename(temporary, out)
        except BaseException:
            if old.exists():
                os.rename(old, out)
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _versions() -> dict:
    import jax

    devices = jax.devices()
    return {"jaximp": __version__, "JAX": jax.__version__,
            "Python": platform.python_version(),
            "devices": f"{len(devices)} x {devices[0].platform}"}


@validate_params(dpi=Int(1))
def write_report(
    explanation,
    out,
    *,
    title: str = "jaximp report",
    command: str | None = None,
    description: str = "",
    data_description: str = "",
    model_description: str = "",
    sections: Sequence[ReportSection] = (),
    dpi: int = 80,
) -> pathlib.Path:
    """Write a report of an :class:`Explanation` into the folder ``out``, atomically.

    The folder holds ``report.html`` (self-contained: images embedded as base64 PNG),
    ``report.md`` (the same content, images as the PNG files beside it), ``results.csv`` (the
    tidy table of every result), ``importances.csv``, ``agreement.csv``,
    ``partial_dependence.csv``, ``data_summary.csv`` and ``results.json`` (the run's metadata
    and every number). Everything is written into a temporary folder in the same directory,
    which then replaces ``out`` by a rename: the report appears complete or not at all, and
    an error while writing leaves a previous report untouched. An existing ``out`` is
    replaced only if it looks like a report (files of the kinds above, no sub-folders).
    Under ``jax.distributed`` only process 0 writes.

    Parameters
    ----------
    explanation : Explanation
        From :func:`jaximp.explain`.
    out : str or path
        The report folder.
    title : str
    command : str, optional
        The command line (or call) that produced the report, recorded in it.
    description, data_description, model_description : str
        Paragraphs for the introduction, the data and the model sections.
    sections : sequence of ReportSection
        Extra sections, placed after the methods' sections.
    dpi : int, default 80
        Resolution of the figures.

    Returns
    -------
    pathlib.Path
        The report folder.
    """
    from .engine import is_main_process

    out = pathlib.Path(out)
    if not is_main_process():
        return out
    started = datetime.datetime.now(datetime.timezone.utc)
    run = {**_versions(), "date": started.strftime("%Y-%m-%d %H:%M:%S UTC"),
           "command": command or "(Python call)",
           "seed": explanation.settings.get("random_state"),
           "time spent explaining": f"{sum(explanation.timings.values()):.1f} s"}
    frame = explanation.to_frame()
    with _atomic_folder(out) as folder:
        doc = _Document(folder, dpi)
        doc.heading(1, title)
        doc.text(description)
        doc.heading(2, "Run")
        doc.settings(run)
        doc.heading(2, "Settings")
        doc.settings(explanation.settings)
        doc.heading(2, "Data")
        doc.text(data_description or f"{explanation.n_rows} rows; "
                 f"{len(explanation.feature_names)} features scored.")
        doc.table(explanation.data_summary, "Features", max_rows=500)
        doc.heading(2, "Model")
        doc.text(model_description)
        doc.settings(explanation.model_summary)
        _method_sections(doc, explanation)
        for section in sections:
            doc.heading(2, section.title)
            doc.text(section.text)
            for caption, table in section.tables:
                doc.table(table, caption, max_rows=500)
            for name, fig in section.figures:
                doc.figure(fig, name, section.title)
        doc.heading(2, "Timings")
        doc.table(pd.DataFrame({"step": list(explanation.timings),
                                "seconds": list(explanation.timings.values())}))
        files = _raw_results(folder, explanation, frame, run)
        doc.heading(2, "Files")
        doc.text("\n".join(f"- `{name}`" for name in ["report.html", "report.md", *files]))
        (folder / "report.md").write_text(doc.markdown(), encoding="utf-8")
        (folder / "report.html").write_text(doc.html(title), encoding="utf-8")
    return out


def _shown_output(output_names) -> str:
    """The output the report's single-output figures and tables show, in words: the
    positive class of a binary classifier, else the first output."""
    if not output_names:
        return "first output"
    name = output_names[output_index(output_names, None)]
    if isinstance(name, PositiveClass):
        return f"output {name}, the positive class; pass output=0 for class 0"
    return "first output"


def _pairwise_h_table(result: HStatistic) -> pd.DataFrame:
    """Normalized pairwise H^2 with the unnormalized H beside it: the square root of the
    numerator, on the prediction's scale, read from the same evaluations."""
    frame = result.to_frame("pairwise")
    raw = result.with_options(normalized=False, squared=False).to_frame("pairwise")
    raw = raw[["feature_1", "feature_2", "output", "interaction"]].rename(
        columns={"interaction": "unnormalized H"})
    normalized = ("H^2" if result.squared else "H") + " (normalized)"
    frame = frame.rename(columns={"interaction": normalized})
    merged = frame.merge(raw, on=["feature_1", "feature_2", "output"], how="left",
                         sort=False)
    columns = ["feature_1", "feature_2", "output", normalized, "unnormalized H"]
    return merged[columns + [c for c in merged.columns if c not in columns]]


def _method_sections(doc: _Document, explanation) -> None:
    importance = explanation.importance_methods
    shown = _shown_output(explanation.output_names)
    if importance:
        doc.heading(2, "Importance by every method")
        doc.figure(_figure_of(explanation.plot()), "importance.png",
                   f"Importance of each feature by each method ({shown})")
        doc.table(explanation.importances(), f"Importances ({shown}; Olden as magnitude)",
                  max_rows=500, index=True)
        doc.heading(3, "Agreement between methods")
        doc.text("Kendall's tau-b between the importance rankings of each pair of methods: 1 "
                 "is the same order, 0 unrelated orders, -1 the reverse.")
        doc.table(explanation.agreement(), "Kendall's tau-b", index=True)
    if explanation.partial_dependence is not None:
        doc.heading(2, "Partial dependence")
        doc.figure(_figure_of(explanation.partial_dependence.plot()), "partial_dependence.png",
                   f"Partial dependence of the model on each feature ({shown})")
    for method, result in explanation.items():
        doc.heading(2, _TITLES.get(method, method))
        if isinstance(result, HStatistic):
            pairs_shown = result.pairwise is not None and result.normalized
            if pairs_shown:
                doc.text("Normalized pairwise H^2 is the share of a pair's joint effect that is "
                         "interaction. For a pair of weak features (noise, say) it is a ratio "
                         "of two small numbers and can rank high although the interaction "
                         "barely moves the predictions; the unnormalized H beside it (the "
                         "square root of the numerator, on the prediction's scale) says how "
                         "much it does. Rank pairs by both.")
            for statistic in ("overall", "pairwise", "three_way", "total"):
                if getattr(result, statistic) is None:
                    continue
                if statistic == "pairwise" and pairs_shown:
                    doc.table(_pairwise_h_table(result),
                              "H^2, pairwise, with the unnormalized H (read from the same "
                              "evaluations)")
                else:
                    doc.table(result.to_frame(statistic), f"H^2, {statistic}")
            doc.figure(_figure_of(result.plot()), f"{method}.png", _TITLES[method])
        else:
            doc.table(result.to_frame(), method)
            doc.figure(_figure_of(result.plot()), f"{method}.png", _TITLES.get(method, method))


def _figure_of(drawn):
    """The Figure of what a ``plot`` method returned (a Figure or an Axes)."""
    return drawn if hasattr(drawn, "savefig") else drawn.figure


def _raw_results(folder: pathlib.Path, explanation, frame: pd.DataFrame, run: dict) -> list:
    """Write the CSV and JSON files; return their names."""
    written = {"results.csv": frame}
    if explanation.importance_methods:
        written["importances.csv"] = explanation.importances().reset_index(names="feature")
        written["agreement.csv"] = explanation.agreement().reset_index(names="method")
    if explanation.partial_dependence is not None:
        written["partial_dependence.csv"] = explanation.partial_dependence.to_frame()
    written["data_summary.csv"] = explanation.data_summary
    for name, table in written.items():
        table.to_csv(folder / name, index=False)
    document = {
        "run": run, "settings": explanation.settings, "model": explanation.model_summary,
        "timings": explanation.timings,
        "results": frame.to_dict(orient="records"),
        "agreement": explanation.agreement().to_dict() if explanation.importance_methods
        else {},
    }
    (folder / "results.json").write_text(
        json.dumps(_jsonable(document), indent=1, allow_nan=False), encoding="utf-8")
    return [*written, "results.json", *sorted(p.name for p in folder.glob("*.png"))]
