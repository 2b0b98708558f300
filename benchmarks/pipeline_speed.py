"""From model to answer: build cost, forward-dynamics calls and simulation, against
Pinocchio (+ scipy) measured in the same run.

Models: random serial chains with general joint axes, one ``mbl.FixedRotation`` (random
placement) + ``mbl.Revolute`` (random axis) + ``mbl.Body`` (random mass, centre of mass and
inertia) per link — the test suite's generator (``tests/mb_trees.py``), with the same data
as a Pinocchio model. All mbmodel models are compiled with ``parameters="constant"``.

Measured:

* ``build_ms_per_link``: ``Model()`` + ``mb.compile`` per link at n = 10, 100, 1000, 10 000,
  each size in a fresh process (so its peak RSS is its own). A size is skipped (``null``,
  reason in the table) when the previous size's time, extrapolated with the growth measured
  between the two sizes before (a quarter added), exceeds the time budget (``--build-budget``, default 300 s) or its memory exceeds what is
  free. ``peak_rss_mb_per_link``: peak RSS over n of the largest size built.
  ``largest_chain_built_60s``: the largest n whose build took ≤ 60 s, among the sizes
  above and up to three more searched between the two that bracket 60 s (their growth
  predicts the size; ``chains_built_searching_60s`` lists those built).
* ``api_fd_over_pinocchio``: one Python call of mbmodel's fast forward-dynamics path
  (``cm.evaluator()``: generated C through casadi's buffer interface) over one
  ``pin.aba`` call, n = 6 and 100.
* ``c_fd_over_pinocchio``: generated C per state, batched: the dynamics' library that
  simulation runs (``mbmodel.native.dynamics``; for large models the kernels called in a
  loop, :mod:`mbmodel.schedule`) in ``Function.map`` over 1000 states (no Python per
  state), over ``pin.aba`` per state, n = 6 and 100.
* ``sim_over_scipy_pinocchio``: wall time of the first ``cm.simulate(1.0)`` of a freshly
  compiled model (the chain hanging under gravity from rest; default options, rtol 1e-8 /
  atol 1e-10; including initialization and integrator set-up; not ``mb.compile`` nor the
  C build, ``mbmodel.native.dynamics(cm)``, timed separately: C source generation, library
  from the disk cache; the table of all variables is computed when first read) over scipy's
  ``solve_ivp(DOP853)`` with ``pin.aba`` as right-hand side at the same tolerances,
  n = 25 and 100: the best of three rounds, each a fresh compile and a scipy run. The
  final states of both are compared (printed).
* ``chain_100k_fd_ms``: one forward-dynamics evaluation of a 100 000-DOF chain, or
  ``null`` with the reason.
* ``result_read_s`` (no target): reading the result of ``simulate(1.0)``, n = 25 and 100:
  ``one``, a variable that is not a state (the middle body's position), computed alone on
  its first read; ``table``, every variable at every output time (``res.values``), in
  casadi's virtual machine; ``table_c``, the same with the outputs' generated C
  (``simulate(native=True)``), after ``c_build``, the seconds ``mbmodel.native.outputs(cm)``
  took to build it (kernels and C compiler, or their disk cache).
* ``first_c_seconds`` (no target): what a first run waits for after the build, with an
  empty disk cache, at n = 10, 100 and 1000, in the build's process: ``source_s``, the code
  the C is generated from (``mbmodel.native.code_source``: for large models the kernels of
  :mod:`mbmodel.kernels` and their cache key), and ``gcc_s``, C source, compiler and
  loading (``mbmodel.native.dynamics``).

Targets (issue 8): build ≤ 10 ms per link at n = 1000 and 10 000; ≤ 2 MB RSS per link; a
10 000-link chain built in ≤ 60 s; api ≤ 2 (n = 6) and ≤ 1.5 (n = 100); C ≤ 0.5; simulate
≤ 1.0 × scipy + Pinocchio at n = 25 and 100.

Run::

    python benchmarks/pipeline_speed.py            # full
    python benchmarks/pipeline_speed.py --quick    # small sizes only (smoke test)

Not a test. Needs ``pin`` (the ``test`` extra). Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import mbmodel as mb  # noqa: E402
from mbmodel import native  # noqa: E402
from mb_trees import TreeModel, pinocchio_model, random_tree  # noqa: E402

BUILD_SIZES = (10, 100, 1000, 10000)
TARGETS = {"build_ms_per_link": 10.0, "peak_rss_mb_per_link": 2.0, "api_fd_n6": 2.0,
           "api_fd_n100": 1.5, "c_fd": 0.5, "sim": 1.0, "chain_10000_s": 60.0}


def chain_spec(n, seed=0):
    spec = random_tree(n, np.random.default_rng(seed), chain=True)
    for s in spec:
        s["kind"] = "revolute"
    return spec


def pinocchio(spec):
    import pinocchio as pin
    model = pinocchio_model(spec)
    model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81, 0.0, 0.0, 0.0]))
    return pin, model, model.createData()


def best_time(fn, repeat=5, number=None):
    """Seconds per call of ``fn``: best of ``repeat`` batches of ``number`` calls."""
    if number is None:
        number, t = 1, 0.0
        while t < 0.02:
            number *= 2
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            t = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


# -- build (one size per process) -----------------------------------------------------------

#: Sizes whose first C answer is timed as well (see build_one).
FIRST_C_SIZES = (10, 100, 1000)


def build_one(n):
    t0 = time.perf_counter()
    cm = mb.compile(TreeModel(chain_spec(n)), parameters="constant")
    seconds = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    row = {"n": n, "seconds": seconds, "rss_mb": rss_mb, "states": len(cm.states),
           "times": vars(cm.build_times)}
    if n in FIRST_C_SIZES:
        # What a first run waits for after the build, with an empty disk cache: the code
        # the C is generated from (for large models the kernels, and their cache key), then
        # C source, gcc and loading.
        with tempfile.TemporaryDirectory(prefix="pipeline_speed_cache_") as cache:
            os.environ["MBMODEL_CACHE"] = cache
            t0 = time.perf_counter()
            native.code_source(cm)
            t1 = time.perf_counter()
            native.dynamics(cm, True)
            row["first_c"] = {"source_s": t1 - t0, "gcc_s": time.perf_counter() - t1}
    print(json.dumps(row))


def free_memory_mb():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return np.inf


def measure_builds(sizes, budget):
    """Builds at each size in a process of its own; a size is skipped if its time, predicted
    from the sizes before it, exceeds ``budget`` (or its memory the free memory). The
    prediction grows by the exponent measured between the last two sizes (at least 1), with
    a quarter more for the growth seen beyond them; from one size, by an exponent of 1.3."""
    rows, last, previous = {}, None, None
    for n in sizes:
        if last is not None:
            n0, s0, r0 = last
            growth, margin = 1.3, 1.0  # superlinear until shown otherwise
            if previous is not None and s0 > previous[1] > 0:
                growth = max(1.0, math.log(s0 / previous[1]) / math.log(n0 / previous[0]))
                margin = 1.25
            predicted_s = margin * s0 * (n / n0) ** growth
            predicted_mb = r0 * n / n0
            if predicted_s > budget:
                rows[n] = {"skipped": f"predicted {predicted_s:.0f} s > budget {budget:.0f} s",
                           "predicted_s": predicted_s}
                continue
            if predicted_mb > 0.8 * free_memory_mb():
                rows[n] = {"skipped": f"predicted {predicted_mb:.0f} MB > free memory"}
                continue
        try:
            proc = subprocess.run([sys.executable, __file__, "--build-one", str(n)],
                                  capture_output=True, text=True, timeout=2 * budget + 60)
        except subprocess.TimeoutExpired:
            rows[n] = {"skipped": f"build took longer than {2 * budget + 60:.0f} s"}
            continue
        if proc.returncode != 0:
            rows[n] = {"skipped": "build failed: " + proc.stderr.strip().splitlines()[-1]}
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows[n] = row
        previous, last = last, (n, row["seconds"], row["rss_mb"])
    return rows


def probe_60s(builds, limit=60.0, budget=300.0):
    """The largest chain built within ``limit`` seconds, searched between the sizes of
    ``builds`` that bracket it: the size the two predict (their growth exponent), 5 %
    under it, built; while one took longer (at most three builds), a size scaled down by
    the overshoot and 7 % more.
    Returns the rows built (n -> row, as :func:`measure_builds`)."""
    # seconds per size: measured, or predicted where a size was skipped for the budget
    seconds = {n: r.get("seconds", r.get("predicted_s")) for n, r in builds.items()}
    seconds = {n: s for n, s in seconds.items() if s is not None}
    within = [n for n, s in seconds.items() if s <= limit and "skipped" not in builds[n]]
    beyond = [n for n, s in seconds.items() if s > limit]
    if not within or not beyond or min(beyond) < max(within):
        return {}
    lo, hi = max(within), min(beyond)
    s_lo, s_hi = seconds[lo], seconds[hi]
    growth = max(1.0, math.log(s_hi / s_lo) / math.log(hi / lo))

    def rounded(n):  # two significant digits, down
        step = 10 ** max(0, int(math.log10(max(n, 1))) - 1)
        return int(n) // step * step
    n = rounded(0.95 * lo * (limit / s_lo) ** (1.0 / growth))
    rows = {}
    for _ in range(3):
        if n <= lo or n >= hi or n in builds or n in rows:
            break
        found = measure_builds((n,), budget)[n]
        rows[n] = found
        if "skipped" in found or found["seconds"] <= limit:
            break
        # down by the overshoot and a margin for the noise of one build (a few per cent)
        n = rounded(n * (limit / found["seconds"]) ** (1.0 / growth) * 0.93)
    return rows


# -- forward dynamics calls -----------------------------------------------------------------

def fd_ratios(n, rng):
    spec = chain_spec(n)
    cm = mb.compile(TreeModel(spec), parameters="constant")
    pin, model, data = pinocchio(spec)
    fd = cm.evaluator()
    q, v = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    x = np.empty(2 * n)
    x[0::2], x[1::2] = q, v  # states are joint{i}.phi, joint{i}.w in chain order
    assert cm.states[:2] == ["joint0.phi", "joint0.w"]
    tau = np.zeros(n)
    ref = pin.aba(model, data, q, v, tau)
    error = float(np.max(np.abs(fd(x)[1::2] - ref)))
    t_api = best_time(lambda: fd(x))
    t_pin = best_time(lambda: pin.aba(model, data, q, v, tau))
    batch = 1000
    # The model's dynamics as simulation runs them (the library native.dynamics builds: for
    # large models the kernels called in a loop, mbmodel.schedule), over a batch of states
    # in casadi's Map, called through its buffers: no Python or conversion per state.
    mapped = native.dynamics(cm).map(batch)
    inputs = [np.zeros(batch), np.tile(x, batch), np.zeros(0),
              np.tile(cm.parameter_vector(), batch), np.zeros(0)]
    out = np.zeros(mapped.nnz_out(0))
    buffer, evaluate = mapped.buffer()
    for k, arr in enumerate(inputs):
        buffer.set_arg(k, memoryview(arr))
    buffer.set_res(0, memoryview(out))
    t_c = best_time(evaluate, repeat=5, number=20) / batch
    assert np.allclose(out[:2 * n], fd(x))
    return {"n": n, "api_us": t_api * 1e6, "pin_us": t_pin * 1e6, "c_us": t_c * 1e6,
            "error": error}


# -- simulation -----------------------------------------------------------------------------

def sim_ratio(n, repeat=3):
    """Best of ``repeat`` rounds, each: a fresh compile, then (timed) its first
    simulate(1.0), and scipy's run; one sample each is at the machine's mercy."""
    from scipy.integrate import solve_ivp
    spec = chain_spec(n)
    pin, model, data = pinocchio(spec)
    tau = np.zeros(n)

    def rhs(t, y):
        return np.concatenate([y[n:], pin.aba(model, data, y[:n], y[n:], tau)])

    t_mb = t_again = t_native = t_ref = np.inf
    res = None
    for _ in range(repeat):
        # The previous round's result holds its model: freed here, not inside the timed run
        # below (freeing a compiled model of 25 links takes ~20 ms, 4x a first run).
        res = None
        cm = mb.compile(TreeModel(spec), parameters="constant")
        t0 = time.perf_counter()
        native.dynamics(cm)  # C source, library built (or found in the disk cache), loaded
        t_native = min(t_native, time.perf_counter() - t0)
        t0 = time.perf_counter()
        res = cm.simulate(1.0)  # initialization, integrator set-up, integration, result
        t_mb = min(t_mb, time.perf_counter() - t0)
        t0 = time.perf_counter()
        cm.simulate(1.0)
        t_again = min(t_again, time.perf_counter() - t0)
        t0 = time.perf_counter()
        sol = solve_ivp(rhs, (0.0, 1.0), np.zeros(2 * n), method="DOP853", rtol=1e-8,
                        atol=1e-10)
        t_ref = min(t_ref, time.perf_counter() - t0)
    q_mb = np.array([res[f"joint{i}.phi"][-1] for i in range(n)])
    # Reading the result: a variable that is not a state (the middle body's position),
    # computed alone on its first read, and the table of every variable at every time
    middle = f"body{n // 2}.frame_a.r_0[0]"
    t_one = t_table = np.inf
    for _ in range(repeat):
        fresh = cm.simulate(1.0)
        t0 = time.perf_counter()
        fresh[middle]  # noqa: B018 - computed on this read
        t_one = min(t_one, time.perf_counter() - t0)
        fresh = cm.simulate(1.0)
        t0 = time.perf_counter()
        fresh.values  # noqa: B018 - the table, computed on this read
        t_table = min(t_table, time.perf_counter() - t0)
    t0 = time.perf_counter()
    native.outputs(cm)  # the outputs' kernels and C (or the disk cache's)
    t_c_build = time.perf_counter() - t0
    t_table_c = np.inf
    for _ in range(repeat):
        fresh = cm.simulate(1.0, native=True)
        t0 = time.perf_counter()
        fresh.values  # noqa: B018 - the table, computed in C on this read
        t_table_c = min(t_table_c, time.perf_counter() - t0)
    return {"n": n, "mb_s": t_mb, "mb_again_s": t_again, "native_s": t_native,
            "method": "+".join(res.methods), "scipy_pin_s": t_ref,
            "q_difference": float(np.max(np.abs(q_mb - sol.y[:n, -1]))),
            "read_one_s": t_one, "read_table_s": t_table, "variables": len(res.names),
            "read_table_c_s": t_table_c, "outputs_c_build_s": t_c_build}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--build-budget", type=float, default=300.0,
                        help="seconds a single build may be predicted to take")
    parser.add_argument("--build-one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_one:
        build_one(args.build_one)
        return
    rng = np.random.default_rng(1)
    sizes = (10, 100) if args.quick else BUILD_SIZES
    builds = measure_builds(sizes, args.build_budget)
    probes = {} if args.quick else probe_60s(builds, budget=args.build_budget)
    fds = [fd_ratios(n, rng) for n in (6, 100)]
    sims = [sim_ratio(n) for n in ((6, 25) if args.quick else (25, 100))]

    print("\nBuild (Model() + mb.compile, parameters='constant'), one process per size;")
    print("then the first C answer with an empty disk cache (n <= 1000): the code C is "
          "generated from (kernels\nfor large models), and C source + gcc + loading")
    print(f"{'n':>7} {'seconds':>9} {'ms/link':>9} {'peak RSS MB':>12} {'MB/link':>8} "
          f"{'C from s':>9} {'gcc s':>7}  note")
    for n, row in builds.items():
        if "skipped" in row:
            print(f"{n:>7} {'-':>9} {'-':>9} {'-':>12} {'-':>8} {'-':>9} {'-':>7}  "
                  f"skipped: {row['skipped']}")
        else:
            first = row.get("first_c")
            c_from, gcc = ((f"{first['source_s']:9.2f}", f"{first['gcc_s']:7.1f}") if first
                           else (f"{'-':>9}", f"{'-':>7}"))
            print(f"{n:>7} {row['seconds']:9.2f} {1e3 * row['seconds'] / n:9.1f} "
                  f"{row['rss_mb']:12.0f} {row['rss_mb'] / n:8.2f} {c_from} {gcc}")
    print("\nForward dynamics per call (general-axis chain)")
    print(f"{'n':>5} {'evaluator µs':>13} {'C batched µs':>13} {'pin.aba µs':>11} "
          f"{'api/pin':>8} {'C/pin':>6} {'max |qdd - pin|':>16}")
    for r in fds:
        print(f"{r['n']:>5} {r['api_us']:13.2f} {r['c_us']:13.2f} {r['pin_us']:11.2f} "
              f"{r['api_us'] / r['pin_us']:8.2f} {r['c_us'] / r['pin_us']:6.2f} "
              f"{r['error']:16.2e}")
    print("\nsimulate(1.0) vs scipy DOP853 + pin.aba (rtol 1e-8, atol 1e-10)")
    print("(C: generate the dynamics' C source, find its library in the disk cache, load it "
          "— once per compiled model;\n mbmodel: the first simulate(1.0) after that; again: a "
          "second one, solvers already set up)")
    print(f"{'n':>5} {'C s':>7} {'method':>7} {'mbmodel s':>10} {'again s':>8} "
          f"{'scipy+pin s':>12} {'ratio':>6} {'max |q - q_ref|':>16}")
    for r in sims:
        print(f"{r['n']:>5} {r['native_s']:7.3f} {r['method']:>7} {r['mb_s']:10.4f} "
              f"{r['mb_again_s']:8.4f} {r['scipy_pin_s']:12.4f} "
              f"{r['mb_s'] / r['scipy_pin_s']:6.2f} {r['q_difference']:16.2e}")
    print("\nReading a result: one variable that is not a state, computed alone on its "
          "first read, and the table of every variable, in casadi's virtual machine; the "
          "table in the outputs' C, after building it (native.outputs)")
    print(f"{'n':>5} {'variables':>10} {'one s':>8} {'table s':>8} {'C build s':>10} "
          f"{'table C s':>10}")
    for r in sims:
        print(f"{r['n']:>5} {r['variables']:>10} {r['read_one_s']:8.4f} {r['read_table_s']:8.3f} "
              f"{r['outputs_c_build_s']:10.2f} {r['read_table_c_s']:10.4f}")

    if probes:
        print("\nLargest chain built in 60 s, searched between the sizes above:")
        for n, row in probes.items():
            print(f"{n:>7} " + (f"skipped: {row['skipped']}" if "skipped" in row else
                                f"{row['seconds']:9.2f} s {1e3 * row['seconds'] / n:9.1f} "
                                f"ms/link"))
    built = {n: r for n, r in builds.items() if "skipped" not in r}
    largest = max(built) if built else None
    within_60 = [n for n, r in list(built.items()) + list(probes.items())
                 if "skipped" not in r and r["seconds"] <= 60.0]
    per_link = (f"{1e3 * built[largest]['seconds'] / largest:.0f} ms per link at n = "
                f"{largest}" if largest else "no size built")
    reason_100k = ("not built: flattening and structural analysis still hold every scalar "
                   f"equation of every instance ({per_link}); a class records its equations "
                   "and their derivatives once and the generated code calls one kernel per "
                   "class, but matching, sorting and solving are not per class yet")
    result = {
        "build_ms_per_link": {str(n): (None if "skipped" in r else 1e3 * r["seconds"] / n)
                              for n, r in builds.items()},
        "build_skipped": {str(n): r["skipped"] for n, r in builds.items() if "skipped" in r},
        "first_c_seconds": {str(n): r["first_c"] for n, r in builds.items() if "first_c" in r},
        "peak_rss_mb_per_link": (built[largest]["rss_mb"] / largest) if largest else None,
        "peak_rss_at_n": largest,
        "largest_chain_built_60s": max(within_60) if within_60 else None,
        "chains_built_searching_60s": {str(n): (None if "skipped" in r else r["seconds"])
                                       for n, r in probes.items()},
        "api_fd_over_pinocchio": {str(r["n"]): r["api_us"] / r["pin_us"] for r in fds},
        "c_fd_over_pinocchio": {str(r["n"]): r["c_us"] / r["pin_us"] for r in fds},
        "sim_over_scipy_pinocchio": {str(r["n"]): r["mb_s"] / r["scipy_pin_s"] for r in sims},
        "result_read_s": {str(r["n"]): {"one": r["read_one_s"], "table": r["read_table_s"],
                                        "table_c": r["read_table_c_s"],
                                        "c_build": r["outputs_c_build_s"]}
                          for r in sims},
        "chain_100k_fd_ms": None,
        "chain_100k_fd_reason": reason_100k,
        "targets": TARGETS,
    }
    print(f"\nchain_100k_fd_ms: null — {reason_100k}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
