"""Compiled simulation and fast evaluation (mbmodel.native, mbmodel.simulate):

* simulations with the dynamics in generated C agree with an independent integration
  (scipy DOP853 on Pinocchio's ABA) and with casadi's virtual machine;
* the automatic method choice takes Adams-Bashforth-Moulton in C (CVODES' Adams without
  generated C) for a non-stiff mechanism and BDF for a stiff circuit, and Adams falls back to BDF when it
  cannot cope;
* buffer-speed evaluators of forward and inverse dynamics agree with Pinocchio's aba/rnea,
  also with parameters changed at run time;
* two threads can compile models and simulate one compiled model at the same time;
* a cached library that does not load is rebuilt.
"""

from __future__ import annotations

import math
import mmap
import os
import sys
import threading
import warnings

import casadi as ca
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mbmodel as mb  # noqa: E402
from mbmodel import codegen  # noqa: E402
from mbmodel.libraries import electrical as el  # noqa: E402
from mbmodel.libraries import rotational as rot  # noqa: E402
from mbmodel.libraries import translational as tr  # noqa: E402
from concurrent_runs import in_threads  # noqa: E402
from mb_trees import TreeModel, force_names, mbmodel_values, random_tree  # noqa: E402

pin = pytest.importorskip("pinocchio")
from mb_trees import pinocchio_model  # noqa: E402


def general_chain(n, seed):
    spec = random_tree(n, np.random.default_rng(seed), chain=True)
    return spec, pinocchio_model(spec)


@pytest.fixture(scope="module")
def chain():
    spec, pm = general_chain(6, seed=3)
    pm.gravity = pin.Motion(np.array([0.0, 0.0, -9.81, 0.0, 0.0, 0.0]))
    return spec, pm, mb.compile(TreeModel(spec))


def test_simulated_chain_matches_scipy_on_pinocchio(chain):
    from scipy.integrate import solve_ivp
    spec, pm, cm = chain
    res = cm.simulate(1.0, n_points=11)
    assert res.methods == ["abm"]  # a hanging chain is not stiff: Adams-Bashforth-Moulton in C
    pd, nv = pm.createData(), pm.nv

    def rhs(t, y):
        return np.concatenate([y[nv:], pin.aba(pm, pd, y[:nv], y[nv:], np.zeros(nv))])

    sol = solve_ivp(rhs, (0.0, 1.0), np.zeros(2 * nv), method="DOP853", rtol=1e-12,
                    atol=1e-12, t_eval=res.t)
    for k in range(len(res.t)):
        ours = mbmodel_values(spec, pm, sol.y[:nv, k], sol.y[nv:, k])
        for name, ref in ours.items():
            assert abs(res[name][k] - ref) < 1e-6, (name, res.t[k])
    assert np.ptp(res["joint0.phi" if "joint0.phi" in res else "joint0.s"]) > 0.05  # it moves
    # a variable that is not a state comes from the output table, computed on first use
    r_tip = res["body5.frame_a.r_0[2]"]
    assert np.all(np.isfinite(r_tip)) and r_tip.shape == res.t.shape


def test_generated_code_and_virtual_machine_agree(chain):
    _, _, cm = chain
    native = cm.simulate(0.5, n_points=6, method="adams")
    vm = cm.simulate(0.5, n_points=6, method="adams", native=False)
    bdf = cm.simulate(0.5, n_points=6, method="bdf")  # symbolic Jacobian, virtual machine
    for name in cm.states:
        assert np.allclose(native[name], vm[name], rtol=0, atol=1e-6), name
        assert np.allclose(native[name], bdf[name], rtol=0, atol=1e-6), name


class StiffRC(mb.Model):
    """A 0.1 µs RC stage next to a 1 ms one: stiff over a 10 ms run."""

    source = el.ConstantVoltage(V=1.0)
    fast_r = el.Resistor(R=1.0)
    fast_c = el.Capacitor(C=1e-7, v=mb.Fixed(0.0))
    slow_r = el.Resistor(R=1e3)
    slow_c = el.Capacitor(C=1e-6, v=mb.Fixed(0.0))
    ground = el.Ground()

    def equations(self):
        yield mb.connect(self.source.p, self.fast_r.p, self.slow_r.p)
        yield mb.connect(self.fast_r.n, self.fast_c.p)
        yield mb.connect(self.slow_r.n, self.slow_c.p)
        yield mb.connect(self.source.n, self.fast_c.n, self.slow_c.n, self.ground.p)


def test_stiff_circuit_chooses_bdf_and_matches_the_analytic_solution():
    cm = mb.compile(StiffRC())
    res = cm.simulate(1e-2, n_points=11)
    assert res.methods == ["bdf"]
    t = res.t
    assert np.allclose(res["slow_c.v"], 1 - np.exp(-t / 1e-3), atol=1e-7)
    assert np.allclose(res["fast_c.v"][1:], 1 - np.exp(-t[1:] / 1e-7), atol=1e-7)


class FastOscillator(mb.Model):
    """An undamped mass on a spring, omega = 1000 rad/s, starting 1 mm out of rest."""

    fixed = tr.Fixed()
    spring = tr.Spring(c=1e6)
    mass = tr.Mass(m=1.0, s=mb.Fixed(1e-3), v=mb.Fixed(0.0))

    def equations(self):
        yield mb.connect(self.fixed.flange, self.spring.flange_a)
        yield mb.connect(self.spring.flange_b, self.mass.flange_a)


class DampedOscillator(FastOscillator):
    """The same with a damper: two modes that decay without oscillating (-101, -9899)."""

    damper = tr.Damper(d=1e4)

    def equations(self):
        yield from super().equations()
        yield mb.connect(self.fixed.flange, self.damper.flange_a)
        yield mb.connect(self.damper.flange_b, self.mass.flange_a)


def test_auto_takes_a_non_stiff_method_for_a_fast_oscillation_and_bdf_for_a_fast_decay():
    # |lambda| * duration = 1000 * 20 s = 2e4 > STIFFNESS_LIMIT in every case; only the
    # modes that die out early are stiff: an undamped oscillation must be followed step
    # by step by either method
    cm = mb.compile(FastOscillator())
    res = cm.simulate(20.0, n_points=3)
    assert res.methods == ["dop853"]  # fast, but no stiffness: beyond ABM's stability
    assert abs(res["mass.s"][-1] - 1e-3 * np.cos(1000.0 * 20.0)) < 1e-6 * 1e-3 * 20000
    res = cm.simulate(20.0, n_points=3, native=False)   # no generated C: Adams
    assert res.methods == ["adams"]
    assert abs(res["mass.s"][-1] - 1e-3 * np.cos(1000.0 * 20.0)) < 1e-6 * 1e-3 * 20000
    # decay 9899/s * 2 s; x = x0 (l2 e^(l1 t) - l1 e^(l2 t)) / (l2 - l1)
    res = mb.compile(DampedOscillator()).simulate(2.0, times=[0.0, 1e-4, 0.02, 2.0])
    assert res.methods == ["bdf"]
    l1, l2 = np.roots([1.0, 1e4, 1e6])
    exact = 1e-3 * (l2 * np.exp(l1 * res.t) - l1 * np.exp(l2 * res.t)) / (l2 - l1)
    assert np.allclose(res["mass.s"], exact, rtol=0, atol=1e-11)
    # an oscillation that decays (zeta = 0.5, decay 500/s) and is gone long before 200 s
    cm = mb.compile(DampedOscillator())
    res = cm.simulate(200.0, times=[0.0, 1e-3, 5e-3, 200.0], params={"damper.d": 1e3})
    assert res.methods == ["bdf"]
    wd = 1000.0 * np.sqrt(0.75)
    exact = 1e-3 * np.exp(-500 * res.t) * (np.cos(wd * res.t) + 500 / wd * np.sin(wd * res.t))
    assert np.allclose(res["mass.s"], exact, rtol=0, atol=1e-9)  # 1e-6 of the amplitude


def test_bdf_runs_generated_c_with_its_derivative_and_agrees_with_the_virtual_machine():
    from mbmodel.native import dynamics
    from mbmodel.integrators import newton_dynamics
    cm = mb.compile(StiffRC())
    newton = newton_dynamics(cm, True)
    assert newton is not cm.dynamics and newton is dynamics(cm, True, derivatives=True)
    assert newton.is_a("External")
    # its Jacobian by the compiled forward derivative equals the symbolic one
    x = np.array([0.3, 0.7])
    pu = np.concatenate([cm.parameter_defaults, np.zeros(cm.symbols.u.numel())])
    X = ca.MX.sym("x", 2)
    jac = [ca.Function("j", [X], [ca.jacobian(f(0.0, X, ca.MX(0, 1), pu, ca.MX(0, 1))[0], X)])
           for f in (newton, cm.dynamics)]
    assert np.allclose(np.array(jac[0](x)), np.array(jac[1](x)), rtol=1e-14, atol=0)
    in_c = cm.simulate(1e-2, n_points=11, method="bdf")
    in_vm = cm.simulate(1e-2, n_points=11, method="bdf", native=False)
    for name in ("slow_c.v", "fast_c.v"):
        assert np.allclose(in_c[name], in_vm[name], rtol=0, atol=1e-8)


def test_adams_falls_back_to_bdf_on_a_stiff_model():
    cm = mb.compile(StiffRC())
    # a 1 ns stage over 10 ms: Adams' steps stay ~1e-9 long and exceed the step limit
    res = cm.simulate(1e-2, n_points=3, method="adams", params={"fast_c.C": 1e-9})
    assert res.methods == ["bdf"]
    assert abs(res["slow_c.v"][-1] - (1 - np.exp(-10.0))) < 1e-7


def test_unknown_method_is_refused():
    cm = mb.compile(StiffRC())
    with pytest.raises(mb.SimulationError, match="method must be one of"):
        cm.simulate(1e-3, method="rk4")


def test_forward_dynamics_evaluator_matches_aba_with_changed_parameters(chain):
    spec, pm, cm = chain
    fd = cm.evaluator()
    assert fd.names == [f"der({s})" for s in cm.states]
    rng = np.random.default_rng(5)
    heavier = pinocchio_model(spec)
    heavier.gravity = pm.gravity
    heavier.inertias[1] = pin.Inertia(2.5, heavier.inertias[1].lever, heavier.inertias[1].inertia)
    p_heavier = cm.parameter_vector({"body0.m": 2.5})
    for model, p in ((pm, None), (heavier, p_heavier)):
        data = model.createData()
        for _ in range(3):
            q, v = rng.uniform(-1, 1, model.nq), rng.uniform(-1, 1, model.nv)
            values = mbmodel_values(spec, model, q, v)
            x = np.array([values[s] for s in cm.states])
            xdot = fd(x, p=p).copy()
            ref = pin.aba(model, data, q, v, np.zeros(model.nv))
            got = dict(zip(cm.states, xdot))
            acc = [got[s] for s in cm.states if s.endswith((".w", ".v"))]
            assert np.max(np.abs(np.array(acc) - ref)) < 1e-9 * max(1, np.abs(ref).max())


def test_inverse_dynamics_evaluator_matches_rnea():
    spec, pm = general_chain(5, seed=4)
    cm = mb.compile(TreeModel(spec), analysis="inverse")
    names = force_names(spec)
    inverse = cm.evaluator(names)
    data = pm.createData()
    rng = np.random.default_rng(6)
    for _ in range(3):
        q, v, a = (rng.uniform(-1, 1, pm.nv) for _ in range(3))
        values = mbmodel_values(spec, pm, q, v, a)
        tau = inverse(u=[values[n] for n in cm.inputs])
        ref = pin.rnea(pm, data, q, v, a)
        assert np.max(np.abs(tau - ref)) < 1e-9 * max(1, np.abs(ref).max())


class AlgebraicLoop(mb.Model):
    x = mb.Variable(start=1.0, fixed=True)
    y = mb.Variable(start=0.5)

    def equations(self):
        yield mb.der(self.x) == -self.y
        yield self.y + self.y ** 3 == self.x


def test_evaluator_refuses_models_with_algebraic_variables():
    cm = mb.compile(AlgebraicLoop())
    assert cm.algebraic == ["y"]
    with pytest.raises(mb.DeclarationError, match="algebraic variables"):
        cm.evaluator()
    with pytest.raises(mb.DeclarationError, match="no output"):
        mb.compile(StiffRC()).evaluator(["nowhere.v"])


def test_two_threads_simulate_one_compiled_model(chain):
    _, _, cm = chain
    masses = (0.8, 1.7)
    serial = {m: cm.simulate(0.3, n_points=4, params={"body0.m": m}) for m in masses}
    parallel = {}

    def run(m):
        for _ in range(3):
            parallel[m] = cm.simulate(0.3, n_points=4, params={"body0.m": m})

    assert not in_threads(run, masses)
    for m in masses:
        for name in cm.states:
            assert np.array_equal(parallel[m][name], serial[m][name])


def test_two_threads_compile_at_the_same_time():
    specs = [general_chain(3, seed=s)[0] for s in (7, 8)]
    compiled = {}

    def build(k):
        compiled[k] = mb.compile(TreeModel(specs[k]))

    assert not in_threads(build, range(2))
    for k in range(2):
        alone = mb.compile(TreeModel(specs[k]))
        x = np.linspace(0.1, 0.9, len(alone.states))
        assert compiled[k].states == alone.states
        assert np.allclose(compiled[k].evaluator()(x), alone.evaluator()(x), atol=1e-12)


def test_a_cached_library_that_does_not_load_is_rebuilt(tmp_path):
    x = ca.SX.sym("x", 2)
    f = ca.Function("cubic", [x], [x ** 3 + x[0]])
    first = codegen.compile_function(f, cache_dir=tmp_path / "good")
    (library,) = (tmp_path / "good").glob("*.so")
    # the same cache entry, cut short (never overwrite a library a process has loaded)
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / library.name).write_bytes(library.read_bytes()[:100])
    with warnings.catch_warnings():
        warnings.simplefilter("error", codegen.CodegenWarning)
        again = codegen.compile_function(f, cache_dir=tmp_path / "cut")
    assert again.is_a("External") and first.is_a("External")
    assert (tmp_path / "cut" / library.name).stat().st_size > 1000  # built anew
    assert np.allclose(np.array(again([2.0, 3.0])).ravel(), [10.0, 29.0])


def test_auto_builds_large_dynamics_in_the_background(tmp_path, monkeypatch):
    from mbmodel import native
    monkeypatch.setenv("MBMODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "AUTO_BUILD_INSTRUCTIONS", 0)  # every model counts as large
    cm = mb.compile(StiffRC())
    first = native.dynamics(cm, "auto")
    assert first is cm.dynamics  # the virtual machine meanwhile
    res_vm = cm.simulate(1e-2, n_points=5)
    for thread in threading.enumerate():
        if thread.name.startswith("mbmodel-codegen-"):
            thread.join(timeout=120)
    assert list(tmp_path.glob("*.so"))
    later = native.dynamics(cm, "auto")
    assert later.is_a("External")
    res_c = cm.simulate(1e-2, n_points=5)
    assert np.allclose(res_c["slow_c.v"], res_vm["slow_c.v"], atol=1e-8)
    with pytest.raises(mb.DeclarationError, match="native must be"):
        native.dynamics(cm, "yes")


class Escape(mb.Model):
    """ẋ = x²: from x(0) = 1 the solution 1/(1 - t) leaves every bound at t = 1."""

    x = mb.Variable(start=1.0, fixed=True)
    y = mb.Variable()

    def equations(self):
        yield mb.der(self.x) == self.x ** 2
        yield self.y == 2 * self.x


def test_a_failed_run_says_when_and_keeps_the_result_so_far():
    cm = mb.compile(Escape())
    with pytest.raises(mb.SimulationError) as info:
        cm.simulate(2.0, n_points=21)
    err = info.value
    assert err.time is not None and 0.9 <= err.time <= 1.0
    partial = err.result
    assert partial is not None and partial.t[-1] <= 1.0 and len(partial.t) >= 10
    assert np.allclose(partial["x"], 1 / (1 - partial.t), rtol=1e-4)  # a blow-up: 1e-8 grows
    assert np.allclose(partial["y"], 2 * partial["x"])  # computed variables too


def test_a_non_finite_solution_names_the_variable_and_time(monkeypatch):
    # The integrators stop on NaN themselves; this guards whatever returns one silently.
    simulation = sys.modules["mbmodel.simulate"]  # (mb.simulate is the function)
    cm = mb.compile(Escape())
    real = simulation._integrate

    def poisoned(*args, **kwargs):
        xs, zs, used = real(*args, **kwargs)
        xs = xs.copy()
        xs[0, 3:] = np.nan
        return xs, zs, used

    monkeypatch.setattr(simulation, "_integrate", poisoned)
    with pytest.raises(mb.SimulationError, match="not finite at t = 0.4: x = nan") as info:
        cm.simulate(0.5, n_points=6)
    assert info.value.variable == "x" and info.value.time == pytest.approx(0.4)
    assert np.allclose(info.value.result.t, [0.0, 0.1, 0.2, 0.3])
    with pytest.raises(mb.SimulationError,
                       match=r"x0 must be 1 finite number \(for x\), not \[nan\]"):
        cm.simulate(0.5, x0=[np.nan])


def test_solver_caches_are_bounded_in_count_and_in_memory(monkeypatch):
    from mbmodel import workspace as ws

    class Owner:  # any weakly referable object stands for a compiled model
        pass

    owner = Owner()
    cache = ws.workspace(owner, "integrators")
    monkeypatch.setattr(ws, "MAX_BYTES_PER_KIND", 1000)
    for k in range(3):
        ws.remember(cache, k, f"solver {k}", 400)
    assert list(cache) == [1, 2]  # 3 x 400 bytes do not fit in 1000: the oldest went
    monkeypatch.setattr(ws, "MAX_BYTES_PER_KIND", 1 << 40)
    for k in range(3, 3 + ws.MAX_PER_KIND):
        ws.remember(cache, k, f"solver {k}")
    assert len(cache) == ws.MAX_PER_KIND and 1 not in cache
    # a built entry records what its construction took. The 64 MB come from a fresh
    # anonymous mapping, every page written: malloc could instead hand back heap the
    # process freed earlier and still holds resident (seen in CI), which costs no new RSS
    def touched_mapping():
        block = mmap.mmap(-1, 64 << 20)
        for offset in range(0, len(block), mmap.PAGESIZE):
            block[offset] = 1
        return block

    value = ws.built(cache, "big", touched_mapping)
    assert len(value) == 64 << 20 and cache.sizes["big"] >= 32 << 20


def test_the_evaluator_of_a_model_with_events_takes_the_branches_at_its_point():
    """A mass 1 cm into an elastic stop (c = 1e4 N/m) under gravity: the stop pushes with
    100 N, so der(v) = -9.81 + 100. The evaluator used to hold every relation at its start
    value (the mass free: -9.81), unlike linearize() at the same point; its slope must be
    linearize()'s."""
    from mbmodel.libraries import translational as tr

    class Drop(mb.Model):
        fixed = tr.Fixed(s0=0.0)
        gap = tr.ElastoGap(c=1e4, d=0.0, s_rel0=0.0)
        mass = tr.Mass(m=1.0, s=mb.Fixed(0.5), v=mb.Fixed(0.0))
        g = tr.ConstantForce(f_constant=-9.81)

        def equations(self):
            yield mb.connect(self.fixed.flange, self.gap.flange_a)
            yield mb.connect(self.gap.flange_b, self.mass.flange_a)
            yield mb.connect(self.g.flange, self.mass.flange_b)

    cm = mb.compile(Drop())
    assert cm.events is not None
    s, v = cm.states.index("mass.s"), cm.states.index("mass.v")
    inside = cm.state_vector({"mass.s": -0.01, "mass.v": 0.0})
    above = cm.state_vector({"mass.s": 0.2, "mass.v": 0.0})
    for native in (True, False):
        fd = cm.evaluator(native=native)
        assert fd(inside)[v] == pytest.approx(90.19, abs=1e-9)
        assert fd(above)[v] == pytest.approx(-9.81, abs=1e-12)  # and back in free flight
        h = 1e-6
        step = np.zeros(2)
        step[s] = h
        slope = (fd(inside + step).copy() - fd(inside - step).copy()) / (2 * h)
        lin = cm.linearize(x=inside)
        np.testing.assert_allclose(slope, lin.A[:, s], rtol=1e-6)
        assert lin.A[v, s] == pytest.approx(-1e4)


def test_the_evaluator_of_a_model_with_events_does_not_remember_its_last_call():
    """A hysteresis (on = x > 0 if it was on, else x > 1): each call takes the branches from
    the discrete start values at its own point. The relations used to be found from the
    last call's, so x = 0.5 gave der(x) = 1 before a call at x = 2 and -1 after it."""
    from mbmodel.functions import if_else

    class Hysteresis(mb.Model):
        x = mb.Variable(start=mb.Fixed(0.0))
        on = mb.Discrete(start=0.0)

        def equations(self):
            yield self.on == if_else(mb.pre(self.on) > 0.5, self.x > 0.0, self.x > 1.0)
            yield mb.der(self.x) == if_else(self.on > 0.5, -1.0, 1.0)

    cm = mb.compile(Hysteresis())
    for native in (False, True):
        fd = cm.evaluator(native=native)
        assert fd(np.array([0.5]))[0] == 1.0
        assert fd(np.array([2.0]))[0] == -1.0
        assert fd(np.array([0.5]))[0] == 1.0


def test_evaluator_arguments_of_the_wrong_size_are_refused():
    """numpy spread one number over every parameter (p=[1.0] for five of them gave an
    answer), and a vector too long gave its broadcasting error. (Five free parameters: the
    resistor's T is bound to its T_ref, as in MSL.)"""
    from test_persist import RC
    cm = mb.compile(RC())
    ev = cm.evaluator()
    assert ev([0.5])[0] == pytest.approx(500.0)
    for args, said in ((([0.5, 1.0],), "x has 2 entries, the model 1"),
                       (([0.5], None, [1.0]), "p has 1 entries, the model 5"),
                       ((["a"],), "not a vector of numbers")):
        with pytest.raises(mb.DeclarationError, match=said):
            ev(*args)


def test_evaluator_arguments_left_out_take_their_defaults_not_the_last_calls():
    """A left-out p or u was whatever the last call had put in the buffers: fd(x, u) after
    fd(x, u, p={c: 50}) still had c = 50, fd(x) kept the last u, and a u of one entry for
    two inputs kept the second from before (review). Left out, each is its default (x the
    start, u zeros, p the parameters' values), and a u of the wrong length is refused."""
    class TwoTorques(mb.Model):
        tau1 = mb.Input()
        tau2 = mb.Input()
        fixed = rot.Fixed()
        spring = rot.SpringDamper(c=100.0, d=1.0)
        inertia = rot.Inertia(J=0.5, phi=mb.Fixed(0.1), w=mb.Fixed(0.0))
        s1 = rot.Torque()
        s2 = rot.Torque()

        def equations(self):
            yield mb.connect(self.fixed.flange, self.spring.flange_a)
            yield mb.connect(self.spring.flange_b, self.inertia.flange_a)
            yield mb.connect(self.s1.flange, self.inertia.flange_b)
            yield mb.connect(self.s2.flange, self.inertia.flange_b)
            yield mb.connect(self.tau1, self.s1.tau)
            yield mb.connect(self.tau2, self.s2.tau)

    cm = mb.compile(TwoTorques())
    fd = cm.evaluator()
    x = cm.start   # phi = 0.1, w = 0: a = (-c phi + tau1 + tau2) / J
    assert fd(x, u=[0, 0], p=cm.parameter_vector({"spring.c": 50.0}))[1] == pytest.approx(-10)
    assert fd(x, u=[0, 0])[1] == pytest.approx(-20.0)      # c back to 100
    assert fd(x, u=[1, 2])[1] == pytest.approx(-14.0)
    assert fd(x)[1] == pytest.approx(-20.0)                # u back to zeros
    assert fd()[1] == pytest.approx(-20.0)                 # x: the start
    with pytest.raises(mb.DeclarationError, match="u has 1 entries, the model 2 external"):
        fd(x, u=[5.0])
    with pytest.raises(mb.DeclarationError, match="t must be a number"):
        fd(x, t="a")


_CHILD = """
import sys
sys.path.insert(0, {tests!r})
import mbmodel as mb
from test_persist import RC
cm = mb.compile(RC())
print(cm.evaluator()(cm.start)[0], mb.simulate(cm, 1e-3, native=True, method="dop853")
      .final("capacitor.v"))
"""


def test_a_cached_library_cut_short_is_built_again_not_loaded(tmp_path):
    """A library cut short (a full disk) killed the next process in dlopen with SIGBUS, and
    a damaged runtime of the C loops failed every later non-stiff run ('file too short')
    (review). Each library has its sha256 and size recorded beside it; one that does not
    match is built again."""
    import glob
    import subprocess
    env = dict(os.environ, MBMODEL_CACHE=str(tmp_path))
    code = _CHILD.format(tests=os.path.dirname(os.path.abspath(__file__)))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    libraries = glob.glob(str(tmp_path / "*.so"))
    assert libraries and all(os.path.exists(lib + ".sha256") for lib in libraries)
    for lib in libraries:
        data = open(lib, "rb").read()
        open(lib, "wb").write(data[: len(data) // 2])
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout   # 1000.0 and 1 - e^-1
    assert float(first.stdout.split()[1]) == pytest.approx(1.0 - math.exp(-1.0), abs=1e-8)


def test_evaluator_of_outputs_that_read_no_algebraic_variable():
    """evaluator(["y"]) of a model with a torn nonlinear block was refused although y
    reads no algebraic variable (review); outputs that read one, and the derivatives, still
    are, with what to do."""
    class Torn(mb.Model):
        x = mb.Variable(1.0, fixed=True)
        z = mb.Variable(1.0)
        y = mb.Variable()

        def equations(self):
            yield mb.der(self.x) == -self.z
            yield self.z ** 3 + self.z == self.x
            yield self.y == 2 * self.x

    cm = mb.compile(Torn())
    assert cm.algebraic == ["z"]
    assert cm.evaluator(["y"])([3.0])[0] == 6.0
    for outputs, reads in ((None, "the state derivatives"), (["z"], "these outputs")):
        with pytest.raises(mb.DeclarationError, match=f"which {reads} read"):
            cm.evaluator(outputs)


def test_a_failed_background_build_is_reported_once_and_not_retried(tmp_path, monkeypatch):
    from mbmodel import native
    calls = tmp_path / "calls"
    failing = tmp_path / "failcc.sh"
    # accepts the flag probe, fails every real build (and counts them)
    failing.write_text(f'#!/bin/sh\ncase "$*" in *"-x c -c -"*) exit 0;; esac\n'
                       f'echo build >> {calls}\necho "simulated compiler error" >&2\nexit 1\n')
    failing.chmod(0o755)
    monkeypatch.setenv("CC", str(failing))
    monkeypatch.setenv("MBMODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(native, "AUTO_BUILD_INSTRUCTIONS", 0)  # every model counts as large
    cm = mb.compile(StiffRC())
    reported, builds = [], []
    for _ in range(4):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = cm.simulate(1e-2, n_points=3)
        reported.append([w for w in caught if issubclass(w.category, codegen.CodegenWarning)])
        for thread in threading.enumerate():
            if thread.name.startswith("mbmodel-codegen-"):
                thread.join(timeout=120)
        builds.append(calls.read_text().count("build") if calls.exists() else 0)
        assert np.allclose(res["slow_c.v"], 1 - np.exp(-res.t / 1e-3), atol=1e-7)
    # the libraries the stiff run asks for (its dynamics, then with their derivative): each
    # built once, its failure said once, by the run after it
    found = [w for ws in reported for w in ws]
    assert 1 <= len(found) == builds[-1] <= 2
    assert all("simulated compiler error" in str(w.message) and "background" in str(w.message)
               for w in found)
    assert not reported[-1] and builds[-1] == builds[-2]  # nothing more once all failed


def test_native_true_with_bdf_integrates_c_from_the_first_run(tmp_path, monkeypatch):
    # native=True means C, built first: runs repeat exactly (the first one no longer ran
    # the virtual machine while the derivative library built in the background)
    from mbmodel import native
    monkeypatch.setenv("MBMODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "AUTO_BUILD_INSTRUCTIONS", 0)
    cm = mb.compile(StiffRC())
    runs = []
    for _ in range(2):
        runs.append(cm.simulate(1e-2, n_points=5, method="bdf", native=True))
        for thread in threading.enumerate():   # (a build left to the background, if any)
            if thread.name.startswith("mbmodel-codegen-"):
                thread.join(timeout=120)
    assert runs[0].methods == ["bdf"]
    assert np.array_equal(runs[0]["slow_c.v"], runs[1]["slow_c.v"])
    libraries = sorted(p.name for p in tmp_path.glob("*.so"))
    assert len(libraries) == 1  # the derivative library only: BDF calls nothing else


def test_the_evaluator_of_a_constant_parameter_model_refuses_other_parameter_values():
    cm = mb.compile(StiffRC(), parameters="constant")
    fd = cm.evaluator()
    x = cm.start
    same = fd(x, p=cm.parameter_vector()).copy()   # the folded values themselves pass
    assert np.array_equal(same, fd(x))
    p = 2.0 * cm.parameter_vector()
    with pytest.raises(mb.ParameterError, match=r"folded into the code.*parameters='symbolic'"):
        fd(x, p=p)
    with pytest.raises(mb.ParameterError, match="folded"):
        fd(x, p=list(p))     # the checked path of lists
    symbolic = mb.compile(StiffRC()).evaluator()
    assert not np.array_equal(symbolic(x, p=p).copy(), symbolic(x))  # there p is read


def test_a_failed_derivative_build_leaves_the_plain_library_in_use(tmp_path, monkeypatch):
    # failures are per library: the one with the forward derivative failing in the
    # background must not keep the model's plain library (which builds) out of use
    from mbmodel import native
    refusing = tmp_path / "cc_nofwd.sh"
    refusing.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in *.c) if grep -q "fwd1_" '
                        '"$a"; then echo "refusing derivative code" >&2; exit 1; fi;; esac; '
                        'done\nexec gcc "$@"\n')
    refusing.chmod(0o755)
    monkeypatch.setenv("CC", str(refusing))
    monkeypatch.setenv("MBMODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(native, "AUTO_BUILD_INSTRUCTIONS", 0)

    def built_in_background():
        for thread in threading.enumerate():
            if thread.name.startswith("mbmodel-codegen-"):
                thread.join(timeout=120)
    cm = mb.compile(StiffRC())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            cm.simulate(1e-2, n_points=3, method="bdf")    # the derivative's build fails
            built_in_background()
    assert any("refusing derivative code" in str(w.message) for w in caught)
    for _ in range(2):
        res = cm.simulate(1e-2, n_points=3, method="adams")  # the plain one builds
        built_in_background()
    assert native.dynamics(cm, "auto").is_a("External")
    assert np.allclose(res["slow_c.v"], 1 - np.exp(-res.t / 1e-3), atol=1e-6)
