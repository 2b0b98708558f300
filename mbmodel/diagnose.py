"""Where a run went non-finite: the time, the first variable and the equations behind it.

Runs only after a failure, so it favours a clear answer over speed. The model's variables
are evaluated at the failing point and the sorted blocks are walked in evaluation order: the
first block whose variables are not finite, while everything it reads is, is the culprit — a
division by zero, a function outside its domain, or a linear block that is singular there
(its pivoted solution is NaN by construction, :mod:`mbmodel.linsolve`).

When the integrator stops without having reported the non-finite point, the failing
interval is integrated again with scipy's BDF, which calls the right-hand side from Python:
the first call that returns a non-finite derivative gives the point.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

_KIND_TEXT = {
    "explicit": "gives a non-finite value although every value it uses is finite (a "
                "division by zero, or a function outside its domain such as sqrt or log of "
                "a negative number)",
    "linear": "is a linear system that is singular at this point (no unique solution: "
              "its relative pivot fell below 1e-13)",
    "nonlinear": "has no finite solution here",
}


@dataclass
class NonFinite:
    """The first non-finite value of a run: at ``time``, ``variable``; ``explanation`` names
    the block of equations that produced it and why."""

    time: float
    variable: str
    explanation: str


def explain_point(cm, t, x, z, u, p) -> NonFinite | None:
    """The first non-finite variable at ``(t, x, z, u, p)`` in evaluation order, with the
    equations that computed it; None if every variable is finite.

    Example::

        found = explain_point(cm, 1.0, x, z, u, p)
        if found:
            print(found.variable, found.explanation)
    """
    system = cm.system
    states = [system.names[v] for v in system.states]
    for name, value in zip(states, np.asarray(x, dtype=float).reshape(-1)):
        if not np.isfinite(value):
            return NonFinite(float(t), name, f"the state {name} = {value} is itself not finite")
    values = np.array(cm.output_function(x, z, u, p, t)).reshape(-1)
    if np.all(np.isfinite(values)):
        return None
    index = cm.output_index
    for block in system.blocks:
        bad = [system.names[v] for v in block.variables
               if system.names[v] in index and not np.isfinite(values[index[system.names[v]]])]
        if not bad:
            continue
        what = "the equation" if len(block.equations) == 1 else (
            f"the block of {len(block.equations)} equations")
        names = ", ".join(system.names[v] for v in block.variables[:8])
        explanation = (f"{bad[0]} = {values[index[bad[0]]]}: {what} solved for {names} "
                       f"{_KIND_TEXT[block.kind]}:\n{_equations_text(system, block)}"
                       f"{_held_relations(system, block)}"
                       f"{_components_say(cm, system, block, bad[0])}")
        return NonFinite(float(t), bad[0], explanation)
    first = int(np.argmin(np.isfinite(values)))
    name = cm.output_names[first]
    return NonFinite(float(t), name, f"{name} = {values[first]}")


def locate_non_finite(cm, t0, t1, x, z, pu, rtol=1e-8, atol=1e-10) -> NonFinite | None:
    """Integrate from ``(t0, x)`` towards ``t1`` and return the first point where the
    model's variables stop being finite (None if the whole interval is finite). ``pu``:
    parameters then inputs, as the integrators take them."""
    from scipy.integrate import solve_ivp

    n_p = cm.symbols.p.numel()
    p, u = np.asarray(pu[:n_p]), np.asarray(pu[n_p:])
    z = np.asarray(z, dtype=float)
    found = explain_point(cm, t0, x, z, u, p)
    if found is not None or not len(x) or len(z):
        return found  # a DAE keeps its algebraic variables in the integrator: point only
    first, last = [], [(t0, np.asarray(x, dtype=float))]

    def rhs(t, state):
        xdot = np.array(cm.ode(state, z, u, p, t)).reshape(-1)
        if not np.all(np.isfinite(xdot)) and not first:
            first.append((t, state.copy()))
        elif t >= last[0][0]:
            last[0] = (t, state.copy())
        return np.where(np.isfinite(xdot), xdot, 0.0) if first else xdot

    def stop(t, state):
        return 0.0 if first else 1.0
    stop.terminal = True
    reached_end = False
    try:
        solution = solve_ivp(rhs, (t0, t1), np.asarray(x, dtype=float), method="BDF",
                             rtol=rtol, atol=atol, events=stop)
        reached_end = solution.status == 0
    except Exception:  # noqa: BLE001 - a diagnosis must never mask the original failure
        pass
    if first:
        t, state = first[0]
        return explain_point(cm, t, state, z, u, p)
    if reached_end:
        return None
    return _fastest(cm, *last[0], z, u, p)


def weakest_block(cm, times, xs, zs, u, p) -> str:
    """Which torn nonlinear block the integrator's Newton iteration was losing, from the
    points a failed run reached (``times``; states ``xs`` and algebraic variables ``zs`` by
    column): the block whose Jacobian in its iteration variables lost most of its smallest
    singular value between the first point and the last. Two solutions of a block meet where
    that value reaches zero, and past that point there may be none (``z**2 + 1 = x`` with
    ``x`` falling through 1). "" if the model has no such block or the points are not
    finite."""
    system = cm.system
    blocks, row = [], 0
    for block in system.blocks:
        if block.kind == "nonlinear":
            blocks.append((block, row, row + len(block.tear_vars)))
            row += len(block.tear_vars)
    if not blocks or xs.shape[1] < 2:
        return ""
    sym = cm.symbols
    jacobian = ca.Function("alg_z", [sym.x, sym.z, sym.u, sym.p, sym.t],
                           [ca.jacobian(cm.alg(sym.x, sym.z, sym.u, sym.p, sym.t), sym.z)])

    def smallest(j):
        J = np.array(jacobian(xs[:, j], zs[:, j], u, p, times[j]), dtype=float)
        if not np.all(np.isfinite(J)):
            return None
        return [np.linalg.svd(J[a:b, a:b], compute_uv=False).min() for _, a, b in blocks]
    first, last = smallest(0), smallest(xs.shape[1] - 1)
    if first is None or last is None:
        return ""
    ratios = [b / a if a > 0 else 1.0 for a, b in zip(first, last)]
    k = int(np.argmin(ratios))
    block = blocks[k][0]
    names = ", ".join(system.names[v] for v in block.tear_vars[:8])
    trend = (f"its Jacobian in {names} fell from {first[k]:.3g} at t = {times[0]:g} to "
             f"{last[k]:.3g} at t = {times[-1]:g} (smallest singular value): two of its "
             f"solutions may meet there and leave none past that point (a turning point of "
             f"the model's algebraic equations), or a variable leaves its domain"
             if ratios[k] < WEAKENED else
             f"it is the nearest to singular of the model's nonlinear blocks (its Jacobian in "
             f"{names}, smallest singular value {last[k]:.3g} at t = {times[-1]:g}, against "
             f"{first[k]:.3g} at t = {times[0]:g})")
    return (f" The integrator solves the torn nonlinear block below for {names} by Newton "
            f"iteration; {trend}:\n{_equations_text(system, block)}\n")


#: A nonlinear block is named as the likely cause of a failed run when its Jacobian's
#: smallest singular value fell below this fraction of its value at the run's start.
WEAKENED = 0.5


def _fastest(cm, t, x, z, u, p) -> NonFinite | None:
    """Where an integration stalled without a non-finite value: the state changing fastest
    relative to its size, and the equations that compute its derivative (a pole such as
    1/(1 - t), or a finite-time blow-up such as der(x) = x^2)."""
    system = cm.system
    xdot = np.array(cm.ode(x, z, u, p, t)).reshape(-1)
    if not len(xdot) or not np.all(np.isfinite(xdot)):
        return explain_point(cm, t, x, z, u, p)
    held = _held_at_switch(cm, t, x, z, u, p, xdot)
    i = int(np.argmax(np.abs(xdot) / (np.abs(x) + 1.0))) if held is None else held[0]
    state = system.names[system.states[i]]
    derivative = system.state_derivatives[i]
    shown = next((":\n" + _equations_text(system, block) for block in system.blocks
                  if derivative in block.variables), "")
    if held is not None:
        _, above, below = held
        return NonFinite(float(t), state, (
            f"the solution is held at a switch of its equations: der({state}) = {above:.6g} "
            f"just above {state} = {x[i]:.6g} and {below:.6g} just below, each side driving it "
            f"back (a sliding mode), which the integrator cannot step across. A comparison "
            f"under noEvent switches there unseen: written without noEvent, an event switches "
            f"it (and a run that switches back and forth stops as chattering); or model what "
            f"holds it there (hysteresis, a stiction state). Its derivative comes from"
            + (shown or " the model's equations")))
    return NonFinite(float(t), state, (
        f"the solution runs away: der({state}) = {xdot[i]:.6g} with {state} = {x[i]:.6g}, "
        f"the fastest change relative to its size (a pole — a division by a quantity going to "
        f"zero — or a finite-time blow-up such as der(x) = x^2); its derivative comes from"
        + (shown or " the model's equations")))


#: A state is held at a switch (:func:`_held_at_switch`) where its derivative, at one of
#: these distances on either side of it (relative to max(1, |x|)), points back towards it.
SWITCH_PROBES = 10.0 ** -np.arange(9, 2, -1)
#: States probed for a switch, the fastest relative to their size first.
SWITCH_PROBED_STATES = 50


def _held_at_switch(cm, t, x, z, u, p, xdot):
    """``(state index, derivative above, derivative below)`` of a state whose derivative
    changes sign across its value, pointing back towards it from either side (a sliding
    mode: ``der(x) = if_else(noEvent(x > 0), -1, 1)`` at x = 0), or None."""
    def derivatives(i, d):
        sides = []
        for sign in (1.0, -1.0):
            shifted = np.array(x, dtype=float)
            shifted[i] += sign * d
            sides.append(float(np.array(cm.ode(shifted, z, u, p, t)).reshape(-1)[i]))
        return np.array(sides)
    order = np.argsort(-np.abs(xdot) / (np.abs(x) + 1.0))[:SWITCH_PROBED_STATES]
    for i in order:
        # (the run stalls within its tolerance of the switch, not at it: probed ever further)
        for d in max(1.0, abs(x[i])) * SWITCH_PROBES:
            above, below = derivatives(i, d)
            if not above < 0 < below:
                continue
            # a switch: the same values further out; a pole der(x) = -1/x halves
            further = derivatives(i, 2 * d)
            if np.all(np.isfinite(further)) and np.allclose(further, [above, below],
                                                            rtol=0.1):
                return int(i), above, below
            break
    return None


def _components_say(cm, system, block, variable) -> str:
    """What the components the block's equations come from say about ``variable``
    (:meth:`mbmodel.Model.explain_non_finite`), one line each; "" if none says anything."""
    flat = getattr(cm, "flat", None)
    explainers = getattr(flat, "explainers", None)  # (a model saved before they existed)
    if not explainers:
        return ""
    said = {}  # text -> the components that say it (one line for the same words)
    for origin in dict.fromkeys(system.equation_origins[e] for e in block.equations):
        comp = explainers.get(origin)
        if comp is None:
            continue
        local = variable[len(origin) + 1:] if variable.startswith(origin + ".") else variable
        try:
            text = comp.explain_non_finite(local, flat.analysis)
        except Exception:  # noqa: BLE001 - a diagnosis must never mask the original failure
            continue
        if text:
            said.setdefault(text, []).append(origin or "the model")
    return "".join(f"\n{', '.join(origins)}: {text}" for text, origins in said.items())


def _held_relations(system, block) -> str:
    """A hint where an explicit block's equations read a relation: it keeps its value
    between events, so the branch it guards is evaluated past its threshold until the
    crossing is found (``if_else(h > 0, sqrt(h), 0)`` with h < 0)."""
    hybrid = getattr(system, "hybrid", None)
    if block.kind != "explicit" or hybrid is None or not hybrid.relations:
        return ""
    relations = {r.symbol.element_hash(): r for r in hybrid.relations}
    read = [relations[s.element_hash()] for e in block.equations
            for s in ca.symvar(system.equations[e]) if s.element_hash() in relations]
    if not read:
        return ""
    shown = "', '".join(dict.fromkeys(r.description for r in read))
    return (f"\nA relation ('{shown}') keeps its value between events, so the branch it "
            f"guards is evaluated a little past its threshold until the crossing is located "
            f"(sqrt(h) with h slightly negative, where h only touches 0): guard the argument "
            f"itself, without an event (sqrt(noEvent(fmax(h, 0)))), or write the switch in "
            f"noEvent(...) where it is smooth")


def _equations_text(system, block) -> str:
    """A block's equations as quoted lines with the component each comes from."""
    texts, origins = system.equation_descriptions, system.equation_origins
    return "\n".join(f"  '{texts[e] if texts is not None else system.equations[e]}' "
                     f"(from {origins[e] or 'the model'})" for e in block.equations[:8])
