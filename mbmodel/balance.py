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
    unknowns, naming the locally unbalanced components and their equations."""
    n_unknown = sum(1 for v in fl.variables if v.kind == "unknown")
    n_eq = len(fl.equations)
    if n_eq == n_unknown:
        return
    lines = []
    by_origin: dict[str, list[FlatEquation]] = {}
    for e in fl.equations:
        by_origin.setdefault(e.origin, []).append(e)
    for comp in fl.components:
        diff = _local_imbalance(fl, comp)
        if diff:
            sample = "; ".join(e.description for e in by_origin.get(comp.path, [])[:6])
            lines.append(f"  {_where(comp)}: {diff:+d} equations "
                         f"({'surplus' if diff > 0 else 'missing'}); its equations: "
                         f"{sample or 'none'}")
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


def _local_imbalance(fl, comp) -> int:
    own_unknowns = 0
    own_flows = 0
    handed = 0
    for key, m in comp._members.items():
        if isinstance(m, Variable):
            if m.kind != "input" and fl.active(m) and m.input_in != fl.analysis:
                own_unknowns += m.shape[0] * m.shape[1]
        elif isinstance(m, Connector):
            for v in m._variables.values():
                if not fl.active(v):
                    continue
                size = v.shape[0] * v.shape[1]
                if v.kind == "overdetermined":
                    return 0  # counted by residue rules; checked globally
                own_unknowns += size
                if v.kind == "flow":
                    own_flows += size
        elif isinstance(m, Model):
            for m2 in m._members.values():
                if isinstance(m2, Connector):
                    handed += sum(v.shape[0] * v.shape[1] for v in m2._variables.values()
                                  if v.kind == "flow" and fl.active(v))
                elif isinstance(m2, Variable) and m2.kind == "input":
                    handed += m2.shape[0] * m2.shape[1]
    if comp is fl.root:
        handed += own_flows
    have = fl.local_equations.get(id(comp), 0)
    return have - (own_unknowns - own_flows + handed)
