"""Triangle meshes for the MESH shape: validation, BVH, edge neighbours, surface samples and packing (builder time).

CONTRACT (the narrow phase and the builder depend on it): :class:`MeshArrays` holds every mesh of a model in CSR
form, coordinates in the owning shape's frame [m], built once by :func:`pack_meshes` at finalize.

- ``mesh_vert_start`` (M+1,) int32 and ``mesh_verts`` (V, 3) float64;
- ``mesh_tri_start`` (M+1,) int32 and ``mesh_tris`` (T, 3) int32: corners as global indices into ``mesh_verts``,
  counter-clockwise seen from the side the face normal points to (zero-area triangles are dropped);
- ``mesh_tri_normal`` (T, 3): unit normal ``(b - a) x (c - a) / |...|``;
- ``mesh_tri_edge_normal`` (T, 3, 3): across edge k (corner k to k + 1), the neighbouring triangle's unit normal,
  negated if that neighbour is wound the other way (so it points to the same side); zero on free edges (one
  triangle, or three or more);
- ``mesh_vert_kind`` (V,) int32: ``VERTEX_INNER`` (only flat or concave edges meet there), ``VERTEX_RIDGE`` (on
  a straight convex ridge: exactly two convex edges, in line) or ``VERTEX_CORNER`` (any other, or a free edge);
- ``mesh_ring_start`` (V+1,) int32 and ``mesh_ring`` (K,) int32: each vertex's neighbours along edges (global
  ids), so a contact at a vertex can check that no edge leaving it is nearer;
- BVH, an AABB tree over each mesh's triangles, nodes in depth-first order: ``mesh_node_start`` (M+1,) int32
  (mesh m's root is node ``mesh_node_start[m]``), ``mesh_node_lower`` / ``mesh_node_upper`` (N, 3) [m],
  ``mesh_node_right`` (N,) int32 (right child; the left child of node n is n + 1; -1 marks a leaf),
  ``mesh_node_first`` / ``mesh_node_count`` (N,) int32 (a leaf's range in ``mesh_leaf_tris``, at most
  ``BVH_LEAF_MAX`` triangles) and ``mesh_leaf_tris`` (T,) int32 (global triangle ids, leaf order);
- ``mesh_closed`` (M,) int32: 1 when every edge joins two oppositely wound triangles and the enclosed volume is
  positive (a solid behind its faces), else 0 (an open or inward-wound surface: both sides collide);
- the signed distance field of each active mesh (seed 000 §2.3; ``mesh_sdf``): ``mesh_sdf_start`` (M+1,) int64,
  ``mesh_sdf_values`` (G,) float64 [m] (grid point (i, j, k) at ``start + (i ny + j) nz + k``),
  ``mesh_sdf_origin`` (M, 3) [m], ``mesh_sdf_cell`` (M,) [m], ``mesh_sdf_band`` (M,) [m] and ``mesh_sdf_dims``
  (M, 3) int32 (all zero for a passive mesh, which has no field);
- surface samples of each active mesh: ``mesh_sample_start`` (M+1,) int32 and ``mesh_samples`` (S, 3) [m]: the
  vertices, then points on the edges and inside the faces at most ``spacing`` apart (area-weighted), so a face
  far larger than the grid cell still has points on it (seed §2.3.2's pitfall of coarse meshes).

An empty model has M = 0 and zero-length arrays of the same dtypes (one Numba specialization). Passive meshes
(static or kinematic bodies) collide through the BVH and may be any triangle soup; active ones (dynamic bodies)
must be closed with positive volume and collide through their field and samples.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import ModelError
from .mass_properties import is_closed_mesh, mesh_mass_properties
from .mesh_sdf import signed_distance_grid

BVH_LEAF_MAX = 4
"""Triangles per BVH leaf at most."""

SAMPLE_CELLS = 8
"""Surface samples are at most (longest side of the box) / SAMPLE_CELLS apart..."""

SAMPLE_MAX = 512
"""...unless that gives more than about this many points on the faces; then the spacing grows to fit."""


VERTEX_INNER = 0
"""``mesh_vert_kind`` of a vertex inside a flat or concave patch: contacts there take the face normal."""

VERTEX_RIDGE = 1
"""``mesh_vert_kind`` of a vertex in the middle of a straight convex edge (two convex edges in line)."""

VERTEX_CORNER = 2
"""``mesh_vert_kind`` of a true corner (convex edges not in line, or a free edge): any outward normal."""

_CONVEX_EDGE = 1.0e-9
"""An edge is convex when the neighbour's normal leans out of it by more than this [sin]."""


class TriangleMesh(NamedTuple):
    """One validated mesh as the builder keeps it (made by :func:`validated_mesh`)."""

    vertices: np.ndarray
    """(V, 3) float64 [m], shape frame."""
    triangles: np.ndarray
    """(T, 3) int64 corner indices."""
    solid: bool
    """True for an active (dynamic) mesh: closed, positive volume, collides through a signed distance field."""


class MeshArrays(NamedTuple):
    """Flat arrays of every triangle mesh of a model (see the module docstring for the layout)."""

    mesh_vert_start: np.ndarray
    mesh_verts: np.ndarray
    mesh_tri_start: np.ndarray
    mesh_tris: np.ndarray
    mesh_tri_normal: np.ndarray
    mesh_tri_edge_normal: np.ndarray
    mesh_vert_kind: np.ndarray
    mesh_ring_start: np.ndarray
    mesh_ring: np.ndarray
    mesh_node_start: np.ndarray
    mesh_node_lower: np.ndarray
    mesh_node_upper: np.ndarray
    mesh_node_right: np.ndarray
    mesh_node_first: np.ndarray
    mesh_node_count: np.ndarray
    mesh_leaf_tris: np.ndarray
    mesh_closed: np.ndarray
    mesh_sdf_start: np.ndarray
    mesh_sdf_values: np.ndarray
    mesh_sdf_origin: np.ndarray
    mesh_sdf_cell: np.ndarray
    mesh_sdf_band: np.ndarray
    mesh_sdf_dims: np.ndarray
    mesh_sample_start: np.ndarray
    mesh_samples: np.ndarray


def empty_mesh_arrays() -> MeshArrays:
    """The :class:`MeshArrays` of a model without meshes (zero-length arrays, the kernels' dtypes)."""
    return pack_meshes([], 0.0)


def validated_mesh(vertices, triangles, *, solid: bool, label: str = "") -> TriangleMesh:
    """Check a mesh's arrays; a ``solid`` (active) one must also be closed and enclose a positive volume.

    Raises:
        ModelError: bad shapes, non-finite coordinates, corner indices out of range, no triangle with area;
            for a solid mesh an open surface or one wound inward (the message names ``label``).
    """
    name = label or "mesh"
    v = np.asarray(vertices, np.float64)
    t = np.asarray(triangles)
    if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
        raise ModelError(f"{name}: mesh vertices must have shape (V, 3), got {v.shape}")
    if t.ndim != 2 or t.shape[1] != 3 or len(t) == 0 or not np.issubdtype(t.dtype, np.integer):
        raise ModelError(f"{name}: mesh triangles must be integer corner indices of shape (T, 3), got {t.shape}")
    if not np.all(np.isfinite(v)):
        raise ModelError(f"{name}: the mesh has NaN or infinite vertex coordinates; fix its vertices")
    t = t.astype(np.int64)
    if t.min() < 0 or t.max() >= len(v):
        raise ModelError(f"{name}: mesh triangles refer to vertices outside 0..{len(v) - 1}")
    if not np.any(_triangle_areas(v, t) > 0.0):
        raise ModelError(f"{name}: every triangle of the mesh has zero area; give the mesh some faces")
    if solid:
        if not is_closed_mesh(t):
            raise ModelError(
                f"{name}: an active (dynamic) Mesh shape must be a closed surface (every edge shared by two faces "
                f"wound alike); fill its holes and make the normals consistent, or use the Convex Hull shape, "
                f"or make the object passive"
            )
        volume = mesh_mass_properties(v, t).volume if _has_volume(v, t) else 0.0
        if not volume > 0.0:
            raise ModelError(
                f"{name}: an active (dynamic) Mesh shape must enclose a positive volume with its faces pointing "
                f"out (volume {volume:.3g} m³); recalculate the normals outside or use another shape"
            )
    return TriangleMesh(v.copy(), t.copy(), bool(solid))


def _has_volume(vertices: np.ndarray, triangles: np.ndarray) -> bool:
    """Whether the signed volume of a closed mesh is positive (``mesh_mass_properties`` raises otherwise)."""
    origin = vertices.mean(axis=0)
    a, b, c = (vertices[triangles[:, k]] - origin for k in range(3))
    return float(np.einsum("ij,ij->", a, np.cross(b, c))) > 0.0


def _triangle_areas(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Twice the area [m²] of every triangle, shape (T,)."""
    a = vertices[triangles[:, 0]]
    return _lengths(np.cross(vertices[triangles[:, 1]] - a, vertices[triangles[:, 2]] - a))


def _lengths(v: np.ndarray) -> np.ndarray:
    """Euclidean length along the last axis (no BLAS: the core keeps NumPy's linalg out of its modules)."""
    return np.sqrt(np.sum(v * v, axis=-1))


# ---------------------------------------------------------------------------------------------------------------
# BVH
# ---------------------------------------------------------------------------------------------------------------


def build_bvh(vertices: np.ndarray, triangles: np.ndarray) -> tuple:
    """Median-split AABB tree over the triangles (local ids): ``(lower, upper, right, first, count, leaf_tris)``.

    Top-down: a node's triangles are ordered by their centroid along the longest side of the centroids' box (a
    stable sort, so the tree is deterministic) and split at the median until at most ``BVH_LEAF_MAX`` remain.
    Nodes are numbered depth first (left child n + 1, right child ``right[n]``, -1 for a leaf).
    """
    tri_lo = np.minimum(np.minimum(vertices[triangles[:, 0]], vertices[triangles[:, 1]]), vertices[triangles[:, 2]])
    tri_hi = np.maximum(np.maximum(vertices[triangles[:, 0]], vertices[triangles[:, 1]]), vertices[triangles[:, 2]])
    centroid = 0.5 * (tri_lo + tri_hi)
    order = np.arange(len(triangles))
    lower, upper, right, first, count = [], [], [], [], []
    stack = [(0, len(triangles), -1)]  # (begin, end, node whose right child this is)
    while stack:
        begin, end, parent = stack.pop()
        node = len(lower)
        if parent >= 0:
            right[parent] = node
        ids = order[begin:end]
        lower.append(tri_lo[ids].min(axis=0))
        upper.append(tri_hi[ids].max(axis=0))
        if end - begin <= BVH_LEAF_MAX:
            right.append(-1)
            first.append(begin)
            count.append(end - begin)
            continue
        c = centroid[ids]
        axis = int(np.argmax(c.max(axis=0) - c.min(axis=0)))
        order[begin:end] = ids[np.argsort(c[:, axis], kind="stable")]
        right.append(0)  # set when the right child is numbered
        first.append(0)
        count.append(0)
        mid = (begin + end) // 2
        stack.append((mid, end, node))
        stack.append((begin, mid, -1))  # popped next: the left child is node + 1
    return (
        np.array(lower, np.float64).reshape(-1, 3),
        np.array(upper, np.float64).reshape(-1, 3),
        np.array(right, np.int32),
        np.array(first, np.int32),
        np.array(count, np.int32),
        order.astype(np.int32),
    )


# ---------------------------------------------------------------------------------------------------------------
# Neighbours, closedness, samples
# ---------------------------------------------------------------------------------------------------------------


def _triangle_normals(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Unit normals (T, 3) of non-degenerate triangles."""
    a = vertices[triangles[:, 0]]
    n = np.cross(vertices[triangles[:, 1]] - a, vertices[triangles[:, 2]] - a)
    return n / _lengths(n)[:, None]


def edge_neighbour_normals(triangles: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Per triangle and edge k (corner k to k + 1) the neighbour's normal turned to this triangle's side, (T, 3, 3).

    An edge shared by exactly two triangles: the other's normal, negated when it runs the edge in the same
    direction (inconsistent winding). Any other edge (boundary, non-manifold) is free: zero.
    """
    count = len(triangles)
    directed = np.stack([triangles, np.roll(triangles, -1, axis=1)], axis=2).reshape(-1, 2)  # row 3 t + k
    key = np.sort(directed, axis=1)
    _, inverse, uses = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    out = np.zeros((count, 3, 3))
    rows = np.flatnonzero(uses[inverse] == 2)
    order = rows[np.argsort(inverse[rows], kind="stable")]
    first, second = order[0::2], order[1::2]
    for here, there in ((first, second), (second, first)):
        same = np.all(directed[here] == directed[there], axis=1)
        n = normals[there // 3] * np.where(same, -1.0, 1.0)[:, None]
        out[here // 3, here % 3] = n
    return out


def vertex_kinds(vertices: np.ndarray, triangles: np.ndarray, normals, edge_normals) -> np.ndarray:
    """``mesh_vert_kind`` (V,) int32 of every vertex from the convexity of the edges meeting there."""
    corners = vertices[triangles]  # (T, 3, 3)
    direction = np.roll(corners, -1, axis=1) - corners  # edge k: corner k -> k + 1
    outward = np.cross(direction, normals[:, None, :])
    outward /= _lengths(outward)[..., None]
    free = _lengths(edge_normals) == 0.0
    convex = ~free & (np.einsum("tkj,tkj->tk", edge_normals, outward) > _CONVEX_EDGE)
    kind = np.zeros(len(vertices), np.int32)
    start = triangles.reshape(-1)
    end = np.roll(triangles, -1, axis=1).reshape(-1)
    for v in np.unique(np.concatenate([start[free.reshape(-1)], end[free.reshape(-1)]])):
        kind[v] = VERTEX_CORNER
    flat_dir = direction.reshape(-1, 3)
    sharp = convex.reshape(-1)
    ridge_dirs: dict[int, list] = {}
    for e in np.flatnonzero(sharp):
        for v, d in ((start[e], flat_dir[e]), (end[e], -flat_dir[e])):
            ridge_dirs.setdefault(int(v), []).append(d / _lengths(d))  # leaving v
    for v, dirs in ridge_dirs.items():
        if kind[v] == VERTEX_CORNER:
            continue
        # every convex edge is seen from both its triangles: keep distinct directions
        unique = []
        for d in dirs:
            if not any(float(np.sum(d * u)) > 1.0 - 1.0e-9 for u in unique):
                unique.append(d)
        in_line = len(unique) == 2 and float(np.sum(unique[0] * unique[1])) < -1.0 + 1.0e-9
        kind[v] = VERTEX_RIDGE if in_line else VERTEX_CORNER
    return kind


def vertex_rings(vertex_count: int, triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each vertex's edge neighbours as CSR ``(start (V+1,), neighbours (K,))``, local ids, ascending."""
    edges = np.unique(np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), 1),
                      axis=0)  # fmt: skip
    both = np.concatenate([edges, edges[:, ::-1]])
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    start = np.zeros(vertex_count + 1, np.int64)
    np.add.at(start, both[:, 0] + 1, 1)
    return np.cumsum(start), both[:, 1]


def surface_samples(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """The used vertices, then points on every edge and inside every face, at most ``spacing`` apart, (S, 3).

    ``spacing = longest side / SAMPLE_CELLS``, grown when the faces would get more than ~``SAMPLE_MAX`` points.
    Edge points divide each edge (once, whichever triangles share it) into ``ceil(length / spacing)`` parts;
    face points are the inner points of the barycentric lattice of ``ceil(longest edge / spacing)`` divisions.
    """
    used = np.unique(triangles)
    size = float(np.max(vertices[used].max(axis=0) - vertices[used].min(axis=0)))
    area = 0.5 * float(_triangle_areas(vertices, triangles).sum())
    spacing = max(size / SAMPLE_CELLS, np.sqrt(area / SAMPLE_MAX), 1.0e-12)
    edges = np.unique(np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), 1),
                      axis=0)  # fmt: skip
    points = [vertices[used]]
    a, b = vertices[edges[:, 0]], vertices[edges[:, 1]]
    parts = np.ceil(_lengths(b - a) / spacing).astype(np.int64)
    for e in np.flatnonzero(parts > 1):
        s = np.arange(1, parts[e])[:, None] / parts[e]
        points.append(a[e] + s * (b[e] - a[e]))
    corners = vertices[triangles]  # (T, 3, 3)
    longest = np.max(_lengths(corners - np.roll(corners, -1, axis=1)), axis=1)
    divisions = np.ceil(longest / spacing).astype(np.int64)
    for t in np.flatnonzero(divisions > 2):
        k = divisions[t]
        i, j = np.meshgrid(np.arange(1, k), np.arange(1, k), indexing="ij")
        keep = i + j < k
        u, v = i[keep] / k, j[keep] / k
        points.append(corners[t, 0] + u[:, None] * (corners[t, 1] - corners[t, 0]) + v[:, None] *
                      (corners[t, 2] - corners[t, 0]))  # fmt: skip
    return np.concatenate(points).astype(np.float64)


# ---------------------------------------------------------------------------------------------------------------
# Packing
# ---------------------------------------------------------------------------------------------------------------


def pack_meshes(meshes: list[TriangleMesh], margin: float) -> MeshArrays:
    """Concatenate meshes into :class:`MeshArrays`, with BVHs, neighbours, and fields and samples of solid ones.

    Args:
        meshes: the model's meshes in shape order. margin: the contact margin [m] (the field's band covers it).
    """
    parts = {name: [] for name in MeshArrays._fields}
    vert_count, tri_count, node_count, sdf_count, sample_count = [0], [0], [0], [0], [0]
    ring_count = 0
    for mesh in meshes:
        vertices = np.asarray(mesh.vertices, np.float64)
        triangles = np.asarray(mesh.triangles, np.int64)
        triangles = triangles[_triangle_areas(vertices, triangles) > 0.0]
        normals = _triangle_normals(vertices, triangles)
        bvh = build_bvh(vertices, triangles)
        v0, t0, n0 = sum(vert_count), sum(tri_count), sum(node_count)
        parts["mesh_verts"].append(vertices)
        parts["mesh_tris"].append(triangles + v0)
        parts["mesh_tri_normal"].append(normals)
        edge_normals = edge_neighbour_normals(triangles, normals)
        parts["mesh_tri_edge_normal"].append(edge_normals)
        parts["mesh_vert_kind"].append(vertex_kinds(vertices, triangles, normals, edge_normals))
        ring_start, ring = vertex_rings(len(vertices), triangles)
        parts["mesh_ring_start"].append(ring_start[:-1] + ring_count)
        parts["mesh_ring"].append(ring + v0)
        ring_count += len(ring)
        lower, upper, right, first, count, leaf_tris = bvh
        parts["mesh_node_lower"].append(lower)
        parts["mesh_node_upper"].append(upper)
        parts["mesh_node_right"].append(np.where(right >= 0, right + n0, -1))
        parts["mesh_node_first"].append(first + t0)
        parts["mesh_node_count"].append(count)
        parts["mesh_leaf_tris"].append(leaf_tris + t0)
        closed = is_closed_mesh(triangles) and _has_volume(vertices, triangles)
        parts["mesh_closed"].append([1 if closed else 0])
        values, origin, cell, dims, band, samples = _solid_field(mesh.solid, vertices, triangles, normals, bvh, margin)
        parts["mesh_sdf_values"].append(values.reshape(-1))
        parts["mesh_sdf_origin"].append(origin)
        parts["mesh_sdf_cell"].append([cell])
        parts["mesh_sdf_band"].append([band])
        parts["mesh_sdf_dims"].append(dims)
        parts["mesh_samples"].append(samples)
        vert_count.append(len(vertices))
        tri_count.append(len(triangles))
        node_count.append(len(lower))
        sdf_count.append(values.size)
        sample_count.append(len(samples))

    counts = {"vert": vert_count, "tri": tri_count, "node": node_count, "sdf": sdf_count, "sample": sample_count}
    return _assemble(parts, counts, ring_count)


def _solid_field(solid: bool, vertices, triangles, normals, bvh, margin: float) -> tuple:
    """``(values, origin, cell, dims, band, samples)``: the signed distance field and surface samples of a solid
    (active) mesh, empty ones otherwise."""
    if not solid:
        return np.zeros(0), np.zeros(3), 0.0, np.zeros(3, np.int32), 0.0, np.zeros((0, 3))
    values, origin, cell, dims, band = signed_distance_grid(vertices, triangles, normals, bvh, margin)
    return values, origin, cell, dims, band, surface_samples(vertices, triangles)


def _assemble(parts: dict, counts: dict, ring_count: int) -> MeshArrays:
    """The per-mesh ``parts`` (lists of arrays by :class:`MeshArrays` field) joined, with start offsets from the
    per-mesh ``counts`` (lists starting with 0)."""

    def joined(name, width, dtype):
        """The rows of ``parts[name]`` as one C-contiguous array of trailing shape ``width``."""
        tail = () if width is None else width
        rows = [np.asarray(r, dtype).reshape(-1, *tail) for r in parts[name]]
        return np.ascontiguousarray(np.concatenate(rows)) if rows else np.zeros((0, *tail), dtype)

    return MeshArrays(
        mesh_vert_start=np.cumsum(counts["vert"]).astype(np.int32),
        mesh_verts=joined("mesh_verts", (3,), np.float64),
        mesh_tri_start=np.cumsum(counts["tri"]).astype(np.int32),
        mesh_tris=joined("mesh_tris", (3,), np.int32),
        mesh_tri_normal=joined("mesh_tri_normal", (3,), np.float64),
        mesh_tri_edge_normal=joined("mesh_tri_edge_normal", (3, 3), np.float64),
        mesh_vert_kind=joined("mesh_vert_kind", None, np.int32),
        mesh_ring_start=np.append(joined("mesh_ring_start", None, np.int32), np.int32(ring_count)),
        mesh_ring=joined("mesh_ring", None, np.int32),
        mesh_node_start=np.cumsum(counts["node"]).astype(np.int32),
        mesh_node_lower=joined("mesh_node_lower", (3,), np.float64),
        mesh_node_upper=joined("mesh_node_upper", (3,), np.float64),
        mesh_node_right=joined("mesh_node_right", None, np.int32),
        mesh_node_first=joined("mesh_node_first", None, np.int32),
        mesh_node_count=joined("mesh_node_count", None, np.int32),
        mesh_leaf_tris=joined("mesh_leaf_tris", None, np.int32),
        mesh_closed=joined("mesh_closed", None, np.int32),
        mesh_sdf_start=np.cumsum(counts["sdf"]).astype(np.int64),
        mesh_sdf_values=joined("mesh_sdf_values", None, np.float64),
        mesh_sdf_origin=joined("mesh_sdf_origin", (3,), np.float64),
        mesh_sdf_cell=joined("mesh_sdf_cell", None, np.float64),
        mesh_sdf_band=joined("mesh_sdf_band", None, np.float64),
        mesh_sdf_dims=joined("mesh_sdf_dims", (3,), np.int32),
        mesh_sample_start=np.cumsum(counts["sample"]).astype(np.int32),
        mesh_samples=joined("mesh_samples", (3,), np.float64),
    )


def mesh_bounding_radius(mesh: TriangleMesh) -> float:
    """Largest distance [m] of a used vertex from the shape origin (``shape_params[0]`` of a MESH shape)."""
    used = np.unique(mesh.triangles)
    v = mesh.vertices[used]
    return float(np.sqrt(np.max(np.einsum("ij,ij->i", v, v))))
