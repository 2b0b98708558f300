"""Exact elimination of the linear integer-coefficient equations (before index reduction).

Structural analysis sees which variables an equation contains, not what cancels when
equations are combined. Two capacitors in parallel give ``v1 = va - vb`` and
``v2 = va - vb``: structurally both capacitor voltages look like independent states, and the
linear block that should determine ``va`` is singular. Subtracting the equations exposes the
hidden constraint ``v1 - v2 = 0`` between variables that appear differentiated, which index
reduction must differentiate.

This pass collects the equations that are affine in the unknowns with rational coefficients
(connection sets, ``v = p.v - n.v``, flow balances), and eliminates, in exact integer
arithmetic, every variable that is not differentiated (sparse, Markowitz order: the column
with the fewest entries first, so chains cost nothing and fill stays local). What is left are
rows over differentiated variables only:

- a row that no elimination touched is an equation the model already had: nothing changes
  (unless terms cancel in it, as ``(i1 - i0) - i1`` after alias substitution: it is then
  rewritten without them, so that structural analysis does not count the cancelled ones);
- a changed row is a hidden constraint: it replaces its own source equation (together with the
  pivot equations, which stay as they were, the system is equivalent — the transformation is
  triangular with nonzero diagonal);
- a row that vanishes is a linear dependency: the equations involved are redundant or
  contradictory, and the model is singular whatever the parameter values, so it stops with a
  :class:`~mbmodel.errors.StructuralSingularityError` listing them.

The result is plain data (:class:`LinearReduction`); nothing here knows about physics.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from fractions import Fraction
from math import gcd, lcm

import casadi as ca
import numpy as np

_CONST = "1"


@dataclass
class LinearReduction:
    """``replaced[e] = (expression, sources)``: equation ``e`` is replaced by the hidden
    constraint ``expression`` (a residual), an integer combination of equations ``sources``
    (``e`` among them). ``dependent`` lists groups of equations that are linearly dependent
    (each group: the equations combined, and whether the combination reduces to ``0 = 0``
    (redundant) or to ``0 = c`` (contradictory)). ``n_linear`` counts the equations taken
    into the elimination."""

    replaced: dict[int, tuple[ca.SX, list[int]]] = field(default_factory=dict)
    dependent: list[tuple[list[int], bool]] = field(default_factory=list)
    n_linear: int = 0


def integer_linear_form(expr: ca.SX, column_of: dict, incidence=None,
                        pending: list | None = None) -> tuple[dict, dict] | None:
    """``expr`` as ``(coefficients, offset)`` when it is affine in the unknowns with rational
    coefficients: ``coefficients[column] = Fraction``, ``offset[key] = (term, Fraction)`` for
    the parts without unknowns (key :data:`_CONST` for the constant, term ``None``).
    None if it is not (a product of unknowns, a nonlinear function of one, a coefficient that
    is a parameter). ``incidence``, the columns ``expr`` contains if known, saves a graph
    search in the common case of a nonlinear equation. ``pending``: a list that receives
    the operands that must be free of unknowns, for the caller to check many equations' at
    once, instead of checking them here (the form holds only if they are).

    Example::

        x, y, t = ca.SX.sym("x"), ca.SX.sym("y"), ca.SX.sym("t")
        integer_linear_form(x - 2 * y + ca.sin(t), {x.element_hash(): 0, y.element_hash(): 1})
        # -> ({0: 1, 1: -2}, {..: (sin(t), 1)})
    """
    coefficients: dict[int, Fraction] = {}
    offset: dict = {}
    opaque = []  # operands that are neither sums nor rational multiples: must be unknown-free

    def add_offset(node, factor):
        if node.op() == ca.OP_CONST:
            key, term, value = _CONST, None, factor * Fraction(float(node))
        else:
            key, term, value = node.element_hash(), node, factor
        old = offset.get(key)
        offset[key] = (term, value + (old[1] if old else 0))

    stack = [(expr, 1)]
    while stack:
        node, factor = stack.pop()
        op = node.op()
        if op == ca.OP_PARAMETER:
            column = column_of.get(node.element_hash())
            if column is None:
                add_offset(node, factor)
            else:
                coefficients[column] = coefficients.get(column, 0) + factor
        elif op == ca.OP_CONST:
            add_offset(node, factor)
        elif op == ca.OP_NEG:
            stack.append((node.dep(0), -factor))
        elif op == ca.OP_ADD:
            stack.append((node.dep(0), factor))
            stack.append((node.dep(1), factor))
        elif op == ca.OP_SUB:
            stack.append((node.dep(0), factor))
            stack.append((node.dep(1), -factor))
        elif op == ca.OP_TWICE:
            stack.append((node.dep(0), 2 * factor))
        else:
            value = None
            if op == ca.OP_MUL or op == ca.OP_DIV:
                a, b = node.dep(0), node.dep(1)
                value = _rational(b) if b.op() == ca.OP_CONST else None
                if value:
                    scaled = Fraction(factor, value) if op == ca.OP_DIV else factor * value
                    stack.append((a, scaled))
                    continue
                value = _rational(a) if a.op() == ca.OP_CONST and op == ca.OP_MUL else None
                if value is not None:
                    stack.append((b, factor * value))
                    continue
            for k in range(node.n_dep()):
                operand = node.dep(k)  # an unknown as direct operand (m*a, sin(q)): reject now
                if operand.op() == ca.OP_PARAMETER and operand.element_hash() in column_of:
                    return None
            opaque.append((node, factor))
    if opaque:
        if incidence is not None and len(incidence) != len(coefficients):
            return None  # an unknown appears only inside an opaque operand
        if pending is not None:  # the caller checks the operands of many equations at once
            pending.extend(node for node, _ in opaque)
        elif any(s.element_hash() in column_of
                 for s in ca.symvar(ca.vertcat(*[node for node, _ in opaque]))):
            return None
        for node, factor in opaque:
            add_offset(node, factor)
    return {c: f for c, f in coefficients.items() if f != 0}, offset


def _rational_candidates(equations: ca.SX, unknowns: ca.SX,
                         known: list | None = None) -> list[int]:
    """The equations that may have an integer linear form: those whose derivative along one
    generic direction of the unknowns is a constant. One forward sweep over the whole
    system in casadi instead of the expression walk of :func:`integer_linear_form` (~2 µs
    per node from Python) for every equation; an equation with a coefficient that is not a
    constant (a product of unknowns, a parameter, a function of time) keeps a symbol in its
    directional derivative, and casadi folds the constant ones to a number. ``known``: per
    equation, whether its derivatives are all constants where that is known already (from
    its class's template), else None."""
    if not equations.numel() or not unknowns.numel():
        return list(range(equations.numel()))
    if known is None:
        known = [None] * equations.numel()
    asked = [e for e, answer in enumerate(known) if answer is None]
    constant = [e for e, answer in enumerate(known) if answer]
    if asked:
        # Irrational-looking weights: distinct coefficients cannot cancel to a constant by
        # chance.
        direction = ca.DM(1.0 + np.modf(np.arange(1, unknowns.numel() + 1)
                                        * 0.6180339887498949)[0])
        slopes = ca.jtimes(equations[asked], unknowns, direction)
        # casadi folds every operation on constants, so a slope without symbols is a
        # constant node (cheaper to ask per entry than a dependency analysis of the graph)
        constant.extend(e for e, slope in zip(asked, slopes.elements()) if slope.is_constant())
    return sorted(constant)


def _rational(node) -> Fraction | None:
    """The constant ``node`` as an exact fraction with a small denominator, or None (a
    coefficient like 0.1 is not exact in binary and is left to the numeric solver)."""
    number = float(node)
    if not math.isfinite(number):
        return None
    if number.is_integer():
        return int(number)
    value = Fraction(number)
    return value if value.denominator <= 1024 else None


def reduce_linear(equations: list[ca.SX], symbols: list[ca.SX], differentiated: list[bool],
                  incidence: list[list[int]] | None = None,
                  preference: list | None = None,
                  stacked: tuple[ca.SX, ca.SX] | None = None,
                  known: list | None = None,
                  coefficients: list | None = None) -> LinearReduction:
    """Find hidden constraints and linear dependencies among ``equations`` (residuals over
    the unknowns ``symbols``; ``differentiated[j]`` whether unknown ``j`` appears under
    ``der``; ``incidence``, the columns of each equation, if known; ``preference``, how
    much each differentiated unknown deserves to stay a state, as sortable keys: the
    constraints between states are pivoted on the least deserving first; ``stacked``,
    ``equations`` and ``symbols`` as column vectors if the caller has them; ``known``, per
    equation, whether all its coefficients are constants if that is known, else None;
    ``coefficients``, per equation, its derivatives along the unknowns ``{column: number}``
    if they are all known constants, else None).

    Known coefficients are taken on trust: an equation read from them is walked
    (:func:`integer_linear_form`) only when the elimination combines it with another or
    reports it, and if the walk disagrees (a coefficient that is not exactly rational, an
    unknown inside a function whose derivative is constant) the elimination starts again
    from the walks alone. The result is the walks' result: a row left alone neither
    changes another nor is reported, and as derivatives the known coefficients miss no
    column an equation the walk accepts has, so they hide no combination. In a chain
    nothing is combined, and walking every equation was most of this pass.

    Example::

        red = reduce_linear(system_equations, unknown_symbols, is_state)
        for e, (expr, sources) in red.replaced.items():
            print(e, "becomes", expr)
    """
    if coefficients is not None:
        try:
            return _reduce(equations, symbols, differentiated, incidence, preference, stacked,
                           known, coefficients)
        except _Disagreement:
            pass  # a trusted row is not the equation's form: every equation walked
    return _reduce(equations, symbols, differentiated, incidence, preference, stacked, known,
                   None)


class _Disagreement(Exception):
    """A row taken from known coefficients is not what the walk of its equation finds."""


def _trusted_row(numbers: dict) -> dict | None:
    """Known coefficients as an integer row scaled like the walk's (by the least common
    denominator), or None where a number is not a small-denominator rational."""
    if all(v.is_integer() for v in numbers.values()):
        return {c: int(v) for c, v in numbers.items() if v != 0}
    fractions = {}
    for c, v in numbers.items():
        f = Fraction(v) if math.isfinite(v) else None
        if f is None or f.denominator > 1024:
            return None
        if f:
            fractions[c] = f
    return _integer_row(fractions)[0]


def _integer_row(coefficients: dict) -> tuple[dict, int]:
    """Rational coefficients as integers, scaled by their least common denominator, and
    that scale (which an equation's offsets take too)."""
    scale = lcm(*(Fraction(f).denominator for f in coefficients.values()))
    return {c: int(f * scale) for c, f in coefficients.items()}, scale


def _scaled_offsets(offset: dict, scale: int) -> dict:
    return {k: (t, v * scale) for k, (t, v) in offset.items() if v != 0}


def _reduce(equations, symbols, differentiated, incidence, preference, stacked, known,
            coefficients) -> LinearReduction:
    column_of = {s.element_hash(): j for j, s in enumerate(symbols)}
    rows: dict[int, dict[int, int]] = {}
    offsets: dict[int, dict] = {}
    forms, operands = {}, []  # operands: (equation, first, end) into pending
    pending: list = []
    if stacked is None:
        stacked = (ca.vertcat(*equations), ca.vertcat(*symbols))
    trusted = set()  # rows from known coefficients, not walked yet
    for e in _rational_candidates(*stacked, known):
        row = (_trusted_row(coefficients[e]) if coefficients is not None
               and coefficients[e] is not None else None)
        if row:
            rows[e] = row
            trusted.add(e)
            continue
        start = len(pending)
        form = integer_linear_form(equations[e], column_of, incidence[e] if incidence else None,
                                   pending)
        if form is not None and form[0]:
            forms[e] = form
            operands.append((e, start, len(pending)))
    if pending:  # the operands taken as unknown-free offsets: one sparsity pattern for all
        hits = ca.jacobian_sparsity(ca.vertcat(*pending), stacked[1]).get_triplet()[0]
        with_unknowns = np.zeros(len(pending), dtype=bool)
        with_unknowns[np.asarray(hits, dtype=np.int64)] = True
        for e, first, end in operands:
            if with_unknowns[first:end].any():
                del forms[e]
    for e, (coefficients, offset) in forms.items():
        rows[e], scale = _integer_row(coefficients)
        offsets[e] = _scaled_offsets(offset, scale)
    result = LinearReduction(n_linear=len(rows))
    if not rows:
        return result
    original = {e: dict(r) for e, r in rows.items()}
    offsets_at_start = {e: dict(o) for e, o in offsets.items()}
    sources = {e: {e} for e in rows}

    def walked(e):
        """Row ``e`` as its walk finds it (replacing the trusted one, which must agree)."""
        if e not in trusted:
            return
        trusted.discard(e)
        form = integer_linear_form(equations[e], column_of,
                                   incidence[e] if incidence else None)
        if form is None:
            raise _Disagreement
        found, offset = form
        row, scale = _integer_row(found)
        if row != rows[e]:
            raise _Disagreement
        rows[e], original[e] = row, dict(row)  # the walk's order, as without trust
        offsets[e] = _scaled_offsets(offset, scale)
        offsets_at_start[e] = dict(offsets[e])
    column_rows: dict[int, set[int]] = {}
    for e, row in rows.items():
        for c in row:
            column_rows.setdefault(c, set()).add(e)

    def eliminate(pivot_row, column, keep_pivot=False):
        others = sorted(column_rows[column] - {pivot_row})
        if others:
            walked(pivot_row)
        pivot = rows[pivot_row]
        a = pivot[column]
        for e in others:
            walked(e)
            row = rows[e]
            b = row[column]
            combined = {c: a * v for c, v in row.items()}
            for c, v in pivot.items():
                combined[c] = combined.get(c, 0) - b * v
            combined = {c: v for c, v in combined.items() if v != 0}
            divisor = gcd(*combined.values()) if combined else 1
            if combined and next(iter(combined.values())) < 0:
                divisor = -divisor
            for c in row:
                if c not in combined:
                    column_rows[c].discard(e)
            for c, v in combined.items():
                combined[c] = v // divisor
                column_rows.setdefault(c, set()).add(e)
            rows[e] = combined
            offsets[e] = _combine(offsets[e], a, offsets[pivot_row], -b, divisor)
            sources[e] |= sources[pivot_row]
        if keep_pivot:
            return
        for c in pivot:
            column_rows[c].discard(pivot_row)
        del rows[pivot_row]

    def markowitz(columns):
        """Pivot on ``columns`` (fewest remaining rows first) until none is left; pivot
        rows leave the active set."""
        heap = [(len(column_rows.get(c, ())), c) for c in columns if column_rows.get(c)]
        heapq.heapify(heap)
        while heap:
            count, c = heapq.heappop(heap)
            current = len(column_rows.get(c, ()))
            if current == 0:
                continue
            if current != count:
                heapq.heappush(heap, (current, c))
                continue
            pivot_row = min(column_rows[c], key=lambda e: (len(rows[e]), e))
            touched = set().union(*(rows[e] for e in column_rows[c]))
            eliminate(pivot_row, c)
            for t in touched:
                if t != c and column_rows.get(t) and t in columns:
                    heapq.heappush(heap, (len(column_rows[t]), t))

    algebraic = {c for c in column_rows if not differentiated[c]}
    markowitz(algebraic)
    # Rows left over differentiated variables only: constraints between states. They are
    # brought to reduced row-echelon form, pivoting on the variables least worth keeping as
    # states first — the order in which state selection picks dummy derivatives — so that
    # the structural choice it makes is also numerically regular (with c0 + c1 = V and
    # c3 - c0 - c1 = 0 it could otherwise take c0 and c1 both as dummies).
    active = set(rows)
    order = sorted((c for c in column_rows if differentiated[c] and column_rows[c]),
                   key=lambda c: (preference[c] if preference is not None else 0, c))
    for c in order:
        candidates = [e for e in column_rows[c] if e in active]
        if not candidates:
            continue
        pivot_row = min(candidates, key=lambda e: (len(rows[e]), e))
        eliminate(pivot_row, c, keep_pivot=True)
        active.discard(pivot_row)
    for e in active:  # rows reduced to nothing, reported below: their own forms
        walked(e)
    cancelled = {e for e, row in original.items()
                 if incidence is not None and len(row) != len(incidence[e])}
    for e in cancelled:
        walked(e)
    # (a trusted row left as it was has no offsets: it is the model's own equation)
    constraints = {e: (rows[e], offsets.get(e), sources[e]) for e in rows if e not in active}
    for e in sorted(active):  # rows reduced to nothing: linear dependencies
        result.dependent.append((sorted(sources[e]), not offsets[e]))
    for e in cancelled - set(constraints):  # e.g. (i1 - i0) - i1 after alias substitution
        constraints[e] = (original[e], offsets_at_start[e], {e})
    for e, (row, offset, used) in sorted(constraints.items()):
        if row == original[e] and used == {e} and e not in cancelled:
            continue  # the model's own equation, unchanged
        expr = ca.SX(0)
        for c, v in sorted(row.items()):
            expr = expr + v * symbols[c] if v != 1 else expr + symbols[c]
        for term, value in offset.values():  # insertion order: deterministic, not addresses
            expr = expr + float(value) * (term if term is not None else 1)
        result.replaced[e] = (expr, sorted(used))
    return result


def _combine(first: dict, a: int, second: dict, b: int, divisor: int) -> dict:
    """``(a*first + b*second) / divisor`` of two offsets (term key -> (term, value))."""
    out = {k: (t, Fraction(a) * v) for k, (t, v) in first.items()}
    for k, (t, v) in second.items():
        old = out.get(k)
        out[k] = (t, (old[1] if old else 0) + b * v)
    return {k: (t, v / divisor) for k, (t, v) in out.items() if v != 0}
