"""The modeling language: components, connectors, variables, parameters and equations.

A component is a Python class deriving from :class:`Model`. Its class body declares
parameters, variables, connectors and sub-components; its :meth:`Model.equations` method
yields equations (``lhs == rhs`` on casadi SX expressions) and ``connect(...)`` statements.

Example::

    from mbmodel import Model, Connector, Potential, Flow, Parameter, Variable, connect

    class Pin(Connector):
        v = Potential(unit="V")
        i = Flow(unit="A")

    class Resistor(Model):
        R = Parameter(1.0, unit="Ohm", min=0.0)
        p = Pin()
        n = Pin()

        def equations(self):
            yield self.p.v - self.n.v == self.R * self.p.i
            yield self.p.i + self.n.i == 0

Nothing is symbolic-evaluated at class definition: declarations are templates that every
instance copies, so one class serves any number of instances.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import itertools
import math
import re
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Iterable

import casadi as ca
import numpy as np

from .errors import DeclarationError, ModelNotInitialized, ParameterError

__all__ = [
    "Model", "Connector", "Parameter", "Variable", "Potential", "Flow", "Input", "Output",
    "Start", "Fixed", "Guess", "der", "connect", "time", "Connect", "Overdetermined", "Root",
    "PotentialRoot", "Branch", "ClosesLoop", "Derivative", "ANALYSES", "LoopCut",
]

_declaration_counter = itertools.count()
#: A component or connector class's declarations in order, by class and by the kinds asked
#: for (read once per class and kinds, see _class_members).
_CLASS_DECLARATIONS: "weakref.WeakKeyDictionary[type, dict]" = weakref.WeakKeyDictionary()

# The model being compiled in this thread and its cache (Model.model_cache): what components
# derive from the whole model lives for one compile, never in the user's objects, where a
# model changed and compiled again would read it stale.
_compiling = threading.local()


def _outermost(model):
    """(A function, not only the method: a user's member may shadow a method's name.)"""
    while model._parent is not None:
        model = model._parent
    return model


@contextlib.contextmanager
def compiling_scope(model):
    """Context of one compile (flattening) of ``model``: :meth:`Model.model_cache` answers
    with one dict for all its components until the context ends."""
    outer = getattr(_compiling, "scope", None)
    _compiling.scope = (model, {})
    _numpy_functions_quiet(True)
    try:
        yield
    finally:
        _compiling.scope = outer
        _numpy_functions_quiet(False)


#: Flattenings under way (all threads) that hold casadi's numpy mode quiet, and its lock.
_quiet_numpy = {"holders": 0, "set": False}
_quiet_numpy_lock = threading.Lock()


def _numpy_functions_quiet(enter: bool):
    """``np.sin(self.x)`` in ``equations()`` gives a casadi expression, as mbmodel's
    functions do; casadi 3.8 adds a 20-line FutureWarning to it unless its numpy mode was
    chosen. Unless the user chose one, the legacy mode is set without the warning while
    any model is flattened (a global option: counted across threads), and unset after the
    last, unless the user chose a mode meanwhile."""
    options = ca.GlobalOptions
    if not hasattr(options, "getNumpyMode"):
        return
    with _quiet_numpy_lock:
        if enter:
            _quiet_numpy["holders"] += 1
            if _quiet_numpy["holders"] == 1 and options.getNumpyMode() == 0:
                options.setNumpyMode(-1)
                _quiet_numpy["set"] = True
            return
        _quiet_numpy["holders"] -= 1
        if _quiet_numpy["holders"] == 0 and _quiet_numpy["set"]:
            _quiet_numpy["set"] = False
            if options.getNumpyMode() == -1:
                options.setNumpyMode(0)


#: The independent variable (simulation time) as a casadi symbol.
time = ca.SX.sym("time")

STATE_SELECT = ("never", "avoid", "default", "prefer", "always")
#: How strongly a variable wants to be a state, by ``state_select`` (higher: more).
STATE_PRIORITY = {name: rank for rank, name in enumerate(STATE_SELECT)}

#: What a model is compiled for. Libraries may write different (equivalent) equations for
#: each, e.g. a multibody library uses articulated-body quantities for "forward" dynamics
#: and cut forces for "inverse" dynamics; connector variables may exist in one only.
ANALYSES = ("forward", "inverse")


def _shape_of(shape) -> tuple[int, int]:
    if shape in ((), None, 1):
        return (1, 1)
    if isinstance(shape, int):
        return (shape, 1)
    if len(shape) == 1:
        return (int(shape[0]), 1)
    return (int(shape[0]), int(shape[1]))


def _as_array(value, shape: tuple[int, int], what: str) -> np.ndarray:
    """``value`` as a float array of ``shape`` (a number fills it): always a copy, so that
    an array the caller fills again (one buffer for components built in a loop) does not
    change the values given before."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise DeclarationError(f"{what}: {value!r} is not a number") from None
    if arr.size == 1:
        arr = np.full(shape, float(arr.reshape(-1)[0]))
    elif arr.size == shape[0] * shape[1]:
        arr = arr.reshape(shape, order="C")
    else:
        raise DeclarationError(f"{what}: value of size {arr.size} does not fit shape {shape}")
    return arr


# --------------------------------------------------------------------------------------
# Modifiers for variables
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Start:
    """Modifier for a variable's start value: ``Inertia(w=Start(1.0, fixed=True))``.

    ``fixed=True`` makes the start value a hard initial condition; ``fixed=False`` makes it a
    guess for the initialization and for nonlinear solvers; ``None`` keeps the declaration's
    setting. ``state_select`` ("never", "avoid", "default", "prefer", "always") overrides the
    declared state preference.

    Example: ``Inertia(w=Start(1.0, fixed=True, state_select="prefer"))``
    """

    value: Any
    fixed: bool | None = None
    state_select: str | None = None


def Fixed(value, state_select: str | None = None) -> Start:
    """Hard initial condition.

    Example: ``Inertia(phi=Fixed(0.0), w=Fixed(1.0))`` starts at angle 0 turning at 1 rad/s."""
    return Start(value, True, state_select)


def Guess(value, state_select: str | None = None) -> Start:
    """Start value used as a guess only (the initialization may move it).

    Example: ``Revolute(phi=Guess(0.3))`` picks the assembly of a loop near 0.3 rad."""
    return Start(value, False, state_select)


# --------------------------------------------------------------------------------------
# Declarations: Parameter, Variable and the connector-level kinds
# --------------------------------------------------------------------------------------

#: The attributes of a declared member whose change after compiling is noted
#: (:class:`~mbmodel.ModelChangedWarning`).
_NOTED_ATTRIBUTES = frozenset({"value", "start", "fixed", "min", "max", "nominal",
                               "state_select", "default"})


class Declaration:
    """Base class of what a component class body may declare."""

    _symbol = None  # see symbol

    def __init__(self, *, doc: str = ""):
        self.doc = doc
        self._order = next(_declaration_counter)
        self.name: str | None = None
        self.owner = None

    def __set_name__(self, owner, name):
        # Record the attribute name so a class-level template knows what it is called.
        self.name = name

    def __get__(self, instance, owner=None):
        # A component's (or connector's) member declared in its class reads as the
        # member's symbol, made on first use: most are never read before flattening makes
        # every symbol again under its full name, and a chain of 1000 links has 56 000.
        # (Not stored in the instance: flattening writes nothing into the user's objects.)
        if instance is None:
            return self
        members = instance.__dict__.get("_members")
        if members is None:
            members = instance.__dict__.get("_variables")
        member = members.get(self.name) if members is not None else None
        if not isinstance(member, Declaration):
            return self  # not registered yet (before Model.__init__): the declaration
        return member.symbol

    def __setattr__(self, key, value):
        object.__setattr__(self, key, value)
        # (a change made to a component's member directly, model.load.declaration("w")
        # .start = 1.0, after the model was compiled: see ModelChangedWarning)
        if key in _NOTED_ATTRIBUTES and _changes_after_compile:
            owner = self.__dict__.get("owner")
            if owner is not None and not isinstance(owner, Model):
                owner = getattr(owner, "owner", None)  # (a connector's variable)
            if isinstance(owner, Model):
                _note_change(owner, self)

    @property
    def symbol(self) -> ca.SX | None:
        """The member's casadi symbol (made on first use, named by the member), or None
        for a declaration in a class body."""
        symbol = self._symbol
        if symbol is None and self.owner is not None:
            symbol = self._symbol = ca.SX.sym(self.name, *self.shape)
        return symbol

    @symbol.setter
    def symbol(self, value):
        self._symbol = value

    def _copy_for(self, owner, name):
        new = object.__new__(type(self))
        # (into the dict: no __setattr__ for each of the ~56 members of a link)
        new.__dict__.update(self.__dict__, owner=owner, name=name, _symbol=None)
        return new

    @property
    def path(self) -> str:
        base = self.owner.path if self.owner is not None else ""
        return f"{base}.{self.name}" if base else self.name

    def __repr__(self):
        # What help() and the docs show for a declaration in a class body.
        shown = [f"{k}={v!r}" for k, v in self._shown() if v not in (None, "", (), False)]
        return f"{type(self).__name__}({', '.join(shown)})"

    def _shown(self):
        return [("unit", getattr(self, "unit", "")), ("doc", self.doc)]

    def _no_arithmetic(self, *_):
        # (2 * J0 in a class body, a Modelica habit: Python's TypeError named no remedy)
        name = self.name or "J0"
        named = f" ({self.name})" if self.name else ""
        raise DeclarationError(
            f"a {type(self).__name__} declared in a class body{named} "
            f"is used in an expression there, where it is a declaration without a value; "
            f"bind sub-components to parameters in __init__, after "
            f"super().__init__(**modifiers): e.g. self.part = Part(k=2 * self.{name})")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arithmetic
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _no_arithmetic
    __neg__ = __pos__ = __abs__ = _no_arithmetic


class Parameter(Declaration):
    """A constant of the model whose value can change between runs without recompiling.

    ``value`` is a number, an array (with ``shape``), or a casadi expression of other
    parameters (a *binding*, e.g. ``Inertia(J=self.J_motor * 2)``). ``min``/``max`` are
    checked whenever values are set; non-finite values are rejected.

    Example: ``R = Parameter(1.0, unit="Ohm", min=0.0, doc="Resistance")``
    """

    def __init__(self, value=None, *, unit: str = "", min: float = -math.inf,
                 max: float = math.inf, shape=(), doc: str = ""):
        super().__init__(doc=doc)
        #: whether the declaration or a modifier gave a value (else 0 is used, and the
        #: compiler warns: :class:`~mbmodel.errors.NoValueWarning`)
        self.valued = value is not None
        value = 0.0 if value is None else value
        self.default = value
        self.unit = unit
        if min > max:
            raise DeclarationError(f"Parameter({value!r}): its bounds are impossible: min = "
                                   f"{min} is above max = {max}")
        self.min = min
        self.max = max
        self.shape = _shape_of(shape) if shape != () else _shape_of(np.shape(value) if not
                                                                  isinstance(value, ca.SX) else value.shape)
        self.symbol: ca.SX | None = None
        self.value = None  # number/array, or SX binding

    def _shown(self):
        value = self.value if self.value is not None else self.default
        if isinstance(value, (ca.SX, ca.MX)):
            value = str(value)
        elif isinstance(value, np.ndarray):
            value = value.tolist()
        bounds = [(k, v) for k, v in (("min", self.min), ("max", self.max)) if math.isfinite(v)]
        return [("value", value), ("unit", self.unit)] + bounds + [("doc", self.doc)]

    def _instantiate(self, owner, name, modifier=None):
        new = self._copy_for(owner, name)
        value = self.default if modifier is None else modifier
        if modifier is not None:
            new._check_not_spread(modifier)
        new.set(value)
        new.__dict__["valued"] = self.valued or modifier is not None  # (no change to note)
        return new

    def _check_not_spread(self, value):
        """A number given for a vector or matrix parameter (Revolute(n=1.0), a body's
        r=0.5) was spread over every entry: an axis (1,1,1)/sqrt(3), a cylinder along the
        diagonal. Modelica refuses ``Real r[3] = 0.5``; so does a modifier here (a
        declaration's default may still fill its entries)."""
        size = self.shape[0] * self.shape[1]
        if size > 1 and not isinstance(value, ca.SX) and np.size(value) == 1:
            where = (f"{type(self.owner).__name__}.{self.name}" if self.owner is not None
                     and not self.owner.path else self.path)
            raise ParameterError(
                f"parameter '{where}' has {size} entries (shape {self.shape}), and was given "
                f"the one number {float(np.ravel(value)[0]):g}; give all {size} (e.g. "
                f"{[float(np.ravel(value)[0])] * size if size <= 4 else '[...]'}) — a number "
                f"is not spread over a vector")

    def set(self, value):
        """Set the value (number, array or parameter expression) and validate it."""
        if isinstance(value, ca.SX):
            if value.shape != self.shape and value.numel() != self.shape[0] * self.shape[1]:
                raise ParameterError(f"parameter '{self.path}': binding of shape {value.shape} "
                                     f"does not fit shape {self.shape}")
            self.value = ca.reshape(value, *self.shape)
            self.valued = True
            return
        if isinstance(value, (Parameter,)):
            raise DeclarationError(
                f"parameter '{self.path}': bound to the declaration of "
                f"{value.name or 'a parameter'} (in a class body, where it has no value); "
                f"bind it in __init__, after super().__init__(**modifiers), to the "
                f"parameter's value: e.g. self.part = Part({self.name}=self."
                f"{value.name or 'J0'})")
        try:
            arr = _as_array(value, self.shape, f"parameter '{self.path}'")
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"parameter '{self.path}': value {value!r} is not numeric") from exc
        owner = self.owner
        where = (f"{type(owner).__name__}.{self.name}" if owner is not None and not self.owner.path
                 else self.path)
        check_parameter_value(where, arr, self.min, self.max)
        self.value = arr
        self.valued = True


def check_parameter_value(path: str, arr, lo, hi):
    """Raise :class:`ParameterError` unless every entry of ``arr`` is finite and in bounds."""
    arr = np.asarray(arr, dtype=float)
    # array methods, not np.all/np.any: called for every declaration of every instance
    if arr.min(initial=np.inf) >= lo and arr.max(initial=-np.inf) <= hi and \
            np.isfinite(arr).all():
        return
    shown = arr.ravel()[0] if arr.size == 1 else arr.ravel().tolist()
    if not np.isfinite(arr).all():
        raise ParameterError(f"parameter '{path}' = {shown} is not finite; "
                             f"give it a finite value")
    if (arr < lo).any() or (arr > hi).any():
        raise ParameterError(f"parameter '{path}' = {shown} is outside its bounds "
                             f"[{lo}, {hi}]; choose a value within them")


class Variable(Declaration):
    """A time-varying unknown of the model.

    ``start`` is a guess for initialization unless ``fixed=True`` makes it a hard initial
    condition. ``state_select`` ("never", "avoid", "default", "prefer", "always") tells state
    selection which variables to prefer as states. ``analysis="forward"`` (or ``"inverse"``)
    makes the variable exist only when the model is compiled for that analysis (a
    connector whose through variables differ between forward and inverse dynamics).
    ``input_in="inverse"`` makes it an external input of the model compiled for that
    analysis (a joint coordinate prescribed in inverse dynamics), named by its path.

    ``start`` may also be given as a modifier is (``Fixed(0.0)``, ``Guess(1.0)``,
    ``Start(...)``): its ``fixed`` and ``state_select``, where set, are the declaration's.
    ``determined_outside=True`` declares an unknown that the enclosing model, not its own
    component, writes the equation for (the local balance check counts it there).

    Example: ``w = Variable(start=0.0, fixed=True, unit="rad/s", state_select="prefer")``
    """

    kind = "variable"

    def __init__(self, start=None, *, fixed: bool = False, unit: str = "", min: float = -math.inf,
                 max: float = math.inf, nominal: float = 1.0, state_select: str = "default",
                 shape=(), analysis: str | None = None, input_in: str | None = None,
                 determined_outside: bool = False, doc: str = ""):
        super().__init__(doc=doc)
        #: an unknown its own component writes no equation for: the enclosing model does
        #: (FreeSignal's y, the command an inverse model solves for); the local balance
        #: check counts it for the enclosing model
        self.determined_outside = bool(determined_outside)
        if isinstance(start, Start):
            if start.fixed is not None:
                if fixed and not start.fixed:
                    raise DeclarationError(
                        f"Variable(start={start!r}, fixed=True): a guess cannot be fixed; "
                        f"write start=Fixed({start.value!r}) or drop fixed=True")
                fixed = start.fixed
            if start.state_select is not None:
                state_select = start.state_select
            start = start.value
        for what, value in (("analysis", analysis), ("input_in", input_in)):
            if value is not None and value not in ANALYSES:
                raise DeclarationError(f"{what} must be one of {ANALYSES} or None, not {value!r}")
        self.analysis = analysis
        self.input_in = input_in
        if state_select not in STATE_SELECT:
            raise DeclarationError(f"state_select must be one of {STATE_SELECT}, not {state_select!r}")
        #: Whether a start value was given (else 0: a warning lists the states and iteration
        #: variables that start from this implicit 0, as Dymola and OpenModelica do).
        self.start_given = start is not None
        self.start = 0.0 if start is None else start
        self.fixed = fixed
        self.unit = unit
        self.min = min
        self.max = max
        self.nominal = nominal
        self.state_select = state_select
        self.shape = _shape_of(shape)
        self.symbol: ca.SX | None = None
        self._checked_start: np.ndarray | None = None  # see _instantiate
        #: a start value given as a parameter expression (see _check_start), else None
        self.start_expression: ca.SX | None = None

    def _shown(self):
        start = self.start.tolist() if isinstance(self.start, np.ndarray) else self.start
        return [("start", start if self.start_given else None), ("fixed", self.fixed),
                ("unit", self.unit), ("doc", self.doc)]

    def _instantiate(self, owner, name, modifier=None):
        new = self._copy_for(owner, name)
        if modifier is None and self._checked_start is not None:
            # the declaration's, checked for its first instance (into the dict: a new
            # member is no change to note)
            new.__dict__["start"] = self._checked_start
            return new
        if modifier is not None:
            new.modify(modifier)
        else:
            new._check_start()
        if modifier is None:  # shared by every instance without a modifier: read-only
            new.start.setflags(write=False)
            self._checked_start = new.start
        return new

    def modify(self, modifier):
        """Apply a :class:`Start` modifier (start value, fixed flag, state preference)."""
        if not isinstance(modifier, Start):
            raise DeclarationError(
                f"variable '{self.path}': give its start value as Fixed(value) (hard initial "
                f"condition), Guess(value) or Start(value, fixed=...), not {modifier!r}")
        self.start = modifier.value
        self.start_given = True
        if modifier.fixed is not None:
            self.fixed = modifier.fixed
        if modifier.state_select is not None:
            if modifier.state_select not in STATE_SELECT:
                raise DeclarationError(f"variable '{self.path}': state_select must be one of "
                                       f"{STATE_SELECT}")
            self.state_select = modifier.state_select
        self._check_start()

    def _check_start(self):
        start = self.start
        if isinstance(start, (list, tuple, np.ndarray)) and any(
                isinstance(e, ca.SX) for e in np.ravel(np.asarray(start, dtype=object))):
            # [self.a, 0.0]: entries that are parameter expressions
            start = ca.vertcat(*[ca.SX(e) for e in np.ravel(np.asarray(start, dtype=object))])
        if isinstance(start, ca.SX) and not start.is_constant():
            # a parameter expression (Inertia(phi=Fixed(self.phi0))): fixed, it becomes the
            # initial equation phi = phi0; as a guess, its value at the parameters' defaults
            size = self.shape[0] * self.shape[1]
            if start.numel() not in (1, size):
                raise DeclarationError(f"variable '{self.path}': start value of shape "
                                       f"{start.shape} does not fit shape {self.shape}")
            if self.kind == "discrete":
                raise DeclarationError(
                    f"variable '{self.path}': a discrete variable's start value is a number, "
                    f"not the expression {start}; assign it from the parameter in a when "
                    f"clause on initial() instead")
            self.start_expression = ca.repmat(start, size, 1) if start.numel() == 1 else start
            self.start = np.zeros(self.shape)
            return
        self.start_expression = None
        self.start = _as_array(self.start, self.shape, f"variable '{self.path}'")
        if not np.isfinite(self.start).all():
            raise DeclarationError(f"variable '{self.path}': its start value "
                                   f"{self.start.tolist()} is not finite; give a finite number")


class Potential(Variable):
    """Across variable of a connector: equal for all connectors in a connection set.

    Example::

        class Pin(Connector):
            v = Potential(unit="V")
            i = Flow(unit="A")
    """

    kind = "potential"


class Flow(Variable):
    """Through variable of a connector: sums to zero over a connection set (positive into
    the component).

    Example: ``tau = Flow(unit="N.m")`` in a rotational flange (see :class:`Potential`)."""

    kind = "flow"


class Input(Variable):
    """Causal input signal of a block; connected to an :class:`Output` (or left open on the
    top-level model, where it becomes an external input of the compiled model).

    Example::

        class Gain(Model):
            k = Parameter(2.0)
            u = Input()
            y = Output()

            def equations(self):
                yield self.y == self.k * self.u
    """

    kind = "input"


class Output(Variable):
    """Causal output signal of a block (see :class:`Input` for an example).
    ``connect(block.y, other.u)`` makes the input equal to it."""

    kind = "output"


class Overdetermined(Potential):
    """A potential variable with redundant entries (e.g. a rotation matrix).

    ``residue(a, b)`` returns the ``residue_size`` independent equations that make two
    instances equal when a connection closes a loop of the orientation graph; along the
    spanning tree of that graph all entries are equated instead.
    """

    kind = "overdetermined"

    def __init__(self, *, residue, residue_size: int, shape, doc: str = "", **kw):
        super().__init__(shape=shape, doc=doc, **kw)
        self.residue = residue
        self.residue_size = residue_size


# --------------------------------------------------------------------------------------
# Connectors
# --------------------------------------------------------------------------------------

class Connector:
    """Base class of connector types. Subclasses declare :class:`Potential` and :class:`Flow`
    variables (and :class:`Overdetermined` ones).

    Example::

        class Flange(Connector):
            phi = Potential(unit="rad")
            tau = Flow(unit="N.m")

    Instantiating a connector class inside a component class body (``flange_a = Flange()``)
    declares a connector of that component.
    """

    def __init__(self, *, doc: str = ""):
        self.doc = doc
        self._order = next(_declaration_counter)
        self.name: str | None = None
        self.owner = None
        self._variables: dict[str, Variable] = {}

    def __set_name__(self, owner, name):
        self.name = name

    @classmethod
    def _declared(cls) -> tuple[tuple[str, Variable], ...]:
        def check(key, val):
            if isinstance(val, (Input, Output)):
                raise DeclarationError(f"connector {cls.__name__}.{key}: use Potential/Flow "
                                       f"in connectors, Input/Output in blocks")
        return _class_members(cls, Variable, check)

    def _instantiate(self, owner, name, modifier=None):
        new = object.__new__(type(self))
        new.doc = self.doc
        new._order = self._order
        new.owner = owner
        new.name = name
        new._variables = {}
        for key, decl in type(self)._declared():
            var = new._variables[key] = decl._instantiate(new, key)
            if not _reads_through_class(type(self), key):
                object.__setattr__(new, key, var.symbol)
        if modifier is not None:
            raise DeclarationError(f"connector '{new.path}' takes no modifier")
        return new

    def __setattr__(self, key, value):
        variable = self.__dict__.get("_variables", {}).get(key)
        if variable is not None:
            variable.modify(value)   # a start value (Fixed/Guess), as for a component's own
            if isinstance(self.owner, Model):
                _note_change(self.owner, variable)
        else:
            object.__setattr__(self, key, value)

    @property
    def path(self) -> str:
        base = self.owner.path if self.owner is not None else ""
        return f"{base}.{self.name}" if base else self.name

    def variables(self) -> dict[str, Variable]:
        """The connector's variable declarations by name."""
        return dict(self._variables)

    def signature(self) -> tuple:
        """What makes two connectors connectable: names, kinds and shapes of variables."""
        return tuple((k, v.kind, v.shape) for k, v in self._variables.items())

    def loop_closure(self, other: "Connector", cut: "LoopCut"):
        """Equations of a connection between this connector and ``other`` that closes a loop
        of the orientation graph (a cut of the loop), or ``None``.

        ``None`` (the default) connects them as usual except that each overdetermined
        variable contributes its ``residue`` instead of equal entries. Connector types
        whose other potentials are derived from the overdetermined ones (velocities and
        accelerations of a frame), or whose flows are not plain forces, override this and
        yield ``lhs == rhs`` equations, or ``(equation, description)`` pairs, in place of
        all of the connection's equations: as many as the flows of both sides need
        (``cut.flows_a``, ``cut.flows_b``: the flow sums of everything connected on each
        side) plus the independent closure constraints.

        Example (a 1-D position connector whose "loop" is a rigid cut)::

            def loop_closure(self, other, cut):
                yield self.s == other.s
                yield cut.flows_a["f"] + cut.flows_b["f"] == 0
        """
        return None

    def __repr__(self):
        return f"<{type(self).__name__} {self.path}>"


#: In :attr:`LoopCut.path`: the step from one definite root of the orientation graph to
#: another (both oriented by their own components, e.g. two frames fixed in the world).
ROOTS = "roots"


@dataclass
class LoopCut:
    """A connection that closes a loop of the orientation graph, as
    :meth:`Connector.loop_closure` sees it.

    ``a`` and ``b`` are the connectors it joins, ``flows_a``/``flows_b`` the sums (by flow
    name, positive into the components) of every flow connected to each side
    (``members_a``/``members_b``: those connectors), ``path`` the
    connectors from ``a`` to ``b`` along the spanning tree, each with the component whose
    branch leads to the next one (``None`` for a connection, :data:`ROOTS` from one root to
    another), and ``owner`` the model whose connect statement closes the loop.
    """

    a: "Connector"
    b: "Connector"
    flows_a: dict
    flows_b: dict
    path: list
    owner: Any
    #: every connector connected on each side (``a`` and ``b`` included)
    members_a: list = None
    members_b: list = None

    @property
    def components(self) -> list:
        """The components on the loop, in order from ``a`` to ``b``."""
        seen, found = set(), []
        for _, comp in self.path:
            if comp is not None and comp is not ROOTS and id(comp) not in seen:
                seen.add(id(comp))
                found.append(comp)
        return found

    def describe(self) -> str:
        """``connect(a, b)`` and the components on the loop, for messages."""
        names = " -> ".join(c.path for c in self.components) or "(no components)"
        return f"the loop closed by connect({self.a.path}, {self.b.path}) through {names}"


# --------------------------------------------------------------------------------------
# Equations and connections
# --------------------------------------------------------------------------------------

class Connect:
    """A ``connect(a, b, ...)`` statement; yield it from :meth:`Model.equations`."""

    def __init__(self, items):
        self.items = list(items)

    def __repr__(self):
        return "connect(" + ", ".join(_port_name(i) for i in self.items) + ")"


def _port_name(item) -> str:
    if isinstance(item, Connector):
        return item.path
    return str(item)


def connect(*items) -> Connect:
    """Connect two or more connectors of the same type, or signals (Output to Input).

    Across variables become equal, through variables sum to zero. Yield the result from
    ``equations()``::

        def equations(self):
            yield connect(self.source.p, self.resistor.p)
    """
    if len(items) < 2:
        raise DeclarationError("connect() needs at least two connectors")
    for k, item in enumerate(items):
        if any(item is other for other in items[:k]):
            raise DeclarationError(f"connect() names {_port_name(item)} twice: a connector "
                                   f"connected to itself says nothing; connect it to another")
    made = Connect(items)
    log = getattr(_connects_made, "log", None)
    if log is not None and sys._getframe(1).f_code is log[0]:  # see _iterate
        log[1].append(made)
    return made


#: While a component's method runs in flattening: the connects it makes (see _iterate).
_connects_made = threading.local()


class Root:
    """The overdetermined variable ``symbol`` is a definite root of its connection graph
    (its value is fixed by the component, like a world frame's orientation).

    Example: ``yield Root(self.frame_b.R)`` in a world or fixed frame's ``equations()``."""

    def __init__(self, symbol):
        self.symbol = symbol


class PotentialRoot:
    """``symbol`` may become a root if no definite root is connected; the lowest
    ``priority`` wins. Query the choice with :meth:`Model.is_root` in ``equations()``.

    Example (a free body, root if nothing else fixes its orientation)::

        yield PotentialRoot(self.frame_a.R, priority=1)
        if self.is_root(self.frame_a.R):
            yield ...   # the orientation's own state equations
    """

    def __init__(self, symbol, priority: int = 0):
        self.symbol = symbol
        self.priority = priority


class Branch:
    """The component's equations determine ``b`` from ``a`` (a rigid or jointed
    connection of two overdetermined variables); the spanning tree must contain it.
    ``one_way``: the component's equations hold only with ``a`` on the root's side (the
    text says why and what to change); a tree that reaches ``b`` first is refused with it.

    Example: ``yield Branch(self.frame_a.R, self.frame_b.R)``"""

    def __init__(self, a, b, one_way: str | None = None):
        self.a = a
        self.b = b
        self.one_way = one_way


class ClosesLoop:
    """The component closes a kinematic loop between ``a`` and ``b`` by its own constraint
    equations (a ball joint that constrains positions only): it is no branch, but the
    compiler treats the loop like one closed by a connection — the loop's coordinates give
    way as states, its constraint force (the component's flows at ``a``) is torn first.

    Example: ``yield ClosesLoop(self.frame_a.R, self.frame_b.R)`` in a spherical
    constraint's ``equations()``."""

    def __init__(self, a, b):
        self.a = a
        self.b = b


class Assert:
    """A condition that must hold (Modelica's ``assert``). Yield it from
    :meth:`Model.equations`. On parameters only, it is checked when the model is compiled and
    again whenever parameter values change (``simulate(params=...)``). Reading variables
    (and time), it is checked along every run of :func:`mbmodel.simulate`, at each output
    point: the first point where it fails stops the run with a
    :class:`~mbmodel.SimulationError` (the result up to the point before it attached).
    ``message`` is in the error.

    Example::

        def equations(self):
            yield mb.Assert(self.m >= 0, "mass m must not be negative")
            yield mb.Assert(self.V > 0, "the chamber's volume must stay positive")
            ...
    """

    def __init__(self, condition, message: str):
        self.condition = ca.SX(condition)
        self.message = str(message)


class WrittenElsewhere:
    """Yielded from :meth:`Model.equations` in place of ``count`` equations of this
    component that another component writes (a multibody joint solves a friction element's
    sticking in its articulated step): the local balance check counts them here.

    Example::

        if lock_holder(self) is None:
            yield a_rel == ...          # the sticking equation
        else:
            yield mb.WrittenElsewhere(1)
    """

    def __init__(self, count: int = 1):
        self.count = int(count)


class Derivative:
    """Declares that ``derivative`` is the time derivative of ``variable`` (scalars or
    equally sized vectors of variables or inputs). Yield it from ``equations()``.

    Needed where a signal and its derivatives arrive side by side, e.g. a prescribed motion
    given as position, velocity and acceleration inputs: index reduction then uses the
    given derivative instead of trying to differentiate an input::

        def equations(self):
            yield mb.Derivative(self.u[0], self.u[1])
            yield mb.Derivative(self.u[1], self.u[2])
            yield self.flange.phi == self.u[0]
    """

    def __init__(self, variable, derivative):
        self.variable = ca.SX(variable)
        self.derivative = ca.SX(derivative)
        if self.variable.shape != self.derivative.shape:
            raise DeclarationError(f"Derivative({variable}, {derivative}): sizes differ")


class _FlattenContext:
    """The symbol table in force while a model's equations are collected (see der()).

    One per thread (``_FlattenContext.current()`` / ``activate``): two threads may compile
    models at the same time."""

    _active = threading.local()

    def __init__(self, symbol_to_variable: dict, make_derivative, is_root=None,
                 analysis: str = "forward", connected=None, loop_cut_side=None,
                 parameters: str = "symbolic"):
        self.symbol_to_variable = symbol_to_variable
        self.make_derivative = make_derivative
        self.is_root = is_root
        self.analysis = analysis
        self.connected = connected
        self.loop_cut_side = loop_cut_side
        self.parameters = parameters

    @classmethod
    def current(cls):
        """The context of this thread's flattening, or None outside ``equations()``."""
        return getattr(cls._active, "context", None)

    @classmethod
    def activate(cls, context):
        """Make ``context`` this thread's current one; returns the previous one."""
        previous = cls.current()
        cls._active.context = context
        return previous


def der(expr):
    """Time derivative of a variable or an expression of variables, parameters and time.

    ``der(self.phi) == self.w`` declares ``phi`` as a differentiated variable. Only valid inside
    ``equations()`` (the compiler needs the whole model to know what is a variable).
    """
    ctx = _FlattenContext.current()
    if ctx is None:
        raise DeclarationError("der() can only be used inside equations()")
    expr = ca.SX(expr)
    if expr.is_symbolic() and expr.numel() == 1 and \
            expr.element_hash() == time.element_hash():
        return ca.SX(1)  # der(time)
    if expr.is_symbolic() and expr.numel() == 1:  # the usual der(variable): no graph walk
        rec = ctx.symbol_to_variable.get(expr.element_hash())
        if rec is not None and not rec.is_parameter:
            derivative = ctx.make_derivative(expr)
            if derivative.is_zero():   # (a Discrete variable: constant between events)
                where = getattr(ctx, "component", None)
                raise DeclarationError(
                    (f"{_where(where)}: " if where is not None else "") +
                    f"der({expr}): {expr} is Discrete, constant between events, so its "
                    f"derivative is always 0; make it a Variable if it changes continuously")
            return derivative
    symbols = ca.symvar(expr)
    records = [ctx.symbol_to_variable.get(s.element_hash()) for s in symbols]
    if symbols and all(r is not None and r.is_parameter for r in records):
        names = ", ".join(str(s) for s in symbols[:4])
        where = getattr(ctx, "component", None)
        raise DeclarationError(
            (f"{_where(where)}: " if where is not None else "") +
            f"der({expr}): {names} {'is a parameter' if len(symbols) == 1 else 'are parameters'}"
            f", constant in time, so this derivative is always 0; write 0, or declare the "
            f"quantity as a Variable if it changes during the run")
    if expr.is_symbolic() and expr.numel() == 1 and expr.element_hash() in ctx.symbol_to_variable:
        return ctx.make_derivative(expr)

    def derivative_of(s):
        rec = ctx.symbol_to_variable.get(s.element_hash())
        if rec is None:
            raise DeclarationError(f"der(): symbol {s} does not belong to the model")
        return ca.SX(0) if rec.is_parameter else ctx.make_derivative(s)

    out = [time_derivative(expr[k], derivative_of) for k in range(expr.numel())]
    return ca.reshape(ca.vertcat(*out), *expr.shape)


def time_derivative(expr: ca.SX, derivative_of) -> ca.SX:
    """d/dt of a scalar expression by the chain rule: ``derivative_of(symbol)`` gives each
    symbol's time derivative (time itself counts 1). Shared by :func:`der` and by index
    reduction, which differentiates whole equations."""
    syms = ca.symvar(expr)
    if not syms:
        return ca.SX(0)
    ders = [ca.SX(1) if s.element_hash() == time.element_hash() else derivative_of(s)
            for s in syms]
    return ca.jtimes(expr, ca.vertcat(*syms), ca.vertcat(*ders))


# --------------------------------------------------------------------------------------
# Components
# --------------------------------------------------------------------------------------

class Model:
    """Base class of all components and models.

    Declare parameters, variables, connectors and sub-components in the class body; yield
    equations and ``connect`` statements from :meth:`equations`. Constructor keywords modify
    declarations: numbers or parameter expressions for parameters, :func:`Fixed`/:func:`Guess`/
    :class:`Start` for variables. Structural options (conditional connectors, replaceable
    sub-component classes) are ordinary constructor arguments of a subclass's ``__init__``
    that calls ``super().__init__(**modifiers)`` first.

    Example::

        class Inertia(Model):
            J = Parameter(1.0, unit="kg.m2", min=0.0)
            flange_a = Flange()
            flange_b = Flange()
            phi = Variable(unit="rad", state_select="prefer")
            w = Variable(unit="rad/s", state_select="prefer")

            def equations(self):
                yield self.phi == self.flange_a.phi
                yield self.phi == self.flange_b.phi
                yield self.w == der(self.phi)
                yield self.J * der(self.w) == self.flange_a.tau + self.flange_b.tau

        load = Inertia(J=2.0, w=Fixed(0.0))
    """

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        object.__setattr__(obj, "_order", next(_declaration_counter))
        # Kept so a class-level sub-component template can be re-created for every instance.
        object.__setattr__(obj, "_ctor_args", (args, dict(kwargs)))
        return obj

    def __init__(self, **modifiers):
        object.__setattr__(self, "_name", "")
        object.__setattr__(self, "_parent", None)
        object.__setattr__(self, "_members", {})
        object.__setattr__(self, "_time_events", [])
        object.__setattr__(self, "_time_scales", [])
        # Class-declared members that __init__ may replace once (a template made concrete).
        object.__setattr__(self, "_replaceable", set())
        remaining = dict(modifiers)
        for key, decl in self._class_declarations():
            mod = remaining.pop(key, None)
            if mod is None and key in modifiers and isinstance(decl, Parameter):
                # (a variable's None is "no start given": phi=None if ... else Fixed(...))
                raise DeclarationError(
                    f"{type(self).__name__}({key}=None): a parameter takes a value, not None; "
                    f"leave the keyword out for its default ({decl._shown()[0][1]})")
            if isinstance(decl, Model):
                if mod is not None:
                    raise DeclarationError(f"{type(self).__name__}: sub-component '{key}' cannot be "
                                           f"modified by a keyword; replace it in __init__")
                args, kwargs = decl._ctor_args
                inst = type(decl)(*args, **kwargs)
                self._register(key, inst)
            else:
                self._register(key, decl._instantiate(self, key, mod))
        self._replaceable.update(self._members)
        if remaining:
            known = ", ".join(k for k, _ in self._class_declarations()) or "none"
            raise DeclarationError(
                f"{type(self).__name__} has no parameter or variable named "
                f"{', '.join(sorted(remaining))}; declared names: {known}")

    @classmethod
    def _class_declarations(cls) -> tuple:
        return _class_members(cls, (Declaration, Connector, Model))

    # -- membership -------------------------------------------------------------------
    def _register(self, key, member):
        members = self.__dict__.get("_members")
        if members is None:
            raise DeclarationError(f"{type(self).__name__}: call super().__init__(**modifiers) "
                                   f"before declaring members in __init__")
        self._claim(key)
        if isinstance(member, Model):
            if member._parent is not None:
                raise DeclarationError(f"component '{member.path}' is already part of a model; "
                                       f"create a new instance for '{key}'")
            object.__setattr__(member, "_name", key)
            object.__setattr__(member, "_parent", self)
        members[key] = member
        if isinstance(member, (Parameter, Variable)):
            # Parameters and variables read as their symbols inside equations()
            self.__dict__.pop(key, None)
            if not _reads_through_class(type(self), key):
                object.__setattr__(self, key, member.symbol)
        else:
            object.__setattr__(self, key, member)

    def __getattr__(self, key):
        # (called only where ordinary lookup fails)
        if not key.startswith("__") and "_members" not in self.__dict__:
            raise ModelNotInitialized(
                f"{type(self).__name__}: Model.__init__ was not called; a model class's own "
                f"__init__ must call super().__init__(**modifiers) before using the model")
        # the ordinary error again (a property failing inside names what it lacked)
        return object.__getattribute__(self, key)

    def __setattr__(self, key, value):
        if isinstance(value, (Declaration, Connector)):
            if value.owner is not None:
                raise DeclarationError(f"'{key}': declare a new {type(value).__name__}, do not "
                                       f"reuse '{value.path}'")
            self._register(key, value._instantiate(self, key))
        elif isinstance(value, Model):
            self._register(key, value)
        elif (isinstance(value, (list, tuple)) and value
              and all(isinstance(v, Model) for v in value)):
            for i, v in enumerate(value):
                self._register_indexed(f"{key}[{i}]", v)
            object.__setattr__(self, key, value)
        else:
            members = self.__dict__.get("_members")
            member = members.get(key) if members else None
            # A declared member set after construction takes the value as the keyword
            # would (Inertia(J=5.0, phi=Fixed(0.7))); stored as a plain attribute, it was
            # ignored without a word.
            if isinstance(member, (Parameter, Variable)):
                if isinstance(value, ca.SX) and member._symbol is not None and \
                        ca.is_equal(value, member.symbol):
                    return   # self.J = self.J (keeping a default): nothing changes
                if _FlattenContext.current() is not None:
                    raise DeclarationError(
                        f"{_where(self)}: '{key}' is a declared {type(member).__name__.lower()}; "
                        f"it cannot be set while the model's equations are collected (in "
                        f"equations()): set it in __init__ or on the instance before "
                        f"compiling, or use a local Python name for an intermediate value")
                if isinstance(member, Parameter):
                    member._check_not_spread(value)
                    member.set(value)
                else:
                    member.modify(value)
                _note_change(self, member)
            else:
                if members:
                    self._check_not_a_misspelt_member(key, value, members)
                object.__setattr__(self, key, value)

    def _check_not_a_misspelt_member(self, key, value, members):
        """A start modifier set on a name that is no variable, or a value on a name that
        differs from a declared parameter's or variable's only in case (``cap.c = 20`` for
        ``C``), is a misspelt member: stored as a plain attribute it was ignored without a
        word, where the keyword raises."""
        declared = [k for k, m in members.items() if isinstance(m, (Parameter, Variable))]
        same = [k for k in declared if k.lower() == key.lower()]
        # A number set on a sub-component (constructed: it has a parent) under a new name
        # close to a declared one is meant for it (spring.cc = 1000 for c); the root
        # model's own __init__ may still be running, so its plain numbers stay allowed.
        # (only near a declared name: an attribute the class has, or a plain one kept for
        # bookkeeping, is not a misspelling; the cheap conditions first, difflib last: this
        # runs for every plain attribute a model sets)
        number = (self._parent is not None and not key.startswith("_")
                  and not hasattr(type(self), key) and key not in self.__dict__
                  and _is_numeric(value))
        if not same and not isinstance(value, Start) and not number:
            return
        close = same or difflib.get_close_matches(key, declared, n=3, cutoff=0.5)
        if not same and not isinstance(value, Start) and not close:
            return
        variables = [k for k in declared if isinstance(members[k], Variable)]
        hint = (f"did you mean {' or '.join(repr(k) for k in close)}?" if close else
                f"its variables: {', '.join(variables) or 'none'}" if isinstance(value, Start)
                else f"its parameters and variables: {', '.join(declared) or 'none'}")
        raise DeclarationError(
            f"{_where(self)}: '{key}' is not a declared parameter or variable of "
            f"{type(self).__name__} ({hint}); set a declared one (it then takes the value as "
            f"the keyword would), or "
            + ("keep a number in a plain attribute named with a leading '_' (or set it in "
               "the class's __init__)" if number and not same and not isinstance(value, Start)
               else "use another name for a plain attribute"))

    def _claim(self, key):
        """A member name is used once: a second member under the same name would silently
        replace the first (and its equations). A class-declared member may be replaced once
        in ``__init__``. A name the Model class itself uses (``path``, ``components``,
        ``analysis``, ...) is refused: the member would hide it from the compiler."""
        if key in _reserved_names():
            raise DeclarationError(
                f"{type(self).__name__}: '{key}' cannot name a member: the Model class uses "
                f"it ({type(self).__name__}.{key} would hide Model.{key} from the compiler); "
                f"choose another name")
        old = self._members.get(key)
        if old is None:
            return
        if key not in self._replaceable:
            raise DeclarationError(
                f"{type(self).__name__} already has a member '{key}' ({type(old).__name__}); "
                f"a second one with the same name would replace it: choose another name")
        self._replaceable.discard(key)
        if isinstance(old, Model):
            object.__setattr__(old, "_parent", None)
        del self._members[key]

    def _register_indexed(self, key, member):
        if self.__dict__.get("_members") is not None:
            self._claim(key)
        if member._parent is not None:
            raise DeclarationError(f"component '{member.path}' is already part of a model")
        object.__setattr__(member, "_name", key)
        object.__setattr__(member, "_parent", self)
        self._members[key] = member

    def add(self, name: str, member):
        """Add a member under a computed name (e.g. in a loop building a chain)."""
        setattr(self, name, member)
        return getattr(self, name)

    # -- introspection ----------------------------------------------------------------
    @property
    def path(self) -> str:
        """The component's dotted name from the outermost model ("" for that model itself).

        Example: ``robot.axis1.motor.path`` is ``"axis1.motor"``."""
        if self._parent is None:
            return self._name
        base = self._parent.path
        return f"{base}.{self._name}" if base else self._name

    def declaration(self, name: str):
        """The :class:`Parameter`/:class:`Variable` object (not its symbol) named ``name``.

        Example: ``bearing.declaration("mode").start = 1.0`` (a declared start changed)."""
        try:
            return self._members[name]
        except KeyError:
            raise DeclarationError(f"{type(self).__name__} has no member '{name}'") from None

    def members(self) -> dict:
        """Every member by name: parameters, variables, connectors and sub-components.

        Example: ``sorted(rot.Inertia().members())`` lists ``J``, ``a``, ``flange_a``, ..."""
        return dict(self._members)

    def components(self) -> list["Model"]:
        """The direct sub-components, in declaration order.

        Example: ``[c.path for c in model.components()]``"""
        return [m for m in self._members.values() if isinstance(m, Model)]

    def instances_in_model(self, cls) -> list["Model"]:
        """Every component of class ``cls`` in the whole model this one belongs to (from its
        outermost model down), searched once per compile and class (see
        :meth:`model_cache`): how a component finds a model-wide one such as the world of a
        mechanism or the fluid of a network.

        Example::

            worlds = self.instances_in_model(World)
        """
        cache = self.model_cache()
        key = ("instances_in_model", cls)
        if key not in cache:
            found, stack = [], [_outermost(self)]
            while stack:
                comp = stack.pop()
                if isinstance(comp, cls):
                    found.append(comp)
                stack.extend(comp.components())
            cache[key] = found
        return cache[key]

    def outermost(self) -> "Model":
        """The model this component belongs to: its outermost enclosing model."""
        return _outermost(self)

    def model_cache(self) -> dict:
        """A dict shared by every component of the model this one belongs to while that
        model is compiled: where a library keeps what it derives from the whole model (the
        instances of a class, the scale of its default animation shapes), computed once per
        compile. A model changed (a component added) and compiled again gets a new one, so
        nothing read from the old model is kept; outside a compile every call gives a new,
        empty dict.

        Example::

            cache = self.model_cache()
            if "scale" not in cache:
                cache["scale"] = largest_offset(self.outermost())
        """
        current = getattr(_compiling, "scope", None)
        if current is not None and current[0] is _outermost(self):
            return current[1]
        return {}

    def time_event(self, at):
        """Declare a discontinuity at time ``at`` (a number or parameter expression), e.g. a
        step; the simulator stops and restarts the integration there so it is exact."""
        self._time_events.append(at)

    def time_scale(self, period):
        """Declare the period (a number or parameter expression) of a signal this component
        makes from time, e.g. a sine source's ``1/f``. Without an explicit ``max_step`` the
        simulator keeps its steps to a fraction of the shortest declared period, so it
        cannot step over features that recur with it (a rectifier's conduction windows)."""
        self._time_scales.append(period)

    def is_root(self, symbol) -> bool:
        """Inside ``equations()``: whether the overdetermined variable ``symbol`` (declared
        with :class:`PotentialRoot` in ``connection_roles()``) was chosen as a root of the
        spanning tree of its connection graph. Like :meth:`connected`, for components
        without sub-components only."""
        ctx = _FlattenContext.current()
        if ctx is None or ctx.is_root is None:
            raise DeclarationError("is_root() can only be used inside equations()")
        return ctx.is_root(symbol)

    def connected(self, connector) -> list:
        """Inside ``equations()``: the connectors of other components that ``connector``
        is connected to — its whole connection set across hierarchy levels, with the ports of
        composite models looked through (only connectors of components that state the
        physics themselves are listed). Lets a component adapt its equations to what is
        attached (e.g. a joint that takes a rigid drive train on its flange into account).
        The answer comes from the composite models' connect statements (their equations()
        run first), so only components without sub-components may ask; a component without
        sub-components that connects its own connectors is refused if that changes an answer
        given (it joins the connection set asked about).

        Example::

            def equations(self):
                for other in self.connected(self.flange):
                    print(other.path, type(other.owner).__name__)
        """
        ctx = _FlattenContext.current()
        if ctx is None or ctx.connected is None:
            raise DeclarationError("connected() can only be used inside equations()")
        return ctx.connected(connector)

    def loop_cut_side(self, connector) -> list | None:
        """Inside ``equations()``: if a connection of ``connector`` closes a loop of the
        orientation graph (a cut, see :meth:`Connector.loop_closure`), the connectors on its
        side of the cut (itself included; ports of composite models looked through), else
        ``None``. Lets a component adapt to a cut at its connector (e.g. a joint with nothing
        behind it but the cut). Answered like :meth:`connected`, with the same rules.

        Example::

            def equations(self):
                side = self.loop_cut_side(self.frame_b)
                alone = side is not None and side == [self.frame_b]
        """
        ctx = _FlattenContext.current()
        if ctx is None or ctx.loop_cut_side is None:
            raise DeclarationError("loop_cut_side() can only be used inside equations()")
        return ctx.loop_cut_side(connector)

    @property
    def analysis(self) -> str:
        """Inside ``equations()`` and ``connection_roles()``: the analysis the model is
        being compiled for (``"forward"`` or ``"inverse"``, see :func:`mbmodel.compile`)."""
        ctx = _FlattenContext.current()
        return ctx.analysis if ctx is not None else "forward"

    @property
    def parameters_folded(self) -> bool:
        """Inside ``equations()``: whether the model is compiled with
        ``parameters="constant"`` (parameter values folded into the code), so that a
        formula that is cheaper only with numeric parameters can be chosen."""
        ctx = _FlattenContext.current()
        return ctx is not None and ctx.parameters == "constant"

    # -- to be overridden -------------------------------------------------------------
    def explain_non_finite(self, variable: str, analysis: str) -> str | None:
        """Why ``variable`` (its name inside this component, e.g. ``"frame_a.I[0]"``) can
        come out non-finite from this component's equations in a model compiled for
        ``analysis``: a sentence in the component's terms, which the diagnosis of a failed
        run (:mod:`mbmodel.diagnose`) adds to its message. ``None`` (the default): nothing
        to add. Asked only after a run failed.

        Example::

            class Pendulum(Model):
                def explain_non_finite(self, variable, analysis):
                    if variable == "w":
                        return "the length L is 0: the pendulum has no arm"
                    return None
        """
        return None

    #: Whether :meth:`template_key` captures what ``equations()`` read from ``connected()``
    #: (see there); stated by the class that states the key.
    template_key_reads_connections = False

    def template_key(self):
        """A hashable value: instances of this class with equal keys (and equal
        declarations) write the same equations up to their own symbols, so flattening runs
        ``equations()`` for the first of them only and derives the others' from it
        (:mod:`mbmodel.templates`; a chain of 1000 bodies then runs one body's). ``None``
        (the default): every instance runs its own.

        The key must capture everything ``equations()`` reads besides the component's own
        symbols: options stored as attributes, parameter values used as numbers (e.g. to
        choose a cheaper formula), facts about other components. What it cannot know is
        checked when the first instance's equations are recorded (only own symbols, no
        connect, no events, the same answers to ``is_root()``/``loop_cut_side()``), and
        such instances run their own. Checks of numeric parameter values that
        ``equations()`` would make belong here too: this runs for every instance. A key
        holds only for the class that states it, not for subclasses (which may read more
        in their equations); a subclass that changes nothing the key covers states
        ``template_key = Base.template_key``.

        ``equations()`` that ask ``connected()`` make the instance run its own, unless the
        class states ``template_key_reads_connections = True``: then its key must capture
        what the answers decide (e.g. whether a body hangs on a frame), and a template
        still holds only the instance's own symbols (equations that use another
        component's are never shared, except those of the components
        :meth:`template_partners` names).

        Example::

            class Damper(Model):
                def __init__(self, linear=True, **modifiers):
                    super().__init__(**modifiers)
                    self.linear = linear

                def template_key(self):
                    return (self.linear,)
        """
        return None

    def template_partners(self) -> tuple:
        """Inside ``equations()``: other components whose parameters and variables this
        component's equations use, found through ``connected()`` (e.g. the fixed placement
        a joint composes with its own motion). Their declarations become inputs of the
        template as well (:mod:`mbmodel.templates`), so instances still share their
        equations. Only for a class that states ``template_key_reads_connections = True``:
        its key must say whether it has partners (their classes and declarations are added
        to it). Partners are components without sub-components. Default: none.

        Example::

            class Joint(Model):
                template_key_reads_connections = True

                def template_key(self):
                    return (self.placement() is not None,)

                def template_partners(self):
                    placement = self.placement()  # found through self.connected(...)
                    return () if placement is None else (placement,)
        """
        return ()

    def connection_roles(self) -> Iterable:
        """Yield :class:`Root`, :class:`PotentialRoot` and :class:`Branch` statements for
        overdetermined connector variables (e.g. orientations of multibody frames)."""
        return ()

    def equations(self) -> Iterable:
        """Yield equations (``lhs == rhs``) and ``connect(...)`` statements."""
        return ()

    def initial_equations(self) -> Iterable:
        """Yield equations that hold at the start time only (e.g. ``der(x) == 0``)."""
        return ()

    def visuals(self) -> Iterable:
        """Yield the :class:`~mbmodel.visuals.VisualShape` objects this component shows when
        a result is animated (``Result.animate``); called once when the model is flattened."""
        return ()

    def __repr__(self):
        return f"<{type(self).__name__} {self.path or '(top)'}>"


def _order_of(member) -> int:
    return member._order


@functools.lru_cache(maxsize=1)
def _reserved_names() -> frozenset:
    """What a member of a model may not be called: the Model class's own attributes that
    the compiler and the libraries read, and the ones every instance keeps (``_members``,
    ``_parent``, ...). The helpers only a model's own ``__init__`` calls (``add``,
    ``time_event``, ``time_scale``) may be hidden by a member (an ``add`` block)."""
    instance = {"_name", "_parent", "_members", "_time_events", "_time_scales",
                "_replaceable", "_ctor_args"}
    own_helpers = {"add", "time_event", "time_scale"}
    return (frozenset(name for name in dir(Model) if not name.startswith("__"))
            - own_helpers) | instance


def _class_members(cls, kinds, check=None) -> tuple:
    """``(name, declaration)`` of the ``kinds`` that ``cls`` and its bases declare, in
    declaration order (``check(name, declaration)`` may refuse one); read once per class,
    since a class body is not declared again after its first instance."""
    by_kinds = _CLASS_DECLARATIONS.get(cls)
    if by_kinds is None:
        by_kinds = _CLASS_DECLARATIONS[cls] = {}
    found = by_kinds.get(kinds)
    if found is None:
        members = {}
        for klass in reversed(cls.__mro__):
            for key, val in vars(klass).items():
                if isinstance(val, kinds):
                    if check is not None:
                        check(key, val)
                    members[key] = val
        found = by_kinds[kinds] = tuple(sorted(members.items(), key=lambda kv: _order_of(kv[1])))
    return found


def _reads_through_class(cls, key) -> bool:
    """Whether a component's or connector's parameter or variable ``key`` reads as its
    symbol through the class's declaration (:meth:`Declaration.__get__`, the symbol made
    when first read) rather than as an attribute of its own: not where the class has no
    declaration of that name, nor where one declaration object is bound to two names (it
    knows the last only)."""
    declared = getattr(cls, key, None)
    return isinstance(declared, Declaration) and declared.name == key


def _where(comp) -> str:
    """A component as messages name it: its class and path."""
    if comp is None:
        return "model"
    return f"{type(comp).__name__} '{comp.path}'" if comp.path else f"model {type(comp).__name__}"


def _iterate(items, comp, method):
    """The items a component's method returned or yielded (a clear error otherwise). A
    ``connect(...)`` the method's own code makes but does not yield is an error: it would
    be lost without a trace (its connectors then count as unconnected, and the model may
    still balance)."""
    if items is None:
        return
    try:
        iterator = iter(items)
    except TypeError as exc:
        raise DeclarationError(f"{_where(comp)}: {method}() must return or yield items") from exc
    # the connects the method's own code makes (not a parent class's equations() it
    # iterates, which a subclass may filter, nor a helper's)
    code = getattr(getattr(type(comp), method, None), "__code__", None)
    made: list[Connect] = []
    given: set[int] = set()
    while True:
        outer = getattr(_connects_made, "log", None)
        _connects_made.log = (code, made)
        try:
            item = next(iterator)
        except StopIteration:
            break
        finally:
            _connects_made.log = outer
        given.add(id(item))
        yield item
    lost = [c for c in made if id(c) not in given]
    if lost:
        raise DeclarationError(
            f"{_where(comp)}: {method}() made {lost[0]!r} but did not yield it, so it would "
            f"be lost (its connectors would count as unconnected); write 'yield "
            f"connect(...)'")


#: Changes of declared members set on models after they were compiled: root model ->
#: [(sequence number, path)] (compiled models compare the numbers with their own; see
#: :func:`compiled_now` and :func:`changed_since`). Kept beside the models, not in them.
_changes_after_compile: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_change_sequence = itertools.count(1)


def compiled_now(model) -> int:
    """Start recording the changes of ``model``'s declared members; returns the sequence
    number the changes after this moment exceed."""
    _changes_after_compile.setdefault(model, [])
    return next(_change_sequence)


def changed_since(model, sequence: int) -> list[str]:
    """The paths of ``model``'s declared members set after ``sequence`` (see
    :func:`compiled_now`), without repeats."""
    changes = _changes_after_compile.get(model, ())
    return list(dict.fromkeys(path for k, path in changes if k > sequence))


def _note_change(component, member):
    root = component
    while root._parent is not None:
        root = root._parent
    changes = _changes_after_compile.get(root)
    if changes is not None:
        changes.append((next(_change_sequence), member.path))


def _is_numeric(value) -> bool:
    """A number or an array of numbers (what a parameter takes)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float, np.number)):
        return True
    if isinstance(value, (list, tuple, np.ndarray)):
        try:
            return np.asarray(value).dtype.kind in "iuf" and np.asarray(value).size > 0
        except (ValueError, TypeError):
            return False
    return False


class _SymbolAsNumber(TypeError):
    """A model variable was converted to a Python float (``math.sin(x)``, ``float(x)``)."""


_float_guard_lock = threading.Lock()
_float_guard_depth = 0
_sx_float = ca.SX.__float__


def _guarded_float(value):
    if not value.is_constant():
        raise _SymbolAsNumber(str(value))
    return _sx_float(value)


class _SymbolsStaySymbols:
    """While components' equations run, converting a symbol to a float raises (casadi
    returns NaN, which would compile into a silently wrong model). Re-entrant across
    threads: the original conversion comes back when the last flattening ends."""

    def __enter__(self):
        global _float_guard_depth
        with _float_guard_lock:
            if _float_guard_depth == 0:
                ca.SX.__float__ = _guarded_float
            _float_guard_depth += 1

    def __exit__(self, *exc):
        global _float_guard_depth
        with _float_guard_lock:
            _float_guard_depth -= 1
            if _float_guard_depth == 0:
                ca.SX.__float__ = _sx_float
        return False


def _missing_member(exc) -> str | None:
    """For an AttributeError on a model (a connector its options leave out): what it
    lacks and the members it has, or None."""
    model, key = getattr(exc, "obj", None), getattr(exc, "name", None)
    if not isinstance(model, Model) or not key or "_members" not in model.__dict__:
        return None
    members = model._members
    connectors = [k for k, m in members.items() if isinstance(m, Connector)]
    declared = [k for k, m in members.items() if isinstance(m, (Parameter, Variable))]
    return (f"'{key}', which {_where(model)} does not have (its connectors: "
            f"{', '.join(connectors) or 'none'}; parameters and variables: "
            f"{', '.join(declared[:12]) or 'none'}{', ...' if len(declared) > 12 else ''}); "
            f"a component may declare some connectors only in some configurations (see its "
            f"options), and is connected only where it has them")


def _explain_equation_failure(comp, method, exc) -> DeclarationError:
    """A clear error for the ways Python code in ``equations()`` fails: symbols used as
    numbers or in conditions get their own advice; any other exception is reported with the
    component it came from (the original is chained as the cause)."""
    if isinstance(exc, _SymbolAsNumber):
        return DeclarationError(
            f"{_where(comp)}: {method}() converted the model expression '{exc}' to a Python "
            f"number (math.sin, math.exp, float(), ... cannot take model variables, which are "
            f"symbols while the model is built); use the functions in mbmodel.functions "
            f"(sin, exp, sqrt, fabs, fmin, if_else, ...) instead")
    text = str(exc)
    if "truth value" in text and "symbolic" in text:
        return DeclarationError(
            f"{_where(comp)}: {method}() used a model variable in a Python condition ('if', "
            f"'and', 'or', 'while', min()/max() or a chained comparison such as a < x < b); "
            f"its value is not known while the model is built: use "
            f"mbmodel.functions.if_else(condition, value_if_true, value_if_false) (and "
            f"fmin/fmax) instead")
    if "unsupported operand" in text and any(f"for {op}:" in text for op in "&|^~"):
        return DeclarationError(
            f"{_where(comp)}: {method}() combined model conditions with Python's &, | or ^ "
            f"(which casadi expressions do not take); use mbmodel.functions.logic_and, "
            f"logic_or and logic_not")
    if "to_int not defined" in text:
        return DeclarationError(
            f"{_where(comp)}: {method}() used a model variable as an integer (an index, "
            f"range() or int()); its value is not known while the model is built")
    missing = _missing_member(exc)
    if missing is not None:
        return DeclarationError(f"{_where(comp)}: {method}() asked for {missing}")
    shapes = _casadi_shape_failure(text)
    if shapes is not None:
        return DeclarationError(f"{_where(comp)}: {method}(){_user_line(exc)}: {shapes}")
    return DeclarationError(
        f"{_where(comp)}: {method}(){_user_line(exc)} raised {type(exc).__name__}: {text} (if "
        f"a numpy or math function was applied to a model variable, use the one in "
        f"mbmodel.functions; the original traceback is chained below)")


def _casadi_shape_failure(text: str) -> str | None:
    """casadi's assertion text about shapes (a matrix product, an index, an elementwise
    operation) said in the model's terms, or None."""
    product = re.search(r"Matrix product with incompatible dimensions\. Lhs is (\d+)x(\d+) "
                        r"and rhs is (\d+)x(\d+)", text)
    if product:
        a, b, c, d = product.groups()
        return (f"a matrix product of a {a}x{b} and a {c}x{d} operand: the inner sizes ({b} "
                f"and {c}) differ")
    index = re.search(r"Slice \(start=(-?\d+), stop=(-?\d+), step=-?\d+\) out of bounds "
                      r"with supplied length of (\d+)", text)
    if index:
        start, stop, length = (int(g) for g in index.groups())
        what = (f"index {start}" if stop == start + 1 else
                f"the indices {start}:{stop} (up to {stop - 1})")
        return (f"{what} of a dimension of length {length} (indices 0 to {length - 1}): "
                f"out of range")
    mismatch = re.search(r"Dimension mismatch for \((.+?)\), x is (\d+x\d+), while y is "
                         r"(\d+x\d+)", text)
    if mismatch:
        operation, a, b = mismatch.groups()
        return (f"the operands of {operation.replace('x', 'a', 1).replace('y', 'b', 1)} "
                f"have different shapes ({a} and {b}); reshape one, or index the entries "
                f"meant")
    return None


def _user_line(exc) -> str:
    """`` (at file:line: source)`` of the innermost frame of the failure outside mbmodel
    and casadi (the user's line in equations()), or ''."""
    import linecache
    import os
    inside = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
              os.path.dirname(os.path.abspath(ca.__file__)) + os.sep)
    found = ""
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(inside):
            line = linecache.getline(filename, tb.tb_lineno).strip()
            found = f" (at {os.path.basename(filename)}:{tb.tb_lineno}: {line})"
        tb = tb.tb_next
    return found
