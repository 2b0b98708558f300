"""Conditions on variables (``mb.Assert`` reading variables or time) checked along a run.

Modelica's ``assert`` stops a simulation where its condition fails. Here the conditions are
checked on the result of :func:`mbmodel.simulate`, at every output point (the start is one
unless ``times=`` leaves it out; not at the integrator's internal steps: a violation that
begins and ends between two output points is not seen), also on the points a failed run
reached (a guard of the domain the integrator then left comes first); the first point
where one fails stops the run with a
:class:`~mbmodel.SimulationError` that names the component, its message and the values, with
the result up to the point before attached. :meth:`mbmodel.CompiledModel.initialize` checks
them at the point it returns. Conditions on parameters only are checked with the parameter
values (:meth:`mbmodel.CompiledModel.parameter_checks`).
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from .core import time as TIME
from .errors import SimulationError
from .flat import resolve_bindings, stacked
from .result import Result


class RunAsserts:
    """The run-time asserts of a compiled model as one casadi Function of the variables they
    read (by name), the free parameters and time."""

    def __init__(self, cm):
        system = cm.system
        self.model = cm.name
        self.asserts = list(getattr(system, "run_asserts", None) or [])
        if not self.asserts:
            return
        names = {v.symbol.element_hash(): v.name for v in system.variables}
        free = [q for q in system.parameters if q.binding is None]
        conditions = resolve_bindings(system.parameters, [a.condition for a in self.asserts])
        used = ca.symvar(ca.vertcat(*conditions))
        symbols = [s for s in used if s.element_hash() in names]
        self.names = [names[s.element_hash()] for s in symbols]
        self.function = ca.Function("run_asserts", [stacked(symbols),
                                                    stacked([q.symbol for q in free]), TIME],
                                    [ca.vertcat(*conditions)])
        self.reads = [[names[s.element_hash()] for s in ca.symvar(c)
                       if s.element_hash() in names] for c in conditions]

    def check(self, result: Result, p, failure: SimulationError | None = None) -> None:
        """Raise at the first output point of ``result`` where a condition fails (run with
        the free parameter vector ``p``). ``failure``: the run failed after ``result``'s
        points (an integrator failure): a condition failing there is the likelier cause
        (a guard written for the domain the integrator left), so it is raised in its
        place, with the failure's text after it."""
        if not self.asserts or not len(result.t):
            return
        n = len(result.t)
        result.prefetch(self.names)
        values = np.array([result[name] for name in self.names]).reshape(len(self.names), n)
        held = np.array(self.function.map(n)(values, np.asarray(p, dtype=float),
                                             result.t.reshape(1, -1)), dtype=float)
        failing = (held == 0.0) | ~np.isfinite(held)
        if not failing.any():
            return
        j = int(np.argmax(failing.any(axis=0)))
        k = int(np.argmax(failing[:, j]))
        fault = self.asserts[k]
        shown = ", ".join(f"{name} = {result[name][j]:.6g}" for name in self.reads[k][:6])
        t = float(result.t[j])
        later = ("" if failure is None else
                 f" The run then failed at t = {failure.time:g}: {failure}")
        error = SimulationError(
            f"{fault.origin or self.model}: {fault.message} (does not hold at t = {t:g}"
            f"{': ' + shown if shown else ''}). The result up to the output point before it "
            f"is in this error's 'result'.{later}")
        error.time = error.reached_time = t
        error.variable = self.reads[k][0] if self.reads[k] else None
        error.result = result.head(j)
        raise error from None


