"""Squared unsigned distances between contact primitives, with exact gradients and Hessians (spec D.3.2).

IPC measures point–triangle and edge–edge proximity with *unsigned* Euclidean distances whose closest
points are re-determined at every evaluation ([Li et al. 2020]; course Eq.293-294)::

    d_PT(p, t0, t1, t2)     = min_{u,v >= 0, u+v <= 1} || p - ((1-u-v) t0 + u t1 + v t2) ||
    d_EE(ea0, ea1, eb0, eb1) = min_{a,b in [0,1]} || ((1-a) ea0 + a ea1) - ((1-b) eb0 + b eb1) ||

Every function here returns the **squared** distance ``d²`` (as the IPC Toolkit does): it is a
polynomial / rational function of the coordinates inside each closest-feature case and needs no
square root. Points are float64 (3,) arrays [m] (views are fine); results are in [m²].

**Closest-feature cases.** ``point_triangle_case`` / ``edge_edge_case`` return one of the constants
below (the values equal ipctk's ``PointTriangleDistanceType`` / ``EdgeEdgeDistanceType``, and the
decision rules are ipctk 1.6.1's, including its relative parallel test for edges; for nearly parallel
edges the EE rule is evaluated without cancellation, see :func:`edge_edge_case`). Inside a case the
distance is a point–point, point–line, point–plane or line–line distance.

**Accuracy.** Values carry the rounding of their closed form: relative error ~ eps x condition, where
the condition grows as gap / size shrinks and for sliver triangles or nearly parallel lines (e.g. a
gap 1e-6 of the size on a 1e-3 sliver loses ~7 digits, as ipctk does).

**Derivative layout.** 12 dofs, vertex-major: PT ``[p, t0, t1, t2]``, EE ``[ea0, ea1, eb0, eb1]``
(``grad[3k + i]`` is coordinate ``i`` of vertex ``k``). ``*_derivatives`` functions write every entry
of the caller's ``grad`` (12,) and ``hess`` (12, 12) (zeros for dofs the active case ignores).

**Exact Hessian (envelope form).** In every case the residual is ``r(x, c) = sum_k w_k(c) x_k`` with
weights affine in the m <= 2 closest-point parameters ``c`` (t for a segment, (u, v) for the face,
(a, b) for line–line), and ``d²(x) = min_c g(x, c)``, ``g = |r|²``. At the case's stationary point
``g_c = 0``, so (implicit function theorem)::

    grad d² = g_x                          = 2 w_k r                                (per vertex k)
    hess d² = g_xx - g_xc g_cc^-1 g_cx,    g_xx = 2 (w w^T) (x) I3,   g_cc = 2 E^T E,
    g_xc[3k+i, j] = 2 (w_k E_j[i] + dw_k/dc_j r[i]),    E_j = dr/dc_j (3,)

which is what :func:`_write_envelope_derivatives` evaluates (2x2 inverse by hand, no BLAS).

**Edge–edge mollifier** ([Li et al. 2020] Sec. 4.3, as in ipctk): nearly parallel edges make the EE
distance non-smooth; the barrier of an EE pair is multiplied by ``m(c)``, ``c = |(ea1-ea0) x (eb1-eb0)|²``,
``m = (2 - c/eps_x) c/eps_x`` for ``c < eps_x`` else 1, with ``eps_x = 1e-3 |ea1-ea0|² |eb1-eb0|²`` of
the rest shape.

No function allocates: small vectors are tuples, the outputs are the caller's buffers.
"""

import numpy as np

from ..jit import njit_kernel
from ..math.vec import cross3, dot3, scale3, sub3

# Point–triangle closest feature (values = ipctk PointTriangleDistanceType).
PP_T0 = 0
"""Point closest to vertex t0 (point–point)."""
PP_T1 = 1
"""Point closest to vertex t1 (point–point)."""
PP_T2 = 2
"""Point closest to vertex t2 (point–point)."""
PE_T0T1 = 3
"""Point closest to the interior of edge t0-t1 (point–line)."""
PE_T1T2 = 4
"""Point closest to the interior of edge t1-t2 (point–line)."""
PE_T2T0 = 5
"""Point closest to the interior of edge t2-t0 (point–line)."""
PT_FACE = 6
"""Point closest to the triangle interior (point–plane)."""

# Edge–edge closest features (values = ipctk EdgeEdgeDistanceType).
EA0_EB0 = 0
"""Endpoints ea0 and eb0 (point–point)."""
EA0_EB1 = 1
"""Endpoints ea0 and eb1 (point–point)."""
EA1_EB0 = 2
"""Endpoints ea1 and eb0 (point–point)."""
EA1_EB1 = 3
"""Endpoints ea1 and eb1 (point–point)."""
EA_EB0 = 4
"""Interior of edge a and endpoint eb0 (point–line)."""
EA_EB1 = 5
"""Interior of edge a and endpoint eb1 (point–line)."""
EA0_EB = 6
"""Endpoint ea0 and interior of edge b (point–line)."""
EA1_EB = 7
"""Endpoint ea1 and interior of edge b (point–line)."""
EA_EB = 8
"""Interiors of both edges (line–line)."""

# Point–segment closest feature (values = ipctk PointEdgeDistanceType).
PE_E0 = 0
"""Point closest to endpoint e0."""
PE_E1 = 1
"""Point closest to endpoint e1."""
PE_E = 2
"""Point closest to the segment interior."""

EDGE_EDGE_PARALLEL_THRESHOLD = 2.5e-16
"""Edges count as parallel when ``|ea x eb|² < 2.5e-16 |ea|² |eb|²`` (sin² of the angle; ipctk 1.6.1)."""

EDGE_EDGE_MOLLIFIER_SCALE = 1.0e-3
"""``eps_x = 1e-3 |ea|² |eb|²`` at rest ([Li et al. 2020] Sec. 4.3)."""

_ZERO4 = (0.0, 0.0, 0.0, 0.0)
_ZERO3 = (0.0, 0.0, 0.0)


# --------------------------------------------------------------------------- small helpers


@njit_kernel
def _slots(i, vi, j, vj, k, vk):
    """4-tuple with ``vi`` at slot i, ``vj`` at j, ``vk`` at k (distinct, or -1 = unused) and 0 elsewhere."""
    out0 = vi if i == 0 else (vj if j == 0 else (vk if k == 0 else 0.0))
    out1 = vi if i == 1 else (vj if j == 1 else (vk if k == 1 else 0.0))
    out2 = vi if i == 2 else (vj if j == 2 else (vk if k == 2 else 0.0))
    out3 = vi if i == 3 else (vj if j == 3 else (vk if k == 3 else 0.0))
    return (out0, out1, out2, out3)


# --------------------------------------------------------------------------- classification


@njit_kernel
def point_edge_case(p, e0, e1):
    """Closest feature of segment ``e0-e1`` to point ``p``: ``PE_E0``, ``PE_E1`` or ``PE_E``.

    A zero-length segment reports ``PE_E0``.
    """
    e = sub3(e1, e0)
    e2 = dot3(e, e)
    if e2 == 0.0:
        return PE_E0
    ratio = dot3(e, sub3(p, e0)) / e2
    if ratio < 0.0:
        return PE_E0
    if ratio > 1.0:
        return PE_E1
    return PE_E


@njit_kernel
def _edge_side_params(p, a, b, n):
    """Coordinates (s0, s1) of ``p - a`` in the in-plane frame ``(b - a, (b - a) x n)``.

    ``0 < s0 < 1`` means p projects inside the edge; ``s1 >= 0`` means p lies on the outer side of the
    edge (for a counter-clockwise triangle with normal n). Solved from the 2x2 normal equations, as
    ipctk does, so boundary decisions agree with it.
    """
    e = sub3(b, a)
    f = cross3(e, n)
    q = sub3(p, a)
    m00 = dot3(e, e)
    m01 = dot3(e, f)
    m11 = dot3(f, f)
    r0 = dot3(e, q)
    r1 = dot3(f, q)
    det = m00 * m11 - m01 * m01
    if det == 0.0:
        # degenerate triangle (n = 0): only the position along the edge is meaningful
        return r0 / m00, 0.0
    return (m11 * r0 - m01 * r1) / det, (m00 * r1 - m01 * r0) / det


@njit_kernel
def point_triangle_case(p, t0, t1, t2):
    """Closest feature of triangle ``(t0, t1, t2)`` to point ``p`` (``PP_T*``, ``PE_*`` or ``PT_FACE``).

    Each edge is tested in its own frame (along the edge, outward in the plane); an edge wins if p
    projects inside it and lies outside the triangle across it; a vertex wins if p lies before one
    incident edge and beyond the other; else the face. Same decision rule as ipctk 1.6.1.
    """
    n = cross3(sub3(t1, t0), sub3(t2, t0))
    s00, s01 = _edge_side_params(p, t0, t1, n)
    if s00 > 0.0 and s00 < 1.0 and s01 >= 0.0:
        return PE_T0T1
    s10, s11 = _edge_side_params(p, t1, t2, n)
    if s10 > 0.0 and s10 < 1.0 and s11 >= 0.0:
        return PE_T1T2
    s20, s21 = _edge_side_params(p, t2, t0, n)
    if s20 > 0.0 and s20 < 1.0 and s21 >= 0.0:
        return PE_T2T0
    if s00 <= 0.0 and s20 >= 1.0:
        return PP_T0
    if s10 <= 0.0 and s00 >= 1.0:
        return PP_T1
    if s20 <= 0.0 and s10 >= 1.0:
        return PP_T2
    return PT_FACE


@njit_kernel
def edge_edge_parallel_case(ea0, ea1, eb0, eb1):
    """Closest features of two parallel edges (never ``EA_EB``: the line–line distance is undefined).

    ``alpha``, ``beta`` = positions of eb0, eb1 along edge a (0 at ea0, 1 at ea1). If eb0 projects
    inside edge a, the pair is ``EA_EB0``; otherwise the endpoint / edge combination of the overlap.
    """
    ea = sub3(ea1, ea0)
    ea2 = dot3(ea, ea)
    alpha = dot3(sub3(eb0, ea0), ea) / ea2
    beta = dot3(sub3(eb1, ea0), ea) / ea2
    # ac: 0 = ea0, 1 = ea1, 2 = edge a interior; bc: 0 = eb0, 1 = eb1, 2 = edge b interior
    if alpha < 0.0:
        ac = 2 if (0.0 <= beta and beta <= 1.0) else 0
        bc = 0 if beta <= alpha else (1 if beta <= 1.0 else 2)
    elif alpha > 1.0:
        ac = 2 if (0.0 <= beta and beta <= 1.0) else 1
        bc = 0 if beta >= alpha else (1 if 0.0 <= beta else 2)
    else:
        ac = 2
        bc = 0
    if bc < 2:
        return 2 * ac + bc  # EA0_EB0 .. EA1_EB1, EA_EB0, EA_EB1
    return EA0_EB + ac  # EA0_EB or EA1_EB (ac == 2 cannot happen with bc == 2)


@njit_kernel
def edge_edge_case(ea0, ea1, eb0, eb1):
    """Closest features of edges ``ea0-ea1`` and ``eb0-eb1`` (one of ``EA0_EB0`` ... ``EA_EB``).

    Solves the 2x2 normal equations of the two lines (Eq.101) and clamps the parameters
    (Sunday's segment–segment algorithm, geomalgorithms.com a07, the algorithm of ipctk 1.6.1). Nearly
    parallel edges (``|ea x eb|² < EDGE_EDGE_PARALLEL_THRESHOLD |ea|² |eb|²``) use
    :func:`edge_edge_parallel_case`, zero-length edges the point cases. Unlike ipctk, the determinant
    and the numerators are evaluated through cross products (no cancellation), so for nearly parallel
    edges (sin² ~ 1e-16..1e-12) the case follows the exact geometry where ipctk's follows rounding
    noise; elsewhere the decisions are identical.
    """
    u = sub3(ea1, ea0)
    v = sub3(eb1, eb0)
    w = sub3(ea0, eb0)
    a = dot3(u, u)
    b = dot3(u, v)
    c = dot3(v, v)
    d = dot3(u, w)
    e = dot3(v, w)
    if a == 0.0 and c == 0.0:
        return EA0_EB0
    if a == 0.0:
        return EA0_EB
    if c == 0.0:
        return EA_EB0
    uv = cross3(u, v)
    D = dot3(uv, uv)  # = a c - b², without its cancellation for nearly parallel edges
    if D < EDGE_EDGE_PARALLEL_THRESHOLD * a * c:
        return edge_edge_parallel_case(ea0, ea1, eb0, eb1)

    # line parameters: s = sN / D on edge a, t = tN / tD on edge b, with the numerators
    # b e - c d = ((u x v) x v) . w and a e - b d = ((u x v) x u) . w (Lagrange), again cancellation-free
    default = EA_EB
    sN = dot3(cross3(uv, v), w)
    if sN <= 0.0:  # s clamped to 0: ea0 against edge b
        tN = e
        tD = c
        default = EA0_EB
    elif sN >= D:  # s clamped to 1: ea1 against edge b
        tN = e + b
        tD = c
        default = EA1_EB
    else:
        tN = dot3(cross3(uv, u), w)
        tD = D
    if tN <= 0.0:  # t clamped to 0: eb0 against edge a
        if -d <= 0.0:
            return EA0_EB0
        if -d >= a:
            return EA1_EB0
        return EA_EB0
    if tN >= tD:  # t clamped to 1: eb1 against edge a
        if -d + b <= 0.0:
            return EA0_EB1
        if -d + b >= a:
            return EA1_EB1
        return EA_EB1
    return default


# --------------------------------------------------------------------------- values


@njit_kernel
def point_point_distance2(p, q):
    """``|p - q|²`` [m²]."""
    r = sub3(p, q)
    return dot3(r, r)


@njit_kernel
def point_line_distance2(p, e0, e1):
    """Squared distance [m²] of point p to the infinite line through e0, e1: ``|(e0 - p) x (e1 - p)|² / |e1 - e0|²``."""
    c = cross3(sub3(e0, p), sub3(e1, p))
    e = sub3(e1, e0)
    return dot3(c, c) / dot3(e, e)


@njit_kernel
def point_edge_distance2(p, e0, e1):
    """Squared distance [m²] of point p to the segment e0-e1 (clamped)."""
    case = point_edge_case(p, e0, e1)
    if case == PE_E0:
        return point_point_distance2(p, e0)
    if case == PE_E1:
        return point_point_distance2(p, e1)
    return point_line_distance2(p, e0, e1)


@njit_kernel
def point_plane_distance2(p, origin, normal):
    """Squared distance [m²] of p to the plane through ``origin`` with (not necessarily unit) ``normal``.

    ``((p - origin) . n)² / |n|²``.
    """
    s = dot3(sub3(p, origin), normal)
    return s * s / dot3(normal, normal)


@njit_kernel
def line_line_distance2(ea0, ea1, eb0, eb1):
    """Squared distance [m²] between the infinite lines: ``((ea0 - eb0) . n)² / |n|²``, ``n = ea x eb``."""
    n = cross3(sub3(ea1, ea0), sub3(eb1, eb0))
    s = dot3(sub3(ea0, eb0), n)
    return s * s / dot3(n, n)


@njit_kernel
def _point_triangle_value(p, t0, t1, t2, case):
    if case == PP_T0:
        return point_point_distance2(p, t0)
    if case == PP_T1:
        return point_point_distance2(p, t1)
    if case == PP_T2:
        return point_point_distance2(p, t2)
    if case == PE_T0T1:
        return point_line_distance2(p, t0, t1)
    if case == PE_T1T2:
        return point_line_distance2(p, t1, t2)
    if case == PE_T2T0:
        return point_line_distance2(p, t2, t0)
    return point_plane_distance2(p, t0, cross3(sub3(t1, t0), sub3(t2, t0)))


@njit_kernel
def point_triangle_distance2(p, t0, t1, t2):
    """Squared unsigned distance [m²] between point p and triangle (t0, t1, t2) (Eq.293)."""
    return _point_triangle_value(p, t0, t1, t2, point_triangle_case(p, t0, t1, t2))


@njit_kernel
def _edge_edge_value(ea0, ea1, eb0, eb1, case):
    if case == EA0_EB0:
        return point_point_distance2(ea0, eb0)
    if case == EA0_EB1:
        return point_point_distance2(ea0, eb1)
    if case == EA1_EB0:
        return point_point_distance2(ea1, eb0)
    if case == EA1_EB1:
        return point_point_distance2(ea1, eb1)
    if case == EA_EB0:
        return point_line_distance2(eb0, ea0, ea1)
    if case == EA_EB1:
        return point_line_distance2(eb1, ea0, ea1)
    if case == EA0_EB:
        return point_line_distance2(ea0, eb0, eb1)
    if case == EA1_EB:
        return point_line_distance2(ea1, eb0, eb1)
    return line_line_distance2(ea0, ea1, eb0, eb1)


@njit_kernel
def edge_edge_distance2(ea0, ea1, eb0, eb1):
    """Squared unsigned distance [m²] between segments ea0-ea1 and eb0-eb1 (Eq.294)."""
    return _edge_edge_value(ea0, ea1, eb0, eb1, edge_edge_case(ea0, ea1, eb0, eb1))


# --------------------------------------------------------------------------- derivatives


@njit_kernel
def _write_envelope_derivatives(nslot, w, d0, d1, e0, e1, r, m, grad, hess):
    """Gradient and exact Hessian of ``min_c |sum_k w_k(c) x_k|²`` at the stationary ``c`` (module docstring).

    Args:
        nslot: number of vertices (3 dofs each) written to grad (3 nslot,) and hess (3 nslot, 3 nslot).
        w: 4-tuple, residual weights ``w_k`` at the optimum (``r = sum_k w_k x_k``).
        d0, d1: 4-tuples, ``dw_k/dc_0``, ``dw_k/dc_1`` (constant: weights are affine in c).
        e0, e1: 3-tuples, ``E_j = dr/dc_j = sum_k dw_k/dc_j x_k``.
        r: 3-tuple, the residual (closest-point difference) [m].
        m: number of active parameters (0, 1 or 2); unused d/e entries are ignored.
    """
    # (E^T E)^-1, entries i00, i01, i11 (zeros for the unused parameters)
    i00 = 0.0
    i01 = 0.0
    i11 = 0.0
    if m == 1:
        i00 = 1.0 / dot3(e0, e0)
    elif m == 2:
        n = cross3(e0, e1)
        det = dot3(n, n)  # = |e0|²|e1|² - (e0.e1)² without cancellation
        i00 = dot3(e1, e1) / det
        i01 = -dot3(e0, e1) / det
        i11 = dot3(e0, e0) / det
    for k in range(nslot):
        for i in range(3):
            row = 3 * k + i
            grad[row] = 2.0 * w[k] * r[i]
            # half of g_xc for this row
            gk0 = w[k] * e0[i] + d0[k] * r[i]
            gk1 = w[k] * e1[i] + d1[k] * r[i]
            for q in range(nslot):
                for j in range(3):
                    col = 3 * q + j
                    if col < row:
                        continue  # mirrored below: the Hessian is exactly symmetric
                    gl0 = w[q] * e0[j] + d0[q] * r[j]
                    gl1 = w[q] * e1[j] + d1[q] * r[j]
                    h = -2.0 * (gk0 * (i00 * gl0 + i01 * gl1) + gk1 * (i01 * gl0 + i11 * gl1))
                    if i == j:
                        h += 2.0 * w[k] * w[q]
                    hess[row, col] = h
                    hess[col, row] = h


@njit_kernel
def _point_point_setup(xi, xj, i, j):
    """Envelope data of ``r = x_i - x_j`` (no parameters)."""
    r = sub3(xi, xj)
    return _slots(i, 1.0, j, -1.0, np.int64(-1), 0.0), _ZERO4, _ZERO4, _ZERO3, _ZERO3, r, 0


@njit_kernel
def _point_line_setup(xp, xa, xb, ip, ia, ib, sign):
    """Envelope data of ``r = sign (x_p - ((1 - t) x_a + t x_b))`` at the line's closest t."""
    e = sub3(xb, xa)
    q = sub3(xp, xa)
    ee = dot3(e, e)
    t = dot3(e, q) / ee
    # perpendicular part of q as (e x q) x e / |e|²: exactly orthogonal to e up to rounding
    rp = scale3(cross3(cross3(e, q), e), sign / ee)
    w = _slots(ip, sign, ia, -sign * (1.0 - t), ib, -sign * t)
    d0 = _slots(ia, sign, ib, -sign, np.int64(-1), 0.0)
    return w, d0, _ZERO4, scale3(e, -sign), _ZERO3, rp, 1


@njit_kernel
def _plane_params(q, e0, e1):
    """Parameters c minimising ``|q + c0 e0 + c1 e1|`` (2x2 normal equations).

    Cramer's rule with the Lagrange identities ``det = |e0 x e1|²`` and numerators
    ``((n x e1) . q, -(n x e0) . q)``, ``n = e0 x e1``: no cancellation for slivers / nearly parallel lines.
    """
    n = cross3(e0, e1)
    det = dot3(n, n)
    return dot3(cross3(n, e1), q) / det, -dot3(cross3(n, e0), q) / det


@njit_kernel
def _face_setup(p, t0, t1, t2):
    """Envelope data of ``r = p - ((1-u-v) t0 + u t1 + v t2)`` at the plane's closest (u, v)."""
    e0 = sub3(t0, t1)  # dr/du
    e1 = sub3(t0, t2)  # dr/dv
    q = sub3(p, t0)
    u, v = _plane_params(q, e0, e1)
    n = cross3(sub3(t1, t0), sub3(t2, t0))
    r = scale3(n, dot3(n, q) / dot3(n, n))  # normal component of p - t0
    w = (1.0, -(1.0 - u - v), -u, -v)
    return w, (0.0, 1.0, -1.0, 0.0), (0.0, 1.0, 0.0, -1.0), e0, e1, r, 2


@njit_kernel
def _line_line_setup(ea0, ea1, eb0, eb1):
    """Envelope data of ``r = (1-a) ea0 + a ea1 - (1-b) eb0 - b eb1`` at the lines' closest (a, b)."""
    e0 = sub3(ea1, ea0)  # dr/da
    e1 = sub3(eb0, eb1)  # dr/db
    q = sub3(ea0, eb0)
    a, b = _plane_params(q, e0, e1)
    n = cross3(e0, e1)
    r = scale3(n, dot3(n, q) / dot3(n, n))  # common-normal component of ea0 - eb0
    w = (1.0 - a, a, -(1.0 - b), -b)
    return w, (-1.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, -1.0), e0, e1, r, 2


@njit_kernel
def _point_triangle_setup(p, t0, t1, t2, case):
    if case == PP_T0:
        return _point_point_setup(p, t0, np.int64(0), np.int64(1))
    if case == PP_T1:
        return _point_point_setup(p, t1, np.int64(0), np.int64(2))
    if case == PP_T2:
        return _point_point_setup(p, t2, np.int64(0), np.int64(3))
    if case == PE_T0T1:
        return _point_line_setup(p, t0, t1, np.int64(0), np.int64(1), np.int64(2), 1.0)
    if case == PE_T1T2:
        return _point_line_setup(p, t1, t2, np.int64(0), np.int64(2), np.int64(3), 1.0)
    if case == PE_T2T0:
        return _point_line_setup(p, t2, t0, np.int64(0), np.int64(3), np.int64(1), 1.0)
    return _face_setup(p, t0, t1, t2)


@njit_kernel
def _edge_edge_setup(ea0, ea1, eb0, eb1, case):
    # r = (point on a) - (point on b) in every case, hence sign -1 when the point is on b
    if case == EA0_EB0:
        return _point_point_setup(ea0, eb0, np.int64(0), np.int64(2))
    if case == EA0_EB1:
        return _point_point_setup(ea0, eb1, np.int64(0), np.int64(3))
    if case == EA1_EB0:
        return _point_point_setup(ea1, eb0, np.int64(1), np.int64(2))
    if case == EA1_EB1:
        return _point_point_setup(ea1, eb1, np.int64(1), np.int64(3))
    if case == EA_EB0:
        return _point_line_setup(eb0, ea0, ea1, np.int64(2), np.int64(0), np.int64(1), -1.0)
    if case == EA_EB1:
        return _point_line_setup(eb1, ea0, ea1, np.int64(3), np.int64(0), np.int64(1), -1.0)
    if case == EA0_EB:
        return _point_line_setup(ea0, eb0, eb1, np.int64(0), np.int64(2), np.int64(3), 1.0)
    if case == EA1_EB:
        return _point_line_setup(ea1, eb0, eb1, np.int64(1), np.int64(2), np.int64(3), 1.0)
    return _line_line_setup(ea0, ea1, eb0, eb1)


@njit_kernel
def point_triangle_distance2_derivatives(p, t0, t1, t2, grad, hess):
    """Squared PT distance with its gradient and exact Hessian (dofs ``[p, t0, t1, t2]``).

    Args:
        p, t0, t1, t2: (3,) float64 [m].
        grad: (12,) float64, output ``d(d²)/dx`` [m].
        hess: (12, 12) float64, output ``d²(d²)/dx²`` [1] (symmetric; may be indefinite).

    Returns:
        d² [m²], identical to :func:`point_triangle_distance2`.
    """
    case = point_triangle_case(p, t0, t1, t2)
    w, d0, d1, e0, e1, r, m = _point_triangle_setup(p, t0, t1, t2, case)
    _write_envelope_derivatives(np.int64(4), w, d0, d1, e0, e1, r, m, grad, hess)
    return _point_triangle_value(p, t0, t1, t2, case)


@njit_kernel
def edge_edge_distance2_derivatives(ea0, ea1, eb0, eb1, grad, hess):
    """Squared EE distance with its gradient and exact Hessian (dofs ``[ea0, ea1, eb0, eb1]``).

    Args:
        ea0, ea1, eb0, eb1: (3,) float64 [m].
        grad: (12,) float64, output ``d(d²)/dx`` [m].
        hess: (12, 12) float64, output ``d²(d²)/dx²`` [1] (symmetric; may be indefinite).

    Returns:
        d² [m²], identical to :func:`edge_edge_distance2`.
    """
    case = edge_edge_case(ea0, ea1, eb0, eb1)
    w, d0, d1, e0, e1, r, m = _edge_edge_setup(ea0, ea1, eb0, eb1, case)
    _write_envelope_derivatives(np.int64(4), w, d0, d1, e0, e1, r, m, grad, hess)
    return _edge_edge_value(ea0, ea1, eb0, eb1, case)


@njit_kernel
def point_point_distance2_derivatives(p, q, grad, hess):
    """``|p - q|²`` with gradient (6,) and Hessian (6, 6) over dofs ``[p, q]``; returns d² [m²]."""
    w, d0, d1, e0, e1, r, m = _point_point_setup(p, q, np.int64(0), np.int64(1))
    _write_envelope_derivatives(np.int64(2), w, d0, d1, e0, e1, r, m, grad, hess)
    return point_point_distance2(p, q)


@njit_kernel
def point_edge_distance2_derivatives(p, e0, e1, grad, hess):
    """Squared point–segment distance with gradient (9,) and Hessian (9, 9) over dofs ``[p, e0, e1]``.

    Returns:
        d² [m²], identical to :func:`point_edge_distance2`.
    """
    case = point_edge_case(p, e0, e1)
    if case == PE_E0:
        w, d0, d1, a, b, r, m = _point_point_setup(p, e0, np.int64(0), np.int64(1))
        val = point_point_distance2(p, e0)
    elif case == PE_E1:
        w, d0, d1, a, b, r, m = _point_point_setup(p, e1, np.int64(0), np.int64(2))
        val = point_point_distance2(p, e1)
    else:
        w, d0, d1, a, b, r, m = _point_line_setup(p, e0, e1, np.int64(0), np.int64(1), np.int64(2), 1.0)
        val = point_line_distance2(p, e0, e1)
    _write_envelope_derivatives(np.int64(3), w, d0, d1, a, b, r, m, grad, hess)
    return val


@njit_kernel
def point_plane_distance2_derivatives(p, origin, normal, grad, hess):
    """Squared distance to a fixed plane with derivatives w.r.t. ``p`` only.

    ``d² = ((p - o) . n)² / |n|²``, ``grad = 2 ((p - o) . n) n / |n|²`` (3,), ``hess = 2 n n^T / |n|²`` (3, 3).
    Returns d² [m²].
    """
    nn = dot3(normal, normal)
    s = dot3(sub3(p, origin), normal)
    for i in range(3):
        grad[i] = 2.0 * s * normal[i] / nn
        for j in range(3):
            hess[i, j] = 2.0 * normal[i] * normal[j] / nn
    return s * s / nn


# --------------------------------------------------------------------------- edge-edge mollifier


@njit_kernel
def edge_edge_mollifier_threshold(ea0_rest, ea1_rest, eb0_rest, eb1_rest):
    """Mollifier activation ``eps_x = 1e-3 |ea1 - ea0|² |eb1 - eb0|²`` [m⁴] of the rest edges."""
    ea = sub3(ea1_rest, ea0_rest)
    eb = sub3(eb1_rest, eb0_rest)
    return EDGE_EDGE_MOLLIFIER_SCALE * dot3(ea, ea) * dot3(eb, eb)


@njit_kernel
def edge_edge_cross2(ea0, ea1, eb0, eb1, grad, hess):
    """``c = |ea x eb|²`` [m⁴] (``ea = ea1 - ea0``, ``eb = eb1 - eb0``) with gradient (12,) and Hessian (12, 12).

    With Lagrange's identity ``c = |ea|²|eb|² - (ea.eb)²``::

        dc/dea = 2 (|eb|² ea - (ea.eb) eb),     dc/deb = 2 (|ea|² eb - (ea.eb) ea)
        H_aa = 2 (|eb|² I - eb eb^T),  H_bb = 2 (|ea|² I - ea ea^T),  H_ab = 2 (2 ea eb^T - eb ea^T - (ea.eb) I)

    and the vertex dofs get the signs ``(-1, +1, -1, +1)``.
    """
    ea = sub3(ea1, ea0)
    eb = sub3(eb1, eb0)
    aa = dot3(ea, ea)
    bb = dot3(eb, eb)
    ab = dot3(ea, eb)
    for i in range(3):
        ga = 2.0 * (bb * ea[i] - ab * eb[i])
        gb = 2.0 * (aa * eb[i] - ab * ea[i])
        grad[i] = -ga
        grad[3 + i] = ga
        grad[6 + i] = -gb
        grad[9 + i] = gb
    for i in range(3):
        for j in range(3):
            delta = 1.0 if i == j else 0.0
            haa = 2.0 * (bb * delta - eb[i] * eb[j])
            hbb = 2.0 * (aa * delta - ea[i] * ea[j])
            hab = 2.0 * (2.0 * ea[i] * eb[j] - eb[i] * ea[j] - ab * delta)  # d²c / dea_i deb_j
            for k in range(4):
                sk = -1.0 if k % 2 == 0 else 1.0
                for q in range(4):
                    sq = -1.0 if q % 2 == 0 else 1.0
                    if k < 2 and q < 2:
                        h = haa
                    elif k >= 2 and q >= 2:
                        h = hbb
                    elif k < 2:
                        h = hab
                    else:
                        h = 2.0 * (2.0 * ea[j] * eb[i] - eb[j] * ea[i] - ab * delta)  # H_ba = H_ab^T
                    hess[3 * k + i, 3 * q + j] = sk * sq * h
    c = cross3(ea, eb)
    return dot3(c, c)


@njit_kernel
def edge_edge_mollifier_value(ea0, ea1, eb0, eb1, eps_x):
    """Mollifier ``m = (2 - c/eps_x) c/eps_x`` for ``c = |ea x eb|² < eps_x``, else 1 [1]."""
    cr = cross3(sub3(ea1, ea0), sub3(eb1, eb0))
    c = dot3(cr, cr)
    if c < eps_x:
        x = c / eps_x
        return (2.0 - x) * x
    return 1.0


@njit_kernel
def edge_edge_mollifier(ea0, ea1, eb0, eb1, eps_x, grad, hess):
    """EE mollifier with its gradient (12,) [1/m] and Hessian (12, 12) [1/m²] over ``[ea0, ea1, eb0, eb1]``.

    ``m'(c) = 2/eps_x - 2c/eps_x²``, ``m''(c) = -2/eps_x²`` (c < eps_x), so
    ``grad m = m' grad c``, ``hess m = m'' grad c grad c^T + m' hess c``; all zero where ``m = 1``.
    Returns m [1].
    """
    c = edge_edge_cross2(ea0, ea1, eb0, eb1, grad, hess)
    if c < eps_x:
        x = c / eps_x
        m1 = 2.0 * (1.0 - x) / eps_x
        m2 = -2.0 / (eps_x * eps_x)
        for i in range(12):
            for j in range(12):
                hess[i, j] = m2 * (grad[i] * grad[j]) + m1 * hess[i, j]
        for i in range(12):
            grad[i] *= m1
        return (2.0 - x) * x
    for i in range(12):
        grad[i] = 0.0
        for j in range(12):
            hess[i, j] = 0.0
    return 1.0
