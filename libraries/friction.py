"""The stick–slip state machine shared by the rotational and translational friction
elements (after MSL ``PartialFriction``): forward sliding, stuck, backward sliding (and
free, for a disengaged clutch), switching at events.

A friction element gives its relative velocity ``w_relfric`` and acceleration
``a_relfric``, the friction force at zero velocity ``tau0`` and its static peak
``tau0_max``, and ``free`` (not in contact). The state machine adds the path parameter
``sa`` of the characteristic: while stuck the acceleration is 0 and ``sa`` is the friction
force that holds; while sliding ``sa`` is the acceleration offset by the sliding force.
Sticking ends when ``sa`` exceeds the static peak, sliding ends where the velocity crosses
zero (unless the force then exceeds the peak, and the element slides on the other way).

Equations (``mode``: Forward 1, Stuck 0, Backward -1, Free 2, Unknown 3 before the start)::

    startForward  = pre(mode) == Stuck and (sa > tau0_max or pre(startForward) and sa > tau0)
                    or pre(mode) == Backward and w_relfric > w_small
                    or initial() and w_relfric > 0
    startBackward = the mirror image
    locked = not free and not (pre(mode) == Forward or startForward
                               or pre(mode) == Backward or startBackward)
    a_relfric = 0                 if locked
                sa                if free
                sa - tau0_max     if startForward
                sa + tau0_max     if startBackward
                sa - tau0_max     if pre(mode) == Forward
                sa + tau0_max     otherwise
    mode = Free if free, Forward if (pre(mode) in (Forward, Free) or startForward) and
           w_relfric > 0, Backward in the mirror case, else Stuck
"""

from __future__ import annotations

import casadi as ca
import numpy as np

import mbmodel as mb
from mbmodel.functions import if_else

from .drive_trains import FrictionLock, lock_holder

FORWARD, STUCK, BACKWARD, FREE, UNKNOWN = 1, 0, -1, 2, 3

_and, _or, _not = ca.logic_and, ca.logic_or, ca.logic_not


class PartialFriction(mb.Model):
    """Partial model: the stick–slip state machine (see the module doc). Subclasses yield
    ``self.friction_equations(w_relfric, a_relfric, tau0, tau0_max, free)`` and use
    ``self.locked``, ``self.sa``, ``self.startForward``, ``self.startBackward`` and
    ``pre(self.mode)`` in their force law."""

    w_small = mb.Parameter(1e10, doc="relative velocity above which a reversal passes "
                                     "through stuck without stopping (only for jumps)")
    sa = mb.Variable(0.0, doc="path parameter of the friction characteristic")
    startForward = mb.Discrete(0, doc="1 at the instant forward sliding starts")
    startBackward = mb.Discrete(0, doc="1 at the instant backward sliding starts")
    locked = mb.Discrete(0, doc="1 while stuck")
    mode = mb.Discrete(UNKNOWN, doc="1 forward, 0 stuck, -1 backward, 2 free")

    def friction_equations(self, w_relfric, a_relfric, tau0, tau0_max, free,
                           forward_room=True, backward_room=True):
        """The state machine; ``forward_room``/``backward_room`` (conditions) say whether
        sliding that way is possible (false at a hard stop)."""
        pre_mode = mb.pre(self.mode)
        was = {name: pre_mode == value for name, value in
               (("forward", FORWARD), ("stuck", STUCK), ("backward", BACKWARD),
                ("free", FREE))}
        sa = self.sa
        yield self.startForward == _or(_or(
            _and(_and(was["stuck"], forward_room),
                 _or(sa > tau0_max, _and(mb.pre(self.startForward), sa > tau0))),
            _and(was["backward"], w_relfric > self.w_small)),
            _and(mb.initial(), w_relfric > 0))
        yield self.startBackward == _or(_or(
            _and(_and(was["stuck"], backward_room),
                 _or(sa < -tau0_max, _and(mb.pre(self.startBackward), sa < -tau0))),
            _and(was["forward"], w_relfric < -self.w_small)),
            _and(mb.initial(), w_relfric < 0))
        yield self.locked == _and(_not(free), _not(_or(
            _or(was["forward"], self.startForward), _or(was["backward"], self.startBackward))))
        if lock_holder(self) is None:  # else a multibody joint gives sa (holding_equation)
            yield a_relfric == if_else(self.locked, 0, if_else(free, sa, if_else(
                self.startForward, sa - tau0_max, if_else(
                    self.startBackward, sa + tau0_max, if_else(
                        was["forward"], sa - tau0_max, sa + tau0_max)))))
        else:
            yield mb.WrittenElsewhere(1)
        forward = _and(_and(_or(_or(was["forward"], was["free"]), self.startForward),
                            w_relfric > 0), forward_room)
        backward = _and(_and(_or(_or(was["backward"], was["free"]), self.startBackward),
                             w_relfric < 0), backward_room)
        yield self.mode == if_else(free, FREE, if_else(forward, FORWARD, if_else(
            backward, BACKWARD, STUCK)))

    def explain_non_finite(self, variable, analysis):
        return ("while it is stuck, its holding force is undetermined if something else "
                "also fixes the motion of the same rigidly connected parts: a prescribed "
                "motion (a Position or Speed source on them), or another friction "
                "element holding them against the support (a bearing friction and "
                "a brake on one shaft). Then the holding force may be split in any way: the "
                "linear system is singular, as it is in Modelica's friction elements. Keep "
                "one element fixing each rigid group of parts, or put a compliance (a stiff "
                "spring) between them. On a kinematic loop, its speed may also pass through "
                "0 at a turning point of the loop (a rocker at its limit position, a piston "
                "at a dead centre) while the mechanism moves on: it cannot stick there, and "
                "trying to is singular; put the friction on a joint that does not turn back "
                "there, or add a compliance")

    # -- friction against a fixed support that a multibody joint can lock ----------------
    # Such an element defines friction_terms() (the arguments of friction_equations) and
    # sliding_force() (its force while not stuck, from the velocity and the discrete state).

    def support_friction_equations(self, force):
        """The state machine and ``force``: ``sa`` while stuck, the sliding force else."""
        yield from self.friction_equations(*self.friction_terms())
        yield force == if_else(self.locked, self.sa, self.sliding_force())

    def lock_coupling(self, flange, inertia=0.0):
        """:class:`~mbmodel.libraries.drive_trains.FrictionLock` seen from ``flange`` (for
        ``drive_coupling``), with ``inertia`` moving along; ``None`` with a support flange
        of its own, which may move."""
        if getattr(self, "use_support", False):
            return None
        if flange is self.flange_a:
            other = self.flange_b
        elif flange is self.flange_b:
            other = self.flange_a
        else:
            return None
        return FrictionLock(self, other, self.locked, self.sliding_force(), inertia)

    def holding_equation(self, force):
        """The equation for ``sa`` when a multibody joint locks this element: ``force`` (the
        holding force the joint computes) while stuck, else the inverse of the state
        machine's acceleration equation."""
        _, a, _, force0_max, free = self.friction_terms()
        was_forward = mb.pre(self.mode) == FORWARD
        return self.sa == if_else(self.locked, force, if_else(free, a, if_else(
            self.startForward, a + force0_max, if_else(
                self.startBackward, a - force0_max, if_else(
                    was_forward, a + force0_max, a - force0_max)))))

    def sliding(self, characteristic, w_relfric):
        """The sliding force ``characteristic(|w|)`` with the sign of the sliding
        direction the state machine is in (as MSL writes it)."""
        was_forward = mb.pre(self.mode) == FORWARD
        return if_else(self.startForward, characteristic(w_relfric), if_else(
            self.startBackward, -characteristic(-w_relfric), if_else(
                was_forward, characteristic(w_relfric), -characteristic(-w_relfric))))


def table_function(table, what: str):
    """``w -> value``: linear interpolation in the rows ``[w, value]`` of ``table`` (w
    increasing from 0), extrapolated linearly beyond the last row (as MSL's
    ``Vectors.interpolate``); one row is a constant. Smooth between the rows: no events."""
    table = np.atleast_2d(np.asarray(table, dtype=float))
    if table.ndim != 2 or table.shape[1] != 2 or not np.all(np.isfinite(table)):
        raise mb.DeclarationError(f"{what} must be rows [velocity, value] of finite numbers, "
                                  f"not {table.tolist()}")
    ws, values = table[:, 0], table[:, 1]
    if np.any(np.diff(ws) <= 0):
        raise mb.DeclarationError(f"{what}: the velocities of its rows must increase")
    if np.any(values < 0):
        raise mb.DeclarationError(f"{what}: friction opposes the motion, so its values must not "
                                  f"be negative (a negative one drives it), not "
                                  f"{table.tolist()}")
    if len(ws) == 1:
        return lambda w: ca.SX(values[0])

    def at(w):
        out = values[-2] + (values[-1] - values[-2]) / (ws[-1] - ws[-2]) * (w - ws[-2])
        for k in range(len(ws) - 2, -1, -1):
            slope = (values[k + 1] - values[k]) / (ws[k + 1] - ws[k])
            out = if_else(w < ws[k + 1], values[k] + slope * (w - ws[k]), out)
        return mb.noEvent(out)
    return at


class PartialPressedFriction(PartialFriction):
    """Partial model: friction pressed by a normal force signal (clutches, brakes): free
    while ``fn <= 0``, ``cgeo*fn*mu(|w|)`` while sliding, holding up to
    ``peak*cgeo*fn*mu(0)``. Subclasses set ``self.mu`` (:func:`table_function`) and yield
    ``self.pressed_friction_equations(w, a, force)``."""

    peak = mb.Parameter(1.0, min=1.0, doc="peak*mu(0) = largest coefficient while stuck")
    cgeo = mb.Parameter(1.0, min=0.0, doc="geometry constant (friction distribution)")
    fn_max = mb.Parameter(1.0, unit="N", min=0.0, doc="largest normal force")
    f_normalized = mb.Input(doc="normal force signal 0..1 (engaged if > 0)")
    fn = mb.Variable(unit="N", doc="normal force")
    free = mb.Discrete(0, doc="1 while released (fn <= 0)")

    def pressed_terms(self, w, a):
        """The arguments of ``friction_equations`` for relative velocity ``w``."""
        f0 = self.mu(0.0) * self.cgeo * self.fn
        return w, a, f0, self.peak * f0, self.free

    def pressed_sliding(self, w):
        """The force while not stuck: 0 while released, else ``cgeo*fn*(+-mu)``."""
        return if_else(self.free, 0, self.cgeo * self.fn * self.sliding(self.mu, w))

    def pressed_friction_equations(self, w, a, force):
        yield self.fn == self.fn_max * self.f_normalized
        yield self.free == (self.fn <= 0)
        yield from self.friction_equations(*self.pressed_terms(w, a))
        yield force == if_else(self.locked, self.sa, self.pressed_sliding(w))
