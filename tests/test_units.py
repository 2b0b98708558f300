"""Unit checking of equations with pint (``mb.compile(..., check_units=True)``): equations
whose sides disagree are named with both units (scale included: kPa is not Pa), derivatives
carry their variable's unit per second, transcendental functions take pure numbers, and the
example models and the r3 robot are consistent (the check found the robot motor's current
signals connected to voltage inputs, now through a 1 V/A transducer)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

import mbmodel as mb  # noqa: E402
from mbmodel.functions import sin  # noqa: E402

pint = pytest.importorskip("pint")


class Cart(mb.Model):
    m = mb.Parameter(2.0, unit="kg")
    d = mb.Parameter(0.5, unit="N.s/m")
    F = mb.Parameter(1.0, unit="N")
    x = mb.Variable(start=0.0, fixed=True, unit="m")
    v = mb.Variable(start=0.0, fixed=True, unit="m/s")

    def equations(self):
        yield mb.der(self.x) == self.v
        yield self.m * mb.der(self.v) == self.F - self.d * self.v


def test_consistent_model_passes_and_compiles():
    cm = mb.compile(Cart(), check_units=True)
    assert cm.states == ["x", "v"]


def test_two_sides_with_different_units_are_named():
    class Wrong(Cart):
        def equations(self):
            yield mb.der(self.x) == self.x          # m/s against m
            yield self.m * mb.der(self.v) == self.F - self.d * self.v

    with pytest.raises(mb.UnitError) as info:
        mb.compile(Wrong(), check_units=True)
    text = str(info.value)
    assert "1 equation(s) whose units disagree" in text
    assert "der(x)" in text and "m / s and m" in text
    mb.compile(Wrong())  # unchecked, it compiles


def test_units_outside_modelicas_syntax_are_refused_with_the_reason():
    # pint would read "meter/sec" and "m/s/s"; Modelica's unit syntax has neither
    class Written(Cart):
        x = mb.Variable(start=0.0, fixed=True, unit="meter")
        v = mb.Variable(start=0.0, fixed=True, unit="m/s/s")

    with pytest.raises(mb.UnitError) as info:
        mb.compile(Written(), check_units=True)
    text = str(info.value)
    assert "2 unit(s) not understood" in text
    assert "x: unit 'meter' is not understood: 'meter' is not a unit symbol" in text
    assert "v: unit 'm/s/s' is not understood: '/s' is left over" in text
    from mbmodel.units import modelica_unit_problem
    for good in ("N.m.s/rad", "m3/(s.Pa)", "1/K", "kg.m2", "(m/s)/s", "s-1", "kPa", "mm",
                 "degC", "1"):
        assert modelica_unit_problem(good) is None, good
    assert "'*'" in modelica_unit_problem("N*m")
    assert "'(' is not closed" in modelica_unit_problem("m3/(s.Pa")
    assert "'µ'" in modelica_unit_problem("µm")          # ASCII only: "um"
    assert "'-'" in modelica_unit_problem("m-")          # a sign needs its exponent
    assert "not a unit symbol" in modelica_unit_problem("kdegC")  # no prefix on degC
    assert "exponent of 0" in modelica_unit_problem("m0")
    import pint
    registry = pint.UnitRegistry()
    from mbmodel.units import pint_unit
    assert pint_unit("kOhm", registry) == registry.parse_units("kiloohm")
    assert pint_unit("kvar", registry) == registry.parse_units("kilovolt_ampere")
    assert pint_unit("m+2", registry) == registry.parse_units("m**2")


def test_terms_of_a_sum_and_scales_are_checked():
    class Mixed(mb.Model):
        p_kpa = mb.Parameter(100.0, unit="kPa")
        p_pa = mb.Parameter(1e5, unit="Pa")
        y = mb.Variable(unit="Pa")
        z = mb.Variable(unit="m")

        def equations(self):
            yield self.y == self.p_pa + self.p_kpa   # same dimension, scale differs
            # a number times Pa is Pa (the number is a pure scale; a factor other than 2
            # used to leave the product unchecked) and a number added takes its unit
            yield self.z == 1.0 + 3.0 * self.p_pa

    with pytest.raises(mb.UnitError, match=r"the terms of .* have units Pa and kPa") as info:
        mb.compile(Mixed(), check_units=True)
    assert "the two sides of (z-(1+(3*p_pa))) have units m and Pa" in str(info.value)


def test_transcendental_functions_take_pure_numbers():
    class Oscillator(mb.Model):
        w = mb.Parameter(3.0, unit="rad/s")
        y = mb.Variable(unit="1")
        bad = mb.Variable(unit="1")

        def equations(self):
            yield self.y == sin(self.w * mb.time)      # rad/s times s: fine
            yield self.bad == sin(self.w)              # rad/s: not a pure number

    with pytest.raises(mb.UnitError, match=r"argument of sin\(w\) has unit rad / s"):
        mb.compile(Oscillator(), check_units=True)


def test_parameter_bindings_are_checked():
    from mbmodel.libraries import translational as tr

    class Hanging(mb.Model):
        m = mb.Parameter(2.0, unit="kg")
        g = mb.Parameter(9.81, unit="m/s2")
        L = mb.Parameter(0.5, unit="m")

        def __init__(self, stiffness, **kwargs):
            super().__init__(**kwargs)
            self.spring = tr.Spring(c=stiffness(self))
            self.wall = tr.Fixed()
            self.mass = tr.Mass(m=self.m)

        def equations(self):
            yield mb.connect(self.wall.flange, self.spring.flange_a)
            yield mb.connect(self.spring.flange_b, self.mass.flange_a)

    mb.compile(Hanging(lambda h: 2 * h.m * h.g / h.L), check_units=True)   # N/m: fine
    with pytest.raises(mb.UnitError) as info:
        mb.compile(Hanging(lambda h: h.m * h.g), check_units=True)          # N, not N/m
    assert "in spring: spring.c = (m*g)" in str(info.value)
    assert "spring.c is declared in N / m, and its binding has unit kg * m / s ** 2" in \
        str(info.value)


def test_relations_when_clauses_and_discrete_assignments_are_checked():
    class Hybrid(mb.Model):
        x = mb.Variable(start=0.0, fixed=True, unit="m")
        v = mb.Variable(start=1.0, fixed=True, unit="m/s")
        d = mb.Discrete(start=0.0, unit="m")
        T = mb.Parameter(1.0, unit="s")

        def equations(self):
            yield mb.der(self.x) == self.v
            yield mb.der(self.v) == mb.functions.if_else(self.x > self.T, -self.v / self.T, 0.0)
            yield mb.when(self.x > 2 * self.v, mb.reinit(self.v, self.x / self.T))
            yield mb.when(mb.sample(0.0, 0.1), self.d == self.T)

    with pytest.raises(mb.UnitError) as info:
        mb.compile(Hybrid(), check_units=True)
    text = str(info.value)
    assert "x > T\n      the terms of (T<x) have units s and m" in text
    assert "x > (2.*v)\n      the terms of ((2.*v)<x) have units m / s and m" in text
    assert "when: d := T\n      d is declared in m, and the value has unit s" in text
    assert "3 equation(s) whose units disagree" in text   # the reinit's m/s := m/s is fine


def test_what_sin_gives_is_a_pure_number():
    class NoAmplitude(mb.Model):
        w = mb.Parameter(3.0, unit="rad/s")
        y = mb.Variable(unit="V")

        def equations(self):
            yield self.y == sin(self.w * mb.time)

    with pytest.raises(mb.UnitError, match="the two sides of .* have units V and 1"):
        mb.compile(NoAmplitude(), check_units=True)


def test_numbers_that_may_be_quantities_leave_their_product_unchecked():
    """A number that is no pure scale (101325, 1.5e9, 2.907) may stand for a quantity
    written without its unit, as in a component's built-in defaults: the hydraulic
    components without a Fluid write the default oil's values as numbers, and
    exp((p - 101325)/1.5e9) was a false alarm in every one of them."""
    from mbmodel.units import _pure_scale
    assert all(_pure_scale(v) for v in (0.0, 3.0, -2.0, 0.5, 0.25, 100.0, 1 / 60, np.pi,
                                        2 * np.pi, np.pi / 2, 0.4, 2 / 3, 4 / 3 * np.pi, 1.5))
    assert not any(_pure_scale(v) for v in (101325.0, 1.5e9, 2.907, 101.0, 9.81, 46e-6))
    from mbmodel.libraries import hydraulics as hy

    class Filling(mb.Model):   # no Fluid: the default oil
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supply = hy.FixedPressure(p=50e5)
            self.orifice = hy.Orifice(A=1e-5)
            self.volume = hy.FixedVolume(V=1e-3)

        def equations(self):
            yield mb.connect(self.supply.port, self.orifice.port_a)
            yield mb.connect(self.orifice.port_b, self.volume.port)

    mb.compile(Filling(), check_units=True)


def test_unit_symbols_are_read_by_their_own_names():
    from mbmodel.units import pint_unit
    registry = pint.UnitRegistry()
    assert pint_unit("rev/min", registry) == registry.parse_units("revolution/minute")
    assert pint_unit("mcd", registry) == registry.parse_units("millicandela")  # not micro-day
    assert pint_unit("kt", registry) == registry.parse_units("kilometric_ton")  # not knot


def test_example_models_and_the_robot_are_consistent():
    from cauer_filter import CauerLowPass
    from dc_motor_drive import DCMotorDrive
    from double_pendulum import DoublePendulum
    from engine import Engine
    from excavator_boom import BoomInverse, Excavator
    from fourbar import Fourbar
    from friction_drive import FrictionDrive
    from hydraulic_press import Press
    from rectifier import Bridge
    from rlc_circuit import SeriesRLC
    from mbmodel.flatten import flatten
    from mbmodel.libraries import robot_r3 as r3
    from mbmodel.units import check_units
    for model in (DCMotorDrive(), DoublePendulum(), Press(), r3.FullRobot(), BoomInverse()):
        mb.compile(model, check_units=True)
    # the check needs only the flat model
    for model in (CauerLowPass(), Engine(), Excavator(), Fourbar(), FrictionDrive(),
                  Bridge(), SeriesRLC()):
        assert check_units(flatten(model, "forward", "symbolic")) == []
