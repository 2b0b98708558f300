"""Analog electrical circuits (after ``Modelica.Electrical.Analog``).

Sign conventions are those of the Modelica Standard Library: a pin carries the potential
``v`` and the current ``i`` flowing *into* the component through that pin. For a one-port,
``v = p.v - n.v`` and ``i = p.i`` is the current from ``p`` through the component to ``n``
(so a source with ``i > 0`` absorbs power ``v*i``, like any other one-port).

Example (an RC circuit)::

    import mbmodel as mb
    from mbmodel.libraries import electrical as el

    class RC(mb.Model):
        source = el.StepVoltage(V=1.0, startTime=0.0)
        resistor = el.Resistor(R=1e3)
        capacitor = el.Capacitor(C=1e-6, v=mb.Fixed(0.0))
        ground = el.Ground()

        def equations(self):
            yield mb.connect(self.source.p, self.resistor.p)
            yield mb.connect(self.resistor.n, self.capacitor.p)
            yield mb.connect(self.capacitor.n, self.source.n, self.ground.p)
"""

from __future__ import annotations

import math

import mbmodel as mb
from mbmodel import Connector, Flow, Input, Model, Output, Parameter, Potential, Variable, der
from mbmodel.functions import exp, if_else, sin

from . import rotational as _rot
from .drive_trains import force_element

__all__ = [
    "Pin", "PositivePin", "NegativePin", "TwoPin", "OnePort",
    "Ground", "Resistor", "Conductor", "Capacitor", "Inductor",
    "IdealOpAmp", "IdealOpAmp3Pin", "IdealOpAmpLimited", "EMF",
    "IdealDiode", "Diode", "IdealOpeningSwitch", "IdealClosingSwitch",
    "ConstantVoltage", "StepVoltage", "SineVoltage", "SignalVoltage",
    "ConstantCurrent", "StepCurrent", "SineCurrent", "SignalCurrent",
    "VoltageSensor", "CurrentSensor", "PowerSensor", "PotentialSensor",
]


# --------------------------------------------------------------------------------------
# Connectors and partial models
# --------------------------------------------------------------------------------------

class Pin(Connector):
    """Electrical pin: potential ``v`` [V] and current ``i`` [A] flowing into the
    component. All pin classes below are connectable with one another."""

    v = Potential(unit="V", doc="Potential at the pin")
    i = Flow(unit="A", doc="Current flowing into the pin (into the component)")


class PositivePin(Pin):
    """Positive pin of a component (drawn filled in MSL); identical to :class:`Pin`."""


class NegativePin(Pin):
    """Negative pin of a component (drawn hollow in MSL); identical to :class:`Pin`."""


class TwoPin(Model):
    """Partial model with two pins and the voltage between them (MSL ``TwoPin``).

    Equations::

        v = p.v - n.v
    """

    p = PositivePin(doc="Positive electrical pin")
    n = NegativePin(doc="Negative electrical pin")
    v = Variable(unit="V", doc="Voltage drop of the two pins (= p.v - n.v)")

    def equations(self):
        yield self.v == self.p.v - self.n.v


class OnePort(Model):
    """Partial model of a component with two pins and one current (MSL ``OnePort``).

    Equations::

        v = p.v - n.v
        0 = p.i + n.i
        i = p.i

    ``i`` flows from ``p`` through the component to ``n``. Subclasses add one equation.
    """

    p = PositivePin(doc="Positive electrical pin")
    n = NegativePin(doc="Negative electrical pin")
    v = Variable(unit="V", doc="Voltage drop of the two pins (= p.v - n.v)")
    i = Variable(unit="A", doc="Current flowing from pin p to pin n")

    def equations(self):
        yield self.v == self.p.v - self.n.v
        yield self.p.i + self.n.i == 0
        yield self.i == self.p.i


# --------------------------------------------------------------------------------------
# Basic components
# --------------------------------------------------------------------------------------

class Ground(Model):
    """Ground node: ``p.v = 0``. Every circuit needs at least one."""

    p = Pin(doc="Ground pin")

    def equations(self):
        yield self.p.v == 0


class Resistor(OnePort):
    """Ideal linear electrical resistor (MSL ``Resistor``, fixed temperature).

    Equations (with :class:`OnePort`)::

        R_actual = R*(1 + alpha*(T - T_ref))
        v = R_actual*i
        LossPower = v*i

    With the defaults (``alpha = 0``) ``R_actual = R``. ``T`` is ``T_ref`` unless given (as
    MSL's ``T = T_ref``): ``Resistor(R=100, alpha=0.004, T_ref=293.15)`` is 100 Ohm.
    """

    R = Parameter(1.0, unit="Ohm", min=0.0, doc="Resistance at temperature T_ref")
    T_ref = Parameter(300.15, unit="K", min=0.0, doc="Reference temperature")
    alpha = Parameter(0.0, unit="1/K", doc="Temperature coefficient of resistance "
                                           "(R_actual = R*(1 + alpha*(T - T_ref)))")
    T = Parameter(300.15, unit="K", min=0.0, doc="Fixed device temperature (default T_ref)")
    LossPower = Variable(unit="W", doc="Dissipated power (= v*i)")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        if "T" not in modifiers:
            self.T = self.T_ref

    def equations(self):
        yield from super().equations()
        yield mb.Assert(1 + self.alpha * (self.T - self.T_ref) >= 1e-15,
                     "Resistor: temperature outside scope of model (R_actual = R*(1 + "
                     "alpha*(T - T_ref)) is not positive)")
        R_actual = self.R * (1 + self.alpha * (self.T - self.T_ref))
        yield self.v == R_actual * self.i
        yield self.LossPower == self.v * self.i


class Conductor(OnePort):
    """Ideal linear electrical conductor (MSL ``Conductor``, fixed temperature).

    Equations (with :class:`OnePort`)::

        G_actual = G/(1 + alpha*(T - T_ref))
        i = G_actual*v
        LossPower = v*i
    """

    G = Parameter(1.0, unit="S", min=0.0, doc="Conductance at temperature T_ref")
    T_ref = Parameter(300.15, unit="K", min=0.0, doc="Reference temperature")
    alpha = Parameter(0.0, unit="1/K", doc="Temperature coefficient of resistance")
    T = Parameter(300.15, unit="K", min=0.0, doc="Fixed device temperature (default T_ref)")
    LossPower = Variable(unit="W", doc="Dissipated power (= v*i)")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        if "T" not in modifiers:
            self.T = self.T_ref

    def equations(self):
        yield from super().equations()
        yield mb.Assert(1 + self.alpha * (self.T - self.T_ref) >= 1e-15,
                     "Conductor: temperature outside scope of model (G_actual = G/(1 + "
                     "alpha*(T - T_ref)) is not positive)")
        G_actual = self.G / (1 + self.alpha * (self.T - self.T_ref))
        yield self.i == G_actual * self.v
        yield self.LossPower == self.v * self.i


class Capacitor(OnePort):
    """Ideal linear electrical capacitor (MSL ``Capacitor``).

    Equations (with :class:`OnePort`)::

        i = C*der(v)

    ``v`` is the state: ``Capacitor(C=1e-6, v=mb.Fixed(0.0))``.
    """

    C = Parameter(1.0, unit="F", min=0.0, doc="Capacitance")
    v = Variable(0.0, unit="V", doc="Voltage drop of the two pins (= p.v - n.v)")

    def equations(self):
        yield from super().equations()
        yield self.i == self.C * der(self.v)


class Inductor(OnePort):
    """Ideal linear electrical inductor (MSL ``Inductor``).

    Equations (with :class:`OnePort`)::

        L*der(i) = v

    ``i`` is the state: ``Inductor(L=1e-3, i=mb.Fixed(0.0))``.
    """

    L = Parameter(1.0, unit="H", min=0.0, doc="Inductance")
    i = Variable(0.0, unit="A", doc="Current flowing from pin p to pin n")

    def equations(self):
        yield from super().equations()
        yield self.L * der(self.i) == self.v


class IdealOpAmp(Model):
    """Ideal operational amplifier as a nullator--norator pair (MSL ``Ideal.IdealOpAmp``).

    The input port (``p1``, ``n1``) is a nullator (no voltage, no current); the output port
    (``p2``, ``n2``) is a norator (voltage and current determined by the circuit). Use it
    with negative feedback.

    Equations::

        v1 = p1.v - n1.v
        v2 = p2.v - n2.v
        i1 =  p1.i
        i1 = -n1.i
        i2 =  p2.i
        i2 = -n2.i
        v1 = 0
        i1 = 0
    """

    p1 = PositivePin(doc="Positive pin of the input port")
    n1 = NegativePin(doc="Negative pin of the input port")
    p2 = PositivePin(doc="Positive pin of the output port")
    n2 = NegativePin(doc="Negative pin of the output port")
    v1 = Variable(unit="V", doc="Voltage drop over the input port")
    v2 = Variable(unit="V", doc="Voltage drop over the output port")
    i1 = Variable(unit="A", doc="Current from p1 to n1")
    i2 = Variable(unit="A", doc="Current from p2 to n2")

    def equations(self):
        yield self.v1 == self.p1.v - self.n1.v
        yield self.v2 == self.p2.v - self.n2.v
        yield self.i1 == self.p1.i
        yield self.i1 == -self.n1.i
        yield self.i2 == self.p2.i
        yield self.i2 == -self.n2.i
        yield self.v1 == 0
        yield self.i1 == 0


class IdealOpAmp3Pin(Model):
    """Ideal operational amplifier with three pins (MSL ``Ideal.IdealOpAmp3Pin``): nullator
    between the inputs, norator between the output and ground (the output current returns
    through ground).

    Equations::

        in_p.v = in_n.v
        in_p.i = 0
        in_n.i = 0
    """

    in_p = PositivePin(doc="Positive pin of the input port")
    in_n = NegativePin(doc="Negative pin of the input port")
    out = PositivePin(doc="Output pin")

    def equations(self):
        yield self.in_p.v == self.in_n.v
        yield self.in_p.i == 0
        yield self.in_n.i == 0


class IdealOpAmpLimited(Model):
    """Ideal operational amplifier whose output is limited to the supply voltages (MSL
    ``Ideal.IdealOpAmpLimited`` with constant supply, ``useSupply = false``).

    In the linear region the input voltage is zero and the output anywhere between the
    supplies; saturated, the output sits at a supply and the input voltage is free. The
    characteristic is parametrized by ``s`` (switching at events where ``s`` crosses ±1)::

        in_p.i = 0, in_n.i = 0
        in_p.v - in_n.v = s + 1  if s < -1;  s - 1  if s > 1;  0 otherwise
        out.v           = Vns    if s < -1;  Vps    if s > 1;  (Vps + Vns)/2 + s*(Vps - Vns)/2

    The output current flows from ``out`` into the circuit, returning through ground.
    """

    Vps = Parameter(15.0, unit="V", doc="Positive supply voltage")
    Vns = Parameter(-15.0, unit="V", doc="Negative supply voltage")
    in_p = PositivePin(doc="Positive pin of the input port")
    in_n = NegativePin(doc="Negative pin of the input port")
    out = PositivePin(doc="Output pin")
    s = Variable(start=0.0, doc="Position on the characteristic (|s| <= 1: linear region)")

    def equations(self):
        yield mb.Assert(self.Vps > self.Vns, "the positive supply Vps must exceed Vns")
        low, high = self.s < -1, self.s > 1
        yield self.in_p.i == 0
        yield self.in_n.i == 0
        yield self.in_p.v - self.in_n.v == if_else(low, self.s + 1, if_else(high, self.s - 1, 0))
        yield self.out.v == if_else(low, self.Vns, if_else(
            high, self.Vps, (self.Vps + self.Vns) / 2 + self.s * (self.Vps - self.Vns) / 2))


class IdealDiode(OnePort):
    """Ideal diode with small on-resistance and off-conductance (MSL ``Ideal.IdealDiode``):
    it conducts forward and blocks backward, switching at events where the position ``s`` on
    its characteristic crosses zero.

    Equations (with :class:`OnePort`)::

        off = s < 0
        v = s*(1 if off else Ron) + Vknee
        i = s*(Goff if off else 1) + Goff*Vknee
        LossPower = v*i
    """

    Ron = Parameter(1e-5, unit="Ohm", min=0.0, doc="Forward (closed) resistance")
    Goff = Parameter(1e-5, unit="S", min=0.0, doc="Backward (opened) conductance")
    Vknee = Parameter(0.0, unit="V", min=0.0, doc="Forward threshold voltage")
    off = mb.Discrete(start=1, doc="1 while the diode blocks, 0 while it conducts")
    s = Variable(start=0.0, doc="Position on the characteristic (current when on, "
                                "voltage when off, both relative to 1 A or 1 V)")
    LossPower = Variable(unit="W", doc="Dissipated power (= v*i)")

    def equations(self):
        yield from super().equations()
        yield self.off == (self.s < 0)
        yield self.v == self.s * if_else(self.off, 1, self.Ron) + self.Vknee
        yield self.i == self.s * if_else(self.off, self.Goff, 1) + self.Goff * self.Vknee
        yield self.LossPower == self.v * self.i


class Diode(OnePort):
    """Exponential diode with a parallel leakage resistance (MSL ``Semiconductors.Diode``);
    the exponential continues linearly above ``Maxexp`` so the current stays finite. Smooth
    (no events).

    Equations (with :class:`OnePort`)::

        i = Ids*(exlin(v/Vt, Maxexp) - 1) + v/R
        exlin(x, m) = exp(x) if x <= m else exp(m)*(1 + x - m)
    """

    Ids = Parameter(1e-6, unit="A", min=0.0, doc="Saturation current")
    Vt = Parameter(0.04, unit="V", min=0.0, doc="Voltage equivalent of temperature (kT/qn)")
    Maxexp = Parameter(15.0, min=0.0, doc="Exponent above which the exponential continues "
                                           "linearly")
    R = Parameter(1e8, unit="Ohm", min=0.0, doc="Parallel ohmic resistance")

    def equations(self):
        yield from super().equations()
        x = self.v / self.Vt
        exlin = mb.noEvent(if_else(x > self.Maxexp,
                                   exp(self.Maxexp) * (1 + x - self.Maxexp), exp(x)))
        yield self.i == self.Ids * (exlin - 1) + self.v / self.R


class _IdealSwitch(OnePort):
    Ron = Parameter(1e-5, unit="Ohm", min=0.0, doc="Closed switch resistance")
    Goff = Parameter(1e-5, unit="S", min=0.0, doc="Opened switch conductance")
    control = Input(doc="Boolean control signal (nonzero: true)")
    s = Variable(start=0.0, doc="Position on the characteristic")

    def _switch(self, closed):
        yield self.v == self.s * if_else(closed, self.Ron, 1)
        yield self.i == self.s * if_else(closed, 1, self.Goff)


class IdealOpeningSwitch(_IdealSwitch):
    """Ideal electrical switch that opens while ``control`` is true (MSL
    ``Ideal.IdealOpeningSwitch``); small ``Ron`` closed, small ``Goff`` open.

    Equations (with :class:`OnePort`)::

        v = s*(1 if control else Ron)
        i = s*(Goff if control else 1)
    """

    def equations(self):
        yield from super().equations()
        yield from self._switch(mb.functions.logic_not(self.control))


class IdealClosingSwitch(_IdealSwitch):
    """Ideal electrical switch that closes while ``control`` is true (MSL
    ``Ideal.IdealClosingSwitch``); small ``Ron`` closed, small ``Goff`` open.

    Equations (with :class:`OnePort`)::

        v = s*(Ron if control else 1)
        i = s*(1 if control else Goff)
    """

    def equations(self):
        yield from super().equations()
        yield from self._switch(self.control)


class EMF(Model):
    """Electromotoric force: ideal electro-mechanical energy converter (MSL ``EMF``).

    Electrical pins ``p``, ``n`` and a rotational ``flange``
    (:class:`mbmodel.libraries.rotational.Flange`); ``use_support=True`` adds a rotational
    ``support`` flange (housing) that takes the reaction torque, otherwise the housing is
    fixed at angle 0.

    Equations::

        v = p.v - n.v
        0 = p.i + n.i
        i = p.i
        phi = flange.phi - phi_support
        w = der(phi)
        k*w = v
        flange.tau = -k*i
        support.tau = -flange.tau     (only if use_support)

    A positive current (from p to n) drives the flange in positive direction; for motor
    operation ``flange.tau = -k*i`` is the torque the EMF exerts on the load.
    """

    k = Parameter(1.0, unit="N.m/A", doc="Transformation coefficient (torque constant)")
    p = PositivePin(doc="Positive electrical pin")
    n = NegativePin(doc="Negative electrical pin")
    flange = _rot.Flange_b(doc="Shaft")
    v = Variable(unit="V", doc="Voltage drop between the two pins")
    i = Variable(unit="A", doc="Current flowing from positive to negative pin")
    phi = Variable(unit="rad", doc="Angle of shaft flange with respect to support")
    w = Variable(unit="rad/s", doc="Angular velocity of flange relative to support")
    tau_elec = Variable(unit="N.m", doc="Electrical torque (= k*i)")

    def __init__(self, use_support: bool = False, **modifiers):
        super().__init__(**modifiers)
        self.use_support = bool(use_support)
        if self.use_support:
            self.support = _rot.Support(doc="Support/housing of the EMF shaft")

    def phi_support(self):
        """Absolute angle of the housing: ``support.phi``, or 0 without support."""
        return self.support.phi if self.use_support else 0.0

    def equations(self):
        yield self.v == self.p.v - self.n.v
        yield self.p.i + self.n.i == 0
        yield self.i == self.p.i
        yield self.phi == self.flange.phi - self.phi_support()
        yield self.w == der(self.phi)
        yield self.k * self.w == self.v
        yield self.tau_elec == self.k * self.i
        yield self.flange.tau == -self.tau_elec
        if self.use_support:
            yield self.support.tau == -self.flange.tau

    def drive_coupling(self, flange):
        """How the component looks from ``flange`` to a rigid drive train
        (:mod:`mbmodel.libraries.drive_trains`)."""
        return force_element(flange)  # torque k*i, set by the circuit


# --------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------

def _step(start_time, height):
    """``height`` for time >= start_time, else 0 (declare the time event!)."""
    return if_else(mb.time >= start_time, height, 0)


def _sine(start_time, amplitude, f, phase):
    """MSL ``Blocks.Sources.Sine`` without offset: 0 before start_time."""
    return if_else(mb.time >= start_time,
                   amplitude * sin(2 * math.pi * f * (mb.time - start_time) + phase), 0)


class ConstantVoltage(OnePort):
    """Source for constant voltage (MSL ``ConstantVoltage``): ``v = V``.

    ``v = p.v - n.v``: the positive pin is at the higher potential for ``V > 0``.
    """

    V = Parameter(1.0, unit="V", doc="Value of constant voltage")

    def equations(self):
        yield from super().equations()
        yield self.v == self.V


class _TimedSource(OnePort):
    """Partial source that is off before ``startTime`` (MSL ``Interfaces.VoltageSource``
    and ``CurrentSource``); the switch-on is a time event, so it is resolved exactly."""

    startTime = Parameter(0.0, unit="s", doc="Time offset (the source switches on then)")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.time_event(self.startTime)


class StepVoltage(_TimedSource):
    """Step voltage source (MSL ``StepVoltage``)::

        v = offset + (if time < startTime then 0 else V)
    """

    V = Parameter(1.0, unit="V", doc="Height of step")
    offset = Parameter(0.0, unit="V", doc="Voltage offset")

    def equations(self):
        yield from super().equations()
        yield self.v == self.offset + _step(self.startTime, self.V)


class SineVoltage(_TimedSource):
    """Sine voltage source (MSL ``SineVoltage``)::

        v = offset + (if time < startTime then 0
                      else V*sin(2*pi*f*(time - startTime) + phase))
    """

    V = Parameter(1.0, unit="V", doc="Amplitude of sine wave")
    phase = Parameter(0.0, unit="rad", doc="Phase of sine wave")
    f = Parameter(1.0, unit="Hz", min=0.0, doc="Frequency of sine wave")
    offset = Parameter(0.0, unit="V", doc="Voltage offset")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.time_scale(1 / self.f)  # the simulator's steps stay a fraction of a period

    def equations(self):
        yield from super().equations()
        yield self.v == self.offset + _sine(self.startTime, self.V, self.f, self.phase)


class SignalVoltage(TwoPin):
    """Generic voltage source driven by a signal (MSL ``SignalVoltage``).

    Equations::

        v = p.v - n.v      (v is an Input)
        0 = p.i + n.i
        i = p.i
    """

    v = Input(unit="V", doc="Voltage between pin p and n (= p.v - n.v) as input signal")
    i = Variable(unit="A", doc="Current flowing from pin p to pin n")

    def equations(self):
        yield from super().equations()
        yield self.p.i + self.n.i == 0
        yield self.i == self.p.i


class ConstantCurrent(OnePort):
    """Source for constant current (MSL ``ConstantCurrent``): ``i = I``.

    The current flows from ``p`` through the source to ``n``, i.e. out of ``n`` into the
    external circuit.
    """

    I = Parameter(1.0, unit="A", doc="Value of constant current")

    def equations(self):
        yield from super().equations()
        yield self.i == self.I


class StepCurrent(_TimedSource):
    """Step current source (MSL ``StepCurrent``)::

        i = offset + (if time < startTime then 0 else I)
    """

    I = Parameter(1.0, unit="A", doc="Height of step")
    offset = Parameter(0.0, unit="A", doc="Current offset")

    def equations(self):
        yield from super().equations()
        yield self.i == self.offset + _step(self.startTime, self.I)


class SineCurrent(_TimedSource):
    """Sine current source (MSL ``SineCurrent``)::

        i = offset + (if time < startTime then 0
                      else I*sin(2*pi*f*(time - startTime) + phase))
    """

    I = Parameter(1.0, unit="A", doc="Amplitude of sine wave")
    phase = Parameter(0.0, unit="rad", doc="Phase of sine wave")
    f = Parameter(1.0, unit="Hz", min=0.0, doc="Frequency of sine wave")
    offset = Parameter(0.0, unit="A", doc="Current offset")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.time_scale(1 / self.f)  # the simulator's steps stay a fraction of a period

    def equations(self):
        yield from super().equations()
        yield self.i == self.offset + _sine(self.startTime, self.I, self.f, self.phase)


class SignalCurrent(TwoPin):
    """Generic current source driven by a signal (MSL ``SignalCurrent``).

    Equations::

        v = p.v - n.v
        0 = p.i + n.i
        i = p.i            (i is an Input: current from p through the source to n)
    """

    i = Input(unit="A", doc="Current flowing from pin p to pin n as input signal")

    def equations(self):
        yield from super().equations()
        yield self.p.i + self.n.i == 0
        yield self.i == self.p.i


# --------------------------------------------------------------------------------------
# Sensors
# --------------------------------------------------------------------------------------

class PotentialSensor(Model):
    """Sensor measuring the potential of a pin: ``p.i = 0``, ``phi = p.v``."""

    p = PositivePin(doc="Pin to be measured")
    phi = Output(unit="V", doc="Absolute voltage potential as output signal")

    def equations(self):
        yield self.p.i == 0
        yield self.phi == self.p.v


class VoltageSensor(Model):
    """Sensor measuring the voltage between two pins (MSL ``VoltageSensor``)::

        p.i = 0
        n.i = 0
        v = p.v - n.v
    """

    p = PositivePin(doc="Positive electrical pin")
    n = NegativePin(doc="Negative electrical pin")
    v = Output(unit="V", doc="Voltage between pin p and n (= p.v - n.v) as output signal")

    def equations(self):
        yield self.p.i == 0
        yield self.n.i == 0
        yield self.v == self.p.v - self.n.v


class CurrentSensor(Model):
    """Sensor measuring the current through it, from ``p`` to ``n``
    (MSL ``CurrentSensor``)::

        p.v = n.v
        p.i = i
        n.i = -i
    """

    p = PositivePin(doc="Positive electrical pin")
    n = NegativePin(doc="Negative electrical pin")
    i = Output(unit="A", doc="Current in the branch from p to n as output signal")

    def equations(self):
        yield self.p.v == self.n.v
        yield self.p.i == self.i
        yield self.n.i == -self.i


class PowerSensor(Model):
    """Sensor measuring the instantaneous power ``v*i`` (MSL ``PowerSensor``).

    The current path ``pc`` -> ``nc`` is inserted in series (like a current sensor), the
    voltage path ``pv``, ``nv`` is connected in parallel (like a voltage sensor)::

        pc.v = nc.v
        0 = pc.i + nc.i
        pv.i = 0
        nv.i = 0
        power = (pv.v - nv.v)*pc.i
    """

    pc = PositivePin(doc="Positive pin, current path")
    nc = NegativePin(doc="Negative pin, current path")
    pv = PositivePin(doc="Positive pin, voltage path")
    nv = NegativePin(doc="Negative pin, voltage path")
    power = Output(unit="W", doc="Instantaneous power as output signal")

    def equations(self):
        yield self.pc.v == self.nc.v
        yield self.pc.i + self.nc.i == 0
        yield self.pv.i == 0
        yield self.nv.i == 0
        yield self.power == (self.pv.v - self.nv.v) * self.pc.i
