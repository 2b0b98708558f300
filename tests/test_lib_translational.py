"""Tests of the 1-D translational mechanics library (mbmodel.libraries.translational):
structure of every component, sign conventions, and simulated motions against closed-form
solutions."""

import math

import numpy as np
import pytest

import mbmodel as mb
from mbmodel import Fixed, connect
from mbmodel.functions import sin
from mbmodel.libraries import translational as tr

needs_simulate = pytest.mark.skipif(not hasattr(mb, "simulate"),
                                    reason="mbmodel.simulate not available yet")

TIGHT = dict(rtol=1e-10, atol=1e-12)


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

TWO_FLANGE = [tr.Spring, tr.Damper, tr.SpringDamper, tr.ForceSensor, tr.RelPositionSensor,
              tr.RelSpeedSensor]


@pytest.mark.parametrize("cls", TWO_FLANGE, ids=lambda c: c.__name__)
def test_two_flange_components_flatten_balanced(cls):
    class Bench(mb.Model):
        fixed = tr.Fixed()
        dut = cls()
        mass = tr.Mass(L=0.1)
        spring = tr.Spring(c=1.0)
        position = tr.PositionSensor()
        speed = tr.SpeedSensor()
        acc = tr.AccSensor()

        def equations(self):
            yield connect(self.fixed.flange, self.dut.flange_a)
            yield connect(self.dut.flange_b, self.mass.flange_a)
            yield connect(self.mass.flange_b, self.spring.flange_a, self.position.flange,
                          self.speed.flange, self.acc.flange)
            yield connect(self.spring.flange_b, self.fixed.flange)

    flat = mb.flatten(Bench())
    assert len(flat.equations) == n_unknowns(flat)


SOURCES = [(tr.Force, "f", {}), (tr.ConstantForce, None, {}),
           (tr.Speed, "v_ref", dict(exact=True)), (tr.Speed, "v_ref", dict(exact=False)),
           (tr.Position, "s_ref", dict(exact=True)), (tr.Position, "s_ref", dict(exact=False))]


@pytest.mark.parametrize("use_support", [False, True])
@pytest.mark.parametrize("cls,signal,kw", SOURCES,
                         ids=[f"{c.__name__}-{k}" for c, _, k in SOURCES])
def test_sources_flatten_with_and_without_support(cls, signal, kw, use_support):
    class Bench(mb.Model):
        def __init__(self):
            super().__init__()
            self.source = cls(use_support=use_support, **kw)
            self.mass = tr.Mass()
            self.fixed = tr.Fixed()
            self.signal = Const()

        def equations(self):
            yield connect(self.source.flange, self.mass.flange_a)
            if use_support:
                yield connect(self.source.support, self.fixed.flange)
            if signal:
                yield connect(self.signal.y, getattr(self.source, signal))

    flat = mb.flatten(Bench())
    assert len(flat.equations) == n_unknowns(flat)
    assert ("source.support.s" in flat.index) == use_support


def test_parameter_bounds_and_units():
    with pytest.raises(mb.ParameterError):
        tr.Mass(m=-1.0)
    with pytest.raises(mb.ParameterError):
        tr.Spring(c=-5.0)
    with pytest.raises(mb.ParameterError):
        tr.SpringDamper(d=-1.0)
    m = tr.Mass()
    assert m.declaration("m").unit == "kg"
    assert m.declaration("s").state_select == "prefer"
    assert m.declaration("v").state_select == "prefer"
    assert tr.Damper().declaration("d").unit == "N.s/m"


# --------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------

class SpringMassDamper(mb.Model):
    """Mass on a spring and a damper in parallel to ground, released from s0 at rest."""

    def __init__(self, combined=False):
        super().__init__()
        self.combined = combined
        self.fixed = tr.Fixed(s0=0.5)
        if combined:
            self.sd = tr.SpringDamper(c=100.0, d=1.5, s_rel0=0.2)
        else:
            self.spring = tr.Spring(c=100.0, s_rel0=0.2)
            self.damper = tr.Damper(d=1.5)
        self.mass = tr.Mass(m=0.8, L=0.1, s=Fixed(0.95), v=Fixed(0.0))
        self.position = tr.PositionSensor()
        self.speed = tr.SpeedSensor()
        self.acc = tr.AccSensor()
        self.rel_position = tr.RelPositionSensor()
        self.rel_speed = tr.RelSpeedSensor()
        self.force = tr.ForceSensor()

    def equations(self):
        yield connect(self.fixed.flange, self.force.flange_a, self.rel_position.flange_a,
                      self.rel_speed.flange_a)
        if self.combined:
            yield connect(self.force.flange_b, self.sd.flange_a)
            yield connect(self.sd.flange_b, self.mass.flange_a, self.rel_position.flange_b,
                          self.rel_speed.flange_b)
        else:
            yield connect(self.force.flange_b, self.spring.flange_a, self.damper.flange_a)
            yield connect(self.spring.flange_b, self.damper.flange_b, self.mass.flange_a,
                          self.rel_position.flange_b, self.rel_speed.flange_b)
        yield connect(self.mass.flange_b, self.position.flange, self.speed.flange,
                      self.acc.flange)


@needs_simulate
@pytest.mark.parametrize("combined", [False, True], ids=["spring+damper", "SpringDamper"])
def test_spring_mass_damper_free_decay(combined):
    m, c, d, L = 0.8, 100.0, 1.5, 0.1
    # Equilibrium: flange_a of the mass at s0 + s_rel0, centre L/2 further.
    s_eq = 0.5 + 0.2 + L / 2
    x0 = 0.95 - s_eq
    alpha = d / (2 * m)
    wd = math.sqrt(c / m - alpha ** 2)
    res = mb.simulate(SpringMassDamper(combined), 3.0, n_points=3001, **TIGHT)
    t = res.t
    x = x0 * np.exp(-alpha * t) * (np.cos(wd * t) + alpha / wd * np.sin(wd * t))
    v = -x0 * (alpha ** 2 + wd ** 2) / wd * np.exp(-alpha * t) * np.sin(wd * t)
    np.testing.assert_allclose(res["mass.s"], s_eq + x, atol=1e-7)
    np.testing.assert_allclose(res["mass.v"], v, atol=1e-6)
    # Logarithmic decrement measured from successive maxima of the displacement.
    disp = res["mass.s"] - s_eq
    peaks = [k for k in range(1, len(t) - 1) if disp[k] > disp[k - 1] and disp[k] >= disp[k + 1]]
    assert len(peaks) >= 3
    ratio = disp[peaks[1]] / disp[peaks[0]]
    assert ratio == pytest.approx(math.exp(-alpha * 2 * math.pi / wd), rel=1e-3)
    # Sensors: the position/speed/acceleration sensors sit on flange_b (centre + L/2).
    np.testing.assert_allclose(res["position.s"], res["mass.s"] + L / 2, atol=1e-12)
    np.testing.assert_allclose(res["speed.v"], res["mass.v"], atol=1e-8)
    np.testing.assert_allclose(res["acc.a"], res["mass.a"], atol=1e-6)
    np.testing.assert_allclose(res["rel_position.s_rel"], res["mass.s"] - L / 2 - 0.5,
                               atol=1e-12)
    np.testing.assert_allclose(res["rel_speed.v_rel"], res["mass.v"], atol=1e-8)
    # Force sensor between ground and the spring/damper: f = flange_a.f = -flange_b.f
    # = -(spring + damper force on their flange_a) = spring + damper force on the mass = m*a.
    np.testing.assert_allclose(res["force.f"], 0.8 * res["mass.a"], rtol=1e-6, atol=1e-6)
    # ... and the acceleration itself is the analytic one, -(c x + d v)/m
    np.testing.assert_allclose(res["acc.a"], -(c * x + d * v) / m, atol=1e-4)
    if combined:
        np.testing.assert_allclose(res["sd.f"], res["sd.f_c"] + res["sd.f_d"], atol=1e-9)
        np.testing.assert_allclose(res["sd.lossPower"], d * res["mass.v"] ** 2, atol=1e-7)
    else:
        np.testing.assert_allclose(res["spring.f"], c * (res["spring.s_rel"] - 0.2), atol=1e-9)
        np.testing.assert_allclose(res["damper.f"], d * res["mass.v"], atol=1e-7)


class ForcedOscillator(mb.Model):
    """Spring-mass-damper driven by a sine force F*sin(W*t), starting at rest."""

    signal = Sine(amplitude=2.0, w=8.0)
    force = tr.Force()
    mass = tr.Mass(m=1.0, s=Fixed(0.0), v=Fixed(0.0))
    spring = tr.Spring(c=100.0)
    damper = tr.Damper(d=10.0)
    fixed = tr.Fixed()

    def equations(self):
        yield connect(self.signal.y, self.force.f)
        yield connect(self.force.flange, self.mass.flange_b)
        yield connect(self.mass.flange_a, self.spring.flange_b, self.damper.flange_b)
        yield connect(self.spring.flange_a, self.damper.flange_a, self.fixed.flange)


@needs_simulate
def test_forced_oscillation_steady_state_amplitude():
    m, c, d, F, W = 1.0, 100.0, 10.0, 2.0, 8.0
    amplitude = F / math.sqrt((c - m * W ** 2) ** 2 + (d * W) ** 2)
    phase = math.atan2(d * W, c - m * W ** 2)
    period = 2 * math.pi / W
    t_end = 6.0  # transient decays like exp(-d/(2m) t) = exp(-30)
    res = mb.simulate(ForcedOscillator(), t_end, n_points=6001, **TIGHT)
    t, s = res.t, res["mass.s"]
    last = t >= t_end - 2 * period
    measured = 0.5 * (np.max(s[last]) - np.min(s[last]))
    assert measured == pytest.approx(amplitude, rel=1e-4)
    # The whole late trajectory is the particular solution F/|Z| * sin(W t - phase).
    np.testing.assert_allclose(s[last], amplitude * np.sin(W * t[last] - phase), atol=1e-8)


@needs_simulate
@pytest.mark.parametrize("use_support", [False, True])
def test_constant_force_accelerates_mass(use_support):
    class Push(mb.Model):
        def __init__(self):
            super().__init__()
            self.source = tr.ConstantForce(f_constant=6.0, use_support=use_support)
            self.mass = tr.Mass(m=2.0, s=Fixed(1.0), v=Fixed(0.5))
            if use_support:
                self.fixed = tr.Fixed(s0=-3.0)
                self.sensor = tr.ForceSensor()

        def equations(self):
            yield connect(self.source.flange, self.mass.flange_a)
            if use_support:
                yield connect(self.source.support, self.sensor.flange_b)
                yield connect(self.sensor.flange_a, self.fixed.flange)

    res = mb.simulate(Push(), 2.0, n_points=21, **TIGHT)
    t = res.t
    np.testing.assert_allclose(res["mass.s"], 1.0 + 0.5 * t + 0.5 * 3.0 * t ** 2, rtol=1e-9)
    np.testing.assert_allclose(res["source.v"], res["mass.v"], rtol=1e-9)
    np.testing.assert_allclose(res["source.flange.f"], -6.0, rtol=1e-12)
    support = -3.0 if use_support else 0.0
    np.testing.assert_allclose(res["source.s"], res["mass.s"] - support, rtol=1e-9)
    if use_support:
        # support.f = -flange.f = +6 N flows into the source from the housing; the sensor's
        # flange_b gives it, so the sensor reads f = flange_a.f = -flange_b.f = 6 N.
        np.testing.assert_allclose(res["source.support.f"], 6.0, rtol=1e-12)
        np.testing.assert_allclose(res["sensor.f"], 6.0, rtol=1e-12)


@needs_simulate
def test_position_source_exact_drives_mass():
    class Drive(mb.Model):
        signal = Sine(amplitude=0.05, w=10.0)
        source = tr.Position()
        sensor = tr.ForceSensor()
        mass = tr.Mass(m=3.0)

        def equations(self):
            yield connect(self.signal.y, self.source.s_ref)
            yield connect(self.source.flange, self.sensor.flange_a)
            yield connect(self.sensor.flange_b, self.mass.flange_a)

    res = mb.simulate(Drive(), 1.0, n_points=101, **TIGHT)
    t = res.t
    np.testing.assert_allclose(res["mass.s"], 0.05 * np.sin(10.0 * t), atol=1e-10)
    np.testing.assert_allclose(res["mass.v"], 0.5 * np.cos(10.0 * t), atol=1e-8)
    # Force needed: m*a = -m*A*W^2*sin(W t), transmitted through the sensor.
    np.testing.assert_allclose(res["sensor.f"], -3.0 * 0.05 * 100.0 * np.sin(10.0 * t),
                               atol=1e-7)


@needs_simulate
def test_position_source_filtered_and_speed_source():
    class Drive(mb.Model):
        ref = Const(k=0.2)
        vref = Const(k=-1.5)
        position = tr.Position(exact=False, f_crit=5.0)
        mass1 = tr.Mass(m=1.0)
        speed = tr.Speed(exact=True)
        mass2 = tr.Mass(m=1.0)

        def equations(self):
            yield connect(self.ref.y, self.position.s_ref)
            yield connect(self.position.flange, self.mass1.flange_a)
            yield connect(self.vref.y, self.speed.v_ref)
            yield connect(self.speed.flange, self.mass2.flange_a)

    res = mb.simulate(Drive(), 1.0, n_points=101, **TIGHT)
    assert res.final("mass1.s") == pytest.approx(0.2, abs=1e-6)
    assert np.max(res["mass1.s"]) < 0.2 * 1.01
    np.testing.assert_allclose(res["mass2.v"], -1.5, rtol=1e-10)
    np.testing.assert_allclose(res["mass2.s"], -1.5 * res.t, rtol=1e-9, atol=1e-12)


def test_nonsense_stops_and_friction_are_refused():
    """Accepted silently (review): stops swapped (the mass stuck at 0 under a 20 N push),
    a start beyond a stop (it stayed there), a negative friction table (it drove an
    inertia from 1 to 3 rad/s) and a negative Coulomb friction."""
    from mbmodel.libraries import rotational as rot

    def pushed(**stop):
        class Pushed(mb.Model):
            push = tr.ConstantForce(f_constant=20.0)
            mass = tr.MassWithStopAndFriction(**stop)

            def equations(self):
                yield mb.connect(self.push.flange, self.mass.flange_b)
        return Pushed()

    with pytest.raises(mb.ParameterError, match="the stops leave no room for the mass"):
        mb.simulate(pushed(smin=1.0, smax=-1.0, s=mb.Fixed(0.0), v=mb.Fixed(0.0)), 1.0)
    with pytest.raises(mb.SimulationError, match=r"the mass is beyond a stop .* \(does not "
                                                 r"hold at t = 0: mass.s = 2\)"):
        mb.simulate(pushed(smin=-1.0, smax=1.0, s=mb.Fixed(2.0), v=mb.Fixed(0.0)), 1.0)
    with pytest.raises(mb.ParameterError, match="F_Coulomb"):
        mb.simulate(pushed(smin=-1.0, smax=1.0, F_Coulomb=-5.0, s=mb.Fixed(0.0),
                           v=mb.Fixed(0.0)), 1.0)
    # pushed onto the right stop: it stays there, the assert holds at the stop
    res = mb.simulate(pushed(smin=-1.0, smax=1.0, s=mb.Fixed(0.0), v=mb.Fixed(0.0)), 2.0)
    assert res.final("mass.s") == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(mb.DeclarationError, match="friction opposes the motion"):
        rot.BearingFriction(tau_pos=[[0.0, -1.0]])
