"""Native code for a compiled model: its dynamics in generated C, and fast evaluators.

A compiled model (:class:`~mbmodel.compiler.CompiledCore`) holds casadi SX Functions, which
casadi evaluates in its virtual machine. This module builds the model's dynamics into a shared library
through :mod:`mbmodel.codegen` (cached on disk, keyed by the generated C: compiled once per
model structure, reused by every run and process; for large models the structure-preserving
kernels the C is generated from are cached beside it, keyed by the flat dynamics) and offers
two ways to call it:

* :func:`dynamics` — the model as a casadi DAE Function (``t, x, z, p, u -> ode, alg``) for
  casadi's integrators. The Adams method needs no Jacobian; casadi still asks for one when
  it sets an integrator up, so the compiled function offers finite differences
  (:func:`mbmodel.codegen.compile_function` ``external_options``). Simulation gives the
  implicit methods (BDF, IDAS) the symbolic dynamics instead: their exact, sparse Jacobian
  beats finite differences, which cost one right-hand side per state and a dense solve.
* :class:`Evaluator` — one call from Python at buffer speed (casadi ``Function.buffer``):
  no conversion of numpy arrays per call. This is the path for model-predictive control,
  learning and sweeps that call forward or inverse dynamics millions of times.

Functions are built once per compiled model and shared by all threads; casadi gives every
concurrent call its own work memory. An :class:`Evaluator` owns its buffers: give each
thread its own.

Example::

    cm = mb.compile(model)
    fd = cm.evaluator()                 # states' derivatives, in C
    xdot = fd(cm.start)                 # numpy array, overwritten by the next call
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref

import casadi as ca
import numpy as np

from .core import time as TIME
from .errors import DeclarationError, ParameterError
from .files import atomic_write

__all__ = ["dynamics", "outputs", "code_source", "evaluator", "Evaluator", "event_function",
           "AUTO_BUILD_INSTRUCTIONS", "KERNEL_INSTRUCTIONS", "EVENT_NATIVE_INSTRUCTIONS"]

_lock = threading.Lock()
_built: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _empty():
    return ca.SX(0, 1)


#: With ``native="auto"``, dynamics of at most this many casadi instructions are built at
#: once (the C compiler needs a few seconds); larger ones are built in the background while
#: the first runs use casadi's virtual machine (gcc's time grows faster than linearly with
#: the size of the flat code: ~3 s for a 25-link chain, ~40 s for 100 links).
AUTO_BUILD_INSTRUCTIONS = 12000


def dynamics(cm, native: bool | str = True, derivatives: bool = False) -> ca.Function:
    """The compiled model's DAE (``t, x, z, p, u -> ode, alg``; ``p`` = parameters then
    external inputs) for casadi's integrators: ``cm.dynamics`` in generated C when
    ``native`` is True (C source generated and the library built, or loaded from the disk
    cache, on the first call for a model, then kept), ``cm.dynamics`` itself (casadi's
    virtual machine) when False. ``"auto"``: the C library if it is cached or quick to
    build (:data:`AUTO_BUILD_INSTRUCTIONS`), else the virtual machine while the library
    builds in the background for later runs. Call it after ``mb.compile`` to choose when
    the C compiler runs (e.g. before timing or forking workers). ``derivatives=True``: a
    library that also holds the forward derivative in C, for the exact Jacobians of Newton's
    method in BDF and IDAS (a separate library, built when first asked for).

    Example::

        F = ca.integrator("sim", "cvodes", dynamics(cm), 0.0, [1.0])
        xf = F(x0=cm.start, p=cm.parameter_vector())["xf"]
    """
    if native not in (True, False, "auto"):
        raise DeclarationError(f"native must be True, False or 'auto', not {native!r}")
    if not native:
        return cm.dynamics
    built = _built_with_derivatives if derivatives else _built
    with _lock:
        fn = built.get(cm)
    if fn is not None:
        return fn
    with _model_lock(cm):  # (source generation walks the model's graphs: one thread)
        return _dynamics(cm, native, derivatives, built)


def _dynamics(cm, native, derivatives: bool, built) -> ca.Function:
    with _lock:
        fn = built.get(cm)
    if fn is not None:
        return fn
    from .codegen import build_failed, compile_function
    from .schedule import schedule_of
    source = code_source(cm)
    # Kernel code (see mbmodel.kernels) compiles ~3x faster than the flat function at the
    # -O2 that makes it run ~25 % faster; the forward derivative triples the code. Kernels
    # called from a schedule (mbmodel.schedule) are C of their own size, the calls tables:
    # a chain of any length builds in ~1 s (~3 s with the derivative).
    kernels = source is not cm.dynamics
    limit = AUTO_BUILD_INSTRUCTIONS * (3 if kernels else 1)
    limit /= 3 if derivatives else 1
    schedule = schedule_of(source) if kernels else None
    size = (sum(k.n_instructions() for k in schedule.kernels) if schedule is not None
            else cm.dynamics.n_instructions())
    large = native == "auto" and size > limit
    options = {} if derivatives else {"enable_fd": True, "fd_method": "forward"}
    fn = compile_function(source, background=large, external_options=options,
                          derivatives=derivatives,
                          optimize=2 if kernels or _fast_flat(cm, derivatives) else 1)
    if fn is source:
        fn = cm.dynamics  # no compiler, or a background build under way: the VM meanwhile
    # a background build is asked for again later, unless it failed (reported once)
    if fn is not cm.dynamics or not large or build_failed(source, derivatives):
        with _lock:
            fn = built.setdefault(cm, fn)
    return fn


_built_with_derivatives: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

#: Flat dynamics compiled with ``parameters="constant"`` (the fast path a user asks for)
#: from this many instructions up are built at -O2, which doubles gcc's time: the Manutec
#: r3 with its drive trains (2 200 instructions) 1.10 -> 0.69 µs a call, a 6-link chain
#: 2.0 -> 1.15 µs. With symbolic parameters -O2 gains little (1.76 -> 1.70 µs).
FAST_FLAT_INSTRUCTIONS = 2000


def _fast_flat(cm, derivatives: bool) -> bool:
    """Whether flat dynamics are built at -O2 (see :data:`FAST_FLAT_INSTRUCTIONS`); not
    with their derivative, three times the code."""
    return (not derivatives and cm.parameter_mode == "constant"
            and cm.dynamics.n_instructions() >= FAST_FLAT_INSTRUCTIONS)


_sources: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_built_events: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

#: Event functions of fewer casadi instructions stay in the virtual machine, where the
#: simulator only evaluates them (~1 000 times a run: less than a compiler run), unless they
#: guard DOP853's C loop (``any_size``).
EVENT_NATIVE_INSTRUCTIONS = 2000


def event_function(cm, native: bool | str = "auto",
                   any_size: bool = False) -> ca.Function | None:
    """``cm.event_values`` (``x, z, u, p, t ->`` crossing functions, conditions, discrete
    equations, ...) in generated C when ``native`` allows it and it has at least
    :data:`EVENT_NATIVE_INSTRUCTIONS` instructions or ``any_size`` is given, with the same
    policy as :func:`dynamics` (``"auto"``: built in the background above
    :data:`AUTO_BUILD_INSTRUCTIONS`, the virtual machine meanwhile); else the function
    itself. In C it is the guard of DOP853's C loop, which then finds and locates the
    crossings itself, after every step (:mod:`mbmodel.events` asks with ``any_size``:
    that pays for the compiler, ~0.1 s for a small model).

    None for a model without events (``cm.events is None``).

    Example::

        values = event_function(cm)(x, z, u, p, t)   # cm: a model with events
    """
    fn = cm.event_values
    if not native or fn is None or (not any_size
                                    and fn.n_instructions() < EVENT_NATIVE_INSTRUCTIONS):
        return fn
    with _lock:
        built = _built_events.get(cm)
    if built is not None:
        return built
    from .codegen import build_failed, compile_function
    large = native == "auto" and fn.n_instructions() > AUTO_BUILD_INSTRUCTIONS
    # -O1: no fused multiply-adds, so crossings are located where the virtual machine
    # locates them (a stick-slip run amplifies their rounding to 1e-10)
    compiled = compile_function(fn, background=large)
    # a background build is asked for again later, unless it failed (reported once)
    if compiled is not fn or not large or build_failed(fn):
        with _lock:
            compiled = _built_events.setdefault(cm, compiled)
    return compiled


#: Dynamics of more casadi instructions than this are generated as kernel calls
#: (:mod:`mbmodel.kernels`); smaller ones as one flat function, which runs faster where
#: the overhead of a call per component and pass is not paid back (a 6-link chain: 1.4 µs
#: flat, 2.6 µs in kernels; 100 links: the same speed, and gcc needs 10 s instead of 40 s).
KERNEL_INSTRUCTIONS = 12000


def code_source(cm) -> ca.Function:
    """What C is generated from for ``cm``'s dynamics: for large models the
    structure-preserving kernel Function (:func:`mbmodel.kernels.structured_dynamics`)
    where it applies, else the flat ``cm.dynamics``. Built once per compiled model."""
    def build():
        built = None
        if cm.dynamics.n_instructions() > KERNEL_INSTRUCTIONS and not cm.system.algebraic:
            built = _kernel_source(cm)
        return built if built is not None else cm.dynamics
    return _built_once(cm, _sources, build)


def _built_once(cm, store, build):
    """``store[cm]``, made by ``build()`` the first time, by one thread: casadi's expression
    graphs are not safe to walk from two threads, and two builds of one model's kernels
    from its shared graph gave wrong kernels (which the disk cache then kept)."""
    with _lock:
        found = store.get(cm)
    if found is not None:
        return found
    with _model_lock(cm):
        with _lock:
            found = store.get(cm)
        if found is None:
            found = build()
            with _lock:
                found = store.setdefault(cm, found)
    return found


_model_locks: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _model_lock(cm) -> threading.RLock:
    """The lock under which ``cm``'s code is built (one per compiled model)."""
    with _lock:
        return _model_locks.setdefault(cm, threading.RLock())


def _kernel_source(cm) -> ca.Function | None:
    """The kernel Function of ``cm``'s dynamics (None: the model keeps its flat code), with
    its schedule attached (:mod:`mbmodel.schedule`: the C calls the kernels in a loop), read
    from the disk cache when a model with the same flat dynamics built it before, else
    built and stored there. Building costs ~13 ms per link of a chain, every process again
    (the C library is cached by its source, which needs the kernels first); the key, a
    hash of the serialized flat dynamics, ~1 ms per link (0.12 s and an 8 MB string at
    100 links). A cache entry that cannot be read is built again."""
    from .kernels import structured_dynamics
    return _cached_kernels("kernels", cm.dynamics, cm.parameter_mode, lambda: structured_dynamics(
        cm.system, cm.parameter_mode, cm.symbols.t))


def _cached_kernels(kind: str, flat: ca.Function, parameter_mode: str, build):
    """Kernels built by ``build()`` (``(function, stats)`` or None) for the flat Function
    ``flat``, cached on disk under ``kind`` and a hash of ``flat`` (see
    :func:`_kernel_source`)."""
    from .codegen import default_cache_dir
    from .kernels import KERNELS_VERSION
    from .schedule import attach, from_data, schedule_of, to_data
    key = hashlib.sha256("\0".join([KERNELS_VERSION, ca.__version__, parameter_mode,
                                    flat.serialize()]).encode()).hexdigest()
    path = default_cache_dir() / f"{kind}-{key}.json"
    try:
        entry = json.loads(path.read_text())
        if entry == _FLAT:
            return None
        kernels = ca.Function.deserialize(entry["function"])
        if not kernels.is_null():  # (an empty entry reads as a null Function, no error)
            attach(kernels, from_data(entry["schedule"]))
            return kernels
    except (OSError, RuntimeError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        pass  # not cached yet, or unreadable: build it
    built = build()
    entry = _FLAT if built is None else {"function": built[0].serialize(),
                                         "schedule": to_data(schedule_of(built[0]))}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as file:  # a process reading it never sees half a file
            file.write(json.dumps(entry))
    except OSError:
        pass  # a read-only cache: the kernels are simply built again next time
    return built[0] if built is not None else None


#: What the kernel cache holds for a model whose dynamics keep the flat code.
_FLAT = "flat"

_built_outputs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def outputs(cm, native: bool | str = True) -> ca.Function:
    """``cm.output_function`` (every variable of a result, ``x, z, u, p, t -> y``) in
    generated C, where the model is large enough for kernels (:data:`KERNEL_INSTRUCTIONS`)
    and has no algebraic variables: the kernels of :mod:`mbmodel.kernels` for every
    output, called in a loop (:mod:`mbmodel.schedule`), cached on disk like the dynamics'.
    Else, and when ``native`` is False, the Function itself (casadi's virtual machine).
    ``native="auto"``: the C only if this process has built or loaded it already.

    A result computes its table with it (``simulate(..., native=True)``, or once built,
    ``"auto"``). Building costs about what the dynamics' kernels do (a 100-link chain:
    ~2.5 s of kernels and ~2 s of gcc, once; then read from the cache in ~0.3 s), and
    computes a 501-point table of that chain in ~0.04 s instead of ~0.25 s. Call it after
    ``mb.compile`` to choose when the compiler runs.

    Example::

        table_fn = outputs(cm)               # generated C for a large model
        y = table_fn(x, [], u, p, t)
    """
    if native not in (True, False, "auto"):
        raise DeclarationError(f"native must be True, False or 'auto', not {native!r}")
    with _lock:
        fn = _built_outputs.get(cm)
    if not native or (fn is None and native == "auto"):
        return cm.output_function
    return fn if fn is not None else _built_once(cm, _built_outputs,
                                                 lambda: _native_outputs(cm))


def _native_outputs(cm) -> ca.Function:
    """The outputs' C (see :func:`outputs`), or ``cm.output_function``."""
    flat = cm.output_function
    if flat.n_instructions() <= KERNEL_INSTRUCTIONS or cm.system is None or \
            cm.system.algebraic:
        return flat
    from .codegen import compile_function
    from .kernels import structured_outputs
    source = _cached_kernels("outputs", flat, cm.parameter_mode, lambda: structured_outputs(
        cm.system, cm.output_names, cm.parameter_mode, cm.symbols.t))
    if source is None:
        return flat
    built = compile_function(source, optimize=2)
    return flat if built is source else built


class Evaluator:
    """Calls a compiled model's function of ``(x, u, p, t)`` from Python at buffer speed.

    Built by :meth:`mbmodel.CompiledModel.evaluator`: the state derivatives (forward dynamics)
    or the named outputs (e.g. the joint torques of a model compiled with
    ``analysis="inverse"``, whose inputs are the prescribed motion). The arguments are
    copied into buffers the C code reads directly; the result is a numpy array that the next
    call overwrites (copy it to keep it). Not for models with algebraic variables (their
    torn nonlinear blocks need the integrator's Newton iteration). An argument left out
    takes its default at every call, never the last call's value: ``x`` the states' start
    values (``cm.start``), ``u`` zeros, ``p`` the parameters' values
    (``cm.parameter_vector()``). ``u`` is every external input (``cm.inputs``); in a model
    with events the relations are evaluated at each call's point (a contact where the state
    is inside it, as :meth:`mbmodel.CompiledModel.linearize` takes them), and discrete variables that
    when clauses set keep their start values, unless ``u`` is given whole (the inputs, then
    ``cm.discrete``).

    Example::

        fd = cm.evaluator()
        xdot = fd(x, p=cm.parameter_vector({"body.m": 2.0}))
        tau = cm_inverse.evaluator(["joint1.tau"])(u=[q, qd, qdd])
    """

    def __init__(self, fn: ca.Function, parameters: np.ndarray, n_x: int, n_u: int,
                 names: list[str], symbolic: ca.Function | None = None, start=None):
        #: What is called (generated C, or the SX Function where no compiler is found) and
        #: the SX Function it was generated from (e.g. to ``map`` it over many states).
        self.function = fn
        self.symbolic = symbolic if symbolic is not None else fn
        self.names = list(names)
        self._x = np.zeros(n_x)
        self._u = np.zeros(n_u)
        self._p = np.array(parameters, dtype=float)
        self._t = np.zeros(1)
        self._out = np.zeros(fn.nnz_out(0))
        # what a left-out argument stands for (see the class doc)
        self._x_default = np.zeros(n_x) if start is None else np.array(start, dtype=float)
        self._u_default = np.zeros(n_u)
        self._p_default = self._p.copy()
        self._x[:] = self._x_default
        # whether u and p hold their defaults already (a call that leaves them out again
        # copies nothing: a call at n = 6 costs ~1.7 us, each copy ~0.5 us)
        self._u_default_in, self._p_default_in = True, True
        self._buffer, self._eval = fn.buffer()
        for k, arr in enumerate((self._x, self._u, self._p, self._t)):
            self._buffer.set_arg(k, memoryview(arr))
        self._buffer.set_res(0, memoryview(self._out))

    #: For a model with events: ``(u, x, p, t) -> u`` with the relations (and the variables
    #: defined by them) set to their values at the point (None: no events), and the
    #: discrete values they start from.
    relations = None
    discrete_start = np.zeros(0)
    #: The parameters' names where the model was compiled with ``parameters="constant"``:
    #: their values are folded into the code, so a ``p`` other than theirs is refused
    #: (None: the code reads ``p``).
    folded = None

    def __call__(self, x=None, u=None, p=None, t: float = 0.0) -> np.ndarray:
        try:
            # sizes compared, not left to numpy: it would spread one number over them all
            if x is None:
                self._x[:] = self._x_default
            else:
                if len(x) != len(self._x):
                    raise ValueError
                self._x[:] = x
            whole = False
            if u is None:
                if not self._u_default_in:
                    self._u[:] = self._u_default
                    self._u_default_in = True
            else:
                self._u_default_in = False
                # the external inputs, or with the discrete values after them the whole vector
                u = np.ravel(u)
                whole = len(u) == len(self._u)
                if not whole and len(u) != len(self._u) - len(self.discrete_start):
                    raise ValueError
                self._u[:len(u)] = u
            if p is None:
                if not self._p_default_in:
                    self._p[:] = self._p_default
                    self._p_default_in = True
            else:
                if len(p) != len(self._p):
                    raise ValueError
                if self.folded is not None:
                    self._refuse_folded(p)
                self._p_default_in = False
                self._p[:] = p
            self._t[0] = t
        except (ValueError, TypeError):
            # (a number for a one-state model, e.g., takes this slower way)
            self._assign_checked(x, u, p, t)
            whole = u is not None and np.size(u) == len(self._u)
        if self.relations is not None and not whole:
            # the branches in force at this point (a contact where the state is inside it),
            # as linearize() takes them, found from the discrete start values each call (not
            # from the last call's: a hysteresis would keep its branch from call to call)
            self._u[len(self._u) - len(self.discrete_start):] = self.discrete_start
            self._u[:] = self.relations(self._u, self._x, self._p, t)
            self._u_default_in = False   # (the relations' values are in it now)
        self._eval()
        return self._out

    def _assign_checked(self, x, u, p, t):
        """The arguments copied where their sizes fit (a number stands for a vector of one),
        else the error that says which does not; left out, their defaults."""
        n_ext = len(self._u) - len(self.discrete_start)
        values = []
        for name, value, buffer in (("x", x, self._x), ("u", u, self._u), ("p", p, self._p)):
            if value is None:
                values.append(None)
                continue
            try:
                flat = np.asarray(value, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                raise DeclarationError(self._wrong_sizes(x, u, p, name)) from None
            sizes = (n_ext, len(buffer)) if name == "u" else (len(buffer),)
            if len(flat) not in sizes:
                raise DeclarationError(self._wrong_sizes(x, u, p))
            values.append(flat)
        if values[2] is not None and self.folded is not None:
            self._refuse_folded(values[2])
        try:
            self._t[0] = t
        except (TypeError, ValueError):
            raise DeclarationError(f"evaluator: t must be a number (the time), not "
                                   f"{t!r}") from None
        for flat, buffer, default in zip(values, (self._x, self._u, self._p),
                                         (self._x_default, self._u_default, self._p_default)):
            if flat is None:
                buffer[:] = default
            else:
                buffer[:len(flat)] = flat
        self._u_default_in, self._p_default_in = u is None, p is None

    def _refuse_folded(self, p):
        """A ParameterError naming the first entry of ``p`` that differs from the value
        folded into the code (the same values pass: ``p=cm.parameter_vector()``)."""
        p = np.asarray(p, dtype=float).reshape(-1)
        differs = np.flatnonzero(p != self._p_default)
        if len(differs):
            k = int(differs[0])
            raise ParameterError(
                f"evaluator: parameter '{self.folded[k]}' was folded into the code (compiled "
                f"with parameters='constant'), so p = {p[k]:g} there cannot change it (it is "
                f"{self._p_default[k]:g}); compile with parameters='symbolic' to pass "
                f"parameters at call time, or recompile with the new value")

    def _wrong_sizes(self, x, u, p, not_numbers=None) -> str:
        if not_numbers is not None:
            return (f"evaluator: {not_numbers} is not a vector of numbers (x: the states, "
                    f"u: the external inputs, p: the parameters, all of them: "
                    f"cm.parameter_vector())")
        n_ext = len(self._u) - len(self.discrete_start)
        wrong = [f"{name} has {np.size(value)} entries, the model {size}"
                 for name, value, size in (("x", x, len(self._x)), ("p", p, len(self._p)))
                 if value is not None and np.size(value) != size]
        if u is not None and np.size(u) not in (n_ext, len(self._u)):
            wrong.append(f"u has {np.size(u)} entries, the model {n_ext} external inputs"
                         + (f" ({len(self._u)} with its discrete values)"
                            if len(self._u) > n_ext else ""))
        return (f"evaluator: {'; '.join(wrong) or 'an argument is not a vector of numbers'} "
                f"(x: the states, u: the external inputs, p: the parameters, all of them: "
                f"cm.parameter_vector())")


def evaluator(cm, outputs: list[str] | None = None, native: bool = True) -> Evaluator:
    """An :class:`Evaluator` of ``cm``'s state derivatives (``outputs=None``) or of the
    named variables, in generated C when ``native``. See :meth:`mbmodel.CompiledModel.evaluator`."""
    from .codegen import compile_function
    X, U, P = cm.symbols.x, cm.symbols.u, cm.symbols.p
    Z = _empty()
    if cm.symbols.z.numel():
        # (outputs that do not read the algebraic variables need no solve)
        reads_z = outputs is None or any(
            ca.depends_on(cm.output_function(X, cm.symbols.z, U, P, TIME)[cm.output_index[n]],
                          cm.symbols.z) for n in outputs if n in cm.output_index)
        if reads_z:
            raise DeclarationError(
                f"model {cm.name} has algebraic variables ({', '.join(cm.algebraic[:4])}) "
                f"from nonlinear equation systems, which "
                f"{'the state derivatives' if outputs is None else 'these outputs'} read; a "
                f"direct evaluator cannot solve them. Use cm.explicit_ode() (Newton inside), "
                f"or simulate the model")
        Z = ca.SX.zeros(cm.symbols.z.numel())
    if outputs is None:
        names = [f"der({s})" for s in cm.states]
        source = code_source(cm)
        if source is not cm.dynamics:  # kernels: the same function, smaller C
            Xm, Um, Pm, Tm = (ca.MX.sym(n, v.numel()) for n, v in
                              (("x", X), ("u", U), ("p", P), ("t", TIME)))

            def reordered(f, name):
                xdot = f(Tm, Xm, ca.MX(0, 1), ca.vertcat(Pm, Um), ca.MX(0, 1))[0]
                return ca.Function(name, [Xm, Um, Pm, Tm], [xdot], ["x", "u", "p", "t"],
                                   ["y"])
            symbolic = reordered(source, "mbmodel_evaluator")
            # (the dynamics' own library, whose C calls the kernels in a loop: casadi's C
            # of a Function that calls the kernel Function would be one statement per call)
            fn = reordered(dynamics(cm, native=True), "mbmodel_evaluator") if native \
                else symbolic
            return _with_discrete_start(cm, Evaluator(
                fn, cm.parameter_vector(), X.numel(), U.numel(), names, symbolic, cm.start))
        expr = cm.ode(X, Z, U, P, TIME)
    else:
        missing = [n for n in outputs if n not in cm.output_index]
        if missing:
            raise DeclarationError(
                f"evaluator(): the compiled model has no output {', '.join(missing[:5])} "
                f"(compile with outputs=[...] including them, or check the names)")
        names = list(outputs)
        y = cm.output_function(X, Z, U, P, TIME)
        expr = ca.vertcat(*[y[cm.output_index[n]] for n in names]) if names else _empty()
    symbolic = ca.Function("mbmodel_evaluator", [X, U, P, TIME], [ca.densify(expr)],
                           ["x", "u", "p", "t"], ["y"])
    fn = compile_function(symbolic) if native else symbolic
    return _with_discrete_start(cm, Evaluator(fn, cm.parameter_vector(), X.numel(), U.numel(),
                                              names, symbolic, cm.start))


def _with_discrete_start(cm, ev: Evaluator) -> Evaluator:
    """The evaluator's discrete values (after the external inputs) at their start values;
    for a model with events, the relations evaluated at each call's point."""
    start = getattr(cm, "discrete_start", np.zeros(0))
    if len(start):
        ev._u[len(ev._u) - len(start):] = start
        ev._u_default[len(ev._u) - len(start):] = start
    ev.discrete_start = np.array(start, dtype=float)
    if cm.parameter_mode == "constant":
        ev.folded = [q.name for q in cm.free_parameters]
    if getattr(cm, "events", None) is not None:
        from .event_layout import relations_at
        from .integrators import Buffered
        no_z = np.zeros(0)
        values = Buffered(event_function(cm, native=bool(ev.function is not ev.symbolic)))
        ev.relations = lambda u, x, p, t: relations_at(cm, x, no_z, u, p, t, values)
    return ev
