"""benchmarks/gpu.py, the GPU side by side, runs at small sizes on any device: every case's
check against its peer passes (the script asserts them) and every case reaches the table."""

import pathlib
import subprocess
import sys

import pytest

for module in ("sklearn", "shap", "captum", "torch"):
    pytest.importorskip(module)

SCRIPT = pathlib.Path(__file__).parents[1] / "benchmarks" / "gpu.py"


def test_the_gpu_side_by_side_runs_and_checks_every_case(tmp_path):
    out = tmp_path / "rows.jsonl"
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    cases = ["PD, every feature", "permutation importance", "H, all pairs",
             "Shapley, exact", "Shapley, 46 permutations", "permutation attributions",
             "permutation importance, torch twin"]
    table = [line for line in run.stdout.splitlines() if line.startswith("| ")]
    for case in cases:
        assert any(line.startswith(f"| {case}") for line in table), case
    assert len(out.read_text().splitlines()) == len(table) - 1  # the header is not a row
