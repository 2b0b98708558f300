"""The Manutec r3 drive trains (libraries/robot_r3.py) against independent references:
the current loop's closed-form step response, Pinocchio's recursive Newton–Euler along the
path, and Pinocchio's gravity torques for the holding currents at rest."""

import math

import numpy as np
import pytest

import mbmodel as mb
from mbmodel.libraries import blocks
from mbmodel.libraries import robot_r3 as r3
from mbmodel.libraries import rotational as rot
from test_examples import _r3_pinocchio


class HeldMotor(mb.Model):
    """Axis 2's motor with its rotor held, a current reference step of 1 A at t = 1 ms."""

    step = blocks.Step(height=1.0, startTime=1e-3)
    motor = r3.Motor(k=1.1616, w=5500.0, D=0.6, J=0.0013)
    fixed = rot.Fixed()

    def equations(self):
        yield mb.connect(self.step.y, self.motor.i_ref)
        yield mb.connect(self.motor.flange_motor, self.fixed.flange)


def test_current_loop_is_the_second_order_lag_w_D():
    """Difference amplifier, integrating op-amp stage and power amplifier around the
    armature: I/I_ref = w^2/(s^2 + 2 D w s + w^2) with the rotor held (closed form)."""
    w, D = 5500.0, 0.6
    times = np.linspace(0.0, 4e-3, 401)
    res = mb.compile(HeldMotor()).simulate(4e-3, times=times, rtol=1e-10, atol=1e-12)
    tau = np.clip(times - 1e-3, 0.0, None)
    wd = w * math.sqrt(1 - D**2)
    expected = 1 - np.exp(-D * w * tau) * (np.cos(wd * tau) + D / math.sqrt(1 - D**2)
                                           * np.sin(wd * tau))
    assert np.abs(res["motor.current"] - expected).max() < 1e-7
    assert res["motor.current"][0] == pytest.approx(0.0, abs=1e-12)  # steady start


def test_inverse_robot_torques_match_pinocchio_rnea():
    """The inverse model (mechanics, elastic gears, motors; joint angles prescribed by the
    smooth path) gives joint torques equal to Pinocchio's RNEA along the path."""
    pin, model = _r3_pinocchio()
    data = model.createData()
    cm = mb.compile(r3.InverseRobot(), analysis="inverse")
    res = cm.simulate(3.5, n_points=351)
    worst = 0.0
    for j in range(0, len(res.t), 5):
        q = np.array([res[f"planner.q[{k}]"][j] for k in range(6)])
        qd = np.array([res[f"planner.qd[{k}]"][j] for k in range(6)])
        qdd = np.array([res[f"planner.qdd[{k}]"][j] for k in range(6)])
        tau = np.array(pin.rnea(model, data, q, qd, qdd)).copy()
        ours = np.array([res[f"mechanics.r{k}.tau"][j] for k in range(1, 7)])
        worst = max(worst, np.abs(ours - tau).max())
    assert worst < 1e-9
    # the motor torque needed: the joint torque through the gear, plus the rotor's
    # inertia and the bearing (axis 4: rigid gear, bearing on the joint side)
    j = 120
    ratio, k_m = r3.DRIVES[3]["ratio"], r3.DRIVES[3]["k"]
    tau_joint = res["mechanics.r4.tau"][j]
    bearing = res["axis4.gear.bearing.tau"][j]
    acc = res["planner.qdd[3]"][j] * ratio
    needed = (tau_joint + bearing) / ratio + r3.DRIVES[3]["J"] * acc
    assert res["axis4.motor.current"][j] * k_m == pytest.approx(needed, rel=1e-9)


def test_holding_currents_at_rest_match_pinocchio_gravity():
    """At rest in equilibrium (the bearings carrying nothing) every motor holds its joint's
    gravity torque: current = g(q)/(ratio*k), with g from Pinocchio at the start pose the
    robot settles in (the elastic gears of axes 1-3 deflect it from the reference)."""
    pin, model = _r3_pinocchio()
    cm = mb.compile(r3.FullRobot())
    res = cm.simulate(1e-4, n_points=2)
    q = np.array([res[f"mechanics.r{k}.phi"][0] for k in range(1, 7)])
    assert np.abs(q - np.radians(r3.Q_START_DEG)).max() < 2e-3   # close to the reference
    gravity = np.array(pin.computeGeneralizedGravity(model, model.createData(), q)).copy()
    for k in range(6):
        drive = r3.DRIVES[k]
        current = res[f"axis{k + 1}.motor.current"][0]
        assert current == pytest.approx(gravity[k] / (drive["ratio"] * drive["k"]),
                                        rel=1e-8, abs=1e-10), f"axis {k + 1}"
        assert res[f"axis{k + 1}.gear.bearing.sa"][0] == pytest.approx(0.0, abs=1e-9)


def test_polynomial_ptp_keeps_the_limits_and_is_smooth():
    """The degree-9 path: ends at q_end, the slowest axis touches its speed or acceleration
    limit and no axis exceeds its own; qd and qdd are the derivatives of q."""
    class Motion(mb.Model):
        ptp = blocks.PolynomialPTP(n=2, q_begin=[0.0, 1.0], q_end=[2.0, 0.0],
                                   qd_max=[1.0, 3.0], qdd_max=[2.0, 2.0])

    times = np.linspace(0.0, 6.0, 60001)
    res = mb.compile(Motion()).simulate(6.0, times=times)
    T = res.final("ptp.T")
    assert T == pytest.approx(2.0 * 630 / 256, rel=1e-12)   # axis 0 speed-limited
    assert res["ptp.q[0]"][-1] == pytest.approx(2.0, abs=1e-14)
    assert np.abs(res["ptp.qd[0]"]).max() == pytest.approx(1.0, rel=1e-6)
    assert np.abs(res["ptp.qdd[0]"]).max() <= 2.0 and np.abs(res["ptp.qd[1]"]).max() <= 3.0
    h = times[1] - times[0]
    assert np.abs(np.gradient(res["ptp.q[0]"], h) - res["ptp.qd[0]"]).max() < 1e-6
    assert np.abs(np.gradient(res["ptp.qd[0]"], h) - res["ptp.qdd[0]"]).max() < 1e-5
