"""Import of URDF robot descriptions: ``from_urdf`` builds a multibody model from a file.

Three stages, each on plain data:

1. ``read_urdf`` parses the file with ``yourdfpy`` (no meshes, no scene graph) and checks
   it: a tree of links, supported joint types, finite numbers, physical inertials. The
   result is a ``RobotDescription`` (links with their mass properties resolved in the
   link frame, joints in depth-first order from the root).
2. ``component_names`` turns URDF names into Python identifiers and refuses two
   components under one name.
3. ``URDFModel`` declares the components and their connections.

URDF kinematics, stated once: a joint's frame sits at ``origin`` (``xyz``, ``rpy`` = fixed-axis
roll-pitch-yaw, ``R = Rz(yaw) Ry(pitch) Rx(roll)``) in its parent link's frame; the child
link's frame is the joint frame moved by the joint along or about ``axis`` (resolved in the
joint frame). A link's ``<inertial>`` gives the mass, the centre of mass and the orientation
of the inertia's frame (its ``origin``) and the inertia about the centre of mass in that
frame; ``Body`` takes it resolved in the link frame, ``R I R'``.

Example::

    import mbmodel as mb
    import mbmodel.libraries.multibody as mbl

    arm = mbl.from_urdf("arm.urdf")                    # forward: torques in, motion out
    cm = mb.compile(arm)
    print(cm.states, cm.inputs)                        # shoulder.phi, ... / shoulder_drive.tau
    rnea = mb.compile(mbl.from_urdf("arm.urdf", actuated=False), analysis="inverse")
"""

from __future__ import annotations

import keyword
import os
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

import mbmodel as mb
from mbmodel import Model, Parameter, Variable
from mbmodel.errors import DeclarationError
from mbmodel.libraries import rotational, translational

from .forces import Force, Torque
from .frames import Frame
from .joints import FreeMotion, Prismatic, Revolute
from .parts import Body, FixedRotation, FixedTranslation, World

__all__ = ["from_urdf", "read_urdf", "component_names", "URDFModel", "RobotDescription",
           "LinkInertial", "JointDescription", "URDFRevolute", "URDFPrismatic",
           "RevoluteDrive", "PrismaticDrive", "FreeDrive", "URDFError"]

#: URDF joint types ``from_urdf`` builds, and the degrees of freedom of each.
SUPPORTED_JOINTS = {"revolute": 1, "continuous": 1, "prismatic": 1, "fixed": 0, "floating": 6}
#: Name of the free joint ``from_urdf`` puts between the world and the root link
#: (``floating_base=True``; Pinocchio names its root free-flyer the same).
ROOT_JOINT = "root_joint"
LIMIT_NAMES = ("lower", "upper", "velocity", "effort")


class URDFError(DeclarationError):
    """The URDF file describes something ``from_urdf`` cannot build (not a tree, an
    unsupported joint type, a non-physical inertial, two links or joints under one name)."""


# -- stage 1: the file as plain data ---------------------------------------------------------

@dataclass(frozen=True)
class LinkInertial:
    """Mass properties of a link resolved in the link frame: ``mass``, centre of mass
    ``com`` (3) and ``inertia`` (3x3) about the centre of mass."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True)
class JointDescription:
    """One URDF joint: ``kind`` (a key of ``SUPPORTED_JOINTS``), ``parent``/``child``
    link names, the joint frame in the parent link frame (``xyz``; ``rotation``, whose columns
    are the joint frame's axes in parent coordinates), the unit ``axis`` (joint frame) and
    the ``<limit>`` values that are given (names of ``LIMIT_NAMES``)."""

    name: str
    kind: str
    parent: str
    child: str
    xyz: np.ndarray
    rotation: np.ndarray
    axis: np.ndarray
    limits: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RobotDescription:
    """A checked URDF tree: ``links`` maps every link name to its ``LinkInertial`` (or
    ``None``: massless) in file order; ``joints`` lists the joints depth-first from ``root``
    (a parent's joint before its children's)."""

    name: str
    root: str
    links: dict
    joints: tuple


def read_urdf(path) -> RobotDescription:
    """Parse and check the URDF file at ``path`` (no meshes are loaded).

    Raises:
        FileNotFoundError: no file at ``path``.
        URDFError: the file cannot be parsed, a link has two parents, the joints form a
            cycle or more than one tree, a joint names a link that does not exist, a joint
            type is not supported (planar), a number is not finite, an axis has zero length,
            a lower limit is above the upper one, or an inertial is not physical (no mass,
            mass not positive, inertia not positive definite).
    """
    robot = _load(path)
    if not robot.links:
        raise URDFError(f"URDF {path} declares no <link>; a robot needs at least one")
    links = {}
    for link in robot.links:
        if link.name in links:
            raise URDFError(f"URDF {path}: two links are named '{link.name}'; link names must "
                            f"be unique")
        links[link.name] = _inertial(link)
    joints = [_joint(joint, links) for joint in robot.joints]
    root, ordered = _tree_order(joints, list(links), path)
    return RobotDescription(robot.name or "", root, links, tuple(ordered))


def _load(path):
    try:
        import yourdfpy
    except ImportError as exc:  # pragma: no cover - the optional extra is missing
        raise ImportError("from_urdf reads URDF files with yourdfpy: pip install "
                          "'mbmodel[urdf]' (or pip install yourdfpy)") from exc
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"from_urdf: no URDF file at '{path}'")
    try:
        model = yourdfpy.URDF.load(path, build_scene_graph=False,
                                   build_collision_scene_graph=False, load_meshes=False,
                                   load_collision_meshes=False)
    except Exception as exc:  # noqa: BLE001 - any parser failure is reported with the file
        raise URDFError(f"URDF {path}: yourdfpy cannot parse it ({type(exc).__name__}: "
                        f"{exc}); check that it is well-formed URDF XML") from exc
    return model.robot


def _finite(values, what):
    array = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(array)):
        raise URDFError(f"{what} = {array.round(12).tolist()} is not finite; give finite "
                        f"numbers in the URDF")
    return array


def _pose(origin, what):
    """(xyz, rotation) of an ``<origin>`` (yourdfpy's 4x4 matrix, ``None`` if absent)."""
    if origin is None:
        return np.zeros(3), np.eye(3)
    matrix = _finite(origin, f"{what} <origin>")
    return matrix[:3, 3].copy(), matrix[:3, :3].copy()


def _inertial(link) -> LinkInertial | None:
    """The link's mass properties in its own frame, checked; ``None`` without
    ``<inertial>``."""
    inertial = link.inertial
    if inertial is None:
        return None
    where = f"link '{link.name}'"
    if inertial.mass is None:
        raise URDFError(f"{where}: its <inertial> has no <mass>; add <mass value=\"...\"/> "
                        f"or remove the <inertial> of a massless link")
    if inertial.inertia is None:
        raise URDFError(f"{where}: its <inertial> has no <inertia>; add <inertia ixx=... "
                        f"izz=.../> or remove the <inertial> of a massless link")
    mass = float(_finite(inertial.mass, f"{where}: mass"))
    if not mass > 0:
        raise URDFError(f"{where}: mass {mass} is not positive; give a positive mass, or "
                        f"remove the <inertial> element of a massless link")
    inertia = _finite(inertial.inertia, f"{where}: inertia")
    moments = np.linalg.eigvalsh(inertia)
    if not moments[0] > 0:
        raise URDFError(
            f"{where}: the inertia tensor is not positive definite (principal moments "
            f"{moments.round(9).tolist()}); check ixx, iyy, izz and the signs of ixy, ixz, "
            f"iyz (URDF gives the products of inertia as entries of the tensor, i.e. "
            f"ixy = -integral(x y dm))")
    xyz, rotation = _pose(inertial.origin, f"{where}: <inertial>")
    return LinkInertial(mass, xyz, rotation @ inertia @ rotation.T)


def _joint(joint, links) -> JointDescription:
    where = f"joint '{joint.name}'"
    kind = joint.type
    if kind == "planar":
        raise URDFError(f"{where} is planar: planar joints are not supported; replace it by "
                        f"two prismatic joints and a revolute joint in series (with massless "
                        f"links between them)")
    if kind not in SUPPORTED_JOINTS:
        raise URDFError(f"{where} has type {kind!r}; supported types are "
                        f"{', '.join(SUPPORTED_JOINTS)}")
    for role, link in (("parent", joint.parent), ("child", joint.child)):
        if link not in links:
            raise URDFError(f"{where}: its {role} link '{link}' is not declared; add "
                            f"<link name=\"{link}\"/> or correct the name")
    xyz, rotation = _pose(joint.origin, where)
    axis = np.array([1.0, 0.0, 0.0]) if joint.axis is None else _finite(joint.axis,
                                                                         f"{where}: axis")
    if SUPPORTED_JOINTS[kind] == 1:
        norm = np.linalg.norm(axis)
        if not norm > 1e-12:
            raise URDFError(f"{where}: axis {axis.tolist()} has zero length; give a direction "
                            f"such as <axis xyz=\"0 0 1\"/>")
        axis = axis / norm
    return JointDescription(joint.name, kind, joint.parent, joint.child, xyz, rotation, axis,
                            _limits(joint, where))


def _limits(joint, where) -> dict:
    """The ``<limit>`` values given in the file (lower/upper only where they bound the
    motion: not for continuous joints, whose URDF limit has effort and velocity only)."""
    limit = joint.limit
    if limit is None or joint.type in ("fixed", "floating"):
        return {}
    names = LIMIT_NAMES if joint.type in ("revolute", "prismatic") else ("velocity", "effort")
    values = {name: float(_finite(getattr(limit, name), f"{where}: limit {name}"))
              for name in names if getattr(limit, name) is not None}
    for name in ("velocity", "effort"):
        if values.get(name, 0.0) < 0:
            raise URDFError(f"{where}: limit {name} = {values[name]} is negative; give the "
                            f"largest magnitude (a non-negative number)")
    if values.get("lower", -np.inf) > values.get("upper", np.inf):
        raise URDFError(f"{where}: limit lower = {values['lower']} is above upper = "
                        f"{values['upper']}; swap them")
    return values


def _tree_order(joints, link_names, path):
    """(root link, joints depth-first from it) of a URDF that is one tree, or a URDFError
    naming the links or joints that break it."""
    by_name, parent_joint = {}, {}
    for joint in joints:
        if joint.name in by_name:
            raise URDFError(f"URDF {path}: two joints are named '{joint.name}'; joint names "
                            f"must be unique")
        by_name[joint.name] = joint
        other = parent_joint.get(joint.child)
        if other is not None:
            raise URDFError(
                f"link '{joint.child}' has two parents: it is the child of joints "
                f"'{other.name}' and '{joint.name}'; a URDF is a tree (every link but the root "
                f"is the child of exactly one joint): remove one of the joints, or give it a "
                f"child link of its own")
        parent_joint[joint.child] = joint
    roots = [name for name in link_names if name not in parent_joint]
    if len(roots) > 1:
        raise URDFError(
            f"URDF {path}: the links form {len(roots)} separate trees with roots "
            f"{', '.join(map(repr, roots))}; connect them by joints so that one root link "
            f"remains")
    children = {name: [] for name in link_names}
    for joint in joints:
        children[joint.parent].append(joint)
    ordered, stack = [], list(reversed(children[roots[0]])) if roots else []
    while stack:
        joint = stack.pop()
        ordered.append(joint)
        stack.extend(reversed(children[joint.child]))
    if len(ordered) < len(joints):
        reached = {joint.name for joint in ordered}
        cycle = _cycle(parent_joint, [j for j in joints if j.name not in reached][0].child)
        raise URDFError(
            f"the joints {' -> '.join(repr(j.name) for j in cycle)} form a cycle (link "
            f"'{cycle[0].child}' is its own ancestor); a URDF is a tree: remove one of these "
            f"joints (a closed loop needs a constraint the URDF format cannot state)")
    return (roots[0] if roots else None), ordered


def _cycle(parent_joint, link):
    """The joints of the cycle reached by following parents from ``link``."""
    seen, chain = {}, []
    while link not in seen:
        seen[link] = len(chain)
        joint = parent_joint[link]
        chain.append(joint)
        link = joint.parent
    return list(reversed(chain[seen[link]:]))


# -- stage 2: names -----------------------------------------------------------------------------

def _identifier(name: str, prefix: str) -> str:
    """A Python identifier for a URDF name: characters other than ASCII letters, digits and
    ``_`` become ``_``; a name that would start with a digit or ``_``, be a keyword or hide
    an attribute of ``URDFModel`` gets ``prefix_`` in front."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", name)
    if (not ident or not ident[0].isalpha() or keyword.iskeyword(ident)
            or hasattr(URDFModel, ident)):
        ident = f"{prefix}_{ident}"
    return ident


def component_names(robot: RobotDescription, floating_base: bool = False,
                    actuated: bool = True) -> dict:
    """Component names of the model ``from_urdf`` builds, as ``{(role, urdf_name):
    identifier}`` with roles ``"link"`` (a ``Body``: links with an inertial,
    except the root of a fixed-base model, which is welded to the world), ``"joint"``,
    ``"origin"`` (a joint's placement in its parent link, if not the identity) and
    ``"drive"`` (the torque source of a moving joint, ``actuated=True``); plus
    ``("world", "")`` and, with ``floating_base``, ``("joint", ROOT_JOINT)``.

    Raises:
        URDFError: two components would get the same name (names differing only in
            characters that are not valid in identifiers, or a link and a joint with one
            name).
    """
    wanted = [("world", "", "world")]
    if floating_base:
        wanted.append(("joint", ROOT_JOINT, ROOT_JOINT))
    for link, inertial in robot.links.items():
        if inertial is not None and (floating_base or link != robot.root):
            wanted.append(("link", link, _identifier(link, "link")))
    joints = list(robot.joints)
    for joint in joints:
        ident = _identifier(joint.name, "joint")
        wanted.append(("joint", joint.name, ident))
        if joint.kind != "fixed" and (np.any(joint.xyz) or np.any(joint.rotation != np.eye(3))):
            wanted.append(("origin", joint.name, f"{ident}_origin"))
    if actuated:
        moving = [j.name for j in joints if j.kind != "fixed"] + ([ROOT_JOINT] if floating_base
                                                                   else [])
        for name in moving:
            wanted.append(("drive", name, f"{_identifier(name, 'joint')}_drive"))
    names, owner = {}, {}
    for role, urdf_name, ident in wanted:
        if ident in owner:
            first = owner[ident]
            raise URDFError(
                f"{_describe(first)} and {_describe((role, urdf_name))} would both be "
                f"named '{ident}' in the model; rename one of them in the URDF")
        owner[ident] = (role, urdf_name)
        names[(role, urdf_name)] = ident
    return names


def _describe(key) -> str:
    role, name = key
    return {"world": "the World component", "link": f"link '{name}'",
            "joint": f"joint '{name}'", "origin": f"the origin of joint '{name}'",
            "drive": f"the drive of joint '{name}'"}[role]


# -- stage 3: the model ------------------------------------------------------------------------

class _Limits:
    """Mix-in of the URDF joints: the ``<limit>`` values given in the file as parameters
    ``lower``, ``upper`` (position), ``velocity`` and ``effort`` (magnitudes). They are data
    for controllers and planners: no equation of the joint uses them."""

    limit_units: dict

    def __init__(self, limits=None, **modifiers):
        super().__init__(**modifiers)
        docs = {"lower": "Lower position limit (URDF <limit lower>)",
                "upper": "Upper position limit (URDF <limit upper>)",
                "velocity": "Largest speed (URDF <limit velocity>; not enforced)",
                "effort": "Largest joint force (URDF <limit effort>; not enforced)"}
        for name, value in (limits or {}).items():
            bound = 0.0 if name in ("velocity", "effort") else -np.inf
            setattr(self, name, Parameter(float(value), unit=self.limit_units[name],
                                          min=bound, doc=docs[name]))


class URDFRevolute(_Limits, Revolute):
    """A ``Revolute`` (URDF ``revolute`` or ``continuous``) with its URDF
    limits as parameters (see ``_Limits``)."""

    limit_units = {"lower": "rad", "upper": "rad", "velocity": "rad/s", "effort": "N.m"}


class URDFPrismatic(_Limits, Prismatic):
    """A ``Prismatic`` with its URDF limits as parameters."""

    limit_units = {"lower": "m", "upper": "m", "velocity": "m/s", "effort": "N"}


class RevoluteDrive(rotational.Torque):
    """Torque source on a revolute joint's axis flange; its torque ``tau`` is an input of the
    model compiled for the forward analysis (positive: accelerates the joint positively)."""

    tau = Variable(0.0, unit="N.m", input_in="forward", doc="Joint torque about the axis")


class PrismaticDrive(translational.Force):
    """Force source on a prismatic joint's axis flange; its force ``f`` is an input of the
    model compiled for the forward analysis (positive: along the axis)."""

    f = Variable(0.0, unit="N", input_in="forward", doc="Joint force along the axis")


class _SetForce(Force):
    """A ``Force`` whose force its owner sets (a plain variable)."""

    force = Variable(0.0, shape=3, unit="N", doc="Force on frame_b, resolved in frame_b")


class _SetTorque(Torque):
    """A ``Torque`` whose torque its owner sets (a plain variable)."""

    torque = Variable(0.0, shape=3, unit="N.m", doc="Torque on frame_b, resolved in frame_b")


class FreeDrive(Model):
    """Wrench of a free (floating) joint: ``force`` and ``torque`` (inputs of the model
    compiled for the forward analysis) act at frame_b's origin, resolved in frame_b; the
    opposite wrench acts on frame_a (the parent, or the world). This is Pinocchio's
    free-flyer joint torque ``[force; torque]`` (body frame)."""

    force = Variable(0.0, shape=3, unit="N", input_in="forward",
                     doc="Force on frame_b at its origin, resolved in frame_b")
    torque = Variable(0.0, shape=3, unit="N.m", input_in="forward",
                      doc="Torque on frame_b, resolved in frame_b")
    frame_a = Frame(doc="The parent side (takes the reaction)")
    frame_b = Frame(doc="The moved side")
    linear = _SetForce()
    angular = _SetTorque()

    def equations(self):
        yield self.linear.force == self.force
        yield self.angular.torque == self.torque
        yield mb.connect(self.frame_a, self.linear.frame_a, self.angular.frame_a)
        yield mb.connect(self.frame_b, self.linear.frame_b, self.angular.frame_b)


def _placement(xyz, rotation):
    """The fixed part for a joint origin: a FixedTranslation if the rotation is the
    identity, else a FixedRotation by the rotation's axis and angle."""
    from scipy.spatial.transform import Rotation

    rotvec = Rotation.from_matrix(rotation).as_rotvec()
    angle = float(np.linalg.norm(rotvec))
    if np.array_equal(rotation, np.eye(3)) or angle == 0.0:
        return FixedTranslation(r=list(map(float, xyz)))
    return FixedRotation(r=list(map(float, xyz)), n=list(rotvec / angle), angle=angle)


def _body(inertial: LinkInertial, check_triangle: bool) -> Body:
    I = inertial.inertia
    return Body(m=inertial.mass, r_CM=list(map(float, inertial.com)), I_11=I[0, 0],
                I_22=I[1, 1], I_33=I[2, 2], I_21=I[1, 0], I_31=I[2, 0], I_32=I[2, 1],
                check_triangle=check_triangle)


class URDFModel(Model):
    """A multibody model built from a URDF description (made by ``from_urdf``, which
    documents the components and names).

    Attributes (plain data): ``robot`` (the ``RobotDescription``), ``joint_names`` and
    ``link_names`` (URDF name -> component name; ``None`` for links without a body),
    ``floating_base`` and ``actuated``.
    """

    # class-level defaults: they also reserve these names (see _identifier)
    robot = None
    joint_names = None
    link_names = None
    floating_base = False
    actuated = True

    def __init__(self, robot: RobotDescription, *, floating_base: bool = False,
                 actuated: bool = True, gravity=(0.0, 0.0, -9.81), check_triangle: bool = True,
                 **modifiers):
        super().__init__(**modifiers)
        self.robot = robot
        self.floating_base = bool(floating_base)
        self.actuated = bool(actuated)
        names = component_names(robot, self.floating_base, self.actuated)
        g = _finite(gravity, "from_urdf: gravity")
        if g.shape != (3,):
            raise URDFError(f"from_urdf: gravity must be a 3-vector (m/s2, world frame), "
                            f"not {gravity!r}")
        norm = float(np.linalg.norm(g))
        self.world = (World(g=norm, n=list(g / norm)) if norm > 0
                      else World(gravity_type="none"))
        self.link_names = {link: names.get(("link", link)) for link in robot.links}
        self.joint_names = {joint.name: names[("joint", joint.name)] for joint in robot.joints}
        #: groups of (component, connector) to connect: plain data for equations()
        self._connections = []
        # what is connected at each link's frame (a list that grows as parts join it)
        nodes = {}
        if self.floating_base:
            self.joint_names = {ROOT_JOINT: ROOT_JOINT, **self.joint_names}
            world = [("world", "frame_b")]
            self._connections.append(world)
            nodes[robot.root] = [(ROOT_JOINT, "frame_b")]
            self._add_moving(names, ROOT_JOINT, "floating", None, world, nodes[robot.root])
        else:
            nodes[robot.root] = [("world", "frame_b")]
        for joint in robot.joints:
            parent = nodes[joint.parent]
            ident = names[("joint", joint.name)]
            if joint.kind == "fixed":
                self.add(ident, _placement(joint.xyz, joint.rotation))
                parent.append((ident, "frame_a"))
                nodes[joint.child] = [(ident, "frame_b")]
                continue
            origin = names.get(("origin", joint.name))
            if origin is None:
                base = parent
            else:
                self.add(origin, _placement(joint.xyz, joint.rotation))
                parent.append((origin, "frame_a"))
                base = [(origin, "frame_b")]
                self._connections.append(base)
            nodes[joint.child] = [(ident, "frame_b")]
            self._add_moving(names, joint.name, joint.kind, joint, base, nodes[joint.child])
        for link, inertial in robot.links.items():
            body = self.link_names[link]
            if body is not None:
                self.add(body, _body(inertial, check_triangle))
                nodes[link].append((body, "frame_a"))
        self._connections.extend(group for group in nodes.values() if len(group) > 1)
        if self.actuated:
            _warn_massless(robot, self.floating_base)

    def _add_moving(self, names, name, kind, joint, base, child):
        """The moving joint ``name`` (and its drive if actuated): its frame_a joins the
        connection group ``base``, its frame_b is already in ``child`` (the child link's)."""
        ident = names[("joint", name)]
        limits = {} if joint is None else joint.limits
        if kind == "floating":
            self.add(ident, FreeMotion())
        elif kind == "prismatic":
            self.add(ident, URDFPrismatic(limits=limits, n=list(joint.axis),
                                          use_axis_flange=self.actuated))
        else:
            self.add(ident, URDFRevolute(limits=limits, n=list(joint.axis),
                                         use_axis_flange=self.actuated))
        base.append((ident, "frame_a"))
        if not self.actuated:
            return
        drive = names[("drive", name)]
        if kind == "floating":
            self.add(drive, FreeDrive())
            base.append((drive, "frame_a"))
            child.append((drive, "frame_b"))
        else:
            self.add(drive, PrismaticDrive() if kind == "prismatic" else RevoluteDrive())
            self._connections.append([(drive, "flange"), (ident, "axis")])

    def equations(self):
        if self.actuated and self.analysis == "inverse":
            raise URDFError(
                f"the model of URDF robot '{self.robot.name}' was built with actuated=True "
                f"(torque sources on the joints, for forward dynamics); for "
                f"analysis='inverse' build it with from_urdf(path, actuated=False): joint "
                f"motions are then inputs and joint forces outputs")
        for group in self._connections:
            yield mb.connect(*(getattr(getattr(self, component), connector)
                               for component, connector in group))


def _warn_massless(robot: RobotDescription, floating_base: bool):
    """Warn about moving joints that move no mass: their forward dynamics is singular."""
    subtree = {link: (inertial.mass if inertial is not None else 0.0)
               for link, inertial in robot.links.items()}
    for joint in reversed(robot.joints):  # children before parents
        subtree[joint.parent] += subtree[joint.child]
    empty = [j.name for j in robot.joints if j.kind != "fixed" and subtree[j.child] == 0.0]
    if floating_base and subtree[robot.root] == 0.0:
        empty.insert(0, ROOT_JOINT)
    if empty:
        warnings.warn(f"URDF robot '{robot.name}': joint(s) {', '.join(map(repr, empty))} move "
                      f"no mass (no link behind them has an <inertial>); their forward "
                      f"dynamics is singular (inverse dynamics is fine)", stacklevel=3)


def from_urdf(path, *, floating_base: bool = False, actuated: bool = True,
              gravity=(0.0, 0.0, -9.81), check_triangle: bool = True) -> URDFModel:
    """A multibody model of the robot in the URDF file at ``path``.

    Parameters:
        path: the URDF file (meshes and other geometry are not loaded).
        floating_base: put a free joint (``FreeMotion``, named ``root_joint``)
            between the world and the root link, like
            ``pinocchio.buildModelFromUrdf(path, pinocchio.JointModelFreeFlyer())``;
            otherwise the root link is welded to the world (its inertial then has no effect
            and gets no body).
        actuated: a torque (force) source on every moving joint whose value is an input of
            the model compiled for forward dynamics. Build with ``actuated=False`` for
            ``analysis="inverse"`` (prescribed joint motion in, joint forces out) or for a
            passive mechanism.
        gravity: the gravity vector in the world frame (m/s2). URDF's convention (and
            Pinocchio's default) is z up: ``(0, 0, -9.81)``. It sets the ``World``'s ``g``
            and ``n``; a zero vector means no gravity.
        check_triangle: reject inertias whose principal moments violate the triangle
            inequality (passed to every ``Body``; ``False`` accepts such
            lumped data).

    Returns:
        A ``URDFModel``. Components, named after the URDF names turned into Python
        identifiers (other characters become ``_``; a name starting with a digit or ``_``
        or hiding a model attribute gets a ``link_``/``joint_`` prefix):

        * ``world``: a ``World`` with the gravity above;
        * ``<link>``: a ``Body`` at the link frame for each link with an
          ``<inertial>`` (mass, centre of mass and inertia resolved in the link frame);
          links without one are massless and get no component;
        * ``<joint>``: ``revolute`` and ``continuous`` joints are ``URDFRevolute``,
          ``prismatic`` ones ``URDFPrismatic`` (the library's ``Revolute`` and
          ``Prismatic`` about the normalised URDF axis), ``floating`` ones
          ``FreeMotion``, ``fixed`` ones a ``FixedRotation`` (or
          ``FixedTranslation``) that is the joint's origin;
        * ``<joint>_origin``: the placement of a moving joint in its parent link (``xyz``,
          ``rpy``), a ``FixedRotation`` or ``FixedTranslation``, if not the identity;
        * ``<joint>_drive`` (``actuated=True``): ``RevoluteDrive`` (input
          ``<joint>_drive.tau``), ``PrismaticDrive`` (input ``<joint>_drive.f``) or,
          for free joints, ``FreeDrive`` (inputs ``<joint>_drive.force`` and
          ``<joint>_drive.torque``, resolved in the child link frame).

        Joint variables: revolute ``<joint>.phi``, ``.w``, ``.a``, ``.tau``; prismatic
        ``.s``, ``.v``, ``.a``, ``.f``. In the forward analysis the positions and speeds are
        the states and the accelerations outputs; in the inverse analysis (``actuated=False``)
        positions, speeds and accelerations are inputs and ``.tau``/``.f`` outputs.
        Free joints follow Pinocchio's free-flyer with the angular and linear parts in
        the library's order: ``r_rel`` = position of the child frame in the parent frame
        (Pinocchio ``q[0:3]``), ``Q`` = quaternion ``[x, y, z, w]`` of the child frame's
        orientation (``q[3:7]``), ``v_rel`` and ``w_rel`` = linear and angular velocity
        resolved in the child frame (``v[0:3]``, ``v[3:6]``), ``a_rel``, ``z_rel`` their
        derivatives (``a[0:3]``, ``a[3:6]``), ``tau`` = ``[torque; force]`` (Pinocchio's
        ``[force; torque]`` swapped).

        The ``<limit>`` values become parameters of the joint: ``<joint>.lower``,
        ``<joint>.upper`` (revolute, prismatic), ``<joint>.velocity``, ``<joint>.effort``
        (those given in the file). They are not enforced.

    Ignored: ``<dynamics>`` (damping and friction; Pinocchio's ``aba`` and ``rnea`` ignore
    them too), ``<mimic>`` (the joint keeps its own coordinate), ``<calibration>``,
    ``<safety_controller>``, ``<transmission>``, ``<gazebo>``, visual and collision
    geometry.

    Raises:
        FileNotFoundError: no file at ``path``.
        URDFError: (a ``DeclarationError``) the URDF is not a tree (a link
            with two parents, a cycle, separate trees), has a planar or unknown joint type,
            a non-finite number, a zero axis, a mass that is not positive, an inertia that
            is not positive definite (or violates the triangle inequality, unless
            ``check_triangle=False``), or two links/joints whose names become one
            identifier. Each message names the link or joint and what to change.

    Example::

        import mbmodel as mb
        import mbmodel.libraries.multibody as mbl

        forward = mb.compile(mbl.from_urdf("arm.urdf"))          # inputs: <joint>_drive.tau
        inverse = mb.compile(mbl.from_urdf("arm.urdf", actuated=False), analysis="inverse")
        humanoid = mbl.from_urdf("humanoid.urdf", floating_base=True)
    """
    robot = read_urdf(path)
    if check_triangle:
        _check_triangles(robot)
    return URDFModel(robot, floating_base=floating_base, actuated=actuated, gravity=gravity,
                     check_triangle=check_triangle)


def _check_triangles(robot: RobotDescription):
    for link, inertial in robot.links.items():
        if inertial is None:
            continue
        a, b, c = np.linalg.eigvalsh(inertial.inertia)
        if a + b < c * (1 - 1e-9):
            raise URDFError(
                f"link '{link}': principal moments of inertia {[a, b, c]} violate the "
                f"triangle inequality (I1 + I2 >= I3): no mass distribution has them; correct "
                f"the inertia, or pass from_urdf(..., check_triangle=False) to accept lumped "
                f"data that is non-physical on purpose")
