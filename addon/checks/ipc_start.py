"""Check Scene's test of the IPC start state: do the IPC surfaces intersect or touch at the start frame?

The IPC bake refuses a start whose surfaces intersect or touch (``core.ipc.frame_loop._check_start``: the exact
checker of :mod:`contact_lab.core.ipc.intersection`, and a float distance of 0 between features of the barrier), but
only in the worker thread, after the scene was read. This module names those starts in Check Scene, on Blender's
main thread, so it is numpy only (no Numba: nothing may compile here). It covers the surfaces whose overlap
:mod:`.physics` can only estimate: soft meshes (each against itself and the others) and Mesh colliders
(against the soft meshes; colliders may overlap each other, as in the engine).

Conventions follow the core's checker: triangles are closed sets, so touching counts as intersecting; two
triangles sharing no vertex intersect iff an edge of one meets the other; within one mesh, neighbours count only
when they overlap beyond their shared vertex (the opposite edge of one meets the other) or shared edge (coplanar,
folded onto each other). Every sign is exact (:func:`_orient3d`, :func:`_orient2d`), so these are the pairs the core
finds on the same points. The bake's points differ from Check Scene's by rounding (they pass through the lattice
and the collider's quaternion), and its barrier reads a float distance: surfaces that touch up to rounding are
named too (:data:`TOUCH_FRACTION`).

Cost (``tests/blender/test_ipc_start_check.py::test_meshes_of_any_size_are_checked`` prints it): about 35–60 µs per
triangle of a closed curved mesh on a 2-core machine (a 20,480-triangle icosphere against itself in 0.7–1.2 s),
80–95 µs per triangle where a mesh is flat (coplanar neighbours need exact arithmetic): every mesh is checked,
whatever its size.
"""

from __future__ import annotations

import numpy as np

TOUCH_FRACTION = 1e-9
"""Two features of a triangle pair (sharing no vertex) closer than this times the pair's size touch: float64
rounds coordinates of size L at about 1e-16 L, so every start the bake reads as touching (a float distance of 0,
or an exact intersection of points that differ from these by rounding) is named, and a gap counts as one from a
nanometre per metre on."""

_LARGE_CELLS = 64
"""Triangles whose box covers more grid cells than this are paired with every box they overlap, not gridded (as
the core's checker does): a ground of two triangles under millimetre-sized ones would fill millions of cells."""

_CHUNK = 200_000
"""Triangle pairs tested per numpy batch (bounds the temporary arrays to some 100 MB)."""


# exact predicates --------------------------------------------------------------------------------------------
# Signs of determinants of float64 points, exact: a float evaluation with a forward error bound (Shewchuk's
# permanent bound, a little wider), then, for the few determinants the bound cannot decide (coplanar neighbours,
# exact touching), the same determinant in Python integers: every float is an integer times a power of two, so
# after scaling a row's coordinates to one common power they are exact integers.

_EPSILON = 2.0**-53
_ORIENT3D_BOUND = (8.0 + 64.0 * _EPSILON) * _EPSILON
"""|float det - det| <= this * permanent for a 3×3 determinant of differences (Shewchuk: (7 + 56ε)ε)."""
_ORIENT2D_BOUND = (4.0 + 32.0 * _EPSILON) * _EPSILON
"""The same for 2×2 determinants (Shewchuk: (3 + 16ε)ε)."""
_TINY = 1e-280
"""Permanents below this may have lost products to underflow, where the bound no longer holds: decided exactly."""


def _as_integers(points: np.ndarray) -> np.ndarray:
    """(N, K, D) float64 -> (N, K, D) Python ints: each row's coordinates times one common power of two, exact."""
    mantissa, exponent = np.frexp(points)
    mantissa = (mantissa * 2.0**53).astype(np.int64)  # |mantissa| < 2^53: exact
    exponent = exponent.astype(np.int64) - 53
    used = mantissa != 0
    lowest = np.where(used, exponent, np.iinfo(np.int64).max).min(axis=(1, 2), keepdims=True)
    shift = np.where(used, exponent - lowest, 0)
    return mantissa.astype(object) << shift.astype(object)


def _sign_of(values: np.ndarray) -> np.ndarray:
    return ((values > 0).astype(np.int8) - (values < 0).astype(np.int8)).astype(np.int8)


def _orient3d(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """(N,) int8 exact sign of ``det[b - a, c - a, d - a]`` of (N, 3) points: +1 when d is on the side abc's
    normal (right hand) points to, 0 when the four are coplanar."""
    u, v, w = b - a, c - a, d - a
    m = (v[:, 1] * w[:, 2], v[:, 2] * w[:, 1], v[:, 2] * w[:, 0], v[:, 0] * w[:, 2], v[:, 0] * w[:, 1],
         v[:, 1] * w[:, 0])  # fmt: skip
    det = u[:, 0] * (m[0] - m[1]) + u[:, 1] * (m[2] - m[3]) + u[:, 2] * (m[4] - m[5])
    permanent = (np.abs(u[:, 0]) * (np.abs(m[0]) + np.abs(m[1])) + np.abs(u[:, 1]) * (np.abs(m[2]) + np.abs(m[3]))
                 + np.abs(u[:, 2]) * (np.abs(m[4]) + np.abs(m[5])))  # fmt: skip
    sign = _sign_of(det)
    unsure = np.flatnonzero((np.abs(det) <= _ORIENT3D_BOUND * permanent) | (permanent < _TINY))
    if unsure.size:
        q = _as_integers(np.stack([a[unsure], b[unsure], c[unsure], d[unsure]], axis=1))
        u, v, w = q[:, 1] - q[:, 0], q[:, 2] - q[:, 0], q[:, 3] - q[:, 0]
        exact = (u[:, 0] * (v[:, 1] * w[:, 2] - v[:, 2] * w[:, 1]) + u[:, 1] * (v[:, 2] * w[:, 0] - v[:, 0] * w[:, 2])
                 + u[:, 2] * (v[:, 0] * w[:, 1] - v[:, 1] * w[:, 0]))  # fmt: skip
        sign[unsure] = _sign_of(exact)
    return sign


def _orient2d(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(N,) int8 exact sign of ``det[b - a, c - a]`` of (N, 2) points (+1: abc counter-clockwise)."""
    left = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1])
    right = (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    sign = _sign_of(left - right)
    sum_ = np.abs(left) + np.abs(right)
    unsure = np.flatnonzero((np.abs(left - right) <= _ORIENT2D_BOUND * sum_) | (sum_ < _TINY))
    if unsure.size:
        q = _as_integers(np.stack([a[unsure], b[unsure], c[unsure]], axis=1))
        sign[unsure] = _sign_of((q[:, 1, 0] - q[:, 0, 0]) * (q[:, 2, 1] - q[:, 0, 1])
                                - (q[:, 1, 1] - q[:, 0, 1]) * (q[:, 2, 0] - q[:, 0, 0]))  # fmt: skip
    return sign


def _projection(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keep (N, 2) int, area (N,) int8)``: the two coordinates of a projection along which triangle abc stays a
    triangle (its largest float normal component first, then the others, as the core's checker) and the exact
    sign of its projected area (0: a zero-area triangle)."""
    axis = np.argmax(np.abs(np.cross(b - a, c - a)), axis=1)
    area = np.zeros(a.shape[0], np.int8)
    keep = np.zeros((a.shape[0], 2), np.int64)
    for turn in range(3):
        todo = np.flatnonzero(area == 0)
        if not todo.size:
            break
        k = (axis[todo] + turn) % 3
        trial = np.stack([(k + 1) % 3, (k + 2) % 3], axis=1)
        keep[todo] = trial
        area[todo] = _orient2d(*(_project(x[todo], trial) for x in (a, b, c)))
    return keep, area


def _project(p: np.ndarray, keep: np.ndarray) -> np.ndarray:
    return np.take_along_axis(p, keep, axis=1)


def _segments_meet_2d(p, q, a, b) -> np.ndarray:
    """(N,) closed 2D segments pq and ab meet (collinear overlap included)."""
    o1, o2 = _orient2d(p, q, a), _orient2d(p, q, b)
    o3, o4 = _orient2d(a, b, p), _orient2d(a, b, q)
    crossing = (o1 * o2 <= 0) & (o3 * o4 <= 0)
    collinear = (o1 == 0) & (o2 == 0)
    lo = np.maximum(np.minimum(p, q), np.minimum(a, b))
    hi = np.minimum(np.maximum(p, q), np.maximum(a, b))
    overlap = np.all(lo <= hi, axis=1)
    return np.where(collinear, overlap, crossing)


def _inside_2d(p, a, b, c, area) -> np.ndarray:
    """(N,) p lies in the closed 2D triangle abc of exact area sign ``area`` (False for a zero-area triangle)."""
    s0, s1, s2 = _orient2d(a, b, p), _orient2d(b, c, p), _orient2d(c, a, p)
    return (area != 0) & (s0 * area >= 0) & (s1 * area >= 0) & (s2 * area >= 0)


def _coplanar_segment_triangle(p, q, a, b, c) -> np.ndarray:
    keep, area = _projection(a, b, c)
    p2, q2, a2, b2, c2 = (_project(x, keep) for x in (p, q, a, b, c))
    hit = _inside_2d(p2, a2, b2, c2, area) | _inside_2d(q2, a2, b2, c2, area)
    for u, w in ((a2, b2), (b2, c2), (c2, a2)):
        hit |= _segments_meet_2d(p2, q2, u, w)
    return hit


def segment_meets_triangle(p, q, a, b, c) -> np.ndarray:
    """(N,) the closed segments pq meet the closed triangles abc (all (N, 3) [m]); touching counts."""
    hit = np.zeros(p.shape[0], bool)
    # a segment meets a triangle only where their closed boxes overlap (exact float comparisons): this spares
    # most of the exact evaluations that nearly coplanar neighbours need
    low = np.maximum(np.minimum(p, q), np.minimum(np.minimum(a, b), c))
    high = np.minimum(np.maximum(p, q), np.maximum(np.maximum(a, b), c))
    boxed = np.flatnonzero(np.all(low <= high, axis=1))
    p, q, a, b, c = p[boxed], q[boxed], a[boxed], b[boxed], c[boxed]
    sp, sq = _orient3d(a, b, c, p), _orient3d(a, b, c, q)
    coplanar = (sp == 0) & (sq == 0)
    i = np.flatnonzero((sp * sq <= 0) & ~coplanar)  # the segment reaches the plane, crossing or ending on it
    if i.size:  # most candidate pairs stop here: both ends strictly on one side
        # where pq crosses abc's plane: inside iff the line pq passes the three edges on the same side
        pi, qi, ai, bi, ci = p[i], q[i], a[i], b[i], c[i]
        e0, e1, e2 = _orient3d(pi, qi, ai, bi), _orient3d(pi, qi, bi, ci), _orient3d(pi, qi, ci, ai)
        hit[boxed[i]] = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
    if np.any(coplanar):
        i = np.flatnonzero(coplanar)
        hit[boxed[i]] = _coplanar_segment_triangle(p[i], q[i], a[i], b[i], c[i])
    return hit


# triangle pairs ----------------------------------------------------------------------------------------------


def _edges_meet(P: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(N,) some edge of triangle A (N, 3 indices) meets triangle B, or the other way round (closed sets, touching
    counts)."""
    hit = np.zeros(A.shape[0], bool)
    for S, T in ((A, B), (B, A)):
        a, b, c = P[T[:, 0]], P[T[:, 1]], P[T[:, 2]]
        for k in range(3):
            hit |= segment_meets_triangle(P[S[:, k]], P[S[:, (k + 1) % 3]], a, b, c)
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
    coplanar = _orient3d(P[u], P[w], P[a], P[b]) == 0
    keep, _ = _projection(P[u], P[w], P[a])
    u2, w2, a2, b2 = (_project(P[x], keep) for x in (u, w, a, b))
    return coplanar & (_orient2d(u2, w2, a2) * _orient2d(u2, w2, b2) > 0)


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


# distances (touching within rounding) ------------------------------------------------------------------------


def _dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", x, y)


def _point_segment_distance2(p, a, b) -> np.ndarray:
    """(N,) squared distance [m²] of points p to closed segments ab (all (N, 3))."""
    e = b - a
    length2 = _dot(e, e)
    t = np.clip(_dot(p - a, e) / np.where(length2 > 0.0, length2, 1.0), 0.0, 1.0)
    r = p - (a + t[:, None] * e)
    return _dot(r, r)


def _point_triangle_distance2(p, a, b, c) -> np.ndarray:
    """(N,) squared distance [m²] of points p to closed triangles abc: to the plane where p projects inside the
    triangle, else to the nearest edge."""
    n = np.cross(b - a, c - a)
    n2 = _dot(n, n)
    inside = n2 > 0.0
    for u, w in ((a, b), (b, c), (c, a)):
        inside &= _dot(np.cross(w - u, p - u), n) >= 0.0
    s = _dot(p - a, n)
    edges = np.minimum.reduce([_point_segment_distance2(p, u, w) for u, w in ((a, b), (b, c), (c, a))])
    return np.where(inside, s * s / np.where(inside, n2, 1.0), edges)


def _interior_segment_distance2(p0, p1, q0, q1) -> np.ndarray:
    """(N,) squared distance [m²] between the lines through p0p1 and q0q1 where their closest points lie strictly
    inside both segments, else +inf. (The segments' distance is this or an endpoint's distance to the other
    segment: :func:`_features_touch` tests those through the vertex-triangle pairs.)"""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e, b = _dot(d1, d1), _dot(d2, d2), _dot(d1, d2)
    c, f = _dot(d1, r), _dot(d2, r)
    denominator = a * e - b * b
    usable = denominator > 1e-12 * a * e  # not parallel
    safe = np.where(usable, denominator, 1.0)
    s, t = (b * f - c * e) / safe, (a * f - b * c) / safe
    interior = usable & (s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0)
    gap = r + s[:, None] * d1 - t[:, None] * d2
    return np.where(interior, _dot(gap, gap), np.inf)


def _plane_heights(P: np.ndarray, T: np.ndarray, S: np.ndarray) -> np.ndarray:
    """(N, 3) signed distances [m] of the corners of triangles S to the planes of triangles T (0 where T has no
    area)."""
    a, b, c = P[T[:, 0]], P[T[:, 1]], P[T[:, 2]]
    n = np.cross(b - a, c - a)
    length = np.sqrt(_dot(n, n))
    n = n / np.where(length > 0.0, length, 1.0)[:, None]
    return np.stack([_dot(P[S[:, k]] - a, n) for k in range(3)], axis=1)


def _one_side(height: np.ndarray, T: np.ndarray, S: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """(N,) the corners of S not shared with T all lie on one side of T's plane, beyond twice ``reach``
    (``height``: :func:`_plane_heights` of S over T)."""
    own = np.all(S[:, :, None] != T[:, None, :], axis=2)  # (N, 3): S's corner is not one of T's
    beyond = np.abs(height) > 2.0 * reach[:, None]
    above, below = np.all(~own | (beyond & (height > 0.0)), axis=1), np.all(~own | (beyond & (height < 0.0)), axis=1)
    return above | below


def _features_touch(P: np.ndarray, A: np.ndarray, B: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """(N,) some vertex of one triangle lies within ``reach`` (N,) [m] of the other triangle, or an edge of one
    within ``reach`` of an edge of the other, among the pairs of features that share no vertex (what the bake's
    barrier measures: a zero distance there refuses the start).

    A segment pair's distance is its interior closest points' or an endpoint's distance to the other segment; an
    endpoint that is not a vertex of the other triangle is already tested against the whole triangle (closer), so
    only endpoints that are the other triangle's third vertex add a point-segment test. Features farther than
    twice ``reach`` from the other triangle's plane (float heights, whose error is some 1e-16 of the size), or whose
    boxes are more than ``reach`` apart, are skipped: on a curved mesh almost all of them, on a flat one most."""
    near = np.zeros(A.shape[0], bool)
    reach2, far = reach * reach, 2.0 * reach[:, None]
    height_b, height_a = _plane_heights(P, A, B), _plane_heights(P, B, A)  # B's corners over A's plane and back
    corners_a, corners_b = P[A], P[B]  # (N, 3, 3)
    for S, T, height, box in ((A, B, height_a, corners_b), (B, A, height_b, corners_a)):
        low, high = box.min(axis=1) - reach[:, None], box.max(axis=1) + reach[:, None]
        for k in range(3):
            v = S[:, k]
            boxed = np.all((low <= P[v]) & (P[v] <= high), axis=1)
            i = np.flatnonzero(~near & boxed & (np.abs(height[:, k]) <= far[:, 0]) & np.all(v[:, None] != T, axis=1))
            near[i] |= _point_triangle_distance2(P[v[i]], P[T[i, 0]], P[T[i, 1]], P[T[i, 2]]) <= reach2[i]
    for j in range(3):
        for k in range(3):
            a0, a1, b0, b1 = A[:, j], A[:, (j + 1) % 3], B[:, k], B[:, (k + 1) % 3]
            free = (a0 != b0) & (a0 != b1) & (a1 != b0) & (a1 != b1)
            # an edge whose two ends are on one side of the other triangle's plane, beyond reach, is beyond reach
            apart_a = (height_a[:, j] * height_a[:, (j + 1) % 3] > 0.0) & (
                np.minimum(np.abs(height_a[:, j]), np.abs(height_a[:, (j + 1) % 3])) > far[:, 0]
            )
            apart_b = (height_b[:, k] * height_b[:, (k + 1) % 3] > 0.0) & (
                np.minimum(np.abs(height_b[:, k]), np.abs(height_b[:, (k + 1) % 3])) > far[:, 0]
            )
            pa, pb = corners_a[:, [j, (j + 1) % 3]], corners_b[:, [k, (k + 1) % 3]]  # (N, 2, 3)
            boxed = np.all((pa.min(axis=1) <= pb.max(axis=1) + reach[:, None])
                           & (pb.min(axis=1) <= pa.max(axis=1) + reach[:, None]), axis=1)  # fmt: skip
            i = np.flatnonzero(~near & free & boxed & ~apart_a & ~apart_b)
            p0, p1, q0, q1 = P[a0[i]], P[a1[i]], P[b0[i]], P[b1[i]]
            d2 = _interior_segment_distance2(p0, p1, q0, q1)
            # an endpoint that is the other triangle's third vertex (shared with the triangle, not the edge)
            for end, seg0, seg1, other in ((a0, q0, q1, B), (a1, q0, q1, B), (b0, p0, p1, A), (b1, p0, p1, A)):
                third = np.any(end[i][:, None] == other[i], axis=1)
                if third.any():
                    d2 = np.where(third, np.minimum(d2, _point_segment_distance2(P[end[i]], seg0, seg1)), d2)
            near[i] |= d2 <= reach2[i]
    return near


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


def _tested_pairs(vertices, triangles, skip, reach: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(P (V, 3) float64, tris (T, 3) int64, pairs (K, 2))``: triangle pairs whose boxes, grown by ``reach`` [m],
    overlap; triangles with a repeated index left out, pairs of two ``skip`` triangles too."""
    P = np.asarray(vertices, dtype=np.float64)
    tris = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    proper = (tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 2] != tris[:, 0])
    index = np.flatnonzero(proper)
    if index.size < 2:
        return P, tris, np.zeros((0, 2), np.int64)
    corners = P[tris[index]]
    pairs = index[_candidate_pairs(corners.min(axis=1) - reach, corners.max(axis=1) + reach)]
    if skip is not None:
        pairs = pairs[~(skip[pairs[:, 0]] & skip[pairs[:, 1]])]
    return P, tris, pairs


def _select(pairs: np.ndarray, test) -> np.ndarray:
    """The rows of ``pairs`` (K, 2) for which ``test(first (k, ), second (k, ))`` holds, in chunks."""
    found = [chunk[test(chunk[:, 0], chunk[:, 1])] for chunk in np.split(pairs, range(_CHUNK, len(pairs), _CHUNK))]
    return np.concatenate(found) if found else np.zeros((0, 2), np.int64)


def intersecting_pairs(vertices: np.ndarray, triangles: np.ndarray, skip: np.ndarray | None = None) -> np.ndarray:
    """Triangle pairs that intersect beyond their shared vertices/edges (closed sets: touching counts), decided
    with exact signs: the same pairs as the core's checker finds on the same points.

    Args:
        vertices: (V, 3) float64 [m], all surfaces in one array.
        triangles: (T, 3) int64; adjacency is by vertex index. Triangles with a repeated index are ignored.
        skip: optional (T,) bool; pairs of two such triangles are not tested (colliders against colliders).

    Returns:
        (K, 2) int64 triangle indices ``i < j``, sorted.
    """
    P, tris, pairs = _tested_pairs(vertices, triangles, skip, 0.0)
    return _select(pairs, lambda i, j: _pairs_meet(P, tris[i], tris[j]))


def conflicting_pairs(vertices: np.ndarray, triangles: np.ndarray, skip: np.ndarray | None = None) -> np.ndarray:
    """Triangle pairs from which IPC cannot start: they intersect (:func:`intersecting_pairs`), or two of their
    features sharing no vertex lie within ``TOUCH_FRACTION`` of the pair's size of each other (surfaces that touch,
    up to rounding: the bake's float distance may read them as 0, and points that differ from the bake's by
    rounding may intersect there). Arguments and result as :func:`intersecting_pairs`."""
    P = np.asarray(vertices, dtype=np.float64)
    reach = TOUCH_FRACTION * float(np.ptp(P, axis=0).max()) if P.shape[0] else 0.0
    P, tris, pairs = _tested_pairs(P, triangles, skip, reach)

    def conflict(i, j):
        A, B = tris[i], tris[j]
        hit = _pairs_meet(P, A, B)
        reach = TOUCH_FRACTION * np.ptp(np.concatenate([P[A], P[B]], axis=1), axis=1).max(axis=1)
        # a pair sharing at most a vertex whose other corners are all beyond twice the reach on one side of the
        # other triangle's plane, both ways, has no features within reach: each feature pair sharing no vertex
        # has a vertex or an edge of such corners (a curved mesh: most pairs). Not so across a shared edge: the
        # two edges leaving it keep a shared end each, and a sliver's end may lie on the other edge
        clear = _one_side(_plane_heights(P, A, B), A, B, reach) & _one_side(_plane_heights(P, B, A), B, A, reach)
        clear &= (A[:, :, None] == B[:, None, :]).sum(axis=(1, 2)) < 2
        rest = np.flatnonzero(~hit & ~clear)
        hit[rest] = _features_touch(P, A[rest], B[rest], reach[rest])
        return hit

    return _select(pairs, conflict)


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
    """IPC engine: an ERROR per soft mesh that passes through or touches itself and per pair of IPC surfaces (soft
    meshes, Mesh colliders) that pass through or touch each other at the start frame (:func:`conflicting_pairs`).
    ``reported``: findings already made, so a pair named there (by the overlap check) is not named twice.
    """
    from .findings import error

    if view.engine != "IPC" or not view.matrices:
        return []
    objects, surfaces = _surfaces(view)
    if not objects:
        return []
    soft_count = sum(1 for o in objects if o in view.soft)
    out, offset = [], 0
    parts_v, parts_t, owner = [], [], []
    for k, (vertices, triangles) in enumerate(surfaces):
        parts_v.append(vertices)
        parts_t.append(triangles + offset)
        owner.append(np.full(triangles.shape[0], k))
        offset += vertices.shape[0]
    owner_of = np.concatenate(owner)
    points, triangles = np.concatenate(parts_v), np.concatenate(parts_t)
    pairs = conflicting_pairs(points, triangles, skip=owner_of >= soft_count)
    hits = sorted({(int(a), int(b)) for a, b in np.sort(owner_of[pairs], axis=1)})
    named = [f.message for f in reported if f.level == "ERROR"]
    start = view.start
    for a, b in hits:
        first, second = objects[a], objects[b]
        refuse = "IPC cannot start from intersecting or touching surfaces and will refuse the bake"
        if a == b:
            fix = "separate or fix the overlapping parts of its mesh (or make them separate objects)"
            message = f"the mesh '{first.name}' intersects or touches itself at frame {start}: {refuse}"
            out.append(error(first, message, fix))
        elif not any(f"'{first.name}'" in text and f"'{second.name}'" in text for text in named):
            message = f"'{first.name}' and '{second.name}' intersect or touch at frame {start}: {refuse}"
            fix = f"move them apart at frame {start} (or change the Start frame)"
            out.append(error(first, message, fix, "location"))
    return out
