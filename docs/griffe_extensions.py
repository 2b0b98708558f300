"""Griffe extensions for the API reference (registered in mkdocs.yml under the mkdocstrings
python handler's ``extensions``).

* :class:`LibrariesInMbmodel`: the component libraries install as ``mbmodel.libraries``
  from ``libraries/`` at the repository root (``[tool.setuptools.package-dir]``), which
  griffe's static analysis of ``mbmodel/`` does not see; this loads them there.
* :class:`MarkdownDocstrings`: the docstrings use reST markup (``:class:`X```, double
  backticks, ``Example::`` before a literal block); mkdocstrings renders Markdown, so the
  markup is rewritten as in the generated reference pages (:func:`hooks.rst_to_markdown`).
  Declarations such as ``R = Parameter(1.0, unit="Ohm", doc="Resistance")`` get their
  ``doc`` (and unit) as the attribute's docstring, and data documented by a ``#:`` comment
  above its assignment (Sphinx autodoc's convention, used throughout the code) that
  comment.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import griffe


def _load_hooks():
    """docs/hooks.py, which holds the reST-to-Markdown rewriting of the reference pages."""
    spec = importlib.util.spec_from_file_location("mbmodel_docs_hooks",
                                                  Path(__file__).with_name("hooks.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_hooks = _load_hooks()
rst_to_markdown, plain, comment_above = (_hooks.rst_to_markdown, _hooks.plain,
                                        _hooks.comment_above)

#: Constructors whose ``doc=`` keyword documents the declared member.
DECLARATIONS = {"Parameter", "Variable", "Potential", "Flow", "Input", "Output",
                "Overdetermined", "Discrete"}


class LibrariesInMbmodel(griffe.Extension):
    """Load ``mbmodel.libraries`` from where the import system finds it."""

    def on_package(self, *, pkg, loader, **kwargs):
        if pkg.name != "mbmodel" or "libraries" in pkg.members:
            return
        spec = importlib.util.find_spec("mbmodel.libraries")
        if spec is None or not spec.submodule_search_locations:
            return
        directory = Path(list(spec.submodule_search_locations)[0])
        self._visit_package("libraries", directory, pkg, loader)

    def _visit_package(self, name, directory: Path, parent, loader):
        module = self._visit(name, directory / "__init__.py", parent, loader)
        for path in sorted(directory.iterdir()):
            if path.suffix == ".py" and path.stem != "__init__":
                self._visit(path.stem, path, module, loader)
            elif path.is_dir() and (path / "__init__.py").is_file():
                self._visit_package(path.name, path, module, loader)
        return module

    @staticmethod
    def _visit(name, path: Path, parent, loader):
        code = path.read_text(encoding="utf-8")
        loader.lines_collection[path] = code.splitlines()
        module = griffe.visit(name, path, code, extensions=loader.extensions, parent=parent,
                              docstring_parser=loader.docstring_parser,
                              docstring_options=loader.docstring_options,
                              lines_collection=loader.lines_collection,
                              modules_collection=loader.modules_collection)
        parent.set_member(name, module)
        return module


class MarkdownDocstrings(griffe.Extension):
    """reST markup of docstrings as Markdown; declarations documented by their ``doc=``."""

    def on_instance(self, *, node, obj, agent, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)

    def on_attribute_instance(self, *, node, attr, agent, **kwargs):
        if attr.docstring is not None or not isinstance(node, (ast.Assign, ast.AnnAssign)):
            return
        comment = comment_above(agent.code.splitlines(), node.lineno)
        if comment:   # "#: ..." above the assignment (Sphinx autodoc's convention)
            attr.docstring = griffe.Docstring(rst_to_markdown(comment), lineno=node.lineno,
                                              parent=attr, parser=agent.docstring_parser,
                                              parser_options=agent.docstring_options)
            return
        call = node.value
        if not (isinstance(call, ast.Call) and _name(call.func) in DECLARATIONS):
            return
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        doc = _literal(keywords.get("doc"))
        if not doc:
            return
        unit = _literal(keywords.get("unit"))
        text = plain(f"{doc} [{unit}]" if unit else doc)
        attr.docstring = griffe.Docstring(text, lineno=node.lineno, parent=attr,
                                          parser=agent.docstring_parser,
                                          parser_options=agent.docstring_options)


def _name(func) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _literal(node) -> str:
    """A string constant, or the concatenation of string constants, else ''."""
    try:
        value = ast.literal_eval(node) if node is not None else ""
    except (ValueError, TypeError, SyntaxError):
        return ""
    return value if isinstance(value, str) else ""
