"""Forward and inverse dynamics in joint space: ``q, qd, tau -> qdd`` and ``q, qd, qdd -> tau``
as numpy vectors in joint order, the way Pinocchio's ``aba`` and ``rnea`` take them.

:class:`JointSpace` wraps a compiled multibody model (plain data in, plain data out): it
reads the joints from the compiled model's names, never from the model objects, so it
works on a model loaded with :func:`mbmodel.load` as well. Names, stated once:

* a revolute joint ``J`` has the coordinate ``J.phi``, speed ``J.w``, acceleration ``J.a``
  and driving torque ``J.tau``; a prismatic joint ``J.s``, ``J.v``, ``J.a`` and ``J.f``;
* forward analysis (``mb.compile(model)``): the coordinates and speeds are the states; the
  driving torque is an input, ``J.tau`` of a joint with ``actuated=True`` or
  ``J_drive.tau`` of the drive that :func:`~.urdf.from_urdf` puts on it (``.f`` for
  prismatic joints). Joints without one are passive: their entry of ``tau`` must be zero;
* inverse analysis (``analysis="inverse"``): coordinates, speeds and accelerations are
  inputs, the driving torques outputs.

Spherical and free joints (quaternion coordinates) and states that are not joint
coordinates (drive-train inertias, ...) have no place in these vectors: for such models use
the compiled model's names (``cm.state_vector``, ``cm.input_vector``, ``cm.evaluator``).

Example::

    import mbmodel as mb
    import mbmodel.libraries.multibody as mbl

    fd = mbl.JointSpace(mb.compile(robot))                         # joints actuated=True
    qdd = fd.forward(q, qd, tau)                                   # like pinocchio.aba
    rnea = mbl.JointSpace(mb.compile(robot, analysis="inverse"))
    tau = rnea.inverse(q, qd, qdd)                                 # like pinocchio.rnea
    rnea.named(tau)                                                # {"joint1": ..., ...}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from mbmodel.errors import DeclarationError

__all__ = ["JointSpace", "JointNames", "joint_names"]

#: (coordinate, speed, acceleration, driving force) of the one-coordinate joints.
COORDINATES = {"revolute": ("phi", "w", "a", "tau"), "prismatic": ("s", "v", "a", "f")}
#: Suffix of the drive component ``from_urdf`` puts on a joint (its input ``<joint>_drive.tau``).
DRIVE_SUFFIX = "_drive"


@dataclass(frozen=True)
class JointNames:
    """The compiled model's names of one joint: ``joint`` (component path), ``kind``
    (``"revolute"`` or ``"prismatic"``), ``q``, ``qd``, ``qdd`` (its coordinate, speed and
    acceleration variables), ``force`` (the driving torque or force variable) and ``input``
    (the model input that sets it in the forward analysis, or ``None``).

    Example: ``JointNames("elbow", "revolute", "elbow.phi", "elbow.w", "elbow.a",
    "elbow.tau", "elbow.tau")``"""

    joint: str
    kind: str
    q: str
    qd: str
    qdd: str
    force: str
    input: str | None = None


def _split(name: str):
    head, _, tail = name.rpartition(".")
    return head, tail


def joint_names(cm) -> tuple[str, list[JointNames], list[str]]:
    """``(analysis, joints, others)`` of a compiled multibody model: ``"forward"`` or
    ``"inverse"``, its revolute and prismatic joints in model order, and the names of
    spherical or free joints found (quaternion coordinates ``<joint>.Q[k]``).

    Raises:
        DeclarationError: the model has neither joint coordinates as states (forward) nor
            prescribed joint motion as inputs (inverse).

    Example::

        analysis, joints, others = joint_names(mb.compile(arm))
        [j.q for j in joints]          # ["shoulder.phi", "elbow.phi"]
    """
    names = set(cm.output_names) | set(cm.inputs) | set(cm.states)
    others = sorted({name.split(".Q[")[0] for name in list(cm.states) + list(cm.inputs)
                     if ".Q[" in name
                     and f"{name.split('.Q[')[0]}.w_rel[0]" in names})
    if cm.states:
        candidates, where = cm.states, set(cm.states)
        analysis = "forward"
    else:
        candidates, where = cm.inputs, set(cm.inputs)
        analysis = "inverse"
    joints, seen = [], set()
    for name in candidates:
        joint, tail = _split(name)
        if not joint or joint in seen:
            continue
        for kind, (q, qd, qdd, force) in COORDINATES.items():
            if tail != q:
                continue
            needed = [f"{joint}.{qd}"] + ([f"{joint}.{qdd}"] if analysis == "inverse" else [])
            if not all(n in where for n in needed) or f"{joint}.{force}" not in names:
                continue
            drive = None
            if analysis == "forward":
                for candidate in (f"{joint}.{force}", f"{joint}{DRIVE_SUFFIX}.{force}"):
                    if candidate in cm.inputs:
                        drive = candidate
                        break
            seen.add(joint)
            joints.append(JointNames(joint, kind, f"{joint}.{q}", f"{joint}.{qd}",
                                     f"{joint}.{qdd}", f"{joint}.{force}", drive))
    if not joints and not others:
        raise DeclarationError(
            f"model {cm.name} has no revolute or prismatic joint coordinates as states "
            f"(forward analysis: <joint>.phi, <joint>.w) or as inputs (inverse analysis: "
            f"<joint>.phi, <joint>.w, <joint>.a); JointSpace needs a multibody model compiled "
            f"with mb.compile(model) or mb.compile(model, analysis='inverse')")
    return analysis, joints, others


def _with_torques(cm, analysis, found, torques):
    """``found`` with the torque inputs given by name (see :class:`JointSpace`)."""
    by_name = {j.joint: j for j in found}
    if analysis != "forward":
        raise DeclarationError("JointSpace: torques=... names the torque inputs of a forward "
                               "model; an inverse model gives the torques as outputs")
    unknown = [j for j in torques if j not in by_name]
    if unknown:
        raise DeclarationError(f"JointSpace: torques names {', '.join(map(str, unknown))}, not "
                               f"joints of {cm.name} ({', '.join(by_name)})")
    missing = [u for u in torques.values() if u not in cm.inputs]
    if missing:
        raise DeclarationError(f"JointSpace: {', '.join(map(str, missing))} are not inputs of "
                               f"{cm.name}; its inputs are {', '.join(cm.inputs)}")
    return [replace(j, input=torques[j.joint]) if j.joint in torques else j for j in found]


class JointSpace:
    """Forward or inverse dynamics of a compiled multibody model with vectors in joint order.

    Parameters:
        cm: a :class:`~mbmodel.CompiledModel` of a multibody model whose moving
            joints are revolute or prismatic: compiled for the forward analysis (joints with
            ``actuated=True``, or a URDF model from ``from_urdf``) for :meth:`forward`, or
            for ``analysis="inverse"`` for :meth:`inverse`.
        joints: the joints' component paths in the order wanted (all of the model's);
            default: model order (declaration order, depth-first for URDF models).
        params: parameter values (name -> number) that differ from the model's defaults.
        torques: ``{joint: input name}`` for joints driven by another input than the
            ones recognised (``<joint>.tau``, ``<joint>_drive.tau``), e.g. a torque source
            on the axis flange fed by a top-level input ``u1`` (forward analysis).
        native: evaluate in generated C (``cm.evaluator``), else in casadi's virtual
            machine.

    Attributes: ``joints`` (paths, the order of every vector), ``analysis``
    (``"forward"`` or ``"inverse"``), ``names`` (:class:`JointNames` per joint),
    ``inputs`` (the forward model's inputs that are not joint torques: give them to
    :meth:`forward` by name). Like :class:`mbmodel.native.Evaluator` it owns its buffers:
    give each thread its own.

    Raises:
        DeclarationError: the model has spherical or free joints (their quaternion
            coordinates do not fit a vector in joint order: use the model's names), states
            that are not joint coordinates, a forward model has no joint torque inputs, or
            ``joints`` does not list each of the model's joints once.

    Example::

        js = JointSpace(mb.compile(arm))
        qdd = js.forward([0.1, 0.2], [0.0, 0.0], [1.0, -0.5])
        js.named(qdd)          # {"shoulder": ..., "elbow": ...}
    """

    def __init__(self, cm, joints=None, params: dict | None = None,
                 torques: Mapping | None = None, native: bool = True):
        self.cm = cm
        self.analysis, found, others = joint_names(cm)
        if torques:
            found = _with_torques(cm, self.analysis, found, torques)
        if others:
            raise DeclarationError(
                f"JointSpace: model {cm.name} has spherical or free joints "
                f"({', '.join(others)}), whose quaternion coordinates and 3- or 6-vectors of "
                f"speeds do not fit a vector in joint order; use the compiled model's names "
                f"instead: cm.state_vector({{'{others[0]}.Q[0]': ...}}), cm.input_vector(...), "
                f"cm.evaluator(...) and cm.named(...)")
        by_name = {j.joint: j for j in found}
        if joints is None:
            order = [j.joint for j in found]
        else:
            order = [str(j) for j in joints]
            unknown = [j for j in order if j not in by_name]
            if unknown:
                raise DeclarationError(
                    f"JointSpace: model {cm.name} has no revolute or prismatic joint "
                    f"{', '.join(unknown)}; its joints are {', '.join(by_name)}")
            missing = [j for j in by_name if j not in order]
            twice = sorted({j for j in order if order.count(j) > 1})
            if missing or twice:
                raise DeclarationError(
                    f"JointSpace: list each joint of {cm.name} once"
                    + (f"; missing: {', '.join(missing)}" if missing else "")
                    + (f"; twice: {', '.join(twice)}" if twice else ""))
        self.joints = order
        self.names = [by_name[j] for j in order]
        self._p = cm.parameter_vector(params)
        if self.analysis == "forward":
            self._setup_forward(native)
        else:
            self._setup_inverse(native)

    # -- set-up ------------------------------------------------------------------------------
    def _setup_forward(self, native):
        cm = self.cm
        covered = {n for j in self.names for n in (j.q, j.qd)}
        extra = [s for s in cm.states if s not in covered]
        if extra:
            raise DeclarationError(
                f"JointSpace: model {cm.name} has states that are not coordinates of a "
                f"revolute or prismatic joint ({', '.join(extra[:6])}"
                f"{', ...' if len(extra) > 6 else ''}: a drive train, a flexible element or a "
                f"joint on a kinematic loop); use cm.state_vector, cm.evaluator and cm.named "
                f"with names for such models")
        if not any(j.input for j in self.names):
            raise DeclarationError(
                f"JointSpace: forward model {cm.name} has no joint torque inputs; declare the "
                f"joints with actuated=True (inputs <joint>.tau, <joint>.f), build a URDF "
                f"model with from_urdf(path) (inputs <joint>_drive.tau), or name the inputs "
                f"that drive the joints with torques={{joint: input}}; a passive model's "
                f"accelerations are cm.evaluator()(x)")
        state = {s: i for i, s in enumerate(cm.states)}
        inputs = {u: i for i, u in enumerate(cm.inputs)}
        self._iq = np.array([state[j.q] for j in self.names], dtype=int)
        self._iqd = np.array([state[j.qd] for j in self.names], dtype=int)
        actuated = [k for k, j in enumerate(self.names) if j.input]
        self._actuated = np.array(actuated, dtype=int)
        self._iu = np.array([inputs[self.names[k].input] for k in actuated], dtype=int)
        self._passive = np.array([k for k in range(len(self.names)) if not self.names[k].input],
                                 dtype=int)
        used = {self.names[k].input for k in actuated}
        self.inputs = [u for u in cm.inputs if u not in used]
        self._x = np.array(cm.start, dtype=float)
        self._u = np.zeros(len(cm.inputs))
        self._evaluate = cm.evaluator(native=native)

    def _setup_inverse(self, native):
        cm = self.cm
        if cm.states:  # pragma: no cover - joint_names calls a model with states forward
            raise DeclarationError(f"JointSpace: inverse model {cm.name} has states")
        inputs = {u: i for i, u in enumerate(cm.inputs)}
        covered = {n for j in self.names for n in (j.q, j.qd, j.qdd)}
        extra = [u for u in cm.inputs if u not in covered]
        if extra:
            raise DeclarationError(
                f"JointSpace: inverse model {cm.name} has inputs that are not the motion of a "
                f"revolute or prismatic joint ({', '.join(extra[:6])}"
                f"{', ...' if len(extra) > 6 else ''}); use cm.input_vector and cm.evaluator "
                f"with names for such models")
        self._iq = np.array([inputs[j.q] for j in self.names], dtype=int)
        self._iqd = np.array([inputs[j.qd] for j in self.names], dtype=int)
        self._iqdd = np.array([inputs[j.qdd] for j in self.names], dtype=int)
        self.inputs = []
        self._u = np.zeros(len(cm.inputs))
        self._evaluate = cm.evaluator([j.force for j in self.names], native=native)

    # -- vectors -----------------------------------------------------------------------------
    def _vector(self, values, what) -> np.ndarray:
        """``values`` (a sequence in joint order, or joint -> value) as a vector."""
        if type(values) is np.ndarray and values.shape == (len(self.joints),):
            return values  # the common case, without conversions
        if isinstance(values, Mapping):
            unknown = [k for k in values if k not in self.joints]
            missing = [j for j in self.joints if j not in values]
            if unknown or missing:
                raise ValueError(
                    f"{what}: give a value for each joint ({', '.join(self.joints)})"
                    + (f"; unknown: {', '.join(map(str, unknown))}" if unknown else "")
                    + (f"; missing: {', '.join(missing)}" if missing else ""))
            values = [values[j] for j in self.joints]
        vector = np.asarray(values, dtype=float).reshape(-1)
        if vector.shape != (len(self.joints),):
            raise ValueError(f"{what}: {vector.size} values for the {len(self.joints)} joints "
                             f"{', '.join(self.joints)}")
        return vector

    def named(self, vector) -> dict:
        """``{joint: value}`` for a vector in joint order (``q``, ``qdd``, ``tau``, ...).

        Example: ``js.named(js.forward(q, qd, tau))`` -> ``{"joint1": 0.3, ...}``"""
        return dict(zip(self.joints, self._vector(vector, "named").tolist()))

    # -- dynamics ----------------------------------------------------------------------------
    def forward(self, q, qd, tau, inputs: Mapping | None = None) -> np.ndarray:
        """Joint accelerations ``qdd`` for positions ``q``, speeds ``qd`` and driving
        torques/forces ``tau`` (each in joint order, or a mapping joint -> value); like
        ``pinocchio.aba``. ``inputs``: values of the model's other inputs (``self.inputs``,
        by name). Returns a new array in joint order.

        Raises:
            DeclarationError: the model was compiled for the inverse analysis.
            ValueError: a vector has the wrong length, a passive joint (no torque input)
                gets a nonzero ``tau``, or an other input is not given.

        Example: ``qdd = js.forward([0.1, 0.2], [0.0, 0.0], [1.0, -0.5])``
        """
        if self.analysis != "forward":
            raise DeclarationError(
                f"JointSpace.forward: model {self.cm.name} is compiled for the inverse "
                f"analysis; use inverse(q, qd, qdd), or compile the model with "
                f"mb.compile(model) and actuated joints for forward dynamics")
        q, qd, tau = (self._vector(v, w) for v, w in ((q, "q"), (qd, "qd"), (tau, "tau")))
        if len(self._passive) and np.any(tau[self._passive]):
            bad = [self.joints[k] for k in self._passive if tau[k]]
            raise ValueError(f"JointSpace.forward: joint(s) {', '.join(bad)} have no torque "
                             f"input (passive); give them tau = 0, or declare them "
                             f"actuated=True")
        if inputs or self.inputs:
            self._other_inputs(inputs or {})
        self._x[self._iq] = q
        self._x[self._iqd] = qd
        self._u[self._iu] = tau[self._actuated]
        return self._evaluate(self._x, self._u, self._p)[self._iqd]  # a new array

    def _other_inputs(self, given):
        unknown = [k for k in given if k not in self.inputs]
        missing = [k for k in self.inputs if k not in given]
        if unknown or missing:
            raise ValueError(
                "JointSpace.forward: "
                + (f"the model's other inputs {', '.join(missing)} need values (inputs="
                   f"{{name: value}}); " if missing else "")
                + (f"{', '.join(map(str, unknown))} are not other inputs of the model "
                   f"(those are: {', '.join(self.inputs) or 'none'})" if unknown else ""))
        index = {u: i for i, u in enumerate(self.cm.inputs)}
        for name, value in given.items():
            self._u[index[name]] = float(value)

    def inverse(self, q, qd, qdd) -> np.ndarray:
        """Driving torques/forces ``tau`` for positions ``q``, speeds ``qd`` and
        accelerations ``qdd`` (each in joint order, or a mapping joint -> value); like
        ``pinocchio.rnea``. Returns a new array in joint order.

        Raises:
            DeclarationError: the model was compiled for the forward analysis.
            ValueError: a vector has the wrong length.

        Example: ``tau = js.inverse([0.1, 0.2], [0.0, 0.0], [1.0, 0.0])``
        """
        if self.analysis != "inverse":
            raise DeclarationError(
                f"JointSpace.inverse: model {self.cm.name} is compiled for the forward "
                f"analysis; compile it with analysis='inverse' (joints without actuated "
                f"drives, e.g. from_urdf(path, actuated=False)) for inverse dynamics")
        q, qd, qdd = (self._vector(v, w) for v, w in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
        self._u[self._iq] = q
        self._u[self._iqd] = qd
        self._u[self._iqdd] = qdd
        return self._evaluate(None, self._u, self._p).copy()

    def __repr__(self):
        return (f"<JointSpace {self.analysis} {self.cm.name}: {len(self.joints)} joints "
                f"({', '.join(self.joints[:6])}{', ...' if len(self.joints) > 6 else ''})>")
