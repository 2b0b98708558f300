"""Compile-time scaling benchmark: how long mbmodel takes to build long component chains.

Two kinds of chain, N library components each, N = 10 ... 10 000:

* ``rot``: rotational inertia--spring chain ``torque -> I - S - I - S ... -> Fixed``
  (``rot.Inertia`` and ``rot.Spring`` alternating, a ``rot.ConstantTorque`` driving the
  first inertia, the last spring clamped by ``rot.Fixed``);
* ``rc``: RC ladder ``source -> R - C - R - C ...`` (``el.Resistor`` in series, every
  ``el.Capacitor`` shunting its node to ``el.Ground``, fed by ``el.ConstantVoltage``).

For each size it measures the instantiate time (``Model()``), the three pipeline stages of
``mb.compile`` (flatten / structure / casadi, from ``cm.build_times``), their total, the
equation counts (flat, after alias elimination/index reduction), the states, and one
evaluation of the ODE right-hand side. Sizes up to 1000 are built three times and the
fastest build is kept (timing noise on a shared machine is easily 30 %). It prints a table,
whether the targets are met (growth exponent <= 1.2 over the largest decade, the
10 000-component chain built in <= 60 s) and, as its last line, one JSON object.

Run::

    python benchmarks/compile_scaling.py            # N up to 10 000
    python benchmarks/compile_scaling.py --quick    # N up to 1 000 (smoke test)
    python benchmarks/compile_scaling.py --n-max 3000 --kinds rc
    python benchmarks/compile_scaling.py --profile 3000   # cProfile one size, then exit

Not a test: it is never collected by pytest.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import platform
import pstats
import sys
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import electrical as el
from mbmodel.libraries import rotational as rot

SIZES = (10, 30, 100, 300, 1000, 3000, 10000)
TARGET_EXPONENT = 1.2
TARGET_SECONDS = 60.0
TARGET_N = 10000


# --------------------------------------------------------------------------------------
# The chains
# --------------------------------------------------------------------------------------

class InertiaSpringChain(mb.Model):
    """``n`` components: inertias and springs alternating, starting with an inertia driven by
    a constant torque; the far end of the chain is clamped (``rot.Fixed``)."""

    torque = rot.ConstantTorque(tau_constant=1.0)
    fixed = rot.Fixed()

    def __init__(self, n: int, **modifiers):
        super().__init__(**modifiers)
        n_inertia = (n + 1) // 2
        n_spring = n // 2
        self.inertias = [rot.Inertia(J=1.0) for _ in range(n_inertia)]
        self.springs = [rot.Spring(c=1.0e3) for _ in range(n_spring)]

    def equations(self):
        chain = []
        for k, inertia in enumerate(self.inertias):
            chain.append(inertia)
            if k < len(self.springs):
                chain.append(self.springs[k])
        yield mb.connect(self.torque.flange, chain[0].flange_a)
        for left, right in zip(chain, chain[1:]):
            yield mb.connect(left.flange_b, right.flange_a)
        yield mb.connect(chain[-1].flange_b, self.fixed.flange)


class RCLadder(mb.Model):
    """``n`` components: series resistors and shunt capacitors alternating
    (``R0, C0, R1, C1, ...``), fed by a constant voltage source; every capacitor and the
    source return to one ground node."""

    source = el.ConstantVoltage(V=1.0)
    ground = el.Ground()

    def __init__(self, n: int, **modifiers):
        super().__init__(**modifiers)
        n_res = (n + 1) // 2
        n_cap = n // 2
        self.resistors = [el.Resistor(R=1.0) for _ in range(n_res)]
        self.capacitors = [el.Capacitor(C=1.0e-3) for _ in range(n_cap)]

    def equations(self):
        yield mb.connect(self.source.n, self.ground.p)
        yield mb.connect(self.source.p, self.resistors[0].p)
        for k, res in enumerate(self.resistors):
            if k < len(self.capacitors):
                cap = self.capacitors[k]
                yield mb.connect(res.n, cap.p)
                yield mb.connect(cap.n, self.ground.p)
                if k + 1 < len(self.resistors):
                    yield mb.connect(res.n, self.resistors[k + 1].p)
            # a trailing resistor (odd n) has an open n pin: its current is zero


KINDS = {
    "rot": ("inertia-spring chain", InertiaSpringChain),
    "rc": ("RC ladder", RCLadder),
}


# --------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------

def build(kind: str, n: int):
    """Instantiate and compile one chain; returns (compiled model, instantiate seconds)."""
    cls = KINDS[kind][1]
    t0 = time.perf_counter()
    model = cls(n)
    t1 = time.perf_counter()
    cm = mb.compile(model)
    return cm, t1 - t0


def measure(kind: str, n: int) -> dict:
    gc.collect()
    t0 = time.perf_counter()
    try:
        cm, t_inst = build(kind, n)
    except (Exception, RecursionError) as exc:  # a failed build is a result, not a crash
        gc.collect()
        return {"kind": kind, "n": n, "error": f"{type(exc).__name__}: {exc}"[:200],
                "seconds_to_failure": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    bt = cm.build_times
    row = {
        "kind": kind, "n": n,
        "flat_eqs": len(cm.flat.equations),
        "sys_eqs": len(cm.system.equations),
        "states": len(cm.states),
        "algebraic": len(cm.algebraic),
        "instantiate": t_inst,
        "flatten": bt.flatten,
        "structure": bt.structure,
        "casadi": bt.casadi,
        "compile": bt.total,
        "total": t_inst + bt.total,
        "wall": wall,
    }
    # One ODE right-hand-side evaluation (best of a few; not part of the build time).
    x = cm.start
    z = cm.z_start
    u = np.zeros(len(cm.inputs))
    p = cm.parameter_defaults
    best = math.inf
    for _ in range(5):
        t = time.perf_counter()
        cm.ode(x, z, u, p, 0.0)
        best = min(best, time.perf_counter() - t)
    row["rhs_eval"] = best
    del cm
    gc.collect()
    return row


def loglog_slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of log(t) over log(n)."""
    if len(points) < 2:
        return float("nan")
    lx = np.log([p[0] for p in points])
    ly = np.log([max(p[1], 1e-9) for p in points])
    return float(np.polyfit(lx, ly, 1)[0])


def sizes_for(n_max: int) -> list[int]:
    sizes = {s for s in SIZES if s <= n_max}
    sizes.add(n_max)
    if n_max >= 20:
        sizes.add(max(2, n_max // 10))
    return sorted(sizes)


HEADER = (f"{'kind':<4} {'N':>6} {'flat eq':>8} {'sys eq':>7} {'states':>6} "
          f"{'inst s':>8} {'flat s':>8} {'struct s':>8} {'casadi s':>8} {'compile s':>9} "
          f"{'total s':>8} {'us/comp':>8} {'rhs ms':>7}")


def format_row(r: dict) -> str:
    if "error" in r:
        return (f"{r['kind']:<4} {r['n']:>6}  FAILED after {r['seconds_to_failure']:.2f} s: "
                f"{r['error'][:90]}")
    return (f"{r['kind']:<4} {r['n']:>6} {r['flat_eqs']:>8} {r['sys_eqs']:>7} {r['states']:>6} "
            f"{r['instantiate']:>8.3f} {r['flatten']:>8.3f} {r['structure']:>8.3f} "
            f"{r['casadi']:>8.3f} {r['compile']:>9.3f} {r['total']:>8.3f} "
            f"{1e6 * r['total'] / r['n']:>8.0f} {1e3 * r['rhs_eval']:>7.3f}")


# --------------------------------------------------------------------------------------
# Profiling
# --------------------------------------------------------------------------------------

def profile(kind: str, n: int, top: int = 25) -> None:
    """cProfile one build (instantiate + compile); print the top functions by tottime and
    cumtime, restricted to mbmodel's own code and the libraries."""
    prof = cProfile.Profile()
    gc.collect()
    prof.enable()
    cm, _ = build(kind, n)
    prof.disable()
    print(f"\n=== cProfile: {KINDS[kind][0]} N={n}  (build_times: flatten "
          f"{cm.build_times.flatten:.2f} s, structure {cm.build_times.structure:.2f} s, "
          f"casadi {cm.build_times.casadi:.2f} s; profiler overhead included)")
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        st = pstats.Stats(prof, stream=buf)
        st.sort_stats(key).print_stats(top)
        print(f"--- top {top} by {key} (all code) ---")
        print(_trim_stats(buf.getvalue()))
        buf = io.StringIO()
        st = pstats.Stats(prof, stream=buf)
        st.sort_stats(key).print_stats(r"mbmodel|libraries", top)
        print(f"--- top {top} by {key} (mbmodel/ and libraries/) ---")
        print(_trim_stats(buf.getvalue()))


def _trim_stats(text: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("ncalls"):
            return "\n".join(lines[i:]).rstrip()
    return text.rstrip()


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N up to 1000 only (smoke test)")
    ap.add_argument("--n-max", type=int, default=None, help="largest chain (default 10000)")
    ap.add_argument("--kinds", default="rot,rc", help="comma-separated: rot, rc")
    ap.add_argument("--repeat", type=int, default=None, metavar="R",
                    help="builds per size, the fastest kept (default: 3 for N <= 1000, else 1)")
    ap.add_argument("--recursion-limit", type=int, default=None, metavar="L",
                    help="raise Python's recursion limit (diagnostics only; default: "
                         "Python's own, as users get it)")
    ap.add_argument("--profile", type=int, default=None, metavar="N",
                    help="cProfile the N-component build of each kind and exit")
    args = ap.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for k in kinds:
        if k not in KINDS:
            ap.error(f"unknown kind {k!r}; choose from {', '.join(KINDS)}")

    if args.recursion_limit:
        sys.setrecursionlimit(args.recursion_limit)
    if args.profile is not None:
        for kind in kinds:
            profile(kind, args.profile)
        return 0

    n_max = args.n_max or (1000 if args.quick else TARGET_N)
    sizes = sizes_for(n_max)

    # Warm up imports and casadi before timing anything.
    for kind in kinds:
        build(kind, 4)

    print(f"mbmodel compile scaling  (python {platform.python_version()}, "
          f"{platform.machine()}, sizes {sizes})")
    print(HEADER)
    print("-" * len(HEADER))
    rows = []
    for kind in kinds:
        for n in sizes:
            reps = args.repeat if args.repeat else (3 if n <= 1000 else 1)
            runs = [measure(kind, n) for _ in range(reps)]
            good = [r for r in runs if "error" not in r]
            r = min(good, key=lambda r: r["total"]) if good else runs[0]
            r["repeats"] = reps
            rows.append(r)
            print(format_row(r), flush=True)
        print()

    per_kind = {}
    lo = n_max / 10
    for kind in kinds:
        kr = [r for r in rows if r["kind"] == kind]
        decade = [r for r in kr if r["n"] >= lo - 1e-9]
        failed = [r for r in kr if "error" in r]
        ok = not any("error" in r for r in decade)
        at_max = next(r for r in kr if r["n"] == n_max)
        per_kind[kind] = {
            "name": KINDS[kind][0],
            # null when a build in the decade failed (a failure is not a speed).
            "growth_exponent": (round(loglog_slope([(r["n"], r["total"]) for r in decade]), 3)
                                if ok else None),
            "growth_exponent_compile_only": (round(loglog_slope(
                [(r["n"], r["compile"]) for r in decade]), 3) if ok else None),
            "seconds_at_n_max": (round(at_max["total"], 3) if "error" not in at_max else None),
            "failures": [{"n": r["n"], "error": r["error"]} for r in failed],
            "rows": [{k: (float(f"{v:.4g}") if isinstance(v, float) else v)
                      for k, v in r.items() if k != "kind"} for r in kr],
        }

    exps = [d["growth_exponent"] for d in per_kind.values()]
    secs = [d["seconds_at_n_max"] for d in per_kind.values()]
    worst_exp = None if None in exps else max(exps)
    worst_sec = None if None in secs else max(secs)
    exp_ok = worst_exp is not None and worst_exp <= TARGET_EXPONENT
    sec_ok = worst_sec is not None and worst_sec <= TARGET_SECONDS

    def show(x, fmt):
        return "FAILED" if x is None else format(x, fmt)

    print(f"growth exponent (log-log slope of instantiate+compile over N = {n_max // 10}.."
          f"{n_max}): " + ", ".join(f"{k} {show(d['growth_exponent'], '.3f')}"
                                    for k, d in per_kind.items())
          + f"; worst {show(worst_exp, '.3f')}")
    print(f"target exponent <= {TARGET_EXPONENT}: {'MET' if exp_ok else 'NOT MET'}")
    if n_max == TARGET_N:
        print(f"target {TARGET_N}-component chain in <= {TARGET_SECONDS:.0f} s: "
              f"{'MET' if sec_ok else 'NOT MET'} "
              + (f"(worst {worst_sec:.2f} s)" if worst_sec is not None else "(a build failed)"))
    else:
        print(f"target {TARGET_N}-component chain in <= {TARGET_SECONDS:.0f} s: not measured "
              f"(n_max = {n_max}; worst at n_max "
              + (f"{worst_sec:.2f} s)" if worst_sec is not None else "FAILED)"))
    for kind, d in per_kind.items():
        for f in d["failures"]:
            print(f"FAILED: {kind} N={f['n']}: {f['error']}")

    summary = {
        "benchmark": "compile_scaling",
        "n_max": n_max,
        "seconds_at_n_max": worst_sec,
        "growth_exponent": worst_exp,
        "decade": [n_max // 10, n_max],
        "all_built": not any(d["failures"] for d in per_kind.values()),
        "targets": {"growth_exponent_max": TARGET_EXPONENT, "seconds_max": TARGET_SECONDS,
                    "n": TARGET_N, "exponent_met": exp_ok,
                    "seconds_met": (sec_ok if n_max == TARGET_N else None)},
        "kinds": per_kind,
    }
    print(json.dumps(summary, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
