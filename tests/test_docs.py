"""Every ```python block of the documentation (docs/*.md and README.md) runs.

The blocks of a page run in order in one namespace (a page's snippets build on each
other), in a temporary working directory, with matplotlib's Agg backend. A block that
cannot run on its own (a fragment of a class body, a sketch that needs the reader's own
files) is marked by the HTML comment ``<!-- not-run -->`` on the line before its fence,
which the rendered site does not show; the markers are few, and
``test_not_run_markers_are_rare`` keeps them so.

Pages whose snippets start worker processes (``mb.sweep`` and a dask ``LocalCluster`` in
tools.md) run as a script in a subprocess: spawned workers import the main module again,
and the snippets guard their top level with ``if __name__ == "__main__":`` as a script of
the reader's must.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
NOT_RUN = "<!-- not-run -->"
#: Pages run as a script in a subprocess (their snippets start worker processes).
AS_SCRIPT = {"tools.md"}
#: Upper bound on the number of blocks marked not-run, over all pages.
MAX_NOT_RUN = 4
#: Optional dependencies (extras) some pages use: without one, the page is skipped.
OPTIONAL = {"matplotlib", "pandas", "tqdm", "dask", "distributed", "fmpy", "control",
            "yourdfpy", "pinocchio"}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*$")


def blocks(path: Path, *, marked: bool = False) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown file as ``(line, code)``: ``line`` is the
    (0-based) line of the first line of code, the code dedented by its fence's indentation.
    Blocks marked not-run are left out, or with ``marked=True`` the only ones returned."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, k = [], 0
    while k < len(lines):
        match = _FENCE.match(lines[k])
        if not match or not match["lang"]:
            k += 1
            continue
        indent, start = match["indent"], k + 1
        end = start
        while end < len(lines) and not re.match(rf"^{indent}```[ \t]*$", lines[end]):
            end += 1
        skipped = k > 0 and lines[k - 1].strip() == NOT_RUN
        if match["lang"] == "python" and skipped == marked:
            code = "\n".join(line[len(indent):] if line.startswith(indent) else line.lstrip()
                             for line in lines[start:end])
            found.append((start, code))
        k = end + 1
    return found


def page_source(path: Path) -> str:
    """The page's blocks as one script whose line numbers are those of the Markdown file
    (tracebacks point into the page)."""
    out: list[str] = []
    for line, code in blocks(path):
        out.extend([""] * (line - len(out)))
        out.extend(code.splitlines())
    return "\n".join(out) + "\n"


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """A temporary working directory and the Agg backend of matplotlib."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    try:
        import matplotlib
        matplotlib.use("Agg")
    except ImportError:
        pass
    return tmp_path


def _id(path: Path) -> str:
    return path.name


@pytest.mark.parametrize("page", [p for p in PAGES if p.name not in AS_SCRIPT and blocks(p)],
                         ids=_id)
def test_page_snippets_run(page, in_tmp):
    source = page_source(page)
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(source, str(page), "exec"), namespace)
    except ModuleNotFoundError as error:
        if error.name not in OPTIONAL:
            raise
        pytest.skip(f"{page.name} needs {error.name}")


@pytest.mark.parametrize("page", [ROOT / "docs" / name for name in sorted(AS_SCRIPT)], ids=_id)
def test_page_snippets_run_as_script(page, in_tmp):
    script = in_tmp / "page_snippets.py"
    script.write_text(page_source(page), encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, script.name], cwd=in_tmp, env=env,
                          capture_output=True, text=True, timeout=300)
    missing = re.search(r"ModuleNotFoundError: No module named '(\w+)", proc.stderr)
    if proc.returncode and missing and missing[1] in OPTIONAL:
        pytest.skip(f"{page.name} needs {missing[1]}")
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_not_run_markers_are_rare():
    marked = {p.name: len(blocks(p, marked=True)) for p in PAGES}
    assert sum(marked.values()) <= MAX_NOT_RUN, marked


def test_every_python_block_is_found():
    """The extraction sees every ```python fence (none swallowed by a missing close)."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        fences = len(re.findall(r"^[ \t]*```python[ \t]*$", text, flags=re.M))
        assert len(blocks(page)) + len(blocks(page, marked=True)) == fences, page.name


# -- the pages generated at build time (docs/hooks.py) -----------------------------------

@pytest.fixture(scope="module")
def hooks():
    import importlib.util
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_library_has_a_reference_page(hooks):
    import pkgutil

    import mbmodel.libraries
    modules = {m.name for m in pkgutil.iter_modules(mbmodel.libraries.__path__)}
    assert {lib for lib, _ in hooks.LIBRARIES} == modules
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for lib, _ in hooks.LIBRARIES:
        assert f"reference/{lib}.md" in nav


def test_reference_pages_list_every_component_with_its_parameters(hooks):
    import importlib
    import inspect

    from mbmodel.core import Model, Parameter
    for lib, title in hooks.LIBRARIES:
        module = importlib.import_module(f"mbmodel.libraries.{lib}")
        page = hooks.library_page(lib, title)
        for name in hooks.public_names(module):
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, Model):
                assert f"## {name} {{#{name}}}" in page, (lib, name)
                if obj.__name__ != name:
                    continue
                section = page.split(f"## {name} {{#{name}}}", 1)[1].split("\n## ", 1)[0]
                for key, decl in obj._class_declarations():
                    if isinstance(decl, Parameter):
                        assert f"| `{key}` |" in section, (lib, name, key)
            else:
                assert f"`{name}`" in page, (lib, name)
    page = hooks.library_page("electrical", "Electrical")
    assert "| `R` | 1 | Ohm | Resistance at temperature T_ref |" in page
    assert "| `yMin` | `-yMax` |" in hooks.library_page("blocks", "Blocks")   # a binding


def test_gallery_shows_every_example_with_its_figure(hooks):
    page = hooks.gallery_page()
    for script in sorted((ROOT / "examples").glob("*.py")):
        assert f"## {script.name} {{#{script.stem}}}" in page
        image = ROOT / "docs" / "images" / f"{script.stem}.png"
        assert image.is_file(), f"{image.name}: run the example once and keep its figure"
        assert image.stat().st_size < 400_000
        assert f"(images/{image.name})" in page


def test_site_builds_strictly_and_its_links_resolve(tmp_path):
    """``mkdocs build --strict`` (API reference, generated pages), then every relative link
    and anchor of the built site points at something that exists."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    from urllib.parse import unquote, urlparse
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-d", str(site)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    pages = {p.resolve(): p.read_text(encoding="utf-8") for p in site.rglob("*.html")
             if p.name != "404.html"}   # 404.html links from the site root
    ids = {p: set(re.findall(r'\bid="([^"]+)"', text)) for p, text in pages.items()}
    broken = []
    for page, text in pages.items():
        for link in re.findall(r'\b(?:href|src)="([^"]+)"', text):
            url = urlparse(link)
            if url.scheme or link.startswith(("//", "mailto:")):
                continue
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists() or (url.fragment and target in ids
                                       and unquote(url.fragment) not in ids[target]):
                broken.append(f"{page.relative_to(site.resolve())}: {link}")
    assert not broken, broken[:20]
