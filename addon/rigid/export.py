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

from ...core import BodyKind, CombineMode, KinematicTrack, Model, ModelBuilder, ModelError
from .. import friction_export, units
from ..errors import BakeError
from ..scene import contact_objects, frame_range, local_box, sample_world_matrices, validate_objects, validate_scales


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


def _add_bodies(builder, objects, boxes, centres, surfaces, translation, rotation, scale, quats, metres):
    """One body and its shape (with its surface friction) per object, in ``objects`` order.

    Args:
        objects: active then passive objects. boxes: their local ``(centre, size)`` [BU]. centres: body origins
            in object space [BU]. surfaces: per object a ``SurfaceFriction`` or None. translation, rotation,
            scale: decomposed world matrices per sampled frame, (Fs, N, 3) / (Fs, N, 3, 3) / (Fs, N, 3).
            quats: continuous orientations (Fs, N, 4). metres: metres per BU.

    Returns:
        The exported bodies.
    """
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
    return bodies


def _kinematic_track(bodies, active_count, translation, rotation, scale, quats, metres) -> KinematicTrack:
    """Poses of the passive (kinematic) bodies, ``bodies[active_count:]``, at every frame [m]."""
    kin = np.arange(active_count, len(bodies))
    centres = np.stack([bodies[k].centre_local for k in kin])  # (K, 3)
    offset = np.einsum("fkij,fkj->fki", rotation[:, kin], scale[:, kin] * centres[None])
    return KinematicTrack(
        body_index=np.array([bodies[k].body_index for k in kin], dtype=np.int64),
        pos=(translation[:, kin] + offset) * metres,
        quat=np.ascontiguousarray(quats[:, kin]),
    )


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
    bodies = _add_bodies(builder, objects, boxes, centres, surfaces, translation, rotation, scale, quats, metres)
    try:
        model = builder.finalize(
            friction_combine=CombineMode[settings.friction_combine],
            restitution_combine=CombineMode[settings.restitution_combine],
        )
    except ModelError as exc:
        raise BakeError(str(exc)) from exc

    track = _kinematic_track(bodies, len(active), translation, rotation, scale, quats, metres) if passive else None

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
