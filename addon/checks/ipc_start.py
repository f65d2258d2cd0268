"""Check Scene's test of the IPC start state: do the IPC surfaces intersect or touch at the start frame?

The IPC bake refuses a start whose surfaces intersect or touch (``core.ipc.frame_loop._check_start``, with the
exact checker of :mod:`contact_lab.core.ipc.intersection`), but only in the worker thread, after the scene was
read. This module names those starts in Check Scene, on Blender's main thread, so it is numpy only (no Numba:
nothing may compile here). It covers the surfaces whose overlap :mod:`..validate_physics` can only estimate:
soft meshes (each against itself and the others) and Mesh colliders (against the soft meshes; colliders may
overlap each other, as in the engine).

Conventions follow the core's checker: triangles are closed sets, so touching counts as intersecting; two
triangles sharing no vertex intersect iff an edge of one meets the other; within one mesh, neighbours count only
when they overlap beyond their shared vertex (the opposite edge of one meets the other) or shared edge (coplanar,
folded onto each other). Signs are float signs of the ``orient3d`` / ``orient2d`` determinants, not exact
expansions: a configuration within rounding of touching may be judged either way (the bake's exact check
decides those).

Cost (measured on a busy 2-core machine): about 11 µs per triangle of a closed mesh (a 20,480-triangle icosphere
against itself in 0.22 s); an object with more than :data:`MAX_TRIANGLES` triangles is not checked (an INFO
finding: the bake's own check still refuses it).
"""

from __future__ import annotations

import numpy as np

ROUNDING_MARGIN = 1e-9
"""A determinant of three vectors of length L counts as non-zero from ``ROUNDING_MARGIN * L³`` on: float64 rounds
it at about 1e-16 L³, so a crossing named by Check Scene is one by seven orders of magnitude more than rounding."""

MAX_TRIANGLES = 20_000
"""Objects with more triangles than this are not checked (the numpy test would take over ~0.2 s)."""

_LARGE_CELLS = 64
"""Triangles whose box covers more grid cells than this are paired with every box they overlap, not gridded (as
the core's checker does): a ground of two triangles under millimetre-sized ones would fill millions of cells."""

_CHUNK = 200_000
"""Triangle pairs tested per numpy batch (bounds the temporary arrays to some 100 MB)."""


# predicates --------------------------------------------------------------------------------------------------


def _orient3d(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """(N,) ``det[b - a, c - a, d - a]`` of (N, 3) points: > 0 when d is on the side abc's normal points to."""
    return np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a)


def _orient2d(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(N,) ``det[b - a, c - a]`` of (N, 2) points."""
    return (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])


def _drop_axis(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(N, 2) int: the two coordinates kept when projecting triangle abc along its largest normal component."""
    k = np.argmax(np.abs(np.cross(b - a, c - a)), axis=1)
    return np.stack([(k + 1) % 3, (k + 2) % 3], axis=1)


def _project(p: np.ndarray, keep: np.ndarray) -> np.ndarray:
    return np.take_along_axis(p, keep, axis=1)


def _segments_meet_2d(p, q, a, b) -> np.ndarray:
    """(N,) closed 2D segments pq and ab meet (collinear overlap included)."""
    o1, o2 = _orient2d(p, q, a), _orient2d(p, q, b)
    o3, o4 = _orient2d(a, b, p), _orient2d(a, b, q)
    crossing = (o1 * o2 <= 0.0) & (o3 * o4 <= 0.0)
    collinear = (o1 == 0.0) & (o2 == 0.0)
    lo = np.maximum(np.minimum(p, q), np.minimum(a, b))
    hi = np.minimum(np.maximum(p, q), np.maximum(a, b))
    overlap = np.all(lo <= hi, axis=1)
    return np.where(collinear, overlap, crossing)


def _inside_2d(p, a, b, c) -> np.ndarray:
    """(N,) p lies in the closed 2D triangle abc (False for a zero-area triangle)."""
    s0, s1, s2 = _orient2d(a, b, p), _orient2d(b, c, p), _orient2d(c, a, p)
    area = _orient2d(a, b, c)
    return (area != 0.0) & (((s0 >= 0) & (s1 >= 0) & (s2 >= 0)) | ((s0 <= 0) & (s1 <= 0) & (s2 <= 0)))


def _coplanar_segment_triangle(p, q, a, b, c) -> np.ndarray:
    keep = _drop_axis(a, b, c)
    p2, q2, a2, b2, c2 = (_project(x, keep) for x in (p, q, a, b, c))
    hit = _inside_2d(p2, a2, b2, c2) | _inside_2d(q2, a2, b2, c2)
    for u, w in ((a2, b2), (b2, c2), (c2, a2)):
        hit |= _segments_meet_2d(p2, q2, u, w)
    return hit


def segment_meets_triangle(p, q, a, b, c) -> np.ndarray:
    """(N,) the closed segments pq meet the closed triangles abc (all (N, 3) [m]); touching counts."""
    sp, sq = _orient3d(a, b, c, p), _orient3d(a, b, c, q)
    coplanar = (sp == 0.0) & (sq == 0.0)
    hit = np.zeros(sp.shape[0], bool)
    i = np.flatnonzero((sp * sq <= 0.0) & ~coplanar)  # the segment reaches the plane, crossing or ending on it
    if i.size:  # most candidate pairs stop here: both ends strictly on one side
        # where pq crosses abc's plane: inside iff the line pq passes the three edges on the same side
        pi, qi, ai, bi, ci = p[i], q[i], a[i], b[i], c[i]
        e0, e1, e2 = _orient3d(pi, qi, ai, bi), _orient3d(pi, qi, bi, ci), _orient3d(pi, qi, ci, ai)
        hit[i] = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
    if np.any(coplanar):
        i = np.flatnonzero(coplanar)
        hit[i] = _coplanar_segment_triangle(p[i], q[i], a[i], b[i], c[i])
    return hit


# triangle pairs ----------------------------------------------------------------------------------------------


def _edges_meet(P: np.ndarray, A: np.ndarray, B: np.ndarray, meets=segment_meets_triangle) -> np.ndarray:
    """(N,) some edge of triangle A (N, 3 indices) meets triangle B, or the other way round, by the segment test
    ``meets(p, q, a, b, c)`` (default: closed sets, touching counts)."""
    hit = np.zeros(A.shape[0], bool)
    for S, T in ((A, B), (B, A)):
        a, b, c = P[T[:, 0]], P[T[:, 1]], P[T[:, 2]]
        for k in range(3):
            hit |= meets(P[S[:, k]], P[S[:, (k + 1) % 3]], a, b, c)
    return hit


def _shared_vertex_meet(P, A, B, shared_a, shared_b) -> np.ndarray:
    """(N,) triangles sharing one vertex overlap beyond it: the edge opposite it in one meets the other."""
    rows = np.arange(A.shape[0])
    a1, a2 = A[rows, (shared_a + 1) % 3], A[rows, (shared_a + 2) % 3]
    b1, b2 = B[rows, (shared_b + 1) % 3], B[rows, (shared_b + 2) % 3]
    hit = segment_meets_triangle(P[a1], P[a2], P[B[:, 0]], P[B[:, 1]], P[B[:, 2]])
    return hit | segment_meets_triangle(P[b1], P[b2], P[A[:, 0]], P[A[:, 1]], P[A[:, 2]])


def _shared_edge_meet(P, A, B, lone_a, lone_b) -> np.ndarray:
    """(N,) triangles sharing an edge fold onto each other: coplanar, their third vertices on the same side."""
    rows = np.arange(A.shape[0])
    u, w = A[rows, (lone_a + 1) % 3], A[rows, (lone_a + 2) % 3]
    a, b = A[rows, lone_a], B[rows, lone_b]
    coplanar = _orient3d(P[u], P[w], P[a], P[b]) == 0.0
    keep = _drop_axis(P[u], P[w], P[a])
    u2, w2, a2, b2 = (_project(P[x], keep) for x in (u, w, a, b))
    return coplanar & (_orient2d(u2, w2, a2) * _orient2d(u2, w2, b2) > 0.0)


def _pairs_meet(P: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(N,) triangle pairs (index rows A, B (N, 3) into P) intersect beyond what they share (core's rules)."""
    equal = A[:, :, None] == B[:, None, :]  # (N, 3, 3): A's corner i is B's corner j
    shared = equal.sum(axis=(1, 2))
    hit = shared >= 3  # a duplicated face
    apart = np.flatnonzero(shared == 0)
    if apart.size:
        hit[apart] = _edges_meet(P, A[apart], B[apart])
    for count, test in ((1, _shared_vertex_meet), (2, _shared_edge_meet)):
        i = np.flatnonzero(shared == count)
        if not i.size:
            continue
        in_a, in_b = equal[i].any(axis=2), equal[i].any(axis=1)
        # one shared vertex: its corner in A and in B; two: the corner NOT shared in A and in B
        pick_a = np.argmax(in_a if count == 1 else ~in_a, axis=1)
        pick_b = np.argmax(in_b if count == 1 else ~in_b, axis=1)
        hit[i] = test(P, A[i], B[i], pick_a, pick_b)
    return hit


def _crossing_beyond_rounding(P: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(N,) triangle pairs sharing no vertex where an edge of one passes through the other's interior by more than
    rounding: both ends strictly on either side of the plane and the line strictly inside all three edges, each
    determinant beyond ``ROUNDING_MARGIN * L³`` (L the pair's extent). Check Scene names only these: with float
    signs, neighbours on a flat face of a rotated mesh (their determinants rounding noise) would read as
    intersecting, a false refusal; what is within rounding of touching is left to the bake's exact check."""
    apart = ~(A[:, :, None] == B[:, None, :]).any(axis=(1, 2))
    corners = np.concatenate([P[A], P[B]], axis=1)  # (N, 6, 3)
    eps = ROUNDING_MARGIN * np.ptp(corners, axis=1).max(axis=1) ** 3

    def crosses(p, q, a, b, c):
        sp, sq = _orient3d(a, b, c, p), _orient3d(a, b, c, q)
        e = (_orient3d(p, q, a, b), _orient3d(p, q, b, c), _orient3d(p, q, c, a))
        through = ((sp > eps) & (sq < -eps)) | ((sp < -eps) & (sq > eps))
        return through & (np.all([x > eps for x in e], axis=0) | np.all([x < -eps for x in e], axis=0))

    return apart & _edges_meet(P, A, B, crosses)


def _candidate_pairs(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """(K, 2) int64 pairs ``i < j`` of overlapping closed boxes (T, 3): a uniform grid, cell = median box size
    (sorted cell keys; each cell's entries paired, then deduplicated); boxes over many cells by brute force."""
    count = lower.shape[0]
    extent = (upper - lower).max(axis=1)
    origin, span = lower.min(axis=0), (upper.max(axis=0) - lower.min(axis=0)).max()
    h = max(float(np.median(extent)), 1e-9 * float(span), 1e-12)
    lo = np.floor((lower - origin) / h).astype(np.int64)
    hi = np.floor((upper - origin) / h).astype(np.int64)
    dims = hi.max(axis=0) + 1
    while float(np.prod(dims.astype(float))) > 2.0**60:  # keep the linear cell key inside int64
        h *= 2.0
        lo, hi = lo // 2, hi // 2
        dims = hi.max(axis=0) + 1
    size = hi - lo + 1
    cells = np.prod(size, axis=1)
    large = np.flatnonzero(cells > _LARGE_CELLS)
    cells[large] = 0  # tested against every box below, not entered in the grid
    owner = np.repeat(np.arange(count), cells)
    rank = np.arange(owner.size) - np.repeat(np.cumsum(cells) - cells, cells)  # the cell's rank in its box
    sx, sy = size[owner, 0], size[owner, 1]
    ix = lo[owner, 0] + rank % sx
    iy = lo[owner, 1] + (rank // sx) % sy
    iz = lo[owner, 2] + rank // (sx * sy)
    key = (iz * dims[1] + iy) * dims[0] + ix
    order = np.argsort(key, kind="stable")
    key, owner = key[order], owner[order]
    start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    length = np.diff(np.r_[start, key.size])
    # every entry pairs with the later entries of its cell
    later = np.repeat(start + length, length) - np.arange(key.size) - 1
    first = np.repeat(np.arange(key.size), later)
    second = first + 1 + np.arange(first.size) - np.repeat(np.cumsum(later) - later, later)
    i, j = [owner[first]], [owner[second]]
    for t in large:  # a big triangle (a coarse ground) against every box it overlaps
        other = np.flatnonzero(np.all((lower <= upper[t]) & (lower[t] <= upper), axis=1))
        other = other[other != t]
        i.append(np.full(other.size, t))
        j.append(other)
    i, j = np.concatenate(i), np.concatenate(j)
    i, j = np.minimum(i, j), np.maximum(i, j)
    unique = np.unique(i * count + j)
    i, j = unique // count, unique % count
    keep = np.all((lower[i] <= upper[j]) & (lower[j] <= upper[i]), axis=1)
    return np.stack([i[keep], j[keep]], axis=1)


def intersecting_pairs(vertices: np.ndarray, triangles: np.ndarray, skip: np.ndarray | None = None) -> np.ndarray:
    """Triangle pairs that intersect beyond their shared vertices/edges (closed sets: touching counts).

    Args:
        vertices: (V, 3) float64 [m], all surfaces in one array.
        triangles: (T, 3) int64; adjacency is by vertex index. Triangles with a repeated index are ignored.
        skip: optional (T,) bool; pairs of two such triangles are not tested (colliders against colliders).

    Returns:
        (K, 2) int64 triangle indices ``i < j``, sorted.
    """
    P = np.asarray(vertices, dtype=np.float64)
    tris = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    proper = (tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 2] != tris[:, 0])
    index = np.flatnonzero(proper)
    if index.size < 2:
        return np.zeros((0, 2), np.int64)
    corners = P[tris[index]]
    pairs = index[_candidate_pairs(corners.min(axis=1), corners.max(axis=1))]
    if skip is not None:
        pairs = pairs[~(skip[pairs[:, 0]] & skip[pairs[:, 1]])]
    found = [pairs[s : s + _CHUNK][_pairs_meet(P, tris[pairs[s : s + _CHUNK, 0]], tris[pairs[s : s + _CHUNK, 1]])]
             for s in range(0, pairs.shape[0], _CHUNK)]  # fmt: skip
    return np.concatenate(found) if found else np.zeros((0, 2), np.int64)


# Check Scene -------------------------------------------------------------------------------------------------


def _surfaces(view) -> tuple[list, list]:
    """``(objects, [(world vertices (V, 3) [m], triangles (T, 3)), ...])``: the soft meshes as modelled (what IPC
    embeds) and the Mesh colliders' evaluated meshes at the start frame, in world space."""
    from ..ipc.gather import read_evaluated_meshes
    from ..scene import mesh_arrays

    m = view.matrices or {}
    soft = [o for o in view.soft if o.name in m and o.type == "MESH"]
    colliders = [o for o in view.mesh_colliders if o.name in m and o.type == "MESH"]
    local = [mesh_arrays(o.data) for o in soft] + read_evaluated_meshes(view.scene, colliders, view.start)
    surfaces = []
    for obj, (vertices, triangles) in zip(soft + colliders, local, strict=True):
        matrix = m[obj.name]
        surfaces.append(((vertices @ matrix[:3, :3].T + matrix[:3, 3]) * view.metres, triangles))
    return soft + colliders, surfaces


def findings(view, reported: list) -> list:
    """IPC engine: an ERROR per soft mesh that passes through itself and per pair of IPC surfaces (soft meshes,
    Mesh colliders) that pass through each other at the start frame, beyond rounding
    (:func:`_crossing_beyond_rounding`; surfaces that only touch are left to the bake's exact check); an INFO per
    mesh too large to check. ``reported``: findings already made, so a pair named there (by the overlap check) is
    not named twice.
    """
    from .findings import error, info

    if view.engine != "IPC" or not view.matrices:
        return []
    objects, surfaces = _surfaces(view)
    soft_count = sum(1 for o in objects if o in view.soft)
    out, kept, offset = [], [], 0
    parts_v, parts_t, owner = [], [], []
    for k, (obj, (vertices, triangles)) in enumerate(zip(objects, surfaces, strict=True)):
        if triangles.shape[0] > MAX_TRIANGLES:
            what = "self-intersection or intersecting other meshes" if k < soft_count else "intersecting soft bodies"
            message = (
                f"'{obj.name}' has {triangles.shape[0]:,} triangles, more than the {MAX_TRIANGLES:,} Check Scene "
                f"tests, so it is not checked for {what} at the start"
            )
            out.append(info(obj, message, "the bake checks it and refuses an intersecting start"))
            continue
        kept.append(k)
        parts_v.append(vertices)
        parts_t.append(triangles + offset)
        owner.append(np.full(triangles.shape[0], k))
        offset += vertices.shape[0]
    if not kept:
        return out
    owner_of = np.concatenate(owner)
    points, triangles = np.concatenate(parts_v), np.concatenate(parts_t)
    pairs = intersecting_pairs(points, triangles, skip=owner_of >= soft_count)
    pairs = pairs[_crossing_beyond_rounding(points, triangles[pairs[:, 0]], triangles[pairs[:, 1]])]
    hits = sorted({(int(a), int(b)) for a, b in np.sort(owner_of[pairs], axis=1)})
    named = [f.message for f in reported if f.level == "ERROR"]
    start = view.start
    for a, b in hits:
        first, second = objects[a], objects[b]
        refuse = "IPC cannot start from intersecting or touching surfaces and will refuse the bake"
        if a == b:
            fix = "separate or fix the overlapping parts of its mesh (or make them separate objects)"
            out.append(error(first, f"the mesh '{first.name}' intersects itself at frame {start}: {refuse}", fix))
        elif not any(f"'{first.name}'" in text and f"'{second.name}'" in text for text in named):
            message = f"'{first.name}' and '{second.name}' intersect or touch at frame {start}: {refuse}"
            fix = f"move them apart at frame {start} (or change the Start frame)"
            out.append(error(first, message, fix, "location"))
    return out
