"""Excavator boom: an electric motor drives a pump; a double-acting cylinder raises a
two-link multibody boom.

A DC motor (150 V) turns a fixed-displacement pump (8 cm³/rev) whose line is limited by a
relief valve at 200 bar. A 4/3 spool valve sends the flow to a cylinder (63 mm bore, 35 mm
rod) that acts along the line between an anchor on the base and a bracket on the boom: a
multibody ``LineForceWithFlanges`` carries the 1-D cylinder's force into the mechanism, so
forward dynamics stays one pass per joint. The stick (second link) is held at its joint by
a brake: a locked joint in the articulated-body recursion. The valve raises the boom, holds
it, lowers it part way and holds it again.

Run it from the repository root::

    python examples/excavator_boom.py

It prints the lifting phase against the pump flow, the holding pressure against a static
moment balance about the boom pivot, and writes ``excavator_boom.png``.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import blocks as bl
from mbmodel.libraries import electrical as el
from mbmodel.libraries import hydraulics as hy
from mbmodel.libraries import multibody as mbl
from mbmodel.libraries import rotational as rot

G = 9.81
BOOM_L, BOOM_M = 3.0, 200.0
STICK_L, STICK_M = 2.0, 150.0
ANCHOR = np.array([0.8, -0.6, 0.0])     # cylinder base, from the boom pivot
BRACKET = 1.2                            # cylinder rod end, along the boom
STICK_ANGLE = -0.8                       # rad, relative to the boom (held by the brake)
A_PISTON = math.pi * 0.063 ** 2 / 4
A_ANNULUS = A_PISTON - math.pi * 0.035 ** 2 / 4
D_PUMP = 8e-6 / (2 * math.pi)
RETRACTED = 0.95                         # cylinder length at full retraction [m]
PHI_START = 0.3                          # rad, boom angle at the start


def holding_force(phi1):
    """Cylinder force (pushing) that holds the boom at ``phi1`` with the stick locked:
    gravity's moment about the pivot over the cylinder's lever arm."""
    def at(angle, length):
        return length * np.array([math.cos(angle), math.sin(angle), 0.0])
    boom_cm = at(phi1, BOOM_L / 2)
    stick_cm = at(phi1, BOOM_L) + at(phi1 + STICK_ANGLE, STICK_L / 2)
    moment = -G * (BOOM_M * boom_cm[0] + STICK_M * stick_cm[0])   # about +z
    rod_end = at(phi1, BRACKET)
    axis = (rod_end - ANCHOR) / np.linalg.norm(rod_end - ANCHOR)
    lever = np.cross(rod_end, axis)[2]      # moment of a unit push about the pivot
    return -moment / lever


#: chamber a's pressure that holds the boom at rest at the start (chamber b at 1 atm)
P_HOLD_START = (holding_force(PHI_START) + 1.01325e5 * A_ANNULUS) / A_PISTON


def link(length, mass):
    """A slender link along x: mass at its middle, inertia m*L²/12 about y and z."""
    inertia = mass * length ** 2 / 12
    return mbl.BodyShape(r=[length, 0.0, 0.0], r_CM=[length / 2, 0.0, 0.0], m=mass,
                         I_11=1.0, I_22=inertia, I_33=inertia)


def boom_cylinder(**modifiers):
    """The boom's cylinder, on a line force between the anchor and the bracket."""
    return hy.Cylinder(A_a=A_PISTON, A_b=A_ANNULUS, stroke=0.7, x_offset=RETRACTED,
                       V_dead_a=1e-4, V_dead_b=1e-4, d=2e4, **modifiers)


class BoomLinkage(mb.Model):
    """The boom on its pivot (joint1) and the cylinder's line between the anchor on the base
    and the bracket on the boom; subclasses add the stick and what drives the cylinder."""

    world = mbl.World(n=[0.0, -1.0, 0.0])
    boom = link(BOOM_L, BOOM_M)
    stick = link(STICK_L, STICK_M)
    anchor = mbl.FixedTranslation(r=list(ANCHOR))
    bracket = mbl.FixedTranslation(r=[BRACKET, 0.0, 0.0])
    strut = mbl.LineForceWithFlanges()
    oil = hy.Fluid(air=0.005)
    tank = hy.Tank()

    def equations(self):
        yield mb.connect(self.world.frame_b, self.joint1.frame_a, self.anchor.frame_a)
        yield mb.connect(self.joint1.frame_b, self.boom.frame_a, self.bracket.frame_a)
        yield mb.connect(self.anchor.frame_b, self.strut.frame_a)
        yield mb.connect(self.bracket.frame_b, self.strut.frame_b)
        yield mb.connect(self.strut.flange_b, self.cylinder.flange)
        if self.vented_b:
            yield mb.connect(self.cylinder.port_b, self.tank.port)


class Excavator(BoomLinkage):
    """Forward: the stick held on joint2 by a brake; motor, pump and valves drive the
    cylinder."""

    vented_b = False
    joint1 = mbl.Revolute(n=[0.0, 0.0, 1.0], phi=mb.Fixed(PHI_START), w=mb.Fixed(0.0))
    joint2 = mbl.Revolute(n=[0.0, 0.0, 1.0], use_axis_flange=True,
                          phi=mb.Fixed(STICK_ANGLE), w=mb.Fixed(0.0))
    brake = rot.Brake(mu_pos=[[0.0, 0.5]], fn_max=2e4)   # holds up to 10 kN.m
    brake_on = bl.Constant(k=1.0)
    # hydraulics
    pump = hy.Pump(D=D_PUMP, leakage=5e-13)
    line = hy.FixedVolume(V=1e-3, p=mb.Fixed(1.01325e5))
    relief = hy.ReliefValve(A=3e-5, p_crack=200e5, p_range=10e5, p_hyst=5e5)
    spool = hy.SpoolValve(A=5e-5, overlap=0.05)
    cylinder = boom_cylinder(p_a=mb.Fixed(P_HOLD_START), p_b=mb.Fixed(1.01325e5))
    # spool: raise from 0.5 s, hold from 6 s, lower at half opening from 8 s to 8.8 s
    command = bl.TimeTable(table=[[0.0, 0.0], [0.5, 0.0], [0.6, 1.0], [6.0, 1.0],
                                  [6.1, 0.0], [8.0, 0.0], [8.1, -0.5], [8.7, -0.5],
                                  [8.8, 0.0], [10.0, 0.0]])
    # electric drive
    supply = el.ConstantVoltage(V=150.0)
    winding = el.Resistor(R=0.5)
    inductance = el.Inductor(L=5e-3, i=mb.Fixed(0.0))
    emf = el.EMF(k=0.9)
    ground = el.Ground()
    rotor = rot.Inertia(J=0.05, w=mb.Fixed(0.0))

    def equations(self):
        yield from super().equations()
        yield mb.connect(self.boom.frame_b, self.joint2.frame_a)
        yield mb.connect(self.joint2.frame_b, self.stick.frame_a)
        yield mb.connect(self.joint2.axis, self.brake.flange_a)
        yield mb.connect(self.brake_on.y, self.brake.f_normalized)
        # hydraulics
        yield mb.connect(self.tank.port, self.pump.port_a, self.relief.port_b,
                         self.spool.port_T)
        yield mb.connect(self.pump.port_b, self.line.port, self.relief.port_a,
                         self.spool.port_P)
        yield mb.connect(self.spool.port_A, self.cylinder.port_a)
        yield mb.connect(self.spool.port_B, self.cylinder.port_b)
        yield mb.connect(self.command.y, self.spool.x)
        # electric drive
        yield mb.connect(self.supply.p, self.winding.p)
        yield mb.connect(self.winding.n, self.inductance.p)
        yield mb.connect(self.inductance.n, self.emf.p)
        yield mb.connect(self.emf.n, self.supply.n, self.ground.p)
        yield mb.connect(self.emf.flange, self.rotor.flange_a)
        yield mb.connect(self.rotor.flange_b, self.pump.flange)


T_RAISE, PHI_END = 4.0, 0.7


def prescribed_angle(t, duration=T_RAISE):
    """Boom angle raised from PHI_START to PHI_END in ``duration`` along a cycloid (starting
    and ending at rest with zero acceleration; smooth, as the inverse run differentiates it
    three times through the compressible chamber)."""
    s = t / duration
    return PHI_START + (PHI_END - PHI_START) * (s - mb.functions.sin(2 * math.pi * s)
                                                / (2 * math.pi))


class BoomInverse(BoomLinkage):
    """Inverse run: the boom follows prescribed_angle; the stick is rigid on the boom (its
    brake locked); chamber b vents to the tank, chamber a hangs on an InverseSupply. The
    compiler index-reduces the prescribed angle to find the cylinder force, the pressure
    and the flow the supply (the pump) must deliver."""

    vented_b = True
    T_raise = mb.Parameter(T_RAISE, unit="s", doc="duration of the raise")
    joint1 = mbl.Revolute(n=[0.0, 0.0, 1.0])
    bend = mbl.FixedRotation(n=[0.0, 0.0, 1.0], angle=STICK_ANGLE)
    cylinder = boom_cylinder()
    supply = hy.InverseSupply()

    def equations(self):
        yield from super().equations()
        yield mb.connect(self.boom.frame_b, self.bend.frame_a)
        yield mb.connect(self.bend.frame_b, self.stick.frame_a)
        yield mb.connect(self.supply.port, self.cylinder.port_a)
        yield self.joint1.phi == prescribed_angle(mb.time, self.T_raise)


def inverse_run():
    """Cylinder force, supply pressure and flow for the prescribed raise; prints a table."""
    cm = mb.compile(BoomInverse())
    res = cm.simulate(T_RAISE, n_points=401)
    print(f"\nInverse run: the boom raised from {math.degrees(PHI_START):.1f} to "
          f"{math.degrees(PHI_END):.1f} deg in {T_RAISE:g} s (cycloid); {len(cm.states)} "
          f"states: the prescribed angle fixes everything")
    rows = []
    for t in (0.0, 1.0, 2.0, 3.0, 4.0):
        k = int(round(t / T_RAISE * 400))
        phi = res["joint1.phi"][k]
        q = -res["supply.port.m_flow"][k] / hy.density(hy.DEFAULT_OIL, res["supply.p"][k])
        rows.append((f"{t:.1f}", f"{math.degrees(phi):.2f}",
                     f"{res['cylinder.f_fluid'][k] / 1e3:.3f}",
                     f"{holding_force(phi) / 1e3:.3f}" if t in (0.0, T_RAISE) else "",
                     f"{res['supply.p'][k] / 1e5:.2f}", f"{q * 6e4:.2f}",
                     f"{q / D_PUMP * 60 / (2 * math.pi):.0f}"))
    print(mb.format_table(("t [s]", "boom [deg]", "force [kN]", "static [kN]",
                           "pressure [bar]", "flow [L/min]", "pump [rpm]"), rows))
    return res


def main(plot=True, out_dir="."):
    """Simulate 10 s, print the phases, optionally plot. Returns a dict of results."""
    t0 = time.perf_counter()
    cm = mb.compile(Excavator())
    t1 = time.perf_counter()
    res = cm.simulate(10.0, n_points=2001)
    t2 = time.perf_counter()
    print("Excavator boom: DC motor -> pump -> 4/3 valve -> cylinder -> two-link boom")
    print(f"states chosen by the compiler: {', '.join(cm.states)}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms, "
          f"{len(res.events) - 1} events\n")
    t = res.t
    lifting = (t > 2.0) & (t < 5.5)
    holding = (t > 7.0) & (t < 7.9)
    rod_speed = np.mean(res["cylinder.v"][lifting])
    delivered = np.mean(res["pump.q"][lifting])
    hold_phi = float(np.mean(res["joint1.phi"][holding]))
    force = res["cylinder.f_fluid"][holding].mean()
    rows = [
        ("rod speed lifting [m/s]", f"{rod_speed:.4f}", f"{delivered / A_PISTON:.4f}",
         "pump delivery / piston area"),
        ("boom angle held [deg]", f"{math.degrees(hold_phi):.2f}", "",
         f"from {math.degrees(0.3):.1f} deg"),
        ("cylinder force holding [kN]", f"{force / 1e3:.3f}",
         f"{holding_force(hold_phi) / 1e3:.3f}", "gravity moment / lever arm"),
        ("stick brake locked throughout", f"{int(res['brake.locked'].min())}", "1",
         "joint 2 locked in the recursion"),
        ("stick angle drift [rad]", f"{np.ptp(res['joint2.phi']):.1e}", "0", ""),
        ("motor current lifting [A]", f"{np.mean(res['emf.i'][lifting]):.1f}", "", ""),
    ]
    print(mb.format_table(("quantity", "simulated", "expected", "note"), rows))
    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "excavator_boom.png")
        fig = res.plot([["joint1.phi"], ["cylinder.p_a", "cylinder.p_b", "line.p"],
                        ["emf.i"]], title="Excavator boom: raise, hold, lower")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        import matplotlib.pyplot as plt
        plt.close(fig)
        print(f"plot written to {path}")
    inverse = inverse_run()
    return {"states": list(cm.states), "result": res, "inverse": inverse,
            "rod_speed": rod_speed,
            "delivered": delivered, "hold_phi": hold_phi, "holding_force": force,
            "static_force": holding_force(hold_phi)}


if __name__ == "__main__":
    main()
