"""Animation in the browser: a result's visual shapes as one self-contained HTML page.

:func:`animate` takes the shapes a compiled model keeps (``CompiledModel.visuals``, plain
data from the components' ``visuals()``, see :mod:`mbmodel.visuals`) and a
:class:`~mbmodel.result.Result`, and writes a page that plays them: three.js (r159, MIT,
inlined from ``mbmodel/_vendor``) draws the scene, with play/pause, a time slider, a speed
control and orbit controls (drag: rotate, wheel: zoom, right drag: pan). The page loads
nothing from the network.

What the page holds: the output times (the result's own, thinned to about ``fps`` frames
per second of simulated time, never more than ``max_frames``), one trajectory per distinct
coordinate system the shapes sit in (origin ``r`` and orientation ``R``, world -> system)
and each shape's fixed geometry. The viewer places a shape's point ``p`` (in the shape's
axes, see :mod:`mbmodel.visuals`) at ``r + R' (r_shape + B p)``, ``B`` the shape's axes as
columns.

URL options (after ``#`` or ``?``, joined with ``&``): ``frame=K`` or ``t=T`` shows that
frame or time paused; ``speed=S`` the playback speed; ``paused=1`` starts paused;
``probe=1`` writes the shown frame's time and each shape's world origin and end point
(``r_shape`` and ``r_shape + length e_x`` in the world) as JSON into the element
``<pre id="probe">`` (what the tests read).

Example::

    res = mb.simulate(model, 3.0)
    res.animate("pendulum.html")        # open it in a browser
"""

from __future__ import annotations

import html
import json
import math
import os
from importlib import resources

import numpy as np

from .files import atomic_write

__all__ = ["animate", "scene"]

_UP = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def animate(result, path, *, model=None, visuals=None, fps: float = 30.0,
            max_frames: int = 2000, speed: float = 1.0, up="y", title: str | None = None):
    """Write ``path``: an HTML page that animates the shapes of ``result``'s model.

    Parameters:
        result: a :class:`~mbmodel.result.Result`.
        path: the file to write (complete or absent).
        model: the compiled model whose shapes to draw (default: the one ``result`` came
            from; give it for a result read with ``Result.load``).
        visuals: the shapes as plain data (default: ``model.visuals``).
        fps: frames per second of simulated time kept from the result's output times.
        max_frames: at most this many frames.
        speed: initial playback speed (simulated seconds per second).
        up: the world direction shown upwards: ``"x"``, ``"y"``, ``"z"`` or a 3-vector
            (the multibody library's default gravity acts along -y).
        title: the page's title (default: the model's name).

    Returns the path written.

    Raises:
        ValueError: the model has no visual shapes (none of its components defines
            ``visuals()``, or the result has no compiled model to take them from), or the
            result lacks a variable they need (e.g. a model compiled with ``outputs=``).

    Example::

        res = mb.simulate(DoublePendulum(), 3.0)
        mbmodel.animation.animate(res, "double_pendulum.html", speed=0.5)
    """
    data = scene(result, model=model, visuals=visuals, fps=fps, max_frames=max_frames)
    data["speed"] = float(speed)
    data["up"] = _up_vector(up)
    name = getattr(model if model is not None else result.compiled, "name", None)
    data["title"] = title or (f"{name} (mbmodel)" if name else "mbmodel animation")
    page = _page(data)
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(page)
    return os.fspath(path)


def scene(result, *, model=None, visuals=None, fps: float = 30.0,
          max_frames: int = 2000) -> dict:
    """The data an animation page plays (plain lists and numbers; see the module docs):
    ``times`` (n), ``indices`` (the result's output indices shown), ``frames`` (each with
    ``r``: 3n numbers, frame after frame, and ``R``: 9n numbers, row by row, or ``None``),
    ``shapes`` (``name``, ``kind``, ``frame``: index into ``frames``, ``basis``: the
    shape's axes as the columns of a 3x3 matrix, row by row, ``offset``: ``r_shape``, sizes,
    ``color``, ``opacity``) and ``center``, ``size`` (a sphere that holds the motion).
    Shapes with a size that is zero, negative or not finite are left out.

    Example: ``data = mbmodel.animation.scene(res); len(data["times"])``
    """
    if visuals is None:
        source = model if model is not None else getattr(result, "compiled", None)
        visuals = getattr(source, "visuals", None) if source is not None else None
        if source is None:
            raise ValueError(
                "the result has no compiled model to take the shapes from (a result read "
                "with Result.load): pass it, res.animate(path, model=cm)")
    if not visuals:
        raise ValueError(
            "the model has no visual shapes to animate: none of its components defines "
            "visuals() (the multibody library's do; see mbmodel.visuals for the hook), or it "
            "was compiled before visuals existed (compile it again)")
    missing = sorted({n for v in visuals for n in _names(v) if n not in result})
    if missing:
        raise ValueError(
            f"the result has no trajectory of {', '.join(missing[:6])}"
            f"{' ...' if len(missing) > 6 else ''}, which the shapes need; a model compiled "
            f"with outputs=[...] must list them too")
    indices = _frame_indices(np.asarray(result.t, dtype=float), fps, max_frames)
    # the frames' positions and orientations computed at once, not one Function each
    result.prefetch(n for v in visuals if _geometry(v) is not None for n in _names(v))
    frames, keys, shapes = [], {}, []
    for v in visuals:
        geometry = _geometry(v)
        if geometry is None:
            continue
        key = (tuple(map(str, v["r"])), None if v["R"] is None else tuple(map(str, v["R"])))
        if key not in keys:
            keys[key] = len(frames)
            frames.append(_trajectory(result, v, indices))
        shapes.append({"name": v["name"], "kind": v["kind"], "frame": keys[key], **geometry})
    if not shapes:
        raise ValueError("the model's visual shapes all have zero size: nothing to animate")
    center, size = _extent(frames, shapes)
    times = np.asarray(result.t, dtype=float)[indices]
    return {"times": _numbers(times, 9), "indices": [int(i) for i in indices],
            "frames": [{"r": _numbers(f["r"]), "R": None if f["R"] is None else
                        _numbers(f["R"])} for f in frames],
            "shapes": shapes, "center": _numbers(center), "size": float(size)}


def _names(v):
    entries = list(v["r"]) + list(v["R"] or ())
    return [e for e in entries if isinstance(e, str)]


def _frame_indices(t, fps, max_frames) -> np.ndarray:
    """Output indices to show: all if they are few, else the ones nearest to an even grid
    of about ``fps`` per simulated second (first and last always)."""
    n = len(t)
    if n == 0:
        raise ValueError("the result has no output times")
    duration = float(t[-1] - t[0])
    wanted = int(min(max_frames, max(2, math.ceil(duration * fps) + 1)))
    if n <= wanted:
        return np.arange(n)
    grid = np.linspace(t[0], t[-1], wanted)
    k = np.clip(np.searchsorted(t, grid), 1, n - 1)
    nearer = np.where(grid - t[k - 1] <= t[k] - grid, k - 1, k)
    return np.unique(np.concatenate([[0], nearer, [n - 1]]))


def _trajectory(result, v, indices) -> dict:
    def column(entry):
        if isinstance(entry, str):
            return np.asarray(result[entry], dtype=float)[indices]
        return np.full(len(indices), float(entry))
    r = np.stack([column(e) for e in v["r"]], axis=1)                  # n x 3
    R = None if v["R"] is None else np.stack([column(e) for e in v["R"]], axis=1)  # n x 9
    return {"r": r, "R": R}


def _geometry(v):
    """The shape's fixed part for the viewer, or None if it has no size."""
    length, width, height = v["length"], v["width"], v["height"]
    numbers = [length, width, height, *v["r_shape"], *v["length_direction"],
               *v["width_direction"]]
    if not all(math.isfinite(x) for x in numbers) or length <= 0:
        return None
    if v["kind"] in ("box", "cylinder") and width <= 0:
        return None
    if v["kind"] == "box" and height <= 0:
        return None
    return {"basis": _numbers(_basis(v["length_direction"], v["width_direction"])),
            "offset": _numbers(v["r_shape"]), "length": float(length), "width": float(width),
            "height": float(height), "color": list(v["color"]),
            "opacity": float(v.get("opacity", 1.0))}


def _basis(length_direction, width_direction) -> np.ndarray:
    """Columns e_x (along the length), e_y (the width direction made orthogonal), e_z."""
    e1 = np.asarray(length_direction, dtype=float)
    e1 = e1 / np.linalg.norm(e1) if np.linalg.norm(e1) > 1e-12 else np.array([1.0, 0, 0])
    w = np.asarray(width_direction, dtype=float)
    e2 = w - e1 * (e1 @ w)
    if np.linalg.norm(e2) < 1e-9:  # parallel to the length: any orthogonal direction
        e2 = np.cross(e1, [1.0, 0.0, 0.0] if abs(e1[0]) < 0.9 else [0.0, 1.0, 0.0])
    e2 = e2 / np.linalg.norm(e2)
    return np.column_stack([e1, e2, np.cross(e1, e2)])


def _extent(frames, shapes):
    """Centre and diameter of a box that holds every shape's origin and end point."""
    points = []
    for s in shapes:
        f = frames[s["frame"]]
        B = np.asarray(s["basis"]).reshape(3, 3)
        for local in (np.asarray(s["offset"]),
                      np.asarray(s["offset"]) + s["length"] * B[:, 0]):
            if f["R"] is None:
                points.append(f["r"] + local)
            else:  # r + R' p for every frame (R row by row)
                points.append(f["r"] + np.einsum("nji,j->ni", f["R"].reshape(-1, 3, 3), local))
    points = np.concatenate(points)
    points = points[np.all(np.isfinite(points), axis=1)]
    if not len(points):
        return np.zeros(3), 1.0
    low, high = points.min(axis=0), points.max(axis=0)
    size = max(float(np.linalg.norm(high - low)), max(s["length"] for s in shapes), 1e-3)
    return (low + high) / 2, size


def _numbers(values, digits: int = 6) -> list:
    """Flat list of rounded numbers (non-finite values become 0: JSON has none)."""
    a = np.round(np.nan_to_num(np.asarray(values, dtype=float).ravel(), nan=0.0,
                               posinf=0.0, neginf=0.0), digits)
    return a.tolist()


def _up_vector(up) -> list:
    if isinstance(up, str):
        if up not in _UP:
            raise ValueError(f"up must be 'x', 'y', 'z' or a 3-vector, not {up!r}")
        return list(_UP[up])
    u = np.asarray(up, dtype=float).ravel()
    if u.shape != (3,) or not np.linalg.norm(u) > 0:
        raise ValueError(f"up must be 'x', 'y', 'z' or a non-zero 3-vector, not {up!r}")
    return (u / np.linalg.norm(u)).tolist()


def _vendored(name: str) -> str:
    return resources.files("mbmodel").joinpath("_vendor", name).read_text(encoding="utf-8")


def _page(data) -> str:
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return (_PAGE.replace("@TITLE@", html.escape(data["title"]))
            .replace("@THREE@", _vendored("three.min.js"))
            .replace("@ORBIT@", _vendored("OrbitControls.js"))
            .replace("@DATA@", payload)
            .replace("@VIEWER@", _VIEWER))


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>
  html, body { margin: 0; height: 100%; overflow: hidden; font: 13px sans-serif; }
  #view { position: absolute; inset: 0 0 44px 0; background: #eef1f5; }
  #bar { position: absolute; left: 0; right: 0; bottom: 0; height: 44px; display: flex;
         align-items: center; gap: 10px; padding: 0 10px; box-sizing: border-box;
         background: #2b3440; color: #e8ecf1; }
  #bar button { width: 64px; }
  #slider { flex: 1; }
  #time { min-width: 150px; font-variant-numeric: tabular-nums; }
  #message { position: absolute; top: 10px; left: 10px; color: #a00; }
  #probe { display: none; }
</style>
</head>
<body>
<div id="view"></div>
<div id="message"></div>
<div id="bar">
  <button id="play" title="play / pause (space)">Pause</button>
  <input id="slider" type="range" min="0" max="0" value="0" step="1" title="time (arrow keys)">
  <span id="time"></span>
  <label>speed <select id="speed"></select></label>
</div>
<pre id="probe"></pre>
<script>@THREE@</script>
<script>@ORBIT@</script>
<script id="data" type="application/json">@DATA@</script>
<script>@VIEWER@</script>
</body>
</html>
"""

_VIEWER = r"""
(function () {
"use strict";
const data = JSON.parse(document.getElementById("data").textContent);
const times = data.times, n = times.length;
const options = new URLSearchParams(
  (location.search.slice(1) + "&" + location.hash.slice(1)).replace(/^&|&$/g, ""));

// -- the scene: one group per shape, its matrix set per frame --------------------------------
const scene = new THREE.Scene();
const up = new THREE.Vector3().fromArray(data.up);
const center = new THREE.Vector3().fromArray(data.center);
const size = data.size;

function material(shape, rgb) {
  const c = new THREE.Color().setRGB(rgb[0] / 255, rgb[1] / 255, rgb[2] / 255,
                                     THREE.SRGBColorSpace);
  return new THREE.MeshStandardMaterial({color: c, roughness: 0.55, metalness: 0.1,
    transparent: shape.opacity < 1, opacity: shape.opacity});
}

function along(geometry, length) {   // a y-axis geometry turned to x, starting at 0
  geometry.rotateZ(-Math.PI / 2);
  geometry.translate(length / 2, 0, 0);
  return geometry;
}

function body(shape) {   // the shape in its own axes: x along its length from 0
  const L = shape.length, W = shape.width, H = shape.height;
  if (shape.kind === "box") {
    const g = new THREE.BoxGeometry(L, W, H);
    g.translate(L / 2, 0, 0);
    return new THREE.Mesh(g, material(shape, shape.color));
  }
  if (shape.kind === "cylinder") {
    return new THREE.Mesh(along(new THREE.CylinderGeometry(W / 2, W / 2, L, 32), L),
                          material(shape, shape.color));
  }
  if (shape.kind === "sphere") {
    const g = new THREE.SphereGeometry(0.5, 32, 16);
    g.scale(L, W, H);
    g.translate(L / 2, 0, 0);
    return new THREE.Mesh(g, material(shape, shape.color));
  }
  const axes = new THREE.Group();   // "axes": arrows along x, y, z
  const radius = Math.max(W / 2, L / 80), head = L * 0.15;
  const colors = [[220, 40, 40], [40, 170, 40], [40, 80, 230]];
  for (let k = 0; k < 3; k++) {
    const arrow = new THREE.Group();
    const m = material(shape, colors[k]);
    arrow.add(new THREE.Mesh(along(new THREE.CylinderGeometry(radius, radius, L - head, 12),
                                   L - head), m));
    const cone = along(new THREE.ConeGeometry(radius * 2.5, head, 16), head);
    cone.translate(L - head, 0, 0);
    arrow.add(new THREE.Mesh(cone, m));
    if (k === 1) arrow.rotation.z = Math.PI / 2;
    if (k === 2) arrow.rotation.y = -Math.PI / 2;
    axes.add(arrow);
  }
  return axes;
}

const groups = data.shapes.map(function (shape) {
  const group = new THREE.Group();
  group.matrixAutoUpdate = false;
  group.add(body(shape));
  const b = shape.basis, o = shape.offset;   // [B | r_shape]: the shape's axes in its frame
  group.userData.local = new THREE.Matrix4().set(b[0], b[1], b[2], o[0],
                                                 b[3], b[4], b[5], o[1],
                                                 b[6], b[7], b[8], o[2],
                                                 0, 0, 0, 1);
  scene.add(group);
  return group;
});

const frameMatrix = new THREE.Matrix4();
function place(k) {   // every shape at frame k: [R' | r] [B | r_shape]
  data.shapes.forEach(function (shape, s) {
    const f = data.frames[shape.frame], r = f.r, i = 3 * k;
    if (f.R === null) {
      frameMatrix.makeTranslation(r[i], r[i + 1], r[i + 2]);
    } else {
      const R = f.R, j = 9 * k;   // R row by row (world -> frame); the matrix is R'
      frameMatrix.set(R[j], R[j + 3], R[j + 6], r[i],
                      R[j + 1], R[j + 4], R[j + 7], r[i + 1],
                      R[j + 2], R[j + 5], R[j + 8], r[i + 2],
                      0, 0, 0, 1);
    }
    groups[s].matrix.multiplyMatrices(frameMatrix, groups[s].userData.local);
    groups[s].matrixWorldNeedsUpdate = true;
  });
}

// -- lights, ground grid, camera ---------------------------------------------------------
scene.add(new THREE.HemisphereLight(0xffffff, 0x8090a0, 2.0));
const sun = new THREE.DirectionalLight(0xffffff, 1.6);
scene.add(sun);
const front = Math.abs(up.z) > 0.9 ? new THREE.Vector3(0, -1, 0) : new THREE.Vector3(0, 0, 1);
front.sub(up.clone().multiplyScalar(front.dot(up))).normalize();
const right = new THREE.Vector3().crossVectors(up, front).normalize();
const viewDir = front.clone().addScaledVector(up, 0.35).addScaledVector(right, 0.35).normalize();
sun.position.copy(center).addScaledVector(viewDir, size * 3).addScaledVector(up, size * 2);

let low = Infinity;   // the grid lies under the lowest point of the motion
data.shapes.forEach(function (shape) {
  const r = data.frames[shape.frame].r;
  for (let i = 0; i < r.length; i += 3) {
    low = Math.min(low, r[i] * up.x + r[i + 1] * up.y + r[i + 2] * up.z);
  }
});
const step = Math.pow(10, Math.floor(Math.log10(size / 2)));
const grid = new THREE.GridHelper(Math.ceil(2 * size / step) * step,
                                  Math.ceil(2 * size / step), 0x9aa5b1, 0xc9d0d8);
grid.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), up);
grid.position.copy(center).addScaledVector(up, low - center.dot(up) - 0.05 * size);
scene.add(grid);

const view = document.getElementById("view");
const camera = new THREE.PerspectiveCamera(40, 1, size / 1000, size * 100);
camera.up.copy(up);
camera.position.copy(center).addScaledVector(viewDir, 1.45 * size);
camera.lookAt(center);

let renderer = null, controls = null;
try {
  renderer = new THREE.WebGLRenderer({antialias: true, preserveDrawingBuffer: true});
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  renderer.setClearColor(0xeef1f5);
  view.appendChild(renderer.domElement);
  controls = new THREE_OrbitControls(camera, renderer.domElement);
  controls.target.copy(center);
  controls.update();
  controls.addEventListener("change", render);
} catch (error) {
  document.getElementById("message").textContent = "WebGL is not available: " + error;
}

function resize() {
  const w = view.clientWidth || 1, h = view.clientHeight || 1;
  camera.aspect = w / h;
  camera.updateProjectionMatrix();
  if (renderer) renderer.setSize(w, h);
  render();
}

function render() {
  if (renderer) renderer.render(scene, camera);
}

// -- playback ------------------------------------------------------------------------------
const slider = document.getElementById("slider"), button = document.getElementById("play");
const label = document.getElementById("time"), speedSelect = document.getElementById("speed");
slider.max = String(n - 1);
const speeds = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 10];
let speed = Number(options.get("speed") || data.speed);
if (speeds.indexOf(speed) < 0) { speeds.push(speed); speeds.sort(function (a, b) { return a - b; }); }
speeds.forEach(function (s) {
  const o = document.createElement("option");
  o.value = String(s); o.textContent = s + "\u00d7"; o.selected = s === speed;
  speedSelect.appendChild(o);
});

let frame = -1, time = times[0], playing = true, last = null;

function frameAt(t) {   // the last frame at or before t
  let lo = 0, hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (times[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

function show(k) {
  if (k === frame) return;
  frame = k;
  place(k);
  slider.value = String(k);
  label.textContent = "t = " + times[k].toFixed(3) + " s / " + times[n - 1].toFixed(3) + " s";
  render();
  if (probing) probe();
}

function setPlaying(on) {
  playing = on && n > 1;
  button.textContent = playing ? "Pause" : "Play";
  last = null;
}

function tick(now) {
  if (playing) {
    if (last !== null) {
      time += (now - last) / 1000 * speed;
      if (time > times[n - 1]) time = times[0] + (time - times[n - 1]) % Math.max(times[n - 1] - times[0], 1e-9);
    }
    last = now;
    show(frameAt(time));
  }
  requestAnimationFrame(tick);
}

function probe() {   // the shown frame's shape positions, for tests
  scene.updateMatrixWorld(true);
  const shapes = {};
  data.shapes.forEach(function (shape, s) {
    const m = groups[s].matrixWorld;
    shapes[shape.name] = {
      origin: new THREE.Vector3(0, 0, 0).applyMatrix4(m).toArray(),
      end: new THREE.Vector3(shape.length, 0, 0).applyMatrix4(m).toArray()};
  });
  document.getElementById("probe").textContent =
    JSON.stringify({frame: frame, time: times[frame], playing: playing, shapes: shapes});
}

button.addEventListener("click", function () { setPlaying(!playing); });
slider.addEventListener("input", function () {
  setPlaying(false);
  show(Number(slider.value));
  time = times[frame];
});
speedSelect.addEventListener("change", function () { speed = Number(speedSelect.value); });
window.addEventListener("keydown", function (event) {
  if (event.key === " ") { setPlaying(!playing); event.preventDefault(); }
  else if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
    setPlaying(false);
    show(Math.min(n - 1, Math.max(0, frame + (event.key === "ArrowRight" ? 1 : -1))));
    time = times[frame];
  }
});
window.addEventListener("resize", resize);

const probing = options.get("probe") === "1";
let start = 0;
if (options.has("frame")) {
  start = Math.min(n - 1, Math.max(0, parseInt(options.get("frame"), 10) || 0));
  setPlaying(false);
} else if (options.has("t")) {
  start = frameAt(Number(options.get("t")));
  setPlaying(false);
} else {
  setPlaying(options.get("paused") !== "1");
}
time = times[start];
resize();
show(start);
requestAnimationFrame(tick);
})();
"""
