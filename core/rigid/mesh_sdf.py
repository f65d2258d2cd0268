"""Signed distance field of a closed triangle mesh on a regular grid (seed 000 §2.3, §2.3.3), built at finalize.

One job: sample ``s(x)`` (negative inside, seed §2.3) at the points of a grid covering the mesh plus a band.

- Magnitude: the exact distance from each grid point to the nearest triangle (``bvh_nearest_triangle``).
- Sign: the winding number along grid lines parallel to x (the scan-line counting of Batty's SDFGen, with
  signed crossings): each triangle, projected on the yz plane, adds ``-sign(n_x)`` at the first grid point past
  its crossing of every grid line it covers, and a prefix sum along x gives the number of times the line has
  entered the solid. A point is inside when that count is positive, so overlapping closed parts (Suzanne's eyes
  sit in her head) count as inside and a hollow (an inward-wound inner shell) as outside. Lines through an edge
  or a corner of the projection are counted once: the 2D edge functions are evaluated in one vertex order per
  edge (exactly antisymmetric between the two triangles sharing it) and ties go to the "top-left" edges, the
  rasteriser's rule, so a closed surface never gains or loses a crossing.

Grid (see :func:`sdf_grid_layout`): ``SDF_CELLS`` cells along the longest side of the mesh's box, and a band of at
least ``SDF_BAND_CELLS`` cells and at least the contact margin plus one cell beyond it, so every point within the
margin of the surface interpolates valid data (seed §2.3.3: the grid must extend beyond the zero isosurface).
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import njit_kernel
from .mesh_queries import FAR, bvh_nearest_triangle, edge_function, inside_edge

SDF_CELLS = 48
"""Grid cells along the longest side of a mesh's bounding box (interpolation error near edges ~ one cell)."""

SDF_BAND_CELLS = 3
"""Smallest band [cells] of grid beyond the bounding box."""


def sdf_grid_layout(lower, upper, margin: float) -> tuple[np.ndarray, float, np.ndarray, float]:
    """Grid covering the box [lower, upper] [m]: ``(origin (3,), cell, dims (3,) int, band)``.

    ``cell = longest side / SDF_CELLS``; ``band = max(SDF_BAND_CELLS cell, margin + cell)`` [m] is left between
    the box and the grid on every side (more where the point count rounds up; the slack is split evenly).
    """
    lower = np.asarray(lower, np.float64)
    upper = np.asarray(upper, np.float64)
    size = upper - lower
    cell = float(max(size.max(), 1.0e-9)) / SDF_CELLS
    band = max(SDF_BAND_CELLS * cell, float(margin) + cell)
    dims = np.ceil((size + 2.0 * band) / cell).astype(np.int64) + 1
    slack = (dims - 1) * cell - (size + 2.0 * band)
    origin = lower - band - 0.5 * slack
    return origin, cell, dims.astype(np.int32), band


def signed_distance_grid(vertices, triangles, tri_normal, bvh, margin: float):
    """Signed distances [m] of a closed mesh at the points of its grid.

    Args:
        vertices: (V, 3) float64 [m]. triangles: (T, 3) int32, outward-wound. tri_normal: (T, 3) unit normals.
        bvh: ``(node_lower, node_upper, node_right, node_first, node_count, leaf_tris)`` of this mesh alone
            (see :func:`~.mesh.build_bvh`). margin: contact margin [m] (sets the band).

    Returns:
        ``(values (nx, ny, nz) float64, origin (3,), cell, dims (3,) int32, band)``.
    """
    vertices = np.ascontiguousarray(vertices, np.float64)
    triangles = np.ascontiguousarray(triangles, np.int32)
    origin, cell, dims, band = sdf_grid_layout(vertices.min(axis=0), vertices.max(axis=0), margin)
    nx, ny, nz = (int(d) for d in dims)
    winding = _winding_numbers(vertices, triangles, origin, cell, nx, ny, nz)
    depth = int(np.ceil(np.log2(max(len(triangles), 1)))) + 8
    distance = _grid_distances(*bvh, vertices, triangles, tri_normal, origin, cell, nx, ny, nz,
                               np.zeros(2 * depth + 8, np.int32))  # fmt: skip
    values = np.where(winding > 0, -distance, distance)
    return values, origin, cell, dims, band


@njit_kernel
def _winding_numbers(verts, tris, origin, cell, nx, ny, nz):
    """Winding number of every grid point (nx, ny, nz) int32 from signed crossings of the x grid lines."""
    crossings = np.zeros((nx + 1, ny, nz), np.int32)
    for t in range(tris.shape[0]):
        ia, ib, ic = tris[t, 0], tris[t, 1], tris[t, 2]
        area = edge_function(verts[ic, 1], verts[ic, 2], verts, ia, ib)  # 2 x projected area = 2 n_x area
        if area == 0.0:
            continue  # seen edge-on from the x axis: no crossing
        flip = area < 0.0
        step = -1 if area > 0.0 else 1  # n_x > 0: the line leaves the solid here
        y0 = min(verts[ia, 1], verts[ib, 1], verts[ic, 1])
        y1 = max(verts[ia, 1], verts[ib, 1], verts[ic, 1])
        z0 = min(verts[ia, 2], verts[ib, 2], verts[ic, 2])
        z1 = max(verts[ia, 2], verts[ib, 2], verts[ic, 2])
        j0 = max(int(math.ceil((y0 - origin[1]) / cell)), 0)
        j1 = min(int(math.floor((y1 - origin[1]) / cell)), ny - 1)
        k0 = max(int(math.ceil((z0 - origin[2]) / cell)), 0)
        k1 = min(int(math.floor((z1 - origin[2]) / cell)), nz - 1)
        for j in range(j0, j1 + 1):
            py = origin[1] + j * cell
            for k in range(k0, k1 + 1):
                pz = origin[2] + k * cell
                ea = edge_function(py, pz, verts, ib, ic)  # opposite corner a
                eb = edge_function(py, pz, verts, ic, ia)
                ec = edge_function(py, pz, verts, ia, ib)
                if flip:
                    ea, eb, ec = -ea, -eb, -ec
                if not (
                    inside_edge(ea, verts, ib, ic, flip)
                    and inside_edge(eb, verts, ic, ia, flip)
                    and inside_edge(ec, verts, ia, ib, flip)
                ):
                    continue
                total = ea + eb + ec
                if not total != 0.0:
                    continue
                x = (ea * verts[ia, 0] + eb * verts[ib, 0] + ec * verts[ic, 0]) / total
                i = int(math.ceil((x - origin[0]) / cell))
                crossings[min(max(i, 0), nx), j, k] += step
    winding = np.zeros((nx, ny, nz), np.int32)
    for j in range(ny):
        for k in range(nz):
            count = 0
            for i in range(nx):
                count += crossings[i, j, k]
                winding[i, j, k] = count
    return winding


@njit_kernel
def _grid_distances(node_lower, node_upper, node_right, node_first, node_count, leaf_tris, verts, tris, tri_normal,
                    origin, cell, nx, ny, nz, stack):  # fmt: skip
    """Unsigned distance [m] from every grid point (nx, ny, nz) to the nearest triangle (BVH root 0)."""
    out = np.empty((nx, ny, nz))
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                p = (origin[0] + i * cell, origin[1] + j * cell, origin[2] + k * cell)
                nearest = bvh_nearest_triangle(node_lower, node_upper, node_right, node_first, node_count, leaf_tris,
                                               verts, tris, tri_normal, np.int32(0), p, FAR, stack)  # fmt: skip
                out[i, j, k] = nearest[3]
    return out
