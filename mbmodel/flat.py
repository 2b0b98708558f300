"""The flat model: the plain data the flattening stage hands to structural analysis
(scalar variables, parameters, equations and where each came from).

Example::

    flat = mbmodel.flatten(model)
    print(len(flat.equations), flat.variables[0].name, flat.equations[0].description)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import casadi as ca
import networkx as nx
import numpy as np

__all__ = ["FlatVariable", "FlatParameter", "FlatEquation", "FlatAssert", "FlatModel",
           "describe"]


@dataclass
class FlatVariable:
    """One scalar unknown (or input) of the flat model."""

    name: str
    symbol: ca.SX
    kind: str  # "unknown", "derivative" or "input"
    origin: str
    start: float = 0.0
    fixed: bool = False
    state_select: str = "default"
    unit: str = ""
    nominal: float = 1.0
    min: float = -np.inf
    max: float = np.inf
    is_flow: bool = False
    derivative_of: int | None = None
    derivative: int | None = None
    start_given: bool = True


@dataclass
class FlatParameter:
    """One scalar parameter: a numeric ``value`` or a ``binding`` to other parameters."""

    name: str
    symbol: ca.SX
    origin: str
    value: float | None
    binding: ca.SX | None
    unit: str = ""
    min: float = -np.inf
    max: float = np.inf


@dataclass
class FlatEquation:
    """One scalar equation ``residual == 0`` and where it came from. ``shown`` is its text
    or the equation as written (formatted by :attr:`description` when a message needs it:
    formatting every equation of a large model costs more than analysing it)."""

    residual: ca.SX
    origin: str
    shown: object
    kind: str = "model"  # "model", "connection", "unconnected flow", "residue", "initial"

    @property
    def description(self) -> str:
        if not isinstance(self.shown, str):
            self.shown = describe(self.shown)
        return self.shown


@dataclass
class FlatAssert:
    """A condition on parameters only (nonzero when it holds) and its message."""

    condition: ca.SX
    message: str
    origin: str


@dataclass
class FlatModel:
    """The flat DAE handed to structural analysis. Plain data, no behaviour."""

    name: str
    variables: list[FlatVariable]
    parameters: list[FlatParameter]
    equations: list[FlatEquation]
    initial_equations: list[FlatEquation]
    time_events: list[ca.SX]
    connection_graph: nx.Graph
    index: dict[str, int] = field(default_factory=dict)  # variable name -> position
    asserts: list[FlatAssert] = field(default_factory=list)
    #: Declared periods of time-made signals (parameter expressions), see Model.time_scale.
    time_scales: list = field(default_factory=list)

    def variable(self, name: str) -> FlatVariable:
        return self.variables[self.index[name]]


def describe(expr) -> str:
    """An expression as text for messages, cut to a readable length."""
    text = str(expr)
    return text if len(text) <= 160 else text[:157] + "..."
