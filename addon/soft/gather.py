"""Soft-engine scene → plain data: collect, validate and read it on Blender's main thread (reads bpy, never writes
it). :mod:`.build` turns what this reads into the core soft world on any thread; :func:`export_soft_scene` does
both on the calling thread.

Conventions (the soft engine's counterpart of :mod:`..rigid.gather`):

- A soft object's simulated geometry is its mesh *as modelled* (``obj.data``, before modifiers): the baked
  shape keys or the Mesh Cache modifier (first in the stack) replace those vertex positions, and the object's
  modifiers (subdivision, ...) apply on top of the deformation.
- The mesh is filled with a lattice of tets in its own *scaled* local frame (cubic cells along the object's axes,
  ``lattice_resolution`` cells along the longest side), then placed in the world with the object's world matrix
  at the first frame. The render vertices are embedded by barycentric weights, which affine maps preserve.
- Pinned vertices: render vertices whose pin-group weight is above :data:`PIN_WEIGHT_THRESHOLD` pin the four
  lattice vertices of the tet that contains them; the core moves pinned vertices with ``T(t) T(0)⁻¹`` of the
  object's sampled world matrix ``T``, so an animated object drags its pinned part and a still one keeps it put.
- Output space: the baked positions at frame ``f`` are the simulated world positions mapped by the inverse of the
  object's world matrix *at that frame*. The object's own transform animation is therefore kept (it only drives
  the pins) and the evaluated mesh lands exactly on the simulated positions in the world.
- Colliders: passive objects (box, sphere, capsule, plane; static when their world matrix never changes over the
  range, kinematic otherwise) and active boxes (dynamic; keyed by the bake). Shapes are fitted as in the rigid
  engine (bounding box × scale, centre of mass at the bounding-box centre). Passive objects with the Mesh shape
  are the IPC engine's (:mod:`..ipc.gather`): the soft engine refuses them, the IPC gather takes them aside.
- Lengths leave this module in metres (``BU × scale_length``).

Everything is validated before anything is simulated; problems raise :class:`~..errors.BakeError`.
"""

from __future__ import annotations

import numpy as np

from ...core.enums import ShapeType
from ...core.fem.volume import VolumeModel, kappa_per_pa
from ...core.fem.world import ColliderKind
from .. import units
from ..errors import BakeError
from ..friction.export import AXIS_VECTORS
from ..output.caches import cache_paths, collision_problems, owner_path, resolve_cache_dir
from ..scene import (
    SINGULAR_TOLERANCE,
    contact_objects,
    frame_range,
    invertible_problems,
    local_box,
    mesh_arrays,
    mesh_shape_problems,
    nonfinite_vertices,
    object_problems,
    raise_first,
    raise_problems,
    sample_world_matrices,
    scale_problems,
)
from .build import (
    SHAPES,
    ColliderInput,
    SoftBodyInput,
    SoftSceneExport,
    SoftSceneInput,
    build_soft_scene,
)

VOLUME_LAWS = {"QUADRATIC": VolumeModel.QUADRATIC, "GAS": VolumeModel.IDEAL_GAS, "LIQUID": VolumeModel.LIQUID}
"""``obj.contact_lab.volume_law`` → the core's volume penalty law."""

PIN_WEIGHT_THRESHOLD = 0.5
"""A render vertex is pinned when its weight in the pin group is above this."""

FLAT_TOLERANCE = 1e-6
"""A mesh whose smallest principal extent is below this fraction of its largest one has no volume."""


STATIC_TOLERANCE = 1e-9
"""Largest change of a passive object's world matrix entries [BU] over the range that still counts as static."""


# collection and reading ----------------------------------------------------------------------------


def soft_objects(scene) -> list:
    """Objects of ``scene`` with role 'SOFT', sorted by name (deterministic body order)."""
    out = [obj for obj in scene.objects if getattr(getattr(obj, "contact_lab", None), "role", None) == "SOFT"]
    out.sort(key=lambda o: o.name)
    return out


def read_mesh(obj) -> tuple[np.ndarray, np.ndarray]:
    """The object's mesh as modelled (before modifiers).

    Returns:
        ``(vertices (V, 3) float64 [BU] object space, triangles (T, 3) int64)``.
    """
    return mesh_arrays(obj.data)


def read_group_weights(obj, group_name: str) -> np.ndarray:
    """Weights (V,) of the vertex group ``group_name`` (0 for vertices outside it).

    Blender 4.2–5.2 have no bulk accessor for vertex-group weights (they are not mesh attributes), so this is the
    bake's one loop over vertices in Python (about 0.15 s per 65k vertices, once per bake).
    """
    mesh = obj.data
    group = obj.vertex_groups.get(group_name)
    if group is None:
        raise BakeError(f"'{obj.name}': pin group '{group_name}' does not exist", object_name=obj.name)
    index = group.index
    return np.fromiter(
        (next((g.weight for g in v.groups if g.group == index), 0.0) for v in mesh.vertices),
        dtype=np.float64,
        count=len(mesh.vertices),
    )


# validation ------------------------------------------------------------------------------------------


def _material_problems(obj) -> list[tuple[str, str]]:
    s, name = obj.contact_lab, obj.name
    E, nu, rho, beta, mu, kappa = (
        float(s.youngs_modulus),
        float(s.poisson_ratio),
        float(s.density),
        float(s.damping),
        float(s.friction),
        float(s.volume_compressibility),
    )
    checks = (  # NaN compares False: refused too
        (E > 0.0, f"Young's modulus must be positive, got {E:g} Pa", "Young's Modulus"),
        (0.0 <= nu < 0.5, f"Poisson ratio must be in [0, 0.5), got {nu:g}", "Poisson Ratio"),
        (rho > 0.0, f"density must be positive, got {rho:g} kg/m³", "Density"),
        (beta >= 0.0, f"damping must be zero or positive, got {beta:g} s", "Damping"),
        (mu >= 0.0, f"friction must be zero or positive, got {mu:g}", "Friction"),
        (kappa >= 0.0, f"volume compressibility must be zero or positive, got {kappa:g}", "Volume Compressibility"),
    )
    finite = np.isfinite([E, nu, rho, beta, mu, kappa])
    problems = [
        (name, f"'{name}': {message}: set Physics ▸ Contact Lab Body ▸ {label}")
        for (ok, message, label), real in zip(checks, finite, strict=True)
        if not (ok and real)
    ]
    if int(s.lattice_resolution) < 1:
        message = f"lattice resolution must be at least 1, got {int(s.lattice_resolution)}"
        problems.append((name, f"'{name}': {message}: set Physics ▸ Contact Lab Body ▸ Lattice Resolution"))
    return problems


def mesh_problems(obj, vertices: np.ndarray, triangles: np.ndarray) -> list[tuple[str, str]]:
    """Problems of a soft object's mesh: vertices that are not finite, no faces, no volume (flat, a line, a point)."""
    name = obj.name
    message = nonfinite_vertices(name, vertices)
    if message is not None:
        return [(name, message)]
    if vertices.shape[0] < 4 or triangles.shape[0] == 0:
        return [(name, f"'{name}': a soft body needs a mesh with faces around a volume ({vertices.shape[0]} vertices, "
                       f"{triangles.shape[0]} triangles)")]  # fmt: skip
    centred = vertices - vertices.mean(axis=0)
    extent = np.linalg.svd(centred, compute_uv=False)  # principal extents: a rotated flat mesh is caught too
    if not extent[0] > 0.0 or extent[-1] <= FLAT_TOLERANCE * extent[0]:
        return [(name, f"'{name}': the mesh has no volume (it is flat): a soft body needs a solid, e.g. add a "
                       "Solidify modifier and apply it")]  # fmt: skip
    return []


def soft_problems(soft: list, active: list) -> list[tuple[str | None, str]]:
    """Problems specific to the soft engine that need no frame change (meshes read here, before modifiers)."""
    problems: list[tuple[str | None, str]] = []
    if not soft:
        problems.append(
            (None, "no soft bodies: set Physics ▸ Contact Lab Body ▸ Role to Soft on at least one mesh object")
        )
    for obj in soft:
        name = obj.name
        if obj.type != "MESH":
            problems.append(
                (
                    name,
                    f"'{name}': a soft body must be a mesh object, not {obj.type.lower()}: only mesh objects can be "
                    "Active or Soft; set its Role to None, or convert it (Object ▸ Convert ▸ Mesh)",
                )
            )
            continue
        problems += _material_problems(obj)
        group = str(obj.contact_lab.pin_group)
        if group and obj.vertex_groups.get(group) is None:
            names = ", ".join(f"'{g.name}'" for g in obj.vertex_groups) or "none"
            problems.append(
                (name, f"'{name}': pin group '{group}' does not exist (vertex groups: {names}); pick one or clear it")
            )
        vertices, triangles = read_mesh(obj)
        problems += mesh_problems(obj, vertices, triangles)
    for obj in active:
        shape = obj.contact_lab.shape
        if shape not in ("BOX", "PLANE"):  # an active plane is reported by the rigid checks
            problems.append(
                (
                    obj.name,
                    f"'{obj.name}': the soft engine simulates active rigid bodies only as boxes, not as a "
                    f"{shape.lower()}: set its Shape to Box or its Role to Passive",
                )
            )
    return problems


def _uses_axis_anisotropy(obj) -> bool:
    """A passive collider whose anisotropic friction follows one of its axes (what the soft engine supports)."""
    s = obj.contact_lab
    return s.role == "PASSIVE" and s.friction_model == "ANISOTROPIC" and s.structure_source == "AXIS"


def _warnings(objects: list, scene) -> list[str]:
    out = []
    for obj in objects:
        model = getattr(obj.contact_lab, "friction_model", "COULOMB")
        if model != "COULOMB" and not _uses_axis_anisotropy(obj):
            out.append(
                f"'{obj.name}': the soft engine uses isotropic friction μ = {obj.contact_lab.friction:g}; "
                f"its {model.lower()} friction model is ignored (supported: Anisotropic with an Axis structure "
                "on passive objects)"
            )
    if scene.contact_lab.friction_combine != "GEOMETRIC":
        out.append("the soft engine combines friction coefficients by their geometric mean (Friction Combine ignored)")
    return out


# reading (main thread) ------------------------------------------------------------------------------


def pin_problem(obj, pinned_render: np.ndarray) -> str | None:
    """The message for a Pin Group that pins no vertex (``pinned_render`` (V,) bool: the pinned render vertices),
    or None."""
    if pinned_render.any():
        return None
    return (
        f"'{obj.name}': pin group '{obj.contact_lab.pin_group}' has no vertex with a weight above "
        f"{PIN_WEIGHT_THRESHOLD:g}: assign vertices to it or clear Pin Group"
    )


def read_soft_body(obj, matrices: np.ndarray, metres: float) -> SoftBodyInput:
    """Read one validated soft mesh object: its mesh, pins and material (main thread; no lattice yet).

    Args:
        obj: a validated soft mesh object.
        matrices: (F, 4, 4) its world matrices at the baked frames [BU].
        metres: metres per Blender unit.

    Raises:
        BakeError: the world matrix is singular at the first frame, or the pin group pins nothing.
    """
    s, name = obj.contact_lab, obj.name
    vertices, triangles = read_mesh(obj)
    linear = matrices[0, :3, :3]
    scale = np.linalg.norm(linear, axis=0)  # column norms: the object's (positive) scale
    if np.any(scale <= 0.0) or abs(np.linalg.det(linear)) <= SINGULAR_TOLERANCE * float(np.prod(scale)):
        raise BakeError(f"'{name}': its world matrix is singular (zero scale) at the first frame", object_name=name)
    group = str(s.pin_group)
    pinned_render = np.zeros(vertices.shape[0], dtype=bool)
    if group:
        pinned_render = read_group_weights(obj, group) > PIN_WEIGHT_THRESHOLD
        message = pin_problem(obj, pinned_render)
        if message is not None:
            raise BakeError(message, object_name=name)
    material = dict(
        density=float(s.density),
        youngs_modulus=float(s.youngs_modulus),
        poisson_ratio=float(s.poisson_ratio),
        damping=float(s.damping),
        friction=float(s.friction),
        volume_kappa=kappa_per_pa(s.volume_compressibility) if s.volume_compressibility > 0.0 else 0.0,
        volume_model=VOLUME_LAWS[str(s.volume_law)],
        initial_velocity=np.asarray(s.initial_velocity, dtype=float) * metres,
        name=name,
    )
    return SoftBodyInput(
        object_name=name,
        vertices=vertices,
        triangles=triangles,
        world_matrices=np.array(matrices, dtype=np.float64),
        pinned_render=pinned_render,
        lattice_resolution=int(s.lattice_resolution),
        material=material,
        lattice_fitted=str(s.lattice_fit) == "FITTED",
        ipc_surface=str(s.ipc_surface),
    )


def read_colliders(rigid: list, roles: list, matrices: np.ndarray, metres: float) -> list[ColliderInput]:
    """Passive objects and active boxes as :class:`ColliderInput` (main thread).

    Args:
        rigid: the objects. roles: 'ACTIVE' or 'PASSIVE' per object. matrices: their world matrices (F, K, 4, 4)
            [BU]. metres: metres per BU.
    """
    translation, rotation, scale, _shear = units.decompose_matrices(matrices)  # (F, K, ...)
    quats = units.make_quat_continuous(units.matrix_to_quat(rotation))  # (F, K, 4)
    out = []
    for k, obj in enumerate(rigid):
        s = obj.contact_lab
        centre, size = local_box(obj)
        if s.shape == "PLANE":
            centre = np.zeros(3)
        com = translation[:, k] + np.einsum("fij,fj->fi", rotation[:, k], scale[:, k] * centre)  # (F, 3) [BU]
        size_m = np.abs(scale[0, k]) * size * metres
        if roles[k] == "ACTIVE":
            kind = ColliderKind.DYNAMIC
        else:
            moving = np.abs(matrices[:, k] - matrices[:1, k]).max() > STATIC_TOLERANCE
            kind = ColliderKind.KINEMATIC if moving else ColliderKind.STATIC
        arguments = dict(
            position=com[0] * metres,
            orientation=quats[0, k],
            kind=kind,
            friction=float(s.friction),
            mass=float(s.mass) if kind == ColliderKind.DYNAMIC else 1.0,
            name=obj.name,
        )
        if kind == ColliderKind.DYNAMIC:  # a thrown box: the object's Initial Velocity, as for soft bodies
            arguments["linear_velocity"] = tuple(float(v) * metres for v in s.initial_velocity)
        if _uses_axis_anisotropy(obj):
            axis = scale[0, k] * np.asarray(AXIS_VECTORS[s.structure_axis])  # the axis as the object is scaled
            arguments["anisotropic_friction"] = (float(s.friction_t), float(s.friction_b), axis / np.linalg.norm(axis))
        shape = SHAPES[s.shape]
        if shape == ShapeType.BOX:
            arguments["half_extents"] = 0.5 * size_m
        elif shape == ShapeType.SPHERE:
            arguments["radius"] = 0.5 * float(size_m.max())
        elif shape == ShapeType.CAPSULE:
            radius = 0.5 * float(max(size_m[0], size_m[1]))
            arguments["radius"] = radius
            arguments["half_height"] = max(0.5 * float(size_m[2]) - radius, 0.0)
        track = None
        if kind == ColliderKind.KINEMATIC:
            track = (np.ascontiguousarray(com * metres), np.ascontiguousarray(quats[:, k]))
        out.append(ColliderInput(obj.name, roles[k], s.shape, kind, centre, scale[0, k].copy(), arguments, track))
    return out


def motion_problems(soft: list, active: list, passive: list, matrices: np.ndarray, frames: np.ndarray):
    """World matrices the Soft and IPC engines refuse: a soft object's singular at any frame, an active body's
    scale at the first frame, a passive one's at any frame (:func:`..scene.scale_problems`).

    The one source of these refusals: :func:`gather_soft_scene` raises the first, Check Scene lists them all.

    Args:
        soft, active, passive: the objects (passive without Mesh colliders). matrices: their world matrices
            (F, S + A + P, 4, 4) [BU] in that order, at every frame of the range ``frames`` (F,).

    Returns:
        ``(object name, message, frame)`` per object with a problem.
    """
    s, a = len(soft), len(active)
    problems = invertible_problems(soft, matrices[:, :s], frames)
    _t, _r, scale, shear = units.decompose_matrices(matrices[:, s : s + a + len(passive)])
    problems += scale_problems(active, scale[:1, :a], shear[:1, :a], frames[:1])
    problems += scale_problems(passive, scale[:, a:], shear[:, a:], frames)
    return problems


def gather_soft_scene(
    scene,
    *,
    frame_start: int | None = None,
    frame_end: int | None = None,
    mesh_collider_problems=None,
    owner: str | None = None,
) -> tuple[SoftSceneInput, list, np.ndarray]:
    """Validate a Soft-engine scene and read everything its bake needs (Blender's main thread; no core work).

    Reads ``scene.contact_lab`` and every object's ``contact_lab`` settings. Changes nothing except the current
    frame during sampling, which is restored.

    Args:
        mesh_collider_problems: None (the soft engine): passive objects with the Mesh shape are an error. Otherwise
            a function ``(mesh objects) -> problems`` validating them: they stay out of the soft world and
            are returned with their world matrices, sampled in the same pass as everything else (the IPC export).
        owner: the .blend file the bake is saved into, which owns the PC2 caches (default: the open file;
            :mod:`..output.caches`).

    Returns:
        ``(input, mesh objects (sorted by name), their world matrices (F, M, 4, 4) [BU])``.

    Raises:
        BakeError: anything invalid (no soft bodies, not a mesh, flat mesh, bad material, missing pin group,
            an active non-box, a Mesh-shaped collider, unsaved file with a relative PC2 folder, ...), naming the
            object.
    """
    settings = scene.contact_lab
    start, end = frame_range(scene, frame_start, frame_end)
    active, passive = contact_objects(scene)
    meshes = [obj for obj in passive if obj.contact_lab.shape == "MESH"]
    passive = [obj for obj in passive if obj.contact_lab.shape != "MESH"]
    soft = soft_objects(scene)
    problems = object_problems(scene, active, passive, start, end, require_active=False)
    problems += soft_problems(soft, active)
    problems += (
        mesh_shape_problems(meshes, "Soft") if mesh_collider_problems is None else mesh_collider_problems(meshes)
    )
    raise_problems(problems)
    cache_dir, cache_files = None, []
    if settings.soft_output == "PC2":
        cache_dir = resolve_cache_dir(scene, owner)
        names = [obj.name for obj in soft]
        cache_files = cache_paths(cache_dir, owner_path(owner), scene.name, names)
        raise_problems(
            [(n, f"{p}: {fix}; nothing was changed") for n, p, fix in collision_problems(names, cache_files)]
        )

    frames = np.arange(start, end + 1, dtype=np.int64)
    rigid = active + passive
    matrices = sample_world_matrices(scene, soft + rigid + meshes, frames)  # (F, S + K + M, 4, 4) [BU]
    soft_matrices, rigid_matrices = matrices[:, : len(soft)], matrices[:, len(soft) : len(soft) + len(rigid)]
    mesh_matrices = matrices[:, len(soft) + len(rigid) :]
    raise_first(motion_problems(soft, active, passive, matrices, frames))

    metres = units.length_scale(scene)
    inp = SoftSceneInput(
        scene_name=scene.name,
        frames=frames,
        fps=units.scene_fps(scene),
        length_scale=metres,
        gravity=np.asarray(units.scene_gravity(scene), dtype=np.float64),
        bodies=[read_soft_body(obj, soft_matrices[:, k], metres) for k, obj in enumerate(soft)],
        colliders=read_colliders(rigid, ["ACTIVE"] * len(active) + ["PASSIVE"] * len(passive), rigid_matrices, metres),
        substeps=int(settings.soft_substeps),
        contact=str(settings.soft_contact),
        integrator=str(settings.soft_integrator) if settings.soft_contact == "IMPLICIT" else "BE",
        dual_solver="PGS" if settings.solver == "PGS" else "PROX",
        contact_thickness=float(settings.soft_contact_thickness) * metres,
        friction_velocity=float(settings.soft_friction_velocity),
        output=str(settings.soft_output),
        cache_dir=cache_dir,
        cache_files=cache_files,
        warnings=_warnings(soft + rigid + meshes, scene),
    )
    return inp, meshes, mesh_matrices


def export_soft_scene(scene, *, frame_start: int | None = None, frame_end: int | None = None) -> SoftSceneExport:
    """Validate a Soft-engine scene and convert it into a core soft world plus its pin and collider tracks:
    :func:`gather_soft_scene` then :func:`build_soft_scene`, in this thread.

    Raises:
        BakeError: see :func:`gather_soft_scene` and :func:`build_soft_scene`.
    """
    inp, _meshes, _matrices = gather_soft_scene(scene, frame_start=frame_start, frame_end=frame_end)
    return build_soft_scene(inp)
