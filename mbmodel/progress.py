"""Progress bars over simulated time and over runs (tqdm, the ``sweep`` extra)."""

from __future__ import annotations

import time

__all__ = ["time_bar", "run_bar"]

#: A bar appears only once a run has taken this many seconds: short runs stay quiet.
DELAY_S = 1.0


def _tqdm(progress, what):
    if progress is False or progress is None:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if progress is True:
            raise ImportError(f"progress=True needs tqdm for the {what}: "
                              f"pip install 'mbmodel[sweep]'") from None
        return None
    return tqdm


def time_bar(progress, t_start: float, t_end: float, name: str = "simulate"):
    """``update(t)`` moving a bar over simulated time from ``t_start`` to ``t_end``, with
    ``update.close()``; None when ``progress`` is False. The bar (and tqdm) is only made
    once the run has taken :data:`DELAY_S`: a short run pays a clock reading per update."""
    if progress is False or progress is None:
        return None
    if progress is True:
        _tqdm(True, "simulation")  # missing tqdm is said now, not a second into the run
    span = float(t_end - t_start)
    started = time.perf_counter()
    made = []  # the bar, once made (or None: "auto" without tqdm)

    def update(t: float):
        if not made:
            if time.perf_counter() - started < DELAY_S:
                return
            tqdm = _tqdm(progress, "simulation")
            made.append(None if tqdm is None else tqdm(total=span, desc=name, bar_format=(
                "{desc}: {percentage:3.0f}%|{bar}| {n:.4g}/{total:.4g} s simulated "
                "[{elapsed}<{remaining}]")))
        bar = made[0]
        done = min(max(float(t) - t_start, 0.0), span)
        if bar is not None and done > bar.n:
            bar.update(done - bar.n)

    def close():
        if made and made[0] is not None:
            made[0].close()
    update.close = close
    return update


def run_bar(progress, total: int, name: str = "sweep"):
    """A tqdm bar counting ``total`` runs, or None (see :func:`time_bar`)."""
    tqdm = _tqdm(progress, "sweep")
    return None if tqdm is None else tqdm(total=total, desc=name, unit="run")
