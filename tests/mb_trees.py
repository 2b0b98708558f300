"""Random multibody trees built twice: as an mbmodel model and as a Pinocchio model with
the same kinematics and inertias (test helper, not a test module)."""

from __future__ import annotations

import numpy as np

import mbmodel as mb
from mbmodel.libraries import multibody as mbl
from mbmodel.libraries import rotational, translational


def planar_rotation(e, angle):
    e = np.asarray(e, float) / np.linalg.norm(e)
    eet = np.outer(e, e)
    ex = np.array([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])
    return eet + (np.eye(3) - eet) * np.cos(angle) - ex * np.sin(angle)


def random_inertia(rng):
    """A physical inertia about the centre of mass (random principal moments satisfying
    the triangle inequality, random principal axes)."""
    a, b = rng.uniform(0.05, 0.5, 2)
    c = rng.uniform(abs(a - b) + 0.01, a + b)
    Qm, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return Qm @ np.diag([a, b, c]) @ Qm.T


def random_tree(n, rng, *, chain=False, spherical=False, floating=False):
    """Specification of n bodies: parent index (-1 = world), joint type and axis,
    placement (axis n0, angle, offset r0), mass, centre of mass, inertia."""
    spec = []
    for i in range(n):
        if i == 0:
            parent = -1
        else:
            parent = i - 1 if chain else int(rng.integers(0, i))
        if i == 0 and floating:
            kind = "free"
        elif spherical and i == n // 2:
            kind = "spherical"
        else:
            kind = "revolute" if rng.random() < 0.7 else "prismatic"
        spec.append(dict(parent=parent, kind=kind, axis=rng.normal(size=3),
                         n0=rng.normal(size=3), angle=rng.uniform(-np.pi, np.pi),
                         r0=rng.uniform(-0.3, 0.3, 3), m=rng.uniform(0.5, 3.0),
                         c=rng.uniform(-0.2, 0.2, 3), I=random_inertia(rng)))
    return spec


class TreeModel(mb.Model):
    """The tree of a spec; with ``actuated=True`` revolute/prismatic joints get a drive
    flange with a torque (force) source fed by a top-level input ``u<i>``."""

    def __init__(self, spec, actuated=False, **modifiers):
        super().__init__(**modifiers)
        self.spec = spec
        self.actuated = actuated
        self.world = mbl.World(n=[0.0, 0.0, -1.0])
        for i, s in enumerate(spec):
            self.add(f"place{i}", mbl.FixedRotation(r=list(s["r0"]), n=list(s["n0"]),
                                                     angle=s["angle"]))
            act = actuated and s["kind"] in ("revolute", "prismatic")
            if s["kind"] == "revolute":
                joint = mbl.Revolute(n=list(s["axis"]), use_axis_flange=act)
            elif s["kind"] == "prismatic":
                joint = mbl.Prismatic(n=list(s["axis"]), use_axis_flange=act)
            elif s["kind"] == "spherical":
                joint = mbl.Spherical()
            else:
                joint = mbl.FreeMotion()
            self.add(f"joint{i}", joint)
            I = s["I"]
            self.add(f"body{i}", mbl.Body(m=s["m"], r_CM=list(s["c"]), I_11=I[0, 0],
                                          I_22=I[1, 1], I_33=I[2, 2], I_21=I[1, 0],
                                          I_31=I[2, 0], I_32=I[2, 1]))
            if act:
                setattr(self, f"u{i}", mb.Input())
                src = (rotational.Torque() if s["kind"] == "revolute"
                       else translational.Force())
                self.add(f"drive{i}", src)

    def equations(self):
        for i, s in enumerate(self.spec):
            parent = (self.world.frame_b if s["parent"] < 0
                      else getattr(self, f"joint{s['parent']}").frame_b)
            place, joint = getattr(self, f"place{i}"), getattr(self, f"joint{i}")
            yield mb.connect(parent, place.frame_a)
            yield mb.connect(place.frame_b, joint.frame_a)
            yield mb.connect(joint.frame_b, getattr(self, f"body{i}").frame_a)
            if hasattr(self, f"drive{i}"):
                drive = getattr(self, f"drive{i}")
                yield mb.connect(drive.flange, joint.axis)
                signal = drive.tau if s["kind"] == "revolute" else drive.f
                yield mb.connect(getattr(self, f"u{i}"), signal)


def pinocchio_model(spec):
    import pinocchio as pin
    model = pin.Model()
    ids = []
    for i, s in enumerate(spec):
        parent = 0 if s["parent"] < 0 else ids[s["parent"]]
        E0 = planar_rotation(s["n0"], s["angle"])
        placement = pin.SE3(E0.T, np.asarray(s["r0"], float))
        axis = np.asarray(s["axis"], float) / np.linalg.norm(s["axis"])
        if s["kind"] == "revolute":
            jm = pin.JointModelRevoluteUnaligned(axis)
        elif s["kind"] == "prismatic":
            jm = pin.JointModelPrismaticUnaligned(axis)
        elif s["kind"] == "spherical":
            jm = pin.JointModelSpherical()
        else:
            jm = pin.JointModelFreeFlyer()
        jid = model.addJoint(parent, jm, placement, f"j{i}")
        model.appendBodyToJoint(jid, pin.Inertia(s["m"], np.asarray(s["c"], float), s["I"]),
                                pin.SE3.Identity())
        ids.append(jid)
    return model


def random_state(spec, pmodel, rng):
    """Random (q, v, a, tau) in Pinocchio's conventions (unit quaternions)."""
    import pinocchio as pin
    q = pin.randomConfiguration(pmodel, -np.ones(pmodel.nq), np.ones(pmodel.nq))
    v = rng.normal(size=pmodel.nv)
    a = rng.normal(size=pmodel.nv)
    tau = rng.normal(size=pmodel.nv)
    for j, s in enumerate(spec):
        if s["kind"] in ("spherical", "free"):
            tau[pmodel.joints[j + 1].idx_v:pmodel.joints[j + 1].idx_v + pmodel.joints[j + 1].nv] = 0.0
    return q, v, a, tau


def mbmodel_values(spec, pmodel, q, v, a=None):
    """Our variable names -> values for a Pinocchio state (q, v, a)."""
    out = {}
    for j, s in enumerate(spec):
        jm = pmodel.joints[j + 1]
        iq, iv = jm.idx_q, jm.idx_v
        name = f"joint{j}"
        if s["kind"] == "revolute":
            out.update({f"{name}.phi": q[iq], f"{name}.w": v[iv]})
            if a is not None:
                out[f"{name}.a"] = a[iv]
        elif s["kind"] == "prismatic":
            out.update({f"{name}.s": q[iq], f"{name}.v": v[iv]})
            if a is not None:
                out[f"{name}.a"] = a[iv]
        elif s["kind"] == "spherical":
            for k in range(4):
                out[f"{name}.Q[{k}]"] = q[iq + k]
            for k in range(3):
                out[f"{name}.w_rel[{k}]"] = v[iv + k]
                if a is not None:
                    out[f"{name}.z_rel[{k}]"] = a[iv + k]
        else:
            for k in range(3):
                out[f"{name}.r_rel[{k}]"] = q[iq + k]
                out[f"{name}.v_rel[{k}]"] = v[iv + k]
                out[f"{name}.w_rel[{k}]"] = v[iv + 3 + k]
                if a is not None:
                    out[f"{name}.a_rel[{k}]"] = a[iv + k]
                    out[f"{name}.z_rel[{k}]"] = a[iv + 3 + k]
            for k in range(4):
                out[f"{name}.Q[{k}]"] = q[iq + 3 + k]
    return out


def acceleration_names(spec):
    """Our names of the joint accelerations in Pinocchio's velocity order."""
    names = []
    for j, s in enumerate(spec):
        name = f"joint{j}"
        if s["kind"] in ("revolute", "prismatic"):
            names.append(f"{name}.a")
        elif s["kind"] == "spherical":
            names += [f"{name}.z_rel[{k}]" for k in range(3)]
        else:
            names += [f"{name}.a_rel[{k}]" for k in range(3)] + \
                     [f"{name}.z_rel[{k}]" for k in range(3)]
    return names


def force_names(spec):
    """Our names of the joint forces in Pinocchio's order ([f; t] for a free joint)."""
    names = []
    for j, s in enumerate(spec):
        name = f"joint{j}"
        if s["kind"] == "revolute":
            names.append(f"{name}.tau")
        elif s["kind"] == "prismatic":
            names.append(f"{name}.f")
        elif s["kind"] == "spherical":
            names += [f"{name}.tau[{k}]" for k in range(3)]
        else:
            names += [f"{name}.tau[{k}]" for k in (3, 4, 5, 0, 1, 2)]
    return names


# -- serial revolute chain (benchmark and drive-train tests) --------------------------------

AXES = ([0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0])
LINK = np.array([0.0, 0.3, 0.1])
INERTIA = np.diag([0.02, 0.01, 0.02])
MASS = 1.0


class RevoluteChain(mb.Model):
    """world -> joint0 -> link0 -> joint1 -> link1 ... (n revolutes; axes cycle z, y, x;
    links of offset LINK with the centre of mass half way)."""

    def __init__(self, n, **modifiers):
        super().__init__(**modifiers)
        self.n = n
        self.world = mbl.World(n=[0.0, 0.0, -1.0])
        for i in range(n):
            self.add(f"joint{i}", mbl.Revolute(n=AXES[i % 3]))
            self.add(f"link{i}", mbl.BodyShape(r=list(LINK), r_CM=list(LINK / 2), m=MASS,
                                               I_11=INERTIA[0, 0], I_22=INERTIA[1, 1],
                                               I_33=INERTIA[2, 2]))

    def equations(self):
        prev = self.world.frame_b
        for i in range(self.n):
            joint, link = getattr(self, f"joint{i}"), getattr(self, f"link{i}")
            yield mb.connect(prev, joint.frame_a)
            yield mb.connect(joint.frame_b, link.frame_a)
            tip = getattr(self, f"tip{i}", None)
            if tip is not None:  # a body alone on frame_b: the chain goes on from frame_a
                yield mb.connect(link.frame_b, tip.frame_a)
                prev = link.frame_a
            else:
                prev = link.frame_b


class ShapesWithBodies(RevoluteChain):
    """Revolutes carrying BodyShapes; on some a Body hangs alone on frame_b (the shape
    lumps it: its equations read the body's symbols), on others the next joint does."""

    def __init__(self, n=6, **modifiers):
        mb.Model.__init__(self, **modifiers)
        self.n = n
        self.world = mbl.World()
        for i in range(n):
            self.add(f"joint{i}", mbl.Revolute(n=[0, 0, 1] if i % 2 else [0, 1, 0]))
            self.add(f"link{i}", mbl.BodyShape(r=[0.4, 0.1 * i, 0], m=1.0 + i,
                                               r_CM=[0.2, 0, 0], I_11=0.1, I_22=0.2, I_33=0.3))
            if i % 3 == 2:
                self.add(f"tip{i}", mbl.Body(m=0.5, r_CM=[0.05, 0, 0]))


def box_or_cylinder(i):
    """BoxesAndCylinders' link i: ``(kind, r, width or diameter, width direction)``; boxes
    are half as high as wide."""
    r = [0.3, 0.0, 0.0] if i % 4 else [0.0, 0.25, 0.0]
    if i % 2:
        return "cylinder", r, 0.02 + 0.01 * i, None
    return "box", r, 0.03, (1, 0, 0) if i % 4 == 0 else (0, 0, 1) if i == 6 else (0, 1, 0)


class BoxesAndCylinders(RevoluteChain):
    """ShapesWithBodies' chain of boxes and cylinders: most along x, some along y, a box
    with its width turned; a body hangs on the third and the sixth."""

    def __init__(self, n=8, **modifiers):
        mb.Model.__init__(self, **modifiers)
        self.n = n
        self.world = mbl.World()
        for i in range(n):
            kind, r, size, width_direction = box_or_cylinder(i)
            self.add(f"joint{i}", mbl.Revolute(n=[0, 0, 1] if i % 2 else [0, 1, 0]))
            self.add(f"link{i}", mbl.BodyCylinder(r=r, diameter=size) if kind == "cylinder"
                     else mbl.BodyBox(r=r, width=size, height=size / 2,
                                      width_direction=width_direction))
            if i % 3 == 2:
                self.add(f"tip{i}", mbl.Body(m=0.5, r_CM=[0.05, 0, 0]))


def pinocchio_chain(n):
    import pinocchio as pin
    model = pin.Model()
    parent = 0
    joints = (pin.JointModelRZ, pin.JointModelRY, pin.JointModelRX)
    for i in range(n):
        placement = pin.SE3(np.eye(3), LINK if i > 0 else np.zeros(3))
        parent = model.addJoint(parent, joints[i % 3](), placement, f"j{i}")
        model.appendBodyToJoint(parent, pin.Inertia(MASS, LINK / 2, INERTIA), pin.SE3.Identity())
    return model


J_MOTOR, RATIO, DAMPING, MOTOR_TORQUE = 0.5, 10.0, 0.02, 0.3


class DrivenChain(mb.Model):
    """Revolute chain; each joint driven by motor inertia -> gear -> axis flange. With
    ``losses`` the motor also has a damper to ground and a constant torque; with
    ``housed_gear`` the gear's housing is the joint's support flange."""

    def __init__(self, n, losses=False, housed_gear=False, **modifiers):
        super().__init__(**modifiers)
        self.n, self.losses, self.housed_gear = n, losses, housed_gear
        self.world = mbl.World(n=[0.0, 0.0, -1.0])
        for i in range(n):
            self.add(f"joint{i}", mbl.Revolute(n=AXES[i % 3], use_axis_flange=True))
            self.add(f"link{i}", mbl.BodyShape(r=list(LINK), r_CM=list(LINK / 2), m=MASS,
                                               I_11=INERTIA[0, 0], I_22=INERTIA[1, 1],
                                               I_33=INERTIA[2, 2]))
            self.add(f"motor{i}", rotational.Inertia(J=J_MOTOR))
            self.add(f"gear{i}", rotational.IdealGear(ratio=RATIO, use_support=housed_gear))
            if losses:
                self.add(f"bearing{i}", rotational.Damper(d=DAMPING))
                self.add(f"source{i}", rotational.ConstantTorque(tau_constant=MOTOR_TORQUE))
                self.add(f"ground{i}", rotational.Fixed())

    def equations(self):
        prev = self.world.frame_b
        for i in range(self.n):
            joint, link = getattr(self, f"joint{i}"), getattr(self, f"link{i}")
            motor, gear = getattr(self, f"motor{i}"), getattr(self, f"gear{i}")
            yield mb.connect(prev, joint.frame_a)
            yield mb.connect(joint.frame_b, link.frame_a)
            prev = link.frame_b
            yield mb.connect(motor.flange_b, gear.flange_a)
            yield mb.connect(gear.flange_b, joint.axis)
            if self.housed_gear:
                yield mb.connect(gear.support, joint.support)
            if self.losses:
                ground = getattr(self, f"ground{i}")
                yield mb.connect(motor.flange_a, getattr(self, f"bearing{i}").flange_b)
                yield mb.connect(getattr(self, f"bearing{i}").flange_a, ground.flange)
                yield mb.connect(getattr(self, f"source{i}").flange, motor.flange_a)
