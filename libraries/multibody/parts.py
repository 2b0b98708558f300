"""World, fixed frames, rigid connections and bodies.

Every body states Newton–Euler at its frame_a as a spatial law: the force on the body is
``I a + b`` with the spatial inertia ``I`` (mass, centre of mass, inertia) and the
velocity term ``b`` (``v x* (I v)`` for the forward analysis's spatial accelerations; about
the centre of mass for the inverse analysis's classical ones, see :mod:`.frames`). Uniform
gravity needs no term (the world frame accelerates upwards); point gravity adds the
attraction at the centre of mass. A :class:`Body` hanging alone on a shape's frame_b is
carried by the shape as one rigid body with it (:func:`attached_body`).
"""

from __future__ import annotations

import casadi as ca
import numpy as np

import mbmodel as mb
from mbmodel import Branch, Model, Parameter, Root
from mbmodel.errors import ParameterError

from . import spatial as sp
from . import visualizers as vis
from .frames import (Frame, alone_at, axis_check, check_axis, cut_force,
                     evaluate_at_declared_values, numeric_value, rigid_forces, rigid_kinematics,
                     unit_axis, world_of)

GRAVITY_TYPES = ("uniform", "point", "none")


class _Gravity:
    """What bodies and fixed frames ask of a world."""

    gravity_type = "uniform"

    def gravity_acceleration_world(self):
        """Uniform gravity vector in world coordinates (zero for point or no gravity)."""
        if self.gravity_type != "uniform":
            return ca.SX.zeros(3, 1)
        n = sp.vec(self.n)
        return self.g * n / ca.sqrt(n.T @ n)

    def root_acceleration(self):
        """Spatial acceleration of a frame at rest in the world: ``[0; -g]``."""
        return ca.vertcat(ca.SX.zeros(3, 1), -self.gravity_acceleration_world())

    def point_gravity(self, r):
        """Gravity acceleration at world position r (point gravity only)."""
        return -self.mue * r / ca.power(ca.sqrt(r.T @ r), 3)


class World(_Gravity, Model):
    """The inertial frame and the gravity field (MSL ``MultiBody.World``).

    ``gravity_type``: ``"uniform"`` (acceleration ``g`` along ``n``), ``"point"``
    (``-mue r/|r|^3`` towards the origin) or ``"none"``. frame_b is the root of the
    orientation graph: ``r_0 = 0``, ``T = identity``, ``v = 0``, ``a = [0; -g]``.
    Declare one World per model; without one, bodies fall with 9.81 m/s² along -y.
    ``nominal_length`` (m) scales the default shapes of an animation (joints, bodies; see
    :mod:`.visualizers`); default: twice the largest offset of the model's rigid parts.

    Example::

        world = World(g=9.81, n=[0, 0, -1])
    """

    g = Parameter(9.81, unit="m/s2", min=0.0, doc="Gravity constant")
    n = Parameter([0.0, -1.0, 0.0], shape=3, doc="Direction of gravity (uniform field)")
    mue = Parameter(3.986004418e14, unit="m3/s2", min=0.0,
                    doc="Gravity field constant (point gravity)")
    frame_b = Frame()

    def __init__(self, gravity_type: str = "uniform", nominal_length: float | None = None,
                 **modifiers):
        super().__init__(**modifiers)
        if gravity_type not in GRAVITY_TYPES:
            raise mb.DeclarationError(f"World: gravity_type must be one of {GRAVITY_TYPES}")
        self.gravity_type = gravity_type
        if nominal_length is not None and not float(nominal_length) > 0:
            raise mb.DeclarationError(f"World: nominal_length must be positive, not "
                                      f"{nominal_length}")
        self.nominal_length = None if nominal_length is None else float(nominal_length)

    def visuals(self):
        return vis.world_axes(self)

    def connection_roles(self):
        yield Root(self.frame_b.R)

    def equations(self):
        f = self.frame_b
        if self.gravity_type == "uniform":
            if not self.n_is_valid():
                raise ParameterError(f"World '{self.path}': gravity direction n has zero length")
            yield axis_check(self)
        yield f.r_0 == ca.SX.zeros(3, 1)
        yield f.R == ca.SX.eye(3)
        yield f.v == ca.SX.zeros(6, 1)
        yield f.a == self.root_acceleration()

    def n_is_valid(self):
        value = numeric_value(self, "n")
        return value is None or np.linalg.norm(value) > 1e-12


class DefaultWorld(_Gravity):
    """Gravity of a model that declares no World: 9.81 m/s² along -y."""

    def __init__(self):
        self.g = 9.81
        self.n = [0.0, -1.0, 0.0]
        self.mue = 3.986004418e14


class Fixed(Model):
    """A frame fixed in the world at position ``r`` (world coordinates); a root of the
    orientation graph like the world frame (MSL ``Parts.Fixed``)."""

    r = Parameter([0.0, 0.0, 0.0], shape=3, unit="m", doc="Position in world")
    frame_b = Frame()

    def connection_roles(self):
        yield Root(self.frame_b.R)

    def equations(self):
        f = self.frame_b
        yield f.r_0 == sp.vec(self.r)
        yield f.R == ca.SX.eye(3)
        yield f.v == ca.SX.zeros(6, 1)
        yield f.a == world_of(self).root_acceleration()


class FixedTranslation(Model):
    """frame_b fixed to frame_a at offset ``r`` (resolved in frame_a); massless.

    Equations: ``r_0b = r_0a + T_a' r``, ``T_b = T_a``, ``v_b = X v_a``, ``a_b = X a_a`` and
    the cut force passed through (``f_a = -X' f_b``, or ``I_a = X' A X``, ``b_a = X' beta``
    with ``A = -I_b``, ``beta = -b_b`` in the forward analysis).
    """

    r = Parameter([0.0, 0.0, 0.0], shape=3, unit="m",
                  doc="Vector from frame_a to frame_b resolved in frame_a")
    frame_a = Frame()
    frame_b = Frame()

    def connection_roles(self):
        yield Branch(self.frame_a.R, self.frame_b.R)

    def relative_rotation(self):
        """frame_b is not rotated (see :func:`.loops.loop_plane`)."""
        return "fixed", np.eye(3)

    def equations(self):
        r = sp.vec(self.r)
        yield from rigid_kinematics(self.frame_a, self.frame_b, None, r)
        yield from rigid_forces(self, self.frame_a, self.frame_b, None, r)

    def visuals(self):
        return vis.translation(self)


class FixedRotation(Model):
    """frame_b translated by ``r`` and rotated by ``angle`` (rad) about axis ``n`` relative
    to frame_a (both resolved in frame_a); massless (MSL ``Parts.FixedRotation``, angle in
    radians).

    The constructors :meth:`from_matrix`, :meth:`from_quaternion` and :meth:`from_euler`
    take the rotation in the other usual forms and convert it to ``n`` and ``angle`` (which
    stay the component's parameters). Their rotation is the *active* rotation that turns
    frame_a's axes into frame_b's: the matrix ``R`` whose columns are frame_b's axes
    resolved in frame_a (``v_a = R v_b``; scipy's ``Rotation``, Pinocchio's ``SE3``
    rotation, URDF's ``rpy``). The MSL's orientation object of the same rotation is ``R'``
    (frame_a -> frame_b coordinates, like the Frame's ``R``).

    Example::

        elbow = FixedRotation(r=[0, 0, 0.3], n=[0, 1, 0], angle=np.pi / 2)
        same = FixedRotation.from_euler("y", np.pi / 2, r=[0, 0, 0.3])
    """

    r = Parameter([0.0, 0.0, 0.0], shape=3, unit="m",
                  doc="Vector from frame_a to frame_b resolved in frame_a")
    n = Parameter([0.0, 0.0, 1.0], shape=3, doc="Axis of rotation (resolved in frame_a)")
    angle = Parameter(0.0, unit="rad", doc="Rotation angle of frame_b about n")
    frame_a = Frame()
    frame_b = Frame()

    def connection_roles(self):
        yield Branch(self.frame_a.R, self.frame_b.R)

    @classmethod
    def from_matrix(cls, R, r=(0.0, 0.0, 0.0), **modifiers) -> "FixedRotation":
        """A FixedRotation whose frame_b has the axes of the columns of ``R`` (resolved in
        frame_a: ``v_a = R v_b``; pass ``R.T`` for an MSL orientation object or a Frame's
        ``R``, which map frame_a coordinates to frame_b coordinates), at offset ``r``
        (resolved in frame_a).

        Raises:
            ParameterError: ``R`` is not a 3x3 matrix of finite numbers, not orthonormal
                (``|R'R - 1| > 1e-6``) or a reflection (``det R = -1``).

        Example::

            turn = FixedRotation.from_matrix([[0, -1, 0], [1, 0, 0], [0, 0, 1]], r=[1, 0, 0])
            # = FixedRotation(r=[1, 0, 0], n=[0, 0, 1], angle=pi/2)
        """
        R = _rotation_matrix(R, f"{cls.__name__}.from_matrix")
        return cls._from_quaternion_xyzw(sp.rotation_to_quaternion(R.T), r, modifiers)

    @classmethod
    def from_quaternion(cls, q, r=(0.0, 0.0, 0.0), scalar_first: bool = False,
                        **modifiers) -> "FixedRotation":
        """A FixedRotation by the rotation of the quaternion ``q``, at offset ``r``
        (resolved in frame_a). Component order: ``[x, y, z, w]``, scalar *last* (scipy's
        default, Pinocchio's ``coeffs()``, the library's ``Spherical.Q`` and
        ``FreeMotion.Q``); ``scalar_first=True`` takes ``[w, x, y, z]`` (MuJoCo, Eigen's
        constructor). The quaternion rotates frame_a's axes into frame_b's (its matrix
        is :meth:`from_matrix`'s ``R``); it is normalised, so only its direction counts.

        Raises:
            ParameterError: ``q`` is not 4 finite numbers, or is zero.

        Example::

            half_turn = FixedRotation.from_quaternion([0, 0, 1, 0])  # pi about z
        """
        where = f"{cls.__name__}.from_quaternion"
        try:
            q = np.asarray(q, dtype=float)
        except (TypeError, ValueError):
            raise ParameterError(f"{where}: q must be 4 finite numbers, not {q!r}") from None
        if q.shape != (4,) or not np.all(np.isfinite(q)):
            raise ParameterError(f"{where}: q must be 4 finite numbers, not {q.tolist()}")
        norm = np.linalg.norm(q)
        if not norm > 1e-12:
            raise ParameterError(f"{where}: q = {q.tolist()} is zero; a rotation's quaternion has "
                                 f"unit length")
        if scalar_first:
            q = np.roll(q, -1)
        return cls._from_quaternion_xyzw(q / norm, r, modifiers)

    @classmethod
    def from_euler(cls, seq: str, angles, r=(0.0, 0.0, 0.0), degrees: bool = False,
                   **modifiers) -> "FixedRotation":
        """A FixedRotation by successive rotations about coordinate axes (scipy's
        ``Rotation.from_euler`` convention), at offset ``r`` (resolved in frame_a).

        ``seq``: up to three of ``x``, ``y``, ``z`` (no axis twice in a row). Lower case is
        *extrinsic*: each rotation about frame_a's fixed axes, ``R = R3 R2 R1`` (URDF's
        ``rpy`` is ``"xyz"``, angles ``[roll, pitch, yaw]``). Upper case is *intrinsic*:
        each about the axes turned by the rotations before it, ``R = R1 R2 R3`` (the MSL's
        ``axesRotations(sequence, angles)``, e.g. ``"XYZ"`` for ``{1, 2, 3}``). ``angles``
        in radians (degrees with ``degrees=True``), one per axis.

        Raises:
            ParameterError: an invalid sequence, or not one finite angle per axis.

        Example::

            link = FixedRotation.from_euler("xyz", [0.1, -0.2, 0.3], r=[0, 0, 0.5])
            tilt = FixedRotation.from_euler("Z", 90, degrees=True)
        """
        R = _euler_matrix(seq, angles, degrees, f"{cls.__name__}.from_euler")
        return cls._from_quaternion_xyzw(sp.rotation_to_quaternion(R.T), r, modifiers)

    @classmethod
    def _from_quaternion_xyzw(cls, q, r, modifiers):
        """Axis and angle of a unit quaternion ``[x, y, z, w]``: the angle in [0, pi]
        (the quaternion's sign chosen so that w >= 0), the axis ``(0, 0, 1)`` for none."""
        q = np.asarray(q, dtype=float)
        if q[3] < 0:
            q = -q
        s = float(np.linalg.norm(q[:3]))
        if s < 1e-15:
            return cls(r=list(map(float, np.ravel(r))), n=[0.0, 0.0, 1.0], angle=0.0,
                       **modifiers)
        angle = 2.0 * float(np.arctan2(s, q[3]))
        return cls(r=list(map(float, np.ravel(r))), n=list(map(float, q[:3] / s)), angle=angle,
                   **modifiers)

    def relative_rotation(self):
        """The constant rotation at the declared values (see :func:`.loops.loop_plane`)."""
        n, angle = numeric_value(self, "n"), numeric_value(self, "angle")
        if n is None or angle is None or not np.linalg.norm(n) > 0:
            return None
        E = sp.planar_rotation(n.ravel() / np.linalg.norm(n), float(np.ravel(angle)[0]))
        return "fixed", np.array(ca.evalf(E))

    template_key_reads_connections = True  # the key says whether a joint composes it

    def template_key(self):
        check_axis(self)  # what equations() checks, for instances that do not run it
        from .joints import composing_joint
        return (composing_joint(self) is not None,)

    def equations(self):
        """The rigid transformation; the inertia and bias passed to frame_a are the
        joint's if a joint composes this placement with its motion (forward analysis,
        :func:`.joints.composed_placement`: one transformation of the articulated inertia
        instead of two)."""
        from .joints import composing_joint
        E, r = self.transformation()
        yield axis_check(self)
        yield from rigid_kinematics(self.frame_a, self.frame_b, E, r)
        if composing_joint(self) is None:
            yield from rigid_forces(self, self.frame_a, self.frame_b, E, r)

    def transformation(self):
        """``(E, r)`` from frame_a to frame_b: the rotation about ``n`` by ``angle`` and the
        offset ``r`` (resolved in frame_a)."""
        return sp.planar_rotation(unit_axis(self), self.angle), sp.vec(self.r)

    def visuals(self):
        return vis.translation(self)


def _rotation_matrix(R, where, tol=1e-6) -> np.ndarray:
    """``R`` as a checked rotation matrix: 3x3, finite, orthonormal, right-handed."""
    try:
        R = np.asarray(R, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{where}: R must be a 3x3 matrix of numbers, not {R!r}") from None
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise ParameterError(f"{where}: R must be a 3x3 matrix of finite numbers, not "
                             f"{R.tolist()}")
    deviation = float(np.abs(R.T @ R - np.eye(3)).max())
    if deviation > tol:
        raise ParameterError(
            f"{where}: R is not orthonormal (max |R'R - 1| = {deviation:.3g} > {tol:g}): a "
            f"rotation matrix has unit, mutually orthogonal columns (frame_b's axes resolved "
            f"in frame_a); check the entries, or orthonormalise it (e.g. scipy's "
            f"Rotation.from_matrix(R).as_matrix())")
    if np.linalg.det(R) < 0:
        raise ParameterError(
            f"{where}: R has determinant -1: it is a reflection, not a rotation (a "
            f"right-handed frame stays right-handed); negate one of its columns or swap two "
            f"of them")
    return R


def _elementary_rotation(axis: str, angle: float) -> np.ndarray:
    """Active rotation by ``angle`` about coordinate axis ``axis`` ("x", "y" or "z")."""
    c, s = np.cos(angle), np.sin(angle)
    i = "xyz".index(axis)
    j, k = (i + 1) % 3, (i + 2) % 3
    R = np.eye(3)
    R[j, j], R[j, k], R[k, j], R[k, k] = c, -s, s, c
    return R


def _euler_matrix(seq, angles, degrees, where) -> np.ndarray:
    """Matrix of an Euler sequence (see :meth:`FixedRotation.from_euler`)."""
    if (not isinstance(seq, str) or not 1 <= len(seq) <= 3
            or not (seq.islower() or seq.isupper()) or set(seq.lower()) - set("xyz")
            or any(a == b for a, b in zip(seq, seq[1:]))):
        raise ParameterError(
            f"{where}: seq must be one to three of the axes x, y, z, all lower case "
            f"(extrinsic: about frame_a's fixed axes) or all upper case (intrinsic: about the "
            f"rotated axes), no axis twice in a row; not {seq!r}")
    try:
        angles = np.atleast_1d(np.asarray(angles, dtype=float)).ravel()
    except (TypeError, ValueError):
        raise ParameterError(f"{where}: angles must be numbers, not {angles!r}") from None
    if len(angles) != len(seq) or not np.all(np.isfinite(angles)):
        raise ParameterError(f"{where}: give one finite angle per axis of {seq!r}, not "
                             f"{angles.tolist()}")
    if degrees:
        angles = np.deg2rad(angles)
    R = np.eye(3)
    for axis, angle in zip(seq.lower(), angles):
        step = _elementary_rotation(axis, float(angle))
        R = R @ step if seq.isupper() else step @ R
    return R


def _check_inertia(component, m, I_c, triangle=True):
    """A numeric inertia must be positive semi-definite and satisfy the triangle
    inequality of its principal moments (otherwise no mass distribution has it)."""
    if m is None or I_c is None:
        return

    def where():  # (a component's path walks the instance tree: only for a message)
        return f"{type(component).__name__} '{component.path}'"

    if not np.all(np.isfinite(I_c)):
        raise ParameterError(f"{where()}: inertia contains non-finite values")
    # np.allclose's test (rtol 1e-5) without its overhead: it runs for every body
    if not np.all(np.abs(I_c - I_c.T) <= 1e-12 * max(1.0, np.abs(I_c).max())
                  + 1e-5 * np.abs(I_c.T)):
        raise ParameterError(f"{where()}: inertia tensor is not symmetric")
    moments = np.linalg.eigvalsh(I_c)
    scale = max(1e-300, np.abs(moments).max())
    if moments[0] < -1e-9 * scale:
        diagonal = np.diag(I_c)
        # (a negative moment on the diagonal is the mistake to name: the products of
        # inertia are suspects only when every diagonal entry is positive)
        cause = ("; ".join(f"the moment of inertia I_{k + 1}{k + 1} = {diagonal[k]:.6g} "
                           f"is negative" for k in range(3) if diagonal[k] < -1e-9 * scale)
                 or "check the signs and sizes of the products of inertia I_21, I_31, I_32")
        raise ParameterError(
            f"{where()}: inertia tensor is not positive semi-definite (principal moments "
            f"{moments.round(6).tolist()}): {cause}")
    a, b, c = moments
    if triangle and a + b < c * (1 - 1e-9) - 1e-12 * scale:
        raise ParameterError(
            f"{where()}: principal moments {moments.round(6).tolist()} violate the triangle "
            f"inequality (I1 + I2 >= I3); no mass distribution has this inertia (pass "
            f"check_triangle=False to accept lumped data that is non-physical on purpose)")


def _semidefinite(M, tol):
    """Whether the symmetric 3x3 SX ``M`` is positive semi-definite (all principal minors
    non-negative, up to ``tol`` per order), as an SX condition."""
    minors = [(M[i, i], 1) for i in range(3)]
    minors += [(M[i, i] * M[j, j] - M[i, j] * M[j, i], 2) for i, j in ((0, 1), (0, 2), (1, 2))]
    minors.append((ca.det(M), 3))
    ok = ca.SX(1)
    for value, order in minors:
        ok = ca.logic_and(ok, value >= -tol ** order)
    return ok


def body_terms(frame, m, c, I_c, diagonal=False):
    """Spatial inertia ``I`` at ``frame`` of a body (mass m, centre of mass c, inertia I_c
    about it, resolved in the frame) and the velocity-dependent force ``b = v x* (I v)``
    (forward analysis, spatial accelerations), written about the centre of mass (fewer
    operations than the spatial product): ``b_f = m w x v_c``, ``b_t = w x (I_c w) + c x b_f``
    with the centre-of-mass velocity ``v_c = v + w x c``. ``diagonal``: I_c is declared
    diagonal (the gyroscopic term is then formed from the products ``w_i w_j``, see
    :func:`.spatial.gyroscopic`; exact for any I_c)."""
    w, u = frame.v[0:3], frame.v[3:6]
    b_f = m * sp.cross(w, u + sp.cross(w, c))
    b_t = sp.gyroscopic(w, I_c, diagonal) + sp.cross(c, b_f)
    return sp.body_inertia(m, c, I_c), ca.vertcat(b_t, b_f)


def body_force(frame, m, c, I_c, diagonal=False, U=None):
    """``I a + b`` of a body at ``frame`` about its centre of mass:
    ``f = m (a_v + z x c + w x (w x c))``, ``t = I_c z + w x (I_c w) + c x f`` (inverse
    analysis: ``a_v`` is the classical acceleration of the frame origin). ``U``: the frame's
    :func:`.spatial.point_acceleration_matrix` if at hand (``f = m (a_v + U c)``);
    ``diagonal`` as for :func:`body_terms`."""
    w = frame.v[0:3]
    z, a_v = frame.a[0:3], frame.a[3:6]
    if U is None:
        f = m * (a_v + sp.cross(z, c) + sp.cross(w, sp.cross(w, c)))
    else:
        f = m * (a_v + U @ c)
    # with U at hand the products w_i w_j are formed already: the gyroscopic term from them
    t = I_c @ z + sp.gyroscopic(w, I_c, diagonal or U is not None) + sp.cross(c, f)
    return ca.vertcat(t, f)


def combined_mass_properties(first, second):
    """``(m, c, I_c)`` of two bodies rigidly joined, from theirs (resolved in one frame): the
    masses add, the centre of mass is their weighted mean (the origin if both are
    massless) and the inertias add about it (parallel axes)."""
    (m1, c1, I1), (m2, c2, I2) = first, second
    m = m1 + m2
    c = ca.if_else(m > 0, (m1 * c1 + m2 * c2) / m, ca.SX.zeros(3, 1))
    d1, d2 = sp.skew(c1 - c), sp.skew(c2 - c)
    return m, c, I1 + I2 - m1 * (d1 @ d1) - m2 * (d2 @ d2)


def attached_body(shape):
    """The :class:`Body` that hangs alone on ``shape.frame_b`` (its frame_a the only other
    frame of that connection, no loop cut there, no point gravity), or ``None``. The shape
    then carries it as part of its own body (:class:`_Lumped`): one spatial inertia and one
    velocity term for the two, fewer operations than a body force passed through frame_b
    (the attached body still states its own cut force, which nothing else then needs)."""
    if world_of(shape).gravity_type == "point":
        return None
    others = shape.connected(shape.frame_b)
    if len(others) != 1 or shape.loop_cut_side(shape.frame_b) is not None:
        return None
    owner = others[0].owner
    if (isinstance(owner, _RigidBody) and not isinstance(owner, _Shape)
            and others[0] is owner.frame_a):
        return owner
    return None


class _Lumped:
    """A shape's body with the body that hangs on its frame_b (see :func:`attached_body`),
    as one rigid body at the shape's frame_a (frame_b is offset by ``r``, not rotated)."""

    def __init__(self, shape, attached, r):
        m, c, I_c = attached.mass_properties()
        self.shape = shape
        self.properties = combined_mass_properties(shape.mass_properties(), (m, r + c, I_c))

    def parameter_checks(self):
        return self.shape.parameter_checks()

    def body_terms(self, frame):
        return body_terms(frame, *self.properties)

    def body_force(self, frame):
        return body_force(frame, *self.properties)


class _RigidBody(Model):
    """A body at frame_a; subclasses say what its mass properties are."""

    frame_a = Frame()

    def mass_properties(self):
        """``(m, c, I_c)`` as SX expressions of the parameters: mass, centre of mass from
        frame_a and inertia about the centre of mass, both resolved in frame_a."""
        raise NotImplementedError

    # -- the mass properties as numbers (what the MSL shows as final parameters) -------------
    def mass_properties_values(self):
        """``(mass, center_of_mass, inertia)`` as numbers at the declared parameter values:
        a float (kg), a (3,) array (m, from frame_a's origin, resolved in frame_a) and a
        (3, 3) array (kg.m2, about the centre of mass, resolved in frame_a). The same
        formulas the equations use (for ``BodyBox``/``BodyCylinder``: from geometry and
        density), e.g. to build the body in another dynamics library.

        Raises:
            ParameterError: a parameter they depend on is bound to an expression of other
                parameters (its value is known only in the compiled model), or the declared
                values are not physical.

        Example::

            box = BodyBox(r=[0.5, 0, 0], width=0.1, density=1000.0)
            m, c, I = box.mass_properties_values()   # 5.0, [0.25, 0, 0], diag(...)
            # pinocchio.Inertia(m, c, I) is the same rigid body
        """
        m, c, I_c = evaluate_at_declared_values(self, self.mass_properties(),
                                                "mass properties")
        return float(m.ravel()[0]), c.reshape(3), I_c.reshape(3, 3)

    @property
    def mass(self) -> float:
        """Mass in kg at the declared parameter values (see :meth:`mass_properties_values`).

        Example: ``BodyCylinder(r=[1, 0, 0], diameter=0.1, density=1000.0).mass`` is
        ``1000 * pi * 0.05**2``."""
        return self.mass_properties_values()[0]

    @property
    def center_of_mass(self) -> np.ndarray:
        """Centre of mass from frame_a's origin, resolved in frame_a (m), shape (3,), at the
        declared parameter values (see :meth:`mass_properties_values`).

        Example: ``BodyBox(r=[0.5, 0, 0]).center_of_mass`` is ``[0.25, 0, 0]``."""
        return self.mass_properties_values()[1]

    @property
    def inertia(self) -> np.ndarray:
        """Inertia tensor about the centre of mass, resolved in frame_a (kg.m2), shape
        (3, 3), at the declared parameter values (see :meth:`mass_properties_values`).

        Example: ``Body(m=2.0, I_11=0.1, I_22=0.2, I_33=0.3).inertia`` is
        ``diag(0.1, 0.2, 0.3)``."""
        return self.mass_properties_values()[2]

    def template_key(self):
        """Bodies with the same declared inertia shape (diagonal or not) and gravity field
        share their equations (:meth:`mbmodel.Model.template_key`); the numeric checks of
        the mass properties run here for every instance."""
        self.check_declared_mass_properties()
        return (self._diagonal(), world_of(self).gravity_type,
                getattr(self, "check_triangle", True))

    def parameter_checks(self):
        """``mb.Assert``s on the mass properties, so that run-time parameter values are
        checked like declared ones: mass not negative, inertia positive semi-definite and
        (unless ``check_triangle=False``) satisfying the triangle inequality."""
        m, _, I_c = self.mass_properties()
        yield mb.Assert(m >= 0, "mass m must not be negative")
        scale = 1e-9 * ca.fmax(ca.trace(I_c), 1e-300)
        yield mb.Assert(_semidefinite(I_c, scale),
                        "inertia tensor about the centre of mass must be positive "
                        "semi-definite (check the signs of I_21, I_31, I_32)")
        if getattr(self, "check_triangle", True):
            # Principal moments a, b, c satisfy a + b >= c (all orderings) exactly when
            # trace/2 - I_c is positive semi-definite (it is the second moment of the mass).
            second_moment = ca.trace(I_c) / 2 * ca.SX.eye(3) - I_c
            yield mb.Assert(_semidefinite(second_moment, scale),
                            "principal moments of inertia violate the triangle inequality "
                            "(I1 + I2 >= I3); no mass distribution has them (check_triangle="
                            "False accepts lumped data on purpose)")

    def declared_mass_properties(self):
        """``(m, c, I_c)`` as numbers if all are declared numerically, else ``None``: a
        hint for the cheaper of two exact formulas, never a value the equations use."""
        return None

    def check_declared_mass_properties(self):
        """Raise ParameterError if the declared values are not physical (what
        :meth:`mass_properties` checks, without its expressions)."""
        self.mass_properties()

    def _diagonal(self):
        """Whether the inertia is declared diagonal (a hint, see
        :func:`.spatial.gyroscopic`)."""
        declared = self.declared_mass_properties()
        return declared is not None and not np.any(declared[2] - np.diag(np.diag(declared[2])))

    def body_terms(self, frame):
        """Spatial inertia ``I`` of the body at ``frame`` and its velocity-dependent force
        ``b`` (:func:`body_terms`), point gravity included."""
        m, c, I_c = self.mass_properties()
        inertia, bias = body_terms(frame, m, c, I_c, self._diagonal())
        return inertia, bias - self._point_gravity(frame, m, c)

    def body_force(self, frame, U=None):
        """``I a + b`` (:func:`body_force`, inverse analysis), point gravity included."""
        m, c, I_c = self.mass_properties()
        return (body_force(frame, m, c, I_c, self._diagonal(), U)
                - self._point_gravity(frame, m, c))

    def _point_gravity(self, frame, m, c):
        """Wrench of point gravity at ``frame`` (zero for uniform gravity, which the world's
        acceleration already carries)."""
        world = world_of(self)
        if world.gravity_type != "point":
            return ca.SX.zeros(6, 1)
        F = m * (frame.R @ world.point_gravity(frame.r_0 + frame.R.T @ c))
        return ca.vertcat(sp.cross(c, F), F)

    def equations(self):
        f = self.frame_a
        yield from self.parameter_checks()
        if self.analysis == "forward":
            inertia, bias = self.body_terms(f)
            yield f.I == sp.pack(inertia)
            yield f.b == bias
        else:
            yield cut_force(f) == self.body_force(f)


class Body(_RigidBody):
    """Rigid body with mass ``m``, centre of mass ``r_CM`` and inertia about it (MSL
    ``Parts.Body``; entries resolved in frame_a).

    Equations (force on the body at frame_a, spatial inertia ``I`` at frame_a)::

        [t; f] = I a + v x* (I v)                      (analysis "inverse")
        frame_a.I = I,  frame_a.b = v x* (I v)         (analysis "forward")

    with ``I = [I_c - m c~c~, m c~; -m c~, m 1]``, ``c = r_CM``. Point gravity adds
    ``-[c x F; F]``, ``F = m T g(r_0 + T' c)``. A negative mass, a non-positive-definite
    inertia or one violating the triangle inequality is a ParameterError
    (``check_triangle=False`` accepts lumped data that violates it on purpose, like the
    Manutec r3's link 1).

    Example::

        body = Body(m=2.0, r_CM=[0.5, 0, 0], I_11=0.01, I_22=0.1, I_33=0.1)
    """

    template_key = _RigidBody.template_key  # a key holds for the class that states it

    m = Parameter(1.0, unit="kg", min=0.0, doc="Mass")
    r_CM = Parameter([0.0, 0.0, 0.0], shape=3, unit="m",
                     doc="Centre of mass from frame_a, resolved in frame_a")
    I_11 = Parameter(0.001, unit="kg.m2", doc="Inertia about the centre of mass, entry (1,1)")
    I_22 = Parameter(0.001, unit="kg.m2", doc="Inertia entry (2,2)")
    I_33 = Parameter(0.001, unit="kg.m2", doc="Inertia entry (3,3)")
    I_21 = Parameter(0.0, unit="kg.m2", doc="Inertia entry (2,1)")
    I_31 = Parameter(0.0, unit="kg.m2", doc="Inertia entry (3,1)")
    I_32 = Parameter(0.0, unit="kg.m2", doc="Inertia entry (3,2)")

    _INERTIA_NAMES = (("I_11", "I_21", "I_31"), ("I_21", "I_22", "I_32"), ("I_31", "I_32", "I_33"))

    def __init__(self, check_triangle: bool = True, **modifiers):
        super().__init__(**modifiers)
        self.check_triangle = bool(check_triangle)

    def mass_properties(self):
        """(m, r_CM, inertia about the CM) as SX expressions of the parameters, after
        checking numeric values."""
        self.check_declared_mass_properties()
        I_c = ca.vertcat(*[ca.horzcat(*[getattr(self, n) for n in row])
                           for row in self._INERTIA_NAMES])
        return self.m, sp.vec(self.r_CM), I_c

    def check_declared_mass_properties(self):
        values = [numeric_value(self, n) for row in self._INERTIA_NAMES for n in row]
        if all(v is not None for v in values):
            _check_inertia(self, numeric_value(self, "m"),
                           np.array([float(np.ravel(v)[0]) for v in values]).reshape(3, 3),
                           self.check_triangle)

    def declared_mass_properties(self):
        """The declared ``(m, r_CM, inertia)`` if all are numbers (see
        :meth:`_RigidBody.declared_mass_properties`)."""
        names = ["m", "r_CM"] + [n for row in self._INERTIA_NAMES for n in row]
        values = [numeric_value(self, n) for n in names]
        if any(v is None for v in values):
            return None
        inertia = np.array([float(np.ravel(v)[0]) for v in values[2:]]).reshape(3, 3)
        return float(np.ravel(values[0])[0]), np.ravel(values[1]), inertia

    def visuals(self):
        return vis.body(self)


class _Shape:
    """Mix-in: frame_b rigidly attached to the body's frame_a at offset ``r``."""

    r = Parameter([0.0, 0.0, 0.0], shape=3, unit="m",
                  doc="Vector from frame_a to frame_b resolved in frame_a")
    frame_b = Frame()

    def connection_roles(self):
        yield Branch(self.frame_a.R, self.frame_b.R)

    def relative_rotation(self):
        """frame_b is not rotated (see :func:`.loops.loop_plane`)."""
        return "fixed", np.eye(3)

    def equations(self):
        fa, fb = self.frame_a, self.frame_b
        r = sp.vec(self.r)
        U = None
        if self.analysis == "inverse" and self._shares_point_acceleration():
            U = sp.point_acceleration_matrix(fa.a[0:3], fa.v[0:3], _square_sum(self))
        yield from rigid_kinematics(fa, fb, None, r, U)
        attached = attached_body(self)
        if attached is None:
            yield from rigid_forces(self, fa, fb, None, r, body=self, U=U)
        else:
            yield from rigid_forces(self, fa, None, None, r, body=_Lumped(self, attached, r))

    def template_key(self):
        key = super().template_key()
        shares = self.analysis == "inverse" and self._shares_point_acceleration()
        # What equations() read from the connections (template_key_reads_connections):
        # whether a body hangs alone on frame_b, whether the joint on frame_a knows the
        # angular velocity's square sum. Where either does, the equations hold the other
        # component's symbols, and every instance runs its own.
        return key + (shares, shares and _square_sum(self) is None,
                      attached_body(self) is None)

    def _shares_point_acceleration(self):
        """Whether the inverse analysis forms frame_a's point-acceleration matrix ``U`` once
        for frame_b and the body: worth it when the declared offset ``r`` is not zero and
        so is the centre of mass (its acceleration needs ``U`` too) or the inertia is
        diagonal (its gyroscopic term reuses the products ``w_i w_j`` of ``U``). Only the
        cost depends on this; both ways are exact for every value."""
        r = numeric_value(self, "r")
        declared = self.declared_mass_properties()
        return (r is not None and declared is not None and np.any(r)
                and (np.any(declared[1]) or self._diagonal()))


def _square_sum(shape):
    """What the joint alone on ``shape.frame_a`` knows of the frame's angular velocity
    (its ``square_sum``, see :meth:`.joints.Revolute.square_sum`), or ``None``."""
    other = alone_at(shape, shape.frame_a)
    owner = None if other is None else other.owner
    if other is None or other is not getattr(owner, "frame_b", None) or not hasattr(
            owner, "square_sum"):
        return None
    return owner.square_sum()


class BodyShape(_Shape, Body):
    """A body at frame_a rigidly attached to frame_b at offset ``r`` (MSL
    ``Parts.BodyShape``): a :class:`FixedTranslation` and a :class:`Body` in one component
    (the node sum happens inside, which keeps generated code and compile time small).

    Example::

        link = BodyShape(r=[0, 0.65, 0], r_CM=[0.172, 0.205, 0], m=56.5, I_11=2.58)
    """

    template_key = _Shape.template_key
    template_key_reads_connections = True  # the key says whether a body is attached

    def visuals(self):
        return vis.body_shape(self)


def _orthonormal_basis(length_direction, width_direction):
    """Columns: unit length direction, unit width direction made orthogonal, their cross
    product (numeric; geometry directions are structural)."""
    e1 = np.asarray(length_direction, dtype=float)
    if np.linalg.norm(e1) < 1e-12:
        raise ParameterError("length direction has zero length")
    e1 = e1 / np.linalg.norm(e1)
    w = np.asarray(width_direction, dtype=float)
    e2 = w - e1 * (e1 @ w)
    if np.linalg.norm(e2) < 1e-9:
        # width direction parallel to the length direction: pick any orthogonal one
        e2 = np.cross(e1, [1.0, 0.0, 0.0] if abs(e1[0]) < 0.9 else [0.0, 1.0, 0.0])
    e2 = e2 / np.linalg.norm(e2)
    return np.column_stack([e1, e2, np.cross(e1, e2)])


class _AlongR(_Shape):
    """Mix-in: a shape whose principal axes follow ``r`` (and a width direction), numbers
    in its equations: they are part of its template key, and they are what its declared
    mass properties are checked for (:func:`_principal_basis`)."""

    def template_key(self):
        return _Shape.template_key(self) + (tuple(_principal_basis(self).ravel().tolist()),)

    def check_declared_mass_properties(self):
        _principal_basis(self)  # what mass_properties() checks, without its expressions

    def parameter_checks(self):
        """The rigid body's checks, and ``r`` keeping its declared direction: the
        principal axes are numbers taken from it, so a run may change the shape's length
        but not its direction (the inertia would stay along the old one)."""
        yield from super().parameter_checks()
        r, along = sp.vec(self.r), ca.DM(_principal_basis(self)[:, 0])
        across = r - along * (along.T @ r)
        yield mb.Assert(across.T @ across <= 1e-18 * (r.T @ r),
                        "r may change its length at run time but not its direction (the "
                        "principal axes of the inertia are taken from the declared r); "
                        "recompile with the new r")


class BodyBox(_AlongR, _RigidBody):
    """A box of ``length = |r|`` along ``r`` (from frame_a to frame_b), ``width`` along
    ``width_direction`` and ``height``, with an optional hollow core (``inner_width``,
    ``inner_height``); mass and inertia from the geometry and ``density`` (MSL
    ``Parts.BodyBox``; default width |r|/20, steel 7700 kg/m³).

    The box's principal inertias about its centre (``r/2``) are
    ``m/12 (w²+h²)``, ``m/12 (l²+h²)``, ``m/12 (l²+w²)`` minus the same of the core.

    Example::

        link = BodyBox(r=[0.5, 0, 0], width=0.06)
    """

    width = Parameter(-1.0, unit="m", doc="Width (default: length/20)")
    height = Parameter(-1.0, unit="m", doc="Height (default: width)")
    inner_width = Parameter(0.0, unit="m", min=0.0, doc="Width of the hollow core")
    inner_height = Parameter(0.0, unit="m", min=0.0, doc="Height of the hollow core")
    density = Parameter(7700.0, unit="kg/m3", min=0.0, doc="Density (steel)")

    # (a key holds for the class that states it)
    template_key, template_key_reads_connections = _AlongR.template_key, True

    def __init__(self, width_direction=(0.0, 1.0, 0.0), **modifiers):
        super().__init__(**modifiers)
        self.width_direction = tuple(float(x) for x in width_direction)

    def parameter_checks(self):
        """Positive sizes: -1 (the default) stands for the default size only."""
        yield from super().parameter_checks()
        yield from _positive_or_default(self.width, "width", "|r|/20")
        yield from _positive_or_default(self.height, "height", "the width")

    def mass_properties(self):
        r = sp.vec(self.r)
        length = ca.sqrt(r.T @ r)
        width = ca.if_else(self.width < 0, length / 20, self.width)
        height = ca.if_else(self.height < 0, width, self.height)
        wi, hi = self.inner_width, self.inner_height
        m_out = self.density * length * width * height
        m_in = self.density * length * wi * hi
        m = m_out - m_in
        principal = [(m_out * (width ** 2 + height ** 2) - m_in * (wi ** 2 + hi ** 2)) / 12,
                     (m_out * (length ** 2 + height ** 2) - m_in * (length ** 2 + hi ** 2)) / 12,
                     (m_out * (length ** 2 + width ** 2) - m_in * (length ** 2 + wi ** 2)) / 12]
        return m, r / 2, _rotate_principal(self, principal)

    def visuals(self):
        return vis.box(self)


class BodyCylinder(_AlongR, _RigidBody):
    """A cylinder of ``length = |r|`` along ``r`` with ``diameter`` and optional
    ``inner_diameter`` (a tube); mass and inertia from geometry and ``density`` (MSL
    ``Parts.BodyCylinder``; default diameter |r|/20, MSL's ``length/world.defaultWidthFraction``,
    steel).

    Inertia about the centre: axial ``m (d² + d_i²)/8``, transverse
    ``m (l² + 3 (d² + d_i²)/4)/12``.
    """

    diameter = Parameter(-1.0, unit="m", doc="Outer diameter (default: length/20)")
    inner_diameter = Parameter(0.0, unit="m", min=0.0, doc="Inner diameter")
    density = Parameter(7700.0, unit="kg/m3", min=0.0, doc="Density (steel)")

    # (a key holds for the class that states it)
    template_key, template_key_reads_connections = _AlongR.template_key, True

    def parameter_checks(self):
        """A positive diameter: -1 (the default) stands for the default size only."""
        yield from super().parameter_checks()
        yield from _positive_or_default(self.diameter, "diameter", "|r|/20")

    def mass_properties(self):
        r = sp.vec(self.r)
        length = ca.sqrt(r.T @ r)
        d = ca.if_else(self.diameter < 0, length / 20, self.diameter)
        di = self.inner_diameter
        m = self.density * np.pi * length * (d ** 2 - di ** 2) / 4
        axial = m * (d ** 2 + di ** 2) / 8
        transverse = m * (length ** 2 + 3 * (d ** 2 + di ** 2) / 4) / 12
        return m, r / 2, _rotate_principal(self, [axial, transverse, transverse])

    def visuals(self):
        return vis.cylinder(self)


def _positive_or_default(size, name, default):
    """The assert that a size is positive or -1, its parameter's default (which stands for
    the default size): any other negative value was taken for the default silently."""
    yield mb.Assert(ca.logic_or(size == -1, size > 0),
                    f"{name} must be positive (leave it out for the default, {default})")


def _principal_basis(body) -> np.ndarray:
    """The shape's principal axes (columns: along ``r``, across it towards the width
    direction, their cross product): numbers in its equations."""
    r = numeric_value(body, "r")
    if r is None:
        raise ParameterError(f"{type(body).__name__} '{body.path}': r must be numeric (it "
                             f"sets the direction of the shape)")
    if np.linalg.norm(r) < 1e-12:
        raise ParameterError(f"{type(body).__name__} '{body.path}': r has zero length, so the "
                             f"shape has no length direction")
    return _orthonormal_basis(r.ravel(), getattr(body, "width_direction", (0.0, 1.0, 0.0)))


def _rotate_principal(body, principal):
    B = ca.DM(_principal_basis(body))
    return B @ ca.diag(ca.vertcat(*principal)) @ B.T
