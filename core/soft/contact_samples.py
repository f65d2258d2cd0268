"""Contact samples on a soft mesh's faces: points between its vertices that also touch the colliders.

The soft engine's penalty contact acts on points (the render mesh's vertices, embedded in the lattice). A coarse
mesh leaves most of its surface without any: Blender's default cube has 8 vertices, so a 2 m cube resting on a
plane stands on its 4 bottom corners, the lattice between them sags through the ground and the body follows it
down. Points spread over every face at most one lattice cell apart give each cell of the surface its own support,
whatever the mesh's own density. They collide only; the render mesh and its output stay the mesh's vertices.

Samples are deterministic (a fixed barycentric grid per triangle and per edge, in the mesh's order), and no
sample repeats a vertex or another sample: each edge is sampled once (its interior points), each triangle only
strictly inside. A mesh already finer than the spacing gets none.

IPC's barrier acts on triangles, not points, so for it the same grid makes triangles: :func:`refined_surface`
splits every face until no edge is longer than a given spacing, a closed surface on the mesh's own faces.
"""

from __future__ import annotations

import numpy as np

from ..config import FLOAT, INDEX
from ..fem.lattice import LatticeMesh, embed_points


def _lengths(d: np.ndarray) -> np.ndarray:
    """Row norms of (K, 3) vectors (plain NumPy, no BLAS)."""
    return np.sqrt((d * d).sum(axis=1))


def _edge_samples(vertices: np.ndarray, triangles: np.ndarray, spacing: float) -> np.ndarray:
    """Interior points of every distinct edge, at most ``spacing`` apart, shape (E_s, 3)."""
    edges = np.sort(triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    edges = np.unique(edges, axis=0)  # sorted: deterministic order
    a, b = vertices[edges[:, 0]], vertices[edges[:, 1]]
    segments = np.ceil(_lengths(b - a) / spacing).astype(np.int64)
    out = []
    for n in np.unique(segments[segments > 1]):
        sel = segments == n
        t = np.arange(1, n)[None, :, None] / n  # (1, n - 1, 1)
        out.append((a[sel][:, None, :] * (1.0 - t) + b[sel][:, None, :] * t).reshape(-1, 3))
    return np.concatenate(out) if out else np.zeros((0, 3))


def _interior_samples(vertices: np.ndarray, triangles: np.ndarray, spacing: float) -> np.ndarray:
    """Points strictly inside every triangle on a barycentric grid of ``n`` divisions, ``n`` = its longest edge /
    ``spacing`` rounded up, shape (F_s, 3)."""
    p0, p1, p2 = (vertices[triangles[:, k]] for k in range(3))
    longest = np.maximum(np.maximum(_lengths(p1 - p0), _lengths(p2 - p1)), _lengths(p0 - p2))
    divisions = np.ceil(longest / spacing).astype(np.int64)
    out = []
    for n in np.unique(divisions[divisions > 2]):  # n <= 2 has no strictly interior grid point
        i, j = np.meshgrid(np.arange(1, n), np.arange(1, n), indexing="ij")
        keep = i + j < n
        u = (i[keep] / n)[None, :, None]  # weight of p1
        v = (j[keep] / n)[None, :, None]  # weight of p2
        sel = divisions == n
        q0, q1, q2 = p0[sel][:, None, :], p1[sel][:, None, :], p2[sel][:, None, :]
        out.append((q0 * (1.0 - u - v) + q1 * u + q2 * v).reshape(-1, 3))
    return np.concatenate(out) if out else np.zeros((0, 3))


def face_sample_points(vertices, triangles, spacing: float) -> np.ndarray:
    """Contact samples on a triangle mesh's edges and faces, none closer to a vertex than ``spacing`` allows.

    Args:
        vertices: (V, 3) [m]. triangles: (T, 3) vertex indices (open, non-manifold and degenerate ones are fine).
        spacing: the largest gap between neighbouring samples along an edge or a face's grid [m], > 0.

    Returns:
        (S, 3) float64 [m]: the interior points of each distinct edge, then the strictly interior grid points of
        each triangle; empty when every edge is already shorter than ``spacing``.
    """
    if not spacing > 0.0:
        raise ValueError(f"face_sample_points: spacing must be > 0, got {spacing}")
    v = np.ascontiguousarray(vertices, dtype=FLOAT).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if t.shape[0] == 0:
        return np.zeros((0, 3))
    return np.ascontiguousarray(np.concatenate([_edge_samples(v, t, spacing), _interior_samples(v, t, spacing)]))


def embed_in_lattice(lattice: LatticeMesh, points) -> tuple[np.ndarray, np.ndarray]:
    """Tets and barycentric weights of ``points`` (P, 3) [m, the lattice's frame] in ``lattice``.

    Returns ``(tet (Q,) int32, weights (Q, 4) float64)`` for the Q <= P points that lie in an occupied cell, in
    their order (a point on a triangle always does: the cells a triangle touches are occupied; the filter only
    guards rounding at a cell's boundary).
    """
    p = np.ascontiguousarray(points, dtype=FLOAT).reshape(-1, 3)
    nx, ny, nz = lattice.grid_shape
    h, origin = float(lattice.cell_size), np.ascontiguousarray(lattice.grid_origin, dtype=FLOAT)
    # Tets come 6 per occupied cell, the cell's corner 000 first in each (the Kuhn split): the cell of tet 6c.
    corner = lattice.tet_vertices[lattice.tet_indices[::6, 0]]
    ijk = np.rint((corner - origin) / h).astype(np.int64)
    cell_tet_start = np.full((nz, ny, nx), -1, dtype=np.int64)
    cell_tet_start[ijk[:, 2], ijk[:, 1], ijk[:, 0]] = 6 * np.arange(ijk.shape[0])
    tet = np.empty(p.shape[0], dtype=INDEX)
    weights = np.empty((p.shape[0], 4), dtype=FLOAT)
    embed_points(p, lattice.tet_vertices, lattice.tet_indices, cell_tet_start, origin, h, nx, ny, nz, tet, weights)
    inside = tet >= 0
    return np.ascontiguousarray(tet[inside]), np.ascontiguousarray(weights[inside])


MAX_SPLITS = 16
"""Most parts an edge of the collision surface is split into (a triangle into at most 256)."""


def refined_surface(vertices, triangles, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """The mesh's triangles split into ``k²`` each, ``k = ceil(longest edge / spacing)`` (at most
    :data:`MAX_SPLITS`): the collision surface that IPC holds a coarse mesh by (its barrier acts on triangles, so
    points alone would not do).

    Every triangle is split on the same barycentric grid and a point shared by two triangles (on an edge they share,
    or a vertex) is one point, so the refined surface is closed wherever the mesh is. The points lie on the mesh's
    own triangles; its vertices come first, in their order. Returns ``(points (P, 3), triangles (T k², 3))``, wound as
    the mesh; a mesh already finer than ``spacing`` comes back as it is.
    """
    if not (np.isfinite(spacing) and spacing > 0.0):
        raise ValueError(f"the spacing must be a positive length, got {spacing!r}")
    v = np.ascontiguousarray(vertices, dtype=FLOAT).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if t.shape[0] == 0:
        return v, t
    longest = float(_lengths(v[t[:, [1, 2, 0]]] - v[t]).max())
    k = min(int(np.ceil(longest / spacing - 1e-9)), MAX_SPLITS)
    if k <= 1:
        return v, t
    index: dict[tuple, int] = {}
    points = list(v)

    def point(a: int, b: int, c: int, i: int, j: int) -> int:
        """The grid point ``a + i/k (b − a) + j/k (c − a)``, keyed by where it lies so that neighbours share it."""
        weights = {a: k - i - j, b: i, c: j}
        key = tuple(sorted((corner, w) for corner, w in weights.items() if w))
        if len(key) == 1:
            return key[0][0]
        if key not in index:
            index[key] = len(points)
            points.append(sum(w * v[corner] for corner, w in key) / k)
        return index[key]

    out = []
    for a, b, c in t:
        grid = {(i, j): point(a, b, c, i, j) for i in range(k + 1) for j in range(k + 1 - i)}
        for i in range(k):
            for j in range(k - i):
                out.append((grid[i, j], grid[i + 1, j], grid[i, j + 1]))
                if i + j < k - 1:
                    out.append((grid[i + 1, j], grid[i + 1, j + 1], grid[i, j + 1]))
    return np.array(points, dtype=FLOAT), np.array(out, dtype=np.int64)
