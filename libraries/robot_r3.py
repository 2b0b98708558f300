"""The Manutec r3 industrial robot with its drive trains (after the MSL
``MultiBody.Examples.Systems.RobotR3`` and Otter, Elmqvist and Cellier 1993), built from
the electrical, rotational, block and multibody libraries. Data: DLR's published
measurements (``LINKS``, ``DRIVES``).

Components (each usable on its own, as the MSL's ``Utilities``):

* :class:`MechanicalStructure` — six revolute joints and seven links with the load.
* :class:`Motor` — a DC motor (armature ``Ra``, ``La``, EMF ``k``, rotor inertia ``J``)
  driven by its analog current controller: difference amplifier, integrating stage and
  power amplifier built from resistors, a capacitor and ideal op-amps. With
  ``current_control=False`` the armature takes a voltage ``v`` instead.
* :class:`GearType1` (axes 1–3: bearing friction, elastic spring–damper, ideal gear) and
  :class:`GearType2` (axes 4–6: ideal gear, bearing friction on the load side).
* :class:`Controller` — the P–PI cascade: ``current_ref = PI(ratio*speed_ref +
  kp*(ratio*angle_ref - motor_angle) - motor_speed)``.
* :class:`Axis` — motor, gear and controller of one axis; :class:`FullRobot` — six axes,
  the mechanics and a path planner; :class:`OneAxis` — axis 2 with a load inertia.
* :class:`InverseRobot` — the same mechanics, gears and motors with the joint angles
  prescribed (``analysis="inverse"``): joint torques, motor torques, currents and voltages
  along a path; :func:`feedforward` turns it into a feed-forward signal.

Start: :class:`FullRobot` starts at rest in equilibrium: every motor's electrical part and
every integrator in steady state, the elastic gears unmoving, the bearings carrying no
torque (the motors hold the load; sticking friction could take any share of it).

Example::

    import mbmodel as mb
    from mbmodel.libraries import robot_r3 as r3

    cm = mb.compile(r3.FullRobot())
    res = cm.simulate(2.0, method="adams")
    print(res.final("mechanics.r2.phi"), res.final("planner.q[1]"))   # -1.2237 -1.2217

Walk-through: ``docs/robot.md``; the whole run: ``examples/robot_r3_full.py``.
"""

from __future__ import annotations

import warnings

import numpy as np

import mbmodel as mb
from mbmodel import DeclarationError, Input, Model, Output, Parameter, der
from mbmodel import noEvent
from mbmodel.functions import fabs, sign

from . import blocks
from . import electrical as el
from . import multibody as mbl
from . import rotational as rot
from .friction import STUCK

__all__ = ["AXES", "LINKS", "DRIVES", "G", "M_LOAD", "R_LOAD", "Q_START_DEG", "Q_END_DEG",
           "QD_MAX", "QDD_MAX", "JOINTS", "MechanicalStructure", "Motor", "GearType1",
           "GearType2", "Controller", "Axis", "Transducer", "FullRobot", "OneAxis", "InverseRobot",
           "feedforward"]

#: Gravity [m/s²], along -y.
G = 9.81
#: Joint axes, resolved in each joint's frame_a.
AXES = ([0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
#: Names of the six revolute joints in MechanicalStructure.
JOINTS = tuple(f"r{i}" for i in range(1, 7))
#: Links: r (frame_a -> frame_b), r_CM, m, inertia about the centre of mass (entries not
#: given are the BodyShape defaults: diagonal 0.001, off-diagonal 0).
LINKS = {
    "b0": dict(r=[0.0, 0.351, 0.0], r_CM=[0.0, 0.0, 0.0], m=1.0),
    # b1's published inertia (0.001, 1.16, 0.001) violates the triangle inequality of
    # principal moments: lumped data (it carries the inertia of the first axis).
    "b1": dict(r=[0.0, 0.324, 0.3], r_CM=[0.0, 0.0, 0.0], m=1.0, I_22=1.16,
               check_triangle=False),
    "b2": dict(r=[0.0, 0.65, 0.0], r_CM=[0.172, 0.205, 0.0], m=56.5,
               I_11=2.58, I_22=0.64, I_33=2.73, I_21=-0.46),
    "b3": dict(r=[0.0, 0.414, -0.155], r_CM=[0.064, -0.034, 0.0], m=26.4,
               I_11=0.279, I_22=0.245, I_33=0.413, I_21=-0.070),
    "b4": dict(r=[0.0, 0.186, 0.0], r_CM=[0.0, 0.0, 0.0], m=28.7,
               I_11=1.67, I_22=0.081, I_33=1.67),
    "b5": dict(r=[0.0, 0.125, 0.0], r_CM=[0.0, 0.0, 0.0], m=5.2,
               I_11=1.25, I_22=0.81, I_33=1.53),
    "b6": dict(r=[0.0, 0.0, 0.0], r_CM=[0.05, 0.05, 0.05], m=0.5),
}
#: Mass of the load [kg].
M_LOAD = 15.0
#: Centre of mass of the load in the frame of the last flange (b6.frame_b) [m].
R_LOAD = [0.1, 0.25, 0.1]
#: Drive data per axis (DLR's published data): gear type, motor k, w, D, J, gear ratio, elastic
#: gear c, d (type 1), bearing friction Rv0, Rv1 and peak.
DRIVES = (
    dict(gear=1, k=1.1616, w=4590.0, D=0.6, J=0.0013, ratio=-105.0, c=43.0, d=0.005,
         Rv0=0.4, Rv1=0.13 / 160, peak=1.0),
    dict(gear=1, k=1.1616, w=5500.0, D=0.6, J=0.0013, ratio=210.0, c=8.0, d=0.01,
         Rv0=0.5, Rv1=0.1 / 130, peak=1.0),
    dict(gear=1, k=1.1616, w=5500.0, D=0.6, J=0.0013, ratio=60.0, c=58.0, d=0.04,
         Rv0=0.7, Rv1=0.2 / 130, peak=1.0),
    dict(gear=2, k=0.2365, w=6250.0, D=0.55, J=1.6e-4, ratio=-99.0, Rv0=21.8, Rv1=9.8,
         peak=26.7 / 21.8),
    dict(gear=2, k=0.2608, w=6250.0, D=0.55, J=1.8e-4, ratio=79.2, Rv0=30.1, Rv1=0.03,
         peak=39.6 / 30.1),
    dict(gear=2, k=0.0842, w=7400.0, D=0.27, J=4.3e-5, ratio=-99.0, Rv0=10.9, Rv1=3.92,
         peak=16.8 / 10.9),
)
#: FullRobot motion: start angles of the joints [deg].
Q_START_DEG = (-60.0, 20.0, 90.0, 0.0, -110.0, 0.0)
#: FullRobot motion: end angles of the joints [deg].
Q_END_DEG = (60.0, -70.0, -35.0, 45.0, 110.0, 45.0)
#: FullRobot motion: speed limits of the joints [rad/s].
QD_MAX = (3.0, 1.5, 5.0, 3.1, 3.1, 4.1)
#: FullRobot motion: acceleration limits of the joints [rad/s²].
QDD_MAX = (15.0, 15.0, 15.0, 60.0, 60.0, 60.0)
#: Controller gains (all axes).
KP, KS, TS = 5.0, 0.5, 0.05


class MechanicalStructure(Model):
    """Multibody mechanics of the Manutec r3 (MSL ``RobotR3.Utilities.MechanicalStructure``)::

        world -- b0 -- r1 -- b1 -- r2 -- b2 -- ... -- r6 -- b6 -- load

    Parameters ``mLoad``, ``rLoad`` (the load's mass and position from ``b6.frame_b``).
    Structural options: ``q_start``/``w_start`` (joint angles [rad] and speeds; fixed start
    values, or guesses with ``fixed=False``) and ``use_axis_flange`` (drive flanges
    ``axis1`` ... ``axis6``; without them the joints are free in the forward analysis and
    take ``r<i>.phi``, ``r<i>.w``, ``r<i>.a`` as inputs in the inverse analysis).

    Example::

        cm = mb.compile(MechanicalStructure(q_start=np.radians(Q_START_DEG)))
    """

    mLoad = Parameter(M_LOAD, unit="kg", min=0.0, doc="Mass of the load")
    rLoad = Parameter(R_LOAD, shape=3, unit="m",
                      doc="Position of the load's centre from b6.frame_b (in b6)")
    world = mbl.World(g=G, n=[0.0, -1.0, 0.0])

    def __init__(self, q_start=None, w_start=None, use_axis_flange: bool = False,
                 fixed: bool = True, **modifiers):
        super().__init__(**modifiers)
        self.use_axis_flange = bool(use_axis_flange)
        if q_start is not None:
            q_start = [float(q) for q in q_start]
            w_start = [0.0] * 6 if w_start is None else [float(w) for w in w_start]
            if len(q_start) != 6 or len(w_start) != 6:
                raise DeclarationError("MechanicalStructure: q_start and w_start need 6 "
                                       "values")
        elif w_start is not None:
            raise DeclarationError("MechanicalStructure: give q_start together with w_start")
        start = mb.Fixed if fixed else mb.Guess
        for name, data in LINKS.items():
            self.add(name, mbl.BodyShape(**data))
        for i, (name, axis) in enumerate(zip(JOINTS, AXES)):
            values = {} if q_start is None else dict(phi=start(q_start[i]),
                                                     w=start(w_start[i]))
            self.add(name, mbl.Revolute(n=list(axis), use_axis_flange=self.use_axis_flange,
                                        **values))
            if self.use_axis_flange:
                self.add(f"axis{i + 1}", rot.Flange_a(doc=f"Drive flange of {name}"))
        self.load = mbl.Body(m=self.mLoad, r_CM=self.rLoad)

    def equations(self):
        c = mb.connect
        yield c(self.world.frame_b, self.b0.frame_a)
        previous = self.b0
        for i, name in enumerate(JOINTS):
            joint, link = getattr(self, name), getattr(self, f"b{i + 1}")
            yield c(previous.frame_b, joint.frame_a)
            yield c(joint.frame_b, link.frame_a)
            if self.use_axis_flange:
                yield c(joint.axis, getattr(self, f"axis{i + 1}"))
            previous = link
        yield c(self.b6.frame_b, self.load.frame_a)


class Transducer(Model):
    """A current signal as a voltage signal: ``v = gain * i``, ``gain`` in V/A (the MSL's
    Motor connects the two signals directly, a unit mismatch that the unit check reports).

    Example: ``Transducer(gain=1.0)`` between a current sensor and a signal voltage."""

    gain = Parameter(1.0, unit="V/A", doc="Volts per ampere")
    i = Input(unit="A", doc="Current signal")
    v = Output(unit="V", doc="Voltage signal")

    def equations(self):
        yield self.v == self.gain * self.i


class Motor(Model):
    """DC motor of an r3 axis with its analog current controller (MSL ``RobotR3``
    ``Utilities.Motor``).

    Armature ``Ra = 250`` Ω and ``La = 250/(2 D w)`` H, EMF constant ``k``, rotor inertia
    ``J`` on ``flange_motor``. The current reference ``i_ref`` [A] enters as a voltage
    (1 V/A); a difference amplifier (four 100 Ω resistors, ideal op-amp) forms
    ``measured - reference``, an ideal op-amp with ``Ri = 10`` Ω in and ``C = 0.004 D/w`` F
    in its feedback integrates it, and a non-inverting power amplifier (200 Ω/50 Ω, gain 5)
    drives the armature. With the rotor held, the current follows its reference as the
    second-order lag ``w^2/(s^2 + 2 D w s + w^2)``: ``w`` is the current loop's natural
    frequency and ``D`` its damping.

    Outputs: ``phi`` and ``speed`` of the rotor, ``current`` of the armature. Structural
    options: ``current_control=False`` drops the controller (the armature voltage ``v`` is
    then an input: for inverse models); ``init="steady"`` (default) starts the electrical
    part in steady state (``der(C.v) = 0``, ``der(La.i) = 0``), ``init="free"`` adds no
    initial equation.

    Example::

        motor = Motor(k=1.1616, w=5500, D=0.6, J=0.0013)
        # connect(controller.current_ref, motor.i_ref); connect(motor.flange_motor, ...)
    """

    J = Parameter(0.0013, unit="kg.m2", min=0.0, doc="Moment of inertia of the rotor")
    k = Parameter(1.1616, unit="N.m/A", doc="Gain of the motor (EMF constant)")
    w = Parameter(4590.0, unit="rad/s", min=1e-60, doc="Bandwidth of the current loop")
    D = Parameter(0.6, min=1e-60, doc="Damping of the current loop")
    flange_motor = rot.Flange_b(doc="Rotor flange")
    phi = Output(unit="rad", doc="Rotor angle")
    speed = Output(unit="rad/s", doc="Rotor speed")
    current = Output(unit="A", doc="Armature current")

    def __init__(self, current_control: bool = True, init: str = "steady", **modifiers):
        super().__init__(**modifiers)
        if init not in ("steady", "free"):
            raise DeclarationError(f"Motor: init must be 'steady' or 'free', not {init!r}")
        self.current_control, self.init = bool(current_control), init
        self.Ra = el.Resistor(R=250.0)
        self.La = el.Inductor(L=250.0 / (2 * self.D * self.w))
        self.emf = el.EMF(k=self.k)
        self.Jmotor = rot.Inertia(J=self.J)
        self.hall1 = el.CurrentSensor()
        self.angle_sensor = rot.AngleSensor()
        self.speed_sensor = rot.SpeedSensor()
        self.g_motor = el.Ground()
        if self.current_control:
            self.i_ref = Input(unit="A", doc="Current reference")
            self.Vs = el.SignalVoltage()        # reference as a voltage, 1 V/A
            self.hall2 = el.SignalVoltage()     # measured current as a voltage, 1 V/A
            self.to_Vs, self.to_hall2 = Transducer(), Transducer()
            self.diff, self.OpI, self.power = el.IdealOpAmp(), el.IdealOpAmp(), el.IdealOpAmp()
            for name in ("Rd1", "Rd2", "Rd3", "Rd4"):
                self.add(name, el.Resistor(R=100.0))
            self.Ri = el.Resistor(R=10.0)
            self.C = el.Capacitor(C=0.004 * self.D / self.w)
            self.Rp1 = el.Resistor(R=200.0)
            self.Rp2 = el.Resistor(R=50.0)
            self.ground = el.Ground()
        else:
            self.v = Input(unit="V", doc="Armature voltage")
            self.source = el.SignalVoltage()

    def equations(self):
        c = mb.connect
        yield c(self.Ra.n, self.La.p)
        yield c(self.La.n, self.emf.p)
        yield c(self.emf.n, self.hall1.p)
        yield c(self.hall1.n, self.g_motor.p)
        yield c(self.emf.flange, self.Jmotor.flange_a, self.angle_sensor.flange,
                self.speed_sensor.flange)
        yield c(self.Jmotor.flange_b, self.flange_motor)
        yield c(self.angle_sensor.phi, self.phi)
        yield c(self.speed_sensor.w, self.speed)
        yield c(self.hall1.i, self.current)
        if not self.current_control:
            yield c(self.v, self.source.v)
            yield c(self.source.p, self.Ra.p)
            yield c(self.source.n, self.g_motor.p)
            return
        g = self.ground.p
        yield c(self.i_ref, self.to_Vs.i)
        yield c(self.to_Vs.v, self.Vs.v)
        yield c(self.hall1.i, self.to_hall2.i)
        yield c(self.to_hall2.v, self.hall2.v)
        # difference amplifier: output diff.p2 = measured - reference
        yield c(self.Vs.p, self.Rd2.p)
        yield c(self.Rd2.n, self.diff.n1, self.Rd1.p)
        yield c(self.Rd1.n, self.diff.p2, self.Ri.p)
        yield c(self.hall2.p, self.Rd3.p)
        yield c(self.Rd3.n, self.diff.p1, self.Rd4.p)
        # integrating stage: Ri into the inverting input, C in the feedback
        yield c(self.Ri.n, self.OpI.n1, self.C.p)
        yield c(self.C.n, self.OpI.p2, self.power.p1)
        # power amplifier, gain 1 + Rp1/Rp2 = 5
        yield c(self.power.n1, self.Rp1.p, self.Rp2.p)
        yield c(self.power.p2, self.Rp1.n, self.Ra.p)
        yield c(g, self.Vs.n, self.hall2.n, self.Rd4.n, self.OpI.p1, self.OpI.n2,
                self.diff.n2, self.power.n2, self.Rp2.n)

    def initial_equations(self):
        if self.init == "steady":
            yield der(self.La.i) == 0
            if self.current_control:
                yield der(self.C.v) == 0


class _SlidingFriction(rot.PartialElementaryTwoFlangesAndSupport2):
    """Bearing friction of the inverse model: the sliding law ``sign(w)*(Rv0 + Rv1*|w|)``,
    zero at rest. (A prescribed motion decides the direction; at rest the share of the load
    that sticking friction would hold is not determined by the motion.)"""

    Rv0 = Parameter(0.0, unit="N.m", doc="Friction torque at zero speed")
    Rv1 = Parameter(0.0, unit="N.m.s/rad", doc="Viscous friction coefficient")
    w = mb.Variable(0.0, unit="rad/s", doc="Angular velocity")
    tau = mb.Variable(unit="N.m", doc="Friction torque on the flanges")

    def equations(self):
        yield from super().equations()
        yield self.flange_b.phi == self.flange_a.phi
        yield self.w == der(self.phi_a)
        yield self.tau == noEvent(sign(self.w) * (self.Rv0 + self.Rv1 * fabs(self.w)))
        yield 0 == self.flange_a.tau + self.flange_b.tau - self.tau


def _bearing(friction, Rv0, Rv1, peak):
    """Stick–slip bearing friction or its sliding law (for inverse models)."""
    if friction == "sliding":
        return _SlidingFriction(Rv0=Rv0, Rv1=Rv1)
    if friction == "stick_slip":
        return _BearingFrictionR3(Rv0=Rv0, Rv1=Rv1, peak=peak)
    raise DeclarationError(f"friction must be 'stick_slip' or 'sliding', not {friction!r}")


class _BearingFrictionR3(rot.BearingFriction):
    """``BearingFriction`` with the r3 characteristic ``tau_pos(w) = Rv0 + Rv1*w`` as run-time
    parameters."""

    Rv0 = Parameter(0.4, unit="N.m", doc="Friction torque at zero speed")
    Rv1 = Parameter(0.0, unit="N.m.s/rad", doc="Viscous friction coefficient")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.tau_pos = lambda w: self.Rv0 + self.Rv1 * w
        # The robot starts at rest: the bearings stuck (the initialization then finds the
        # equilibrium in that mode, and the event iteration at the start keeps it).
        self.declaration("locked").start = 1.0
        self.declaration("mode").start = float(STUCK)


class _Gear(Model):
    """Partial gear of an r3 axis: ``flange_a`` on the motor, ``flange_b`` on the joint,
    ideal gear ratio ``i`` (motor angle / joint angle) and bearing friction
    ``Rv0 + Rv1*|w|`` sticking up to ``peak*Rv0`` (``friction="stick_slip"``, default) or
    its sliding law ``sign(w)*(Rv0 + Rv1*|w|)`` without sticking (``friction="sliding"``,
    for inverse models, where the motion is prescribed and a sticking bearing's share of
    the load would not be determined)."""

    i = Parameter(-105.0, doc="Gear ratio (motor angle / joint angle)")
    Rv0 = Parameter(0.4, unit="N.m", min=0.0, doc="Friction torque at zero speed")
    Rv1 = Parameter(0.13 / 160, unit="N.m.s/rad", min=0.0,
                    doc="Viscous friction coefficient (R = Rv0 + Rv1*|w|)")
    peak = Parameter(1.0, min=1.0, doc="Largest sticking torque is peak*Rv0")
    flange_a = rot.Flange_a(doc="Motor side")
    flange_b = rot.Flange_b(doc="Joint side")

    def __init__(self, init: str = "steady", friction: str = "stick_slip", **modifiers):
        super().__init__(**modifiers)
        if init not in ("steady", "free"):
            raise DeclarationError(f"{type(self).__name__}: init must be 'steady' or 'free', "
                                   f"not {init!r}")
        self.init, self.friction = init, friction
        self.gear = rot.IdealGear(ratio=self.i)
        self.bearing = _bearing(friction, self.Rv0, self.Rv1, self.peak)

    def initial_equations(self):
        # At rest, the bearing holding nothing (the motor holds the load).
        if self.init == "steady" and self.friction == "stick_slip":
            yield self.bearing.w == 0
            yield self.bearing.sa == 0


class GearType1(_Gear):
    """Gear of r3 axes 1–3 (MSL ``Utilities.GearType1``): bearing friction on the motor
    side, an elastic spring–damper (``c``, ``d``, on the motor side of the gear) and the
    ideal gear::

        flange_a -- bearing -- spring(c, d) -- gear(i) -- flange_b

    ``init="steady"`` (default) starts at rest in equilibrium: bearing speed 0 carrying no
    torque, the spring neither stretching nor accelerating.

    Example::

        gear = GearType1(i=210, c=8, d=0.01, Rv0=0.5, Rv1=0.1 / 130)
    """

    c = Parameter(43.0, unit="N.m/rad", min=0.0, doc="Spring constant")
    d = Parameter(0.005, unit="N.m.s/rad", min=0.0, doc="Damper constant")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.spring = rot.SpringDamper(c=self.c, d=self.d)

    def equations(self):
        c = mb.connect
        yield c(self.flange_a, self.bearing.flange_a)
        yield c(self.bearing.flange_b, self.spring.flange_a)
        yield c(self.spring.flange_b, self.gear.flange_a)
        yield c(self.gear.flange_b, self.flange_b)

    def initial_equations(self):
        yield from super().initial_equations()
        if self.init == "steady":
            yield self.spring.w_rel == 0
            if self.analysis == "forward":
                yield der(self.spring.w_rel) == 0


class GearType2(_Gear):
    """Gear of r3 axes 4–6 (MSL ``Utilities.GearType2``): the ideal gear, then bearing
    friction on the joint side::

        flange_a -- gear(i) -- bearing -- flange_b

    ``init="steady"`` (default) starts at rest with the bearing carrying no torque.

    Example::

        gear = GearType2(i=-99, Rv0=21.8, Rv1=9.8, peak=26.7 / 21.8)
    """

    def equations(self):
        c = mb.connect
        yield c(self.flange_a, self.gear.flange_a)
        yield c(self.gear.flange_b, self.bearing.flange_a)
        yield c(self.bearing.flange_b, self.flange_b)


class Controller(Model):
    """P–PI cascade controller of one axis (MSL ``Utilities.Controller``)::

        current_ref = PI_{ks, Ts}(ratio*speed_ref + kp*(ratio*angle_ref - motor_angle)
                                  - motor_speed)

    with the PI ``der(x) = u/Ts``, ``y = ks*(x + u)``. ``init="steady"`` (default) starts
    the integrator in steady state (``der(x) = 0``), ``init="state"`` at ``x = 0``.

    Example::

        controller = Controller(kp=5, ks=0.5, Ts=0.05, ratio=210)
    """

    kp = Parameter(KP, doc="Gain of the position controller")
    ks = Parameter(KS, doc="Gain of the speed controller")
    Ts = Parameter(TS, unit="s", min=1e-60, doc="Time constant of the speed integrator")
    ratio = Parameter(1.0, doc="Gear ratio")
    angle_ref = Input(unit="rad", doc="Reference joint angle")
    speed_ref = Input(unit="rad/s", doc="Reference joint speed")
    motor_angle = Input(unit="rad", doc="Measured motor angle")
    motor_speed = Input(unit="rad/s", doc="Measured motor speed")
    current_ref = Output(unit="A", doc="Current reference of the motor")

    def __init__(self, init: str = "steady", **modifiers):
        super().__init__(**modifiers)
        self.angle_gain = blocks.Gain(k=self.ratio)
        self.speed_gain = blocks.Gain(k=self.ratio)
        self.angle_error = blocks.Feedback()
        self.P = blocks.Gain(k=self.kp)
        self.sum = blocks.Add3(k3=-1.0)
        self.PI = blocks.PI(k=self.ks, T=self.Ts, init=init)

    def equations(self):
        c = mb.connect
        yield c(self.angle_ref, self.angle_gain.u)
        yield c(self.angle_gain.y, self.angle_error.u1)
        yield c(self.motor_angle, self.angle_error.u2)
        yield c(self.angle_error.y, self.P.u)
        yield c(self.speed_ref, self.speed_gain.u)
        yield c(self.P.y, self.sum.u1)
        yield c(self.speed_gain.y, self.sum.u2)
        yield c(self.motor_speed, self.sum.u3)
        yield c(self.sum.y, self.PI.u)
        yield c(self.PI.y, self.current_ref)


class Axis(Model):
    """One r3 axis: controller, current-controlled motor and gear (MSL ``AxisType1`` with
    ``gear=1``, ``AxisType2`` with ``gear=2``). The joint hangs on ``flange``; the reference
    enters at ``angle_ref`` and ``speed_ref``. With ``feedforward=True`` the input
    ``current_ff`` [A] is added to the controller's current reference.

    ``inverse=True`` gives the axis of an inverse model (:class:`InverseRobot`): no
    controller and no reference inputs; the motor's armature voltage is an unknown
    (``command``, a :class:`~mbmodel.libraries.blocks.FreeSignal`) and the bearing follows
    its sliding law.

    Parameters: the drive data of :data:`DRIVES` (``k``, ``w``, ``D``, ``J``, ``ratio``,
    ``c``, ``d``, ``Rv0``, ``Rv1``, ``peak``) and the gains ``kp``, ``ks``, ``Ts``.
    ``init="steady"`` (default) starts everything at rest in equilibrium.

    Example::

        axis2 = Axis(gear=1, **{k: v for k, v in DRIVES[1].items() if k != "gear"})
    """

    k = Parameter(1.1616, unit="N.m/A", doc="Gain of the motor")
    w = Parameter(4590.0, unit="rad/s", min=1e-60, doc="Bandwidth of the current loop")
    D = Parameter(0.6, min=1e-60, doc="Damping of the current loop")
    J = Parameter(0.0013, unit="kg.m2", min=0.0, doc="Moment of inertia of the motor")
    ratio = Parameter(-105.0, doc="Gear ratio")
    Rv0 = Parameter(0.4, unit="N.m", min=0.0, doc="Friction torque at zero speed")
    Rv1 = Parameter(0.13 / 160, unit="N.m.s/rad", min=0.0, doc="Viscous friction coefficient")
    peak = Parameter(1.0, min=1.0, doc="Largest sticking torque is peak*Rv0")
    kp = Parameter(KP, doc="Gain of the position controller")
    ks = Parameter(KS, doc="Gain of the speed controller")
    Ts = Parameter(TS, unit="s", min=1e-60, doc="Time constant of the speed integrator")
    flange = rot.Flange_b(doc="Drives the joint")

    def __init__(self, gear: int = 1, feedforward: bool = False, init: str = "steady",
                 c=43.0, d=0.005, inverse: bool = False, **modifiers):
        if gear not in (1, 2):
            raise DeclarationError(f"Axis: gear must be 1 or 2, not {gear!r}")
        super().__init__(**modifiers)
        self.gear_type, self.feedforward, self.inverse = gear, bool(feedforward), inverse
        self.motor = Motor(k=self.k, w=self.w, D=self.D, J=self.J,
                           current_control=not inverse, init="free" if inverse else init)
        common = dict(i=self.ratio, Rv0=self.Rv0, Rv1=self.Rv1, peak=self.peak, init=init,
                      friction="sliding" if inverse else "stick_slip")
        if gear == 1:
            self.c = Parameter(c, unit="N.m/rad", min=0.0, doc="Gear spring constant")
            self.d = Parameter(d, unit="N.m.s/rad", min=0.0, doc="Gear damper constant")
            self.gear = GearType1(c=self.c, d=self.d, **common)
        else:
            self.gear = GearType2(**common)
        if inverse:
            self.command = blocks.FreeSignal()
            return
        self.angle_ref = Input(unit="rad", doc="Reference joint angle")
        self.speed_ref = Input(unit="rad/s", doc="Reference joint speed")
        self.controller = Controller(kp=self.kp, ks=self.ks, Ts=self.Ts, ratio=self.ratio,
                                     init=init)
        if self.feedforward:
            self.current_ff = Input(unit="A", doc="Feed-forward current")
            self.add_ff = blocks.Add()

    def equations(self):
        c = mb.connect
        yield c(self.motor.flange_motor, self.gear.flange_a)
        yield c(self.gear.flange_b, self.flange)
        if self.inverse:
            yield c(self.command.y, self.motor.v)
            return
        yield c(self.angle_ref, self.controller.angle_ref)
        yield c(self.speed_ref, self.controller.speed_ref)
        yield c(self.motor.phi, self.controller.motor_angle)
        yield c(self.motor.speed, self.controller.motor_speed)
        if self.feedforward:
            yield c(self.controller.current_ref, self.add_ff.u1)
            yield c(self.current_ff, self.add_ff.u2)
            yield c(self.add_ff.y, self.motor.i_ref)
        else:
            yield c(self.controller.current_ref, self.motor.i_ref)


def _drives(drives):
    """The six axes' drive data (``DRIVES`` unless given), checked."""
    drives = DRIVES if drives is None else tuple(dict(d) for d in drives)
    if len(drives) != 6:
        raise DeclarationError(f"drives: give the data of 6 axes, not {len(drives)}")
    return drives


def _motion(q_begin, q_end):
    """Start and end angles [rad]: the FullRobot motion unless given."""
    return (np.radians(Q_START_DEG) if q_begin is None else np.asarray(q_begin, float),
            np.radians(Q_END_DEG) if q_end is None else np.asarray(q_end, float))


def _path(reference, q_begin, q_end, qd_max, qdd_max):
    if reference == "ptp":
        cls = blocks.KinematicPTP
    elif reference == "polynomial":
        cls = blocks.PolynomialPTP
    elif reference == "filtered":
        cls = blocks.FilteredPTP
    else:
        raise DeclarationError(f"reference must be 'ptp' (trapezoidal speed), 'filtered' "
                               f"(the trapezoid through a critically damped filter) or "
                               f"'polynomial' (smooth to the 4th derivative), not "
                               f"{reference!r}")
    n = len(q_begin)
    return cls(n=n, q_begin=list(q_begin), q_end=list(q_end), qd_max=list(qd_max),
               qdd_max=list(qdd_max))


class FullRobot(Model):
    """The whole Manutec r3 (MSL ``RobotR3.FullRobot``): mechanics, six axes with their
    controllers, motors and gears, and the synchronized point-to-point path planner.

    Structural options: ``reference`` — ``"ptp"`` (default, the trapezoidal speed profile
    of :class:`~mbmodel.libraries.blocks.KinematicPTP`), ``"filtered"`` (that profile
    through a critically damped filter, :class:`~mbmodel.libraries.blocks.FilteredPTP`) or
    ``"polynomial"`` (:class:`~mbmodel.libraries.blocks.PolynomialPTP`); the last two are
    smooth enough to be inverted;
    ``q_begin``/``q_end`` [rad] (default: the FullRobot motion), ``qd_max``, ``qdd_max``;
    ``feedforward`` — ``None`` or a callable ``t -> 18 signals`` (see :func:`feedforward`):
    currents added to the current references and the references of the axis controllers;
    ``drives`` — the six axes' data (default :data:`DRIVES`).

    The robot starts at rest in equilibrium at the path's start (see the module doc).
    Results: ``planner.q[k]`` (reference), ``mechanics.r<k+1>.phi`` (joint angle),
    ``axis<k+1>.motor.current``, ...

    Example::

        res = mb.compile(FullRobot()).simulate(2.0)
        error = res["planner.q[1]"] - res["mechanics.r2.phi"]
    """

    def __init__(self, reference: str = "ptp", q_begin=None, q_end=None, qd_max=QD_MAX,
                 qdd_max=QDD_MAX, feedforward=None, mLoad=M_LOAD, init: str = "steady",
                 drives=None, **modifiers):
        super().__init__(**modifiers)
        q_begin, q_end = _motion(q_begin, q_end)
        self.feedforward = feedforward
        drives = _drives(drives)
        self.mechanics = MechanicalStructure(q_start=q_begin, fixed=False,
                                             use_axis_flange=True, mLoad=mLoad)
        self.planner = _path(reference, q_begin, q_end, qd_max, qdd_max)
        for k in range(6):
            self.add(f"axis{k + 1}", Axis(feedforward=feedforward is not None, init=init,
                                          **drives[k]))
            if feedforward is None:
                self.add(f"q_ref{k + 1}", blocks.Pick(n=6, index=k))
                self.add(f"qd_ref{k + 1}", blocks.Pick(n=6, index=k))
            else:
                self.add(f"q_ref{k + 1}", blocks.Pick(n=18, index=6 + k))
                self.add(f"qd_ref{k + 1}", blocks.Pick(n=18, index=12 + k))
                self.add(f"i_ff{k + 1}", blocks.Pick(n=18, index=k))
        if feedforward is not None:
            self.ff = blocks.TimeFunction(feedforward, n=18)

    def equations(self):
        c = mb.connect
        for k in range(1, 7):
            axis = getattr(self, f"axis{k}")
            q_ref, qd_ref = getattr(self, f"q_ref{k}"), getattr(self, f"qd_ref{k}")
            source = self.planner if self.feedforward is None else None
            yield c(self.planner.q if source else self.ff.y, q_ref.u)
            yield c(self.planner.qd if source else self.ff.y, qd_ref.u)
            yield c(q_ref.y, axis.angle_ref)
            yield c(qd_ref.y, axis.speed_ref)
            yield c(axis.flange, getattr(self.mechanics, f"axis{k}"))
            if self.feedforward is not None:
                pick = getattr(self, f"i_ff{k}")
                yield c(self.ff.y, pick.u)
                yield c(pick.y, axis.current_ff)


class OneAxis(Model):
    """Axis 2 of the r3 driving a load inertia (MSL ``RobotR3.OneAxis``): the load
    ``J = 1.14^2*mLoad`` (15 kg at 1.14 m), 0 → 120° with ``qd_max = 3`` rad/s and
    ``qdd_max = 10`` rad/s² (trapezoidal speed profile).

    Example::

        res = mb.compile(OneAxis()).simulate(1.6)
    """

    mLoad = Parameter(M_LOAD, unit="kg", min=0.0, doc="Mass of the load")

    def __init__(self, start_angle=0.0, end_angle=np.radians(120.0), **modifiers):
        super().__init__(**modifiers)
        self.planner = blocks.KinematicPTP(n=1, q_begin=[start_angle], q_end=[end_angle],
                                        qd_max=[3.0], qdd_max=[10.0])
        self.q_ref, self.qd_ref = blocks.Pick(n=1, index=0), blocks.Pick(n=1, index=0)
        self.axis = Axis(**DRIVES[1])
        self.load = rot.Inertia(J=1.14**2 * self.mLoad, phi=mb.Guess(start_angle),
                                w=mb.Guess(0.0))

    def equations(self):
        c = mb.connect
        yield c(self.planner.q, self.q_ref.u)
        yield c(self.planner.qd, self.qd_ref.u)
        yield c(self.q_ref.y, self.axis.angle_ref)
        yield c(self.qd_ref.y, self.axis.speed_ref)
        yield c(self.axis.flange, self.load.flange_a)


class InverseRobot(Model):
    """The r3 inverse model: the same mechanics, gears and DC motors as :class:`FullRobot`,
    with the joint angles prescribed by a path planner and each armature voltage an unknown
    (:class:`~mbmodel.libraries.blocks.FreeSignal`). Compile with
    ``analysis="inverse"``: index reduction differentiates the path through the elastic
    gears (fourth derivative for the currents, fifth for the voltages), so use
    ``reference="polynomial"`` (default) or ``"filtered"`` (the trapezoidal profile's
    acceleration jumps). In the inverse analysis the bearings follow their sliding law
    ``sign(w)*(Rv0 + Rv1*|w|)``.

    Results: ``mechanics.r<k>.tau`` (joint torque), ``axis<k>.motor.emf.tau_elec`` (motor
    torque), ``axis<k>.motor.current`` and ``axis<k>.command.y`` (armature voltage).

    Example::

        cm = mb.compile(InverseRobot(), analysis="inverse")
    """

    def __init__(self, reference: str = "polynomial", q_begin=None, q_end=None,
                 qd_max=QD_MAX, qdd_max=QDD_MAX, mLoad=M_LOAD, drives=None, **modifiers):
        super().__init__(**modifiers)
        drives = _drives(drives)
        q_begin, q_end = _motion(q_begin, q_end)
        self.mechanics = MechanicalStructure(use_axis_flange=True, mLoad=mLoad)
        self.planner = _path(reference, q_begin, q_end, qd_max, qdd_max)
        for k in range(6):
            self.add(f"axis{k + 1}", Axis(inverse=True, **drives[k]))

    def equations(self):
        for k in range(1, 7):
            axis = getattr(self, f"axis{k}")
            yield mb.connect(axis.flange, getattr(self.mechanics, f"axis{k}"))
            yield getattr(self.mechanics, f"r{k}").phi == self.planner.q[k - 1]


def feedforward(t_end, params=None, degree=80, **robot):
    """The inverse model along a path as the feed-forward of :class:`FullRobot`
    (``feedforward=``, Otter, Elmqvist and Cellier 1993): ``t -> 18 signals`` (casadi
    expressions): the 6 motor currents [A], then the 6 motor angles and the 6 motor
    speeds divided by the gear ratios (the axis controllers' references: the elastic gears
    of axes 1–3 deflect under load, so the motor must lead the joint).

    Compiles :class:`InverseRobot` (``robot``: its options, e.g. ``reference``) with
    ``analysis="inverse"`` and runs it to ``t_end``. The inverse model has states of its
    own where a gear's spring has a damper in parallel (the deflection follows the torque
    through ``c*phi + d*der(phi)``), so its currents come from a simulation, not from a
    formula of time. They enter the forward model as Chebyshev series over the inside of
    the motion (smooth, no table of time events), at rest their values before and after
    it. A bearing's friction jumps where its speed changes sign (at the motion's ends, and
    where an elastic gear's motor side swings back as the motion dies out): the series is
    cut there, ``degree`` shared among the pieces by their lengths. Returns the callable,
    the inverse run's result and the largest fitting error of the currents [A].

    Example::

        ff, inverse, fit_error = feedforward(2.0, reference="filtered")
        cm = mb.compile(FullRobot(reference="filtered", feedforward=ff))
    """
    import casadi as ca
    from numpy.polynomial import chebyshev

    cm = mb.compile(InverseRobot(**robot), analysis="inverse")
    # least squares on equally spaced points stays well conditioned up to a degree of
    # about the square root of their number
    with warnings.catch_warnings():
        # The currents jump where the motion ends (the bearings' noEvent(sign(w)) friction,
        # below): the series is cut there, and the voltages, which lack the impulses of
        # those jumps (the warning), are not part of the feed-forward.
        warnings.simplefilter("ignore", mb.LostImpulseWarning)
        res = cm.simulate(t_end, n_points=max(4001, degree * degree + 1), params=params)
    t_motion = float(res.final("planner.T"))
    if not t_motion < t_end:
        raise DeclarationError(f"feedforward_currents: t_end ({t_end}) must lie after the "
                               f"motion's end ({t_motion:.4g} s)")
    # Inside the motion: the bearings' sliding friction jumps at its start and end (sign(w)
    # from 0 to +-1), which the series must not straddle; a margin keeps out the last
    # points, where w ~ (T - t)^5 is rounding noise of either sign.
    margin = 1e-3 * t_motion
    inside = (res.t > 0) & (res.t < t_motion - margin)
    # ... and where a bearing's speed changes sign inside the motion (an elastic gear's
    # motor side can swing back as the motion dies out), its friction jumps too: the
    # series is cut there, one per piece
    t_in = res.t[inside]
    cuts = set()
    for k in range(1, 7):
        w = res[f"axis{k}.gear.bearing.w"][inside]
        for j in np.flatnonzero(np.sign(w[1:]) * np.sign(w[:-1]) < 0):
            cuts.add(float(t_in[j] - w[j] * (t_in[j + 1] - t_in[j]) / (w[j + 1] - w[j])))
    bounds = [0.0] + sorted(cuts) + [t_motion]
    signals = ([f"axis{k}.motor.current" for k in range(1, 7)]
               + [f"axis{k}.motor.phi" for k in range(1, 7)]
               + [f"axis{k}.motor.speed" for k in range(1, 7)])
    drives = _drives(robot.get("drives"))
    ratios = [drives[k]["ratio"] for k in range(6)] * 2
    # the currents, then the joint-side references
    values = [res[name] if j < 6 else res[name] / ratios[j - 6]
              for j, name in enumerate(signals)]
    pieces, fit_error = [], 0.0
    for a, b in zip(bounds[:-1], bounds[1:]):
        here = inside & (res.t > a) & (res.t < b)
        # over the points it is fitted to: a series of high degree strays where it has
        # none, so the piece holds its first and last fitted values up to a and b
        lo, hi = float(res.t[here][0]), float(res.t[here][-1])
        x = 2 * (res.t[here] - lo) / (hi - lo) - 1
        # the degree in proportion to the piece's share of the motion, enough points each
        deg = min(max(4, round(degree * (b - a) / t_motion)), max(1, int(here.sum()) // 4))
        series = []
        for j, value in enumerate(values):
            fit = chebyshev.Chebyshev.fit(x, value[here], deg, domain=[-1, 1])
            if j < 6:
                fit_error = max(fit_error, float(np.max(np.abs(fit(x) - value[here]))))
            series.append(fit.coef)
        pieces.append((b, lo, hi, series))
    ends = [(float(value[0]), float(value[-1])) for value in values]

    def signals_at(t):
        xts = [2 * (ca.fmin(ca.fmax(t, lo), hi) - lo) / (hi - lo) - 1
               for _, lo, hi, _ in pieces]
        out = []
        for j, (start, end) in enumerate(ends):
            value = end
            for (b, _, _, series), xt in zip(reversed(pieces), reversed(xts)):
                b1 = b2 = 0  # Clenshaw's recurrence
                coef = series[j]
                for c in coef[:0:-1]:
                    b1, b2 = 2 * xt * b1 - b2 + c, b1
                value = ca.if_else(t < b, xt * b1 - b2 + coef[0], value)
            out.append(ca.if_else(t <= 0, start, value))
        return ca.vertcat(*out)
    return signals_at, res, fit_error
