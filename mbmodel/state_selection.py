"""Dynamic state selection: choosing the dependent variables of constraints again at run time.

Index reduction makes some of the variables that appear in the position-level constraints
dependent (dummy derivatives) and keeps the others as states. Where the constraints'
Jacobian depends on the solution (:class:`~mbmodel.structure.DynamicStateSet`), a choice
that is good at the start can become singular later: the cartesian pendulum with ``x`` as
state cannot give ``y`` where ``y = 0``. Like Dymola and OpenModelica, the simulator then
switches: after each stretch of points (the output grid, refined to at least
:data:`CHECKS_PER_RUN` points per run) it evaluates the Jacobian, and when the
columns of the current dependent variables have become much worse conditioned than the best
choice (:data:`SWITCH_RATIO`), it restarts the integration at the last output point with the
model compiled for the better choice (compiled once per choice, from the same flat model),
from the values the run had reached.

Used by :func:`mbmodel.simulate` for models whose compiled system has a state set (models
with events keep the static choice).
"""

from __future__ import annotations

import itertools
import weakref

import casadi as ca
import numpy as np

from .errors import SimulationError
from .flat import resolve_bindings, stacked
from .initialization import initial_values
from .result import Result

#: Switch when the current dependent variables' columns are this much worse conditioned
#: (smallest singular value of the row-scaled columns) than the best choice's. Below 1, so a
#: choice is kept through the region where both are about as good (no chattering).
SWITCH_RATIO = 0.5
#: Output points integrated between two checks at first and after a switch; then as many as
#: the trend of the current choice's quality allows (:func:`_next_stretch`). A stretch that
#: still runs into a singularity is cut back to the point where the choice should switch.
STRETCH = 5
#: Largest number of output points of one stretch whose choice is checked.
CHECKS = 40
#: The choice is checked at this many points per run at least, between output points where
#: they are further apart: a coarse output grid let a choice run through the point where it
#: is singular (a pendulum whose y was still the state as it passed the bottom lost 4 % of
#: its energy at 31 output points).
CHECKS_PER_RUN = 250
#: With the compiled choice kept, the choice is singular where the smallest singular value of
#: its row-scaled columns falls below this (the rounding of a well-posed choice is far
#: above it; a choice that only grows poor, with no better one taken, runs on).
SINGULAR_QUALITY = 1e-8
#: A run that cannot switch the choice (a model with events) stops where the compiled
#: choice's quality falls below this fraction of the best choice's: the integrator's
#: errors reach the dependent variables amplified a hundredfold and more (a pendulum kept
#: on y: 2e-6 in x at x = 0.01, rtol 1e-10), and closer to the singular point the run may
#: stick beside it rather than pass it.
KEPT_RATIO = 1e-2
#: ... compared with the best choice only where it has fallen below this fraction of its
#: quality at the run's first point looked at.
COMPARED_BELOW = 0.1


class StateChoice:
    """The run-time state choice of a compiled model with a state set."""

    def __init__(self, cm, params=None, p=None):
        self.base = cm
        self.set = cm.system.state_set
        self.compiled = {frozenset(self.set.dependent): cm}
        J = self.set.jacobian
        names, symbols = cm.system.names, cm.system.symbols
        by_hash = {s.element_hash(): n for n, s in zip(names, symbols)}
        free = {q.symbol.element_hash(): q for q in cm.system.parameters if q.binding is None}
        (J,) = resolve_bindings(cm.system.parameters, [J])  # in the free parameters
        used = ca.symvar(J)
        self.variables = [by_hash[s.element_hash()] for s in used
                          if s.element_hash() in by_hash and s.element_hash() not in free]
        var_syms = [s for s in used if s.element_hash() in by_hash
                    and s.element_hash() not in free]
        p_syms = [q.symbol for q in cm.system.parameters if q.binding is None]
        self.jacobian = ca.Function("state_set_jacobian",
                                    [stacked(var_syms), stacked(p_syms)], [J])
        self.p = cm.parameter_vector(params) if p is None else p
        self.coordinates = (list(range(len(self.set.candidates)))
                            if self.set.coordinates is None else list(self.set.coordinates))

    def evaluate(self, value_of) -> np.ndarray:
        """The Jacobian at the point whose variable values ``value_of(name)`` gives."""
        v = np.array([value_of(n) for n in self.variables], dtype=float)
        return np.array(self.jacobian(v, self.p), dtype=float)

    def better(self, J, current):
        """The dependent set to switch to at Jacobian ``J``, or None to keep ``current``."""
        return self.assess(J, current)[0]

    @staticmethod
    def row_scaled(J) -> np.ndarray:
        """``J`` with each row of norm 1 (a zero row as it is): the choices' columns are
        compared on it."""
        rows = np.linalg.norm(J, axis=1, keepdims=True)
        rows[rows == 0] = 1.0
        return J / rows

    def jacobians_along(self, res, model, u_of):
        """``j -> J`` at output point ``j`` of ``res`` (a run of ``model``): only the
        variables the Jacobian needs are evaluated, from the states and algebraic
        variables in ``res``."""
        needed = self._needed(model)
        X = np.array([res[n] for n in model.states]).reshape(len(model.states), -1)
        Z = np.array([res[n] for n in model.algebraic]).reshape(len(model.algebraic), -1)

        def at(j):
            t = float(res.t[j])
            values = np.array(needed(X[:, j], Z[:, j], u_of(t), self.p, t)).ravel()
            return np.array(self.jacobian(values, self.p), dtype=float)
        return at

    def assess(self, J, current):
        """``(switch, ratio)``: the dependent set to switch to (or None) and how good the
        current choice is against the best one (1: the best)."""
        J = self.row_scaled(J)
        m, k = J.shape
        coordinates = self.coordinates
        always = frozenset(range(k)) - frozenset(coordinates)

        def quality(cols):
            return np.linalg.svd(J[:, sorted(cols)], compute_uv=False).min()
        best = max((always | frozenset(c)
                    for c in itertools.combinations(coordinates, m - len(always))),
                   key=quality)
        ratio = quality(current) / max(quality(best), 1e-300)
        if best != current and ratio < SWITCH_RATIO:
            return best, ratio
        return None, ratio

    def first_switch(self, res, reached, current, model, u_of):
        """The first output point (index in ``res``, after the first) where the choice should
        switch, the choice to switch to, and the ``(time, quality ratio)`` of the points
        checked. At most :data:`CHECKS` points are checked, evenly spread, and where one
        calls for a switch the points before it are searched for the first that does (the
        quality changes smoothly) (:meth:`jacobians_along`)."""
        jacobian_at = self.jacobians_along(res, model, u_of)

        def at(j):
            return self.assess(jacobian_at(j), current)
        points = list(range(1, reached))
        if len(points) > CHECKS:
            picked = sorted({points[int(round(i))] for i in
                             np.linspace(0, len(points) - 1, CHECKS)})
        else:
            picked = points
        ratios, previous = [], 0
        for j in picked:
            better, ratio = at(j)
            ratios.append((res.t[j], ratio))
            if better is not None:
                for i in range(previous + 1, j):
                    earlier, _ = at(i)
                    if earlier is not None:
                        return i, earlier, ratios
                return j, better, ratios
            previous = j
        return None, None, ratios

    def _needed(self, model):
        """``(x, z, u, p, t) -> values of the Jacobian's variables`` for ``model``."""
        # by the model itself, weakly: an id could be a later model's once this one is freed
        cache = self.__dict__.setdefault("_needed_functions", weakref.WeakKeyDictionary())
        f = cache.get(model)
        if f is None:
            sym = model.symbols
            y = model.output_function(sym.x, sym.z, sym.u, sym.p, sym.t)
            rows = [model.output_index[n] for n in self.variables]
            f = ca.Function("state_set_variables", [sym.x, sym.z, sym.u, sym.p, sym.t],
                            [y[rows] if rows else ca.SX(0, 1)])
            cache[model] = f
        return f

    def model_for(self, dependent):
        """The model compiled with ``dependent`` as the dependent candidates (cached)."""
        cm = self.compiled.get(dependent)
        if cm is None:
            from .compiler import compile_flat
            priority = {}
            for i in self.coordinates:
                for name in self.set.chains[i]:
                    priority[name] = 0 if i in dependent else 10
            base = self.base
            cm = compile_flat(base.flat, base.parameter_mode, priority,
                              model_class=type(base))
            states = set(cm.states)
            got = frozenset(i for i, name in enumerate(self.set.candidates)
                            if name not in states)
            if got != dependent:
                raise SimulationError(
                    f"dynamic state selection: the model compiled for the dependent variables "
                    f"{self.names(dependent)} chose {self.names(got)} instead")
            self.compiled[dependent] = cm
        return cm

    def names(self, dependent) -> str:
        """The chosen coordinates among ``dependent``, for messages and the switch log."""
        return ", ".join(self.set.candidates[i] for i in sorted(dependent)
                         if i in self.coordinates)


class KeptChoice:
    """The compiled choice of states watched along a run that keeps it: singular where the
    smallest singular value of the dependent variables' row-scaled columns falls below
    :data:`SINGULAR_QUALITY`, or their determinant changes sign between two points looked
    at (passed through zero between them)."""

    def __init__(self, choice: StateChoice):
        self.choice = choice
        self.dependent = sorted(choice.set.dependent)
        #: the dependent columns per level of the states: positions, and velocities where
        #: their choice differs (only models kept as compiled, as with a reinit, have one)
        self.levels = [self.dependent]
        velocity = choice.set.velocity_dependent
        if velocity is not None and sorted(velocity) != self.dependent:
            self.levels.append(sorted(velocity))
        self.signs = None  # of the determinants at the first point looked at
        #: per level: at the last point looked at, the first, and the last found good
        self.qualities = self.first_qualities = self.previous = None
        self.jacobian_at = None  # (x, z, u, p, t) -> the Jacobian, made when first needed

    def singular(self, J) -> bool:
        """Whether the choice is singular at the Jacobian ``J`` (the next point along the
        run)."""
        scaled = self.choice.row_scaled(J)
        qualities, signs = [], []
        for dependent in self.levels:
            columns = scaled[:, dependent]
            qualities.append(np.linalg.svd(columns, compute_uv=False).min())
            signs.append(np.sign(np.linalg.det(columns))
                         if columns.shape[0] == columns.shape[1] else 0.0)
        if self.signs is None:
            self.signs = signs
        self.qualities = qualities
        return min(qualities) < SINGULAR_QUALITY or signs != self.signs

    def fails_at(self, x, z, u, t) -> bool:
        """Whether the choice is singular (:meth:`singular`), or far worse than the best
        (:data:`KEPT_RATIO`) and falling, at the point (x, z) of the compiled model at time
        ``t`` with inputs ``u`` (the next along the run after those looked at): what a run
        that cannot switch the choice (a model with events) stops at. (An integrator run on
        past the singular point can stick beside it: a pendulum kept on ``y`` stayed at its
        bottom with x = 1.6e-7, the choice's quality just that, until the run ended.)"""
        if self.jacobian_at is None:   # (one call: the variables it needs, then it)
            choice, sym = self.choice, self.choice.base.symbols
            needed = choice._needed(choice.base)(sym.x, sym.z, sym.u, sym.p, sym.t)
            self.jacobian_at = ca.Function("kept_choice_jacobian",
                                           [sym.x, sym.z, sym.u, sym.p, sym.t],
                                           [choice.jacobian(needed, sym.p)])
        choice = self.choice
        J = np.array(self.jacobian_at(x, z, u, choice.p, t), dtype=float)
        if self.singular(J):
            return True
        qualities, previous = self.qualities, self.previous
        if self.first_qualities is None:
            self.first_qualities = qualities
        # Far worse than the best only counts on the way down: a pendulum released just
        # below the horizontal, kept on x, starts with y at 0.002 of x and is right (its
        # choice improves as it swings). The comparison with every other choice takes an
        # SVD each (48 x 48 for a four-bar, 0.2 ms): made only where the kept choice has
        # fallen to a tenth of its quality at the first point, or of sqrt(rows), above
        # which no choice's can be (the Frobenius norm of the row-scaled Jacobian).
        falling = previous is not None and any(q < p for q, p in zip(qualities, previous))
        poor = any(q < COMPARED_BELOW * min(q0, np.sqrt(J.shape[0]))
                   for q, q0 in zip(qualities, self.first_qualities))
        if falling and poor and any(choice.assess(J, frozenset(dependent))[1] < KEPT_RATIO
                                    for dependent in self.levels):
            return True
        self.previous = qualities
        return False

    def singular_text(self, before, after, stopped=False) -> str:
        """What a run that found the choice singular between ``before`` and ``after``
        says (``stopped``: at :meth:`fails_at`, not run on past it)."""
        cm = self.choice.base
        where = (f"between t = {before:g} and t = {after:g}" if after > before else
                 f"at t = {after:g}")
        dependent = (self.choice.names(frozenset(self.dependent))
                     or ', '.join(cm.algebraic[:6]))
        if len(self.levels) > 1:
            dependent += (f"; the velocities of "
                          f"{self.choice.names(frozenset(self.levels[1]))}")
        if stopped:
            return (f"the constraints' Jacobian in the variables the kept states leave "
                    f"dependent ({dependent}) turned singular, or nearly, {where}: the states "
                    f"{', '.join(cm.states[:6])} no longer determine them there.")
        return (f"the constraints' Jacobian in the variables the kept states leave dependent "
                f"({dependent}) turned singular {where}: the states "
                f"{', '.join(cm.states[:6])} no longer determine them there, and the run went "
                f"on along one branch or another (not reliable past that point).")


def simulate_switching(cm, grid, t_start, t_end, options) -> Result:
    """Integrate over ``grid`` switching the state choice where it degrades (see the module
    documentation); ``options`` are :func:`mbmodel.simulate`'s other options."""
    from .inputs import input_function
    from .simulate import simulate_compiled, static_hint
    choice = StateChoice(cm, options.get("params"))
    u_of = input_function(cm, options.get("inputs"))
    current = frozenset(choice.set.dependent)
    model = cm
    x0, z0 = options.pop("x0", None), options.pop("z0", None)
    switches = []
    if x0 is None:
        x, z = initial_values(cm, params=options.get("params"),
                              inputs=options.get("inputs"), t_start=t_start,
                              steady_state=options.get("steady_state", False))
        values = _values_at(cm, x, z, choice.p, options.get("inputs"), t_start)
        switch = choice.better(choice.evaluate(values.__getitem__), current)
        if switch is not None:
            switches.append((t_start, choice.names(current), choice.names(switch)))
            current, model = switch, choice.model_for(switch)
            x0 = [values[n] for n in model.states]
            z0 = [values.get(n, s) for n, s in zip(model.algebraic, model.z_start)]
        else:
            x0, z0 = x, z
    options.pop("steady_state", None)
    wanted = grid
    grid = _refined(grid, (t_end - t_start) / CHECKS_PER_RUN)
    pieces = []
    k = 0  # index in grid of the point the next stretch starts from
    t = t_start
    stretch = STRETCH
    last_ratio = None  # (time, quality ratio) of the last point checked
    while k < len(grid) - 1 or (not pieces and grid[-1] > t):
        stop = min(k + stretch, len(grid) - 1)
        prepended = grid[k] != t
        times = grid[k:stop + 1] if not prepended else np.concatenate([[t], grid[k:stop + 1]])
        try:
            res = simulate_compiled(model, times[-1], t_start=t, times=times, x0=x0, z0=z0,
                                    **options)
            reached = len(times)
        except SimulationError as exc:
            res = exc.result  # the points reached before the failure
            if res is None or len(res.t) < 2:
                # (the run inside kept its states: the advice to switch them is this one's)
                exc.args = (str(exc).replace(static_hint(model), ""),)
                raise
            reached = len(res.t)
        switch_at, switch, ratios = choice.first_switch(res, reached, current, model, u_of)
        trend = ([last_ratio] if last_ratio is not None and switch_at is None else []) + ratios
        stretch = _next_stretch(stretch, trend, switch_at is not None, grid)
        last_ratio = ratios[-1] if ratios and switch_at is None else None
        if switch_at is None and reached < len(times):
            candidates = [choice.set.candidates[i] for i in choice.coordinates]
            error = SimulationError(
                f"the integrator failed at t = {res.t[reached - 1]:g} with the states "
                f"{', '.join(model.states)}, and no other choice among the candidates "
                f"{', '.join(candidates[:8])}{' ...' if len(candidates) > 8 else ''} is "
                f"better there: the model may pass a singular point of its constraints (where "
                f"two branches of their solution meet, as at a linkage's change point), or "
                f"a variable leaves its domain. "
                f"The result up to t = {res.t[reached - 1]:g} is in this error's 'result'.")
            error.time = error.reached_time = float(res.t[reached - 1])
            error.variable = None
            pieces.append((res, 1 if pieces or prepended else 0, reached - 1))
            error.result = _joined(cm, pieces, switches, wanted[wanted <= error.time])
            raise error from None
        last = switch_at if switch_at is not None else len(times) - 1
        # the first point is the previous piece's last (or the start, not asked for)
        pieces.append((res, 1 if pieces or prepended else 0, last))
        t = float(times[last])
        x_last = [res[n][last] for n in model.states]
        z_last = [res[n][last] for n in model.algebraic]
        values = _values_at(model, x_last, z_last, choice.p, options.get("inputs"), t)
        if switch_at is not None:
            switches.append((t, choice.names(current), choice.names(switch)))
            current, model = switch, choice.model_for(switch)
        x0 = [values[n] for n in model.states]
        z0 = [values.get(n, s) for n, s in zip(model.algebraic, model.z_start)]
        k = int(np.searchsorted(grid, t, "left"))
        if grid[k] != t:
            k -= 1
        if t >= grid[-1]:
            break
    return _joined(cm, pieces, switches, wanted)


def simulate_kept(cm, grid, t_start, t_end, options) -> Result:
    """Integrate over ``grid`` with the compiled choice of states kept
    (``state_selection="static"``), checked as the dynamic selection checks it (at least
    :data:`CHECKS_PER_RUN` points per run): where the constraints' Jacobian in the dependent
    variables turns singular, the kept states no longer determine them, and the run goes on
    along one branch or another. A cartesian pendulum kept on ``y`` passes the bottom 1.4e-3
    off at rtol 1e-10; so the run stops there with a :class:`~mbmodel.SimulationError`
    holding the result up to the last point checked before it.

    Singular between two points checked: the determinant of those columns changes sign, or
    their quality (:meth:`StateChoice.assess`) falls below :data:`SINGULAR_QUALITY`."""
    from .inputs import input_function
    from .simulate import simulate_compiled
    choice = StateChoice(cm, options.get("params"))
    u_of = input_function(cm, options.get("inputs"))
    wanted = grid
    grid = _refined(grid, (t_end - t_start) / CHECKS_PER_RUN)
    failure = None
    try:
        res = simulate_compiled(cm, grid[-1], t_start=t_start, times=grid, **options)
    except SimulationError as exc:  # past a singular point, most likely: checked up to it
        if getattr(exc, "result", None) is None or len(exc.result.t) < 1:
            raise
        res, failure = exc.result, exc
    jacobian_at = choice.jacobians_along(res, cm, u_of)
    kept = KeptChoice(choice)
    for j, t in enumerate(res.t):
        if not kept.singular(jacobian_at(j)):
            continue
        before = float(res.t[max(j - 1, 0)])
        error = SimulationError(
            kept.singular_text(before, float(t)) + " The result up to t = "
            f"{before:g} is in this error's 'result'."
            + ("" if failure is None else f" The run then failed at t = {failure.time:g}."))
        error.time = error.reached_time = before
        error.variable = None
        error.result = _joined(cm, [(res, 0, max(j - 1, 0))], [], wanted[wanted <= before])
        raise error from None
    if failure is not None:
        raise failure
    return _joined(cm, [(res, 0, len(res.t) - 1)], [], wanted)


def _refined(grid, spacing) -> np.ndarray:
    """``grid`` with points added inside the intervals longer than ``spacing`` (evenly, as
    few as keep them within it); a grid that fine already is returned as it is."""
    lengths = np.diff(grid)
    inside = np.ceil(lengths / spacing).astype(int) - 1 if spacing > 0 else 0 * lengths
    if not np.any(inside > 0):
        return grid
    parts = [grid[:1]]
    for a, length, n in zip(grid[:-1], lengths, inside):
        if n > 0:
            parts.append(a + length * np.arange(1, n + 1) / (n + 1))
        parts.append([a + length])
    refined = np.concatenate(parts)
    refined[np.searchsorted(refined, grid)] = grid  # the output times exactly as asked
    return refined


def _next_stretch(stretch, ratios, switched, grid) -> int:
    """Output points to integrate before the next check: from the trend of the current
    choice's quality ratio, stop before it is predicted to reach :data:`SWITCH_RATIO`
    (integrating into a singular choice wastes work until the integrator fails); while it
    does not fall, twice as many (each restart of the integrator costs a little accuracy)."""
    if switched or len(ratios) < 2:
        return STRETCH if switched else max(1, stretch)
    (t0, r0), (t1, r1) = ratios[-2], ratios[-1]
    spacing = (t1 - t0) or 1.0
    slope = (r1 - r0) / spacing
    if slope >= 0:
        return min(2 * stretch, len(grid))
    points = int(0.8 * (r1 - SWITCH_RATIO) / (-slope) / spacing)
    return max(1, min(points, 2 * stretch, len(grid)))


def _values_at(cm, x, z, p, inputs, t) -> dict:
    """Every output variable's value at the state (x, z) at time t."""
    from .inputs import input_function
    u = input_function(cm, inputs)(t)
    y = np.array(cm.output_function(x, z, u, p, t), dtype=float).ravel()
    return {name: y[i] for name, i in cm.output_index.items()}


def _joined(cm, pieces, switches, wanted) -> Result:
    """One result at the output times ``wanted`` from the stretches (each from its first
    new point to its last kept one, on the finer grid of the checks); the table of all
    variables is put together when first read: those every stretch's model computed (a
    model compiled with ``outputs=`` keeps in each choice its own states besides them: the
    others' were NaN in its stretches, where asked for)."""
    names = [n for n in pieces[0][0].names if all(n in res for res, _, _ in pieces[1:])]
    t = np.concatenate([res.t[first:last + 1] for res, first, last in pieces])
    rows = np.isin(t, wanted)
    t = t[rows]

    def trajectory(name):
        return np.concatenate([res[name][first:last + 1]
                               for res, first, last in pieces])[rows]

    def joined(asked):
        for res, _, _ in pieces:  # (each stretch's variables computed together)
            res.prefetch(asked)
        return np.vstack([trajectory(n) for n in asked])
    known = [res.known_names for res, _, _ in pieces]
    always_known = [n for n in cm.states if all(n in names for names in known)]
    alone = all(res.computes_alone for res, _, _ in pieces)
    result = Result(t, lambda: joined(names), names, compiled=cm,
                    known={n: trajectory(n) for n in always_known},
                    rows=(lambda indices: joined([names[i] for i in indices])) if alone
                    else None)
    result.methods = [m for res, _, _ in pieces for m in res.methods]
    result.state_switches = switches
    return result
