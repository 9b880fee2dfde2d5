"""Execute the research notebooks in place and store their outputs.

Usage (from the repository root)::

    .venv/bin/python notebooks/run.py                  # every notebook, full size
    .venv/bin/python notebooks/run.py --quick          # JAXIMP_NOTEBOOK_QUICK=1 smoke run
                                                       # (stores the reduced outputs!)
    .venv/bin/python notebooks/run.py notebooks/seed002_linear.ipynb

Each notebook runs top to bottom in a fresh kernel of the Python that runs this script (the
"python3" kernel that ipykernel provides for its own interpreter, so nothing is registered
with Jupyter), with the notebooks folder as its working directory. A notebook is rewritten
only when every cell succeeded; a failing one is left as it was and the script exits with
status 1 after trying the rest. Needs ``nbclient``, ``nbformat`` and ``ipykernel``
(``pip install -e .[notebooks]``).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent


def execute(path: pathlib.Path, timeout: int) -> float:
    """Run one notebook in a fresh kernel and write it back with its outputs; returns seconds."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=timeout,
        record_timing=False,
        startup_timeout=300,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    notebook.metadata.pop("widgets", None)
    nbformat.validate(notebook)
    nbformat.write(notebook, path)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute the notebooks in place, with outputs.")
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path,
                        help="notebooks to run (default: every notebooks/*.ipynb)")
    parser.add_argument("--quick", action="store_true",
                        help="set JAXIMP_NOTEBOOK_QUICK=1 for a fast smoke run")
    parser.add_argument("--timeout", type=int, default=1800,
                        help="seconds allowed per cell (default 1800)")
    args = parser.parse_args(argv)

    paths = args.notebooks or sorted(HERE.glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    # the kernel inherits this environment; a non-interactive backend is not wanted there
    os.environ.pop("MPLBACKEND", None)
    if args.quick:
        os.environ["JAXIMP_NOTEBOOK_QUICK"] = "1"
    else:
        os.environ.pop("JAXIMP_NOTEBOOK_QUICK", None)

    failed = []
    for path in paths:
        print(f"{path.name}: running", flush=True)
        try:
            seconds = execute(path.resolve(), args.timeout)
        except Exception as error:  # report, keep the old file, go on with the others
            failed.append(path.name)
            print(f"{path.name}: FAILED, left unchanged\n{type(error).__name__}: {error}",
                  file=sys.stderr, flush=True)
        else:
            print(f"{path.name}: done in {seconds:.0f} s", flush=True)
    if failed:
        print(f"{len(failed)} of {len(paths)} notebooks failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
