"""Compiler behaviour: alias elimination, index reduction, state selection, parameters,
inputs, language features (inheritance, conditional connectors, replaceable classes),
overdetermined connectors and determinism."""

import math
import os
import subprocess
import sys
import textwrap
import warnings

import casadi as ca
import numpy as np
import pytest

import mbmodel as mb
from mbmodel import (Branch, Connector, Fixed, Flow, Input, Model, Overdetermined,
                     Parameter, Potential, PotentialRoot, Root, Variable, connect, der)
from mbmodel.libraries import blocks
from mbmodel.libraries import electrical as el
from mbmodel.libraries import rotational as rot


class RCLadder(Model):
    def __init__(self, n=3, **kw):
        super().__init__(**kw)
        self.n = n
        self.source = el.ConstantVoltage(V=1.0)
        self.ground = el.Ground()
        self.resistors = [el.Resistor(R=1.0) for _ in range(n)]
        self.capacitors = [el.Capacitor(C=1.0, v=Fixed(0.0)) for _ in range(n)]

    def equations(self):
        yield connect(self.source.n, self.ground.p)
        yield connect(self.source.p, self.resistors[0].p)
        for k in range(self.n):
            yield connect(self.resistors[k].n, self.capacitors[k].p)
            yield connect(self.capacitors[k].n, self.ground.p)
            if k + 1 < self.n:
                yield connect(self.resistors[k].n, self.resistors[k + 1].p)


def test_alias_elimination_removes_connection_equations():
    cm = mb.compile(RCLadder(n=4))
    flat = cm.flat
    two_member = [e for e in flat.equations if e.kind == "connection"
                  and "flow sum" not in e.description]
    assert two_member, "the ladder has potential equalities"
    # Every potential equality and every unconnected-flow equation is an alias: removed.
    n_alias_like = len(two_member) + sum(e.kind == "unconnected flow" for e in flat.equations)
    n_two_flow = sum(1 for e in flat.equations if e.description.startswith("flow sum")
                     and e.description.count(",") == 1)
    assert cm.system.removed_alias_equations >= n_alias_like + n_two_flow
    remaining = len(cm.system.equations)
    assert remaining < len(flat.equations) / 2
    # and the answer is still right: first capacitor of a 1-stage ladder is an RC circuit
    res = mb.simulate(RCLadder(n=1), 3.0, n_points=31)
    assert np.allclose(res["capacitors[0].v"], 1 - np.exp(-res.t), rtol=1e-6, atol=1e-8)


def test_parameters_stay_symbolic_between_runs():
    cm = mb.compile(RCLadder(n=1))
    r1 = cm.simulate(1.0, n_points=11)
    r2 = cm.simulate(1.0, n_points=11, params={"resistors[0].R": 2.0})
    assert np.isclose(r1.final("capacitors[0].v"), 1 - np.exp(-1.0), rtol=1e-6)
    assert np.isclose(r2.final("capacitors[0].v"), 1 - np.exp(-0.5), rtol=1e-6)


class GearedPair(Model):
    """Two inertias through an ideal gear; the gear class is replaceable."""

    def __init__(self, gear=rot.IdealGear, ratio=3.0, **kw):
        super().__init__(**kw)
        self.torque = rot.ConstantTorque(tau_constant=1.0)
        self.j1 = rot.Inertia(J=1.0, phi=Fixed(0.0), w=Fixed(0.0))
        self.gear = gear(ratio=ratio)
        self.j2 = rot.Inertia(J=2.0)

    def equations(self):
        yield connect(self.torque.flange, self.j1.flange_a)
        yield connect(self.j1.flange_b, self.gear.flange_a)
        yield connect(self.gear.flange_b, self.j2.flange_a)


def test_ideal_gear_index_reduction_and_reflected_inertia():
    cm = mb.compile(GearedPair(ratio=3.0))
    assert len(cm.states) == 2  # the rigid coupling removes two states
    assert cm.system.n_differentiated_equations >= 2
    res = cm.simulate(1.0, n_points=11)
    # Seen from j2: J = J2 + r^2 J1 with torque r*tau; j1 acceleration = tau/(J1 + J2/r^2).
    acc = 1.0 / (1.0 + 2.0 / 9.0)
    assert np.allclose(res["j1.w"], acc * res.t, rtol=1e-8, atol=1e-10)
    assert np.allclose(res["j2.w"], acc * res.t / 3.0, rtol=1e-8, atol=1e-10)


class SlipGear(rot.IdealGear):
    """A replacement gear class (same connectors) used to test class swapping."""


def test_replaceable_subcomponent_class():
    m = GearedPair(gear=SlipGear, ratio=2.0)
    assert isinstance(m.gear, SlipGear)
    res = mb.simulate(m, 1.0, n_points=3)
    assert np.isclose(res.final("j1.w"), 1.0 / (1.0 + 2.0 / 4.0), rtol=1e-8)


def test_conditional_support_connector():
    plain = rot.IdealGear(ratio=2.0)
    with_support = rot.IdealGear(ratio=2.0, use_support=True)
    assert not hasattr(plain, "support") or plain.members().get("support") is None
    assert "support" in with_support.members()


class Cartesian(Model):
    L = Parameter(1.0, min=0.0)
    g = Parameter(9.81)
    x = Variable(start=0.5, fixed=True)
    y = Variable(start=-0.8)
    vx = Variable(start=0.0, fixed=True)
    vy = Variable()
    F = Variable()

    def equations(self):
        yield der(self.x) == self.vx
        yield der(self.y) == self.vy
        yield der(self.vx) == -self.F * self.x / self.L
        yield der(self.vy) == -self.F * self.y / self.L - self.g
        yield self.x ** 2 + self.y ** 2 == self.L ** 2


def test_index3_pendulum_keeps_constraint_and_energy():
    cm = mb.compile(Cartesian())
    assert sorted(cm.states) == ["vx", "x"]
    res = cm.simulate(5.0, n_points=501, rtol=1e-10, atol=1e-12)
    assert np.max(np.abs(res["x"] ** 2 + res["y"] ** 2 - 1.0)) < 1e-6
    energy = 0.5 * (res["vx"] ** 2 + res["vy"] ** 2) + 9.81 * res["y"]
    assert np.max(np.abs(energy - energy[0])) / abs(energy[0]) < 1e-6
    # consistent initialization moved the guess y = -0.8 onto the circle
    assert np.isclose(res["y"][0], -np.sqrt(1 - 0.25), rtol=1e-10)


def test_state_select_prefers_declared_states():
    class Prefer(Cartesian):
        y = Variable(start=-0.8, fixed=True, state_select="prefer")
        x = Variable(start=0.5)
        vy = Variable(start=0.0, fixed=True, state_select="prefer")
        vx = Variable()

    cm = mb.compile(Prefer())
    assert sorted(cm.states) == ["vy", "y"]


class OpenLoop(Model):
    u = Input()
    plant = blocks.FirstOrder(k=2.0, T=0.5)

    def equations(self):
        yield connect(self.u, self.plant.u)


def test_top_level_input_and_linearization():
    cm = mb.compile(OpenLoop())
    assert cm.inputs == ["u"]
    res = cm.simulate(2.0, inputs={"u": ([0.0, 1.0], [0.0, 1.0])}, n_points=201)
    t = res.t
    expected = np.where(t < 1.0, 0.0, 2.0 * (1 - np.exp(-(t - 1.0) / 0.5)))
    assert np.allclose(res["plant.y"], expected, atol=1e-7)
    A, B = cm.linearize(x=[0.0], u=[0.0])
    assert np.allclose(A, [[-2.0]]) and np.allclose(B, [[4.0]])
    with pytest.raises(mb.SimulationError, match="external inputs u"):
        cm.simulate(1.0)



def test_input_tables_as_rows_or_as_times_and_values():
    """Rows [[time, value], ...] (TimeTable's and Modelica's format) were read as
    (times, values) when there were two of them: u = 1 throughout instead of 5 then 7.
    Rows, a (times, values) tuple and a numpy array of rows all give the same hold; two
    rows of two (list or array) read either way and are refused; a string is not a
    number."""
    cm = mb.compile(OpenLoop())
    expected = None
    for table in ([[0.0, 5.0], [1.0, 7.0], [1.5, 9.0]], ([0.0, 1.0, 1.5], [5.0, 7.0, 9.0]),
                  np.array([[0.0, 5.0], [1.0, 7.0], [1.5, 9.0]]),
                  [[0.0, 1.0, 1.5], [5.0, 7.0, 9.0]]):
        res = cm.simulate(2.0, inputs={"u": table}, times=[0.5, 1.2, 2.0])
        assert res["u"].tolist() == [5.0, 7.0, 9.0]
        expected = res["plant.y"] if expected is None else expected
        np.testing.assert_array_equal(res["plant.y"], expected)
    two = cm.simulate(2.0, inputs={"u": ([0.0, 1.0], [5.0, 7.0])}, times=[0.5, 2.0])
    assert two["u"].tolist() == [5.0, 7.0]
    for ambiguous in ([[0.0, 5.0], [1.0, 7.0]], np.array([[0.0, 1.0], [5.0, 7.0]])):
        with pytest.raises(mb.SimulationError, match="reads as rows"):
            cm.simulate(2.0, inputs={"u": ambiguous})
    with pytest.raises(mb.SimulationError, match="give a number, a"):
        cm.simulate(2.0, inputs={"u": "3"})


def test_a_vector_input_by_its_declared_name():
    """``inputs={"u": ...}`` for an input declared with shape (2,): two numbers, a
    (times, values) table with a row per time, or rows [time, u0, u1]; linearize takes
    the name for both entries. It had said "the model has no external input u"."""
    class Pair(Model):
        u = mb.Input(shape=(2,))
        x = Variable(shape=(2,), start=[0.0, 0.0], fixed=True)

        def equations(self):
            yield der(self.x) == -self.x + self.u

    cm = mb.compile(Pair())
    t = np.array([0.5, 1.0, 2.0])
    res = cm.simulate(2.0, inputs={"u": [1.0, 2.0]}, times=t)
    np.testing.assert_allclose(res["x[0]"], 1 - np.exp(-t), rtol=1e-7)
    np.testing.assert_allclose(res["x[1]"], 2 * (1 - np.exp(-t)), rtol=1e-7)
    # u = (1, 2) until 1 s, then (3, 4)
    def held(a, b):
        first = a * (1 - np.exp(-np.minimum(t, 1.0)))
        return np.where(t <= 1.0, first, b + (a * (1 - np.exp(-1.0)) - b) * np.exp(-(t - 1)))
    for spec in (([0.0, 1.0], [[1.0, 2.0], [3.0, 4.0]]), [[0.0, 1.0, 2.0], [1.0, 3.0, 4.0]]):
        res = cm.simulate(2.0, inputs={"u": spec}, times=t)
        np.testing.assert_allclose(res["x[0]"], held(1.0, 3.0), rtol=1e-7)
        np.testing.assert_allclose(res["x[1]"], held(2.0, 4.0), rtol=1e-7)
    lin = cm.linearize(inputs=["u"], outputs=["x"])
    assert lin.inputs == ["u[0]", "u[1]"]
    np.testing.assert_array_equal(lin.B, np.eye(2))
    with pytest.raises(mb.SimulationError, match=r"input 'u' has 2 entries \(u\[0\], \.\.\.\)"):
        cm.simulate(2.0, inputs={"u": [1.0]})
    with pytest.raises(mb.SimulationError, match=r"gives 'u' and its entry 'u\[1\]'"):
        cm.simulate(2.0, inputs={"u": [1.0, 2.0], "u[1]": 3.0})


def test_steady_state_initialization():
    class Loop(Model):
        src = blocks.Constant(k=3.0)
        plant = blocks.FirstOrder(k=2.0, T=0.5, init="steady")

        def equations(self):
            yield connect(self.src.y, self.plant.u)

    res = mb.simulate(Loop(), 1.0, n_points=5)
    assert np.allclose(res["plant.y"], 6.0, rtol=1e-9)


def test_a_steady_state_that_does_not_exist_is_refused():
    """A mass under a constant force has no steady state: it had been given one with its
    speed 0 (der(v) = 1.5 there, silently). A free angle moving at a constant speed is a
    steady motion and stays allowed."""
    from mbmodel.libraries import translational as tr

    class Pushed(Model):
        mass = tr.Mass(m=2.0, s=mb.Guess(0.0), v=mb.Guess(0.0))
        force = tr.ConstantForce(f_constant=3.0)

        def equations(self):
            yield connect(self.force.flange, self.mass.flange_a)

    cm = mb.compile(Pushed())
    with pytest.raises(mb.InitializationError, match=r"steady state: there is none .*"
                                                     r"der\(mass.v\) = 1.5"):
        cm.initialize(steady_state=True)
    with pytest.raises(mb.InitializationError, match="steady state: there is none"):
        cm.simulate(1.0, steady_state=True)

    class Driven(Model):   # a damped inertia at its speed under a constant torque
        torque = rot.ConstantTorque(tau_constant=2.0)
        inertia = rot.Inertia(J=1.0, phi=mb.Guess(0.3), w=mb.Guess(0.0))
        damper = rot.Damper(d=0.5)
        fixed = rot.Fixed()

        def equations(self):
            yield connect(self.torque.flange, self.inertia.flange_a)
            yield connect(self.inertia.flange_b, self.damper.flange_a)
            yield connect(self.damper.flange_b, self.fixed.flange)

    cm = mb.compile(Driven())
    x0, _ = cm.initialize(steady_state=True)
    angle = 1 - cm.states.index("inertia.w")   # (the damper's angle, an alias of phi)
    assert x0[1 - angle] == pytest.approx(4.0, rel=1e-12)   # w = 2 / 0.5
    assert x0[angle] == cm.start[angle]   # held at its start: it moves at the steady speed

    class AngleFirst(Model):   # the same, its angle declared first
        phi = Variable(start=mb.Guess(0.3))
        w = Variable(start=mb.Guess(0.0))

        def equations(self):
            yield der(self.phi) == self.w
            yield der(self.w) == 2.0 - 0.5 * self.w

    # der(phi) = 0 had taken w (declaration order): w = 0, accelerating; then refused
    cm = mb.compile(AngleFirst())
    assert cm.states == ["phi", "w"]
    assert cm.initialize(steady_state=True)[0].tolist() == [0.3, 4.0]


class _Stiff(Model):
    """z**3 + z = x + u, der(x) = -z: the algebraic variable jumps with the input."""
    u = mb.Input()
    x = Variable(1.0, fixed=True)
    z = Variable(1.0)

    def equations(self):
        yield self.z ** 3 + self.z == self.x + self.u
        yield der(self.x) == -self.z


def test_an_algebraic_variable_is_solved_again_after_an_input_steps():
    """IDAS restarted at the input's step from the old z (z**3 + z = x + u with u from 0
    to 1) failed: "IDACalcIC returned IDA_CONV_FAIL". The reference: scipy with z solved
    by brentq."""
    from scipy.integrate import solve_ivp
    from scipy.optimize import brentq

    def z_of(s):
        return brentq(lambda z: z ** 3 + z - s, -10, 10, xtol=1e-15)
    reference = solve_ivp(lambda t, x: [-z_of(x[0] + (1.0 if t >= 1 else 0.0))], [0, 2],
                          [1.0], rtol=1e-11, atol=1e-12, max_step=1e-3, dense_output=True)
    cm = mb.compile(_Stiff())
    for method in ("auto", "idas"):
        res = cm.simulate(2.0, inputs={"u": ([0.0, 1.0], [0.0, 1.0])}, n_points=5,
                          method=method)
        np.testing.assert_allclose(res["x"], reference.sol(res.t)[0], atol=1e-7)


def test_z0_is_a_guess_that_is_solved_from():
    """``simulate(x0=..., z0=...)``: z0 guesses the algebraic variables (the docs), it had
    been taken as their value: the first row of a pendulum in Cartesian coordinates left
    its rod (x^2 + y^2 = 0.89). The guess picks the branch: y > 0 here."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "examples"))
    from cartesian_pendulum import CartesianPendulum  # x = 0.5 fixed, rod of 1 m, m = 1

    cm = mb.compile(CartesianPendulum())
    assert cm.states == ["x", "vx"] and cm.algebraic == ["y"]
    res = cm.simulate(0.5, x0=[0.5, 0.0], z0=[0.8], n_points=6)
    assert res["y"][0] == pytest.approx(math.sqrt(0.75), rel=1e-12)

    class Counting(CartesianPendulum):   # with events (a when that never fires)
        d = mb.Discrete(0)

        def equations(self):
            yield from super().equations()
            yield mb.when(self.x > 10.0, self.d == 1)

    counted = mb.compile(Counting()).simulate(0.5, x0=[0.5, 0.0], z0=[0.8], n_points=6)
    assert counted["y"][0] == pytest.approx(math.sqrt(0.75), rel=1e-12)   # (was -0.866)
    # the rod force at rest: the constraint twice differentiated, x ax + y ay = 0 with
    # ax = -F x, ay = -F y - g, gives F = -g y
    assert res["F"][0] == pytest.approx(-9.81 * math.sqrt(0.75), rel=1e-9)


def test_a_start_fixed_on_an_algebraic_variable_determines_the_state_its_equation_solves():
    """z is an iteration variable of a nonlinear block (z**3 + z = x): its fixed start gives
    x(0) = 2**3 + 2 = 10, as a Modelica tool's initialization does. The conditions were
    matched to the states alone, and this one was refused as over-determining."""
    class Cubic(Model):
        x = Variable(start=1.0)
        z = Variable(start=2.0, fixed=True)

        def equations(self):
            yield der(self.x) == -self.x
            yield self.z ** 3 + self.z == self.x

    cm = mb.compile(Cubic())
    assert cm.states == ["x"] and cm.symbols.z.numel() == 1
    res = cm.simulate(0.5, n_points=3)
    assert res["z"][0] == pytest.approx(2.0, abs=1e-12)
    assert res["x"][0] == pytest.approx(10.0, abs=1e-10)
    assert np.allclose(res["x"], 10.0 * np.exp(-res.t), rtol=1e-6)
    with pytest.raises(mb.InitializationError, match="x = 1 \\(fixed start\\) cannot be met "
                                                     "independently of z = 2 \\(fixed start\\)|"
                                                     "z = 2 \\(fixed start\\) cannot be met "
                                                     "independently of x = 1 \\(fixed start\\)"):
        mb.compile(Cubic(x=Fixed(1.0))).simulate(0.5)


def test_result_access_and_export(tmp_path):
    res = mb.simulate(RCLadder(n=1), 1.0, n_points=11)
    df = res.to_dataframe(["capacitors[0].v"])
    assert df.shape == (11, 1) and df.index.name == "time"
    path = tmp_path / "out.csv"
    res.to_csv(path, ["capacitors[0].v", "resistors[0].i"])
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    assert np.allclose(data[:, 1], res["capacitors[0].v"])
    with pytest.raises(KeyError, match="similar names"):
        res["nothere.v"]
    with pytest.raises(KeyError, match=r"no variable 'capacitors\[0\].V' in the result; "
                                       r"similar names: capacitors\[0\].v, "):
        res["capacitors[0].V"]  # another case: found by its last name, case aside
    with pytest.raises(KeyError, match=r"similar names: resistors\[0\].i, "):
        res["resistor[0].i"]  # close in spelling
    fig = res.plot([["capacitors[0].v"], ["resistors[0].i"]], file=tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000 and fig is not None


# ---- overdetermined connectors (the machinery multibody frames use) ---------------------

def _angle_residue(a, b):
    # two unit vectors (cos, sin) are equal when their cross product vanishes
    return a[0] * b[1] - a[1] * b[0]


class Dir(Connector):
    R = Overdetermined(shape=2, residue=_angle_residue, residue_size=1)
    tau = Flow()


class Ground2(Model):
    frame = Dir()

    def connection_roles(self):
        yield Root(self.frame.R)

    def equations(self):
        yield self.frame.R == np.array([1.0, 0.0])


class Turn(Model):
    """Rigidly rotates a direction by a fixed angle (a branch)."""

    angle = Parameter(0.3)
    a = Dir()
    b = Dir()

    def connection_roles(self):
        yield Branch(self.a.R, self.b.R)

    def equations(self):
        c, s = mb.functions.cos(self.angle), mb.functions.sin(self.angle)
        yield self.b.R[0] == c * self.a.R[0] - s * self.a.R[1]
        yield self.b.R[1] == s * self.a.R[0] + c * self.a.R[1]
        yield self.a.tau + self.b.tau == 0


class SpringJoint(Model):
    """A revolute-like element: b is a rotated by the joint angle theta; a spring holds it."""

    c = Parameter(10.0)
    a = Dir()
    b = Dir()
    theta = Variable(start=0.1)

    def connection_roles(self):
        yield Branch(self.a.R, self.b.R)

    def equations(self):
        c, s = mb.functions.cos(self.theta), mb.functions.sin(self.theta)
        yield self.b.R[0] == c * self.a.R[0] - s * self.a.R[1]
        yield self.b.R[1] == s * self.a.R[0] + c * self.a.R[1]
        yield self.a.tau + self.b.tau == 0
        yield self.b.tau == -self.c * self.theta


class FreeDir(Model):
    """A component that may become a root when nothing else determines its direction."""

    frame = Dir()
    theta = Variable()

    def connection_roles(self):
        yield PotentialRoot(self.frame.R)

    def equations(self):
        if self.is_root(self.frame.R):
            yield self.frame.R[0] == mb.functions.cos(self.theta)
            yield self.frame.R[1] == mb.functions.sin(self.theta)
            yield self.theta == 0.25
        else:  # a free massless end: no torque; its angle follows the connected frame
            yield self.theta == mb.functions.atan2(self.frame.R[1], self.frame.R[0])
            yield self.frame.tau == 0


def test_overdetermined_tree_equalities_and_loop_residue():
    class Loop(Model):
        ground = Ground2()
        t1 = Turn(angle=0.3)
        joint = SpringJoint(c=10.0)

        def equations(self):
            yield connect(self.ground.frame, self.t1.a, self.joint.a)
            yield connect(self.t1.b, self.joint.b)  # closes a loop: 1 residue, not 2 equalities

    flat = mb.flatten(Loop())
    residues = [e for e in flat.equations if e.kind == "residue"]
    assert len(residues) == 1
    res = mb.simulate(Loop(), 1.0, n_points=3)
    # the loop forces the joint angle to the rigid turn's angle; the spring torque flows
    # around the loop into the ground
    assert np.isclose(res["joint.theta"][0], 0.3, rtol=1e-9)
    assert np.isclose(res["t1.b.tau"][0], 3.0, rtol=1e-9)
    assert np.isclose(res["ground.frame.tau"][0], 0.0, atol=1e-9)

    class RigidLoop(Model):
        ground = Ground2()
        t1 = Turn(angle=0.3)
        t2 = Turn(angle=0.3)

        def equations(self):
            yield connect(self.ground.frame, self.t1.a, self.t2.a)
            yield connect(self.t1.b, self.t2.b)

    # a loop of rigid parts leaves its internal torque undetermined: a named error
    with pytest.raises(mb.StructuralSingularityError, match="t1|t2"):
        mb.compile(RigidLoop())


def test_potential_root_chosen_when_no_root():
    class Alone(Model):
        free = FreeDir()
        turn = Turn(angle=0.5)

        def equations(self):
            yield connect(self.free.frame, self.turn.a)

    res = mb.simulate(Alone(), 1.0, n_points=3)
    assert np.isclose(res["turn.b.R[1]"][0], np.sin(0.75))

    class Rooted(Model):
        ground = Ground2()
        free = FreeDir()

        def equations(self):
            yield connect(self.ground.frame, self.free.frame)

    res = mb.simulate(Rooted(), 1.0, n_points=3)
    assert np.isclose(res["free.theta"][0], 0.0)


def test_two_roots_joined_rigidly_is_an_error():
    class TwoRoots(Model):
        g1 = Ground2()
        g2 = Ground2()
        turn = Turn()

        def equations(self):
            yield connect(self.g1.frame, self.turn.a)
            yield connect(self.turn.b, self.g2.frame)

    # The two roots are joined through a loop that closes with a residue equation; with no
    # joint in the loop that residue is redundant: a named structural error at compile time.
    flat = mb.flatten(TwoRoots())
    assert sum(e.kind == "residue" for e in flat.equations) == 1
    with pytest.raises(mb.StructuralSingularityError, match="loop residue"):
        mb.compile(TwoRoots())


# ---- determinism -------------------------------------------------------------------------

_DETERMINISM_SCRIPT = textwrap.dedent("""
    import hashlib, sys
    sys.path.insert(0, {tests!r})
    import mbmodel as mb
    from test_compiler import RCLadder, GearedPair, Cartesian
    out = []
    for model in (RCLadder(n=5), GearedPair(), Cartesian()):
        cm = mb.compile(model)
        out.append(repr(cm.states) + repr(cm.algebraic))
        out.append(str(cm.ode))
        out.append(str(cm.ode.call([cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p, mb.time])[0]))
        out.append(repr([(b.kind, b.equations, b.variables) for b in cm.system.blocks]))
    print(hashlib.sha256("\\n".join(out).encode()).hexdigest())
""")


def test_same_equations_whatever_the_hash_seed():
    script = _DETERMINISM_SCRIPT.format(tests=os.path.dirname(__file__))
    digests = set()
    for seed in ("0", "1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_nonlinear_loop_by_rootfinder_inside_a_pure_ode():
    cm = mb.compile(Cartesian())
    assert cm.algebraic == ["y"]  # the torn nonlinear block: x^2 + y^2 = L^2 solved for y
    ida = cm.simulate(2.0, n_points=21, rtol=1e-10, atol=1e-12)
    cvo = cm.simulate(2.0, n_points=21, rtol=1e-10, atol=1e-12, method="cvodes")
    assert np.allclose(ida["x"], cvo["x"], atol=1e-7)
    assert np.allclose(ida["y"], cvo["y"], atol=1e-7)
    # and both obey the physics: the rod length and the energy are conserved
    for res in (ida, cvo):
        assert np.max(np.abs(res["x"] ** 2 + res["y"] ** 2 - 1.0)) < 1e-8
        energy = 0.5 * (res["vx"] ** 2 + res["vy"] ** 2) + 9.81 * res["y"]
        assert np.max(np.abs(energy - energy[0])) < 1e-6 * abs(energy[0])
    xdot, z = cm.explicit_ode()([0.6, 0.0], [], [1.0, 9.81], 0.0)
    assert np.isclose(float(z[0]), -0.8)
    # the simulator's Newton starts from the previous solution: each root is kept
    continued = cm.explicit_ode(guess=True)
    assert np.isclose(float(continued([0.6, 0.0], [], [1.0, 9.81], 0.0, 0.3)[1]), 0.8)
    assert np.isclose(float(continued([0.6, 0.0], [], [1.0, 9.81], 0.0, -0.3)[1]), -0.8)


def test_equations_no_output_needs_are_removed():
    class WithSensors(Model):
        source = el.ConstantVoltage(V=1.0)
        resistor = el.Resistor(R=1.0)
        capacitor = el.Capacitor(C=1.0, v=Fixed(0.0))
        ground = el.Ground()
        power = el.PowerSensor()
        gain = blocks.Gain(k=3.0)

        def equations(self):
            yield connect(self.source.p, self.power.pc)
            yield connect(self.power.nc, self.resistor.p)
            yield connect(self.power.pv, self.source.p)
            yield connect(self.power.nv, self.ground.p)
            yield connect(self.resistor.n, self.capacitor.p)
            yield connect(self.capacitor.n, self.source.n, self.ground.p)
            yield connect(self.power.power, self.gain.u)

    full = mb.compile(WithSensors())
    lean = mb.compile(WithSensors(), outputs=["capacitor.v"])
    n_full = sum(len(b.equations) for b in full.system.blocks)
    n_lean = sum(len(b.equations) for b in lean.system.blocks)
    assert n_lean < n_full
    assert "gain.y" in full.output_names and "gain.y" not in lean.output_names
    r_full, r_lean = full.simulate(1.0, n_points=5), lean.simulate(1.0, n_points=5)
    assert np.allclose(r_full["capacitor.v"], r_lean["capacitor.v"], rtol=1e-12)
    assert np.allclose(r_lean["capacitor.v"], 1 - np.exp(-r_lean.t), rtol=1e-6, atol=1e-8)
    assert np.isclose(r_full.final("gain.y"),
                      3 * r_full.final("resistor.i"), rtol=1e-9)  # P = V*i, V = 1


def test_connection_set_with_thousands_of_members():
    """A shared ground with >1000 connectors: the flow sum must not exhaust recursion."""

    class Parallel(Model):
        def __init__(self, n, **kw):
            super().__init__(**kw)
            self.n = n
            self.source = el.ConstantVoltage(V=2.0)
            self.ground = el.Ground()
            self.loads = [el.Resistor(R=float(n)) for _ in range(n)]

        def equations(self):
            yield connect(self.source.n, self.ground.p, *[r.n for r in self.loads])
            yield connect(self.source.p, *[r.p for r in self.loads])

    res = mb.simulate(Parallel(1500), 1.0, n_points=2)
    assert np.isclose(res.final("source.i"), -2.0, rtol=1e-9)  # 1500 x (2 V / 1500 Ohm)


# -- analyses and declared input derivatives ------------------------------------------------

from mbmodel.libraries import rotational as _rot  # noqa: E402


class _Move(Model):
    """Prescribed flange motion from inputs u = [phi, w, a] (their derivatives declared)."""

    flange = _rot.Flange()
    u = Input(shape=3)

    def equations(self):
        yield mb.Derivative(self.u[0], self.u[1])
        yield mb.Derivative(self.u[1], self.u[2])
        yield self.flange.phi == self.u[0]


class _MovedInertia(Model):
    u = Input(shape=3)
    move = _Move()
    load = _rot.Inertia(J=2.0)

    def equations(self):
        yield mb.connect(self.u, self.move.u)
        yield mb.connect(self.move.flange, self.load.flange_a)


def test_declared_input_derivatives_replace_differentiation():
    cm = mb.compile(_MovedInertia())
    assert cm.states == [] and len(cm.inputs) == 3
    u = [0.3, -1.5, 4.0]
    y = np.array(cm.output_function([], [], u, cm.parameter_defaults, 0.0)).ravel()
    get = lambda name: y[cm.output_index[name]]  # noqa: E731
    assert get("load.w") == pytest.approx(-1.5, abs=1e-14)
    assert get("load.a") == pytest.approx(4.0, abs=1e-14)
    # Newton: the source applies J*a to the load
    assert get("load.flange_a.tau") == pytest.approx(2.0 * 4.0, abs=1e-13)


def test_derivative_of_a_plain_variable_is_refused():
    class Bad(Model):
        x = mb.Variable()
        y = mb.Variable()

        def equations(self):
            yield mb.Derivative(self.x, self.y)
            yield self.x == 1
            yield self.y == 0

    with pytest.raises(mb.DeclarationError, match="Input"):
        mb.compile(Bad())


class _SplitPin(Connector):
    e = mb.Potential()
    q = Flow(analysis="inverse")
    r = Flow(analysis="forward")


class _UsesInverseFlow(Model):
    pin = _SplitPin()

    def equations(self):
        yield self.pin.e == 1.0
        yield self.pin.q == 0.0  # exists only in the inverse analysis


def test_variable_of_another_analysis_is_named():
    with pytest.raises(mb.DeclarationError, match=r"pin\.q.*only in the 'inverse' analysis"):
        mb.compile(_UsesInverseFlow())


class _Mover(Model):
    u = Input(shape=2)
    x = Variable()

    def equations(self):
        yield mb.Derivative(self.u[0], self.u[1])
        yield self.x == der(self.u[0])


def test_equations_run_once_and_connections_come_from_the_real_statements():
    # A potential root asks is_root() while equations are collected: the composite models'
    # connect statements must be known then. Every equations() runs exactly once (no
    # preview: derivatives are registered once, time events kept once) and nothing is
    # written into the user's model objects.
    calls = []

    class WithRoots(Model):
        free = FreeDir()
        t1 = Turn()
        u = Input(shape=2)
        mover = _Mover()

        def equations(self):
            calls.append(self.path)
            self.time_event(0.5)
            yield connect(self.u, self.mover.u)
            yield connect(self.free.frame, self.t1.a)

    model = WithRoots()
    before = {id(c): set(vars(c)) for c in [model, *model.components()]}
    flat = mb.flatten(model)
    assert calls == [""]
    assert [float(t) for t in flat.time_events] == [0.5]
    assert flat.variable("mover.x") is not None
    assert {id(c): set(vars(c)) for c in [model, *model.components()]} == before


def test_a_composite_model_may_not_ask_for_roots():
    class Asking(Model):
        free = FreeDir()
        t1 = Turn()

        def equations(self):
            self.is_root(self.free.frame.R)
            yield connect(self.free.frame, self.t1.a)

    with pytest.raises(mb.DeclarationError, match="only components without sub-components"):
        mb.flatten(Asking())


_SLOW_CSV_WRITER = textwrap.dedent("""
    import csv, sys, time
    import numpy as np
    from mbmodel.result import Result

    real_writer = csv.writer

    class Slow:
        def __init__(self, fh):
            self.inner, self.rows = real_writer(fh), 0
        def writerow(self, row):
            self.inner.writerow(row)
            self.rows += 1
            if self.rows == 2000:
                print("half-way", flush=True)
                time.sleep(60)

    csv.writer = Slow
    t = np.linspace(0.0, 1.0, 20001)
    Result(t, np.vstack([t, 2 * t]), ["x", "y"]).to_csv(sys.argv[1])
""")


def test_csv_survives_a_killed_writer(tmp_path):
    import signal
    path = tmp_path / "run.csv"
    path.write_text("time,x\n0.0,1.0\n")
    child = subprocess.Popen([sys.executable, "-c", _SLOW_CSV_WRITER, str(path)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "half-way"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert path.read_text() == "time,x\n0.0,1.0\n"  # the old file, not a cut new one
    left_by_the_killed_writer = {p.name for p in tmp_path.iterdir()} - {"run.csv"}
    from mbmodel.result import Result
    t = np.linspace(0.0, 1.0, 5)
    Result(t, np.vstack([t]), ["x"]).to_csv(path)  # a complete write replaces it
    assert path.read_text().splitlines()[0] == "time [s],x" and path.read_text().count("\n") == 6
    assert {p.name for p in tmp_path.iterdir()} - {"run.csv"} == left_by_the_killed_writer


def test_result_units_interpolation_and_plot_leave_the_backend_alone(tmp_path):
    import matplotlib
    backend = matplotlib.get_backend()
    res = mb.simulate(RCLadder(n=1), 1.0, n_points=11)
    assert res.unit("capacitors[0].v") == "V" and res.unit("time") == "s"
    assert res.unit("der(capacitors[0].v)") == "V/s"
    assert res.at(0.55, "capacitors[0].v") == pytest.approx(
        0.5 * (res["capacitors[0].v"][5] + res["capacitors[0].v"][6]))
    assert set(res.at(0.5, ["capacitors[0].v", "resistors[0].i"])) == {"capacitors[0].v",
                                                                        "resistors[0].i"}
    # an array of times gives an array (numpy's "truth value ... ambiguous" before)
    v = res["capacitors[0].v"]
    np.testing.assert_allclose(res.at([0.55, 0.1], "capacitors[0].v"),
                               [0.5 * (v[5] + v[6]), v[1]], rtol=1e-14)
    fig = res.plot("capacitors[0].v", file=tmp_path / "one.png")  # a single name works
    assert fig.axes[0].get_ylabel() == "[V]"
    assert fig.axes[0].get_legend().get_texts()[0].get_text() == "capacitors[0].v [V]"
    assert matplotlib.get_backend() == backend
    path = tmp_path / "u.csv"
    res.to_csv(path, ["capacitors[0].v"])
    assert path.read_text().splitlines()[0] == "time [s],capacitors[0].v [V]"


def test_state_and_input_vectors_by_name():
    class Driven(mb.Model):
        u = mb.Input()
        x = mb.Variable(start=2.0, fixed=True)
        v = mb.Variable(start=0.5, fixed=True)

        def equations(self):
            yield mb.der(self.x) == self.v
            yield mb.der(self.v) == self.u - self.x

    cm = mb.compile(Driven())
    x = cm.state_vector({"v": -1.0})
    from mbmodel.compiler import per_second
    assert [per_second(u) for u in ("m", "m/s", "rad/s2", "m3/(s.Pa)")] == \
        ["m/s", "m/s2", "rad/s3", "m3/(s.Pa)/s"]
    assert dict(zip(cm.states, x)) == {"x": 2.0, "v": -1.0}  # x keeps its start value
    u = cm.input_vector({"u": 3.0})
    xdot = np.array(cm.ode(x, [], u, cm.parameter_defaults, 0.0)).ravel()
    assert cm.named(xdot) == {"x": -1.0, "v": 1.0}  # d/dt x = v, d/dt v = u - x
    with pytest.raises(mb.SimulationError, match="has no state w"):
        cm.state_vector({"w": 1.0})
    with pytest.raises(mb.SimulationError, match="missing: u"):
        cm.input_vector({})
    with pytest.raises(mb.SimulationError, match="state 'x' must be a number"):
        cm.state_vector({"x": "1"})
    with pytest.raises(ValueError, match="3 values for the 2 states"):
        cm.named([1, 2, 3])


def test_declarations_show_their_values_in_help():
    import pydoc
    from mbmodel.libraries import electrical as el
    assert repr(el.Resistor.R) == ("Parameter(value=1.0, unit='Ohm', doc='Resistance at "
                                   "temperature T_ref')")
    assert repr(mb.Variable(start=0.5, fixed=True, unit="m", doc="height")) == \
        "Variable(start=0.5, fixed=True, unit='m', doc='height')"
    assert "R = Parameter(value=1.0, unit='Ohm'" in pydoc.render_doc(el.Resistor,
                                                                   renderer=pydoc.plaintext)


@pytest.mark.parametrize("make", [lambda: RCLadder(4), OpenLoop, lambda: _MovedInertia(),
                                  lambda: __import__("mb_trees").DrivenChain(2)])
def test_the_outputs_are_every_variable_resolved_one_by_one(make):
    """The output function forms every variable's value as one vector operation (aliases
    as sign * representative + offset, constants, external inputs, chains of aliases);
    it must equal, to the last bit, each variable's own expression through the aliases."""
    import casadi as ca

    from mbmodel.compiler import _expression_of

    cm = mb.compile(make())
    system, s = cm.system, cm.symbols
    bound = [q for q in system.parameters if q.binding is not None]
    _, resolved = ca.substitute_inplace(
        [q.symbol for q in bound] + [system.symbols[v] for v, _ in system.sequence],
        [q.binding for q in bound] + [expr for _, expr in system.sequence],
        [_expression_of(system, name) for name in cm.output_names], False)
    one_by_one = ca.Function("y", [s.x, s.z, s.u, s.p, s.t], [ca.vertcat(*resolved)])
    rng = np.random.default_rng(3)
    for _ in range(3):
        args = [rng.uniform(-1, 1, v.numel()) for v in (s.x, s.z, s.u, s.p)] + [0.4]
        args[3] = np.array(cm.parameter_defaults)
        fast, reference = (np.array(f(*args)).ravel() for f in (cm.output_function, one_by_one))
        assert fast.shape == reference.shape and np.array_equal(fast, reference)
    assert any(name in system.alias for name in cm.output_names)
    # the sources read by position are what looking every name up finds, also for a few
    from mbmodel.compiler import _outputs
    for wanted in (None, set(cm.output_names[1::3])):
        by_position = _outputs(system, wanted, system.symbol_vector)
        by_name = _outputs_by_name(system, wanted)
        assert by_position[0] == by_name[0] and str(by_position[1]) == str(by_name[1])


def _outputs_by_name(system, wanted):
    """The output names and vector, every variable looked up by name in the sorted
    system's alias map (the reference for its value sources by position)."""
    import casadi as ca

    from mbmodel.compiler import _expression_of
    n = len(system.symbols)
    extra = [ca.SX(0)]

    def source(name):
        if name in system.alias:
            rep, sign, offset = system.alias[name]
            if rep is None:
                return n, 1.0, offset
            if rep in system.alias or rep not in system.flat_index:
                extra.append(_expression_of(system, name))
                return n + len(extra) - 1, 1.0, 0.0
            return system.flat_index[rep], sign, offset
        if name not in system.flat_index:  # an external input
            extra.append(system.variables[system.variable_index[name]].symbol)
            return n + len(extra) - 1, 1.0, 0.0
        return system.flat_index[name], 1.0, 0.0

    flat_names = {var.name for var in system.variables}
    names = [var.name for var in system.variables if var.discrete in ("", "variable")
             and (wanted is None or var.name in wanted)]
    names += [name for name in system.names if name not in flat_names
              and name not in system.alias and (wanted is None or name in wanted)]
    rows, signs, offsets = zip(*[source(name) for name in names])
    return names, (ca.vertcat(system.symbol_vector, *extra)[list(rows)] * ca.DM(signs)
                   + ca.DM(offsets))


@pytest.mark.parametrize("make", [lambda: RCLadder(3), lambda: _MovedInertia(),
                                  lambda: __import__("mb_trees").DrivenChain(2)])
def test_the_symbol_vectors_are_the_variables_symbols_in_order(make):
    """Flattening stacks each declaration's symbol at once, and the sorted system selects
    from that vector; both must hold exactly the variables' own scalars, in order
    (matrices column-major, derivatives made one by one in between)."""
    from mbmodel import flatten
    from mbmodel.structure import analyze

    flat = flatten(make())
    assert ([s.element_hash() for s in flat.symbol_vector.elements()]
            == [v.symbol.element_hash() for v in flat.variables])
    # the residuals too: templates' vectors, connections' columns, own equations' scalars
    assert ([r.element_hash() for r in flat.residual_vector.elements()]
            == [eq.residual.element_hash() for eq in flat.equations])
    system = analyze(flat)
    assert ([s.element_hash() for s in system.symbol_vector.elements()]
            == [s.element_hash() for s in system.symbols])
    # the sequence's expressions likewise: the unit blocks' from their groups' vectors
    assert ([e.element_hash() for e in system.sequence_vector.elements()]
            == [expr.element_hash() for _, expr in system.sequence])


class _TwiceTheSame(Model):
    """Two equations that build the same product separately: merging finds it."""

    x = mb.Variable(start=0.3)
    y = mb.Variable(start=0.2)

    def equations(self):
        yield mb.der(self.x) == ca.sin(self.x * self.y) + 1
        yield mb.der(self.y) == ca.sin(self.x * self.y) - self.y


def test_the_right_hand_side_is_merged_up_to_cse_nodes_nodes(monkeypatch):
    """Common subexpressions of the right-hand side are merged when it has at most
    ``CSE_NODES`` nodes (counted as the ode Function sorts them), not above."""
    from mbmodel import compiler

    monkeypatch.setattr(compiler, "CSE_NODES", 0)
    unmerged = mb.compile(_TwiceTheSame()).ode.n_nodes()
    monkeypatch.setattr(compiler, "CSE_NODES", unmerged)
    assert mb.compile(_TwiceTheSame()).ode.n_nodes() < unmerged
    monkeypatch.setattr(compiler, "CSE_NODES", unmerged - 1)
    assert mb.compile(_TwiceTheSame()).ode.n_nodes() == unmerged


def test_members_read_as_their_symbols_named_by_flattening():
    # A member reads as its symbol (made when first read); flattening names every symbol by
    # its full path: members declared in the class and in __init__, and a parameter read
    # before flattening in another instance's binding (the binding follows the new name).
    class Decay(Model):
        k = Parameter(2.0)
        x = Variable(start=1.0, fixed=True)

        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.y = Variable()

        def equations(self):
            yield der(self.x) == -self.k * self.x
            yield self.y == 2 * self.x

    class Pair(Model):
        a = Decay()

        def __init__(self):
            super().__init__()
            self.b = Decay(k=self.a.k * 3)

    model = Pair()
    assert isinstance(model.a.x, ca.SX) and isinstance(model.b.y, ca.SX)
    assert isinstance(Decay.k, Parameter)  # the class's declaration itself
    cm = mb.compile(model)
    assert [str(s) for s in (model.a.x, model.a.k, model.b.y, model.b.k)] == \
        ["a.x", "a.k", "b.y", "b.k"]
    res = cm.simulate(0.5, rtol=1e-10, atol=1e-12)
    assert res.final("b.x") == pytest.approx(np.exp(-3.0), rel=1e-7)
    assert res.final("b.y") == pytest.approx(2 * np.exp(-3.0), rel=1e-7)
    changed = cm.simulate(0.5, params={"a.k": 1.0}, rtol=1e-10, atol=1e-12)
    assert changed.final("b.x") == pytest.approx(np.exp(-1.5), rel=1e-7)


def test_one_declaration_bound_to_two_names_gives_two_members():
    # in a component's class body and in a connector's
    class Twice(Model):
        a = b = Parameter(2.0)
        x = Variable(start=1.0, fixed=True)

        def equations(self):
            yield der(self.x) == -(self.a + 2 * self.b) * self.x

    model = Twice(a=1.0)
    cm = mb.compile(model)
    assert (str(model.a), str(model.b)) == ("a", "b")
    res = cm.simulate(0.5, rtol=1e-10, atol=1e-12)
    assert res.final("x") == pytest.approx(np.exp(-2.5), rel=1e-7)  # a = 1, b = 2

    class Doubled(Connector):
        u = w = Potential()

    class Ends(Model):
        port = Doubled()
        x = Variable(start=0.0, fixed=True)

        def equations(self):
            yield self.port.u == 1.0
            yield self.port.w == 3.0
            yield der(self.x) == self.port.w - self.port.u

    ends = Ends()
    res = mb.compile(ends).simulate(0.5, rtol=1e-10, atol=1e-12)
    assert res.final("x") == pytest.approx(1.0, rel=1e-9)  # x = (3 - 1) t
    assert (str(ends.port.u), str(ends.port.w)) == ("port.u", "port.w")


def test_numpy_functions_and_modifier_starts_in_declarations():
    """What a user writes first: numpy's functions on symbols (casadi 3.8 printed a 20-line
    FutureWarning for them) and a declaration's start given as a modifier is
    (``Variable(start=Fixed(0.5))`` was refused as "not a number")."""
    import warnings

    class Written(mb.Model):
        x = mb.Variable(start=mb.Fixed(0.5))
        y = mb.Variable(start=mb.Guess(2.0), state_select="never")

        def equations(self):
            yield mb.der(self.x) == np.cos(mb.time)
            yield self.y == np.sqrt(1.0 + self.x * self.x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = mb.simulate(Written(), 1.0, n_points=11, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res["x"], 0.5 + np.sin(res.t), atol=1e-8)
    np.testing.assert_allclose(res["y"], np.sqrt(1.0 + res["x"] ** 2), atol=1e-12)
    if hasattr(ca.GlobalOptions, "getNumpyMode"):
        assert ca.GlobalOptions.getNumpyMode() == 0  # the user's choice is left unmade
    with pytest.raises(mb.DeclarationError, match="a guess cannot be fixed"):
        mb.Variable(start=mb.Guess(1.0), fixed=True)


class StartedByParameters(Model):
    """A free inertia whose start angle and speed are parameters (Modelica's
    ``phi(start=phi0, fixed=true)``), and an algebraic variable guessed by one."""
    phi0 = Parameter(0.5, unit="rad")
    w0 = Parameter(2.0, unit="rad/s")
    y0 = Parameter(-1.4)
    y = Variable()

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.load = rot.Inertia(J=2.0, phi=Fixed(self.phi0), w=Fixed(2 * self.w0))
        self.y = mb.Guess(self.y0)   # after construction: as the keyword would

    def equations(self):
        yield self.y ** 2 == 2.25   # two roots: the guess picks -1.5


def test_start_values_given_by_parameters_follow_them_at_run_time():
    cm = mb.compile(StartedByParameters())
    res = cm.simulate(1.0)
    assert (res["load.phi"][0], res["load.w"][0], res["y"][0]) == (0.5, 4.0, -1.5)
    assert res["load.phi"][-1] == pytest.approx(4.5, abs=1e-9)   # free: phi0 + 2 w0 t
    res = cm.simulate(1.0, params={"phi0": 1.0, "w0": -1.0})
    assert res["load.phi"][0] == 1.0 and res["load.phi"][-1] == pytest.approx(-1.0, abs=1e-9)
    # the guess follows its parameter too (it took the default's value): the other root
    assert cm.simulate(1.0, params={"y0": 1.4})["y"][0] == 1.5
    from mbmodel.persist import dumps, loads
    loaded = loads(dumps(cm))
    assert loaded.simulate(1.0, params={"y0": 1.4})["y"][0] == 1.5

    class FromAVariable(Model):
        x = Variable(start=1.0, fixed=True)

        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.z = Variable(start=2 * self.x)

        def equations(self):
            yield mb.der(self.x) == -self.x
            yield self.z == 3 * self.x

    with pytest.raises(mb.DeclarationError, match=r"'z': its start value \(2\.\*x\) depends "
                                                   r"on x, not on parameters alone"):
        mb.compile(FromAVariable())


def test_members_set_after_construction_take_effect_or_are_refused():
    """``m.load.J = 5.0`` and ``m.load.phi = Fixed(0.7)`` after construction were stored as
    plain attributes and ignored: the model ran with J = 2 from phi = 0."""
    class Free(Model):
        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.load = rot.Inertia(J=2.0, phi=Fixed(0.0), w=Fixed(1.0))
            self.torque = rot.ConstantTorque(tau_constant=10.0)

        def equations(self):
            yield mb.connect(self.torque.flange, self.load.flange_a)

    model = Free()
    model.load.J = 5.0
    model.load.phi = Fixed(0.7)
    res = mb.simulate(model, 1.0)
    assert res["load.phi"][0] == 0.7
    assert res["load.phi"][-1] == pytest.approx(0.7 + 1.0 + 0.5 * 10.0 / 5.0, abs=1e-9)
    with pytest.raises(mb.DeclarationError, match="give its start value as Fixed"):
        model.load.w = 3.0
    with pytest.raises(mb.ParameterError, match="outside its bounds"):
        model.load.J = -1.0
    # a misspelt member was a plain attribute, ignored: J = 5 ran on (review)
    with pytest.raises(mb.DeclarationError, match="did you mean 'J'"):
        model.load.j = 8.0
    with pytest.raises(mb.DeclarationError, match="'w0' is not a declared.*did you mean 'w'"):
        model.load.w0 = Fixed(3.0)
    with pytest.raises(mb.DeclarationError, match="'speed' is not a declared.*its variables: "):
        model.load.speed = Fixed(3.0)
    # a number on a new name of a sub-component was a plain attribute too (review)
    with pytest.raises(mb.DeclarationError, match="'Jx' is not a declared.*did you mean 'J'"):
        model.load.Jx = 8.0
    with pytest.raises(mb.DeclarationError, match="'JJ' is not a declared.*did you mean 'J'"):
        model.load.JJ = [8.0]
    model.load._scratch = 8.0
    model.load.index = 3        # a number far from every declared name: bookkeeping, kept
    model.load.note = "plain attributes of other names stay allowed"
    assert mb.simulate(model, 1.0)["load.phi"][-1] == pytest.approx(0.7 + 1.0 + 1.0, abs=1e-9)


def test_initial_conditions_on_a_variable_alias_elimination_removed():
    """b.phi is a.phi through the connection and is eliminated; an initial equation on it
    (written, or from a start given by a parameter) left it free in casadi's initial
    function: a raw 'Initialization failed since variables [b.phi] are free'."""
    class Pair(Model):
        k = Parameter(6.0)

        def __init__(self, written, **modifiers):
            super().__init__(**modifiers)
            self.written = written
            self.a = rot.Inertia(J=2.0, w=Fixed(0.0))
            self.b = rot.Inertia(J=1.0, phi=None if written else Fixed(self.k))

        def equations(self):
            yield mb.connect(self.a.flange_b, self.b.flange_a)

        def initial_equations(self):
            if self.written:
                yield self.b.phi == self.k

    for written in (True, False):
        cm = mb.compile(Pair(written))
        assert cm.simulate(0.1, params={"k": 2.5})["a.phi"][0] == pytest.approx(2.5)


def test_a_guess_on_a_variable_alias_elimination_removed_reaches_its_root():
    """A guess (a number or a parameter) on ``b`` where ``a = -b + 1`` keeps ``a``: it was
    dropped, the ImplicitStartWarning blamed ``a`` and Newton started from 0, where
    ``a**2 = 9`` has zero slope (Modelica tools take an alias set's start from a member)."""
    class Mirrored(Model):
        g0 = Parameter(-2.0)
        a = Variable()
        b = Variable()

        def __init__(self, guess, **modifiers):
            super().__init__(**modifiers)
            self.b = mb.Guess(self.g0 if guess == "parameter" else -2.0)

        def equations(self):
            yield self.a == 1 - self.b
            yield self.a ** 2 == 9.0  # a = 3 near the guess b = -2 (a = 3); or a = -3

    for guess in ("number", "parameter"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", mb.ImplicitStartWarning)
            cm = mb.compile(Mirrored(guess))
        assert cm.algebraic == ["a"] and cm.z_start.tolist() == [3.0]
        assert cm.initialize()[1].tolist() == [3.0]
    # the guess follows its parameter: b = 4 is a = -3, the other root
    assert cm.initialize(params={"g0": 4.0})[1] == pytest.approx([-3.0], abs=1e-12)


def test_a_guess_on_an_element_voltage_reaches_the_node_potential_kept_for_it():
    """A source, a resistor and i = v**3 - v with a Guess(-1) on its voltage, at a node of
    three pins (a second resistor): alias elimination keeps the node's potential ``r.n.v``,
    and ``d.v = d.p.v - d.n.v`` with ``d.n`` grounded has three variables there, so the
    guess was lost: Newton started from 0, landed on the middle root, and the
    ImplicitStartWarning asked for a modifier on a connector variable (review). The root
    near -1 is the one the guess picks; another guess picks another root."""
    class Cubic(el.OnePort):
        def equations(self):
            yield from super().equations()
            yield self.i == self.v ** 3 - self.v

    class Circuit(Model):
        def __init__(self, guess, **modifiers):
            super().__init__(**modifiers)
            self.src = el.ConstantVoltage(V=0.1)
            self.r = el.Resistor(R=10.0)
            self.r2 = el.Resistor(R=100.0)
            self.d = Cubic(v=mb.Guess(guess))
            self.g = el.Ground()

        def equations(self):
            yield mb.connect(self.src.p, self.r.p)
            yield mb.connect(self.r.n, self.d.p)
            yield mb.connect(self.r2.p, self.d.p)
            yield mb.connect(self.d.n, self.g.p)
            yield mb.connect(self.r2.n, self.g.p)
            yield mb.connect(self.src.n, self.g.p)

    # (0.1 - v)/10 - v/100 = v**3 - v
    roots = np.sort(np.roots([1.0, 0.0, -1.0 + 0.1 + 0.01, -0.01]).real)
    for guess, root in ((-1.0, roots[0]), (1.0, roots[2])):
        with warnings.catch_warnings():
            warnings.simplefilter("error", mb.ImplicitStartWarning)
            cm = mb.compile(Circuit(guess))
        assert cm.algebraic == ["r.n.v"] and cm.z_start.tolist() == [guess]
        assert cm.simulate(0.1)["d.v"][-1] == pytest.approx(root, abs=1e-12)


def test_states_that_fixed_starts_determine_through_the_equations_are_not_implicit():
    """m2 moves twice as far as m1 (a lever); m1's position and speed are fixed but never
    states, so m2's speed is one, with no start of its own: the ImplicitStartWarning said
    it "starts from 0", though the initialization solves it from m1's (an alias's start is
    taken over; a lever's is not an alias). A state nothing fixes still warns
    (test_errors)."""
    class Flange(Connector):
        s = Potential()
        f = Flow()

    class Mass(Model):
        m = Parameter(1.0)
        a, b = Flange(), Flange()
        s, v = Variable(), Variable()

        def equations(self):
            yield self.s == self.a.s
            yield self.s == self.b.s
            yield der(self.s) == self.v
            yield self.m * der(self.v) == self.a.f + self.b.f

    class Lever(Model):
        a, b = Flange(), Flange()

        def equations(self):
            yield self.b.s == 2 * self.a.s
            yield self.a.f + 2 * self.b.f == 0

    class Spring(Model):
        a, b = Flange(), Flange()

        def equations(self):
            yield self.b.f == 4.0 * (self.b.s - self.a.s)
            yield self.a.f + self.b.f == 0

    class Wall(Model):
        a = Flange()

        def equations(self):
            yield self.a.s == 0

    class Levered(Model):
        m1 = Mass(m=1.0, s=mb.Start(0.5, fixed=True, state_select="never"),
                  v=mb.Start(0.0, fixed=True, state_select="never"))
        lever = Lever()
        m2 = Mass(m=3.0)
        spring = Spring()
        wall = Wall()

        def equations(self):
            yield connect(self.wall.a, self.spring.a)
            yield connect(self.spring.b, self.m1.a)
            yield connect(self.m1.b, self.lever.a)
            yield connect(self.lever.b, self.m2.a)

    with warnings.catch_warnings():
        warnings.simplefilter("error", mb.ImplicitStartWarning)
        cm = mb.compile(Levered())
    assert "m2.v" in cm.states and cm.implicit_starts == []
    # (m1 + 4 m2) s1'' = -4 s1: s1 = 0.5 cos(t/sqrt(3.25)), m2 at twice that
    res = cm.simulate(1.0, n_points=11)
    np.testing.assert_allclose(res["m2.s"], np.cos(res.t / math.sqrt(13 / 4)), atol=1e-7)


def test_starts_from_parameters_in_vectors_and_what_is_refused():
    class Pair(Model):
        a = Parameter(1.0)
        x = Variable(shape=2)

        def __init__(self, start, **modifiers):
            super().__init__(**modifiers)
            self.x = start(self)

        def equations(self):
            yield mb.der(self.x) == -self.x

    for start, expected in ((lambda m: Fixed([m.a, 0.0]), [2.0, 0.0]),
                            (lambda m: Fixed(m.a), [2.0, 2.0])):    # one value for both
        res = mb.simulate(Pair(start), 1.0, params={"a": 2.0})
        assert [res["x[0]"][0], res["x[1]"][0]] == expected

    class Counter(Model):
        n0 = Parameter(3.0)

        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.n = mb.Discrete(start=self.n0)

    with pytest.raises(mb.DeclarationError, match="a discrete variable's start value is a "
                                                  "number, not the expression n0"):
        Counter()


def test_a_member_kept_at_its_default_or_set_inside_equations():
    class Decay(Model):
        T = Parameter(2.0)
        x = Variable(start=1.0, fixed=True)

        def __init__(self, T=None, **modifiers):
            super().__init__(**modifiers)
            self.T = T if T is not None else self.T   # keeps the default: no self-binding

        def equations(self):
            yield mb.der(self.x) == -self.x / self.T

    assert mb.simulate(Decay(), 1.0)["x"][-1] == pytest.approx(math.exp(-0.5), rel=1e-6)

    class Late(Decay):
        def equations(self):
            self.T = 4.0
            yield from super().equations()

    with pytest.raises(mb.DeclarationError, match="'T' is a declared parameter; it cannot "
                                                  "be set while the model's equations are "
                                                  "collected"):
        mb.compile(Late())


def test_an_array_given_as_a_value_is_copied_not_kept():
    """Components built in a loop from one buffer filled again for each (a numpy habit):
    the values given are the ones each component keeps, for parameters and for starts.
    Parameters kept the buffer, so all three drifted at the last rate (x(1) = 2, 2, 2)."""
    class Drift(mb.Model):
        rate = mb.Parameter(np.zeros(2))
        x = mb.Variable(shape=2, start=0.0, fixed=True)

        def equations(self):
            yield mb.der(self.x) == self.rate

    class Bank(mb.Model):
        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            rate, start = np.empty(2), np.empty(2)
            for k in range(3):
                rate[:], start[:] = [k, 10.0 * k], [-k, 1.0]
                self.add(f"d{k}", Drift(rate=rate, x=mb.Fixed(start)))

    res = mb.simulate(Bank(), 1.0, n_points=3)
    for k in range(3):   # x(1) = start + rate
        np.testing.assert_allclose(res[f"d{k}.x[0]"][-1], 0.0, atol=1e-9)
        np.testing.assert_allclose(res[f"d{k}.x[1]"][-1], 1.0 + 10.0 * k, rtol=1e-9)
    given = np.array([1.0, 2.0])
    drift = Drift(rate=given)
    given[0] = np.nan   # after construction: not the component's value any more
    np.testing.assert_allclose(mb.simulate(drift, 1.0, n_points=2)["x[0]"][-1], 1.0,
                               rtol=1e-9)


def test_outputs_asked_for_keep_what_the_run_time_state_choice_reads():
    """compile(outputs=["F"]) on the Cartesian pendulum (a state set chosen at run time):
    the choice read y, which was not kept, and the run ended in a bare KeyError. A swing
    over the horizontal (x = 0.95 m of a 1 m rod) switches the choice; the rod force
    follows the run with every output."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "examples"))
    from cartesian_pendulum import CartesianPendulum

    model = CartesianPendulum()
    model.x = mb.Fixed(0.95)
    full = mb.compile(model).simulate(3.0, n_points=31)
    asked = mb.compile(model, outputs=["F"])
    res = asked.simulate(3.0, n_points=31)
    assert "y" in asked.output_names
    assert len(res.state_switches) == len(full.state_switches) > 0
    np.testing.assert_allclose(res["F"], full["F"], rtol=1e-9, atol=1e-9)
    # a variable not asked for is not in the result (vy, a state of the other choice only,
    # was NaN where the asked choice ran)
    with pytest.raises(KeyError, match="no variable 'vy'"):
        res["vy"]
    # and against physics, with vy asked for: energy (m = 1, g = 9.81) holds, and the rod
    # force is the centripetal force plus gravity's share along the rod, F = v^2 - g y
    res = mb.compile(model, outputs=["F", "vy"]).simulate(3.0, n_points=31)
    speed2 = res["vx"] ** 2 + res["vy"] ** 2
    energy = 0.5 * speed2 + 9.81 * res["y"]
    assert np.max(np.abs(energy - energy[0])) < 1e-5
    np.testing.assert_allclose(res["F"], speed2 - 9.81 * res["y"], atol=1e-5)


def test_state_vector_takes_a_vector_by_its_declared_name():
    """cm.state_vector({"x": [...]}) refused the declared name of a vector state (its
    entries had to be spelt out), though params= takes vector names (review)."""
    class Vec(mb.Model):
        x = mb.Variable(shape=3, start=[1.0, 2.0, 3.0], fixed=True)
        y = mb.Variable(start=0.5, fixed=True)

        def equations(self):
            yield mb.der(self.x) == -self.x
            yield mb.der(self.y) == 0.0

    cm = mb.compile(Vec())
    x = cm.named(cm.state_vector({"x": [4.0, 5.0, 6.0]}))
    assert [x[f"x[{k}]"] for k in range(3)] == [4.0, 5.0, 6.0] and x["y"] == 0.5
    with pytest.raises(mb.SimulationError, match=r"state_vector\['x'\] has shape \(2,\); "
                                                 r"'x' has shape \(3,\)"):
        cm.state_vector({"x": [4.0, 5.0]})


def test_a_derivative_made_a_state_by_der_of_der_warns_without_a_start():
    """der(der(x)) == -x makes der(x) a state, and it started from 0 without the
    ImplicitStartWarning that a declared v = der(x) gets (review). An initial equation on
    der(x) gives it its start. x'' = -x from x = 1: x(1) = cos 1, or with x'(0) = 0.5,
    cos 1 + 0.5 sin 1."""
    class Oscillator(mb.Model):
        x = mb.Variable(start=1.0, fixed=True)

        def __init__(self, slope=None, **modifiers):
            super().__init__(**modifiers)
            self.slope = slope

        def equations(self):
            yield mb.der(mb.der(self.x)) == -self.x

        def initial_equations(self):
            if self.slope is not None:
                yield mb.der(self.x) == self.slope

    with pytest.warns(mb.ImplicitStartWarning, match=r"start from 0: der\(x\)"):
        cm = mb.compile(Oscillator())
    assert cm.states == ["x", "der(x)"]
    assert cm.simulate(1.0, n_points=2)["x"][-1] == pytest.approx(math.cos(1.0), rel=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", mb.ImplicitStartWarning)
        given = mb.compile(Oscillator(slope=0.5))
    assert given.simulate(1.0, n_points=2)["x"][-1] == pytest.approx(
        math.cos(1.0) + 0.5 * math.sin(1.0), rel=1e-6)


class Oscillator(Model):
    """An inertia on a spring, released at 0.1 rad: phi = 0.1 cos(sqrt(c/J) t)."""
    load = rot.Inertia(J=1.0, phi=Fixed(0.1), w=Fixed(0.0))
    spring = rot.Spring(c=10.0)
    fixed = rot.Fixed()

    def equations(self):
        yield mb.connect(self.fixed.flange, self.spring.flange_a)
        yield mb.connect(self.spring.flange_b, self.load.flange_a)


def test_a_compiled_model_warns_when_its_model_was_changed_after_compile():
    """A compiled model is a snapshot: ``model.spring.c = 1000`` after compile was ignored
    without a word (review). It warns once per new change and keeps its values."""
    model = Oscillator()
    cm = mb.compile(model)
    before = cm.simulate(1.0).final("load.phi")
    model.spring.c = 1000.0
    with pytest.warns(mb.ModelChangedWarning, match=r"Oscillator was changed after it was "
                                                    r"compiled \(spring.c\)"):
        assert cm.simulate(1.0).final("load.phi") == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm.simulate(1.0)                     # said once
        recompiled = mb.compile(model)
        assert recompiled.simulate(1.0).final("load.phi") == pytest.approx(
            0.1 * np.cos(np.sqrt(1000.0)), abs=1e-6)
    model.load.phi = Fixed(0.5)
    with pytest.warns(mb.ModelChangedWarning, match=r"\(spring.c, load.phi\)"):
        cm.linearize()
    with pytest.warns(mb.ModelChangedWarning, match=r"\(load.phi\)"):
        recompiled.initialize()
    model.load.flange_b.phi = Fixed(0.5)     # through a connector: noted too
    with pytest.warns(mb.ModelChangedWarning, match=r"load.flange_b.phi\)"):
        mb.initialize(cm)


def test_a_change_made_to_a_declaration_directly_is_noted_too():
    """``model.load.declaration("phi").start = 0.5`` changes the member object itself, which
    ModelChangedWarning did not see (noted in the last review): it is seen, as is a
    parameter's value set there; a new model built (and compiled) meanwhile is not a
    change of the old one."""
    model = Oscillator()
    cm = mb.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", mb.ModelChangedWarning)
        other = Oscillator()
        other.load.J = 2.0
        mb.compile(other)
        cm.simulate(0.5)
    model.load.declaration("phi").start = 0.5
    model.spring.declaration("c").value = 5.0
    with pytest.warns(mb.ModelChangedWarning, match=r"\(load.phi, spring.c\)"):
        assert cm.simulate(0.5).final("load.phi") == pytest.approx(
            0.1 * math.cos(math.sqrt(10.0) * 0.5), abs=1e-6)


class _SteppedLater(Model):
    """A ramp that starts at t = 1, the event declared in equations(); a period in
    __init__."""

    x = mb.Variable(start=0.0, fixed=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.time_scale(4.0)

    def equations(self):
        self.time_event(1.0)
        self.time_scale(0.5)
        yield mb.der(self.x) == mb.functions.if_else(mb.time >= 1.0, 1.0, 0.0)


def test_compiling_a_model_twice_declares_the_events_of_its_equations_once():
    # equations() declare their events for the compile that runs them: kept on the
    # instance, the second compile had the event twice and the model's list grew
    model = _SteppedLater()
    first, second = mb.compile(model), mb.compile(model)
    for cm in (first, second):
        assert [float(t) for t in cm.system.time_events] == [1.0]
        assert sorted(float(s) for s in cm.system.time_scales) == [0.5, 4.0]
    assert len(model._time_events) == 0 and len(model._time_scales) == 1  # (__init__'s)
    res = second.simulate(2.0, n_points=5)
    assert np.allclose(res["x"], np.maximum(res.t - 1.0, 0.0), atol=1e-9)


def test_a_compiled_model_does_not_keep_its_model_alive():
    import gc
    import weakref
    model = RCLadder()
    alive = weakref.ref(model)
    cm = mb.compile(model)
    del model
    gc.collect()
    assert alive() is None   # the flat model holds names, not the user's objects
    assert np.isfinite(cm.simulate(1e-3, n_points=3).t).all()


def test_the_compiler_imports_nothing_of_the_running_side():
    # The compiler's stages import no module that runs a compiled model (simulation,
    # initialization, generated C, saving): those import the compiler, and mbmodel.compiled
    # joins them above it. Read from every module's imports, those inside functions too.
    import ast
    import pathlib

    import networkx as nx

    package = pathlib.Path(mb.__file__).parent
    imports = nx.DiGraph()
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = ([node.module.split(".")[0]] if node.module else
                           [alias.name for alias in node.names])
                imports.add_edges_from((path.stem, target) for target in targets)
    running = {"compiled", "simulate", "initialization", "linearize", "events", "native",
               "codegen", "kernels", "explicit", "integrators", "state_selection", "persist",
               "fmu", "sweep", "result", "animation"}
    assert running <= set(imports)  # (every name above is a module that imports something)
    reached = nx.descendants(imports, "compiler")
    assert "structure" in reached and "flatten" in reached
    assert not reached & running, sorted(reached & running)


def test_the_compiler_makes_the_data_and_mb_compile_adds_the_runs():
    from mbmodel.compiler import CompiledCore, compile as compile_stages
    core = compile_stages(RCLadder(2))
    assert type(core) is CompiledCore and not hasattr(core, "simulate")
    cm = mb.compile(RCLadder(2))
    assert isinstance(cm, CompiledCore) and type(cm) is mb.CompiledModel
    assert core.states == cm.states
    # mb.simulate runs either, to the same numbers; the capacitor voltages of the ladder
    # rise towards the source's 1 V
    a, b = mb.simulate(core, 20.0), cm.simulate(20.0)
    for name in cm.states:
        np.testing.assert_array_equal(a[name], b[name])
        assert 0.99 < b[name][-1] < 1.0 + 1e-9


def test_a_variable_read_alone_is_its_row_of_the_whole_table(monkeypatch):
    # A variable read before the whole table is computed from what it needs alone (one of a
    # 100-link chain: ~20 ms, against ~3 s for the table): each equals its row of the
    # table. Parameters changed for the run (R: the resistors' voltages read it) and the
    # symbolic parameters of a multibody chain reach the rows as they reach the table.
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from mb_trees import TreeModel, random_tree

    import importlib
    import mbmodel.result
    simulation = importlib.import_module("mbmodel.simulate")  # (mb.simulate: the function)
    # (a small model's table is cheaper than a variable alone: these compute alone anyway)
    monkeypatch.setattr(simulation, "TABLE_ALONE", 0)
    monkeypatch.setattr(mbmodel.result, "ROWS_READ_ALONE", 10 ** 6)  # every row alone
    runs = [mb.compile(RCLadder(3)).simulate(2.0, params={"resistors[1].R": 2.5},
                                              n_points=41),
            mb.compile(TreeModel(random_tree(4, np.random.default_rng(3)))).simulate(
                0.3, n_points=31)]
    for res in runs:
        alone = {name: res[name].copy() for name in res.names}
        assert res._values is None  # (read row by row: the table was not computed)
        table = res.values
        for k, name in enumerate(res.names):
            np.testing.assert_array_equal(alone[name], table[k], err_msg=name)
    ladder = runs[0]
    np.testing.assert_allclose(ladder["resistors[1].v"], 2.5 * ladder["resistors[1].i"],
                               rtol=1e-12, atol=1e-15)
    head = mb.compile(RCLadder(2)).simulate(1.0, n_points=11).head(4)
    assert len(head["resistors[0].i"]) == 4 and head._values is None
    # a few variables asked together (a table, a plot) are computed in one Function; all of
    # them (or a quarter or more), as the table
    res = mb.compile(RCLadder(3)).simulate(1.0, n_points=11)
    few = ["resistors[0].i", "resistors[2].v", "capacitors[1].i"]
    frame = res.to_dataframe(few)
    assert res._values is None and set(few) <= set(res._read)
    for name in few:
        np.testing.assert_array_equal(frame[name].to_numpy(), res.values[res.names.index(name)])
    res = mb.compile(RCLadder(3)).simulate(1.0, n_points=11)
    assert len(res.to_dataframe().columns) == len(res.names) and res._values is not None
    # read one by one, as many as a loop over names does: after ROWS_READ_ALONE of them,
    # the table serves the rest
    monkeypatch.setattr(mbmodel.result, "ROWS_READ_ALONE", 32)
    from mbmodel.result import ROWS_READ_ALONE
    cm = mb.compile(RCLadder(12))
    table = cm.simulate(1.0, n_points=11).values
    res = cm.simulate(1.0, n_points=11)
    computed = [k for k, name in enumerate(res.names) if name not in res.known_names]
    assert len(computed) > ROWS_READ_ALONE + 5
    for k in computed[:ROWS_READ_ALONE]:
        np.testing.assert_array_equal(res[res.names[k]], table[k])
    assert res._values is None
    for k in computed[ROWS_READ_ALONE:]:
        np.testing.assert_array_equal(res[res.names[k]], table[k])
    assert res._values is not None and len(res._read) == ROWS_READ_ALONE
    # a small model's result (its table below TABLE_ALONE instruction evaluations) computes
    # the table on the first read; a large one's does not
    monkeypatch.undo()
    small = mb.compile(RCLadder(3)).simulate(1.0, n_points=11)
    assert not small.computes_alone
    small["resistors[0].i"]
    assert small._values is not None
    chain = mb.compile(TreeModel(random_tree(30, np.random.default_rng(1), chain=True)),
                       parameters="constant")
    large = chain.simulate(0.1, n_points=501)
    assert chain.output_function.n_instructions() * 501 > simulation.TABLE_ALONE
    assert large.computes_alone
    large["body15.frame_a.r_0[0]"]
    assert large._values is None


def test_two_threads_reading_one_results_table_compute_it_once():
    """A result's table is computed by one thread, once: another thread asking meanwhile
    waits for it (before, it could call the computation the first had already dropped)."""
    import threading
    import time
    from mbmodel.result import Result
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.05)  # (long enough that the other thread asks meanwhile)
        return np.arange(6.0).reshape(2, 3)

    res = Result(np.arange(3.0), compute, ["a", "b"])
    seen, errors = [], []

    def read():
        try:
            seen.append(res.values)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(calls) == 1
    assert all(values is seen[0] for values in seen)
    np.testing.assert_array_equal(res["b"], [3.0, 4.0, 5.0])
