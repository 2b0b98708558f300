"""FMU export (mbmodel.fmu) checked with FMPy, the reference FMI importer: the FMUs pass
FMPy's validation, and FMPy's Model Exchange (its CVode) and Co-Simulation runs agree with
closed forms and with ``cm.simulate``: the RC circuit, the DC motor drive (time events),
the double pendulum, a torn nonlinear block, and an input-driven inertia with a parameter
set in the FMU."""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

import mbmodel as mb  # noqa: E402
from mbmodel.libraries import blocks  # noqa: E402
from mbmodel.fmu import FMUExportError  # noqa: E402
from test_native import AlgebraicLoop  # noqa: E402
from test_persist import RC, BouncingBall  # noqa: E402
from test_sweep import Spun  # noqa: E402

fmpy = pytest.importorskip("fmpy")
from fmpy.validation import validate_fmu  # noqa: E402

KINDS = ("ModelExchange", "CoSimulation")


def run(path, kind, t_end, names, **options):
    return fmpy.simulate_fmu(str(path), stop_time=t_end, output=names, fmi_type=kind,
                             relative_tolerance=1e-11, output_interval=t_end / 200, **options)


def exported(cm, tmp_path, **options):
    path = cm.export_fmu(tmp_path / f"{cm.name}.fmu", **options)
    assert validate_fmu(str(path)) == []
    return path


def deviation(result, reference, names):
    """Largest difference from ``reference`` (an mbmodel Result) at the FMU's times."""
    return max(np.max(np.abs(result[n] - np.interp(result["time"], reference.t, reference[n])))
               for n in names)


def test_rc_circuit_follows_the_charging_curve_with_a_parameter_set_in_the_fmu(tmp_path):
    cm = mb.compile(RC())
    path = exported(cm, tmp_path, outputs=["capacitor.v"])
    for kind in KINDS:
        res = run(path, kind, 5e-3, ["capacitor.v"], start_values={"resistor.R": 2e3})
        exact = 1 - np.exp(-res["time"] / (2e3 * 1e-6))
        assert np.max(np.abs(res["capacitor.v"] - exact)) < 1e-8, kind


def test_a_parameter_outside_its_range_is_refused_as_simulate_refuses_it(tmp_path):
    cm = mb.compile(RC())
    with pytest.raises(mb.ParameterError, match="resistor.R"):
        cm.simulate(1e-3, params={"resistor.R": -2e3})
    path = exported(cm, tmp_path, outputs=["capacitor.v"])
    messages = []
    with pytest.raises(Exception, match="fmi2SetReal failed"):
        fmpy.simulate_fmu(path, fmi_type="ModelExchange", stop_time=1e-3,
                          start_values={"resistor.R": -2e3}, output=["capacitor.v"],
                          logger=lambda *args: messages.append(args[-1].decode()))
    assert any("parameter 'resistor.R' = -2000 is outside its bounds [0, inf]" in m
               for m in messages), messages


class Leaky(mb.Model):
    """A tank draining through a pipe: the conductance is computed from two parameters,
    and the component states a condition on them."""
    d = mb.Parameter(0.01, unit="m", min=0.0)
    k = mb.Parameter(1.0, min=0.0)
    d_max = mb.Parameter(0.05, unit="m")
    x = mb.Variable(start=1.0, fixed=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.G = mb.Parameter(self.k * (self.d - 0.005), min=0.0)   # a bound parameter

    def equations(self):
        yield mb.Assert(self.d <= self.d_max, "the pipe is wider than its limit d_max (⌀ 🙂)")
        yield mb.der(self.x) == -self.G * self.x


def test_computed_parameters_and_conditions_are_checked_by_the_fmu(tmp_path):
    cm = mb.compile(Leaky())
    path = exported(cm, tmp_path, outputs=["x"])
    res = run(path, "ModelExchange", 1.0, ["x"], start_values={"d": 0.02})
    assert res["x"][-1] == pytest.approx(np.exp(-0.015), rel=1e-6)
    for values, message in (
            ({"d": 0.004}, "parameter 'G' (computed from others) = -0.001 is outside its "
                           "bounds [0, inf]"),
            ({"d": 0.06}, "the pipe is wider than its limit d_max (⌀ 🙂) (does not hold")):
        with pytest.raises(mb.ParameterError):
            cm.simulate(1.0, params=values)
        for kind in KINDS:
            messages = []
            with pytest.raises(Exception, match="fmi2ExitInitializationMode failed"):
                fmpy.simulate_fmu(path, fmi_type=kind, stop_time=1.0, start_values=values,
                                  output=["x"],
                                  logger=lambda *args: messages.append(args[-1].decode()))
            assert any(message in m for m in messages), (kind, messages)


def test_dc_motor_drive_with_time_events_agrees_with_simulate(tmp_path):
    from dc_motor_drive import DCMotorDrive
    cm = mb.compile(DCMotorDrive())
    names = ["load.w", "motor.inductor.i", "controller.x_i"]
    path = exported(cm, tmp_path, outputs=names[:2])
    reference = cm.simulate(2.0, n_points=2001, rtol=1e-11, atol=1e-12)
    for kind in KINDS:
        assert deviation(run(path, kind, 2.0, names), reference, names) < 1e-6, kind


def test_double_pendulum_agrees_with_simulate(tmp_path):
    from double_pendulum import DoublePendulum
    cm = mb.compile(DoublePendulum())
    path = exported(cm, tmp_path)
    reference = cm.simulate(2.0, n_points=2001, rtol=1e-12, atol=1e-12)
    for kind in KINDS:
        assert deviation(run(path, kind, 2.0, cm.states), reference, cm.states) < 1e-6, kind


def test_torn_nonlinear_block_is_solved_inside_the_fmu(tmp_path):
    cm = mb.compile(AlgebraicLoop())
    assert cm.algebraic  # Newton's method in the FMU's runtime
    path = exported(cm, tmp_path)
    reference = cm.simulate(1.0, n_points=1001, rtol=1e-12, atol=1e-12)
    for kind in KINDS:
        assert deviation(run(path, kind, 1.0, ["x", "y"]), reference, ["x", "y"]) < 1e-8, kind


def test_input_step_drives_the_inertia(tmp_path):
    cm = mb.compile(Spun())
    path = exported(cm, tmp_path)
    step = np.array([(0.0, 0.0), (1.0, 0.0), (1.0, 3.0), (2.0, 3.0)],
                    dtype=[("time", float), ("tau", float)])
    for kind in KINDS:
        res = run(path, kind, 2.0, ["inertia.w"], input=step, start_values={"inertia.J": 4.0})
        t = res["time"]
        exact = 3.0 / 0.5 * (1 - np.exp(-0.5 * np.maximum(t - 1.0, 0.0) / 4.0))
        assert np.max(np.abs(res["inertia.w"] - exact)) < 1e-8, kind


def test_model_description_names_units_starts_and_causalities(tmp_path):
    cm = mb.compile(RC())
    path = exported(cm, tmp_path, outputs=["capacitor.i"])
    with zipfile.ZipFile(path) as fmu:
        names = fmu.namelist()
        root = ET.fromstring(fmu.read("modelDescription.xml"))
    assert "binaries/linux64/RC.so" in names and "sources/RC.c" in names
    variables = root.find("ModelVariables").findall("ScalarVariable")
    by_name = {v.get("name"): v for v in variables}
    state = by_name["capacitor.v"]
    assert state.get("initial") == "exact" and state.find("Real").get("start") == "0.0"
    assert state.find("Real").get("unit") == "V"
    derivative = by_name["der(capacitor.v)"].find("Real")
    assert derivative.get("derivative") == str(variables.index(state) + 1)
    assert derivative.get("unit") == "V/s"
    resistance = by_name["resistor.R"]
    assert resistance.get("causality") == "parameter"
    assert float(resistance.find("Real").get("start")) == 1e3
    assert resistance.find("Real").get("unit") == "Ohm"
    assert by_name["capacitor.i"].get("causality") == "output"
    assert by_name["capacitor.v"].get("causality") == "local"
    units = {u.get("name") for u in root.find("UnitDefinitions")}
    assert {"V", "V/s", "Ohm", "A"} <= units
    outputs = [int(u.get("index")) for u in root.find("ModelStructure/Outputs")]
    assert [variables[i - 1].get("name") for i in outputs] == ["capacitor.i"]


def test_a_state_can_be_an_output(tmp_path):
    cm = mb.compile(RC())
    path = exported(cm, tmp_path, outputs=["capacitor.v", "capacitor.i"])
    with zipfile.ZipFile(path) as fmu:
        root = ET.fromstring(fmu.read("modelDescription.xml"))
    variables = root.find("ModelVariables").findall("ScalarVariable")
    outputs = [variables[int(u.get("index")) - 1].get("name")
               for u in root.find("ModelStructure/Outputs")]
    assert outputs == ["capacitor.v", "capacitor.i"]
    res = fmpy.simulate_fmu(str(path), stop_time=5e-3)  # records the outputs by default
    assert set(res.dtype.names) == {"time", "capacitor.v", "capacitor.i"}
    assert np.max(np.abs(res["capacitor.v"] - (1 - np.exp(-res["time"] / 1e-3)))) < 1e-6


def test_what_cannot_be_exported_says_why(tmp_path):
    with pytest.raises(FMUExportError, match="when clauses, sampled or discrete variables .* "
                                             "in the model itself"):
        mb.compile(BouncingBall()).export_fmu(tmp_path / "ball.fmu")

    class Pulsed(mb.Model):   # driven by time alone, but through when clauses
        pulse = blocks.Pulse(period=0.1)
        integral = blocks.Integrator()

        def equations(self):
            yield mb.connect(self.pulse.y, self.integral.u)

    with pytest.raises(FMUExportError, match=r"Pulse, Sawtooth, SampleAndHold\), in pulse\. "):
        mb.compile(Pulsed()).export_fmu(tmp_path / "pulsed.fmu")
    cm = mb.compile(RC())
    with pytest.raises(FMUExportError, match=r"outputs=\['capacitor.v'\]"):
        cm.export_fmu(tmp_path / "rc.fmu", outputs="capacitor.v")
    with pytest.raises(FMUExportError, match="no variable capacitor.q"):
        cm.export_fmu(tmp_path / "rc.fmu", outputs=["capacitor.q"])
    with pytest.raises(FMUExportError, match="resistor.R are inputs or parameters"):
        cm.export_fmu(tmp_path / "rc.fmu", outputs=["resistor.R"])
    with pytest.raises(FMUExportError, match="needs a C compiler"):
        cm.export_fmu(tmp_path / "rc.fmu", compiler="/nonexistent/cc")
    assert not (tmp_path / "rc.fmu").exists()


def test_export_warns_of_what_the_fmu_does_not_do(tmp_path):
    """What simulate() does and the FMU does not is said at export (a new-user review found
    it only when the FMU failed in another tool): switching a state choice that becomes
    singular (the cartesian pendulum)."""
    from cartesian_pendulum import CartesianPendulum

    def messages(cm):
        with pytest.warns(UserWarning) as caught:
            cm.export_fmu(tmp_path / f"{cm.name}.fmu")
        return [str(w.message) for w in caught]

    pendulum = mb.compile(CartesianPendulum(x=mb.Fixed(0.5), y=mb.Guess(-0.8),
                                            vx=mb.Fixed(0.0)))
    assert any("state choice depends on the solution (candidates x, y)" in m
               for m in messages(pendulum))

    # a model whose starts are fixed on its states, or solved from initial conditions
    # (the FMU solves them again): nothing to say
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mb.compile(RC()).export_fmu(tmp_path / "rc.fmu")
        mb.compile(Settled()).export_fmu(tmp_path / "settled.fmu")


class Settled(mb.Model):
    """A first-order lag started in its steady state (an initial equation der(y) = 0)."""
    lag = blocks.FirstOrder(k=2.0, T=0.5, init="steady")
    src = blocks.Constant(k=3.0)

    def equations(self):
        yield mb.connect(self.src.y, self.lag.u)


class Swinging(mb.Model):
    """A pendulum on a rotational spring: its start angle is a parameter (an initial
    equation phi = phi0; with ``start=mb.Guess`` the free state's start, which follows
    phi0), its speed a state start the importer may set."""
    phi0 = mb.Parameter(0.3, unit="rad")

    def __init__(self, start=mb.Fixed, **modifiers):
        super().__init__(**modifiers)
        from mbmodel.libraries import rotational as rot
        self.load = rot.Inertia(J=0.5, phi=start(self.phi0), w=mb.Fixed(0.0))
        self.spring = rot.Spring(c=8.0)
        self.wall = rot.Fixed()

    def equations(self):
        yield mb.connect(self.wall.flange, self.spring.flange_a)
        yield mb.connect(self.spring.flange_b, self.load.flange_a)


def test_the_fmu_solves_the_initial_conditions_with_the_parameters_set(tmp_path):
    """The FMU started from the values mbmodel solved with the default parameters: a steady
    start or a start angle given by a parameter ignored the parameters set in FMPy."""
    settled = exported(mb.compile(Settled()), tmp_path, outputs=["lag.y"])
    swinging = exported(mb.compile(Swinging()), tmp_path, outputs=["load.phi"])
    for kind in KINDS:
        res = run(settled, kind, 1.0, ["lag.y"], start_values={"src.k": 5.0})
        assert np.max(np.abs(res["lag.y"] - 10.0)) < 1e-9, kind   # k * u, at rest
        res = run(swinging, kind, 1.0, ["load.phi"], start_values={"phi0": 0.5})
        exact = 0.5 * np.cos(4.0 * res["time"])          # sqrt(c / J) = 4
        assert np.max(np.abs(res["load.phi"] - exact)) < 1e-7, kind
        res = run(swinging, kind, 1.0, ["load.phi"], start_values={"load.w": 2.0})
        exact = 0.3 * np.cos(4.0 * res["time"]) + 0.5 * np.sin(4.0 * res["time"])
        assert np.max(np.abs(res["load.phi"] - exact)) < 1e-7, kind


def test_a_state_start_given_by_a_parameter_follows_it_in_the_fmu(tmp_path):
    """Guess(self.phi0) on a free state: the FMU kept the start of the default phi0 (0.3)
    while simulate took the phi0 set, 0.5 (review). The start now follows the parameter,
    unless the importer sets the state's start itself."""
    cm = mb.compile(Swinging(start=mb.Guess))
    assert cm.simulate(1.0, params={"phi0": 0.5})["load.phi"][0] == 0.5
    path = exported(cm, tmp_path, outputs=["load.phi"])
    for kind in KINDS:
        res = run(path, kind, 1.0, ["load.phi"], start_values={"phi0": 0.5})
        assert np.max(np.abs(res["load.phi"] - 0.5 * np.cos(4.0 * res["time"]))) < 1e-7, kind
        res = run(path, kind, 1.0, ["load.phi"], start_values={"phi0": 0.5, "load.phi": 0.2})
        assert np.max(np.abs(res["load.phi"] - 0.2 * np.cos(4.0 * res["time"]))) < 1e-7, kind


class Falling(mb.Model):
    """A ball falling onto a floor it must stay above: h = 1 - g t^2 / 2 reaches the floor
    at t = 0.4515."""
    h = mb.Variable(start=1.0, fixed=True)
    v = mb.Variable(start=0.0, fixed=True)
    floor = mb.Parameter(0.0)

    def equations(self):
        yield mb.der(self.h) == self.v
        yield mb.der(self.v) == -9.81
        yield mb.Assert(self.h > self.floor, "ball below floor")


def test_the_fmu_checks_the_run_time_asserts_after_each_step(tmp_path):
    """The FMU ran the ball through the floor to h = -3.9 where simulate stops at t = 0.452
    (review): the run-time conditions are checked after each step, with the message."""
    cm = mb.compile(Falling())
    with pytest.raises(mb.SimulationError, match="ball below floor"):
        cm.simulate(1.0)
    path = exported(cm, tmp_path, outputs=["h"])
    for kind in KINDS:
        logged = []

        def logger(component, instance, status, category, message):
            logged.append(message.decode())
        with pytest.raises(Exception, match="failed with status 3"):
            fmpy.simulate_fmu(str(path), stop_time=1.0, output=["h"], fmi_type=kind,
                              output_interval=0.01, logger=logger)
        assert any("Falling: ball below floor (does not hold at t = 0.4" in m
                   for m in logged), (kind, logged)
        res = run(path, kind, 1.0, ["h"], start_values={"floor": -10.0})   # holds throughout
        assert res["time"][-1] == pytest.approx(1.0)
        assert res["h"][-1] == pytest.approx(1.0 - 9.81 / 2, abs=1e-6)
