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
What folding cannot see is an identity such as ``c^2 + s^2 = 1``: :class:`AxisRotation`
writes the rotation of inertias so that it is used, and :func:`gyroscopic` and
:func:`point_acceleration_matrix` offer forms that are cheaper when the folded values have
a known structure. Every form is exact for every value; declared values only choose.
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
    """``a x b``. Each product ``a_i b_j`` is formed with the factor of the lower index
    first, the order of :func:`_products`: where ``a`` and ``b`` hold components of one
    vector (an angular velocity and a joint rate that equals one of its components) the
    products are then the same expression nodes and merge."""
    def mul(i, j):
        return a[i] * b[j] if i <= j else b[j] * a[i]
    return ca.vertcat(mul(1, 2) - mul(2, 1),
                      mul(2, 0) - mul(0, 2),
                      mul(0, 1) - mul(1, 0))


class AxisRotation:
    """The rotation ``E`` of :func:`planar_rotation` (angle about a unit axis ``e`` with the
    same coordinates in both frames), kept as its parts ``E = P + c Q - s K`` with
    ``P = e e'``, ``Q = 1 - e e'``, ``K = e~``, ``c = cos(angle)``, ``s = sin(angle)``, so that
    :meth:`sandwich` can use ``c^2 + s^2 = 1``. The functions of this module take it wherever
    they take a rotation matrix; ``matrix`` is ``E`` itself.

    ``spare``: an index of a coordinate the axis has (almost) no component along, or
    ``None``. It only chooses which diagonal entry :meth:`sandwich` takes from a trace
    identity (exact for every axis): for a coordinate axis whose value is folded in, every
    entry of the result is then as cheap as a hand-written formula.
    """

    def __init__(self, e, angle, spare=None):
        e = vec(e)
        self.e = e
        self.c, self.s = ca.cos(angle), ca.sin(angle)
        # formed once: every sandwich of this rotation (three per articulated inertia) uses
        # them, and separately built products are separate operations in the code
        self.s2, self.cs = self.s * self.s, self.c * self.s
        self.P = e @ e.T
        self.K = skew(e)
        self.matrix = self.P + (ca.SX.eye(3) - self.P) * self.c - self.K * self.s
        self.spare = spare

    def sandwich(self, B, symmetric=False) -> ca.SX:
        """``E' B E``, expanded with ``c^2 = 1 - s^2``::

            E' B E = P B P + c (P B Q + Q B P) + s (K B P - P B K) + Q B Q - Z,
            Z = s^2 G - c s K G,    G = Q B Q + K B K.

        ``G`` and ``Z`` are symmetric and traceless for every ``B`` (the antisymmetric
        part of ``B`` cancels in ``G``; ``K G`` is symmetric for a symmetric ``G`` with
        ``G e = 0``), so only their upper triangles are formed and the ``spare`` diagonal
        entry is minus the sum of the other two. The terms with ``P`` are rank one
        (``P B P = e'Be P``, ``P B Q = e (B'e - e'Be e)'``, ...). For a coordinate axis they
        fold to a rotation of the axis row and column (4 products each) and the in-plane
        block to ``B - Z`` (4 products for ``Z``), where the plain product needs twice as
        many. With ``symmetric=True`` (``B`` symmetric) only the upper triangle is
        computed."""
        e, P, K, c, s = self.e, self.P, self.K, self.c, self.s
        Be = B @ e
        eB = Be if symmetric else B.T @ e
        beta = e.T @ Be
        M = e @ (eB - beta * e).T + (Be - beta * e) @ e.T          # P B Q + Q B P
        N = cross(e, Be) @ e.T + e @ cross(e, eB).T                  # K B P - P B K
        QBQ = B - M - beta * P
        G = _symmetric_traceless(QBQ + K @ B @ K, self.spare)
        Z = _symmetric_traceless(self.s2 * G - self.cs * (K @ G), self.spare)
        R = beta * P + c * M + s * N + QBQ - Z
        return mirror_upper(R) if symmetric else R


def _symmetric_traceless(M, spare) -> ca.SX:
    """The symmetric matrix of ``M``'s upper triangle; its ``spare`` diagonal entry minus
    the sum of the other two (``M`` must be symmetric and traceless)."""
    S = mirror_upper(M)
    if spare is not None:
        others = [S[i, i] for i in range(3) if i != spare]
        S[spare, spare] = -(others[0] + others[1])
    return S


def matrix_of(E):
    """The 3x3 matrix of a rotation given as a matrix or an :class:`AxisRotation`."""
    return E.matrix if isinstance(E, AxisRotation) else E


def axis_rotation(e, angle, declared=None):
    """The rotation about the unit axis ``e`` by ``angle``: an :class:`AxisRotation` when the
    declared (numeric) axis value lies along a coordinate axis, whose products then fold to
    the cheap formulas, else the plain matrix of :func:`planar_rotation` (an axis bound to
    an expression or a skew one: the dense products are cheaper there). Both are exact for
    every value the axis takes at run time."""
    if declared is not None:
        d = np.abs(np.asarray(declared, dtype=float).ravel())
        if d.size == 3 and np.count_nonzero(d) == 1:
            return AxisRotation(e, angle, spare=int(np.argmin(d)))
    return planar_rotation(e, angle)


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


def quaternion_of(E) -> ca.SX:
    """Quaternion ``[q1, q2, q3, q4]`` (vector part first, as :func:`quaternion_rotation`
    takes it) of the rotation matrix ``E`` (a -> b coordinates), as an SX expression:
    Shepperd's method (the largest of ``|q4|``, ``|q1|``, ``|q2|``, ``|q3|`` is formed from a
    square root, the others from it, so no branch loses precision), sign chosen so that
    ``q4 >= 0``. Inside ``equations()`` wrap it in ``mb.noEvent``: its comparisons pick a
    formula, they are no events.

    Example: ``Q = mb.noEvent(quaternion_of(frame.R))`` (of the frame's rotation in the
    world, :class:`~.sensors.AbsoluteSensor`)"""
    R = E.T  # the rotation of frame b seen from a
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    d = [R[0, 0], R[1, 1], R[2, 2]]
    # each candidate: ([x, y, z, w] up to the factor 1/(4 * its large component))
    cands = []
    s = ca.sqrt(ca.fmax(1 + tr, 0)) * 2                                   # 4 w
    cands.append([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s,
                  s / 4])
    s = ca.sqrt(ca.fmax(1 + d[0] - d[1] - d[2], 0)) * 2                   # 4 x
    cands.append([s / 4, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s,
                  (R[2, 1] - R[1, 2]) / s])
    s = ca.sqrt(ca.fmax(1 + d[1] - d[0] - d[2], 0)) * 2                   # 4 y
    cands.append([(R[0, 1] + R[1, 0]) / s, s / 4, (R[1, 2] + R[2, 1]) / s,
                  (R[0, 2] - R[2, 0]) / s])
    s = ca.sqrt(ca.fmax(1 + d[2] - d[0] - d[1], 0)) * 2                   # 4 z
    cands.append([(R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, s / 4,
                  (R[1, 0] - R[0, 1]) / s])
    keys = [tr, d[0], d[1], d[2]]
    q = [ca.vertcat(*c) for c in cands]
    # pick the candidate of the largest key (ties: the first)
    best, key = q[3], keys[3]
    for k in (2, 1, 0):
        take = keys[k] >= key
        best = ca.if_else(take, q[k], best)
        key = ca.fmax(keys[k], key)
    return ca.if_else(best[3] < 0, -best, best)


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
        E = matrix_of(E)
        w, v = E @ w, E @ v
    return ca.vertcat(w, v)


def acceleration_to_child(a, w, E=None, r=None, U=None) -> ca.SX:
    """``X (a + [0; w x (w x r)])``: the *classical* acceleration (angular; of the origin) of
    a frame b fixed to frame a (angular velocity ``w``) from frame a's: the offset adds the
    centripetal term. ``U``: frame a's :func:`point_acceleration_matrix`, if it is at hand
    (then ``a_b = X (a + [0; U r])``). Spatial accelerations go with :func:`motion_to_child`.
    """
    if r is None:
        return motion_to_child(a, E, r)
    if U is None:
        linear = a[3:6] + cross(a[0:3], r) + cross(w, cross(w, r))
    else:
        linear = a[3:6] + U @ r
    return motion_to_child(ca.vertcat(a[0:3], linear), E)


def _products(w):
    """The six products ``w_i w_j`` (i <= j) of a 3-vector, keyed by (i, j)."""
    return {(i, j): w[i] * w[j] for i in range(3) for j in range(i, 3)}


def point_acceleration_matrix(z, w, square_sum=None) -> ca.SX:
    """``U = z~ + w~ w~``: ``U d = z x d + w x (w x d)`` is the acceleration of a point at
    offset ``d`` relative to the frame origin (angular velocity w, angular acceleration z).
    Worth its 15 operations where two offsets share it (a link's far end and its centre of
    mass: 9 each instead of 22).

    ``square_sum``: ``(k, s)`` with ``s`` an expression known to equal ``w_i^2 + w_j^2``
    (``i, j`` the indices other than ``k``), e.g. the same sum formed in the frame before a
    rotation about coordinate axis ``k`` (:meth:`.joints.Revolute.square_sum`), which
    preserves it: the diagonal entry ``k`` then reuses it."""
    m = _products(w)
    diagonal = [-(m[1, 1] + m[2, 2]), -(m[0, 0] + m[2, 2]), -(m[0, 0] + m[1, 1])]
    if square_sum is not None:
        k, s = square_sum
        diagonal[k] = -s
    return ca.vertcat(
        ca.horzcat(diagonal[0], m[0, 1] - z[2], m[0, 2] + z[1]),
        ca.horzcat(m[0, 1] + z[2], diagonal[1], m[1, 2] - z[0]),
        ca.horzcat(m[0, 2] - z[1], m[1, 2] + z[0], diagonal[2]))


def gyroscopic(w, I, by_products=False) -> ca.SX:
    """``w x (I w)`` for a symmetric 3x3 ``I``, as ``w x ((I - I_11) w)`` (the same value,
    since ``w x w = 0``; one product less).

    ``by_products=True``: each component as a combination of the products ``w_i w_j`` with
    coefficients from ``I`` (component i is ``w_j (I w)_k - w_k (I w)_j`` for i, j, k
    cyclic; the squares come as ``I_jk (w_j^2 - w_k^2)``, one product for the two). The same
    value for every symmetric ``I``; for a diagonal ``I`` whose values are folded in it
    costs 6 operations (3 where :func:`point_acceleration_matrix` has formed the products
    already) where the cross product needs 11; for a full ``I`` it is dearer."""
    if not by_products:
        return cross(w, (I - I[0, 0] * ca.SX.eye(3)) @ w)
    m = _products(w)
    out = []
    for j, k in ((1, 2), (2, 0), (0, 1)):
        coef = {}  # (p, q) -> coefficient of w_p w_q
        for l in range(3):
            for p, q, term in ((j, l, I[k, l]), (k, l, -I[j, l])):
                key = (min(p, q), max(p, q))
                coef[key] = coef[key] + term if key in coef else term
        terms = []
        jj, kk = (j, j), (k, k)
        if ca.is_equal(I[k, j], I[j, k], 2):
            # the squares come as I_jk (w_j^2 - w_k^2): one product for the two
            terms.append(I[j, k] * (m[jj] - m[kk]))
            del coef[jj], coef[kk]
        out.append(sum(terms + [coef[key] * m[key] for key in sorted(coef)], ca.SX(0)))
    return ca.vertcat(*out)


def joint_bias(v_a, v_b, vJ, Phi, E=None, r=None, classical=False) -> ca.SX:
    """``psi`` of a joint's acceleration ``a_b = X a_a + Phi qdd + psi`` for the frame
    velocities ``v_a``, ``v_b`` and the joint velocity ``vJ = Phi qd``: ``v_b x vJ`` for
    spatial accelerations. For classical ones (``classical=True``) add ``w x u`` at b and
    subtract ``X [0; w x u]`` of a; a rotation about the origin (no offset, ``Phi`` without
    linear rows) moves the origin not at all, so there ``psi = [w_b x vJ_w; 0]``."""
    spatial = cross_motion(v_b, vJ)
    if not classical:
        return spatial
    if r is None and ca.SX(Phi[3:6, :]).is_zero():
        return ca.vertcat(spatial[0:3], ca.SX.zeros(3, 1))
    w_a, u_a, w_b, u_b = v_a[0:3], v_a[3:6], v_b[0:3], v_b[3:6]
    parent = cross(w_a, u_a)
    parent = parent if E is None else matrix_of(E) @ parent
    return ca.vertcat(spatial[0:3], spatial[3:6] + cross(w_b, u_b) - parent)


def force_to_parent(f, E=None, r=None) -> ca.SX:
    """``X^T f``: a force vector at frame b expressed at frame a."""
    t, F = f[0:3], f[3:6]
    if E is not None:
        E = matrix_of(E)
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
    if isinstance(E, AxisRotation):
        return E.sandwich(S, symmetric=True)
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
        A12 = E.sandwich(A12) if isinstance(E, AxisRotation) else E.T @ A12 @ E
        A11, A22 = rotate_symmetric(A11, E), rotate_symmetric(A22, E)
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
