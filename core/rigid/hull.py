"""Convex hulls for the CONVEX shape: construction (builder time) and the flat arrays the kernels read.

CONTRACT (fixed; the narrow phase and the builder both depend on it):

:class:`HullArrays` holds every hull of a model in CSR form, all coordinates in the owning shape's frame [m]:

- ``hull_vert_start`` (H+1,) int32: hull h owns vertices ``hull_verts[hull_vert_start[h]:hull_vert_start[h+1]]``;
- ``hull_verts`` (V, 3) float64;
- ``hull_face_start`` (H+1,) int32: hull h owns faces ``hull_face_start[h]:hull_face_start[h+1]`` (global ids);
- ``hull_face_plane`` (F, 4) float64: outward unit normal n and offset d, ``n · x = d`` on the face plane,
  ``n · x <= d`` inside;
- ``hull_face_vert_start`` (F+1,) int32 and ``hull_face_verts`` (K,) int32: the face polygon's vertices as
  *global* indices into ``hull_verts``, counter-clockwise seen from outside (right-handed about n); coplanar
  triangles are merged, so a box hull has six quads;
- ``hull_edge_start`` (H+1,) int32 and ``hull_edges`` (E, 2) int32: every hull edge once, global vertex indices.

An empty model has H = 0 and zero-length arrays of the same dtypes (one Numba specialization).

Construction (:func:`convex_hull`) is quickhull [Barber, Dobkin & Huhdanpaa 1996] on points snapped to an
integer grid: each axis of the bounding box is mapped onto ``[-2^19, 2^19]`` (an affine map, which keeps the
hull's combinatorics), where every orientation test ``(b - a) x (c - a) · (p - a)`` is exact in int64
(|det| <= 3 · 2^20 · 2^41 < 2^63). Exact tests keep the visible region of every added point a disk, so the
hull never tears; the price is that points within one grid cell (about 2e-6 of the box half-extent) of the
hull surface may be dropped. The triangles found are then merged into polygons with :data:`HULL_TOLERANCE`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import ModelError
from ..jit import njit_kernel

HULL_TOLERANCE = 1e-6
"""Coplanarity tolerance relative to the bounding-box diagonal [dimensionless]: triangles whose corners lie
this close to a face's plane merge into it, and a point set thinner than this has no volume."""

_GRID = 2**19
"""Half-width of the integer grid the points are snapped to (see the module docstring for the bound)."""


class HullArrays(NamedTuple):
    """Flat arrays of every convex hull of a model (see the module docstring for the layout)."""

    hull_vert_start: np.ndarray
    hull_verts: np.ndarray
    hull_face_start: np.ndarray
    hull_face_plane: np.ndarray
    hull_face_vert_start: np.ndarray
    hull_face_verts: np.ndarray
    hull_edge_start: np.ndarray
    hull_edges: np.ndarray


class Hull(NamedTuple):
    """One convex polytope in its shape's frame (made by :func:`convex_hull`)."""

    vertices: np.ndarray
    """Hull vertices [m], shape (V, 3), float64; only true corners (no points inside faces or edges)."""
    faces: tuple
    """One int32 array of local vertex indices per face polygon, counter-clockwise seen from outside."""
    planes: np.ndarray
    """Outward unit normal and offset ``(nx, ny, nz, d)`` per face, ``n · x <= d`` inside [m], shape (F, 4)."""


def empty_hull_arrays() -> HullArrays:
    """The :class:`HullArrays` of a model without hulls (zero-length arrays, the kernels' dtypes)."""
    return HullArrays(
        np.zeros(1, np.int32),
        np.zeros((0, 3)),
        np.zeros(1, np.int32),
        np.zeros((0, 4)),
        np.zeros(1, np.int32),
        np.zeros(0, np.int32),
        np.zeros(1, np.int32),
        np.zeros((0, 2), np.int32),
    )


def pack_hulls(hulls: list[Hull]) -> HullArrays:
    """Concatenate hulls into :class:`HullArrays` (global vertex indices; every edge once, in face order)."""
    if not hulls:
        return empty_hull_arrays()
    vert_count, face_count, edge_count = [0], [0], [0]
    verts, planes, face_sizes, face_verts, edges = [], [], [], [], []
    for hull in hulls:
        base = sum(vert_count)
        loops = [np.asarray(f, np.int64) + base for f in hull.faces]
        pairs = np.concatenate([np.stack([loop, np.roll(loop, -1)], axis=1) for loop in loops])
        edges.append(pairs[pairs[:, 0] < pairs[:, 1]])  # a closed surface walks each edge once each way
        face_sizes += [len(loop) for loop in loops]
        face_verts += loops
        verts.append(np.asarray(hull.vertices, np.float64).reshape(-1, 3))
        planes.append(np.asarray(hull.planes, np.float64).reshape(-1, 4))
        vert_count.append(len(verts[-1]))
        face_count.append(len(loops))
        edge_count.append(len(edges[-1]))
    return HullArrays(
        np.cumsum(vert_count).astype(np.int32),
        np.concatenate(verts),
        np.cumsum(face_count).astype(np.int32),
        np.concatenate(planes),
        np.cumsum([0, *face_sizes]).astype(np.int32),
        np.concatenate(face_verts).astype(np.int32),
        np.cumsum(edge_count).astype(np.int32),
        np.concatenate(edges).astype(np.int32).reshape(-1, 2),
    )


def convex_hull(points, *, label: str = "") -> Hull:
    """Convex hull of ``points`` (N, 3) [m], with coplanar triangles merged into polygons.

    Duplicate points and points inside the hull (or on its faces and edges) are dropped. Deterministic: the
    same input gives the same output, vertex and face order included (vertices keep their input order).

    Raises:
        ModelError: non-finite coordinates, or fewer than four points that are not all in one plane (the
            message names ``label`` and says what to change).
    """
    name = label or "convex hull"
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ModelError(f"{name}: hull points must have shape (N, 3), got {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ModelError(f"{name}: the hull points contain NaN or infinite coordinates; fix the mesh's vertices")
    if len(pts) < 4:
        raise _degenerate(name, len(pts), "are too few")
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    half = 0.5 * (hi - lo)
    diag = 2.0 * float(np.sqrt(np.sum(half * half)))
    half = np.where(half > 0.0, half, 1.0)
    grid = np.rint((pts - 0.5 * (lo + hi)) / half * _GRID).astype(np.int64)
    tri, nbr = _quickhull(grid, _initial_simplex(grid, name))
    used = np.unique(tri)
    local = np.full(len(pts), -1, np.int64)
    local[used] = np.arange(len(used))
    vertices = pts[used]
    tri = local[tri]
    _check_volume(vertices, tri, diag, name, len(pts))
    start, loop_verts = _merged_faces(vertices, tri, nbr, HULL_TOLERANCE * diag)
    return _compacted(vertices, start, loop_verts)


def _degenerate(name: str, count: int, what: str) -> ModelError:
    return ModelError(
        f"{name}: a convex hull needs at least 4 points that are not all in one plane, but the {count} points "
        f"given {what}; give the object some thickness or use another collision shape (box, sphere, mesh)"
    )


def _initial_simplex(grid: np.ndarray, name: str) -> np.ndarray:
    """Four grid points spanning a tetrahedron of non-zero (exact) volume, shape (4,) int64.

    Raises:
        ModelError: all points coincide, lie on one line or in one plane (exact tests on the grid).
    """
    n = len(grid)
    i0 = int(np.argmin(grid[:, 0]))
    d = grid - grid[i0]
    i1 = int(np.argmax(np.einsum("ij,ij->i", d, d)))
    if not np.any(d[i1]):
        raise _degenerate(name, n, "are all the same point")
    c = np.cross(d[i1], d)  # exact: |components| <= 2^41
    i2 = int(np.argmax(np.einsum("ij,ij->i", c.astype(np.float64), c.astype(np.float64))))
    if not np.any(c[i2]):
        raise _degenerate(name, n, "lie on one line")
    det = np.einsum("ij,j->i", d, c[i2])  # exact int64 orientation of (i0, i1, i2, p)
    i3 = int(np.argmax(np.abs(det)))
    if det[i3] == 0:
        raise _degenerate(name, n, "lie in one plane")
    return np.array([i0, i1, i2, i3], np.int64) if det[i3] < 0 else np.array([i0, i2, i1, i3], np.int64)


def _check_volume(vertices: np.ndarray, tri: np.ndarray, diag: float, name: str, count: int) -> None:
    """Reject a hull whose mean thickness ``2 V / A`` is below :data:`HULL_TOLERANCE` of the diagonal.

    Raises:
        ModelError: the points are (nearly) all in one plane or on one line.
    """
    centre = vertices.mean(axis=0)
    a, b, c = (vertices[tri[:, k]] - centre for k in range(3))
    cross = np.cross(b - a, c - a)
    volume = float(np.einsum("ij,ij->", cross, a)) / 6.0
    area = 0.5 * float(np.sum(np.sqrt(np.einsum("ij,ij->i", cross, cross))))
    if not 2.0 * volume > HULL_TOLERANCE * diag * area:
        thickness = max(2.0 * volume / area, 0.0)
        raise _degenerate(name, count, f"are nearly in one plane (thickness ~{thickness:.3g} m)")


def _merged_faces(vertices: np.ndarray, tri: np.ndarray, nbr: np.ndarray, tol: float) -> tuple:
    """Polygons from merging coplanar triangles within ``tol`` [m], as CSR ``(start (F+1,), verts (K,))`` of
    local vertex ids, counter-clockwise from outside.

    A group whose boundary is not one simple loop goes back to its triangles; vertices left touching fewer
    than three polygons (inside a face or on an edge) are dropped from the loops.
    """
    corner = vertices[tri[:, 0]]
    area = np.sqrt(np.sum(np.cross(vertices[tri[:, 1]] - corner, vertices[tri[:, 2]] - corner) ** 2, axis=1))
    order = np.argsort(-area, kind="stable")  # large triangles seed the merged faces
    group, group_count = _group_coplanar(vertices, tri, nbr, order, tol)
    start, verts, bad = _group_loops(tri, nbr, group, group_count, len(vertices))
    if np.any(bad):
        split = bad[group]
        group[split] = group_count + np.arange(int(split.sum()))
        _, group = np.unique(group, return_inverse=True)
        start, verts, bad = _group_loops(tri, nbr, group, int(group.max()) + 1, len(vertices))
    start, verts = _drop_flat_vertices(start, verts, len(vertices))
    if len(np.unique(verts)) - len(verts) // 2 + len(start) - 1 != 2:  # Euler V - E + F; triangles are valid
        return np.arange(0, 3 * len(tri) + 1, 3), tri.ravel().copy()
    return start, verts


def _drop_flat_vertices(start: np.ndarray, verts: np.ndarray, vertex_count: int) -> tuple:
    """Remove from the CSR loops every vertex that touches fewer than three polygons; no loop drops below 3."""
    face_count = len(start) - 1
    face_of = np.repeat(np.arange(face_count), np.diff(start))
    keep_always = np.zeros(vertex_count, bool)
    while True:
        corner = (np.bincount(verts, minlength=vertex_count) >= 3) | keep_always
        short = np.bincount(face_of, weights=corner[verts], minlength=face_count) < 3
        if not np.any(short):
            break
        keep_always[verts[short[face_of]]] = True
    kept = corner[verts]
    sizes = np.bincount(face_of[kept], minlength=face_count)
    return np.concatenate([[0], np.cumsum(sizes)]), verts[kept]


def _compacted(vertices: np.ndarray, start: np.ndarray, loop_verts: np.ndarray) -> Hull:
    """The :class:`Hull` of the vertices the CSR loops use, with Newell normals and ``d = max n · v``."""
    used = np.unique(loop_verts)
    local = np.full(len(vertices), -1, np.int64)
    local[used] = np.arange(len(used))
    verts = vertices[used]
    loop = local[loop_verts]
    following = np.arange(1, len(loop) + 1)
    following[start[1:] - 1] = start[:-1]
    p = verts - verts.mean(axis=0)
    normal = np.add.reduceat(np.cross(p[loop], p[loop[following]]), start[:-1], axis=0)  # Newell: 2 x area
    normal /= np.sqrt(np.sum(normal * normal, axis=1))[:, None]
    face_of = np.repeat(np.arange(len(start) - 1), np.diff(start))
    height = np.einsum("ij,ij->i", verts[loop], normal[face_of])
    planes = np.concatenate([normal, np.maximum.reduceat(height, start[:-1])[:, None]], axis=1)
    return Hull(verts, tuple(np.split(loop.astype(np.int32), start[1:-1])), planes)


# kernels ----------------------------------------------------------------------------------------------
# Face table columns of the quickhull kernel (one int64 row per face ever created).
_V = 0  # 3 vertex ids (counter-clockwise from outside)
_N = 3  # 3 neighbour faces, across edges (v0, v1), (v1, v2), (v2, v0)
_P = 6  # exact plane: integer normal (3) and offset (1), n · p - d > 0 strictly outside
_ALIVE = 10
_HEAD = 11  # first point of the outside set (linked through point_next), -1 when empty
_FAR = 12  # farthest outside point, -1 when none
_FAR_DET = 13  # its orientation value n · p - d
_MARK = 14  # visit stamp: 2 s visible, 2 s + 1 not visible in iteration s
_COLUMNS = 15


@njit_kernel
def _set_face(face, face_len, f, q, a, b, c):
    """Write face f = (a, b, c) with its exact plane and empty outside set."""
    abx, aby, abz = q[b, 0] - q[a, 0], q[b, 1] - q[a, 1], q[b, 2] - q[a, 2]
    acx, acy, acz = q[c, 0] - q[a, 0], q[c, 1] - q[a, 1], q[c, 2] - q[a, 2]
    nx, ny, nz = aby * acz - abz * acy, abz * acx - abx * acz, abx * acy - aby * acx
    face[f, _V], face[f, _V + 1], face[f, _V + 2] = a, b, c
    face[f, _P], face[f, _P + 1], face[f, _P + 2] = nx, ny, nz
    face[f, _P + 3] = nx * q[a, 0] + ny * q[a, 1] + nz * q[a, 2]
    face[f, _ALIVE], face[f, _HEAD], face[f, _FAR], face[f, _FAR_DET], face[f, _MARK] = 1, -1, -1, 0, 0
    face_len[f] = np.sqrt(float(nx) * nx + float(ny) * ny + float(nz) * nz)


@njit_kernel
def _orientation(face, f, q, p):
    """Exact ``n · p - d`` of point p against face f (> 0 strictly outside)."""
    return face[f, _P] * q[p, 0] + face[f, _P + 1] * q[p, 1] + face[f, _P + 2] * q[p, 2] - face[f, _P + 3]


@njit_kernel
def _assign_point(face, face_len, faces_first, faces_end, q, p, point_next):
    """Put point p into the outside set of the face in [first, end) it is farthest above; dropped if none."""
    best, best_det, best_dist = -1, 0, 0.0
    for f in range(faces_first, faces_end):
        if face[f, _ALIVE] == 0:
            continue
        det = _orientation(face, f, q, p)
        if det > 0 and (best < 0 or det / face_len[f] > best_dist):
            best, best_det, best_dist = f, det, det / face_len[f]
    if best < 0:
        return
    point_next[p] = face[best, _HEAD]
    face[best, _HEAD] = p
    if face[best, _FAR] < 0 or best_det > face[best, _FAR_DET]:
        face[best, _FAR], face[best, _FAR_DET] = p, best_det


@njit_kernel
def _grown(face, face_len, need):
    """The face table with room for at least ``need`` rows."""
    cap = max(need, 2 * face.shape[0])
    bigger = np.zeros((cap, _COLUMNS), np.int64)
    bigger_len = np.zeros(cap)
    # element by element: an array-to-slice assignment compiles numba's shape-mismatch error formatting (seconds)
    for row in range(face.shape[0]):
        bigger_len[row] = face_len[row]
        for column in range(face.shape[1]):
            bigger[row, column] = face[row, column]
    return bigger, bigger_len


@njit_kernel
def _visible_faces(face, f, q, eye, stamp, visible, horizon):
    """Faces strictly below ``eye``, found from f across edges; horizon edges as (face, edge) rows.

    Returns ``(visible count, horizon count)``; ``visible`` and ``horizon`` must hold every face.
    """
    face[f, _MARK] = 2 * stamp
    visible[0] = f
    count, hcount, i = 1, 0, 0
    while i < count:
        g = visible[i]
        i += 1
        for k in range(3):
            h = face[g, _N + k]
            if face[h, _MARK] != 2 * stamp and face[h, _MARK] != 2 * stamp + 1:
                if _orientation(face, h, q, eye) > 0:
                    face[h, _MARK] = 2 * stamp
                    visible[count] = h
                    count += 1
                else:
                    face[h, _MARK] = 2 * stamp + 1
            if face[h, _MARK] == 2 * stamp + 1:
                horizon[hcount, 0], horizon[hcount, 1] = g, k
                hcount += 1
    return count, hcount


@njit_kernel
def _stitch_cone(face, face_len, q, eye, horizon, hcount, first, start_of):
    """Create faces ``first + e = (a_e, b_e, eye)`` over the horizon edges and link every neighbour.

    ``start_of`` (N,) maps a vertex to the horizon edge leaving it (exact tests make the horizon one cycle).
    """
    for e in range(hcount):
        g, k = horizon[e, 0], horizon[e, 1]
        start_of[face[g, _V + k]] = e
    for e in range(hcount):
        g, k = horizon[e, 0], horizon[e, 1]
        a, b = face[g, _V + k], face[g, _V + (k + 1) % 3]
        f = first + e
        _set_face(face, face_len, f, q, a, b, eye)
        h = face[g, _N + k]
        face[f, _N] = h
        for j in range(3):
            if face[h, _V + j] == b and face[h, _V + (j + 1) % 3] == a:
                face[h, _N + j] = f
        after = first + start_of[b]
        face[f, _N + 1] = after
        face[after, _N + 2] = f


@njit_kernel
def _quickhull(q, simplex):
    """Triangulated hull of grid points q (N, 3) int64 starting from ``simplex`` (4,) (orient(0,1,2,3) < 0).

    Returns ``(triangles (F, 3) int64, neighbours (F, 3) int64)``: input point ids counter-clockwise from
    outside; ``neighbours[f, k]`` is the triangle across edge ``(v_k, v_k+1)``.
    """
    n = q.shape[0]
    face = np.zeros((64, _COLUMNS), np.int64)
    face_len = np.zeros(64)
    a, b, c, d = simplex[0], simplex[1], simplex[2], simplex[3]
    corners = ((a, b, c), (a, d, b), (b, d, c), (c, d, a))
    for f in range(4):
        _set_face(face, face_len, f, q, corners[f][0], corners[f][1], corners[f][2])
    for f in range(4):
        for k in range(3):
            u, w = face[f, _V + k], face[f, _V + (k + 1) % 3]
            for g in range(4):
                for j in range(3):
                    if face[g, _V + j] == w and face[g, _V + (j + 1) % 3] == u:
                        face[f, _N + k] = g
    point_next = np.full(n, -1, np.int64)
    for p in range(n):
        if p != a and p != b and p != c and p != d:
            _assign_point(face, face_len, np.int64(0), np.int64(4), q, p, point_next)
    # int64, not literals: the helpers below would also be compiled for Literal[int](4) / (0)
    count, stamp, f = np.int64(4), np.int64(0), np.int64(0)
    start_of = np.zeros(n, np.int64)
    visible = np.zeros(64, np.int64)
    horizon = np.zeros((64, 2), np.int64)
    while f < count:
        if face[f, _ALIVE] == 0 or face[f, _HEAD] < 0:
            f += 1
            continue
        if visible.shape[0] < count:
            visible = np.zeros(2 * count, np.int64)
            horizon = np.zeros((2 * count, 2), np.int64)
        stamp += 1
        eye = face[f, _FAR]
        vcount, hcount = _visible_faces(face, f, q, eye, stamp, visible, horizon)
        if count + hcount > face.shape[0]:
            face, face_len = _grown(face, face_len, count + hcount)
        _stitch_cone(face, face_len, q, eye, horizon, hcount, count, start_of)
        for i in range(vcount):
            g = visible[i]
            face[g, _ALIVE] = 0
            p = face[g, _HEAD]
            while p >= 0:
                following = point_next[p]
                if p != eye:
                    _assign_point(face, face_len, count, count + hcount, q, p, point_next)
                p = following
            face[g, _HEAD] = -1
        count += hcount
        f += 1
    return _alive_triangles(face, count)


@njit_kernel
def _alive_triangles(face, count):
    """Compact the live faces: ``(triangles (F, 3), neighbours (F, 3))`` with renumbered neighbours."""
    new_id = np.full(count, -1, np.int64)
    alive = 0
    for f in range(count):
        if face[f, _ALIVE] == 1:
            new_id[f] = alive
            alive += 1
    tri = np.empty((alive, 3), np.int64)
    nbr = np.empty((alive, 3), np.int64)
    for f in range(count):
        if new_id[f] >= 0:
            for k in range(3):
                tri[new_id[f], k] = face[f, _V + k]
                nbr[new_id[f], k] = new_id[face[f, _N + k]]
    return tri, nbr


@njit_kernel
def _group_coplanar(vertices, tri, nbr, order, tol):
    """Flood-fill triangles into faces: a neighbour joins when its corners lie within ``tol`` [m] of the
    seed triangle's plane. Seeds in ``order``. Returns ``(group (F,) int64, group count)``."""
    nf = tri.shape[0]
    group = np.full(nf, -1, np.int64)
    stack = np.empty(nf, np.int64)
    count = 0
    for s in order:
        if group[s] >= 0:
            continue
        normal = np.cross(vertices[tri[s, 1]] - vertices[tri[s, 0]], vertices[tri[s, 2]] - vertices[tri[s, 0]])
        normal /= np.sqrt(np.sum(normal * normal))
        offset = np.sum(normal * vertices[tri[s, 0]])
        group[s] = count
        stack[0] = s
        top = 1
        while top > 0:
            top -= 1
            g = stack[top]
            for k in range(3):
                h = nbr[g, k]
                if group[h] >= 0:
                    continue
                flat = True
                for j in range(3):
                    flat &= abs(np.sum(normal * vertices[tri[h, j]]) - offset) <= tol
                if flat:  # orientation is not tested: a sliver flipped by rounding still belongs here
                    group[h] = count
                    stack[top] = h
                    top += 1
        count += 1
    return group, count


@njit_kernel
def _group_loops(tri, nbr, group, group_count, vertex_count):
    """Boundary loop of every group (CSR ``(loop_start (G+1,), loop_verts (K,))``) and ``bad`` (G,) bool for
    groups whose boundary is not one simple cycle (their loop is left empty)."""
    edge_count = np.zeros(group_count + 1, np.int64)
    for t in range(tri.shape[0]):
        for k in range(3):
            if group[nbr[t, k]] != group[t]:
                edge_count[group[t] + 1] += 1
    edge_start = np.cumsum(edge_count)
    fill = edge_start[:-1].copy()
    edge_from = np.empty(edge_start[-1], np.int64)
    edge_to = np.empty(edge_start[-1], np.int64)
    for t in range(tri.shape[0]):
        for k in range(3):
            if group[nbr[t, k]] != group[t]:
                edge_from[fill[group[t]]] = tri[t, k]
                edge_to[fill[group[t]]] = tri[t, (k + 1) % 3]
                fill[group[t]] += 1
    leaving = np.full(vertex_count, -1, np.int64)
    bad = np.zeros(group_count, np.bool_)
    loop_start = np.zeros(group_count + 1, np.int64)
    loop_verts = np.empty(edge_start[-1], np.int64)
    size = 0
    for g in range(group_count):
        for e in range(edge_start[g], edge_start[g + 1]):
            if leaving[edge_from[e]] >= 0:
                bad[g] = True
            leaving[edge_from[e]] = e
        e, steps = edge_start[g], 0
        while not bad[g] and steps < edge_start[g + 1] - edge_start[g]:
            loop_verts[size + steps] = edge_from[e]
            steps += 1
            e = leaving[edge_to[e]]
            bad[g] |= e < 0 or (e == edge_start[g]) != (steps == edge_start[g + 1] - edge_start[g])
        for e in range(edge_start[g], edge_start[g + 1]):
            leaving[edge_from[e]] = -1
        size += 0 if bad[g] else steps
        loop_start[g + 1] = size
    return loop_start, loop_verts[:size], bad
