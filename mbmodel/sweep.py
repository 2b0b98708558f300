"""Parameter sweeps and ensembles: many simulations of one compiled model, no recompilation.

Runs go to local worker processes by default, or to a ``dask.distributed`` cluster when a
client is given. The compiled model travels as the bytes of :func:`mbmodel.persist.dumps`
(casadi's own serialization, never a pickle of casadi objects) and is loaded once per
worker process; the generated C is built once, here, before the runs start, and the workers
load it from the disk cache (:mod:`mbmodel.codegen`). Each worker process simulates with its
own solver objects (:mod:`mbmodel.workspace`), so a dask worker running several tasks in
threads shares one loaded model safely.

The answer is one tidy table (pandas): a row per output time of each run, with the run's
number, its parameter values, the time and the chosen outputs.

Worker processes are started with ``multiprocessing``'s "spawn" method, without the main
script: they run only mbmodel's own code on the model's bytes, so nothing of the script is
needed there. A script need not guard its top level (its sweep is not started again in
every worker), and a script read from standard input or a notebook works the same.

Example::

    cm = mb.compile(RC())
    table = mb.sweep(cm, 5e-3, params={"resistor.R": [500.0, 1e3, 2e3]},
                     outputs=["capacitor.v"])
    table.groupby("resistor.R")["capacitor.v"].max()
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context

import numpy as np

from .compiled import compile
from .compiler import CompiledCore
from .core import Model
from .errors import ModelError, SimulationError
from .inputs import input_function
from .progress import run_bar
from .explicit import runtime_loops
from .simulate import checked_options, run, table_read_whole

__all__ = ["sweep", "runs_of"]

#: Options of :func:`mbmodel.simulate` a sweep passes on to every run.
_RUN_OPTIONS = {"t_start", "n_points", "times", "rtol", "atol", "x0", "z0", "steady_state",
                "method", "max_step", "native", "state_selection"}


def runs_of(params=None, inputs=None) -> list[tuple[dict, dict, int | None]]:
    """The runs a sweep makes: ``(parameters, inputs, input set)`` for each.

    ``params``: ``None`` (the defaults), a dict ``name -> sequence of values`` (every
    combination: a full grid, the last name varying fastest) or a list of dicts (one per
    run). A vector or matrix parameter may be named as declared, its values arrays
    (``{"j.n": [[1, 0, 0], [0, 1, 0]]}``: two runs). ``inputs``: ``None``, one dict for
    all runs (as :func:`mbmodel.simulate` takes it), or a list of such dicts, each
    combined with every parameter set (the input set's position is the run's
    ``input_set``).

    Example: ``runs_of({"R": [1, 2], "C": [3, 4]})`` gives 4 runs."""
    if params is None:
        param_sets = [{}]
    elif isinstance(params, dict):
        names = list(params)
        columns = []
        for name in names:
            values = params[name]
            if np.isscalar(values):
                values = [values]
            try:  # (a value of a vector or matrix parameter is an array)
                columns.append([float(v) if np.isscalar(v) else np.asarray(v, dtype=float)
                                for v in values])
            except (TypeError, ValueError):
                raise SimulationError(f"sweep: parameter '{name}': give a sequence of numbers "
                                      f"(of arrays for a vector parameter), not "
                                      f"{values!r}") from None
            if not columns[-1]:
                raise SimulationError(f"sweep: parameter '{name}' has no values: the grid "
                                      f"would have no runs")
        param_sets = [dict(zip(names, combo)) for combo in itertools.product(*columns)]
    else:
        param_sets = [dict(p) for p in params]
        if not param_sets:
            raise SimulationError("sweep: params is an empty list: no runs to make")
        for k, p in enumerate(param_sets):
            if not isinstance(p, dict):
                raise SimulationError(f"sweep: run {k}: params must be dicts name -> value")
    if inputs is None or isinstance(inputs, dict):
        return [(p, dict(inputs or {}), None) for p in param_sets]
    input_sets = [dict(u) for u in inputs]
    if not input_sets:
        raise SimulationError("sweep: inputs is an empty list: no runs to make")
    return [(p, u, j) for p in param_sets for j, u in enumerate(input_sets)]


#: The simulate options :func:`~mbmodel.simulate.checked_options` checks.
_CHECKED_OPTIONS = ("t_start", "n_points", "rtol", "atol", "max_step", "method")


def sweep(model, t_end: float, params=None, inputs=None, *, outputs=None, client=None,
          processes: int | None = None, progress="auto", errors: str = "raise",
          **options):
    """Simulate ``model`` (a :class:`~mbmodel.CompiledModel`, or a model compiled here once)
    to ``t_end`` for every run of ``params`` × ``inputs`` (see :func:`runs_of`) and return
    one pandas DataFrame: columns ``run``, the swept parameters, ``input_set`` (when
    ``inputs`` is a list), ``time`` and each of ``outputs`` (default: the states), a row
    per output time. ``df.attrs["units"]`` holds the units of the swept parameters and
    the outputs.

    * ``client``: a ``dask.distributed.Client``: the runs go to its cluster (needs the
      ``dask`` extra).
    * ``processes``: local worker processes (default: one per CPU); ``0`` runs everything
      in this process (no worker start-up; for few short runs, debugging, or inputs that
      cannot be sent to another process).
    * ``progress``: a tqdm progress bar over the runs: ``"auto"`` (when tqdm is installed),
      ``True`` (needs the ``sweep`` extra) or ``False``.
    * ``errors``: ``"raise"`` (a failed run raises :class:`~mbmodel.SimulationError` naming
      its parameters; a parameter value out of its bounds or making an equation singular
      raises before any run) or ``"keep"`` (its rows hold NaN and the message in an
      ``error`` column: a run that fails in the middle keeps the times it reached; a run
      whose parameter values are refused keeps one row). A parameter name the model does
      not have raises in either case. A run that does not set a swept parameter shows its
      default in that column.
    * other keywords (``n_points``, ``times``, ``rtol``, ``method``, ...) go to every
      :func:`mbmodel.simulate` call.

    Example::

        table = mb.sweep(cm, 2.0, params={"load.J": [1.0, 2.0, 4.0]}, outputs=["load.w"])
    """
    pd = _pandas()
    cm = _compiled(model)
    unknown = set(options) - _RUN_OPTIONS
    if unknown:
        raise SimulationError(f"sweep: unknown option(s) {', '.join(sorted(unknown))}; the "
                              f"simulate options are {', '.join(sorted(_RUN_OPTIONS))}")
    if errors not in ("raise", "keep"):
        raise SimulationError(f"sweep: errors must be 'raise' or 'keep', not {errors!r}")
    if processes is not None and (isinstance(processes, bool) or not isinstance(
            processes, (int, np.integer)) or processes < 0):
        raise SimulationError(f"sweep: processes must be a whole number >= 0 (0 runs "
                              f"everything in this process) or None (one per CPU), not "
                              f"{processes!r}")
    try:  # wrong for every run: said once, before any starts
        checked_options(t_end=t_end, **{k: v for k, v in options.items()
                                        if k in _CHECKED_OPTIONS and v is not None})
    except SimulationError as exc:
        raise SimulationError(f"sweep: {exc}") from None
    outputs = list(cm.states if outputs is None else outputs)
    missing = [n for n in outputs if n not in cm.output_index]
    if missing:
        raise SimulationError(f"sweep: the model has no variable {', '.join(missing)}")
    # (a vector parameter named as declared: a column per entry)
    runs = [(cm.parameter_entries(p), u, j) for p, u, j in runs_of(params, inputs)]
    swept = list(dict.fromkeys(n for p, _, _ in runs for n in p))
    if not isinstance(params, dict):
        swept.sort()
    defaults = dict(zip(cm.parameters, cm.parameter_defaults.tolist()))
    for name in {n for p, _, _ in runs for n in p}:  # a wrong name fails every run: now
        cm.parameter_vector({name: defaults.get(name, 0.0)})
    for j, u in {j: u for _, u, j in runs}.items():  # so does a wrong input (set)
        try:
            input_function(cm, u)
        except SimulationError as exc:
            where = "" if j is None else f" (input set {j})"
            raise SimulationError(f"sweep: inputs{where}: {exc}") from None
    tasks, refused = [], []
    for k, (p, u, _) in enumerate(runs):  # bad values fail here, not in a worker
        try:
            cm.parameter_vector(p)
        except ModelError as exc:
            if errors == "raise":
                raise
            refused.append((k, np.zeros(0), np.zeros((len(outputs), 0)), str(exc)))
            continue
        tasks.append((k, {n: float(v) for n, v in p.items()}, _plain_inputs(u), outputs,
                      float(t_end), options))
    bar = run_bar(progress, len(runs))
    try:
        answers = [_tick(bar, answer) for answer in refused]
        if client is not None and tasks:
            answers += _on_cluster(client, cm, tasks, bar)
        elif processes == 0 or len(tasks) <= 1:
            answers += [_tick(bar, _simulate_run(cm, task)) for task in tasks]
        else:
            answers += _in_processes(cm, tasks, processes, bar)
    finally:
        if bar is not None:
            bar.close()
    answers.sort(key=lambda a: a[0])
    return _table(pd, cm, runs, answers, outputs, swept, inputs, errors, defaults)


# -- running ---------------------------------------------------------------------------------
def _simulate_run(cm, task):
    """One run: ``(run, times, values (outputs x times), error message or None)``."""
    k, p, u, outputs, t_end, options = task
    try:  # the sweep's own bar counts the runs; none per run
        res = run(cm, t_end, params=p, inputs=u, progress=False, **options)
    except SimulationError as exc:
        reached = getattr(exc, "result", None)
        if reached is None:
            return k, np.zeros(0), np.zeros((len(outputs), 0)), str(exc)
        rows = dict(zip(reached.names, reached.values))  # unchecked: NaN may be why it failed
        return (k, reached.t, np.array([rows[n] for n in outputs]),
                str(exc))
    res.prefetch(outputs)
    return k, res.t, np.array([res[n] for n in outputs]), None


def _in_processes(cm, tasks, processes, bar):
    from . import native
    _prebuild(cm, native, tasks)
    blob = _dumps(cm)
    workers = min(processes or os.cpu_count() or 1, len(tasks))
    chunk = max(1, len(tasks) // (4 * workers))
    try:
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn"),
                                 initializer=_start_worker, initargs=(blob,)) as pool:
            with _without_main_script():  # map submits every task: the workers start here
                answers = pool.map(_run_in_worker, tasks, chunksize=chunk)
            return [_tick(bar, answer) for answer in answers]
    except BrokenProcessPool:
        raise SimulationError(
            "sweep: a worker process ended abruptly (killed, or out of memory?); run in this "
            "process with processes=0 to see what happens") from None


@contextlib.contextmanager
def _without_main_script():
    """While worker processes start: the main module looks like an interactive session's
    (no ``__file__``, no ``__spec__``), so "spawn" does not import the main script in them.
    Workers need nothing from it (they unpickle only mbmodel's function and plain data);
    importing it would run an unguarded script's sweep again in every worker, and a script
    read from standard input has no file to import."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    with _main_lock:  # two sweeps in two threads: the second sees the script's own values
        saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
        main.__dict__.pop("__file__", None)
        main.__spec__ = None
        try:
            yield
        finally:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


_main_lock = threading.Lock()


def _plain_inputs(inputs: dict) -> dict:
    """Input values as floats and float arrays: the workers do not import the main script,
    so a value of a type defined there could not be unpickled in them. The form is kept:
    a tuple is ``(times, values)``; any other sequence (rows ``[[time, value], ...]``, a
    vector input's constant) one array, read as :func:`mbmodel.simulate` reads it (a
    tuple of the rows read two rows as times and values, silently)."""
    plain = {}
    for name, spec in inputs.items():
        try:
            plain[name] = (float(spec) if np.isscalar(spec) else
                           tuple(np.asarray(part, dtype=float) for part in spec)
                           if isinstance(spec, tuple) else np.asarray(spec, dtype=float))
        except (TypeError, ValueError):
            plain[name] = spec  # the run says what is wrong with it
    return plain


def _on_cluster(client, cm, tasks, bar):
    try:
        from distributed import as_completed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("sweep(client=...) needs dask.distributed: "
                          "pip install 'mbmodel[dask]'") from exc
    from . import native
    _prebuild(cm, native, tasks)
    blob = _dumps(cm)
    key = hashlib.sha256(blob).hexdigest()
    model = client.scatter(blob, broadcast=True)
    futures = client.map(_run_on_cluster, tasks, model=model, key_of_model=key, pure=False)
    answers = []
    for future in as_completed(futures):
        answers.append(_tick(bar, future.result()))
    return sorted(answers, key=lambda a: a[0])


def _prebuild(cm, native, tasks):
    """Build the generated C here, once, so the workers load it from the disk cache: the
    dynamics, the integrators' C loops, and with ``native=True`` the outputs' where the
    runs compute their tables (they read more than the states, and a first read computes
    the whole table: :func:`mbmodel.simulate.table_read_whole`)."""
    options = tasks[0][5]
    choice = options.get("native", "auto")
    if choice and cm.states:
        native.dynamics(cm, True)
        runtime_loops()  # (ABM's and DOP853's loops in C: once per machine)
    if choice is True and not set(tasks[0][3]) <= set(cm.states):
        times = options.get("times")
        points = len(times) if times is not None else options.get("n_points") or 501
        if table_read_whole(cm, points):
            native.outputs(cm, True)


def _dumps(cm) -> bytes:
    from .persist import dumps
    return dumps(cm)


_worker_model = None
_cluster_models: dict[str, object] = {}
_cluster_lock = threading.Lock()


def _start_worker(blob: bytes):
    global _worker_model
    from .persist import loads
    _worker_model = loads(blob, source="the sweep's model")


def _run_in_worker(task):
    return _simulate_run(_worker_model, task)


def _run_on_cluster(task, model: bytes, key_of_model: str):
    with _cluster_lock:  # a dask worker runs tasks in threads: load each model once
        cm = _cluster_models.get(key_of_model)
        if cm is None:
            from .persist import loads
            cm = _cluster_models[key_of_model] = loads(model, source="the sweep's model")
    return _simulate_run(cm, task)


# -- answers -------------------------------------------------------------------------------
def _table(pd, cm, runs, answers, outputs, swept, inputs, errors, defaults):
    failed = [(k, message) for k, _, _, message in answers if message is not None]
    if failed and errors == "raise":
        k, message = failed[0]
        shown = ", ".join(f"{n} = {v:g}" for n, v in runs[k][0].items()) or (
            "the defaults" if runs[k][2] is None else "the default parameters")
        if runs[k][2] is not None:
            shown += f", input set {runs[k][2]}"
        more = f" ({len(failed) - 1} more runs failed)" if len(failed) > 1 else ""
        raise SimulationError(f"sweep: run {k} ({shown}) failed{more}: {message}")
    frames = []
    for k, t, values, message in answers:
        p, _, input_set = runs[k]
        if len(t) == 0:  # a run that failed before its first output time keeps one row
            t, values = np.array([np.nan]), np.full((len(outputs), 1), np.nan)
        n = len(t)
        columns = {"run": np.full(n, k, dtype=int)}
        for name in swept:
            columns[name] = np.full(n, p.get(name, defaults.get(name, np.nan)), dtype=float)
        if isinstance(inputs, (list, tuple)):
            columns["input_set"] = np.full(n, input_set, dtype=int)
        columns["time"] = t
        for name, row in zip(outputs, values):
            columns[name] = row
        if failed:
            columns["error"] = [message] * n
        frames.append(pd.DataFrame(columns))
    table = pd.concat(frames, ignore_index=True)
    units = cm.units
    table.attrs["units"] = {q.name: q.unit for q in cm.free_parameters
                            if q.name in swept and q.unit}
    table.attrs["units"].update({n: units[n] for n in outputs if n in units})
    table.attrs["units"]["time"] = "s"
    return table


def _compiled(model):
    if isinstance(model, CompiledCore):
        return model
    if isinstance(model, Model):
        return compile(model)
    raise SimulationError(f"sweep: give a compiled model or a Model, not {type(model).__name__}")


def _pandas():
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("sweep() returns a pandas table: pip install 'mbmodel[sweep]'") from exc
    return pandas


def _tick(bar, answer):
    if bar is not None:
        bar.update(1)
    return answer
