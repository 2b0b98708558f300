"""Balance: the model has as many equations as unknowns; if not, which components are
locally unbalanced (Modelica's rule: a component's own equations count its unknowns minus
its connectors' flows plus the flows and inputs it hands to its sub-components)."""

from __future__ import annotations

from .core import Connector, Model, Variable, _where
from .errors import BalanceError
from .flat import FlatEquation

__all__ = ["check_balance"]


def check_balance(fl):
    """Raise :class:`BalanceError` unless the flat model has as many equations as
    unknowns and every component is locally balanced (Modelica's rule: an equation
    missing in one component and one too many in another would otherwise give a model
    that runs and is wrong), naming the locally unbalanced components and their
    equations."""
    n_unknown = sum(1 for v in fl.variables if v.kind == "unknown")
    n_eq = len(fl.equations)
    imbalances = _local_imbalances(fl)
    if n_eq == n_unknown and not imbalances:
        return
    lines = []
    by_origin: dict[str, list[FlatEquation]] = {}
    for e in fl.equations:
        by_origin.setdefault(e.origin, []).append(e)
    for comp, diff in imbalances:
        sample = "; ".join(e.description for e in by_origin.get(comp.path, [])[:6])
        lines.append(f"  {_where(comp)}: {diff:+d} equations "
                     f"({'surplus' if diff > 0 else 'missing'}); its equations: "
                     f"{sample or 'none'}")
    if n_eq == n_unknown:
        raise BalanceError(
            f"model {type(fl.root).__name__} has as many equations as unknowns ({n_eq}), "
            f"but not every component is locally balanced: each must have as many "
            f"equations as its unknowns, less the flows of its connectors, plus the flows "
            f"and inputs it hands to its sub-components (Modelica's rule; a missing "
            f"equation in one component and a surplus one in another make a model that "
            f"runs and is wrong). Add the missing equations and remove the surplus ones:\n"
            + "\n".join(lines))
    what = "too many" if n_eq > n_unknown else "too few"
    advice = ("remove or replace the surplus equations" if n_eq > n_unknown else
              "add the missing equations or bind the unconstrained variables")
    unused = _unused_unknowns(fl) if n_eq < n_unknown else []
    if unused:
        advice += (f"; {len(unused)} unknown(s) appear in no equation: "
                   f"{', '.join(unused[:8])}{' ...' if len(unused) > 8 else ''}")
    raise BalanceError(
        f"model {type(fl.root).__name__} is unbalanced: {n_eq} equations for "
        f"{n_unknown} unknowns ({what} equations); {advice}.\n" +
        ("\n".join(lines) if lines else "  (every component is locally balanced; the "
         "imbalance comes from connections)"))


def _unused_unknowns(fl) -> list[str]:
    """The unknowns no equation mentions (a variable only differentiated counts as used)."""
    import casadi as ca
    residuals = [e.residual for e in fl.equations]
    used = {s.element_hash() for s in ca.symvar(ca.vertcat(*residuals))} if residuals else set()
    for v in fl.variables:
        if v.derivative_of is not None and v.symbol.element_hash() in used:
            used.add(fl.variables[v.derivative_of].symbol.element_hash())
    return [v.name for v in fl.variables
            if v.kind == "unknown" and v.symbol.element_hash() not in used]


def balanced_connector(fl, connector) -> bool:
    """Whether the connector has as many potentials as flows, and no overdetermined
    variable, as Modelica requires of connectors (it counts an overdetermined one by its
    residue, which the count here does not follow). Only
    then does each component's own count of equations not depend on how many others share
    its connection sets: a multibody frame, which passes velocities and accelerations too,
    is not, and components with such connectors (and the models connecting them) are
    checked only as a whole."""
    known = fl.balanced_connectors.get(type(connector))
    if known is None:
        potentials = flows = 0
        overdetermined = False
        for v in connector._variables.values():
            if not fl.active(v):
                continue
            if v.kind == "flow":
                flows += v.shape[0] * v.shape[1]
            elif v.kind == "overdetermined":
                overdetermined = True
            else:
                potentials += v.shape[0] * v.shape[1]
        # (an overdetermined variable's entries are more than its independent ones, and
        # the equations that relate them are not a component's own count either)
        known = fl.balanced_connectors[type(connector)] = (potentials == flows
                                                           and not overdetermined)
    return known


def _local_imbalances(fl) -> list:
    """``(component, equations surplus)`` of the locally unbalanced components. Unknowns
    declared ``determined_outside`` count for the enclosing model; one that is short of
    equations by no more than those passes them on to the model enclosing it (an inverse
    model's command signal inside an axis, its prescribed motion written at the top).
    A component the count does not apply to (see :func:`balanced_connector`) may have
    written the equations for such unknowns inside it or not: what it leaves may cover a
    surplus of the models enclosing it, but is never asked of them."""
    passed: dict[int, int] = {}
    spare: dict[int, int] = {}  # unknowns left by unchecked components, by enclosing model
    found = []
    for comp in reversed(fl.components):  # (components before the models enclosing them)
        children = comp.components()
        may_cover = sum(spare.get(id(c), 0) for c in children)
        counted = _local_imbalance(fl, comp, passed)
        if counted is None:
            spare[id(comp)] = may_cover + _determined_outside(fl, comp, passed)
            continue
        diff, free = counted
        if diff < 0 and free and comp is not fl.root:  # (nothing encloses the root)
            passed[id(comp)] = min(free, -diff)
            diff += passed[id(comp)]
        if diff > 0 and may_cover:
            covered = min(diff, may_cover)
            diff, may_cover = diff - covered, may_cover - covered
        spare[id(comp)] = may_cover
        if diff:
            found.append((comp, diff))
    found.reverse()
    return found


def _determined_outside(fl, comp, passed) -> int:
    """How many unknowns ``comp``, its direct sub-components and what they passed on leave
    for an enclosing model (declared ``determined_outside``)."""
    count = 0
    for m in [comp, *comp.components()]:
        count += passed.get(id(m), 0) if m is not comp else 0
        count += sum(v.shape[0] * v.shape[1] for v in m._members.values()
                     if isinstance(v, Variable) and fl.active(v) and v.determined_outside)
    return count


def _local_imbalance(fl, comp, passed=None) -> tuple[int, int] | None:
    """The component's surplus of equations by Modelica's local count, and how many of
    the unknowns it is handed are ``determined_outside`` (its own sub-components' or passed
    on to it); None where the count does not apply."""
    if id(comp) in fl.balance_unchecked:
        return None  # it connects connectors that are not balanced
    passed = passed or {}
    own_unknowns = 0
    own_flows = 0
    handed = 0
    free = 0
    for key, m in comp._members.items():
        if isinstance(m, Variable):
            if m.kind != "input" and fl.active(m) and m.input_in != fl.analysis and \
                    not m.determined_outside:
                own_unknowns += m.shape[0] * m.shape[1]
        elif isinstance(m, Connector):
            if not balanced_connector(fl, m):
                return None  # no local count is right for it: checked globally
            for v in m._variables.values():
                if not fl.active(v):
                    continue
                size = v.shape[0] * v.shape[1]
                own_unknowns += size
                if v.kind == "flow":
                    own_flows += size
        elif isinstance(m, Model):
            handed += passed.get(id(m), 0)
            free += passed.get(id(m), 0)
            for m2 in m._members.values():
                if isinstance(m2, Connector):
                    handed += sum(v.shape[0] * v.shape[1] for v in m2._variables.values()
                                  if v.kind == "flow" and fl.active(v))
                elif isinstance(m2, Variable) and fl.active(m2) and (
                        m2.kind == "input" or m2.determined_outside):
                    handed += m2.shape[0] * m2.shape[1]
                    if m2.determined_outside:
                        free += m2.shape[0] * m2.shape[1]
    if comp is fl.root:
        handed += own_flows
    have = fl.local_equations.get(id(comp), 0)
    return have - (own_unknowns - own_flows + handed), free
