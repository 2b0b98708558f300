"""The whole Manutec r3 robot: six current-controlled DC motors, elastic and rigid gears
with stick–slip bearing friction, P–PI cascade controllers and the path planner, driving
the multibody mechanics (the MSL ``RobotR3.FullRobot``, Otter, Elmqvist and Cellier 1993;
DLR's published data). Components: :mod:`mbmodel.libraries.robot_r3`.

Three runs, all built from the same component models:

a) **forward** (``FullRobot``): the FullRobot motion from (-60, 20, 90, 0, -110, 0) deg to
   (60, -70, -35, 45, 110, 45) deg with the trapezoidal speed profile (``KinematicPTP``),
   2 s, feedback control only. Reference against actual joint angles, motor currents,
   tracking errors; the robot starts at rest in equilibrium.
b) **inverse** (``InverseRobot``, ``analysis="inverse"``): the joint angles prescribed by
   the same trapezoidal profile through a critically damped filter (``FilteredPTP``:
   order 4, f_cut = 5 Hz; continuous to the fifth derivative, within the same speed and
   acceleration limits, over at 1.86 s); index reduction differentiates it through the
   elastic gears of axes 1-3 and gives the joint torques, motor torques, currents and
   voltages the motion needs.
c) **feed-forward**: (a)'s robot along (b)'s path, once with feedback only and once with the
   inverse model's currents added to the current references and its motor angles and
   speeds as the controllers' references; the factor by which the peak tracking error
   falls, per axis.

Run from the repository root::

    python examples/robot_r3_full.py

It prints the tables and writes ``robot_r3_full.png``.
"""

from __future__ import annotations

import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import robot_r3 as r3

T_FORWARD = 2.0      # FullRobot stop time [s]
SMOOTH = "filtered"  # the trapezoid through a critically damped filter (FilteredPTP)
T_SMOOTH = 2.0       # runs along the smooth path (over at 1.86 s) [s]
METHOD = "dop853"    # what "auto" picks too for this 2 s run (without its stiffness checks)


def joint_angles(res):
    return np.column_stack([res[f"mechanics.r{k}.phi"] for k in range(1, 7)])


def reference(res):
    return np.column_stack([res[f"planner.q[{k}]"] for k in range(6)])


def currents(res):
    return np.column_stack([res[f"axis{k}.motor.current"] for k in range(1, 7)])


def forward_run(feedforward=None, reference_kind="ptp", t_end=T_FORWARD, n_points=2001,
                drives=None):
    """Compile and simulate FullRobot; returns (result, model, compile s, simulate s)."""
    t0 = time.perf_counter()
    cm = mb.compile(r3.FullRobot(reference=reference_kind, feedforward=feedforward,
                                 drives=drives))
    t1 = time.perf_counter()
    # no progress bar between the printed tables (each run takes about a second)
    res = cm.simulate(t_end, n_points=n_points, method=METHOD, progress=False)
    return res, cm, t1 - t0, time.perf_counter() - t1


def main(plot=True, out_dir="."):
    """The three runs; prints the tables, optionally plots. Returns a dict of results."""
    # (a) forward, trapezoidal reference, feedback only
    res, cm, t_compile, t_sim = forward_run()
    q, q_ref = joint_angles(res), reference(res)
    error = q_ref - q
    peak_error = np.abs(error).max(axis=0)
    print("Manutec r3 with drive trains (FullRobot): "
          f"{len(cm.states)} states, {len(res.events)} events in {T_FORWARD:g} s")
    print(f"(a) forward run: compile {t_compile:.2f} s, simulate {T_FORWARD:g} s in "
          f"{t_sim:.2f} s ({METHOD})")
    rows = [(f"axis {k + 1}", f"{np.degrees(q_ref[-1, k]):.2f}", f"{np.degrees(q[-1, k]):.3f}",
             f"{np.degrees(peak_error[k]):.4f}", f"{np.abs(currents(res)[:, k]).max():.3f}")
            for k in range(6)]
    print(mb.format_table(("axis", "end ref [deg]", "end actual [deg]",
                           "peak error [deg]", "peak |current| [A]"), rows))

    # (b) inverse run along the smooth path
    t0 = time.perf_counter()
    ff, inverse, fit_error = r3.feedforward(T_SMOOTH, reference=SMOOTH)
    t_inverse = time.perf_counter() - t0
    t_motion = float(inverse.final("planner.T"))
    print(f"\n(b) inverse run (FilteredPTP, motion over at {t_motion:.3f} s): compile and "
          f"run {t_inverse:.2f} s; feed-forward series fit the currents within "
          f"{fit_error:.1e} A")
    inv_rows = []
    for k in range(1, 7):
        tau = inverse[f"mechanics.r{k}.tau"]
        inv_rows.append((f"axis {k}", f"{np.abs(tau).max():.1f}",
                         f"{np.abs(inverse[f'axis{k}.motor.emf.tau_elec']).max():.3f}",
                         f"{np.abs(inverse[f'axis{k}.motor.current']).max():.3f}",
                         f"{np.abs(inverse[f'axis{k}.command.y']).max():.0f}"))
    print(mb.format_table(("axis", "peak joint torque [N.m]", "peak motor torque [N.m]",
                           "peak current [A]", "peak voltage [V]"), inv_rows))

    # (c) feedback alone against feedback + feed-forward, along the smooth path
    fb, _, _, t_fb = forward_run(reference_kind=SMOOTH, t_end=T_SMOOTH)
    ffr, _, _, t_ff = forward_run(ff, reference_kind=SMOOTH, t_end=T_SMOOTH)
    err_fb = np.abs(reference(fb) - joint_angles(fb)).max(axis=0)
    err_ff = np.abs(reference(ffr) - joint_angles(ffr)).max(axis=0)
    factor = err_fb / err_ff
    print(f"\n(c) feed-forward along the smooth path ({T_SMOOTH:g} s; simulate {t_fb:.2f} s "
          f"and {t_ff:.2f} s):")
    rows = [(f"axis {k + 1}", f"{np.degrees(err_fb[k]):.5f}", f"{np.degrees(err_ff[k]):.6f}",
             f"{factor[k]:.1f}") for k in range(6)]
    print(mb.format_table(("axis", "feedback [deg]", "with feed-forward [deg]", "factor"),
                          rows))

    out = {"states": list(cm.states), "t": res.t, "q": q, "q_ref": q_ref,
           "peak_error": peak_error, "currents": currents(res), "events": len(res.events),
           "compile_forward": t_compile, "simulate_forward": t_sim,
           "inverse": inverse, "t_motion": t_motion, "fit_error": fit_error,
           "error_feedback": err_fb, "error_feedforward": err_ff, "factor": factor,
           "result": res, "feedback": fb, "with_feedforward": ffr}
    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "robot_r3_full.png")
        _plot(out, path)
        print(f"plot written to {path}")
    return out


def _plot(out, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 8))
    axes = fig.subplots(2, 3)
    t, inv, fb, ffr = out["t"], out["inverse"], out["feedback"], out["with_feedforward"]
    ax = axes[0, 0]
    for k in range(6):
        ax.plot(t, np.degrees(out["q_ref"][:, k]), color=f"C{k}", ls="--", lw=1)
        ax.plot(t, np.degrees(out["q"][:, k]), color=f"C{k}", lw=1.2, label=f"axis {k + 1}")
    ax.set_title("(a) reference (dashed) and joint angles", fontsize=10)
    ax.set_ylabel("angle [deg]")
    panels = (  # (axes, time, six curves, title, y label)
        (axes[0, 1], t, out["currents"], "(a) motor currents", "current [A]"),
        (axes[0, 2], t, np.degrees(out["q_ref"] - out["q"]),
         "(a) tracking error, feedback only", "error [deg]"),
        (axes[1, 0], inv.t, currents(inv),
         "(b) inverse model: currents needed (filtered path)", "current [A]"),
        (axes[1, 1], inv.t,
         np.column_stack([inv[f"mechanics.r{k}.tau"] for k in range(1, 7)]),
         "(b) inverse model: joint torques", "torque [N.m]"),
    )
    for ax, times, curves, title, ylabel in panels:
        for k in range(6):
            ax.plot(times, curves[:, k], color=f"C{k}", lw=1, label=f"axis {k + 1}")
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
    ax = axes[1, 2]
    for k in range(6):
        ax.semilogy(fb.t, np.abs(reference(fb)[:, k] - joint_angles(fb)[:, k]) + 1e-12,
                    color=f"C{k}", lw=0.8, ls="--")
        ax.semilogy(ffr.t, np.abs(reference(ffr)[:, k] - joint_angles(ffr)[:, k]) + 1e-12,
                    color=f"C{k}", lw=1, label=f"axis {k + 1}: {out['factor'][k]:.0f}x")
    ax.set_ylim(1e-9, 1e-1)
    ax.set_title("(c) |error| [rad]: feedback (dashed), feed-forward", fontsize=10)
    for ax in axes.ravel():
        ax.set_xlabel("time [s]")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
