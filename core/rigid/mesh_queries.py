"""Point and box queries on triangle meshes: closest points, BVH traversal and the signed distance field lookup.

One job: the read-only geometric queries both the field construction (``mesh_sdf``) and the mesh contact kernels
(``collision.mesh_contacts``, ``collision.sdf_contacts``) need, on the arrays of :class:`~.mesh.MeshArrays`.
Coordinates are in the mesh's shape frame [m]; points and directions are tuples of three floats (registers).

- ``closest_point_triangle``: Ericson, Real-Time Collision Detection §5.1.5, with the touching feature (face,
  edge or vertex), which the contact kernels need for their edge rules.
- ``bvh_query_box``: depth-first traversal of the AABB tree collecting the triangles whose box overlaps a query
  box, resumable (the caller's stack holds the state), so a fixed buffer serves any number of triangles.
- ``bvh_nearest_triangle``: branch-and-bound nearest triangle within a radius; among equally near triangles
  (a point nearest to a shared edge or vertex) it keeps the one seen most face-on, whose normal then gives the
  right side of the surface (for two faces meeting at an edge, the larger ``|d . n_f|`` has the right sign).
- ``sdf_eval``: trilinear interpolation of a signed distance grid (seed 000 §2.3.3) and the gradient of that
  interpolant, normalised; outside the grid a lower bound (distance to the grid box plus its band).
- ``winding_number_at``: the exact inside/outside test of one point by the scan-line crossing rule the field is
  signed with (``edge_function``, ``top_left``: exactly antisymmetric 2D edge functions with the rasteriser's
  tie rule), for points too near the surface for the interpolated field's sign.
"""

import math

from ..jit import njit_kernel
from ..math.vec import axpy3, dot3, norm3, scale3, sub3

FACE = 0
"""Feature code of a triangle's interior; edges k = 0, 1, 2 (corner k to k + 1) are ``1 + k``, corners ``4 + k``."""

FAR = 1.0e30
"""Distance [m] standing for "no triangle within the radius"."""

_TIE_REL = 1.0e-9
"""Triangles whose squared distances differ by less than this (x the squared distance, plus a floor) tie."""


@njit_kernel
def closest_point_triangle(p, a, b, c):
    """Point of triangle (a, b, c) closest to p and its feature code: ``(q, feature)``.

    Ericson §5.1.5 (Voronoi regions of the corners, then the edges, then the face): ``feature`` is FACE, 1 + k for
    edge k (corners k, k + 1) or 4 + k for corner k. A degenerate triangle falls to an edge or corner.
    """
    ab = sub3(b, a)
    ac = sub3(c, a)
    ap = sub3(p, a)
    d1 = dot3(ab, ap)
    d2 = dot3(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return a, 4
    bp = sub3(p, b)
    d3 = dot3(ab, bp)
    d4 = dot3(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return b, 5
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        return axpy3(d1 / (d1 - d3), ab, a), 1
    cp = sub3(p, c)
    d5 = dot3(ab, cp)
    d6 = dot3(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return c, 6
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        return axpy3(d2 / (d2 - d6), ac, a), 3
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        return axpy3((d4 - d3) / ((d4 - d3) + (d5 - d6)), sub3(c, b), b), 2
    total = va + vb + vc
    if not total > 0.0:
        return a, 4
    return axpy3(vc / total, ac, axpy3(vb / total, ab, a)), FACE


@njit_kernel(inline="always")
def triangle_corners(verts, tris, t):
    """The three corners of triangle ``t`` (global ids into ``tris`` and ``verts``) as tuples [m]."""
    i, j, k = tris[t, 0], tris[t, 1], tris[t, 2]
    return (
        (verts[i, 0], verts[i, 1], verts[i, 2]),
        (verts[j, 0], verts[j, 1], verts[j, 2]),
        (verts[k, 0], verts[k, 1], verts[k, 2]),
    )


@njit_kernel(inline="always")
def _box_overlap(node_lower, node_upper, n, lo, hi):
    """Whether node n's box overlaps the closed box [lo, hi]."""
    for k in range(3):
        if node_lower[n, k] > hi[k] or node_upper[n, k] < lo[k]:
            return False
    return True


@njit_kernel
def bvh_query_box(node_lower, node_upper, node_right, node_first, node_count, leaf_tris, stack, top, lo, hi, out):
    """Continue a depth-first walk of a BVH, writing the triangles of leaves overlapping [lo, hi] into ``out``.

    Start with ``stack[0] = root`` and ``top = 1``; each call returns ``(count, top)``: ``out[:count]`` (global
    triangle ids) and the stack height to pass to the next call, until ``top == 0``. A leaf whose triangles do
    not fit waits on the stack for the next call (``out`` must hold the largest leaf). The left child of an inner
    node n is ``n + 1``, the right one ``node_right[n]`` (-1 marks a leaf).
    """
    count = 0
    cap = out.shape[0]
    while top > 0:
        n = stack[top - 1]
        if node_right[n] < 0:
            size = node_count[n]
            if count + size > cap:
                return count, top
            top -= 1
            for i in range(node_first[n], node_first[n] + size):
                out[count] = leaf_tris[i]
                count += 1
            continue
        top -= 1
        right = node_right[n]
        if _box_overlap(node_lower, node_upper, right, lo, hi):
            stack[top] = right
            top += 1
        if _box_overlap(node_lower, node_upper, n + 1, lo, hi):
            stack[top] = n + 1
            top += 1
    return count, top


@njit_kernel(inline="always")
def _box_distance2(node_lower, node_upper, n, p):
    """Squared distance [m^2] from p to node n's box (0 inside)."""
    d2 = 0.0
    for k in range(3):
        e = max(node_lower[n, k] - p[k], 0.0, p[k] - node_upper[n, k])
        d2 += e * e
    return d2


@njit_kernel
def bvh_nearest_triangle(node_lower, node_upper, node_right, node_first, node_count, leaf_tris, verts, tris,
                         tri_normal, root, p, radius, stack):  # fmt: skip
    """Nearest triangle to p within ``radius`` [m]: ``(triangle, q, feature, distance)``.

    Branch and bound from ``root``: the nearer child is visited first and boxes farther than the best distance
    are skipped. Ties (equal distance within ``_TIE_REL``: a point nearest to an edge or corner shared by several
    triangles) keep the triangle with the largest ``|(p - q) . n_f| / |p - q|``. Returns triangle -1 and distance
    FAR when nothing lies within the radius. ``stack`` needs the tree depth plus one entries.
    """
    best = -1
    best_q = p
    best_feature = 0
    best_d2 = radius * radius
    best_face_on = -1.0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        n = stack[top]
        if _box_distance2(node_lower, node_upper, n, p) > best_d2 * (1.0 + _TIE_REL) + 1.0e-30:
            continue
        right = node_right[n]
        if right < 0:
            for i in range(node_first[n], node_first[n] + node_count[n]):
                t = leaf_tris[i]
                a, b, c = triangle_corners(verts, tris, t)
                q, feature = closest_point_triangle(p, a, b, c)
                d = sub3(p, q)
                d2 = dot3(d, d)
                tie = 1.0e-30 + _TIE_REL * best_d2
                if d2 > best_d2 + tie:
                    continue
                face_on = abs(d[0] * tri_normal[t, 0] + d[1] * tri_normal[t, 1] + d[2] * tri_normal[t, 2])
                face_on = face_on / math.sqrt(d2) if d2 > 0.0 else 1.0
                if d2 < best_d2 - tie or best < 0 or face_on > best_face_on:
                    best, best_q, best_feature, best_d2, best_face_on = t, q, feature, min(d2, best_d2), face_on
            continue
        near_first = _box_distance2(node_lower, node_upper, n + 1, p) <= _box_distance2(node_lower, node_upper,
                                                                                        right, p)  # fmt: skip
        stack[top] = n + 1 if not near_first else right
        stack[top + 1] = right if not near_first else n + 1
        top += 2
    if best < 0:
        return -1, p, 0, FAR
    return best, best_q, best_feature, math.sqrt(best_d2)


@njit_kernel(inline="always")
def edge_function(py, pz, verts, iu, iv):
    """2D orientation of the point (py, pz) against the projected edge ``iu -> iv`` (yz plane).

    Always evaluated from the lower vertex index, then negated for the other direction, so the two triangles
    sharing an edge see exactly opposite values.
    """
    lo, hi = (iu, iv) if iu < iv else (iv, iu)
    uy, uz = verts[lo, 1], verts[lo, 2]
    value = (verts[hi, 1] - uy) * (pz - uz) - (verts[hi, 2] - uz) * (py - uy)
    return value if iu < iv else -value


@njit_kernel(inline="always")
def top_left(verts, iu, iv, flip):
    """Whether points on the edge ``iu -> iv`` (reversed when ``flip``) belong to its counter-clockwise triangle.

    The predicate is antisymmetric in the edge direction d = v - u (``d_y < 0``, or ``d_y = 0`` and ``d_z > 0``),
    so exactly one of two triangles meeting along the edge (traversing it in opposite directions) takes them.
    """
    dy = verts[iv, 1] - verts[iu, 1]
    dz = verts[iv, 2] - verts[iu, 2]
    if flip:
        dy, dz = -dy, -dz
    return dy < 0.0 or (dy == 0.0 and dz > 0.0)


@njit_kernel(inline="always")
def inside_edge(e, verts, iu, iv, flip):
    """Edge test of the counter-clockwise-normalised triangle: ``e`` is the edge function (already sign-flipped)."""
    return e > 0.0 or (e == 0.0 and top_left(verts, iu, iv, flip))


@njit_kernel
def winding_number_at(node_lower, node_upper, node_right, node_first, node_count, leaf_tris, verts, tris, root, x,
                      stack):  # fmt: skip
    """Winding number of the mesh at x: the signed crossings of the ray from x towards -x (``mesh_sdf``'s rule:
    ``-sign(n_x)`` per crossing, ties by the same exactly antisymmetric edge functions and top-left rule), found
    through the BVH (boxes whose y and z ranges hold x and that start before it)."""
    count = 0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        n = stack[top]
        if (node_lower[n, 0] > x[0] or node_lower[n, 1] > x[1] or node_upper[n, 1] < x[1] or node_lower[n, 2] > x[2]
                or node_upper[n, 2] < x[2]):  # fmt: skip
            continue
        right = node_right[n]
        if right >= 0:
            stack[top] = right
            stack[top + 1] = n + 1
            top += 2
            continue
        for i in range(node_first[n], node_first[n] + node_count[n]):
            t = leaf_tris[i]
            ia, ib, ic = tris[t, 0], tris[t, 1], tris[t, 2]
            area = edge_function(verts[ic, 1], verts[ic, 2], verts, ia, ib)
            if area == 0.0:
                continue
            flip = area < 0.0
            ea = edge_function(x[1], x[2], verts, ib, ic)
            eb = edge_function(x[1], x[2], verts, ic, ia)
            ec = edge_function(x[1], x[2], verts, ia, ib)
            if flip:
                ea, eb, ec = -ea, -eb, -ec
            if not (inside_edge(ea, verts, ib, ic, flip) and inside_edge(eb, verts, ic, ia, flip)
                    and inside_edge(ec, verts, ia, ib, flip)):  # fmt: skip
                continue
            total = ea + eb + ec
            if total != 0.0 and (ea * verts[ia, 0] + eb * verts[ib, 0] + ec * verts[ic, 0]) / total < x[0]:
                count += -1 if area > 0.0 else 1
    return count


@njit_kernel
def sdf_eval(values, grid, x):
    """Signed distance [m] at the shape-frame point x and its unit gradient: ``(phi, gradient)``.

    ``grid = (first value, origin x, y, z [m], cell [m], nx, ny, nz, band [m])``; ``values[first + (i ny + j) nz +
    k]`` is the distance at ``origin + cell (i, j, k)``. Inside the grid: trilinear interpolation and the exact
    gradient of the interpolant within the cell (seed §2.3.3), normalised (+z if it vanishes). Outside: the
    distance to the grid box plus the band, a lower bound of the true distance (the mesh lies ``band`` inside the
    box), with the direction away from the box.
    """
    first, ox, oy, oz, cell, nx, ny, nz, band = grid
    u = ((x[0] - ox) / cell, (x[1] - oy) / cell, (x[2] - oz) / cell)
    hi = (nx - 1.0, ny - 1.0, nz - 1.0)
    out = (max(-u[0], 0.0, u[0] - hi[0]), max(-u[1], 0.0, u[1] - hi[1]), max(-u[2], 0.0, u[2] - hi[2]))
    if out[0] > 0.0 or out[1] > 0.0 or out[2] > 0.0:
        length = norm3(out)
        direction = (
            out[0] if u[0] > 0.0 else -out[0],
            out[1] if u[1] > 0.0 else -out[1],
            out[2] if u[2] > 0.0 else -out[2],
        )
        return length * cell + band, scale3(direction, 1.0 / length)
    i = min(int(u[0]), nx - 2)
    j = min(int(u[1]), ny - 2)
    k = min(int(u[2]), nz - 2)
    fx, fy, fz = u[0] - i, u[1] - j, u[2] - k
    base = first + (i * ny + j) * nz + k
    sy = nz
    sx = ny * nz
    c000, c001 = values[base], values[base + 1]
    c010, c011 = values[base + sy], values[base + sy + 1]
    c100, c101 = values[base + sx], values[base + sx + 1]
    c110, c111 = values[base + sx + sy], values[base + sx + sy + 1]
    # along z, then y, then x
    c00 = c000 + fz * (c001 - c000)
    c01 = c010 + fz * (c011 - c010)
    c10 = c100 + fz * (c101 - c100)
    c11 = c110 + fz * (c111 - c110)
    c0 = c00 + fy * (c01 - c00)
    c1 = c10 + fy * (c11 - c10)
    phi = c0 + fx * (c1 - c0)
    gx = c1 - c0
    gy = (1.0 - fx) * (c01 - c00) + fx * (c11 - c10)
    dz0 = (1.0 - fy) * (c001 - c000) + fy * (c011 - c010)
    dz1 = (1.0 - fy) * (c101 - c100) + fy * (c111 - c110)
    gz = (1.0 - fx) * dz0 + fx * dz1
    length = math.sqrt(gx * gx + gy * gy + gz * gz)
    if not length > 0.0:
        return phi, (0.0, 0.0, 1.0)
    return phi, (gx / length, gy / length, gz / length)
