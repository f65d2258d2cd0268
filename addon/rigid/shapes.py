"""Collision shapes of Contact Lab objects in their body frames: primitives, convex hulls, meshes, compounds.

Frames and units (everything that leaves this module is in metres):

- An object's *reference frame* has the object's world rotation and its origin at ``ref_local`` (object space
  [BU]): the bounding-box centre, or the object origin for planes and Compound Parents. Shapes are built there
  first, sized like Blender's rigid body shapes: local bounding box × the object's world scale; capsules,
  cylinders and cones along local Z with radius max(dim X, dim Y)/2 and the full height dim Z (a cone's base at
  -Z, its tip at +Z).
- The *body frame* has the same rotation and its origin at the body's centre of mass: for an active body the
  centroid of its shapes as one uniform solid (the core's mass properties), for a passive one the reference
  point. ``centre_local`` is that origin in object space [BU]; a cone, a hull or a compound has its centre of
  mass away from the bounding-box centre.
- Shapes with vertices (convex hulls, meshes) keep the identity pose: their vertices are given in the body frame.

Compound Parents (:func:`..scene.compound_parent` has the marking rule): each part's shape is built in the
part's own reference frame and moved into the parent's, using both world matrices at the start frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import ShapeType
from ...core.rigid.mass_properties import (
    MassProperties,
    combine_mass_properties,
    is_closed_mesh,
    mesh_mass_properties,
    primitive_mass_properties,
)
from .. import units
from ..errors import BakeError
from ..scene import local_box, mesh_arrays, read_evaluated, shape_label, signed_volume, used_vertices

CORE_SHAPES = {
    "BOX": ShapeType.BOX,
    "SPHERE": ShapeType.SPHERE,
    "CAPSULE": ShapeType.CAPSULE,
    "PLANE": ShapeType.PLANE,
    "CYLINDER": ShapeType.CYLINDER,
    "CONE": ShapeType.CONE,
    "CONVEX_HULL": ShapeType.CONVEX,
    "MESH": ShapeType.MESH,
}
"""``obj.contact_lab.shape`` → the core's shape type (a Compound Parent is several of these)."""

MESH_SHAPES = frozenset({"CONVEX_HULL", "MESH"})
"""Shapes read from the evaluated mesh: the object must be a mesh object."""

PART_SHAPES = frozenset({"BOX", "SPHERE", "CAPSULE", "CYLINDER", "CONE", "CONVEX_HULL"})
"""Shapes a part of a Compound Parent may have."""

FLAT_TOLERANCE = 1e-6
"""Volume below this fraction of the bounding box's counts as none (a flat hull or mesh)."""

_IDENTITY_QUAT = np.array([1.0, 0.0, 0.0, 0.0])


@dataclass
class ShapeSpec:
    """One collision shape, posed in some frame (the reference frame, then the body frame) [m]."""

    shape_type: ShapeType
    params: np.ndarray
    """(3,) as ``Model.shape_params``: half extents, (radius, 0, 0) or (radius, half height, 0); zeros for vertex
    shapes and planes."""
    pos: np.ndarray
    """Shape origin in the frame [m], (3,); always zero for vertex shapes."""
    quat: np.ndarray
    """Shape orientation in the frame (w, x, y, z); always the identity for vertex shapes."""
    vertices: np.ndarray | None = None
    """Convex hull or mesh vertices in the frame [m], (V, 3)."""
    triangles: np.ndarray | None = None
    """Their triangles (T, 3) int64, counter-clockwise seen from outside."""

    def moved(self, rotation: np.ndarray, translation: np.ndarray) -> ShapeSpec:
        """The same shape in a frame where this frame's points ``p`` sit at ``rotation @ p + translation``."""
        if self.vertices is not None:
            vertices = self.vertices @ rotation.T + translation
            return ShapeSpec(self.shape_type, self.params, self.pos, self.quat, vertices, self.triangles)
        quat = _quat_mul(units.matrix_to_quat(rotation), self.quat)
        return ShapeSpec(self.shape_type, self.params, rotation @ self.pos + translation, quat)


@dataclass
class BodyGeometry:
    """Everything the export needs about one body's shapes."""

    shapes: list[ShapeSpec]
    """In the body frame [m]."""
    centre_local: np.ndarray
    """Body origin (centre of mass of an active body) in object space [BU], (3,)."""
    surface_centre: np.ndarray
    """Origin of the first shape's frame in object space [BU], (3,): where friction inputs are measured from."""
    mass_properties: MassProperties | None
    """Of the shapes as a solid of density 1, about the body origin (active bodies only)."""


# shape construction ---------------------------------------------------------------------------------


def primitive_shape(shape: str, size_m: np.ndarray) -> ShapeSpec:
    """The primitive ``shape`` fitted to a box of full size ``size_m`` [m] (3,), at the origin."""
    x, y, z = (float(v) for v in size_m)
    if shape == "BOX":
        params = (0.5 * x, 0.5 * y, 0.5 * z)
    elif shape == "SPHERE":
        params = (0.5 * max(x, y, z), 0.0, 0.0)
    elif shape == "CAPSULE":
        radius = 0.5 * max(x, y)
        params = (radius, max(0.5 * z - radius, 0.0), 0.0)
    elif shape in ("CYLINDER", "CONE"):
        params = (0.5 * max(x, y), 0.5 * z, 0.0)
    elif shape == "PLANE":
        params = (0.0, 0.0, 0.0)
    else:
        raise BakeError(f"unknown primitive shape {shape!r}")
    return ShapeSpec(CORE_SHAPES[shape], np.array(params, dtype=np.float64), np.zeros(3), _IDENTITY_QUAT.copy())


def object_shapes(obj, scale: np.ndarray, metres: float, mesh=None) -> tuple[list[ShapeSpec], np.ndarray]:
    """``obj``'s own shape in its reference frame, and that frame's origin ``ref_local`` [BU] (3,).

    Args:
        scale: the object's world scale (3,). metres: metres per BU. mesh: for Convex Hull and Mesh shapes, the
            hull or mesh as ``(vertices (V, 3) [BU, object space], triangles (T, 3))``.
    """
    shape = obj.contact_lab.shape
    if shape == "PLANE":
        return [primitive_shape(shape, np.zeros(3))], np.zeros(3)
    centre, size = local_box(obj)
    if shape in MESH_SHAPES:
        assert mesh is not None, obj.name  # callers read every Convex Hull and Mesh object first (read_shape_meshes)
        vertices, triangles = mesh
        spec = ShapeSpec(
            CORE_SHAPES[shape],
            np.zeros(3),
            np.zeros(3),
            _IDENTITY_QUAT.copy(),
            (np.asarray(vertices, np.float64) - centre) * scale * metres,
            np.asarray(triangles, np.int64),
        )
        return [spec], centre
    return [primitive_shape(shape, np.abs(scale) * size * metres)], centre


def compound_shapes(parent_matrix: np.ndarray, parts: list, part_matrices: np.ndarray, metres: float, meshes: dict):
    """The parts' shapes in the Compound Parent's reference frame (its rotation, at its origin).

    Args:
        parent_matrix: the parent's world matrix (4, 4) [BU]. parts: the part objects. part_matrices: their world
            matrices (P, 4, 4) [BU], at the same frame. meshes: ``{part name: (vertices [BU], triangles)}`` of the
            Convex Hull parts.

    Returns:
        ``(shapes, ref_local = zeros(3))``.
    """
    t_c, r_c, _, _ = (a[0] for a in units.decompose_matrices(np.asarray(parent_matrix)[None]))
    t_p, r_p, s_p, _ = units.decompose_matrices(np.asarray(part_matrices).reshape(-1, 4, 4))
    shapes: list[ShapeSpec] = []
    for k, part in enumerate(parts):
        specs, ref = object_shapes(part, s_p[k], metres, meshes.get(part.name))
        origin = t_p[k] + r_p[k] @ (s_p[k] * ref)  # the part's reference point in the world [BU]
        rotation = r_c.T @ r_p[k]
        translation = r_c.T @ (origin - t_c) * metres
        shapes += [spec.moved(rotation, translation) for spec in specs]
    return shapes, np.zeros(3)


def shape_mass_properties(spec: ShapeSpec):
    """One shape as a solid of density 1: a :class:`MassProperties` in the frame ``spec`` is posed in, or a
    ``(properties in the shape's own frame, pos, rotation)`` part for :func:`combine_mass_properties`."""
    if spec.vertices is not None:
        return mesh_mass_properties(spec.vertices, spec.triangles)
    local = primitive_mass_properties(spec.shape_type, spec.params)
    return (local, spec.pos, units.quat_to_matrix(spec.quat))


def body_geometry(shapes: list[ShapeSpec], ref_local, scale, metres: float, *, active: bool) -> BodyGeometry:
    """Move ``shapes`` (in the reference frame at ``ref_local``) into the body frame.

    Args:
        ref_local: the reference point in object space [BU]. scale: the object's world scale (3,), not negative.
        active: place the body origin at the shapes' centroid (passive bodies keep the reference point).
    """
    ref_local = np.asarray(ref_local, np.float64)
    mass = None
    centroid = np.zeros(3)
    if active:
        mass = combine_mass_properties([shape_mass_properties(spec) for spec in shapes])
        centroid = np.asarray(mass.centroid, np.float64)
    body_shapes = [spec.moved(np.eye(3), -centroid) for spec in shapes]
    centre_local = ref_local + _object_space(centroid, scale, metres)
    return BodyGeometry(
        shapes=body_shapes,
        centre_local=centre_local,
        surface_centre=centre_local + _object_space(body_shapes[0].pos, scale, metres),
        mass_properties=mass,
    )


def _object_space(offset_m: np.ndarray, scale, metres: float) -> np.ndarray:
    """An offset [m] along the object's axes in object space [BU] (0 along an axis scaled to zero)."""
    size = np.abs(np.asarray(scale, np.float64)) * metres
    return np.divide(offset_m, size, out=np.zeros(3), where=size > 0.0)


# meshes ---------------------------------------------------------------------------------------------


def convex_hull(mesh) -> tuple[np.ndarray, np.ndarray]:
    """Convex hull of a ``bpy.types.Mesh``'s vertices, computed by Blender (``bmesh.ops.convex_hull``).

    Returns:
        ``(vertices (H, 3) float64 [the mesh's coordinates], triangles (T, 3) int64)``, the triangles
        counter-clockwise seen from outside. A flat or tiny vertex set gives a hull without volume (see
        :func:`hull_problem`).
    """
    import bmesh

    vertices, _ = mesh_arrays(mesh)
    bm = bmesh.new()
    try:
        bm.from_mesh(mesh)
        bm.verts.ensure_lookup_table()
        result = bmesh.ops.convex_hull(bm, input=list(bm.verts), use_existing_faces=False)
        bm.verts.index_update()
        faces = [g for g in result["geom"] if isinstance(g, bmesh.types.BMFace)]
        # one Python step per hull face (a hull has far fewer faces than the mesh has vertices)
        triangles = [
            (f.verts[0].index, f.verts[i].index, f.verts[i + 1].index)
            for f in faces
            for i in range(1, len(f.verts) - 1)
        ]
    finally:
        bm.free()
    hull_vertices, hull_triangles = used_vertices(vertices, np.asarray(triangles, dtype=np.int64).reshape(-1, 3))
    return hull_vertices, _outward(hull_vertices, hull_triangles)


def _outward(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Flip the hull triangles whose normal points towards the hull's inside (its vertex mean)."""
    if triangles.shape[0] == 0:
        return triangles
    a, b, c = (vertices[triangles[:, i]] for i in range(3))
    normal = np.cross(b - a, c - a)
    inward = np.einsum("ij,ij->i", normal, a - vertices.mean(axis=0)) < 0.0
    out = triangles.copy()
    out[inward] = out[inward][:, ::-1]
    return out


def read_shape_meshes(scene, objects: list, frame: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Hulls and meshes of the Convex Hull and Mesh ``objects``, from their evaluated meshes at ``frame``.

    Returns:
        ``{object name: (vertices (V, 3) [BU, object space], triangles (T, 3) int64)}``: the convex hull of all
        vertices, or the mesh's triangles with only the vertices they use. The current frame is restored.
    """

    def read(obj, mesh):
        return convex_hull(mesh) if obj.contact_lab.shape == "CONVEX_HULL" else used_vertices(*mesh_arrays(mesh))

    todo = [obj for obj in objects if obj.contact_lab.shape in MESH_SHAPES]
    return {obj.name: shape for obj, shape in zip(todo, read_evaluated(scene, todo, frame, read), strict=True)}


def open_edge_count(triangles: np.ndarray) -> int:
    """Edges used by an odd number of triangles: zero for a closed surface."""
    if triangles.shape[0] == 0:
        return 0
    edges = np.sort(triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return int(np.count_nonzero(counts % 2))


def _box_volume(vertices: np.ndarray) -> float:
    if vertices.shape[0] == 0:
        return 0.0
    extent = float(np.ptp(vertices, axis=0).max())
    return extent**3


def hull_problem(name: str, vertices: np.ndarray, triangles: np.ndarray) -> str | None:
    """Why a convex hull cannot be a shape (fewer than 4 vertices, all in one plane), or None."""
    volume = signed_volume(vertices, triangles)
    if vertices.shape[0] >= 4 and volume > FLAT_TOLERANCE * _box_volume(vertices):
        return None
    what = f"only {vertices.shape[0]}" if vertices.shape[0] < 4 else "vertices that all lie in one plane"
    return (
        f"'{name}': a Convex Hull needs at least 4 vertices that are not all in one plane, its evaluated mesh has "
        f"{what}: give it some thickness (Solidify), or choose the Mesh shape (or Plane for a ground)"
    )


def mesh_problem(name: str, vertices: np.ndarray, triangles: np.ndarray, *, active: bool) -> str | None:
    """Why a mesh cannot be a Mesh shape (no faces; for an active body: open, flat, inside out), or None."""
    if triangles.shape[0] == 0:
        return f"'{name}': the Mesh shape needs faces, its evaluated mesh has none"
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    if not np.any(np.linalg.norm(np.cross(b - a, c - a), axis=1) > 0.0):  # the core's mesh refuses it too
        return f"'{name}': every face of its evaluated mesh has zero area: give the mesh faces with an area"
    if not active:
        return None
    holes = open_edge_count(triangles)
    if holes:
        return (
            f"'{name}': an active Mesh must be closed so that it has an inside, its evaluated mesh has {holes} open "
            "edge(s): fill the holes (or Merge by Distance), make it Passive, or choose Convex Hull"
        )
    volume = signed_volume(vertices, triangles)
    if abs(volume) <= FLAT_TOLERANCE * _box_volume(vertices):
        return (
            f"'{name}': an active Mesh needs a volume, its evaluated mesh is flat: make it Passive or give it "
            "thickness (Solidify)"
        )
    if volume < 0.0:
        return (
            f"'{name}': its faces point inwards (negative volume): recalculate the normals (Edit Mode ▸ Mesh ▸ "
            "Normals ▸ Recalculate Outside)"
        )
    if not is_closed_mesh(triangles):  # closed, but with edges on more than two faces or faces wound unlike
        return (
            f"'{name}': an active Mesh must be one closed surface with consistent normals, its evaluated mesh has "
            "edges shared by more than two faces or neighbours facing opposite ways: recalculate the normals "
            "(Edit Mode ▸ Mesh ▸ Normals ▸ Recalculate Outside), make it Passive, or choose Convex Hull"
        )
    return None


# validation -----------------------------------------------------------------------------------------


def shape_problems(active: list, passive: list, parts: dict) -> list[tuple[str | None, str]]:
    """Shape settings the rigid engine refuses, before anything is read from the meshes.

    Args:
        active, passive: the bodies. parts: ``{compound parent name: its part objects}``.
    """
    problems: list[tuple[str | None, str]] = []
    for obj in active + passive:
        s = obj.contact_lab
        name = obj.name
        if s.shape in MESH_SHAPES and getattr(obj, "type", "MESH") != "MESH":
            problems.append((name, _needs_mesh(name, s.shape, obj.type)))
        if s.shape != "COMPOUND":
            continue
        children = parts.get(name, [])
        if not children:
            problems.append(
                (
                    name,
                    f"'{name}': a Compound Parent needs parts, direct children whose Role is Active or Passive, and "
                    "it has none: parent the parts to it and give them a Role, or choose another Shape",
                )
            )
        if s.friction_model != "COULOMB":
            problems.append(
                (
                    name,
                    f"'{name}': a Compound Parent's friction must be Coulomb (its parts have no shared surface for "
                    f"the {s.friction_model.title()} model): set Friction ▸ Friction Model to Coulomb",
                )
            )
        for part in children:
            problems += _part_problems(part, name)
    return problems


def _needs_mesh(name: str, shape: str, kind: str) -> str:
    return (
        f"'{name}': the {shape_label(shape)} shape is made from a mesh, and this is not a mesh object "
        f"({kind.title()}): convert it (Object ▸ Convert ▸ Mesh) or choose Box, Sphere, Capsule, Cylinder or Cone"
    )


def _part_problems(part, parent: str) -> list[tuple[str | None, str]]:
    shape = part.contact_lab.shape
    name = part.name
    if shape not in PART_SHAPES:
        return [
            (
                name,
                f"'{name}' is a part of the Compound Parent '{parent}', and a part's Shape must be Box, Sphere, "
                f"Capsule, Cylinder, Cone or Convex Hull, not {shape_label(shape)}",
            )
        ]
    if shape in MESH_SHAPES:  # its hull is checked when it is read
        return [(name, _needs_mesh(name, shape, part.type))] if getattr(part, "type", "MESH") != "MESH" else []
    _, size = local_box(part)
    if not np.all(size > 0.0):
        return [(name, f"'{name}' (a part of '{parent}'): its {shape_label(shape)} has zero size")]
    return []


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )
