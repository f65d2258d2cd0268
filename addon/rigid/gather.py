"""Rigid-engine scene → plain data: collect, validate and read Contact Lab objects on Blender's main thread (reads
bpy, never writes it). :mod:`.build` turns what this reads into the core model on any thread; :func:`export_scene`
does both on the calling thread.

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

import numpy as np

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
from . import joints as rigid_joints
from . import shapes as rigid_shapes
from .build import (
    BodyInput,
    RigidSceneInput,
    SceneExport,
    build_scene,
)

PART_POSE_TOLERANCE = 1e-5
"""Largest change of a passive compound part's pose relative to its parent accepted over the range, as a fraction of
its relative matrix's largest entry (matrices are sampled in single precision)."""

SOLVER_SETTINGS = (
    ("substeps", int),
    ("solver", str),
    ("iterations", int),
    ("tolerance", float),
    ("shock_propagation", bool),
    ("merit_history", bool),
    ("sleeping", bool),
    ("sleep_time", float),
    ("sleep_linear_speed", float),
    ("sleep_angular_speed", float),
    ("friction_combine", str),
    ("restitution_combine", str),
)
"""The rigid engine's settings read from ``scene.contact_lab`` as plain values (name, type), for ``build_scene``."""


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
                collision_collections=collision_mask(obj),
                velocity=np.asarray(tuple(s.initial_velocity), dtype=float) * metres,
            )
        )
    return out


def collision_mask(obj) -> int:
    """The 20-bit mask of the Collision Collections of ``obj``'s Blender rigid body (Properties ▸ Physics ▸ Rigid
    Body ▸ Collisions ▸ Collections; bit k: collection k + 1); 1 (the first collection, Blender's default) for an
    object without one. Two bodies collide only when their masks share a bit."""
    rigid_body = getattr(obj, "rigid_body", None)
    if rigid_body is None:
        return 1
    return sum(1 << k for k, used in enumerate(rigid_body.collision_collections) if used)


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
        object_problems(scene, active, passive, start, end)
        + rigid_shapes.shape_problems(active, passive, parts)
        + rigid_joints.joint_problems(scene)
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
    joints = rigid_joints.gather_joints(
        scene, {obj.name: k for k, obj in enumerate(active)}, metres, int(frames[0]),
        {obj.name: len(active) + k for k, obj in enumerate(passive)},
    )  # fmt: skip
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
        settings={name: kind(getattr(settings, name)) for name, kind in SOLVER_SETTINGS},
        joints=joints,
    )


def export_scene(scene, *, frame_start: int | None = None, frame_end: int | None = None) -> SceneExport:
    """Validate the scene and convert it into a core model plus the passive objects' pose track:
    :func:`gather_scene` then :func:`build_scene`, in this thread.

    Raises:
        BakeError: see :func:`gather_scene` and :func:`build_scene`.
    """
    return build_scene(gather_scene(scene, frame_start=frame_start, frame_end=frame_end))
