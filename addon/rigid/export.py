"""Scene → core model: collect, validate and convert Contact Lab objects (reads bpy, never writes it).

Conventions:
- A body's frame is its object's rotation placed at the world-space bounding-box centre (the centre of
  mass). Primitive sizes come from the local bounding box × object scale.
- Lengths leave this module in metres (``BU × scale_length``); masses in kg.
- Passive objects are kinematic: their world matrices are sampled at every frame of the range in one
  ``scene.frame_set`` pass (the current frame is restored in ``finally``).
- Everything is validated before anything is simulated or written; problems raise :class:`BakeError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core import BodyKind, CombineMode, KinematicTrack, Model, ModelBuilder, ModelError
from . import friction_export, units

SCALE_TOLERANCE = 1e-5
"""Relative scale difference [dimensionless] above which a scale counts as non-uniform."""

SHEAR_TOLERANCE = 1e-4
"""Largest ``|RᵀR − I|`` entry accepted as a pure rotation (parent chains with non-uniform scale shear)."""

UNIFORM_SCALE_SHAPES = frozenset({"SPHERE", "CAPSULE", "PLANE"})


class BakeError(Exception):
    """A bake could not run or finish; the message is meant for the user (names object and frame)."""

    def __init__(self, message: str, *, object_name: str | None = None, frame: int | None = None):
        super().__init__(message)
        self.object_name = object_name
        """Name of the offending object, if one is to blame."""
        self.frame = frame
        """Scene frame at which the problem appeared, if it is tied to a frame."""


@dataclass
class ExportedBody:
    """One Contact Lab object as a core body."""

    object_name: str
    role: str
    """'ACTIVE' (dynamic) or 'PASSIVE' (kinematic)."""
    shape: str
    body_index: int
    centre_local: np.ndarray
    """Body origin in object space [BU], shape (3,): the bounding-box centre (the origin for planes)."""
    scale: np.ndarray
    """Object scale at the first frame, shape (3,)."""


@dataclass
class SceneExport:
    """Everything a bake needs, detached from bpy (except object names)."""

    scene_name: str
    model: Model
    frames: np.ndarray
    """Scene frame numbers of the trajectory rows, shape (frame_count,), int."""
    fps: float
    """Frame rate [1/s]."""
    length_scale: float
    """Metres per Blender unit [m/BU]."""
    bodies: list[ExportedBody]
    kinematic_track: KinematicTrack | None
    substeps: int = 4
    solver: str = "PROX"
    iterations: int = 100
    tolerance: float = 1e-6
    friction_combine: str = "GEOMETRIC"
    restitution_combine: str = "MAXIMUM"
    timings: dict = field(default_factory=dict)

    @property
    def frame_count(self) -> int:
        return int(self.frames.shape[0])

    @property
    def active_bodies(self) -> list[ExportedBody]:
        return [b for b in self.bodies if b.role == "ACTIVE"]

    @property
    def passive_bodies(self) -> list[ExportedBody]:
        return [b for b in self.bodies if b.role == "PASSIVE"]

    def simulate_kwargs(self) -> dict:
        """Keyword arguments of :func:`core.iter_simulate` / :func:`core.simulate` for this export."""
        return dict(
            frame_count=self.frame_count,
            fps=self.fps,
            substeps=self.substeps,
            solver=self.solver,
            iterations=self.iterations,
            tolerance=self.tolerance,
            kinematic_track=self.kinematic_track,
        )

    def object_transforms(self, trajectory) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Object-origin keyframe values of every active body.

        Returns:
            ``{object name: (location (F, 3) [BU], quaternion (F, 4) wxyz)}`` for the trajectory's rows.
        """
        out = {}
        for body in self.active_bodies:
            com = trajectory.body_pos[:, body.body_index] / self.length_scale
            quat = trajectory.body_quat[:, body.body_index]
            location = units.body_to_object_location(com, quat, body.centre_local, body.scale)
            out[body.object_name] = (location, np.array(quat, dtype=np.float64))
        return out


# collection -----------------------------------------------------------------------------------


def contact_objects(scene) -> tuple[list, list]:
    """Active and passive objects of ``scene``, each sorted by name (deterministic body order)."""
    active, passive = [], []
    for obj in scene.objects:
        settings = getattr(obj, "contact_lab", None)
        if settings is None:
            continue
        if settings.role == "ACTIVE":
            active.append(obj)
        elif settings.role == "PASSIVE":
            passive.append(obj)
    active.sort(key=lambda o: o.name)
    passive.sort(key=lambda o: o.name)
    return active, passive


def frame_range(scene, frame_start: int | None = None, frame_end: int | None = None) -> tuple[int, int]:
    """Effective bake range: explicit arguments, else ``scene.contact_lab`` (which follows the scene)."""
    settings = scene.contact_lab
    start = int(settings.frame_start if frame_start is None else frame_start)
    end = int(settings.frame_end if frame_end is None else frame_end)
    return start, end


def local_box(obj) -> tuple[np.ndarray, np.ndarray]:
    """Local bounding-box centre and size [BU], each shape (3,)."""
    corners = np.asarray([tuple(c) for c in obj.bound_box], dtype=np.float64).reshape(8, 3)
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    return 0.5 * (lo + hi), hi - lo


def _fmt(v) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in np.asarray(v).ravel()) + ")"


def validate_objects(scene, active: list, passive: list, frame_start: int, frame_end: int) -> None:
    """Check everything that can be checked without changing the frame; raise :class:`BakeError`.

    All problems are collected so the user can fix them in one go; the message lists them.
    """
    raise_problems(object_problems(scene, active, passive, frame_start, frame_end))


def raise_problems(problems: list[tuple[str | None, str]]) -> None:
    """Raise one :class:`BakeError` listing ``problems`` (``(object name or None, message)``); no-op if empty."""
    if problems:
        first_object = next((o for o, _ in problems if o is not None), None)
        text = "; ".join(msg for _, msg in problems[:6])
        if len(problems) > 6:
            text += f"; and {len(problems) - 6} more problem(s)"
        raise BakeError(text[0].upper() + text[1:], object_name=first_object)


def object_problems(
    scene, active: list, passive: list, frame_start: int, frame_end: int, *, require_active: bool = True
) -> list[tuple[str | None, str]]:
    """Problems of the rigid objects and the frame range, as ``(object name or None, message)`` pairs.

    ``require_active=False`` accepts a scene without active bodies (the soft engine needs soft ones instead).
    """
    problems: list[tuple[str | None, str]] = []
    if require_active and not active:
        problems.append((None, "no active bodies: set Physics ▸ Contact Lab ▸ Role to Active on at least one object"))
    if frame_end <= frame_start:
        problems.append((None, f"frame range {frame_start}-{frame_end} is empty: End must be after Start"))
    if units.scene_fps(scene) <= 0.0:
        problems.append((None, "the scene's frame rate must be positive"))
    if not units.length_scale(scene) > 0.0:
        problems.append((None, "the scene's Unit Scale must be positive"))
    for obj in active + passive:
        s = obj.contact_lab
        name = obj.name
        if s.role == "ACTIVE":
            if not (np.isfinite(s.mass) and s.mass > 0.0):
                problems.append((name, f"'{name}': mass must be positive, got {s.mass:g} kg"))
            if s.shape == "PLANE":
                problems.append((name, f"'{name}': a Plane is infinite and can only be Passive, not Active"))
            if obj.parent is not None:
                problems.append(
                    (
                        name,
                        f"'{name}': active bodies must not be parented (parent '{obj.parent.name}'); "
                        "clear the parent and keep the transform",
                    )
                )
            if any(c.enabled for c in getattr(obj, "constraints", ())):
                problems.append((name, f"'{name}': active bodies must not have enabled constraints"))
            delta_rot = np.asarray(tuple(obj.delta_rotation_quaternion), dtype=np.float64)
            if (
                np.any(np.asarray(tuple(obj.delta_location)) != 0.0)
                or np.any(np.asarray(tuple(obj.delta_rotation_euler)) != 0.0)
                or not np.allclose(delta_rot, (1.0, 0.0, 0.0, 0.0))
                or np.any(np.asarray(tuple(obj.delta_scale)) != 1.0)
            ):
                problems.append((name, f"'{name}': active bodies must not use delta transforms"))
        if s.shape != "PLANE":
            _, size = local_box(obj)
            if not np.all(size > 0.0):
                problems.append((name, f"'{name}': the {s.shape.lower()} has zero size (dimensions {_fmt(size)})"))
    return problems


def validate_scales(objects: list, scales: np.ndarray, shears: np.ndarray, frames: np.ndarray) -> None:
    """Negative scale, non-uniform scale on round shapes and shear, over all sampled frames.

    Args:
        objects: rigid (active or passive) objects. scales: (F, len(objects), 3). shears: (F, len(objects)).
        frames: scene frame of each row, shape (F,).

    Raises:
        BakeError: naming the object and the first bad frame.
    """
    for k, obj in enumerate(objects):
        shape = obj.contact_lab.shape
        name = obj.name
        sc = scales[:, k]  # (F, 3)
        bad = np.flatnonzero(np.any(sc < 0.0, axis=1))
        if bad.size:
            raise BakeError(
                f"'{name}': negative scale {_fmt(sc[bad[0]])} at frame {int(frames[bad[0]])} is not supported; "
                "apply the scale (Ctrl A) or make it positive",
                object_name=name,
                frame=int(frames[bad[0]]),
            )
        if shape in UNIFORM_SCALE_SHAPES:
            ratio = sc.max(axis=1) / np.maximum(sc.min(axis=1), 1e-300) - 1.0
            bad = np.flatnonzero(ratio > SCALE_TOLERANCE)
            if bad.size:
                raise BakeError(
                    f"'{name}': a {shape.lower()} needs a uniform scale, got {_fmt(sc[bad[0]])} at frame "
                    f"{int(frames[bad[0]])}; apply the scale (Ctrl A) or use a Box",
                    object_name=name,
                    frame=int(frames[bad[0]]),
                )
        bad = np.flatnonzero(shears[:, k] > SHEAR_TOLERANCE)
        if bad.size:
            raise BakeError(
                f"'{name}': its world matrix is sheared at frame {int(frames[bad[0]])} (non-uniform scale inherited "
                "through a rotated parent); rigid shapes cannot follow it",
                object_name=name,
                frame=int(frames[bad[0]]),
            )


# sampling -------------------------------------------------------------------------------------


def sample_world_matrices(scene, objects: list, frames: np.ndarray) -> np.ndarray:
    """World matrices of ``objects`` at ``frames`` in one ``frame_set`` pass.

    Returns:
        Row-major matrices [BU], shape (len(frames), len(objects), 4, 4). The scene's current frame
        (and subframe) is restored before returning, also on error.
    """
    frames = np.asarray(frames, dtype=np.int64)
    out = np.empty((frames.shape[0], len(objects), 4, 4))
    if not objects:
        return out
    pool = scene.objects
    index = np.array([pool.find(obj.name) for obj in objects], dtype=np.int64)
    if np.any(index < 0):
        raise BakeError("an object to sample is not in the scene")
    buf = np.empty(len(pool) * 16, dtype=np.float32)
    original_frame, original_subframe = scene.frame_current, scene.frame_subframe
    try:
        for row, frame in enumerate(frames):  # one frame_set per frame: the only way to evaluate animation
            scene.frame_set(int(frame))
            pool.foreach_get("matrix_world", buf)
            # foreach_get gives column-major 4×4 blocks: transpose to row-major
            out[row] = buf.reshape(-1, 4, 4)[index].transpose(0, 2, 1)
    finally:
        if scene.frame_current != original_frame or scene.frame_subframe != original_subframe:
            scene.frame_set(original_frame, subframe=original_subframe)
    return out


# export ---------------------------------------------------------------------------------------


def _add_shape(builder: ModelBuilder, body: int, shape: str, size_m: np.ndarray, mu: float, restitution: float) -> int:
    """Add the collision primitive (in the body frame) and return its shape index."""
    if shape == "BOX":
        return builder.add_shape_box(body, 0.5 * size_m, mu=mu, restitution=restitution)
    if shape == "SPHERE":
        return builder.add_shape_sphere(body, 0.5 * float(size_m.max()), mu=mu, restitution=restitution)
    if shape == "CAPSULE":
        radius = 0.5 * float(max(size_m[0], size_m[1]))
        half_height = max(0.5 * float(size_m[2]) - radius, 0.0)
        return builder.add_shape_capsule(body, radius, half_height, mu=mu, restitution=restitution)
    if shape == "PLANE":
        return builder.add_shape_plane(body, mu=mu, restitution=restitution)
    raise BakeError(f"unknown shape {shape!r}")


def export_scene(scene, *, frame_start: int | None = None, frame_end: int | None = None) -> SceneExport:
    """Validate the scene and convert it into a core model plus the passive objects' pose track.

    Reads ``scene.contact_lab`` and every object's ``contact_lab`` settings. Changes nothing except the
    current frame during sampling, which is restored.

    Raises:
        BakeError: anything invalid (no active bodies, zero/negative mass, bad scale, ...).
    """
    settings = scene.contact_lab
    start, end = frame_range(scene, frame_start, frame_end)
    active, passive = contact_objects(scene)
    validate_objects(scene, active, passive, start, end)

    frames = np.arange(start, end + 1, dtype=np.int64)
    objects = active + passive
    # passive objects need every frame; active ones only the first (their pose at frame_start)
    sample_frames = frames if passive else frames[:1]
    matrices = sample_world_matrices(scene, objects, sample_frames)
    translation, rotation, scale, shear = units.decompose_matrices(matrices)
    validate_scales(active, scale[:1, : len(active)], shear[:1, : len(active)], sample_frames)
    validate_scales(passive, scale[:, len(active) :], shear[:, len(active) :], sample_frames)

    metres = units.length_scale(scene)
    quats = units.make_quat_continuous(units.matrix_to_quat(rotation))  # (Fs, N, 4)
    boxes = [local_box(obj) for obj in objects]
    centres = [
        np.zeros(3) if obj.contact_lab.shape == "PLANE" else box[0] for obj, box in zip(objects, boxes, strict=True)
    ]
    # per-surface friction inputs (meshes, UVs, images) at the first frame, in each shape's frame
    surfaces = friction_export.export_surfaces(scene, objects, centres, scale[0], metres, int(frames[0]))
    builder = ModelBuilder(gravity=units.scene_gravity(scene))
    bodies: list[ExportedBody] = []
    for k, obj in enumerate(objects):
        s = obj.contact_lab
        centre, size = centres[k], boxes[k][1]  # a plane goes through the object's origin
        obj_scale = scale[0, k]
        # centre of mass in world [BU] at every sampled frame: M · (centre, 1)
        com = translation[:, k] + np.einsum("fij,fj->fi", rotation[:, k], scale[:, k] * centre)
        is_active = s.role == "ACTIVE"
        index = builder.add_body(
            pos=com[0] * metres,
            quat=quats[0, k],
            mass=float(s.mass) if is_active else 1.0,
            kind=BodyKind.DYNAMIC if is_active else BodyKind.KINEMATIC,
            label=obj.name,
        )
        shape_index = _add_shape(
            builder, index, s.shape, np.abs(obj_scale) * size * metres, float(s.friction), float(s.restitution)
        )
        if surfaces[k] is not None:
            builder.set_shape_friction(shape_index, surfaces[k])
        bodies.append(ExportedBody(obj.name, s.role, s.shape, index, centre, obj_scale.copy()))

    try:
        model = builder.finalize(
            friction_combine=CombineMode[settings.friction_combine],
            restitution_combine=CombineMode[settings.restitution_combine],
        )
    except ModelError as exc:
        raise BakeError(str(exc)) from exc

    track = None
    if passive:
        kin = np.arange(len(active), len(objects))
        centres = np.stack([bodies[k].centre_local for k in kin])  # (K, 3)
        offset = np.einsum("fkij,fkj->fki", rotation[:, kin], scale[:, kin] * centres[None])
        track = KinematicTrack(
            body_index=np.array([bodies[k].body_index for k in kin], dtype=np.int64),
            pos=(translation[:, kin] + offset) * metres,
            quat=np.ascontiguousarray(quats[:, kin]),
        )

    return SceneExport(
        scene_name=scene.name,
        model=model,
        frames=frames,
        fps=units.scene_fps(scene),
        length_scale=metres,
        bodies=bodies,
        kinematic_track=track,
        substeps=int(settings.substeps),
        solver=str(settings.solver),
        iterations=int(settings.iterations),
        tolerance=float(settings.tolerance),
        friction_combine=str(settings.friction_combine),
        restitution_combine=str(settings.restitution_combine),
    )
