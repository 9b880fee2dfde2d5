"""The documentation builds without warnings, covers every public name, and its examples run."""

import html
import pathlib
import re
import textwrap

import pytest

sphinx_build = pytest.importorskip("sphinx.cmd.build", reason="the docs extra is not installed")

import jaximp  # noqa: E402

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
PAGES = ("index", "methods", "engine", "api")

# Sphinx's own deprecation notices (autodoc, napoleon) are not the project's concern
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning",
                                        "ignore::PendingDeprecationWarning")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One HTML build of docs/, as ``make docs`` runs it (warnings are errors)."""
    out = tmp_path_factory.mktemp("docs")
    warnings = out / "warnings.txt"
    status = sphinx_build.build_main([
        "-W", "--keep-going", "-q", "-b", "html", "-w", str(warnings),
        "-d", str(out / "doctrees"), str(DOCS), str(out / "html"),
    ])
    return status, warnings.read_text() if warnings.exists() else "", out / "html"


def _text(page: pathlib.Path) -> str:
    """The visible text of an HTML page (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))


def test_docs_build_without_warnings(built):
    status, warnings, out = built
    assert status == 0, f"sphinx-build failed:\n{warnings}"
    assert warnings.strip() == ""
    for page in PAGES:
        assert (out / f"{page}.html").is_file(), page


def test_api_page_documents_every_public_name(built):
    _, _, out = built
    api = (out / "api.html").read_text(encoding="utf-8")
    missing = [name for name in jaximp.__all__ if f'id="jaximp.{name}"' not in api]
    assert not missing, f"no API entry for {missing}"


def test_narrative_pages_mention_every_public_name(built):
    _, _, out = built
    text = " ".join(_text(out / f"{page}.html") for page in ("index", "methods", "engine"))
    missing = [name for name in jaximp.__all__
               if not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text)]
    assert not missing, f"docs/index.rst, methods.rst and engine.rst never mention {missing}"


def test_methods_page_has_a_section_per_method_family(built):
    _, _, out = built
    text = _text(out / "methods.html")
    for heading in ("Partial dependence and ICE", "PD-based importance", "PD-based interaction",
                    "H-statistic", "Permutation importance", "LOCO",
                    "Sensitivity-analysis importance", "Garson, Olden, Gedeon", "Filter methods",
                    "Linear-model importance", "Tree ensembles"):
        assert heading in text, heading


def _python_blocks(page: str) -> list[str]:
    source = (DOCS / f"{page}.rst").read_text(encoding="utf-8")
    blocks = re.findall(r"^\.\. code-block:: python\n\n((?:(?: {3}.*)?\n)+)", source, flags=re.M)
    return [textwrap.dedent(block) for block in blocks]


def test_python_examples_use_existing_names():
    for page in ("index", "methods", "engine", "architecture"):
        for block in _python_blocks(page):
            compile(block, f"docs/{page}.rst", "exec")  # valid Python
            used = set(re.findall(r"\bjaximp\.(\w+)", block))
            missing = sorted(name for name in used if not hasattr(jaximp, name))
            assert not missing, f"docs/{page}.rst uses jaximp.{missing}, which do not exist"


@pytest.mark.parametrize("page", [
    pytest.param("index", marks=pytest.mark.slow),  # fits an MLP and runs four methods
    "engine",
    "architecture",
])
def test_python_examples_run(page):
    blocks = _python_blocks(page)
    assert blocks, f"docs/{page}.rst has no python example"
    namespace: dict = {}
    for block in blocks:  # later blocks build on earlier ones, as a reader would run them
        exec(compile(block, f"docs/{page}.rst", "exec"), namespace)
