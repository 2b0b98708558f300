"""Causal signal blocks (Modelica.Blocks semantics): sources, math, continuous and nonlinear
blocks, and a limited PID controller with anti-windup.

Blocks have :class:`~mbmodel.Input` and :class:`~mbmodel.Output` signals connected with
``connect(a.y, b.u)`` (an Output to one or more Inputs). An Input of a sub-component must
be connected; an Input of the top-level model is an external input of the compiled model.

Example: a PI controller closing the loop around a first-order plant::

    import mbmodel as mb
    from mbmodel.libraries import blocks

    class Loop(mb.Model):
        setpoint = blocks.Step(height=1.0, startTime=0.5)
        feedback = blocks.Feedback()
        controller = blocks.PI(k=2.0, T=0.5)
        plant = blocks.FirstOrder(k=1.0, T=1.0)

        def equations(self):
            yield mb.connect(self.setpoint.y, self.feedback.u1)
            yield mb.connect(self.plant.y, self.feedback.u2)
            yield mb.connect(self.feedback.y, self.controller.u)
            yield mb.connect(self.controller.y, self.plant.u)

    result = mb.simulate(Loop(), t_end=10.0)
    print(result["plant.y"][-1])   # -> 1.0

Initialization of blocks with states (Integrator, FirstOrder, Derivative, PI, LimPID)
follows MSL ``initType = InitialState``: every state starts *fixed* at its start value
(0 unless modified, e.g. ``Integrator(y=Fixed(2.0))``). The structural option ``init``
chooses otherwise:

* ``init="state"`` (default): states fixed at their start values (Modelica InitialState);
  a :func:`~mbmodel.Guess` modifier on a state still makes it free.
* ``init="steady"``: the derivatives of the states are zero at the start (SteadyState).
* ``init="free"``: start values are guesses only (NoInit); the rest of the model must
  determine the initial state.

Parameters whose value must be positive (time constants, ``Ti``) have a tiny positive lower
bound, so 0 is rejected when the value is set.
"""

from __future__ import annotations

import math

import casadi as ca
import numpy as np

import mbmodel as mb
from mbmodel import DeclarationError, Input, Model, Output, Parameter, Variable, der
from mbmodel.functions import fmax, fmin, if_else, sin

__all__ = [
    # partial interfaces
    "SO", "SISO", "SI2SO",
    # sources
    "Constant", "Step", "Ramp", "Sine", "Cosine", "ContinuousClock", "KinematicPTP",
    "PolynomialPTP", "FilteredPTP", "TimeFunction", "FreeSignal", "Pick",
    # math
    "Gain", "Add", "Add3", "Feedback", "Product", "Division", "Abs",
    # continuous
    "Integrator", "Derivative", "FirstOrder", "SecondOrder", "PI", "LimPID",
    # nonlinear
    "Limiter", "DeadZone",
    # logical and discrete (switching at events)
    "Hysteresis", "Greater", "Less", "GreaterThreshold", "LessThreshold", "Switch",
    "SampleAndHold", "Pulse", "Sawtooth", "TimeTable",
]

#: Lower bound of strictly positive parameters (Modelica.Constants.small).
SMALL = 1e-60
#: Lower bound of the LimPID ratios Ni and Nd (100*Modelica.Constants.eps).
_HUNDRED_EPS = 100 * np.finfo(float).eps

_INIT_TYPES = ("state", "steady", "free")


# --------------------------------------------------------------------------------------
# Partial interfaces
# --------------------------------------------------------------------------------------

class SO(Model):
    """Single-output block (partial): output ``y``."""

    y = Output(doc="output signal")


class SISO(Model):
    """Single-input single-output block (partial): input ``u``, output ``y``."""

    u = Input(doc="input signal")
    y = Output(doc="output signal")


class SI2SO(Model):
    """Two-input single-output block (partial): inputs ``u1``, ``u2``, output ``y``."""

    u1 = Input(doc="input signal 1")
    u2 = Input(doc="input signal 2")
    y = Output(doc="output signal")


class _WithInit(Model):
    """Mixin for blocks with states: the structural ``init`` option (see module doc).

    Subclasses list their state variables' names in ``_states``.
    """

    _states: tuple[str, ...] = ()

    def __init__(self, *, init: str = "state", **modifiers):
        super().__init__(**modifiers)
        if init not in _INIT_TYPES:
            raise DeclarationError(f"{type(self).__name__}: init must be one of {_INIT_TYPES}, "
                                   f"not {init!r}")
        self.init = init
        if init != "state":
            for name in self._active_states():
                self.declaration(name).fixed = False

    def _active_states(self):
        return self._states

    def initial_equations(self):
        if self.init == "steady":
            for name in self._active_states():
                yield der(getattr(self, name)) == 0


# --------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------

class Constant(SO):
    """Constant output.

    Equation: ``y = k``.
    """

    k = Parameter(1.0, doc="constant output value")

    def equations(self):
        yield self.y == self.k


class Step(SO):
    """Step of ``height`` at ``startTime`` on top of ``offset``.

    Equation: ``y = offset + (height if time >= startTime else 0)``.

    The switch is declared as a time event, so the simulator stops exactly at
    ``startTime``; at ``startTime`` itself the output already has the new value.
    """

    height = Parameter(1.0, doc="height of the step")
    offset = Parameter(0.0, doc="output before startTime")
    startTime = Parameter(0.0, unit="s", doc="time of the step")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.time_event(self.startTime)

    def equations(self):
        yield self.y == if_else(mb.time >= self.startTime, self.height, 0) + self.offset


class Ramp(SO):
    """Ramp rising by ``height`` during ``duration`` from ``startTime`` on, on top of
    ``offset``.

    Equation::

        y = offset                                            if time < startTime
        y = offset + height*(time - startTime)/duration       if startTime <= time < startTime + duration
        y = offset + height                                   if time >= startTime + duration

    The kinks at ``startTime`` and ``startTime + duration`` are time events.
    ``duration = 0`` gives a step.
    """

    height = Parameter(1.0, doc="height of the ramp")
    duration = Parameter(2.0, unit="s", min=0.0, doc="duration of the ramp (0 = step)")
    offset = Parameter(0.0, doc="output before startTime")
    startTime = Parameter(0.0, unit="s", doc="start time of the ramp")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.time_event(self.startTime)
        self.time_event(self.startTime + self.duration)

    def equations(self):
        t, t0, d = mb.time, self.startTime, self.duration
        # fmax(...) only guards the unselected branch of a zero duration against 0/0.
        rising = self.height * (t - t0) / fmax(d, SMALL)
        yield self.y == self.offset + if_else(
            t < t0, 0, if_else(t < t0 + d, rising, self.height))


class Sine(SO):
    """Sine wave starting at ``startTime``.

    Equation: ``y = offset + (0 if time < startTime else
    amplitude*sin(2*pi*f*(time - startTime) + phase))``.

    ``startTime`` is a time event (the output jumps there unless ``phase`` is a multiple of
    pi).
    """

    amplitude = Parameter(1.0, doc="amplitude of the sine wave")
    f = Parameter(1.0, unit="Hz", doc="frequency")
    phase = Parameter(0.0, unit="rad", doc="phase at startTime")
    offset = Parameter(0.0, doc="offset of the output")
    startTime = Parameter(0.0, unit="s", doc="output = offset before startTime")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.time_event(self.startTime)
        self.time_scale(1 / self.f)  # the simulator's steps stay a fraction of a period

    def _wave(self):
        return sin(2 * math.pi * self.f * (mb.time - self.startTime) + self.phase)

    def equations(self):
        yield self.y == self.offset + if_else(mb.time < self.startTime, 0,
                                              self.amplitude * self._wave())


class Cosine(Sine):
    """Cosine wave starting at ``startTime``.

    Equation: ``y = offset + (0 if time < startTime else
    amplitude*cos(2*pi*f*(time - startTime) + phase))``.
    """

    def _wave(self):
        return ca.cos(2 * math.pi * self.f * (mb.time - self.startTime) + self.phase)


class ContinuousClock(SO):
    """Time since ``startTime``.

    Equation: ``y = offset + (0 if time < startTime else time - startTime)``.
    """

    offset = Parameter(0.0, doc="offset of the output")
    startTime = Parameter(0.0, unit="s", doc="output = offset before startTime")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.time_event(self.startTime)

    def equations(self):
        yield self.y == self.offset + if_else(mb.time < self.startTime, 0,
                                              mb.time - self.startTime)


def _declare_ptp(block, *, n: int = 1, q_begin=0.0, q_end=1.0, qd_max=1.0, qdd_max=1.0,
                 **modifiers):
    """The members the point-to-point planners share: structural ``n``, the vector
    parameters ``q_begin``, ``q_end``, ``qd_max``, ``qdd_max`` (a scalar symbol is
    broadcast) and the outputs ``q``, ``qd``, ``qdd``."""
    name = type(block).__name__
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise DeclarationError(f"{name}: n must be a positive integer, not {n!r}")
    Model.__init__(block, **modifiers)
    block.n = int(n)
    shape = (block.n, 1)

    def vector(value):
        if isinstance(value, ca.SX) and value.numel() == 1 and block.n > 1:
            return ca.repmat(value, block.n, 1)
        return value

    block.q_begin = Parameter(vector(q_begin), shape=shape, doc="start position")
    block.q_end = Parameter(vector(q_end), shape=shape, doc="end position")
    block.qd_max = Parameter(vector(qd_max), shape=shape, min=SMALL,
                             doc="maximum velocities der(q) (> 0)")
    block.qdd_max = Parameter(vector(qdd_max), shape=shape, min=SMALL,
                              doc="maximum accelerations der(qd) (> 0)")
    block.q = Output(shape=shape, doc="reference position")
    block.qd = Output(shape=shape, doc="reference velocity der(q)")
    block.qdd = Output(shape=shape, doc="reference acceleration der(qd)")


#: Motion below this (as max |dq/qd_max| or max |dq/qdd_max|) counts as none (MSL eps).
_PTP_EPS = 10 * np.finfo(float).eps


def _trapezoid_timing(block):
    """(moving, Ta, Tv, Te, sdd_max) of :class:`KinematicPTP`'s synchronized trapezoid, as
    expressions of ``block``'s parameters ``q_begin``, ``q_end``, ``qd_max``, ``qdd_max``
    (also :class:`FilteredPTP`'s)."""
    dq = block.q_end - block.q_begin
    sd_inv = ca.mmax(ca.fabs(dq / block.qd_max))
    sdd_inv = ca.mmax(ca.fabs(dq / block.qdd_max))
    moving = ca.logic_and(sd_inv > _PTP_EPS, sdd_inv > _PTP_EPS)
    sd_max = 1 / fmax(sd_inv, _PTP_EPS)
    sdd_max = 1 / fmax(sdd_inv, _PTP_EPS)
    ta1 = ca.sqrt(1 / sdd_max)
    ta2 = sd_max / sdd_max
    no_cruise = ta2 >= ta1
    ta = if_else(moving, if_else(no_cruise, ta1, ta2), 0)
    tv = if_else(moving, if_else(no_cruise, ta1, 1 / sd_max), 0)
    return moving, ta, tv, tv + ta, sdd_max


class KinematicPTP(Model):
    """Point-to-point reference motion of ``n`` axes with a synchronized trapezoidal
    velocity profile (MSL ``Blocks.Sources.KinematicPTP2``, without ``moving``).

    Structural option ``n`` (number of axes, default 1); parameters (vectors of size ``n``;
    a scalar is broadcast): ``q_begin``, ``q_end``, ``qd_max > 0``, ``qdd_max > 0``, and the
    scalar ``start_time``. Outputs ``q``, ``qd = der(q)``, ``qdd = der(qd)`` (size ``n``).

    All axes move along one path ``q = q_begin + dq*s(t)``, ``s`` going from 0 to 1, scaled
    so that the slowest axis reaches its velocity or acceleration limit::

        dq      = q_end - q_begin
        sd_max  = 1/max(|dq_i/qd_max_i|)          sdd_max = 1/max(|dq_i/qdd_max_i|)
        Ta1     = sqrt(1/sdd_max)                  Ta2     = sd_max/sdd_max
        if Ta2 >= Ta1 (no constant-speed phase):   Ta = Ta1, Tv = Ta1,       Te = 2*Ta1
        else:                                      Ta = Ta2, Tv = 1/sd_max,  Te = Tv + Ta2

        tau = time - start_time
        s   = 0                          sd = 0             sdd = 0         tau < 0
        s   = sdd_max*tau^2/2            sd = sdd_max*tau   sdd = sdd_max   0 <= tau < Ta
        s   = sdd_max*Ta*(tau - Ta/2)    sd = sdd_max*Ta    sdd = 0         Ta <= tau < Tv
        s   = 1 - sdd_max*(Te - tau)^2/2 sd = sdd_max*(Te - tau)
                                                            sdd = -sdd_max  Tv <= tau < Te
        s   = 1                          sd = 0             sdd = 0         tau >= Te

        q = q_begin + dq*s,   qd = dq*sd,   qdd = dq*sdd

    ``Ta`` ends the acceleration phase (``min(Ta1, Ta2)``), ``Tv`` the constant-speed
    phase; the motion ends at ``start_time + Te``. ``sdd_max*Ta*Tv = 1``, so ``s`` is
    continuous with ``s(Te) = 1``, and ``sd``/``sdd`` are the exact derivatives of ``s``.

    ``q`` is a closed-form function of ``time`` (nested ``if_else``, no state), so index
    reduction can differentiate it twice, e.g. when it drives a rotational
    :class:`~mbmodel.libraries.rotational.Position` source with ``exact=True``. The
    durations are casadi expressions of the parameters, which may therefore stay symbolic
    (changeable between runs). ``start_time`` and the phase switches ``start_time + Ta``,
    ``start_time + Tv``, ``start_time + Te`` are time events. If no axis moves
    (``max(|dq_i/qd_max_i|)`` or ``max(|dq_i/qdd_max_i|)`` at most ``10*eps``) the output
    stays at ``q_begin`` with ``qd = qdd = 0`` and all durations are 0 (the divisions are
    guarded by ``max(..., 10*eps)``).

    Example (two axes)::

        class Motion(mb.Model):
            ptp = blocks.KinematicPTP(n=2, q_begin=[0.0, 1.0], q_end=[2.0, 0.0],
                                      qd_max=[1.0, 3.0], qdd_max=[2.0, 2.0])

        res = mb.simulate(Motion(), t_end=3.0)
        print(res["ptp.q[0]"][-1], res["ptp.q[1]"][-1])   # -> 2.0 0.0

    (axis 0 limits the path: ``Ta = 0.5``, ``Tv = 2``, ``Te = 2.5``).
    """

    start_time = Parameter(0.0, unit="s", doc="time instant at which the movement starts")

    #: Motion below this (as max |dq/qd_max| or max |dq/qdd_max|) counts as none (MSL eps).
    EPS = _PTP_EPS

    def __init__(self, **options):
        _declare_ptp(self, **options)
        _, ta, tv, te, _ = _trapezoid_timing(self)
        for at in (0, ta, tv, te):
            self.time_event(self.start_time + at)

    def equations(self):
        moving, ta, tv, te, sdd_max = _trapezoid_timing(self)
        t, t0 = mb.time, self.start_time
        tau = t - t0
        # The phases switch at exactly the declared event times (same expressions).
        in_acc, in_cruise, in_dec = t < t0 + ta, t < t0 + tv, t < t0 + te
        s = if_else(t < t0, 0,
            if_else(in_acc, sdd_max / 2 * tau**2,
            if_else(in_cruise, sdd_max * ta * (tau - ta / 2),
            if_else(in_dec, 1 - sdd_max / 2 * (te - tau)**2, 1))))
        sd = if_else(t < t0, 0,
             if_else(in_acc, sdd_max * tau,
             if_else(in_cruise, sdd_max * ta,
             if_else(in_dec, sdd_max * (te - tau), 0))))
        sdd = if_else(t < t0, 0,
              if_else(in_acc, sdd_max,
              if_else(in_cruise, 0,
              if_else(in_dec, -sdd_max, 0))))
        dq = self.q_end - self.q_begin
        yield self.q == self.q_begin + dq * if_else(moving, s, 0)
        yield self.qd == dq * if_else(moving, sd, 0)
        yield self.qdd == dq * if_else(moving, sdd, 0)


def _gamma_below(m: int, u):
    """P(m, u) = 1 - exp(-u) sum_{j<m} u^j/j!: the probability that a sum of ``m``
    exponential delays of unit mean is below ``u`` (the regularized lower incomplete gamma
    function for integer ``m``), for ``u >= 0``."""
    term, total = 1.0, 1.0
    for j in range(1, m):
        term = term * u / j
        total = total + term
    return 1 - ca.exp(-u) * total


class FilteredPTP(Model):
    """:class:`KinematicPTP`'s synchronized trapezoidal profile through a critically damped
    low-pass filter (MSL ``Blocks.Continuous.Filter`` with ``analogFilter=CriticalDamping``),
    in closed form: a reference for inverse models, which differentiate it (an elastic gear
    needs the fourth derivative of the angle for the motor current and the fifth for its
    voltage), as fast as the trapezoid it smooths.

    Options and parameters as :class:`KinematicPTP` (``n``, ``q_begin``, ``q_end``,
    ``qd_max``, ``qdd_max``, ``start_time``), and structural ``order`` (default 4) and
    parameter ``f_cut`` [Hz] (default 5): ``order`` first-order stages of time constant
    ``tau = sqrt(2^(1/order) - 1) / (2 pi f_cut)`` each, so that the whole filter passes
    ``f_cut`` at -3 dB. Outputs ``q``, ``qd``, ``qdd`` and the duration ``T``: the
    trapezoid's end plus the time the filter's step response takes to come within
    :data:`SETTLED` of its end (37 ``tau`` for order 4).

    The trapezoid's acceleration is a sum of steps, ``sdd_max`` times
    ``H(t) - H(t - Ta) - H(t - Tv) + H(t - Te)``. The filter's impulse response is the
    density of a sum ``V`` of ``order`` exponential delays of mean ``tau``, so a unit step of
    acceleration at 0 comes out as (``u = t/tau``, ``m = order``, ``P`` as in
    :func:`_gamma_below`)::

        r''(t) = P(m, u)
        r'(t)  = t P(m, u) - m tau P(m+1, u)
        r(t)   = (t^2 P(m, u) - 2 t m tau P(m+1, u) + m (m+1) tau^2 P(m+2, u)) / 2

    for ``t > 0`` (0 before), and ``q = q_begin + dq*s`` with ``s`` the same sum of shifted
    ``r``. ``q`` is continuous to the derivative ``order + 1``; since the impulse response is
    positive with unit area, ``|qd|`` and ``|qdd|`` stay within ``qd_max`` and ``qdd_max``
    (the trapezoid's bounds). The filter's response only approaches ``q_end`` (the rest
    decays like ``exp(-t/tau)``), so from ``T`` on, where it is within :data:`SETTLED` of
    the step, the block holds ``q = q_end`` and ``qd = qdd = 0`` exactly. The filter delays
    the motion by ``order * tau`` on average.

    Example::

        class Motion(mb.Model):
            ptp = blocks.FilteredPTP(n=2, q_begin=[0.0, 1.0], q_end=[2.0, 0.0],
                                     qd_max=[1.0, 3.0], qdd_max=[2.0, 2.0])

        res = mb.simulate(Motion(), t_end=4.0)
        print(res["ptp.q[0]"][-1])   # -> 2.0 (to 1e-9)
    """

    start_time = Parameter(0.0, unit="s", doc="time instant at which the movement starts")
    f_cut = Parameter(5.0, unit="Hz", min=SMALL, doc="cut-off frequency of the filter")

    def __init__(self, order: int = 4, **options):
        if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
            raise DeclarationError(f"FilteredPTP: order must be a positive integer, not "
                                   f"{order!r}")
        self.order = int(order)
        _declare_ptp(self, **options)
        self.T = Output(unit="s", doc="duration: the trapezoid's end and the filter's "
                                      "settling to SETTLED of a step")
        _, ta, tv, te, _ = _trapezoid_timing(self)
        self._settled = self._settling()
        for at in (0, ta, tv, te, te + self._settled * self._tau()):
            self.time_event(self.start_time + at)

    #: What ``T`` counts as settled: the filter's step response within this of its end.
    SETTLED = 1e-12

    def _tau(self):
        return np.sqrt(2.0 ** (1.0 / self.order) - 1.0) / (2 * np.pi * self.f_cut)

    def _settling(self) -> float:
        """u (time over tau) at which 1 - P(order, u) falls to SETTLED."""
        from scipy.special import gammaincc
        from scipy.optimize import brentq
        return brentq(lambda u: gammaincc(self.order, u) - self.SETTLED, 0.0, 1e3)

    def equations(self):
        moving, ta, tv, te, sdd_max = _trapezoid_timing(self)
        m = self.order
        tau = self._tau()
        duration = te + self._settled * tau
        yield self.T == duration
        s = sd = sdd = 0
        for sign, at in ((1, 0), (-1, ta), (-1, tv), (1, te)):
            t = mb.time - self.start_time - at
            u = t / tau
            p0, p1, p2 = (_gamma_below(m + k, u) for k in range(3))
            after = t > 0
            sdd = sdd + sign * if_else(after, p0, 0)
            sd = sd + sign * if_else(after, t * p0 - m * tau * p1, 0)
            s = s + sign * if_else(after, (t * t * p0 - 2 * t * m * tau * p1
                                           + m * (m + 1) * tau * tau * p2) / 2, 0)
        # from T on at rest exactly (a step of SETTLED): the speed's sign stays defined
        going = ca.logic_and(moving, mb.time < self.start_time + duration)
        dq = self.q_end - self.q_begin
        yield self.q == self.q_begin + dq * if_else(going, sdd_max * s,
                                                    if_else(moving, 1, 0))
        yield self.qd == dq * if_else(going, sdd_max * sd, 0)
        yield self.qdd == dq * if_else(going, sdd_max * sdd, 0)


def _smooth_step_polynomial():
    """Coefficients (low to high) of the degree-9 polynomial s(x) with s(0) = 0, s(1) = 1 and
    derivatives 1..4 zero at both ends, and the peaks of |s'| and |s''| on [0, 1]."""
    s = np.polynomial.Polynomial([0, 0, 0, 0, 0, 126, -420, 540, -315, 70])
    d1, d2 = s.deriv(1), s.deriv(2)
    peak_acc = max(abs(d2(x)) for x in d2.deriv().roots().real if 0 <= x <= 1)
    return s.coef, float(d1(0.5)), float(peak_acc)


_PTP9, _PTP9_SD, _PTP9_SDD = _smooth_step_polynomial()


class PolynomialPTP(Model):
    """Point-to-point reference motion of ``n`` axes along a path that is smooth to the
    fourth derivative: the synchronized counterpart of :class:`KinematicPTP` for inverse
    models that differentiate the reference (an elastic gear needs the fourth derivative of
    the angle for the motor current and the fifth for its voltage).

    Parameters as :class:`KinematicPTP` (vectors of size ``n``): ``q_begin``, ``q_end``,
    ``qd_max > 0``, ``qdd_max > 0``, ``start_time``. All axes follow
    ``q = q_begin + dq*s(tau/T)`` with the degree-9 polynomial::

        s(x) = 126 x^5 - 420 x^6 + 540 x^7 - 315 x^8 + 70 x^9

    (``s(0) = 0``, ``s(1) = 1``, derivatives 1 to 4 zero at both ends). The duration ``T``
    is the shortest that keeps every axis within its limits::

        T = max_i max(|dq_i| s1/qd_max_i, sqrt(|dq_i| s2/qdd_max_i))

    with ``s1 = max s' = 630/256`` and ``s2 = max |s''| = 9.372``. Outputs ``q``, ``qd``,
    ``qdd`` and the duration ``T``; ``q`` is a closed-form function of time, so index
    reduction differentiates it as often as a model needs (continuous up to the fourth
    derivative). The start and the end of the motion are time events.

    Example::

        class Motion(mb.Model):
            ptp = blocks.PolynomialPTP(n=2, q_begin=[0.0, 1.0], q_end=[2.0, 0.0],
                                       qd_max=[1.0, 3.0], qdd_max=[2.0, 2.0])

        res = mb.simulate(Motion(), t_end=6.0)
        print(res["ptp.q[0]"][-1], res.final("ptp.T"))   # -> 2.0 4.92...
    """

    start_time = Parameter(0.0, unit="s", doc="time instant at which the movement starts")

    def __init__(self, **options):
        _declare_ptp(self, **options)
        self.T = Output(unit="s", doc="duration of the motion")
        self.time_event(self.start_time)
        self.time_event(self.start_time + self._duration())

    def _duration(self):
        dq = ca.fabs(self.q_end - self.q_begin)
        by_speed = ca.mmax(dq * _PTP9_SD / self.qd_max)
        by_acc = ca.mmax(ca.sqrt(dq * _PTP9_SDD / self.qdd_max))
        return fmax(fmax(by_speed, by_acc), KinematicPTP.EPS)

    def equations(self):
        T = self._duration()
        t, t0 = mb.time, self.start_time
        x = (t - t0) / T
        s = sd = sdd = 0
        for c in reversed([float(v) for v in _PTP9]):  # Horner, with two derivatives
            sdd = sdd * x + 2 * sd
            sd = sd * x + s
            s = s * x + c
        moving = ca.logic_and(t >= t0, t < t0 + T)
        dq = self.q_end - self.q_begin
        yield self.T == T
        yield self.q == self.q_begin + dq * if_else(t < t0, 0, if_else(moving, s, 1))
        yield self.qd == dq * if_else(moving, sd / T, 0)
        yield self.qdd == dq * if_else(moving, sdd / T**2, 0)


class TimeFunction(Model):
    """Output ``y = function(time)``: a closed-form signal given as a Python callable of the
    casadi time symbol (``mb.time``), such as a compiled inverse model's output function.

    Structural options ``function`` (called once while the equations are generated; it must
    use casadi operations) and ``n`` (size of ``y``).

    Example::

        wave = blocks.TimeFunction(lambda t: 0.1 * mb.functions.sin(3 * t))
    """

    def __init__(self, function, *, n: int = 1, **modifiers):
        if not callable(function):
            raise DeclarationError(f"TimeFunction: function must be callable, not "
                                   f"{type(function).__name__}")
        super().__init__(**modifiers)
        self.function, self.n = function, int(n)
        self.y = Output(shape=(self.n, 1), doc="function(time)")

    def equations(self):
        value = ca.reshape(ca.SX(self.function(mb.time)), -1, 1)
        if value.numel() != self.n:
            raise DeclarationError(f"TimeFunction '{self.path}': function returned "
                                   f"{value.numel()} values, n = {self.n}")
        yield self.y == value


class FreeSignal(Model):
    """An output without an equation of its own: an unknown that the rest of the model
    fixes (the idea of Modelica's ``InverseBlockConstraints``). In an inverse model it takes
    the place of a command signal (a voltage, a current reference) while a prescribed motion
    supplies the equation that determines it.

    Example (the voltage a motor needs to follow a prescribed angle)::

        command = blocks.FreeSignal()
        source = el.SignalVoltage()
        # in equations(): connect(command.y, source.v); motor.phi == reference(mb.time)
    """

    y = Output(determined_outside=True, doc="the unknown signal")


# --------------------------------------------------------------------------------------
# Math
# --------------------------------------------------------------------------------------

class Gain(SISO):
    """Multiplies the input by a gain.

    Equation: ``y = k*u``.
    """

    k = Parameter(1.0, doc="gain")

    def equations(self):
        yield self.y == self.k * self.u


class Add(SI2SO):
    """Weighted sum of two inputs.

    Equation: ``y = k1*u1 + k2*u2``.
    """

    k1 = Parameter(1.0, doc="gain of u1")
    k2 = Parameter(1.0, doc="gain of u2")

    def equations(self):
        yield self.y == self.k1 * self.u1 + self.k2 * self.u2


class Add3(Model):
    """Weighted sum of three inputs.

    Equation: ``y = k1*u1 + k2*u2 + k3*u3``.
    """

    u1 = Input(doc="input signal 1")
    u2 = Input(doc="input signal 2")
    u3 = Input(doc="input signal 3")
    y = Output(doc="output signal")
    k1 = Parameter(1.0, doc="gain of u1")
    k2 = Parameter(1.0, doc="gain of u2")
    k3 = Parameter(1.0, doc="gain of u3")

    def equations(self):
        yield self.y == self.k1 * self.u1 + self.k2 * self.u2 + self.k3 * self.u3


class Feedback(SI2SO):
    """Difference of the command ``u1`` and the feedback ``u2``.

    Equation: ``y = u1 - u2``.
    """

    def equations(self):
        yield self.y == self.u1 - self.u2


class Product(SI2SO):
    """Product of two inputs.

    Equation: ``y = u1*u2``.
    """

    def equations(self):
        yield self.y == self.u1 * self.u2


class Division(SI2SO):
    """Quotient of two inputs (``u2`` must not cross zero).

    Equation: ``y = u1/u2``.
    """

    def equations(self):
        yield self.y == self.u1 / self.u2


class Abs(SISO):
    """Absolute value (continuous, with a kink at ``u = 0``).

    Equation: ``y = |u|``.
    """

    def equations(self):
        yield self.y == ca.fabs(self.u)


class Pick(Model):
    """One element of a vector signal (MSL ``Routing.DeMultiplex`` for one output):
    ``y = u[index]`` for an input ``u`` of size ``n``.

    Example::

        first = blocks.Pick(n=6, index=0)   # connect(ptp.q, first.u)
    """

    def __init__(self, *, n: int, index: int, **modifiers):
        super().__init__(**modifiers)
        if not 0 <= int(index) < int(n):
            raise DeclarationError(f"Pick: index {index} is outside 0..{int(n) - 1}")
        self.n, self.index = int(n), int(index)
        self.u = Input(shape=(self.n, 1), doc="vector input")
        self.y = Output(doc="element index of u")

    def equations(self):
        yield self.y == self.u[self.index]


# --------------------------------------------------------------------------------------
# Continuous
# --------------------------------------------------------------------------------------

class Integrator(_WithInit, SISO):
    """Integrates the input.

    Equation: ``der(y) = k*u``.

    The state ``y`` starts fixed at 0 (MSL ``initType = InitialState``, ``y_start = 0``);
    change it with ``Integrator(y=Fixed(1.0))``, free it with ``y=Guess(...)``.
    """

    k = Parameter(1.0, doc="integrator gain")
    y = Output(start=0.0, fixed=True, doc="output signal (state)")
    _states = ("y",)

    def equations(self):
        yield der(self.y) == self.k * self.u


class Derivative(_WithInit, SISO):
    """Approximated (filtered) derivative ``k*s/(T*s + 1)``.

    Equations::

        der(x) = (u - x)/T
        y      = (k/T)*(u - x)

    The state ``x`` starts fixed at 0 (``init="state"``; ``x=Fixed(...)`` changes it).
    ``init="steady"`` starts at ``x = u``, so ``y = 0``.
    """

    k = Parameter(1.0, doc="gain")
    T = Parameter(0.01, unit="s", min=SMALL, doc="time constant (T > 0; T -> 0 is the ideal "
                                                "derivative)")
    x = Variable(start=0.0, fixed=True, doc="state of the filter")
    _states = ("x",)

    def equations(self):
        yield der(self.x) == (self.u - self.x) / self.T
        yield self.y == self.k / self.T * (self.u - self.x)


class FirstOrder(_WithInit, SISO):
    """First-order transfer function ``k/(T*s + 1)``.

    Equation: ``der(y) = (k*u - y)/T``.

    The state ``y`` starts fixed at 0, so a unit step at t = 0 gives
    ``y = k*(1 - exp(-t/T))``. (MSL's default is NoInit; use ``init="free"`` for that,
    ``init="steady"`` for ``y = k*u`` at the start.)
    """

    k = Parameter(1.0, doc="gain")
    T = Parameter(1.0, unit="s", min=SMALL, doc="time constant (T > 0)")
    y = Output(start=0.0, fixed=True, doc="output signal (state)")
    _states = ("y",)

    def equations(self):
        yield der(self.y) == (self.k * self.u - self.y) / self.T


class SecondOrder(_WithInit, SISO):
    """Second-order transfer function ``k/((s/w)^2 + 2*D*(s/w) + 1)``.

    Equations::

        der(y)  = yd
        der(yd) = w*(w*(k*u - y) - 2*D*yd)

    States ``y`` and ``yd`` start fixed at 0.
    """

    k = Parameter(1.0, doc="gain")
    w = Parameter(1.0, unit="rad/s", min=SMALL, doc="angular frequency (w > 0)")
    D = Parameter(1.0, min=0.0, doc="damping")
    y = Output(start=0.0, fixed=True, doc="output signal (state)")
    yd = Variable(start=0.0, fixed=True, doc="derivative of y (state)")
    _states = ("y", "yd")

    def equations(self):
        yield der(self.y) == self.yd
        yield der(self.yd) == self.w * (self.w * (self.k * self.u - self.y)
                                        - 2 * self.D * self.yd)


class PI(_WithInit, SISO):
    """Proportional-integral controller ``k*(1 + 1/(T*s))`` (MSL Continuous.PI).

    Equations::

        der(x) = u/T
        y      = k*(x + u)

    The state ``x`` starts fixed at 0 (``x=Fixed(...)`` changes it). ``x`` is the integral
    of ``u`` divided by ``T``, so ``y = k*(u + integral(u)/T)``.
    """

    k = Parameter(1.0, doc="gain")
    T = Parameter(1.0, unit="s", min=SMALL, doc="integral time constant (T > 0)")
    x = Variable(start=0.0, fixed=True, doc="state of the integral part")
    _states = ("x",)

    def equations(self):
        yield der(self.x) == self.u / self.T
        yield self.y == self.k * (self.x + self.u)


_CONTROLLER_TYPES = ("P", "PI", "PD", "PID")


class LimPID(_WithInit, Model):
    """PID controller with limited output, anti-windup compensation, setpoint weighting and
    an optional feed-forward-free structure (MSL Continuous.LimPID).

    Inputs ``u_s`` (setpoint) and ``u_m`` (measurement), output ``y``. Equations (for
    ``controller_type="PID"``)::

        controlError = u_s - u_m
        der(x_i) = (u_s - u_m + (y - v)/(k*Ni)) / Ti            integral part, anti-windup
        Tf       = max(Td/Nd, 1e-14)                             derivative filter time constant
        der(x_d) = (wd*u_s - u_m - x_d) / Tf
        d        = Td/Tf * (wd*u_s - u_m - x_d)                  filtered derivative part
        v        = k*(wp*u_s - u_m + x_i + d)                    unlimited output
        y        = min(yMax, max(yMin, v))                       limited output

    While the output is not saturated ``y = v`` and the integrator integrates the control
    error; once saturated, the term ``(y - v)/(k*Ni)`` pulls the integral part back so that
    the unlimited output stays near the limit (time constant about ``Ni*Ti``) and the
    controller leaves the limit as soon as the error changes sign.

    Structural options: ``controller_type`` in ``"P"``, ``"PI"``, ``"PD"``, ``"PID"``
    (the missing parts are 0 and have no state), ``init`` (see module doc). The states
    ``x_i`` and ``x_d`` start fixed at 0 (``xi_start``/``xd_start`` change that).
    ``yMin`` defaults to ``-yMax``.
    """

    u_s = Input(doc="connector of setpoint input signal")
    u_m = Input(doc="connector of measurement input signal")
    y = Output(doc="connector of actuator output signal")

    k = Parameter(1.0, min=SMALL, doc="gain of controller (k > 0)")
    Ti = Parameter(0.5, unit="s", min=SMALL, doc="time constant of integrator block (Ti > 0)")
    Td = Parameter(0.1, unit="s", min=0.0, doc="time constant of derivative block")
    yMax = Parameter(1.0, doc="upper limit of output")
    yMin = Parameter(-1.0, doc="lower limit of output (default -yMax)")
    wp = Parameter(1.0, min=0.0, doc="set-point weight for proportional block (0..1)")
    wd = Parameter(0.0, min=0.0, doc="set-point weight for derivative block (0..1)")
    Ni = Parameter(0.9, min=_HUNDRED_EPS,
                   doc="Ni*Ti is the time constant of the anti-windup compensation")
    Nd = Parameter(10.0, min=_HUNDRED_EPS,
                   doc="the higher Nd, the more ideal the derivative block")

    controlError = Variable(doc="control error (u_s - u_m)")
    v = Variable(doc="unlimited controller output")

    def __init__(self, *, controller_type: str = "PID", xi_start: float = 0.0,
                 xd_start: float = 0.0, init: str = "state", **modifiers):
        if controller_type not in _CONTROLLER_TYPES:
            raise DeclarationError(f"LimPID: controller_type must be one of {_CONTROLLER_TYPES}, "
                                   f"not {controller_type!r}")
        self.__dict__["_controller_type"] = controller_type
        super().__init__(init=init, **modifiers)
        self.controller_type = controller_type
        if "yMin" not in modifiers:
            self.declaration("yMin").set(-self.yMax)
        else:
            lo, hi = self.declaration("yMin").value, self.declaration("yMax").value
            if (not isinstance(lo, ca.SX) and not isinstance(hi, ca.SX)
                    and np.any(np.asarray(hi) < np.asarray(lo))):
                raise mb.ParameterError(f"LimPID: yMax = {float(np.asarray(hi).flat[0])} is "
                                        f"below yMin = {float(np.asarray(lo).flat[0])}")
        # States exist only for the parts the controller has (declared after
        # super().__init__, so they are set here rather than by modifiers).
        fixed = init == "state"
        if self._with_i:
            self.x_i = Variable(start=xi_start, fixed=fixed, doc="state of the integral part")
        if self._with_d:
            self.x_d = Variable(start=xd_start, fixed=fixed,
                                doc="state of the derivative filter")

    @property
    def _with_i(self):
        return self.__dict__["_controller_type"] in ("PI", "PID")

    @property
    def _with_d(self):
        return self.__dict__["_controller_type"] in ("PD", "PID")

    def _active_states(self):
        # Called from _WithInit.__init__ before the states exist: they are declared with
        # the right fixed flag in __init__ instead.
        names = []
        if self._with_i:
            names.append("x_i")
        if self._with_d:
            names.append("x_d")
        return [n for n in names if n in self._members]

    def equations(self):
        yield self.controlError == self.u_s - self.u_m
        integral = 0
        derivative = 0
        if self._with_i:
            yield der(self.x_i) == (self.u_s - self.u_m
                                    + (self.y - self.v) / (self.k * self.Ni)) / self.Ti
            integral = self.x_i
        if self._with_d:
            tf = fmax(self.Td / self.Nd, 1e-14)
            u_d = self.wd * self.u_s - self.u_m
            yield der(self.x_d) == (u_d - self.x_d) / tf
            derivative = self.Td / tf * (u_d - self.x_d)
        yield self.v == self.k * (self.wp * self.u_s - self.u_m + integral + derivative)
        yield mb.Assert(self.yMax >= self.yMin, "LimPID: yMax must not be below yMin")
        yield self.y == mb.noEvent(fmin(self.yMax, fmax(self.yMin, self.v)))


# --------------------------------------------------------------------------------------
# Nonlinear
# --------------------------------------------------------------------------------------

class Limiter(SISO):
    """Limits the signal to ``[uMin, uMax]`` (continuous, kinks at the limits).

    Equation: ``y = min(uMax, max(uMin, u))``. ``uMin`` defaults to ``-uMax``.
    """

    uMax = Parameter(1.0, doc="upper limit of the input signal")
    uMin = Parameter(-1.0, doc="lower limit of the input signal (default -uMax)")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        _lower_limit_defaults_to_minus_upper(self, modifiers)

    def equations(self):
        # continuous across the limits: no events (MSL's smooth(0, ...))
        yield mb.Assert(self.uMax >= self.uMin, "Limiter: uMax must not be below uMin")
        yield self.y == mb.noEvent(fmin(self.uMax, fmax(self.uMin, self.u)))


def _lower_limit_defaults_to_minus_upper(block, modifiers):
    """``uMin`` follows ``-uMax`` unless given; given numbers must satisfy uMin <= uMax."""
    if "uMin" not in modifiers:
        block.declaration("uMin").set(-block.uMax)
        return
    lo, hi = block.declaration("uMin").value, block.declaration("uMax").value
    if (not isinstance(lo, ca.SX) and not isinstance(hi, ca.SX)
            and np.any(np.asarray(hi) < np.asarray(lo))):
        raise mb.ParameterError(f"{type(block).__name__}: uMax = {float(np.asarray(hi).flat[0])} "
                                f"is below uMin = {float(np.asarray(lo).flat[0])}")


class DeadZone(SISO):
    """Zero output inside ``[uMin, uMax]``, the input shifted by the limit outside it.

    Equation: ``y = max(0, u - uMax) + min(0, u - uMin)``. ``uMin`` defaults to ``-uMax``.
    """

    uMax = Parameter(1.0, doc="upper limit of the dead zone")
    uMin = Parameter(-1.0, doc="lower limit of the dead zone (default -uMax)")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        _lower_limit_defaults_to_minus_upper(self, modifiers)

    def equations(self):
        # continuous across the limits: no events (MSL's smooth(0, ...))
        yield mb.Assert(self.uMax >= self.uMin, "DeadZone: uMax must not be below uMin")
        yield self.y == mb.noEvent(fmax(0, self.u - self.uMax) + fmin(0, self.u - self.uMin))


# --------------------------------------------------------------------------------------
# Logical and discrete (switching at events; Booleans are 0/1 signals)
# --------------------------------------------------------------------------------------

class Hysteresis(SISO):
    """Relay with hysteresis (MSL ``Logical.Hysteresis``): ``y`` becomes true (1) when
    ``u`` rises above ``uHigh`` and false (0) when it falls below ``uLow``; the structural
    option ``pre_y_start`` (default False) is its position before the run.

    Equation: ``y = (not pre(y) and u > uHigh) or (pre(y) and u >= uLow)``.
    """

    uLow = Parameter(0.0, doc="y becomes false below this input")
    uHigh = Parameter(1.0, doc="y becomes true above this input")
    state = mb.Discrete(start=0, doc="the relay's position (y)")

    def __init__(self, *, pre_y_start: bool = False, **modifiers):
        super().__init__(**modifiers)
        # pre(y) at the start (MSL's pre_y_start): the relay's position before the run
        self.declaration("state").start = np.array([[float(bool(pre_y_start))]])

    def equations(self):
        yield mb.Assert(self.uHigh > self.uLow, "Hysteresis needs uHigh > uLow")
        was = mb.pre(self.state)
        yield self.state == ca.logic_or(ca.logic_and(ca.logic_not(was), self.u > self.uHigh),
                                        ca.logic_and(was, self.u >= self.uLow))
        yield self.y == self.state


class Greater(SI2SO):
    """``y = u1 > u2`` (MSL ``Logical.Greater``), switching at events."""

    def equations(self):
        yield self.y == (self.u1 > self.u2)


class Less(SI2SO):
    """``y = u1 < u2`` (MSL ``Logical.Less``), switching at events."""

    def equations(self):
        yield self.y == (self.u1 < self.u2)


class GreaterThreshold(SISO):
    """``y = u > threshold`` (MSL ``Logical.GreaterThreshold``), switching at events."""

    threshold = Parameter(0.0, doc="comparison value")

    def equations(self):
        yield self.y == (self.u > self.threshold)


class LessThreshold(SISO):
    """``y = u < threshold`` (MSL ``Logical.LessThreshold``), switching at events."""

    threshold = Parameter(0.0, doc="comparison value")

    def equations(self):
        yield self.y == (self.u < self.threshold)


class Switch(Model):
    """``y = u1 if u2 else u3`` (MSL ``Logical.Switch``; ``u2`` a Boolean 0/1 signal)."""

    u1 = Input(doc="output when u2 is true")
    u2 = Input(doc="Boolean selector")
    u3 = Input(doc="output when u2 is false")
    y = Output(doc="output signal")

    def equations(self):
        yield self.y == if_else(self.u2, self.u1, self.u3)


class SampleAndHold(SISO):
    """Zero-order hold of the input every ``samplePeriod`` from ``startTime`` on (MSL
    ``Discrete.Sampler`` + ``ZeroOrderHold``), and at the run's start: before the first
    tick ``y`` holds the input's value at the start, as MSL's samplers do.

    Equation: ``when {initial(), sample(startTime, samplePeriod)}: y = u``.
    """

    samplePeriod = Parameter(0.1, unit="s", min=1e-300, doc="time between samples")
    startTime = Parameter(0.0, unit="s", doc="time of the first sample")
    held = mb.Discrete(start=0.0, doc="the last sampled input")

    def equations(self):
        yield mb.when([mb.initial(), mb.sample(self.startTime, self.samplePeriod)],
                      self.held == self.u)
        yield self.y == self.held


class Pulse(SO):
    """Periodic rectangular pulse (MSL ``Sources.Pulse``, unlimited periods): ``amplitude``
    during the first ``width`` percent of every ``period`` from ``startTime`` on.

    Equations::

        when {initial(), sample(startTime, period)}:
            T_start = period_start(time) at initial(), else time
        y = offset + (amplitude if startTime <= time < T_start + period*width/100 else 0)

    ``period_start(t) = startTime + floor((t - startTime)/period)*period``: a run that starts
    after ``startTime`` (or ``startTime < 0``) starts inside its period, as MSL's initial
    algorithm has it.
    """

    amplitude = Parameter(1.0, doc="amplitude of the pulse")
    width = Parameter(50.0, min=1e-300, max=100.0, doc="width of the pulse in % of period")
    period = Parameter(1.0, unit="s", min=1e-300, doc="time of one period")
    offset = Parameter(0.0, doc="offset of the output")
    startTime = Parameter(0.0, unit="s", doc="output = offset before startTime")
    T_start = mb.Discrete(start=-1e300, unit="s", doc="start of the current period")

    def equations(self):
        yield _period_starts(self)
        high = ca.logic_and(mb.time >= self.startTime,
                            mb.time < self.T_start + self.period * self.width / 100)
        yield self.y == self.offset + if_else(high, self.amplitude, 0)


def _period_starts(block):
    """``T_start`` of a periodic source: the start of the period at each tick, and at the
    run's start the period it starts in (MSL's initial algorithm; the ratio nudged up by
    1e-10 so that a start on a tick, rounded just below it, is that tick's period)."""
    ticks = (mb.time - block.startTime) / block.period
    inside = block.startTime + ca.floor(ticks + 1e-10) * block.period
    return mb.when([mb.initial(), mb.sample(block.startTime, block.period)],
                   block.T_start == if_else(mb.initial(), inside, mb.time))


class Sawtooth(SO):
    """Periodic saw tooth (MSL ``Sources.Sawtooth``): rises from ``offset`` by
    ``amplitude`` over each ``period`` from ``startTime`` on, then falls back at once.

    Equations::

        when {initial(), sample(startTime, period)}:
            T_start = period_start(time) at initial(), else time
        y = offset + (amplitude*(time - T_start)/period if time >= startTime else 0)

    (``period_start`` as for :class:`Pulse`.)
    """

    amplitude = Parameter(1.0, doc="amplitude of the saw tooth")
    period = Parameter(1.0, unit="s", min=1e-300, doc="time of one period")
    offset = Parameter(0.0, doc="offset of the output")
    startTime = Parameter(0.0, unit="s", doc="output = offset before startTime")
    T_start = mb.Discrete(start=0.0, unit="s", doc="start of the current period")

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.time_event(self.startTime)

    def equations(self):
        yield _period_starts(self)
        rising = self.amplitude * (mb.time - self.T_start) / self.period
        yield self.y == self.offset + if_else(mb.time >= self.startTime, rising, 0)


class TimeTable(SO):
    """Output interpolated linearly in a table of ``[time, value]`` rows (after MSL
    ``Sources.TimeTable``; a time repeated twice makes a jump), held at the first value
    before the table and at the last after it; ``offset`` and ``startTime`` shift it.
    Unlike MSL, which extrapolates linearly beyond the table and outputs ``offset``
    before ``startTime``, it holds the end values (the MSL documentation's table
    ``[0,0; 1,0; 1,1; 2,4; 3,9; 4,16]`` gives 16 at t = 5 here, 23 there).
    Every breakpoint is a time event, so corners and jumps are exact. ``table`` is a
    structural option (a list of rows, not a run-time parameter).

    Equation: ``y = offset + interp(table, time - startTime)``.
    """

    offset = Parameter(0.0, doc="offset of the output")
    startTime = Parameter(0.0, unit="s", doc="the table's time 0")

    def __init__(self, table=((0.0, 0.0), (1.0, 1.0)), **modifiers):
        super().__init__(**modifiers)
        table = np.atleast_2d(np.asarray(table, dtype=float))
        if (table.ndim != 2 or table.shape[1] != 2 or not len(table)
                or not np.all(np.isfinite(table)) or np.any(np.diff(table[:, 0]) < 0)):
            raise DeclarationError(f"TimeTable: table must be rows [time, value] of finite "
                                   f"numbers with times not decreasing, not {table.tolist()}")
        self.table = table

    def equations(self):
        times, values = self.table[:, 0], self.table[:, 1]
        tau = mb.time - self.startTime
        y = ca.SX(values[-1])  # after the table
        for k in range(len(times) - 2, -1, -1):
            if times[k + 1] == times[k]:
                continue  # a jump: the row after it takes over at that time
            slope = (values[k + 1] - values[k]) / (times[k + 1] - times[k])
            y = if_else(tau < times[k + 1], values[k] + slope * (tau - times[k]), y)
        y = if_else(tau < times[0], values[0], y)
        yield self.y == self.offset + y
