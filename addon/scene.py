"""Reading and validating the Contact Lab objects of a scene, for every engine's export (reads bpy only).

Shared by :mod:`.rigid.gather`, :mod:`.soft.gather` and :mod:`.ipc.gather`: which objects take part, the
frame range, bounding boxes, the checks of roles, shapes, masses and scales (problems are collected as
``(object name or None, message)`` pairs and raised together as one :class:`~.errors.BakeError`), and
world matrices sampled over the frame range in one pass.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from . import units
from .errors import BakeError

SCALE_TOLERANCE = 1e-5
"""Relative scale difference [dimensionless] above which a scale counts as non-uniform."""

SHEAR_TOLERANCE = 1e-4
"""Largest ``|RᵀR − I|`` entry accepted as a pure rotation (parent chains with non-uniform scale shear)."""

SINGULAR_TOLERANCE = 1e-12
"""``|det|`` of a world matrix's 3×3 part (relative to its scale cubed) below which it cannot be inverted."""

UNIFORM_SCALE_SHAPES = frozenset({"SPHERE", "CAPSULE", "PLANE"})

RIGID_ROLES = frozenset({"ACTIVE", "PASSIVE"})


def compound_parent(obj):
    """The Compound Parent ``obj`` is a part of, or None.

    The marking rule (like Blender's Compound Parent): the parts of an Active or Passive object whose Shape is
    Compound Parent are its *direct* children whose own Role is Active or Passive (which of the two does not
    matter). They are not bodies of their own: each adds its Shape to the parent's body, and they follow the
    parent's keyframes because they are parented. Children with Role None (decoration) or Soft are not parts.
    """
    parent = getattr(obj, "parent", None)
    settings = getattr(obj, "contact_lab", None)
    if parent is None or settings is None or settings.role not in RIGID_ROLES:
        return None
    parent_settings = getattr(parent, "contact_lab", None)
    if parent_settings is None or parent_settings.role not in RIGID_ROLES or parent_settings.shape != "COMPOUND":
        return None
    return parent


def compound_parts(scene) -> dict[str, list]:
    """``{compound parent name: its parts sorted by name}`` among ``scene.objects`` (see :func:`compound_parent`)."""
    parts: dict[str, list] = {}
    for obj in scene.objects:
        parent = compound_parent(obj)
        if parent is not None:
            parts.setdefault(parent.name, []).append(obj)
    for children in parts.values():
        children.sort(key=lambda o: o.name)
    return parts


def contact_objects(scene) -> tuple[list, list]:
    """Active and passive bodies of ``scene``, each sorted by name (deterministic body order).

    Parts of a Compound Parent are not bodies of their own and are left out (:func:`compound_parts`).
    """
    active, passive = [], []
    for obj in scene.objects:
        settings = getattr(obj, "contact_lab", None)
        if settings is None or compound_parent(obj) is not None:
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
        problems.append(
            (None, "no active bodies: set Physics ▸ Contact Lab Body ▸ Role to Active on at least one object")
        )
    if frame_end == frame_start:
        single = f"the frame range {frame_start}-{frame_end} is a single frame, nothing to simulate"
        problems.append((None, f"{single}: set End after Start"))
    elif frame_end < frame_start:
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
                problems.append(
                    (name, f"'{name}': mass must be positive, got {s.mass:g} kg: set Physics ▸ Contact Lab Body ▸ Mass")
                )
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
                problems.append(
                    (
                        name,
                        f"'{name}': active bodies must not have enabled constraints: disable or remove them "
                        "(Object Constraint Properties)",
                    )
                )
            if _uses_delta_transforms(obj):
                problems.append(
                    (
                        name,
                        f"'{name}': active bodies must not use delta transforms: clear them (Object Properties ▸ "
                        "Transform ▸ Delta Transform)",
                    )
                )
        # sizes checked elsewhere: a compound's are its parts' (its parent may be an Empty); a flat mesh or hull is
        # fine as a passive Mesh, and a flat hull gets its own message
        if s.shape not in ("PLANE", "COMPOUND", "CONVEX_HULL", "MESH"):
            message = _size_problem(obj)
            if message is not None:
                problems.append((name, message))
    return problems


def _uses_delta_transforms(obj) -> bool:
    """Any delta location, rotation or scale other than the identity (plain Python: this runs per body)."""
    identity = (1.0, 0.0, 0.0, 0.0)
    rotation = zip(obj.delta_rotation_quaternion, identity, strict=True)
    return (
        any(v != 0.0 for v in obj.delta_location)
        or any(v != 0.0 for v in obj.delta_rotation_euler)
        or not all(abs(a - b) <= 1e-8 + 1e-5 * abs(b) for a, b in rotation)
        or any(v != 1.0 for v in obj.delta_scale)
    )


def nonfinite_vertices(name: str, vertices: np.ndarray) -> str | None:
    """The message for a mesh with vertex coordinates that are NaN or infinite (``vertices`` (V, 3)), or None."""
    bad = int(np.count_nonzero(~np.all(np.abs(np.asarray(vertices, dtype=np.float64)) < 1e30, axis=1)))
    if not bad:
        return None
    return (
        f"'{name}': {bad} of its {len(vertices)} vertices have coordinates that are not numbers (NaN) or infinite: "
        "delete or move them in Edit Mode"
    )


def not_a_mesh(obj) -> str:
    """The message for an object of another type than mesh with the Active or Soft role."""
    return (
        f"'{obj.name}' is not a mesh ({obj.type.title()}): only mesh objects can be Active or Soft; set its Role to "
        "None, or convert it (Object ▸ Convert ▸ Mesh)"
    )


def _size_problem(obj) -> str | None:
    """Why a primitive shape (box, sphere, capsule, cylinder, cone) has nothing to take its size from, or None.

    An active object must be a mesh (an Empty, a Curve or a Text is no solid); a passive Empty has no size; a mesh
    may be empty or flat.
    """
    name, shape, kind = obj.name, obj.contact_lab.shape.lower(), getattr(obj, "type", "MESH")
    if obj.contact_lab.role == "ACTIVE" and kind != "MESH":
        return not_a_mesh(obj)
    _, size = local_box(obj)
    if np.all(size > 0.0) and np.all(size < 1e30):
        return None
    data = getattr(obj, "data", None)
    if kind == "MESH" and data is not None and not np.all(np.isfinite(size)):
        return nonfinite_vertices(name, mesh_arrays(data)[0]) or f"'{name}': its bounding box is not finite"
    if kind != "MESH":
        return (
            f"'{name}' is not a mesh ({kind.title()}) and has no size for its {shape} shape: use a mesh object, or "
            "choose the Plane shape for a ground"
        )
    if data is not None and len(data.vertices) == 0:
        return f"'{name}': its mesh is empty (no vertices): give it geometry, or set its Role to None"
    return (
        f"'{name}': the {shape} has zero size (dimensions {_fmt(size)}): it needs a thickness along every axis "
        "(Solidify, or scale it), or choose the Mesh shape"
    )


def raise_first(problems: list[tuple[str, str, int]]) -> None:
    """Raise a :class:`BakeError` for the first ``(object name, message, frame)`` of ``problems``; no-op if empty.

    The exports stop at the first problem of a frame-sampled check; Check Scene lists them all."""
    if problems:
        name, message, frame = problems[0]
        raise BakeError(message, object_name=name, frame=frame)


def scale_problems(
    objects: list, scales: np.ndarray, shears: np.ndarray, frames: np.ndarray
) -> list[tuple[str, str, int]]:
    """Non-finite, zero or negative scale, non-uniform scale on round shapes and shear, over all sampled frames.

    The one source of these refusals: the exports raise the first (:func:`raise_first`), Check Scene lists
    them all (:mod:`.checks.refusals`).

    Args:
        objects: rigid (active or passive) objects. scales: (F, len(objects), 3). shears: (F, len(objects)).
        frames: scene frame of each row, shape (F,).

    Returns:
        ``(object name, message, first bad frame)`` per object with a problem (its first problem only).
    """
    out = []
    if not objects:
        return out
    # one vectorised screen over all objects (Check Scene runs this on thousands); the messages per suspect
    sc, sh = np.asarray(scales, dtype=np.float64), np.asarray(shears, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        uneven = sc.max(axis=2) > (1.0 + SCALE_TOLERANCE) * sc.min(axis=2)  # (F, N); NaN compares False
    round_shape = np.array([o.contact_lab.shape in UNIFORM_SCALE_SHAPES for o in objects])
    fine = np.all(np.abs(sc) < 1e30, axis=2) & np.all(sc > 0.0, axis=2) & (sh <= SHEAR_TOLERANCE)
    fine &= ~(uneven & round_shape[None])
    for k in np.flatnonzero(~np.all(fine, axis=0)):
        obj = objects[int(k)]
        found = _scale_problem(obj, scales[:, k], shears[:, k], frames)
        if found is not None:
            out.append((obj.name, *found))
    return out


def _scale_problem(obj, sc: np.ndarray, shear: np.ndarray, frames: np.ndarray) -> tuple[str, int] | None:
    """``(message, frame)`` of the first scale problem of ``obj`` (scales ``sc`` (F, 3), shears (F,)), or None."""
    shape = obj.contact_lab.shape
    name = obj.name
    bad = np.flatnonzero(~np.all(np.isfinite(sc) & (np.abs(sc) < 1e30), axis=1) | np.isnan(shear))
    if bad.size:
        frame = int(frames[bad[0]])
        return (
            f"'{name}': its transform is not a number or infinite at frame {frame}: type finite values in its "
            "Location, Rotation and Scale (and its parent's)",
            frame,
        )
    zero = np.argwhere(sc == 0.0)
    if zero.size:
        row, axis = zero[0]
        return (
            f"'{name}': its scale is zero on axis {'XYZ'[axis]} at frame {int(frames[row])}: it has no size along "
            f"{'XYZ'[axis]}; give it a positive scale (or its parent, if the parent is scaled to zero)",
            int(frames[row]),
        )
    bad = np.flatnonzero(np.any(sc < 0.0, axis=1))
    if bad.size:
        return (
            f"'{name}': negative scale {_fmt(sc[bad[0]])} at frame {int(frames[bad[0]])} is not supported; "
            "apply the scale (Ctrl A) or make it positive",
            int(frames[bad[0]]),
        )
    if shape in UNIFORM_SCALE_SHAPES:
        ratio = sc.max(axis=1) / np.maximum(sc.min(axis=1), 1e-300) - 1.0
        bad = np.flatnonzero(ratio > SCALE_TOLERANCE)
        if bad.size:
            return (
                f"'{name}': a {shape.lower()} needs a uniform scale, got {_fmt(sc[bad[0]])} at frame "
                f"{int(frames[bad[0]])}; apply the scale (Ctrl A) or use a Box",
                int(frames[bad[0]]),
            )
    bad = np.flatnonzero(shear > SHEAR_TOLERANCE)
    if bad.size:
        return (
            f"'{name}': its world matrix is sheared at frame {int(frames[bad[0]])} (non-uniform scale inherited "
            "through a rotated parent); rigid shapes cannot follow it",
            int(frames[bad[0]]),
        )
    return None


def invertible_problems(objects: list, matrices: np.ndarray, frames: np.ndarray) -> list[tuple[str, str, int]]:
    """Soft objects' world matrices must be invertible at every frame (their output is mapped back by them).

    Args:
        objects: soft objects. matrices: their world matrices (F, N, 4, 4) [BU]. frames: scene frames (F,).

    Returns:
        ``(object name, message, first singular frame)`` per object whose matrix is singular at some frame.
    """
    linear = matrices[..., :3, :3]  # (F, N, 3, 3)
    det = np.abs(np.linalg.det(linear))
    scale3 = np.prod(np.linalg.norm(linear, axis=-2), axis=-1)
    out = []
    for k, obj in enumerate(objects):
        bad = np.flatnonzero(~(det[:, k] > SINGULAR_TOLERANCE * np.maximum(scale3[:, k], 1e-300)))
        if bad.size:
            frame = int(frames[bad[0]])
            column = np.linalg.norm(linear[bad[0], k], axis=0)
            axes = ", ".join("XYZ"[a] for a in np.flatnonzero(~(column > 0.0))) or "none (it is flattened by a parent)"
            message = (
                f"'{obj.name}': its world matrix is singular (zero scale) at frame {frame}, scale zero on axis {axes}: "
                "give it (and its parents) a positive scale"
            )
            out.append((obj.name, message, frame))
    return out


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
    position = {o.name: k for k, o in enumerate(pool)}  # one pass: pool.find per object is quadratic
    index = np.array([position.get(obj.name, -1) for obj in objects], dtype=np.int64)
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


def mesh_shape_problems(objects: list, engine: str) -> list[tuple[str | None, str]]:
    """Objects with the Mesh shape, which the Soft engine cannot simulate (the Rigid and IPC engines can).

    Args:
        objects: active and passive objects. engine: the scene's engine label ('Soft').
    """
    problems: list[tuple[str | None, str]] = []
    for obj in objects:
        if obj.contact_lab.shape != "MESH":
            continue
        if obj.contact_lab.role == "ACTIVE":
            message = (
                f"the {engine} engine cannot simulate an active Mesh: set Scene ▸ Contact Lab Bake ▸ Engine to "
                "Rigid, or choose another Shape"
            )
        else:
            message = (
                f"the Mesh shape is a collider of the Rigid and IPC engines, the {engine} engine cannot use it: set "
                "Scene ▸ Contact Lab Bake ▸ Engine to IPC, or choose another Shape"
            )
        problems.append((obj.name, f"'{obj.name}': {message}"))
    return problems


def engine_shape_problems(objects: list, supported, engine: str) -> list[tuple[str | None, str]]:
    """Objects whose Shape the engine cannot simulate (e.g. Cylinder, Cone, Convex Hull, Compound outside Rigid).

    Args:
        objects: active and passive objects. supported: the engine's shape names. engine: its label ('Soft').
    """
    return [
        (
            obj.name,
            f"'{obj.name}': the {engine} engine cannot use the {shape_label(obj.contact_lab.shape)} shape (the Rigid "
            "engine can): choose Box, Sphere, Capsule or Plane, or set Scene ▸ Contact Lab Bake ▸ Engine to Rigid",
        )
        for obj in objects
        if obj.contact_lab.shape not in supported
    ]


def shape_label(shape: str) -> str:
    """A Shape's name as the panel shows it ('Convex Hull', 'Compound Parent', 'Cylinder')."""
    return {"CONVEX_HULL": "Convex Hull", "COMPOUND": "Compound Parent"}.get(shape, shape.title())


def mesh_arrays(mesh) -> tuple[np.ndarray, np.ndarray]:
    """A ``bpy.types.Mesh``'s vertices (V, 3) float64 [its own coordinates] and loop triangles (T, 3) int64."""
    n = len(mesh.vertices)
    co = np.empty(3 * n, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    tris = mesh.loop_triangles
    tri = np.empty(3 * len(tris), dtype=np.int32)
    tris.foreach_get("vertices", tri)
    return co.reshape(n, 3).astype(np.float64), tri.reshape(-1, 3).astype(np.int64)


def used_vertices(vertices: np.ndarray, triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Only the vertices (V, 3) that a triangle (T, 3) uses, and the triangles renumbered onto them (T, 3) int64
    (loose vertices and edges do not collide)."""
    used, compact = np.unique(triangles, return_inverse=True)
    return vertices[used], compact.reshape(-1, 3).astype(np.int64)


def signed_volume(vertices: np.ndarray, triangles: np.ndarray) -> float:
    """Volume enclosed by a triangle surface [units³]: positive when the triangles face outwards."""
    if triangles.shape[0] == 0:
        return 0.0
    a, b, c = (vertices[triangles[:, i]] for i in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def read_evaluated(scene, objects: list, frame: int, read) -> list:
    """``read(obj, mesh)`` of each object's evaluated mesh (modifiers applied, object space) at scene frame
    ``frame``, in order; the temporary meshes are freed and the current frame is restored."""
    out = []
    if not objects:
        return out
    with evaluated_at(scene, frame) as depsgraph:
        for obj in objects:
            evaluated = obj.evaluated_get(depsgraph)
            mesh = evaluated.to_mesh()
            try:
                out.append(read(obj, mesh))
            finally:
                evaluated.to_mesh_clear()
    return out


def evaluated_depsgraph(scene):
    """The evaluated dependency graph of ``scene`` (the context's when it is the context scene)."""
    import bpy

    if bpy.context.scene == scene:
        return bpy.context.evaluated_depsgraph_get()
    depsgraph = scene.view_layers[0].depsgraph
    depsgraph.update()
    return depsgraph


@contextmanager
def evaluated_at(scene, frame: int):
    """``with evaluated_at(scene, frame) as depsgraph:`` the scene evaluated at ``frame``; the current frame
    (and subframe) is restored afterwards, also on error, and left alone when it already is ``frame``."""
    original = (scene.frame_current, scene.frame_subframe)
    moved = int(frame) != original[0] or original[1] != 0.0
    try:
        if moved:
            scene.frame_set(int(frame))
        yield evaluated_depsgraph(scene)
    finally:
        if moved:
            scene.frame_set(original[0], subframe=original[1])
