"""Forces and torques on frames: from the world, between two frames, and line-force
elements (springs and dampers acting along the line between two frame origins).

Every element states the spatial force it exerts on what is connected to each frame; the
flows of its frames are the opposite (positive into the component). Elements have no mass
and no orientation relation between their frames (they never close a kinematic loop).
"""

from __future__ import annotations

import casadi as ca

from mbmodel import Input, Model, Parameter, Variable
from mbmodel.libraries import translational

from . import spatial as sp
from .frames import Frame, apply_force

RESOLVE = ("world", "frame_b")


def _zero3():
    return ca.SX.zeros(3, 1)


class _Resolved(Model):
    carries_no_inertia = True  # a force on its frames, no inertia (joints._ends_at_loop_cut)

    def __init__(self, resolve_in: str = "world", **modifiers):
        super().__init__(**modifiers)
        if resolve_in not in RESOLVE:
            from mbmodel import DeclarationError
            raise DeclarationError(f"{type(self).__name__}: resolve_in must be one of {RESOLVE}")
        self.resolve_in = resolve_in

    def _in_frame(self, vector, frame):
        return frame.R @ vector if self.resolve_in == "world" else vector


class WorldForce(_Resolved):
    """External force ``force`` (input, resolved in the world or in frame_b) acting at
    frame_b's origin (MSL ``Forces.WorldForce``)."""

    force = Input(shape=3, unit="N", doc="Force acting at frame_b")
    frame_b = Frame()

    def equations(self):
        F = self._in_frame(self.force, self.frame_b)
        yield from apply_force(self, self.frame_b, ca.vertcat(_zero3(), F))


class WorldTorque(_Resolved):
    """External torque ``torque`` (input, resolved in the world or in frame_b) acting on
    frame_b (MSL ``Forces.WorldTorque``)."""

    torque = Input(shape=3, unit="N.m", doc="Torque acting at frame_b")
    frame_b = Frame()

    def equations(self):
        T = self._in_frame(self.torque, self.frame_b)
        yield from apply_force(self, self.frame_b, ca.vertcat(T, _zero3()))


class Force(Model):
    """Force ``force`` (input, resolved in frame_b) acting at frame_b's origin, with the
    opposite force and the moment of the pair acting on frame_a (MSL ``Forces.Force``)."""

    carries_no_inertia = True  # a force on its frames, no inertia (joints._ends_at_loop_cut)

    force = Input(shape=3, unit="N", doc="Force on frame_b, resolved in frame_b")
    frame_a = Frame()
    frame_b = Frame()

    def equations(self):
        fa, fb = self.frame_a, self.frame_b
        F_world = fb.R.T @ self.force
        r_ab = fb.r_0 - fa.r_0
        yield from apply_force(self, fb, ca.vertcat(_zero3(), self.force))
        on_a = -F_world
        yield from apply_force(self, fa, ca.vertcat(fa.R @ sp.cross(r_ab, on_a), fa.R @ on_a))


class Torque(Model):
    """Torque ``torque`` (input, resolved in frame_b) acting on frame_b and its opposite on
    frame_a (MSL ``Forces.Torque``)."""

    carries_no_inertia = True  # a force on its frames, no inertia (joints._ends_at_loop_cut)

    torque = Input(shape=3, unit="N.m", doc="Torque on frame_b, resolved in frame_b")
    frame_a = Frame()
    frame_b = Frame()

    def equations(self):
        fa, fb = self.frame_a, self.frame_b
        yield from apply_force(self, fb, ca.vertcat(self.torque, _zero3()))
        yield from apply_force(self, fa, ca.vertcat(-(fa.R @ (fb.R.T @ self.torque)), _zero3()))


class _LineForce(Model):
    """Force of magnitude ``f`` along the line from frame_a to frame_b (positive pulls the
    origins together); ``length`` and ``length_rate`` are available to subclasses."""

    carries_no_inertia = True  # a force on its frames, no inertia (joints._ends_at_loop_cut)

    frame_a = Frame()
    frame_b = Frame()
    length = Variable(1.0, unit="m", doc="Distance between the origins")
    f = Variable(0.0, unit="N", doc="Tension (positive pulls frame_a and frame_b together)")
    s_small = 1e-10

    def line_equations(self, tension):
        fa, fb = self.frame_a, self.frame_b
        r_rel = fb.r_0 - fa.r_0
        yield self.length == ca.sqrt(r_rel.T @ r_rel)
        yield self.f == tension
        e = r_rel / ca.fmax(self.length, self.s_small)
        # Tension pulls b towards a and a towards b.
        yield from apply_force(self, fb, ca.vertcat(_zero3(), fb.R @ (-self.f * e)))
        yield from apply_force(self, fa, ca.vertcat(_zero3(), fa.R @ (self.f * e)))

    def length_rate(self):
        fa, fb = self.frame_a, self.frame_b
        r_rel = fb.r_0 - fa.r_0
        e = r_rel / ca.fmax(self.length, self.s_small)
        v_rel = fb.R.T @ fb.v[3:6] - fa.R.T @ fa.v[3:6]
        return e.T @ v_rel


class Spring(_LineForce):
    """Linear spring between the origins of frame_a and frame_b:
    ``f = c (length - s_unstretched)`` (MSL ``Forces.Spring``, massless)."""

    c = Parameter(1.0, unit="N/m", min=0.0, doc="Spring constant")
    s_unstretched = Parameter(0.0, unit="m", min=0.0, doc="Unstretched spring length")

    def equations(self):
        yield from self.line_equations(self.c * (self.length - self.s_unstretched))


class Damper(_LineForce):
    """Linear damper between the origins: ``f = d der(length)`` (MSL ``Forces.Damper``)."""

    d = Parameter(0.0, unit="N.s/m", min=0.0, doc="Damping constant")

    def equations(self):
        yield from self.line_equations(self.d * self.length_rate())


class SpringDamperParallel(_LineForce):
    """Spring and damper in parallel: ``f = c (length - s_unstretched) + d der(length)``
    (MSL ``Forces.SpringDamperParallel``)."""

    c = Parameter(1.0, unit="N/m", min=0.0, doc="Spring constant")
    s_unstretched = Parameter(0.0, unit="m", min=0.0, doc="Unstretched spring length")
    d = Parameter(0.0, unit="N.s/m", min=0.0, doc="Damping constant")

    def equations(self):
        yield from self.line_equations(self.c * (self.length - self.s_unstretched)
                                       + self.d * self.length_rate())


class LineForceWithFlanges(_LineForce):
    """A force along the line between the origins of frame_a and frame_b, set by a 1-D
    translational drive connected to ``flange_a``/``flange_b`` (a hydraulic cylinder, a
    spring, a linear motor): MSL ``Forces.LineForceWithMass`` without its mass. The flanges
    measure the distance, ``flange_a.s = 0``, ``flange_b.s = length``; what the 1-D drive
    pushes at ``flange_b`` pushes the frames apart (reactions at ``flange_a`` belong to
    frame_a and need no connection).

    Equations::

        flange_a.s = 0,   flange_b.s = length,   f = -flange_b.f   (tension)

    Example::

        strut = LineForceWithFlanges()   # frame_a on the base, frame_b on the boom
    """

    flange_a = translational.Flange(doc="1-D side at frame_a (s = 0)")
    flange_b = translational.Flange(doc="1-D side at frame_b (s = length)")

    def equations(self):
        yield from self.line_equations(-self.flange_b.f)
        yield self.flange_a.s == 0
        yield self.flange_b.s == self.length
