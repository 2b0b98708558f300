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

from .errors import NotUniqueWarning, user_stacklevel
from .quiet import lines_shown


class MinimumNormNewton:
    """``solver(w0, known) -> w`` with ``function(w, known) = 0`` (a casadi Function of two
    vector arguments), called like a casadi rootfinder; raises RuntimeError where it finds
    no solution (the callers try the next solver, as on a rootfinder's failure). A solution
    where the equations leave directions free comes with a
    :class:`~mbmodel.errors.NotUniqueWarning` naming the unknowns (``names``) they move
    most; ``what`` says which problem it was.

    Example::

        solve = MinimumNormNewton(residual, ["h1", "h2"], "steady state")
        w = solve(w_guess, known_values)
    """

    #: Larger systems are not tried (a dense SVD per step; a failing initialization of
    #: hundreds of unknowns would take seconds to report its failure).
    MAX_UNKNOWNS = 300

    def __init__(self, function: ca.Function, names: list[str], what: str,
                 max_iter: int = 50):
        w, known = function.mx_in(0), function.mx_in(1)
        r = function(w, known)
        self.evaluate = ca.Function(f"{function.name()}_min_norm", [w, known],
                                    [r, ca.jacobian(r, w)])
        self.residual = function
        self.names, self.what = list(names), what
        self.max_iter = max_iter

    def __call__(self, w0, known) -> np.ndarray:
        w = np.array(w0, dtype=float).reshape(-1)
        known = np.array(known, dtype=float).reshape(-1)
        if len(w) > self.MAX_UNKNOWNS:
            raise RuntimeError(f"minimum-norm Newton: {len(w)} unknowns (at most "
                               f"{self.MAX_UNKNOWNS})")
        for _ in range(self.max_iter):
            r, J = (np.array(a) for a in self.evaluate(w, known))
            r = r.reshape(-1)
            norm = np.linalg.norm(r)
            if not np.isfinite(norm):
                raise RuntimeError("minimum-norm Newton: the residual is not finite")
            if np.max(np.abs(r), initial=0.0) <= 1e-14 * (1.0 + np.max(np.abs(w), initial=0.0)):
                break
            step = np.linalg.lstsq(J, -r, rcond=None)[0]
            if np.linalg.norm(step) <= 1e-15 * (1.0 + np.linalg.norm(w)):
                break  # no step the equations determine is left: as good as it gets
            t = 1.0
            while t > 1e-8:
                w_new = w + t * step
                norm_new = np.linalg.norm(np.array(self.residual(w_new, known)))
                if np.isfinite(norm_new) and norm_new < (1.0 - 1e-4 * t) * norm:
                    break
                t /= 2
            else:
                break  # no decrease along the step (the caller checks the residual)
            w = w_new
        self._warn_if_not_unique(w, known)
        return w

    def _warn_if_not_unique(self, w, known):
        """The warning of the class doc, where ``w`` solves the equations (the callers'
        test: residual below 1e-8 of the unknowns' size) and leaves directions free."""
        r, J = (np.array(a) for a in self.evaluate(w, known))
        if not J.size or np.max(np.abs(r), initial=0.0) > 1e-8 * (
                1.0 + np.max(np.abs(w), initial=0.0)):
            return
        _, singular, vt = np.linalg.svd(J)
        rank = int(np.sum(singular > 1e-9 * max(singular.max(initial=0.0), 1e-300)))
        free = vt[rank:]  # the null space of the Jacobian
        if not len(free):
            return
        weight = np.max(np.abs(free), axis=0)
        moved = [self.names[i] for i in np.argsort(-weight)[:6] if weight[i] > 1e-6]
        with lines_shown():  # (the callers hold casadi's lines back around solvers)
            warnings.warn(NotUniqueWarning(
                f"{self.what}: the equations leave {len(free)} direction(s) free, along "
                f"{', '.join(moved)}; the point found is the nearest to the start values "
                f"(Newton's method with minimum-norm steps). Give the missing condition (a "
                f"fixed start, an initial equation) to choose another"),
                stacklevel=user_stacklevel())
