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
Function. The dynamics are then an MX Function that calls those kernels group by group
(what casadi's virtual machine runs), and the same calls as a schedule
(:mod:`mbmodel.schedule`), from which the C is written: the kernels once, and tables of
the calls that a loop makes. The C compiler's time and the code size follow the number of
distinct component structures, not the model's size (a 1000-link chain: ~1 s of gcc; as
casadi's C of the MX Function, one statement per call and passed value, ~16 s, and a flat
100-link chain is ~2.8 MB of C and ~40 s of gcc).

The kernels together do the flat function's arithmetic, no more:

- a subexpression several assignments use (the sine of a joint angle, in the rotation
  passed to the child and again in the force passed back) is computed once, by the first
  group that needs it, and read by the others;
- only what the state derivatives need is computed (what the flat Function prunes);
- a value passed negated (a flow, on each side of a connection) is passed as it is and
  negated where it is read, where casadi cancels the two negations;
- equal subexpressions built separately inside a kernel are merged once per distinct
  kernel (``casadi.cse``), which the flat function does only below
  :data:`mbmodel.compiler.CSE_NODES` nodes.

Values cross from kernel to kernel without copies: a kernel takes every output vector it
reads from as one input (a pointer in the C), and only the values read elsewhere are
outputs.

Falls back (returns None) for models with algebraic variables (torn nonlinear blocks);
their flat dynamics are used unchanged.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple

import casadi as ca
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .core import time as TIME
from .flat import resolve_bindings, stacked as stacked_column
from .schedule import Schedule, attach

__all__ = ["structured_dynamics", "KernelStats", "KERNELS_VERSION"]

#: Part of the key under which built kernels are cached on disk (:mod:`mbmodel.native`):
#: changed whenever what :func:`structured_dynamics` builds from a model changes.
KERNELS_VERSION = "7"


@dataclass
class KernelStats:
    """How the dynamics were partitioned: ``groups`` (kernel calls; groups that only pass
    values on or set constants call none), ``kernels`` (distinct Functions),
    ``assignments`` (scalar assignments in all groups), ``unused`` (assignments the state
    derivatives do not need: not computed), ``shared`` (subexpressions computed once for
    several assignments), ``outputs`` (the values kernels write out: those read by another
    kernel or a state derivative, less those that pass a value on or set a constant) and
    ``hoisted`` (values of folded parameters alone, computed once at build time)."""

    groups: int
    kernels: int
    assignments: int
    outputs: int = 0
    hoisted: int = 0
    unused: int = 0
    shared: int = 0


def _owner_keys(system) -> dict[int, object]:
    """Variable -> the instance that solves it: the origin of its equation for explicit
    assignments (of the variable, for connection equations); a torn linear block is one
    unit of its own."""
    key = {}
    index, variables = system.variable_index, system.variables
    for b, block in enumerate(system.blocks):
        if block.kind == "explicit":
            for e, v in block.assignments:
                origin = system.equation_origins[e]
                if not origin:
                    # a connection equation: it belongs with the instance whose variable it
                    # solves (one owner for all of them would join unrelated instances'
                    # equations into one group wherever their levels meet)
                    flat = index.get(system.names[v])
                    origin = variables[flat].origin if flat is not None else ("", v)
                key[v] = origin
        else:
            for v in block.variables:
                key[v] = ("block", b)
    return key


def _hoist_parametric(body, reads, hashes, numeric):
    """``body`` with its subexpressions of ``numeric`` values alone (a unit axis, a rotation
    by a fixed angle, a spatial inertia) replaced by new inputs whose values are computed
    here, once: a kernel shared by instances with different parameter values takes them as
    arguments, and would otherwise recompute them (square roots, sines) at every call.
    ``hashes``: the reads' element hashes. Returns the new body, its reads, their hashes
    and how many values were hoisted; the values go into ``numeric``."""
    fixed = [k for k, h in enumerate(hashes) if h in numeric]
    if not fixed:
        return body, reads, hashes, 0
    fixed_symbols = ca.vertcat(*[reads[k] for k in fixed])
    body, hoisted, parametric = ca.extract_parametric(body, fixed_symbols)
    if not hoisted:
        return body, reads, hashes, 0
    values = ca.Function("parametric", [fixed_symbols], [ca.vertcat(*parametric)])(
        [numeric[hashes[k]] for k in fixed])
    for symbol, value in zip(hoisted, values.elements()):
        numeric[symbol.element_hash()] = float(value)
    reads = ca.symvar(body)
    return body, reads, [r.element_hash() for r in reads], len(hoisted)


def _with_unit_values(body, reads, hashes, numeric):
    """``body`` with the numbers 0, 1 and -1 among its ``numeric`` reads written in, and its
    reads and their hashes again. casadi then drops the operations they make trivial, as it
    does in the flat function: a joint axis along z multiplies two thirds of a rotation by
    zero (a 24-link chain of such joints: 4.3x the flat function's operations without
    this). Other values stay kernel inputs, so instances that differ only in them share a
    kernel."""
    units = [k for k, h in enumerate(hashes) if numeric.get(h) in (0.0, 1.0, -1.0)]
    if not units:
        return body, reads, hashes
    body = ca.substitute(body, ca.vertcat(*[reads[k] for k in units]),
                         ca.DM([numeric[hashes[k]] for k in units]))
    reads = ca.symvar(body)
    return body, reads, [r.element_hash() for r in reads]


class _Leaf(NamedTuple):
    """A value no kernel computes: entry ``index`` of the leaf vector (time, states,
    parameters and inputs, bound parameters), negated or not."""
    index: int
    negated: bool


class _Out(NamedTuple):
    """A value a kernel computes: entry ``index`` of call ``call``'s output, negated or not."""
    call: int
    index: int
    negated: bool


@dataclass
class _Call:
    """One kernel call, before it is emitted: the calls whose output vectors it takes
    whole (``sources``), the values gathered into its loose input, its constant array and
    the length of its output."""
    kernel: ca.Function
    sources: list
    loose: list
    constants: list
    n_out: int


def _negated(value):
    """The negation of a value in the kernels' environment."""
    return value._replace(negated=not value.negated)


def _grouped_entries(system, targets):
    """The sorted system's assignments and their shared subexpressions, grouped for kernels
    that compute the variables ``targets`` (positions in the system: the state derivatives,
    or every output).

    A subexpression several assignments use (the sine of a joint angle, in the rotation
    passed to the child and again in the force passed back) becomes an entry of its own,
    placed before its first user and owned by that user's instance: a kernel that needs it
    later reads it instead of computing it again. Returns the entries' symbols (the
    assignments first, in sequence order), the symbols and the expressions each stacked
    into one vector (None without entries), the groups (``(owner, level)``
    -> entry indices in evaluation order), the groups in the order to call them, and for
    each entry whether another group (or the state derivatives) reads it."""
    sequence, symbols = system.sequence, system.symbols
    owner = _owner_keys(system)
    n_assignments = len(sequence)
    entry_symbols, stacked = [], None
    if sequence:
        # (the stacked vectors where the system has them: a list converts every scalar
        # from Python, ~3 µs apiece)
        assigned = [v for v, _ in sequence]
        symbol_vector = (system.symbol_vector[assigned] if system.symbol_vector is not None
                         else stacked_column([symbols[v] for v in assigned]))
        expressions = (system.sequence_vector if system.sequence_vector is not None else
                       stacked_column([e for _, e in sequence]))
        (lifted,), shared, definitions = ca.shared([expressions], "shared", "")
        stacked = (ca.vertcat(symbol_vector, *shared), ca.vertcat(lifted, *definitions))
        entry_symbols = stacked[0].elements()
    n = len(entry_symbols)
    # Which entries each entry reads, from one sparsity pass for all of them: row r of the
    # transposed pattern's compressed columns, in order.
    reads_of = []
    if n:
        pattern = ca.jacobian_sparsity(stacked[1], stacked[0]).T
        starts, columns = pattern.colind(), pattern.row()
        reads_of = [columns[starts[r]:starts[r + 1]] for r in range(n)]
    # Only what the targets need is computed (the flat Functions prune the rest the same
    # way): e.g. for the state derivatives, not the forces a body's frame passes to nothing.
    position = {symbols[v].element_hash(): k for k, (v, _) in enumerate(sequence)}
    needed = [False] * n
    stack = [position[h] for h in (symbols[d].element_hash() for d in targets)
             if h in position]
    while stack:
        i = stack.pop()
        if not needed[i]:
            needed[i] = True
            stack.extend(d for d in reads_of[i] if not needed[d])
    # Evaluation order: each assignment in sequence order, the shared entries it reads
    # (depth first) just before it; a shared entry belongs to its first user's instance.
    owner_of = [owner[v] for v, _ in sequence] + [None] * len(shared)
    evaluation = []
    placed = [False] * n
    for a in range(n_assignments):
        if not needed[a]:
            continue
        stack = [(a, iter(reads_of[a]))]
        while stack:
            entry, pending = stack[-1]
            for d in pending:
                if d >= n_assignments and not placed[d]:
                    placed[d] = True
                    owner_of[d] = owner_of[a]
                    stack.append((d, iter(reads_of[d])))
                    break
            else:
                stack.pop()
                evaluation.append(entry)
    level = [0] * n
    group_of = [None] * n
    groups: dict[tuple, list] = {}
    order: list[tuple] = []
    for i in evaluation:
        lv = 0
        for d in reads_of[i]:
            lv = max(lv, level[d] + (owner_of[d] != owner_of[i]))
        level[i] = lv
        group = group_of[i] = (owner_of[i], lv)
        if group not in groups:
            groups[group] = []
            order.append(group)
        groups[group].append(i)
    groups, order = _split_coincident(groups, order, group_of, reads_of)
    order.sort(key=lambda g: g[1])  # by level; stable: first use within a level
    read_outside = [False] * n
    for i in evaluation:
        for d in reads_of[i]:
            if group_of[d] != group_of[i]:
                read_outside[d] = True
    for d in targets:
        k = position.get(symbols[d].element_hash())
        if k is not None:
            read_outside[k] = True
    return entry_symbols, stacked, groups, order, read_outside


def _split_coincident(groups, order, group_of, reads_of):
    """Groups split where two phases of one instance fell on one level by coincidence:
    parts of a group that read nothing of each other and values of different groups (a
    joint's velocities from its parent and its articulated inertia from its child, ready at
    the same level in one link of a chain and at different levels in the others). Split,
    the instance calls the same kernels as the others. ``group_of`` is updated (after every
    group is decided: each reads the groups as they were); returns the groups and their
    order.

    The parts of all groups come from one pass of scipy's connected components over the
    reads inside groups (a union-find from Python cost ~2 µs per read: a sixth of the
    kernels' build in a long chain)."""
    n = len(group_of)
    number = {group: k for k, group in enumerate(order)}
    # per entry: its group's number, or -1 (not evaluated; level 0: never split)
    splittable = {group for group in order if len(groups[group]) > 1 and group[1] > 0}
    group_number = np.fromiter((number[g] if g in splittable else -1 for g in group_of),
                               dtype=np.int64, count=n)
    counts = np.fromiter(map(len, reads_of), dtype=np.int64, count=n)
    readers = np.repeat(np.arange(n, dtype=np.int64), counts)
    read = np.fromiter(chain.from_iterable(reads_of), dtype=np.int64, count=int(counts.sum()))
    of_reader = group_number[readers]
    inside = (of_reader >= 0) & (of_reader == group_number[read])
    graph = csr_matrix((np.ones(int(inside.sum()), dtype=np.int8),
                        (readers[inside], read[inside])), shape=(n, n))
    _, part_of = connected_components(graph, directed=True, connection="weak")
    # the groups each part reads besides its own (by the groups as they were)
    read_group = np.fromiter((number.get(g, -1) for g in group_of), dtype=np.int64, count=n)
    outside = (of_reader >= 0) & ~inside
    # each (part, group read) pair once, as one integer key apiece
    keys = np.unique(part_of[readers[outside]] * (len(order) + 1)
                     + read_group[read[outside]] + 1)
    sources: dict[int, set] = {}
    for part, source in zip(*(array.tolist() for array in np.divmod(keys, len(order) + 1))):
        sources.setdefault(part, set()).add(order[source - 1] if source > 0 else None)
    read_by_part = {part: frozenset(found) for part, found in sources.items()}
    nothing = frozenset()
    new_groups, new_order, moved = {}, [], []
    for group in order:
        members = groups[group]
        parts = {}  # the other groups a part reads -> its members, in order
        if group in splittable:
            for i, part in zip(members, part_of[members].tolist()):
                parts.setdefault(read_by_part.get(part, nothing), []).append(i)
        if len(parts) < 2:
            new_groups[group] = members
            new_order.append(group)
            continue
        for k, part in enumerate(parts.values()):
            key = (group[0], group[1], k)
            new_groups[key] = part
            new_order.append(key)
            moved.append((key, part))
    for key, part in moved:
        for i in part:
            group_of[i] = key
    return new_groups, new_order


class _Emitter:
    """Makes the recorded kernel calls as MX, in order. Values reach a kernel as whole
    output vectors, or gathered into its loose input by one indexed copy
    (:meth:`gather`)."""

    def __init__(self, leaves: ca.MX, calls: list):
        self.calls = calls
        self.holders = [leaves]  # the vectors values live in: the leaves, then each output

    def gather(self, refs: list) -> ca.MX:
        """The values ``refs`` (leaves, output entries or numbers) as one column: one
        indexed copy from each vector they live in, and a last one that puts the parts in
        order where they are interleaved."""
        selected: dict[int, list] = {}  # holder -> positions taken from it
        numbers: list[float] = []
        taken = []  # per ref: (holder or -1 for numbers, index in its part)
        for ref in refs:
            if isinstance(ref, float):
                taken.append((-1, len(numbers)))
                numbers.append(ref)
                continue
            holder = 0 if isinstance(ref, _Leaf) else 1 + ref.call
            part = selected.setdefault(holder, [])
            taken.append((holder, len(part)))
            part.append(ref.index)
        pieces, offset = [], {}
        size = 0
        for holder, positions in selected.items():
            whole = self.holders[holder]
            # ([positions, 0]: a column also from a 1 x 1 vector, read more than once)
            pieces.append(whole if positions == list(range(whole.numel()))
                          else whole[positions, 0])
            offset[holder] = size
            size += len(positions)
        if numbers:
            pieces.append(ca.MX(ca.DM(numbers)))
            offset[-1] = size
        order = [offset[holder] + k for holder, k in taken]
        value = ca.vertcat(*pieces)
        if order != list(range(len(order))):
            value = value[order]
        signs = [-1.0 if not isinstance(r, float) and r.negated else 1.0 for r in refs]
        if -1.0 in signs:
            value = value * ca.DM(signs)
        return value

    def call(self, c: int) -> None:
        """The next call, ``c``."""
        call = self.calls[c]
        self.holders.append(call.kernel(
            *[self.holders[1 + j] for j in call.sources],
            self.gather(call.loose) if call.loose else ca.MX(0, 1),
            ca.DM(call.constants) if call.constants else ca.DM(0, 1)))


def _schedule(calls, results, n_x, n_p, n_u, bindings, bound, kind="dynamics",
              offsets=()) -> Schedule:
    """The recorded calls the ``results`` need as a :class:`~mbmodel.schedule.Schedule`
    (plain tables). (A call whose outputs only a reader that folding emptied would read is
    not needed; casadi's MX graph drops it too.)"""
    needed = [False] * len(calls)
    stack = [ref.call for ref in results if isinstance(ref, _Out)]
    while stack:
        c = stack.pop()
        if not needed[c]:
            needed[c] = True
            stack.extend(calls[c].sources)
    number = {}  # call -> its number among the needed ones
    for c, kept in enumerate(needed):
        if kept:
            number[c] = len(number)
    calls = [call for call, kept in zip(calls, needed) if kept]
    index: dict[int, int] = {}
    kernels = []
    for call in calls:
        if id(call.kernel) not in index:
            index[id(call.kernel)] = len(kernels)
            kernels.append(call.kernel)
    return Schedule(
        kernels=kernels,
        calls=[index[id(call.kernel)] for call in calls],
        sources=[number[j] for call in calls for j in call.sources],
        loose=[(leaf.index, leaf.negated) for call in calls for leaf in call.loose],
        constants=[c for call in calls for c in call.constants],
        results=[("number", ref) if isinstance(ref, float) else
                 ("out", number[ref.call], ref.index, ref.negated)
                 if isinstance(ref, _Out) else
                 ("leaf", ref.index, ref.negated) for ref in results],
        n_x=n_x, n_p=n_p, n_u=n_u, bindings=bindings, bound=bound, kind=kind,
        offsets=[list(pair) for pair in offsets])


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
    from .compiler import collector_paused
    with collector_paused():  # (as compiling: many objects, freed only at the end)
        return _structured_dynamics(system, parameter_mode, time_symbol)


def structured_outputs(system, names: list[str], parameter_mode: str = "symbolic",
                       time_symbol=TIME):
    """The variables ``names`` (a compiled model's ``output_names``, in their order) as an
    MX Function of kernel calls with the signature of ``output_function``
    (``x, z, u, p, t -> y``), or ``None`` where kernels do not apply (algebraic variables,
    a value the sorted system does not define). Returns ``(function, KernelStats)``; the
    Function's schedule (:mod:`mbmodel.schedule`) is how its C computes a result's table.

    Example::

        fn, stats = structured_outputs(cm.system, cm.output_names, cm.parameter_mode)
        y = fn(x, [], u, p, t)
    """
    from .compiler import collector_paused
    with collector_paused():
        return _structured_outputs(system, list(names), parameter_mode, time_symbol)


def _structured_dynamics(system, parameter_mode, time_symbol):
    if system.algebraic:
        return None
    from .compiler import input_order
    n_x, n_p, n_u = (len(system.states), sum(q.binding is None for q in system.parameters),
                     len(input_order(system)))
    T, X, PU = ca.MX.sym("t"), ca.MX.sym("x", n_x), ca.MX.sym("p", n_p + n_u)
    made = _recorded_calls(system, parameter_mode, time_symbol, system.state_derivatives,
                           T, X, PU)
    if made is None:
        return None
    derivatives = []  # per state: a number, a leaf or a kernel output
    for d in system.state_derivatives:
        value = made.value_of(system.symbols[d].element_hash())
        if value is None:
            return None  # a derivative that is not assigned (not expected; keep the flat code)
        derivatives.append(value)
    # (dense: a constant zero among the values gathered can come out as a structural zero,
    # and the schedule's C writes dense columns)
    xdot = ca.densify(made.emitter.gather(derivatives)) if n_x else ca.MX(0, 1)
    empty = ca.MX(0, 1)
    fn = ca.Function("mbmodel_dynamics", [T, X, ca.MX.sym("z", 0), PU, ca.MX.sym("u", 0)],
                     [xdot, empty, empty, empty], ca.dyn_in(), ca.dyn_out())
    attach(fn, _schedule(made.calls, derivatives, n_x, n_p, n_u, made.bindings, made.bound))
    return fn, made.stats


def _structured_outputs(system, names, parameter_mode, time_symbol):
    if system.algebraic:
        return None
    from .compiler import alias_chain, input_order, output_sources
    sources = output_sources(system, set(names))
    if sources.names != names:
        return None  # not this system's outputs (not expected; keep casadi's)
    n_symbols = len(system.symbols)
    targets = sorted({int(r) for r in sources.rows if 0 <= r < n_symbols})
    n_x, n_p, n_u = (len(system.states), sum(q.binding is None for q in system.parameters),
                     len(input_order(system)))
    X, U, P, T = (ca.MX.sym("x", n_x), ca.MX.sym("u", n_u), ca.MX.sym("p", n_p),
                  ca.MX.sym("t"))
    made = _recorded_calls(system, parameter_mode, time_symbol, targets, T, X,
                           ca.vertcat(P, U))
    if made is None:
        return None
    results, offsets = [], []  # per output: its value; (output, offset) where not 0
    for k, (row, sign, offset) in enumerate(zip(sources.rows.tolist(), sources.signs.tolist(),
                                                sources.offsets.tolist())):
        if row == n_symbols:
            value = 0.0
        elif row >= 0:
            value = made.value_of(system.symbols[row].element_hash())
        else:  # an expression of its own: a chain of aliases, an input
            symbol, scale, shift = alias_chain(system, names[k])
            offset += sign * shift
            sign *= scale
            value = 0.0 if symbol is None else made.value_of(symbol.element_hash())
        if value is None:
            return None  # a value that is not in the sorted system: keep casadi's
        if isinstance(value, float):
            results.append(sign * value + offset)
            continue
        if abs(sign) != 1.0:
            return None  # (signs of aliases are +-1; keep casadi's otherwise)
        results.append(_negated(value) if sign < 0 else value)
        if offset != 0.0:
            offsets.append((k, offset))
    y = made.emitter.gather(results) if results else ca.MX(0, 1)
    if offsets:
        shift = np.zeros(len(results))
        for k, offset in offsets:
            shift[k] = offset
        y = y + ca.DM(shift)
    y = ca.densify(y)  # (as the dynamics' derivatives)
    fn = ca.Function("mbmodel_outputs", [X, ca.MX.sym("z", 0), U, P, T], [y],
                     ["x", "z", "u", "p", "t"], ["y"])
    attach(fn, _schedule(made.calls, results, n_x, n_p, n_u, made.bindings, made.bound,
                         kind="outputs", offsets=offsets))
    return fn, made.stats


@dataclass
class _Recorded:
    """Kernel calls recorded for some target variables: ``calls`` in evaluation order,
    ``value_of(hash)`` (a variable's value by its symbol's element hash: a number, a leaf,
    a call's output, or None), ``emitter`` (the calls made as MX), the bound parameters'
    ``bindings`` Function or folded ``bound`` values, and the partition's ``stats``."""

    calls: list
    value_of: object
    emitter: _Emitter
    bindings: ca.Function | None
    bound: list | None
    stats: KernelStats


def _recorded_calls(system, parameter_mode, time_symbol, targets, T, X, PU):
    symbols = system.symbols
    free = [q for q in system.parameters if q.binding is None]
    bound = [q for q in system.parameters if q.binding is not None]
    from .compiler import input_order
    inputs = input_order(system)
    n_x, n_p, n_u = len(system.states), len(free), len(inputs)
    entry_symbols, stacked, groups, order, read_outside = _grouped_entries(system, targets)
    n_assignments = len(system.sequence)
    folded = parameter_mode == "constant"
    # The values kernels read that no kernel computes, as entries of one vector (time,
    # states, parameters and inputs, bound parameters): a kernel's loose input is a
    # selection of it, which the C makes with one indexed copy.
    leaves = [T, X, PU]
    env: dict[int, object] = {time_symbol.element_hash(): _Leaf(0, False)}
    for k in range(n_x):
        env[symbols[system.states[k]].element_hash()] = _Leaf(1 + k, False)
    for k, i in enumerate(inputs):
        env[system.variables[i].symbol.element_hash()] = _Leaf(1 + n_x + n_p + k, False)
    # every value known as a number here (by its symbol's hash): the folded parameters, then
    # hoisted values (known here only: kernels take them in their constant array, so they
    # need no value in env) and constant assignments
    numeric = {q.symbol.element_hash(): float(q.value) for q in free} if folded else {}
    if not folded:
        for k, q in enumerate(free):
            env[q.symbol.element_hash()] = _Leaf(1 + n_x + k, False)
    if bound:
        # Bindings resolved into each other once, as a function of the free parameters.
        resolved = resolve_bindings(bound, [q.binding for q in bound])
        binding_fn = ca.Function("bindings", [ca.vertcat(*[q.symbol for q in free])
                                              if free else ca.SX(0, 1)],
                                 [ca.vertcat(*resolved)])
        if folded:  # (numbers: computed here, once)
            bound_values = np.array(binding_fn([float(q.value) for q in free])).ravel().tolist()
            leaves.append(ca.MX(ca.DM(bound_values)))
        else:
            leaves.append(binding_fn(PU[:n_p]))
        first = 1 + n_x + n_p + n_u
        for k, q in enumerate(bound):
            env[q.symbol.element_hash()] = _Leaf(first + k, False)

    kernels: dict[str, ca.Function] = {}
    calls: list[_Call] = []  # in evaluation order
    n_assigned = n_shared = n_outputs = n_hoisted = 0
    for group in order:
        members = groups[group]
        syms = [entry_symbols[i] for i in members]
        # Definitions inside the group resolved into each other: the kernel reads only
        # values from outside the group. (Selections from the stacked entries: a list of
        # scalars costs a conversion per entry from Python.)
        (body,), _ = ca.substitute_inplace([stacked[0][members]], [stacked[1][members]],
                                           [], False)
        if folded:
            reads = ca.symvar(body)
            body, reads, hashes = _with_unit_values(body, reads,
                                                    [r.element_hash() for r in reads], numeric)
            body, reads, hashes, hoisted = _hoist_parametric(body, reads, hashes, numeric)
            if hoisted:  # (else no read has a unit value: they were written in)
                body, reads, hashes = _with_unit_values(body, reads, hashes, numeric)
            n_hoisted += hoisted
        n_assigned += sum(i < n_assignments for i in members)
        n_shared += sum(i >= n_assignments for i in members)
        # Values passed on unchanged (a frame's orientation through a joint's frame_b) or
        # constant need no kernel output: the kernel would copy them out and the next one in.
        # Nor do values no other group reads (they stay inside the kernel).
        computed = []
        for i, s, entry in zip(members, syms, body.elements()):
            if not read_outside[i]:
                continue
            # A negation is left to the readers, where it cancels against their own
            # (a flow passed from body to joint is negated on each side of a connection).
            negated = entry.op() == ca.OP_NEG
            inner = entry.dep(0) if negated else entry
            h = inner.element_hash()
            if inner.is_symbolic() and (h in numeric or h in env):
                if h in numeric:
                    numeric[s.element_hash()] = -numeric[h] if negated else numeric[h]
                else:
                    env[s.element_hash()] = _negated(env[h]) if negated else env[h]
            elif entry.is_constant():
                numeric[s.element_hash()] = float(entry)
            else:
                computed.append((s, inner, negated))
        if not computed:
            continue
        body = ca.vertcat(*[entry for _, entry, _ in computed])
        reads = ca.symvar(body)
        hashes = [r.element_hash() for r in reads]
        if any(h not in numeric and h not in env for h in hashes):
            return None  # a value from outside the sorted system: keep the flat code
        # A kernel takes each vector another kernel computed whole, as one input (the C
        # passes a pointer: nothing is copied between kernels), the other values it reads
        # (states, inputs, free parameters) gathered into one input, and the numbers
        # (folded parameters, hoisted values) as the last, a constant array. In canonical
        # inputs, instances of one structure give the same serialized body: they
        # compute the same instructions on their own values.
        sources, loose, fixed, varying, canonical = [], [], [], [], []
        source_symbols, source_entries = {}, {}
        for r, h in zip(reads, hashes):
            if h in numeric:
                fixed.append(r)
                continue
            varying.append(r)
            value = env[h]
            if isinstance(value, _Out):
                j, k, negated = value
                if j not in source_symbols:
                    source_symbols[j] = ca.SX.sym(f"in{len(sources)}", calls[j].n_out)
                    source_entries[j] = source_symbols[j].elements()  # (one call, not one each)
                    sources.append(j)
                entry = source_entries[j][k]
                canonical.append(-entry if negated else entry)
            else:
                loose.append(value)
                canonical.append(None)
        loose_symbols = ca.SX.sym("in", len(loose))
        loose_entries = iter(loose_symbols.elements())
        canonical = [c if c is not None else next(loose_entries) for c in canonical]
        constants = ca.SX.sym("c", len(fixed))
        body = ca.substitute(body, ca.vertcat(*varying, *fixed),
                             ca.vertcat(*canonical, constants))
        arguments = [source_symbols[j] for j in sources] + [loose_symbols, constants]
        # (the body's own serialization names every input entry: in<j>_<k>, in_<k>, c_<k>;
        # with the inputs' sizes it is the kernel's, at a third of a Function's cost)
        key = (tuple(a.numel() for a in arguments),
               hashlib.sha256(body.serialize().encode()).hexdigest())
        kernel = kernels.get(key)
        if kernel is None:
            # Equal subexpressions built separately (entries of one matrix product in two
            # equations of a component) merged once per distinct kernel: a few small
            # bodies, where the flat function's merge costs ~8 µs per node of the model.
            kernel = kernels[key] = ca.Function(f"kernel{len(kernels)}", arguments,
                                                [ca.cse(body)])
        calls.append(_Call(kernel, sources, loose,
                           [numeric[r.element_hash()] for r in fixed], len(computed)))
        n_outputs += len(computed)
        for k, (s, _, negated) in enumerate(computed):
            env[s.element_hash()] = _Out(len(calls) - 1, k, negated)

    emitter = _Emitter(ca.vertcat(*leaves), calls)
    for c in range(len(calls)):
        emitter.call(c)

    def value_of(h):
        found = numeric.get(h)
        return found if found is not None else env.get(h)
    return _Recorded(calls, value_of, emitter, binding_fn if bound and not folded else None,
                     bound_values if bound and folded else None,
                     KernelStats(len(calls), len(kernels), n_assigned, n_outputs, n_hoisted,
                                 n_assignments - n_assigned, n_shared))
