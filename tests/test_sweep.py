"""Parameter sweeps (mbmodel.sweep): every row against a closed form, the same numbers in
this process, in local worker processes and on a dask.distributed cluster, failed runs
reported or kept, and bad requests refused before any worker starts."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mbmodel as mb  # noqa: E402
from mbmodel.libraries import rotational as rot  # noqa: E402
from test_persist import RC  # noqa: E402

pytest.importorskip("pandas")
R_VALUES, C_VALUES = [500.0, 1e3, 2e3], [2e-7, 1e-6]


@pytest.fixture(scope="module")
def rc():
    return mb.compile(RC())


def check_rc_rows(table):
    """v_C = 1 - exp(-t / RC) in every row."""
    tau = table["resistor.R"] * table["capacitor.C"]
    assert np.allclose(table["capacitor.v"], 1 - np.exp(-table["time"] / tau), rtol=0,
                       atol=1e-7)


def test_grid_sweep_in_processes_matches_the_closed_form_and_this_process(rc):
    params = {"resistor.R": R_VALUES, "capacitor.C": C_VALUES}
    table = mb.sweep(rc, 2e-3, params, outputs=["capacitor.v"], n_points=21, processes=2,
                     progress=False)
    assert list(table.columns) == ["run", "resistor.R", "capacitor.C", "time", "capacitor.v"]
    assert len(table) == 6 * 21 and table["run"].nunique() == 6
    # every combination, the last name varying fastest
    runs = table.groupby("run")[["resistor.R", "capacitor.C"]].first()
    assert runs.values.tolist() == [[r, c] for r in R_VALUES for c in C_VALUES]
    check_rc_rows(table)
    here = mb.sweep(rc, 2e-3, params, outputs=["capacitor.v"], n_points=21, processes=0,
                    progress=False)
    assert here.equals(table)  # the loaded model in the workers runs the same code
    assert table.attrs["units"] == {"resistor.R": "Ohm", "capacitor.C": "F",
                                    "capacitor.v": "V", "time": "s"}


def test_sweep_on_a_dask_cluster_gives_the_same_table(rc):
    distributed = pytest.importorskip("distributed")
    params = [{"resistor.R": r, "capacitor.C": c} for r, c in zip(R_VALUES, [1e-6, 2e-6, 5e-7])]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        table = mb.sweep(rc, 2e-3, params, outputs=["capacitor.v"], n_points=11,
                         client=client, progress=False)
        loaded = client.run(lambda: sorted(sys.modules["mbmodel.sweep"]._cluster_models))
    check_rc_rows(table)
    assert table.equals(mb.sweep(rc, 2e-3, params, outputs=["capacitor.v"], n_points=11,
                                 processes=0, progress=False))
    assert all(len(keys) == 1 for keys in loaded.values())  # loaded once per worker


class Spun(mb.Model):
    """An inertia driven by a torque input against a damper: J w' = tau - d w."""

    tau = mb.Input()
    source = rot.Torque()
    inertia = rot.Inertia(J=2.0, phi=mb.Fixed(0.0), w=mb.Fixed(0.0))
    damper = rot.Damper(d=0.5)
    fixed = rot.Fixed()

    def equations(self):
        yield mb.connect(self.tau, self.source.tau)
        yield mb.connect(self.source.flange, self.inertia.flange_a)
        yield mb.connect(self.inertia.flange_b, self.damper.flange_a)
        yield mb.connect(self.damper.flange_b, self.fixed.flange)


def test_input_sets_combine_with_every_parameter_set():
    cm = mb.compile(Spun())
    inputs = [{"tau": 1.0}, {"tau": ([0.0, 1.0], [0.0, 3.0])}]  # constant; a step at t = 1
    table = mb.sweep(cm, 2.0, {"inertia.J": [1.0, 4.0]}, inputs, outputs=["inertia.w"],
                     times=[0.5, 1.0, 1.5, 2.0], processes=0, progress=False)
    assert table.groupby("run")[["inertia.J", "input_set"]].first().values.tolist() == \
        [[1.0, 0], [1.0, 1], [4.0, 0], [4.0, 1]]
    for _, row in table.iterrows():
        J, d, t = row["inertia.J"], 0.5, row["time"]
        if row["input_set"] == 0:
            w = 1.0 / d * (1 - np.exp(-d * t / J))
        else:
            w = 3.0 / d * (1 - np.exp(-d * max(t - 1.0, 0.0) / J))
        assert row["inertia.w"] == pytest.approx(w, abs=1e-7)


class Escape(mb.Model):
    """x' = k x^2 from x(0) = 1: x = 1 / (1 - k t) leaves every bound at t = 1 / k."""

    k = mb.Parameter(1.0)
    x = mb.Variable(start=1.0, fixed=True)

    def equations(self):
        yield mb.der(self.x) == self.k * self.x ** 2


def test_failed_runs_are_reported_or_kept():
    cm = mb.compile(Escape())
    with pytest.raises(mb.SimulationError, match=r"sweep: run 1 \(k = 2\) failed: .*t = 0.4"):
        mb.sweep(cm, 1.0, {"k": [0.5, 2.0]}, n_points=11, processes=0, progress=False)
    table = mb.sweep(cm, 1.0, {"k": [0.5, 2.0]}, n_points=11, processes=0, progress=False,
                     errors="keep")
    good, bad = table[table["run"] == 0], table[table["run"] == 1]
    assert good["error"].isna().all() and len(good) == 11
    assert bad["error"].str.contains("t = 0.4").all() and 4 <= len(bad) <= 5
    # up to where the run got (near a blow-up the relative error grows with x)
    for part, rtol in ((good, 1e-6), (bad, 1e-5)):
        assert np.allclose(part["x"], 1 / (1 - part["k"] * part["time"]), rtol=rtol, atol=0)


def test_refused_values_are_kept_as_failed_runs_and_unset_parameters_show_defaults(rc):
    params = [{"resistor.R": 2e3}, {"resistor.R": -5.0}, {"capacitor.C": 2e-7}]
    with pytest.raises(mb.ParameterError, match="resistor.R"):
        mb.sweep(rc, 1e-3, params, outputs=["capacitor.v"], processes=0, progress=False)
    table = mb.sweep(rc, 1e-3, params, outputs=["capacitor.v"], processes=0,
                     progress=False, errors="keep", n_points=5)
    good = table[table["error"].isna()]
    assert sorted(good["run"].unique()) == [0, 2]
    assert set(good[good["run"] == 2]["resistor.R"]) == {1e3}   # the default, not NaN
    assert set(good[good["run"] == 0]["capacitor.C"]) == {1e-6}
    check_rc_rows(good)
    bad = table[table["run"] == 1]
    assert len(bad) == 1 and bad["capacitor.v"].isna().all()
    assert "resistor.R" in bad["error"].iloc[0]


def test_bad_requests_are_refused_before_any_run(rc):
    with pytest.raises(mb.ParameterError, match="resistor.Rx"):
        mb.sweep(rc, 1e-3, {"resistor.Rx": [1.0]}, processes=2, progress=False)
    with pytest.raises(mb.SimulationError, match="no variable capacitor.q"):
        mb.sweep(rc, 1e-3, outputs=["capacitor.q"], progress=False)
    with pytest.raises(mb.SimulationError, match="unknown option.*n_point"):
        mb.sweep(rc, 1e-3, n_point=3, progress=False)
    with pytest.raises(mb.SimulationError, match="resistor.R.*sequence of numbers"):
        mb.sweep(rc, 1e-3, {"resistor.R": ["a"]}, progress=False)
    # no runs at all (a filter that kept nothing): pandas' "No objects to concatenate" came
    for bad, what in (({"resistor.R": []}, "'resistor.R' has no values"),
                      ([], "params is an empty list")):
        with pytest.raises(mb.SimulationError, match=what):
            mb.sweep(rc, 1e-3, bad, processes=0, progress=False)
    with pytest.raises(mb.SimulationError, match="inputs is an empty list"):
        mb.sweep(rc, 1e-3, inputs=[], processes=0, progress=False)
    # wrong for every run: said once, before any run (was a failure of run 0, or
    # concurrent.futures' ValueError) (review)
    for options, what in (({"processes": -1}, "sweep: processes must be a whole number >= 0"),
                          ({"method": "rk4"}, "sweep: method must be one of"),
                          ({"n_points": 0}, "sweep: n_points must be a whole number >= 1"),
                          ({"rtol": -1.0}, "sweep: rtol must be a positive")):
        with pytest.raises(mb.SimulationError, match=what):
            mb.sweep(rc, 1e-3, {"resistor.R": [1.0, 2.0]}, progress=False, **options)
    with pytest.raises(mb.SimulationError, match=r"sweep: t_end \(-1.0\) must be finite"):
        mb.sweep(rc, -1.0, {"resistor.R": [1.0, 2.0]}, progress=False)


def test_progress_bar_counts_the_runs(rc, capsys):
    pytest.importorskip("tqdm")
    mb.sweep(rc, 1e-3, {"resistor.R": R_VALUES}, processes=0, progress=True)
    assert "3/3" in capsys.readouterr().err


def test_unguarded_scripts_and_scripts_on_stdin_sweep_in_processes(tmp_path):
    # spawned workers do not run the main script: no sweep again in every worker, and a
    # script read from stdin (no file to import) works too
    import subprocess
    import textwrap
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import mbmodel as mb
        from test_persist import RC

        print("top level ran")
        table = mb.sweep(mb.compile(RC()), 1e-3, {{"resistor.R": [1e3, 2e3]}}, processes=2,
                         progress=False, n_points=3)
        print(table["run"].nunique(), "runs", sys.modules["__main__"].__dict__.get("__file__"))
    """)
    script = tmp_path / "unguarded.py"
    script.write_text(code)
    from_file = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                               timeout=300, cwd=tmp_path)
    from_stdin = subprocess.run([sys.executable, "-"], input=code, capture_output=True,
                                text=True, timeout=300, cwd=tmp_path)
    for done in (from_file, from_stdin):
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.count("top level ran") == 1   # not again in the workers
    # the main module got its file back after the sweep
    assert from_file.stdout.strip().endswith(f"2 runs {script}")
    assert from_stdin.stdout.strip().endswith("2 runs <stdin>")


def test_progress_bar_over_simulated_time(rc, capsys, monkeypatch):
    pytest.importorskip("tqdm")
    from mbmodel import progress
    from test_persist import BouncingBall
    monkeypatch.setattr(progress, "DELAY_S", 0.0)  # shown at once, not after a second
    res = rc.simulate(5e-3, progress=True)
    assert "5e-03/5e-03 s simulated" in capsys.readouterr().err.replace("0.005", "5e-03")
    assert len(res.methods) == 20  # the run cut into integrator calls for the bar
    assert np.allclose(res["capacitor.v"], 1 - np.exp(-res.t / 1e-3), rtol=0, atol=1e-7)
    ball = mb.compile(BouncingBall())
    quiet = ball.simulate(2.0)
    shown = ball.simulate(2.0, progress=True)
    assert "2/2 s simulated" in capsys.readouterr().err
    assert [e.time for e in shown.events] == [e.time for e in quiet.events]  # not cut
    rc.simulate(5e-3, progress=False)
    assert capsys.readouterr().err == ""


def test_a_vector_parameter_swept_by_its_declared_name():
    """``params={"world.n": [...vectors...]}`` sweeps gravity's direction (a column per
    entry), as ``simulate(params=...)`` takes it; it had said "give a sequence of
    numbers". A point mass on an arm of 1 m about z, level at the start: with gravity
    along -y it falls (energy: w^2 = -2 g sin(phi)), along -x it hangs still."""
    from test_multibody_errors import _pendulum  # world - joint (about z) - body
    cm = mb.compile(_pendulum(m=1.0, r_CM=[1.0, 0, 0], I_11=0.0, I_22=0.0, I_33=0.0))
    down, along = [0.0, -1.0, 0.0], [-1.0, 0.0, 0.0]
    table = mb.sweep(cm, 0.3, {"world.n": [down, along]}, outputs=["joint.phi", "joint.w"],
                     n_points=31, processes=0, progress=False)
    assert list(table.columns) == ["run", "world.n[0]", "world.n[1]", "world.n[2]", "time",
                                   "joint.phi", "joint.w"]
    falling, hanging = (table[table["run"] == k] for k in (0, 1))
    assert falling[["world.n[0]", "world.n[1]", "world.n[2]"]].values.tolist() == [down] * 31
    assert falling["joint.phi"].iloc[-1] < -0.3  # it fell
    np.testing.assert_allclose(falling["joint.w"] ** 2,
                               -2 * 9.81 * np.sin(falling["joint.phi"]), rtol=1e-6, atol=1e-9)
    assert np.abs(hanging[["joint.phi", "joint.w"]].values).max() < 1e-12
    # a list of runs takes the declared name as well, and one entry alone
    runs = mb.sweep(cm, 0.3, [{"world.n": down}, {"world.n[0]": -1.0, "world.n[1]": 0.0}],
                    outputs=["joint.w"], n_points=31, processes=0, progress=False)
    assert np.array_equal(runs["joint.w"].values, table["joint.w"].values)
    with pytest.raises(mb.ParameterError, match=r"'world.n' has shape \(3,\)"):
        mb.sweep(cm, 0.3, {"world.n": [[0.0, 1.0]]}, processes=0, progress=False)


class _Integrator(mb.Model):
    """x' = u[0] + 10 u[1] + w: the integral of its inputs."""
    u = mb.Input(shape=2)
    w = mb.Input()
    x = mb.Variable(0.0, fixed=True)

    def equations(self):
        yield mb.der(self.x) == self.u[0] + 10 * self.u[1] + self.w


def test_inputs_reach_the_runs_in_every_form_simulate_reads():
    """Rows [[t, v], ...] were made a tuple of rows: two rows read as times [0, 5] and
    values [0.5, 7], silently; three rows and a vector input's constant failed (review).
    Each form gives what simulate gives, and the integral by hand; a 2 x 2 list is refused
    as simulate refuses it, and a wrong input before any run, naming its set."""
    cm = mb.compile(_Integrator())
    forms = [({"u": [1.0, 2.0], "w": [[0.0, 1.0], [0.5, 2.0], [0.8, 3.0]]}, 21.0 + 1.7),
             ({"u": [[0.0, 1.0, 2.0], [0.5, 3.0, 4.0]], "w": ([0.0, 0.5], [5.0, 7.0])},
              32.0 + 6.0),
             ({"u": ([0.0, 0.5], [[1.0, 2.0], [3.0, 4.0]]), "w": 1.0}, 32.0 + 1.0)]
    table = mb.sweep(cm, 1.0, inputs=[u for u, _ in forms], outputs=["x"], n_points=11,
                     processes=0, progress=False)
    for j, (u, exact) in enumerate(forms):
        final = table[table["input_set"] == j]["x"].iloc[-1]
        assert final == pytest.approx(exact, abs=1e-9)
        assert final == pytest.approx(cm.simulate(1.0, inputs=u).final("x"), abs=1e-12)
    with pytest.raises(mb.SimulationError, match=r"sweep: inputs \(input set 1\): input 'w'"
                                                 r": .* reads as rows .* and as \(times, "
                                                 r"values\) alike"):
        mb.sweep(cm, 1.0, inputs=[forms[0][0], {"u": [1.0, 2.0], "w": [[0, 5], [0.5, 7]]}],
                 processes=0, progress=False)
    with pytest.raises(mb.SimulationError, match=r"sweep: inputs: the model has no external "
                                                 r"input wx"):
        mb.sweep(cm, 1.0, inputs={"u": [1.0, 2.0], "wx": 1.0}, processes=2, progress=False)


def test_a_sweep_builds_the_c_its_workers_load_once_before_they_start(monkeypatch):
    """The sweep builds, before its workers start, what each would otherwise build at the
    same time: the dynamics and the integrators' C loops unless native=False, and with
    native=True the outputs' C where the runs compute their tables (more than the states
    read, and a table not so large that variables are computed alone)."""
    import importlib
    sweeping = importlib.import_module("mbmodel.sweep")
    simulation = importlib.import_module("mbmodel.simulate")
    from mbmodel import native
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from mb_trees import RevoluteChain
    cm = mb.compile(RevoluteChain(2))
    built = []
    monkeypatch.setattr(native, "dynamics", lambda cm_, n: built.append("dynamics"))
    monkeypatch.setattr(native, "outputs", lambda cm_, n: built.append("outputs"))
    monkeypatch.setattr(sweeping, "runtime_loops", lambda: built.append("loops"))
    other = next(n for n in cm.output_names if n not in cm.states)
    cases = [({"native": False}, [other], []),
             ({}, [other], ["dynamics", "loops"]),
             ({"native": True}, list(cm.states), ["dynamics", "loops"]),
             ({"native": True}, [other], ["dynamics", "loops", "outputs"]),
             # a table so large that the runs compute their variable alone
             ({"native": True, "n_points": int(simulation.TABLE_ALONE)}, [other],
              ["dynamics", "loops"])]
    for options, outputs, expected in cases:
        built.clear()
        sweeping._prebuild(cm, native, [(0, {}, None, outputs, 1.0, options)])
        assert built == expected, (options, outputs)
