"""Rigid 1-D drive trains as seen from a driven flange.

A drive train hanging on a flange whose motion is decided elsewhere (a multibody joint's axis
flange) needs a torque that is affine in the flange's acceleration ``a``::

    tau_needed = J a + B

where ``J`` is the inertia rigidly coupled to the flange, reflected through gears
(``J_motor * ratio**2``), and ``B`` collects the torques of everything that is not rigid
(springs, dampers, torque sources, an EMF) reflected the same way. A joint that knows ``J`` and
``B`` puts ``J`` into its own articulated-body step (like Pinocchio's *armature*), so forward
dynamics stays one pass per joint; without them the joint torque and every joint acceleration
end up in one linear system of the size of the mechanism.

Components say how they look from each of their flanges through :meth:`drive_coupling`:

* :class:`ForceElement` — the cut torque at this flange follows from the component's own
  equations (states, inputs, other flanges' positions and speeds) and not from this flange's
  acceleration: springs, dampers, sources, sensors, EMF.
* :class:`RigidCoupling` — the flange is rigidly geared to ``other`` (``ratio`` = d(other)/d(this))
  with ``inertia`` (at this flange's coordinate) between them: inertias, ideal gears, torque
  sensors.

* :class:`FrictionLock` — the flange turns rigidly with ``other`` against a fixed support
  through friction that can stick (bearing friction, brake): the sliding torque is known
  from the velocity, the holding torque while stuck follows from the rest of the system.
  A joint with one such lock on its drive train handles sticking in its own articulated
  step (Otter, Elmqvist and Cellier 1993: a locked joint passes the whole articulated
  inertia of its subtree to the parent), so forward dynamics stays one pass per joint.

Anything else (fixed flanges, position sources, components that do not declare a coupling)
means the drive train is not a rigid load; :func:`drive_load` then answers ``None`` and the
joint uses the plain flange torque (correct, solved by tearing, but not O(n)).

Example (what a joint's axis sees of a motor inertia behind a gear)::

    load = rigid_load(joint, joint.axis)    # inside joint.equations()
    if load is not None:
        J, B = load                         # tau_axis = -(J * qdd + B)
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
from casadi import if_else

from mbmodel import Connector


@dataclass
class ForceElement:
    """The flange's cut torque (or force) ``flow`` is set by the component's own equations,
    independently of the flange's acceleration."""

    flow: ca.SX


@dataclass
class RigidCoupling:
    """The flange moves rigidly with ``other``: ``d(other) = ratio * d(flange)``; ``inertia``
    (or mass) sits between them, measured at the flange's coordinate."""

    other: object
    ratio: object = 1.0
    inertia: object = 0.0


@dataclass
class FrictionLock:
    """The flange moves rigidly with ``other`` and ``element`` (a friction component with the
    stick–slip state machine) acts on it against the fixed support: its cut torque at the
    flange is ``sliding`` while ``locked`` is false; while locked the flange stands still.
    A joint that takes the lock into its articulated step yields
    ``element.holding_equation(torque)`` in place of the element's own acceleration
    equation (see :func:`lock_holder`)."""

    element: object
    other: object
    locked: ca.SX
    sliding: ca.SX
    inertia: object = 0.0  # moving with the flanges (a sliding mass with stops)


@dataclass
class DriveLoad:
    """What a drive train needs from the flange it hangs on: the torque ``inertia * a +
    bias`` (``bias`` counts the locks' sliding torques only while they slide), and the
    friction locks on it with the ratio ``d(lock flange)/d(flange)``."""

    inertia: ca.SX
    bias: ca.SX
    locks: list


def coupling_of(connector):
    """What the component owning ``connector`` declares for it, or ``None``."""
    declare = getattr(connector.owner, "drive_coupling", None)
    return declare(connector) if declare is not None else None


def rigid_load(model, flange):
    """``(J, B)`` of everything connected to ``flange`` (other than ``model`` itself): the
    torque those components need is ``J * a + B`` for the flange acceleration ``a``.
    ``None`` if something attached is not a rigid drive element or force element (friction
    that can stick included), or if rigid couplings close a loop. Call inside
    ``model.equations()``."""
    load = drive_load(model, flange)
    return None if load is None or load.locks else (load.inertia, load.bias)


def drive_load(model, flange):
    """:class:`DriveLoad` of everything connected to ``flange`` (other than ``model``), or
    ``None`` as for :func:`rigid_load`. Call inside ``model.equations()``."""
    return _load(model, flange, set())


def _load(model, flange, visited):
    if id(flange) in visited:
        return None  # rigid couplings close a loop: not a tree-shaped drive train
    visited.add(id(flange))
    inertia, bias, locks = ca.SX(0), ca.SX(0), []
    for member in model.connected(flange):
        role = coupling_of(member)
        if isinstance(role, ForceElement):
            bias = bias + role.flow
            continue
        if isinstance(role, RigidCoupling):
            ratio, own_inertia = role.ratio, role.inertia
        elif isinstance(role, FrictionLock):
            ratio, own_inertia = 1.0, role.inertia
            bias = bias + if_else(role.locked, 0, role.sliding)
            locks.append((role, 1.0))
        else:
            return None
        visited.add(id(member))
        far = _load(model, role.other, visited)
        if far is None:
            return None
        inertia = inertia + own_inertia + ratio ** 2 * far.inertia
        bias = bias + ratio * far.bias
        locks += [(lock, ratio * far_ratio) for lock, far_ratio in far.locks]
    return DriveLoad(inertia, bias, locks)


def lock_holder(element):
    """The component that solves the sticking of friction ``element`` in its own equations
    (a multibody joint with ``holds_lock(element)``, reached through rigid couplings), or
    ``None``. Call inside ``element.equations()``."""
    todo = [c for c in element.members().values()
            if isinstance(c, Connector) and isinstance(coupling_of(c), FrictionLock)]
    seen = {id(c) for c in todo}
    while todo:
        for member in element.connected(todo.pop()):
            holds = getattr(member.owner, "holds_lock", None)
            if holds is not None:
                if holds(element):
                    return member.owner
                continue
            role = coupling_of(member)
            if isinstance(role, (RigidCoupling, FrictionLock)) and id(role.other) not in seen:
                seen.add(id(role.other))
                todo.append(role.other)
    return None


def force_element(connector) -> ForceElement:
    """:class:`ForceElement` with the connector's (single) flow variable."""
    flows = [v.symbol for v in connector.variables().values() if v.kind == "flow"]
    return ForceElement(flows[0])


class ForceElementFlanges:
    """Mixin: every flange of the component is a :class:`ForceElement` (compliant elements,
    sources, sensors that transmit no torque)."""

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a rigid drive train (see the module)."""
        return force_element(flange)
