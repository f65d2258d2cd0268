"""Contact manifolds of convex shape pairs: cylinders, cones and hulls against every convex shape and the plane.

One job: turn the signed distance of two convex shapes (``gjk_epa.convex_separation``, seed 000 §2.1.3
"Alternatives: GJK (+EPA)") into at most 4 contacts that keep a resting shape from rocking, with the conventions
of ``contact_common`` (normal from the first shape to the second, signed gap phi [m], midpoint contact point,
feature ids in [0, FEATURE_MAX)).

``collide_convex_convex`` (any two of sphere, box, capsule, cylinder, cone, hull; at least one of the last three):

1. GJK/EPA on the cores (sphere and capsule: point and segment, their radii added afterwards, so those are exact)
   gives the normal n, the gap phi = distance - radii and the witness points; the witness contact (id 0) is the
   exact deepest (or closest) point.
2. Reference face (seed §2.1.3): the face of A along +n or of B along -n best aligned with the normal (A wins
   ties), if within ``FEATURE_COS``. The other shape's incident feature facing it (``support.incident_feature``)
   is clipped against the reference face's side planes (Sutherland-Hodgman); each clipped point x within margin
   gives a contact with the gap measured along n to the reference plane ``n_f . y = c_f``:
   ``phi = s (n_f . x - c_f) / (n_f . n)`` (s = +1 if the face is A's, -1 if B's), never below the exact phi.
3. No reference face: two parallel supporting edges (``support.edge_feature``) give the two ends of their
   overlap, anything else only the witness.
4. Reduction to 4: the deepest (the witness unless a clipped point is as deep), the farthest from it, then the
   two that add the largest area (Bullet's and Jolt's idea, written anew).

``collide_plane_convex``: the support point along the plane's inward normal is the exact deepest point; the
incident feature's vertices within margin join it, reduced the same way.
"""

from typing import NamedTuple

import numpy as np

from ...jit import njit_kernel
from ...math.vec import axpy3, column3, cross3, dot3, midpoint3, norm3, scale3, sub3, vec3
from .contact_common import FEATURE_MAX, emit_contact
from .gjk_epa import SeparationScratch, allocate_separation_scratch, convex_separation
from .support import (
    CONVEX,
    FEATURE_COS,
    FEATURE_SIN,
    POLY_MAX,
    edge_feature,
    face_feature,
    incident_feature,
    support_core,
)

__all__ = [
    "CANDIDATE_MAX",
    "CLIP_MAX",
    "ConvexScratch",
    "MANIFOLD_MAX",
    "allocate_convex_scratch",
    "collide_convex_convex",
    "collide_plane_convex",
    "emit_manifold",
    "point_feature_id",
]

CLIP_MAX = 2 * POLY_MAX + 2
"""Clipped polygon capacity: each of at most POLY_MAX side planes adds at most one vertex."""

CANDIDATE_MAX = CLIP_MAX + 1
"""Contact candidates of one pair before reduction (clipped points and the witness)."""

MANIFOLD_MAX = 4
"""Contacts kept per pair."""

_CLIP_SLOP = 1.0e-3
"""Incident points this far [x reference shape size] outside a side plane are kept, so a shape resting on an
equal face keeps its corner contacts (and their ids) under sub-millimetre jitter, as in box-box."""

_TIE = 1.0e-9
"""A clipped point within this depth [x pair size] of the witness stands for the deepest point (and keeps its id)."""

_SAME_POINT = 1.0e-6
"""Candidates closer than this [x pair size] across the normal are one contact."""

_REF_BIAS = 1.0e-6
"""B's face must be better aligned than A's by this [cos] to become the reference (stable choice on ties)."""
SMALL_FACET = 0.2
"""A hull face spanning less than this share of its hull's size (``ConvexShape.scale``) is a facet of a finely
faceted body (an icosphere's): the manifold takes only its corners that touch (``FACET_TOUCH``). Its far corners,
speculative contacts a facet's length ahead within the margin, stopped a rolling icosphere at every step (a level-5
icosphere rolled down 20° 5 % slower than its ball). A level-1 icosphere's faces (a rock's) span about half of it."""
FACET_TOUCH = 1.0e-4
"""A fine facet's corners join the manifold within this share of its hull's size of the deepest point [-]."""


class ConvexScratch(NamedTuple):
    """Feature, clipping and candidate buffers of the convex narrow phase (allocated once per call)."""

    separation: SeparationScratch
    """GJK/EPA buffers."""
    poly_a: np.ndarray
    """Feature polygon of the first shape, shape (POLY_MAX, 3) [m]."""
    ids_a: np.ndarray
    """Its shape-local vertex ids, shape (POLY_MAX,), int64."""
    poly_b: np.ndarray
    """Feature polygon of the second shape, shape (POLY_MAX, 3) [m]."""
    ids_b: np.ndarray
    """Its shape-local vertex ids, shape (POLY_MAX,), int64."""
    clip_pos: np.ndarray
    """Sutherland-Hodgman ping-pong buffers, shape (2, CLIP_MAX, 3) [m]."""
    clip_tag: np.ndarray
    """Per clipped vertex (edge or vertex code, side code or -1, outgoing edge code), shape (2, CLIP_MAX, 3)."""
    cand_pos: np.ndarray
    """Candidate contact points, shape (CANDIDATE_MAX, 3) [m]."""
    cand_gap: np.ndarray
    """Their gaps, shape (CANDIDATE_MAX,) [m]."""
    cand_id: np.ndarray
    """Their feature ids, shape (CANDIDATE_MAX,), int64."""
    chosen: np.ndarray
    """Indices of the kept candidates, shape (MANIFOLD_MAX,), int64."""


@njit_kernel
def allocate_convex_scratch():
    """A fresh :class:`ConvexScratch`."""
    return ConvexScratch(
        allocate_separation_scratch(),
        np.zeros((POLY_MAX, 3)),
        np.zeros(POLY_MAX, np.int64),
        np.zeros((POLY_MAX, 3)),
        np.zeros(POLY_MAX, np.int64),
        np.zeros((2, CLIP_MAX, 3)),
        np.zeros((2, CLIP_MAX, 3), np.int64),
        np.zeros((CANDIDATE_MAX, 3)),
        np.zeros(CANDIDATE_MAX),
        np.zeros(CANDIDATE_MAX, np.int64),
        np.zeros(MANIFOLD_MAX, np.int64),
    )


# ---------------------------------------------------------------------------------------------------------------
# Feature ids
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel(inline="always")
def point_feature_id(code, side):
    """Feature id in [1, FEATURE_MAX) of a clipped point; 0 is the witness.

    ``side < 0``: an incident vertex with shape-local id ``code`` -> [1, 128). Otherwise the crossing of an edge
    with the reference side plane ``side``: an incident edge (``code >= 0``, its first vertex id) -> [128, 192),
    a reference side edge (``code = -2 - side'``, i.e. a reference corner) -> [192, 256).
    """
    if side < 0:
        return 1 + code % 127
    if code >= 0:
        return 128 + (37 * code + 11 * side) % 64
    return 192 + (37 * (-2 - code) + 11 * side) % 64


@njit_kernel(inline="always")
def _add_candidate(S, count, x, gap, feature):
    """Append a candidate (point, gap, id); returns the new count (drops it when the buffer is full)."""
    if count >= CANDIDATE_MAX:
        return count
    for c in range(3):
        S.cand_pos[count, c] = x[c]
    S.cand_gap[count] = gap
    S.cand_id[count] = feature
    return count + 1


# ---------------------------------------------------------------------------------------------------------------
# Clipping against the reference face
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel(inline="always")
def _side_plane(ref, i, count, n_ref):
    """Side plane of reference edge i: a point on it and its inward normal ``n_f x (r_{i+1} - r_i)`` (unit)."""
    j = i + 1 if i + 1 < count else 0
    r0 = (ref[i, 0], ref[i, 1], ref[i, 2])
    m = cross3(n_ref, sub3((ref[j, 0], ref[j, 1], ref[j, 2]), r0))
    length = norm3(m)
    return r0, (scale3(m, 1.0 / length) if length > 0.0 else m)


@njit_kernel
def _clip_by_plane(src, src_tag, count, p0, m, slop, side, dst, dst_tag):
    """Sutherland-Hodgman: the part of polygon ``src[:count]`` with ``(x - p0) . m >= -slop``; returns its count.

    A crossing point is tagged (code of the edge it lies on, ``side``); its outgoing edge is the side plane
    (code ``-2 - side``) when the polygon leaves the half-space there, else the crossed edge.
    """
    out = 0
    for i in range(count):
        j = i + 1 if i + 1 < count else 0
        xi = (src[i, 0], src[i, 1], src[i, 2])
        xj = (src[j, 0], src[j, 1], src[j, 2])
        fi = dot3(sub3(xi, p0), m) + slop
        fj = dot3(sub3(xj, p0), m) + slop
        edge = src_tag[i, 2]
        if fi >= 0.0:
            for c in range(3):
                dst[out, c] = xi[c]
                dst_tag[out, c] = src_tag[i, c]
            out += 1
        if (fi >= 0.0) != (fj >= 0.0):
            x = axpy3(fi / (fi - fj), sub3(xj, xi), xi)
            for c in range(3):
                dst[out, c] = x[c]
            dst_tag[out, 0] = edge
            dst_tag[out, 1] = side
            dst_tag[out, 2] = -2 - side if fi >= 0.0 else edge
            out += 1
    return out


@njit_kernel
def _clip_segment(inc, inc_ids, ref, ref_ids, ref_count, n_ref, slop, S):
    """Clip the incident segment ``inc[:2]`` by the reference side planes into ``S.clip_pos[0]``; returns 0..2.

    Parametric (Cyrus-Beck): each side plane raises the entry parameter or lowers the exit parameter.
    """
    x0 = (inc[0, 0], inc[0, 1], inc[0, 2])
    x1 = (inc[1, 0], inc[1, 1], inc[1, 2])
    t0, t1 = 0.0, 1.0
    side0 = side1 = -1
    for i in range(ref_count):
        p0, m = _side_plane(ref, i, ref_count, n_ref)
        f0 = dot3(sub3(x0, p0), m) + slop
        f1 = dot3(sub3(x1, p0), m) + slop
        if f0 < 0.0 and f1 < 0.0:
            return 0
        if f0 < 0.0 and f0 / (f0 - f1) > t0:
            t0, side0 = f0 / (f0 - f1), ref_ids[i]
        elif f1 < 0.0 and f0 / (f0 - f1) < t1:
            t1, side1 = f0 / (f0 - f1), ref_ids[i]
    if t0 > t1:
        return 0
    for e in range(2):
        x = axpy3(t0 if e == 0 else t1, sub3(x1, x0), x0)
        for c in range(3):
            S.clip_pos[0, e, c] = x[c]
        S.clip_tag[0, e, 0] = inc_ids[e] if (side0 if e == 0 else side1) < 0 else inc_ids[0]
        S.clip_tag[0, e, 1] = side0 if e == 0 else side1
    return 2


@njit_kernel
def _clip_polygon(inc, inc_ids, inc_count, ref, ref_ids, ref_count, n_ref, slop, S):
    """Clip the incident polygon by every reference side plane; the result is ``S.clip_pos[src][:count]``.

    Returns ``(count, src)``.
    """
    for k in range(inc_count):
        for c in range(3):
            S.clip_pos[0, k, c] = inc[k, c]
        S.clip_tag[0, k, 0] = inc_ids[k]
        S.clip_tag[0, k, 1] = -1
        S.clip_tag[0, k, 2] = inc_ids[k]
    count = inc_count
    src = 0
    for i in range(ref_count):
        p0, m = _side_plane(ref, i, ref_count, n_ref)
        count = _clip_by_plane(S.clip_pos[src], S.clip_tag[src], count, p0, m, slop, ref_ids[i],
                               S.clip_pos[1 - src], S.clip_tag[1 - src])  # fmt: skip
        src = 1 - src
        if count == 0:
            break
    return count, src


@njit_kernel
def _clip_to_reference(ref, ref_ids, ref_count, n_ref, s, inc, inc_ids, inc_count, n, gap_min, margin, slop, S):
    """Candidates from clipping the incident feature against the reference face (normal ``n_ref``, owner sign s).

    ``phi = s (n_ref . x - c_ref) / (n_ref . n)`` along the contact normal n (never below ``gap_min``, the exact
    gap); the point is midway between x and its projection along n onto the reference plane. Returns the count.
    """
    if inc_count < 2:
        return 0
    if inc_count == 2:
        count = _clip_segment(inc, inc_ids, ref, ref_ids, ref_count, n_ref, slop, S)
        src = 0
    else:
        count, src = _clip_polygon(inc, inc_ids, inc_count, ref, ref_ids, ref_count, n_ref, slop, S)
    c_ref = n_ref[0] * ref[0, 0] + n_ref[1] * ref[0, 1] + n_ref[2] * ref[0, 2]
    cos = dot3(n_ref, n)
    kept = 0
    for k in range(count):
        x = (S.clip_pos[src, k, 0], S.clip_pos[src, k, 1], S.clip_pos[src, k, 2])
        gap = s * (dot3(n_ref, x) - c_ref) / cos
        if gap <= margin:
            gap = max(gap, gap_min)
            feature = point_feature_id(S.clip_tag[src, k, 0], S.clip_tag[src, k, 1])
            kept = _add_candidate(S, kept, axpy3(-0.5 * s * gap, n, x), gap, feature)
    return kept


@njit_kernel
def _parallel_edges(pa, pb, ids_b, n, gap_min, margin, S):
    """Candidates at the ends of the overlap of two parallel edges ``pa[:2]`` (on A) and ``pb[:2]`` (on B).

    B's edge is cut to the slab of A's edge; each end x_b gets ``phi = n . (x_b - x_a)`` with x_a its closest
    point on A's edge, the point midway between them.
    """
    a0 = (pa[0, 0], pa[0, 1], pa[0, 2])
    da = sub3((pa[1, 0], pa[1, 1], pa[1, 2]), a0)
    b0 = (pb[0, 0], pb[0, 1], pb[0, 2])
    db = sub3((pb[1, 0], pb[1, 1], pb[1, 2]), b0)
    aa = dot3(da, da)
    # A's parameter along B's edge: t(u) = t0 + u (t1 - t0); keep u with 0 <= t(u) <= 1.
    t0 = dot3(sub3(b0, a0), da) / aa
    t1 = t0 + dot3(db, da) / aa
    if abs(t1 - t0) <= 1.0e-12:
        return 0
    u_lo = max(0.0, min(-t0 / (t1 - t0), (1.0 - t0) / (t1 - t0)))
    u_hi = min(1.0, max(-t0 / (t1 - t0), (1.0 - t0) / (t1 - t0)))
    if u_lo > u_hi:
        return 0
    kept = 0
    for e in range(2):
        u = u_lo if e == 0 else u_hi
        xb = axpy3(u, db, b0)
        t = min(max(t0 + u * (t1 - t0), 0.0), 1.0)
        xa = axpy3(t, da, a0)
        gap = dot3(sub3(xb, xa), n)
        if gap <= margin:
            clipped = u != (0.0 if e == 0 else 1.0)
            feature = point_feature_id(ids_b[0], e) if clipped else point_feature_id(ids_b[e], -1)
            kept = _add_candidate(S, kept, midpoint3(xa, xb), max(gap, gap_min), feature)
    return kept


@njit_kernel
def is_fine_facet(shape, poly, count):
    """Whether the polygon ``poly[:count]``, a face of ``shape``, is a facet of a finely faceted hull (an
    icosphere's): the shape is a hull and the face spans less than ``SMALL_FACET`` of its size ``shape.scale`` [m].
    Primitives are left out: a long rod's end cap is small against its length but is a whole face."""
    if shape.kind != CONVEX:
        return False
    extent = 0.0
    for k in range(1, count):
        extent = max(extent, norm3(sub3((poly[k, 0], poly[k, 1], poly[k, 2]), (poly[0, 0], poly[0, 1], poly[0, 2]))))
    return count >= 3 and extent < SMALL_FACET * shape.scale


@njit_kernel
def _manifold_candidates(A, B, hulls, n, gap, margin, S):
    """Clipped contact candidates of A and B along the normal n (A -> B) with exact gap ``gap``; returns the count."""
    na, normal_a, cos_a = face_feature(A, hulls, n, S.poly_a, S.ids_a)
    nb, normal_b, cos_b = face_feature(B, hulls, scale3(n, -1.0), S.poly_b, S.ids_b)
    if is_fine_facet(A, S.poly_a, na):
        margin = min(margin, gap + FACET_TOUCH * A.scale)
    if is_fine_facet(B, S.poly_b, nb):
        margin = min(margin, gap + FACET_TOUCH * B.scale)
    ref_is_b = nb >= 3 and cos_b > cos_a + _REF_BIAS
    if ref_is_b and cos_b >= FEATURE_COS:
        ni = incident_feature(A, hulls, n, S.poly_a, S.ids_a)
        slop = _CLIP_SLOP * B.scale
        return _clip_to_reference(S.poly_b, S.ids_b, nb, normal_b, -1.0, S.poly_a, S.ids_a, ni, n, gap, margin,
                                  slop, S)  # fmt: skip
    if not ref_is_b and na >= 3 and cos_a >= FEATURE_COS:
        ni = incident_feature(B, hulls, scale3(n, -1.0), S.poly_b, S.ids_b)
        slop = _CLIP_SLOP * A.scale
        return _clip_to_reference(S.poly_a, S.ids_a, na, normal_a, 1.0, S.poly_b, S.ids_b, ni, n, gap, margin,
                                  slop, S)  # fmt: skip
    ka = edge_feature(A, hulls, n, S.poly_a, S.ids_a)
    kb = edge_feature(B, hulls, scale3(n, -1.0), S.poly_b, S.ids_b)
    if ka == 2 and kb == 2:
        ea = sub3((S.poly_a[1, 0], S.poly_a[1, 1], S.poly_a[1, 2]), (S.poly_a[0, 0], S.poly_a[0, 1], S.poly_a[0, 2]))
        eb = sub3((S.poly_b[1, 0], S.poly_b[1, 1], S.poly_b[1, 2]), (S.poly_b[0, 0], S.poly_b[0, 1], S.poly_b[0, 2]))
        if norm3(cross3(ea, eb)) <= FEATURE_SIN * norm3(ea) * norm3(eb):
            return _parallel_edges(S.poly_a, S.poly_b, S.ids_b, n, gap, margin, S)
    return 0


# ---------------------------------------------------------------------------------------------------------------
# Reduction and output
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel(inline="always")
def _area(pos, i, j, k, n):
    """Twice the signed area of candidates (i, j, k) of ``pos`` about n (positive when counter-clockwise)."""
    a = vec3(pos[i])
    return dot3(cross3(sub3(vec3(pos[j]), a), sub3(vec3(pos[k]), a)), n)


@njit_kernel
def _choose(pos, chosen, count, first, n, tiny):
    """Pick at most MANIFOLD_MAX of the candidate points ``pos[:count]`` into ``chosen``; returns how many.

    ``first``; the farthest from it across n; the one making the largest triangle with them; the one adding
    the largest area outside that triangle (the quadrilateral of largest area containing ``first`` greedily).
    Points closer than ``tiny`` [m] (areas below ``tiny^2``) add nothing and are skipped.
    """
    chosen[0] = first
    origin = vec3(pos[first])
    best, far = tiny * tiny, -1
    for i in range(count):
        r = sub3(vec3(pos[i]), origin)
        r = axpy3(-dot3(r, n), n, r)
        if dot3(r, r) > best:
            best, far = dot3(r, r), i
    if far < 0:
        return 1
    best, third = tiny * tiny, -1
    for i in range(count):
        if abs(_area(pos, first, far, i, n)) > best:
            best, third = abs(_area(pos, first, far, i, n)), i
    if third < 0:
        chosen[1] = far
        return 2
    # Counter-clockwise triangle about n, so "outside edge (a, b)" means a negative signed area.
    ccw = _area(pos, first, far, third, n) > 0.0
    chosen[1] = far if ccw else third
    chosen[2] = third if ccw else far
    best, fourth = tiny * tiny, -1
    for i in range(count):
        outside = 0.0
        for k in range(3):
            outside = max(outside, -_area(pos, chosen[k], chosen[(k + 1) % 3], i, n))
        if outside > best:
            best, fourth = outside, i
    if fourth < 0:
        return 3
    chosen[3] = fourth
    return 4


@njit_kernel
def emit_manifold(out, pair_index, sgn, n, witness, gap, count, scale, pos, gaps, ids, chosen):
    """Reduce the candidates (``pos``, ``gaps``, ``ids``)``[:count]`` plus the witness contact (point, exact gap)
    and emit them; ``chosen`` (MANIFOLD_MAX,) is scratch.

    The witness (id 0) joins unless a candidate is within ``_TIE`` of its depth. Near-duplicate points (closer
    than ``_SAME_POINT`` across n) count once; ids are made unique within the pair by probing upward. The
    candidate arrays are passed one by one: Numba passes every array of a tuple argument on each call.
    """
    deepest = -1
    for i in range(count):
        if deepest < 0 or gaps[i] < gaps[deepest]:
            deepest = i
    if deepest < 0 or gaps[deepest] > gap + _TIE * scale:
        deepest = min(count, CANDIDATE_MAX - 1)
        for c in range(3):
            pos[deepest, c] = witness[c]
        gaps[deepest] = gap
        ids[deepest] = 0
        count = deepest + 1
    kept = _choose(pos, chosen, count, deepest, n, _SAME_POINT * scale)
    for k in range(kept):
        i = chosen[k]
        feature = ids[i]
        clash = True
        while clash:
            clash = False
            for j in range(k):
                if ids[chosen[j]] == feature:
                    clash = True
                    feature = 1 + feature % (FEATURE_MAX - 1)
        ids[i] = feature
        emit_contact(out, pair_index, vec3(pos[i]), n, sgn, gaps[i], feature)


# ---------------------------------------------------------------------------------------------------------------
# Pair kernels
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def collide_convex_convex(A, B, hulls, margin, pair_index, sgn, scratch, out):
    """Contacts of two :class:`~.support.ConvexShape` (A has the lower ShapeType); normal A -> B.

    GJK/EPA on the cores, radii added (``phi = distance - r_A - r_B``, witness points pushed out by them), then
    the clipped manifold (module docstring) reduced to at most 4 contacts.
    """
    radii = A.sweep + B.sweep
    status, n, dist, a, b = convex_separation(A, B, hulls.hull_verts, margin + radii, scratch.separation)
    if status == 0:
        return
    gap = dist - radii
    if not gap <= margin:
        return
    witness = midpoint3(axpy3(A.sweep, n, a), axpy3(-B.sweep, n, b))
    count = _manifold_candidates(A, B, hulls, n, gap, margin, scratch)
    S = scratch
    emit_manifold(out, pair_index, sgn, n, witness, gap, count, max(A.scale, B.scale), S.cand_pos, S.cand_gap,
                  S.cand_id, S.chosen)  # fmt: skip


@njit_kernel
def collide_plane_convex(po, Rp, B, hulls, margin, pair_index, sgn, scratch, out):
    """Plane (through ``po``, normal ``Rp[:, 2]``) vs a :class:`~.support.ConvexShape`; normal plane -> shape = n.

    The support point along -n is the deepest point, ``phi = n . (x - po) - r``; the vertices of the incident
    feature facing the plane (cap, base, side line, hull face) within margin join it (reduced to 4).
    """
    n = column3(Rp, 2)
    o = vec3(po)
    down = scale3(n, -1.0)
    x = axpy3(-B.sweep, n, support_core(B, hulls.hull_verts, down))
    gap = dot3(sub3(x, o), n)
    if not gap <= margin:
        return
    S = scratch
    vertices = incident_feature(B, hulls, down, S.poly_b, S.ids_b)
    if is_fine_facet(B, S.poly_b, vertices):
        margin = min(margin, gap + FACET_TOUCH * B.scale)
    count = np.int64(0)  # not a literal 0: Numba would compile emit_manifold once more for it
    for k in range(vertices):
        v = (S.poly_b[k, 0], S.poly_b[k, 1], S.poly_b[k, 2])
        h = dot3(sub3(v, o), n)
        if h <= margin:
            h = max(h, gap)
            count = _add_candidate(S, count, axpy3(-0.5 * h, n, v), h, point_feature_id(S.ids_b[k], -1))
    emit_manifold(out, pair_index, sgn, n, axpy3(-0.5 * gap, n, x), gap, count, B.scale, S.cand_pos, S.cand_gap,
                  S.cand_id, S.chosen)  # fmt: skip
