"""External inputs of a compiled model as functions of time (shared by initialization and
simulation)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .errors import SimulationError
from .flat import entries_named

__all__ = ["input_function"]


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def input_function(cm, inputs):
    """``t -> u(t)`` for the compiled model's external inputs.

    ``inputs`` maps input names to a number (constant), to a tuple ``(times, values)``, or
    to rows ``[[time, value], ...]`` (an array of shape (n, 2), as ``blocks.TimeTable`` and
    Modelica's tables take them), held constant from each time to the next (zero-order
    hold; every time is an event). Two rows of two read either way, so a 2 x 2 table
    (list or array) is refused: give the tuple.

    A vector input may be named as declared (``u`` for ``u[0]``, ``u[1]``, ...): a
    sequence of its length (constant), ``(times, values)`` with a row of values per time,
    or rows ``[[time, value_0, value_1, ...], ...]``."""
    try:  # (a dict, or what dict() takes: pairs, a pandas Series)
        given = dict(inputs) if inputs is not None and not isinstance(inputs, Mapping) \
            else dict(inputs or {})
    except (TypeError, ValueError):
        raise SimulationError(
            f"inputs must be a dict {{name: number or (times, values) table}}, not "
            f"{type(inputs).__name__} {_short(inputs)}; the model's inputs are "
            f"{', '.join(cm.inputs) or 'none'}") from None
    inputs = _entries_given(cm, given)
    unknown = [k for k in inputs if k not in cm.inputs]
    if unknown:
        raise SimulationError(f"the model has no external input {', '.join(unknown)}; "
                              f"its inputs are {', '.join(cm.inputs) or 'none'}")
    missing = [k for k in cm.inputs if k not in inputs]
    if missing:
        raise SimulationError(f"give values for the external inputs {', '.join(missing)} "
                              f"(inputs={{'{missing[0]}': 1.0}} or a (times, values) table)")
    tables = []
    for name in cm.inputs:
        spec = inputs[name]
        try:
            if isinstance(spec, str):
                raise TypeError
            if np.isscalar(spec):
                ts, vs = np.array([-np.inf]), np.array([float(spec)])
            else:
                ts, vs = _table(name, spec)
        except (TypeError, ValueError):
            raise SimulationError(f"input '{name}': give a number, a (times, values) table or "
                                  f"rows [[time, value], ...] of numbers, not {spec!r}") from None
        if ts.ndim != 1 or ts.shape != vs.shape or np.any(np.diff(ts) < 0) or not ts.size:
            raise SimulationError(f"input '{name}': give (times, values) with increasing "
                                  f"times of the same length as values")
        if not np.all(np.isfinite(vs)) or np.any(np.isnan(ts)):
            raise SimulationError(f"input '{name}': its values must be finite numbers, not "
                                  f"{spec!r}")
        tables.append((ts, vs))

    # Values that change only at events follow the external inputs (their start values;
    # the event simulator sets them as the run goes).
    discrete = np.asarray(getattr(cm, "discrete_start", np.zeros(0)), dtype=float)

    def u_at(t):
        out = np.zeros(len(tables) + len(discrete))
        for k, (ts, vs) in enumerate(tables):
            i = np.searchsorted(ts, t, side="right") - 1
            out[k] = vs[max(i, 0)]
        out[len(tables):] = discrete
        return out

    u_at.breakpoints = sorted({float(t) for ts, _ in tables for t in ts if np.isfinite(t)})
    return u_at


def _entries_given(cm, inputs: dict) -> dict:
    """``inputs`` with each vector input given by its declared name spread over its
    entries (the compiled model's inputs ``name[0]``, ...); other names stay."""
    spread = {}
    for name, spec in inputs.items():
        entries = [] if name in cm.inputs else entries_named(name, cm.inputs)
        if not entries or len(entries[0][0]) != 1:   # (inputs are vectors)
            spread[name] = spec   # (a name the model does not have is reported as such)
            continue
        twice = [n for _, n in entries if n in inputs]
        if twice:
            raise SimulationError(f"inputs gives '{name}' and its entry '{twice[0]}': give "
                                  f"one of them")
        k = len(entries)
        try:
            if isinstance(spec, tuple) and len(spec) == 2:
                times, values = np.asarray(spec[0], dtype=float), np.asarray(spec[1], dtype=float)
                if values.shape != (times.size, k):
                    raise ValueError
                columns = [(times, values[:, i]) for i in range(k)]
            else:
                table = np.asarray(spec, dtype=float)
                if table.shape == (k,):
                    columns = [float(v) for v in table]
                elif table.ndim == 2 and table.shape[1] == k + 1:
                    columns = [(table[:, 0], table[:, 1 + i]) for i in range(k)]
                else:
                    raise ValueError
        except (TypeError, ValueError):
            raise SimulationError(
                f"input '{name}' has {k} entries ({entries[0][1]}, ...): give {k} numbers, "
                f"(times, values) with a row of {k} values per time, or rows [time, "
                f"{k} values], not {spec!r}") from None
        for (_, entry), column in zip(entries, columns):
            spread[entry] = column
    return spread


def _table(name, spec):
    """``(times, values)`` of an input's table: a tuple of the two, or rows of two."""
    if isinstance(spec, tuple):
        if len(spec) != 2:
            raise SimulationError(f"input '{name}': a table is (times, values), two sequences, "
                                  f"not a tuple of {len(spec)}")
        return tuple(np.asarray(a, dtype=float) for a in spec)
    table = np.asarray(spec, dtype=float)
    if table.ndim == 2 and table.shape == (2, 2):
        raise SimulationError(
            f"input '{name}': {spec!r} reads as rows [time, value] and as (times, values) "
            f"alike; give the tuple (times, values)")
    if table.ndim == 2 and table.shape[1] == 2:
        return table[:, 0].copy(), table[:, 1].copy()  # rows [time, value]
    if table.ndim == 2 and table.shape[0] == 2:
        return table[0].copy(), table[1].copy()  # (times, values) as a list of two
    raise SimulationError(f"input '{name}': give (times, values) or rows [[time, value], ...], "
                          f"not an array of shape {table.shape}")
