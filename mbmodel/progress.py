"""Progress bars over simulated time and over runs (tqdm, the ``sweep`` extra)."""

from __future__ import annotations

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
    ``update.close()``; None when ``progress`` is False (or "auto" without tqdm)."""
    tqdm = _tqdm(progress, "simulation")
    if tqdm is None:
        return None
    span = float(t_end - t_start)
    bar = tqdm(total=span, desc=name, delay=DELAY_S, bar_format=(
        "{desc}: {percentage:3.0f}%|{bar}| {n:.4g}/{total:.4g} s simulated "
        "[{elapsed}<{remaining}]"))

    def update(t: float):
        done = min(max(float(t) - t_start, 0.0), span)
        if done > bar.n:
            bar.update(done - bar.n)
    update.close = bar.close
    return update


def run_bar(progress, total: int, name: str = "sweep"):
    """A tqdm bar counting ``total`` runs, or None (see :func:`time_bar`)."""
    tqdm = _tqdm(progress, "sweep")
    return None if tqdm is None else tqdm(total=total, desc=name, unit="run")
