"""An event-driven reference for a planar chain of revolute joints with Coulomb friction in
every joint, written independently of mbmodel: Pinocchio's mass matrix and bias forces,
scipy's solve_ivp with event functions (test helper, not a test module).

The chain: joint i turns about y, link i is 1 m long along its x axis with a 1 kg body at
its middle (inertia 0.01 kg m² about each axis at the centre of mass), gravity 9.81 along
-z. Every joint has a friction torque ``T`` while it slides (against the motion) and holds
up to ``peak*T`` while it sticks (MSL ``BearingFriction`` with ``tau_pos = [[0, T]]``).

Modes per joint: +1 / -1 sliding forward / backward, 0 stuck. With the stuck set S the
dynamics are ``M qdd + h = tau_f`` with ``qdd_S = 0``: the free joints' accelerations and
the stuck joints' holding torques ``lambda_S`` follow from the partitioned system. Events:
a sliding joint's speed reaching zero (it sticks), a stuck joint's ``|lambda|`` reaching
``peak*T`` (it breaks away, against the torque that held it). After each event the stuck
set is checked: a joint whose holding torque exceeds ``peak*T`` breaks away at once (the
one farthest over its limit first, then the set is checked again).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

G, LINK, MASS, INERTIA = 9.81, 1.0, 1.0, 0.01


def pinocchio_chain(n):
    import pinocchio as pin
    model = pin.Model()
    parent = 0
    for i in range(n):
        placement = pin.SE3(np.eye(3), np.array([LINK if i else 0.0, 0.0, 0.0]))
        parent = model.addJoint(parent, pin.JointModelRY(), placement, f"j{i}")
        model.appendBodyToJoint(parent, pin.Inertia(MASS, np.array([LINK / 2, 0.0, 0.0]),
                                                    INERTIA * np.eye(3)), pin.SE3.Identity())
    model.gravity.linear = np.array([0.0, 0.0, -G])
    return model


class ChainWithFriction:
    """The reference solution; ``run(q0, qd0, t_end, times)`` returns the joint angles at
    ``times`` and the list of (time, joint, new mode)."""

    def __init__(self, n, T=2.0, peak=1.2):
        import pinocchio as pin
        self.pin, self.n, self.T, self.peak = pin, n, T, peak
        self.model = pinocchio_chain(n)
        self.data = self.model.createData()

    def mass_and_bias(self, q, qd):
        pin = self.pin
        M = pin.crba(self.model, self.data, q)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(self.model, self.data, q, qd)
        return M, h

    def accelerations(self, q, qd, modes):
        """qdd and the holding torques of the stuck joints (0 elsewhere)."""
        M, h = self.mass_and_bias(q, qd)
        stuck = modes == 0
        free = ~stuck
        tau = np.where(free, -self.T * modes, 0.0)
        qdd = np.zeros(self.n)
        if free.any():
            qdd[free] = np.linalg.solve(M[np.ix_(free, free)], (tau - h)[free])
        hold = np.zeros(self.n)
        hold[stuck] = M[np.ix_(stuck, free)] @ qdd[free] + h[stuck]
        return qdd, hold

    def settle(self, q, qd, modes, t, events):
        """Break away the stuck joints that cannot hold, one at a time."""
        while True:
            _, hold = self.accelerations(q, qd, modes)
            over = np.where(modes == 0, np.abs(hold) - self.peak * self.T, -np.inf)
            k = int(np.argmax(over))
            if over[k] <= 0:
                return modes
            modes = modes.copy()
            modes[k] = -np.sign(hold[k])  # the holding torque resisted that direction
            events.append((t, k, int(modes[k])))

    def run(self, q0, qd0, t_end, times):
        n = self.n
        q, qd = np.array(q0, float), np.array(qd0, float)
        modes = np.sign(qd).astype(float)
        events = []
        t = 0.0
        modes = self.settle(q, qd, modes, t, events)
        pieces = []
        while t < t_end:
            frozen = modes.copy()

            def rhs(_t, y):
                qdd, _ = self.accelerations(y[:n], y[n:], frozen)
                return np.concatenate([np.where(frozen == 0, 0.0, y[n:]), qdd])

            def stop(k):
                def f(_t, y):
                    return y[n + k]
                f.terminal, f.direction = True, -frozen[k]
                return f

            def slip(k):
                def f(_t, y):
                    _, hold = self.accelerations(y[:n], y[n:], frozen)
                    return self.peak * self.T - abs(hold[k])
                f.terminal, f.direction = True, -1
                return f
            fns = [stop(k) if frozen[k] else slip(k) for k in range(n)]
            sol = solve_ivp(rhs, (t, t_end), np.concatenate([q, qd]), method="DOP853",
                            rtol=1e-12, atol=1e-12, events=fns, dense_output=True)
            pieces.append(sol)
            t, y = sol.t[-1], sol.y[:, -1]
            q, qd = y[:n].copy(), y[n:].copy()
            if sol.status == -1:
                raise RuntimeError(f"reference integration failed at t = {t}: {sol.message}")
            if sol.status != 1:
                break
            hit = [k for k in range(n) if len(sol.t_events[k])]
            _, hold = self.accelerations(q, qd, frozen)
            for k in hit:
                if frozen[k]:  # a sliding joint stopped
                    qd[k] = 0.0
                    modes[k] = 0
                    events.append((t, k, 0))
                else:  # a stuck joint's holding torque reached its limit: it breaks away
                    modes[k] = -np.sign(hold[k])
                    events.append((t, k, int(modes[k])))
            modes = self.settle(q, qd, modes, t, events)
        angles = np.empty((len(times), n))
        for j, tq in enumerate(times):
            piece = next(p for p in pieces if p.t[0] <= tq <= p.t[-1] + 1e-15)
            angles[j] = piece.sol(min(tq, piece.t[-1]))[:n]
        return angles, events
