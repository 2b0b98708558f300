"""Spatial (6-D) vector algebra on casadi SX, written block-wise so generated code stays small.

Conventions (Featherstone's, resolved in the frame a quantity belongs to):

* motion vector ``m = [w; v]``: angular velocity and the velocity of the body-fixed point at
  the frame origin; force vector ``f = [t; f]``: torque about the origin and force;
* a frame ``b`` relative to ``a``: rotation ``E`` maps ``a`` coordinates to ``b`` coordinates
  (``T_b = E T_a``, MSL's convention for orientation objects) and ``r`` is the position of
  ``b``'s origin from ``a``'s, resolved in ``a``. The motion transform ``X`` (``a -> b``) is
  ``[E, 0; -E r~, E]``; forces go back with ``X^T``;
* a symmetric 6x6 inertia travels between components packed as its 21 upper-triangle
  entries, row by row.

Operations whose arguments are numeric constants (a coordinate axis, a fixed offset) fold
to nothing in casadi, so one general formula serves every joint axis without extra cost.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

#: (row, column) of the 21 packed entries of a symmetric 6x6 matrix.
PACKED_INDEX = [(i, j) for i in range(6) for j in range(i, 6)]


def vec(x) -> ca.SX:
    """A column SX from a number sequence, numpy array or SX."""
    if isinstance(x, ca.SX):
        return ca.vec(x)
    return ca.SX(np.asarray(x, dtype=float).reshape(-1, 1))


def skew(r) -> ca.SX:
    """Cross-product matrix: ``skew(r) @ x == cross(r, x)``."""
    return ca.vertcat(ca.horzcat(0, -r[2], r[1]),
                      ca.horzcat(r[2], 0, -r[0]),
                      ca.horzcat(-r[1], r[0], 0))


def cross(a, b) -> ca.SX:
    return ca.vertcat(a[1] * b[2] - a[2] * b[1],
                      a[2] * b[0] - a[0] * b[2],
                      a[0] * b[1] - a[1] * b[0])


def planar_rotation(e, angle) -> ca.SX:
    """Rotation ``E`` of a frame turned by ``angle`` about the unit axis ``e`` (same
    coordinates in both frames): ``E = e e' + (1 - e e') cos(angle) - skew(e) sin(angle)``."""
    e = vec(e)
    eet = e @ e.T
    return eet + (ca.SX.eye(3) - eet) * ca.cos(angle) - skew(e) * ca.sin(angle)


def quaternion_rotation(Q) -> ca.SX:
    """Rotation ``E`` (a -> b coordinates) of the quaternion ``Q = [q1, q2, q3, q4]`` (vector
    part first, MSL order). Divided by ``|Q|^2``, so it is a rotation for any non-zero Q and
    integration drift of the norm never distorts the frame."""
    qv, q4 = Q[0:3], Q[3]
    n2 = ca.dot(Q, Q)
    E = (q4 * q4 - ca.dot(qv, qv)) * ca.SX.eye(3) + 2 * (qv @ qv.T) - 2 * q4 * skew(qv)
    return E / n2


def quaternion_derivative(Q, w) -> ca.SX:
    """``der(Q)`` for the relative angular velocity ``w`` resolved in the rotated frame."""
    q1, q2, q3, q4 = Q[0], Q[1], Q[2], Q[3]
    return 0.5 * ca.vertcat(q4 * w[0] - q3 * w[1] + q2 * w[2],
                            q3 * w[0] + q4 * w[1] - q1 * w[2],
                            -q2 * w[0] + q1 * w[1] + q4 * w[2],
                            -q1 * w[0] - q2 * w[1] - q3 * w[2])


def rotation_to_quaternion(E) -> np.ndarray:
    """Numeric quaternion ``[q1, q2, q3, q4]`` of a rotation matrix (a -> b coordinates)."""
    E = np.asarray(E, dtype=float)
    R = E.T  # the rotation of frame b seen from a
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        w, x, y, z = 0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        w, x, y, z = (R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        w, x, y, z = (R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s
    else:
        s = 2.0 * np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        w, x, y, z = (R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s
    return np.array([x, y, z, w])


# -- motion and force vectors ------------------------------------------------------------

def motion_to_child(m, E=None, r=None) -> ca.SX:
    """``X m``: a motion vector of frame a expressed at frame b."""
    w, v = m[0:3], m[3:6]
    if r is not None:
        v = v + cross(w, r)
    if E is not None:
        w, v = E @ w, E @ v
    return ca.vertcat(w, v)


def force_to_parent(f, E=None, r=None) -> ca.SX:
    """``X^T f``: a force vector at frame b expressed at frame a."""
    t, F = f[0:3], f[3:6]
    if E is not None:
        t, F = E.T @ t, E.T @ F
    if r is not None:
        t = t + cross(r, F)
    return ca.vertcat(t, F)


def cross_motion(v, m) -> ca.SX:
    """``v x m`` for motion vectors (the velocity-product term of accelerations)."""
    w, u = v[0:3], v[3:6]
    return ca.vertcat(cross(w, m[0:3]), cross(w, m[3:6]) + cross(u, m[0:3]))


def cross_force(v, f) -> ca.SX:
    """``v x* f`` for a motion vector v and force vector f (gyroscopic/Coriolis terms)."""
    w, u = v[0:3], v[3:6]
    return ca.vertcat(cross(w, f[0:3]) + cross(u, f[3:6]), cross(w, f[3:6]))


# -- symmetric 6x6 inertias --------------------------------------------------------------

def unpack(p) -> ca.SX:
    """Symmetric 6x6 SX from its 21 packed entries (shared nodes, no arithmetic)."""
    M = ca.SX(6, 6)
    for k, (i, j) in enumerate(PACKED_INDEX):
        M[i, j] = p[k]
        if i != j:
            M[j, i] = p[k]
    return M


def pack(M) -> ca.SX:
    """The 21 upper-triangle entries of a symmetric 6x6 SX (the lower ones are never used,
    so the generated code never computes them)."""
    return ca.vertcat(*[M[i, j] for i, j in PACKED_INDEX])


def mirror_upper(M) -> ca.SX:
    """The symmetric matrix whose lower triangle is the upper triangle of ``M`` (the same
    expression nodes): a symmetric result then costs its upper triangle only."""
    n = M.shape[0]
    S = ca.SX(n, n)
    for i in range(n):
        for j in range(i, n):
            S[i, j] = M[i, j]
            if i != j:
                S[j, i] = M[i, j]
    return S


def rotate_symmetric(S, E) -> ca.SX:
    """``E^T S E`` for a symmetric 3x3 ``S``, computing the upper triangle only."""
    P = S @ E
    R = ca.SX(3, 3)
    for i in range(3):
        for j in range(i, 3):
            R[i, j] = E[:, i].T @ P[:, j]
    return mirror_upper(R)


def inertia_to_parent(A, E=None, r=None) -> ca.SX:
    """``X^T A X``: a 6x6 inertia at frame b expressed at frame a, in two structured steps
    (rotation, then translation ``A11 + r~ A21 - (A12 + r~ A22) r~``)."""
    A11, A12, A22 = A[0:3, 0:3], A[0:3, 3:6], A[3:6, 3:6]
    if E is not None:
        A11, A12, A22 = rotate_symmetric(A11, E), E.T @ A12 @ E, rotate_symmetric(A22, E)
    if r is not None:
        rx = skew(r)
        B = A12 + rx @ A22
        A11 = A11 + rx @ A12.T - B @ rx
        A12 = B
    return ca.vertcat(ca.horzcat(A11, A12), ca.horzcat(A12.T, A22))


def body_inertia(m, c, I_c) -> ca.SX:
    """Spatial inertia at a frame of a body with mass m, centre of mass c and inertia I_c
    about the centre of mass (all resolved in the frame)."""
    cx = skew(c)
    return ca.vertcat(ca.horzcat(I_c - m * (cx @ cx), m * cx),
                      ca.horzcat(-m * cx, m * ca.SX.eye(3)))


def spd_solve(D, B) -> ca.SX:
    """``D^-1 B`` for a symmetric positive definite k x k SX matrix ``D`` by an LDL^T
    factorisation without pivoting (pivots of a positive definite matrix stay positive at
    every configuration, unlike the pivots a generic elimination would choose)."""
    k = D.shape[0]
    if k == 1:
        return B / D[0, 0]
    L = [[None] * k for _ in range(k)]
    d = [None] * k
    for j in range(k):
        s = D[j, j]
        for m in range(j):
            s = s - L[j][m] * L[j][m] * d[m]
        d[j] = s
        for i in range(j + 1, k):
            s = D[i, j]
            for m in range(j):
                s = s - L[i][m] * L[j][m] * d[m]
            L[i][j] = s / d[j]
    cols = []
    for c in range(B.shape[1]):
        y = [None] * k
        for i in range(k):
            s = B[i, c]
            for m in range(i):
                s = s - L[i][m] * y[m]
            y[i] = s
        x = [None] * k
        for i in reversed(range(k)):
            s = y[i] / d[i]
            for m in range(i + 1, k):
                s = s - L[m][i] * x[m]
            x[i] = s
        cols.append(ca.vertcat(*x))
    return ca.horzcat(*cols)


def articulated_step(A, beta, Phi, tau, psi, c, armature=None, locked=None):
    """One joint of the articulated-body algorithm.

    ``A``, ``beta``: articulated inertia and bias force of the subtree at the joint's child
    frame (force the joint exerts on the subtree ``= A a_b + beta``); ``Phi`` (6 x k) the
    motion subspace in child coordinates; ``tau`` the k joint forces; ``psi`` the velocity
    product term and ``c = X a_a`` the parent acceleration seen at the child frame.

    Returns ``(N, bias, qdd, hold)``: the subtree as seen through the joint (``N`` and
    ``bias`` at the child frame, still to be transformed to the parent), the joint
    accelerations ``qdd = D^-1 (u - U^T c)`` with ``U = A Phi``, ``D = Phi^T U``,
    ``u = tau - Phi^T beta - U^T psi``, and ``hold``, the joint force a lock adds. ``armature``
    (k x k or scalar) is inertia driven rigidly with the joint coordinates (motor inertia
    behind a gear), added to ``D``. ``locked`` (a 0/1 expression, constant between events)
    locks the joint as Otter, Elmqvist and Cellier (1993) describe: ``qdd = 0``, the subtree
    passes unreduced (``N = A``, ``bias = A psi + beta``) and ``hold = U^T c - u`` is the
    force that keeps it still; unlocked, ``hold = 0``.
    """
    U = A @ Phi
    D = Phi.T @ U
    if armature is not None:
        D = D + armature
    u = tau - Phi.T @ beta - U.T @ psi
    Wt = spd_solve(D, ca.horzcat(U.T, u))  # D^-1 [U^T, u]
    D_inv_Ut, D_inv_u = Wt[:, 0:6], Wt[:, 6]
    reduction, pass_on = U @ D_inv_Ut, U @ D_inv_u
    qdd = D_inv_u - D_inv_Ut @ c
    hold = ca.SX.zeros(u.shape)
    if locked is not None:
        moving = 1 - locked
        reduction, pass_on, qdd = moving * reduction, moving * pass_on, moving * qdd
        hold = locked * (U.T @ c - u)
    N = mirror_upper(A - reduction)  # symmetric: the lower triangle would cost as much
    bias = A @ psi + beta + pass_on
    return N, bias, qdd, hold
