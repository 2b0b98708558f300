"""mbmodel: object-oriented, acausal modeling of physical systems, compiled with casadi.

Example::

    import mbmodel as mb
    from mbmodel.libraries import electrical as el

    class RC(mb.Model):
        source = el.ConstantVoltage(V=1.0)
        resistor = el.Resistor(R=1e3)
        capacitor = el.Capacitor(C=1e-6, v=mb.Fixed(0.0))
        ground = el.Ground()

        def equations(self):
            yield mb.connect(self.source.p, self.resistor.p)
            yield mb.connect(self.resistor.n, self.capacitor.p)
            yield mb.connect(self.capacitor.n, self.source.n, self.ground.p)

    result = mb.simulate(RC(), t_end=5e-3)
    print(result["capacitor.v"][-1])
"""

from .core import (ANALYSES, Assert, WrittenElsewhere, Branch, ClosesLoop, Connect, Connector, Derivative, Fixed, Flow, Guess, Input, LoopCut, Model, Output,
                   Overdetermined, Parameter, Potential, PotentialRoot, Root, Start, Variable,
                   connect, der, time)
from .discrete import (Discrete, change, edge, initial, noEvent, pre, reinit, sample,
                       when)
from .errors import (BalanceError, DeclarationError, ImplicitStartWarning, InitializationError,
                     InvalidConnectionError, KinematicLoopError, LostImpulseWarning,
                     MethodReplacedWarning, ModelChangedWarning, ModelError,
                     NoValueWarning, NotUniqueWarning, ParameterError, SimulationError,
                     SwitchPointWarning,
                     StructuralSingularityError)
from . import functions
from .flatten import FlatModel, flatten
from .structure import SortedSystem, analyze
from .compiler import BuildTimes
from .compiled import CompiledModel, compile, initialize, simulate
from .result import Result, format_table
from .persist import PersistError, load
from .visuals import VisualShape
from .sweep import sweep
from .units import UnitError

__version__ = "0.1.0"

__all__ = [
    "Model", "Connector", "Parameter", "Variable", "Potential", "Flow", "Input", "Output",
    "Overdetermined", "LoopCut", "Root", "PotentialRoot", "Branch", "ClosesLoop", "Derivative", "Assert", "WrittenElsewhere", "ANALYSES", "Start",
    "Fixed", "Guess", "der", "Discrete", "when", "reinit", "pre", "edge", "change", "initial",
    "noEvent", "sample",
    "connect", "time", "Connect", "flatten", "FlatModel", "ModelError", "DeclarationError",
    "ParameterError", "InvalidConnectionError", "BalanceError", "StructuralSingularityError",
    "InitializationError", "SimulationError", "ImplicitStartWarning", "LostImpulseWarning", "MethodReplacedWarning", "ModelChangedWarning", "NoValueWarning", "NotUniqueWarning", "SwitchPointWarning", "KinematicLoopError", "analyze", "SortedSystem", "compile",
    "CompiledModel", "BuildTimes", "initialize", "simulate", "Result", "format_table",
    "load", "PersistError", "sweep", "VisualShape", "UnitError",
]
