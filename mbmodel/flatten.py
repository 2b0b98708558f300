"""Flattening: instance tree -> :class:`~mbmodel.flat.FlatModel` (scalar variables,
parameters, equations).

This module collects declarations into a symbol table and calls every component's
``equations()`` once (composite models first, so their connections are known while the
components that state physics run). The other jobs have their own modules, functions of
the flattener: :mod:`mbmodel.connections` (connection graph and connection-set equations),
:mod:`mbmodel.orientation` (overdetermined connectors: roots, branches, spanning tree, loop
residues) and :mod:`mbmodel.balance` (equation count per component). The result is plain
data (:mod:`mbmodel.flat`).
"""

from __future__ import annotations

from contextlib import nullcontext
from itertools import repeat
from dataclasses import dataclass

import casadi as ca
import networkx as nx
import numpy as np

from . import core
from .alias import linear_pattern
from .balance import check_balance
from .connections import (build_connection_graph, connection_equations, connection_sets_of,
                          cut_sides, overdetermined_edges, unconnected)
from .core import Connect, Connector, Model, Parameter, Variable, _FlattenContext, _iterate, _where
from .errors import DeclarationError, ModelError
from .discrete import Reinit, RelationsSwitchAtEvents, When
from .flat import (FlatAssert, FlatEquation, FlatModel, FlatParameter, FlatVariable,
                   ShownWithRelations, at_parameter_values, describe, resolve_bindings,
                   stacked)
from .hybrid import HybridCollector
from .visuals import resolve as resolve_visuals
from .templates import EquationTemplate, Instantiated, Recorder, partners, template_key
from .orientation import (choose_roots_early, collect_roles, emit_tree_equations,
                          overdetermined_variable, spanning_tree)

__all__ = ["flatten", "FlatModel", "FlatVariable", "FlatParameter", "FlatEquation",
           "FlatAssert", "describe"]


@dataclass(slots=True)
class _Record:
    """Symbol-table entry used while flattening (element of a declared variable)."""

    is_parameter: bool
    position: int


def _column(symbol: ca.SX) -> ca.SX:
    """``symbol``'s entries as a column (``ca.vec`` costs ~12 µs from Python in overload
    resolution, even for a column)."""
    return symbol if symbol.size2() == 1 else ca.vec(symbol)


def _element_names(path: str, shape) -> list[str]:
    n, m = shape
    if (n, m) == (1, 1):
        return [path]
    if m == 1:
        return [f"{path}[{i}]" for i in range(n)]
    # casadi stores matrices column-major; name entries by (row, column).
    return [f"{path}[{i},{j}]" for j in range(m) for i in range(n)]


def check_model_instance(model, caller: str) -> None:
    """Refuse anything but a model instance, saying what was given (``caller``: the
    function the user called, e.g. ``"compile()"``).

    Example: ``check_model_instance(model, "compile()")``"""
    if isinstance(model, type) and issubclass(model, Model):
        raise DeclarationError(f"a Model instance is needed, not the class "
                               f"{model.__name__}: write {model.__name__}()")
    if not isinstance(model, Model):
        raise DeclarationError(f"{caller} takes a Model instance, not {type(model).__name__}")


class _Flattener:
    def __init__(self, model: Model, analysis: str = "forward", parameters: str = "symbolic"):
        if analysis not in core.ANALYSES:
            raise DeclarationError(f"analysis must be one of {core.ANALYSES}, not {analysis!r}")
        self.analysis = analysis
        self.parameter_mode = parameters
        check_model_instance(model, "flatten()")
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
        self.loop_components: set[str] = set()  # paths of components on kinematic loops
        self.tear_hints: set[str] = set()  # flows at loop cuts
        self.unconnected_flows: dict[int, str] = {}  # equation -> its unconnected connector
        self.unvalued: list[str] = []  # parameters no one gave a value (0 is used)
        self.loop_closers: list = []  # ClosesLoop roles: (a, b, component)
        self.one_way_branches: list = []  # Branch roles with one_way: (a, b, component, text)
        self.roles = ([], [], [])  # roots, potential roots, branches (collect_roles)
        self.early_cuts = None  # connector id -> its side of a loop cut (loop_cut_side)
        self.early_tree = None  # (graph, spanning_tree result) behind early_cuts
        self.time_events: list = []
        # Per-component bookkeeping for balance diagnostics.
        self.local_equations: dict[int, int] = {}
        #: (the local balance check) connector type -> whether it is balanced, and the
        #: components that connect unbalanced ones (see balance.balanced_connector)
        self.balanced_connectors: dict[type, bool] = {}
        self.balance_unchecked: set[int] = set()
        self.declared_in: dict[int, tuple[Model, Variable]] = {}  # position -> (owner, decl)
        self.first_position: dict[int, int] = {}  # id of a declared variable -> its position
        self.declared_symbols: dict[int, ca.SX] = {}  # first position -> declared symbol
        self.read_forms: dict = {}  # alias forms of generated equations, by kind (alias_forms)
        self.input_positions: set[int] = set()
        self.inactive: dict[int, Variable] = {}  # symbol hash -> variable of another analysis
        # the symbols read before renaming, with their declarations (see _rename_symbols)
        self.earlier: list = []
        self.asserts: list[FlatAssert] = []
        self.run_asserts: list[FlatAssert] = []  # conditions that read variables
        # The component that wrote each equation (None: generated by flattening), per list.
        self.equation_owners = {id(self.equations): [], id(self.initial_equations): []}
        # the equations' residuals in columns, in order (see FlatModel.residual_vector)
        self.residual_pieces: list[ca.SX] = []
        self.connects: dict[int, list] = {}  # component id -> its connect statements
        self._connected_sets: dict | None = None  # connector id -> its connection set
        self._phase: str | None = None  # which components' equations() are running
        self.questions_asked = False  # is_root() or loop_cut_side() was asked
        self.connected_answers: list = []  # (connector, what connected() answered)
        self.leaf_connects = False  # a component without sub-components connected
        self.context = None  # the _FlattenContext while equations() run
        self.hybrid = HybridCollector(self)
        self.record = _Record
        self.use_templates = True  # equations() once per component structure (templates)
        self.templates: dict = {}  # template key -> EquationTemplate, or None: not one
        self.symbolic_starts: list = []  # variables whose start is a parameter expression
        self.start_expressions: dict = {}  # their elements' expressions, by position

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
        for element in var.symbol.elements():  # one call, not one index per entry
            self.inactive[element.element_hash()] = var

    def _rename_symbols(self, order):
        """Give every symbol its full hierarchical name (messages and generated code read
        well), re-expressing parameter bindings and event times in the new symbols."""
        old, new = [], []
        self.symbolic_starts = []  # (found on the same pass)
        for comp in order:
            for member in comp._members.values():
                decls = ([member] if isinstance(member, (Parameter, Variable)) else
                         list(member._variables.values()) if isinstance(member, Connector) else [])
                for d in decls:
                    if getattr(d, "start_expression", None) is not None:
                        self.symbolic_starts.append(d)
                    fresh = ca.SX.sym(d.path, *d.shape)
                    if d._symbol is not None:  # read before: an expression may hold it
                        self.earlier.append((d._symbol, d))
                        if isinstance(d, Parameter):  # a binding or an event time may
                            old.append(_column(d.symbol))
                            new.append(_column(fresh))
                    d.symbol = fresh
                    if d.name in vars(d.owner):  # (else read through its class's declaration)
                        object.__setattr__(d.owner, d.name, fresh)
        if not old:
            return
        # One substitution for all bindings, start values and event times (one per item
        # would be quadratic in model size).
        bound = [m for comp in order for m in comp._members.values()
                 if isinstance(m, Parameter) and isinstance(m.value, ca.SX)]
        events = [(comp, k) for comp in order for k in range(len(comp._time_events))]
        scales = [(comp, k) for comp in order for k in range(len(comp._time_scales))]
        exprs = ([m.value for m in bound] + [v.start_expression for v in self.symbolic_starts]
                 + [ca.SX(comp._time_events[k]) for comp, k in events]
                 + [ca.SX(comp._time_scales[k]) for comp, k in scales])
        if not exprs:
            return
        renamed = ca.substitute(exprs, [ca.vertcat(*old)], [ca.vertcat(*new)])
        for m, value in zip(bound, renamed):
            m.__dict__["value"] = value  # (the same binding renamed: no change to note)
        for v, value in zip(self.symbolic_starts, renamed[len(bound):]):
            v.start_expression = value
        renamed = renamed[len(self.symbolic_starts):]
        for (comp, k), value in zip(events, renamed[len(bound):]):
            comp._time_events[k] = value
        for (comp, k), value in zip(scales, renamed[len(bound) + len(events):]):
            comp._time_scales[k] = value

    def _add_parameter(self, comp, par: Parameter):
        names = _element_names(par.path, par.shape)
        if not getattr(par, "valued", True):
            self.unvalued.append(par.path)
        value = par.value
        elements = par.symbol.elements()
        if isinstance(value, ca.SX):
            bindings = value.elements()
        else:
            numbers = np.asarray(value, dtype=float).reshape(-1, order="F")
        for k, name in enumerate(names):
            sym = elements[k]
            if isinstance(value, ca.SX):
                binding, numeric = bindings[k], None
            else:
                binding, numeric = None, float(numbers[k])
            self.symbols[sym.element_hash()] = _Record(True, len(self.parameters))
            self.parameters.append(FlatParameter(name, sym, comp.path, numeric, binding,
                                                 par.unit, par.min, par.max))

    def _add_variable(self, comp, var: Variable, is_flow: bool):
        names = _element_names(var.path, var.shape)
        start = np.asarray(var.start, dtype=float).reshape(-1, order="F").tolist()
        external = (var.kind == "input" and comp is self.root) or var.input_in == self.analysis
        discrete = "variable" if var.kind == "discrete" else ""
        kind = "input" if external or discrete else "unknown"
        # Per entry only what differs (paths are recomputed up the tree on every access).
        # a start given by parameters is fixed by an initial equation (symbolic_starts)
        origin, start_given = comp.path, getattr(var, "start_given", True)
        fixed = bool(var.fixed) and var.start_expression is None
        is_input = var.kind == "input" or external
        declared = (comp, var)
        first = len(self.variables)
        self.first_position[id(var)] = first
        self.declared_symbols[first] = var.symbol
        elements = var.symbol.elements()
        positions = range(first, first + len(elements))
        if is_input:
            self.input_positions.update(positions)
        # per entry in bulk: ~250 000 entries in a 1000-link chain
        self.symbols.update(zip([sym.element_hash() for sym in elements],
                                map(_Record, repeat(False), positions)))
        self.declared_in.update(zip(positions, repeat(declared)))
        state_select, unit, nominal, low, high = (var.state_select, var.unit, var.nominal,
                                                  var.min, var.max)
        self.variables.extend([
            FlatVariable(name, sym, kind, origin, value, fixed, state_select, unit, nominal,
                         low, high, is_flow, start_given=start_given, discrete=discrete)
            for name, sym, value in zip(names, elements, start)])

    def alias_forms(self, variables: list, build, key) -> list | None:
        """Per element, the alias form (:attr:`FlatEquation.alias_form`) of the generated
        equations ``build(*symbols) == 0``, applied element by element to ``variables``
        (active variables of one shape), or None if not known. The form is read once per
        ``key`` from ``build`` applied to scalar symbols of its own: casadi's folding
        (``-a + b`` becomes ``b - a``) decides it as it does for the model's elements."""
        firsts = self._distinct_first_positions(variables)
        if firsts is None:
            return None
        numel = variables[0].symbol.numel()
        if len(variables) > 2:
            return [False] * numel  # three variables or more: never an alias
        form = self.read_forms.get(key)
        if form is None:
            symbols = [ca.SX.sym(f"v{i}") for i in range(len(variables))]
            form = linear_pattern(build(*symbols),
                                  {s.element_hash(): i for i, s in enumerate(symbols)}) or False
            self.read_forms[key] = form
        if not form:
            return [False] * numel
        return [([(firsts[i] + k, c) for i, c in form[0]], form[1]) for k in range(numel)]

    def sum_slopes(self, variables: list, signs) -> list | None:
        """Per element, the slopes (:attr:`FlatEquation.slopes`) of the sum of
        ``variables`` (active, of one shape) times ``signs`` (1 or -1), or None if not
        known."""
        firsts = self._distinct_first_positions(variables)
        if firsts is None:
            return None
        row = [(i, float(sign)) for i, sign in enumerate(signs)]
        return [(row, [], [first + k for first in firsts])
                for k in range(variables[0].symbol.numel())]

    def _distinct_first_positions(self, variables: list) -> list | None:
        """The flat position of each variable's first element, or None if one is not a
        flat variable or appears twice (its terms may cancel)."""
        firsts = [self.first_position.get(id(v)) for v in variables]
        if None in firsts or len(set(firsts)) < len(firsts):
            return None
        return firsts

    def difference_forms(self, a: Variable, b: Variable) -> list | None:
        """The alias forms of ``a - b == 0`` (see :meth:`alias_forms`)."""
        return self.alias_forms([a, b], lambda x, y: x - y, "difference")

    # -- derivatives ----------------------------------------------------------------------
    def make_derivative(self, symbol):
        rec = self.symbols[symbol.element_hash()]
        var = self.variables[rec.position]
        if var.discrete:
            return ca.SX(0)  # constant between events
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
                                               derivative_of=rec.position, start_given=False))
        return self.variables[var.derivative].symbol

    def position_of(self, symbol) -> int | None:
        """The flat position of a variable's symbol (None: not a variable)."""
        record = self.symbols.get(symbol.element_hash())
        return None if record is None or record.is_parameter else record.position

    def is_fresh_derivative(self, symbol) -> bool:
        """Whether ``der()`` answered with a derivative variable made for it (not a declared
        :class:`~mbmodel.Derivative`'s input, nor 0 for a discrete variable)."""
        if not symbol.is_symbolic():
            return False
        position = self.position_of(symbol)
        return position is not None and self.variables[position].kind == "derivative"

    # -- equations ------------------------------------------------------------------------
    def collect_equations(self, is_root):
        """Every component's equations() is called once. Composite models first: their
        connect statements are then known while the components that state physics run, so
        ``is_root()`` and ``connected()`` answer from the real connection structure. The
        flat equations keep the instance tree's order whatever the order of the calls."""
        ctx = _FlattenContext(self.symbols, self.make_derivative, is_root, self.analysis,
                              self.connected, self.loop_cut_side, self.parameter_mode)
        ctx.hybrid = self.hybrid
        self.context = ctx
        composites = [c for c in self.components if c.components()]
        leaves = [c for c in self.components if not c.components()]
        collected = {}
        previous = _FlattenContext.activate(ctx)
        try:
            # once for all components: they swap methods of casadi's SX
            with core._SymbolsStaySymbols(), RelationsSwitchAtEvents():
                self.hybrid.active = True
                self._phase = "composites"
                for comp in composites:
                    collected[id(comp)] = self._collect(comp)
                self._phase = "leaves"
                for comp in leaves:
                    collected[id(comp)] = self._collect(comp)
        finally:
            self.hybrid.active = False
            _FlattenContext.activate(previous)
            self._phase = None
        for comp in self.components:
            equations, initial = collected[id(comp)]
            n_before = len(self.equations)
            for item in equations:
                if isinstance(item, When):
                    self.hybrid.add_when(comp, item)
                elif isinstance(item, Instantiated):
                    origin = comp.path
                    self.equations.extend(FlatEquation(r, origin, e, "model", form, slopes)
                                          for r, e, form, slopes in zip(
                                              item.residuals.elements(), item.shown,
                                              item.alias_forms, item.slopes))
                    self.residual_pieces.append(item.residuals)
                    # no symbol check: a template holds only the instance's own symbols
                    self.equation_owners[id(self.equations)].extend([None] * len(item.shown))
                else:
                    self._add_equation(comp, item, self.equations, "model")
            for item in initial:
                self._add_equation(comp, item, self.initial_equations, "initial")
            self.local_equations[id(comp)] = (self.local_equations.get(id(comp), 0)
                                              + len(self.equations) - n_before)
        for var in self.symbolic_starts:   # (a few: no pass over every variable)
            if var.fixed and self.active(var):
                owner = var.owner if isinstance(var.owner, Model) else var.owner.owner
                self._add_equation(owner, var.symbol == ca.reshape(var.start_expression,
                                                                   *var.shape),
                                   self.initial_equations, "initial")
        self.hybrid.check_assigned()
        if self.hybrid.has_relations():
            # (before unused relations are dropped: a kept one may be written with them)
            literals = self.hybrid.literals
            for eq in self.equations + self.initial_equations:
                if not isinstance(eq.shown, str):
                    eq.shown = ShownWithRelations(eq.shown, literals)
        self.hybrid.drop_unused([e.residual for e in self.equations + self.initial_equations])

    def _collect(self, comp):
        """One component's equations and initial equations; its connect statements go to
        ``self.connects``, declared derivatives and asserts are registered on the way.
        Instances of one structure share their equations through a template
        (:mod:`mbmodel.templates`)."""
        method = "equations"
        ctx = _FlattenContext.current()
        ctx.component = comp
        try:
            # (found once: the key, the record and the instances all take them)
            partnered = partners(comp) if self.use_templates else ()
            key = template_key(comp, self.active, partnered) if self.use_templates else None
            template = self.templates.get(key) if key is not None else None
            if template is not None:
                made = template.instantiate(comp, ctx, self.active, partnered,
                                            self.first_position, self.is_fresh_derivative,
                                            self.position_of)
                if made is not None:
                    for item in made.derivatives:
                        self.declare_derivative(comp, item)
                    for conditions, message, on_parameters in made.asserts:
                        # (what they read is the template's, known when it was recorded)
                        (self.asserts if on_parameters else self.run_asserts).extend(
                            FlatAssert(c, message, comp.path) for c in conditions)
                    # still asked: the key is about equations(), not initial equations
                    method = "initial_equations"
                    return [made], list(_iterate(comp.initial_equations(), comp, method))
            recording = key is not None and key not in self.templates
            events = (len(comp._time_events), len(comp._time_scales),
                      len(self.hybrid.time_events))
            items = [] if recording else None
            with (Recorder(ctx, comp, self.active, partnered) if recording else nullcontext()
                  ) as recorder:
                # items are handled as they come: a Derivative declared before a der()
                equations = self._sort_items(comp, _iterate(comp.equations(), comp, method),
                                             items)
            method = "initial_equations"
            initial = list(_iterate(comp.initial_equations(), comp, method))
            if recording:
                changed = events != (len(comp._time_events), len(comp._time_scales),
                                     len(self.hybrid.time_events))
                self.templates[key] = EquationTemplate.record(
                    recorder, items, initial, self.hybrid.discrete_target, changed)
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is named with its component
            raise core._explain_equation_failure(comp, method, exc) from exc
        return equations, initial

    def _sort_items(self, comp, items, seen=None):
        """``comp``'s equations among ``items``; connects, derivatives and asserts are
        registered. ``seen``, if a list, receives every item (a template's record)."""
        equations, connects = [], self.connects.setdefault(id(comp), [])
        for item in items:
            if seen is not None:
                seen.append(item)
            if isinstance(item, Connect):
                connects.append(item)
                if self._phase == "leaves":
                    self.leaf_connects = True
            elif isinstance(item, core.Derivative):
                self.declare_derivative(comp, item)
            elif isinstance(item, core.Assert):
                self.declare_assert(comp, item)
            elif isinstance(item, core.WrittenElsewhere):
                self.local_equations[id(comp)] = (self.local_equations.get(id(comp), 0)
                                                  + item.count)
            else:
                equations.append(item)
        return equations

    def _ask(self, question):
        """Bookkeeping of is_root()/connected()/loop_cut_side(): answered from composite
        models' connections, so composite models must not ask, and components without
        sub-components must not connect where that could change an answer
        (:meth:`check_questions`)."""
        if self._phase == "composites":
            raise DeclarationError(
                f"{question}() was asked while composite models' equations() ran; only "
                f"components without sub-components may ask it (their connection structure "
                f"is known by then)")
        if question != "connected":  # (connected() answers are kept and checked one by one)
            self.questions_asked = True

    def connected(self, connector) -> list:
        """Answer to :meth:`Model.connected` (see there), from the composite models'
        connection sets."""
        self._ask("connected")
        if self._connected_sets is None:
            pairs = [(comp, item) for comp in self.components if comp.components()
                     for item in self.connects.get(id(comp), ())]
            self._connected_sets = connection_sets_of(pairs)
        group = self._connected_sets.get(id(connector), ())
        answer = [c for c in group if c is not connector]
        self.connected_answers.append((connector, answer))
        return answer

    def loop_cut_side(self, connector):
        """Answer to :meth:`Model.loop_cut_side`: the loop cuts decided from the composite
        models' connections (the same decision the spanning tree takes later)."""
        if self._phase == "composites":
            self._ask("loop_cut_side")  # refused: composites answer from connections
        if self.early_cuts is None:
            roots, potential, branches = self.roles
            graph = build_connection_graph(self)
            tree = spanning_tree(self, roots, potential, branches,
                                 overdetermined_edges(self, graph))
            self.early_cuts = cut_sides(graph, tree[2])
            self.early_tree = (graph, tree)
        if self.early_cuts:
            # the answer relies on the composites' connections: leaves must not connect
            self._ask("loop_cut_side")
        return self.early_cuts.get(id(connector))

    def mark_loop(self, components, flows_of=()):
        """Record a kinematic loop: its components (their coordinates give way as states)
        and the flow variables of the connectors ``flows_of`` (its constraint forces, torn
        first)."""
        self.loop_components.update(c.path for c in components)
        for connector in flows_of:
            for var in connector._variables.values():
                if var.kind != "flow" or not self.active(var):
                    continue
                for k in range(var.symbol.numel()):
                    record = self.symbols.get(var.symbol[k].element_hash())
                    if record is not None:
                        self.tear_hints.add(self.variables[record.position].name)

    def check_questions(self):
        """Connections that is_root()/connected()/loop_cut_side() could not see are
        refused: a component without sub-components that connects its own connectors,
        where is_root() or loop_cut_side() was asked (roots and loop cuts are decided on
        the composites' connections), or where an answer of connected() is not the same
        once its connections are counted (a leaf's connect that reaches no connector asked
        about changes nothing)."""
        if not self.leaf_connects or not (self.questions_asked or self.connected_answers):
            return
        leaves = [c for c in self.components if not c.components() and self.connects.get(id(c))]
        if self.questions_asked:
            reason = ("has components that ask is_root() or loop_cut_side(), which see only "
                      "composite models' connections")
        else:
            pairs = [(comp, item) for comp in self.components
                     for item in self.connects.get(id(comp), ())]
            everything = connection_sets_of(pairs)  # (one members list per connection set)
            changed = next((connector for connector, answer in self.connected_answers
                            if {id(c) for c in everything.get(id(connector), ())
                                if c is not connector} != {id(c) for c in answer}), None)
            if changed is None:
                return
            reaching = [c for c in leaves if any(
                everything.get(id(port)) is everything[id(changed)]
                for item in self.connects[id(c)] for port in item.items)]
            leaves = reaching or leaves
            reason = (f"has a component that asks connected({changed.path}), whose answer "
                      f"this connection changes (answers see only composite models' "
                      f"connections)")
        self.refuse_leaf_connects(reason, leaves[0])

    def refuse_leaf_connects(self, reason, leaf=None):
        """Raise the refusal of a component without sub-components that connects its own
        connectors (``leaf``, or the first one), for ``reason`` (what this model asks)."""
        if leaf is None:
            leaf = next(c for c in self.components
                        if not c.components() and self.connects.get(id(c)))
        raise DeclarationError(
            f"{_where(leaf)} connects its own connectors although it has no "
            f"sub-components; this model {reason} — write the equations instead")

    def declare_assert(self, comp, item):
        """An Assert's conditions: on parameters only they go to ``asserts`` (checked with
        the parameter values); reading variables or time, to ``run_asserts`` (checked along
        a run), as the comparison itself, not a relation that would make events for it.
        (Instances of a template take the classification its recording made.)"""
        for condition in item.condition.elements():
            if self.hybrid.has_relations():
                condition = self.hybrid.literal(condition)
            message = item.message
            on_parameters = True
            for s in ca.symvar(condition):
                h = s.element_hash()
                if h not in self.symbols:
                    raise DeclarationError(
                        f"{_where(comp)}: Assert('{message}') uses '{s}', which is neither a "
                        f"parameter nor a variable of the model")
                rec = self.symbols[h]
                on_parameters = on_parameters and rec is not None and rec.is_parameter
            (self.asserts if on_parameters else self.run_asserts).append(
                FlatAssert(condition, message, comp.path))

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
        if isinstance(item, Reinit):
            raise DeclarationError(
                f"{_where(comp)}: reinit({describe(item.variable)}, ...) was yielded on its "
                f"own; it belongs inside a when clause: yield mb.when(condition, "
                f"mb.reinit(x, value))")
        if not isinstance(item, (ca.SX, ca.DM, float, int)):
            raise DeclarationError(f"{_where(comp)}: equations() yielded {item!r}; yield "
                                   f"'lhs == rhs' expressions or connect(...)")
        expr = item if isinstance(item, ca.SX) else ca.SX(item)
        origin = comp.path
        for e in ([expr] if expr.numel() == 1 else expr.elements()):
            if not e.is_op(ca.OP_EQ):
                if e.is_constant():
                    # casadi folds an == whose sides are one expression to 1, and one whose
                    # sides differ by a number to 0 (self.x - self.x == 0)
                    raise DeclarationError(
                        f"{_where(comp)}: an equation came out as the constant {float(e):g}: "
                        f"its two sides " + ("are the same expression, so it always holds "
                                             "and determines nothing" if float(e) else
                                             "differ by a constant, so it never holds")
                        + "; write an equation between different quantities (e.g. "
                        "self.loss == k * (self.T - T_ambient))")
                shown = self.hybrid.literal(e) if e.is_symbolic() else e  # (a relation)
                what = ("a comparison (<, <=, >, >=), not an equation"
                        if shown.is_op(ca.OP_LT) or shown.is_op(ca.OP_LE) else
                        "not an equation")
                raise DeclarationError(
                    f"{_where(comp)}: '{describe(shown)}' is {what}; write lhs == rhs")
            if kind == "model":
                position = self.hybrid.discrete_target(e.dep(0))
                if position is not None:
                    self.hybrid.add_discrete_equation(comp, position, e.dep(1), e)
                    continue
            residual = e.dep(0) - e.dep(1)
            target.append(FlatEquation(residual, origin, e, kind))
            self.equation_owners[id(target)].append(comp)
            if target is self.equations:
                self.residual_pieces.append(residual)

    def check_binding_cycles(self):
        """No parameter is computed from itself, through others or directly
        (``self.a = 2 * self.a``): none of the cycle would have a value (a TypeError deep
        in the structural analysis before)."""
        bound = {p.symbol.element_hash(): p for p in self.parameters if p.binding is not None}
        graph = nx.DiGraph()
        for h, p in bound.items():
            graph.add_edges_from((h, s.element_hash()) for s in ca.symvar(p.binding)
                                 if s.element_hash() in bound)
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            return
        steps = ", ".join(f"{bound[a].name} from {bound[b].name}" for a, b in cycle)
        raise DeclarationError(
            f"parameter bindings form a cycle ({steps}): none of them has a value. Give "
            f"one of them a number (a binding that reads the parameter's own "
            f"declared value, self.a = 2 * self.a, is such a cycle: declare another "
            f"parameter for it)")

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
                earlier = next((d for symbol, d in self.earlier
                                if any(ca.is_equal(s, e) for e in symbol.elements())), None)
                if earlier is not None:
                    raise DeclarationError(
                        f"{_where(comp)}: equation '{describe(shown)}' uses '{s}', the "
                        f"symbol '{earlier.path}' had before the model was compiled (compiling "
                        f"names every symbol anew): an expression built before, e.g. in "
                        f"__init__, keeps the old one; build it in equations()")
                raise DeclarationError(
                    f"{_where(comp)}: equation '{describe(shown)}' uses '{s}', which is not a "
                    f"variable or parameter of this model (a symbol of another model instance?)")

    def emit(self, expr, owner, description, kind, alias_forms=None, slopes=None):
        """Add the generated equations ``expr == 0`` (connections, residues, unconnected
        flows), counted for ``owner``; ``alias_forms``, per element, what alias elimination
        reads from it (:attr:`FlatEquation.alias_form`), and ``slopes``, its derivatives
        (:attr:`FlatEquation.slopes`), if known."""
        # (an SX copy of an SX costs as much as the subtraction that built it)
        expr = expr if isinstance(expr, ca.SX) else ca.SX(expr)
        elements = expr.elements()
        self.residual_pieces.append(_column(expr) if expr.is_dense() else
                                    ca.vertcat(*elements))
        origin = owner.path
        n = len(elements)
        forms = alias_forms or [None] * n
        slopes = slopes or [None] * n
        if n == 1:
            self.equations.append(FlatEquation(elements[0], origin, description, kind, forms[0],
                                               slopes[0]))
        else:
            self.equations.extend(FlatEquation(element, origin, f"{description} [{k}]", kind,
                                               form, slope)
                                  for k, (element, form, slope) in enumerate(
                                      zip(elements, forms, slopes)))
        self.equation_owners[id(self.equations)].extend([None] * n)  # made here: no check
        self.local_equations[id(owner)] = self.local_equations.get(id(owner), 0) + n

def _new_time_events(fl, derived) -> list:
    """The time events of relations on time (``time >= t0``) that no component declared
    already (sources declare theirs): compared at the declared parameter values and at
    perturbed ones, so a coincidence at one point does not drop an event."""
    if not derived or not fl.time_events:
        return list(derived)
    free = [q for q in fl.parameters if q.binding is None]
    declared = [ca.SX(e) for e in fl.time_events]
    differences = resolve_bindings(fl.parameters, [a - b for a in derived for b in declared])
    fn = ca.Function("differences", [ca.vertcat(*[q.symbol for q in free])
                                     if free else ca.SX(0, 1)], [ca.vertcat(*differences)])
    values = np.array([q.value for q in free], dtype=float)
    same = np.ones(len(differences), dtype=bool)
    for point in (values, 1.37 * values + 0.1):
        d = np.array(fn(point)).reshape(-1)
        same &= np.abs(d) <= 1e-12 * (1.0 + np.abs(point).max(initial=0.0))
    same = same.reshape(len(derived), len(declared))
    return [at for at, dup in zip(derived, same.any(axis=1)) if not dup]


def _visuals(fl) -> list[dict]:
    """The components' visual shapes (``Model.visuals()``) as plain data
    (:func:`mbmodel.visuals.resolve`)."""
    found = []
    for comp in fl.components:
        try:
            found += [(comp.path, shape) for shape in comp.visuals() or ()]
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001 - named with its component
            raise DeclarationError(f"{_where(comp)}: visuals() failed: {exc}") from exc

    def variable_name(symbol):
        position = fl.position_of(symbol)
        return None if position is None else fl.variables[position].name
    return resolve_visuals(found, variable_name, fl.parameters)


def flatten(model: Model, analysis: str = "forward",
            parameters: str = "symbolic", *, templates: bool = True) -> FlatModel:
    """Flatten a model instance into a :class:`FlatModel` for ``analysis`` ("forward" or
    "inverse": which analysis-specific variables exist and what ``Model.analysis`` says).
    ``parameters`` (the compile option) is what ``Model.parameters_folded`` tells the
    components: a formula that is cheaper only once parameters are numbers may be chosen
    then. ``templates=False`` runs every instance's ``equations()`` even where instances
    share a template (:meth:`Model.template_key`): the same flat model, more slowly (for
    checking a class's key).

    Example::

        flat = flatten(RCCircuit())
        print(len(flat.equations), [v.name for v in flat.variables][:5])
    """
    with core.compiling_scope(model):
        return _flatten(model, analysis, parameters, templates)


def _flatten(model, analysis, parameters, templates) -> FlatModel:
    fl = _Flattener(model, analysis, parameters)
    fl.use_templates = templates
    fl.collect()
    roots, potential, branches = collect_roles(fl)
    fl.roles = (roots, potential, branches)
    # Roots must be known before equations run (components may ask is_root()); the tree
    # itself needs the connect statements, which equations() yields. Potential-root choice
    # depends only on roles and the connection structure, so it is decided in two steps.
    var_by_hash = {v.symbol[0].element_hash(): v for _, _, v in fl.overdetermined}
    root_ids = {id(r) for r in roots}
    early_choice: set[int] | None = None  # decided on the first is_root() question

    def is_root(symbol):
        nonlocal early_choice
        var = overdetermined_variable(fl, None, symbol, var_by_hash)
        if id(var) in root_ids:
            return True
        fl._ask("is_root")
        if early_choice is None:
            early_choice = choose_roots_early(fl, roots, potential, branches)
        return id(var) in early_choice

    fl.check_binding_cycles()
    # Events declared in equations() belong to this compile, not to the model: a second
    # compile declares them again (kept on the instance, they were counted twice).
    declared = [(comp, len(comp._time_events), len(comp._time_scales))
                for comp in fl.components]
    try:
        fl.collect_equations(is_root)
        fl.check_symbols()
        fl.check_questions()
        # After equations(): components may declare events there as well as in __init__.
        fl.time_events = [at for comp in fl.components for at in comp._time_events]
        time_scales = [period for comp in fl.components for period in comp._time_scales]
    finally:
        for comp, n_events, n_scales in declared:
            del comp._time_events[n_events:]
            del comp._time_scales[n_scales:]
    fl.time_events += _new_time_events(fl, fl.hybrid.time_events)
    decisions, cuts = [], []
    reused = fl.early_tree is not None and not fl.leaf_connects
    if reused:  # the composites' connections are all there are: the early decision stands
        graph, (chosen, decisions, cuts) = fl.early_tree
    else:
        graph = build_connection_graph(fl)
        if fl.overdetermined:
            chosen, decisions, cuts = spanning_tree(fl, roots, potential, branches,
                                                    overdetermined_edges(fl, graph))
    if fl.overdetermined:
        # What components were told changed: only a leaf's connects can do that.
        if early_choice is not None and chosen != early_choice:
            if fl.leaf_connects:
                fl.refuse_leaf_connects("has components that ask is_root(), whose answers "
                                        "its connections change")
            raise DeclarationError("internal: potential-root choice changed after equations ran")
        if not reused and fl.early_cuts is not None and cut_sides(graph, cuts) != fl.early_cuts:
            if fl.leaf_connects:
                fl.refuse_leaf_connects("has components that ask where loops are cut "
                                        "(loop_cut_side()), whose answers its connections "
                                        "change")
            raise DeclarationError("internal: loop cuts changed after equations ran")
    _symbolic_starts(fl)
    connection_equations(fl, graph, cuts)
    emit_tree_equations(fl, decisions)
    unconnected(fl, graph)
    check_balance(fl)
    flat = FlatModel(type(model).__name__, fl.variables, fl.parameters, fl.equations,
                     fl.initial_equations, fl.time_events, _named_graph(graph))
    flat.index = {v.name: i for i, v in enumerate(flat.variables)}
    flat.position_of = {h: r.position for h, r in fl.symbols.items()
                        if r is not None and not r.is_parameter}
    flat.asserts = fl.asserts
    flat.run_asserts = fl.run_asserts
    flat.time_scales = time_scales
    flat.hybrid = fl.hybrid.part
    flat.loop_components = fl.loop_components
    flat.tear_hints = fl.tear_hints
    flat.unconnected_flows = fl.unconnected_flows
    flat.unvalued_parameters = fl.unvalued
    flat.visuals = _visuals(fl)
    flat.explainers = _explainers(fl.components)
    flat.analysis = analysis
    flat.start_expressions = fl.start_expressions
    flat.symbol_vector = _symbol_vector(fl)
    residuals = stacked(fl.residual_pieces)
    flat.residual_vector = residuals if residuals.numel() == len(flat.equations) else None
    flat.templates = [t for t in fl.templates.values() if t is not None]
    return flat


def _symbolic_starts(fl):
    """The start values given as parameter expressions, at the parameters' defaults: the
    guesses of the variables they are given for (fixed ones also get an initial
    equation)."""
    found = [v for v in fl.symbolic_starts if fl.active(v)]
    if not found:
        return
    elements, places = [], []   # each start's elements and (variable, flat position)
    for var in found:
        first = fl.first_position[id(var)]
        for k, element in enumerate(ca.reshape(var.start_expression, -1, 1).elements()):
            elements.append(element)
            places.append((var, first + k))
    values, foreign = at_parameter_values(elements, fl.parameters)
    for (var, _), names in zip(places, foreign):
        if names:
            raise DeclarationError(
                f"variable '{var.path}': its start value {describe(var.start_expression)} "
                f"depends on {', '.join(names[:4])}, not on parameters alone; a start value "
                f"may be a parameter expression (for a relation between variables at the "
                f"start, write an initial equation)")
    for (var, position), element, value in zip(places, elements, values):
        if not np.isfinite(value):
            raise DeclarationError(f"variable '{var.path}': its start value "
                                   f"{describe(var.start_expression)} is not finite at the "
                                   f"parameters' values")
        fl.variables[position].start = float(value)
        fl.start_expressions[position] = element


class ConnectorName:
    """A connector of the flat model's connection graph, by its path only: the flat model
    holds none of the user's objects (a compiled model would keep the whole model alive
    through them)."""

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path

    def __repr__(self):
        return self.path


def _named_graph(graph: nx.Graph) -> nx.Graph:
    """The connection graph with its nodes ``(connector, side)`` as ``(ConnectorName,
    side)``; its edges without their data (which component connected them: read only
    while flattening)."""
    names = {}

    def named(node):
        connector = node[0]
        if id(connector) not in names:
            names[id(connector)] = ConnectorName(getattr(connector, "path", str(connector)))
        return (names[id(connector)], *node[1:])
    plain = nx.Graph()
    plain.add_nodes_from(named(node) for node in graph.nodes)
    plain.add_edges_from((named(a), named(b)) for a, b in graph.edges)
    return plain


def _explainers(components) -> dict:
    """The components whose class explains its non-finite values, by path (a dict of a
    few classes' instances: one check per class). Held as they are: the diagnosis of a
    failed run needs them after the user has dropped the model (``cm =
    mb.compile(Model())``), so a model with such components (a multibody model's joints)
    stays alive with its compiled model."""
    overrides = {}
    found = {}
    for comp in components:
        kind = type(comp)
        explains = overrides.get(kind)
        if explains is None:
            explains = overrides[kind] = kind.explain_non_finite is not Model.explain_non_finite
        if explains:
            found[comp.path] = comp
    return found


def _symbol_vector(fl) -> ca.SX:
    """Every variable's symbol, in order, as one vector: a declaration's symbol at once
    (column-major, as its scalars were numbered), the scalars made one by one
    (derivatives, discrete knowns) on their own."""
    parts, position, n = [], 0, len(fl.variables)
    while position < n:
        declared = fl.declared_symbols.get(position)
        if declared is not None:
            parts.append(declared)
            position += declared.numel()
        else:
            parts.append(fl.variables[position].symbol)
            position += 1
    return ca.veccat(*parts) if parts else ca.SX(0, 1)


