"""Friction on multibody joints: a sticking joint is locked inside the articulated-body
recursion (Otter, Elmqvist and Cellier 1993). Against closed forms, scipy ODEs and an
independent event-driven solution with Pinocchio's dynamics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbmodel as mb
from mbmodel.libraries import blocks as bl
from mbmodel.libraries import multibody as mbl
from mbmodel.libraries import rotational as rot

G = 9.81
M, R_CM, I_22 = 1.0, 0.5, 0.01
J_JOINT = I_22 + M * R_CM ** 2  # inertia about the joint axis


class Pendulum(mb.Model):
    """A body on a revolute joint about y, horizontal at phi = 0 (gravity turns it to
    positive phi), whose axis flange drives ``drive`` (built by the subclass)."""

    world = mbl.World(n=[0.0, 0.0, -1.0])
    joint = mbl.Revolute(n=[0.0, 1.0, 0.0], use_axis_flange=True, phi=mb.Fixed(0.0),
                         w=mb.Fixed(0.0))
    body = mbl.Body(m=M, r_CM=[R_CM, 0.0, 0.0], I_11=0.01, I_22=I_22, I_33=0.01)

    def equations(self):
        yield mb.connect(self.world.frame_b, self.joint.frame_a)
        yield mb.connect(self.joint.frame_b, self.body.frame_a)


def _swing(t0, t1, phi0, w0, inertia, torque=0.0):
    """(phi, w) of the pendulum with ``inertia`` about the axis and a constant extra
    ``torque``, on a dense solution from t0."""
    def rhs(t, y):
        return [y[1], (M * G * R_CM * np.cos(y[0]) + torque) / inertia]
    return solve_ivp(rhs, (t0, t1), [phi0, w0], method="DOP853", rtol=1e-12, atol=1e-12,
                     dense_output=True).sol


def test_a_brake_holds_the_joint_locked_and_lets_it_swing_when_released():
    class Braked(Pendulum):
        brake = rot.Brake(mu_pos=[[0.0, 0.5]], fn_max=20.0)  # holds up to 10 N.m
        release = bl.Step(startTime=0.5, height=-1.0, offset=1.0)

        def equations(self):
            yield from super().equations()
            yield mb.connect(self.joint.axis, self.brake.flange_a)
            yield mb.connect(self.release.y, self.brake.f_normalized)

    cm = mb.compile(Braked())
    assert all(block.kind == "explicit" for block in cm.system.blocks)  # no loop
    res = mb.simulate(cm, 1.0, n_points=101, rtol=1e-10, atol=1e-12)
    held = res.t < 0.5
    assert np.all(res["joint.phi"][held] == 0.0) and np.all(res["brake.locked"][held] == 1)
    np.testing.assert_allclose(res["brake.tau"][held], M * G * R_CM, rtol=1e-12)
    free = res.t > 0.5
    phi, w = _swing(0.5, 1.0, 0.0, 0.0, J_JOINT)(res.t[free])
    np.testing.assert_allclose(res["joint.phi"][free], phi, atol=1e-8)
    np.testing.assert_allclose(res["joint.w"][free], w, atol=1e-8)


class Geared(Pendulum):
    """Bearing friction on a rotor behind a 1:10 gear: the rotor turns 10 times faster."""

    def __init__(self, tau_friction, peak):
        super().__init__()
        self.gear = rot.IdealGear(ratio=10.0)
        self.rotor = rot.Inertia(J=1e-3)
        self.bearing = rot.BearingFriction(tau_pos=[[0.0, tau_friction]], peak=peak)

    def equations(self):
        yield from super().equations()
        yield mb.connect(self.joint.axis, self.gear.flange_b)
        yield mb.connect(self.gear.flange_a, self.rotor.flange_b)
        yield mb.connect(self.rotor.flange_a, self.bearing.flange_a)


def test_friction_behind_a_gear_holds_the_reflected_torque():
    res = mb.simulate(Geared(0.4, 1.5), 0.5, n_points=11)  # holds up to 0.6 N.m
    assert np.all(res["joint.w"] == 0.0)
    np.testing.assert_allclose(res["bearing.tau"], M * G * R_CM / 10.0, rtol=1e-12)


def test_friction_behind_a_gear_slides_with_the_reflected_inertia_and_torque():
    cm = mb.compile(Geared(0.3, 1.2))  # holds up to 0.36 N.m < 0.49: breaks away at once
    assert all(block.kind == "explicit" for block in cm.system.blocks)
    res = mb.simulate(cm, 0.4, n_points=41, rtol=1e-10, atol=1e-12)
    inertia = J_JOINT + 1e-3 * 10.0 ** 2
    phi, w = _swing(0.0, 0.4, 0.0, 0.0, inertia, torque=-10.0 * 0.3)(res.t)
    np.testing.assert_allclose(res["joint.phi"], phi, atol=1e-8)
    np.testing.assert_allclose(res["rotor.w"], 10.0 * w, atol=1e-7)
    assert np.all(res["bearing.mode"][1:] == 1)


class FrictionChain(mb.Model):
    """n links in a vertical plane, Coulomb friction of 2 N.m (peak 1.2) in every joint."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.world = mbl.World(n=[0.0, 0.0, -1.0])
        for i in range(n):
            self.add(f"joint{i}", mbl.Revolute(n=[0.0, 1.0, 0.0], use_axis_flange=True))
            self.add(f"body{i}", mbl.Body(m=1.0, r_CM=[0.5, 0.0, 0.0], I_11=0.01,
                                          I_22=0.01, I_33=0.01))
            self.add(f"link{i}", mbl.FixedTranslation(r=[1.0, 0.0, 0.0]))
            self.add(f"bearing{i}", rot.BearingFriction(tau_pos=[[0.0, 2.0]], peak=1.2))

    def equations(self):
        frame = self.world.frame_b
        for i in range(self.n):
            joint = getattr(self, f"joint{i}")
            yield mb.connect(frame, joint.frame_a)
            yield mb.connect(joint.frame_b, getattr(self, f"body{i}").frame_a)
            yield mb.connect(joint.frame_b, getattr(self, f"link{i}").frame_a)
            yield mb.connect(joint.axis, getattr(self, f"bearing{i}").flange_a)
            frame = getattr(self, f"link{i}").frame_b


def test_joint_friction_keeps_forward_dynamics_one_explicit_pass_per_joint():
    sizes = (4, 8, 12)
    ops = []
    for n in sizes:
        cm = mb.compile(FrictionChain(n))
        assert all(block.kind == "explicit" for block in cm.system.blocks)
        ops.append(cm.dynamics.n_instructions())
    per_link = np.diff(ops) / np.diff(sizes)
    assert per_link[1] == pytest.approx(per_link[0], rel=1e-3)  # linear in n


class DissipatingChain(FrictionChain):
    """The chain with the work its joint friction has dissipated as a state."""

    dissipated = mb.Variable(start=0.0, fixed=True)

    def equations(self):
        yield from super().equations()
        yield mb.der(self.dissipated) == sum(getattr(self, f"bearing{i}").tau
                                            * getattr(self, f"bearing{i}").w
                                            for i in range(self.n))


def _mechanical_energy(res, n):
    """Kinetic plus potential energy of the chain's bodies (m = 1, r_CM = [0.5, 0, 0],
    inertia 0.01 I) from their frames."""
    r_cm, energy = np.array([0.5, 0.0, 0.0]), 0.0
    for i in range(n):
        frame = f"body{i}.frame_a"
        v = np.array([res[f"{frame}.v[{k}]"] for k in range(6)])  # [w; v] in the frame
        R = np.array([[res[f"{frame}.R[{a},{b}]"] for b in range(3)] for a in range(3)])
        v_cm = v[3:] + np.cross(v[:3], r_cm, axis=0)
        z_cm = res[f"{frame}.r_0[2]"] + np.einsum("ijt,i->jt", R, r_cm)[2]
        energy = energy + 0.5 * (v_cm ** 2).sum(0) + 0.5 * 0.01 * (v[:3] ** 2).sum(0) \
            + G * z_cm
    return energy


def test_stick_slip_of_a_friction_chain_conserves_energy_with_the_dissipated_work():
    # several joints stop and stick or break away, some at the same instants (the event
    # iteration then switches one joint at a time)
    n = 4
    res = mb.simulate(DissipatingChain(n), 3.0, n_points=3001, rtol=1e-12, atol=1e-14)
    stops = [ev.time for ev in res.events if "w > 0" in " ".join(ev.causes)
             or "w < 0" in " ".join(ev.causes)]
    assert len(stops) >= 4
    locked = np.array([res[f"bearing{i}.locked"] for i in range(n)])
    assert locked.any() and not locked.all()
    total = _mechanical_energy(res, n) + res["dissipated"]
    np.testing.assert_allclose(total, total[0], atol=2e-8)  # of 16.6 J dissipated
    assert res["dissipated"][-1] > 1.0


def test_a_prismatic_joint_falls_onto_a_hard_stop_through_its_axis_flange():
    from mbmodel.libraries import translational as tr

    class Drop(mb.Model):
        """A 1 kg body on a vertical prismatic joint; a 0.5 kg slider with 1 N of Coulomb
        friction and a stop 1 m below on the joint's axis flange."""
        world = mbl.World(n=[0.0, 0.0, -1.0])
        joint = mbl.Prismatic(n=[0.0, 0.0, 1.0], use_axis_flange=True, s=mb.Fixed(0.0),
                              v=mb.Fixed(0.0))
        body = mbl.Body(m=1.0, r_CM=[0.0, 0.0, 0.0], I_11=0.01, I_22=0.01, I_33=0.01)
        stop = tr.MassWithStopAndFriction(m=0.5, smin=-1.0, smax=1.0, F_prop=0.0,
                                          F_Coulomb=1.0, F_Stribeck=0.0)

        def equations(self):
            yield mb.connect(self.world.frame_b, self.joint.frame_a)
            yield mb.connect(self.joint.frame_b, self.body.frame_a)
            yield mb.connect(self.joint.axis, self.stop.flange_a)

    cm = mb.compile(Drop())
    assert all(block.kind == "explicit" for block in cm.system.blocks)
    res = mb.simulate(cm, 1.0, n_points=101, rtol=1e-10, atol=1e-12)
    a = -(G - 1.0) / 1.5  # gravity on the body against the friction, both masses moving
    t_hit = np.sqrt(2 / -a)
    falling = res.t < t_hit
    np.testing.assert_allclose(res["joint.s"][falling], 0.5 * a * res.t[falling] ** 2,
                               atol=1e-9)
    hits = [ev.time for ev in res.events if "stop.s <=" in " ".join(ev.causes)]
    assert hits[0] == pytest.approx(t_hit, abs=1e-9)
    resting = res.t > t_hit
    np.testing.assert_allclose(res["joint.s"][resting], -1.0, atol=1e-12)
    assert np.all(res["joint.v"][resting] == 0.0)
    np.testing.assert_allclose(res["stop.f"][resting], -G, rtol=1e-9)  # holds the body


@pytest.mark.parametrize("n", [3, 4])
def test_friction_chain_matches_an_event_driven_pinocchio_reference(n):
    """Against tests/chain_friction_reference.py (Pinocchio's mass matrix and bias forces,
    scipy's events, the stick-slip logic written out): the joints stop, stick and break away
    at the same instants, several of them at once, and the angles agree over 3 s."""
    pytest.importorskip("pinocchio")
    from chain_friction_reference import ChainWithFriction
    times = np.linspace(0.0, 3.0, 301)
    angles, events = ChainWithFriction(n).run(np.zeros(n), np.zeros(n), 3.0, times)
    sticks = [t for t, _, mode in events if mode == 0]
    assert len(sticks) >= 4 and len(events) >= 12
    res = mb.simulate(FrictionChain(n), 3.0, n_points=301, rtol=1e-10, atol=1e-12)
    simulated = np.array([res[f"joint{i}.phi"] for i in range(n)]).T
    np.testing.assert_allclose(simulated, angles, atol=1e-7)  # (7e-9 and 9e-9 seen)
    for t in sticks:  # each reference stick is an event of the simulation
        assert min(abs(ev.time - t) for ev in res.events) < 1e-8


def test_friction_on_the_joint_that_closes_a_loop_dissipates_its_work():
    """A four-bar whose closing joint (frame_b at the loop cut only) has a bearing friction
    on its axis failed at t = 0 with a singular articulated step (D = 0: no inertia beyond
    the cut) while the bearing slid (review). Its friction is left to the general solver:
    the mechanism's energy falls by exactly the friction work, 0.2 |w4| integrated, across
    the rocker's reversal."""
    from loop_mechanisms import Fourbar, fourbar_energy
    res = mb.simulate(Fourbar(w0=4.0, at_cut="friction"), 0.25, n_points=2001, rtol=1e-10,
                      atol=1e-12)
    energy = fourbar_energy(res)
    w4 = np.abs(res["j4.w"])
    work = 0.2 * np.concatenate([[0.0], np.cumsum(0.5 * (w4[1:] + w4[:-1]) * np.diff(res.t))])
    assert res["j4.w"].max() > 0.5 and res["j4.w"].min() < -4.0    # it reversed
    assert np.abs((energy[0] - energy) - work).max() < 1e-6
    assert work[-1] > 0.1
