"""RC circuit: step response of a first-order low-pass against the analytic solution.

A 1 V step source charges a 1 uF capacitor through a 1 kOhm resistor (time constant
tau = R*C = 1 ms). The capacitor voltage is ``v_C(t) = V*(1 - exp(-t/tau))``.

Run it from the repository root::

    python examples/rc_circuit.py

It prints the state chosen by the compiler and ``v_C`` at ``tau``, ``3*tau`` and ``5*tau``
compared with the analytic values, and writes ``rc_circuit.png``.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import electrical as el

R = 1e3      # Ohm
C = 1e-6     # F
V = 1.0      # V (step height)
TAU = R * C  # s


class RC(mb.Model):
    """Step voltage source -- resistor -- capacitor to ground."""

    source = el.StepVoltage(V=V, startTime=0.0)
    resistor = el.Resistor(R=R)
    capacitor = el.Capacitor(C=C, v=mb.Fixed(0.0))
    ground = el.Ground()

    def equations(self):
        yield mb.connect(self.source.p, self.resistor.p)
        yield mb.connect(self.resistor.n, self.capacitor.p)
        yield mb.connect(self.capacitor.n, self.source.n, self.ground.p)


def analytic_vc(t):
    """Capacitor voltage of the RC step response [V]."""
    return V * (1.0 - np.exp(-np.asarray(t) / TAU))




def main(plot=True, out_dir="."):
    """Compile and simulate the RC circuit, print a summary, optionally save the plot.

    Returns a dict with the states, ``v_C`` at 1, 3 and 5 time constants (simulated and
    analytic) and the largest relative error over the whole trajectory.
    """
    t0 = time.perf_counter()
    cm = mb.compile(RC())
    t1 = time.perf_counter()
    # The grid contains tau, 3 tau and 5 tau exactly (multiples of tau/100).
    times = np.arange(0, 501) * (TAU / 100)
    res = cm.simulate(5 * TAU, times=times, rtol=1e-10, atol=1e-12)
    t2 = time.perf_counter()

    vc = res["capacitor.v"]
    exact = analytic_vc(res.t)
    # Relative error against the final value V (the analytic v_C starts at 0).
    max_err = float(np.max(np.abs(vc - exact)) / V)

    print(f"RC circuit step response: R = {R:g} Ohm, C = {C:g} F, tau = R*C = {TAU:g} s")
    print(f"states chosen by the compiler: {', '.join(cm.states)}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms\n")
    rows, samples = [], {}
    for n in (1, 3, 5):
        k = 100 * n
        sim, ana = float(vc[k]), float(exact[k])
        samples[n] = (sim, ana)
        rows.append((f"v_C({n} tau) [V]", f"{sim:.10f}", f"{ana:.10f}",
                     f"{abs(sim - ana) / abs(ana):.1e}"))
    i_tau, i_exact = float(res["resistor.i"][100]), V / R * math.exp(-1.0)
    rows.append(("i(1 tau) [A]", f"{i_tau:.10f}", f"{i_exact:.10f}",
                 f"{abs(i_tau - i_exact) / i_exact:.1e}"))
    print(mb.format_table(("quantity", "simulated", "analytic", "rel. error"), rows))
    print(f"\nmax |v_C - v_C,exact| / V over the run: {max_err:.1e}")

    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "rc_circuit.png")
        fig = res.plot([["source.v", "capacitor.v"], ["resistor.i"]],
                       title="RC step response (R = 1 kOhm, C = 1 uF, tau = 1 ms)")
        top, bottom = fig.axes
        top.plot(res.t, exact, "k:", lw=2, label="analytic v_C = V(1 - exp(-t/tau))")
        top.legend(loc="lower right", fontsize=8)
        top.set_ylabel("voltage [V]")
        bottom.set_ylabel("current [A]")
        for n in (1, 3):
            top.axvline(n * TAU, color="0.6", lw=0.8, ls="--")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        import matplotlib.pyplot as plt
        plt.close(fig)
        print(f"plot written to {path}")

    return {"states": list(cm.states), "v_tau": samples[1], "v_3tau": samples[3],
            "v_5tau": samples[5], "max_rel_error": max_err, "result": res}


if __name__ == "__main__":
    main()
