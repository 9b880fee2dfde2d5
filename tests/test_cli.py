"""The jaximp command and the report: same numbers as the Python API, clear errors, a complete
report or none."""

import base64
import html.parser
import json
import os
import pathlib
import pickle
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import jaximp
from jaximp import _report
from jaximp._cli import _is_factory, _load_data, _load_model, _parser, main
from jaximp._explain import explain
from conftest import python_command

MODEL_SOURCE = """
import jax.numpy as jnp

WEIGHTS = jnp.array([1.5, -0.5, 0.0])


def model(X):
    return X @ WEIGHTS + X[:, 0] * X[:, 1]


def build():
    return model


def broken(X):
    return X @ jnp.ones(7)
"""
METHODS = ["pd_importance", "pd_interaction", "h_statistic", "permutation"]


def make_data(n=30):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.uniform(-1, 1, size=(n, 3)), columns=["u", "v", "w"])
    frame.insert(1, "target", 1.5 * frame["u"] - 0.5 * frame["v"] + frame["u"] * frame["v"]
                 + 0.1 * rng.normal(size=n))
    return frame


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    (folder / "usermodel.py").write_text(MODEL_SOURCE)
    make_data().to_csv(folder / "data.csv", index=False)
    return folder


@pytest.fixture(scope="module")
def cli_report(workspace):
    out = workspace / "report"
    code = main(["explain", "--model", str(workspace / "usermodel.py") + ":model",
                 "--data", str(workspace / "data.csv"), "--target", "target",
                 "--out", str(out), "--methods", *METHODS, "--seed", "3"])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def api_explanation(workspace):
    """The same explanation through the Python API."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("usermodel_api", workspace / "usermodel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    frame = pd.read_csv(workspace / "data.csv")
    return explain(module.model, frame.drop(columns=["target"]), frame["target"].to_numpy(),
                   methods=METHODS, random_state=3, progress=False)


def test_cli_reproduces_the_python_api_exactly(cli_report, api_explanation):
    written = pd.read_csv(cli_report / "results.csv")
    written["feature"] = written["feature"].fillna("")  # the total H names no feature
    expected = api_explanation.to_frame()
    assert written["value"].notna().all()
    # the same numbers up to the last bits, which a GPU's reduction order may change
    pd.testing.assert_frame_equal(written, expected, check_exact=False, rtol=1e-9,
                                  check_dtype=False)
    document = json.loads((cli_report / "results.json").read_text())
    values = [record["value"] for record in document["results"]]
    assert values == expected["value"].tolist()
    assert document["run"]["command"].startswith("jaximp explain --model ")
    assert document["run"]["seed"] == 3 and document["run"]["jaximp"] == jaximp.__version__


def test_loads_only_the_named_object_or_calls_a_named_factory(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    monkeypatch.delitem(sys.modules, "usermodel", raising=False)
    from_factory = _load_model("usermodel:build")  # a function of no arguments: called
    direct = _load_model("usermodel.py:model")  # a function of X: the model itself
    assert from_factory.__name__ == direct.__name__ == "model"
    X = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(from_factory(X)), np.asarray(direct(X)))
    assert not _is_factory(direct) and _is_factory(type("Model", (), {}))


def test_a_txt_file_is_read_with_its_own_separator(tmp_path):
    """A .txt file may separate its columns by tabs, semicolons or commas (names with spaces
    and unicode included); each gives the same frame as the CSV."""
    frame = pd.DataFrame({"size m2": [1.5, 2.0, 3.25], "höhe": [1, 2, 3], "y": [0.1, 0.2, 0.3]})
    for sep in ("\t", ";", ","):
        path = tmp_path / "data.txt"
        frame.to_csv(path, sep=sep, index=False)
        pd.testing.assert_frame_equal(_load_data(str(path)), frame)


class _Page(html.parser.HTMLParser):
    """Headings, image sources and table count of an HTML page."""

    def __init__(self):
        super().__init__()
        self.headings, self.images, self.tables, self.rows = [], [], 0, []
        self._text = None

    def handle_starttag(self, tag, attrs):
        if tag in ("h1", "h2", "h3", "td"):
            self._text = ""
        elif tag == "img":
            self.images.append(dict(attrs)["src"])
        elif tag == "table":
            self.tables += 1
        elif tag == "tr":
            self.rows.append([])

    def handle_data(self, data):
        if self._text is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag in ("h1", "h2", "h3", "td") and self._text is not None:
            (self.rows[-1] if tag == "td" else self.headings).append(self._text)
            self._text = None


EXPECTED_SECTIONS = ["Run", "Settings", "Data", "Model", "Importance by every method",
                     "Partial dependence", "Timings", "Files"]


def check_page(page: _Page, folder: pathlib.Path) -> None:
    for section in EXPECTED_SECTIONS:
        assert section in page.headings, section
    assert any(h.startswith("Friedman's H-statistic") for h in page.headings)
    assert any(h.startswith("Permutation importance") for h in page.headings)
    pngs = sorted(folder.glob("*.png"))
    assert len(page.images) == len(pngs) >= 6
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"


def test_html_report_is_self_contained_with_every_section(cli_report):
    text = (cli_report / "report.html").read_text()
    page = _Page()
    page.feed(text)
    check_page(page, cli_report)
    assert page.tables >= 10
    import jax

    run = {row[0]: row[1] for row in page.rows if len(row) == 2}
    assert run["jaximp"] == jaximp.__version__ and run["JAX"] == jax.__version__
    assert run["seed"] == "3" and run["date"].endswith(" UTC")
    assert run["command"].startswith("jaximp explain --model ")
    assert run["random_state"] == "3" and run["methods"] == ", ".join(METHODS)
    markdown = (cli_report / "report.md").read_text()
    for section in EXPECTED_SECTIONS:
        assert f"## {section}\n" in markdown
    # the normalized pairwise H is explained and shown beside the unnormalized H
    assert "can rank high although the interaction barely moves" in markdown
    assert "| H^2 (normalized) | unnormalized H |" in markdown
    for name in (p.name for p in cli_report.glob("*.png")):
        assert f"]({name})" in markdown
    for name in ("results.csv", "results.json", "agreement.csv", "importances.csv",
                 "partial_dependence.csv", "data_summary.csv"):
        assert (cli_report / name).is_file() and f"`{name}`" in markdown


@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="chromium not installed")
def test_html_report_renders_in_headless_chromium(cli_report, tmp_path):
    dom = subprocess.run(
        ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
         f"--user-data-dir={tmp_path}", "--dump-dom", (cli_report / "report.html").as_uri()],
        capture_output=True, text=True, timeout=120, check=True).stdout
    page = _Page()
    page.feed(dom)
    check_page(page, cli_report)


def test_interrupted_writing_leaves_the_old_report(cli_report, api_explanation, monkeypatch,
                                                   tmp_path):
    out = tmp_path / "jaximp-report"
    shutil.copytree(cli_report, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    calls = []

    def failing(fig, path, dpi):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt("stopped while writing")
        return b"\x89PNG\r\n\x1a\n"

    monkeypatch.setattr(_report, "_save_figure", failing)
    with pytest.raises(KeyboardInterrupt):
        _report.write_report(api_explanation, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jaximp-report"]  # no leftovers
    fresh = tmp_path / "never-written"
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        _report.write_report(api_explanation, fresh)
    assert not fresh.exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "jaximp-report"]


def test_a_report_replaces_an_old_one_but_not_other_folders(api_explanation, tmp_path,
                                                             monkeypatch):
    monkeypatch.setattr(_report, "_save_figure",
                        lambda fig, path, dpi: path.write_bytes(b"png") and b"png")
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").write_text("old")
    _report.write_report(api_explanation, out, title="new")
    assert (out / "report.md").read_text().startswith("# new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    (tmp_path / "project" / "src").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="does not look like a jaximp report"):
        _report.write_report(api_explanation, tmp_path / "project")
    assert (tmp_path / "project" / "src").is_dir()


def run_cli(capsys, *args):
    code = main(list(args))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("change, message", [
    ({"--data": "missing.csv"}, "--data: file 'missing.csv' not found."),
    ({"--data": "usermodel.py"},
     "--data must be a .csv (or .txt) or .parquet file; got 'usermodel.py'."),
    ({"--target": "price"}, "--target: column 'price' is not in 'data.csv'; its columns are "
                            "['u', 'target', 'v', 'w']."),
    ({"--model": "nofile.py:model"}, "--model: file 'nofile.py' not found."),
    ({"--model": "usermodel.py:missing"}, "--model: 'usermodel.py' has no 'missing'."),
    ({"--model": "no_such_module_xyz:model"},
     "--model: cannot import module 'no_such_module_xyz'"),
    ({"--model": "usermodel.py"}, "--model must be FILE.py:NAME or MODULE:NAME"),
    ({"--model": "usermodel.py:broken"},
     "--model: the model from usermodel.py:broken cannot be called on the data's first rows "
     "(3 feature columns)"),
    ({"--features": "price"}, "--features: column 'price' is not a feature column of "
                              "'data.csv'"),
])
def test_errors_are_one_line_with_a_nonzero_status(workspace, monkeypatch, capsys, change,
                                                   message):
    monkeypatch.chdir(workspace)
    options = {"--model": "usermodel.py:model", "--data": "data.csv", "--target": "target",
               "--out": "never", "--methods": "pd_importance", **change}
    argv = ["explain"] + [item for pair in options.items() for item in pair]
    code, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.startswith("jaximp: error: ") and message in err
    assert "Traceback" not in err and not (workspace / "never").exists()


def test_bad_data_and_a_foreign_out_folder(workspace, monkeypatch, capsys):
    monkeypatch.chdir(workspace)
    frame = make_data(6)
    frame.loc[2, "v"] = np.nan
    frame.to_csv("holes.csv", index=False)
    base = ["explain", "--model", "usermodel.py:model", "--target", "target"]
    code, err = run_cli(capsys, *base, "--data", "holes.csv", "--out", "never")
    assert code == 2 and err.startswith(
        "jaximp: error: --data: 'holes.csv' has missing values (NaN) in 1 rows, and the model "
        "from usermodel.py:model runs in JAX, which cannot take them: impute or drop them")
    assert not pathlib.Path("never").exists()
    pathlib.Path("taken").mkdir()
    pathlib.Path("taken", "notes.txt").write_text("mine")
    code, err = run_cli(capsys, *base, "--data", "data.csv", "--out", "taken")
    assert code == 2 and "'taken' exists and does not look like a jaximp report" in err
    assert pathlib.Path("taken", "notes.txt").read_text() == "mine"
    pathlib.Path("a_file").write_text("not a folder")  # --out inside a file: cannot be made
    code, err = run_cli(capsys, *base, "--data", "data.csv", "--methods", "pd_importance",
                        "--out", "a_file/report")
    assert code == 2 and "jaximp: error: cannot write " in err and "a_file" in err
    assert "Traceback" not in err


def test_missing_values_reach_a_model_that_handles_them(workspace, monkeypatch, capsys):
    """A CSV with NaN is explained by a scikit-learn model that handles missing values, as the
    Python API explains it: the same permutation importances."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    monkeypatch.chdir(workspace)
    frame = make_data(80)
    frame.loc[::7, "v"] = np.nan
    frame.to_csv("gaps.csv", index=False)
    X, y = frame.drop(columns=["target"]), frame["target"].to_numpy()
    model = HistGradientBoostingRegressor(max_iter=20, random_state=0).fit(X, y)
    pathlib.Path("hgb.py").write_text(
        "import pickle\nwith open('hgb.pkl', 'rb') as f:\n    model = pickle.load(f)\n")
    pathlib.Path("hgb.pkl").write_bytes(pickle.dumps(model))
    code, err = run_cli(capsys, "explain", "--model", "hgb.py:model", "--data", "gaps.csv",
                        "--target", "target", "--out", "gaps_report", "--methods",
                        "permutation", "--seed", "1")
    assert code == 0, err
    written = pd.read_csv(pathlib.Path("gaps_report", "results.csv"))
    expected = explain(model, X, y, methods=["permutation"], random_state=1,
                       progress=False).to_frame()
    assert written["value"].notna().all() and len(written) == 3
    pd.testing.assert_frame_equal(written, expected, check_exact=False, rtol=1e-9,
                                  check_dtype=False)


def test_model_module_that_fails_to_import(workspace, monkeypatch, capsys):
    monkeypatch.chdir(workspace)
    pathlib.Path("crashing.py").write_text("raise RuntimeError('no GPU here')\n")
    code, err = run_cli(capsys, "explain", "--model", "crashing.py:model", "--data",
                        "data.csv", "--target", "target", "--out", "never")
    assert code == 2 and err == ("jaximp: error: --model: running 'crashing.py' failed: "
                                 "RuntimeError: no GPU here\n")


def test_help_is_plain_words():
    parser = _parser()
    texts = [parser.format_help()] + [
        action.choices[name].format_help() for action in parser._subparsers._group_actions
        for name in ("demo", "explain")]
    for text in texts:
        assert "``" not in text and ":func:" not in text
    assert "--model FILE.py:NAME|MODULE:NAME" in texts[2]


def test_version_from_python_m():
    out = subprocess.run([*python_command(), "-m", "jaximp", "--version"], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    import jax

    assert out == f"jaximp {jaximp.__version__} (JAX {jax.__version__})\n"


CLASSIFIER_SOURCE = """
import pandas as pd
from sklearn.linear_model import LogisticRegression

frame = pd.read_csv("labels.csv")
model = LogisticRegression().fit(frame.drop(columns=["label"]), frame["label"])
"""


def test_a_classifier_with_text_labels(workspace, monkeypatch, capsys):
    """Class labels as text are scored as a classifier's (accuracy by default); --loss,
    --output and --quiet reach explain, and the report equals the Python API's."""
    monkeypatch.chdir(workspace)
    frame = make_data(60).drop(columns=["target"])
    frame["label"] = np.where(frame["u"] + frame["v"] > 0, "high", "low")
    frame.to_csv("labels.csv", index=False)
    pathlib.Path("classifier.py").write_text(CLASSIFIER_SOURCE)
    base = ["explain", "--model", "classifier.py:model", "--data", "labels.csv",
            "--target", "label", "--methods", "permutation", "pd_importance", "--quiet"]
    assert main([*base, "--out", "by_default"]) == 0
    assert "explain:" not in capsys.readouterr().err  # no progress bar with --quiet
    table = pd.read_csv(pathlib.Path("by_default", "results.csv"))
    assert set(table.loc[table["method"] == "pd_importance", "output"]) == {"high", "low"}
    assert set(table.loc[table["method"] == "permutation", "output"]) == {"y"}  # accuracy
    assert main([*base, "--out", "chosen", "--loss", "log_loss", "--output", "high"]) == 0
    chosen = pd.read_csv(pathlib.Path("chosen", "results.csv"))
    assert set(chosen.loc[chosen["method"] == "pd_importance", "output"]) == {"high"}
    import importlib.util

    spec = importlib.util.spec_from_file_location("classifier_api", "classifier.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    api = explain(module.model, frame.drop(columns=["label"]), frame["label"].to_numpy(),
                  methods=["permutation", "pd_importance"], loss="log_loss", output="high",
                  progress=False)
    assert api["permutation"].info["loss"] == "log_loss"
    rows = chosen[chosen["method"] == "permutation"].sort_values("feature")
    np.testing.assert_allclose(
        rows["value"].to_numpy(),
        api["permutation"].to_frame().sort_values("feature")["importance"].to_numpy(),
        rtol=1e-9)


def test_report_shows_the_unnormalized_h_beside_the_normalized():
    """f = x0 x1 + x2: the pair (x0, x1)'s unnormalized H is the standard deviation over the
    rows of the centred product (x0 - m0)(x1 - m1), its pure interaction effect; the pairs
    with x2 have none."""
    X = np.random.default_rng(0).uniform(-1, 1, size=(60, 3))
    h = jaximp.h_statistic(lambda A: A[:, 0] * A[:, 1] + A[:, 2], X)
    table = _report._pairwise_h_table(h)
    assert list(table.columns[:5]) == ["feature_1", "feature_2", "output", "H^2 (normalized)",
                                       "unnormalized H"]
    product = (X[:, 0] - X[:, 0].mean()) * (X[:, 1] - X[:, 1].mean())
    expected = {("x0", "x1"): np.sqrt(np.mean((product - product.mean()) ** 2)),
                ("x0", "x2"): 0.0, ("x1", "x2"): 0.0}
    for row in table.itertuples(index=False):
        assert row[4] == pytest.approx(expected[(row[0], row[1])], rel=1e-5, abs=1e-6)
    normalized = h.pairwise.to_frame().set_index(["feature_1", "feature_2"])["interaction"]
    np.testing.assert_allclose(table.set_index(["feature_1", "feature_2"])["H^2 (normalized)"],
                               normalized.loc[table.set_index(["feature_1", "feature_2"]).index])
