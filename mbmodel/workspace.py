"""Per-thread solver objects of a compiled model.

casadi integrators and rootfinders keep state between calls, so two threads must never share
one; building them costs more than using them, so each thread keeps its own for every
compiled model it runs (a parameter sweep re-uses them). The compiled model itself stays
plain data: the objects live here, keyed weakly by the model, and go with it.
"""

from __future__ import annotations

import threading
import weakref

_lock = threading.Lock()
_locals: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

#: Objects kept per compiled model, thread and kind (oldest dropped first) ...
MAX_PER_KIND = 16
#: ... and the memory they may hold together, as measured when each was built (an
#: integrator of a 100-body chain holds hundreds of MB of symbolic Jacobian).
MAX_BYTES_PER_KIND = 1 << 30



class _Cache(dict):
    """A workspace cache: a dict that also records what each entry took to build."""

    def __init__(self):
        super().__init__()
        self.sizes = {}


def workspace(cm, kind: str) -> dict:
    """This thread's cache of ``kind`` (e.g. ``"integrators"``) for the compiled model."""
    with _lock:
        local = _locals.get(cm)
        if local is None:
            local = _locals[cm] = threading.local()
    caches = local.__dict__.setdefault("caches", {})
    return caches.setdefault(kind, _Cache())


def resident_bytes() -> int:
    """This process's resident memory now (0 where /proc is not available)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


try:
    import os as _os
    _PAGE = _os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
    _PAGE = 4096


def built(cache: dict, key, factory):
    """The cache's entry for ``key``, or else ``factory()``, stored with the memory its
    construction took; the oldest entries are dropped while the cache holds too many or
    too much."""
    value = cache.get(key)
    if value is not None:
        return value
    before = resident_bytes()
    value = factory()
    return remember(cache, key, value, max(0, resident_bytes() - before))


def remember(cache: dict, key, value, nbytes: int = 0, limit: int | None = None):
    """Store ``value`` (which took ``nbytes`` to build) in a workspace cache, dropping the
    oldest entries when it is full in count (``limit`` entries, default
    :data:`MAX_PER_KIND`) or in memory."""
    sizes = cache.sizes if isinstance(cache, _Cache) else {}
    while cache and (len(cache) >= (MAX_PER_KIND if limit is None else limit)
                     or sum(sizes.values()) + nbytes > MAX_BYTES_PER_KIND):
        oldest = next(iter(cache))
        cache.pop(oldest)
        sizes.pop(oldest, None)
    cache[key] = value
    sizes[key] = nbytes
    return value
