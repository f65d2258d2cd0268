"""Independent numpy references for triangle meshes: test meshes, brute-force distances and winding numbers.

Nothing here shares code with the core: distances are the minimum over every triangle of a vectorised
point-triangle distance (projection onto the plane when inside, else the nearest of the three edges), and the
inside/outside sign is the generalised winding number (the solid angle of the surface seen from the point, by
Van Oosterom & Strackee's formula, over 4 pi), which is a different algorithm from the core's scan-line counts.
"""

import math

import numpy as np

# ---------------------------------------------------------------------------------------------------------------
# Test meshes (outward-wound, counter-clockwise seen from outside)
# ---------------------------------------------------------------------------------------------------------------


def box_mesh(half, subdivisions: int = 1):
    """Closed box of half-extents ``half`` (3,) [m], each face split into ``subdivisions``^2 quads of 2 triangles."""
    half = np.asarray(half, float)
    n = subdivisions
    verts, tris = [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            u, v = (axis + 1) % 3, (axis + 2) % 3
            if sign < 0:
                u, v = v, u  # keep (u, v, axis) right-handed about the outward normal
            base = len(verts)
            for i in range(n + 1):
                for j in range(n + 1):
                    p = np.zeros(3)
                    p[axis] = sign * half[axis]
                    p[u] = (-1 + 2 * i / n) * half[u]
                    p[v] = (-1 + 2 * j / n) * half[v]
                    verts.append(p)
            for i in range(n):
                for j in range(n):
                    a = base + i * (n + 1) + j
                    b, c, d = a + (n + 1), a + (n + 1) + 1, a + 1
                    tris += [(a, b, c), (a, c, d)]
    verts = np.array(verts)
    tris = np.array(tris)
    # merge the duplicated edge vertices so the surface is closed
    keys, inverse = np.unique(np.round(verts, 12), axis=0, return_inverse=True)
    return keys, inverse.reshape(-1)[tris]


def grid_triangles(n: int) -> np.ndarray:
    """Triangles (2 n^2, 3) of an (n + 1) x (n + 1) grid of vertices numbered row by row, two per cell."""
    tris = []
    for i in range(n):
        for j in range(n):
            a = i * (n + 1) + j
            tris += [(a, a + n + 1, a + n + 2), (a, a + n + 2, a + 1)]
    return np.array(tris)


def torus_mesh(major: float, minor: float, segments: int = 32, rings: int = 16):
    """Closed torus about z: tube radius ``minor`` around a circle of radius ``major`` [m]."""
    u = 2 * np.pi * np.arange(segments) / segments
    v = 2 * np.pi * np.arange(rings) / rings
    uu, vv = np.meshgrid(u, v, indexing="ij")
    r = major + minor * np.cos(vv)
    verts = np.stack([r * np.cos(uu), r * np.sin(uu), minor * np.sin(vv)], axis=-1).reshape(-1, 3)
    tris = []
    for i in range(segments):
        for j in range(rings):
            a = i * rings + j
            b = ((i + 1) % segments) * rings + j
            c = ((i + 1) % segments) * rings + (j + 1) % rings
            d = i * rings + (j + 1) % rings
            tris += [(a, b, c), (a, c, d)]
    return verts, np.array(tris)


def bowl_mesh(radius: float, segments: int = 48, rings: int = 16, *, inward: bool = True):
    """Open hemispherical bowl (the lower half of a sphere of ``radius`` centred at the origin, rim at z = 0).

    A pole vertex at the bottom, ``rings`` rings up to the rim. ``inward``: normals point into the cavity (up at
    the bottom), else out (Blender's UV sphere halves).
    """
    verts = [np.array([0.0, 0.0, -radius])]
    for i in range(1, rings + 1):
        polar = (np.pi / 2) * i / rings  # from the bottom pole to the rim
        for j in range(segments):
            az = 2 * np.pi * j / segments
            verts.append(radius * np.array([np.sin(polar) * np.cos(az), np.sin(polar) * np.sin(az), -np.cos(polar)]))
    tris = []
    for j in range(segments):
        tris.append((0, 1 + j, 1 + (j + 1) % segments))
    for i in range(rings - 1):
        for j in range(segments):
            a = 1 + i * segments + j
            b = 1 + i * segments + (j + 1) % segments
            c = 1 + (i + 1) * segments + (j + 1) % segments
            d = 1 + (i + 1) * segments + j
            tris += [(a, d, c), (a, c, b)]
    tris = np.array(tris)
    if not inward:
        tris = tris[:, ::-1]
    return np.array(verts), tris


def suzanne():
    """Blender's Suzanne, holes filled (three closed surfaces), from tests/data/suzanne.npz."""
    from pathlib import Path

    data = np.load(Path(__file__).resolve().parents[1] / "data" / "suzanne.npz")
    return data["vertices"], data["triangles"].astype(np.int64)


# ---------------------------------------------------------------------------------------------------------------
# Brute force
# ---------------------------------------------------------------------------------------------------------------


def _segment_distance2(p, a, b):
    """Squared distance from points p (P, 1, 3) to segments (1, T, 3)."""
    ab = b - a
    t = np.clip(np.einsum("ptk,ptk->pt", p - a, np.broadcast_to(ab, (p.shape[0],) + ab.shape[1:])) /
                np.maximum(np.einsum("tk,tk->t", ab[0], ab[0]), 1e-300), 0.0, 1.0)  # fmt: skip
    d = p - (a + t[..., None] * ab)
    return np.einsum("ptk,ptk->pt", d, d)


def point_triangle_distances(points, vertices, triangles, chunk: int = 2048) -> np.ndarray:
    """Distance [m] from each point (P, 3) to the nearest triangle, by brute force over all triangles."""
    corners = np.asarray(vertices, float)[np.asarray(triangles)]
    a, b, c = corners[None, :, 0], corners[None, :, 1], corners[None, :, 2]
    n = np.cross(b - a, c - a)
    nn = np.einsum("ptk,ptk->pt", n, n)
    out = np.empty(len(points))
    for s in range(0, len(points), chunk):
        p = np.asarray(points[s : s + chunk], float)[:, None, :]
        h = np.einsum("ptk,ptk->pt", p - a, np.broadcast_to(n, (p.shape[0],) + n.shape[1:])) / nn
        q = p - h[..., None] * n  # projection on the plane
        inside = np.ones(h.shape, bool)
        for u, v in ((a, b), (b, c), (c, a)):
            inside &= np.einsum("ptk,ptk->pt", np.cross(v - u, q - u), np.broadcast_to(n, q.shape)) >= 0.0
        d2 = np.where(inside, h * h * nn, np.inf)
        for u, v in ((a, b), (b, c), (c, a)):
            d2 = np.minimum(d2, _segment_distance2(p, u, v))
        out[s : s + chunk] = np.sqrt(d2.min(axis=1))
    return out


def winding_numbers(points, vertices, triangles, chunk: int = 1024) -> np.ndarray:
    """Generalised winding number of each point: sum of the triangles' signed solid angles / (4 pi)."""
    corners = np.asarray(vertices, float)[np.asarray(triangles)]
    out = np.empty(len(points))
    for s in range(0, len(points), chunk):
        p = np.asarray(points[s : s + chunk], float)[:, None, None, :]
        r = corners[None] - p  # (P, T, 3, 3)
        length = np.linalg.norm(r, axis=-1)
        a, b, c = r[..., 0, :], r[..., 1, :], r[..., 2, :]
        la, lb, lc = length[..., 0], length[..., 1], length[..., 2]
        det = np.einsum("ptk,ptk->pt", a, np.cross(b, c))
        den = (la * lb * lc + np.einsum("ptk,ptk->pt", a, b) * lc + np.einsum("ptk,ptk->pt", b, c) * la
               + np.einsum("ptk,ptk->pt", c, a) * lb)  # fmt: skip
        out[s : s + chunk] = 2.0 * np.arctan2(det, den).sum(axis=1) / (4.0 * math.pi)
    return out


def signed_distances(points, vertices, triangles) -> np.ndarray:
    """Brute-force signed distance [m]: negative where the winding number exceeds 1/2."""
    d = point_triangle_distances(points, vertices, triangles)
    return np.where(winding_numbers(points, vertices, triangles) > 0.5, -d, d)
