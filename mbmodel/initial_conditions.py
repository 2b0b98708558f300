"""The structure of a compiled model's hard initial conditions (fixed starts and initial
equations): which unknowns each involves, and which states they determine through the
equations. Read when the model is built (which states start from an implicit 0,
:class:`mbmodel.compiler.CompiledCore`) and by the initialization
(:mod:`mbmodel.initialization`); it needs nothing of the simulator."""

from __future__ import annotations

import casadi as ca

from . import graph
from .core import time as TIME
from .flat import stacked
from .structure import incidence_lists
from .workspace import remember, workspace


def matched_conditions(cm, g, inc):
    """Which states do the conditions determine? A structural matching of the conditions
    (incidence ``inc`` over (x, z)) and the algebraic equations ``g`` to (x, z): each
    algebraic variable first by an algebraic equation (as the simulation solves it), then
    the conditions, by alternating paths through any unknown (a start fixed on an algebraic
    variable determines the state its equation then solves for); the matched z stay
    matched. Returns the algebraic equations' incidence, per condition its unknown (or
    UNMATCHED: over-determined) and per unknown its equation.

    Example: ``g_inc, condition_unknowns, equation_of = matched_conditions(cm, g, inc)``"""
    X, Z = cm.symbols.x, cm.symbols.z
    n_x, n_z = X.numel(), Z.numel()
    g_inc = incidence(g, ca.vertcat(X, Z))
    n_g = len(g_inc)
    first = graph.maximum_matching([[v for v in row if v >= n_x] for row in g_inc], n_x + n_z)
    eq_all, var_m = graph.maximum_matching(
        g_inc + inc, n_x + n_z,
        start=(first[0] + [graph.UNMATCHED] * len(inc), first[1]))
    return g_inc, eq_all[n_g:], var_m


def determined_states(cm) -> set:
    """The states (by name) that the fixed start values and initial equations determine
    through the equations, directly or not (m2.w from m1.w's fixed start through a gear):
    their start values are not what the initialization starts them from.

    Example: ``"m2.w" in determined_states(cm)``"""
    _, _, _, unknown = hard_conditions(cm)
    inc = [row for row in unknown if row]
    g = cm.alg(cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p, TIME)
    _, _, var_m = matched_conditions(cm, g, inc)
    return {name for i, name in enumerate(cm.states) if var_m[i] != graph.UNMATCHED}


def hard_conditions(cm):
    """The hard initial conditions as residuals of ``(x, z, u, p, t)``: every fixed start
    value, then the user's initial equations; their labels; per condition, its fixed
    variable's ``(name, start)`` (None for an initial equation); and the unknowns of
    ``(x, z)`` each involves. Built once per model and thread (the check of conditions
    without unknowns and the initialization system both take them).

    Example: ``residuals, labels, fixed, unknowns = hard_conditions(cm)``"""
    cache = workspace(cm, "initialization")
    found = cache.get("conditions")
    if found is not None:
        return found
    X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
    y = cm.output_function(X, Z, U, P, TIME)
    conds, labels, fixed = [], [], []
    for name, start in cm.fixed_starts:
        conds.append(y[cm.output_index[name]] - start)
        labels.append(f"{name} = {start:g} (fixed start)")
        fixed.append((name, start))
    r_user = cm.initial_function(X, Z, U, P, TIME)
    for k in range(r_user.numel()):
        conds.append(r_user[k])
        labels.append(f"initial equation '{cm.initial_equation_descriptions[k]}'")
        fixed.append(None)
    unknown = incidence(stacked(conds), ca.vertcat(X, Z))
    return remember(cache, "conditions", (conds, labels, fixed, unknown))


def incidence(vec, X) -> list[list[int]]:
    """Per entry of ``vec``, the entries of ``X`` it depends on (structurally).

    Example: ``incidence(ca.vertcat(x[0] * x[1], x[1]), x)   # [[0, 1], [1]]``"""
    if vec.numel() == 0:
        return []
    return incidence_lists(vec, X)
