"""Structure-preserving code for the dynamics: one small kernel per component structure,
called per instance, instead of one flat expression for the whole model.

The sorted system's assignments (BLT order) are grouped by the component instance whose
equation each one solves and by *phase*: a new phase starts where an assignment needs a
value another instance computed after this instance's earlier assignments (for a tree of
bodies: kinematics from the parent, articulated inertias from the children, accelerations
from the parent — the passes of the articulated-body algorithm). A group's level is the
longest chain of instance changes leading to it, so groups ordered by level respect every
dependency and no group depends on itself.

Each group becomes an SX Function of the values it reads (in order of first use); groups
of instances of the same structure give the same instruction sequence and share one
Function. The dynamics are then an MX Function that calls those kernels group by group:
generated C is one function per distinct structure plus one call per group, so the C
compiler's time and the code size follow the number of component structures rather than
the number of scalar equations (a flat 100-link chain is ~2.8 MB of C and ~40 s of gcc).

Falls back (returns None) for models with algebraic variables (torn nonlinear blocks);
their flat dynamics are used unchanged.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import casadi as ca

from .core import time as TIME

__all__ = ["structured_dynamics", "KernelStats"]


@dataclass
class KernelStats:
    """How the dynamics were partitioned: ``groups`` (kernel calls; groups that only pass
    values on or set constants call none), ``kernels`` (distinct Functions),
    ``assignments`` (scalar assignments in all groups), ``outputs`` (the values kernels
    compute: the assignments less those that pass a value on or set a constant) and
    ``hoisted`` (values of folded parameters alone, computed once at build time)."""

    groups: int
    kernels: int
    assignments: int
    outputs: int = 0
    hoisted: int = 0


def _owner_keys(system) -> dict[int, object]:
    """Variable -> the instance that solves it: the origin of its equation for explicit
    assignments; a torn linear block is one unit of its own."""
    key = {}
    for b, block in enumerate(system.blocks):
        if block.kind == "explicit":
            for e, v in block.assignments:
                key[v] = system.equation_origins[e]
        else:
            for v in block.variables:
                key[v] = ("block", b)
    return key


def _hoist_parametric(body, reads, numeric, env):
    """``body`` with its subexpressions of ``numeric`` values alone (a unit axis, a rotation
    by a fixed angle, a spatial inertia) replaced by new inputs whose values are computed
    here, once: a kernel shared by instances with different parameter values takes them as
    arguments, and would otherwise recompute them (square roots, sines) at every call.
    Returns the new body, its inputs and how many values were hoisted; the values go into
    ``numeric`` and ``env``."""
    fixed = [s for s in reads if s.element_hash() in numeric]
    if not fixed:
        return body, reads, 0
    body, hoisted, parametric = ca.extract_parametric(body, ca.vertcat(*fixed))
    if not hoisted:
        return body, reads, 0
    values = ca.Function("parametric", [ca.vertcat(*fixed)], [ca.vertcat(*parametric)])(
        [numeric[s.element_hash()] for s in fixed])
    for symbol, value in zip(hoisted, values.elements()):
        numeric[symbol.element_hash()] = float(value)
        env[symbol.element_hash()] = ca.MX(float(value))
    return body, ca.symvar(body), len(hoisted)


def structured_dynamics(system, parameter_mode: str = "symbolic", time_symbol=TIME):
    """The model's ODE as an MX Function of kernel calls, in casadi's integrator signature
    (``t, x, z, p, u -> ode, alg, quad, zero``; ``p`` = free parameters then inputs), or
    ``None`` when the model has algebraic variables. Returns ``(function, KernelStats)``.
    ``time_symbol`` is the time in the system's expressions (a loaded model has its own:
    ``cm.symbols.t``).

    Example::

        fn, stats = structured_dynamics(cm.system)
        print(stats.kernels, "kernels for", stats.groups, "calls")
    """
    if system.algebraic:
        return None
    symbols = system.symbols
    free = [q for q in system.parameters if q.binding is None]
    bound = [q for q in system.parameters if q.binding is not None]
    from .compiler import input_order
    inputs = input_order(system)
    n_x, n_p, n_u = len(system.states), len(free), len(inputs)

    sequence = system.sequence
    owner = _owner_keys(system)
    # Which assigned variables each assignment reads: one sparsity pass for all of them.
    assigned = [v for v, _ in sequence]
    reads_of = [[] for _ in sequence]
    if sequence:
        pattern = ca.jacobian_sparsity(ca.vertcat(*[e for _, e in sequence]),
                                       ca.vertcat(*[symbols[v] for v in assigned]))
        rows, cols = pattern.get_triplet()
        for r, c in zip(rows, cols):
            reads_of[r].append(assigned[c])
    level: dict[int, int] = {}
    groups: dict[tuple, list] = {}
    order: list[tuple] = []
    for k, (v, expr) in enumerate(sequence):
        lv = 0
        for d in reads_of[k]:
            lv = max(lv, level[d] + (owner[d] != owner[v]))
        level[v] = lv
        group = (owner[v], lv)
        if group not in groups:
            groups[group] = []
            order.append(group)
        groups[group].append((v, expr))
    order.sort(key=lambda g: g[1])  # by level; stable: first use within a level

    T = ca.MX.sym("t")
    X = ca.MX.sym("x", n_x)
    PU = ca.MX.sym("p", n_p + n_u)
    env: dict[int, ca.MX] = {time_symbol.element_hash(): T}
    for k, x in enumerate(ca.vertsplit(X)):
        env[symbols[system.states[k]].element_hash()] = x
    pu = ca.vertsplit(PU)
    for k, i in enumerate(inputs):
        env[system.variables[i].symbol.element_hash()] = pu[n_p + k]
    folded = parameter_mode == "constant"
    free_values = [ca.MX(float(q.value)) for q in free] if folded else pu[:n_p]
    # every value known as a number here (by its symbol's hash): the folded parameters, then
    # hoisted values and constant assignments
    numeric = {q.symbol.element_hash(): float(q.value) for q in free} if folded else {}
    for q, value in zip(free, free_values):
        env[q.symbol.element_hash()] = value
    if bound:
        # Bindings resolved into each other once, as a function of the free parameters.
        resolved, _ = ca.substitute_inplace([q.symbol for q in bound],
                                            [q.binding for q in bound], [], False)
        binding_fn = ca.Function("bindings", [ca.vertcat(*[q.symbol for q in free])
                                              if free else ca.SX(0, 1)],
                                 [ca.vertcat(*resolved)])
        values = ca.vertsplit(binding_fn(ca.vertcat(*free_values) if free else ca.MX(0, 1)))
        for q, value in zip(bound, values):
            env[q.symbol.element_hash()] = value

    kernels: dict[str, ca.Function] = {}
    n_assigned = n_calls = n_outputs = n_hoisted = 0
    for group in order:
        items = groups[group]
        syms = [symbols[v] for v, _ in items]
        exprs = [expr for _, expr in items]
        # Definitions inside the group resolved into each other: the kernel reads only
        # values from outside the group.
        resolved, _ = ca.substitute_inplace(syms, exprs, [], False)
        body = ca.vertcat(*resolved)
        reads = ca.symvar(body)
        if folded:
            body, reads, hoisted = _hoist_parametric(body, reads, numeric, env)
            n_hoisted += hoisted
        n_assigned += len(items)
        # Values passed on unchanged (a frame's orientation through a joint's frame_b) or
        # constant need no kernel output: the kernel would copy them out and the next one in.
        computed = []
        for s, entry in zip(syms, body.elements()):
            h = entry.element_hash()
            if entry.is_symbolic() and h in env:
                env[s.element_hash()] = env[h]
                if h in numeric:
                    numeric[s.element_hash()] = numeric[h]
            elif entry.is_constant():
                numeric[s.element_hash()] = float(entry)
                env[s.element_hash()] = ca.MX(float(entry))
            else:
                computed.append((s, entry))
        if not computed:
            continue
        body = ca.vertcat(*[entry for _, entry in computed])
        reads = ca.symvar(body)
        if any(r.element_hash() not in env for r in reads):
            return None  # a value from outside the sorted system: keep the flat code
        # Numbers (folded parameters, hoisted values) form the second input, one constant
        # array passed whole; the values computed at run time the first. In canonical
        # inputs, instances of one structure give the same serialized Function: they
        # compute the same instructions on their own values.
        varying = [r for r in reads if r.element_hash() not in numeric]
        fixed = [r for r in reads if r.element_hash() in numeric]
        canonical = ca.SX.sym("in", len(varying))
        constants = ca.SX.sym("c", len(fixed))
        body = ca.substitute(body, ca.vertcat(*varying, *fixed),
                             ca.vertcat(canonical, constants))
        fn = ca.Function("kernel", [canonical, constants], [body])
        key = hashlib.sha256(fn.serialize().encode()).hexdigest()
        kernel = kernels.get(key)
        if kernel is None:
            kernel = kernels[key] = ca.Function(f"kernel{len(kernels)}", [canonical, constants],
                                                [body])
        out = kernel(ca.vertcat(*[env[r.element_hash()] for r in varying]) if varying
                     else ca.MX(0, 1),
                     ca.DM([numeric[r.element_hash()] for r in fixed]) if fixed
                     else ca.DM(0, 1))
        n_calls += 1
        n_outputs += len(computed)
        for (s, _), value in zip(computed, ca.vertsplit(out)):
            env[s.element_hash()] = value

    xdot = [env.get(symbols[d].element_hash()) for d in system.state_derivatives]
    if any(value is None for value in xdot):
        return None  # a derivative that is not assigned (not expected; keep the flat code)
    xdot = ca.vertcat(*xdot) if n_x else ca.MX(0, 1)
    empty = ca.MX(0, 1)
    fn = ca.Function("mbmodel_dynamics", [T, X, ca.MX.sym("z", 0), PU, ca.MX.sym("u", 0)],
                     [xdot, empty, empty, empty], ca.dyn_in(), ca.dyn_out())
    return fn, KernelStats(n_calls, len(kernels), n_assigned, n_outputs, n_hoisted)
