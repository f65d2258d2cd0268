"""Procedural meshes for tests, benchmarks and demos (no Blender needed): an icosphere surface and a
structured tet mesh of a box."""

from __future__ import annotations

import numpy as np

from ..config import FLOAT, INDEX
from .lattice import KUHN_TETS


def icosphere(radius: float = 1.0, subdivisions: int = 2, center=(0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """Closed, outward-oriented triangle mesh of a sphere: an icosahedron split ``subdivisions`` times.

    Returns (vertices (V, 3) [m], triangles (20 * 4^subdivisions, 3) int32).
    """
    t = (1.0 + 5.0**0.5) / 2.0
    verts = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
             (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]  # fmt: skip
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
             (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11),
             (6, 2, 10), (8, 6, 7), (9, 8, 1)]  # fmt: skip
    v = [np.array(p, dtype=FLOAT) / np.linalg.norm(p) for p in verts]
    for _ in range(int(subdivisions)):
        midpoint: dict[tuple[int, int], int] = {}

        def mid(a, b, v=v, midpoint=midpoint):
            key = (min(a, b), max(a, b))
            if key not in midpoint:
                m = v[a] + v[b]
                v.append(m / np.linalg.norm(m))
                midpoint[key] = len(v) - 1
            return midpoint[key]

        new_faces = []
        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            new_faces += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new_faces
    return np.asarray(v) * float(radius) + np.asarray(center, dtype=FLOAT), np.asarray(faces, dtype=INDEX)


def box_tet_mesh(cells, lower, upper):
    """Structured tet mesh of an axis-aligned box: ``cells = (nx, ny, nz)`` cubes, 6 Kuhn tets each.

    Returns (vertices (V, 3) float64, tets (6 nx ny nz, 4) int32), all tets positively oriented.
    """
    nx, ny, nz = (int(c) for c in cells)
    lower = np.asarray(lower, dtype=FLOAT)
    upper = np.asarray(upper, dtype=FLOAT)
    gx, gy, gz = np.meshgrid(
        np.linspace(lower[0], upper[0], nx + 1),
        np.linspace(lower[1], upper[1], ny + 1),
        np.linspace(lower[2], upper[2], nz + 1),
        indexing="ij",
    )
    vertices = np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1)

    def vid(i, j, k):
        return (i * (ny + 1) + j) * (nz + 1) + k

    ci, cj, ck = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    ci, cj, ck = ci.ravel(), cj.ravel(), ck.ravel()
    corners = np.stack([vid(ci + (b & 1), cj + ((b >> 1) & 1), ck + ((b >> 2) & 1)) for b in range(8)], axis=1)
    tets = corners[:, KUHN_TETS].reshape(-1, 4)
    return vertices, tets.astype(INDEX)
