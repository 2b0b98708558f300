"""Symbolic solution of small linear systems that stays accurate when evaluated.

A torn linear block ``A(x) z = b(x)`` is solved inside the generated code, at every
evaluation, for matrices known only symbolically. casadi's ``solve`` on SX factors with
Gram–Schmidt and no pivoting: on a badly scaled or ill-conditioned (but regular) matrix it
loses most digits (an 8×8 Hilbert system: error 1e4 where LAPACK has 1e-7), and on a matrix
that is singular at some state it divides by round-off and returns a finite wrong number.

:func:`pivoted_solve` is Gaussian elimination with scaled partial pivoting written as a
branch-free expression: at each step the row with the largest entry relative to its own
scale is selected with ``if_else`` at run time, so no pivot can vanish for a regular matrix,
whatever its scaling. A step whose best relative pivot is below :data:`SINGULAR_PIVOT` marks
the whole solution NaN instead of returning round-off: the simulator's finite-value check then
stops the run and names the block.
"""

from __future__ import annotations

import casadi as ca

#: Relative pivot (|pivot| / largest entry of its row) below which a block is singular.
SINGULAR_PIVOT = 1e-13
_TINY = 1e-300  # keeps a row that is zero at run time from giving 0/0 (it is singular)


def smallest_relative_pivot(matrix) -> float:
    """What :func:`pivoted_solve` would meet on the numeric ``matrix``: the smallest
    relative pivot (|pivot| / largest entry of its original row) of Gaussian elimination
    with scaled partial pivoting. Below :data:`SINGULAR_PIVOT` the solve gives NaN.

    Example::

        smallest_relative_pivot(np.array([[1.0, 2.0], [2.0, 4.0]]))  # -> 0.0
    """
    import numpy as np

    a = np.array(matrix, dtype=float)
    n = a.shape[0]
    scales = np.abs(a).max(axis=1) + _TINY
    worst = np.inf
    for k in range(n):
        weights = np.abs(a[k:, k]) / scales[k:]
        best = k + int(np.argmax(weights))
        worst = min(worst, float(weights[best - k]))
        if best != k:
            a[[k, best]] = a[[best, k]]
            scales[[k, best]] = scales[[best, k]]
        if a[k, k] == 0.0:
            return 0.0
        a[k + 1:, k:] -= np.outer(a[k + 1:, k] / a[k, k], a[k, k:])
    return worst


def _select(condition, when_true, when_false):
    """``if_else`` that leaves structural zeros and identical operands alone."""
    if when_true.is_zero() and when_false.is_zero():
        return when_false
    if ca.is_equal(when_true, when_false):
        return when_false
    return ca.if_else(condition, when_true, when_false)


def pivoted_solve(A: ca.SX, b: ca.SX) -> ca.SX:
    """Solve ``A x = b`` (``A`` square SX, ``b`` an SX column) by Gaussian elimination with
    scaled partial pivoting, as an expression. The result is NaN where ``A`` is singular
    (relative pivot below :data:`SINGULAR_PIVOT`).

    Example::

        A = ca.SX.sym("A", 2, 2); b = ca.SX.sym("b", 2)
        f = ca.Function("f", [A, b], [pivoted_solve(A, b)])
        f(np.array([[0, 1], [1, 0]]), np.array([1, 2]))   # -> [2, 1], though A[0, 0] = 0
    """
    n = A.size1()
    rows = [[A[i, j] for j in range(n)] + [b[i]] for i in range(n)]
    scales = []
    for row in rows:
        entries = [abs(a) for a in row[:n] if not a.is_zero()]
        scale = entries[0] if entries else ca.SX(0)
        for e in entries[1:]:
            scale = ca.fmax(scale, e)
        scales.append(scale)
    worst = None  # smallest relative pivot met
    for k in range(n):
        candidates = [i for i in range(k, n) if not rows[i][k].is_zero()]
        if not candidates:
            return ca.SX.nan(n, 1)  # structurally singular: cannot happen after matching
        best = candidates[0]
        chosen_row, chosen_scale = rows[best], scales[best]
        weight = abs(rows[best][k]) / (scales[best] + _TINY)
        index = ca.SX(best)
        for i in candidates[1:]:
            w = abs(rows[i][k]) / (scales[i] + _TINY)
            better = w > weight
            weight = ca.if_else(better, w, weight)
            index = ca.if_else(better, i, index)
            chosen_row = [_select(better, a, c) for a, c in zip(rows[i], chosen_row)]
            chosen_scale = _select(better, scales[i], chosen_scale)
        worst = weight if worst is None else ca.fmin(worst, weight)
        if len(candidates) > 1 or candidates[0] != k:
            old_k, old_scale = rows[k], scales[k]
            for i in candidates:
                if i == k:
                    continue
                taken = index == i
                rows[i] = [_select(taken, a, c) for a, c in zip(old_k, rows[i])]
                scales[i] = _select(taken, old_scale, scales[i])
            rows[k], scales[k] = chosen_row, chosen_scale
        pivot = rows[k][k]
        for i in range(k + 1, n):
            if rows[i][k].is_zero():
                continue
            factor = rows[i][k] / pivot
            rows[i] = ([ca.SX(0)] * (k + 1)
                       + [rows[i][j] - factor * rows[k][j] if not rows[k][j].is_zero()
                          else rows[i][j] for j in range(k + 1, n + 1)])
    x = [None] * n
    for k in reversed(range(n)):
        acc = rows[k][n]
        for j in range(k + 1, n):
            if not rows[k][j].is_zero():
                acc = acc - rows[k][j] * x[j]
        x[k] = acc / rows[k][k]
    singular = worst < SINGULAR_PIVOT
    poison = ca.if_else(singular, ca.SX.nan(), ca.SX(0))
    return ca.vertcat(*[xk + poison for xk in x])
