"""Tests of mbmodel.codegen: compiled functions match casadi's virtual machine, libraries
are cached by content hash, a missing compiler falls back with a warning, and operation
counts are exact."""

import os
import shutil
import subprocess
import warnings

import casadi as ca
import numpy as np
import pytest

import mbmodel as mb
from mbmodel import Fixed, connect
from mbmodel import codegen
from mbmodel.codegen import CodegenWarning, compile_function, operation_counts
from mbmodel.libraries import rotational as rot

needs_compiler = pytest.mark.skipif(
    not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")),
    reason="no C compiler on this machine")


def several_input_function():
    """Non-trivial function of a vector, a matrix and a scalar, with two outputs."""
    x = ca.SX.sym("x", 3)
    m = ca.SX.sym("m", 2, 3)
    s = ca.SX.sym("s")
    first = ca.mtimes(m, x) * s + ca.sin(x[0:2]) / (1 + x[2] ** 2)
    second = ca.sqrt(ca.sumsqr(x) + s ** 2) + ca.exp(-s) * ca.cos(m[0, 1]) - ca.fmax(x[1], s)
    return ca.Function("mixed", [x, m, s], [first, second], ["x", "m", "s"], ["first", "second"])


class DampedOscillator(mb.Model):
    fixed = rot.Fixed(phi0=0.1)
    spring_damper = rot.SpringDamper(c=40.0, d=0.4, phi_rel0=0.05)
    inertia = rot.Inertia(J=0.1, phi=Fixed(0.4), w=Fixed(0.0))

    def equations(self):
        yield connect(self.fixed.flange, self.spring_damper.flange_a)
        yield connect(self.spring_damper.flange_b, self.inertia.flange_a)


def compile_quietly(fn, **kw):
    """compile_function, turning any CodegenWarning into a test failure."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CodegenWarning)
        return compile_function(fn, **kw)


def so_files(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".so"))


# --------------------------------------------------------------------------------------
# Same numbers as the virtual machine
# --------------------------------------------------------------------------------------

@needs_compiler
def test_compiled_function_matches_virtual_machine(tmp_path):
    fn = several_input_function()
    fast = compile_quietly(fn, cache_dir=tmp_path)
    assert fast is not fn
    assert fast.class_name() == "External"
    assert fast.name_in() == fn.name_in() and fast.name_out() == fn.name_out()
    rng = np.random.default_rng(0)
    for _ in range(20):
        args = [rng.normal(size=(3, 1)), rng.normal(size=(2, 3)), rng.normal()]
        for got, want in zip(fast(*args), fn(*args)):
            np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-13, atol=1e-14)
    # Keyword calls use the preserved input/output names.
    args = dict(x=[1.0, -2.0, 0.5], m=np.arange(6.0).reshape(2, 3), s=0.3)
    np.testing.assert_allclose(np.array(fast(**args)["second"]), np.array(fn(**args)["second"]),
                               rtol=1e-14)


@needs_compiler
def test_compiled_model_ode_matches_virtual_machine(tmp_path):
    cm = mb.compile(DampedOscillator())
    assert cm.states == ["inertia.phi", "inertia.w"]
    fast = compile_quietly(cm.ode, cache_dir=tmp_path)
    assert fast is not cm.ode
    rng = np.random.default_rng(1)
    n_p = len(cm.parameters)
    z, u = np.zeros(0), np.zeros(0)
    for _ in range(20):
        x = rng.normal(size=2)
        p = rng.uniform(0.1, 50.0, size=n_p)
        t = rng.uniform(0.0, 10.0)
        np.testing.assert_allclose(np.array(fast(x, z, u, p, t)),
                                   np.array(cm.ode(x, z, u, p, t)), rtol=1e-13, atol=1e-13)
    # One hand-checked point: phi' = w, w' = -(c*(phi - phi0 - phi_rel0) + d*w)/J.
    p = cm.parameter_vector()
    phi, w = 0.4, 1.5
    xdot = np.array(fast([phi, w], z, u, p, 0.0)).ravel()
    assert xdot[0] == pytest.approx(w, rel=1e-14)
    assert xdot[1] == pytest.approx(-(40.0 * (phi - 0.15) + 0.4 * w) / 0.1, rel=1e-12)
    # The output function of the same model compiles too and agrees.
    fast_y = compile_quietly(cm.output_function, cache_dir=tmp_path)
    np.testing.assert_allclose(np.array(fast_y([phi, w], z, u, p, 0.0)),
                               np.array(cm.output_function([phi, w], z, u, p, 0.0)), rtol=1e-14)


# --------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------

@needs_compiler
def test_second_call_reuses_cached_library(tmp_path, monkeypatch):
    fn = several_input_function()
    first = compile_quietly(fn, cache_dir=tmp_path)
    built = so_files(tmp_path)
    assert len(built) == 1
    assert built[0] == f"{built[0][:64]}.so" and len(built[0]) == 67  # sha256 hex + ".so"
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]

    def no_compiler(*args, **kwargs):
        raise AssertionError(f"compiler invoked although the library is cached: {args}")

    monkeypatch.setattr(subprocess, "run", no_compiler)
    again = compile_quietly(fn, cache_dir=tmp_path)
    assert so_files(tmp_path) == built
    # A function rebuilt from scratch with identical expressions hits the same cache entry.
    rebuilt = compile_quietly(several_input_function(), cache_dir=tmp_path)
    assert so_files(tmp_path) == built
    args = [[0.1, 0.2, 0.3], np.ones((2, 3)), 2.0]
    for f in (again, rebuilt):
        np.testing.assert_array_equal(np.array(f(*args)[1]), np.array(first(*args)[1]))


@needs_compiler
def test_different_code_or_flags_get_different_libraries(tmp_path):
    x = ca.SX.sym("x")
    # Same function name, different bodies: both libraries load side by side correctly.
    plus = compile_quietly(ca.Function("f", [x], [x + 1]), cache_dir=tmp_path)
    minus = compile_quietly(ca.Function("f", [x], [x - 1]), cache_dir=tmp_path)
    assert float(plus(5.0)) == 6.0
    assert float(minus(5.0)) == 4.0
    assert len(so_files(tmp_path)) == 2
    compile_quietly(ca.Function("f", [x], [x + 1]), cache_dir=tmp_path, flags=("-O2",))
    assert len(so_files(tmp_path)) == 3
    # the optimisation level of the default flags is part of the key too
    level2 = compile_quietly(ca.Function("f", [x], [x + 1]), cache_dir=tmp_path, optimize=2)
    assert float(level2(5.0)) == 6.0 and len(so_files(tmp_path)) == 4
    assert codegen.library_of(level2) not in (codegen.library_of(plus), None)


@needs_compiler
def test_code_for_this_cpu_is_cached_for_this_cpu_only(tmp_path, monkeypatch):
    """A library built with -march=native runs only on a CPU with the builder's features:
    one with other features that shares the cache must build its own, not load it."""
    x = ca.SX.sym("x")
    fn = ca.Function("f", [x], [x * x + 1])
    compile_quietly(fn, cache_dir=tmp_path, flags=("-O2", "-march=native"))
    compile_quietly(fn, cache_dir=tmp_path, flags=("-O2", "-march=native"))
    assert len(so_files(tmp_path)) == 1
    features = codegen._cpu_features()
    monkeypatch.setattr(codegen, "_cpu_features_read", [(features or "") + " another"])
    other_cpu = compile_quietly(fn, cache_dir=tmp_path, flags=("-O2", "-march=native"))
    assert float(other_cpu(3.0)) == 10.0 and len(so_files(tmp_path)) == 2
    # flags for any x86-64 CPU (-mfma is checked when the host flags are chosen) do not
    # name this CPU: machines that share the cache share the library
    compile_quietly(fn, cache_dir=tmp_path, flags=("-O2",))
    monkeypatch.setattr(codegen, "_cpu_features_read", [features])
    compile_quietly(fn, cache_dir=tmp_path, flags=("-O2",))
    assert len(so_files(tmp_path)) == 3


def test_tuned_host_flags_ask_for_this_cpu_where_it_has_fma(monkeypatch):
    import platform
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(codegen, "_cpu_features_read", ["avx2 fma sse2"])
    assert codegen.host_flags() == ("-ffp-contract=fast", "-mfma")
    assert codegen.host_flags(tuned=True) == ("-march=native", "-ffp-contract=fast")
    monkeypatch.setattr(codegen, "_cpu_features_read", ["sse2 sse4_2"])
    assert codegen.host_flags() == () and codegen.host_flags(tuned=True) == ()
    monkeypatch.setattr(codegen, "_cpu_features_read", [None])  # /proc/cpuinfo unreadable
    assert codegen.host_flags(tuned=True) == ()


@needs_compiler
def test_default_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MBMODEL_CACHE", str(tmp_path / "cache"))
    assert codegen.default_cache_dir() == tmp_path / "cache"
    x = ca.SX.sym("x")
    fast = compile_quietly(ca.Function("cube", [x], [x ** 3]))
    assert float(fast(2.0)) == 8.0
    assert len(so_files(tmp_path / "cache")) == 1


# --------------------------------------------------------------------------------------
# Fallback to the virtual machine
# --------------------------------------------------------------------------------------

def test_missing_compiler_warns_and_falls_back(tmp_path):
    fn = several_input_function()
    with pytest.warns(CodegenWarning, match=r"/nonexistent/cc.*not found.*virtual machine"):
        result = compile_function(fn, cache_dir=tmp_path, compiler="/nonexistent/cc")
    assert result is fn
    out = result([1.0, 2.0, 3.0], np.eye(2, 3), 0.5)
    np.testing.assert_allclose(np.array(out[0]).ravel(),
                               [0.5 + np.sin(1.0) / 10.0, 1.0 + np.sin(2.0) / 10.0], rtol=1e-14)
    assert list(tmp_path.iterdir()) == []


@needs_compiler
def test_failed_build_warns_with_compiler_output(tmp_path):
    x = ca.SX.sym("x")
    fn = ca.Function("g", [x], [2 * x])
    with pytest.warns(CodegenWarning) as record:
        result = compile_function(fn, cache_dir=tmp_path, flags=("-Wthis-flag-does-not-exist",))
    assert result is fn
    message = str(record[0].message)
    assert "exited with status" in message and "virtual machine" in message
    assert "this-flag-does-not-exist" in message  # the compiler's own complaint
    assert float(result(3.0)) == 6.0
    assert so_files(tmp_path) == []
    assert list(tmp_path.iterdir()) == []  # temporaries cleaned up


# --------------------------------------------------------------------------------------
# Operation counts
# --------------------------------------------------------------------------------------

def test_operation_counts_hand_checked():
    x, y = ca.SX.sym("x"), ca.SX.sym("y")
    assert operation_counts(ca.Function("f", [x, y], [x * y + ca.sin(x)])) == {
        "mul": 1, "add": 1, "other": 1, "total": 2}
    # x/y, x*x (stored as sq), 1/y (stored as inv): 3 mul; +, -, + in the first output and
    # two subtractions in the second (casadi rewrites -x + cos(y) as cos(y) - x): 5 add;
    # sqrt and cos: 2 other; the constant 1 is not counted.
    f = ca.Function("g", [x, y], [x / y + x * x - ca.sqrt(x) + 1 / y, -x + ca.cos(y) - y])
    assert operation_counts(f) == {"mul": 3, "add": 5, "other": 2, "total": 8}
    # Negation counts as add, doubling (2.*x) as mul, x**3 as sq plus a product.
    assert operation_counts(ca.Function("h", [x], [-ca.exp(x), 2 * x, x ** 3])) == {
        "mul": 3, "add": 1, "other": 1, "total": 4}


def test_operation_counts_of_model_ode():
    cm = mb.compile(DampedOscillator())
    counts = operation_counts(cm.ode)
    # w' = -(c*(phi - phi0 - phi_rel0) + d*w)/J in some arrangement: products and sums only.
    assert counts["other"] == 0
    assert counts["mul"] >= 3 and counts["add"] >= 3
    assert counts["total"] == counts["mul"] + counts["add"]


def test_operation_counts_rejects_mx():
    a = ca.MX.sym("a")
    with pytest.raises(TypeError, match="SX Function"):
        operation_counts(ca.Function("m", [a], [2 * a]))
