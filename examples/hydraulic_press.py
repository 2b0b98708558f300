"""Hydraulic press: pump, relief valve, 4/3 directional valve, cylinder and workpiece.

A fixed-displacement pump (10 cm³/rev at 1430 rpm, about 14 L/min) feeds a pressure line
limited by a relief valve cracking at 150 bar. A 4/3 spool valve sends the flow to a
double-acting cylinder (50 mm bore, 28 mm rod) that drives a 100 kg ram down onto a
workpiece (a stiff contact 0.2 m out), holds, and retracts. While the ram presses the
workpiece the pump flow has nowhere to go: the line pressure rises to the relief valve's
setting and the relief valve returns the flow to the tank (its opening and closing are
events, as are the spool's moves).

Run it from the repository root::

    python examples/hydraulic_press.py

It prints the phases (approach speed against the pump flow over the piston area, press
force against the relief pressure times the piston area) and writes ``hydraulic_press.png``
(pressures, flows, ram position).
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import blocks as bl
from mbmodel.libraries import hydraulics as hy
from mbmodel.libraries import rotational as rot
from mbmodel.libraries import translational as tr

W_PUMP = 1430 * 2 * math.pi / 60          # rad/s
D_PUMP = 10e-6 / (2 * math.pi)            # 10 cm³ per revolution
BORE, ROD = 0.050, 0.028
A_PISTON = math.pi * BORE ** 2 / 4
A_ANNULUS = A_PISTON - math.pi * ROD ** 2 / 4
P_RELIEF = 150e5
P_HYST = 2e5   # the relief valve reseats 2 bar below its cracking pressure
CONTACT = 0.2                              # m: where the ram meets the workpiece


class Press(mb.Model):
    """Pump -> pressure line (relief valve) -> spool valve -> cylinder -> ram -> workpiece."""

    oil = hy.Fluid(air=0.005)  # ISO VG 46 with 0.5 % undissolved air, the whole circuit
    motor = rot.Speed()
    speed = bl.Constant(k=W_PUMP)
    pump = hy.Pump(D=D_PUMP, leakage=1e-12)
    suction = hy.Tank()
    line = hy.FixedVolume(V=0.5e-3, p=mb.Fixed(1.01325e5))   # hose and manifold
    relief = hy.ReliefValve(A=3e-5, p_crack=P_RELIEF, p_range=10e5, p_hyst=P_HYST)
    relief_tank = hy.Tank()
    spool = hy.SpoolValve(A=4e-5, overlap=0.05)
    return_tank = hy.Tank()
    cylinder = hy.Cylinder(A_a=A_PISTON, A_b=A_ANNULUS, stroke=0.3, x=mb.Fixed(0.0),
                           p_a=mb.Fixed(1.01325e5), p_b=mb.Fixed(1.01325e5),
                           V_dead_a=5e-5, V_dead_b=5e-5)
    ram = tr.Mass(m=100.0, v=mb.Fixed(0.0))
    workpiece = tr.ElastoGap(c=5e7, d=2e4, s_rel0=0.0)  # touches when compressed
    anvil = tr.Fixed(s0=CONTACT)
    # spool (moving in 40 ms): centre, extend (0.1 s), hold (2.4 s), retract (3.0 s)
    command = bl.TimeTable(table=[[0.0, 0.0], [0.1, 0.0], [0.14, 1.0], [2.4, 1.0],
                                  [2.44, 0.0], [3.0, 0.0], [3.04, -1.0], [5.0, -1.0]])

    def equations(self):
        yield mb.connect(self.speed.y, self.motor.w_ref)
        yield mb.connect(self.motor.flange, self.pump.flange)
        yield mb.connect(self.suction.port, self.pump.port_a)
        yield mb.connect(self.pump.port_b, self.line.port, self.relief.port_a,
                         self.spool.port_P)
        yield mb.connect(self.relief.port_b, self.relief_tank.port)
        yield mb.connect(self.spool.port_T, self.return_tank.port)
        yield mb.connect(self.spool.port_A, self.cylinder.port_a)
        yield mb.connect(self.spool.port_B, self.cylinder.port_b)
        yield mb.connect(self.command.y, self.spool.x)
        yield mb.connect(self.cylinder.flange, self.ram.flange_a)
        # the workpiece (on the anvil at CONTACT) pushes back once the ram reaches it
        yield mb.connect(self.ram.flange_b, self.workpiece.flange_a)
        yield mb.connect(self.workpiece.flange_b, self.anvil.flange)


def main(plot=True, out_dir="."):
    """Simulate 4.5 s, print the phases and optionally plot. Returns a dict of figures."""
    t0 = time.perf_counter()
    cm = mb.compile(Press())
    t1 = time.perf_counter()
    res = cm.simulate(4.5, n_points=4501)
    t2 = time.perf_counter()
    print(f"Hydraulic press: pump {W_PUMP * 60 / (2 * math.pi):.0f} rpm x "
          f"{D_PUMP * 2 * math.pi * 1e6:.0f} cm³, relief {P_RELIEF / 1e5:.0f} bar, "
          f"cylinder {BORE * 1e3:.0f}/{ROD * 1e3:.0f} mm")
    print(f"states chosen by the compiler: {', '.join(cm.states)}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms, "
          f"{len(res.events) - 1} events\n")

    t, x, v = res.t, res["cylinder.x"], res["ram.v"]
    pump_flow = D_PUMP * W_PUMP
    approach = (t > 0.6) & (t < 1.2)
    touch = t[np.argmax(x >= CONTACT)]
    pressing = (t > 2.0) & (t < 2.4)
    retract = (t > 3.6) & (t < 4.0)
    line_p, cyl_p = res["line.p"], res["cylinder.p_a"]
    press_force = float(np.mean(res["workpiece.f"][pressing]))
    rows = [
        ("approach speed [m/s]", f"{np.mean(v[approach]):.4f}",
         f"{pump_flow / A_PISTON:.4f}", "pump flow / piston area (less leakage)"),
        ("contact at [s]", f"{touch:.3f}", "", f"ram reaches {CONTACT} m"),
        ("line pressure pressing [bar]", f"{np.mean(line_p[pressing]) / 1e5:.1f}",
         f"{(P_RELIEF - P_HYST) / 1e5:.0f}..{(P_RELIEF - P_HYST + 10e5) / 1e5:.0f}",
         "relief valve open: its closing characteristic"),
        ("press force [kN]", f"{-press_force / 1e3:.1f}",
         f"{(np.mean(cyl_p[pressing]) - 1.01325e5) * A_PISTON / 1e3:.1f}",
         "(p_a - p_amb)*A_a: chamber b and the rod end at ambient"),
        ("relief flow pressing [L/min]",
         f"{np.mean(res['relief.q'][pressing]) * 6e4:.2f}",
         f"{np.mean(res['pump.q'][pressing]) * 6e4:.2f}",
         "the pump's delivery at suction density (its leakage taken): the spool's edges "
         "leak 0.18 L/min, and oil at 150 bar is 1.5 % denser"),
        ("retract speed [m/s]", f"{np.mean(v[retract]):.4f}",
         f"{-pump_flow / A_ANNULUS:.4f}", "pump flow / annulus area"),
    ]
    print(mb.format_table(("quantity", "simulated", "expected", "note"), rows))
    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "hydraulic_press.png")
        fig = res.plot([["line.p", "cylinder.p_a", "cylinder.p_b"],
                        ["relief.m_flow", "cylinder.port_a.m_flow"], ["cylinder.x"]],
                       title="Hydraulic press: extend, press, hold, retract")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        import matplotlib.pyplot as plt
        plt.close(fig)
        print(f"plot written to {path}")
    return {"states": list(cm.states), "result": res, "touch": touch,
            "press_force": -press_force, "approach_speed": float(np.mean(v[approach])),
            "retract_speed": float(np.mean(v[retract])),
            "line_pressure": float(np.mean(line_p[pressing])),
            "cylinder_force": float(np.mean(cyl_p[pressing]) * A_PISTON
                                    - np.mean(res["cylinder.p_b"][pressing]) * A_ANNULUS
                                    - 1.01325e5 * (A_PISTON - A_ANNULUS))}


if __name__ == "__main__":
    main()
