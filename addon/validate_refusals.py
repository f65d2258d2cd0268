"""Check Scene's share of the exports' own refusals: the checks that need sampled frames or evaluated meshes.

The exports refuse a scene from functions that return problems (``(object name, message)`` pairs or
``(object name, message, frame)`` triples); the exports raise the first of them, and :func:`findings` runs the very
same functions on the same data, so that nothing the bake refuses for its input escapes Check Scene:

- world matrices sampled at the frames the export samples: the Rigid engine reads passive bodies at every frame of
  the range and active bodies and compound parts at the first (:func:`.rigid.export.motion_problems`: zero,
  negative or non-finite scale, a non-uniform sphere or capsule, shear, parts moving on their parent); the Soft
  and IPC engines read every object at every frame (:func:`.soft.export.motion_problems`: a singular soft object,
  the rigid scales) and Mesh colliders must keep their scale (:func:`.ipc.export.mesh_motion_problems`);
- evaluated meshes at the start frame: Convex Hulls and Mesh shapes of the Rigid engine
  (:func:`.rigid.export.mesh_problems`), faces of IPC Mesh colliders (:func:`.ipc.export.mesh_face_problems`);
- a soft object's Pin Group that pins no vertex (:func:`.soft.export.pin_problem`);
- what the write of soft objects would refuse: shared meshes for shape keys, a foreign modifier with the cache
  modifier's name (:func:`.soft.job.output_problems`).

Objects the general checks found broken (NaN, zero scale, not a mesh, ...) are left out: the bake is refused for
them anyway, and their matrices or meshes cannot be read.
"""

from __future__ import annotations

import numpy as np

from .scene import sample_world_matrices
from .validate import BLENDER_MAX_FRAME, Finding, SceneView

MESH_SHAPES = frozenset({"CONVEX_HULL", "MESH"})


def findings(view: SceneView) -> list[Finding]:
    """The exports' frame-sampled and mesh refusals of ``view``'s objects, as ERROR findings (same messages)."""
    if not (-BLENDER_MAX_FRAME <= view.start < view.end <= BLENDER_MAX_FRAME):
        return []  # an empty or out-of-range frame range: refused by the scene checks, nothing to sample
    problems = _rigid_problems(view) if view.engine == "RIGID" else _soft_problems(view)
    out = []
    for problem in problems:
        name, message = problem[0], problem[1]
        frame = problem[2] if len(problem) > 2 else None
        setting = "matrix_world" if frame is not None else "data"
        out.append(Finding("ERROR", name, setting, message, ""))
    return out


def _frames(view: SceneView, objects: list, every: bool) -> np.ndarray:
    """The frames to sample ``objects`` at: every frame of the range when ``every`` and one of them may move
    (animation or drivers, a parent, constraints, Blender's own rigid body), else the start frame (a still
    object's matrix is the same at every frame: the bake samples it anyway, Check Scene need not)."""
    frames = np.arange(view.start, view.end + 1, dtype=np.int64)
    if not every:
        return frames[:1]
    moving = any(
        getattr(obj, "animation_data", None) is not None
        or getattr(obj, "parent", None) is not None
        or len(getattr(obj, "constraints", ()))
        or getattr(obj, "rigid_body", None) is not None
        for obj in objects
    )
    return frames if moving else frames[:1]


def _ok(view: SceneView, objects: list) -> list:
    return [obj for obj in objects if obj.name not in view.broken]


def _meshes(objects: list) -> bool:
    return all(obj.type == "MESH" and getattr(obj, "data", None) is not None for obj in objects)


def _rigid_problems(view: SceneView) -> list[tuple]:
    from .rigid import export as rigid_export
    from .rigid import shapes as rigid_shapes

    active, passive = _ok(view, view.active), _ok(view, view.passive)
    parts = {name: children for name, children in view.parts.items() if not set(c.name for c in children) & view.broken}
    objects = active + passive
    parts = {obj.name: parts[obj.name] for obj in objects if obj.name in parts}
    part_list = [part for obj in objects for part in parts.get(obj.name, ())]
    if not objects:
        return []
    frames = _frames(view, objects + part_list, bool(passive))  # gather_scene reads passive bodies at every frame
    matrices = sample_world_matrices(view.scene, objects + part_list, frames)
    problems: list[tuple] = list(rigid_export.motion_problems(active, passive, parts, matrices, frames))
    shaped = [o for o in objects + part_list if o.contact_lab.shape in MESH_SHAPES]
    if _meshes(shaped):  # else Check Scene's shape checks name the object that is not a mesh
        meshes = rigid_shapes.read_shape_meshes(view.scene, shaped, view.start)
        problems += rigid_export.mesh_problems(objects, parts, meshes)
    return problems


def _soft_problems(view: SceneView) -> list[tuple]:
    from .ipc import export as ipc_export
    from .soft import export as soft_export
    from .soft import job as soft_job

    soft = [obj for obj in _ok(view, view.soft) if obj.type == "MESH"]
    active, passive = _ok(view, view.active), _ok(view, view.passive)
    colliders = [obj for obj in _ok(view, view.mesh_colliders) if obj.type == "MESH"]
    objects = soft + active + passive + colliders
    if not objects:
        return []
    frames = _frames(view, objects, True)  # gather_soft_scene reads every object at every frame
    matrices = sample_world_matrices(view.scene, objects, frames)
    n = len(soft) + len(active) + len(passive)
    problems: list[tuple] = list(soft_export.motion_problems(soft, active, passive, matrices[:, :n], frames))
    if colliders:
        problems += ipc_export.mesh_motion_problems(colliders, matrices[:, n:], frames)
        evaluated = ipc_export.read_evaluated_meshes(view.scene, colliders, view.start)
        problems += ipc_export.mesh_face_problems(colliders, evaluated)
    problems += soft_job.output_problems(soft, str(view.scene.contact_lab.soft_output))
    for obj in soft:
        group = str(obj.contact_lab.pin_group)
        if group and obj.vertex_groups.get(group) is not None:  # a missing group is the soft checks' error
            pinned = soft_export.read_group_weights(obj, group) > soft_export.PIN_WEIGHT_THRESHOLD
            message = soft_export.pin_problem(obj, pinned)
            if message is not None:
                problems.append((obj.name, message))
    return problems
