"""The flat model: the plain data the flattening stage hands to structural analysis
(scalar variables, parameters, equations and where each came from).

Example::

    flat = mbmodel.flatten(model)
    print(len(flat.equations), flat.variables[0].name, flat.equations[0].description)
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field

import casadi as ca
import networkx as nx
import numpy as np

__all__ = ["FlatVariable", "FlatParameter", "FlatEquation", "FlatAssert", "FlatModel",
           "FlatRelation", "FlatWhen", "FlatDiscreteEquation", "FlatSample", "HybridPart",
           "describe"]


@dataclass(slots=True)
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
    start_given: bool = True
    #: For the knowns that change only at events (kind "input"): "variable" (a declared
    #: Discrete), "relation", "pre" (left limit of another), "initial", "starting" or
    #: "sample".
    discrete: str = ""


@dataclass(slots=True)
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


@dataclass(slots=True)
class FlatEquation:
    """One scalar equation ``residual == 0`` and where it came from. ``shown`` is its text
    or the equation as written (formatted by :attr:`description` when a message needs it:
    formatting every equation of a large model costs more than analysing it).

    ``alias_form`` is what alias elimination would read from the residual, when flattening
    already knows it (from the class's template or from a connection): ``False`` (not an
    alias) or ``([(variable position, coefficient)], constant)`` (see
    :func:`mbmodel.alias.linear_pattern`); ``None``: not known, alias elimination reads
    the residual itself.

    ``slopes`` are the residual's derivatives along the variables, when the class's template
    knows them: ``([(column, number)], [column], positions)``, the constant ones and the
    columns of the others, where ``positions[column]`` is a variable's flat position (the
    first two are the class's, shared by its instances; the positions, the instance's);
    ``None``: not known."""

    residual: ca.SX
    origin: str
    shown: object
    kind: str = "model"  # "model", "connection", "unconnected flow", "residue", "initial"
    alias_form: object = None
    slopes: object = None

    @property
    def description(self) -> str:
        if isinstance(self.shown, ShownWithRelations):
            self.shown = self.shown.text()
        elif not isinstance(self.shown, str):
            self.shown = describe(self.shown)
        return self.shown


class RelationLiterals:
    """The comparisons as written of a model's relations, by their symbols' names
    (``$relation[k]``, one per model; a hash would not survive saving the model), shared by
    the equations that show them (:class:`ShownWithRelations`)."""

    def __init__(self, relations=()):
        self.literal = {r.symbol.name(): r.literal for r in relations}

    def add(self, symbol: ca.SX, comparison: ca.SX):
        """Record a relation's symbol and its comparison as written."""
        self.literal[symbol.name()] = comparison

    def substituted(self, expr: ca.SX) -> ca.SX:
        """``expr`` with relation symbols replaced by their comparisons (nested ones too)."""
        while True:
            found = [s for s in ca.symvar(expr) if s.name() in self.literal]
            if not found:
                return expr
            expr = ca.substitute(expr, ca.vertcat(*found),
                                 ca.vertcat(*[self.literal[s.name()] for s in found]))


@dataclass
class ShownWithRelations:
    """An equation as written, shown with its relations as comparisons: a relation's symbol
    (``$relation[0]``) means nothing to the reader of a message."""

    expr: ca.SX
    relations: RelationLiterals = field(repr=False, compare=False)

    def text(self) -> str:
        return describe(self.relations.substituted(self.expr))


@dataclass
class FlatAssert:
    """A condition (nonzero when it holds), its message and the component it comes from: on
    parameters only (``FlatModel.asserts``) or reading variables (``run_asserts``)."""

    condition: ca.SX
    message: str
    origin: str


@dataclass
class FlatRelation:
    """A relation on continuous variables: between events it is the discrete Boolean
    ``symbol``; ``crossing`` (continuous) changes sign where it switches. It holds where
    ``crossing > 0`` (``strict``) or ``crossing >= 0``; ``literal`` is the comparison as
    written; ``scale`` the size of its two sides (``|a| + |b|`` of ``a < b``), against
    which a crossing function at round-off of zero is told from a crossing."""

    symbol: ca.SX
    position: int
    crossing: ca.SX
    strict: bool
    literal: ca.SX
    origin: str
    shown: object
    scale: ca.SX = None

    @property
    def description(self) -> str:
        if not isinstance(self.shown, str):
            from .discrete import relation_text
            self.shown = relation_text(self.shown)
        return self.shown


@dataclass
class FlatDiscreteEquation:
    """``variables[target] = value``, evaluated at every event."""

    target: int
    value: ca.SX
    origin: str
    shown: object


@dataclass
class FlatWhen:
    """A when clause: fires where any of ``conditions`` becomes true; then assigns
    discrete variables (position, value) and re-initializes states (position, value)."""

    conditions: list
    assignments: list
    reinits: list
    origin: str
    shown: str


@dataclass
class FlatSample:
    """The Boolean ``sample(start, interval)`` (a known at ``position``): true at the time
    events ``start + k*interval``; ``start`` and ``interval`` are parameter expressions."""

    position: int
    start: ca.SX
    interval: ca.SX
    origin: str


@dataclass
class HybridPart:
    """What a model has of events: relations, discrete equations, when clauses, samples,
    the left limits it asks for (``pre``: (position of pre(v), position of v)), the
    position of ``initial()`` (None if unused) and of the start flag (``starting``).
    Empty for a purely continuous model."""

    relations: list = field(default_factory=list)
    discrete_equations: list = field(default_factory=list)
    whens: list = field(default_factory=list)
    samples: list = field(default_factory=list)
    pre: list = field(default_factory=list)
    initial: int | None = None
    #: the position of the flag that reads when conditions as before the start (None if
    #: no condition has a relation on time)
    starting: int | None = None

    @property
    def empty(self) -> bool:
        return not (self.relations or self.discrete_equations or self.whens or self.samples)

    def expressions(self, crossings: bool = True) -> list:
        """What the simulator evaluates at events, in this order: the relations'
        zero-crossing functions (unless ``crossings=False``), the when conditions, the
        discrete equations' values, the when clauses' assignments, their reinit values, the
        relations' scales (with the crossing functions)."""
        exprs = [r.crossing for r in self.relations] if crossings else []
        exprs += [c for w in self.whens for c in w.conditions]
        exprs += [e.value for e in self.discrete_equations]
        exprs += [value for w in self.whens for _, value in w.assignments]
        exprs += [value for w in self.whens for _, value in w.reinits]
        if crossings:
            exprs += [r.scale if r.scale is not None else ca.fabs(r.crossing)
                      for r in self.relations]
        return [ca.SX(e) for e in exprs]


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
    #: variable position by the hash of its symbol (``element_hash``); empty if not known
    position_of: dict[int, int] = field(default_factory=dict)
    asserts: list[FlatAssert] = field(default_factory=list)
    #: Asserts whose conditions read variables or time: checked along a run.
    run_asserts: list[FlatAssert] = field(default_factory=list)
    #: Declared periods of time-made signals (parameter expressions), see Model.time_scale.
    time_scales: list = field(default_factory=list)
    #: Relations, discrete equations and when clauses (see HybridPart).
    hybrid: HybridPart = field(default_factory=HybridPart)
    #: paths of the components on kinematic loops (their coordinates give way as states)
    loop_components: set = field(default_factory=set)
    #: names of the flow variables at loop cuts (tearing takes them first)
    tear_hints: set = field(default_factory=set)
    #: shapes to animate, as plain data (see :func:`mbmodel.visuals.resolve`)
    visuals: list = field(default_factory=list)
    #: the equations that set an unconnected connector's flow to zero, by position: the
    #: connector's path
    unconnected_flows: dict = field(default_factory=dict)
    #: parameters that no declaration, modifier or assignment gave a value (0 is used)
    unvalued_parameters: list = field(default_factory=list)
    #: the components that explain their non-finite values (:meth:`Model.explain_non_finite`
    #: overridden), by path, and the analysis: asked by the diagnosis of a failed run
    explainers: dict = field(default_factory=dict)
    analysis: str = "forward"
    #: start values given as parameter expressions, by variable position (their numbers
    #: in ``variables`` are the values at the parameters' defaults)
    start_expressions: dict = field(default_factory=dict)
    #: the variables' symbols as one column vector (None: not known); selecting from it
    #: is cheaper than a vertcat of the scalars, which converts each from Python
    symbol_vector: ca.SX | None = None
    #: the equations' residuals as one column vector, as flattened (None: not known; it
    #: is not updated if ``equations`` are changed afterwards)
    residual_vector: ca.SX | None = None
    #: the component classes' equation templates (:mod:`mbmodel.templates`) its equations'
    #: slopes come from
    templates: list = field(default_factory=list)

    def variable(self, name: str) -> FlatVariable:
        return self.variables[self.index[name]]

    def _persist_state(self) -> dict:
        # The connection graph's nodes are the user's connector instances, which a saved
        # model does not hold; nothing after flattening reads it, nor the templates. The
        # explaining components are the user's too: a loaded model's diagnosis goes
        # without their words.
        return {**self.__dict__, "connection_graph": None, "templates": [], "explainers": {}}


def stacked(expressions) -> ca.SX:
    """The expressions (scalars or columns) stacked into one column, 0 x 1 if none."""
    return ca.vertcat(*expressions) if expressions else ca.SX(0, 1)


def resolve_bindings(parameters, exprs) -> list:
    """``exprs`` with every bound parameter among ``parameters`` replaced by its binding,
    in terms of the free parameters (one pass: bindings may refer to other bound ones)."""
    bound = [q for q in parameters if q.binding is not None]
    if not bound or not len(exprs):
        return list(exprs)
    _, resolved = ca.substitute_inplace([q.symbol for q in bound], [q.binding for q in bound],
                                        list(exprs), False)
    return list(resolved)


def at_parameter_values(exprs, parameters) -> tuple[np.ndarray | None, list]:
    """The parameter expressions ``exprs`` (one column) at the parameters' values, bindings
    resolved: ``(values, [])``; or ``(None, foreign)`` where some depend on other symbols,
    ``foreign`` listing those symbols' names per expression."""
    free = [q for q in parameters if q.binding is None]
    (stacked_exprs,) = resolve_bindings(parameters, [ca.vertcat(*exprs)])
    free_hashes = {q.symbol.element_hash() for q in free}
    if any(s.element_hash() not in free_hashes for s in ca.symvar(stacked_exprs)):
        return None, [[s.name() for s in ca.symvar(stacked_exprs[i])
                       if s.element_hash() not in free_hashes]
                      for i in range(stacked_exprs.numel())]
    fn = ca.Function("at_parameter_values", [stacked([q.symbol for q in free])],
                     [stacked_exprs])
    return np.array(fn(np.array([q.value for q in free], dtype=float))).reshape(-1), []


def describe(expr) -> str:
    """An expression as text for messages, cut to a readable length."""
    text = str(expr)
    return text if len(text) <= 160 else text[:157] + "..."


def entries_named(name: str, known) -> list[tuple[tuple[int, ...], str]]:
    """The entries of a vector or matrix declared as ``name`` among the names ``known``
    (``name[0]``, ... or ``name[i,j]``, as flattening names them), each with its position
    (a tuple of one or two indices), in index order; [] if ``name`` is not one.

    Example: ``entries_named("j.n", ["j.n[1]", "j.n[0]", "x"])`` gives
    ``[((0,), "j.n[0]"), ((1,), "j.n[1]")]``."""
    entry = re.compile(re.escape(name) + r"\[(\d+(?:,\d+)?)\]$")
    found = [(tuple(int(k) for k in m.group(1).split(",")), n)
             for n in known for m in [entry.match(n)] if m is not None]
    return sorted(found)
