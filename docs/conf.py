"""Sphinx configuration for the jaximp documentation (``make docs``)."""

from __future__ import annotations

import inspect
import os
import sys

try:
    import jaximp
except ImportError:  # building from a clone without installing it
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir)))
    import jaximp

project = "jaximp"
author = "the jaximp authors"
copyright = "the jaximp authors"
release = jaximp.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]
templates_path: list[str] = []
exclude_patterns = ["_build"]
root_doc = "index"
nitpicky = False

html_theme = "alabaster"
html_title = f"jaximp {release}"
html_static_path: list[str] = []
html_theme_options = {"description": "Variable importance for any JAX-callable model"}

# numpydoc docstrings through napoleon
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autosummary_generate = False

# -- the API reference is generated from jaximp.__all__ ---------------------------------------
#
# api.rst holds only the introduction; the sections below are appended when Sphinx reads it, so
# a name added to jaximp.__all__ appears in the reference without editing any page. Names are
# grouped by the private module that defines them, in the order of SECTIONS; a module not listed
# goes under "Other".

SECTIONS = [
    ("One-call explanations, plots and reports",
     ["jaximp._explainer", "jaximp._explain", "jaximp.results._plots", "jaximp._report"]),
    ("Partial dependence and ICE", ["jaximp.methods._pd", "jaximp.data._grid"]),
    ("PD-based importance and interaction", ["jaximp.methods._pd_importance"]),
    ("Friedman's H-statistic", ["jaximp.methods._hstat", "jaximp.methods._hstat_result"]),
    ("Permutation importance and LOCO",
     ["jaximp.methods._permutation", "jaximp.methods._loco", "jaximp.methods._loss"]),
    ("Conditional importance", ["jaximp.methods._conditional", "jaximp.methods._samplers"]),
    ("SAGE and Sobol indices", ["jaximp.methods._sage", "jaximp.methods._sobol"]),
    ("Gradient attributions",
     ["jaximp.methods._gradients", "jaximp.methods._gradient_interactions",
      "jaximp.methods._attributions", "jaximp.methods._perturbation_attributions"]),
    ("Sensitivity-analysis importance", ["jaximp.methods._sensitivity"]),
    ("Neural-network weight methods", ["jaximp.methods._nn_weights"]),
    ("Filter and model-specific methods",
     ["jaximp.methods._filters", "jaximp.methods._linear", "jaximp.methods._tree_stats",
      "jaximp.models._trees", "jaximp.methods._booster_importance",
      "jaximp.methods._tree_shap"]),
    ("Shapley values and break-down",
     ["jaximp.methods._shapley", "jaximp.methods._shapley_results",
      "jaximp.methods._break_down"]),
    ("Decorrelation importance and trends",
     ["jaximp.methods._decorrelation", "jaximp.methods._trends"]),
    ("Accumulated local effects and partial importance",
     ["jaximp.methods._ale", "jaximp.methods._partial_importance"]),
    ("Results", ["jaximp.results._results", "jaximp.results._details"]),
    ("Models and data",
     ["jaximp.models._model", "jaximp.models._predictor", "jaximp.data._data",
      "jaximp.models._mlp", "jaximp.data._datasets", "jaximp.data._shapes"]),
    ("Engine: plans, reducers, evaluation",
     ["jaximp.engine._engine", "jaximp.engine._plans", "jaximp.engine._reducers",
      "jaximp.engine._precision"]),
]


def _home(name: str) -> str:
    """The module that defines the public object ``jaximp.<name>``."""
    obj = getattr(jaximp, name)
    module = getattr(obj, "__module__", None)
    if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return module or "jaximp"
    # data: the private module that binds the same object under that name
    for mod_name, mod in sorted(sys.modules.items()):
        private = mod_name.rsplit(".", 1)[-1].startswith("_")
        if mod_name.startswith("jaximp.") and private and getattr(mod, name, None) is obj:
            return mod_name
    return "jaximp"


def _directive(name: str) -> list[str]:
    obj = getattr(jaximp, name)
    target = f"jaximp.{name}"
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return [f".. autoexception:: {target}", ""]
    if inspect.isclass(obj):
        return [f".. autoclass:: {target}", "   :members:", ""]
    if callable(obj):
        return [f".. autofunction:: {target}", ""]
    return [f".. autodata:: {target}", ""]


def api_sections() -> str:
    """reStructuredText for every name in ``jaximp.__all__``: a summary table and the entries."""
    names = list(jaximp.__all__)
    placed = {name: _home(name) for name in names}
    groups: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for title, modules in SECTIONS:
        members = [n for m in modules for n in names if placed[n] == m]
        groups.append((title, members))
        seen.update(members)
    groups.append(("Other", [n for n in names if n not in seen]))
    lines = [".. currentmodule:: jaximp", ""]
    for title, members in groups:
        if not members:
            continue
        lines += [title, "-" * len(title), "", ".. autosummary::", ""]
        lines += [f"   {n}" for n in members] + [""]
        for n in members:
            lines += _directive(n)
    return "\n".join(lines) + "\n"


def _append_api(app, docname, source):
    if docname == "api":
        source[0] += "\n" + api_sections()


def _api_always_outdated(app, env, added, changed, removed):
    return ["api"]  # its content follows jaximp.__all__, not the file's modification time


def setup(app):
    app.connect("source-read", _append_api)
    app.connect("env-get-outdated", _api_always_outdated)
    return {"parallel_read_safe": True}
