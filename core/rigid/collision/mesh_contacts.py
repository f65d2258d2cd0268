"""Passive MESH shapes (static or kinematic triangle meshes) against convex shapes, through the mesh's BVH.

One job: the contacts of a passive mesh M with a sphere, box, capsule, cylinder, cone or hull B (seed 000 §2.2:
a broad phase over the triangles, then contacts per feature pair), normal from the mesh to B.

1. The BVH (``mesh_queries.bvh_query_box``) gives the triangles whose box overlaps B's box in M's frame,
   grown by the margin.
2. Per triangle: a sphere by the closest point on the triangle (Ericson §5.1.5, exact); any other shape by the
   convex GJK/EPA manifold kernel with the triangle as a flat 3-vertex hull (``convex_contacts``), after a cheap
   test that B reaches the triangle's plane.
3. Sides. A closed, outward-wound mesh is a solid: a triangle collides only from the side its normal points to,
   and is skipped while B's centre is behind its plane (B is inside the solid or beyond a thin wall). An open
   mesh (a bowl, terrain, any soup) is a two-sided sheet: each triangle collides from the side of its plane B's
   centre is on. A contact whose normal points to the other side (B sunk past the triangle) is replaced by the
   front normal with the gap of B's deepest point along it.
4. Edges and corners (``restricted_normal``). The normal of a contact on a triangle edge may only range over the
   normals of the surface there: from the triangle's normal to its neighbour's across that edge when the edge
   is convex, the triangle's own normal when it is flat or concave (an inner edge of a smooth surface), anything
   outward on a free (boundary) edge. At a corner inside a flat or concave patch (``mesh_vert_kind``) only the
   face normal; at any other corner any outward normal that leans along none of the edges leaving it (else a
   point of that edge is nearer: a vertex in the middle of a straight ridge keeps the ridge's normals). A
   contact beyond a convex edge's range, or leaning along an edge, belongs to the neighbouring face or edge,
   which makes it: it is dropped here. (A convex-kernel contact whose normal is a face normal of the other
   shape, a triangle point pressing into that face, is the other shape's geometry and kept.) A contact that
   should take the face normal is re-made along it: the sphere's point, or the other shape's deepest point and
   the vertices of its incident feature facing the triangle (``support.incident_feature``), each kept only
   where it lies over the triangle, with its gap measured to the triangle's plane. So a sphere rolling or a box
   sliding across an inner edge sees the face normal on both sides and never bumps, and the edge normal never
   exceeds the face normals; a shape sunk deeper than the triangles are wide still gets face-normal contacts.
5. All candidates are reduced to at most ``MESH_MANIFOLD_MAX`` (``mesh_manifold``); feature ids come from the
   triangle id and the convex kernel's feature id, so warm starting follows a contact while it stays on the
   same triangle feature.

``collide_passive_mesh`` is inlined into the narrow phase, so the convex kernel it calls per triangle is linked
(and optimised by Numba) once, in the narrow phase's mesh pass, and not again in a wrapper.
"""

import math

import numpy as np

from ...jit import njit_kernel
from ...math.vec import add3, axpy3, column3, cross3, dot3, norm3, rotate3, scale3, sub3, vec3
from ..mesh import VERTEX_INNER
from ..mesh_queries import FACE, bvh_query_box, closest_point_triangle
from .convex_contacts import collide_convex_convex
from .mesh_manifold import (
    begin_candidates,
    candidate_out,
    copy_hull,
    emit_mesh_manifold,
    feature_id,
    make_room,
    push_candidate,
)
from .support import CONVEX, SPHERE, face_feature, incident_feature, make_convex_shape, support_core

__all__ = [
    "ALLOWED",
    "TO_FACE",
    "TO_NEIGHBOUR",
    "collide_passive_mesh",
    "over_triangle",
    "restricted_normal",
    "triangle_feature",
    "triangle_frame",
]

_FLAT = 1.0e-9
"""A neighbour normal leaning out of the edge by less than this [sin] makes the edge flat (or concave)."""

_ON_EDGE = 1.0e-6
"""Barycentric coordinate below which a triangle point lies on the opposite edge [dimensionless]."""


@njit_kernel(inline="always")
def _barycentric(x, a, b, c, n):
    """Barycentric coordinates of x's projection along n on the triangle (a, b, c)."""
    area = dot3(cross3(sub3(b, a), sub3(c, a)), n)
    la = dot3(cross3(sub3(b, x), sub3(c, x)), n) / area
    lb = dot3(cross3(sub3(c, x), sub3(a, x)), n) / area
    return la, lb, 1.0 - la - lb


@njit_kernel(inline="always")
def triangle_feature(x, a, b, c, n):
    """Feature code (``mesh_queries`` codes) of a point x of triangle (a, b, c) with unit normal n."""
    la, lb, lc = _barycentric(x, a, b, c, n)
    on_a, on_b, on_c = la < _ON_EDGE, lb < _ON_EDGE, lc < _ON_EDGE  # near the edge opposite that corner
    if on_b and on_c:
        return 4
    if on_c and on_a:
        return 5
    if on_a and on_b:
        return 6
    if on_c:
        return 1
    if on_a:
        return 2
    if on_b:
        return 3
    return FACE


@njit_kernel
def over_triangle(x, corners, n):
    """Whether x lies over the triangle: its projection along the unit normal n is inside (or on) it."""
    la, lb, lc = _barycentric(x, corners[0], corners[1], corners[2], n)
    return la >= -_ON_EDGE and lb >= -_ON_EDGE and lc >= -_ON_EDGE


ALLOWED = 0
"""``restricted_normal``: the normal is one of the surface's normals at the feature."""

TO_FACE = 1
"""``restricted_normal``: the contact must take the colliding side's face normal."""

TO_NEIGHBOUR = 2
"""``restricted_normal``: the normal lies beyond a convex edge, in the neighbouring face's range."""

_FACE_ANGLE = 1.0e-6
"""Normals within this angle [rad] of the face normal count as the face normal."""

_B_FACE_COS = 1.0 - 1.0e-9
"""A convex-kernel normal this aligned [cos] with a face of the other shape is that face's normal."""


@njit_kernel(inline="always")
def _edge_range(n, n_front, outward, m):
    """n against the normals of an edge: ``(n', code)``.

    ``outward``: unit in-plane direction leaving the triangle across the edge; ``m``: the neighbour's normal on
    the front side (zero: free edge). With angles ``phi = atan2(v . outward, v . n_front)`` the edge's normals
    are phi in [0, phi_m] (convex), {0} (flat or concave) or [0, pi] (free).
    """
    phi = math.atan2(dot3(n, outward), dot3(n, n_front))
    free = dot3(m, m) == 0.0
    ym = dot3(m, outward)
    if abs(phi) <= _FACE_ANGLE:
        return n, ALLOWED
    if phi < 0.0 or (not free and ym <= _FLAT):
        return n_front, TO_FACE
    if not free and phi > math.atan2(ym, dot3(m, n_front)):
        return m, TO_NEIGHBOUR
    return n, ALLOWED


@njit_kernel(inline="always")
def _edge_nearer(n, v, verts, ring_start, ring, R):
    """Whether the world direction n leans along an edge leaving vertex v (global id) of a mesh rotated by R:
    then a point of that edge is nearer than v to the point in direction n."""
    nl = (R[0, 0] * n[0] + R[1, 0] * n[1] + R[2, 0] * n[2], R[0, 1] * n[0] + R[1, 1] * n[1] + R[2, 1] * n[2],
          R[0, 2] * n[0] + R[1, 2] * n[1] + R[2, 2] * n[2])  # fmt: skip
    for i in range(ring_start[v], ring_start[v + 1]):
        w = ring[i]
        d = (verts[w, 0] - verts[v, 0], verts[w, 1] - verts[v, 1], verts[w, 2] - verts[v, 2])
        if dot3(nl, d) > _FACE_ANGLE * norm3(d):
            return True
    return False


@njit_kernel
def restricted_normal(n, feature, corners, normal, n_front, neighbours, frame):
    """The normal n of a contact on ``feature`` of a triangle against the surface's normals there (module
    docstring, item 4): ``(n', code)`` with code ALLOWED (n' = n), TO_FACE (n' = the face normal) or
    TO_NEIGHBOUR (n' = the neighbour's normal across a convex edge, or n: another feature is nearer).

    ``corners``: the triangle's corners; ``normal``: its own unit normal (the winding's); ``n_front``: the normal
    of the colliding side (+-normal); ``neighbours``: the three neighbour normals on that side (zero: free);
    ``frame = (corner vertex ids, mesh_vert_kind, mesh_verts, mesh_ring_start, mesh_ring, R)`` for corners.
    """
    if dot3(n, n_front) < 0.0:
        return n_front, TO_FACE
    if feature == FACE:
        return n_front, ALLOWED if dot3(n, n_front) >= math.cos(_FACE_ANGLE) else TO_FACE
    if feature <= 3:
        k = feature - 1
        outward = cross3(sub3(corners[(k + 1) % 3], corners[k]), normal)
        return _edge_range(n, n_front, scale3(outward, 1.0 / norm3(outward)), neighbours[k])
    # a corner (module docstring, item 4)
    vids, vert_kind, verts, ring_start, ring, R = frame
    v = vids[feature - 4]
    if dot3(n, n_front) >= math.cos(_FACE_ANGLE):
        return n, ALLOWED
    if vert_kind[v] == VERTEX_INNER:
        return n_front, TO_FACE
    if _edge_nearer(n, v, verts, ring_start, ring, R):
        return n, TO_NEIGHBOUR
    return n, ALLOWED


@njit_kernel
def triangle_frame(verts, tris, tri_normal, edge_normal, closed, t, pos, R, reference):
    """Triangle t of a mesh posed at (pos, R) as seen by a shape whose centre is ``reference`` [m]:
    ``(use, corners, normal, n_front, neighbours, vids)`` in world coordinates (``vids``: the corners' global
    vertex ids).

    ``normal`` is the winding's unit normal, ``n_front`` the colliding side's (a closed mesh: always ``normal``;
    an open one: the side of ``reference``), ``neighbours`` the edge neighbours' normals turned to that side;
    ``use`` is False when a closed mesh's triangle faces away from ``reference`` (module docstring, item 3).
    """
    o = vec3(pos)
    i, j, k = tris[t, 0], tris[t, 1], tris[t, 2]
    corners = (
        add3(o, rotate3(R, (verts[i, 0], verts[i, 1], verts[i, 2]))),
        add3(o, rotate3(R, (verts[j, 0], verts[j, 1], verts[j, 2]))),
        add3(o, rotate3(R, (verts[k, 0], verts[k, 1], verts[k, 2]))),
    )
    normal = rotate3(R, (tri_normal[t, 0], tri_normal[t, 1], tri_normal[t, 2]))
    ahead = dot3(normal, sub3(reference, corners[0])) >= 0.0
    s = 1.0 if (closed or ahead) else -1.0
    en = edge_normal
    neighbours = (
        scale3(rotate3(R, (en[t, 0, 0], en[t, 0, 1], en[t, 0, 2])), s),
        scale3(rotate3(R, (en[t, 1, 0], en[t, 1, 1], en[t, 1, 2])), s),
        scale3(rotate3(R, (en[t, 2, 0], en[t, 2, 1], en[t, 2, 2])), s),
    )
    return ahead or not closed, corners, normal, scale3(normal, s), neighbours, (i, j, k)


@njit_kernel(inline="always")
def _query_box(B, verts, pos, R, margin):
    """B's box in the mesh frame (origin ``pos``, rotation R), grown by ``margin``: ``(lower, upper)`` [m]."""
    o = vec3(pos)
    lo = (0.0, 0.0, 0.0)
    hi = (0.0, 0.0, 0.0)
    for k in range(3):
        e = column3(R, k)
        shift = dot3(o, e)
        h = dot3(support_core(B, verts, e), e) + B.sweep + margin - shift
        low = dot3(support_core(B, verts, scale3(e, -1.0)), e) - B.sweep - margin - shift
        if k == 0:
            lo, hi = (low, lo[1], lo[2]), (h, hi[1], hi[2])
        elif k == 1:
            lo, hi = (lo[0], low, lo[2]), (hi[0], h, hi[2])
        else:
            lo, hi = (lo[0], lo[1], low), (hi[0], hi[1], h)
    return lo, hi


@njit_kernel
def sphere_triangle(C, t, corners, normal, n_front, neighbours, frame, c, r, margin, scale):
    """Sphere (centre c, radius r) against one triangle: closest point, restricted normal, at most one candidate."""
    q, feature = closest_point_triangle(c, corners[0], corners[1], corners[2])
    d = sub3(c, q)
    dist = norm3(d)
    if dist - r > margin:
        return
    n = scale3(d, 1.0 / dist) if dist > 1.0e-12 * scale else n_front
    n, code = restricted_normal(n, feature, corners, normal, n_front, neighbours, frame)
    if code == TO_NEIGHBOUR or (code == TO_FACE and not over_triangle(c, corners, n_front)):
        return
    gap = dot3(n, d) - r
    if gap <= margin:
        push_candidate(C, t, axpy3(-(r + 0.5 * gap), n, c), n, gap, feature_id(t, np.int64(0)))


@njit_kernel
def load_triangle(T, tri_pos, tri_params, corners, normal, n_front, B, margin):
    """Write the triangle into hull slot 0 of ``T`` (about its centroid ``tri_pos``; front and back face) unless B
    lies wholly in front of its plane beyond the margin; returns whether it was loaded."""
    lowest = dot3(support_core(B, T.hull_verts, scale3(n_front, -1.0)), n_front) - B.sweep
    if lowest - dot3(n_front, corners[0]) > margin:
        return False
    centre = scale3(add3(add3(corners[0], corners[1]), corners[2]), 1.0 / 3.0)
    radius = 0.0
    for k in range(3):
        x = sub3(corners[k], centre)
        for j in range(3):
            T.hull_verts[k, j] = x[j]
        radius = max(radius, norm3(x))
        tri_pos[k] = centre[k]
    offset = dot3(normal, sub3(corners[0], centre))
    for j in range(3):
        T.hull_face_plane[0, j] = normal[j]
        T.hull_face_plane[1, j] = -normal[j]
    T.hull_face_plane[0, 3] = offset
    T.hull_face_plane[1, 3] = -offset
    tri_params[0] = radius
    return True


@njit_kernel
def settle_triangle(C, first, t, corners, normal, n_front, neighbours, frame, B, T, poly, ids, margin):
    """Candidates ``first:`` of the convex kernel on triangle t: kept with feature ids from (t, the kernel's id)
    when their normal is one of B's face normals (the triangle presses into that face) or allowed at the
    triangle's features (module docstring, item 4), dropped when it belongs to a neighbour, else
    replaced by face-normal contacts: B's deepest point along the face normal and the vertices of B's incident
    feature, each over the triangle and within the margin, gap measured to the triangle's plane.

    ``T``: the ``HullArrays`` holding B's hull; ``poly`` (POLY_MAX, 3) and ``ids`` (POLY_MAX,): scratch.
    """
    code = ALLOWED
    if C.counts[0] > first and dot3(vec3(C.normal[first]), n_front) >= 0.0:
        # the normal of one of B's faces (a triangle point pressing into it): B's geometry, not an edge of ours
        if face_feature(B, T, scale3(vec3(C.normal[first]), -1.0), poly, ids)[2] >= _B_FACE_COS:
            first_free = C.counts[0]
            for i in range(first, first_free):
                C.feature[i] = feature_id(t, np.int64(C.feature[i]))
            return
    for i in range(first, C.counts[0]):
        n = vec3(C.normal[i])
        on_triangle = axpy3(-0.5 * C.gap[i], n, vec3(C.point[i]))
        feature = triangle_feature(on_triangle, corners[0], corners[1], corners[2], normal)
        code = max(code, restricted_normal(n, feature, corners, normal, n_front, neighbours, frame)[1])
    if code == ALLOWED:
        for i in range(first, C.counts[0]):
            C.feature[i] = feature_id(t, np.int64(C.feature[i]))
        return
    C.counts[0] = first
    if code == TO_NEIGHBOUR:
        return
    down = scale3(n_front, -1.0)
    plane = dot3(n_front, corners[0])
    deepest = axpy3(-B.sweep, n_front, support_core(B, T.hull_verts, down))
    gap = dot3(n_front, deepest) - plane
    if gap <= margin and over_triangle(deepest, corners, n_front):
        push_candidate(C, t, axpy3(-0.5 * gap, n_front, deepest), n_front, gap, feature_id(t, np.int64(0)))
    for k in range(incident_feature(B, T, down, poly, ids)):
        x = (poly[k, 0], poly[k, 1], poly[k, 2])
        gap = dot3(n_front, x) - plane
        if gap <= margin and over_triangle(x, corners, n_front):
            push_candidate(C, t, axpy3(-0.5 * gap, n_front, x), n_front, gap, feature_id(t, np.int64(1 + ids[k])))


@njit_kernel(inline="always")
def collide_passive_mesh(meshes, mesh, pm, Rm, kind, params, pos, rot, hull, hulls, margin, pair_index, sgn, S,
                         convex, out):  # fmt: skip
    """Passive mesh ``mesh`` (origin ``pm`` (3,), rotation ``Rm`` (3, 3)) vs a convex shape (``kind``, ``params``,
    ``pos``, ``rot``, hull index ``hull`` into ``hulls``); normal mesh -> shape, times ``sgn``.

    ``S``: :class:`~.mesh_manifold.MeshScratch`; ``convex``: the narrow phase's ``ConvexScratch``.
    """
    T = S.tri_hulls
    C = S.cand
    if kind == CONVEX:
        copy_hull(hulls, hull, T)
    B = make_convex_shape(kind, params, pos, rot, np.int32(1), T)  # an int32 hull id, as in the narrow phase
    lo, hi = _query_box(B, T.hull_verts, pm, Rm, margin)
    root = meshes.mesh_node_start[mesh]
    overlap = True
    for k in range(3):
        overlap &= meshes.mesh_node_lower[root, k] <= hi[k] and meshes.mesh_node_upper[root, k] >= lo[k]
    if overlap:
        closed = meshes.mesh_closed[mesh] == 1
        begin_candidates(C, margin, B.scale)
        S.stack[0] = root
        top = np.int64(1)
        while top > 0:
            count, top = bvh_query_box(meshes.mesh_node_lower, meshes.mesh_node_upper, meshes.mesh_node_right,
                                       meshes.mesh_node_first, meshes.mesh_node_count, meshes.mesh_leaf_tris,
                                       S.stack, top, lo, hi, S.triangles)  # fmt: skip
            for i in range(count):
                t = np.int64(S.triangles[i])
                use, corners, normal, n_front, neighbours, vids = triangle_frame(
                    meshes.mesh_verts, meshes.mesh_tris, meshes.mesh_tri_normal, meshes.mesh_tri_edge_normal, closed,
                    t, pm, Rm, B.center,
                )  # fmt: skip
                frame = (vids, meshes.mesh_vert_kind, meshes.mesh_verts, meshes.mesh_ring_start, meshes.mesh_ring,
                         Rm)  # fmt: skip
                if not use:
                    continue
                if kind == SPHERE:
                    sphere_triangle(C, t, corners, normal, n_front, neighbours, frame, B.center, B.sweep, margin,
                                    B.scale)  # fmt: skip
                elif load_triangle(T, S.tri_pos, S.tri_params, corners, normal, n_front, B, margin):
                    make_room(C)
                    first = C.counts[0]
                    A = make_convex_shape(np.int32(CONVEX), S.tri_params, S.tri_pos, S.tri_rot, np.int32(0), T)
                    collide_convex_convex(A, B, T, margin, t, 1.0, convex, candidate_out(C))
                    settle_triangle(C, first, t, corners, normal, n_front, neighbours, frame, B, T, convex.poly_b,
                                    convex.ids_b, margin)  # fmt: skip
        emit_mesh_manifold(out, pair_index, sgn, C)
