"""Visual shapes: what a component shows when a result is animated.

A hook with no physics in it. A component may define ``visuals()`` returning (or yielding)
:class:`VisualShape` objects: a box, cylinder, sphere or coordinate axes fixed in a moving
coordinate system. Flattening calls it once per component (after ``equations()``) and
resolves the shapes into plain data (:func:`resolve`): the model's variables by their full
names, every size a number (parameter expressions evaluated at the declared values). The
flat model and the compiled model keep that list (``FlatModel.visuals``,
``CompiledModel.visuals``; it is saved with the model), and :mod:`mbmodel.animation` draws
it along a :class:`~mbmodel.result.Result`.

Geometry (the MSL's ``Visualizers.Advanced.Shape``):

* the shape's coordinate system has its origin at ``r`` (3 entries, world coordinates) and
  the orientation ``R`` (3x3): ``R`` maps world coordinates to the system's coordinates, so
  its point ``p`` is at ``r + R' p`` in the world (``R=None``: parallel to the world axes);
* in that system the shape starts at ``r_shape`` and extends ``length`` along
  ``length_direction``; ``width`` is measured along ``width_direction`` (made orthogonal
  to the length direction) and ``height`` along the third axis (length x width). Call these
  unit vectors the shape's axes ``e_x, e_y, e_z``;
* ``"box"``: from ``r_shape`` to ``r_shape + length e_x``, centred in the other two axes;
  ``"cylinder"``: axis from ``r_shape`` to ``r_shape + length e_x``, diameter ``width``;
  ``"sphere"``: an ellipsoid with diameters ``length, width, height`` centred at
  ``r_shape + length/2 e_x`` (a sphere if they are equal); ``"axes"``: arrows of ``length``
  along ``e_x, e_y, e_z`` (drawn red, green, blue).

``r`` and ``R`` entries are variables of the model (their symbols, e.g. a connector's
position) or numbers; all other entries are numbers or expressions of parameters.

Example (a component showing a cylinder of its length along its frame's x axis)::

    def visuals(self):
        yield mb.VisualShape("cylinder", self.frame_a.r_0, self.frame_a.R,
                             length=self.L, width=0.05, color=(200, 60, 60))
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from .errors import DeclarationError
from .flat import at_parameter_values

__all__ = ["VisualShape", "KINDS", "resolve"]

#: The shapes a viewer draws.
KINDS = ("box", "cylinder", "sphere", "axes")


class VisualShape:
    """A shape fixed in a moving coordinate system (see the module documentation).

    Parameters: ``kind`` (one of :data:`KINDS`), ``r`` (origin of the coordinate system:
    3 variables or numbers), ``R`` (its orientation, world -> system, 3x3; ``None``:
    world-aligned), ``r_shape``, ``length_direction``, ``width_direction`` (3 entries each),
    ``length``, ``width``, ``height`` (``None``: ``width``) and ``color`` (RGB, 0-255): numbers
    or parameter expressions. ``label`` names the shape within its component (needed if a
    component shows several); ``opacity`` is 0-1.

    Example::

        VisualShape("box", frame.r_0, frame.R, length=0.5, width=0.06, color=(0, 128, 255))
    """

    def __init__(self, kind, r, R=None, *, r_shape=(0.0, 0.0, 0.0),
                 length_direction=(1.0, 0.0, 0.0), width_direction=(0.0, 1.0, 0.0),
                 length=1.0, width=0.1, height=None, color=(0, 128, 255), opacity=1.0,
                 label: str = ""):
        if kind not in KINDS:
            raise DeclarationError(f"VisualShape: kind must be one of {KINDS}, not {kind!r}")
        self.kind = kind
        self.r = _column(r, 3, "r")
        self.R = None if R is None else _rows(R)
        self.r_shape = _column(r_shape, 3, "r_shape")
        self.length_direction = _column(length_direction, 3, "length_direction")
        self.width_direction = _column(width_direction, 3, "width_direction")
        self.length = _column(length, 1, "length")
        self.width = _column(width, 1, "width")
        self.height = self.width if height is None else _column(height, 1, "height")
        self.color = _column(color, 3, "color")
        self.opacity = _column(opacity, 1, "opacity")
        self.label = str(label)

    def __repr__(self):
        return f"<VisualShape {self.kind} {self.label}>".replace(" >", ">")


def _column(value, n, what) -> list:
    """``value`` (numbers, SX or a list mixing them) as ``n`` entries: floats, or scalar SX
    where it is symbolic (numbers stay numbers: most sizes are, and casadi objects cost)."""
    if isinstance(value, (ca.SX, ca.DM, ca.MX)):
        if isinstance(value, ca.MX):
            raise DeclarationError(f"VisualShape: {what} must be SX or numbers, not MX")
        if value.numel() != n:
            raise DeclarationError(f"VisualShape: {what} needs {n} entries, not "
                                   f"{value.numel()}")
        if isinstance(value, ca.DM):
            return [float(v) for v in np.array(value).ravel(order="F")]
        return value.elements()
    if isinstance(value, (int, float, np.integer, np.floating)):
        values = [value]
    else:
        values = list(np.ravel(np.asarray(value, dtype=object)))
    if len(values) != n:
        raise DeclarationError(f"VisualShape: {what} needs {n} entries, not {len(values)}")
    out = []
    for v in values:
        if isinstance(v, ca.SX):
            if v.numel() != 1:
                raise DeclarationError(f"VisualShape: an entry of {what} is not a scalar")
            out.append(v)
        else:
            out.append(float(v))
    return out


def _rows(R) -> list:
    """The 3x3 ``R`` as its 9 entries, row by row."""
    if isinstance(R, (ca.SX, ca.DM)):
        if R.shape != (3, 3):
            raise DeclarationError(f"VisualShape: R must be 3x3, not {R.shape}")
        return _column(R.T, 9, "R")  # column by column of R' is row by row of R
    return _column(np.asarray(R, dtype=object).reshape(9), 9, "R")


#: The fields resolved to numbers, with their sizes (in this order).
_NUMERIC = (("r_shape", 3), ("length_direction", 3), ("width_direction", 3), ("length", 1),
            ("width", 1), ("height", 1), ("color", 3), ("opacity", 1))
_SCALARS = ("length", "width", "height", "opacity")


# -- flattening ------------------------------------------------------------------------------
def resolve(found, variable_name, parameters) -> list[dict]:
    """The shapes ``found`` (pairs of the component's path and its :class:`VisualShape`) as
    plain data: a dict per shape with ``name`` (the component's path, ``/label`` appended
    if given), ``kind``, ``r`` (3) and ``R`` (9, row by row, or ``None``) as variable names
    or numbers, and numbers for ``r_shape``, ``length_direction``, ``width_direction``
    (3 each), ``length``, ``width``, ``height``, ``color`` (3 integers) and ``opacity``.

    ``variable_name(symbol)`` gives the full name of the variable behind a scalar symbol
    (``None`` if it is none); ``parameters`` are the flat model's
    :class:`~mbmodel.flat.FlatParameter` (sizes are evaluated at their values).

    Raises DeclarationError naming the component if a position entry is an expression
    rather than a variable, or a size depends on a variable.
    """
    shapes, taken = [], set()
    pending, where = [], []  # symbolic entries, evaluated together below
    for path, shape in found:
        entry = {"name": _name(path, shape, taken), "kind": shape.kind}
        for field in ("r", "R"):
            entries = getattr(shape, field)
            if entries is None:
                entry[field] = None
                continue
            entry[field] = []
            for k, e in enumerate(entries):
                name = variable_name(e) if isinstance(e, ca.SX) and e.is_symbolic() else None
                entry[field].append(name if name is not None else e)
                if name is None and isinstance(e, ca.SX):
                    pending.append(e)
                    where.append((path, entry, field, k, "position"))
        for field, _ in _NUMERIC:
            entry[field] = list(getattr(shape, field))
            for k, e in enumerate(entry[field]):
                if isinstance(e, ca.SX):
                    pending.append(e)
                    where.append((path, entry, field, k, "size"))
        shapes.append(entry)
    if pending:
        for (_, entry, field, k, _), v in zip(where, _evaluate(pending, parameters, where)):
            entry[field][k] = float(v)
    for entry in shapes:
        for field in _SCALARS:
            entry[field] = entry[field][0]
        entry["color"] = [int(min(max(round(c), 0), 255)) for c in entry["color"]]
    return shapes


def _evaluate(exprs, parameters, where) -> np.ndarray:
    """The parameter expressions ``exprs`` at the parameters' values; an error names the
    component whose entry is no such expression."""
    values, foreign = at_parameter_values(exprs, parameters)
    for (path, _, field, k, role), names in zip(where, foreign):
        if names:
            which = ("is an expression, not a variable" if role == "position" else
                     f"depends on '{names[0]}', which is not a parameter")
            raise DeclarationError(
                f"component '{path or '(top)'}': visuals(): {field}[{k}] {which}; "
                f"positions and orientations are variables (e.g. a connector's), sizes "
                f"numbers or parameter expressions")
    return values


def _name(path, shape, taken) -> str:
    """The shape's name, unique among ``taken`` (which it joins)."""
    base = "/".join(part for part in (path, shape.label) if part) or shape.kind
    name, k = base, 2
    while name in taken:
        name, k = f"{base}#{k}", k + 1
    taken.add(name)
    return name
