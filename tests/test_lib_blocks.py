"""Tests of the causal blocks library (mbmodel.libraries.blocks): structure, parameter
checks, and simulated responses against closed-form solutions."""

import math

import numpy as np
import pytest

import mbmodel as mb
from mbmodel import Fixed, connect
from mbmodel.libraries import blocks as bl

TIGHT = dict(rtol=1e-10, atol=1e-12)


def at(result, name, t):
    """Value of ``name`` at time ``t`` (linear interpolation on the output grid)."""
    return float(np.interp(t, np.asarray(result.t), np.asarray(result[name], dtype=float)))


# --------------------------------------------------------------------------------------
# Structure and parameters (no simulation)
# --------------------------------------------------------------------------------------

class AllBlocks(mb.Model):
    step = bl.Step(height=1.0, startTime=0.5)
    ramp = bl.Ramp(duration=1.0, startTime=0.2)
    sine = bl.Sine(f=2.0)
    cosine = bl.Cosine()
    clock = bl.ContinuousClock()
    const = bl.Constant(k=2.0)
    pid = bl.LimPID(k=2.0, Ti=0.5, Td=0.1, yMax=1.5)
    pi_ = bl.LimPID(controller_type="PI")
    pd = bl.LimPID(controller_type="PD")
    p = bl.LimPID(controller_type="P", yMin=-3.0, yMax=2.0)
    plant = bl.FirstOrder(k=1.0, T=1.0)
    integ = bl.Integrator(y=Fixed(2.0))
    deriv = bl.Derivative()
    second = bl.SecondOrder()
    lim = bl.Limiter(uMax=0.5)
    dz = bl.DeadZone()
    add = bl.Add(k2=-1.0)
    add3 = bl.Add3()
    fb = bl.Feedback()
    prod = bl.Product()
    gain = bl.Gain(k=3.0)
    div = bl.Division()
    abs_ = bl.Abs()
    pi = bl.PI()

    def equations(self):
        yield connect(self.step.y, self.pid.u_s, self.pi_.u_s, self.pd.u_s, self.p.u_s,
                      self.integ.u, self.deriv.u, self.second.u, self.lim.u, self.dz.u,
                      self.add.u1, self.add3.u1, self.add3.u2, self.add3.u3, self.fb.u1,
                      self.prod.u1, self.div.u1, self.abs_.u, self.pi.u)
        yield connect(self.plant.y, self.pid.u_m, self.pi_.u_m, self.pd.u_m, self.p.u_m,
                      self.add.u2, self.fb.u2, self.prod.u2)
        yield connect(self.pid.y, self.plant.u)
        yield connect(self.ramp.y, self.gain.u)
        yield connect(self.const.y, self.div.u2)


def test_all_blocks_flatten_balanced():
    flat = mb.flatten(AllBlocks())
    n_unknown = sum(1 for v in flat.variables if v.kind == "unknown")
    assert n_unknown == len(flat.equations)
    names = {v.name for v in flat.variables}
    # Controller structure: states only for the parts a controller has.
    assert {"pid.x_i", "pid.x_d", "pi_.x_i", "pd.x_d"} <= names
    assert not {"pi_.x_d", "pd.x_i", "p.x_i", "p.x_d"} & names
    fixed = {v.name: v.start for v in flat.variables if v.fixed}
    assert fixed["integ.y"] == 2.0
    assert fixed["plant.y"] == 0.0 and fixed["pid.x_i"] == 0.0 and fixed["pi.x"] == 0.0
    # Ramp declares events at its start and end.
    events = [str(e) for e in flat.time_events]
    assert "ramp.startTime" in events and "(ramp.startTime+ramp.duration)" in events


def test_unconnected_block_input_is_an_error():
    class Open(mb.Model):
        gain = bl.Gain()

    with pytest.raises(mb.InvalidConnectionError, match="gain.u"):
        mb.flatten(Open())


def test_top_level_block_input_is_external():
    flat = mb.flatten(bl.FirstOrder())
    assert flat.variable("u").kind == "input"


@pytest.mark.parametrize("factory", [
    lambda: bl.FirstOrder(T=0.0),
    lambda: bl.PI(T=0.0),
    lambda: bl.Derivative(T=-1.0),
    lambda: bl.LimPID(Ti=0.0),
    lambda: bl.LimPID(Td=-0.1),
    lambda: bl.Ramp(duration=-1.0),
    lambda: bl.Limiter(uMax=-1.0, uMin=1.0),
    lambda: bl.LimPID(yMax=-1.0, yMin=1.0),
])
def test_invalid_parameters_rejected(factory):
    with pytest.raises(mb.ParameterError):
        factory()


def test_invalid_structural_options_rejected():
    with pytest.raises(mb.DeclarationError, match="controller_type"):
        bl.LimPID(controller_type="PIDD")
    with pytest.raises(mb.DeclarationError, match="init"):
        bl.FirstOrder(init="zero")


def test_steady_and_free_init():
    class M(mb.Model):
        c = bl.Constant(k=1.0)
        steady = bl.FirstOrder(init="steady")
        free = bl.FirstOrder(init="free", y=mb.Guess(0.3))

        def equations(self):
            yield connect(self.c.y, self.steady.u, self.free.u)

    flat = mb.flatten(M())
    assert not flat.variable("steady.y").fixed and not flat.variable("free.y").fixed
    assert flat.variable("free.y").start == 0.3
    assert [e.description for e in flat.initial_equations] == ["(der(steady.y)==0)"]


def test_default_lower_limits_are_bound_to_upper():
    lim = bl.Limiter(uMax=2.0)
    pid = bl.LimPID(yMax=3.0)
    assert str(lim.declaration("uMin").value) == str(-lim.uMax)
    assert str(pid.declaration("yMin").value) == str(-pid.yMax)


@pytest.mark.parametrize("make, params, what", [
    (lambda: bl.Limiter(uMax=1.0), {"block.uMax": -0.5}, "Limiter: uMax must not be below"),
    (lambda: bl.Limiter(uMax=1.0, uMin=0.0), {"block.uMin": 2.0}, "Limiter: uMax must not"),
    (lambda: bl.DeadZone(uMax=1.0), {"block.uMax": -0.5}, "DeadZone: uMax must not be below"),
    (lambda: bl.LimPID(yMax=1.0), {"block.yMax": -2.0}, "LimPID: yMax must not be below"),
], ids=["limiter_bound_lower", "limiter", "dead_zone", "limpid"])
def test_an_inverted_band_given_at_run_time_is_refused(make, params, what):
    """The bands were checked only for numbers given to the constructor: at run time an
    upper limit below the lower one (or below the bound default -uMax) gave a constant or
    a shifted output with no error."""
    class Band(mb.Model):
        src = bl.Sine(amplitude=2.0, f=1.0)
        block = make()

        def equations(self):
            yield connect(self.src.y, self.block.u_s if hasattr(self.block, "u_s")
                          else self.block.u)
            if hasattr(self.block, "u_m"):
                yield connect(self.src.y, self.block.u_m)

    cm = mb.compile(Band())
    cm.simulate(0.1)  # the declared values hold
    with pytest.raises(mb.ParameterError, match=what):
        cm.simulate(0.1, params=params)


# --------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------

def test_step_switches_exactly_at_start_time():
    class M(mb.Model):
        step = bl.Step(height=2.0, offset=0.5, startTime=1.0)
        integ = bl.Integrator()  # integral of the step: exact only if the event is exact

        def equations(self):
            yield connect(self.step.y, self.integ.u)

    res = mb.simulate(M(), 2.0, n_points=201, **TIGHT)
    t = np.asarray(res.t)
    y = np.asarray(res["step.y"])
    assert np.any(np.isclose(t, 1.0, rtol=0, atol=1e-12)), "output grid lacks startTime"
    assert np.all(y[t < 1.0 - 1e-12] == pytest.approx(0.5, abs=1e-12))
    assert np.all(y[t > 1.0 + 1e-12] == pytest.approx(2.5, abs=1e-12))
    # Just before / just after the switch on the grid.
    assert at(res, "step.y", 0.99) == pytest.approx(0.5, abs=1e-12)
    assert at(res, "step.y", 1.01) == pytest.approx(2.5, abs=1e-12)
    # The last sample at t = startTime carries the value after the switch (time >= startTime).
    i_last = np.nonzero(np.isclose(t, 1.0, rtol=0, atol=1e-12))[0][-1]
    assert y[i_last] == pytest.approx(2.5, abs=1e-12)
    # int_0^t y = 0.5 t + 2 (t - 1)^+
    expected = 0.5 * t + 2.0 * np.maximum(t - 1.0, 0.0)
    assert np.max(np.abs(np.asarray(res["integ.y"]) - expected)) < 1e-7


def test_step_event_off_grid_is_exact():
    class M(mb.Model):
        step = bl.Step(height=1.0, startTime=0.537)
        integ = bl.Integrator()

        def equations(self):
            yield connect(self.step.y, self.integ.u)

    res = mb.simulate(M(), 2.0, n_points=11, **TIGHT)
    assert res["integ.y"][-1] == pytest.approx(2.0 - 0.537, abs=1e-8)


def test_ramp():
    class M(mb.Model):
        ramp = bl.Ramp(height=2.0, duration=1.5, offset=0.5, startTime=0.5)
        integ = bl.Integrator()

        def equations(self):
            yield connect(self.ramp.y, self.integ.u)

    res = mb.simulate(M(), 3.0, n_points=301, **TIGHT)
    t = np.asarray(res.t)
    y = np.asarray(res["ramp.y"])
    expected = 0.5 + 2.0 * np.clip((t - 0.5) / 1.5, 0.0, 1.0)
    assert np.max(np.abs(y - expected)) < 1e-10
    assert at(res, "ramp.y", 0.25) == pytest.approx(0.5)
    assert at(res, "ramp.y", 1.25) == pytest.approx(0.5 + 2.0 * 0.5)
    assert at(res, "ramp.y", 2.5) == pytest.approx(2.5)
    # Integral: 0.5*t + area of the ramp: 2*(1.5/2) + 2*(t - 2) after the end.
    assert res["integ.y"][-1] == pytest.approx(0.5 * 3.0 + 1.5 + 2.0 * 1.0, abs=1e-8)


def test_ramp_with_zero_duration_is_a_step():
    class M(mb.Model):
        ramp = bl.Ramp(height=1.0, duration=0.0, startTime=0.4)
        integ = bl.Integrator()

        def equations(self):
            yield connect(self.ramp.y, self.integ.u)

    res = mb.simulate(M(), 1.0, n_points=11, **TIGHT)
    assert at(res, "ramp.y", 0.3) == 0.0
    assert at(res, "ramp.y", 0.5) == 1.0
    assert res["integ.y"][-1] == pytest.approx(0.6, abs=1e-8)


def test_sine_and_cosine():
    class M(mb.Model):
        sine = bl.Sine(amplitude=2.0, f=1.5, phase=0.3, offset=1.0, startTime=0.2)
        cosine = bl.Cosine(amplitude=0.5, f=2.0)
        clock = bl.ContinuousClock(offset=1.0, startTime=0.5)
        const = bl.Constant(k=-4.0)

    res = mb.simulate(M(), 2.0, n_points=201, **TIGHT)
    t = np.asarray(res.t)
    after = t > 0.2 + 1e-12
    before = t < 0.2 - 1e-12
    expected = 1.0 + 2.0 * np.sin(2 * math.pi * 1.5 * (t - 0.2) + 0.3)
    assert np.max(np.abs(np.asarray(res["sine.y"])[after] - expected[after])) < 1e-10
    assert np.all(np.asarray(res["sine.y"])[before] == pytest.approx(1.0))
    assert np.max(np.abs(np.asarray(res["cosine.y"]) - 0.5 * np.cos(4 * math.pi * t))) < 1e-10
    assert np.max(np.abs(np.asarray(res["clock.y"]) - (1.0 + np.maximum(t - 0.5, 0.0)))) < 1e-10
    assert np.all(np.asarray(res["const.y"]) == -4.0)


# --------------------------------------------------------------------------------------
# Math and nonlinear
# --------------------------------------------------------------------------------------

class Arithmetic(mb.Model):
    a = bl.Sine(amplitude=2.0, f=0.5)
    b = bl.Ramp(height=3.0, duration=2.0, offset=1.0)
    add = bl.Add(k1=2.0, k2=-3.0)
    add3 = bl.Add3(k1=1.0, k2=2.0, k3=-0.5)
    fb = bl.Feedback()
    prod = bl.Product()
    div = bl.Division()
    gain = bl.Gain(k=-1.5)
    abs_ = bl.Abs()
    lim = bl.Limiter(uMax=1.0, uMin=-0.5)
    dz = bl.DeadZone(uMax=1.0)

    def equations(self):
        yield connect(self.a.y, self.add.u1, self.add3.u1, self.fb.u1, self.prod.u1,
                      self.div.u1, self.gain.u, self.abs_.u, self.lim.u, self.dz.u)
        yield connect(self.b.y, self.add.u2, self.add3.u2, self.fb.u2, self.prod.u2,
                      self.div.u2)
        yield connect(self.gain.y, self.add3.u3)


def test_arithmetic_blocks():
    res = mb.simulate(Arithmetic(), 3.0, n_points=151, **TIGHT)
    t = np.asarray(res.t)
    a = 2.0 * np.sin(math.pi * t)
    b = 1.0 + 3.0 * np.clip(t / 2.0, 0.0, 1.0)
    assert np.max(np.abs(np.asarray(res["a.y"]) - a)) < 1e-10
    assert np.max(np.abs(np.asarray(res["b.y"]) - b)) < 1e-10
    checks = {
        "add.y": 2.0 * a - 3.0 * b,
        "add3.y": a + 2.0 * b - 0.5 * (-1.5 * a),
        "fb.y": a - b,
        "prod.y": a * b,
        "div.y": a / b,
        "gain.y": -1.5 * a,
        "abs_.y": np.abs(a),
    }
    for name, expected in checks.items():
        assert np.max(np.abs(np.asarray(res[name]) - expected)) < 1e-9, name


def test_limiter_and_dead_zone():
    res = mb.simulate(Arithmetic(), 3.0, n_points=151, **TIGHT)
    t = np.asarray(res.t)
    a = 2.0 * np.sin(math.pi * t)
    lim = np.asarray(res["lim.y"])
    assert np.max(np.abs(lim - np.clip(a, -0.5, 1.0))) < 1e-9
    assert lim.max() == pytest.approx(1.0) and lim.min() == pytest.approx(-0.5)
    dz = np.asarray(res["dz.y"])
    expected = np.where(a > 1.0, a - 1.0, np.where(a < -1.0, a + 1.0, 0.0))
    assert np.max(np.abs(dz - expected)) < 1e-9


def test_runtime_parameter_change():
    class M(mb.Model):
        c = bl.Constant(k=2.0)
        gain = bl.Gain(k=3.0)

        def equations(self):
            yield connect(self.c.y, self.gain.u)

    model = M()
    assert mb.simulate(model, 1.0, n_points=3)["gain.y"][-1] == pytest.approx(6.0)
    assert mb.simulate(model, 1.0, n_points=3, params={"gain.k": -1.0})["gain.y"][-1] == \
        pytest.approx(-2.0)


# --------------------------------------------------------------------------------------
# Continuous blocks
# --------------------------------------------------------------------------------------

def test_first_order_step_response():
    class M(mb.Model):
        step = bl.Step(height=1.0, startTime=0.0)
        fo = bl.FirstOrder(k=2.0, T=0.5)

        def equations(self):
            yield connect(self.step.y, self.fo.u)

    res = mb.simulate(M(), 3.0, n_points=301, **TIGHT)
    t = np.asarray(res.t)
    expected = 2.0 * (1.0 - np.exp(-t / 0.5))
    assert np.max(np.abs(np.asarray(res["fo.y"]) - expected)) < 1e-6


def test_first_order_steady_init():
    class M(mb.Model):
        c = bl.Constant(k=1.5)
        fo = bl.FirstOrder(k=2.0, T=0.5, init="steady")

        def equations(self):
            yield connect(self.c.y, self.fo.u)

    res = mb.simulate(M(), 1.0, n_points=11, **TIGHT)
    assert np.max(np.abs(np.asarray(res["fo.y"]) - 3.0)) < 1e-8


def test_integrator_of_constant_is_a_ramp():
    class M(mb.Model):
        c = bl.Constant(k=2.0)
        integ = bl.Integrator(k=0.5, y=Fixed(1.0))

        def equations(self):
            yield connect(self.c.y, self.integ.u)

    res = mb.simulate(M(), 4.0, n_points=41, **TIGHT)
    t = np.asarray(res.t)
    assert np.max(np.abs(np.asarray(res["integ.y"]) - (1.0 + 1.0 * t))) < 1e-9


def test_derivative_of_ramp():
    class M(mb.Model):
        ramp = bl.Ramp(height=2.0, duration=4.0)
        d = bl.Derivative(k=3.0, T=0.1)

        def equations(self):
            yield connect(self.ramp.y, self.d.u)

    res = mb.simulate(M(), 2.0, n_points=201, **TIGHT)
    t = np.asarray(res.t)
    # u = 0.5 t, x(0) = 0: y = k*0.5*(1 - exp(-t/T))
    expected = 3.0 * 0.5 * (1.0 - np.exp(-t / 0.1))
    assert np.max(np.abs(np.asarray(res["d.y"]) - expected)) < 1e-6


def test_second_order_step_response():
    w, D = 2.0, 0.5

    class M(mb.Model):
        step = bl.Step()
        so = bl.SecondOrder(k=1.0, w=w, D=D)

        def equations(self):
            yield connect(self.step.y, self.so.u)

    res = mb.simulate(M(), 5.0, n_points=101, **TIGHT)
    t = np.asarray(res.t)
    wd = w * math.sqrt(1 - D * D)
    expected = 1 - np.exp(-D * w * t) * (np.cos(wd * t) + D * w / wd * np.sin(wd * t))
    assert np.max(np.abs(np.asarray(res["so.y"]) - expected)) < 1e-6


class PILoop(mb.Model):
    setpoint = bl.Step(height=1.0, startTime=0.5)
    feedback = bl.Feedback()
    controller = bl.PI(k=2.0, T=0.5)
    plant = bl.FirstOrder(k=1.0, T=1.0)

    def equations(self):
        yield connect(self.setpoint.y, self.feedback.u1)
        yield connect(self.plant.y, self.feedback.u2)
        yield connect(self.feedback.y, self.controller.u)
        yield connect(self.controller.y, self.plant.u)


def test_pi_closed_loop_has_no_steady_state_error():
    res = mb.simulate(PILoop(), 15.0, n_points=301, **TIGHT)
    assert at(res, "plant.y", 0.4) == pytest.approx(0.0, abs=1e-12)
    assert res["plant.y"][-1] == pytest.approx(1.0, abs=1e-6)
    assert res["feedback.y"][-1] == pytest.approx(0.0, abs=1e-6)
    # The integral part carries the whole steady-state actuation: k*x = 1.
    assert res["controller.x"][-1] == pytest.approx(0.5, abs=1e-6)
    # Closed loop: s^2 + 3 s + 4 (from (k s + k/T)/(s (s+1)) feedback); it reaches the
    # setpoint well before the end.
    assert at(res, "plant.y", 6.0) == pytest.approx(1.0, abs=1e-2)


# --------------------------------------------------------------------------------------
# LimPID
# --------------------------------------------------------------------------------------

def pid_loop(**pid):
    """Setpoint 1 at t = 0.5, back to 0.2 at t = 10; FirstOrder plant; LimPID controller."""

    class Loop(mb.Model):
        up = bl.Step(height=1.0, startTime=0.5)
        down = bl.Step(height=-0.8, startTime=10.0)
        setpoint = bl.Add()
        controller = bl.LimPID(**pid)
        plant = bl.FirstOrder(k=1.0, T=1.0)

        def equations(self):
            yield connect(self.up.y, self.setpoint.u1)
            yield connect(self.down.y, self.setpoint.u2)
            yield connect(self.setpoint.y, self.controller.u_s)
            yield connect(self.plant.y, self.controller.u_m)
            yield connect(self.controller.y, self.plant.u)

    return Loop()


PID_GAINS = dict(k=4.0, Ti=0.5, Td=0.1, Nd=10.0)


def test_limpid_saturates_and_anti_windup_recovers():
    opts = dict(n_points=401, rtol=1e-8, atol=1e-10)
    aw = mb.simulate(pid_loop(**PID_GAINS, yMax=1.5), 20.0, **opts)
    # Anti-windup practically off (Ni huge: compensation time constant Ni*Ti = 5e5 s).
    wind = mb.simulate(pid_loop(**PID_GAINS, yMax=1.5, Ni=1e6), 20.0, **opts)
    free = mb.simulate(pid_loop(**PID_GAINS, yMax=1e6), 20.0, **opts)

    for res in (aw, wind):
        y = np.asarray(res["controller.y"])
        assert y.max() <= 1.5 + 1e-9 and y.min() >= -1.5 - 1e-9
        assert y.max() == pytest.approx(1.5)  # it does saturate
    # Without limits the actuator goes far beyond yMax.
    assert np.max(np.asarray(free["controller.y"])) > 3.0

    # Zero steady-state error for both setpoints.
    for res in (aw, wind, free):
        assert at(res, "plant.y", 9.9) == pytest.approx(1.0, abs=1e-3)
        assert res["plant.y"][-1] == pytest.approx(0.2, abs=1e-3)

    # Anti-windup keeps the unlimited output near the limit while saturated ...
    t = np.asarray(aw.t)
    sat = (t > 0.6) & (t < 1.0)
    assert np.max(np.asarray(aw["controller.v"])[sat]) < np.max(np.asarray(wind["controller.v"])[sat]) + 1e-9

    # ... so the loop recovers faster and overshoots less than the wound-up one.
    def overshoot(res):
        y = np.asarray(res["plant.y"])
        return np.max(y[(t > 0.5) & (t < 10.0)]) - 1.0

    def settle_time(res, tol=0.02):
        y = np.asarray(res["plant.y"])
        window = (t > 0.5) & (t < 10.0)
        outside = window & (np.abs(y - 1.0) > tol)
        return t[np.nonzero(outside)[0][-1]] if outside.any() else 0.5

    assert overshoot(aw) < overshoot(wind) - 0.05
    assert settle_time(aw) < settle_time(wind)


def test_limpid_proportional_only_arithmetic():
    class M(mb.Model):
        s = bl.Ramp(height=4.0, duration=4.0)
        m = bl.Constant(k=0.5)
        c = bl.LimPID(controller_type="P", k=2.0, wp=0.5, yMax=1.0, yMin=-0.25)

        def equations(self):
            yield connect(self.s.y, self.c.u_s)
            yield connect(self.m.y, self.c.u_m)

    res = mb.simulate(M(), 4.0, n_points=81, **TIGHT)
    t = np.asarray(res.t)
    v = 2.0 * (0.5 * t - 0.5)
    assert np.max(np.abs(np.asarray(res["c.v"]) - v)) < 1e-10
    assert np.max(np.abs(np.asarray(res["c.y"]) - np.clip(v, -0.25, 1.0))) < 1e-10
    assert np.max(np.abs(np.asarray(res["c.controlError"]) - (t - 0.5))) < 1e-10


def test_limpid_filtered_derivative():
    class M(mb.Model):
        s = bl.Constant(k=0.0)
        m = bl.Ramp(height=1.0, duration=10.0)  # slope 0.1
        c = bl.LimPID(controller_type="PD", k=2.0, Td=0.5, Nd=10.0, yMax=100.0)

        def equations(self):
            yield connect(self.s.y, self.c.u_s)
            yield connect(self.m.y, self.c.u_m)

    res = mb.simulate(M(), 2.0, n_points=201, **TIGHT)
    t = np.asarray(res.t)
    tf = 0.5 / 10.0
    # wd = 0: derivative input -u_m = -0.1 t, filter state from 0:
    # D = Td * (-0.1) * (1 - exp(-t/Tf))
    d = 0.5 * (-0.1) * (1.0 - np.exp(-t / tf))
    v = 2.0 * (-0.1 * t + d)
    assert np.max(np.abs(np.asarray(res["c.y"]) - v)) < 1e-6


@pytest.mark.parametrize("controller_type", ["PI", "PID"])
def test_limpid_steady_init_rests_on_the_limit(controller_type):
    # Constant error 0.8: the only steady state is saturated, with the anti-windup term
    # balancing the error: v - y = 0.8*k*Ni, so v = 1 + 1.44 and x_i = v/k - 0.8 = 0.42.
    class M(mb.Model):
        s = bl.Constant(k=1.0)
        m = bl.Constant(k=0.2)
        c = bl.LimPID(controller_type=controller_type, init="steady", k=2.0, Ni=0.9, yMax=1.0)

        def equations(self):
            yield connect(self.s.y, self.c.u_s)
            yield connect(self.m.y, self.c.u_m)

    res = mb.simulate(M(), 2.0, n_points=21, **TIGHT)
    assert np.max(np.abs(np.asarray(res["c.y"]) - 1.0)) < 1e-9
    assert np.max(np.abs(np.asarray(res["c.v"]) - 2.44)) < 1e-8
    assert np.max(np.abs(np.asarray(res["c.x_i"]) - 0.42)) < 1e-8
