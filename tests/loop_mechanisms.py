"""Closed-loop mechanisms for the loop tests, and their closed-form kinematics.

Every formula here is written from the geometry alone (complex-number loop equations of
planar linkages), independent of mbmodel: the references the tests compare against.
"""

from __future__ import annotations

import math

import numpy as np

import mbmodel as mb
from mbmodel.libraries import multibody as mbl

from mb_trees import RevoluteChain

G = 9.81
# Grashof crank-rocker: crank A, coupler B, rocker C, ground D (A + D < B + C)
A, B, C, D = 0.1, 0.35, 0.3, 0.4
MASSES = (1.0, 2.0, 1.5)                 # crank, coupler, rocker (kg)
INERTIAS = (0.002, 0.025, 0.012)         # about the centre of mass, normal to the plane


def fourbar_angles(theta, a=A, b=B, c=C, d=D):
    """Absolute angles (coupler, rocker) of the four-bar O2-P-Q-O4 for crank angle
    ``theta``, O2 at the origin and O4 at (d, 0); the rocker angle is that of O4 -> Q, on the
    branch with Q above the line P-O4."""
    p = a * np.exp(1j * theta)
    to_o4 = d - p
    length = abs(to_o4)
    beta = math.acos((b * b + length * length - c * c) / (2 * b * length))
    phi = np.angle(to_o4) + beta
    q = p + b * np.exp(1j * phi)
    psi = np.angle(q - d)
    return phi, psi


def fourbar_rates(theta, theta_d, theta_dd, a=A, b=B, c=C, d=D):
    """Angles, angular velocities and accelerations of coupler and rocker from the loop
    equation ``a e^{i theta} + b e^{i phi} = d + c e^{i psi}`` and its two time derivatives
    (each a 2x2 linear system)."""
    phi, psi = fourbar_angles(theta, a, b, c, d)
    ea, eb, ec = np.exp(1j * theta), np.exp(1j * phi), np.exp(1j * psi)

    def solve(rhs):
        # unknowns x = (phi', psi') [or second derivatives]: i b eb x0 - i c ec x1 = rhs
        M = np.array([[(1j * b * eb).real, (-1j * c * ec).real],
                      [(1j * b * eb).imag, (-1j * c * ec).imag]])
        return np.linalg.solve(M, [rhs.real, rhs.imag])

    phi_d, psi_d = solve(-1j * a * ea * theta_d)
    rhs = (-(1j * theta_dd - theta_d ** 2) * a * ea + b * phi_d ** 2 * eb
           - c * psi_d ** 2 * ec)
    phi_dd, psi_dd = solve(rhs)
    return (phi, psi), (phi_d, psi_d), (phi_dd, psi_dd)


def fourbar_torque(theta, theta_d, theta_dd, masses=MASSES, inertias=INERTIAS, g=G):
    """Crank torque that produces the crank motion (theta, theta', theta'') of the gravity-
    loaded four-bar, by virtual work: each link's centre of mass (half way along it) and
    angle, their velocities per unit crank speed, and Newton–Euler inertia forces."""
    (phi, psi), (phi_d, psi_d), (phi_dd, psi_dd) = fourbar_rates(theta, theta_d, theta_dd)
    torque = 0.0
    # link k: centre of mass position z_k(angles) as complex numbers, with derivatives
    pa = A * np.exp(1j * theta)
    links = [
        # (centre of mass, velocity, acceleration, angular velocity, angular acceleration)
        (0.5 * pa, 0.5 * 1j * theta_d * pa, 0.5 * (1j * theta_dd - theta_d ** 2) * pa,
         theta_d, theta_dd),
    ]
    vp = 1j * theta_d * pa
    ap = (1j * theta_dd - theta_d ** 2) * pa
    eb = np.exp(1j * phi)
    links.append((pa + 0.5 * B * eb, vp + 0.5 * B * 1j * phi_d * eb,
                  ap + 0.5 * B * (1j * phi_dd - phi_d ** 2) * eb, phi_d, phi_dd))
    ec = np.exp(1j * psi)
    links.append((D + 0.5 * C * ec, 0.5 * C * 1j * psi_d * ec,
                  0.5 * C * (1j * psi_dd - psi_d ** 2) * ec, psi_d, psi_dd))
    for (z, v, acc, w, alpha), m, inertia in zip(links, masses, inertias):
        # virtual power of inertia and gravity forces per unit crank speed
        force = m * acc + 1j * m * g
        torque += (force.real * v.real + force.imag * v.imag + inertia * alpha * w) / theta_d
    return torque


class Fourbar(mb.Model):
    """The crank-rocker four-bar in the x-y plane, gravity along -y, modelled as a chain
    around the loop (world -> crank -> coupler -> rocker -> anchor at O4): the last
    connection closes the loop. The crank angle is the state (fixed start); the other
    joints start from guesses and are passive (``prescribed=False``: in the inverse analysis
    only the crank's motion is an input). ``d``: the distance of the anchor.
    ``start_at="rocker"``: the same start state given on the rocker joint instead, whose
    angle then becomes the state (a bad one at the rocker's turning points). ``at_cut``:
    ``"sensor"`` (an AbsoluteSensor on j4's frame_b, the cut's side), ``"damper"`` (j4
    damped through its flange: a drive train without inertia) or ``"friction"`` (a bearing
    friction of 0.2 N.m on j4's flange). ``anchor_z``: the anchor out of the plane (a loop
    that cannot close)."""

    def __init__(self, theta0=0.3, w0=2.0, g=G, guess_error=0.05, d=D, start_at="crank",
                 at_cut=None, anchor_z=0.0, **modifiers):
        super().__init__(**modifiers)
        phi, psi = fourbar_angles(theta0)
        self.world = mbl.World(g=g)
        if start_at == "crank":
            self.j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(theta0), w=mb.Fixed(w0))
        else:  # the start state given on the rocker joint (the same motion)
            self.j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(theta0 + guess_error),
                                   prescribed=False)
        self.crank = _link(A, MASSES[0], INERTIAS[0])
        self.j2 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(phi - theta0 + guess_error),
                               prescribed=False)
        self.coupler = _link(B, MASSES[1], INERTIAS[1])
        # rocker body from Q towards O4: absolute angle psi + pi
        self.j3 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(psi + math.pi - phi - guess_error),
                               prescribed=False)
        self.rocker = _link(C, MASSES[2], INERTIAS[2])
        if start_at == "crank":
            self.j4 = mbl.Revolute(n=[0, 0, 1], prescribed=False,
                                   use_axis_flange=at_cut in ("damper", "friction"))
        else:
            _, (_, psi_d), _ = fourbar_rates(theta0, w0, 0.0)
            # j4 turns the rocker body (pointing Q -> O4, at psi + pi) back to the anchor
            self.j4 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(-(psi + math.pi)),
                                   w=mb.Fixed(-psi_d))
        self.anchor = mbl.Fixed(r=[d, 0, anchor_z])
        self.at_cut = at_cut
        if at_cut == "sensor":
            self.sensor = mbl.AbsoluteSensor()
        elif at_cut == "damper":
            from mbmodel.libraries import rotational as rot
            self.damper = rot.Damper(d=0.1)
        elif at_cut == "friction":
            from mbmodel.libraries import rotational as rot
            self.bearing = rot.BearingFriction(tau_pos=[[0, 0.2]])

    def equations(self):
        yield from connect_chain(self.world, self.j1, self.crank, self.j2, self.coupler,
                                 self.j3, self.rocker, self.j4)
        yield mb.connect(self.j4.frame_b, self.anchor.frame_b)
        if self.at_cut == "sensor":  # on the cut side of j4: no inertia
            yield mb.connect(self.j4.frame_b, self.sensor.frame_a)
        elif self.at_cut == "damper":  # a drive train with no inertia on j4
            yield mb.connect(self.j4.axis, self.damper.flange_b)
            yield mb.connect(self.j4.support, self.damper.flange_a)
        elif self.at_cut == "friction":
            yield mb.connect(self.j4.axis, self.bearing.flange_a)


def connect_chain(*components):
    """``connect(frame_b, next frame_a)`` along a chain of components."""
    for before, after in zip(components, components[1:]):
        yield mb.connect(before.frame_b, after.frame_a)


def _link(length, m, inertia):
    """A slender planar link along its x axis, centre of mass half way."""
    return mbl.BodyShape(r=[length, 0, 0], r_CM=[length / 2, 0, 0], m=m,
                         I_11=inertia / 100, I_22=inertia, I_33=inertia)


def body_energy(res, name, m, r_cm, inertia_diag, g=G):
    """Kinetic and potential energy of a body along a result, from its frame_a's position,
    orientation and spatial velocity (gravity along -y)."""
    v = np.array([res[f"{name}.frame_a.v[{k}]"] for k in range(6)])
    R = np.array([[res[f"{name}.frame_a.R[{i},{j}]"] for j in range(3)] for i in range(3)])
    r0 = np.array([res[f"{name}.frame_a.r_0[{k}]"] for k in range(3)])
    r_cm = np.asarray(r_cm, dtype=float)
    w, v_o = v[0:3], v[3:6]
    v_cm = v_o + np.cross(w.T, r_cm).T
    kinetic = 0.5 * m * (v_cm ** 2).sum(axis=0) + 0.5 * (np.asarray(inertia_diag)[:, None]
                                                          * w ** 2).sum(axis=0)
    y_cm = r0[1] + (R[:, 1, :] * r_cm[:, None]).sum(axis=0)  # world y of r0 + R' r_cm
    return kinetic, m * g * y_cm


def fourbar_energy(res, g=G):
    """Total mechanical energy of :class:`Fourbar` along a result (gravity ``g``)."""
    total = 0.0
    for name, length, m, inertia in zip(("crank", "coupler", "rocker"), (A, B, C), MASSES,
                                        INERTIAS):
        kinetic, potential = body_energy(res, name, m, [length / 2, 0, 0],
                                         [inertia / 100, inertia, inertia], g)
        total = total + kinetic + potential
    return total


# -- slider-crank -------------------------------------------------------------------------
CRANK, ROD = 0.05, 0.18                  # crank radius and connecting-rod length (m)
SC_MASSES = (0.8, 0.6, 0.5)              # crank, rod, piston (kg)
SC_INERTIAS = (4e-4, 2e-3)               # crank and rod about their centres of mass


def piston_position(theta, r=CRANK, length=ROD):
    """Distance of the piston pin from the crank axis (in-line slider-crank)."""
    return r * np.cos(theta) + np.sqrt(length ** 2 - (r * np.sin(theta)) ** 2)


def rod_angle(theta, r=CRANK, length=ROD):
    """Absolute angle of the rod (crank pin -> piston pin)."""
    return np.arcsin(-r * np.sin(theta) / length)


class SliderCrank(mb.Model):
    """world -> crank -> rod -> piston pin; the piston slides along x on a prismatic joint
    from the world. ``piston_flange=True`` gives the prismatic joint its axis flange
    (``slider.axis``: a translational force element between it and ``slider.support``)."""

    def __init__(self, theta0=0.4, w0=3.0, g=G, piston_flange=False, **modifiers):
        super().__init__(**modifiers)
        beta = float(rod_angle(theta0))
        self.world = mbl.World(g=g)
        self.j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(theta0), w=mb.Fixed(w0))
        self.crank = mbl.BodyShape(r=[CRANK, 0, 0], r_CM=[CRANK / 2, 0, 0], m=SC_MASSES[0],
                                   I_11=SC_INERTIAS[0] / 100, I_22=SC_INERTIAS[0],
                                   I_33=SC_INERTIAS[0])
        self.j2 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(beta - theta0 + 0.02),
                               prescribed=False)
        self.rod = mbl.BodyShape(r=[ROD, 0, 0], r_CM=[ROD / 2, 0, 0], m=SC_MASSES[1],
                                 I_11=SC_INERTIAS[1] / 100, I_22=SC_INERTIAS[1],
                                 I_33=SC_INERTIAS[1])
        self.j3 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(-beta - 0.02), prescribed=False)
        self.slider = mbl.Prismatic(n=[1, 0, 0], prescribed=False,
                                    s=mb.Guess(float(piston_position(theta0)) + 0.01),
                                    use_axis_flange=piston_flange)
        self.piston = mbl.Body(m=SC_MASSES[2], I_11=1e-5, I_22=1e-5, I_33=1e-5)

    def equations(self):
        yield mb.connect(self.world.frame_b, self.j1.frame_a, self.slider.frame_a)
        yield mb.connect(self.j1.frame_b, self.crank.frame_a)
        yield mb.connect(self.crank.frame_b, self.j2.frame_a)
        yield mb.connect(self.j2.frame_b, self.rod.frame_a)
        yield mb.connect(self.rod.frame_b, self.j3.frame_a)
        yield mb.connect(self.j3.frame_b, self.piston.frame_a)
        yield mb.connect(self.slider.frame_b, self.piston.frame_a)


def slider_crank_reference(theta0, w0, t_eval, g=G, piston_force=None):
    """Crank angle of the slider-crank along ``t_eval`` from a hand-written index-1
    Lagrange-multiplier DAE in absolute coordinates ``q = (x1, y1, phi1, x2, y2, phi2, x3)``
    (centres of mass and angles of crank and rod, piston position):
    ``M q'' = Q + Phi_q' lambda``, ``Phi_q q'' = gamma`` with Baumgarte stabilisation,
    integrated by scipy's DOP853. ``piston_force(x3, x3')``: a force on the piston along x."""
    from scipy.integrate import solve_ivp
    r, length = CRANK, ROD
    m1, m2, m3 = SC_MASSES
    J1, J2 = SC_INERTIAS
    M = np.diag([m1, m1, J1, m2, m2, J2, m3])
    Q = np.array([0.0, -m1 * g, 0.0, 0.0, -m2 * g, 0.0, 0.0])

    def constraints(q, qd):
        x1, y1, p1, x2, y2, p2, x3 = q
        c1, s1, c2, s2 = np.cos(p1), np.sin(p1), np.cos(p2), np.sin(p2)
        h1, h2 = r / 2, length / 2
        phi = np.array([x1 - h1 * c1, y1 - h1 * s1,
                        x1 + h1 * c1 - x2 + h2 * c2, y1 + h1 * s1 - y2 + h2 * s2,
                        x2 + h2 * c2 - x3, y2 + h2 * s2])
        jac = np.zeros((6, 7))
        jac[0, [0, 2]] = 1, h1 * s1
        jac[1, [1, 2]] = 1, -h1 * c1
        jac[2, [0, 2, 3, 5]] = 1, -h1 * s1, -1, -h2 * s2
        jac[3, [1, 2, 4, 5]] = 1, h1 * c1, -1, h2 * c2
        jac[4, [3, 5, 6]] = 1, -h2 * s2, -1
        jac[5, [4, 5]] = 1, h2 * c2
        w1, w2 = qd[2] ** 2, qd[5] ** 2
        # gamma = -(d/dt Phi_q) q': from a*cos(phi) -> a*cos(phi)*phi'^2, a*sin -> a*sin*phi'^2
        gamma = np.array([-h1 * c1 * w1, -h1 * s1 * w1,
                          h1 * c1 * w1 + h2 * c2 * w2, h1 * s1 * w1 + h2 * s2 * w2,
                          h2 * c2 * w2, h2 * s2 * w2])
        return phi, jac, gamma

    def rhs(_t, y):
        q, qd = y[:7], y[7:]
        phi, jac, gamma = constraints(q, qd)
        alpha = 20.0
        gamma = gamma - 2 * alpha * (jac @ qd) - alpha ** 2 * phi
        kkt = np.block([[M, jac.T], [jac, np.zeros((6, 6))]])
        forces = Q.copy()
        if piston_force is not None:
            forces[6] += piston_force(q[6], qd[6])
        sol = np.linalg.solve(kkt, np.concatenate([forces, gamma]))
        return np.concatenate([qd, sol[:7]])

    beta = float(rod_angle(theta0))
    beta_d = -r * np.cos(theta0) * w0 / (length * np.cos(beta))
    h1, h2 = r / 2, length / 2
    q0 = np.array([h1 * np.cos(theta0), h1 * np.sin(theta0), theta0,
                   r * np.cos(theta0) + h2 * np.cos(beta), r * np.sin(theta0) + h2 * np.sin(beta),
                   beta, float(piston_position(theta0))])
    qd0 = np.array([-h1 * np.sin(theta0) * w0, h1 * np.cos(theta0) * w0, w0,
                    -r * np.sin(theta0) * w0 - h2 * np.sin(beta) * beta_d,
                    r * np.cos(theta0) * w0 + h2 * np.cos(beta) * beta_d, beta_d,
                    -r * np.sin(theta0) * w0 - 2 * h2 * np.sin(beta) * beta_d])
    sol = solve_ivp(rhs, (t_eval[0], t_eval[-1]), np.concatenate([q0, qd0]), method="DOP853",
                    t_eval=t_eval, rtol=1e-12, atol=1e-12)
    return sol.y[2]


# -- two loops sharing the crank ------------------------------------------------------------
B2, C2, D2 = 0.3, 0.28, -0.35            # second coupler, rocker, anchor at (D2, 0)


class DoubleFourbar(Fourbar):
    """:class:`Fourbar` plus a second coupler and rocker on the same crank pin, to an anchor
    at (D2, 0): two loops, one degree of freedom."""

    def __init__(self, theta0=0.3, w0=2.0, g=G, guess_error=0.05, **modifiers):
        super().__init__(theta0=theta0, w0=w0, g=g, guess_error=guess_error, **modifiers)
        phi, psi = fourbar_angles(theta0, A, B2, C2, D2)
        self.j5 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(phi - theta0 - guess_error),
                               prescribed=False)
        self.coupler2 = _link(B2, MASSES[1], INERTIAS[1])
        self.j6 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(psi + math.pi - phi + guess_error),
                               prescribed=False)
        self.rocker2 = _link(C2, MASSES[2], INERTIAS[2])
        self.j7 = mbl.Revolute(n=[0, 0, 1], prescribed=False)
        self.anchor2 = mbl.Fixed(r=[D2, 0, 0])

    def equations(self):
        yield from super().equations()
        yield from connect_chain(self.crank, self.j5, self.coupler2, self.j6, self.rocker2,
                                 self.j7)
        yield mb.connect(self.j7.frame_b, self.anchor2.frame_b)


def links_energy(res, links, g=G):
    """Total energy of slender links ``(name, length, mass, inertia)`` along a result."""
    total = 0.0
    for name, length, m, inertia in links:
        kinetic, potential = body_energy(res, name, m, [length / 2, 0, 0],
                                         [inertia / 100, inertia, inertia], g)
        total = total + kinetic + potential
    return total


DOUBLE_LINKS = [("crank", A, MASSES[0], INERTIAS[0]), ("coupler", B, MASSES[1], INERTIAS[1]),
                ("rocker", C, MASSES[2], INERTIAS[2]), ("coupler2", B2, MASSES[1], INERTIAS[1]),
                ("rocker2", C2, MASSES[2], INERTIAS[2])]


# -- a four-bar at the tip of a chain ---------------------------------------------------------
class FourbarOnChain(RevoluteChain):
    """:class:`mb_trees.RevoluteChain` of ``n`` links with the crank-rocker four-bar mounted at
    its tip (ground pivots on the last link's frame_b and a FixedTranslation of D from it):
    one loop at the end of a long chain."""

    def __init__(self, n, theta0=0.3, w0=1.0, **modifiers):
        super().__init__(n, **modifiers)
        phi, psi = fourbar_angles(theta0)
        self.j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(theta0), w=mb.Fixed(w0))
        self.crank = _link(A, MASSES[0], INERTIAS[0])
        self.j2 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(phi - theta0), prescribed=False)
        self.coupler = _link(B, MASSES[1], INERTIAS[1])
        self.j3 = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(psi + math.pi - phi),
                               prescribed=False)
        self.rocker = _link(C, MASSES[2], INERTIAS[2])
        self.j4 = mbl.Revolute(n=[0, 0, 1], prescribed=False)
        self.ground = mbl.FixedTranslation(r=[D, 0, 0])

    def equations(self):
        yield from super().equations()
        tip = getattr(self, f"link{self.n - 1}").frame_b
        yield mb.connect(tip, self.j1.frame_a, self.ground.frame_a)
        yield from connect_chain(self.j1, self.crank, self.j2, self.coupler, self.j3,
                                 self.rocker, self.j4)
        yield mb.connect(self.j4.frame_b, self.ground.frame_b)


# -- a spatial four-bar: crank (z) - universal - coupler - ball - rocker (y) ------------------
RUSR_CRANK, RUSR_COUPLER, RUSR_ROCKER = 0.1, 0.351, 0.2
RUSR_PIVOT = np.array([0.3, 0.15, 0.0])   # rocker pivot, axis along y


def rusr_points(theta, psi):
    """Crank tip U and rocker tip S (world) for crank angle theta (about z at the origin)
    and rocker angle psi (about y at RUSR_PIVOT), from the rotation formulas alone."""
    u = RUSR_CRANK * np.array([np.cos(theta), np.sin(theta), 0.0])
    s = RUSR_PIVOT + RUSR_ROCKER * np.array([np.cos(psi), 0.0, -np.sin(psi)])
    return u, s


def rusr_rocker_angle(theta, near):
    """The rocker angle closing the loop (|S - U| = coupler length) next to ``near``."""
    from scipy.optimize import brentq

    def gap(psi):
        u, s = rusr_points(theta, psi)
        return np.linalg.norm(s - u) - RUSR_COUPLER
    return brentq(gap, near - 0.2, near + 0.2, xtol=1e-14)


def rusr_start_angle(theta):
    """The rocker angle closing the loop on the branch with psi in (0, pi)."""
    grid = np.linspace(1e-3, math.pi - 1e-3, 400)
    gaps = [np.linalg.norm(np.subtract(*rusr_points(theta, p)[::-1])) - RUSR_COUPLER
            for p in grid]
    k = next(i for i in range(len(grid) - 1) if gaps[i] * gaps[i + 1] <= 0)
    return rusr_rocker_angle(theta, 0.5 * (grid[k] + grid[k + 1]))


class SpatialFourbar(mb.Model):
    """RUSR linkage: crank about z, a universal joint (z then y) at its tip, the coupler, a
    ball joint to the rocker, which turns about y at RUSR_PIVOT: non-parallel axes, a
    spatial loop, one degree of freedom. The ball joint is a
    :class:`~mbmodel.libraries.multibody.SphericalConstraint` (three position constraints
    on four joint angles), or with ``ball_joint=True`` a ``Spherical`` joint with quaternion
    coordinates, the loop then closed by the connection to the rocker (six constraints).
    With ``universal=True`` the two revolutes at the crank tip are one ``Universal``."""

    def __init__(self, theta0=0.2, w0=3.0, g=G, ball_joint=False, universal=False,
                 **modifiers):
        super().__init__(**modifiers)
        psi0 = rusr_start_angle(theta0)
        u, s = rusr_points(theta0, psi0)
        d = (s - u) / RUSR_COUPLER  # coupler direction: (cos(az) cos(el), sin(az) cos(el), -sin(el))
        azimuth, elevation = math.atan2(d[1], d[0]), -math.asin(d[2])
        self.world = mbl.World(g=g)
        self.j1 = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(theta0), w=mb.Fixed(w0))
        self.crank = _link(RUSR_CRANK, MASSES[0], INERTIAS[0])
        if universal:
            self.cross = mbl.Universal(n_a=[0, 0, 1], n_b=[0, 1, 0],
                                       phi_a=mb.Guess(azimuth - theta0 + 0.02),
                                       phi_b=mb.Guess(elevation - 0.02), prescribed=False)
        else:
            self.ua = mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(azimuth - theta0 + 0.02),
                                   prescribed=False)
            self.ub = mbl.Revolute(n=[0, 1, 0], phi=mb.Guess(elevation - 0.02),
                                   prescribed=False)
        self.universal = universal
        self.coupler = _link(RUSR_COUPLER, MASSES[1], INERTIAS[1])
        self.ball = mbl.Spherical() if ball_joint else mbl.SphericalConstraint()
        self.pivot = mbl.Fixed(r=list(RUSR_PIVOT))
        self.j4 = mbl.Revolute(n=[0, 1, 0], phi=mb.Guess(psi0 + 0.02), prescribed=False)
        self.rocker = _link(RUSR_ROCKER, MASSES[2], INERTIAS[2])

    def equations(self):
        yield mb.connect(self.world.frame_b, self.j1.frame_a)
        yield mb.connect(self.j1.frame_b, self.crank.frame_a)
        if self.universal:
            yield mb.connect(self.crank.frame_b, self.cross.frame_a)
            yield mb.connect(self.cross.frame_b, self.coupler.frame_a)
        else:
            yield mb.connect(self.crank.frame_b, self.ua.frame_a)
            yield mb.connect(self.ua.frame_b, self.ub.frame_a)
            yield mb.connect(self.ub.frame_b, self.coupler.frame_a)
        yield mb.connect(self.coupler.frame_b, self.ball.frame_a)
        yield mb.connect(self.pivot.frame_b, self.j4.frame_a)
        yield mb.connect(self.j4.frame_b, self.rocker.frame_a)
        yield mb.connect(self.rocker.frame_b, self.ball.frame_b)


RUSR_LINKS = [("crank", RUSR_CRANK, MASSES[0], INERTIAS[0]),
              ("coupler", RUSR_COUPLER, MASSES[1], INERTIAS[1]),
              ("rocker", RUSR_ROCKER, MASSES[2], INERTIAS[2])]


# -- variants at the cut: a sensor, a damped joint, a composite's port ----------------------------
class Arm(mb.Model):
    """A joint and a link in one composite: frame_a -> joint -> link -> frame_b (ports)."""

    frame_a = mbl.Frame()
    frame_b = mbl.Frame()

    def __init__(self, length, m, inertia, joint, **modifiers):
        super().__init__(**modifiers)
        self.joint = joint
        self.link = _link(length, m, inertia)

    def equations(self):
        yield mb.connect(self.frame_a, self.joint.frame_a)
        yield mb.connect(self.joint.frame_b, self.link.frame_a)
        yield mb.connect(self.link.frame_b, self.frame_b)


class ArmFourbar(mb.Model):
    """The four-bar from :class:`Arm` composites; the rocker pivot j4 turns from the anchor
    and meets the rocker arm's port: the cut lies inside the arm, j4 reaches it through the
    port."""

    def __init__(self, theta0=0.3, w0=2.0, **modifiers):
        super().__init__(**modifiers)
        phi, psi = fourbar_angles(theta0)
        self.world = mbl.World()
        self.crank = Arm(A, MASSES[0], INERTIAS[0],
                         mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(theta0), w=mb.Fixed(w0)))
        self.coupler = Arm(B, MASSES[1], INERTIAS[1],
                           mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(phi - theta0),
                                        prescribed=False))
        self.rocker = Arm(C, MASSES[2], INERTIAS[2],
                          mbl.Revolute(n=[0, 0, 1], phi=mb.Guess(psi + math.pi - phi),
                                       prescribed=False))
        self.j4 = mbl.Revolute(n=[0, 0, 1], prescribed=False)
        self.anchor = mbl.Fixed(r=[D, 0, 0])

    def equations(self):
        yield from connect_chain(self.world, self.crank, self.coupler, self.rocker)
        yield mb.connect(self.anchor.frame_b, self.j4.frame_a)
        yield mb.connect(self.j4.frame_b, self.rocker.frame_b)
