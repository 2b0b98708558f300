"""Consistent initialization: its own solved system.

Unknowns: the states ``x`` and the algebraic variables ``z``. Equations: every hard initial
condition (a variable declared or modified with ``fixed=True``: ``y_k(x, z) = start_k``), the
user's initial equations, optionally steady state (``ẋ = 0``), and ``g(x, z) = 0``. When the
conditions do not determine every state, the states left over (found by a maximum matching
of the conditions and ``g`` to ``(x, z)``) keep their start values, as Modelica tools do.
A condition that involves neither ``x`` nor ``z`` is checked on its own. Guesses (start values
with ``fixed=False``) are the Newton iterates' starting point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from . import graph
from .core import time as TIME
from .errors import InitializationError
from .flat import stacked
from .inputs import input_function
from .minimum_norm import MinimumNormNewton
from .quiet import casadi_lines_dropped
from .initial_conditions import hard_conditions as _conditions
from .initial_conditions import incidence as _incidence
from .initial_conditions import matched_conditions as _matched_conditions
from .workspace import remember, workspace


def initial_values(cm, *, params=None, inputs=None, t_start: float = 0.0, steady_state=False,
                   x_guess=None, discrete=None):
    """Solve for consistent initial states ``x0`` and algebraic variables ``z0``.

    ``steady_state=True`` replaces missing conditions by ``ẋ = 0`` (all of them when no
    variable is fixed). Raises :class:`InitializationError` naming the conditions that cannot
    be met.

    Example::

        x0, z0 = mb.compile(model).initialize(steady_state=True)
    """
    if discrete is None and getattr(cm, "events", None) is not None:
        return _with_settled_relations(cm, params, inputs, t_start, steady_state, x_guess)
    p = cm.parameter_vector(params)
    u = _input_values(cm, inputs, t_start)
    if discrete is not None:  # the values of relations and discrete variables (events)
        u[len(cm.inputs):] = discrete
    n_x, n_z = cm.symbols.x.numel(), cm.symbols.z.numel()
    explicit = _fixed_states(cm)
    if explicit is None:  # (else every condition is on a state: each involves one)
        _check_determined_conditions(cm, p, u, t_start)
    if n_x + n_z == 0:
        return np.zeros(0), np.zeros(0)
    x_start, z_start = cm.starts(p)
    if x_guess is not None:
        x_start = np.asarray(x_guess, dtype=float).copy()
    if not steady_state:
        if explicit is not None:
            for i, value in explicit.items():
                x_start[i] = value
            return x_start, np.zeros(0)
    cache = workspace(cm, "initialization")
    problem = cache.get(bool(steady_state))
    if problem is None:
        try:
            built_problem = initialization_problem(cm, bool(steady_state))
        except InitializationError as exc:
            # over-determined: say whether the algebraic equations are dependent at the
            # start point (then they leave more freedom than their count)
            raise InitializationError(
                str(exc) + _dependent_equations(cm, x_start, u, p, t_start)) from None
        problem = remember(cache, bool(steady_state), built_problem)
    w0 = np.concatenate([x_start, z_start])
    known = np.concatenate([p, u, [t_start], x_start])
    F, labels_all = problem.residual, problem.labels
    sol = None
    last_error = None
    for rf in problem.solvers:
        try:
            with casadi_lines_dropped():
                cand = np.array(rf(w0, known)).reshape(-1)
        except RuntimeError as exc:  # singular Jacobian and the like
            last_error = exc
            continue
        res = np.array(F(cand, known)).reshape(-1)
        if np.all(np.isfinite(res)) and np.max(np.abs(res), initial=0.0) < 1e-8 * (
                1 + np.max(np.abs(cand), initial=0.0)) and not _ran_away(rf, cand, res, w0,
                                                                         F, known):
            sol = cand
            break
        last_error = res
    if sol is None:
        contradiction = _contradictory_conditions(cm, F, labels_all, w0, known, x_start)
        if contradiction:
            raise InitializationError(contradiction)
        res = np.array(F(w0, known)).reshape(-1)
        worst = np.argsort(-np.abs(np.nan_to_num(res, nan=np.inf)))[:5]
        detail = "; ".join(f"{_label(cm, labels_all[k], x_start)} (residual {res[k]:.3g} "
                           f"at the start guess)"
                           for k in worst)
        loop = ("" if "the loop closed by connect(" not in detail else
                " A kinematic loop does not close: check that its geometry can close (link "
                "lengths, positions of its anchors) and give the loop's dependent "
                "coordinates guesses near a closed configuration.")
        loose = _unconnected_in(cm, detail)
        raise InitializationError(
            "initialization failed: no consistent initial state satisfies the initial "
            f"conditions. Largest residuals: {detail}.{loop}{loose} Check the fixed start "
            f"values for "
            f"conflicts, or give better guesses (Guess(...)) for the variables involved — a "
            f"guess where an equation has zero slope (e.g. y = 0 for x**2 + y**2 = L**2) "
            f"stops Newton's method."
            + (f" (solver: {_first_line(last_error)})" if isinstance(last_error, Exception)
               else ""))
    if problem.unmet:
        _check_at_rest(cm, problem, sol, known)
    return sol[:n_x], sol[n_x:]


def _with_settled_relations(cm, params, inputs, t_start, steady_state, x_guess):
    """:func:`initialize` of a model with events: the relations and discretely defined
    variables as they are at the solution, not at their start values (an elastic stop
    touched at the steady state exerts its force there). The continuous initialization
    and the relations' values alternate until these settle, as a simulation's start
    does (without its when clauses)."""
    from .event_layout import MAX_EVENT_ITERATIONS, relations_at
    p = cm.parameter_vector(params)
    u = _input_values(cm, inputs, t_start)
    n_ext = len(cm.inputs)
    for _ in range(MAX_EVENT_ITERATIONS):
        x, z = initial_values(cm, params=params, inputs=inputs, t_start=t_start,
                          steady_state=steady_state, x_guess=x_guess, discrete=u[n_ext:])
        settled = relations_at(cm, x, z, u, p, t_start)
        if np.array_equal(settled, u):
            return x, z
        u = settled
    raise InitializationError(
        "initialization: the relations and discrete variables do not settle (each "
        "continuous initialization switches them again: the solution sits where a "
        "relation switches); give start values on one side of it")


#: A solver that did not converge has run away when its answer is this many times larger
#: than the start guess and its residuals fell by less than this factor.
RUNAWAY = 1e6


def _ran_away(solver, candidate, residuals, guess, F, known) -> bool:
    """Whether ``solver`` gave up far from the guess without solving anything. The
    residuals are compared with the size of the answer (a pressure of 1e7 Pa is solved to
    1e-9 Pa at best, and Newton then reports no convergence), so an answer that diverged
    (a loop's angles at 1e14 rad, where sin and cos have no digits left) would pass as
    solved, its residuals 0.05 against a scale of 1e14. (Not the parameters' sizes: a
    World's gravity constant is 4e14.)"""
    if not isinstance(solver, ca.Function):
        return False   # (a solver of our own: it raises where it fails)
    if solver.stats().get("success", False):
        return False
    if np.max(np.abs(candidate), initial=0.0) <= RUNAWAY * (
            1.0 + np.max(np.abs(guess), initial=0.0)):
        return False
    at_guess = np.max(np.abs(np.array(F(guess, known), dtype=float)), initial=0.0)
    return not np.max(np.abs(residuals), initial=0.0) <= at_guess / RUNAWAY


def _check_at_rest(cm, problem, sol, known):
    """Steady state: the states whose ``der(x) = 0`` no free state could be solved from
    must be at rest on the solution, or there is no steady state (the docs promise an
    error, not a state that moves)."""
    rates = np.array(problem.unmet_rates(sol, known), dtype=float).reshape(-1)
    shown = rates_not_at_rest([cm.states[k] for k in problem.unmet], rates,
                              1e-8 * (1.0 + np.max(np.abs(sol), initial=0.0)))
    if shown:
        raise InitializationError(
            f"steady state: there is none with these conditions: {shown} whatever values "
            f"the free states take (no start value left free changes it): the model does not "
            f"come to rest (a force or torque nothing balances). Give the states fixed start "
            f"values instead of steady_state=True, or add what balances it.")


def rates_not_at_rest(states, rates, bound) -> str:
    """``der(x) = value`` for the ``states`` whose ``rates`` exceed ``bound`` (the first five),
    or "": what a steady state that does not exist is shown by (initialization and
    :func:`mbmodel.linearize.linearize` alike)."""
    moving = [(name, r) for name, r in zip(states, rates) if not abs(r) <= bound]
    return ", ".join(f"der({name}) = {r:.6g}" for name, r in moving[:5])


def _unconnected_in(cm, text) -> str:
    """A sentence naming the unconnected connectors whose variables ``text`` (the worst
    residuals) shows: their flows are 0, which a force balance may not allow (a cylinder's
    rod with nothing on it carries no force, so its chamber pressure cannot be fixed)."""
    loose = getattr(getattr(cm, "flat", None), "unconnected_flows", None)
    if not loose:  # (none, or a model saved before they were kept)
        return ""
    shown = sorted(c for c in set(loose.values())
                   if re.search(rf"(?<![\w.]){re.escape(c)}\.", text))
    if not shown:
        return ""
    return (f" Not connected: {', '.join(repr(c) for c in shown[:5])}, so "
            f"{'its flow is' if len(shown) == 1 else 'their flows are'} 0; connect "
            f"{'it' if len(shown) == 1 else 'them'} if that is not meant.")


#: Largest initialization system whose Jacobian a failed initialization decomposes to
#: find contradictory linear conditions (a dense SVD).
CONTRADICTION_SIZE = 2000


def _contradictory_conditions(cm, F, labels, w0, known, x_start) -> str:
    """After a failed initialization: if the conditions are linear (their Jacobian depends
    on no unknown) and some combination of them has no unknown left but is not 0 (``x + y
    = 1`` and ``2 x + 2 y = 3``), the message naming them; no guess can help there. ""
    otherwise."""
    n = len(w0)
    if not n or n > CONTRADICTION_SIZE:
        return ""
    try:
        W = ca.SX.sym("w", n)
        K = ca.SX.sym("known", len(known))
        residual = F(W, K)
        slopes = ca.Function("slopes", [W, K], [ca.jacobian(residual, W), residual])
        if ca.depends_on(ca.jacobian(residual, W), W):
            return ""  # nonlinear (a kink of fabs or if_else too): the start may be the cause
        J0, r0 = (np.array(v, dtype=float) for v in slopes(w0, known))
    except (RuntimeError, NotImplementedError, TypeError):
        return ""
    r0 = r0.reshape(-1)
    if not (np.all(np.isfinite(J0)) and np.all(np.isfinite(r0))):
        return ""
    rows = np.abs(J0).max(axis=1)
    scale = np.where(rows > 0, rows, 1.0)
    left, sigma, _ = np.linalg.svd(J0 / scale[:, None])
    rank = int(np.sum(sigma > 1e-9 * max(sigma[0] if len(sigma) else 0.0, 1e-300)))
    if rank == J0.shape[0]:
        return ""
    nulls = left[:, rank:]
    offsets = nulls.T @ (r0 / scale)
    bad = np.flatnonzero(np.abs(offsets) > 1e-9 * (1.0 + np.abs(r0 / scale).max()))
    if not len(bad):
        return ""
    combination = nulls[:, bad[0]]
    involved = np.flatnonzero(np.abs(combination) > 1e-6)
    shown = "\n".join(f"  {_label(cm, labels[k], x_start)}" for k in involved[:10])
    return (f"initialization failed: these {len(involved)} conditions (initial equations, "
            f"fixed start values and the model's equations) are linearly dependent and "
            f"contradictory: combined they leave no unknown and reduce to 0 = c with c not "
            f"0, so no start value or guess can satisfy them:\n{shown}\nRemove or change "
            f"one of them.{_unconnected_in(cm, shown)}")


def _dependent_equations(cm, x, u, p, t) -> str:
    """A sentence on the algebraic equations if their Jacobian in the algebraic variables
    is rank-deficient at ``(x, z_start)``: they are dependent there (a redundant
    constraint), so the model has more freedom than the structural count, which over-
    determined its initial conditions, gives; "" if they are independent."""
    X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
    n_z = Z.numel()
    if not n_z:
        return ""
    slopes = ca.Function("alg_slopes", [X, Z, U, P, TIME],
                         [ca.jacobian(cm.alg(X, Z, U, P, TIME), Z)])
    J = np.array(slopes(x, cm.z_start, u, p, t))
    if not np.all(np.isfinite(J)):
        return ""
    # rows and columns scaled to unit size: an equation written in small units (a leakage
    # of 1e-14) is not a dependent one
    rows = np.abs(J).max(axis=1)
    J = J / np.where(rows > 0, rows, 1.0)[:, None]
    columns = np.abs(J).max(axis=0)
    J = J / np.where(columns > 0, columns, 1.0)[None, :]
    left, sigma, _ = np.linalg.svd(J)
    rank = int(np.sum(sigma > 1e-9 * max(sigma[0], 1e-300))) if len(sigma) else 0
    if rank == n_z:
        return ""
    nulls = left[:, rank:]
    dependent = np.flatnonzero(np.abs(nulls).max(axis=1) > 1e-6)
    quoted = "\n".join(f"  {cm.residual_descriptions[k]}" for k in dependent[:8])
    return (f" The model's equations are dependent at the start point, though: those solved "
            f"for its algebraic variables ({', '.join(cm.algebraic[:8])}"
            f"{', ...' if n_z > 8 else ''}) have rank {rank}, not {n_z}: {n_z - rank} of "
            f"them repeat{'s' if n_z - rank == 1 else ''} what the others say there, and the "
            f"model has more freedom than its equations count (which is why the start values "
            f"seem too many). A redundant constraint is the usual cause: a loop closed by "
            f"more constraints than it has independent ones (a SphericalConstraint, or a "
            f"rigid connection, closing a planar loop: close it with one revolute joint, "
            f"prescribed=False). The dependent equations:\n{quoted}")


def _fixed_states(cm) -> dict | None:
    """The common case needs no solver: no algebraic variables, no initial equations, and
    every fixed start value is on a state (or on an alias of one). Returns state index ->
    initial value, or None when the general system must be solved."""
    if cm.symbols.z.numel() or cm.initial_equation_descriptions:
        return None
    state_index = {name: i for i, name in enumerate(cm.states)}
    values = {}
    for fixed_name, start in cm.fixed_starts:
        name, sign, offset = cm.alias_root(fixed_name)  # fixed = sign * name + offset
        if name is None:
            return None
        i = state_index.get(name)
        if i is None or i in values or sign == 0.0:
            return None  # a condition on a non-state, or two on one state: solve
        values[i] = (start - offset) / sign
    return values


@dataclass
class _Problem:
    """The initialization system of a compiled model, built once per thread: residuals of
    ``w = (x, z)`` given ``known = (p, u, t, x_start)``, their labels, and the solvers."""

    residual: ca.Function
    labels: list  # text, or the index of a state held at its start value
    solvers: list[ca.Function]
    #: steady state: the states whose der(x) = 0 no free state could be solved from, and
    #: their derivatives as a function of (w, known), checked on the solution
    unmet: list = field(default_factory=list)
    unmet_rates: ca.Function | None = None


def _label(cm, label, x_start) -> str:
    if isinstance(label, str):
        return label
    return f"{cm.states[label]} = {x_start[label]:g} (start value of a state)"


def initialization_problem(cm, steady_state: bool,
                           fixed_states_from_start: bool = False) -> _Problem:
    """The initialization problem of ``cm`` (its residual, unknowns and guesses; with
    ``steady_state`` the state derivatives held at 0). ``fixed_states_from_start``: a
    fixed start on a state (or an alias of one) holds it at its entry of ``x_start``
    rather than at the compiled value (an FMU's importer sets the states' start values).

    Example: ``residual = initialization_problem(cm, False).residual``"""
    X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
    n_x, n_z = X.numel(), Z.numel()
    XS = ca.SX.sym("x_start", n_x)  # start values of the states (guesses may change per run)
    # (conditions that involve no state and no algebraic variable are checked on their own,
    # see _check_determined_conditions)
    all_conds, all_labels, all_fixed, unknown = _conditions(cm)
    if fixed_states_from_start:
        state_index = {name: i for i, name in enumerate(cm.states)}
        all_conds = list(all_conds)
        for k, fixed in enumerate(all_fixed):
            root = cm.alias_root(fixed[0])[0] if fixed is not None else None
            if root in state_index:
                i = state_index[root]
                all_conds[k] = X[i] - XS[i]
    conds = [c for c, row in zip(all_conds, unknown) if row]
    labels = [text for text, row in zip(all_labels, unknown) if row]
    inc = [row for row in unknown if row]  # over (x, z)
    xdot = cm.ode(X, Z, U, P, TIME)
    steady = []
    if steady_state:
        steady = [xdot[k] for k in range(n_x)]
    g = cm.alg(X, Z, U, P, TIME)
    g_inc, eq_m, var_m = _matched_conditions(cm, g, inc)
    over = [k for k, m in enumerate(eq_m) if m == graph.UNMATCHED]
    if over:
        others = [labels[k] for k, m in enumerate(eq_m) if m != graph.UNMATCHED]
        raise InitializationError(
            "the initial conditions over-determine the model: "
            + "; ".join(labels[k] for k in over[:8])
            + (" cannot be met independently of " + "; ".join(others[:8]) if others else "")
            + ". Make one of these start values a guess (fixed=False) instead.")
    free_states = [i for i in range(n_x) if var_m[i] == graph.UNMATCHED]
    extra, extra_labels = [], []
    unmet = []   # der(x_k) = 0 of a free state that no free state could be solved from
    if steady_state:
        # Steady state fills the states left free by the fixed conditions.
        st_inc = _incidence(ca.vertcat(*steady), X) if steady else []
        free = set(free_states)
        # A free state nothing depends on (a free angle: a cyclic coordinate) may move at a
        # steady rate (a drive at its speed); any other must come to rest. So the rows
        # der(x) = 0 of states something reads are matched first, and those of cyclic
        # coordinates are the ones left over (der(phi) = w and der(w) = f(w) both need w:
        # by declaration order der(phi) = 0 took it, and w = 0 was a "steady state" that
        # accelerates). A row left over of a state something reads is checked on the
        # solution (a mass under a constant force has no steady state).
        read = {v for row in st_inc + g_inc for v in row}
        order = sorted(range(len(st_inc)), key=lambda k: (k not in read, k))
        m_sorted, _ = graph.maximum_matching(
            [[v for v in st_inc[k] if v in free] for k in order], n_x)
        m_eq = [graph.UNMATCHED] * len(st_inc)
        for k, v in zip(order, m_sorted):
            m_eq[k] = v
        used = set()
        for k, v in enumerate(m_eq):
            if v != graph.UNMATCHED:
                extra.append(steady[k])
                extra_labels.append(f"der({cm.states[k]}) = 0 (steady state)")
                used.add(v)
        unmet = [k for k, v in enumerate(m_eq)
                 if v == graph.UNMATCHED and k in free and k in read]
        free_states = [i for i in free_states if i not in used]
    for i in free_states:
        extra.append(X[i] - XS[i])
        extra_labels.append(i)  # worded with the start value of the run (see _label)
    w = ca.vertcat(X, Z)
    residual = ca.vertcat(*(conds + extra + [g[k] for k in range(n_z)]))
    labels_all = labels + extra_labels + [f"equation {d}" for d in cm.residual_descriptions]
    if residual.numel() != n_x + n_z:
        raise InitializationError(
            f"initialization has {residual.numel()} equations for {n_x + n_z} unknowns")
    known = ca.vertcat(P, U, TIME, XS)
    function = ca.Function("init_residual", [w, known], [residual])
    # Newton first (fast, quiet); KINSOL's line search rescues non-smooth cases (limiters).
    solvers = []
    # A failure is explained by InitializationError; casadi's own lines on stderr (NaN in
    # an evaluation, KINSOL's flags) would only come before it, raw.
    quiet = {"error_on_fail": False, "show_eval_warnings": False}
    for solver, opts in (("newton", {**quiet, "max_iter": 100, "abstol": 1e-12,
                                     "abstolStep": 1e-14}),
                         ("kinsol", {**quiet, "abstol": 1e-12,
                                     "disable_internal_warnings": True})):
        solvers.append(ca.rootfinder("init_solver", solver, function, opts))
    if steady_state:
        # a Jacobian singular everywhere (steady state of quaternion states): least squares
        solvers.append(MinimumNormNewton(function, list(cm.states) + list(cm.algebraic),
                                         "initialization (steady state)"))
    rates = ca.Function("unmet_rates", [w, known], [ca.vertcat(*(xdot[k] for k in unmet))])
    return _Problem(function, labels_all, solvers, unmet, rates)


def _check_determined_conditions(cm, p, u, t_start):
    """Raise where a hard initial condition involves no state and no algebraic variable
    (the model's equations give the variable from parameters, inputs and time alone) and
    does not hold: nothing the initialization chooses can meet it, and leaving it out would
    answer with another value than the one fixed, silently. One that holds is met."""
    cache = workspace(cm, "initialization")
    checks = cache.get("determined")
    if checks is None:
        X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
        conds, _, fixed, unknown = _conditions(cm)
        chosen = [k for k, row in enumerate(unknown) if not row]
        function = None
        if chosen:  # (x and z appear in none of them: zeros only make that explicit)
            values = ca.substitute(stacked([conds[k] for k in chosen]), ca.vertcat(X, Z),
                                   ca.DM.zeros(X.numel() + Z.numel()))
            function = ca.Function("determined", [P, U, TIME], [values])
        checks = remember(cache, "determined", (function, [fixed[k] for k in chosen], chosen))
    function, fixed, indices = checks
    if function is None:
        return
    residuals = np.array(function(p, u, t_start)).reshape(-1)
    for r, what, k in zip(residuals, fixed, indices):
        if np.isfinite(r) and abs(r) <= 1e-8 * (1.0 + (abs(what[1]) if what else 0.0)):
            continue
        if what is not None:
            name, start = what
            raise InitializationError(
                f"the start value of '{name}' is fixed at {start:g}, but the model's "
                f"equations give {name} = {start + r:g} at t = {t_start:g} from parameters, "
                f"inputs and time alone: no state can be chosen to meet it. Remove "
                f"fixed=True from '{name}' (or give it as a guess, Guess(...)), or change "
                f"what sets it.")
        description = cm.initial_equation_descriptions[k - len(cm.fixed_starts)]
        raise InitializationError(
            f"initial equation '{description}' does not hold at t = {t_start:g} (residual "
            f"{r:g}) and involves no state or algebraic variable that could be chosen to "
            f"meet it; remove it or change what it compares.")


def _first_line(exc) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[-1][:200] if lines else type(exc).__name__


def _input_values(cm, inputs, t):
    return input_function(cm, inputs)(t)
