"""1-D rotational mechanics (after ``Modelica.Mechanics.Rotational``).

Sign conventions are those of the Modelica Standard Library: a flange carries the absolute
rotation angle ``phi`` (potential) and the cut torque ``tau`` (flow), positive when it acts
*on the component* through that flange. Components with an optional support flange take
``use_support`` (default ``False``); without support, the support is fixed at angle 0 and
its reaction torque goes to ground.

Example (a spring--inertia oscillator)::

    import mbmodel as mb
    from mbmodel.libraries import rotational as rot

    class Oscillator(mb.Model):
        fixed = rot.Fixed()
        spring = rot.Spring(c=100.0)
        inertia = rot.Inertia(J=0.5, phi=mb.Fixed(0.1), w=mb.Fixed(0.0))

        def equations(self):
            yield mb.connect(self.fixed.flange, self.spring.flange_a)
            yield mb.connect(self.spring.flange_b, self.inertia.flange_a)
"""

from __future__ import annotations

import math

import casadi as ca

import mbmodel as mb
from mbmodel.functions import if_else
from mbmodel import (Connector, Flow, Input, Model, Output, Parameter, Potential, Variable,
                     der)

from .drive_trains import ForceElementFlanges, RigidCoupling
from .friction import PartialFriction, PartialPressedFriction, table_function

__all__ = [
    "Flange", "Flange_a", "Flange_b", "Support",
    "PartialTwoFlanges", "PartialCompliant", "PartialCompliantWithRelativeStates",
    "PartialElementaryOneFlangeAndSupport2", "PartialElementaryTwoFlangesAndSupport2",
    "PartialTorque", "PartialAbsoluteSensor", "PartialRelativeSensor",
    "Fixed", "Inertia", "Spring", "Damper", "SpringDamper", "IdealGear",
    "Torque", "ConstantTorque", "Speed", "Position",
    "AngleSensor", "SpeedSensor", "AccSensor", "TorqueSensor", "RelativeAngleSensor",
    "RelativeSpeedSensor",
    "BearingFriction", "Clutch", "OneWayClutch", "Brake", "ElastoBacklash",
]


# --------------------------------------------------------------------------------------
# Connectors
# --------------------------------------------------------------------------------------

class Flange(Connector):
    """Rotational flange: absolute angle ``phi`` [rad] and cut torque ``tau`` [N.m].

    ``tau`` is positive when it acts on the component the flange belongs to (flow into the
    component). All flange classes below are connectable with one another.
    """

    phi = Potential(unit="rad", doc="Absolute rotation angle of the flange")
    tau = Flow(unit="N.m", doc="Cut torque in the flange (positive into the component)")


class Flange_a(Flange):
    """Flange on the 'a' side (drawn filled in MSL); identical to :class:`Flange`."""


class Flange_b(Flange):
    """Flange on the 'b' side (drawn hollow in MSL); identical to :class:`Flange`."""


class Support(Flange):
    """Support/housing flange of a component; identical to :class:`Flange`."""


# --------------------------------------------------------------------------------------
# Partial models
# --------------------------------------------------------------------------------------

class PartialTwoFlanges(Model):
    """Partial model: two flanges ``flange_a`` and ``flange_b``, no equations."""

    flange_a = Flange_a(doc="Left flange")
    flange_b = Flange_b(doc="Right flange")


class PartialCompliant(ForceElementFlanges, PartialTwoFlanges):
    """Partial model of a compliant connection of two flanges (MSL ``PartialCompliant``).

    Equations::

        phi_rel  = flange_b.phi - flange_a.phi
        flange_b.tau =  tau
        flange_a.tau = -tau

    Subclasses add one equation for ``tau``.
    """

    phi_rel = Variable(0.0, unit="rad", nominal=1e-4,
                       doc="Relative rotation angle (= flange_b.phi - flange_a.phi)")
    tau = Variable(unit="N.m", doc="Torque between flanges (= flange_b.tau)")

    def equations(self):
        yield self.phi_rel == self.flange_b.phi - self.flange_a.phi
        yield self.flange_b.tau == self.tau
        yield self.flange_a.tau == -self.tau


class PartialCompliantWithRelativeStates(ForceElementFlanges, PartialTwoFlanges):
    """Partial model of a compliant connection with relative states
    (MSL ``PartialCompliantWithRelativeStates``).

    Equations::

        phi_rel = flange_b.phi - flange_a.phi
        w_rel   = der(phi_rel)
        flange_b.tau =  tau
        flange_a.tau = -tau

    ``phi_rel`` and ``w_rel`` are declared with ``state_select="prefer"`` as in MSL (relative
    states are numerically better for stiff springs between rotating parts); override with
    e.g. ``Damper(phi_rel=mb.Start(0.0, state_select="default"))``. (MSL also defines
    ``a_rel = der(w_rel)``; it is left out here because no equation uses it and it would
    force a second differentiation of the connected flanges.)
    """

    phi_rel = Variable(0.0, unit="rad", nominal=1e-4, state_select="prefer",
                       doc="Relative rotation angle (= flange_b.phi - flange_a.phi)")
    w_rel = Variable(0.0, unit="rad/s", state_select="prefer",
                     doc="Relative angular velocity (= der(phi_rel))")
    tau = Variable(unit="N.m", doc="Torque between flanges (= flange_b.tau)")

    def equations(self):
        yield self.phi_rel == self.flange_b.phi - self.flange_a.phi
        yield self.w_rel == der(self.phi_rel)
        yield self.flange_b.tau == self.tau
        yield self.flange_a.tau == -self.tau


class PartialElementaryOneFlangeAndSupport2(Model):
    """Partial model: one ``flange`` and an optional ``support`` flange
    (MSL ``PartialElementaryOneFlangeAndSupport2``).

    With ``use_support=True`` the component has a connector ``support`` that takes the
    reaction torque ``support.tau = -flange.tau``; otherwise the support is fixed at angle
    0 (``phi_support = 0``) and the reaction goes to ground. Subclasses use
    :meth:`phi_support` in their equations and ``yield from self.support_equations()``.
    """

    flange = Flange_b(doc="Flange of shaft")

    def __init__(self, use_support: bool = False, **modifiers):
        super().__init__(**modifiers)
        self.use_support = bool(use_support)
        if self.use_support:
            self.support = Support(doc="Support/housing of component")

    def phi_support(self):
        """Absolute angle of the support: ``support.phi``, or 0 without support."""
        return self.support.phi if self.use_support else 0.0

    def support_equations(self):
        """``support.tau = -flange.tau`` if the support flange is enabled."""
        if self.use_support:
            yield self.support.tau == -self.flange.tau


class PartialElementaryTwoFlangesAndSupport2(PartialTwoFlanges):
    """Partial model: two flanges and an optional ``support``
    (MSL ``PartialElementaryTwoFlangesAndSupport2``).

    Equations::

        phi_a = flange_a.phi - phi_support
        phi_b = flange_b.phi - phi_support
        support.tau = -flange_a.tau - flange_b.tau     (only if use_support)

    ``phi_support = 0`` without support.
    """

    phi_a = Variable(unit="rad", doc="Angle of flange_a with respect to the support")
    phi_b = Variable(unit="rad", doc="Angle of flange_b with respect to the support")

    def __init__(self, use_support: bool = False, **modifiers):
        super().__init__(**modifiers)
        self.use_support = bool(use_support)
        if self.use_support:
            self.support = Support(doc="Support/housing of component")

    def phi_support(self):
        """Absolute angle of the support: ``support.phi``, or 0 without support."""
        return self.support.phi if self.use_support else 0.0

    def equations(self):
        yield self.phi_a == self.flange_a.phi - self.phi_support()
        yield self.phi_b == self.flange_b.phi - self.phi_support()
        if self.use_support:
            yield self.support.tau == -self.flange_a.tau - self.flange_b.tau


class PartialTorque(ForceElementFlanges, PartialElementaryOneFlangeAndSupport2):
    """Partial model of a torque acting at the flange (MSL ``PartialTorque``).

    Equations::

        phi = flange.phi - phi_support
        support.tau = -flange.tau        (only if use_support)
    """

    phi = Variable(unit="rad", doc="Angle of flange with respect to support")

    def equations(self):
        yield self.phi == self.flange.phi - self.phi_support()
        yield from self.support_equations()


class PartialAbsoluteSensor(ForceElementFlanges, Model):
    """Partial model measuring an absolute flange quantity; the sensor takes no torque:
    ``0 = flange.tau``."""

    flange = Flange_a(doc="Flange to be measured")

    def equations(self):
        yield self.flange.tau == 0


class PartialRelativeSensor(ForceElementFlanges, PartialTwoFlanges):
    """Partial model of a sensor between two flanges: ``0 = flange_a.tau + flange_b.tau``."""

    def equations(self):
        yield self.flange_a.tau + self.flange_b.tau == 0


# --------------------------------------------------------------------------------------
# Components
# --------------------------------------------------------------------------------------

class Fixed(Model):
    """Flange fixed in the housing at a given angle: ``flange.phi = phi0``."""

    phi0 = Parameter(0.0, unit="rad", doc="Fixed offset angle of housing")
    flange = Flange_b(doc="Flange fixed in housing at angle phi0")

    def equations(self):
        yield self.flange.phi == self.phi0


class Inertia(PartialTwoFlanges):
    """1-D rotational component with inertia (MSL ``Inertia``).

    Equations::

        phi = flange_a.phi
        phi = flange_b.phi
        w   = der(phi)
        a   = der(w)
        J*a = flange_a.tau + flange_b.tau

    ``phi`` and ``w`` are preferred states; give initial conditions with
    ``Inertia(J=1.0, phi=mb.Fixed(0.0), w=mb.Fixed(0.0))``.
    """

    J = Parameter(1.0, unit="kg.m2", min=0.0, doc="Moment of inertia")
    phi = Variable(0.0, unit="rad", state_select="prefer", doc="Absolute rotation angle")
    w = Variable(0.0, unit="rad/s", state_select="prefer", doc="Absolute angular velocity")
    a = Variable(0.0, unit="rad/s2", doc="Absolute angular acceleration")

    def equations(self):
        yield self.phi == self.flange_a.phi
        yield self.phi == self.flange_b.phi
        yield self.w == der(self.phi)
        yield self.a == der(self.w)
        yield self.J * self.a == self.flange_a.tau + self.flange_b.tau

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a rigid drive train
        (:mod:`mbmodel.libraries.drive_trains`)."""
        other = self.flange_b if flange is self.flange_a else self.flange_a
        return RigidCoupling(other, 1.0, self.J)


class Spring(PartialCompliant):
    """Linear 1-D rotational spring (MSL ``Spring``).

    Equations (with :class:`PartialCompliant`)::

        tau = c*(phi_rel - phi_rel0)
    """

    c = Parameter(1.0e5, unit="N.m/rad", min=0.0, doc="Spring constant")
    phi_rel0 = Parameter(0.0, unit="rad", doc="Unstretched spring angle")

    def equations(self):
        yield from super().equations()
        yield self.tau == self.c * (self.phi_rel - self.phi_rel0)


class Damper(PartialCompliantWithRelativeStates):
    """Linear 1-D rotational damper (MSL ``Damper``).

    Equations (with :class:`PartialCompliantWithRelativeStates`)::

        tau = d*w_rel
        lossPower = tau*w_rel
    """

    d = Parameter(0.0, unit="N.m.s/rad", min=0.0, doc="Damping constant")
    lossPower = Variable(unit="W", doc="Power dissipated by the damper (= tau*w_rel)")

    def equations(self):
        yield from super().equations()
        yield self.tau == self.d * self.w_rel
        yield self.lossPower == self.tau * self.w_rel


class SpringDamper(PartialCompliantWithRelativeStates):
    """Linear 1-D rotational spring and damper in parallel (MSL ``SpringDamper``).

    Equations (with :class:`PartialCompliantWithRelativeStates`)::

        tau_c = c*(phi_rel - phi_rel0)
        tau_d = d*w_rel
        tau   = tau_c + tau_d
        lossPower = tau_d*w_rel
    """

    c = Parameter(1.0e5, unit="N.m/rad", min=0.0, doc="Spring constant")
    d = Parameter(0.0, unit="N.m.s/rad", min=0.0, doc="Damping constant")
    phi_rel0 = Parameter(0.0, unit="rad", doc="Unstretched spring angle")
    tau_c = Variable(unit="N.m", doc="Spring torque")
    tau_d = Variable(unit="N.m", doc="Damping torque")
    lossPower = Variable(unit="W", doc="Power dissipated by the damper (= tau_d*w_rel)")

    def equations(self):
        yield from super().equations()
        yield self.tau_c == self.c * (self.phi_rel - self.phi_rel0)
        yield self.tau_d == self.d * self.w_rel
        yield self.tau == self.tau_c + self.tau_d
        yield self.lossPower == self.tau_d * self.w_rel


class IdealGear(PartialElementaryTwoFlangesAndSupport2):
    """Ideal gear without inertia (MSL ``IdealGear``); ``use_support`` adds a housing flange.

    Equations (with :class:`PartialElementaryTwoFlangesAndSupport2`)::

        phi_a = ratio*phi_b
        0     = ratio*flange_a.tau + flange_b.tau

    Seen from ``flange_a``, an inertia ``J`` on ``flange_b`` appears as ``J/ratio**2``;
    seen from ``flange_b``, an inertia on ``flange_a`` appears multiplied by ``ratio**2``.
    """

    ratio = Parameter(1.0, unit="1", doc="Transmission ratio (flange_a.phi/flange_b.phi)")

    def equations(self):
        yield from super().equations()
        yield self.phi_a == self.ratio * self.phi_b
        yield 0 == self.ratio * self.flange_a.tau + self.flange_b.tau

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a rigid drive train
        (:mod:`mbmodel.libraries.drive_trains`)."""
        if self.use_support:
            return None  # the housing moves too: not a plain rigid coupling
        if flange is self.flange_b:
            return RigidCoupling(self.flange_a, self.ratio)
        if flange is self.flange_a:
            return RigidCoupling(self.flange_b, 1 / self.ratio)
        return None


class Torque(ForceElementFlanges, PartialElementaryOneFlangeAndSupport2):
    """Input signal acting as external torque on the flange (MSL ``Sources.Torque``).

    Equations::

        flange.tau  = -tau
        support.tau = -flange.tau     (only if use_support)

    ``tau`` is an :class:`Input`: a positive value accelerates the flange relative to the
    support.
    """

    tau = Input(unit="N.m", doc="Accelerating torque acting at flange (= -flange.tau)")

    def equations(self):
        yield self.flange.tau == -self.tau
        yield from self.support_equations()


class ConstantTorque(PartialTorque):
    """Constant torque, not dependent on speed (MSL ``Sources.ConstantTorque``).

    Equations (with :class:`PartialTorque`)::

        w   = der(phi)
        tau = -flange.tau
        tau = tau_constant

    A positive ``tau_constant`` accelerates the flange in positive direction of rotation;
    the reaction acts on the support.
    """

    tau_constant = Parameter(0.0, unit="N.m", doc="Constant torque (negative: a load)")
    w = Variable(unit="rad/s", doc="Angular velocity of flange with respect to support")
    tau = Variable(unit="N.m", doc="Accelerating torque acting at flange (= -flange.tau)")

    def equations(self):
        yield from super().equations()
        yield self.w == der(self.phi)
        yield self.tau == -self.flange.tau
        yield self.tau == self.tau_constant


class Speed(PartialElementaryOneFlangeAndSupport2):
    """Forced movement of a flange by a reference angular velocity (MSL ``Sources.Speed``).

    Equations (``exact=True``, the default here; MSL's default is ``exact=false``)::

        phi = flange.phi - phi_support
        w   = der(phi)
        w   = w_ref

    With ``exact=False`` the reference is filtered by a first-order lag with cut-off
    frequency ``f_crit``: ``a = der(w)``, ``a = (w_ref - w)*2*pi*f_crit`` (``w`` is then a
    state too). ``phi`` starts at 0 with a fixed initial condition (as in MSL); change it
    with ``Speed(phi=mb.Fixed(1.0))`` or ``phi=mb.Guess(0.0)`` if another component already
    fixes the angle. ``w_ref`` is an :class:`Input`; with ``exact=True`` it must be
    differentiable if the flange drives an inertia.
    """

    f_crit = Parameter(50.0, unit="Hz", min=0.0, doc="Cut-off frequency if exact=False")
    phi = Variable(0.0, fixed=True, unit="rad", state_select="prefer",
                   doc="Rotation angle of flange with respect to support")
    w = Variable(0.0, unit="rad/s", state_select="prefer",
                 doc="Angular velocity of flange with respect to support")
    w_ref = Input(unit="rad/s", doc="Reference angular velocity of flange w.r.t. support")

    def __init__(self, exact: bool = True, use_support: bool = False, **modifiers):
        super().__init__(use_support=use_support, **modifiers)
        self.exact = bool(exact)
        if not self.exact:
            self.a = Variable(0.0, unit="rad/s2",
                              doc="Angular acceleration of flange with respect to support")

    def equations(self):
        yield self.phi == self.flange.phi - self.phi_support()
        yield self.w == der(self.phi)
        if self.exact:
            yield self.w == self.w_ref
        else:
            yield self.a == der(self.w)
            yield self.a == (self.w_ref - self.w) * (2 * math.pi * self.f_crit)
        yield from self.support_equations()


class Position(PartialElementaryOneFlangeAndSupport2):
    """Forced movement of a flange by a reference angle (MSL ``Sources.Position``).

    Equations (``exact=True``, the default here; MSL's default is ``exact=false``)::

        phi = flange.phi - phi_support
        phi = phi_ref

    With ``exact=False`` the reference is filtered by a critically damped 2nd-order
    Bessel-like filter with cut-off frequency ``f_crit`` (``w = der(phi)``,
    ``a = der(w)``, ``a = ((phi_ref - phi)*w_crit - af*w)*(w_crit/bf)``, ``af = 1.3617``,
    ``bf = 0.6180``, ``w_crit = 2*pi*f_crit``); ``phi`` and ``w`` are then states.
    ``phi_ref`` is an :class:`Input`; with ``exact=True`` it must be twice differentiable
    if the flange drives an inertia.
    """

    f_crit = Parameter(50.0, unit="Hz", min=0.0, doc="Cut-off frequency if exact=False")
    phi = Variable(0.0, unit="rad", doc="Rotation angle of flange with respect to support")
    phi_ref = Input(unit="rad", doc="Reference angle of flange with respect to support")

    def __init__(self, exact: bool = True, use_support: bool = False, **modifiers):
        super().__init__(use_support=use_support, **modifiers)
        self.exact = bool(exact)
        if not self.exact:
            self.w = Variable(0.0, unit="rad/s", state_select="prefer",
                              doc="Angular velocity of flange with respect to support")
            self.a = Variable(0.0, unit="rad/s2",
                              doc="Angular acceleration of flange with respect to support")

    def equations(self):
        yield self.phi == self.flange.phi - self.phi_support()
        if self.exact:
            yield self.phi == self.phi_ref
        else:
            af, bf = 1.3617, 0.6180
            w_crit = 2 * math.pi * self.f_crit
            yield self.w == der(self.phi)
            yield self.a == der(self.w)
            yield self.a == ((self.phi_ref - self.phi) * w_crit - af * self.w) * (w_crit / bf)
        yield from self.support_equations()


# --------------------------------------------------------------------------------------
# Sensors
# --------------------------------------------------------------------------------------

class AngleSensor(PartialAbsoluteSensor):
    """Ideal sensor of the absolute flange angle: ``phi = flange.phi``, ``0 = flange.tau``."""

    phi = Output(unit="rad", doc="Absolute angle of flange")

    def equations(self):
        yield from super().equations()
        yield self.phi == self.flange.phi


class SpeedSensor(PartialAbsoluteSensor):
    """Ideal sensor of the absolute angular velocity: ``w = der(flange.phi)``,
    ``0 = flange.tau``."""

    w = Output(unit="rad/s", doc="Absolute angular velocity of flange")

    def equations(self):
        yield from super().equations()
        yield self.w == der(self.flange.phi)


class AccSensor(PartialAbsoluteSensor):
    """Ideal sensor of the absolute angular acceleration: ``w = der(flange.phi)``,
    ``a = der(w)``, ``0 = flange.tau``."""

    w = Variable(unit="rad/s", doc="Absolute angular velocity of flange")
    a = Output(unit="rad/s2", doc="Absolute angular acceleration of flange")

    def equations(self):
        yield from super().equations()
        yield self.w == der(self.flange.phi)
        yield self.a == der(self.w)


class TorqueSensor(PartialRelativeSensor):
    """Ideal sensor of the torque transmitted from ``flange_a`` to ``flange_b``
    (MSL ``TorqueSensor``): ``flange_a.phi = flange_b.phi``, ``flange_a.tau = tau``,
    ``0 = flange_a.tau + flange_b.tau``."""

    tau = Output(unit="N.m", doc="Torque in flange flange_a and flange_b "
                                 "(tau = flange_a.tau = -flange_b.tau)")

    def equations(self):
        yield from super().equations()
        yield self.flange_a.phi == self.flange_b.phi
        yield self.flange_a.tau == self.tau

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a rigid drive train
        (:mod:`mbmodel.libraries.drive_trains`)."""
        return RigidCoupling(self.flange_b if flange is self.flange_a else self.flange_a)


class RelativeAngleSensor(PartialRelativeSensor):
    """Ideal sensor of the relative angle: ``phi_rel = flange_b.phi - flange_a.phi``,
    ``0 = flange_a.tau`` (and ``0 = flange_a.tau + flange_b.tau``)."""

    phi_rel = Output(unit="rad", doc="Relative angle (flange_b.phi - flange_a.phi)")

    def equations(self):
        yield from super().equations()
        yield self.phi_rel == self.flange_b.phi - self.flange_a.phi
        yield self.flange_a.tau == 0


class RelativeSpeedSensor(PartialRelativeSensor):
    """Ideal sensor of the relative angular velocity:
    ``phi_rel = flange_b.phi - flange_a.phi``, ``w_rel = der(phi_rel)``, ``0 = flange_a.tau``
    (and ``0 = flange_a.tau + flange_b.tau``)."""

    phi_rel = Variable(0.0, unit="rad", doc="Relative angle (flange_b.phi - flange_a.phi)")
    w_rel = Output(unit="rad/s", doc="Relative angular velocity (= der(phi_rel))")

    def equations(self):
        yield from super().equations()
        yield self.phi_rel == self.flange_b.phi - self.flange_a.phi
        yield self.w_rel == der(self.phi_rel)
        yield self.flange_a.tau == 0


# --------------------------------------------------------------------------------------
# Friction (stick–slip at events, see mbmodel.libraries.friction)
# --------------------------------------------------------------------------------------

class _RotatingOnSupport(PartialElementaryTwoFlangesAndSupport2):
    """Partial model: rigidly connected flanges turning against the support with a
    friction torque ``tau`` (bearing friction, brake)."""

    phi = Variable(0.0, unit="rad", doc="angle of the flanges relative to the support")
    w = Variable(0.0, unit="rad/s", state_select="prefer", doc="angular velocity")
    a = Variable(0.0, unit="rad/s2", doc="angular acceleration")
    tau = Variable(unit="N.m", doc="friction torque on the flanges")

    def support_kinematics(self):
        yield from PartialElementaryTwoFlangesAndSupport2.equations(self)
        yield self.phi == self.phi_a
        yield self.flange_b.phi == self.flange_a.phi
        yield self.w == der(self.phi)
        yield self.a == der(self.w)
        yield 0 == self.flange_a.tau + self.flange_b.tau - self.tau


class BearingFriction(PartialFriction, _RotatingOnSupport):
    """Coulomb friction in bearings (MSL ``BearingFriction``): the friction torque
    ``tau_pos(w)`` (rows ``[w, tau]``, w >= 0) opposes the rotation; at rest the bearing
    sticks until the torque on it exceeds ``peak*tau_pos(0)``.

    Equations (with the stick–slip state machine of :class:`PartialFriction`)::

        phi = flange_a.phi - phi_support,  flange_b.phi = flange_a.phi
        w = der(phi),  a = der(w)
        0 = flange_a.tau + flange_b.tau - tau
        tau0 = tau_pos(0),  tau0_max = peak*tau0
        tau = sa if locked else (+tau_pos(w) sliding forward, -tau_pos(-w) backward)

    ``tau_pos`` is a structural option (a table, not a run-time parameter).
    """

    peak = Parameter(1.0, min=1.0, doc="peak*tau_pos(0) = largest torque while stuck")

    def __init__(self, tau_pos=((0.0, 1.0),), use_support: bool = False, **modifiers):
        super().__init__(use_support=use_support, **modifiers)
        self.tau_pos = table_function(tau_pos, "BearingFriction tau_pos")

    def friction_terms(self):
        tau0 = self.tau_pos(0.0)
        return self.w, self.a, tau0, self.peak * tau0, 0

    def sliding_force(self):
        return self.sliding(self.tau_pos, self.w)

    def equations(self):
        yield from self.support_kinematics()
        yield from self.support_friction_equations(self.tau)

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a drive train
        (:mod:`mbmodel.libraries.drive_trains`): a friction lock."""
        return self.lock_coupling(flange)


class Clutch(PartialPressedFriction, PartialTwoFlanges):
    """Clutch with normal force input (MSL ``Clutch``): the friction torque
    ``cgeo*fn*mu_pos(w_rel)`` opposes the relative rotation of the flanges while they slip;
    engaged (``fn > 0``) and at equal speeds they lock until the transmitted torque exceeds
    ``peak*cgeo*fn*mu_pos(0)``; ``fn <= 0`` disengages it.

    Equations (with the state machine of :class:`PartialFriction`)::

        phi_rel = flange_b.phi - flange_a.phi,  w_rel = der(phi_rel),  a_rel = der(w_rel)
        flange_b.tau = tau,  flange_a.tau = -tau
        fn = fn_max*f_normalized,  free = fn <= 0
        tau0 = mu_pos(0)*cgeo*fn,  tau0_max = peak*tau0
        tau = sa if locked; 0 if free; else cgeo*fn*(+mu_pos(w_rel) or -mu_pos(-w_rel))
    """

    phi_rel = Variable(0.0, unit="rad", state_select="prefer",
                       doc="relative angle (= flange_b.phi - flange_a.phi)")
    w_rel = Variable(0.0, unit="rad/s", state_select="prefer", doc="relative speed")
    a_rel = Variable(0.0, unit="rad/s2", doc="relative acceleration")
    tau = Variable(unit="N.m", doc="torque transmitted (= flange_b.tau)")

    def __init__(self, mu_pos=((0.0, 0.5),), **modifiers):
        super().__init__(**modifiers)
        self.mu = table_function(mu_pos, "Clutch mu_pos")

    def equations(self):
        yield self.phi_rel == self.flange_b.phi - self.flange_a.phi
        yield self.w_rel == der(self.phi_rel)
        yield self.a_rel == der(self.w_rel)
        yield self.flange_b.tau == self.tau
        yield self.flange_a.tau == -self.tau
        yield from self.pressed_friction_equations(self.w_rel, self.a_rel, self.tau)


class Brake(PartialPressedFriction, _RotatingOnSupport):
    """Brake with normal force input (MSL ``Brake``): like :class:`Clutch`, between the
    flanges (rigidly connected) and the support. Released (``fn <= 0``) it is free.

    Equations (with the state machine of :class:`PartialFriction`)::

        phi = flange_a.phi - phi_support,  flange_b.phi = flange_a.phi
        w = der(phi),  a = der(w)
        0 = flange_a.tau + flange_b.tau - tau
        fn = fn_max*f_normalized,  free = fn <= 0
        tau0 = mu_pos(0)*cgeo*fn,  tau0_max = peak*tau0
        tau = sa if locked; 0 if free; else cgeo*fn*(+mu_pos(w) or -mu_pos(-w))
    """


    def __init__(self, mu_pos=((0.0, 0.5),), use_support: bool = False, **modifiers):
        super().__init__(use_support=use_support, **modifiers)
        self.mu = table_function(mu_pos, "Brake mu_pos")

    def friction_terms(self):
        return self.pressed_terms(self.w, self.a)

    def sliding_force(self):
        return self.pressed_sliding(self.w)

    def equations(self):
        yield from self.support_kinematics()
        yield from self.pressed_friction_equations(self.w, self.a, self.tau)

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a drive train
        (:mod:`mbmodel.libraries.drive_trains`): a friction lock."""
        return self.lock_coupling(flange)


class OneWayClutch(PartialTwoFlanges):
    """A clutch in parallel with a freewheel (MSL ``OneWayClutch``), with one constraint
    torque for both: the flanges lock whenever ``w_rel = flange_b.w - flange_a.w`` would
    turn negative; forward slip is resisted by the clutch torque ``cgeo*fn*mu_pos(w_rel)``
    and, while locked, starts only when the torque exceeds ``peak*cgeo*fn*mu_pos(0)``.
    Released (``fn <= 0``) it freewheels forward. Start it with ``w_rel >= 0``.

    Equations (``pre(stuck)`` starts false)::

        phi_rel = flange_b.phi - flange_a.phi,  w_rel = der(phi_rel),  a_rel = der(w_rel)
        flange_b.tau = tau,  flange_a.tau = -tau
        free = f_normalized <= 0,  fn = 0 if free else fn_max*f_normalized
        tau0 = mu_pos(0)*cgeo*fn
        tau0_max = 1e-4*mu_pos(0)*cgeo*fn_max if free else max(peak, 1 + 1e-4)*tau0
        startForward = pre(stuck) and (sa > tau0_max or pre(startForward) and sa > tau0
                                       or w_rel > w_small) or initial() and w_rel > 0
        locked = pre(stuck) and not startForward
        a_rel = 0 if locked else sa - tau0
        tau = sa if locked; 0 if free; else cgeo*fn*mu_pos(w_rel)
        stuck = locked or w_rel <= 0

    Example::

        clutch = OneWayClutch(mu_pos=[[0, 0.5]], fn_max=3.0, peak=25)
    """

    eps0 = 1e-4  # relative hysteresis of the freewheel (MSL's eps0)

    peak = Parameter(1.0, min=1.0, doc="peak*mu_pos(0) = largest coefficient while locked")
    cgeo = Parameter(1.0, min=0.0, doc="geometry constant (friction distribution)")
    fn_max = Parameter(1.0, unit="N", min=0.0, doc="largest normal force")
    w_small = Parameter(1e10, unit="rad/s", doc="relative speed above which a locked "
                                                "clutch starts sliding at once (jumps)")
    f_normalized = mb.Input(doc="normal force signal 0..1 (engaged if > 0)")
    phi_rel = Variable(0.0, unit="rad", state_select="prefer",
                       doc="relative angle (= flange_b.phi - flange_a.phi)")
    w_rel = Variable(0.0, unit="rad/s", state_select="prefer", doc="relative speed")
    a_rel = Variable(0.0, unit="rad/s2", doc="relative acceleration")
    tau = Variable(unit="N.m", doc="torque transmitted (= flange_b.tau)")
    fn = Variable(unit="N", doc="normal force")
    sa = Variable(0.0, doc="path parameter of the friction characteristic")
    free = mb.Discrete(0, doc="1 while released (f_normalized <= 0)")
    startForward = mb.Discrete(0, doc="1 at the instant forward sliding starts")
    locked = mb.Discrete(0, doc="1 while locked")
    stuck = mb.Discrete(0, doc="1 while locked or about to lock (w_rel <= 0)")

    def __init__(self, mu_pos=((0.0, 0.5),), **modifiers):
        super().__init__(**modifiers)
        self.mu = table_function(mu_pos, "OneWayClutch mu_pos")

    def equations(self):
        _and, _or = ca.logic_and, ca.logic_or
        yield self.phi_rel == self.flange_b.phi - self.flange_a.phi
        yield self.w_rel == der(self.phi_rel)
        yield self.a_rel == der(self.w_rel)
        yield self.flange_b.tau == self.tau
        yield self.flange_a.tau == -self.tau
        yield self.free == (self.f_normalized <= 0)
        yield self.fn == if_else(self.free, 0, self.fn_max * self.f_normalized)
        mu0 = self.mu(0.0)
        tau0 = mu0 * self.cgeo * self.fn
        tau0_max = if_else(self.free, self.eps0 * mu0 * self.cgeo * self.fn_max,
                           ca.fmax(self.peak, 1 + self.eps0) * tau0)
        sa, w_rel = self.sa, self.w_rel
        yield self.startForward == _or(
            _and(mb.pre(self.stuck), _or(_or(sa > tau0_max,
                                             _and(mb.pre(self.startForward), sa > tau0)),
                                         w_rel > self.w_small)),
            _and(mb.initial(), w_rel > 0))
        yield self.locked == _and(mb.pre(self.stuck), ca.logic_not(self.startForward))
        yield self.a_rel == if_else(self.locked, 0, sa - tau0)
        yield self.tau == if_else(self.locked, sa, if_else(
            self.free, 0, self.cgeo * self.fn * self.mu(w_rel)))
        yield self.stuck == _or(self.locked, w_rel <= 0)


class ElastoBacklash(PartialCompliantWithRelativeStates):
    """Spring and damper in series with backlash ``b`` (MSL ``ElastoBacklash``): no torque
    while the relative angle is inside the gap, contact switching at events; the damper
    never pulls the flanges together (the torque keeps the sign of the contact).

    Equations (with :class:`PartialCompliantWithRelativeStates`)::

        phi_diff = phi_rel - phi_rel0
        tau_c = c*(phi_diff - b/2) if phi_diff > b/2; c*(phi_diff + b/2) if < -b/2; else 0
        tau_d = d*w_rel
        tau = max(0, tau_c + min(tau_c, tau_d))   in contact above the gap
              min(0, tau_c + max(tau_c, tau_d))   in contact below it;  0 inside
        tau = c*phi_diff + d*w_rel                 if b <= 1e-10 (no backlash, as in MSL:
                                                   a spring and damper in parallel)
    """

    c = Parameter(1e5, unit="N.m/rad", min=0.0, doc="spring constant")
    d = Parameter(0.0, unit="N.m.s/rad", min=0.0, doc="damping constant")
    b = Parameter(0.0, unit="rad", min=0.0, doc="total backlash")
    phi_rel0 = Parameter(0.0, unit="rad", doc="relative angle at the middle of the gap")

    def equations(self):
        yield from super().equations()
        phi_diff = self.phi_rel - self.phi_rel0
        above, below = phi_diff > self.b / 2, phi_diff < -self.b / 2
        tau_c = if_else(above, self.c * (phi_diff - self.b / 2),
                        if_else(below, self.c * (phi_diff + self.b / 2), 0))
        tau_d = self.d * self.w_rel
        pushing = mb.noEvent(if_else(tau_c + tau_d <= 0, 0,
                                     tau_c + if_else(tau_c <= tau_d, tau_c, tau_d)))
        pulling = mb.noEvent(if_else(tau_c + tau_d >= 0, 0,
                                     tau_c + if_else(tau_c >= tau_d, tau_c, tau_d)))
        contact = if_else(above, pushing, if_else(below, pulling, 0))
        # (on a parameter: no event; MSL's bEps)
        yield self.tau == if_else(self.b <= 1e-10, self.c * phi_diff + tau_d, contact)
