"""Multibody library: frames, joints, bodies, forces and sensors in 3-D.

One model serves forward dynamics (``mb.compile(model)``: the articulated-body algorithm,
O(n) in the number of bodies) and inverse dynamics (``mb.compile(model,
analysis="inverse")``: recursive Newton–Euler, prescribed joint motion in, joint forces
out). See :mod:`.frames` for the connector and sign conventions.

Example (a pendulum)::

    import mbmodel as mb
    from mbmodel.libraries import multibody as mbl

    class Pendulum(mb.Model):
        world = mbl.World()
        joint = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(0.5), w=mb.Fixed(0.0))
        rod = mbl.BodyShape(r=[1, 0, 0], r_CM=[1, 0, 0], m=1.0)

        def equations(self):
            yield mb.connect(self.world.frame_b, self.joint.frame_a)
            yield mb.connect(self.joint.frame_b, self.rod.frame_a)

    result = mb.simulate(Pendulum(), t_end=2.0)
"""

from . import spatial
from .frames import Frame
from .parts import (Body, BodyBox, BodyCylinder, BodyShape, Fixed, FixedRotation,
                    FixedTranslation, World)
from .joints import FreeMotion, Prismatic, Revolute, Spherical, SphericalConstraint, Universal
from .forces import (Damper, Force, LineForceWithFlanges, Spring, SpringDamperParallel, Torque,
                     WorldForce, WorldTorque)
from .sensors import AbsoluteSensor, CutForceAndTorque, RelativeSensor
from . import loops
from .urdf import from_urdf
from .joint_space import JointSpace

__all__ = [
    "Frame", "World", "Fixed", "FixedTranslation", "FixedRotation", "Body", "BodyShape",
    "BodyBox", "BodyCylinder", "Revolute", "Prismatic", "Spherical", "SphericalConstraint",
    "Universal",
    "FreeMotion", "WorldForce", "WorldTorque", "Force", "Torque", "Spring", "Damper",
    "SpringDamperParallel", "LineForceWithFlanges", "AbsoluteSensor", "RelativeSensor", "CutForceAndTorque",
    "spatial", "from_urdf", "JointSpace",
]
