"""Surface arrays and surface lookups: closest point on a render mesh, image sampling, structure directions.

:func:`pack_surfaces` flattens the per-shape :class:`~.surface.SurfaceFriction` inputs into one
:class:`SurfaceArrays` (a ``NamedTuple`` of plain numpy arrays; the Model stores it). The njit kernels below and in
:mod:`.texture` / :mod:`.generate` take that one structure as their first argument (Numba types a namedtuple of
arrays as one value with attribute access, so every kernel is compiled for a single struct type).

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

from typing import NamedTuple

import numpy as np

from ..jit import njit_kernel
from .surface import StructureSource, SurfaceFriction, SurfaceFrictionModel

GRID_MIN_TRIANGLES = 32
"""Meshes with fewer triangles are searched by brute force (no grid)."""

GRID_MAX_CELLS_PER_TRIANGLE = 4
"""Cap on the grid size: at most this many cells per triangle (plus 64)."""


class SurfaceArrays(NamedTuple):
    """Flat arrays of all surfaces of a model (one entry per collision shape); see the module docstring.

    Built by :func:`pack_surfaces`, passed as one argument to the lookup, texture and generator kernels.
    """

    # --- per-shape scalars -----------------------------------------------------------------------
    surface_model: np.ndarray
    """``int(SurfaceFrictionModel)`` per shape, shape (S,), int32 (NONE for shapes without surface data)."""
    surface_source: np.ndarray
    """``int(StructureSource)`` per shape, shape (S,), int32."""
    surface_axis: np.ndarray
    """Structure axis in the shape frame (AXIS source), shape (S, 3), float64."""
    surface_mu: np.ndarray
    """Isotropic coefficient mu [dimensionless], shape (S,), float64."""
    surface_mu_t: np.ndarray
    """Coefficient along the structure direction [dimensionless], shape (S,), float64."""
    surface_mu_b: np.ndarray
    """Coefficient across the structure direction [dimensionless], shape (S,), float64."""
    surface_kappa: np.ndarray
    """Friction tensor scale kappa [dimensionless], shape (S,), float64."""
    surface_tensor: np.ndarray
    """Friction tensor Q in the structure frame [dimensionless], shape (S, 2, 2), float64."""
    surface_contensou: np.ndarray
    """Torsional coefficient [m], shape (S,), float64."""
    surface_normal_strength: np.ndarray
    """Normal Map node strength [dimensionless], shape (S,), float64."""
    surface_normal_directx: np.ndarray
    """1 when the normal map uses the DirectX convention (G points down), shape (S,), int32."""
    surface_patch_size: np.ndarray
    """Texture friction patch side [m], shape (S,), float64."""
    surface_patch_resolution: np.ndarray
    """Texture friction samples per patch side, shape (S,), int32."""
    surface_normal_image: np.ndarray
    """Image index of the normal map (``-1`` none), shape (S,), int32."""
    surface_structure_image: np.ndarray
    """Image index of the direction image (``-1`` none), shape (S,), int32."""
    surface_has_uv: np.ndarray
    """1 when the mesh has a UV map, shape (S,), int32."""
    surface_has_structure: np.ndarray
    """1 when the mesh has corner structure vectors, shape (S,), int32."""
    # --- meshes ----------------------------------------------------------------------------------
    shape_tri_start: np.ndarray
    """CSR offsets into the triangle arrays, shape (S+1,), int32 (empty range = no mesh)."""
    tri_vertices: np.ndarray
    """Corner positions [m] in the shape frame, shape (T, 3, 3), float64."""
    tri_normal: np.ndarray
    """Outward unit geometric normal N, shape (T, 3), float64."""
    tri_tangent: np.ndarray
    """Unit UV tangent T = dP/du orthogonalised against N (zero without UVs), shape (T, 3), float64."""
    tri_bitangent: np.ndarray
    """Unit bitangent B = sign (N x T), sign = sign((N x T) . dP/dv) (zero without UVs), shape (T, 3), float64."""
    tri_uv: np.ndarray
    """Corner UVs [texture units], shape (T, 3, 2), float64 (zero without UVs)."""
    tri_structure: np.ndarray
    """Corner structure vectors in the shape frame, shape (T, 3, 3), float64 (zero without attribute)."""
    # --- grids -----------------------------------------------------------------------------------
    grid_origin: np.ndarray
    """Lower corner [m] of each shape's grid in the shape frame, shape (S, 3), float64."""
    grid_cell_size: np.ndarray
    """Cubic cell side [m], shape (S,), float64."""
    grid_dims: np.ndarray
    """Cells per axis (all zero: brute force), shape (S, 3), int32."""
    shape_cell_start: np.ndarray
    """CSR offsets of each shape's cells into ``cell_tri_start``, shape (S+1,), int32."""
    cell_tri_start: np.ndarray
    """CSR offsets of each cell's triangle list into ``cell_tri``, shape (C+1,), int32."""
    cell_tri: np.ndarray
    """Global triangle indices per cell (cell index x + dims_x (y + dims_y z)), shape (M,), int32."""
    # --- images ----------------------------------------------------------------------------------
    image_pixels: np.ndarray
    """All images flattened row-major (rows bottom to top), values as stored, shape (P,), float32."""
    image_pixel_start: np.ndarray
    """Offsets into ``image_pixels``, shape (I+1,), int64."""
    image_width: np.ndarray
    """Image widths [texels], shape (I,), int32."""
    image_height: np.ndarray
    """Image heights [texels], shape (I,), int32."""
    image_channels: np.ndarray
    """Channels per texel (>= 3), shape (I,), int32."""

    # ---------------------------------------------------------------------------------------------
    @property
    def shape_count(self) -> int:
        """Number of shapes S (entries of the list given to :func:`pack_surfaces`)."""
        return len(self.surface_model)

    def closest_point(self, shape: int, point_local, max_distance: float = np.inf):
        """Closest point of ``shape``'s mesh to ``point_local`` (3,) [m]: ``(triangle, b0, b1, b2, distance)``.

        ``triangle`` is the global triangle index (``-1``: no mesh, or nothing within ``max_distance``).
        """
        p = np.ascontiguousarray(point_local, dtype=np.float64)
        tri, b0, b1, b2, dist = closest_surface_point(self, np.int32(shape), p, float(max_distance))
        return int(tri), b0, b1, b2, dist

    def uv_at(self, triangle: int, b0: float, b1: float, b2: float) -> np.ndarray:
        """UV (2,) at barycentrics of a global triangle."""
        uv = self.tri_uv[triangle]
        return b0 * uv[0] + b1 * uv[1] + b2 * uv[2]

    def sample_image(self, image: int, u: float, v: float) -> np.ndarray:
        """Bilinear sample (channels,) of image ``image`` at UV ``(u, v)``."""
        out = np.zeros(int(self.image_channels[image]))
        sample_image_bilinear(self, np.int32(image), float(u), float(v), out)
        return out

    def structure_direction(self, shape: int, point_local) -> np.ndarray:
        """Structure vector (3,) of ``shape`` at ``point_local`` in the shape frame (zero when unavailable)."""
        out = np.zeros(3)
        p = np.ascontiguousarray(point_local, dtype=np.float64)
        surface_structure_direction(self, np.int32(shape), p, out)
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


def _shape_fields(shape_count: int) -> dict:
    """Per-shape arrays of :class:`SurfaceArrays` at their "no surface data" defaults (CSR offsets included)."""
    s = shape_count
    return {
        "surface_model": np.zeros(s, np.int32),
        "surface_source": np.zeros(s, np.int32),
        "surface_axis": np.zeros((s, 3)),
        "surface_mu": np.zeros(s),
        "surface_mu_t": np.zeros(s),
        "surface_mu_b": np.zeros(s),
        "surface_kappa": np.zeros(s),
        "surface_tensor": np.zeros((s, 2, 2)),
        "surface_contensou": np.zeros(s),
        "surface_normal_strength": np.zeros(s),
        "surface_normal_directx": np.zeros(s, np.int32),
        "surface_patch_size": np.zeros(s),
        "surface_patch_resolution": np.zeros(s, np.int32),
        "surface_normal_image": np.full(s, -1, np.int32),
        "surface_structure_image": np.full(s, -1, np.int32),
        "surface_has_uv": np.zeros(s, np.int32),
        "surface_has_structure": np.zeros(s, np.int32),
        "shape_tri_start": np.zeros(s + 1, np.int32),
        "grid_origin": np.zeros((s, 3)),
        "grid_cell_size": np.ones(s),
        "grid_dims": np.zeros((s, 3), np.int32),
        "shape_cell_start": np.zeros(s + 1, np.int32),
    }


class _ImageTable:
    """Images deduplicated by identity of their pixel arrays (a texture shared by many shapes is stored once)."""

    def __init__(self):
        self.images: list[np.ndarray] = []
        self.index: dict[int, int] = {}

    def add(self, image) -> int:
        """Index of ``image`` (a :class:`~.surface.TextureImage` or None: ``-1``), adding it when new."""
        if image is None:
            return -1
        pixels = np.asarray(image.pixels)
        key = id(image.pixels)
        if key not in self.index:
            if pixels.ndim != 3 or pixels.shape[2] < 3:
                raise ValueError(f"image {image.name!r}: pixels must have shape (height, width, >=3)")
            self.index[key] = len(self.images)
            self.images.append(np.ascontiguousarray(pixels, dtype=np.float32))
        return self.index[key]

    def fields(self) -> dict:
        """The ``image_*`` arrays of :class:`SurfaceArrays`."""
        images = self.images
        if not images:
            return {
                "image_pixels": np.zeros(0, np.float32),
                "image_pixel_start": np.zeros(1, np.int64),
                "image_width": np.zeros(0, np.int32),
                "image_height": np.zeros(0, np.int32),
                "image_channels": np.zeros(0, np.int32),
            }
        sizes = [img.size for img in images]
        return {
            "image_pixels": np.concatenate([img.ravel() for img in images]).astype(np.float32),
            "image_pixel_start": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            "image_width": np.array([img.shape[1] for img in images], np.int32),
            "image_height": np.array([img.shape[0] for img in images], np.int32),
            "image_channels": np.array([img.shape[2] for img in images], np.int32),
        }


def _pack_shape_scalars(fields: dict, s: int, surface: SurfaceFriction, images: _ImageTable) -> None:
    """Write the per-shape scalars of ``surface`` into entry ``s`` of the per-shape arrays."""
    fields["surface_model"][s] = int(surface.model)
    fields["surface_source"][s] = int(surface.structure_source)
    fields["surface_axis"][s] = np.asarray(surface.structure_axis, float).reshape(3)
    fields["surface_mu"][s] = surface.mu
    fields["surface_mu_t"][s] = surface.mu_t
    fields["surface_mu_b"][s] = surface.mu_b
    fields["surface_kappa"][s] = surface.kappa
    fields["surface_tensor"][s] = np.asarray(surface.tensor, float).reshape(2, 2)
    fields["surface_contensou"][s] = surface.contensou
    fields["surface_normal_strength"][s] = surface.normal_map_strength
    fields["surface_normal_directx"][s] = int(bool(surface.normal_map_directx))
    fields["surface_patch_size"][s] = surface.patch_size
    fields["surface_patch_resolution"][s] = surface.patch_resolution
    fields["surface_normal_image"][s] = images.add(surface.normal_map)
    fields["surface_structure_image"][s] = images.add(surface.structure_image)


class _MeshTable:
    """Accumulates the triangles and grids of the meshes, shape by shape, with running CSR totals."""

    def __init__(self, grid_min_triangles: int):
        self.grid_min_triangles = grid_min_triangles
        names = ("tri_vertices", "tri_normal", "tri_tangent", "tri_bitangent", "tri_uv", "tri_structure")
        self.per_triangle: dict[str, list[np.ndarray]] = {name: [] for name in names}
        self.cell_starts: list[np.ndarray] = []
        self.cell_tris: list[np.ndarray] = []
        self.tri_total = 0
        self.cell_total = 0
        self.entry_total = 0

    def add(self, fields: dict, s: int, mesh) -> None:
        """Append the triangles of shape ``s`` (frames, UVs, structure, grid) and set its ``surface_has_*`` flags."""
        vertices = np.asarray(mesh.vertices, float)
        corners = vertices[np.asarray(mesh.triangles, np.int64)]
        count = corners.shape[0]
        uv = None if mesh.corner_uv is None else np.asarray(mesh.corner_uv, float).reshape(count, 3, 2)
        normal, tangent, bitangent = _triangle_frames(corners, uv)
        lists = self.per_triangle
        lists["tri_vertices"].append(corners)
        lists["tri_normal"].append(normal)
        lists["tri_tangent"].append(tangent)
        lists["tri_bitangent"].append(bitangent)
        lists["tri_uv"].append(np.zeros((count, 3, 2)) if uv is None else uv)
        fields["surface_has_uv"][s] = int(uv is not None)
        if mesh.corner_structure is not None:
            lists["tri_structure"].append(np.asarray(mesh.corner_structure, float).reshape(count, 3, 3))
            fields["surface_has_structure"][s] = 1
        else:
            lists["tri_structure"].append(np.zeros((count, 3, 3)))
        if count >= self.grid_min_triangles:
            origin, cell, dims, starts, entries = _build_grid(corners, self.tri_total)
            fields["grid_origin"][s] = origin
            fields["grid_cell_size"][s] = cell
            fields["grid_dims"][s] = dims
            self.cell_starts.append(starts[1:] + self.entry_total)
            self.cell_tris.append(entries)
            self.cell_total += len(starts) - 1
            self.entry_total += len(entries)
        self.tri_total += count

    def fields(self) -> dict:
        """The per-triangle and per-cell arrays of :class:`SurfaceArrays` (empty when there is no mesh)."""
        lists = self.per_triangle
        if lists["tri_vertices"]:
            out = {name: np.ascontiguousarray(np.concatenate(parts)) for name, parts in lists.items()}
        else:
            out = {
                "tri_vertices": np.zeros((0, 3, 3)),
                "tri_normal": np.zeros((0, 3)),
                "tri_tangent": np.zeros((0, 3)),
                "tri_bitangent": np.zeros((0, 3)),
                "tri_uv": np.zeros((0, 3, 2)),
                "tri_structure": np.zeros((0, 3, 3)),
            }
        if self.cell_starts:
            out["cell_tri_start"] = np.concatenate([np.zeros(1, np.int32), *self.cell_starts]).astype(np.int32)
            out["cell_tri"] = np.concatenate(self.cell_tris).astype(np.int32)
        else:
            out["cell_tri_start"] = np.zeros(1, np.int32)
            out["cell_tri"] = np.zeros(0, np.int32)
        return out


def pack_surfaces(
    surfaces: list[SurfaceFriction | None], *, grid_min_triangles: int = GRID_MIN_TRIANGLES
) -> SurfaceArrays:
    """Flatten one :class:`SurfaceFriction` (or ``None``) per collision shape into a :class:`SurfaceArrays`.

    Args:
        surfaces: one entry per shape, in shape order; ``None`` = no surface data (model NONE, no mesh).
        grid_min_triangles: meshes with fewer triangles are searched by brute force.

    Images are deduplicated by identity of their pixel arrays (a texture shared by many shapes is stored once).
    """
    fields = _shape_fields(len(surfaces))
    images = _ImageTable()
    meshes = _MeshTable(grid_min_triangles)
    for s, surface in enumerate(surfaces):
        fields["shape_tri_start"][s] = meshes.tri_total
        fields["shape_cell_start"][s] = meshes.cell_total
        if surface is None:
            continue
        _pack_shape_scalars(fields, s, surface, images)
        mesh = surface.mesh
        if mesh is not None and len(mesh.triangles) != 0:
            meshes.add(fields, s, mesh)
    fields["shape_tri_start"][len(surfaces)] = meshes.tri_total
    fields["shape_cell_start"][len(surfaces)] = meshes.cell_total
    return SurfaceArrays(**fields, **meshes.fields(), **images.fields())


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
def _closest_brute_force(surfaces, t_begin, t_end, point_local, best2):
    """Closest of triangles ``t_begin:t_end`` within squared distance ``best2``: ``(tri, b0, b1, b2, dist2)``.

    Ties keep the first triangle; ``tri = -1`` when none lies within the bound.
    """
    best_tri = -1
    best_b0 = 0.0
    best_b1 = 0.0
    best_b2 = 0.0
    tri_vertices = surfaces.tri_vertices
    for t in range(t_begin, t_end):
        b0, b1, b2, d2 = closest_point_on_triangle(point_local, tri_vertices[t])
        if d2 < best2 or (best_tri < 0 and d2 <= best2):
            best2, best_tri, best_b0, best_b1, best_b2 = d2, t, b0, b1, b2
    return best_tri, best_b0, best_b1, best_b2, best2


@njit_kernel
def _closest_in_grid(surfaces, shape, point_local, best2):
    """Grid search of :func:`closest_surface_point` (shells of cells around the query): as :func:`_closest_brute_force`.

    Ties keep the lowest global triangle index, so the result does not depend on the visiting order.
    """
    best_tri = -1
    best_b0 = 0.0
    best_b1 = 0.0
    best_b2 = 0.0
    h = surfaces.grid_cell_size[shape]
    n0 = surfaces.grid_dims[shape, 0]
    n1 = surfaces.grid_dims[shape, 1]
    n2 = surfaces.grid_dims[shape, 2]
    o0 = surfaces.grid_origin[shape, 0]
    o1 = surfaces.grid_origin[shape, 1]
    o2 = surfaces.grid_origin[shape, 2]
    c0 = min(max(int(np.floor((point_local[0] - o0) / h)), 0), n0 - 1)
    c1 = min(max(int(np.floor((point_local[1] - o1) / h)), 0), n1 - 1)
    c2 = min(max(int(np.floor((point_local[2] - o2) / h)), 0), n2 - 1)
    r_max = max(max(c0, n0 - 1 - c0), max(max(c1, n1 - 1 - c1), max(c2, n2 - 1 - c2)))
    cell_base = surfaces.shape_cell_start[shape]
    # the inner loop's arrays as locals: reading a struct field inside the loop would take a reference each time
    cell_tri_start = surfaces.cell_tri_start
    cell_tri = surfaces.cell_tri
    tri_vertices = surfaces.tri_vertices
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
    return best_tri, best_b0, best_b1, best_b2, best2


@njit_kernel
def closest_surface_point(surfaces, shape, point_local, max_distance):
    """Closest point of a shape's render mesh to a point in the shape frame.

    Args:
        surfaces: :class:`SurfaceArrays` (mesh and grid arrays).
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
    # One exit only: with several returns Numba keeps a reference-count update per struct field on every call
    # (measured: +70 % per query); with one its pruning pass removes them.
    tri, b0, b1, b2, best2 = -1, 0.0, 0.0, 0.0, np.inf
    if shape >= 0 and surfaces.shape_tri_start[shape] != surfaces.shape_tri_start[shape + 1]:
        best2 = max_distance * max_distance
        if surfaces.grid_dims[shape, 0] == 0:
            t_begin = surfaces.shape_tri_start[shape]
            t_end = surfaces.shape_tri_start[shape + 1]
            tri, b0, b1, b2, best2 = _closest_brute_force(surfaces, t_begin, t_end, point_local, best2)
        else:
            tri, b0, b1, b2, best2 = _closest_in_grid(surfaces, shape, point_local, best2)
    return tri, b0, b1, b2, np.sqrt(best2) if tri >= 0 else np.inf


@njit_kernel
def image_layout(surfaces, image):
    """Where image ``image`` lies in ``surfaces.image_pixels``: ``(offset, width, height, channels)``, all int64.

    ``image < 0`` gives zeros. Hot loops resolve this once per image and then call :func:`bilinear_sample`.
    """
    if image < 0:
        return np.int64(0), np.int64(0), np.int64(0), np.int64(0)
    return (
        np.int64(surfaces.image_pixel_start[image]),
        np.int64(surfaces.image_width[image]),
        np.int64(surfaces.image_height[image]),
        np.int64(surfaces.image_channels[image]),
    )


@njit_kernel
def bilinear_sample(pixels, base, w, hgt, ch, u, v, out):
    """Bilinear, repeat-addressed sample at UV ``(u, v)`` of the image at ``pixels[base:]`` into ``out`` (>= 1,).

    ``w`` x ``hgt`` texels [count] of ``ch`` channels, row-major, rows bottom to top (see :func:`image_layout`).
    Texel (row i, column j) covers ``[j, j+1]/width x [i, i+1]/height`` with its centre at
    ``((j + 0.5)/width, (i + 0.5)/height)``; row 0 is the bottom row (v = 0), as in Blender's ``pixels``.
    Channels beyond the image's are set to 0.
    """
    for c in range(out.shape[0]):
        out[c] = 0.0
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
            w00 * pixels[base + (i0 * w + j0) * ch + c]
            + w01 * pixels[base + (i0 * w + j1) * ch + c]
            + w10 * pixels[base + (i1 * w + j0) * ch + c]
            + w11 * pixels[base + (i1 * w + j1) * ch + c]
        )


@njit_kernel
def sample_image_bilinear(surfaces, image, u, v, out):
    """Bilinear, repeat-addressed sample of image ``image`` at UV ``(u, v)`` into ``out`` (>= 1,).

    See :func:`bilinear_sample`; ``image < 0`` writes zeros.
    """
    if image < 0:
        for c in range(out.shape[0]):
            out[c] = 0.0
        return
    base, w, hgt, ch = image_layout(surfaces, image)
    bilinear_sample(surfaces.image_pixels, base, w, hgt, ch, u, v, out)


@njit_kernel
def triangle_uv(tri_uv, tri, b0, b1, b2):
    """UV ``(u, v)`` at barycentrics ``(b0, b1, b2)`` of global triangle ``tri`` (``tri_uv``: (T, 3, 2) corner UVs)."""
    u = b0 * tri_uv[tri, 0, 0] + b1 * tri_uv[tri, 1, 0] + b2 * tri_uv[tri, 2, 0]
    v = b0 * tri_uv[tri, 0, 1] + b1 * tri_uv[tri, 1, 1] + b2 * tri_uv[tri, 2, 1]
    return u, v


@njit_kernel
def _structure_available(surfaces, shape, source):
    """True when the mesh-based ``source`` (1 ATTRIBUTE, 2 IMAGE, 3 UV_TANGENT) has its data on ``shape``."""
    if source < 1 or source > 3:
        return False
    if source == 1 and surfaces.surface_has_structure[shape] == 0:
        return False
    if source == 2 and (surfaces.surface_has_uv[shape] == 0 or surfaces.surface_structure_image[shape] < 0):
        return False
    if source == 3 and surfaces.surface_has_uv[shape] == 0:
        return False
    return True


@njit_kernel
def surface_structure_direction(surfaces, shape, point_local, out):
    """Structure vector of ``shape`` at ``point_local`` (3,) [m], written to ``out`` (3,) in the shape frame.

    Sources (``surfaces.surface_source``, course E.1.1 "stored in a texture or generated procedurally"):

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
    source = surfaces.surface_source[shape]
    if source == 4:  # AXIS
        for k in range(3):
            out[k] = surfaces.surface_axis[shape, k]
        return
    if not _structure_available(surfaces, shape, source):
        return
    tri, b0, b1, b2, _ = closest_surface_point(surfaces, shape, point_local, np.inf)
    if tri < 0:
        return
    tangent = surfaces.tri_tangent[tri]
    if source == 1:  # ATTRIBUTE
        corner = surfaces.tri_structure[tri]
        for k in range(3):
            out[k] = b0 * corner[0, k] + b1 * corner[1, k] + b2 * corner[2, k]
    elif source == 3:  # UV_TANGENT
        for k in range(3):
            out[k] = tangent[k]
    else:  # IMAGE
        u, v = triangle_uv(surfaces.tri_uv, tri, b0, b1, b2)
        # the three colour channels land in out, then get decoded in place
        sample_image_bilinear(surfaces, surfaces.surface_structure_image[shape], u, v, out)
        x = 2.0 * out[0] - 1.0
        y = 2.0 * out[1] - 1.0
        bitangent = surfaces.tri_bitangent[tri]
        for k in range(3):
            out[k] = x * tangent[k] + y * bitangent[k]


__all__ = [
    "GRID_MIN_TRIANGLES",
    "StructureSource",
    "bilinear_sample",
    "image_layout",
    "SurfaceArrays",
    "SurfaceFrictionModel",
    "closest_point_on_triangle",
    "closest_surface_point",
    "pack_surfaces",
    "sample_image_bilinear",
    "surface_structure_direction",
    "triangle_uv",
]
