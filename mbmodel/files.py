"""Files written whole or not at all: a temporary file in the target's directory, renamed over
the target when complete (``os.replace`` is atomic on POSIX and Windows). A writer killed
half-way leaves the previous file intact instead of a truncated one."""

from __future__ import annotations

import contextlib
import os
import tempfile


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", **open_options):
    """Open a temporary file next to ``path``; on success it replaces ``path``.

    Example::

        with atomic_write("run.csv", newline="") as fh:
            fh.write("time,x\\n")
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                         dir=directory)
    try:
        with os.fdopen(handle, mode, **open_options) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
