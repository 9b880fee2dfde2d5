"""The package layout: layers that import only downward, no import circles, small modules.

Read from the source with ``ast`` (every import, those inside functions included), so a loop
hidden from Python by a late import is still found. The layers, lowest first:

=========  ===========================================================  =====================
layer      what it owns                                                 may import
=========  ===========================================================  =====================
kernels    pure array kernels (``jaximp.kernels``)                      nothing of jaximp's
data       datasets, features, grids, parameter table, edge checks      kernels
models     adapters to ``predict(X)``, host models, tree reader, MLP    data, kernels
engine     plans, reducers, evaluation, sharding, precision, keys       models, data, kernels
results    result types, typed details, plots                           data, kernels
methods    one module per method family, their shared setup and losses  every layer above
user       explain, reports, the command line, ``jaximp/__init__``      every layer
=========  ===========================================================  =====================
"""

import ast
import pathlib

import pytest

import jaximp

PACKAGE = pathlib.Path(jaximp.__file__).parent
KERNELS = pathlib.Path(jaximp.kernels.__file__).parent
LAYERS = ("kernels", "data", "models", "engine", "results", "methods", "user")
MAY_IMPORT = {
    "kernels": set(),
    "data": {"kernels"},
    "models": {"data", "kernels"},
    "engine": {"models", "data", "kernels"},
    "results": {"data", "kernels"},
    "methods": {"results", "engine", "models", "data", "kernels"},
    "user": {"methods", "results", "engine", "models", "data", "kernels"},
}
MAX_LINES = 800


def _modules() -> dict[str, pathlib.Path]:
    """Dotted module name -> file, for jaximp and jaximp.kernels."""
    found = {}
    for root, prefix in ((PACKAGE, "jaximp"), (KERNELS, "jaximp.kernels")):
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([prefix, *parts])] = path
    return found


MODULES = _modules()


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return "user"


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def imports_of(module: str) -> list[tuple[str, list[str], int]]:
    """(imported module, imported names, line) for every import of a jaximp module."""
    found = []
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base[:len(base) - node.level + 1] + (node.module or "").split(".")
                target = ".".join(p for p in parts if p)
            else:
                target = node.module or ""
            if not target.startswith("jaximp"):
                continue
            names = [a.name for a in node.names]
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            if submodules:  # from package import module: the package's __init__ runs first
                found += [(target, [], node.lineno)]
                found += [(sub, [], node.lineno) for sub in submodules]
            else:
                found.append((target, names, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names
                      if a.name.startswith("jaximp")]
    return found


def graph() -> dict[str, set[str]]:
    edges = {module: set() for module in MODULES}
    for module in MODULES:
        for target, _, _ in imports_of(module):
            assert target in MODULES, f"{module} imports {target}, which does not exist"
            edges[module].add(target)
    return edges


def test_every_layer_imports_only_the_layers_below_it():
    offenders = []
    for module in MODULES:
        layer = layer_of(module)
        for target, _, line in imports_of(module):
            other = layer_of(target)
            if other != layer and other not in MAY_IMPORT[layer]:
                offenders.append(f"{module}:{line} ({layer}) imports {target} ({other})")
    assert not offenders, offenders


def test_another_layer_is_reached_through_its_package():
    """Across layers, a module imports the names a layer's ``__init__`` exports, never one of
    the layer's private modules; within a layer, it imports its sibling modules directly (not
    the package, which would import the module being defined)."""
    offenders = []
    for module in MODULES:
        layer = layer_of(module)
        for target, names, line in imports_of(module):
            other = layer_of(target)
            if other == "kernels" or other == "user":
                continue
            through_package = target == f"jaximp.{other}"
            if other != layer and not through_package:
                offenders.append(f"{module}:{line} imports the private module {target}")
            if other == layer and through_package and not _is_package(module):
                offenders.append(f"{module}:{line} imports its own layer's package")
            exported = getattr(__import__(target, fromlist=["_"]), "__all__", None)
            if through_package and other != layer and exported is not None:
                missing = [n for n in names if n not in exported]
                if missing:
                    offenders.append(f"{module}:{line} imports {missing} that {target} "
                                     "does not export")
    assert not offenders, offenders


def test_no_module_imports_another_modules_private_names():
    offenders = [f"{module}:{line} imports {name} from {target}"
                 for module in MODULES if module.startswith("jaximp.") or module == "jaximp"
                 for target, names, line in imports_of(module)
                 if not target.startswith("jaximp.kernels")
                 for name in names if name.startswith("_") and name != "__version__"]
    assert not offenders, offenders


def test_no_import_circles():
    edges = graph()
    state: dict[str, int] = {}
    circles = []

    def visit(module, path):
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not circles, circles


def test_plots_read_results_by_their_fields():
    """Result types draw themselves through the plots; the plots never import them back."""
    plots = [t for t, _, _ in imports_of("jaximp.results._plots")]
    assert "jaximp.results._results" not in plots and "jaximp.results" not in plots
    assert "jaximp.results._plots" in [t for t, _, _ in imports_of("jaximp.results._results")]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it along its concerns"


def test_the_layer_table_covers_every_module():
    assert {layer_of(m) for m in MODULES} == set(LAYERS)
    for layer in LAYERS[1:-1]:
        assert (PACKAGE / layer / "__init__.py").exists()
