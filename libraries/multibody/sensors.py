"""Sensors: absolute and relative kinematics, cut force and torque. Kinematic sensors exert
no force; the cut sensor is a rigid, zero-length connection that reports what it passes."""

from __future__ import annotations

import casadi as ca
import numpy as np

import mbmodel as mb
from mbmodel import Branch, Model, Output

from . import spatial as sp
from .frames import (Frame, apply_force, classical_acceleration, cut_force, rigid_forces,
                     rigid_kinematics, world_of)


def _no_force(component, frame):
    yield from apply_force(component, frame, ca.SX.zeros(6, 1))


class AbsoluteSensor(Model):
    """Absolute kinematics of frame_a: position ``r`` and velocity ``v`` of the origin and
    its acceleration ``a`` (gravity excluded, i.e. d²r/dt²), all resolved in the world;
    angular velocity ``w`` and acceleration ``z`` resolved in frame_a; and the orientation
    in two conventions:

    * ``R`` — world -> frame_a coordinates (``v_a = R v_world``), the Frame's ``R`` and the
      MSL's orientation object ``T``; its rows are frame_a's axes resolved in the world;
    * ``R_world`` = ``R'`` — frame_a -> world coordinates (``v_world = R_world v_a``), the
      rotation *of* frame_a in the world ("body to world"): its columns are frame_a's axes
      resolved in the world. This is Pinocchio's ``data.oMi[i].rotation`` (and
      ``oMf``), MuJoCo's ``xmat`` (row-major), scipy's ``Rotation.as_matrix()``;
    * ``Q`` — the quaternion ``[x, y, z, w]`` (scalar last) of ``R_world``, sign chosen so
      that ``w >= 0`` (it jumps where ``w`` passes zero; q and -q are one rotation). It is
      ``FreeMotion.Q`` of a free body on the world (up to the sign), Pinocchio's
      ``Quaternion(oMi.rotation).coeffs()`` and scipy's ``Rotation.from_matrix(R_world)
      .as_quat(canonical=True)``; MuJoCo's ``xquat`` is ``[w, x, y, z]``.

    Example::

        sensor = AbsoluteSensor()
        # connect(link.frame_b, sensor.frame_a); outputs sensor.r[0..2], sensor.R_world[i,j]
    """

    carries_no_inertia = True  # its frame exerts no force (see joints._ends_at_loop_cut)

    frame_a = Frame()
    r = Output(shape=3, unit="m", doc="Position of the origin (world)")
    v = Output(shape=3, unit="m/s", doc="Velocity of the origin (world)")
    a = Output(shape=3, unit="m/s2", doc="Acceleration of the origin (world)")
    w = Output(shape=3, unit="rad/s", doc="Angular velocity (frame_a)")
    z = Output(shape=3, unit="rad/s2", doc="Angular acceleration (frame_a)")
    R = Output(shape=(3, 3), doc="Orientation: world -> frame_a coordinates (the Frame's R)")
    R_world = Output(shape=(3, 3),
                     doc="Rotation of frame_a in the world: frame_a -> world coordinates (R')")
    Q = Output(shape=4, doc="Quaternion [x, y, z, w] of R_world (w >= 0)")

    def equations(self):
        f = self.frame_a
        yield from _no_force(self, f)
        yield self.r == f.r_0
        yield self.v == f.R.T @ f.v[3:6]
        yield self.a == f.R.T @ classical_acceleration(f, world_of(self), self)
        yield self.w == f.v[0:3]
        yield self.z == f.a[0:3]
        yield self.R == f.R
        yield self.R_world == f.R.T
        # evaluated as written (a sensor output: its branches switch no events)
        yield self.Q == mb.noEvent(sp.quaternion_of(f.R))


class RelativeSensor(Model):
    """Relative kinematics of frame_b with respect to frame_a, resolved in frame_a:
    position ``r_rel`` and its derivative ``v_rel`` (seen from frame_a), relative angular
    velocity ``w_rel``."""

    carries_no_inertia = True

    frame_a = Frame()
    frame_b = Frame()
    r_rel = Output(shape=3, unit="m", doc="Position of frame_b's origin from frame_a's")
    v_rel = Output(shape=3, unit="m/s", doc="der(r_rel)")
    w_rel = Output(shape=3, unit="rad/s", doc="Angular velocity of frame_b relative to frame_a")

    def equations(self):
        fa, fb = self.frame_a, self.frame_b
        yield from _no_force(self, fa)
        yield from _no_force(self, fb)
        d_world = fb.r_0 - fa.r_0
        yield self.r_rel == fa.R @ d_world
        # Velocities of the two origins in world coordinates, seen from the rotating frame_a.
        vb_world = fb.R.T @ fb.v[3:6]
        va_world = fa.R.T @ fa.v[3:6]
        wa = fa.v[0:3]
        yield self.v_rel == fa.R @ (vb_world - va_world) - sp.cross(wa, self.r_rel)
        yield self.w_rel == fa.R @ (fb.R.T @ fb.v[0:3]) - wa


class CutForceAndTorque(Model):
    """Cut force and torque transmitted from frame_a to frame_b (a rigid, zero-length
    connection), resolved in frame_a: ``force`` and ``torque`` act on what is connected to
    frame_b (MSL ``Sensors.CutForceAndTorque``)."""

    frame_a = Frame()
    frame_b = Frame()
    force = Output(shape=3, unit="N")
    torque = Output(shape=3, unit="N.m")

    def connection_roles(self):
        yield Branch(self.frame_a.R, self.frame_b.R)

    def relative_rotation(self):
        """frame_b is not rotated (see :func:`.loops.loop_plane`)."""
        return "fixed", np.eye(3)

    def equations(self):
        fa = self.frame_a
        yield from rigid_kinematics(fa, self.frame_b)
        yield from rigid_forces(self, fa, self.frame_b)
        if self.analysis == "forward":
            F = sp.unpack(fa.I) @ fa.a + fa.b
        else:
            F = cut_force(fa)
        yield self.torque == F[0:3]
        yield self.force == F[3:6]
