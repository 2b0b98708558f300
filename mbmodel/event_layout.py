"""Where the simulator finds a compiled model's hybrid quantities (:class:`EventLayout`),
the events of a run as plain data (:class:`Event`), and the relations' values at a point
(:func:`relations_at`). Built with the compiled model (the compiler imports it, not the
simulator in :mod:`mbmodel.events`, which uses it)."""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from .errors import DeclarationError

#: Most passes of one event iteration before it is declared not converging.
MAX_EVENT_ITERATIONS = 50


@dataclass
class Event:
    """One event of a run: its ``time`` and ``causes`` (the relations that crossed, the
    time event or sample, or "initialization")."""

    time: float
    causes: list

    def __repr__(self):
        return f"Event(t={self.time:.12g}, {', '.join(self.causes)})"


class EventLayout:
    """Where the simulator finds each hybrid quantity: slots in the input vector ``u``
    (after the external inputs) and ranges in the output of ``event_values``."""

    #: the start flag's slot (:meth:`~mbmodel.hybrid.HybridCollector.starting_symbol`); None in
    #: models saved before it was made, whose conditions do not read it
    starting_slot = None

    def __init__(self, system, order, cm, sample_times=None):
        hyb = system.hybrid
        variables = system.variables
        n_ext = len(cm.inputs)
        discrete_positions = [i for i in order if variables[i].discrete]
        slot = {pos: n_ext + k for k, pos in enumerate(discrete_positions)}
        self.n_ext = n_ext
        self.relation_slots = np.array([slot[r.position] for r in hyb.relations], dtype=int)
        self.strict = np.array([r.strict for r in hyb.relations], dtype=bool)
        self._relations = hyb.relations
        self.condition_when = np.array([w_i for w_i, w in enumerate(hyb.whens)
                                        for _ in w.conditions], dtype=int)
        self.n_whens = len(hyb.whens)
        self.when_texts = [f"{w.shown} (in {w.origin or 'the model'})" for w in hyb.whens]
        self.equation_slots = np.array([slot[e.target] for e in hyb.discrete_equations],
                                       dtype=int)
        # Discrete equations on discrete values only (no relation, no continuous variable):
        # evaluated in order before each round's first solve (see event_iteration).
        event_held = {v.symbol.element_hash() for v in variables
                      if v.discrete in ("variable", "pre", "initial", "starting", "sample")}
        parameters = {p.symbol.element_hash() for p in system.parameters}
        self.discrete_only = np.array([
            all(s.element_hash() in event_held or s.element_hash() in parameters
                for s in ca.symvar(ca.SX(e.value)))
            for e in hyb.discrete_equations], dtype=bool)
        self.assignment_slots = np.array([slot[pos] for w in hyb.whens
                                          for pos, _ in w.assignments], dtype=int)
        self.assignment_when = np.array([w_i for w_i, w in enumerate(hyb.whens)
                                         for _ in w.assignments], dtype=int)
        states = {name: i for i, name in enumerate(cm.states)}
        reinit_state, reinit_sign, reinit_offset, reinit_when = [], [], [], []
        for w_i, w in enumerate(hyb.whens):
            for pos, _ in w.reinits:
                name, sign, offset = variables[pos].name, 1.0, 0.0
                while name in system.alias:  # variable = sign * name + offset
                    name, s, o = system.alias[name]
                    sign, offset = sign * s, offset + sign * o
                    if name is None:
                        break
                if name not in states or sign == 0.0:
                    raise DeclarationError(
                        f"reinit({variables[pos].name}, ...) in '{w.shown}' (in "
                        f"{w.origin or 'the model'}): '{variables[pos].name}' is not a state of "
                        f"the compiled model (its states: {', '.join(cm.states[:8]) or 'none'}); "
                        f"re-initialize a variable that appears differentiated, der(x)")
                reinit_state.append(states[name])
                reinit_sign.append(sign)
                reinit_offset.append(offset)
                reinit_when.append(w_i)
        self.reinit_state = np.array(reinit_state, dtype=int)
        self.reinit_sign = np.array(reinit_sign, dtype=float)
        self.reinit_offset = np.array(reinit_offset, dtype=float)
        self.reinit_when = np.array(reinit_when, dtype=int)
        self.pre_slots = np.array([slot[a] for a, _ in hyb.pre], dtype=int)
        self.pre_of = np.array([slot[b] for _, b in hyb.pre], dtype=int)
        # Relations the continuous equations or the outputs read directly (structurally):
        # their crossings always change the trajectory. The others act only through the
        # discrete part, and a crossing that leaves it unchanged needs no event.
        direct = np.zeros(len(self.relation_slots), dtype=bool)
        for fn in (cm.ode, cm.alg, cm.output_function):
            if len(self.relation_slots) and fn.numel_out(0) and fn.numel_in(2):
                depends = np.array(fn.which_depends(fn.name_in(2), [fn.name_out(0)], 1,
                                                    False), dtype=bool)
                direct |= depends[self.relation_slots]
        self.relation_direct = direct | np.isin(self.relation_slots, self.pre_of)
        self.initial_slot = slot[hyb.initial] if hyb.initial is not None else None
        self.starting_slot = slot[hyb.starting] if hyb.starting is not None else None
        self.sample_slots = np.array([slot[s.position] for s in hyb.samples], dtype=int)
        self.sample_texts = [f"sample in {s.origin or 'the model'}" for s in hyb.samples]
        # Slots whose change keeps the event iteration going (declared variables, relations).
        self.iterated = np.array(sorted(
            set(self.relation_slots.tolist()) | {slot[i] for i in discrete_positions
                                                 if variables[i].discrete == "variable"}),
            dtype=int)
        n_r, n_c = len(hyb.relations), len(self.condition_when)
        n_e, n_a, n_i = len(self.equation_slots), len(self.assignment_slots), len(reinit_state)
        bounds = np.cumsum([0, n_r, n_c, n_e, n_a, n_i, n_r])
        self.ranges = {k: slice(int(a), int(b)) for k, a, b in
                       zip(("crossings", "conditions", "equations", "assignments", "reinits",
                            "scales"), bounds[:-1], bounds[1:])}
        #: p -> (starts, intervals) of the samples (None without samples)
        self.sample_times = sample_times

    def relation_text(self, k) -> str:
        r = self._relations[k]
        return f"{r.description} (in {r.origin or 'the model'})"

    def literal(self, crossings):
        """The relations' values at a point, from their zero-crossing functions."""
        c = np.asarray(crossings)
        strict = self.strict if c.ndim == 1 else self.strict[:, None]
        return np.where(strict, c > 0, c >= 0).astype(float)


def relations_at(cm, x, z, u, p, t, evaluate=None):
    """``u`` with the relations and the discretely defined variables (``d == expr``)
    set to their values at the point ``(x, z, t)``, by fixed-point passes (linearization
    of a model with events uses the branches in force there). ``evaluate``: the event
    values' function to call (default ``cm.event_values``; the evaluator passes it through
    buffers)."""
    lay = cm.events
    u = np.array(u, dtype=float)
    evaluate = evaluate or cm.event_values
    for _ in range(MAX_EVENT_ITERATIONS):
        values = np.array(evaluate(x, z, u, p, t)).reshape(-1)
        new = u.copy()
        new[lay.relation_slots] = lay.literal(values[lay.ranges["crossings"]])
        new[lay.equation_slots] = values[lay.ranges["equations"]]
        new[lay.pre_slots] = new[lay.pre_of]
        if np.array_equal(new, u):
            break
        u = new
    return u
