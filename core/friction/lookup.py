"""Surface pool and surface lookups: closest point on a render mesh, image sampling, structure directions.

:func:`pack_surfaces` flattens the per-shape :class:`~.surface.SurfaceFriction` inputs into a
:class:`SurfacePool` of plain arrays (the Model stores it); the njit kernels below read those arrays.

Layout (``S`` shapes, ``T`` triangles over all meshes, ``C`` grid cells, ``I`` distinct images):

- per shape: ``surface_*`` scalars and ``shape_tri_start`` / ``shape_cell_start`` CSR offsets (length S+1);
- per triangle (global index, shape-local frame): ``tri_vertices``, ``tri_normal`` (outward), the UV tangent frame
  ``tri_tangent`` / ``tri_bitangent``, ``tri_uv`` and ``tri_structure`` (corner values);
- a uniform grid per mesh over the triangle AABBs: ``grid_origin``, ``grid_cell_size``, ``grid_dims`` and the
  global cell lists ``cell_tri_start`` (C+1) / ``cell_tri`` (global triangle indices). ``grid_dims == 0`` means
  brute force (small meshes);
- images: ``image_pixels`` (all images flattened, float32) with ``image_pixel_start`` (I+1), ``image_width``,
  ``image_height``, ``image_channels``; a shape refers to an image by index (``-1`` = none).

Missing pieces use sentinels: an empty CSR range (no mesh), ``-1`` image indices, zero UV frames (no UV map or
degenerate UVs) and zero corner structure vectors (no attribute).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit_kernel
from .surface import StructureSource, SurfaceFriction, SurfaceFrictionModel

GRID_MIN_TRIANGLES = 32
"""Meshes with fewer triangles are searched by brute force (no grid)."""

GRID_MAX_CELLS_PER_TRIANGLE = 4
"""Cap on the grid size: at most this many cells per triangle (plus 64)."""


class SurfacePool:
    """Flat arrays of all surfaces of a model (one entry per collision shape); see the module docstring."""

    def __init__(self, shape_count: int):
        s = shape_count
        self.shape_count = s
        """Number of shapes S (entries of the list given to :func:`pack_surfaces`)."""
        # --- per-shape scalars -------------------------------------------------------------------
        self.surface_model = np.zeros(s, np.int32)
        """``int(SurfaceFrictionModel)`` per shape, shape (S,), int32 (NONE for shapes without surface data)."""
        self.surface_source = np.zeros(s, np.int32)
        """``int(StructureSource)`` per shape, shape (S,), int32."""
        self.surface_axis = np.zeros((s, 3))
        """Structure axis in the shape frame (AXIS source), shape (S, 3), float64."""
        self.surface_mu = np.zeros(s)
        """Isotropic coefficient mu [dimensionless], shape (S,)."""
        self.surface_mu_t = np.zeros(s)
        """Coefficient along the structure direction [dimensionless], shape (S,)."""
        self.surface_mu_b = np.zeros(s)
        """Coefficient across the structure direction [dimensionless], shape (S,)."""
        self.surface_kappa = np.zeros(s)
        """Friction tensor scale kappa [dimensionless], shape (S,)."""
        self.surface_tensor = np.zeros((s, 2, 2))
        """Friction tensor Q in the structure frame, shape (S, 2, 2)."""
        self.surface_contensou = np.zeros(s)
        """Torsional coefficient [m], shape (S,)."""
        self.surface_normal_strength = np.zeros(s)
        """Normal Map node strength [dimensionless], shape (S,)."""
        self.surface_normal_directx = np.zeros(s, np.int32)
        """1 when the normal map uses the DirectX convention (G points down), shape (S,), int32."""
        self.surface_patch_size = np.zeros(s)
        """Texture friction patch side [m], shape (S,)."""
        self.surface_patch_resolution = np.zeros(s, np.int32)
        """Texture friction samples per patch side, shape (S,), int32."""
        self.surface_normal_image = np.full(s, -1, np.int32)
        """Image index of the normal map (``-1`` none), shape (S,), int32."""
        self.surface_structure_image = np.full(s, -1, np.int32)
        """Image index of the direction image (``-1`` none), shape (S,), int32."""
        self.surface_has_uv = np.zeros(s, np.int32)
        """1 when the mesh has a UV map, shape (S,), int32."""
        self.surface_has_structure = np.zeros(s, np.int32)
        """1 when the mesh has corner structure vectors, shape (S,), int32."""
        # --- meshes ------------------------------------------------------------------------------
        self.shape_tri_start = np.zeros(s + 1, np.int32)
        """CSR offsets into the triangle arrays, shape (S+1,), int32 (empty range = no mesh)."""
        self.tri_vertices = np.zeros((0, 3, 3))
        """Corner positions [m] in the shape frame, shape (T, 3, 3), float64."""
        self.tri_normal = np.zeros((0, 3))
        """Outward unit geometric normal N, shape (T, 3), float64."""
        self.tri_tangent = np.zeros((0, 3))
        """Unit UV tangent T = dP/du orthogonalised against N (zero without UVs), shape (T, 3), float64."""
        self.tri_bitangent = np.zeros((0, 3))
        """Unit bitangent B = sign (N x T), sign = sign((N x T) . dP/dv) (zero without UVs), shape (T, 3)."""
        self.tri_uv = np.zeros((0, 3, 2))
        """Corner UVs, shape (T, 3, 2), float64 (zero without UVs)."""
        self.tri_structure = np.zeros((0, 3, 3))
        """Corner structure vectors in the shape frame, shape (T, 3, 3), float64 (zero without attribute)."""
        # --- grids -------------------------------------------------------------------------------
        self.grid_origin = np.zeros((s, 3))
        """Lower corner [m] of each shape's grid in the shape frame, shape (S, 3)."""
        self.grid_cell_size = np.ones(s)
        """Cubic cell side [m], shape (S,)."""
        self.grid_dims = np.zeros((s, 3), np.int32)
        """Cells per axis (all zero: brute force), shape (S, 3), int32."""
        self.shape_cell_start = np.zeros(s + 1, np.int32)
        """CSR offsets of each shape's cells into ``cell_tri_start``, shape (S+1,), int32."""
        self.cell_tri_start = np.zeros(1, np.int32)
        """CSR offsets of each cell's triangle list into ``cell_tri``, shape (C+1,), int32."""
        self.cell_tri = np.zeros(0, np.int32)
        """Global triangle indices per cell (cell index x + dims_x (y + dims_y z)), shape (M,), int32."""
        # --- images ------------------------------------------------------------------------------
        self.image_pixels = np.zeros(0, np.float32)
        """All images flattened row-major (rows bottom to top), shape (P,), float32."""
        self.image_pixel_start = np.zeros(1, np.int64)
        """Offsets into ``image_pixels``, shape (I+1,), int64."""
        self.image_width = np.zeros(0, np.int32)
        """Image widths [texels], shape (I,), int32."""
        self.image_height = np.zeros(0, np.int32)
        """Image heights [texels], shape (I,), int32."""
        self.image_channels = np.zeros(0, np.int32)
        """Channels per texel (>= 3), shape (I,), int32."""

    # ---------------------------------------------------------------------------------------------
    def lookup_arrays(self) -> tuple:
        """Arguments of :func:`closest_surface_point` before ``shape`` (mesh + grid), in order."""
        return (
            self.shape_tri_start,
            self.tri_vertices,
            self.grid_origin,
            self.grid_cell_size,
            self.grid_dims,
            self.shape_cell_start,
            self.cell_tri_start,
            self.cell_tri,
        )

    def frame_arrays(self) -> tuple:
        """Per-triangle frame arrays (``tri_normal, tri_tangent, tri_bitangent, tri_uv``), in order."""
        return (self.tri_normal, self.tri_tangent, self.tri_bitangent, self.tri_uv)

    def image_arrays(self) -> tuple:
        """Arguments of :func:`sample_image_bilinear` before ``image``, in order."""
        return (self.image_pixels, self.image_pixel_start, self.image_width, self.image_height, self.image_channels)

    def structure_arrays(self) -> tuple:
        """Arguments of :func:`surface_structure_direction` before ``shape``, in order."""
        return (
            *self.lookup_arrays(),
            *self.frame_arrays(),
            self.tri_structure,
            *self.image_arrays(),
            self.surface_source,
            self.surface_axis,
            self.surface_structure_image,
            self.surface_has_uv,
            self.surface_has_structure,
        )

    def normal_map_arrays(self) -> tuple:
        """Per-shape normal-map arguments of the texture kernels, in order."""
        return (
            self.surface_normal_image,
            self.surface_normal_strength,
            self.surface_normal_directx,
            self.surface_has_uv,
        )

    # ---------------------------------------------------------------------------------------------
    def closest_point(self, shape: int, point_local, max_distance: float = np.inf):
        """Closest point of ``shape``'s mesh to ``point_local`` (3,) [m]: ``(triangle, b0, b1, b2, distance)``.

        ``triangle`` is the global triangle index (``-1``: no mesh, or nothing within ``max_distance``).
        """
        p = np.ascontiguousarray(point_local, dtype=np.float64)
        tri, b0, b1, b2, dist = closest_surface_point(*self.lookup_arrays(), int(shape), p, float(max_distance))
        return int(tri), b0, b1, b2, dist

    def uv_at(self, triangle: int, b0: float, b1: float, b2: float) -> np.ndarray:
        """UV (2,) at barycentrics of a global triangle."""
        uv = self.tri_uv[triangle]
        return b0 * uv[0] + b1 * uv[1] + b2 * uv[2]

    def sample_image(self, image: int, u: float, v: float) -> np.ndarray:
        """Bilinear sample (channels,) of image ``image`` at UV ``(u, v)``."""
        out = np.zeros(int(self.image_channels[image]))
        sample_image_bilinear(*self.image_arrays(), int(image), float(u), float(v), out)
        return out

    def structure_direction(self, shape: int, point_local) -> np.ndarray:
        """Structure vector (3,) of ``shape`` at ``point_local`` in the shape frame (zero when unavailable)."""
        out = np.zeros(3)
        p = np.ascontiguousarray(point_local, dtype=np.float64)
        surface_structure_direction(*self.structure_arrays(), int(shape), p, out)
        return out


# -------------------------------------------------------------------------------------------------
# packing (plain Python + a small grid-building kernel)
# -------------------------------------------------------------------------------------------------


def _triangle_frames(corners: np.ndarray, corner_uv: np.ndarray | None):
    """Outward normals and UV tangent frames of triangles ``corners`` (T, 3, 3) (numpy, pack time only)."""
    e1 = corners[:, 1] - corners[:, 0]
    e2 = corners[:, 2] - corners[:, 0]
    normal = np.cross(e1, e2)
    length = np.sqrt(np.sum(normal * normal, axis=1))
    normal = np.where(length[:, None] > 0, normal / np.where(length > 0, length, 1)[:, None], 0.0)
    tangent = np.zeros_like(normal)
    bitangent = np.zeros_like(normal)
    if corner_uv is None:
        return normal, tangent, bitangent
    duv1 = corner_uv[:, 1] - corner_uv[:, 0]
    duv2 = corner_uv[:, 2] - corner_uv[:, 0]
    det = duv1[:, 0] * duv2[:, 1] - duv2[:, 0] * duv1[:, 1]
    ok = (np.abs(det) > 1e-20) & (length > 0)
    safe = np.where(ok, det, 1.0)[:, None]
    # Solve [e1 e2] = [dP/du dP/dv] [duv1 duv2] for the two partial derivatives.
    dpdu = (duv2[:, 1:2] * e1 - duv1[:, 1:2] * e2) / safe
    dpdv = (-duv2[:, 0:1] * e1 + duv1[:, 0:1] * e2) / safe
    t = dpdu - np.sum(dpdu * normal, axis=1)[:, None] * normal
    tl = np.sqrt(np.sum(t * t, axis=1))
    ok &= tl > 1e-20
    t = t / np.where(tl > 0, tl, 1.0)[:, None]
    nxt = np.cross(normal, t)
    sign = np.where(np.sum(nxt * dpdv, axis=1) < 0, -1.0, 1.0)
    tangent[ok] = t[ok]
    bitangent[ok] = (sign[:, None] * nxt)[ok]
    return normal, tangent, bitangent


@njit_kernel
def _fill_triangle_grid(tri_lower, tri_upper, origin, cell_size, dims, tri_offset, cell_tri_start, cell_tri):
    """Two-pass CSR fill of a uniform grid: every triangle goes into every cell its AABB overlaps.

    Call once with ``cell_tri`` of length 0 to count (``cell_tri_start`` gets the counts in ``[1:]``), then with
    the prefix-summed starts and a sized ``cell_tri`` to fill. Triangle indices are ``tri_offset + local index``.
    """
    count_only = cell_tri.shape[0] == 0
    cursor = cell_tri_start[:-1].copy()
    for t in range(tri_lower.shape[0]):
        lo0 = min(max(int(np.floor((tri_lower[t, 0] - origin[0]) / cell_size)), 0), dims[0] - 1)
        lo1 = min(max(int(np.floor((tri_lower[t, 1] - origin[1]) / cell_size)), 0), dims[1] - 1)
        lo2 = min(max(int(np.floor((tri_lower[t, 2] - origin[2]) / cell_size)), 0), dims[2] - 1)
        hi0 = min(max(int(np.floor((tri_upper[t, 0] - origin[0]) / cell_size)), 0), dims[0] - 1)
        hi1 = min(max(int(np.floor((tri_upper[t, 1] - origin[1]) / cell_size)), 0), dims[1] - 1)
        hi2 = min(max(int(np.floor((tri_upper[t, 2] - origin[2]) / cell_size)), 0), dims[2] - 1)
        for k in range(lo2, hi2 + 1):
            for j in range(lo1, hi1 + 1):
                for i in range(lo0, hi0 + 1):
                    c = i + dims[0] * (j + dims[1] * k)
                    if count_only:
                        cell_tri_start[c + 1] += 1
                    else:
                        cell_tri[cursor[c]] = tri_offset + t
                        cursor[c] += 1


def _build_grid(corners: np.ndarray, tri_offset: int):
    """Uniform grid over the triangle AABBs of one mesh: (origin, cell_size, dims, cell_tri_start, cell_tri)."""
    tri_lower = corners.min(axis=1)
    tri_upper = corners.max(axis=1)
    lower = tri_lower.min(axis=0)
    extent = tri_upper.max(axis=0) - lower
    count = corners.shape[0]
    cell = float(np.mean(np.max(tri_upper - tri_lower, axis=1)))
    if not cell > 0:
        cell = max(float(extent.max()) / 16.0, 1e-9)
    while True:
        dims = np.floor(extent / cell).astype(np.int64) + 1
        if int(np.prod(dims)) <= GRID_MAX_CELLS_PER_TRIANGLE * count + 64:
            break
        cell *= 1.25
    dims = dims.astype(np.int32)
    cells = int(np.prod(dims))
    cell_tri_start = np.zeros(cells + 1, np.int32)
    _fill_triangle_grid(tri_lower, tri_upper, lower, cell, dims, tri_offset, cell_tri_start, np.zeros(0, np.int32))
    np.cumsum(cell_tri_start, out=cell_tri_start)
    cell_tri = np.empty(int(cell_tri_start[-1]), np.int32)
    _fill_triangle_grid(tri_lower, tri_upper, lower, cell, dims, tri_offset, cell_tri_start, cell_tri)
    return lower, cell, dims, cell_tri_start, cell_tri


def pack_surfaces(
    surfaces: list[SurfaceFriction | None], *, grid_min_triangles: int = GRID_MIN_TRIANGLES
) -> SurfacePool:
    """Flatten one :class:`SurfaceFriction` (or ``None``) per collision shape into a :class:`SurfacePool`.

    Args:
        surfaces: one entry per shape, in shape order; ``None`` = no surface data (model NONE, no mesh).
        grid_min_triangles: meshes with fewer triangles are searched by brute force.

    Images are deduplicated by identity of their pixel arrays (a texture shared by many shapes is stored once).
    """
    pool = SurfacePool(len(surfaces))
    tri_vertices, tri_uv, tri_structure, normals, tangents, bitangents = [], [], [], [], [], []
    cell_starts, cell_tris = [], []
    images: list[np.ndarray] = []
    image_index: dict[int, int] = {}
    tri_total = 0
    cell_total = 0
    entry_total = 0

    def add_image(image) -> int:
        if image is None:
            return -1
        pixels = np.asarray(image.pixels)
        key = id(image.pixels)
        if key not in image_index:
            if pixels.ndim != 3 or pixels.shape[2] < 3:
                raise ValueError(f"image {image.name!r}: pixels must have shape (height, width, >=3)")
            image_index[key] = len(images)
            images.append(np.ascontiguousarray(pixels, dtype=np.float32))
        return image_index[key]

    for s, surface in enumerate(surfaces):
        pool.shape_tri_start[s] = tri_total
        pool.shape_cell_start[s] = cell_total
        if surface is None:
            continue
        pool.surface_model[s] = int(surface.model)
        pool.surface_source[s] = int(surface.structure_source)
        pool.surface_axis[s] = np.asarray(surface.structure_axis, float).reshape(3)
        pool.surface_mu[s] = surface.mu
        pool.surface_mu_t[s] = surface.mu_t
        pool.surface_mu_b[s] = surface.mu_b
        pool.surface_kappa[s] = surface.kappa
        pool.surface_tensor[s] = np.asarray(surface.tensor, float).reshape(2, 2)
        pool.surface_contensou[s] = surface.contensou
        pool.surface_normal_strength[s] = surface.normal_map_strength
        pool.surface_normal_directx[s] = int(bool(surface.normal_map_directx))
        pool.surface_patch_size[s] = surface.patch_size
        pool.surface_patch_resolution[s] = surface.patch_resolution
        pool.surface_normal_image[s] = add_image(surface.normal_map)
        pool.surface_structure_image[s] = add_image(surface.structure_image)
        mesh = surface.mesh
        if mesh is None or len(mesh.triangles) == 0:
            continue
        vertices = np.asarray(mesh.vertices, float)
        corners = vertices[np.asarray(mesh.triangles, np.int64)]
        count = corners.shape[0]
        uv = None if mesh.corner_uv is None else np.asarray(mesh.corner_uv, float).reshape(count, 3, 2)
        normal, tangent, bitangent = _triangle_frames(corners, uv)
        tri_vertices.append(corners)
        normals.append(normal)
        tangents.append(tangent)
        bitangents.append(bitangent)
        tri_uv.append(np.zeros((count, 3, 2)) if uv is None else uv)
        pool.surface_has_uv[s] = int(uv is not None)
        if mesh.corner_structure is not None:
            tri_structure.append(np.asarray(mesh.corner_structure, float).reshape(count, 3, 3))
            pool.surface_has_structure[s] = 1
        else:
            tri_structure.append(np.zeros((count, 3, 3)))
        if count >= grid_min_triangles:
            origin, cell, dims, starts, entries = _build_grid(corners, tri_total)
            pool.grid_origin[s] = origin
            pool.grid_cell_size[s] = cell
            pool.grid_dims[s] = dims
            cell_starts.append(starts[1:] + entry_total)
            cell_tris.append(entries)
            cell_total += len(starts) - 1
            entry_total += len(entries)
        tri_total += count
    pool.shape_tri_start[len(surfaces)] = tri_total
    pool.shape_cell_start[len(surfaces)] = cell_total
    if tri_vertices:
        pool.tri_vertices = np.ascontiguousarray(np.concatenate(tri_vertices))
        pool.tri_normal = np.ascontiguousarray(np.concatenate(normals))
        pool.tri_tangent = np.ascontiguousarray(np.concatenate(tangents))
        pool.tri_bitangent = np.ascontiguousarray(np.concatenate(bitangents))
        pool.tri_uv = np.ascontiguousarray(np.concatenate(tri_uv))
        pool.tri_structure = np.ascontiguousarray(np.concatenate(tri_structure))
    if cell_starts:
        pool.cell_tri_start = np.concatenate([np.zeros(1, np.int32), *cell_starts]).astype(np.int32)
        pool.cell_tri = np.concatenate(cell_tris).astype(np.int32)
    if images:
        sizes = [img.size for img in images]
        pool.image_pixel_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        pool.image_pixels = np.concatenate([img.ravel() for img in images]).astype(np.float32)
        pool.image_height = np.array([img.shape[0] for img in images], np.int32)
        pool.image_width = np.array([img.shape[1] for img in images], np.int32)
        pool.image_channels = np.array([img.shape[2] for img in images], np.int32)
    return pool


# -------------------------------------------------------------------------------------------------
# kernels
# -------------------------------------------------------------------------------------------------


@njit_kernel
def closest_point_on_triangle(p, tri):
    """Closest point of triangle ``tri`` (3, 3) to ``p`` (3,): barycentrics ``(b0, b1, b2)`` and *squared* distance.

    Ericson, Real-Time Collision Detection (2005) Sec. 5.1.5: Voronoi-region tests, no allocation.
    """
    ax, ay, az = tri[0, 0], tri[0, 1], tri[0, 2]
    abx, aby, abz = tri[1, 0] - ax, tri[1, 1] - ay, tri[1, 2] - az
    acx, acy, acz = tri[2, 0] - ax, tri[2, 1] - ay, tri[2, 2] - az
    apx, apy, apz = p[0] - ax, p[1] - ay, p[2] - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        b0, b1, b2 = 1.0, 0.0, 0.0
    else:
        bpx, bpy, bpz = p[0] - tri[1, 0], p[1] - tri[1, 1], p[2] - tri[1, 2]
        d3 = abx * bpx + aby * bpy + abz * bpz
        d4 = acx * bpx + acy * bpy + acz * bpz
        cpx, cpy, cpz = p[0] - tri[2, 0], p[1] - tri[2, 1], p[2] - tri[2, 2]
        d5 = abx * cpx + aby * cpy + abz * cpz
        d6 = acx * cpx + acy * cpy + acz * cpz
        vc = d1 * d4 - d3 * d2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        if d3 >= 0.0 and d4 <= d3:
            b0, b1, b2 = 0.0, 1.0, 0.0
        elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
            v = d1 / (d1 - d3)
            b0, b1, b2 = 1.0 - v, v, 0.0
        elif d6 >= 0.0 and d5 <= d6:
            b0, b1, b2 = 0.0, 0.0, 1.0
        elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
            w = d2 / (d2 - d6)
            b0, b1, b2 = 1.0 - w, 0.0, w
        elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
            w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
            b0, b1, b2 = 0.0, 1.0 - w, w
        else:
            denom = va + vb + vc
            v = vb / denom
            w = vc / denom
            b0, b1, b2 = 1.0 - v - w, v, w
    dist2 = 0.0
    for k in range(3):
        q = b0 * tri[0, k] + b1 * tri[1, k] + b2 * tri[2, k] - p[k]
        dist2 += q * q
    return b0, b1, b2, dist2


@njit_kernel
def closest_surface_point(
    shape_tri_start,
    tri_vertices,
    grid_origin,
    grid_cell_size,
    grid_dims,
    shape_cell_start,
    cell_tri_start,
    cell_tri,
    shape,
    point_local,
    max_distance,
):
    """Closest point of a shape's render mesh to a point in the shape frame.

    Args:
        shape_tri_start .. cell_tri: :meth:`SurfacePool.lookup_arrays`.
        shape: shape index (``-1`` allowed: no mesh).
        point_local: query point [m] in the shape frame, shape (3,).
        max_distance: search radius [m]; ``np.inf`` for an unbounded search.

    Returns:
        ``(triangle, b0, b1, b2, distance)``: global triangle index (``-1`` when the shape has no mesh or nothing
        lies within ``max_distance``), barycentrics of the closest point and its distance [m].

    The grid search visits shells of cells at Chebyshev index distance r = 0, 1, ... around the query's (clamped)
    cell; every cell of shell r is at least ``(r - 1) h`` away from the query (also for queries outside the
    grid, since clamping to the grid box never increases a distance to a cell), so the search stops once that
    bound exceeds the best distance found. Triangles are registered in every cell their AABB touches, so the
    cell holding the true closest point is always visited: the result is exact.
    """
    best_tri = -1
    best_b0 = 0.0
    best_b1 = 0.0
    best_b2 = 0.0
    if shape < 0:
        return best_tri, best_b0, best_b1, best_b2, np.inf
    best2 = max_distance * max_distance
    t_begin = shape_tri_start[shape]
    t_end = shape_tri_start[shape + 1]
    if t_begin == t_end:
        return best_tri, best_b0, best_b1, best_b2, np.inf
    if grid_dims[shape, 0] == 0:
        for t in range(t_begin, t_end):
            b0, b1, b2, d2 = closest_point_on_triangle(point_local, tri_vertices[t])
            if d2 < best2 or (best_tri < 0 and d2 <= best2):
                best2, best_tri, best_b0, best_b1, best_b2 = d2, t, b0, b1, b2
        return best_tri, best_b0, best_b1, best_b2, np.sqrt(best2) if best_tri >= 0 else np.inf
    h = grid_cell_size[shape]
    n0 = grid_dims[shape, 0]
    n1 = grid_dims[shape, 1]
    n2 = grid_dims[shape, 2]
    o0 = grid_origin[shape, 0]
    o1 = grid_origin[shape, 1]
    o2 = grid_origin[shape, 2]
    c0 = min(max(int(np.floor((point_local[0] - o0) / h)), 0), n0 - 1)
    c1 = min(max(int(np.floor((point_local[1] - o1) / h)), 0), n1 - 1)
    c2 = min(max(int(np.floor((point_local[2] - o2) / h)), 0), n2 - 1)
    r_max = max(max(c0, n0 - 1 - c0), max(max(c1, n1 - 1 - c1), max(c2, n2 - 1 - c2)))
    cell_base = shape_cell_start[shape]
    for r in range(r_max + 1):
        bound = (r - 1) * h
        if bound > 0.0 and bound * bound > best2:
            break
        for k in range(max(c2 - r, 0), min(c2 + r, n2 - 1) + 1):
            for j in range(max(c1 - r, 0), min(c1 + r, n1 - 1) + 1):
                for i in range(max(c0 - r, 0), min(c0 + r, n0 - 1) + 1):
                    if max(abs(i - c0), max(abs(j - c1), abs(k - c2))) != r:
                        continue
                    # point-to-cell-box squared distance: skip cells that cannot improve
                    e0 = max(max(o0 + i * h - point_local[0], point_local[0] - (o0 + (i + 1) * h)), 0.0)
                    e1 = max(max(o1 + j * h - point_local[1], point_local[1] - (o1 + (j + 1) * h)), 0.0)
                    e2 = max(max(o2 + k * h - point_local[2], point_local[2] - (o2 + (k + 1) * h)), 0.0)
                    if e0 * e0 + e1 * e1 + e2 * e2 > best2:
                        continue
                    c = cell_base + i + n0 * (j + n1 * k)
                    for e in range(cell_tri_start[c], cell_tri_start[c + 1]):
                        t = cell_tri[e]
                        b0, b1, b2, d2 = closest_point_on_triangle(point_local, tri_vertices[t])
                        if d2 < best2 or (best_tri < 0 and d2 <= best2) or (d2 == best2 and t < best_tri):
                            best2, best_tri, best_b0, best_b1, best_b2 = d2, t, b0, b1, b2
    return best_tri, best_b0, best_b1, best_b2, np.sqrt(best2) if best_tri >= 0 else np.inf


@njit_kernel
def sample_image_bilinear(image_pixels, image_pixel_start, image_width, image_height, image_channels, image, u, v, out):
    """Bilinear, repeat-addressed sample of image ``image`` at UV ``(u, v)`` into ``out`` (>= 1,).

    Texel (row i, column j) covers ``[j, j+1]/width x [i, i+1]/height`` with its centre at
    ``((j + 0.5)/width, (i + 0.5)/height)``; row 0 is the bottom row (v = 0), as in Blender's ``pixels``.
    Channels beyond the image's are set to 0. ``image < 0`` writes zeros.
    """
    for c in range(out.shape[0]):
        out[c] = 0.0
    if image < 0:
        return
    w = image_width[image]
    hgt = image_height[image]
    ch = image_channels[image]
    base = image_pixel_start[image]
    x = u * w - 0.5
    y = v * hgt - 0.5
    fx0 = np.floor(x)
    fy0 = np.floor(y)
    ax = x - fx0
    ay = y - fy0
    j0 = int(fx0) % w
    i0 = int(fy0) % hgt
    j1 = (j0 + 1) % w
    i1 = (i0 + 1) % hgt
    w00 = (1.0 - ax) * (1.0 - ay)
    w01 = ax * (1.0 - ay)
    w10 = (1.0 - ax) * ay
    w11 = ax * ay
    for c in range(min(out.shape[0], ch)):
        out[c] = (
            w00 * image_pixels[base + (i0 * w + j0) * ch + c]
            + w01 * image_pixels[base + (i0 * w + j1) * ch + c]
            + w10 * image_pixels[base + (i1 * w + j0) * ch + c]
            + w11 * image_pixels[base + (i1 * w + j1) * ch + c]
        )


@njit_kernel
def surface_structure_direction(
    shape_tri_start,
    tri_vertices,
    grid_origin,
    grid_cell_size,
    grid_dims,
    shape_cell_start,
    cell_tri_start,
    cell_tri,
    tri_normal,
    tri_tangent,
    tri_bitangent,
    tri_uv,
    tri_structure,
    image_pixels,
    image_pixel_start,
    image_width,
    image_height,
    image_channels,
    surface_source,
    surface_axis,
    surface_structure_image,
    surface_has_uv,
    surface_has_structure,
    shape,
    point_local,
    out,
):
    """Structure vector of ``shape`` at ``point_local`` (3,) [m], written to ``out`` (3,) in the shape frame.

    Sources (``surface_source``, course E.1.1 "stored in a texture or generated procedurally"):

    - ATTRIBUTE: barycentric interpolation of the closest triangle's corner vectors;
    - IMAGE: direction image at the closest point's UV, ``x T + y B`` with ``(x, y) = 2 rgb - 1``;
    - UV_TANGENT: the closest triangle's unit tangent T (direction of increasing U);
    - AXIS: the shape's fixed axis.

    The vector is neither normalised nor projected (the friction generator projects onto the contact plane).
    ``out`` is zero when the source is NONE or its data is missing (no mesh / UVs / attribute / image).
    """
    out[0] = 0.0
    out[1] = 0.0
    out[2] = 0.0
    if shape < 0:
        return
    source = surface_source[shape]
    if source == 4:  # AXIS
        for k in range(3):
            out[k] = surface_axis[shape, k]
        return
    if source < 1 or source > 3:
        return
    if source == 1 and surface_has_structure[shape] == 0:
        return
    if source == 2 and (surface_has_uv[shape] == 0 or surface_structure_image[shape] < 0):
        return
    if source == 3 and surface_has_uv[shape] == 0:
        return
    tri, b0, b1, b2, _ = closest_surface_point(
        shape_tri_start,
        tri_vertices,
        grid_origin,
        grid_cell_size,
        grid_dims,
        shape_cell_start,
        cell_tri_start,
        cell_tri,
        shape,
        point_local,
        np.inf,
    )
    if tri < 0:
        return
    if source == 1:  # ATTRIBUTE
        for k in range(3):
            out[k] = b0 * tri_structure[tri, 0, k] + b1 * tri_structure[tri, 1, k] + b2 * tri_structure[tri, 2, k]
    elif source == 3:  # UV_TANGENT
        for k in range(3):
            out[k] = tri_tangent[tri, k]
    else:  # IMAGE
        u = b0 * tri_uv[tri, 0, 0] + b1 * tri_uv[tri, 1, 0] + b2 * tri_uv[tri, 2, 0]
        v = b0 * tri_uv[tri, 0, 1] + b1 * tri_uv[tri, 1, 1] + b2 * tri_uv[tri, 2, 1]
        # the three colour channels land in out, then get decoded in place
        sample_image_bilinear(
            image_pixels,
            image_pixel_start,
            image_width,
            image_height,
            image_channels,
            surface_structure_image[shape],
            u,
            v,
            out,
        )
        x = 2.0 * out[0] - 1.0
        y = 2.0 * out[1] - 1.0
        for k in range(3):
            out[k] = x * tri_tangent[tri, k] + y * tri_bitangent[tri, k]


__all__ = [
    "GRID_MIN_TRIANGLES",
    "StructureSource",
    "SurfaceFrictionModel",
    "SurfacePool",
    "closest_point_on_triangle",
    "closest_surface_point",
    "pack_surfaces",
    "sample_image_bilinear",
    "surface_structure_direction",
]
