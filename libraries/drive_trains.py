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

Anything else (fixed flanges, position sources, components that do not declare a coupling)
means the drive train is not a rigid load; :func:`rigid_load` then answers ``None`` and the
joint uses the plain flange torque (correct, solved by tearing, but not O(n)).

Example (what a joint's axis sees of a motor inertia behind a gear)::

    load = rigid_load(joint, joint.axis)    # inside joint.equations()
    if load is not None:
        J, B = load                         # tau_axis = -(J * qdd + B)
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca


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


def coupling_of(connector):
    """What the component owning ``connector`` declares for it, or ``None``."""
    declare = getattr(connector.owner, "drive_coupling", None)
    return declare(connector) if declare is not None else None


def rigid_load(model, flange):
    """``(J, B)`` of everything connected to ``flange`` (other than ``model`` itself): the
    torque those components need is ``J * a + B`` for the flange acceleration ``a``.
    ``None`` if something attached is not a rigid drive element or force element, or if rigid
    couplings close a loop. Call inside ``model.equations()``."""
    return _load(model, flange, set())


def _load(model, flange, visited):
    if id(flange) in visited:
        return None  # rigid couplings close a loop: not a tree-shaped drive train
    visited.add(id(flange))
    inertia, bias = ca.SX(0), ca.SX(0)
    for member in model.connected(flange):
        role = coupling_of(member)
        if isinstance(role, ForceElement):
            bias = bias + role.flow
        elif isinstance(role, RigidCoupling):
            visited.add(id(member))
            far = _load(model, role.other, visited)
            if far is None:
                return None
            far_inertia, far_bias = far
            inertia = inertia + role.inertia + role.ratio ** 2 * far_inertia
            bias = bias + role.ratio * far_bias
        else:
            return None
    return inertia, bias


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
