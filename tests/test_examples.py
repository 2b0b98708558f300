"""The example programs in examples/: each one's main() runs, and its key results are
physically right (analytic values, structural facts such as the number of states)."""

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = ["rc_circuit", "rlc_circuit", "cauer_filter", "dc_motor_drive",
           "cartesian_pendulum"]


def load(name):
    """Import examples/<name>.py as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """main() of every example, run once; plots go to a temporary directory."""
    pytest.importorskip("matplotlib")
    out_dir = tmp_path_factory.mktemp("example_plots")
    return {name: (load(name).main(plot=True, out_dir=str(out_dir)), out_dir)
            for name in SCRIPTS}


@pytest.mark.parametrize("name", SCRIPTS)
def test_plot_written(results, name):
    out, out_dir = results[name]
    png = Path(out_dir) / f"{name}.png"
    assert png.is_file() and png.stat().st_size > 10_000


@pytest.mark.parametrize("name", SCRIPTS)
def test_main_without_plot(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = load(name).main(plot=False)
    assert isinstance(out, dict) and out["states"]
    assert not list(tmp_path.iterdir())  # nothing written


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
    assert (tmp_path / f"{name}.png").is_file()
