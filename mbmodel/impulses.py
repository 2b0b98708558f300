"""Lost impulses: a variable whose time derivative the model uses, jumping at an event.

An inverse model whose reference angle follows a ``Step`` differentiates the step: the
derivative of each side is 0, so the speed, the acceleration and the torque come out as
if the joint never moved, and the impulse of the jump is nowhere in the results (Modelica
tools do the same, silently). The simulators ask :class:`ImpulseWatch` at every event
whether such a variable jumps there, and :class:`~mbmodel.errors.LostImpulseWarning` names
it:

* in a model with events (:mod:`mbmodel.events`), the values before the event iteration
  (the discrete values of before) against those after it, at the same instant; an event
  that re-initializes states is left alone (a modelled impact makes its jumps on purpose);
* in a model without, at a time event (a declared ``time_event`` or an input's
  breakpoint), just before and just after the instant at the same states; there the
  variables that depend on algebraic unknowns are left out (their values after the instant
  would need a solve).

Watched are the differentiated variables that are neither states nor aliases of states.
A jump counts where it is large against the variable's values there and at the events
before, and where it measures the same from two probe distances (curvature and round-off
do not). A jump that an element makes at the event (friction that sticks as the motion
comes to rest; ``noEvent(sign(w))`` friction whose speed reaches 0 there) cannot be told
from a reference's, so the message names both causes; where such an element's switch is
blurred by round-off (a speed reaching 0 like ``(T - t)^5``), it may go unmeasured.
"""

from __future__ import annotations

import warnings

import casadi as ca
import numpy as np

from .core import time as TIME
from .errors import LostImpulseWarning
from .workspace import built, workspace

#: A watched variable "jumps" where its values on either side of the instant differ by more
#: than this relative to their magnitudes and to the largest magnitude it had at the events
#: checked before (a motor speed of 4e-8 rad/s moving by 1e-9 as a motion settles is no
#: jump), ...
JUMP_TOLERANCE = 1e-6
#: ... and than the run's absolute tolerance: a speed held at 2e-9 rad/s before a motion
#: starts, moving by 1e-14 at its start, is no jump either ...
#: ... and where the jumps measured from two probe distances, h and h/4, agree to within
#: this fraction: a jump does not depend on the distance, the rest of a curvature (a fast
#: sine at a large time) falls with its square, round-off changes at random.
AGREEMENT = 0.25

__all__ = ["ImpulseWatch", "JUMP_TOLERANCE", "AGREEMENT"]


class ImpulseWatch:
    """Checks the watched variables of ``cm`` across instants and warns once per variable.

    Example::

        watch = ImpulseWatch(cm, atol=1e-10)
        watch.check_time_event(t, x, z, u_of, p)       # a model without events
        watch.compare(t, before, after)                # outputs across an event iteration
    """

    def __init__(self, cm, atol: float = 0.0, t_start: float = -np.inf):
        self.cm = cm
        self.atol = atol  # the run's absolute tolerance: smaller jumps are noise
        self.t_start = t_start  # no values before it: instants closer to it are not checked
        self.warned: set[str] = set()
        self.scale: dict[int, float] = {}  # output index -> largest magnitude seen

    @property
    def active(self) -> bool:
        """Whether the model has variables to watch."""
        return bool(watched_derivatives(self.cm))

    def outputs(self, x, z, u, p, t) -> np.ndarray:
        """The watched variables at one point, in :func:`watched_derivatives`' order
        (a function of those alone, through buffers: the whole output function of the r3
        robot costs a third of a millisecond a call, and an event asks for up to eight)."""
        return _watched_values(self.cm)(x, z, u, p, t).reshape(-1).copy()

    def check_time_event(self, t, x, z, inputs_at, p):
        """A time event at ``t`` in a model without events: ``x`` and ``z`` are the values
        there, ``inputs_at(s)`` the input vector at a time ``s``. Only time moves across the
        instant, so the variables that depend on ``z`` (which would need a solve after it)
        are left out."""
        if self.active:
            self.across(t, (x, z, inputs_at), (x, z, inputs_at), p, with_algebraic=False)

    def across(self, t, left, right, p, with_algebraic=True):
        """Warn of the watched variables that jump at the instant ``t``: ``left`` and
        ``right`` are ``(x, z, inputs_at)`` before and after it (``inputs_at(s)`` the input
        vector, discrete values included, at a time ``s``). The outputs are taken at two
        points on either side, at ``t -+ h`` and ``t -+ 2h`` (``h = 1e-9 max(1, |t|)``),
        less what their slopes on either side account for over the points' distance (a
        current changing at 1e4 A/s moves by 2e-5 between them): what is left is a jump,
        made by time (a reference's ``if`` on it) or by the event (a discrete value). It is
        measured at ``h/4`` as well, and must agree (:data:`AGREEMENT`). At an instant
        within ``2h`` of the run's start the points before it would lie before the start,
        where the model's references may read otherwise (a Sine from t = 0 is 0 before it:
        an event at 1.8e-15 saw a speed jump from 0 to 2 pi): both sides are then taken at
        the instant itself, which sees the jumps the event makes (a discrete value), not
        those of time."""
        step = 1e-9 * max(1.0, abs(t))

        def at(point, s):
            x, z, inputs_at = point
            return self.outputs(x, z, inputs_at(s), p, s)
        if t - 2 * step < self.t_start:
            self.compare(t, at(left, t), at(right, t), with_algebraic)
            return

        def measured(h):
            far_left, before = at(left, t - 2 * h), at(left, t - h)
            after, far_right = at(right, t + h), at(right, t + 2 * h)
            drift = 0.5 * ((before - far_left) + (far_right - after))  # per h, either side
            return before + drift, after - drift
        before, after = measured(step)
        self.compare(t, before, after, with_algebraic, closer=lambda: measured(step / 4))

    def compare(self, t, before, after, with_algebraic=True, closer=None):
        """Warn of the watched variables whose values ``before`` and ``after`` the instant
        ``t`` (in :func:`watched_derivatives`' order) differ; ``closer()`` gives them
        measured at a shorter distance, whose jump must agree."""
        watched = watched_derivatives(self.cm)
        if not watched:
            return
        near = None
        for k, (_, name, derivative, on_algebraic) in enumerate(watched):
            a, b = float(before[k]) + 0.0, float(after[k]) + 0.0  # (no -0)
            seen = self.scale.get(k, 0.0)
            if np.isfinite(a) and np.isfinite(b):
                self.scale[k] = max(seen, abs(a), abs(b))
            if name in self.warned or (on_algebraic and not with_algebraic):
                continue
            jump = b - a
            if not abs(jump) > max(JUMP_TOLERANCE * max(abs(a), abs(b), seen), self.atol):
                continue
            if closer is not None:
                if near is None:
                    near = closer()
                other = float(near[1][k]) - float(near[0][k])
                if not abs(other - jump) <= AGREEMENT * max(abs(jump), abs(other)):
                    continue
            self.warned.add(name)
            warnings.warn(LostImpulseWarning(
                f"'{name}' jumps at t = {t:.12g} (from {a:.6g} to {b:.6g}), and the model "
                f"uses its derivative '{derivative}': the derivative of a jump is an impulse, "
                f"which the results do not hold (they go on as if there were none). Either "
                f"a reference jumps there that is not as smooth as the derivatives taken of "
                f"it (a Step or a Pulse in an angle, a Ramp in a speed: use a smooth "
                f"reference such as blocks.FilteredPTP or blocks.PolynomialPTP, or a filter "
                f"such as Position(exact=False)), or an element switches there (friction "
                f"that sticks, or noEvent(sign(w)) friction, as its speed reaches 0): then "
                f"the jump is the element's, and only its impulse is missing"))


def watched_derivatives(cm) -> list:
    """``(output index, name, its derivative's name, whether it depends on algebraic
    unknowns)`` of the variables whose time derivative the model uses, other than states
    and aliases of states; built once per model."""
    return built(workspace(cm, "impulses"), "watched", lambda: _watched(cm))


def _watched(cm) -> list:
    system = cm.system
    if system is None:
        return []
    states = set(cm.states)
    found = []
    for var in system.variables:
        if var.derivative is None or var.kind != "unknown":
            continue
        root = cm.alias_root(var.name)[0]
        index = cm.output_index.get(var.name)
        if root is None or root in states or index is None:
            continue
        found.append((index, var.name, system.variables[var.derivative].name))
    if not found:
        return []
    on_algebraic = _depends_on_algebraic(cm)
    return [(index, name, derivative, bool(on_algebraic[index]))
            for index, name, derivative in found]


def _watched_values(cm):
    """``(x, z, u, p, t) ->`` the watched variables, through buffers; built once per model
    and thread (a buffer is not shared)."""
    def build():
        from .integrators import Buffered
        sym = cm.symbols
        args = [sym.x, sym.z, sym.u, sym.p, TIME]
        rows = [index for index, *_ in watched_derivatives(cm)]
        values = cm.output_function(*args)[rows] if rows else ca.SX(0, 1)
        return Buffered(ca.Function("watched_values", args, [values]))
    return built(workspace(cm, "impulses"), "values", build)


def _depends_on_algebraic(cm) -> np.ndarray:
    """Per output: whether it depends on the algebraic unknowns ``z`` (structurally)."""
    n_out = cm.output_function.size1_out(0)
    if not cm.symbols.z.numel():
        return np.zeros(n_out, dtype=bool)
    pattern = cm.output_function.sparsity_jac(1, 0)
    rows = np.zeros(n_out, dtype=bool)
    rows[np.asarray(pattern.get_triplet()[0], dtype=int)] = True
    return rows
