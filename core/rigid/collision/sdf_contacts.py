"""Active MESH shapes (dynamic, closed) against every shape, through the mesh's signed distance field (seed 000
§2.3).

One job: the contacts of an active mesh A, given by its field ``s_A`` (``mesh_sdf``, read by
``mesh_queries.sdf_eval``) and its surface samples (``mesh.surface_samples``), with any shape B; normal from A to
B. Points move between frames by rigid transforms (erratum E13: a point x of B's frame is
``R_A^T (R_B x + c_B - c_A)`` in A's frame). Two directions, each catching what the other misses:

1. A's samples against B's signed distance ``phi_B``: a sample x inside B or within the margin gives a contact
   with gap ``phi_B(x)``, normal ``-grad phi_B`` and point midway between x and its projection on B. ``phi_B`` is
   exact for the plane, sphere, capsule, box, cylinder and cone (``shape_distance``); the hull's face-plane
   distance (exact inside); another active mesh's distance (``field_distance``); a passive mesh's nearest
   triangle within reach (``bvh_nearest_triangle``), signed by the side its normal faces (or, for an open mesh,
   the side of A's centre), with the edge and corner rules of ``mesh_contacts.restricted_normal``.
2. B's features against A's distance ``s_A`` (``field_distance``: the field, made exact by the nearest triangle
   near the surface), seed Algorithm 2 (gap ``s_A(x) - radius``, normal ``grad s_A``): the corner
   points of a convex shape (box corners, rim points, hull vertices, the sphere's centre) and the point of each
   straight edge where ``s_A`` is least (golden-section search, the 1D form of the seed's refinement), the
   vertices of a passive mesh and the minimum of ``s_A`` over each of its triangles near A (the face-based
   refinement of Macklin et al. 2020, seed §2.3.2: projected gradient on the barycentric coordinates,
   projection after the step per erratum E16), and another active mesh's samples.

Edges and triangles are only refined where the field's 1-Lipschitz bound allows a contact (the least corner
value minus half the edge, or minus 0.58 x the longest edge of a triangle, and its centre's value minus its
farthest corner, within the margin); each vertex of a passive mesh is evaluated once per pair. Candidates are
reduced to at most ``MESH_MANIFOLD_MAX`` contacts (``mesh_manifold``). ``collide_active_mesh`` only dispatches
and is inlined into the narrow phase; the work is in one function per direction and kind of B.
"""

import math

import numpy as np

from ...jit import njit_kernel
from ...math.vec import add3, axpy3, column3, dot3, norm3, rotate3, rotate_t3, scale3, sub3, vec3
from ..mesh_queries import bvh_nearest_triangle, bvh_query_box, sdf_eval, winding_number_at
from .mesh_contacts import restricted_normal, triangle_frame
from .mesh_manifold import begin_candidates, emit_mesh_manifold, feature_id, push_candidate
from .shape_distance import feature_counts, feature_edge, feature_vertex, shape_distance
from .support import CAPSULE, PLANE, SPHERE, bounding_radius

MESH = 8
"""``ShapeType.MESH``."""

GOLDEN_STEPS = 12
"""Golden-section steps along an edge (the bracket shrinks to 0.618^12 ~ 0.3 % of the edge)."""

DESCENT_STEPS = 10
"""Projected-gradient steps minimising the field over a triangle."""

SAMPLE_REACH = 0.01
"""A sample of A is tested against a passive mesh's triangles within margin + this x A's bounding radius [m]."""

_FAR_FROM_CORNERS = 0.5774
"""No point of a triangle is farther than this x its longest edge from all its corners (1/sqrt(3): the centre of
an equilateral one)."""

_INTERIOR = 0.01
"""A refined edge point is a new contact only this far [fraction of the edge] from both ends."""

_INV_PHI = 0.6180339887498949
"""1 / golden ratio."""


@njit_kernel(inline="always")
def mesh_grid(meshes, m):
    """The field layout tuple of mesh m that ``sdf_eval`` reads."""
    o = meshes.mesh_sdf_origin
    d = meshes.mesh_sdf_dims
    return (np.int64(meshes.mesh_sdf_start[m]), o[m, 0], o[m, 1], o[m, 2], meshes.mesh_sdf_cell[m],
            np.int64(d[m, 0]), np.int64(d[m, 1]), np.int64(d[m, 2]), meshes.mesh_sdf_band[m])  # fmt: skip


@njit_kernel(inline="always")
def relative_frame(Ra, pa, Rb, pb):
    """The map from B's frame to A's, ``x_A = M y + t`` with ``M = R_A^T R_B`` and ``t = R_A^T (c_B - c_A)``
    (erratum E13), as ``(columns of M, t)``."""
    cols = (rotate_t3(Ra, column3(Rb, 0)), rotate_t3(Ra, column3(Rb, 1)), rotate_t3(Ra, column3(Rb, 2)))
    return cols, rotate_t3(Ra, sub3(vec3(pb), vec3(pa)))


@njit_kernel(inline="always")
def apply_frame(frame, y):
    """``M y + t`` for ``frame = (columns of M, t)``."""
    cols, t = frame
    return axpy3(y[2], cols[2], axpy3(y[1], cols[1], axpy3(y[0], cols[0], t)))


@njit_kernel(inline="always")
def _world(R, p, x):
    """``p + R x`` [m]."""
    return add3(vec3(p), rotate3(R, x))


@njit_kernel(inline="always")
def field_view(meshes, m):
    """What ``field_distance`` reads of active mesh m: its field (values, layout) and triangles with their BVH.

    A tuple of the dozen arrays needed rather than the whole ``MeshArrays``: every array of a tuple argument
    adds to each function's compile time."""
    return (meshes.mesh_sdf_values, mesh_grid(meshes, m), meshes.mesh_node_lower, meshes.mesh_node_upper,
            meshes.mesh_node_right, meshes.mesh_node_first, meshes.mesh_node_count, meshes.mesh_leaf_tris,
            meshes.mesh_verts, meshes.mesh_tris, meshes.mesh_tri_normal, meshes.mesh_node_start[m])  # fmt: skip


@njit_kernel
def field_distance(view, x, reach, stack):
    """Signed distance [m] of the shape-frame point x to an active mesh (``view = field_view(meshes, m)``) and
    its unit gradient: ``(phi, g)``.

    The field (``sdf_eval``) decides far from the surface; within ``reach`` [m] plus a cell of it, where contacts
    are made, the distance and direction are made exact by the nearest triangle (``bvh_nearest_triangle``): the
    trilinear gradient turns by tens of degrees within a cell of edges and thin parts. The field's sign is kept
    where it is at least a cell from zero; nearer, the point's own winding number decides (``winding_number_at``,
    the rule the grid was signed with: right for overlapping parts and parts thinner than a cell, where the
    nearest face's side is not). A point outside with no triangle within ``reach`` plus two cells gets that
    distance: it is at least that far (the field outside its grid is only a lower bound).
    """
    values, grid, lower, upper, right, first, count, leaf, verts, tris, tri_normal, root = view
    phi, g = sdf_eval(values, grid, x)
    cell = grid[4]
    if phi > reach + cell:
        return phi, g
    # Outside the grid phi is only a lower bound (a point above a torus's hole is far from every triangle but
    # near the grid's box): search out to the reach, and with no triangle there the point is beyond it.
    radius = max(abs(phi), reach) + 2.0 * cell
    t, q, feature, d = bvh_nearest_triangle(lower, upper, right, first, count, leaf, verts, tris, tri_normal, root, x,
                                            radius, stack)  # fmt: skip
    if t < 0:
        return (radius, g) if phi >= 0.0 else (phi, g)
    v = sub3(x, q)
    if d <= 1.0e-12 * cell:
        return 0.0, (tri_normal[t, 0], tri_normal[t, 1], tri_normal[t, 2])
    inside = phi < 0.0
    if abs(phi) < cell:  # too near the surface for the interpolated sign: count the crossings
        inside = winding_number_at(lower, upper, right, first, count, leaf, verts, tris, root, x, stack) > 0
    return (-d, scale3(v, -1.0 / d)) if inside else (d, scale3(v, 1.0 / d))


# ---------------------------------------------------------------------------------------------------------------
# Minimising the field along an edge and over a triangle
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel(inline="always")
def edge_minimum(values, grid, p0, p1):
    """Golden-section minimum of the field along the segment p0 -> p1 (A's frame): ``(t, phi, gradient)``."""
    d = sub3(p1, p0)
    a, b = 0.0, 1.0
    c = b - _INV_PHI * (b - a)
    e = a + _INV_PHI * (b - a)
    fc = sdf_eval(values, grid, axpy3(c, d, p0))[0]
    fe = sdf_eval(values, grid, axpy3(e, d, p0))[0]
    for _ in range(GOLDEN_STEPS):
        if fc < fe:
            b, e, fe = e, c, fc
            c = b - _INV_PHI * (b - a)
            fc = sdf_eval(values, grid, axpy3(c, d, p0))[0]
        else:
            a, c, fc = c, e, fe
            e = a + _INV_PHI * (b - a)
            fe = sdf_eval(values, grid, axpy3(e, d, p0))[0]
    t = 0.5 * (a + b)
    phi, g = sdf_eval(values, grid, axpy3(t, d, p0))
    return t, phi, g


@njit_kernel(inline="always")
def project_simplex(u0, u1, u2):
    """Euclidean projection of (u0, u1, u2) onto the simplex ``w >= 0, sum w = 1`` (sort and threshold)."""
    a, b, c = u0, u1, u2
    if a < b:
        a, b = b, a
    if b < c:
        b, c = c, b
    if a < b:
        a, b = b, a
    theta = a - 1.0
    if b - (a + b - 1.0) / 2.0 > 0.0:
        theta = (a + b - 1.0) / 2.0
    if c - (a + b + c - 1.0) / 3.0 > 0.0:
        theta = (a + b + c - 1.0) / 3.0
    return max(u0 - theta, 0.0), max(u1 - theta, 0.0), max(u2 - theta, 0.0)


@njit_kernel(inline="always")
def triangle_minimum(values, grid, a, b, c):
    """Minimum of the field over the triangle (a, b, c) (A's frame), seed §2.3.2 face-based refinement:
    ``(w, phi, gradient)`` with the barycentric weights w.

    Projected gradient descent on w from the centroid: ``d_i = grad s . x_i`` (minus its mean, the simplex
    tangent), ``w <- ProjSimplex(w - alpha d)`` (erratum E16), the step scaled to move a quarter of the longest
    edge and halved whenever it does not lower the field.
    """
    size = max(norm3(sub3(b, a)), norm3(sub3(c, b)), norm3(sub3(a, c)))
    w = (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)
    x = axpy3(w[2], c, axpy3(w[1], b, scale3(a, w[0])))
    phi, g = sdf_eval(values, grid, x)
    step = 0.25 * size
    for _ in range(DESCENT_STEPS):
        da, db, dc = dot3(g, a), dot3(g, b), dot3(g, c)
        mean = (da + db + dc) / 3.0
        da, db, dc = da - mean, db - mean, dc - mean
        move = axpy3(dc, c, axpy3(db, b, scale3(a, da)))
        length = norm3(move)
        if not length > 1.0e-12 * size:
            break
        alpha = step / length
        w_new = project_simplex(w[0] - alpha * da, w[1] - alpha * db, w[2] - alpha * dc)
        x_new = axpy3(w_new[2], c, axpy3(w_new[1], b, scale3(a, w_new[0])))
        phi_new, g_new = sdf_eval(values, grid, x_new)
        if phi_new < phi:
            w, phi, g = w_new, phi_new, g_new
        else:
            step *= 0.5
    return w, phi, g


# ---------------------------------------------------------------------------------------------------------------
# A's samples against B
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def samples_vs_shape(samples, first, last, pa, Ra, kind, size, hulls, hull, view, pb, Rb, direction, local, stack,
                     C):  # fmt: skip
    """A's samples ``samples[first:last]`` (A posed at pa, Ra) against B's signed distance ``phi_B``: a plane or
    convex shape's closed form (``shape_distance``), or for ``kind == MESH`` the distance to the active mesh of
    ``view`` (``field_distance``) posed at (pb, Rb); one candidate per sample within the margin (module
    docstring, item 1).

    The normal is ``direction`` (+1 or -1) times A -> B: -1 when the roles are swapped (B's samples against the
    field of the pair's first mesh); ``local`` tells the two apart in the feature ids."""
    margin = C.settings[0]
    to_b = relative_frame(Rb, pb, Ra, pa)  # A's frame -> B's frame
    reach = bounding_radius(kind, size) + margin
    for s in range(first, last):
        x = (samples[s, 0], samples[s, 1], samples[s, 2])
        y = apply_frame(to_b, x)
        if kind == PLANE:
            phi, g = y[2], (0.0, 0.0, 1.0)
        elif kind == MESH:
            phi, g = field_distance(view, y, margin, stack)
        elif dot3(y, y) > reach * reach:
            continue
        else:
            phi, g = shape_distance(kind, size, hulls, hull, y)
        if phi <= margin:
            n = scale3(rotate3(Rb, g), -1.0)
            source = np.int64(s - first)
            push_candidate(C, source, axpy3(0.5 * phi, n, _world(Ra, pa, x)), scale3(n, direction), phi,
                           feature_id(source, local))  # fmt: skip


@njit_kernel
def samples_vs_passive(meshes, ma, pa, Ra, mb, pb, Rb, scale, stack, C):
    """A's samples against passive mesh mb's nearest triangle within reach (module docstring, item 1)."""
    margin = C.settings[0]
    to_b = relative_frame(Rb, pb, Ra, pa)
    reach = margin + SAMPLE_REACH * scale
    root = meshes.mesh_node_start[mb]
    closed = meshes.mesh_closed[mb] == 1
    lower, upper = meshes.mesh_node_lower, meshes.mesh_node_upper
    samples = meshes.mesh_samples
    first = meshes.mesh_sample_start[ma]
    centre = vec3(pa)
    for s in range(first, meshes.mesh_sample_start[ma + 1]):
        x = (samples[s, 0], samples[s, 1], samples[s, 2])
        y = apply_frame(to_b, x)
        outside = False
        for k in range(3):
            outside |= y[k] < lower[root, k] - reach or y[k] > upper[root, k] + reach
        if outside:
            continue
        t, q, feature, dist = bvh_nearest_triangle(lower, upper, meshes.mesh_node_right, meshes.mesh_node_first,
                                                   meshes.mesh_node_count, meshes.mesh_leaf_tris, meshes.mesh_verts,
                                                   meshes.mesh_tris, meshes.mesh_tri_normal, root, y, reach,
                                                   stack)  # fmt: skip
        if t < 0:
            continue
        use, corners, normal, n_front, neighbours, vids = triangle_frame(
            meshes.mesh_verts, meshes.mesh_tris, meshes.mesh_tri_normal, meshes.mesh_tri_edge_normal, closed,
            np.int64(t), pb, Rb, centre,
        )  # fmt: skip
        if not use:
            continue
        xw = _world(Ra, pa, x)
        d = sub3(xw, _world(Rb, pb, q))
        n = scale3(d, 1.0 / dist) if dist > 1.0e-12 * scale else n_front
        if dot3(n, n_front) < 0.0:
            n = scale3(n, -1.0)  # x behind the surface: B's outward normal still faces the front
        frame = (vids, meshes.mesh_vert_kind, meshes.mesh_verts, meshes.mesh_ring_start, meshes.mesh_ring, Rb)
        n, _ = restricted_normal(n, feature, corners, normal, n_front, neighbours, frame)
        phi = dot3(n, d)
        if phi <= margin:
            source = np.int64(s - first)
            push_candidate(C, source, axpy3(-0.5 * phi, n, xw), scale3(n, -1.0), phi, feature_id(source, np.int64(0)))


# ---------------------------------------------------------------------------------------------------------------
# B's features against A's field
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel
def _field_point(C, view, Ra, x, y_world, sweep, source, local, stack):
    """B's point (A's frame x, world ``y_world``, radius ``sweep``) against A's distance (``field_distance``): one
    candidate if within the margin. Returns the distance at x."""
    phi, g = field_distance(view, x, C.settings[0] + sweep, stack)
    gap = phi - sweep
    if gap <= C.settings[0]:
        n = rotate3(Ra, g)
        push_candidate(C, source, axpy3(-(sweep + 0.5 * gap), n, y_world), n, gap, feature_id(source, local))
    return phi


@njit_kernel
def features_vs_field(view, pa, Ra, kind, size, pb, Rb, hulls, hull, stack, C):
    """A convex shape's corner points and edge minima against A's field (module docstring, item 2)."""
    margin = C.settings[0]
    values = view[0]
    grid = view[1]
    to_a = relative_frame(Ra, pa, Rb, pb)
    sweep = size[0] if (kind == SPHERE or kind == CAPSULE) else 0.0
    points, edges = feature_counts(kind, hulls, hull)
    for i in range(points):
        y = feature_vertex(kind, size, hulls, hull, i)
        _field_point(C, view, Ra, apply_frame(to_a, y), _world(Rb, pb, y), sweep, np.int64(i), np.int64(1), stack)
    for e in range(edges):
        y0, y1 = feature_edge(kind, size, hulls, hull, e)
        x0, x1 = apply_frame(to_a, y0), apply_frame(to_a, y1)
        f0 = sdf_eval(values, grid, x0)[0]
        f1 = sdf_eval(values, grid, x1)[0]
        if min(f0, f1) - 0.5 * norm3(sub3(x1, x0)) - sweep > margin:
            continue
        t, phi, g = edge_minimum(values, grid, x0, x1)
        if _INTERIOR < t < 1.0 - _INTERIOR and phi < min(f0, f1):
            y = axpy3(t, sub3(y1, y0), y0)
            _field_point(C, view, Ra, apply_frame(to_a, y), _world(Rb, pb, y), sweep, np.int64(e), np.int64(2),
                         stack)  # fmt: skip


@njit_kernel
def passive_vs_field(meshes, ma, pa, Ra, mb, pb, Rb, stamp, S):
    """Passive mesh mb's vertices (each once: ``S.vertex_stamp == stamp``) and per-triangle field minima near A
    against A's field."""
    C = S.cand
    stack = S.stack
    triangles = S.triangles
    margin = C.settings[0]
    view = field_view(meshes, ma)
    values = view[0]
    grid = view[1]
    to_a = relative_frame(Ra, pa, Rb, pb)
    to_b = relative_frame(Rb, pb, Ra, pa)
    # A's box (its BVH root) in B's frame, grown by the margin
    root_a = meshes.mesh_node_start[ma]
    lo_a = vec3(meshes.mesh_node_lower[root_a])
    hi_a = vec3(meshes.mesh_node_upper[root_a])
    centre = apply_frame(to_b, scale3(add3(lo_a, hi_a), 0.5))
    half = scale3(sub3(hi_a, lo_a), 0.5)
    cols = to_b[0]
    ext = (
        abs(cols[0][0]) * half[0] + abs(cols[1][0]) * half[1] + abs(cols[2][0]) * half[2] + margin,
        abs(cols[0][1]) * half[0] + abs(cols[1][1]) * half[1] + abs(cols[2][1]) * half[2] + margin,
        abs(cols[0][2]) * half[0] + abs(cols[1][2]) * half[1] + abs(cols[2][2]) * half[2] + margin,
    )
    lo, hi = sub3(centre, ext), add3(centre, ext)
    verts = meshes.mesh_verts
    tris = meshes.mesh_tris
    closed = meshes.mesh_closed[mb] == 1
    v_first = meshes.mesh_vert_start[mb]
    stack[0] = meshes.mesh_node_start[mb]
    top = np.int64(1)
    while top > 0:
        count, top = bvh_query_box(meshes.mesh_node_lower, meshes.mesh_node_upper, meshes.mesh_node_right,
                                   meshes.mesh_node_first, meshes.mesh_node_count, meshes.mesh_leaf_tris, stack,
                                   top, lo, hi, triangles)  # fmt: skip
        for i in range(count):
            t = np.int64(triangles[i])
            use, corners, _, _, _, _ = triangle_frame(verts, tris, meshes.mesh_tri_normal, meshes.mesh_tri_edge_normal,
                                                      closed, t, pb, Rb, vec3(pa))  # fmt: skip
            if not use:
                continue
            x = (
                apply_frame(to_a, vec3(verts[tris[t, 0]])),
                apply_frame(to_a, vec3(verts[tris[t, 1]])),
                apply_frame(to_a, vec3(verts[tris[t, 2]])),
            )
            least = math.inf
            for k in range(3):
                v = tris[t, k]
                if S.vertex_stamp[v] != stamp:
                    S.vertex_stamp[v] = stamp
                    S.vertex_phi[v] = _field_point(C, view, Ra, x[k], corners[k], 0.0, np.int64(v - v_first),
                                                   np.int64(3), S.query_stack)  # fmt: skip
                least = min(least, S.vertex_phi[v])
            size = max(norm3(sub3(x[1], x[0])), norm3(sub3(x[2], x[1])), norm3(sub3(x[0], x[2])))
            if least - _FAR_FROM_CORNERS * size > margin:
                continue  # 1-Lipschitz: no point of the triangle comes within the margin
            centre = scale3(add3(add3(x[0], x[1]), x[2]), 1.0 / 3.0)
            reach = max(norm3(sub3(x[0], centre)), norm3(sub3(x[1], centre)), norm3(sub3(x[2], centre)))
            if sdf_eval(values, grid, centre)[0] - reach > margin:
                continue  # the same bound from the centre
            w, phi, g = triangle_minimum(values, grid, x[0], x[1], x[2])
            if phi < least and min(w[0], w[1], w[2]) > 0.0:
                y = axpy3(w[2], corners[2], axpy3(w[1], corners[1], scale3(corners[0], w[0])))
                xa = axpy3(w[2], x[2], axpy3(w[1], x[1], scale3(x[0], w[0])))
                _field_point(C, view, Ra, xa, y, 0.0, t, np.int64(4), S.query_stack)


# ---------------------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------------------


@njit_kernel(inline="always")
def collide_active_mesh(meshes, ma, pa, Ra, scale_a, kind, params, pb, Rb, hull, hulls, mb, margin, pair_index, sgn,
                        S, out):  # fmt: skip
    """Active mesh ``ma`` (origin ``pa``, rotation ``Ra``, bounding radius ``scale_a`` [m]) vs shape B (``kind``,
    ``params``, pose ``pb``, ``Rb``; ``hull`` into ``hulls`` for a hull, mesh index ``mb`` for a mesh, else -1);
    normal A -> B times ``sgn``. ``S`` is the :class:`~.mesh_manifold.MeshScratch`."""
    C = S.cand
    size = (float(params[0]), float(params[1]), float(params[2]))
    begin_candidates(C, margin, scale_a)
    samples = meshes.mesh_samples
    first = np.int64(meshes.mesh_sample_start[ma])
    last = np.int64(meshes.mesh_sample_start[ma + 1])
    if kind == MESH and meshes.mesh_sdf_dims[mb, 0] == 0:
        samples_vs_passive(meshes, ma, pa, Ra, mb, pb, Rb, max(scale_a, 1.0e-9), S.stack, C)
        passive_vs_field(meshes, ma, pa, Ra, mb, pb, Rb, np.int64(pair_index + 1), S)
    else:
        samples_vs_shape(samples, first, last, pa, Ra, kind, size, hulls, hull, field_view(meshes, max(mb, 0)), pb,
                         Rb, 1.0, np.int64(0), S.stack, C)  # fmt: skip
        if kind == MESH:  # another active mesh: its samples against A's field too
            first_b = np.int64(meshes.mesh_sample_start[mb])
            last_b = np.int64(meshes.mesh_sample_start[mb + 1])
            samples_vs_shape(samples, first_b, last_b, pb, Rb, kind, size, hulls, hull, field_view(meshes, ma), pa,
                             Ra, -1.0, np.int64(5), S.stack, C)  # fmt: skip
        elif kind != PLANE:
            features_vs_field(field_view(meshes, ma), pa, Ra, kind, size, pb, Rb, hulls, hull, S.query_stack, C)
    emit_mesh_manifold(out, pair_index, sgn, C)
