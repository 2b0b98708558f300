"""Dynamic state selection: the cartesian pendulum, whose static choice of states becomes
singular, runs through every angle; reference: the pendulum's angle ODE in scipy."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbmodel as mb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples"))
from cartesian_pendulum import CartesianPendulum  # noqa: E402

G, L = 9.81, 1.0


def pendulum(theta0_deg):
    """Released at rest at theta0 from the downward vertical (x = L sin, y = -L cos)."""
    theta0 = math.radians(theta0_deg)
    return CartesianPendulum(x=mb.Fixed(L * math.sin(theta0)), y=mb.Guess(-L * math.cos(theta0)),
                             vx=mb.Fixed(0.0))


def reference_angle(theta0_deg, t):
    """theta'' = -(g/L) sin(theta) from rest, DOP853 at tight tolerances."""
    sol = solve_ivp(lambda _t, s: [s[1], -G / L * math.sin(s[0])], (0, t[-1]),
                    [math.radians(theta0_deg), 0.0], method="DOP853", t_eval=t, rtol=1e-12,
                    atol=1e-12)
    return sol.y[0]


# Released near the top, the swing passes close to the separatrix: its timing amplifies
# every error (at rtol 1e-10 the 179-degree run is off by 1e-3 after 10 s), so it runs at
# rtol 1e-12.
@pytest.mark.parametrize("theta0, rtol, tolerance", [(91.0, 1e-10, 1e-6),
                                                     (179.0, 1e-12, 1e-4)])
def test_pendulum_above_the_horizontal_switches_states_and_keeps_the_constraint(theta0, rtol,
                                                                                 tolerance):
    cm = mb.compile(pendulum(theta0))
    assert cm.system.state_set is not None
    assert cm.system.state_set.candidates == ["x", "y"]
    res = mb.simulate(cm, t_end=10.0, rtol=rtol, atol=rtol)
    x, y = res["x"], res["y"]
    assert res.t[-1] == 10.0
    assert np.abs(x ** 2 + y ** 2 - L ** 2).max() <= 1e-6
    kinds = {(before, after) for _, before, after in res.state_switches}
    assert {("x", "y"), ("y", "x")} <= kinds  # both ways, more than once
    theta = reference_angle(theta0, res.t)
    assert np.abs(x - L * np.sin(theta)).max() < tolerance
    assert np.abs(y + L * np.cos(theta)).max() < tolerance
    energy = 0.5 * (res["vx"] ** 2 + res["vy"] ** 2) + G * y
    assert np.ptp(energy) / (G * L) < 1e-6


def test_pendulum_released_upright():
    """Upright is an unstable equilibrium: the rounding of sin(pi) (1.2e-16) and the
    integration errors grow as cosh(sqrt(g/L) t) (cosh(31) = 1.6e13: to a few millimetres
    after 10 s, however small they were; a reference ODE grows its own rounding errors, so
    only the bounds are checked)."""
    res = mb.simulate(pendulum(180.0), t_end=10.0, rtol=1e-10, atol=1e-10)
    x, y = res["x"], res["y"]
    assert res.t[-1] == 10.0
    assert np.abs(x ** 2 + y ** 2 - L ** 2).max() <= 1e-6
    assert np.abs(x).max() < 0.1
    energy = 0.5 * (res["vx"] ** 2 + res["vy"] ** 2) + G * y
    assert np.ptp(energy) / (G * L) < 1e-8


def test_static_choice_fails_where_dynamic_selection_switches():
    """The compiled (static) choice alone stops where its pivot vanishes: what the dynamic
    selection avoids."""
    with pytest.raises(mb.SimulationError, match="state_selection='dynamic', the default, "
                                                 "switches it where it turns singular"):
        mb.simulate(pendulum(91.0), t_end=10.0, rtol=1e-10, atol=1e-10,
                    state_selection="static")


def test_static_choice_stops_where_it_turns_singular_instead_of_running_through():
    """Kept on y (state_priority), the pendulum released at 30 degrees passes the bottom,
    where x = 0 and the constraint no longer gives x from y: the static run went through it
    1.4e-3 off at rtol 1e-10, silently, at 501 and 1001 points, and failed at 301 (review).
    It now stops between the two points checked around t = T/4, with the result before them
    right; a static run whose choice stays regular (x kept, y < 0 throughout) is unchanged
    and right."""
    theta0 = 30.0
    fine = np.linspace(0.0, 1.0, 100001)
    bottom = fine[np.argmax(reference_angle(theta0, fine) <= 0.0)]  # T/4, 0.5076 s
    cm = mb.compile(pendulum(theta0), state_priority={"y": 3, "vy": 3})
    assert cm.states == ["y", "vy"]
    for n_points in (301, 501, 1001, 2):
        with pytest.raises(mb.SimulationError, match="turned singular between") as error:
            cm.simulate(3.0, n_points=n_points, rtol=1e-10, atol=1e-10,
                        state_selection="static")
        assert bottom - 0.02 < error.value.time < bottom
        assert "state_selection='dynamic', the default, switches it" in str(error.value)
        result = error.value.result
        if n_points == 2:  # (the output points before it: the start)
            assert list(result.t) == [0.0]
            continue
        assert result.t[-1] > bottom - 0.02
        theta = reference_angle(theta0, result.t)
        assert np.abs(result["x"] - L * np.sin(theta)).max() < 1e-6
    # the dynamic selection switches to x before the bottom and is right throughout
    res = cm.simulate(3.0, rtol=1e-10, atol=1e-10)
    assert res.state_switches
    assert np.abs(res["x"] - L * np.sin(reference_angle(theta0, res.t))).max() < 1e-6
    kept = mb.compile(pendulum(theta0)).simulate(3.0, rtol=1e-10, atol=1e-10,
                                                 state_selection="static")
    assert kept.t[-1] == 3.0 and len(kept.t) == 501
    assert np.abs(kept["x"] - L * np.sin(reference_angle(theta0, kept.t))).max() < 1e-6


@pytest.mark.parametrize("t_end, n_points", [(1.0, 101), (3.0, 301), (6.0, 201), (2.8, 101)])
def test_static_choice_stops_at_the_singular_point_when_the_run_fails_later(t_end, n_points):
    """Released at 100 degrees with x kept, the choice turns singular where y = 0 (t =
    0.1897). Where the integrator got through it and failed later (t = 1.04 or 1.43), that
    failure was raised, with a result past the singular point 4e-4 off (review): the
    points reached are checked first. Every run stops before t = 0.1897 with the result
    right up to there."""
    cm = mb.compile(pendulum(100.0))
    with pytest.raises(mb.SimulationError) as error:
        cm.simulate(t_end, n_points=n_points, state_selection="static")
    assert 0.17 < error.value.time < 0.1897
    assert "state_selection='dynamic', the default, switches it" in str(error.value)
    result = error.value.result
    theta = reference_angle(100.0, result.t)
    assert np.abs(result["y"] + L * np.cos(theta)).max() < 1e-6


def test_state_sets_only_where_the_choice_can_change():
    """A state set for the pendulum's x and y and for the joint angles of a loop (the
    frames' positions and orientations are dependent in every choice); none for a model
    without constraints between states."""
    from loop_mechanisms import Fourbar
    state_set = mb.compile(Fourbar()).system.state_set
    assert [state_set.candidates[i] for i in state_set.coordinates] == [
        "j1.phi", "j2.phi", "j3.phi", "j4.phi"]
    from cartesian_pendulum import CartesianPendulum as Pendulum
    assert mb.compile(Pendulum()).system.state_set.candidates == ["x", "y"]
    from mbmodel.libraries import rotational as rot

    class Free(mb.Model):
        inertia = rot.Inertia(J=1.0, w=mb.Fixed(1.0))
    assert mb.compile(Free()).system.state_set is None


def test_switching_run_prints_nothing(capsys):
    """IDAS fails where the state choice turns singular, and the run recovers by switching;
    its lines ("At t = 0.594346, repeated recoverable residual errors.") were printed on
    stderr all the same."""
    cm = mb.compile(pendulum(91.0))
    res = mb.simulate(cm, t_end=10.0, rtol=1e-10, atol=1e-10, progress=False)
    assert len(res.state_switches) >= 2
    assert capsys.readouterr().err == ""


def test_switching_run_keeps_the_output_times():
    """The output grid is exactly the times asked for (the start is not added)."""
    cm = mb.compile(pendulum(91.0))
    res = mb.simulate(cm, t_end=1.0, times=[0.1, 0.5, 1.0], rtol=1e-10, atol=1e-10)
    assert list(res.t) == [0.1, 0.5, 1.0]
    theta = reference_angle(91.0, np.array([0.0, 0.1, 0.5, 1.0]))[1:]
    assert np.abs(res["x"] - L * np.sin(theta)).max() < 1e-7


@pytest.mark.parametrize("n_points", [11, 31, 501])
def test_a_coarse_output_grid_gives_the_same_answer(n_points):
    """A pendulum looping over the top (6 m/s at the bottom) switches its state between x
    and y every quarter turn. The choice was checked at the output points only: with 31 of
    them over 4 s, y was still the state as the mass passed the bottom, where y is
    singular, and the run lost 4 % of its energy with no error (with 11, IDAS failed). The
    choice is now checked at 250 points per run at least."""
    cm = mb.compile(CartesianPendulum(x=mb.Fixed(0.0), y=mb.Guess(-L), vx=mb.Fixed(6.0)))
    res = cm.simulate(4.0, n_points=n_points)
    assert len(res.t) == n_points and res.t[-1] == 4.0
    assert len(res.state_switches) >= 4
    sol = solve_ivp(lambda _t, s: [s[1], -G / L * math.sin(s[0])], (0, 4.0), [0.0, 6.0 / L],
                    method="DOP853", t_eval=res.t, rtol=1e-12, atol=1e-12)
    assert np.abs(res["x"] - L * np.sin(sol.y[0])).max() < 1e-4
    energy = 0.5 * (res["vx"] ** 2 + res["vy"] ** 2) + G * res["y"]
    assert np.ptp(energy) / (G * L) < 1e-5


def test_a_failure_at_a_change_point_says_so_and_keeps_the_result():
    """A parallelogram four-bar (crank = rocker, coupler = ground) reaches a change point,
    where its branches meet and no choice of states is regular: the error listed some 50
    rotation-matrix entries as candidates and carried neither the time nor the result."""
    from mbmodel.libraries import multibody as mbl
    crank, coupler, theta0, w0 = 0.15, 0.4, 0.5, 6.0
    masses = (1.0, 2.0, 1.0)

    def link(length, m):
        return mbl.BodyShape(r=[length, 0, 0], r_CM=[length / 2, 0, 0], m=m, I_11=1e-4,
                             I_22=m * length ** 2 / 12, I_33=m * length ** 2 / 12)

    class Parallelogram(mb.Model):
        world = mbl.World()
        j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(theta0), w=mb.Fixed(w0))
        crank_link = link(crank, masses[0])
        j2 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(-theta0), prescribed=False)
        coupler_link = link(coupler, masses[1])
        j3 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(-theta0), prescribed=False)
        anchor = mbl.Fixed(r=[coupler, 0, 0])
        j4 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(theta0), prescribed=False)
        rocker_link = link(crank, masses[2])

        def equations(self):
            yield mb.connect(self.world.frame_b, self.j1.frame_a)
            yield mb.connect(self.j1.frame_b, self.crank_link.frame_a)
            yield mb.connect(self.crank_link.frame_b, self.j2.frame_a)
            yield mb.connect(self.j2.frame_b, self.coupler_link.frame_a)
            yield mb.connect(self.anchor.frame_b, self.j4.frame_a)
            yield mb.connect(self.j4.frame_b, self.rocker_link.frame_a)
            yield mb.connect(self.rocker_link.frame_b, self.j3.frame_a)
            yield mb.connect(self.j3.frame_b, self.coupler_link.frame_b)

    with pytest.raises(mb.SimulationError) as info:
        mb.simulate(Parallelogram(), 1.0, n_points=501, rtol=1e-10, atol=1e-10)
    error = info.value
    assert "no other choice among the candidates j1.phi, j2.phi, j3.phi, j4.phi" in str(error)
    assert "singular point of its constraints" in str(error)
    assert 0.2 < error.time < 0.35 and error.result.t[-1] <= error.time
    # up to there the coupler stays level: theta'' = -K cos(theta) / M_eff
    inertia = [m * length ** 2 / 3 for m, length in ((masses[0], crank), (masses[2], crank))]
    m_eff = sum(inertia) + masses[1] * crank ** 2
    k = G * crank * (masses[0] / 2 + masses[2] / 2 + masses[1])
    t = error.result.t
    sol = solve_ivp(lambda _t, s: [s[1], -k * math.cos(s[0]) / m_eff], (0, t[-1]),
                    [theta0, w0], t_eval=t, rtol=1e-12, atol=1e-12, method="DOP853")
    assert np.abs(error.result["j1.phi"] - sol.y[0]).max() < 1e-6


def test_a_failure_under_the_dynamic_choice_does_not_advise_switching_to_it():
    """A run that fails at once under the default state_selection='dynamic' ended with
    "... were kept (state_selection='static'); state_selection='dynamic', the default,
    switches it": the advice of the run inside, which keeps its choice (review)."""
    cm = mb.compile(CartesianPendulum())   # rod of 1 m: x = 2 has no y
    with pytest.raises(mb.SimulationError) as dynamic:
        cm.simulate(1.0, x0=[2.0, 0.0], z0=[0.5])
    assert "state_selection" not in str(dynamic.value)
    with pytest.raises(mb.SimulationError, match="were kept \\(state_selection='static'\\)"):
        cm.simulate(1.0, x0=[2.0, 0.0], z0=[0.5], state_selection="static")


class CountedPendulum(CartesianPendulum):
    """The pendulum counting its passes to the right of x = 0.3 (an event with no effect on
    the motion)."""
    passes = mb.Discrete(start=0.0)

    def equations(self):
        yield from super().equations()
        yield mb.when(self.x > 0.3, self.passes == mb.pre(self.passes) + 1)


class ReinitPendulum(CartesianPendulum):
    """The pendulum with a reinit that never fires (the rod never reaches y = 5)."""

    def equations(self):
        yield from super().equations()
        yield mb.when(self.y > 5.0, mb.reinit(self.vy, 0.0))


def test_a_model_with_events_stops_where_its_kept_choice_of_states_turns_singular():
    """A model with events keeps its compiled states. Kept on y, the pendulum ran on past
    the bottom, where the constraint no longer gives x, stuck there with x = 1.6e-7: the
    energy fell from -8.50 to -9.81 without a word, and the run took 100 s of failed steps
    (review). A reinit of vy makes vy a state beside x: vx = -y*vy/x, 0/0 at the bottom,
    went through it 5e-7 off at rtol 1e-10. Both now stop before the bottom (where x has
    fallen to 1 % of y), with the result right up to there and the reinit named."""
    theta0 = 30.0
    fine = np.linspace(0.0, 1.0, 100001)
    bottom = fine[np.argmax(reference_angle(theta0, fine) <= 0.0)]  # T/4, 0.5076 s
    kept_on_y = mb.compile(CountedPendulum(x=mb.Fixed(L * math.sin(math.radians(theta0)))),
                           state_priority={"y": 3, "vy": 3})
    forced = mb.compile(ReinitPendulum(x=mb.Fixed(L * math.sin(math.radians(theta0)))))
    for cm, cause in ((kept_on_y, "keeps the states it was compiled with"),
                      (forced, "reinit(vy, ...) makes vy a state")):
        assert cm.states in (["y", "vy"], ["x", "vy"]) and cm.events is not None
        with pytest.raises(mb.SimulationError, match="turned singular, or nearly") as error:
            cm.simulate(3.0, rtol=1e-10, atol=1e-10, progress=False)
        assert cause in str(error.value)
        assert bottom - 0.02 < error.value.time < bottom
        result = error.value.result
        assert result.t[-1] > bottom - 0.03
        off = np.abs(result["x"] - L * np.sin(reference_angle(theta0, result.t)))
        # (the last points, x < 0.03, carry the integrator's errors in y amplified by 1/x)
        assert off[result["x"] > 0.03].max() < 1e-8 and off.max() < 1e-5


def test_a_model_with_events_whose_kept_choice_stays_regular_runs_through():
    """Kept on x (y < 0 throughout at 30 degrees), the counting pendulum swings for 5 s:
    right against the angle ODE, counting each pass to the right of x = 0.3 (once per
    period, 2.07 s, after the release at x = 0.5)."""
    theta0 = 30.0
    cm = mb.compile(CountedPendulum(x=mb.Fixed(L * math.sin(math.radians(theta0)))))
    assert cm.states == ["x", "vx"]
    res = cm.simulate(5.0, rtol=1e-10, atol=1e-10, progress=False)
    theta = reference_angle(theta0, res.t)
    assert np.abs(res["x"] - L * np.sin(theta)).max() < 1e-6
    right = L * np.sin(theta) > 0.3
    assert res["passes"][-1] == np.count_nonzero(right[1:] & ~right[:-1])
    assert res["passes"][-1] >= 2
