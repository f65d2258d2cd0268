"""Signed distance of a point to each convex shape, and the shapes' corner points and edges (shape frame).

One job: what an active mesh's field kernel (``sdf_contacts``) needs to know of the other shape B, in B's own
frame (origin at the shape origin, axes the shape's) [m]:

- ``shape_distance``: ``(phi, unit gradient)`` at a point y, negative inside (seed 000 §2.3 conventions).
  Sphere, capsule and box in closed form; cylinder and cone as the 2D distance in the (radial, axial) half-plane
  to their profile (a rectangle and a triangle swept about z); hull as the largest face-plane distance, exact
  inside and a lower bound outside (off a face, near an edge or corner; it is exact again at contact).
- ``feature_counts``, ``feature_vertex``, ``feature_edge``: the points and straight edges tested against the
  field (box corners and edges; cylinder and cone rims as ``RIM_SEGMENTS``-gons, their side lines, the apex;
  the hull's vertices and edges; the capsule's segment; the sphere's centre). Sphere and capsule points carry
  their radius (``sweep``) outside.
"""

import math

from ...jit import njit_kernel
from ...math.vec import norm3, scale3, sub3
from .support import BOX, CAPSULE, CONE, CONVEX, CYLINDER, RIM_SEGMENTS, SPHERE

_N = RIM_SEGMENTS


@njit_kernel(inline="always")
def _segment_2d(px, pz, ax, az, bx, bz):
    """Closest point of the 2D segment (a, b) to p: ``(qx, qz, squared distance)``."""
    ex, ez = bx - ax, bz - az
    ee = ex * ex + ez * ez
    t = min(max(((px - ax) * ex + (pz - az) * ez) / ee, 0.0), 1.0) if ee > 0.0 else 0.0
    qx, qz = ax + t * ex, az + t * ez
    return qx, qz, (px - qx) ** 2 + (pz - qz) ** 2


@njit_kernel(inline="always")
def _profile_distance(rho, z, r, h, cone):
    """Signed distance in the (rho >= 0, z) half-plane to a cylinder's (rectangle) or cone's (triangle) profile,
    with its unit gradient ``(d_rho, d_z)``; the axis (rho = 0) is not part of the boundary."""
    # boundary polyline: bottom (0,-h)-(r,-h); cylinder: side (r,-h)-(r,h), top (r,h)-(0,h); cone: slant (r,-h)-(0,h)
    qx, qz, d2 = _segment_2d(rho, z, 0.0, -h, r, -h)
    nx, nz = 0.0, -1.0
    if cone:
        slant = math.sqrt(4.0 * h * h + r * r)
        sx, sz, s2 = _segment_2d(rho, z, r, -h, 0.0, h)
        if s2 < d2:
            qx, qz, d2, nx, nz = sx, sz, s2, 2.0 * h / slant, r / slant
        inside = z >= -h and rho * 2.0 * h <= r * (h - z)
    else:
        sx, sz, s2 = _segment_2d(rho, z, r, -h, r, h)
        if s2 < d2:
            qx, qz, d2, nx, nz = sx, sz, s2, 1.0, 0.0
        sx, sz, s2 = _segment_2d(rho, z, r, h, 0.0, h)
        if s2 < d2:
            qx, qz, d2, nx, nz = sx, sz, s2, 0.0, 1.0
        inside = rho <= r and abs(z) <= h
    d = math.sqrt(d2)
    if d > 1.0e-12 * (r + h):
        gx, gz = (rho - qx) / d, (z - qz) / d
        if inside:
            gx, gz = -gx, -gz
    else:
        gx, gz = nx, nz
    return (-d if inside else d), gx, gz


@njit_kernel
def shape_distance(kind, size, hulls, hull, y):
    """Signed distance [m] from the shape-frame point y to a convex shape and its unit gradient (shape frame).

    ``size``: ``shape_params`` (3 floats); ``hull``: index into ``hulls`` for CONVEX shapes.
    """
    if kind == SPHERE:
        d = norm3(y)
        return d - size[0], (scale3(y, 1.0 / d) if d > 0.0 else (0.0, 0.0, 1.0))
    if kind == CAPSULE:
        axial = (0.0, 0.0, min(max(y[2], -size[1]), size[1]))
        v = sub3(y, axial)
        d = norm3(v)
        return d - size[0], (scale3(v, 1.0 / d) if d > 0.0 else (1.0, 0.0, 0.0))
    if kind == BOX:
        q = (abs(y[0]) - size[0], abs(y[1]) - size[1], abs(y[2]) - size[2])
        out = (max(q[0], 0.0), max(q[1], 0.0), max(q[2], 0.0))
        length = norm3(out)
        if length > 0.0:
            g = (math.copysign(out[0], y[0]), math.copysign(out[1], y[1]), math.copysign(out[2], y[2]))
            return length, scale3(g, 1.0 / length)
        k = 0 if q[0] >= q[1] and q[0] >= q[2] else (1 if q[1] >= q[2] else 2)
        g = (0.0, 0.0, 0.0)
        if k == 0:
            g = (math.copysign(1.0, y[0]), 0.0, 0.0)
        elif k == 1:
            g = (0.0, math.copysign(1.0, y[1]), 0.0)
        else:
            g = (0.0, 0.0, math.copysign(1.0, y[2]))
        return max(q[0], q[1], q[2]), g
    if kind == CYLINDER or kind == CONE:
        rho = math.sqrt(y[0] * y[0] + y[1] * y[1])
        phi, gr, gz = _profile_distance(rho, y[2], size[0], size[1], kind == CONE)
        cx, cy = (y[0] / rho, y[1] / rho) if rho > 1.0e-12 * (size[0] + size[1]) else (1.0, 0.0)
        return phi, (gr * cx, gr * cy, gz)
    # hull: the largest face-plane distance (exact inside, a lower bound outside)
    planes = hulls.hull_face_plane
    best = -math.inf
    g = (0.0, 0.0, 1.0)
    for f in range(hulls.hull_face_start[hull], hulls.hull_face_start[hull + 1]):
        value = planes[f, 0] * y[0] + planes[f, 1] * y[1] + planes[f, 2] * y[2] - planes[f, 3]
        if value > best:
            best = value
            g = (planes[f, 0], planes[f, 1], planes[f, 2])
    return best, g


@njit_kernel(inline="always")
def feature_counts(kind, hulls, hull):
    """Number of corner points and of straight edges of a shape tested against a field: ``(points, edges)``."""
    if kind == SPHERE:
        return 1, 0
    if kind == CAPSULE:
        return 2, 1
    if kind == BOX:
        return 8, 12
    if kind == CYLINDER:
        return 2 * _N, 3 * _N
    if kind == CONE:
        return _N + 1, 2 * _N
    if kind == CONVEX:
        v = hulls.hull_vert_start[hull + 1] - hulls.hull_vert_start[hull]
        return v, hulls.hull_edge_start[hull + 1] - hulls.hull_edge_start[hull]
    return 0, 0


@njit_kernel(inline="always")
def _rim(r, z, i):
    """Rim vertex i of a ``RIM_SEGMENTS``-gon of radius r at height z."""
    angle = 2.0 * math.pi * (i % _N) / _N
    return (r * math.cos(angle), r * math.sin(angle), z)


@njit_kernel(inline="always")
def feature_vertex(kind, size, hulls, hull, i):
    """Corner point i (shape frame) [m]: box corner (bit k set: coordinate k negative), cylinder top rim then
    bottom rim, cone apex then base rim, capsule ends, sphere centre, hull vertex."""
    if kind == BOX:
        return (
            -size[0] if i & 1 else size[0],
            -size[1] if i & 2 else size[1],
            -size[2] if i & 4 else size[2],
        )
    if kind == CYLINDER:
        return _rim(size[0], size[1] if i < _N else -size[1], i)
    if kind == CONE:
        return (0.0, 0.0, size[1]) if i == 0 else _rim(size[0], -size[1], i - 1)
    if kind == CAPSULE:
        return (0.0, 0.0, size[1] if i == 1 else -size[1])
    if kind == CONVEX:
        v = hulls.hull_vert_start[hull] + i
        return (hulls.hull_verts[v, 0], hulls.hull_verts[v, 1], hulls.hull_verts[v, 2])
    return (0.0, 0.0, 0.0)


@njit_kernel(inline="always")
def feature_edge(kind, size, hulls, hull, e):
    """Straight edge e (shape frame) as its two ends [m]: box edges along x, y, z; cylinder side lines, top and
    bottom rim sides; cone side lines and base rim sides; the capsule's segment; hull edges."""
    if kind == BOX:
        axis = e // 4
        bits = e % 4
        s1 = -1.0 if bits & 1 else 1.0
        s2 = -1.0 if bits & 2 else 1.0
        if axis == 0:
            return (-size[0], s1 * size[1], s2 * size[2]), (size[0], s1 * size[1], s2 * size[2])
        if axis == 1:
            return (s1 * size[0], -size[1], s2 * size[2]), (s1 * size[0], size[1], s2 * size[2])
        return (s1 * size[0], s2 * size[1], -size[2]), (s1 * size[0], s2 * size[1], size[2])
    if kind == CYLINDER:
        r, h = size[0], size[1]
        if e < _N:
            return _rim(r, -h, e), _rim(r, h, e)
        z = h if e < 2 * _N else -h
        return _rim(r, z, e), _rim(r, z, e + 1)
    if kind == CONE:
        r, h = size[0], size[1]
        if e < _N:
            return (0.0, 0.0, h), _rim(r, -h, e)
        return _rim(r, -h, e), _rim(r, -h, e + 1)
    if kind == CAPSULE:
        return (0.0, 0.0, -size[1]), (0.0, 0.0, size[1])
    g = hulls.hull_edge_start[hull] + e
    i, j = hulls.hull_edges[g, 0], hulls.hull_edges[g, 1]
    verts = hulls.hull_verts
    return (verts[i, 0], verts[i, 1], verts[i, 2]), (verts[j, 0], verts[j, 1], verts[j, 2])


__all__ = ["feature_counts", "feature_edge", "feature_vertex", "shape_distance"]
