"""Drive trains on joint flanges in forward dynamics.

A motor inertia behind an ideal gear on a joint's axis flange acts as the reflected inertia
J·ratio² (Pinocchio's ``armature``); the joint takes it into its own articulated-body step, so
the forward model has no algebraic loop however many joints are driven. Non-rigid parts of the
drive (dampers, torque sources, an EMF) only add torques. Drive trains that are not rigid
loads (here: a gear whose housing is the joint's support) fall back to the plain flange torque,
which tearing solves (slower, still exact).
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbmodel as mb
from mbmodel.libraries import electrical as el, multibody as mbl, rotational as rot
from mbmodel.libraries import translational as tr

pin = pytest.importorskip("pinocchio")
from mb_trees import (AXES, DAMPING, INERTIA, J_MOTOR, LINK, MASS, MOTOR_TORQUE,  # noqa: E402
                      RATIO, DrivenChain, pinocchio_chain)


def _state(cm, n, q, v):
    values = {}
    for i in range(n):
        values[f"motor{i}.phi"], values[f"motor{i}.w"] = RATIO * q[i], RATIO * v[i]
        values[f"joint{i}.phi"], values[f"joint{i}.w"] = q[i], v[i]
    return np.array([values[s] for s in cm.states])


def _accelerations(cm, n, q, v):
    xdot = np.array(cm.ode(_state(cm, n, q, v), [], [], [], 0)).ravel()
    acc = []
    for i in range(n):
        if f"joint{i}.w" in cm.states:
            acc.append(xdot[cm.states.index(f"joint{i}.w")])
        else:
            acc.append(xdot[cm.states.index(f"motor{i}.w")] / RATIO)
    return np.array(acc)


def _pinocchio(n, q, v, tau):
    pm = pinocchio_chain(n)
    pm.armature = np.full(n, J_MOTOR * RATIO ** 2)
    return pin.aba(pm, pm.createData(), q, v, tau)


def _random_state(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.normal(size=n)


def _torn_blocks(cm):
    return [b for b in cm.system.blocks if b.kind != "explicit"]


@pytest.mark.parametrize("n", [1, 2, 3, 6, 32])
def test_geared_motor_inertia_is_the_reflected_inertia(n):
    cm = mb.compile(DrivenChain(n), parameters="constant")
    assert _torn_blocks(cm) == []  # one articulated pass, no linear system over the joints
    q, v = _random_state(n)
    ref = _pinocchio(n, q, v, np.zeros(n))
    acc = _accelerations(cm, n, q, v)
    assert np.abs(acc - ref).max() < 1e-9 * max(1.0, np.abs(ref).max())


def test_dampers_and_torque_sources_in_the_drive_add_reflected_torques():
    n = 4
    cm = mb.compile(DrivenChain(n, losses=True), parameters="constant")
    assert _torn_blocks(cm) == []
    q, v = _random_state(n, seed=1)
    # Joint torque from the motor side: ratio * (source - damping * motor speed).
    tau = RATIO * (MOTOR_TORQUE - DAMPING * RATIO * v)
    ref = _pinocchio(n, q, v, tau)
    acc = _accelerations(cm, n, q, v)
    assert np.abs(acc - ref).max() < 1e-9 * max(1.0, np.abs(ref).max())
    # The joint's flange torque (an output now, not an input of the step) is what the drive
    # delivers: ratio * (source - damping * w_m - J_m * a_m).
    y = cm.output_function(_state(cm, n, q, v), [], [], [], 0)
    joint_tau = np.array([float(y[cm.output_index[f"joint{i}.tau"]]) for i in range(n)])
    expected = RATIO * (MOTOR_TORQUE - DAMPING * RATIO * v - J_MOTOR * RATIO * ref)
    assert np.allclose(joint_tau, expected, rtol=1e-9, atol=1e-9)


def test_drive_that_is_not_a_rigid_load_falls_back_to_tearing():
    # The gear's housing is the joint's support flange: not a plain rigid coupling, so the
    # joint uses the flange torque and tearing solves the coupled system. Same physics.
    n = 3
    cm = mb.compile(DrivenChain(n, housed_gear=True), parameters="constant")
    assert _torn_blocks(cm) != []
    q, v = _random_state(n, seed=2)
    ref = _pinocchio(n, q, v, np.zeros(n))
    acc = _accelerations(cm, n, q, v)
    assert np.abs(acc - ref).max() < 1e-9 * max(1.0, np.abs(ref).max())


class MassOnSlider(mb.Model):
    """Revolute then prismatic joint; a translational mass rigidly on the prismatic axis."""

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World(n=[0.0, -1.0, 0.0])
        self.hinge = mbl.Revolute(n=[0.0, 0.0, 1.0])
        self.arm = mbl.Body(m=2.0, r_CM=[0.2, 0.0, 0.0], I_11=0.01, I_22=0.03, I_33=0.03)
        self.slider = mbl.Prismatic(n=[1.0, 0.0, 0.0], use_axis_flange=True)
        self.carriage = mbl.Body(m=0.7, r_CM=[0.0, 0.05, 0.0], I_11=0.002, I_22=0.002,
                                 I_33=0.002)
        self.rotor = tr.Mass(m=1.5)

    def equations(self):
        yield mb.connect(self.world.frame_b, self.hinge.frame_a)
        yield mb.connect(self.hinge.frame_b, self.arm.frame_a, self.slider.frame_a)
        yield mb.connect(self.slider.frame_b, self.carriage.frame_a)
        yield mb.connect(self.slider.axis, self.rotor.flange_a)


def test_mass_on_a_prismatic_axis_is_its_armature():
    cm = mb.compile(MassOnSlider(), parameters="constant")
    assert _torn_blocks(cm) == []
    pm = pin.Model()
    j0 = pm.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "hinge")
    pm.appendBodyToJoint(j0, pin.Inertia(2.0, np.array([0.2, 0, 0]), np.diag([0.01, 0.03, 0.03])),
                         pin.SE3.Identity())
    j1 = pm.addJoint(j0, pin.JointModelPX(), pin.SE3.Identity(), "slider")
    pm.appendBodyToJoint(j1, pin.Inertia(0.7, np.array([0, 0.05, 0]), np.eye(3) * 0.002),
                         pin.SE3.Identity())
    pm.gravity.linear = np.array([0.0, -9.81, 0.0])
    pm.armature = np.array([0.0, 1.5])
    q, v = np.array([0.4, 0.3]), np.array([-0.7, 0.2])
    ref = pin.aba(pm, pm.createData(), q, v, np.zeros(2))
    values = {"hinge.phi": q[0], "hinge.w": v[0], "slider.s": q[1], "slider.v": v[1],
              "rotor.s": q[1], "rotor.v": v[1]}
    xdot = np.array(cm.ode([values[s] for s in cm.states], [], [], [], 0)).ravel()
    slider_acc = xdot[cm.states.index("slider.v" if "slider.v" in cm.states else "rotor.v")]
    assert np.allclose([xdot[cm.states.index("hinge.w")], slider_acc], ref, rtol=1e-10,
                       atol=1e-10)


class MotorPendulum(mb.Model):
    """A pendulum driven by a DC motor (armature R, L; EMF k; rotor J) through a gear."""

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World(n=[0.0, -1.0, 0.0])
        self.joint = mbl.Revolute(n=[0.0, 0.0, 1.0], use_axis_flange=True,
                                  phi=mb.Fixed(0.2), w=mb.Fixed(0.0))
        self.rod = mbl.BodyShape(r=[0.5, 0.0, 0.0], r_CM=[0.25, 0.0, 0.0], m=1.0,
                                 I_11=1e-4, I_22=0.02, I_33=0.02)
        self.source = el.ConstantVoltage(V=12.0)
        self.resistor = el.Resistor(R=2.0)
        self.inductor = el.Inductor(L=0.05, i=mb.Fixed(0.0))
        self.emf = el.EMF(k=0.05)
        self.ground = el.Ground()
        self.rotor = rot.Inertia(J=1e-4)
        self.gear = rot.IdealGear(ratio=50.0)

    def equations(self):
        yield mb.connect(self.world.frame_b, self.joint.frame_a)
        yield mb.connect(self.joint.frame_b, self.rod.frame_a)
        yield mb.connect(self.source.p, self.resistor.p)
        yield mb.connect(self.resistor.n, self.inductor.p)
        yield mb.connect(self.inductor.n, self.emf.p)
        yield mb.connect(self.emf.n, self.source.n, self.ground.p)
        yield mb.connect(self.emf.flange, self.rotor.flange_a)
        yield mb.connect(self.rotor.flange_b, self.gear.flange_a)
        yield mb.connect(self.gear.flange_b, self.joint.axis)


def test_dc_motor_driven_pendulum_matches_its_hand_written_ode():
    cm = mb.compile(MotorPendulum())
    assert _torn_blocks(cm) == []
    res = cm.simulate(1.0, rtol=1e-10, atol=1e-10, n_points=11)
    V, R, L, k, J, r, m, lc, g = 12.0, 2.0, 0.05, 0.05, 1e-4, 50.0, 1.0, 0.25, 9.81
    J_link = 0.02 + m * lc ** 2  # about the hinge (BodyShape inertia about its COM + m lc²)

    def rhs(_t, x):
        q, w, i = x
        return [w, (r * k * i - m * g * lc * np.cos(q)) / (J_link + J * r ** 2),
                (V - R * i - k * r * w) / L]

    ref = solve_ivp(rhs, (0, 1), [0.2, 0.0, 0.0], t_eval=res.t, rtol=1e-11, atol=1e-11)
    assert np.allclose(res["joint.phi"], ref.y[0], atol=1e-7)
    assert np.allclose(res["inductor.i"], ref.y[2], atol=1e-7)


class Arm(mb.Model):
    """A composite: world, driven revolute joint and link, the joint's flange exposed as
    the port ``axis`` (like the Manutec r3 mechanics' axis1..6)."""

    axis = rot.Flange_a()

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World(n=[0.0, 0.0, -1.0])
        self.joint = mbl.Revolute(n=AXES[1], use_axis_flange=True)
        self.link = mbl.BodyShape(r=list(LINK), r_CM=list(LINK / 2), m=MASS,
                                  I_11=INERTIA[0, 0], I_22=INERTIA[1, 1], I_33=INERTIA[2, 2])

    def equations(self):
        yield mb.connect(self.world.frame_b, self.joint.frame_a)
        yield mb.connect(self.joint.frame_b, self.link.frame_a)
        yield mb.connect(self.joint.axis, self.axis)


class DrivenArm(mb.Model):
    arm = Arm()
    motor = rot.Inertia(J=J_MOTOR)
    gear = rot.IdealGear(ratio=RATIO)

    def equations(self):
        yield mb.connect(self.motor.flange_b, self.gear.flange_a)
        yield mb.connect(self.gear.flange_b, self.arm.axis)


def test_drive_train_reached_through_a_composite_port():
    cm = mb.compile(DrivenArm(), parameters="constant")
    assert _torn_blocks(cm) == []
    pm = pin.Model()
    j = pm.addJoint(0, pin.JointModelRY(), pin.SE3.Identity(), "j")
    pm.appendBodyToJoint(j, pin.Inertia(MASS, LINK / 2, INERTIA), pin.SE3.Identity())
    pm.armature = np.array([J_MOTOR * RATIO ** 2])
    q, v = np.array([0.7]), np.array([-1.3])
    ref = pin.aba(pm, pm.createData(), q, v, np.zeros(1))
    values = {"arm.joint.phi": q[0], "arm.joint.w": v[0],
              "motor.phi": RATIO * q[0], "motor.w": RATIO * v[0]}
    xdot = np.array(cm.ode([values[s] for s in cm.states], [], [], [], 0)).ravel()
    name = next(s for s in ("arm.joint.w", "motor.w") if s in cm.states)
    acc = xdot[cm.states.index(name)] / (1.0 if name == "arm.joint.w" else RATIO)
    assert abs(acc - ref[0]) < 1e-10 * max(1.0, abs(ref[0]))
