"""Equation templates (mbmodel.templates): instances that share a template get exactly the
equations their own equations() would write, and what a template cannot stand for (other
components' symbols, events, different answers to is_root/loop_cut_side, value checks)
still behaves as without templates."""

import collections

import casadi as ca
import numpy as np
import pytest

import mbmodel as mb
from mbmodel import flatten
from mbmodel.alias import eliminate_aliases, linear_pattern
from mbmodel.flat import describe
from mbmodel.structure import analyze
from mbmodel.libraries import electrical as el
from mbmodel.libraries import multibody as mbl
from mbmodel.libraries import robot_r3 as r3
from mbmodel.libraries import rotational as rot

from loop_mechanisms import Fourbar
from mb_trees import BoxesAndCylinders, ShapesWithBodies, TreeModel, random_tree


def flat_text(model, analysis, parameters, templates):
    """Everything flattening produces that later stages read, as text: variables,
    parameters, every residual and the equation as written, asserts."""
    flat = flatten(model, analysis, parameters, templates=templates)
    return ([(v.name, v.kind, v.start, v.derivative_of) for v in flat.variables],
            [(p.name, p.value) for p in flat.parameters],
            [(str(e.residual), describe(e.shown) if not isinstance(e.shown, str) else e.shown,
              e.origin) for e in flat.equations],
            [(str(a.condition), a.message, a.origin) for a in flat.asserts])


def assert_same_flat_model(make, analysis="forward", parameters="symbolic"):
    with_templates = flat_text(make(), analysis, parameters, True)
    without = flat_text(make(), analysis, parameters, False)
    for part, (a, b) in zip(("variables", "parameters", "equations", "asserts"),
                            zip(with_templates, without)):
        assert len(a) == len(b), part
        for x, y in zip(a, b):
            assert x == y, (part, x, y)


class TwoLinks(mb.Model):
    """Two revolute joints, each carrying a body: ``bodies()`` makes the two bodies (fresh
    ones for every model built), ``second_axis`` is the second joint's axis."""

    def __init__(self, bodies, second_axis=(0, 1, 0), **modifiers):
        super().__init__(**modifiers)
        self.world = mbl.World()
        self.j0, self.j1 = mbl.Revolute(n=[0, 0, 1]), mbl.Revolute(n=list(second_axis))
        self.b0, self.b1 = bodies()

    def equations(self):
        yield mb.connect(self.world.frame_b, self.j0.frame_a)
        yield mb.connect(self.j0.frame_b, self.b0.frame_a)
        yield mb.connect(self.b0.frame_a, self.j1.frame_a)
        yield mb.connect(self.j1.frame_b, self.b1.frame_a)


@pytest.mark.parametrize("analysis", ["forward", "inverse"])
@pytest.mark.parametrize("parameters", ["symbolic", "constant"])
@pytest.mark.parametrize("kind", ["chain", "tree", "spherical", "floating"])
def test_random_trees_flatten_to_the_same_equations(kind, analysis, parameters):
    rng = np.random.default_rng({"chain": 1, "tree": 2, "spherical": 3, "floating": 4}[kind])
    spec = random_tree(7, rng, chain=kind == "chain", spherical=kind == "spherical",
                       floating=kind == "floating")
    if kind == "tree":  # coordinate axes: the folded joints choose the cheaper rotation
        for i, s in enumerate(spec):
            s["axis"] = np.eye(3)[i % 3] * (1 if i % 2 else -1)
    assert_same_flat_model(lambda: TreeModel(spec), analysis, parameters)


@pytest.mark.parametrize("analysis", ["forward", "inverse"])
def test_the_manutec_r3_robot_flattens_to_the_same_equations(analysis):
    model = r3.FullRobot if analysis == "forward" else r3.InverseRobot
    assert_same_flat_model(model, analysis, "constant")


def test_a_loop_mechanism_and_point_gravity_flatten_to_the_same_equations():
    assert_same_flat_model(Fourbar, "forward", "constant")

    class PointGravity(mb.Model):
        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.world = mbl.World(gravity_type="point")
            for i in range(3):
                self.add(f"j{i}", mbl.Revolute(n=[0, 0, 1]))
                self.add(f"b{i}", mbl.BodyShape(r=[0.5, 0, 0], m=1.0, r_CM=[0.25, 0, 0]))

        def equations(self):
            yield mb.connect(self.world.frame_b, self.j0.frame_a)
            for i in range(3):
                yield mb.connect(getattr(self, f"j{i}").frame_b, getattr(self, f"b{i}").frame_a)
                if i:
                    yield mb.connect(getattr(self, f"b{i - 1}").frame_b,
                                     getattr(self, f"j{i}").frame_a)
    assert_same_flat_model(PointGravity, "forward", "symbolic")


def test_a_chain_runs_each_classs_equations_once(monkeypatch):
    """A 12-link chain records one template per class (the other instances call it); the
    multibody tests against Pinocchio run through the same path."""
    calls = {}
    for cls in (mbl.Body, mbl.Revolute, mbl.FixedRotation):
        def counted(self, original=cls.equations, name=cls.__name__):
            calls[name] = calls.get(name, 0) + 1
            return original(self)
        monkeypatch.setattr(cls, "equations", counted)
    spec = random_tree(12, np.random.default_rng(5), chain=True)
    for s in spec:
        s["kind"] = "revolute"
    flatten(TreeModel(spec), "forward", "constant")
    assert calls == {"Body": 1, "Revolute": 1, "FixedRotation": 1}
    calls.clear()
    flatten(TreeModel(spec), "forward", "constant", templates=False)
    assert calls == {"Body": 12, "Revolute": 12, "FixedRotation": 12}


def test_a_zero_axis_is_refused_in_every_instance_not_only_the_first():
    with pytest.raises(mb.ParameterError, match="j1.*zero length"):
        mb.compile(TwoLinks(lambda: (mbl.Body(), mbl.Body()), second_axis=(0, 0, 0)))


def test_a_class_whose_equations_read_another_component_is_not_shared():
    """A key that promises too much is caught where the record can see it: equations on
    another component's symbol run per instance (and give the right model)."""
    class Follower(mb.Model):
        phi = mb.Variable(0.0)

        def __init__(self, leader, **modifiers):
            super().__init__(**modifiers)
            object.__setattr__(self, "_leader", leader)  # a reference, not a sub-component

        def template_key(self):
            return ()

        def equations(self):
            yield self.phi == 2 * self._leader.phi

    class Twins(mb.Model):
        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.inertia = rot.Inertia(J=1.0, phi=mb.Fixed(0.3))
            self.other = rot.Inertia(J=1.0, phi=mb.Fixed(-0.2))
            self.f1 = Follower(self.inertia)
            self.f2 = Follower(self.other)

    flat = flatten(Twins(), templates=True)
    residuals = {e.origin: str(e.residual) for e in flat.equations if e.origin.startswith("f")}
    assert "inertia.phi" in residuals["f1"] and "other.phi" in residuals["f2"]


class _Follower(mb.Model):
    """Turns at ``k`` times the angle of the inertia its flange meets, whose variables its
    equations read: that inertia is its template partner."""

    flange = rot.Flange_a()
    phi = mb.Variable(0.0)
    k = mb.Parameter(2.0)
    template_key_reads_connections = True

    def template_key(self):
        return (self.leader() is not None,)

    def template_partners(self):
        leader = self.leader()
        return () if leader is None else (leader,)

    def leader(self):
        others = self.connected(self.flange)
        return others[0].owner if len(others) == 1 else None

    def equations(self):
        yield self.flange.tau == 0
        yield self.phi == self.k * self.leader().phi


class _FollowerWithoutKey(_Follower):
    """The same equations, without the promise that its key reads the connections."""

    template_key = _Follower.template_key


class _Followed(mb.Model):
    def __init__(self, follower, n=4, **modifiers):
        super().__init__(**modifiers)
        for i in range(n):
            self.add(f"inertia{i}", rot.Inertia(J=1.0 + i, phi=mb.Fixed(0.1 * i),
                                                w=mb.Fixed(1.0 - 0.5 * i)))
            self.add(f"follower{i}", follower(k=1.0 + i))
        self.n = n

    def equations(self):
        for i in range(self.n):
            yield mb.connect(getattr(self, f"inertia{i}").flange_b,
                             getattr(self, f"follower{i}").flange)


@pytest.mark.parametrize("follower, runs", [(_Follower, 1), (_FollowerWithoutKey, 4)])
def test_a_class_that_reads_its_template_partners_shares_its_equations(monkeypatch, follower,
                                                                       runs):
    """A class whose equations read the variables of a component it finds through
    connected() shares one template across instances when it names that component as a
    partner (Model.template_partners) and states that its key reads the connections;
    without that statement every instance runs its own. Both give the same model, and the
    followers turn at k times their inertia's angle."""
    calls = []
    original = _Follower.equations
    monkeypatch.setattr(_Follower, "equations", lambda self: calls.append(1) or original(self))
    assert_same_flat_model(lambda: _Followed(follower))
    calls.clear()
    model = _Followed(follower)
    result = mb.compile(model).simulate(1.0)
    assert len(calls) == runs
    for i in range(4):
        angle = 0.1 * i + (1.0 - 0.5 * i) * result.t
        assert np.allclose(result[f"follower{i}.phi"], (1.0 + i) * angle, rtol=0, atol=1e-9)


def test_a_class_whose_equations_make_relations_is_not_shared():
    """A comparison on a variable makes a relation (a flat variable of its own) even where
    noEvent turns it back into the comparison: such instances run their own equations, and
    the flat model is the one without templates."""
    class Saturated(mb.Model):
        x = mb.Variable(0.5)
        y = mb.Variable()

        def template_key(self):
            return ()

        def equations(self):
            yield mb.der(self.x) == -self.x
            yield self.y == mb.noEvent(mb.functions.fmin(self.x, 0.25))

    class Two(mb.Model):
        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.a = Saturated()
            self.b = Saturated()

    assert_same_flat_model(Two)


def test_a_subclass_does_not_inherit_its_bases_key():
    """A subclass of a library body that scales its mass by an attribute of its own would
    share one template across instances with different scales if it inherited the body's
    key (which does not cover the attribute): it keeps its own equations, and the flat
    model is the one without templates."""
    class Scaled(mbl.Body):
        def __init__(self, scale, **modifiers):
            super().__init__(**modifiers)
            self.scale = float(scale)

        def mass_properties(self):
            m, c, inertia = super().mass_properties()
            return m * self.scale, c, inertia

    def two_scaled():
        return TwoLinks(lambda: (Scaled(1.0, r_CM=[0.5, 0, 0]), Scaled(3.0, r_CM=[0.5, 0, 0])))

    assert_same_flat_model(two_scaled)
    shown = " ".join(str(e.residual) for e in flatten(two_scaled()).equations
                     if e.origin == "b1")
    assert "(3*b1.m)" in shown.replace(" ", "") or "(b1.m*3)" in shown.replace(" ", "")


def test_initial_equations_run_for_every_instance():
    """The key is about equations(); every instance's initial_equations() still run (here
    only the second instance has one, as an option outside the key)."""
    class Decay(mb.Model):
        x = mb.Variable(1.0)

        def __init__(self, start_at=None, **modifiers):
            super().__init__(**modifiers)
            self.start_at = start_at

        def template_key(self):
            return ()

        def equations(self):
            yield mb.der(self.x) == -self.x

        def initial_equations(self):
            if self.start_at is not None:
                yield self.x == self.start_at

    class Two(mb.Model):
        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.a = Decay()
            self.b = Decay(start_at=3.0)

    assert_same_flat_model(Two)
    res = mb.compile(Two()).simulate(1.0)
    assert abs(res.at(1.0)["b.x"] - 3.0 * np.exp(-1.0)) < 1e-6
    assert abs(res.at(1.0)["a.x"] - np.exp(-1.0)) < 1e-6


def alias_forms_checked(flat):
    """Compares every alias form that flattening knew (template, connection) with what
    alias elimination reads from the residual itself; the number compared, by sign
    pattern of the two-member flow sums."""
    var_of = {v.symbol.element_hash(): i for i, v in enumerate(flat.variables)
              if v.kind in ("unknown", "input")}
    signs = collections.Counter()
    for eq in flat.equations:
        if eq.alias_form is None:
            continue
        assert linear_pattern(eq.residual, var_of) == (eq.alias_form or None), eq.description
        signs["known"] += 1
        if eq.description.startswith("flow sum:") and eq.description.count(",") == 1:
            signs["".join(t.strip()[0] for t in eq.description[9:].split(","))] += 1
    return signs


@pytest.mark.parametrize("make, analysis", [
    (r3.FullRobot, "forward"), (r3.InverseRobot, "inverse"), (Fourbar, "forward"),
    (lambda: TreeModel(random_tree(7, np.random.default_rng(4), floating=True)), "inverse")])
def test_alias_forms_known_in_flattening_are_what_the_residuals_say(make, analysis):
    """Templates find each class's aliases once and connections know theirs; alias
    elimination takes those forms instead of reading the residuals (casadi's folding
    decides the order of a flow sum's terms, e.g. -a + b is b - a)."""
    flat = flatten(make(), analysis, "symbolic")
    signs = alias_forms_checked(flat)
    assert signs["known"] > 0
    if make not in (r3.FullRobot, r3.InverseRobot, Fourbar):  # instances of a few classes
        assert signs["known"] > 0.8 * len(flat.equations), signs
    if make is r3.FullRobot:
        assert signs["++"] and signs["+-"] and signs["-+"], signs


def test_an_instance_whose_der_answers_with_a_declared_input_derivative_keeps_its_aliases():
    """``der(u)`` is a fresh derivative in one instance and, where the model declared
    ``Derivative(b.u[0], b.u[1])``, the input ``b.u[1]`` in the other: there
    ``b.x == der(b.u[0])`` is an alias, which the template (read on the first instance)
    does not know, so that instance's residuals are read again."""

    class Leaf(mb.Model):
        u = mb.Input(shape=2)
        x = mb.Variable()

        def template_key(self):
            return ()

        def equations(self):
            yield self.x == mb.der(self.u[0])

    class Source(mb.Model):
        y = mb.Output(shape=2)

        def equations(self):
            yield mb.der(self.y[0]) == -self.y[0] + self.y[1]
            yield self.y[1] == 1.0

    class Top(mb.Model):
        ub = mb.Input(shape=2)

        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.s, self.a, self.b = Source(), Leaf(), Leaf()

        def equations(self):
            yield mb.Derivative(self.b.u[0], self.b.u[1])
            yield mb.connect(self.s.y, self.a.u)
            yield mb.connect(self.ub, self.b.u)

    def removed(flat):
        return [flat.equations[k].description for k in eliminate_aliases(flat).removed_equations]

    flat = flatten(Top())
    alias_forms_checked(flat)
    assert removed(flat) == removed(flatten(Top(), templates=False))
    assert any(text.startswith("(b.x==") for text in removed(flat)), removed(flat)


def slopes_checked(flat):
    """Compares every equation's slopes that flattening knew (template, flow sum) with the
    Jacobian of its residual: the same columns, the constant entries equal to the last bit
    and the others not constants. Returns the number compared."""
    known = [eq for eq in flat.equations if eq.slopes is not None]
    if not known:
        return 0
    jac = ca.jacobian(ca.vertcat(*[eq.residual for eq in known]),
                      ca.vertcat(*[v.symbol for v in flat.variables]))
    rows = [{} for _ in known]
    for r, c, entry in zip(*jac.sparsity().get_triplet(), jac.nonzeros()):
        rows[r][c] = entry
    for eq, entries in zip(known, rows):
        constant, varying, positions = eq.slopes
        assert (sorted(entries) == sorted([positions[c] for c, _ in constant]
                                          + [positions[c] for c in varying])), eq.description
        for c, number in constant:
            entry = entries[positions[c]]
            assert entry.is_constant() and float(entry) == number, eq.description
        assert not any(entries[positions[c]].is_constant() for c in varying), eq.description
    return len(known)


@pytest.mark.parametrize("make, analysis", [
    (r3.FullRobot, "forward"), (r3.InverseRobot, "inverse"), (Fourbar, "forward"),
    (lambda: TreeModel(random_tree(7, np.random.default_rng(4), floating=True)), "inverse"),
    (lambda: TreeModel(random_tree(9, np.random.default_rng(5), spherical=True)), "forward")])
def test_slopes_known_in_flattening_are_the_residuals_jacobian(make, analysis):
    """Templates find each class's Jacobian once (flow sums know theirs); the structural
    analysis takes its constant coefficients instead of differentiating every instance's
    equations, so they must be the Jacobian of the residuals, entry by entry."""
    flat = flatten(make(), analysis, "symbolic")
    compared = slopes_checked(flat)
    assert compared > 0
    if make not in (r3.FullRobot, r3.InverseRobot, Fourbar):  # instances of a few classes
        own = sum(eq.kind == "model" for eq in flat.equations)  # connections: mostly aliases
        assert compared > 0.5 * own, (compared, own)


@pytest.mark.parametrize("make, analysis, parameters", [
    (r3.FullRobot, "forward", "symbolic"),
    (lambda: TreeModel(random_tree(12, np.random.default_rng(1), chain=True)), "forward",
     "constant"),
    (lambda: TreeModel(random_tree(7, np.random.default_rng(4), floating=True)), "inverse",
     "symbolic"),
    (Fourbar, "forward", "symbolic")])
def test_the_sorted_system_is_the_same_with_and_without_templates(make, analysis, parameters):
    """With templates the structural analysis reads coefficients and linear candidates from
    the classes' slopes; without, it differentiates every equation. Blocks, the assignment
    sequence and every solved expression must be the same."""
    systems = [analyze(flatten(make(), analysis, parameters, templates=templates))
               for templates in (True, False)]
    with_templates, without = systems
    assert with_templates.names == without.names
    assert ([(b.kind, b.equations, b.variables) for b in with_templates.blocks]
            == [(b.kind, b.equations, b.variables) for b in without.blocks])
    assert ([(v, str(expr)) for v, expr in with_templates.sequence]
            == [(v, str(expr)) for v, expr in without.sequence])
    assert [str(r) for r in with_templates.residuals] == [str(r) for r in without.residuals]


def test_the_structural_analysis_takes_most_coefficients_from_the_classes():
    """On a chain of a few classes, most equations' slopes come from the templates (mapped
    through the aliases): the analysis differentiates only the rest."""
    from mbmodel.structure import _Analysis

    flat = flatten(TreeModel(random_tree(12, np.random.default_rng(1), chain=True)),
                   "forward", "constant")
    analysis = _Analysis(flat, eliminate_aliases(flat))
    analysis.run()
    known = sum(s is not None for s in analysis.slopes)
    assert known > 0.8 * len(analysis.slopes), (known, len(analysis.slopes))


@pytest.mark.parametrize("analysis", ["forward", "inverse"])
@pytest.mark.parametrize("parameters", ["symbolic", "constant"])
def test_shapes_that_ask_what_hangs_on_them_flatten_to_the_same_equations(analysis,
                                                                          parameters):
    """A BodyShape asks connected() whether a body hangs alone on its frame_b; its key
    says so (template_key_reads_connections), so the shapes without one share a template
    and the others run their own equations."""
    assert_same_flat_model(ShapesWithBodies, analysis, parameters)
    from mb_trees import RevoluteChain
    assert_same_flat_model(lambda: RevoluteChain(5), analysis, parameters)


def test_a_chain_of_shapes_records_one_shape(monkeypatch):
    """Without the key covering connected(), every BodyShape of a chain ran its own
    equations(); now the first records them for the others."""
    from mb_trees import RevoluteChain
    runs = collections.Counter()
    original = mbl.BodyShape.equations

    def counted(self):
        runs[type(self).__name__] += 1
        return original(self)

    monkeypatch.setattr(mbl.BodyShape, "equations", counted)
    flatten(RevoluteChain(12), "forward", "constant")
    assert runs["BodyShape"] == 1, runs


@pytest.mark.parametrize("analysis", ["forward", "inverse"])
@pytest.mark.parametrize("parameters", ["symbolic", "constant"])
def test_boxes_and_cylinders_share_templates_by_their_axes(analysis, parameters,
                                                           monkeypatch):
    """BodyBox and BodyCylinder write their principal axes (from r's direction and the
    width direction) as numbers: their key holds the axes, so shapes along one direction
    share a template, the others run their own, and the flat model is the same as with
    every instance running its own equations()."""
    assert_same_flat_model(BoxesAndCylinders, analysis, parameters)
    runs = collections.Counter()
    for cls in (mbl.BodyBox, mbl.BodyCylinder):
        monkeypatch.setattr(cls, "equations", lambda self, _run=cls.equations: (
            runs.update([type(self).__name__]), _run(self))[1])
    flatten(BoxesAndCylinders(), analysis, parameters)
    # boxes: along y (0, 4), along x with a body attached (2), along x with the width
    # turned (6); cylinders: along x (1, 3, 7), with a body attached (5)
    assert runs == {"BodyBox": 3, "BodyCylinder": 2}, runs


class Leaking(mb.Model):
    """Decays at a rate plus its pin's current times a signal: the pin is left open, so
    its current is the constant 0 and the product vanishes, with the signal's slope."""

    p = el.PositivePin()
    x = mb.Variable()
    y = mb.Variable(start=1.0)

    def template_key(self):
        return ()

    def equations(self):
        yield mb.der(self.y) == -self.y + self.p.i * self.x
        yield self.x == mb.functions.sin(mb.time)
        yield self.p.v == self.y


class Fed(Leaking):
    """Decays at a rate set by a signal, fed by its open pin's current: the constant 0
    enters affinely (the others' slopes stay as the class found them)."""

    template_key = Leaking.template_key

    def equations(self):
        yield mb.der(self.y) == -self.x * self.y + self.p.i
        yield self.x == 1.5 + mb.functions.sin(mb.time)
        yield self.p.v == self.y


class TwoLeaking(mb.Model):
    first = Leaking()
    second = Leaking()
    fed = Fed()
    fed_too = Fed()


@pytest.mark.parametrize("make, analysis", [
    (r3.FullRobot, "forward"), (r3.InverseRobot, "inverse"), (Fourbar, "forward"),
    (lambda: TreeModel(random_tree(7, np.random.default_rng(4), floating=True)), "inverse"),
    (TreeModel, "forward"), (TwoLeaking, "forward")])
def test_the_incidence_known_from_the_classes_is_the_equations_sparsity(make, analysis):
    """The analysis reads which unknowns an equation holds from its class's slopes where it
    can, and asks casadi only for the rest: the rows must be casadi's, one by one."""
    from mbmodel.structure import _Analysis, incidence_lists

    chain = make is TreeModel
    model = TreeModel(random_tree(12, np.random.default_rng(1), chain=True)) if chain else make()
    flat = flatten(model, analysis, "symbolic")
    studied = _Analysis(flat, eliminate_aliases(flat))
    studied.build_variables()
    stacked = (studied.build_equations(), studied.symbol_vector[studied.unknown_ids])
    studied.slopes = studied.template_slopes(
        {g: i for i, g in enumerate(studied.unknown_ids)})
    assert any(s is not None for s in studied.slopes)
    assert studied.known_incidence(stacked) == incidence_lists(*stacked)
    # and the slopes are the substituted equations' Jacobian, entry by entry, also where a
    # variable became a constant (a joint's torque without a drive: 0)
    jacobian = ca.jacobian(*stacked)
    rows, columns = jacobian.sparsity().get_triplet()
    entries = {(r, c): x for r, c, x in zip(rows, columns, jacobian.nonzeros())}
    constants = 0
    for e, (slopes, k) in enumerate(zip(studied.slopes, studied.aliases.kept_equations)):
        if slopes is None:
            continue
        for column, number in slopes[0].items():
            assert entries[e, column].is_constant() and float(entries[e, column]) == number
        assert not any(entries[e, column].is_constant() for column in slopes[1])
        positions = flat.equations[k].slopes[2]
        constants += any(studied.alias.get(g, (0,))[0] is None for g in positions
                         if g is not None)
    assert constants > 0 or not chain, constants
    if chain or make is TwoLeaking:
        # every equation of a template is read from its class, also where a variable
        # became a constant inside a product (a joint's torque over its articulated inertia:
        # the class's slopes with the constant put in); casadi only for the others
        from_templates = [s for s, k in zip(studied.slopes, studied.aliases.kept_equations)
                          if flat.equations[k].slopes is not None]
        assert None not in from_templates
