"""Every notebook runs top to bottom (quick mode: JAXIMP_NOTEBOOK_QUICK=1)."""

import json
import os
import pathlib
import subprocess
import sys

import matplotlib
import pytest

matplotlib.use("Agg")
ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# Notebooks whose time is running a trained convolutional net rather than compiling: they run
# in a fresh process at XLA's default optimization level (the suite compiles at the lowest,
# which makes convolutions several times slower: 25 s against 10 s for the digits CNN).
COMPUTE_BOUND = {"digits_cnn.ipynb"}


def run_cells(path) -> None:
    """Execute the code cells of the notebook at ``path`` in order, in one namespace."""
    cells = json.loads(pathlib.Path(path).read_text())["cells"]
    namespace = {"__name__": "__main__"}
    for cell in cells:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            exec(compile(source, pathlib.Path(path).name, "exec"), namespace)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("JAXIMP_NOTEBOOK_QUICK", "1")
    if path.name in COMPUTE_BOUND:
        flags = [flag for flag in os.environ.get("XLA_FLAGS", "").split()
                 if not flag.startswith("--xla_backend_optimization_level")]
        env = dict(os.environ, XLA_FLAGS=" ".join(flags), MPLBACKEND="Agg",
                   PYTHONPATH=str(ROOT / "tests"))
        code = f"from test_notebooks import run_cells; run_cells({str(path)!r})"
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return
    run_cells(path)
    import matplotlib.pyplot as plt

    plt.close("all")
