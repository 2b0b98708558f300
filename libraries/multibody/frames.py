"""The Frame connector and what multibody components share.

A :class:`Frame` is a coordinate system fixed to a part. Across (potential) variables:

* ``r_0`` — position of the origin, resolved in the world frame (m);
* ``R`` — orientation ``T`` (3x3): ``T`` maps world coordinates to frame coordinates. It is
  overdetermined (9 entries, 3 degrees of freedom): the connection graph equates it along a
  spanning tree whose roots are the :class:`~.parts.World` and :class:`~.parts.Fixed` frames;
  rigid parts and joints are branches of that tree;
* ``v`` — spatial velocity ``[w; v]``: angular velocity and velocity of the origin, resolved
  in the frame;
* ``a`` — acceleration ``[dw/dt; a_o]`` resolved in the frame, *minus gravity*: the world's
  acceleration is ``[0; -g]``, so uniform gravity acts on every body without a single extra
  operation per body. ``a_o`` is what each algorithm propagates most cheaply:

  - forward analysis: the *spatial* ``dv/dt`` (derivatives of the components of ``v``), with
    which rigid offsets add nothing to the articulated-body bias; the classical acceleration
    of the origin is ``a[3:] + w x v[3:] + T g``;
  - inverse analysis: the *classical* acceleration of the origin ``a[3:] + T g``, with which
    recursive Newton–Euler needs no linear velocities (an offset r adds ``z x r + w x (w x r)``
    and a revolute joint's rotation nothing);

  sensors report the classical acceleration either way (:func:`classical_acceleration`).

Through (flow) variables depend on the analysis the model is compiled for
(:func:`mbmodel.compile`):

* ``analysis="inverse"``: ``f`` and ``t``, the cut force and torque acting on the component
  at the frame, resolved in the frame (the MSL connector). Bodies state ``[t; f] = I a + b``
  and joints pass forces to their parent: sorting gives recursive Newton–Euler.
* ``analysis="forward"``: ``I`` (21 packed entries of a symmetric 6x6 matrix) and ``b``
  (6): the force on the component is the affine law ``[t; f] = I a + b``. Summing ``I`` and
  ``b`` in a connection accumulates articulated inertias; joints propagate them to the
  parent: sorting gives the articulated-body algorithm, O(n) in the number of bodies.

Sign convention: all flows are positive *into* the component (Modelica).
"""

from __future__ import annotations

import casadi as ca
import numpy as np

import mbmodel as mb
from mbmodel import Connector, Flow, Overdetermined, Potential
from mbmodel.errors import ParameterError

from . import spatial as sp


class Frame(Connector):
    """Coordinate system fixed to a component (see the module documentation)."""

    r_0 = Potential(shape=3, unit="m", doc="Position of the origin, resolved in world")
    R = Overdetermined(residue=None, residue_size=3, shape=(3, 3), start=np.eye(3),
                       doc="Orientation T: world coordinates -> frame coordinates")
    v = Potential(shape=6, doc="Spatial velocity [w; v] resolved in the frame")
    a = Potential(shape=6, doc="Spatial acceleration minus gravity, resolved in the frame")
    f = Flow(shape=3, unit="N", analysis="inverse", doc="Cut force resolved in the frame")
    t = Flow(shape=3, unit="N.m", analysis="inverse", doc="Cut torque resolved in the frame")
    I = Flow(shape=21, analysis="forward",
             doc="Articulated inertia of the affine cut force law (21 packed entries)")
    b = Flow(shape=6, analysis="forward", doc="Bias of the affine cut force law [t; f]")

    def loop_closure(self, other, cut):
        """A connection that closes a kinematic loop: the frames coincide and a constraint
        force keeps them together (:mod:`~mbmodel.libraries.multibody.loops`)."""
        from .loops import closure_equations
        return closure_equations(self, other, cut)


def cut_force(frame) -> ca.SX:
    """``[t; f]`` of a frame (inverse analysis)."""
    return ca.vertcat(frame.t, frame.f)


def world_of(component):
    """The model's :class:`~.parts.World` (the unique one anywhere in the model), or the
    default world (uniform gravity 9.81 m/s² along -y) if the model declares none."""
    from .parts import World, DefaultWorld
    found = component.instances_in_model(World)
    if len(found) > 1:
        raise mb.DeclarationError(
            f"the model has {len(found)} World components ({', '.join(w.path for w in found)}); "
            f"declare exactly one (use Fixed for further ground points)")
    if found:
        return found[0]
    return component.model_cache().setdefault("multibody default world", DefaultWorld())


def alone_at(asking, frame):
    """Inside ``equations()``: the one connector of another component that ``frame`` meets
    (no loop cut there), or ``None``; ``asking`` is the component whose equations ask
    (:meth:`mbmodel.Model.connected`)."""
    others = asking.connected(frame)
    if len(others) != 1 or asking.loop_cut_side(frame) is not None:
        return None
    return others[0]


def numeric_value(component, name):
    """A parameter's numeric value, or None if it is bound to an expression."""
    value = component.declaration(name).value
    if isinstance(value, (ca.SX, ca.MX)):
        return None
    return np.asarray(value, dtype=float)


def evaluate_at_declared_values(component, expressions, what):
    """``expressions`` (SX of ``component``'s own parameters) as numpy arrays at the
    parameters' declared values: what a component exposes as numbers (a body's mass
    properties). ``what`` names the quantity in the error raised when a parameter it needs
    is bound to an expression of other parameters (whose value is known only once the model
    is compiled).

    Example: ``m, c, I_c = evaluate_at_declared_values(body, body.mass_properties(),
    "mass properties")``"""
    symbols, values, bound = [], [], {}
    for name, member in component.members().items():
        if not isinstance(member, mb.Parameter):
            continue
        symbol = ca.vec(member.symbol)
        if isinstance(member.value, (ca.SX, ca.MX)):
            for k in range(symbol.numel()):
                bound[symbol[k].element_hash()] = (name, member.value)
            continue
        symbols.append(symbol)
        values.append(ca.DM(np.asarray(member.value, dtype=float).reshape(-1, order="F")))
    known = ca.vertcat(*symbols) if symbols else ca.SX(0, 1)
    numbers = ca.vertcat(*values) if values else ca.DM(0, 1)
    out = []
    for expr in expressions:
        expr = ca.substitute(ca.SX(expr), known, ca.SX(numbers))
        free = ca.symvar(expr)
        if free:
            culprits = {}
            for s in free:
                name, binding = bound.get(s.element_hash(), (str(s), "?"))
                culprits[name] = binding
            shown = ", ".join(f"{n} = {b}" for n, b in sorted(culprits.items()))
            raise ParameterError(
                f"{type(component).__name__} '{component.path or '(top level)'}': its {what} "
                f"can be evaluated only from numeric parameter values, but {shown} is bound "
                f"to an expression of other parameters; give it a number")
        out.append(np.array(ca.evalf(expr), dtype=float))
    return out


def check_axis(component, name="n"):
    """A numeric axis parameter of zero length is an error (:class:`ParameterError`)."""
    value = numeric_value(component, name)
    if value is not None and not np.linalg.norm(value) > 1e-12:
        raise ParameterError(
            f"{type(component).__name__} '{component.path}': axis {name} = {value.ravel().tolist()} "
            f"has zero length; give a direction such as (0, 0, 1)")


def unit_axis(component, name="n"):
    """The unit vector of an axis parameter; a zero-length numeric axis is an error."""
    check_axis(component, name)
    # Always symbolic: the axis stays a tunable parameter (it folds to constants when the
    # model is compiled with parameters="constant").
    n = sp.vec(getattr(component, name))
    return n / ca.sqrt(n.T @ n)


def axis_check(component, name="n"):
    """``mb.Assert`` that the axis parameter has non-zero length (checked again when the
    parameter changes at run time)."""
    n = sp.vec(getattr(component, name))
    return mb.Assert(n.T @ n > 0, f"axis {name} has zero length; give a direction such as "
                                  f"(0, 0, 1)")


def rigid_kinematics(frame_a, frame_b, E=None, r=None, U=None):
    """Equations of ``frame_b`` fixed to ``frame_a`` (rotation E, offset r resolved in a;
    ``U``: frame_a's :func:`.spatial.point_acceleration_matrix` if the caller has it)."""
    if r is None:
        yield frame_b.r_0 == frame_a.r_0
    else:
        yield frame_b.r_0 == frame_a.r_0 + frame_a.R.T @ r
    yield frame_b.R == (frame_a.R if E is None else E @ frame_a.R)
    yield frame_b.v == sp.motion_to_child(frame_a.v, E, r)
    if classical_accelerations(frame_a.owner):
        yield frame_b.a == sp.acceleration_to_child(frame_a.a, frame_a.v[0:3], E, r, U)
    else:
        yield frame_b.a == sp.motion_to_child(frame_a.a, E, r)


def rigid_forces(component, frame_a, frame_b, E=None, r=None, body=None, U=None):
    """Flow equations of a rigid part from ``frame_a`` to ``frame_b``, optionally carrying
    ``body`` (a rigid body at frame_a: its ``body_terms`` in the forward analysis, its
    ``body_force`` in the inverse one). ``frame_b=None``: nothing passes through frame_b
    (what hangs there is part of ``body``, see :func:`.parts.attached_body`). ``U``:
    frame_a's :func:`.spatial.point_acceleration_matrix`, handed to the body (inverse)."""
    if body is not None:
        yield from body.parameter_checks()
    if component.analysis == "forward":
        I_a, b_a = ca.SX.zeros(6, 6), ca.SX.zeros(6, 1)
        if frame_b is not None:
            I_a = sp.inertia_to_parent(-sp.unpack(frame_b.I), E, r)
            b_a = sp.force_to_parent(-frame_b.b, E, r)
        if body is not None:
            inertia, bias = body.body_terms(frame_a)
            I_a, b_a = I_a + inertia, b_a + bias
        yield frame_a.I == sp.pack(I_a)
        yield frame_a.b == b_a
    else:
        F_a = ca.SX.zeros(6, 1)
        if frame_b is not None:
            F_a = -sp.force_to_parent(cut_force(frame_b), E, r)
        if body is not None:
            F_a = F_a + (body.body_force(frame_a) if U is None else body.body_force(frame_a, U))
        yield cut_force(frame_a) == F_a


def apply_force(component, frame, wrench):
    """Flow equations of a frame through which the component exerts the spatial force
    ``wrench = [t; f]`` (resolved in the frame) on what it is connected to."""
    if component.analysis == "forward":
        yield frame.I == ca.SX.zeros(21, 1)
        yield frame.b == -wrench
    else:
        yield cut_force(frame) == -wrench


def classical_accelerations(component) -> bool:
    """Whether frame accelerations ``a`` are classical (inverse analysis) or spatial
    (forward analysis) where ``component`` states them (see the module docs)."""
    return component.analysis == "inverse"


def classical_acceleration(frame, world, component):
    """Acceleration of the frame origin resolved in the frame (gravity added back), as
    ``component`` (the one asking, inside its equations) sees ``frame.a``."""
    if not classical_accelerations(component):
        w, v = frame.v[0:3], frame.v[3:6]
        return frame.a[3:6] + sp.cross(w, v) + frame.R @ world.gravity_acceleration_world()
    return frame.a[3:6] + frame.R @ world.gravity_acceleration_world()
