"""Joints: Revolute, Prismatic, Spherical, Universal, FreeMotion, and SphericalConstraint
(a ball joint that closes a kinematic loop).

A joint relates frame_b to frame_a by a relative motion with k degrees of freedom: rotation
``E(q)``, offset ``r(q)``, motion subspace ``Phi`` (6 x k, constant in frame_b
coordinates), joint velocities ``qd`` and accelerations ``qdd``::

    v_b = X v_a + Phi qd,    a_b = X a_a + Phi qdd + psi

with ``psi = v_b x (Phi qd)`` for the forward analysis's spatial accelerations and its
classical counterpart in the inverse analysis (:func:`.spatial.joint_bias`: for a revolute
joint only ``w_b x (n qd)`` in the angular part). A revolute joint about a declared
coordinate axis keeps its rotation as a :class:`.spatial.AxisRotation`, which rotates
articulated inertias with ``cos^2 + sin^2 = 1`` (exact for every axis value).

Forces (the joint is massless):

* inverse analysis: ``[t; f]_a = -X' [t; f]_b`` and the joint forces
  ``tau = -Phi' [t; f]_b`` (the force the joint transmits to frame_b, projected on its
  axes);
* forward analysis: with ``A = -I_b`` and ``beta = -b_b`` (the subtree behind frame_b) the
  articulated-body step gives ``qdd`` and the subtree seen from frame_a
  (:func:`.spatial.articulated_step`). Only the joint's own k x k matrix
  ``D = Phi' A Phi`` is ever factorised.

Joint coordinates are the states by default (``state_select="prefer"``). In the inverse
analysis the coordinates of joints without a driving flange are external inputs of the
compiled model (named ``<joint>.phi``, ``<joint>.w``, ``<joint>.a`` ...): prescribed motion
in, joint forces out. Joints with ``use_axis_flange=True`` take their motion from what
drives the flange (e.g. a rotational Position source). In a kinematic loop only the
independent coordinates can be prescribed: give the other joints of the loop
``prescribed=False`` (passive: their motion follows from the loop in both analyses).

Driving a joint: ``actuated=True`` makes the driving torque ``<joint>.tau`` (force
``<joint>.f`` of a prismatic joint) an external input of the forward analysis, the same
variable the inverse analysis gives as an output; ``use_axis_flange=True`` takes it from a
1-D drive train on the ``axis`` flange instead (motor, gear, friction).
"""

from __future__ import annotations

import casadi as ca
import numpy as np

import mbmodel as mb
from mbmodel import Branch, Model, Parameter, Variable, der
from mbmodel.libraries import rotational, translational
from mbmodel.libraries.drive_trains import drive_load

from . import spatial as sp
from . import visualizers as vis
from .frames import (Frame, alone_at, axis_check, check_axis, classical_accelerations,
                     cut_force, numeric_value, unit_axis)


def joint_equations(joint, E, r, Phi, qd, qdd, tau, armature=None, lock=None,
                    placement=None):
    """Kinematics and force equations shared by all joints (see the module docs).
    ``armature`` (forward analysis): inertia rigidly driven with the joint coordinates, added
    to the joint's own ``D``; ``tau`` is then the joint force at zero joint acceleration.
    ``lock`` (forward analysis, one coordinate): ``(FrictionLock, ratio)`` of a friction
    element on the drive train that can stick the joint; the joint then gives the element's
    holding torque (its ``holding_equation``). ``placement`` (forward analysis): the
    :class:`~.parts.FixedRotation` the joint composes with its motion
    (:func:`composed_placement`); the joint then also states the placement's frame_a
    inertia and bias."""
    fa, fb = joint.frame_a, joint.frame_b
    vJ = Phi @ qd
    if r is None:
        yield fb.r_0 == fa.r_0
    else:
        yield fb.r_0 == fa.r_0 + fa.R.T @ r
    yield fb.R == (fa.R if E is None else sp.matrix_of(E) @ fa.R)
    # Velocity and acceleration from the composed placement's frame_a in one
    # transformation (the placement still states its frame_b's, for the results).
    E_c, r_c = (E, r) if placement is None else _through_placement(placement, E, r)
    before = fa if placement is None else placement.frame_a
    v_b = sp.motion_to_child(before.v, E_c, r_c) + vJ
    yield fb.v == v_b
    psi = sp.joint_bias(fa.v, fb.v, vJ, Phi, E, r, classical_accelerations(joint))
    c = sp.motion_to_child(before.a, E_c, r_c)
    yield fb.a == c + Phi @ qdd + psi
    if joint.analysis == "forward":
        locked = None if lock is None else lock[0].locked
        if _no_armature(armature) and lock is None and _ends_at_loop_cut(joint):
            # Nothing behind frame_b but a loop cut: no inertia to accelerate, the cut force
            # passes on whole, the axis carries none of it beyond tau, and the loop sets qdd.
            yield fa.I == ca.SX.zeros(21, 1)
            yield fa.b == sp.force_to_parent(-fb.b, E, r)
            yield tau + Phi.T @ fb.b == 0
            if placement is not None:
                yield placement.frame_a.I == ca.SX.zeros(21, 1)
                yield placement.frame_a.b == sp.force_to_parent(-fb.b, E_c, r_c)
            return
        N, bias, qdd_expr, hold = sp.articulated_step(-sp.unpack(fb.I), -fb.b, Phi, tau, psi,
                                                      c, armature, locked)
        yield qdd == qdd_expr
        if lock is not None:
            # the drive needs ratio * (element torque) from the joint: the lock's share of
            # the joint force is hold, so the element holds -hold / ratio
            role, ratio = lock
            yield role.element.holding_equation(-hold[0] / ratio)
        yield fa.I == sp.pack(sp.inertia_to_parent(N, E, r))
        yield fa.b == sp.force_to_parent(bias, E, r)
        if placement is not None:
            # The subtree seen from the placement's frame_a in one transformation (what the
            # placement would do to fa.I and fa.b is done to N and bias at once): one
            # rotation of the articulated inertia instead of two.
            yield placement.frame_a.I == sp.pack(sp.inertia_to_parent(N, E_c, r_c))
            yield placement.frame_a.b == sp.force_to_parent(bias, E_c, r_c)
    else:
        F_b = cut_force(fb)
        yield cut_force(fa) == -sp.force_to_parent(F_b, E, r)
        yield tau == -(Phi.T @ F_b)


def composed_placement(joint):
    """The :class:`~.parts.FixedRotation` a joint composes with its own motion in the
    forward analysis, or ``None``: the placement whose frame_b alone meets the joint's
    frame_a (no loop cut there), as Pinocchio's joint placement. The joint then states the
    placement's frame_a inertia and bias from its articulated step, transformed once by
    the composed transformation; the placement states its kinematics only (see
    :meth:`.parts.FixedRotation.equations`). Both ask this, from either side
    (:func:`composing_joint`)."""
    return _across(joint, joint.frame_a, _may_compose, _may_be_composed, "frame_b")


def composing_joint(placement):
    """The joint that composes ``placement`` (:func:`composed_placement`), or ``None``."""
    return _across(placement, placement.frame_b, _may_be_composed, _may_compose, "frame_a")


def _across(asking, frame, asking_may, other_may, other_frame):
    """The component whose ``other_frame`` alone meets ``asking``'s ``frame`` (no loop cut
    there), if both may take part in a composition: one decision, from either side."""
    if not asking_may(asking):
        return None
    other = alone_at(asking, frame)
    if other is None or not other_may(other.owner) or other is not getattr(
            other.owner, other_frame):
        return None
    return other.owner


def _may_compose(joint) -> bool:
    """A joint whose equations are the library's (an axis joint or a Spherical), in the
    forward analysis. (A FreeMotion sits at the root, where nothing passes the inertia on:
    composing would only add the product of the two rotations.)"""
    return (type(joint).equations in (_AxisJoint.equations, Spherical.equations)
            and joint.analysis == "forward")


def _may_be_composed(placement) -> bool:
    """A FixedRotation itself (a subclass may state other equations), forward analysis."""
    from .parts import FixedRotation
    return type(placement) is FixedRotation and placement.analysis == "forward"


def _through_placement(placement, E, r):
    """Rotation and offset from the placement's frame_a to the joint's frame_b, from the
    joint's ``E``, ``r`` (frame_a -> frame_b of the joint): ``E E_p`` and
    ``r_p + E_p' r``."""
    E_p, r_p = placement.transformation()
    E_c = E_p if E is None else sp.matrix_of(E) @ E_p
    r_c = r_p if r is None else r_p + E_p.T @ r
    return E_c, r_c


def _ends_at_loop_cut(joint) -> bool:
    """Whether frame_b of the joint meets nothing with inertia but a loop cut (forward
    analysis): its side of the cut holds only components whose frames never carry
    inertia (sensors, force elements: ``carries_no_inertia``)."""
    side = joint.loop_cut_side(joint.frame_b)
    return side is not None and all(
        c is joint.frame_b or getattr(c.owner, "carries_no_inertia", False) for c in side)


def _no_armature(armature) -> bool:
    """No inertia driven with the joint coordinates (none, or identically zero)."""
    if armature is None:
        return True
    value = ca.SX(armature)
    return bool(value.is_zero()) or (value.is_constant() and not np.any(np.array(ca.DM(value))))


class _Joint(Model):
    frame_a = Frame(doc="Frame on the parent side")
    frame_b = Frame(doc="Frame moved by the joint")

    def connection_roles(self):
        yield Branch(self.frame_a.R, self.frame_b.R, one_way=(
            "its frame_b is on the world's side: in the forward analysis a joint passes the "
            "articulated inertia of what hangs at its frame_b on to its frame_a (the "
            "articulated-body algorithm), so frame_a must face the world (or the root "
            "body); swap the connections of frame_a and frame_b (the joint coordinates "
            "then change sign; the inverse analysis takes either side)"
            if self.analysis == "forward" else None))

    def explain_non_finite(self, variable, analysis):
        if analysis != "forward":
            return None
        return ("in the forward analysis the joint solves with D = Phi' A Phi, the "
                "articulated inertia of everything beyond it about (or along) its axes, "
                "which is singular when nothing beyond the joint has mass or inertia to "
                "move with it: a massless Body or BodyShape (m = 0 and zero inertia) at "
                "the end of the chain, a point mass on a revolute joint's axis, or a point "
                "mass on a Spherical or FreeMotion joint (nothing resists a turn about the "
                "line to the mass: the textbook spherical pendulum). Give the bodies beyond "
                "the joint mass or inertia (a small inertia about that line will do), use "
                "a Universal joint for the pendulum, or remove the joint")


class _AxisJoint(_Joint):
    """One degree of freedom along or about the axis ``n``, optionally driven through a 1-D
    flange. Subclasses name their coordinate, its derivatives and the driving force
    (``coordinates``), the flange library and its across/through names, and the motion."""

    coordinates: tuple[str, str, str, str]
    flange_library = None
    flange_names: tuple[str, str]

    def __init__(self, use_axis_flange: bool = False, prescribed: bool = True,
                 actuated: bool = False, **modifiers):
        super().__init__(**modifiers)
        self.use_axis_flange = bool(use_axis_flange)
        self.prescribed = bool(prescribed)
        self.actuated = bool(actuated)
        force = self.coordinates[3]
        if self.actuated:
            if self.use_axis_flange:
                what, source = (("torque", "rotational.Torque") if force == "tau"
                                else ("force", "translational.Force"))
                raise mb.DeclarationError(
                    f"{type(self).__name__}: actuated=True makes the driving {what} "
                    f"'{force}' an input, use_axis_flange=True takes it from the flange; "
                    f"choose one (to feed an input into a drive train, connect a {source} "
                    f"source to the flange)")
            # The driving force is an external input of the forward analysis; the inverse
            # analysis still gives it as an output (the same name in both).
            self.declaration(force).input_in = "forward"
        if self.use_axis_flange or not self.prescribed:
            # The flange drives the motion, or the joint is a passive joint of a kinematic
            # loop whose motion the loop determines: not an input of the inverse analysis.
            for name in self.coordinates[:3]:
                self.declaration(name).input_in = None
        if self.use_axis_flange:
            self.axis = self.flange_library.Flange(doc="Drives the joint")
            self.support = self.flange_library.Flange(doc="Support of the drive, fixed")

    #: How frame_b moves relative to frame_a for :func:`.loops.loop_plane`: "axis"
    #: (rotation about n) or "slide" (translation along n).
    relative_motion: str

    def motion(self, e, q):
        """(E, r, Phi) of the joint for the unit axis e and coordinate q."""
        raise NotImplementedError

    def relative_rotation(self):
        """``(relative_motion, unit n)`` at the declared axis (see :func:`.loops.loop_plane`)."""
        n = numeric_value(self, "n")
        if n is None or not np.linalg.norm(n) > 0:
            return None
        return self.relative_motion, n.ravel() / np.linalg.norm(n)

    def template_key(self):
        """Joints with the same options and, once parameters are folded, the same kind of
        declared axis (a coordinate axis, see :meth:`motion`) share their equations
        (:meth:`mbmodel.Model.template_key`), with a placement composed or not (its
        declarations are inputs of the template: :meth:`template_partners`). A joint
        driven by a drive train in the forward analysis runs its own equations: they read
        the drive's structure."""
        check_axis(self)
        if self.use_axis_flange and self.analysis == "forward":
            return None
        axis = None
        if self.parameters_folded:
            declared = numeric_value(self, "n")
            axis = None if declared is None else tuple(np.abs(declared.ravel()) > 0)
        return (self.use_axis_flange, self.prescribed, self.actuated, axis)

    def template_partners(self):
        """The placement the joint composes (:func:`composed_placement`), if any."""
        placement = composed_placement(self)
        return () if placement is None else (placement,)

    def equations(self):
        q, qd, qdd, force = (getattr(self, name) for name in self.coordinates)
        across, through = self.flange_names
        e = unit_axis(self)
        yield axis_check(self)
        yield from _coordinate_equations(self, q, qd, qdd,
                                         self.use_axis_flange or not self.prescribed)
        if self.use_axis_flange:
            yield getattr(self.axis, across) == q
            yield getattr(self.support, across) == 0
            yield force == getattr(self.axis, through)
        elif self.analysis == "forward" and self.actuated:
            pass  # the driving force is an external input
        elif self.analysis == "forward" or not self.prescribed:
            yield force == 0
        E, r, Phi = self.motion(e, q)
        drive = self.drive()
        placement = composed_placement(self)
        if drive is None:
            yield from joint_equations(self, E, r, Phi, qd, qdd, force, placement=placement)
        else:
            lock = drive.locks[0] if drive.locks else None
            yield from joint_equations(self, E, r, Phi, qd, qdd, -drive.bias, drive.inertia,
                                       lock, placement)

    def drive(self):
        """The :class:`~mbmodel.libraries.drive_trains.DriveLoad` on the axis flange that the
        forward articulated step takes in, or ``None`` (the plain flange torque). A rigid
        drive train needs -axis torque = J qdd + B: J joins the joint's articulated step
        (one pass per joint instead of one system for all joints); so does one friction
        lock (two could share the holding torque in many ways: left to the general solver).
        A joint whose frame_b meets only a loop cut has no articulated inertia to hold
        against: its friction is left to the general solver too (the loop's constraint
        decides whether it can stick)."""
        if not (self.use_axis_flange and self.analysis == "forward"):
            return None
        load = drive_load(self, self.axis)
        if load is not None and load.locks and _ends_at_loop_cut(self):
            return None
        return None if load is None or len(load.locks) > 1 else load

    def holds_lock(self, element) -> bool:
        """Whether this joint solves the sticking of friction ``element`` (see
        :func:`~mbmodel.libraries.drive_trains.lock_holder`)."""
        drive = self.drive()
        return drive is not None and any(role.element is element for role, _ in drive.locks)


class Revolute(_AxisJoint):
    """Rotation of frame_b about axis ``n`` (resolved in frame_a, equal in frame_b) by the
    angle ``phi`` (MSL ``Joints.Revolute``).

    ``E = n n' + (1 - n n') cos(phi) - n~ sin(phi)``, ``Phi = [n; 0]``, ``w = der(phi)``,
    ``a = der(w)``; ``tau`` is the driving torque about ``n`` (positive: accelerates
    ``phi`` positively): with ``actuated=True`` an external input of the forward analysis
    (named ``<joint>.tau``), from the axis flange if ``use_axis_flange=True``, else zero in
    the forward analysis; in the inverse analysis always the output. The support flange is
    fixed (its reaction torque goes to the world, as in the MSL).

    Example::

        joint = Revolute(n=[0, 0, 1], phi=mb.Fixed(0.3), w=mb.Fixed(0.0))
        motor = Revolute(n=[0, 1, 0], actuated=True)   # forward model input: motor.tau
    """

    # a key holds for the class that states it; it says whether a placement is composed
    template_key, template_key_reads_connections = _AxisJoint.template_key, True

    n = Parameter([0.0, 0.0, 1.0], shape=3, doc="Axis of rotation resolved in frame_a and frame_b")
    phi = Variable(0.0, unit="rad", state_select="prefer", input_in="inverse",
                   doc="Relative rotation angle from frame_a to frame_b")
    w = Variable(0.0, unit="rad/s", state_select="prefer", input_in="inverse",
                 doc="First derivative of phi")
    a = Variable(0.0, unit="rad/s2", input_in="inverse", doc="Second derivative of phi")
    tau = Variable(0.0, unit="N.m", doc="Driving torque in direction of the axis")

    coordinates = ("phi", "w", "a", "tau")
    relative_motion = "axis"
    flange_library = rotational
    flange_names = ("phi", "tau")

    def motion(self, e, q):
        # The rotation about a declared coordinate axis saves operations only once the
        # axis is a number (folded parameters); with symbolic parameters it costs more.
        declared = numeric_value(self, "n") if self.parameters_folded else None
        return (sp.axis_rotation(e, q, declared), None, ca.vertcat(e, ca.SX.zeros(3, 1)))

    def square_sum(self, back: bool = True):
        """``(k, s)`` for a rotation about coordinate axis ``k`` once parameters are folded:
        ``s`` is ``w_i^2 + w_j^2`` (``i, j`` the other indices) of frame_a's angular
        velocity, formed as :func:`.spatial.point_acceleration_matrix` forms it there. The
        rotation about ``k`` turns frame_a's ``(w_i, w_j)`` into frame_b's and the joint rate
        adds to ``w_k`` only, so frame_b's sum of the two squares is the same: a part at
        frame_b reuses it (exact up to rounding, ``cos^2 + sin^2 = 1``). With ``back``, if
        frame_a has the angular velocity of a Revolute about the same ``k`` (through one
        unrotated rigid part), that joint's own sum, one joint further back: not more, so
        that a planar chain of n joints costs n lookups, not n^2. Else ``None``."""
        declared = numeric_value(self, "n") if self.parameters_folded else None
        if declared is None:
            return None
        d = np.abs(declared.ravel())
        if d.size != 3 or np.count_nonzero(d) != 1:
            return None
        k = int(np.argmax(d))
        behind = self._revolute_behind() if back else None
        if behind is not None:
            found = behind.square_sum(back=False)
            if found is not None and found[0] == k:
                return found  # the same sum, preserved by both rotations
        i, j = (m for m in range(3) if m != k)
        w = self.frame_a.v[0:3]
        return k, w[i] * w[i] + w[j] * w[j]

    def _revolute_behind(self):
        """The Revolute whose frame_b has frame_a's angular velocity: alone on frame_a of
        the rigid, unrotated part (a shape, a FixedTranslation) whose frame_b alone meets
        this joint's frame_a, no loop cut on the way; else ``None``."""
        near = alone_at(self, self.frame_a)
        part = None if near is None else near.owner
        if part is None or near is not getattr(part, "frame_b", None) or not hasattr(
                part, "relative_rotation"):
            return None
        rotation = part.relative_rotation()
        if (rotation is None or rotation[0] != "fixed"
                or not np.array_equal(np.asarray(rotation[1]), np.eye(3))):
            return None
        far = alone_at(self, part.frame_a)
        joint = None if far is None else far.owner
        if not isinstance(joint, Revolute) or far is not joint.frame_b:
            return None
        return joint

    def visuals(self):
        return vis.revolute(self)


class Prismatic(_AxisJoint):
    """Translation of frame_b along axis ``n`` (resolved in frame_a) by ``s`` (MSL
    ``Joints.Prismatic``): ``r = n s``, ``Phi = [0; n]``; ``f`` is the driving force along
    ``n``: an external input of the forward analysis with ``actuated=True`` (named
    ``<joint>.f``), from the axis flange of the translational library if
    ``use_axis_flange=True``, else zero in the forward analysis; the output of the inverse
    analysis.

    Example::

        slide = Prismatic(n=[1, 0, 0], actuated=True)   # forward model input: slide.f
    """

    template_key, template_key_reads_connections = _AxisJoint.template_key, True

    n = Parameter([1.0, 0.0, 0.0], shape=3, doc="Axis of translation resolved in frame_a and frame_b")
    s = Variable(0.0, unit="m", state_select="prefer", input_in="inverse",
                 doc="Relative distance from frame_a to frame_b")
    v = Variable(0.0, unit="m/s", state_select="prefer", input_in="inverse",
                 doc="First derivative of s")
    a = Variable(0.0, unit="m/s2", input_in="inverse", doc="Second derivative of s")
    f = Variable(0.0, unit="N", doc="Driving force in direction of the axis")

    coordinates = ("s", "v", "a", "f")
    relative_motion = "slide"
    flange_library = translational
    flange_names = ("s", "f")

    def motion(self, e, q):
        return None, e * q, ca.vertcat(ca.SX.zeros(3, 1), e)

    def visuals(self):
        return vis.prismatic(self)


def _coordinate_equations(joint, q, qd, qdd, driven):
    """``der(q) = qd``, ``der(qd) = qdd`` unless the inverse analysis prescribes them; then
    they are declared derivatives of each other (index reduction of a loop differentiates
    the prescribed motion)."""
    if joint.analysis == "forward" or driven:
        yield der(q) == qd
        yield der(qd) == qdd
    else:
        yield mb.Derivative(q, qd)
        yield mb.Derivative(qd, qdd)


class Spherical(_Joint):
    """Three rotational degrees of freedom about the common origin of frame_a and frame_b
    (MSL ``Joints.Spherical``). States: the quaternion ``Q = [q1, q2, q3, q4]`` of the
    relative rotation (vector part first) and the relative angular velocity ``w_rel``
    resolved in frame_b; ``der(Q) = Q_der(Q, w_rel)``, ``z_rel = der(w_rel)``,
    ``Phi = [1; 0]`` (6 x 3). ``E(Q)`` is divided by ``|Q|²`` so norm drift cannot distort
    the rotation. No driving torques (``tau = 0`` in the forward analysis).

    Example::

        from mbmodel.libraries.multibody import spatial
        tilted = spatial.rotation_to_quaternion(np.eye(3))   # (any rotation matrix)
        ball = Spherical(Q=mb.Fixed(tilted), w_rel=mb.Fixed([0, 0, 1]))
    """

    Q = Variable([0.0, 0.0, 0.0, 1.0], shape=4, state_select="prefer", input_in="inverse",
                 doc="Quaternion of the rotation frame_a -> frame_b")
    w_rel = Variable(0.0, shape=3, unit="rad/s", state_select="prefer", input_in="inverse",
                     doc="Relative angular velocity resolved in frame_b")
    z_rel = Variable(0.0, shape=3, unit="rad/s2", input_in="inverse",
                     doc="Relative angular acceleration der(w_rel)")
    tau = Variable(0.0, shape=3, unit="N.m", doc="Joint torque resolved in frame_b")

    def __init__(self, prescribed: bool = True, **modifiers):
        super().__init__(**modifiers)
        self.prescribed = bool(prescribed)
        if not self.prescribed:  # a passive ball joint of a loop (see Revolute)
            for name in ("Q", "w_rel", "z_rel"):
                self.declaration(name).input_in = None

    def equations(self):
        Phi = ca.vertcat(ca.SX.eye(3), ca.SX.zeros(3, 3))
        if self.analysis == "forward" or not self.prescribed:
            yield der(self.Q) == sp.quaternion_derivative(self.Q, self.w_rel)
            yield der(self.w_rel) == self.z_rel
            yield self.tau == ca.SX.zeros(3, 1)
        yield from joint_equations(self, sp.quaternion_rotation(self.Q), None, Phi,
                                   self.w_rel, self.z_rel, self.tau,
                                   placement=composed_placement(self))

    def visuals(self):
        return vis.ball(self)


class FreeMotion(_Joint):
    """Six degrees of freedom of frame_b relative to frame_a (MSL ``Joints.FreeMotion``).

    States: position ``r_rel`` of frame_b's origin resolved in frame_a, the quaternion ``Q``
    of the relative rotation, and the relative velocities ``w_rel`` (angular) and ``v_rel``
    (of the origin), both resolved in frame_b: ``der(r_rel) = E' v_rel``,
    ``der(Q) = Q_der(Q, w_rel)``, ``Phi = 1`` (6 x 6). The orientation is never described by
    rotation-matrix states. Put it between the world and a free body.

    Velocity conventions (``E``: frame_a -> frame_b coordinates, ``E' = R_world`` of
    frame_b when frame_a is the world):

    * ``v_rel`` is resolved in **frame_b** (the body frame): ``v_rel = E der(r_rel)``, and
      ``a_rel = der(v_rel)`` (derivative of the frame_b components). ``w_rel`` and
      ``z_rel = der(w_rel)`` are resolved in frame_b too. ``tau = [torque; force]`` acts on
      frame_b at its origin, resolved in frame_b.
    * The MSL's ``Joints.FreeMotion`` uses ``v_rel_a = der(r_rel_a)`` and
      ``a_rel_a = der(v_rel_a)`` resolved in **frame_a**, and ``w_rel_b``, ``z_rel_b``
      in frame_b: ``v_rel_a = E' v_rel``, ``a_rel_a = E' (a_rel + w_rel x v_rel)``,
      ``w_rel_b = w_rel``, ``z_rel_b = z_rel``.
    * Pinocchio's free-flyer (``JointModelFreeFlyer``, velocities in the *local* frame)
      is exactly this joint: ``q = [r_rel; Q]`` (``Q = [x, y, z, w]``, Pinocchio's
      quaternion coefficients), ``v = [v_rel; w_rel]``, ``a = [a_rel; z_rel]`` (the
      derivative of the local velocity, Pinocchio's spatial acceleration) and
      ``tau = [force; torque]``, i.e. this joint's ``tau`` with its halves swapped.
      MuJoCo's free joint differs: ``qvel`` has the linear velocity in the parent
      (world) frame, ``v_rel_a``, then the angular one in the body frame, ``w_rel``;
      ``qpos`` holds the quaternion scalar first.

    Example::

        free = FreeMotion(r_rel=mb.Fixed([0, 1, 0]), v_rel=mb.Fixed([1, 0, 0]))
    """

    r_rel = Variable(0.0, shape=3, unit="m", state_select="prefer", input_in="inverse",
                     doc="Position of frame_b's origin from frame_a, resolved in frame_a")
    Q = Variable([0.0, 0.0, 0.0, 1.0], shape=4, state_select="prefer", input_in="inverse",
                 doc="Quaternion of the rotation frame_a -> frame_b")
    w_rel = Variable(0.0, shape=3, unit="rad/s", state_select="prefer", input_in="inverse",
                     doc="Relative angular velocity resolved in frame_b")
    v_rel = Variable(0.0, shape=3, unit="m/s", state_select="prefer", input_in="inverse",
                     doc="Relative velocity of frame_b's origin resolved in frame_b")
    z_rel = Variable(0.0, shape=3, unit="rad/s2", input_in="inverse", doc="der(w_rel)")
    a_rel = Variable(0.0, shape=3, unit="m/s2", input_in="inverse", doc="der(v_rel)")
    tau = Variable(0.0, shape=6, doc="Joint force [torque; force] resolved in frame_b")

    def equations(self):
        E = sp.quaternion_rotation(self.Q)
        if self.analysis == "forward":
            yield der(self.r_rel) == E.T @ self.v_rel
            yield der(self.Q) == sp.quaternion_derivative(self.Q, self.w_rel)
            yield der(self.w_rel) == self.z_rel
            yield der(self.v_rel) == self.a_rel
            yield self.tau == ca.SX.zeros(6, 1)
        qd = ca.vertcat(self.w_rel, self.v_rel)
        qdd = ca.vertcat(self.z_rel, self.a_rel)
        yield from joint_equations(self, E, sp.vec(self.r_rel), ca.SX.eye(6), qd, qdd, self.tau)


class Universal(Model):
    """Two revolute joints in series with axes ``n_a`` (in frame_a) and ``n_b`` (in
    frame_b), intersecting at the common origin (MSL ``Joints.Universal``). Coordinates
    ``revolute_a.phi`` and ``revolute_b.phi``; ``phi_a``, ``phi_b``, ``w_a`` and ``w_b``
    take their start modifiers (``Guess``/``Fixed``: on a loop, a guess picks the assembly
    and keeps the angles near the ones meant, not 2 pi away). ``prescribed=False`` makes both
    passive in an inverse model (a universal joint inside a loop whose motion another joint
    prescribes).

    Example::

        cross = Universal(n_a=[0, 0, 1], n_b=[0, 1, 0], phi_a=mb.Guess(0.34),
                          phi_b=mb.Guess(-0.92), prescribed=False)
    """

    frame_a = Frame()
    frame_b = Frame()

    def __init__(self, n_a=(1.0, 0.0, 0.0), n_b=(0.0, 1.0, 0.0), *, phi_a=None, phi_b=None,
                 w_a=None, w_b=None, prescribed: bool = True, **modifiers):
        super().__init__(**modifiers)
        starts_a = {k: v for k, v in (("phi", phi_a), ("w", w_a)) if v is not None}
        starts_b = {k: v for k, v in (("phi", phi_b), ("w", w_b)) if v is not None}
        self.revolute_a = Revolute(n=list(n_a), prescribed=prescribed, **starts_a)
        self.revolute_b = Revolute(n=list(n_b), prescribed=prescribed, **starts_b)

    def equations(self):
        yield mb.connect(self.frame_a, self.revolute_a.frame_a)
        yield mb.connect(self.revolute_a.frame_b, self.revolute_b.frame_a)
        yield mb.connect(self.revolute_b.frame_b, self.frame_b)


class SphericalConstraint(Model):
    """A spherical joint that closes a kinematic loop (MSL
    ``Joints.Constraints.Spherical``): the origins of frame_a and frame_b coincide, their
    orientations stay free. It has no states and no orientation branch (each frame takes
    its orientation from its own side of the loop) and passes a constraint force, no torque:
    the force on frame_b equals minus the force on frame_a. Use it where a ball joint closes
    a spatial loop (a four-bar with a spherical pair); it constrains 3 coordinates where a
    rigid cut would constrain 6.

    Example::

        ball = SphericalConstraint()
        # connect(coupler.frame_b, ball.frame_a); connect(rocker.frame_b, ball.frame_b)
    """

    frame_a = Frame(doc="One side of the ball joint")
    frame_b = Frame(doc="The other side")
    carries_no_inertia = True  # massless: a joint ending here passes the force on

    def connection_roles(self):
        yield mb.ClosesLoop(self.frame_a.R, self.frame_b.R)

    def equations(self):
        fa, fb = self.frame_a, self.frame_b
        yield fb.r_0 == fa.r_0
        if self.analysis == "forward":
            # a massless element: the force on it at each frame is b alone (no inertia)
            yield fa.I == ca.SX.zeros(21, 1)
            yield fb.I == ca.SX.zeros(21, 1)
            force_a, force_b = fa.b, fb.b
        else:
            force_a, force_b = cut_force(fa), cut_force(fb)
        yield force_a[0:3] == ca.SX.zeros(3, 1)
        yield force_b[0:3] == ca.SX.zeros(3, 1)
        yield force_b[3:6] == -(fb.R @ (fa.R.T @ force_a[3:6]))

    def visuals(self):
        return vis.ball(self)
