"""mkdocs hooks: pages generated from the code at build time (nothing generated is committed).

* ``reference/<library>.md``, one page per component library (:data:`LIBRARIES`): every
  public component with the first paragraph of its docstring and tables of its parameters
  (name, default, unit, description), connectors and signals, read from the classes
  themselves (an instance built with the default arguments, so members created in
  ``__init__`` are there too), its variables and its structural options.
* ``gallery.md``: every script in ``examples/`` with its docstring, its figure
  (``docs/images/<script>.png``) and its source.

Registered in ``mkdocs.yml`` under ``hooks:``; ``tests/test_docs.py`` checks the pages.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import casadi as ca
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
IMAGES = ROOT / "docs" / "images"

#: (module of ``mbmodel.libraries``, title): a reference page each, in this order.
LIBRARIES = [
    ("electrical", "Electrical"),
    ("rotational", "Rotational"),
    ("translational", "Translational"),
    ("blocks", "Blocks"),
    ("friction", "Friction"),
    ("drive_trains", "Drive trains"),
    ("hydraulics", "Hydraulics"),
    ("multibody", "Multibody"),
    ("robot_r3", "Manutec r3 robot"),
]

#: The gallery's order: the flagship first, then as on the Examples page; scripts not
#: named here follow in alphabetical order.
GALLERY_ORDER = [
    "robot_r3_full", "dc_motor_drive", "rc_circuit", "rlc_circuit", "cauer_filter",
    "rectifier", "friction_drive", "hydraulic_press", "excavator_boom", "cartesian_pendulum",
    "double_pendulum", "fourbar", "engine", "robot_r3",
]


# -- text ----------------------------------------------------------------------------------

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|obj|exc):`(~?)([^`]+)`")


def rst_to_markdown(text: str) -> str:
    """The reST markup of the docstrings as Markdown: ``:class:`~a.B``` and ``:func:`f```
    become code spans (``B``, ``f``), double backticks single ones, and a paragraph ending
    in ``::`` (before a literal block, which Markdown reads as indented code) ends in ``:``.
    """
    text = _ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", text)
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    text = re.sub(r"(?m)^([ \t]*)::[ \t]*$", "", text)
    return re.sub(r"(?m)(\S)::[ \t]*$", r"\1:", text)


def first_paragraph(obj) -> str:
    """The first paragraph of ``obj``'s docstring, on one line, as Markdown."""
    doc = inspect.getdoc(obj) or ""
    paragraph = doc.strip().split("\n\n", 1)[0]
    return rst_to_markdown(" ".join(line.strip() for line in paragraph.splitlines()))


def comment_above(lines: list[str], lineno: int) -> str:
    """The ``#:`` comment right above line ``lineno`` (1-based) of ``lines``: how the code
    documents module data and class constants (as Sphinx's autodoc reads them)."""
    found = []
    k = lineno - 2
    while k >= 0 and lines[k].strip().startswith("#:"):
        found.insert(0, lines[k].strip()[2:].strip())
        k -= 1
    return " ".join(found)


def data_docs(module) -> dict[str, str]:
    """Name -> ``#:`` comment of the module-level assignments of ``module``."""
    import ast
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    docs = {}
    for node in ast.parse(source).body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        for target in targets:
            if isinstance(target, ast.Name):
                docs[target.id] = comment_above(lines, node.lineno)
    return docs


def _cell(text) -> str:
    """Text fit for a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip() or "—"


def plain(text: str) -> str:
    """Plain text (a declaration's ``doc``) as Markdown: ``R*(1 + alpha*T)`` is a formula,
    not emphasis."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("<", "&lt;")


def _number(x: float) -> str:
    return "0" if x == 0 else f"{x:.6g}"


def format_value(value) -> str:
    """A parameter's default as shown in a table: a number, a short list, a binding (the
    expression of other parameters it is bound to) or a shape."""
    if isinstance(value, (ca.SX, ca.MX)):
        text = str(value)
        if "@" in text or len(text) > 40:
            names = sorted({str(s) for s in ca.symvar(value)})
            return f"binding of {', '.join(f'`{n}`' for n in names)}"
        return f"`{text[1:-1] if text.startswith('(') and text.endswith(')') else text}`"
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return f"`{value!r}`"
    if arr.size == 1:
        return _number(float(arr.ravel()[0]))
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.size > 9:
        return f"array {'×'.join(map(str, arr.shape))}"
    if arr.ndim == 1:
        return "[" + ", ".join(_number(x) for x in arr) + "]"
    return "[" + ", ".join("[" + ", ".join(_number(x) for x in row) + "]" for row in arr) + "]"


# -- components ----------------------------------------------------------------------------

def public_names(module) -> list[str]:
    """``__all__``, or else the public classes and functions defined in the module."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [name for name, obj in vars(module).items()
            if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
            and getattr(obj, "__module__", None) == module.__name__]


def members_of(cls):
    """The members of a component class: those of an instance made with the default
    arguments (with what ``__init__`` adds), or the class declarations when it needs
    arguments. Returns ``(members, instantiated)``."""
    try:
        return cls().members(), True
    except Exception:   # noqa: BLE001 - e.g. a required structural argument
        return dict(cls._class_declarations()), False


def numbered_groups(parts: list[tuple[str, str]]) -> list[str]:
    """``[("axis1", "Axis"), ("axis2", "Axis")]`` -> ``["`axis1` … `axis2` (`Axis`)"]``:
    members numbered in a row and of one class shown as a range."""
    groups: dict[tuple[str, str], list[tuple[str, int | None]]] = {}
    for name, cls in parts:
        match = re.fullmatch(r"(.*?)\[?(\d+)\]?", name)
        key = (match[1], cls) if match else (name, cls)
        groups.setdefault(key, []).append((name, int(match[2]) if match else None))
    out = []
    for (_, cls), items in groups.items():
        numbers = [n for _, n in items]
        if len(items) > 2 and numbers == list(range(numbers[0], numbers[0] + len(items))):
            out.append(f"`{items[0][0]}` … `{items[-1][0]}` (`{cls}`)")
        else:
            out.extend(f"`{name}` (`{cls}`)" for name, _ in items)
    return out


def _option(value) -> str:
    if inspect.isclass(value) or inspect.isfunction(value):
        return value.__name__
    if isinstance(value, (float, np.floating)):
        return _number(float(value))
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, float)) for v in value):
        inner = ", ".join(_number(float(v)) if isinstance(v, float) else str(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    shown = repr(value)
    return shown if len(shown) <= 40 else "…"


def options_of(cls) -> list[str]:
    """The structural options: ``__init__``'s arguments other than the modifiers."""
    try:
        signature = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return []
    out = []
    for name, param in list(signature.parameters.items())[1:]:
        if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        if param.default is param.empty:
            out.append(f"`{name}` (required)")
        else:
            out.append(f"`{name}={_option(param.default)}`")
    return out


def component_section(module_path: str, name: str, cls) -> str:
    """The reference of one component class: docstring summary and member tables."""
    from mbmodel.core import Connector, Input, Model, Output, Parameter, Variable

    members, instantiated = members_of(cls)
    bases = [b.__name__ for b in cls.__bases__
             if b not in (Model, object) and not b.__name__.startswith("_")]
    lines = [f"## {name} {{#{name}}}", ""]
    head = f"`{module_path}.{name}`"
    if bases:
        head += " — extends " + ", ".join(f"`{b}`" for b in bases)
    lines += [head + f" ([API][{module_path}.{name}])", "", first_paragraph(cls), ""]

    params = [(k, m) for k, m in members.items() if isinstance(m, Parameter)]
    if params:
        lines += ["| parameter | default | unit | description |", "|---|---|---|---|"]
        for key, p in params:
            value = p.value if instantiated else p.default
            lines.append(f"| `{key}` | {_cell(format_value(value))} | {_cell(p.unit)} | "
                         f"{_cell(plain(p.doc))} |")
        lines.append("")

    connectors = [(k, m) for k, m in members.items() if isinstance(m, Connector)]
    if connectors:
        lines += ["| connector | type | description |", "|---|---|---|"]
        for key, c in connectors:
            doc = plain(c.doc) if c.doc else first_paragraph(type(c)).split(". ")[0]
            lines.append(f"| `{key}` | `{type(c).__name__}` | {_cell(doc)} |")
        lines.append("")

    signals = [(k, m) for k, m in members.items() if isinstance(m, (Input, Output))]
    if signals:
        lines += ["| signal | direction | unit | description |", "|---|---|---|---|"]
        for key, s in signals:
            direction = "input" if isinstance(s, Input) else "output"
            size = f" ({s.shape[0]})" if s.shape not in ((1, 1), ()) else ""
            lines.append(f"| `{key}`{size} | {direction} | {_cell(s.unit)} | "
                         f"{_cell(plain(s.doc))} |")
        lines.append("")

    variables = [(k, m) for k, m in members.items()
                 if isinstance(m, Variable) and not isinstance(m, (Input, Output))]
    if variables:
        shown = [f"`{k}`" + (f" [{v.unit}]" if v.unit else "") for k, v in variables]
        lines += ["Variables: " + ", ".join(shown) + ".", ""]

    parts = [(k, type(m).__name__) for k, m in members.items() if isinstance(m, Model)]
    if parts:
        lines += ["Components: " + ", ".join(numbered_groups(parts)) + ".", ""]

    options = options_of(cls)
    if options:
        lines += ["Structural options: " + ", ".join(options) + ".", ""]
    if not instantiated:
        lines += ["(The tables show the class declarations; members created from the "
                  "required options are not listed.)", ""]
    return "\n".join(lines)


def connector_rows(module_path: str, name: str, cls) -> str:
    variables = ", ".join(f"`{k}` ({v.kind}" + (f", {v.unit}" if v.unit else "") + ")"
                          for k, v in cls._declared())
    return f"| [`{name}`][{module_path}.{name}] | {variables} | {_cell(first_paragraph(cls))} |"


def library_page(lib: str, title: str) -> str:
    """The Markdown reference page of ``mbmodel.libraries.<lib>``."""
    from mbmodel.core import Connector, Model

    module_path = f"mbmodel.libraries.{lib}"
    module = importlib.import_module(module_path)
    names = public_names(module)
    objects = [(n, getattr(module, n)) for n in names]
    connectors = [(n, o) for n, o in objects if inspect.isclass(o) and issubclass(o, Connector)]
    components = [(n, o) for n, o in objects if inspect.isclass(o) and issubclass(o, Model)]
    classes = [(n, o) for n, o in objects if inspect.isclass(o)
               and not issubclass(o, (Connector, Model))]
    others = [(n, o) for n, o in objects if not inspect.isclass(o)]

    lines = [f"# {title}: `{module_path}`", "", first_paragraph(module), "",
             "Generated from the component classes when the site is built: each component's "
             "parameters with their defaults, units and descriptions, its connectors and "
             "signals, its variables (modify their start values with `Fixed`, `Guess` or "
             "`Start`) and its structural options (constructor arguments). The equations and "
             "sign conventions are in each class's docstring "
             f"([API reference](../api_libraries.md#{module_path})).", ""]
    if connectors:
        lines += ["## Connectors {#connectors}", "",
                  "| connector | variables | description |", "|---|---|---|"]
        lines += [connector_rows(module_path, n, o) for n, o in connectors]
        lines.append("")
    for name, cls in components:
        if cls.__name__ != name:   # another name of a component listed under its own
            lines += [f"## {name} {{#{name}}}", "",
                      f"Another name of [`{cls.__name__}`](#{cls.__name__}).", ""]
        else:
            lines.append(component_section(module_path, name, cls))
    if classes:
        lines += ["## Other classes {#other-classes}", "", "| class | description |",
                  "|---|---|"]
        lines += [f"| [`{n}`][{module_path}.{n}] | {_cell(first_paragraph(o))} |"
                  for n, o in classes]
        lines.append("")
    if others:
        lines += ["## Functions and data {#functions-and-data}", "", "| name | description |",
                  "|---|---|"]
        comments = data_docs(module)
        for n, o in others:
            if inspect.isfunction(o) or inspect.ismodule(o):
                description = first_paragraph(o)
            else:
                description = rst_to_markdown(comments.get(n, "")) or type(o).__name__
                if len(repr(o)) <= 60:
                    description += f" `{o!r}`"
            lines.append(f"| `{n}` | {_cell(description)} |")
        lines.append("")
    return "\n".join(lines)


# -- gallery -------------------------------------------------------------------------------

def example_scripts() -> list[Path]:
    scripts = {p.stem: p for p in EXAMPLES.glob("*.py")}
    order = [n for n in GALLERY_ORDER if n in scripts]
    order += sorted(set(scripts) - set(order))
    return [scripts[n] for n in order]


def _module_docstring(path: Path) -> str:
    import ast
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def gallery_page() -> str:
    """The Markdown of the gallery: every example's docstring, figure and source."""
    lines = ["# Example gallery", "",
             "Every script in `examples/` with its description, the figure it writes and its "
             "source. Run one from the repository root (`python -m pip install -e \".[plot]\"` "
             "first): `python examples/<script>.py` prints its checks and writes "
             "`<script>.png` into the current directory. "
             "[Examples](examples.md) explains what each one shows; "
             "`tests/test_examples.py` runs them all and checks their numbers.", ""]
    scripts = example_scripts()
    lines += ["| script | what it is |", "|---|---|"]
    for path in scripts:
        summary = rst_to_markdown(_module_docstring(path).split("\n\n")[0].replace("\n", " "))
        lines.append(f"| [`{path.name}`](#{path.stem}) | {_cell(summary)} |")
    lines.append("")
    for path in scripts:
        doc = rst_to_markdown(_module_docstring(path))
        lines += [f"## {path.name} {{#{path.stem}}}", "", doc, ""]
        image = IMAGES / f"{path.stem}.png"
        if image.is_file():
            lines += [f"![{path.name}](images/{image.name})", ""]
        source = path.read_text(encoding="utf-8").rstrip("\n")
        lines += [f'<details markdown="1"><summary>Source: <code>examples/{path.name}</code>'
                  "</summary>", "", "```python", source, "```", "", "</details>", ""]
    return "\n".join(lines)


# -- mkdocs --------------------------------------------------------------------------------

def generated_pages() -> dict[str, str]:
    """Path in the site's sources -> Markdown of every generated page."""
    pages = {f"reference/{lib}.md": library_page(lib, title) for lib, title in LIBRARIES}
    pages["gallery.md"] = gallery_page()
    return pages


def on_files(files, config):
    """Add the generated pages to the site (the nav in mkdocs.yml refers to them)."""
    from mkdocs.structure.files import File
    for src_uri, content in generated_pages().items():
        files.append(File.generated(config, src_uri, content=content))
    return files
