"""A single-cylinder engine: slider-crank loop, gas force, flywheel and load.

The crank (radius 50 mm) carries a flywheel; the connecting rod (180 mm) drives the piston,
which slides along x on a prismatic joint. The loop world -> crank -> rod -> piston <- slider
<- world is closed where the slider meets the piston: the compiler cuts it there, detects
that it is planar, keeps the crank angle as the only state and solves the rod and piston
positions from the closure.

Combustion pushes the piston towards the crank in a pulse after top dead centre, once per
revolution (a two-stroke cycle; ``GasForce``: 4 kN peak, a Gaussian in the crank angle); a
viscous load on the crank (``rotational.Damper``, 0.05 N.m.s/rad) takes the power. From
1000 rpm the engine runs up to its steady state, where the crank speed rises and falls
within every revolution (the flywheel keeps this cyclic irregularity small).

Checks printed: the piston position against the closed form of the slider-crank,
``x = r cos(theta) + sqrt(l^2 - r^2 sin^2(theta))``, and the energy balance of the whole run:
the gas work equals the energy stored in the mechanism (kinetic and potential, computed here
from the closed-form kinematics of the crank state) plus the energy the load took. Run from
the repository root::

    python examples/engine.py

It prints the steady-state speed, its fluctuation and the checks, and writes ``engine.png``
(crank speed over the last revolution against the crank angle, with the gas force).
"""

from __future__ import annotations

import math
import os
import time

import casadi as ca
import numpy as np

import mbmodel as mb
from mbmodel.libraries import multibody as mbl
from mbmodel.libraries import rotational as rot
from mbmodel.libraries import translational as trans

CRANK, ROD = 0.05, 0.18            # crank radius and rod length [m]
M_CRANK, M_ROD, M_PISTON = 1.0, 0.6, 0.5
FLYWHEEL = 0.08                    # flywheel inertia about the crank axis [kg.m2]
F_PEAK = 4000.0                    # peak gas force [N]
PULSE_AT, PULSE_WIDTH = 0.35, 0.3  # crank angle of the peak after top dead centre, width [rad]
LOAD = 0.05                        # viscous load [N.m.s/rad]
W_START = 1000 * 2 * math.pi / 60  # 1000 rpm
T_END = 8.0


class GasForce(mb.Model):
    """The gas force on the piston as a function of the crank angle: a pulse after top dead
    centre (crank angle 0) every revolution, pushing the piston towards the crank. Senses
    the crank angle on ``crank`` (no torque) and acts on ``piston`` (a slider's axis
    flange: positive along the slider axis)."""

    F_peak = mb.Parameter(F_PEAK, unit="N", doc="Peak force")
    at = mb.Parameter(PULSE_AT, unit="rad", doc="Crank angle of the peak after top dead centre")
    width = mb.Parameter(PULSE_WIDTH, unit="rad", doc="Width of the pulse")
    crank = rot.Flange_a(doc="Senses the crank angle")
    piston = trans.Flange_b(doc="Acts on the piston")
    force = mb.Variable(0.0, unit="N", doc="Force on the piston towards the crank")
    work = mb.Variable(0.0, fixed=True, unit="J", doc="Work done on the piston")

    def equations(self):
        theta = self.crank.phi
        after_tdc = ca.atan2(ca.sin(theta), ca.cos(theta))  # crank angle in (-pi, pi]
        yield self.force == self.F_peak * ca.exp(-((after_tdc - self.at) / self.width) ** 2)
        yield self.crank.tau == 0
        yield self.piston.f == self.force  # drives the slider by -force along its axis
        yield mb.der(self.work) == -self.force * mb.der(self.piston.s)


class Load(rot.Damper):
    """The viscous load, counting the energy it takes."""

    work = mb.Variable(0.0, fixed=True, unit="J", doc="Energy taken")

    def equations(self):
        yield from super().equations()
        yield mb.der(self.work) == self.d * self.w_rel ** 2


class Engine(mb.Model):
    """Crank with flywheel, rod, piston on a slider; gas force and load on the crank."""

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        theta0 = 0.0
        self.world = mbl.World()
        self.crankshaft = mbl.Revolute(n=[0, 0, 1], use_axis_flange=True,
                                       phi=mb.Fixed(theta0), w=mb.Fixed(W_START))
        self.flywheel = mbl.Body(m=8.0, I_11=FLYWHEEL / 2, I_22=FLYWHEEL / 2, I_33=FLYWHEEL)
        self.crank = mbl.BodyShape(r=[CRANK, 0, 0], r_CM=[CRANK / 2, 0, 0], m=M_CRANK,
                                   I_11=1e-5, I_22=3e-4, I_33=3e-4)
        self.crank_pin = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(0.1), prescribed=False)
        self.rod = mbl.BodyShape(r=[ROD, 0, 0], r_CM=[ROD / 2, 0, 0], m=M_ROD,
                                 I_11=1e-5, I_22=1.8e-3, I_33=1.8e-3)
        self.wrist_pin = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(-0.1), prescribed=False)
        self.piston = mbl.Body(m=M_PISTON, I_11=1e-4, I_22=1e-4, I_33=1e-4)
        self.cylinder = mbl.Prismatic(n=[1, 0, 0], use_axis_flange=True, prescribed=False,
                                      s=mb.Guess(CRANK + ROD))
        self.gas = GasForce()
        self.load = Load(d=LOAD)

    def equations(self):
        c = mb.connect
        yield c(self.world.frame_b, self.crankshaft.frame_a, self.cylinder.frame_a)
        yield c(self.crankshaft.frame_b, self.flywheel.frame_a, self.crank.frame_a)
        yield c(self.crank.frame_b, self.crank_pin.frame_a)
        yield c(self.crank_pin.frame_b, self.rod.frame_a)
        yield c(self.rod.frame_b, self.wrist_pin.frame_a)
        yield c(self.wrist_pin.frame_b, self.piston.frame_a)
        yield c(self.cylinder.frame_b, self.piston.frame_a)   # closes the loop
        yield c(self.crankshaft.axis, self.load.flange_b, self.gas.crank)
        yield c(self.crankshaft.support, self.load.flange_a)
        yield c(self.cylinder.axis, self.gas.piston)


def piston_position(theta):
    return CRANK * np.cos(theta) + np.sqrt(ROD ** 2 - (CRANK * np.sin(theta)) ** 2)


def mechanical_energy(theta, w, g=9.81):
    """Kinetic and potential energy of flywheel, crank, rod and piston from the closed-form
    kinematics of the slider-crank (rod angle beta: sin(beta) = -r sin(theta) / l)."""
    beta = np.arcsin(-CRANK * np.sin(theta) / ROD)
    beta_d = -CRANK * np.cos(theta) * w / (ROD * np.cos(beta))
    pin = CRANK * np.exp(1j * theta)
    v_pin = 1j * w * pin
    v_rod = v_pin + 0.5 * ROD * 1j * beta_d * np.exp(1j * beta)
    v_piston = -CRANK * np.sin(theta) * w - ROD * np.sin(beta) * beta_d
    kinetic = (0.5 * (FLYWHEEL + 3e-4) * w ** 2 + 0.5 * M_CRANK * abs(0.5 * v_pin) ** 2
               + 0.5 * 1.8e-3 * beta_d ** 2 + 0.5 * M_ROD * abs(v_rod) ** 2
               + 0.5 * M_PISTON * v_piston ** 2)
    potential = g * (M_CRANK * 0.5 * pin.imag + M_ROD * (pin.imag + 0.5 * ROD * np.sin(beta)))
    return kinetic + potential


def main(plot=True, out_dir="."):
    """Run the engine up to its steady state; returns the speeds, checks and timings."""
    t0 = time.perf_counter()
    cm = mb.compile(Engine())
    t1 = time.perf_counter()
    res = cm.simulate(T_END, n_points=32001, rtol=1e-9, atol=1e-9)
    t2 = time.perf_counter()
    t, theta, w = res.t, res["crankshaft.phi"], res["crankshaft.w"]
    force = res["gas.force"]
    piston_error = float(np.abs(res["cylinder.s"] - piston_position(theta)).max())
    # the last whole revolutions (top dead centre to top dead centre)
    turns = np.floor(theta / (2 * math.pi))
    starts = [np.argmax(turns >= k) for k in range(int(turns[-1]) - 4, int(turns[-1]) + 1)]
    a, b = starts[0], starts[-1]
    last_a, last_b = starts[-2], starts[-1]
    gas_work, load_work = res["gas.work"], res["load.work"]
    mean_gas = (gas_work[b] - gas_work[a]) / (t[b] - t[a])
    mean_load = (load_work[b] - load_work[a]) / (t[b] - t[a])
    cycle_w = w[last_a:last_b + 1]
    mean_w = float(np.trapezoid(cycle_w, t[last_a:last_b + 1]) / (t[last_b] - t[last_a]))
    irregularity = float((cycle_w.max() - cycle_w.min()) / mean_w)
    # energy balance over the whole run: stored + taken by the load = done by the gas
    stored = mechanical_energy(theta, w)
    balance = float(np.abs(stored - stored[0] + load_work - gas_work).max() / gas_work[-1])

    print("Single-cylinder engine: slider-crank (r = 50 mm, l = 180 mm), flywheel "
          f"{FLYWHEEL} kg.m2, gas force pulse {F_PEAK / 1e3:.0f} kN, load {LOAD} N.m.s/rad")
    print(f"states chosen by the compiler: {', '.join(cm.states)}; solved by the DAE "
          f"integrator: {', '.join(cm.algebraic)}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms "
          f"({T_END} s, rtol 1e-9)\n")
    rows = [
        ("mean crank speed, last revolution [rpm]", f"{mean_w * 60 / (2 * math.pi):.1f}"),
        ("cyclic irregularity (w_max - w_min) / w_mean", f"{irregularity:.4f}"),
        ("mean gas power, last 4 revolutions [W]", f"{mean_gas:.2f}"),
        ("mean load power, last 4 revolutions [W]", f"{mean_load:.2f}"),
        ("energy balance: max |dE + load work - gas work| / gas work", f"{balance:.1e}"),
        ("piston position vs closed form [m]", f"{piston_error:.1e}"),
    ]
    print(mb.format_table(("quantity", "value"), rows, left=(0,)))
    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "engine.png")
        _plot(t, theta, w, force, last_a, last_b, path)
        print(f"plot written to {path}")
    return {"states": list(cm.states), "algebraic": list(cm.algebraic),
            "mean_speed_rpm": mean_w * 60 / (2 * math.pi), "irregularity": irregularity,
            "energy_balance": balance, "piston_error": piston_error,
            "mean_gas_power": float(mean_gas), "mean_load_power": float(mean_load),
            "result": res}


def _plot(t, theta, w, force, a, b, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 7))
    ax1, ax2 = fig.subplots(2, 1)
    ax1.plot(t, w * 60 / (2 * math.pi), lw=0.8)
    ax1.set_xlabel("time [s]")
    ax1.set_ylabel("crank speed [rpm]")
    ax1.set_title("Run-up from 1000 rpm to the steady state")
    angle = np.degrees(theta[a:b + 1] - theta[a])
    ax2.plot(angle, w[a:b + 1] * 60 / (2 * math.pi), label="crank speed")
    ax2.set_xlabel("crank angle after top dead centre [deg]")
    ax2.set_ylabel("crank speed [rpm]")
    ax2.set_title("One revolution at steady state")
    twin = ax2.twinx()
    twin.plot(angle, force[a:b + 1] / 1e3, "C3--", lw=1, label="gas force")
    twin.set_ylabel("gas force [kN]", color="C3")
    ax2.legend(loc="upper right", fontsize=8)
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
