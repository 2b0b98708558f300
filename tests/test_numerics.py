"""The numeric core never answers silently wrong: hidden constraints found by exact linear
elimination, linear dependencies named at compile time, linear blocks solved with pivoting,
and a block that becomes singular during a run reported with its equations."""

import math

import casadi as ca
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbmodel as mb
from mbmodel import Model, Variable, connect
from mbmodel.libraries import electrical as el
from mbmodel.libraries import rotational as rot
from mbmodel.linear import integer_linear_form, reduce_linear

TIGHT = dict(rtol=1e-10, atol=1e-12)


# ---- the elimination itself ----------------------------------------------------------------

def test_integer_linear_form_separates_coefficients_and_offset():
    x, y, t, p = (ca.SX.sym(n) for n in "xytp")
    columns = {x.element_hash(): 0, y.element_hash(): 1}
    coefficients, offset = integer_linear_form(x - 2 * y + ca.sin(t) + 3 + y / 4, columns)
    assert coefficients == {0: 1, 1: -2 + 0.25}
    assert sorted(v for _, v in offset.values()) == [1, 3]
    assert integer_linear_form(x * y, columns) is None
    assert integer_linear_form(p * x + y, columns) is None  # parameter coefficient
    assert integer_linear_form(ca.sin(x) + y, columns) is None
    assert integer_linear_form(0.1 * x + y, columns) is None  # 0.1 is not exact in binary


def test_hidden_constraint_between_states_replaces_its_equation():
    va, v1, v2 = (ca.SX.sym(n) for n in ("va", "v1", "v2"))
    equations = [v1 - va, v2 - va]  # v1 = va, v2 = va: v1 - v2 = 0 is hidden
    red = reduce_linear(equations, [va, v1, v2], [False, True, True])
    assert len(red.replaced) == 1 and not red.dependent
    (e, (expr, sources)), = red.replaced.items()
    assert sources == [0, 1]
    f = ca.Function("f", [v1, v2], [expr])
    assert float(f(2.0, 2.0)) == 0.0 and float(f(3.0, 2.0)) != 0.0


def test_dependent_rows_are_reported_as_redundant_or_contradictory():
    x, y = ca.SX.sym("x"), ca.SX.sym("y")
    red = reduce_linear([x + 2 * y - 1, 2 * x + 4 * y - 3], [x, y], [False, False])
    assert red.dependent == [([0, 1], False)]
    red = reduce_linear([x + 2 * y - 1, 2 * x + 4 * y - 2], [x, y], [False, False])
    assert red.dependent == [([0, 1], True)]


def _walks(monkeypatch):
    """Count the walks of equations (integer_linear_form) during a reduction."""
    import mbmodel.linear as linear

    count = [0]
    walk = linear.integer_linear_form

    def counted(*args, **kwargs):
        count[0] += 1
        return walk(*args, **kwargs)
    monkeypatch.setattr(linear, "integer_linear_form", counted)
    return count


def _same_reduction(a, b):
    assert ({e: (str(expr), used) for e, (expr, used) in a.replaced.items()}
            == {e: (str(expr), used) for e, (expr, used) in b.replaced.items()})
    assert a.dependent == b.dependent


def test_known_coefficients_spare_the_walk_where_nothing_is_combined(monkeypatch):
    """Coefficients known from the classes are trusted: an equation the elimination never
    combines is not walked, and the result is the walks' result."""
    x, y, z, w = (ca.SX.sym(n) for n in "xyzw")
    t = ca.SX.sym("t")
    equations = [x - ca.sin(t), y - 2 * x, z + y / 4 - 3, w - z]
    known = [{0: 1.0}, {1: 1.0, 0: -2.0}, {2: 1.0, 1: 0.25}, {3: 1.0, 2: -1.0}]
    count = _walks(monkeypatch)
    trusted = reduce_linear(equations, [x, y, z, w], [False] * 4, coefficients=known)
    assert count[0] == 0
    _same_reduction(trusted, reduce_linear(equations, [x, y, z, w], [False] * 4))
    assert count[0] == 4


def test_known_coefficients_that_are_combined_or_reported_are_walked_first(monkeypatch):
    va, v1, v2 = (ca.SX.sym(n) for n in ("va", "v1", "v2"))
    equations = [v1 - va, v2 - va]  # the hidden constraint v1 - v2 = 0 combines both
    known = [{1: 1.0, 0: -1.0}, {2: 1.0, 0: -1.0}]
    count = _walks(monkeypatch)
    trusted = reduce_linear(equations, [va, v1, v2], [False, True, True], coefficients=known)
    assert count[0] == 2 and len(trusted.replaced) == 1
    _same_reduction(trusted, reduce_linear(equations, [va, v1, v2], [False, True, True]))
    x, y = ca.SX.sym("x"), ca.SX.sym("y")  # a dependency is reported with its offsets
    equations = [x + 2 * y - 1, 2 * x + 4 * y - 3]
    trusted = reduce_linear(equations, [x, y], [False, False],
                            coefficients=[{0: 1.0, 1: 2.0}, {0: 2.0, 1: 4.0}])
    assert trusted.dependent == [([0, 1], False)]


@pytest.mark.parametrize("scaled", [False, True])
def test_known_coefficients_the_walk_contradicts_are_dropped(scaled):
    """Trusted rows are checked when the elimination combines them: a disagreement starts
    it again from the walks alone (same result as without known coefficients). Here a
    wrong coefficient, and a right one that is not exact: 10 * 0.1 is 1 in floating point
    (the derivative), but 0.1 is not a small-denominator rational (the walk)."""
    va, v1, v2 = (ca.SX.sym(n) for n in ("va", "v1", "v2"))
    if scaled:
        equations = [v1 - 10 * (0.1 * va + 1) + 10, v2 - va]  # casadi keeps the 0.1
        known = [{1: 1.0, 0: -1.0}, {2: 1.0, 0: -1.0}]
    else:
        equations, known = [v1 - va, v2 - va], [{1: 1.0, 0: -2.0}, {2: 1.0, 0: -1.0}]
    walked = reduce_linear(equations, [va, v1, v2], [False, True, True])
    assert bool(walked.replaced) != scaled
    _same_reduction(reduce_linear(equations, [va, v1, v2], [False, True, True],
                                  coefficients=known), walked)


def test_a_function_with_constant_derivative_is_not_trusted_as_linear():
    """floor(x) has derivative 0: known coefficients would call y - floor(x) linear in y
    alone; combining it with another row walks it, and the walk refuses it."""
    x, y, z = (ca.SX.sym(n) for n in "xyz")
    equations = [y - ca.floor(x), y - z, x - z]
    known = [{1: 1.0}, {1: 1.0, 2: -1.0}, {0: 1.0, 2: -1.0}]
    _same_reduction(reduce_linear(equations, [x, y, z], [True, False, True],
                                  coefficients=known),
                    reduce_linear(equations, [x, y, z], [True, False, True]))


# ---- models with hidden constraints ---------------------------------------------------------

class ParallelCapacitors(Model):
    """Two capacitors in parallel between two non-ground nodes, fed through resistors."""

    src = el.SineVoltage(V=1.0, f=1.0)
    r1 = el.Resistor(R=1.0)
    c1 = el.Capacitor(C=1.0)
    c2 = el.Capacitor(C=2.0)
    r2 = el.Resistor(R=2.0)
    ground = el.Ground()

    def equations(self):
        yield connect(self.src.p, self.r1.p)
        yield connect(self.r1.n, self.c1.p, self.c2.p)
        yield connect(self.c1.n, self.c2.n, self.r2.p)
        yield connect(self.r2.n, self.src.n, self.ground.p)


def test_parallel_capacitors_between_floating_nodes_match_one_equivalent_capacitor():
    cm = mb.compile(ParallelCapacitors())
    assert len(cm.system.states) == 1  # one of the two voltages, the other is its alias
    res = cm.simulate(2.0, **TIGHT)
    # Equivalent circuit: C = 3 in series with R = 3: dv/dt = (sin(2 pi t) - v) / 9
    ref = solve_ivp(lambda t, v: (np.sin(2 * np.pi * t) - v) / 9.0, (0.0, 2.0), [0.0],
                    rtol=1e-12, atol=1e-14, dense_output=True)
    for t in (0.5, 1.3, 2.0):
        k = int(np.argmin(abs(res.t - t)))
        assert res["c1.v"][k] == pytest.approx(ref.sol(res.t[k])[0], abs=1e-9)
        assert res["c2.v"][k] == pytest.approx(res["c1.v"][k], abs=1e-12)
        # the charge splits in proportion to the capacitances
        assert res["c2.i"][k] == pytest.approx(2.0 * res["c1.i"][k], rel=1e-7, abs=1e-12)


class CapacitorAcrossFloatingSource(Model):
    src = el.SineVoltage(V=2.0, f=0.5)
    cap = el.Capacitor(C=0.5)
    r = el.Resistor(R=10.0)
    ground = el.Ground()

    def equations(self):
        yield connect(self.src.p, self.cap.p)
        yield connect(self.src.n, self.cap.n, self.r.p)
        yield connect(self.r.n, self.ground.p)


def test_capacitor_across_a_floating_source_follows_the_source():
    res = mb.simulate(CapacitorAcrossFloatingSource(), 1.5, n_points=31, **TIGHT)
    w = 2 * math.pi * 0.5
    assert np.allclose(res["cap.v"], 2.0 * np.sin(w * res.t), atol=1e-9)
    assert np.allclose(res["cap.i"], 0.5 * 2.0 * w * np.cos(w * res.t), atol=1e-7)
    assert np.allclose(res["r.i"], 0.0, atol=1e-9)  # nothing closes a loop through r


class ParallelDampers(Model):
    """A damper in parallel with a spring-damper between two massless nodes: both relative
    angles are preferred states, equal through the node angles (1-D analog of parallel
    capacitors)."""

    torque = rot.ConstantTorque(tau_constant=4.0)
    damper = rot.Damper(d=1.0)
    spring_damper = rot.SpringDamper(c=2.0, d=1.0)
    to_housing = rot.Damper(d=3.0)
    fixed = rot.Fixed()

    def equations(self):
        yield connect(self.torque.flange, self.damper.flange_a, self.spring_damper.flange_a)
        yield connect(self.damper.flange_b, self.spring_damper.flange_b,
                      self.to_housing.flange_a)
        yield connect(self.to_housing.flange_b, self.fixed.flange)


def test_damper_parallel_to_spring_damper_between_massless_nodes():
    cm = mb.compile(ParallelDampers())
    res = cm.simulate(2.0, n_points=21, **TIGHT)
    # Node balances: 2 w_rel + 2 phi_rel = -4 (phi_rel(0) = 0); 3 w_B = 4.
    assert np.allclose(res["spring_damper.phi_rel"], -2.0 * (1 - np.exp(-res.t)), atol=1e-8)
    assert np.allclose(res["damper.phi_rel"], res["spring_damper.phi_rel"], atol=1e-12)
    assert np.allclose(res["to_housing.w_rel"], -4.0 / 3.0, atol=1e-9)


# ---- singular systems found at compile time ---------------------------------------------------

class Inconsistent(Model):
    x = Variable()
    y = Variable()

    def equations(self):
        yield self.x + 2 * self.y == 1
        yield 2 * self.x + 4 * self.y == 3


class Redundant(Model):
    x = Variable()
    y = Variable()

    def equations(self):
        yield self.x + 2 * self.y == 1
        yield 2 * self.x + 4 * self.y == 2


def test_numerically_singular_linear_system_is_named_at_compile_time():
    with pytest.raises(mb.StructuralSingularityError) as info:
        mb.compile(Inconsistent())
    message = str(info.value)
    assert "linearly dependent" in message and "contradictory" in message
    assert "'((x+(2.*y))==1)'" in message and "'(((2.*x)+(4*y))==3)'" in message
    with pytest.raises(mb.StructuralSingularityError, match="redundant"):
        mb.compile(Redundant())


# ---- linear blocks solved with pivoting at run time -------------------------------------------

_M0 = np.array([[2.0e-8, 1.0e-2, 3.0e-8, -1.0e-8],
                [1.0, -3.0e6, 2.0, 0.5],
                [-2.0, 1.5e6, 0.0, 1.0],
                [0.3, 2.0e6, -1.0, 4.0]])


class BadlyScaledBlock(Model):
    """A regular 4x4 linear block with rows and columns scaled over 14 orders of magnitude
    and a structural zero on the diagonal; coefficients vary with time so the block is
    solved at run time."""

    x0 = Variable()
    x1 = Variable()
    x2 = Variable()
    x3 = Variable()
    q = Variable(start=0.0, fixed=True)

    def equations(self):
        xs = [self.x0, self.x1, self.x2, self.x3]
        s = 1 + 0.1 * mb.functions.sin(mb.time)
        for i in range(4):
            yield sum(_M0[i, j] * s ** (j + 1) * xs[j] for j in range(4)
                      if _M0[i, j] != 0.0) == float(i + 1) * s
        yield mb.der(self.q) == self.x0


def test_badly_scaled_linear_block_is_as_accurate_as_lapack():
    cm = mb.compile(BadlyScaledBlock())
    assert any(b.kind == "linear" and len(b.tear_vars) == 4 for b in cm.system.blocks)
    res = cm.simulate(2.0, n_points=9, **TIGHT)
    for k, t in enumerate(res.t):
        s = 1 + 0.1 * np.sin(t)
        A = _M0 * np.array([s ** (j + 1) for j in range(4)])[None, :]
        b = np.arange(1.0, 5.0) * s
        expected = np.linalg.solve(A, b)
        got = np.array([res[f"x{j}"][k] for j in range(4)])
        # LAPACK itself is accurate to ~cond(A) * eps relative to |x| here
        assert np.allclose(got, expected, rtol=1e-6, atol=1e-12 * np.abs(expected).max())


class SingularAfterOne(Model):
    """A 2x2 linear block that is regular for t < 1 and singular (rank one, consistent)
    from t = 1 on."""

    x = Variable()
    y = Variable()
    q = Variable(start=0.0, fixed=True)

    def equations(self):
        s = 1 + 0.1 * mb.functions.sin(mb.time)
        c = mb.functions.fmax(0.0, 1.0 - mb.time)
        yield s * self.x + s * self.y == s
        yield s * self.x + (s + c) * self.y == s + c
        yield mb.der(self.q) == self.y


def test_block_singular_during_the_run_stops_with_its_equations_and_time():
    cm = mb.compile(SingularAfterOne())
    with pytest.raises(mb.SimulationError) as info:
        cm.simulate(2.0, n_points=21)
    error = info.value
    message = str(error)
    assert "singular" in message and "linear system" in message
    assert "((s*x)" in message.replace(" ", "") or "x" in error.variable
    assert 1.0 <= error.time <= 1.1  # the first evaluation past t = 1 that failed
    assert error.variable in ("x", "y")
    # the partial result holds the regular part of the run: y = 1, x = 0 there
    partial = error.result
    assert partial.t[-1] <= 1.0 and len(partial.t) >= 10
    assert np.allclose(partial["y"], 1.0, atol=1e-12) and np.allclose(partial["x"], 0.0, atol=1e-12)
    assert np.allclose(partial["q"], partial.t, atol=1e-8)


class UnusedPole(Model):
    """``y = 1/c`` is not needed by the dynamics; c reaches zero at t = 1 and stays there."""

    x = Variable(start=1.0, fixed=True)
    c = Variable()
    y = Variable()

    def equations(self):
        yield mb.der(self.x) == -1.0
        yield self.c == mb.functions.fmax(0.0, 1.0 - mb.time)
        yield self.y * self.c == 1.0


def test_non_finite_output_is_an_error_with_its_equation():
    res = mb.simulate(UnusedPole(), 2.0, n_points=21)
    assert np.allclose(res["x"], 1.0 - res.t)  # finite variables read as usual
    with pytest.raises(mb.SimulationError) as info:
        res["y"]
    error = info.value
    assert error.variable == "y" and error.time == pytest.approx(1.0)
    assert "division by zero" in str(error) and "(y*c)" in str(error).replace(" ", "")
    assert error.result.t[-1] == pytest.approx(0.9)
    assert np.allclose(error.result["y"], 1.0 / (1.0 - error.result.t))


def test_a_non_finite_variable_read_alone_leaves_the_table_alone(monkeypatch):
    # In a large model's result (here made one: any table above 0 evaluations) a variable
    # is computed alone when read; so is it in the error's result, and the same error is
    # raised as from the table
    import importlib
    monkeypatch.setattr(importlib.import_module("mbmodel.simulate"), "TABLE_ALONE", 0)
    res = mb.simulate(UnusedPole(), 2.0, n_points=21)
    assert res.computes_alone
    with pytest.raises(mb.SimulationError) as info:
        res["y"]
    error = info.value
    assert error.variable == "y" and error.time == pytest.approx(1.0)
    assert res._values is None and error.result.computes_alone
    assert error.result.t[-1] == pytest.approx(0.9)
    np.testing.assert_allclose(error.result["y"], 1.0 / (1.0 - error.result.t), rtol=1e-12)
    assert res._values is None  # (nothing computed the table)



class ExplainedPole(UnusedPole):
    """UnusedPole whose component says why ``y`` goes non-finite."""

    def explain_non_finite(self, variable, analysis):
        return f"{variable} is 1/c, and c reaches 0 at t = 1 ({analysis} analysis)"


def test_a_component_can_explain_its_non_finite_values():
    """Model.explain_non_finite: the diagnosis adds what the component the failing
    equation comes from says, in its own terms (UnusedPole says nothing)."""
    with pytest.raises(mb.SimulationError) as info:
        mb.simulate(ExplainedPole(), 2.0, n_points=21)["y"]
    assert ("'((y*c)==1)' (from the model)\nthe model: y is 1/c, and c reaches 0 at t = 1 "
            "(forward analysis)\n") in str(info.value)


class SeriesCapacitorsAcrossSource(Model):
    """A floating source with a capacitor across it and, in series from one end to the
    other through ground, two more capacitors: three capacitor voltages, one state."""

    c0 = el.Capacitor(C=1.0)
    c1 = el.Capacitor(C=1.0)
    c3 = el.Capacitor(C=1.0)
    v2 = el.SineVoltage(V=2.0, f=1.0)
    ground = el.Ground()

    def equations(self):
        yield connect(self.ground.p, self.c0.p, self.c1.n)
        yield connect(self.c1.p, self.v2.p, self.c3.p)
        yield connect(self.c0.n, self.v2.n, self.c3.n)


def test_state_selection_is_numerically_regular_for_capacitor_loops():
    cm = mb.compile(SeriesCapacitorsAcrossSource())
    assert len(cm.states) == 1 and cm.states[0] in ("c0.v", "c1.v")
    res = cm.simulate(1.5, n_points=7, **TIGHT)
    # equal series capacitors share the source voltage: V/2 = sin(2 pi t) each
    assert np.allclose(res["c0.v"], np.sin(2 * np.pi * res.t), atol=1e-9)
    assert np.allclose(res["c1.v"], res["c0.v"], atol=1e-9)
    assert np.allclose(res["c3.v"], 2.0 * np.sin(2 * np.pi * res.t), atol=1e-9)


class InductorToDanglingPair(Model):
    """Two resistors in parallel to a dangling node, fed through an inductor from ground:
    the aliases turn a flow balance into (r1.i - l0.i) - r1.i = 0, so l0.i = 0."""

    ground = el.Ground()
    l0 = el.Inductor(L=1.0)
    r1 = el.Resistor(R=1.0)
    r2 = el.Resistor(R=1.0)

    def equations(self):
        yield connect(self.ground.p, self.l0.p)
        yield connect(self.l0.n, self.r1.p, self.r2.p)
        yield connect(self.r1.n, self.r2.n)


def test_terms_that_cancel_after_alias_substitution_are_not_counted():
    cm = mb.compile(InductorToDanglingPair())
    assert cm.states == []  # the inductor current is constrained to zero
    res = cm.simulate(1.0, n_points=3)
    assert np.all(res["l0.i"] == 0.0) and np.all(res["r1.i"] == 0.0)


class SingularForOneParameterValue(Model):
    a = mb.Parameter(2.0)
    x = Variable()
    y = Variable()

    def equations(self):
        yield self.x + self.a * self.y == 1
        yield 2 * self.x + 4 * self.y == 3


def test_linear_block_singular_at_the_declared_parameters_is_named_at_compile_time():
    with pytest.raises(mb.StructuralSingularityError, match="singular with the given parameter "
                                                            "values.*x, y"):
        mb.compile(SingularForOneParameterValue())
    res = mb.compile(SingularForOneParameterValue(a=3.0)).simulate(1.0, n_points=2)
    assert np.allclose(res["x"], 2.5) and np.allclose(res["y"], -0.5)


# ---- step control ------------------------------------------------------------------------------

class _PiecewiseDiode(el.OnePort):
    Ron = mb.Parameter(1e-2)
    Goff = mb.Parameter(1e-8)

    def equations(self):
        yield from super().equations()
        yield self.i == mb.functions.if_else(self.v > 0, self.v / self.Ron, self.v * self.Goff)


class Rectifier(Model):
    """Half-wave rectifier whose smoothing capacitor starts above the source's peak: the
    diode stays off while the capacitor discharges, then conducts in short windows at the
    peaks — which an integrator stepping freely over the smooth decay steps over."""

    src = el.SineVoltage(V=10.0, f=50.0)
    diode = _PiecewiseDiode()
    cap = el.Capacitor(C=1e-3, v=mb.Fixed(10.5))
    load = el.Resistor(R=1000.0)
    ground = el.Ground()

    def equations(self):
        yield connect(self.src.p, self.diode.p)
        yield connect(self.diode.n, self.cap.p, self.load.p)
        yield connect(self.cap.n, self.load.n, self.src.n, self.ground.p)


def test_rectifier_windows_are_resolved_with_default_options():
    def rhs(t, v):
        drop = 10.0 * np.sin(2 * np.pi * 50.0 * t) - v[0]
        current = drop / 1e-2 if drop > 0 else drop * 1e-8
        return [(current - v[0] / 1000.0) / 1e-3]

    ref = solve_ivp(rhs, (0.0, 2.0), [10.5], method="LSODA", rtol=1e-10, atol=1e-12,
                    max_step=1e-5, dense_output=True)
    cm = mb.compile(Rectifier())
    from mbmodel.simulate import default_max_step
    assert default_max_step(cm, cm.parameter_vector(), 2.0) == pytest.approx(1 / 50 / 16)
    res = cm.simulate(2.0, n_points=51)
    assert np.max(np.abs(res["cap.v"] - ref.sol(res.t)[0])) < 1e-5
    # Free steps used to jump over the conduction windows (about 1 V off); the relation
    # v > 0 now switches at events, located whatever the step
    free = cm.simulate(2.0, n_points=51, max_step=1.0)
    assert np.max(np.abs(free["cap.v"] - ref.sol(free.t)[0])) < 1e-5
    assert len(free.events) > 150  # the diode switches on and off in each of 100 periods


# ---- badly scaled networks: tearing keeps the torn system well scaled ----------------------

_RNG = np.random.default_rng(1)
_N_NODES = 30
_EDGES = ([(i, i + 1) for i in range(_N_NODES - 1)]
          + [tuple(sorted(_RNG.choice(_N_NODES, 2, replace=False))) for _ in range(51)])
_OHMS = 10 ** _RNG.uniform(-3, 6, len(_EDGES))


class ScaledMesh(Model):
    """A resistor mesh with resistances from 1 mOhm to 1 MOhm, fed by a current source,
    with one capacitor: solving v = R*i for v with R = 1 MOhm along tearing chains made
    the torn 10x10 system look singular (relative pivot 1e-17)."""

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.ground = el.Ground()
        self.source = el.ConstantCurrent(I=1.0)
        self.cap = el.Capacitor(C=1e-3, v=mb.Fixed(0.0))
        for k, ohms in enumerate(_OHMS):
            self.add(f"r{k}", el.Resistor(R=float(ohms)))

    def equations(self):
        pins = {i: [] for i in range(_N_NODES)}
        for k, (a, b) in enumerate(_EDGES):
            pins[a].append(getattr(self, f"r{k}").p)
            pins[b].append(getattr(self, f"r{k}").n)
        pins[0] += [self.ground.p, self.source.p, self.cap.n]
        pins[_N_NODES - 1].append(self.source.n)
        pins[_N_NODES // 2].append(self.cap.p)
        for i in range(_N_NODES):
            yield connect(*pins[i])


def test_badly_scaled_resistor_mesh_matches_nodal_analysis():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", mb.ImplicitStartWarning)
        cm = mb.compile(ScaledMesh())  # node voltages of a linear block need no start
    res = cm.simulate(0.01, n_points=3, rtol=1e-10, atol=1e-12)
    # Nodal analysis with the capacitor voltage the run reached as a known potential.
    G = np.zeros((_N_NODES, _N_NODES))
    for (a, b), ohms in zip(_EDGES, _OHMS):
        G[[a, b, a, b], [a, b, b, a]] += np.array([1, 1, -1, -1]) / ohms
    injected = np.zeros(_N_NODES)
    injected[_N_NODES - 1] = 1.0  # the source drives 1 A from node 0 through itself into it
    fixed = _N_NODES // 2
    free = [i for i in range(1, _N_NODES) if i != fixed]
    v = np.zeros(_N_NODES)
    v[fixed] = res["cap.v"][-1]
    v[free] = np.linalg.solve(G[np.ix_(free, free)],
                              injected[free] - G[np.ix_(free, [fixed])][:, 0] * v[fixed])
    for k, (a, b) in enumerate(_EDGES):
        for node, pin in ((a, "p"), (b, "n")):
            assert res[f"r{k}.{pin}.v"][-1] == pytest.approx(v[node], rel=1e-9, abs=1e-9)


class FiniteTimeBlowUp(Model):
    x = Variable(1.0, fixed=True)

    def equations(self):
        yield mb.der(self.x) == self.x ** 2  # x = 1/(1 - t): infinite at t = 1


def test_run_away_solution_names_the_state_and_its_equation():
    with pytest.raises(mb.SimulationError) as info:
        mb.simulate(FiniteTimeBlowUp(), 2.0, n_points=21)
    error = info.value
    assert error.variable == "x" and 0.99 < error.time <= 1.0
    assert "runs away" in str(error) and "(der(x)==sq(x))" in str(error)
    # the partial result is the solution (global error grows as it runs away: 1e-5 at 0.9)
    assert np.allclose(error.result["x"], 1.0 / (1.0 - error.result.t), rtol=1e-5)


def test_a_solution_held_at_a_switch_under_noEvent_is_named_a_sliding_mode_not_a_pole():
    """der(x) = -1 above x = 0 and +1 below, through noEvent: the integrator stalls at x = 0
    (t = 1), which was said to be a pole or a blow-up (review). It is said to be a sliding
    mode at a switch, with the remedy; a true pole (der(x) = -1/x, its derivative growing
    as x falls) is still a pole."""
    class Sliding(Model):
        x = Variable(1.0, fixed=True)

        def equations(self):
            yield mb.der(self.x) == mb.functions.if_else(mb.noEvent(self.x > 0), -1.0, 1.0)

    class Pole(Model):
        x = Variable(1.0, fixed=True)

        def equations(self):
            yield mb.der(self.x) == -1.0 / self.x  # x = sqrt(1 - 2t): a pole at t = 0.5

    with pytest.raises(mb.SimulationError) as info:
        mb.simulate(Sliding(), 2.0, n_points=21, progress=False)
    error = info.value
    assert error.variable == "x" and error.time == pytest.approx(1.0, abs=1e-6)
    assert ("held at a switch of its equations: der(x) = -1 just above x = " in str(error)
            and "and 1 just below" in str(error) and "written without noEvent" in str(error))
    assert "runs away" not in str(error)
    np.testing.assert_allclose(error.result["x"], 1.0 - error.result.t, atol=1e-8)
    with pytest.raises(mb.SimulationError, match="runs away: der\\(x\\)") as info:
        mb.simulate(Pole(), 2.0, n_points=21, progress=False)
    assert info.value.time == pytest.approx(0.5, abs=1e-3)


class TurningPoint(Model):
    """Two torn nonlinear blocks: z1**3 + z1 = x has a root for every x; z2**2 + 1 = x has
    two while x > 1, and they meet at x = 1 (t = 1): none past it."""
    x = Variable(2.0, fixed=True)
    z1 = Variable(1.0)
    z2 = Variable(1.0)

    def equations(self):
        yield mb.der(self.x) == -1.0
        yield self.z1 ** 3 + self.z1 == self.x
        yield self.z2 ** 2 + 1.0 == self.x + self.z1 * 0.0 * self.z2 ** 3


@pytest.mark.parametrize("method", ["idas", "cvodes"])
def test_a_failing_nonlinear_block_is_named_with_its_equation(method):
    """IDAS (IDA_REP_RES_ERR) and CVODES with the blocks inside (CV_RHSFUNC_FAIL) failed
    near t = 1 with "the model may be stiff ... or have a singularity" and no block named
    (review): the block whose Jacobian lost most of its smallest singular value is named,
    with its equation and the values, 2 z2 from 2 at the start to about 0.13."""
    with pytest.raises(mb.SimulationError) as info:
        mb.simulate(TurningPoint(), 3.0, method=method)
    text = str(info.value)
    assert "nonlinear block below for z2" in text
    assert "((sq(z2)+1)==x)" in text and "z1" not in text.split("block below")[1]
    reached = info.value.result.t[-1]
    assert 0.99 < reached < 1.0
    assert f"fell from 2 at t = 0 to {2 * math.sqrt(1.0 - reached):.3g}" in text
    # the result up to there is the solution
    assert np.allclose(info.value.result["z2"], np.sqrt(1.0 - info.value.result.t), rtol=1e-6)
