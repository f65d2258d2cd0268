"""Contact candidates of mesh pairs and their reduction to a bounded manifold (MESH shapes, both modes).

One job: the buffers every MESH pair kernel (``mesh_contacts``: passive meshes through their BVH;
``sdf_contacts``: active meshes through their signed distance field) collects its contact candidates in, and
the reduction of those candidates to at most ``MESH_MANIFOLD_MAX`` contacts per pair with the conventions of
``contact_common`` (normal from the first shape to the second, signed gap phi [m], midpoint, feature ids).

A mesh pair can touch at hundreds of places (triangles, samples). The kept set is the deepest candidate, then
greedily the candidate farthest from those already kept (farthest-point sampling, the "deepest + spread" idea of
Bullet's and Newton's manifold reduction, written anew), so a resting mesh keeps its outermost support points
(a cube's corners) and no two kept contacts coincide. When the buffer fills up it is reduced in place and
collection goes on, so any number of candidates costs bounded memory. Feature ids come from the candidate's
source (triangle, sample or vertex number) and are made unique within the pair by probing upward, as in
``convex_contacts.emit_manifold``.

:class:`MeshScratch` is allocated once per mesh pass of ``generate_contacts`` (no allocation per pair or contact); its
:class:`Candidates` arrays have the dtypes of the narrow phase's output, so the convex kernel writes into them
directly. Compile time: the helpers take the few arrays they need (Numba re-optimises a callee's code in every
caller it is linked into, and every array of a tuple argument costs code), and the small per-candidate steps
are inlined.
"""

import math
from typing import NamedTuple

import numpy as np

from ...jit import njit_kernel
from ...math.vec import vec3
from ..hull import HullArrays
from .contact_common import FEATURE_MAX, emit_contact

MESH_MANIFOLD_MAX = 8
"""Contacts kept per mesh pair."""

CANDIDATE_CAPACITY = 96
"""Candidates collected before an in-place reduction (at least MESH_MANIFOLD_MAX + the largest batch added)."""

CANDIDATE_RESERVE = 8
"""Free slots kept for one batch (the convex kernel emits at most 4 contacts per triangle)."""

TRIANGLE_BATCH = 256
"""Triangles gathered per BVH traversal call."""

STACK_MAX = 128
"""BVH traversal stack (the trees are median splits: depth ~ log2 of the triangle count)."""

_SAME_POINT = 1.0e-6
"""Candidates closer than this [x pair size] are one contact."""

_TIE = 1.0e-9
"""Candidates within this depth [x pair size] of the deepest are equally deep."""

_SUPPORT = 0.25
"""Candidates within this fraction of the margin of the deepest are spread first (the ones bearing load)."""


class Candidates(NamedTuple):
    """Contact candidates of one mesh pair (see :func:`allocate_mesh_scratch`)."""

    source: np.ndarray
    """Source of each candidate (triangle, sample or vertex id), shape (CANDIDATE_CAPACITY,), int32."""
    point: np.ndarray
    """Candidate contact points [m], shape (CANDIDATE_CAPACITY, 3)."""
    normal: np.ndarray
    """Candidate unit normals (first shape of the kernel to the second), shape (CANDIDATE_CAPACITY, 3)."""
    gap: np.ndarray
    """Candidate gaps [m], shape (CANDIDATE_CAPACITY,)."""
    feature: np.ndarray
    """Candidate feature ids in [0, FEATURE_MAX), shape (CANDIDATE_CAPACITY,), int32."""
    counts: np.ndarray
    """[stored, dropped], shape (2,), int64 (the layout ``emit_contact`` appends to)."""
    spread: np.ndarray
    """Squared distance of each candidate to the kept set during reduction [m^2], (CANDIDATE_CAPACITY,)."""
    chosen: np.ndarray
    """Kept candidate indices, shape (MESH_MANIFOLD_MAX,), int64."""
    settings: np.ndarray
    """The pair's margin and size [m] (set by :func:`begin_candidates`), shape (2,)."""


class MeshScratch(NamedTuple):
    """Buffers of the mesh pair kernels (see :func:`allocate_mesh_scratch`)."""

    stack: np.ndarray
    """BVH traversal stack, shape (STACK_MAX,), int32."""
    query_stack: np.ndarray
    """Stack of the point queries made while a traversal is under way (nearest triangle, winding number)."""
    triangles: np.ndarray
    """Triangles of one traversal batch (global ids), shape (TRIANGLE_BATCH,), int32."""
    cand: Candidates
    """The pair's contact candidates."""
    tri_hulls: HullArrays
    """Hull 0: the triangle being tested, as a flat 3-vertex hull (world frame about its centroid, a front and a
    back face); hull 1: a copy of the other shape's hull, so both live in one ``HullArrays`` for GJK/EPA."""
    tri_params: np.ndarray
    """``shape_params`` of the triangle hull (bounding radius), shape (3,)."""
    tri_pos: np.ndarray
    """Its origin: the triangle's centroid [m], shape (3,)."""
    tri_rot: np.ndarray
    """Its frame: the identity, shape (3, 3)."""
    vertex_stamp: np.ndarray
    """Pair (plus one) that last evaluated each mesh vertex against a field, shape (V,), int64."""
    vertex_phi: np.ndarray
    """That evaluation [m], shape (V,): a vertex shared by several triangles is evaluated once per pair."""


@njit_kernel
def allocate_mesh_scratch(hulls, meshes):
    """A fresh :class:`MeshScratch` whose hull copy holds the largest hull of ``hulls`` and whose vertex arrays
    cover every vertex of ``meshes`` (a :class:`~..mesh.MeshArrays`)."""
    vmax = fmax = kmax = emax = 0
    for h in range(hulls.hull_vert_start.shape[0] - 1):
        vmax = max(vmax, hulls.hull_vert_start[h + 1] - hulls.hull_vert_start[h])
        f0, f1 = hulls.hull_face_start[h], hulls.hull_face_start[h + 1]
        fmax = max(fmax, f1 - f0)
        kmax = max(kmax, hulls.hull_face_vert_start[f1] - hulls.hull_face_vert_start[f0])
        emax = max(emax, hulls.hull_edge_start[h + 1] - hulls.hull_edge_start[h])
    tri_hulls = HullArrays(
        np.zeros(3, np.int32),
        np.zeros((3 + vmax, 3)),
        np.zeros(3, np.int32),
        np.zeros((2 + fmax, 4)),
        np.zeros(3 + fmax, np.int32),
        np.zeros(6 + kmax, np.int32),
        np.zeros(3, np.int32),
        np.zeros((3 + emax, 2), np.int32),
    )
    # the triangle's fixed layout: vertices 0-2, front face (0, 1, 2), back face (0, 2, 1), edges 01, 12, 02
    tri_hulls.hull_vert_start[1] = tri_hulls.hull_vert_start[2] = 3
    tri_hulls.hull_face_start[1] = tri_hulls.hull_face_start[2] = 2
    tri_hulls.hull_face_vert_start[1] = 3
    tri_hulls.hull_face_vert_start[2] = 6
    for i in range(3):
        tri_hulls.hull_face_verts[i] = i  # front (0, 1, 2)
        tri_hulls.hull_face_verts[3 + i] = (3 - i) % 3  # back (0, 2, 1)
        tri_hulls.hull_edges[i, 0] = i // 2  # (0, 1), (1, 2), (0, 2)
        tri_hulls.hull_edges[i, 1] = min(i + 1, 2)
    tri_hulls.hull_edge_start[1] = tri_hulls.hull_edge_start[2] = 3
    cand = Candidates(
        np.zeros(CANDIDATE_CAPACITY, np.int32),
        np.zeros((CANDIDATE_CAPACITY, 3)),
        np.zeros((CANDIDATE_CAPACITY, 3)),
        np.zeros(CANDIDATE_CAPACITY),
        np.zeros(CANDIDATE_CAPACITY, np.int32),
        np.zeros(2, np.int64),
        np.zeros(CANDIDATE_CAPACITY),
        np.zeros(MESH_MANIFOLD_MAX, np.int64),
        np.zeros(2),
    )
    tri_rot = np.zeros((3, 3))
    for i in range(3):
        tri_rot[i, i] = 1.0
    vertex_count = meshes.mesh_verts.shape[0]
    return MeshScratch(
        np.zeros(STACK_MAX, np.int32),
        np.zeros(STACK_MAX, np.int32),
        np.zeros(TRIANGLE_BATCH, np.int32),
        cand,
        tri_hulls,
        np.zeros(3),
        np.zeros(3),
        tri_rot,
        np.zeros(vertex_count, np.int64),
        np.zeros(vertex_count),
    )


@njit_kernel
def copy_hull(hulls, hull, T):
    """Copy hull ``hull`` of ``hulls`` into slot 1 of ``T`` (a ``MeshScratch.tri_hulls``, after the triangle)."""
    v0, v1 = hulls.hull_vert_start[hull], hulls.hull_vert_start[hull + 1]
    f0, f1 = hulls.hull_face_start[hull], hulls.hull_face_start[hull + 1]
    e0, e1 = hulls.hull_edge_start[hull], hulls.hull_edge_start[hull + 1]
    shift = 3 - v0
    for v in range(v0, v1):
        for c in range(3):
            T.hull_verts[v + shift, c] = hulls.hull_verts[v, c]
    T.hull_vert_start[2] = 3 + v1 - v0
    k = 6
    for f in range(f0, f1):
        for c in range(4):
            T.hull_face_plane[2 + f - f0, c] = hulls.hull_face_plane[f, c]
        for i in range(hulls.hull_face_vert_start[f], hulls.hull_face_vert_start[f + 1]):
            T.hull_face_verts[k] = hulls.hull_face_verts[i] + shift
            k += 1
        T.hull_face_vert_start[3 + f - f0] = k
    T.hull_face_start[2] = 2 + f1 - f0
    for e in range(e0, e1):
        T.hull_edges[3 + e - e0, 0] = hulls.hull_edges[e, 0] + shift
        T.hull_edges[3 + e - e0, 1] = hulls.hull_edges[e, 1] + shift
    T.hull_edge_start[2] = 3 + e1 - e0


@njit_kernel(inline="always")
def candidate_out(C):
    """The candidate buffers as the ``out`` tuple of ``emit_contact`` (and of the convex kernel)."""
    return (C.source, C.point, C.normal, C.gap, C.feature, C.counts)


@njit_kernel(inline="always")
def begin_candidates(C, margin, scale):
    """Empty the candidate buffers for a new pair with contact ``margin`` and size ``scale`` [m]."""
    C.counts[0] = 0
    C.counts[1] = 0
    C.settings[0] = margin
    C.settings[1] = max(scale, 1.0e-9)


@njit_kernel(inline="always")
def make_room(C):
    """Reduce the candidates in place when fewer than CANDIDATE_RESERVE slots are free."""
    if C.counts[0] > CANDIDATE_CAPACITY - CANDIDATE_RESERVE:
        reduce_candidates(C)


@njit_kernel
def push_candidate(C, source, point, normal, gap, feature):
    """Add one candidate (point, unit normal, gap [m], feature id); reduces the buffer first when it is full."""
    if C.counts[0] > CANDIDATE_CAPACITY - CANDIDATE_RESERVE:
        reduce_candidates(C)
    c = C.counts[0]
    C.source[c] = source
    for k in range(3):
        C.point[c, k] = point[k]
        C.normal[c, k] = normal[k]
    C.gap[c] = gap
    C.feature[c] = feature
    C.counts[0] = c + 1


@njit_kernel(inline="always")
def feature_id(source, local):
    """Feature id in [1, FEATURE_MAX) of a candidate from ``source`` (triangle, sample, vertex) and a local code."""
    return 1 + (np.int64(source) * 61 + np.int64(local) * 7) % (FEATURE_MAX - 1)


@njit_kernel(inline="always")
def _area(point, i, j, k, n):
    """Twice the signed area of candidates (i, j, k) about the unit direction n."""
    ax, ay, az = point[j, 0] - point[i, 0], point[j, 1] - point[i, 1], point[j, 2] - point[i, 2]
    bx, by, bz = point[k, 0] - point[i, 0], point[k, 1] - point[i, 1], point[k, 2] - point[i, 2]
    return (ay * bz - az * by) * n[0] + (az * bx - ax * bz) * n[1] + (ax * by - ay * bx) * n[2]


@njit_kernel
def _quadrilateral(C, count, first, limit, tiny):
    """From the deepest candidate ``first``: the supporting candidates (gap <= ``limit``) spanning the largest
    quadrilateral about its normal, into ``C.chosen[:kept]``, counter-clockwise; returns ``kept`` (1 to 4)."""
    point, gap, chosen = C.point, C.gap, C.chosen
    n = (C.normal[first, 0], C.normal[first, 1], C.normal[first, 2])
    chosen[0] = first
    kept = 1
    # the quadrilateral of largest area about n
    far, best = -1, tiny
    for i in range(count):
        d = (point[i, 0] - point[first, 0], point[i, 1] - point[first, 1], point[i, 2] - point[first, 2])
        across = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] - (d[0] * n[0] + d[1] * n[1] + d[2] * n[2]) ** 2
        if gap[i] <= limit and across > best:
            far, best = i, across
    if far >= 0:
        chosen[1] = far
        kept = 2
        third, best = -1, tiny
        for i in range(count):
            if gap[i] <= limit and abs(_area(point, first, far, i, n)) > best:
                third, best = i, abs(_area(point, first, far, i, n))
        if third >= 0:
            ccw = _area(point, first, far, third, n) > 0.0
            chosen[1] = far if ccw else third
            chosen[2] = third if ccw else far
            kept = 3
            fourth, best = -1, tiny
            for i in range(count):
                outside = 0.0
                for k in range(3):
                    outside = max(outside, -_area(point, chosen[k], chosen[(k + 1) % 3], i, n))
                if gap[i] <= limit and outside > best:
                    fourth, best = i, outside
            if fourth >= 0:
                chosen[3] = fourth
                kept = 4
    return kept


@njit_kernel
def _move_to_front(C, kept):
    """Move the candidates ``C.chosen[:kept]`` to the front of C's arrays, in that order."""
    gap, point, chosen = C.gap, C.point, C.chosen
    # a swap moves the candidate at k to i
    for k in range(kept):
        i = chosen[k]
        if i != k:
            C.source[k], C.source[i] = C.source[i], C.source[k]
            gap[k], gap[i] = gap[i], gap[k]
            C.feature[k], C.feature[i] = C.feature[i], C.feature[k]
            for c in range(3):
                point[k, c], point[i, c] = point[i, c], point[k, c]
                C.normal[k, c], C.normal[i, c] = C.normal[i, c], C.normal[k, c]
        for j in range(k + 1, kept):
            if chosen[j] == k:
                chosen[j] = i


@njit_kernel
def reduce_candidates(C):
    """Keep at most MESH_MANIFOLD_MAX candidates, moved to the front in the order kept; returns how many.

    Among the supporting candidates (within a quarter margin of the deepest): the deepest (among equally deep
    ones the farthest from their centre), the farthest from it across its normal n, the one making the largest
    triangle with them and the one adding the largest area outside it (Bullet's and Jolt's quadrilateral,
    written anew); then greedily the farthest from those kept, supporting candidates first, then any. None
    closer than ``_SAME_POINT`` x size to another.
    """
    count = C.counts[0]
    if count == 0:
        return 0
    gap, point, spread, chosen = C.gap, C.point, C.spread, C.chosen
    least = gap[0]
    centre = (0.0, 0.0, 0.0)
    for i in range(count):
        least = min(least, gap[i])
        centre = (centre[0] + point[i, 0], centre[1] + point[i, 1], centre[2] + point[i, 2])
    centre = (centre[0] / count, centre[1] / count, centre[2] / count)
    tiny = (_SAME_POINT * C.settings[1]) ** 2
    limit = least + _SUPPORT * C.settings[0]
    first = np.int64(0)  # not the literal 0: _quadrilateral would be compiled for Literal[int](0) too
    best = -1.0
    for i in range(count):
        if gap[i] <= least + _TIE * C.settings[1]:
            d = (point[i, 0] - centre[0]) ** 2 + (point[i, 1] - centre[1]) ** 2 + (point[i, 2] - centre[2]) ** 2
            if d > best:
                best, first = d, i
    kept = _quadrilateral(C, count, first, limit, tiny)
    # then the farthest from those kept
    for i in range(count):
        spread[i] = math.inf
        for k in range(kept):
            c = chosen[k]
            d2 = (point[i, 0] - point[c, 0]) ** 2 + (point[i, 1] - point[c, 1]) ** 2 + (point[i, 2] - point[c, 2]) ** 2
            spread[i] = min(spread[i], d2)
    for _ in range(2):  # the supporting candidates first, then all
        while kept < MESH_MANIFOLD_MAX:
            far, best = -1, tiny
            for i in range(count):
                if gap[i] <= limit and spread[i] > best:
                    best, far = spread[i], i
            if far < 0:
                break
            chosen[kept] = far
            kept += 1
            for i in range(count):
                d2 = (point[i, 0] - point[far, 0]) ** 2 + (point[i, 1] - point[far, 1]) ** 2 + (
                    point[i, 2] - point[far, 2]) ** 2  # fmt: skip
                spread[i] = min(spread[i], d2)
        limit = math.inf
    _move_to_front(C, kept)
    C.counts[0] = kept
    return kept


@njit_kernel
def emit_mesh_manifold(out, pair_index, sgn, C):
    """Reduce the pair's candidates with gap <= margin and emit them (normal times ``sgn``) with unique ids."""
    kept = 0
    for i in range(C.counts[0]):
        if C.gap[i] <= C.settings[0]:
            C.source[kept] = C.source[i]
            C.gap[kept] = C.gap[i]
            C.feature[kept] = C.feature[i]
            for c in range(3):
                C.point[kept, c] = C.point[i, c]
                C.normal[kept, c] = C.normal[i, c]
            kept += 1
    C.counts[0] = kept
    kept = reduce_candidates(C)
    for k in range(kept):
        feature = C.feature[k]
        clash = True
        while clash:
            clash = False
            for j in range(k):
                if C.feature[j] == feature:
                    clash = True
                    feature = 1 + feature % (FEATURE_MAX - 1)
        C.feature[k] = feature
        emit_contact(out, pair_index, vec3(C.point[k]), vec3(C.normal[k]), sgn, C.gap[k], np.int64(feature))
