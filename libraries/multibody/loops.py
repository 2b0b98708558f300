"""Kinematic loops: what a connection of two frames that closes a loop contributes.

The orientations of frames are equated along a spanning tree of the orientation graph
(:mod:`mbmodel.orientation`); a connection that closes a loop is a *cut*. At a cut the two
frames must coincide, and a constraint force keeps them together:

* **constraints** — the origins coincide (``r_0`` equal, 3 equations) and the orientations
  agree (3 rotation residues: angles of the relative rotation, zero when closed). The
  velocities and accelerations of the two frames are *not* equated: they are derivatives
  of the positions, which index reduction differentiates (equating them as well would
  over-determine the loop);
* **force** — the constraint force ``lambda = [t; f]`` (resolved in the frames) acts on the
  side of ``a`` and ``-lambda`` on the side of ``b``. In the forward analysis the flows are
  the articulated-body pair ``(I, b)``: a cut passes no inertia (``I = 0`` on both sides)
  and ``b`` carries ``+/- lambda``, so the tree's articulated-body sweep stays O(n) and only
  the few ``lambda`` are solved together with the loop's accelerations (a joint that ends
  at the cut, with no body beyond it, passes the cut force on and takes its acceleration
  from the loop: :func:`.spatial.articulated_step`). In the inverse
  analysis the cut forces and torques sum to zero.

**Planar loops** (every revolute axis on the loop parallel to one direction ``n``, every
prismatic axis perpendicular to it) move in a plane: three of the six constraints hold
identically and their constraint forces are undetermined (statically indeterminate). Such a
loop is detected from the joints' axes (at the declared parameter values) and closed with
the three in-plane constraints only (two position components perpendicular to ``n``, the
rotation about ``n``), the out-of-plane constraint forces set to zero (the MSL's
``planarCutJoint``, found automatically).
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from mbmodel.core import ROOTS
from mbmodel.errors import KinematicLoopError

from . import spatial as sp

PARALLEL_TOLERANCE = 1e-9


def loop_plane(cut):
    """Unit normal (resolved in ``cut.a``) of the plane a loop moves in, or ``None`` for a
    spatial loop. Each component on the loop tells how its frame_b turns relative to its
    frame_a (``relative_rotation()``: a constant rotation, a rotation about an axis, a slide
    along an axis, or ``None``: anything)."""
    Q = np.eye(3)  # coordinates of cut.a -> of the current frame, joint angles at zero
    axes, slides = [], []
    offset = np.zeros(3)  # from cut.a to cut.b along the loop, in cut.a's coordinates
    for k, (connector, component) in enumerate(cut.path):
        if component is None:
            continue  # a connection
        if component is ROOTS:  # World and Fixed frames are world-aligned
            offset += Q.T @ (_root_position(cut.path[k + 1][0]) - _root_position(connector))
            continue
        motion = getattr(component, "relative_rotation", lambda: None)()
        if motion is None:
            return None
        kind, value = motion
        forward = connector is component.frame_a
        r = _fixed_offset(component) if kind == "fixed" else np.zeros(3)
        if kind == "fixed":
            if forward:
                offset += Q.T @ r
                Q = value @ Q
            else:
                Q = value.T @ Q
                offset -= Q.T @ r
        elif kind == "axis":
            axes.append(Q.T @ value)
        elif kind == "slide":
            slides.append(Q.T @ value)
    if not axes:
        return None
    n = axes[0] / np.linalg.norm(axes[0])
    # Rotations about directions parallel to n keep n (and every component along it) in
    # place, so zero joint angles decide parallelism for all angles.
    if any(np.linalg.norm(np.cross(n, axis / np.linalg.norm(axis))) > PARALLEL_TOLERANCE
           for axis in axes):
        return None
    if any(abs(n @ s) > PARALLEL_TOLERANCE * np.linalg.norm(s) for s in slides):
        return None
    if np.linalg.norm(Q @ n - n) > PARALLEL_TOLERANCE:
        return None  # the frames cannot coincide with the plane in place: treat as spatial
    apart = float(n @ offset)
    if abs(apart) > 1e-9 * max(1.0, float(np.abs(offset).max())):
        raise KinematicLoopError(
            f"{cut.describe()} moves in a plane (its joint axes are parallel) but its two "
            f"ends lie {abs(apart):.6g} m apart along the plane's normal: it cannot close. "
            f"Check the offsets of its parts and the positions of its fixed frames")
    return n


def _fixed_offset(component) -> np.ndarray:
    """The constant offset ``r`` (frame_a coordinates) of a rigid part, zero if none."""
    from .frames import numeric_value
    if "r" not in type(component).__dict__ and not any("r" in vars(k)
                                                       for k in type(component).__mro__):
        return np.zeros(3)
    value = numeric_value(component, "r")
    return np.zeros(3) if value is None else np.asarray(value, dtype=float).ravel()


def _root_position(connector) -> np.ndarray:
    """World position of a root frame (a Fixed frame's ``r``, the World's origin)."""
    return _fixed_offset(connector.owner)


def in_plane_basis(n):
    """Two unit vectors completing the unit vector ``n`` to a right-handed basis."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(n, helper)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(n, e1)


def rotation_residue(R_a, R_b):
    """Angles (about the x, y, z axes of frame a) of the rotation from frame a to frame b:
    zero when the orientations agree, each exact for a rotation about its own axis (and
    ``pi`` rather than zero when turned half a turn)."""
    rel = R_b @ R_a.T
    return ca.vertcat(ca.atan2(rel[2, 1] - rel[1, 2], rel[1, 1] + rel[2, 2]),
                      ca.atan2(rel[0, 2] - rel[2, 0], rel[0, 0] + rel[2, 2]),
                      ca.atan2(rel[1, 0] - rel[0, 1], rel[0, 0] + rel[1, 1]))


def _check_movable(cut):
    """A loop of rigid parts only has nothing to close with: a clear error."""
    motions = [getattr(c, "relative_rotation", lambda: None)() for c in cut.components]
    if any(m is None or m[0] != "fixed" for m in motions):
        return
    roots = [connector.path for connector, step in cut.path if step is ROOTS]
    roots += [cut.path[k + 1][0].path for k, (_, step) in enumerate(cut.path) if step is ROOTS]
    joined = (f" (it joins two roots, {' and '.join(roots)}, which both fix the orientation)"
              if roots else "")
    raise KinematicLoopError(
        f"{cut.describe()} contains no joint: it connects frames that are already rigidly "
        f"fixed to each other{joined}, which over-determines them; remove one root or the "
        f"connection, or put a joint into the loop")


def closure_equations(a, b, cut):
    """The equations of the cut between frames ``a`` and ``b`` (see the module docs)."""
    where = cut.describe()
    _check_movable(cut)
    n = loop_plane(cut)
    forward = "I" in cut.flows_a
    if forward:
        yield cut.flows_a["I"] == ca.SX.zeros(21, 1), f"{where}: no inertia through the cut"
        yield cut.flows_b["I"] == ca.SX.zeros(21, 1), f"{where}: no inertia through the cut"
        force_a = cut.flows_a["b"]
        yield force_a + cut.flows_b["b"] == ca.SX.zeros(6, 1), f"{where}: constraint force"
    else:
        force_a = ca.vertcat(cut.flows_a["t"], cut.flows_a["f"])
        yield (force_a + ca.vertcat(cut.flows_b["t"], cut.flows_b["f"]) == ca.SX.zeros(6, 1),
               f"{where}: constraint force")
    if n is None:
        yield b.r_0 == a.r_0, f"{where}: origins coincide"
        yield (rotation_residue(a.R, b.R) == ca.SX.zeros(3, 1),
               f"{where}: orientations agree")
        return
    e1, e2 = in_plane_basis(n)
    offset = a.R @ (b.r_0 - a.r_0)  # resolved in a, where n is constant
    yield (ca.vertcat(sp.vec(e1).T @ offset, sp.vec(e2).T @ offset) == ca.SX.zeros(2, 1),
           f"{where}: origins coincide in the plane (planar loop)")
    turned = b.R @ (a.R.T @ sp.vec(e1))  # e1 of frame a, resolved in frame b
    yield (ca.atan2(sp.vec(e2).T @ turned, sp.vec(e1).T @ turned) == 0,
           f"{where}: orientations agree about the plane normal (planar loop)")
    torque, force = force_a[0:3], force_a[3:6]
    yield (ca.vertcat(sp.vec(e1).T @ torque, sp.vec(e2).T @ torque, sp.vec(n).T @ force)
           == ca.SX.zeros(3, 1),
           f"{where}: no constraint force out of the plane (planar loop)")
