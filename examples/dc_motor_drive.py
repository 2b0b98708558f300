"""DC motor speed control: the flagship example of mbmodel.

A permanent-magnet DC motor (armature resistance and inductance, EMF, rotor inertia) drives
a load inertia through an ideal gear (ratio 10, motor side fast). A PI speed controller
with +-24 V output limits and anti-windup (``blocks.LimPID``) compares the load speed with
the reference and commands the armature voltage through a signal-controlled voltage source.
At t = 0.1 s the speed reference steps from 0 to 10 rad/s; at t = 1 s a load torque of
-0.5 N.m is applied to the load.

Structure (component names as in the model below)::

    signals:     reference.y ----> controller.u_s     controller.y ----> source.v
                 speed_sensor.w -> controller.u_m
    electrical:  source.p -- motor.p      source.n -- motor.n -- ground
                 (motor = resistor -- inductor -- emf, with the emf driving the rotor)
    mechanical:  motor.flange -- gear (10:1) -- load -- load_torque, speed_sensor
                 (load_step.y drives load_torque.tau)

The rotor and the load are rigidly coupled by the gear, so their angles and speeds are not
independent: the compiler differentiates the gear equation (index reduction) and keeps one
angle/speed pair as states. Run from the repository root::

    python examples/dc_motor_drive.py

It prints the states the compiler chose, the tracking and disturbance-rejection figures of
the loop (with the steady-state values expected from the motor equations) and writes
``dc_motor_drive.png``.
"""

from __future__ import annotations

import os
import time

import numpy as np

import mbmodel as mb
from mbmodel.libraries import blocks
from mbmodel.libraries import electrical as el
from mbmodel.libraries import rotational as rot

# Drive data
R_A = 0.5           # armature resistance [Ohm]
L_A = 1.5e-3        # armature inductance [H]
K_M = 0.05          # motor constant [N.m/A] = [V.s/rad]
J_MOTOR = 2e-5      # rotor inertia [kg.m2]
J_LOAD = 0.01       # load inertia [kg.m2]
RATIO = 10.0        # gear ratio (motor angle / load angle)
V_MAX = 24.0        # controller output limit [V]

# Controller: the integral time cancels the slow mechanical pole of the motor
# (about 20 ms); the gain sets a crossover of roughly 100 rad/s.
KP = 1.0            # [V/(rad/s)]
TI = 0.02           # [s]

# Scenario
W_REF = 10.0        # load speed reference after the step [rad/s]
T_REF = 0.1         # time of the reference step [s]
TAU_LOAD = -0.5     # load torque step [N.m] (negative: brakes the load)
T_LOAD = 1.0        # time of the load step [s]
T_END = 2.0


class DCMotor(mb.Model):
    """Permanent-magnet DC motor: armature resistor and inductor, EMF and rotor inertia.

    Pins ``p``/``n`` (armature), flange ``flange`` (shaft, after the rotor inertia).
    """

    R = mb.Parameter(R_A, unit="Ohm", min=0.0, doc="armature resistance")
    L = mb.Parameter(L_A, unit="H", min=0.0, doc="armature inductance")
    k = mb.Parameter(K_M, unit="N.m/A", doc="motor constant")
    J = mb.Parameter(J_MOTOR, unit="kg.m2", min=0.0, doc="rotor inertia")

    p = el.PositivePin()
    n = el.NegativePin()
    flange = rot.Flange_b()

    def __init__(self, **modifiers):
        super().__init__(**modifiers)
        self.resistor = el.Resistor(R=self.R)
        self.inductor = el.Inductor(L=self.L, i=mb.Fixed(0.0))
        self.emf = el.EMF(k=self.k)
        self.rotor = rot.Inertia(J=self.J)

    def equations(self):
        yield mb.connect(self.p, self.resistor.p)
        yield mb.connect(self.resistor.n, self.inductor.p)
        yield mb.connect(self.inductor.n, self.emf.p)
        yield mb.connect(self.emf.n, self.n)
        yield mb.connect(self.emf.flange, self.rotor.flange_a)
        yield mb.connect(self.rotor.flange_b, self.flange)


class DCMotorDrive(mb.Model):
    """PI speed control of a geared DC motor drive with a load-torque step."""

    reference = blocks.Step(height=W_REF, startTime=T_REF)
    controller = blocks.LimPID(controller_type="PI", k=KP, Ti=TI, yMax=V_MAX)
    source = el.SignalVoltage()
    ground = el.Ground()
    motor = DCMotor()
    gear = rot.IdealGear(ratio=RATIO)
    load = rot.Inertia(J=J_LOAD, phi=mb.Fixed(0.0), w=mb.Fixed(0.0))
    load_step = blocks.Step(height=TAU_LOAD, startTime=T_LOAD)
    load_torque = rot.Torque()
    speed_sensor = rot.SpeedSensor()

    def equations(self):
        c = mb.connect
        # control loop
        yield c(self.reference.y, self.controller.u_s)
        yield c(self.speed_sensor.w, self.controller.u_m)
        yield c(self.controller.y, self.source.v)
        # armature circuit
        yield c(self.source.p, self.motor.p)
        yield c(self.source.n, self.motor.n, self.ground.p)
        # drive train
        yield c(self.motor.flange, self.gear.flange_a)
        yield c(self.gear.flange_b, self.load.flange_a)
        yield c(self.load.flange_b, self.load_torque.flange, self.speed_sensor.flange)
        yield c(self.load_step.y, self.load_torque.tau)


def settling_time(t, y, target, band, t_from, t_to=np.inf):
    """Time after ``t_from`` from which ``y`` stays within ``target +- band`` (up to
    ``t_to``); ``nan`` if it never settles."""
    sel = (t >= t_from) & (t <= t_to)
    ts, ys = t[sel], y[sel]
    outside = np.where(np.abs(ys - target) > band)[0]
    if len(outside) == 0:
        return 0.0
    if outside[-1] == len(ts) - 1:
        return float("nan")
    return float(ts[outside[-1] + 1] - t_from)




def main(plot=True, out_dir="."):
    """Compile and simulate the drive, print the summary and save the plot.

    Returns a dict of the key results (states, final speeds, current and voltage extremes,
    tracking and disturbance figures).
    """
    t0 = time.perf_counter()
    cm = mb.compile(DCMotorDrive())
    t1 = time.perf_counter()
    res = cm.simulate(T_END, n_points=4001)
    t2 = time.perf_counter()

    t = res.t
    w_load = res["load.w"]
    w_ref = res["reference.y"]
    current = res["motor.inductor.i"]
    voltage = res["source.v"]

    # Steady state expected from the motor equations: the motor torque k*i balances the load
    # torque seen through the gear; the voltage covers R*i and the back EMF k*w_motor.
    i_ss = -TAU_LOAD / (K_M * RATIO)
    v_ss = R_A * i_ss + K_M * RATIO * W_REF

    before_load = (t >= T_REF) & (t < T_LOAD)
    after_load = t >= T_LOAD
    overshoot = float(np.max(w_load[before_load]) - W_REF)
    rise_settle = settling_time(t, w_load, W_REF, 0.02 * W_REF, T_REF, T_LOAD)
    k_dip = int(np.argmax(after_load)) + int(np.argmin(w_load[after_load]))
    dip = float(W_REF - w_load[k_dip])
    recovery = settling_time(t, w_load, W_REF, 0.01 * W_REF, T_LOAD)
    k_imax = int(np.argmax(np.abs(current)))
    k_vmax = int(np.argmax(np.abs(voltage)))

    out = {
        "states": list(cm.states),
        "w_final": float(w_load[-1]), "w_ref": W_REF,
        "w_motor_final": float(res["motor.rotor.w"][-1]),
        "i_final": float(current[-1]), "i_final_expected": i_ss,
        "v_final": float(voltage[-1]), "v_final_expected": v_ss,
        "i_max": float(abs(current[k_imax])), "t_i_max": float(t[k_imax]),
        "v_peak": float(abs(voltage[k_vmax])), "t_v_peak": float(t[k_vmax]),
        "overshoot": overshoot, "settling_time": rise_settle,
        "dip": dip, "t_dip": float(t[k_dip]), "recovery_time": recovery,
        "compile_time": t1 - t0, "simulate_time": t2 - t1, "result": res,
    }

    print("DC motor drive: PI speed control of a geared load")
    print(f"  motor: R = {R_A} Ohm, L = {L_A} H, k = {K_M} N.m/A, J_m = {J_MOTOR} kg.m2; "
          f"gear ratio {RATIO:g}; load J_L = {J_LOAD} kg.m2")
    print(f"  PI: k = {KP} V/(rad/s), Ti = {TI} s, output limit +-{V_MAX:g} V; "
          f"reference {W_REF:g} rad/s at t = {T_REF} s, load torque {TAU_LOAD} N.m "
          f"at t = {T_LOAD} s")
    print(f"states chosen by the compiler ({len(cm.states)}): {', '.join(cm.states)}")
    print(f"compile {1e3 * (t1 - t0):.0f} ms, simulate {1e3 * (t2 - t1):.0f} ms "
          f"({len(cm.states)} states, {len(cm.algebraic)} algebraic)\n")
    rows = [
        ("final load speed [rad/s]", f"{out['w_final']:.6f}", f"{W_REF:.6f}", "reference"),
        ("final motor speed [rad/s]", f"{out['w_motor_final']:.5f}", f"{RATIO * W_REF:.5f}",
         "ratio * reference"),
        ("final armature current [A]", f"{out['i_final']:.6f}", f"{i_ss:.6f}",
         "-tau_load/(k*ratio)"),
        ("final voltage [V]", f"{out['v_final']:.6f}", f"{v_ss:.6f}",
         "R*i + k*ratio*w_ref"),
        ("overshoot after the reference step [rad/s]", f"{overshoot:.4f}", "", ""),
        ("settling time to +-2 % [s]", f"{rise_settle:.4f}", "", f"after t = {T_REF} s"),
        ("max |armature current| [A]", f"{out['i_max']:.3f}", "",
         f"at t = {out['t_i_max']:.4f} s"),
        ("peak |voltage| [V]", f"{out['v_peak']:.3f}", f"<= {V_MAX:g}",
         f"at t = {out['t_v_peak']:.4f} s"),
        ("speed dip after the load step [rad/s]", f"{dip:.4f}", "",
         f"at t = {out['t_dip']:.4f} s"),
        ("recovery time to +-1 % [s]", f"{recovery:.4f}", "", f"after t = {T_LOAD} s"),
    ]
    print(mb.format_table(("quantity", "simulated", "expected", "note"), rows, left=(0, 3)))

    if plot:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "dc_motor_drive.png")
        _plot(t, w_load, w_ref, current, voltage, path)
        print(f"plot written to {path}")
    return out


def _plot(t, w_load, w_ref, current, voltage, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 8))
    ax1, ax2, ax3 = fig.subplots(3, 1, sharex=True)
    ax1.plot(t, w_ref, "k--", lw=1, label="reference")
    ax1.plot(t, w_load, color="C0", label="load speed (load.w)")
    ax1.set_ylabel("speed [rad/s]")
    ax1.set_title("DC motor drive: PI speed control, reference step at 0.1 s, "
                  "load torque step at 1 s")
    ax1.legend(loc="lower right", fontsize=8)
    # Inset: the disturbance at the load step, magnified.
    inset = ax1.inset_axes([0.52, 0.35, 0.3, 0.35])
    sel = (t > T_LOAD - 0.02) & (t < T_LOAD + 0.15)
    inset.plot(t[sel], w_load[sel], color="C0")
    inset.plot(t[sel], w_ref[sel], "k--", lw=1)
    inset.set_title("load step (zoom)", fontsize=7)
    inset.tick_params(labelsize=6)
    inset.grid(True, alpha=0.3)
    ax2.plot(t, current, color="C1", label="armature current (motor.inductor.i)")
    ax2.set_ylabel("current [A]")
    ax2.legend(loc="upper right", fontsize=8)
    ax3.plot(t, voltage, color="C2", label="armature voltage (controller output)")
    ax3.axhline(V_MAX, color="C3", ls=":", lw=1, label=f"limit +-{V_MAX:g} V")
    ax3.set_ylabel("voltage [V]")
    ax3.set_xlabel("time [s]")
    ax3.set_ylim(-2, V_MAX + 3)
    ax3.legend(loc="upper right", fontsize=8)
    for a in (ax1, ax2, ax3):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
