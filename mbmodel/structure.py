"""Structural analysis: flat DAE -> sorted, index-reduced, torn system (:class:`SortedSystem`).

Decisions are made by the integer passes in :mod:`mbmodel.graph`; this module only translates
between expressions and integers (incidence from casadi Jacobian sparsity, solvability of an
equation for a variable, time derivatives of equations) and applies those decisions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from . import graph
from .alias import AliasResult, eliminate_aliases
from .core import STATE_PRIORITY, time_derivative
from .errors import DeclarationError, StructuralSingularityError
from .flat import (FlatModel, RelationLiterals, ShownWithRelations, at_parameter_values,
                   describe, stacked)
from .linear import reduce_linear
from .linsolve import SINGULAR_PIVOT, pivoted_solve, smallest_relative_pivot


#: Largest linear torn system solved symbolically; larger ones become algebraic states.
MAX_SYMBOLIC_LINEAR = 12

#: Tearing solves an equation for a variable only if its coefficient is at least this
#: fraction of the equation's largest coefficient (at the declared parameter values).
TEARING_PIVOT_RATIO = 1e-2

#: Largest linear block whose matrix is checked for regularity at the declared parameter
#: values (a dense elimination: cubic in the block size).
MAX_CHECKED_BLOCK = 400


@dataclass(slots=True)
class Block:
    """One block of the BLT: ``kind`` is "explicit" (a single assignment), "linear" (torn,
    the tearing variables solved symbolically) or "nonlinear" (tearing variables become
    algebraic states; ``residuals`` must vanish)."""

    kind: str
    equations: list[int]
    variables: list[int]
    assignments: list[tuple[int, int]] = field(default_factory=list)
    tear_vars: list[int] = field(default_factory=list)
    residuals: list[int] = field(default_factory=list)
    #: A "nonlinear" block whose residuals are in fact linear in its tearing variables (too
    #: many of them to solve symbolically): the solution does not depend on start values.
    linear: bool = False


@dataclass
class ValueSources:
    """Where every flat variable's value comes from, by flat position: ``rows[g]``, an
    index into the sorted system's ``symbols`` (``len(symbols)``: the constant 0), times
    ``signs[g]`` plus ``offsets[g]``; ``-1`` where it is an expression of its own (a chain
    of aliases, an external input). ``reported``: which flat variables are results (not the
    simulator's relations, pre values and samples); ``extra``: the sorted system's
    variables that are not flat ones (derivatives it made), reported after them."""

    flat_names: list[str]
    rows: np.ndarray
    signs: np.ndarray
    offsets: np.ndarray
    reported: np.ndarray
    extra: list[int]


@dataclass
class SortedSystem:
    """What the casadi stage needs, as plain data.

    Variables are numbered ``0..n-1`` (``names``, ``symbols``); ``states[i]`` has derivative
    ``state_derivatives[i]``. ``sequence`` is the ordered list of ``(variable, expression)``
    definitions; ``algebraic`` are variables solved by the integrator (tearing variables of
    nonlinear blocks) with ``residuals`` that must vanish.
    """

    names: list[str]
    symbols: list[ca.SX]
    equations: list[ca.SX]
    equation_origins: list[str]
    states: list[int]
    state_derivatives: list[int]
    algebraic: list[int]
    residuals: list[ca.SX]
    residual_descriptions: list[str]
    sequence: list[tuple[int, ca.SX]]
    blocks: list[Block]
    alias: dict[str, tuple[str | None, float, float]]
    inputs: list[int]
    n_differentiated_equations: int
    dummy_derivatives: list[int]
    removed_alias_equations: int
    start: list[float]
    flat_index: dict[str, int]
    #: start values given as parameter expressions (of the flat parameters), by variable
    start_expressions: dict = field(default_factory=dict)
    #: kept variable -> the eliminated alias whose start it took (no start of its own)
    starts_from_aliases: dict = field(default_factory=dict)
    #: Divisors that depend on parameters only, with what was solved by dividing by them:
    #: ``(expression, description)``. Nonzero at the declared values (checked here); the
    #: compiled model re-checks them when parameters change at run time.
    pivot_guards: list[tuple[ca.SX, str]] = field(default_factory=list)
    # What the casadi stage needs of the flat model, handed on (it never reads FlatModel):
    #: the model's name; every flat variable (names, kinds, starts, input symbols) and
    #: ``variable_index`` (name -> position); every parameter (values and bindings);
    #: initial equations, time events (parameter expressions) and parameter conditions.
    model_name: str = ""
    variables: list = field(default_factory=list)
    variable_index: dict[str, int] = field(default_factory=dict)
    parameters: list = field(default_factory=list)
    initial_equations: list = field(default_factory=list)
    time_events: list = field(default_factory=list)
    time_scales: list = field(default_factory=list)
    asserts: list = field(default_factory=list)
    #: Asserts that read variables (:mod:`mbmodel.asserts` checks them along a run).
    run_asserts: list = field(default_factory=list)
    #: Text of each equation (indexed like ``equations``), formatted when read.
    equation_descriptions: object = None
    #: Relations, discrete equations and when clauses (the flat model's HybridPart).
    hybrid: object = None
    state_set: "DynamicStateSet | None" = None
    #: ``symbols`` as one column vector, if known (selecting entries from it is cheaper
    #: than a vertcat of the list, which converts every scalar from Python).
    symbol_vector: ca.SX | None = None
    #: The expressions of ``sequence`` as one column vector, if known (likewise).
    sequence_vector: ca.SX | None = None
    #: Every flat variable's value in ``symbols`` (the compiled model's outputs; None only
    #: in a system saved before it existed, which is never generated again).
    value_sources: ValueSources | None = None


@dataclass
class DynamicStateSet:
    """Constraints whose dependent variables depend on where the solution is (the
    cartesian pendulum: ``y`` follows from ``x`` except near ``y = 0``): the simulator may
    choose them again at run time (:mod:`mbmodel.state_selection`).

    ``jacobian`` is the Jacobian of the position-level constraints (the equations index
    reduction differentiated most often) with respect to the ``candidates`` (an expression
    of variables and parameters), each candidate with ``chains`` (the model's names along its
    derivatives, position first); ``dependent``: the candidates the compiler made dependent
    (their derivatives are dummy derivatives); ``coordinates``: the candidates a choice
    picks from (all, except in mechanisms: the joint coordinates on loops)."""

    jacobian: ca.SX
    candidates: list[str]
    chains: list[list[str]]
    dependent: list[int]
    #: the candidates that may be states (the others are dependent in every choice, e.g.
    #: positions and orientations of frames on a loop)
    coordinates: list[int] = None
    #: the candidates whose velocities the compiled model computes from the constraints
    #: (None: not known; ``dependent`` when the states were chosen level by level alike)
    velocity_dependent: list[int] | None = None


#: Largest number of candidates for which the state choice is made again at run time.
MAX_DYNAMIC_CANDIDATES = 12


def incidence_lists(exprs: ca.SX, syms: ca.SX) -> list[list[int]]:
    """Which of ``syms`` each entry of ``exprs`` depends on (sorted column lists).

    Structure only: numeric Jacobian entries would cost O(n²) on a model with one dense row
    and one dense column (a shared ground), which graph colouring cannot compress."""
    row_start, cols = ca.jacobian_sparsity(exprs, syms).get_crs()  # columns sorted per row
    return [cols[row_start[r]:row_start[r + 1]] for r in range(exprs.numel())]


def affine_expression(sym, sign, off):
    """``sign*sym + off`` without the multiplications and additions that are no-ops
    (each costs ~15 µs from Python; tens of thousands of aliases)."""
    expr = sym if sign == 1.0 else (-sym if sign == -1.0 else sign * sym)
    return expr if off == 0.0 else expr + off


class _Texts:
    """Equation descriptions formatted when a message reads one: items are text, objects
    with a ``description`` (flat equations) or functions returning text."""

    def __init__(self, items=()):
        self._items = list(items)

    def __getitem__(self, i) -> str:
        item = self._items[i]
        if not isinstance(item, str):
            item = self._items[i] = item.description if hasattr(item, "description") else item()
        return item

    def __len__(self):
        return len(self._items)

    def append(self, item):
        self._items.append(item)

    def __setitem__(self, i, item):
        self._items[i] = item

    def copy(self) -> "_Texts":
        return _Texts(self._items)

    def _persist_state(self) -> dict:
        # Saved as text: the lazy items refer to the flattening's working objects.
        return {"_items": [self[i] for i in range(len(self))]}


def _sx_list(expr: ca.SX) -> list:
    """The entries of ``expr`` (column-major, structural zeros as 0) as scalar SX: one
    casadi call, where indexing costs ~10 µs per entry from Python."""
    return expr.elements()


class _Analysis:
    def __init__(self, flat: FlatModel, aliases: AliasResult):
        self.flat = flat
        self.aliases = aliases

    # ---- variables after alias elimination ------------------------------------------------
    def build_variables(self):
        flat = self.flat
        alias = dict(self.aliases.alias)
        names = [v.name for v in flat.variables]
        symbols = [v.symbol for v in flat.variables]
        var_diff = [v.derivative for v in flat.variables]
        def input_rep(v):
            """The external input that v is (an alias with sign 1 and no offset), or None."""
            rep, sign, off = alias.get(v, (v, 1.0, 0.0))
            ok = rep is not None and sign == 1.0 and off == 0.0 and flat.variables[rep].kind == "input"
            return rep if ok else None

        # Declared derivatives of signals connected to an external input (Derivative()) become
        # that input's derivative, before any other alias asks for it.
        for a, (rep, _, _) in alias.items():
            da = var_diff[a]
            if da is not None and rep is not None and input_rep(a) == rep and input_rep(da) is not None:
                if var_diff[rep] not in (None, input_rep(da)):
                    raise DeclarationError(f"two different derivatives were declared for the "
                                           f"input '{names[rep]}'")
                var_diff[rep] = input_rep(da)
        # Derivatives of aliased variables are aliases of the representative's derivative.
        k = 0
        order = sorted(alias)
        while k < len(order):
            a = order[k]
            k += 1
            rep, sign, _ = alias[a]
            da = var_diff[a] if a < len(var_diff) else None
            if da is None:
                continue
            if rep is None:
                alias[da] = (None, 1.0, 0.0)
            else:
                if flat.variables[rep].discrete:
                    alias[da] = (None, 1.0, 0.0)  # constant between events
                    order.append(da)
                    continue
                if flat.variables[rep].kind == "input":
                    if input_rep(da) is not None:
                        continue  # a declared derivative, handled above
                    if var_diff[rep] is None:
                        raise DeclarationError(
                            f"der({names[a]}) is the derivative of the external input "
                            f"'{names[rep]}'; inputs cannot be differentiated (unless their "
                            f"derivatives are inputs too, declared with Derivative())")
                elif var_diff[rep] is None:
                    sym = ca.SX.sym(f"der({names[rep]})")
                    var_diff[rep] = len(names)
                    names.append(f"der({names[rep]})")
                    symbols.append(sym)
                    var_diff.append(None)
                alias[da] = (var_diff[rep], sign, 0.0)
            order.append(da)
        self.names, self.symbols, self.var_diff_all = names, symbols, var_diff
        # Selections by index lists from one vector (a vertcat of a selection converts
        # every scalar from Python again, ~2 µs each).
        known = flat.symbol_vector
        if known is not None and known.numel() == len(flat.variables):
            self.symbol_vector = ca.vertcat(known, *symbols[len(flat.variables):])
        else:
            self.symbol_vector = stacked(symbols)
        self.alias = alias
        kinds = [v.kind for v in flat.variables] + ["derivative"] * (len(names) - len(flat.variables))
        self.kinds = kinds
        self.unknown_ids = [i for i in range(len(names))
                            if kinds[i] != "input" and i not in alias]
        self.input_ids = [i for i in range(len(flat.variables)) if kinds[i] == "input"]

    def alias_expressions(self, ids) -> ca.SX:
        """``sign * representative + offset`` of each alias in ``ids`` (the offset alone
        for an alias of a constant) as one vector, by elementwise operations on vectors
        instead of a few casadi calls from Python per alias (casadi drops the products by
        1 and the sums with 0 as :func:`affine_expression` does)."""
        reps = [self.alias[i][0] for i in ids]
        constant = [k for k, r in enumerate(reps) if r is None]
        roots = self.symbol_vector[[0 if r is None else r for r in reps]]
        if constant:
            roots[constant] = ca.SX.zeros(len(constant))
        signs = ca.DM([1.0 if r is None else self.alias[i][1] for i, r in zip(ids, reps)])
        offsets = ca.DM([self.alias[i][2] for i in ids])
        return roots * signs + offsets

    # ---- equations after substitution -------------------------------------------------------
    def build_equations(self):
        flat = self.flat
        kept = self.aliases.kept_equations
        if not kept:
            residuals = ca.SX(0, 1)
        elif flat.residual_vector is not None and flat.residual_vector.numel() == len(
                flat.equations):  # (the flattened residuals: a selection, no conversions)
            residuals = flat.residual_vector[kept]
        else:
            residuals = ca.vertcat(*[flat.equations[k].residual for k in kept])
        alias_ids = sorted(self.alias)
        if alias_ids and kept:
            residuals = ca.substitute(residuals, self.symbol_vector[alias_ids],
                                      self.alias_expressions(alias_ids))
        self.equations = _sx_list(residuals)
        self.origins = [flat.equations[k].origin for k in kept]
        self.equation_kinds = [flat.equations[k].kind for k in kept]
        self.descriptions = _Texts(flat.equations[k] for k in kept)
        return residuals  # the equations stacked, for the whole-system passes

    def check_not_constant(self):
        """Stop at an equation that alias elimination reduced to a number. An equation whose
        class's slopes still name an unknown after the aliases are mapped
        (:meth:`template_slopes`) keeps that unknown: only the others are looked at (one
        casadi call each)."""
        for i, slopes in enumerate(self.slopes):
            if slopes is not None and (slopes[0] or slopes[1]):
                continue
            e = self.equations[i]
            unconnected = self.equation_kinds[i] == "unconnected flow"
            if unconnected and e.is_constant() and float(e) == 0:
                connector = self.flat.unconnected_flows[self.aliases.kept_equations[i]]
                component = connector.rsplit(".", 1)[0]
                raise StructuralSingularityError(
                    f"'{connector}' is not connected, and '{component}' gets no equation "
                    f"from it: its flow is zero already ('{self.descriptions[i]}' is 0 = 0 "
                    f"after connection and alias equations are applied), so the potentials "
                    f"of '{component}' are undetermined (a component with no connection "
                    f"to the rest of the model); connect it or remove it")
            if e.is_constant():
                what = ("is always satisfied (0 = 0): it is redundant" if float(e) == 0 else
                        f"reduces to {float(e)} = 0: it contradicts the others")
                shorted = (self._shorted_component(self.descriptions[i])
                           if self.equation_kinds[i] == "connection" else None)
                if shorted is not None:
                    raise StructuralSingularityError(
                        f"equation '{self.descriptions[i]}' from "
                        f"{self.origins[i] or 'the model'} {what} after connection and alias "
                        f"equations are applied: the connection joins two connectors of the "
                        f"same component '{shorted}', whose own equations already relate "
                        f"them (it short-circuits '{shorted}'); remove that connection")
                raise StructuralSingularityError(
                    f"equation '{self.descriptions[i]}' from {self.origins[i] or 'the model'} "
                    f"{what} after connection and alias equations are applied; the model "
                    f"over-determines the variables involved (two ideal sources of one "
                    f"quantity on one node: voltage sources in parallel, two positions or "
                    f"speeds imposed on one rigid part, two pressure sources on one port; or "
                    f"no reference: a circuit without a Ground, a mechanism without a fixed "
                    f"support, whose potentials are then undetermined); remove one of the "
                    f"conflicting elements or add the missing reference")

    @staticmethod
    def _shorted_component(description: str) -> str | None:
        """The component both sides of a connection equation ``a.c1.v = a.c2.v`` belong to
        (two of its own connectors), or None."""
        sides = description.split(" = ")
        if len(sides) != 2:
            return None
        owners = {side.strip().rsplit(".", 2)[0] for side in sides if side.count(".") >= 2}
        connectors = {side.strip().rsplit(".", 1)[0] for side in sides}
        if len(owners) == 1 and len(connectors) == 2 and all(s.count(".") >= 2 for s in sides):
            return owners.pop()
        return None

    def template_slopes(self, local) -> list:
        """Per equation after substitution, its derivatives along the unknowns as its
        class's template found them (:attr:`mbmodel.flat.FlatEquation.slopes`), or None:
        ``({unknown: number}, {unknown})``, the constant ones and the others (``local``: the
        unknowns' indices by variable). Where the instance's aliases could change them the
        answer is None and the equation is asked as before: two of the equation's
        variables that are one (their terms may cancel), or a chain of aliases. A variable
        that is a constant may fold the products it is in (a joint's torque without a drive,
        0, over an articulated inertia): an equation of a template takes its class's slopes
        with the constants put in, found once per row and set of constants
        (:meth:`mbmodel.templates.EquationTemplate.slopes_with_constants`); any other
        equation only if its slopes are numbers other than zero (it is affine, and the
        constants fold away alone), else it is asked."""
        # Per variable: what it is after alias elimination (-1: a chain, -2: a constant) and
        # its sign (1 or -1, so products by it are exact), then its unknown's index (-1: a
        # known input).
        n = len(self.names)
        root, sign_of, column_of = list(range(n)), [1.0] * n, [-1] * n
        for a, (rep, sign, _) in self.alias.items():
            if rep is None:
                root[a] = -2
            elif rep in self.alias:
                root[a] = -1
            else:
                root[a], sign_of[a] = rep, sign
        for g, column in local.items():
            column_of[g] = column
        # a template's row, by its shared list of constant slopes
        template_rows = {id(constant): (template, row) for template in self.flat.templates
                         for row, (constant, _) in enumerate(template.slopes)}
        result = []
        equations = self.flat.equations
        # a row's columns and numbers, by its shared list of constant slopes (the same
        # for every instance of a template's row)
        row_shapes = {}
        no_varying = frozenset()
        for k in self.aliases.kept_equations:
            slopes = equations[k].slopes
            if slopes is None:
                result.append(None)
                continue
            constant, varying, positions = slopes
            shape = row_shapes.get(id(constant))
            if shape is None:
                shape = row_shapes[id(constant)] = ([c for c, _ in constant],
                                                    [number for _, number in constant])
            columns, numbers = shape
            variables = [positions[c] for c in columns]
            roots = [root[g] for g in variables]
            if varying:
                roots += [root[positions[c]] for c in varying]
            if -1 in roots:
                result.append(None)
                continue
            if -2 not in roots and len(set(roots)) == len(roots):
                result.append(({column_of[r]: sign_of[g] * number
                                for g, number, r in zip(variables, numbers, roots)
                                if column_of[r] >= 0},
                               {column_of[r] for r in roots[len(columns):]
                                if column_of[r] >= 0} if varying else no_varying))
                continue
            if -2 in roots:
                source = template_rows.get(id(constant))
                if source is not None:  # the class's slopes with the constants put in
                    columns = [c for c, _ in constant] + list(varying)
                    constants = tuple(sorted((c, self.alias[positions[c]][2])
                                             for c, r in zip(columns, roots) if r == -2))
                    constant, varying = source[0].slopes_with_constants(source[1], constants)
                    variables = [positions[c] for c, _ in constant]
                    roots = [root[g] for g in variables] + [root[positions[c]] for c in varying]
                elif varying or any(number == 0.0 for _, number in constant):
                    result.append(None)
                    continue
                else:  # affine (a flow sum): the constants fold alone
                    kept = [i for i, r in enumerate(roots) if r != -2]
                    variables = [variables[i] for i in kept]
                    constant = [constant[i] for i in kept]
                    roots = [roots[i] for i in kept]
            if len(set(roots)) < len(roots):
                result.append(None)
                continue
            result.append(({column_of[r]: sign_of[g] * number
                            for g, (_, number), r in zip(variables, constant, roots)
                            if column_of[r] >= 0},
                           {column_of[r] for r in roots[len(constant):] if column_of[r] >= 0}))
        return result

    def starts_from_aliases(self, local, start, start_expressions) -> dict:
        """A kept variable with no start of its own takes one given on a variable alias
        elimination removed in its favour (Modelica tools take an alias set's start from
        any member that has one; fixed ones first): ``a = sign * rep + offset`` gives
        ``rep = (a - offset) / sign``. Updates ``start`` and ``start_expressions`` (by local
        index) and returns ``{kept name: the alias it took its start from}``."""
        variables, given = self.flat.variables, getattr(self.flat, "start_expressions", {})

        def has_start(g):  # (ids beyond the flat variables are the compiler's own)
            return g >= len(variables) or (variables[g].start_given or variables[g].fixed
                                           or g in given)

        taken = {}
        # (the few aliases with a start, not every alias of the model, are sorted)
        with_start = [a for a in self.alias if a < len(variables) and has_start(a)]
        for a in sorted(with_start, key=lambda a: (not variables[a].fixed, a)):
            rep, sign, offset = a, 1.0, 0.0
            while rep in self.alias and self.alias[rep][0] is not None:
                rep, s, o = self.alias[rep]
                sign, offset = sign * s, offset + sign * o
            v = local.get(rep)
            if rep in self.alias or v is None or has_start(rep) or rep in taken:
                continue
            taken[rep] = a
            if a in given:
                start_expressions[v] = (given[a] - offset) / sign
            start[v] = (variables[a].start - offset) / sign
        return {self.names[rep]: self.names[a] for rep, a in taken.items()}

    def starts_from_pairs(self, wanted, ids, names, symbols, equations, incidence, start,
                          start_expressions, taken) -> dict:
        """A state or iteration variable (``wanted``, local indices) with no start takes one
        from an equation that links it alone to a variable with a start, affinely with
        constant coefficients: an element's ``v = p.v - n.v`` with ``n`` grounded makes the
        pin's potential, kept for a node of three pins, follow a ``Guess`` on the element's
        voltage (alias elimination saw three variables there, and
        :meth:`starts_from_aliases` only its aliases). Updates ``start`` and
        ``start_expressions``; returns ``{variable: the variable it took its start from}``."""
        variables, given = self.flat.variables, getattr(self.flat, "start_expressions", {})
        n_flat = len(ids)

        def has_start(v):  # (beyond n_flat: derivatives the compiler made, none given)
            if v >= n_flat:
                return False
            g = ids[v]
            return names[v] in taken or (g < len(variables) and (
                variables[g].start_given or variables[g].fixed or g in given))
        needing = {v for v in wanted if v < n_flat and not has_start(v)}
        if not needing:
            return {}
        found = {}
        for e, row in enumerate(incidence[:len(self.equations)]):
            if len(row) != 2 or not needing.intersection(row):
                continue
            v, other = row if row[0] in needing else row[::-1]
            if v in found or not has_start(other):
                continue
            pair = ca.vertcat(symbols[v], symbols[other])
            slopes = ca.jacobian(equations[e], pair)
            rest = ca.substitute(equations[e], pair, ca.DM.zeros(2))
            if not (slopes.is_constant() and rest.is_constant()) or float(slopes[0]) == 0.0:
                continue
            c_v, c_other, k = float(slopes[0]), float(slopes[1]), float(rest)
            start[v] = -(c_other * start[other] + k) / c_v
            if other in start_expressions:
                start_expressions[v] = -(c_other * start_expressions[other] + k) / c_v
            found[v] = other
        return {names[v]: names[other] for v, other in found.items()}

    @property
    def loop_components(self) -> set:
        return self.flat.loop_components

    def state_preference(self, g, state_priority):
        """How much flat variable ``g`` deserves to stay a state (None: a variable the
        compiler created): user-declared state_select first, a fixed start next."""
        var = self.flat.variables[g] if g is not None and g < len(self.flat.variables) else None
        if var is not None and state_priority is not None and var.name in state_priority:
            return state_priority[var.name]  # also for a derivative (run-time state choice)
        if var is not None and var.kind == "unknown":
            # Coordinates of components on a kinematic loop give way to others of the same
            # rank: the loop constrains them, while a coordinate off the loop moves the
            # whole loop rigidly (the generic-point check of dummy_derivatives cannot tell).
            on_loop = var.origin in self.loop_components
            return (STATE_PRIORITY[var.state_select] + (0.5 if var.fixed else 0.0)
                    - (0.25 if on_loop else 0.0))
        return 1.5

    def expose_hidden_constraints(self, ids, inc, local, state_priority, stacked=None):
        """Exact elimination of the linear integer equations (:mod:`mbmodel.linear`):
        constraints between differentiated variables that only appear when equations are
        combined replace one of their source equations, so index reduction sees them;
        linearly dependent equations stop the compilation."""
        symbols = [self.symbols[g] for g in ids]
        differentiated = [self.var_diff_all[g] is not None for g in ids]
        # Sorted like the dummy-derivative candidates der(w): preference of w, then index.
        preference = [(self.state_preference(g, state_priority), local[self.var_diff_all[g]])
                      if differentiated[j] and self.var_diff_all[g] in local else (0, j)
                      for j, g in enumerate(ids)]
        known = [None if slopes is None else not slopes[1] for slopes in self.slopes]
        reduction = reduce_linear(self.equations, symbols, differentiated, inc, preference,
                                  stacked, known,
                                  [slopes[0] if constant else None
                                   for slopes, constant in zip(self.slopes, known)])
        self.linear_reduction = reduction
        texts = self.descriptions.copy()

        def quoted(eqs):
            return "\n".join(f"  '{texts[e]}' (from {self.origins[e] or 'the model'})"
                              for e in eqs[:12]) + ("\n  ..." if len(eqs) > 12 else "")
        if reduction.dependent:
            eqs, redundant = reduction.dependent[0]
            kind = ("redundant: together they say 0 = 0, so one equation is missing for the "
                    "variables they contain" if redundant else
                    "contradictory: combined they reduce to 0 = c, with c a number or "
                    "an expression of parameters (two sources' values: singular whatever "
                    "they are, equal ones included) rather than an equation")
            raise StructuralSingularityError(
                f"the model is singular: these {len(eqs)} equations are linearly dependent "
                f"and {kind}:\n{quoted(eqs)}\nTypical causes: two ideal voltage sources in "
                "parallel, two ideal current sources in series (a node fed by current "
                "sources only), two position sources on one flange, a circuit part with no "
                "Ground. Remove or replace one of the conflicting components (or add the "
                "missing reference).")
        literals = RelationLiterals(self.flat.hybrid.relations)  # (shown as comparisons)
        for e, (expr, used) in reduction.replaced.items():
            self.equations[e] = expr
            self.slopes[e] = None
            inc[e] = self.incidence([expr], ids)[0]
            text = ShownWithRelations(expr, literals).text
            self.descriptions[e] = (lambda text=text, used=used: f"hidden constraint "
                                    f"0 = {text()}, combined from "
                                    + "; ".join(f"'{texts[u]}'" for u in used[:6])
                                    + ("; ..." if len(used) > 6 else ""))

    # ---- incidence ------------------------------------------------------------------------
    def known_incidence(self, stacked) -> list[list[int]]:
        """Which unknowns each equation reads: the columns of its slopes where its class
        knows them (a derivative is structurally nonzero exactly where the Jacobian has an
        entry), casadi's sparsity propagation for the rest. Propagating over the whole
        system grows faster than its size (~1 s at 1000 links)."""
        inc = [None if slopes is None else sorted([*slopes[0], *slopes[1]])
               for slopes in self.slopes]
        rest = [e for e, row in enumerate(inc) if row is None]
        if rest:
            equations, unknowns = stacked
            for e, row in zip(rest, incidence_lists(equations[rest], unknowns)):
                inc[e] = row
        return inc

    def incidence(self, equations, var_ids):
        if not equations:
            return []
        syms = ca.vertcat(*[self.symbols[i] for i in var_ids])
        return incidence_lists(ca.vertcat(*equations), syms)

    # ---- main --------------------------------------------------------------------------------
    def run(self, state_priority=None, outputs=None) -> SortedSystem:
        self.build_variables()
        equation_vector = self.build_equations()
        ids = self.unknown_ids
        # stacked once for the incidence and the linear reduction (a vertcat converts every
        # scalar from Python again)
        stacked = (equation_vector, self.symbol_vector[ids] if ids else ca.SX(0, 1))
        local = {g: i for i, g in enumerate(ids)}
        self.slopes = self.template_slopes(local)
        self.check_not_constant()
        inc = self.known_incidence(stacked)
        self.expose_hidden_constraints(ids, inc, local, state_priority, stacked)
        n = len(ids)
        n_eq = len(self.equations)
        var_diff = [local.get(self.var_diff_all[g]) if self.var_diff_all[g] is not None else None
                    for g in ids]
        n_states = sum(d is not None for d in var_diff)
        if n_eq != n - n_states:
            raise StructuralSingularityError(
                f"internal: after alias elimination there are {n_eq} equations for "
                f"{n - n_states} unknowns")
        names = [self.names[g] for g in ids]
        symbols = [self.symbols[g] for g in ids]
        try:
            red = graph.pantelides(inc, n, var_diff)
        except graph.StructurallySingular as exc:
            raise self.singular_error(exc, names) from None
        # Materialize new derivative variables and differentiated equations.
        for v in red.new_vars:
            base = red.var_integral[v]
            names.append(f"der({names[base]})")
            symbols.append(ca.SX.sym(names[-1]))
        equations = list(self.equations)
        origins = list(self.origins)
        descriptions = self.descriptions.copy()
        self.input_index = {self.symbols[i].element_hash(): i for i in self.input_ids}
        if red.new_eqs:
            sym_index = {s.element_hash(): i for i, s in enumerate(symbols)}
            param_hashes = {p.symbol.element_hash() for p in self.flat.parameters}
            # values that change only at events have derivative 0 between them
            param_hashes |= {v.symbol.element_hash() for v in self.flat.variables
                             if v.discrete}
            input_hashes = {self.symbols[i].element_hash(): self.names[i]
                            for i in self.input_ids}
        for e in red.new_eqs:
            src = red.eq_integral[e]
            equations.append(self.time_derivative(equations[src], symbols, sym_index,
                                                  red.var_diff, param_hashes, input_hashes,
                                                  descriptions[src]))
            origins.append(origins[src])
            descriptions.append(lambda src=src: f"d/dt({descriptions[src]})")
        n_all = len(names)
        dummies = set()
        if red.new_eqs:  # (without differentiated equations there is nothing to choose)
            # Preference of a candidate dummy derivative d = der(w): how much w deserves to
            # be a state. User-declared state_select first, a fixed start value next;
            # variables the compiler created (derivatives) least.
            priority = []
            for v in range(n_all):
                w = red.var_integral[v]
                g = ids[w] if (w is not None and w < n) else None
                priority.append(self.state_preference(g, state_priority))
            try:
                dummies = graph.dummy_derivatives(red, priority,
                                                  self.generic_jacobian(equations, symbols))
            except graph.StructurallySingular as exc:
                raise self.singular_error(exc, names) from None
        states = [v for v in range(n_all)
                  if red.var_diff[v] is not None and red.var_diff[v] not in dummies]
        state_set = set(states)
        unknown_ok = [v not in state_set for v in range(n_all)]
        if red.new_eqs:
            eq_match, _ = graph.maximum_matching(red.incidence, n_all, unknown_ok)
        else:
            # Without index reduction the unknowns are the highest derivatives: index
            # reduction's matching is this one (the same call).
            eq_match = red.eq_match
        if any(m == graph.UNMATCHED for m in eq_match):
            bad = [e for e, m in enumerate(eq_match) if m == graph.UNMATCHED]
            raise StructuralSingularityError(
                "no consistent assignment of equations to unknowns after index reduction; "
                "unassigned equations: " + "; ".join(f"'{descriptions[e]}' ({origins[e]})"
                                                     for e in bad[:8]))
        blocks_eqs = graph.blt(red.incidence, eq_match, n_all)
        if outputs is not None:
            blocks_eqs = self.needed_blocks(blocks_eqs, eq_match, red, states, outputs, names)
        self.n_all = n_all
        self.symbols_all = symbols
        self.equations_all = equations
        # the stacked vectors still hold these lists unless index reduction or the linear
        # reduction changed them
        unchanged = not (red.new_eqs or red.new_vars or self.linear_reduction.replaced)
        self.stacked_all = stacked if unchanged and self.equations else None
        self.inc_all = red.incidence
        blocks, sequence, algebraic, residuals = self.solve_blocks(
            blocks_eqs, eq_match, descriptions, origins, names)
        residual_descriptions = [f"'{descriptions[e]}' (from {origins[e] or 'the model'})"
                                 for b in blocks for e in b.residuals]
        alias_named = {}
        for a, (rep, sign, off) in self.alias.items():
            alias_named[self.names[a]] = (self.names[rep] if rep is not None else None, sign, off)
        start = [0.0] * n_all
        start_expressions = {}
        given = getattr(self.flat, "start_expressions", {})
        for v in range(min(n, n_all)):
            g = ids[v]
            if g < len(self.flat.variables):
                start[v] = self.flat.variables[g].start
                if g in given:
                    start_expressions[v] = given[g]
        starts_from_aliases = self.starts_from_aliases(local, start, start_expressions)
        starts_from_aliases.update(self.starts_from_pairs(
            states + algebraic, ids, names, symbols, equations, red.incidence, start,
            start_expressions, starts_from_aliases))
        return SortedSystem(
            names=names, symbols=symbols, equations=equations, equation_origins=origins,
            states=states, state_derivatives=[red.var_diff[v] for v in states],
            algebraic=algebraic, residuals=residuals,
            residual_descriptions=residual_descriptions, sequence=sequence, blocks=blocks,
            alias=alias_named, inputs=self.input_ids, n_differentiated_equations=len(red.new_eqs),
            dummy_derivatives=sorted(dummies),
            removed_alias_equations=len(self.aliases.removed_equations), start=start,
            start_expressions=start_expressions, starts_from_aliases=starts_from_aliases,
            flat_index={nm: i for i, nm in enumerate(names)}, pivot_guards=self.pivot_guards,
            model_name=self.flat.name, variables=self.flat.variables,
            variable_index=self.flat.index, parameters=self.flat.parameters,
            initial_equations=self.flat.initial_equations, time_events=self.flat.time_events,
            time_scales=self.flat.time_scales,
            asserts=self.flat.asserts, run_asserts=self.flat.run_asserts,
            equation_descriptions=descriptions,
            hybrid=self.flat.hybrid,
            state_set=self.dynamic_state_set(dummies, equations, symbols, names, red,
                                             eq_match),
            symbol_vector=ca.vertcat(self.symbol_vector[ids] if ids else ca.SX(0, 1),
                                     *symbols[len(ids):]),
            sequence_vector=self.sequence_vector,
            value_sources=self.value_sources(ids, n_all))

    def value_sources(self, ids, n_all) -> ValueSources:
        """:class:`ValueSources` from the alias table by position (the outputs used to
        look every variable up by name, ~2 µs each)."""
        n_flat = len(self.flat.variables)
        local = np.full(len(self.names), -1, dtype=np.int64)
        local[ids] = np.arange(len(ids))
        rows = local[:n_flat].copy()  # an unknown itself; -1: an external input
        signs, offsets = np.ones(n_flat), np.zeros(n_flat)
        for a, (rep, sign, off) in self.alias.items():
            if a >= n_flat:
                continue
            if rep is None:
                rows[a], offsets[a] = n_all, off
            elif local[rep] < 0:
                rows[a] = -1  # an alias of an input, or of another alias (no unknown)
            else:
                rows[a], signs[a], offsets[a] = local[rep], sign, off
        reported = np.array([v.discrete in ("", "variable") for v in self.flat.variables],
                            dtype=bool)
        extra = [i for i in range(n_all) if i >= len(ids) or ids[i] >= n_flat]
        return ValueSources(self.names[:n_flat], rows, signs, offsets, reported, extra)

    def dynamic_state_set(self, dummies, equations, symbols, names, red, eq_match=None):
        """The :class:`DynamicStateSet` of the position-level constraints (the equations
        index reduction differentiated most often), if the choice of their dependent
        variables depends on the solution: more candidates than constraints, a Jacobian that
        depends on variables, every candidate a variable of the model and few enough to try
        at run time."""
        if not red.new_eqs:
            return None  # nothing was differentiated: no position-level constraints
        def order(e):
            k = 0
            while red.eq_diff[e] is not None:
                e, k = red.eq_diff[e], k + 1
            return k

        def depth(v):
            k = 0
            while red.var_diff[v] is not None:
                v, k = red.var_diff[v], k + 1
            return k
        originals = [e for e in range(len(red.eq_integral)) if red.eq_integral[e] is None]
        top = max((order(e) for e in originals), default=0)
        if top < 2:
            return None
        G = [e for e in originals if order(e) == top]
        cands = sorted({v for e in G for v in red.incidence[e] if depth(v) >= top})
        if len(cands) <= len(G) or any(names[v] not in self.flat.index for v in cands):
            return None  # nothing to choose, or a candidate the compiler created
        dependent = {v for v in cands if red.var_diff[v] in dummies}
        coordinates = cands
        if len(cands) > MAX_DYNAMIC_CANDIDATES or self.loop_components:
            # a mechanism: the joint coordinates on loops are what can be chosen; the
            # frames' positions and orientations are dependent in every choice
            coordinates = [v for v in cands if self._loop_coordinate(names[v])]
            if not set(cands) - set(coordinates) <= dependent:
                return None
        free = len(coordinates) - len([v for v in coordinates if v in dependent])
        if not 0 < free < len(coordinates) <= MAX_DYNAMIC_CANDIDATES:
            return None
        J = ca.jacobian(ca.vertcat(*[equations[e] for e in G]),
                        ca.vertcat(*[symbols[v] for v in cands]))
        if self.parameter_only(J):
            return None
        chains = []
        for v in cands:
            chain = [v]
            while red.var_diff[chain[-1]] is not None:
                chain.append(red.var_diff[chain[-1]])
            chains.append([names[w] for w in chain if names[w] in self.flat.index])
        index = {v: i for i, v in enumerate(cands)}
        velocity_dependent = None
        if eq_match is not None:
            # the candidates whose velocities the once differentiated constraints give: the
            # position-level ones, unless states were chosen apart (a reinit of vy makes vy
            # a state beside x: vx then follows from x*vx + y*vy = 0)
            by_velocity = {red.var_diff[v]: i for i, v in enumerate(cands)}
            matched = [eq_match[red.eq_diff[e]] for e in G if red.eq_diff[e] is not None]
            if len(matched) == len(G) and all(m in by_velocity for m in matched):
                velocity_dependent = sorted(by_velocity[m] for m in matched)
        return DynamicStateSet(J, [names[v] for v in cands], chains,
                               sorted(index[v] for v in dependent),
                               [index[v] for v in coordinates], velocity_dependent)

    def _loop_coordinate(self, name) -> bool:
        """Whether the flat variable ``name`` is a preferred state of a component on a loop."""
        var = self.flat.variables[self.flat.index[name]]
        return (var.origin in self.loop_components
                and var.state_select in ("prefer", "always"))

    def needed_blocks(self, blocks_eqs, eq_match, red, states, outputs, names):
        """Keep only the blocks that the state derivatives and the requested outputs depend
        on (reverse reachability over the BLT; linear in the number of incidences)."""
        local = {nm: i for i, nm in enumerate(names)}
        block_of = {}
        for b, eqs in enumerate(blocks_eqs):
            for e in eqs:
                block_of[eq_match[e]] = b
        wanted = []
        alias_by_name = {self.names[a]: (self.names[r] if r is not None else None)
                         for a, (r, _, _) in self.alias.items()}
        for name in outputs:
            while name in alias_by_name:
                name = alias_by_name[name]
                if name is None:
                    break
            if name is None or name not in local:
                if name is not None and name not in self.flat.index:
                    raise DeclarationError(f"compile(outputs=...): the model has no variable "
                                           f"'{name}'")
                continue
            wanted.append(local[name])
        wanted += [red.var_diff[v] for v in states]
        needed = set()
        stack = [block_of[v] for v in wanted if v in block_of]
        while stack:
            b = stack.pop()
            if b in needed:
                continue
            needed.add(b)
            for e in blocks_eqs[b]:
                for v in red.incidence[e]:
                    src = block_of.get(v)
                    if src is not None and src not in needed:
                        stack.append(src)
        return [eqs for b, eqs in enumerate(blocks_eqs) if b in needed]

    def time_derivative(self, expr, symbols, sym_index, var_diff, param_hashes, input_hashes,
                        description):
        def derivative_of(s):
            h = s.element_hash()
            if h in param_hashes:
                return ca.SX(0)
            if h in input_hashes:
                declared = self.var_diff_all[self.input_index[h]]
                if declared is not None:
                    return self.symbols[declared]
                raise StructuralSingularityError(
                    f"index reduction must differentiate '{description}', which contains the "
                    f"external input '{input_hashes[h]}'; inputs cannot be differentiated — "
                    f"drive the model through a smooth source or a filter instead")
            return symbols[var_diff[sym_index[h]]]

        return time_derivative(expr, derivative_of)

    def singular_error(self, exc, names):
        eqs = [e for e in exc.equations if e < len(self.descriptions)]
        lines = [f"  '{self.descriptions[e]}' (from {self.origins[e] or 'the model'})"
                 for e in eqs[:10]]
        vars_ = [names[v] for v in exc.variables if v < len(names)][:10]
        loops = sorted({self.descriptions[e].split(":")[0] for e in eqs
                        if self.equation_kinds[e] == "loop closure"})
        if loops:
            return StructuralSingularityError(
                f"the model is structurally singular: the closure of {'; '.join(loops[:3])} "
                f"over-determines the variables {', '.join(vars_)}, so the loop cannot "
                f"close. Either the loop's coordinates are already known (prescribed inputs "
                f"of the inverse analysis, or fixed by other equations): prescribe only the "
                f"loop's independent coordinates and leave the others free (a multibody "
                f"joint with prescribed=False). Or the loop's joints have fewer freedoms "
                f"than its closure constrains: revolute joints whose axes are not all "
                f"parallel make a spatial loop, closed by 6 equations; make the axes "
                f"parallel (a planar loop) or give the loop more freedom (a Spherical or "
                f"Universal joint in place of a revolute). Equations involved:\n"
                + "\n".join(lines))
        fixed_twice = self.fixed_twice(eqs)
        if fixed_twice:
            return StructuralSingularityError(
                "the model is structurally singular: after connection and alias equations are "
                "applied, these equations have no unknowns left, because what they determine "
                "is determined already:\n" + "\n".join(lines) + "\n" + fixed_twice +
                "\nRemove one of the components that fix it, or put a compliance between "
                "them (a support flange that is fixed already needs no Fixed; a flow source "
                "into a closed port needs a volume there).")
        unknown = {self.symbols[g].element_hash() for g in self.unknown_ids}

        def reads_an_unknown(e):
            """Whether the equation as written reads a variable (an input is known)."""
            for s in ca.symvar(self.flat.equations[self.aliases.kept_equations[e]].residual):
                g = self.flat.position_of.get(s.element_hash())
                if g is not None and self.flat.variables[g].kind != "input":
                    return True
            return False
        known_only = [e for e in eqs
                      if not any(s.element_hash() in unknown
                                 for s in ca.symvar(self.equations[e]))
                      and not reads_an_unknown(e)]
        if known_only and self.flat.position_of:
            return StructuralSingularityError(
                "the model is structurally singular: these equations contain no unknown "
                "(parameters, inputs, constants and time only), so they determine nothing:\n"
                + "\n".join(f"  '{self.descriptions[e]}' (from {self.origins[e] or 'the model'})"
                            for e in known_only[:10])
                + "\nTo check a condition on parameters, yield mb.Assert(condition, message) "
                "instead; to give a parameter a value, set it (Parameter(2.0), or a modifier)."
                + self.undetermined_text(names))
        return StructuralSingularityError(
            "the model is structurally singular: these equations over-determine the variables "
            f"{', '.join(vars_)}:\n" + "\n".join(lines) + self.undetermined_text(names) +
            "\nTypical causes: two ideal sources of one quantity on one node or rigid part "
            "(voltage sources in parallel, current sources in series, two positions or speeds "
            "imposed on one flange, two pressure sources on one port), or an equation written "
            "twice. Remove or replace one of the conflicting components or equations.")

    def undetermined_text(self, names) -> str:
        """``\nThey leave undetermined: ...`` naming the unknowns (with their derivatives,
        a family) that no equation can be assigned to, or ''. Only for messages."""
        ids = self.unknown_ids
        n = len(ids)
        if not n or not self.equations:
            return ""
        local = {g: i for i, g in enumerate(ids)}
        integral = [None] * n
        for g in ids:
            d = self.var_diff_all[g]
            if d is not None and d in local:
                integral[local[d]] = local[g]
        family = graph.families(integral)
        incidence = self.incidence(self.equations, ids)
        fam_inc = [list(dict.fromkeys(family[v] for v in row)) for row in incidence]
        _, var_match = graph.maximum_matching(fam_inc, n)
        free = [names[v] for v in range(n)
                if family[v] == v and var_match[v] == graph.UNMATCHED and v < len(names)]
        if not free:
            return ""
        return (f"\nThey leave undetermined: {', '.join(free[:10])}"
                f"{' ...' if len(free) > 10 else ''} (no equation is left for "
                f"{'it' if len(free) == 1 else 'them'})")

    def fixed_twice(self, eqs) -> str:
        """For over-determining equations with no unknown left: each variable they had, what
        alias elimination made it (a constant) and the connectors connected to its connector
        (one of whose components fixes it too); "" if every one still has an unknown."""
        unknown = {self.symbols[g].element_hash() for g in self.unknown_ids}
        said = []
        for e in eqs:
            if any(s.element_hash() in unknown for s in ca.symvar(self.equations[e])):
                return ""
            flat_eq = self.flat.equations[self.aliases.kept_equations[e]]
            for s in ca.symvar(flat_eq.residual):
                g = self.flat.position_of.get(s.element_hash()) if self.flat.position_of else None
                if g is None or g not in self.alias:
                    continue
                rep, _, offset = self.alias[g]
                name = self.names[g]
                value = (f"the constant {offset:g}{self._constant_source(g)}" if rep is None
                         else f"{self.names[rep]}, itself given")
                said.append(f"  {name} is {value}{self._connected_text(name)}")
        return "\n".join(dict.fromkeys(said))

    def _constant_source(self, g) -> str:
        """``, by 'eq' (from component)``: the equation alias elimination took the constant
        value of the flat variable ``g`` from (a Cap's zero flow reached through a flow
        source's connection), walking the alias equations it removed; "" if none is found."""
        position_of = self.flat.position_of or {}
        neighbours, constant = {}, {}
        for e in self.aliases.removed_equations:
            eq = self.flat.equations[e]
            variables = [position_of.get(s.element_hash()) for s in ca.symvar(eq.residual)]
            variables = [v for v in variables if v is not None]
            if len(variables) == 1:
                constant.setdefault(variables[0], eq)
            elif len(variables) == 2:
                a, b = variables
                neighbours.setdefault(a, []).append(b)
                neighbours.setdefault(b, []).append(a)
        seen, queue = {g}, [g]
        while queue:
            v = queue.pop(0)
            if v in constant:
                eq = constant[v]
                return f", by '{eq.description}' (from {eq.origin or 'the model'})"
            for w in neighbours.get(v, ()):
                if w not in seen:
                    seen.add(w)
                    queue.append(w)
        return ""

    def _connected_text(self, name) -> str:
        """`` (connected to a.b, c.d)``: the other connectors of the connection set of the
        connector variable ``name`` (its variable named as theirs), or ""."""
        import networkx as nx
        graph = self.flat.connection_graph
        owner, _, member = name.rpartition(".")
        for node in graph.nodes if graph is not None else ():
            connector = node[0]
            if getattr(connector, "path", None) != owner:
                continue
            others = sorted({f"{other[0].path}.{member}" for other in
                             nx.node_connected_component(graph, node) if other[0] is not connector})
            return f" (its connection set: {', '.join(others[:6])})" if others else ""
        return ""

    # ---- block solution ---------------------------------------------------------------------
    def generic_jacobian(self, equations, symbols):
        """``(eqs, vars) -> d equations/d variables`` (scipy sparse) at a generic point: the
        parameters at their values, every other symbol (variables, inputs, time) at a fixed
        pseudo-random value in [0.5, 1.5], so that a rank found there is the rank almost
        everywhere."""
        params = self.parameter_values()
        rng = np.random.default_rng(20261124)
        point: dict = {}

        def jacobian(rows, cols):
            J = ca.jacobian(ca.vertcat(*[equations[e] for e in rows]),
                            ca.vertcat(*[symbols[v] for v in cols]))
            free = ca.symvar(J)
            for sym in free:
                h = sym.element_hash()
                if h not in point:
                    point[h] = params[h] if h in params else rng.uniform(0.5, 1.5)
            value = (ca.evalf(J) if not free else ca.Function("generic_jacobian", free, [J])(
                *[point[s.element_hash()] for s in free]))
            return ca.DM(value).sparse()
        return jacobian

    def parameter_values(self) -> dict:
        """Numeric value of every parameter (bindings resolved), by symbol hash."""
        free = [p for p in self.flat.parameters if p.binding is None]
        bound = [p for p in self.flat.parameters if p.binding is not None]
        values = {p.symbol.element_hash(): float(p.value) for p in free}
        if bound:
            numbers, _ = at_parameter_values([p.binding for p in bound], self.flat.parameters)
            values.update(zip((p.symbol.element_hash() for p in bound), map(float, numbers)))
        return values

    def parameter_only(self, coef) -> bool:
        return all(s.element_hash() in self.param_values for s in ca.symvar(coef))

    def value_of(self, coef) -> float:
        """Value of a parameter-only expression at the declared parameter values."""
        if coef.is_constant():
            return float(coef)
        syms = ca.symvar(coef)
        if not syms:
            return float(ca.evalf(coef))
        vals = [self.param_values[s.element_hash()] for s in syms]
        return float(ca.evalf(ca.substitute(coef, ca.vertcat(*syms), ca.DM(vals))))

    def safe_pivot(self, coef, description) -> bool:
        """Whether ``coef`` is a safe divisor: constant or parameter-only (it cannot cross
        zero as the state moves) and nonzero at the declared parameter values. Divisors that
        depend on parameters are kept as guards for run-time parameter changes, with
        ``description()``, the text of what was solved by dividing by them."""
        if coef.is_zero() or not self.parameter_only(coef) or self.value_of(coef) == 0.0:
            return False
        if not coef.is_constant():
            self.pivot_guards.append((coef, description()))
        return True

    def well_scaled(self, e, coef, row, scales) -> bool:
        """Whether solving equation ``e`` by dividing by ``coef`` keeps the torn system
        well scaled: at the declared parameter values the coefficient must not be far
        smaller than the equation's largest coefficient on the block's variables. Solving
        ``v = R*i`` for ``v`` with R = 1e6 and chaining such assignments multiplies the
        scales along the chain, and a regular block can then look singular to any solver
        (a resistor mesh spanning 1e-3..1e6 ohm: relative pivot 1e-17)."""
        if not self.parameter_only(coef):
            return True  # state-dependent coefficients are refused by safe_pivot anyway
        if e not in scales:  # the equation's largest coefficient (``row``: on block variables)
            scales[e] = max((abs(self.value_of(c)) for c in row.values()
                             if not c.is_zero() and self.parameter_only(c)), default=0.0)
        return abs(self.value_of(coef)) >= TEARING_PIVOT_RATIO * scales[e]

    def check_regular(self, jac, equations, descriptions, origins, unknowns):
        """A linear block whose matrix depends on parameters only is checked at the declared
        values: singular there, it has no unique solution at any state."""
        syms = ca.symvar(jac)
        matrix = ca.evalf(ca.substitute(jac, ca.vertcat(*syms), ca.DM(
            [self.param_values[s.element_hash()] for s in syms])) if syms else jac)
        pivot = smallest_relative_pivot(np.array(ca.DM(matrix)))
        if pivot >= SINGULAR_PIVOT:
            return
        shown = "\n".join(f"  '{descriptions[e]}' (from {origins[e] or 'the model'})"
                          for e in equations[:10])
        raise StructuralSingularityError(
            f"the model is singular with the given parameter values: the linear block of "
            f"{len(equations)} equations solved for {', '.join(unknowns[:8])} has a singular "
            f"matrix (Gaussian elimination with scaled partial pivoting meets a relative "
            f"pivot of {pivot:.3g}):\n{shown}\nChange the parameters that make these equations "
            f"dependent.")

    def solve_unit_blocks(self, pairs) -> dict:
        """Equations solved for their variable in a few batched casadi calls, for the
        common case of a constant nonzero coefficient: ``e -> expression`` of the variable.
        The equations are coloured greedily on the integer incidence into groups in which
        no equation contains another member's variable; then one directional derivative per
        group (seed 1 on the members' variables) gives every member's coefficient, and one
        substitution of zero for the members' variables gives every member's remainder.
        Other equations (coefficients that depend on parameters or variables) are left to
        the one-by-one path, which checks and guards them."""
        symbols, equations = self.symbols_all, self.equations_all
        # where each solution is in the groups' vectors, stacked (see sequence_vector)
        self.solved_vectors, self.solved_at, self.n_solved = [], {}, 0
        # Each equation joins the first group that neither reads its variable nor solves
        # one it reads: per variable, the group solving it and the groups reading it (bits).
        groups = []  # members per group
        solved_in, read_in = [-1] * self.n_all, [0] * self.n_all
        for e, v in pairs:
            row = self.inc_all[e]
            taken = read_in[v]
            for r in row:
                if r != v and solved_in[r] >= 0:
                    taken |= 1 << solved_in[r]
            g = (~taken & (taken + 1)).bit_length() - 1  # the lowest group not taken
            if g == len(groups):
                groups.append([])
            groups[g].append((e, v))
            solved_in[v] = g
            bit = 1 << g
            for r in row:
                if r != v:
                    read_in[r] |= bit
        solved = {}
        if not groups:
            return solved
        # Selections by index lists from one vector each: a vertcat of the group's entries
        # would convert every scalar from Python again (~5 µs each).
        all_equations, all_symbols = (self.stacked_all if self.stacked_all is not None else
                                      (ca.vertcat(*equations), ca.vertcat(*symbols)))
        for members in groups:
            # the coefficients the class's template knows, the others by one derivative
            known = {}
            for e, v in members:
                slopes = self.slopes[e] if e < len(self.slopes) else None
                if slopes is not None and (v in slopes[0] or v in slopes[1]):
                    known[e] = slopes[0].get(v)  # None: not a constant
            asked = [(e, v) for e, v in members if e not in known]
            if asked:
                eqs = all_equations[[e for e, _ in asked]]
                syms = all_symbols[[v for _, v in asked]]
                coefs = ca.jtimes(eqs, syms, ca.DM.ones(len(asked))).elements()
                known.update((e, float(c)) for (e, _), c in zip(asked, coefs)
                             if c.is_constant())
            simple = [(e, v, known[e]) for e, v in members
                      if known.get(e) is not None and known[e] != 0.0]
            if not simple:
                continue
            rests = ca.substitute(all_equations[[e for e, _, _ in simple]],
                                  all_symbols[[v for _, v, _ in simple]],
                                  ca.SX.zeros(len(simple)))
            # one division for the group (casadi folds the divisions by 1 and -1 away)
            values = -rests / ca.DM([c for _, _, c in simple])
            members_solved = [e for e, _, _ in simple]
            solved.update(zip(members_solved, values.elements()))
            self.solved_at.update(zip(members_solved, range(self.n_solved,
                                                            self.n_solved + len(simple))))
            self.solved_vectors.append(values)
            self.n_solved += len(simple)
        return solved

    @property
    def start_known(self) -> set:
        """Unknowns (local indices) whose start value was declared or given: between two
        otherwise equal tearing variables the one Newton can start from a known value."""
        if not hasattr(self, "_start_known"):
            known = set()
            for i, g in enumerate(self.unknown_ids):
                if g < len(self.flat.variables):
                    var = self.flat.variables[g]
                    if var.start_given or var.fixed:
                        known.add(i)
            self._start_known = known
        return self._start_known

    @property
    def tear_preferred(self) -> set:
        """Unknowns to tear first (the flows at kinematic loop cuts: the constraint forces,
        few, and everything else in the loop's block follows from them), through aliases."""
        if not hasattr(self, "_tear_preferred"):
            index = {name: i for i, name in enumerate(self.names)}
            preferred = set()
            for name in self.flat.tear_hints:
                i = index.get(name)
                while i is not None and i in self.alias:
                    i = self.alias[i][0]
                if i is not None:
                    preferred.add(i)
            local = {g: i for i, g in enumerate(self.unknown_ids)}
            self._tear_preferred = {local[g] for g in preferred if g in local}
        return self._tear_preferred

    def solve_blocks(self, blocks_eqs, eq_match, descriptions, origins, names):
        symbols, equations = self.symbols_all, self.equations_all
        self.param_values = self.parameter_values()
        self.pivot_guards = []
        sequence, algebraic, residuals, blocks = [], [], [], []
        # sequence position -> its row in the unit blocks' vectors (the others: solved here)
        solved_rows = {}
        solved = self.solve_unit_blocks([(b[0], eq_match[b[0]]) for b in blocks_eqs
                                         if len(b) == 1])
        for beqs in blocks_eqs:
            if len(beqs) == 1 and beqs[0] in solved:
                e = beqs[0]
                v = eq_match[e]
                solved_rows[len(sequence)] = self.solved_at[e]
                sequence.append((v, solved[e]))
                blocks.append(Block("explicit", [e], [v], [(e, v)]))
                continue
            if len(beqs) == 1:
                e = beqs[0]
                v = eq_match[e]
                expr, sym = equations[e], symbols[v]
                coef = ca.jacobian(expr, sym)

                def what(e=e, v=v):
                    return (f"'{descriptions[e]}' ({origins[e] or 'the model'}) solved for "
                            f"'{names[v]}'")
                on_parameters = self.parameter_only(coef)
                if coef.is_zero() or (on_parameters and self.value_of(coef) == 0.0):
                    values = ", ".join(f"{s.name()} = {self.param_values[s.element_hash()]:g}"
                                       for s in ca.symvar(coef)[:4])
                    detail = ("does not depend on it" if coef.is_zero() else
                              f"does not depend on it with the given parameter values (its "
                              f"coefficient {describe(coef)} is zero at {values}). The "
                              f"equations are sorted on their structure, not on parameter "
                              f"values, and a value that removes a term leaves the equation "
                              f"unable to determine what it was sorted for: give a nonzero "
                              f"value, or model what that value means without the term (e.g. "
                              f"a zero resistance is a short: connect the two pins instead of "
                              f"the element)")
                    raise StructuralSingularityError(f"equation {what()}: the equation {detail}")
                if not ca.depends_on(coef, sym):
                    if on_parameters and not coef.is_constant():
                        self.pivot_guards.append((coef, what()))
                    rest = ca.substitute(expr, sym, ca.SX(0))
                    sequence.append((v, -rest / coef))
                    blocks.append(Block("explicit", [e], [v], [(e, v)]))
                else:
                    algebraic.append(v)
                    residuals.append(expr)
                    blocks.append(Block("nonlinear", [e], [v], [], [v], [e]))
                continue
            bvars = [eq_match[e] for e in beqs]

            coefficients = {}

            rows = {}  # equation -> {block variable: coefficient}, one Jacobian row each

            def row_of(e, _vars=set(bvars), _eqs=equations, _syms=symbols):
                if e not in rows:
                    own = [v for v in self.inc_all[e] if v in _vars]
                    row = ca.jacobian(_eqs[e], ca.vertcat(*[_syms[v] for v in own]))
                    rows[e] = dict(zip(own, ca.horzsplit(row)))
                return rows[e]

            scales = {}

            def solvable(e, v, _coefs=coefficients):
                _coefs[e, v] = coef = row_of(e)[v]
                where = origins[e] or "the model"
                if not self.well_scaled(e, coef, row_of(e), scales):
                    return False
                return self.safe_pivot(coef, lambda: f"'{descriptions[e]}' ({where}) solved "
                                                     f"for '{names[v]}'")

            tear = graph.tear(beqs, bvars, self.inc_all, solvable, self.tear_preferred,
                              self.start_known)
            defs = []
            for e, v in tear.assignments:
                coef = coefficients[e, v]
                rest = ca.substitute(equations[e], symbols[v], ca.SX(0))
                defs.append((v, -rest / coef))
            tsyms = ca.vertcat(*[symbols[v] for v in tear.tear_vars])
            res = ca.vertcat(*[equations[e] for e in tear.residuals])
            local_res = res
            if defs:
                _, (local_res,) = ca.substitute_inplace([symbols[v] for v, _ in defs],
                                                        [d for _, d in defs], [res], False)
            jac = ca.jacobian(local_res, tsyms)
            linear = not ca.depends_on(jac, tsyms)
            if linear and len(beqs) <= MAX_CHECKED_BLOCK and self.parameter_only(jac):
                # Regularity is a property of the block, checked on its own equations: the
                # torn matrix can be far worse scaled (tearing multiplies coefficients along
                # its assignment chains).
                whole = ca.jacobian(ca.vertcat(*[equations[e] for e in beqs]),
                                    ca.vertcat(*[symbols[v] for v in bvars]))
                if self.parameter_only(whole):
                    self.check_regular(whole, beqs, descriptions, origins,
                                       [names[v] for v in bvars])
            if linear and len(tear.tear_vars) <= MAX_SYMBOLIC_LINEAR:
                b = ca.substitute(local_res, tsyms, ca.DM.zeros(tsyms.shape))
                sol = -b / jac if jac.numel() == 1 else pivoted_solve(jac, -b)
                for k, v in enumerate(tear.tear_vars):
                    sequence.append((v, sol[k]))
                sequence.extend(defs)
                blocks.append(Block("linear", beqs, bvars, tear.assignments, tear.tear_vars,
                                    tear.residuals))
            else:
                algebraic.extend(tear.tear_vars)
                residuals.extend(_sx_list(res))
                sequence.extend(defs)
                blocks.append(Block("nonlinear", beqs, bvars, tear.assignments,
                                    tear.tear_vars, tear.residuals, linear=linear))
        self.sequence_vector = self.stack_sequence(sequence, solved_rows)
        return blocks, sequence, algebraic, residuals

    def stack_sequence(self, sequence, solved_rows) -> ca.SX:
        """The sequence's expressions as one vector: the unit blocks' solutions selected
        from their groups' vectors (``solved_rows``: sequence position -> row there), the
        others (few) stacked from Python after them."""
        rows, others = [], []
        for k, (_, expr) in enumerate(sequence):
            row = solved_rows.get(k)
            if row is None:
                row = self.n_solved + len(others)
                others.append(expr)
            rows.append(row)
        if not rows:
            return ca.SX(0, 1)
        return ca.vertcat(*self.solved_vectors, stacked(others))[rows]


def analyze(flat: FlatModel, state_priority: dict[str, int] | None = None,
            outputs: list[str] | None = None) -> SortedSystem:
    """Alias elimination, index reduction, state selection, BLT and tearing.

    Example::

        system = analyze(flatten(model))
        print([system.names[v] for v in system.states])
    """
    aliases = eliminate_aliases(flat)
    return _Analysis(flat, aliases).run(state_priority, outputs)
