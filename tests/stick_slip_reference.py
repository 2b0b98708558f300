"""Independent reference solution of the stick-slip "mass on a moving belt" problem
(test helper, not a test module; deliberately uses only numpy/scipy, never mbmodel).

A mass m at position s (s = 0: spring unstretched), velocity v, is tied to a wall by a
spring c (force -c*s) and a damper d (force -d*v) and lies on a belt moving at constant
v_belt > 0.  With w_rel = v - v_belt the friction force on the mass is (MSL
PartialFriction conventions)

* 'forward'  (w_rel > 0): f = -F_coulomb
* 'backward' (w_rel < 0): f = +F_coulomb
* 'stuck'    (w_rel = 0): f = c*s + d*v_belt (whatever keeps the acceleration zero),
  allowed while |f| <= peak*F_coulomb.

A sliding mass whose w_rel crosses zero sticks if the stick force is within the peak,
otherwise it passes straight into sliding the other way (as MSL does).

Caveat: with d = 0 and peak = 1 the sliding mass only grazes w_rel = 0 (zero
acceleration there) instead of crossing it, so no re-stick event is reported; the
trajectory (a pure harmonic oscillation) is still correct.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import solve_ivp

_MAX_SEGMENTS = 100_000


def _stick_force(c, d, v_belt, s):
    return c * s + d * v_belt


def _mode_at_rest(c, d, F_coulomb, peak, v_belt, s):
    """Mode of a mass moving with the belt (w_rel = 0) at position s: stuck while
    |f| <= peak*F (at exactly +peak*F this gives a zero-length stuck phase followed by
    a breakaway at the same instant, like MSL's strict breakaway test), otherwise
    sliding in the direction of the net non-friction force -f."""
    f = _stick_force(c, d, v_belt, s)
    if abs(f) <= peak * F_coulomb:
        return "stuck"
    # direction of the net non-friction force -f
    return "forward" if f < 0 else "backward"


def closed_form_first_breakaway(m, c, d, F_coulomb, peak, v_belt, s0):
    """Breakaway time of a mass that starts stuck (v0 = v_belt): while stuck
    s = s0 + v_belt*t, so c*s + d*v_belt reaches peak*F_coulomb at the returned t1."""
    return (peak * F_coulomb - d * v_belt - c * s0) / (c * v_belt)


def undamped_cycle(m, c, F_coulomb, peak, v_belt):
    """(stick duration, slip duration) of the periodic cycle for d = 0.

    Derivation: stuck, s grows at v_belt until c*s = peak*F, i.e. s_b = peak*F/c.  Then
    w_rel < 0 (net force -(peak-1)*F <= 0), friction is +F and the motion is harmonic
    with w = sqrt(c/m) about s_eq = F/c: x = s - s_eq = A*cos(th), v = -A*w*sin(th),
    starting at x0 = (peak-1)*F/c, v = v_belt, i.e. th0 = -a with
    a = atan2(v_belt/w, x0).  v returns to v_belt at th = pi + a (x = -x0), after
    slip time (pi + 2a)/w, at s = (2-peak)*F/c.  There |c*s| = |2-peak|*F <= peak*F
    for peak >= 1, so the mass sticks again and is carried from (2-peak)*F/c back to
    peak*F/c: stick time 2*(peak-1)*F/(c*v_belt).
    """
    w = math.sqrt(c / m)
    x0 = (peak - 1.0) * F_coulomb / c
    a = math.atan2(v_belt / w, x0)
    return 2.0 * (peak - 1.0) * F_coulomb / (c * v_belt), (math.pi + 2.0 * a) / w


def stick_slip(m, c, d, F_coulomb, peak, v_belt, s0, v0, t_end, rtol=1e-12, atol=1e-12):
    """Piecewise (event-driven) solution on [0, t_end].

    Returns a dict with
    'events': list of (time, new_mode), mode in {'stuck', 'forward', 'backward'},
              starting with the initial mode at t = 0;
    'sol':    callable t -> (s, v); for an array of n times returns shape (2, n),
              for a scalar time shape (2,).
    """
    if v_belt <= 0:
        raise ValueError("v_belt must be > 0")
    w0 = v0 - v_belt
    if w0 > 0:
        mode = "forward"
    elif w0 < 0:
        mode = "backward"
    else:
        mode = _mode_at_rest(c, d, F_coulomb, peak, v_belt, s0)

    t, y = 0.0, np.array([s0, v0], dtype=float)
    events = [(0.0, mode)]
    starts, pieces = [], []  # segment start times and evaluators t -> (2, n)

    for _ in range(_MAX_SEGMENTS):
        starts.append(t)
        if mode == "stuck":
            s_st, t_st = y[0], t
            pieces.append(lambda tt, s_st=s_st, t_st=t_st: np.vstack(
                [s_st + v_belt * (tt - t_st), np.full_like(tt, v_belt)]))
            # closed-form breakaway: the stick force grows linearly in time
            t_b = (t + (peak * F_coulomb - _stick_force(c, d, v_belt, s_st)) / (c * v_belt)
                   if c > 0 else math.inf)
            t_b = max(float(t_b), t)  # roundoff when stuck exactly at the peak
            if t_b >= t_end:
                break
            t, y = t_b, np.array([s_st + v_belt * (t_b - t_st), v_belt])
            mode = "backward"  # net force -(peak*F) < 0 drops the mass behind the belt
            events.append((t, mode))
            continue

        fric = -F_coulomb if mode == "forward" else F_coulomb

        def rhs(_t, yy, fric=fric):
            return [yy[1], (-c * yy[0] - d * yy[1] + fric) / m]

        def w_rel(_t, yy):
            return yy[1] - v_belt

        w_rel.terminal = True
        # Only the crossing that ends this mode counts; a segment that starts at
        # w_rel = 0 (after a stick or pass-through) moves away from zero in the
        # opposite direction, so it is not re-detected.
        w_rel.direction = -1.0 if mode == "forward" else 1.0
        res = solve_ivp(rhs, (t, t_end), y, method="DOP853", rtol=rtol, atol=atol,
                        dense_output=True, events=w_rel)
        if res.status < 0:
            raise RuntimeError(res.message)
        pieces.append(lambda tt, ds=res.sol: ds(tt))
        if res.status == 0 or res.t[-1] >= t_end:
            break
        # solve_ivp already refines the root of w_rel on the dense output (brentq,
        # xtol ~ 4*eps); snap w_rel to exactly zero for the next segment.
        t = float(res.t_events[0][0])
        y = np.array([res.y_events[0][0][0], v_belt])
        # stick, or pass through into the other direction if the peak is exceeded
        mode = _mode_at_rest(c, d, F_coulomb, peak, v_belt, y[0])
        events.append((t, mode))
    else:
        raise RuntimeError("too many stick/slip segments")

    starts_arr = np.array(starts)

    def sol(tq):
        tq = np.asarray(tq, dtype=float)
        ta = np.atleast_1d(tq)
        out = np.empty((2, ta.size))
        # the last segment starting at or before t (zero-length segments are skipped)
        idx = np.clip(np.searchsorted(starts_arr, ta, side="right") - 1, 0, None)
        for k in np.unique(idx):
            sel = idx == k
            out[:, sel] = pieces[k](ta[sel])
        return out[:, 0] if tq.ndim == 0 else out

    return {"events": events, "sol": sol}
