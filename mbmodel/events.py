"""Simulation of models with events (relations on continuous variables, when clauses,
discrete variables, samples).

Between events the discrete knowns (relations, discrete variables, pre values) are
constant, so the continuous part runs as generated code, exactly as for a model without
events. Crossings are looked for on a check grid inside every output interval (spacing
``max_step``, or a thousandth of the run, or half the output interval, whichever is
finest) and located by regula falsi (Illinois) on their zero-crossing functions until the
bracket is below :data:`EVENT_TIME_TOLERANCE` (relative):

* in DOP853's C loop (:mod:`mbmodel.explicit`) the generated event function is the loop's
  guard: evaluated after every step at the check points inside it, at three points
  inside it on a cubic interpolant, and at its end, a crossing located on the step's
  dense output, crossings that change nothing passed on (:meth:`_Run.inert`); the loop
  returns at an event (:meth:`_Run.advance_guarded`);
* with casadi's integrators (CVODES, IDAS) the states at the check points are checked
  here after each stretch, and each trial of the location integrates again from the last
  point before the crossing (:meth:`_Run.advance`, :meth:`_Run.locate`). A stretch gets
  at least one check point per step the integrator took on it (integrated again with more
  when it took more than it had), so that, as in the C loop, crossings are looked for at
  least once per step, whatever the output grid.

The event happens at the bracket's right end, where the relation has switched; the event
iteration (Modelica's) then runs to a fixed point: algebraic variables re-solved,
relations evaluated, discrete equations and fired when clauses applied, until no discrete
value changes.

casadi's integrators run in scaled time over ``[t0, t0 + dt]`` (both passed as
parameters), so one integrator object serves every interval and event. Python runs once per
output interval and a few times per event, never per integrator step.
"""

from __future__ import annotations

import math
from collections import deque

import casadi as ca
import numpy as np

from .errors import SimulationError
from .explicit import CROSSED, MAX_STEPS
from .explicit import guard as explicit_guard
from .explicit import integrator as explicit_integrator
from .impulses import ImpulseWatch
from .initialization import initial_values
from .native import dynamics, event_function
from .quiet import casadi_lines_dropped
from .state_selection import CHECKS_PER_RUN as STATE_CHECKS_PER_RUN
from .event_layout import MAX_EVENT_ITERATIONS, Event, relations_at
from .integrators import EVENT_TIME_TOLERANCE, Buffered, due, mapped
from .state_selection import KeptChoice, StateChoice
from .workspace import built, workspace

#: Crossing functions within NOISE_FLOOR * atol of zero keep the relation's value.
NOISE_FLOOR = 1e-6
#: After an event in a model with algebraic variables, a relation it switched keeps its
#: value while its crossing function lies within this fraction of the integration
#: tolerance (atol + rtol * its size) on the other side: IDAS re-solves the algebraic
#: variables to about 1/300 of its tolerances as it restarts (see Run.band_after).
HELD_FRACTION = 1e-2
#: Chattering: this many events in a row ...
CHATTER_EVENTS = 100
#: ... within this fraction of the run (at least 1e-12 s) stop the run with an error.
CHATTER_FRACTION = 1e-9
#: ... or within CHATTER_EVENTS * CHATTER_GAP * max(1, |t|) s (a gigahertz: no physical
#: switching, whatever the run's length).
CHATTER_GAP = 1e-9
#: ... or, all of them crossings with the states standing still within the integration
#: tolerance, within this fraction of the run: a sliding mode (a thermostat without
#: hysteresis at rtol 1e-4 switched every 1.5e-8 s, its temperature 21 to within 1e-8,
#: which the bounds above miss; switching that moves the states, a PWM's, is not one).
CHATTER_SLIDING_FRACTION = 1e-5
#: Zeno: a when clause that fired ZENO_FIRINGS + 1 times at intervals each shorter than
#: the one before by a factor below ZENO_RATIO stops the run ...
ZENO_FIRINGS = 30
ZENO_RATIO = 0.999
#: ... or ZENO_MIN_FIRINGS times, with the last interval ZENO_SHRINK of the first or less
#: (intervals that halve reach the integrator's resolution long before 31 firings: a ball
#: bouncing with e = 0.5 lost its 27th impact and fell through the floor).
ZENO_MIN_FIRINGS = 8
ZENO_SHRINK = 1e-3
#: ... once the extrapolated accumulation point lies within the run and within this
#: fraction of it ahead.
ZENO_HORIZON = 0.01
#: Default spacing of the crossing checks as a fraction of the run.
CHECKS_PER_RUN = 1000
#: Most check points one stretch of casadi's integrators gets to have one per step.
MAX_STEP_CHECKS = 4096
#: Steps an integrator may take between two check points of a stretch that can be halved
#: (CVODES' ``max_num_steps``, the C loops' per output time): past a crossing the old
#: branch's equations may have no solution (a cylinder through its end stop, its chamber
#: volume negative), and the integrator grinds through the full budget before it fails
#: (the hydraulic press: 100 000 steps, 1.5 s, per failed stretch, 35 s a run with two
#: output times). A stretch that needs more is halved as one that fails; only the last,
#: whose failure is reported, has the integrator's full budget.
STEPS_PER_CHECK = 1000
#: A relation whose crossing function is within this fraction of the size of its sides
#: keeps its value in the event iteration (see _Run.at_round_off).
ROUND_OFF = 1e-12
#: The first stretch after an event (or the start) spans at most this many check spacings
#: (after the probe), the next twice as many, and so on while no event comes.
REACH_CHECKS = 4
#: A stretch of one check point that fails is halved down to this length (relative to the
#: time, at least 1 s), in case a crossing comes before the failure; then the failure is
#: reported.
MIN_HALVED = 1e-9
#: Check points right after an event, at distances halving from the check spacing down to
#: 2^-(PROBE_POINTS-1) of it.
PROBE_POINTS = 40


def simulate_with_events(cm, grid, t_start, t_end, p, u_of, x0, steady_state, method,
                         rtol, atol, max_step, native, params, inputs, progress=None, z0=None):
    """The run of a model with events; returns (X, Z, U, events, methods) on ``grid``.
    A SimulationError carries ``reached`` = (X, Z, U, rows filled) for the partial result.
    ``progress(t)``, if given, is told the time reached after each integrator call; ``z0``
    (with ``x0``) guesses the algebraic variables."""
    run = _Run(cm, p, u_of, method, rtol, atol, max_step, native, t_start, t_end)
    run.progress = progress
    run.z_guess = z0
    try:
        return run.run(grid, x0, steady_state, params, inputs)
    except SimulationError as exc:
        if run.reached is not None:
            _, X, Z, U = run.reached
            exc.reached = (X, Z, U, grid <= run.last_good, run.events)
        raise


class _Run:
    def __init__(self, cm, p, u_of, method, rtol, atol, max_step, native, t_start, t_end):
        self.cm, self.p, self.u_of = cm, p, u_of
        self.layout = cm.events
        self.rtol, self.atol, self.native = rtol, atol, native
        self.event_fn = event_function(cm, native)  # in C when large (or as DOP853's guard)
        self._values = None      # event_fn through buffers, and its maps per point count
        self._mapped_values = {}
        self.t_start, self.t_end = t_start, t_end
        self.n_x, self.n_z = cm.symbols.x.numel(), cm.symbols.z.numel()
        if method == "cvodes":
            raise SimulationError("method='cvodes' (nonlinear blocks solved inside the right-"
                                  "hand side) does not handle events; use 'idas' or 'auto'")
        self.method = method
        self.check_spacing = min(max_step or math.inf, (t_end - t_start) / CHECKS_PER_RUN)
        self.max_step = max_step
        self.events: list[Event] = []
        self.inert_crossings = 0  # relations flipped without an event (see inert)
        #: per relation, how far its crossing function may lie on the other side of zero
        #: without switching it back (see event_iteration)
        self.held_band = np.zeros(len(self.layout.relation_slots))
        #: per relation, the largest size of its crossing function on the last stretch
        #: integrated (the scale of the integrator's error on it)
        self.crossing_scale = np.zeros(len(self.layout.relation_slots))
        self.recent = deque(maxlen=CHATTER_EVENTS)
        #: the states after each of the recent events, None after a time event or sample
        self.recent_states = deque(maxlen=CHATTER_EVENTS)
        self.methods = []
        self.reached = None
        self.last_good = t_start
        self.chosen = None  # the method for "auto" until the next event
        self.next_step = 0.0  # DOP853's step at the end of the last stretch
        self.steps_taken = 0   # steps of the last integration (see advance)
        self.stretch_steps = 0
        self.stretch_cut = False   # the last stretch failed and a first part was taken
        self.finer = 1         # check points per output check point on the last stretch
        self._c_loop = False  # not looked up yet (None: no C loop)
        self._guard = False   # the same for the event function as DOP853's guard
        self.firings = {}  # when clause -> its last firing times (Zeno detection)
        self.progress = None  # told the time reached (a progress bar)
        self._ode = None  # cm.ode through buffers (edge_at_end), made when first needed
        # differentiated variables that must not jump
        self.impulses = ImpulseWatch(cm, atol, t_start)
        self.z_guess = None   # simulate(x0=..., z0=...): the algebraic variables' guess
        #: the compiled choice of states, watched where the model has one to make, and the
        #: time it was last found good
        self.kept = (None if cm.system.state_set is None else
                     KeptChoice(StateChoice(cm, p=np.asarray(p, dtype=float))))
        self.choice_checked = -math.inf

    # -- evaluation ----------------------------------------------------------------------
    def values(self, x, z, u, t):
        if self._values is None:
            self._values = Buffered(self.event_fn)
        return self._values(x, z, u, self.p, t).reshape(-1)

    def part(self, values, name):
        return values[self.layout.ranges[name]]

    def consistent_z(self, x, z, u, t):
        if not self.n_z:
            return z
        from .integrators import solve_algebraic
        try:
            return solve_algebraic(self.cm, z, self.p, u, t, x)
        except SimulationError as exc:
            raise SimulationError(
                f"at the event at t = {t:.12g} the algebraic variables have no solution near "
                f"their values before it ({exc}); a switch may have left a part of the model "
                f"undetermined (an ideal switch opening an inductor's path)") from None

    # -- the run ---------------------------------------------------------------------------
    def run(self, grid, x0, steady_state, params, inputs):
        lay = self.layout
        t = self.t_start
        u = self.u_of(t)
        D = u[lay.n_ext:].copy()
        x, z, D = self.initialize(x0, D, steady_state, params, inputs)
        u[lay.n_ext:] = D
        n_u = len(u)
        X = np.zeros((self.n_x, len(grid)))
        Z = np.zeros((self.n_z, len(grid)))
        U = np.zeros((n_u, len(grid)))
        time_events = self.time_events()
        ticks = self.sample_ticks()
        self.cond_left = self.conditions(x, z, u, t)
        ticked = [i for i, (tk, _) in enumerate(ticks) if due(tk, t)]
        starting = [te for te in time_events if due(te, t)]  # (sorted: they lead)
        if ticked or starting:
            # samples at the start time (and time events a round-off after it) fire right
            # after initialization, and the rows at that time show their results (as
            # Dymola's last row at an event time does)
            time_events = time_events[len(starting):]
            t = max([t] + starting + [ticks[i][0] for i in ticked])
            u = self.u_out(t, D)
            x, z, D = self.event_iteration(t, x, z, u, ["time event"] * len(starting) + [
                lay.sample_texts[ticks[i][1]] for i in ticked],
                samples=[ticks[i][1] for i in ticked])
            self.advance_ticks(ticks, ticked)
            u = self.u_out(t, D)
        k = 0
        while k < len(grid) and due(grid[k], t):
            X[:, k], Z[:, k], U[:, k] = x, z, u
            k += 1
        self.reached = (grid, X, Z, U)
        n_intervals = 1  # output intervals per integrator call: doubles while no event comes
        singular = None  # where the kept choice of states turned singular in a stretch
        probe = True  # the first stretch after an event (or the start) is probed
        while t < self.t_end:
            if self.progress is not None:
                self.progress(t)
            real_event = min(time_events[0] if time_events else math.inf,
                             min((tk for tk, _ in ticks), default=math.inf))
            next_time_event = min(real_event, self.t_end)
            on_grid = k > 0 and grid[k - 1] == t
            n_out, m = 0, 0
            # after an event the stretches grow from REACH_CHECKS check spacings: with
            # coarse output times (a user who wants the last row) each stretch would run to
            # the next, its check points past the next crossing integrated for nothing (not
            # in DOP853's C loop, which stops at the crossing itself)
            reach = (math.inf if self.guarded(x, z, self.u_out(t, D), t) else
                     t + n_intervals * REACH_CHECKS * self.check_spacing * (1 + 1e-9))
            if on_grid and k < len(grid) and grid[k] <= min(next_time_event, reach):
                # whole output intervals of equal length, as many as allowed
                last = int(np.searchsorted(grid, min(next_time_event, reach),
                                           side="right")) - 1
                n_out = min(n_intervals, last - k + 1)
                spacing = grid[k] - t
                span = grid[k:k + n_out] - t
                uniform = np.abs(span - spacing * np.arange(1, n_out + 1)) <= 1e-9 * spacing
                n_out = int(np.argmin(uniform)) if not uniform.all() else n_out
                n_out = max(1, 1 << (n_out.bit_length() - 1))  # a power of two
                target = grid[k + n_out - 1]
                per = _check_points(spacing, self.check_spacing)
                m = n_out * per
            else:
                target = min(grid[k] if k < len(grid) else math.inf, next_time_event, reach)
                m = _check_points(target - t, self.check_spacing)
                per = m
                n_out = 1 if k < len(grid) and grid[k] <= target else 0
            if target < next_time_event and due(next_time_event, target):
                # an output time one round-off before an event (0.3 and a sample tick at
                # 0.1*3): the stretch ends at the event (DOP853 cannot step across 5e-17 s),
                # and the row shows the values after it
                target = next_time_event
            u = self.u_out(0.5 * (t + target), D)
            if probe and len(lay.relation_slots):
                # Right after an event a relation may switch back within a tiny time (a ball
                # bouncing ever lower): check points at geometrically growing distances.
                probe = False
                end = min(target, t + self.check_spacing)
                t_new, x_new, z_new, crossed, xs, zs, valid = self.advance(
                    t, end, PROBE_POINTS, x, z, u, geometric=True,
                    ends_at_event=end >= real_event)
                D[lay.relation_slots - lay.n_ext] = u[lay.relation_slots]  # inert flips
                singular = self.singular_choice(t, end, PROBE_POINTS, True, xs, zs, valid, u,
                                                (t_new, x_new, z_new))
                if singular is not None:
                    raise self.kept_choice_failure(*singular[1:])
                if crossed is None and end < target:
                    t, x, z = t_new, x_new, z_new
                    continue
                n_out, xs, zs, valid = 0, None, None, 0
            else:
                t_new, x_new, z_new, crossed, xs, zs, valid = self.advance(
                    t, target, m, x, z, u, ends_at_event=target >= real_event)
                D[lay.relation_slots - lay.n_ext] = u[lay.relation_slots]  # inert flips
                singular = self.singular_choice(t, target, m, False, xs, zs, valid, u,
                                                (t_new, x_new, z_new))
                if singular is not None:
                    # the rows before it are written, then the run stops
                    valid, crossed = singular[0], None
            # outputs reached before any crossing; one within the width the crossing was
            # located to shows the value after it (which side it falls on is round-off)
            before = t_new
            if crossed is not None:
                before -= EVENT_TIME_TOLERANCE * max(1.0, abs(t_new))
            at_event = crossed is None and t_new >= real_event
            for j in range(n_out):
                col = (j + 1) * per - 1
                if col >= valid or grid[k] >= before or (at_event and due(t_new, grid[k])):
                    break  # the last point is written after a possible event there
                X[:, k], Z[:, k], U[:, k] = xs[:, col], zs[:, col], self.u_out(grid[k], D)
                k += 1
            if singular is not None:
                raise self.kept_choice_failure(*singular[1:])
            t, x, z = t_new, x_new, z_new
            self.last_good = t
            n_intervals = 1 if crossed is not None else min(2 * n_intervals, 1 << 16)
            causes = []
            ticked = []
            if crossed is not None:
                causes = [lay.relation_text(i) for i in crossed]
            elif t >= next_time_event:
                # (events that are one instant in exact arithmetic, a sample's tick and a
                # step's time computed apart, are one event: its rows show both done)
                instant = t
                while time_events and due(time_events[0], instant):
                    t = max(t, time_events.pop(0))
                    causes.append("time event")
                ticked = [i for i, (tk, _) in enumerate(ticks) if due(tk, instant)]
                # at the latest of them (1e-12 on at most, the states held): a step's time
                # has come for the sample that reads it
                t = max([t] + [ticks[i][0] for i in ticked])
                for i in ticked:
                    causes.append(lay.sample_texts[ticks[i][1]])
            if causes:
                u = self.u_out(t, D)
                x_before, z_before = x, z
                x, z, D = self.event_iteration(t, x, z, u, causes,
                                               samples=[ticks[i][1] for i in ticked],
                                               crossed=crossed or ())
                if self.impulses.active and np.array_equal(x, x_before):
                    D_before = u[lay.n_ext:].copy()
                    self.impulses.across(
                        t, (x_before, z_before, lambda s: self.u_out(s, D_before)),
                        (x, z, lambda s: self.u_out(s, D)), self.p)
                self.advance_ticks(ticks, ticked)
                n_intervals = 1
                probe = True
                # a row written already at an output time a round-off before the event (a
                # stretch that ended there, its crossing function at -1e-16, found it
                # 2.5e-13 later) is at it too: it shows the values after it
                j = k - 1
                while j >= 0 and grid[j] <= t and due(t, grid[j]):
                    X[:, j], Z[:, j], U[:, j] = x, z, self.u_out(grid[j], D)
                    j -= 1
            # (an output time a round-off after the event is at it: its row too)
            while k < len(grid) and due(grid[k], t):
                X[:, k], Z[:, k], U[:, k] = x, z, self.u_out(grid[k], D)
                k += 1
        return X, Z, U, self.events, self.methods

    def singular_choice(self, t0, t1, m, geometric, xs, zs, valid, u, end):
        """Where, among the ``valid`` first of the stretch's ``m`` check points (columns of
        ``xs``, ``zs``; a stretch cut short has the first of them only) and then its end
        point ``(t, x, z)`` (index ``valid``), the compiled choice of states turns singular:
        ``(index, time of the point before it, its time)``; None where it holds (or the
        model has no choice to make).
        A model with events keeps the states it was compiled with (the dynamic state
        selection switches them only in models without events): run on past a singular
        point, a cartesian pendulum kept on ``y`` stopped dead at the bottom."""
        if self.kept is None or zs.shape[0] != self.n_z:
            return None
        ts = t0 + (t1 - t0) * _fractions(m, geometric)
        points = [(ts[j], xs[:, j], zs[:, j]) for j in range(valid)] + [end]
        # at most one point per spacing of the static choice's checks; where one fails, the
        # first failing point since the last good one
        last, good = self.choice_checked, -1
        spacing = max(self.check_spacing, (self.t_end - self.t_start) / STATE_CHECKS_PER_RUN)
        for j, (t, x, z) in enumerate(points):
            # (and the stretch's end: a run stuck beside a singular point just before it
            # fails on every later stretch, halving each many times before it gets here)
            if j < len(points) - 1 and t < last + spacing * (1 - 1e-9):
                continue
            if self.kept.fails_at(x, z, u, t):
                j = next((i for i in range(good + 1, j) if self.kept.fails_at(
                    points[i][1], points[i][2], u, points[i][0])), j)
                return j, float(points[j - 1][0]) if j > 0 else t0, float(points[j][0])
            last, good = t, j
        self.choice_checked = last
        return None

    def kept_choice_failure(self, before, after, reached=None) -> SimulationError:
        """The error of a run whose kept choice of states turned singular between the times
        ``before`` and ``after`` (:meth:`singular_choice`); the rows up to ``before`` are
        written (up to ``reached``, if given)."""
        self.last_good = before if reached is None else reached
        flat = self.cm.flat
        states = set(self.cm.states)
        forced = [(flat.variables[pos].name, w.shown) for w in flat.hybrid.whens
                  for pos, _ in w.reinits if flat.variables[pos].name in states
                  and self._tied_to_candidates(flat.variables[pos])]
        if forced:
            why = (f" The {forced[0][1]} clause's reinit({forced[0][0]}, ...) makes "
                   f"{forced[0][0]} a state (a re-initialized variable must be one), and so "
                   f"fixes the choice of states: re-initialize variables that stay good "
                   f"states throughout (a pendulum's angle and angular velocity rather than "
                   f"its cartesian coordinates)")
        else:
            why = (" A model with events keeps the states it was compiled with (the choice "
                   "switches at run time only in models without events): give "
                   "state_select='always' to variables that stay good states throughout, or "
                   "write the model in such coordinates (a pendulum's angle rather than its "
                   "cartesian coordinates)")
        return self.failure(after, self.kept.singular_text(before, after, stopped=True) + why)

    def _tied_to_candidates(self, variable) -> bool:
        """Whether ``variable`` is one of the state set's candidates or their derivatives,
        or equals one through an equation of those two alone (vy of der(y) == vy): a
        reinit of it fixes the choice; one of a timer elsewhere does not."""
        chains = {name for chain in self.cm.system.state_set.chains for name in chain}
        if variable.name in chains:
            return True
        flat = self.cm.flat
        symbols = {flat.variables[flat.index[name]].symbol.element_hash()
                   for name in chains if name in flat.index}
        own = variable.symbol.element_hash()
        for eq in flat.equations:
            used = {s.element_hash() for s in ca.symvar(eq.residual)
                    if flat.position_of.get(s.element_hash()) is not None}
            if len(used) == 2 and own in used and used & symbols:
                return True
        return False

    def u_out(self, t, D):
        """The input vector at ``t``: external inputs, then the discrete values ``D``."""
        u = self.u_of(t)
        u[self.layout.n_ext:] = D
        return u

    def time_events(self):
        from .simulate import time_events
        return time_events(self.cm, self.p, self.u_of, self.t_start, self.t_end)

    def sample_ticks(self):
        lay = self.layout
        if lay.sample_times is None:
            return []
        values = np.array(lay.sample_times(self.p)).reshape(-1)
        n = len(lay.sample_slots)
        ticks = []
        for s in range(n):
            start, interval = values[s], values[n + s]
            if not (np.isfinite(start) and np.isfinite(interval) and interval > 0):
                raise SimulationError(f"{lay.sample_texts[s]}: sample(start, interval) needs "
                                      f"a finite start and a positive interval, not "
                                      f"({start}, {interval})")
            # (a tick a round-off before the start is at it: 0.3 from t_start = 0.1*3)
            ahead = (self.t_start - start) / interval
            first = start if start >= self.t_start else start + interval * math.ceil(
                ahead - EVENT_TIME_TOLERANCE * max(1.0, ahead))
            ticks.append((first, s))
        self.sample_spec = values
        return ticks

    def advance_ticks(self, ticks, ticked):
        """The samples ``ticked`` (positions in ``ticks``) fired: their next ticks."""
        for i in ticked:
            tick, s = ticks[i]
            ticks[i] = (self.next_tick(s, tick), s)

    def next_tick(self, s, tick):
        n = len(self.layout.sample_slots)
        start, interval = self.sample_spec[s], self.sample_spec[n + s]
        k = round((tick - start) / interval) + 1
        return start + k * interval

    # -- initialization ------------------------------------------------------------------
    def initialize(self, x0, D, steady_state, params, inputs):
        """Initial states and discrete values: the continuous initialization and the event
        iteration at the start time alternate until the discrete values settle."""
        cm, lay = self.cm, self.layout
        t = self.t_start
        if lay.initial_slot is not None:
            D[lay.initial_slot - lay.n_ext] = 1.0
        for _ in range(MAX_EVENT_ITERATIONS):
            if lay.starting_slot is not None:  # (when conditions on time as written)
                D[lay.starting_slot - lay.n_ext] = 1.0
            if x0 is None:
                x, z = initial_values(cm, params=params, inputs=inputs, t_start=t,
                                      steady_state=steady_state, discrete=D)
            else:
                x = np.asarray(x0, dtype=float)
                z = cm.starts(self.p)[1] if self.z_guess is None else np.asarray(
                    self.z_guess, dtype=float)
            u = self.u_out(t, D)
            z = self.consistent_z(x, z, u, t)
            # when clauses fire at initialization only through initial(): a condition
            # already true at the start (relations as written there) does not rise
            off = u.copy()
            if lay.initial_slot is not None:
                off[lay.initial_slot] = 0.0
            off = relations_at(cm, x, z, off, self.p, t,
                               evaluate=lambda x, z, u, p, t: self.values(x, z, u, t))
            self.cond_left = self.conditions(x, z, off, t)
            x_new, z_new, D_new = self.event_iteration(t, x, z, u, ["initialization"],
                                                       record=False, initial=True)
            settled = np.array_equal(D_new[lay.iterated - lay.n_ext], D[lay.iterated - lay.n_ext])
            D = D_new
            if settled:
                # initial() turns false: the discrete part is evaluated once more, so what
                # holds only at initialization (a friction's start of sliding) does not
                # last until the first event (as Dymola does it); the when conditions on
                # time, read as written so far, now read as right after the start (where
                # time > t_start has risen)
                if lay.starting_slot is not None:
                    D[lay.starting_slot - lay.n_ext] = 0.0
                # (recorded as the initialization event, with the clauses that fired)
                x_new, z_new, D = self.event_iteration(t, x_new, z_new, self.u_out(t, D),
                                                       ["initialization"])
                return x_new, z_new, D
            # relations and discrete variables changed: initialize the continuous part anew
        raise SimulationError(
            "initialization: the relations and discrete variables do not settle (each "
            "continuous initialization switches them again); check the start values of the "
            "variables in the relations")

    def conditions(self, x, z, u, t):
        return self.part(self.values(x, z, u, t), "conditions") > 0.5 if len(
            self.layout.condition_when) else np.zeros(0, dtype=bool)

    # -- event iteration -------------------------------------------------------------------
    def event_iteration(self, t, x, z, u, causes, samples=(), record=True, initial=False,
                        crossed=()):
        """Modelica's event iteration at ``t``. With the pre() values fixed, the discrete
        part (relations evaluated as written, discrete equations, fired when clauses) and the
        algebraic variables are solved together by fixed-point passes; re-initializations are
        applied; if any discrete value now differs from its pre() value, pre(v) := v and the
        next round starts. The relations whose crossing caused the event take their new
        values (the crossing says which): evaluated as written they could sit exactly on
        zero, where a saturated op-amp's characteristic meets the linear one. Returns x, z
        and the discrete values after the event."""
        lay = self.layout
        n_ext = lay.n_ext
        u = u.copy()
        forced = lay.relation_slots[list(crossed)]
        forced_values = 1.0 - u[forced]
        x = np.array(x, dtype=float)
        for s in samples:
            u[lay.sample_slots[s]] = 1.0
        left = u.copy()  # the left limits: pre() values of the first round
        cond_left = self.cond_left
        fired_any = np.zeros(lay.n_whens, dtype=bool)
        for _ in range(MAX_EVENT_ITERATIONS):
            u[lay.pre_slots] = left[lay.pre_of]
            u = self.propagate_discrete(x, z, u, t)
            solved = self.solve_round(x, z, u, t, forced, forced_values, cond_left, False,
                                      initial)
            if solved is None:
                # the relations switch back and forth together (coupled friction elements
                # that stop at the same instant): let one relation switch at a time
                solved = self.solve_round(x, z, u, t, forced, forced_values, cond_left, True,
                                          initial)
            if solved is None:
                raise self.not_converging(t, *self.unsettled)
            z, u, v, cond, fired = solved
            chosen = fired[lay.reinit_when]
            if chosen.any() and not initial:
                values = self.part(v, "reinits")[chosen]
                x[lay.reinit_state[chosen]] = ((values - lay.reinit_offset[chosen])
                                               / lay.reinit_sign[chosen])
            fired_any |= fired
            if len(cond):
                cond_left = cond  # pre() of the conditions: a clause fires once per rise
            if np.array_equal(u[lay.iterated], left[lay.iterated]) and not fired.any():
                break
            before, left = left, u.copy()  # pre(v) := v
        else:
            raise self.not_converging(t, u, before)
        self.chosen = None  # "auto" chooses anew for the next stretch
        # After the event: samples and initial() are false (the start flag too, once
        # initialization is over), pre(v) = v between events.
        u[lay.sample_slots] = 0.0
        if lay.initial_slot is not None:
            u[lay.initial_slot] = 0.0
        if lay.starting_slot is not None and not initial:  # (see initialize)
            u[lay.starting_slot] = 0.0
        u[lay.pre_slots] = u[lay.pre_of]
        z = self.consistent_z(x, z, u, t)
        self.cond_left = self.conditions(x, z, u, t)
        self.held_band = self.band_after(x, z, u, t, forced)
        if record:
            fired_texts = [lay.when_texts[w] for w in np.flatnonzero(fired_any)]
            self.record(t, causes + [f"fired: {s}" for s in fired_texts], (x, z, u),
                        state_event=len(crossed) > 0 and not len(samples)
                        and "time event" not in causes)
            for w in np.flatnonzero(fired_any):
                self.check_zeno(t, int(w))
        return x, z, u[n_ext:].copy()

    def band_after(self, x, z, u, t, forced) -> np.ndarray:
        """How far each relation that the event switched may find its crossing function on
        the other side of zero, as the run goes on, without switching back: a fraction
        (HELD_FRACTION) of the integration tolerance on the function's size. With algebraic
        variables, IDAS re-solves them as it restarts, to a fraction of its tolerances:
        that can put a function that depends on them a little on the old side (a contact
        on a slider-crank's algebraic piston position: 7e-11 m at rtol 1e-6), and each
        check would switch it back, event after event ('chattering'). Without them the
        restarted integrator's first values do the same (a relief valve's pressure 1.8e-5
        Pa of 150 bar on the old side under ABM: the valve closed 70 times at one instant).
        Nothing further is held: a when clause that resets a state past its threshold
        (x := 0 at x > 1) must see the next crossing."""
        lay = self.layout
        band = np.zeros(len(lay.relation_slots))
        if not len(forced):
            return band
        switched = np.isin(lay.relation_slots, forced)
        restart = HELD_FRACTION * (self.atol + self.rtol * self.crossing_scale)
        band[switched] = restart[switched]
        return band

    def solve_round(self, x, z, u, t, forced, forced_values, cond_left, one_at_a_time,
                    initial=False):
        """One round of the event iteration (pre() values fixed): the discrete part and the
        algebraic variables by fixed-point passes. ``one_at_a_time``: of the relations that
        would switch in a pass, only the farthest from its threshold does (the others wait
        for the next solve), like an active-set method. ``initial``: at the start, a
        crossing function within round-off of zero is zero (a speed the initial equations
        set to 0 comes out of the solver as 1e-25 of either sign; ``w > 0`` must not start a
        friction element sliding). Returns (z, u, values, conditions, fired when clauses),
        or ``None`` if the passes do not settle."""
        lay = self.layout
        for _ in range(MAX_EVENT_ITERATIONS):
            z = self.consistent_z(x, z, u, t)
            u_next = u.copy()
            v = self.values(x, z, u, t)
            crossings = self.part(v, "crossings")
            if initial:
                crossings = np.where(np.abs(crossings) <= NOISE_FLOOR * self.atol, 0.0,
                                     crossings)
                u_next[lay.relation_slots] = lay.literal(crossings)
            elif len(forced):   # (at a state event; at a time event a relation on time is
                # at its threshold by design, and takes the value it has just after)
                u_next[lay.relation_slots] = np.where(
                    self.at_round_off(v, crossings), u[lay.relation_slots],
                    lay.literal(crossings))
            else:
                u_next[lay.relation_slots] = lay.literal(crossings)
            u_next[forced] = forced_values
            if one_at_a_time:
                switching = np.flatnonzero(u_next[lay.relation_slots] != u[lay.relation_slots])
                if len(switching) > 1:
                    keep = switching[np.argmax(np.abs(crossings[switching]))]
                    held = lay.relation_slots[switching[switching != keep]]
                    u_next[held] = u[held]
            # the discrete part sees the relations of this solve, not the last one's
            if not np.array_equal(u_next[lay.relation_slots], u[lay.relation_slots]):
                v = self.values(x, z, u_next, t)
            u_next[lay.equation_slots] = self.part(v, "equations")
            cond = self.part(v, "conditions") > 0.5
            rising = cond & ~cond_left
            fired = np.zeros(lay.n_whens, dtype=bool)
            if rising.any():
                fired[np.unique(lay.condition_when[rising])] = True
            chosen = fired[lay.assignment_when]
            u_next[lay.assignment_slots[chosen]] = self.part(v, "assignments")[chosen]
            u_next = self.propagate_discrete(x, z, u_next, t)
            settled = np.array_equal(u_next[lay.iterated], u[lay.iterated])
            self.unsettled = (u_next, u)  # (the last pass's change: not_converging names it)
            u = u_next
            if settled:
                return z, u, v, cond, fired
        return None

    def at_round_off(self, values, crossings) -> np.ndarray:
        """Per relation, whether its crossing function is within round-off of zero
        (:data:`ROUND_OFF` of the size of the relation's sides): its value in force stands.
        A friction element sticking where the torque it would need equals its static peak
        in exact arithmetic (J = 1/(2 peak) spinning down) found ``sa < -tau0_max`` true by
        2.5e-14 of 2, started backward, stuck forward 1e-12 s later, and so on: 'chattering'
        under DOP853 only, by the rounding of its restarts."""
        scales = self.layout.ranges.get("scales")
        if scales is None or scales.stop > len(values):   # (a model saved before scales)
            return np.zeros(np.shape(crossings), dtype=bool)
        # (strictly below: where a side is 0, as in s < 0, the function is exact)
        return np.abs(crossings) < ROUND_OFF * values[scales]

    def propagate_discrete(self, x, z, u, t):
        """``u`` with the discrete equations on discrete values only brought up to date
        (in as many passes as their chain is long), the rest held at their guesses (the
        pre() values). A round's first solve then starts from a consistent guess, as a
        Modelica tool's mixed-system solver does when it tears at the relations: a friction
        element that just stopped is tried as locked, not with the sliding equations of a
        direction it is no longer in (whose holding force would make it start again)."""
        lay = self.layout
        if not lay.discrete_only.any():
            return u
        slots = lay.equation_slots[lay.discrete_only]
        for _ in range(len(slots) + 1):
            new = self.part(self.values(x, z, u, t), "equations")[lay.discrete_only]
            if np.array_equal(new, u[slots]):
                break
            u = u.copy()
            u[slots] = new
        return u

    def not_converging(self, t, u, left):
        lay = self.layout
        toggling = [lay.relation_text(i) for i, s in enumerate(lay.relation_slots)
                    if u[s] != left[s]][:5]
        if not toggling:  # the discrete variables that keep changing, by name
            names = list(getattr(self.cm, "discrete", ()))
            toggling = [name for k, name in enumerate(names) if not name.startswith("pre(")
                        and lay.n_ext + k < len(u) and u[lay.n_ext + k] != left[lay.n_ext + k]]
            toggling = toggling[:5]
        return self.failure(
            t, f"the event iteration at t = {t:.12g} does not converge: discrete values keep "
            f"changing ({'; '.join(toggling) or 'discrete variables'}); a discrete variable "
            f"may be defined through itself without pre(), or a switch has no consistent "
            f"position")

    def record(self, t, causes, point=None, state_event=False):
        self.events.append(Event(float(t), causes))
        self.recent.append(t)
        self.recent_states.append(point[0].copy() if state_event and point is not None
                                  else None)
        if len(self.recent) == CHATTER_EVENTS:
            span = self.recent[-1] - self.recent[0]
            # (also events closer together than the integration can tell apart: a
            # thermostat without hysteresis switches every 5e-11 s, whatever the run's
            # length, which the first bound alone misses in a short run)
            sliding = (span <= CHATTER_SLIDING_FRACTION * (self.t_end - self.t_start)
                       and self.sliding())
            if sliding or span <= max(CHATTER_FRACTION * (self.t_end - self.t_start), 1e-12,
                                      CHATTER_EVENTS * CHATTER_GAP * max(1.0, abs(t))):
                causes = list(dict.fromkeys(c for e in self.events[-CHATTER_EVENTS:]
                                            for c in e.causes if not c.startswith("fired")))
                raise self.failure(
                    t, f"chattering at t = {t:.12g}: {CHATTER_EVENTS} events within "
                    f"{span:.3g} s ({'; '.join(causes)[:400]}). The model switches back and "
                    f"forth faster than it can be integrated (a Zeno point, such as a bouncing "
                    f"ball coming to rest, or a switching condition without hysteresis); add "
                    f"hysteresis, a rest state, or stop the run before t = {t:.6g}"
                    + (self.one_instant_hint() if span <= 1e-9 * max(1.0, abs(t)) else "")
                    + (self.sliding_hint() if sliding else "")
                    + ("" if point is None else self.noise_hint(t, causes, *point)))

    def sliding_hint(self) -> str:
        """For chattering with the states standing still: a switching band narrower than
        the integration tolerance is not resolved (a relay's hysteresis of 2e-4 around
        x = 100 at rtol 1e-4)."""
        X = np.array(self.recent_states)
        tolerance = self.atol + self.rtol * np.abs(X).max(axis=0)
        k = int(np.argmax(tolerance / (np.abs(X).max(axis=0) + 1e-300)))
        return (f". The states stood still within the integration tolerance across these "
                f"events ({self.cm.states[k]} within {tolerance[k]:.3g}): where the model "
                f"has a switching band (hysteresis) narrower than that, the run cannot "
                f"resolve it; tighten rtol/atol below the band, or widen it")

    def sliding(self) -> bool:
        """Whether the recent events were all crossings after which the states stood still
        within the integration tolerance (see :data:`CHATTER_SLIDING_FRACTION`)."""
        if not self.n_x or any(x is None for x in self.recent_states):
            return False
        X = np.array(self.recent_states)
        return bool(np.all(np.ptp(X, axis=0)
                           <= self.atol + self.rtol * np.abs(X).max(axis=0)))

    def one_instant_hint(self) -> str:
        """For chattering at one instant: no value of the relations is consistent there."""
        return (". The events fall at one instant, not at shrinking intervals: there either "
                "no value of these relations is consistent, each making the other hold (an "
                "ideal element with positive feedback at its limit, such as a limited op-amp "
                "driven to its rail by its own output: the model needs a state there, a "
                "finite gain or a delay), or their crossing functions stay within round-off "
                "of zero")

    def noise_hint(self, t, causes, x, z, u):
        """A sentence for the chattering error if a relation that chatters amplifies the
        integration error of the states so much that its sign is noise: its change when
        each state moves by its error weight (rtol*|x| + atol) exceeds 1000 weights."""
        lay = self.layout
        text_of = {lay.relation_text(k): k for k in range(len(lay.relation_slots))}
        texts = [c for c in causes if c in text_of]
        chattering = [text_of[c] for c in texts]
        if not chattering or not len(x):
            return ""
        weights = self.rtol * np.abs(x) + self.atol
        spread = np.zeros(len(chattering))
        for side in (0.0, 1.0):  # the sensitivity differs between the two branches
            u_side = u.copy()
            u_side[lay.relation_slots[chattering]] = side
            for _ in range(len(lay.equation_slots) + 1):  # the discrete values follow
                u_side[lay.equation_slots] = self.part(self.values(x, z, u_side, t),
                                                       "equations")
            z_side = self.consistent_z(x, z, u_side, t)
            base = self.part(self.values(x, z_side, u_side, t), "crossings")[chattering]
            change = np.zeros(len(chattering))
            for i, w in enumerate(weights):
                moved = x.copy()
                moved[i] += w
                z_moved = self.consistent_z(moved, z_side, u_side, t)
                change += np.abs(self.part(self.values(moved, z_moved, u_side, t),
                                           "crossings")[chattering] - base)
            spread = np.maximum(spread, change)
        worst = int(np.argmax(spread))
        if spread[worst] <= 1e3 * weights.sum():
            return ""
        return (f". At these tolerances (rtol={self.rtol:g}, atol={self.atol:g}) the sign of "
                f"{texts[worst]} is noise: "
                f"its function moves by {spread[worst]:.2g} when the states move by their "
                f"error weights (a stiff switching element, such as an ideal diode with a tiny "
                f"Ron feeding a capacitor directly); tighten rtol and atol (e.g. rtol=1e-10, "
                f"atol=1e-12) or make the element less stiff")

    def check_zeno(self, t, w):
        """A when clause firing at ever shorter intervals approaches a Zeno point
        (infinitely many events before a finite time, like a bouncing ball coming to rest):
        each interval shorter than the one before over :data:`ZENO_FIRINGS` + 1 firings,
        or over :data:`ZENO_MIN_FIRINGS` and by :data:`ZENO_SHRINK` in all. Once that point,
        extrapolated from the shrinking intervals, lies within the run and close ahead
        (:data:`ZENO_HORIZON`), the run stops with it instead of integrating past it (the
        ball would fall through the floor)."""
        times = self.firings.setdefault(w, deque(maxlen=ZENO_FIRINGS + 1))
        times.append(t)
        if len(times) < ZENO_MIN_FIRINGS:
            return
        gaps = np.diff(np.array(times))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = gaps[1:] / gaps[:-1]
        shrinking = (gaps[:-1] > 0) & (gaps[1:] > 0) & (ratios < ZENO_RATIO)
        # the shrinking intervals up to the last one: count + 2 firings
        count = len(shrinking) if shrinking.all() else int(np.argmin(shrinking[::-1]))
        firings = count + 2
        if firings < ZENO_MIN_FIRINGS or (firings <= ZENO_FIRINGS
                                          and gaps[-1] > ZENO_SHRINK * gaps[-count - 1]):
            return
        q = float(np.exp(np.mean(np.log(ratios[-count:]))))
        t_zeno = t + gaps[-1] * q / (1 - q)
        if t_zeno > self.t_end or t_zeno - t > ZENO_HORIZON * (self.t_end - self.t_start):
            return  # far from the accumulation point: the events are still resolved
        raise self.failure(
            t, f"Zeno behaviour: '{self.layout.when_texts[w]}' fired {firings} times "
            f"at intervals shrinking by a factor {q:.3g} each (last {gaps[-1]:.3g} s at "
            f"t = {t:.12g}); infinitely many events would come before t = {t_zeno:.12g}. "
            f"The model needs a state for what happens there (e.g. a ball at rest), or stop "
            f"the run before it")

    def failure(self, t, message):
        error = SimulationError(message + f". The result up to t = {self.last_good:.6g} is in "
                                          f"this error's 'result'.")
        error.time = float(t)
        error.reached_time = self.last_good
        return error

    # -- integration with crossing detection ----------------------------------------------
    def guarded(self, x, z, u, t) -> bool:
        """Whether a stretch from here runs in DOP853's C loop with the event function as
        its guard (:meth:`advance_guarded`)."""
        return bool(len(self.layout.relation_slots) and self.n_x
                    and self.choose_method(x, z, u, t) == "dop853" and self.guard() is not None)

    def advance(self, t0, t1, m, x, z, u, geometric=False, ends_at_event=False):
        """Integrate from t0 to t1 with m check points (equally spaced, or at distances
        halving towards t0); stop at the first crossing. Returns (t, x, z, crossed relation
        indices or None, states and algebraic variables at the check points, how many of
        those come before the crossing)."""
        lay = self.layout
        if t1 <= t0:
            return t1, x, z, None, np.zeros((self.n_x, 0)), np.zeros((self.n_z, 0)), 0
        if self.guarded(x, z, u, t0):
            found = self.advance_guarded(t0, t1, m, x, z, u, geometric, ends_at_event)
            if found is not None:
                return found
        if not len(lay.relation_slots) or geometric:
            return self.advance_checked(t0, t1, m, x, z, u, geometric, ends_at_event)
        # As root finding in CVODES or DASSL checks after every step, the stretch has at
        # least one check point per step the integrator took on it: a relation that
        # switches and switches back between two check points (a ram losing contact for
        # 0.6 ms) is otherwise missed, and whether it was found depended on the output grid.
        # Check points per output check point: as many as the last stretch needed, more
        # (and the stretch integrated again) when this one takes more steps.
        finer = min(self.finer, max(1, MAX_STEP_CHECKS // m))   # (learned for another m)
        # (a pass flips the relations it passes as inert in u, and counts them)
        relations, inert = u[lay.relation_slots].copy(), self.inert_crossings
        for _ in range(3):  # (steps do not depend on the check points: a second pass holds)
            used = finer
            u[lay.relation_slots], self.inert_crossings = relations, inert
            found = self.advance_checked(t0, t1, m * used, x, z, u, False, ends_at_event)
            need = _finer_checks(self.stretch_steps, m)
            if need <= used or self.stretch_cut:
                break   # (or the integration failed and a first part was taken instead)
            finer = need
        # the next stretch starts with as many, or half as many where this one needed fewer
        # (the steps grow back gradually after an event: fewer stretches integrated twice)
        self.finer = max(need, used // 2)
        if used == 1:
            return found
        t, x_end, z_end, crossed, xs, zs, valid = found
        return t, x_end, z_end, crossed, xs[:, used - 1::used], zs[:, used - 1::used], \
            valid // used

    def advance_checked(self, t0, t1, m, x, z, u, geometric=False, ends_at_event=False):
        """:meth:`advance` with exactly ``m`` check points."""
        lay = self.layout
        frozen = u[lay.relation_slots]
        fractions = _fractions(m, geometric)
        ts = t0 + (t1 - t0) * fractions
        ts[-1] = t1
        # (one check point: halved in time while a crossing may come before the failure)
        halving = not geometric and (m >= 2 or (
            len(lay.relation_slots) and t1 - t0 > MIN_HALVED * max(1.0, abs(t1))))
        try:
            xs, zs = self.integrate(t0, t1, m, x, z, u, geometric, diagnose=not halving)
        except SimulationError:
            if not halving:
                raise
            # Crossings are looked for after the whole stretch is integrated; past one the
            # equations of the old branch may have no solution (a cylinder through its end
            # stop, with a negative chamber volume; a pole just past a stop): the first half
            # of the stretch, same check points, finds the crossing before the failure.
            half = max(1, m // 2)
            found = self.advance_checked(t0, t0 + (t1 - t0) * (half / m if m >= 2 else 0.5),
                                         half, x, z, u)
            self.stretch_cut = True
            return found
        self.stretch_steps = self.steps_taken   # (locating a crossing integrates again)
        self.stretch_cut = False
        if not len(lay.relation_slots):
            return t1, xs[:, -1], zs[:, -1], None, xs, zs, m
        c, round_off = self.crossings_at(xs, zs, u, ts, with_round_off=True)
        # A crossing function within round-off of zero on the other side is not a crossing:
        # a locked joint's speed, constant in exact arithmetic, wanders by 1e-24 in BDF's
        # corrector and would make events with no consequence (nor is one within the band
        # an event left it in: band_after; nor one at round-off of its sides' size:
        # at_round_off).
        held = (np.abs(c) <= self.noise()[:, None]) | round_off
        # (a check point that rounds to t0 itself, the first of a probe after an event at
        # t = 4.2 spaced 2e-16 s, is the start again: what a relation reads there is no
        # crossing)
        literal = np.where(held | (ts <= t0), frozen[:, None], lay.literal(c))
        differs = np.any(literal != frozen[:, None], axis=0)
        if not differs.any():
            # (only where nothing crossed before: an edge at the end comes last)
            edge = None if ends_at_event else self.edge_at_end(t1, xs[:, -1], zs[:, -1], u,
                                                               frozen, c[:, -1])
            if edge:
                return t1, xs[:, -1], zs[:, -1], edge, xs, zs, m - 1
            return t1, xs[:, -1], zs[:, -1], None, xs, zs, m
        self.crossing_scale = np.max(np.abs(c), axis=1)
        j = int(np.argmax(differs))
        while True:  # crossings that change nothing flip their relations without an event
            changed = np.flatnonzero(literal[:, j] != frozen)
            if not self.inert(changed, xs[:, j], zs[:, j], u, ts[j]):
                break
            frozen = frozen.copy()
            frozen[changed] = literal[changed, j]
            u[lay.relation_slots[changed]] = frozen[changed]
            self.inert_crossings += 1
            literal = np.where(held | (ts <= t0), frozen[:, None], lay.literal(c))
            differs = np.any(literal != frozen[:, None], axis=0)
            differs[:j + 1] = False
            if not differs.any():
                return t1, xs[:, -1], zs[:, -1], None, xs, zs, m
            j = int(np.argmax(differs))
        if ends_at_event and j == m - 1:
            # at a time event the relations on time already read their new values; the
            # event iteration there evaluates every relation
            return t1, xs[:, -1], zs[:, -1], None, xs, zs, m
        if j == 0:
            left = (t0, x, z, self.crossings_at(x[:, None], z[:, None], u, np.array([t0]))[:, 0])
        else:
            left = (ts[j - 1], xs[:, j - 1], zs[:, j - 1], c[:, j - 1])
        right = (ts[j], xs[:, j], zs[:, j], c[:, j])
        try:
            return (*self.locate(left, right, u, frozen, literal[:, j] != frozen), xs, zs, j)
        except SimulationError:
            # (a rocker's speed crossing 0 at its turning point, where the kept choice of
            # states is singular: the crossing cannot be located on that branch)
            singular = self.singular_choice(t0, t1, m, geometric, xs, zs, j, u,
                                            (ts[j], xs[:, j], zs[:, j]))
            if singular is None:
                raise
            raise self.kept_choice_failure(*singular[1:], reached=self.last_good) from None

    def advance_guarded(self, t0, t1, m, x, z, u, geometric, ends_at_event):
        """:meth:`advance` with the crossings found inside the C loop: DOP853 evaluates the
        event function after every step (at the check points inside it and at its end),
        locates a crossing on its dense output, and passes crossings that change nothing
        (:meth:`inert`) without stopping, so neither check points nor trial points cost an
        integration or a return to Python. None when the event function is not generated
        C, or the loop failed (``advance`` then does the stretch its way)."""
        g = self.guard()
        if g is None:
            return None
        lay = self.layout
        ts = t0 + (t1 - t0) * _fractions(m, geometric)
        ts[-1] = t1
        run = self.c_loop()(t0, x, np.concatenate([self.p, u]), ts, rtol=self.rtol,
                            atol=self.atol, max_step=self.max_step, first_step=self.next_step,
                            method="dop853", guard=g, frozen=u[lay.relation_slots])
        if run.status not in (0, CROSSED):
            return None
        self.used("dop853")
        u[lay.relation_slots] = run.relations   # crossings passed as inert
        self.inert_crossings += run.inert
        self.next_step = run.next_step
        xs, zs, valid = run.xs, np.zeros((0, m)), run.written
        if run.status == 0:
            edge = None if ends_at_event else self.edge_at_end(
                t1, xs[:, -1], z, u, u[lay.relation_slots])
            if edge:
                return t1, xs[:, -1], z, edge, xs, zs, m - 1
            return t1, xs[:, -1], z, None, xs, zs, m
        hit = run.crossing
        while valid < m and ts[valid] <= hit.time:   # within the width it was located to
            xs[:, valid] = hit.x
            valid += 1
        if ends_at_event and hit.time >= t1 - EVENT_TIME_TOLERANCE * max(1.0, abs(t1)):
            # at a time event the relations on time already read their new values; the
            # event iteration there evaluates every relation
            xs[:, valid:] = hit.x[:, None]
            return t1, hit.x, z, None, xs, zs, m
        crossings = hit.values[lay.ranges["crossings"]]
        changed = np.flatnonzero((lay.literal(crossings) != run.relations) & (
            hit.triggered | ~self.at_round_off(hit.values, crossings)))
        return hit.time, hit.x, z, [int(i) for i in changed], xs, zs, valid

    def noise(self) -> np.ndarray:
        """Per relation, how close to zero its crossing function is not a crossing: the
        noise floor, or the band an event left it in (:meth:`band_after`)."""
        return np.maximum(NOISE_FLOOR * self.atol, self.held_band)

    def edge_at_end(self, t1, x, z, u, frozen, c=None) -> list | None:
        """The relations that switch at the stretch's end ``t1`` itself: on time alone (a
        Pulse's falling edge exactly on an output time), the crossing function is within
        round-off of zero there and was taken for noise, so the row at ``t1`` showed the
        value before the edge and the event came a round-off later. Such a relation reads
        its new value an instant later, the states moved on by their derivatives (a state
        that follows time exactly, x = t against x >= time, stays at its threshold)."""
        lay = self.layout
        if t1 >= self.t_end:
            return None   # the run ends there: no event to show
        if c is None:
            c = self.crossings_at(x[:, None], z[:, None], u, np.array([t1]))[:, 0]
        noise = self.noise()
        near = np.abs(c) <= noise
        if not near.any():
            return None
        h = 1e-9 * max(1.0, abs(t1))   # (a relation on time is above the noise there)
        if self._ode is None:   # (through buffers: a plain call converts to casadi, ~0.25 ms)
            self._ode = Buffered(self.cm.ode)
        x_later = x + h * self._ode(x, z, u, self.p, t1).reshape(-1)
        c_later = self.crossings_at(x_later[:, None], z[:, None], u,
                                    np.array([t1 + h]))[:, 0]
        switching = near & (np.abs(c_later) > noise) & (lay.literal(c_later) != frozen)
        return [int(i) for i in np.flatnonzero(switching)] or None

    def guard(self):
        """The event function as DOP853's guard (:func:`mbmodel.explicit.guard`), or None
        when it is not generated C; looked up once per run."""
        if self._guard is False:
            lay = self.layout
            fn = event_function(self.cm, self.native, any_size=True)
            if fn is not self.event_fn:   # built now: the same code for every evaluation
                self.event_fn, self._values, self._mapped_values = fn, None, {}
            inert = {"direct": lay.relation_direct, "relation_slots": lay.relation_slots,
                     "conditions": lay.ranges["conditions"],
                     "equations": lay.ranges["equations"],
                     "equation_slots": lay.equation_slots}
            scales = lay.ranges.get("scales")
            if scales is not None and scales.stop > fn.numel_out(0):
                scales = None   # (a model saved before the scales)
            self._guard = explicit_guard(fn, len(self.p), lay.strict, NOISE_FLOOR * self.atol,
                                         EVENT_TIME_TOLERANCE, inert, scales, ROUND_OFF)
        return self._guard

    def inert(self, changed, x, z, u, t) -> bool:
        """Whether the relations ``changed`` may take their new values without an event: the
        continuous equations and outputs do not read them, and with them flipped every
        discrete equation and when condition keeps its value (a friction element's
        ``sa > tau0_max`` while it slides: it matters only when stuck). The trajectory is
        then the same either way, and locating the crossing and restarting the integrator
        would cost without changing anything."""
        lay = self.layout
        if not len(changed) or lay.relation_direct[changed].any():
            return False
        slots = lay.relation_slots[changed]
        flipped = u.copy()
        flipped[slots] = 1.0 - u[slots]
        before, after = self.values(x, z, u, t), self.values(x, z, flipped, t)
        return (np.array_equal(self.part(before, "conditions"), self.part(after, "conditions"))
                and np.array_equal(self.part(after, "equations"), flipped[lay.equation_slots])
                and np.array_equal(self.part(before, "equations"),
                                   self.part(after, "equations")))

    def crossings_at(self, xs, zs, u, ts, with_round_off=False):
        n = len(ts)
        fn = self._mapped_values.get(n)
        if fn is None:
            fn = self._mapped_values[n] = Buffered(mapped(self.cm, self.event_fn, n))
        v = fn(xs, zs, u[:, None], self.p[:, None], ts[None, :]).reshape(-1, n, order="F")
        if with_round_off:   # (and per relation and point, whether it is at round-off)
            c = v[self.layout.ranges["crossings"], :]
            return c, self.at_round_off(v, c)
        return v[self.layout.ranges["crossings"], :]

    def locate(self, left, right, u, frozen, triggered):
        """Regula falsi (Illinois) on the zero-crossing functions between two points where
        the relations' values differ, to :data:`EVENT_TIME_TOLERANCE`; ``triggered``: the
        relations that differed beyond noise and round-off at the right point."""
        lay = self.layout
        t_l, x_l, z_l, c_l = left
        t_r, x_r, z_r, c_r = right
        scale_l, scale_r = 1.0, 1.0
        last_side = 0
        for _ in range(100):
            if t_r - t_l <= EVENT_TIME_TOLERANCE * max(1.0, abs(t_r)):
                break
            changed = np.flatnonzero(lay.literal(c_r) != frozen)
            # the relation that would cross first by linear interpolation
            f_l, f_r = c_l[changed] * scale_l, c_r[changed] * scale_r
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(f_l != f_r, f_l / (f_l - f_r), 0.5)
            frac = np.clip(np.nan_to_num(frac, nan=0.5), 0.0, 1.0)
            i = int(np.argmin(frac))
            width = t_r - t_l
            t_m = t_l + frac[i] * width
            tol = 0.25 * EVENT_TIME_TOLERANCE * max(1.0, abs(t_r))
            t_m = min(max(t_m, t_l + tol), t_r - tol)
            xs, zs = self.integrate(t_l, t_m, 1, x_l, z_l, u)
            x_m, z_m = xs[:, 0], zs[:, 0]
            c_m = self.crossings_at(x_m[:, None], z_m[:, None], u, np.array([t_m]))[:, 0]
            # Illinois: the end kept again has its value halved again (once only, regula
            # falsi crept by the smallest step, 4e-13 s, for 90 trial points on the press's
            # contact: each an integration of IDAS at 75 ms)
            if np.any(lay.literal(c_m) != frozen):
                t_r, x_r, z_r, c_r = t_m, x_m, z_m, c_m
                scale_l = 0.5 * scale_l if last_side == 1 else 1.0
                scale_r = 1.0
                last_side = 1
            else:
                t_l, x_l, z_l, c_l = t_m, x_m, z_m, c_m
                scale_r = 0.5 * scale_r if last_side == -1 else 1.0
                scale_l = 1.0
                last_side = -1
        t_r, x_r, z_r, c_r = self.crossing_with(t_l, c_l, (t_r, x_r, z_r, c_r), u, frozen)
        # (at the located time a crossing function is itself at round-off: those found
        # beyond it where the crossing was found count, and the others beyond it here)
        _, round_off = self.crossings_at(x_r[:, None], z_r[:, None], u, np.array([t_r]),
                                         with_round_off=True)
        crossed = [int(i) for i in np.flatnonzero((lay.literal(c_r) != frozen)
                                                  & (triggered | ~round_off[:, 0]))]
        return t_r, x_r, z_r, crossed

    def crossing_with(self, t_l, c_l, right, u, frozen):
        """Relations that cross within the located width after the bracket's right end
        cross with it, in one event (one threshold written twice, ``dp > p_crack`` and
        ``dp - p_crack < 0``, differs by a rounding): the right end moved by that width
        when, extrapolated from the bracket, some relation would switch there, and does
        while none switches back (as ``guard_locate`` in the C loop)."""
        lay = self.layout
        t_r, x_r, z_r, c_r = right
        t_a = t_r + EVENT_TIME_TOLERANCE * max(1.0, abs(t_r))
        if t_a >= self.t_end or t_r <= t_l:
            return right
        ahead = c_r + (c_r - c_l) * (t_a - t_r) / (t_r - t_l)
        switched = lay.literal(c_r) != frozen
        if not np.any(~switched & (lay.literal(ahead) != frozen)):
            return right
        try:
            xs, zs = self.integrate(t_r, t_a, 1, x_r, z_r, u, diagnose=False)
        except SimulationError:
            return right   # (the located end stands)
        c_a = self.crossings_at(xs, zs, u, np.array([t_a]))[:, 0]
        after = lay.literal(c_a) != frozen
        if np.any(switched & ~after) or not np.any(after & ~switched):
            return right
        return t_a, xs[:, 0], zs[:, 0], c_a

    def integrate(self, t0, t1, m, x, z, u, geometric=False, diagnose=True):
        """States (and algebraic variables) at m points of (t0, t1] (see :func:`_fractions`).
        ``diagnose=False``: a failure is not located (the caller tries a shorter stretch)."""
        if self.n_x == 0:
            xs = np.zeros((0, m))
            self.steps_taken = 0
            zs = np.zeros((self.n_z, m))
            for j, f in enumerate(_fractions(m, geometric)):
                t = t0 + (t1 - t0) * f
                z = self.consistent_z(x, z, u, t)
                zs[:, j] = z
            return xs, zs
        method = self.choose_method(x, z, u, t0)
        self.used(method)
        # (a stretch whose failure is not diagnosed is halved: it has the smaller budget)
        budget = None if diagnose else STEPS_PER_CHECK
        if method in ("dop853", "abm"):
            ts = t0 + (t1 - t0) * _fractions(m, geometric)
            ts[-1] = t1
            run = self.c_loop()(
                t0, x, np.concatenate([self.p, u]), ts, rtol=self.rtol, atol=self.atol,
                max_step=self.max_step, first_step=self.next_step, method=method,
                max_steps=budget or MAX_STEPS)
            if run.ok:
                self.next_step = run.next_step
                self.steps_taken = run.steps
                return run.xs, np.zeros((0, m))
            method = "bdf"   # the model turned stiff, or the solution is not finite
            if self.method in (None, "auto"):
                self.chosen = method
            self.used(method)
        restart = None   # how IDAS starts: its own way first (see _stepper)
        while True:
            if restart == "consistent":   # (the slopes at the start given: one integrator)
                slopes = (t1 - t0) * np.array(self.cm.ode(x, z, u, self.p, t0),
                                              dtype=float).reshape(-1)
                F = self.stepper(method, m, t1 - t0, geometric, restart, slopes, budget)
            else:
                F = self.stepper(method, m, t1 - t0, geometric, restart, budget=budget)
            try:
                with casadi_lines_dropped():
                    xs, zs = F(x, z, np.concatenate([self.p, u, [t0, t1 - t0]]))
                self.steps_taken = int(F.buffer.stats()["nsteps"])
                break
            except RuntimeError as exc:
                if method == "adams":  # the model turned stiff: BDF for this stretch
                    method = "bdf"
                    if self.method in (None, "auto"):
                        self.chosen = method
                    self.used(method)
                    continue
                from .integrators import failed_at_start
                if method == "idas" and restart != "consistent" and failed_at_start(F):
                    restart = "first_step" if restart is None else "consistent"
                    continue
                lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
                from .diagnose import locate_non_finite
                # where it stops being finite, integrating the stretch again (the relations
                # held as the integrator had them); at t0 only for a DAE
                found = diagnose and locate_non_finite(
                    self.cm, t0, t1, x, z, np.concatenate([self.p, u]), self.rtol, self.atol)
                cause = f" At t = {found.time:.9g}, {found.explanation}" if found else ""
                error = self.failure(t0, f"the integrator ({method}) failed between t = "
                                         f"{t0:.9g} and {t1:.9g}: "
                                         f"{lines[-1] if lines else exc}.{cause}")
                error.variable = found.variable if found else None
                raise error from None
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(zs))):
            raise self.failure(t0, f"the solution is not finite between t = {t0:.9g} and "
                                   f"{t1:.9g}")
        return xs, zs

    def choose_method(self, x, z, u, t0):
        """The user's method, or for "auto" IDAS with algebraic variables, else DOP853 in C
        (Adams without generated C) or BDF by the stiffness at the start of each stretch
        between events (a switch can make a model stiff: an ideal diode conducting couples
        its capacitor through 10 µΩ). DOP853 rather than Adams–Bashforth–Moulton: every
        stretch restarts the method, which costs a multistep method its history."""
        if self.n_z:
            # algebraic variables: IDAS (BDF) whatever was asked, as without events (CVODES
            # and the explicit methods take none)
            return "idas"
        if self.method in ("dop853", "abm") and self.c_loop() is None:
            return "adams"   # no generated C: no C loop
        if self.method not in (None, "auto"):
            return self.method
        if self.chosen is None:
            from .integrators import choose_method
            dyn = dynamics(self.cm, self.native)
            self.chosen = choose_method(self.cm, dyn, x, z, np.concatenate([self.p, u]),
                                         t0, self.t_end)
            if self.chosen == "adams" and self.c_loop() is not None:
                self.chosen = "dop853"
        return self.chosen

    def used(self, method):
        """Record the method of a stretch: ``methods`` lists each change, in order."""
        if not self.methods or self.methods[-1] != method:
            self.methods.append(method)

    def c_loop(self):
        """DOP853 in C over the model's generated dynamics, or None (see
        :func:`mbmodel.explicit.integrator`); looked up once per run."""
        if self._c_loop is False:
            from .integrators import loop_native
            self._c_loop = explicit_integrator(dynamics(self.cm, loop_native(self.method,
                                                                             self.native)))
        return self._c_loop

    def stepper(self, method, m, dt, geometric=False, restart=None, slopes=None,
                budget=None):
        scaled = None
        if self.max_step is not None and self.max_step < dt:
            # few distinct values, so few integrators: rounded down to two digits
            q = self.max_step / dt
            e = math.floor(math.log10(q))
            scaled = math.floor(q / 10 ** (e - 1)) * 10 ** (e - 1)
        return _stepper(self.cm, method, m, self.rtol, self.atol, scaled, self.native,
                        geometric, restart, slopes, budget)


def _finer_checks(steps, m) -> int:
    """Check points per point of a stretch's ``m`` so that there is one per ``steps`` the
    integrator took: a power of two, at most :data:`MAX_STEP_CHECKS` points in all."""
    if steps <= m or m >= MAX_STEP_CHECKS:
        return 1
    need = 1 << (math.ceil(steps / m) - 1).bit_length()
    return max(1, min(need, MAX_STEP_CHECKS // m))


def _check_points(length, spacing) -> int:
    """How many check points an interval gets: at least 2, a power of two (few distinct
    integrators), at most 1024."""
    need = max(2, math.ceil(length / spacing - 1e-9)) if spacing > 0 else 2
    return min(1024, 1 << (need - 1).bit_length())


def _fractions(m, geometric) -> np.ndarray:
    """Where m check points lie in an interval, as fractions of it: equally spaced, or
    (``geometric``) at 2^-(m-1), ..., 1/4, 1/2, 1."""
    if geometric:
        return 2.0 ** -np.arange(m - 1, -1, -1, dtype=float)
    return np.arange(1, m + 1) / m


def _stepper(cm, method, m, rtol, atol, max_step_scaled, native, geometric=False,
             restart=None, slopes=None, budget=None):
    """An integrator over scaled time s in [0, 1] with outputs at the fractions of
    :func:`_fractions`; parameters ``(p, u, t0, dt)``. ``restart`` (IDAS, where its start
    failed): ``"first_step"`` gives its first step (:func:`mbmodel.integrators.idas_first_step`);
    ``"consistent"`` skips IDACalcIC, which near a contact's switch failed on a start that
    the event iteration had made consistent (algebraic residuals 1e-16): "IDA_NO_RECOVERY"
    at one of every four nearby tolerances; the states' ``slopes`` (in scaled time) are
    given instead, and the integrator is built for this call only. ``budget``: the steps
    allowed between two output points (None: the simulator's own, see
    :data:`STEPS_PER_CHECK`)."""
    from .native import dynamics
    from .integrators import newton_dynamics, solver_options
    # The C dynamics replace the virtual machine's once a background build is done.
    rhs = dynamics(cm, native) if method == "adams" else newton_dynamics(cm, native)
    cache = workspace(cm, "integrators")
    key = ("events", method, m, rtol, atol, max_step_scaled, id(rhs), geometric, restart,
           budget)

    def build():
        n_x, n_z = cm.symbols.x.numel(), cm.symbols.z.numel()
        n_pu = cm.symbols.p.numel() + cm.symbols.u.numel()
        X, Z = ca.MX.sym("x", n_x), ca.MX.sym("z", n_z)
        S, P = ca.MX.sym("s"), ca.MX.sym("p", n_pu + 2)
        t0, dt = P[n_pu], P[n_pu + 1]
        out = rhs(t0 + S * dt, X, Z, P[:n_pu], ca.MX(0, 1))
        dae = {"x": X, "p": P, "t": S, "ode": dt * out[0]}
        if n_z:
            dae.update(z=Z, alg=out[1])
        opts = solver_options(rtol, atol, max_step_scaled)
        if budget is not None:   # steps between two check points (see STEPS_PER_CHECK)
            opts["max_num_steps"] = budget
        if method == "adams":
            opts.update(linear_multistep_method="adams", nonlinear_solver_iteration="functional")
        grid = [float(f) for f in _fractions(m, geometric)]
        if restart == "first_step":
            from .integrators import idas_first_step
            opts["step0"] = idas_first_step(grid[0])
        elif restart == "consistent":
            opts.update(calc_ic=False, init_xdot=[float(v) for v in slopes])
        # called through its buffers: no conversion of ~700 parameters and discrete values
        # to casadi matrices and back per call (half a short location call's cost)
        return Buffered(ca.integrator("events", "idas" if method == "idas" else "cvodes",
                                       dae, 0.0, grid, opts), n_out=2)
    if restart == "consistent":
        return build()
    return built(cache, key, build)
