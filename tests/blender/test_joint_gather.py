"""Blender's Rigid Body Constraints read into the core's JointSpec records, and the constraints the bake refuses.

References: the values each test writes into Blender's settings (every field must come back, converted to metres
where it is a length), the constraint object's own world matrix (position and quaternion), and for each bad input
the constraint object's name in Check Scene's error and in the bake's refusal (before anything is simulated).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from conftest import add_constraint, add_cube, add_ground  # noqa: E402
from contact_lab.addon.bake import driver as bake  # noqa: E402
from contact_lab.addon.checks import validate  # noqa: E402
from contact_lab.addon.errors import BakeError  # noqa: E402
from contact_lab.addon.rigid import gather  # noqa: E402
from contact_lab.core.rigid.joints import JointKind  # noqa: E402

pytestmark = pytest.mark.blender


def door_scene(kind="HINGE", **kwargs):
    """Ground, two active boxes 'Frame' and 'Door' and a constraint 'Joint' between them."""
    s = bpy.context.scene.contact_lab
    s.engine, s.frame_start, s.frame_end = "RIGID", 1, 3
    add_ground()
    frame = add_cube("Frame", (0.0, 0.0, 2.0))
    door = add_cube("Door", (1.5, 0.0, 2.0))
    return frame, door, add_constraint("Joint", kind, frame, door, **kwargs)


def gathered(scene=None):
    return gather.gather_scene(scene or bpy.context.scene).joints


# what is read ---------------------------------------------------------------------------------------------------


def test_every_setting_is_copied_with_the_frame_in_metres():
    """Every setting written into a Generic Spring comes back in its JointSpec field (lengths × scale_length),
    and the frame is the Empty's world location and rotation (scale ignored)."""
    scene = bpy.context.scene
    scene.unit_settings.scale_length = 0.5
    _, _, joint = door_scene("GENERIC_SPRING", location=(0.25, 0.5, 2.0), rotation=(0.3, -0.2, 1.1))
    joint.scale = (2.0, 3.0, 4.0)
    c = joint.rigid_body_constraint
    for k, axis in enumerate("xyz"):
        setattr(c, f"use_limit_lin_{axis}", k != 1)
        setattr(c, f"limit_lin_{axis}_lower", -0.1 * (k + 1))
        setattr(c, f"limit_lin_{axis}_upper", 0.2 * (k + 1))
        setattr(c, f"use_limit_ang_{axis}", k == 1)
        setattr(c, f"limit_ang_{axis}_lower", -0.3 * (k + 1))
        setattr(c, f"limit_ang_{axis}_upper", 0.4 * (k + 1))
        setattr(c, f"use_spring_{axis}", k == 0)
        setattr(c, f"use_spring_ang_{axis}", k == 2)
        setattr(c, f"spring_stiffness_{axis}", 100.0 + k)
        setattr(c, f"spring_stiffness_ang_{axis}", 200.0 + k)
        setattr(c, f"spring_damping_{axis}", 0.1 + k)
        setattr(c, f"spring_damping_ang_{axis}", 0.2 + k)
    c.spring_type = "SPRING1"
    c.use_motor_lin, c.use_motor_ang = True, False
    c.motor_lin_target_velocity, c.motor_ang_target_velocity = 2.0, -3.0
    c.motor_lin_max_impulse, c.motor_ang_max_impulse = 4.0, 5.0
    c.use_breaking, c.breaking_threshold = True, 7.0
    c.disable_collisions = False
    c.use_override_solver_iterations, c.solver_iterations = True, 33
    (spec,) = gathered()
    m = 0.5
    assert spec.kind == JointKind.GENERIC_SPRING and spec.name == "Joint"
    assert (spec.body0, spec.body1) == (1, 0)  # Object 1 'Frame', Object 2 'Door'; active bodies sorted by name
    assert np.allclose(spec.position, np.array([0.25, 0.5, 2.0]) * m, atol=1e-6)
    matrix = np.array(joint.matrix_world)[:3, :3]
    expected = matrix / np.linalg.norm(matrix, axis=0)
    assert np.allclose(quat_matrix(spec.rotation), expected, atol=1e-6)
    assert spec.use_limit_lin == (True, False, True) and spec.use_limit_ang == (False, True, False)
    assert np.allclose(spec.limit_lin_lower, [-0.1 * m, -0.2 * m, -0.3 * m])
    assert np.allclose(spec.limit_lin_upper, [0.2 * m, 0.4 * m, 0.6 * m])
    assert np.allclose(spec.limit_ang_lower, [-0.3, -0.6, -0.9]) and np.allclose(spec.limit_ang_upper, [0.4, 0.8, 1.2])
    assert spec.spring_type == "SPRING1"
    assert spec.use_spring_lin == (True, False, False) and spec.use_spring_ang == (False, False, True)
    assert np.allclose(spec.spring_stiffness_lin, np.array([100.0, 101.0, 102.0]) / m)
    assert np.allclose(spec.spring_stiffness_ang, np.array([200.0, 201.0, 202.0]) * m * m)
    assert np.allclose(spec.spring_damping_lin, [0.1, 1.1, 2.1]) and np.allclose(
        spec.spring_damping_ang, [0.2, 1.2, 2.2]
    )
    assert spec.use_motor_lin and not spec.use_motor_ang
    assert math.isclose(spec.motor_lin_target_velocity, 2.0 * m) and math.isclose(spec.motor_ang_target_velocity, -3.0)
    assert math.isclose(spec.motor_lin_max_impulse, 4.0 * m) and math.isclose(spec.motor_ang_max_impulse, 5.0 * m * m)
    # Blender's threshold counts per Bullet substep, ours per core step: scaled by h / h_B (Blender's 10 substeps)
    world = scene.rigidbody_world
    fps = scene.render.fps / scene.render.fps_base
    h_blender, h_ours = 1.0 / (fps * world.substeps_per_frame), 1.0 / (fps * scene.contact_lab.substeps)
    assert math.isclose(spec.breaking_threshold, 7.0 * m * h_ours / h_blender)
    assert math.isclose(spec.blender_substep, h_blender) and spec.blender_iterations == world.solver_iterations
    assert spec.disable_collisions is False and spec.solver_iterations == 33


def quat_matrix(q):
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_defaults_unbreakable_scene_iterations():
    """Breakable off → an infinite threshold; no iteration override → 0 (the scene's)."""
    _, _, joint = door_scene("POINT")
    joint.rigid_body_constraint.use_breaking = False
    joint.rigid_body_constraint.use_override_solver_iterations = False
    (spec,) = gathered()
    assert spec.kind == JointKind.POINT and spec.breaking_threshold == math.inf and spec.solver_iterations == 0


def test_a_passive_object_1_is_the_world_and_the_sides_swap():
    """Object 1 passive, Object 2 active: body0 is Object 2's body, body1 the world, and the hinge's limit
    [lo, hi] becomes [-hi, -lo] and the motor target changes sign (the motion counted from the other side)."""
    frame, door, joint = door_scene("HINGE")
    frame.contact_lab.role = "PASSIVE"
    c = joint.rigid_body_constraint
    c.use_limit_ang_z, c.limit_ang_z_lower, c.limit_ang_z_upper = True, -0.2, 0.7
    c.motor_ang_target_velocity = 1.5
    (spec,) = gathered()
    assert (spec.body0, spec.body1) == (0, -1)  # 'Door' is the only active body
    assert np.allclose(spec.limit_ang_lower[2], -0.7) and np.allclose(spec.limit_ang_upper[2], 0.2)
    assert spec.motor_ang_target_velocity == -1.5


def test_a_passive_object_2_and_an_empty_slot_are_the_world():
    frame, door, joint = door_scene("POINT")
    door.contact_lab.role = "PASSIVE"
    second = add_constraint("Pin", "POINT", frame, None)
    second.rigid_body_constraint.limit_ang_z_upper = 0.3
    specs = gathered()
    assert [(s.name, s.body0, s.body1) for s in specs] == [("Joint", 0, -1), ("Pin", 0, -1)]
    assert specs[1].limit_ang_upper[2] == pytest.approx(0.3)  # not swapped: Object 1 is the body


def test_without_a_rigid_body_world_constraints_are_read_from_the_objects():
    """Blender's world removed (the objects keep their constraints): the joint is still read, Check Scene says so;
    a constraint missing from the world's Constraints collection is baked and said too."""
    _, _, joint = door_scene("FIXED")
    bpy.ops.rigidbody.world_remove()
    assert bpy.context.scene.rigidbody_world is None and joint.rigid_body_constraint is not None
    assert [s.name for s in gathered()] == ["Joint"]
    notes = [f.text for f in validate.validate_scene(bpy.context.scene) if f.level == "INFO"]
    assert any("no Rigid Body World" in text for text in notes), notes


def test_a_constraint_outside_the_worlds_collection_is_baked_and_said():
    _, _, joint = door_scene("FIXED")
    bpy.context.scene.rigidbody_world.constraints.objects.unlink(joint)
    assert [s.name for s in gathered()] == ["Joint"]
    notes = [f for f in validate.validate_scene(bpy.context.scene) if f.level == "INFO" and f.object_name == "Joint"]
    assert any("Constraints collection" in f.text for f in notes), notes


def test_a_disabled_constraint_is_skipped_and_said():
    _, _, joint = door_scene("FIXED")
    joint.rigid_body_constraint.enabled = False
    joint.rigid_body_constraint.breaking_threshold = float("nan")  # not read: not refused either
    assert gathered() == []
    findings = [f for f in validate.validate_scene(bpy.context.scene) if f.object_name == "Joint"]
    assert [f.level for f in findings] == ["INFO"] and "disabled" in findings[0].text


# refusals ------------------------------------------------------------------------------------------------------


def _missing(joint, frame, door):
    other = bpy.data.objects.new("Elsewhere", bpy.data.meshes.new("Elsewhere"))
    joint.rigid_body_constraint.object2 = other  # in bpy.data, in no scene
    return "not in the scene"


def _no_objects(joint, frame, door):
    joint.rigid_body_constraint.object1 = joint.rigid_body_constraint.object2 = None
    return "joins no objects"


def _same(joint, frame, door):
    joint.rigid_body_constraint.object2 = frame
    return "to itself"


def _not_a_body(joint, frame, door):
    door.contact_lab.role = "NONE"
    return "not a contact lab body"


def _compound_part(joint, frame, door):
    frame.contact_lab.shape = "COMPOUND"
    door.parent = frame  # a part of 'Frame' now, not a body of its own
    return "part of the compound parent 'frame'"


def _two_passive(joint, frame, door):
    frame.contact_lab.role = door.contact_lab.role = "PASSIVE"
    add_cube("Ball", (5.0, 0.0, 2.0))  # the scene still has an active body
    return "no active body"


def _crossed_limits(joint, frame, door):
    c = joint.rigid_body_constraint
    c.use_limit_ang_z, c.limit_ang_z_lower, c.limit_ang_z_upper = True, 0.5, -0.5
    return "above upper"


def _negative_threshold(joint, frame, door):
    joint.rigid_body_constraint.use_breaking, joint.rigid_body_constraint.breaking_threshold = True, -1.0
    return "breaking threshold (breaking_threshold) is -1"


def _negative_stiffness(joint, frame, door):
    joint.rigid_body_constraint.spring_stiffness_ang_y = -10.0
    return "y angle stiffness (spring_stiffness_ang_y) is -10"


def _negative_damping(joint, frame, door):
    joint.rigid_body_constraint.spring_damping_x = -0.5
    return "damping x (spring_damping_x) is -0.5"


def _spring_on_no_axis(joint, frame, door):
    c = joint.rigid_body_constraint
    c.type = "GENERIC_SPRING"
    for axis in "xyz":
        setattr(c, f"use_spring_{axis}", False)
        setattr(c, f"use_spring_ang_{axis}", False)
    return "spring on no axis"


def _nan(joint, frame, door):
    joint.rigid_body_constraint.motor_ang_target_velocity = float("nan")
    return "not a number"


def _animated_frame(joint, frame, door):
    joint.keyframe_insert("location", frame=1)
    joint.location.x += 1.0
    joint.keyframe_insert("location", frame=3)
    return "animated location"


def _keyed_enabled(joint, frame, door):
    joint.rigid_body_constraint.keyframe_insert("enabled", frame=1)
    return "enabled is animated"


REFUSALS = [
    _missing, _no_objects, _same, _not_a_body, _compound_part, _two_passive, _crossed_limits, _negative_threshold,
    _negative_stiffness, _negative_damping, _spring_on_no_axis, _nan, _animated_frame, _keyed_enabled,
]  # fmt: skip


@pytest.mark.parametrize("case", [pytest.param(c, id=c.__name__.strip("_")) for c in REFUSALS])
def test_each_bad_constraint_is_refused_by_name(case, monkeypatch):
    """Check Scene names the constraint object with an ERROR saying why; the bake refuses with it before it
    simulates anything; and with Check Scene taken out, the export's own check refuses with the same words."""
    frame, door, joint = door_scene("HINGE")
    phrase = case(joint, frame, door)
    scene = bpy.context.scene
    errors = [f for f in validate.validate_scene(scene) if f.level == "ERROR"]
    assert [f.object_name for f in errors] == ["Joint"], [f.text for f in errors]
    assert phrase in errors[0].text.lower()
    with pytest.raises(BakeError) as refused:
        bake.bake_scene(scene)
    assert "'Joint'" in str(refused.value) and scene.contact_lab.last_report == ""
    monkeypatch.setattr(bake, "check_before_bake", lambda *args, **kwargs: [])
    with pytest.raises(BakeError) as refused:
        bake.bake_scene(scene)
    assert "'Joint'" in str(refused.value) and phrase in str(refused.value).lower()


def test_a_good_constraint_has_no_error():
    """The negative of every refusal: the door scene as built has no ERROR finding."""
    door_scene("HINGE")
    assert [f.text for f in validate.validate_scene(bpy.context.scene) if f.level == "ERROR"] == []


def test_a_moving_passive_side_is_a_warning():
    """A Passive Object 1 with keyframes is held as the world at its start pose: Check Scene warns, naming the
    constraint object and the passive body; a still one gets no warning (the negative)."""
    frame, _, _ = door_scene("HINGE")
    frame.contact_lab.role = "PASSIVE"
    assert not [f for f in validate.validate_scene(bpy.context.scene) if f.level == "WARNING" and "moves" in f.text]
    frame.keyframe_insert("location", frame=1)
    frame.location.z += 1.0
    frame.keyframe_insert("location", frame=3)
    warnings = [f for f in validate.validate_scene(bpy.context.scene) if f.level == "WARNING" and "moves" in f.text]
    assert [f.object_name for f in warnings] == ["Joint"] and "'Frame' is Passive and moves" in warnings[0].text


def test_a_world_without_a_constraints_collection_says_each_constraint_is_baked():
    """The world's Constraints collection cleared (Blender then simulates no constraint): each is still baked, and
    said."""
    _, _, joint = door_scene("FIXED")
    bpy.context.scene.rigidbody_world.constraints = None
    assert [s.name for s in gathered()] == ["Joint"]
    notes = [f for f in validate.validate_scene(bpy.context.scene) if f.level == "INFO" and f.object_name == "Joint"]
    assert any("Constraints collection" in f.text for f in notes), notes
