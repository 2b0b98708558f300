"""A pendulum in Cartesian coordinates: an index-3 DAE that the compiler reduces.

No library components: the model is written with plain variables and equations. A point
mass ``m`` at ``(x, y)`` hangs on a massless rod of length ``L`` from the origin; the rod
force ``F`` (tension, positive pulling towards the pivot) is an unknown with no equation of
its own::

    der(x) = vx                  m*der(vx) = -F*x/L
    der(y) = vy                  m*der(vy) = -F*y/L - m*g
    x^2 + y^2 = L^2              (the constraint: index 3)

The compiler differentiates the constraint twice (Pantelides), chooses states by dummy
derivatives and keeps the constraint itself in the equations, so it holds to the
integration tolerance instead of drifting. Which of x and y is the better state depends
on where the mass is (x cannot give y near y = 0): released above the horizontal, the
simulation switches between them at run time (``res.state_switches``). Started at 30 degrees from rest: ``x`` and ``vx``
are fixed initial conditions, ``y`` only a guess (the constraint determines it; the guess
picks the lower branch). Run from the repository root::

    python examples/cartesian_pendulum.py

It prints the states chosen, the constraint error, the energy drift and the period against
the exact period of the nonlinear pendulum, and writes ``cartesian_pendulum.png``.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
from scipy.special import ellipk

import mbmodel as mb

M = 1.0                      # kg
LENGTH = 1.0                 # m
G = 9.81                     # m/s2
THETA0 = math.radians(30.0)  # initial angle from the vertical
T_END = 5.0


class CartesianPendulum(mb.Model):
    """Point mass on a rigid massless rod, in x (horizontal) and y (vertical, up)."""

    m = mb.Parameter(M, unit="kg", min=0.0, doc="mass")
    L = mb.Parameter(LENGTH, unit="m", min=0.0, doc="rod length")
    g = mb.Parameter(G, unit="m/s2", doc="gravity")

    x = mb.Variable(LENGTH * math.sin(THETA0), fixed=True, unit="m", doc="horizontal position")
    y = mb.Variable(-LENGTH * math.cos(THETA0), unit="m",
                    doc="vertical position (start value only a guess)")
    vx = mb.Variable(0.0, fixed=True, unit="m/s", doc="horizontal velocity")
    vy = mb.Variable(0.0, unit="m/s", doc="vertical velocity")
    F = mb.Variable(M * G, unit="N", doc="rod force (tension)")

    def equations(self):
        yield mb.der(self.x) == self.vx
        yield mb.der(self.y) == self.vy
        yield self.m * mb.der(self.vx) == -self.F * self.x / self.L
        yield self.m * mb.der(self.vy) == -self.F * self.y / self.L - self.m * self.g
        yield self.x ** 2 + self.y ** 2 == self.L ** 2


def exact_period(theta0=THETA0, length=LENGTH, g=G):
    """Period of the nonlinear pendulum: ``4*sqrt(L/g)*K(sin^2(theta0/2))``."""
    return 4.0 * math.sqrt(length / g) * float(ellipk(math.sin(theta0 / 2) ** 2))


def measured_period(t, x):
    """Period from the zero crossings of ``x`` (half a period apart; linear
    interpolation, accurate because ``x'' = 0`` where ``x = 0``)."""
    k = np.where(np.sign(x[:-1]) * np.sign(x[1:]) < 0)[0]
    tz = t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k])
    return 2.0 * (tz[-1] - tz[0]) / (len(tz) - 1)




def main(plot=True, out_dir="."):
    """Compile and simulate the pendulum for 5 s, print the summary, save the plot.

    Returns a dict with the states, the largest constraint error, the relative energy drift,
    and the measured and exact periods.
    """
    t0 = time.perf_counter()
    cm = mb.compile(CartesianPendulum())
    t1 = time.perf_counter()
    res = cm.simulate(T_END, n_points=2001, rtol=1e-10, atol=1e-12)
    t2 = time.perf_counter()

    t, x, y, vx, vy, F = (res[n] for n in ("t", "x", "y", "vx", "vy", "F"))
    constraint = x ** 2 + y ** 2 - LENGTH ** 2
    energy = 0.5 * M * (vx ** 2 + vy ** 2) + M * G * y
    # Drift relative to the energy exchanged in a swing (independent of the potential's
    # zero level): m*g*L*(1 - cos(theta0)).
    swing_energy = M * G * LENGTH * (1 - math.cos(THETA0))
    drift = float(np.max(np.abs(energy - energy[0])) / swing_energy)
    max_constraint = float(np.max(np.abs(constraint)))
    period, period_exact = measured_period(t, x), exact_period()
    f0_exact = M * G * math.cos(THETA0)  # rod force at rest at the initial angle

    print(f"Cartesian pendulum (index 3): m = {M} kg, L = {LENGTH} m, g = {G} m/s2, "
          f"released at {math.degrees(THETA0):.0f} deg")
    print(f"states chosen by the compiler: {', '.join(cm.states)}")
    print(f"algebraic (solved by the DAE integrator): {', '.join(cm.algebraic) or 'none'}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms "
          f"(5 s, rtol 1e-10, atol 1e-12)\n")
    rows = [
        ("initial y [m] (from the constraint)", f"{y[0]:.12f}",
         f"{-LENGTH * math.cos(THETA0):.12f}",
         f"{abs(y[0] + LENGTH * math.cos(THETA0)) / (LENGTH * math.cos(THETA0)):.1e}"),
        ("initial rod force F [N]", f"{F[0]:.10f}", f"{f0_exact:.10f}",
         f"{abs(F[0] - f0_exact) / f0_exact:.1e}"),
        ("period [s]", f"{period:.10f}", f"{period_exact:.10f}",
         f"{abs(period - period_exact) / period_exact:.1e}"),
        ("max |x^2 + y^2 - L^2| [m2]", f"{max_constraint:.1e}", "0", ""),
        ("max |E - E0| / (m g L (1 - cos theta0))", f"{drift:.1e}", "0", ""),
    ]
    print(mb.format_table(("quantity", "simulated", "exact", "rel. error"), rows))

    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "cartesian_pendulum.png")
        _plot(t, x, y, F, constraint, (energy - energy[0]) / swing_energy, path)
        print(f"plot written to {path}")

    return {"states": list(cm.states), "algebraic": list(cm.algebraic),
            "max_constraint_error": max_constraint, "energy_drift": drift,
            "period": period, "period_exact": period_exact, "y0": float(y[0]),
            "F0": float(F[0]), "result": res}


def _plot(t, x, y, F, constraint, rel_energy, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 8))
    ax1, ax2, ax3 = fig.subplots(3, 1, sharex=True)
    ax1.plot(t, x, label="x (horizontal)")
    ax1.plot(t, y, label="y (vertical)")
    ax1.set_ylabel("position [m]")
    ax1.set_title("Cartesian pendulum (index-3 DAE), released at 30 deg")
    ax1.set_ylim(-1.1, 0.9)
    ax1b = ax1.twinx()
    ax1b.plot(t, F, color="C2", lw=1, alpha=0.6, label="rod force F (right axis)")
    ax1b.set_ylabel("rod force [N]", color="C2")
    ax1b.tick_params(axis="y", colors="C2")
    ax1b.set_ylim(F.min() - 0.5, F.max() + 2.0)
    handles = ax1.get_legend_handles_labels()[0] + ax1b.get_legend_handles_labels()[0]
    ax1.legend(handles, [h.get_label() for h in handles], loc="upper center", fontsize=8,
               ncol=3)
    ax2.semilogy(t, np.maximum(np.abs(constraint), 1e-18), color="C3",
                 label="|x^2 + y^2 - L^2|")
    ax2.set_ylabel("constraint error [m²]")
    ax2.set_ylim(1e-18, 1e-6)
    ax2.legend(loc="upper right", fontsize=8)
    ax3.plot(t, rel_energy, color="C4", label="(E - E0) / (m g L (1 - cos theta0))")
    ax3.set_ylabel("rel. energy drift [-]")
    ax3.set_xlabel("time [s]")
    ax3.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    ax3.legend(loc="upper right", fontsize=8)
    for a in (ax1, ax2, ax3):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
