"""Multibody dynamics against Pinocchio on random trees of 30+ bodies.

Each tree is built twice by ``mb_trees`` (as an mbmodel model and as a Pinocchio model with
the same kinematics and inertias). We compare

(a) forward accelerations with nonzero joint torques against ``pinocchio.aba``,
(b) inverse-dynamics joint forces against ``pinocchio.rnea``,
(c) the joint-space mass matrix, assembled column by column from our inverse model
    (``M[:, i] = ID(q, 0, e_i) - ID(q, 0, 0)``), against ``pinocchio.crba``,
(d) the round trip ``tau = ID(q, qd, FD(q, qd, tau))`` using only our two compiled models.

Tolerance: ``1e-9 * max(1, max |reference|)`` (absolute for values of order one, relative to
the largest entry otherwise).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

pin = pytest.importorskip("pinocchio")

import mbmodel as mb  # noqa: E402
from mb_trees import (TreeModel, acceleration_names, force_names, mbmodel_values,  # noqa: E402
                      pinocchio_model, random_state, random_tree)

N_BODIES = 32
N_STATES = 3
TOL = 1e-9

CASES = {
    "chain": dict(seed=11, chain=True),
    "tree": dict(seed=12, chain=False),
    "floating_spherical": dict(seed=13, chain=False, spherical=True, floating=True),
}


def depth_first(spec):
    """The same tree with bodies renumbered in depth-first order. ``random_tree`` attaches
    each body to any earlier one, so subtrees are not contiguous; Pinocchio's ``crba``
    assumes they are (its ``nvSubtree`` blocks), and returns a wrong mass matrix otherwise
    (``aba`` and ``rnea`` follow parent pointers and do not care)."""
    children = {i: [] for i in range(-1, len(spec))}
    for i, s in enumerate(spec):
        children[s["parent"]].append(i)
    order, stack = [], list(reversed(children[-1]))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children[i]))
    new = {old: k for k, old in enumerate(order)}
    return [dict(spec[old], parent=-1 if spec[old]["parent"] < 0 else new[spec[old]["parent"]])
            for old in order]


def _close(actual, reference, tol=TOL):
    actual, reference = np.asarray(actual, float), np.asarray(reference, float)
    scale = max(1.0, float(np.abs(reference).max()))
    err = float(np.abs(actual - reference).max())
    assert err <= tol * scale, f"max error {err:.3e} > {tol:.0e} * {scale:.3e}"


class Setup:
    """One tree: spec, Pinocchio model, our forward (actuated) and inverse models, states."""

    def __init__(self, name, seed, chain=False, spherical=False, floating=False):
        rng = np.random.default_rng(seed)
        self.name = name
        self.spec = depth_first(random_tree(N_BODIES, rng, chain=chain,
                                            spherical=spherical, floating=floating))
        self.pm = pinocchio_model(self.spec)
        self.pd = self.pm.createData()
        self.fd = mb.compile(TreeModel(self.spec, actuated=True))
        self.id = mb.compile(TreeModel(self.spec), analysis="inverse")
        self.acc_idx = [self.fd.output_index[n] for n in acceleration_names(self.spec)]
        self.force_idx = [self.id.output_index[n] for n in force_names(self.spec)]
        # Pinocchio velocity index of each actuated joint's input u<i>
        self.u_vidx = {f"u{j}": self.pm.joints[j + 1].idx_v for j, s in enumerate(self.spec)
                       if s["kind"] in ("revolute", "prismatic")}
        self.states = [random_state(self.spec, self.pm, rng) for _ in range(N_STATES)]

    # --- our models as functions of Pinocchio-ordered vectors ---------------------------
    def forward(self, q, v, tau):
        vals = mbmodel_values(self.spec, self.pm, q, v)
        x = np.array([vals[s] for s in self.fd.states])
        u = np.array([tau[self.u_vidx[name]] for name in self.fd.inputs])
        y = np.array(self.fd.output_function(x, [], u, self.fd.parameter_defaults, 0.0)).ravel()
        return y[self.acc_idx]

    def inverse(self, q, v, a):
        vals = mbmodel_values(self.spec, self.pm, q, v, a)
        u = np.array([vals[s] for s in self.id.inputs])
        y = np.array(self.id.output_function([], [], u, self.id.parameter_defaults, 0.0)).ravel()
        return y[self.force_idx]


@pytest.fixture(scope="module", params=list(CASES))
def setup(request):
    return Setup(request.param, **CASES[request.param])


def test_trees_have_the_requested_structure(setup):
    kinds = [s["kind"] for s in setup.spec]
    assert len(kinds) >= 30
    assert "revolute" in kinds and "prismatic" in kinds
    if setup.name == "floating_spherical":
        assert kinds[0] == "free" and "spherical" in kinds
    if setup.name == "chain":
        assert all(s["parent"] == i - 1 for i, s in enumerate(setup.spec))
    assert all(s["parent"] < i for i, s in enumerate(setup.spec))
    if setup.name == "tree":
        # branched: some body has two children
        parents = [s["parent"] for s in setup.spec]
        assert max(parents.count(p) for p in set(parents)) >= 2
    # every state and input of our models is covered by the Pinocchio mapping
    q, v, a, _ = setup.states[0]
    vals = mbmodel_values(setup.spec, setup.pm, q, v, a)
    assert set(setup.fd.states) <= set(vals)
    assert set(setup.id.inputs) == set(vals)
    assert set(setup.fd.inputs) == set(setup.u_vidx)
    assert setup.pm.nv == len(acceleration_names(setup.spec))


def test_forward_dynamics_matches_aba(setup):
    for q, v, _, tau in setup.states:
        assert np.abs(tau).max() > 0.1
        ref = pin.aba(setup.pm, setup.pd, q, v, tau)
        _close(setup.forward(q, v, tau), ref)


def test_forward_dynamics_without_torque_matches_aba(setup):
    q, v, _, tau = setup.states[0]
    zero = np.zeros_like(tau)
    _close(setup.forward(q, v, zero), pin.aba(setup.pm, setup.pd, q, v, zero))


def test_inverse_dynamics_matches_rnea(setup):
    for q, v, a, _ in setup.states:
        ref = pin.rnea(setup.pm, setup.pd, q, v, a)
        _close(setup.inverse(q, v, a), ref)


def test_mass_matrix_from_inverse_model_matches_crba(setup):
    nv = setup.pm.nv
    for q, _, _, _ in setup.states[:2]:
        zero = np.zeros(nv)
        g = setup.inverse(q, zero, zero)
        M = np.column_stack([setup.inverse(q, zero, np.eye(nv)[i]) - g for i in range(nv)])
        Mp = np.array(pin.crba(setup.pm, setup.pd, q))
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        _close(M, Mp)
        assert np.allclose(M, M.T, atol=TOL * np.abs(Mp).max())
        assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0
        # and the zero-acceleration part is the generalized gravity force
        _close(g, pin.computeGeneralizedGravity(setup.pm, setup.pd, q))


def test_round_trip_inverse_of_forward_is_identity(setup):
    for q, v, _, tau in setup.states:
        qdd = setup.forward(q, v, tau)
        _close(setup.inverse(q, v, qdd), tau)
        # and the same accelerations satisfy Pinocchio's equations of motion
        # M(q) qdd + h(q, v) = tau (not only our own two models' agreement)
        M = np.array(pin.crba(setup.pm, setup.pd, q))
        M = np.triu(M) + np.triu(M, 1).T
        _close(M @ qdd + pin.nonLinearEffects(setup.pm, setup.pd, q, v), tau)


def test_a_chain_of_body_shapes_sharing_one_template_matches_aba():
    """A chain of Revolute + BodyShape: every BodyShape after the first takes its equations
    from the first one's template (its key says no body hangs on its frame_b). The forward
    dynamics, with gravity, must still be Pinocchio's for the same chain."""
    from mb_trees import RevoluteChain, pinocchio_chain

    n = 9
    _assert_chain_is_aba(mb.compile(RevoluteChain(n), parameters="constant"),
                         pinocchio_chain(n), n, seed=21)


def _assert_chain_is_aba(cm, model, n, seed):
    """The forward dynamics of ``cm``, a chain of revolutes ``joint0..``, equal Pinocchio's
    ``aba`` of ``model`` without joint torques, at random states."""
    fd = cm.evaluator(native=False)
    data = model.createData()
    phi = [cm.states.index(f"joint{i}.phi") for i in range(n)]
    w = [cm.states.index(f"joint{i}.w") for i in range(n)]
    rng = np.random.default_rng(seed)
    for _ in range(N_STATES):
        q, v = rng.uniform(-np.pi, np.pi, n), rng.uniform(-2.0, 2.0, n)
        x = np.zeros(2 * n)
        x[phi], x[w] = q, v
        _close(np.array(fd(x))[w], pin.aba(model, data, q, v, np.zeros(n)))


def _box_or_cylinder_inertia(kind, r, size, width_direction, density=7700.0):
    """Mass and inertia about the centre (r/2) of the MSL BodyBox (width = size, height =
    size / 2) or BodyCylinder (diameter = size) along r, from their geometry: axes e1
    along r, e2 the width direction made orthogonal to it, e3 = e1 x e2."""
    r = np.asarray(r, dtype=float)
    length = np.linalg.norm(r)
    e1 = r / length
    w = np.asarray(width_direction if width_direction is not None else (0, 1, 0), float)
    e2 = w - e1 * (e1 @ w)
    e2 /= np.linalg.norm(e2)
    axes = np.column_stack([e1, e2, np.cross(e1, e2)])
    if kind == "box":
        width, height = size, size / 2
        m = density * length * width * height
        moments = m / 12 * np.array([width ** 2 + height ** 2, length ** 2 + height ** 2,
                                     length ** 2 + width ** 2])
    else:
        m = density * np.pi * length * size ** 2 / 4
        transverse = m * (length ** 2 + 3 * size ** 2 / 4) / 12
        moments = np.array([m * size ** 2 / 8, transverse, transverse])
    return m, axes @ np.diag(moments) @ axes.T


def test_a_chain_of_boxes_and_cylinders_sharing_templates_matches_aba():
    """Boxes and cylinders along x and y (one box with its width turned), two with a body
    hanging on frame_b: shapes along one direction share a template. The forward dynamics,
    with gravity, must be Pinocchio's for the same chain built from the shapes' geometry."""
    from mb_trees import BoxesAndCylinders, box_or_cylinder

    n = 8
    cm = mb.compile(BoxesAndCylinders(n), parameters="constant")
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, -9.81, 0.0, 0.0, 0.0, 0.0]))
    parent, offset = 0, np.zeros(3)
    for i in range(n):
        kind, r, size, width_direction = box_or_cylinder(i)
        joint = pin.JointModelRZ() if i % 2 else pin.JointModelRY()
        parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), offset), f"j{i}")
        m, inertia = _box_or_cylinder_inertia(kind, r, size, width_direction)
        model.appendBodyToJoint(parent, pin.Inertia(m, np.asarray(r) / 2, inertia),
                                pin.SE3.Identity())
        offset = np.asarray(r, dtype=float)
        if i % 3 == 2:  # the tip body on frame_b; the next joint sits on frame_a
            model.appendBodyToJoint(parent, pin.Inertia(0.5, np.array([0.05, 0, 0]),
                                                        0.001 * np.eye(3)),
                                    pin.SE3(np.eye(3), offset))
            offset = np.zeros(3)
    _assert_chain_is_aba(cm, model, n, seed=8)


def _with_placements(monkeypatch, make, placement_class):
    """``make()`` with the FixedRotations of :class:`TreeModel` made as ``placement_class``."""
    import mb_trees
    with monkeypatch.context() as patched:
        patched.setattr(mb_trees.mbl, "FixedRotation", placement_class)
        return make()


@pytest.mark.parametrize("tree", [dict(seed=11), dict(seed=5, spherical=True)])
def test_a_joint_composes_the_placement_before_it(monkeypatch, tree):
    """A Revolute, Prismatic or Spherical whose frame_a meets a FixedRotation alone
    (Pinocchio's joint placement) takes the placement's frame_a velocity and acceleration,
    and gives it the articulated inertia and bias of what follows, in one transformation.
    Dynamics and every frame quantity equal those of the placement and the joint one after
    the other (a FixedRotation subclass, which no joint composes) to rounding; the forward
    dynamics have a fifth fewer operations, and a chain's are Pinocchio's."""
    from mbmodel.codegen import operation_counts
    from mbmodel.libraries import multibody as mbl
    from mb_trees import TreeModel

    class Placement(mbl.FixedRotation):
        """Not composed: a subclass may state other equations."""

    spherical = tree.get("spherical", False)
    spec = random_tree(10, np.random.default_rng(tree["seed"]), spherical=spherical)
    assert {"revolute", "prismatic"} <= {s["kind"] for s in spec}
    assert ("spherical" in {s["kind"] for s in spec}) == spherical
    composed = mb.compile(TreeModel(spec), parameters="constant")
    apart = mb.compile(_with_placements(monkeypatch, lambda: TreeModel(spec), Placement),
                       parameters="constant")
    assert composed.states == apart.states and composed.output_names == apart.output_names
    rng = np.random.default_rng(12)
    for _ in range(N_STATES):
        x = rng.uniform(-1.5, 1.5, len(composed.states))
        p = composed.parameter_defaults
        _close(composed.ode(x, [], [], p, 0.0), apart.ode(x, [], [], p, 0.0), 1e-12)
        _close(composed.output_function(x, [], [], p, 0.0),
               apart.output_function(x, [], [], p, 0.0), 1e-12)
    ops = [sum(operation_counts(cm.dynamics)[k] for k in ("total", "other"))
           for cm in (composed, apart)]
    assert ops[0] < 0.8 * ops[1], ops
    chain = random_tree(8, np.random.default_rng(13), chain=True)
    for s in chain:
        s["kind"] = "revolute"
    _assert_chain_is_aba(mb.compile(TreeModel(chain), parameters="constant"),
                         pinocchio_model(chain), 8, seed=14)
