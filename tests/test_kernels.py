"""Structure-preserving code for the dynamics (mbmodel.kernels): the kernel Function computes
exactly what the flat dynamics compute, on every kind of model the suite has, and its number
of distinct kernels does not grow with the number of instances."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mbmodel as mb  # noqa: E402
from mbmodel import native  # noqa: E402
simulation = importlib.import_module("mbmodel.simulate")
from mbmodel.kernels import structured_dynamics, structured_outputs  # noqa: E402
from mb_trees import (DrivenChain, RevoluteChain, TreeModel, pinocchio_model,  # noqa: E402
                      random_tree)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example(module, name):
    spec = importlib.util.spec_from_file_location(f"kernels_{module}", EXAMPLES / f"{module}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return getattr(loaded, name)()


MODELS = {
    "general chain": lambda: TreeModel(random_tree(7, np.random.default_rng(1), chain=True)),
    "actuated tree": lambda: TreeModel(random_tree(9, np.random.default_rng(2)), actuated=True),
    "floating base": lambda: TreeModel(random_tree(5, np.random.default_rng(3), spherical=True,
                                                   floating=True)),
    "revolute chain": lambda: RevoluteChain(5),
    "geared chain": lambda: DrivenChain(3, losses=True),
    "housed gears (torn linear block)": lambda: DrivenChain(3, housed_gear=True),
    "Manutec r3 mechanics": lambda: example("robot_r3", "R3Mechanics"),
    "DC motor drive": lambda: example("dc_motor_drive", "DCMotorDrive"),
    "Cauer low-pass": lambda: example("cauer_filter", "CauerLowPass"),
    "series RLC": lambda: example("rlc_circuit", "SeriesRLC"),
}


@pytest.mark.parametrize("parameters", ["symbolic", "constant"])
@pytest.mark.parametrize("name", list(MODELS))
def test_kernels_compute_the_flat_dynamics(name, parameters):
    cm = mb.compile(MODELS[name](), parameters=parameters)
    built = structured_dynamics(cm.system, cm.parameter_mode)
    assert built is not None, "no algebraic variables: the kernel path applies"
    fn, stats = built
    # every assignment is computed by a kernel, or not needed by the state derivatives
    assert stats.assignments + stats.unused == len(cm.system.sequence)
    rng = np.random.default_rng(7)
    p = cm.parameter_vector()
    for _ in range(4):
        x = rng.uniform(-1.0, 1.0, len(cm.states))
        pu = np.concatenate([p, rng.normal(size=len(cm.inputs))])
        t = rng.uniform(0.0, 2.0)
        ours = np.array(fn(t, x, [], pu, [])[0]).ravel()
        flat = np.array(cm.dynamics(t, x, [], pu, [])[0]).ravel()
        assert np.all(np.isfinite(flat))
        assert np.max(np.abs(ours - flat)) <= 1e-12 * max(1.0, np.max(np.abs(flat)))


# (one parameter mode each: every library costs a compiler run; both modes are covered)
@pytest.mark.parametrize("name", list(MODELS))
def test_the_schedules_c_computes_the_kernels_and_their_derivative(name, tmp_path):
    """The C that calls the kernels in a loop over tables (mbmodel.schedule) computes what
    the kernel Function computes in casadi's virtual machine, and so does its forward
    derivative (the Jacobian Newton's method takes), on every kind of model: parameters
    folded or free (bound parameters from the free ones), inputs, time, negated values."""
    from mbmodel import codegen
    from mbmodel.schedule import schedule_of
    parameters = "constant" if list(MODELS).index(name) % 2 else "symbolic"
    cm = mb.compile(MODELS[name](), parameters=parameters)
    fn, _ = structured_dynamics(cm.system, cm.parameter_mode)
    assert schedule_of(fn) is not None
    assert "mbmodel_call" in codegen._generate_c(fn, derivatives=True)
    fast = codegen.compile_function(fn, cache_dir=tmp_path, derivatives=True, optimize=2)
    assert fast.is_a("External")
    n_x, n_pu = len(cm.states), fn.size1_in(3)
    X, PU, T = ca.MX.sym("x", n_x), ca.MX.sym("p", n_pu), ca.MX.sym("t")
    jacobians = [ca.Function("j", [T, X, PU], [ca.jacobian(
        f(T, X, ca.MX(0, 1), PU, ca.MX(0, 1))[0], ca.vertcat(T, X, PU))]) for f in (fast, fn)]
    rng = np.random.default_rng(13)
    p = cm.parameter_vector()
    for _ in range(3):
        x = rng.uniform(-1.0, 1.0, n_x)
        pu = np.concatenate([p, rng.normal(size=n_pu - len(p))])
        t = rng.uniform(0.0, 2.0)
        ours, reference = (np.array(f(t, x, [], pu, [])[0]).ravel() for f in (fast, fn))
        assert np.all(np.isfinite(reference))
        assert np.max(np.abs(ours - reference)) <= 1e-12 * max(1.0, np.abs(reference).max())
        ours, reference = (np.array(j(t, x, pu)) for j in jacobians)
        assert np.max(np.abs(ours - reference)) <= 1e-11 * max(1.0, np.abs(reference).max())


class Offsets(mb.Model):
    """Outputs of every kind a result has: a state, derivatives, assigned variables, aliases
    with a sign and an offset (a = -b + 1 and c = b + 2), a constant, an input, time."""
    u = mb.Input()
    x = mb.Variable(start=0.5, fixed=True)
    b = mb.Variable()
    a = mb.Variable()
    c = mb.Variable()
    k = mb.Variable()
    s = mb.Variable()
    gain = mb.Parameter(3.0)

    def equations(self):
        yield self.b == self.gain * np.sin(self.x) + self.u
        yield self.a == 1.0 - self.b
        yield self.c == self.b + 2.0
        yield self.k == 4.0
        yield self.s == mb.time * self.c
        yield mb.der(self.x) == -self.a * self.x + self.s


# (one parameter mode each, as above)
@pytest.mark.parametrize("name", [*MODELS, "aliases with offsets"])
def test_kernels_and_their_c_compute_every_output_of_a_result(name, tmp_path):
    """structured_outputs: the kernel Function of every variable a result holds, and its C
    (the schedule's loop, exporting output_function's signature), compute what
    output_function computes: states, derivatives, assigned variables, aliases with their
    sign and offset, constants, inputs, parameters folded or free."""
    from mbmodel import codegen
    from mbmodel.schedule import schedule_of
    names = [*MODELS, "aliases with offsets"]
    parameters = "constant" if names.index(name) % 2 else "symbolic"
    model = Offsets() if name == "aliases with offsets" else MODELS[name]()
    cm = mb.compile(model, parameters=parameters)
    if name == "aliases with offsets":  # (the model has what its doc says)
        sources = cm.system.value_sources
        # a = 1 - b, c = b + 2, and k = 4 (the constant zero plus 4); u an input
        assert sorted(sources.offsets[sources.offsets != 0].tolist()) == [1.0, 2.0, 4.0]
        assert -1.0 in sources.signs and np.any(sources.rows < 0)
    fn, stats = structured_outputs(cm.system, cm.output_names, cm.parameter_mode)
    assert schedule_of(fn).kind == "outputs" and stats.unused == 0
    # dense (a result's table is written through buffers), and so the schedule's C
    assert fn.sparsity_out(0).is_dense()
    assert "mbmodel_call" in codegen._generate_c(fn)
    rng = np.random.default_rng(17)
    n = 3
    X = rng.uniform(-1.0, 1.0, (len(cm.states), n))
    U = rng.normal(size=(cm.symbols.u.numel(), n))
    T = rng.uniform(0.0, 2.0, (1, n))
    p = cm.parameter_vector()
    Z = np.zeros((0, n))
    reference = np.array(cm.output_function.map(n)(X, Z, U, p, T))
    assert np.all(np.isfinite(reference))
    scale = max(1.0, np.abs(reference).max())
    kernels = np.array(fn.map(n)(X, Z, U, p, T))
    assert np.max(np.abs(kernels - reference)) <= 1e-13 * scale
    # as a result computes its table: through casadi's buffers, in C (a compiler run each:
    # for the models whose outputs differ in kind, the others share their kernels' kinds)
    in_c = name in ("actuated tree", "floating base", "housed gears (torn linear block)",
                    "Manutec r3 mechanics", "DC motor drive", "aliases with offsets")
    fast = codegen.compile_function(fn, cache_dir=tmp_path, optimize=2) if in_c else fn
    assert fast.is_a("External") == in_c
    compiled = simulation.buffered_table(cm, fast, X, Z, U, p, T)
    assert np.max(np.abs(compiled - reference)) <= 1e-12 * scale


def test_the_outputs_c_places_every_body_where_pinocchio_does(tmp_path):
    """The outputs' C (through buffered_table, as a result's table is computed) gives every
    body's position and orientation of a general chain (revolute and prismatic joints,
    general axes) at random coordinates as Pinocchio's forward kinematics does."""
    pin = pytest.importorskip("pinocchio")
    from mbmodel import codegen
    spec = random_tree(7, np.random.default_rng(1), chain=True)
    cm = mb.compile(TreeModel(spec), parameters="constant")
    fn, _ = structured_outputs(cm.system, cm.output_names, cm.parameter_mode)
    fast = codegen.compile_function(fn, cache_dir=tmp_path, optimize=2)
    assert fast.is_a("External")
    model = pinocchio_model(spec)
    data = model.createData()
    n = len(spec)
    coordinate = ["phi" if s["kind"] == "revolute" else "s" for s in spec]
    assert set(coordinate) == {"phi", "s"}
    Q = np.random.default_rng(3).uniform(-np.pi, np.pi, (4, n))
    X = np.column_stack([cm.state_vector({f"joint{i}.{coordinate[i]}": q[i]
                                          for i in range(n)}) for q in Q])
    points = X.shape[1]
    table = simulation.buffered_table(cm, fast, X, np.zeros((0, points)),
                                      np.zeros((0, points)), cm.parameter_vector(),
                                      np.zeros((1, points)))
    row = cm.output_index
    for k, q in enumerate(Q):
        pin.forwardKinematics(model, data, q)
        for i in range(n):
            r = table[[row[f"body{i}.frame_a.r_0[{j}]"] for j in range(3)], k]
            R = table[[row[f"body{i}.frame_a.R[{a},{b}]"] for a in range(3)
                       for b in range(3)], k].reshape(3, 3)
            np.testing.assert_allclose(r, data.oMi[i + 1].translation, rtol=0, atol=1e-12)
            np.testing.assert_allclose(R, data.oMi[i + 1].rotation.T, rtol=0, atol=1e-12)


def test_a_large_results_table_is_computed_in_c_when_asked_once_built(tmp_path, monkeypatch):
    """simulate(native=True) computes a large model's result table with the outputs' C
    (native.outputs), built when a table is first computed (not for a run whose states
    alone are read: a sweep's), the same numbers as casadi's virtual machine; once built,
    the default ("auto") uses it and reading one variable computes the table; each native
    value's table Function, for failed runs' results too."""
    monkeypatch.setenv("MBMODEL_CACHE", str(tmp_path))
    # (a short chain made "large" by the thresholds: the same paths at a fraction of the
    # compiler's time; n = 201 output times)
    monkeypatch.setattr(native, "KERNEL_INSTRUCTIONS", 500)
    monkeypatch.setattr(simulation, "TABLE_ALONE", 2e5)
    cm = mb.compile(RevoluteChain(6), parameters="constant")
    assert cm.output_function.n_instructions() > native.KERNEL_INSTRUCTIONS
    assert cm.output_function.n_instructions() * 201 > simulation.TABLE_ALONE
    native.dynamics(cm)
    vm = cm.simulate(0.2, n_points=201, native=False)
    assert vm.computes_alone  # (in the virtual machine, a variable read alone)
    in_c = cm.simulate(0.2, n_points=201, native=True)
    in_c[cm.states[0]]  # noqa: B018 - a state: no table
    assert native.outputs(cm, "auto") is cm.output_function  # not built
    assert not list(tmp_path.glob("outputs-*.json"))
    assert in_c.computes_alone  # (the C is not built for one variable)
    table = in_c.values  # built now
    assert native.outputs(cm, "auto").is_a("External")
    assert list(tmp_path.glob("outputs-*.json"))
    # (the virtual machine's table at the C run's states: the runs' dynamics differ in
    # rounding, and so do their trajectories, by ~1e-8)
    n, p = 201, cm.parameter_vector()
    none = np.zeros((0, n))
    reference = np.array(cm.output_function.map(n)(
        np.array([in_c[name] for name in cm.states]), none, none, p, in_c.t[None, :]))
    assert np.array_equal(vm.values, np.array(cm.output_function.map(n)(
        np.array([vm[name] for name in cm.states]), none, none, p, vm.t[None, :])))
    scale = max(1.0, np.abs(reference).max())
    assert np.max(np.abs(table - reference)) <= 1e-12 * scale
    later = cm.simulate(0.2, n_points=201)
    assert not later.computes_alone
    assert np.array_equal(later[cm.output_names[-1]], in_c[cm.output_names[-1]])
    assert native.outputs(cm, False) is cm.output_function
    # each run's native value decides its table's Function
    used = []
    tabled = simulation.buffered_table
    monkeypatch.setattr(simulation, "buffered_table",
                        lambda cm_, fn, *args: used.append(fn) or tabled(cm_, fn, *args))
    for asked, in_c in ((False, False), ("auto", True), (True, True)):
        cm.simulate(0.1, n_points=11, native=asked).values  # noqa: B018
        assert used.pop().is_a("External") == in_c
    # (the result of a failed run, as simulate makes it)
    X = np.zeros((len(cm.states), 3))
    failed = simulation._result(cm, np.linspace(0, 1, 3), X, np.zeros((0, 3)),
                                np.zeros((0, 3)), p, np.ones(3, bool), [], native=False)
    failed.values  # noqa: B018
    assert used.pop() is cm.output_function


def test_a_table_is_written_dense_from_a_function_with_structural_zeros():
    """buffered_table (a result's table through casadi's buffers) fills structural zeros of
    the Function's output in: a buffer holds only the nonzeros, in order."""
    cm = mb.compile(RevoluteChain(1))  # (only where the buffers are kept)
    x, t = ca.MX.sym("x"), ca.MX.sym("t")
    fn = ca.Function("f", [x, t], [ca.vertcat(x, ca.MX(1, 1), 2 * x, ca.MX(1, 1), t)])
    assert fn.nnz_out(0) == 3
    X, T = np.array([[1.0, 2.0, 3.0]]), np.array([[10.0, 20.0, 30.0]])
    np.testing.assert_array_equal(simulation.buffered_table(cm, fn, X, T),
                                  [[1, 2, 3], [0, 0, 0], [2, 4, 6], [0, 0, 0], [10, 20, 30]])
    # every size of table: chunks of points and the rest, for a few outputs and for many
    # one point given as numbers or vectors; a missing argument is refused
    np.testing.assert_array_equal(simulation.buffered_table(cm, fn, 2.0, [5.0]),
                                  [[2.0], [0.0], [4.0], [0.0], [5.0]])
    with pytest.raises(ValueError, match="takes 2 arguments, not 1"):
        simulation.buffered_table(cm, fn, X)
    many = ca.Function("g", [x, t], [ca.vertcat(*[x * k + t for k in range(3000)])])
    assert simulation.table_chunk(5) == 4096 and simulation.table_chunk(3000) == 16
    for f, sizes in ((fn, (1, 2, 4095, 4097)), (many, (1, 15, 16, 33))):
        for n in sizes:
            X, T = np.arange(n, dtype=float)[None, :], np.full((1, n), 0.5)
            np.testing.assert_array_equal(simulation.buffered_table(cm, f, X, T),
                                          np.array(f.map(n)(X, T)))


def test_the_c_of_a_longer_chain_differs_only_in_its_tables():
    """The schedule's C is the kernels once and tables of calls: a chain of 32 links has
    the code of a chain of 16 (same text once the tables and sizes are left out), where
    casadi's C of the kernel Function has statements for every call."""
    from mbmodel import codegen

    def sources(n):
        spec = random_tree(n, np.random.default_rng(4), chain=True)
        for link in spec:
            link["kind"] = "revolute"
        cm = mb.compile(TreeModel(spec), parameters="constant")
        fn, _ = structured_dynamics(cm.system, cm.parameter_mode)
        return (codegen._generate_c(fn, derivatives=True),
                codegen.casadi_c(fn, derivatives=True))

    def code(source):  # without the tables' contents and the numbers
        source = re.sub(r"\[\d+\] = \{[^}]*\};", "[] = {};", source)
        return re.sub(r"\d+", "N", source)
    (short, short_casadi), (long, long_casadi) = sources(16), sources(32)
    assert code(short) == code(long)
    # (what grows, the tables, is a fraction of what casadi writes per link)
    assert len(long_casadi) - len(short_casadi) > 5 * (len(long) - len(short))


def test_kernel_count_does_not_grow_with_the_chain():
    counts = {}
    for n in (8, 16, 32):
        spec = random_tree(n, np.random.default_rng(4), chain=True)
        for link in spec:  # one joint type: every link is an instance of the same structure
            link["kind"] = "revolute"
        cm = mb.compile(TreeModel(spec))
        _, stats = structured_dynamics(cm.system, cm.parameter_mode)
        counts[n] = stats
    # the ends of a short chain may lack a variant; from then on nothing new appears
    # (the kernels of the interior links, and a few variants at the root and the tip)
    assert counts[8].kernels <= counts[16].kernels == counts[32].kernels < 40
    # a few calls per component (one per pass): linear in the chain
    per_link = [counts[n].groups / n for n in (8, 16, 32)]
    assert max(per_link) < 1.05 * min(per_link)


def test_every_length_of_chain_calls_the_same_kernels():
    """Two passes of one instance can become ready at the same level (a joint's
    velocities from its parent and its articulated inertia from its child meet in one link
    of a chain, in which link depends on the chain's length): they are still called apart,
    so odd and even chains share one set of kernels, one call per instance and pass."""
    counts = {}
    for n in (9, 10, 11, 12, 13):
        spec = random_tree(n, np.random.default_rng(4), chain=True)
        for link in spec:
            link["kind"] = "revolute"
        cm = mb.compile(TreeModel(spec))
        _, stats = structured_dynamics(cm.system, cm.parameter_mode)
        counts[n] = stats
    assert len({stats.kernels for stats in counts.values()}) == 1
    calls_per_link = {counts[n + 1].groups - counts[n].groups for n in (9, 10, 11, 12)}
    assert len(calls_per_link) == 1


def test_large_models_get_kernel_code_and_models_with_algebraic_variables_flat_code(
        monkeypatch):
    small = mb.compile(RevoluteChain(2))
    assert native.code_source(small) is small.dynamics  # small: flat code runs faster
    monkeypatch.setattr(native, "KERNEL_INSTRUCTIONS", 0)  # every model counts as large
    chain = mb.compile(RevoluteChain(2))
    assert native.code_source(chain) is not chain.dynamics
    x = np.linspace(-0.5, 0.5, len(chain.states))
    assert np.allclose(chain.evaluator()(x), small.evaluator()(x), rtol=1e-12, atol=1e-12)
    cm = mb.compile(example("cartesian_pendulum", "CartesianPendulum"))
    if cm.algebraic:
        assert structured_dynamics(cm.system) is None
        assert native.code_source(cm) is cm.dynamics
    else:
        assert native.code_source(cm) is not cm.dynamics


def test_folded_parameters_are_computed_once_and_passed_values_are_not_copied():
    """With parameters folded, what depends on them alone (unit axes, fixed rotations,
    spatial inertias) is computed at build time, and kernels pass values to each other
    without copies; the dynamics stay exact."""
    spec = random_tree(12, np.random.default_rng(4), chain=True)
    for link in spec:
        link["kind"] = "revolute"
    cm = mb.compile(TreeModel(spec), parameters="constant")
    fn, stats = structured_dynamics(cm.system, cm.parameter_mode)
    assert stats.hoisted >= 12 * 9  # at least each fixed rotation's matrix per link
    # nothing is copied between kernels: each takes the output vectors it reads whole; what
    # remains is gathering the states each joint reads and picking out the derivatives
    copies = sum(fn.instruction_id(k) in (ca.OP_VERTCAT, ca.OP_VERTSPLIT, ca.OP_GETNONZEROS)
                 for k in range(fn.n_instructions()))
    assert copies <= 2 * 12 + 2 < stats.outputs / 20
    x = np.random.default_rng(5).uniform(-1, 1, len(cm.states))
    flat = np.array(cm.dynamics(0.0, x, [], cm.parameter_vector(), [])[0]).ravel()
    ours = np.array(fn(0.0, x, [], cm.parameter_vector(), [])[0]).ravel()
    assert np.max(np.abs(ours - flat)) <= 1e-12 * max(1.0, np.max(np.abs(flat)))
    # and the joint accelerations are Pinocchio's articulated-body algorithm's
    import pinocchio as pin
    model = pinocchio_model(spec)
    q, v = x[[cm.states.index(f"joint{i}.phi") for i in range(12)]], \
        x[[cm.states.index(f"joint{i}.w") for i in range(12)]]
    reference = pin.aba(model, model.createData(), q, v, np.zeros(12))
    accelerations = ours[[cm.states.index(f"joint{i}.w") for i in range(12)]]
    assert np.max(np.abs(accelerations - reference)) <= 1e-10 * max(1.0, np.abs(reference).max())
    symbolic = mb.compile(TreeModel(spec))
    assert structured_dynamics(symbolic.system, "symbolic")[1].hoisted == 0


def test_kernels_do_the_arithmetic_of_the_flat_function_no_more():
    """Subexpressions shared between passes (the sine and cosine of a joint angle, used by
    the kinematics, the articulated inertias and the accelerations) are computed once, and
    what the state derivatives do not need is not computed: the kernels' operations add up
    to the flat function's (within the few that kernel boundaries keep casadi from folding
    at the root and the tip)."""
    spec = random_tree(12, np.random.default_rng(4), chain=True)
    for link in spec:
        link["kind"] = "revolute"
    cm = mb.compile(TreeModel(spec), parameters="constant")
    fn, stats = structured_dynamics(cm.system, cm.parameter_mode)
    arithmetic = (ca.OP_ADD, ca.OP_SUB, ca.OP_MUL, ca.OP_DIV, ca.OP_NEG, ca.OP_SQ, ca.OP_TWICE,
                  ca.OP_SQRT)

    def count(f, ops):
        return sum(f.instruction_id(k) in ops for k in range(f.n_instructions()))
    calls = [fn.instruction_MX(k).which_function() for k in range(fn.n_instructions())
             if fn.instruction_id(k) == ca.OP_CALL]
    for ops in ((ca.OP_SIN,), (ca.OP_COS,)):
        assert sum(count(f, ops) for f in calls) == count(cm.dynamics, ops) == 12
    assert sum(count(f, arithmetic) for f in calls) <= 1.05 * count(cm.dynamics, arithmetic)
    assert stats.unused > 0 and stats.shared > 0
    # joint axes along x, y and z: the zeros and ones of the folded axes are written into the
    # kernels, as the flat function folds them (4.3x the flat operations otherwise)
    aligned = mb.compile(RevoluteChain(24), parameters="constant")
    fn, _ = structured_dynamics(aligned.system, aligned.parameter_mode)
    calls = [fn.instruction_MX(k).which_function() for k in range(fn.n_instructions())
             if fn.instruction_id(k) == ca.OP_CALL]
    assert sum(count(f, arithmetic) for f in calls) <= 1.15 * count(aligned.dynamics, arithmetic)


def test_kernels_compute_equal_subexpressions_once():
    """Equal subexpressions built separately inside one kernel (entries of a matrix product
    that two equations of a component form) are merged when the kernel is made: merging a
    kernel's body again finds nothing. (The flat function merges them only below
    ``compiler.CSE_NODES`` nodes; kernels serve the models above.)"""
    cm = mb.compile(RevoluteChain(12), parameters="constant")
    fn, _ = structured_dynamics(cm.system, cm.parameter_mode)
    kernels = {}
    for k in range(fn.n_instructions()):
        if fn.instruction_id(k) == ca.OP_CALL:
            f = fn.instruction_MX(k).which_function()
            kernels[f.name()] = f
    checked = 0
    for f in kernels.values():
        symbols = f.sx_in()
        again = ca.Function("again", symbols, [ca.cse(out) for out in f.call(symbols)])
        assert again.n_instructions() == f.n_instructions(), f.name()
        checked += 1
    assert checked >= 5


class _ZeroWeighted(mb.Model):
    d = mb.Parameter(0.0)
    x = mb.Variable(start=0.5, fixed=True)
    y = mb.Variable(start=0.5, fixed=True)

    def equations(self):
        yield mb.der(self.x) == 1 + self.d * ca.log(self.y)
        yield mb.der(self.y) == -self.x


def test_folded_zero_drops_its_term_in_kernels_as_in_the_flat_function():
    """With d = 0 folded, ``d*log(y)`` is no term at all, also where log(y) is not finite:
    kernels agree with the flat function (they took 0 as a run-time value and gave NaN)."""
    cm = mb.compile(_ZeroWeighted(), parameters="constant")
    fn, _ = structured_dynamics(cm.system, cm.parameter_mode, cm.symbols.t)
    x = [1.0, -1.0]
    flat = np.array(cm.dynamics(0.0, x, [], cm.parameter_vector(), [])[0]).ravel()
    ours = np.array(fn(0.0, x, [], cm.parameter_vector(), [])[0]).ravel()
    assert np.array_equal(ours, flat) and np.array_equal(flat, [1.0, -1.0])


def test_kernels_are_cached_on_disk_and_built_again_when_unreadable(tmp_path, monkeypatch):
    """A later compiled model with the same flat dynamics (another process, a script run
    again) reads its kernels from the disk cache instead of building them (~45 ms per link
    of a chain); another parameter value folded in is another entry; an entry that cannot
    be read is built again."""
    import mbmodel.kernels as kernels
    monkeypatch.setenv("MBMODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "KERNEL_INSTRUCTIONS", 0)  # every model counts as large
    spec = random_tree(3, np.random.default_rng(6), chain=True)
    heavier = [dict(link) for link in spec]
    heavier[0]["m"] += 1.0
    first = mb.compile(TreeModel(spec), parameters="constant")
    assert native.code_source(first) is not first.dynamics
    entries = list(tmp_path.glob("kernels-*.json"))
    assert len(entries) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("the kernels were built again")
    monkeypatch.setattr(kernels, "structured_dynamics", refuse)
    again = mb.compile(TreeModel(spec), parameters="constant")
    loaded = native.code_source(again)
    # with its schedule: the same C as the kernels built here, so the same library
    from mbmodel import codegen
    from mbmodel.schedule import schedule_of
    assert schedule_of(loaded) is not None
    assert codegen._generate_c(loaded, True) == codegen._generate_c(native.code_source(first),
                                                                     True)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x, t = rng.uniform(-1.0, 1.0, len(again.states)), rng.uniform(0.0, 1.0)
        flat = np.array(first.dynamics(t, x, [], [], [])[0]).ravel()
        ours = np.array(loaded(t, x, [], [], [])[0]).ravel()
        assert np.max(np.abs(ours - flat)) <= 1e-12 * max(1.0, np.max(np.abs(flat)))
    with pytest.raises(AssertionError, match="built again"):
        native.code_source(mb.compile(TreeModel(heavier), parameters="constant"))
    monkeypatch.undo()
    monkeypatch.setenv("MBMODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "KERNEL_INSTRUCTIONS", 0)
    # unreadable text, and an empty entry: casadi reads it as a null Function without an
    # error, which failed every later call "!is_null()" (review)
    for damaged in ("not a casadi function", ""):
        entries[0].write_text(damaged)
        rebuilt = native.code_source(mb.compile(TreeModel(spec), parameters="constant"))
        assert rebuilt.is_a("MXFunction") and not rebuilt.is_null()
        assert entries[0].read_text() not in ("not a casadi function", "")
    assert not [p for p in tmp_path.iterdir() if p.suffix != ".json"]  # nothing left over


@pytest.mark.parametrize("parameters", ["constant", "symbolic"])
@pytest.mark.parametrize("name", ["revolute chain", "series RLC"])
def test_a_cached_schedule_is_read_back_whole(name, parameters, tmp_path, monkeypatch):
    """The disk cache keeps the schedule with its kernels (not their names in the MX
    Function, which drops calls nothing needs: a chain with axes along x, y and z) and
    folded bound parameters as numbers (the MX Function holds no call of their Function):
    a later process reads it instead of building the kernels, and writes the same C
    (review)."""
    import mbmodel.kernels as kernels
    from mbmodel import codegen
    monkeypatch.setenv("MBMODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "KERNEL_INSTRUCTIONS", 0)
    first = native.code_source(mb.compile(MODELS[name](), parameters=parameters))
    source = codegen._generate_c(first, True)

    def refuse(*args, **kwargs):
        raise AssertionError("the kernels were built again")
    monkeypatch.setattr(kernels, "structured_dynamics", refuse)
    again = native.code_source(mb.compile(MODELS[name](), parameters=parameters))
    assert codegen._generate_c(again, True) == source


def test_two_threads_build_one_models_kernels_once(monkeypatch):
    """Two threads that run one compiled model at once get one kernel build between them:
    two builds from the model's shared expression graph at once gave wrong kernels, which
    the disk cache then kept (review)."""
    import threading
    import time
    import mbmodel.kernels as kernels
    monkeypatch.setattr(native, "KERNEL_INSTRUCTIONS", 0)
    cm = mb.compile(RevoluteChain(6), parameters="constant")
    builds = []
    build = kernels.structured_dynamics

    def slow_build(*args, **kwargs):
        builds.append(threading.get_ident())
        time.sleep(0.3)  # (the second thread arrives meanwhile)
        return build(*args, **kwargs)
    monkeypatch.setattr(kernels, "structured_dynamics", slow_build)
    monkeypatch.setattr(native, "_kernel_source", lambda cm: slow_build(
        cm.system, cm.parameter_mode, cm.symbols.t)[0])
    found = []
    threads = [threading.Thread(target=lambda: found.append(native.code_source(cm)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1 and len(found) == 2 and found[0] is found[1]


def test_kernels_of_axis_aligned_chains_are_pinocchios_articulated_body_algorithm():
    """Axes along x, y and z, placements without rotation, diagonal inertias: the folded
    zeros and ones are written into the kernels (their operations dropped), and the joint
    accelerations of the kernel code are still Pinocchio's ABA."""
    import pinocchio as pin
    n = 12
    spec = random_tree(n, np.random.default_rng(8), chain=True)
    for i, link in enumerate(spec):
        link["kind"] = "revolute"
        link["axis"] = np.eye(3)[i % 3]
        link["n0"], link["angle"] = np.array([0.0, 0.0, 1.0]), 0.0
        link["I"] = np.diag(np.diag(link["I"]))
    cm = mb.compile(TreeModel(spec), parameters="constant")
    fn, stats = structured_dynamics(cm.system, cm.parameter_mode)
    model = pinocchio_model(spec)
    rng = np.random.default_rng(9)
    phi = [cm.states.index(f"joint{i}.phi") for i in range(n)]
    w = [cm.states.index(f"joint{i}.w") for i in range(n)]
    for _ in range(3):
        x = rng.uniform(-1.0, 1.0, len(cm.states))
        ours = np.array(fn(0.0, x, [], cm.parameter_vector(), [])[0]).ravel()
        reference = pin.aba(model, model.createData(), x[phi], x[w], np.zeros(n))
        assert np.max(np.abs(ours[w] - reference)) <= 1e-10 * max(1.0, np.abs(reference).max())
    arithmetic = (ca.OP_ADD, ca.OP_SUB, ca.OP_MUL, ca.OP_DIV, ca.OP_NEG)

    def count(f):
        return sum(f.instruction_id(k) in arithmetic for k in range(f.n_instructions()))
    ours = sum(count(fn.instruction_MX(k).which_function()) for k in range(fn.n_instructions())
               if fn.instruction_id(k) == ca.OP_CALL)
    assert ours <= 1.15 * count(cm.dynamics)  # measured 1.08; 4.66 without the folding


@pytest.mark.skipif(not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")),
                    reason="no C compiler on this machine")
def test_kernel_calls_are_marked_for_a_lighter_optimization_and_compute_the_same(tmp_path):
    """In casadi's C of the kernel Function, the generated functions that only call kernels
    (the dynamics and their forward derivative) are marked for gcc's -O1, the kernels
    themselves are not; and the library built at -O2 (from the schedule) computes what the
    virtual machine does, derivative included."""
    from mbmodel import codegen
    cm = mb.compile(TreeModel(random_tree(4, np.random.default_rng(11), chain=True)),
                    parameters="constant")
    fn, _ = structured_dynamics(cm.system, cm.parameter_mode)
    source = codegen.casadi_c(fn, derivatives=True)
    marked = re.findall(r"^MBMODEL_DISPATCH static int (casadi_f\d+)\(", source, re.M)
    defined = re.findall(r"^(?:MBMODEL_DISPATCH )?static int (casadi_f\d+)\(const casadi_real",
                         source, re.M)
    calling = {name for name in defined
               if re.search(r"if \(casadi_f\d+\(", source[source.index(f"int {name}("):].split(
                   "\n}\n", 1)[0])}
    assert len(marked) == 2 and set(marked) == calling  # the dynamics and their derivative
    assert len(defined) > 2 * distinct_kernels(fn)  # each kernel and its derivative unmarked
    assert codegen._generate_c(cm.dynamics).count("MBMODEL_DISPATCH static") == 0  # flat
    fast = codegen.compile_function(fn, cache_dir=tmp_path, derivatives=True, optimize=2)
    assert fast.is_a("External")
    rng = np.random.default_rng(12)
    X = ca.MX.sym("x", len(cm.states))
    jacobians = [ca.Function("j", [X], [ca.jacobian(f(0.0, X, ca.MX(0, 1), ca.MX(0, 1),
                                                          ca.MX(0, 1))[0], X)])
                 for f in (fast, fn)]
    for _ in range(3):
        x = rng.uniform(-1.0, 1.0, len(cm.states))
        ours, reference = (np.array(f(0.0, x, [], [], [])[0]).ravel() for f in (fast, fn))
        assert np.max(np.abs(ours - reference)) <= 1e-12 * max(1.0, np.abs(reference).max())
        ours, reference = (np.array(j(x)) for j in jacobians)
        assert np.max(np.abs(ours - reference)) <= 1e-11 * max(1.0, np.abs(reference).max())


def distinct_kernels(fn) -> int:
    """How many distinct kernels the MX Function ``fn`` calls."""
    return len({fn.instruction_MX(k).which_function().name() for k in range(fn.n_instructions())
                if fn.instruction_id(k) == ca.OP_CALL})


@pytest.mark.parametrize("collecting", [True, False])
def test_the_collector_pauses_while_kernels_build_and_comes_back(collecting, monkeypatch):
    """Building kernels, like compiling, allocates many objects it frees only at the end:
    the cyclic collector is off meanwhile, and as it was afterwards."""
    import gc
    from mbmodel import kernels
    seen = []
    build = kernels._structured_dynamics

    def watched(*args):
        seen.append(gc.isenabled())
        return build(*args)

    monkeypatch.setattr(kernels, "_structured_dynamics", watched)
    cm = mb.compile(RevoluteChain(3), parameters="constant")
    was = gc.isenabled()
    (gc.enable if collecting else gc.disable)()
    try:
        assert structured_dynamics(cm.system, cm.parameter_mode) is not None
        assert seen == [False] and gc.isenabled() == collecting
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("method", ["dop853", "bdf"])
def test_a_long_chain_simulates_through_the_schedules_c_as_pinocchio_does(method):
    """A chain long enough for kernel code runs its dynamics (DOP853's loop in C) and their
    forward derivative (BDF's Newton iterations) from the schedule's library, and ends
    where scipy's DOP853 on Pinocchio's ABA ends."""
    import pinocchio as pin
    from scipy.integrate import solve_ivp
    from mbmodel import codegen
    n = 40
    spec = random_tree(n, np.random.default_rng(21), chain=True)
    cm = mb.compile(TreeModel(spec), parameters="constant")
    source = native.code_source(cm)
    assert source is not cm.dynamics
    res = cm.simulate(0.3, method=method, native=True)
    library = codegen.library_of(native.dynamics(cm, derivatives=method == "bdf"))
    assert "mbmodel_call" in library.with_suffix(".c").read_text()
    model = pinocchio_model(spec)
    data, tau = model.createData(), np.zeros(n)
    # (revolute and prismatic joints: angle or position, and its rate)
    position = [f"joint{i}.phi" if f"joint{i}.phi" in cm.states else f"joint{i}.s"
                for i in range(n)]
    phi = [cm.states.index(name) for name in position]
    w = [k + 1 for k in phi]
    assert all(cm.states[k].endswith((".w", ".v")) for k in w)
    x0 = np.array(cm.start, dtype=float)

    def rhs(t, y):
        return np.concatenate([y[n:], pin.aba(model, data, y[:n], y[n:], tau)])
    reference = solve_ivp(rhs, (0.0, 0.3), np.concatenate([x0[phi], x0[w]]),
                          method="DOP853", rtol=1e-11, atol=1e-12).y[:, -1]
    ours = np.array([res[name][-1] for name in position])
    # (measured: 8e-11 with DOP853, 9e-9 with BDF, at the default rtol 1e-8)
    assert np.max(np.abs(ours - reference[:n])) <= 1e-7
