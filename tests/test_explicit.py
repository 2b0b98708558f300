"""Explicit methods in C (mbmodel.explicit: ``method="abm"`` and ``"dop853"``), against
independent references:

* DOP853's tables equal scipy's DOP853 tables bit for bit, and on the same right-hand side
  (Pinocchio's ABA for a random chain, the same data) it takes exactly the steps scipy's
  ``solve_ivp(method="DOP853")`` takes, with the same dense output;
* Adams-Bashforth-Moulton matches scipy's DOP853 on Pinocchio at rtol 1e-12, at output
  times between its steps too, with fewer evaluations than DOP853;
* closed forms, for both: an undamped oscillator over 100 periods, to the tolerance asked,
  and the error shrinks with the tolerance;
* ``max_step`` bounds every step; a solution that stops being finite ends in a clear
  error; two threads integrating one compiled model get the same numbers;
* ``method="auto"`` picks ABM for a non-stiff model in generated C, CVODES' Adams
  without C.
"""

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mbmodel as mb  # noqa: E402
from mbmodel import explicit, native  # noqa: E402
from mbmodel.errors import SimulationError  # noqa: E402
from mbmodel.libraries import translational as tr  # noqa: E402
from concurrent_runs import in_threads  # noqa: E402
from mb_trees import TreeModel, random_tree  # noqa: E402

pin = pytest.importorskip("pinocchio")
from mb_trees import pinocchio_model  # noqa: E402


def test_tables_are_scipys_dop853_tables():
    from scipy.integrate._ivp import dop853_coefficients as dop
    from mbmodel.codegen import compile_source
    library = ctypes.CDLL(str(compile_source(explicit._RUNTIME_SOURCE.read_text())))
    out = np.zeros(374)
    library.mb_dop853_tableau(out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
    expected = np.concatenate([np.asarray(a, float).ravel()
                               for a in (dop.A, dop.B, dop.C, dop.E3, dop.E5, dop.D)])
    assert np.array_equal(out, expected)


@pytest.fixture(scope="module")
def hanging_chain():
    n = 8
    spec = random_tree(n, np.random.default_rng(11), chain=True)
    for s in spec:
        s["kind"] = "revolute"
    pm = pinocchio_model(spec)
    pm.gravity = pin.Motion(np.array([0.0, 0.0, -9.81, 0.0, 0.0, 0.0]))
    cm = mb.compile(TreeModel(spec), parameters="constant")
    assert cm.states[:2] == ["joint0.phi", "joint0.w"]
    return n, pm, cm


def test_same_steps_and_dense_output_as_scipy_on_pinocchio(hanging_chain):
    from scipy.integrate import solve_ivp
    n, pm, cm = hanging_chain
    data, tau = pm.createData(), np.zeros(n)

    def rhs(t, y):
        return np.concatenate([y[n:], pin.aba(pm, data, y[:n], y[n:], tau)])

    run = explicit.integrator(native.dynamics(cm, True))
    assert run is not None
    times = np.linspace(0.0, 1.0, 41)[1:]
    ours = run(0.0, cm.start, cm.parameter_vector(), times, rtol=1e-8, atol=1e-10)
    assert ours.ok and ours.written == len(times)
    steps = solve_ivp(rhs, (0.0, 1.0), np.zeros(2 * n), method="DOP853", rtol=1e-8,
                      atol=1e-10)
    assert ours.steps == len(steps.t) - 1
    assert ours.rejected == (steps.nfev - 2) // 12 - ours.steps   # 12 evaluations a try
    dense = solve_ivp(rhs, (0.0, 1.0), np.zeros(2 * n), method="DOP853", rtol=1e-8,
                      atol=1e-10, t_eval=times)
    q, w = ours.xs[0::2], ours.xs[1::2]   # states: joint{i}.phi, joint{i}.w
    assert np.max(np.abs(q - dense.y[:n])) < 1e-10
    assert np.max(np.abs(w - dense.y[n:])) < 1e-9
    assert np.ptp(q[0]) > 0.1   # it moves


def test_abm_matches_scipy_on_pinocchio_between_its_steps_with_fewer_evaluations(
        hanging_chain):
    from scipy.integrate import solve_ivp
    n, pm, cm = hanging_chain
    data, tau = pm.createData(), np.zeros(n)

    def rhs(t, y):
        return np.concatenate([y[n:], pin.aba(pm, data, y[:n], y[n:], tau)])

    run = explicit.integrator(native.dynamics(cm, True))
    times = np.linspace(0.0, 1.0, 41)[1:]
    abm = run(0.0, cm.start, cm.parameter_vector(), times, rtol=1e-8, atol=1e-10,
              method="abm")
    dop = run(0.0, cm.start, cm.parameter_vector(), times, rtol=1e-8, atol=1e-10)
    assert abm.ok and abm.written == len(times)
    assert abm.steps > len(times)          # most output times lie between steps
    assert abm.evaluations < 0.75 * dop.evaluations
    ref = solve_ivp(rhs, (0.0, 1.0), np.zeros(2 * n), method="DOP853", rtol=1e-12,
                    atol=1e-12, t_eval=times)
    assert np.max(np.abs(abm.xs[0::2] - ref.y[:n])) < 1e-6
    assert np.max(np.abs(abm.xs[1::2] - ref.y[n:])) < 1e-5


def test_simulate_picks_abm_for_a_non_stiff_model_and_agrees_with_adams(hanging_chain):
    _, _, cm = hanging_chain
    native.dynamics(cm, True)
    res = cm.simulate(1.0, n_points=11)
    assert res.methods == ["abm"]
    dop = cm.simulate(1.0, n_points=11, method="dop853")
    assert dop.methods == ["dop853"]
    adams = cm.simulate(1.0, n_points=11, method="adams", rtol=1e-11, atol=1e-12)
    assert adams.methods == ["adams"]
    for name in cm.states:
        assert np.allclose(res[name], adams[name], rtol=0, atol=1e-6), name
        assert np.allclose(dop[name], adams[name], rtol=0, atol=1e-6), name
    in_vm = cm.simulate(1.0, n_points=11, native=False)
    assert in_vm.methods == ["adams"]   # no generated C: no C loop
    for method in ("abm", "dop853"):
        with pytest.warns(mb.MethodReplacedWarning, match=f"method='{method}'.*'adams'"):
            res = cm.simulate(0.1, n_points=3, method=method, native=False)
        assert res.methods == ["adams"]


class Oscillator(mb.Model):
    """An undamped mass on a spring, omega = 10 rad/s, starting 1 m out of rest."""

    fixed = tr.Fixed()
    spring = tr.Spring(c=100.0)
    mass = tr.Mass(m=1.0, s=mb.Fixed(1.0), v=mb.Fixed(0.0))

    def equations(self):
        yield mb.connect(self.fixed.flange, self.spring.flange_a)
        yield mb.connect(self.spring.flange_b, self.mass.flange_a)


@pytest.mark.parametrize("method", ["abm", "dop853"])
def test_oscillator_over_a_hundred_periods_and_the_error_follows_the_tolerance(method):
    cm = mb.compile(Oscillator())
    t_end = 100 * 2 * np.pi / 10.0
    errors = []
    for rtol in (1e-6, 1e-9):
        res = cm.simulate(t_end, n_points=1001, method=method, native=True, rtol=rtol,
                          atol=rtol * 1e-2)
        assert res.methods == [method]
        errors.append(np.max(np.abs(res["mass.s"] - np.cos(10.0 * res.t))))
        energy = 0.5 * res["mass.v"] ** 2 + 0.5 * 100.0 * res["mass.s"] ** 2
        assert np.max(np.abs(energy - 50.0)) < 1e3 * rtol * 50.0
    # 100 periods: the global error is at most ~100 local tolerances, and a high-order
    # method's error drops by far more than 100x for a 1000x tighter tolerance
    assert errors[0] < 1e-4 and errors[1] < 1e-7
    assert errors[1] < errors[0] / 100


class RestToRest(mb.Model):
    """x' = sin(pi t)^2: the derivative is 0 at the start and at every whole second."""
    x = mb.Variable(start=0.0, fixed=True)

    def equations(self):
        yield mb.der(self.x) == mb.functions.sin(np.pi * mb.time) ** 2


@pytest.mark.parametrize("method", ["abm", "dop853"])
def test_a_run_from_rest_is_not_skipped(method):
    """The derivative is 0 at both ends of the run: ABM's start (Shampine and Gordon's,
    from the first derivative alone) took the whole run as its first step, and the order-1
    error estimate, f at both ends, accepted it: x stayed 0 (exact: t/2 at whole t)."""
    cm = mb.compile(RestToRest())
    for t_end in (1.0, 2.0):
        res = cm.simulate(t_end, n_points=5, method=method, native=True)
        exact = res.t / 2 - np.sin(2 * np.pi * res.t) / (4 * np.pi)
        assert np.max(np.abs(res["x"] - exact)) < 1e-7, (t_end, res["x"])


def test_bad_calls_are_refused():
    cm = mb.compile(Oscillator())
    run = explicit.integrator(native.dynamics(cm, True))
    p = cm.parameter_vector()
    for tout, method in (([], "abm"), ([0.5, 0.2], "dop853"), ([1.0], "rk4")):
        with pytest.raises(ValueError):
            run(0.0, cm.start, p, tout, rtol=1e-6, atol=1e-8, method=method)
    with pytest.raises(ValueError, match="2 states"):
        run(0.0, np.zeros(3), p, [1.0], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("method", ["abm", "dop853"])
def test_max_step_bounds_every_step(method):
    cm = mb.compile(Oscillator())
    run = explicit.integrator(native.dynamics(cm, True))
    free = run(0.0, cm.start, cm.parameter_vector(), [1.0], rtol=1e-6, atol=1e-8,
               method=method)
    bounded = run(0.0, cm.start, cm.parameter_vector(), [1.0], rtol=1e-6, atol=1e-8,
                  max_step=2e-3, method=method)
    # unbounded: DOP853 as before this test covered ABM too (13 steps), ABM 60
    assert free.steps < {"dop853": 50, "abm": 100}[method] and bounded.steps >= 500
    assert abs(bounded.xs[0, -1] - np.cos(10.0)) < 1e-6


@pytest.mark.parametrize("method", ["abm", "dop853"])
def test_the_step_budget_is_per_output_interval(method):
    """``max_steps`` bounds the steps between two output times, as CVODES' mxstep: a run
    over many output times may take more in all; one interval that needs more stops
    there with the outputs before it written."""
    cm = mb.compile(Oscillator())
    run = explicit.integrator(native.dynamics(cm, True))
    p, tout = cm.parameter_vector(), np.linspace(0.01, 1.0, 100)
    options = dict(rtol=1e-6, atol=1e-8, max_step=2e-3, method=method)
    # (ABM starts at order 1 with short steps: some 20 before the first output)
    whole = run(0.0, cm.start, p, tout, max_steps=40, **options)
    assert whole.ok and whole.steps >= 500 and whole.written == 100   # ~5 per interval
    assert abs(whole.xs[0, -1] - np.cos(10.0)) < 1e-6
    cut = run(0.0, cm.start, p, np.concatenate([tout[:50], [2.0]]), max_steps=40, **options)
    assert not cut.ok and cut.written == 50 and "most steps" in cut.reason
    # the step that wrote 0.5, then the 40 allowed: 41 of at most 2 ms
    assert 0.5 < cut.time <= 0.5 + 41 * 2e-3 + 1e-12


class Blowup(mb.Model):
    """dx/dt = x^2 from x = 1: x = 1/(1 - t), infinite at t = 1."""

    x = mb.Variable(start=1.0, fixed=True)

    def equations(self):
        yield mb.der(self.x) == self.x ** 2


@pytest.mark.parametrize("method", ["abm", "dop853"])
def test_a_solution_that_stops_being_finite_ends_in_a_clear_error(method):
    cm = mb.compile(Blowup())
    run = explicit.integrator(native.dynamics(cm, True))
    out = run(0.0, cm.start, cm.parameter_vector(), [0.5, 0.9, 2.0], rtol=1e-8, atol=1e-10,
              method=method)
    assert not out.ok and out.written == 2 and abs(out.time - 1.0) < 1e-6   # the pole
    assert "step" in out.reason
    assert np.allclose(out.xs[0, :2], [2.0, 10.0], rtol=1e-6)
    with pytest.raises(SimulationError) as info:
        cm.simulate(2.0, n_points=5, method=method, native=True)
    assert "t = 0.5" in str(info.value) or "after t = 0.5" in str(info.value)
    assert info.value.result is not None
    assert np.isclose(info.value.result["x"][1], 2.0, rtol=1e-5)   # by BDF, the fallback


@pytest.mark.parametrize("method", ["abm", "dop853"])
def test_two_threads_integrate_one_model_alike(hanging_chain, method):
    _, _, cm = hanging_chain
    run = explicit.integrator(native.dynamics(cm, True))
    times = np.linspace(0.0, 1.0, 21)[1:]
    results = [None, None]

    def work(k):
        for _ in range(5):
            results[k] = run(0.0, cm.start, cm.parameter_vector(), times, rtol=1e-8,
                             atol=1e-10, method=method).xs

    assert not in_threads(work, range(2))
    assert np.array_equal(results[0], results[1])


def _guard_for(cm, crossings, strict, noise=0.0):
    """A guard whose crossing functions are ``crossings(x)`` (generated C), with the
    event function's argument layout (x, z, u, p, t)."""
    import casadi as ca
    from mbmodel.codegen import compile_function
    n_p = cm.parameter_vector().size
    x, z = ca.SX.sym("x", 2), ca.SX.sym("z", 0)
    u, p, t = ca.SX.sym("u", 0), ca.SX.sym("p", n_p), ca.SX.sym("t")
    fn = compile_function(ca.Function("oscillator_guard", [x, z, u, p, t],
                                      [ca.vertcat(*crossings(x, t))]))
    found = explicit.guard(fn, n_p, strict, noise=noise, width=1e-12)
    assert found is not None
    return found


def test_a_guarded_run_stops_at_the_crossing_located_on_its_dense_output():
    # s = cos(10 t): 's > 0' (held true) switches at t = pi/20; 's > -2' never does
    cm = mb.compile(Oscillator())
    run = explicit.integrator(native.dynamics(cm, True))
    guard = _guard_for(cm, lambda x, t: [x[0], x[0] + 2.0], strict=[True, True])
    times = np.linspace(0.0, 1.0, 101)[1:]   # t = 0.15 is past the crossing (0.157...)
    out = run(0.0, cm.start, cm.parameter_vector(), times, rtol=1e-12, atol=1e-14,
              guard=guard, frozen=[1.0, 1.0])
    assert out.status == explicit.CROSSED and out.crossing is not None
    hit = out.crossing
    assert hit.t_left < hit.time and hit.time - hit.t_left <= 1e-12
    assert abs(hit.time - np.pi / 20) < 1e-11
    assert np.allclose(hit.x, [np.cos(10 * hit.time), -10 * np.sin(10 * hit.time)],
                       rtol=0, atol=1e-10)
    assert hit.values[0] <= 0.0 < hit.values[1]   # the relation reads false there
    assert out.written == 15   # the output times up to the bracket's left end
    assert np.allclose(out.xs[0, :15], np.cos(10 * times[:15]), rtol=0, atol=1e-10)
    # a run going on from there with the relation false stops at the next zero, 3 pi / 20
    on = run(hit.time, hit.x, cm.parameter_vector(), times[15:], rtol=1e-12, atol=1e-14,
             first_step=out.next_step, guard=guard, frozen=[0.0, 1.0])
    assert on.status == explicit.CROSSED and abs(on.crossing.time - 3 * np.pi / 20) < 1e-11
    # relations that hold throughout: the run reaches its end, as without a guard
    plain = run(0.0, cm.start, cm.parameter_vector(), times[:10], rtol=1e-12, atol=1e-14)
    held = run(0.0, cm.start, cm.parameter_vector(), times[:10], rtol=1e-12, atol=1e-14,
               guard=guard, frozen=[1.0, 1.0])
    assert held.ok and held.crossing is None and np.array_equal(held.xs, plain.xs)


def test_a_crossing_function_within_the_noise_floor_keeps_its_relation():
    # 'tiny >= 0' held false with tiny = 1e-20: round-off, not a crossing, under a noise
    # floor of 1e-16; without one the guard stops at once
    cm = mb.compile(Oscillator())
    run = explicit.integrator(native.dynamics(cm, True))
    times = [0.05, 0.1]
    for noise, status in ((1e-16, 0), (0.0, explicit.CROSSED)):
        guard = _guard_for(cm, lambda x, t: [1e-20 + 0 * x[0]], strict=[False], noise=noise)
        out = run(0.0, cm.start, cm.parameter_vector(), times, rtol=1e-8, atol=1e-10,
                  guard=guard, frozen=[0.0])
        assert out.status == status
    with pytest.raises(ValueError, match="dop853"):
        run(0.0, cm.start, cm.parameter_vector(), times, rtol=1e-8, atol=1e-10,
            method="abm", guard=guard, frozen=[0.0])
