"""Simulation results: named trajectories, table export and plots."""

from __future__ import annotations

import csv
import difflib
import json
import os
import threading

import numpy as np

from .files import atomic_write


#: Variables a result computes one by one (each from what it needs) before it computes the
#: whole table instead (see :meth:`Result.prefetch`).
ROWS_READ_ALONE = 32


class Result:
    """Trajectories of every model variable on the output grid.

    ``result.t`` is the time grid; ``result["motor.inertia.w"]`` a variable's trajectory
    (hierarchical name, as printed by ``result.names``). Variables are computed when read:
    a large model's one at a time from what each needs (:attr:`computes_alone`;
    :meth:`prefetch` for several at once), the table of all of them (:attr:`values`) when
    all are asked for.

    Example::

        res = mb.simulate(model, 1.0)
        w = res["load.w"]
        res.to_csv("run.csv")
        res.plot(["load.w", "load.phi"], file="run.png")
        res.save("run.npz")                 # mb.Result.load("run.npz") reads it back
    """

    def __init__(self, t, values, names, compiled=None, known=None, check=None, rows=None):
        self.t = np.asarray(t, dtype=float)
        self.names = list(names)
        self._rows = None   # name -> row of ``values``, built on the first lookup by name
        self.compiled = compiled
        # ``values`` may be a function computing the whole table when first needed: a
        # large model's table (every variable at every output time) costs more time and
        # memory than the simulation; ``known`` (name -> trajectory, e.g. the states) is
        # served without it.
        self._compute = values if callable(values) else None
        self._values = None if callable(values) else self._shaped(values)
        self._computing = threading.Lock()  # (the table computed once, by one thread)
        self._known = dict(known or {})
        # ``rows(indices)``: the trajectories of the variables at those rows of ``values``
        # alone, computed from what they need (one variable of a 100-link chain: a few ms,
        # against ~2 s for the table), each kept once read
        self._rows_of = rows if self._compute is not None else None
        self._read: dict[str, np.ndarray] = {}
        # ``check(result, name, trajectory)``: the error to raise when a trajectory read is
        # not finite (a simulation's result never hands out NaN or inf silently).
        self._check = check
        #: The integration method of each integrator call between time events ("abm",
        #: "dop853", "adams", "bdf", "idas" or "cvodes"), as chosen by
        #: ``simulate(method=...)``; in a model with events, each change of method in order
        #: (a DOP853 run that met stiffness: ``["dop853", "bdf"]``).
        self.methods: list[str] = []
        #: The events of the run (:class:`mbmodel.event_layout.Event`: time and causes), in order;
        #: empty for a model without events.
        self.events: list = []
        #: ``(time, dependent variables before, after)`` of each switch of the state choice
        #: (:mod:`mbmodel.state_selection`); empty when the compiled choice was kept.
        self.state_switches: list = []

    @property
    def computes_alone(self) -> bool:
        """Whether a variable read before the table is computed alone, from what it needs
        (a large model's result), rather than with the whole table.

        Example: ``if res.computes_alone: res.prefetch(names)``"""
        return self._values is None and self._rows_of is not None

    @property
    def known_names(self) -> set:
        """The variables whose trajectories are served without computing the table of all
        of them (e.g. the states).

        Example: ``"load.w" in res.known_names``"""
        return set(self._known)

    def head(self, n: int) -> "Result":
        """The first ``n`` output points of this result (its events and state switches up
        to the last of them), e.g. the part of a run before a check failed.

        Example: ``before = res.head(10)``"""
        def head_rows(indices, whole=self._rows_of):
            return whole(indices)[:, :n]
        alone = self.computes_alone
        head = Result(self.t[:n], lambda: self.values[:, :n], self.names,
                      compiled=self.compiled,
                      known={name: trajectory[:n] for name, trajectory in self._known.items()},
                      check=self._check, rows=head_rows if alone else None)
        head.methods = list(self.methods)
        end = self.t[n - 1] if n else -np.inf
        head.events = [e for e in self.events if e.time <= end]
        head.state_switches = [s for s in self.state_switches if s[0] <= end]
        return head

    def _index(self) -> dict:
        # a large model has tens of thousands of names, and a run reading only states
        # never needs the table: ~4 ms of a 60 ms run of a 100-link chain
        if self._rows is None:
            self._rows = {n: i for i, n in enumerate(self.names)}
        return self._rows

    def _shaped(self, values):
        return np.asarray(values, dtype=float).reshape(len(self.names), len(self.t))

    @property
    def values(self) -> np.ndarray:
        """All trajectories as one array, a row per name in ``names``.

        Example: ``res.values[res.names.index("load.w")]`` is ``res["load.w"]``."""
        if self._values is None:
            with self._computing:
                if self._values is None:
                    self._values = self._shaped(self._compute())
                    self._compute = None
        return self._values

    def __getitem__(self, name: str) -> np.ndarray:
        if name in ("t", "time"):
            return self.t
        if self._values is None and name in self._known:
            return self._known[name]
        row = self._read.get(name)
        if row is None:
            index = self._index().get(name)
            if index is None:
                self._raise_unknown(name)
            row = self._trajectory(index)
        if self._check is not None and not np.all(np.isfinite(row)):
            raise self._check(self, name, row)
        return row

    def _raise_unknown(self, name: str):
        """The KeyError for a name the result does not have, with the names meant."""
        # the same last name (case aside) or a close spelling, the closest first
        tail = name.split(".")[-1].lower()
        found = {n for n in self.names if n.split(".")[-1].lower() == tail}
        found.update(difflib.get_close_matches(name, self.names, n=6, cutoff=0.8))
        close = sorted(found, key=lambda n: -difflib.SequenceMatcher(
            None, name.lower(), n.lower()).ratio())[:6]
        hint = f"; similar names: {', '.join(close)}" if close else ""
        entries = [n for n in self.names if n.startswith(name + "[")]
        if entries:   # a vector or matrix by its declared name
            shown = (", ".join(entries) if len(entries) <= 4 else
                     f"{entries[0]} .. {entries[-1]}")
            hint = (f": it has {len(entries)} entries, each a variable of its own "
                    f"({shown}); ask for one, or stack them: np.array([res[n] for n in "
                    f"[{entries[0]!r}, ...]])")
        if name in (getattr(self.compiled, "parameters", None) or ()):
            hint = (f": it is a parameter, whose value the run took from params= or "
                    f"the compiled model's defaults (cm.parameter_vector()[cm.parameters"
                    f".index('{name}')])")
        raise KeyError(f"no variable '{name}' in the result{hint}")

    def prefetch(self, names) -> None:
        """Compute the trajectories of ``names`` together, before they are read one by one
        (``res[name]`` computes a variable alone): those not yet known in one Function, or
        the whole table where they are a quarter of it or more (their Functions would then
        do the table's work, and more). Plots, tables and animations do this themselves.

        Example::

            res.prefetch(names)
            positions = np.array([res[n] for n in names])
        """
        if not self.computes_alone:
            return
        index = self._index()
        missing = [index[n] for n in dict.fromkeys(names)
                   if n in index and n not in self._read and n not in self._known]
        if 4 * len(missing) >= len(self.names):
            self.values  # noqa: B018 - the property computes the table and keeps it
        elif missing:
            rows = np.asarray(self._rows_of(missing), dtype=float)
            for i, row in zip(missing, rows.reshape(len(missing), len(self.t))):
                self._read[self.names[i]] = row

    def _trajectory(self, index: int) -> np.ndarray:
        """Row ``index`` of the table: computed alone while the table is not (kept), up to
        :data:`ROWS_READ_ALONE` rows; then the table (a loop over many names reads them
        faster from it than each from a Function of its own)."""
        if (self._values is not None or self._rows_of is None
                or len(self._read) >= ROWS_READ_ALONE):
            return self.values[index]
        row = np.asarray(self._rows_of([index]), dtype=float).reshape(len(self.t))
        self._read[self.names[index]] = row
        return row

    def __contains__(self, name: str) -> bool:
        return name in ("t", "time") or name in self._index()

    def final(self, name: str) -> float:
        """The value of ``name`` at the last time point.

        Example: ``mb.simulate(model, 1.0).final("load.w")``"""
        return float(self[name][-1])

    def at(self, t, names=None):
        """Values at time ``t`` (a number, or an array of times), interpolated linearly
        between output times (discrete variables: the value held at the last output time
        up to ``t``): a float (an array) for one name, a dict name -> value for a list
        (default: every variable).

        Example: ``res.at(0.25, "inertia.w")``, ``res.at([0.1, 0.2], "inertia.w")``"""
        times = np.asarray(t, dtype=float)
        if not np.all((self.t[0] <= times) & (times <= self.t[-1])):
            raise ValueError(f"t = {t} is outside the result's times [{self.t[0]}, {self.t[-1]}]")
        discrete = set(getattr(self.compiled, "discrete", None)
                       or getattr(self, "_discrete", None) or ())

        def value(name):
            if name in discrete:
                k = np.maximum(np.searchsorted(self.t, times, side="right") - 1, 0)
                found = self[name][k]
            else:
                found = np.interp(times, self.t, self[name])
            return float(found) if times.ndim == 0 else np.asarray(found, dtype=float)
        if isinstance(names, str):
            return value(names)
        chosen = self.names if names is None else list(names)
        self.prefetch(chosen)
        return {n: value(n) for n in chosen}

    def unit(self, name: str) -> str:
        """The unit ``name`` was declared with ("" if none).

        Example: ``res.unit("load.w")`` is ``"rad/s"``."""
        if name in ("t", "time"):
            return "s"
        units = getattr(self, "_units", None)
        if units is None:
            units = getattr(self.compiled, "units", None) or {}
        return units.get(name, "")

    def _label(self, name: str) -> str:
        unit = self.unit(name)
        return f"{name} [{unit}]" if unit else name

    # -- files ---------------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the result to ``path`` as a numpy ``.npz`` archive: times, every
        trajectory, names, units, the integration methods and the events (time and
        causes). The file is complete or absent. :meth:`Result.load` reads it back.

        Example: ``res.save("run.npz")``"""
        meta = {"format": "mbmodel-result", "version": 1, "names": self.names,
                "units": {n: self.unit(n) for n in self.names if self.unit(n)},
                "discrete": list(getattr(self.compiled, "discrete", None) or ()),
                "methods": list(self.methods),
                "events": [{"time": float(e.time), "causes": [str(c) for c in e.causes]}
                           for e in self.events]}
        with atomic_write(path, "wb") as fh:
            np.savez_compressed(fh, t=self.t, values=self.values,
                                meta=np.array(json.dumps(meta)))

    @classmethod
    def load(cls, path) -> "Result":
        """A result written by :meth:`save` (no compiled model attached: units, names,
        events and methods come from the file).

        Example: ``res = mb.Result.load("run.npz"); res["load.w"]``"""
        from .event_layout import Event
        with np.load(path, allow_pickle=False) as archive:
            if "meta" not in getattr(archive, "files", ()):
                saved_model = " (a compiled model? mb.load reads those)" if str(
                    path).endswith(".mbm") else ""
                raise ValueError(f"{path} is not a result saved by mbmodel (Result.save)"
                                 f"{saved_model}")
            meta = json.loads(str(archive["meta"]))
            if meta.get("format") != "mbmodel-result":
                raise ValueError(f"{path} is not a result saved by mbmodel")
            result = cls(archive["t"], archive["values"], meta["names"],
                         check=_not_finite_in(str(path)))
        result._units = dict(meta["units"])
        result._discrete = list(meta.get("discrete", ()))
        result.methods = list(meta["methods"])
        result.events = [Event(e["time"], list(e["causes"])) for e in meta["events"]]
        return result

    def to_dataframe(self, names=None):
        """A pandas DataFrame indexed by time (needs the ``dataframe`` extra).

        Example: ``res.to_dataframe(["load.w"]).plot()``"""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("to_dataframe() needs pandas: pip install 'mbmodel[dataframe]'") from exc
        names = self.names if names is None else list(names)
        self.prefetch(names)
        return pd.DataFrame({n: self[n] for n in names}, index=pd.Index(self.t, name="time"))

    def to_csv(self, path, names=None):
        """Write ``time`` and the chosen variables (default: all) as CSV. The file appears
        complete or not at all (written to a temporary file, then renamed).

        Example: ``res.to_csv("run.csv", ["load.phi", "load.w"])``"""
        names = self.names if names is None else list(names)
        self.prefetch(names)
        cols = [self[n] for n in names]
        with atomic_write(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["time [s]"] + [self._label(n) for n in names])
            for k in range(len(self.t)):
                w.writerow([repr(float(self.t[k]))] + [repr(float(c[k])) for c in cols])

    def plot(self, names, *, file=None, title=None, ax=None):
        """Plot variables over time (needs the ``plot`` extra); saves to ``file`` if given.
        ``names`` is a variable name, a list of names, or a list of lists (one subplot each);
        units label the curves and the axes. Saving to a file leaves matplotlib's global
        backend alone (the figure is drawn off-screen).

        Example: ``res.plot([["load.phi"], ["load.w"]], file="run.png")`` (two subplots)"""
        try:
            import matplotlib.figure
            if file is None and ax is None:
                import matplotlib.pyplot as plt
        except ImportError as exc:  # pragma: no cover
            raise ImportError("plot() needs matplotlib: pip install 'mbmodel[plot]'") from exc
        if isinstance(names, str):
            names = [names]
        groups = [names] if names and isinstance(names[0], str) else names
        self.prefetch(n for group in groups for n in group)
        size = (8, 2.6 * len(groups) + 0.6)
        if ax is not None:
            fig, axes = ax.figure, [ax]
        elif file is not None:
            fig = matplotlib.figure.Figure(figsize=size)
            axes = fig.subplots(len(groups), 1, sharex=True, squeeze=False)[:, 0]
        else:
            fig, axes = plt.subplots(len(groups), 1, sharex=True, squeeze=False, figsize=size)
            axes = axes[:, 0]
        for a, group in zip(axes, groups):
            for n in group:
                a.plot(self.t, self[n], label=self._label(n))
            units = {self.unit(n) for n in group}
            if len(units) == 1 and "" not in units:
                a.set_ylabel(f"[{units.pop()}]")
            a.grid(True, alpha=0.3)
            a.legend(loc="best", fontsize=8)
        axes[-1].set_xlabel("time [s]")
        if title:
            axes[0].set_title(title)
        fig.tight_layout()
        if file is not None:
            kind = os.path.splitext(os.fspath(file))[1].lstrip(".").lower() or "png"
            with atomic_write(file, "wb") as fh:
                fig.savefig(fh, dpi=110, format=kind)
        return fig

    def animate(self, path, **options):
        """Write ``path``: a self-contained HTML page that plays the model's shapes (e.g. a
        mechanism's bodies and joints) along this result in the browser, with play/pause,
        a time slider, a speed control and orbit controls; no network access needed.
        Options (``model``, ``fps``, ``max_frames``, ``speed``, ``up``, ``title``): see
        :func:`mbmodel.animation.animate`. Returns the path.

        Example::

            res = mb.simulate(DoublePendulum(), 3.0)
            res.animate("double_pendulum.html")
        """
        from .animation import animate
        return animate(self, path, **options)


def format_table(header, rows, left=(0,)) -> str:
    """Rows of cells as an aligned text table (columns in ``left`` left-aligned, the others
    right-aligned), with a rule under the header.

    Example::

        print(mb.format_table(("joint", "phi [rad]"), [("r1", "0.31"), ("r2", "-1.20")]))
    """
    widths = [max(len(str(r[k])) for r in [header, *rows]) for k in range(len(header))]

    def line(cells):
        return "  ".join(f"{str(c):<{w}}" if k in left else f"{str(c):>{w}}"
                         for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    head = line(header)
    return "\n".join([head, "-" * len(head), *(line(r) for r in rows)])


def _not_finite_in(path):
    """The check of a loaded result: a trajectory that is not finite raises, as it did in
    the run that saved it (whose compiled model, which would explain it, is not at hand)."""
    def check(result, name, row):
        from .errors import SimulationError
        bad = np.flatnonzero(~np.isfinite(row))
        return SimulationError(
            f"'{name}' is not finite in the result read from {path}: {row[bad[0]]} at t = "
            f"{result.t[bad[0]]:.9g} ({len(bad)} of {len(row)} output times); the run that "
            f"saved it computed it so (its own result would have raised, explaining why)")
    return check
