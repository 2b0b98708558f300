"""Multibody modelling mistakes: each gets a named, specific error that points at the
component (or connection) at fault."""

from __future__ import annotations

import numpy as np
import pytest

import mbmodel as mb
from mbmodel.libraries import multibody as mbl


def _pendulum(joint=None, **body):
    """World - joint - body (the body's keyword arguments are passed through)."""

    class Pendulum(mb.Model):
        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.world = mbl.World()
            self.joint = joint if joint is not None else mbl.Revolute(n=[0, 0, 1])
            self.body = mbl.Body(**body)

        def equations(self):
            yield mb.connect(self.world.frame_b, self.joint.frame_a)
            yield mb.connect(self.joint.frame_b, self.body.frame_a)

    return Pendulum()


ANALYSES = ["forward", "inverse"]


# --- orientation graph: unconnected frames, missing roots, loops --------------------------

class UnconnectedBody(mb.Model):
    world = mbl.World()
    joint = mbl.Revolute()
    body = mbl.Body(m=1.0)
    loose = mbl.Body(m=2.0)

    def equations(self):
        yield mb.connect(self.world.frame_b, self.joint.frame_a)
        yield mb.connect(self.joint.frame_b, self.body.frame_a)


@pytest.mark.parametrize("analysis", ANALYSES)
def test_unconnected_body_frame_is_a_balance_error_naming_the_frame(analysis):
    with pytest.raises(mb.BalanceError) as info:
        mb.compile(UnconnectedBody(), analysis=analysis)
    msg = str(info.value)
    assert "loose.frame_a" in msg
    assert "body.frame_a" not in msg and "joint.frame" not in msg  # only the culprit
    assert "root" in msg and "not determined" in msg


class Rootless(mb.Model):
    """A joint and a body hanging in nothing: no World, no Fixed."""

    joint = mbl.Revolute()
    body = mbl.BodyShape(r=[1, 0, 0], m=1.0)

    def equations(self):
        yield mb.connect(self.joint.frame_b, self.body.frame_a)


def test_mechanism_without_world_or_fixed_root_is_a_balance_error():
    with pytest.raises(mb.BalanceError) as info:
        mb.compile(Rootless())
    msg = str(info.value)
    for frame in ("joint.frame_a", "joint.frame_b", "body.frame_a"):
        assert frame in msg
    assert "root" in msg and "world/fixed" in msg


class TwoRootsJoined(mb.Model):
    """World and a Fixed frame rigidly connected by a FixedTranslation."""

    world = mbl.World()
    fixed = mbl.Fixed(r=[1.0, 0.0, 0.0])
    rod = mbl.FixedTranslation(r=[1.0, 0.0, 0.0])

    def equations(self):
        yield mb.connect(self.world.frame_b, self.rod.frame_a)
        yield mb.connect(self.rod.frame_b, self.fixed.frame_b)


@pytest.mark.parametrize("analysis", ANALYSES)
def test_two_roots_joined_rigidly_is_a_balance_error(analysis):
    with pytest.raises(mb.BalanceError) as info:
        mb.compile(TwoRootsJoined(), analysis=analysis)
    msg = str(info.value)
    assert "fixed" in msg and "rod" in msg
    assert "connect(" in msg


def test_two_roots_joined_message_names_both_roots():
    with pytest.raises(mb.BalanceError) as info:
        mb.compile(TwoRootsJoined())
    msg = str(info.value)
    assert "world" in msg and "fixed" in msg and "two roots" in msg


class FourBar(mb.Model):
    """world - j1 - crank - j2 - coupler - j3 - back to the world frame (a closed loop)."""

    world = mbl.World()
    j1 = mbl.Revolute(n=[0, 0, 1])
    crank = mbl.BodyShape(r=[1, 0, 0], r_CM=[0.5, 0, 0], m=1.0)
    j2 = mbl.Revolute(n=[0, 0, 1])
    coupler = mbl.BodyShape(r=[0, -1, 0], r_CM=[0, -0.5, 0], m=1.0)
    j3 = mbl.Revolute(n=[0, 0, 1])

    def equations(self):
        yield mb.connect(self.world.frame_b, self.j1.frame_a)
        yield mb.connect(self.j1.frame_b, self.crank.frame_a)
        yield mb.connect(self.crank.frame_b, self.j2.frame_a)
        yield mb.connect(self.j2.frame_b, self.coupler.frame_a)
        yield mb.connect(self.coupler.frame_b, self.j3.frame_a)
        yield mb.connect(self.j3.frame_b, self.world.frame_b)


def test_loop_of_three_joints_is_a_structure_without_states():
    """Three revolute joints in one planar loop: three closure constraints, no freedom."""
    cm = mb.compile(FourBar())
    assert cm.states == []


def test_loop_with_every_joint_prescribed_names_the_loop():
    """In the inverse analysis every joint's motion is an input by default: the loop
    cannot close, and the message says which loop and what to change."""
    with pytest.raises(mb.StructuralSingularityError) as info:
        mb.compile(FourBar(), analysis="inverse")
    msg = str(info.value)
    assert "the loop closed by connect(world.frame_b, j3.frame_b)" in msg
    for part in ("j1", "crank", "j2", "coupler", "j3"):
        assert part in msg, part
    assert "prescribed=False" in msg


def test_a_spatial_loop_of_revolutes_without_enough_freedom_says_so_in_the_forward_analysis():
    """A four-bar whose last axis is tilted is a spatial loop: six closure equations for
    four revolute coordinates. The message used to offer only the inverse analysis's cause
    (coordinates already prescribed), which does not apply here."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from loop_mechanisms import A, B, C, D, INERTIAS, MASSES, _link, connect_chain

    class Tilted(mb.Model):
        world = mbl.World()
        j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(0.3), w=mb.Fixed(2.0))
        crank = _link(A, MASSES[0], INERTIAS[0])
        j2 = mbl.Revolute(n=[0, 0, 1], prescribed=False)
        coupler = _link(B, MASSES[1], INERTIAS[1])
        j3 = mbl.Revolute(n=[0, 0, 1], prescribed=False)
        rocker = _link(C, MASSES[2], INERTIAS[2])
        j4 = mbl.Revolute(n=[0, 0.1, 1], prescribed=False)  # the tilted axis
        anchor = mbl.Fixed(r=[D, 0, 0])

        def equations(self):
            yield from connect_chain(self.world, self.j1, self.crank, self.j2, self.coupler,
                                     self.j3, self.rocker, self.j4)
            yield mb.connect(self.j4.frame_b, self.anchor.frame_b)

    with pytest.raises(mb.StructuralSingularityError) as info:
        mb.compile(Tilted())
    msg = str(info.value)
    assert "the loop closed by connect(j4.frame_b, anchor.frame_b)" in msg
    assert ("revolute joints whose axes are not all parallel make a spatial loop, closed "
            "by 6 equations; make the axes parallel (a planar loop) or give the loop more "
            "freedom (a Spherical or Universal joint in place of a revolute)") in msg



def test_a_planar_loop_closed_by_a_spherical_constraint_names_the_redundant_equation():
    """A planar four-bar whose last revolute is replaced by a SphericalConstraint: three
    coordinates and three closure equations count as no freedom, so fixing the crank's
    angle and speed over-determines the model, but the closure normal to the plane repeats
    the other two. The message used to say only that the start values were too many."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from loop_mechanisms import A, B, C, D, INERTIAS, MASSES, _link, connect_chain

    class Planar(mb.Model):
        world = mbl.World()
        j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(0.3), w=mb.Fixed(2.0))
        crank = _link(A, MASSES[0], INERTIAS[0])
        j2 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(1.0))
        coupler = _link(B, MASSES[1], INERTIAS[1])
        j3 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(1.5))
        rocker = _link(C, MASSES[2], INERTIAS[2])
        ball = mbl.SphericalConstraint()
        anchor = mbl.Fixed(r=[D, 0, 0])

        def equations(self):
            yield from connect_chain(self.world, self.j1, self.crank, self.j2, self.coupler,
                                     self.j3, self.rocker)
            yield mb.connect(self.rocker.frame_b, self.ball.frame_a)
            yield mb.connect(self.ball.frame_b, self.anchor.frame_b)

    cm = mb.compile(Planar())
    assert cm.states == [] and cm.algebraic == ["j1.phi", "j2.phi", "j3.phi"]
    with pytest.raises(mb.InitializationError) as info:
        cm.simulate(0.1)
    msg = str(info.value)
    assert msg.startswith("the initial conditions over-determine the model: j1.phi = 0.3")
    assert ("The model's equations are dependent at the start point, though: those solved "
            "for its algebraic variables (j1.phi, j2.phi, j3.phi) have rank 2, not 3: 1 of "
            "them repeats what the others say there") in msg
    assert "a SphericalConstraint, or a rigid connection, closing a planar loop" in msg
    # the one equation named is the closure normal to the plane (z)
    dependent = msg.split("The dependent equations:\n")[1].splitlines()
    assert len(dependent) == 1 and "rocker.frame_b.r_0_2==" in dependent[0]



def test_a_joint_moving_no_mass_explains_the_non_finite_inertia():
    """A revolute joint carrying a body of no mass and no inertia: the articulated inertia
    it divides by is 0, and the run fails at its first step. The diagnosis named the
    equation (a division by zero in the joint's equations); the joint now says what that
    means and what to change."""

    class Massless(mb.Model):
        world = mbl.World()
        j = mbl.Revolute(n=[0, 0, 1])
        b = mbl.Body(m=0.0, r_CM=[0.5, 0, 0], I_11=0.0, I_22=0.0, I_33=0.0)

        def equations(self):
            yield mb.connect(self.world.frame_b, self.j.frame_a)
            yield mb.connect(self.j.frame_b, self.b.frame_a)

    import gc
    cm = mb.compile(Massless())  # the model itself not kept: the joint still explains
    gc.collect()
    for run in (lambda: mb.simulate(Massless(), 1.0), lambda: cm.simulate(1.0)):
        with pytest.raises(mb.SimulationError) as info:
            run()
        msg = str(info.value)
        assert "At t = 0, j.frame_a.I[0] = nan" in msg
        assert ("\nj: in the forward analysis the joint solves with D = Phi' A Phi, the "
                "articulated inertia of everything beyond it") in msg
        assert "a massless Body or BodyShape (m = 0 and zero inertia) at the end" in msg


def test_a_point_mass_on_a_ball_joint_explains_the_missing_inertia():
    """The textbook spherical pendulum: a point mass on a Spherical joint has no inertia
    about the rod, D has rank 2, and the message says so and what to change."""
    model = _pendulum(mbl.Spherical(Q=mb.Fixed([0.2, 0.0, 0.0, 0.98])), m=1.0,
                      r_CM=[0, -1, 0], I_11=0, I_22=0, I_33=0)
    with pytest.raises(mb.SimulationError) as info:
        mb.simulate(model, 1.0)
    msg = str(info.value)
    assert "\njoint: in the forward analysis the joint solves with D = Phi' A Phi" in msg
    assert "a point mass on a Spherical or FreeMotion joint" in msg
    assert "use a Universal joint for the pendulum" in msg


# --- parameters -------------------------------------------------------------------------

@pytest.mark.parametrize("joint_type", [mbl.Revolute, mbl.Prismatic])
def test_zero_length_joint_axis_names_the_joint(joint_type):
    with pytest.raises(mb.ParameterError) as info:
        mb.compile(_pendulum(joint=joint_type(n=[0.0, 0.0, 0.0])))
    msg = str(info.value)
    assert f"{joint_type.__name__} 'joint'" in msg
    assert "zero length" in msg and "axis" in msg


def test_zero_length_fixed_rotation_axis():
    class Model(mb.Model):
        world = mbl.World()
        tilt = mbl.FixedRotation(n=[0.0, 0.0, 0.0], angle=0.3)
        body = mbl.Body()

        def equations(self):
            yield mb.connect(self.world.frame_b, self.tilt.frame_a)
            yield mb.connect(self.tilt.frame_b, self.body.frame_a)

    with pytest.raises(mb.ParameterError, match=r"FixedRotation 'tilt'.*zero length"):
        mb.compile(Model())


@pytest.mark.parametrize("make, message", [
    (lambda: mbl.BodyBox(r=[0.0, 0.0, 0.0]), r"BodyBox 'link'.*r has zero length"),
    (lambda: mbl.BodyCylinder(r=[0.0, 0.0, 0.0]), r"BodyCylinder 'link'.*r has zero length")])
def test_a_box_or_cylinder_without_a_length_direction(make, message):
    """Their principal axes follow r: a zero r gives none (checked for every instance,
    also those that share a template)."""
    class Model(mb.Model):
        world = mbl.World()
        joint = mbl.Revolute(n=[0.0, 0.0, 1.0])
        first = mbl.BodyBox(r=[0.5, 0.0, 0.0])
        link = make()

        def equations(self):
            yield mb.connect(self.world.frame_b, self.joint.frame_a)
            yield mb.connect(self.joint.frame_b, self.first.frame_a)
            yield mb.connect(self.first.frame_b, self.link.frame_a)

    with pytest.raises(mb.ParameterError, match=message):
        mb.compile(Model())


def test_inertia_that_is_not_positive_definite():
    # principal moments -1, 1, 3
    with pytest.raises(mb.ParameterError) as info:
        mb.compile(_pendulum(m=1.0, I_11=1.0, I_22=1.0, I_33=1.0, I_21=2.0))
    msg = str(info.value)
    assert "Body 'body'" in msg and "positive semi-definite" in msg


def test_negative_principal_moment():
    # (the message pointed at the products of inertia, which are 0 here; review)
    with pytest.raises(mb.ParameterError, match=r"Body 'body'.*positive semi-definite.*: the "
                                                r"moment of inertia I_11 = -0.1 is negative$"):
        mb.compile(_pendulum(m=1.0, I_11=-0.1, I_22=1.0, I_33=1.0))


@pytest.mark.parametrize("make, message", [
    (lambda: mbl.BodyBox(r=[0.5, 0, 0], width=-0.06), "width must be positive"),
    (lambda: mbl.BodyBox(r=[0.5, 0, 0], height=-2.0), "height must be positive"),
    (lambda: mbl.BodyCylinder(r=[0.5, 0, 0], diameter=-0.1), "diameter must be positive")])
def test_a_negative_size_of_a_shape_is_refused(make, message):
    """Any negative size was taken for the default one (|r|/20) without a word (review);
    -1, the parameters' default, stands for the default only."""
    model = _shaped_pendulum(make)
    with pytest.raises(mb.ParameterError, match=f"link: {message}"):
        mb.compile(model)
    cm = mb.compile(_shaped_pendulum(lambda: mbl.BodyBox(r=[0.5, 0, 0])))
    with pytest.raises(mb.ParameterError, match="link: width must be positive"):
        cm.simulate(0.1, params={"link.width": -0.5})


def _shaped_pendulum(make):
    class Shaped(mb.Model):
        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.world = mbl.World()
            self.joint = mbl.Revolute(n=[0, 0, 1])
            self.link = make()

        def equations(self):
            yield mb.connect(self.world.frame_b, self.joint.frame_a)
            yield mb.connect(self.joint.frame_b, self.link.frame_a)

    return Shaped()


def test_inertia_violating_the_triangle_inequality():
    with pytest.raises(mb.ParameterError) as info:
        mb.compile(_pendulum(m=1.0, I_11=1.0, I_22=1.0, I_33=3.0))
    msg = str(info.value)
    assert "Body 'body'" in msg and "triangle inequality" in msg


def test_inertia_of_body_shape_is_checked_too():
    class Model(mb.Model):
        world = mbl.World()
        joint = mbl.Revolute()
        link = mbl.BodyShape(r=[1, 0, 0], m=1.0, I_11=3.0, I_22=1.0, I_33=1.0)

        def equations(self):
            yield mb.connect(self.world.frame_b, self.joint.frame_a)
            yield mb.connect(self.joint.frame_b, self.link.frame_a)

    with pytest.raises(mb.ParameterError, match=r"BodyShape 'link'.*triangle"):
        mb.compile(Model())


def test_physical_inertia_is_accepted():
    # the boundary of the triangle inequality (a thin rod/plate) is physical
    mb.compile(_pendulum(m=1.0, I_11=1.0, I_22=1.0, I_33=2.0))


def test_negative_mass_at_declaration():
    # checked when the body is declared (its place in a model is not known yet)
    with pytest.raises(mb.ParameterError) as info:
        mbl.Body(m=-1.0)
    msg = str(info.value)
    assert "Body.m" in msg and "-1" in msg and "bounds" in msg


def test_negative_mass_as_a_run_time_parameter_names_the_body():
    cm = mb.compile(_pendulum(m=1.0, r_CM=[1.0, 0.0, 0.0]))
    with pytest.raises(mb.ParameterError) as info:
        cm.simulate(0.1, params={"body.m": -1.0})
    msg = str(info.value)
    assert "body.m" in msg and "-1" in msg


def test_zero_length_world_gravity_direction():
    class Model(mb.Model):
        world = mbl.World(n=[0.0, 0.0, 0.0])
        body = mbl.Body()

        def equations(self):
            yield mb.connect(self.world.frame_b, self.body.frame_a)

    with pytest.raises(mb.ParameterError, match=r"World 'world'.*zero length"):
        mb.compile(Model())


def test_zero_length_body_box():
    class Model(mb.Model):
        world = mbl.World()
        box = mbl.BodyBox(r=[0.0, 0.0, 0.0])

        def equations(self):
            yield mb.connect(self.world.frame_b, self.box.frame_a)

    with pytest.raises(mb.ParameterError, match=r"BodyBox 'box'.*zero length"):
        mb.compile(Model())


# --- declarations -------------------------------------------------------------------------

class TwoWorlds(mb.Model):
    world = mbl.World()
    world2 = mbl.World()
    body = mbl.Body()

    def equations(self):
        yield mb.connect(self.world.frame_b, self.body.frame_a)


def test_two_worlds_is_a_declaration_error():
    with pytest.raises(mb.DeclarationError) as info:
        mb.compile(TwoWorlds())
    msg = str(info.value)
    assert "2 World components" in msg
    assert "world" in msg and "world2" in msg and "Fixed" in msg


def test_unknown_gravity_type_and_resolve_in():
    with pytest.raises(mb.DeclarationError, match="gravity_type"):
        mbl.World(gravity_type="radial")
    with pytest.raises(mb.DeclarationError, match="resolve_in"):
        mbl.WorldForce(resolve_in="frame_a")


# --- run-time parameter values get the same checks (mb.Assert) ---------------------------

@pytest.mark.parametrize("params, expected", [
    ({"body.I_33": 3.0}, "triangle inequality"),
    ({"body.I_21": 2.0}, "positive semi-definite"),
    ({"joint.n[0]": 0.0, "joint.n[1]": 0.0, "joint.n[2]": 0.0}, "axis n has zero length"),
])
@pytest.mark.parametrize("analysis", ANALYSES)
def test_run_time_parameters_are_checked_like_declared_ones(params, expected, analysis):
    cm = mb.compile(_pendulum(m=1.0, r_CM=[0.5, 0.0, 0.0], I_11=1.0, I_22=1.0, I_33=1.0),
                    analysis=analysis)
    run = (lambda: cm.simulate(0.1, params=params)) if analysis == "forward" else \
        (lambda: cm.parameter_vector(params))
    with pytest.raises(mb.ParameterError, match=r"^body|^joint") as info:
        run()
    assert expected in str(info.value)


def test_lumped_inertia_accepted_at_run_time_with_check_triangle_off():
    cm = mb.compile(_pendulum(m=1.0, r_CM=[0.5, 0.0, 0.0], check_triangle=False))
    cm.simulate(0.1, params={"body.I_22": 5.0})  # violates the triangle inequality on purpose


def test_assert_on_a_variable_is_checked_along_the_run():
    """Once refused ("only conditions on parameters"); now Modelica's run-time assert: x = t
    breaks x <= 0.5 first at the output point t = 0.52 (every 0.04 s), and the result
    before it comes with the error. More in test_errors.py."""
    class Bounded(mb.Model):
        x = mb.Variable(0.0, fixed=True)

        def equations(self):
            yield mb.der(self.x) == 1
            yield mb.Assert(self.x <= 0.5, "x must stay below 0.5")

    cm = mb.compile(Bounded())
    assert cm.events is None  # the condition makes no relation (no events for it)
    assert cm.simulate(0.5)["x"][-1] == pytest.approx(0.5)
    with pytest.raises(mb.SimulationError, match=r"^Bounded: x must stay below 0.5 \(does "
                                                 r"not hold at t = 0.52: x = 0.52\)") as info:
        cm.simulate(1.0, n_points=26)
    assert info.value.time == pytest.approx(0.52) and info.value.variable == "x"
    assert info.value.result.t[-1] == pytest.approx(0.48)
    assert info.value.result["x"] == pytest.approx(info.value.result.t)


class ReversedSecondJoint(mb.Model):
    """A double pendulum whose second joint faces the world with its frame_b (legal in
    Modelica; ``swapped=True`` connects it the usual way)."""

    def __init__(self, swapped=False, **modifiers):
        super().__init__(**modifiers)
        self.swapped = swapped
        self.world = mbl.World()
        self.j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(0.5))
        self.l1 = mbl.BodyShape(r=[0.5, 0, 0], r_CM=[0.25, 0, 0], m=1.0)
        self.j2 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(-0.3))
        self.l2 = mbl.BodyShape(r=[0.5, 0, 0], r_CM=[0.25, 0, 0], m=1.0)

    def equations(self):
        near, far = ((self.j2.frame_a, self.j2.frame_b) if self.swapped
                     else (self.j2.frame_b, self.j2.frame_a))
        yield mb.connect(self.world.frame_b, self.j1.frame_a)
        yield mb.connect(self.j1.frame_b, self.l1.frame_a)
        yield mb.connect(self.l1.frame_b, near)
        yield mb.connect(far, self.l2.frame_a)


def test_joint_facing_the_world_with_frame_b_is_named_in_the_forward_analysis():
    """The articulated-body step passes frame_b's subtree to frame_a: reversed, the model
    compiled with articulated inertias as algebraic unknowns and failed to initialize with
    NaN residuals, naming nothing. The inverse analysis takes either side: the reversed
    joint's torque is minus the usual one's at the mirrored coordinates."""
    with pytest.raises(mb.DeclarationError, match="Revolute 'j2': its frame_b is on the "
                                                  "world's side.*swap the connections"):
        mb.compile(ReversedSecondJoint())
    assert mb.compile(ReversedSecondJoint(swapped=True)).simulate(0.2).final("j2.w") != 0.0
    usual = mb.compile(ReversedSecondJoint(swapped=True), analysis="inverse")
    reverse = mb.compile(ReversedSecondJoint(), analysis="inverse")
    motion = np.array([0.5, -0.3, -0.7, -0.3, 0.2, -1.1])  # phi, w, a of j1, then of j2
    mirrored = motion * [1, 1, 1, -1, -1, -1]
    tau = usual.evaluator(["j1.tau", "j2.tau"], native=False)(np.zeros(0), motion).copy()
    tau_reverse = reverse.evaluator(["j1.tau", "j2.tau"], native=False)(np.zeros(0), mirrored)
    assert abs(tau[1]) > 0.1
    assert tau_reverse == pytest.approx(tau * [1, -1], rel=1e-12)


def test_a_joint_support_fixed_twice_names_what_fixed_it_already():
    """A joint's support flange is fixed at 0 by the joint; a rot.Fixed connected to it
    made 'over-determine the variables  (and ...)' with no variable named (review)."""
    from mbmodel.libraries import rotational as rot

    class Doubly(mb.Model):
        world = mbl.World()
        joint = mbl.Revolute(n=[0, 0, 1], use_axis_flange=True)
        body = mbl.Body(m=1.0, r_CM=[0.5, 0, 0])
        fixed = rot.Fixed()
        damper = rot.Damper(d=0.1)

        def equations(self):
            yield mb.connect(self.world.frame_b, self.joint.frame_a)
            yield mb.connect(self.joint.frame_b, self.body.frame_a)
            yield mb.connect(self.joint.support, self.fixed.flange)
            yield mb.connect(self.joint.axis, self.damper.flange_b)
            yield mb.connect(self.damper.flange_a, self.fixed.flange)

    with pytest.raises(mb.StructuralSingularityError, match=r"no unknowns left.*\n.*"
                       r"\(fixed.flange.phi==fixed.phi0\)' \(from fixed\)\n  fixed.flange.phi is "
                       r"the constant 0, by '\(joint.support.phi==0\)' \(from joint\) \(its "
                       r"connection set: damper.flange_a.phi, joint.support.phi\)"):
        mb.compile(Doubly())
