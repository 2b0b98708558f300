"""Double pendulum with a damped first joint (MSL ``MultiBody.Examples.Elementary.DoublePendulum``).

Two steel boxes (``BodyBox(r={0.5, 0, 0}, width=0.06)``: 0.5 m x 0.06 m x 0.06 m,
7700 kg/m3, 13.86 kg each) hang on two revolute joints about the z axis. Both joints start
at ``phi = 0``, ``w = 0``: the pendulum starts horizontal (along +x) at rest and falls under
gravity (9.81 m/s² along -y). The first joint drives a rotational damper
(d = 0.1 N.m.s/rad) through its axis flange; the damper's other flange is on the joint's
support flange, so it brakes the relative rotation of the first joint. Stop time 3 s.

Structure (component names as in the model below)::

    world.frame_b -- revolute1 -- boxBody1 -- revolute2 -- boxBody2
                     revolute1.axis -- damper.flange_b
                     revolute1.support -- damper.flange_a

The physics check printed by the script: the mechanical energy ``E = T + V`` of the two boxes
(computed here in numpy from the joint angles and speeds with the box's mass and inertia,
independently of the library's body equations) never increases, and its loss equals the
energy the damper dissipates, ``integral of d*w1^2 dt``. Run from the repository root::

    python examples/double_pendulum.py

It prints the states the compiler chose, the final angles and speeds, the energy balance and
writes ``double_pendulum.png``.
"""

from __future__ import annotations

import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import multibody as mbl
from mbmodel.libraries import rotational as rot

# MSL values
LENGTH = 0.5        # box length |r| [m]
WIDTH = 0.06        # box width (height = width) [m]
DENSITY = 7700.0    # steel [kg/m3] (BodyBox default)
D_DAMPER = 0.1      # damping of the first joint [N.m.s/rad]
G = 9.81            # gravity [m/s2] along -y
T_END = 3.0


class DoublePendulum(mb.Model):
    """Two boxes on two revolute joints (axis z), the first one damped."""

    world = mbl.World()
    revolute1 = mbl.Revolute(use_axis_flange=True, phi=mb.Fixed(0.0), w=mb.Fixed(0.0))
    damper = rot.Damper(d=D_DAMPER)
    boxBody1 = mbl.BodyBox(r=[LENGTH, 0.0, 0.0], width=WIDTH)
    revolute2 = mbl.Revolute(phi=mb.Fixed(0.0), w=mb.Fixed(0.0))
    boxBody2 = mbl.BodyBox(r=[LENGTH, 0.0, 0.0], width=WIDTH)

    def equations(self):
        c = mb.connect
        yield c(self.damper.flange_b, self.revolute1.axis)
        yield c(self.revolute1.support, self.damper.flange_a)
        yield c(self.world.frame_b, self.revolute1.frame_a)
        yield c(self.revolute1.frame_b, self.boxBody1.frame_a)
        yield c(self.boxBody1.frame_b, self.revolute2.frame_a)
        yield c(self.revolute2.frame_b, self.boxBody2.frame_a)


def box_mass_properties(length=LENGTH, width=WIDTH, density=DENSITY):
    """Mass and inertia about the centre about the z axis (perpendicular to length and
    width) of a solid box of square cross-section ``width x width``."""
    m = density * length * width * width
    return m, m * (length ** 2 + width ** 2) / 12.0


def mechanical_energy(phi1, phi2, w1, w2, length=LENGTH, g=G):
    """Kinetic + potential energy of the two boxes (planar motion in x-y, joint axes z,
    zero potential at y = 0). Returns (E, T, V) arrays."""
    m, Iz = box_mass_properties(length)
    a1, a12 = phi1, phi1 + phi2
    w12 = w1 + w2
    # centres of mass and their velocities
    y1 = 0.5 * length * np.sin(a1)
    y2 = length * np.sin(a1) + 0.5 * length * np.sin(a12)
    v1x, v1y = -0.5 * length * w1 * np.sin(a1), 0.5 * length * w1 * np.cos(a1)
    v2x = -length * w1 * np.sin(a1) - 0.5 * length * w12 * np.sin(a12)
    v2y = length * w1 * np.cos(a1) + 0.5 * length * w12 * np.cos(a12)
    T = 0.5 * m * (v1x ** 2 + v1y ** 2 + v2x ** 2 + v2y ** 2) + 0.5 * Iz * (w1 ** 2 + w12 ** 2)
    V = m * g * (y1 + y2)
    return T + V, T, V




def main(plot=True, out_dir="."):
    """Compile and simulate the double pendulum for 3 s, print the final angles and the
    energy balance and save the plot.

    Returns a dict: states, time and angle/speed arrays, final angles and speeds, the
    energy trace, its largest increase between output points, the dissipated energy and
    the timings.
    """
    t0 = time.perf_counter()
    cm = mb.compile(DoublePendulum())
    t1 = time.perf_counter()
    res = cm.simulate(T_END, n_points=3001)
    t2 = time.perf_counter()

    t = res.t
    phi1, phi2 = res["revolute1.phi"], res["revolute2.phi"]
    w1, w2 = res["revolute1.w"], res["revolute2.w"]
    E, T, V = mechanical_energy(phi1, phi2, w1, w2)
    dE = np.diff(E)
    # Energy dissipated in the damper up to each output time (trapezoidal rule).
    P_d = D_DAMPER * w1 ** 2
    dissipated = np.concatenate([[0.0], np.cumsum(0.5 * (P_d[1:] + P_d[:-1]) * np.diff(t))])
    balance = E + dissipated - E[0]
    # The damper brakes the joint: the driving torque of revolute1 is -d*w1.
    joint_tau = res["revolute1.tau"]
    m_box, Iz_box = box_mass_properties()

    out = {
        "states": list(cm.states), "t": t,
        "phi1": phi1, "phi2": phi2, "w1": w1, "w2": w2,
        "phi1_final": float(phi1[-1]), "phi2_final": float(phi2[-1]),
        "w1_final": float(w1[-1]), "w2_final": float(w2[-1]),
        "energy": E, "kinetic": T, "potential": V,
        "energy_start": float(E[0]), "energy_final": float(E[-1]),
        "max_energy_increase": float(max(dE.max(), 0.0)),
        "dissipated": float(dissipated[-1]),
        "max_balance_error": float(np.abs(balance).max()),
        "joint1_torque_residual": float(np.abs(joint_tau + D_DAMPER * w1).max()),
        "box_mass": m_box,
        "compile_time": t1 - t0, "simulate_time": t2 - t1, "result": res,
    }

    print("Double pendulum (MSL MultiBody.Examples.Elementary.DoublePendulum)")
    print(f"  two steel boxes {LENGTH} m x {WIDTH} m x {WIDTH} m ({m_box:.2f} kg, "
          f"I_zz = {Iz_box:.5f} kg.m2 about the centre), joint axes z, gravity {G} m/s2 "
          f"along -y; damper d = {D_DAMPER} N.m.s/rad on revolute1; start phi = 0, w = 0")
    print(f"states chosen by the compiler ({len(cm.states)}): {', '.join(cm.states)}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms "
          f"({len(cm.states)} states, {len(cm.algebraic)} algebraic, t_end = {T_END} s)\n")
    rows = [
        ("revolute1", f"{phi1[-1]:.6f}", f"{np.degrees(phi1[-1]):.3f}", f"{w1[-1]:.6f}"),
        ("revolute2", f"{phi2[-1]:.6f}", f"{np.degrees(phi2[-1]):.3f}", f"{w2[-1]:.6f}"),
    ]
    print(f"final state at t = {T_END} s:")
    print(mb.format_table(("joint", "phi [rad]", "phi [deg]", "w [rad/s]"), rows))
    print()
    rows = [
        ("mechanical energy at t = 0 [J]", f"{E[0]:.6f}", ""),
        (f"mechanical energy at t = {T_END} s [J]", f"{E[-1]:.6f}", ""),
        ("energy lost [J]", f"{E[0] - E[-1]:.6f}", ""),
        ("energy dissipated by the damper [J]", f"{dissipated[-1]:.6f}",
         "integral of d*w1^2"),
        ("max |E(t) + dissipated(t) - E(0)| [J]", f"{out['max_balance_error']:.2e}",
         "energy balance"),
        ("largest increase of E between points [J]", f"{out['max_energy_increase']:.2e}",
         "monotone if 0"),
    ]
    print(mb.format_table(("energy", "value", "note"), rows, left=(0, 2)))

    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "double_pendulum.png")
        _plot(t, phi1, phi2, E, dissipated, path)
        print(f"plot written to {path}")
    return out


def _plot(t, phi1, phi2, E, dissipated, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 6.5))
    ax1, ax2 = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    ax1.plot(t, np.degrees(phi1), label="revolute1.phi (damped)")
    ax1.plot(t, np.degrees(phi2), label="revolute2.phi")
    ax1.set_ylabel("angle [deg]")
    ax1.set_title("Double pendulum: joint angles (start horizontal at rest)")
    ax1.legend(loc="best", fontsize=8)
    ax2.plot(t, E - E[0], color="C2", label="E(t) - E(0)")
    ax2.plot(t, -dissipated, "k--", lw=1, label="-(damper energy)")
    ax2.set_ylabel("energy [J]")
    ax2.set_xlabel("time [s]")
    ax2.legend(loc="best", fontsize=8)
    for a in (ax1, ax2):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
