"""The README's quickstart runs as written."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_python_blocks_run():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    namespace: dict = {}
    for block in blocks:  # later blocks build on earlier ones, as a reader would run them
        exec(compile(block, "README.md", "exec"), namespace)
