"""Newton's method with minimum-norm steps, for square systems singular everywhere.

Some nonlinear systems that initialization and steady-state searches pose are square but
have a Jacobian that is singular at every point, though they have solutions: ``der(Q) = 0``
for a quaternion ``Q`` with ``der(Q) = G(Q) w / 2`` (four rows of rank three), where the
norm of ``Q`` and the rotation about gravity are free. casadi's rootfinders (Newton, KINSOL)
factor that Jacobian and stop. :class:`MinimumNormNewton` takes the least-squares step of
smallest norm instead (``numpy.linalg.lstsq``, an SVD), with a backtracking line search on
the residual norm, so it moves only along directions the equations determine and ends at a
solution near its start: the pendulum hangs, turned about gravity as it started.
"""

from __future__ import annotations

import warnings

import casadi as ca
import numpy as np

from .errors import NotUniqueWarning


class MinimumNormNewton:
    """``solver(w0, known) -> w`` with ``function(w, known) = 0`` (a casadi Function of two
    vector arguments), called like a casadi rootfinder; raises RuntimeError where it finds
    no solution (the callers try the next solver, as on a rootfinder's failure).

    Example::

        solve = MinimumNormNewton(residual)          # residual: (w, known) -> r
        w = solve(w_guess, known_values)
    """

    #: Larger systems are not tried (a dense SVD per step; a failing initialization of
    #: hundreds of unknowns would take seconds to report its failure).
    MAX_UNKNOWNS = 300

    def __init__(self, function: ca.Function, max_iter: int = 50):
        w, known = function.mx_in(0), function.mx_in(1)
        r = function(w, known)
        self.evaluate = ca.Function(f"{function.name()}_min_norm", [w, known],
                                    [r, ca.jacobian(r, w)])
        self.residual = function
        self.max_iter = max_iter

    def __call__(self, w0, known) -> np.ndarray:
        w = np.array(w0, dtype=float).reshape(-1)
        known = np.array(known, dtype=float).reshape(-1)
        if len(w) > self.MAX_UNKNOWNS:
            raise RuntimeError(f"minimum-norm Newton: {len(w)} unknowns (at most "
                               f"{self.MAX_UNKNOWNS})")
        r, J = (np.array(a) for a in self.evaluate(w, known))
        r = r.reshape(-1)
        norm = np.linalg.norm(r)
        for _ in range(self.max_iter):
            if not np.isfinite(norm):
                raise RuntimeError("minimum-norm Newton: the residual is not finite")
            if np.max(np.abs(r), initial=0.0) <= 1e-14 * (1.0 + np.max(np.abs(w), initial=0.0)):
                return w
            step = np.linalg.lstsq(J, -r, rcond=None)[0]
            if np.linalg.norm(step) <= 1e-15 * (1.0 + np.linalg.norm(w)):
                return w  # no step the equations determine is left: as good as it gets
            t = 1.0
            while t > 1e-8:
                w_new = w + t * step
                r_new = np.array(self.residual(w_new, known)).reshape(-1)
                norm_new = np.linalg.norm(r_new)
                if np.isfinite(norm_new) and norm_new < (1.0 - 1e-4 * t) * norm:
                    break
                t /= 2
            else:
                return w  # no decrease along the step (the caller checks the residual)
            w = w_new
            r, J = (np.array(a) for a in self.evaluate(w, known))
            r = r.reshape(-1)
            norm = np.linalg.norm(r)
        return w

    def free_directions(self, w, known) -> np.ndarray:
        """Rows: the directions the equations leave free at ``w`` (the null space of their
        Jacobian, relative tolerance 1e-9); none where the solution is unique."""
        J = np.array(self.evaluate(w, known)[1])
        if not J.size:
            return np.zeros((0, len(w)))
        _, singular, vt = np.linalg.svd(J)
        rank = int(np.sum(singular > 1e-9 * max(singular.max(initial=0.0), 1e-300)))
        return vt[rank:]


def warn_not_unique(solver, w, known, names, what):
    """A :class:`~mbmodel.errors.NotUniqueWarning` where ``solver`` (the fallback) found
    ``w`` with directions left free, naming the unknowns they move most."""
    free = solver.free_directions(w, known)
    if not len(free):
        return
    weight = np.max(np.abs(free), axis=0)
    moved = [names[i] for i in np.argsort(-weight)[:6] if weight[i] > 1e-6]
    warnings.warn(NotUniqueWarning(
        f"{what}: the equations leave {len(free)} direction(s) free, along "
        f"{', '.join(moved)}; the point found is the nearest to the start values (Newton's "
        f"method with minimum-norm steps). Give the missing condition (a fixed start, an "
        f"initial equation) to choose another"), stacklevel=4)
