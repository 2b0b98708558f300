"""Tests of blocks.KinematicPTP (point-to-point reference motion, MSL KinematicPTP2 with a
synchronized trapezoidal velocity profile) on the robot R3 reference motions."""

import numpy as np
import pytest

import mbmodel as mb
from mbmodel import DeclarationError, Input, Output, connect
from mbmodel.libraries import blocks as bl
from mbmodel.libraries import rotational as rot

DEG = np.pi / 180

# FullRobot reference motion (robot_r3.md): motion ends at 1.356 s.
FULL = dict(n=6,
            q_begin=np.array([-60, 20, 90, 0, -110, 0]) * DEG,
            q_end=np.array([60, -70, -35, 45, 110, 45]) * DEG,
            qd_max=np.array([3, 1.5, 5, 3.1, 3.1, 4.1]),
            qdd_max=np.array([15, 15, 15, 60, 60, 60]))
FULL_TE = 1.356

# OneAxis: 0 -> 120 deg, qd_max 3 rad/s, qdd_max 10 rad/s^2.
ONE = dict(n=1, q_begin=0.0, q_end=120 * DEG, qd_max=3.0, qdd_max=10.0)


def ptp_model(**ptp):
    class Motion(mb.Model):
        pass

    m = Motion()
    m.ptp = bl.KinematicPTP(**ptp)
    return m


def evaluate(cm, names, ts, params=None):
    """Outputs ``names`` at times ``ts`` (the model has no states: outputs are explicit)."""
    assert not cm.states and not cm.algebraic
    p = cm.parameter_vector(params)
    ts = np.asarray(ts, dtype=float)
    Y = np.array(cm.output_function.map(len(ts))(
        np.zeros((0, len(ts))), np.zeros((0, len(ts))), np.zeros((0, len(ts))),
        np.repeat(p[:, None], len(ts), 1), ts[None, :]))
    return {n: Y[cm.output_index[n]] for n in names}


def names(n, what):
    return [f"ptp.{what}[{i}]" for i in range(n)] if n > 1 else [f"ptp.{what}"]


def expected_timing(q_begin, q_end, qd_max, qdd_max):
    """Ta (end of acceleration), Tv (end of cruise), Te (end) from robot_r3.md."""
    dq = np.atleast_1d(np.asarray(q_end, float) - np.asarray(q_begin, float))
    sd_max = 1 / np.max(np.abs(dq / qd_max))
    sdd_max = 1 / np.max(np.abs(dq / qdd_max))
    ta1, ta2 = np.sqrt(1 / sdd_max), sd_max / sdd_max
    if ta2 >= ta1:
        return ta1, ta1, 2 * ta1
    return ta2, 1 / sd_max, 1 / sd_max + ta2


def cumtrapz(y, t):
    return np.concatenate([[0.0], np.cumsum(0.5 * (y[1:] + y[:-1]) * np.diff(t))])


@pytest.fixture(scope="module")
def full_cm():
    return mb.compile(ptp_model(**FULL))


# --------------------------------------------------------------------------------------
# Structure
# --------------------------------------------------------------------------------------

def test_structure_and_events(full_cm):
    cm = full_cm
    assert cm.states == [] and cm.algebraic == []
    for what in ("q", "qd", "qdd"):
        assert set(names(6, what)) <= set(cm.output_names)
    assert "ptp.q_end[5]" in cm.parameters and "ptp.start_time" in cm.parameters
    events = np.array(cm.event_function(cm.parameter_vector())).ravel()
    ta, tv, te = expected_timing(FULL["q_begin"], FULL["q_end"], FULL["qd_max"],
                                 FULL["qdd_max"])
    np.testing.assert_allclose(events, [0.0, ta, tv, te], rtol=1e-14)
    assert te == pytest.approx(FULL_TE, abs=1e-3)


def test_invalid_declarations():
    with pytest.raises(DeclarationError):
        bl.KinematicPTP(n=0)
    with pytest.raises(DeclarationError):
        bl.KinematicPTP(n=2, q_end=[1.0, 2.0, 3.0])
    with pytest.raises(mb.ParameterError):
        bl.KinematicPTP(n=2, qd_max=[1.0, 0.0])
    with pytest.raises(mb.ParameterError):
        bl.KinematicPTP(qdd_max=-1.0)


# --------------------------------------------------------------------------------------
# Reference motions of robot_r3.md
# --------------------------------------------------------------------------------------

def check_motion(cm, spec, t_end, te_expected=None, params=None, start_time=0.0):
    n = spec["n"]
    qb = np.broadcast_to(np.asarray(spec["q_begin"], float), (n,))
    qe = np.broadcast_to(np.asarray(spec["q_end"], float), (n,))
    qd_max = np.broadcast_to(np.asarray(spec["qd_max"], float), (n,))
    qdd_max = np.broadcast_to(np.asarray(spec["qdd_max"], float), (n,))
    ta, tv, te = expected_timing(qb, qe, qd_max, qdd_max)
    if te_expected is not None:
        assert te == pytest.approx(te_expected, abs=1e-3)
    events = np.array(cm.event_function(cm.parameter_vector(params))).ravel()
    np.testing.assert_allclose(events, start_time + np.array([0.0, ta, tv, te]),
                               rtol=1e-14, atol=1e-14)

    # Dense grid containing the phase switches.
    ts = np.union1d(np.linspace(0.0, t_end, 40001), events)
    out = evaluate(cm, names(n, "q") + names(n, "qd") + names(n, "qdd"), ts, params)
    q = np.array([out[k] for k in names(n, "q")])
    qd = np.array([out[k] for k in names(n, "qd")])
    qdd = np.array([out[k] for k in names(n, "qdd")])
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(qd)) and np.all(np.isfinite(qdd))

    # Rest before the start, at q_end with zero speed from the end of the motion on.
    before = ts <= start_time
    np.testing.assert_allclose(q[:, before], qb[:, None] * np.ones((1, before.sum())),
                               atol=1e-14)
    after = ts >= start_time + te
    np.testing.assert_allclose(q[:, after], qe[:, None] * np.ones((1, after.sum())),
                               rtol=1e-13, atol=1e-13)
    assert np.all(qd[:, after] == 0) and np.all(qdd[:, after] == 0)
    # ... and still moving just before the end.
    just_before = start_time + te - 1e-4
    moving = evaluate(cm, names(n, "qd"), [just_before], params)
    assert max(abs(v[0]) for v in moving.values()) > 1e-6

    # Limits hold per axis; the limiting axis reaches them (synchronized scaling).
    assert np.all(np.abs(qd) <= qd_max[:, None] * (1 + 1e-12))
    assert np.all(np.abs(qdd) <= qdd_max[:, None] * (1 + 1e-12))
    dq = qe - qb
    k_v = np.argmax(np.abs(dq / qd_max))
    k_a = np.argmax(np.abs(dq / qdd_max))
    assert np.max(np.abs(qdd[k_a])) == pytest.approx(qdd_max[k_a], rel=1e-12)
    if tv > ta:  # a cruise phase: the velocity-limiting axis cruises at its maximum
        assert np.max(np.abs(qd[k_v])) == pytest.approx(qd_max[k_v], rel=1e-12)
    # All axes move in proportion to dq (same path parameter).
    for i in range(n):
        if abs(dq[i]) > 0:
            s = (q[i] - qb[i]) / dq[i]
            s0 = (q[k_a] - qb[k_a]) / dq[k_a]
            np.testing.assert_allclose(s, s0, atol=1e-12)

    # q is the integral of qd, qd the integral of qdd (trapezoid rule on the dense grid;
    # exact for piecewise-linear qd apart from the kinks, O(h*jump) for jumping qdd).
    h = np.max(np.diff(ts))
    for i in range(n):
        np.testing.assert_allclose(qb[i] + cumtrapz(qd[i], ts), q[i],
                                   atol=4 * h**2 * qdd_max[i] + 1e-12)
        np.testing.assert_allclose(cumtrapz(qdd[i], ts), qd[i],
                                   atol=4 * h * qdd_max[i] + 1e-12)
    return ts, q, qd, qdd


def test_full_robot_motion(full_cm):
    check_motion(full_cm, FULL, t_end=2.0, te_expected=FULL_TE)


def test_full_robot_simulated_ends_at_q_end_with_zero_speed(full_cm):
    res = full_cm.simulate(2.0, n_points=201)
    t_e = FULL_TE
    for i in range(6):
        assert res[f"ptp.q[{i}]"][-1] == pytest.approx(FULL["q_end"][i], abs=1e-12)
        assert res[f"ptp.qd[{i}]"][-1] == 0.0
    # End of motion: the last time at which any axis still moves.
    qd = np.array([res[f"ptp.qd[{i}]"] for i in range(6)])
    ts = np.linspace(1.3, 1.4, 100001)
    out = evaluate(full_cm, names(6, "qd"), ts)
    moving = np.max(np.abs(np.array([out[k] for k in names(6, "qd")])), axis=0) > 0
    assert ts[moving][-1] == pytest.approx(t_e, abs=1e-3)
    assert np.all(np.abs(qd[:, np.asarray(res.t) > t_e]) == 0)


def test_one_axis_motion():
    cm = mb.compile(ptp_model(**ONE))
    ts, q, qd, qdd = check_motion(cm, ONE, t_end=1.6)
    ta, tv, te = expected_timing(0.0, 120 * DEG, 3.0, 10.0)
    assert (ta, tv, te) == pytest.approx((0.3, 120 * DEG / 3.0, 120 * DEG / 3.0 + 0.3))
    assert np.max(qd) == pytest.approx(3.0, rel=1e-12)
    # Closed form in the three phases.
    for t, (q_ex, qd_ex, qdd_ex) in [
            (0.2, (10 * 0.2**2 / 2, 2.0, 10.0)),
            (0.5, (10 * 0.3**2 / 2 + 3 * 0.2, 3.0, 0.0)),
            (te - 0.1, (120 * DEG - 10 * 0.1**2 / 2, 1.0, -10.0))]:
        v = evaluate(cm, ["ptp.q", "ptp.qd", "ptp.qdd"], [t])
        assert v["ptp.q"][0] == pytest.approx(q_ex, rel=1e-12)
        assert v["ptp.qd"][0] == pytest.approx(qd_ex, rel=1e-12)
        assert v["ptp.qdd"][0] == pytest.approx(qdd_ex, rel=1e-12, abs=1e-12)


def test_triangular_profile_without_cruise_phase():
    spec = dict(n=2, q_begin=[0.0, 1.0], q_end=[1.0, 0.5], qd_max=[10.0, 10.0],
                qdd_max=[4.0, 4.0])
    cm = mb.compile(ptp_model(**spec))
    ta, tv, te = expected_timing(spec["q_begin"], spec["q_end"], [10.0, 10.0], [4.0, 4.0])
    assert ta == tv == pytest.approx(0.5) and te == pytest.approx(1.0)
    _, _, qd, _ = check_motion(cm, spec, t_end=1.5)
    assert np.max(np.abs(qd[0])) == pytest.approx(2.0, rel=1e-12)  # peak sdd*Ta*dq


def test_parameters_stay_symbolic_and_start_time_delays():
    cm = mb.compile(ptp_model(**ONE))
    spec = dict(ONE, q_begin=0.5, q_end=-1.0, qdd_max=20.0)
    params = {"ptp.q_begin": 0.5, "ptp.q_end": -1.0, "ptp.qdd_max": 20.0,
              "ptp.start_time": 0.3}
    check_motion(cm, spec, t_end=1.5, params=params, start_time=0.3)
    res = cm.simulate(1.5, params=params, n_points=7)
    assert res["ptp.q"][0] == 0.5 and res["ptp.q"][-1] == pytest.approx(-1.0, abs=1e-13)


def test_no_motion():
    spec = dict(n=3, q_begin=[0.1, -0.2, 0.3], q_end=[0.1, -0.2, 0.3], qd_max=1.0,
                qdd_max=1.0)
    cm = mb.compile(ptp_model(**spec))
    events = np.array(cm.event_function(cm.parameter_vector())).ravel()
    assert np.all(events == 0.0)
    ts = np.linspace(0.0, 1.0, 11)
    out = evaluate(cm, names(3, "q") + names(3, "qd") + names(3, "qdd"), ts)
    for i in range(3):
        assert np.all(out[f"ptp.q[{i}]"] == spec["q_begin"][i])
        assert np.all(out[f"ptp.qd[{i}]"] == 0.0) and np.all(out[f"ptp.qdd[{i}]"] == 0.0)
    res = cm.simulate(1.0, n_points=5)
    assert np.all(np.asarray(res["ptp.q[1]"]) == -0.2)
    # A moving model switched to no motion at run time (symbolic parameters).
    cm1 = mb.compile(ptp_model(**ONE))
    out = evaluate(cm1, ["ptp.q", "ptp.qd", "ptp.qdd"], ts, params={"ptp.q_end": 0.0})
    assert np.all(out["ptp.q"] == 0.0) and np.all(out["ptp.qd"] == 0.0)
    assert np.all(out["ptp.qdd"] == 0.0)


# --------------------------------------------------------------------------------------
# der(q) is symbolic: a Position source fed by q drives an inertia
# --------------------------------------------------------------------------------------

class Pick(mb.Model):
    """Test helper: one entry of a vector signal (connect() needs whole signals)."""

    def __init__(self, n, i, **modifiers):
        super().__init__(**modifiers)
        self.u = Input(shape=(n, 1))
        self.y = Output()
        self.i = i

    def equations(self):
        yield self.y == self.u[self.i]


class DrivenInertia(mb.Model):
    ptp = bl.KinematicPTP(**FULL)
    pick = Pick(6, 0)
    position = rot.Position(exact=True)
    inertia = rot.Inertia(J=2.0)

    def equations(self):
        yield connect(self.ptp.q, self.pick.u)
        yield connect(self.pick.y, self.position.phi_ref)
        yield connect(self.position.flange, self.inertia.flange_a)


def test_position_source_differentiates_q_twice():
    cm = mb.compile(DrivenInertia())
    assert cm.states == []  # the inertia's angle is forced: no state left
    J = 2.0
    ts = [0.05, 0.3, 0.9, 1.3, 1.5]
    out = evaluate(cm, ["position.flange.tau", "ptp.q[0]", "ptp.qd[0]", "ptp.qdd[0]",
                        "inertia.phi", "inertia.w", "inertia.a"], ts)
    # The source's flange torque acts on the source (flow into it): the inertia's
    # flange_a torque is J*a (flange_b free), and the connection sums both to zero.
    np.testing.assert_allclose(out["position.flange.tau"], -J * out["ptp.qdd[0]"],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["inertia.phi"], out["ptp.q[0]"], rtol=1e-14)
    np.testing.assert_allclose(out["inertia.w"], out["ptp.qd[0]"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out["inertia.a"], out["ptp.qdd[0]"], rtol=1e-12, atol=1e-14)
    assert out["ptp.qdd[0]"][0] > 0 and out["ptp.qdd[0]"][3] < 0  # both non-trivial phases
    assert out["position.flange.tau"][0] == pytest.approx(-J * out["ptp.qdd[0]"][0])
    # Closed form: the synchronized profile is limited by axis 3's acceleration (15 rad/s²
    # over 125°), so axis 1 (120°) accelerates with 15 * 120/125 = 14.4 rad/s².
    np.testing.assert_allclose(out["position.flange.tau"], [-28.8, 0.0, 0.0, 28.8, 0.0],
                               atol=1e-9)
    res = cm.simulate(2.0, n_points=41)
    assert res["inertia.phi"][-1] == pytest.approx(FULL["q_end"][0], abs=1e-12)
    assert res["position.flange.tau"][-1] == 0.0


def test_position_source_on_one_axis_torque():
    class OneAxis(mb.Model):
        ptp = bl.KinematicPTP(**ONE)
        position = rot.Position()
        inertia = rot.Inertia(J=2.0)

        def equations(self):
            yield connect(self.ptp.q, self.position.phi_ref)
            yield connect(self.position.flange, self.inertia.flange_a)

    cm = mb.compile(OneAxis())
    out = evaluate(cm, ["position.flange.tau"], [0.1, 0.5, 0.9, 1.2])
    np.testing.assert_allclose(out["position.flange.tau"], [-20.0, 0.0, 20.0, 0.0],
                               atol=1e-12)


def test_filtered_ptp_is_the_trapezoid_through_a_critically_damped_filter():
    """FilteredPTP in closed form against the trapezoid (KinematicPTP) run through four
    first-order stages numerically (scipy's lsim on the exact piecewise-quadratic input,
    sampled finely): the same path; speeds and accelerations within the trapezoid's
    limits; the derivatives consistent; at rest at q_end from T on; continuous to the
    fifth derivative where the trapezoid's acceleration jumps."""
    from scipy.signal import lsim

    class Both(mb.Model):
        filtered = bl.FilteredPTP(**FULL)
        raw = bl.KinematicPTP(**FULL)

    cm = mb.compile(Both())
    t = np.linspace(0.0, 2.0, 40001)
    names = ([f"filtered.{v}[{k}]" for v in ("q", "qd", "qdd") for k in range(6)]
             + [f"raw.q[{k}]" for k in range(6)] + ["filtered.T"])
    values = evaluate(cm, names, t)
    Y = np.array([np.ravel(values[n]) for n in names])
    q, qd, qdd = Y[:6], Y[6:12], Y[12:18]
    raw, T = Y[18:24], Y[24][0]
    order, f_cut = 4, 5.0
    tau = np.sqrt(2 ** (1 / order) - 1) / (2 * np.pi * f_cut)
    from scipy.optimize import brentq
    settled = brentq(lambda u: np.exp(-u) * (1 + u + u ** 2 / 2 + u ** 3 / 6) - 1e-12, 1, 100)
    assert T == pytest.approx(FULL_TE + settled * tau, abs=1e-3)   # FULL_TE to 1 ms
    stages = (np.array([1.0]), np.poly(np.full(order, -1 / tau)) * tau ** order)
    moving = t < T
    for k in range(6):
        _, numeric, _ = lsim(stages, raw[k] - FULL["q_begin"][k], t)
        # lsim holds the input linear between samples: error ~ dt^2 qdd_max / 8
        assert np.abs(numeric + FULL["q_begin"][k] - q[k])[moving].max() < 1e-8
        assert np.abs(qd[k]).max() <= FULL["qd_max"][k] * (1 + 1e-12)
        assert np.abs(qdd[k]).max() <= FULL["qdd_max"][k] * (1 + 1e-12)
        assert np.abs(np.gradient(q[k], t) - qd[k])[moving].max() < 1e-6
        assert np.abs(np.gradient(qd[k], t) - qdd[k])[moving].max() < 1e-4
        assert np.abs(q[k][~moving] - FULL["q_end"][k]).max() < 1e-14   # q_begin + dq
        assert np.all(qd[k][~moving] == 0) and np.all(qdd[k][~moving] == 0)
    # the fifth derivative of q (third of qdd) is continuous at the acceleration's jumps
    import casadi as ca
    time, p = ca.SX.sym("t"), ca.SX.sym("p", cm.parameter_vector().size)
    empty = ca.SX(0, 1)
    qdd0 = cm.output_function(empty, empty, empty, p, time)[cm.output_index["filtered.qdd[0]"]]
    d3 = ca.Function("d3", [time, p], [ca.jacobian(ca.jacobian(ca.jacobian(qdd0, time), time),
                                                   time)])
    ta, tv, te = expected_timing(FULL["q_begin"], FULL["q_end"], FULL["qd_max"],
                                 FULL["qdd_max"])
    values = cm.parameter_vector()
    for switch in (0.0, ta, tv, te):
        # a continuous derivative's gap across the switch shrinks with the gap's width (a
        # jump would not): the sixth derivative is large (~dq sdd_max / tau^4)
        gaps = [abs(float(d3(switch + h, values)) - float(d3(switch - h, values)))
                for h in (1e-7, 1e-9)]
        assert gaps[1] < gaps[0] / 50 + 1e-9, (switch, gaps)
