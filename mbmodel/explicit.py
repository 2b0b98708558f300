"""Explicit integration of a compiled model, the whole loop in C.

For non-stiff models without algebraic variables (most mechanisms), two methods run in C
(``ode_runtime.c``), calling the model's generated C dynamics through a function pointer:
no Python, no casadi between steps, and nothing to set up per run. casadi sets CVODES up
in ~40–80 ms for 200 states however few steps follow (most of it preparing the Jacobian's
sparsity and colouring, also for Adams' functional iteration, which never uses them); the
C loops start at once.

* ``"abm"``: Adams–Bashforth–Moulton in PECE mode, variable step and order 1–12, in the
  modified divided differences of Shampine and Gordon (1975), with their interpolation
  between steps: two evaluations a step, about half of DOP853's on a 100-link chain at
  rtol 1e-8 (662 against 1196; CVODES' Adams method: 726). It starts at order 1 with a
  small step, so a run cut into many stretches (events) loses time at each restart.
* ``"dop853"``: the Dormand–Prince 8(5,3) pair and its 7th-order dense output, with the
  step-size control of ``scipy.integrate.solve_ivp(method="DOP853")``: on the same
  right-hand side it takes the same steps as scipy (the tests compare the two). A
  one-step method: a stretch after an event goes on with the step the last one ended
  with.

Example::

    run = integrator(native.dynamics(cm))          # None without generated C
    xs = run(0.0, cm.start, cm.parameter_vector(), [0.5, 1.0], rtol=1e-8, atol=1e-10,
             method="abm").xs
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import casadi as ca
import numpy as np

__all__ = ["integrator", "guard", "NativeIntegrator", "Guard", "Crossing", "Run", "LOOPS",
           "STATUS", "CROSSED", "runtime_loops"]

_RUNTIME_SOURCE = Path(__file__).with_name("ode_runtime.c")

#: What the C loop's return codes mean (0: reached the last output time).
STATUS = {0: "reached the end", 1: "took the most steps allowed",
          2: "could not keep the error within the tolerances with a step above round-off "
             "(the solution may stop being finite, or the model be stiff)",
          3: "the dynamics failed to evaluate", 4: "out of memory",
          5: "stopped at a crossing"}
#: The return code of a guarded run stopped at a crossing (:class:`Guard`).
CROSSED = 5

#: Steps (accepted and rejected) a run may take between two output times (or before the
#: first), as CVODES' ``max_num_steps``.
MAX_STEPS = 100_000

_lock = threading.Lock()
_runtime: list = []          # [{method: ctypes function}] once built, [None] if it cannot be
_integrators: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

#: The loops of ``ode_runtime.c`` by method name.
LOOPS = {"dop853": "mb_dop853", "abm": "mb_adams"}


def runtime_loops() -> dict | None:
    """The C loops by method (built once per machine, cached like generated code), or
    None.

    Example: ``"dop853" in (runtime_loops() or {})``"""
    with _lock:
        if not _runtime:
            from .codegen import compile_source
            path = compile_source(_RUNTIME_SOURCE.read_text())
            loops = None
            if path is not None:
                library = ctypes.CDLL(str(path))
                loops = {}
                for method, symbol in LOOPS.items():
                    fn = getattr(library, symbol)
                    fn.restype = ctypes.c_int
                    # addresses as plain integers: ndarray.ctypes.data_as costs ~10 µs
                    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_double, ctypes.c_double, ctypes.c_double,
                                   ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int]
                    loops[method] = fn
            _runtime.append(loops)
        return _runtime[0]


@dataclass
class Run:
    """One integration: the states at the output times reached (``xs``, states x times;
    ``written`` columns are valid), the return ``status`` (:data:`STATUS`), the time
    reached, the step the control proposes next, and counts of steps and evaluations."""
    xs: np.ndarray
    status: int
    written: int
    time: float
    next_step: float
    steps: int
    rejected: int
    evaluations: int
    crossing: "Crossing | None" = None
    relations: np.ndarray | None = None   # a guarded run: the relations' values at the end
    inert: int = 0                        # ... and the crossings it passed as inert

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def reason(self) -> str:
        return STATUS.get(self.status, f"failed (code {self.status})")


@dataclass
class Crossing:
    """Where a guarded run stopped: the located bracket ``(t_left, time)`` (the relations
    read as in force at ``t_left`` and differently at ``time``), the state ``x`` and the
    event function's ``values`` at ``time``, and per relation whether it read differently
    beyond the noise and round-off where the crossing was found (``triggered``: at the
    located time a crossing function is itself at round-off)."""
    t_left: float
    time: float
    x: np.ndarray
    values: np.ndarray
    triggered: np.ndarray = None


class _CFunction:
    """A generated function's C entry point in its library, and its work sizes: what a
    C loop needs to call it (``eval`` address, ``sz_*``, ``checkout``/``release``)."""

    def __init__(self, fn: ca.Function, library: Path):
        self._lib = ctypes.CDLL(str(library))
        name = fn.name()
        self.eval = ctypes.cast(getattr(self._lib, name), ctypes.c_void_p).value
        sizes = [ctypes.c_longlong() for _ in range(4)]
        if getattr(self._lib, f"{name}_work")(*[ctypes.byref(s) for s in sizes]):
            raise RuntimeError(f"{name}_work failed")
        self.sz_arg, self.sz_res, self.sz_iw, self.sz_w = (int(s.value) for s in sizes)
        self.checkout = getattr(self._lib, f"{name}_checkout", None)
        self.release = getattr(self._lib, f"{name}_release", None)
        if self.release is not None:
            self.release.argtypes = [ctypes.c_int]

    def work(self):
        """Fresh integer and real work arrays (one pair per call: thread safety)."""
        return (np.zeros(max(self.sz_iw, 1), dtype=np.int64), np.zeros(max(self.sz_w, 1)))


class _MbGuard(ctypes.Structure):
    """``MbGuard`` of ``ode_runtime.c``."""
    _fields_ = [("eval", ctypes.c_void_p), ("iw", ctypes.c_void_p), ("w", ctypes.c_void_p),
                ("sz_arg", ctypes.c_longlong), ("sz_res", ctypes.c_longlong),
                ("mem", ctypes.c_longlong), ("n_p", ctypes.c_longlong),
                ("n_c", ctypes.c_longlong), ("n_values", ctypes.c_longlong),
                ("frozen", ctypes.c_void_p), ("strict", ctypes.c_void_p),
                ("noise", ctypes.c_double), ("scales_at", ctypes.c_longlong),
                ("round_off", ctypes.c_double), ("width", ctypes.c_double),
                ("x_cross", ctypes.c_void_p), ("values", ctypes.c_void_p),
                ("t_left", ctypes.c_void_p), ("direct", ctypes.c_void_p),
                ("relation_slot", ctypes.c_void_p), ("n_conditions", ctypes.c_longlong),
                ("conditions_at", ctypes.c_longlong), ("n_equations", ctypes.c_longlong),
                ("equations_at", ctypes.c_longlong), ("equation_slot", ctypes.c_void_p),
                ("inert", ctypes.c_void_p), ("triggered", ctypes.c_void_p)]


class Guard:
    """Crossings a DOP853 run stops at: the model's event function ``fn`` (generated C,
    ``x, z, u, p, t -> values``, the first ``len(strict)`` of them zero-crossing functions
    of relations ``c > 0`` (``strict``) or ``c >= 0``), evaluated after every step at the
    output times inside it and at its end; a crossing is located on the step's dense
    output to the relative ``width``. A crossing function within ``noise`` of zero leaves
    its relation's value as it is. Built by :func:`guard`; the relations' values in force
    are given per run (``frozen``). ``scales`` (a slice of the values, optional): the size
    of each relation's sides; a crossing function within ``round_off`` of it is noise too.

    ``inert`` (optional) lets the loop pass crossings that change nothing without stopping:
    a dict with ``direct`` (per relation: the continuous part reads it, so it never is
    inert), ``relation_slots`` (where each relation's value is in ``u``), ``conditions`` and
    ``equations`` (slices of the values: when conditions, discrete equations) and
    ``equation_slots`` (where the discrete equations' variables are in ``u``). A crossing
    of relations the continuous part does not read is inert when, with them flipped, every
    condition and discrete equation keeps its value (the rule of
    :meth:`mbmodel.events._Run.inert`); the relations then take their new values and the
    run goes on (``Run.relations``, ``Run.inert``)."""

    def __init__(self, fn: ca.Function, library: Path, n_p: int, strict, noise: float,
                 width: float, inert: dict | None = None, scales: slice | None = None,
                 round_off: float = 0.0):
        self._fn = _CFunction(fn, library)
        self.n_p = int(n_p)
        self.strict = np.ascontiguousarray(strict, dtype=float)
        self.n_values = fn.numel_out(0)
        self.noise, self.width = float(noise), float(width)
        self.scales_at = -1 if scales is None else int(scales.start)
        self.round_off = float(round_off)
        self.n_x = fn.size1_in(0)
        n_c = len(self.strict)
        rule = inert or {"direct": np.ones(n_c), "relation_slots": np.zeros(n_c),
                         "conditions": slice(0, 0), "equations": slice(0, 0),
                         "equation_slots": np.zeros(0)}
        self._direct = np.ascontiguousarray(rule["direct"], dtype=float)
        self._relation_slots = np.ascontiguousarray(rule["relation_slots"], dtype=np.int64)
        self._equation_slots = np.ascontiguousarray(rule["equation_slots"], dtype=np.int64)
        self._conditions, self._equations = rule["conditions"], rule["equations"]
        if not (self._direct.shape == self._relation_slots.shape == (n_c,)
                and len(self._equation_slots) == self._equations.stop - self._equations.start):
            raise ValueError("inert: one 'direct' flag and one slot per relation, and one "
                             "slot per discrete equation")

    def _struct(self, frozen, keep):
        """The C structure for one run; ``keep`` holds the arrays it points into."""
        frozen = np.array(frozen, dtype=float)   # a copy: the loop writes it
        if frozen.shape != self.strict.shape:
            raise ValueError(f"expected {len(self.strict)} relation values, got "
                             f"{frozen.shape}")
        iw, w = self._fn.work()
        x_cross, values, t_left = np.zeros(self.n_x), np.zeros(self.n_values), np.zeros(1)
        inert, triggered = np.zeros(1), np.zeros(len(self.strict))
        keep.extend([frozen, iw, w, x_cross, values, t_left, inert, triggered])
        mem = self._fn.checkout() if self._fn.checkout is not None else 0
        c, e = self._conditions, self._equations
        return _MbGuard(self._fn.eval, iw.ctypes.data, w.ctypes.data, self._fn.sz_arg,
                        self._fn.sz_res, mem, self.n_p, len(self.strict), self.n_values,
                        frozen.ctypes.data, self.strict.ctypes.data, self.noise,
                        self.scales_at, self.round_off, self.width,
                        x_cross.ctypes.data, values.ctypes.data, t_left.ctypes.data,
                        self._direct.ctypes.data, self._relation_slots.ctypes.data,
                        c.stop - c.start, c.start, e.stop - e.start, e.start,
                        self._equation_slots.ctypes.data, inert.ctypes.data,
                        triggered.ctypes.data)


class NativeIntegrator:
    """The C loops over a compiled dynamics Function (``t, x, z, p, u -> ode, ...``, no
    algebraic variables) loaded from ``library``. Thread-safe: every call has its own work
    arrays."""

    def __init__(self, fn: ca.Function, library: Path, loops: dict):
        self._loops = loops
        self._fn = _CFunction(fn, library)
        self.n_x = fn.size1_in(1)
        self.n_pu = fn.size1_in(3)

    def __call__(self, t0: float, x0, pu, tout, *, rtol: float, atol: float,
                 max_step: float | None = None, first_step: float = 0.0,
                 max_steps: int = MAX_STEPS, method: str = "dop853",
                 left_limit: bool = False, guard: Guard | None = None,
                 frozen=None) -> Run:
        """Integrate from ``t0`` through the increasing times ``tout`` (all after t0) with
        ``method`` (:data:`LOOPS`; Adams ignores ``first_step``). ``left_limit``: the run
        integrates the model of ``[t0, tout[-1])``, evaluating the dynamics at the end a
        rounding before it, so that a relation on time switching there (a time event, a
        table's jump) still has its value before the event. ``guard`` (DOP853 only) with
        the relations' values in force ``frozen``: the run stops at the first crossing
        (status :data:`CROSSED`, ``crossing`` says where)."""
        x0 = np.ascontiguousarray(x0, dtype=float)
        pu = np.ascontiguousarray(pu, dtype=float)
        tout = np.ascontiguousarray(tout, dtype=float)
        if x0.shape != (self.n_x,) or pu.shape != (self.n_pu,):
            raise ValueError(f"expected {self.n_x} states and {self.n_pu} parameters and "
                             f"inputs, got {x0.shape} and {pu.shape}")
        if method not in self._loops:
            raise ValueError(f"method must be one of {', '.join(self._loops)}, not {method!r}")
        if tout.ndim != 1 or not len(tout) or tout[0] < t0 or np.any(np.diff(tout) < 0):
            raise ValueError(f"tout must be non-decreasing output times from t0 = {t0} on, "
                             f"not {tout!r}")
        if guard is not None and method != "dop853":
            raise ValueError(f"a guard needs method='dop853', not {method!r}")
        xs = np.zeros((len(tout), self.n_x))   # row per time: contiguous columns in C
        iw, w = self._fn.work()
        info = np.zeros(7)
        info[0] = first_step
        info[6] = 1.0 if left_limit else 0.0
        keep: list = []
        c_guard = guard._struct(frozen, keep) if guard is not None else None
        fn = self._fn
        mem = fn.checkout() if fn.checkout is not None else 0
        try:
            status = self._loops[method](
                fn.eval, iw.ctypes.data, w.ctypes.data, fn.sz_arg, fn.sz_res, mem,
                self.n_x, float(t0), x0.ctypes.data, pu.ctypes.data, len(tout),
                tout.ctypes.data, xs.ctypes.data, float(rtol), float(atol),
                float(max_step or 0.0), int(max_steps), info.ctypes.data,
                ctypes.addressof(c_guard) if c_guard is not None else None, len(pu))
        finally:
            if fn.release is not None:
                fn.release(mem)
            if c_guard is not None and guard._fn.release is not None:
                guard._fn.release(c_guard.mem)
        crossing, relations, inert = None, None, 0
        if guard is not None:
            relations, _, _, x_cross, values, t_left, passed, triggered = keep
            inert = int(passed[0])
            if status == CROSSED:
                crossing = Crossing(t_left=float(t_left[0]), time=float(info[1]), x=x_cross,
                                    values=values, triggered=triggered != 0.0)
        return Run(xs=xs.T, status=int(status), written=int(info[5]), time=float(info[1]),
                   next_step=float(info[0]), steps=int(info[2]), rejected=int(info[3]),
                   evaluations=int(info[4]), crossing=crossing, relations=relations,
                   inert=inert)


def guard(fn: ca.Function, n_p: int, strict, noise: float, width: float,
          inert: dict | None = None, scales: slice | None = None,
          round_off: float = 0.0) -> Guard | None:
    """The :class:`Guard` of the event function ``fn`` (``x, z, u, p, t -> values``; see
    :class:`Guard` for the rest), or None when ``fn`` is not generated C or has algebraic
    variables (the C loops have none).

    Example::

        g = guard(native.event_function(cm), cm.symbols.p.numel(), cm.events.strict,
                  noise=1e-16, width=1e-12)
        run = integrator(native.dynamics(cm))(t0, x, pu, ts, rtol=1e-8, atol=1e-10,
                                              guard=g, frozen=relations_in_force)
    """
    from .codegen import library_of
    library = library_of(fn) if fn is not None else None
    if library is None or fn.size1_in(1) or fn.n_in() != 5 or not all(
            fn.sparsity_in(i).is_dense() for i in (0, 2, 3)):
        return None
    return Guard(fn, library, n_p, strict, noise, width, inert, scales, round_off)


def integrator(fn: ca.Function) -> NativeIntegrator | None:
    """The C integrator of ``fn`` (from :func:`mbmodel.native.dynamics`), or None when
    ``fn`` is not generated C (casadi's virtual machine: no compiler, or a build still
    under way), has algebraic variables, or the runtime cannot be built. One per
    Function (the answer, None too, is kept while the Function lives)."""
    if fn is None:
        return None
    with _lock:
        if fn in _integrators:   # asked for every stretch of a run with events
            return _integrators[fn]
    from .codegen import library_of
    library = library_of(fn)
    # the C loop reads states and parameters, and writes derivatives, as dense vectors
    usable = library is not None and not fn.size1_in(2) and fn.n_in() == 5 and all(
        sp.is_dense() for sp in (fn.sparsity_in(1), fn.sparsity_in(3), fn.sparsity_out(0)))
    loops = runtime_loops() if usable else None
    found = NativeIntegrator(fn, library, loops) if loops is not None else None
    with _lock:
        return _integrators.setdefault(fn, found)
