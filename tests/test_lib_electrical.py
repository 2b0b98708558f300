"""Tests of the analog electrical library (mbmodel.libraries.electrical): structure of every
component, parameter checks, and simulated circuits against closed-form solutions."""

import math

import numpy as np
import pytest

import mbmodel as mb
from mbmodel import Fixed, connect
from mbmodel.functions import sin
from mbmodel.libraries import electrical as el
from mbmodel.libraries import rotational as rot

needs_simulate = pytest.mark.skipif(not hasattr(mb, "simulate"),
                                    reason="mbmodel.simulate not available yet")

TIGHT = dict(rtol=1e-10, atol=1e-12)


def at(result, name, t):
    """Value of ``name`` at time ``t`` (linear interpolation on the output grid)."""
    return float(np.interp(t, np.asarray(result.t), np.asarray(result[name], dtype=float)))


class Sine(mb.Model):
    """Local signal source (keeps these tests independent of the blocks library)."""

    amplitude = mb.Parameter(1.0)
    f = mb.Parameter(1.0)
    y = mb.Output()

    def equations(self):
        yield self.y == self.amplitude * sin(2 * math.pi * self.f * mb.time)


# --------------------------------------------------------------------------------------
# Structure (flattening, balance) and parameters
# --------------------------------------------------------------------------------------

ONE_PORTS = [
    (el.Resistor, dict(R=2.0)), (el.Conductor, dict(G=0.5)), (el.Capacitor, dict(C=1e-3)),
    (el.Inductor, dict(L=1e-3)), (el.ConstantVoltage, dict(V=2.0)),
    (el.StepVoltage, dict(V=1.0, startTime=0.1)), (el.SineVoltage, dict(V=1.0, f=50.0)),
    (el.ConstantCurrent, dict(I=1.0)), (el.StepCurrent, dict(I=1.0, startTime=0.1)),
    (el.SineCurrent, dict(I=1.0, f=50.0)),
]


class OnePortBench(mb.Model):
    """Device under test in series with a current sensor, a power sensor and a resistor."""

    def __init__(self, cls, kw):
        super().__init__()
        self.dut = cls(**kw)
        self.r = el.Resistor(R=2.0)
        self.ground = el.Ground()
        self.vs = el.VoltageSensor()
        self.cs = el.CurrentSensor()
        self.ps = el.PowerSensor()
        self.pot = el.PotentialSensor()

    def equations(self):
        yield connect(self.dut.p, self.cs.p, self.vs.p)
        yield connect(self.cs.n, self.ps.pc)
        yield connect(self.ps.nc, self.r.p, self.ps.pv, self.pot.p)
        yield connect(self.r.n, self.dut.n, self.ground.p, self.ps.nv, self.vs.n)


@pytest.mark.parametrize("cls,kw", ONE_PORTS, ids=[c.__name__ for c, _ in ONE_PORTS])
def test_one_ports_flatten_balanced(cls, kw):
    flat = mb.flatten(OnePortBench(cls, kw))
    n_unknown = sum(1 for v in flat.variables if v.kind == "unknown")
    assert len(flat.equations) == n_unknown


def test_step_and_sine_sources_declare_time_events():
    for cls in (el.StepVoltage, el.SineVoltage, el.StepCurrent, el.SineCurrent):
        flat = mb.flatten(OnePortBench(cls, dict(startTime=0.25)))
        assert len(flat.time_events) == 1
    flat = mb.flatten(OnePortBench(el.ConstantVoltage, {}))
    assert flat.time_events == []


@pytest.mark.parametrize("use_support", [False, True])
def test_emf_flattens_with_and_without_support(use_support):
    class Drive(mb.Model):
        def __init__(self):
            super().__init__()
            self.source = el.ConstantVoltage(V=1.0)
            self.ground = el.Ground()
            self.emf = el.EMF(k=1.0, use_support=use_support)
            self.inertia = rot.Inertia(J=1.0)
            self.fixed = rot.Fixed()

        def equations(self):
            yield connect(self.source.p, self.emf.p)
            yield connect(self.source.n, self.emf.n, self.ground.p)
            yield connect(self.emf.flange, self.inertia.flange_a)
            if use_support:
                yield connect(self.emf.support, self.fixed.flange)

    flat = mb.flatten(Drive())
    assert ("emf.support.phi" in flat.index) == use_support
    assert sum(1 for v in flat.variables if v.kind == "unknown") == len(flat.equations)


def test_parameter_bounds_and_docs():
    with pytest.raises(mb.ParameterError):
        el.Resistor(R=-1.0)
    with pytest.raises(mb.ParameterError):
        el.Capacitor(C=-1e-6)
    with pytest.raises(mb.ParameterError):
        el.Inductor(L=float("nan"))
    r = el.Resistor()
    decl = r.declaration("R")
    assert decl.unit == "Ohm" and decl.min == 0.0 and decl.doc
    assert el.Capacitor().declaration("C").unit == "F"
    assert el.Inductor().declaration("L").unit == "H"


def test_pins_are_connectable_and_pin_to_flange_is_rejected():
    class Bad(mb.Model):
        r = el.Resistor()
        j = rot.Inertia()

        def equations(self):
            yield connect(self.r.p, self.j.flange_a)

    with pytest.raises(mb.InvalidConnectionError):
        mb.flatten(Bad())


# --------------------------------------------------------------------------------------
# Simulation against closed-form solutions
# --------------------------------------------------------------------------------------

class RC(mb.Model):
    source = el.StepVoltage(V=2.0, startTime=1e-3)
    resistor = el.Resistor(R=1e3)
    capacitor = el.Capacitor(C=1e-6, v=Fixed(0.0))
    ground = el.Ground()

    def equations(self):
        yield connect(self.source.p, self.resistor.p)
        yield connect(self.resistor.n, self.capacitor.p)
        yield connect(self.capacitor.n, self.source.n, self.ground.p)


@needs_simulate
def test_rc_step_response():
    res = mb.simulate(RC(), 8e-3, n_points=801, **TIGHT)
    t = res.t
    V, tau, t0 = 2.0, 1e-3, 1e-3
    expected = np.where(t >= t0, V * (1 - np.exp(-(t - t0) / tau)), 0.0)
    assert np.max(np.abs(res["capacitor.v"] - expected)) <= 1e-6 * V
    # Current through the resistor: (V - v_C)/R after the step.
    after = t > t0 + 1e-9
    np.testing.assert_allclose(res["resistor.i"][after], (V - expected[after]) / 1e3,
                               rtol=1e-6, atol=1e-12)
    assert at(res, "source.v", 0.5e-3) == 0.0 and at(res, "source.v", 2e-3) == V


@needs_simulate
def test_rc_parameter_change_without_recompile():
    cm = mb.compile(RC())
    res = cm.simulate(8e-3, params={"resistor.R": 2e3}, **TIGHT)
    expected = np.where(res.t >= 1e-3, 2.0 * (1 - np.exp(-(res.t - 1e-3) / 2e-3)), 0.0)
    assert np.max(np.abs(res["capacitor.v"] - expected)) <= 2e-6


class RL(mb.Model):
    source = el.StepVoltage(V=5.0, offset=0.0, startTime=0.0)
    resistor = el.Resistor(R=10.0)
    inductor = el.Inductor(L=0.1, i=Fixed(0.0))
    ground = el.Ground()

    def equations(self):
        yield connect(self.source.p, self.resistor.p)
        yield connect(self.resistor.n, self.inductor.p)
        yield connect(self.inductor.n, self.source.n, self.ground.p)


@needs_simulate
def test_rl_step_current():
    res = mb.simulate(RL(), 0.05, n_points=501, **TIGHT)
    expected = 5.0 / 10.0 * (1 - np.exp(-res.t * 10.0 / 0.1))
    assert np.max(np.abs(res["inductor.i"] - expected)) <= 1e-6 * 0.5
    np.testing.assert_allclose(res["inductor.v"], 5.0 * np.exp(-res.t * 100.0),
                               rtol=1e-6, atol=1e-8)


class SeriesRLC(mb.Model):
    """Charged capacitor discharging through a resistor and an inductor (free response)."""

    capacitor = el.Capacitor(C=1e-3, v=Fixed(1.0))
    resistor = el.Resistor(R=0.5)
    inductor = el.Inductor(L=0.1, i=Fixed(0.0))
    ground = el.Ground()

    def equations(self):
        yield connect(self.capacitor.p, self.resistor.p)
        yield connect(self.resistor.n, self.inductor.p)
        yield connect(self.inductor.n, self.capacitor.n, self.ground.p)


@needs_simulate
def test_series_rlc_underdamped_free_response():
    L, C, R, v0 = 0.1, 1e-3, 0.5, 1.0
    alpha = R / (2 * L)
    w0 = 1 / math.sqrt(L * C)
    wd = math.sqrt(w0 ** 2 - alpha ** 2)
    res = mb.simulate(SeriesRLC(), 0.5, n_points=5001, **TIGHT)
    t = res.t
    v_exact = v0 * np.exp(-alpha * t) * (np.cos(wd * t) + alpha / wd * np.sin(wd * t))
    np.testing.assert_allclose(res["capacitor.v"], v_exact, atol=2e-6 * v0)
    # Loop current: i = -C dv/dt = C*v0*(w0**2/wd)*exp(-alpha t)*sin(wd t).
    i_exact = C * v0 * w0 ** 2 / wd * np.exp(-alpha * t) * np.sin(wd * t)
    np.testing.assert_allclose(res["inductor.i"], i_exact, atol=2e-6 * np.max(np.abs(i_exact)))
    # Resonance and damping measured from the trajectory: zero crossings and decay.
    v = res["capacitor.v"]
    idx = np.nonzero(np.diff(np.sign(v)) != 0)[0]
    crossings = t[idx] - v[idx] * (t[idx + 1] - t[idx]) / (v[idx + 1] - v[idx])
    period = 2 * np.mean(np.diff(crossings))
    assert period == pytest.approx(2 * math.pi / wd, rel=1e-4)
    i_abs = np.abs(res["inductor.i"])
    peaks = [k for k in range(1, len(t) - 1)
             if i_abs[k] >= i_abs[k - 1] and i_abs[k] > i_abs[k + 1]]
    ratio = i_abs[peaks[2]] / i_abs[peaks[0]]  # one full period apart
    assert ratio == pytest.approx(math.exp(-alpha * 2 * math.pi / wd), rel=1e-3)


class InvertingAmplifier(mb.Model):
    """v_out = -R2/R1 * v_in with a 4-pin ideal op-amp (nullator-norator)."""

    source = el.SineVoltage(V=0.5, f=10.0, offset=0.1)
    r1 = el.Resistor(R=1e3)
    r2 = el.Resistor(R=4.7e3)
    opamp = el.IdealOpAmp()
    ground = el.Ground()
    v_out = el.VoltageSensor()
    v_in = el.VoltageSensor()

    def equations(self):
        yield connect(self.source.p, self.r1.p, self.v_in.p)
        yield connect(self.r1.n, self.r2.p, self.opamp.n1)
        yield connect(self.opamp.p1, self.opamp.n2, self.source.n, self.ground.p,
                      self.v_out.n, self.v_in.n)
        yield connect(self.r2.n, self.opamp.p2, self.v_out.p)


class InvertingAmplifier3Pin(mb.Model):
    source = el.SineVoltage(V=0.5, f=10.0, offset=0.1)
    r1 = el.Resistor(R=1e3)
    r2 = el.Resistor(R=4.7e3)
    opamp = el.IdealOpAmp3Pin()
    ground = el.Ground()
    v_out = el.VoltageSensor()

    def equations(self):
        yield connect(self.source.p, self.r1.p)
        yield connect(self.r1.n, self.r2.p, self.opamp.in_n)
        yield connect(self.opamp.in_p, self.source.n, self.ground.p, self.v_out.n)
        yield connect(self.r2.n, self.opamp.out, self.v_out.p)


@needs_simulate
@pytest.mark.parametrize("model", [InvertingAmplifier, InvertingAmplifier3Pin])
def test_inverting_amplifier_gain(model):
    res = mb.simulate(model(), 0.2, n_points=201, **TIGHT)
    v_in = 0.1 + 0.5 * np.sin(2 * math.pi * 10.0 * res.t)
    np.testing.assert_allclose(res["v_out.v"], -4.7 * v_in, rtol=1e-8, atol=1e-10)
    # Virtual ground at the inverting input, no input current.
    np.testing.assert_allclose(res["r1.i"], v_in / 1e3, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(res["r1.i"], res["r2.i"], rtol=1e-8, atol=1e-12)


class CurrentSourceBench(mb.Model):
    """Current source feeding a resistor through a current sensor and a power sensor."""

    def __init__(self, source):
        super().__init__()
        self.source = source
        self.resistor = el.Resistor(R=3.0)
        self.ground = el.Ground()
        self.ammeter = el.CurrentSensor()
        self.wattmeter = el.PowerSensor()

    def equations(self):
        # MSL: the source current flows from p through the source to n, i.e. out of n.
        yield connect(self.source.n, self.ammeter.p)
        yield connect(self.ammeter.n, self.wattmeter.pc)
        yield connect(self.wattmeter.nc, self.resistor.p, self.wattmeter.pv)
        yield connect(self.resistor.n, self.source.p, self.ground.p, self.wattmeter.nv)


@needs_simulate
def test_current_sources_and_sensors():
    res = mb.simulate(CurrentSourceBench(el.ConstantCurrent(I=2.0)), 1.0, n_points=11, **TIGHT)
    np.testing.assert_allclose(res["ammeter.i"], 2.0, rtol=1e-12)
    np.testing.assert_allclose(res["resistor.v"], 6.0, rtol=1e-12)
    np.testing.assert_allclose(res["wattmeter.power"], 12.0, rtol=1e-12)
    np.testing.assert_allclose(res["resistor.LossPower"], 12.0, rtol=1e-12)
    # The source sees v = p.v - n.v = -6 V and i = 2 A: it delivers 12 W.
    np.testing.assert_allclose(res["source.v"], -6.0, rtol=1e-12)

    res = mb.simulate(CurrentSourceBench(el.StepCurrent(I=1.5, offset=0.5, startTime=0.3)),
                      1.0, n_points=101, **TIGHT)
    assert at(res, "ammeter.i", 0.2) == pytest.approx(0.5)
    assert at(res, "ammeter.i", 0.5) == pytest.approx(2.0)

    res = mb.simulate(CurrentSourceBench(el.SineCurrent(I=1.0, f=2.0, phase=0.3, startTime=0.1)),
                      1.0, n_points=1001, **TIGHT)
    t = res.t
    expected = np.where(t >= 0.1, np.sin(2 * math.pi * 2.0 * (t - 0.1) + 0.3), 0.0)
    np.testing.assert_allclose(res["ammeter.i"], expected, atol=1e-9)


class SignalDriven(mb.Model):
    """SignalVoltage driven by a local sine block, SignalCurrent by an external input."""

    u = mb.Input(unit="A")
    sine = Sine(amplitude=3.0, f=1.0)
    vsrc = el.SignalVoltage()
    r1 = el.Resistor(R=2.0)
    isrc = el.SignalCurrent()
    r2 = el.Resistor(R=4.0)
    ground = el.Ground()
    vsensor = el.VoltageSensor()

    def equations(self):
        yield connect(self.sine.y, self.vsrc.v)
        yield connect(self.u, self.isrc.i)
        yield connect(self.vsrc.p, self.r1.p)
        yield connect(self.isrc.n, self.r2.p, self.vsensor.p)
        yield connect(self.vsrc.n, self.r1.n, self.isrc.p, self.r2.n, self.ground.p,
                      self.vsensor.n)


@needs_simulate
def test_signal_sources():
    res = mb.simulate(SignalDriven(), 1.0, n_points=101,
                      inputs={"u": ([0.0, 0.5], [1.0, -2.0])}, **TIGHT)
    np.testing.assert_allclose(res["r1.i"], 1.5 * np.sin(2 * math.pi * res.t), atol=1e-10)
    assert at(res, "vsensor.v", 0.25) == pytest.approx(4.0)
    assert at(res, "vsensor.v", 0.75) == pytest.approx(-8.0)


class Motor(mb.Model):
    """DC motor: voltage source, armature resistance, EMF, rotor inertia, viscous load."""

    def __init__(self, use_support=False):
        super().__init__()
        self.use_support = use_support
        self.source = el.StepVoltage(V=12.0, startTime=0.0)
        self.resistor = el.Resistor(R=2.0)
        self.ground = el.Ground()
        self.emf = el.EMF(k=0.5, use_support=use_support)
        self.rotor = rot.Inertia(J=0.01, phi=Fixed(0.0), w=Fixed(0.0))
        self.load = rot.Damper(d=0.05)
        self.fixed = rot.Fixed()
        self.speed = rot.SpeedSensor()
        if use_support:
            self.housing = rot.TorqueSensor()

    def equations(self):
        yield connect(self.source.p, self.resistor.p)
        yield connect(self.resistor.n, self.emf.p)
        yield connect(self.emf.n, self.source.n, self.ground.p)
        yield connect(self.emf.flange, self.rotor.flange_a, self.speed.flange)
        yield connect(self.rotor.flange_b, self.load.flange_a)
        yield connect(self.load.flange_b, self.fixed.flange)
        if self.use_support:
            yield connect(self.emf.support, self.housing.flange_a)
            yield connect(self.housing.flange_b, self.fixed.flange)


@needs_simulate
@pytest.mark.parametrize("use_support", [False, True])
def test_dc_motor_reaches_analytic_speed(use_support):
    V, R, k, J, d = 12.0, 2.0, 0.5, 0.01, 0.05
    w_ss = V * k / (R * d + k ** 2)
    tau = J * R / (R * d + k ** 2)
    res = mb.simulate(Motor(use_support), 10 * tau, n_points=501, **TIGHT)
    # First-order response: w(t) = w_ss*(1 - exp(-t/tau)).
    np.testing.assert_allclose(res["rotor.w"], w_ss * (1 - np.exp(-res.t / tau)),
                               atol=1e-6 * w_ss)
    np.testing.assert_allclose(res["speed.w"], res["rotor.w"], atol=1e-8 * w_ss)
    # Armature current (V - k*w)/R decays to the load current d*w_ss/k.
    i_exact = (V - k * w_ss * (1 - np.exp(-res.t / tau))) / R
    np.testing.assert_allclose(res["emf.i"], i_exact, atol=1e-6 * V / R)
    assert res.final("emf.i") == pytest.approx(d * w_ss / k, rel=1e-3)
    np.testing.assert_allclose(res["emf.flange.tau"], -k * res["emf.i"], rtol=1e-10)
    np.testing.assert_allclose(res["emf.v"], k * res["rotor.w"], rtol=1e-8, atol=1e-10)
    if use_support:
        # The housing takes the reaction torque: support.tau = -flange.tau = k*i; the sensor
        # between support and ground reads the torque flowing into the housing.
        np.testing.assert_allclose(res["emf.support.tau"], k * res["emf.i"], rtol=1e-8,
                                   atol=1e-12)
        np.testing.assert_allclose(res["housing.tau"], -res["emf.support.tau"], rtol=1e-8,
                                   atol=1e-12)


class FreeHousingEMF(mb.Model):
    """Current-driven EMF whose housing is a free inertia: rotor and housing counter-rotate
    and the back-EMF follows the *relative* speed."""

    source = el.ConstantCurrent(I=2.0)
    ground = el.Ground()
    emf = el.EMF(k=0.3, use_support=True)
    rotor = rot.Inertia(J=0.02, phi=Fixed(0.0), w=Fixed(0.0))
    housing = rot.Inertia(J=0.5, phi=Fixed(0.0), w=Fixed(1.0))

    def equations(self):
        # The source current leaves its pin n and enters emf.p: emf.i = I.
        yield connect(self.source.n, self.emf.p)
        yield connect(self.emf.n, self.source.p, self.ground.p)
        yield connect(self.emf.flange, self.rotor.flange_a)
        yield connect(self.emf.support, self.housing.flange_a)


@needs_simulate
def test_emf_reaction_on_free_housing():
    k, I, Jr, Jh = 0.3, 2.0, 0.02, 0.5
    res = mb.simulate(FreeHousingEMF(), 1.0, n_points=51, **TIGHT)
    t = res.t
    np.testing.assert_allclose(res["emf.i"], I, rtol=1e-12)
    np.testing.assert_allclose(res["rotor.w"], k * I / Jr * t, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(res["housing.w"], 1.0 - k * I / Jh * t, rtol=1e-8)
    np.testing.assert_allclose(res["emf.w"], res["rotor.w"] - res["housing.w"], atol=1e-9)
    np.testing.assert_allclose(res["emf.v"], k * (res["rotor.w"] - res["housing.w"]),
                               atol=1e-9)
    np.testing.assert_allclose(res["emf.phi"], res["rotor.phi"] - res["housing.phi"],
                               atol=1e-9)


@needs_simulate
def test_conductor_and_voltage_divider_with_sine_source():
    class Divider(mb.Model):
        source = el.SineVoltage(V=2.0, f=3.0, phase=0.5, offset=1.0, startTime=0.1)
        resistor = el.Resistor(R=1.0, alpha=0.004, T_ref=300.0, T=350.0)  # R_actual = 1.2
        conductor = el.Conductor(G=0.5)  # 2 Ohm
        ground = el.Ground()
        probe = el.PotentialSensor()

        def equations(self):
            yield connect(self.source.p, self.resistor.p)
            yield connect(self.resistor.n, self.conductor.p, self.probe.p)
            yield connect(self.conductor.n, self.source.n, self.ground.p)

    res = mb.simulate(Divider(), 1.0, n_points=1001, **TIGHT)
    t = res.t
    v_src = 1.0 + np.where(t >= 0.1, 2.0 * np.sin(2 * math.pi * 3.0 * (t - 0.1) + 0.5), 0.0)
    np.testing.assert_allclose(res["source.v"], v_src, atol=1e-10)
    np.testing.assert_allclose(res["probe.phi"], v_src * 2.0 / 3.2, atol=1e-10)
    np.testing.assert_allclose(res["conductor.i"], 0.5 * res["conductor.v"], atol=1e-12)
    np.testing.assert_allclose(res["resistor.v"], 1.2 * res["resistor.i"], atol=1e-12)


@needs_simulate
def test_resistor_and_conductor_temperature_is_t_ref_unless_given():
    """Given only T_ref and alpha ("100 Ohm at 20 degC"), R_actual was R*(1 + alpha*(300.15
    - T_ref)) = 102.8 Ohm: T stayed 300.15 K where MSL's is T_ref (review). A temperature
    making R_actual or G_actual's divisor non-positive is refused, as MSL's assert does."""
    class Pair(mb.Model):
        source = el.ConstantVoltage(V=1.0)
        resistor = el.Resistor(R=100.0, alpha=0.004, T_ref=293.15)
        conductor = el.Conductor(G=0.01, alpha=0.004, T_ref=293.15, T=293.15)  # T given
        ground = el.Ground()

        def equations(self):
            yield connect(self.source.p, self.resistor.p, self.conductor.p)
            yield connect(self.resistor.n, self.conductor.n, self.source.n, self.ground.p)

    cm = mb.compile(Pair())
    res = cm.simulate(1.0, n_points=2)
    assert res["resistor.i"][-1] == pytest.approx(0.01, rel=1e-12)
    assert res["conductor.i"][-1] == pytest.approx(0.01, rel=1e-12)
    # T follows T_ref (a binding): still R at any reference temperature
    assert cm.simulate(1.0, n_points=2, params={"resistor.T_ref": 280.0})[
        "resistor.i"][-1] == pytest.approx(0.01, rel=1e-12)
    with pytest.raises(mb.ParameterError, match="conductor: Conductor: temperature outside "
                                                "scope of model"):
        cm.simulate(1.0, params={"conductor.alpha": 1.0, "conductor.T_ref": 400.0})


class CubicConductor(el.OnePort):
    """i = 0.1 v + 0.05 v^3: a nonlinear algebraic loop with the resistor before it."""

    def equations(self):
        yield from super().equations()
        yield self.i == 0.1 * self.v + 0.05 * self.v ** 3


class SineIntoCubic(mb.Model):
    src = el.SineVoltage(V=5.0, f=50.0)
    r = el.Resistor(R=10.0)
    d = CubicConductor()
    c = el.Capacitor(C=1e-3, v=mb.Fixed(0.0))
    load = el.Resistor(R=100.0)
    g = el.Ground()

    def equations(self):
        yield mb.connect(self.src.p, self.r.p)
        yield mb.connect(self.r.n, self.d.p)
        yield mb.connect(self.d.n, self.c.p, self.load.p)
        yield mb.connect(self.src.n, self.c.n, self.load.n, self.g.p)


def test_a_nonlinear_loop_driven_from_rest_by_a_sine():
    """IDAS's own first step takes the algebraic variables' derivatives as 0; from rest, with
    the source's sine starting at 0, it was far too long and every run with a first output
    time beyond 1e-4 s failed at t = 0 ('IDA_ERR_FAIL'). Against scipy's Radau with the node
    voltage solved by brentq."""
    from scipy.integrate import solve_ivp
    from scipy.optimize import brentq

    def conductor(v):
        return 0.1 * v + 0.05 * v ** 3

    def rhs(t, y):
        source = 5.0 * np.sin(2 * np.pi * 50.0 * t)
        node = brentq(lambda u: (source - u) / 10.0 - conductor(u - y[0]), -20.0, 20.0,
                      xtol=1e-15)
        return [(conductor(node - y[0]) - y[0] / 100.0) / 1e-3]

    with pytest.warns(mb.ImplicitStartWarning):
        cm = mb.compile(SineIntoCubic())
    res = cm.simulate(0.04, n_points=11)
    assert res.methods == ["idas"]
    sol = solve_ivp(rhs, (0.0, 0.04), [0.0], method="Radau", t_eval=res.t, rtol=1e-11,
                    atol=1e-12)
    assert np.abs(res["c.v"] - sol.y[0]).max() < 1e-6   # peak 3 V, rtol 1e-6


def test_a_limited_op_amp_driven_to_its_rail_by_its_own_output_says_why_it_stops():
    """Positive feedback (an astable) with the ideal limited op-amp: at the rail no mode
    is consistent, and the run stopped with a message about Zeno points and hysteresis
    only. It now says that the events fall at one instant and what that means."""
    class Astable(mb.Model):
        op = el.IdealOpAmpLimited(Vps=10.0, Vns=-10.0)
        r = el.Resistor(R=1e4)
        c = el.Capacitor(C=1e-7, v=Fixed(0.1))
        r1 = el.Resistor(R=1e4)
        r2 = el.Resistor(R=1e4)
        gnd = el.Ground()

        def equations(self):
            yield connect(self.op.out, self.r.p, self.r1.p)
            yield connect(self.r.n, self.c.p, self.op.in_n)
            yield connect(self.r1.n, self.r2.p, self.op.in_p)
            yield connect(self.c.n, self.r2.n, self.gnd.p)

    with pytest.raises(mb.SimulationError, match="The events fall at one instant, not at "
                                                 "shrinking intervals"):
        mb.simulate(Astable(), 0.01)
