"""Alias elimination: remove ``a = ±b + c`` and ``a = c`` equations before matching.

Connection sets generate most of these; removing them first keeps every later pass small.
A union–find with signs and offsets groups aliased variables; each group keeps one
representative (an input if the group has one, else the variable most worth keeping: a
preferred state, a fixed start, a non-flow, the shortest name). The result is plain data:
for every eliminated variable, ``(representative or None, sign, offset)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from .core import STATE_PRIORITY
from .flat import FlatModel


@dataclass
class AliasResult:
    """``alias[v] = (rep, sign, offset)``: variable ``v`` equals ``sign * rep + offset``
    (``rep is None``: the constant ``offset``). ``kept_equations`` index the flat equations
    that remain; ``removed_equations`` the ones alias elimination consumed."""

    alias: dict[int, tuple[int | None, float, float]]
    kept_equations: list[int]
    removed_equations: list[int]


def linear_pattern(expr, var_of, depth=0):
    """``expr`` as ``([(var, coef)], const)`` if it is a sum of at most two variables with
    unit coefficients and a constant; otherwise None. ``var_of``: the variables by symbol
    hash. Such a pattern is never deep, so the search stops early on long sums (a flow sum
    over thousands of connectors).

    Example::

        a, b = ca.SX.sym("a"), ca.SX.sym("b")
        linear_pattern(a - b + 2, {a.element_hash(): 0, b.element_hash(): 1})
        # ([(0, 1.0), (1, -1.0)], 2.0)
    """
    if depth > 8:
        return None
    op = expr.op()  # one call per node: each casadi query costs ~2 µs from Python
    if op == ca.OP_PARAMETER:
        v = var_of.get(expr.element_hash())
        return ([(v, 1.0)], 0.0) if v is not None else None
    if op == ca.OP_CONST:
        return ([], float(expr))
    if op == ca.OP_NEG:
        inner = linear_pattern(expr.dep(0), var_of, depth + 1)
        if inner is None:
            return None
        return ([(v, -c) for v, c in inner[0]], -inner[1])
    if op == ca.OP_ADD or op == ca.OP_SUB:
        a = linear_pattern(expr.dep(0), var_of, depth + 1)
        if a is None:
            return None
        b = linear_pattern(expr.dep(1), var_of, depth + 1)
        if b is None:
            return None
        s = 1.0 if op == ca.OP_ADD else -1.0
        terms = a[0] + [(v, s * c) for v, c in b[0]]
        if len(terms) > 2:
            return None
        return (terms, a[1] + s * b[1])
    return None


def _alias_candidates(residuals: list, position_of: dict, variables: list) -> tuple:
    """Per equation, whether it can be an alias: it depends on at most two of the
    variables and on no other symbol (parameter, derivative, time). One sparsity pattern
    of these equations (casadi, no Python per node) spares the expression walk of the
    others — half the equations of a multibody model. ``position_of``: the flat
    variables' positions by symbol hash. Returns the candidates and the variables (kind
    unknown or input) by symbol hash among the symbols the equations use."""
    if not residuals:
        return [], {}
    exprs = ca.vertcat(*residuals)
    var_of, var_symbols, others = {}, [], []
    for s in ca.symvar(exprs):
        h = s.element_hash()
        position = position_of.get(h)
        if position is not None and variables[position].kind in ("unknown", "input"):
            var_of[h] = position
            var_symbols.append(s)
        else:
            others.append(s)
    symbols = ca.vertcat(*var_symbols, *others)
    if symbols.numel() == 0:
        return [True] * len(residuals), var_of
    rows, cols = ca.jacobian_sparsity(exprs, symbols).get_triplet()
    rows, cols = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)
    n = len(residuals)
    in_variables = np.bincount(rows[cols < len(var_symbols)], minlength=n)
    foreign = np.bincount(rows[cols >= len(var_symbols)], minlength=n)
    return ((in_variables <= 2) & (foreign == 0)).tolist(), var_of


class _UnionFind:
    """Nodes carry ``value(node) = sign * value(parent) + offset``; root ``-1`` is the
    constant 1 (so ``v = offset`` is ``v = 0 * root + offset``, represented as a link to the
    constant node with sign 0)."""

    CONST = -1

    def __init__(self):
        self.parent: dict[int, int] = {}
        self.sign: dict[int, float] = {}
        self.offset: dict[int, float] = {}

    def find(self, v):
        # Returns (root, sign, offset) with value(v) = sign*value(root) + offset.
        if self.parent.get(v, v) == v:
            return v, 1.0, 0.0  # a root (most calls: each alias links a new variable)
        path = []
        while v in self.parent and self.parent[v] != v:
            path.append(v)
            v = self.parent[v]
        root = v
        sign, off = 1.0, 0.0
        for node in reversed(path):
            s, o = self.sign[node], self.offset[node]
            # value(node) = s * value(parent) + o, value(parent) = sign*root + off
            sign, off = s * sign, s * off + o
            self.parent[node], self.sign[node], self.offset[node] = root, sign, off
        return root, sign, off


def eliminate_aliases(flat: FlatModel) -> AliasResult:
    """Find alias equations in ``flat`` and choose representatives.

    Example::

        res = eliminate_aliases(flatten(model))
        print(len(res.removed_equations), "alias equations removed")
    """
    uf = _UnionFind()
    removed, kept = [], []
    input_flags = [v.kind == "input" for v in flat.variables]

    def is_input(v):
        return v != _UnionFind.CONST and input_flags[v]

    # Forms that flattening knows (a class's template, a connection) are taken as they
    # are; the other residuals are read here.
    unread = [k for k, eq in enumerate(flat.equations) if eq.alias_form is None]
    position_of = flat.position_of or {v.symbol.element_hash(): i
                                       for i, v in enumerate(flat.variables)}
    candidates, var_of = _alias_candidates([flat.equations[k].residual for k in unread],
                                           position_of, flat.variables)
    candidates = dict(zip(unread, candidates))
    for k, eq in enumerate(flat.equations):
        form = eq.alias_form
        if form is None:
            pat = linear_pattern(eq.residual, var_of) if candidates[k] else None
        else:
            pat = form or None
        if pat is None or not pat[0]:
            kept.append(k)
            continue
        terms, const = pat
        if len(terms) == 2 and terms[0][0] == terms[1][0]:
            kept.append(k)
            continue
        # terms: c1*a (+ c2*b) + const = 0  with |c| = 1
        if len(terms) == 1:
            (a, ca_), = terms
            if is_input(a):
                kept.append(k)
                continue
            ra, sa, oa = uf.find(a)
            if ra == _UnionFind.CONST:
                kept.append(k)  # already constant: a redundant/conflicting equation
                continue
            # a = -const/ca_ ; with a = sa*ra + oa -> ra = (-const/ca_ - oa)/sa
            value = (-const / ca_ - oa) / sa
            uf.parent[ra], uf.sign[ra], uf.offset[ra] = _UnionFind.CONST, 0.0, value
            removed.append(k)
            continue
        (a, c1), (b, c2) = terms
        ra, sa, oa = uf.find(a)
        rb, sb, ob = uf.find(b)
        if ra == rb:
            kept.append(k)  # closes a cycle of aliases: keep as an ordinary equation
            continue
        if ra == _UnionFind.CONST and rb == _UnionFind.CONST:
            kept.append(k)
            continue
        if is_input(ra) and is_input(rb):
            kept.append(k)
            continue
        # c1*(sa*ra + oa) + c2*(sb*rb + ob) + const = 0
        # Link rb under ra (or the other way round) — orientation fixed later by choosing
        # representatives; here keep the constant/input as root.
        if rb == _UnionFind.CONST or is_input(rb):
            ra, sa, oa, rb, sb, ob, c1, c2 = rb, sb, ob, ra, sa, oa, c2, c1
        # rb = -(c1*sa*ra + c1*oa + c2*ob + const) / (c2*sb)
        if ra == _UnionFind.CONST:
            value = -(c1 * oa + c2 * ob + const) / (c2 * sb)
            uf.parent[rb], uf.sign[rb], uf.offset[rb] = _UnionFind.CONST, 0.0, value
        else:
            uf.parent[rb] = ra
            uf.sign[rb] = -(c1 * sa) / (c2 * sb)
            uf.offset[rb] = -(c1 * oa + c2 * ob + const) / (c2 * sb)
        removed.append(k)
    # Group by root and choose representatives.
    groups: dict[int, list[int]] = {}
    for v in list(uf.parent):
        if v == _UnionFind.CONST:
            continue
        r, _, _ = uf.find(v)
        groups.setdefault(r, []).append(v)
    # Every variable now hangs directly under its root: find(v) would return
    # (root, s * 1.0, s * 0.0 + o) from its stored sign s and offset o (the same floats,
    # negative zeros included), without a call per variable.
    sign_of, offset_of = uf.sign, uf.offset

    def resolved(v):
        s = sign_of[v]
        return s * 1.0, s * 0.0 + offset_of[v]
    alias: dict[int, tuple[int | None, float, float]] = {}
    for root, vs in groups.items():
        group = sorted(set(vs) | ({root} if root != _UnionFind.CONST else set()))
        if root == _UnionFind.CONST:
            for v in group:
                alias[v] = (None, 1.0, resolved(v)[1])
            continue
        rep = max(group, key=lambda v: _keep_score(flat, v))
        s_rep, o_rep = resolved(rep) if rep != root else (1.0, 0.0)
        # value(v) = s_v*root + o_v, value(rep) = s_rep*root + o_rep
        for v in group:
            if v == rep:
                continue
            s_v, o_v = (1.0, 0.0) if v == root else resolved(v)
            sign = s_v / s_rep
            alias[v] = (rep, sign, o_v - sign * o_rep)
    return AliasResult(alias, kept, removed)


def _keep_score(flat, v):
    var = flat.variables[v]
    return (var.kind == "input", STATE_PRIORITY[var.state_select], var.fixed,
            var.derivative is not None, not var.is_flow, -var.name.count("."), -len(var.name), -v)
