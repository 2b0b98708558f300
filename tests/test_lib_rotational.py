"""Tests of the 1-D rotational mechanics library (mbmodel.libraries.rotational):
structure of every component, sign conventions, and simulated motions against closed-form
solutions."""

import math

import numpy as np
import pytest

import mbmodel as mb
from mbmodel import Fixed, connect
from mbmodel.functions import sin
from mbmodel.libraries import rotational as rot

needs_simulate = pytest.mark.skipif(not hasattr(mb, "simulate"),
                                    reason="mbmodel.simulate not available yet")

TIGHT = dict(rtol=1e-10, atol=1e-12)


def at(result, name, t):
    """Value of ``name`` at time ``t`` (linear interpolation on the output grid)."""
    return float(np.interp(t, np.asarray(result.t), np.asarray(result[name], dtype=float)))


class Const(mb.Model):
    """Local constant signal (keeps these tests independent of the blocks library)."""

    k = mb.Parameter(1.0)
    y = mb.Output()

    def equations(self):
        yield self.y == self.k


class Sine(mb.Model):
    """Local sine signal ``y = amplitude*sin(w*time)``."""

    amplitude = mb.Parameter(1.0)
    w = mb.Parameter(1.0)
    y = mb.Output()

    def equations(self):
        yield self.y == self.amplitude * sin(self.w * mb.time)


def n_unknowns(flat):
    return sum(1 for v in flat.variables if v.kind == "unknown")


# --------------------------------------------------------------------------------------
# Structure
# --------------------------------------------------------------------------------------

TWO_FLANGE = [rot.Spring, rot.Damper, rot.SpringDamper, rot.IdealGear, rot.TorqueSensor,
              rot.RelativeAngleSensor, rot.RelativeSpeedSensor]


@pytest.mark.parametrize("cls", TWO_FLANGE, ids=lambda c: c.__name__)
def test_two_flange_components_flatten_balanced(cls):
    class Bench(mb.Model):
        fixed = rot.Fixed()
        dut = cls()
        inertia = rot.Inertia()
        spring = rot.Spring(c=1.0)
        angle = rot.AngleSensor()
        speed = rot.SpeedSensor()
        acc = rot.AccSensor()

        def equations(self):
            yield connect(self.fixed.flange, self.dut.flange_a)
            yield connect(self.dut.flange_b, self.inertia.flange_a)
            yield connect(self.inertia.flange_b, self.spring.flange_a, self.angle.flange,
                          self.speed.flange, self.acc.flange)
            yield connect(self.spring.flange_b, self.fixed.flange)

    flat = mb.flatten(Bench())
    assert len(flat.equations) == n_unknowns(flat)


SOURCES = [(rot.Torque, "tau", {}), (rot.ConstantTorque, None, {}),
           (rot.Speed, "w_ref", dict(exact=True)), (rot.Speed, "w_ref", dict(exact=False)),
           (rot.Position, "phi_ref", dict(exact=True)),
           (rot.Position, "phi_ref", dict(exact=False))]


@pytest.mark.parametrize("use_support", [False, True])
@pytest.mark.parametrize("cls,signal,kw", SOURCES,
                         ids=[f"{c.__name__}-{k}" for c, _, k in SOURCES])
def test_sources_flatten_with_and_without_support(cls, signal, kw, use_support):
    class Bench(mb.Model):
        def __init__(self):
            super().__init__()
            self.source = cls(use_support=use_support, **kw)
            self.inertia = rot.Inertia()
            self.fixed = rot.Fixed()
            self.signal = Const()

        def equations(self):
            yield connect(self.source.flange, self.inertia.flange_a)
            if use_support:
                yield connect(self.source.support, self.fixed.flange)
            if signal:
                yield connect(self.signal.y, getattr(self.source, signal))

    flat = mb.flatten(Bench())
    assert len(flat.equations) == n_unknowns(flat)
    assert ("source.support.phi" in flat.index) == use_support


def test_parameter_bounds_and_units():
    with pytest.raises(mb.ParameterError):
        rot.Inertia(J=-1.0)
    with pytest.raises(mb.ParameterError):
        rot.Spring(c=-1.0)
    with pytest.raises(mb.ParameterError):
        rot.Damper(d=-0.1)
    j = rot.Inertia()
    assert j.declaration("J").unit == "kg.m2"
    assert j.declaration("phi").state_select == "prefer"
    assert j.declaration("w").state_select == "prefer"
    assert rot.Spring().declaration("c").unit == "N.m/rad"


def test_torque_input_must_be_connected():
    class Open(mb.Model):
        torque = rot.Torque()
        inertia = rot.Inertia()

        def equations(self):
            yield connect(self.torque.flange, self.inertia.flange_a)

    with pytest.raises(mb.InvalidConnectionError):
        mb.flatten(Open())


# --------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------

class Oscillator(mb.Model):
    """Inertia on a torsion spring to ground, released from phi0 at rest, with sensors."""

    fixed = rot.Fixed()
    spring = rot.Spring(c=40.0)
    inertia = rot.Inertia(J=0.1, phi=Fixed(0.2), w=Fixed(0.0))
    angle = rot.AngleSensor()
    speed = rot.SpeedSensor()
    acc = rot.AccSensor()
    rel_angle = rot.RelativeAngleSensor()
    rel_speed = rot.RelativeSpeedSensor()
    torque = rot.TorqueSensor()

    def equations(self):
        yield connect(self.fixed.flange, self.torque.flange_a, self.rel_angle.flange_a,
                      self.rel_speed.flange_a)
        yield connect(self.torque.flange_b, self.spring.flange_a)
        yield connect(self.spring.flange_b, self.inertia.flange_a)
        yield connect(self.inertia.flange_b, self.angle.flange, self.speed.flange,
                      self.acc.flange, self.rel_angle.flange_b, self.rel_speed.flange_b)


@needs_simulate
def test_spring_inertia_free_oscillation_and_sensors():
    J, c, phi0 = 0.1, 40.0, 0.2
    w0 = math.sqrt(c / J)
    T = 2 * math.pi * math.sqrt(J / c)
    res = mb.simulate(Oscillator(), 3 * T, n_points=3001, **TIGHT)
    t = res.t
    np.testing.assert_allclose(res["inertia.phi"], phi0 * np.cos(w0 * t), atol=1e-7)
    np.testing.assert_allclose(res["inertia.w"], -phi0 * w0 * np.sin(w0 * t), atol=1e-6)
    # Period measured from upward zero crossings of the angle.
    phi = res["inertia.phi"]
    idx = np.nonzero((phi[:-1] < 0) & (phi[1:] >= 0))[0]
    ups = t[idx] - phi[idx] * (t[idx + 1] - t[idx]) / (phi[idx + 1] - phi[idx])
    assert np.mean(np.diff(ups)) == pytest.approx(T, rel=1e-6)
    # Sensors.
    np.testing.assert_allclose(res["angle.phi"], res["inertia.phi"], atol=1e-12)
    np.testing.assert_allclose(res["speed.w"], res["inertia.w"], atol=1e-8)
    np.testing.assert_allclose(res["acc.a"], -w0 ** 2 * phi0 * np.cos(w0 * t), atol=1e-5)
    np.testing.assert_allclose(res["rel_angle.phi_rel"], res["inertia.phi"], atol=1e-12)
    np.testing.assert_allclose(res["rel_speed.w_rel"], res["inertia.w"], atol=1e-8)
    # The spring pulls the inertia back: spring.tau = c*phi_rel. The torque sensor sits
    # between ground and the spring; it reads the torque its flange_a receives from ground,
    # which balances the spring's pull on flange_a (flange_a.tau = -tau).
    np.testing.assert_allclose(res["spring.tau"], c * res["inertia.phi"], rtol=1e-10)
    np.testing.assert_allclose(res["torque.tau"], -res["spring.tau"], rtol=1e-8, atol=1e-10)
    # Energy is conserved.
    energy = 0.5 * J * res["inertia.w"] ** 2 + 0.5 * c * res["inertia.phi"] ** 2
    np.testing.assert_allclose(energy, 0.5 * c * phi0 ** 2, rtol=1e-6)


class DampedOscillator(mb.Model):
    fixed = rot.Fixed(phi0=0.1)
    spring_damper = rot.SpringDamper(c=40.0, d=0.4, phi_rel0=0.05)
    inertia = rot.Inertia(J=0.1, phi=Fixed(0.4), w=Fixed(0.0))

    def equations(self):
        yield connect(self.fixed.flange, self.spring_damper.flange_a)
        yield connect(self.spring_damper.flange_b, self.inertia.flange_a)


@needs_simulate
def test_spring_damper_decay():
    J, c, d = 0.1, 40.0, 0.4
    phi_eq = 0.1 + 0.05
    alpha = d / (2 * J)
    wd = math.sqrt(c / J - alpha ** 2)
    res = mb.simulate(DampedOscillator(), 2.0, n_points=2001, **TIGHT)
    t = res.t
    x0 = 0.4 - phi_eq
    expected = phi_eq + x0 * np.exp(-alpha * t) * (np.cos(wd * t) + alpha / wd * np.sin(wd * t))
    np.testing.assert_allclose(res["inertia.phi"], expected, atol=1e-7)
    sd = "spring_damper."
    np.testing.assert_allclose(res[sd + "tau"], res[sd + "tau_c"] + res[sd + "tau_d"], atol=1e-9)
    np.testing.assert_allclose(res[sd + "tau_d"], d * res["inertia.w"], atol=1e-8)
    np.testing.assert_allclose(res[sd + "lossPower"], d * res["inertia.w"] ** 2, atol=1e-8)


class GearTrain(mb.Model):
    """Constant torque on inertia 1 at the gear's flange_b, inertia 2 at flange_a."""

    def __init__(self, ratio, use_support=False):
        super().__init__()
        self.use_support = use_support
        self.torque = rot.ConstantTorque(tau_constant=3.0, use_support=use_support)
        self.inertia1 = rot.Inertia(J=0.2, phi=Fixed(0.0), w=Fixed(0.0))
        self.gear = rot.IdealGear(ratio=ratio, use_support=use_support)
        self.inertia2 = rot.Inertia(J=0.05)
        if use_support:
            self.fixed = rot.Fixed()
            self.housing = rot.TorqueSensor()

    def equations(self):
        yield connect(self.torque.flange, self.inertia1.flange_a)
        yield connect(self.inertia1.flange_b, self.gear.flange_b)
        yield connect(self.gear.flange_a, self.inertia2.flange_a)
        if self.use_support:
            yield connect(self.torque.support, self.gear.support, self.housing.flange_b)
            yield connect(self.housing.flange_a, self.fixed.flange)


@needs_simulate
@pytest.mark.parametrize("use_support", [False, True])
def test_ideal_gear_reflected_inertia(use_support):
    r, J1, J2, T = 4.0, 0.2, 0.05, 3.0
    res = mb.simulate(GearTrain(r, use_support), 1.0, n_points=101, **TIGHT)
    a1 = T / (J1 + r ** 2 * J2)
    np.testing.assert_allclose(res["inertia1.a"], a1, rtol=1e-8)
    np.testing.assert_allclose(res["inertia2.a"], r * a1, rtol=1e-8)
    np.testing.assert_allclose(res["inertia1.w"], a1 * res.t, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(res["inertia2.phi"], r * res["inertia1.phi"], rtol=1e-8,
                               atol=1e-12)
    # Torque balance of the gear: 0 = ratio*flange_a.tau + flange_b.tau.
    np.testing.assert_allclose(r * res["gear.flange_a.tau"] + res["gear.flange_b.tau"], 0.0,
                               atol=1e-9)
    np.testing.assert_allclose(res["torque.w"], res["inertia1.w"], rtol=1e-8, atol=1e-12)
    if use_support:
        # Support cut torques: source support.tau = -flange.tau = T, gear
        # support.tau = -(flange_a.tau + flange_b.tau). The sensor between ground and the
        # housing carries their sum (flange_b.tau = -sum, tau = flange_a.tau = sum).
        gear_support = -(res["gear.flange_a.tau"] + res["gear.flange_b.tau"])
        np.testing.assert_allclose(res["gear.support.tau"], gear_support, atol=1e-9)
        np.testing.assert_allclose(res["torque.support.tau"], T, rtol=1e-10)
        np.testing.assert_allclose(res["housing.tau"],
                                   res["torque.support.tau"] + res["gear.support.tau"],
                                   atol=1e-9)
        # In closed form: flange_a.tau = -J2 r a1, flange_b.tau = J2 r^2 a1, so the gear's
        # support takes J2 r (1 - r) a1 and the housing T + J2 r (1 - r) a1.
        np.testing.assert_allclose(res["gear.support.tau"], J2 * r * (1 - r) * a1, rtol=1e-8)
        np.testing.assert_allclose(res["housing.tau"], T + J2 * r * (1 - r) * a1, rtol=1e-8)


@needs_simulate
def test_ideal_gear_seen_from_flange_a():
    class Drive(mb.Model):
        signal = Const(k=2.0)
        torque = rot.Torque()
        inertia1 = rot.Inertia(J=0.3, phi=Fixed(0.0), w=Fixed(0.0))
        gear = rot.IdealGear(ratio=0.5)
        inertia2 = rot.Inertia(J=0.1)

        def equations(self):
            yield connect(self.signal.y, self.torque.tau)
            yield connect(self.torque.flange, self.inertia1.flange_a)
            yield connect(self.inertia1.flange_b, self.gear.flange_a)
            yield connect(self.gear.flange_b, self.inertia2.flange_a)

    res = mb.simulate(Drive(), 1.0, n_points=11, **TIGHT)
    a1 = 2.0 / (0.3 + 0.1 / 0.5 ** 2)
    np.testing.assert_allclose(res["inertia1.a"], a1, rtol=1e-8)
    np.testing.assert_allclose(res["inertia2.a"], a1 / 0.5, rtol=1e-8)


class SpeedDriven(mb.Model):
    """Exact speed source w_ref = A*sin(W*t) driving an inertia through a torque sensor."""

    def __init__(self, exact=True):
        super().__init__()
        self.signal = Sine(amplitude=2.0, w=5.0)
        self.source = rot.Speed(exact=exact)
        self.sensor = rot.TorqueSensor()
        self.inertia = rot.Inertia(J=0.5)

    def equations(self):
        yield connect(self.signal.y, self.source.w_ref)
        yield connect(self.source.flange, self.sensor.flange_a)
        yield connect(self.sensor.flange_b, self.inertia.flange_a)


@needs_simulate
def test_speed_source_exact():
    res = mb.simulate(SpeedDriven(), 2.0, n_points=201, **TIGHT)
    t = res.t
    np.testing.assert_allclose(res["inertia.w"], 2.0 * np.sin(5.0 * t), atol=1e-9)
    np.testing.assert_allclose(res["inertia.phi"], 2.0 / 5.0 * (1 - np.cos(5.0 * t)),
                               atol=1e-7)
    # Torque needed to drive the inertia: J*dw/dt.
    np.testing.assert_allclose(res["sensor.tau"], 0.5 * 2.0 * 5.0 * np.cos(5.0 * t), atol=1e-7)


@needs_simulate
def test_speed_source_filtered():
    class Drive(mb.Model):
        signal = Const(k=3.0)
        source = rot.Speed(exact=False, f_crit=2.0)
        inertia = rot.Inertia(J=0.5)

        def equations(self):
            yield connect(self.signal.y, self.source.w_ref)
            yield connect(self.source.flange, self.inertia.flange_a)

    res = mb.simulate(Drive(), 0.5, n_points=101, **TIGHT)
    w_crit = 2 * math.pi * 2.0
    np.testing.assert_allclose(res["inertia.w"], 3.0 * (1 - np.exp(-w_crit * res.t)), atol=1e-7)


class PositionDriven(mb.Model):
    """Position source phi_ref = A*sin(W*t) driving an inertia through a torque sensor."""

    def __init__(self, exact=True, use_support=False):
        super().__init__()
        self.use_support = use_support
        self.signal = Sine(amplitude=0.3, w=4.0)
        self.source = rot.Position(exact=exact, use_support=use_support)
        self.sensor = rot.TorqueSensor()
        self.inertia = rot.Inertia(J=2.0)
        if use_support:
            self.housing = rot.Fixed(phi0=0.7)

    def equations(self):
        yield connect(self.signal.y, self.source.phi_ref)
        yield connect(self.source.flange, self.sensor.flange_a)
        yield connect(self.sensor.flange_b, self.inertia.flange_a)
        if self.use_support:
            yield connect(self.source.support, self.housing.flange)


@needs_simulate
@pytest.mark.parametrize("use_support", [False, True])
def test_position_source_exact(use_support):
    res = mb.simulate(PositionDriven(use_support=use_support), 2.0, n_points=201, **TIGHT)
    t = res.t
    offset = 0.7 if use_support else 0.0
    np.testing.assert_allclose(res["inertia.phi"], offset + 0.3 * np.sin(4.0 * t), atol=1e-10)
    np.testing.assert_allclose(res["source.phi"], 0.3 * np.sin(4.0 * t), atol=1e-10)
    np.testing.assert_allclose(res["inertia.w"], 1.2 * np.cos(4.0 * t), atol=1e-8)
    np.testing.assert_allclose(res["sensor.tau"], -2.0 * 0.3 * 16.0 * np.sin(4.0 * t), atol=1e-7)


@needs_simulate
def test_position_source_filtered_settles():
    class Drive(mb.Model):
        signal = Const(k=1.5)
        source = rot.Position(exact=False, f_crit=5.0)
        inertia = rot.Inertia(J=1.0)

        def equations(self):
            yield connect(self.signal.y, self.source.phi_ref)
            yield connect(self.source.flange, self.inertia.flange_a)

    res = mb.simulate(Drive(), 1.0, n_points=101, **TIGHT)
    assert res.final("inertia.phi") == pytest.approx(1.5, abs=1e-6)
    assert res.final("inertia.w") == pytest.approx(0.0, abs=1e-5)
    # The filter is well damped: the overshoot stays small.
    assert np.max(res["inertia.phi"]) < 1.5 * 1.01


@needs_simulate
def test_torque_source_with_support_on_free_housing():
    """Torque between a rotor and a free housing: equal and opposite accelerations scaled by
    the inertias (actio = reactio)."""

    class Pair(mb.Model):
        signal = Const(k=1.0)
        torque = rot.Torque(use_support=True)
        rotor = rot.Inertia(J=0.5, phi=Fixed(0.0), w=Fixed(0.0))
        housing = rot.Inertia(J=2.0, phi=Fixed(0.0), w=Fixed(0.0))

        def equations(self):
            yield connect(self.signal.y, self.torque.tau)
            yield connect(self.torque.flange, self.rotor.flange_a)
            yield connect(self.torque.support, self.housing.flange_a)

    res = mb.simulate(Pair(), 1.0, n_points=11, **TIGHT)
    np.testing.assert_allclose(res["rotor.a"], 1.0 / 0.5, rtol=1e-10)
    np.testing.assert_allclose(res["housing.a"], -1.0 / 2.0, rtol=1e-10)


def test_elasto_backlash_without_backlash_is_a_spring_and_damper():
    """b = 0 (the default): MSL ignores the backlash (b <= 1e-10) and the element is a
    spring and damper in parallel. The contact law applied there clipped the damping (the
    torque 0 at t = 0, where the spring is unstretched and the damper pushes; 0.21 rad
    off at t = 0.47) (review). Closed form: phi = 10/wd e^(-5t) sin(wd t), wd = sqrt(75)."""
    class Oscillator(mb.Model):
        fix = rot.Fixed()
        backlash = rot.ElastoBacklash(c=100.0, d=10.0)
        load = rot.Inertia(J=1.0, phi=mb.Fixed(0.0), w=mb.Fixed(10.0))

        def equations(self):
            yield mb.connect(self.fix.flange, self.backlash.flange_a)
            yield mb.connect(self.backlash.flange_b, self.load.flange_a)

    res = mb.simulate(Oscillator(), 2.0, n_points=201, rtol=1e-10, atol=1e-12)
    wd = np.sqrt(75.0)
    assert res["load.phi"] == pytest.approx(10.0 / wd * np.exp(-5.0 * res.t) *
                                            np.sin(wd * res.t), abs=1e-8)
    assert res["backlash.tau"][0] == pytest.approx(100.0)   # d * w, the spring unstretched
