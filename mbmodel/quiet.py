"""casadi's own lines on stderr, held back where mbmodel says what happened itself.

SUNDIALS and KINSOL print a line for every failed step or solve ("At t = 0.59, repeated
recoverable residual errors.", KINSOL's flag warning) through casadi, whatever their
options say. mbmodel catches those failures: it recovers (a new state choice, BDF after
Adams, the next rootfinder) or raises an error that explains them. Their raw lines would
only come first, out of context, also in runs that succeed.

casadi writes them to Python's ``sys.stderr``; while a thread runs inside
:func:`casadi_lines_dropped`, what that thread writes there is dropped, and what other
threads write passes. mbmodel's own Python code called inside the block (a solver written
in Python among casadi's) shows its warnings through :func:`lines_shown`.

Example::

    with casadi_lines_dropped():
        out = integrator(x0=x, p=p)   # a failure raises RuntimeError, without the lines
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

__all__ = ["casadi_lines_dropped", "lines_shown"]

_lock = threading.Lock()
_local = threading.local()
_filter = None   # the stream installed as sys.stderr while any thread holds lines back
_holders = 0


class _ThreadFilter:
    """``sys.stderr`` for every thread, except that writes from a thread inside
    :func:`casadi_lines_dropped` are dropped."""

    def __init__(self, original):
        self.original = original

    def write(self, text):
        if getattr(_local, "depth", 0):
            return len(text)
        return self.original.write(text)

    def __getattr__(self, name):
        return getattr(self.original, name)


@contextmanager
def casadi_lines_dropped():
    """Drop what this thread writes to ``sys.stderr`` inside the block (casadi's lines
    about failures mbmodel handles); other threads' writes pass."""
    global _filter, _holders
    with _lock:
        if _holders == 0:
            _filter = _ThreadFilter(sys.stderr)
            sys.stderr = _filter
        _holders += 1
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1
        with _lock:
            _holders -= 1
            if _holders == 0:
                if sys.stderr is _filter:   # unless someone replaced it meanwhile
                    sys.stderr = _filter.original
                _filter = None


@contextmanager
def lines_shown():
    """Inside :func:`casadi_lines_dropped`, let this thread's writes to ``sys.stderr`` pass
    again (a Python warning mbmodel itself raises there)."""
    depth = getattr(_local, "depth", 0)
    _local.depth = 0
    try:
        yield
    finally:
        _local.depth = depth
