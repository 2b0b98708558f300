"""Closed kinematic loops: cuts found by the orientation graph, planar loops detected,
forward dynamics with constraint forces, inverse dynamics with passive joints.

References are independent of mbmodel: closed-form four-bar kinematics and the
virtual-work crank torque (``tests/loop_mechanisms.py``), conservation of energy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mbmodel as mb
from mbmodel.libraries import multibody as mbl
from mbmodel.libraries import translational as tr

from loop_mechanisms import (CRANK, ROD, A, B, B2, C, C2, D, D2, DOUBLE_LINKS, RUSR_LINKS, ArmFourbar,
                             DoubleFourbar, Fourbar, FourbarOnChain, SliderCrank,
                             SpatialFourbar, fourbar_angles, fourbar_energy, fourbar_torque,
                             links_energy, piston_position, rusr_rocker_angle,
                             slider_crank_reference)

LOOP_FRAMES = [("world.frame_b", "j1.frame_a"), ("crank.frame_b", "j2.frame_a"),
               ("coupler.frame_b", "j3.frame_a"), ("rocker.frame_b", "j4.frame_a"),
               ("j4.frame_b", "anchor.frame_b")]


def _positions(res, frame):
    return np.array([res[f"{frame}.r_0[{k}]"] for k in range(3)])


def _closure_error(res):
    """Largest distance between connected frames around the loop."""
    return max(np.abs(_positions(res, a) - _positions(res, b)).max() for a, b in LOOP_FRAMES)


def test_fourbar_keeps_one_state_and_follows_the_closed_form_over_full_turns():
    """Without gravity the crank turns at (varying) speed through full revolutions; the
    coupler and rocker angles follow the closed-form position analysis at every output."""
    cm = mb.compile(Fourbar(w0=6.0, g=0.0))
    assert cm.states == ["j1.phi", "j1.w"]
    res = mb.simulate(cm, t_end=3.0, rtol=1e-11, atol=1e-11)
    theta = res["j1.phi"]
    assert theta[-1] - theta[0] > 2 * (2 * math.pi)  # at least two full turns
    coupler = theta + res["j2.phi"]
    rocker = coupler + res["j3.phi"] - math.pi     # the rocker body points from Q to O4
    expected = np.array([fourbar_angles(t) for t in theta])
    wrap = lambda x: (x + math.pi) % (2 * math.pi) - math.pi  # noqa: E731
    assert np.abs(wrap(coupler - expected[:, 0])).max() < 1e-9
    assert np.abs(wrap(rocker - expected[:, 1])).max() < 1e-9
    assert _closure_error(res) < 1e-9
    # no gravity, no friction: the kinetic energy stays
    energy = fourbar_energy(res, g=0.0)
    assert np.ptp(energy) / energy[0] < 1e-8


def test_fourbar_under_gravity_conserves_energy_for_10_s():
    cm = mb.compile(Fourbar(w0=2.0))
    res = mb.simulate(cm, t_end=10.0, rtol=1e-11, atol=1e-11)
    energy = fourbar_energy(res)
    scale = np.abs(energy).max()
    assert np.ptp(res["j1.w"]) > 1.0               # gravity really exchanges energy
    assert np.ptp(energy) / scale <= 1e-8
    assert _closure_error(res) <= 1e-9


def test_fourbar_inverse_dynamics_matches_virtual_work():
    """Crank motion prescribed (the inverse analysis' inputs), the passive joints follow the
    loop; the crank torque equals the virtual-work torque of the closed-form kinematics."""
    cm = mb.compile(Fourbar(), analysis="inverse")
    assert set(cm.inputs) == {"j1.phi", "j1.w", "j1.a"}
    assert cm.states == []
    solve = cm.explicit_ode(guess=True)
    z = np.array(cm.z_start, dtype=float)
    for t in np.linspace(0.0, 2.0, 41):
        theta = 0.3 + 2.0 * t + 0.4 * math.sin(3 * t)
        theta_d = 2.0 + 1.2 * math.cos(3 * t)
        theta_dd = -3.6 * math.sin(3 * t)
        u = np.array([{"j1.phi": theta, "j1.w": theta_d, "j1.a": theta_dd}[n]
                      for n in cm.inputs])
        _, z = solve([], u, cm.parameter_defaults, t, z)
        z = np.array(z, dtype=float).ravel()
        y = np.array(cm.output_function([], z, u, cm.parameter_defaults, t)).ravel()
        tau = y[cm.output_index["j1.tau"]]
        assert tau == pytest.approx(fourbar_torque(theta, theta_d, theta_dd), abs=1e-9)
        phi, _ = fourbar_angles(theta)
        assert y[cm.output_index["j2.phi"]] == pytest.approx(phi - theta, abs=1e-10)


def test_planar_loop_is_detected_and_closed_with_three_constraints():
    """All axes parallel: three in-plane closure equations, the out-of-plane constraint
    forces zero; the compiled model has the crank as its only degree of freedom."""
    flat = mb.flatten(Fourbar())
    closure = [e for e in flat.equations if "coincide" in str(e.description)
               or "orientations agree" in str(e.description)]
    assert len(closure) == 3
    assert all("(planar loop)" in str(e.description) for e in closure)
    assert any("no constraint force out of the plane" in str(e.description)
               for e in flat.equations)


def test_loop_through_the_world_names_the_loop_when_it_cannot_close():
    """A ground pivot too far away for the links to reach: initialization fails and the
    message names the loop's closure equations."""
    with pytest.raises(mb.InitializationError) as info:
        mb.simulate(Fourbar(d=0.9), t_end=0.1)  # A + B + C = 0.75 < 0.9
    msg = str(info.value)
    assert "the loop closed by connect(j4.frame_b, anchor.frame_b)" in msg
    assert "A kinematic loop does not close" in msg


def test_a_loop_left_without_guesses_is_refused_not_assembled_wrong():
    """The four-bar with its passive joints at their default starts (0: the links in a
    line, where the closure's Jacobian is singular): Newton ran away to angles of 1e14 rad,
    where sin and cos keep no digits, and its residuals (0.05 m) passed against a scale of
    1e14. initialize() and linearize() then returned an open loop with no error (A 6 %
    off the Lagrangian's). Now the loop is named, with the advice to give guesses."""
    model = Fourbar()
    model.j2.phi = mb.Guess(0.0)
    model.j3.phi = mb.Guess(0.0)
    cm = mb.compile(model)
    for ask in (cm.initialize, cm.linearize):
        with pytest.raises(mb.InitializationError) as info:
            ask()
        assert "A kinematic loop does not close" in str(info.value)
        assert "guesses near a closed configuration" in str(info.value)


def test_slider_crank_follows_closed_form_and_a_lagrange_multiplier_dae():
    """Piston position vs the closed form at every output; crank angle vs an independent
    Lagrange-multiplier DAE in absolute coordinates (scipy)."""
    cm = mb.compile(SliderCrank(theta0=0.4, w0=3.0))
    assert cm.states == ["j1.phi", "j1.w"]
    res = mb.simulate(cm, t_end=2.0, rtol=1e-11, atol=1e-11)
    theta = res["j1.phi"]
    assert np.ptp(theta) > 2.0
    assert np.abs(res["slider.s"] - piston_position(theta)).max() < 1e-9
    reference = slider_crank_reference(0.4, 3.0, res.t)
    assert np.abs(theta - reference).max() < 1e-7


def test_two_loops_on_one_crank():
    """Two four-bars share the crank: two cuts, one degree of freedom; both couplers follow
    their closed forms and the energy is conserved."""
    cm = mb.compile(DoubleFourbar(w0=8.0))
    assert cm.states == ["j1.phi", "j1.w"]
    res = mb.simulate(cm, t_end=4.0, rtol=1e-11, atol=1e-11)
    theta = res["j1.phi"]
    wrap = lambda x: (x + math.pi) % (2 * math.pi) - math.pi  # noqa: E731
    for joint, b, c, d in (("j2", B, C, D), ("j5", B2, C2, D2)):
        expected = np.array([fourbar_angles(t, A, b, c, d)[0] for t in theta])
        assert np.abs(wrap(theta + res[f"{joint}.phi"] - expected)).max() < 1e-9, joint
    energy = links_energy(res, DOUBLE_LINKS)
    assert np.ptp(theta) > 4.0  # swings through most of a turn
    assert np.ptp(energy) / np.abs(energy).max() <= 1e-8


def test_fourbar_on_a_chain_keeps_chain_states_and_a_loop_block_of_fixed_size():
    """A four-bar at the tip of a chain: the chain's joints stay states (they move the loop
    rigidly; the loop's own joints give way), and the loop's blocks (positions, velocities,
    constraint forces) keep their size whatever the chain's length: the articulated-body
    sweep stays explicit and O(n)."""
    sizes = {}
    for n in (3, 8):
        cm = mb.compile(FourbarOnChain(n))
        assert cm.states == [f"joint{i}.{x}" for i in range(n) for x in ("phi", "w")] + [
            "j1.phi", "j1.w"]
        sizes[n] = [(b.kind, len(b.tear_vars)) for b in cm.system.blocks
                    if b.kind != "explicit"]
    assert sizes[3] == sizes[8]
    assert max(k for _, k in sizes[8]) <= 3
    res = mb.simulate(cm, t_end=1.0, rtol=1e-10, atol=1e-10)
    theta = res["j1.phi"]
    expected = np.array([fourbar_angles(t)[0] for t in theta])
    assert np.abs(theta + res["j2.phi"] - expected).max() < 1e-8
    assert np.ptp(res["joint0.phi"]) > 0.05  # the chain really moves the loop's base


@pytest.mark.parametrize("ball_joint", [False, True])
def test_spatial_fourbar_with_a_ball_joint(ball_joint):
    """RUSR linkage (crank about z, rocker about y): the rocker angle solves the
    coupler-length equation of the closed-form geometry, the ball's two frames coincide and
    the energy is conserved. The ball closes the loop as a SphericalConstraint (three
    constraints), or is a quaternion Spherical joint and the connection to the rocker closes
    the loop with all six constraints (the quaternion's free scale stays a state)."""
    cm = mb.compile(SpatialFourbar(ball_joint=ball_joint))
    assert cm.states[:2] == ["j1.phi", "j1.w"]
    assert len(cm.states) == (3 if ball_joint else 2)
    # the joint angles on the loop can be chosen again at run time (with the constraint
    # element too: it declares the loop it closes, mb.ClosesLoop)
    state_set = cm.system.state_set
    chosen = {state_set.candidates[i] for i in state_set.coordinates}
    assert {"j1.phi", "ua.phi", "ub.phi", "j4.phi"} <= chosen
    res = mb.simulate(cm, t_end=3.0, rtol=1e-11, atol=1e-11)
    theta, psi = res["j1.phi"], res["j4.phi"]
    assert np.ptp(psi) > 0.3
    for t, p in zip(theta, psi):
        assert p == pytest.approx(rusr_rocker_angle(t, p), abs=1e-9)
    gap = np.abs(_positions(res, "ball.frame_a") - _positions(res, "ball.frame_b")).max()
    assert gap < 1e-9
    energy = links_energy(res, RUSR_LINKS)
    assert np.ptp(energy) / np.abs(energy).max() <= 1e-8


def test_fourbar_started_on_its_rocker_switches_to_a_good_coordinate():
    """Start values given on the rocker joint make the rocker angle the state; at the
    rocker's turning points it cannot give the crank's (the static choice fails there). The
    dynamic state selection switches to a good joint angle and the crank turns on, following
    the closed-form kinematics with its energy kept."""
    from mbmodel.state_selection import StateChoice
    cm = mb.compile(Fourbar(w0=6.0, g=0.0, start_at="rocker"))
    assert cm.states == ["j4.phi", "j4.w"]
    res = mb.simulate(cm, t_end=3.0, rtol=1e-11, atol=1e-11)
    assert res.state_switches and res.state_switches[0][1] == "j1.phi, j2.phi, j3.phi"
    # at a turning point of the rocker its angle is a singular choice of state
    choice = StateChoice(cm)
    k = int(np.argmax(np.sign(res["j4.w"][1:]) != np.sign(res["j4.w"][:-1])))
    _, ratio = choice.assess(choice.evaluate(lambda n: res[n][k]),
                             frozenset(choice.set.dependent))
    assert ratio < 0.05
    theta = res["j1.phi"]
    assert np.ptp(theta) > 2 * (2 * math.pi)
    expected = np.array([fourbar_angles(t)[0] for t in theta])
    wrap = lambda x: (x + math.pi) % (2 * math.pi) - math.pi  # noqa: E731
    assert np.abs(wrap(theta + res["j2.phi"] - expected)).max() < 1e-8
    assert _closure_error(res) < 1e-9
    energy = fourbar_energy(res, g=0.0)
    assert np.ptp(energy) / energy[0] < 1e-8


@pytest.mark.parametrize("variant", ["sensor", "damper", "port"])
def test_joint_ending_at_the_cut_with_a_sensor_a_damper_or_through_a_port(variant):
    """The joint whose frame_b meets the cut passes the cut force on even with a sensor
    beside it, a drive train without inertia on its flange, or when it meets the cut through
    a composite model's port."""
    model = ArmFourbar() if variant == "port" else Fourbar(at_cut=variant)
    cm = mb.compile(model)
    crank = "crank.joint" if variant == "port" else "j1"
    coupler = "coupler.joint" if variant == "port" else "j2"
    assert cm.states == [f"{crank}.phi", f"{crank}.w"]
    res = mb.simulate(cm, t_end=2.0, rtol=1e-10, atol=1e-10)
    theta = res[f"{crank}.phi"]
    expected = np.array([fourbar_angles(t)[0] for t in theta])
    assert np.abs(theta + res[f"{coupler}.phi"] - expected).max() < 1e-8


def test_two_loops_closing_at_one_frame_name_it():
    class SharedAnchor(DoubleFourbar):
        def equations(self):
            for item in super().equations():
                if item.items[0] is self.j7.frame_b:
                    item = mb.connect(self.j7.frame_b, self.anchor.frame_b)
                yield item
    with pytest.raises(mb.KinematicLoopError) as info:
        mb.flatten(SharedAnchor())
    assert "two loops close at one connection point (anchor.frame_b)" in str(info.value)


def test_leaf_components_connecting_their_own_connectors_still_compile_beside_joints():
    """Joints ask where loops are cut, shapes what hangs on their frame_b (connected());
    in a model without loops that must not refuse a component without sub-components that
    connects its own connectors elsewhere."""
    from mbmodel.libraries import rotational as rot

    class Short(mb.Model):
        a = rot.Flange_a()
        b = rot.Flange_b()

        def equations(self):
            yield mb.connect(self.a, self.b)

    class M(mb.Model):
        world = mbl.World()
        j = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(0.3))
        body = mbl.Body(m=1.0, r_CM=[0.5, 0, 0])
        link = mbl.BodyShape(r=[0.4, 0, 0], r_CM=[0.2, 0, 0], m=0.5)
        i1 = rot.Inertia(J=1.0, w=mb.Fixed(1.0))
        short = Short()
        i2 = rot.Inertia(J=1.0)

        def equations(self):
            yield mb.connect(self.world.frame_b, self.j.frame_a)
            yield mb.connect(self.j.frame_b, self.body.frame_a, self.link.frame_a)
            yield mb.connect(self.i1.flange_b, self.short.a)
            yield mb.connect(self.short.b, self.i2.flange_a)
    assert mb.compile(M()).states == ["j.phi", "j.w", "i1.phi", "i1.w"]


def test_a_leaf_that_closes_a_loop_by_its_own_connect_is_refused_by_name():
    """A weld without sub-components that connects its own frames closes a loop the
    joints could not see when they asked where loops are cut: refused, naming the weld
    (it was an internal error)."""
    class Weld(mb.Model):
        frame_a = mbl.Frame()
        frame_b = mbl.Frame()

        def equations(self):
            yield mb.connect(self.frame_a, self.frame_b)

    class M(mb.Model):
        world = mbl.World()
        j = mbl.Revolute(n=[0, 0, 1])
        ft = mbl.FixedTranslation(r=[0.4, 0, 0])
        body = mbl.Body(m=1.0)
        weld = Weld()

        def equations(self):
            yield mb.connect(self.world.frame_b, self.j.frame_a)
            yield mb.connect(self.j.frame_b, self.ft.frame_a, self.weld.frame_b)
            yield mb.connect(self.ft.frame_b, self.body.frame_a, self.weld.frame_a)
    with pytest.raises(mb.DeclarationError) as info:
        mb.flatten(M())
    assert str(info.value).startswith("Weld 'weld' connects its own connectors although it "
                                      "has no sub-components; this model has components that "
                                      "ask where loops are cut")


def test_a_fixed_rotation_inside_a_loop_turns_only_a_joint_angle():
    """A FixedRotation about the loop's normal before the rocker's joint only shifts that
    joint's angle: the crank moves as in the four-bar without it (the loop's plane is found
    through the placement's rotation; the joint composes the placement)."""
    from loop_mechanisms import connect_chain

    class Placed(Fourbar):
        def __init__(self, **modifiers):
            super().__init__(**modifiers)
            self.place = mbl.FixedRotation(n=[0, 0, 1], angle=0.3)

        def equations(self):
            yield from connect_chain(self.world, self.j1, self.crank, self.j2, self.coupler,
                                     self.place, self.j3, self.rocker, self.j4)
            yield mb.connect(self.j4.frame_b, self.anchor.frame_b)

    reference = mb.compile(Fourbar()).simulate(1.0, rtol=1e-10, atol=1e-10)
    placed = mb.compile(Placed()).simulate(1.0, rtol=1e-10, atol=1e-10)
    crank = np.interp(reference.t, placed.t, placed["j1.phi"])
    assert np.max(np.abs(crank - reference["j1.phi"])) < 1e-6
    assert abs(placed["j1.phi"][-1] - reference["j1.phi"][-1]) < 1e-7
    assert abs(placed["j3.phi"][0] - (reference["j3.phi"][0] - 0.3)) < 1e-9
    # and independently of the model without it: the loop stays closed and the mechanical
    # energy is conserved
    assert _closure_error(placed) <= 1e-9
    energy = fourbar_energy(placed)
    assert np.ptp(energy) <= 1e-8 * np.max(np.abs(energy))


def test_planar_loop_out_of_its_plane_cannot_close():
    """Parallel axes but an anchor 5 cm off the plane: the three dropped constraints could
    never hold, so the compiler says so instead of closing the loop in the plane only."""
    with pytest.raises(mb.KinematicLoopError) as info:
        mb.flatten(Fourbar(anchor_z=0.05))
    assert "0.05 m apart along the plane's normal" in str(info.value)
    assert "the loop closed by connect(j4.frame_b, anchor.frame_b)" in str(info.value)


def test_linearization_on_a_loop_keeps_the_assembly_the_model_runs_in():
    """Given the states only, linearize() solved the algebraic loop variables by Newton from
    their start values, and a spatial four-bar far from its start landed on the mirror-image
    assembly (rocker at -psi) without a word. They are now followed from the initialized
    model along the way to the point, and reported (lin.z0)."""
    from loop_mechanisms import rusr_rocker_angle, rusr_start_angle
    cm = mb.compile(SpatialFourbar(theta0=0.2))
    for theta in (-1.5, 1.0, 1.5, 3.0):
        psi = rusr_start_angle(0.2)
        for on_the_way in np.linspace(0.2, theta, 400)[1:]:
            psi = rusr_rocker_angle(on_the_way, psi)
        lin = cm.linearize(x=[theta, 0.0])
        assert lin.algebraic[2] == "j4.phi"
        assert lin.z0[2] == pytest.approx(psi, abs=1e-9), theta


def test_a_z_given_to_linearize_is_newtons_start_not_the_point():
    """linearize(x=..., z=...) took z as it was: a z off the assembly (closure residuals
    0.4, 0.36, 3.0) gave A[1] = [4.0, 3.3], a stiffness of the wrong sign, with no error.
    z now chooses the assembly by Newton's method from it; near the one the model runs in,
    the answer is the same as without z (the four-bar's A from the Lagrangian in
    test_fourbar_keeps_one_state...)."""
    cm = mb.compile(Fourbar())
    x = [0.3, 2.0]
    plain = cm.linearize(x=x)
    assert np.max(np.abs(np.array(cm.alg(x, plain.z0, [], cm.parameter_vector(), 0.0)))) \
        < 1e-12
    near = cm.linearize(x=x, z=plain.z0 + 0.1)
    np.testing.assert_allclose(near.z0, plain.z0, atol=1e-10)
    np.testing.assert_allclose(near.A, plain.A, rtol=1e-9, atol=1e-9)
    # started at the assembly itself, it is kept
    np.testing.assert_allclose(cm.linearize(x=x, z=plain.z0).A, plain.A, rtol=1e-12)
    # and the row of the crank's acceleration is the closed form's: the unactuated
    # four-bar's theta_dd from its inverse dynamics (zero torque), differentiated
    def accel(theta, theta_d):
        at_rest = fourbar_torque(theta, theta_d, 0.0)
        return -at_rest / (fourbar_torque(theta, theta_d, 1.0) - at_rest)
    h = 1e-6
    expected = [(accel(x[0] + h, x[1]) - accel(x[0] - h, x[1])) / (2 * h),
                (accel(x[0], x[1] + h) - accel(x[0], x[1] - h)) / (2 * h)]
    np.testing.assert_allclose(near.A[1], expected, rtol=1e-6)


def test_a_universal_joint_on_a_loop_takes_guesses_and_runs_inverse():
    """Universal took no start values (its angles started at 0 and a loop could assemble
    2 pi away) and its revolutes were always prescribed, so a loop through it could not be
    compiled for inverse dynamics. The crank is free in the forward run: prescribing that
    motion, the inverse model must need no crank torque."""
    forward = mb.compile(SpatialFourbar(universal=True))
    assert forward.algebraic == ["cross.revolute_a.phi", "cross.revolute_b.phi", "j4.phi"]
    res = mb.simulate(forward, t_end=1.0, rtol=1e-11, atol=1e-11, n_points=101)
    with_revolutes = mb.simulate(SpatialFourbar(), t_end=1.0, rtol=1e-11, atol=1e-11,
                                 n_points=101)
    assert np.abs(res["j4.phi"] - with_revolutes["j4.phi"]).max() < 1e-9
    assert np.abs(res["cross.revolute_a.phi"] - with_revolutes["ua.phi"]).max() < 1e-9
    # and the loop closes as the closed-form geometry says (coupler length kept)
    for theta, psi in zip(res["j1.phi"], res["j4.phi"]):
        assert psi == pytest.approx(rusr_rocker_angle(theta, psi), abs=1e-9)
    inverse = mb.compile(SpatialFourbar(universal=True), analysis="inverse")
    solve = inverse.explicit_ode(guess=True)
    z = np.array([res[name][0] for name in inverse.algebraic])   # the assembly run forward
    for k, t in enumerate(res.t):   # (steps of 0.01 s: Newton follows the assembly)
        u = np.array([res[name][k] for name in inverse.inputs])
        _, z = solve([], u, inverse.parameter_defaults, t, z)
        z = np.array(z, dtype=float).ravel()
        y = np.array(inverse.output_function([], z, u, inverse.parameter_defaults, t)).ravel()
        assert abs(y[inverse.output_index["j1.tau"]]) < 1e-6
        assert z[2] == pytest.approx(res["j4.phi"][k], abs=1e-9)


GAP_C, GAP_D = 2e4, 20.0             # N/m, N.s/m
GAP_START = ROD - CRANK + 0.004      # contact in the last 4 mm before bottom dead centre


class GappedSliderCrank(SliderCrank):
    """The piston runs into an elastic gap near bottom dead centre (contact below
    GAP_START): a relation on the loop's algebraic piston position."""

    def __init__(self, **modifiers):
        super().__init__(theta0=0.4, w0=20.0, piston_flange=True, **modifiers)
        self.gap = tr.ElastoGap(c=GAP_C, d=GAP_D, s_rel0=GAP_START)

    def equations(self):
        yield from super().equations()
        yield mb.connect(self.slider.support, self.gap.flange_a)
        yield mb.connect(self.gap.flange_b, self.slider.axis)



def test_a_contact_on_a_loops_algebraic_position_switches_once_per_crossing():
    """IDAS re-solves the algebraic variables as it restarts after an event, to a fraction
    of its tolerances; the contact's crossing function, on the piston's position, then lay
    7e-11 m on the old side, and every check switched it back: the run stopped with
    'chattering, 100 events within 1e-10 s' at 4 of 10 tolerance settings. Checked against
    the hand-written Lagrange model with the gap's force on the piston."""
    def gap_force(x, v):
        depth = GAP_START - x
        if depth <= 0:
            return 0.0
        spring = GAP_C * depth
        return spring - min(max(GAP_D * v, -spring), spring)

    cm = mb.compile(GappedSliderCrank())
    references = {}
    # (IDAS's own consistent start, IDACalcIC, failed after a contact's switch with
    # "IDA_NO_RECOVERY" at the last, and at one in five settings near 1e-10; the last two
    # start from the event iteration's consistent point)
    for rtol, n_points in ((1e-6, 201), (1e-8, 201), (1e-10, 201), (1.1e-10, 401)):
        if n_points not in references:
            t = np.linspace(0.0, 1.0, n_points)
            references[n_points] = slider_crank_reference(0.4, 20.0, t, piston_force=gap_force)
        res = mb.simulate(cm, t_end=1.0, n_points=n_points, rtol=rtol, atol=rtol)
        contacts = [e.time for e in res.events if "gap.s_rel < gap.s_rel0" in str(e)]
        assert len(contacts) >= 4 and np.min(np.diff(contacts)) > 1e-3, (rtol, contacts[:6])
        assert np.abs(res["j1.phi"] - references[n_points]).max() < 1e3 * rtol, rtol
