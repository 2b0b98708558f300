"""casadi stage: :class:`SortedSystem` -> casadi Functions in a :class:`CompiledCore`.

The model becomes a semi-explicit DAE in ``x`` (states), ``z`` (tearing variables of
nonlinear blocks, empty for most models), ``u`` (external inputs), ``p`` (free parameters)
and ``t``:  ``ẋ = f(x, z, u, p, t)``, ``0 = g(x, z, u, p, t)``. Every model variable is an
output ``y(x, z, u, p, t)``. Parameters stay symbolic unless ``parameters="constant"``.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import re
import time as _clock
import warnings
import weakref
from dataclasses import dataclass
from typing import NamedTuple

import casadi as ca
import numpy as np

from .checks import scalar
from .core import Model, changed_since, check_parameter_value, compiled_now
from .core import time as TIME
from .event_layout import EventLayout
from .initial_conditions import determined_states
from .errors import (DeclarationError, ImplicitStartWarning, ModelChangedWarning,
                     NoValueWarning, ParameterError, SimulationError, user_stacklevel)
from .flat import FlatModel, describe, entries_named, resolve_bindings, stacked
from .flatten import check_model_instance, flatten
from .structure import SortedSystem, affine_expression, analyze


@dataclass
class BuildTimes:
    """Seconds spent in each pipeline stage."""

    flatten: float = 0.0
    structure: float = 0.0
    casadi: float = 0.0

    @property
    def total(self) -> float:
        return self.flatten + self.structure + self.casadi


@dataclass
class ModelSymbols:
    """The arguments of a compiled model's Functions, in their order: states ``x``,
    algebraic variables ``z``, external inputs ``u``, free parameters ``p`` and time ``t``
    (casadi SX column vectors; ``p`` has every free parameter even when their values are
    folded into the code)."""

    x: ca.SX
    z: ca.SX
    u: ca.SX
    p: ca.SX
    t: ca.SX


@dataclass
class GeneratedModel:
    """What the casadi stage makes of a :class:`SortedSystem`: Functions of
    ``(x, z, u, p, t)`` (see :class:`ModelSymbols`) and the names that order their values.

    ``ode`` → ẋ, ``alg`` → g (residuals of the torn nonlinear blocks), ``dynamics`` (both in
    casadi's integrator signature ``(t, x, z, p, u) → (ode, alg, quad, zero)`` with
    parameters and inputs stacked in ``p``), ``outputs`` → every variable named in
    ``output_names``, ``initial`` → residuals of the initial equations, ``events``: ``p`` →
    the time events."""

    symbols: ModelSymbols
    ode: ca.Function
    alg: ca.Function
    dynamics: ca.Function
    outputs: ca.Function
    output_names: list[str]
    initial: ca.Function
    events: ca.Function
    time_scales: ca.Function = None
    event_values: ca.Function = None
    sample_times: ca.Function = None


#: Largest right-hand side (expression nodes) whose common subexpressions are merged.
CSE_NODES = 20000


def generate(system: SortedSystem, parameters: str = "symbolic",
             outputs: list[str] | None = None) -> GeneratedModel:
    """The casadi stage: a sorted system's definitions resolved into each other (one
    substitution pass, linear in model size) and wrapped in Functions.

    Example::

        code = generate(analyze(flatten(model)))
        xdot = code.ode(x, [], [], p, 0.0)
    """
    sys_ = system
    free = [q for q in sys_.parameters if q.binding is None]
    bound = [q for q in sys_.parameters if q.binding is not None]
    x = stacked([sys_.symbols[v] for v in sys_.states])
    z = stacked([sys_.symbols[v] for v in sys_.algebraic])
    # External inputs first, then the values that change only at events (discrete knowns).
    u = stacked([sys_.variables[i].symbol for i in input_order(sys_)])
    p = stacked([q.symbol for q in free])

    # The definitions, in order, as one vector each (substitute_inplace converts each item
    # of a list from Python, ~2.6 µs apiece): parameters folded to their values, bound
    # parameters, then the sorted sequence.
    folded = free if parameters == "constant" else []
    sequenced = [v for v, _ in sys_.sequence]
    symbol_vector = (sys_.symbol_vector if sys_.symbol_vector is not None else
                     stacked(sys_.symbols))  # (None: a SortedSystem made elsewhere)
    def_syms = ca.vertcat(p if folded else ca.SX(0, 1), stacked([q.symbol for q in bound]),
                          symbol_vector[sequenced] if sequenced else ca.SX(0, 1))
    def_exprs = ca.vertcat(ca.SX(ca.DM([q.value for q in folded])) if folded else ca.SX(0, 1),
                           stacked([q.binding for q in bound]),
                           sys_.sequence_vector if sys_.sequence_vector is not None else
                           stacked([expr for _, expr in sys_.sequence]))

    xdot = [sys_.symbols[d] for d in sys_.state_derivatives]
    states = [sys_.names[v] for v in sys_.states]
    out_names, out_vector = _outputs(sys_, None if outputs is None else
                                     set(outputs) | set(states) | _state_choice_reads(sys_),
                                     symbol_vector)
    # computed with the outputs, split off below
    out_exprs = [out_vector] + _hybrid_expressions(sys_)
    n_hybrid = len(out_exprs) - 1
    # (an initial equation may name a variable alias elimination removed: b.phi = k where
    # b.phi is a.phi through a connection)
    init_eqs = _aliases_resolved(sys_, [e.residual for e in sys_.initial_equations])
    events = [ca.SX(e) for e in sys_.time_events]
    scales = [ca.SX(s) for s in sys_.time_scales]
    samples = ([ca.SX(q.start) for q in sys_.hybrid.samples]
               + [ca.SX(q.interval) for q in sys_.hybrid.samples]) if sys_.hybrid else []
    n_x, n_g, n_y, n_i = len(xdot), len(sys_.residuals), len(out_exprs), len(init_eqs)
    piggy = xdot + list(sys_.residuals) + out_exprs + init_eqs + events + scales + samples
    if def_syms.numel():
        _, piggy = ca.substitute_inplace([def_syms], [def_exprs], piggy, False)
    xdot_e = piggy[:n_x]
    g_e = piggy[n_x:n_x + n_g]
    y_e = piggy[n_x + n_g]
    hybrid_e = piggy[n_x + n_g + n_y - n_hybrid:n_x + n_g + n_y]
    init_e = piggy[n_x + n_g + n_y:n_x + n_g + n_y + n_i]
    n_s = len(samples)
    ev_e = piggy[n_x + n_g + n_y + n_i:len(piggy) - len(scales) - n_s]
    scale_e = piggy[len(piggy) - len(scales) - n_s:len(piggy) - n_s]
    sample_e = piggy[len(piggy) - n_s:]
    args = [x, z, u, p, TIME]
    names = ["x", "z", "u", "p", "t"]
    # Common subexpressions left by local equations (e.g. the same product in two
    # components) are merged once here. Linear, but ~8 µs per node: on a large model it
    # would cost ~10 ms per link of a chain for ~1 % fewer operations, so only below
    # CSE_NODES (the generated C of large models comes from kernels, not this graph).
    xdot_vec, g_vec = stacked(xdot_e), stacked(g_e)
    # (the Function counts the nodes it sorted: counting them first would walk a large
    # graph once more for nothing)
    ode = ca.Function("ode", args, [xdot_vec], names, ["xdot"])
    if ode.n_nodes() <= CSE_NODES:
        xdot_vec = ca.cse(xdot_vec)
        ode = ca.Function("ode", args, [xdot_vec], names, ["xdot"])
    return GeneratedModel(
        symbols=ModelSymbols(x, z, u, p, TIME),
        ode=ode,
        alg=ca.Function("alg", args, [g_vec], names, ["g"]),
        # Inputs are constant between events, so they travel with the parameters.
        dynamics=ca.Function(
            "mbmodel_dynamics", [TIME, x, z, ca.vertcat(p, u), ca.SX.sym("u", 0)],
            [xdot_vec, g_vec, ca.SX(0, 1), ca.SX(0, 1)], ca.dyn_in(), ca.dyn_out()),
        outputs=ca.Function("outputs", args, [y_e], names, ["y"]),
        output_names=out_names,
        initial=ca.Function("initial", args, [stacked(init_e)], names, ["r"]),
        events=ca.Function("events", [p], [stacked(ev_e)], ["p"], ["t_events"]),
        time_scales=ca.Function("time_scales", [p], [stacked(scale_e)], ["p"], ["periods"]),
        event_values=(ca.Function("event_values", args, [stacked(hybrid_e)], names, ["v"])
                      if n_hybrid else None),
        sample_times=(ca.Function("sample_times", [p], [stacked(sample_e)], ["p"],
                                  ["starts_intervals"]) if n_s else None))


def _state_choice_reads(system) -> set:
    """The variables the run-time state choice reads (:mod:`mbmodel.state_selection`):
    those of its Jacobian, and the candidates along their derivatives (the states of
    another choice start from their values); outputs a model compiled with ``outputs=``
    keeps besides those asked for."""
    chosen = system.state_set
    if chosen is None:
        return set()
    by_hash = {s.element_hash(): n for n, s in zip(system.names, system.symbols)}
    read = {by_hash[s.element_hash()] for s in ca.symvar(chosen.jacobian)
            if s.element_hash() in by_hash}
    return read | {name for chain in chosen.chains for name in chain}


def input_order(system) -> list[int]:
    """Flat positions of the compiled model's input vector ``u``: the external inputs,
    then the discrete knowns (relations, discrete variables, pre values, samples)."""
    variables = system.variables
    return ([i for i in system.inputs if not variables[i].discrete]
            + [i for i in system.inputs if variables[i].discrete not in ("", "unused")])


def _hybrid_expressions(system) -> list:
    """What the simulator evaluates at events (:meth:`HybridPart.expressions`, the order of
    :class:`mbmodel.event_layout.EventLayout`), with eliminated aliases resolved."""
    hyb = system.hybrid
    if hyb is None or hyb.empty:
        return []
    return _aliases_resolved(system, hyb.expressions())


def _aliases_resolved(system, exprs) -> list:
    """``exprs`` with the variables alias elimination removed written as the variables
    they stand for."""
    if not exprs:
        return []
    found = ca.symvar(ca.vertcat(*exprs))
    names = {v.symbol.element_hash(): v.name for v in system.variables}
    aliased = [(s, names[s.element_hash()]) for s in found
               if names.get(s.element_hash()) in system.alias]
    if aliased:
        exprs = ca.substitute(exprs, [s for s, _ in aliased],
                              [_expression_of(system, n) for _, n in aliased])
    return list(exprs)


class OutputSources(NamedTuple):
    """Where each output's value comes from: ``names``; ``rows``, an index into the sorted
    system's ``symbols`` (``len(symbols)``: the constant 0; ``-1``: the expression
    ``own[k]``), times ``signs`` plus ``offsets``."""

    names: list[str]
    rows: np.ndarray
    signs: np.ndarray
    offsets: np.ndarray
    own: dict[int, ca.SX]


def output_sources(system, wanted) -> OutputSources:
    """The outputs of every flat variable (unknowns, derivatives, aliases; those in
    ``wanted`` if not None; not the simulator's relations, pre values and samples) and the
    derivatives the analysis made, from :attr:`SortedSystem.value_sources`.

    Example: ``output_sources(cm.system, None).names == cm.output_names`` (compiled without
    ``outputs=``)"""
    known = system.value_sources
    keep = known.reported
    if wanted is not None:
        keep = keep & np.array([name in wanted for name in known.flat_names], dtype=bool)
    later = [i for i in known.extra if wanted is None or system.names[i] in wanted]
    names = list(itertools.compress(known.flat_names, keep)) + [system.names[i] for i in later]
    rows = np.concatenate([known.rows[keep], np.array(later, dtype=np.int64)])
    signs = np.concatenate([known.signs[keep], np.ones(len(later))])
    offsets = np.concatenate([known.offsets[keep], np.zeros(len(later))])
    own = {int(k): _expression_of(system, names[k]) for k in np.flatnonzero(rows < 0)}
    return OutputSources(names, rows, signs, offsets, own)


def _outputs(system, wanted, symbols: ca.SX) -> tuple[list[str], ca.SX]:
    """The names of the outputs (:func:`output_sources`) with their values as one vector
    of the sorted system's ``symbols`` (its symbol vector): ``sign * representative +
    offset``, formed by elementwise operations on vectors (casadi drops the products by 1
    and the sums with 0, as :func:`affine_expression` does) instead of a few casadi calls
    from Python per variable."""
    names, rows, signs, offsets, own = output_sources(system, wanted)
    if not names:
        return names, ca.SX(0, 1)
    rows = rows.copy()
    # after the symbols: zero (for the constants), then the values with expressions of
    # their own (chains of aliases, external inputs), in order
    ordered = sorted(own)
    rows[ordered] = len(system.symbols) + 1 + np.arange(len(ordered))
    extra = [ca.SX(0)] + [own[k] for k in ordered]
    # ([rows, 0]: a column also when there is only the zero, 1 x 1, as in a model whose
    # unknowns are all constants: linear indexing of a 1 x 1 matrix gives a row)
    return names, (ca.vertcat(symbols, *extra)[rows.tolist(), 0] * ca.DM(signs)
                   + ca.DM(offsets))


def _expression_of(system, name):
    """A variable as an expression of the sorted system's symbols (aliases resolved)."""
    symbol, sign, offset = alias_chain(system, name)
    return ca.SX(offset) if symbol is None else affine_expression(symbol, sign, offset)


def alias_chain(system, name):
    """``name``'s value as ``(symbol, sign, offset)``: ``sign * symbol + offset``, the
    symbol a variable of the sorted system or an external input (None: a constant),
    following its chain of aliases (one sign and one offset for the whole chain: the
    output Function and the kernels' C compute it alike).

    Example: ``symbol, sign, offset = alias_chain(cm.system, "motor.flange.phi")``"""
    sign, offset = 1.0, 0.0
    while name in system.alias:
        name, scale, shift = system.alias[name]
        offset += sign * shift
        sign *= scale
        if name is None:
            return None, 0.0, offset
    if name in system.flat_index:
        return system.symbols[system.flat_index[name]], sign, offset
    return system.variables[system.variable_index[name]].symbol, sign, offset


def _check_bounds(parameters, values, lower, upper):
    """Every value finite and within its parameter's bounds, checked vectorised; the
    :func:`check_parameter_value` of the first that is not raises with its name."""
    if not (np.all(np.isfinite(values)) and np.all(values >= lower)
            and np.all(values <= upper)):
        for q, v in zip(parameters, values):
            check_parameter_value(q.name, v, q.min, q.max)


def _entries_given(params: dict, *known, label: str = "params",
                   error: type = ParameterError) -> dict:
    """``params`` with a vector or matrix given by its declared name (``"j.n": [1, 0, 0]``)
    spread over its entries (``j.n[0]``, ...), which are among the names ``known`` (the
    compiled model's parameters, or its states for ``state_vector``); names known as they
    are stay. ``label`` and ``error``: what the messages call the dict, and raise."""
    spread = {}
    for name, value in params.items():
        if any(name in names for names in known):
            spread[name] = value
            continue
        matched = entries_named(name, [n for names in known for n in names])
        if not matched:
            spread[name] = value  # (reported as unknown by the caller)
            continue
        positions = [position for position, _ in matched]
        entries = [n for _, n in matched]
        twice = [n for n in entries if n in params]
        if twice:
            raise error(f"{label} gives '{name}' and its entry '{twice[0]}': give "
                                 f"one of them")
        shape = tuple(max(p[d] for p in positions) + 1 for d in range(len(positions[0])))
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise error(f"{label}['{name}'] must be numbers of shape {shape}, not "
                                 f"{value!r}") from None
        if array.size == int(np.prod(shape)) and sum(d > 1 for d in array.shape) <= 1 \
                and sum(d > 1 for d in shape) <= 1:
            array = array.reshape(shape)  # (a row, a column or a flat list of a vector)
        if array.shape != shape:
            raise error(f"{label}['{name}'] has shape {array.shape}; '{name}' has "
                                 f"shape {shape} (entries {entries[0]}, ...)")
        for n, position in zip(entries, positions):
            spread[n] = float(array[position])
    return spread


class CompiledCore:
    """What the compiler makes of a model: its casadi Functions and the metadata to run
    them. Running is not the compiler's: :class:`mbmodel.CompiledModel` (the class
    :func:`mbmodel.compile` returns, in :mod:`mbmodel.compiled`) adds the runs (simulate,
    initialize, linearize, evaluate, save, export), each a function of a sibling module
    that imports this one.

    Attributes: ``states``, ``algebraic``, ``inputs``, ``parameters`` (names), ``symbols``
    (:class:`ModelSymbols`: the Functions' arguments), ``ode`` (``f(x, z, u, p, t) -> ẋ``),
    ``alg`` (``g``), ``dynamics`` (both in casadi's integrator signature, ``p`` = parameters
    then inputs), ``output_function`` (all variables, named by ``output_names``),
    ``fixed_starts`` (``(name, value)`` of every hard initial condition),
    ``initial_equation_descriptions``, ``aliases`` (eliminated variable → ``(variable,
    sign, offset)``), ``residual_descriptions`` (of ``alg``), ``system`` (the
    :class:`SortedSystem`) and ``flat`` (the :class:`FlatModel`, for inspection).

    Example::

        core = compile(model)                  # mbmodel.compiler.compile
        print(core.states, core.parameter_vector({"resistor.R": 20.0}))
    """

    def __init__(self, code: GeneratedModel, system: SortedSystem, parameters: str = "symbolic",
                 times: BuildTimes | None = None, flat: FlatModel | None = None):
        sys_ = system
        self.flat = flat
        self.system = system
        #: The shapes ``Result.animate`` draws (plain data, see :mod:`mbmodel.visuals`).
        self.visuals = list(flat.visuals) if flat is not None else []
        self.name = sys_.model_name
        self.states = [sys_.names[v] for v in sys_.states]
        self.algebraic = [sys_.names[v] for v in sys_.algebraic]
        order = input_order(sys_)
        self.inputs = [sys_.variables[i].name for i in order if not sys_.variables[i].discrete]
        #: Values that change only at events, after the external inputs in ``u``.
        self.discrete = [sys_.variables[i].name for i in order if sys_.variables[i].discrete]
        self.discrete_start = np.array([sys_.variables[i].start for i in order
                                        if sys_.variables[i].discrete], dtype=float)
        self.event_values = code.event_values
        free = [p for p in sys_.parameters if p.binding is None]
        bound = [p for p in sys_.parameters if p.binding is not None]
        self.parameter_mode = parameters
        self.parameters = [p.name for p in free] if parameters == "symbolic" else []
        self.parameter_defaults = np.array([p.value for p in free], dtype=float)
        self._free = free
        self._bound = bound
        self.symbols = code.symbols
        #: Where the simulator finds relations, conditions and discrete values (None for a
        #: model without events).
        self.events = None
        self.ode, self.alg, self.dynamics = code.ode, code.alg, code.dynamics
        self.output_function, self.output_names = code.outputs, code.output_names
        if sys_.hybrid is not None and not sys_.hybrid.empty:
            self.events = EventLayout(sys_, order, self, code.sample_times)
        self.output_index = {n: i for i, n in enumerate(code.output_names)}
        self.initial_function, self.event_function = code.initial, code.events
        self.time_scale_function = code.time_scales
        self.fixed_starts = [(v.name, v.start) for v in sys_.variables
                             if v.fixed and v.kind == "unknown"]
        self.initial_equation_descriptions = [e.description for e in sys_.initial_equations]
        self.aliases = sys_.alias
        self.residual_descriptions = sys_.residual_descriptions
        self._param_check = None
        self._explicit_ode = None
        self._lower = np.array([q.min for q in free], dtype=float)
        self._upper = np.array([q.max for q in free], dtype=float)
        self._bound_lower = np.array([q.min for q in self._bound], dtype=float)
        self._bound_upper = np.array([q.max for q in self._bound], dtype=float)
        self.build_times = times or BuildTimes()
        self.start = np.array([sys_.start[v] for v in sys_.states], dtype=float)
        self.z_start = np.array([sys_.start[v] for v in sys_.algebraic], dtype=float)
        self._start_function = self._starts_of_parameters(sys_)
        self._check_parameters(self.parameter_defaults)  # e.g. asserts on declared values
        #: States and iteration variables that start from an implicit 0 (no start given).
        in_linear_blocks = {sys_.names[v] for b in sys_.blocks if b.linear for v in b.tear_vars}
        self.implicit_starts = [name for name in self.states + self.algebraic
                                if not _start_given(sys_, name) and name not in in_linear_blocks]
        if set(self.implicit_starts) & set(self.states) and (
                self.fixed_starts or self.initial_equation_descriptions):
            # a state that fixed starts determine through the equations (m2.w from m1.w's
            # through a gear) starts from what they give, as Modelica tools' free states do
            determined = determined_states(self)
            self.implicit_starts = [n for n in self.implicit_starts if n not in determined]
        if self.implicit_starts:
            shown = ", ".join(self.implicit_starts[:10])
            extra = len(self.implicit_starts) - 10
            more = f" and {extra} more" if extra > 0 else ""
            warnings.warn(ImplicitStartWarning(
                f"{self.name}: these states and iteration variables have no start value and "
                f"start from 0: {shown}{more}. Give them one (Fixed(value) or Guess(value) as "
                f"a modifier, or a start in the declaration)."), stacklevel=user_stacklevel())

    # -- parameters -------------------------------------------------------------------------
    def parameter_vector(self, params: dict | None = None) -> np.ndarray:
        """Numeric vector ``p`` from defaults updated by ``params`` (name -> value);
        validates finiteness and bounds of every parameter, bound ones included.

        Example: ``cm.ode(cm.start, [], [], cm.parameter_vector({"load.J": 2.0}), 0.0)``"""
        values = self.parameter_defaults.copy()
        if params:
            index = {q.name: i for i, q in enumerate(self._free)}
            bound = {q.name for q in self._bound}
            for name, val in _entries_given(params, index, bound).items():
                if name in index:
                    if self.parameter_mode == "constant":
                        raise ParameterError(
                            f"parameter '{name}' was folded into the code "
                            f"(compiled with parameters='constant'); recompile to change it")
                    values[index[name]] = scalar(val, f"params['{name}']", ParameterError)
                elif name in bound:
                    raise ParameterError(
                        f"parameter '{name}' is bound to an expression of other parameters "
                        f"in its model; set those parameters instead (or remove the binding)")
                else:
                    close = [q.name for q in self._free if q.name.split(".")[-1] ==
                             name.split(".")[-1]][:5]
                    if name in self.output_index:
                        raise ParameterError(
                            f"'{name}' is a variable of the model, not a parameter: its "
                            f"initial value is a start value (Fixed(...) or Guess(...) in "
                            f"the model, or x0=... for a state)")
                    raise ParameterError(f"the model has no parameter '{name}'"
                                         + (f"; did you mean {', '.join(close)}?" if close else ""))
        self._check_parameters(values)
        return values

    def parameter_entries(self, params: dict) -> dict:
        """``params`` with each vector or matrix parameter given by its declared name spread
        over its entries, the names the compiled model's parameters have (as
        :meth:`parameter_vector` reads them).

        Example::

            cm.parameter_entries({"j.n": [0, 0, 1]})   # {"j.n[0]": 0.0, ...}
        """
        return _entries_given(params, {q.name for q in self._free},
                              {q.name for q in self._bound})

    @property
    def free_parameters(self) -> list:
        """The declarations (:class:`~mbmodel.flat.FlatParameter`: value, unit, bounds) of
        the parameters a run can set, in the order of ``parameter_vector``.

        Example: ``[(q.name, q.value, q.unit) for q in cm.free_parameters]``"""
        return list(self._free)

    @property
    def bound_parameters(self) -> list:
        """The parameters bound to expressions of others
        (:class:`~mbmodel.flat.FlatParameter` with a ``binding``): not set by a run, checked
        against their bounds at every run's values.

        Example: ``[(q.name, q.binding) for q in cm.bound_parameters]``"""
        return list(self._bound)

    @property
    def start_function(self) -> ca.Function | None:
        """``p -> x_start``: the start values given as parameter expressions, at the
        parameters ``p`` (None: every start is a number, ``start``).

        Example: ``x0 = cm.start_function(cm.parameter_vector({"m": 2.0}))``"""
        return self._start_function

    def pivot_guards(self) -> list:
        """``(divisor, what)`` of the parameter expressions the equations were solved
        by: nonzero at any values a run is given (checked by :meth:`parameter_checks`;
        none with ``parameters="constant"``, whose values were checked at compile time).

        Example: ``[what for _, what in cm.pivot_guards()]``"""
        return self.system.pivot_guards if self.parameter_mode == "symbolic" else []

    def state_vector(self, values: dict | None = None) -> np.ndarray:
        """The state vector ``x`` (in the order of ``states``) from ``values`` (name ->
        number, or a vector's or matrix's declared name -> its entries); states not named
        keep their start values (``start``).

        Example: ``x = cm.state_vector({"joint1.phi": 0.3, "ball.Q": [0, 0, 0.6, 0.8]})``"""
        return self._named_vector(values, self.states, self.start, "state", required=False)

    def input_vector(self, values: dict | None = None) -> np.ndarray:
        """The external input vector ``u`` (in the order of ``inputs``) from ``values``
        (name -> number); every input must be named.

        Example: ``u = cm.input_vector({"tau": 1.5})``"""
        return self._named_vector(values, self.inputs, np.zeros(len(self.inputs)), "input",
                                  required=True)

    def named(self, vector, kind: str = "states") -> dict:
        """``{name: value}`` for a vector ordered like ``states``, ``inputs``,
        ``parameters`` or ``output_names`` (``kind``).

        Example: ``cm.named(cm.evaluator()(x), "states")`` names the state derivatives by
        their states."""
        names = {"states": self.states, "inputs": self.inputs, "parameters": self.parameters,
                 "outputs": self.output_names}.get(kind)
        if names is None:
            raise ValueError(f"kind must be 'states', 'inputs', 'parameters' or 'outputs', "
                             f"not {kind!r}")
        values = np.asarray(vector, dtype=float).reshape(-1)
        if len(values) != len(names):
            raise ValueError(f"{len(values)} values for the {len(names)} {kind} of {self.name}")
        return dict(zip(names, values.tolist()))

    def _named_vector(self, values, names, defaults, kind, required):
        vector = np.array(defaults, dtype=float)
        index = {n: i for i, n in enumerate(names)}
        values = _entries_given(dict(values or {}), index, label=f"{kind}_vector",
                                error=SimulationError)
        unknown = [n for n in values if n not in index]
        if unknown:
            tail = unknown[0].split(".")[-1]
            close = [n for n in names if n.split(".")[-1] == tail][:5]
            raise SimulationError(f"{self.name} has no {kind} {', '.join(unknown)}; its {kind}s are "
                             + (", ".join(close) + ", ..." if close else
                                ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")))
        missing = [n for n in names if n not in values] if required else []
        if missing:
            raise SimulationError(f"give a value for every {kind} of {self.name}; missing: "
                             f"{', '.join(missing)}")
        for name, value in values.items():
            vector[index[name]] = scalar(value, f"{kind} '{name}'", SimulationError)
        return vector

    def _check_parameters(self, values):
        """Bounds of free and bound parameters, the components' conditions (``mb.Assert``)
        and the parameter divisors the equations were sorted with (nonzero at the declared
        values; a run-time value must not make one zero)."""
        values = np.asarray(values, dtype=float)
        _check_bounds(self._free, values, self._lower, self._upper)
        asserts = self.system.asserts
        guards = self.pivot_guards()
        if not (self._bound or asserts or guards):
            return
        out = np.array(self.parameter_checks()(values)).reshape(-1)
        n_b, n_a = len(self._bound), len(asserts)
        for a, held in zip(asserts, out[n_b:n_b + n_a]):
            if not held:  # the components' own conditions say most, so they come first
                raise ParameterError(f"{a.origin or 'model'}: {a.message} (does not hold for "
                                     f"the parameter values given)")
        _check_bounds(self._bound, out[:n_b], self._bound_lower, self._bound_upper)
        for (expr, what), v in zip(guards, out[n_b + n_a:]):
            if v == 0.0 or not np.isfinite(v):
                names = sorted(str(s) for s in ca.symvar(expr))
                raise ParameterError(
                    f"with these parameter values the equation {what} divides by zero "
                    f"({describe(expr)} = {v}); it depends on {', '.join(names[:6])}. Change "
                    f"those values: the equations are sorted on their structure, and a value "
                    f"that removes a term leaves the equation unable to determine what it "
                    f"was sorted for (e.g. a zero resistance is a short: connect the two "
                    f"pins instead of the element)")

    def _starts_of_parameters(self, system):
        """``p -> (start, z_start)`` where start values are parameter expressions
        (``Guess(self.y0)``), else None: the start values then follow the parameters of
        each run, as Modelica's ``start = y0`` does."""
        given = getattr(system, "start_expressions", None) or {}
        order = list(system.states) + list(system.algebraic)
        if not any(v in given for v in order):
            return None
        values = [given[v] if v in given else ca.SX(system.start[v]) for v in order]
        return ca.Function("starts", [self.symbols.p],
                           [stacked(resolve_bindings(self._bound, values))])

    def starts(self, p) -> tuple[np.ndarray, np.ndarray]:
        """The start values of the states and algebraic variables for the parameter vector
        ``p`` (those given as parameter expressions follow it).

        Example: ``x_start, z_start = cm.starts(cm.parameter_vector({"y0": 2.0}))``"""
        function = getattr(self, "_start_function", None)
        if function is None:
            return self.start.copy(), self.z_start.copy()
        values = np.array(function(p), dtype=float).reshape(-1)
        n_x = len(self.start)
        return values[:n_x], values[n_x:]

    def parameter_checks(self) -> ca.Function:
        """``p -> [bound parameters' values; the components' conditions (mb.Assert, nonzero
        where they hold); the parameter divisors the equations were sorted with]``: what
        :meth:`simulate` checks of the parameter values beyond the free parameters' bounds
        (FMU export generates it into the FMU's C)."""
        if self._param_check is None:
            # One function for all three: bound parameters are resolved once.
            exprs = ([q.binding for q in self._bound]
                     + [a.condition for a in self.system.asserts]
                     + [g for g, _ in self.pivot_guards()])
            self._param_check = ca.Function("parameter_checks", [self.symbols.p],
                                            [stacked(resolve_bindings(self._bound, exprs))])
        return self._param_check

    def explicit_ode(self, guess: bool = False) -> ca.Function:
        """``(x, u, p, t) -> (ẋ, z)`` with the algebraic variables solved inside by casadi's
        rootfinder (Newton from their start values) — a pure ODE for any integrator, for code
        generation and for linearization. Models without algebraic variables need no solver.
        With ``guess=True`` the function takes a fifth argument, the Newton start (the
        simulator passes the previous solution, so a loop with several roots stays on the
        branch it is on). ``u`` is as for ``ode``: the external inputs (``inputs``), then
        in a model with events the discrete values (``discrete``: relations, pre values,
        when-clause variables), which hold between events; set them for a point with
        :func:`mbmodel.event_layout.relations_at` (:meth:`evaluator` does that itself).

        Example: ``xdot, z = cm.explicit_ode()(x, u, p, 0.0)``
        """
        if self._explicit_ode is None:
            sym = self.symbols
            X = ca.MX.sym("x", sym.x.numel())
            U = ca.MX.sym("u", sym.u.numel())
            P = ca.MX.sym("p", sym.p.numel())
            T = ca.MX.sym("t")
            G = ca.MX.sym("z_guess", sym.z.numel())
            if sym.z.numel():
                known = ca.vertcat(sym.x, sym.u, sym.p, TIME)
                g = ca.Function("g", [sym.z, known],
                                [self.alg(sym.x, sym.z, sym.u, sym.p, TIME)])
                solver = ca.rootfinder("algebraic_loops", "newton", g,
                                       {"error_on_fail": True, "abstol": 1e-12,
                                        "show_eval_warnings": False})
                Z = solver(G, ca.vertcat(X, U, P, T))
            else:
                Z = ca.MX(0, 1)
            xdot = self.ode(X, Z, U, P, T)
            with_guess = ca.Function("explicit_ode_from", [X, U, P, T, G], [xdot, Z],
                                     ["x", "u", "p", "t", "z_guess"], ["xdot", "z"])
            xdot, Z = with_guess(X, U, P, T, ca.DM(self.z_start))
            plain = ca.Function("explicit_ode", [X, U, P, T], [xdot, Z],
                                ["x", "u", "p", "t"], ["xdot", "z"])
            self._explicit_ode = (plain, with_guess)
        return self._explicit_ode[1 if guess else 0]

    @property
    def units(self) -> dict:
        """Unit of every variable that declares one (name -> unit text); a derivative's
        unit is its variable's per second.

        Example: ``cm.units["inertia.w"]`` -> ``"rad/s"``"""
        if getattr(self, "_units", None) is None:
            units = {}
            for var in self.system.variables:
                if var.unit:
                    units[var.name] = var.unit
            for var in self.system.variables:
                if var.derivative_of is not None:
                    base = self.system.variables[var.derivative_of]
                    if base.unit and var.name not in units:
                        units[var.name] = per_second(base.unit)
            self._units = units
        return self._units

    # -- names ----------------------------------------------------------------------------------
    def alias_root(self, name: str) -> tuple[str | None, float, float]:
        """``(root, sign, offset)`` with ``name = sign * root + offset``, down the chain of
        eliminated aliases: ``root`` is ``name`` itself where it was kept, None where it is
        a constant (then ``name = offset``).

        Example: ``root, sign, offset = cm.alias_root("resistor.n.v")``
        """
        sign, offset = 1.0, 0.0
        while name in self.aliases:
            name, s, o = self.aliases[name]
            sign, offset = sign * s, offset + sign * o
        return name, sign, offset

    def warn_if_model_changed(self):
        """A :class:`~mbmodel.ModelChangedWarning` (once for each new change) if a
        parameter or start value of the model this was compiled from has been set since:
        this compiled model keeps the values it was compiled with.

        Example: ``model.load.J = 5.0`` after ``cm = mb.compile(model)`` makes
        ``cm.simulate(1.0)`` warn that it still runs with the old ``J``."""
        source = getattr(self, "_compiled_from", None)   # (none in a loaded one)
        model = source[0]() if source is not None else None
        if model is None:
            return
        changed = changed_since(model, source[1])
        if len(changed) <= getattr(self, "_changes_warned", 0):
            return
        self._changes_warned = len(changed)
        shown = ", ".join(changed[:6]) + (" ..." if len(changed) > 6 else "")
        warnings.warn(ModelChangedWarning(
            f"{type(model).__name__} was changed after it was compiled ({shown}): this "
            f"compiled model keeps the values it was compiled with. Pass new parameter values "
            f"as params={{name: value}}, or compile the model again (for new start values "
            f"too)."), stacklevel=user_stacklevel())

    def __repr__(self):
        return (f"<{type(self).__name__} {self.name}: {len(self.states)} states, {len(self.algebraic)} "
                f"algebraic, {len(self.inputs)} inputs, {len(self.parameters)} parameters>")


def per_second(unit: str) -> str:
    """The unit of a derivative in Modelica's notation: ``"m"`` -> ``"m/s"``, ``"m/s"`` ->
    ``"m/s2"``, ``"rad/s2"`` -> ``"rad/s3"``.

    Example: ``per_second("rad/s")`` is ``"rad/s2"``"""
    match = re.fullmatch(r"(.*)/s(\d*)", unit)
    if match and "(" not in match.group(1):
        return f"{match.group(1)}/s{int(match.group(2) or 1) + 1}"
    return f"{unit}/s"


def compile(model: Model, *, analysis: str = "forward", parameters: str = "symbolic",
            state_priority: dict[str, int] | None = None,
            outputs: list[str] | None = None, check_units: bool = False,
            model_class: type | None = None) -> CompiledCore:
    """The compiler's stages on ``model``: flatten, analyze (in :func:`compile_flat`),
    generate. The options are :func:`mbmodel.compile`'s, which documents them;
    ``model_class`` is the class of the result (a subclass of :class:`CompiledCore`, which
    is the default): :func:`mbmodel.compile` asks for :class:`mbmodel.CompiledModel`,
    which adds the runs.

    Example::

        core = compile(RC())
        print(core.states, core.build_times.total)
    """
    if parameters not in ("symbolic", "constant"):
        raise DeclarationError("parameters must be 'symbolic' or 'constant'")
    if outputs is not None and (isinstance(outputs, str) or
                                not all(isinstance(o, str) for o in outputs)):
        raise DeclarationError(f"compile(outputs=...) takes a list of variable names, not "
                               f"{outputs!r}")
    if state_priority is not None and not isinstance(state_priority, dict):
        raise DeclarationError(f"compile(state_priority=...) takes a dict name -> priority, "
                               f"not {state_priority!r}")
    check_model_instance(model, "compile()")
    times = BuildTimes()
    compiled_at = compiled_now(model)
    with collector_paused():
        t0 = _clock.perf_counter()
        flat = flatten(model, analysis, parameters)       # instance tree -> flat DAE
        if flat.unvalued_parameters:
            shown = ", ".join(flat.unvalued_parameters[:10])
            more = len(flat.unvalued_parameters) - 10
            warnings.warn(NoValueWarning(
                f"{type(model).__name__}: these parameters have no value and are 0: {shown}"
                f"{f' and {more} more' if more > 0 else ''}. Declare one (Parameter(1.0)) or "
                f"give one (as a modifier, e.g. Resistor(R=100.0))."),
                stacklevel=user_stacklevel())
        if check_units:
            from .units import check_units as units_agree
            units_agree(flat)                             # pint: both sides alike
        times.flatten = _clock.perf_counter() - t0
        cm = compile_flat(flat, parameters, state_priority, outputs, times, model_class)
        cm._compiled_from = (weakref.ref(model), compiled_at)
        return cm


def compile_flat(flat: FlatModel, parameters: str = "symbolic",
                 state_priority: dict[str, int] | None = None,
                 outputs: list[str] | None = None,
                 times: BuildTimes | None = None,
                 model_class: type | None = None) -> CompiledCore:
    """The stages after flattening (:func:`compile`'s options): analyze, generate, and the
    compiled model, of ``model_class`` (:class:`CompiledCore` by default). ``times`` gets
    the stages' times. The run-time state choice (:mod:`mbmodel.state_selection`)
    compiles its other choices of the same flat model with it.

    Example::

        cm_other = compile_flat(cm.flat, cm.parameter_mode, {"pendulum.x": 0})
    """
    times = times if times is not None else BuildTimes()
    if state_priority:
        unknown = [n for n in state_priority if n not in flat.index]
        if unknown:
            raise DeclarationError(
                f"compile(state_priority=...): the model has no variable "
                f"{', '.join(map(repr, unknown[:5]))}")
    if outputs is not None:  # what events and the run's asserts read
        outputs = list(outputs) + _variable_names(flat, flat.hybrid.expressions() + [
            a.condition for a in flat.run_asserts])
    t1 = _clock.perf_counter()
    system = analyze(flat, state_priority, outputs)   # -> sorted, index-reduced, torn
    t2 = _clock.perf_counter()
    code = generate(system, parameters, outputs)      # -> casadi Functions
    times.structure, times.casadi = t2 - t1, _clock.perf_counter() - t2
    return (model_class or CompiledCore)(code, system, parameters, times, flat)


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for a build: compiling (and building kernels,
    :mod:`mbmodel.kernels`) allocates millions of small objects and frees none of them
    until the end, and the collector would rescan them over and over (superlinear build
    times). Restored afterwards if it was on.

    What the build made and kept is old by then: it goes straight to the oldest generation
    (``gc.freeze`` then ``gc.unfreeze``), so the young generations' next collections do not
    scan those millions of objects twice over (about 0.85 s each at 1000 links); a full
    collection still visits them when one is due."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _variable_names(flat, exprs) -> list[str]:
    """Names of the variables that the expressions ``exprs`` read."""
    names = {v.symbol.element_hash(): v.name for v in flat.variables}
    found = ca.symvar(ca.vertcat(*exprs)) if exprs else []
    return [names[s.element_hash()] for s in found if s.element_hash() in names]


def _start_given(system, name) -> bool:
    """Whether the flat variable behind ``name`` (a derivative counts as its own) declared
    or was given a start value."""
    if name in getattr(system, "starts_from_aliases", {}):
        return True  # a start given on an alias (see _Analysis.starts_from_aliases)
    index = system.variable_index.get(name)
    if index is None:
        return True  # created by the compiler (a derivative): started by the initialization
    var = system.variables[index]
    return var.start_given or var.fixed
