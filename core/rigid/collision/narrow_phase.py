"""Narrow phase: contact points, normals and gaps for every candidate pair (seed 000 §2.1).

Conventions (shared by every ``collide_*`` kernel):

- A contact is (point, normal, gap, feature). ``normal`` is a unit vector pointing from the first shape of the
  kernel's name to the second; the dispatcher ``generate_contacts`` negates it when it swapped the pair, so the
  stored normal always points from ``pairs[p, 0]`` to ``pairs[p, 1]``.
- ``gap`` is the signed distance phi [m]: positive when apart, negative when penetrating, the distance to move
  the second shape along the normal to just touch (seed §2.0). Contacts are kept while ``gap <= margin``
  (speculative contacts).
- ``point`` is midway between the two surface points (seed §2.1.1), so it does not depend on the pair order.
- ``feature`` in [0, FEATURE_MAX) names the touching feature pair, so it stays the same while the same
  features touch (warm starting matches contacts by (shape0, shape1, feature)).

Kernels work on tuples of three floats, which Numba keeps in registers: no heap allocation per pair except the
fixed clipping buffers that ``generate_contacts`` allocates once.
"""

import math

import numpy as np

from ..jit import njit_kernel

FEATURE_MAX = 256
"""Feature ids lie in [0, FEATURE_MAX)."""

INF = 1.0e30
"""Half-width [m] of a plane's box along unbounded axes."""

_SPHERE = 1
_BOX = 2
_CAPSULE = 3
_PLANE = 4

_PARALLEL_CROSS = 1.0e-6
"""``|a x b|`` below this: edge directions treated as parallel and their SAT axis skipped [dimensionless]."""

_FACE_BIAS = 1.0e-4
"""Relative depth [x largest half-extent] by which box B's face must beat box A's to become the reference."""

_EDGE_BIAS = 1.0e-3
"""Relative depth [x largest half-extent] by which an edge axis must beat the face axes (stable stacks)."""

_CAPSULE_PARALLEL_SIN = 2.0e-2
"""``sin`` of the angle below which two capsule axes count as parallel (two contacts at the overlap ends)."""

_CLIP_SLOP = 1.0e-3
"""Incident points this far outside a side plane [x reference half-extent] are kept unclipped, so a box resting
on a same-size box keeps its 4 vertex contacts (and their feature ids) under sub-millimetre jitter."""

_BOX_POINT_IDS = 24
"""Clipped-point ids per reference face: 4 incident vertices, 16 incident-edge x side-plane, 4 face corners."""

_BOX_EDGE_FEATURE = 6 * _BOX_POINT_IDS
"""First box-box edge-edge feature id (144); 144 + 3 i + j < FEATURE_MAX."""


# ---------------------------------------------------------------------------------------------------------------
# Small vector helpers on 3-tuples
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def _vec(a):
    return (a[0], a[1], a[2])


@njit_kernel
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit_kernel
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit_kernel
def _scale(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@njit_kernel
def _axpy(s, a, b):
    """``s * a + b``."""
    return (s * a[0] + b[0], s * a[1] + b[1], s * a[2] + b[2])


@njit_kernel
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit_kernel
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit_kernel
def _norm(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit_kernel
def _column(R, j):
    """Column ``j`` of rotation ``R`` (3, 3): local axis ``j`` in world."""
    return (R[0, j], R[1, j], R[2, j])


@njit_kernel
def _rotate(R, v):
    """``R v``: local vector to world."""
    return (
        R[0, 0] * v[0] + R[0, 1] * v[1] + R[0, 2] * v[2],
        R[1, 0] * v[0] + R[1, 1] * v[1] + R[1, 2] * v[2],
        R[2, 0] * v[0] + R[2, 1] * v[1] + R[2, 2] * v[2],
    )


@njit_kernel
def _rotate_t(R, v):
    """``R^T v``: world vector to local."""
    return (
        R[0, 0] * v[0] + R[1, 0] * v[1] + R[2, 0] * v[2],
        R[0, 1] * v[0] + R[1, 1] * v[1] + R[2, 1] * v[2],
        R[0, 2] * v[0] + R[1, 2] * v[1] + R[2, 2] * v[2],
    )


@njit_kernel
def _midpoint(a, b):
    return (0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2]))


@njit_kernel
def _clamp(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@njit_kernel
def _sign(x):
    """+1 for x >= 0, else -1 (a fixed choice at 0 keeps degenerate cases deterministic)."""
    return 1.0 if x >= 0.0 else -1.0


@njit_kernel
def _component(v, k):
    return v[0] if k == 0 else (v[1] if k == 1 else v[2])


@njit_kernel
def _with_component(v, k, x):
    """Copy of ``v`` with component ``k`` replaced by ``x``."""
    if k == 0:
        return (x, v[1], v[2])
    if k == 1:
        return (v[0], x, v[2])
    return (v[0], v[1], x)


@njit_kernel
def _unit_axis(k, s):
    """``s * e_k``."""
    return _with_component((0.0, 0.0, 0.0), k, s)


# ---------------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def _emit_contact(out, pair_index, point, normal, sgn, gap, feature):
    """Append one contact to ``out = (pair, point, normal, gap, feature, counts)``; count it when full.

    ``normal`` is multiplied by ``sgn`` (+1 or -1) to restore the caller's pair order.
    """
    out_pair, out_point, out_normal, out_gap, out_feature, counts = out
    c = counts[0]
    cap = min(out_pair.shape[0], out_point.shape[0], out_normal.shape[0], out_gap.shape[0], out_feature.shape[0])
    if c >= cap:
        counts[1] += 1
        return
    out_pair[c] = pair_index
    for k in range(3):
        out_point[c, k] = point[k]
        out_normal[c, k] = sgn * normal[k]
    out_gap[c] = gap
    out_feature[c] = feature
    counts[0] = c + 1


@njit_kernel
def _emit_sphere_sphere(out, pair_index, sgn, margin, ca, ra, cb, rb, fallback, feature):
    """Contact between spheres (ca, ra) and (cb, rb) [m]; ``fallback`` is the unit normal for coincident centres.

    Seed §2.1.1: ``phi = |cb - ca| - (ra + rb)``, ``n = (cb - ca) / |cb - ca|``,
    ``p = (ca + ra n + cb - rb n) / 2``. Shared by every sphere-swept pair (capsule ends, segment closest points).
    """
    d = _sub(cb, ca)
    dist = _norm(d)
    gap = dist - ra - rb
    if not gap <= margin:
        return
    n = fallback if dist < 1.0e-12 else _scale(d, 1.0 / dist)
    point = _midpoint(_axpy(ra, n, ca), _axpy(-rb, n, cb))
    _emit_contact(out, pair_index, point, n, sgn, gap, feature)


# ---------------------------------------------------------------------------------------------------------------
# Closest-point helpers
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def closest_segment_segment_params(p0, d0, q0, d1):
    """Parameters (s, t) in [0, 1] of the closest points ``p0 + s d0`` and ``q0 + t d1`` of two segments.

    Ericson, Real-Time Collision Detection §5.1.9. Parallel segments return s = 0 (any point is closest).
    """
    eps = 1.0e-20
    r = _sub(p0, q0)
    a = _dot(d0, d0)
    e = _dot(d1, d1)
    f = _dot(d1, r)
    if a <= eps and e <= eps:
        return 0.0, 0.0
    if a <= eps:
        return 0.0, _clamp(f / e, 0.0, 1.0)
    c = _dot(d0, r)
    if e <= eps:
        return _clamp(-c / a, 0.0, 1.0), 0.0
    b = _dot(d0, d1)
    denom = a * e - b * b
    s = _clamp((b * f - c * e) / denom, 0.0, 1.0) if denom > 1.0e-14 * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t = 0.0
        s = _clamp(-c / a, 0.0, 1.0)
    elif t > 1.0:
        t = 1.0
        s = _clamp((b - c) / a, 0.0, 1.0)
    return s, t


@njit_kernel
def _segment_box_slope(p0, d, h, t):
    """Half the derivative of ``dist(p0 + t d, box)^2`` for the box [-h, h] (local frame)."""
    g = 0.0
    for i in range(3):
        x = p0[i] + t * d[i]
        excess = abs(x) - h[i]
        if excess > 0.0:
            g += excess * _sign(x) * d[i]
    return g


@njit_kernel
def closest_segment_box_param(p0, d, h):
    """Parameter t in [0, 1] minimising the distance from ``p0 + t d`` to the box [-h, h] (box frame) [m].

    The squared distance is convex and C1 in t, so bisection on the sign of its derivative converges to a
    minimiser (60 halvings: 1e-18 of the segment).
    """
    if _segment_box_slope(p0, d, h, 0.0) >= 0.0:
        return 0.0
    if _segment_box_slope(p0, d, h, 1.0) <= 0.0:
        return 1.0
    lo = 0.0
    hi = 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _segment_box_slope(p0, d, h, mid) > 0.0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


# ---------------------------------------------------------------------------------------------------------------
# Pair kernels (first shape has the lower ShapeType value)
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def collide_sphere_sphere(ca, ra, cb, rb, margin, pair_index, sgn, out):
    """Sphere (ca (3,), ra) vs sphere (cb, rb) [m], seed §2.1.1; coincident centres use the world +z axis."""
    _emit_sphere_sphere(out, pair_index, sgn, margin, _vec(ca), ra, _vec(cb), rb, (0.0, 0.0, 1.0), 0)


@njit_kernel
def collide_sphere_plane(cs, rs, po, Rp, margin, pair_index, sgn, out):
    """Sphere (cs (3,), rs) vs plane through ``po`` with normal ``Rp[:, 2]``; normal sphere -> plane = -n."""
    n = _column(Rp, 2)
    c = _vec(cs)
    gap = _dot(_sub(c, _vec(po)), n) - rs
    if gap <= margin:
        # Sphere's lowest point c - rs n and its projection c - (rs + gap) n on the plane.
        point = _axpy(-(rs + 0.5 * gap), n, c)
        _emit_contact(out, pair_index, point, _scale(n, -1.0), sgn, gap, 0)


@njit_kernel
def collide_sphere_box(cs, rs, pb, Rb, hb, margin, pair_index, sgn, out):
    """Sphere (cs (3,), rs) vs box (pb, Rb (3, 3), half-extents hb (3,)) [m]; normal sphere -> box.

    Seed §2.1.2 with erratum E15. Shallow (centre outside): closest box point g (eq. 85), ``n`` from the centre to
    g, ``phi = |g - c| - r``. Deep (centre inside): nearest of the 6 faces ``i* = argmin h_i - |c_i|``, box
    outward normal ``sign(c_i*) e_i*``, sphere -> box normal is its negative and ``phi = -(h_i* - |c_i*| + r)``.
    Both cases agree on a face: the normal always points from the sphere into the box.
    """
    c = _vec(cs)
    center = _vec(pb)
    cl = _rotate_t(Rb, _sub(c, center))
    g = (_clamp(cl[0], -hb[0], hb[0]), _clamp(cl[1], -hb[1], hb[1]), _clamp(cl[2], -hb[2], hb[2]))
    diff = _sub(g, cl)
    dist = _norm(diff)
    if dist > 0.0:
        gap = dist - rs
        if not gap <= margin:
            return
        n = _rotate(Rb, _scale(diff, 1.0 / dist))
    else:
        k = 0
        depth = hb[0] - abs(cl[0])
        for i in range(1, 3):
            d_i = hb[i] - abs(cl[i])
            if d_i < depth:
                depth = d_i
                k = i
        s = _sign(cl[k])
        g = _with_component(cl, k, s * hb[k])
        gap = -(depth + rs)
        n = _rotate(Rb, _unit_axis(k, -s))
    box_point = _add(center, _rotate(Rb, g))
    point = _midpoint(box_point, _axpy(rs, n, c))
    _emit_contact(out, pair_index, point, n, sgn, gap, 0)


@njit_kernel
def collide_sphere_capsule(cs, rs, pc, Rc, rc, hc, margin, pair_index, sgn, out):
    """Sphere (cs (3,), rs) vs capsule (pc, Rc, radius rc, half-height hc) [m]; normal sphere -> capsule.

    Sphere vs the closest point of the capsule's segment, then seed §2.1.1 with radii (rs, rc).
    """
    c = _vec(cs)
    u = _column(Rc, 2)
    center = _vec(pc)
    t = _clamp(_dot(_sub(c, center), u), -hc, hc)
    q = _axpy(t, u, center)
    # Centre on the axis: any direction perpendicular to it is a minimum-translation direction.
    _emit_sphere_sphere(out, pair_index, sgn, margin, c, rs, q, rc, _column(Rc, 0), 0)


@njit_kernel
def collide_box_plane(pb, Rb, hb, po, Rp, margin, pair_index, sgn, out):
    """Box (pb, Rb, hb) vs plane (po, Rp) [m]: one contact per vertex within margin, feature = vertex index.

    Normal box -> plane = -n (n = plane's local +z); the vertex gap is its signed height above the plane.
    """
    n = _column(Rp, 2)
    o = _vec(po)
    center = _vec(pb)
    for v in range(8):
        local = (
            hb[0] * (1.0 - 2.0 * (v & 1)),
            hb[1] * (1.0 - 2.0 * ((v >> 1) & 1)),
            hb[2] * (1.0 - 2.0 * ((v >> 2) & 1)),
        )
        x = _add(center, _rotate(Rb, local))
        gap = _dot(_sub(x, o), n)
        if gap <= margin:
            _emit_contact(out, pair_index, _axpy(-0.5 * gap, n, x), _scale(n, -1.0), sgn, gap, v)


@njit_kernel
def collide_capsule_plane(pc, Rc, rc, hc, po, Rp, margin, pair_index, sgn, out):
    """Capsule (pc, Rc, rc, hc) vs plane (po, Rp) [m]: its two end spheres, features 0 (-z end) and 1 (+z end)."""
    n = _column(Rp, 2)
    u = _column(Rc, 2)
    o = _vec(po)
    for e in range(2):
        x = _axpy((2.0 * e - 1.0) * hc, u, _vec(pc))
        gap = _dot(_sub(x, o), n) - rc
        if gap <= margin:
            _emit_contact(out, pair_index, _axpy(-(rc + 0.5 * gap), n, x), _scale(n, -1.0), sgn, gap, e)


@njit_kernel
def collide_capsule_capsule(pa, Ra, ra, ha, pb, Rb, rb, hb, margin, pair_index, sgn, out):
    """Capsule vs capsule [m]: sphere contacts at the closest points of the two segments; normal a -> b.

    Nearly parallel axes (``sin < _CAPSULE_PARALLEL_SIN``) whose projections overlap get two contacts, at the
    ends of the overlap (features 1, 2), so a capsule lying on another does not roll about a single point.
    Otherwise one contact (feature 0); intersecting axes use ``ua x ub`` as the normal.
    """
    ca = _vec(pa)
    cb = _vec(pb)
    ua = _column(Ra, 2)
    ub = _column(Rb, 2)
    axb = _cross(ua, ub)
    sin_angle = _norm(axb)
    if sin_angle < _CAPSULE_PARALLEL_SIN:
        # Overlap of b's segment projected on a's axis, in a's axial coordinate.
        t0 = _dot(_axpy(-hb, ub, cb), ua) - _dot(ca, ua)
        t1 = _dot(_axpy(hb, ub, cb), ua) - _dot(ca, ua)
        lo = max(-ha, min(t0, t1))
        hi = min(ha, max(t0, t1))
        if hi - lo > 1.0e-9 * (1.0 + ha + hb):
            for e in range(2):
                x = _axpy(lo if e == 0 else hi, ua, ca)
                t = _clamp(_dot(_sub(x, cb), ub), -hb, hb)
                _emit_sphere_sphere(out, pair_index, sgn, margin, x, ra, _axpy(t, ub, cb), rb, _column(Ra, 0), 1 + e)
            return
    p0 = _axpy(-ha, ua, ca)
    q0 = _axpy(-hb, ub, cb)
    s, t = closest_segment_segment_params(p0, _scale(ua, 2.0 * ha), q0, _scale(ub, 2.0 * hb))
    x = _axpy(2.0 * ha * s, ua, p0)
    y = _axpy(2.0 * hb * t, ub, q0)
    fallback = _scale(axb, 1.0 / sin_angle) if sin_angle > _PARALLEL_CROSS else _column(Ra, 0)
    _emit_sphere_sphere(out, pair_index, sgn, margin, x, ra, y, rb, fallback, 0)


@njit_kernel
def _emit_box_face_segment(out, pair_index, sgn, margin, pb, Rb, hb, p0, d, t_star, k, s, rc):
    """Contacts of the capsule segment ``p0 + t d`` (box frame) with the box face ``s e_k``, features 1 and 2.

    The segment is clipped to the face's slab (|x_i| <= h_i, i != k); each end of the clipped interval is one
    contact with ``phi = s x_k - h_k - rc`` (exact distance of the capsule's cylinder to the face plane there).
    A capsule lying flat on the face thus gets two contacts; an upright one only its lower end within margin.
    """
    lo = 0.0
    hi = 1.0
    for i in range(3):
        if i == k:
            continue
        if abs(d[i]) < 1.0e-15:
            continue  # parallel to this slab: inside it (the closest point t_star is)
        ta = (-hb[i] - p0[i]) / d[i]
        tb = (hb[i] - p0[i]) / d[i]
        lo = max(lo, min(ta, tb))
        hi = min(hi, max(ta, tb))
    if lo > hi:  # only by round-off: fall back to the closest point
        lo = t_star
        hi = t_star
    n = _rotate(Rb, _unit_axis(k, s))
    ends = 1 if _norm(d) * (hi - lo) < 1.0e-9 else 2
    for e in range(ends):
        q = _axpy(lo if e == 0 else hi, d, p0)
        qk = _component(q, k)
        gap = s * qk - hb[k] - rc
        if gap <= margin:
            local = _with_component(q, k, 0.5 * (s * hb[k] + qk - s * rc))
            _emit_contact(out, pair_index, _add(_vec(pb), _rotate(Rb, local)), n, sgn, gap, 1 + e)


@njit_kernel
def collide_box_capsule(pb, Rb, hb, pc, Rc, rc, hc, margin, pair_index, sgn, out):
    """Box (pb, Rb, hb) vs capsule (pc, Rc, rc, hc) [m]; normal box -> capsule.

    Works in the box frame on the capsule's segment:

    - Segment outside the box: the closest segment point (convex 1-D minimisation). If it faces a single box face
      the segment is clipped to that face (``_emit_box_face_segment``, up to 2 contacts); near an edge or vertex
      one contact (feature 0) along the closest-point direction, ``phi = dist - rc``.
    - Segment intersecting the box: SAT over the box face normals and ``e_k x d`` (the exact minimum translation
      of a segment out of a box, seed §2.1.3), face axes preferred by ``_EDGE_BIAS``; a face axis is clipped as
      above, an edge axis gives one contact (feature 3) at the closest points of the segment and the box edge,
      ``phi = -(depth + rc)``.
    """
    center = _vec(pb)
    u = _rotate_t(Rb, _column(Rc, 2))
    cl = _rotate_t(Rb, _sub(_vec(pc), center))
    p0 = _axpy(-hc, u, cl)
    d = _scale(u, 2.0 * hc)
    t_star = closest_segment_box_param(p0, d, hb)
    q = _axpy(t_star, d, p0)
    g = (_clamp(q[0], -hb[0], hb[0]), _clamp(q[1], -hb[1], hb[1]), _clamp(q[2], -hb[2], hb[2]))
    diff = _sub(q, g)
    dist = _norm(diff)
    scale = max(hb[0], hb[1], hb[2], hc, rc)
    if dist > 1.0e-12 * scale:
        if dist - rc > margin:
            return
        clamped = 0
        k = 0
        for i in range(3):
            if abs(q[i]) > hb[i] + 1.0e-9 * scale:
                clamped += 1
                k = i
        if clamped == 1:
            _emit_box_face_segment(out, pair_index, sgn, margin, pb, Rb, hb, p0, d, t_star, k, _sign(q[k]), rc)
            return
        n_local = _scale(diff, 1.0 / dist)
        point = _midpoint(g, _axpy(-rc, n_local, q))
        _emit_contact(out, pair_index, _add(center, _rotate(Rb, point)), _rotate(Rb, n_local), sgn, dist - rc, 0)
        return

    # Segment meets the box: minimum translation (depth along +axis) by SAT.
    best_depth = INF
    best_axis = (0.0, 0.0, 1.0)
    best_k = 0
    for k in range(3):
        a0 = p0[k]
        a1 = p0[k] + d[k]
        up = hb[k] - min(a0, a1)
        down = hb[k] + max(a0, a1)
        if up < best_depth:
            best_depth, best_axis, best_k = up, _unit_axis(k, 1.0), k
        if down < best_depth:
            best_depth, best_axis, best_k = down, _unit_axis(k, -1.0), k
    face_depth = best_depth
    is_edge = False
    d_len = _norm(d)
    if d_len > 1.0e-12 * scale:
        for k in range(3):
            axis = _cross(_unit_axis(k, 1.0), _scale(d, 1.0 / d_len))
            axis_len = _norm(axis)
            if axis_len < _PARALLEL_CROSS:
                continue
            axis = _scale(axis, 1.0 / axis_len)
            radius = hb[0] * abs(axis[0]) + hb[1] * abs(axis[1]) + hb[2] * abs(axis[2])
            proj = _dot(p0, axis)  # the segment is perpendicular to the axis: one projection
            for s in (1.0, -1.0):
                depth = radius - s * proj
                if depth < best_depth and depth < face_depth - _EDGE_BIAS * scale:
                    best_depth, best_axis, best_k, is_edge = depth, _scale(axis, s), k, True
    if not -(best_depth + rc) <= margin:
        return
    if not is_edge:
        s = _sign(_component(best_axis, best_k))
        _emit_box_face_segment(out, pair_index, sgn, margin, pb, Rb, hb, p0, d, t_star, best_k, s, rc)
        return
    # Box edge parallel to e_k at the box's support along the exit direction.
    m = best_axis
    edge_center = _with_component((_sign(m[0]) * hb[0], _sign(m[1]) * hb[1], _sign(m[2]) * hb[2]), best_k, 0.0)
    e0 = _with_component(edge_center, best_k, -hb[best_k])
    e_dir = _unit_axis(best_k, 2.0 * hb[best_k])
    s_seg, t_edge = closest_segment_segment_params(p0, d, e0, e_dir)
    x = _axpy(s_seg, d, p0)
    y = _axpy(t_edge, e_dir, e0)
    point = _midpoint(y, _axpy(-rc, m, x))
    _emit_contact(out, pair_index, _add(center, _rotate(Rb, point)), _rotate(Rb, m), sgn, -(best_depth + rc), 3)


@njit_kernel
def _clip_polygon(src_pos, src_tag, count, axis, side, limit, plane, dst_pos, dst_tag):
    """Sutherland-Hodgman: keep the part of a polygon with ``side * x[axis] <= limit (1 + _CLIP_SLOP)``.

    Returns the new vertex count (at most count + 1).

    Vertex tags are (point id, id of the outgoing edge). Edge ids 0..3 are incident-face edges, 4 + c the side
    plane c; a point created on edge e by plane c gets id ``4 + 4 e + c`` (or a reference-face corner id
    ``20 + corner`` when e is itself a side plane), so ids stay the same while the same features touch.
    """
    out = 0
    limit = limit * (1.0 + _CLIP_SLOP)
    tol = 1.0e-12 * (1.0 + abs(limit))
    for i in range(count):
        j = i + 1 if i + 1 < count else 0
        fi = side * src_pos[i, axis] - limit
        fj = side * src_pos[j, axis] - limit
        edge = src_tag[i, 1]
        in_i = fi <= tol
        in_j = fj <= tol
        if in_i:
            dst_pos[out] = src_pos[i]
            dst_tag[out, 0] = src_tag[i, 0]
            dst_tag[out, 1] = edge
            out += 1
        if in_i != in_j:
            t = _clamp(fi / (fi - fj), 0.0, 1.0)
            for c in range(3):
                dst_pos[out, c] = src_pos[i, c] + t * (src_pos[j, c] - src_pos[i, c])
            if edge < 4:
                dst_tag[out, 0] = 4 + 4 * edge + plane
            else:
                # Corner of two side planes: bit 0 from the u-plane (0/1), bit 1 from the v-plane (2/3).
                pu = plane if plane < 2 else edge - 4
                pv = edge - 4 if plane < 2 else plane
                dst_tag[out, 0] = 20 + (pu & 1) + 2 * (pv & 1)
            # Leaving: walk along the plane to the re-entry point; entering: continue along the edge.
            dst_tag[out, 1] = 4 + plane if in_i else edge
            out += 1
    return out


@njit_kernel
def _face_axes_separation(R_own, h_own, R_other, h_other, d, margin):
    """Largest separation over the 3 face axes of one box (SAT, course eq. 86).

    ``d`` is the centre offset from box A to box B. Returns ``(separation, axis, sign of d along it)``;
    stops early (returning a separation > margin) as soon as one axis separates the boxes.
    """
    best = -INF
    best_axis = 0
    best_sign = 1.0
    for i in range(3):
        axis = _column(R_own, i)
        r_other = h_other[0] * abs(_dot(axis, _column(R_other, 0))) + h_other[1] * abs(_dot(axis, _column(R_other, 1)))
        r_other += h_other[2] * abs(_dot(axis, _column(R_other, 2)))
        dl = _dot(d, axis)
        sep = abs(dl) - h_own[i] - r_other
        if sep > margin:
            return sep, i, _sign(dl)
        if sep > best:
            best, best_axis, best_sign = sep, i, _sign(dl)
    return best, best_axis, best_sign


@njit_kernel
def collide_box_box(pa, Ra, ha, pb, Rb, hb, margin, pair_index, sgn, clip_pos, clip_tag, out):
    """Box vs box by the separating axis test (seed §2.1.3, eq. 86-87) [m]; normal a -> b.

    15 axes: face normals of a and b and the normalised edge cross products (near-parallel ones skipped). Any
    axis separating by more than ``margin`` ends the test. The axis of largest separation ``s`` (least
    penetration) wins, with face axes of a preferred over b and faces over edges by small biases so a resting
    stack keeps its reference face.

    - Face axis: the reference face's side planes clip the most anti-parallel incident face (Sutherland-Hodgman in
      the reference box frame); each clipped point within margin of the reference plane is one contact, placed
      midway between the point and the plane, ``phi`` = its signed height. Up to 8 contacts.
    - Edge axis: one contact at the closest points of the two supporting edges, ``phi = (p_b - p_a) . n``.

    Args:
        clip_pos: scratch, shape (2, 8, 3), float64.
        clip_tag: scratch, shape (2, 8, 2), int64.
    """
    d = _sub(_vec(pb), _vec(pa))
    scale = max(ha[0], ha[1], ha[2], hb[0], hb[1], hb[2])
    best_a, axis_a, sign_a = _face_axes_separation(Ra, ha, Rb, hb, d, margin)
    if best_a > margin:
        return
    best_b, axis_b, sign_b = _face_axes_separation(Rb, hb, Ra, ha, d, margin)
    if best_b > margin:
        return
    best_e = -INF
    edge_i = 0
    edge_j = 0
    edge_axis = (0.0, 0.0, 1.0)
    for i in range(3):
        for j in range(3):
            axis = _cross(_column(Ra, i), _column(Rb, j))
            length = _norm(axis)
            if length < _PARALLEL_CROSS:
                continue
            axis = _scale(axis, 1.0 / length)
            r_a = ha[0] * abs(_dot(axis, _column(Ra, 0))) + ha[1] * abs(_dot(axis, _column(Ra, 1)))
            r_a += ha[2] * abs(_dot(axis, _column(Ra, 2)))
            r_b = hb[0] * abs(_dot(axis, _column(Rb, 0))) + hb[1] * abs(_dot(axis, _column(Rb, 1)))
            r_b += hb[2] * abs(_dot(axis, _column(Rb, 2)))
            dl = _dot(d, axis)
            s = abs(dl) - r_a - r_b
            if s > margin:
                return
            if s > best_e:
                best_e, edge_i, edge_j, edge_axis = s, i, j, _scale(axis, _sign(dl))

    ref_is_b = best_b > best_a + _FACE_BIAS * scale
    best_face = best_b if ref_is_b else best_a
    if best_e > best_face + _EDGE_BIAS * scale:
        # Edge-edge (eq. 87): supporting edge of a along +n and of b along -n.
        n = edge_axis
        ca = _vec(pa)
        cb = _vec(pb)
        for m in range(3):
            if m != edge_i:
                col = _column(Ra, m)
                ca = _axpy(_sign(_dot(col, n)) * ha[m], col, ca)
            if m != edge_j:
                col = _column(Rb, m)
                cb = _axpy(-_sign(_dot(col, n)) * hb[m], col, cb)
        ea = _column(Ra, edge_i)
        eb = _column(Rb, edge_j)
        p0 = _axpy(-ha[edge_i], ea, ca)
        q0 = _axpy(-hb[edge_j], eb, cb)
        da = _scale(ea, 2.0 * ha[edge_i])
        db = _scale(eb, 2.0 * hb[edge_j])
        s, t = closest_segment_segment_params(p0, da, q0, db)
        x = _axpy(s, da, p0)
        y = _axpy(t, db, q0)
        gap = _dot(_sub(y, x), n)
        if gap <= margin:
            _emit_contact(out, pair_index, _midpoint(x, y), n, sgn, gap, _BOX_EDGE_FEATURE + 3 * edge_i + edge_j)
        return

    # Face case. Reference box r, incident box i; ref_sign * e_k (r frame) is the reference face normal, pointing
    # towards the incident box; flip turns it into the a -> b normal.
    if ref_is_b:
        pr, Rr, hr, pi, Ri, hi = pb, Rb, hb, pa, Ra, ha
        k, ref_sign, flip = axis_b, -sign_b, -1.0
    else:
        pr, Rr, hr, pi, Ri, hi = pa, Ra, ha, pb, Rb, hb
        k, ref_sign, flip = axis_a, sign_a, 1.0
    n_ref = _scale(_column(Rr, k), ref_sign)
    # Incident face: the face of i whose outward normal is most anti-parallel to n_ref.
    f = 0
    best_c = -1.0
    for j in range(3):
        c = abs(_dot(_column(Ri, j), n_ref))
        if c > best_c:
            best_c, f = c, j
    f_sign = -_sign(_dot(_column(Ri, f), n_ref))
    face_center = _axpy(f_sign * hi[f], _column(Ri, f), _vec(pi))
    u = (f + 1) % 3
    v = (f + 2) % 3
    cr = _vec(pr)
    for q in range(4):
        # Counter-clockwise walk (+,+), (-,+), (-,-), (+,-); edge q joins vertex q to q + 1.
        su = 1.0 if (q == 0 or q == 3) else -1.0
        sv = 1.0 if q < 2 else -1.0
        x = _axpy(su * hi[u], _column(Ri, u), face_center)
        x = _axpy(sv * hi[v], _column(Ri, v), x)
        xl = _rotate_t(Rr, _sub(x, cr))
        for c in range(3):
            clip_pos[0, q, c] = xl[c]
        clip_tag[0, q, 0] = q
        clip_tag[0, q, 1] = q
    count = 4
    src = 0
    ku = (k + 1) % 3
    kv = (k + 2) % 3
    for plane in range(4):
        axis = ku if plane < 2 else kv
        side = 1.0 if (plane & 1) == 0 else -1.0
        count = _clip_polygon(
            clip_pos[src], clip_tag[src], count, axis, side, hr[axis], plane, clip_pos[1 - src], clip_tag[1 - src]
        )
        src = 1 - src
        if count == 0:
            return
    n = _scale(n_ref, flip)
    face_code = (3 if ref_is_b else 0) + k
    for q in range(count):
        xl = (clip_pos[src, q, 0], clip_pos[src, q, 1], clip_pos[src, q, 2])
        gap = ref_sign * _component(xl, k) - hr[k]
        if gap <= margin:
            # Midway between the incident point and its projection on the reference plane.
            local = _with_component(xl, k, _component(xl, k) - 0.5 * gap * ref_sign)
            point = _add(cr, _rotate(Rr, local))
            feature = clip_tag[src, q, 0] + _BOX_POINT_IDS * face_code
            _emit_contact(out, pair_index, point, n, sgn, gap, feature)


# ---------------------------------------------------------------------------------------------------------------
# Bounds and dispatch
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def compute_shape_aabbs(shape_type, shape_params, shape_world_pos, shape_world_rot, margin, aabb_lower, aabb_upper):
    """World AABB of every shape expanded by ``margin`` [m].

    Args:
        shape_type: ``ShapeType`` per shape, shape (shape_count,), int.
        shape_params: (radius | half-extents | (radius, half_height)), shape (shape_count, 3) [m].
        shape_world_pos: shape origins, shape (shape_count, 3) [m].
        shape_world_rot: rotation matrices (columns = local axes), shape (shape_count, 3, 3).
        margin: contact margin [m].
        aabb_lower, aabb_upper: outputs, shape (shape_count, 3) [m].

    Planes are unbounded (+-INF) except along an axis-aligned normal, where the solid side stops at the plane.
    """
    for s in range(shape_type.shape[0]):
        t = shape_type[s]
        R = shape_world_rot[s]
        c = shape_world_pos[s]
        for k in range(3):
            if t == _PLANE:
                lo = -INF
                hi = INF
                nk = R[k, 2]
                if nk > 1.0 - 1.0e-12:  # solid below c_k along +e_k
                    hi = c[k] + margin
                elif nk < -(1.0 - 1.0e-12):
                    lo = c[k] - margin
                aabb_lower[s, k] = lo
                aabb_upper[s, k] = hi
                continue
            if t == _SPHERE:
                ext = shape_params[s, 0]
            elif t == _BOX:
                ext = abs(R[k, 0]) * shape_params[s, 0] + abs(R[k, 1]) * shape_params[s, 1]
                ext += abs(R[k, 2]) * shape_params[s, 2]
            elif t == _CAPSULE:
                ext = abs(R[k, 2]) * shape_params[s, 1] + shape_params[s, 0]
            else:
                ext = 0.0
            aabb_lower[s, k] = c[k] - ext - margin
            aabb_upper[s, k] = c[k] + ext + margin


@njit_kernel
def generate_contacts(
    shape_type,
    shape_params,
    shape_world_pos,
    shape_world_rot,
    pairs,
    pair_count,
    margin,
    out_pair,
    out_point,
    out_normal,
    out_gap,
    out_feature,
    counts,
):
    """Contacts (gap <= margin) of the first ``pair_count`` pairs, seed §2.1.

    Args:
        shape_type, shape_params, shape_world_pos, shape_world_rot: as in ``compute_shape_aabbs``.
        pairs: candidate shape pairs, shape (pair_max, 2), int32.
        pair_count: number of valid rows of ``pairs``.
        margin: contacts are generated up to this separation [m].
        out_pair: pair index of each contact, shape (contact_max,), int32.
        out_point: world point midway between the surfaces, shape (contact_max, 3) [m].
        out_normal: unit normal from ``pairs[p, 0]`` to ``pairs[p, 1]``, shape (contact_max, 3).
        out_gap: signed gap phi, shape (contact_max,) [m].
        out_feature: feature id in [0, FEATURE_MAX), shape (contact_max,), int32.
        counts: [stored, overflowed], shape (2,), int64.
    """
    counts[0] = 0
    counts[1] = 0
    out = (out_pair, out_point, out_normal, out_gap, out_feature, counts)
    clip_pos = np.empty((2, 8, 3))
    clip_tag = np.empty((2, 8, 2), np.int64)
    for p in range(pair_count):
        a = pairs[p, 0]
        b = pairs[p, 1]
        ta = shape_type[a]
        tb = shape_type[b]
        sgn = 1.0
        # Kernels take the lower ShapeType first (same type: lower shape index, so biased choices such as the
        # box-box reference face do not depend on the pair order); negate their normal to restore the order.
        if ta > tb or (ta == tb and a > b):
            a, b = b, a
            ta, tb = tb, ta
            sgn = -1.0
        pa, Ra, ga = shape_world_pos[a], shape_world_rot[a], shape_params[a]
        pb, Rb, gb = shape_world_pos[b], shape_world_rot[b], shape_params[b]
        if ta == _SPHERE:
            if tb == _SPHERE:
                collide_sphere_sphere(pa, ga[0], pb, gb[0], margin, p, sgn, out)
            elif tb == _BOX:
                collide_sphere_box(pa, ga[0], pb, Rb, gb, margin, p, sgn, out)
            elif tb == _CAPSULE:
                collide_sphere_capsule(pa, ga[0], pb, Rb, gb[0], gb[1], margin, p, sgn, out)
            elif tb == _PLANE:
                collide_sphere_plane(pa, ga[0], pb, Rb, margin, p, sgn, out)
        elif ta == _BOX:
            if tb == _BOX:
                collide_box_box(pa, Ra, ga, pb, Rb, gb, margin, p, sgn, clip_pos, clip_tag, out)
            elif tb == _CAPSULE:
                collide_box_capsule(pa, Ra, ga, pb, Rb, gb[0], gb[1], margin, p, sgn, out)
            elif tb == _PLANE:
                collide_box_plane(pa, Ra, ga, pb, Rb, margin, p, sgn, out)
        elif ta == _CAPSULE:
            if tb == _CAPSULE:
                collide_capsule_capsule(pa, Ra, ga[0], ga[1], pb, Rb, gb[0], gb[1], margin, p, sgn, out)
            elif tb == _PLANE:
                collide_capsule_plane(pa, Ra, ga[0], ga[1], pb, Rb, margin, p, sgn, out)
        # plane-plane: no contacts
