"""Narrow phase: contact points, normals and gaps for every candidate pair (seed 000 §2.1).

One job: ``generate_contacts`` dispatches each candidate pair (first shape = lower ``ShapeType``) to its pair
kernel, in one compiled pass per family of kernels that the scene's shapes need (so a first bake compiles only
those), and ``compute_shape_aabbs`` bounds the shapes for the broad phase; this module holds the sphere, plane
and capsule pair kernels, the box-box and box-capsule kernels live in ``box_contacts``, and every pair with a
cylinder, cone or convex hull goes through the GJK/EPA manifold of ``convex_contacts``, and every pair with a
triangle mesh through ``mesh_contacts`` (a passive mesh's BVH) or ``sdf_contacts`` (an active mesh's signed
distance field). Shapes are given by
``ShapeType`` and params (radius | half-extents | (radius, half_height) | (bounding radius,)) [m], world origins
(3,) [m], rotation matrices (3, 3) whose columns are the local axes, and for hulls an index into a
:class:`~..hull.HullArrays`. The contact conventions (normal from the first shape to the second, signed gap phi
[m], midpoint contact point, feature ids in [0, FEATURE_MAX)) are documented in ``contact_common``. Meshes are
an index into a :class:`~..mesh.MeshArrays`; a mesh with a field (``mesh_sdf_dims > 0``) is active.

Kernels work on tuples of three floats, which Numba keeps in registers: no heap allocation per pair; the clipping,
GJK/EPA and manifold buffers are allocated once per pass.
"""

import numpy as np

from ...jit import njit_kernel
from ...math.vec import add3, axpy3, column3, cross3, dot3, midpoint3, norm3, rotate3, rotate_t3, scale3, sub3, vec3
from .box_contacts import closest_segment_box_param, collide_box_box, collide_box_capsule
from .contact_common import (
    FEATURE_MAX,
    INF,
    PARALLEL_CROSS,
    clamp,
    closest_segment_segment_params,
    emit_contact,
    sign,
    unit_axis,
    with_component,
)
from .convex_contacts import allocate_convex_scratch, collide_convex_convex, collide_plane_convex
from .mesh_contacts import collide_passive_mesh
from .mesh_manifold import allocate_mesh_scratch
from .sdf_contacts import collide_active_mesh
from .support import bounding_radius, make_convex_shape

__all__ = [
    "FEATURE_MAX",
    "INF",
    "closest_segment_box_param",
    "closest_segment_segment_params",
    "collide_box_box",
    "collide_box_capsule",
    "collide_box_plane",
    "collide_capsule_capsule",
    "collide_capsule_plane",
    "collide_convex_convex",
    "collide_plane_convex",
    "collide_sphere_box",
    "collide_sphere_capsule",
    "collide_sphere_plane",
    "collide_sphere_sphere",
    "compute_shape_aabbs",
    "generate_contacts",
]

# ShapeType values (core/enums.py).
_SPHERE = 1
_BOX = 2
_CAPSULE = 3
_PLANE = 4
_CYLINDER = 5
_CONE = 6
_CONVEX = 7
_MESH = 8

_CAPSULE_PARALLEL_SIN = 2.0e-2
"""``sin`` of the angle below which two capsule axes count as parallel (two contacts at the overlap ends)."""


# ---------------------------------------------------------------------------------------------------------------
# Sphere-swept contact
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def _emit_sphere_sphere(out, pair_index, sgn, margin, ca, ra, cb, rb, fallback, feature):
    """Contact between spheres (ca, ra) and (cb, rb) [m]; ``fallback`` is the unit normal for coincident centres.

    Seed §2.1.1: ``phi = |cb - ca| - (ra + rb)``, ``n = (cb - ca) / |cb - ca|``,
    ``p = (ca + ra n + cb - rb n) / 2``. Shared by every sphere-swept pair (capsule ends, segment closest points).
    """
    d = sub3(cb, ca)
    dist = norm3(d)
    gap = dist - ra - rb
    if not gap <= margin:
        return
    n = fallback if dist < 1.0e-12 else scale3(d, 1.0 / dist)
    point = midpoint3(axpy3(ra, n, ca), axpy3(-rb, n, cb))
    emit_contact(out, pair_index, point, n, sgn, gap, feature)


# ---------------------------------------------------------------------------------------------------------------
# Pair kernels (first shape has the lower ShapeType value)
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def collide_sphere_sphere(ca, ra, cb, rb, margin, pair_index, sgn, out):
    """Sphere (ca (3,), ra) vs sphere (cb, rb) [m], seed §2.1.1; coincident centres use the world +z axis."""
    _emit_sphere_sphere(out, pair_index, sgn, margin, vec3(ca), ra, vec3(cb), rb, (0.0, 0.0, 1.0), 0)


@njit_kernel
def collide_sphere_plane(cs, rs, po, Rp, margin, pair_index, sgn, out):
    """Sphere (cs (3,), rs) vs plane through ``po`` with normal ``Rp[:, 2]``; normal sphere -> plane = -n."""
    n = column3(Rp, 2)
    c = vec3(cs)
    gap = dot3(sub3(c, vec3(po)), n) - rs
    if gap <= margin:
        # Sphere's lowest point c - rs n and its projection c - (rs + gap) n on the plane.
        point = axpy3(-(rs + 0.5 * gap), n, c)
        emit_contact(out, pair_index, point, scale3(n, -1.0), sgn, gap, 0)


@njit_kernel
def collide_sphere_box(cs, rs, pb, Rb, hb, margin, pair_index, sgn, out):
    """Sphere (cs (3,), rs) vs box (pb, Rb (3, 3), half-extents hb (3,)) [m]; normal sphere -> box.

    Seed §2.1.2 with erratum E15. Shallow (centre outside): closest box point g (eq. 85), ``n`` from the centre to
    g, ``phi = |g - c| - r``. Deep (centre inside): nearest of the 6 faces ``i* = argmin h_i - |c_i|``, box
    outward normal ``sign(c_i*) e_i*``, sphere -> box normal is its negative and ``phi = -(h_i* - |c_i*| + r)``.
    Both cases agree on a face: the normal always points from the sphere into the box.
    """
    c = vec3(cs)
    center = vec3(pb)
    cl = rotate_t3(Rb, sub3(c, center))
    g = (clamp(cl[0], -hb[0], hb[0]), clamp(cl[1], -hb[1], hb[1]), clamp(cl[2], -hb[2], hb[2]))
    diff = sub3(g, cl)
    dist = norm3(diff)
    if dist > 0.0:
        gap = dist - rs
        if not gap <= margin:
            return
        n = rotate3(Rb, scale3(diff, 1.0 / dist))
    else:
        k = 0
        depth = hb[0] - abs(cl[0])
        for i in range(1, 3):
            d_i = hb[i] - abs(cl[i])
            if d_i < depth:
                depth = d_i
                k = i
        s = sign(cl[k])
        g = with_component(cl, k, s * hb[k])
        gap = -(depth + rs)
        n = rotate3(Rb, unit_axis(k, -s))
    box_point = add3(center, rotate3(Rb, g))
    point = midpoint3(box_point, axpy3(rs, n, c))
    emit_contact(out, pair_index, point, n, sgn, gap, 0)


@njit_kernel
def collide_sphere_capsule(cs, rs, pc, Rc, rc, hc, margin, pair_index, sgn, out):
    """Sphere (cs (3,), rs) vs capsule (pc, Rc, radius rc, half-height hc) [m]; normal sphere -> capsule.

    Sphere vs the closest point of the capsule's segment, then seed §2.1.1 with radii (rs, rc).
    """
    c = vec3(cs)
    u = column3(Rc, 2)
    center = vec3(pc)
    t = clamp(dot3(sub3(c, center), u), -hc, hc)
    q = axpy3(t, u, center)
    # Centre on the axis: any direction perpendicular to it is a minimum-translation direction.
    _emit_sphere_sphere(out, pair_index, sgn, margin, c, rs, q, rc, column3(Rc, 0), 0)


@njit_kernel
def collide_box_plane(pb, Rb, hb, po, Rp, margin, pair_index, sgn, out):
    """Box (pb, Rb, hb) vs plane (po, Rp) [m]: one contact per vertex within margin, feature = vertex index.

    Normal box -> plane = -n (n = plane's local +z); the vertex gap is its signed height above the plane.
    """
    n = column3(Rp, 2)
    o = vec3(po)
    center = vec3(pb)
    for v in range(8):
        local = (
            hb[0] * (1.0 - 2.0 * (v & 1)),
            hb[1] * (1.0 - 2.0 * ((v >> 1) & 1)),
            hb[2] * (1.0 - 2.0 * ((v >> 2) & 1)),
        )
        x = add3(center, rotate3(Rb, local))
        gap = dot3(sub3(x, o), n)
        if gap <= margin:
            emit_contact(out, pair_index, axpy3(-0.5 * gap, n, x), scale3(n, -1.0), sgn, gap, v)


@njit_kernel
def collide_capsule_plane(pc, Rc, rc, hc, po, Rp, margin, pair_index, sgn, out):
    """Capsule (pc, Rc, rc, hc) vs plane (po, Rp) [m]: its two end spheres, features 0 (-z end) and 1 (+z end)."""
    n = column3(Rp, 2)
    u = column3(Rc, 2)
    o = vec3(po)
    for e in range(2):
        x = axpy3((2.0 * e - 1.0) * hc, u, vec3(pc))
        gap = dot3(sub3(x, o), n) - rc
        if gap <= margin:
            emit_contact(out, pair_index, axpy3(-(rc + 0.5 * gap), n, x), scale3(n, -1.0), sgn, gap, e)


@njit_kernel
def collide_capsule_capsule(pa, Ra, ra, ha, pb, Rb, rb, hb, margin, pair_index, sgn, out):
    """Capsule vs capsule [m]: sphere contacts at the closest points of the two segments; normal a -> b.

    Nearly parallel axes (``sin < _CAPSULE_PARALLEL_SIN``) whose projections overlap get two contacts, at the
    ends of the overlap (features 1, 2), so a capsule lying on another does not roll about a single point.
    Otherwise one contact (feature 0); intersecting axes use ``ua x ub`` as the normal.
    """
    ca = vec3(pa)
    cb = vec3(pb)
    ua = column3(Ra, 2)
    ub = column3(Rb, 2)
    axb = cross3(ua, ub)
    sin_angle = norm3(axb)
    if sin_angle < _CAPSULE_PARALLEL_SIN:
        # Overlap of b's segment projected on a's axis, in a's axial coordinate.
        t0 = dot3(axpy3(-hb, ub, cb), ua) - dot3(ca, ua)
        t1 = dot3(axpy3(hb, ub, cb), ua) - dot3(ca, ua)
        lo = max(-ha, min(t0, t1))
        hi = min(ha, max(t0, t1))
        if hi - lo > 1.0e-9 * (1.0 + ha + hb):
            for e in range(2):
                x = axpy3(lo if e == 0 else hi, ua, ca)
                t = clamp(dot3(sub3(x, cb), ub), -hb, hb)
                _emit_sphere_sphere(out, pair_index, sgn, margin, x, ra, axpy3(t, ub, cb), rb, column3(Ra, 0), 1 + e)
            return
    p0 = axpy3(-ha, ua, ca)
    q0 = axpy3(-hb, ub, cb)
    s, t = closest_segment_segment_params(p0, scale3(ua, 2.0 * ha), q0, scale3(ub, 2.0 * hb))
    x = axpy3(2.0 * ha * s, ua, p0)
    y = axpy3(2.0 * hb * t, ub, q0)
    fallback = scale3(axb, 1.0 / sin_angle) if sin_angle > PARALLEL_CROSS else column3(Ra, 0)
    _emit_sphere_sphere(out, pair_index, sgn, margin, x, ra, y, rb, fallback, 0)


# ---------------------------------------------------------------------------------------------------------------
# Bounds and dispatch
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def _convex_extent(t, params, R, hulls, hull, k):
    """Lowest and highest offset [m] of a cylinder, cone or hull from its origin along world axis k.

    Cylinder: ``+-(|u_k| h + r sqrt(1 - u_k^2))`` (u = its axis); cone: the better of the apex ``h u_k`` and the
    base rim ``-h u_k +- r sqrt(1 - u_k^2)``; hull: exact over its rotated vertices.
    """
    if t == _CONVEX:
        lo = INF
        hi = -INF
        verts = hulls.hull_verts
        for v in range(hulls.hull_vert_start[hull], hulls.hull_vert_start[hull + 1]):
            x = R[k, 0] * verts[v, 0] + R[k, 1] * verts[v, 1] + R[k, 2] * verts[v, 2]
            lo = min(lo, x)
            hi = max(hi, x)
        return lo, hi
    r = params[0]
    h = params[1]
    uk = R[k, 2]
    rim = r * np.sqrt(max(0.0, 1.0 - uk * uk))
    if t == _CYLINDER:
        return -(abs(uk) * h + rim), abs(uk) * h + rim
    return min(h * uk, -h * uk - rim), max(h * uk, -h * uk + rim)


@njit_kernel
def compute_shape_aabbs(shape_type, shape_params, shape_world_pos, shape_world_rot, hulls, shape_hull, meshes,
                        shape_mesh, margin, aabb_lower, aabb_upper):  # fmt: skip
    """World AABB of every shape expanded by ``margin`` [m].

    Args:
        shape_type: ``ShapeType`` per shape, shape (shape_count,), int.
        shape_params: (radius | half-extents | (radius, half_height) | (bounding radius,)), shape (shape_count, 3)
            [m].
        shape_world_pos: shape origins, shape (shape_count, 3) [m].
        shape_world_rot: rotation matrices (columns = local axes), shape (shape_count, 3, 3).
        hulls: every convex hull (:class:`~..hull.HullArrays`, shape-frame vertices).
        shape_hull: index into ``hulls`` of each CONVEX shape (else ignored), shape (shape_count,), int32.
        meshes: every triangle mesh (:class:`~..mesh.MeshArrays`, shape-frame vertices).
        shape_mesh: index into ``meshes`` of each MESH shape (else ignored), shape (shape_count,), int32.
        margin: contact margin [m].
        aabb_lower, aabb_upper: outputs, shape (shape_count, 3) [m].

    Planes are unbounded (+-INF) except along an axis-aligned normal, where the solid side stops at the plane.
    A mesh's box is the world box of its BVH root box (conservative, O(1) per mesh).
    """
    for s in range(shape_type.shape[0]):
        t = shape_type[s]
        R = shape_world_rot[s]
        c = shape_world_pos[s]
        if t == _MESH:
            root = meshes.mesh_node_start[shape_mesh[s]]
            for k in range(3):
                mid = 0.0
                ext = margin
                for j in range(3):
                    lo_j = meshes.mesh_node_lower[root, j]
                    hi_j = meshes.mesh_node_upper[root, j]
                    mid += R[k, j] * 0.5 * (lo_j + hi_j)
                    ext += abs(R[k, j]) * 0.5 * (hi_j - lo_j)
                aabb_lower[s, k] = c[k] + mid - ext
                aabb_upper[s, k] = c[k] + mid + ext
            continue
        if _CYLINDER <= t <= _CONVEX:
            for k in range(3):
                lo, hi = _convex_extent(t, shape_params[s], R, hulls, shape_hull[s], k)
                aabb_lower[s, k] = c[k] + lo - margin
                aabb_upper[s, k] = c[k] + hi + margin
            continue
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
def _collide_mesh(a, b, ta, tb, pa, Ra, ga, pb, Rb, gb, shape_hull, hulls, shape_mesh, meshes, margin, p, sgn,
                  mesh_scratch, scratch, out):  # fmt: skip
    """Pair ``p`` whose second shape ``b`` is a MESH (types ordered as in :func:`generate_contacts`): an active
    mesh's field against the other shape, or a passive mesh against a convex shape."""
    if norm3(sub3(pb, pa)) - bounding_radius(ta, ga) - gb[0] > margin and ta != _PLANE:
        return  # bounding spheres farther apart than the margin
    mb = np.int64(shape_mesh[b])
    ma = np.int64(shape_mesh[a]) if ta == _MESH else np.int64(-1)
    if meshes.mesh_sdf_dims[mb, 0] > 0:  # b active: its field against a
        collide_active_mesh(meshes, mb, pb, Rb, gb[0], ta, ga, pa, Ra, np.int64(shape_hull[a]), hulls, ma, margin, p,
                            -sgn, mesh_scratch, out)  # fmt: skip
    elif ta == _MESH and meshes.mesh_sdf_dims[ma, 0] > 0:  # a active, b passive
        collide_active_mesh(meshes, ma, pa, Ra, ga[0], tb, gb, pb, Rb, np.int64(shape_hull[b]), hulls, mb, margin, p,
                            sgn, mesh_scratch, out)  # fmt: skip
    elif ta != _MESH and ta != _PLANE:  # b passive against a convex shape
        collide_passive_mesh(meshes, mb, pb, Rb, ta, ga, pa, Ra, np.int64(shape_hull[a]), hulls, margin, p, -sgn,
                             mesh_scratch, scratch, out)  # fmt: skip
    # two passive meshes, or a passive mesh and a plane: never both dynamic, no contacts


@njit_kernel
def _collide_primitives(ta, tb, pa, Ra, ga, pb, Rb, gb, margin, p, sgn, clip_pos, clip_tag, out):
    """Pair ``p`` of spheres, boxes, capsules and planes (``ta <= tb``) by its closed-form kernel."""
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


@njit_kernel
def _pair_of(shapes, candidates, p):
    """Pair ``p`` of ``candidates = (pairs, pair_count, contact_margin, shape_sweep)`` as ``(a, b, ta, tb, sgn,
    margin)``: shape indices and types with the lower ShapeType first (same type: lower shape index, so biased
    choices such as the box-box reference face do not depend on the pair order), ``sgn = -1`` when swapped (the
    kernels' normals are multiplied by it to restore the pair's order), and the pair's contact margin (speculative:
    at least the sum of the two shapes' sweeps)."""
    shape_type = shapes[0]
    pairs, _, contact_margin, shape_sweep = candidates
    a = pairs[p, 0]
    b = pairs[p, 1]
    ta = shape_type[a]
    tb = shape_type[b]
    sgn = 1.0
    if ta > tb or (ta == tb and a > b):
        a, b, ta, tb, sgn = b, a, tb, ta, -1.0
    return a, b, ta, tb, sgn, max(contact_margin, shape_sweep[a] + shape_sweep[b])


@njit_kernel
def primitive_pair_contacts(shapes, candidates, out):
    """The pass of :func:`generate_contacts` over the pairs of spheres, boxes, capsules and planes (closed forms).

    ``shapes = (shape_type, shape_params, shape_world_pos, shape_world_rot)``, ``candidates = (pairs, pair_count,
    contact_margin, shape_sweep)`` and ``out = (pair, point, normal, gap, feature, counts)`` as in
    :func:`generate_contacts`.
    """
    _, params, pos, rot = shapes
    clip_pos = np.empty((2, 8, 3))
    clip_tag = np.empty((2, 8, 2), np.int64)
    for p in range(candidates[1]):
        a, b, ta, tb, sgn, margin = _pair_of(shapes, candidates, p)
        if tb < _CYLINDER:
            _collide_primitives(ta, tb, pos[a], rot[a], params[a], pos[b], rot[b], params[b], margin, p, sgn,
                                clip_pos, clip_tag, out)  # fmt: skip


@njit_kernel
def convex_pair_contacts(shapes, hulls, shape_hull, candidates, out):
    """The pass of :func:`generate_contacts` over the pairs whose second shape is a cylinder, cone or hull: one
    generic GJK/EPA manifold kernel (a plane against it: its support along the plane normal). Arguments as in
    :func:`primitive_pair_contacts`, with the hulls."""
    _, params, pos, rot = shapes
    scratch = allocate_convex_scratch()
    for p in range(candidates[1]):
        a, b, ta, tb, sgn, margin = _pair_of(shapes, candidates, p)
        if not _CYLINDER <= tb <= _CONVEX:
            continue
        pa, Ra, ga = pos[a], rot[a], params[a]
        pb, Rb, gb = pos[b], rot[b], params[b]
        if ta == _PLANE:
            B = make_convex_shape(tb, gb, pb, Rb, int(shape_hull[b]), hulls)
            collide_plane_convex(pa, Ra, B, hulls, margin, p, sgn, scratch, out)
        elif norm3(sub3(pb, pa)) - bounding_radius(ta, ga) - bounding_radius(tb, gb) <= margin:
            # (bounding spheres farther apart than the margin: no contact, skip the kernel's set-up)
            A = make_convex_shape(ta, ga, pa, Ra, int(shape_hull[a]), hulls)
            B = make_convex_shape(tb, gb, pb, Rb, int(shape_hull[b]), hulls)
            collide_convex_convex(A, B, hulls, margin, p, sgn, scratch, out)


@njit_kernel
def mesh_pair_contacts(shapes, hulls, shape_hull, meshes, shape_mesh, candidates, out):
    """The pass of :func:`generate_contacts` over the pairs with a triangle mesh (second shape, by type order).
    Arguments as in :func:`convex_pair_contacts`, with the meshes."""
    _, params, pos, rot = shapes
    scratch = allocate_convex_scratch()
    mesh_scratch = allocate_mesh_scratch(hulls, meshes)
    for p in range(candidates[1]):
        a, b, ta, tb, sgn, margin = _pair_of(shapes, candidates, p)
        if tb == _MESH:
            _collide_mesh(a, b, ta, tb, pos[a], rot[a], params[a], pos[b], rot[b], params[b], shape_hull, hulls,
                          shape_mesh, meshes, margin, p, sgn, mesh_scratch, scratch, out)  # fmt: skip


def generate_contacts(
    shape_type,
    shape_params,
    shape_world_pos,
    shape_world_rot,
    hulls,
    shape_hull,
    meshes,
    shape_mesh,
    pairs,
    pair_count,
    contact_margin,
    shape_sweep,
    out_pair,
    out_point,
    out_normal,
    out_gap,
    out_feature,
    counts,
):
    """Contacts (gap <= the pair's margin) of the first ``pair_count`` pairs, seed §2.1, in pair order.

    Args:
        shape_type, shape_params, shape_world_pos, shape_world_rot, hulls, shape_hull, meshes, shape_mesh: as in
            ``compute_shape_aabbs``.
        pairs: candidate shape pairs, shape (pair_max, 2), int32.
        pair_count: number of valid rows of ``pairs``.
        contact_margin: contacts are generated up to this separation [m].
        shape_sweep: how far each shape can move in the coming step [m], shape (shape_count,); a pair whose
            sweeps add up to more than ``contact_margin`` gets contacts up to that sum (speculative contacts, course
            eq. 12: the solver lets the gap close and no further, so fast bodies do not tunnel).
        out_pair: pair index of each contact, shape (contact_max,), int32.
        out_point: world point midway between the surfaces, shape (contact_max, 3) [m].
        out_normal: unit normal from ``pairs[p, 0]`` to ``pairs[p, 1]``, shape (contact_max, 3).
        out_gap: signed gap phi, shape (contact_max,) [m].
        out_feature: feature id in [0, FEATURE_MAX), shape (contact_max,), int32.
        counts: [stored, overflowed], shape (2,), int64. When full, the first contacts in pair order are kept.

    One compiled pass per family of pair kernels (closed forms, GJK/EPA, meshes), run only when the scene has shapes
    of that family: a scene of boxes never compiles the mesh and hull kernels, and no kernel links all of them.
    """
    shapes = (shape_type, shape_params, shape_world_pos, shape_world_rot)
    candidates = (pairs, pair_count, contact_margin, shape_sweep)
    geometry = (hulls, shape_hull, meshes, shape_mesh)
    passes = _passes(shape_type)
    out = (out_pair, out_point, out_normal, out_gap, out_feature)
    counts[0] = 0
    counts[1] = 0
    if len(passes) == 1:
        _run_pass(passes[0], shapes, geometry, candidates, (*out, counts))
    elif passes:  # contacts of several passes: merge them into pair order
        _merge_passes(passes, shapes, geometry, candidates, out, counts)


def _passes(shape_type) -> tuple[str, ...]:
    """The passes a scene of these shape types needs: a family's pairs exist only if its shapes do."""
    types = np.asarray(shape_type)
    primitive = int(np.count_nonzero(types < _CYLINDER)) >= 2
    convex = bool(np.any((types >= _CYLINDER) & (types <= _CONVEX)))
    mesh = bool(np.any(types == _MESH))
    return tuple(name for name, used in (("primitive", primitive), ("convex", convex), ("mesh", mesh)) if used)


def _run_pass(name, shapes, geometry, candidates, out) -> None:
    """Append the contacts of one pass to ``out = (pair, point, normal, gap, feature, counts)``."""
    hulls, shape_hull, meshes, shape_mesh = geometry
    if name == "primitive":
        primitive_pair_contacts(shapes, candidates, out)
    elif name == "convex":
        convex_pair_contacts(shapes, hulls, shape_hull, candidates, out)
    else:
        mesh_pair_contacts(shapes, hulls, shape_hull, meshes, shape_mesh, candidates, out)


def _merge_passes(passes, shapes, geometry, candidates, out, counts) -> None:
    """Run several passes and put their contacts in pair order (each pair's contacts come from one pass, in the
    order its kernel emitted them): the same contacts, in the same order, as one loop over the pairs.

    When ``out`` (five arrays) is too small, the passes run again into buffers that hold every contact, and the
    first ones in pair order are kept (as one loop over the pairs keeps them).
    """
    cap = min(len(o) for o in out)
    target = out
    for _ in range(2):
        counts[0] = 0
        counts[1] = 0
        for name in passes:
            _run_pass(name, shapes, geometry, candidates, (*target, counts))
        if counts[1] == 0:
            break
        total = int(counts[0] + counts[1])
        target = (np.zeros(total, np.int32), np.zeros((total, 3)), np.zeros((total, 3)), np.zeros(total),
                  np.zeros(total, np.int32))  # fmt: skip
    total = int(counts[0])
    order = np.argsort(target[0][:total], kind="stable")[:cap]
    for dst, src in zip(out, target, strict=True):
        dst[: len(order)] = src[:total][order]
    counts[0] = len(order)
    counts[1] = total - len(order)
