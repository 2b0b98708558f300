"""URDF import (``mbl.from_urdf``) checked against Pinocchio's own import of the same files.

``data/arm6.urdf``: a 6-DOF arm (revolute joints about coordinate and general axes, a
prismatic and a continuous joint, joint origins with rpy, inertial frames rotated against
their links with full inertia tensors, fixed joints to a massless and a massive link).
``data/humanoid.urdf``: a branched tree (torso as floating base, two legs, two arms, a fixed
head and sensor frames, massless intermediate links).

For each we compare, at random states,

(a) forward accelerations with nonzero joint torques (and a nonzero wrench on the floating
    base) against ``pinocchio.aba``,
(b) inverse-dynamics joint forces against ``pinocchio.rnea``,

with the tolerance of ``test_multibody_pinocchio``: ``1e-9 * max(1, max |reference|)``.
Pinocchio's conventions are converted, not approximated: a continuous joint's configuration
is ``(cos q, sin q)``; the free-flyer's is ``[position; quaternion (x, y, z, w)]`` with the
velocity ``[linear; angular]`` in the body frame, which are ``FreeMotion``'s ``r_rel``, ``Q``,
``v_rel``, ``w_rel`` (and ``tau = [torque; force]`` against Pinocchio's ``[force; torque]``).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

pytest.importorskip("yourdfpy")
pin = pytest.importorskip("pinocchio")

import mbmodel as mb  # noqa: E402
import mbmodel.libraries.multibody as mbl  # noqa: E402
from mbmodel.libraries.multibody.urdf import URDFError, read_urdf  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
ARM = os.path.join(DATA, "arm6.urdf")
HUMANOID = os.path.join(DATA, "humanoid.urdf")
TOL = 1e-9
N_STATES = 4


def _close(actual, reference, tol=TOL):
    actual, reference = np.asarray(actual, float), np.asarray(reference, float)
    scale = max(1.0, float(np.abs(reference).max()))
    err = float(np.abs(actual - reference).max())
    assert err <= tol * scale, f"max error {err:.3e} > {tol:.0e} * {scale:.3e}"


class Pair:
    """One URDF file imported by both: Pinocchio's model and our forward (actuated) and
    inverse models, with the maps between Pinocchio's vectors and our variable names."""

    def __init__(self, path, floating_base=False, seed=0):
        root = (pin.JointModelFreeFlyer(),) if floating_base else ()
        self.pm = pin.buildModelFromUrdf(path, *root)
        self.pd = self.pm.createData()
        model = mbl.from_urdf(path, floating_base=floating_base)
        self.names = model.joint_names
        self.fd = mb.compile(model, parameters="constant")
        self.id = mb.compile(mbl.from_urdf(path, floating_base=floating_base, actuated=False),
                             analysis="inverse", parameters="constant")
        self.acc_idx = [self.fd.output_index[n] for n in self.accelerations()]
        self.force_idx = [self.id.output_index[n] for n in self.forces()]
        rng = np.random.default_rng(seed)
        self.states = []
        for _ in range(N_STATES):
            q = pin.randomConfiguration(self.pm, -3 * np.ones(self.pm.nq),
                                        3 * np.ones(self.pm.nq))
            v, a, tau = (rng.normal(size=self.pm.nv) for _ in range(3))
            self.states.append((q, v, a, 5 * tau))

    def joints(self):
        """(our component name, Pinocchio joint model) of every Pinocchio joint."""
        return [(self.names[self.pm.names[j]], self.pm.joints[j])
                for j in range(1, self.pm.njoints)]

    @staticmethod
    def free(jm):
        return jm.shortname() == "JointModelFreeFlyer"

    @staticmethod
    def prismatic(jm):
        return "Prismatic" in jm.shortname()

    def values(self, q, v, a=None):
        """Our variable names -> values for Pinocchio's (q, v, a)."""
        out = {}
        for name, jm in self.joints():
            iq, iv = jm.idx_q, jm.idx_v
            if self.free(jm):
                for k in range(3):
                    out[f"{name}.r_rel[{k}]"] = q[iq + k]
                    out[f"{name}.v_rel[{k}]"] = v[iv + k]
                    out[f"{name}.w_rel[{k}]"] = v[iv + 3 + k]
                    if a is not None:
                        out[f"{name}.a_rel[{k}]"] = a[iv + k]
                        out[f"{name}.z_rel[{k}]"] = a[iv + 3 + k]
                for k in range(4):
                    out[f"{name}.Q[{k}]"] = q[iq + 3 + k]
                continue
            position, speed = ("s", "v") if self.prismatic(jm) else ("phi", "w")
            # a continuous joint's configuration is (cos q, sin q)
            out[f"{name}.{position}"] = (np.arctan2(q[iq + 1], q[iq]) if jm.nq == 2
                                         else q[iq])
            out[f"{name}.{speed}"] = v[iv]
            if a is not None:
                out[f"{name}.a"] = a[iv]
        return out

    def inputs(self, tau):
        """Our drive inputs -> values for Pinocchio's joint forces."""
        out = {}
        for name, jm in self.joints():
            iv = jm.idx_v
            if self.free(jm):
                for k in range(3):
                    out[f"{name}_drive.force[{k}]"] = tau[iv + k]
                    out[f"{name}_drive.torque[{k}]"] = tau[iv + 3 + k]
            else:
                out[f"{name}_drive.{'f' if self.prismatic(jm) else 'tau'}"] = tau[iv]
        return out

    def accelerations(self):
        """Our names of the joint accelerations in Pinocchio's velocity order."""
        names = []
        for name, jm in self.joints():
            if self.free(jm):
                names += [f"{name}.a_rel[{k}]" for k in range(3)]
                names += [f"{name}.z_rel[{k}]" for k in range(3)]
            else:
                names.append(f"{name}.a")
        return names

    def forces(self):
        """Our names of the joint forces in Pinocchio's order."""
        names = []
        for name, jm in self.joints():
            if self.free(jm):
                names += [f"{name}.tau[{k}]" for k in (3, 4, 5, 0, 1, 2)]
            else:
                names.append(f"{name}.{'f' if self.prismatic(jm) else 'tau'}")
        return names

    def forward(self, q, v, tau):
        vals, ins = self.values(q, v), self.inputs(tau)
        x = np.array([vals[s] for s in self.fd.states])
        u = np.array([ins[s] for s in self.fd.inputs])
        y = np.array(self.fd.output_function(x, [], u, self.fd.parameter_defaults, 0.0))
        return y.ravel()[self.acc_idx]

    def inverse(self, q, v, a):
        vals = self.values(q, v, a)
        u = np.array([vals[s] for s in self.id.inputs])
        y = np.array(self.id.output_function([], [], u, self.id.parameter_defaults, 0.0))
        return y.ravel()[self.force_idx]


CASES = {"arm": dict(path=ARM, floating_base=False, seed=1),
         "humanoid": dict(path=HUMANOID, floating_base=True, seed=2)}


@pytest.fixture(scope="module", params=list(CASES))
def pair(request):
    return Pair(**CASES[request.param])


def test_models_have_the_joints_of_the_urdf(pair):
    kinds = [jm.shortname() for _, jm in pair.joints()]
    assert len(pair.accelerations()) == pair.pm.nv
    q, v, a, tau = pair.states[0]
    assert set(pair.fd.states) == set(pair.values(q, v))
    assert set(pair.fd.inputs) == set(pair.inputs(tau))
    assert set(pair.id.inputs) == set(pair.values(q, v, a))
    if pair.pm.name == "arm6":
        # a joint of each kind, and axes that are not coordinate axes
        assert {"JointModelRZ", "JointModelRX", "JointModelRevoluteUnaligned",
                "JointModelPrismaticUnaligned",
                "JointModelRevoluteUnboundedUnaligned"} <= set(kinds)
        assert len(kinds) == 6
    else:
        assert kinds[0] == "JointModelFreeFlyer" and pair.pm.nv == 6 + 14
        # branched: the torso carries two legs and two arms
        torso_children = [j for j in range(1, pair.pm.njoints) if pair.pm.parents[j] == 1]
        assert len(torso_children) == 4


def test_forward_dynamics_matches_aba(pair):
    for q, v, _, tau in pair.states:
        assert np.abs(tau).max() > 0.1
        _close(pair.forward(q, v, tau), pin.aba(pair.pm, pair.pd, q, v, tau))


def test_forward_dynamics_without_torques_matches_aba(pair):
    q, v, _, tau = pair.states[0]
    zero = np.zeros_like(tau)
    _close(pair.forward(q, v, zero), pin.aba(pair.pm, pair.pd, q, v, zero))


def test_inverse_dynamics_matches_rnea(pair):
    for q, v, a, _ in pair.states:
        _close(pair.inverse(q, v, a), pin.rnea(pair.pm, pair.pd, q, v, a))


def test_inverse_of_forward_is_identity(pair):
    q, v, _, tau = pair.states[1]
    _close(pair.inverse(q, v, pair.forward(q, v, tau)), tau)


# -- small files written by the tests ------------------------------------------------------------

INERTIAL = ('<inertial><origin xyz="{xyz}" rpy="0.3 -0.2 0.5"/><mass value="{m}"/>'
            '<inertia ixx="{ixx}" ixy="0.001" ixz="-0.002" iyy="0.05" iyz="0.003" izz="0.06"/>'
            '</inertial>')


def link(name, m=1.0, xyz="0.1 0 0", ixx=0.04):
    inertial = "" if m is None else INERTIAL.format(m=m, xyz=xyz, ixx=ixx)
    return f'<link name="{name}">{inertial}</link>'


def joint(name, parent, child, kind="revolute", axis="0 0 1", origin="0 0 0.2", rpy="0 0 0",
          limit='<limit lower="-1" upper="1" effort="10" velocity="2"/>'):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{origin}" rpy="{rpy}"/>'
            f'<axis xyz="{axis}"/>{limit}</joint>')


def write(tmp_path, *elements, name="robot.urdf"):
    path = tmp_path / name
    path.write_text('<?xml version="1.0"?>\n<robot name="t">\n' + "\n".join(elements)
                    + "\n</robot>\n")
    return str(path)


def test_floating_joint_in_the_file_is_a_free_joint(tmp_path):
    """A URDF ``floating`` joint (world link -> floating -> body): Pinocchio's free-flyer."""
    path = write(tmp_path, link("world", None),
                 joint("base", "world", "body", kind="floating", origin="0.1 -0.2 0.9",
                       rpy="0.4 -0.3 1.1", limit=""),
                 link("body", 3.0, "0.02 0.03 -0.05"),
                 joint("arm_joint", "body", "arm", axis="0.6 0 -0.8", rpy="0.1 0.2 0.3"),
                 link("arm", 1.0))
    model = mbl.from_urdf(path)
    assert isinstance(model.base, mbl.FreeMotion) and model.link_names["world"] is None
    pair = Pair(path, seed=5)
    assert pair.pm.nv == 7 and pair.joints()[0][0] == "base"
    for q, v, a, tau in pair.states:
        _close(pair.forward(q, v, tau), pin.aba(pair.pm, pair.pd, q, v, tau))
        _close(pair.inverse(q, v, a), pin.rnea(pair.pm, pair.pd, q, v, a))


@pytest.mark.parametrize("gravity", [(1.0, 2.0, -3.0), (0.0, 0.0, 0.0)])
def test_gravity_vector(tmp_path, gravity):
    path = write(tmp_path, link("base", None), joint("j1", "base", "l1", axis="0 1 0"),
                 link("l1", 2.0), joint("j2", "l1", "l2", axis="1 0 0", rpy="0.5 0 0"),
                 link("l2", 1.0))
    pm = pin.buildModelFromUrdf(path)
    pm.gravity = pin.Motion(np.array([*gravity, 0.0, 0.0, 0.0]))
    cm = mb.compile(mbl.from_urdf(path, actuated=False, gravity=gravity), analysis="inverse",
                    parameters="constant")
    q = np.array([0.3, -0.7])
    u = {"j1.phi": q[0], "j2.phi": q[1]}
    y = np.array(cm.output_function([], [], [u.get(n, 0.0) for n in cm.inputs],
                                    cm.parameter_defaults, 0.0)).ravel()
    ours = y[[cm.output_index["j1.tau"], cm.output_index["j2.tau"]]]
    _close(ours, pin.computeGeneralizedGravity(pm, pm.createData(), q))


def test_limits_are_parameters_of_the_joints():
    flat = mb.flatten(mbl.from_urdf(ARM))
    values = {p.name: p.value for p in flat.parameters}
    pm = pin.buildModelFromUrdf(ARM)
    for j in range(1, pm.njoints):
        name, jm = pm.names[j], pm.joints[j]
        iv = jm.idx_v
        assert values[f"{name}.velocity"] == pm.velocityLimit[iv]
        assert values[f"{name}.effort"] == pm.effortLimit[iv]
        if jm.nq == 1:
            assert values[f"{name}.lower"] == pm.lowerPositionLimit[jm.idx_q]
            assert values[f"{name}.upper"] == pm.upperPositionLimit[jm.idx_q]
    assert values["shoulder_pan.lower"] == -2.9 and values["slide.upper"] == 0.25
    assert values["slide.effort"] == 400.0 and values["forearm_roll.velocity"] == 4.0
    # a continuous joint has no position limits
    assert "forearm_roll.lower" not in values and "forearm_roll.upper" not in values
    units = {p.name: p.unit for p in flat.parameters}
    assert units["slide.lower"] == "m" and units["shoulder_pan.effort"] == "N.m"


def test_limits_are_tunable_parameters_of_the_compiled_model(tmp_path):
    path = write(tmp_path, link("base", None), joint("j1", "base", "l1"), link("l1", 1.0))
    cm = mb.compile(mbl.from_urdf(path))
    assert {"j1.lower", "j1.upper", "j1.velocity", "j1.effort"} <= set(cm.parameters)
    assert cm.parameter_defaults[cm.parameters.index("j1.effort")] == 10.0


def test_names_become_identifiers(tmp_path):
    path = write(tmp_path, link("base", None), joint("2nd-joint", "base", "upper.arm"),
                 link("upper.arm", 1.0), joint("class", "upper.arm", "_hand", axis="0 1 0"),
                 link("_hand", 0.5))
    model = mbl.from_urdf(path)
    assert model.joint_names == {"2nd-joint": "joint_2nd_joint", "class": "joint_class"}
    assert model.link_names == {"base": None, "upper.arm": "upper_arm", "_hand": "link__hand"}
    assert isinstance(model.joint_2nd_joint, mbl.Revolute)
    assert isinstance(model.link__hand, mbl.Body)
    cm = mb.compile(model, parameters="constant")
    assert set(cm.inputs) == {"joint_2nd_joint_drive.tau", "joint_class_drive.tau"}


def test_meshes_are_not_loaded(tmp_path):
    path = write(tmp_path, link("base", None), joint("j1", "base", "l1"),
                 '<link name="l1">' + INERTIAL.format(m=1.0, xyz="0 0 0", ixx=0.04)
                 + '<visual><geometry><mesh filename="package://nowhere/missing.stl"/>'
                 '</geometry></visual></link>')
    assert mbl.from_urdf(path).link_names["l1"] == "l1"


# -- errors ---------------------------------------------------------------------------------------

BASE = [link("base", None), joint("j1", "base", "l1"), link("l1", 1.0)]

BAD = {
    "planar": ([*BASE, joint("slider_xy", "l1", "l2", kind="planar"), link("l2")],
               ["joint 'slider_xy'", "planar", "not supported"]),
    "unknown type": ([*BASE, joint("screw1", "l1", "l2", kind="screw"), link("l2")],
                     ["joint 'screw1'", "'screw'", "revolute, continuous"]),
    "two parents": ([*BASE, link("l2"), joint("j2", "l1", "l2"), joint("j3", "base", "l2")],
                    ["link 'l2' has two parents", "'j2'", "'j3'"]),
    "cycle": ([*BASE, link("l2"), link("l3"), joint("j2", "l2", "l3"),
               joint("j3", "l3", "l2")], ["'j2'", "'j3'", "cycle"]),
    "two trees": ([*BASE, link("other", 1.0)], ["2 separate trees", "'base'", "'other'"]),
    "unknown link": ([*BASE, joint("j2", "l1", "l9")],
                     ["joint 'j2'", "child link 'l9' is not declared"]),
    "zero mass": ([*BASE, joint("j2", "l1", "l2"), link("l2", 0.0)],
                  ["link 'l2'", "mass 0.0 is not positive", "remove the <inertial>"]),
    "negative mass": ([*BASE, joint("j2", "l1", "l2"), link("l2", -1.0)],
                      ["link 'l2'", "mass -1.0 is not positive"]),
    "nan mass": ([*BASE, joint("j2", "l1", "l2"), link("l2", "nan")],
                 ["link 'l2'", "mass", "not finite"]),
    "inertia": ([*BASE, joint("j2", "l1", "l2"), link("l2", 1.0, ixx=-0.04)],
                ["link 'l2'", "not positive definite", "signs of ixy"]),
    "triangle": ([*BASE, joint("j2", "l1", "l2"), link("l2", 1.0, ixx=0.2)],
                 ["link 'l2'", "triangle inequality", "check_triangle=False"]),
    "zero axis": ([*BASE, joint("j2", "l1", "l2", axis="0 0 0"), link("l2", 1.0)],
                  ["joint 'j2'", "zero length"]),
    "limits": ([*BASE, joint("j2", "l1", "l2", limit='<limit lower="1" upper="-1" '
                             'effort="1" velocity="1"/>'), link("l2", 1.0)],
               ["joint 'j2'", "lower = 1.0 is above upper = -1.0"]),
    "name clash": ([*BASE, joint("j2", "l1", "a-b"), link("a-b", 1.0),
                    joint("j3", "l1", "a_b"), link("a_b", 1.0)],
                   ["link 'a-b'", "link 'a_b'", "'a_b'", "rename one"]),
    "link and joint": ([*BASE, joint("elbow", "l1", "elbow_link"), link("elbow_link", 1.0),
                        joint("j3", "elbow_link", "elbow"), link("elbow", 1.0)],
                       ["joint 'elbow'", "link 'elbow'", "rename one"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_urdf_is_a_clear_error(tmp_path, case):
    elements, fragments = BAD[case]
    path = write(tmp_path, *elements)
    with pytest.raises(URDFError) as info:
        mbl.from_urdf(path)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    assert isinstance(info.value, mb.DeclarationError)


def test_triangle_check_can_be_switched_off(tmp_path):
    elements, _ = BAD["triangle"]
    model = mbl.from_urdf(write(tmp_path, *elements), check_triangle=False)
    assert model.l2.check_triangle is False


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="no URDF file at .*nowhere.urdf"):
        mbl.from_urdf(os.path.join(DATA, "nowhere.urdf"))


def test_actuated_model_asks_for_actuated_false_in_inverse_analysis(tmp_path):
    with pytest.raises(URDFError, match=r"actuated=False"):
        mb.compile(mbl.from_urdf(write(tmp_path, *BASE)), analysis="inverse")


def test_joint_moving_no_mass_warns(tmp_path):
    path = write(tmp_path, *BASE, joint("j2", "l1", "tip"), link("tip", None))
    with pytest.warns(UserWarning, match="'j2' move no mass"):
        mbl.from_urdf(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mbl.from_urdf(path, actuated=False)   # inverse dynamics is fine


def test_description_is_plain_data_in_tree_order():
    robot = read_urdf(HUMANOID)
    assert robot.root == "torso"
    seen = {robot.root}
    for j in robot.joints:
        assert j.parent in seen
        seen.add(j.child)
        assert abs(np.linalg.norm(j.axis) - 1) < 1e-15 or j.kind == "fixed"
    assert seen == set(robot.links)
    assert robot.links["camera"] is None and robot.links["head"].mass == 3.0


def test_docs_example_runs(tmp_path, monkeypatch):
    """The snippet of docs/multibody.md "Importing URDF", on this test's two files."""
    import re
    import shutil

    docs = os.path.join(os.path.dirname(DATA), os.pardir, "docs", "multibody.md")
    with open(docs) as f:
        text = f.read()
    section = text[text.index("## Importing URDF"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shutil.copy(ARM, tmp_path / "arm.urdf")
    shutil.copy(HUMANOID, tmp_path / "humanoid.urdf")
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(code, "docs/multibody.md", "exec"), scope)
    assert scope["inverse"].inputs[:3] == ["shoulder_pan.phi", "shoulder_pan.w",
                                           "shoulder_pan.a"]
    assert isinstance(scope["humanoid"].root_joint, mbl.FreeMotion)
