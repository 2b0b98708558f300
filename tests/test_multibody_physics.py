"""Multibody physics checked against independent expectations: conservation laws,
closed-form solutions, and scipy integrations of the textbook equations of motion.

Every test builds a small mechanism from the multibody library, simulates (or evaluates) it,
and compares with formulas written out here (never with a second mbmodel run).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.special import ellipk

import mbmodel as mb
from mbmodel.libraries import multibody as mbl

G = 9.81
TIGHT = dict(rtol=1e-10, atol=1e-12)
# The free body keeps v_rel and w_rel in its own, fast-spinning frame: integration error at
# rtol=1e-10 accumulates to ~1e-7 of the centre-of-mass motion over 10 s (it scales with the
# tolerance, 1e-12 brings it to ~1e-9).
TIGHTER = dict(rtol=1e-12, atol=1e-14)


def vec(res, name, n=3):
    """A vector variable of a result as an (len(t), n) array."""
    return np.column_stack([res[f"{name}[{k}]"] for k in range(n)])


def mat(res, name):
    """A 3x3 matrix variable of a result as an (len(t), 3, 3) array."""
    return np.stack([np.column_stack([res[f"{name}[{i},{j}]"] for j in range(3)])
                     for i in range(3)], axis=1)


def rot(axis, angle):
    """MSL planar rotation: maps frame_a coordinates to those of a frame rotated by
    ``angle`` about ``axis`` (E = n n' + (1 - n n') cos - n~ sin)."""
    n = np.asarray(axis, float) / np.linalg.norm(axis)
    nx = np.array([[0, -n[2], n[1]], [n[2], 0, -n[0]], [-n[1], n[0], 0]])
    return np.outer(n, n) + (np.eye(3) - np.outer(n, n)) * np.cos(angle) - nx * np.sin(angle)


def quat(axis, angle):
    """MSL quaternion [n sin(angle/2); cos(angle/2)] of the same rotation."""
    n = np.asarray(axis, float) / np.linalg.norm(axis)
    return list(n * np.sin(angle / 2)) + [np.cos(angle / 2)]


def rel_err(values, reference, scale=None):
    values, reference = np.asarray(values, float), np.asarray(reference, float)
    scale = np.abs(reference).max() if scale is None else scale
    return float(np.abs(values - reference).max() / scale)


# --------------------------------------------------------------------------------------
# (a) undamped triple pendulum: energy conservation
# --------------------------------------------------------------------------------------

LINKS = [  # length, mass, centre of mass (planar, in the link frame), I_33 about the CM
    dict(l=1.0, m=1.5, c=(0.45, 0.05), I=0.12),
    dict(l=0.8, m=1.0, c=(0.40, -0.03), I=0.06),
    dict(l=0.6, m=0.7, c=(0.35, 0.02), I=0.03),
]
PHI0 = [0.9, -1.3, 2.1]
W0 = [0.4, -0.7, 1.1]


class TriplePendulum(mb.Model):
    """Three revolutes about parallel z axes; gravity along -y (the World's default)."""

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World()
        for k, link in enumerate(LINKS):
            self.add(f"rev{k}", mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(PHI0[k]),
                                             w=mb.Fixed(W0[k])))
            self.add(f"link{k}", mbl.BodyShape(r=[link["l"], 0, 0],
                                               r_CM=[link["c"][0], link["c"][1], 0],
                                               m=link["m"], I_11=0.01, I_22=link["I"],
                                               I_33=link["I"], I_21=0.002))

    def equations(self):
        parent = self.world.frame_b
        for k in range(len(LINKS)):
            rev, link = getattr(self, f"rev{k}"), getattr(self, f"link{k}")
            yield mb.connect(parent, rev.frame_a)
            yield mb.connect(rev.frame_b, link.frame_a)
            parent = link.frame_b


def planar_chain_energy(phis, ws, links, g=G):
    """Kinetic and potential energy of a planar chain of links (absolute angle of link k =
    sum of the first k relative angles; gravity along -y)."""
    n_t = phis.shape[0]
    theta = np.cumsum(phis, axis=1)
    omega = np.cumsum(ws, axis=1)
    joint_pos = np.zeros((n_t, 2))
    joint_vel = np.zeros((n_t, 2))
    kinetic = np.zeros(n_t)
    potential = np.zeros(n_t)
    for k, link in enumerate(links):
        th, om = theta[:, k], omega[:, k]
        cx, cy = link["c"]
        rc = np.column_stack([cx * np.cos(th) - cy * np.sin(th), cx * np.sin(th) + cy * np.cos(th)])
        vc = om[:, None] * np.column_stack([-rc[:, 1], rc[:, 0]])
        pos, vel = joint_pos + rc, joint_vel + vc
        kinetic += 0.5 * link["m"] * (vel ** 2).sum(axis=1) + 0.5 * link["I"] * om ** 2
        potential += link["m"] * g * pos[:, 1]
        tip = link["l"] * np.column_stack([np.cos(th), np.sin(th)])
        joint_pos = joint_pos + tip
        joint_vel = joint_vel + om[:, None] * np.column_stack([-tip[:, 1], tip[:, 0]])
    return kinetic, potential


def test_triple_pendulum_conserves_energy():
    cm = mb.compile(TriplePendulum())
    res = cm.simulate(10.0, n_points=2001, **TIGHT)
    phis = np.column_stack([res[f"rev{k}.phi"] for k in range(3)])
    ws = np.column_stack([res[f"rev{k}.w"] for k in range(3)])
    assert np.ptp(phis[:, 2]) > 1.0  # it really moves (chaotically)
    kinetic, potential = planar_chain_energy(phis, ws, LINKS)
    energy = kinetic + potential
    # relative to the energy scale sum(m) g L_total (E itself may pass near zero)
    scale = sum(l["m"] for l in LINKS) * G * sum(l["l"] for l in LINKS)
    assert np.ptp(kinetic) > 0.1 * scale  # energy really is exchanged
    drift = np.abs(energy - energy[0]).max() / scale
    assert drift <= 1e-6, drift
    assert np.abs(energy - energy[0]).max() / abs(energy[0]) <= 1e-6  # relative to E(0) too
    # the link velocities our formulas assume agree with the library's frame velocities
    omega3 = ws.sum(axis=1)
    assert rel_err(res["link2.frame_a.v[2]"], omega3) < 1e-12


# --------------------------------------------------------------------------------------
# (b) free body: ballistic flight and torque-free rotation
# --------------------------------------------------------------------------------------

M_FREE = 2.5
C_FREE = np.array([0.2, -0.1, 0.15])
I_FREE = np.array([[0.30, 0.04, -0.02], [0.04, 0.22, 0.03], [-0.02, 0.03, 0.41]])
Q_AXIS, Q_ANGLE = [1.0, 2.0, -0.5], 0.8
R0, V0, W0_FREE = np.array([0.1, 2.0, -0.3]), np.array([1.5, 4.0, -0.7]), np.array([2.0, -3.0, 5.0])


class FreeBody(mb.Model):
    def __init__(self, gravity_type="uniform", **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World(gravity_type=gravity_type)
        self.free = mbl.FreeMotion(r_rel=mb.Fixed(list(R0)), v_rel=mb.Fixed(list(V0)),
                                   w_rel=mb.Fixed(list(W0_FREE)),
                                   Q=mb.Fixed(quat(Q_AXIS, Q_ANGLE)))
        I = I_FREE
        self.body = mbl.Body(m=M_FREE, r_CM=list(C_FREE), I_11=I[0, 0], I_22=I[1, 1],
                             I_33=I[2, 2], I_21=I[1, 0], I_31=I[2, 0], I_32=I[2, 1])
        self.to_cm = mbl.FixedTranslation(r=list(C_FREE))
        self.cm_sensor = mbl.AbsoluteSensor()

    def equations(self):
        yield mb.connect(self.world.frame_b, self.free.frame_a)
        yield mb.connect(self.free.frame_b, self.body.frame_a, self.to_cm.frame_a)
        yield mb.connect(self.to_cm.frame_b, self.cm_sensor.frame_a)


def _initial_cm_motion():
    """Centre-of-mass position and velocity at t = 0 in world coordinates (frame_b starts
    at R0 with orientation T0 = rot(Q_AXIS, Q_ANGLE); v_rel and w_rel are in frame_b)."""
    T0 = rot(Q_AXIS, Q_ANGLE)
    r_cm = R0 + T0.T @ C_FREE
    v_cm = T0.T @ (V0 + np.cross(W0_FREE, C_FREE))
    return T0, r_cm, v_cm


def test_free_body_flies_on_the_ballistic_parabola():
    cm = mb.compile(FreeBody())
    res = cm.simulate(1.5, n_points=301, **TIGHTER)
    T0, r_cm0, v_cm0 = _initial_cm_motion()
    assert np.allclose(mat(res, "body.frame_a.R")[0], T0, atol=1e-14)  # quaternion convention
    t = res.t[:, None]
    g_vec = np.array([0.0, -G, 0.0])
    expected = r_cm0 + v_cm0 * t + 0.5 * g_vec * t ** 2
    assert rel_err(vec(res, "cm_sensor.r"), expected) < 1e-9
    assert rel_err(vec(res, "cm_sensor.v"), v_cm0 + g_vec * t) < 1e-9
    assert rel_err(vec(res, "cm_sensor.a"), np.broadcast_to(g_vec, expected.shape)) < 1e-7
    # the body tumbles while its centre of mass flies (the frame origin is not on the parabola)
    origin = vec(res, "free.r_rel")
    assert np.abs(origin - expected).max() > 0.05


def test_torque_free_rotation_conserves_energy_and_angular_momentum():
    cm = mb.compile(FreeBody(gravity_type="none"))
    res = cm.simulate(10.0, n_points=1001, **TIGHTER)
    T = mat(res, "body.frame_a.R")  # world -> body
    assert np.abs(np.einsum("nij,nkj->nik", T, T) - np.eye(3)).max() < 1e-12
    w_body = vec(res, "free.w_rel")
    r_cm, v_cm = vec(res, "cm_sensor.r"), vec(res, "cm_sensor.v")
    assert np.ptp(w_body, axis=0).min() > 0.1  # the angular velocity really wanders in the body
    # kinetic energy
    kinetic = 0.5 * M_FREE * (v_cm ** 2).sum(1) + 0.5 * np.einsum("ni,ij,nj->n", w_body, I_FREE, w_body)
    assert np.abs(kinetic - kinetic[0]).max() / kinetic[0] <= 1e-7
    # world-frame angular momentum about the world origin: spin + orbital part
    spin = np.einsum("nji,jk,nk->ni", T, I_FREE, w_body)
    momentum = spin + M_FREE * np.cross(r_cm, v_cm)
    assert rel_err(momentum, np.broadcast_to(momentum[0], momentum.shape),
                   scale=np.linalg.norm(momentum[0])) <= 1e-7
    # and each part separately: spin about the centre of mass, linear momentum
    assert rel_err(spin, np.broadcast_to(spin[0], spin.shape),
                   scale=np.linalg.norm(spin[0])) <= 1e-7
    assert rel_err(v_cm, np.broadcast_to(v_cm[0], v_cm.shape)) <= 1e-7
    # linear momentum is conserved too, and the centre of mass moves uniformly
    _, r_cm0, v_cm0 = _initial_cm_motion()
    assert rel_err(r_cm, r_cm0 + v_cm0 * res.t[:, None]) < 1e-9


# --------------------------------------------------------------------------------------
# (c) spherical pendulum
# --------------------------------------------------------------------------------------

L_SPH, M_SPH, I_SPH = 1.2, 1.3, 0.02


class SphericalPendulum(mb.Model):
    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World()
        self.ball = mbl.Spherical(Q=mb.Fixed(quat([1.0, 0.0, 0.3], 0.9)),
                                  w_rel=mb.Fixed([0.3, 2.2, -0.4]))
        self.rod = mbl.BodyShape(r=[0, -L_SPH, 0], r_CM=[0, -L_SPH, 0], m=M_SPH,
                                 I_11=I_SPH, I_22=I_SPH, I_33=I_SPH)
        self.tip = mbl.AbsoluteSensor()

    def equations(self):
        yield mb.connect(self.world.frame_b, self.ball.frame_a)
        yield mb.connect(self.ball.frame_b, self.rod.frame_a)
        yield mb.connect(self.rod.frame_b, self.tip.frame_a)


def test_spherical_pendulum_keeps_length_and_conserves_energy():
    cm = mb.compile(SphericalPendulum())
    res = cm.simulate(8.0, n_points=1601, **TIGHT)
    r, v = vec(res, "tip.r"), vec(res, "tip.v")
    w_body = vec(res, "ball.w_rel")  # frame_a is the world, so this is the body's rate
    T = mat(res, "rod.frame_a.R")
    assert np.abs(np.linalg.norm(r, axis=1) - L_SPH).max() < 1e-12
    assert np.abs((r * v).sum(1)).max() < 1e-9  # velocity tangent to the sphere
    assert np.ptp(r[:, 0]) > 0.5 and np.ptp(r[:, 2]) > 0.5  # a genuinely 3-D motion
    kinetic = 0.5 * M_SPH * (v ** 2).sum(1) + 0.5 * I_SPH * (w_body ** 2).sum(1)
    energy = kinetic + M_SPH * G * r[:, 1]
    scale = M_SPH * G * L_SPH
    assert np.abs(energy - energy[0]).max() / scale <= 1e-8
    # gravity (along -y) exerts no moment about the vertical through the pivot
    w_world = np.einsum("nji,nj->ni", T, w_body)
    l_y = M_SPH * np.cross(r, v)[:, 1] + I_SPH * w_world[:, 1]
    assert np.abs(l_y - l_y[0]).max() / abs(l_y[0]) <= 1e-7


# --------------------------------------------------------------------------------------
# (d) simple pendulum: scipy and the exact (elliptic) period
# --------------------------------------------------------------------------------------

L_PEN = 0.9


class Pendulum(mb.Model):
    """Point mass on a massless rod; phi is measured from the +x axis, gravity along -y."""

    def __init__(self, phi0, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World()
        self.joint = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(phi0), w=mb.Fixed(0.0))
        self.rod = mbl.BodyShape(r=[L_PEN, 0, 0], r_CM=[L_PEN, 0, 0], m=0.8,
                                 I_11=0.0, I_22=0.0, I_33=0.0)

    def equations(self):
        yield mb.connect(self.world.frame_b, self.joint.frame_a)
        yield mb.connect(self.joint.frame_b, self.rod.frame_a)


def test_pendulum_matches_scipy_and_elliptic_period():
    theta0 = 2.0  # from the downward vertical: far from small angles
    phi0 = theta0 - np.pi / 2
    cm = mb.compile(Pendulum(phi0))
    period = 4 * np.sqrt(L_PEN / G) * ellipk(np.sin(theta0 / 2) ** 2)
    res = cm.simulate(3 * period, n_points=601, **TIGHT)
    ref = solve_ivp(lambda t, y: [y[1], -G / L_PEN * np.sin(y[0])], (0, 3 * period),
                    [theta0, 0.0], t_eval=res.t, method="DOP853", rtol=1e-12, atol=1e-12)
    assert rel_err(res["joint.phi"] + np.pi / 2, ref.y[0]) < 1e-7
    assert rel_err(res["joint.w"], ref.y[1]) < 1e-7
    grid = cm.simulate(period, times=[0.0, period / 2, period], **TIGHT)
    assert grid["joint.phi"] + np.pi / 2 == pytest.approx([theta0, -theta0, theta0], abs=1e-8)
    assert grid["joint.w"] == pytest.approx([0, 0, 0], abs=1e-7)


def test_small_angle_pendulum_period():
    theta0 = 1e-3
    cm = mb.compile(Pendulum(theta0 - np.pi / 2))
    period = 2 * np.pi * np.sqrt(L_PEN / G)
    res = cm.simulate(2 * period, n_points=401, **TIGHT)
    expected = theta0 * np.cos(2 * np.pi * res.t / period)
    assert np.abs(res["joint.phi"] + np.pi / 2 - expected).max() < 1e-5 * theta0


# --------------------------------------------------------------------------------------
# (e) point gravity: a Kepler orbit
# --------------------------------------------------------------------------------------

MUE = 1.0
ORBIT_R0, ORBIT_V0 = np.array([1.0, 0.0, 0.2]), np.array([0.0, 1.1, 0.15])


class Satellite(mb.Model):
    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World(gravity_type="point", mue=MUE)
        self.free = mbl.FreeMotion(r_rel=mb.Fixed(list(ORBIT_R0)), v_rel=mb.Fixed(list(ORBIT_V0)))
        self.body = mbl.Body(m=3.0, I_11=0.1, I_22=0.2, I_33=0.25)
        self.sensor = mbl.AbsoluteSensor()

    def equations(self):
        yield mb.connect(self.world.frame_b, self.free.frame_a)
        yield mb.connect(self.free.frame_b, self.body.frame_a, self.sensor.frame_a)


def test_point_gravity_kepler_orbit():
    cm = mb.compile(Satellite())
    r0, v0 = np.linalg.norm(ORBIT_R0), ORBIT_V0
    energy0 = 0.5 * v0 @ v0 - MUE / r0
    a = -MUE / (2 * energy0)  # semi-major axis (vis-viva)
    period = 2 * np.pi * np.sqrt(a ** 3 / MUE)
    res = cm.simulate(period, n_points=801, **TIGHT)
    r, v = vec(res, "sensor.r"), vec(res, "sensor.v")
    radius = np.linalg.norm(r, axis=1)
    assert np.ptp(radius) > 0.1  # eccentric
    energy = 0.5 * (v ** 2).sum(1) - MUE / radius
    assert np.abs(energy - energy0).max() / abs(energy0) < 1e-8
    h = np.cross(r, v)
    assert rel_err(h, np.broadcast_to(np.cross(ORBIT_R0, ORBIT_V0), h.shape)) < 1e-8
    assert rel_err(vec(res, "sensor.a"), -MUE * r / radius[:, None] ** 3) < 1e-7
    # Kepler's third law: back at the start after one period; perihelion/aphelion
    assert np.abs(r[-1] - ORBIT_R0).max() < 1e-7 and np.abs(v[-1] - ORBIT_V0).max() < 1e-7
    e = np.sqrt(1 - (h[0] @ h[0]) / (MUE * a))
    assert radius.min() == pytest.approx(a * (1 - e), rel=1e-3)
    assert radius.max() == pytest.approx(a * (1 + e), rel=1e-3)


# --------------------------------------------------------------------------------------
# (f) line-force elements: spring(-damper) hung mass on a prismatic joint
# --------------------------------------------------------------------------------------

M_OSC, C_OSC, D_OSC, L0_OSC, S0_OSC = 0.5, 80.0, 1.2, 0.4, 0.75


class HangingMass(mb.Model):
    """A slider moving down (along -y) from the world origin, hung on a line force from a
    Fixed point at the origin (a second root: line forces do not join orientations)."""

    def __init__(self, kind, **modifiers):
        super().__init__(**modifiers)
        self.kind = kind
        self.world = mbl.World()
        self.anchor = mbl.Fixed(r=[0.0, 0.0, 0.0])
        self.slider = mbl.Prismatic(n=[0, -1, 0], s=mb.Fixed(S0_OSC), v=mb.Fixed(0.0))
        self.body = mbl.Body(m=M_OSC)
        if kind == "spring":
            self.spring = mbl.Spring(c=C_OSC, s_unstretched=L0_OSC)
        elif kind == "spring+damper":
            self.spring = mbl.Spring(c=C_OSC, s_unstretched=L0_OSC)
            self.damper = mbl.Damper(d=D_OSC)
        else:
            self.spring = mbl.SpringDamperParallel(c=C_OSC, s_unstretched=L0_OSC, d=D_OSC)

    def equations(self):
        yield mb.connect(self.world.frame_b, self.slider.frame_a)
        yield mb.connect(self.slider.frame_b, self.body.frame_a, self.spring.frame_b)
        yield mb.connect(self.anchor.frame_b, self.spring.frame_a)
        if self.kind == "spring+damper":
            yield mb.connect(self.anchor.frame_b, self.damper.frame_a)
            yield mb.connect(self.slider.frame_b, self.damper.frame_b)


@pytest.mark.parametrize("kind", ["spring", "spring+damper", "parallel"])
def test_hanging_mass_oscillates_at_the_analytic_frequency(kind):
    cm = mb.compile(HangingMass(kind))
    d = 0.0 if kind == "spring" else D_OSC
    omega = np.sqrt(C_OSC / M_OSC)
    zeta = d / (2 * np.sqrt(C_OSC * M_OSC))
    omega_d = omega * np.sqrt(1 - zeta ** 2)
    s_eq = L0_OSC + M_OSC * G / C_OSC
    res = cm.simulate(3.0, n_points=601, **TIGHT)
    t, x0 = res.t, S0_OSC - s_eq
    x = np.exp(-zeta * omega * t) * x0 * (np.cos(omega_d * t)
                                          + zeta * omega / omega_d * np.sin(omega_d * t))
    assert np.abs(res["slider.s"] - (s_eq + x)).max() < 1e-8 * abs(x0) * 10
    assert res["spring.length"] == pytest.approx(res["slider.s"], abs=1e-12)
    assert res["spring.f"] == pytest.approx(C_OSC * (res["slider.s"] - L0_OSC)
                                            + d * res["slider.v"] * (kind == "parallel"), abs=1e-8)


# --------------------------------------------------------------------------------------
# (g) sensors on a physical pendulum (forward and inverse analysis)
# --------------------------------------------------------------------------------------

L_SEN, C_SEN, M_SEN, I_SEN = 1.1, 0.7, 1.4, 0.09


class SensedPendulum(mb.Model):
    """Pendulum: world - joint - cut sensor - rod (tip sensor at the rod's end)."""

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World()
        self.joint = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(0.3), w=mb.Fixed(1.5))
        self.cut = mbl.CutForceAndTorque()
        self.rod = mbl.BodyShape(r=[L_SEN, 0, 0], r_CM=[C_SEN, 0, 0], m=M_SEN,
                                 I_11=0.01, I_22=I_SEN, I_33=I_SEN)
        self.tip = mbl.AbsoluteSensor()

    def equations(self):
        yield mb.connect(self.world.frame_b, self.joint.frame_a)
        yield mb.connect(self.joint.frame_b, self.cut.frame_a)
        yield mb.connect(self.cut.frame_b, self.rod.frame_a)
        yield mb.connect(self.rod.frame_b, self.tip.frame_a)


def pendulum_expectations(phi, w, a):
    """Tip kinematics (world) and the force and torque the joint exerts on the rod (resolved
    in the rod frame) for angle phi (from +x), rate w and acceleration a."""
    c, s = np.cos(phi), np.sin(phi)
    zero = np.zeros_like(phi)
    r = L_SEN * np.column_stack([c, s, zero])
    v = L_SEN * w[:, None] * np.column_stack([-s, c, zero])
    acc = L_SEN * (a[:, None] * np.column_stack([-s, c, zero]) - (w ** 2)[:, None] * np.column_stack([c, s, zero]))
    # Newton for the centre of mass (rod frame: x along the rod, y tangential):
    # F = m a_cm - m g, with g = (0, -G) in the world = (-G s, -G c) in the rod frame
    force = M_SEN * np.column_stack([-C_SEN * w ** 2 + G * s, C_SEN * a + G * c, zero])
    torque_z = (I_SEN + M_SEN * C_SEN ** 2) * a + M_SEN * G * C_SEN * c
    return r, v, acc, force, torque_z


def test_sensors_forward_pendulum():
    cm = mb.compile(SensedPendulum())
    res = cm.simulate(3.0, n_points=301, **TIGHT)
    phi, w, a = res["joint.phi"], res["joint.w"], res["joint.a"]
    # the dynamics: (I + m c^2) a = -m g c cos(phi) (no joint torque)
    assert rel_err(a, -M_SEN * G * C_SEN * np.cos(phi) / (I_SEN + M_SEN * C_SEN ** 2)) < 1e-12
    # the integrated motion conserves energy (checks phi and w, not only a(phi))
    energy = 0.5 * (I_SEN + M_SEN * C_SEN ** 2) * w ** 2 + M_SEN * G * C_SEN * np.sin(phi)
    assert np.ptp(energy) < 1e-7 * M_SEN * G * C_SEN
    assert np.ptp(phi) > 0.5  # it does swing
    r, v, acc, force, torque_z = pendulum_expectations(phi, w, a)
    assert rel_err(vec(res, "tip.r"), r) < 1e-12
    assert rel_err(vec(res, "tip.v"), v) < 1e-12
    assert rel_err(vec(res, "tip.a"), acc) < 1e-10
    assert rel_err(vec(res, "tip.w"), np.column_stack([0 * w, 0 * w, w])) < 1e-12
    assert rel_err(vec(res, "tip.z"), np.column_stack([0 * a, 0 * a, a])) < 1e-10
    assert rel_err(vec(res, "cut.force"), force) < 1e-10
    assert np.abs(torque_z).max() < 1e-9  # free joint: no torque about its axis
    assert np.abs(vec(res, "cut.torque")).max() < 1e-9


def test_sensors_inverse_pendulum():
    cm = mb.compile(SensedPendulum(), analysis="inverse")
    assert set(cm.inputs) == {"joint.phi", "joint.w", "joint.a"}
    rng = np.random.default_rng(5)
    for _ in range(5):
        phi, w, a = rng.uniform(-3, 3, 3)
        u = np.array([{"joint.phi": phi, "joint.w": w, "joint.a": a}[n] for n in cm.inputs])
        y = np.array(cm.output_function([], [], u, cm.parameter_defaults, 0.0)).ravel()

        def get(name, n=None):
            if n is None:
                return y[cm.output_index[name]]
            return np.array([y[cm.output_index[f"{name}[{k}]"]] for k in range(n)])

        r, v, acc, force, torque_z = pendulum_expectations(*(np.array([x]) for x in (phi, w, a)))
        assert np.allclose(get("tip.r", 3), r[0], atol=1e-12)
        assert np.allclose(get("tip.v", 3), v[0], atol=1e-12)
        assert np.allclose(get("tip.a", 3), acc[0], atol=1e-12)
        assert np.allclose(get("cut.force", 3), force[0], atol=1e-12)
        assert np.allclose(get("cut.torque", 3), [0, 0, torque_z[0]], atol=1e-12)
        assert get("joint.tau") == pytest.approx(torque_z[0], abs=1e-12)


def test_rotation_to_quaternion_inverts_the_quaternion_rotation():
    """Round trip matrix -> quaternion -> matrix for rotations about random axes by angles
    across (-pi, pi], including the branches for a negative trace; the matrices come from
    Rodrigues' formula (independent of the quaternion code)."""
    import casadi as ca
    from mbmodel.libraries.multibody import spatial
    rng = np.random.default_rng(7)
    for angle in list(rng.uniform(-np.pi, np.pi, 20)) + [np.pi, 0.0, 3.1]:
        e = rng.normal(size=3)
        e /= np.linalg.norm(e)
        ex = np.array([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])
        E = np.outer(e, e) + (np.eye(3) - np.outer(e, e)) * np.cos(angle) - ex * np.sin(angle)
        Q = spatial.rotation_to_quaternion(E)
        assert np.linalg.norm(Q) == pytest.approx(1.0, abs=1e-12)
        back = np.array(ca.DM(spatial.quaternion_rotation(ca.SX(Q))))
        assert np.abs(back - E).max() < 1e-12


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_rotation_about_a_coordinate_axis_is_exact_and_forms_its_sine_products_once(axis):
    """``AxisRotation.sandwich`` (E' B E, expanded with c^2 = 1 - s^2) equals the plain
    product for a symmetric and a general B, and the three sandwiches an articulated
    inertia needs (A11, A22 symmetric, A12 general) share one sin^2 and one cos*sin:
    built separately they are separate operations in code without common-subexpression
    merging (large right-hand sides, kernels)."""
    import casadi as ca
    from mbmodel.libraries.multibody import spatial
    e = np.zeros(3)
    e[axis] = 1.0
    q = ca.SX.sym("q")
    blocks = [ca.SX.sym(name, 3, 3) for name in ("S1", "S2", "B")]
    E = spatial.axis_rotation(ca.DM(e), q, e)
    assert isinstance(E, spatial.AxisRotation)
    results = [E.sandwich(spatial.mirror_upper(blocks[0]), symmetric=True),
               E.sandwich(spatial.mirror_upper(blocks[1]), symmetric=True),
               E.sandwich(blocks[2])]
    # the distinct nodes of the results' expression graph
    nodes, stack = {}, ca.vertcat(*[ca.vec(r) for r in results]).elements()
    while stack:
        node = stack.pop()
        if node.element_hash() not in nodes:
            nodes[node.element_hash()] = node
            stack.extend(node.dep(k) for k in range(node.n_dep()))
    trig = {h for h, node in nodes.items() if node.op() in (ca.OP_SIN, ca.OP_COS)}
    squares = [node for node in nodes.values() if node.op() == ca.OP_SQ]
    mixed = [node for node in nodes.values() if node.op() == ca.OP_MUL
             and {node.dep(0).element_hash(), node.dep(1).element_hash()} == trig]
    assert len(trig) == 2 and len(squares) == 1 and len(mixed) == 1
    rng = np.random.default_rng(axis)
    angle = rng.uniform(-np.pi, np.pi)
    matrices = [rng.normal(size=(3, 3)) for _ in range(3)]
    matrices[0], matrices[1] = matrices[0] + matrices[0].T, matrices[1] + matrices[1].T
    fn = ca.Function("f", [q] + [ca.vec(b) for b in blocks],
                     [ca.vertcat(*[ca.vec(r) for r in results])])
    got = np.array(fn(angle, *[M.ravel(order="F") for M in matrices])).ravel()
    dense = np.array(ca.DM(spatial.planar_rotation(ca.DM(e), angle)))
    want = np.concatenate([(dense.T @ M @ dense).ravel(order="F") for M in matrices])
    assert np.abs(got - want).max() < 1e-12 * max(1.0, np.abs(want).max())
