"""Module layout rules: method modules share code through public names only."""

import ast
import pathlib

import jaximp

PACKAGE = pathlib.Path(jaximp.__file__).parent


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 1 and node.module:
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    offenders.append(f"{path.name}: from {'.' * node.level}{node.module} "
                                     f"import {', '.join(private)}")
    assert not offenders, offenders
