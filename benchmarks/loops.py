"""Kinematic loop benchmark: a chain of n links with one four-bar at its tip.

Model: ``tests/loop_mechanisms.FourbarOnChain(n)`` — the benchmark chain of
``benchmarks/multibody_dynamics.py`` (revolute joints with axes cycling z, y, x) with the
crank-rocker four-bar of the loop tests mounted on its last link: n + 4 joints, one planar
loop, n + 1 degrees of freedom.

For each n it reports, compiled with ``parameters="constant"``:

* forward-dynamics operations (× ÷ + −) of the ODE right-hand side (states and the loop's
  dependent coordinates in, state derivatives out) and of the loop's position residual (what
  the DAE solver iterates on), per link, beside the same chain without the four-bar;
* the largest torn block (the loop's constraint forces and the massless joint's
  acceleration: it must not grow with n);
* the build time, and the wall time of a 1 s simulation (IDAS, rtol = atol = 1e-8).

Target: growth exponent of the operations (least-squares slope of log ops against log n for
n ≥ 25) ≤ 1.05.

Run::

    python benchmarks/loops.py            # n up to 100 (about a minute)
    python benchmarks/loops.py --quick    # n ≤ 25

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import casadi as ca

import mbmodel as mb
from mbmodel.codegen import operation_counts

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from loop_mechanisms import FourbarOnChain  # noqa: E402
from mb_trees import RevoluteChain  # noqa: E402
from multibody_dynamics import growth_exponent  # noqa: E402  (log-log slope of fd_ops, n >= 25)


def forward_ops(cm) -> int:
    """Operations of the ODE right-hand side and the algebraic residual, parameters folded."""
    sym = cm.symbols
    total = 0
    for fn in (cm.ode, cm.alg):
        out = fn(sym.x, sym.z, sym.u, sym.p, sym.t)
        f = ca.Function("f", [sym.x, sym.z, sym.u, sym.p, sym.t], [ca.cse(out)])
        total += operation_counts(f)["total"]
    return total


def measure(n, simulate=True):
    t = time.perf_counter()
    cm = mb.compile(FourbarOnChain(n), parameters="constant")
    build = time.perf_counter() - t
    chain = mb.compile(RevoluteChain(n), parameters="constant")
    row = dict(n=n, fd_ops=forward_ops(cm), chain_ops=forward_ops(chain), build_seconds=build,
               largest_block=max((len(b.tear_vars) for b in cm.system.blocks
                                  if b.kind != "explicit"), default=0))
    if simulate:
        t = time.perf_counter()
        mb.simulate(cm, t_end=1.0, rtol=1e-8, atol=1e-8)
        row["simulate_1s_seconds"] = time.perf_counter() - t
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n <= 25 only")
    args = ap.parse_args(argv)
    sizes = [3, 6, 12, 25] if args.quick else [3, 6, 12, 25, 50, 100]
    print(f"{'n':>4s} {'FD ops':>8s} {'ops/n':>7s} {'chain ops':>10s} {'loop adds':>10s} "
          f"{'block':>6s} {'build s':>8s} {'sim 1 s':>8s}")
    rows = []
    for n in sizes:
        r = measure(n, simulate=n <= 50)
        rows.append(r)
        sim = r.get("simulate_1s_seconds")
        print(f"{n:4d} {r['fd_ops']:8d} {r['fd_ops'] / n:7.0f} {r['chain_ops']:10d} "
              f"{r['fd_ops'] - r['chain_ops']:10d} {r['largest_block']:6d} "
              f"{r['build_seconds']:8.2f} {'' if sim is None else f'{sim:8.2f}'}", flush=True)
    exponent = growth_exponent(rows, key="fd_ops")
    checks = {
        "growth_exponent_le_1.05": None if exponent is None else exponent <= 1.05,
        "loop_block_constant": len({r["largest_block"] for r in rows}) == 1,
    }
    print()
    print(f"growth exponent (n >= 25): {exponent if exponent is None else round(exponent, 3)}")
    for k, v in checks.items():
        print(f"  {k:26s} {'not measured (n >= 25 twice)' if v is None else 'met' if v else 'NOT met'}")
    print(json.dumps({"rows": rows, "growth_exponent": exponent, "targets": checks}))


if __name__ == "__main__":
    main()
