"""Convex shapes for the generic narrow phase: descriptors, support points and supporting features (seed §2.1).

One job: describe every convex ``ShapeType`` through one switch, so GJK/EPA (``gjk_epa``) and the manifold builder
(``convex_contacts``) compile once for all shape pairs instead of once per pair.

- ``make_convex_shape`` packs a shape into a :class:`ConvexShape` (world centre and axes as tuples, hull ranges).
- ``support_core`` is the support point ``s(d) = argmax_{x in core} x . d`` [m] of the shape's *core*: sphere and
  capsule are sphere-swept (a point and a segment inflated by ``sweep``, added outside GJK/EPA so their contacts
  are exact); box, cylinder, cone and hull are their own cores (``sweep = 0``).
- ``face_feature``, ``incident_feature`` and ``edge_feature`` write the shape's supporting feature along a unit
  direction as a world polygon (1 point, a 2-point segment or a convex polygon counter-clockwise about its
  outward normal) with shape-local ids, which stay the same while the same feature touches (warm starting).

Curved caps are regular ``RIM_SEGMENTS``-gons inscribed in the rim; their vertices are true surface points, and the
exact deepest point always comes from GJK/EPA. A convex hull is the vertex range ``[vert_lo, vert_hi)`` and face
range ``[face_lo, face_hi)`` of a :class:`~..hull.HullArrays` (shape-frame coordinates): a triangle can be passed as
a 3-vertex hull with its two faces (front and back). Directions and points are tuples of three floats.
"""

import math
from typing import NamedTuple

import numpy as np

from ...jit import njit_kernel
from ...math.vec import add3, axpy3, column3, dot3, norm3, scale3
from .contact_common import component, unit_axis, with_component

# ShapeType values (core/enums.py).
SPHERE = 1
BOX = 2
CAPSULE = 3
PLANE = 4
CYLINDER = 5
CONE = 6
CONVEX = 7

RIM_SEGMENTS = 16
"""Vertices of the regular polygon standing for a cylinder cap or cone base in contact manifolds."""

FEATURE_SIN = 0.035
"""``sin`` of the angle (2 degrees) within which a face counts as facing a direction and an edge as perpendicular."""

FEATURE_COS = math.sqrt(1.0 - FEATURE_SIN * FEATURE_SIN)
"""``cos`` of the same angle: a face is the supporting feature along d when ``n_face . d >= FEATURE_COS``."""

POLY_MAX = 32
"""Largest feature polygon; hull faces with more vertices are subsampled (a sub-polygon of true vertices)."""

_CAP_COS = math.sqrt(0.5)
"""Incident cylinder: the cap, not the side, faces d when ``|axis . d| >= cos 45 deg`` (the better-aligned one)."""

_RIM = np.array([[math.cos(2.0 * math.pi * k / RIM_SEGMENTS), math.sin(2.0 * math.pi * k / RIM_SEGMENTS)]
                 for k in range(RIM_SEGMENTS)])  # fmt: skip
"""Unit rim directions (RIM_SEGMENTS, 2) in the local xy plane, counter-clockwise about +z."""


class ConvexShape(NamedTuple):
    """One convex shape in world space, as the generic narrow-phase kernels read it."""

    kind: int
    """``ShapeType`` value."""
    size: tuple
    """``shape_params`` (3 floats) [m]: radius | half-extents | (radius, half_height) | (bounding radius,)."""
    center: tuple
    """World origin of the shape (3 floats) [m]."""
    axes: tuple
    """World directions of the local x, y, z axes (three 3-tuples): the rotation's columns."""
    sweep: float
    """Radius swept around the core [m]: sphere and capsule radius, else 0."""
    vert_lo: int
    """First hull vertex (global index into ``hull_verts``); hulls only."""
    vert_hi: int
    """One past the last hull vertex."""
    face_lo: int
    """First hull face (global index into ``hull_face_plane``)."""
    face_hi: int
    """One past the last hull face."""
    edge_lo: int
    """First hull edge (global index into ``hull_edges``)."""
    edge_hi: int
    """One past the last hull edge."""
    scale: float
    """Characteristic size [m] for relative tolerances (largest half-extent, radius or bounding radius)."""


@njit_kernel
def make_convex_shape(kind, params, pos, R, hull, hulls):
    """:class:`ConvexShape` of a shape with ``params`` (3,) [m], world origin ``pos`` (3,) [m], rotation ``R`` (3, 3).

    ``hull`` indexes ``hulls`` (a :class:`~..hull.HullArrays`) for CONVEX shapes and is ignored otherwise.
    """
    size = (float(params[0]), float(params[1]), float(params[2]))
    axes = (column3(R, 0), column3(R, 1), column3(R, 2))
    sweep = 0.0
    v0 = v1 = f0 = f1 = e0 = e1 = 0
    if kind == SPHERE:
        sweep = size[0]
        scale = size[0]
    elif kind == CAPSULE:
        sweep = size[0]
        scale = size[0] + size[1]
    elif kind == BOX:
        scale = max(size[0], size[1], size[2])
    elif kind == CYLINDER or kind == CONE:
        scale = max(size[0], size[1])
    else:
        v0 = int(hulls.hull_vert_start[hull])
        v1 = int(hulls.hull_vert_start[hull + 1])
        f0 = int(hulls.hull_face_start[hull])
        f1 = int(hulls.hull_face_start[hull + 1])
        e0 = int(hulls.hull_edge_start[hull])
        e1 = int(hulls.hull_edge_start[hull + 1])
        scale = size[0]
    center = (float(pos[0]), float(pos[1]), float(pos[2]))
    return ConvexShape(kind, size, center, axes, sweep, v0, v1, f0, f1, e0, e1, max(scale, 1.0e-9))


@njit_kernel(inline="always")
def bounding_radius(kind, params):
    """Radius [m] of a sphere about the shape origin that holds the shape (hulls: ``params[0]`` by contract)."""
    if kind == BOX:
        return math.sqrt(params[0] * params[0] + params[1] * params[1] + params[2] * params[2])
    if kind == CAPSULE:
        return params[0] + params[1]
    if kind == CYLINDER or kind == CONE:
        return math.sqrt(params[0] * params[0] + params[1] * params[1])  # rim; a cone's apex is nearer (h)
    return params[0]


# ---------------------------------------------------------------------------------------------------------------
# Frames
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel(inline="always")
def to_local(shape, d):
    """World direction ``d`` in the shape frame: ``R^T d``."""
    ax, ay, az = shape.axes
    return (dot3(d, ax), dot3(d, ay), dot3(d, az))


@njit_kernel(inline="always")
def to_world(shape, x):
    """Shape-frame point ``x`` in world coordinates: ``c + R x`` [m]."""
    ax, ay, az = shape.axes
    return axpy3(x[2], az, axpy3(x[1], ay, axpy3(x[0], ax, shape.center)))


@njit_kernel(inline="always")
def _radial(shape, dl):
    """Unit direction of ``dl``'s xy part (shape frame) as ``(cos, sin, length)``; the x axis when it vanishes."""
    rho = math.sqrt(dl[0] * dl[0] + dl[1] * dl[1])
    if rho <= 1.0e-12 * (abs(dl[2]) + 1.0e-300):
        return 1.0, 0.0, 0.0
    return dl[0] / rho, dl[1] / rho, rho


# ---------------------------------------------------------------------------------------------------------------
# Support points
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def hull_support_index(shape, verts, dl):
    """Global index of the hull vertex (``verts`` = ``hull_verts``) maximising ``v . dl`` (shape-frame direction);
    the first one on ties."""
    best = shape.vert_lo
    best_value = -math.inf
    for v in range(shape.vert_lo, shape.vert_hi):
        value = verts[v, 0] * dl[0] + verts[v, 1] * dl[1] + verts[v, 2] * dl[2]
        if value > best_value:
            best_value = value
            best = v
    return best


@njit_kernel
def support_core(shape, verts, d):
    """World support point [m] of the shape's core along ``d`` (need not be unit): ``argmax_x x . d``.

    ``verts`` is ``HullArrays.hull_verts`` (only hulls read it): the support path gets one array, not the
    namedtuple, because Numba passes every array of a tuple argument on each call (~5 ns each).

    Closed forms in the shape frame (``dl = R^T d``): box ``sign(dl) * h``; cylinder ``(r dl_xy / |dl_xy|,
    sign(dl_z) h)``; cone the better of the apex ``(0, 0, h)`` and the base rim point ``(r dl_xy / |dl_xy|, -h)``;
    capsule the segment end ``sign(dl_z) h e_z``; sphere the centre; hull the best vertex. Ties take the + side.
    """
    kind = shape.kind
    if kind == SPHERE:
        return shape.center
    dl = to_local(shape, d)
    p0, p1, p2 = shape.size
    if kind == CAPSULE:
        x = (0.0, 0.0, p1 if dl[2] >= 0.0 else -p1)
    elif kind == BOX:
        x = (p0 if dl[0] >= 0.0 else -p0, p1 if dl[1] >= 0.0 else -p1, p2 if dl[2] >= 0.0 else -p2)
    elif kind == CYLINDER:
        c, s, _ = _radial(shape, dl)
        x = (p0 * c, p0 * s, p1 if dl[2] >= 0.0 else -p1)
    elif kind == CONE:
        c, s, rho = _radial(shape, dl)
        # apex . dl = h dl_z against rim . dl = r rho - h dl_z
        if p1 * dl[2] >= p0 * rho - p1 * dl[2]:
            x = (0.0, 0.0, p1)
        else:
            x = (p0 * c, p0 * s, -p1)
    else:
        v = hull_support_index(shape, verts, dl)
        x = (verts[v, 0], verts[v, 1], verts[v, 2])
    return to_world(shape, x)


# ---------------------------------------------------------------------------------------------------------------
# Supporting features
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel(inline="always")
def _write(poly, ids, k, x, vid):
    """``poly[k] = x``, ``ids[k] = vid``."""
    poly[k, 0] = x[0]
    poly[k, 1] = x[1]
    poly[k, 2] = x[2]
    ids[k] = vid


@njit_kernel
def _write_rim(shape, z, up, id0, poly, ids):
    """The regular rim polygon at height ``z`` (shape frame), counter-clockwise about +z if ``up`` else -z."""
    r = shape.size[0]
    for i in range(RIM_SEGMENTS):
        k = i if up else RIM_SEGMENTS - 1 - i
        _write(poly, ids, i, to_world(shape, (r * _RIM[k, 0], r * _RIM[k, 1], z)), id0 + k)
    return RIM_SEGMENTS


@njit_kernel(inline="always")
def _box_corner_id(x):
    """Corner id of the box vertex ``x`` (shape frame): bit i set when coordinate i is negative."""
    return (1 if x[0] < 0.0 else 0) + (2 if x[1] < 0.0 else 0) + (4 if x[2] < 0.0 else 0)


@njit_kernel
def _write_box_face(shape, k, s, poly, ids):
    """Face ``s e_k`` of the box, counter-clockwise about its outward normal; ids = corner bits."""
    h = shape.size
    u = (k + 1) % 3
    v = (k + 2) % 3
    for q in range(4):
        # (+,+), (-,+), (-,-), (+,-) in (u, v) is counter-clockwise about e_u x e_v = e_k; reversed for -e_k.
        qq = q if s > 0.0 else 3 - q
        su = 1.0 if (qq == 0 or qq == 3) else -1.0
        sv = 1.0 if qq < 2 else -1.0
        x = with_component(unit_axis(k, s * component(h, k)), u, su * component(h, u))
        x = with_component(x, v, sv * component(h, v))
        _write(poly, ids, q, to_world(shape, x), _box_corner_id(x))
    return 4


@njit_kernel
def _write_hull_face(shape, hulls, f, poly, ids):
    """Hull face ``f`` (global id) in world space, counter-clockwise about its outward normal (hull contract).

    Faces with more than ``POLY_MAX`` vertices keep an evenly spread subset (still a convex sub-polygon).
    """
    k0 = hulls.hull_face_vert_start[f]
    count = hulls.hull_face_vert_start[f + 1] - k0
    kept = min(count, POLY_MAX)
    verts = hulls.hull_verts
    for i in range(kept):
        v = hulls.hull_face_verts[k0 + (i * count) // kept]
        _write(poly, ids, i, to_world(shape, (verts[v, 0], verts[v, 1], verts[v, 2])), v - shape.vert_lo)
    return kept


@njit_kernel
def face_feature(shape, hulls, d, poly, ids):
    """The planar face whose outward normal is most aligned with the unit ``d``; ``(count, normal, cos)``.

    Writes the polygon (count, 3) [m] into ``poly`` and shape-local vertex ids into ``ids``. Box: the face
    ``sign(d_k) e_k`` of the largest ``|d_k|``; cylinder: the cap on d's side; cone: its base (``cos`` may be
    negative); hull: the best of its faces. Sphere and capsule have none (count 0).
    """
    kind = shape.kind
    dl = to_local(shape, d)
    if kind == BOX:
        k = np.int64(0)  # not a literal 0: Numba would compile _write_box_face once more for it
        for i in range(1, 3):
            if abs(dl[i]) > abs(dl[k]):
                k = i
        s = 1.0 if dl[k] >= 0.0 else -1.0
        return _write_box_face(shape, k, s, poly, ids), scale3(shape.axes[k], s), abs(dl[k])
    if kind == CYLINDER:
        up = dl[2] >= 0.0
        s = 1.0 if up else -1.0
        count = _write_rim(shape, s * shape.size[1], up, 0 if up else RIM_SEGMENTS, poly, ids)
        return count, scale3(shape.axes[2], s), abs(dl[2])
    if kind == CONE:
        count = _write_rim(shape, -shape.size[1], np.bool_(False), np.int64(0), poly, ids)
        return count, scale3(shape.axes[2], -1.0), -dl[2]
    if kind == CONVEX:
        planes = hulls.hull_face_plane
        best = shape.face_lo
        best_cos = -math.inf
        for f in range(shape.face_lo, shape.face_hi):
            c = planes[f, 0] * dl[0] + planes[f, 1] * dl[1] + planes[f, 2] * dl[2]
            if c > best_cos:
                best_cos = c
                best = f
        if shape.face_hi > shape.face_lo:
            normal = add3(scale3(shape.axes[0], planes[best, 0]), scale3(shape.axes[1], planes[best, 1]))
            normal = axpy3(planes[best, 2], shape.axes[2], normal)
            return _write_hull_face(shape, hulls, best, poly, ids), normal, best_cos
    return 0, (0.0, 0.0, 0.0), -1.0


@njit_kernel(inline="always")
def _write_segment(shape, x0, x1, id0, shift, poly, ids):
    """The segment (shape-frame ends x0, x1) moved by the world vector ``shift``, ids id0 and id0 + 1."""
    _write(poly, ids, 0, add3(to_world(shape, x0), shift), id0)
    _write(poly, ids, 1, add3(to_world(shape, x1), shift), id0 + 1)
    return 2


@njit_kernel
def incident_feature(shape, hulls, d, poly, ids):
    """The feature facing the unit ``d`` that is clipped against a reference face; returns its vertex count.

    Box and hull: the face most aligned with d (as in box-box clipping, whatever the angle). Cylinder: the cap
    if ``|axis . d| >= cos 45`` else the side line at d's azimuth. Cone: base or side line, whichever outward
    normal is closer to d (the side normal ``(2h rho_hat + r e_z) / sqrt(4h^2 + r^2)``). Capsule: its segment,
    sphere: its centre, both pushed out by the radius along d (true surface points).
    """
    kind = shape.kind
    dl = to_local(shape, d)
    r, h, _ = shape.size
    if kind == SPHERE:
        _write(poly, ids, 0, axpy3(shape.sweep, d, shape.center), 0)
        return 1
    if kind == CAPSULE:
        return _write_segment(shape, (0.0, 0.0, -h), (0.0, 0.0, h), 0, scale3(d, shape.sweep), poly, ids)
    if kind == CYLINDER:
        if abs(dl[2]) >= _CAP_COS:
            return face_feature(shape, hulls, d, poly, ids)[0]
        c, s, _ = _radial(shape, dl)
        return _write_segment(shape, (r * c, r * s, -h), (r * c, r * s, h), 2 * RIM_SEGMENTS, (0.0, 0.0, 0.0),
                              poly, ids)  # fmt: skip
    if kind == CONE:
        c, s, rho = _radial(shape, dl)
        side = (2.0 * h * rho + r * dl[2]) / math.sqrt(4.0 * h * h + r * r)
        if -dl[2] >= side:
            return face_feature(shape, hulls, d, poly, ids)[0]
        return _write_segment(shape, (0.0, 0.0, h), (r * c, r * s, -h), RIM_SEGMENTS, (0.0, 0.0, 0.0), poly, ids)
    return face_feature(shape, hulls, d, poly, ids)[0]


@njit_kernel
def _hull_edge_feature(shape, hulls, dl, poly, ids):
    """Hull edge at the support vertex along ``dl`` most perpendicular to it (within FEATURE_SIN), else the vertex."""
    verts = hulls.hull_verts
    v = hull_support_index(shape, verts, dl)
    length = norm3(dl)
    best = -1
    best_sin = FEATURE_SIN
    for e in range(shape.edge_lo, shape.edge_hi):
        i = hulls.hull_edges[e, 0]
        j = hulls.hull_edges[e, 1]
        if i != v and j != v:
            continue
        w = j if i == v else i
        edge = (verts[w, 0] - verts[v, 0], verts[w, 1] - verts[v, 1], verts[w, 2] - verts[v, 2])
        sin = abs(dot3(edge, dl)) / (norm3(edge) * length + 1.0e-300)
        if sin <= best_sin:
            best_sin = sin
            best = w
    _write(poly, ids, 0, to_world(shape, (verts[v, 0], verts[v, 1], verts[v, 2])), v - shape.vert_lo)
    if best < 0:
        return 1
    _write(poly, ids, 1, to_world(shape, (verts[best, 0], verts[best, 1], verts[best, 2])), best - shape.vert_lo)
    return 2


@njit_kernel
def edge_feature(shape, hulls, d, poly, ids):
    """The straight edge perpendicular to the unit ``d`` (within FEATURE_SIN) supporting the shape, else its
    support point; returns 2 or 1. Box edge, cylinder or cone side line, capsule segment, hull edge (radius
    included for the capsule and the sphere).
    """
    kind = shape.kind
    dl = to_local(shape, d)
    r, h, _ = shape.size
    if kind == BOX:
        k = -1
        for i in range(3):
            if abs(dl[i]) <= FEATURE_SIN and (k < 0 or abs(dl[i]) < abs(component(dl, k))):
                k = i
        if k >= 0:
            hb = shape.size
            corner = (hb[0] if dl[0] >= 0.0 else -hb[0], hb[1] if dl[1] >= 0.0 else -hb[1])
            corner = (corner[0], corner[1], hb[2] if dl[2] >= 0.0 else -hb[2])
            x0 = with_component(corner, k, -component(hb, k))
            x1 = with_component(corner, k, component(hb, k))
            _write(poly, ids, 0, to_world(shape, x0), _box_corner_id(x0))
            _write(poly, ids, 1, to_world(shape, x1), _box_corner_id(x1))
            return 2
    elif kind == CAPSULE:
        if abs(dl[2]) <= FEATURE_SIN:
            return _write_segment(shape, (0.0, 0.0, -h), (0.0, 0.0, h), 0, scale3(d, shape.sweep), poly, ids)
    elif kind == CYLINDER:
        if abs(dl[2]) <= FEATURE_SIN:
            c, s, _ = _radial(shape, dl)
            return _write_segment(shape, (r * c, r * s, -h), (r * c, r * s, h), 2 * RIM_SEGMENTS, (0.0, 0.0, 0.0),
                                  poly, ids)  # fmt: skip
    elif kind == CONE:
        c, s, rho = _radial(shape, dl)
        if (2.0 * h * rho + r * dl[2]) / math.sqrt(4.0 * h * h + r * r) >= FEATURE_COS:
            return _write_segment(shape, (0.0, 0.0, h), (r * c, r * s, -h), RIM_SEGMENTS, (0.0, 0.0, 0.0), poly, ids)
    elif kind == CONVEX:
        return _hull_edge_feature(shape, hulls, dl, poly, ids)
    x = axpy3(shape.sweep, d, support_core(shape, hulls.hull_verts, d))
    _write(poly, ids, 0, x, 0)
    return 1
