"""Multibody dynamics benchmark: size and speed of the generated forward (articulated-body)
and inverse (recursive Newton–Euler) dynamics, against Pinocchio in the same run.

Models: serial revolute chains of n = 3 ... 200 bodies (joint axes cycling z, y, x; every
link a BodyShape with offset (0, 0.3, 0.1) and its centre of mass half way), a random tree
of 100 bodies (revolute and prismatic joints, random axes, placements and inertias; the
test suite's generator), and the Manutec r3 mechanics (``examples/robot_r3.py``).

For each model it reports

* arithmetic operations (× and ÷, + and −) of the forward-dynamics ODE and of the inverse
  dynamics (joint forces only), compiled with ``parameters="constant"`` (parameter values
  folded in, as Dymola's generated code had them) and, beside it, with symbolic parameters;
* the build time (``mb.compile`` of the forward model);
* time per evaluated state of the forward and inverse dynamics in casadi's virtual machine
  and in gcc-compiled C (``mbmodel.codegen.compile_function``), evaluated over a batch of
  states with ``Function.map`` called through casadi's buffers, so no Python call overhead
  or conversion is counted. The compiled forward dynamics are the code a user gets from
  ``cm.evaluator()``: the flat function for small models, structure-preserving kernels
  (``mbmodel.kernels``, built at -O2) for large ones; and
  ``pinocchio.aba`` / ``pinocchio.rnea`` per state in a Python loop (their Python call
  overhead, ~1 µs, is included — it is what a Python user pays);
* the growth exponent: least-squares slope of log(FD ops) against log(n) for n ≥ 25, with
  the operations counted after merging common subexpressions at every size (``mb.compile``
  merges them only in right-hand sides below 20 000 nodes, which the chain passes between
  50 and 100 links: the exponent of the counts as compiled, also printed, measures that
  threshold as much as the formulation);
* the same chains with a drive train on every joint (motor inertia -> ideal gear -> axis
  flange, plus a bearing damper and a torque source): forward-dynamics operations, their
  growth exponent, and whether any algebraic loop was left (there should be none: the
  reflected inertia enters each joint's articulated step).

Targets (anchors to beat): chain FD ops ≤ 411 n − 669 (Rein 1993), growth exponent
≤ 1.05, Manutec r3 FD ≤ 1220 ops and ID ≤ 459 ops (Dymola 1993), compiled FD per state
≤ 0.5× Pinocchio's ABA and casadi VM ≤ 2×, build of the 100-body chain ≤ 5 s.

Run::

    python benchmarks/multibody_dynamics.py           # full (a few minutes)
    python benchmarks/multibody_dynamics.py --quick   # n ≤ 25, for a smoke test

The last line printed is one JSON object. Needs ``pin`` (the ``test`` extra).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
import warnings

import casadi as ca
import numpy as np

import mbmodel as mb
from mbmodel import native
from mbmodel.codegen import compile_function, operation_counts

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
# The test suite's model builders: the same mechanisms as mbmodel models and Pinocchio models.
import mb_trees  # noqa: E402
from mb_trees import DrivenChain, RevoluteChain, pinocchio_chain  # noqa: E402


def load_r3():
    path = os.path.join(ROOT, "examples", "robot_r3.py")
    spec = importlib.util.spec_from_file_location("robot_r3_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.R3Mechanics


# -- measurements ---------------------------------------------------------------------------

def joint_force_names(cm_inverse):
    return [n for n in cm_inverse.output_names if n.endswith(".tau") or n.endswith(".f")]


def inverse_function(cm):
    """Joint forces as a function of the prescribed motion inputs (parameters folded)."""
    u = ca.SX.sym("u", cm.output_function.size1_in(2))
    p = ca.SX.sym("p", cm.output_function.size1_in(3))
    y = cm.output_function(ca.SX(0, 1), ca.SX(0, 1), u, p, 0)
    idx = [cm.output_index[n] for n in joint_force_names(cm)]
    return ca.Function("inverse", [u, p], [ca.cse(y[idx])])


def forward_function(cm):
    x = ca.SX.sym("x", cm.ode.size1_in(0))
    p = ca.SX.sym("p", cm.ode.size1_in(3))
    return ca.Function("forward", [x, p], [cm.ode(x, ca.SX(0, 1), ca.SX(0, 1), p, 0)])


def ops(fn) -> int:
    return operation_counts(fn)["total"]


def merged_ops(fn) -> int:
    """Operations of ``fn`` with its common subexpressions merged (``casadi.cse``), as
    ``mb.compile`` merges them in right-hand sides below ``compiler.CSE_NODES`` nodes
    only: counted this way at every size, the growth exponent measures the formulation,
    not where that threshold falls (between 50 and 100 links of the chain)."""
    symbols = fn.sx_in()
    return ops(ca.Function("merged", symbols, [ca.cse(out) for out in fn.call(symbols)]))


def batch_inputs(fn, batch, first=None):
    """Inputs of ``fn.map(batch)`` as flat arrays: random states (normal, seed 0) for the
    first input (``first``: its size per state, if not ``fn``'s), zeros for the others."""
    rng = np.random.default_rng(0)
    inputs = []
    for k in range(fn.n_in()):
        size = fn.nnz_in(k)
        inputs.append(rng.normal(size=size * batch) if k == 0 else np.zeros(size * batch))
    return inputs


def buffered_per_state(mapped, inputs, batch, repeat=5):
    """Seconds per state of ``mapped`` (a ``Function.map`` over ``batch`` states), called
    through casadi's buffers: the arrays are bound once, so neither Python nor a numpy ->
    DM conversion is timed (converting the batch's inputs cost ~3 µs per state of a
    6-link chain, several times the generated code's own time)."""
    buffer, evaluate = mapped.buffer()
    for k, array in enumerate(inputs):
        buffer.set_arg(k, memoryview(array))
    outputs = [np.zeros(mapped.nnz_out(k)) for k in range(mapped.n_out())]
    for k, array in enumerate(outputs):
        buffer.set_res(k, memoryview(array))
    evaluate()
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        evaluate()
        best = min(best, time.perf_counter() - t)
    return best / batch, outputs


def per_state_seconds(fn, batch):
    """casadi's virtual machine, per state of a batch."""
    return buffered_per_state(fn.map(batch), batch_inputs(fn, batch), batch)[0]


def compiled_per_state(fn, batch, optimize=1):
    """gcc-compiled C (-O``optimize`` and the host's FMA flags), per state of a batch."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c_fn = compile_function(fn.map(batch), optimize=optimize)
    return buffered_per_state(c_fn, batch_inputs(fn, batch), batch)[0]


def forward_c_per_state(cm, batch):
    """The forward dynamics a user gets in C (``cm.evaluator()``: one flat function, or
    for a large model structure-preserving kernels; built with the optimization
    :mod:`mbmodel.native` uses), per state of a batch: ``(seconds, kind)``."""
    fn = cm.evaluator().symbolic
    kernels = fn.is_a("MXFunction")
    optimize = 2 if kernels or native._fast_flat(cm, False) else 1  # as native builds it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c_fn = compile_function(fn.map(batch), optimize=optimize)
    inputs = batch_inputs(fn, batch)
    inputs[2] = np.tile(cm.parameter_vector(), batch)  # (x, u, p, t): the parameters
    seconds, _ = buffered_per_state(c_fn, inputs, batch)
    return seconds, "kernels" if kernels else "flat"


def pinocchio_per_state(pmodel, which, count):
    import pinocchio as pin
    data = pmodel.createData()
    rng = np.random.default_rng(0)
    qs = [pin.randomConfiguration(pmodel, -np.ones(pmodel.nq), np.ones(pmodel.nq))
          for _ in range(16)]
    v, a = rng.normal(size=pmodel.nv), rng.normal(size=pmodel.nv)
    fn = (lambda q: pin.aba(pmodel, data, q, v, a)) if which == "aba" else \
        (lambda q: pin.rnea(pmodel, data, q, v, a))
    best = math.inf
    for _ in range(5):
        t = time.perf_counter()
        for k in range(count):
            fn(qs[k % 16])
        best = min(best, time.perf_counter() - t)
    return best / count


def measure(name, make_model, n_bodies, pmodel, batch):
    t = time.perf_counter()
    fd = mb.compile(make_model(), parameters="constant")
    build = time.perf_counter() - t
    fd_sym = mb.compile(make_model())
    inv = mb.compile(make_model(), parameters="constant", analysis="inverse")
    inv_sym = mb.compile(make_model(), analysis="inverse")
    f_fd, f_id = forward_function(fd), inverse_function(inv)
    row = dict(model=name, n=n_bodies, fd_ops=ops(f_fd), fd_ops_merged=merged_ops(f_fd),
               fd_ops_symbolic=ops(forward_function(fd_sym)),
               id_ops=ops(f_id), id_ops_symbolic=ops(inverse_function(inv_sym)),
               build_seconds=build)
    if pmodel is not None:
        row["fd_vm_us"] = 1e6 * per_state_seconds(f_fd, batch)
        seconds, row["fd_c_code"] = forward_c_per_state(fd, batch)
        row["fd_c_us"] = 1e6 * seconds
        row["id_vm_us"] = 1e6 * per_state_seconds(f_id, batch)
        row["id_c_us"] = 1e6 * compiled_per_state(f_id, batch)
        row["aba_us"] = 1e6 * pinocchio_per_state(pmodel, "aba", 2000)
        row["rnea_us"] = 1e6 * pinocchio_per_state(pmodel, "rnea", 2000)
    return row


def measure_driven(n):
    t = time.perf_counter()
    fd = mb.compile(DrivenChain(n, losses=True), parameters="constant")
    build = time.perf_counter() - t
    loops = sum(1 for b in fd.system.blocks if b.kind != "explicit")
    f_fd = forward_function(fd)
    return dict(model="geared", n=n, fd_ops=ops(f_fd), fd_ops_merged=merged_ops(f_fd),
                build_seconds=build, algebraic_loops=loops)


def growth_exponent(rows, key="fd_ops_merged"):
    pts = [(math.log(r["n"]), math.log(r[key])) for r in rows if r["n"] >= 25]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n <= 25 only, no 100-body tree")
    args = ap.parse_args(argv)
    sizes = [3, 6, 12, 25] if args.quick else [3, 6, 12, 25, 50, 100, 200]
    rows = []
    for n in sizes:
        batch = max(200, 20000 // n)
        rows.append(measure("chain", lambda n=n: RevoluteChain(n), n, pinocchio_chain(n), batch))
        print_row(rows[-1])
    driven = [measure_driven(n) for n in sizes if n <= 100]
    print()
    print(f"{'model':6s} {'n':>4s} {'FD ops':>8s} {'merged':>8s} {'ops/n':>7s} {'loops':>6s} "
          f"{'build s':>8s}")
    for r in driven:
        print(f"{r['model']:6s} {r['n']:4d} {r['fd_ops']:8d} {r['fd_ops_merged']:8d} "
              f"{r['fd_ops'] / r['n']:7.0f} {r['algebraic_loops']:6d} "
              f"{r['build_seconds']:8.2f}", flush=True)
    print()
    tree_row = None
    if not args.quick:
        trees = mb_trees
        spec = trees.random_tree(100, np.random.default_rng(100))
        tree_row = measure("tree", lambda: trees.TreeModel(spec), 100,
                           trees.pinocchio_model(spec), 200)
        print_row(tree_row)
    R3 = load_r3()
    r3_row = measure("r3", R3, 6, None, 0)
    print_row(r3_row)
    by_n = {r["n"]: r for r in rows}
    exponent = growth_exponent(rows)
    summary = {
        "fd_ops": {str(r["n"]): r["fd_ops"] for r in rows},
        "fd_ops_symbolic": {str(r["n"]): r["fd_ops_symbolic"] for r in rows},
        "id_ops": {str(r["n"]): r["id_ops"] for r in rows},
        "rein_bound": {str(r["n"]): 411 * r["n"] - 669 for r in rows},
        "growth_exponent": exponent,
        "growth_exponent_as_compiled": growth_exponent(rows, "fd_ops"),
        "r3_fd_ops": r3_row["fd_ops"], "r3_id_ops": r3_row["id_ops"],
        "r3_fd_ops_symbolic": r3_row["fd_ops_symbolic"],
        "r3_id_ops_symbolic": r3_row["id_ops_symbolic"],
        "fd_c_over_pinocchio": {str(n): by_n[n]["fd_c_us"] / by_n[n]["aba_us"]
                                for n in (6, 100) if n in by_n},
        "fd_vm_over_pinocchio": {str(n): by_n[n]["fd_vm_us"] / by_n[n]["aba_us"]
                                 for n in (6, 100) if n in by_n},
        "id_c_over_pinocchio": {str(n): by_n[n]["id_c_us"] / by_n[n]["rnea_us"]
                                for n in (6, 100) if n in by_n},
        "build_seconds_n100": by_n[100]["build_seconds"] if 100 in by_n else None,
        "geared_fd_ops": {str(r["n"]): r["fd_ops"] for r in driven},
        "geared_growth_exponent": growth_exponent(driven),
        "geared_algebraic_loops": sum(r["algebraic_loops"] for r in driven),
        "tree100": tree_row,
        "rows": rows,
    }
    checks = {
        "chain_fd_ops_le_rein": all(r["fd_ops"] <= 411 * r["n"] - 669 for r in rows),
        "growth_exponent_le_1.05": exponent is not None and exponent <= 1.05,
        "r3_fd_ops_le_1220": r3_row["fd_ops"] <= 1220,
        "r3_id_ops_le_459": r3_row["id_ops"] <= 459,
        "fd_c_le_0.5_pinocchio": all(v <= 0.5 for v in summary["fd_c_over_pinocchio"].values()),
        "fd_vm_le_2_pinocchio": all(v <= 2.0 for v in summary["fd_vm_over_pinocchio"].values()),
        "build_n100_le_5s": summary["build_seconds_n100"] is not None
        and summary["build_seconds_n100"] <= 5.0,
        "geared_no_algebraic_loops": summary["geared_algebraic_loops"] == 0,
    }
    summary["targets"] = checks
    print(f"\ngrowth exponent of the FD ops (n >= 25): {exponent} with common subexpressions "
          f"merged at every size, {summary['growth_exponent_as_compiled']} as compiled")
    print()
    for k, v in checks.items():
        print(f"  {k:28s} {'met' if v else 'NOT met'}")
    print(json.dumps(summary))


HEADER_PRINTED = False


def print_row(r):
    global HEADER_PRINTED
    if not HEADER_PRINTED:
        print(f"{'model':6s} {'n':>4s} {'FD ops':>8s} {'merged':>8s} {'(sym)':>8s} "
              f"{'411n-669':>9s} {'ID ops':>7s} {'(sym)':>7s} {'build s':>8s} {'FD VM µs':>9s} {'FD C µs':>8s} "
              f"{'ABA µs':>7s} {'ID VM µs':>9s} {'ID C µs':>8s} {'RNEA µs':>8s}")
        HEADER_PRINTED = True
    def f(key, fmt):
        return format(r[key], fmt) if key in r else "-"
    print(f"{r['model']:6s} {r['n']:4d} {r['fd_ops']:8d} {r['fd_ops_merged']:8d} "
          f"{r['fd_ops_symbolic']:8d} "
          f"{411 * r['n'] - 669:9d} {r['id_ops']:7d} {r['id_ops_symbolic']:7d} "
          f"{r['build_seconds']:8.2f} {f('fd_vm_us', '9.2f'):>9s} {f('fd_c_us', '8.2f'):>8s} "
          f"{f('aba_us', '7.2f'):>7s} {f('id_vm_us', '9.2f'):>9s} {f('id_c_us', '8.2f'):>8s} "
          f"{f('rnea_us', '8.2f'):>8s}", flush=True)


if __name__ == "__main__":
    main()
