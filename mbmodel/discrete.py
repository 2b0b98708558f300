"""Events in the modeling language: relations that switch at zero crossings, discrete
variables, ``when`` clauses with ``reinit``, ``pre``/``edge``/``change``/``initial``,
``noEvent`` and ``sample`` (Modelica's semantics; see docs/events.md).

A relation on continuous variables (``self.h < 0``, written inside ``equations()``) does
not change while the integrator runs: it is a discrete Boolean that keeps its value from
the last event, and its *zero-crossing function* (here ``0 - h``) tells the simulator when
to stop, locate the crossing and start an event, at which every relation is evaluated
anew. ``fabs``, ``fmin``, ``fmax`` and ``sign`` from :mod:`mbmodel.functions` switch the
same way. Relations on time and parameters alone whose crossing is at a parameter-made time
(``time >= t0``) become time events; relations on parameters, inputs or discrete variables
only are evaluated as written.

Example::

    class BouncingBall(mb.Model):
        e = mb.Parameter(0.8)
        h = mb.Variable(start=1.0, fixed=True)
        v = mb.Variable(start=0.0, fixed=True)

        def equations(self):
            yield mb.der(self.h) == self.v
            yield mb.der(self.v) == -9.81
            yield mb.when(self.h < 0, mb.reinit(self.v, -self.e * mb.pre(self.v)))
"""

from __future__ import annotations

import threading

import casadi as ca
import numpy as np

from .core import Variable, _FlattenContext, _where
from .errors import DeclarationError
from .flat import describe

__all__ = ["Discrete", "pre", "edge", "change", "initial", "noEvent", "when", "reinit",
           "sample", "When", "Reinit"]


class Discrete(Variable):
    """A variable that changes only at events: assigned in :func:`when` clauses or defined
    by an equation ``self.d == expr`` that is evaluated at every event (``expr`` of
    relations, parameters, discrete variables and ``pre()`` values). Booleans are stored as
    0/1. Between events its value is constant; it is part of the results.

    Example: ``mode = mb.Discrete(start=0, doc="0 stuck, 1 forward, -1 backward")``
    """

    kind = "discrete"

    def __init__(self, start=0.0, *, unit: str = "", doc: str = ""):
        # (an expression is refused with the reason when the variable is made)
        super().__init__(start=start if isinstance(start, ca.SX) else float(start), unit=unit,
                         doc=doc)


class Reinit:
    """``reinit(x, value)``: at the instant its :func:`when` clause fires, the state ``x``
    jumps to ``value`` (evaluated with the values just before the event)."""

    def __init__(self, variable, value):
        self.variable = ca.SX(variable)
        self.value = ca.SX(value)
        if not (self.variable.is_symbolic() and self.variable.numel() == 1):
            raise DeclarationError(f"reinit({variable}, ...): the first argument must be one "
                                   f"scalar variable of the model")
        if self.value.numel() != 1:
            raise DeclarationError(f"reinit({variable}, {value}): the value must be a scalar")


class When:
    """A when clause (see :func:`when`)."""

    def __init__(self, condition, body):
        self.condition = condition
        self.body = list(body)


def when(condition, *body) -> When:
    """Equations active only at the instant ``condition`` becomes true (Modelica's
    ``when``): ``reinit(x, value)`` statements and assignments ``self.d == expr`` to
    :class:`Discrete` variables, which keep their value until the clause fires again.
    ``condition`` is a Boolean expression (a relation, a discrete variable, ``sample(...)``,
    ``initial()``) or a list of them: the clause fires when any becomes true. Yield it
    from ``equations()``.

    Example::

        yield mb.when(self.h < 0, mb.reinit(self.v, -self.e * mb.pre(self.v)),
                      self.bounces == mb.pre(self.bounces) + 1)
    """
    return When(condition, body)


def reinit(variable, value) -> Reinit:
    """Inside :func:`when`: the state ``variable`` jumps to ``value`` when the clause
    fires (the compiler keeps ``variable`` a state).

    Example: ``yield mb.when(self.h < 0, mb.reinit(self.v, -0.8 * mb.pre(self.v)))``"""
    return Reinit(variable, value)


def _hybrid():
    ctx = _FlattenContext.current()
    hybrid = getattr(ctx, "hybrid", None) if ctx is not None else None
    return hybrid


def _needs_hybrid(name):
    hybrid = _hybrid()
    if hybrid is None:
        raise DeclarationError(f"{name}() can only be used inside equations()")
    return hybrid


def pre(variable):
    """The value of a discrete variable (or relation) just before the current event: the
    left limit. Of a continuous variable inside a :func:`when` clause: its value at the event
    before any ``reinit``.

    Example: ``yield mb.when(self.h < 0, self.bounces == mb.pre(self.bounces) + 1)``"""
    return _needs_hybrid("pre").pre(ca.SX(variable))


def edge(variable):
    """True at the event where the Boolean ``variable`` becomes true: ``b and not pre(b)``.

    Example: ``yield self.starts == mb.functions.if_else(mb.edge(self.on), 1.0, 0.0)``
    (``on`` a :class:`Discrete` Boolean)"""
    b = ca.SX(variable)
    _discrete_argument("edge", b)
    return ca.logic_and(b, ca.logic_not(pre(b)))


def change(variable):
    """True at an event where the discrete ``variable`` changes: ``v != pre(v)``.

    Example: ``yield mb.when(mb.change(self.gear), self.shifts == mb.pre(self.shifts) + 1)``"""
    v = ca.SX(variable)
    _discrete_argument("change", v)
    return v != pre(v)


def _discrete_argument(name, expr):
    """edge() and change() watch discrete values: of a continuous variable they would never
    see a change at an event (it changes between them)."""
    hybrid = _hybrid()
    read = hybrid.reads_continuous(expr) if hybrid is not None else []
    if read:
        raise DeclarationError(
            f"{name}({describe(expr)}): {', '.join(str(s) for s in read[:4])} is continuous; "
            f"{name}() takes a Discrete variable or a relation (e.g. {name}(x > 0.5))")


def initial():
    """True during initialization (the events at the start time), false afterwards.

    Example: ``yield mb.when(mb.initial(), self.level == self.level0)``"""
    return _needs_hybrid("initial").initial_symbol()


def noEvent(expr):  # noqa: N802 - Modelica's name
    """``expr`` with its relations (and ``fabs``/``fmin``/``fmax``/``sign``) evaluated as
    written at every evaluation: no zero crossings, no events. For expressions that are
    smooth across the switch (or guards such as ``noEvent(x > 0)`` in ``sqrt``).

    Example (a square-root flow law, smooth enough through dp = 0)::

        sign = mb.functions.if_else(mb.noEvent(self.dp > 0), 1, -1)
        yield self.q == sign * mb.functions.sqrt(mb.functions.fabs(self.dp))
    """
    hybrid = _hybrid()
    expr = ca.SX(expr)
    return expr if hybrid is None else hybrid.literal(expr)


def sample(start, interval):
    """A Boolean that is true at the time events ``start + k*interval`` (k = 0, 1, ...)
    and false between them; ``when(sample(0, 0.1), ...)`` fires every 0.1 s.
    ``start`` and ``interval`` are numbers or parameter expressions.

    Example: ``yield mb.when(mb.sample(0, self.Ts), self.y == self.u)`` (a sampler)"""
    return _needs_hybrid("sample").sample(start, interval)


# ---------------------------------------------------------------------------------------
# Relations: while equations() run, <, <=, >, >= on casadi SX go through the flattener's
# hybrid collector, which returns a relation variable where the comparison involves
# continuous variables. Installed around the collection of equations only.
# ---------------------------------------------------------------------------------------

_ORIGINAL = {name: getattr(ca.SX, name) for name in ("__lt__", "__le__", "__gt__", "__ge__")}
#: (operator text, crossing function is rhs - lhs (True) or lhs - rhs, strict)
_RELATIONS = {"__lt__": ("<", True, True), "__le__": ("<=", True, False),
              "__gt__": (">", False, True), "__ge__": (">=", False, False)}


def _relation_method(name):
    original = _ORIGINAL[name]
    text, rhs_minus_lhs, strict = _RELATIONS[name]

    def relation(a, b):
        result = original(a, b)
        if result is NotImplemented:
            return result
        hybrid = _hybrid()
        if hybrid is None or not hybrid.active:
            return result
        def crossing():  # made only for relations on continuous variables or time
            a_sx, b_sx = ca.SX(a), ca.SX(b)
            return b_sx - a_sx if rhs_minus_lhs else a_sx - b_sx
        return hybrid.relation(result, crossing, strict, (a, text, b))
    return relation


#: Python's abs() and SX's own methods (x.fabs(), x.fmax(y), ...) switch at events like
#: :mod:`mbmodel.functions`' (Modelica's abs, sign, max, min): as casadi's ops they were
#: accepted and never switched (an integrator steps over the kink). numpy's ufuncs
#: (np.abs, np.maximum) and casadi's module functions (ca.fabs) do not go through these
#: methods and stay as written (docs/components.md says so).
_SWITCHING = ("__abs__", "fabs", "sign", "fmax", "fmin")
_ORIGINAL_SWITCHING = {name: getattr(ca.SX, name) for name in _SWITCHING}


def _switching_method(name):
    from . import functions
    switching = {"__abs__": functions.fabs, "fabs": functions.fabs, "sign": functions.sign,
                 "fmax": functions.fmax, "fmin": functions.fmin}[name]
    return lambda *args: switching(*args)


_ORIGINAL_EQ = ca.SX.__eq__
_ORIGINAL_UFUNC = ca.SX.__array_ufunc__


def _shape_checked_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy's ``==`` with an array on the left reaches SX through ``np.equal``: the same
    check as :func:`_shape_checked_eq`."""
    if ufunc is np.equal and method == "__call__" and len(inputs) == 2:
        return _shape_checked_eq(*inputs)
    return _ORIGINAL_UFUNC(self, ufunc, method, *inputs, **kwargs)


def _shape_checked_eq(a, b):
    """``a == b`` (an equation) refused where the sides differ in shape and neither is a
    scalar: casadi pairs a (3, 3) matrix with a (3,) vector row by row, where numpy pairs it
    column by column and Modelica refuses it (docs/components.md: only a scalar is spread)."""
    try:
        shape_a, shape_b = ca.SX(a).shape, ca.SX(b).shape
    except (NotImplementedError, TypeError, ValueError, RuntimeError):
        return _ORIGINAL_EQ(a, b)
    if shape_a != shape_b and shape_a != (1, 1) and shape_b != (1, 1):
        from .core import _FlattenContext, _where
        ctx = _FlattenContext.current()
        comp = getattr(ctx, "component", None) if ctx is not None else None
        where = f"{_where(comp)}: " if comp is not None else ""
        raise DeclarationError(
            f"{where}an equation between sides of shapes {shape_a} and {shape_b}: only a "
            f"scalar is spread over the other side; give both sides one shape (a vector "
            f"against each row of a matrix: write one equation per row)")
    return _ORIGINAL_EQ(a, b)


class RelationsSwitchAtEvents:
    """Context manager: comparisons on SX create relation variables while it is active in
    this thread, and abs/sign/max/min through SX's methods switch at events (re-entrant;
    the methods are swapped once)."""

    _depth = 0
    _lock = threading.Lock()   # (compiles in two threads: the count and the swap together)

    def __enter__(self):
        with RelationsSwitchAtEvents._lock:
            if RelationsSwitchAtEvents._depth == 0:
                for name in _ORIGINAL:
                    setattr(ca.SX, name, _relation_method(name))
                for name in _SWITCHING:
                    setattr(ca.SX, name, _switching_method(name))
                ca.SX.__eq__ = _shape_checked_eq
                ca.SX.__array_ufunc__ = _shape_checked_ufunc
            RelationsSwitchAtEvents._depth += 1

    def __exit__(self, *exc):
        with RelationsSwitchAtEvents._lock:
            RelationsSwitchAtEvents._depth -= 1
            if RelationsSwitchAtEvents._depth == 0:
                for name, method in {**_ORIGINAL, **_ORIGINAL_SWITCHING}.items():
                    setattr(ca.SX, name, method)
                ca.SX.__eq__ = _ORIGINAL_EQ
                ca.SX.__array_ufunc__ = _ORIGINAL_UFUNC
        return False


def relation_text(parts) -> str:
    a, op, b = parts
    return f"{describe(ca.SX(a))} {op} {describe(ca.SX(b))}"


def check_when(comp, item: When):
    """A clear error for a malformed when clause."""
    if not item.body:
        raise DeclarationError(f"{_where(comp)}: when(...) has no equations; give reinit(...) "
                               f"or discrete assignments d == expr")
    for stmt in item.body:
        if not isinstance(stmt, (Reinit, ca.SX)):
            raise DeclarationError(
                f"{_where(comp)}: when(...) takes reinit(x, value) and assignments "
                f"'self.d == expr' to Discrete variables, not {stmt!r}")
