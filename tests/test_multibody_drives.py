"""Drive trains on joint flanges in forward dynamics: a motor inertia behind an ideal gear
on every joint of a chain must act as the reflected inertia J·ratio² (Pinocchio's
``armature``)."""

import numpy as np
import pytest

import mbmodel as mb
from mbmodel.libraries import multibody as mbl, rotational as rot

pin = pytest.importorskip("pinocchio")
from mb_trees import AXES, INERTIA, LINK, MASS, pinocchio_chain  # noqa: E402

J_MOTOR, RATIO = 0.5, 10.0


class DrivenChain(mb.Model):
    def __init__(self, n, **modifiers):
        super().__init__(**modifiers)
        self.n = n
        self.world = mbl.World(n=[0.0, 0.0, -1.0])
        for i in range(n):
            self.add(f"joint{i}", mbl.Revolute(n=AXES[i % 3], use_axis_flange=True))
            self.add(f"link{i}", mbl.BodyShape(r=list(LINK), r_CM=list(LINK / 2), m=MASS,
                                               I_11=INERTIA[0, 0], I_22=INERTIA[1, 1],
                                               I_33=INERTIA[2, 2]))
            self.add(f"motor{i}", rot.Inertia(J=J_MOTOR))
            self.add(f"gear{i}", rot.IdealGear(ratio=RATIO))

    def equations(self):
        prev = self.world.frame_b
        for i in range(self.n):
            joint, link = getattr(self, f"joint{i}"), getattr(self, f"link{i}")
            yield mb.connect(prev, joint.frame_a)
            yield mb.connect(joint.frame_b, link.frame_a)
            prev = link.frame_b
            yield mb.connect(getattr(self, f"motor{i}").flange_b, getattr(self, f"gear{i}").flange_a)
            yield mb.connect(getattr(self, f"gear{i}").flange_b, joint.axis)


def _max_error(n):
    cm = mb.compile(DrivenChain(n), parameters="constant")
    pm = pinocchio_chain(n)
    pm.armature = np.full(n, J_MOTOR * RATIO ** 2)
    rng = np.random.default_rng(0)
    q, v = rng.normal(size=n), rng.normal(size=n)
    values = {}
    for i in range(n):
        values[f"motor{i}.phi"], values[f"motor{i}.w"] = RATIO * q[i], RATIO * v[i]
    x = np.array([values[s] for s in cm.states])
    xdot = np.array(cm.ode(x, [], [], [], 0)).ravel()
    acc = np.array([xdot[cm.states.index(f"motor{i}.w")] / RATIO for i in range(n)])
    ref = pin.aba(pm, pm.createData(), q, v, np.zeros(n))
    return np.abs(acc - ref).max() / max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_geared_motor_inertia_is_the_reflected_inertia(n):
    assert _max_error(n) < 1e-9
