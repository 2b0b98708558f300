"""Flattening: instance tree -> :class:`FlatModel` (scalar variables, parameters, equations).

Connections are resolved through a networkx graph whose nodes are ``(connector, side)``
pairs: a connector is *outside* in the ``connect`` statements of the component that owns it
and *inside* in those of its parent (Modelica's rule). Every connected component of that graph
is a connection set: potentials are equal, flows sum to zero with outside members counted
negative, and an inside connector that appears in no set gets ``flow = 0``.

Overdetermined potentials (orientations) form their own graph: component ``Branch``es are
required edges, connections optional ones; a spanning forest rooted at definite roots (or the
best potential root) decides where all entries are equated and where a connection closes a
loop and contributes only its residue equations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import networkx as nx
import numpy as np

from . import core
from .core import (Branch, Connect, Connector, Model, Parameter, PotentialRoot, Root, Variable,
                   _FlattenContext)
from .errors import BalanceError, DeclarationError, InvalidConnectionError, KinematicLoopError


@dataclass
class FlatVariable:
    """One scalar unknown (or input) of the flat model."""

    name: str
    symbol: ca.SX
    kind: str  # "unknown", "derivative" or "input"
    origin: str
    start: float = 0.0
    fixed: bool = False
    state_select: str = "default"
    unit: str = ""
    nominal: float = 1.0
    min: float = -np.inf
    max: float = np.inf
    is_flow: bool = False
    derivative_of: int | None = None
    derivative: int | None = None


@dataclass
class FlatParameter:
    """One scalar parameter: a numeric ``value`` or a ``binding`` to other parameters."""

    name: str
    symbol: ca.SX
    origin: str
    value: float | None
    binding: ca.SX | None
    unit: str = ""
    min: float = -np.inf
    max: float = np.inf


@dataclass
class FlatEquation:
    """One scalar equation ``residual == 0`` and where it came from. ``shown`` is its text
    or the equation as written (formatted by :attr:`description` when a message needs it:
    formatting every equation of a large model costs more than analysing it)."""

    residual: ca.SX
    origin: str
    shown: object
    kind: str = "model"  # "model", "connection", "unconnected flow", "residue", "initial"

    @property
    def description(self) -> str:
        if not isinstance(self.shown, str):
            self.shown = describe(self.shown)
        return self.shown


@dataclass
class FlatAssert:
    """A condition on parameters only (nonzero when it holds) and its message."""

    condition: ca.SX
    message: str
    origin: str


@dataclass
class FlatModel:
    """The flat DAE handed to structural analysis. Plain data, no behaviour."""

    name: str
    variables: list[FlatVariable]
    parameters: list[FlatParameter]
    equations: list[FlatEquation]
    initial_equations: list[FlatEquation]
    time_events: list[ca.SX]
    connection_graph: nx.Graph
    index: dict[str, int] = field(default_factory=dict)  # variable name -> position
    asserts: list[FlatAssert] = field(default_factory=list)

    def variable(self, name: str) -> FlatVariable:
        return self.variables[self.index[name]]


@dataclass
class _Record:
    """Symbol-table entry used while flattening (element of a declared variable)."""

    is_parameter: bool
    position: int


def _element_names(path: str, shape) -> list[str]:
    n, m = shape
    if (n, m) == (1, 1):
        return [path]
    if m == 1:
        return [f"{path}[{i}]" for i in range(n)]
    # casadi stores matrices column-major; name entries by (row, column).
    return [f"{path}[{i},{j}]" for j in range(m) for i in range(n)]


def describe(expr) -> str:
    """An expression as text for messages, cut to a readable length."""
    text = str(expr)
    return text if len(text) <= 160 else text[:157] + "..."


class _Flattener:
    def __init__(self, model: Model, analysis: str = "forward"):
        if analysis not in core.ANALYSES:
            raise DeclarationError(f"analysis must be one of {core.ANALYSES}, not {analysis!r}")
        self.analysis = analysis
        if not isinstance(model, Model):
            raise DeclarationError(f"flatten() takes a Model instance, not {type(model).__name__}")
        self.root = model
        self.variables: list[FlatVariable] = []
        self.parameters: list[FlatParameter] = []
        self.equations: list[FlatEquation] = []
        self.initial_equations: list[FlatEquation] = []
        self.symbols: dict[int, _Record] = {core.time.element_hash(): None}
        self.components: list[Model] = []
        self.connectors: list[tuple[Model, Connector]] = []
        self.signals: list[tuple[Model, Variable]] = []
        self.overdetermined: list[tuple[Model, Connector, Variable]] = []
        self.time_events: list = []
        # Per-component bookkeeping for balance diagnostics.
        self.local_equations: dict[int, int] = {}
        self.declared_in: dict[int, tuple[Model, Variable]] = {}  # position -> (owner, decl)
        self.input_positions: set[int] = set()
        self.inactive: dict[int, Variable] = {}  # symbol hash -> variable of another analysis
        self.asserts: list[FlatAssert] = []
        # The component that wrote each equation (None: generated by flattening), per list.
        self.equation_owners = {id(self.equations): [], id(self.initial_equations): []}
        self.connects: dict[int, list] = {}  # component id -> its connect statements
        self._connected_sets: dict | None = None  # connector id -> its connection set
        self._phase: str | None = None  # which components' equations() are running
        self.questions_asked = False  # is_root() or connected() was asked
        self.leaf_connects = False  # a component without sub-components connected

    # -- collect declarations -----------------------------------------------------------
    def collect(self):
        stack = [self.root]
        order = []
        while stack:
            comp = stack.pop()
            order.append(comp)
            self.components.append(comp)
            children = comp.components()
            stack.extend(reversed(children))
        self._rename_symbols(order)
        for comp in order:
            for key, member in comp._members.items():
                if isinstance(member, Parameter):
                    self._add_parameter(comp, member)
                elif isinstance(member, Variable):
                    if not self.active(member):
                        self._note_inactive(member)
                        continue
                    self._add_variable(comp, member, is_flow=False)
                    if member.kind in ("input", "output"):
                        self.signals.append((comp, member))
                elif isinstance(member, Connector):
                    self.connectors.append((comp, member))
                    for var in member._variables.values():
                        if not self.active(var):
                            self._note_inactive(var)
                            continue
                        self._add_variable(comp, var, is_flow=var.kind == "flow")
                        if var.kind == "overdetermined":
                            self.overdetermined.append((comp, member, var))

    def active(self, var: Variable) -> bool:
        """Whether the variable exists in the analysis being compiled."""
        return var.analysis is None or var.analysis == self.analysis

    def _note_inactive(self, var: Variable):
        for k in range(var.symbol.numel()):
            self.inactive[var.symbol[k].element_hash()] = var

    def _rename_symbols(self, order):
        """Give every symbol its full hierarchical name (messages and generated code read
        well), re-expressing parameter bindings and event times in the new symbols."""
        old, new = [], []
        for comp in order:
            for member in comp._members.values():
                decls = ([member] if isinstance(member, (Parameter, Variable)) else
                         list(member._variables.values()) if isinstance(member, Connector) else [])
                for d in decls:
                    fresh = ca.SX.sym(d.path, *d.shape)
                    if isinstance(d, Parameter):
                        old.append(ca.vec(d.symbol))
                        new.append(ca.vec(fresh))
                    d.symbol = fresh
                    object.__setattr__(d.owner, d.name, fresh)
        if not old:
            return
        # One substitution for all bindings and event times (one per item would be
        # quadratic in model size).
        bound = [m for comp in order for m in comp._members.values()
                 if isinstance(m, Parameter) and isinstance(m.value, ca.SX)]
        events = [(comp, k) for comp in order for k in range(len(comp._time_events))]
        exprs = [m.value for m in bound] + [ca.SX(comp._time_events[k]) for comp, k in events]
        if not exprs:
            return
        renamed = ca.substitute(exprs, [ca.vertcat(*old)], [ca.vertcat(*new)])
        for m, value in zip(bound, renamed):
            m.value = value
        for (comp, k), value in zip(events, renamed[len(bound):]):
            comp._time_events[k] = value

    def _add_parameter(self, comp, par: Parameter):
        names = _element_names(par.path, par.shape)
        value = par.value
        for k, name in enumerate(names):
            sym = par.symbol[k]
            if isinstance(value, ca.SX):
                binding, numeric = value[k], None
            else:
                binding, numeric = None, float(np.asarray(value).reshape(-1, order="F")[k])
            self.symbols[sym.element_hash()] = _Record(True, len(self.parameters))
            self.parameters.append(FlatParameter(name, sym, comp.path, numeric, binding,
                                                 par.unit, par.min, par.max))

    def _add_variable(self, comp, var: Variable, is_flow: bool):
        names = _element_names(var.path, var.shape)
        start = np.asarray(var.start, dtype=float).reshape(-1, order="F")
        external = (var.kind == "input" and comp is self.root) or var.input_in == self.analysis
        kind = "input" if external else "unknown"
        for k, name in enumerate(names):
            sym = var.symbol[k]
            if var.kind == "input" or external:
                self.input_positions.add(len(self.variables))
            self.symbols[sym.element_hash()] = _Record(False, len(self.variables))
            self.declared_in[len(self.variables)] = (comp, var)
            self.variables.append(FlatVariable(
                name, sym, kind, comp.path, float(start[k]), bool(var.fixed), var.state_select,
                var.unit, var.nominal, var.min, var.max, is_flow))

    # -- derivatives ----------------------------------------------------------------------
    def make_derivative(self, symbol):
        rec = self.symbols[symbol.element_hash()]
        var = self.variables[rec.position]
        if var.kind == "input" and var.derivative is None:
            raise DeclarationError(f"der({var.name}): the external input '{var.name}' cannot be "
                                   f"differentiated; filter it through a block with a state")
        if var.derivative is None:
            sym = ca.SX.sym(f"der({var.name})")
            pos = len(self.variables)
            self.symbols[sym.element_hash()] = _Record(False, pos)
            var.derivative = pos
            self.variables.append(FlatVariable(f"der({var.name})", sym, "derivative", var.origin,
                                               0.0, False, "default", "", var.nominal,
                                               derivative_of=rec.position))
        return self.variables[var.derivative].symbol

    # -- equations ------------------------------------------------------------------------
    def collect_equations(self, is_root):
        """Every component's equations() is called once. Composite models first: their
        connect statements are then known while the components that state physics run, so
        ``is_root()`` and ``connected()`` answer from the real connection structure. The
        flat equations keep the instance tree's order whatever the order of the calls."""
        ctx = _FlattenContext(self.symbols, self.make_derivative, is_root, self.analysis,
                              self.connected)
        composites = [c for c in self.components if c.components()]
        leaves = [c for c in self.components if not c.components()]
        collected = {}
        previous = _FlattenContext.activate(ctx)
        try:
            self._phase = "composites"
            for comp in composites:
                collected[id(comp)] = self._collect(comp)
            self._phase = "leaves"
            for comp in leaves:
                collected[id(comp)] = self._collect(comp)
        finally:
            _FlattenContext.activate(previous)
            self._phase = None
        for comp in self.components:
            equations, initial = collected[id(comp)]
            n_before = len(self.equations)
            for item in equations:
                self._add_equation(comp, item, self.equations, "model")
            for item in initial:
                self._add_equation(comp, item, self.initial_equations, "initial")
            self.local_equations[id(comp)] = len(self.equations) - n_before

    def _collect(self, comp):
        """One component's equations and initial equations; its connect statements go to
        ``self.connects``, declared derivatives and asserts are registered on the way."""
        equations, connects = [], self.connects.setdefault(id(comp), [])
        for item in _iterate(comp.equations(), comp, "equations"):
            if isinstance(item, Connect):
                connects.append(item)
                if self._phase == "leaves":
                    self.leaf_connects = True
            elif isinstance(item, core.Derivative):
                self.declare_derivative(comp, item)
            elif isinstance(item, core.Assert):
                self.declare_assert(comp, item)
            else:
                equations.append(item)
        initial = list(_iterate(comp.initial_equations(), comp, "initial_equations"))
        return equations, initial

    def _ask(self, question):
        """Bookkeeping of is_root()/connected(): answered from composite models'
        connections, so composite models must not ask, and components without
        sub-components must not connect."""
        if self._phase == "composites":
            raise DeclarationError(
                f"{question}() was asked while composite models' equations() ran; only "
                f"components without sub-components may ask it (their connection structure "
                f"is known by then)")
        self.questions_asked = True

    def connected(self, connector) -> list:
        """Answer to :meth:`Model.connected` (see there), from the composite models'
        connection sets."""
        self._ask("connected")
        if self._connected_sets is None:
            pairs = [(comp, item) for comp in self.components if comp.components()
                     for item in self.connects.get(id(comp), ())]
            self._connected_sets = _connection_sets_of(pairs)
        group = self._connected_sets.get(id(connector), ())
        return [c for c in group if c is not connector]

    def check_questions(self):
        """Connections that is_root()/connected() could not see are refused."""
        if self.questions_asked and self.leaf_connects:
            comp = next(c for c in self.components
                        if not c.components() and self.connects.get(id(c)))
            raise DeclarationError(
                f"{_where(comp)} connects its own connectors although it has no "
                f"sub-components; this model has components that ask is_root() or "
                f"connected(), which see only composite models' connections — write "
                f"the equations instead")

    def declare_assert(self, comp, item):
        for k in range(item.condition.numel()):
            cond = item.condition[k]
            for s in ca.symvar(cond):
                rec = self.symbols.get(s.element_hash())
                if rec is None or not rec.is_parameter:
                    raise DeclarationError(
                        f"{_where(comp)}: Assert('{item.message}') uses '{s}', which is not a "
                        f"parameter; only conditions on parameters are supported")
            self.asserts.append(FlatAssert(cond, item.message, comp.path))

    def declare_derivative(self, comp, item):
        for k in range(item.variable.numel()):
            recs = []
            for sym in (item.variable[k], item.derivative[k]):
                rec = self.symbols.get(sym.element_hash()) if sym.is_symbolic() else None
                if rec is None or rec.is_parameter or rec.position not in self.input_positions:
                    raise DeclarationError(f"{_where(comp)}: Derivative() relates Input "
                                           f"signals of the model, not '{sym}'; for other "
                                           f"variables write der(x) == y")
                recs.append(rec)
            var = self.variables[recs[0].position]
            if var.derivative is not None and var.derivative != recs[1].position:
                raise DeclarationError(
                    f"{_where(comp)}: Derivative({var.name}, ...) comes after der({var.name}) "
                    f"was used or another derivative was declared; declare it first, once")
            var.derivative = recs[1].position
            self.variables[recs[1].position].derivative_of = recs[0].position

    def _add_equation(self, comp, item, target, kind):
        if isinstance(item, bool):
            raise DeclarationError(
                f"{_where(comp)}: an equation evaluated to the Python bool {item}; write "
                f"equations on model variables (self.x == ...), not on plain numbers")
        if not isinstance(item, (ca.SX, ca.DM, float, int)):
            raise DeclarationError(f"{_where(comp)}: equations() yielded {item!r}; yield "
                                   f"'lhs == rhs' expressions or connect(...)")
        expr = item if isinstance(item, ca.SX) else ca.SX(item)
        for k in range(expr.numel()):
            e = expr if expr.numel() == 1 else expr[k]
            if not e.is_op(ca.OP_EQ):
                raise DeclarationError(
                    f"{_where(comp)}: '{describe(e)}' is not an equation; write lhs == rhs")
            residual = e.dep(0) - e.dep(1)
            target.append(FlatEquation(residual, comp.path, e, kind))
            self.equation_owners[id(target)].append(comp)

    def check_symbols(self):
        """Every symbol in the equations belongs to the model (one pass over all of them;
        the equation at fault is looked for only when one does not)."""
        for target in (self.equations, self.initial_equations):
            owners = self.equation_owners[id(target)]
            residuals = [eq.residual for eq, comp in zip(target, owners) if comp is not None]
            if not residuals:
                continue
            foreign = [s for s in ca.symvar(ca.vertcat(*residuals))
                       if s.element_hash() not in self.symbols]
            if not foreign:
                continue
            for eq, comp in zip(target, owners):
                if comp is not None and ca.depends_on(eq.residual, foreign[0]):
                    self._check_symbols(comp, eq.residual, eq.shown)

    def _check_symbols(self, comp, residual, shown):
        for s in ca.symvar(residual):
            if s.element_hash() not in self.symbols:
                other = self.inactive.get(s.element_hash())
                if other is not None:
                    raise DeclarationError(
                        f"{_where(comp)}: equation '{describe(shown)}' uses '{other.path}', "
                        f"which exists only in the '{other.analysis}' analysis, not in "
                        f"'{self.analysis}'; test self.analysis before using it")
                raise DeclarationError(
                    f"{_where(comp)}: equation '{describe(shown)}' uses '{s}', which is not a "
                    f"variable or parameter of this model (a symbol of another model instance?)")

    # -- connections ------------------------------------------------------------------------
    def build_connection_graph(self) -> nx.Graph:
        graph = nx.Graph()
        for comp in self.components:
            for stmt in self.connects.get(id(comp), ()):
                nodes = [self._connect_node(comp, item, stmt) for item in stmt.items]
                first = nodes[0]
                for other in nodes[1:]:
                    self._check_compatible(comp, stmt, first, other)
                    graph.add_edge(first, other, owner=comp)
        return graph

    def _connect_node(self, comp, item, stmt):
        if isinstance(item, Connector):
            owner = item.owner
            if owner is comp:
                return (item, "outside")
            if owner is not None and owner._parent is comp:
                return (item, "inside")
            raise InvalidConnectionError(
                f"{_where(comp)}: {stmt!r} names connector '{item.path}', which is neither a "
                f"connector of {comp.path or 'the model'} nor of one of its direct "
                f"sub-components; connect through the sub-component's own connectors")
        if isinstance(item, ca.SX) and item.numel() >= 1:
            recs = [self.symbols.get(item[k].element_hash()) if item[k].is_symbolic() else None
                    for k in range(item.numel())]
            if all(recs) and not any(r.is_parameter for r in recs):
                var_comp, decl = self.declared_in[recs[0].position]
                if decl.kind in ("input", "output"):
                    if var_comp is comp:
                        return (decl, "outside")
                    if var_comp._parent is comp:
                        return (decl, "inside")
                    raise InvalidConnectionError(
                        f"{_where(comp)}: {stmt!r} names signal '{decl.path}', which belongs "
                        f"neither to this component nor to a direct sub-component")
                raise InvalidConnectionError(
                    f"{_where(comp)}: connect() takes connectors or Input/Output signals; "
                    f"'{self.variables[recs[0].position].name}' is a plain variable — write an "
                    f"equation instead")
        raise InvalidConnectionError(f"{_where(comp)}: connect() cannot take {item!r}; pass "
                                     f"connectors (e.g. self.resistor.p) or Input/Output signals")

    def _check_compatible(self, comp, stmt, a, b):
        (ia, _), (ib, _) = a, b
        if isinstance(ia, Connector) != isinstance(ib, Connector):
            raise InvalidConnectionError(f"{_where(comp)}: {stmt!r} mixes a physical connector "
                                         f"with a signal; connect like with like")
        if isinstance(ia, Connector):
            sa, sb = ia.signature(), ib.signature()
            if sa != sb:
                detail = _signature_difference(ia, ib)
                raise InvalidConnectionError(
                    f"{_where(comp)}: cannot connect '{ia.path}' ({type(ia).__name__}) with "
                    f"'{ib.path}' ({type(ib).__name__}): {detail}")
        elif ia.shape != ib.shape:
            raise InvalidConnectionError(f"{_where(comp)}: {stmt!r}: signals '{ia.path}' "
                                         f"{ia.shape} and '{ib.path}' {ib.shape} differ in size")

    def connection_equations(self, graph: nx.Graph):
        """Potentials equal, flows summed, per connection set; returns optional edges of the
        overdetermined graph as (node_a, node_b, owner)."""
        optional_edges = []
        sym_of = self._symbol_of
        for nodes in _connected_sets(graph):
            owner = graph.edges[next(iter(graph.edges(nodes[0])))]["owner"]
            first_item = nodes[0][0]
            if isinstance(first_item, Connector):
                for key, var in first_item._variables.items():
                    if not self.active(var):
                        continue
                    if var.kind == "flow":
                        terms = [sym_of(item, key) * (1 if side == "inside" else -1)
                                 for item, side in nodes]
                        total = _sum_columns(terms)
                        names = ", ".join(f"{'+' if side == 'inside' else '-'}{item.path}.{key}"
                                          for item, side in nodes)
                        self._emit(total, owner, f"flow sum: {names} = 0", "connection")
                    elif var.kind == "overdetermined":
                        for (ia, _), (ib, _) in _tree_pairs(graph, nodes):
                            optional_edges.append((ia._variables[key], ib._variables[key], owner))
                    else:
                        base = sym_of(nodes[0][0], key)
                        for item, _side in nodes[1:]:
                            self._emit(base - sym_of(item, key), owner,
                                       f"{nodes[0][0].path}.{key} = {item.path}.{key}",
                                       "connection")
            else:
                sources = [(d, s) for d, s in nodes
                           if (d.kind == "output" and s == "inside")
                           or (d.kind == "input" and s == "outside")]
                if len(sources) != 1:
                    what = ("no output drives" if not sources else
                            "more than one output drives")
                    raise InvalidConnectionError(
                        f"{_where(owner)}: {what} the signals "
                        f"{', '.join(d.path for d, _ in nodes)}; connect exactly one Output "
                        f"(or the enclosing model's Input) to each set of Inputs")
                src = sources[0][0]
                for d, _ in nodes:
                    if d is not src:
                        self._emit(d.symbol - src.symbol, owner, f"{d.path} = {src.path}",
                                   "connection")
        return optional_edges

    def unconnected(self, graph: nx.Graph):
        for comp, conn in self.connectors:
            if (conn, "inside") in graph:
                continue
            for key, var in conn._variables.items():
                if var.kind == "flow" and self.active(var):
                    self._emit(var.symbol, comp._parent or comp,
                               f"{conn.path}.{key} = 0 (unconnected)", "unconnected flow")
        for comp, sig in self.signals:
            if sig.kind == "input" and comp is not self.root and (sig, "inside") not in graph:
                raise InvalidConnectionError(
                    f"input '{sig.path}' of {type(comp).__name__} is not connected; connect it "
                    f"to an Output (e.g. a Constant block) in {_where(comp._parent)}")

    def _symbol_of(self, connector, key):
        return connector._variables[key].symbol

    def _emit(self, expr, owner, description, kind):
        expr = ca.SX(expr)
        for k in range(expr.numel()):
            suffix = "" if expr.numel() == 1 else f" [{k}]"
            self.equations.append(FlatEquation(expr[k], owner.path, description + suffix, kind))
            self.equation_owners[id(self.equations)].append(None)  # made here: no check
            self.local_equations[id(owner)] = self.local_equations.get(id(owner), 0) + 1

    # -- overdetermined connectors ------------------------------------------------------------
    def collect_roles(self):
        roots, potential, branches = [], [], []
        var_of = {}
        for comp, conn, var in self.overdetermined:
            var_of[var.symbol[0].element_hash()] = var
        for comp in self.components:
            for role in _iterate(comp.connection_roles(), comp, "connection_roles"):
                if isinstance(role, Root):
                    roots.append(self._overdetermined(comp, role.symbol, var_of))
                elif isinstance(role, PotentialRoot):
                    potential.append((self._overdetermined(comp, role.symbol, var_of),
                                      role.priority))
                elif isinstance(role, Branch):
                    branches.append((self._overdetermined(comp, role.a, var_of),
                                     self._overdetermined(comp, role.b, var_of), comp))
                else:
                    raise DeclarationError(f"{_where(comp)}: connection_roles() yields Root, "
                                           f"PotentialRoot or Branch, not {role!r}")
        return roots, potential, branches

    def _overdetermined(self, comp, symbol, var_of):
        var = var_of.get(ca.SX(symbol)[0].element_hash()) if isinstance(symbol, ca.SX) else None
        if var is None:
            raise DeclarationError(f"{_where(comp)}: connection roles take an Overdetermined "
                                   f"connector variable (e.g. self.frame_a.R)")
        return var

    def spanning_tree(self, roots, potential, branches, optional_edges):
        """Decide which overdetermined connections equate entries and which give residues."""
        graph = nx.MultiGraph()
        for _, _, var in self.overdetermined:
            graph.add_node(var)
        super_root = "<root>"
        graph.add_node(super_root)
        for a, b, comp in branches:
            graph.add_edge(a, b, weight=0, kind="branch", owner=comp)
        for a, b, comp in optional_edges:
            graph.add_edge(a, b, weight=1, kind="connection", owner=comp)
        for r in roots:
            graph.add_edge(super_root, r, weight=-2, kind="root", owner=None)
        chosen = _choose_potential_roots(graph.subgraph([n for n in graph if n != super_root]),
                                         roots, potential)
        for var in chosen:
            graph.add_edge(super_root, var, weight=-1, kind="root", owner=None)
        tree_edges = set()
        for u, v, key, data in nx.minimum_spanning_edges(graph, algorithm="kruskal", keys=True,
                                                          data=True):
            tree_edges.add((id(data["owner"]), id(u), id(v), key))
            tree_edges.add((id(data["owner"]), id(v), id(u), key))
        for u, v, key, data in graph.edges(keys=True, data=True):
            in_tree = (id(data["owner"]), id(u), id(v), key) in tree_edges
            # Root edges (weight < 0) always enter the tree first; a connection that joins
            # two rooted trees closes a loop and gives a residue like any other loop.
            if data["kind"] == "branch" and not in_tree:
                raise BalanceError(
                    f"{_where(data['owner'])}: the rigid branch '{u.path}' -> '{v.path}' closes "
                    f"a loop of rigid connections (or joins two roots); cut the loop with a "
                    f"joint that has no branch, or remove a root")
            if data["kind"] == "connection":
                if in_tree:
                    self._emit(u.symbol - v.symbol, data["owner"], f"{u.path} = {v.path}",
                               "connection")
                elif u.residue is None:
                    raise KinematicLoopError(_loop_message(graph, tree_edges, u, v, data["owner"],
                                                           roots + chosen))
                else:
                    self._emit(u.residue(u.symbol, v.symbol), data["owner"],
                               f"loop residue {u.path} ~ {v.path}", "residue")
        return {id(var) for var in chosen}

    # -- balance ------------------------------------------------------------------------------
    def check_balance(self):
        n_unknown = sum(1 for v in self.variables if v.kind == "unknown")
        n_eq = len(self.equations)
        if n_eq == n_unknown:
            return
        lines = []
        by_origin: dict[str, list[FlatEquation]] = {}
        for e in self.equations:
            by_origin.setdefault(e.origin, []).append(e)
        for comp in self.components:
            diff = self._local_imbalance(comp)
            if diff:
                sample = "; ".join(e.description for e in by_origin.get(comp.path, [])[:6])
                lines.append(f"  {_where(comp)}: {diff:+d} equations "
                             f"({'surplus' if diff > 0 else 'missing'}); its equations: "
                             f"{sample or 'none'}")
        what = "too many" if n_eq > n_unknown else "too few"
        advice = ("remove or replace the surplus equations" if n_eq > n_unknown else
                  "add the missing equations or bind the unconstrained variables")
        raise BalanceError(
            f"model {type(self.root).__name__} is unbalanced: {n_eq} equations for "
            f"{n_unknown} unknowns ({what} equations); {advice}.\n" +
            ("\n".join(lines) if lines else "  (every component is locally balanced; the "
             "imbalance comes from connections)"))

    def _local_imbalance(self, comp) -> int:
        own_unknowns = 0
        own_flows = 0
        handed = 0
        for key, m in comp._members.items():
            if isinstance(m, Variable):
                if m.kind != "input" and self.active(m) and m.input_in != self.analysis:
                    own_unknowns += m.shape[0] * m.shape[1]
            elif isinstance(m, Connector):
                for v in m._variables.values():
                    if not self.active(v):
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
                                      if v.kind == "flow" and self.active(v))
                    elif isinstance(m2, Variable) and m2.kind == "input":
                        handed += m2.shape[0] * m2.shape[1]
        if comp is self.root:
            handed += own_flows
        have = self.local_equations.get(id(comp), 0)
        return have - (own_unknowns - own_flows + handed)


def _loop_message(graph, tree_edges, u, v, owner, roots) -> str:
    """Name the components on the loop that the connection u–v closes."""
    tree = nx.Graph()
    tree.add_nodes_from([u, v])
    for a, b, key, data in graph.edges(keys=True, data=True):
        if "<root>" not in (a, b) and (id(data["owner"]), id(a), id(b), key) in tree_edges:
            tree.add_edge(a, b)
    try:
        path = nx.shortest_path(tree, u, v)
    except nx.NetworkXNoPath:
        # u and v hang on different roots: the connection joins two roots.
        def root_of(x):
            part = nx.node_connected_component(tree, x)
            return next((r for r in roots if r in part), None)
        ru, rv = root_of(u), root_of(v)
        names = [r.owner.path if r is not None else "?" for r in (ru, rv)]
        return (f"{_where(owner)}: connect({u.owner.path}, {v.owner.path}) joins two roots "
                f"rigidly: '{names[0]}' and '{names[1]}' both fix the orientation (e.g. a World "
                f"and a Fixed frame connected through rigid parts); remove one root or put a "
                f"joint between them — the closed chain is a kinematic loop, not supported "
                f"by this connector type yet")
    members = []
    for var in path:
        comp_path = var.owner.owner.path if var.owner is not None and var.owner.owner else "?"
        if comp_path not in members:
            members.append(comp_path)
    return (f"{_where(owner)}: connect({u.owner.path}, {v.owner.path}) closes a kinematic loop "
            f"through {' -> '.join(members)}; closed loops are not supported by this connector "
            f"type yet (remove one connection or replace a joint of the loop by a force "
            f"element)")


def _signature_difference(a: Connector, b: Connector) -> str:
    va, vb = a._variables, b._variables
    for key in va:
        if key not in vb:
            return f"'{b.path}' has no variable '{key}'"
        if va[key].kind != vb[key].kind:
            return (f"'{key}' is a {va[key].kind} variable in '{a.path}' but a {vb[key].kind} "
                    f"variable in '{b.path}' (flow connected to non-flow)")
        if va[key].shape != vb[key].shape:
            return f"'{key}' has shape {va[key].shape} vs {vb[key].shape}"
    extra = [k for k in vb if k not in va]
    return f"'{a.path}' has no variable '{extra[0]}'" if extra else "different connector types"


def _connected_sets(graph: nx.Graph):
    # Deterministic: networkx yields components in node insertion order; members sorted by
    # that same order.
    order = {n: i for i, n in enumerate(graph.nodes)}
    for comp in nx.connected_components(graph):
        yield sorted(comp, key=order.__getitem__)


def _tree_pairs(graph: nx.Graph, nodes):
    """Edges of a spanning tree of one connection set (for optional overdetermined edges)."""
    sub = graph.subgraph(nodes)
    return list(nx.bfs_edges(sub, nodes[0]))


def _sum_columns(terms):
    # Pairwise, so a flow sum over n connectors is an expression of depth log2(n).
    while len(terms) > 1:
        paired = [terms[k] + terms[k + 1] for k in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            paired.append(terms[-1])
        terms = paired
    return terms[0]


def _where(comp) -> str:
    if comp is None:
        return "model"
    return f"{type(comp).__name__} '{comp.path}'" if comp.path else f"model {type(comp).__name__}"


def _iterate(items, comp, method):
    if items is None:
        return
    try:
        iterator = iter(items)
    except TypeError as exc:
        raise DeclarationError(f"{_where(comp)}: {method}() must return or yield items") from exc
    yield from iterator


def flatten(model: Model, analysis: str = "forward") -> FlatModel:
    """Flatten a model instance into a :class:`FlatModel` for ``analysis`` ("forward" or
    "inverse": which analysis-specific variables exist and what ``Model.analysis`` says).

    Example::

        flat = flatten(RCCircuit())
        print(len(flat.equations), [v.name for v in flat.variables][:5])
    """
    fl = _Flattener(model, analysis)
    fl.collect()
    roots, potential, branches = fl.collect_roles()
    # Roots must be known before equations run (components may ask is_root()); the tree
    # itself needs the connect statements, which equations() yields. Potential-root choice
    # depends only on roles and the connection structure, so it is decided in two steps.
    var_by_hash = {v.symbol[0].element_hash(): v for _, _, v in fl.overdetermined}
    root_ids = {id(r) for r in roots}
    early_choice: set[int] | None = None  # decided on the first is_root() question

    def is_root(symbol):
        nonlocal early_choice
        var = fl._overdetermined(None, symbol, var_by_hash)
        if id(var) in root_ids:
            return True
        fl._ask("is_root")
        if early_choice is None:
            early_choice = _choose_roots_early(fl, roots, potential, branches)
        return id(var) in early_choice

    fl.collect_equations(is_root)
    fl.check_symbols()
    fl.check_questions()
    # After equations(): components may declare events there as well as in __init__.
    fl.time_events = [at for comp in fl.components for at in comp._time_events]
    graph = fl.build_connection_graph()
    optional = fl.connection_equations(graph)
    if fl.overdetermined:
        chosen = fl.spanning_tree(roots, potential, branches, optional)
        if early_choice is not None and chosen != early_choice:
            raise DeclarationError("internal: potential-root choice changed after equations ran")
    fl.unconnected(graph)
    fl.check_balance()
    flat = FlatModel(type(model).__name__, fl.variables, fl.parameters, fl.equations,
                     fl.initial_equations, fl.time_events, graph)
    flat.index = {v.name: i for i, v in enumerate(flat.variables)}
    flat.asserts = fl.asserts
    return flat


def _choose_roots_early(fl, roots, potential, branches):
    """Potential-root choice from component roles and connect statements (needed while
    equations are still being collected)."""
    graph = nx.Graph()
    for _, _, var in fl.overdetermined:
        graph.add_node(var)
    for a, b, _ in branches:
        graph.add_edge(a, b)
    # Leaves' equations() are still running: the composite models' connections are known.
    for item in (item for comp in fl.components if comp.components()
                 for item in fl.connects.get(id(comp), ())):
        conns = [c for c in item.items if isinstance(c, Connector)]
        for c1, c2 in zip(conns, conns[1:]):
            for key, var in c1._variables.items():
                if var.kind == "overdetermined" and key in c2._variables:
                    graph.add_edge(var, c2._variables[key])
    return {id(var) for var in _choose_potential_roots(graph, roots, potential)}


def _choose_potential_roots(graph, roots, potential):
    """In every connected part of the orientation graph without a definite root, the
    potential root with the lowest (priority, declaration order) becomes the root. A part
    with neither is an error. Linear in the graph size."""
    parts = list(nx.connected_components(graph))
    part_of = {var: k for k, nodes in enumerate(parts) for var in nodes}
    rooted = {part_of[r] for r in roots}
    best: dict[int, tuple] = {}
    for i, (var, priority) in enumerate(potential):
        k = part_of[var]
        if k not in rooted and (k not in best or (priority, i) < best[k][0]):
            best[k] = ((priority, i), var)
    for k, nodes in enumerate(parts):
        if k not in rooted and k not in best:
            names = sorted(v.path for v in nodes)
            raise BalanceError(
                f"the orientation of {', '.join(names[:6])} is not determined: no root "
                f"(world/fixed frame) and no potential root is connected to it; connect it "
                f"to a root")
    return [var for _, var in sorted(best.values(), key=lambda item: item[0][1])]


def _connection_sets_of(statements) -> dict:
    """Connection sets from connect statements (``(owner, Connect)`` pairs), as connector
    id -> member connectors that belong to components stating physics (ports of composites
    are looked through)."""
    graph = nx.Graph()
    ports = set()
    for comp, item in statements:
        conns = [c for c in item.items if isinstance(c, Connector)]
        for c in conns:
            graph.add_node(c)
            if c.owner is comp:
                ports.add(id(c))
        graph.add_edges_from(zip(conns, conns[1:]))
    sets = {}
    order = {c: i for i, c in enumerate(graph.nodes)}  # deterministic member order
    for part in nx.connected_components(graph):
        members = sorted((c for c in part if id(c) not in ports), key=order.__getitem__)
        for c in part:
            sets[id(c)] = members
    return sets
