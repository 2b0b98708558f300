"""What the multibody components show in an animation (their ``visuals()``, see
:mod:`mbmodel.visuals` and ``Result.animate``), after the MSL's defaults:

* :class:`~.parts.World`: its axes, ``nominal_length/4`` long;
* :class:`~.parts.Body`: a sphere of diameter ``nominal_length/9`` at the centre of mass and
  a cylinder from frame_a to it (a third of that diameter);
* :class:`~.parts.BodyShape`: a cylinder from frame_a to frame_b (diameter ``|r|/20``) and a
  sphere of twice that diameter at the centre of mass (the body's own sphere if ``r = 0``);
* :class:`~.parts.BodyBox`, :class:`~.parts.BodyCylinder`: their box and cylinder;
* :class:`~.parts.FixedTranslation`, :class:`~.parts.FixedRotation`: a grey rod along ``r``
  (diameter ``|r|/20``);
* :class:`~.joints.Revolute`: a red cylinder along its axis at frame_a (``nominal_length/10``
  long, ``nominal_length/20`` thick); :class:`~.joints.Prismatic`: a red box along its axis at
  frame_b; :class:`~.joints.Spherical` and :class:`~.joints.SphericalConstraint`: a red
  sphere of diameter ``nominal_length/10``.

Every shape is fixed in one of the component's frames: its position is the frame's ``r_0``
and its orientation the frame's ``R`` (world -> frame, so a point ``p`` of the frame is at
``r_0 + R' p`` in the world). ``nominal_length`` is ``World(nominal_length=...)``; by
default twice the largest offset of the model's rigid parts (``|r|`` of shapes, translations
and fixed frames, ``|r_CM|`` of bodies), 1 m if it has none.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from mbmodel.visuals import VisualShape

from . import spatial as sp
from .frames import numeric_value, world_of

#: MSL ``Types.Defaults`` colours (RGB).
BODY_COLOR = (0, 128, 255)
ROD_COLOR = (155, 155, 155)
JOINT_COLOR = (255, 0, 0)


def nominal_length(component) -> float:
    """The length the default sizes scale with (see the module documentation)."""
    world = world_of(component)
    given = getattr(world, "nominal_length", None)
    if given is not None:
        return float(given)
    cache = component.model_cache()
    cached = cache.get("multibody nominal length")
    if cached is None:
        from .parts import Body, Fixed, FixedRotation, FixedTranslation, _Shape
        lengths = [0.0]
        for cls, name in ((_Shape, "r"), (FixedTranslation, "r"), (FixedRotation, "r"),
                          (Fixed, "r"), (Body, "r_CM")):
            for part in component.instances_in_model(cls):
                value = numeric_value(part, name)
                if value is not None:
                    lengths.append(float(np.linalg.norm(value)))
        cached = cache["multibody nominal length"] = 2 * max(lengths) or 1.0
    return cached


def _value(component, name):
    """A parameter as a number (a numpy vector) if it is declared as one, else its symbol:
    sizes are evaluated at the declared values anyway, and numbers cost no casadi work."""
    value = numeric_value(component, name)
    if value is not None:
        return value.ravel() if value.size > 1 else float(value.ravel()[0])
    symbol = getattr(component, name)
    return sp.vec(symbol) if symbol.numel() > 1 else symbol


def _norm(v):
    if isinstance(v, np.ndarray):
        return float(np.linalg.norm(v))
    return ca.sqrt(v.T @ v)


def _unit(v):
    """``v / |v|`` (a zero numeric vector stays zero)."""
    n = _norm(v)
    if isinstance(v, np.ndarray):
        return v / n if n > 0 else v
    return v / n


def _default(value, fallback):
    """``fallback`` where ``value`` is negative (the MSL's "not given"), else ``value``."""
    if isinstance(value, float):
        return fallback if value < 0 else value
    return ca.if_else(value < 0, fallback, value)


def _is_zero(component, name) -> bool:
    value = numeric_value(component, name)
    return value is not None and not np.any(value)


def rod(frame, r, diameter=None, color=ROD_COLOR, label=""):
    """A cylinder from ``frame``'s origin along ``r`` (resolved in the frame), diameter
    ``|r|/20`` unless given."""
    length = _norm(r)
    return VisualShape("cylinder", frame.r_0, frame.R, length_direction=r, length=length,
                       width=length / 20 if diameter is None else diameter, color=color,
                       label=label)


def world_axes(world):
    """The world's axes."""
    return [VisualShape("axes", world.frame_b.r_0, world.frame_b.R,
                        length=nominal_length(world) / 4, width=nominal_length(world) / 200,
                        color=(0, 0, 0))]


def body(body, frame=None):
    """A body's sphere at its centre of mass and the cylinder to it from ``frame``
    (default frame_a)."""
    frame = body.frame_a if frame is None else frame
    diameter = nominal_length(body) / 9
    c = _value(body, "r_CM")
    shapes = [VisualShape("sphere", frame.r_0, frame.R,
                          r_shape=c - np.array([diameter / 2, 0.0, 0.0]) if
                          isinstance(c, np.ndarray) else c - ca.DM([diameter / 2, 0.0, 0.0]),
                          length=diameter, width=diameter, color=BODY_COLOR, label="sphere")]
    if not _is_zero(body, "r_CM"):
        shapes.append(rod(frame, c, diameter / 3, BODY_COLOR, "cylinder"))
    return shapes


def body_shape(shape):
    """A BodyShape's rod from frame_a to frame_b and the sphere at its centre of mass."""
    if _is_zero(shape, "r"):
        return body(shape)
    fa = shape.frame_a
    r = _value(shape, "r")
    diameter = _norm(r) / 10
    return [rod(fa, r, color=BODY_COLOR, label="cylinder"),
            VisualShape("sphere", fa.r_0, fa.R,
                        r_shape=_value(shape, "r_CM") - _unit(r) * diameter / 2,
                        length_direction=r, length=diameter, width=diameter,
                        color=BODY_COLOR, label="sphere")]


def box(shape):
    """A BodyBox's box from frame_a along ``r``."""
    r = _value(shape, "r")
    length = _norm(r)
    width = _default(_value(shape, "width"), length / 20)
    height = _default(_value(shape, "height"), width)
    return [VisualShape("box", shape.frame_a.r_0, shape.frame_a.R, length_direction=r,
                        width_direction=shape.width_direction, length=length, width=width,
                        height=height, color=BODY_COLOR)]


def cylinder(shape):
    """A BodyCylinder's cylinder from frame_a along ``r``."""
    r = _value(shape, "r")
    return [rod(shape.frame_a, r, _default(_value(shape, "diameter"), _norm(r) / 20),
                BODY_COLOR)]


def translation(part):
    """A rod along the offset ``r`` of a FixedTranslation or FixedRotation (none if r = 0)."""
    if _is_zero(part, "r"):
        return []
    return [rod(part.frame_a, _value(part, "r"))]


def revolute(joint):
    """A cylinder along the joint's axis, centred at frame_a."""
    length, diameter = nominal_length(joint) / 10, nominal_length(joint) / 20
    n = _value(joint, "n")
    return [VisualShape("cylinder", joint.frame_a.r_0, joint.frame_a.R,
                        r_shape=-_unit(n) * length / 2, length_direction=n, length=length,
                        width=diameter, color=JOINT_COLOR)]


def prismatic(joint):
    """A box along the joint's axis, centred at frame_b."""
    length, width = nominal_length(joint) / 10, nominal_length(joint) / 20
    n = _value(joint, "n")
    return [VisualShape("box", joint.frame_b.r_0, joint.frame_b.R,
                        r_shape=-_unit(n) * length / 2, length_direction=n, length=length,
                        width=width, color=JOINT_COLOR)]


def ball(joint):
    """A sphere at frame_a's origin (a ball joint)."""
    d = nominal_length(joint) / 10
    return [VisualShape("sphere", joint.frame_a.r_0, joint.frame_a.R,
                        r_shape=(-d / 2, 0.0, 0.0), length=d, width=d, color=JOINT_COLOR)]
