"""Hydraulics against closed forms, conservation of mass and hand-written scipy ODEs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbmodel as mb
from mbmodel.libraries import blocks as bl
from mbmodel.libraries import hydraulics as hy
from mbmodel.libraries import translational as tr

RHO0, P0, BETA = 870.0, 1.01325e5, 1.5e9  # the default oil


def rho(p):
    return RHO0 * np.exp((p - P0) / BETA)


def test_pressure_builds_up_in_a_fixed_volume_as_its_mass_grows():
    m_dot, V = 2e-3, 1e-3

    class Fill(mb.Model):
        source = hy.MassFlowSource()
        flow = bl.Constant(k=m_dot)
        volume = hy.FixedVolume(V=V, p=mb.Fixed(P0))

        def equations(self):
            yield mb.connect(self.flow.y, self.source.m_flow_in)
            yield mb.connect(self.source.port, self.volume.port)

    res = mb.simulate(Fill(), 1.0, n_points=11, rtol=1e-10, atol=1e-12)
    mass = V * RHO0 + m_dot * res.t  # rho(p) = rho_0 exp((p - p_0)/beta)
    np.testing.assert_allclose(res["volume.p"], P0 + BETA * np.log(mass / (V * RHO0)),
                               rtol=1e-10)


def test_orifice_flow_follows_the_square_root_law_in_both_directions():
    Cd, A = 0.6, 2e-5
    drops = np.array([-50e5, -3e5, -2e4, 2e4, 3e5, 50e5])

    class Line(mb.Model):
        supply = hy.PressureSource()
        orifice = hy.Orifice(Cd=Cd, A=A)
        tank = hy.Tank(p=1e6)
        profile = bl.TimeTable(table=[[k, 1e6 + dp] for k, dp in enumerate(drops)]
                               + [[len(drops), 1e6 + drops[-1]]])

        def equations(self):
            yield mb.connect(self.profile.y, self.supply.p_in)
            yield mb.connect(self.supply.port, self.orifice.port_a)
            yield mb.connect(self.orifice.port_b, self.tank.port)

    res = mb.simulate(Line(), len(drops) - 1.0, n_points=len(drops))
    dp = res["orifice.dp"]
    np.testing.assert_allclose(dp, drops, rtol=1e-12)
    mean_rho = rho(1e6 + dp / 2)
    exact = np.sign(dp) * Cd * A * np.sqrt(2 * mean_rho * np.abs(dp))
    # the regularisation below dp_small = 100 Pa changes the flow by dp_small²/(4 dp²)
    np.testing.assert_allclose(res["orifice.m_flow"], exact, rtol=1e-5)
    np.testing.assert_allclose(res["tank.port.m_flow"], res["orifice.m_flow"], rtol=1e-12)


def test_a_closed_network_keeps_its_mass_and_settles_at_one_pressure():
    V1, V2 = 1e-3, 3e-3

    class Closed(mb.Model):
        high = hy.FixedVolume(V=V1, p=mb.Fixed(200e5))
        orifice = hy.Orifice(A=1e-6)
        low = hy.FixedVolume(V=V2, p=mb.Fixed(1e5))

        def equations(self):
            yield mb.connect(self.high.port, self.orifice.port_a)
            yield mb.connect(self.orifice.port_b, self.low.port)

    res = mb.simulate(Closed(), 2.0, n_points=201, rtol=1e-10, atol=1e-6)
    mass = V1 * rho(res["high.p"]) + V2 * rho(res["low.p"])
    np.testing.assert_allclose(mass, mass[0], rtol=1e-9)
    # the common final pressure holds the same mass in both volumes
    p_end = P0 + BETA * np.log(mass[0] / ((V1 + V2) * RHO0))
    np.testing.assert_allclose([res["high.p"][-1], res["low.p"][-1]], p_end, rtol=1e-6)


def test_components_of_one_network_must_share_one_fluid():
    class TwoFluids(mb.Model):
        oil = hy.Fluid()
        water = hy.Fluid(rho_0=1000.0, beta=2.2e9, nu=1e-6)

        def __init__(self):
            super().__init__()
            self.volume = hy.FixedVolume(fluid=self.oil)
            self.tank = hy.Tank(fluid=self.water)
            self.orifice = hy.Orifice(fluid=self.oil)

        def equations(self):
            yield mb.connect(self.tank.port, self.orifice.port_a)
            yield mb.connect(self.orifice.port_b, self.volume.port)

    with pytest.raises(mb.DeclarationError, match=r"tank.port.*orifice.port_a.*one fluid"):
        mb.compile(TwoFluids())

    class Ambiguous(mb.Model):
        oil = hy.Fluid()
        water = hy.Fluid()
        tank = hy.Tank()
        cap = hy.Cap()

        def equations(self):
            yield mb.connect(self.tank.port, self.cap.port)

    with pytest.raises(mb.DeclarationError, match=r"2 Fluid components .*oil.*water"):
        mb.compile(Ambiguous())


def test_the_model_fluid_is_used_by_every_component():
    class Water(mb.Model):
        water = hy.Fluid(rho_0=1000.0, p_0=1e5, beta=2.2e9)
        source = hy.VolumeFlowSource()
        flow = bl.Constant(k=1e-4)
        volume = hy.FixedVolume(V=1e-3, p=mb.Fixed(1e5))

        def equations(self):
            yield mb.connect(self.flow.y, self.source.q_in)
            yield mb.connect(self.source.port, self.volume.port)

    res = mb.simulate(Water(), 0.01, n_points=3, rtol=1e-10, atol=1e-12)
    # dp/dt = beta/V * q while the density follows the pressure
    rate = 2.2e9 / 1e-3 * 1e-4
    assert res["volume.p"][1] == pytest.approx(1e5 + rate * 0.005, rel=1e-9)
