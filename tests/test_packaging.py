"""The package layout: jaximp.kernels ships inside jaximp, kernels stay pure."""

import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_installed_package_imports_kernels_subpackage(tmp_path):
    code = (
        "import importlib.util, jaximp.kernels as k; "
        "print(k.__name__); print(importlib.util.find_spec('kernels') is None)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["jaximp.kernels", "True"]


def test_kernels_never_import_the_user_layer(tmp_path):
    """Load kernels/ on its own (without jaximp) and list what it pulled in."""
    code = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location(
    "standalone_kernels", {str(ROOT / "kernels" / "__init__.py")!r},
    submodule_search_locations=[{str(ROOT / "kernels")!r}])
module = importlib.util.module_from_spec(spec)
sys.modules["standalone_kernels"] = module
spec.loader.exec_module(module)
print(sorted(m for m in ("pandas", "matplotlib", "jaximp") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out == "[]"


@pytest.mark.slow
def test_built_wheel_contains_kernels_and_every_layer_inside_jaximp(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("jaximp-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "jaximp/kernels/__init__.py" in names
    for layer in ("data", "models", "engine", "results", "methods"):
        sources = {p.name for p in (ROOT / "jaximp" / layer).glob("*.py")}
        assert {n.rsplit("/", 1)[1] for n in names if n.startswith(f"jaximp/{layer}/")} \
            == sources, layer
    assert not any(n.startswith("kernels/") for n in names)
