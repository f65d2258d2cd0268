"""The joints in the bake's report and the panels, and the Soft and IPC engines saying they ignore constraints.

References: a Fixed joint whose Breaking Threshold is half the impulse that holds its box's weight for one substep
(m g h) breaks in the first substep, so the report says it broke in the frame after the start frame, and its box
falls freely from there (g t² / 2 by the last frame) while a box on an unbreakable joint stays where it was; the
panels draw what the report and the scene say (the constraint objects by type, the last Check Scene's refusals).
"""

from __future__ import annotations

import json

import pytest

bpy = pytest.importorskip("bpy")

from conftest import add_constraint, add_cube  # noqa: E402
from contact_lab.addon.bake import driver as bake  # noqa: E402
from contact_lab.addon.checks import validate  # noqa: E402

pytestmark = pytest.mark.blender

G = 9.81
FPS = 24
FRAMES = (1, 12)


class Recorder:
    """Records the labels drawn into it (and into every sub-layout), as Blender's UILayout would show them."""

    def __init__(self, root=None):
        self.root = root or self
        if root is None:
            self.labels: list[str] = []

    def label(self, *, text="", icon="NONE"):
        assert isinstance(text, str)
        self.root.labels.append(text)

    def __getattr__(self, _name):
        return lambda *a, **k: Recorder(self.root)


def hanging_boxes():
    """Two 1 kg boxes, each held under a Passive anchor by a Fixed joint: 'Weak Joint' breaks at once, 'Strong
    Joint' never; returns (weak box, strong box, weak joint, strong joint)."""
    s = bpy.context.scene.contact_lab
    s.engine, s.use_scene_frame_range = "RIGID", False
    s.frame_start, s.frame_end = FRAMES
    bpy.context.scene.render.fps = FPS
    boxes, joints = [], []
    for k, label in enumerate(("Weak", "Strong")):
        anchor = add_cube(f"{label} Anchor", (4.0 * k, 0.0, 6.0), role="PASSIVE")
        box = add_cube(label, (4.0 * k, 0.0, 4.9))
        joint = add_constraint(f"{label} Joint", "FIXED", anchor, box, (4.0 * k, 0.0, 5.45), blender_simulates=False)
        boxes.append(box)
        joints.append(joint)
    # Blender counts the threshold per substep of its rigid body world (Contact Lab converts it to its own step)
    h = 1.0 / (FPS * bpy.context.scene.rigidbody_world.substeps_per_frame)
    c = joints[0].rigid_body_constraint
    c.use_breaking, c.breaking_threshold = True, 0.5 * 1.0 * G * h  # half of one substep's holding impulse
    return boxes[0], boxes[1], joints[0], joints[1]


def test_the_report_names_the_broken_joint_with_its_frame_and_the_panels_show_it():
    weak, strong, weak_joint, strong_joint = hanging_boxes()
    scene = bpy.context.scene
    report = bake.bake_scene(scene)
    assert report["status"] == "FINISHED"
    joints = report["joints"]
    assert joints["count"] == 2 and joints["by_type"] == {"FIXED": 2}
    assert joints["broken"] == [{"name": "Weak Joint", "frame": FRAMES[0] + 1}]
    assert joints["max_error_linear"] < 1e-3 and joints["max_impulse"] > 0.0
    # the motion agrees: the weak box falls freely from the first substep, the strong one hangs still
    scene.frame_set(FRAMES[1])
    t = (FRAMES[1] - FRAMES[0]) / FPS
    assert 4.9 - weak.matrix_world.translation.z == pytest.approx(0.5 * G * t * t, rel=0.03)
    assert strong.matrix_world.translation.z == pytest.approx(4.9, abs=1e-3)
    stored = json.loads(scene.contact_lab.last_report)
    assert stored["joints"] == joints

    from contact_lab.panels import joints as joint_panels
    from contact_lab.panels import physics

    layout = Recorder()
    physics._draw_report(layout, scene.contact_lab.last_report)
    assert "Joints: 2 (2 Fixed)" in layout.labels and "Broken joints: 1" in layout.labels
    assert f"'Weak Joint' broke at frame {FRAMES[0] + 1}" in layout.labels
    layout = Recorder()
    joint_panels.draw_body_joints(layout, weak, scene, stored)
    assert layout.labels == ["Joints: 1 (1 Fixed)", f"Last bake: 'Weak Joint' broke at frame {FRAMES[0] + 1}"]
    layout = Recorder()
    joint_panels.draw_body_joints(layout, strong, scene, stored)
    assert layout.labels == ["Joints: 1 (1 Fixed)"]


def test_the_per_frame_statistics_carry_the_joints():
    hanging_boxes()
    job = bake.start_bake(bpy.context.scene)
    job.run()
    stats = bake.per_frame_stats(job)
    job.cancel(close=True)
    frames = FRAMES[1] - FRAMES[0] + 1
    for key in ("joint_error_linear", "joint_error_angular", "joint_impulse"):
        assert len(stats[key]) == frames
    # frame 0 is the start (nothing solved); the weak joint held one substep, the strong one holds its box's weight
    assert stats["joint_impulse"][0] == 0.0 and max(stats["joint_impulse"]) > 0.0


def test_the_bake_panel_counts_joints_by_type_refused_and_disabled():
    weak, strong, weak_joint, strong_joint = hanging_boxes()
    scene = bpy.context.scene
    settings = scene.contact_lab
    strong_joint.rigid_body_constraint.type = "HINGE"
    # "Bad Joint" joins a body to itself: refused
    bad = add_constraint("Bad Joint", "POINT", weak, weak, (0.0, 0.0, 3.0), blender_simulates=False)
    off = add_constraint("Off Joint", "SLIDER", weak, strong, (2.0, 0.0, 3.0), blender_simulates=False)
    off.rigid_body_constraint.enabled = False
    from contact_lab.panels import joints as joint_panels

    layout = Recorder()
    joint_panels.draw_scene_joints(layout, scene, settings)  # not checked yet: every enabled one, and the hint
    assert layout.labels[0] == "Joints: 3 (1 Fixed, 1 Point, 1 Hinge)"
    assert joint_panels.CHECK_HINT in layout.labels
    settings.last_validation = validate.to_json(validate.validate_scene(scene), "RIGID")
    layout = Recorder()
    joint_panels.draw_scene_joints(layout, scene, settings)
    assert layout.labels[0] == "Joints: 2 (1 Fixed, 1 Hinge)"
    assert layout.labels[1].startswith("1 refused") and layout.labels[2].startswith("1 disabled")
    assert bad.name in {f.object_name for f in validate.from_json(settings.last_validation)[1]}


@pytest.mark.parametrize("engine", ["SOFT", "IPC"])
def test_soft_and_ipc_say_the_constraints_are_ignored(engine):
    """Check Scene and the bake's warnings (what :func:`check_before_bake` returns goes into the report) name the
    constraint objects and the fix; the Bake panel says so too."""
    s = bpy.context.scene.contact_lab
    s.engine = engine
    jelly = add_cube("Jelly", (0.0, 0.0, 3.0), 0.4, role="SOFT")
    anchor = add_cube("Anchor", (0.0, 0.0, 4.0), role="PASSIVE")
    add_constraint("Lamp Joint", "POINT", anchor, jelly, (0.0, 0.0, 3.5), blender_simulates=False)
    off = add_constraint("Off Joint", "HINGE", anchor, jelly, (0.0, 0.0, 3.5), blender_simulates=False)
    off.rigid_body_constraint.enabled = False
    findings = [f for f in validate.validate_scene(bpy.context.scene) if "ignored" in f.message]
    assert len(findings) == 1 and findings[0].level == "WARNING" and findings[0].object_name == "Lamp Joint"
    assert "'Lamp Joint'" in findings[0].text and "'Off Joint'" not in findings[0].text
    assert "bake with the Rigid engine" in findings[0].text
    warnings = validate.check_before_bake(bpy.context.scene, engine)
    assert any("'Lamp Joint'" in w and "Rigid engine" in w for w in warnings)
    from contact_lab.panels import joints as joint_panels

    layout = Recorder()
    joint_panels.draw_scene_joints(layout, bpy.context.scene, s)
    assert len(layout.labels) == 1 and "1 rigid body constraint(s) ignored" in layout.labels[0]


def test_the_rigid_engine_does_not_say_ignored():
    hanging_boxes()
    findings = validate.validate_scene(bpy.context.scene)
    assert not [f for f in findings if "ignored" in f.message]
