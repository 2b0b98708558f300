"""Manutec r3 with its drive trains (``mbmodel.libraries.robot_r3``): compile and wall times
of the FullRobot forward run and of the inverse run, the mechanics' operation counts beside
Dymola 1993's, and the feed-forward's error reduction.

Measured in one run:

* ``FullRobot`` (trapezoidal PTP, 2 s, feedback only): compile time, and the wall time of
  ``simulate(2.0)`` after compile (best of 7: one run varies by 30 % on a shared machine;
  Adams and auto best of 3) with DOP853 in C (the example's choice),
  with CVODES' Adams method, and with ``method="auto"`` (which picks DOP853 too: the
  current loops' modes decay at most 3300 times per second, 6600 times the run; it
  checks the eigenvalues after each event). ``forward_2s_wall_s`` is the run compiled
  with ``parameters="constant"`` (the robot's data folded into the code, as for a fixed
  robot; a third of the instructions per evaluation), the others keep the parameters
  symbolic (changeable per run without compiling again), the default;
* ``InverseRobot`` (``analysis="inverse"``, the filtered trapezoid, 2 s): compile and run;
* the mechanics alone (``MechanicalStructure``), ``parameters="constant"``: casadi
  operations of forward dynamics (articulated bodies) and inverse dynamics (Newton–Euler),
  against Otter, Elmqvist and Cellier 1993: 1 220 and 459;
* the peak tracking error along the smooth path (the trapezoid through a critically
  damped filter, ``reference="filtered"``, 2 s) with feedback only over the one with the
  inverse model's feed-forward, per axis (the smallest is reported).

Target (issue 13): 2 s simulated in at most 0.15 s wall after compile (Multibody.jl reports
144 ms for its Robot6DOF); operation counts at most Dymola's.

Run: ``python benchmarks/robot_r3.py``; its last line is one JSON object.
"""

from __future__ import annotations

import json
import time

import casadi as ca
import numpy as np

import mbmodel as mb
from mbmodel.libraries import robot_r3 as r3
from mbmodel.codegen import operation_counts

DYMOLA_FD, DYMOLA_ID = 1220, 459
T_FORWARD, T_SMOOTH = 2.0, 2.0
TARGET_WALL = 0.15


def best_of(n, run):
    best = np.inf
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def mechanics_ops():
    """(FD ops, ID ops) of the r3 mechanics, parameters folded."""
    fd = mb.compile(r3.MechanicalStructure(), parameters="constant")
    x = ca.SX.sym("x", fd.ode.size1_in(0))
    f_fd = ca.Function("fd", [x], [fd.ode(x, ca.SX(0, 1), ca.SX(0, 1), ca.SX(0, 1), 0)])
    inv = mb.compile(r3.MechanicalStructure(), parameters="constant", analysis="inverse")
    u = ca.SX.sym("u", inv.output_function.size1_in(2))
    y = inv.output_function(ca.SX(0, 1), ca.SX(0, 1), u, ca.SX(0, 1), 0)
    rows = [inv.output_index[f"r{k}.tau"] for k in range(1, 7)]
    f_id = ca.Function("id", [u], [ca.cse(y[rows])])
    return operation_counts(f_fd)["total"], operation_counts(f_id)["total"]


def tracking_error(res):
    return np.array([np.abs(res[f"planner.q[{k}]"] - res[f"mechanics.r{k + 1}.phi"]).max()
                     for k in range(6)])


def main():
    t0 = time.perf_counter()
    cm = mb.compile(r3.FullRobot())
    compile_forward = time.perf_counter() - t0
    events = len(cm.simulate(T_FORWARD, method="dop853").events)   # warm-up
    wall_symbolic = best_of(7, lambda: cm.simulate(T_FORWARD, method="dop853"))
    wall_adams = best_of(3, lambda: cm.simulate(T_FORWARD, method="adams"))
    wall_auto = best_of(3, lambda: cm.simulate(T_FORWARD))
    t0 = time.perf_counter()
    folded = mb.compile(r3.FullRobot(), parameters="constant")
    compile_folded = time.perf_counter() - t0
    folded.simulate(T_FORWARD, method="dop853")   # warm-up: the C build
    wall = best_of(7, lambda: folded.simulate(T_FORWARD, method="dop853"))

    t0 = time.perf_counter()
    cm_inv = mb.compile(r3.InverseRobot(reference="filtered"), analysis="inverse")
    compile_inverse = time.perf_counter() - t0
    inverse_wall = best_of(2, lambda: cm_inv.simulate(T_SMOOTH, n_points=4001))

    fd_ops, id_ops = mechanics_ops()

    ff, _, _ = r3.feedforward(T_SMOOTH, reference="filtered")
    runs = {}
    for name, signal in (("feedback", None), ("feed-forward", ff)):
        model = mb.compile(r3.FullRobot(reference="filtered", feedforward=signal))
        runs[name] = tracking_error(model.simulate(T_SMOOTH, n_points=2001, method="adams"))
    factors = runs["feedback"] / runs["feed-forward"]

    rows = [
        ("FullRobot compile", f"{compile_forward:.2f} s", "", ""),
        ("FullRobot compile, folded", f"{compile_folded:.2f} s", "", ""),
        ("FullRobot 2 s, DOP853, folded", f"{wall:.3f} s", f"<= {TARGET_WALL} s",
         "met" if wall <= TARGET_WALL else "NOT met"),
        ("FullRobot 2 s, DOP853", f"{wall_symbolic:.3f} s", f"<= {TARGET_WALL} s",
         "met" if wall_symbolic <= TARGET_WALL else "NOT met"),
        ("FullRobot 2 s, Adams", f"{wall_adams:.2f} s", "", ""),
        ("FullRobot 2 s, auto", f"{wall_auto:.2f} s", "", ""),
        ("events in the 2 s run", f"{events}", "", ""),
        ("InverseRobot compile", f"{compile_inverse:.2f} s", "", ""),
        ("InverseRobot 2 s run", f"{inverse_wall:.3f} s", "", ""),
        ("mechanics FD ops", f"{fd_ops}", f"<= {DYMOLA_FD}",
         "met" if fd_ops <= DYMOLA_FD else "NOT met"),
        ("mechanics ID ops", f"{id_ops}", f"<= {DYMOLA_ID}",
         "met" if id_ops <= DYMOLA_ID else "NOT met"),
    ]
    for k in range(6):
        rows.append((f"feed-forward factor, axis {k + 1}", f"{factors[k]:.1f}", ">= 10",
                     "met" if factors[k] >= 10 else "NOT met"))
    print(mb.format_table(("quantity", "measured", "target", ""), rows))
    print(json.dumps({
        "forward_2s_wall_s": wall, "forward_2s_wall_symbolic_parameters_s": wall_symbolic,
        "forward_2s_wall_adams_s": wall_adams,
        "forward_2s_wall_auto_s": wall_auto,
        "forward_compile_s": compile_forward, "forward_events": events,
        "inverse_wall_s": inverse_wall, "inverse_compile_s": compile_inverse,
        "r3_fd_ops": fd_ops, "r3_id_ops": id_ops,
        "feedforward_error_reduction": factors.tolist(),
        "feedforward_error_reduction_min": float(factors.min()),
    }))


if __name__ == "__main__":
    main()
