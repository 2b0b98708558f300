"""Linearization of a compiled model: ``ẋ = A x + B u``, ``y = C x + D u`` around an operating
point, with the states, inputs and outputs named.

The model is the index-reduced, sorted system the simulator integrates: its states are the
selected states, and the torn nonlinear blocks' variables ``z`` (with ``g(x, z, u) = 0``) are
eliminated by the implicit function theorem, ``dz = -g_z⁻¹ (g_x dx + g_u du)``. Outputs are
any of the model's variables (``cm.output_names``), differentiated the same way.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from .core import time as TIME
from .checks import scalar, vector
from .errors import ModelError, SimulationError, SwitchPointWarning, user_stacklevel
from .flat import entries_named
from .initialization import initial_values, rates_not_at_rest
from .minimum_norm import MinimumNormNewton
from .quiet import casadi_lines_dropped
from .workspace import remember, workspace


@dataclass
class LinearSystem:
    """``ẋ = A x + B u``, ``y = C x + D u`` with named ``states``, ``inputs`` and ``outputs``
    at the operating point ``x0``, ``u0``, ``t``.

    Unpacks as ``A, B`` (no outputs requested) or ``A, B, C, D``.

    Example::

        lin = cm.linearize(outputs=["load.w"])   # (a model with an input: its torque)
        A, B, C, D = lin
        sys = lin.to_control()   # control.StateSpace, needs the `control` extra; with
                                 # outputs and no inputs python-control cannot hold it
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    states: list[str]
    inputs: list[str]
    outputs: list[str]
    x0: np.ndarray = field(repr=False, default=None)
    #: the values of ``inputs`` at the point (the discrete values held there aside)
    u0: np.ndarray = field(repr=False, default=None)
    t: float = 0.0
    #: the algebraic variables (``algebraic``) at the point: on a kinematic loop they say
    #: which assembly was linearized
    z0: np.ndarray = field(repr=False, default=None)
    algebraic: list[str] = field(repr=False, default_factory=list)
    #: the values of ``outputs`` at the point (``y ≈ y0 + C (x - x0) + D (u - u0)``)
    y0: np.ndarray = field(repr=False, default=None)

    def __iter__(self):
        return iter((self.A, self.B, self.C, self.D) if self.outputs else (self.A, self.B))

    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of ``A`` (the poles of the linearized model).

        Example: ``cm.linearize().eigenvalues()`` is ``-1 ± 14.1j`` for ``J = 1``,
        ``c = 200``, ``d = 2``."""
        return np.linalg.eigvals(self.A)

    def to_control(self):
        """The model as a ``control.StateSpace`` with the names attached (python-control,
        the ``control`` extra; the hierarchy separator '.' becomes '/', which python-control
        allows in signal names: ``inertia/w``). A model with outputs needs an input
        (python-control issue #1176).

        Example: ``control.step_response(cm.linearize(outputs=["load.w"]).to_control())``"""
        try:
            import control
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("to_control() needs python-control: "
                              "pip install 'mbmodel[control]'") from exc
        C = self.C if self.outputs else np.zeros((0, len(self.states)))
        D = self.D if self.outputs else np.zeros((0, len(self.inputs)))
        # python-control reserves '.' in signal names: the hierarchy is written with '/'
        def names(items):
            return [n.replace(".", "/") for n in items]
        try:
            return control.ss(self.A, self.B, C, D, states=names(self.states),
                              inputs=names(self.inputs), outputs=names(self.outputs))
        except control.ControlDimension:
            if self.inputs or not self.outputs:
                raise
            raise ModelError(
                f"to_control(): python-control {control.__version__} cannot hold a system "
                f"with outputs and no inputs (its D matrix of shape ({len(self.outputs)}, 0) "
                f"collapses to (0, 0): python-control issue #1176); linearize without "
                f"outputs for the states' responses (control.initial_response), or use "
                f"lin.A and lin.C directly") from None


def linearize(cm, x=None, u=None, params=None, t=0.0, z=None, inputs=None, outputs=None,
              steady_state=False) -> LinearSystem:
    """Linearize the compiled model ``cm``; see :meth:`mbmodel.CompiledModel.linearize`."""
    p = cm.parameter_vector(params)
    t = scalar(t, "linearize(t=...)", SimulationError)
    if not np.isfinite(t):
        raise SimulationError(f"linearize(t=...) must be a finite time, not {t}")
    u0 = (np.zeros(len(cm.inputs)) if u is None
          else vector(u, len(cm.inputs), "u", cm.inputs))
    u_ext = u0
    # values that change only at events: their start values, relations as at the point
    u0 = np.concatenate([u_ext, getattr(cm, "discrete_start", np.zeros(0))])
    inputs_given = dict(zip(cm.inputs, u_ext.tolist()))
    if x is None and steady_state:
        x0, z0, u0 = _settled_steady_state(cm, u0, p, t,
                                           _assembled(cm, params, inputs_given, t))
    elif x is None:
        x0, z0 = initial_values(cm, params=params, inputs=inputs_given, t_start=t)
    else:
        if steady_state:
            raise SimulationError("linearize(): give either x (an operating point) or "
                                  "steady_state=True (find one), not both")
        x0 = vector(x, len(cm.states), "x", cm.states)
        if z is not None and len(cm.algebraic):
            z0 = _solved_from(cm, x0, u0, p, t, vector(z, len(cm.algebraic), "z",
                                                         cm.algebraic))
        elif z is not None:
            z0 = vector(z, 0, "z", cm.algebraic)
        elif len(cm.algebraic):
            z0 = _followed(cm, x0, u0, p, t, _assembled(cm, params, inputs_given, t))
        else:
            z0 = cm.z_start
    if getattr(cm, "events", None) is not None:
        from .event_layout import relations_at
        u0 = relations_at(cm, x0, z0, u0, p, t)
    chosen_inputs = (list(cm.inputs) if inputs is None else
                     _names(inputs, cm.inputs, "inputs", set(cm.parameters)))
    chosen_outputs = ([] if outputs is None else
                      _names(outputs, cm.output_names, "outputs", set(cm.parameters)))
    columns = [cm.inputs.index(n) for n in chosen_inputs]
    rows = [cm.output_index[n] for n in chosen_outputs]

    X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
    f = cm.ode(X, Z, U, P, TIME)
    g = cm.alg(X, Z, U, P, TIME)
    y = cm.output_function(X, Z, U, P, TIME)
    y = y[rows] if rows else ca.SX(0, 1)
    jac = ca.Function("linearization", [X, Z, U, P, TIME],
                      [ca.jacobian(e, v) for e in (f, g, y) for v in (X, Z, U)] + [y])

    def state_space(u_point):
        (fx, fz, fu, gx, gz, gu, hx, hz, hu, y0) = (np.array(m)
                                                     for m in jac(x0, z0, u_point, p, t))
        if gz.size:
            if not np.all(np.isfinite(gz)) or np.linalg.cond(gz) > 1e14:
                raise SimulationError(
                    f"linearize(): the algebraic equations are singular at the point "
                    f"{_point(cm.states, x0)}, {_point(cm.algebraic, z0)} (their Jacobian "
                    f"with respect to {', '.join(cm.algebraic[:6])} has condition number "
                    f"{np.linalg.cond(gz):.3g}), so the algebraic variables cannot be "
                    f"eliminated; linearize at another operating point")
            dz_dx = -np.linalg.solve(gz, gx)
            dz_du = -np.linalg.solve(gz, gu)
            A, B = fx + fz @ dz_dx, fu + fz @ dz_du
            C, D = hx + hz @ dz_dx, hu + hz @ dz_du
        else:
            A, B, C, D = fx, fu, hx, hu
        return A, B[:, columns], C, D[:, columns], y0
    A, B, C, D, y0 = state_space(u0)
    if getattr(cm, "events", None) is not None:
        _warn_if_on_a_switch(cm, x0, z0, u0, p, t, state_space, (A, B, C, D))
    for name, matrix, labels in (("A", A, [f"der({s})" for s in cm.states]),
                                 ("B", B, [f"der({s})" for s in cm.states]),
                                 ("C", C, chosen_outputs), ("D", D, chosen_outputs)):
        if not np.all(np.isfinite(matrix)):
            row = int(np.argmin(np.all(np.isfinite(matrix), axis=1)))
            raise SimulationError(
                f"linearize(): the Jacobian {name} is not finite in the row of {labels[row]} "
                f"at this point (a division by zero or a function outside its domain there); "
                f"linearize at another operating point")
    return LinearSystem(A, B, C.reshape(len(rows), len(cm.states)),
                        D.reshape(len(rows), len(columns)), list(cm.states), chosen_inputs,
                        chosen_outputs, np.asarray(x0, dtype=float),
                        np.asarray(u0[:len(cm.inputs)], dtype=float)[columns], float(t),
                        np.asarray(z0, dtype=float).reshape(-1), list(cm.algebraic),
                        y0.reshape(-1)[:len(rows)].astype(float))


#: A relation's switch is at the operating point where its crossing function is within
#: this fraction of the size of its sides (plus this much absolutely) of zero.
ON_SWITCH = 1e-9


def _warn_if_on_a_switch(cm, x, z, u, p, t, state_space, matrices):
    """Warn where the operating point lies on the switch of a relation (a friction element
    at rest, a diode at 0 V) and the other side's branch gives other matrices: the model is
    not differentiable there, and the linearization is the branch in force."""
    lay = cm.events
    if not len(lay.relation_slots):
        return
    values = np.array(cm.event_values(x, z, u, p, t)).reshape(-1)
    crossings = values[lay.ranges["crossings"]]
    scales = values[lay.ranges["scales"]] if "scales" in lay.ranges else 0.0 * crossings
    for k in np.flatnonzero(np.abs(crossings) <= ON_SWITCH * (np.abs(scales) + 1e-3)):
        flipped = np.array(u, dtype=float)
        slot = lay.relation_slots[k]
        flipped[slot] = 1.0 - flipped[slot]
        try:
            other = state_space(flipped)[:4]
        except SimulationError:
            other = None
        differing = [] if other is None else [
            (name, a, b) for name, a, b in zip("ABCD", matrices, other)
            if not np.allclose(a, b, rtol=1e-9, atol=1e-12)]
        if other is not None and not differing:
            continue
        shown = ""
        if differing:
            name, a, b = differing[0]
            i, j = np.unravel_index(np.argmax(np.abs(a - b)), a.shape)
            shown = f" ({name}[{i}, {j}] = {a[i, j]:.6g} against {b[i, j]:.6g})"
        relation = lay.relation_text(k)
        warnings.warn(SwitchPointWarning(
            f"linearize(): the operating point lies on the switch of the relation {relation}: "
            f"its crossing function is {crossings[k]:.3g} there, and the model is not "
            f"differentiable. The matrices are those of the branch in force (the relation "
            f"{'true' if u[slot] else 'false'}); the other side's differ{shown}. Linearize a "
            f"little to one side of the switch for the branch wanted"),
            stacklevel=user_stacklevel())


#: How often the way from the initialized states to the operating point may be halved
#: while the algebraic variables are followed along it (:func:`_followed`).
CONTINUATION_DEPTH = 10


def _followed(cm, x, u, p, t, start):
    """The algebraic variables consistent with the states ``x``, followed by Newton's method
    along the straight line from the initialized point ``start``: on a kinematic loop, the
    assembly a motion from the initialized model reaches (Newton straight from the start
    values, or from the initialized ones, can land on the mirror-image assembly: a spatial
    four-bar's rocker at -psi). Where the path fails (a singular position on the way), Newton
    from the start values."""
    solve = cm.explicit_ode(guess=True)

    def at(x_to, z_from):
        return np.array(solve(x_to, u, p, t, z_from)[1]).reshape(-1)

    def follow(x_from, z_from, x_to, depth):
        # one step, accepted where two half steps land on the same solution and the
        # solution bends little between them (a jump to another branch on the way does)
        whole = at(x_to, z_from)
        middle = 0.5 * (x_from + x_to)
        z_middle = at(middle, z_from)
        halves = at(x_to, z_middle)
        size = 1e-8 * (1.0 + np.max(np.abs(halves), initial=0.0))
        bend = np.max(np.abs(halves - 2 * z_middle + z_from), initial=0.0)
        change = np.max(np.abs(halves - z_from), initial=0.0)
        if np.max(np.abs(whole - halves), initial=0.0) <= size and bend <= 0.25 * change + size:
            return halves
        if depth == 0:
            raise RuntimeError("no agreement")
        return follow(middle, follow(x_from, z_from, middle, depth - 1), x_to, depth - 1)

    try:
        return follow(np.ravel(start[0]), np.ravel(start[1]), np.asarray(x, dtype=float),
                      CONTINUATION_DEPTH)
    except RuntimeError:
        pass
    try:
        return np.array(solve(x, u, p, t, cm.z_start)[1]).reshape(-1)
    except RuntimeError:
        raise SimulationError(
            f"linearize(): no algebraic variables {', '.join(cm.algebraic[:6])} solve the "
            f"model at x = {x.tolist()}, neither followed from the initialized model nor "
            f"from their start values; give z") from None


def _solved_from(cm, x, u, p, t, guess):
    """The algebraic variables that solve the model at ``x``, by Newton's method from the
    ``guess`` given as ``z`` (which assembly of a loop, which root of a nonlinear
    element). A ``z`` that does not solve the equations was taken as it was: the four-bar's
    A came out with the wrong sign of its stiffness, at a point that is no assembly."""
    solve = cm.explicit_ode(guess=True)
    try:
        found = np.array(solve(x, u, p, t, guess)[1], dtype=float).reshape(-1)
    except RuntimeError:
        found = None
    if found is not None and np.all(np.isfinite(found)):
        residuals = np.array(cm.alg(x, found, u, p, t), dtype=float).reshape(-1)
        if np.max(np.abs(residuals), initial=0.0) <= 1e-8 * (
                1.0 + np.max(np.abs(found), initial=0.0)):
            return found
    raise SimulationError(
        f"linearize(): no algebraic variables {', '.join(cm.algebraic[:6])} solve the model "
        f"at x = {np.asarray(x).tolist()} from the z given ({np.asarray(guess).tolist()}, "
        f"taken as Newton's start); give z nearer a solution, or leave it out (then they "
        f"are followed from the initialized model)")


def _assembled(cm, params, inputs, t):
    """The initialized states and algebraic variables (consistent: a loop assembled as a
    simulation starts), or the start values if the model does not initialize; kept per
    parameters, inputs and time (a loop of linearizations at one setting solves it once)."""
    cache = workspace(cm, "linearize")
    key = (cm.parameter_vector(params).tobytes(), tuple(sorted((inputs or {}).items())),
           float(t))
    if key not in cache:
        try:
            point = initial_values(cm, params=params, inputs=inputs, t_start=t)
        except ModelError:
            point = cm.start, cm.z_start
        remember(cache, key, point)
    return cache[key]


def _settled_steady_state(cm, u, p, t, start):
    """:func:`_steady_state` with the relations and discretely defined variables of a
    model with events as they are at the steady state (an elastic stop it rests on pushes
    back): solved in one set of branches, the relations evaluated at the point found, and
    solved again until they settle. Returns ``x, z, u``."""
    x0, z0 = _steady_state(cm, u, p, t, start)
    if getattr(cm, "events", None) is None:
        return x0, z0, u
    from .event_layout import MAX_EVENT_ITERATIONS, relations_at
    for _ in range(MAX_EVENT_ITERATIONS):
        settled = relations_at(cm, x0, z0, u, p, t)
        if np.array_equal(settled, u):
            return x0, z0, u
        u = settled
        x0, z0 = _steady_state(cm, u, p, t, (x0, z0))
    raise SimulationError(
        "linearize(steady_state=True): the relations do not settle at a steady state "
        "(in each set of branches the steady state lies where another holds: it sits where "
        "a relation switches); give the operating point as x")


def _steady_state(cm, u, p, t, start):
    """States and algebraic variables with ``ẋ = 0`` and ``g = 0`` at inputs ``u`` (Newton
    from ``start``, the initialized point; fixed start values do not bind here: a steady
    state is where the model rests, wherever it was started). A state no equation depends
    on (a free angle or position: a cyclic coordinate) keeps its value at ``start`` and its
    own ``ẋ = 0`` is dropped: a speed-controlled drive has no rest point, but a steady
    motion, at which it is linearized as Modelica tools trim such models."""
    n_x = len(cm.states)
    x_start, z_start = np.ravel(start[0]).astype(float), np.ravel(start[1]).astype(float)
    try:
        g, solvers, held = _steady_state_solvers(cm)
    except SimulationError as exc:
        rows = getattr(exc, "rows_without_unknowns", None)
        if rows:
            _raise_if_never_at_rest(cm, exc, rows, x_start, z_start, u, p, t)
        raise
    moving = np.setdiff1d(np.arange(n_x), held)
    if not len(moving) and not len(z_start):
        return x_start, z_start  # every state held: nothing to solve (der(x) = u)
    guess = np.concatenate([x_start[moving], z_start])
    known = np.concatenate([x_start[held], u, p, [t]])
    for solver in solvers:
        try:
            with casadi_lines_dropped():
                solution = np.array(solver(guess, known)).reshape(-1)
        except RuntimeError:
            continue
        left = np.array(g(solution, known)).reshape(-1)
        if np.all(np.isfinite(solution)) and np.max(np.abs(left), initial=0.0) <= 1e-8:
            break
    else:
        raise SimulationError(
            "linearize(steady_state=True): no steady state (der(x) = 0) found near the "
            "initialized point; give the operating point as x, or start values nearer one")
    x0 = x_start.copy()
    x0[moving] = solution[:len(moving)]
    return x0, solution[len(moving):]


def _raise_if_never_at_rest(cm, exc, rows, x_start, z_start, u, p, t):
    """der(x) rows that read no unknown are what they are at every candidate point: if one
    is not 0 there is no steady state (a torque nothing balances), and that is the error;
    if all are 0 the steady state is merely not unique (``exc`` stands)."""
    held = exc.held
    moving = np.setdiff1d(np.arange(len(cm.states)), held)
    guess = np.concatenate([x_start[moving], z_start])
    known = np.concatenate([x_start[held], u, p, [t]])
    values = np.array(exc.steady_residual(guess, known), dtype=float).reshape(-1)[rows]
    shown = rates_not_at_rest([cm.states[moving[k]] for k in rows], values,
                              1e-12 * (1.0 + np.max(np.abs(known), initial=0.0)))
    if shown:
        raise SimulationError(
            f"linearize(steady_state=True): there is no steady state: {shown} whatever the "
            f"states that can change (it depends only on inputs, parameters, time and states "
            f"nothing depends on): a force or torque nothing balances, or a flow nothing "
            f"drains. Give the operating point as x, or add what balances it") from None


def _steady_state_solvers(cm):
    """The steady-state residual ``(x moving, z; x held, u, p, t) -> (ẋ moving, g)``, its
    rootfinders (Newton first, then KINSOL's line search where full Newton steps overshoot:
    a mechanism started away from its rest position) and the held states' indices (see
    :func:`_steady_state`), built once per compiled model and thread (a loop of
    linearizations at steady states reuses them)."""
    cache = workspace(cm, "linearize")
    if "steady_state" not in cache:
        X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
        n_x = len(cm.states)
        ode, alg = cm.ode(X, Z, U, P, TIME), cm.alg(X, Z, U, P, TIME)
        pattern = ca.jacobian(ca.vertcat(ode, alg), X).sparsity()
        used = set(pattern.get_col())
        held = [i for i in range(n_x) if i not in used]
        moving = [i for i in range(n_x) if i in used]
        w = ca.vertcat(*[X[i] for i in moving], Z)  # (X[[]] is 1-by-1, not empty)
        residual = ca.vertcat(*[ode[i] for i in moving], alg)
        g = ca.Function("steady", [w, ca.vertcat(*[X[i] for i in held], U, P, TIME)],
                        [residual])
        if w.numel() == 0:  # every state held (see _steady_state)
            remember(cache, "steady_state", (g, [], np.array(held, dtype=int)))
            return cache["steady_state"]
        slopes = ca.jacobian(residual, w).sparsity()
        rank = ca.sprank(slopes)
        if rank < w.numel():
            names = [cm.states[i] for i in moving] + list(cm.algebraic)
            read = set(slopes.row())
            undetermined = SimulationError(
                f"linearize(steady_state=True): der(x) = 0 and the algebraic equations do "
                f"not determine the steady state (structural rank {rank} for {w.numel()} "
                f"unknowns: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''})"
                + (f"; {', '.join(cm.states[i] for i in held)} (on which nothing depends) "
                   f"kept their values" if held else "")
                + "; give the operating point as x")
            # rows of der(x) that read no unknown: their values decide (see _steady_state)
            undetermined.rows_without_unknowns = [k for k in range(len(moving))
                                                  if k not in read]
            undetermined.steady_residual, undetermined.held = g, held
            raise undetermined
        quiet = {"error_on_fail": False, "show_eval_warnings": False}
        solvers = [ca.rootfinder("steady_state", "newton", g, quiet),
                   ca.rootfinder("steady_state", "kinsol", g,
                                 {**quiet, "disable_internal_warnings": True,
                                  "strategy": "linesearch"}),
                   # (a Jacobian singular everywhere: quaternions)
                   MinimumNormNewton(g, [cm.states[i] for i in moving] + list(cm.algebraic),
                                     "linearize(steady_state=True)")]
        remember(cache, "steady_state", (g, solvers, np.array(held, dtype=int)))
    return cache["steady_state"]


def _point(names, values, shown=6) -> str:
    """``a = 1, b = 2, ...`` for a message."""
    pairs = [f"{n} = {float(v):.6g}" for n, v in zip(names, np.ravel(values))]
    return ", ".join(pairs[:shown]) + (" ..." if len(pairs) > shown else "")


def _names(given, known, what, parameter_names=()) -> list[str]:
    """The names ``given`` for ``what``, a vector's declared name (``u``) standing for its
    entries (``u[0]``, ``u[1]``, ...)."""
    if isinstance(given, str):
        given = [given]
    index = set(known)
    spread = []
    for name in given:
        entries = [] if name in index else [n for _, n in entries_named(name, known)]
        spread += entries or [name]
    given = spread
    unknown = [n for n in given if n not in index]
    if unknown:
        parameters = [n for n in unknown if n in parameter_names]
        hint = (f" ({', '.join(map(repr, parameters[:5]))}: a parameter, constant in the "
                f"linearization)" if parameters else "")
        raise SimulationError(f"linearize({what}=...): the model has no "
                              f"{'input' if what == 'inputs' else 'variable'} "
                              f"{', '.join(map(repr, unknown[:5]))}{hint}")
    twice = [n for n in dict.fromkeys(given) if given.count(n) > 1]
    if twice and what == "inputs":  # (an output twice is two equal rows: harmless)
        raise SimulationError(f"linearize(inputs=...) names {', '.join(map(repr, twice[:5]))} "
                              f"twice: B and D would hold equal columns; name each once")
    return list(given)
