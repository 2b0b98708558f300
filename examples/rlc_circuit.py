"""Series RLC circuit: an underdamped oscillator; natural frequency and damping measured
from the simulation against theory.

A 1 V step drives R = 5 Ohm, L = 1 mH and C = 1 uF in series. Theory::

    omega_0 = 1/sqrt(L*C)          (undamped natural frequency)
    zeta    = R/2*sqrt(C/L)        (damping ratio)
    v_C(t)  = V*(1 - exp(-sigma*t)*(cos(omega_d*t) + sigma/omega_d*sin(omega_d*t)))
    sigma   = zeta*omega_0,  omega_d = omega_0*sqrt(1 - zeta^2)

The script measures ``omega_d`` from the zero crossings of ``v_C - V`` and ``sigma`` from the
exponential decay of its extrema, recovers ``omega_0`` and ``zeta`` and compares them with
the formulas. Run from the repository root::

    python examples/rlc_circuit.py
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import electrical as el

R = 5.0      # Ohm
L = 1e-3     # H
C = 1e-6     # F
V = 1.0      # V
OMEGA_0 = 1.0 / math.sqrt(L * C)
ZETA = R / 2.0 * math.sqrt(C / L)
T_END = 2e-3  # about 10 periods


class SeriesRLC(mb.Model):
    """Step voltage -- resistor -- inductor -- capacitor -- ground."""

    source = el.StepVoltage(V=V, startTime=0.0)
    resistor = el.Resistor(R=R)
    inductor = el.Inductor(L=L, i=mb.Fixed(0.0))
    capacitor = el.Capacitor(C=C, v=mb.Fixed(0.0))
    ground = el.Ground()

    def equations(self):
        yield mb.connect(self.source.p, self.resistor.p)
        yield mb.connect(self.resistor.n, self.inductor.p)
        yield mb.connect(self.inductor.n, self.capacitor.p)
        yield mb.connect(self.capacitor.n, self.source.n, self.ground.p)


def analytic_vc(t):
    """Underdamped step response of the capacitor voltage [V]."""
    sigma = ZETA * OMEGA_0
    wd = OMEGA_0 * math.sqrt(1 - ZETA ** 2)
    t = np.asarray(t)
    return V * (1 - np.exp(-sigma * t) * (np.cos(wd * t) + sigma / wd * np.sin(wd * t)))


def measure_oscillation(t, e):
    """Damped frequency and decay rate of a decaying oscillation ``e(t)``.

    ``omega_d`` from the mean spacing of the zero crossings (half periods, linear
    interpolation); ``sigma`` from a least-squares line through ``log|e|`` at the extrema
    (each refined by a parabola through three samples). Returns
    ``(omega_d, sigma, extremum_times, extremum_values)``.
    """
    s = np.sign(e)
    k = np.where(s[:-1] * s[1:] < 0)[0]
    tz = t[k] - e[k] * (t[k + 1] - t[k]) / (e[k + 1] - e[k])
    omega_d = math.pi * (len(tz) - 1) / (tz[-1] - tz[0])
    a = np.abs(e)
    j = np.where((a[1:-1] > a[:-2]) & (a[1:-1] >= a[2:]))[0] + 1
    j = j[j > 1]  # skip the start (e = -V there, not an extremum of the oscillation)
    h = t[1] - t[0]
    ym, y0, yp = e[j - 1], e[j], e[j + 1]
    delta = 0.5 * (ym - yp) / (ym - 2 * y0 + yp)
    tp = t[j] + delta * h
    ep = y0 - 0.25 * (ym - yp) * delta
    slope, _ = np.polyfit(tp, np.log(np.abs(ep)), 1)
    return omega_d, -slope, tp, ep




def main(plot=True, out_dir="."):
    """Simulate the series RLC circuit, measure omega_0 and zeta, print and plot.

    Returns a dict with the states, measured and analytic ``omega_0``, ``zeta``, the first
    overshoot and the largest deviation from the analytic trajectory.
    """
    t0 = time.perf_counter()
    cm = mb.compile(SeriesRLC())
    t1 = time.perf_counter()
    res = cm.simulate(T_END, n_points=4001, rtol=1e-10, atol=1e-12)
    t2 = time.perf_counter()

    t, vc = res.t, res["capacitor.v"]
    omega_d, sigma, tp, ep = measure_oscillation(t, vc - V)
    omega_0 = math.hypot(omega_d, sigma)
    zeta = sigma / omega_0
    overshoot = float(ep[0] / V)
    overshoot_exact = math.exp(-math.pi * ZETA / math.sqrt(1 - ZETA ** 2))
    max_dev = float(np.max(np.abs(vc - analytic_vc(t))))

    print(f"Series RLC step response: R = {R:g} Ohm, L = {L:g} H, C = {C:g} F, V = {V:g} V")
    print(f"states chosen by the compiler: {', '.join(cm.states)}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms "
          f"({len(tp)} extrema analysed)\n")
    wd_exact = OMEGA_0 * math.sqrt(1 - ZETA ** 2)
    rows = [
        ("natural frequency omega_0 [rad/s]", f"{omega_0:.6f}", f"{OMEGA_0:.6f}",
         f"{abs(omega_0 - OMEGA_0) / OMEGA_0:.1e}", "1/sqrt(L*C)"),
        ("damping ratio zeta [-]", f"{zeta:.8f}", f"{ZETA:.8f}",
         f"{abs(zeta - ZETA) / ZETA:.1e}", "R/2*sqrt(C/L)"),
        ("damped frequency omega_d [rad/s]", f"{omega_d:.6f}", f"{wd_exact:.6f}",
         f"{abs(omega_d - wd_exact) / wd_exact:.1e}", "omega_0*sqrt(1-zeta^2)"),
        ("first overshoot (v_max - V)/V [-]", f"{overshoot:.8f}", f"{overshoot_exact:.8f}",
         f"{abs(overshoot - overshoot_exact) / overshoot_exact:.1e}",
         "exp(-pi*zeta/sqrt(1-zeta^2))"),
    ]
    print(mb.format_table(("quantity", "measured", "analytic", "rel. error", "formula"), rows,
                left=(0, 4)))
    print(f"\nmax |v_C - v_C,exact| over the run: {max_dev:.1e} V")

    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "rlc_circuit.png")
        _plot(res, tp, ep, sigma, path)
        print(f"plot written to {path}")

    return {"states": list(cm.states), "omega_0": omega_0, "omega_0_exact": OMEGA_0,
            "zeta": zeta, "zeta_exact": ZETA, "omega_d": omega_d, "overshoot": overshoot,
            "overshoot_exact": overshoot_exact, "max_deviation": max_dev, "result": res}


def _plot(res, tp, ep, sigma, path):
    from matplotlib.figure import Figure

    t_ms = res.t * 1e3
    fig = Figure(figsize=(8, 6.2))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.plot(t_ms, res["source.v"], label="source voltage")
    ax1.plot(t_ms, res["capacitor.v"], label="capacitor voltage v_C")
    env = V * np.exp(-sigma * res.t)
    ax1.plot(t_ms, V + env, "k:", lw=1, label="measured envelope V(1 ± exp(-sigma t))")
    ax1.plot(t_ms, V - env, "k:", lw=1)
    ax1.plot(tp * 1e3, V + ep, "o", ms=3, color="C3", label="extrema used for sigma")
    ax1.set_ylabel("voltage [V]")
    ax1.set_title(f"Series RLC step response: omega_0 = {OMEGA_0:.0f} rad/s, "
                  f"zeta = {ZETA:.4f}")
    ax1.legend(loc="upper right", fontsize=8)
    ax2.plot(t_ms, res["inductor.i"] * 1e3, color="C2", label="loop current (inductor.i)")
    ax2.set_ylabel("current [mA]")
    ax2.set_xlabel("time [ms]")
    ax2.legend(loc="upper right", fontsize=8)
    for a in (ax1, ax2):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
