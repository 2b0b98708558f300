"""Linearization of a compiled model: ``ẋ = A x + B u``, ``y = C x + D u`` around an operating
point, with the states, inputs and outputs named.

The model is the index-reduced, sorted system the simulator integrates: its states are the
selected states, and the torn nonlinear blocks' variables ``z`` (with ``g(x, z, u) = 0``) are
eliminated by the implicit function theorem, ``dz = -g_z⁻¹ (g_x dx + g_u du)``. Outputs are
any of the model's variables (``cm.output_names``), differentiated the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from .core import time as TIME
from .checks import scalar, vector
from .errors import SimulationError


@dataclass
class LinearSystem:
    """``ẋ = A x + B u``, ``y = C x + D u`` with named ``states``, ``inputs`` and ``outputs``
    at the operating point ``x0``, ``u0``, ``t``.

    Unpacks as ``A, B`` (no outputs requested) or ``A, B, C, D``.

    Example::

        lin = cm.linearize(outputs=["load.w"])
        A, B, C, D = lin
        sys = lin.to_control()          # control.StateSpace, needs the `control` extra
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    states: list[str]
    inputs: list[str]
    outputs: list[str]
    x0: np.ndarray = field(repr=False, default=None)
    u0: np.ndarray = field(repr=False, default=None)
    t: float = 0.0

    def __iter__(self):
        return iter((self.A, self.B, self.C, self.D) if self.outputs else (self.A, self.B))

    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of ``A`` (the poles of the linearized model)."""
        return np.linalg.eigvals(self.A)

    def to_control(self):
        """The model as a ``control.StateSpace`` with the names attached (python-control,
        the ``control`` extra; the hierarchy separator '.' becomes '/', which python-control
        allows in signal names: ``inertia/w``)."""
        try:
            import control
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("to_control() needs python-control: "
                              "pip install 'mbmodel[control]'") from exc
        C = self.C if self.outputs else np.zeros((0, len(self.states)))
        D = self.D if self.outputs else np.zeros((0, len(self.inputs)))
        # python-control reserves '.' in signal names: the hierarchy is written with '/'
        def names(items):
            return [n.replace(".", "/") for n in items]
        return control.ss(self.A, self.B, C, D, states=names(self.states),
                          inputs=names(self.inputs), outputs=names(self.outputs))


def linearize(cm, x=None, u=None, params=None, t=0.0, z=None, inputs=None, outputs=None,
              steady_state=False) -> LinearSystem:
    """Linearize the compiled model ``cm``; see :meth:`CompiledModel.linearize`."""
    p = cm.parameter_vector(params)
    t = scalar(t, "linearize(t=...)", SimulationError)
    if not np.isfinite(t):
        raise SimulationError(f"linearize(t=...) must be a finite time, not {t}")
    u0 = (np.zeros(len(cm.inputs)) if u is None
          else vector(u, len(cm.inputs), "u", cm.inputs))
    u_ext = u0
    # values that change only at events: their start values, relations as at the point
    u0 = np.concatenate([u_ext, getattr(cm, "discrete_start", np.zeros(0))])
    if x is None and steady_state:
        x0, z0 = _steady_state(cm, u0, p, t)
    elif x is None:
        x0, z0 = cm.initialize(params=params, inputs=dict(zip(cm.inputs, u_ext.tolist())),
                               t_start=t)
    else:
        if steady_state:
            raise SimulationError("linearize(): give either x (an operating point) or "
                                  "steady_state=True (find one), not both")
        x0 = vector(x, len(cm.states), "x", cm.states)
        if z is not None:
            z0 = vector(z, len(cm.algebraic), "z", cm.algebraic)
        elif len(cm.algebraic):
            # the algebraic variables consistent with x, by Newton from their start values
            try:
                z0 = np.array(cm.explicit_ode(guess=True)(x0, u0, p, t, cm.z_start)[1])
            except RuntimeError:
                raise SimulationError(
                    f"linearize(): no algebraic variables {', '.join(cm.algebraic[:6])} solve "
                    f"the model at x = {x0.tolist()} near their start values; give z") from None
            z0 = z0.reshape(-1)
        else:
            z0 = cm.z_start
    if getattr(cm, "events", None) is not None:
        from .events import relations_at
        u0 = relations_at(cm, x0, z0, u0, p, t)
    chosen_inputs = list(cm.inputs) if inputs is None else _names(inputs, cm.inputs, "inputs")
    chosen_outputs = [] if outputs is None else _names(outputs, cm.output_names, "outputs")
    columns = [cm.inputs.index(n) for n in chosen_inputs]
    rows = [cm.output_index[n] for n in chosen_outputs]

    X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
    f = cm.ode(X, Z, U, P, TIME)
    g = cm.alg(X, Z, U, P, TIME)
    y = cm.output_function(X, Z, U, P, TIME)
    y = y[rows] if rows else ca.SX(0, 1)
    jac = ca.Function("linearization", [X, Z, U, P, TIME],
                      [ca.jacobian(e, v) for e in (f, g, y) for v in (X, Z, U)])
    (fx, fz, fu, gx, gz, gu, hx, hz, hu) = (np.array(m) for m in jac(x0, z0, u0, p, t))
    if gz.size:
        if not np.all(np.isfinite(gz)) or np.linalg.cond(gz) > 1e14:
            raise SimulationError(
                f"linearize(): the algebraic equations are singular at this point (their "
                f"Jacobian with respect to {', '.join(cm.algebraic[:6])} has condition "
                f"number {np.linalg.cond(gz):.3g}), so the algebraic variables cannot be "
                f"eliminated; linearize at another operating point")
        dz_dx = -np.linalg.solve(gz, gx)
        dz_du = -np.linalg.solve(gz, gu)
        A, B = fx + fz @ dz_dx, fu + fz @ dz_du
        C, D = hx + hz @ dz_dx, hu + hz @ dz_du
    else:
        A, B, C, D = fx, fu, hx, hu
    B, D = B[:, columns], D[:, columns]
    for name, matrix, labels in (("A", A, [f"der({s})" for s in cm.states]),
                                 ("B", B, [f"der({s})" for s in cm.states]),
                                 ("C", C, chosen_outputs), ("D", D, chosen_outputs)):
        if not np.all(np.isfinite(matrix)):
            row = int(np.argmin(np.all(np.isfinite(matrix), axis=1)))
            raise SimulationError(
                f"linearize(): the Jacobian {name} is not finite in the row of {labels[row]} "
                f"at this point (a division by zero or a function outside its domain there); "
                f"linearize at another operating point")
    return LinearSystem(A, B, C.reshape(len(rows), len(cm.states)),
                        D.reshape(len(rows), len(columns)), list(cm.states), chosen_inputs,
                        chosen_outputs, np.asarray(x0, dtype=float), u0, float(t))


def _steady_state(cm, u, p, t):
    """States and algebraic variables with ``ẋ = 0`` and ``g = 0`` at inputs ``u`` (Newton
    from the start values; fixed start values do not bind here: a steady state is where the
    model rests, wherever it was started)."""
    X, Z, U, P = cm.symbols.x, cm.symbols.z, cm.symbols.u, cm.symbols.p
    w = ca.vertcat(X, Z)
    residual = ca.vertcat(cm.ode(X, Z, U, P, TIME), cm.alg(X, Z, U, P, TIME))
    g = ca.Function("steady", [w, ca.vertcat(U, P, TIME)], [residual])
    solver = ca.rootfinder("steady_state", "newton", g, {"error_on_fail": False,
                                                              "show_eval_warnings": False})
    guess = np.concatenate([cm.start, cm.z_start])
    solution = np.array(solver(guess, np.concatenate([u, p, [t]]))).reshape(-1)
    left = np.array(g(solution, np.concatenate([u, p, [t]]))).reshape(-1)
    if not np.all(np.isfinite(solution)) or np.max(np.abs(left), initial=0.0) > 1e-8:
        raise SimulationError(
            "linearize(steady_state=True): no steady state (der(x) = 0) found near the start "
            "values; give the operating point as x, or start values nearer one")
    n_x = len(cm.states)
    return solution[:n_x], solution[n_x:]


def _names(given, known, what) -> list[str]:
    if isinstance(given, str):
        given = [given]
    index = set(known)
    unknown = [n for n in given if n not in index]
    if unknown:
        raise SimulationError(f"linearize({what}=...): the model has no "
                              f"{'input' if what == 'inputs' else 'variable'} "
                              f"{', '.join(map(repr, unknown[:5]))}")
    return list(given)
