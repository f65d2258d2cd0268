"""Exact intersection / inversion checker against references written differently.

References (pure Python, ``fractions.Fraction``, no code shared with ``core.ipc.intersection``):

- disjoint triangles: separating-axis test over the triangle normals, the nine edge cross products
  and the in-plane edge normals (closed sets: touching is intersecting);
- one shared vertex ``v``: the cones ``v + R+ (A - v)`` and ``v + R+ (B - v)`` meet beyond ``v``,
  decided by clipping the parameter of the segment ``[a1 - v, a2 - v]`` against linear constraints;
- one shared edge: coplanar and ``(w - u) x (a - u) . (w - u) x (b - u) > 0``;
- ``ipctk.has_intersections`` on random pairs of small meshes.
"""

import time
from fractions import Fraction

import numba
import numpy as np
import pytest
import reference_geometry as ref
from contact_lab.core.fem import primitives
from contact_lab.core.ipc import intersection as ix
from contact_lab.core.ipc.intersection import (
    UNCERTAIN,
    check_frame,
    find_surface_intersections,
    inverted_tets,
)

# --------------------------------------------------------------------------------------------
# Exact rational references
# --------------------------------------------------------------------------------------------


def _q(p):
    return tuple(Fraction(float(c)) for c in p)


def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def sat_intersect(A, B):
    """Closed triangles A, B (3 points each) intersect: no separating axis among the candidates."""
    A, B = [_q(p) for p in A], [_q(p) for p in B]
    ea = [_sub(A[(i + 1) % 3], A[i]) for i in range(3)]
    eb = [_sub(B[(i + 1) % 3], B[i]) for i in range(3)]
    na, nb = _cross(ea[0], ea[1]), _cross(eb[0], eb[1])
    axes = [na, nb] + [_cross(x, y) for x in ea for y in eb]
    axes += [_cross(n, e) for n in (na, nb) for e in ea + eb]
    for axis in axes:
        if axis == (0, 0, 0):
            continue
        pa = [_dot(axis, p) for p in A]
        pb = [_dot(axis, p) for p in B]
        if max(pa) < min(pb) or max(pb) < min(pa):
            return False
    return True


def cones_meet(v, a1, a2, b1, b2):
    """Triangles (v, a1, a2) and (v, b1, b2) meet somewhere other than v (their cones at v do)."""
    v, a1, a2, b1, b2 = _q(v), _q(a1), _q(a2), _q(b1), _q(b2)
    u1, u2 = _sub(b1, v), _sub(b2, v)
    n = _cross(u1, u2)
    d0, d1 = _sub(a1, v), _sub(a2, v)  # d(t) = d0 + t (d1 - d0), t in [0, 1]
    dd = _sub(d1, d0)
    lo, hi = Fraction(0), Fraction(1)
    # n . d(t) == 0 (d in the plane of B's cone)
    g0, g1 = _dot(n, d0), _dot(n, dd)
    if g1 == 0:
        if g0 != 0:
            return False
    else:
        lo, hi = max(lo, -g0 / g1), min(hi, -g0 / g1)
    # Cone coordinates of d(t) in (u1, u2) are >= 0: (d x u2) . n >= 0 and (u1 x d) . n >= 0
    for c0, c1 in (
        (_dot(_cross(d0, u2), n), _dot(_cross(dd, u2), n)),
        (_dot(_cross(u1, d0), n), _dot(_cross(u1, dd), n)),
    ):
        if c1 > 0:
            lo = max(lo, -c0 / c1)
        elif c1 < 0:
            hi = min(hi, -c0 / c1)
        elif c0 < 0:
            return False
    return lo <= hi


def hinge_overlaps(u, w, a, b):
    """Triangles (u, w, a), (u, w, b) overlap beyond the shared edge: coplanar, a and b on one side."""
    u, w, a, b = _q(u), _q(w), _q(a), _q(b)
    e = _sub(w, u)
    na, nb = _cross(e, _sub(a, u)), _cross(e, _sub(b, u))
    return _dot(na, _sub(b, u)) == 0 and _dot(na, nb) > 0


def reference_pair(P, ta, tb):
    """Reference decision for one pair of mesh triangles by their number of shared vertices."""
    common = set(ta.tolist()) & set(tb.tolist())
    if len(common) == 0:
        return sat_intersect(P[ta], P[tb])
    if len(common) == 1:
        (v,) = common
        a1, a2 = [x for x in ta.tolist() if x != v]
        b1, b2 = [x for x in tb.tolist() if x != v]
        return cones_meet(P[v], P[a1], P[a2], P[b1], P[b2])
    if len(common) == 2:
        u, w = [x for x in ta.tolist() if x in common]
        (a,) = [x for x in ta.tolist() if x not in common]
        (b,) = [x for x in tb.tolist() if x not in common]
        return hinge_overlaps(P[u], P[w], P[a], P[b])
    return True


def reference_mesh_pairs(P, tris):
    """All intersecting pairs: every pair with overlapping closed AABBs (dense numpy), then the references."""
    lower, upper = P[tris].min(axis=1), P[tris].max(axis=1)
    overlap = np.all((lower[:, None, :] <= upper[None, :, :]) & (lower[None, :, :] <= upper[:, None, :]), axis=2)
    candidates = zip(*np.nonzero(np.triu(overlap, 1)), strict=True)
    return {(int(i), int(j)) for i, j in candidates if reference_pair(P, tris[i], tris[j])}


def pair_set(pairs):
    return {tuple(p) for p in pairs.tolist()}


# --------------------------------------------------------------------------------------------
# Meshes
# --------------------------------------------------------------------------------------------


def icosphere(level, radius=1.0):
    """Closed icosphere surface (the core's primitive): vertices (V, 3), outward triangles (T, 3) int64."""
    vertices, faces = primitives.icosphere(radius, level)
    return vertices, faces.astype(np.int64)


def cube_surface(n, half=1.0):
    """Closed cube surface with an n x n grid per face (exact axis-aligned coordinates)."""
    g = np.linspace(-half, half, n + 1)
    index, V, F = {}, [], []

    def vid(p):
        key = tuple(p)
        if key not in index:
            index[key] = len(V)
            V.append(key)
        return index[key]

    for axis in range(3):
        for side in (-half, half):
            u, w = (axis + 1) % 3, (axis + 2) % 3
            for i in range(n):
                for j in range(n):
                    quad = []
                    for di, dj in ((0, 0), (1, 0), (1, 1), (0, 1)):
                        p = [0.0, 0.0, 0.0]
                        p[axis], p[u], p[w] = side, g[i + di], g[j + dj]
                        quad.append(vid(p))
                    a, b, c, d = quad if side > 0 else quad[::-1]
                    F += [[a, b, c], [a, c, d]]
    return np.array(V, float), np.array(F, np.int64)


# --------------------------------------------------------------------------------------------
# Hand cases
# --------------------------------------------------------------------------------------------

TWO = np.array([[0, 1, 2], [3, 4, 5]], np.int64)


def test_crossing_and_separated_triangles():
    """Report two crossing triangles and not the same pair lifted apart."""
    P = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, -1], [0.3, 0.2, 1], [0.2, 0.4, 1]], float)
    assert pair_set(find_surface_intersections(P, TWO)) == {(0, 1)}
    P[3:, 2] += 1.5
    assert find_surface_intersections(P, TWO).shape == (0, 2)


@pytest.mark.parametrize(
    "touch, expected",
    [
        ((0.25, 0.25, 0.0), True),  # vertex exactly on the face interior
        ((0.5, 0.0, 0.0), True),  # on an edge
        ((1.0, 0.0, 0.0), True),  # coincident with a vertex (different index)
        ((0.25, 0.25, 2.0**-60), False),  # just above the face
        ((0.75, 0.75, 0.0), False),  # in the plane, outside the triangle
    ],
)
def test_vertex_touching_counts_as_intersection(touch, expected):
    """Count a vertex exactly touching another triangle (not sharing it) as an intersection."""
    P = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], touch, [0.3, 0.2, 1], [0.2, 0.4, 1]], float)
    P[4:] += np.array(touch) * [1, 1, 0]
    assert (find_surface_intersections(P, TWO).shape[0] == 1) == expected
    assert sat_intersect(P[:3], P[3:]) == expected


@pytest.mark.parametrize(
    "b, expected",
    [
        ((0.5, -1.0, 0.0), False),  # flat hinge
        ((0.5, -1.0, 0.7), False),  # convex hinge
        ((0.5, 1.0, 1e-12), False),  # folded almost flat, not quite
        ((0.5, 1.0, 0.0), True),  # folded flat onto the neighbour
        ((0.2, 0.3, 0.0), True),  # folded flat, smaller
    ],
)
def test_shared_edge_hinge(b, expected):
    """Flag a shared-edge pair only when folded flat onto itself (coplanar, same side)."""
    P = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 0], b], float)
    tris = np.array([[0, 1, 2], [1, 0, 3]], np.int64)
    assert (find_surface_intersections(P, tris).shape[0] == 1) == expected
    assert reference_pair(P, tris[0], tris[1]) == expected


@pytest.mark.parametrize(
    "b1, b2, expected",
    [
        ((-1.0, 0.5, 0.3), (-1.0, -0.5, 0.3), False),  # other side of the shared vertex
        ((1.0, 0.3, 0.5), (1.0, 0.5, 0.8), False),  # above the neighbour
        ((1.0, 0.3, 0.5), (1.0, 0.5, -0.5), True),  # folded through: the far edge pierces
        ((0.6, 0.1, 0.0), (0.6, 0.3, 0.0), True),  # folded flat onto the neighbour
        ((2.0, 0.0, 0.0), (1.0, 0.0, 1.0), True),  # overlaps along the common edge line
    ],
)
def test_shared_vertex_fold(b1, b2, expected):
    """Flag a shared-vertex pair only when it overlaps beyond the vertex."""
    P = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], b1, b2], float)
    tris = np.array([[0, 1, 2], [0, 3, 4]], np.int64)
    assert (find_surface_intersections(P, tris).shape[0] == 1) == expected
    assert reference_pair(P, tris[0], tris[1]) == expected


@pytest.mark.parametrize(
    "second, expected",
    [
        ([[0.3, 0.1, 0], [0.8, 0.1, 0], [0.3, 0.6, 0]], True),  # overlapping
        ([[0.1, 0.1, 0], [0.3, 0.1, 0], [0.1, 0.3, 0]], True),  # strictly inside
        ([[-1, -1, 0], [3, -1, 0], [-1, 3, 0]], True),  # containing
        ([[0.5, 0.5, 0], [1, 0.5, 0], [0.5, 1, 0]], True),  # vertex on the hypotenuse
        ([[0.5000001, 0.5, 0], [1, 0.5, 0], [0.5000001, 1, 0]], False),  # just beyond it
        ([[2, 0, 0], [3, 0, 0], [2, 1, 0]], False),  # apart
    ],
)
def test_coplanar_overlap(second, expected):
    """Treat coplanar overlap (including containment and edge contact) as intersection."""
    P = np.vstack([[[0, 0, 0], [1, 0, 0], [0, 1, 0]], second]).astype(float)
    assert (find_surface_intersections(P, TWO).shape[0] == 1) == expected
    assert sat_intersect(P[:3], P[3:]) == expected


@pytest.mark.parametrize("shape", ["icosphere", "cube", "rotated_cube"])
def test_closed_surface_is_clean_until_a_vertex_is_pushed_through(shape):
    """Find nothing on a closed surface and find the spike after pushing a vertex through the far side."""
    if shape == "icosphere":
        P, tris = icosphere(2)
    else:
        P, tris = cube_surface(4)
        if shape == "rotated_cube":
            P = P @ ref.random_rotation(np.random.default_rng(3)).T + 0.1
    assert find_surface_intersections(P, tris).shape == (0, 2)
    moved = int(np.argmax(P[:, 0]))
    Q = P.copy()
    Q[moved] = P[moved] - 2.3 * (P[moved] - P.mean(axis=0))  # through the opposite side
    pairs = find_surface_intersections(Q, tris, max_pairs=10_000)
    assert pairs.shape[0] > 0
    assert pair_set(pairs) == reference_mesh_pairs(Q, tris)
    incident = set(np.flatnonzero((tris == moved).any(axis=1)).tolist())
    assert all(i in incident or j in incident for i, j in pairs.tolist())


# --------------------------------------------------------------------------------------------
# Exactness
# --------------------------------------------------------------------------------------------


def test_exact_zero_on_a_tilted_plane_is_decided_exactly():
    """Decide a point exactly on a tilted plane (filter inconclusive) and its one-ulp neighbours."""
    e = np.empty(ix.EXPANSION_CAPACITY)
    d = (0.375, 0.625, 0.5 * 0.375 + 0.25 * 0.625)  # on z = x/2 + y/4, all exactly representable
    P = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.0, 1.0, 0.25], d])
    assert ix._o3_filter(P, 0, 1, 2, 3) == UNCERTAIN
    assert ix._o3(P, 0, 1, 2, 3, e) == 0
    for direction, sign in ((np.inf, 1), (-np.inf, -1)):
        Q = P.copy()
        Q[3, 2] = np.nextafter(d[2], direction)
        assert ix._o3(Q, 0, 1, 2, 3, e) == sign == ix._RationalPoints(Q).o3(0, 1, 2, 3)
    # A triangle resting on that plane with one vertex touches (exactly) or misses by one ulp.
    tri = np.array([[0, 1, 2], [3, 4, 5]], np.int64)
    S = np.vstack([P, [[0.9, 0.6, 2.0], [0.5, 0.95, 2.0]]])
    assert find_surface_intersections(S, tri).shape[0] == 1
    S[3, 2] = np.nextafter(d[2], np.inf)
    assert find_surface_intersections(S, tri).shape[0] == 0


def test_predicates_match_rationals_on_near_degenerate_inputs():
    """Match Fraction signs for nearly coplanar (1e-17) and far-from-origin inputs where floats fail."""
    rng = np.random.default_rng(7)
    e = np.empty(ix.EXPANSION_CAPACITY)
    filter_failures = 0
    for it in range(1500):
        a, b, c = rng.normal(size=(3, 3))
        s, t = rng.uniform(-1, 2, size=2)
        d = a + s * (b - a) + t * (c - a) + rng.choice([0.0, 1e-17, -1e-17]) * rng.normal(size=3)
        P = np.array([a, b, c, d]) + rng.choice([0.0, 1e3, 1e7])
        exact = ix._RationalPoints(P)
        filter_failures += ix._o3_filter(P, 0, 1, 2, 3) == UNCERTAIN
        assert ix._o3(P, 0, 1, 2, 3, e) == exact.o3(0, 1, 2, 3)
        k = it % 3
        assert ix._o2(P, k, 0, 1, 3, e) == exact.o2(k, 0, 1, 3)
    assert filter_failures > 500  # the exact stage was really exercised


def test_tiny_coordinates_take_the_rational_fallback():
    """Decide pairs outside the expansion range with Fractions and agree with the same scene at unit scale."""
    P, tris = icosphere(1)
    Q = P.copy()
    Q[0] = -1.5 * P[0]  # a spike through the opposite side
    unit = check_frame(Q, tris, max_pairs=1000)
    tiny = check_frame(Q * 1e-80, tris, max_pairs=1000)
    assert unit.rational_fallbacks == 0
    assert tiny.rational_fallbacks > 0
    assert unit.intersecting_pair_count > 0
    assert pair_set(tiny.intersecting_pairs) == pair_set(unit.intersecting_pairs)


# --------------------------------------------------------------------------------------------
# Random comparisons
# --------------------------------------------------------------------------------------------


def has_area(A):
    return _cross(_sub(_q(A[1]), _q(A[0])), _sub(_q(A[2]), _q(A[0]))) != (0, 0, 0)


def random_triangle_pair(rng, kind):
    """Six points: two triangles of positive (exact) area."""
    while True:
        if kind == "float":
            P = rng.uniform(0, 1, size=(6, 3))
        elif kind == "grid":  # small integers: many exact touches, coplanar and collinear cases
            P = rng.integers(0, 3, size=(6, 3)).astype(float) * 0.5
        else:  # two triangles in one tilted plane (rounding-level offsets), partly overlapping
            basis = np.linalg.svd(rng.normal(size=(1, 3)))[2][1:]
            P = rng.uniform(0, 1, size=(6, 2)) @ basis + rng.normal(size=3) * 0.1
        if has_area(P[:3]) and has_area(P[3:]):
            return P


def test_random_triangle_pairs_match_separating_axis_reference():
    """Agree with the exact separating-axis reference on 2 000 random disjoint-index triangle pairs."""
    rng = np.random.default_rng(11)
    counts = {True: 0, False: 0}
    for it in range(2000):
        P = random_triangle_pair(rng, ("float", "grid", "plane")[it % 3])
        expected = sat_intersect(P[:3], P[3:])
        got = find_surface_intersections(P, TWO).shape[0] == 1
        assert got == expected, (it, P.tolist())
        counts[expected] += 1
    assert min(counts.values()) > 400


def test_random_shared_vertex_and_edge_pairs_match_references():
    """Agree with the cone and hinge references on random shared-vertex and shared-edge pairs."""
    rng = np.random.default_rng(12)
    counts = {True: 0, False: 0}
    for it in range(1500):
        P = rng.integers(-2, 3, size=(5, 3)).astype(float) if it % 2 else rng.normal(size=(5, 3))
        if it % 5 == 0:
            P[3:, 2] = P[0, 2]  # coplanar-ish folds
        for tris in (np.array([[0, 1, 2], [0, 3, 4]]), np.array([[0, 1, 2], [1, 0, 3]])):
            if not (has_area(P[tris[0]]) and has_area(P[tris[1]])):
                continue  # zero-area triangles are outside the contract
            expected = reference_pair(P, tris[0], tris[1])
            got = find_surface_intersections(P, tris).shape[0] == 1
            assert got == expected, (it, tris.tolist(), P.tolist())
            counts[expected] += 1
    assert min(counts.values()) > 100


def test_random_small_meshes_match_brute_force_pairs():
    """Find exactly the brute-force pair set on random perturbed, overlapping icosphere pairs."""
    rng = np.random.default_rng(5)
    P0, F0 = icosphere(1, 0.5)
    total = 0
    for _ in range(8):
        A = P0 + rng.normal(scale=0.08, size=P0.shape)
        B = P0 @ ref.random_rotation(rng).T + rng.uniform(-0.6, 0.6, size=3)
        P = np.vstack([A, B])
        tris = np.vstack([F0, F0 + len(P0)])
        pairs = find_surface_intersections(P, tris, max_pairs=100_000)
        assert pair_set(pairs) == reference_mesh_pairs(P, tris)
        total += pairs.shape[0]
    assert total > 50


def test_large_triangles_outside_the_grid_are_tested():
    """Find a huge slicing triangle's pairs (brute-force path) and skip them when both sides are static."""
    P, tris = icosphere(2, 0.5)
    big = np.array([[-50.0, -50.0, 0.1], [50.0, -50.0, 0.1], [0.0, 60.0, 0.12]])
    V = np.vstack([P, big, big + [0, 0, 0.05]])
    F = np.vstack([tris, [[len(P), len(P) + 1, len(P) + 2], [len(P) + 3, len(P) + 4, len(P) + 5]]])
    pairs = find_surface_intersections(V, F, max_pairs=100_000)
    expected = reference_mesh_pairs(V, F)
    assert pair_set(pairs) == expected and len(expected) > 20
    groups = np.full(len(V), -1, np.int64)
    assert check_frame(V, F, groups=groups).ok  # everything static: nothing to check
    groups[: len(P)] = 0
    assert check_frame(V, F, groups=groups, max_pairs=100_000).intersecting_pair_count == len(expected)


def test_random_mesh_configurations_match_ipctk():
    """Give ipctk's has_intersections boolean on 300 random two-mesh configurations (inside, touching, apart)."""
    ipctk = pytest.importorskip("ipctk")
    rng = np.random.default_rng(21)
    P0, F0 = icosphere(1, 0.5)
    C0, G0 = cube_surface(2, 0.4)
    tris = np.vstack([F0, G0 + len(P0)])
    edges = np.unique(np.sort(np.vstack([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1), axis=0)
    counts = {True: 0, False: 0}
    configurations = 60 if numba.config.DISABLE_JIT else 300  # the coverage run interprets the kernels
    for it in range(configurations):
        A = P0 + rng.normal(scale=0.02, size=P0.shape)
        scale = 0.3 if it % 10 == 0 else 1.0  # sometimes a small cube, possibly fully inside the sphere
        distance = rng.uniform(0.0, 0.5) if it % 10 == 0 else rng.uniform(0.6, 1.3)
        B = scale * C0 @ ref.random_rotation(rng).T + distance * ref.random_rotation(rng)[0]
        P = np.vstack([A, B])
        mesh = ipctk.CollisionMesh(
            np.asfortranarray(P), np.asfortranarray(edges, np.int32), np.asfortranarray(tris, np.int32)
        )
        expected = bool(ipctk.has_intersections(mesh, np.asfortranarray(P)))
        got = not check_frame(P, tris).ok
        assert got == expected, it
        counts[expected] += 1
    assert min(counts.values()) > 0.3 * configurations


# --------------------------------------------------------------------------------------------
# Groups, report, inversion
# --------------------------------------------------------------------------------------------


def test_static_collider_pairs_are_skipped_everything_else_is_checked():
    """Skip static-static overlaps but report static-soft and soft self-intersections."""
    P = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, -1], [0.3, 0.2, 1], [0.2, 0.4, 1]], float)
    for groups, expected in (([-1] * 6, 0), ([-1, -1, -1, 0, 0, 0], 1), ([3] * 6, 1), ([-1, -1, -1, 2, -1, -1], 1)):
        report = check_frame(P, TWO, groups=np.array(groups, np.int64))
        assert report.intersecting_pair_count == expected
        assert report.ok == (expected == 0)


def test_max_pairs_limits_the_list_not_the_count():
    """Return at most max_pairs pairs while counting them all."""
    P, tris = icosphere(2)
    Q = P.copy()
    Q[0] = -1.5 * P[0]
    full = check_frame(Q, tris, max_pairs=100_000)
    assert full.intersecting_pair_count == full.intersecting_pairs.shape[0] > 3
    short = check_frame(Q, tris, max_pairs=3)
    assert short.intersecting_pairs.shape == (3, 2)
    assert short.intersecting_pair_count == full.intersecting_pair_count
    assert "FAILED" in short.summary() and "inverted" not in short.summary()


def unit_tets():
    X = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], float)
    tets = np.array([[0, 1, 2, 3], [1, 3, 2, 4]], np.int64)
    assert np.linalg.det(X[tets[1, 1:]] - X[tets[1, 0]]) < 0  # second tet negatively oriented at rest
    return X, tets


def test_inversion_flipped_flat_and_rest():
    """Find a tet flipped through its opposite face and an exactly flat one, nothing at rest."""
    X, tets = unit_tets()
    rest_sign = np.array([1, -1])
    assert inverted_tets(X, tets, rest_sign).size == 0
    assert inverted_tets(X, tets).tolist() == [1]  # default: every tet positive at rest
    report = check_frame(X, np.zeros((0, 3), np.int64), X, tets, rest_tet_positions=X)
    assert report.ok and "ok" in report.summary()
    flipped = X.copy()
    flipped[3, 2] = -0.25  # vertex 3 through the face (0, 1, 2)
    assert inverted_tets(flipped, tets, rest_sign).tolist() == [0]
    flat = X.copy()
    flat[3] = [0.25, 0.5, 0.0]  # exactly in the plane z = 0
    assert inverted_tets(flat, tets, rest_sign).tolist() == [0]
    tilted = X.copy()
    tilted[3] = [1.0, 1.0, 1.0]  # tet 1 = (1, 3, 2, 4) with x3 == x4: exactly degenerate
    assert inverted_tets(tilted, tets, rest_sign).tolist() == [1]
    report = check_frame(X, np.zeros((0, 3), np.int64), flipped, tets, rest_tet_positions=X)
    assert report.inverted_tets.tolist() == [0] and not report.ok


def test_inversion_matches_rationals_near_flat():
    """Agree with Fraction signs on random nearly flat tets (rounding-level volumes)."""
    rng = np.random.default_rng(9)
    x = rng.normal(size=(400, 3))
    tets = rng.integers(0, 400, size=(3000, 4))
    tets = tets[np.all(np.diff(np.sort(tets, axis=1), axis=1) > 0, axis=1)]
    # make every tet nearly flat: its last node on the plane of the other three, rounded
    y = x.copy()
    for t in tets[:50]:
        a, b, c, _ = x[t]
        y[t[3]] = a + 0.3 * (b - a) + 0.4 * (c - a)
    signs = ix._exact_tet_signs(y, tets)
    exact = np.array([ix._RationalPoints(y).o3(*t) for t in tets])
    assert np.array_equal(signs, exact)
    assert set(inverted_tets(y, tets).tolist()) == set(np.flatnonzero(exact <= 0).tolist())


# --------------------------------------------------------------------------------------------
# Speed
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="timing is meaningless without the JIT")
def test_speed_50k_triangles():
    """Print the warm time for ~50k-triangle surfaces (deformed sphere, exact cube, rotated cube)."""
    rng = np.random.default_rng(1)
    P, tris = icosphere(5)  # 20 480 triangles
    sphere = np.vstack([P * (1.0 + 0.02 * np.sin(5 * P[:, :1])), P * 0.6 + [2.5, 0.0, 0.0]])
    sphere += rng.normal(scale=1e-5, size=sphere.shape)
    sphere_tris = np.vstack([tris, tris + len(P)])
    C, G = cube_surface(64)  # 49 152 triangles
    R = C @ ref.random_rotation(rng).T + 0.3
    for name, V, F in (("two spheres", sphere, sphere_tris), ("cube", C, G), ("rotated cube", R, G)):
        check_frame(*icosphere(1))  # compile outside the timing
        start = time.perf_counter()
        report = check_frame(V, F)
        elapsed = time.perf_counter() - start
        print(f"\n{name}: {F.shape[0]} triangles, {elapsed * 1e3:.0f} ms, {report.summary()}")
        assert report.ok
