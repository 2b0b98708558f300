"""The compiled model users hold, and the verbs that make one and run it.

:func:`compile` runs the compiler's stages (:mod:`mbmodel.compiler`) and returns a
:class:`CompiledModel`: the compiler's :class:`~mbmodel.compiler.CompiledCore` (casadi
Functions and the metadata to run them) with its runs as methods. Each run is a function
of a sibling module: simulation (:mod:`mbmodel.simulate`), initialization, linearization,
generated C for calls from Python (:mod:`mbmodel.native`), saving and FMU export. Those
modules import the compiler and the compiler imports none of them; this module sits above
them all and is the only one that names them together.

Example::

    cm = mb.compile(RC())
    x0, z0 = cm.initialize()
    res = cm.simulate(5e-3, params={"resistor.R": 2e3})
"""

from __future__ import annotations

from . import compiler, fmu, initialization, linearize as linearization, persist
from . import simulate as simulation
from .compiler import CompiledCore
from .core import Model
from .errors import InitializationError, SimulationError
from .native import evaluator as native_evaluator
from .result import Result


class CompiledModel(CompiledCore):
    """A compiled model with its runs: simulate, initialize, linearize or evaluate it, save
    it or export it as an FMU. :func:`compile` makes one; :func:`mbmodel.load` reads a
    saved one back. Its data (states, parameters, the casadi Functions) are those of
    :class:`~mbmodel.compiler.CompiledCore`.

    Example::

        cm = mb.compile(model)
        print(cm.states)
        res = cm.simulate(1.0, params={"resistor.R": 20.0})
    """

    def simulate(self, t_end: float, **options) -> Result:
        """Simulate from ``t_start`` (default 0) to ``t_end``; the options are
        :func:`mbmodel.simulate`'s.

        Example: ``res = cm.simulate(2.0, params={"load.J": 2.0}, n_points=201)``"""
        return simulation.run(self, t_end, **options)

    def initialize(self, **options):
        """Consistent initial ``(x0, z0)``; the options are
        :func:`mbmodel.initialization.initial_values`'.

        Example: ``x0, z0 = cm.initialize(steady_state=True)``"""
        return initialize(self, **options)

    def linearize(self, x=None, u=None, params=None, t=0.0, z=None, *, inputs=None,
                  outputs=None, steady_state=False):
        """Linearization ``ẋ = A x + B u``, ``y = C x + D u`` around the operating point
        ``(x, u)`` at time ``t`` (default: the initial state for inputs ``u``, or with
        ``steady_state=True`` the steady state). Algebraic variables are eliminated by the
        implicit function theorem. ``inputs`` selects and orders the inputs (default: all),
        ``outputs`` names any model variables as outputs. Returns a
        :class:`~mbmodel.linearize.LinearSystem` (``A, B = cm.linearize()`` or
        ``A, B, C, D = cm.linearize(outputs=[...])``; ``.to_control()`` for python-control).

        Example::

            lin = cm.linearize(outputs=["load.w"], steady_state=True)
            print(lin.eigenvalues())
        """
        self.warn_if_model_changed()
        return linearization.linearize(self, x, u, params, t, z, inputs, outputs,
                                       steady_state)

    def evaluator(self, outputs: list[str] | None = None, native: bool = True):
        """A fast function ``(x, u, p, t) -> values`` for calls from Python: the state
        derivatives (forward dynamics) or the named ``outputs`` (e.g. joint torques of a
        model compiled for ``analysis="inverse"``), in generated C by default, called
        through casadi's buffer interface; see :class:`mbmodel.native.Evaluator`.

        Example::

            fd = cm.evaluator()
            xdot = fd(x)                # numpy array, overwritten by the next call
        """
        return native_evaluator(self, outputs, native)

    def save(self, path) -> None:
        """Write this compiled model to ``path``; :func:`mbmodel.load` reads it back in any
        process without recompiling (see :mod:`mbmodel.persist`).

        Example::

            cm.save("robot.mbm")
            cm = mb.load("robot.mbm")
        """
        persist.save(self, path)

    def export_fmu(self, path, **options):
        """Write this model as an FMI 2.0 FMU (Model Exchange and Co-Simulation); see
        :func:`mbmodel.fmu.export_fmu` for the options and what is exported.

        Example: ``cm.export_fmu("rc.fmu", outputs=["capacitor.v"])``"""
        return fmu.export_fmu(self, path, **options)


def compile(model: Model, *, analysis: str = "forward", parameters: str = "symbolic",
            state_priority: dict[str, int] | None = None,
            outputs: list[str] | None = None, check_units: bool = False) -> CompiledModel:
    """Flatten, analyse and compile ``model`` into a :class:`CompiledModel`.

    ``analysis`` is what the model is compiled for: ``"forward"`` (dynamics: states and
    their derivatives) or ``"inverse"`` (motion prescribed, forces computed). Components
    may choose their formulation by it (``Model.analysis``); the multibody library uses
    articulated-body quantities for the first and cut forces for the second, so the same
    model yields the articulated-body algorithm or recursive Newton–Euler.

    ``parameters="constant"`` folds parameter values into the generated expressions (smaller
    code; changing them needs a recompile). ``outputs`` (variable names) limits the results
    to those variables and drops every equation neither they nor the state derivatives need.
    ``check_units=True`` checks that the two sides of every equation have the same unit
    (with pint, the ``units`` extra; see :mod:`mbmodel.units`) and raises
    :class:`~mbmodel.units.UnitError` naming the equations that disagree.

    Example::

        cm = mb.compile(DCMotorDrive())
        print(cm.states, cm.build_times.total)
    """
    return compiler.compile(model, analysis=analysis, parameters=parameters,
                            state_priority=state_priority, outputs=outputs,
                            check_units=check_units, model_class=CompiledModel)


def simulate(model, t_end: float, **options) -> Result:
    """Compile (if needed) and simulate a model.

    Options: ``t_start`` (0), ``n_points`` (501) or ``times`` (output grid), ``params``
    (name -> value), ``inputs`` (name -> number or (times, values)), ``rtol`` (1e-8), ``atol``
    (1e-10), ``steady_state`` (start in steady state), ``x0`` (initial states), ``method``
    (``"auto"``: for non-stiff models Adams–Bashforth–Moulton or, between events,
    DOP853, both in C, or CVODES' Adams where the dynamics are not generated C; BDF for
    stiff models; IDAS with algebraic variables; or ``"abm"``, ``"dop853"``, ``"adams"``,
    ``"bdf"``, ``"cvodes"``, ``"idas"``: see :data:`mbmodel.simulate.METHODS`), ``z0`` (guesses of the algebraic
    variables, with ``x0``), ``state_selection`` (``"dynamic"``: where the choice of states
    of a constrained model depends on the solution, switch it at run time, see
    :mod:`mbmodel.state_selection`; ``"static"``: keep the compiled choice), ``max_step``
    (default: a sixteenth of the shortest period declared with ``Model.time_scale``, e.g. by sine
    sources; none without such declarations), ``native``
    (``"auto"``: the dynamics run as generated C, built once per model structure and cached
    on disk, when cached or quick to build, else in casadi's virtual machine while the C
    builds in the background; True: always C, building it first, and for a large model
    the result's table too (:func:`mbmodel.native.outputs`; with ``"auto"`` once built);
    False: the virtual machine), ``progress`` (a tqdm progress bar over simulated time, shown once a run has
    taken a second; ``"auto"``, the default, moves it where the run stops anyway: after each
    integrator call of a run with events, at time events; True also cuts a run without
    events into about 20 integrator calls at output times so that the bar moves, each
    restarting the integrator: its numbers then differ within the tolerances from a run
    without the bar, and ``res.methods`` has an entry per call; False: no bar).

    Example::

        res = mb.simulate(RC(), t_end=5e-3, params={"resistor.R": 2e3})
        res.plot(["capacitor.v"], file="rc.png")
    """
    if not isinstance(model, (Model, CompiledCore)):
        raise SimulationError(f"simulate() takes a Model or a CompiledModel, not "
                              f"{type(model).__name__}")
    cm = model if isinstance(model, CompiledCore) else compile(model)
    return simulation.run(cm, t_end, **options)


def initialize(cm, **options):
    """Consistent initial ``(x0, z0)`` of the compiled model ``cm`` (see
    :func:`mbmodel.initialization.initial_values` for the options), checked against the
    run-time asserts (``mb.Assert`` on variables) as a simulation checks them at its first
    output point: an :class:`~mbmodel.InitializationError` names the first that fails (a
    cylinder's chamber started beyond its stroke).

    Example: ``x0, z0 = mb.initialize(cm, steady_state=True)``"""
    cm.warn_if_model_changed()
    x0, z0 = initialization.initial_values(cm, **options)
    checks = simulation.run_asserts(cm)
    if checks.asserts:
        p = cm.parameter_vector(options.get("params"))
        point = simulation.initial_point_result(cm, x0, z0, p, options.get("inputs"),
                                                options.get("t_start", 0.0))
        try:
            checks.check(point, p)
        except SimulationError as exc:
            raise InitializationError(str(exc).split(" The result up to")[0]) from None
    return x0, z0
