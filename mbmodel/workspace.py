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

#: Objects kept per compiled model, thread and kind (oldest dropped first).
MAX_PER_KIND = 16


def workspace(cm, kind: str) -> dict:
    """This thread's cache of ``kind`` (e.g. ``"integrators"``) for the compiled model."""
    with _lock:
        local = _locals.get(cm)
        if local is None:
            local = _locals[cm] = threading.local()
    caches = local.__dict__.setdefault("caches", {})
    return caches.setdefault(kind, {})


def remember(cache: dict, key, value):
    """Store ``value`` in a workspace cache, dropping the oldest entry when it is full."""
    if len(cache) >= MAX_PER_KIND:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value
