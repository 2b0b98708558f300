"""Values given to the API checked at the door: a number where one is expected, a vector of
the right length and finite, else the caller's error class with what was given."""

from __future__ import annotations

import numpy as np

from .errors import SimulationError


def scalar(value, what: str, error) -> float:
    """``value`` as one float, or ``error`` saying what was given instead.

    Example: ``scalar("1k", "params['r.R']", ParameterError)`` raises
    *params['r.R'] must be a number, not '1k'*."""
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise error(f"{what} must be a number, not {value!r}")
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise error(f"{what} must be a number, not {value!r}") from None
    if array.size != 1:
        hint = (" (the entries of an array parameter are set one by one, by their scalar "
                "names)" if what.startswith("params") else "")
        raise error(f"{what} must be one number, not an array of shape {array.shape}{hint}")
    return float(array.reshape(-1)[0])


def vector(value, n: int, what: str, names: list[str]) -> np.ndarray:
    """``value`` as ``n`` finite floats ordered like ``names``, or a SimulationError.

    Example: ``vector(x0, len(cm.states), "x0", cm.states)``"""
    try:
        array = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        array = None
    if array is None or array.shape != (n,) or not np.all(np.isfinite(array)):
        count = "1 finite number" if n == 1 else f"{n} finite numbers"
        order = f" ordered like {', '.join(names[:4])}{'...' if n > 4 else ''}" if n > 1 else (
            f" (for {names[0]})" if n == 1 and names else "")
        raise SimulationError(f"{what} must be {count}{order}, not {value!r}")
    return array
