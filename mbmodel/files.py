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
        # mkstemp makes the file private (0600); the result gets the mode a plain open()
        # would give it: the replaced file's, else 0666 less the umask.
        os.chmod(temporary, _mode_for(path))
        with os.fdopen(handle, mode, **open_options) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _mode_for(path) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where /proc tells it (os.umask can only
    read it by setting it, which races with other threads)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
