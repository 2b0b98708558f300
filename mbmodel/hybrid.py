"""The hybrid part of flattening: relations, discrete variables, ``pre`` values, when
clauses and samples collected into a :class:`~mbmodel.flat.HybridPart` while components'
``equations()`` run (see :mod:`mbmodel.discrete` for the language).

Every quantity that changes only at events is a *discrete known*: a flat variable of kind
"input" tagged with what it is (``FlatVariable.discrete``). Structural analysis treats it as
a known (like an external input, with derivative 0), so the continuous part compiles as
before; the simulator sets its value at events.
"""

from __future__ import annotations

import casadi as ca

from .core import time as TIME
from .core import _where
from .discrete import _ORIGINAL, Reinit, When, check_when
from .errors import DeclarationError
from .flat import (FlatDiscreteEquation, FlatRelation, FlatSample, FlatVariable, FlatWhen,
                   HybridPart, RelationLiterals, describe)


#: The name of initial()'s value among the compiled model's discrete values.
INITIAL = "initial()"
STARTING = "$starting"

class HybridCollector:
    """Collects the hybrid part for one flattening (``_Flattener.hybrid``)."""

    def __init__(self, flattener):
        self.fl = flattener
        self.part = HybridPart()
        self.active = False
        self._relation_of: dict = {}  # (operator parts) -> relation symbol (one per relation)
        #: the relations' comparisons as written (shown in messages in place of their symbols)
        self.literals = RelationLiterals()
        self._pre: dict[int, ca.SX] = {}  # position -> its pre() symbol
        #: relations on time and parameters (comparisons as written, by node) -> their
        #: time event and their crossing function's slope in time
        self._right_of: dict[int, tuple] = {}
        self._initial = None
        self._starting = None
        self._continuous = None  # see continuous_symbols
        self.time_events: list = []
        self.assigned: dict[int, str] = {}  # discrete position -> where it is defined
        self.reinitialized: dict[int, str] = {}  # state position -> the when clause

    # -- discrete knowns ---------------------------------------------------------------
    def _known(self, name: str, tag: str, start: float, origin: str) -> tuple[ca.SX, int]:
        fl = self.fl
        sym = ca.SX.sym(name)
        position = len(fl.variables)
        fl.symbols[sym.element_hash()] = fl.record(False, position)
        fl.variables.append(FlatVariable(name, sym, "input", origin, float(start), False,
                                         "never", discrete=tag))
        return sym, position

    def _origin(self) -> str:
        comp = getattr(self.fl.context, "component", None)
        return comp.path if comp is not None else ""

    def _kind_of(self, symbol) -> str:
        """"time", "known" (parameter, input, discrete known) or "continuous"."""
        h = symbol.element_hash()
        if h == TIME.element_hash():
            return "time"
        rec = self.fl.symbols.get(h)
        if rec is None or rec.is_parameter:
            return "known"
        var = self.fl.variables[rec.position]
        return "known" if var.kind == "input" else "continuous"

    # -- relations -------------------------------------------------------------------------
    def relation(self, result, crossing, strict, parts):
        """The value a comparison stands for in the model (see module doc); ``crossing()``
        makes its zero-crossing function, asked for only where one is needed."""
        if not any(self._kind_of(s) != "known" for s in ca.symvar(result)):
            return result  # parameters, inputs, discrete values: constant between events
        crossing = crossing()
        if result.numel() == 1:
            return self._scalar_relation(result, crossing, strict, parts)
        if crossing.numel() == 1:
            crossing = ca.repmat(crossing, *result.shape)
        # each element its own operands: with the whole vectors' they were one relation
        # (x > 0.5 on a vector x switched every element where the first one crossed)
        a, op, b = parts
        out = [self._scalar_relation(result[k], crossing[k], strict,
                                     (_entry(a, k), op, _entry(b, k)))
               for k in range(result.numel())]
        return ca.reshape(ca.vertcat(*out), *result.shape)

    def _scalar_relation(self, result, crossing, strict, parts):
        kinds = {self._kind_of(s) for s in ca.symvar(crossing)}
        if "continuous" not in kinds:
            if "time" not in kinds:
                return result  # parameters, inputs, discrete values: constant between events
            at, slope = _time_of_crossing(crossing)
            if at is not None and all(self.fl.symbols[s.element_hash()].is_parameter
                                      for s in ca.symvar(at)):
                self.time_events.append(at)
                self._right_of[result.element_hash()] = (at, slope, result)
                return result
        a, op, b = parts
        key = (op, _node_key(a), _node_key(b))
        known = self._relation_of.get(key)
        if known is not None:
            return known
        name = f"$relation[{len(self.part.relations)}]"
        start = 0.0
        sym, position = self._known(name, "relation", start, self._origin())
        self.part.relations.append(FlatRelation(sym, position, crossing, strict, result,
                                                self._origin(), parts,
                                                ca.fabs(a) + ca.fabs(b)))
        self._relation_of[key] = sym
        self.literals.add(sym, result)
        return sym

    def has_relations(self) -> bool:
        """Whether a comparison made a relation (whose symbol :meth:`literal` replaces)."""
        return bool(self.literals.literal)

    def literal(self, expr: ca.SX) -> ca.SX:
        """``expr`` with relation variables replaced by their comparisons (noEvent); a
        comparison may contain relations made before it (nested fmin/fmax)."""
        return self.literals.substituted(expr)

    # -- pre, initial, sample --------------------------------------------------------------
    def pre(self, expr: ca.SX) -> ca.SX:
        out = []
        for k in range(expr.numel()):
            e = expr[k] if expr.numel() > 1 else expr
            if e.is_constant():
                out.append(e)
                continue
            rec = self.fl.symbols.get(e.element_hash()) if e.is_symbolic() else None
            if rec is None:
                raise DeclarationError(f"pre({describe(e)}): pre() takes a variable (discrete "
                                       f"variable, relation or state), not an expression")
            if rec.is_parameter:
                out.append(e)
                continue
            var = self.fl.variables[rec.position]
            if not var.discrete:
                out.append(e)  # a continuous variable: its value at the event, before reinit
                continue
            sym = self._pre.get(rec.position)
            if sym is None:
                sym, position = self._known(f"pre({var.name})", "pre", var.start, var.origin)
                self.part.pre.append((position, rec.position))
                self._pre[rec.position] = sym
            out.append(sym)
        return ca.reshape(ca.vertcat(*out), *expr.shape)

    def initial_symbol(self) -> ca.SX:
        if self._initial is None:
            self._initial, self.part.initial = self._known(INITIAL, "initial", 1.0, "")
        return self._initial

    def starting_symbol(self) -> ca.SX:
        """1 where the simulator takes the when conditions' values before the start (their
        left limits there, against which a condition rises), else 0."""
        if self._starting is None:
            self._starting, self.part.starting = self._known(STARTING, "starting", 0.0, "")
        return self._starting

    def sample(self, start, interval) -> ca.SX:
        start, interval = ca.SX(start), ca.SX(interval)
        for what, value in (("start", start), ("interval", interval)):
            bad = [s for s in ca.symvar(value) if self._kind_of(s) != "known" or not
                   self.fl.symbols[s.element_hash()].is_parameter]
            if bad or value.numel() != 1:
                raise DeclarationError(f"{_where(self.fl.context.component)}: sample(start, "
                                       f"interval): {what} must be a number or a parameter "
                                       f"expression, not {describe(value)}")
        sym, position = self._known(f"sample({describe(start)}, {describe(interval)})",
                                    "sample", 0.0, self._origin())
        self.part.samples.append(FlatSample(position, start, interval, self._origin()))
        return sym

    def floor_of(self, x: ca.SX) -> ca.SX:
        """Modelica's ``floor``: the largest integer not above ``x``, held between events and
        changed at the events where ``x`` crosses the next integer up or the current one
        down. Per element: an integer that reads only knowns (parameters, inputs, discrete
        values) is constant between events anyway; any other is a discrete variable
        ``floor(x)``, set at the start (``initial()``) to ``floor(x)`` and by a when clause
        on the relations ``x >= d + 1`` and ``x < d``. The relation that fired
        decides the step (at a crossing ``x`` is the integer within round-off, and floor of
        it could read the one before)."""
        x = ca.SX(x)
        out = []
        for k in range(x.numel()):
            e = x[k] if x.numel() > 1 else x
            if all(self._kind_of(s) == "known" for s in ca.symvar(e)):
                out.append(ca.floor(e))
                continue
            comp = self.fl.context.component
            name = f"floor({describe(self.literal(e))})"
            sym, position = self._known(name, "variable", 0.0, self._origin())
            held = self.pre(sym)
            up, down = e >= sym + 1, e < sym   # relations: events where x crosses
            written = ca.floor(self.literal(e))
            value = ca.if_else(self.initial_symbol(), written, ca.if_else(
                up, ca.fmax(written, held + 1), ca.if_else(down, ca.fmin(written, held - 1),
                                                           held)))
            self.assigned[position] = f"'{name}'"
            self.part.whens.append(FlatWhen(
                [self.initial_symbol(), up, down], [(position, value)], [],
                comp.path if comp is not None else "", f"when {name} steps"))
            out.append(sym)
        return ca.reshape(ca.vertcat(*out), *x.shape)

    # -- equations ------------------------------------------------------------------------
    def discrete_target(self, lhs: ca.SX) -> int | None:
        """The position of the declared discrete variable that ``lhs`` is, else None."""
        if not lhs.is_symbolic():
            return None
        rec = self.fl.symbols.get(lhs.element_hash())
        if rec is None or rec.is_parameter:
            return None
        var = self.fl.variables[rec.position]
        return rec.position if var.discrete == "variable" else None

    def _claim(self, comp, position, where):
        var = self.fl.variables[position]
        if position in self.assigned:
            raise DeclarationError(
                f"{_where(comp)}: the discrete variable '{var.name}' is defined twice ("
                f"{self.assigned[position]} and {where}); give it one equation or one when "
                f"clause")
        self.assigned[position] = where
        self.fl.local_equations[id(comp)] = self.fl.local_equations.get(id(comp), 0) + 1

    def continuous_symbols(self) -> set:
        """The hashes of the continuous unknowns' symbols (not discrete, not inputs), made
        once, when the first discrete equation or when condition asks."""
        if self._continuous is None:
            self._continuous = {v.symbol.element_hash() for v in self.fl.variables
                                if not v.discrete and v.kind != "input"}
        return self._continuous

    def reads_continuous(self, expr) -> list:
        """The continuous unknowns ``expr`` reads directly (outside relations, which are
        discrete values by now)."""
        continuous = self.continuous_symbols()
        return [s for s in ca.symvar(ca.SX(expr)) if s.element_hash() in continuous]

    def add_discrete_equation(self, comp, position, value, shown):
        read = self.reads_continuous(value)
        if read:
            name = self.fl.variables[position].name
            raise DeclarationError(
                f"{_where(comp)}: '{describe(shown)}' defines the Discrete variable {name} "
                f"from the continuous {', '.join(str(s) for s in read[:4])}: a discrete "
                f"variable changes only at events, so it would hold its value between them; "
                f"compare instead (self.d == (x > 0.5) switches at the crossing), or make "
                f"{name} a Variable")
        self._claim(comp, position, f"the equation '{describe(shown)}'")
        self.part.discrete_equations.append(
            FlatDiscreteEquation(position, self._after_time_events(value), comp.path, shown))

    def _after_time_events(self, expr):
        """``expr`` (a when condition, a discrete equation's value, a when clause's
        assignment) with its relations on time and parameters taking, at their time event,
        the value they have just after it (``time > t0`` is true at t0), as a located
        crossing's relation does: read as written it is false at the event and turns true
        between events, unseen, and ``when(time > t0, ...)`` never fired, nor did
        ``d == (time > t0)`` switch. Wherever they sit (inside ``if_else`` too); continuous
        equations and the start read the comparison as written."""
        if not self._right_of:
            return expr
        if expr.numel() != 1:
            return ca.reshape(ca.vertcat(*[self._after_time_events(expr[k])
                                           for k in range(expr.numel())]), *expr.shape)
        memo = {}
        todo = [expr]
        while todo:   # (rebuilt from its operands upwards, each node once)
            e = todo[-1]
            h = e.element_hash()
            if h in memo:
                todo.pop()
                continue
            found = self._right_of.get(h)
            if found is not None:
                # (as written while the run starts: time > t0 from t0 is false before the
                # start and rises just after it, as a crossing there would)
                at, slope, written = found
                memo[h] = ca.if_else(self.starting_symbol(), written,
                                     _right_continuous(at, slope))
            elif e.is_symbolic() or e.is_constant() or not e.n_dep():
                memo[h] = e
            else:
                deps = [e.dep(i) for i in range(e.n_dep())]
                waiting = [d for d in deps if d.element_hash() not in memo]
                if waiting:
                    todo.extend(waiting)
                    continue
                done = [memo[d.element_hash()] for d in deps]
                memo[h] = (e if all(a is b or ca.is_equal(a, b) for a, b in zip(done, deps))
                           else ca.SX.unary(e.op(), done[0]) if len(done) == 1
                           else ca.SX.binary(e.op(), done[0], done[1]))
            todo.pop()
        return memo[expr.element_hash()]

    def add_when(self, comp, item: When):
        check_when(comp, item)
        conditions = item.condition if isinstance(item.condition, (list, tuple)) else [
            item.condition]
        written = [c[k] for c in map(ca.SX, conditions) for k in range(c.numel())]
        shown = f"when {', '.join(describe(self.literal(c)) for c in written)}"
        for c in written:
            self._check_condition(comp, c, shown)
        flat_conditions = [self._after_time_events(c) for c in written]
        assignments, reinits = [], []
        for stmt in item.body:
            if isinstance(stmt, Reinit):
                rec = self.fl.symbols.get(stmt.variable.element_hash())
                var = None if rec is None or rec.is_parameter else self.fl.variables[rec.position]
                if var is None or var.kind != "unknown":
                    raise DeclarationError(
                        f"{_where(comp)}: reinit({describe(stmt.variable)}, ...) in '{shown}': "
                        f"only continuous variables of the model can be re-initialized")
                var.state_select = "always"  # reinit acts on states (Modelica's rule)
                if self._initial is not None and any(  # (also inside logic_or)
                        ca.depends_on(c, self._initial) for c in written):
                    raise DeclarationError(
                        f"{_where(comp)}: reinit({describe(stmt.variable)}, ...) in '{shown}': "
                        f"initialization sets the states' values, which reinit does not "
                        f"change: give {var.name} its initial value as a fixed start "
                        f"(Fixed(value)) or an initial equation instead")
                earlier = self.reinitialized.get(rec.position)
                if earlier is not None:
                    raise DeclarationError(
                        f"{_where(comp)}: reinit({var.name}, ...) in '{shown}': {var.name} is "
                        f"re-initialized in '{earlier}' too; where both fire at one instant "
                        f"the result would depend on their order: give it one when clause "
                        f"(a list of conditions fires on any of them)")
                self.reinitialized[rec.position] = shown
                reinits.append((rec.position, self._after_time_events(ca.SX(stmt.value))))
                continue
            for k in range(stmt.numel()):
                e = stmt[k] if stmt.numel() > 1 else stmt
                position = self.discrete_target(e.dep(0)) if e.is_op(ca.OP_EQ) else None
                if position is None:
                    raise DeclarationError(
                        f"{_where(comp)}: '{describe(e)}' in '{shown}': a when clause assigns "
                        f"Discrete variables (self.d == expr) or re-initializes states "
                        f"(reinit(x, value))")
                self._claim(comp, position, f"'{shown}'")
                assignments.append((position, self._after_time_events(e.dep(1))))
        self.part.whens.append(FlatWhen(flat_conditions, assignments, reinits, comp.path, shown))

    def _check_condition(self, comp, condition, shown):
        """A when condition must be able to become true at an event: one of constants and
        parameters never does, nor an equality (x == 0.5 holds at no instant a crossing is
        found), nor a comparison of
        continuous variables under noEvent (no crossing is watched: the clause would fire
        only at some other event)."""
        def reads_continuous(e):
            return bool(self.reads_continuous(e))
        records = [self.fl.symbols.get(s.element_hash()) for s in ca.symvar(condition)]
        if all(rec is not None and rec.is_parameter for rec in records):  # (time: None)
            raise DeclarationError(
                f"{_where(comp)}: '{shown}': the condition "
                f"'{describe(self.literal(condition))}' reads only constants and parameters: "
                f"it does not change during a run, so the clause would never fire; for "
                f"what happens at the start use when(initial(), ...), else a condition on "
                f"time or on the model's variables")
        # (of discrete values an equality is fine: change(d) is d != pre(d))
        if (condition.is_op(ca.OP_EQ) or condition.is_op(ca.OP_NE)) and \
                reads_continuous(condition):
            raise DeclarationError(
                f"{_where(comp)}: '{shown}': '{describe(condition)}' is an equality of "
                f"continuous values, not a condition that becomes true at an event (no "
                f"crossing finds the instant it holds); write x >= value (or x <= value) "
                f"for the instant it is reached")
        todo, seen = [condition], set()
        while todo:   # (each node once: a condition's graph may share subexpressions)
            e = todo.pop()
            if e.is_symbolic() or e.is_constant() or e.element_hash() in seen:
                continue
            seen.add(e.element_hash())
            if any(e.is_op(op) for op in (ca.OP_LT, ca.OP_LE)) and reads_continuous(e):
                raise DeclarationError(
                    f"{_where(comp)}: '{shown}': the comparison '{describe(e)}' is evaluated "
                    f"without events (noEvent), so no crossing is watched and the clause "
                    f"would fire only when some other event happens; write the condition "
                    f"without noEvent")
            todo.extend(e.dep(i) for i in range(e.n_dep()))

    def drop_unused(self, expressions):
        """Relations that no equation uses any more (their comparisons went into noEvent)
        are dropped: no crossing function, no slot in the inputs."""
        part = self.part
        if not part.relations:
            return
        # not the crossing functions: a dropped relation keeps none it was made of alive
        exprs = list(expressions) + part.expressions(crossings=False)
        used = {s.element_hash() for s in ca.symvar(ca.vertcat(*exprs))} if exprs else set()
        used |= {self.fl.variables[b].symbol.element_hash() for _, b in part.pre}
        kept = []
        for r in part.relations:
            if r.symbol.element_hash() in used:
                kept.append(r)
            else:
                self.fl.variables[r.position].discrete = "unused"
        part.relations = kept

    def check_assigned(self):
        """Every declared discrete variable has its equation or when clause."""
        for position, var in enumerate(self.fl.variables):
            if var.discrete == "variable" and position not in self.assigned:
                comp = self.fl.declared_in.get(position, (None,))[0]
                raise DeclarationError(
                    f"{_where(comp)}: the discrete variable '{var.name}' is never assigned; "
                    f"define it by an equation (self.d == expr) or in a when clause")


def _entry(operand, k):
    """Entry ``k`` (column-major) of a comparison's operand; a scalar stands for every
    entry."""
    sx = ca.SX(operand)
    return sx if sx.numel() == 1 else sx[k]


def _node_key(value):
    """What identifies an operand of a comparison (a number, or an expression node)."""
    sx = ca.SX(value)
    if sx.numel() == 1 and sx.is_constant():
        return ("number", float(ca.DM(sx)))
    return ("node", tuple(sx[k].element_hash() for k in range(sx.numel())))


def _right_continuous(at, slope):
    """A relation on time and parameters (``crossing > 0`` or ``>= 0``, its crossing
    function of slope ``slope`` in time zero at the time event ``at``) as it reads at its
    time event and after: at the event it takes the value it has just after, as Modelica's
    event iteration gives a relation the value after its crossing (see
    :meth:`HybridCollector._after_time_events`). Time is compared with the event's own
    expression (``time >= at`` for a rising crossing), which the simulation stops at
    exactly: the crossing function itself may be a round-off below zero there."""
    # (casadi's own comparisons: SX's operators make relations while equations() run)
    rising, falling = _ORIGINAL["__ge__"](TIME, at), _ORIGINAL["__lt__"](TIME, at)
    if slope.is_constant():
        return rising if float(ca.DM(slope)) > 0 else falling
    return ca.if_else(_ORIGINAL["__gt__"](slope, ca.SX(0)), rising, falling)


def _time_of_crossing(crossing):
    """``(time, slope)``: where an affine function of time and parameters crosses zero
    and its slope in time (parameter expressions), or ``(None, None)`` if the function is
    not affine in time."""
    slope = ca.jacobian(crossing, TIME)
    if ca.depends_on(slope, TIME) or (slope.is_constant() and float(ca.DM(slope)) == 0.0):
        return None, None
    offset = ca.substitute(crossing, TIME, ca.SX(0))
    return ca.simplify(-offset / slope), slope
