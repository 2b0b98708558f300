"""Errors raised by mbmodel.

Every error names the component, connector, parameter or equation involved and says what
to change. They all derive from :class:`ModelError`, so ``except mbmodel.ModelError``
catches any problem with a model (as opposed to a bug in mbmodel).
"""

import os
import sys


class ModelError(Exception):
    """Base class of all errors about a user's model."""


class DeclarationError(ModelError):
    """A component declaration is malformed (bad modifier, bad attribute, bad type)."""


class ModelNotInitialized(DeclarationError, AttributeError):
    """A model used before ``Model.__init__`` ran (a subclass's ``__init__`` without
    ``super().__init__(**modifiers)``); an AttributeError too, so ``getattr(model, name,
    default)`` still gives the default."""


class ParameterError(ModelError):
    """A parameter value is non-finite, out of its bounds, or of the wrong shape."""


class InvalidConnectionError(ModelError):
    """Two connectors cannot be connected (different types, flow to non-flow, ...)."""


class BalanceError(ModelError):
    """The number of equations differs from the number of unknowns."""


class StructuralSingularityError(ModelError):
    """The equations cannot be solved for the unknowns whatever the parameter values."""


class InitializationError(ModelError):
    """No consistent initial state satisfies the initial conditions."""


class SimulationError(ModelError):
    """The integrator failed, or the solution became NaN or infinite. Raised during a run,
    it carries ``time`` (where it happened), ``variable`` (the first non-finite one, if
    that was the cause) and ``result`` (the :class:`~mbmodel.result.Result` up to the last
    output time reached); these are None for errors found before the run starts."""

    time = None
    variable = None
    result = None


class KinematicLoopError(BalanceError):
    """A connection closes a loop of an overdetermined connector that cannot handle loops
    (e.g. a closed kinematic chain of multibody frames)."""


class ImplicitStartWarning(UserWarning):
    """States or iteration variables start from an implicit 0: no start value was declared
    or given. Dymola and OpenModelica warn the same way; give a start (``Fixed(value)`` for a
    hard initial condition, ``Guess(value)`` for a guess) to silence it."""


class NoValueWarning(UserWarning):
    """Parameters that no declaration, modifier or assignment gave a value: 0 is used.
    Dymola warns the same way; declare a value (``Parameter(1.0)``) or give one
    (``Resistor(R=100.0)``) to silence it."""


class NotUniqueWarning(UserWarning):
    """A steady state (or initial state) was found where the equations leave directions
    free (two tanks without outflow: any common level; a quaternion's norm and the turn
    about gravity): the one found is the nearest to the start values. Give the missing
    condition (a fixed start, an initial equation) to choose one."""


class ModelChangedWarning(UserWarning):
    """A parameter or start value of a model was set after the model was compiled: the
    compiled model keeps the values it was compiled with (it is a snapshot). Pass new
    parameter values as ``params={...}``, or compile again. Seen are assignments to
    members (``model.load.J = 5.0``, ``model.load.flange_a.phi = Fixed(0.1)``) and changes
    made to a declaration object directly (``model.load.declaration("J").value = 5.0``)."""


class LostImpulseWarning(UserWarning):
    """A variable whose time derivative the model uses jumps at a time event (a prescribed
    angle following a ``Step``): the derivative of the jump is an impulse, which the results
    do not hold. Make the variable as smooth as the derivatives taken of it (a smooth
    reference, a filter) or model the impact. See :mod:`mbmodel.impulses`."""


class MethodReplacedWarning(UserWarning):
    """The integration method asked for cannot integrate this model and another one ran:
    explicit methods, Adams and BDF (CVODES) take no algebraic variables, so a model that
    keeps some runs IDAS (BDF for DAEs); ``result.methods`` lists what ran. Ask for
    ``method="idas"`` (or ``"auto"``) to silence it, or compile with fewer algebraic
    variables (tearing keeps those of nonlinear blocks)."""


class SwitchPointWarning(UserWarning):
    """A linearization's operating point lies on the switch of a relation (a friction
    element at rest, a diode at 0 V): the model is not differentiable there, and the
    matrices are those of the branch in force. Linearize a little to one side of the switch
    for the branch wanted."""


def user_stacklevel() -> int:
    """The stack level (for ``warnings.warn`` called by the caller of this function) of
    the first frame outside mbmodel: the user's call, however deep inside mbmodel the
    warning is raised (``simulate`` compiling, ``linearize`` solving, ``sweep``)."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level
