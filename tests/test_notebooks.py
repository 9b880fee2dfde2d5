"""Every notebook runs top to bottom (quick mode: JAXIMP_NOTEBOOK_QUICK=1)."""

import json
import pathlib

import matplotlib
import pytest

matplotlib.use("Agg")
ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("JAXIMP_NOTEBOOK_QUICK", "1")
    cells = json.loads(path.read_text())["cells"]
    namespace = {"__name__": "__main__"}
    for cell in cells:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            exec(compile(source, f"{path.name}", "exec"), namespace)
    import matplotlib.pyplot as plt

    plt.close("all")
