"""Linearization with named inputs and outputs, against closed forms and python-control."""

import math
import warnings

import numpy as np
import pytest

import mbmodel as mb
from mbmodel import Input, Model, Parameter, Variable, connect, der
from mbmodel.libraries import electrical as el
from mbmodel.libraries import rotational as rot
from mbmodel.libraries import translational as tr

control = pytest.importorskip("control")


class FeedbackLoop(Model):
    """u = kp (r - y), der(x) = -x + u, y = x."""

    kp = Parameter(1.0)
    r = Input()
    x = Variable(0.0, fixed=True)
    u = Variable()
    y = Variable()

    def equations(self):
        yield self.u == self.kp * (self.r - self.y)
        yield der(self.x) == -self.x + self.u
        yield self.y == self.x


def test_feedback_loop_state_space_and_control_export():
    cm = mb.compile(FeedbackLoop())
    lin = cm.linearize(outputs=["y", "u"])
    A, B, C, D = lin
    assert np.allclose(A, [[-2.0]]) and np.allclose(B, [[1.0]])
    assert np.allclose(C, [[1.0], [-1.0]]) and np.allclose(D, [[0.0], [1.0]])
    assert (lin.states, lin.inputs, lin.outputs) == (["x"], ["r"], ["y", "u"])
    sys = lin.to_control()
    assert sys.input_labels == ["r"] and sys.output_labels == ["y", "u"]
    assert control.dcgain(sys)[0] == pytest.approx(0.5)
    # kp enters A: with kp = 3, A = -4
    assert np.allclose(cm.linearize(params={"kp": 3.0}).A, [[-4.0]])
    # without outputs it unpacks as (A, B), as before
    A2, B2 = cm.linearize(x=[0.2], u=[1.0])
    assert np.allclose(A2, A) and np.allclose(B2, B)


def test_steady_state_operating_point():
    cm = mb.compile(FeedbackLoop())
    lin = cm.linearize(u=[1.0], steady_state=True, outputs=["y", "u"])
    assert lin.x0 == pytest.approx([0.5])  # x = kp r / (1 + kp)
    assert lin.y0 == pytest.approx([0.5, 0.5], abs=1e-12)  # y = x, u = kp (r - y)
    assert lin.u0 == pytest.approx([1.0])
    with pytest.raises(mb.SimulationError, match="not both"):
        cm.linearize(x=[0.0], steady_state=True)
    with pytest.raises(mb.SimulationError, match="no variable 'nope'"):
        cm.linearize(outputs=["nope"])


class SpeedControlledInertia(Model):
    """A proportional speed controller on a damped inertia, its angle free: no rest point
    with w_ref > 0, but a steady motion, w = kp w_ref / (kp + d)."""

    J, d, kp = Parameter(2.0), Parameter(0.5), Parameter(4.0)
    w_ref = Input()
    phi = Variable(0.3, fixed=True)
    w = Variable(0.0, fixed=True)

    def equations(self):
        yield der(self.phi) == self.w
        yield self.J * der(self.w) == self.kp * (self.w_ref - self.w) - self.d * self.w


class Undetermined(Model):
    """ẋ = 0 fixes b only: a enters only the derivative of c (which nothing uses)."""

    u = Input()
    a = Variable(0.0, fixed=True)
    b = Variable(0.0, fixed=True)
    c = Variable(0.0, fixed=True)

    def equations(self):
        yield der(self.a) == self.u - self.b
        yield der(self.b) == self.u - self.b
        yield der(self.c) == self.a


def test_steady_state_holds_a_coordinate_nothing_depends_on():
    """A free angle has no ẋ = 0 (the drive turns): it keeps its initial value and the rest
    solves for the steady motion (casadi's rootfinder had stopped on the structurally
    singular Jacobian with its own assertion)."""
    cm = mb.compile(SpeedControlledInertia())
    lin = cm.linearize(u=[3.0], steady_state=True, outputs=["w"])
    assert lin.x0 == pytest.approx([0.3, 4.0 * 3.0 / 4.5], abs=1e-12)
    assert np.allclose(lin.A, [[0.0, 1.0], [0.0, -4.5 / 2.0]])
    assert np.allclose(lin.B, [[0.0], [4.0 / 2.0]])
    # a second call reuses the rootfinders and agrees
    assert cm.linearize(u=[3.0], steady_state=True).x0 == pytest.approx(lin.x0, abs=1e-12)
    with pytest.raises(mb.SimulationError, match=r"do not determine the steady state "
                                                 r"\(structural rank 1 for 2 unknowns: a, b"):
        mb.compile(Undetermined()).linearize(u=[1.0], steady_state=True)
    with pytest.raises(mb.SimulationError, match=r"names 'w_ref' twice"):
        cm.linearize(u=[3.0], inputs=["w_ref", "w_ref"])
    # a torque nothing balances: was the structural rank only (review)
    driven = mb.compile(DrivenInertia())
    with pytest.raises(mb.SimulationError, match=r"there is no steady state: der\(load.w\) = 1 "
                                                 r"whatever the states.*a force or torque "
                                                 r"nothing balances"):
        driven.linearize(steady_state=True)
    # a torque input left at 0: every speed is at rest, the steady state is not unique
    # (review: it was said not to exist)
    with pytest.raises(mb.SimulationError, match=r"do not determine the steady state"):
        mb.compile(InputDrivenInertia()).linearize(steady_state=True)


class InputDrivenInertia(Model):
    tau = Input()
    load = rot.Inertia(J=1.0, phi=mb.Fixed(0.0), w=mb.Fixed(0.0))
    torque = rot.Torque()

    def equations(self):
        yield connect(self.tau, self.torque.tau)
        yield connect(self.torque.flange, self.load.flange_a)


class DrivenInertia(Model):
    load = rot.Inertia(J=1.0, phi=mb.Fixed(0.0), w=mb.Fixed(0.0))
    torque = rot.ConstantTorque(tau_constant=1.0)

    def equations(self):
        yield connect(self.torque.flange, self.load.flange_a)


def test_pendulum_eigenvalues_are_plus_minus_i_sqrt_g_over_l():
    # the index-3 cartesian pendulum of the compiler tests, linearized at the bottom through
    # its index-reduced form (states x, vx; y and the rod force eliminated)
    from test_compiler import Cartesian
    cm = mb.compile(Cartesian(L=0.7))
    lin = cm.linearize(x=[0.0, 0.0], outputs=["y"])
    eigenvalues = np.sort_complex(lin.eigenvalues())
    omega = math.sqrt(9.81 / 0.7)
    assert np.allclose(eigenvalues, [-1j * omega, 1j * omega], atol=1e-9)
    assert np.allclose(lin.C, 0.0, atol=1e-12)  # y is stationary at the bottom


class DampedInertia(Model):
    tau = Input()
    torque = rot.Torque()
    inertia = rot.Inertia(J=2.0)
    damper = rot.Damper(d=0.5)
    fixed = rot.Fixed()

    def equations(self):
        yield connect(self.tau, self.torque.tau)
        yield connect(self.torque.flange, self.inertia.flange_a)
        yield connect(self.inertia.flange_b, self.damper.flange_a)
        yield connect(self.damper.flange_b, self.fixed.flange)


def test_transfer_function_matches_the_closed_form():
    cm = mb.compile(DampedInertia())
    sys = cm.linearize(outputs=["inertia.w"]).to_control()
    for w in (0.1, 1.0, 10.0):
        response = complex(sys(1j * w)[0, 0]) if np.ndim(sys(1j * w)) else complex(sys(1j * w))
        assert response == pytest.approx(1.0 / (2.0 * 1j * w + 0.5), rel=1e-10)


def _pinocchio_and_trees():
    pin = pytest.importorskip("pinocchio")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    import mb_trees
    return pin, mb_trees


def test_six_joint_arm_linearization_matches_pinocchio_aba_derivatives():
    """A 6-revolute arm (axes z, y, x, z, y, x) against Pinocchio's analytical ABA
    derivatives. Pinocchio returns views into its ``data``: it must outlive them."""
    pin, trees = _pinocchio_and_trees()
    pmodel = trees.pinocchio_chain(6)
    rng = np.random.default_rng(3)
    q, v = rng.normal(size=6), rng.normal(size=6)
    cm = mb.compile(trees.RevoluteChain(6))
    state = {**{f"joint{i}.phi": q[i] for i in range(6)}, **{f"joint{i}.w": v[i] for i in range(6)}}
    lin = cm.linearize(x=[state[name] for name in cm.states])
    data = pmodel.createData()
    pin.computeABADerivatives(pmodel, data, q, v, np.zeros(6))
    position = [cm.states.index(f"joint{i}.phi") for i in range(6)]
    velocity = [cm.states.index(f"joint{i}.w") for i in range(6)]
    assert np.allclose(lin.A[np.ix_(velocity, position)], data.ddq_dq, atol=1e-9)
    assert np.allclose(lin.A[np.ix_(velocity, velocity)], data.ddq_dv, atol=1e-9)
    assert np.allclose(lin.A[np.ix_(position, velocity)], np.eye(6), atol=1e-12)


def test_random_tree_linearization_matches_differences_of_pinocchio_aba():
    """A random 6-joint tree with revolute and prismatic joints on general axes, driven by
    torque/force inputs. Pinocchio 4.1's analytical ABA derivatives disagree with its own
    ABA on such (unaligned) joints, by O(10) here, while they agree on the aligned arm
    above, so the oracle is central differences of Pinocchio's ABA."""
    pin, trees = _pinocchio_and_trees()
    rng = np.random.default_rng(7)
    spec = trees.random_tree(6, rng)
    pmodel = trees.pinocchio_model(spec)
    q, v, _, tau = trees.random_state(spec, pmodel, rng)
    cm = mb.compile(trees.TreeModel(spec, actuated=True))
    values = trees.mbmodel_values(spec, pmodel, q, v)
    inputs = [f"u{i}" for i in range(len(spec))]
    u = [tau[pmodel.joints[int(name[1:]) + 1].idx_v] for name in cm.inputs]
    lin = cm.linearize(x=[values[name] for name in cm.states], u=u, inputs=inputs)
    data = pmodel.createData()

    def aba(q_, v_, tau_):
        return pin.aba(pmodel, data, q_, v_, tau_).copy()

    h, n = 1e-6, len(spec)
    step = np.eye(n) * h
    ddq_dq = np.column_stack([(aba(q + step[k], v, tau) - aba(q - step[k], v, tau)) / (2 * h)
                              for k in range(n)])
    ddq_dv = np.column_stack([(aba(q, v + step[k], tau) - aba(q, v - step[k], tau)) / (2 * h)
                              for k in range(n)])
    ddq_dtau = np.column_stack([(aba(q, v, tau + step[k]) - aba(q, v, tau - step[k])) / (2 * h)
                                for k in range(n)])
    position = [cm.states.index(f"joint{j}.{'phi' if s['kind'] == 'revolute' else 's'}")
                for j, s in enumerate(spec)]
    velocity = [cm.states.index(f"joint{j}.{'w' if s['kind'] == 'revolute' else 'v'}")
                for j, s in enumerate(spec)]
    A, B = lin.A, lin.B
    assert np.allclose(A[np.ix_(velocity, position)], ddq_dq, atol=1e-7)
    assert np.allclose(A[np.ix_(velocity, velocity)], ddq_dv, atol=1e-7)
    assert np.allclose(B[velocity, :], ddq_dtau, atol=1e-8)  # M^-1: linear, exact quotient
    assert np.allclose(A[np.ix_(position, velocity)], np.eye(n), atol=1e-12)


class DCMotor(Model):
    """Armature R, L, EMF k, rotor inertia J with viscous friction d; input: voltage."""

    voltage = Input()
    source = el.SignalVoltage()
    resistor = el.Resistor(R=0.5)
    inductor = el.Inductor(L=0.05)
    emf = el.EMF(k=0.8)
    ground = el.Ground()
    rotor = rot.Inertia(J=0.02)
    friction = rot.Damper(d=0.01)
    fixed = rot.Fixed()

    def equations(self):
        yield connect(self.voltage, self.source.v)
        yield connect(self.source.p, self.resistor.p)
        yield connect(self.resistor.n, self.inductor.p)
        yield connect(self.inductor.n, self.emf.p)
        yield connect(self.emf.n, self.source.n, self.ground.p)
        yield connect(self.emf.flange, self.rotor.flange_a)
        yield connect(self.rotor.flange_b, self.friction.flange_a)
        yield connect(self.friction.flange_b, self.fixed.flange)


def test_dc_motor_transfer_function_matches_the_closed_form():
    R, L, k, J, d = 0.5, 0.05, 0.8, 0.02, 0.01
    lin = mb.compile(DCMotor()).linearize(outputs=["rotor.w", "inductor.i"])
    sys = lin.to_control()
    for w in (0.3, 3.0, 30.0):
        s = 1j * w
        denominator = (L * s + R) * (J * s + d) + k ** 2
        response = np.asarray(sys(s)).reshape(2)
        assert response[0] == pytest.approx(k / denominator, rel=1e-10)           # speed
        assert response[1] == pytest.approx((J * s + d) / denominator, rel=1e-10)  # current
    # the rotor angle is a pure integrator: one eigenvalue at 0, the others the motor's poles
    poles = np.sort_complex(lin.eigenvalues())
    expected = np.sort_complex(np.append(np.roots([L * J, L * d + R * J, R * d + k ** 2]), 0.0))
    assert np.allclose(poles, expected, atol=1e-9)


def test_a_singular_algebraic_point_is_named():
    class Fold(Model):
        x = Variable(start=1.0, fixed=True)
        z = Variable(start=1.0)

        def equations(self):
            yield der(self.x) == -self.x
            yield self.z ** 3 == self.x      # dz/dx infinite at x = 0

    cm = mb.compile(Fold())
    with pytest.raises(mb.SimulationError, match=r"singular at the point x = 0, z = 0 "):
        cm.linearize(x=[0.0], z=[0.0])


def test_steady_state_with_quaternion_states():
    """der(Q) = G(Q) w / 2 has rank 3 in 4 rows: the square steady-state system is singular
    at every point (|Q| and the turn about gravity are free) and Newton and KINSOL stopped
    ("no steady state"). The minimum-norm Newton fallback finds the hanging pendulum; its
    frequencies are those of the same pendulum on a Universal joint, and a run initialized
    in steady state stays hanging."""
    from mbmodel.libraries import multibody as mbl

    class BallPendulum(Model):
        world = mbl.World(n=[0, 0, -1])
        ball = mbl.Spherical(Q=mb.Guess([0.1, 0.05, 0.0, 0.99]))  # tilted some 13 degrees
        rod = mbl.BodyShape(r=[0, 0, -0.8], r_CM=[0, 0, -0.8], m=1.3, I_11=1e-3, I_22=1e-3,
                            I_33=1e-3)

        def equations(self):
            yield connect(self.world.frame_b, self.ball.frame_a)
            yield connect(self.ball.frame_b, self.rod.frame_a)

    class CardanPendulum(BallPendulum):
        ball = mbl.Universal(n_a=[1, 0, 0], n_b=[0, 1, 0], phi_a=mb.Guess(0.2),
                             phi_b=mb.Guess(0.1))

    ball = mb.compile(BallPendulum())
    with pytest.warns(mb.NotUniqueWarning, match=r"leave 2 direction\(s\) free, along "
                                                   r"ball\.Q"):  # |Q|, the turn about g
        lin = ball.linearize(steady_state=True)
    frequencies = np.sort(np.abs(lin.eigenvalues().imag))[-4:]
    reference = np.sort(np.abs(mb.compile(CardanPendulum()).linearize(
        steady_state=True).eigenvalues().imag))
    omega = math.sqrt(9.81 * 1.3 * 0.8 / (1.3 * 0.8 ** 2 + 1e-3))  # rigid about the pivot
    assert reference == pytest.approx([omega] * 4, rel=1e-9)
    assert frequencies == pytest.approx(reference, rel=1e-9)
    assert np.max(np.abs(lin.x0[4:])) < 1e-12  # at rest
    with pytest.warns(mb.NotUniqueWarning, match="initialization"):
        res = ball.simulate(1.0, steady_state=True)
    for i, expected in enumerate([0.0, 0.0, -0.8]):  # the rod's end straight below
        assert np.max(np.abs(res[f"rod.frame_b.r_0[{i}]"] - expected)) < 1e-9


def test_a_steady_state_that_is_not_unique_is_found_with_a_warning():
    """Two tanks joined by a pipe, no outflow: any common level is a steady state. Newton
    and KINSOL stop on the singular Jacobian; the minimum-norm fallback gives the nearest
    common level and says that it is one of many, naming the levels."""
    class Tanks(Model):
        k = Parameter(1.0)
        h1 = Variable(start=2.0, fixed=True)
        h2 = Variable(start=0.0, fixed=True)

        def equations(self):
            flow = self.k * (self.h1 - self.h2) * (1 + self.h1 ** 2)
            yield der(self.h1) == -flow
            yield der(self.h2) == flow

    cm = mb.compile(Tanks())
    with pytest.warns(mb.NotUniqueWarning, match=r"leave 1 direction\(s\) free, along "
                                                   r"h[12], h[12]"):
        lin = cm.linearize(steady_state=True)
    assert lin.x0[0] == pytest.approx(lin.x0[1], abs=1e-12)
    h = lin.x0[0]  # A: d(flow)/dh1 = 1 + h**2 at h1 = h2, d(flow)/dh2 = -(1 + h**2)
    assert np.allclose(lin.A, (1 + h ** 2) * np.array([[-1.0, 1.0], [1.0, -1.0]]))


def test_the_not_unique_warning_reaches_stderr():
    """The fallback runs where casadi's solver lines are held back from stderr
    (mbmodel.quiet); its own warning must still be shown, at the user's line."""
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent('''
        import mbmodel as mb
        class Tanks(mb.Model):
            h1 = mb.Variable(start=2.0, fixed=True)
            h2 = mb.Variable(start=0.0, fixed=True)
            def equations(self):
                flow = (self.h1 - self.h2) * (1 + self.h1 ** 2)
                yield mb.der(self.h1) == -flow
                yield mb.der(self.h2) == flow
        cm = mb.compile(Tanks())
        lin = cm.linearize(steady_state=True)  # the line the warning names
    ''')
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "<string>:11: NotUniqueWarning: linearize(steady_state=True): the equations " \
           "leave 1 direction(s) free" in run.stderr


def test_u0_holds_the_chosen_inputs_and_to_control_says_what_python_control_cannot_hold():
    """u0 held the discrete values of a model with events too ([1, 0, 0] for one input)
    and all inputs where some were chosen; to_control() of a model without inputs but with
    outputs failed inside python-control (a D of shape (1, 0) collapses to (0, 0):
    python-control issue #1176) (review)."""
    import casadi as ca

    class Switched(Model):
        u = Input()
        v = Input()
        x = Variable(0.0, fixed=True)

        def equations(self):
            yield der(self.x) == ca.if_else(self.x > 0.5, -self.x, self.u + 2 * self.v)

    lin = mb.compile(Switched()).linearize(u=[1.0, 3.0], inputs=["v"])
    assert lin.inputs == ["v"] and lin.u0.tolist() == [3.0] and lin.B.tolist() == [[2.0]]

    class Oscillator(Model):
        fixed = rot.Fixed()
        spring = rot.SpringDamper(c=100.0, d=1.0)
        inertia = rot.Inertia(J=0.5, phi=mb.Fixed(0.1), w=mb.Fixed(0.0))

        def equations(self):
            yield connect(self.fixed.flange, self.spring.flange_a)
            yield connect(self.spring.flange_b, self.inertia.flange_a)

    cm = mb.compile(Oscillator())
    states = cm.linearize().to_control()   # no inputs, no outputs: python-control holds it
    assert sorted(np.linalg.eigvals(states.A).round(9)) == sorted(
        np.roots([0.5, 1.0, 100.0]).round(9))
    try:
        control.ss(np.zeros((1, 1)), np.zeros((1, 0)), np.ones((1, 1)), np.zeros((1, 0)))
    except control.ControlDimension:   # (python-control with its issue #1176)
        with pytest.raises(mb.ModelError, match="python-control issue #1176"):
            cm.linearize(outputs=["inertia.phi"]).to_control()
    else:
        assert cm.linearize(outputs=["inertia.phi"]).to_control().noutputs == 1


class _MassOnElasticStop(mb.Model):
    """A mass pushed into an elastic stop (ElastoGap, its contact a relation that starts
    open): at rest 400 (s - 0.2) + 2e4 (s - 0.15) = -30, s = 3050/20400."""
    fixed = tr.Fixed()
    spring = tr.Spring(c=400.0, s_rel0=0.2)
    gap = tr.ElastoGap(c=2e4, d=0.0, s_rel0=0.15)
    mass = tr.Mass(m=2.0)
    push = tr.ConstantForce(f_constant=-30.0)

    def equations(self):
        yield mb.connect(self.fixed.flange, self.spring.flange_a, self.gap.flange_a)
        yield mb.connect(self.spring.flange_b, self.gap.flange_b, self.mass.flange_a,
                         self.push.flange)


def test_steady_state_of_a_model_with_events_rests_in_the_branches_in_force_there():
    cm = mb.compile(_MassOnElasticStop())
    at_rest = 3050.0 / 20400.0
    lin = cm.linearize(steady_state=True)
    s = cm.states.index("mass.s")
    assert lin.x0[s] == pytest.approx(at_rest, abs=1e-12)
    assert np.max(np.abs(cm.evaluator()(lin.x0))) < 1e-9
    # the stop's stiffness at the point where it is touched: omega^2 = (400 + 2e4) / 2
    assert np.sort(np.abs(lin.eigenvalues().imag)) == pytest.approx(
        [np.sqrt(10200.0)] * 2, rel=1e-12)
    x0, _ = cm.initialize(steady_state=True)
    assert x0[s] == pytest.approx(at_rest, abs=1e-12)
    assert cm.simulate(1.0, steady_state=True).final("mass.s") == pytest.approx(at_rest,
                                                                                  abs=1e-9)


def test_an_operating_point_on_a_switch_is_warned_of_where_the_branches_differ():
    """der(x) = -2x for x > 0, -x below: at x = 0 the model has no derivative, and the
    linearization took the branch in force without a word (review). It warns, naming the
    relation, the branch and the entry that differs; off the switch, and where the other
    branch gives the same matrices (a relation that only counts), it does not warn."""
    class Kinked(mb.Model):
        x = mb.Variable(start=0.0, fixed=True)
        u = mb.Input()

        def equations(self):
            yield mb.der(self.x) == (mb.functions.if_else(self.x > 0, -2.0 * self.x,
                                                          -1.0 * self.x) + self.u)

    class Counting(mb.Model):
        x = mb.Variable(start=0.0, fixed=True)
        n = mb.Discrete(0)

        def equations(self):
            yield mb.der(self.x) == -self.x
            yield mb.when(self.x > 0, self.n == mb.pre(self.n) + 1)

    cm = mb.compile(Kinked())
    with pytest.warns(mb.SwitchPointWarning, match=r"switch of the relation x > 0 \(in the "
                      r"model\).*branch in force \(the relation false\).*A\[0, 0\] = -1 "
                      r"against -2"):
        assert cm.linearize(x=[0.0]).A.tolist() == [[-1.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", mb.SwitchPointWarning)
        assert cm.linearize(x=[0.1]).A.tolist() == [[-2.0]]
        assert cm.linearize(x=[-0.1]).A.tolist() == [[-1.0]]
        assert mb.compile(Counting()).linearize(x=[0.0]).A.tolist() == [[-1.0]]
