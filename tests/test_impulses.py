"""Lost impulses (mbmodel.impulses): a variable whose derivative the model uses, jumping at
an event, is warned of, since the results hold no impulse for the jump."""

import warnings

import numpy as np
import pytest

import mbmodel as mb
from mbmodel.libraries import blocks
from mbmodel.libraries import electrical as el
from mbmodel.libraries import multibody as mbl
from mbmodel.libraries import rotational as rot


def _arm_following(reference):
    """One link on a revolute joint whose angle follows ``reference`` exactly (inverse)."""

    class Arm(mb.Model):
        world = mbl.World()
        shoulder = mbl.Revolute(n=[0, 0, 1], use_axis_flange=True)
        upper = mbl.BodyShape(r=[0.5, 0, 0], r_CM=[0.25, 0, 0], m=2.0)
        ref = reference
        drive = rot.Position()

        def equations(self):
            yield mb.connect(self.world.frame_b, self.shoulder.frame_a)
            yield mb.connect(self.shoulder.frame_b, self.upper.frame_a)
            yield mb.connect(self.ref.y, self.drive.phi_ref)
            yield mb.connect(self.drive.flange, self.shoulder.axis)
    return mb.compile(Arm(), analysis="inverse")


def _lost_impulses(cm, t_end, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = cm.simulate(t_end, **options)
    return result, [str(w.message) for w in caught if w.category is mb.LostImpulseWarning]


JUMPING = [
    # a step in the angle: no speed, no acceleration, no torque for it
    (blocks.Step(height=1.0, startTime=0.5), "'shoulder.phi' jumps at t = 0.5 (from 0 to 1)",
     "'der(shoulder.phi)'"),
    # a ramp: the angle is continuous, its speed jumps at both ends (warned once)
    (blocks.Ramp(height=1.0, duration=1.0, startTime=0.5),
     "'shoulder.w' jumps at t = 0.5 (from 0 to 1)", "'der(shoulder.w)'"),
    # a pulse: a model with events (samples), the jump made by its event iteration
    (blocks.Pulse(amplitude=1.0, width=50.0, period=1.0, startTime=0.25),
     "'shoulder.phi' jumps at t = 0.25 (from 0 to 1)", "'der(shoulder.phi)'"),
]


@pytest.mark.parametrize("reference, jump, derivative", JUMPING,
                         ids=["step", "ramp", "pulse"])
def test_a_reference_that_jumps_is_warned_of(reference, jump, derivative):
    cm = _arm_following(reference)
    result, messages = _lost_impulses(cm, 2.0, n_points=21)
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"{jump}, and the model uses its derivative {derivative}")
    assert "a smooth reference such as blocks.FilteredPTP" in messages[0]
    # the results are what they were: the warning says what they lack
    assert np.all(result["shoulder.a"] == 0.0)


@pytest.mark.parametrize("reference", [
    blocks.Sine(amplitude=1.0, f=1.0),
    blocks.FilteredPTP(n=1, q_begin=[0.0], q_end=[1.0], qd_max=[2.0], qdd_max=[8.0],
                       start_time=0.1),
], ids=["sine", "filtered_ptp"])
def test_a_smooth_reference_is_not_warned_of(reference):
    """A sine; a trapezoid through a filter, with time events at its corners and where it
    settles (its angle is held there, within 1e-12 of the filter's response)."""
    if isinstance(reference, blocks.FilteredPTP):
        class Smooth(mb.Model):
            ptp = reference
            y = mb.Output()

            def equations(self):
                yield self.y == self.ptp.q[0]
        reference = Smooth()
    cm = _arm_following(reference)
    result, messages = _lost_impulses(cm, 2.0, n_points=201)
    assert messages == []
    assert np.abs(result["shoulder.a"]).max() > 1.0  # it moved


def test_an_event_right_after_the_start_is_checked_at_the_instant_itself():
    """A when clause on the drive torque of a sine followed exactly fires 1.8e-15 s after
    the start; the speed 'before' it was taken at -1e-9 s, before the start, where the sine
    (from t = 0) reads 0: a jump from 0 to 2 pi was warned of (review). Both sides are now
    taken at the instant itself: nothing jumps there (nor at t = 0.5), while a jump the
    event makes is still warned of."""
    class Counting(mb.Model):
        ref = blocks.Sine(amplitude=1.0, f=1.0)
        pos = rot.Position(exact=True)
        inertia = rot.Inertia(J=1.0)
        n = mb.Discrete(0)

        def equations(self):
            yield mb.connect(self.ref.y, self.pos.phi_ref)
            yield mb.connect(self.pos.flange, self.inertia.flange_a)
            yield mb.when(self.pos.flange.tau > 0, self.n == mb.pre(self.n) + 1)

    result, messages = _lost_impulses(mb.compile(Counting()), 1.0, n_points=11,
                                      progress=False)
    assert messages == []
    assert 0 < result.events[1].time < 1e-12 and result.events[2].time == pytest.approx(0.5)
    assert result.final("n") == 1  # (the torque -J phi'' = 4 pi^2 sin(2 pi t) rises at 0)

    class Jumping(mb.Model):
        """The angle follows a discrete value that an event 1.8e-15 s after the start sets
        to 1: a jump the event makes, warned of as at any other time (review)."""
        pos = rot.Position(exact=True)
        inertia = rot.Inertia(J=1.0)
        s = mb.Variable(start=0.0, fixed=True)
        d = mb.Discrete(0.0)
        src = blocks.FreeSignal()

        def equations(self):
            yield mb.der(self.s) == 1.0
            yield mb.when(self.s > 0, self.d == 1.0)
            yield mb.connect(self.src.y, self.pos.phi_ref)
            yield self.src.y == self.d
            yield mb.connect(self.pos.flange, self.inertia.flange_a)

    result, messages = _lost_impulses(mb.compile(Jumping()), 1.0, n_points=11,
                                      progress=False)
    assert 0 < result.events[1].time < 1e-12
    assert len(messages) == 1 and messages[0].startswith("'inertia.phi' jumps at t = 1.8")


@pytest.mark.parametrize("V, shown", [(2.0, "2"), (1e-7, "1e-07")])
def test_a_capacitor_on_a_voltage_step_is_warned_of(V, shown):
    """The charge the capacitor takes at the step comes as a current impulse, which an
    ideal source's current lacks: a model of no states (the capacitor's voltage is the
    source's), the classic lost impulse of circuit simulation. A step of 0.1 µV is one too
    (the tolerance was 1e-6 absolute below 1)."""

    class Charge(mb.Model):
        source = el.StepVoltage(V=V, startTime=0.3)
        capacitor = el.Capacitor(C=1e-3)
        ground = el.Ground()

        def equations(self):
            yield mb.connect(self.source.p, self.capacitor.p)
            yield mb.connect(self.source.n, self.capacitor.n)
            yield mb.connect(self.source.n, self.ground.p)

    cm = mb.compile(Charge())
    assert cm.states == []
    result, messages = _lost_impulses(cm, 1.0, n_points=11)
    assert len(messages) == 1
    assert messages[0].startswith(f"'capacitor.v' jumps at t = 0.3 (from 0 to {shown}), and "
                                  f"the model uses its derivative 'der(capacitor.v)'")
    assert np.all(result["capacitor.i"] == 0.0)


def test_a_modelled_jump_of_the_states_is_not_warned_of():
    """A ``reinit`` that moves a state makes the variables computed from it jump on
    purpose: a ball put back to 1 m, at rest, whenever it reaches the floor, with ``y = 2 h``
    differentiated (``w = der(y)``). Its jumps are the model's, not a lost impulse; the
    same model with a step in ``y``'s formula is warned of."""

    class Reset(mb.Model):
        step = mb.Parameter(0.0)
        h = mb.Variable(start=1.0, fixed=True)
        v = mb.Variable(start=0.0, fixed=True)
        y = mb.Variable()
        w = mb.Variable()

        def equations(self):
            yield mb.der(self.h) == self.v
            yield mb.der(self.v) == -9.81
            yield self.y == 2 * self.h + self.step * (mb.time >= 0.7)
            yield self.w == mb.der(self.y)
            yield mb.when(self.h < 0, mb.reinit(self.h, 1.0), mb.reinit(self.v, 0.0))

    result, messages = _lost_impulses(mb.compile(Reset()), 1.0, n_points=11)
    put_back = [ev.time for ev in result.events if any("fired" in c for c in ev.causes)]
    np.testing.assert_allclose(put_back, [np.sqrt(2 / 9.81), 2 * np.sqrt(2 / 9.81)],
                               rtol=1e-7)  # the second after integrating the first fall
    assert messages == []
    np.testing.assert_allclose(result["w"], 2 * result["v"], atol=1e-12)
    _, messages = _lost_impulses(mb.compile(Reset(step=3.0)), 1.0, n_points=11)
    assert len(messages) == 1 and messages[0].startswith("'y' jumps at t = 0.7")
