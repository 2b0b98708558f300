"""Events: wall time of models that switch, against scipy's ``solve_ivp`` with event
functions on the same equations, measured in the same run.

Cases:

* **1000 bounces** of a ball (h' = v, v' = -g; at h = 0 falling: v := -e v, e = 0.999 so
  every bounce stays far above the tolerances), run to just after the 1000th impact.
  mbmodel: ``mb.when(h < 0, mb.reinit(v, -e*pre(v)))``; scipy: DOP853 with a terminal
  event, restarted after each bounce.
* **Half-wave rectifier over 1 s** (50 Hz, 10 V, ideal diode Ron = 10 mΩ / Goff = 10 µS,
  C = 100 µF, R = 100 Ω: 50 switch-ons and 50 switch-offs). (With MSL's default
  Ron = 10 µΩ the turn-off, where the diode current and the capacitor's discharge balance
  tangentially, chatters in mbmodel: a known defect, see docs/events.md.) mbmodel:
  ``electrical.IdealDiode``; scipy: Radau (the conducting diode makes it stiff) with the
  diode's characteristic parameter as event function, restarted at each switching.

Both at rtol = 1e-8, atol = 1e-10; times are the best of 3 runs after a warm-up (mbmodel's
compile time is printed separately). The check column compares the last impact time with
its closed form, and the capacitor voltages at 1 s with each other.

Run: ``python benchmarks/events.py``
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.integrate import solve_ivp

import mbmodel as mb
from mbmodel.libraries import electrical as el

G, E, N_BOUNCES = 9.81, 0.999, 1000
RTOL, ATOL = 1e-8, 1e-10


class BouncingBall(mb.Model):
    e = mb.Parameter(E)
    h = mb.Variable(start=1.0, fixed=True)
    v = mb.Variable(start=0.0, fixed=True)
    bounces = mb.Discrete(0)

    def equations(self):
        yield mb.der(self.h) == self.v
        yield mb.der(self.v) == -G
        yield mb.when(self.h < 0, mb.reinit(self.v, -self.e * mb.pre(self.v)),
                      self.bounces == mb.pre(self.bounces) + 1)


class HalfWave(mb.Model):
    src = el.SineVoltage(V=10.0, f=50.0)
    diode = el.IdealDiode(Ron=1e-2)
    cap = el.Capacitor(C=1e-4, v=mb.Fixed(0.0))
    load = el.Resistor(R=100.0)
    ground = el.Ground()

    def equations(self):
        yield mb.connect(self.src.p, self.diode.p)
        yield mb.connect(self.diode.n, self.cap.p, self.load.p)
        yield mb.connect(self.cap.n, self.load.n, self.src.n, self.ground.p)


def impact_times(n):
    v1 = math.sqrt(2 * G)
    times = [math.sqrt(2 / G)]
    for k in range(1, n):
        times.append(times[-1] + 2 * E ** k * v1 / G)
    return np.array(times)


def scipy_ball(t_end):
    """Bounce by bounce: a terminal event on h falling through 0, then v := -e v."""
    def fall(t, y):
        return [y[1], -G]

    def floor(t, y):
        return y[0]
    floor.terminal, floor.direction = True, -1
    t, y, impacts = 0.0, [1.0, 0.0], []
    while t < t_end:
        sol = solve_ivp(fall, (t, t_end), y, method="DOP853", rtol=RTOL, atol=ATOL,
                        events=floor)
        t = sol.t[-1]
        if sol.status != 1:
            break
        impacts.append(t)
        y = [0.0, -E * sol.y_events[0][0][1]]
    return impacts


def scipy_rectifier(t_end, Ron=1e-2, Goff=1e-5, C=1e-4, R=100.0):
    """The diode's parameter s is the voltage drop (off) or the current (on); it switches
    on where the drop rises through 0 and off where the current falls through 0."""
    def rhs(t, y, on):
        drop = 10.0 * math.sin(2 * math.pi * 50.0 * t) - y[0]
        return [((drop / Ron if on else Goff * drop) - y[0] / R) / C]

    t, y, on, switches = 0.0, [0.0], True, 0
    while t < t_end:
        def switch(tt, yy, on=on):
            drop = 10.0 * math.sin(2 * math.pi * 50.0 * tt) - yy[0]
            return drop / Ron if on else drop
        switch.terminal, switch.direction = True, (-1 if on else 1)
        sol = solve_ivp(rhs, (t, t_end), y, args=(on,), method="Radau", rtol=RTOL,
                        atol=ATOL, events=switch)
        t, y = sol.t[-1], sol.y[:, -1]
        if sol.status == 1:
            on, switches = not on, switches + 1
    return float(y[0]), switches


def best_of(fn, runs=3):
    fn()  # warm-up: compiled code and integrators cached
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    rows = []
    impacts = impact_times(N_BOUNCES + 1)
    t_end = 0.5 * (impacts[N_BOUNCES - 1] + impacts[N_BOUNCES])
    t0 = time.perf_counter()
    ball = mb.compile(BouncingBall())
    compile_ball = time.perf_counter() - t0
    t_mb, res = best_of(lambda: ball.simulate(t_end, rtol=RTOL, atol=ATOL))
    t_sp, sp_impacts = best_of(lambda: scipy_ball(t_end))
    mb_impacts = [ev.time for ev in res.events if ev.causes[0].startswith("h < 0")
                  and any(c.startswith("fired") for c in ev.causes)]
    rows.append(("1000 bounces", t_mb, t_sp, f"{int(res['bounces'][-1])} / {len(sp_impacts)}",
                 f"last impact off by {abs(mb_impacts[-1] - impacts[N_BOUNCES - 1]):.1e} / "
                 f"{abs(sp_impacts[-1] - impacts[N_BOUNCES - 1]):.1e} s"))
    t0 = time.perf_counter()
    rectifier = mb.compile(HalfWave())
    compile_rect = time.perf_counter() - t0
    t_mb, res = best_of(lambda: rectifier.simulate(1.0, rtol=RTOL, atol=ATOL))
    t_sp, (v_sp, switches) = best_of(lambda: scipy_rectifier(1.0))
    rows.append(("rectifier 1 s", t_mb, t_sp, f"{len(res.events) - 1} / {switches}",
                 f"v(1 s) differs by {abs(res['cap.v'][-1] - v_sp):.1e} V"))
    print("Events: mbmodel vs scipy solve_ivp with event functions (best of 3, rtol 1e-8)\n")
    print(mb.format_table(
        ("case", "mbmodel [s]", "scipy [s]", "ratio", "events mb / scipy", "check"),
        [(name, f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}", ev, check)
         for name, a, b, ev, check in rows]))
    print(f"\ncompile (not in the ratio): ball {compile_ball:.2f} s, "
          f"rectifier {compile_rect:.2f} s")


if __name__ == "__main__":
    main()
