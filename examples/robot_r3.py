"""Mechanics of the Manutec r3 robot: forward dynamics (falling under gravity) and inverse
dynamics (joint torques along a point-to-point motion).

The model is the multibody part of the MSL ``MultiBody.Examples.Systems.RobotR3``
(``Utilities.MechanicalStructure``), with DLR's published data (the library's
``robot_r3.LINKS``): six revolute joints (axes r1 y, r2 x, r3 x, r4 y,
r5 x, r6 y) and seven ``BodyShape`` links; the load (15 kg at ``rLoad = (0.1, 0.25, 0.1)``
from the last flange, inertia 0.001 kg.m2 about its centre) sits at ``b6.frame_b``. Gravity
is 9.81 m/s² along -y.

Structure (component names as in :class:`R3Mechanics`)::

    world.frame_b -- b0 -- r1 -- b1 -- r2 -- b2 -- r3 -- b3 -- r4 -- b4 -- r5 -- b5
                  -- r6 -- b6 -- load

(each joint's frame_a on the previous link's frame_b; each ``BodyShape`` has its body at its
frame_a, i.e. at the joint before it; b0 is fixed to the world).

Two runs of the same model class:

a) forward dynamics (``mb.compile(model)``, articulated-body algorithm): no drives, the robot
   starts at rest in the FullRobot start pose (-60, 20, 90, 0, -110, 0) deg and falls under
   gravity for 0.5 s;
b) inverse dynamics (``mb.compile(model, analysis="inverse")``, recursive Newton–Euler): the
   joint angles, speeds and accelerations of the FullRobot point-to-point reference (from the
   ``blocks.KinematicPTP`` block: start (-60, 20, 90, 0, -110, 0) deg, end
   (60, -70, -35, 45, 110, 45) deg, qd_max (3, 1.5, 5, 3.1, 3.1, 4.1) rad/s, qdd_max
   (15, 15, 15, 60, 60, 60) rad/s², 2 s) are the inputs of the compiled model; the joint
   torques ``r<i>.tau`` are its outputs, evaluated on a 1 ms grid.

``R3Mechanics`` (the library's :class:`mbmodel.libraries.robot_r3.MechanicalStructure`) has no
side effects on import and can be loaded from the file path::

    spec = importlib.util.spec_from_file_location("robot_r3", "examples/robot_r3.py")
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    cm = mb.compile(module.R3Mechanics(), analysis="inverse")

Run from the repository root::

    python examples/robot_r3.py

It prints the states the compiler chose, the final angles of the fall, the peak joint
torques of the reference motion and writes ``robot_r3.png``.
"""

from __future__ import annotations

import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import blocks

# The robot's data and mechanics live in the library (mbmodel.libraries.robot_r3).
from mbmodel.libraries.robot_r3 import (AXES, G, JOINTS, LINKS, M_LOAD,  # noqa: F401
                                        Q_END_DEG, Q_START_DEG, QD_MAX, QDD_MAX, R_LOAD)
from mbmodel.libraries.robot_r3 import MechanicalStructure as R3Mechanics

T_REF = 2.0          # duration of the inverse-dynamics run [s] (motion ends at 1.356 s)
T_FALL = 0.5         # duration of the forward run [s]


class PTPReference(mb.Model):
    """The FullRobot reference motion alone (six axes, ``blocks.KinematicPTP``)."""

    ptp = blocks.KinematicPTP(n=6, q_begin=list(np.radians(Q_START_DEG)),
                              q_end=list(np.radians(Q_END_DEG)),
                              qd_max=list(QD_MAX), qdd_max=list(QDD_MAX))


def evaluate(cm, times, inputs=None, params=None):
    """All outputs of a compiled model without states or algebraic variables on a time
    grid: dict name -> array. ``inputs`` maps input names to arrays over ``times``."""
    if cm.states or cm.algebraic:
        raise ValueError("evaluate() is for models without states and algebraic variables")
    times = np.asarray(times, dtype=float)
    n = len(times)
    p = cm.parameter_vector(params)
    U = np.zeros((len(cm.inputs), n))
    for k, name in enumerate(cm.inputs):
        U[k] = inputs[name]
    Y = np.array(cm.output_function.map(n)(np.zeros((0, n)), np.zeros((0, n)), U,
                                           np.repeat(p[:, None], n, 1), times[None, :]))
    return {name: Y[i] for name, i in cm.output_index.items()}


def reference_motion(times):
    """(q, qd, qdd), each of shape (len(times), 6), of the FullRobot PTP reference, evaluated
    by the compiled KinematicPTP block; also returns the compile + evaluation time."""
    t0 = time.perf_counter()
    ref = evaluate(mb.compile(PTPReference()), times)
    elapsed = time.perf_counter() - t0
    q, qd, qdd = (np.column_stack([ref[f"ptp.{v}[{k}]"] for k in range(6)])
                  for v in ("q", "qd", "qdd"))
    return q, qd, qdd, elapsed


def inverse_inputs(q, qd, qdd):
    """Input dict of the inverse model from joint trajectories (n x 6 arrays)."""
    u = {}
    for k, name in enumerate(JOINTS):
        u[f"{name}.phi"], u[f"{name}.w"], u[f"{name}.a"] = q[:, k], qd[:, k], qdd[:, k]
    return u




def main(plot=True, out_dir="."):
    """Run the forward (fall) and inverse (PTP motion) analyses, print the tables and save
    the plot.

    Returns a dict: ``states`` (forward model), ``q_start`` [rad], the forward result
    (``t_fall``, ``q_fall``, ``w_fall`` of shape (n, 6), ``q_fall_final``, ``w_fall_final``,
    ``qdd_start``: joint accelerations at t = 0), the inverse run (``t_ref``, ``q_ref``,
    ``qd_ref``, ``qdd_ref``, ``tau`` of shape (n, 6), ``tau_peak``, ``t_tau_peak``,
    ``tau_hold``: torques holding the start pose at rest), ``inputs`` (inverse model input
    names) and timings.
    """
    q0 = np.radians(Q_START_DEG)

    # (a) forward dynamics: the robot falls from the start pose
    t0 = time.perf_counter()
    cm_fwd = mb.compile(R3Mechanics(q_start=q0))
    t1 = time.perf_counter()
    res = cm_fwd.simulate(T_FALL, n_points=501)
    t2 = time.perf_counter()
    q_fall = np.column_stack([res[f"{j}.phi"] for j in JOINTS])
    w_fall = np.column_stack([res[f"{j}.w"] for j in JOINTS])
    a_fall = np.column_stack([res[f"{j}.a"] for j in JOINTS])

    # (b) inverse dynamics along the reference motion
    t_ref = np.linspace(0.0, T_REF, 2001)
    q_ref, qd_ref, qdd_ref, t_ptp = reference_motion(t_ref)
    t3 = time.perf_counter()
    cm_inv = mb.compile(R3Mechanics(), analysis="inverse")
    t4 = time.perf_counter()
    out_inv = evaluate(cm_inv, t_ref, inverse_inputs(q_ref, qd_ref, qdd_ref))
    t5 = time.perf_counter()
    tau = np.column_stack([out_inv[f"{j}.tau"] for j in JOINTS])
    # Torques that hold the start pose at rest (static gravity torques)
    zeros = np.zeros((1, 6))
    hold = evaluate(cm_inv, [0.0], inverse_inputs(q0[None, :], zeros, zeros))
    tau_hold = np.array([hold[f"{j}.tau"][0] for j in JOINTS])
    k_peak = np.argmax(np.abs(tau), axis=0)
    tau_peak = np.abs(tau)[k_peak, range(6)]
    t_end_motion = t_ref[np.nonzero(np.any(np.abs(qd_ref) > 0, axis=1))[0][-1]]

    out = {
        "states": list(cm_fwd.states), "q_start": q0,
        "t_fall": res.t, "q_fall": q_fall, "w_fall": w_fall,
        "q_fall_final": q_fall[-1], "w_fall_final": w_fall[-1], "qdd_start": a_fall[0],
        "t_ref": t_ref, "q_ref": q_ref, "qd_ref": qd_ref, "qdd_ref": qdd_ref,
        "tau": tau, "tau_peak": tau_peak, "t_tau_peak": t_ref[k_peak], "tau_hold": tau_hold,
        "t_end_motion": float(t_end_motion), "inputs": list(cm_inv.inputs),
        "inverse_states": list(cm_inv.states), "inverse_algebraic": list(cm_inv.algebraic),
        "compile_forward": t1 - t0, "simulate_forward": t2 - t1,
        "reference_time": t_ptp, "compile_inverse": t4 - t3, "evaluate_inverse": t5 - t4,
        "result": res,
    }

    print("Manutec r3 mechanics (MSL RobotR3.Utilities.MechanicalStructure), "
          f"load {M_LOAD:g} kg at {R_LOAD}")
    print(f"states chosen by the compiler ({len(cm_fwd.states)}): {', '.join(cm_fwd.states)}")
    print(f"(a) forward dynamics: compile {1e3 * (t1 - t0):.0f} ms, simulate {T_FALL} s "
          f"{1e3 * (t2 - t1):.0f} ms ({len(cm_fwd.states)} states, "
          f"{len(cm_fwd.algebraic)} algebraic)")
    print(f"(b) inverse dynamics: reference (KinematicPTP compile + evaluate) "
          f"{1e3 * t_ptp:.0f} ms, compile {1e3 * (t4 - t3):.0f} ms, evaluate "
          f"{len(t_ref)} points {1e3 * (t5 - t4):.0f} ms ({len(cm_inv.inputs)} inputs, "
          f"{len(cm_inv.states)} states, {len(cm_inv.algebraic)} algebraic)\n")

    print(f"(a) fall under gravity from rest, final state at t = {T_FALL} s:")
    rows = [(j, f"{np.degrees(q0[k]):.1f}", f"{np.degrees(q_fall[-1, k]):.3f}",
             f"{w_fall[-1, k]:.4f}", f"{a_fall[0, k]:.4f}") for k, j in enumerate(JOINTS)]
    print(mb.format_table(("joint", "start [deg]", "final [deg]", "final w [rad/s]",
                 "a(0) [rad/s2]"), rows))
    print()
    print(f"(b) joint torques along the PTP reference motion (0 ... {T_REF} s, motion ends "
          f"at {t_end_motion:.3f} s):")
    rows = [(j, f"{tau_peak[k]:.2f}", f"{t_ref[k_peak[k]]:.3f}", f"{tau_hold[k]:.3f}",
             f"{tau[-1, k]:.3f}") for k, j in enumerate(JOINTS)]
    print(mb.format_table(("axis", "peak |tau| [N.m]", "at t [s]", "hold start pose [N.m]",
                 f"tau({T_REF:g} s) [N.m]"), rows))

    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "robot_r3.png")
        _plot(res.t, q_fall, t_ref, q_ref, tau, path)
        print(f"plot written to {path}")
    return out


def _plot(t_fall, q_fall, t_ref, q_ref, tau, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 8))
    (ax1, ax2), (ax3, ax4) = fig.subplots(2, 2)
    for k, j in enumerate(JOINTS):
        ax1.plot(t_fall, np.degrees(q_fall[:, k]), color=f"C{k}", label=f"{j}.phi")
        ax2.plot(t_ref, np.degrees(q_ref[:, k]), color=f"C{k}", label=f"{j}")
    ax1.set_title(f"(a) fall under gravity (no drives), {T_FALL} s", fontsize=10)
    ax1.set_xlabel("time [s]")
    ax1.set_ylabel("joint angle [deg]")
    ax1.legend(fontsize=7, ncol=2)
    ax2.set_title("(b) PTP reference motion (KinematicPTP)", fontsize=10)
    ax2.set_xlabel("time [s]")
    ax2.set_ylabel("joint angle [deg]")
    ax2.legend(fontsize=7, ncol=2)
    for k, j in enumerate(JOINTS):
        ax = ax3 if k < 3 else ax4
        ax.plot(t_ref, tau[:, k], color=f"C{k}", label=f"{j}.tau")
    ax3.set_title("(b) inverse dynamics: torques of axes 1-3", fontsize=10)
    ax4.set_title("(b) inverse dynamics: torques of axes 4-6", fontsize=10)
    for ax in (ax3, ax4):
        ax.set_xlabel("time [s]")
        ax.set_ylabel("joint torque [N.m]")
        ax.legend(fontsize=7)
    for ax in (ax1, ax2, ax3, ax4):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
