"""Isothermal, compressible hydraulics (package layout after the Modelica Standard Library;
component set after ModelingToolkitStandardLibrary's ``Hydraulic.IsothermalCompressible``).

A :class:`Port` carries the pressure ``p`` [Pa] (potential) and the mass flow ``m_flow``
[kg/s] (flow, positive *into* the component). Mass, not volume, is what the connections
conserve: the liquid is compressible, so a volume flow changes along a line whose pressure
changes, a mass flow does not.

The liquid is one :class:`Fluid` for a whole network: declare one ``Fluid`` component in the
model and every hydraulic component uses it (without one, :data:`DEFAULT_OIL`, an ISO VG 46
mineral oil). A model with several circuits of different liquids gives the components of
each circuit ``fluid=<its Fluid component>``; connecting two components with different fluids
is an error. The liquid has a constant bulk modulus ``beta``; with ``air > 0`` it carries that
volume fraction of undissolved air (at ``p_0``, isothermal), which makes it soft at low
pressure and keeps the pressure above zero where a pure liquid would be pulled to negative
pressures (cavitation)::

    rho(p) = rho_0 * exp((p - p_0) / beta)                                 (air = 0)
    rho(p) = rho_0*(1 - air) / ((1 - air)*exp(-(p - p_0)/beta) + air*p_0/p)   (air > 0)

Example (a volume filled through an orifice from a pressure supply)::

    import mbmodel as mb
    from mbmodel.libraries import hydraulics as hy

    class Fill(mb.Model):
        oil = hy.Fluid(beta=1.4e9)
        supply = hy.FixedPressure(p=100e5)
        orifice = hy.Orifice(A=1e-5)
        volume = hy.FixedVolume(V=1e-3, p=mb.Fixed(1e5))

        def equations(self):
            yield mb.connect(self.supply.port, self.orifice.port_a)
            yield mb.connect(self.orifice.port_b, self.volume.port)
"""

from __future__ import annotations

import casadi as ca

import mbmodel as mb
from mbmodel import Connector, Flow, Input, Model, Output, Parameter, Potential, Variable, der
from mbmodel.functions import exp, if_else, sqrt

from . import rotational, translational
from .blocks import SMALL
from .drive_trains import ForceElementFlanges

__all__ = [
    "Port", "Fluid", "DEFAULT_OIL", "density", "density_derivative",
    "FixedVolume", "Tank", "Cap", "FixedPressure", "PressureSource", "InverseSupply",
    "MassFlowSource",
    "VolumeFlowSource", "regularized_root", "Orifice", "Valve", "PipeSection", "Pipe",
    "CheckValve", "ReliefValve",
    "SpoolValve", "Accumulator", "Cylinder", "Pump", "Motor",
    "PressureSensor", "MassFlowSensor", "VolumeFlowSensor", "PressureDifferenceSensor",
]


# --------------------------------------------------------------------------------------
# Connector and fluid
# --------------------------------------------------------------------------------------

class Port(Connector):
    """Hydraulic port: pressure ``p`` [Pa] and mass flow ``m_flow`` [kg/s] into the
    component. All hydraulic components' ports are connectable with one another."""

    p = Potential(1e5, unit="Pa", doc="Pressure at the port")
    m_flow = Flow(unit="kg/s", doc="Mass flow through the port into the component")


class Fluid(Model):
    """The liquid of a hydraulic network (no equations): density ``rho_0`` at ``p_0``,
    bulk modulus ``beta`` (constant: ``rho = rho_0*exp((p - p_0)/beta)``) and kinematic
    viscosity ``nu``. Defaults: ISO VG 46 mineral oil near 40 °C.

    Example::

        oil = Fluid(rho_0=870.0, beta=1.5e9, nu=46e-6)
    """

    rho_0 = Parameter(870.0, unit="kg/m3", min=SMALL, doc="density at p_0")
    p_0 = Parameter(1.01325e5, unit="Pa", doc="reference pressure")
    beta = Parameter(1.5e9, unit="Pa", min=SMALL, doc="bulk modulus")
    nu = Parameter(46e-6, unit="m2/s", min=0.0, doc="kinematic viscosity")
    air = Parameter(0.0, min=0.0, max=0.5,
                    doc="volume fraction of undissolved air at p_0 (0: pure liquid)")


class _DefaultOil:
    """:class:`Fluid`'s defaults as numbers, for models that declare no Fluid."""

    path = "the default oil (DEFAULT_OIL)"
    rho_0, p_0, beta, nu, air = 870.0, 1.01325e5, 1.5e9, 46e-6, 0.0


#: The fluid of a model that declares no :class:`Fluid` (ISO VG 46 mineral oil).
DEFAULT_OIL = _DefaultOil()


P_GAS_MIN = 100.0  # Pa: the air's pressure law is held here (an integrator may step below 0)


def _mixture_volume(fluid, p):
    """Volume of the mass ``rho_0*(1 - air)`` of liquid with its air, at pressure ``p``, and
    its derivative with respect to ``p`` (the air isothermal, ``p`` held above P_GAS_MIN)."""
    liquid = (1 - fluid.air) * exp(-(p - fluid.p_0) / fluid.beta)
    p_gas = mb.noEvent(if_else(p > P_GAS_MIN, p, P_GAS_MIN))
    gas = fluid.air * fluid.p_0 / p_gas
    d_gas = mb.noEvent(if_else(p > P_GAS_MIN, -gas / p_gas, 0))
    return liquid + gas, -liquid / fluid.beta + d_gas


def _pure(fluid) -> bool:
    return isinstance(fluid.air, (int, float)) and fluid.air == 0


def density(fluid, p):
    """Density of ``fluid`` at pressure ``p`` (see the module doc)."""
    if _pure(fluid):
        return fluid.rho_0 * exp((p - fluid.p_0) / fluid.beta)
    volume, _ = _mixture_volume(fluid, p)
    return fluid.rho_0 * (1 - fluid.air) / volume


def density_derivative(fluid, p):
    """``d rho / d p`` of ``fluid`` at ``p`` (``rho/beta`` for a pure liquid)."""
    if _pure(fluid):
        return density(fluid, p) / fluid.beta
    volume, d_volume = _mixture_volume(fluid, p)
    return -fluid.rho_0 * (1 - fluid.air) * d_volume / volume ** 2


def _model_fluid(component):
    """The model's unique Fluid component, DEFAULT_OIL without one, an error with several."""
    found = component.instances_in_model(Fluid)
    if len(found) > 1:
        raise mb.DeclarationError(
            f"'{component.path}' has no fluid= and the model has {len(found)} Fluid "
            f"components ({', '.join(sorted(f.path for f in found))}); give the components of "
            f"each circuit fluid=<its Fluid>, or declare one Fluid")
    return found[0] if found else DEFAULT_OIL


class _Hydraulic(Model):
    """Partial model: a component with hydraulic ports and a fluid (``fluid=`` option, else
    the model's). ``equations()`` of subclasses start with ``yield from
    self.port_checks()``, which rejects ports connected to components of another fluid."""

    def __init__(self, fluid: Fluid | None = None, **modifiers):
        super().__init__(**modifiers)
        if fluid is not None and not isinstance(fluid, Fluid):
            raise mb.DeclarationError(f"fluid= must be a hydraulics.Fluid component, not "
                                      f"{type(fluid).__name__}")
        self.__dict__["_fluid_choice"] = fluid  # a reference, not a sub-component

    @property
    def fluid(self):
        """The Fluid (component or DEFAULT_OIL) this component's equations use."""
        chosen = self._fluid_choice
        if chosen is None:
            return _model_fluid(self)
        if chosen._parent is None and chosen is not DEFAULT_OIL:
            # (a Fluid declared in a class body and given there is the class's template:
            # each model gets a fresh instance, and the template is in none)
            raise mb.DeclarationError(
                f"'{self.path}' was given fluid= a Fluid that is not a component of the "
                f"model (one declared in a class body and passed to components there is the "
                f"class's template, not the model's instance): make the components that use "
                f"it in __init__ (self.valve = hydraulics.Orifice(fluid=self.oil)), or leave "
                f"fluid= out to use the model's one Fluid")
        return chosen

    def ports(self):
        return [m for m in self.members().values() if isinstance(m, Port)]

    def port_checks(self):
        """Reject a port connected to a component that uses another fluid (no equations)."""
        mine = self.fluid
        for port in self.ports():
            for other in self.connected(port):
                owner = other.owner
                if isinstance(owner, _Hydraulic) and owner.fluid is not mine:
                    raise mb.DeclarationError(
                        f"'{port.path}' is connected to '{other.path}', whose fluid is "
                        f"{owner.fluid.path}, while '{self.path}' uses {mine.path}: a network "
                        f"has one fluid; give both the same fluid=")
        return iter(())

    def rho(self, p):
        """Density of this component's fluid at pressure ``p``."""
        return density(self.fluid, p)

    def drho_dp(self, p):
        """``d rho / d p`` of this component's fluid at pressure ``p``."""
        return density_derivative(self.fluid, p)


class _TwoPorts(_Hydraulic):
    """Partial model: ports ``port_a`` and ``port_b`` with the pressure drop
    ``dp = port_a.p - port_b.p`` and no storage (``port_a.m_flow + port_b.m_flow = 0``);
    ``m_flow`` is the mass flow from a to b."""

    port_a = Port(doc="Inlet (flow a -> b is positive)")
    port_b = Port(doc="Outlet")
    dp = Variable(0.0, unit="Pa", doc="pressure drop port_a.p - port_b.p")
    m_flow = Variable(0.0, unit="kg/s", doc="mass flow from port_a to port_b")
    q = Variable(0.0, unit="m3/s", doc="volume flow from port_a to port_b at port_a's density")

    def two_port_equations(self):
        yield from self.port_checks()
        yield self.dp == self.port_a.p - self.port_b.p
        yield self.q == self.m_flow / self.rho(self.port_a.p)
        yield self.port_a.m_flow == self.m_flow
        yield self.port_b.m_flow == -self.m_flow


# --------------------------------------------------------------------------------------
# Volumes and boundaries
# --------------------------------------------------------------------------------------

class FixedVolume(_Hydraulic):
    """A rigid volume ``V`` of compressible liquid: its mass ``V*rho(p)`` changes by the
    flow into it.

    Equations::

        port.p = p,   V * drho/dp(p) * der(p) = port.m_flow       (drho/dp = rho/beta if pure)

    ``p`` is the state; give its start, e.g. ``FixedVolume(V=1e-3, p=mb.Fixed(1e5))``.
    """

    V = Parameter(1e-3, unit="m3", min=SMALL, doc="volume")
    p = Variable(1e5, unit="Pa", state_select="prefer", doc="pressure")
    port = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port.p == self.p
        yield self.V * self.drho_dp(self.p) * der(self.p) == self.port.m_flow


class Tank(_Hydraulic):
    """An open reservoir at constant pressure ``p`` (default atmospheric): any flow in or
    out. Equation: ``port.p = p``."""

    p = Parameter(1.01325e5, unit="Pa", doc="pressure of the reservoir")
    port = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port.p == self.p


class Cap(_Hydraulic):
    """A closed port: ``port.m_flow = 0``."""

    port = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port.m_flow == 0


class FixedPressure(Tank):
    """A pressure supply at constant ``p`` (an ideal one: any flow). Same as :class:`Tank`."""


class PressureSource(_Hydraulic):
    """Pressure from the input signal ``p_in`` [Pa], any flow: ``port.p = p_in``."""

    p_in = Input(unit="Pa", doc="pressure")
    port = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port.p == self.p_in


class InverseSupply(_Hydraulic):
    """A supply whose pressure ``p`` is an unknown the model solves for (any flow): with a
    prescribed motion elsewhere (an equation on a joint angle or a position) it gives the
    pressure and flow the motion needs, the inverse of :class:`PressureSource`. Equation:
    ``port.p = p``, with no equation for ``p`` of its own."""

    p = Variable(1e5, unit="Pa", determined_outside=True,
                 doc="pressure the supply must deliver")
    port = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port.p == self.p


class MassFlowSource(_Hydraulic):
    """Pushes the mass flow ``m_flow_in`` [kg/s] (input) into the network, at any
    pressure: ``port.m_flow = -m_flow_in``."""

    m_flow_in = Input(unit="kg/s", doc="mass flow out of the source")
    port = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port.m_flow == -self.m_flow_in


class VolumeFlowSource(_Hydraulic):
    """Pushes the volume flow ``q_in`` [m³/s] (input, at the port's pressure) into the
    network: ``port.m_flow = -rho(port.p)*q_in``."""

    q_in = Input(unit="m3/s", doc="volume flow out of the source")
    port = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port.m_flow == -self.rho(self.port.p) * self.q_in


# --------------------------------------------------------------------------------------
# Resistances
# --------------------------------------------------------------------------------------

def regularized_root(dp, dp_small):
    """``dp/(dp² + dp_small²)^(1/4)``: ``sign(dp)*sqrt(|dp|)`` above ``dp_small`` (relative
    error ``dp_small²/(4 dp²)``), a straight line of finite slope ``1/sqrt(dp_small)`` through 0
    (MSL ``Utilities.regRoot``). Smooth: no event, a finite Jacobian at zero flow."""
    return dp / (dp ** 2 + dp_small ** 2) ** 0.25


class Orifice(_TwoPorts):
    """Turbulent (sharp-edged) orifice of area ``A`` and discharge coefficient ``Cd``:

        m_flow = Cd * A * sqrt(2 * rho * |dp|) * sign(dp)

    with ``rho`` at the mean pressure, regularised below ``dp_small`` by
    :func:`regularized_root` (a laminar-like line through zero instead of the infinite
    slope of the square root).
    """

    Cd = Parameter(0.7, min=0.0, doc="discharge coefficient")
    A = Parameter(1e-5, unit="m2", min=0.0, doc="opening area")
    dp_small = Parameter(100.0, unit="Pa", min=0.0,
                         doc="pressure drop below which the flow law is a straight line")

    def area(self):
        return self.A

    def equations(self):
        yield from self.two_port_equations()
        rho = self.rho(0.5 * (self.port_a.p + self.port_b.p))
        yield self.m_flow == self.Cd * self.area() * sqrt(2 * rho) * regularized_root(
            self.dp, self.dp_small)


class Valve(Orifice):
    """An orifice whose area is ``A * opening`` with the input ``opening`` (0 closed, 1
    fully open; values below 0 count as closed, without an event)."""

    opening = Input(doc="relative opening 0..1")

    def area(self):
        return self.A * mb.noEvent(if_else(self.opening > 0, self.opening, 0))


class PipeSection(_TwoPorts):
    """A length ``L`` of pipe of inner diameter ``d`` without volume: laminar friction
    (Hagen–Poiseuille) and the inertia of the liquid column, with the mass flow as state.

    Equations (``A = pi*d^2/4``, ``nu`` the fluid's kinematic viscosity)::

        dp = 128*nu*L/(pi*d^4) * m_flow + L/A * der(m_flow)
    """

    L = Parameter(1.0, unit="m", min=0.0, doc="length")
    d = Parameter(0.01, unit="m", min=0.0, doc="inner diameter")

    def equations(self):
        yield from self.two_port_equations()
        resistance = 128 * self.fluid.nu * self.L / (ca.pi * self.d ** 4)
        inertance = self.L / (ca.pi * self.d ** 2 / 4)
        yield self.dp == resistance * self.m_flow + inertance * der(self.m_flow)


class Pipe(Model):
    """A pipe of length ``L`` and inner diameter ``d`` in ``n`` segments: the liquid's
    compressibility in ``n`` volumes ``V/n`` at the segments' centres, laminar friction and
    the liquid's inertia in the ``n + 1`` sections between them (half segments at the
    ends), so pressure waves travel at ``sqrt(beta/rho)`` (within the discretisation error,
    of order ``1/n^2`` for the first modes). ``n`` is structural; ``p_start`` is the pressure
    the volumes start at.

    Example::

        pipe = Pipe(L=10.0, d=0.02, n=20)
    """

    port_a = Port()
    port_b = Port()

    def __init__(self, L=1.0, d=0.01, n: int = 5, p_start=1e5, fluid: Fluid | None = None,
                 **modifiers):
        super().__init__(**modifiers)
        n = int(n)
        if n < 1:
            raise mb.DeclarationError(f"Pipe: n must be at least 1 segment, not {n}")
        self.n = n
        area_volume = ca.pi * d ** 2 / 4 * L / n if not isinstance(d, ca.SX) else None
        for k in range(n + 1):
            length = L / n if 0 < k < n else L / (2 * n)
            self.add(f"section{k}", PipeSection(L=length, d=d, fluid=fluid))
        for k in range(n):
            self.add(f"volume{k}", FixedVolume(V=area_volume, p=mb.Fixed(p_start),
                                               fluid=fluid))

    def equations(self):
        yield mb.connect(self.port_a, self.section0.port_a)
        for k in range(self.n):
            yield mb.connect(getattr(self, f"section{k}").port_b,
                             getattr(self, f"volume{k}").port,
                             getattr(self, f"section{k + 1}").port_a)
        yield mb.connect(getattr(self, f"section{self.n}").port_b, self.port_b)


class CheckValve(_TwoPorts):
    """Lets the liquid pass from port_a to port_b only: it opens when ``dp`` rises above the
    cracking pressure ``p_crack`` and closes when ``dp`` falls below ``p_close`` (hysteresis,
    ``p_close <= p_crack``), both at events. Open, it is an orifice (``Cd``, ``A``); closed,
    only the leakage conductance ``G_leak`` [m³/(s·Pa)] passes.

    Equations::

        open = dp > p_close if pre(open) else dp > p_crack
        m_flow = Cd*A*sqrt(2*rho)*regularized_root(dp, dp_small)   if open
                 rho*G_leak*dp                                      else
    """

    Cd = Parameter(0.7, min=0.0, doc="discharge coefficient")
    A = Parameter(1e-5, unit="m2", min=0.0, doc="area when open")
    p_crack = Parameter(1e4, unit="Pa", doc="pressure drop at which it opens")
    p_close = Parameter(0.0, unit="Pa", doc="pressure drop below which it closes")
    G_leak = Parameter(1e-14, unit="m3/(s.Pa)", min=0.0, doc="leakage conductance when closed")
    dp_small = Parameter(100.0, unit="Pa", min=0.0, doc="regularisation of the open law")
    open = mb.Discrete(0, doc="1 while open")

    def equations(self):
        yield from self.two_port_equations()
        yield mb.Assert(self.p_close <= self.p_crack,
                        "CheckValve: p_close must not exceed p_crack (closed between them, it "
                        "would open and close at once)")
        yield self.open == if_else(mb.pre(self.open), self.dp > self.p_close,
                                   self.dp > self.p_crack)
        rho = self.rho(0.5 * (self.port_a.p + self.port_b.p))
        yield self.m_flow == if_else(
            self.open, self.Cd * self.A * sqrt(2 * rho) * regularized_root(self.dp, self.dp_small),
            rho * self.G_leak * self.dp)


class ReliefValve(_TwoPorts):
    """Limits the pressure at port_a (relative to port_b, the tank line): closed below the
    cracking pressure ``p_crack``, it opens in proportion to the overpressure up to the full
    area ``A`` at ``p_crack + p_range`` (a spring-loaded poppet), and closes again only below
    ``p_crack - p_hyst`` (hysteresis). Open, its opening follows the closing characteristic,
    the opening one shifted down by ``p_hyst``: it pops open to ``p_hyst/p_range`` at the
    cracking pressure, relieves down to ``p_crack - p_hyst`` and closes there with no
    flow left (``p_hyst = 0``, the default: one characteristic). Opening and closing are
    events.

    Equations::

        open = dp > p_crack - p_hyst if pre(open) else dp > p_crack
        x = clip((dp - p_crack + p_hyst)/p_range, 0, 1)  if open, else 0  (corners: events)
        m_flow = Cd*A*x*sqrt(2*rho)*regularized_root(dp, dp_small) + rho*G_leak*dp
    """

    Cd = Parameter(0.7, min=0.0, doc="discharge coefficient")
    A = Parameter(1e-5, unit="m2", min=0.0, doc="full area")
    p_crack = Parameter(100e5, unit="Pa", doc="cracking pressure (pressure drop)")
    p_range = Parameter(10e5, unit="Pa", min=SMALL, doc="overpressure to open fully")
    p_hyst = Parameter(0.0, unit="Pa", min=0.0, doc="hysteresis of closing")
    G_leak = Parameter(1e-14, unit="m3/(s.Pa)", min=0.0, doc="leakage conductance")
    dp_small = Parameter(100.0, unit="Pa", min=0.0, doc="regularisation of the open law")
    open = mb.Discrete(0, doc="1 while open")
    x = Variable(0.0, doc="relative opening 0..1")

    def equations(self):
        yield from self.two_port_equations()
        yield self.open == if_else(mb.pre(self.open), self.dp > self.p_crack - self.p_hyst,
                                   self.dp > self.p_crack)
        lift = (self.dp - self.p_crack + self.p_hyst) / self.p_range
        yield self.x == if_else(self.open, if_else(lift < 0, 0, if_else(lift > 1, 1, lift)), 0)
        rho = self.rho(0.5 * (self.port_a.p + self.port_b.p))
        yield self.m_flow == (self.Cd * self.A * self.x * sqrt(2 * rho)
                              * regularized_root(self.dp, self.dp_small)
                              + rho * self.G_leak * self.dp)


class SpoolValve(_Hydraulic):
    """Directional 4/3 spool valve: supply ``port_P``, tank ``port_T``, consumers ``port_A``
    and ``port_B``; the input ``x`` (spool position, -1..1) opens P->A and B->T for x > 0,
    P->B and A->T for x < 0. Each metering edge is an orifice of area
    ``A*max(|x| - overlap, 0)/(1 - overlap)`` (``overlap`` > 0: closed centre with a dead
    band; ``overlap`` < 0: underlap, all edges open a little at the centre), plus the
    leakage conductance ``G_leak`` across every edge.

    Equations (``edge(a, b, area)`` the orifice law from a to b)::

        port_P.m_flow = edge(P, A, open_pos) + edge(P, B, open_neg)
        port_A.m_flow = -edge(P, A, open_pos) + edge(A, T, open_neg)
        port_B.m_flow = -edge(P, B, open_neg) + edge(B, T, open_pos)
        port_T.m_flow = -edge(A, T, open_neg) - edge(B, T, open_pos)
    """

    Cd = Parameter(0.7, min=0.0, doc="discharge coefficient")
    A = Parameter(1e-5, unit="m2", min=0.0, doc="area of an edge at full stroke")
    overlap = Parameter(0.0, max=0.99, doc="overlap (or underlap if < 0) in units of the stroke")
    G_leak = Parameter(1e-13, unit="m3/(s.Pa)", min=0.0, doc="leakage conductance of an edge")
    dp_small = Parameter(100.0, unit="Pa", min=0.0, doc="regularisation of the orifice law")
    x = Input(doc="spool position -1..1")
    port_P = Port(doc="supply")
    port_T = Port(doc="tank")
    port_A = Port(doc="consumer A")
    port_B = Port(doc="consumer B")

    def edge(self, a, b, opening):
        dp = a.p - b.p
        rho = self.rho(0.5 * (a.p + b.p))
        return (self.Cd * self.A * opening * sqrt(2 * rho) * regularized_root(dp, self.dp_small)
                + rho * self.G_leak * dp)

    def equations(self):
        yield from self.port_checks()
        P, T, A, B = self.port_P, self.port_T, self.port_A, self.port_B
        def opening(x):  # no event: the edge opens smoothly (the area is continuous)
            return mb.noEvent(if_else(x - self.overlap > 0,
                                      (x - self.overlap) / (1 - self.overlap), 0))
        pos, neg = opening(self.x), opening(-self.x)
        pa, pb, at, bt = self.edge(P, A, pos), self.edge(P, B, neg), self.edge(A, T, neg), \
            self.edge(B, T, pos)
        yield P.m_flow == pa + pb
        yield A.m_flow == -pa + at
        yield B.m_flow == -pb + bt
        yield T.m_flow == -at - bt


class Accumulator(_Hydraulic):
    """Gas-charged (bladder or piston) accumulator of total volume ``V_0``, charged with gas at
    ``p_pre``; the gas follows ``p*V_gas^n = p_pre*V_0^n`` (``n`` = 1 isothermal, 1.4
    adiabatic). Below ``p_pre`` it holds only the liquid of its connection ``V_dead``.

    Equations (``V_liquid`` the liquid volume, ``m`` its mass)::

        V_liquid = V_dead + (V_0*(1 - (p_pre/p)^(1/n)) if p > p_pre else 0)
        m = rho(p)*V_liquid,   der(m) = port.m_flow,   port.p = p

    ``p`` is the state; the switch at ``p_pre`` is an event.
    """

    V_0 = Parameter(1e-3, unit="m3", min=0.0, doc="total (gas) volume")
    p_pre = Parameter(20e5, unit="Pa", min=0.0, doc="gas precharge pressure")
    n = Parameter(1.4, min=1.0, doc="polytropic exponent")
    V_dead = Parameter(1e-6, unit="m3", min=0.0, doc="liquid volume of the connection")
    p = Variable(1e5, unit="Pa", state_select="prefer", doc="pressure")
    V_liquid = Variable(unit="m3", doc="liquid volume")
    V_gas = Variable(unit="m3", doc="gas volume")
    port = Port()

    def equations(self):
        yield from self.port_checks()
        p = self.p
        charged = p > self.p_pre
        yield self.V_gas == if_else(charged, self.V_0 * (self.p_pre / p) ** (1 / self.n),
                                    self.V_0)
        yield mb.Assert(self.V_dead > 0, "Accumulator: V_dead must be positive (below p_pre "
                                         "it is all the liquid the pressure acts on)")
        # (at 0 the gas law's slope is 0 * inf: the integrators stopped with a bare
        # CV_CONV_FAILURE at the start)
        yield mb.Assert(self.p_pre > 0, "Accumulator: p_pre must be positive (the gas "
                                        "precharge, an absolute pressure; without gas the "
                                        "accumulator is a FixedVolume)")
        yield self.V_liquid == self.V_dead + self.V_0 - self.V_gas
        yield self.port.p == p
        rho = self.rho(p)
        # d(rho*V_liquid)/dt with dV_gas/dp = -V_gas/(n p) while charged
        dV_dp = if_else(charged, self.V_gas / (self.n * p), 0)
        yield (self.drho_dp(p) * self.V_liquid + rho * dV_dp) * der(p) == self.port.m_flow


# --------------------------------------------------------------------------------------
# Actuators and machines
# --------------------------------------------------------------------------------------

class Cylinder(ForceElementFlanges, _Hydraulic):
    """Hydraulic cylinder with a massless piston on a rod (``flange``, translational; the
    housing is fixed at 0). ``x = flange.s - x_offset`` is the extension (``x_offset`` the
    rod flange's position at full retraction, e.g. the retracted length of a cylinder on a
    multibody ``LineForceWithFlanges``), ``0 <= x <= stroke`` with
    elastic end stops. Double-acting: chamber a (piston side, area ``A_a``) pushes the rod
    out, chamber b (rod side, area ``A_b``) pulls it in; ``single_acting=True`` leaves
    chamber b vented to the ambient pressure ``p_ambient`` (no port_b). Pressures are
    absolute: the ambient pressure also acts on the rod's outer end (area ``A_a - A_b``),
    so a cylinder with both chambers at ambient pressure exerts no force.

    Equations (chamber volumes ``V_a = V_dead_a + A_a*x``, ``V_b = V_dead_b + A_b*(stroke - x)``)::

        V_a*drho/dp(p_a)*der(p_a) + rho(p_a)*A_a*v = port_a.m_flow
        V_b*drho/dp(p_b)*der(p_b) - rho(p_b)*A_b*v = port_b.m_flow
        f_fluid = p_a*A_a - p_b*A_b - p_ambient*(A_a - A_b)
        flange.f = -(f_fluid + f_stop - d*v)
        f_stop = c_stop*(-x) - d_stop*v  below 0 (never pulling), mirrored above stroke

    The end stops switch at events (``x < 0``, ``x > stroke``).

    Example::

        cylinder = Cylinder(A_a=2e-3, A_b=1e-3, stroke=0.5, x=mb.Fixed(0.1),
                            p_a=mb.Fixed(1e5), p_b=mb.Fixed(1e5))
    """

    A_a = Parameter(2e-3, unit="m2", min=0.0, doc="piston area (chamber a)")
    A_b = Parameter(1e-3, unit="m2", min=0.0, doc="annulus area (chamber b)")
    stroke = Parameter(0.5, unit="m", min=0.0, doc="stroke")
    V_dead_a = Parameter(1e-5, unit="m3", min=0.0, doc="volume of chamber a at x = 0")
    V_dead_b = Parameter(1e-5, unit="m3", min=0.0, doc="volume of chamber b at x = stroke")
    d = Parameter(0.0, unit="N.s/m", min=0.0, doc="viscous friction of the seals")
    c_stop = Parameter(1e8, unit="N/m", min=0.0, doc="stiffness of the end stops")
    d_stop = Parameter(1e5, unit="N.s/m", min=0.0, doc="damping of the end stops")
    x_offset = Parameter(0.0, unit="m", doc="flange.s at full retraction (x = flange.s - x_offset)")
    p_ambient = Parameter(1.01325e5, unit="Pa", doc="ambient pressure on the rod's outer end "
                                                    "(and in a vented chamber b)")
    x = Variable(0.0, unit="m", state_select="prefer", doc="extension of the rod")
    v = Variable(0.0, unit="m/s", state_select="prefer", doc="rod speed")
    p_a = Variable(1e5, unit="Pa", state_select="prefer", doc="pressure in chamber a")
    p_b = Variable(1e5, unit="Pa", doc="pressure in chamber b (double-acting)")
    f_fluid = Variable(unit="N", doc="force of the fluid on the piston, outwards")
    f_stop = Variable(unit="N", doc="force of the end stops on the piston, outwards")
    port_a = Port(doc="chamber a (piston side)")
    flange = translational.Flange(doc="rod end")

    def __init__(self, single_acting: bool = False, **modifiers):
        super().__init__(**modifiers)
        self.single_acting = bool(single_acting)
        if not self.single_acting:
            self.port_b = Port(doc="chamber b (rod side)")

    def equations(self):
        yield from self.port_checks()
        x, v = self.x, self.v
        yield x == self.flange.s - self.x_offset
        yield v == der(x)
        yield mb.Assert(self.V_dead_a > 0, "Cylinder: V_dead_a must be positive (chamber a "
                                           "of no volume at x = 0 is infinitely stiff there)")
        rho_a = self.rho(self.p_a)
        V_a = self.V_dead_a + self.A_a * x
        yield mb.Assert(V_a > 0, "Cylinder: chamber a's volume V_dead_a + A_a*x is not "
                                 "positive: the piston is below x = 0 by more than the end "
                                 "stop allows (a start x outside [0, stroke]?)")
        yield self.port_a.p == self.p_a
        yield (V_a * self.drho_dp(self.p_a) * der(self.p_a) + rho_a * self.A_a * v
               == self.port_a.m_flow)
        if self.single_acting:
            yield self.p_b == self.p_ambient
            yield self.f_fluid == (self.p_a - self.p_ambient) * self.A_a
        else:
            yield mb.Assert(self.A_b <= self.A_a, "Cylinder: the annulus area A_b cannot "
                                                  "exceed the piston area A_a (the rod's "
                                                  "section is A_a - A_b)")
            yield mb.Assert(self.V_dead_b > 0, "Cylinder: V_dead_b must be positive "
                                               "(chamber b of no volume at x = stroke is "
                                               "infinitely stiff there)")
            rho_b = self.rho(self.p_b)
            V_b = self.V_dead_b + self.A_b * (self.stroke - x)
            yield mb.Assert(V_b > 0, "Cylinder: chamber b's volume V_dead_b + A_b*(stroke - "
                                     "x) is not positive: the piston is beyond x = stroke by "
                                     "more than the end stop allows (a start x outside [0, "
                                     "stroke]?)")
            yield self.port_b.p == self.p_b
            yield (V_b * self.drho_dp(self.p_b) * der(self.p_b) - rho_b * self.A_b * v
                   == self.port_b.m_flow)
            yield self.f_fluid == (self.p_a * self.A_a - self.p_b * self.A_b
                                   - self.p_ambient * (self.A_a - self.A_b))
        below, above = x < 0, x > self.stroke
        pushing = mb.noEvent(if_else(-self.c_stop * x - self.d_stop * v > 0,
                                     -self.c_stop * x - self.d_stop * v, 0))
        pulling = mb.noEvent(if_else(-self.c_stop * (x - self.stroke) - self.d_stop * v < 0,
                                     -self.c_stop * (x - self.stroke) - self.d_stop * v, 0))
        yield self.f_stop == if_else(below, pushing, if_else(above, pulling, 0))
        yield self.flange.f == -(self.f_fluid + self.f_stop - self.d * v)


class Pump(ForceElementFlanges, _Hydraulic):
    """Positive-displacement pump on a rotational shaft: displacement ``D`` [m³/rad]
    (``variable=True``: ``D*displacement`` with the input ``displacement`` in -1..1),
    leakage ``leakage`` [m³/(s·Pa)] back across it.

    Equations (``w`` shaft speed, ``dp = port_b.p - port_a.p`` the pressure it raises)::

        q = D*w - leakage*dp                     (volume flow a -> b, at the inlet density)
        port_a.m_flow = rho(port_a.p)*q,   port_b.m_flow = -port_a.m_flow
        flange.tau = D*dp                        (the torque the drive must give)
    """

    D = Parameter(1e-6, unit="m3/rad", min=0.0, doc="displacement per radian")
    leakage = Parameter(0.0, unit="m3/(s.Pa)", min=0.0, doc="internal leakage coefficient")
    w = Variable(0.0, unit="rad/s", doc="shaft speed")
    q = Variable(0.0, unit="m3/s", doc="volume flow from port_a to port_b (inlet density)")
    dp = Variable(0.0, unit="Pa", doc="pressure rise port_b.p - port_a.p")
    port_a = Port(doc="inlet (suction)")
    port_b = Port(doc="outlet (pressure)")
    flange = rotational.Flange(doc="drive shaft")

    def __init__(self, variable: bool = False, **modifiers):
        super().__init__(**modifiers)
        self.variable = bool(variable)
        if self.variable:
            self.displacement = Input(doc="relative displacement -1..1")

    def displacement_now(self):
        return self.D * self.displacement if self.variable else self.D

    def equations(self):
        yield from self.port_checks()
        D = self.displacement_now()
        yield self.w == der(self.flange.phi)
        yield self.dp == self.port_b.p - self.port_a.p
        yield self.q == D * self.w - self.leakage * self.dp
        yield self.port_a.m_flow == self.rho(self.port_a.p) * self.q
        yield self.port_b.m_flow == -self.port_a.m_flow
        yield self.flange.tau == D * self.dp


class Motor(ForceElementFlanges, _Hydraulic):
    """Hydraulic motor (a pump run backwards): the flow from port_a to port_b turns the
    shaft. Displacement ``D`` [m³/rad], leakage ``leakage`` [m³/(s·Pa)] from a to b.

    Equations (``dp = port_a.p - port_b.p`` the pressure it uses)::

        q = D*w + leakage*dp                     (volume flow a -> b, at the inlet density)
        port_a.m_flow = rho(port_a.p)*q,   port_b.m_flow = -port_a.m_flow
        flange.tau = -D*dp                       (it drives what is on its shaft)
    """

    D = Parameter(1e-6, unit="m3/rad", min=0.0, doc="displacement per radian")
    leakage = Parameter(0.0, unit="m3/(s.Pa)", min=0.0, doc="internal leakage coefficient")
    w = Variable(0.0, unit="rad/s", doc="shaft speed")
    q = Variable(0.0, unit="m3/s", doc="volume flow from port_a to port_b (inlet density)")
    dp = Variable(0.0, unit="Pa", doc="pressure drop port_a.p - port_b.p")
    port_a = Port(doc="inlet (pressure)")
    port_b = Port(doc="outlet (return)")
    flange = rotational.Flange(doc="output shaft")

    def equations(self):
        yield from self.port_checks()
        yield self.w == der(self.flange.phi)
        yield self.dp == self.port_a.p - self.port_b.p
        yield self.q == self.D * self.w + self.leakage * self.dp
        yield self.port_a.m_flow == self.rho(self.port_a.p) * self.q
        yield self.port_b.m_flow == -self.port_a.m_flow
        yield self.flange.tau == -self.D * self.dp


# --------------------------------------------------------------------------------------
# Sensors (no flow through a pressure sensor; a flow sensor sits in the line)
# --------------------------------------------------------------------------------------

class PressureSensor(_Hydraulic):
    """Output ``p`` = pressure at ``port``; takes no flow."""

    p = Output(unit="Pa", doc="pressure")
    port = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port.m_flow == 0
        yield self.p == self.port.p


class PressureDifferenceSensor(_Hydraulic):
    """Output ``dp = port_a.p - port_b.p``; takes no flow."""

    dp = Output(unit="Pa", doc="pressure difference")
    port_a = Port()
    port_b = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port_a.m_flow == 0
        yield self.port_b.m_flow == 0
        yield self.dp == self.port_a.p - self.port_b.p


class MassFlowSensor(_Hydraulic):
    """In the line from port_a to port_b: output ``m_flow`` (a -> b), no pressure drop."""

    m_flow = Output(unit="kg/s", doc="mass flow from port_a to port_b")
    port_a = Port()
    port_b = Port()

    def equations(self):
        yield from self.port_checks()
        yield self.port_a.p == self.port_b.p
        yield self.port_a.m_flow + self.port_b.m_flow == 0
        yield self.m_flow == self.port_a.m_flow


class VolumeFlowSensor(MassFlowSensor):
    """In the line: outputs ``m_flow`` and the volume flow ``q = m_flow/rho(p)``."""

    q = Output(unit="m3/s", doc="volume flow from port_a to port_b")

    def equations(self):
        yield from super().equations()
        yield self.q == self.m_flow / self.rho(self.port_a.p)
