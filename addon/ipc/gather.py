"""IPC-engine scene → plain data: the soft gather (:mod:`..soft.gather`) plus triangle-mesh colliders, read on
Blender's main thread (reads bpy, never writes it); :mod:`.build` turns it into the IPC world on any thread.

The IPC engine simulates the soft engine's scene: the same soft bodies (role, material, lattice, pins, output
settings), passive colliders and active boxes, built by the same code into the same
:class:`~contact_lab.core.fem.world.SoftWorld`. What it adds:

- **Mesh colliders**: passive objects with the Mesh shape stay out of the soft world and become
  :class:`~contact_lab.core.ipc.ipc_world.MeshCollider` entries: the object's evaluated mesh (modifiers applied)
  at the first baked frame, in object space times the object's scale (non-uniform or mirrored scale is baked
  into the vertices) in metres, posed by the object's location and rotation. They are static when their world
  matrix never changes over the range, kinematic otherwise; only location and rotation may be animated (the
  mesh and its scale are read once).
- **Collider tracks by IPC collider index**: IPC numbers its colliders differently from the soft world (the
  tessellated analytic ones first, then the meshes; ``IpcWorld.collider_soft_index`` maps them).
- **Solver settings** from the scene's ``ipc_*`` properties; the barrier distance ``ipc_dhat`` is stored in
  Blender units and converted to metres here.

Everything is validated before anything is simulated; problems raise :class:`~..errors.BakeError`.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from ...core.fem.world import ColliderKind
from ...core.ipc.ipc_world import MeshCollider
from .. import units
from ..friction.export import AXIS_VECTORS
from ..scene import (
    SCALE_TOLERANCE,
    SHEAR_TOLERANCE,
    mesh_arrays,
    raise_first,
    raise_problems,
    read_evaluated,
    used_vertices,
)
from ..soft.build import MESH, SoftColliderExport, SoftSceneInput
from ..soft.gather import STATIC_TOLERANCE, _uses_axis_anisotropy, gather_soft_scene
from .build import (
    IpcSceneExport,
    IpcSceneInput,
    MeshColliderInput,
    build_ipc_scene,
)


def _mesh_object_problems(meshes: list) -> list[tuple[str | None, str]]:
    return [
        (obj.name, f"'{obj.name}': a Mesh collider must be a mesh object, not {obj.type.lower()}")
        for obj in meshes
        if obj.type != "MESH"
    ]


def _settings_problems(settings) -> list[tuple[str | None, str]]:
    s = settings
    checks = (
        (s.ipc_dhat >= 0.0, f"Barrier Distance must be zero (automatic) or positive, got {s.ipc_dhat:g}"),
        (s.ipc_kappa >= 0.0, f"Barrier Stiffness must be zero (automatic) or positive, got {s.ipc_kappa:g}"),
        (s.ipc_eps_v > 0.0, f"IPC Static Friction Speed must be positive, got {s.ipc_eps_v:g} m/s"),
        (s.ipc_tolerance > 0.0, f"IPC Tolerance must be positive, got {s.ipc_tolerance:g}"),
        (int(s.ipc_max_iterations) >= 1, f"Max Iterations must be at least 1, got {int(s.ipc_max_iterations)}"),
    )
    # NaN compares False: refused too
    return [
        (None, f"the IPC {message}: set Scene ▸ Contact Lab Bake ▸ {message.split(' must')[0]}")
        for ok, message in checks
        if not ok
    ]


def read_evaluated_meshes(scene, objects: list, frame: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Evaluated meshes (modifiers applied) of ``objects`` at scene frame ``frame``, in object space.

    Only vertices used by a triangle are kept (loose vertices and edges do not collide).

    Returns:
        Per object ``(vertices (V, 3) float64 [BU], triangles (T, 3) int64)``, empty without faces
        (:func:`mesh_face_problems`). The current frame is restored.
    """
    return read_evaluated(scene, objects, frame, lambda obj, mesh: used_vertices(*mesh_arrays(mesh)))


def coincident_vertex_problem(name: str, vertices: np.ndarray, triangles: np.ndarray) -> str | None:
    """The message for a soft object's mesh (vertices (V, 3), triangles (T, 3)) with faces on vertices that lie
    exactly on other vertices (duplicated geometry: IPC sees surfaces touching, which it refuses), or None."""
    used = np.unique(triangles)
    if used.size < 2:
        return None
    distinct = np.unique(vertices[used], axis=0).shape[0]
    if distinct == used.size:
        return None
    return (
        f"'{name}': {used.size - distinct} of its vertices lie exactly on other vertices (duplicated geometry), "
        "so its surface touches itself and IPC cannot start: merge them (Edit Mode ▸ Mesh ▸ Clean Up ▸ Merge by "
        "Distance)"
    )


def mesh_face_problems(objects: list, meshes: list) -> list[tuple[str | None, str]]:
    """Mesh colliders whose evaluated mesh (``meshes``: :func:`read_evaluated_meshes` of ``objects``) has no faces
    (an empty mesh, or only vertices and edges: nothing to collide with)."""
    return [
        (
            obj.name,
            f"'{obj.name}': a Mesh collider needs faces, its evaluated mesh has none (only vertices or edges, or "
            "nothing): give it faces, or set its Role to None",
        )
        for obj, (_, triangles) in zip(objects, meshes, strict=True)
        if triangles.shape[0] == 0
    ]


def mesh_motion_problems(meshes: list, matrices: np.ndarray, frames: np.ndarray) -> list[tuple[str, str, int]]:
    """Mesh colliders whose world matrix is sheared, or whose scale changes, at some frame (they can only move
    and rotate: the mesh is read once).

    The one source of these refusals: :func:`read_mesh_colliders` raises the first, Check Scene lists them all.

    Args:
        meshes: the Mesh colliders. matrices: their world matrices (F, M, 4, 4) [BU] at ``frames`` (F,).
    """
    _, _, scale, shear = units.decompose_matrices(matrices)  # (F, M, ...)
    out = []
    for k, obj in enumerate(meshes):
        sheared = shear[:, k] > SHEAR_TOLERANCE
        rescaled = np.abs(scale[:, k] - scale[:1, k]).max(axis=1) > SCALE_TOLERANCE * np.abs(scale[0, k]).max()
        for bad, problem in ((sheared, _SHEARED), (rescaled, _RESCALED)):  # the first problem only, shear first
            if bad.any():
                frame = int(frames[np.flatnonzero(bad)[0]])
                out.append((obj.name, problem.format(name=obj.name, frame=frame), frame))
                break
    return out


_SHEARED = (
    "'{name}': its world matrix is sheared at frame {frame} (non-uniform scale inherited through a rotated parent); "
    "a Mesh collider can only move and rotate"
)
_RESCALED = (
    "'{name}': its scale changes at frame {frame}; a Mesh collider can only move and rotate (its mesh and scale are "
    "read once, at the first frame)"
)


def read_mesh_colliders(scene, meshes: list, matrices: np.ndarray, frames: np.ndarray, metres: float):
    """Mesh colliders of the passive Mesh-shaped ``meshes`` with world matrices ``matrices`` (F, M, 4, 4) [BU].

    Returns:
        One :class:`MeshColliderInput` per object, in order (main thread: reads the evaluated meshes).

    Raises:
        BakeError: a mesh's scale is sheared or animated, or its evaluated mesh has no faces.
    """
    raise_first(mesh_motion_problems(meshes, matrices, frames))
    translation, rotation, scale, _ = units.decompose_matrices(matrices)  # (F, M, ...)
    quats = units.make_quat_continuous(units.matrix_to_quat(rotation))
    evaluated = read_evaluated_meshes(scene, meshes, int(frames[0]))
    raise_problems(mesh_face_problems(meshes, evaluated))
    out = []
    for k, (obj, (vertices, triangles)) in enumerate(zip(meshes, evaluated, strict=True)):
        s = obj.contact_lab
        moving = np.abs(matrices[:, k] - matrices[:1, k]).max() > STATIC_TOLERANCE
        kind = ColliderKind.KINEMATIC if moving else ColliderKind.STATIC
        anisotropy = np.zeros(6)
        if _uses_axis_anisotropy(obj):
            axis = scale[0, k] * np.asarray(AXIS_VECTORS[s.structure_axis])  # the axis as the object is scaled
            anisotropy[:3] = (float(s.friction_t), float(s.friction_b), 1.0)
            anisotropy[3:] = axis / np.linalg.norm(axis)
        collider = MeshCollider(
            vertices=vertices * scale[0, k] * metres,  # the scale (also a mirror) baked into the vertices
            triangles=triangles,
            kind=kind,
            position=translation[0, k] * metres,
            orientation=quats[0, k],
            friction=float(s.friction),
            anisotropy=anisotropy,
            name=obj.name,
        )
        track = None
        if kind == ColliderKind.KINEMATIC:
            track = (np.ascontiguousarray(translation[:, k] * metres), np.ascontiguousarray(quats[:, k]))
        record = SoftColliderExport(obj.name, "PASSIVE", "MESH", -1, kind, np.zeros(3), scale[0, k].copy())
        out.append(MeshColliderInput(collider, record, track))
    return out


def gather_ipc_scene(
    scene, *, frame_start: int | None = None, frame_end: int | None = None, owner: str | None = None
) -> IpcSceneInput:
    """Validate an IPC-engine scene and read everything its bake needs (Blender's main thread; no core work).

    Reads ``scene.contact_lab`` and every object's ``contact_lab`` settings. Changes nothing except the current
    frame during sampling, which is restored.

    Raises:
        BakeError: anything :func:`~..soft.gather.gather_soft_scene` refuses (except Mesh-shaped passive
            colliders), invalid IPC settings, a Mesh collider that is not a mesh, has no faces, or whose scale
            is animated or sheared; the message names the object.
    """
    settings = scene.contact_lab
    raise_problems(_settings_problems(settings))
    soft, meshes, mesh_matrices = gather_soft_scene(
        scene,
        frame_start=frame_start,
        frame_end=frame_end,
        mesh_collider_problems=_mesh_object_problems,
        owner=owner,
    )
    touching = [(b.object_name, coincident_vertex_problem(b.object_name, b.vertices, b.triangles)) for b in soft.bodies]
    raise_problems([(name, message) for name, message in touching if message is not None])
    for body in soft.bodies:
        body.surface = body.ipc_surface
        if body.surface == MESH:
            # the mesh's own corners alone: on a fitted lattice a coarse mesh's corners would be lattice nodes
            # carrying the whole body (the default cube fell flat), on the padded one they lie inside tets
            body.lattice_fitted = False
    metres = soft.length_scale
    return IpcSceneInput(
        **{f.name: getattr(soft, f.name) for f in fields(SoftSceneInput)},
        meshes=read_mesh_colliders(scene, meshes, mesh_matrices, soft.frames, metres),
        dhat=float(settings.ipc_dhat) * metres,
        kappa=float(settings.ipc_kappa),
        eps_v=float(settings.ipc_eps_v),
        tolerance=float(settings.ipc_tolerance),
        max_iterations=int(settings.ipc_max_iterations),
        check_intersections=bool(settings.check_intersections),
    )


def export_ipc_scene(scene, *, frame_start: int | None = None, frame_end: int | None = None) -> IpcSceneExport:
    """Validate an IPC-engine scene and convert it into an :class:`IpcWorld` with its tracks and settings:
    :func:`gather_ipc_scene` then :func:`build_ipc_scene`, in this thread."""
    return build_ipc_scene(gather_ipc_scene(scene, frame_start=frame_start, frame_end=frame_end))
