"""Fifth-order Cauer (elliptic) low-pass filter, after the Modelica Standard Library
example ``Modelica.Electrical.Analog.Examples.CauerLowPassAnalog``.

Circuit (node n1 between R1 and the first ladder section, n3 the output)::

    V --R1-- n1 ---[C2 || L1]--- n2 ---[C4 || L2]--- n3 --+
             |                   |                   |    |
             C1                  C3                  C5   R2
             |                   |                   |    |
    G -------+-------------------+-------------------+----+

The seven storage elements (5 capacitors, 2 inductors) do not give seven states: the
capacitor-only loops C1-C2-C3 and C3-C4-C5 make two capacitor voltages dependent on the
others, so the compiler (index reduction) has to pick exactly five states.

Parameters are the MSL ones (``c2 = 1/(1.704992^2*l1)``, ``c4 = 1/(1.179945^2*l2)`` are
parameter bindings, so changing ``l1``/``l2`` retunes the resonators). The step of 1 V at
t = 1 s drives the filter; the output is the voltage over R2. The result is checked against
the exact solution of the circuit's linear ODE (matrix exponential, derived by hand from the
node equations). Run from the repository root::

    python examples/cauer_filter.py
"""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.linalg

import mbmodel as mb
from mbmodel.libraries import electrical as el

T_END = 60.0
T_STEP = 1.0


class CauerLowPass(mb.Model):
    """MSL CauerLowPassAnalog: step source, R1, five capacitors, two inductors, R2."""

    l1 = mb.Parameter(1.304, unit="H", doc="filter coefficient l1")
    l2 = mb.Parameter(0.8586, unit="H", doc="filter coefficient l2")
    c1 = mb.Parameter(1.072, unit="F", doc="filter coefficient c1")
    c3 = mb.Parameter(1.682, unit="F", doc="filter coefficient c3")
    c5 = mb.Parameter(0.7262, unit="F", doc="filter coefficient c5")

    G = el.Ground()
    V = el.StepVoltage(V=1.0, startTime=T_STEP, offset=0.0)
    R1 = el.Resistor(R=1.0)
    R2 = el.Resistor(R=1.0)

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        # Components whose parameters are bound to the model's parameters are created here
        # (the class body cannot refer to self).
        self.c2 = mb.Parameter(1 / (1.704992 ** 2 * self.l1), unit="F",
                               doc="filter coefficient c2")
        self.c4 = mb.Parameter(1 / (1.179945 ** 2 * self.l2), unit="F",
                               doc="filter coefficient c4")
        self.C1 = el.Capacitor(C=self.c1, v=mb.Fixed(0.0))
        self.C2 = el.Capacitor(C=self.c2)
        self.C3 = el.Capacitor(C=self.c3, v=mb.Fixed(0.0))
        self.C4 = el.Capacitor(C=self.c4)
        self.C5 = el.Capacitor(C=self.c5, v=mb.Fixed(0.0))
        self.L1 = el.Inductor(L=self.l1, i=mb.Fixed(0.0))
        self.L2 = el.Inductor(L=self.l2, i=mb.Fixed(0.0))

    def equations(self):
        c = mb.connect
        yield c(self.V.p, self.R1.p)
        yield c(self.R1.n, self.C1.p, self.C2.p, self.L1.p)                 # node n1
        yield c(self.C2.n, self.L1.n, self.C3.p, self.C4.p, self.L2.p)      # node n2
        yield c(self.C4.n, self.L2.n, self.C5.p, self.R2.p)                 # node n3 (output)
        yield c(self.G.p, self.V.n, self.C1.n, self.C3.n, self.C5.n, self.R2.n)


def msl_values(l1=1.304, l2=0.8586, c1=1.072, c3=1.682, c5=0.7262):
    """The element values of the MSL example (c2, c4 from their bindings)."""
    return dict(l1=l1, l2=l2, c1=c1, c2=1 / (1.704992 ** 2 * l1), c3=c3,
                c4=1 / (1.179945 ** 2 * l2), c5=c5, r1=1.0, r2=1.0)


def exact_output(t, p=None):
    """Exact output voltage v(n3) of the circuit for the 1 V step at T_STEP.

    Independent of mbmodel: node equations ``M*dv/dt = ...`` in the node voltages
    ``v1, v2, v3`` and inductor currents ``iL1, iL2`` give ``dx/dt = A x + b u``; with
    ``x(T_STEP) = 0`` and a unit step, ``x(t) = A^-1 (exp(A (t - T_STEP)) - I) b``.
    """
    p = p or msl_values()
    c1, c2, c3, c4, c5 = (p[k] for k in ("c1", "c2", "c3", "c4", "c5"))
    M = np.array([[c1 + c2, -c2, 0.0],
                  [-c2, c2 + c3 + c4, -c4],
                  [0.0, -c4, c4 + c5]])
    # Right-hand sides of the node equations (currents into the capacitor network):
    # n1: (u - v1)/R1 - iL1;  n2: iL1 - iL2;  n3: iL2 - v3/R2
    K = np.array([[-1 / p["r1"], 0, 0, -1, 0],
                  [0, 0, 0, 1, -1],
                  [0, 0, -1 / p["r2"], 0, 1]])
    Minv = np.linalg.inv(M)
    A = np.zeros((5, 5))
    A[:3] = Minv @ K
    A[3] = [1 / p["l1"], -1 / p["l1"], 0, 0, 0]     # L1 diL1/dt = v1 - v2
    A[4] = [0, 1 / p["l2"], -1 / p["l2"], 0, 0]     # L2 diL2/dt = v2 - v3
    b = np.zeros(5)
    b[:3] = Minv @ np.array([1 / p["r1"], 0, 0])
    Ainv_b = np.linalg.solve(A, b)
    out = np.zeros(len(t))
    for k, tk in enumerate(t):
        if tk > T_STEP:
            out[k] = (scipy.linalg.expm(A * (tk - T_STEP)) @ Ainv_b - Ainv_b)[2]
    return out


def _describe(name):
    """'C1.v' -> 'voltage of capacitor C1', 'L1.i' -> 'current of inductor L1'."""
    element = name.split(".")[0]
    return (f"voltage of capacitor {element}" if element.startswith("C")
            else f"current of inductor {element}")




def main(plot=True, out_dir="."):
    """Compile and simulate the Cauer filter, compare with the exact solution, plot.

    Returns a dict with the states, the number of storage elements, the output trajectory
    error against the exact solution and the output at the end.
    """
    t0 = time.perf_counter()
    cm = mb.compile(CauerLowPass())
    t1 = time.perf_counter()
    res = cm.simulate(T_END, n_points=1201, rtol=1e-10, atol=1e-12)
    t2 = time.perf_counter()

    v_out = res["R2.p.v"]
    exact = exact_output(res.t)
    err = np.abs(v_out - exact)
    storage = ["C1.v", "C2.v", "C3.v", "C4.v", "C5.v", "L1.i", "L2.i"]
    # What does each state stand for? A storage quantity itself, or one with the same
    # trajectory (e.g. a node potential equal to a grounded capacitor's voltage).
    meaning = {}
    for s in cm.states:
        same = [q for q in storage if q != s and np.allclose(res[q], res[s], rtol=0,
                                                             atol=1e-12)]
        meaning[s] = (_describe(s) if s in storage else
                      f"same as {', '.join(same)}" if same else "")
    represented = set(cm.states) | {q for s in cm.states for q in storage
                                    if np.allclose(res[q], res[s], rtol=0, atol=1e-12)}
    dependent = [q for q in storage if q not in represented]
    # The loop constraints themselves: v_C2 = v_C1 - v_C3 and v_C4 = v_C3 - v_C5.
    loop_residual = max(np.max(np.abs(res["C2.v"] - (res["C1.v"] - res["C3.v"]))),
                        np.max(np.abs(res["C4.v"] - (res["C3.v"] - res["C5.v"]))))

    print("Cauer low-pass filter (MSL CauerLowPassAnalog), 1 V step at t = 1 s")
    print(f"storage elements: {len(storage)} (5 capacitors, 2 inductors); capacitor-only "
          f"loops C1-C2-C3 and C3-C4-C5")
    print(f"states chosen by the compiler: {len(cm.states)}")
    for s in cm.states:
        print(f"  {s:<10} {meaning[s]}")
    print(f"dependent storage quantities (not states): {', '.join(dependent) or 'none'}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms\n")

    k_peak = int(np.argmax(v_out))
    dc_gain = 1.0 / 2.0  # R2/(R1 + R2): capacitors open, inductors short at DC
    rows = [
        ("number of states", f"{len(cm.states)}", "5", ""),
        ("peak output [V]", f"{v_out[k_peak]:.8f}", f"{exact[k_peak]:.8f}",
         f"at t = {res.t[k_peak]:.2f} s"),
        ("output at t = 60 s [V]", f"{v_out[-1]:.8f}", f"{exact[-1]:.8f}",
         f"(DC gain R2/(R1+R2) = {dc_gain})"),
        ("max |v_out - exact| [V]", f"{err.max():.1e}", "0", "over 0..60 s"),
        ("max loop residual [V]", f"{loop_residual:.1e}", "0",
         "v_C2 - (v_C1 - v_C3), v_C4 - (v_C3 - v_C5)"),
    ]
    print(mb.format_table(("quantity", "mbmodel", "exact", "note"), rows, left=(0, 3)))

    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "cauer_filter.png")
        _plot(res, exact, path)
        print(f"plot written to {path}")

    return {"states": list(cm.states), "n_states": len(cm.states),
            "n_storage": len(storage), "dependent": dependent,
            "loop_residual": float(loop_residual), "max_error": float(err.max()),
            "v_out_end": float(v_out[-1]), "v_peak": float(v_out[k_peak]), "result": res}


def _plot(res, exact, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 6.2))
    ax1, ax2 = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    ax1.plot(res.t, res["V.v"], label="input voltage V.v")
    ax1.plot(res.t, res["R2.p.v"], label="output voltage R2.p.v")
    ax1.plot(res.t, exact, "k:", lw=1.5, label="exact solution (matrix exponential)")
    ax1.set_ylabel("voltage [V]")
    ax1.set_title("5th-order Cauer low-pass filter (MSL CauerLowPassAnalog): step response")
    ax1.legend(loc="lower right", fontsize=8)
    ax2.semilogy(res.t, np.maximum(np.abs(res["R2.p.v"] - exact), 1e-16), color="C3",
                 label="|output - exact|")
    ax2.set_ylabel("error [V]")
    ax2.set_ylim(bottom=1e-14)
    ax2.set_xlabel("time [s]")
    ax2.legend(loc="lower right", fontsize=8)
    for a in (ax1, ax2):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
