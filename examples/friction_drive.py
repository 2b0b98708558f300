"""Friction drive: a DC motor drives a load through a clutch, the load turns in a bearing
with stick–slip friction (MSL ``Clutch`` and ``BearingFriction``, switching at events).

The clutch is pressed from 0.5 s to 2 s (a pulse of 15 % of 10 s). It slips until the motor and load turn at the same
speed, then locks; the load's bearing holds it still until the torque exceeds the static
peak. When the clutch opens, the motor runs free again and friction brings the load to a
stop, where the bearing sticks.

Run it from the repository root::

    python examples/friction_drive.py

It prints the events (clutch engaging, locking and opening; the bearing breaking away and
sticking) and writes ``friction_drive.png`` (speeds, clutch torque, friction modes).
"""

from __future__ import annotations

import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import blocks as bl
from mbmodel.libraries import electrical as el
from mbmodel.libraries import rotational as rot


class FrictionDrive(mb.Model):
    """12 V DC motor -- clutch -- load inertia in a bearing with stick–slip friction."""

    source = el.ConstantVoltage(V=12.0)
    resistor = el.Resistor(R=0.5)
    inductor = el.Inductor(L=0.005, i=mb.Fixed(0.0))
    emf = el.EMF(k=0.5)
    ground = el.Ground()
    rotor = rot.Inertia(J=0.02, phi=mb.Fixed(0.0), w=mb.Fixed(0.0))
    load = rot.Inertia(J=0.5, phi=mb.Fixed(0.0), w=mb.Fixed(0.0))
    press = bl.Pulse(amplitude=1.0, width=15.0, period=10.0, startTime=0.5)

    def __init__(self):
        super().__init__()
        self.clutch = rot.Clutch(mu_pos=[[0.0, 0.4], [100.0, 0.3]], peak=1.2, fn_max=20.0)
        self.bearing = rot.BearingFriction(tau_pos=[[0.0, 1.5], [100.0, 2.5]], peak=1.3)

    def equations(self):
        yield mb.connect(self.source.p, self.resistor.p)
        yield mb.connect(self.resistor.n, self.inductor.p)
        yield mb.connect(self.inductor.n, self.emf.p)
        yield mb.connect(self.emf.n, self.source.n, self.ground.p)
        yield mb.connect(self.emf.flange, self.rotor.flange_a)
        yield mb.connect(self.rotor.flange_b, self.clutch.flange_a)
        yield mb.connect(self.clutch.flange_b, self.load.flange_a)
        yield mb.connect(self.load.flange_b, self.bearing.flange_a)
        yield mb.connect(self.press.y, self.clutch.f_normalized)


def main(plot=True, out_dir="."):
    """Simulate 8 s, print the events, optionally plot. Returns a dict with the states,
    the events and the result."""
    t0 = time.perf_counter()
    cm = mb.compile(FrictionDrive())
    t1 = time.perf_counter()
    res = cm.simulate(8.0, n_points=4001)
    t2 = time.perf_counter()
    print("Friction drive: DC motor -- clutch (pressed 0.5 s to 2 s) -- load in a bearing "
          "with stick-slip friction")
    print(f"states chosen by the compiler: {', '.join(cm.states)}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms\n")
    names = {1: "forward", 0: "stuck", -1: "backward", 2: "free", 3: "-"}
    rows = []  # the modes at the first output time after each event
    for ev in res.events:
        after = min(int(np.searchsorted(res.t, ev.time, side="right")), len(res.t) - 1)
        rows.append((f"{ev.time:.6f}", ev.causes[0][:48],
                     names[int(res["clutch.mode"][after])],
                     names[int(res["bearing.mode"][after])]))
    print(mb.format_table(("t [s]", "cause", "clutch", "bearing"), rows))

    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "friction_drive.png")
        fig = res.plot([["rotor.w", "load.w"], ["clutch.tau", "bearing.tau"],
                        ["clutch.mode", "bearing.mode"]],
                       title="DC motor, clutch and stick-slip bearing friction")
        fig.axes[2].set_ylabel("mode (1 fwd, 0 stuck, 2 free)")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        import matplotlib.pyplot as plt
        plt.close(fig)
        print(f"plot written to {path}")
    return {"states": list(cm.states), "events": res.events, "result": res}


if __name__ == "__main__":
    main()
