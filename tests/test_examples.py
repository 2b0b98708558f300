"""The example programs in examples/: each one's main() runs, and its key results are
physically right (analytic values, structural facts such as the number of states)."""

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = ["rc_circuit", "rlc_circuit", "cauer_filter", "dc_motor_drive",
           "cartesian_pendulum", "double_pendulum", "robot_r3", "rectifier", "friction_drive",
           "hydraulic_press", "excavator_boom", "fourbar", "engine"]


def load(name):
    """Import examples/<name>.py as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """main(plot=False) of every example, run once in an empty directory. Plots are checked
    where the examples run as scripts (test_script_runs), so no example runs twice here."""
    out_dir = tmp_path_factory.mktemp("example_runs")
    cwd = os.getcwd()
    os.chdir(out_dir)
    try:
        return {name: (load(name).main(plot=False), out_dir) for name in SCRIPTS}
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("name", SCRIPTS)
def test_main_without_plot(results, name):
    out, out_dir = results[name]
    assert isinstance(out, dict) and out["states"]
    assert not list(Path(out_dir).iterdir())  # nothing written


def test_rc_matches_analytic(results):
    out, _ = results["rc_circuit"]
    assert out["states"] == ["capacitor.v"]
    for key, n in (("v_tau", 1), ("v_3tau", 3), ("v_5tau", 5)):
        sim, ana = out[key]
        assert ana == pytest.approx(1 - math.exp(-n), rel=1e-9)
        assert sim == pytest.approx(ana, rel=1e-6)
    assert out["max_rel_error"] < 1e-6


def test_rlc_frequency_and_damping(results):
    out, _ = results["rlc_circuit"]
    assert sorted(out["states"]) == ["capacitor.v", "inductor.i"]
    assert out["omega_0_exact"] == pytest.approx(1 / math.sqrt(1e-3 * 1e-6))
    assert out["zeta_exact"] == pytest.approx(5.0 / 2 * math.sqrt(1e-6 / 1e-3))
    assert out["omega_0"] == pytest.approx(out["omega_0_exact"], rel=1e-6)
    assert out["zeta"] == pytest.approx(out["zeta_exact"], rel=1e-5)
    assert out["overshoot"] == pytest.approx(out["overshoot_exact"], rel=1e-6)
    assert out["max_deviation"] < 1e-6


def test_cauer_five_states(results):
    out, _ = results["cauer_filter"]
    assert out["n_storage"] == 7
    assert out["n_states"] == 5
    # The inductor currents are always states (no inductor cut-sets); two of the five
    # capacitor voltages follow from the two capacitor loops.
    assert {"L1.i", "L2.i"} <= set(out["states"])
    assert len(out["dependent"]) == 2
    assert out["loop_residual"] < 1e-9
    assert out["max_error"] < 1e-6          # against the exact matrix-exponential solution
    assert out["v_out_end"] == pytest.approx(0.5, abs=1e-3)  # DC gain R2/(R1 + R2)


def test_dc_motor_drive(results):
    out, _ = results["dc_motor_drive"]
    states = out["states"]
    assert len(states) == 4
    assert {"controller.x_i", "motor.inductor.i"} <= set(states)
    # One angle/speed pair for the rigidly geared rotor and load.
    assert sum(s.endswith(".w") for s in states) == 1
    # The integral action removes the steady-state error completely (far inside 1 %).
    assert out["w_final"] == pytest.approx(out["w_ref"], rel=1e-6)
    assert out["w_motor_final"] == pytest.approx(10 * out["w_ref"], rel=1e-6)
    assert out["i_final"] == pytest.approx(out["i_final_expected"], rel=1e-6)
    assert out["v_final"] == pytest.approx(out["v_final_expected"], rel=1e-6)
    # Current bounded well below the stall current at the voltage limit (24 V / 0.5 Ohm).
    assert 1.0 < out["i_max"] < 24.0 / 0.5
    assert out["v_peak"] <= 24.0 + 1e-9
    assert out["overshoot"] < 0.05 * out["w_ref"]
    assert 0 < out["settling_time"] < 0.2
    assert 0 < out["dip"] < 0.05 * out["w_ref"]
    assert 1.0 < out["t_dip"] < 1.1   # the speed minimum comes shortly after the load step
    assert 0 < out["recovery_time"] < 0.2
    assert out["compile_time"] + out["simulate_time"] < 10.0


def test_cartesian_pendulum(results):
    out, _ = results["cartesian_pendulum"]
    assert sorted(out["states"]) == ["vx", "x"]
    assert out["max_constraint_error"] <= 1e-6
    assert out["energy_drift"] <= 1e-6
    assert out["period"] == pytest.approx(out["period_exact"], rel=1e-6)
    assert out["y0"] == pytest.approx(-math.cos(math.radians(30)), abs=1e-10)
    assert out["F0"] == pytest.approx(9.81 * math.cos(math.radians(30)), rel=1e-9)


# -- multibody examples: physics checked against an independent Pinocchio model -----------

def _main_quiet(name, out_dir):
    """main(plot=False) of an example, its printout swallowed."""
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        return load(name).main(plot=False, out_dir=str(out_dir))


@pytest.fixture(scope="module")
def double_pendulum(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("double_pendulum")
    out = _main_quiet("double_pendulum", out_dir)
    assert not list(out_dir.iterdir())  # plot=False writes nothing
    return out


@pytest.fixture(scope="module")
def robot_r3(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("robot_r3")
    out = _main_quiet("robot_r3", out_dir)
    assert not list(out_dir.iterdir())
    return out


def test_double_pendulum_energy(double_pendulum):
    out = double_pendulum
    assert sorted(out["states"]) == ["revolute1.phi", "revolute1.w", "revolute2.phi",
                                     "revolute2.w"]
    assert out["box_mass"] == pytest.approx(7700 * 0.5 * 0.06 * 0.06)
    # Starts horizontal at rest (zero potential at y = 0), so E(0) = 0.
    assert out["energy_start"] == pytest.approx(0.0, abs=1e-12)
    # The damper only takes energy out: E never increases ...
    assert out["max_energy_increase"] <= 1e-8
    assert np.all(np.diff(out["energy"]) <= 1e-8)
    # ... and what it loses is exactly what the damper dissipates (integral of d*w1^2).
    lost = out["energy_start"] - out["energy_final"]
    assert lost > 1.0
    assert out["dissipated"] == pytest.approx(lost, rel=1e-4)
    assert out["max_balance_error"] < 1e-4
    # The joint torque is the damper's braking torque -d*w1.
    assert out["joint1_torque_residual"] < 1e-9
    # Final state finite and plausible: energy above the hanging-down minimum -2 m g l.
    e_min = -2 * out["box_mass"] * 9.81 * 0.5
    assert e_min < out["energy_final"] < 0
    for key in ("phi1_final", "phi2_final", "w1_final", "w2_final"):
        assert math.isfinite(out[key])
    assert abs(out["phi1_final"]) < 2 * math.pi and abs(out["phi2_final"]) < 2 * math.pi
    assert abs(out["w1_final"]) < 20 and abs(out["w2_final"]) < 20


def _rz_box_pendulum():
    """The double pendulum as a Pinocchio model (boxes 0.5 x 0.06 x 0.06 m, steel)."""
    pin = pytest.importorskip("pinocchio")
    length, width, rho = 0.5, 0.06, 7700.0
    m = rho * length * width * width
    inertia = np.diag([m / 12 * 2 * width ** 2, m / 12 * (length ** 2 + width ** 2),
                       m / 12 * (length ** 2 + width ** 2)])
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, -9.81, 0.0]), np.zeros(3))
    parent = 0
    for k, offset in enumerate(([0.0, 0.0, 0.0], [length, 0.0, 0.0])):
        parent = model.addJoint(parent, pin.JointModelRZ(),
                                pin.SE3(np.eye(3), np.array(offset)), f"revolute{k + 1}")
        model.appendBodyToJoint(parent, pin.Inertia(m, np.array([length / 2, 0.0, 0.0]),
                                                    inertia), pin.SE3.Identity())
    return pin, model


def test_double_pendulum_matches_pinocchio(double_pendulum):
    """The trajectory equals Pinocchio's ABA with the damper torque -d*w1, integrated by
    scipy."""
    from scipy.integrate import solve_ivp
    pin, model = _rz_box_pendulum()
    data = model.createData()
    out = double_pendulum

    def rhs(t, y):
        tau = np.array([-0.1 * y[2], 0.0])
        return np.concatenate([y[2:], pin.aba(model, data, y[:2], y[2:], tau)])

    sol = solve_ivp(rhs, (0.0, 3.0), np.zeros(4), method="DOP853", rtol=1e-11, atol=1e-12,
                    t_eval=out["t"])
    assert np.abs(sol.y[0] - out["phi1"]).max() < 1e-4
    assert np.abs(sol.y[1] - out["phi2"]).max() < 1e-4
    assert np.abs(sol.y[2] - out["w1"]).max() < 1e-4
    assert np.abs(sol.y[3] - out["w2"]).max() < 1e-4


def _r3_pinocchio():
    """The Manutec r3 chain (data of robot_r3.md, typed again here) as a Pinocchio model
    with gravity 9.81 along -y; b0 is fixed to the world and carries nothing dynamic."""
    pin = pytest.importorskip("pinocchio")

    def inertia(diag=(0.001, 0.001, 0.001), i21=0.0):
        I = np.diag(diag)
        I[0, 1] = I[1, 0] = i21
        return I

    joints = [(pin.JointModelRY(), [0, 0.351, 0]), (pin.JointModelRX(), [0, 0.324, 0.3]),
              (pin.JointModelRX(), [0, 0.65, 0]), (pin.JointModelRY(), [0, 0.414, -0.155]),
              (pin.JointModelRX(), [0, 0.186, 0]), (pin.JointModelRY(), [0, 0.125, 0])]
    bodies = [(1.0, [0, 0, 0], inertia((0.001, 1.16, 0.001))),
              (56.5, [0.172, 0.205, 0], inertia((2.58, 0.64, 2.73), -0.46)),
              (26.4, [0.064, -0.034, 0], inertia((0.279, 0.245, 0.413), -0.070)),
              (28.7, [0, 0, 0], inertia((1.67, 0.081, 1.67))),
              (5.2, [0, 0, 0], inertia((1.25, 0.81, 1.53))),
              (0.5, [0.05, 0.05, 0.05], inertia())]
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, -9.81, 0.0]), np.zeros(3))
    parent = 0
    for k, ((joint, r), (m, c, I)) in enumerate(zip(joints, bodies)):
        parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), np.array(r, float)),
                                f"r{k + 1}")
        model.appendBodyToJoint(parent, pin.Inertia(m, np.array(c, float), I),
                                pin.SE3.Identity())
    # the load (15 kg at (0.1, 0.25, 0.1)) on b6.frame_b = r6.frame_b
    model.appendBodyToJoint(parent, pin.Inertia(15.0, np.array([0.1, 0.25, 0.1]), inertia()),
                            pin.SE3.Identity())
    return pin, model


def test_robot_r3_start_and_reference(robot_r3):
    out = robot_r3
    assert out["states"] == [f"r{i}.{v}" for i in range(1, 7) for v in ("phi", "w")]
    assert sorted(out["inputs"]) == sorted(f"r{i}.{v}" for i in range(1, 7)
                                           for v in ("phi", "w", "a"))
    assert not out["inverse_states"] and not out["inverse_algebraic"]
    start = np.radians([-60, 20, 90, 0, -110, 0])
    end = np.radians([60, -70, -35, 45, 110, 45])
    assert np.allclose(out["q_start"], start)
    assert np.allclose(out["q_fall"][0], start) and np.allclose(out["w_fall"][0], 0.0)
    assert np.allclose(out["q_ref"][0], start) and np.allclose(out["q_ref"][-1], end)
    assert np.allclose(out["qd_ref"][0], 0.0) and np.allclose(out["qd_ref"][-1], 0.0)
    assert out["t_end_motion"] == pytest.approx(1.356, abs=2e-3)   # robot_r3.md
    assert np.all(np.abs(out["qd_ref"]) <= np.array([3, 1.5, 5, 3.1, 3.1, 4.1]) + 1e-9)
    assert np.all(np.abs(out["qdd_ref"]) <= np.array([15, 15, 15, 60, 60, 60]) + 1e-9)


def test_robot_r3_static_torques_match_pinocchio(robot_r3):
    """At rest in the start pose the inverse model gives Pinocchio's gravity torques; at
    t = 0 of the reference (speed 0, acceleration already on) it gives RNEA(q0, 0, qdd(0))."""
    pin, model = _r3_pinocchio()
    data = model.createData()
    out = robot_r3
    q0 = out["q_start"]
    gravity = pin.computeGeneralizedGravity(model, data, q0)
    assert np.allclose(out["tau_hold"], gravity, rtol=1e-9, atol=1e-9)
    assert np.allclose(out["tau_hold"], pin.rnea(model, data, q0, np.zeros(6), np.zeros(6)),
                       rtol=1e-9, atol=1e-9)
    assert np.abs(gravity[[1, 2]]).min() > 100   # the shoulder and elbow carry the arm
    tau0 = pin.rnea(model, data, q0, np.zeros(6), out["qdd_ref"][0])
    assert np.allclose(out["tau"][0], tau0, rtol=1e-9, atol=1e-8)


def test_robot_r3_inverse_matches_pinocchio(robot_r3):
    """Joint torques along the whole reference motion equal Pinocchio's RNEA."""
    pin, model = _r3_pinocchio()
    data = model.createData()
    out = robot_r3
    expected = np.array([pin.rnea(model, data, q, qd, qdd) for q, qd, qdd in
                         zip(out["q_ref"], out["qd_ref"], out["qdd_ref"])])
    assert np.allclose(out["tau"], expected, rtol=1e-9, atol=1e-8)
    assert np.allclose(out["tau_peak"], np.abs(expected).max(axis=0), rtol=1e-9)
    # After the motion the torques hold the end pose: gravity torques there.
    end_gravity = pin.computeGeneralizedGravity(model, data, out["q_ref"][-1])
    assert np.allclose(out["tau"][-1], end_gravity, rtol=1e-9, atol=1e-8)


def test_robot_r3_fall_matches_pinocchio(robot_r3):
    """Initial accelerations of the fall equal Pinocchio's ABA at the start pose, and the
    0.5 s fall equals ABA integrated by scipy."""
    from scipy.integrate import solve_ivp
    pin, model = _r3_pinocchio()
    data = model.createData()
    out = robot_r3
    q0 = out["q_start"]
    qdd0 = pin.aba(model, data, q0, np.zeros(6), np.zeros(6))
    assert np.allclose(out["qdd_start"], qdd0, rtol=1e-9, atol=1e-9)
    assert np.abs(qdd0).max() > 1.0   # it does fall

    def rhs(t, y):
        return np.concatenate([y[6:], pin.aba(model, data, y[:6], y[6:], np.zeros(6))])

    sol = solve_ivp(rhs, (0.0, 0.5), np.concatenate([q0, np.zeros(6)]), method="DOP853",
                    rtol=1e-11, atol=1e-12, t_eval=out["t_fall"])
    assert np.abs(sol.y[:6].T - out["q_fall"]).max() < 1e-5
    assert np.abs(sol.y[6:].T - out["w_fall"]).max() < 1e-5
    assert np.all(np.isfinite(out["q_fall_final"]))


def test_robot_r3_class_importable_by_path():
    """R3Mechanics loads from the file path without running anything and compiles for both
    analyses (defaults: load 15 kg at (0.1, 0.25, 0.1))."""
    import mbmodel as mb
    spec = importlib.util.spec_from_file_location("robot_r3_by_path",
                                                  EXAMPLES / "robot_r3.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cm = mb.compile(module.R3Mechanics(), analysis="inverse")
    assert len(cm.inputs) == 18 and not cm.states
    assert {"mLoad", "rLoad[0]", "rLoad[1]", "rLoad[2]"} <= set(cm.parameters)
    # At rest in the zero pose (all frames aligned with the world) the load's centre is
    # 0.1 - 0.155 = -0.055 m in z from the (x) axes of r2 and r3 and 0.1 m from that of r5:
    # its weight adds 15 * 9.81 * lever to those; r1, r4, r6 (vertical axes) carry none.
    idx = [cm.output_index[f"r{i}.tau"] for i in range(1, 7)]

    def torques(params):
        y = cm.output_function([], [], np.zeros(18), cm.parameter_vector(params), 0.0)
        return np.array(y).reshape(-1)[idx]

    delta = torques(None) - torques({"mLoad": 0.0})
    lever = np.array([0.0, 0.055, 0.055, 0.0, 0.1, 0.0])
    assert np.allclose(np.abs(delta), 15 * 9.81 * lever, atol=1e-9)


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_runs(name, tmp_path):
    """``python examples/<name>.py`` works as a script and writes its plot to the current
    directory."""
    pytest.importorskip("matplotlib")
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "states chosen by the compiler" in proc.stdout
    png = tmp_path / f"{name}.png"
    assert png.is_file() and png.stat().st_size > 10_000


@pytest.mark.parametrize("v_max", [24.0, 6.0])
def test_dc_motor_drive_trajectory_matches_its_hand_written_ode(v_max):
    """The flagship's whole transient (reference step, load step) against the drive's
    equations written out by hand and integrated by scipy; with a 6 V limit the controller
    saturates and the anti-windup term acts (the flagship's 24 V are not reached)."""
    from scipy.integrate import solve_ivp
    ex = load("dc_motor_drive")
    Ni = 0.9  # LimPID's default anti-windup factor
    J = ex.J_LOAD + ex.RATIO ** 2 * ex.J_MOTOR  # rotor reflected through the gear

    def rhs(t, x):
        w, i, x_i = x
        e = (ex.W_REF if t >= ex.T_REF else 0.0) - w
        v = ex.KP * (e + x_i)
        y = min(v_max, max(-v_max, v))
        tau_load = ex.TAU_LOAD if t >= ex.T_LOAD else 0.0
        return [(ex.RATIO * ex.K_M * i + tau_load) / J,
                (y - ex.R_A * i - ex.K_M * ex.RATIO * w) / ex.L_A,
                (e + (y - v) / (ex.KP * Ni)) / ex.TI]

    times = np.linspace(0.0, ex.T_END, 401)
    res = ex.mb.compile(ex.DCMotorDrive()).simulate(
        ex.T_END, times=times, rtol=1e-10, atol=1e-10, params={"controller.yMax": v_max})
    x, pieces = [0.0, 0.0, 0.0], []
    for t0, t1 in ((0.0, ex.T_REF), (ex.T_REF, ex.T_LOAD), (ex.T_LOAD, ex.T_END)):
        grid = times[(times >= t0) & (times <= t1)]
        sol = solve_ivp(rhs, (t0, t1), x, t_eval=grid, method="Radau", rtol=1e-10,
                        atol=1e-10, max_step=1e-3)
        pieces.append(sol.y[:, :-1] if t1 < ex.T_END else sol.y)
        x = sol.y[:, -1]
    ref = np.hstack(pieces)
    assert ref.shape[1] == len(times)
    np.testing.assert_allclose(res["load.w"], ref[0], atol=1e-5 * ex.W_REF)
    np.testing.assert_allclose(res["motor.inductor.i"], ref[1], atol=1e-4)
    np.testing.assert_allclose(res["controller.y"], np.clip(ex.KP * (
        np.where(times >= ex.T_REF, ex.W_REF, 0.0) - ref[0] + ref[2]), -v_max, v_max),
        atol=1e-4)
    assert ref[1].max() > 5.0  # a real transient (peak current 16 A at 24 V, 9 A at 6 V)
    assert (res["controller.y"].max() >= v_max - 1e-9) == (v_max < 10)  # saturated or not


def test_rectifier_switches_and_ripple(results):
    out, _ = results["rectifier"]
    res = out["result"]
    # every half period one pair of diodes starts and one stops conducting
    assert len(out["events"]) > 30
    # the capacitor discharges through the load between the peaks: the ripple is below the
    # estimate V/(2 f R C), which assumes the discharge lasts a whole half period
    assert 0.5 * out["estimate"] < out["ripple"] < out["estimate"]
    assert res["capacitor.v"].max() < 10.0  # never above the source's peak
    assert np.all(res["d1.i"] > -1e-4) and np.all(res["d2.i"] > -1e-4)  # forward only


def test_friction_drive_locks_and_sticks(results):
    out, _ = results["friction_drive"]
    res = out["result"]
    t = res.t
    locked = (t > 1.2) & (t < 1.99)
    assert np.all(res["clutch.mode"][locked] == 0)
    np.testing.assert_allclose(res["rotor.w"][locked], res["load.w"][locked], atol=1e-9)
    # after the clutch opens the load coasts down against the bearing and sticks
    stuck = t > 7.0
    assert np.all(res["bearing.mode"][stuck] == 0)
    assert np.abs(res["load.w"][stuck]).max() < 1e-9
    assert np.ptp(res["load.phi"][stuck]) < 1e-9  # it does not move while stuck
    # the free motor settles at its no-load speed V/k (no load torque: no current)
    assert res["rotor.w"][-1] == pytest.approx(12.0 / 0.5, rel=1e-6)


def test_hydraulic_press_phases(results):
    out, _ = results["hydraulic_press"]
    mod = load("hydraulic_press")
    pump_flow = mod.D_PUMP * mod.W_PUMP
    # approach and retract at the pump flow over the areas (less the leakage, about 1 %)
    assert out["approach_speed"] == pytest.approx(pump_flow / mod.A_PISTON, rel=0.02)
    assert out["retract_speed"] == pytest.approx(-pump_flow / mod.A_ANNULUS, rel=0.02)
    # pressing: the relief valve holds the line within its band, the workpiece takes the
    # cylinder's force
    # (open, the relief valve follows its closing characteristic, p_hyst below cracking)
    assert mod.P_RELIEF - mod.P_HYST < out["line_pressure"] < mod.P_RELIEF - mod.P_HYST + 10e5
    assert out["press_force"] == pytest.approx(out["cylinder_force"], rel=1e-3)
    res = out["result"]
    assert res["cylinder.p_a"].min() > 0 and res["cylinder.p_b"].min() > 0  # the air holds


def test_excavator_boom_lifts_at_the_pump_flow_and_holds_statically(results):
    out, _ = results["excavator_boom"]
    mod = load("excavator_boom")
    # lifting: the rod moves at the pump's delivery over the piston area (less the valve's
    # and the cylinder's small leak and compression)
    assert out["rod_speed"] == pytest.approx(out["delivered"] / mod.A_PISTON, rel=0.02)
    # holding: the cylinder's force balances gravity's moment about the pivot, averaged
    # over the settling oscillation
    assert out["holding_force"] == pytest.approx(out["static_force"], rel=5e-3)
    res = out["result"]
    assert res["brake.locked"].min() == 1  # the stick stays locked on its joint
    assert np.ptp(res["joint2.phi"]) < 1e-9


def test_excavator_inverse_run_pressure_drives_the_forward_model_along_the_profile(results):
    """The inverse run's supply pressure, fed as a table into the same linkage run forward,
    makes the boom follow the prescribed angle; at rest the force is the static one."""
    import mbmodel as mb
    from mbmodel.libraries import blocks as bl
    from mbmodel.libraries import hydraulics as hy
    from mbmodel.libraries import multibody as mbl
    out, _ = results["excavator_boom"]
    mod = load("excavator_boom")
    inverse = out["inverse"]
    for k in (0, -1):  # at rest with zero acceleration: the static moment balance
        assert inverse["cylinder.f_fluid"][k] == pytest.approx(
            mod.holding_force(inverse["joint1.phi"][k]), rel=1e-9)

    class Replay(mod.BoomLinkage):
        vented_b = True
        joint1 = mbl.Revolute(n=[0.0, 0.0, 1.0], phi=mb.Fixed(mod.PHI_START), w=mb.Fixed(0.0))
        bend = mbl.FixedRotation(n=[0.0, 0.0, 1.0], angle=mod.STICK_ANGLE)
        cylinder = mod.boom_cylinder()
        supply = hy.PressureSource()
        pressure = bl.TimeTable(table=np.column_stack([inverse.t, inverse["supply.p"]]))

        def equations(self):
            yield from super().equations()
            yield mb.connect(self.boom.frame_b, self.bend.frame_a)
            yield mb.connect(self.bend.frame_b, self.stick.frame_a)
            yield mb.connect(self.supply.port, self.cylinder.port_a)
            yield mb.connect(self.pressure.y, self.supply.p_in)

    res = mb.simulate(Replay(), mod.T_RAISE, n_points=41, rtol=1e-10, atol=1e-12)
    profile = np.array([float(mod.prescribed_angle(t)) for t in res.t])
    # open loop over 4 s, the pressure interpolated linearly between 401 samples
    np.testing.assert_allclose(res["joint1.phi"], profile, atol=1e-5)  # (2e-6 seen)



def test_fourbar_closed_loop_forward_and_inverse(results):
    out, _ = results["fourbar"]
    assert out["states"] == ["j1.phi", "j1.w"]  # one degree of freedom: the crank
    assert sorted(out["algebraic"]) == ["j2.phi", "j3.phi", "j4.phi"]
    assert out["coupler_error"] < 1e-8 and out["rocker_error"] < 1e-8
    assert out["closure_error"] < 1e-9
    assert out["energy_drift"] < 1e-7
    assert sorted(out["inverse_inputs"]) == ["j1.a", "j1.phi", "j1.w"]
    assert out["torque_error"] < 1e-8 * max(1.0, out["peak_torque"])


def test_engine_energy_balance_and_slider_crank_kinematics(results):
    out, _ = results["engine"]
    assert out["states"][:2] == ["crankshaft.phi", "crankshaft.w"]
    assert out["piston_error"] < 1e-7
    assert out["energy_balance"] < 1e-5
    # near the steady state the gas power feeds the load; the flywheel keeps the speed
    # within a few per cent over a revolution
    assert out["mean_gas_power"] == pytest.approx(out["mean_load_power"], rel=0.02)
    assert 0.005 < out["irregularity"] < 0.05
