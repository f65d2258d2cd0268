"""Blender's rigid body constraint conventions, measured in its own simulation (Bullet) and recorded.

Each ``measure_*`` function builds a small scene with one Blender Rigid Body Constraint, bakes Blender's rigid body
world (its point cache, frame by frame) and returns what the motion says about a convention: the axis a Hinge turns
about, the sense its limits count, what a motor's maximum impulse bounds, what a spring's damping means, when a
breakable joint breaks, how far Bullet's pendulum period is from the analytic one. Run as a script (Blender 5.0 as a
Python module) it writes every measurement to ``tests/data/joint_conventions.json``::

    PYTHONPATH=... python tests/blender/record_joint_conventions.py

:mod:`test_joint_conventions` runs the same functions again and compares with the file. The statements the numbers
support are written next to them in the file (``"reading"``), in the core's terms.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "data" / "joint_conventions.json"
FPS = 60
G = 9.81


# scene pieces ----------------------------------------------------------------------------------------------------


def new_world(*, substeps: int = 10, iterations: int = 10, frames: int = 120, gravity: bool = True):
    """An empty scene at ``FPS`` with a rigid body world (Blender's defaults but for the given values)."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = FPS
    scene.frame_start, scene.frame_end = 1, frames
    scene.use_gravity = gravity
    bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    world.substeps_per_frame, world.solver_iterations = substeps, iterations
    world.point_cache.frame_start, world.point_cache.frame_end = 1, frames
    return scene


def _select_only(obj) -> None:
    import bpy

    for other in bpy.context.view_layer.objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def box(name: str, location, *, kind: str = "ACTIVE", size: float = 0.1, mass: float = 1.0):
    """A cube of edge ``size`` [m] with a Blender rigid body (no damping, never deactivated)."""
    import bpy

    h = size / 2
    mesh = bpy.data.meshes.new(name)
    corners = [(x, y, z) for z in (-h, h) for y in (-h, h) for x in (-h, h)]
    mesh.from_pydata(corners, [], [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)])
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    _select_only(obj)
    bpy.ops.rigidbody.object_add(type=kind)
    rb = obj.rigid_body
    rb.collision_shape, rb.mass = "BOX", mass
    rb.linear_damping = rb.angular_damping = 0.0
    rb.use_deactivation = False
    return obj


def joint(name: str, kind: str, object1, object2, *, location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0)):
    """An Empty with a Rigid Body Constraint of ``kind`` between ``object1`` and ``object2``."""
    import bpy

    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.location, obj.rotation_euler = location, rotation
    _select_only(obj)
    bpy.ops.rigidbody.constraint_add(type=kind)
    c = obj.rigid_body_constraint
    c.object1, c.object2 = object1, object2
    return obj


def run(scene, objects) -> np.ndarray:
    """Bake Blender's rigid body world; world matrices (F, N, 4, 4) of ``objects`` at every frame."""
    import bpy

    frames = range(scene.frame_start, scene.frame_end + 1)
    bpy.ops.ptcache.bake_all(bake=True)
    out = np.zeros((len(frames), len(objects), 4, 4))
    for i, frame in enumerate(frames):
        scene.frame_set(frame)
        for k, obj in enumerate(objects):
            out[i, k] = np.array(obj.matrix_world)
    return out


def rotation_vector(r: np.ndarray) -> np.ndarray:
    """Axis × angle [rad] of a rotation matrix (3, 3) (angles below π)."""
    angle = math.acos(max(-1.0, min(1.0, (np.trace(r) - 1.0) / 2.0)))
    axis = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    norm = np.linalg.norm(axis)
    return np.zeros(3) if norm < 1e-12 else axis / norm * angle


def euler_matrix(euler) -> np.ndarray:
    from mathutils import Euler

    return np.array(Euler(euler, "XYZ").to_matrix())


def relative_angles(matrices: np.ndarray, frame_rotation: np.ndarray) -> np.ndarray:
    """Rotation vectors (F, 3) of body 1 relative to body 0 since the first frame, in the joint frame's axes."""
    out = np.zeros((matrices.shape[0], 3))
    r0 = matrices[0, 0, :3, :3].T @ matrices[0, 1, :3, :3]
    for f in range(matrices.shape[0]):
        rel = matrices[f, 0, :3, :3].T @ matrices[f, 1, :3, :3] @ r0.T  # body 1 in body 0's frame, since frame 0
        out[f] = frame_rotation.T @ rotation_vector(rel)
    return out


def relative_offsets(matrices: np.ndarray, frame_rotation: np.ndarray) -> np.ndarray:
    """Displacement (F, 3) [m] of body 1's origin relative to body 0 since the first frame, in the joint's axes."""
    p = np.einsum(
        "fij,fj->fi", matrices[:, 0, :3, :3].transpose(0, 2, 1), matrices[:, 1, :3, 3] - matrices[:, 0, :3, 3]
    )
    return (p - p[0]) @ frame_rotation


# hinge -------------------------------------------------------------------------------------------------------------

HINGE_EULER = (0.4, 0.7, 0.2)
"""The hinge's Empty rotation (XYZ Euler) [rad]: an arbitrary frame, so only its own axes explain the motion."""


def measure_hinge_axis() -> dict:
    """A bob on a hinge whose Empty is turned arbitrarily, placed so that gravity turns it: the axis of the bob's
    rotation in the Empty's frame, and how far the bob's point at the pivot drifts [m]."""
    scene = new_world(frames=30)
    rot = euler_matrix(HINGE_EULER)
    axis = rot[:, 2]
    arm = np.cross(axis, (0.0, 0.0, -1.0))
    arm /= np.linalg.norm(arm)
    pivot = np.array([0.0, 0.0, 2.0])
    anchor = box("Anchor", pivot + (0.0, 0.0, 0.5), kind="PASSIVE")
    bob = box("Bob", pivot + 0.5 * arm)
    joint("Hinge", "HINGE", anchor, bob, location=pivot, rotation=HINGE_EULER)
    m = run(scene, [anchor, bob])
    turn = relative_angles(m, rot)[-1]
    local_pivot = m[0, 1, :3, :3].T @ (pivot - m[0, 1, :3, 3])
    drift = max(float(np.linalg.norm(m[f, 1, :3, :3] @ local_pivot + m[f, 1, :3, 3] - pivot)) for f in range(len(m)))
    return {"axis_in_frame": (turn / np.linalg.norm(turn)).round(4).tolist(), "angle": float(np.linalg.norm(turn)),
            "pivot_drift_m": drift}  # fmt: skip


def measure_hinge_limit(lower_deg: float, upper_deg: float, *, swap: bool = False) -> dict:
    """A bob hinged about the Empty's Z (= world -Y, the Empty turned 90° about X) starting horizontal, so that
    gravity turns it by a negative angle about Z; limits [lower, upper]°. Returns the final angle about the
    frame's Z of Object 2 relative to Object 1 [deg] (``swap``: the bob is Object 1)."""
    scene = new_world(frames=90)
    euler = (math.pi / 2, 0.0, 0.0)
    pivot = np.array([0.0, 0.0, 2.0])
    anchor = box("Anchor", pivot + (0.0, 0.0, 0.5), kind="PASSIVE")
    bob = box("Bob", pivot + (0.5, 0.0, 0.0))
    ends = (bob, anchor) if swap else (anchor, bob)
    j = joint("Hinge", "HINGE", *ends, location=pivot, rotation=euler)
    c = j.rigid_body_constraint
    c.use_limit_ang_z = True
    c.limit_ang_z_lower, c.limit_ang_z_upper = math.radians(lower_deg), math.radians(upper_deg)
    m = run(scene, list(ends))
    angles = relative_angles(m, euler_matrix(euler))
    return {"final_deg": float(math.degrees(angles[-1, 2])), "extreme_deg": float(math.degrees(angles[:, 2].min()))}


AXIS_TO_MINUS_Y = {"x": (0.0, 0.0, -math.pi / 2), "y": (0.0, 0.0, math.pi), "z": (math.pi / 2, 0.0, 0.0)}
"""Empty rotations (XYZ Euler) that turn its X, Y or Z onto world -Y."""


def measure_axis_limit(kind: str, axis: str, lower_deg: float, upper_deg: float) -> dict:
    """As :func:`measure_hinge_limit` for a GENERIC joint free about one axis only (every other axis locked by
    equal limits) or a PISTON (``axis`` 'x'): the Empty turned so that this axis is world -Y, gravity turns the
    bob by a negative angle about it; limits [lower, upper]° on it. The final angle about that axis [deg]."""
    scene = new_world(frames=90)
    euler = AXIS_TO_MINUS_Y[axis]
    pivot = np.array([0.0, 0.0, 2.0])
    anchor = box("Anchor", pivot + (0.0, 0.0, 0.5), kind="PASSIVE")
    bob = box("Bob", pivot + (0.5, 0.0, 0.0))
    c = joint("Joint", kind, anchor, bob, location=pivot, rotation=euler).rigid_body_constraint
    if kind == "GENERIC":
        for other in "xyz":
            for what in ("lin", "ang"):
                setattr(c, f"use_limit_{what}_{other}", True)
                setattr(c, f"limit_{what}_{other}_lower", 0.0)
                setattr(c, f"limit_{what}_{other}_upper", 0.0)
    setattr(c, f"use_limit_ang_{axis}", True)
    setattr(c, f"limit_ang_{axis}_lower", math.radians(lower_deg))
    setattr(c, f"limit_ang_{axis}_upper", math.radians(upper_deg))
    m = run(scene, [anchor, bob])
    angle = relative_angles(m, euler_matrix(euler))[-1, "xyz".index(axis)]
    return {"final_deg": float(math.degrees(angle))}


# slider / piston ---------------------------------------------------------------------------------------------------

SLIDE_EULER = (0.0, math.radians(30.0), 0.0)
"""The slider's Empty: its X turned 30° down about Y (X points along (cos 30°, 0, -sin 30°))."""


def measure_slide(kind: str, lower: float | None = None, upper: float | None = None) -> dict:
    """A box on a SLIDER or PISTON whose X points 30° downhill: the direction it moves in the Empty's frame and
    the final offset along X [m] (with limits [lower, upper] on X when given)."""
    scene = new_world(frames=60)
    centre = np.array([0.0, 0.0, 2.0])
    anchor = box("Anchor", centre + (0.0, 0.0, 0.5), kind="PASSIVE")
    body = box("Body", centre)
    j = joint("Slide", kind, anchor, body, location=centre, rotation=SLIDE_EULER)
    if lower is not None:
        c = j.rigid_body_constraint
        c.use_limit_lin_x, c.limit_lin_x_lower, c.limit_lin_x_upper = True, lower, upper
    m = run(scene, [anchor, body])
    offset = relative_offsets(m, euler_matrix(SLIDE_EULER))
    direction = offset[-1] / max(np.linalg.norm(offset[-1]), 1e-12)
    return {"direction_in_frame": direction.round(4).tolist(), "final_x": float(offset[-1, 0])}


def downhill_euler(axis: str) -> tuple[float, float, float]:
    """The Empty rotation (XYZ Euler) that points its ``axis`` along (cos 30°, 0, -sin 30°), 30° downhill."""
    from mathutils import Matrix

    onto_x = {"x": np.eye(3), "y": euler_matrix((0.0, 0.0, -math.pi / 2)), "z": euler_matrix((0.0, math.pi / 2, 0.0))}
    matrix = euler_matrix((0.0, math.radians(30.0), 0.0)) @ onto_x[axis]
    x, y, z = Matrix(matrix.tolist()).to_euler("XYZ")
    return (x, y, z)


def measure_generic_slide(axis: str, lower: float, upper: float) -> dict:
    """A box on a GENERIC joint free along one axis only (limits [lower, upper] [m] on it, every other axis locked
    by equal limits), that axis 30° downhill: the final offset of B from A along it [m]."""
    scene = new_world(frames=60)
    euler = downhill_euler(axis)
    centre = np.array([0.0, 0.0, 2.0])
    anchor = box("Anchor", centre + (0.0, 0.0, 0.5), kind="PASSIVE")
    body = box("Body", centre)
    c = joint("Joint", "GENERIC", anchor, body, location=centre, rotation=euler).rigid_body_constraint
    for other in "xyz":
        for what in ("lin", "ang"):
            setattr(c, f"use_limit_{what}_{other}", True)
            setattr(c, f"limit_{what}_{other}_lower", lower if (what, other) == ("lin", axis) else 0.0)
            setattr(c, f"limit_{what}_{other}_upper", upper if (what, other) == ("lin", axis) else 0.0)
    m = run(scene, [anchor, body])
    return {"final": float(relative_offsets(m, euler_matrix(euler))[-1, "xyz".index(axis)])}


# motor ---------------------------------------------------------------------------------------------------------------

MOTOR_EULER = (0.3, -0.5, 0.9)


def measure_motor(*, linear: bool, mass: float, max_impulse: float, substeps: int = 10, frames: int = 31) -> dict:
    """A free box driven by a MOTOR (no gravity) against a passive anchor, target velocity 1 (m/s or rad/s) along
    or about the Empty's X: the body's velocity relative to the anchor in the Empty's frame at the last frame."""
    scene = new_world(frames=frames, substeps=substeps, gravity=False)
    anchor = box("Anchor", (0.0, 0.0, 0.0), kind="PASSIVE")
    body = box("Body", (0.0, 0.0, 1.0), mass=mass)
    j = joint("Motor", "MOTOR", anchor, body, location=(0.0, 0.0, 1.0), rotation=MOTOR_EULER)
    c = j.rigid_body_constraint
    c.use_motor_lin, c.use_motor_ang = linear, not linear
    c.motor_lin_target_velocity = c.motor_ang_target_velocity = 1.0
    c.motor_lin_max_impulse = c.motor_ang_max_impulse = max_impulse
    m = run(scene, [anchor, body])
    rot = euler_matrix(MOTOR_EULER)
    if linear:
        offsets = relative_offsets(m, rot)
        velocity = (offsets[-1] - offsets[-2]) * FPS
    else:
        angles = relative_angles(m, rot)
        velocity = (angles[-1] - angles[-2]) * FPS
    return {"velocity_in_frame": velocity.round(8).tolist(), "time_s": (frames - 1) / FPS}


def measure_motor_under_gravity() -> dict:
    """An angular MOTOR between a passive anchor and a box, under gravity: how far the box falls in 0.5 s [m] (a
    MOTOR that locked the other axes would hold it)."""
    scene = new_world(frames=31)
    anchor = box("Anchor", (0.0, 0.0, 2.5), kind="PASSIVE")
    body = box("Body", (0.0, 0.0, 2.0))
    c = joint("Motor", "MOTOR", anchor, body, location=(0.0, 0.0, 2.0)).rigid_body_constraint
    c.use_motor_ang, c.motor_ang_max_impulse = True, 10.0
    m = run(scene, [anchor, body])
    return {"fall_m": float(m[0, 1, 2, 3] - m[-1, 1, 2, 3])}


# spring ------------------------------------------------------------------------------------------------------------


def measure_spring(spring_type: str, *, mass: float = 1.0, stiffness: float = 100.0, damping: float = 0.5) -> dict:
    """A box hanging on a GENERIC_SPRING whose X points down (every other axis locked), released at the spring's
    rest length so that it oscillates about the static sag m g / k: the fitted angular frequency [rad/s], decay
    rate sigma [1/s] (amplitude ∝ exp(-sigma t)) and the static sag [m]."""
    scene = new_world(frames=240)
    euler = (0.0, math.pi / 2, 0.0)  # the Empty's X along world -Z
    centre = np.array([0.0, 0.0, 2.0])
    anchor = box("Anchor", centre + (0.0, 0.0, 0.5), kind="PASSIVE")
    body = box("Body", centre, mass=mass)
    j = joint("Spring", "GENERIC_SPRING", anchor, body, location=centre, rotation=euler)
    c = j.rigid_body_constraint
    c.spring_type = spring_type
    for axis in "xyz":
        setattr(c, f"use_limit_ang_{axis}", True)
        setattr(c, f"limit_ang_{axis}_lower", 0.0)
        setattr(c, f"limit_ang_{axis}_upper", 0.0)
        if axis != "x":
            setattr(c, f"use_limit_lin_{axis}", True)
            setattr(c, f"limit_lin_{axis}_lower", 0.0)
            setattr(c, f"limit_lin_{axis}_upper", 0.0)
    c.use_spring_x, c.spring_stiffness_x, c.spring_damping_x = True, stiffness, damping
    m = run(scene, [anchor, body])
    x = relative_offsets(m, euler_matrix(euler))[:, 0]
    return {**fit_damped(x, 1.0 / FPS), "x_final_m": float(x[-1]), "x_max_m": float(x.max())}


def measure_angular_spring(spring_type: str, *, damping: float = 0.5, stiffness: float = 100.0) -> dict:
    """A 1 kg, 0.1 m cube 0.5 m from the pivot of a GENERIC_SPRING whose only free axis is X (world -Y, with an
    angular spring), released level so that gravity swings it about the spring's rest angle: the fitted angular
    frequency, decay rate and rest angle [rad] of its angle about X."""
    scene = new_world(frames=240)
    euler = AXIS_TO_MINUS_Y["x"]
    pivot = np.array([0.0, 0.0, 2.0])
    anchor = box("Anchor", pivot + (0.0, 0.0, 0.5), kind="PASSIVE")
    bob = box("Bob", pivot + (0.5, 0.0, 0.0))
    c = joint("Spring", "GENERIC_SPRING", anchor, bob, location=pivot, rotation=euler).rigid_body_constraint
    c.spring_type = spring_type
    for axis in "xyz":
        for what in ("lin", "ang"):
            if (what, axis) != ("ang", "x"):
                setattr(c, f"use_limit_{what}_{axis}", True)
                setattr(c, f"limit_{what}_{axis}_lower", 0.0)
                setattr(c, f"limit_{what}_{axis}_upper", 0.0)
    c.use_spring_ang_x, c.spring_stiffness_ang_x, c.spring_damping_ang_x = True, stiffness, damping
    m = run(scene, [anchor, bob])
    return fit_damped(relative_angles(m, euler_matrix(euler))[:, 0], 1.0 / FPS)


def fit_damped(x: np.ndarray, dt: float) -> dict:
    """Fit ``x(t) = c + a exp(-sigma t) cos(omega t + phi)`` to samples ``x`` every ``dt`` [s] (least squares)."""
    from scipy.optimize import least_squares

    t = np.arange(x.size) * dt
    crossings = np.nonzero(np.diff(np.sign(x - x.mean())))[0]
    omega0 = math.pi / (np.mean(np.diff(crossings)) * dt) if crossings.size > 2 else 10.0

    def residual(p):
        c, a, sigma, omega, phi = p
        return c + a * np.exp(-sigma * t) * np.cos(omega * t + phi) - x

    fit = least_squares(residual, [x.mean(), x[0] - x.mean(), 0.1, omega0, 0.0])
    c, a, sigma, omega, phi = fit.x
    if a < 0:
        a, phi = -a, phi + math.pi
    return {
        "omega": float(omega),
        "sigma": float(sigma),
        "sag_m": float(c),
        "rms_m": float(np.sqrt(np.mean(fit.fun**2))),
    }


# breaking ------------------------------------------------------------------------------------------------------------


def measure_breaking(ratio: float, *, mass: float = 1.0, substeps: int = 10) -> dict:
    """A box hung from a passive anchor by a breakable FIXED joint with threshold ``ratio`` × m g h (h: Bullet's
    substep 1 / (fps × substeps)): whether it broke within 1 s, and the first frame it fell."""
    scene = new_world(frames=61, substeps=substeps)
    anchor = box("Anchor", (0.0, 0.0, 2.2), kind="PASSIVE")
    body = box("Body", (0.0, 0.0, 2.0), mass=mass)
    j = joint("Fixed", "FIXED", anchor, body, location=(0.0, 0.0, 2.1))
    c = j.rigid_body_constraint
    c.use_breaking, c.breaking_threshold = True, ratio * mass * G / (FPS * substeps)
    m = run(scene, [anchor, body])
    fallen = np.nonzero(m[:, 1, 2, 3] < 2.0 - 0.01)[0]
    return {"broke": bool(fallen.size), "first_frame_fallen": int(fallen[0]) + 1 if fallen.size else None}


def measure_breaking_lever(ratio: float, *, arm: float = 2.0) -> dict:
    """As :func:`measure_breaking` with the box ``arm`` [m] to the side of the joint: its angular rows carry
    ``arm`` × m g h [N·m·s] per substep, its vertical row m g h; threshold ``ratio`` × m g h."""
    scene = new_world(frames=61)
    anchor = box("Anchor", (0.0, 0.0, 2.2), kind="PASSIVE")
    body = box("Body", (arm, 0.0, 2.2))
    c = joint("Fixed", "FIXED", anchor, body, location=(0.0, 0.0, 2.2)).rigid_body_constraint
    c.use_breaking, c.breaking_threshold = True, ratio * G / (FPS * 10)
    m = run(scene, [anchor, body])
    fallen = np.nonzero(m[:, 1, 2, 3] < 2.2 - 0.01)[0]
    return {"broke": bool(fallen.size)}


# pendulum --------------------------------------------------------------------------------------------------------


def pendulum_reference(length: float, size: float, amplitude: float) -> float:
    """Period [s] of a cube of edge ``size`` swinging on a frictionless point ``length`` from its centre, from
    amplitude [rad]: the physical pendulum's small-amplitude period times the elliptic-integral factor."""
    from scipy.special import ellipk

    inertia = length**2 + size**2 / 6.0  # per unit mass, about the pivot
    small = 2.0 * math.pi * math.sqrt(inertia / (G * length))
    return small * 2.0 / math.pi * float(ellipk(math.sin(amplitude / 2.0) ** 2))


def measure_pendulum(substeps: int, *, amplitude_deg: float = 10.0, length: float = 1.0, size: float = 0.1) -> dict:
    """A cube on a POINT constraint released at ``amplitude_deg`` from the vertical: the mean period from the
    bob's upward crossings of the vertical over 5 s, and its error against :func:`pendulum_reference`."""
    scene = new_world(frames=301, substeps=substeps)
    theta = math.radians(amplitude_deg)
    pivot = np.array([0.0, 0.0, 3.0])
    anchor = box("Anchor", pivot + (0.0, 0.0, 0.3), kind="PASSIVE")
    bob = box("Bob", pivot + length * np.array([math.sin(theta), 0.0, -math.cos(theta)]), size=size)
    joint("Point", "POINT", anchor, bob, location=pivot)
    m = run(scene, [anchor, bob])
    x = m[:, 1, 0, 3]
    t = np.arange(x.size) / FPS
    up = np.nonzero((x[:-1] < 0.0) & (x[1:] >= 0.0))[0]
    times = t[up] - x[up] * (t[up + 1] - t[up]) / (x[up + 1] - x[up])
    period = float(np.mean(np.diff(times)))
    reference = pendulum_reference(length, size, theta)
    arm = m[:, 1, :3, 3] - pivot
    stretch = float(np.max(np.abs(np.linalg.norm(arm, axis=1) - length)))
    return {"period_s": period, "reference_s": reference, "error": period / reference - 1.0, "length_error_m": stretch}


# recording -------------------------------------------------------------------------------------------------------


READING = {
    "frames": "Object 1 is A, Object 2 is B; the joint frame is the constraint Empty's world rotation at the start "
    "(both bodies' frames coincide there). 'Relative' means B relative to A, in the joint frame.",
    "hinge": "A HINGE turns about the Empty's Z. Its angle counts A relative to B about +Z (B relative to A about "
    "-Z): with limits [0, 45°] B turned to -45° about +Z relative to A and stopped; with [-45°, 0] it could not turn "
    "that way at all; with the ends swapped the signs swap.",
    "axis_limit": "A GENERIC joint's angular limits on X, Y and Z (one axis free, the others locked by equal "
    "limits) count like the hinge's, A relative to B: [0, 45°] let B turn to -45° relative to A about that axis, "
    "[-45°, 0] held it (within 0.3°: Bullet's 6-DoF limit is soft). A PISTON's angular limit on X counts the other "
    "way, B relative to A: [-45°, 0] let B turn to -45°, [0, 45°] held it.",
    "slide": "SLIDER and PISTON move along the Empty's X; their linear limits count B's offset from A along +X "
    "(positive, the opposite sense of the hinge's angle): [0, 0.2] stopped B at +0.2 m, [-0.2, 0] held it.",
    "motor": "A MOTOR drives A relative to B: target +1 made B move at -1 m/s along and turn at -1 rad/s about the "
    "Empty's X relative to A. Its Max Impulse is a force [N] (torque [N·m]) bound: a 1000 kg body with Max Impulse 1 "
    "reached 0.0005 m/s after 0.5 s (= 1 N × 0.5 s / 1000 kg), the same at 10 and 20 substeps; per substep h the "
    "motor's impulse is at most max_impulse × h.",
    "spring": "Stiffness k is N/m (N·m/rad) in both types: omega = sqrt(k/m) and the sag m g / k to 1e-5. SPRING2's "
    "damping is the viscous coefficient c [N·s/m]: the amplitude decays as exp(-c t / (2 m)) (sigma 0.25 /s for m 1, "
    "0.125 /s for m 2, c 0.5). SPRING1's damping d is Bullet's motor-based spring with factor (1 - d) x rate / "
    "iterations on its target velocity: for d up to 0.9 no damping at all, at 0.99 a little (sigma 0.003 /s), at 1 "
    "(and above) the spring stops dead at its first turning point (2 m g / k).",
    "generic_slide": "A GENERIC joint's linear limits on X, Y and Z count B's offset from A along +axis, as the "
    "slider's: [0, 0.2] stopped B at +0.2 m, [-0.2, 0] held it.",
    "motor_free": "A MOTOR locks no axis: under gravity its body fell g t² / 2 (1.23 m in 0.5 s); it only drives.",
    "angular_spring": "An angular spring (Generic Spring, X free with the spring, the rest locked) on a 1 kg cube "
    "0.5 m from the pivot: SPRING1 is the physical spring (omega = sqrt(k / I_pivot) = 19.96 rad/s, rest angle "
    "-m g L / k = -0.049 rad, for k = 100); SPRING2 is much softer there: omega 6.0 rad/s and a swing to -1.11 rad "
    "for k = 100, omega 16.1 rad/s and rest angle -0.072 rad for k = 1000 (an effective stiffness near 7 % of k "
    "on this body). SPRING2's linear springs are physical (measured for 1 and 2 kg here, 0.1 and 0.5 kg by hand). "
    "Why: Bullet's SPRING2 row aims at the velocity change f / m_B (m_B = m r^2 + I = 0.2517 kg m^2, its estimate "
    "of the inertia about the axis) with its impulse bounded by f; the row alone turns the cube about its centre "
    "(I = 0.00167), and its 10 iterations against the locked pivot rows deliver 1 - (1 - I / m_B)^10 = 6.4 % of f.",
    "breaking_lever": "With the weight to the side of a Fixed joint (a lever arm), Bullet breaks it at impulses "
    "above the static m g h: a 0.5 m arm broke at 1.01 and held at 1.5 m g h (and at 10), a 1 m arm broke at 1.5, a "
    "2 m arm broke even at 50 (its rows carry large transients within the iterations). Only the plain hanging case "
    "is a clean reference.",
    "breaking": "A breakable joint breaks in the first substep whose constraint impulse (one row's, here the "
    "vertical one, holding m g h with h = 1 / (fps x substeps)) reaches the Breaking Threshold: 0.99 m g h broke, "
    "1.01 m g h held, at 10 and 20 substeps and 1 and 5 kg. The threshold is an impulse per substep [N·s].",
    "pendulum": "Bullet's POINT pendulum (10° amplitude, a 0.1 m cube 1 m from the pivot, 10 iterations) runs slow: "
    "period error +13.9 % at 60 Hz (1 substep at 60 fps), +1.5 % at 240 Hz, +0.25 % at 600 Hz (Blender's default 10 "
    "substeps); the joint stretches up to 7.7 mm, 1.0 mm and 0.18 mm.",
}
"""What the numbers say, in words (written into the file beside them; checked by :mod:`test_joint_conventions`)."""


def measure_all() -> dict:
    """Every measurement, keyed as in the JSON file."""
    out = {"blender": None, "fps": FPS, "defaults": {"substeps": 10, "iterations": 10}, "reading": READING}
    import bpy

    out["blender"] = ".".join(str(v) for v in bpy.app.version)
    out["hinge_axis"] = measure_hinge_axis()
    out["hinge_limit"] = {
        "0_45": measure_hinge_limit(0.0, 45.0),
        "-45_0": measure_hinge_limit(-45.0, 0.0),
        "-45_0_swapped": measure_hinge_limit(-45.0, 0.0, swap=True),
    }
    out["axis_limit"] = {
        f"{kind}_{axis}_{lo:g}_{hi:g}": measure_axis_limit(kind, axis, lo, hi)
        for kind, axes in (("GENERIC", "xyz"), ("PISTON", "x"))
        for axis in axes
        for lo, hi in ((0.0, 45.0), (-45.0, 0.0))
    }
    out["generic_slide"] = {
        f"{axis}_{lo:g}_{hi:g}": measure_generic_slide(axis, lo, hi)
        for axis in "xyz"
        for lo, hi in ((0.0, 0.2), (-0.2, 0.0))
    }
    out["slide"] = {
        "SLIDER": measure_slide("SLIDER"),
        "SLIDER_0_0.2": measure_slide("SLIDER", 0.0, 0.2),
        "SLIDER_-0.2_0": measure_slide("SLIDER", -0.2, 0.0),
        "PISTON": measure_slide("PISTON"),
        "PISTON_0_0.2": measure_slide("PISTON", 0.0, 0.2),
    }
    out["motor"] = {
        "ang_light": measure_motor(linear=False, mass=1.0, max_impulse=10.0),
        "lin_light": measure_motor(linear=True, mass=1.0, max_impulse=10.0),
        "lin_heavy_10": measure_motor(linear=True, mass=1000.0, max_impulse=1.0, substeps=10),
        "lin_heavy_20": measure_motor(linear=True, mass=1000.0, max_impulse=1.0, substeps=20),
        "ang_heavy_10": measure_motor(linear=False, mass=1000.0, max_impulse=1.0, substeps=10),
        "under_gravity": measure_motor_under_gravity(),
    }
    out["spring"] = {
        f"{kind}_m{mass:g}_c{damping:g}": measure_spring(kind, mass=mass, damping=damping)
        for kind in ("SPRING1", "SPRING2")
        for mass, damping in ((1.0, 0.0), (1.0, 0.5), (2.0, 0.5))
    }
    for damping in (0.9, 0.99, 1.0):  # SPRING1's damping bites only near 1 (see the reading)
        out["spring"][f"SPRING1_m1_c{damping:g}"] = measure_spring("SPRING1", damping=damping)
    out["angular_spring"] = {
        f"{kind}_k{k:g}_c{d:g}": measure_angular_spring(kind, damping=d, stiffness=k)
        for kind, k, d in (("SPRING1", 100.0, 0.0), ("SPRING1", 100.0, 0.5), ("SPRING2", 100.0, 0.0),
                           ("SPRING2", 100.0, 0.5), ("SPRING2", 1000.0, 0.0))
    }  # fmt: skip
    out["breaking"] = {f"{ratio:g}": measure_breaking(ratio) for ratio in (0.9, 0.99, 1.01, 1.1, 2.0)}
    out["breaking_lever"] = {
        f"arm_{arm:g}_{r:g}": measure_breaking_lever(r, arm=arm)
        for arm, ratios in ((0.5, (0.99, 1.01, 1.5, 10.0)), (1.0, (1.5,)), (2.0, (2.5, 50.0)))
        for r in ratios
    }
    out["breaking"].update({f"{ratio:g}_substeps_20": measure_breaking(ratio, substeps=20) for ratio in (0.99, 1.01)})
    out["breaking"].update({f"{ratio:g}_mass_5": measure_breaking(ratio, mass=5.0) for ratio in (0.99, 1.01)})
    out["pendulum"] = {f"substeps_{n}": measure_pendulum(n) for n in (1, 4, 10)}
    return out


def main() -> None:
    data = measure_all()
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    json.dump(data, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
