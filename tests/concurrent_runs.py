"""Running test work in several threads at once (thread-safety tests)."""

from __future__ import annotations

import threading


def in_threads(work, args) -> list:
    """``work(arg)`` for every ``arg``, each in its own thread, all started before any is
    joined; returns the ``(arg, exception)`` pairs of those that raised."""
    errors = []

    def guarded(arg):
        try:
            work(arg)
        except Exception as exc:  # noqa: BLE001 - returned to the test, which asserts none
            errors.append((arg, exc))

    threads = [threading.Thread(target=guarded, args=(arg,)) for arg in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors
