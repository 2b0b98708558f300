"""Multibody ergonomics: what writing Pinocchio and MuJoCo comparisons by hand asked for.

1. Mass properties of bodies as numbers (``mass``, ``center_of_mass``, ``inertia``): against
   exact integration (box, by Gauss–Legendre quadrature) and textbook formulas (hollow
   cylinder), and against the dynamics: Pinocchio built from these numbers gives the forward
   dynamics of the mbmodel model of boxes and tubes.
2. ``FixedRotation.from_matrix`` / ``from_quaternion`` / ``from_euler`` against
   ``scipy.spatial.transform.Rotation`` (scalar-last and scalar-first quaternions,
   extrinsic and intrinsic sequences), and the frame they produce in a compiled model.
3. ``AbsoluteSensor`` orientation outputs (``R``, ``R_world``, ``Q``) against Pinocchio's
   ``oMi`` (body to world) on a random chain.
4. ``FreeMotion``'s velocity conventions (frame_b components; the MSL's frame_a ones follow
   as documented).
5. ``Revolute(actuated=True)``/``Prismatic(actuated=True)``: a chain driven by its input
   torques against ``pinocchio.aba``.
6. ``JointSpace``: forward and inverse dynamics in joint order against ``pinocchio.aba`` and
   ``pinocchio.rnea`` on a random chain and on the URDF arm ``data/arm6.urdf``.

Tolerance: ``1e-9 * max(1, max |reference|)`` as in ``test_multibody_pinocchio``.
"""

from __future__ import annotations

import os
import sys

import casadi as ca
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mbmodel as mb  # noqa: E402
import mbmodel.libraries.multibody as mbl  # noqa: E402
from mbmodel.errors import DeclarationError, ParameterError  # noqa: E402
from mbmodel.libraries.multibody import spatial as sp  # noqa: E402
from mb_trees import (RevoluteChain, TreeModel, pinocchio_model, planar_rotation,  # noqa: E402
                      random_tree)

TOL = 1e-9
ARM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "arm6.urdf")


def _close(actual, reference, tol=TOL):
    actual, reference = np.asarray(actual, float), np.asarray(reference, float)
    scale = max(1.0, float(np.abs(reference).max()))
    err = float(np.abs(actual - reference).max())
    assert err <= tol * scale, f"max error {err:.3e} > {tol:.0e} * {scale:.3e}"


def _rotation_of(fixed):
    """The matrix whose columns are a FixedRotation's frame_b axes in frame_a (``E'``)."""
    n = np.ravel(fixed.declaration("n").value)
    angle = float(np.ravel(fixed.declaration("angle").value)[0])
    return np.array(ca.evalf(sp.planar_rotation(n / np.linalg.norm(n), angle))).T


def _skew(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


# -- 1. mass properties -------------------------------------------------------------------------

def _basis(r, width_direction):
    e1 = np.asarray(r, float) / np.linalg.norm(r)
    w = np.asarray(width_direction, float)
    e2 = w - e1 * (e1 @ w)
    e2 /= np.linalg.norm(e2)
    return np.column_stack([e1, e2, np.cross(e1, e2)])


def _solid_box(sizes, density):
    """(mass, second-moment tensor about the centre) of a solid box centred at the origin,
    by 2-point Gauss–Legendre quadrature per axis (exact for these polynomials)."""
    nodes = np.array([-1.0, 1.0]) / np.sqrt(3.0)
    half = np.asarray(sizes, float) / 2
    volume = float(np.prod(sizes))
    mass, J = density * volume, np.zeros((3, 3))
    for i in nodes:
        for j in nodes:
            for k in nodes:
                p = half * np.array([i, j, k])
                J += density * volume / 8 * (p @ p * np.eye(3) - np.outer(p, p))
    return mass, J


def test_body_gives_its_declared_mass_properties():
    body = mbl.Body(m=2.5, r_CM=[0.1, -0.2, 0.3], I_11=0.3, I_22=0.4, I_33=0.5, I_21=0.01,
                    I_31=-0.02, I_32=0.03)
    assert body.mass == 2.5
    assert np.array_equal(body.center_of_mass, [0.1, -0.2, 0.3])
    I = np.array([[0.3, 0.01, -0.02], [0.01, 0.4, 0.03], [-0.02, 0.03, 0.5]])
    assert np.array_equal(body.inertia, I)
    m, c, I_c = mbl.BodyShape(r=[1, 0, 0], m=3.0, r_CM=[0.5, 0, 0]).mass_properties_values()
    assert (m, c.tolist(), I_c.tolist()) == (3.0, [0.5, 0, 0], (np.eye(3) * 0.001).tolist())


def test_hollow_box_matches_exact_integration():
    r, width_direction = np.array([0.3, -0.4, 0.5]), (1.0, 1.0, 0.0)
    box = mbl.BodyBox(r=list(r), width=0.2, height=0.15, inner_width=0.1, inner_height=0.05,
                      density=2700.0, width_direction=width_direction)
    length = np.linalg.norm(r)
    m_out, J_out = _solid_box([length, 0.2, 0.15], 2700.0)
    m_in, J_in = _solid_box([length, 0.1, 0.05], 2700.0)
    B = _basis(r, width_direction)
    assert box.mass == pytest.approx(m_out - m_in, rel=1e-14)
    _close(box.center_of_mass, r / 2, 1e-15)
    _close(box.inertia, B @ (J_out - J_in) @ B.T, 1e-14)
    # the MSL's defaults: width = length/20, height = width, steel
    plain = mbl.BodyBox(r=[0, 0, 2.0])
    assert plain.mass == pytest.approx(7700.0 * 2.0 * 0.1 * 0.1, rel=1e-14)


def test_tube_matches_the_textbook_formulas():
    r = np.array([0.0, 0.6, 0.8])
    tube = mbl.BodyCylinder(r=list(r), diameter=0.2, inner_diameter=0.12, density=1000.0)
    R, Ri, length = 0.1, 0.06, 1.0
    m = 1000.0 * np.pi * length * (R ** 2 - Ri ** 2)
    axial = m * (R ** 2 + Ri ** 2) / 2
    transverse = m * (3 * (R ** 2 + Ri ** 2) + length ** 2) / 12
    e = r / length
    assert tube.mass == pytest.approx(m, rel=1e-14)
    _close(tube.center_of_mass, r / 2, 1e-15)
    _close(tube.inertia, axial * np.outer(e, e) + transverse * (np.eye(3) - np.outer(e, e)),
           1e-14)
    # default diameter: length/20, MSL's length/world.defaultWidthFraction (it was length/5)
    assert mbl.BodyCylinder(r=[2.0, 0, 0]).mass == pytest.approx(7700.0 * np.pi * 2 * 0.1 ** 2
                                                                  / 4, rel=1e-14)


def test_mass_properties_of_bound_parameters_are_an_error():
    class Linked(mb.Model):
        rho = mb.Parameter(1000.0)

        def __init__(self):
            super().__init__()
            self.link = mbl.BodyBox(r=[1.0, 0, 0], density=2 * self.rho)

    with pytest.raises(ParameterError, match=r"link.*density = .*rho.*bound to an expression"):
        _ = Linked().link.mass
    with pytest.raises(ParameterError, match="positive semi-definite"):
        _ = mbl.Body(m=1.0, I_11=-1.0).inertia


BOXES = [dict(kind="box", r=[0.4, 0.1, 0.0], width=0.08, height=0.05, inner_width=0.04,
              inner_height=0.02, density=2700.0, width_direction=(0, 0, 1)),
         dict(kind="tube", r=[0.0, 0.35, 0.1], diameter=0.06, inner_diameter=0.04,
              density=7700.0),
         dict(kind="box", r=[0.1, 0.0, -0.3], width=0.1, density=1000.0,
              width_direction=(1, 1, 0)),
         dict(kind="tube", r=[0.3, -0.2, 0.2], diameter=0.05, density=2000.0)]
BOX_AXES = ([0, 0, 1], [0.3, 1, 0], [1, 0, 0.2], [0, 1, 0])


class BoxChain(mb.Model):
    """world -> revolute -> BodyBox/BodyCylinder -> revolute -> ... (actuated joints)."""

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World(n=[0, 0, -1])
        for i, spec in enumerate(BOXES):
            options = {k: v for k, v in spec.items() if k != "kind"}
            part = mbl.BodyBox(**options) if spec["kind"] == "box" else mbl.BodyCylinder(**options)
            self.add(f"joint{i}", mbl.Revolute(n=BOX_AXES[i], actuated=True))
            self.add(f"link{i}", part)

    def equations(self):
        previous = self.world.frame_b
        for i in range(len(BOXES)):
            joint, link = getattr(self, f"joint{i}"), getattr(self, f"link{i}")
            yield mb.connect(previous, joint.frame_a)
            yield mb.connect(joint.frame_b, link.frame_a)
            previous = link.frame_b


def test_pinocchio_built_from_the_mass_properties_has_the_same_dynamics():
    pin = pytest.importorskip("pinocchio")
    model = BoxChain()
    pm = pin.Model()
    parent, offset = 0, np.zeros(3)
    for i in range(len(BOXES)):
        link = getattr(model, f"link{i}")
        axis = np.asarray(BOX_AXES[i], float)
        parent = pm.addJoint(parent, pin.JointModelRevoluteUnaligned(axis / np.linalg.norm(axis)),
                             pin.SE3(np.eye(3), offset), f"j{i}")
        pm.appendBodyToJoint(parent, pin.Inertia(link.mass, link.center_of_mass, link.inertia),
                             pin.SE3.Identity())
        offset = np.asarray(BOXES[i]["r"], float)
    pd = pm.createData()
    forward = mbl.JointSpace(mb.compile(model, parameters="constant"), native=False)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, v, tau = rng.uniform(-3, 3, 4), rng.normal(size=4), 20 * rng.normal(size=4)
        _close(forward.forward(q, v, tau), pin.aba(pm, pd, q, v, tau))


# -- 2. FixedRotation from a matrix, a quaternion, Euler angles -----------------------------

@pytest.mark.parametrize("seq", ["xyz", "XYZ", "zyx", "ZYX", "zxz", "ZXZ", "y", "XY", "yx"])
def test_from_euler_matches_scipy(seq):
    rng = np.random.default_rng(len(seq) + sum(map(ord, seq)))
    for _ in range(5):
        angles = rng.uniform(-np.pi, np.pi, len(seq))
        reference = Rotation.from_euler(seq, angles).as_matrix()
        _close(_rotation_of(mbl.FixedRotation.from_euler(seq, angles)), reference, 1e-14)
        _close(_rotation_of(mbl.FixedRotation.from_euler(seq, np.rad2deg(angles),
                                                         degrees=True)), reference, 1e-14)


def test_from_euler_xyz_is_urdf_rpy_and_upper_case_is_intrinsic():
    roll, pitch, yaw = 0.3, -0.7, 1.1
    Rx, Ry, Rz = (Rotation.from_rotvec(np.eye(3)[k] * a).as_matrix()
                  for k, a in enumerate((roll, pitch, yaw)))
    _close(_rotation_of(mbl.FixedRotation.from_euler("xyz", [roll, pitch, yaw])), Rz @ Ry @ Rx,
           1e-14)
    _close(_rotation_of(mbl.FixedRotation.from_euler("XYZ", [roll, pitch, yaw])), Rx @ Ry @ Rz,
           1e-14)


def test_from_quaternion_orders_and_library_convention():
    rng = np.random.default_rng(7)
    for k in range(10):
        rotation = Rotation.random(random_state=k)
        xyzw = rotation.as_quat()
        reference = rotation.as_matrix()
        _close(_rotation_of(mbl.FixedRotation.from_quaternion(xyzw)), reference, 1e-14)
        wxyz = np.roll(xyzw, 1)
        _close(_rotation_of(mbl.FixedRotation.from_quaternion(wxyz, scalar_first=True)),
               reference, 1e-14)
        # normalised; q and -q are the same rotation
        _close(_rotation_of(mbl.FixedRotation.from_quaternion(-rng.uniform(0.5, 3) * xyzw)),
               reference, 1e-14)
        # the same quaternion as Spherical.Q / FreeMotion.Q: E(Q) = R'
        E = np.array(ca.evalf(sp.quaternion_rotation(ca.DM(xyzw))))
        _close(E, reference.T, 1e-14)
        _close(_rotation_of(mbl.FixedRotation.from_matrix(reference, r=[1, 2, 3])), reference,
               1e-14)
    # the two orders differ
    q = Rotation.from_euler("z", 1.0).as_quat()
    assert not np.allclose(_rotation_of(mbl.FixedRotation.from_quaternion(q)),
                           _rotation_of(mbl.FixedRotation.from_quaternion(q, scalar_first=True)))


def test_from_matrix_near_and_at_half_turns_and_identity():
    for R in (np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1]),
              Rotation.from_rotvec(np.array([1, -2, 3]) / np.sqrt(14) * np.pi).as_matrix(),
              Rotation.from_rotvec(np.array([1, 1, 0]) / np.sqrt(2) * (np.pi - 1e-9)).as_matrix(),
              np.eye(3), Rotation.from_rotvec([1e-9, 0, 0]).as_matrix()):
        fixed = mbl.FixedRotation.from_matrix(R, r=[0.1, 0.2, 0.3])
        _close(_rotation_of(fixed), R, 1e-14)
        assert np.array_equal(np.ravel(fixed.declaration("r").value), [0.1, 0.2, 0.3])


def test_invalid_rotations_are_errors():
    with pytest.raises(ParameterError, match="determinant -1"):
        mbl.FixedRotation.from_matrix(np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ParameterError, match="not orthonormal"):
        mbl.FixedRotation.from_matrix(np.eye(3) * 1.01)
    with pytest.raises(ParameterError, match="not orthonormal"):
        mbl.FixedRotation.from_matrix([[1, 0.1, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(ParameterError, match="3x3"):
        mbl.FixedRotation.from_matrix(np.eye(2))
    with pytest.raises(ParameterError, match="3x3"):
        mbl.FixedRotation.from_matrix(np.full((3, 3), np.nan))
    with pytest.raises(ParameterError, match="is zero"):
        mbl.FixedRotation.from_quaternion([0, 0, 0, 0])
    with pytest.raises(ParameterError, match="4 finite numbers"):
        mbl.FixedRotation.from_quaternion([0, 0, 1])
    for seq in ("xYz", "xxz", "xyzx", "abc", ""):
        with pytest.raises(ParameterError, match="seq must be"):
            mbl.FixedRotation.from_euler(seq, [0.1] * max(1, len(seq)))
    with pytest.raises(ParameterError, match="one finite angle per axis"):
        mbl.FixedRotation.from_euler("xyz", [0.1, 0.2])


class Placed(mb.Model):
    """A FixedRotation from a matrix and a sensor on its frame_b."""

    R = Rotation.from_euler("zyx", [0.4, -1.2, 2.0]).as_matrix()

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World()
        self.place = mbl.FixedRotation.from_matrix(self.R, r=[0.5, -0.1, 0.2])
        self.sensor = mbl.AbsoluteSensor()

    def equations(self):
        yield mb.connect(self.world.frame_b, self.place.frame_a)
        yield mb.connect(self.place.frame_b, self.sensor.frame_a)


def test_fixed_rotation_from_matrix_places_the_frame():
    cm = mb.compile(Placed(), analysis="inverse", parameters="constant")
    names = ([f"sensor.R_world[{i},{j}]" for i in range(3) for j in range(3)]
             + [f"sensor.R[{i},{j}]" for i in range(3) for j in range(3)]
             + [f"sensor.r[{i}]" for i in range(3)]
             + [f"place.frame_b.R[{i},{j}]" for i in range(3) for j in range(3)])
    y = np.array(cm.evaluator(names, native=False)())
    _close(y[:9].reshape(3, 3), Placed.R, 1e-14)
    _close(y[9:18].reshape(3, 3), Placed.R.T, 1e-14)
    _close(y[18:21], [0.5, -0.1, 0.2], 1e-15)
    _close(y[21:].reshape(3, 3), Placed.R.T, 1e-14)     # the Frame's R is world -> frame


# -- a random chain of actuated joints, with sensors, and its Pinocchio twin -------------------

class ActuatedTree(mb.Model):
    """The tree of an ``mb_trees.random_tree`` spec (revolute and prismatic joints) with
    ``actuated=True`` joints, placements from matrices, and an AbsoluteSensor per body."""

    def __init__(self, spec, **modifiers):
        super().__init__(**modifiers)
        self.spec = spec
        self.world = mbl.World(n=[0.0, 0.0, -1.0])
        for i, s in enumerate(spec):
            E0 = planar_rotation(s["n0"], s["angle"])    # frame_a -> frame_b coordinates
            self.add(f"place{i}", mbl.FixedRotation.from_matrix(E0.T, r=list(s["r0"])))
            kind = mbl.Revolute if s["kind"] == "revolute" else mbl.Prismatic
            self.add(f"joint{i}", kind(n=list(s["axis"]), actuated=True))
            I = s["I"]
            self.add(f"body{i}", mbl.Body(m=s["m"], r_CM=list(s["c"]), I_11=I[0, 0],
                                          I_22=I[1, 1], I_33=I[2, 2], I_21=I[1, 0],
                                          I_31=I[2, 0], I_32=I[2, 1]))
            self.add(f"sensor{i}", mbl.AbsoluteSensor())

    def equations(self):
        for i, s in enumerate(self.spec):
            parent = (self.world.frame_b if s["parent"] < 0
                      else getattr(self, f"joint{s['parent']}").frame_b)
            place, joint = getattr(self, f"place{i}"), getattr(self, f"joint{i}")
            yield mb.connect(parent, place.frame_a)
            yield mb.connect(place.frame_b, joint.frame_a)
            yield mb.connect(joint.frame_b, getattr(self, f"body{i}").frame_a,
                             getattr(self, f"sensor{i}").frame_a)


N_CHAIN = 8


class Twin:
    """One random chain: spec, Pinocchio model, our forward and inverse models, states."""

    def __init__(self, seed, revolute_only):
        pytest.importorskip("pinocchio")
        rng = np.random.default_rng(seed)
        self.spec = random_tree(N_CHAIN, rng, chain=True)
        if revolute_only:
            self.spec = [dict(s, kind="revolute") for s in self.spec]
        self.pm = pinocchio_model(self.spec)
        self.pd = self.pm.createData()
        self.fd = mb.compile(ActuatedTree(self.spec), parameters="constant")
        self.states = [(rng.uniform(-2, 2, N_CHAIN), rng.normal(size=N_CHAIN),
                        rng.normal(size=N_CHAIN), 10 * rng.normal(size=N_CHAIN))
                       for _ in range(3)]

    def coordinate(self, i):
        return "phi" if self.spec[i]["kind"] == "revolute" else "s"


@pytest.fixture(scope="module")
def revolutes():
    return Twin(21, revolute_only=True)


@pytest.fixture(scope="module")
def mixed():
    twin = Twin(22, revolute_only=False)
    twin.id = mb.compile(ActuatedTree(twin.spec), analysis="inverse", parameters="constant")
    return twin


# -- 3. orientation outputs -----------------------------------------------------------------

def test_absolute_sensor_orientations_match_pinocchio(mixed):
    pin = pytest.importorskip("pinocchio")
    cm, n = mixed.fd, N_CHAIN
    names = [f"sensor{i}.{kind}[{r},{c}]" for kind in ("R_world", "R") for i in range(n)
             for r in range(3) for c in range(3)]
    names += [f"sensor{i}.Q[{k}]" for i in range(n) for k in range(4)]
    names += [f"sensor{i}.r[{k}]" for i in range(n) for k in range(3)]
    sensors = cm.evaluator(names, native=False)
    for q, qd, _, _ in mixed.states:
        x = cm.state_vector({f"joint{i}.{mixed.coordinate(i)}": q[i] for i in range(n)})
        y = np.array(sensors(x, np.zeros(len(cm.inputs))))
        R_world = y[:9 * n].reshape(n, 3, 3)
        R = y[9 * n:18 * n].reshape(n, 3, 3)
        Q = y[18 * n:22 * n].reshape(n, 4)
        r = y[22 * n:].reshape(n, 3)
        pin.forwardKinematics(mixed.pm, mixed.pd, q)
        for i in range(n):
            oMi = mixed.pd.oMi[i + 1]
            _close(R_world[i], oMi.rotation, 1e-12)
            _close(R[i], oMi.rotation.T, 1e-12)
            _close(r[i], oMi.translation, 1e-12)
            _close(Q[i], Rotation.from_matrix(oMi.rotation).as_quat(canonical=True), 1e-12)
            _close(Q[i], pin.Quaternion(oMi.rotation).coeffs() * np.sign(
                pin.Quaternion(oMi.rotation).coeffs()[3]), 1e-12)


def test_sensor_quaternion_at_half_turns():
    E = ca.SX.sym("E", 3, 3)
    quaternion = ca.Function("Q", [E], [sp.quaternion_of(E)])
    for rotvec in ([np.pi, 0, 0], [0, np.pi, 0], [0, 0, np.pi], [0, 0, 0],
                   np.array([1, 1, 1]) / np.sqrt(3) * np.pi, [0, 0, np.pi - 1e-12]):
        rotation = Rotation.from_rotvec(rotvec)
        Q = np.array(quaternion(rotation.as_matrix().T)).ravel()
        reference = rotation.as_quat(canonical=True)
        assert min(np.abs(Q - reference).max(), np.abs(Q + reference).max()) < 1e-12
        assert Q[3] >= 0


# -- 4. FreeMotion's velocity conventions --------------------------------------------------------

class FreeBody(mb.Model):
    world = mbl.World(gravity_type="none")
    free = mbl.FreeMotion()
    body = mbl.Body(m=2.0, r_CM=[0.1, 0.2, -0.1], I_11=0.2, I_22=0.3, I_33=0.4, I_21=0.01)

    def equations(self):
        yield mb.connect(self.world.frame_b, self.free.frame_a)
        yield mb.connect(self.free.frame_b, self.body.frame_a)


@pytest.fixture(scope="module")
def free_body():
    return mb.compile(FreeBody(), parameters="constant")


def test_free_motion_velocities_are_body_frame_components(free_body):
    cm = free_body
    rng = np.random.default_rng(4)
    Q = Rotation.random(random_state=3).as_quat()
    values = {f"free.Q[{k}]": Q[k] for k in range(4)}
    for name in ("r_rel", "v_rel", "w_rel"):
        values.update({f"free.{name}[{k}]": value for k, value in
                       enumerate(rng.normal(size=3))})
    x = cm.state_vector(values)
    xdot = cm.named(cm.evaluator(native=False)(x), "states")
    vec = lambda name: np.array([values[f"free.{name}[{k}]"] for k in range(3)])  # noqa: E731
    der = lambda name, n=3: np.array([xdot[f"free.{name}[{k}]"] for k in range(n)])  # noqa: E731
    E_T = Rotation.from_quat(Q).as_matrix()          # frame_b -> frame_a (= world)
    # v_rel is der(r_rel) resolved in frame_b: MSL's v_rel_a = E' v_rel
    _close(der("r_rel"), E_T @ vec("v_rel"), 1e-14)
    # w_rel is resolved in frame_b: der(E') = E' w~, checked through der(Q)
    h = 1e-6
    dQ = der("Q", 4)
    dE_T = (Rotation.from_quat(Q + h * dQ).as_matrix()
            - Rotation.from_quat(Q - h * dQ).as_matrix()) / (2 * h)
    _close(dE_T, E_T @ _skew(vec("w_rel")), 1e-8)
    # MSL's a_rel_a = der(v_rel_a) = E' (a_rel + w_rel x v_rel)
    a_rel_a = E_T @ (der("v_rel") + np.cross(vec("w_rel"), vec("v_rel")))
    _close(a_rel_a, dE_T @ vec("v_rel") + E_T @ der("v_rel"), 1e-8)


# -- 5. actuated joints -------------------------------------------------------------------------

def test_actuated_joints_are_inputs_forward_and_outputs_inverse(mixed):
    expected = [f"joint{i}.{'tau' if s['kind'] == 'revolute' else 'f'}"
                for i, s in enumerate(mixed.spec)]
    assert mixed.fd.inputs == expected
    assert all(name in mixed.id.output_names and name not in mixed.id.inputs
               for name in expected)
    assert mixed.id.inputs == [f"joint{i}.{n}" for i, s in enumerate(mixed.spec)
                               for n in (("phi", "w", "a") if s["kind"] == "revolute"
                                         else ("s", "v", "a"))]


def test_actuated_revolute_chain_matches_aba(revolutes):
    pin = pytest.importorskip("pinocchio")
    cm = revolutes.fd
    ev = cm.evaluator(native=False)
    acc = [cm.states.index(f"joint{i}.w") for i in range(N_CHAIN)]
    for q, qd, _, tau in revolutes.states:
        x = cm.state_vector({**{f"joint{i}.phi": q[i] for i in range(N_CHAIN)},
                             **{f"joint{i}.w": qd[i] for i in range(N_CHAIN)}})
        u = cm.input_vector({f"joint{i}.tau": tau[i] for i in range(N_CHAIN)})
        assert np.abs(tau).max() > 1
        _close(np.array(ev(x, u))[acc], pin.aba(revolutes.pm, revolutes.pd, q, qd, tau))


def test_actuated_and_axis_flange_together_are_an_error():
    with pytest.raises(DeclarationError, match="choose one"):
        mbl.Revolute(actuated=True, use_axis_flange=True)
    with pytest.raises(DeclarationError, match="translational.Force"):
        mbl.Prismatic(actuated=True, use_axis_flange=True)


# -- 6. JointSpace -------------------------------------------------------------------------------

def test_joint_space_matches_aba_and_rnea(mixed):
    pin = pytest.importorskip("pinocchio")
    forward, inverse = mbl.JointSpace(mixed.fd), mbl.JointSpace(mixed.id)
    assert forward.joints == inverse.joints == [f"joint{i}" for i in range(N_CHAIN)]
    assert (forward.analysis, inverse.analysis) == ("forward", "inverse")
    for q, qd, qdd, tau in mixed.states:
        _close(forward.forward(q, qd, tau), pin.aba(mixed.pm, mixed.pd, q, qd, tau))
        _close(inverse.inverse(q, qd, qdd), pin.rnea(mixed.pm, mixed.pd, q, qd, qdd))
        # the round trip, with results that are not overwritten by the next call
        a = forward.forward(q, qd, tau)
        _close(inverse.inverse(q, qd, a), tau)


def test_joint_space_orders_and_names(mixed):
    order = [f"joint{i}" for i in reversed(range(N_CHAIN))]
    forward = mbl.JointSpace(mixed.fd, joints=order, native=False)
    reference = mbl.JointSpace(mixed.fd, native=False)
    q, qd, _, tau = mixed.states[0]
    qdd = reference.forward(q, qd, tau)
    _close(forward.forward(q[::-1], qd[::-1], tau[::-1]), qdd[::-1], 1e-14)
    named = reference.named(qdd)
    assert list(named) == reference.joints and named["joint3"] == qdd[3]
    as_dicts = [dict(zip(reference.joints, v)) for v in (q, qd, tau)]
    _close(forward.forward(*as_dicts), qdd[::-1], 1e-14)
    assert [j.kind for j in reference.names] == [s["kind"] for s in mixed.spec]


def test_joint_space_of_a_urdf_arm_matches_pinocchio():
    pytest.importorskip("yourdfpy")
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(ARM)
    pd = pm.createData()
    arm = mbl.from_urdf(ARM)
    forward = mbl.JointSpace(mb.compile(arm, parameters="constant"))
    inverse = mbl.JointSpace(mb.compile(mbl.from_urdf(ARM, actuated=False),
                                        analysis="inverse", parameters="constant"))
    ours = {pm.names[j]: arm.joint_names[pm.names[j]] for j in range(1, pm.njoints)}
    assert forward.joints == inverse.joints == [ours[pm.names[j]] for j in range(1, pm.njoints)]
    assert [j.input for j in forward.names][:1] == [f"{forward.joints[0]}_drive.tau"]
    rng = np.random.default_rng(8)
    for _ in range(3):
        q_pin = pin.randomConfiguration(pm, -3 * np.ones(pm.nq), 3 * np.ones(pm.nq))
        v, a, tau = rng.normal(size=pm.nv), rng.normal(size=pm.nv), 5 * rng.normal(size=pm.nv)
        # Pinocchio's continuous joint is (cos q, sin q)
        q = np.array([np.arctan2(q_pin[jm.idx_q + 1], q_pin[jm.idx_q]) if jm.nq == 2
                      else q_pin[jm.idx_q] for jm in list(pm.joints)[1:]])
        _close(forward.forward(q, v, tau), pin.aba(pm, pd, q_pin, v, tau))
        _close(inverse.inverse(q, v, a), pin.rnea(pm, pd, q_pin, v, a))


def test_joint_space_with_torque_inputs_named(mixed):
    """Joints driven through their flanges by top-level inputs (``mb_trees.TreeModel``)."""
    pin = pytest.importorskip("pinocchio")
    spec = mixed.spec[:3]
    cm = mb.compile(TreeModel(spec, actuated=True), parameters="constant")
    with pytest.raises(DeclarationError, match="torques="):
        mbl.JointSpace(cm)
    forward = mbl.JointSpace(cm, torques={f"joint{i}": f"u{i}" for i in range(3)},
                             native=False)
    pm = pinocchio_model(spec)
    q, qd, _, tau = (v[:3] for v in mixed.states[0])
    _close(forward.forward(q, qd, tau), pin.aba(pm, pm.createData(), q, qd, tau))


def test_joint_space_errors(free_body, mixed):
    with pytest.raises(DeclarationError, match=r"spherical or free joints \(free\).*names"):
        mbl.JointSpace(free_body)
    passive = mb.compile(RevoluteChain(2), parameters="constant")
    with pytest.raises(DeclarationError, match="no joint torque inputs.*actuated=True"):
        mbl.JointSpace(passive)
    inverse = mbl.JointSpace(mixed.id, native=False)
    with pytest.raises(DeclarationError, match="inverse analysis"):
        inverse.forward(np.zeros(N_CHAIN), np.zeros(N_CHAIN), np.zeros(N_CHAIN))
    forward = mbl.JointSpace(mixed.fd, native=False)
    with pytest.raises(DeclarationError, match="forward analysis"):
        forward.inverse(np.zeros(N_CHAIN), np.zeros(N_CHAIN), np.zeros(N_CHAIN))
    with pytest.raises(ValueError, match="3 values for the 8 joints"):
        forward.forward(np.zeros(3), np.zeros(N_CHAIN), np.zeros(N_CHAIN))
    with pytest.raises(ValueError, match="missing: joint7"):
        forward.forward({f"joint{i}": 0.0 for i in range(7)}, np.zeros(8), np.zeros(8))
    with pytest.raises(DeclarationError, match="no revolute or prismatic joint body0"):
        mbl.JointSpace(mixed.fd, joints=["body0"])
    with pytest.raises(DeclarationError, match="missing: joint7"):
        mbl.JointSpace(mixed.fd, joints=[f"joint{i}" for i in range(7)])


class _Pendulum(mb.Model):
    """A point-like body 1 m from a revolute axis along z, at rest at phi = 0."""

    def __init__(self):
        super().__init__()
        self.fixed = mbl.Fixed()
        self.joint = mbl.Revolute(n=[0, 0, 1])
        self.body = mbl.Body(m=1.0, r_CM=[1.0, 0, 0], I_33=0.001)

    def equations(self):
        yield mb.connect(self.fixed.frame_b, self.joint.frame_a)
        yield mb.connect(self.joint.frame_b, self.body.frame_a)


def test_a_model_changed_after_a_compile_compiles_as_changed():
    """What the library derives from the whole model (its World, the default world) is
    kept for one compile, not in the model: a World added after a first compile is the
    world of the next one. Gravity along -y: w' = -g m r / (m r^2 + I_33)."""
    model = _Pendulum()
    before = vars(model).keys() - {"_members"}

    def acceleration(cm):
        x = cm.state_vector({"joint.phi": 0.0, "joint.w": 0.0})
        xdot = np.asarray(cm.dynamics(0, x, [], cm.parameter_vector(), [])[0]).ravel()
        return xdot[cm.states.index("joint.w")]

    assert acceleration(mb.compile(model)) == pytest.approx(-9.81 / 1.001, rel=1e-12)
    assert vars(model).keys() - {"_members"} == before  # nothing kept in the user's model
    model.add("world", mbl.World(g=1.0))
    assert acceleration(mb.compile(model)) == pytest.approx(-1.0 / 1.001, rel=1e-12)


def test_vector_parameters_by_their_declared_name():
    """``params={"j.n": [...]}`` sets a vector parameter's entries (``j.n[0]``, ...), as
    Modelica's ``j(n={...})`` modifier does: it had said "no parameter 'j.n'"."""
    from test_multibody_errors import _pendulum  # world - joint (about z) - body
    cm = mb.compile(_pendulum(m=1.0, r_CM=[1.0, 0, 0], I_11=0.0, I_22=0.0, I_33=0.0))
    x = cm.state_vector({"joint.phi": 0.0, "joint.w": 0.0})
    fd = cm.evaluator(native=False)

    def acceleration(params):
        return float(fd(x, [], cm.parameter_vector(params))[1])

    # gravity along -x on a point mass at (0, 0.5, 0) turning about z: a = g / 0.5
    by_name = acceleration({"world.n": [-1.0, 0.0, 0.0], "body.r_CM": [0.0, 0.5, 0.0]})
    by_entry = acceleration({"world.n[0]": -1.0, "world.n[1]": 0.0,
                             "body.r_CM[0]": 0.0, "body.r_CM[1]": 0.5})
    assert by_name == pytest.approx(9.81 / 0.5, rel=1e-12) and by_name == by_entry
    # a column is a vector too (gravity along +y on the mass at (1, 0, 0): a = +g)
    assert acceleration({"world.n": np.array([[0.0], [1.0], [0.0]])}) == pytest.approx(
        9.81, rel=1e-12)
    with pytest.raises(mb.ParameterError, match=r"params\['joint.n'\] has shape \(2,\); "
                                                r"'joint.n' has shape \(3,\)"):
        cm.parameter_vector({"joint.n": [1.0, 0.0]})


@pytest.mark.parametrize("shape", ["BodyCylinder", "BodyBox"])
def test_shape_length_changes_at_run_time_but_not_its_direction(shape):
    """A shape's principal axes are numbers from its declared ``r``: a run may scale ``r``
    (same answer as declaring it) but turning it is refused; a cylinder along z turned
    along y had kept its inertia along z (41 % off, no error)."""
    def spinner(r):
        class Spinner(mb.Model):
            world = mbl.World(gravity_type="none")
            j = mbl.Revolute(n=[0, 1, 0], actuated=True)
            body = getattr(mbl, shape)(r=list(r), **({"diameter": 0.3} if shape ==
                                                    "BodyCylinder" else {"width": 0.3}))

            def equations(self):
                yield mb.connect(self.world.frame_b, self.j.frame_a)
                yield mb.connect(self.j.frame_b, self.body.frame_a)
        return mb.compile(Spinner())

    declared = spinner([0.0, 0.0, 0.4])
    x = declared.state_vector({"j.phi": 0.0, "j.w": 0.0})
    fd = declared.evaluator(native=False)
    longer = float(fd(x, [1.0], declared.parameter_vector({"body.r": [0.0, 0.0, 0.7]}))[1])
    reference = spinner([0.0, 0.0, 0.7])
    expected = float(reference.evaluator(native=False)(x, [1.0],
                                                       reference.parameter_vector())[1])
    assert longer == pytest.approx(expected, rel=1e-12)
    # the closed form: a unit torque about y on the shape turning about its end (steel)
    L, d = 0.7, 0.3
    if shape == "BodyCylinder":
        m = 7700 * np.pi * L * d ** 2 / 4
        inertia = m * (L ** 2 + 3 * d ** 2 / 4) / 12 + m * (L / 2) ** 2
    else:  # width along y (the default width direction), height = width
        m = 7700 * L * d * d
        inertia = m * (L ** 2 + d ** 2) / 12 + m * (L / 2) ** 2
    assert longer == pytest.approx(1.0 / inertia, rel=1e-12)
    with pytest.raises(mb.ParameterError, match="body: r may change its length at run time "
                                                "but not its direction"):
        declared.parameter_vector({"body.r": [0.0, 0.4, 0.0]})
