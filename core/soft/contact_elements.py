"""Contact elements of the soft world: signed distances of collider shapes and of every element kind, with
the exact distance gradient (used by :mod:`.kernels_penalty`, :mod:`.kernels_friction` and
:mod:`.contact_collection`).

Element ``e`` couples up to ``ELEMENT_NODES`` = 16 nodes. Its signed distance ``d_e(x)`` [m] has the
gradient ``dd/dx_k = c_k g`` (scalar coefficients ``c_k``, one world vector ``g``):

- kind ``POINT_COLLIDER``: a point ``p = sum_k w_k x_k`` (a soft body's contact point: a tet vertex,
  ``w = 1``, or a render-mesh vertex embedded in a tet; or a corner of a dynamic box, 4 affine nodes)
  against a static/kinematic collider at its end-of-step pose
  ``(t, R)``: ``d = sdf(R^T (p - t))``, ``g = R n_local``, ``c_k = w_k``.
- kind ``POINT_BOX``: a soft contact point ``x_v = sum_k w_k x_k`` (nodes 0..3) against dynamic box
  ``a`` with affine nodes ``X_0..3`` (element nodes 4..7). The point's barycentric coordinates
  ``beta`` in the virtual tet map it to the box's rest frame, ``p_rest = sum_k beta_k Xr_k``, and
  ``d = sdf_box(p_rest)``. With ``A = D Dr^-1`` (``D``, ``Dr`` the edge matrices) the exact gradient is
  ``g = A^-T n_rest``, ``c = (w_0..w_3, -beta_0, ..., -beta_3)``.
- kind ``POINT_TRIANGLE``: a soft contact point (slots 0..3) against another body's surface triangle whose
  corners are contact points (slots 4..7, 8..11, 12..15), see :func:`_point_triangle_distance`.

``geometry = (col_shape (C,), col_params (C, 3), col_pos (C, 3) [m], col_rot (C, 3, 3), aff_nodes (A, 4),
aff_rest (A, 4, 3) [m], aff_rest_center (A, 3) [m], aff_rest_rot (A, 3, 3), aff_half (A, 3) [m])``: the
collider shapes at one pose and the dynamic boxes' rest data, passed as one tuple to every kernel.
"""

import math

import numpy as np

from ..jit import njit_kernel
from ..math.small_linalg import inverse3

KIND_POINT_COLLIDER = 0
KIND_POINT_BOX = 1
KIND_POINT_TRIANGLE = 2
ELEMENT_NODES = 16

SHAPE_SPHERE = 1
SHAPE_BOX = 2
SHAPE_CAPSULE = 3
SHAPE_PLANE = 4


@njit_kernel
def distance_scratch():
    """Work arrays of :func:`element_distance`: ``(coef (ELEMENT_NODES,), g (3,), scratch (4, 3, 3))``."""
    return np.empty(ELEMENT_NODES), np.empty(3), np.empty((4, 3, 3))


# --------------------------------------------------------------------------------------------
# Signed distances of collider shapes (local frame)
# --------------------------------------------------------------------------------------------


@njit_kernel
def shape_signed_distance(shape, params, q, n_out):
    """Signed distance [m] of local point ``q`` (3,) to a shape; unit outward gradient into ``n_out``.

    PLANE: local XY plane, solid below (``d = q_z``). SPHERE: radius ``params[0]``. CAPSULE: radius
    ``params[0]``, segment ``z in [-params[1], params[1]]``. BOX: half extents ``params``.
    """
    if shape == SHAPE_PLANE:
        n_out[0] = 0.0
        n_out[1] = 0.0
        n_out[2] = 1.0
        return q[2]
    if shape == SHAPE_SPHERE or shape == SHAPE_CAPSULE:
        cz = 0.0
        if shape == SHAPE_CAPSULE:
            cz = min(max(q[2], -params[1]), params[1])
        dx, dy, dz = q[0], q[1], q[2] - cz
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        if r > 0.0:
            n_out[0] = dx / r
            n_out[1] = dy / r
            n_out[2] = dz / r
        else:
            n_out[0] = 0.0
            n_out[1] = 0.0
            n_out[2] = 1.0
        return r - params[0]
    # BOX
    outside = 0.0
    inside = -1.0e300
    axis = 0
    for c in range(3):
        e = abs(q[c]) - params[c]
        if e > 0.0:
            outside += e * e
        if e > inside:
            inside = e
            axis = c
    if outside > 0.0:
        d = math.sqrt(outside)
        for c in range(3):
            e = abs(q[c]) - params[c]
            n_out[c] = (math.copysign(e, q[c]) / d) if e > 0.0 else 0.0
        return d
    for c in range(3):
        n_out[c] = 0.0
    n_out[axis] = 1.0 if q[axis] >= 0.0 else -1.0
    return inside


# --------------------------------------------------------------------------------------------
# Element distances
# --------------------------------------------------------------------------------------------


@njit_kernel
def element_distance(e, x, el_kind, el_nodes, el_weights, el_target, geometry, coef, g, scratch):
    """Signed distance [m] of contact element ``e`` at positions ``x`` (N, 3); fills ``coef`` (16,) and ``g`` (3,).

    ``geometry``: see the module docstring (its collider poses are the ones the distance is taken at).
    ``scratch`` is (4, 3, 3) float64.
    """
    for k in range(ELEMENT_NODES):
        coef[k] = 0.0
    if el_kind[e] == KIND_POINT_COLLIDER:
        return _point_collider_distance(e, x, el_nodes, el_weights, el_target, geometry, coef, g, scratch)
    if el_kind[e] == KIND_POINT_TRIANGLE:
        return _point_triangle_distance(e, x, el_nodes, el_weights, coef, g, scratch)
    return _point_box_distance(e, x, el_nodes, el_weights, el_target, geometry, coef, g, scratch)


@njit_kernel
def _point_coefficients(e, el_nodes, el_weights, coef):
    """``coef[0..3]`` = the contact point's weights ``w_k`` (0 on padding slots)."""
    for k in range(4):
        coef[k] = el_weights[e, k] if el_nodes[e, k] >= 0 else 0.0


@njit_kernel
def _point_collider_distance(e, x, el_nodes, el_weights, el_target, geometry, coef, g, scratch):
    """POINT_COLLIDER: ``d = sdf(R^T (p - t))``, ``g = R n_local``, ``c_k = w_k`` (collider ``el_target[e]``)."""
    col_shape, col_params, col_pos, col_rot = geometry[0], geometry[1], geometry[2], geometry[3]
    q = scratch[0, 0]
    n = scratch[0, 1]
    p = scratch[0, 2]
    c = el_target[e]
    element_point(e, x, el_nodes, el_weights, np.int64(0), p)
    _point_coefficients(e, el_nodes, el_weights, coef)
    R = col_rot[c]
    for i in range(3):
        q[i] = R[0, i] * (p[0] - col_pos[c, 0]) + R[1, i] * (p[1] - col_pos[c, 1]) + R[2, i] * (p[2] - col_pos[c, 2])
    d = shape_signed_distance(col_shape[c], col_params[c], q, n)
    for i in range(3):
        g[i] = R[i, 0] * n[0] + R[i, 1] * n[1] + R[i, 2] * n[2]
    return d


@njit_kernel
def _point_box_distance(e, x, el_nodes, el_weights, el_target, geometry, coef, g, scratch):
    """POINT_BOX: the point ``sum_k w_k x_k`` (nodes 0..3) against dynamic box ``a = el_target[e]`` (affine
    nodes 4..7): ``d = sdf_box(p_rest)``, ``g = D^-T Dr^T R0 n``, ``c = (w, -beta)`` (module docstring)."""
    aff_nodes, aff_rest, aff_rest_center, aff_rest_rot, aff_half = (
        geometry[4], geometry[5], geometry[6], geometry[7], geometry[8]
    )  # fmt: skip
    q = scratch[0, 0]
    n = scratch[0, 1]
    p = scratch[0, 2]
    a = el_target[e]
    v = scratch[0, 0]  # the point; q is overwritten only after its last use
    element_point(e, x, el_nodes, el_weights, np.int64(0), v)
    D = scratch[1]
    Dinv = scratch[2]
    Dr = scratch[3]
    n0 = aff_nodes[a, 0]
    for i in range(3):
        for j in range(3):
            D[i, j] = x[aff_nodes[a, j + 1], i] - x[n0, i]
            Dr[i, j] = aff_rest[a, j + 1, i] - aff_rest[a, 0, i]
    inverse3(D, Dinv)
    b1 = Dinv[0, 0] * (v[0] - x[n0, 0]) + Dinv[0, 1] * (v[1] - x[n0, 1]) + Dinv[0, 2] * (v[2] - x[n0, 2])
    b2 = Dinv[1, 0] * (v[0] - x[n0, 0]) + Dinv[1, 1] * (v[1] - x[n0, 1]) + Dinv[1, 2] * (v[2] - x[n0, 2])
    b3 = Dinv[2, 0] * (v[0] - x[n0, 0]) + Dinv[2, 1] * (v[1] - x[n0, 1]) + Dinv[2, 2] * (v[2] - x[n0, 2])
    b0 = 1.0 - b1 - b2 - b3
    for i in range(3):
        p[i] = aff_rest[a, 0, i] + Dr[i, 0] * b1 + Dr[i, 1] * b2 + Dr[i, 2] * b3
    R0 = aff_rest_rot[a]
    for i in range(3):
        q[i] = (
            R0[0, i] * (p[0] - aff_rest_center[a, 0])
            + R0[1, i] * (p[1] - aff_rest_center[a, 1])
            + R0[2, i] * (p[2] - aff_rest_center[a, 2])
        )
    d = shape_signed_distance(np.int64(SHAPE_BOX), aff_half[a], q, n)
    # rest-frame normal n_r = R0 n; g = D^-T Dr^T n_r
    for i in range(3):
        p[i] = R0[i, 0] * n[0] + R0[i, 1] * n[1] + R0[i, 2] * n[2]
    for j in range(3):
        q[j] = Dr[0, j] * p[0] + Dr[1, j] * p[1] + Dr[2, j] * p[2]
    for i in range(3):
        g[i] = Dinv[0, i] * q[0] + Dinv[1, i] * q[1] + Dinv[2, i] * q[2]
    _point_coefficients(e, el_nodes, el_weights, coef)
    coef[4] = -b0
    coef[5] = -b1
    coef[6] = -b2
    coef[7] = -b3
    return d


@njit_kernel
def element_point(e, x, el_nodes, el_weights, first, out):
    """``out = sum_k w_k x_k`` over the 4 element slots starting at ``first`` (-1 padded)."""
    for i in range(3):
        out[i] = 0.0
    for k in range(first, first + 4):
        node = el_nodes[e, k]
        if node < 0:
            continue
        for i in range(3):
            out[i] += el_weights[e, k] * x[node, i]


@njit_kernel
def _edge_dots(ab0, ab1, ab2, ac0, ac1, ac2, p, corner):
    """``(ab . (p - corner), ac . (p - corner))`` for the edge vectors ``ab``, ``ac`` of a triangle."""
    q0, q1, q2 = p[0] - corner[0], p[1] - corner[1], p[2] - corner[2]
    return ab0 * q0 + ab1 * q1 + ab2 * q2, ac0 * q0 + ac1 * q1 + ac2 * q2


@njit_kernel
def closest_point_on_triangle(p, a, b, c, bary):
    """Barycentric coordinates ``bary`` (3,) of the point of triangle ``abc`` closest to ``p`` (Voronoi
    regions of the vertices, edges and face; all arrays (3,); Ericson, Real-Time Collision Detection 5.1.5)."""
    ab0, ab1, ab2 = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    ac0, ac1, ac2 = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    d1, d2 = _edge_dots(ab0, ab1, ab2, ac0, ac1, ac2, p, a)
    if d1 <= 0.0 and d2 <= 0.0:
        bary[0], bary[1], bary[2] = 1.0, 0.0, 0.0
        return
    d3, d4 = _edge_dots(ab0, ab1, ab2, ac0, ac1, ac2, p, b)
    if d3 >= 0.0 and d4 <= d3:
        bary[0], bary[1], bary[2] = 0.0, 1.0, 0.0
        return
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        bary[0], bary[1], bary[2] = 1.0 - v, v, 0.0
        return
    d5, d6 = _edge_dots(ab0, ab1, ab2, ac0, ac1, ac2, p, c)
    if d6 >= 0.0 and d5 <= d6:
        bary[0], bary[1], bary[2] = 0.0, 0.0, 1.0
        return
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        bary[0], bary[1], bary[2] = 1.0 - w, 0.0, w
        return
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        bary[0], bary[1], bary[2] = 0.0, 1.0 - w, w
        return
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    bary[0], bary[1], bary[2] = 1.0 - v - w, v, w


@njit_kernel
def _point_triangle_distance(e, x, el_nodes, el_weights, coef, g, scratch):
    """Distance of a soft contact point (slots 0..3) to an outward-oriented soft surface triangle whose
    corners are contact points (slots 4..7, 8..11, 12..15): signed along the face normal when the closest
    point ``q = sum beta_j t_j`` is inside the face, unsigned (``|p - q|``) in the edge and vertex regions.
    With ``n`` the face normal or ``(p - q) / |p - q|``, the exact gradient is ``n`` on the point and
    ``-beta_j n`` on corner ``j`` (moving the triangle within its own plane, or along an edge, does not
    change the distance)."""
    p = scratch[1, 0]
    a = scratch[1, 1]
    b = scratch[1, 2]
    c = scratch[2, 0]
    bary = scratch[2, 1]
    element_point(e, x, el_nodes, el_weights, np.int64(0), p)
    element_point(e, x, el_nodes, el_weights, np.int64(4), a)
    element_point(e, x, el_nodes, el_weights, np.int64(8), b)
    element_point(e, x, el_nodes, el_weights, np.int64(12), c)
    closest_point_on_triangle(p, a, b, c, bary)
    if bary[0] > 0.0 and bary[1] > 0.0 and bary[2] > 0.0:
        # Face region: the signed distance along the outward face normal (negative once the point is
        # through the surface, so the penalty still pushes it out and penetration is detectable).
        n0 = (b[1] - a[1]) * (c[2] - a[2]) - (b[2] - a[2]) * (c[1] - a[1])
        n1 = (b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2])
        n2 = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        nn = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        g[0], g[1], g[2] = n0 / nn, n1 / nn, n2 / nn
        d = (p[0] - a[0]) * g[0] + (p[1] - a[1]) * g[1] + (p[2] - a[2]) * g[2]
    else:
        # Edge or vertex region: the unsigned distance (equal to the face value on the region border).
        d2 = 0.0
        for i in range(3):
            g[i] = p[i] - (bary[0] * a[i] + bary[1] * b[i] + bary[2] * c[i])
            d2 += g[i] * g[i]
        d = math.sqrt(d2)
        for i in range(3):
            g[i] = g[i] / d if d > 0.0 else 0.0
    for k in range(4):
        coef[k] = el_weights[e, k] if el_nodes[e, k] >= 0 else 0.0
        for j in range(3):
            slot = 4 + 4 * j + k
            coef[slot] = -bary[j] * el_weights[e, slot] if el_nodes[e, slot] >= 0 else 0.0
    return d
