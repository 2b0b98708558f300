"""The integrators' shared pieces: method choice, solver options, the dynamics Newton's
method integrates, the algebraic solve, calls through casadi's buffers, and when a time
event is due. Used by :mod:`mbmodel.simulate` (runs without events),
:mod:`mbmodel.events` (runs with events), :mod:`mbmodel.native` and
:mod:`mbmodel.impulses` alike, so none reaches into another's private helpers."""

from __future__ import annotations

import casadi as ca
import numpy as np

from .core import time as TIME
from .errors import SimulationError
from .native import dynamics
from .workspace import remember, workspace

#: Relative width to which an event time is located.
EVENT_TIME_TOLERANCE = 1e-12

#: The methods run by the C loops of :mod:`mbmodel.explicit`.
C_LOOPS = ("abm", "dop853")

#: "auto" takes Adams when stability would not limit its steps to more than about this many
#: over the run: the spectral radius at the start times the duration, or where that is
#: larger, the fastest decay rate max(-Re lambda) times the duration (models of up to
#: EIGEN_STATES states).
STIFFNESS_LIMIT = 1e4
#: Up to this many states "auto" computes the Jacobian's eigenvalues when the spectral
#: radius alone would say stiff (one right-hand side per state and a dense eigenvalue
#: problem) to tell decaying modes from oscillations that do not decay.
EIGEN_STATES = 300


def mapped(cm, fn, n, kept=None):
    """``fn`` evaluated at ``n`` points in one call (each input and output a column per
    point), kept per thread (building a map costs more than evaluating one). ``kept``: how
    many maps the thread keeps (:func:`~mbmodel.workspace.remember`'s ``limit``).

    Example: ``values = mapped(cm, cm.event_values, len(grid))(X, Z, U, P, grid)``"""
    cache = workspace(cm, "maps")
    key = (id(fn), n)
    if key not in cache:
        # (fn kept alive so its id stays unique)
        remember(cache, key, (fn, fn.map(n, "serial")), limit=kept)
    return cache[key][1]


def choose_method(cm, dyn, x, z, pu, t_start, t_end) -> str:
    """"adams" (non-stiff) or "bdf" (stiff): see :func:`stiffness`.

    Example: ``choose_method(cm, dynamics(cm), cm.start, [], p, 0.0, 10.0)``"""
    return stiffness(cm, dyn, x, z, pu, t_start, t_end)[0]


def stiffness(cm, dyn, x, z, pu, t_start, t_end) -> tuple[str, float]:
    """Adams for non-stiff models, BDF for stiff ones. Stiff means: a mode that dies out
    in a small fraction of the run, which limits Adams' steps long after it is gone while
    BDF steps over it. An oscillation that does not decay is not stiffness: whatever the
    method, its steps follow it (an undamped spring). First the spectral radius by power
    iteration on finite-difference products ``J v`` (~20 evaluations of the compiled
    right-hand side): if it times the duration is at most :data:`STIFFNESS_LIMIT`, no mode
    can be stiff. Otherwise, for models of up to :data:`EIGEN_STATES` states, the
    eigenvalues of a finite-difference Jacobian (one evaluation per state) decide: BDF when
    the fastest decay rate, max(-Re lambda), times the duration exceeds the limit (the
    r3 robot's current loops, -Re lambda <= 3300/s, over its 2 s run: Adams). Larger models
    take BDF on the radius alone. Returns the method and the radius times the duration.

    Example: ``method, fast = stiffness(cm, dynamics(cm), x0, [], p, 0.0, 10.0)``"""
    n = len(x)
    buffer, evaluate = dyn.buffer()
    t_arg, x_arg, z_arg, pu_arg = np.array([t_start]), x.astype(float), z.astype(float), pu
    out = np.zeros(n)
    for k, arg in enumerate((t_arg, x_arg, z_arg, pu_arg, np.zeros(0))):
        buffer.set_arg(k, memoryview(arg))
    buffer.set_res(0, memoryview(out))
    evaluate()
    f0 = out.copy()
    if not np.all(np.isfinite(f0)):
        return "bdf", np.inf
    duration = t_end - t_start
    v = np.random.default_rng(0).normal(size=n)
    v /= np.linalg.norm(v)
    h = 1e-7 * max(1.0, float(np.linalg.norm(x)))
    radius = 0.0
    for _ in range(20):
        x_arg[:] = x + h * v
        evaluate()
        jv = (out - f0) / h
        norm = float(np.linalg.norm(jv))
        if not np.isfinite(norm):
            return "bdf", np.inf
        radius = max(radius, norm)
        if norm == 0.0:
            break
        v = jv / norm
    fast = radius * duration
    if fast <= STIFFNESS_LIMIT:
        return "adams", fast
    if n > EIGEN_STATES:
        return "bdf", fast
    jacobian = np.empty((n, n))
    for j in range(n):
        h = 1e-7 * max(1.0, abs(float(x[j])))
        x_arg[:] = x
        x_arg[j] += h
        evaluate()
        jacobian[:, j] = (out - f0) / h
    if not np.all(np.isfinite(jacobian)):
        return "bdf", fast
    decay = float(np.max(-np.linalg.eigvals(jacobian).real, initial=0.0))
    return ("adams" if decay * duration <= STIFFNESS_LIMIT else "bdf"), fast


def idas_first_step(first_interval: float) -> float:
    """IDAS's first step where its own fails at the start: a millionth of the first output
    interval. Its estimate takes the algebraic variables' derivatives as 0 and can be far
    too long where they move from rest (a sine source into a nonlinear resistor:
    'IDA_ERR_FAIL' at t = 0 for a first output time beyond 1e-4 s); the steps grow from
    there at once.

    Example: ``opts["step0"] = idas_first_step(tout[0] - t0)``"""
    return 1e-6 * abs(first_interval) if first_interval else 0.0


def failed_at_start(integrator) -> bool:
    """Whether the integrator's last call failed before it took a step (called through its
    buffers, :class:`Buffered`, it keeps its statistics there).

    Example: ``if failed_at_start(F): F = ... # again with idas_first_step``"""
    try:
        return int(getattr(integrator, "buffer", integrator).stats().get("nsteps", 1)) == 0
    except Exception:  # noqa: BLE001 - stats differ between plugins and versions
        return True


def solver_options(rtol, atol, max_step) -> dict:
    """SUNDIALS options of every integrator the simulator builds. Its own warnings would
    flood stderr on a failing run; the error we raise says what happened.

    Example: ``ca.integrator("sim", "cvodes", dae, 0.0, grid, solver_options(1e-8, 1e-10,
    None))``"""
    opts = {"abstol": atol, "reltol": rtol, "max_num_steps": 100000,
            "disable_internal_warnings": True, "show_eval_warnings": False}
    if max_step is not None:
        opts["max_step_size"] = max_step
    return opts


#: Algebraic residuals below this (relative to the variables' size) are a solution already.
CONSISTENT = 1e-10


def solve_algebraic(cm, z, p, u, t, x=None):
    """The algebraic variables solved from ``alg = 0`` by Newton from ``z``, at the states
    ``x`` (none for a model without states).

    Example: ``z = solve_algebraic(cm, z_guess, p, u, t, x)``"""
    if not len(z):
        return z
    x = np.zeros(0) if x is None else np.asarray(x, dtype=float)
    cache = workspace(cm, "rootfinders")
    rf = cache.get("algebraic")
    if rf is None:
        X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
        g = ca.Function("g", [Z, ca.vertcat(X, P, U, TIME)], [cm.alg(X, Z, U, P, TIME)])
        rf = remember(cache, "algebraic", ca.rootfinder("alg_solver", "newton", g,
                                                          {"error_on_fail": False,
                                                           "show_eval_warnings": False}))
    z_new = np.array(rf(z, np.concatenate([x, p, u, [t]]))).reshape(-1)
    res = np.array(cm.alg(x, z_new, u, p, t)).reshape(-1)
    if not np.all(np.isfinite(z_new)) or np.max(np.abs(res), initial=0) > 1e-8:
        raise SimulationError(f"the algebraic equations have no solution near the previous "
                              f"point at t = {t:g}")
    return z_new


#: BDF and IDAS integrate generated C with its forward derivative (exact Jacobians from
#: one directional derivative per state, a dense solve) for models of at most this many
#: states and algebraic variables; larger ones the symbolic dynamics, whose Jacobian is
#: sparse (a ladder of 500 states: a tridiagonal solve).
DENSE_JACOBIAN_SIZE = 80


def newton_dynamics(cm, native) -> ca.Function:
    """The dynamics BDF and IDAS integrate (see :data:`DENSE_JACOBIAN_SIZE`): generated C
    with its derivative where ``native`` allows it and the model is small enough, else the
    symbolic ``cm.dynamics`` (casadi's virtual machine, also while the C builds in the
    background).

    Example: ``ca.integrator("sim", "idas", newton_dynamics(cm, "auto"), 0.0, [1.0])``"""
    if not native or cm.symbols.x.numel() + cm.symbols.z.numel() > DENSE_JACOBIAN_SIZE:
        return cm.dynamics
    return dynamics(cm, native, derivatives=True)


def loop_native(method, native):
    """The ``native`` option the dynamics of ``method`` are built with: a C loop asked
    for by name (``"abm"``, ``"dop853"``) waits for its library under ``"auto"`` (every run
    of it then runs the same method, not CVODES' Adams while the C builds).

    Example: ``dynamics(cm, loop_native("abm", "auto"))   # C, waited for``"""
    return True if method in C_LOOPS and native == "auto" else native


def due(event_time, t) -> bool:
    """Whether a time event or sample tick at ``event_time`` happens at ``t`` (or before):
    within the width events are located to, so that instants computed apart in floating
    point (``0.1*3`` and ``0.3``) are one.

    Example: ``due(0.1 * 3, 0.3)   # True``"""
    return event_time <= t + EVENT_TIME_TOLERANCE * max(1.0, abs(t))


class Buffered:
    """``fn`` called through casadi's buffer interface: its arguments are copied into
    arrays the function reads directly, with no conversion to casadi matrices per call
    (~130 µs of a ~140 µs call of the r3 robot's compiled event function). Arguments
    broadcast to the declared shapes; the result (the first ``n_out`` outputs, a tuple if
    more than one) is new arrays. Not shared between threads: one per run, or kept per
    thread (an integrator in :mod:`mbmodel.workspace`). A failing call raises RuntimeError,
    as a plain call does.

    Example: ``xdot = Buffered(cm.ode)(x, z, u, p, t)``"""

    def __init__(self, fn, n_out: int = 1):
        self.function = fn
        self.buffer, self.trigger = fn.buffer()
        self.args = [np.zeros((fn.size1_in(i), fn.size2_in(i)), order="F")
                     for i in range(fn.n_in())]
        self.outs = [np.zeros((fn.size1_out(i), fn.size2_out(i)), order="F")
                     for i in range(n_out)]
        for i, arg in enumerate(self.args):
            self.buffer.set_arg(i, memoryview(arg.reshape(-1, order="F")))
        for i, out in enumerate(self.outs):
            self.buffer.set_res(i, memoryview(out.reshape(-1, order="F")))

    def __call__(self, *values):
        for arg, value in zip(self.args, values):
            if np.ndim(value) == 1:
                arg[...] = np.asarray(value)[:, None]   # a vector is a column
            else:
                arg[...] = value                          # numpy broadcasting
        self.trigger()
        if len(self.outs) == 1:
            return self.outs[0].copy(order="F")
        return tuple(out.copy(order="F") for out in self.outs)
