"""GJK distance and EPA penetration depth of two convex cores (seed 000 §2.1.3: "Alternatives: GJK (+EPA)").

One job: the signed distance, normal and witness points of two :class:`~.support.ConvexShape` cores, given only
their support functions (``support.support_core``). Everything works on the Minkowski difference
``D = A - B = {a - b}``, whose support point along d is ``s_D(d) = s_A(d) - s_B(-d)``; the signed distance is
``phi = -min_{|d|=1} h_D(d)`` with ``h_D(d) = s_D(d) . d``, and the minimising d is the normal from A to B.

- Separated (origin outside D): GJK (Gilbert, Johnson, Keerthi 1988) finds the point v of D closest to the
  origin. Each step adds ``w = s_D(-v)`` to a simplex of at most 4 points and replaces v by the simplex point
  closest to the origin (Voronoi regions of the segment, triangle and tetrahedron). ``|v|`` is an upper bound of
  the distance and ``v . w / |v|`` a lower bound; it stops when they agree to ``GJK_REL``. The witness points are
  ``a = sum_i lambda_i a_i`` and ``b = a - v``; the unit normal from A to B is ``n = -v / |v|``.
- Overlapping (origin inside D): EPA (van den Bergen 2001) grows a polytope inside D from GJK's final simplex. Its
  face closest to the origin (distance delta, outward normal n) gives a lower bound of the depth and
  ``s_D(n) . n`` an upper bound; the face is split at ``s_D(n)``: a depth-first walk over face neighbours
  removes the faces seen from the new point and returns their horizon as one loop, which is joined to it. It
  stops when the bounds agree to ``EPA_REL``. Moving B by ``delta n`` separates the cores.
- Curved boundaries: EPA converges only linearly there and GJK's direction only as the square root of its
  distance, so where the bounds still differ the normal is refined by the ellipsoid method on ``h_D``
  (``polish_normal``) and the witness point re-derived from the supporting features (``refine_witness``).

All buffers live in a :class:`SeparationScratch` allocated once by the caller (no allocation per pair). EPA stops
after ``EPA_ITER_MAX`` splits, or when a sliver face would lower its (monotone) lower bound; a flat D (a point
and a triangle as the cores) has no interior, and its penetration direction is the normal of that flat.
"""

import math
from typing import NamedTuple

import numpy as np

from ...jit import njit_kernel
from ...math.vec import axpy3, cross3, dot3, norm3, scale3, sub3
from .contact_common import unit_axis
from .support import support_core

GJK_ITER_MAX = 64
"""GJK iterations; polytopes converge in a few, smooth shapes well within it."""

GJK_REL = 1.0e-12
"""GJK stops when ``|v| - v . w / |v| <= GJK_REL |v|`` (relative accuracy of the distance)."""

TOUCH_REL = 1.0e-11
"""``|v|`` below this (x pair size) counts as touching: EPA then measures the (tiny) depth."""

EPA_ITER_MAX = 128
"""EPA splits; each adds one vertex. Polytopes converge exactly well within it."""

EPA_REL = 1.0e-9
"""EPA stops when ``s_D(n) . n - delta <= EPA_REL x pair size``: finer faces would be at round-off level."""

POLISH_REL = 1.0e-13
"""EPA results with a larger gap (x pair size) are curved and get their normal refined by ``polish_normal``."""

EPA_VERT_MAX = EPA_ITER_MAX + 4
"""EPA polytope vertices: the initial tetrahedron plus one per split."""

EPA_FACE_MAX = 4 * EPA_VERT_MAX
"""EPA face slots: a closed triangulated polytope with V vertices has 2V - 4 faces; twice that for slivers."""

POLISH_ITER_MAX = 200
"""Ellipsoid-method steps refining EPA's normal on curved Minkowski boundaries."""

POLISH_ROUNDS = 3
"""Restarts of the normal refinement when its optimum lies at the rim of its search disc."""

POLISH_CONFIRM = 1.0e-3
"""Radius [rad] of the final refinement round around the best normal."""

POLISH_ANGLE = 1.0e-8
"""The refinement stops once the ellipse of candidate normals is this narrow [rad]."""


class SeparationScratch(NamedTuple):
    """GJK simplex and EPA polytope buffers (allocated once, see :func:`allocate_separation_scratch`)."""

    simplex_w: np.ndarray
    """Minkowski points ``w = a - b`` of the GJK simplex, shape (8, 3) [m]; rows 4-7 back up the last simplex."""
    simplex_a: np.ndarray
    """Their points ``a`` on core A, shape (8, 3) [m]."""
    simplex_l: np.ndarray
    """Barycentric weights of the closest point, shape (8,)."""
    epa_w: np.ndarray
    """EPA polytope vertices, shape (EPA_VERT_MAX, 3) [m]."""
    epa_a: np.ndarray
    """Their points on core A, shape (EPA_VERT_MAX, 3) [m]."""
    epa_face: np.ndarray
    """Vertex triples, counter-clockwise seen from outside, shape (EPA_FACE_MAX, 3), int64."""
    epa_adj: np.ndarray
    """Neighbour face across edge (v_c, v_c+1) of each face, shape (EPA_FACE_MAX, 3), int64."""
    epa_plane: np.ndarray
    """Outward unit normal and origin distance ``n . w_i`` of each face, shape (EPA_FACE_MAX, 4)."""
    epa_alive: np.ndarray
    """1: face of the polytope, 2: seen from the new vertex (being removed), 0: free slot; (EPA_FACE_MAX,) int64."""
    epa_stack: np.ndarray
    """Depth-first silhouette walk: (face, next edge, edges left), shape (EPA_FACE_MAX, 3), int64."""
    epa_edge: np.ndarray
    """Horizon loop: (v0, v1, outer face, its edge index, new face), shape (EPA_FACE_MAX, 5), int64."""


@njit_kernel
def allocate_separation_scratch():
    """A fresh :class:`SeparationScratch`."""
    return SeparationScratch(
        np.zeros((8, 3)),
        np.zeros((8, 3)),
        np.zeros(8),
        np.zeros((EPA_VERT_MAX, 3)),
        np.zeros((EPA_VERT_MAX, 3)),
        np.zeros((EPA_FACE_MAX, 3), np.int64),
        np.zeros((EPA_FACE_MAX, 3), np.int64),
        np.zeros((EPA_FACE_MAX, 4)),
        np.zeros(EPA_FACE_MAX, np.int64),
        np.zeros((EPA_FACE_MAX, 3), np.int64),
        np.zeros((EPA_FACE_MAX, 5), np.int64),
    )


@njit_kernel(inline="always")
def _row(buf, i):
    """``buf[i]`` as a tuple."""
    return (buf[i, 0], buf[i, 1], buf[i, 2])


@njit_kernel(inline="always")
def _set_row(buf, i, x):
    """``buf[i] = x``."""
    buf[i, 0] = x[0]
    buf[i, 1] = x[1]
    buf[i, 2] = x[2]


@njit_kernel(inline="always")
def support_minkowski(A, B, verts, d):
    """``(s_D(d), s_A(d))``: support of ``D = A - B`` along ``d`` and its point on A [m] (``verts``: hull vertices)."""
    a = support_core(A, verts, d)
    b = support_core(B, verts, scale3(d, -1.0))
    return sub3(a, b), a


# ---------------------------------------------------------------------------------------------------------------
# GJK: closest point of a simplex to the origin
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def _closest_triangle(p0, p1, p2):
    """Barycentric weights of the point of triangle (p0, p1, p2) closest to the origin.

    Voronoi regions in order: vertices, edges, interior, each from dot products of the edges with the vertex
    positions (the origin relative to a vertex is minus that vertex); a degenerate triangle falls to an edge.
    """
    e1 = sub3(p1, p0)
    e2 = sub3(p2, p0)
    d1 = -dot3(e1, p0)
    d2 = -dot3(e2, p0)
    if d1 <= 0.0 and d2 <= 0.0:
        return 1.0, 0.0, 0.0
    d3 = -dot3(e1, p1)
    d4 = -dot3(e2, p1)
    if d3 >= 0.0 and d4 <= d3:
        return 0.0, 1.0, 0.0
    vc = d1 * d4 - d3 * d2  # signed area opposite p2, seen from the origin's projection
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        return 1.0 - t, t, 0.0
    d5 = -dot3(e1, p2)
    d6 = -dot3(e2, p2)
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        return 1.0 - t, 0.0, t
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return 0.0, 1.0 - t, t
    total = va + vb + vc
    if not total > 0.0:  # collinear: every region test failed only by round-off; take the edge p0-p1
        t = min(max(d1 / (d1 - d3), 0.0), 1.0) if d1 != d3 else 0.0
        return 1.0 - t, t, 0.0
    return va / total, vb / total, vc / total


@njit_kernel(inline="always")
def _compact_simplex(sw, sa, sl, count):
    """Drop simplex points of zero weight; returns the new count and the closest point ``sum lambda_i w_i``."""
    kept = 0
    v = (0.0, 0.0, 0.0)
    for i in range(count):
        if sl[i] > 0.0:
            for c in range(3):
                sw[kept, c] = sw[i, c]
                sa[kept, c] = sa[i, c]
            sl[kept] = sl[i]
            v = axpy3(sl[i], _row(sw, i), v)
            kept += 1
    return kept, v


@njit_kernel
def _closest_tetrahedron(sw, sl):
    """Weights of the tetrahedron point closest to the origin; returns True if the origin is inside.

    The origin is outside face (i, j, k) when it lies across that face's plane from the fourth vertex (opp); the
    closest point is then the best over such faces. A flat tetrahedron (relative volume < 1e-12) has no inside:
    all four faces are searched.
    """
    p = (_row(sw, 0), _row(sw, 1), _row(sw, 2), _row(sw, 3))
    size = max(norm3(sub3(p[1], p[0])), norm3(sub3(p[2], p[0])), norm3(sub3(p[3], p[0])))
    volume = dot3(cross3(sub3(p[1], p[0]), sub3(p[2], p[0])), sub3(p[3], p[0]))
    flat = abs(volume) <= 1.0e-12 * size * size * size
    best = math.inf
    inside = not flat
    for opp in range(4):
        i = (opp + 1) % 4
        j = (opp + 2) % 4
        k = (opp + 3) % 4
        normal = cross3(sub3(p[j], p[i]), sub3(p[k], p[i]))
        origin_side = -dot3(normal, p[i])
        if not flat and origin_side * dot3(normal, sub3(p[opp], p[i])) >= 0.0:
            continue  # origin on the fourth vertex's side of this face
        inside = False
        wi, wj, wk = _closest_triangle(p[i], p[j], p[k])
        v = axpy3(wk, p[k], axpy3(wj, p[j], scale3(p[i], wi)))
        dist = dot3(v, v)
        if dist < best:
            best = dist
            sl[i], sl[j], sl[k], sl[opp] = wi, wj, wk, 0.0
    return inside


@njit_kernel
def closest_simplex_point(sw, sa, sl, count):
    """Reduce the simplex ``sw[:count]`` to the smallest face holding its point closest to the origin.

    Returns ``(count, v, inside)``: the new count, that point v, and whether the origin lies inside a
    (non-flat) tetrahedron, in which case the simplex is kept whole and v = 0.
    """
    if count == 1:
        sl[0] = 1.0
    elif count == 2:
        p0 = _row(sw, 0)
        e = sub3(_row(sw, 1), p0)
        ee = dot3(e, e)
        t = min(max(-dot3(p0, e) / ee, 0.0), 1.0) if ee > 0.0 else 0.0
        sl[0] = 1.0 - t
        sl[1] = t
    elif count == 3:
        sl[0], sl[1], sl[2] = _closest_triangle(_row(sw, 0), _row(sw, 1), _row(sw, 2))
    elif _closest_tetrahedron(sw, sl):
        return 4, (0.0, 0.0, 0.0), True
    count, v = _compact_simplex(sw, sa, sl, count)
    return count, v, False


@njit_kernel(inline="always")
def _copy_simplex(sw, sa, sl, src, dst, count):
    """Copy simplex rows ``src:src+count`` to ``dst:dst+count`` (points, A points, weights)."""
    for i in range(count):
        for c in range(3):
            sw[dst + i, c] = sw[src + i, c]
            sa[dst + i, c] = sa[src + i, c]
        sl[dst + i] = sl[src + i]


@njit_kernel
def gjk_distance(A, B, verts, max_dist, scratch):
    """GJK on the cores of A and B; returns ``(status, count, v)``.

    status 0: the cores are farther apart than ``max_dist`` [m] (a lower bound proves it); 1: separated, v (3,)
    is the point of D closest to the origin within ``GJK_REL``; 2: touching or overlapping (the simplex holds the
    origin, or ``|v| <= TOUCH_REL`` x size): EPA must measure the depth. ``scratch.simplex_*[:count]`` hold the
    final simplex and its weights.
    """
    sw, sa, sl = scratch.simplex_w, scratch.simplex_a, scratch.simplex_l
    scale = max(A.scale, B.scale)
    d = sub3(B.center, A.center)
    if dot3(d, d) <= (1.0e-12 * scale) ** 2:
        d = (1.0, 0.0, 0.0)  # coincident centres: any start direction
    w, a = support_minkowski(A, B, verts, d)
    _set_row(sw, 0, w)
    _set_row(sa, 0, a)
    sl[0] = 1.0
    count = 1
    v = w
    touch = (TOUCH_REL * scale) ** 2
    for _ in range(GJK_ITER_MAX):
        vv = dot3(v, v)
        if vv <= touch:
            return 2, count, v
        w, a = support_minkowski(A, B, verts, scale3(v, -1.0))
        vw = dot3(v, w)
        if vw > 0.0 and vw * vw > vv * max_dist * max_dist:
            return 0, count, v  # lower bound v . w / |v| beyond max_dist
        if vv - vw <= GJK_REL * vv:
            return 1, count, v
        _copy_simplex(sw, sa, sl, 0, 4, count)
        _set_row(sw, count, w)
        _set_row(sa, count, a)
        new_count, new_v, inside = closest_simplex_point(sw, sa, sl, count + 1)
        if inside:
            return 2, new_count, new_v
        if dot3(new_v, new_v) >= vv:
            # No progress: round-off (thin simplex) has reached the floor; keep the previous, better simplex.
            _copy_simplex(sw, sa, sl, 4, 0, count)
            return 1, count, v
        count, v = new_count, new_v
    return 1, count, v


# ---------------------------------------------------------------------------------------------------------------
# EPA
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel(inline="always")
def _set_face(S, f, i, j, k, interior):
    """Face slot f = (i, j, k) with its outward unit normal and origin distance; degenerate faces never win."""
    S.epa_face[f, 0] = i
    S.epa_face[f, 1] = j
    S.epa_face[f, 2] = k
    S.epa_alive[f] = 1
    wi = _row(S.epa_w, i)
    n = cross3(sub3(_row(S.epa_w, j), wi), sub3(_row(S.epa_w, k), wi))
    length = norm3(n)
    if not length > 0.0:
        S.epa_plane[f, 0] = S.epa_plane[f, 1] = S.epa_plane[f, 2] = 0.0
        S.epa_plane[f, 3] = math.inf
        return
    n = scale3(n, 1.0 / length)
    if dot3(n, sub3(wi, interior)) < 0.0:
        n = scale3(n, -1.0)  # round-off flipped a sliver: keep the normal outward
    _set_row(S.epa_plane, f, n)
    S.epa_plane[f, 3] = dot3(n, wi)


@njit_kernel(inline="always")
def _add_vertex(S, nv, w, a):
    """Append polytope vertex (w, a); returns the new vertex count."""
    _set_row(S.epa_w, nv, w)
    _set_row(S.epa_a, nv, a)
    return nv + 1


@njit_kernel
def _blow_up(A, B, verts, S, nv, tol):
    """Grow GJK's final simplex (nv < 4 points, holding the origin) to a tetrahedron; returns the vertex count.

    Adds support points along directions that leave the simplex's affine hull: the 6 axes from a point,
    perpendiculars of a segment, the two normals of a triangle. Returns fewer than 4 when D is flat (its
    extent along every such direction is below ``tol``).
    """
    if nv == 1:
        w0 = _row(S.epa_w, 0)
        for k in range(6):
            w, a = support_minkowski(A, B, verts, unit_axis(k // 2, 1.0 - 2.0 * (k % 2)))
            if norm3(sub3(w, w0)) > tol:
                nv = _add_vertex(S, nv, w, a)
                break
        if nv == 1:
            return nv
    if nv == 2:
        w0 = _row(S.epa_w, 0)
        e = sub3(_row(S.epa_w, 1), w0)
        e = scale3(e, 1.0 / norm3(e))
        # Perpendiculars p, q of e; try p, q, -p, -q and keep the point farthest from the line.
        k = 0 if abs(e[0]) <= abs(e[1]) and abs(e[0]) <= abs(e[2]) else (1 if abs(e[1]) <= abs(e[2]) else 2)
        p = cross3(e, unit_axis(k, 1.0))
        p = scale3(p, 1.0 / norm3(p))
        q = cross3(e, p)
        best = tol
        best_w = best_a = w0
        for m in range(4):
            d = p if m == 0 else (q if m == 1 else (scale3(p, -1.0) if m == 2 else scale3(q, -1.0)))
            w, a = support_minkowski(A, B, verts, d)
            r = sub3(w, w0)
            off = norm3(axpy3(-dot3(r, e), e, r))
            if off > best:
                best, best_w, best_a = off, w, a
        if best <= tol:
            return nv
        nv = _add_vertex(S, nv, best_w, best_a)
    if nv == 3:
        w0 = _row(S.epa_w, 0)
        n = cross3(sub3(_row(S.epa_w, 1), w0), sub3(_row(S.epa_w, 2), w0))
        n = scale3(n, 1.0 / norm3(n))
        for s in (1.0, -1.0):
            w, a = support_minkowski(A, B, verts, scale3(n, s))
            if s * dot3(sub3(w, w0), n) > tol:
                return _add_vertex(S, nv, w, a)
    return nv


@njit_kernel
def _flat_normal(A, B, S, nv):
    """Normal for a flat D (no interior): across its plane, or perpendicular to its line, toward B."""
    toward = sub3(B.center, A.center)
    w0 = _row(S.epa_w, 0)
    if nv >= 3:
        n = cross3(sub3(_row(S.epa_w, 1), w0), sub3(_row(S.epa_w, 2), w0))
    elif nv == 2:
        e = sub3(_row(S.epa_w, 1), w0)
        n = axpy3(-dot3(toward, e) / dot3(e, e), e, toward)
        if norm3(n) <= 1.0e-12 * norm3(e):
            n = cross3(e, (1.0, 0.0, 0.0) if abs(e[0]) < 0.9 * norm3(e) else (0.0, 1.0, 0.0))
    else:
        n = toward if norm3(toward) > 0.0 else (0.0, 0.0, 1.0)
    n = scale3(n, 1.0 / norm3(n))
    return scale3(n, -1.0) if dot3(n, toward) < 0.0 else n


@njit_kernel(inline="always")
def _closest_face(S, fmax):
    """Live face nearest to the origin (smallest plane distance) among the first ``fmax`` slots (-1: none)."""
    best = np.int64(-1)
    best_d = math.inf
    for f in range(fmax):
        if S.epa_alive[f] == 1 and S.epa_plane[f, 3] < best_d:
            best_d = S.epa_plane[f, 3]
            best = f
    return best


@njit_kernel(inline="always")
def _edge_to(S, h, g):
    """Index c of the edge of face h whose neighbour is g."""
    return 0 if S.epa_adj[h, 0] == g else (1 if S.epa_adj[h, 1] == g else 2)


@njit_kernel
def _silhouette(S, f0, w, eps):
    """Mark the faces seen from w that connect to face f0 (``alive = 2``) and write their horizon loop.

    Depth-first walk over face neighbours (van den Bergen 2001): a face entered through its edge e continues
    with edges e + 1 and e + 2, so the horizon edges (v0, v1, outer face, outer edge) come out as one loop,
    counter-clockwise seen from w. Faces seen only through round-off but not connected to f0 stay, so the
    polytope stays a closed manifold. Returns the number of horizon edges.
    """
    S.epa_alive[f0] = 2
    S.epa_stack[0, 0], S.epa_stack[0, 1], S.epa_stack[0, 2] = f0, 0, 3
    top = 0
    edges = 0
    while top >= 0:
        g, c, left = S.epa_stack[top, 0], S.epa_stack[top, 1], S.epa_stack[top, 2]
        if left == 0:
            top -= 1
            continue
        S.epa_stack[top, 1] = (c + 1) % 3
        S.epa_stack[top, 2] = left - 1
        h = S.epa_adj[g, c]
        if S.epa_alive[h] == 2:
            continue  # edge between two removed faces
        e = _edge_to(S, h, g)
        if dot3(_row(S.epa_plane, h), w) - S.epa_plane[h, 3] > eps and top + 1 < EPA_FACE_MAX:
            S.epa_alive[h] = 2
            top += 1
            S.epa_stack[top, 0], S.epa_stack[top, 1], S.epa_stack[top, 2] = h, (e + 1) % 3, 2
        else:
            S.epa_edge[edges, 0] = S.epa_face[g, c]
            S.epa_edge[edges, 1] = S.epa_face[g, (c + 1) % 3]
            S.epa_edge[edges, 2] = h
            S.epa_edge[edges, 3] = e
            edges += 1
    return edges


@njit_kernel
def _split(S, f0, nv, live, used, interior, eps):
    """Replace the faces seen from the new vertex ``nv - 1`` (connected to f0) by a fan to their horizon.

    Faces occupy slots below ``used``. Returns ``(live, used)`` after the split, or ``(-1, used)`` (polytope
    untouched) when the horizon is not one closed loop or the face slots would not hold the fan.
    """
    w = _row(S.epa_w, nv - 1)
    edges = _silhouette(S, f0, w, eps)
    removed = 0
    for f in range(used):
        removed += S.epa_alive[f] == 2
    closed = edges >= 3
    for k in range(edges):
        closed = closed and S.epa_edge[k, 1] == S.epa_edge[(k + 1) % edges, 0]
    if not closed or live - removed + edges > EPA_FACE_MAX:
        for f in range(used):
            S.epa_alive[f] = 1 if S.epa_alive[f] == 2 else S.epa_alive[f]
        return -1, used
    for f in range(used):
        S.epa_alive[f] = 0 if S.epa_alive[f] == 2 else S.epa_alive[f]
    slot = 0
    for k in range(edges):
        while S.epa_alive[slot] != 0:
            slot += 1
        _set_face(S, slot, S.epa_edge[k, 0], S.epa_edge[k, 1], nv - 1, interior)
        h = S.epa_edge[k, 2]
        S.epa_adj[slot, 0] = h
        S.epa_adj[h, S.epa_edge[k, 3]] = slot
        S.epa_edge[k, 4] = slot
        used = max(used, slot + 1)
    for k in range(edges):
        # Edge (v1, w) of fan face k is edge (w, v0) of fan face k + 1.
        S.epa_adj[S.epa_edge[k, 4], 1] = S.epa_edge[(k + 1) % edges, 4]
        S.epa_adj[S.epa_edge[k, 4], 2] = S.epa_edge[(k + edges - 1) % edges, 4]
    return live - removed + edges, used


@njit_kernel(inline="always")
def _face_witness(S, f):
    """Point on core A of the origin's projection onto face f, by its barycentric weights (clamped to the face)."""
    i, j, k = S.epa_face[f, 0], S.epa_face[f, 1], S.epa_face[f, 2]
    n = _row(S.epa_plane, f)
    x = scale3(n, S.epa_plane[f, 3])
    wi, wj, wk = _row(S.epa_w, i), _row(S.epa_w, j), _row(S.epa_w, k)
    li = max(dot3(cross3(sub3(wj, x), sub3(wk, x)), n), 0.0)
    lj = max(dot3(cross3(sub3(wk, x), sub3(wi, x)), n), 0.0)
    lk = max(dot3(cross3(sub3(wi, x), sub3(wj, x)), n), 0.0)
    total = li + lj + lk
    if not total > 0.0:
        li, lj, lk, total = 1.0, 1.0, 1.0, 3.0
    a = scale3(_row(S.epa_a, i), li / total)
    a = axpy3(lj / total, _row(S.epa_a, j), a)
    return axpy3(lk / total, _row(S.epa_a, k), a)


@njit_kernel
def _ellipsoid_round(A, B, verts, n0, upper, radius):
    """One run of the ellipsoid method from the disc of ``radius`` [rad] around n0 (``h_D(n0) = upper``).

    d = (n0 + u) / |n0 + u| with u in the tangent plane (basis t1, t2); subgradient of ``F(u) = h_D(d)``:
    ``dF/du_i = (t_i . w - (d . t_i)(d . w)) / |n0 + u|`` with w = s_D(d). Central cut of the ellipse
    ``{c + L x : |x| <= 1}`` kept in factored form, which stays positive definite however thin it gets (a thin
    valley: a point near a cylinder's axis): with ``p = L^T g / |L^T g|``, ``c -= L p / 3`` and
    ``L = 2/sqrt(3) (L - (1 - 1/sqrt(3)) (L p) p^T)``, i.e. ``E = L L^T`` goes to ``4/3 (E - 2/3 E g g^T E / g^T E g)``.
    Returns the best unit normal and its overlap ``h_D`` [m].
    """
    k = 0 if abs(n0[0]) <= abs(n0[1]) and abs(n0[0]) <= abs(n0[2]) else (1 if abs(n0[1]) <= abs(n0[2]) else 2)
    t1 = cross3(n0, unit_axis(k, 1.0))
    t1 = scale3(t1, 1.0 / norm3(t1))
    t2 = cross3(n0, t1)
    c1 = c2 = 0.0
    l11, l12, l21, l22 = radius, 0.0, 0.0, radius
    gamma = 1.0 - 1.0 / math.sqrt(3.0)
    grow = 2.0 / math.sqrt(3.0)
    best, best_n = upper, n0
    for _ in range(POLISH_ITER_MAX):
        raw = axpy3(c2, t2, axpy3(c1, t1, n0))
        length = norm3(raw)
        d = scale3(raw, 1.0 / length)
        w = support_minkowski(A, B, verts, d)[0]
        wd = dot3(w, d)
        if wd < best:
            best, best_n = wd, d
        g1 = dot3(t1, w) - dot3(d, t1) * wd  # the common factor 1 / |n0 + u| does not change the cut
        g2 = dot3(t2, w) - dot3(d, t2) * wd
        q1 = l11 * g1 + l21 * g2  # q = L^T g
        q2 = l12 * g1 + l22 * g2
        q = math.sqrt(q1 * q1 + q2 * q2)
        if not q > 0.0:
            break  # zero subgradient: d is optimal
        p1, p2 = q1 / q, q2 / q
        lp1 = l11 * p1 + l12 * p2  # L p
        lp2 = l21 * p1 + l22 * p2
        c1 -= lp1 / 3.0
        c2 -= lp2 / 3.0
        l11, l12 = grow * (l11 - gamma * lp1 * p1), grow * (l12 - gamma * lp1 * p2)
        l21, l22 = grow * (l21 - gamma * lp2 * p1), grow * (l22 - gamma * lp2 * p2)
        if l11 * l11 + l12 * l12 + l21 * l21 + l22 * l22 < POLISH_ANGLE * POLISH_ANGLE:
            break  # the largest semi-axis is below the Frobenius norm of L
    return best_n, best


@njit_kernel
def polish_normal(A, B, verts, n0, upper, radius):
    """Minimise the overlap ``h_D(d) = s_D(d) . d`` over unit d near ``n0`` (``h_D(n0) = upper``).

    EPA is Kelley's cutting-plane method on ``h_D`` and converges only linearly on curved boundaries (the gap
    falls 4x per ~16 splits); GJK's direction converges only as the square root of its distance. The normal is
    refined by the ellipsoid method (Shor 1977; Yudin and Nemirovski 1976) in ``_ellipsoid_round``: cutting
    planes need no smoothness, so polytope kinks are handled too. The method cannot leave its first disc of
    ``radius`` [rad]; when the best normal ends near its rim (a flat valley, e.g. a point on a cone's axis) it
    restarts there, at most ``POLISH_ROUNDS`` times, then confirms on a ``POLISH_CONFIRM`` disc. Returns the
    best unit normal and its overlap [m].
    """
    n, value = n0, upper
    for _ in range(POLISH_ROUNDS):
        start = n
        n, value = _ellipsoid_round(A, B, verts, start, value, radius)
        if norm3(sub3(n, start)) < 0.8 * radius:
            break
    if radius > POLISH_CONFIRM:
        # Penetration depth need not be quasi-convex over a wide disc (a cone's curved valley of slant normals):
        # confirm on a small disc around the best normal, where it is.
        n, value = _ellipsoid_round(A, B, verts, n, value, POLISH_CONFIRM)
    return n, value


@njit_kernel
def _is_unique_support(S, verts, d, x):
    """Whether the support point x of S along unit d is unique: tilting d by 1e-6 rad moves it by < 1e-3 size
    (a face or edge would let it jump across the feature; a curved surface moves it by ~1e-6 radius)."""
    k = 0 if abs(d[0]) <= abs(d[1]) and abs(d[0]) <= abs(d[2]) else (1 if abs(d[1]) <= abs(d[2]) else 2)
    t1 = cross3(d, unit_axis(k, 1.0))
    t1 = scale3(t1, 1.0 / norm3(t1))
    t2 = cross3(d, t1)
    for m in range(4):
        tilt = scale3(t1 if m < 2 else t2, 1.0e-6 if m % 2 == 0 else -1.0e-6)
        if norm3(sub3(support_core(S, verts, axpy3(1.0, tilt, d)), x)) > 1.0e-3 * S.scale:
            return False
    return True


@njit_kernel
def refine_witness(A, B, verts, n, dist, a):
    """Witness point on A's core for the refined normal n and signed core distance ``dist`` [m].

    The optimum pairs a point of A's supporting feature along n with one of B's along -n, ``dist`` apart along
    n. A unique support point of A is that point; else B's unique one gives ``b - dist n``; else (two flat
    features, e.g. parallel faces) the GJK/EPA estimate ``a`` is moved onto A's supporting plane.
    """
    sa = support_core(A, verts, n)
    if _is_unique_support(A, verts, n, sa):
        return sa
    minus_n = scale3(n, -1.0)
    sb = support_core(B, verts, minus_n)
    if _is_unique_support(B, verts, minus_n, sb):
        return axpy3(-dist, n, sb)
    return axpy3(dot3(sub3(sa, a), n), n, a)


@njit_kernel
def _init_tetrahedron(S):
    """The 4 faces of the tetrahedron ``S.epa_w[:4]`` with their neighbours; returns its centroid.

    The centroid stays inside the growing polytope and orients every later face.
    """
    interior = (0.0, 0.0, 0.0)
    for i in range(4):
        interior = axpy3(0.25, _row(S.epa_w, i), interior)
    S.epa_alive[:] = 0
    for opp in range(4):
        i, j, k = (opp + 1) % 4, (opp + 2) % 4, (opp + 3) % 4
        # Wind every face counter-clockwise seen from outside (away from vertex opp): neighbouring faces then list
        # their shared edge in opposite directions, which the fan construction in _split relies on.
        wi = _row(S.epa_w, i)
        if dot3(cross3(sub3(_row(S.epa_w, j), wi), sub3(_row(S.epa_w, k), wi)), sub3(_row(S.epa_w, opp), wi)) > 0.0:
            j, k = k, j
        _set_face(S, opp, i, j, k, interior)
    for f in range(4):
        for c in range(3):
            # The neighbour across edge (u, v) is the other face holding it: the face opposite the vertex that is
            # neither u, v nor f (face f is opposite vertex f; the four indices sum to 6).
            u, v = S.epa_face[f, c], S.epa_face[f, (c + 1) % 3]
            S.epa_adj[f, c] = 6 - f - u - v
    return interior


@njit_kernel
def epa_penetration(A, B, verts, count, scratch):
    """EPA from GJK's final simplex (``scratch.simplex_*[:count]``, holding the origin); returns
    ``(normal, depth, a)``: the unit normal from A to B, the penetration depth delta [m] (moving B by
    ``delta n`` separates the cores; may be slightly negative when just touching) and the witness point on A's
    core (the one on B's is ``a - delta n``).
    """
    S = scratch
    scale = max(A.scale, B.scale)
    for i in range(count):
        for c in range(3):
            S.epa_w[i, c] = S.simplex_w[i, c]
            S.epa_a[i, c] = S.simplex_a[i, c]
    nv = _blow_up(A, B, verts, S, count, 1.0e-10 * scale)
    if nv < 4:
        # Flat D: both cores lie in one plane (e.g. a triangle and a point); zero depth across it.
        a = (0.0, 0.0, 0.0)
        for i in range(count):
            a = axpy3(S.simplex_l[i], _row(S.simplex_a, i), a)
        return _flat_normal(A, B, S, nv), 0.0, a
    interior = _init_tetrahedron(S)
    live = used = np.int64(4)  # not literals: Numba would compile _split once more for them
    f = _closest_face(S, used)
    n, delta, a = _row(S.epa_plane, f), S.epa_plane[f, 3], _face_witness(S, f)
    for _ in range(EPA_ITER_MAX):
        if S.epa_plane[f, 3] < delta - EPA_REL * scale:
            break  # the lower bound can only grow: a sliver face went wrong, keep the last good face
        n, delta, a = _row(S.epa_plane, f), S.epa_plane[f, 3], _face_witness(S, f)
        w, wa = support_minkowski(A, B, verts, n)
        if dot3(w, n) - delta <= EPA_REL * scale or nv == EPA_VERT_MAX:
            break
        nv = _add_vertex(S, nv, w, wa)
        live, used = _split(S, f, nv, live, used, interior, 1.0e-14 * scale)
        f_next = _closest_face(S, used)
        if live < 0 or f_next < 0:
            break
        f = f_next
    upper = dot3(support_minkowski(A, B, verts, n)[0], n)
    gap = upper - delta
    if gap <= POLISH_REL * scale:
        return n, delta, a  # a polytope face: exact
    # Curved boundary: refine the normal. h_D grows at least ~ (size / 10) theta^2 / 2 away from its minimum, so
    # the minimiser lies within sqrt(2 gap / (size / 10)) of n (doubled for safety).
    n, delta = polish_normal(A, B, verts, n, upper, min(0.5, 2.0 * math.sqrt(20.0 * gap / scale)))
    return n, delta, refine_witness(A, B, verts, n, -delta, a)


@njit_kernel
def convex_separation(A, B, verts, max_dist, scratch):
    """Signed distance of the cores of A and B: ``(status, normal, distance, a, b)``.

    status 0: farther apart than ``max_dist`` [m] (nothing else is meaningful); 1: separated (GJK), distance > 0;
    2: touching or overlapping (EPA), distance = -depth <= 0 (up to round-off). ``normal`` (unit) points from A
    to B; a and b are the witness points on the two cores, ``b - a = distance * normal``.
    """
    status, count, v = gjk_distance(A, B, verts, max_dist, scratch)
    if status == 0:
        return 0, (0.0, 0.0, 1.0), math.inf, v, v
    if status == 2:
        n, depth, a = epa_penetration(A, B, verts, count, scratch)
        return 2, n, -depth, a, axpy3(-depth, n, a)
    a = (0.0, 0.0, 0.0)
    for i in range(count):
        a = axpy3(scratch.simplex_l[i], _row(scratch.simplex_a, i), a)
    dist = norm3(v)
    n = scale3(v, -1.0 / dist)
    # |v| is within GJK_REL of the distance, but v's direction only within about the square root of that
    # (|v - v*|^2 <= |v|^2 - |v*|^2): refine it where the bounds still differ (curved shapes).
    upper = dot3(support_minkowski(A, B, verts, n)[0], n)  # = -(separation along n) >= -distance
    gap = dist + upper
    if gap > POLISH_REL * max(A.scale, B.scale):
        n, upper = polish_normal(A, B, verts, n, upper, min(0.5, 2.0 * math.sqrt(20.0 * gap / max(A.scale, B.scale))))
        dist = -upper
        a = refine_witness(A, B, verts, n, dist, a)
    return 1, n, dist, a, axpy3(dist, n, a)
