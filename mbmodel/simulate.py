"""Simulation with casadi's integrators on the model's dynamics in generated C: CVODES
(Adams for non-stiff, BDF for stiff models, chosen from the Jacobian's eigenvalues) or
IDAS when algebraic variables remain, stopping and restarting exactly at time events so
steps are resolved exactly. Solver objects are kept per thread (:mod:`mbmodel.workspace`)."""

from __future__ import annotations

import inspect
import math
import warnings

import casadi as ca
import numpy as np

from .asserts import RunAsserts
from .checks import scalar, vector
from .diagnose import explain_point, locate_non_finite, weakest_block
from .errors import MethodReplacedWarning, SimulationError, user_stacklevel
from .explicit import integrator as explicit_integrator
from .impulses import ImpulseWatch
from .initialization import initial_values
from .inputs import input_function
from .integrators import (C_LOOPS, CONSISTENT, STIFFNESS_LIMIT, due, failed_at_start,
                          idas_first_step, loop_native, mapped, newton_dynamics,
                          solve_algebraic, solver_options, stiffness)
from .native import dynamics, outputs as native_outputs
from .progress import time_bar
from .quiet import casadi_lines_dropped
from .result import Result
from .workspace import built, remember, workspace


#: Integration methods. "auto" picks, for non-stiff models such as most mechanisms, an
#: explicit method whose whole loop runs in C (:mod:`mbmodel.explicit`) where the dynamics
#: run as generated C and no algebraic variables remain: "abm" (Adams–Bashforth–Moulton,
#: variable order 1–12, two right-hand sides a step) for a run without events whose
#: Jacobian norm times the duration is at most STIFFNESS_LIMIT, else "dop853"
#: (Dormand–Prince 8(5,3): a larger stability region for fast modes that are no stiffness,
#: and a one-step method that loses nothing when events restart it); without generated C
#: "adams" (CVODES, Adams–Moulton with functional iteration). For stiff
#: models "bdf" (CVODES, BDF with Newton); "idas" when algebraic variables remain.
#: "cvodes" is BDF with the torn nonlinear blocks solved inside the ODE. "abm" or "dop853"
#: asked for without a C compiler run "adams" (the result's ``methods`` says so); any but
#: "cvodes" asked of a model with algebraic variables runs "idas", with a
#: :class:`~mbmodel.MethodReplacedWarning`.
METHODS = ("auto", "abm", "dop853", "adams", "bdf", "cvodes", "idas")

#: ``state_selection`` of the runs inside :mod:`mbmodel.state_selection`: the compiled choice
#: kept, and checked by the caller (a stretch of the dynamic selection, or the whole run of
#: ``state_selection="static"``).
UNCHECKED = "static, checked by the caller"

#: With ``progress=True`` a run without events is cut into about this many integrator calls.
PROGRESS_CHUNKS = 20


def simulate_compiled(cm, t_end, *, t_start=0.0, n_points=None, times=None, params=None,
                      inputs=None, rtol=1e-8, atol=1e-10, x0=None, steady_state=False,
                      method=None, max_step=None, native="auto", z0=None,
                      state_selection="dynamic", progress="auto") -> Result:
    if times is not None and n_points is not None:
        raise SimulationError("give times (the output times) or n_points (that many equally "
                              "spaced), not both")
    if x0 is not None and steady_state:
        raise SimulationError("give either x0 (the initial states) or steady_state=True (the "
                              "initialization finds them), not both")
    if z0 is not None and x0 is None:
        raise SimulationError("z0 (guesses of the algebraic variables) goes with x0; without "
                              "x0 the initialization finds both (give guesses as Guess(...) "
                              "starts, or initialize(x_guess=...))")
    n_points = 501 if n_points is None else n_points
    t_start, t_end, n_points, rtol, atol, max_step, method = checked_options(
        t_start, t_end, n_points, rtol, atol, max_step, method)
    p = cm.parameter_vector(params)
    if times is None:
        grid = np.linspace(t_start, t_end, n_points)
    else:
        try:
            grid = np.asarray(times, dtype=float)
        except (TypeError, ValueError):
            raise SimulationError(f"times must be a sequence of numbers, not {times!r}") from None
        if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)):
            raise SimulationError(f"times must be a non-empty sequence of finite output times, "
                                  f"not {times!r}")
    if grid.ndim != 1 or np.any(np.diff(grid) < 0) or grid[0] < t_start or grid[-1] > t_end:
        raise SimulationError(f"times must be increasing and within [t_start, t_end] = "
                              f"[{t_start}, {t_end}]")
    if state_selection not in ("dynamic", "static", UNCHECKED):
        raise SimulationError(f"state_selection must be 'dynamic' or 'static', not "
                              f"{state_selection!r}")
    if (method in ("abm", "dop853", "adams", "bdf") and len(cm.algebraic)
            and len(cm.states) and state_selection != UNCHECKED):   # (no states: none runs)
        warnings.warn(
            f"{cm.name}: method={method!r} takes no algebraic variables, and this model keeps "
            f"{len(cm.algebraic)} ({', '.join(cm.algebraic[:4])}"
            f"{', ...' if len(cm.algebraic) > 4 else ''}): the run uses 'idas' (BDF for "
            f"DAEs); ask for method='idas' or 'auto'", MethodReplacedWarning,
            stacklevel=user_stacklevel())
    elif (method in C_LOOPS and native is False and len(cm.states)
          and state_selection != UNCHECKED):
        warnings.warn(
            f"{cm.name}: method={method!r} runs its loop in generated C, and native=False "
            f"keeps the dynamics in casadi's virtual machine: the run uses 'adams' (CVODES' "
            f"Adams-Moulton); ask for native=True or 'auto', or for method='adams'",
            MethodReplacedWarning, stacklevel=user_stacklevel())
    u_of = input_function(cm, inputs)
    bar = time_bar(progress, t_start, t_end, cm.name)
    try:
        result = _simulate(cm, grid, t_start, t_end, p, u_of, params, inputs, rtol, atol, x0,
                           z0, steady_state, method, max_step, native, state_selection, bar,
                           progress is True)
        if state_selection != UNCHECKED:  # (a stretch's caller checks the whole run)
            run_asserts(cm).check(result, p)

        if bar is not None:
            bar(t_end)
        return result
    except SimulationError as exc:
        if state_selection != UNCHECKED and getattr(exc, "result", None) is not None:
            run_asserts(cm).check(exc.result, p, failure=exc)  # an assert failed first?
        state_set = cm.system.state_set if cm.system is not None else None
        if (state_selection == "static" and state_set is not None and cm.events is None
                and "state_selection" not in str(exc)):
            exc.args = (f"{exc}{static_hint(cm)}",)
        raise
    finally:
        if bar is not None:
            bar.close()


def initial_point_result(cm, x0, z0, p, inputs, t_start) -> Result:
    """A one-point :class:`Result` at ``t_start`` of an initialized point ``(x0, z0)``
    (what the run-time asserts are checked on after :meth:`mbmodel.CompiledModel.initialize`)."""
    grid = np.array([float(t_start)])
    u = np.asarray(input_function(cm, inputs)(float(t_start)), dtype=float).reshape(-1, 1)
    n_discrete = len(getattr(cm, "discrete_start", ()))
    if n_discrete and u.shape[0] == len(cm.inputs):
        u = np.vstack([u, np.asarray(cm.discrete_start, dtype=float).reshape(-1, 1)])
    X = np.asarray(x0, dtype=float).reshape(-1, 1)
    Z = np.asarray(z0, dtype=float).reshape(-1, 1)
    return _result(cm, grid, X, Z, u, p, np.array([True]), [], native=False)


def run_asserts(cm) -> RunAsserts:
    """The compiled model's :class:`~mbmodel.asserts.RunAsserts` (made once per thread,
    kept in its workspace: the compiled model stays plain data)."""
    cache = workspace(cm, "run_asserts")
    checks = cache.get("checks")
    if checks is None:
        checks = cache["checks"] = RunAsserts(cm)
    return checks


def static_hint(cm) -> str:
    """What a failure with the compiled choice of states kept adds: that the choice could
    change at run time."""
    return (f" The states {', '.join(cm.states[:6])} were kept (state_selection='static'); "
            f"this model's choice can change at run time (candidates "
            f"{', '.join(cm.system.state_set.candidates[:6])}): state_selection='dynamic', "
            f"the default, switches it where it turns singular.")


def _simulate(cm, grid, t_start, t_end, p, u_of, params, inputs, rtol, atol, x0, z0,
              steady_state, method, max_step, native, state_selection, bar, cut) -> Result:
    if (state_selection != UNCHECKED and cm.system.state_set is not None
            and cm.events is None and grid[-1] > t_start):
        from .state_selection import simulate_kept, simulate_switching
        run = simulate_switching if state_selection == "dynamic" else simulate_kept
        return run(cm, grid, t_start, t_end, dict(
            params=params, inputs=inputs, rtol=rtol, atol=atol, x0=x0, z0=z0,
            steady_state=steady_state, method=method, max_step=max_step, native=native,
            state_selection=UNCHECKED))
    if cm.events is not None:
        return _simulate_with_events(cm, grid, t_start, t_end, p, u_of, x0, steady_state,
                                     method, rtol, atol, max_step, native, params, inputs,
                                     bar, z0)
    u_of = _after_initialization(cm, u_of)
    if x0 is None:
        x, z = initial_values(cm, params=params, inputs=inputs, t_start=t_start,
                              steady_state=steady_state)
    else:
        x = vector(x0, len(cm.states), "x0", cm.states)
        # consistent with x0, from z0 or the start values as guesses (the first row showed
        # the guesses, not a solution)
        z = cm.starts(p)[1] if z0 is None else vector(z0, len(cm.algebraic), "z0",
                                                        cm.algebraic)
        z = _made_consistent(cm, z, p, u_of(t_start), t_start, x)
    if max_step is None:
        max_step = default_max_step(cm, p, t_end - t_start)
    events_inside = time_events(cm, p, u_of, t_start, t_end)
    bounds = [t_start] + events_inside + [t_end]
    if bar is not None and cut:
        # The bar moves between integrator calls: the run is cut at output times into
        # about PROGRESS_CHUNKS calls (each restarts the integrator).
        cuts = grid[::max(1, len(grid) // PROGRESS_CHUNKS)]
        bounds = sorted(set(bounds) | {float(c) for c in cuts if t_start < c < t_end})
    n_x, n_z = len(x), len(z)
    X = np.zeros((n_x, len(grid)))
    Z = np.zeros((n_z, len(grid)))
    U = np.zeros((cm.symbols.u.numel(), len(grid)))
    if len(U):
        for k, t in enumerate(grid):
            U[:, k] = u_of(t)
    # Grid points at t_start take the initial values.
    at_start = grid <= t_start
    X[:, at_start] = x[:, None]
    Z[:, at_start] = z[:, None]
    if n_z and method in ("auto", *C_LOOPS, "adams", "bdf"):
        method = "idas"
    dyn = cm.dynamics
    if n_x and method in ("auto", "adams", *C_LOOPS):
        # (BDF and IDAS integrate newton_dynamics: a library of these would go unused)
        dyn = dynamics(cm, loop_native(method, native))
    if method == "auto" and n_x:
        with np.errstate(over="ignore", invalid="ignore"):  # (a huge parameter: said below)
            method, fast = stiffness(cm, dyn, x, z, np.concatenate([p, u_of(t_start)]),
                                      t_start, t_end)
        if method == "adams" and explicit_integrator(dyn) is not None:
            # ABM's predictor-corrector steps are stable in a small region only: fast
            # modes that are no stiffness (an undamped oscillation) go to DOP853
            method = "abm" if fast <= STIFFNESS_LIMIT else "dop853"
    elif method in C_LOOPS and explicit_integrator(dyn) is None:
        method = "adams"
    methods_used = []
    watch = ImpulseWatch(cm, atol, t_start)
    events_inside = set(events_inside)
    for a, b in zip(bounds[:-1], bounds[1:]):
        inside = np.where((grid > a) & (grid <= b))[0]
        tout = list(grid[inside])
        if not tout or tout[-1] < b:
            tout.append(b)
        u_seg = u_of(0.5 * (a + b))  # inputs are constant between events
        if n_x and n_z and a > t_start:
            # after a time event or an input's step the algebraic variables move: solved
            # for the new inputs here (IDAS's own consistent start from the old ones failed,
            # "IDA_CONV_FAIL", on a diode's exponential for a step of a volt)
            z = _made_consistent(cm, z, p, u_seg, a, x)
        if n_x == 0:
            # Purely algebraic: solve g = 0 at each output time, continuing from the last z.
            xs = np.zeros((0, len(tout)))
            zs = np.zeros((n_z, len(tout)))
            for j, t in enumerate(tout):
                z = solve_algebraic(cm, z, p, u_seg, t)
                zs[:, j] = z
        else:
            try:
                if n_z and method == "cvodes":
                    xs, zs, used = _integrate_with_loops(cm, a, tout, x, z, p, u_seg, rtol,
                                                         atol, max_step)
                else:
                    xs, zs, used = _integrate(cm, dyn, method, a, tout, x, z,
                                              np.concatenate([p, u_seg]), rtol, atol,
                                              max_step, native)
            except SimulationError as exc:
                xs, zs = exc.reached
                for j, k in enumerate(inside[:xs.shape[1]]):
                    X[:, k] = xs[:, j]
                    Z[:, k] = zs[:, j]
                exc.result = _result(cm, grid, X, Z, U, p, grid <= exc.reached_time,
                                     methods_used, native)
                raise
            methods_used.append(used)
        for j, k in enumerate(inside):
            X[:, k] = xs[:, j]
            Z[:, k] = zs[:, j]
        _check_finite(cm, grid, X, Z, U, p, methods_used, a, tout, xs, zs, (x, z),
                      np.concatenate([p, u_seg]), native)
        x = xs[:, -1].copy()
        z = zs[:, -1].copy()
        if b in events_inside:
            watch.check_time_event(b, x, z, u_of, p)
        if bar is not None:
            bar(b)
    return _result(cm, grid, X, Z, U, p, np.ones(len(grid), bool), methods_used, native)


def _simulate_with_events(cm, grid, t_start, t_end, p, u_of, x0, steady_state, method, rtol,
                          atol, max_step, native, params, inputs, bar=None,
                          z0=None) -> Result:
    """A model with events (see :mod:`mbmodel.events`); the result has ``events``."""
    from .events import simulate_with_events
    if x0 is not None:
        x0 = vector(x0, len(cm.states), "x0", cm.states)
    if z0 is not None:
        z0 = vector(z0, len(cm.algebraic), "z0", cm.algebraic)
    if max_step is None:
        max_step = default_max_step(cm, p, t_end - t_start)
    try:
        X, Z, U, events, methods = simulate_with_events(
            cm, grid, t_start, t_end, p, u_of, x0, steady_state, method, rtol, atol, max_step,
            native, params, inputs, bar, z0)
    except SimulationError as exc:
        reached = getattr(exc, "reached", None)
        if reached is not None and exc.result is None:
            X, Z, U, rows, events = reached
            exc.result = _result(cm, grid, X, Z, U, p, rows, [], native)
            exc.result.events = list(events)
        raise
    result = _result(cm, grid, X, Z, U, p, np.ones(len(grid), bool), methods, native)
    result.events = events
    return result


def time_events(cm, p, u_of, t_start, t_end) -> list[float]:
    """The declared time events and the inputs' breakpoints inside ``(t_start, t_end)``,
    sorted, each once; events a round-off apart (``0.1*3`` and ``0.3``) are one, at the
    later time."""
    times = [float(e) for e in np.array(cm.event_function(p)).reshape(-1)]
    times += u_of.breakpoints
    merged = []
    for e in sorted({e for e in times if t_start < e < t_end}):
        if merged and due(e, merged[-1]):
            merged[-1] = e
        else:
            merged.append(e)
    return merged


#: Without an explicit ``max_step``, steps are kept to this fraction of the shortest period
#: the model's components declare (``Model.time_scale``: sine sources declare 1/f).
STEP_FRACTION_OF_PERIOD = 1 / 16


def default_max_step(cm, p, duration) -> float | None:
    """The largest step the integrator may take when the user gives none: a sixteenth of the
    shortest declared period (None when no component declares one)."""
    if cm.time_scale_function is None or not cm.time_scale_function.size1_out(0):
        return None
    periods = np.array(cm.time_scale_function(p)).reshape(-1)
    periods = periods[np.isfinite(periods) & (periods > 0)]
    if not periods.size:
        return None
    return float(min(periods.min() * STEP_FRACTION_OF_PERIOD, duration))


#: Most output times a run may ask for (each costs a value per variable).
MAX_POINTS = 10_000_000


def checked_options(t_start=0.0, t_end=1.0, n_points=501, rtol=1e-8, atol=1e-10,
                    max_step=None, method=None):
    """The run's options as numbers and a method name, or a SimulationError naming the bad
    one (:func:`mbmodel.sweep` checks them once, before any run).

    Example: ``checked_options(t_end=-1.0)`` raises *t_end (-1.0) must be finite and after
    t_start (0.0)*."""
    t_start = scalar(t_start, "t_start", SimulationError)
    t_end = scalar(t_end, "t_end", SimulationError)
    if not np.isfinite(t_start):
        raise SimulationError(f"t_start ({t_start}) must be finite")
    if not np.isfinite(t_end) or t_end <= t_start:
        raise SimulationError(f"t_end ({t_end}) must be finite and after t_start ({t_start})")
    method = "auto" if method is None else method
    if method not in METHODS:
        raise SimulationError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 1:
        raise SimulationError(f"n_points must be a whole number >= 1 (output times including "
                              f"t_start and t_end), not {n_points!r}")
    if n_points > MAX_POINTS:
        raise SimulationError(f"n_points = {n_points} output times would not fit in memory "
                              f"(at most {MAX_POINTS:.0e}); use fewer, or times=[...] for the "
                              f"instants you need")
    tolerances = []
    for name, value in (("rtol", rtol), ("atol", atol)):
        value = scalar(value, name, SimulationError)
        if not (np.isfinite(value) and value > 0) or (name == "rtol" and value >= 1):
            raise SimulationError(f"{name} must be a positive finite tolerance (e.g. 1e-8"
                                  f"{', below 1' if name == 'rtol' else ''}), not {value!r}")
        tolerances.append(value)
    rtol, atol = tolerances
    if max_step is not None:
        max_step = scalar(max_step, "max_step", SimulationError)
        if not (np.isfinite(max_step) and max_step > 0):
            raise SimulationError(f"max_step must be a positive step size or None, not "
                                  f"{max_step!r}")
    return t_start, t_end, int(n_points), rtol, atol, max_step, method


def _result(cm, grid, X, Z, U, p, rows, methods_used, native="auto") -> Result:
    """The Result on the grid points selected by ``rows`` (all, or those reached); its
    table in generated C as ``native`` says (:func:`mbmodel.native.outputs`: with True,
    built when the table is first computed). Where the C is built already, a variable read
    computes the whole table; else a variable of a model whose table is expensive is
    computed alone in casadi's virtual machine (see :data:`TABLE_ALONE`), and other
    models' first read computes the table (with True, building the C first)."""
    grid, X, Z, U = grid[rows], X[:, rows], Z[:, rows], U[:, rows]
    known = dict(zip(cm.states, X))
    known.update((name, Z[k]) for k, name in enumerate(cm.algebraic) if name not in known)
    in_c = bool(native) and native_outputs(cm, "auto") is not cm.output_function
    result = Result(grid, _output_table(cm, grid, X, Z, U, p, native), cm.output_names, cm,
                    known=known, check=_output_check(cm, grid, X, Z, U, p),
                    rows=None if in_c else _output_rows(cm, grid, X, Z, U, p))
    # What integrated each segment between events ("adams" segments may have fallen back).
    result.methods = list(methods_used)
    return result


def _check_finite(cm, grid, X, Z, U, p, methods_used, t0, tout, xs, zs, start, pu, native):
    """A state or algebraic variable that is NaN or infinite stops the run with the time
    and the variable, and the result up to the last finite output time."""
    finite = np.all(np.isfinite(xs), axis=0) & np.all(np.isfinite(zs), axis=0)
    if finite.all():
        return
    j = int(np.argmin(finite))
    names = cm.states + cm.algebraic
    values = np.concatenate([xs[:, j], zs[:, j]])
    i = int(np.argmin(np.isfinite(values)))
    last_good = tout[j - 1] if j else t0
    x_good, z_good = (xs[:, j - 1], zs[:, j - 1]) if j else start
    found = locate_non_finite(cm, last_good, tout[j], x_good, z_good, pu)
    if found is None:
        found = explain_point(cm, tout[j], xs[:, j], zs[:, j], pu[len(p):], p)
    cause = (f"At t = {found.time:.9g}, {found.explanation}\n" if found else
             f"A division by zero or a variable leaving its domain (sqrt, log of a negative "
             f"value) usually causes this; check the equations that use {names[i]} and the "
             f"parameters and start values. ")
    exc = SimulationError(
        f"the solution is not finite at t = {tout[j]:g}: {names[i]} = {values[i]} (last "
        f"finite output at t = {last_good:g}). {cause}The result up to "
        f"t = {last_good:g} is in this error's 'result'.")
    exc.time = found.time if found else float(tout[j])
    exc.variable = found.variable if found else names[i]
    exc.result = _result(cm, grid, X, Z, U, p, grid <= last_good, methods_used, native)
    raise exc


def _output_table(cm, grid, X, Z, U, p, native):
    """Every output variable on the grid, computed when the Result first needs it by the
    output Function or its C (:func:`mbmodel.native.outputs` with ``native``)."""
    def compute():
        return buffered_table(cm, native_outputs(cm, native), X, Z, U, p, grid[None, :])
    return compute


def buffered_table(cm, fn: ca.Function, *args) -> np.ndarray:
    """``fn``'s first output (a column) at each point of ``args`` (numpy arrays: a column
    per point, or a vector or one column for all of them), as the columns of a new array.
    casadi reads the arguments and writes the columns in place, through the buffer
    interface of ``fn`` mapped over a chunk of points (:func:`table_chunk`; one call per
    chunk), kept per thread with ``cm``'s maps.

    A plain call of ``fn.map(n)`` converts every argument and the result between numpy and
    casadi: for a 100-link chain's table (26 151 variables x 501 points) that was ~1.7 s of
    a ~2.3 s read, the computation itself ~0.25 s in casadi's virtual machine; and making
    a map of all points costs ~0.6 s (casadi builds the 13-million-entry pattern of its
    output).

    Example: ``table = buffered_table(cm, cm.output_function, X, Z, U, p, grid[None, :])``"""
    fn = _dense(cm, fn)
    if len(args) != fn.n_in():
        raise ValueError(f"buffered_table: {fn.name()} takes {fn.n_in()} arguments, not "
                         f"{len(args)}")
    args = [np.asarray(value, dtype=float) for value in args]
    n = max([value.shape[1] for value in args if value.ndim == 2] or [1])
    columns = []  # per input: its columns, or one column for all points
    for i, value in enumerate(args):
        if value.ndim < 2:
            value = value.reshape(-1, 1)  # a number or a vector is a column
        if value.shape[0] != fn.size1_in(i) or value.shape[1] not in (1, n):
            raise ValueError(f"buffered_table: argument {i} ({fn.name_in(i)}) has shape "
                             f"{value.shape}, not ({fn.size1_in(i)}, 1 or {n})")
        columns.append(np.asfortranarray(value) if value.shape[1] == n and n > 1
                       else value[:, :1])
    table = np.empty((fn.size1_out(0), n), order="F")
    width = table_chunk(fn.size1_out(0))
    whole = n - n % width
    if whole:
        _fill(cm, mapped(cm, fn, width) if width > 1 else fn, width, columns, table, 0, whole)
    if whole < n:
        rest = n - whole
        _fill(cm, mapped(cm, fn, rest) if rest > 1 else fn, rest, columns, table, whole, n)
    return table


def table_chunk(n_out: int) -> int:
    """Points per call of :func:`buffered_table` for a Function of ``n_out`` outputs: the
    Python around a call (~10-20 µs) shared by as many points as keep the map's output
    within 2^16 entries (casadi spends ~50 ns per entry making a map), a power of two from
    1 (a 100-link chain's 26 151 variables: 2) to 4096 (a model of a few variables).

    Example: ``table_chunk(6) == 4096``"""
    return int(min(4096, 2 ** max(0, math.floor(math.log2(65536 / max(n_out, 1))))))


def _dense(cm, fn: ca.Function) -> ca.Function:
    """``fn``, or where an input or its first output is not a dense column (a structural
    zero among the outputs), a Function that makes them so: the buffers are dense."""
    if all(fn.sparsity_in(i).is_dense() for i in range(fn.n_in())) and \
            fn.sparsity_out(0).is_dense():
        return fn
    cache = workspace(cm, "densified")
    found = cache.get(id(fn))
    if found is None:  # (fn kept with it, so its id stays unique)
        inputs = [ca.MX.sym(fn.name_in(i), fn.size1_in(i), fn.size2_in(i))
                  for i in range(fn.n_in())]
        found = remember(cache, id(fn), (fn, ca.Function(
            f"{fn.name()}_dense", inputs, [ca.densify(fn.call(inputs)[0])])),
            limit=SELECTIONS_KEPT)
    return found[1]


def _fill(cm, fn, width, columns, table, first, end):
    """``table``'s columns ``first:end`` from ``fn`` (``width`` points per call) through
    its buffer: the inputs that vary from ``columns``, the others once (repeated)."""
    buffers = workspace(cm, "buffers")
    found = buffers.get(id(fn))
    if found is None:  # (fn kept with its buffer, so its id stays unique)
        found = remember(buffers, id(fn), (fn, *fn.buffer()), limit=SELECTIONS_KEPT)
    _, buffer, trigger = found
    varying, held = [], []  # (held: the arrays the buffer points into, alive until the calls)
    for i, values in enumerate(columns):
        if values.shape[1] == 1:  # (one column for all points, or a table of one point)
            repeated = np.asfortranarray(np.repeat(values, width, axis=1))
            held.append(repeated)
            buffer.set_arg(i, memoryview(repeated.reshape(-1, order="F")))
        else:
            varying.append((i, values))
    for k in range(first, end, width):
        for i, values in varying:
            buffer.set_arg(i, memoryview(values[:, k:k + width].reshape(-1, order="F")))
        buffer.set_res(0, memoryview(table[:, k:k + width].reshape(-1, order="F")))
        trigger()
        if buffer.ret():
            raise SimulationError(f"evaluating {fn.name()} failed at output times {k} to "
                                  f"{k + width - 1} (casadi returned {buffer.ret()})")


#: A result computes a variable alone, from what it needs (see :class:`Result`), where its
#: table would cost more than this many instruction evaluations (the output Function's
#: instructions times the output times; ~3-5 ns each in casadi's virtual machine): a
#: variable alone costs ~5-10 ms to set up, more than a small model's whole table.
TABLE_ALONE = 2e7

#: Selections of outputs (and their maps) kept per thread and model: a loop of runs
#: reading the same few dozen variables reuses them.
SELECTIONS_KEPT = 256


def _output_rows(cm, grid, X, Z, U, p):
    """Rows of the output table computed alone, when a variable is read before the whole
    table is needed: a Function of those outputs is what they read and no more (casadi
    keeps what its outputs depend on), evaluated at each point of the grid. None
    where the whole table is cheap (:func:`table_read_whole`)."""
    if table_read_whole(cm, len(grid)):
        return None

    def rows(indices):
        fn, read = selected_outputs(cm, tuple(indices))
        return buffered_table(cm, fn, X, Z, U, p[read], grid[None, :])
    return rows


def table_read_whole(cm, n_points: int) -> bool:
    """Whether a result of ``cm`` at ``n_points`` output times computes its whole table on
    the first read of a variable that is not a state (the table costs at most
    :data:`TABLE_ALONE` instruction evaluations), rather than the variable alone.

    Example: ``table_read_whole(cm, 501)``"""
    return cm.output_function.n_instructions() * n_points <= TABLE_ALONE


def selected_outputs(cm, rows: tuple) -> tuple[ca.Function, list[int]]:
    """``cm.output_function``'s outputs at ``rows`` alone, as a Function of the same
    arguments except that of the parameters it takes those it reads, at the positions
    returned with it (a large model's parameter vector makes every map of the Function
    cost in its size). Kept per thread, like the solvers.

    Example::

        fn, read = selected_outputs(cm, (cm.output_index["load.w"],))
        w = fn(x, z, u, p[read], t)
    """
    cache = workspace(cm, "selected outputs")
    found = cache.get(rows)
    if found is None:
        # the outputs as one expression, made once (its graph is shared by the selections)
        whole = workspace(cm, "outputs as an expression")
        if not whole:
            sym = cm.symbols
            whole["outputs"] = cm.output_function(sym.x, sym.z, sym.u, sym.p, sym.t)
        sym = cm.symbols
        selected = whole["outputs"][list(rows)]
        read = [k for k, used in enumerate(ca.which_depends(selected, sym.p, 1, False))
                if used]
        found = remember(cache, rows, (ca.Function(
            "selected_outputs", [sym.x, sym.z, sym.u, sym.p[read], sym.t], [selected]), read),
            limit=SELECTIONS_KEPT)
    return found


def _output_check(cm, grid, X, Z, U, p):
    """The error for a variable of the result that is not finite (read from the Result: the
    states are checked during the run; every other variable when it is read, since
    computing them all can cost more than the run): when, and the equation behind it."""
    def check(result, name, row):
        k = int(np.argmin(np.isfinite(row)))
        found = explain_point(cm, grid[k], X[:, k], Z[:, k], U[:, k], p)
        error = SimulationError(
            f"'{name}' is not finite from t = {grid[k]:g} on ({name} = {row[k]}): "
            + (found.explanation if found else "")
            + f"\nThe states are finite there: the variable is not used by the dynamics. The "
            f"result up to t = {grid[k - 1] if k else grid[0]:g} is in this error's 'result'.")
        error.time = float(grid[k])
        error.variable = found.variable if found else name
        # (its variables computed when read, as the result's: a large model's table is
        # not computed for the error)
        error.result = result.head(k)
        return error
    return check


def _integrate(cm, dyn, method, t0, tout, x, z, pu, rtol, atol, max_step, native):
    """States (and algebraic variables) at ``tout``, integrating from ``t0``. The non-stiff
    methods fall back to BDF for a segment on which they fail (the model turned stiff)."""
    n_x, n_z = len(x), len(z)
    if method in C_LOOPS:
        # the segment ends at a time event or the run's end: its left limit
        run = explicit_integrator(dyn)(t0, x, pu, tout, rtol=rtol, atol=atol,
                                       max_step=max_step, method=method, left_limit=True)
        if run.ok:
            return run.xs, np.zeros((0, len(tout))), method
        method = "bdf"
    attempts = [(method, False)] + ([("bdf", False)] if method == "adams" else []) + (
        [("idas", True)] if method == "idas" else [])
    for attempt, first_step in attempts:
        F = _integrator(cm, dyn, attempt, t0, tout, rtol, atol, max_step, native,
                        first_step)
        try:
            with casadi_lines_dropped():
                out = F(x0=x, z0=z, p=pu)
            break
        except RuntimeError as exc:
            if attempt == "adams" or (attempt == "idas" and not first_step
                                      and failed_at_start(F)):
                continue
            xs, zs = _reached(cm, dyn, attempt, t0, tout, x, z, pu, rtol, atol, max_step,
                              native)
            reached = tout[xs.shape[1] - 1] if xs.shape[1] else t0
            x_last = xs[:, -1] if xs.shape[1] else x
            z_last = zs[:, -1] if zs.shape[1] else z
            found = locate_non_finite(cm, reached, tout[-1], x_last, z_last, pu, rtol, atol)
            block = "" if found else _losing_block(cm, t0, tout, x, z, xs, zs, pu)
            cause = (f" At t = {found.time:.9g}, {found.explanation}\n" if found else
                     block or _huge_values(cm, pu) or " The model may be stiff beyond the "
                     "tolerances, have a singularity, or a variable may leave its domain "
                     "(check start values and parameters).")
            where = (f"after t = {reached:g} (on the way from t = {t0:g} to {tout[-1]:g})"
                     if reached < tout[-1] else
                     f"on the way from t = {t0:g} to {tout[-1]:g} (output time by output "
                     f"time it got through)")
            error = SimulationError(
                f"the integrator ({attempt}) failed {where}: {_last_line(exc)}.{cause} The "
                f"result up to t = {reached:g} is in this error's 'result'.")
            error.time = found.time if found else reached
            error.variable = found.variable if found else None
            error.reached_time, error.reached = reached, (xs, zs)
            raise error from None
    xs = np.array(out["xf"]).reshape(n_x, len(tout))
    zf = np.array(out["zf"])
    zs = zf.reshape(n_z, len(tout)) if zf.size else np.zeros((n_z, len(tout)))
    return xs, zs, attempt


def _integrate_with_loops(cm, t0, tout, x, z, p, u, rtol, atol, max_step):
    """``method="cvodes"`` with torn nonlinear blocks: output interval by output interval,
    the Newton iterations inside the right-hand side starting from the algebraic variables
    solved at the interval's start — never from the start values, which may lie nearer
    another root (the mirror image of a pendulum)."""
    solved = cm.explicit_ode(guess=True)
    xs, zs = [], []
    x_start, z_start = x, z
    t_prev = t0
    for t in tout:
        # in the interval's scaled time; rounded so that a uniform grid shares one solver
        scaled = None if max_step is None else float(f"{max_step / (t - t_prev):.10g}")
        F = _loop_integrator(cm, rtol, atol, scaled)
        try:
            with casadi_lines_dropped():
                out = F(x0=x, p=np.concatenate([p, u, z, [t_prev, t - t_prev]]))
                x_new = np.array(out["xf"]).reshape(-1)
                z = np.array(solved(x_new, u, p, t, z)[1]).reshape(-1)
        except RuntimeError as exc:
            reached = np.column_stack(xs) if xs else np.zeros((len(x), 0))
            reached_z = np.column_stack(zs) if zs else np.zeros((len(z), 0))
            block = _losing_block(cm, t0, tout, x_start, z_start, reached, reached_z,
                                  np.concatenate([p, u]))
            block = block or (" A torn nonlinear block may have no solution near the "
                              "previous one there.")
            error = SimulationError(
                f"the integrator (cvodes, nonlinear blocks solved inside) failed after "
                f"t = {t_prev:g}: {_last_line(exc)}.{block} Check the start values and "
                f"parameters, or use method='idas'. The result up to t = {t_prev:g} is in "
                f"this error's 'result'.")
            error.time = error.reached_time = t_prev
            error.reached = (reached, reached_z)
            raise error from None
        x = x_new
        xs.append(x)
        zs.append(z)
        t_prev = t
    return np.column_stack(xs), np.column_stack(zs), "cvodes"


def _losing_block(cm, t0, tout, x, z, xs, zs, pu) -> str:
    """:func:`mbmodel.diagnose.weakest_block` over the start and the points reached."""
    if not len(z):
        return ""
    n_p = cm.symbols.p.numel()
    pu = np.asarray(pu, dtype=float)
    times = [t0] + list(tout[:xs.shape[1]])
    try:
        return weakest_block(cm, times, np.column_stack([x, xs]), np.column_stack([z, zs]),
                             pu[n_p:], pu[:n_p])
    except Exception:  # noqa: BLE001 - a diagnosis must never mask the original failure
        return ""


def _loop_integrator(cm, rtol, atol, max_step):
    """CVODES on the pure ODE whose torn nonlinear blocks are solved by casadi's rootfinder
    inside, Newton starting from ``z_guess``. In scaled time ``s`` in [0, 1] over an interval
    ``[t0, t0 + dt]`` (both passed with the parameters), so one integrator serves every
    output interval: ``p = (parameters, inputs, z_guess, t0, dt)``."""
    def build():
        X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
        Xm, Zm, Um, Pm = (ca.MX.sym(n, v.numel()) for n, v in
                          (("x", X), ("z", Z), ("u", U), ("p", P)))
        S, T0, DT = ca.MX.sym("s"), ca.MX.sym("t0"), ca.MX.sym("dt")
        xdot = cm.explicit_ode(guess=True)(Xm, Um, Pm, T0 + S * DT, Zm)[0]
        dae = {"x": Xm, "p": ca.vertcat(Pm, Um, Zm, T0, DT), "t": S, "ode": DT * xdot}
        return ca.integrator("sim", "cvodes", dae, 0.0, [1.0],
                             solver_options(rtol, atol, max_step))
    return built(workspace(cm, "integrators"), ("loops", rtol, atol, max_step), build)


#: Parameters this large (in magnitude) make the integrator's error norms overflow.
HUGE = 1e150


def _huge_values(cm, pu) -> str:
    """A sentence naming the parameters near the floating-point limit, or ''."""
    p = np.asarray(pu, dtype=float).reshape(-1)[:len(cm.parameters)]  # (then the inputs)
    huge = [f"{name} = {value:g}" for name, value in zip(cm.parameters, p)
            if abs(value) > HUGE]
    if not huge:
        return ""
    return (f" The parameters {', '.join(huge[:5])} are near the floating-point limit: the "
            f"integrator's error norms overflow (squares above 1e308); give values of a "
            f"physical size.")


def _reached(cm, dyn, method, t0, tout, x, z, pu, rtol, atol, max_step, native):
    """After a failed integration: the states (and algebraic variables) at the output times
    that can still be reached, integrating from one to the next until the failure."""
    xs, zs = [], []
    t_prev = t0
    for t in tout:
        F = _integrator(cm, dyn, method, t_prev, [t], rtol, atol, max_step, native)
        try:
            with casadi_lines_dropped():
                out = F(x0=x, z0=z, p=pu)
        except RuntimeError:
            break
        x = np.array(out["xf"]).reshape(-1)
        zf = np.array(out["zf"]).reshape(-1)
        z = zf if zf.size else z
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(z))):
            break
        xs.append(x)
        zs.append(z)
        t_prev = t
    n = len(xs)
    return (np.column_stack(xs) if n else np.zeros((len(x), 0)),
            np.column_stack(zs) if n else np.zeros((len(z), 0)))


def _after_initialization(cm, u_of):
    """``u_of`` with ``initial()`` false: a model without events reads it only in its
    initialization (``cm.initialize`` sets it); it had stayed true for the whole run."""
    from .hybrid import INITIAL
    names = list(getattr(cm, "discrete", ()))
    if INITIAL not in names:
        return u_of
    slot = len(cm.inputs) + names.index(INITIAL)

    def u_at(t):
        u = u_of(t)
        u[slot] = 0.0
        return u
    u_at.breakpoints = getattr(u_of, "breakpoints", [])
    return u_at


def _made_consistent(cm, z, p, u, t, x):
    """The algebraic variables from ``z`` as a guess, at the states ``x``: ``z`` itself
    where it solves the equations already (as the integrator left them: a restart is then
    the same as before), else solved by Newton; where Newton fails, ``z`` (the integrator's
    own start finds them, or says why not)."""
    residual = np.array(cm.alg(x, z, u, p, t), dtype=float).reshape(-1)
    if np.max(np.abs(residual), initial=0.0) <= CONSISTENT * (1.0 + np.max(np.abs(z),
                                                                             initial=0.0)):
        return z
    try:
        return solve_algebraic(cm, z, p, u, t, x)
    except SimulationError:
        return z


def _integrator(cm, dyn, method, t0, tout, rtol, atol, max_step, native, first_step=False):
    opts = solver_options(rtol, atol, max_step)
    grid = [float(t) for t in tout]
    solver = "idas" if method == "idas" else "cvodes"
    if first_step:
        opts["step0"] = idas_first_step(grid[0] - float(t0))
    rhs = dyn
    if method == "adams":
        opts.update(linear_multistep_method="adams", nonlinear_solver_iteration="functional")
    else:  # Newton's method needs exact Jacobians
        rhs = newton_dynamics(cm, native)
    cache = workspace(cm, "integrators")
    key = (id(rhs), method, t0, tuple(tout), rtol, atol, max_step, first_step)
    return built(cache, key, lambda: ca.integrator("sim", solver, rhs, float(t0), grid, opts))


def run(cm, t_end: float, **options) -> Result:
    """Simulate the compiled model ``cm`` from ``t_start`` (default 0) to ``t_end``: what
    ``cm.simulate`` and :func:`mbmodel.simulate` run. Warns if the model it was compiled
    from changed since, and names the options it does not have.

    The options are :func:`mbmodel.compiled.simulate`'s (``mb.simulate``), which documents
    them.

    Example::

        res = run(cm, 5e-3, params={"resistor.R": 2e3})
    """
    cm.warn_if_model_changed()
    known = list(inspect.signature(simulate_compiled).parameters)[2:]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise SimulationError(f"simulate() has no option {', '.join(map(repr, unknown))}; "
                              f"its options are {', '.join(known)}")
    return simulate_compiled(cm, t_end, **options)


def _last_line(exc) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[-1].rstrip(".") if lines else type(exc).__name__
