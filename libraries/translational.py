"""1-D translational mechanics (after ``Modelica.Mechanics.Translational``).

Sign conventions are those of the Modelica Standard Library: a flange carries the absolute
position ``s`` (potential) and the cut force ``f`` (flow), positive when it acts *on the
component* through that flange. Components with an optional support flange take
``use_support`` (default ``False``); without support, the support is fixed at position 0
and its reaction force goes to ground.

Example (a spring--mass--damper)::

    import mbmodel as mb
    from mbmodel.libraries import translational as tr

    class SMD(mb.Model):
        fixed = tr.Fixed()
        spring_damper = tr.SpringDamper(c=100.0, d=2.0)
        mass = tr.Mass(m=1.0, s=mb.Fixed(0.1), v=mb.Fixed(0.0))

        def equations(self):
            yield mb.connect(self.fixed.flange, self.spring_damper.flange_a)
            yield mb.connect(self.spring_damper.flange_b, self.mass.flange_a)
"""

from __future__ import annotations

import math

import mbmodel as mb
import casadi as ca

from mbmodel.functions import exp, fabs, if_else
from mbmodel import (Connector, Flow, Input, Model, Output, Parameter, Potential, Variable,
                     der)

from .drive_trains import ForceElementFlanges, RigidCoupling
from .friction import PartialFriction, PartialPressedFriction, table_function

__all__ = [
    "Flange", "Flange_a", "Flange_b", "Support",
    "PartialTwoFlanges", "PartialRigid", "PartialCompliant",
    "PartialCompliantWithRelativeStates", "PartialElementaryOneFlangeAndSupport2",
    "PartialForce", "PartialAbsoluteSensor", "PartialRelativeSensor",
    "Fixed", "Mass", "Spring", "Damper", "SpringDamper",
    "Force", "ConstantForce", "Position", "Speed",
    "PositionSensor", "SpeedSensor", "AccSensor", "ForceSensor", "RelPositionSensor",
    "RelSpeedSensor",
    "SupportFriction", "Brake", "ElastoGap", "MassWithStopAndFriction", "Stop",
]


# --------------------------------------------------------------------------------------
# Connectors
# --------------------------------------------------------------------------------------

class Flange(Connector):
    """Translational flange: absolute position ``s`` [m] and cut force ``f`` [N].

    ``f`` is positive when it acts on the component the flange belongs to (flow into the
    component). All flange classes below are connectable with one another.
    """

    s = Potential(unit="m", doc="Absolute position of the flange")
    f = Flow(unit="N", doc="Cut force in the flange (positive into the component)")


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


class PartialRigid(PartialTwoFlanges):
    """Partial model of a rigid body of length ``L`` (MSL ``PartialRigid``).

    Equations::

        flange_a.s = s - L/2
        flange_b.s = s + L/2
    """

    L = Parameter(0.0, unit="m", min=0.0, doc="Length of component, from left to right flange")
    s = Variable(0.0, unit="m", doc="Absolute position of center of component")

    def equations(self):
        yield self.flange_a.s == self.s - self.L / 2
        yield self.flange_b.s == self.s + self.L / 2


class PartialCompliant(ForceElementFlanges, PartialTwoFlanges):
    """Partial model of a compliant connection of two flanges (MSL ``PartialCompliant``).

    Equations::

        s_rel = flange_b.s - flange_a.s
        flange_b.f =  f
        flange_a.f = -f

    Subclasses add one equation for ``f``.
    """

    s_rel = Variable(0.0, unit="m", doc="Relative distance (= flange_b.s - flange_a.s)")
    f = Variable(unit="N", doc="Force between flanges (positive in direction of flange "
                               "axis R)")

    def equations(self):
        yield self.s_rel == self.flange_b.s - self.flange_a.s
        yield self.flange_b.f == self.f
        yield self.flange_a.f == -self.f


class PartialCompliantWithRelativeStates(ForceElementFlanges, PartialTwoFlanges):
    """Partial model of a compliant connection with relative states
    (MSL ``PartialCompliantWithRelativeStates``).

    Equations::

        s_rel = flange_b.s - flange_a.s
        v_rel = der(s_rel)
        flange_b.f =  f
        flange_a.f = -f

    ``s_rel`` and ``v_rel`` are declared with ``state_select="prefer"`` as in MSL; override
    with e.g. ``Damper(s_rel=mb.Start(0.0, state_select="default"))``.
    """

    s_rel = Variable(0.0, unit="m", state_select="prefer",
                     doc="Relative distance (= flange_b.s - flange_a.s)")
    v_rel = Variable(0.0, unit="m/s", state_select="prefer",
                     doc="Relative velocity (= der(s_rel))")
    f = Variable(unit="N", doc="Force between flanges (= flange_b.f)")

    def equations(self):
        yield self.s_rel == self.flange_b.s - self.flange_a.s
        yield self.v_rel == der(self.s_rel)
        yield self.flange_b.f == self.f
        yield self.flange_a.f == -self.f


class PartialElementaryOneFlangeAndSupport2(Model):
    """Partial model: one ``flange`` and an optional ``support`` flange
    (MSL ``PartialElementaryOneFlangeAndSupport2``).

    Equations::

        s = flange.s - s_support
        support.f = -flange.f       (only if use_support)

    With ``use_support=True`` the component has a connector ``support``; otherwise the
    support is fixed at position 0 (``s_support = 0``) and the reaction goes to ground.
    """

    flange = Flange_b(doc="Flange of component")
    s = Variable(0.0, unit="m", doc="Distance between flange and support (= flange.s - "
                                    "support.s)")

    def __init__(self, use_support: bool = False, **modifiers):
        super().__init__(**modifiers)
        self.use_support = bool(use_support)
        if self.use_support:
            self.support = Support(doc="Support/housing of component")

    def s_support(self):
        """Absolute position of the support: ``support.s``, or 0 without support."""
        return self.support.s if self.use_support else 0.0

    def equations(self):
        yield self.s == self.flange.s - self.s_support()
        if self.use_support:
            yield self.support.f == -self.flange.f


class PartialForce(ForceElementFlanges, PartialElementaryOneFlangeAndSupport2):
    """Partial model of a force acting at the flange (MSL ``PartialForce``).

    Equations (with :class:`PartialElementaryOneFlangeAndSupport2`)::

        f = -flange.f
    """

    f = Variable(unit="N", doc="Accelerating force acting at flange (= -flange.f)")

    def equations(self):
        yield from super().equations()
        yield self.f == -self.flange.f


class PartialAbsoluteSensor(ForceElementFlanges, Model):
    """Partial model measuring an absolute flange quantity; the sensor takes no force:
    ``0 = flange.f``."""

    flange = Flange_a(doc="Flange to be measured")

    def equations(self):
        yield self.flange.f == 0


class PartialRelativeSensor(ForceElementFlanges, PartialTwoFlanges):
    """Partial model of a sensor between two flanges: ``0 = flange_a.f + flange_b.f``."""

    def equations(self):
        yield self.flange_a.f + self.flange_b.f == 0


# --------------------------------------------------------------------------------------
# Components
# --------------------------------------------------------------------------------------

class Fixed(Model):
    """Flange fixed in the housing at a given position: ``flange.s = s0``."""

    s0 = Parameter(0.0, unit="m", doc="Fixed offset position of housing")
    flange = Flange_b(doc="Flange fixed in housing at position s0")

    def equations(self):
        yield self.flange.s == self.s0


class Mass(PartialRigid):
    """Sliding mass with inertia (MSL ``Mass``).

    Equations (with :class:`PartialRigid`)::

        v   = der(s)
        a   = der(v)
        m*a = flange_a.f + flange_b.f

    ``s`` and ``v`` are preferred states; give initial conditions with
    ``Mass(m=1.0, s=mb.Fixed(0.0), v=mb.Fixed(0.0))``.
    """

    m = Parameter(1.0, unit="kg", min=0.0, doc="Mass of the sliding mass")
    s = Variable(0.0, unit="m", state_select="prefer",
                 doc="Absolute position of center of component")
    v = Variable(0.0, unit="m/s", state_select="prefer", doc="Absolute velocity of component")
    a = Variable(0.0, unit="m/s2", doc="Absolute acceleration of component")

    def equations(self):
        yield from super().equations()
        yield self.v == der(self.s)
        yield self.a == der(self.v)
        yield self.m * self.a == self.flange_a.f + self.flange_b.f

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a rigid drive train
        (:mod:`mbmodel.libraries.drive_trains`)."""
        other = self.flange_b if flange is self.flange_a else self.flange_a
        return RigidCoupling(other, 1.0, self.m)


class Spring(PartialCompliant):
    """Linear 1-D translational spring (MSL ``Spring``).

    Equations (with :class:`PartialCompliant`)::

        f = c*(s_rel - s_rel0)
    """

    c = Parameter(1.0, unit="N/m", min=0.0, doc="Spring constant")
    s_rel0 = Parameter(0.0, unit="m", doc="Unstretched spring length")

    def equations(self):
        yield from super().equations()
        yield self.f == self.c * (self.s_rel - self.s_rel0)


class Damper(PartialCompliantWithRelativeStates):
    """Linear 1-D translational damper (MSL ``Damper``).

    Equations (with :class:`PartialCompliantWithRelativeStates`)::

        f = d*v_rel
        lossPower = f*v_rel
    """

    d = Parameter(0.0, unit="N.s/m", min=0.0, doc="Damping constant")
    lossPower = Variable(unit="W", doc="Power dissipated by the damper (= f*v_rel)")

    def equations(self):
        yield from super().equations()
        yield self.f == self.d * self.v_rel
        yield self.lossPower == self.f * self.v_rel


class SpringDamper(PartialCompliantWithRelativeStates):
    """Linear 1-D translational spring and damper in parallel (MSL ``SpringDamper``).

    Equations (with :class:`PartialCompliantWithRelativeStates`)::

        f_c = c*(s_rel - s_rel0)
        f_d = d*v_rel
        f   = f_c + f_d
        lossPower = f_d*v_rel
    """

    c = Parameter(1.0, unit="N/m", min=0.0, doc="Spring constant")
    d = Parameter(0.0, unit="N.s/m", min=0.0, doc="Damping constant")
    s_rel0 = Parameter(0.0, unit="m", doc="Unstretched spring length")
    f_c = Variable(unit="N", doc="Spring force")
    f_d = Variable(unit="N", doc="Linear damping force")
    lossPower = Variable(unit="W", doc="Power dissipated by the damper (= f_d*v_rel)")

    def equations(self):
        yield from super().equations()
        yield self.f_c == self.c * (self.s_rel - self.s_rel0)
        yield self.f_d == self.d * self.v_rel
        yield self.f == self.f_c + self.f_d
        yield self.lossPower == self.f_d * self.v_rel


# --------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------

class Force(ForceElementFlanges, PartialElementaryOneFlangeAndSupport2):
    """Input signal acting as external force on the flange (MSL ``Sources.Force``).

    Equations (with :class:`PartialElementaryOneFlangeAndSupport2`)::

        flange.f = -f

    ``f`` is an :class:`Input`: a positive value accelerates the flange in positive
    direction relative to the support (reaction ``support.f = -flange.f``).
    """

    f = Input(unit="N", doc="Driving force as input signal")

    def equations(self):
        yield from super().equations()
        yield self.flange.f == -self.f


class ConstantForce(PartialForce):
    """Constant force, not dependent on speed (MSL ``Sources.ConstantForce``).

    Equations (with :class:`PartialForce`)::

        v = der(s)
        f = f_constant

    A positive ``f_constant`` accelerates the flange in positive direction.
    """

    f_constant = Parameter(0.0, unit="N", doc="Nominal force (if negative, force is acting "
                                              "as load)")
    v = Variable(unit="m/s", doc="Velocity of flange with respect to support (= der(s))")

    def equations(self):
        yield from super().equations()
        yield self.v == der(self.s)
        yield self.f == self.f_constant


class Position(PartialElementaryOneFlangeAndSupport2):
    """Forced movement of a flange by a reference position (MSL ``Sources.Position``).

    Equations (``exact=True``, the default here; MSL's default is ``exact=false``)::

        s = flange.s - s_support
        s = s_ref

    With ``exact=False`` the reference is filtered by a critically damped 2nd-order filter
    with cut-off frequency ``f_crit`` (``v = der(s)``, ``a = der(v)``,
    ``a = ((s_ref - s)*w_crit - af*v)*(w_crit/bf)``, ``af = 1.3617``, ``bf = 0.6180``,
    ``w_crit = 2*pi*f_crit``); ``s`` and ``v`` are then states. ``s_ref`` is an
    :class:`Input`; with ``exact=True`` it must be twice differentiable if the flange drives
    a mass.
    """

    f_crit = Parameter(50.0, unit="Hz", min=0.0, doc="Cut-off frequency if exact=False")
    s_ref = Input(unit="m", doc="Reference position of flange as input signal")

    def __init__(self, exact: bool = True, use_support: bool = False, **modifiers):
        super().__init__(use_support=use_support, **modifiers)
        self.exact = bool(exact)
        if not self.exact:
            self.v = Variable(0.0, unit="m/s", state_select="prefer",
                              doc="Velocity of flange with respect to support")
            self.a = Variable(0.0, unit="m/s2",
                              doc="Acceleration of flange with respect to support")

    def equations(self):
        yield from super().equations()
        if self.exact:
            yield self.s == self.s_ref
        else:
            af, bf = 1.3617, 0.6180
            w_crit = 2 * math.pi * self.f_crit
            yield self.v == der(self.s)
            yield self.a == der(self.v)
            yield self.a == ((self.s_ref - self.s) * w_crit - af * self.v) * (w_crit / bf)


class Speed(PartialElementaryOneFlangeAndSupport2):
    """Forced movement of a flange by a reference velocity (MSL ``Sources.Speed``).

    Equations (``exact=True``, the default here)::

        s = flange.s - s_support
        v = der(s)
        v = v_ref

    With ``exact=False``: ``a = der(v)``, ``a = (v_ref - v)*2*pi*f_crit``. ``s`` starts at 0
    with a fixed initial condition (as in MSL); override with ``Speed(s=mb.Guess(0.0))`` if
    another component fixes the position.
    """

    f_crit = Parameter(50.0, unit="Hz", min=0.0, doc="Cut-off frequency if exact=False")
    s = Variable(0.0, fixed=True, unit="m", state_select="prefer",
                 doc="Distance between flange and support (= flange.s - support.s)")
    v = Variable(0.0, unit="m/s", state_select="prefer",
                 doc="Velocity of flange with respect to support")
    v_ref = Input(unit="m/s", doc="Reference velocity of flange as input signal")

    def __init__(self, exact: bool = True, use_support: bool = False, **modifiers):
        super().__init__(use_support=use_support, **modifiers)
        self.exact = bool(exact)
        if not self.exact:
            self.a = Variable(0.0, unit="m/s2",
                              doc="Acceleration of flange with respect to support")

    def equations(self):
        yield from super().equations()
        yield self.v == der(self.s)
        if self.exact:
            yield self.v == self.v_ref
        else:
            yield self.a == der(self.v)
            yield self.a == (self.v_ref - self.v) * (2 * math.pi * self.f_crit)


# --------------------------------------------------------------------------------------
# Sensors
# --------------------------------------------------------------------------------------

class PositionSensor(PartialAbsoluteSensor):
    """Ideal sensor of the absolute position: ``s = flange.s``, ``0 = flange.f``."""

    s = Output(unit="m", doc="Absolute position of flange")

    def equations(self):
        yield from super().equations()
        yield self.s == self.flange.s


class SpeedSensor(PartialAbsoluteSensor):
    """Ideal sensor of the absolute velocity: ``v = der(flange.s)``, ``0 = flange.f``."""

    v = Output(unit="m/s", doc="Absolute velocity of flange")

    def equations(self):
        yield from super().equations()
        yield self.v == der(self.flange.s)


class AccSensor(PartialAbsoluteSensor):
    """Ideal sensor of the absolute acceleration: ``v = der(flange.s)``, ``a = der(v)``,
    ``0 = flange.f``."""

    v = Variable(unit="m/s", doc="Absolute velocity of flange")
    a = Output(unit="m/s2", doc="Absolute acceleration of flange")

    def equations(self):
        yield from super().equations()
        yield self.v == der(self.flange.s)
        yield self.a == der(self.v)


class ForceSensor(PartialRelativeSensor):
    """Ideal sensor of the force transmitted from ``flange_a`` to ``flange_b``
    (MSL ``ForceSensor``): ``flange_a.s = flange_b.s``, ``flange_a.f = f``,
    ``0 = flange_a.f + flange_b.f``."""

    f = Output(unit="N", doc="Force in flange_a and flange_b (f = flange_a.f = -flange_b.f)")

    def equations(self):
        yield from super().equations()
        yield self.flange_a.s == self.flange_b.s
        yield self.flange_a.f == self.f

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a rigid drive train
        (:mod:`mbmodel.libraries.drive_trains`)."""
        return RigidCoupling(self.flange_b if flange is self.flange_a else self.flange_a)


class RelPositionSensor(PartialRelativeSensor):
    """Ideal sensor of the relative position: ``s_rel = flange_b.s - flange_a.s``,
    ``0 = flange_a.f`` (and ``0 = flange_a.f + flange_b.f``)."""

    s_rel = Output(unit="m", doc="Distance between the two flanges (flange_b.s - flange_a.s)")

    def equations(self):
        yield from super().equations()
        yield self.s_rel == self.flange_b.s - self.flange_a.s
        yield self.flange_a.f == 0


class RelSpeedSensor(PartialRelativeSensor):
    """Ideal sensor of the relative velocity: ``s_rel = flange_b.s - flange_a.s``,
    ``v_rel = der(s_rel)``, ``0 = flange_a.f`` (and ``0 = flange_a.f + flange_b.f``)."""

    s_rel = Variable(0.0, unit="m", doc="Distance between the two flanges")
    v_rel = Output(unit="m/s", doc="Relative velocity (= der(s_rel))")

    def equations(self):
        yield from super().equations()
        yield self.s_rel == self.flange_b.s - self.flange_a.s
        yield self.v_rel == der(self.s_rel)
        yield self.flange_a.f == 0


# --------------------------------------------------------------------------------------
# Friction (stick–slip at events, see mbmodel.libraries.friction)
# --------------------------------------------------------------------------------------

class SupportFriction(PartialFriction, PartialTwoFlanges):
    """Coulomb friction between the flanges and the (fixed) support (MSL
    ``SupportFriction``): the force ``f_pos(v)`` (rows ``[v, f]``, v >= 0) opposes the
    motion; at rest it sticks until the force on it exceeds ``peak*f_pos(0)``.

    Equations (with the state machine of :class:`~mbmodel.libraries.friction.PartialFriction`)::

        s = flange_a.s - s_support,  flange_b.s = flange_a.s
        support.f = -flange_a.f - flange_b.f        (with use_support; else s_support = 0)
        v = der(s),  a = der(v)
        0 = flange_a.f + flange_b.f - f
        f0 = f_pos(0),  f0_max = peak*f0
        f = sa if locked else (+f_pos(v) sliding forward, -f_pos(-v) backward)
    """

    peak = Parameter(1.0, min=1.0, doc="peak*f_pos(0) = largest force while stuck")
    s = Variable(0.0, unit="m", doc="position of the flanges")
    v = Variable(0.0, unit="m/s", state_select="prefer", doc="velocity")
    a = Variable(0.0, unit="m/s2", doc="acceleration")
    f = Variable(unit="N", doc="friction force")

    def __init__(self, f_pos=((0.0, 1.0),), use_support: bool = False, **modifiers):
        super().__init__(**modifiers)
        self.f_pos = table_function(f_pos, "SupportFriction f_pos")
        self.use_support = bool(use_support)
        if self.use_support:
            self.support = Support(doc="support (e.g. a moving belt) the friction acts on")

    def equations(self):
        s_support = self.support.s if self.use_support else 0.0
        yield self.s == self.flange_a.s - s_support
        yield self.flange_b.s == self.flange_a.s
        yield self.v == der(self.s)
        yield self.a == der(self.v)
        yield 0 == self.flange_a.f + self.flange_b.f - self.f
        if self.use_support:
            yield self.support.f == -self.flange_a.f - self.flange_b.f
        yield from self.support_friction_equations(self.f)

    def friction_terms(self):
        f0 = self.f_pos(0.0)
        return self.v, self.a, f0, self.peak * f0, 0

    def sliding_force(self):
        return self.sliding(self.f_pos, self.v)

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a drive train
        (:mod:`mbmodel.libraries.drive_trains`): a friction lock."""
        return self.lock_coupling(flange)


class ElastoGap(PartialCompliantWithRelativeStates):
    """Spring and damper acting only in contact (MSL ``ElastoGap``): the flanges touch
    while ``s_rel < s_rel0`` (contact switching at events); the spring force is
    ``-c*|s_rel - s_rel0|^n`` and the damper never pulls the flanges together.

    Equations (with :class:`PartialCompliantWithRelativeStates`)::

        contact = s_rel < s_rel0
        f_c = -c*|s_rel - s_rel0|^n      in contact, else 0
        f_d = clip(d*v_rel, f_c, -f_c)   in contact, else 0
        f = f_c + f_d
    """

    c = Parameter(1.0, unit="N/m", min=0.0, doc="spring constant")
    d = Parameter(1.0, unit="N.s/m", min=0.0, doc="damping constant")
    s_rel0 = Parameter(0.0, unit="m", doc="relative position where contact begins")
    n = Parameter(1.0, min=1.0, doc="exponent of the spring force")
    contact = mb.Discrete(0, doc="1 while the flanges touch")

    def equations(self):
        yield from super().equations()
        yield self.contact == (self.s_rel < self.s_rel0)
        depth = mb.noEvent(if_else(self.s_rel < self.s_rel0, self.s_rel0 - self.s_rel,
                                   self.s_rel - self.s_rel0))
        f_c = if_else(self.contact, -self.c * depth ** self.n, 0)
        f_d2 = if_else(self.contact, self.d * self.v_rel, 0)
        f_d = mb.noEvent(if_else(self.contact, if_else(f_d2 < f_c, f_c, if_else(
            f_d2 > -f_c, -f_c, f_d2)), 0))
        yield self.f == f_c + f_d


class Brake(PartialPressedFriction, PartialTwoFlanges):
    """Brake with normal force input (MSL ``Translational.Components.Brake``): friction
    between the rigidly connected flanges and the fixed support, ``cgeo*fn*mu_pos(v)``
    while sliding, holding up to ``peak*cgeo*fn*mu_pos(0)``; released (``fn <= 0``) free.

    Equations (with the state machine of :class:`~mbmodel.libraries.friction.PartialFriction`)::

        s = flange_a.s,  flange_b.s = flange_a.s,  v = der(s),  a = der(v)
        0 = flange_a.f + flange_b.f - f
        fn = fn_max*f_normalized,  free = fn <= 0
        f0 = mu_pos(0)*cgeo*fn,  f0_max = peak*f0
        f = sa if locked; 0 if free; else cgeo*fn*(+mu_pos(v) or -mu_pos(-v))
    """

    s = Variable(0.0, unit="m", doc="position of the flanges")
    v = Variable(0.0, unit="m/s", state_select="prefer", doc="velocity")
    a = Variable(0.0, unit="m/s2", doc="acceleration")
    f = Variable(unit="N", doc="braking force")

    def __init__(self, mu_pos=((0.0, 0.5),), **modifiers):
        super().__init__(**modifiers)
        self.mu = table_function(mu_pos, "Brake mu_pos")

    def equations(self):
        yield self.s == self.flange_a.s
        yield self.flange_b.s == self.flange_a.s
        yield self.v == der(self.s)
        yield self.a == der(self.v)
        yield 0 == self.flange_a.f + self.flange_b.f - self.f
        yield from self.pressed_friction_equations(self.v, self.a, self.f)

    def friction_terms(self):
        return self.pressed_terms(self.v, self.a)

    def sliding_force(self):
        return self.pressed_sliding(self.v)

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a drive train
        (:mod:`mbmodel.libraries.drive_trains`): a friction lock."""
        return self.lock_coupling(flange)


class MassWithStopAndFriction(PartialFriction, PartialRigid):
    """A sliding mass with Stribeck friction against the fixed support and hard stops at
    ``smin`` and ``smax`` (MSL ``MassWithStopAndFriction``, ``Stop`` in MSL 2): hitting a
    stop sets the velocity to 0 (a fully plastic impact) and the mass stays there until a
    force pulls it away; at rest it sticks until the force exceeds ``F_Coulomb +
    F_Stribeck`` (times 1.001).

    Equations (with the state machine of :class:`~mbmodel.libraries.friction.PartialFriction`,
    sliding forward only while ``s < smax - L/2``, backward only while ``s > smin + L/2``)::

        v = der(s),  a = der(v),  0 = flange_a.f + flange_b.f - f - m*a
        f0 = F_Coulomb + F_Stribeck,  f0_max = 1.001*f0
        f = sa if locked; 0 if free;
            +-(F_Coulomb + F_Stribeck) + F_prop*v    at the instant sliding starts,
            +-(F_Coulomb + F_Stribeck*exp(-fexp*|v|)) + F_prop*v    while sliding
        stopped = -1 if s <= smin + L/2, +1 if s >= smax - L/2, else 0
        when stopped != 0: reinit(s, smin + L/2 or smax - L/2), reinit(v, 0)

    ``free`` (no friction at all: ``f0 <= 0`` and ``F_prop <= 0``) holds between the stops.

    Example::

        stop = MassWithStopAndFriction(m=1.0, smin=-1.0, smax=1.0, F_Coulomb=5.0,
                                       F_Stribeck=10.0, F_prop=1.0, fexp=2.0)
    """

    m = Parameter(1.0, unit="kg", min=0.0, doc="mass")
    smin = Parameter(-25.0, unit="m", doc="left stop for the left end of the mass")
    smax = Parameter(25.0, unit="m", doc="right stop for the right end of the mass")
    F_prop = Parameter(1.0, unit="N.s/m", min=0.0, doc="velocity-dependent friction")
    F_Coulomb = Parameter(5.0, unit="N", min=0.0, doc="Coulomb friction force")
    F_Stribeck = Parameter(10.0, unit="N", min=0.0, doc="Stribeck effect")
    fexp = Parameter(2.0, unit="s/m", min=0.0, doc="exponential decay of the Stribeck effect")
    w_small = Parameter(1e-3, unit="m/s", doc="velocity above which a reversal passes "
                                              "through stuck without stopping (jumps)")
    s = Variable(0.0, unit="m", state_select="always", doc="position of the centre")
    v = Variable(0.0, unit="m/s", state_select="always", doc="velocity")
    a = Variable(0.0, unit="m/s2", doc="acceleration")
    f = Variable(unit="N", doc="friction force (opposing v)")
    free = mb.Discrete(0, doc="1 while there is no friction at all (between the stops)")
    stopped = mb.Discrete(0, doc="-1 at the left stop, +1 at the right stop, else 0")

    def equations(self):
        yield from PartialRigid.equations(self)
        s, v = self.s, self.v
        left, right = self.smin + self.L / 2, self.smax - self.L / 2
        yield mb.Assert(self.smax - self.smin >= self.L, "MassWithStopAndFriction: the stops "
                        "leave no room for the mass (smax - smin must be at least its length L)")
        # (a start between the stops; the stops' reinit keeps it there, to event accuracy)
        room = 1e-6 * (self.smax - self.smin)
        yield mb.Assert(ca.logic_and(s >= left - room, s <= right + room),
                        "MassWithStopAndFriction: the mass is beyond a stop (its start s "
                        "outside [smin + L/2, smax - L/2]?)")
        yield v == der(s)
        yield self.a == der(v)
        yield 0 == self.flange_a.f + self.flange_b.f - self.f - self.m * self.a
        f0 = self.F_Coulomb + self.F_Stribeck
        yield self.free == ca.logic_and(ca.logic_and(f0 <= 0, self.F_prop <= 0),
                                        ca.logic_and(s > left, s < right))
        yield from self.friction_equations(*self.friction_terms(), forward_room=s < right,
                                           backward_room=s > left)
        yield self.f == if_else(self.locked, self.sa, self.sliding_force())
        yield self.stopped == if_else(s <= left, -1, if_else(s >= right, 1, 0))
        yield mb.when(self.stopped != 0,
                      mb.reinit(s, if_else(self.stopped < 0, left, right)),
                      mb.reinit(v, 0.0))

    def friction_terms(self):
        f0 = self.F_Coulomb + self.F_Stribeck
        return self.v, self.a, f0, 1.001 * f0, self.free

    def sliding_force(self):
        f0 = self.F_Coulomb + self.F_Stribeck
        decay = self.F_Stribeck * exp(-self.fexp * mb.noEvent(fabs(self.v)))
        was_forward = mb.pre(self.mode) == 1
        sliding = self.F_prop * self.v + if_else(self.startForward, f0, if_else(
            self.startBackward, -f0, if_else(was_forward, self.F_Coulomb + decay,
                                             -self.F_Coulomb - decay)))
        return if_else(self.free, 0, sliding)

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a drive train
        (:mod:`mbmodel.libraries.drive_trains`): a friction lock carrying the mass."""
        return self.lock_coupling(flange, self.m)


Stop = MassWithStopAndFriction  # its name in MSL 2 and the issue tracker
