"""Scene → core model: collect, validate and convert Contact Lab objects (reads bpy, never writes it).

Conventions:
- A body's frame is its object's rotation placed at the body's centre of mass (:mod:`.shapes`: the bounding-box
  centre for boxes, spheres, capsules and cylinders; the solid's centroid for cones, convex hulls, active meshes
  and compounds). Primitive sizes come from the local bounding box × object scale.
- Lengths leave this module in metres (``BU × scale_length``); masses in kg.
- Passive objects are kinematic: their world matrices are sampled at every frame of the range in one
  ``scene.frame_set`` pass (the current frame is restored in ``finally``). Meshes (convex hulls, Mesh shapes)
  and the parts of a Compound Parent are read once, at the start frame.
- Everything is validated before anything is simulated or written; problems raise :class:`BakeError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core import BodyKind, CombineMode, KinematicTrack, Model, ModelBuilder, ModelError, ShapeType
from ...core.friction.surface import SurfaceFriction
from .. import units
from ..errors import BakeError
from ..friction import export as friction_export
from ..scene import (
    compound_parts,
    contact_objects,
    frame_range,
    object_problems,
    raise_first,
    raise_problems,
    sample_world_matrices,
    scale_problems,
)
from . import shapes as rigid_shapes

PART_POSE_TOLERANCE = 1e-5
"""Largest change of a passive compound part's pose relative to its parent accepted over the range, as a fraction of
its relative matrix's largest entry (matrices are sampled in single precision)."""


@dataclass
class ExportedBody:
    """One Contact Lab object as a core body."""

    object_name: str
    role: str
    """'ACTIVE' (dynamic) or 'PASSIVE' (kinematic)."""
    shape: str
    body_index: int
    centre_local: np.ndarray
    """Body origin in object space [BU], shape (3,): the centre of mass of an active body (the bounding-box centre
    of symmetric shapes), the bounding-box centre of a passive one (the origin for planes and Compound Parents)."""
    scale: np.ndarray
    """Object scale at the first frame, shape (3,)."""
    parts: list[str] = field(default_factory=list)
    """Names of a Compound Parent's parts (their shapes are this body's)."""


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
    sleeping: bool = False
    sleep_time: float = 0.5
    sleep_linear_speed: float = 0.05
    sleep_angular_speed: float = 0.05
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
            sleeping=self.sleeping,
            sleep_time=self.sleep_time,
            sleep_linear_speed=self.sleep_linear_speed,
            sleep_angular_speed=self.sleep_angular_speed,
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


def _add_shape(builder: ModelBuilder, body: int, spec: rigid_shapes.ShapeSpec, mu: float, restitution: float) -> int:
    """Add one shape (posed in the body frame [m]) and return its shape index."""
    kw: dict[str, Any] = dict(pos=spec.pos, quat=spec.quat, mu=mu, restitution=restitution)
    t, p = spec.shape_type, spec.params
    if t == ShapeType.BOX:
        return builder.add_shape_box(body, p, **kw)
    if t == ShapeType.SPHERE:
        return builder.add_shape_sphere(body, float(p[0]), **kw)
    if t == ShapeType.CAPSULE:
        return builder.add_shape_capsule(body, float(p[0]), float(p[1]), **kw)
    if t == ShapeType.CYLINDER:
        return builder.add_shape_cylinder(body, float(p[0]), float(p[1]), **kw)
    if t == ShapeType.CONE:
        return builder.add_shape_cone(body, float(p[0]), float(p[1]), **kw)
    if t == ShapeType.PLANE:
        return builder.add_shape_plane(body, **kw)
    if t == ShapeType.CONVEX:
        return builder.add_shape_convex(body, spec.vertices, **kw)
    if t == ShapeType.MESH:
        return builder.add_shape_mesh(body, spec.vertices, spec.triangles, **kw)
    raise BakeError(f"unknown shape type {t!r}")


def _geometries(objects, parts, scale, body_matrices, part_matrices, meshes, metres):
    """Each object's shapes in its body frame (:class:`.shapes.BodyGeometry`), in ``objects`` order.

    Args:
        objects: active then passive bodies. parts: ``{compound name: part objects}``. scale: the bodies' world
            scales at the first frame (N, 3). body_matrices: their world matrices (N, 4, 4) at the first frame.
            part_matrices: ``{compound name: the parts' world matrices (P, 4, 4)}`` at the first frame. meshes:
            hulls and meshes by object name [BU]. metres: metres per BU.
    """
    out = []
    for k, obj in enumerate(objects):
        s = obj.contact_lab
        if s.shape == "COMPOUND":
            specs, ref = rigid_shapes.compound_shapes(
                body_matrices[k], parts[obj.name], part_matrices[obj.name], metres, meshes
            )
        else:
            specs, ref = rigid_shapes.object_shapes(obj, scale[k], metres, meshes.get(obj.name))
        try:
            out.append(rigid_shapes.body_geometry(specs, ref, scale[k], metres, active=s.role == "ACTIVE"))
        except ValueError as exc:  # the core's mass properties: a solid without positive volume
            raise BakeError(f"'{obj.name}': {exc}", object_name=obj.name) from exc
    return out


@dataclass
class BodyInput:
    """One object as a core body, read from Blender: what :func:`build_scene` adds to the model (no bpy)."""

    object_name: str
    role: str
    """'ACTIVE' (dynamic) or 'PASSIVE' (kinematic)."""
    shape: str
    geometry: rigid_shapes.BodyGeometry
    surface: SurfaceFriction | None
    """Surface friction inputs of its shapes (None: the shapes' μ says everything)."""
    mass: float
    friction: float
    restitution: float
    linear_damping: float
    angular_damping: float
    pos: np.ndarray
    """Centre of mass in the world at the first frame [m], (3,)."""
    quat: np.ndarray
    """Orientation at the first frame (wxyz), (4,)."""
    scale: np.ndarray
    """Object scale at the first frame, (3,)."""
    parts: list[str] = field(default_factory=list)


def _read_bodies(objects, geometries, surfaces, translation, rotation, scale, quats, metres, parts) -> list[BodyInput]:
    """One :class:`BodyInput` per object, in ``objects`` order (main thread: reads the objects' settings).

    Args:
        objects: active then passive objects. geometries: their :class:`.shapes.BodyGeometry`. surfaces: per object
            a ``SurfaceFriction`` or None. translation, rotation, scale: decomposed world matrices per sampled frame,
            (Fs, N, 3) / (Fs, N, 3, 3) / (Fs, N, 3). quats: continuous orientations (Fs, N, 4). metres: metres per
            BU. parts: ``{compound name: part objects}``.
    """
    out = []
    for k, obj in enumerate(objects):
        s = obj.contact_lab
        centre = geometries[k].centre_local
        # centre of mass in world [BU] at the first frame: M · (centre, 1)
        com = translation[0, k] + rotation[0, k] @ (scale[0, k] * centre)
        out.append(
            BodyInput(
                object_name=obj.name,
                role=str(s.role),
                shape=str(s.shape),
                geometry=geometries[k],
                surface=surfaces[k],
                mass=float(s.mass),
                friction=float(s.friction),
                restitution=float(s.restitution),
                linear_damping=float(s.linear_damping),
                angular_damping=float(s.angular_damping),
                pos=com * metres,
                quat=quats[0, k],
                scale=scale[0, k].copy(),
                parts=[p.name for p in parts.get(obj.name, ())] if s.shape == "COMPOUND" else [],
            )
        )
    return out


def _add_bodies(builder, bodies: list[BodyInput]) -> list[ExportedBody]:
    """One body with its shapes (and their surface friction) per :class:`BodyInput`, in order (no bpy)."""
    out: list[ExportedBody] = []
    for body in bodies:
        geometry = body.geometry
        is_active = body.role == "ACTIVE"
        body_kw: dict[str, Any] = {}
        if is_active:
            body_kw = dict(linear_damping=body.linear_damping, angular_damping=body.angular_damping)
            if any(spec.shape_type == ShapeType.MESH for spec in geometry.shapes):
                # a mesh's inertia comes from its triangles (the builder derives primitives' and hulls' itself)
                mp = geometry.mass_properties
                assert mp is not None  # body_geometry computes them for active bodies
                body_kw["inertia"] = np.asarray(mp.inertia) * (body.mass / mp.volume)
        index = builder.add_body(
            pos=body.pos,
            quat=body.quat,
            mass=body.mass if is_active else 1.0,
            kind=BodyKind.DYNAMIC if is_active else BodyKind.KINEMATIC,
            label=body.object_name,
            **body_kw,
        )
        for spec in geometry.shapes:
            shape_index = _add_shape(builder, index, spec, body.friction, body.restitution)
            if body.surface is not None:
                builder.set_shape_friction(shape_index, body.surface)
        out.append(
            ExportedBody(
                body.object_name, body.role, body.shape, index, geometry.centre_local.copy(), body.scale, body.parts
            )
        )
    return out


def _kinematic_pose(centres, active_count, translation, rotation, scale, quats) -> tuple[np.ndarray, np.ndarray]:
    """Poses of the passive (kinematic) bodies, objects ``[active_count:]``, at every frame: ``(centres of mass
    (F, K, 3) [BU], quaternions (F, K, 4))``. ``centres``: every body's centre in object space [BU]."""
    kin = np.arange(active_count, len(centres))
    local = np.stack([centres[k] for k in kin])  # (K, 3)
    offset = np.einsum("fkij,fkj->fki", rotation[:, kin], scale[:, kin] * local[None])
    return translation[:, kin] + offset, np.ascontiguousarray(quats[:, kin])


def motion_problems(active, passive, parts, matrices, frames) -> list[tuple[str, str, int]]:
    """Scales and shears the rigid engine refuses, and compound parts that move, over the sampled frames.

    The one source of these refusals: :func:`gather_scene` raises the first, Check Scene lists them all.

    Args:
        active, passive: the bodies. parts: ``{compound name: part objects}``. matrices: world matrices
            (F, N + P, 4, 4) [BU] of ``active + passive`` then every compound's parts in that order, at ``frames``
            (F,): every frame of the range when there are passive bodies (they are read at every frame), else the
            first (active bodies and parts are read at the first frame only).
    """
    objects = active + passive
    n, a = len(objects), len(active)
    _, _, scale, shear = units.decompose_matrices(matrices[:, :n])
    problems = scale_problems(active, scale[:1, :a], shear[:1, :a], frames[:1])
    problems += scale_problems(passive, scale[:, a:], shear[:, a:], frames)
    part_list = [part for obj in objects for part in parts.get(obj.name, ())]
    if part_list:
        _, _, part_scale, part_shear = units.decompose_matrices(matrices[:1, n:])
        problems += scale_problems(part_list, part_scale, part_shear, frames[:1])
        part_slices, offset = {}, n
        for obj in objects:
            if obj.name in parts:
                part_slices[obj.name] = slice(offset, offset + len(parts[obj.name]))
                offset += len(parts[obj.name])
        problems += parts_fixed_problems(objects, parts, matrices, part_slices, frames)
    return problems


def parts_fixed_problems(objects, parts, matrices, part_slices, frames) -> list[tuple[str, str, int]]:
    """Parts of a compound must keep their pose relative to the parent (they are read once).

    Args:
        objects: the bodies. parts: ``{compound name: part objects}``. matrices: world matrices (F, N, 4, 4) [BU]
            of the bodies then the parts. part_slices: ``{compound name: slice of its parts in matrices}``. frames:
            scene frames (F,).

    Returns:
        ``(part name, message, first frame it moved at)``, at most one per compound.
    """
    out = []
    for k, obj in enumerate(objects):
        if obj.name not in part_slices or matrices.shape[0] < 2:
            continue
        inverse = np.linalg.pinv(matrices[:, k])  # (F, 4, 4); pinv: a parent scaled to zero raises nothing
        relative = np.einsum("fij,fpjk->fpik", inverse, matrices[:, part_slices[obj.name]])  # (F, P, 4, 4)
        change = np.abs(relative - relative[:1]).max(axis=(2, 3))  # (F, P)
        size = np.maximum(np.abs(relative[0]).max(axis=(1, 2)), 1.0)  # (P,)
        bad = np.argwhere(change > PART_POSE_TOLERANCE * size[None])
        if bad.size:
            f, p = bad[0]
            part = parts[obj.name][p]
            message = (
                f"'{part.name}' moves relative to its Compound Parent '{obj.name}' at frame {int(frames[f])}: a "
                "compound is rigid, its parts are read once at the start frame; animate the parent instead"
            )
            out.append((part.name, message, int(frames[f])))
    return out


def mesh_problems(objects, parts, meshes) -> list[tuple[str | None, str]]:
    """Hulls without volume, meshes without faces, open or flat active meshes (after reading the meshes).

    Args:
        objects: the bodies. parts: ``{compound name: part objects}``. meshes: :func:`.shapes.read_shape_meshes`
            of the bodies and parts.
    """
    problems = []
    candidates = [(obj, obj.contact_lab.role == "ACTIVE") for obj in objects]
    candidates += [(part, True) for obj in objects for part in parts.get(obj.name, ())]
    for obj, active in candidates:
        if obj.name not in meshes:
            continue
        vertices, triangles = meshes[obj.name]
        if obj.contact_lab.shape == "CONVEX_HULL":
            message = rigid_shapes.hull_problem(obj.name, vertices, triangles)
        else:
            message = rigid_shapes.mesh_problem(obj.name, vertices, triangles, active=active)
        if message is not None:
            problems.append((obj.name, message))
    return problems


def _culprit(message: str, names) -> str | None:
    """The object a core ``ModelError`` message names (the core prefixes messages with the body's label)."""
    return next((name for name in sorted(names, key=len, reverse=True) if message.startswith(name)), None)


@dataclass
class RigidSceneInput:
    """A Rigid-engine scene as read from Blender (:func:`gather_scene`): plain data, no bpy.

    :func:`build_scene` turns it into a :class:`SceneExport` (the core model) on any thread.
    """

    scene_name: str
    frames: np.ndarray
    """Scene frame numbers of the trajectory rows, shape (frame_count,), int."""
    fps: float
    length_scale: float
    gravity: np.ndarray
    """(3,) [m/s²]."""
    bodies: list[BodyInput]
    active_count: int
    kinematic_pose: tuple | None
    """``(positions (F, K, 3) [m], quaternions (F, K, 4))`` of the passive bodies (``bodies[active_count:]``)."""
    settings: dict
    """The :class:`SceneExport` solver settings (``substeps``, ``solver``, ...) by name."""
    timings: dict = field(default_factory=dict)

    @property
    def frame_count(self) -> int:
        return int(self.frames.shape[0])


def gather_scene(scene, *, frame_start: int | None = None, frame_end: int | None = None) -> RigidSceneInput:
    """Validate the scene and read everything a rigid bake needs (Blender's main thread; the model is built by
    :func:`build_scene`).

    Reads ``scene.contact_lab`` and every object's ``contact_lab`` settings. Changes nothing except the
    current frame during sampling (and mesh evaluation), which is restored.

    Raises:
        BakeError: anything invalid (no active bodies, zero/negative mass, bad scale, a flat convex hull, an open
            active mesh, a Compound Parent without parts, ...), naming the object.
    """
    settings = scene.contact_lab
    start, end = frame_range(scene, frame_start, frame_end)
    active, passive = contact_objects(scene)
    objects = active + passive
    all_parts = compound_parts(scene)
    parts = {obj.name: all_parts.get(obj.name, []) for obj in objects if obj.contact_lab.shape == "COMPOUND"}
    raise_problems(
        object_problems(scene, active, passive, start, end) + rigid_shapes.shape_problems(active, passive, parts)
    )

    frames = np.arange(start, end + 1, dtype=np.int64)
    part_list = [part for obj in objects for part in parts.get(obj.name, ())]
    part_slices, offset = {}, len(objects)
    for obj in objects:
        if obj.name in parts:
            part_slices[obj.name] = slice(offset, offset + len(parts[obj.name]))
            offset += len(parts[obj.name])
    # passive objects (and their parts) need every frame; active ones only the first (their pose at frame_start)
    sample_frames = frames if passive else frames[:1]
    matrices = sample_world_matrices(scene, objects + part_list, sample_frames)
    translation, rotation, scale, shear = units.decompose_matrices(matrices[:, : len(objects)])
    raise_first(motion_problems(active, passive, parts, matrices, sample_frames))

    metres = units.length_scale(scene)
    meshes = rigid_shapes.read_shape_meshes(scene, objects + part_list, int(frames[0]))
    raise_problems(mesh_problems(objects, parts, meshes))
    quats = units.make_quat_continuous(units.matrix_to_quat(rotation))  # (Fs, N, 4)
    part_matrices = {name: matrices[0, sl] for name, sl in part_slices.items()}
    geometries = _geometries(objects, parts, scale[0], matrices[0, : len(objects)], part_matrices, meshes, metres)
    # per-surface friction inputs (meshes, UVs, images) at the first frame, in each object's first shape's frame
    surfaces = friction_export.export_surfaces(
        scene, objects, [g.surface_centre for g in geometries], scale[0], metres, int(frames[0])
    )
    bodies = _read_bodies(objects, geometries, surfaces, translation, rotation, scale, quats, metres, parts)
    pose = None
    if passive:
        pose = _kinematic_pose([g.centre_local for g in geometries], len(active), translation, rotation, scale, quats)
        pose = (pose[0] * metres, pose[1])
    return RigidSceneInput(
        scene_name=scene.name,
        frames=frames,
        fps=units.scene_fps(scene),
        length_scale=metres,
        gravity=np.asarray(units.scene_gravity(scene), dtype=np.float64),
        bodies=bodies,
        active_count=len(active),
        kinematic_pose=pose,
        settings=dict(
            substeps=int(settings.substeps),
            solver=str(settings.solver),
            iterations=int(settings.iterations),
            tolerance=float(settings.tolerance),
            sleeping=bool(settings.sleeping),
            sleep_time=float(settings.sleep_time),
            sleep_linear_speed=float(settings.sleep_linear_speed),
            sleep_angular_speed=float(settings.sleep_angular_speed),
            friction_combine=str(settings.friction_combine),
            restitution_combine=str(settings.restitution_combine),
        ),
    )


def build_scene(inp: RigidSceneInput) -> SceneExport:
    """The core model of a gathered scene (shapes, hulls, mesh BVHs and fields, friction; no bpy: any thread).

    Raises:
        BakeError: the core refuses the model (the message names the object).
    """
    builder = ModelBuilder(gravity=inp.gravity)
    try:
        bodies = _add_bodies(builder, inp.bodies)
        model = builder.finalize(
            friction_combine=CombineMode[inp.settings["friction_combine"]],
            restitution_combine=CombineMode[inp.settings["restitution_combine"]],
        )
    except ModelError as exc:
        message = str(exc)
        culprit = _culprit(message, [b.object_name for b in inp.bodies])
        if culprit is not None:  # "Name: ..." → "'Name': ...", like the bridge's own messages
            message = f"'{culprit}'{message[len(culprit) :]}"
        raise BakeError(message, object_name=culprit) from exc
    track = None
    if inp.kinematic_pose is not None:
        track = KinematicTrack(
            body_index=np.array([b.body_index for b in bodies[inp.active_count :]], dtype=np.int64),
            pos=inp.kinematic_pose[0],
            quat=inp.kinematic_pose[1],
        )
    return SceneExport(
        scene_name=inp.scene_name,
        model=model,
        frames=inp.frames,
        fps=inp.fps,
        length_scale=inp.length_scale,
        bodies=bodies,
        kinematic_track=track,
        timings=dict(inp.timings),
        **inp.settings,
    )


def export_scene(scene, *, frame_start: int | None = None, frame_end: int | None = None) -> SceneExport:
    """Validate the scene and convert it into a core model plus the passive objects' pose track:
    :func:`gather_scene` then :func:`build_scene`, in this thread.

    Raises:
        BakeError: see :func:`gather_scene` and :func:`build_scene`.
    """
    return build_scene(gather_scene(scene, frame_start=frame_start, frame_end=frame_end))
