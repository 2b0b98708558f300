"""Compile casadi Functions to C and load them back as fast native Functions.

casadi evaluates an SX Function in its virtual machine, one instruction at a time. For a
model that is simulated many times, generating C for the function and building it with
the system C compiler makes each call markedly cheaper. Building takes a while, so the
shared library is cached: its file name is the sha256 of the generated C text, the
compiler and its flags. Running the same model again (in this process, a later one, or
several at once) loads the existing library instead of compiling anew; a changed model
produces different C and therefore a new library.

Usage with a compiled model::

    cm = mb.compile(model)
    fast = compile_function(cm.ode)          # same signature as cm.ode
    xdot = fast(x, z, u, p, t)

The cache lives in ``$MBMODEL_CACHE`` if set, else ``~/.cache/mbmodel/codegen`` (beside the
libraries, :mod:`mbmodel.native` keeps the kernels of large models, ``kernels-*.casadi``).
Deleting it is always safe. Without a working C compiler the original Function is returned (it
still works, in casadi's virtual machine) and a :class:`CodegenWarning` says why.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import warnings
import weakref
from pathlib import Path

import casadi as ca

__all__ = ["CodegenWarning", "build_failed", "compile_function", "compile_source",
           "casadi_c", "compiler_command", "default_cache_dir", "host_flags", "library_of",
           "operation_counts", "register_source", "truncated_output", "GENERATOR_NAME"]

# The generator's name prefixes every internal C symbol; keeping it fixed means the C text,
# and so the cache key, depends only on the function being generated.
GENERATOR_NAME = "mbmodel_codegen"
_MAX_STDERR_CHARS = 2000


class CodegenWarning(UserWarning):
    """Native code could not be built or loaded; casadi's virtual machine is used instead."""


def default_cache_dir() -> Path:
    """Directory holding generated libraries: ``$MBMODEL_CACHE`` or ``~/.cache/mbmodel/codegen``."""
    env = os.environ.get("MBMODEL_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "mbmodel" / "codegen"


def host_flags(tuned: bool = False) -> tuple[str, ...]:
    """Compiler flags for this machine's floating-point unit: fused multiply-add (one
    rounding for ``a*b + c``) where the CPU has it: x86-64 with the FMA extension, AArch64.
    Generated dynamics are mostly such sums of products: a chain's forward dynamics run
    ~1.5x faster. The flags are part of the cache key, so a machine without FMA that shares
    the cache builds its own library. Results differ from casadi's virtual machine in the
    last bits (one rounding fewer per fused pair).

    ``tuned=True`` (code built at -O2) adds, on x86-64, ``-march=native``: code for this
    CPU's whole instruction set. With AVX-512's 32 vector registers more of a kernel's values
    stay in registers: a 100-link chain's forward dynamics in kernels run in 16.7 instead of
    17.7 µs, a 6-link chain's flat function in 0.69 instead of 0.77 µs. Not at -O1: for one
    large flat function (100 links) gcc takes half as long again, for 2 %. The cache key of
    such a library holds this CPU's feature set, so a machine with another CPU that shares
    the cache builds its own.

    Example: ``host_flags()`` -> ``('-ffp-contract=fast', '-mfma')`` on a recent PC"""
    import platform
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return ("-ffp-contract=fast",)
    if machine in ("x86_64", "amd64"):
        features = _cpu_features()
        if features is not None and "fma" in features.split():
            return ("-march=native", "-ffp-contract=fast") if tuned else (
                "-ffp-contract=fast", "-mfma")
    return ()


_cpu_features_read: list = []


def _cpu_features() -> str | None:
    """The CPU's feature flags as Linux lists them (``/proc/cpuinfo``), or None."""
    if not _cpu_features_read:
        found = None
        try:
            with open("/proc/cpuinfo") as fh:
                for line in fh:
                    if line.startswith("flags"):
                        found = " ".join(sorted(line.split(":", 1)[1].split()))
                        break
        except OSError:
            pass
        _cpu_features_read.append(found)
    return _cpu_features_read[0]


def compile_function(fn: ca.Function, *, cache_dir=None, compiler=None, flags=None,
                     verbose: bool = False, external_options: dict | None = None,
                     background: bool = False, derivatives: bool = False,
                     optimize: int = 1) -> ca.Function:
    """Return ``fn`` compiled to native code, built once and then reused from a cache.

    The result has the same inputs and outputs as ``fn``. ``compiler`` is a command such as
    ``"gcc"`` or ``"ccache clang"``; by default ``$CC``, else ``cc`` or ``gcc`` on the PATH.
    ``flags`` are passed to the compiler besides those needed for a shared library
    (default: ``-O<optimize>`` and :func:`host_flags`). ``optimize=1`` suits one large flat
    function (gcc's time at -O2 grows much faster with its size, for no gain); code of
    many small functions, such as the kernels of :mod:`mbmodel.kernels`, runs ~25 %
    faster at ``optimize=2`` for ~30 % more compiler time.
    ``external_options`` are casadi options of the loaded function (e.g. ``{"enable_fd":
    True}``: derivatives by finite differences of the compiled code). With
    ``derivatives=True`` the library also holds ``fn``'s forward derivative
    (``fwd1_<name>``, generated by algorithmic differentiation), which casadi uses for exact
    Jacobians (e.g. Newton's method in an implicit integrator). With
    ``background=True`` a library that is not in the cache yet is built in a background
    thread and ``fn`` itself is returned meanwhile (ask again later to get the compiled
    one). If no compiler is found or the build fails, a :class:`CodegenWarning` is emitted
    and ``fn`` itself is returned, so callers never have to handle a failure.

    Example::

        x, y = ca.SX.sym("x"), ca.SX.sym("y")
        f = ca.Function("f", [x, y], [x * y + ca.sin(x)])
        fast = compile_function(f)
        fast(2.0, 3.0)   # DM(6.9093), evaluated in C
    """
    command = compiler_command(compiler)
    if command is None:
        _fall_back(_no_compiler(compiler), fn)
        return fn
    if flags is None:
        flags = (f"-O{int(optimize)}", *_accepted_host_flags(command, tuned=optimize >= 2))
    flags = tuple(flags)

    source = _generate_c(fn, derivatives)
    library = _library_path(source, command, flags, cache_dir)

    options = dict(external_options or {})
    if background and not library.exists():
        with _background_lock:
            failed = _background_failed.get(str(library))
            if failed:  # reported once; not built again in this process
                _background_failed[str(library)] = ()
        if failed is None:
            _build_in_background(source, library, command, flags)
        else:
            with _background_lock:
                _failed_functions.setdefault(fn, set()).add(derivatives)
            if failed:
                _fall_back(f"{failed[0]} (built in the background)", fn, details=failed[1])
        return fn
    # A cached library that does not load (cut short by a full disk, say) is built anew once;
    # one that is not as it was built is not loaded at all (a library cut short can kill the
    # process in dlopen, SIGBUS, before any error is raised).
    for attempt in ("cached", "rebuilt"):
        if library.exists() and not _intact(library):
            _discard(library)
        if library.exists():
            if verbose:
                print(f"mbmodel.codegen: reusing {library}")
        else:
            failed = _build(source, library, command, flags, verbose)
            if failed is not None:
                _fall_back(failed[0], fn, details=failed[1])
                return fn
            attempt = "rebuilt"
        try:
            loaded = ca.external(fn.name(), str(library), options)
            _libraries[loaded] = library
            return loaded
        except RuntimeError as err:
            if attempt == "rebuilt":
                _fall_back(f"loading {library} failed: {truncated_output(str(err))}", fn)
                return fn
            _discard(library)
    return fn


def _seal_path(library: Path) -> Path:
    return library.with_name(library.name + ".sha256")


def _seal_text(path) -> str:
    data = Path(path).read_bytes()
    return f"{hashlib.sha256(data).hexdigest()} {len(data)}\n"


def _intact(library: Path) -> bool:
    """Whether ``library`` is the file its build wrote: the sha256 and size recorded beside
    it (``.so.sha256``) match. One without a record (an older cache) counts as not."""
    try:
        return _seal_path(library).read_text() == _seal_text(library)
    except OSError:
        return False


def _discard(library: Path) -> None:
    for path in (library, _seal_path(library)):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


_libraries: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def library_of(fn: ca.Function) -> Path | None:
    """The shared library a Function returned by :func:`compile_function` was loaded from,
    or None (a Function evaluated in casadi's virtual machine). Its C entry point is named
    ``fn.name()``, with casadi's calling convention (``<name>_work`` gives the sizes of
    its work arrays); native loops such as :mod:`mbmodel.explicit` call it directly.

    Example::

        fast = compile_function(f)
        library_of(fast)   # PosixPath('~/.cache/mbmodel/codegen/<sha256>.so')
    """
    return _libraries.get(fn)


def compile_source(source: str, *, cache_dir=None, compiler=None) -> Path | None:
    """Build hand-written C ``source`` into a shared library, cached like generated code
    (the file name is the sha256 of the text, the compiler and its flags), and return its
    path; None, with a :class:`CodegenWarning`, when no compiler is found or the build
    fails. For mbmodel's own runtimes (e.g. the integrator of :mod:`mbmodel.explicit`),
    loaded with ``ctypes``.

    Example::

        path = compile_source("int twice(int a) { return 2 * a; }")
        ctypes.CDLL(str(path)).twice(21)   # 42
    """
    command = compiler_command(compiler)
    if command is None:
        warnings.warn(_no_compiler(compiler), CodegenWarning, stacklevel=2)
        return None
    flags = ("-O2", *_accepted_host_flags(command, tuned=True))
    library = _library_path(source, command, flags, cache_dir)
    if library.exists() and not _intact(library):
        _discard(library)   # (cut short or changed: loading it could kill the process)
    if not library.exists():
        failed = _build(source, library, command, flags, False)
        if failed is not None:
            reason, details = failed
            warnings.warn(reason + (f":\n{details}" if details else ""), CodegenWarning,
                          stacklevel=2)
            return None
    return library


def _no_compiler(compiler) -> str:
    wanted = compiler or os.environ.get("CC") or "cc or gcc"
    return f"C compiler {wanted!r} not found"


def _library_path(source: str, command, flags, cache_dir) -> Path:
    """Where the library of ``source`` built by ``command`` with ``flags`` is cached: its
    name is the sha256 of all three, and of the CPU's features where the flags ask for code
    for this CPU (``-march=native``)."""
    host = [_cpu_features() or ""] if "-march=native" in flags else []
    key = hashlib.sha256("\0".join([source, *command, *flags, *host]).encode()).hexdigest()
    directory = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return directory / f"{key}.so"


def _build(source, library: Path, command, flags, verbose) -> tuple[str, str] | None:
    """Build ``library``; None when it worked, else the reason and the compiler's output."""
    try:
        library.parent.mkdir(parents=True, exist_ok=True)
        _build_shared_library(source, library, command, flags, verbose)
    except _BuildError as err:
        return err.reason, err.compiler_output
    except OSError as err:
        return f"building {library} failed: {err}", ""
    return None


_accepted: dict[tuple, tuple] = {}


def _accepted_host_flags(command, tuned: bool = False) -> tuple[str, ...]:
    """:func:`host_flags` if ``command`` compiles a trivial file with them (checked once per
    compiler, kind and process), else none: a compiler that refuses them must not leave
    every model in the virtual machine."""
    key = (tuple(command), tuned)
    if key not in _accepted:
        flags = host_flags(tuned)
        ok = bool(flags)
        if ok:
            try:
                proc = subprocess.run([*command, *flags, "-x", "c", "-c", "-",
                                       "-o", os.devnull], input="int f(void){return 0;}\n",
                                      capture_output=True, text=True, timeout=60)
                ok = proc.returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
        _accepted[key] = flags if ok else ()
    return _accepted[key]

# casadi op codes grouped by what they cost; OP_TWICE is generated as (2.*x).
_MUL_OPS = {ca.OP_MUL, ca.OP_DIV, ca.OP_INV, ca.OP_SQ, ca.OP_TWICE}
_ADD_OPS = {ca.OP_ADD, ca.OP_SUB, ca.OP_NEG}
_NOT_ARITHMETIC = {ca.OP_CONST, ca.OP_INPUT, ca.OP_OUTPUT, ca.OP_PARAMETER, ca.OP_ASSIGN}


def operation_counts(fn: ca.Function) -> dict:
    """Count the arithmetic operations an SX Function performs per call.

    ``mul`` counts multiplications, divisions, reciprocals, squares and doublings; ``add``
    counts additions, subtractions and negations; ``other`` counts everything else that
    computes (sin, sqrt, pow, comparisons, if_else, ...). ``total`` is ``mul + add``.
    Loading inputs, constants and storing outputs are not counted.

    Example::

        x, y = ca.SX.sym("x"), ca.SX.sym("y")
        f = ca.Function("f", [x, y], [x * y + ca.sin(x)])
        operation_counts(f)   # {'mul': 1, 'add': 1, 'other': 1, 'total': 2}
    """
    if not fn.is_a("SXFunction"):
        raise TypeError(f"operation_counts needs an SX Function, got {fn.class_name()} {fn.name()!r}")
    mul = add = other = 0
    for k in range(fn.n_instructions()):
        op = fn.instruction_id(k)
        if op in _MUL_OPS:
            mul += 1
        elif op in _ADD_OPS:
            add += 1
        elif op not in _NOT_ARITHMETIC:
            other += 1
    return {"mul": mul, "add": add, "other": other, "total": mul + add}


_background_lock = threading.Lock()
_background_builds: set[str] = set()
#: Libraries whose background build failed: ``(reason, compiler output)`` until the next
#: request for them reports it, then ``()``. Neither is built in the background again in
#: this process (a failing compiler would otherwise run again on every request, unseen).
_background_failed: dict[str, tuple] = {}
#: Per Function, the libraries of it (without and with its derivative: ``derivatives``)
#: whose background build failed (see :func:`build_failed`).
_failed_functions: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def build_failed(fn: ca.Function, derivatives: bool = False) -> bool:
    """Whether a background build of ``fn``'s library (with its forward derivative:
    ``derivatives``) failed (reported with a :class:`CodegenWarning`):
    ``compile_function(fn, background=True, derivatives=...)`` keeps returning ``fn``, and
    a caller may keep it rather than ask again. The other library of ``fn`` is not
    concerned.

    Example: ``if build_failed(source, derivatives=True): keep_the_virtual_machine()``"""
    with _background_lock:
        return derivatives in _failed_functions.get(fn, ())


def _build_in_background(source, library: Path, command, flags) -> None:
    """Start building ``library`` in a daemon thread unless that is already under way.
    A failure is reported by the next request for the library (:func:`compile_function`)."""
    with _background_lock:
        if str(library) in _background_builds:
            return
        _background_builds.add(str(library))

    def build():
        try:
            failed = _build(source, library, command, flags, False)
            if failed is not None:
                with _background_lock:
                    _background_failed[str(library)] = tuple(failed)
        finally:
            with _background_lock:
                _background_builds.discard(str(library))

    threading.Thread(target=build, name=f"mbmodel-codegen-{library.stem[:12]}",
                     daemon=True).start()


class _BuildError(Exception):
    def __init__(self, reason: str, compiler_output: str):
        super().__init__(reason)
        self.reason = reason
        self.compiler_output = compiler_output


def compiler_command(compiler) -> list[str] | None:
    """The compiler as an argument list with its executable resolved, or None if missing
    (``compiler``: a command such as ``"ccache gcc"``; None: ``$CC``, else ``cc`` or ``gcc``).

    Example: ``compiler_command(None)   # ['/usr/bin/cc']``"""
    if compiler is None:
        compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            return None
    command = shlex.split(str(compiler)) if isinstance(compiler, str) else [str(c) for c in compiler]
    if not command:
        return None
    executable = shutil.which(command[0])
    if executable is None:
        return None
    return [executable, *command[1:]]


#: Per Function, what writes its C instead of casadi's code generator (see
#: :func:`register_source`).
_sources: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def register_source(fn: ca.Function, generate) -> None:
    """Have ``generate(fn, derivatives)`` write the C of ``fn`` (and of its forward
    derivative ``fwd1_<name>`` when ``derivatives``) for :func:`compile_function`, in place
    of casadi's code generator: for a Function whose C is better written from what made it
    (the kernel schedule of :mod:`mbmodel.schedule`). The C must export what casadi's does
    for ``fn``; ``generate`` returns None where it cannot, and casadi's C is used. (It is
    given ``fn`` rather than holding it: a registered Function is freed with its users.)

    Example: ``register_source(fn, lambda f, derivatives: my_c_source(f, derivatives))``"""
    _sources[fn] = generate


def _generate_c(fn: ca.Function, derivatives: bool = False) -> str:
    generate = _sources.get(fn)
    if generate is not None:
        source = generate(fn, derivatives)
        if source is not None:
            return source
    return casadi_c(fn, derivatives)


def casadi_c(fn: ca.Function, derivatives: bool = False) -> str:
    """casadi's C of ``fn`` (and of its forward derivative when ``derivatives``), with the
    functions that only call others marked for -O1 (see :func:`_dispatchers_at_o1`).

    Example: ``print(casadi_c(ca.Function("f", [x], [2 * x]))[:200])``"""
    generator = ca.CodeGenerator(f"{GENERATOR_NAME}.c", {"with_header": False})
    generator.add(fn)
    if derivatives:
        generator.add(fn.forward(1))
    return _dispatchers_at_o1(generator.dump())


#: Put before the functions that only call others (see :func:`_dispatchers_at_o1`).
_DISPATCH_MACRO = "MBMODEL_DISPATCH"
_DISPATCH_DEFINITION = f"""
/* Functions that only pass values between the functions they call: gcc at -O1 (when the
   file is optimized more) takes a quarter less time on them, for the same code speed. */
#if defined(__OPTIMIZE__) && defined(__GNUC__) && !defined(__clang__)
#define {_DISPATCH_MACRO} __attribute__((optimize("O1")))
#else
#define {_DISPATCH_MACRO}
#endif
"""
_FUNCTION_START = re.compile(r"^static int (casadi_f\d+)\(const casadi_real\*\* arg", re.M)
_CALL = re.compile(r"if \(casadi_f\d+\(arg1, res1, iw, w, ")


def _dispatchers_at_o1(source: str) -> str:
    """``source`` with its dispatchers marked for gcc's -O1: the generated functions that
    call other generated functions (an MX Function of kernel calls, :mod:`mbmodel.kernels`,
    and its forward derivative). They hold one statement per call and passed value, tens of
    thousands in a long chain, and gcc's register allocation on them is most of its time at
    -O2 (a 200-link chain with its forward derivative: 15.1 s, 10.9 s with this; the code
    runs as fast and computes the same bits). Kernels keep the file's level."""
    marked = [m.start() for m in _FUNCTION_START.finditer(source)
              if _CALL.search(source, m.end(), source.find("\n}\n", m.end()))]
    if not marked:
        return source
    # (the macro is defined at file scope just before the first of them)
    pieces = [source[:marked[0]], _DISPATCH_DEFINITION.lstrip("\n")]
    for start, end in zip(marked, marked[1:] + [len(source)]):
        pieces += [f"{_DISPATCH_MACRO} ", source[start:end]]
    return "".join(pieces)


def _build_shared_library(source: str, library: Path, command: list[str], flags: tuple,
                          verbose: bool) -> None:
    """Compile ``source`` into ``library``, which appears complete or not at all."""
    directory = library.parent
    # Unique temporary names let concurrent builders of the same key not clobber each
    # other; os.replace then publishes whichever finishes first (both are identical).
    fd, c_tmp = tempfile.mkstemp(prefix=library.stem + ".", suffix=".c", dir=directory)
    so_fd, so_tmp = tempfile.mkstemp(prefix=library.stem + ".", suffix=".so.tmp", dir=directory)
    os.close(so_fd)
    seal_fd, seal_tmp = tempfile.mkstemp(prefix=library.stem + ".", suffix=".sha256.tmp",
                                         dir=directory)
    os.close(seal_fd)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(source)
        args = [*command, *flags, "-shared", "-fPIC", "-o", so_tmp, c_tmp, "-lm"]
        if verbose:
            print("mbmodel.codegen:", " ".join(shlex.quote(a) for a in args))
        proc = subprocess.run(args, capture_output=True, text=True)
        if proc.returncode != 0:
            raise _BuildError(
                f"{command[0]} exited with status {proc.returncode} building {library}",
                truncated_output((proc.stderr or proc.stdout).strip()))
        # its record first, then the library: a reader that finds the library finds the
        # record (a concurrent builder's identical record may replace it)
        Path(seal_tmp).write_text(_seal_text(so_tmp))
        os.replace(seal_tmp, _seal_path(library))
        os.replace(so_tmp, library)
        # Keep the source next to the library for inspection; not needed for loading.
        os.replace(c_tmp, library.with_suffix(".c"))
    finally:
        for leftover in (c_tmp, so_tmp, seal_tmp):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass


def truncated_output(text: str) -> str:
    """A compiler's output cut to what a message shows (the rest counted).

    Example: ``warnings.warn(f"gcc failed: {truncated_output(proc.stderr)}")``"""
    if len(text) <= _MAX_STDERR_CHARS:
        return text
    return text[:_MAX_STDERR_CHARS] + f"\n... ({len(text) - _MAX_STDERR_CHARS} more characters)"


def _fall_back(reason: str, fn: ca.Function, details: str = "") -> None:
    message = (f"{reason}; function {fn.name()!r} is evaluated in casadi's virtual machine "
               "instead of compiled C")
    if details:
        message += f". Compiler output:\n{details}"
    warnings.warn(message, CodegenWarning, stacklevel=3)
