"""Every kind of Blender rigid body constraint, made with Blender's own Connect operator, baked by the Rigid engine.

One small scene (no ground, 30 frames at 240 Hz): eight pairs far apart, each a passive anchor and an active box
joined by ``bpy.ops.rigidbody.connect`` (Object 1 the box, the active object; Object 2 the anchor), converted by
``bpy.ops.contact_lab.import_rigid_body()`` and baked by ``bpy.ops.contact_lab.bake()``. Each joint is checked
against what its type means, with a reference: a Fixed box keeps its pose; a Point pendulum keeps its pivot
distance; a Hinge turns only about its axis; a Slider and a Piston slide down their tilted axis as a frictionless
body does (½ g sin θ t²), staying on it; a Generic with its linear and two angular axes locked is a hinge whose
angle stays inside its limits; a Generic Spring hangs at its static deflection m g / k; a linear Motor drives its
box at the target speed along X while it falls freely (½ g t²). The bake's report lists the eight joints.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from mesh_readback import world_matrices  # noqa: E402

pytestmark = pytest.mark.blender

FRAMES = 30
FPS = 24
SUBSTEPS = 10  # 240 Hz
G = 9.81
MASS = 1.0
TILT = math.radians(30.0)  # the Slider's and the Piston's axis below the horizontal
SPRING_K = 400.0  # [N/m]: ω = 20 rad/s for 1 kg
SPRING_C = 28.0  # [N·s/m]: about 0.7 of critical damping, settled well before the last frame
MOTOR_SPEED = 1.5  # [m/s]
GENERIC_LIMIT = math.radians(30.0)
KINDS = ("FIXED", "POINT", "HINGE", "SLIDER", "PISTON", "GENERIC", "GENERIC_SPRING", "MOTOR")


def rigid(obj, kind: str) -> None:
    """A Blender rigid body on ``obj`` (Physics tab: Rigid Body), no friction, no damping."""
    view_layer = bpy.context.view_layer
    for other in view_layer.objects.selected:
        other.select_set(False)
    view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.rigidbody.object_add(type=kind)
    obj.select_set(False)
    rb = obj.rigid_body
    rb.mass, rb.friction, rb.collision_shape = MASS, 0.0, "BOX"
    rb.linear_damping = rb.angular_damping = 0.0


def box(name: str, location, size: float):
    bpy.ops.mesh.primitive_cube_add(size=size, location=location)
    obj = bpy.context.object
    obj.name = name
    return obj


def connect(body, anchor, kind: str):
    """Blender's Connect with ``body`` active and ``anchor`` selected, the pivot at the body's centre; the new
    constraint Empty."""
    before = set(bpy.data.objects)
    bpy.context.view_layer.objects.active = body  # the operator's poll asks the active object for a rigid body
    with bpy.context.temp_override(selected_objects=[body, anchor]):
        assert bpy.ops.rigidbody.connect(con_type=kind, pivot_type="ACTIVE") == {"FINISHED"}
    (empty,) = [o for o in bpy.data.objects if o not in before]
    empty.name = f"Joint {kind}"
    return empty


def set_up(kind: str, k: int):
    """The pair for ``kind``: a passive anchor and a 0.2 m box (1 kg) 1 m from it along X, 3 m from the other
    pairs along Y; the constraint Empty, set as the checks below expect."""
    y = 3.0 * k
    anchor = box(f"Anchor {kind}", (0.0, y, 0.0), 0.1)
    body = box(f"Body {kind}", (1.0, y, 0.0), 0.2)
    rigid(anchor, "PASSIVE")
    rigid(body, "ACTIVE")
    empty = connect(body, anchor, kind)
    c = empty.rigid_body_constraint
    assert (c.object1, c.object2, c.type) == (body, anchor, kind)
    if kind in ("POINT", "HINGE", "GENERIC"):
        empty.location = anchor.location  # a pendulum 1 m long
        empty.rotation_euler = (math.pi / 2, 0.0, 0.0)  # the Empty's Z along world -Y: the box swings in XZ
    if kind in ("SLIDER", "PISTON"):
        empty.rotation_euler = (0.0, TILT, 0.0)  # the Empty's X points down at TILT toward +X
    if kind == "GENERIC":
        for axis in "xyz":
            setattr(c, f"use_limit_lin_{axis}", True)
            setattr(c, f"limit_lin_{axis}_lower", 0.0)
            setattr(c, f"limit_lin_{axis}_upper", 0.0)
        c.use_limit_ang_x = c.use_limit_ang_y = c.use_limit_ang_z = True
        c.limit_ang_x_lower = c.limit_ang_x_upper = c.limit_ang_y_lower = c.limit_ang_y_upper = 0.0
        c.limit_ang_z_lower, c.limit_ang_z_upper = -GENERIC_LIMIT, GENERIC_LIMIT
    if kind == "GENERIC_SPRING":
        for axis in "xyz":
            setattr(c, f"use_limit_lin_{axis}", axis != "z")
            setattr(c, f"use_limit_ang_{axis}", True)
        for name in ("lin_x", "lin_y", "ang_x", "ang_y", "ang_z"):
            setattr(c, f"limit_{name}_lower", 0.0)
            setattr(c, f"limit_{name}_upper", 0.0)
        c.spring_type = "SPRING2"
        c.use_spring_z, c.spring_stiffness_z, c.spring_damping_z = True, SPRING_K, SPRING_C
    if kind == "MOTOR":
        c.use_motor_lin, c.motor_lin_target_velocity, c.motor_lin_max_impulse = True, MOTOR_SPEED, 50.0
    return anchor, body, empty


@pytest.fixture(scope="module")
def baked():
    """The eight pairs baked once: per kind the body's world matrices (F, 4, 4) over frames 1..FRAMES, its
    Empty's world matrix at the first frame, and the bake's report."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    import contact_lab

    contact_lab.register()
    try:
        scene = bpy.context.scene
        scene.render.fps = FPS
        scene.frame_start, scene.frame_end = 1, FRAMES
        bpy.ops.rigidbody.world_add()
        scene.rigidbody_world.substeps_per_frame = SUBSTEPS
        pairs = {kind: set_up(kind, k) for k, kind in enumerate(KINDS)}
        scene.frame_set(1)
        assert bpy.ops.contact_lab.import_rigid_body() == {"FINISHED"}
        assert scene.contact_lab.substeps == SUBSTEPS
        assert bpy.ops.contact_lab.bake() == {"FINISHED"}
        report = json.loads(scene.contact_lab.last_report)
        frames = np.arange(1, FRAMES + 1)
        out = {
            kind: (world_matrices(body, frames), np.array(empty.matrix_world))
            for kind, (_, body, empty) in pairs.items()
        }
        scene.frame_set(1)
        yield out, report
    finally:
        contact_lab.unregister()


@pytest.fixture(autouse=True)
def factory_scene():
    """The module bakes once (the fixture above) instead of the tier's fresh scene per test."""
    yield


def times() -> np.ndarray:
    return np.arange(FRAMES) / FPS


def relative_rotation(m: np.ndarray) -> np.ndarray:
    """Each frame's rotation (F, 3, 3) relative to the first frame's, in world axes."""
    return np.einsum("fij,kj->fik", m[:, :3, :3], m[0, :3, :3])


def rotation_angle(r: np.ndarray) -> np.ndarray:
    return np.arccos(np.clip(0.5 * (np.trace(r, axis1=1, axis2=2) - 1.0), -1.0, 1.0))


def test_the_report_lists_every_joint(baked):
    _, report = baked
    joints = report["joints"]
    assert joints["count"] == len(KINDS)
    assert sorted(joints["by_type"]) == sorted(KINDS) and set(joints["by_type"].values()) == {1}
    assert joints["broken"] == []


def test_fixed_keeps_its_pose(baked):
    m, _ = baked[0]["FIXED"]
    assert np.abs(m - m[:1]).max() < 1e-4


def test_point_keeps_its_pivot_distance_and_swings(baked):
    m, empty = baked[0]["POINT"]
    reach = np.linalg.norm(m[:, :3, 3] - empty[:3, 3], axis=1)
    assert np.abs(reach - 1.0).max() < 1e-4
    assert m[0, 2, 3] - m[:, 2, 3].min() > 0.5  # it fell a good part of its 1 m


@pytest.mark.parametrize("kind", ["HINGE", "GENERIC"])
def test_hinge_turns_only_about_its_axis(baked, kind):
    """The box turns about the Empty's Z (world -Y) only, about the pivot: its centre keeps 1 m from the pivot in
    the XZ plane; a Generic with those axes locked does the same, inside its ±30° limits (±0.5°)."""
    m, empty = baked[0][kind]
    axis = empty[:3, 2]
    r = relative_rotation(m)
    assert np.abs(r @ axis - axis).max() < 1e-4  # the hinge axis does not move
    centre = m[:, :3, 3] - empty[:3, 3]
    assert np.abs(np.linalg.norm(centre, axis=1) - 1.0).max() < 1e-4 and np.abs(centre @ axis).max() < 1e-4
    turned = np.degrees(rotation_angle(r))
    if kind == "HINGE":
        assert turned.max() > 45.0
    else:
        limit = math.degrees(GENERIC_LIMIT)
        assert turned.max() < limit + 0.5 and turned.max() > limit - 0.5  # it reaches the limit, not beyond


@pytest.mark.parametrize("kind", ["SLIDER", "PISTON"])
def test_slider_and_piston_move_only_along_x(baked, kind):
    """Frictionless slide down the Empty's X tilted 30° below the horizontal: ½ g sin θ t² along it (1 %), no
    sideways motion, no turn (the axis goes through the box's centre: gravity has no moment about it)."""
    m, empty = baked[0][kind]
    axis = empty[:3, 0]
    assert axis[2] < 0.0  # down the slope
    moved = m[:, :3, 3] - m[0, :3, 3]
    along = moved @ axis
    expected = 0.5 * G * math.sin(TILT) * times() ** 2
    assert np.abs(along - expected).max() < 0.01 * expected[-1]
    assert np.abs(moved - np.outer(along, axis)).max() < 1e-4
    assert rotation_angle(relative_rotation(m)).max() < 1e-4


def test_generic_spring_hangs_at_its_static_deflection(baked):
    """Locked but for Z, a linear spring k along Z: it settles at m g / k below where it started (2 %)."""
    m, _ = baked[0]["GENERIC_SPRING"]
    moved = m[:, :3, 3] - m[0, :3, 3]
    sag = MASS * G / SPRING_K
    assert np.abs(moved[-5:, 2] + sag).max() < 0.02 * sag
    assert np.abs(moved[:, :2]).max() < 1e-4
    assert rotation_angle(relative_rotation(m)).max() < 1e-4


def test_motor_drives_along_x_at_its_target_while_falling_freely(baked):
    """A Motor locks nothing: the box falls ½ g t² and, as in Blender, Object 1 (the box) is driven at the target
    speed along the Empty's X (world +X) relative to Object 2 (the anchor); from rest it needs 1.5 m/s ÷ 50 N
    = 0.03 s to get there."""
    m, _ = baked[0]["MOTOR"]
    moved = m[:, :3, 3] - m[0, :3, 3]
    t = times()
    assert np.abs(moved[:, 2] + 0.5 * G * t**2).max() < 0.01 * 0.5 * G * t[-1] ** 2
    speed = np.diff(moved[:, 0]) * FPS
    assert np.abs(speed[2:] - MOTOR_SPEED).max() < 0.02 * MOTOR_SPEED
