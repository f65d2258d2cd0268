"""Which bodies start inside each other, and how deep (numpy only: no bpy, no Numba, nothing simulated).

Used by :mod:`.validate`. Two bodies that start overlapping are pushed apart by the contact solver (the rigid
engine removes ``erp`` = 20 % of the depth beyond the 0.5 mm slop per substep), so a few centimetres of overlap
throw them apart at metres per second; the IPC engine refuses such a start outright.

Shapes are :class:`Solid` s in world space [m]. The test runs in three stages:

1. **Broad phase**: sort and sweep over the solids' axis-aligned boxes (:func:`candidate_pairs`), O(n log n) plus
   the pairs it returns; planes are infinite and skip it.
2. **OBB separating axes** (:func:`obb_depth`, 15 axes, vectorised over the pairs): every solid lies in its
   oriented box, so a pair whose boxes overlap by no more than the tolerance is dropped (shapes inside boxes can
   only overlap less). For two boxes the result is already the exact depth.
3. **Exact enough** for the pairs left: sphere–sphere, sphere–box and anything–plane in closed form; every other
   pair by the sample points of each solid that lie inside the other (generalized winding number over the other's
   triangles), the depth being the largest distance of such a point to the other's surface. Round shapes are
   tessellated with their vertices *on* the true surface (an inscribed polytope), so this stage can under-estimate
   an overlap by the tessellation's sag (below 2 % of a radius) but never reports one that is not there. An overlap
   where only edges cross and no sample point lies inside the other solid is missed.

Depths are penetration depths: the shortest distance one body must move for the two to separate (a lower bound
in stage 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ROUND_SEGMENTS = 16
"""Segments around a tessellated circle: the sag is ``1 - cos(π/16)`` = 1.9 % of the radius."""

BOX_SAMPLES = 5
"""Sample points per box edge (a 5 × 5 grid on each face): a box corner is not the only point that can poke in."""

WINDING_BUDGET = 100_000
"""Point–triangle pairs per chunk of the winding-number and distance sums (keeps the temporaries near 30 MB)."""

MAX_QUERY_POINTS = 4096
"""Sample points of one solid tested against another at most (evenly strided beyond this)."""

KINDS = frozenset({"BOX", "SPHERE", "CAPSULE", "CYLINDER", "CONE", "HULL", "MESH", "PLANE"})
"""Solid kinds: HULL and MESH carry their own (world) triangles; PLANE is the half-space below its local XY."""


@dataclass
class Solid:
    """One collision shape in world space [m], enclosed by an oriented box."""

    owner: int
    """Index of the body it belongs to; solids of one body are never tested against each other."""
    kind: str
    """One of :data:`KINDS`."""
    centre: np.ndarray
    """Centre of the oriented box (for a plane: a point on it) [m], (3,)."""
    rotation: np.ndarray
    """Columns: the box's (the shape's) local axes in world space, (3, 3); a plane's normal is column 2."""
    half_extents: np.ndarray
    """Half sizes of the oriented box along its axes [m], (3,); it encloses the shape."""
    radius: float = 0.0
    """SPHERE, CAPSULE, CYLINDER, CONE: radius [m]."""
    half_height: float = 0.0
    """CAPSULE: half length of its core segment; CYLINDER, CONE: half height (a cone's tip at +Z) [m]."""
    vertices: np.ndarray | None = None
    """HULL, MESH: surface vertices in world space [m], (V, 3); filled by :func:`surface` for the others."""
    triangles: np.ndarray | None = None
    """HULL, MESH: triangles (T, 3) int; counter-clockwise seen from outside."""
    samples: np.ndarray | None = field(default=None, repr=False)
    """Points on the surface tested against other solids [m], (S, 3); filled by :func:`surface`."""


# broad phase ----------------------------------------------------------------------------------------


def stacked(solids: list[Solid]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(centres (N, 3), rotations (N, 3, 3), half extents (N, 3))`` of the solids' oriented boxes."""
    return (
        np.array([s.centre for s in solids], dtype=np.float64).reshape(-1, 3),
        np.array([s.rotation for s in solids], dtype=np.float64).reshape(-1, 3, 3),
        np.array([s.half_extents for s in solids], dtype=np.float64).reshape(-1, 3),
    )


def bounds(centres: np.ndarray, rotations: np.ndarray, half_extents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners of the axis-aligned boxes around oriented boxes [m], (N, 3) each."""
    reach = np.einsum("nij,nj->ni", np.abs(rotations), half_extents)
    return centres - reach, centres + reach


def candidate_pairs(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Pairs of overlapping axis-aligned boxes by sort and sweep.

    Args:
        lower, upper: box corners, (N, 3) each.

    Returns:
        ``(P, 2)`` int64 pairs ``i < j`` whose boxes overlap (touching counts), sorted.
    """
    lower = np.asarray(lower, dtype=np.float64).reshape(-1, 3)
    upper = np.asarray(upper, dtype=np.float64).reshape(-1, 3)
    n = lower.shape[0]
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    axis = int(np.argmax(np.var(0.5 * (lower + upper), axis=0)))  # the spread-out axis: fewest false pairs
    order = np.argsort(lower[:, axis], kind="stable")
    lo, hi = lower[order, axis], upper[order, axis]
    # sorted by lower end: box k overlaps, along the axis, exactly the boxes after it that start before its end
    end = np.searchsorted(lo, hi, side="right")
    count = np.maximum(end - np.arange(n) - 1, 0)
    first = np.repeat(np.arange(n), count)
    offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    second = first + 1 + offset
    i, j = order[first], order[second]
    keep = np.all((lower[i] <= upper[j]) & (lower[j] <= upper[i]), axis=1)
    pairs = np.sort(np.stack([i[keep], j[keep]], axis=1), axis=1)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


# oriented boxes ------------------------------------------------------------------------------------


def obb_depth(centre_a, rotation_a, half_a, centre_b, rotation_b, half_b) -> np.ndarray:
    """Penetration depth of pairs of oriented boxes by the 15 separating axes [m]; negative: separated by that much
    along the best axis (a lower bound of their distance).

    Args:
        centre_a, centre_b: (P, 3). rotation_a, rotation_b: (P, 3, 3), columns = box axes. half_a, half_b: (P, 3).

    Returns:
        (P,): the smallest overlap of the two boxes' projections over the face normals of both and the cross
        products of their edges (exact for boxes: separating-axis theorem).
    """
    ra, rb = np.asarray(rotation_a, np.float64), np.asarray(rotation_b, np.float64)
    d = np.asarray(centre_b, np.float64) - np.asarray(centre_a, np.float64)
    axes_a, axes_b = np.swapaxes(ra, 1, 2), np.swapaxes(rb, 1, 2)  # (P, 3 axes, 3)
    cross = np.cross(axes_a[:, :, None, :], axes_b[:, None, :, :]).reshape(-1, 9, 3)
    axes = np.concatenate([axes_a, axes_b, cross], axis=1)  # (P, 15, 3)
    length = np.linalg.norm(axes, axis=2)
    valid = length > 1e-9  # parallel edges give no axis
    axes = axes / np.where(valid, length, 1.0)[..., None]
    reach_a = np.abs(np.einsum("pkc,pci->pki", axes, ra)) @ np.asarray(half_a, np.float64)[..., None]
    reach_b = np.abs(np.einsum("pkc,pci->pki", axes, rb)) @ np.asarray(half_b, np.float64)[..., None]
    overlap = reach_a[..., 0] + reach_b[..., 0] - np.abs(np.einsum("pkc,pc->pk", axes, d))
    return np.where(valid, overlap, np.inf).min(axis=1)


# tessellation ---------------------------------------------------------------------------------------


def _ring(radius: float, z: float) -> np.ndarray:
    angle = np.linspace(0.0, 2.0 * np.pi, ROUND_SEGMENTS, endpoint=False)
    return np.stack([radius * np.cos(angle), radius * np.sin(angle), np.full(ROUND_SEGMENTS, z)], axis=1)


def _stacked_rings(rings: list[np.ndarray], bottom: np.ndarray | None, top: np.ndarray | None):
    """A closed surface of rings of :data:`ROUND_SEGMENTS` vertices from bottom to top, with optional pole
    points; returns ``(vertices, triangles)`` counter-clockwise seen from outside."""
    s = ROUND_SEGMENTS
    vertices = list(rings)
    triangles = []
    k = np.arange(s)
    for r in range(len(rings) - 1):
        a, b = r * s + k, r * s + (k + 1) % s
        c, d = a + s, b + s
        triangles += [np.stack([a, b, d], axis=1), np.stack([a, d, c], axis=1)]
    count = len(rings) * s
    if bottom is not None:
        vertices.append(bottom[None])
        triangles.append(np.stack([np.full(s, count), (k + 1) % s, k], axis=1))
        count += 1
    if top is not None:
        vertices.append(top[None])
        last = (len(rings) - 1) * s
        triangles.append(np.stack([np.full(s, count), last + k, last + (k + 1) % s], axis=1))
    return np.concatenate(vertices), np.concatenate(triangles).astype(np.int64)


def _local_surface(solid: Solid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(vertices, triangles, samples)`` of a primitive in its own frame [m]."""
    kind, r, hh = solid.kind, solid.radius, solid.half_height
    if kind == "BOX":
        h = solid.half_extents
        corners = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)], np.float64) * h
        quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
        triangles = np.array([(a, b, c) for a, b, c, _ in quads] + [(a, c, d) for a, _, c, d in quads], np.int64)
        grid = np.linspace(-1.0, 1.0, BOX_SAMPLES)
        cube = np.stack(np.meshgrid(grid, grid, grid, indexing="ij"), axis=-1).reshape(-1, 3)
        samples = cube[np.abs(cube).max(axis=1) == 1.0] * h  # the grid points on the box's faces
        return corners, triangles, samples
    if kind == "SPHERE" or kind == "CAPSULE":
        # latitude rings of a sphere, the upper half lifted and the lower half lowered by the capsule's half length
        polar = np.linspace(0.0, np.pi, ROUND_SEGMENTS // 2 + 1)[1:-1]
        rings = []
        for theta in polar[::-1]:  # from the bottom up
            z = r * np.cos(theta)
            shift = hh if z > 0.0 else -hh
            if abs(z) < 1e-12 and hh > 0.0:  # the equator of a capsule: both ends of its cylinder
                rings += [_ring(r, -hh), _ring(r, hh)]
                continue
            rings.append(_ring(r * np.sin(theta), z + shift))
        rings = _cylinder_rings(rings, r, hh) if hh > 0.0 else rings
        vertices, triangles = _stacked_rings(rings, np.array([0.0, 0.0, -r - hh]), np.array([0.0, 0.0, r + hh]))
        return vertices, triangles, vertices
    if kind == "CYLINDER":
        rings = _cylinder_rings([_ring(r, -hh), _ring(r, hh)], r, hh)
        vertices, triangles = _stacked_rings(rings, np.array([0.0, 0.0, -hh]), np.array([0.0, 0.0, hh]))
        return vertices, triangles, vertices
    if kind == "CONE":
        steps = max(2, min(16, int(np.ceil(2.0 * hh / max(0.5 * r, 1e-12))) + 1))
        rings = [_ring(r * (1.0 - t), -hh + 2.0 * hh * t) for t in np.linspace(0.0, 1.0, steps)[:-1]]
        vertices, triangles = _stacked_rings(rings, np.array([0.0, 0.0, -hh]), np.array([0.0, 0.0, hh]))
        return vertices, triangles, vertices
    raise ValueError(f"no tessellation for a {kind} solid")


def _cylinder_rings(rings: list[np.ndarray], r: float, hh: float) -> list[np.ndarray]:
    """Insert rings of radius ``r`` between the ones at ``z = ±hh`` about every half radius (sample density)."""
    steps = max(0, min(16, int(np.ceil(2.0 * hh / max(0.5 * r, 1e-12))) - 1))
    if steps == 0:
        return rings
    z = [float(ring[0, 2]) for ring in rings]
    at = next(k for k in range(len(z) - 1) if abs(z[k] + hh) < 1e-12 and abs(z[k + 1] - hh) < 1e-12)
    middle = [_ring(r, zz) for zz in np.linspace(-hh, hh, steps + 2)[1:-1]]
    return rings[: at + 1] + middle + rings[at + 1 :]


def mesh_samples(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Sample points of a triangle surface: its vertices, edge midpoints and triangle centroids, (S, 3).

    Vertices alone miss two cubes that overlap face to face (every vertex lies on the other's boundary).
    """
    vertices = np.asarray(vertices, np.float64).reshape(-1, 3)
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    if triangles.shape[0] == 0:
        return vertices
    corners = vertices[triangles]  # (T, 3, 3)
    edges = np.unique(np.sort(triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1), axis=0)
    midpoints = 0.5 * (vertices[edges[:, 0]] + vertices[edges[:, 1]])
    return np.concatenate([vertices, midpoints, corners.mean(axis=1)])


def surface(solid: Solid) -> Solid:
    """Fill ``vertices``/``triangles``/``samples`` (world space) of a primitive; HULL/MESH sample their own surface
    (:func:`mesh_samples`)."""
    if solid.samples is not None or solid.kind == "PLANE":
        return solid
    if solid.kind in ("HULL", "MESH"):
        assert solid.vertices is not None and solid.triangles is not None  # a hull or mesh is made with its surface
        solid.samples = mesh_samples(solid.vertices, solid.triangles)
        return solid
    vertices, triangles, samples = _local_surface(solid)
    solid.vertices = vertices @ solid.rotation.T + solid.centre
    solid.triangles = triangles
    solid.samples = samples @ solid.rotation.T + solid.centre
    return solid


# point queries --------------------------------------------------------------------------------------


def winding_numbers(points: np.ndarray, vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Generalized winding number of each point w.r.t. a triangle surface (Jacobson et al. 2013), (Q,).

    1 inside and 0 outside a closed surface facing outwards; fractional near the holes of an open one. Each
    triangle's solid angle by van Oosterom and Strackee: ``tan(Ω/2) = a·(b×c) / (|a||b||c| + (a·b)|c| + (b·c)|a|
    + (c·a)|b|)`` with ``a, b, c`` its corners relative to the point.
    """
    points = np.asarray(points, np.float64).reshape(-1, 3)
    out = np.zeros(points.shape[0])
    if triangles.shape[0] == 0 or points.shape[0] == 0:
        return out
    corners = np.asarray(vertices, np.float64)[np.asarray(triangles)]  # (T, 3, 3)
    step = max(1, WINDING_BUDGET // corners.shape[0])
    for s in range(0, points.shape[0], step):
        rel = corners[None] - points[s : s + step, None, None, :]  # (q, T, 3, 3)
        a, b, c = rel[:, :, 0], rel[:, :, 1], rel[:, :, 2]
        la, lb, lc = (np.linalg.norm(x, axis=2) for x in (a, b, c))
        det = np.einsum("qtk,qtk->qt", a, np.cross(b, c))
        den = (
            la * lb * lc
            + np.einsum("qtk,qtk->qt", a, b) * lc
            + np.einsum("qtk,qtk->qt", b, c) * la
            + np.einsum("qtk,qtk->qt", c, a) * lb
        )
        out[s : s + step] = 2.0 * np.arctan2(det, den).sum(axis=1) / (4.0 * np.pi)
    return out


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance of points ``p`` (q, 1, 3) to segments ``a``–``b`` (1, T, 3), (q, T)."""
    ab = b - a
    t = np.clip(((p - a) * ab).sum(axis=2) / np.maximum((ab * ab).sum(axis=2), 1e-300), 0.0, 1.0)
    return np.linalg.norm(a + t[..., None] * ab - p, axis=2)


def surface_distances(points: np.ndarray, vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Distance of each point to the nearest triangle of a surface [m], (Q,); inf without triangles."""
    points = np.asarray(points, np.float64).reshape(-1, 3)
    out = np.full(points.shape[0], np.inf)
    if triangles.shape[0] == 0 or points.shape[0] == 0:
        return out
    corners = np.asarray(vertices, np.float64)[np.asarray(triangles)]
    a, b, c = corners[None, :, 0], corners[None, :, 1], corners[None, :, 2]  # (1, T, 3)
    normal = np.cross(b - a, c - a)
    area2 = np.linalg.norm(normal, axis=2)
    unit = normal / np.maximum(area2, 1e-300)[..., None]
    step = max(1, WINDING_BUDGET // corners.shape[0])
    for s in range(0, points.shape[0], step):
        p = points[s : s + step, None, :]  # (q, 1, 3)
        height = ((p - a) * unit).sum(axis=2)
        foot = p - height[..., None] * unit
        # the foot lies inside the triangle when it is on the inner side of all three edges
        inside = area2 > 0.0
        for u, v in ((a, b), (b, c), (c, a)):
            inside = inside & ((np.cross(v - u, foot - u) * normal).sum(axis=2) >= 0.0)
        edges = np.minimum(
            np.minimum(_segment_distance(p, a, b), _segment_distance(p, b, c)), _segment_distance(p, c, a)
        )
        out[s : s + step] = np.where(inside, np.abs(height), edges).min(axis=1)
    return out


def _inside_obb(points: np.ndarray, solid: Solid, tolerance: float) -> np.ndarray:
    local = (points - solid.centre) @ solid.rotation
    return np.all(np.abs(local) <= solid.half_extents + tolerance, axis=1)


def points_depth(points: np.ndarray, solid: Solid) -> float:
    """Largest distance to ``solid``'s surface of the ``points`` that lie inside it [m]; 0 when none does."""
    points = np.asarray(points, np.float64).reshape(-1, 3)
    points = points[_inside_obb(points, solid, 0.0)]
    if points.shape[0] > MAX_QUERY_POINTS:
        points = points[:: int(np.ceil(points.shape[0] / MAX_QUERY_POINTS))]
    if points.shape[0] == 0 or solid.vertices is None or solid.triangles is None or solid.triangles.shape[0] == 0:
        return 0.0
    inside = winding_numbers(points, solid.vertices, solid.triangles) > 0.5
    if not inside.any():
        return 0.0
    return float(surface_distances(points[inside], solid.vertices, solid.triangles).max())


# exact-enough pair depths ----------------------------------------------------------------------------


def _support_below(solid: Solid, normal: np.ndarray) -> float:
    """``min over the solid of normal·x`` [m] (exact for every kind)."""
    c, r, hh = solid.centre, solid.radius, solid.half_height
    n = np.asarray(normal, np.float64)
    along = float(n @ solid.rotation[:, 2])  # the normal's component along a round shape's axis
    if solid.kind == "BOX":
        return float(n @ c - np.abs(n @ solid.rotation) @ solid.half_extents)
    if solid.kind == "SPHERE":
        return float(n @ c - r)
    if solid.kind == "CAPSULE":
        return float(n @ c - abs(along) * hh - r)
    if solid.kind == "CYLINDER":
        return float(n @ c - abs(along) * hh - r * np.sqrt(max(0.0, 1.0 - along * along)))
    if solid.kind == "CONE":
        tip = n @ c + along * hh
        base = n @ c - along * hh - r * np.sqrt(max(0.0, 1.0 - along * along))
        return float(min(tip, base))
    assert solid.vertices is not None  # HULL or MESH (a plane is never the solid here), made with its surface
    return float((solid.vertices @ n).min())


def plane_depth(plane: Solid, solid: Solid) -> float:
    """How far ``solid`` reaches below ``plane`` (the half-space under its local XY plane) [m]; ≤ 0: not at all."""
    normal = plane.rotation[:, 2]
    return float(normal @ plane.centre) - _support_below(solid, normal)


def _sphere_box_depth(sphere: Solid, box: Solid) -> float:
    local = (sphere.centre - box.centre) @ box.rotation
    h = box.half_extents
    outside = np.abs(local) - h
    if np.all(outside <= 0.0):  # centre inside the box: leave through the nearest face
        return float(sphere.radius - outside.max())
    return float(sphere.radius - np.linalg.norm(np.maximum(outside, 0.0)))


def pair_depth(a: Solid, b: Solid) -> float:
    """Penetration depth of two solids (neither a plane) [m]: exact for sphere–sphere, sphere–box and box–box,
    else the sample-point lower bound of stage 3 (module docstring); 0 or less when they do not overlap."""
    kinds = (a.kind, b.kind)
    if kinds == ("SPHERE", "SPHERE"):
        return float(a.radius + b.radius - np.linalg.norm(a.centre - b.centre))
    if kinds == ("BOX", "BOX"):
        return float(obb_depth(*(x[None] for x in (a.centre, a.rotation, a.half_extents)),
                               *(x[None] for x in (b.centre, b.rotation, b.half_extents)))[0])  # fmt: skip
    if kinds == ("SPHERE", "BOX"):
        return _sphere_box_depth(a, b)
    if kinds == ("BOX", "SPHERE"):
        return _sphere_box_depth(b, a)
    surface(a)
    surface(b)
    assert a.samples is not None and b.samples is not None  # surface() fills them for every kind but PLANE
    return max(points_depth(a.samples, b), points_depth(b.samples, a))


def overlapping_pairs(solids: list[Solid], *, tolerance: float, movable: np.ndarray | None = None) -> list:
    """Pairs of solids of different bodies that overlap by more than ``tolerance`` [m].

    Args:
        solids: the solids (planes included).
        tolerance: depth [m] up to which an overlap is ignored.
        movable: per solid, whether its body can move (at least one of a pair must); default all.

    Returns:
        ``[(solid index i, solid index j, depth [m])]`` with ``i < j``, deepest first.
    """
    n = len(solids)
    movable = np.ones(n, dtype=bool) if movable is None else np.asarray(movable, dtype=bool)
    owner = np.array([s.owner for s in solids], dtype=np.int64)
    found = []
    planes = [k for k, s in enumerate(solids) if s.kind == "PLANE"]
    finite = np.array([k for k, s in enumerate(solids) if s.kind != "PLANE"], dtype=np.int64)
    for p in planes:
        for k in finite:
            if owner[k] != owner[p] and (movable[k] or movable[p]):
                depth = plane_depth(solids[p], solids[k])
                if depth > tolerance:
                    found.append((min(p, int(k)), max(p, int(k)), depth))
    if finite.size >= 2:
        boxes = stacked([solids[k] for k in finite])
        local = candidate_pairs(*bounds(*boxes))
        pairs = finite[local]
        keep = (owner[pairs[:, 0]] != owner[pairs[:, 1]]) & (movable[pairs[:, 0]] | movable[pairs[:, 1]])
        local, pairs = local[keep], pairs[keep]
        if pairs.shape[0]:
            a, b = ([x[local[:, side]] for x in boxes] for side in (0, 1))
            pairs = pairs[obb_depth(*a, *b) > tolerance]  # shapes inside boxes overlap no more than the boxes
        for i, j in pairs:
            depth = pair_depth(solids[i], solids[j])
            if depth > tolerance:
                found.append((int(i), int(j), depth))
    found.sort(key=lambda item: -item[2])
    return found
