"""Mathematical functions for equations (re-exported from casadi so models import one place).

``fabs``, ``fmin``, ``fmax`` and ``sign`` are not smooth where they switch branches; inside
``equations()`` they switch at events, like Modelica's ``abs``, ``min``, ``max`` and
``sign``: the branch in force stays fixed while the integrator runs and changes where the
zero-crossing function says so (:mod:`mbmodel.discrete`). Wrap them in
:func:`mbmodel.noEvent` to evaluate them as written instead. ``floor``, ``ceil``,
``integer``, ``div``, ``mod`` and ``rem`` step at events, like Modelica's (their value is
held between events); Python's ``//`` and ``%`` on model variables do not.

Example: ``from mbmodel.functions import sin, if_else``.
"""

import casadi as _ca
from casadi import (acos, asin, atan, atan2, cos, cosh, exp, if_else, log, logic_and,
                    logic_not, logic_or, sin, sinh, sqrt, tan, tanh)

__all__ = ["sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
           "log", "sqrt", "fabs", "fmin", "fmax", "sign", "if_else", "logic_and", "logic_or",
           "logic_not", "abs_", "min_", "max_", "floor", "ceil", "integer", "div", "mod",
           "rem"]


def _switching() -> bool:
    from .core import _FlattenContext
    ctx = _FlattenContext.current()
    hybrid = getattr(ctx, "hybrid", None) if ctx is not None else None
    return hybrid is not None and hybrid.active


def fabs(x):
    """|x|; switches branch at an event where x crosses 0 (inside equations())."""
    if not _switching():
        return _ca.fabs(x)
    x = _ca.SX(x)
    return if_else(x >= 0, x, -x)


def fmax(a, b):
    """The larger of a and b; switches at an event where they cross (inside equations())."""
    if not _switching():
        return _ca.fmax(a, b)
    a, b = _ca.SX(a), _ca.SX(b)
    return if_else(a >= b, a, b)


def fmin(a, b):
    """The smaller of a and b; switches at an event where they cross (inside equations())."""
    if not _switching():
        return _ca.fmin(a, b)
    a, b = _ca.SX(a), _ca.SX(b)
    return if_else(a <= b, a, b)


def sign(x):
    """-1, 0 or 1; switches at events where x crosses 0 (inside equations())."""
    if not _switching():
        return _ca.sign(x)
    x = _ca.SX(x)
    return if_else(x > 0, 1, if_else(x < 0, -1, 0))


def floor(x):
    """The largest integer not above x (Modelica's ``floor``); inside equations() it is
    held between events and steps at the events where x crosses an integer.

    Example: ``yield self.level == floor(self.h / 0.1)`` (a quantizer)."""
    if not _switching():
        return _ca.floor(x)
    from .core import _FlattenContext
    return _FlattenContext.current().hybrid.floor_of(_ca.SX(x))


def ceil(x):
    """The smallest integer not below x (Modelica's ``ceil``), stepping at events."""
    return -floor(-_ca.SX(x)) if _switching() else _ca.ceil(x)


def integer(x):
    """Modelica's ``integer``: :func:`floor`."""
    return floor(x)


def div(x, y):
    """x / y truncated toward zero (Modelica's ``div``), stepping at events."""
    if not _switching():
        q = _ca.SX(x) / y
        return _ca.if_else(q >= 0, _ca.floor(q), _ca.ceil(q))
    q = _ca.SX(x) / y
    return if_else(q >= 0, floor(q), ceil(q))


def mod(x, y):
    """x - floor(x / y) * y (Modelica's ``mod``: the sign of y), stepping at events."""
    return x - floor(_ca.SX(x) / y) * y


def rem(x, y):
    """x - div(x, y) * y (Modelica's ``rem``: the sign of x), stepping at events."""
    return x - div(x, y) * y


abs_ = fabs
min_ = fmin
max_ = fmax
