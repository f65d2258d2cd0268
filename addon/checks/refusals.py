"""Check Scene's share of the exports' own refusals: the checks that need sampled frames or evaluated meshes.

The exports refuse a scene from functions that return problems (``(object name, message)`` pairs or
``(object name, message, frame)`` triples); the exports raise them, and :func:`mesh_findings` and
:func:`frame_findings` run the very same functions on the same data, so that nothing the bake refuses for its
input escapes Check Scene:

- world matrices sampled at the frames the export samples: the Rigid engine reads passive bodies at every frame of
  the range and active bodies and compound parts at the first (:func:`.rigid.gather.motion_problems`: zero,
  negative or non-finite scale, a non-uniform sphere or capsule, shear, parts moving on their parent); the Soft
  and IPC engines read every object at every frame (:func:`.soft.gather.motion_problems`: a singular soft object,
  the rigid scales) and Mesh colliders must keep their scale (:func:`.ipc.gather.mesh_motion_problems`);
- evaluated meshes at the start frame: Convex Hulls and Mesh shapes of the Rigid engine
  (:func:`.rigid.gather.mesh_problems`), faces of IPC Mesh colliders (:func:`.ipc.gather.mesh_face_problems`);
  an IPC soft object's duplicated vertices (:func:`.ipc.gather.coincident_vertex_problem`);
- a soft object's Pin Group that pins no vertex (:func:`.soft.gather.pin_problem`);
- what the write of soft objects would refuse: shared meshes for shape keys, a foreign modifier with the cache
  modifier's name (:func:`.soft.job.output_problems`).

Objects the general checks found broken (NaN, zero scale, not a mesh, ...) are left out: the bake is refused for
them anyway, and their matrices or meshes cannot be read.
"""

from __future__ import annotations

import numpy as np

from ..scene import mesh_arrays, sample_world_matrices
from .findings import BLENDER_MAX_FRAME, Finding, SceneView

MESH_SHAPES = frozenset({"CONVEX_HULL", "MESH"})


def mesh_findings(view: SceneView) -> list[Finding]:
    """The exports' refusals read from evaluated meshes at the start frame (Rigid Convex Hulls and Mesh shapes,
    IPC Mesh colliders), as ERROR findings with the exports' messages; listed with the general checks' errors."""
    if not -BLENDER_MAX_FRAME <= view.start <= BLENDER_MAX_FRAME:
        return []  # refused by the scene checks; no frame to evaluate
    return _findings(_rigid_meshes(view) if view.engine == "RIGID" else _collider_meshes(view))


def frame_findings(view: SceneView) -> list[Finding]:
    """The exports' refusals of world matrices over the frames they sample, and the soft objects' pins and output,
    as ERROR findings with the exports' messages. Needs ``view.matrices`` (the start frame, reused when no
    object moves) and objects the general checks passed."""
    if not (-BLENDER_MAX_FRAME <= view.start < view.end <= BLENDER_MAX_FRAME):
        return []  # an empty or out-of-range frame range: refused by the scene checks, nothing to sample
    return _findings(_rigid_motion(view) if view.engine == "RIGID" else _soft_motion(view))


def _findings(problems: list[tuple]) -> list[Finding]:
    out = []
    for problem in problems:
        name, message = problem[0], problem[1]
        setting = "matrix_world" if len(problem) > 2 else "data"  # a frame: a transform; else the mesh or settings
        out.append(Finding("ERROR", name, setting, message, ""))
    return out


def _matrices(view: SceneView, objects: list, every: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(world matrices (F, N, 4, 4) [BU], frames (F,))`` of ``objects``: at every frame of the range when
    ``every`` and one of them may move (animation or drivers, a parent, constraints, Blender's own rigid body),
    else at the start frame only, taken from ``view.matrices`` (a still object's matrix is the same at every
    frame: the bake samples it anyway, Check Scene need not)."""
    frames = np.arange(view.start, view.end + 1, dtype=np.int64)
    moving = every and any(
        getattr(obj, "animation_data", None) is not None
        or getattr(obj, "parent", None) is not None
        or len(getattr(obj, "constraints", ()))
        or getattr(obj, "rigid_body", None) is not None
        for obj in objects
    )
    if moving or not view.matrices or any(obj.name not in view.matrices for obj in objects):
        frames = frames if moving else frames[:1]
        return sample_world_matrices(view.scene, objects, frames), frames
    return np.stack([view.matrices[obj.name] for obj in objects])[None], frames[:1]


def _ok(view: SceneView, objects: list) -> list:
    return [obj for obj in objects if obj.name not in view.broken]


def _meshes(objects: list) -> bool:
    return all(obj.type == "MESH" and getattr(obj, "data", None) is not None for obj in objects)


def _rigid_bodies(view: SceneView) -> tuple[list, list, dict, list]:
    """``(active, passive, {compound name: parts}, parts in order)`` the general checks passed."""
    active, passive = _ok(view, view.active), _ok(view, view.passive)
    objects = active + passive
    parts = {o.name: view.parts[o.name] for o in objects if o.name in view.parts}
    parts = {name: children for name, children in parts.items() if not {c.name for c in children} & view.broken}
    return active, passive, parts, [part for obj in objects for part in parts.get(obj.name, ())]


def _rigid_motion(view: SceneView) -> list[tuple]:
    from ..rigid import gather as rigid_gather

    active, passive, parts, part_list = _rigid_bodies(view)
    objects = active + passive
    if not objects:
        return []
    # gather_scene reads passive bodies (and every part) at every frame, active bodies at the first
    matrices, frames = _matrices(view, objects + part_list, bool(passive))
    return list(rigid_gather.motion_problems(active, passive, parts, matrices, frames))


def _rigid_meshes(view: SceneView) -> list[tuple]:
    from ..rigid import gather as rigid_gather
    from ..rigid import shapes as rigid_shapes

    active, passive, parts, part_list = _rigid_bodies(view)
    shaped = [o for o in active + passive + part_list if o.contact_lab.shape in MESH_SHAPES]
    if not shaped or not _meshes(shaped):  # not a mesh: the shape checks name the object
        return []
    meshes = rigid_shapes.read_shape_meshes(view.scene, shaped, view.start)
    return list(rigid_gather.mesh_problems(active + passive, parts, meshes))


def _collider_meshes(view: SceneView) -> list[tuple]:
    from ..ipc import gather as ipc_gather

    problems: list[tuple] = []
    if view.engine == "IPC":  # IPC's soft surfaces must not touch themselves (the mesh as modelled, as gathered)
        for obj in _ok(view, view.soft):
            if obj.type == "MESH" and getattr(obj, "data", None) is not None:
                message = ipc_gather.coincident_vertex_problem(obj.name, *mesh_arrays(obj.data))
                if message is not None:
                    problems.append((obj.name, message))
    colliders = [obj for obj in _ok(view, view.mesh_colliders) if obj.type == "MESH"]
    if colliders:
        evaluated = ipc_gather.read_evaluated_meshes(view.scene, colliders, view.start)
        problems += ipc_gather.mesh_face_problems(colliders, evaluated)
    return problems


def _soft_motion(view: SceneView) -> list[tuple]:
    from ..ipc import gather as ipc_gather
    from ..soft import gather as soft_gather
    from ..soft import job as soft_job

    soft = [obj for obj in _ok(view, view.soft) if obj.type == "MESH"]
    active, passive = _ok(view, view.active), _ok(view, view.passive)
    colliders = [obj for obj in _ok(view, view.mesh_colliders) if obj.type == "MESH"]
    objects = soft + active + passive + colliders
    if not objects:
        return []
    matrices, frames = _matrices(view, objects, True)  # gather_soft_scene reads every object at every frame
    n = len(soft) + len(active) + len(passive)
    problems: list[tuple] = list(soft_gather.motion_problems(soft, active, passive, matrices[:, :n], frames))
    if colliders:
        problems += ipc_gather.mesh_motion_problems(colliders, matrices[:, n:], frames)
    problems += soft_job.output_problems(soft, str(view.scene.contact_lab.soft_output))
    for obj in soft:
        group = str(obj.contact_lab.pin_group)
        if group and obj.vertex_groups.get(group) is not None:  # a missing group is the soft checks' error
            pinned = soft_gather.read_group_weights(obj, group) > soft_gather.PIN_WEIGHT_THRESHOLD
            message = soft_gather.pin_problem(obj, pinned)
            if message is not None:
                problems.append((obj.name, message))
    return problems
