"""A body's mass changes nothing in bodies it never touches: the distant-mass scene baked through the operator."""

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

pytestmark = pytest.mark.blender

FRAMES = 12
"""Half a second at 24 fps: before islands the default solver moved the heavy box 71 cm off its rest height in it."""


def test_heavy_box_rests_beside_a_light_one_far_away_with_the_default_solver(lab):
    """A 10⁵ kg 1 m cube resting on the ground and a 1 kg one 30 m away, default settings (PROX): the heavy cube's
    keys stay within 1 mm of its rest height (0.5 m, the analytic value and what it does alone)."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    assert scene.contact_lab.solver == "PROX"  # the default
    lab.add_ground()
    heavy = lab.add_cube("Heavy", (0.0, 0.0, 0.5), mass=1e5)
    light = lab.add_cube("Light", (30.0, 0.0, 0.5), mass=1.0)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert json.loads(scene.contact_lab.last_report)["status"] == "FINISHED"
    for obj in (heavy, light):
        frames, loc, _ = lab.keyed_transform(obj)
        assert frames.shape == (FRAMES,)
        sink = np.abs(loc[:, 2] - 0.5).max()
        assert sink < 1e-3, f"'{obj.name}' leaves its rest height by {sink * 1000:.1f} mm"


def _mass_warnings(scene):
    from contact_lab.addon.checks import validate

    return [f for f in validate.validate_scene(scene) if f.level == "WARNING" and "kg)" in f.text]


def test_mass_warning_for_distant_bodies_says_they_do_not_touch(lab):
    """The same scene's warning names both cubes and says they do not touch: it blames only their meeting."""
    lab.add_ground()
    lab.add_cube("Heavy", (0.0, 0.0, 0.5), mass=1e5)
    lab.add_cube("Light", (30.0, 0.0, 0.5), mass=1.0)
    (finding,) = _mass_warnings(bpy.context.scene)
    assert finding.object_name == "Heavy" and "'Light'" in finding.text and "1e+05 times as heavy" in finding.text
    assert "do not touch at the start" in finding.text and "should they meet" in finding.text


def test_mass_warning_names_the_pair_that_touches(lab):
    """A 300 kg cube on a 1 kg one, and a 0.5 kg cube far away: the warning names the touching pair and its ratio,
    not the lightest body in the scene (which touches nothing)."""
    lab.add_ground()
    lab.add_cube("Base", (0.0, 0.0, 0.5), mass=1.0)
    lab.add_cube("Load", (0.0, 0.0, 1.5), mass=300.0)
    lab.add_cube("Far", (30.0, 0.0, 0.5), mass=0.5)
    (finding,) = _mass_warnings(bpy.context.scene)
    assert finding.object_name == "Load" and "'Base'" in finding.text and "touch at the start" in finding.text
    assert "300:1" in finding.text and "'Far'" not in finding.text
