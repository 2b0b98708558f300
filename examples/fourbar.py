"""A crank-rocker four-bar linkage: a closed kinematic loop, forward and inverse.

Four revolute joints about z connect the ground pivot O2 (origin), the crank (0.1 m), the
coupler (0.35 m), the rocker (0.3 m) and the ground pivot O4 at (0.4, 0, 0) (Grashof:
the crank turns fully). The model is written as a chain around the loop; the last
connection closes it, and the compiler

* cuts the loop there (the orientation graph's spanning tree), finds that all axes are
  parallel and closes it with three in-plane constraints (not six, which would be
  redundant), with the constraint force as the cut's flow;
* reduces the index (the closure is differentiated twice) and keeps the crank angle as the
  only state: the other joint angles follow from the loop (``prescribed=False`` marks them
  passive, so the inverse analysis takes only the crank's motion as input).

a) forward dynamics: released at 0.3 rad with 4 rad/s under gravity, no friction, 5 s. Checks:
   coupler and rocker angles against the closed-form position analysis of the four-bar, the
   loop's closure error and the conservation of energy.
b) inverse dynamics (``analysis="inverse"``): the crank turned at a constant 2 rev/s; the
   driving torque over one revolution against the virtual-work torque of the closed-form
   kinematics.

Run from the repository root::

    python examples/fourbar.py

It prints both checks and writes ``fourbar.png``.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import multibody as mbl

CRANK, COUPLER, ROCKER, GROUND = 0.1, 0.35, 0.3, 0.4   # link lengths [m]
MASSES = (1.0, 2.0, 1.5)                                # crank, coupler, rocker [kg]
INERTIAS = (0.002, 0.025, 0.012)                        # about the centre, normal to plane
G = 9.81
THETA0, W0, T_END = 0.3, 4.0, 5.0
SPEED = 2 * 2 * math.pi                                 # inverse run: 2 rev/s


def link(length, m, inertia):
    """A slender link along its x axis, centre of mass half way."""
    return mbl.BodyShape(r=[length, 0, 0], r_CM=[length / 2, 0, 0], m=m,
                         I_11=inertia / 100, I_22=inertia, I_33=inertia)


def closed_form(theta):
    """Absolute coupler and rocker angles for crank angle theta (the rocker angle is that of
    O4 -> Q), from the triangle P-Q-O4 with P the crank pin."""
    p = CRANK * np.exp(1j * theta)
    to_o4 = GROUND - p
    d = abs(to_o4)
    phi = np.angle(to_o4) + math.acos((COUPLER ** 2 + d ** 2 - ROCKER ** 2) / (2 * COUPLER * d))
    q = p + COUPLER * np.exp(1j * phi)
    return phi, np.angle(q - GROUND)


def rates(theta, theta_d, theta_dd):
    """Coupler and rocker angles, speeds and accelerations: the loop equation
    ``a e^(i theta) + b e^(i phi) = d + c e^(i psi)`` differentiated twice."""
    phi, psi = closed_form(theta)
    ea, eb, ec = np.exp(1j * theta), np.exp(1j * phi), np.exp(1j * psi)
    M = np.array([[(1j * COUPLER * eb).real, (-1j * ROCKER * ec).real],
                  [(1j * COUPLER * eb).imag, (-1j * ROCKER * ec).imag]])

    def solve(rhs):
        return np.linalg.solve(M, [rhs.real, rhs.imag])
    phi_d, psi_d = solve(-1j * CRANK * ea * theta_d)
    phi_dd, psi_dd = solve(-(1j * theta_dd - theta_d ** 2) * CRANK * ea
                           + COUPLER * phi_d ** 2 * eb - ROCKER * psi_d ** 2 * ec)
    return (phi, psi), (phi_d, psi_d), (phi_dd, psi_dd)


def virtual_work_torque(theta, theta_d, theta_dd):
    """Crank torque of the prescribed motion: inertia and gravity forces of the three links'
    centres of mass, weighted with their velocities per unit crank speed."""
    (phi, psi), (phi_d, psi_d), (phi_dd, psi_dd) = rates(theta, theta_d, theta_dd)
    pa = CRANK * np.exp(1j * theta)
    vp, ap = 1j * theta_d * pa, (1j * theta_dd - theta_d ** 2) * pa
    eb, ec = np.exp(1j * phi), np.exp(1j * psi)
    links = [(0.5 * vp, 0.5 * ap, theta_d, theta_dd),
             (vp + 0.5 * COUPLER * 1j * phi_d * eb,
              ap + 0.5 * COUPLER * (1j * phi_dd - phi_d ** 2) * eb, phi_d, phi_dd),
             (0.5 * ROCKER * 1j * psi_d * ec, 0.5 * ROCKER * (1j * psi_dd - psi_d ** 2) * ec,
              psi_d, psi_dd)]
    power = 0.0
    for (v, a, w, alpha), m, inertia in zip(links, MASSES, INERTIAS):
        force = m * a + 1j * m * G
        power += force.real * v.real + force.imag * v.imag + inertia * alpha * w
    return power / theta_d


class Fourbar(mb.Model):
    """world -> j1 -> crank -> j2 -> coupler -> j3 -> rocker -> j4 -> anchor at O4."""

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        phi, psi = closed_form(THETA0)
        self.world = mbl.World()
        self.j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(THETA0), w=mb.Fixed(W0))
        self.crank = link(CRANK, MASSES[0], INERTIAS[0])
        # guesses near the closed loop; the compiler solves the closure for them
        self.j2 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(round(phi - THETA0, 1)),
                               prescribed=False)
        self.coupler = link(COUPLER, MASSES[1], INERTIAS[1])
        self.j3 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(round(psi + math.pi - phi, 1)),
                               prescribed=False)
        self.rocker = link(ROCKER, MASSES[2], INERTIAS[2])
        self.j4 = mbl.Revolute(n=[0, 0, 1], prescribed=False)
        self.anchor = mbl.Fixed(r=[GROUND, 0, 0])

    def equations(self):
        c = mb.connect
        yield c(self.world.frame_b, self.j1.frame_a)
        yield c(self.j1.frame_b, self.crank.frame_a)
        yield c(self.crank.frame_b, self.j2.frame_a)
        yield c(self.j2.frame_b, self.coupler.frame_a)
        yield c(self.coupler.frame_b, self.j3.frame_a)
        yield c(self.j3.frame_b, self.rocker.frame_a)
        yield c(self.rocker.frame_b, self.j4.frame_a)
        yield c(self.j4.frame_b, self.anchor.frame_b)   # closes the loop


def energy(res):
    """Kinetic + potential energy of the links from the closed-form kinematics of the crank
    state (independent of the model's body equations)."""
    total = []
    for theta, w in zip(res["j1.phi"], res["j1.w"]):
        (phi, psi), (phi_d, psi_d), _ = rates(theta, w, 0.0)
        pa = CRANK * np.exp(1j * theta)
        cms = [(0.5 * pa, 0.5 * 1j * w * pa, w),
               (pa + 0.5 * COUPLER * np.exp(1j * phi),
                1j * w * pa + 0.5 * COUPLER * 1j * phi_d * np.exp(1j * phi), phi_d),
               (GROUND + 0.5 * ROCKER * np.exp(1j * psi),
                0.5 * ROCKER * 1j * psi_d * np.exp(1j * psi), psi_d)]
        total.append(sum(0.5 * m * abs(v) ** 2 + 0.5 * inertia * om ** 2 + m * G * z.imag
                         for (z, v, om), m, inertia in zip(cms, MASSES, INERTIAS)))
    return np.array(total)


def main(plot=True, out_dir="."):
    """Forward and inverse runs; returns the states, errors and timings."""
    t0 = time.perf_counter()
    cm = mb.compile(Fourbar())
    t1 = time.perf_counter()
    res = cm.simulate(T_END, n_points=1001, rtol=1e-10, atol=1e-10)
    t2 = time.perf_counter()
    theta = res["j1.phi"]
    expected = np.array([closed_form(t) for t in theta])
    wrap = lambda a: (a + math.pi) % (2 * math.pi) - math.pi  # noqa: E731
    coupler_error = np.abs(wrap(theta + res["j2.phi"] - expected[:, 0])).max()
    rocker_error = np.abs(wrap(theta + res["j2.phi"] + res["j3.phi"] - math.pi
                               - expected[:, 1])).max()
    gap = np.array([res[f"j4.frame_b.r_0[{k}]"] - res[f"anchor.frame_b.r_0[{k}]"]
                    for k in range(3)])
    E = energy(res)
    drift = float(np.ptp(E) / np.abs(E).max())

    # b) inverse dynamics along a constant-speed revolution
    inv = mb.compile(Fourbar(), analysis="inverse")
    solve = inv.explicit_ode(guess=True)
    z = np.array(inv.z_start, dtype=float)
    angles = np.linspace(0.0, 2 * math.pi, 73)
    torque, reference = [], []
    for th in angles:
        u = np.array([{"j1.phi": th, "j1.w": SPEED, "j1.a": 0.0}[n] for n in inv.inputs])
        _, z = solve([], u, inv.parameter_defaults, 0.0, z)
        z = np.array(z, dtype=float).ravel()
        y = np.array(inv.output_function([], z, u, inv.parameter_defaults, 0.0)).ravel()
        torque.append(y[inv.output_index["j1.tau"]])
        reference.append(virtual_work_torque(th, SPEED, 0.0))
    torque, reference = np.array(torque), np.array(reference)
    torque_error = float(np.abs(torque - reference).max())

    print("Crank-rocker four-bar (links 0.1 / 0.35 / 0.3 m, ground 0.4 m, axes z, gravity -y)")
    print(f"states chosen by the compiler: {', '.join(cm.states)}; solved by the DAE "
          f"integrator: {', '.join(cm.algebraic)}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms ({T_END} s, "
          f"rtol 1e-10)\n")
    rows = [
        ("coupler angle vs closed form [rad]", f"{coupler_error:.1e}"),
        ("rocker angle vs closed form [rad]", f"{rocker_error:.1e}"),
        ("loop closure |r(j4.frame_b) - r(anchor)| [m]", f"{np.abs(gap).max():.1e}"),
        ("energy drift (max - min) / max |E|", f"{drift:.1e}"),
        ("crank torque at 2 rev/s vs virtual work [N.m]", f"{torque_error:.1e}"),
        ("  (peak torque [N.m])", f"{np.abs(reference).max():.3f}"),
    ]
    print(mb.format_table(("check (forward 5 s; inverse one revolution)", "max error"), rows,
                          left=(0,)))
    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "fourbar.png")
        _plot(res, angles, torque, reference, path)
        print(f"plot written to {path}")
    return {"states": list(cm.states), "algebraic": list(cm.algebraic),
            "coupler_error": float(coupler_error), "rocker_error": float(rocker_error),
            "closure_error": float(np.abs(gap).max()), "energy_drift": drift,
            "torque_error": torque_error, "peak_torque": float(np.abs(reference).max()),
            "inverse_inputs": list(inv.inputs), "result": res}


def _plot(res, angles, torque, reference, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 7))
    ax1, ax2 = fig.subplots(2, 1)
    theta = res["j1.phi"]
    ax1.plot(res.t, np.degrees(np.unwrap(theta)), label="crank (state)")
    ax1.plot(res.t, np.degrees(np.unwrap(theta + res["j2.phi"])), label="coupler")
    ax1.plot(res.t, np.degrees(np.unwrap(theta + res["j2.phi"] + res["j3.phi"] - math.pi)),
             label="rocker")
    ax1.set_xlabel("time [s]")
    ax1.set_ylabel("absolute angle [deg]")
    ax1.set_title("Forward: released at 0.3 rad with 4 rad/s under gravity")
    ax1.legend(fontsize=8)
    ax2.plot(np.degrees(angles), torque, label="inverse analysis")
    ax2.plot(np.degrees(angles[::3]), reference[::3], "k.", label="virtual work (closed form)")
    ax2.set_xlabel("crank angle [deg]")
    ax2.set_ylabel("crank torque [N.m]")
    ax2.set_title("Inverse: crank turned at 2 rev/s")
    ax2.legend(fontsize=8)
    for a in (ax1, ax2):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
