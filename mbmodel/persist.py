"""Saving and loading compiled models: no recompilation in another process or session.

A saved model is a zip archive of two members:

* ``casadi.txt``: every casadi object of the model (symbols, expressions, Functions),
  written by one ``casadi.StringSerializer`` so symbols shared between expressions stay
  shared when read back;
* ``model.json``: everything else, as a tree of plain JSON values. Objects of the compiler's
  own classes are written as their class name and attributes; casadi objects as their
  position in ``casadi.txt``.

Loading runs no user code: it imports nothing but :mod:`mbmodel`'s own modules, creates
instances of the compiler's classes without calling their constructors and never unpickles.
A model holding anything else (a component instance, a function) cannot be saved and says
where it holds it. The same bytes carry a compiled model to worker processes
(:func:`mbmodel.sweep`): casadi's own serialization, never a pickle of casadi objects.

Example::

    cm = mb.compile(model)
    cm.save("model.mbm")
    cm2 = mb.load("model.mbm")          # in another process, no recompilation
    res = cm2.simulate(1.0)
"""

from __future__ import annotations

import importlib
import io
import json
import zipfile

import casadi as ca
import numpy as np

from .errors import ModelError
from .files import atomic_write

__all__ = ["save", "load", "dumps", "loads", "PersistError"]

FORMAT = "mbmodel-compiled-model"
#: Bumped whenever the layout of the compiler's classes changes incompatibly.
VERSION = 1
_CASADI = (ca.SX, ca.MX, ca.DM, ca.Function)
#: casadi packs lists of one type only: the objects go into one list per type, in this order.
_KINDS = ("SX", "MX", "DM", "Function")
#: Attributes that are caches rebuilt on demand, or that tie a compiled model to this
#: session (the model it was compiled from, held weakly: a loaded copy watches none), not
#: part of a model.
# (_run_asserts: kept on the model by older versions, now in its workspace)
_TRANSIENT = {"_units", "_run_asserts", "_compiled_from", "_changes_warned"}


#: Classes that moved to another module since models were first saved: where a saved name
#: is found now.
MOVED = {"mbmodel.events:EventLayout": "mbmodel.event_layout:EventLayout",
         "mbmodel.events:Event": "mbmodel.event_layout:Event",
         "mbmodel.compiler:CompiledModel": "mbmodel.compiled:CompiledModel"}


class PersistError(ModelError):
    """A compiled model could not be saved or a saved one could not be loaded."""


def save(cm, path) -> None:
    """Write the compiled model ``cm`` to ``path`` (a zip archive; written to a temporary
    file, then renamed, so the file is complete or absent).

    Example: ``mb.persist.save(cm, "robot.mbm")`` (or ``cm.save("robot.mbm")``)"""
    data = dumps(cm)
    with atomic_write(path, "wb") as fh:
        fh.write(data)


def load(path):
    """The compiled model saved in ``path`` by :func:`save`.

    Example: ``cm = mb.load("robot.mbm")``"""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise PersistError(f"cannot read the saved model {path!s}: {exc}") from None
    return loads(data, source=str(path))


def dumps(cm) -> bytes:
    """The compiled model as bytes (the content of a file written by :func:`save`)."""
    encoder = _Encoder()
    root = encoder.encode(cm, "cm")
    serializer = ca.StringSerializer()
    for kind in _KINDS:
        serializer.pack(encoder.casadi_objects[kind])
    header = {"format": FORMAT, "version": VERSION, "casadi": ca.__version__,
              "root": root}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model.json", json.dumps(header, separators=(",", ":")))
        archive.writestr("casadi.txt", serializer.encode())
    return buffer.getvalue()


def loads(data: bytes, source: str = "the data"):
    """The compiled model in ``data`` (bytes from :func:`dumps`)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            header = json.loads(archive.read("model.json"))
            text = archive.read("casadi.txt").decode()
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise PersistError(f"{source} is not a saved mbmodel model ({exc})") from None
    if header.get("format") != FORMAT:
        raise PersistError(f"{source} is not a saved mbmodel model")
    if header.get("version") != VERSION:
        raise PersistError(
            f"{source} was saved in format version {header.get('version')}; this mbmodel reads "
            f"version {VERSION}: compile the model again and save it anew")
    saved = header.get("casadi", "")
    if saved.split(".")[:2] != ca.__version__.split(".")[:2]:
        raise PersistError(
            f"{source} was saved with casadi {saved}, this process has casadi {ca.__version__}:"
            f" casadi's serialization is read only by the version that wrote it; compile the "
            f"model again (or install casadi {saved})")
    try:
        reader = ca.StringDeserializer(text)
        objects = {kind: reader.unpack() for kind in _KINDS}
    except Exception as exc:  # casadi raises RuntimeError with its own message
        raise PersistError(f"the casadi part of {source} cannot be read: {exc}") from None
    return _Decoder(objects, source).decode(header["root"])


class _Encoder:
    """Python object tree -> JSON tree, casadi objects collected aside."""

    def __init__(self):
        self.casadi_objects: dict[str, list] = {kind: [] for kind in _KINDS}
        self._objects: dict[int, int] = {}   # id(obj) -> reference number
        self._keep: list = []                 # keeps encoded objects alive (ids stay unique)

    def encode(self, value, path: str):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating)):
            return float(value)
        if isinstance(value, _CASADI):
            kind = type(value).__name__
            self.casadi_objects[kind].append(value)
            return {"$": "casadi", "k": kind, "i": len(self.casadi_objects[kind]) - 1}
        if isinstance(value, list):
            return [self.encode(v, f"{path}[{k}]") for k, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"$": "tuple", "v": [self.encode(v, f"{path}[{k}]")
                                        for k, v in enumerate(value)]}
        if isinstance(value, dict):
            return {"$": "dict", "v": [[self.encode(k, f"{path} key"),
                                        self.encode(v, f"{path}[{k!r}]")]
                                       for k, v in value.items()]}
        if isinstance(value, (set, frozenset)):
            kind = "set" if isinstance(value, set) else "frozenset"
            return {"$": kind, "v": [self.encode(v, f"{path} item") for v in value]}
        if isinstance(value, slice):
            return {"$": "slice", "v": [value.start, value.stop, value.step]}
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "biuf":
                raise PersistError(f"cannot save {path}: an array of {value.dtype}")
            return {"$": "array", "dtype": value.dtype.str, "shape": list(value.shape),
                    "v": value.ravel().tolist()}
        return self._encode_object(value, path)

    def _encode_object(self, value, path):
        ref = self._objects.get(id(value))
        if ref is not None:
            return {"$": "ref", "id": ref}
        cls = type(value)
        module = cls.__module__
        if not _is_own_module(module):
            what = "a function" if callable(value) and not hasattr(value, "__dict__") else \
                f"a {module}.{cls.__qualname__}"
            raise PersistError(
                f"cannot save the compiled model: {path} is {what}, which is not part of a "
                f"compiled model's data (only mbmodel's own classes, numbers, text, arrays and "
                f"casadi objects are saved)")
        ref = self._objects[id(value)] = len(self._objects)
        self._keep.append(value)
        state = value._persist_state() if hasattr(value, "_persist_state") else _state(value)
        encoded = {k: self.encode(v, f"{path}.{k}") for k, v in state.items()
                   if k not in _TRANSIENT}
        return {"$": "object", "class": f"{module}:{cls.__qualname__}", "id": ref,
                "state": encoded}


def _state(value) -> dict:
    state = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                state[name] = getattr(value, name)
    return state


def _is_own_module(module: str) -> bool:
    return (module == "mbmodel" or module.startswith("mbmodel.")) and \
        not module.startswith("mbmodel.libraries")


class _Decoder:
    def __init__(self, casadi_objects: dict, source: str):
        self.casadi_objects = casadi_objects
        self.source = source
        self._objects: dict[int, object] = {}

    def decode(self, node):
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("$")
        if kind == "casadi":
            return self.casadi_objects[node["k"]][node["i"]]
        if kind == "tuple":
            return tuple(self.decode(v) for v in node["v"])
        if kind == "dict":
            return {self.decode(k): self.decode(v) for k, v in node["v"]}
        if kind == "set":
            return {self.decode(v) for v in node["v"]}
        if kind == "frozenset":
            return frozenset(self.decode(v) for v in node["v"])
        if kind == "slice":
            return slice(*node["v"])
        if kind == "array":
            return np.array(node["v"], dtype=np.dtype(node["dtype"])).reshape(node["shape"])
        if kind == "ref":
            return self._objects[node["id"]]
        if kind == "object":
            return self._decode_object(node)
        raise PersistError(f"{self.source} holds an unknown entry {kind!r}")

    def _decode_object(self, node):
        module, _, qualname = MOVED.get(node["class"], node["class"]).partition(":")
        if not _is_own_module(module):
            raise PersistError(f"{self.source} names the class {node['class']}, which is not "
                               f"one of mbmodel's: refusing to load it")
        try:
            cls = importlib.import_module(module)
            for part in qualname.split("."):
                cls = getattr(cls, part)
        except (ImportError, AttributeError):
            raise PersistError(f"{self.source} needs the class {node['class']}, which this "
                               f"version of mbmodel does not have: compile the model again"
                               ) from None
        if not isinstance(cls, type) or cls.__module__ != module:
            raise PersistError(f"{self.source} names {node['class']}, which is not a class")
        obj = cls.__new__(cls)
        self._objects[node["id"]] = obj
        state = {k: self.decode(v) for k, v in node["state"].items()}
        for k, v in state.items():
            object.__setattr__(obj, k, v)
        return obj
