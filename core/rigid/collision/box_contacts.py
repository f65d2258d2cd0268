"""Box contacts (seed 000 §2.1.3, course eq. 86-87): box-box by SAT with face clipping or edge-edge, and box-capsule.

One job: the pair kernels in which a box meets a box or a capsule, ``collide_box_box`` and ``collide_box_capsule``,
with their separating-axis tests, Sutherland-Hodgman clipping of the incident face and the segment-box closest
point. Conventions (normal a -> b, gap phi [m], midpoint contact point, feature ids) are those of
``contact_common``; boxes are (centre (3,), rotation (3, 3) whose columns are the local axes, half-extents (3,))
[m], capsules (centre, rotation, radius, half-height) with their axis along local z. No allocation: vectors
are tuples, the clipping buffers are the caller's.
"""

import numpy as np

from ...jit import njit_kernel
from ...math.vec import add3, axpy3, column3, cross3, dot3, midpoint3, norm3, rotate3, rotate_t3, scale3, sub3, vec3
from .contact_common import (
    INF,
    PARALLEL_CROSS,
    clamp,
    closest_segment_segment_params,
    component,
    emit_contact,
    sign,
    unit_axis,
    with_component,
)

_FACE_BIAS = 1.0e-4
"""Relative depth [x largest half-extent] by which box B's face must beat box A's to become the reference."""

_EDGE_BIAS = 1.0e-3
"""Relative depth [x largest half-extent] by which an edge axis must beat the face axes (stable stacks)."""

_CLIP_SLOP = 1.0e-3
"""Incident points this far outside a side plane [x reference half-extent] are kept unclipped, so a box resting
on a same-size box keeps its 4 vertex contacts (and their feature ids) under sub-millimetre jitter."""

_BOX_POINT_IDS = 24
"""Clipped-point ids per reference face: 4 incident vertices, 16 incident-edge x side-plane, 4 face corners."""

_BOX_EDGE_FEATURE = 6 * _BOX_POINT_IDS
"""First box-box edge-edge feature id (144); 144 + 3 i + j < FEATURE_MAX."""

# ---------------------------------------------------------------------------------------------------------------
# Segment vs box: closest point
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def _segment_box_slope(p0, d, h, t):
    """Half the derivative of ``dist(p0 + t d, box)^2`` for the box [-h, h] (local frame)."""
    g = 0.0
    for i in range(3):
        x = p0[i] + t * d[i]
        excess = abs(x) - h[i]
        if excess > 0.0:
            g += excess * sign(x) * d[i]
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
# Box vs capsule
# ---------------------------------------------------------------------------------------------------------------


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
    n = rotate3(Rb, unit_axis(k, s))
    ends = 1 if norm3(d) * (hi - lo) < 1.0e-9 else 2
    for e in range(ends):
        q = axpy3(lo if e == 0 else hi, d, p0)
        qk = component(q, k)
        gap = s * qk - hb[k] - rc
        if gap <= margin:
            local = with_component(q, k, 0.5 * (s * hb[k] + qk - s * rc))
            emit_contact(out, pair_index, add3(vec3(pb), rotate3(Rb, local)), n, sgn, gap, 1 + e)


@njit_kernel
def _collide_segment_outside_box(out, pair_index, sgn, margin, pb, Rb, hb, p0, d, t_star, rc, scale):
    """Contacts of a capsule whose segment ``p0 + t d`` (box frame) stays outside the box; False if it meets it.

    ``t_star`` is the segment parameter closest to the box, ``q`` that point and ``g`` its clamp onto the box.
    If ``q`` faces a single box face the segment is clipped to that face (``_emit_box_face_segment``, up to
    2 contacts); near an edge or vertex one contact (feature 0) along ``n = (q - g) / |q - g|`` with
    ``phi = |q - g| - rc``. Returns True when the pair is settled here (with or without contacts).
    """
    q = axpy3(t_star, d, p0)
    g = (clamp(q[0], -hb[0], hb[0]), clamp(q[1], -hb[1], hb[1]), clamp(q[2], -hb[2], hb[2]))
    diff = sub3(q, g)
    dist = norm3(diff)
    if not dist > 1.0e-12 * scale:
        return False
    if dist - rc > margin:
        return True
    clamped = 0
    k = 0
    for i in range(3):
        if abs(q[i]) > hb[i] + 1.0e-9 * scale:
            clamped += 1
            k = i
    if clamped == 1:
        _emit_box_face_segment(out, pair_index, sgn, margin, pb, Rb, hb, p0, d, t_star, k, sign(q[k]), rc)
        return True
    n_local = scale3(diff, 1.0 / dist)
    point = midpoint3(g, axpy3(-rc, n_local, q))
    emit_contact(out, pair_index, add3(vec3(pb), rotate3(Rb, point)), rotate3(Rb, n_local), sgn, dist - rc, 0)
    return True


@njit_kernel
def _segment_box_sat(p0, d, hb, scale):
    """Minimum translation of the segment ``p0 + t d`` out of the box ``|x_i| <= hb_i`` (box frame) by SAT.

    Axes: the face normals ``±e_k`` (depth ``hb_k -/+ extreme of the segment along e_k``) and the edge axes
    ``e_k x d / |e_k x d|`` (the segment projects to one point), an edge axis winning only by more than
    ``_EDGE_BIAS * scale`` [m]. Returns ``(depth [m], unit exit axis, k, is_edge)``.
    """
    best_depth = INF
    best_axis = (0.0, 0.0, 1.0)
    best_k = 0
    for k in range(3):
        a0 = p0[k]
        a1 = p0[k] + d[k]
        up = hb[k] - min(a0, a1)
        down = hb[k] + max(a0, a1)
        if up < best_depth:
            best_depth, best_axis, best_k = up, unit_axis(k, 1.0), k
        if down < best_depth:
            best_depth, best_axis, best_k = down, unit_axis(k, -1.0), k
    face_depth = best_depth
    is_edge = False
    d_len = norm3(d)
    if d_len > 1.0e-12 * scale:
        for k in range(3):
            axis = cross3(unit_axis(k, 1.0), scale3(d, 1.0 / d_len))
            axis_len = norm3(axis)
            if axis_len < PARALLEL_CROSS:
                continue
            axis = scale3(axis, 1.0 / axis_len)
            radius = hb[0] * abs(axis[0]) + hb[1] * abs(axis[1]) + hb[2] * abs(axis[2])
            proj = dot3(p0, axis)  # the segment is perpendicular to the axis: one projection
            for s in (1.0, -1.0):
                depth = radius - s * proj
                if depth < best_depth and depth < face_depth - _EDGE_BIAS * scale:
                    best_depth, best_axis, best_k, is_edge = depth, scale3(axis, s), k, True
    return best_depth, best_axis, best_k, is_edge


@njit_kernel
def _emit_box_edge_segment(out, pair_index, sgn, pb, Rb, hb, p0, d, rc, m, k, depth):
    """One contact (feature 3) of the segment ``p0 + t d`` with the box edge along ``e_k`` supporting ``m``.

    The edge is the one at the box's support along the exit axis ``m`` (box frame); the contact sits midway
    between the closest points of edge and capsule surface, ``phi = -(depth + rc)`` [m].
    """
    edge_center = with_component((sign(m[0]) * hb[0], sign(m[1]) * hb[1], sign(m[2]) * hb[2]), k, 0.0)
    e0 = with_component(edge_center, k, -hb[k])
    e_dir = unit_axis(k, 2.0 * hb[k])
    s_seg, t_edge = closest_segment_segment_params(p0, d, e0, e_dir)
    x = axpy3(s_seg, d, p0)
    y = axpy3(t_edge, e_dir, e0)
    point = midpoint3(y, axpy3(-rc, m, x))
    emit_contact(out, pair_index, add3(vec3(pb), rotate3(Rb, point)), rotate3(Rb, m), sgn, -(depth + rc), 3)


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
    center = vec3(pb)
    u = rotate_t3(Rb, column3(Rc, 2))
    cl = rotate_t3(Rb, sub3(vec3(pc), center))
    p0 = axpy3(-hc, u, cl)
    d = scale3(u, 2.0 * hc)
    t_star = closest_segment_box_param(p0, d, hb)
    scale = max(hb[0], hb[1], hb[2], hc, rc)
    if _collide_segment_outside_box(out, pair_index, sgn, margin, pb, Rb, hb, p0, d, t_star, rc, scale):
        return
    # Segment meets the box: minimum translation (depth along +axis) by SAT.
    best_depth, best_axis, best_k, is_edge = _segment_box_sat(p0, d, hb, scale)
    if not -(best_depth + rc) <= margin:
        return
    if not is_edge:
        s = sign(component(best_axis, best_k))
        _emit_box_face_segment(out, pair_index, sgn, margin, pb, Rb, hb, p0, d, t_star, best_k, s, rc)
        return
    _emit_box_edge_segment(out, pair_index, sgn, pb, Rb, hb, p0, d, rc, best_axis, best_k, best_depth)


# ---------------------------------------------------------------------------------------------------------------
# Box vs box
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def _clip_polygon(clip_pos, clip_tag, src, count, axis, side, limit, plane):
    """Sutherland-Hodgman: keep the part of polygon ``clip_pos[src]`` with ``side * x[axis] <= limit (1 +
    _CLIP_SLOP)``, written into ``clip_pos[1 - src]`` (the double buffer indexed in place: a view per call would
    cost reference-count updates in the narrow phase's per-pair loop).

    Returns the new vertex count (at most count + 1).

    Vertex tags are (point id, id of the outgoing edge). Edge ids 0..3 are incident-face edges, 4 + c the side
    plane c; a point created on edge e by plane c gets id ``4 + 4 e + c`` (or a reference-face corner id
    ``20 + corner`` when e is itself a side plane), so ids stay the same while the same features touch.
    """
    dst = 1 - src
    out = 0
    limit = limit * (1.0 + _CLIP_SLOP)
    tol = 1.0e-12 * (1.0 + abs(limit))
    for i in range(count):
        j = i + 1 if i + 1 < count else 0
        fi = side * clip_pos[src, i, axis] - limit
        fj = side * clip_pos[src, j, axis] - limit
        edge = clip_tag[src, i, 1]
        in_i = fi <= tol
        in_j = fj <= tol
        if in_i:
            for c in range(3):
                clip_pos[dst, out, c] = clip_pos[src, i, c]
            clip_tag[dst, out, 0] = clip_tag[src, i, 0]
            clip_tag[dst, out, 1] = edge
            out += 1
        if in_i != in_j:
            t = clamp(fi / (fi - fj), 0.0, 1.0)
            for c in range(3):
                clip_pos[dst, out, c] = clip_pos[src, i, c] + t * (clip_pos[src, j, c] - clip_pos[src, i, c])
            if edge < 4:
                clip_tag[dst, out, 0] = 4 + 4 * edge + plane
            else:
                # Corner of two side planes: bit 0 from the u-plane (0/1), bit 1 from the v-plane (2/3).
                pu = plane if plane < 2 else edge - 4
                pv = edge - 4 if plane < 2 else plane
                clip_tag[dst, out, 0] = 20 + (pu & 1) + 2 * (pv & 1)
            # Leaving: walk along the plane to the re-entry point; entering: continue along the edge.
            clip_tag[dst, out, 1] = 4 + plane if in_i else edge
            out += 1
    return out


@njit_kernel
def _columns(R):
    """The columns of a rotation ``R`` (3, 3) as a tuple of three 3-tuples: the box-box kernels below take a box's
    axes this way (tuples stay in registers; arrays handed down a call chain cost reference-count updates)."""
    return column3(R, 0), column3(R, 1), column3(R, 2)


@njit_kernel
def _rotate_columns(C, v):
    """``R v`` for ``R``'s columns ``C`` (:func:`...math.vec.rotate3`, the same arithmetic)."""
    return (
        C[0][0] * v[0] + C[1][0] * v[1] + C[2][0] * v[2],
        C[0][1] * v[0] + C[1][1] * v[1] + C[2][1] * v[2],
        C[0][2] * v[0] + C[1][2] * v[1] + C[2][2] * v[2],
    )


@njit_kernel
def _box_radius_along(C, h, axis):
    """Half-width [m] of the box (axes ``C``, half extents ``h``) along the unit ``axis``: ``sum_i h_i |axis .
    R e_i|`` (course eq. 86)."""
    r = h[0] * abs(dot3(axis, C[0])) + h[1] * abs(dot3(axis, C[1]))
    r += h[2] * abs(dot3(axis, C[2]))
    return r


@njit_kernel
def _face_axes_separation(R_own, h_own, R_other, h_other, d, margin):
    """Largest separation over the 3 face axes of one box (SAT, course eq. 86).

    ``R_*``: a box's axes as column tuples (:func:`_columns`), ``h_*`` its half extents; ``d`` is the centre offset
    from box A to box B. Returns ``(separation, axis, sign of d along it)``;
    stops early (returning a separation > margin) as soon as one axis separates the boxes.
    """
    best = -INF
    best_axis = 0
    best_sign = 1.0
    for i in range(3):
        axis = R_own[i]
        r_other = _box_radius_along(R_other, h_other, axis)
        dl = dot3(d, axis)
        sep = abs(dl) - h_own[i] - r_other
        if sep > margin:
            return sep, i, sign(dl)
        if sep > best:
            best, best_axis, best_sign = sep, i, sign(dl)
    return best, best_axis, best_sign


@njit_kernel
def _edge_axes_separation(Ra, ha, Rb, hb, d, margin):
    """Largest separation over the 9 edge axes ``a_i x b_j / |a_i x b_j|`` (SAT, course eq. 86).

    Near-parallel edge pairs (``|a_i x b_j| < PARALLEL_CROSS``) are skipped. Returns ``(separation, i, j,
    axis)`` with ``axis`` oriented along ``d`` (a -> b); stops early (a separation > margin) as soon as one
    axis separates the boxes.
    """
    best_e = -INF
    edge_i = 0
    edge_j = 0
    edge_axis = (0.0, 0.0, 1.0)
    for i in range(3):
        for j in range(3):
            axis = cross3(Ra[i], Rb[j])
            length = norm3(axis)
            if length < PARALLEL_CROSS:
                continue
            axis = scale3(axis, 1.0 / length)
            r_a = _box_radius_along(Ra, ha, axis)
            r_b = _box_radius_along(Rb, hb, axis)
            dl = dot3(d, axis)
            s = abs(dl) - r_a - r_b
            if s > margin:
                return s, i, j, edge_axis
            if s > best_e:
                best_e, edge_i, edge_j, edge_axis = s, i, j, scale3(axis, sign(dl))
    return best_e, edge_i, edge_j, edge_axis


@njit_kernel
def _emit_box_edge_edge(out, pair_index, sgn, margin, pa, Ra, ha, pb, Rb, hb, edge_i, edge_j, n):
    """Edge-edge contact (course eq. 87): the supporting edge ``i`` of a along +n and ``j`` of b along -n.

    One contact midway between the closest points ``x`` (on a) and ``y`` (on b), ``phi = (y - x) . n`` [m].
    """
    ca = pa
    cb = pb
    for m in range(3):
        if m != edge_i:
            col = Ra[m]
            ca = axpy3(sign(dot3(col, n)) * ha[m], col, ca)
        if m != edge_j:
            col = Rb[m]
            cb = axpy3(-sign(dot3(col, n)) * hb[m], col, cb)
    ea = Ra[edge_i]
    eb = Rb[edge_j]
    p0 = axpy3(-ha[edge_i], ea, ca)
    q0 = axpy3(-hb[edge_j], eb, cb)
    da = scale3(ea, 2.0 * ha[edge_i])
    db = scale3(eb, 2.0 * hb[edge_j])
    s, t = closest_segment_segment_params(p0, da, q0, db)
    x = axpy3(s, da, p0)
    y = axpy3(t, db, q0)
    gap = dot3(sub3(y, x), n)
    if gap <= margin:
        emit_contact(out, pair_index, midpoint3(x, y), n, sgn, gap, _BOX_EDGE_FEATURE + 3 * edge_i + edge_j)


@njit_kernel
def _incident_face_polygon(pr, Rr, pi, Ri, hi, n_ref, clip_pos, clip_tag):
    """Write the incident face of box i (outward normal most anti-parallel to ``n_ref``) into ``clip_pos[0]``;
    positions and half extents as tuples, axes as column tuples (:func:`_columns`).

    The 4 corners (4, 3) [m] are in the reference box frame, counter-clockwise (+,+), (-,+), (-,-), (+,-);
    corner q gets tag ``(q, q)`` (edge q joins corner q to q + 1).
    """
    f = 0
    best_c = -1.0
    for j in range(3):
        c = abs(dot3(Ri[j], n_ref))
        if c > best_c:
            best_c, f = c, j
    f_sign = -sign(dot3(Ri[f], n_ref))
    face_center = axpy3(f_sign * hi[f], Ri[f], pi)
    u = (f + 1) % 3
    v = (f + 2) % 3
    for q in range(4):
        su = 1.0 if (q == 0 or q == 3) else -1.0
        sv = 1.0 if q < 2 else -1.0
        x = axpy3(su * hi[u], Ri[u], face_center)
        x = axpy3(sv * hi[v], Ri[v], x)
        rel = sub3(x, pr)
        xl = (dot3(Rr[0], rel), dot3(Rr[1], rel), dot3(Rr[2], rel))  # R^T rel (math.vec.rotate_t3)
        for c in range(3):
            clip_pos[0, q, c] = xl[c]
        clip_tag[0, q, 0] = q
        clip_tag[0, q, 1] = q


@njit_kernel
def _in_plane_area(clip, src, a, b, q, ku, kv):
    """Twice the signed area of the triangle (a, b, q) of the clipped points ``clip[src]`` projected on the
    reference face."""
    ax, ay = clip[src, a, ku], clip[src, a, kv]
    return (clip[src, b, ku] - ax) * (clip[src, q, kv] - ay) - (clip[src, b, kv] - ay) * (clip[src, q, ku] - ax)


@njit_kernel
def _manifold_of_four(clip, src, count, k, ref_sign, hk, margin):
    """Bit mask of the clipped points to emit: all within margin when at most 4, else 4 that span the patch.

    A face-face clip gives up to 8 points; a pair needs 4 to hold a box flat, and more rows only slow the
    solver and share the same load (Bullet and ODE keep 4 too). Kept: the deepest point, the point farthest
    from it in the face plane, then the points of largest triangle area on either side of that diagonal.
    ``clip[src]`` (8, 3): points in the reference box frame; ``k``, ``ref_sign``, ``hk``: the reference face.
    """
    deepest, kept = -1, 0
    for q in range(count):
        gap = ref_sign * clip[src, q, k] - hk
        if gap <= margin:
            kept += 1
            if deepest < 0 or gap < ref_sign * clip[src, deepest, k] - hk:
                deepest = q
    if kept <= 4:
        return 0xFF
    ku = (k + 1) % 3
    kv = (k + 2) % 3
    far, far_d = deepest, -1.0
    for q in range(count):
        if ref_sign * clip[src, q, k] - hk <= margin:
            d = (clip[src, q, ku] - clip[src, deepest, ku]) ** 2 + (clip[src, q, kv] - clip[src, deepest, kv]) ** 2
            if d > far_d:
                far, far_d = q, d
    left, right, a_left, a_right = -1, -1, 0.0, 0.0
    for q in range(count):
        if ref_sign * clip[src, q, k] - hk <= margin:
            area = _in_plane_area(clip, src, deepest, far, q, ku, kv)
            if area > a_left:
                left, a_left = q, area
            elif area < a_right:
                right, a_right = q, area
    mask = (1 << deepest) | (1 << far)
    if left >= 0:
        mask |= 1 << left
    if right >= 0:
        mask |= 1 << right
    return mask


@njit_kernel
def _emit_box_face_face(out, pair_index, sgn, margin, pr, Rr, hr, pi, Ri, hi, k, ref_sign, flip, face_code,
                        clip_pos, clip_tag):  # fmt: skip
    """Face contacts: clip box i's incident face by the 4 side planes of the reference face ``ref_sign e_k`` of r.

    Each clipped point within margin of the reference plane is one contact midway between the point and its
    projection, ``phi = ref_sign x_k - hr_k`` [m], normal ``flip * n_ref`` (a -> b). At most 4 contacts
    (:func:`_manifold_of_four`).
    """
    n_ref = scale3(Rr[k], ref_sign)
    _incident_face_polygon(pr, Rr, pi, Ri, hi, n_ref, clip_pos, clip_tag)
    count = np.int64(4)  # not the literal 4: _clip_polygon would be compiled for Literal[int](4) too
    src = 0
    ku = (k + 1) % 3
    kv = (k + 2) % 3
    for plane in range(4):
        axis = ku if plane < 2 else kv
        side = 1.0 if (plane & 1) == 0 else -1.0
        count = _clip_polygon(clip_pos, clip_tag, src, count, axis, side, hr[axis], plane)
        src = 1 - src
        if count == 0:
            return
    n = scale3(n_ref, flip)
    keep = _manifold_of_four(clip_pos, src, count, k, ref_sign, hr[k], margin)
    for q in range(count):
        xl = (clip_pos[src, q, 0], clip_pos[src, q, 1], clip_pos[src, q, 2])
        gap = ref_sign * component(xl, k) - hr[k]
        if gap <= margin and (keep >> q) & 1:
            # Midway between the incident point and its projection on the reference plane.
            local = with_component(xl, k, component(xl, k) - 0.5 * gap * ref_sign)
            point = add3(pr, _rotate_columns(Rr, local))
            feature = clip_tag[src, q, 0] + _BOX_POINT_IDS * face_code
            emit_contact(out, pair_index, point, n, sgn, gap, feature)


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
    xa, Ca, sa = vec3(pa), _columns(Ra), vec3(ha)  # tuples from here down: no array changes hands
    xb, Cb, sb = vec3(pb), _columns(Rb), vec3(hb)
    d = sub3(xb, xa)
    scale = max(sa[0], sa[1], sa[2], sb[0], sb[1], sb[2])
    best_a, axis_a, sign_a = _face_axes_separation(Ca, sa, Cb, sb, d, margin)
    if best_a > margin:
        return
    best_b, axis_b, sign_b = _face_axes_separation(Cb, sb, Ca, sa, d, margin)
    if best_b > margin:
        return
    best_e, edge_i, edge_j, edge_axis = _edge_axes_separation(Ca, sa, Cb, sb, d, margin)
    if best_e > margin:
        return
    ref_is_b = best_b > best_a + _FACE_BIAS * scale
    best_face = best_b if ref_is_b else best_a
    if best_e > best_face + _EDGE_BIAS * scale:
        _emit_box_edge_edge(out, pair_index, sgn, margin, xa, Ca, sa, xb, Cb, sb, edge_i, edge_j, edge_axis)
        return
    # Face case. Reference box r, incident box i; ref_sign * e_k (r frame) is the reference face normal, pointing
    # towards the incident box; flip turns it into the a -> b normal.
    if ref_is_b:
        _emit_box_face_face(out, pair_index, sgn, margin, xb, Cb, sb, xa, Ca, sa, axis_b, -sign_b, -1.0, 3 + axis_b,
                            clip_pos, clip_tag)  # fmt: skip
    else:
        _emit_box_face_face(out, pair_index, sgn, margin, xa, Ca, sa, xb, Cb, sb, axis_a, sign_a, 1.0, axis_a,
                            clip_pos, clip_tag)  # fmt: skip
