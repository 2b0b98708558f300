"""Animation in the browser (mbmodel.visuals, mbmodel.animation, Result.animate).

The hook is checked without a browser (shapes resolved to plain data, a generic component,
clear errors, a saved model animates). The pages are then loaded in headless Chromium: the
page reports the shown frame's world position of each shape's origin and end point (three.js
matrices, as drawn), which must equal the frames of the result (the end of a bar is the
position of the bar's frame_b, which the model's own kinematics computed), and its screenshot
must show the shapes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import mbmodel as mb
from mbmodel import animation
from mbmodel.libraries import multibody as mbl
from mbmodel.libraries import rotational as rot
from mbmodel.libraries import translational as tr
from mbmodel.libraries.robot_r3 import Q_START_DEG, MechanicalStructure


class BallPendulum(mb.Model):
    """A box on a revolute joint, then a ball joint spinning a BodyShape about all three
    axes, a bar and a point body: every multibody shape kind, moving in 3-D."""

    world = mbl.World()
    hinge = mbl.Revolute(n=[0, 0, 1], phi=mb.Fixed(0.3), w=mb.Fixed(1.0))
    box = mbl.BodyBox(r=[0.5, 0, 0], width=0.06)
    ball = mbl.Spherical(Q=mb.Fixed([0.0, 0.0, 0.0, 1.0]), w_rel=mb.Fixed([2.0, 3.0, 1.0]))
    link = mbl.BodyShape(r=[0.0, -0.4, 0.1], r_CM=[0.0, -0.2, 0.05], m=1.0)
    bar = mbl.FixedTranslation(r=[0.15, 0.0, 0.0])
    weight = mbl.Body(m=0.5, r_CM=[0.05, 0.0, 0.02])

    def equations(self):
        c = mb.connect
        yield c(self.world.frame_b, self.hinge.frame_a)
        yield c(self.hinge.frame_b, self.box.frame_a)
        yield c(self.box.frame_b, self.ball.frame_a)
        yield c(self.ball.frame_b, self.link.frame_a)
        yield c(self.link.frame_b, self.bar.frame_a)
        yield c(self.bar.frame_b, self.weight.frame_a)


@pytest.fixture(scope="module")
def pendulum():
    cm = mb.compile(BallPendulum())
    return cm, cm.simulate(2.0, n_points=201)


def position(res, frame, k):
    return np.array([res[f"{frame}.r_0[{i}]"][k] for i in range(3)])


def rotation(res, frame, k):
    """The frame's R (world -> frame) at output k."""
    return np.array([[res[f"{frame}.R[{i},{j}]"][k] for j in range(3)] for i in range(3)])


def expected_points(res, k):
    """Shape name -> (origin, end) in the world at output k, from the result's frames; the
    points inside a frame by the library's convention ``r_0 + R' p``."""
    def inside(frame, p):
        return position(res, frame, k) + rotation(res, frame, k).T @ np.asarray(p, float)
    cm_weight = inside("weight.frame_a", [0.05, 0.0, 0.02])
    return {
        "box": (position(res, "box.frame_a", k), position(res, "box.frame_b", k)),
        "link/cylinder": (position(res, "link.frame_a", k), position(res, "link.frame_b", k)),
        "bar": (position(res, "bar.frame_a", k), position(res, "bar.frame_b", k)),
        "weight/cylinder": (position(res, "weight.frame_a", k), cm_weight),
        # centres (origin + end)/2 of the joints' shapes and the body's sphere
        "hinge": position(res, "hinge.frame_a", k),
        "ball": position(res, "ball.frame_a", k),
        "weight/sphere": cm_weight,
    }


def check_points(shapes, res, k, tol):
    expected = expected_points(res, k)
    for name in ("box", "link/cylinder", "bar", "weight/cylinder"):
        origin, end = expected[name]
        assert np.allclose(shapes[name]["origin"], origin, atol=tol), name
        assert np.allclose(shapes[name]["end"], end, atol=tol), name
    for name in ("hinge", "ball", "weight/sphere"):
        centre = (np.asarray(shapes[name]["origin"]) + np.asarray(shapes[name]["end"])) / 2
        assert np.allclose(centre, expected[name], atol=tol), name
    # the hinge's cylinder lies along its axis z (frame_a is the world's)
    axis = np.asarray(shapes["hinge"]["end"]) - np.asarray(shapes["hinge"]["origin"])
    assert np.allclose(axis / np.linalg.norm(axis), [0, 0, 1], atol=tol)


def scene_points(data, name, k):
    """Origin and end of a shape at frame k computed from the page's data in numpy."""
    shape = next(s for s in data["shapes"] if s["name"] == name)
    frame = data["frames"][shape["frame"]]
    r = np.asarray(frame["r"]).reshape(-1, 3)[k]
    R = np.eye(3) if frame["R"] is None else np.asarray(frame["R"]).reshape(-1, 3, 3)[k]
    B = np.asarray(shape["basis"]).reshape(3, 3)
    local = np.asarray(shape["offset"])
    points = {"origin": r + R.T @ local, "end": r + R.T @ (local + shape["length"] * B[:, 0])}
    return points


# -- the hook, without a browser --------------------------------------------------------------
def test_visuals_are_plain_data_with_full_names(pendulum):
    cm, _ = pendulum
    by_name = {v["name"]: v for v in cm.visuals}
    assert set(by_name) == {"world", "hinge", "box", "ball", "link/cylinder", "link/sphere",
                            "bar", "weight/sphere", "weight/cylinder"}
    box = by_name["box"]
    assert box["kind"] == "box" and box["length"] == pytest.approx(0.5)
    assert box["width"] == pytest.approx(0.06) and box["height"] == pytest.approx(0.06)
    assert box["r"] == [f"box.frame_a.r_0[{i}]" for i in range(3)]
    assert box["R"] == [f"box.frame_a.R[{i},{j}]" for i in range(3) for j in range(3)]
    assert by_name["world"]["kind"] == "axes"
    assert by_name["hinge"]["color"] == [255, 0, 0]
    # plain data only: it survives JSON unchanged
    assert json.loads(json.dumps(cm.visuals)) == cm.visuals


def test_scene_data_follow_the_frames(pendulum):
    """The page's data (frames thinned to ~30 per second) put each bar's end on its
    frame_b: the orientation is used transposed (R maps world to frame)."""
    _, res = pendulum
    data = animation.scene(res, fps=30)
    assert len(data["times"]) == len(data["indices"]) == 61
    assert data["times"][0] == 0.0 and data["times"][-1] == pytest.approx(2.0)
    for k in (0, 17, 60):
        shapes = {s["name"]: scene_points(data, s["name"], k) for s in data["shapes"]}
        check_points(shapes, res, data["indices"][k], 1e-5)


def test_generic_component_with_a_visual():
    """The hook knows no physics: a 1-D mass shows a box at its position (variables and
    numbers mixed), sized by a parameter expression."""

    class Cart(mb.Model):
        mass = tr.Mass(m=1.0, s=mb.Fixed(0.0), v=mb.Fixed(1.0))
        size = mb.Parameter(0.2)

        def visuals(self):
            yield mb.VisualShape("box", [self.mass.s, 0.0, 0.0], length=2 * self.size,
                                 width=self.size, color=(10, 20, 30), label="body")

    cm = mb.compile(Cart())
    (shape,) = cm.visuals
    assert shape["name"] == "body"
    assert shape["r"] == ["mass.s", 0.0, 0.0] and shape["R"] is None
    assert shape["length"] == pytest.approx(0.4) and shape["width"] == pytest.approx(0.2)
    res = cm.simulate(1.0)
    data = animation.scene(res)
    r = np.asarray(data["frames"][0]["r"]).reshape(-1, 3)
    assert np.allclose(r[:, 0], res["mass.s"][data["indices"]], atol=1e-6)


def test_sizes_bound_to_parameters_are_evaluated():
    class Rig(mb.Model):
        D = mb.Parameter(0.03)
        world = mbl.World(nominal_length=2.0)

        def __init__(self):
            super().__init__()
            self.tube = mbl.BodyCylinder(r=[0.4, 0, 0], diameter=2 * self.D)

        def equations(self):
            yield mb.connect(self.world.frame_b, self.tube.frame_a)

    by_name = {v["name"]: v for v in mb.flatten(Rig()).visuals}
    assert by_name["tube"]["width"] == pytest.approx(0.06)
    assert by_name["tube"]["length"] == pytest.approx(0.4)
    assert by_name["world"]["length"] == pytest.approx(0.5)   # nominal_length / 4


def test_a_position_must_be_a_variable():
    class Bad(mb.Model):
        mass = tr.Mass(m=1.0, s=mb.Fixed(0.0), v=mb.Fixed(1.0))

        def visuals(self):
            yield mb.VisualShape("sphere", [2 * self.mass.s, 0.0, 0.0])

    with pytest.raises(mb.DeclarationError, match="visuals.*r\\[0\\] is an expression"):
        mb.flatten(Bad())


def test_no_visuals_is_a_clear_error(tmp_path):
    class Spin(mb.Model):
        inertia = rot.Inertia(J=1.0, phi=mb.Fixed(0.0), w=mb.Fixed(1.0))

    res = mb.simulate(Spin(), 1.0)
    with pytest.raises(ValueError, match="no visual shapes"):
        res.animate(tmp_path / "spin.html")
    assert not (tmp_path / "spin.html").exists()


def test_saved_model_still_animates(pendulum, tmp_path):
    cm, res = pendulum
    cm.save(tmp_path / "pendulum.mbm")
    loaded = mb.load(tmp_path / "pendulum.mbm")
    assert loaded.visuals == cm.visuals
    again = loaded.simulate(2.0, n_points=201)
    path = again.animate(tmp_path / "again.html")
    assert os.path.getsize(path) > 600_000       # three.js is inlined
    # a result read from a file takes its shapes from the model given
    res.save(tmp_path / "run.npz")
    read = mb.Result.load(tmp_path / "run.npz")
    with pytest.raises(ValueError, match="model=cm"):
        read.animate(tmp_path / "read.html")
    read.animate(tmp_path / "read.html", model=loaded)
    a = animation.scene(read, model=loaded)
    b = animation.scene(again)
    assert [s["name"] for s in a["shapes"]] == [s["name"] for s in b["shapes"]]
    assert np.allclose(a["frames"][1]["R"], b["frames"][1]["R"], atol=1e-6)


def test_outputs_missing_from_a_result_are_named(pendulum, tmp_path):
    cm = mb.compile(BallPendulum(), outputs=["hinge.phi"])
    res = cm.simulate(0.1)
    with pytest.raises(ValueError, match="outputs="):
        res.animate(tmp_path / "x.html")


# -- in the browser ----------------------------------------------------------------------------
def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = _chromium()
browser = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary found (apt-get "
                                                      "install chromium to run the page)")


def run_chromium(tmp_path, url, *args):
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
               "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={tmp_path / 'chromium-profile'}",
               "--virtual-time-budget=3000", *args, url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def probe(tmp_path, page, fragment):
    dom = run_chromium(tmp_path, f"{page.as_uri()}#{fragment}&probe=1", "--dump-dom")
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found and found.group(1), "the page wrote no probe (script error?)"
    message = re.search(r'<div id="message">(.*?)</div>', dom, re.S)
    assert message is not None and message.group(1) == "", message and message.group(1)
    return json.loads(found.group(1))


@browser
def test_page_shows_the_frames_of_the_result(pendulum, tmp_path):
    _, res = pendulum
    page = tmp_path / "pendulum.html"
    res.animate(page)
    data = animation.scene(res)
    for k in (0, 41):
        shown = probe(tmp_path, page, f"frame={k}")
        assert shown["frame"] == k and shown["playing"] is False
        assert shown["time"] == pytest.approx(res.t[data["indices"][k]])
        check_points(shown["shapes"], res, data["indices"][k], 1e-5)
    # a time selects the last frame at or before it
    shown = probe(tmp_path, page, "t=1.01")
    assert shown["time"] == pytest.approx(1.0)
    # without a frame it plays
    shown = probe(tmp_path, page, "speed=1")
    assert shown["playing"] is True and shown["frame"] > 0


@browser
def test_page_draws_the_shapes(pendulum, tmp_path):
    image = pytest.importorskip("matplotlib.image")
    _, res = pendulum
    page = tmp_path / "pendulum.html"
    res.animate(page)
    shot = tmp_path / "shot.png"
    run_chromium(tmp_path, f"{page.as_uri()}#frame=20", "--window-size=800,600",
                 f"--screenshot={shot}")
    pixels = image.imread(str(shot))[..., :3]
    assert pixels.shape[:2] == (600, 800)
    assert pixels.std() > 0.05
    colours = np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50
    # the bodies' blue (0, 128, 255, shaded) and the joints' red are on the canvas
    r, g, b = pixels[:550, :, 0], pixels[:550, :, 1], pixels[:550, :, 2]
    assert np.count_nonzero((b > 0.6) & (r < 0.35) & (b - g > 0.2)) > 200
    assert np.count_nonzero((r > 0.6) & (g < 0.3) & (b < 0.3)) > 20


@browser
def test_robot_page_matches_its_links(tmp_path):
    """The Manutec r3 falling: six links turned about x and y axes; each link's bar ends on
    the next joint."""
    cm = mb.compile(MechanicalStructure(q_start=np.radians(Q_START_DEG)))
    res = cm.simulate(0.5, n_points=51)
    page = tmp_path / "robot.html"
    res.animate(page, up="y", title="r3")
    k = 12   # of 16 frames (30 per second)
    shown = probe(tmp_path, page, f"frame={k}")
    index = animation.scene(res)["indices"][k]
    for i in range(6):
        bar = shown["shapes"][f"b{i}/cylinder"]
        assert np.allclose(bar["origin"], position(res, f"b{i}.frame_a", index), atol=1e-5)
        assert np.allclose(bar["end"], position(res, f"b{i}.frame_b", index), atol=1e-5)
    # the load's sphere is centred at its centre of mass (rLoad from b6.frame_b, in b6)
    sphere = shown["shapes"]["load/sphere"]
    centre = (np.asarray(sphere["origin"]) + np.asarray(sphere["end"])) / 2
    expected = (position(res, "load.frame_a", index)
                + rotation(res, "load.frame_a", index).T @ np.array([0.1, 0.25, 0.1]))
    assert np.allclose(centre, expected, atol=1e-5)


def test_default_sizes_follow_the_model_as_compiled():
    """The default scale (twice the largest offset) is found for each compile: a longer
    part added after a first compile scales the next one's shapes."""
    class Arm(mb.Model):
        world = mbl.World()
        joint = mbl.Revolute(n=[0, 0, 1])
        body = mbl.Body(m=1.0, r_CM=[0.5, 0, 0])

        def equations(self):
            yield mb.connect(self.world.frame_b, self.joint.frame_a)
            yield mb.connect(self.joint.frame_b, self.body.frame_a)
            if getattr(self, "rod", None) is not None:
                yield mb.connect(self.body.frame_a, self.rod.frame_a)

    arm = Arm()
    by_name = {v["name"]: v for v in mb.flatten(arm).visuals}
    assert by_name["world"]["length"] == pytest.approx(2 * 0.5 / 4)
    arm.add("rod", mbl.FixedTranslation(r=[3.0, 0, 0]))
    by_name = {v["name"]: v for v in mb.flatten(arm).visuals}
    assert by_name["world"]["length"] == pytest.approx(2 * 3.0 / 4)
