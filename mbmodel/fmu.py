"""FMU export: a compiled model as an FMI 2.0 Functional Mock-up Unit, for Model Exchange
and Co-Simulation, to run in any FMI tool (FMPy, OpenModelica, Dymola, Simulink, ...).

The FMU holds ``modelDescription.xml`` (every variable with its unit and start value, the
parameters, inputs and outputs), a shared library for this platform built from the model's
generated C (casadi) and a small runtime (``fmu_runtime.c``: the FMI functions, Newton's
method for torn nonlinear blocks, and for Co-Simulation the Dormand-Prince 5(4) integrator
with error control that stops at every time event), and the C sources under ``sources/``.

What is exported:

* continuous models, with their time events (steps and other discontinuities at known
  times: ``nextEventTime`` in Model Exchange, step boundaries in Co-Simulation);
* free parameters (``causality="parameter"``, ``variability="fixed"``: set them before
  initialization), external inputs, and every other variable as ``local`` (those named in
  ``outputs`` as ``output``);
* the components' conditions: on parameters checked at ``fmi2ExitInitializationMode``, on
  variables (run-time ``mb.Assert``) there and after every step (``fmi2DoStep``,
  ``fmi2CompletedIntegratorStep``), failing with ``fmi2Error`` and the message logged;
* the states' start values are those mbmodel's initialization computes for the default
  parameters; where the model gives them by parameters (``Guess(self.phi0)``, initial
  equations, fixed starts on other variables) ``fmi2ExitInitializationMode`` computes
  them again from the parameters as set, except those the importer set itself.

Not exported: models with state events or ``when`` clauses (relations crossing zero,
friction, ideal diodes), which raise :class:`FMUExportError`.

Example::

    cm = mb.compile(RC())
    cm.export_fmu("rc.fmu")
    import fmpy
    res = fmpy.simulate_fmu("rc.fmu", stop_time=5e-3, output=["capacitor.v"])
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import uuid
import warnings
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import casadi as ca
import numpy as np

from .codegen import compiler_command, truncated_output
from .compiler import per_second
from .errors import ModelError
from .files import atomic_write
from .initialization import initial_values

__all__ = ["export_fmu", "FMUExportError"]

_RUNTIME = Path(__file__).with_name("fmu_runtime.c")
#: Co-Simulation integrator tolerances unless the importer sets one (fmi2SetupExperiment).
DEFAULT_RTOL, DEFAULT_ATOL = 1e-10, 1e-12


class FMUExportError(ModelError):
    """The compiled model cannot be exported as an FMU (what and why in the message)."""


def export_fmu(cm, path, *, outputs=None, inputs=None, model_identifier: str | None = None,
               stop_time: float = 1.0, compiler=None) -> Path:
    """Write ``cm`` as an FMI 2.0 FMU (Model Exchange and Co-Simulation) to ``path``.

    ``outputs``: variable names exported with ``causality="output"`` (all others are
    readable ``local`` variables); ``model_identifier``: the name of the shared library
    (default: the model's name); ``stop_time``: the default experiment's stop time;
    ``inputs``: start values of the external inputs (name -> number; default 0), also
    used to compute the states' start values; ``compiler``: the C compiler (default
    ``$CC``, ``cc`` or ``gcc``).

    Example: ``cm.export_fmu("motor.fmu", outputs=["load.w"])``"""
    _check_exportable(cm)
    identifier = _identifier(model_identifier or cm.name)
    if isinstance(outputs, str):   # list("load.w") would be its letters
        raise FMUExportError(f"export_fmu: outputs is a list of names "
                             f"(outputs=[{outputs!r}]), not the string {outputs!r}")
    outputs = list(outputs or [])
    unknown = [n for n in outputs if n not in cm.output_index and n not in cm.inputs
               and n not in cm.parameters]
    if unknown:
        raise FMUExportError(f"export_fmu: the model has no variable {', '.join(unknown)}")
    given = [n for n in outputs if n in cm.inputs or n in cm.parameters]
    if given:
        raise FMUExportError(f"export_fmu: {', '.join(given)} are inputs or parameters of the "
                             f"FMU (set by the importer), not outputs")
    u0 = {name: 0.0 for name in cm.inputs}
    u0.update(inputs or {})
    x0, z0 = initial_values(cm, inputs=u0)
    _warn_of_limits(cm)
    layout = _Layout(cm, outputs)
    c_source = _c_source(cm, x0, z0, [float(u0[n]) for n in cm.inputs], layout)
    guid = "{" + str(uuid.UUID(hashlib.sha256(c_source.encode()).hexdigest()[:32])) + "}"
    c_source = c_source.replace("@GUID@", guid)
    xml = _model_description(cm, identifier, guid, x0, u0, layout, stop_time)
    with tempfile.TemporaryDirectory(prefix="mbmodel-fmu-") as tmp:
        library = Path(tmp) / f"{identifier}.so"
        _build(c_source, Path(tmp) / f"{identifier}.c", library, compiler)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Complete or absent, also when several processes export to the same path at once.
        with atomic_write(path, "wb") as handle:
            with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as fmu:
                fmu.writestr("modelDescription.xml", xml)
                fmu.write(library, f"binaries/{_platform()}/{identifier}.so")
                fmu.writestr(f"sources/{identifier}.c", c_source)
    return path


def _check_exportable(cm):
    if cm.events is not None:
        flat = getattr(cm, "flat", None)
        hybrid = flat.hybrid if flat is not None else None
        found = sorted({item.origin or "the model itself" for part in (
            hybrid.relations, hybrid.whens, hybrid.samples, hybrid.discrete_equations)
            for item in part}) if hybrid is not None else ["its components"]
        raise FMUExportError(
            f"export_fmu: {cm.name} has events the FMU cannot handle: relations that switch "
            f"at events, when clauses, sampled or discrete variables (friction, ideal "
            f"switches or diodes, hysteresis; Pulse, Sawtooth, SampleAndHold), in "
            f"{', '.join(found[:8])}{' ...' if len(found) > 8 else ''}. FMU export supports "
            f"continuous models with time events only (Step, Ramp, Sine, TimeTable)")
    if sys.platform != "linux":
        raise FMUExportError(f"export_fmu builds the FMU's binary for Linux only, not for "
                             f"{sys.platform}")


def _warn_of_limits(cm):
    """What the FMU does not do that ``simulate`` does, said at export (it would fail or
    start wrong later, in another tool, without a word)."""
    state_set = getattr(cm.system, "state_set", None) if cm.system is not None else None
    if state_set is not None:
        warnings.warn(
            f"export_fmu: {cm.name}'s state choice depends on the solution (candidates "
            f"{', '.join(state_set.candidates[:6])}): simulate() switches it at run time, the "
            f"FMU keeps the compiled one ({', '.join(cm.states[:6])}) and fails where that "
            f"becomes singular", UserWarning, stacklevel=3)


def _solves_initialization(cm) -> bool:
    """Whether the start values come from solving initial conditions (initial equations,
    fixed starts on variables that are not states): then the FMU solves them again at
    fmi2ExitInitializationMode, with the parameters and state starts set."""
    states = set(cm.states)
    return bool(cm.initial_equation_descriptions) or any(
        cm.alias_root(name)[0] not in states for name, _ in cm.fixed_starts)


def _identifier(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"model_{cleaned}"


def _platform() -> str:
    return "linux64" if sys.maxsize > 2 ** 32 else "linux32"


class _Layout:
    """Value references: states, their derivatives, inputs, parameters, other variables."""

    def __init__(self, cm, outputs):
        self.states = list(cm.states)
        self.derivatives = [f"der({s})" for s in cm.states]
        self.inputs = list(cm.inputs)
        self.parameters = list(cm.parameters)
        taken = set(self.states) | set(self.derivatives) | set(self.inputs) | \
            set(self.parameters)
        self.others = [n for n in cm.output_names if n not in taken]
        self.other_index = [cm.output_index[n] for n in self.others]
        self.outputs = set(outputs)

    @property
    def names(self) -> list[str]:
        return self.states + self.derivatives + self.inputs + self.parameters + self.others


def _c_source(cm, x0, z0, u0, layout) -> str:
    sym = cm.symbols
    X, Z, U, P = (ca.SX.sym(k, sym_.numel()) for k, sym_ in
                  (("x", sym.x), ("z", sym.z), ("u", sym.u), ("p", sym.p)))
    T = ca.SX.sym("t")
    args = [X, Z, U, P, T]
    alg = cm.alg(X, Z, U, P, T)
    functions = [
        ca.Function("mbm_ode", args, [cm.ode(X, Z, U, P, T)]),
        ca.Function("mbm_alg", args, [alg]),
        ca.Function("mbm_alg_jac", args, [ca.densify(ca.jacobian(alg, Z))]),
        ca.Function("mbm_out", args, [cm.output_function(X, Z, U, P, T)]),
        ca.Function("mbm_tev", [P], [cm.event_function(P)]),
        ca.Function("mbm_pcheck", [P], [cm.parameter_checks()(P)]),
    ]
    from .asserts import RunAsserts
    asserted = RunAsserts(cm)
    if asserted.asserts:  # (x, z, u, p, t) -> the conditions, nonzero where they hold
        Y = cm.output_function(X, Z, U, P, T)
        read = ca.vertcat(*[Y[cm.output_index[n]] for n in asserted.names]) if \
            asserted.names else ca.SX(0, 1)
        functions.append(ca.Function("mbm_asserts", args, [asserted.function(read, P, T)]))
    has_starts = cm.start_function is not None
    if has_starts:  # start values that follow the parameters (Guess(self.phi0))
        functions.append(ca.Function("mbm_starts", [P], [cm.start_function(P)]))
    has_init = _solves_initialization(cm)
    if has_init:
        from .initialization import initialization_problem
        residual = initialization_problem(cm, False, fixed_states_from_start=True).residual
        XS = ca.SX.sym("x_start", X.numel())
        r = residual(ca.vertcat(X, Z), ca.vertcat(P, U, T, XS))
        init_args = [X, Z, U, P, T, XS]
        functions += [ca.Function("mbm_init", init_args, [r]),
                      ca.Function("mbm_init_jac", init_args,
                                  [ca.densify(ca.jacobian(r, ca.vertcat(X, Z)))])]
    generator = ca.CodeGenerator("mbmodel_fmu.c", {"with_header": False})
    for fn in functions:
        generator.add(fn)
    generated = generator.dump()
    p0 = np.asarray(cm.parameter_defaults, dtype=float)

    def values(array):
        return ", ".join(repr(float(v)) for v in array) or "0"

    n_tev = cm.event_function.size1_out(0)
    free = {q.name: q for q in cm.free_parameters}
    bounds = [(free[name].min, free[name].max) if name in free else (-np.inf, np.inf)
              for name in layout.parameters]

    def c_numbers(array):
        return ", ".join("-HUGE_VAL" if v == -np.inf else "HUGE_VAL" if v == np.inf
                         else repr(float(v)) for v in array) or "0"

    # What simulate() checks of the parameters beyond the free ones' bounds, in the order
    # of cm.parameter_checks(): the bound parameters' values (kind 0, within [low, high]),
    # the components' conditions (kind 1, nonzero) and the divisors (kind 2, nonzero).
    checks = ([(0, f"parameter '{q.name}' (computed from others)", q.min, q.max)
               for q in cm.bound_parameters]
              + [(1, f"{a.origin or 'model'}: {a.message}", 0, 0) for a in cm.system.asserts]
              + [(2, f"the equation {what} divides by zero", 0, 0)
                 for _, what in cm.pivot_guards()])
    macros = {
        "NX": len(layout.states), "NZ": sym.z.numel(), "NU": sym.u.numel(),
        "NP": len(layout.parameters), "NP_ALL": sym.p.numel(), "NY": len(layout.others),
        "N_OUT": len(cm.output_names), "N_TEV": n_tev,
        "SZ_ARG": max(fn.sz_arg() for fn in functions),
        "SZ_RES": max(fn.sz_res() for fn in functions),
        "SZ_IW": max(fn.sz_iw() for fn in functions),
        "SZ_W": max(fn.sz_w() for fn in functions),
        "DEFAULT_RTOL": repr(DEFAULT_RTOL), "DEFAULT_ATOL": repr(DEFAULT_ATOL),
        "X_START_VALUES": values(x0), "Z_START_VALUES": values(z0),
        "U_START_VALUES": values(u0), "P_START_VALUES": values(p0),
        "Y_INDEX_VALUES": ", ".join(str(i) for i in layout.other_index) or "0",
        # simulate() refuses a parameter outside [min, max]; so does fmi2SetReal
        "P_MIN_VALUES": c_numbers([low for low, _ in bounds]),
        "P_MAX_VALUES": c_numbers([high for _, high in bounds]),
        "P_NAME_VALUES": ", ".join(_c_string(name) for name in layout.parameters) or '""',
        "N_PCHECK": len(checks),
        "HAS_INIT": int(has_init),
        "HAS_STARTS": int(has_starts),
        "N_ASSERT": len(asserted.asserts),
        "ASSERT_TEXT_VALUES": ", ".join(_c_string(f"{a.origin or cm.name}: {a.message}")
                                        for a in asserted.asserts) or '""',
        "PCHECK_KIND_VALUES": ", ".join(str(kind) for kind, *_ in checks) or "0",
        "PCHECK_TEXT_VALUES": ", ".join(_c_string(text) for _, text, *_ in checks) or '""',
        "PCHECK_MIN_VALUES": c_numbers([low for *_, low, _ in checks]),
        "PCHECK_MAX_VALUES": c_numbers([high for *_, high in checks]),
        "MODEL_GUID": '"@GUID@"',
        "P_POSITION(k)": "(k)",
    }
    defines = "\n".join(f"#define {k} {v}" for k, v in macros.items())
    return (f"/* {cm.name}: generated by mbmodel {_version()} for FMI 2.0 */\n"
            f"{generated}\n{defines}\n{_RUNTIME.read_text()}")


def _c_string(text: str) -> str:
    """``text`` as a C string literal: its UTF-8 bytes, printable ASCII as it is and the
    rest as octal escapes (a message with an emoji: JSON's surrogate escapes are no C)."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '"\\?':
            out.append("\\" + char)
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _build(source: str, c_file: Path, library: Path, compiler):
    command = compiler_command(compiler)
    if command is None:
        raise FMUExportError("export_fmu needs a C compiler (set $CC or install gcc)")
    c_file.write_text(source)
    args = [*command, "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", str(library),
            str(c_file), "-lm"]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise FMUExportError(f"export_fmu: {command[0]} failed (status {done.returncode}):\n"
                             f"{truncated_output((done.stderr or done.stdout).strip())}")


def _model_description(cm, identifier, guid, x0, u0, layout, stop_time) -> str:
    free = {q.name: q for q in cm.free_parameters}
    units = {**{q.name: q.unit for q in free.values() if q.unit}, **cm.units}
    root = ET.Element("fmiModelDescription", {
        "fmiVersion": "2.0", "modelName": cm.name, "guid": guid,
        "generationTool": f"mbmodel {_version()}", "variableNamingConvention": "flat",
        "numberOfEventIndicators": "0"})
    common = {"modelIdentifier": identifier, "canNotUseMemoryManagementFunctions": "true",
              "canGetAndSetFMUstate": "false", "canSerializeFMUstate": "false",
              "providesDirectionalDerivative": "false"}
    ET.SubElement(root, "ModelExchange", common)
    ET.SubElement(root, "CoSimulation", {**common,
                                         "canHandleVariableCommunicationStepSize": "true"})
    used = sorted({units[n] for n in layout.names if units.get(n)} |
                  {per_second(units[s]) for s in layout.states if units.get(s)})
    if used:
        definitions = ET.SubElement(root, "UnitDefinitions")
        for unit in used:
            ET.SubElement(definitions, "Unit", {"name": unit})
    ET.SubElement(root, "DefaultExperiment", {"startTime": "0", "stopTime": repr(stop_time),
                                              "tolerance": "1e-08"})
    variables = ET.SubElement(root, "ModelVariables")
    descriptions = _descriptions(cm)

    def add(name, vr, causality, variability, initial=None, start=None, unit=None, **real):
        attrs = {"name": name, "valueReference": str(vr), "causality": causality,
                 "variability": variability}
        if descriptions.get(name):
            attrs["description"] = descriptions[name]
        if initial:
            attrs["initial"] = initial
        var = ET.SubElement(variables, "ScalarVariable", attrs)
        real_attrs = {k: v for k, v in real.items() if v is not None}
        if unit:
            real_attrs["unit"] = unit
        if start is not None:
            real_attrs["start"] = repr(float(start))
        ET.SubElement(var, "Real", real_attrs)

    vr = 0
    for k, name in enumerate(layout.states):
        causality = "output" if name in layout.outputs else "local"
        add(name, vr, causality, "continuous", "exact", x0[k], units.get(name))
        vr += 1
    for k, name in enumerate(layout.derivatives):
        unit = units.get(name) or (per_second(units[layout.states[k]])
                                   if units.get(layout.states[k]) else None)
        add(name, vr, "local", "continuous", "calculated", None, unit, derivative=str(k + 1))
        vr += 1
    for name in layout.inputs:
        add(name, vr, "input", "continuous", None, u0[name], units.get(name))
        vr += 1
    for k, name in enumerate(layout.parameters):
        q = free.get(name)
        bounds = {}
        if q is not None and np.isfinite(q.min):
            bounds["min"] = repr(float(q.min))
        if q is not None and np.isfinite(q.max):
            bounds["max"] = repr(float(q.max))
        add(name, vr, "parameter", "fixed", "exact", cm.parameter_defaults[k],
            units.get(name), **bounds)
        vr += 1
    for name in layout.others:
        causality = "output" if name in layout.outputs else "local"
        add(name, vr, causality, "continuous", "calculated", None, units.get(name))
        vr += 1
    structure = ET.SubElement(root, "ModelStructure")
    index_of = {name: i + 1 for i, name in enumerate(layout.names)}  # 1-based
    out_names = [n for n in layout.states + layout.others if n in layout.outputs]
    if out_names:
        block = ET.SubElement(structure, "Outputs")
        for name in out_names:
            ET.SubElement(block, "Unknown", {"index": str(index_of[name])})
    if layout.derivatives:
        block = ET.SubElement(structure, "Derivatives")
        for name in layout.derivatives:
            ET.SubElement(block, "Unknown", {"index": str(index_of[name])})
    # Outputs whose start is computed, and the derivatives (states start exactly).
    initial = [n for n in out_names if n not in layout.states] + layout.derivatives
    if initial:
        block = ET.SubElement(structure, "InitialUnknowns")
        for name in sorted(initial, key=index_of.__getitem__):
            ET.SubElement(block, "Unknown", {"index": str(index_of[name])})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def _descriptions(cm) -> dict:
    """Declared doc strings of the variables and parameters, where the flat model has them."""
    found = {}
    system = cm.system
    for item in list(system.variables) + list(system.parameters):
        doc = getattr(item, "doc", None) or getattr(item, "description", None)
        if isinstance(doc, str) and doc:
            found[item.name] = doc
    return found


def _version() -> str:
    from . import __version__
    return __version__
