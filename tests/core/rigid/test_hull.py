"""Convex hulls (core/rigid/hull.py) against scipy.spatial.ConvexHull and exact polytopes."""

import numpy as np
import pytest
from contact_lab.core.errors import ModelError
from contact_lab.core.rigid.hull import HULL_TOLERANCE, convex_hull, empty_hull_arrays, pack_hulls
from reference_geometry import rotation_from_vector

spatial = pytest.importorskip("scipy.spatial")

CUBE = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
TILT = rotation_from_vector([1.0, 2.0, 0.5])
OCTAHEDRON = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], np.float64)


def cylinder_points(segments: int, rings: int = 2) -> np.ndarray:
    """A cylinder approximation: ``rings`` circles of ``segments`` points, radius 1, z in [-1, 1]."""
    theta = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    circle = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    return np.concatenate([np.c_[circle, np.full(segments, z)] for z in np.linspace(-1.0, 1.0, rings)])


def hull_volume(hull) -> float:
    """Volume of a hull from its polygons (fan triangles about the vertex mean) [m³]."""
    centre = hull.vertices.mean(axis=0)
    volume = 0.0
    for face in hull.faces:
        p = hull.vertices[face] - centre
        volume += sum(np.linalg.det(np.array([p[0], p[i], p[i + 1]])) for i in range(1, len(p) - 1)) / 6.0
    return volume


def assert_valid(hull, points):
    """Check convexity, planarity, CCW winding, Euler's formula and that no input point lies outside."""
    size = np.linalg.norm(np.ptp(points, axis=0))
    tol = 2.0 * HULL_TOLERANCE * size
    normals, offsets = hull.planes[:, :3], hull.planes[:, 3]
    assert np.allclose(np.linalg.norm(normals, axis=1), 1.0)
    assert np.all(points @ normals.T - offsets <= tol), "an input point lies outside the hull"
    for face, plane in zip(hull.faces, hull.planes, strict=True):
        assert face.dtype == np.int32 and len(face) >= 3 and len(set(face.tolist())) == len(face)
        p = hull.vertices[face]
        assert np.all(np.abs(p @ plane[:3] - plane[3]) <= tol), "a face is not planar"
        area = np.sum(np.cross(p, np.roll(p, -1, axis=0)), axis=0)
        assert area @ plane[:3] > 0.0, "a face is not counter-clockwise seen from outside"
    edges = {tuple(sorted(e)) for f in hull.faces for e in zip(f, np.roll(f, -1), strict=True)}
    assert len(hull.vertices) - len(edges) + len(hull.faces) == 2
    assert len(np.unique(np.concatenate(hull.faces))) == len(hull.vertices)


def test_cube_gives_six_quads():
    """Merge the twelve triangles of a cube hull into six quads with axis normals and offset 1."""
    hull = convex_hull(CUBE, label="Cube")
    assert_valid(hull, CUBE)
    assert len(hull.vertices) == 8 and sorted(len(f) for f in hull.faces) == [4] * 6
    assert np.allclose(np.sort(np.abs(hull.planes[:, :3]).sum(axis=0)), [2.0, 2.0, 2.0])
    assert np.allclose(hull.planes[:, 3], 1.0)


def test_octahedron_gives_eight_triangles():
    """Keep the eight triangles of an octahedron (no two are coplanar)."""
    hull = convex_hull(OCTAHEDRON)
    assert_valid(hull, OCTAHEDRON)
    assert len(hull.vertices) == 6 and sorted(len(f) for f in hull.faces) == [3] * 8


@pytest.mark.parametrize("rings", [2, 5])
def test_cylinder_gives_two_ngon_caps(rings):
    """Merge a 32-segment cylinder into two 32-gon caps and 32 side quads (inner rings dropped)."""
    points = cylinder_points(32, rings) @ rotation_from_vector([0.3, -0.5, 0.2]).T
    hull = convex_hull(points)
    assert_valid(hull, points)
    assert sorted(len(f) for f in hull.faces) == [4] * 32 + [32, 32]
    assert len(hull.vertices) == 64


def test_noisy_subdivided_cube_still_gives_six_quads():
    """Drop the face and edge points of a rotated 7x7x7 lattice rounded to float32, leaving 8 corners."""
    g = np.linspace(-1.0, 1.0, 7)
    lattice = np.stack(np.meshgrid(g, g, g), axis=-1).reshape(-1, 3)
    points = (lattice @ rotation_from_vector([0.3, 0.5, -0.2]).T).astype(np.float32).astype(np.float64)
    hull = convex_hull(points)
    assert_valid(hull, points)
    assert len(hull.vertices) == 8 and sorted(len(f) for f in hull.faces) == [4] * 6


@pytest.mark.parametrize("count", [10, 300, 20000])
@pytest.mark.parametrize("seed", [0, 1])
def test_random_points_match_scipy(count, seed):
    """Find the same vertex set and volume (1e-12 relative) as scipy for random points in a ball."""
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(count, 3)) * [1.0, 2.0, 0.5] + [3.0, -1.0, 2.0]
    hull = convex_hull(points)
    reference = spatial.ConvexHull(points)
    assert_valid(hull, points)
    assert {tuple(p) for p in hull.vertices} == {tuple(p) for p in points[reference.vertices]}
    assert hull_volume(hull) == pytest.approx(reference.volume, rel=1e-12)


def test_points_on_a_sphere_match_scipy():
    """Keep all 2000 points of a random sphere sampling as vertices, with scipy's volume (1e-8 relative).

    Neighbouring triangles within ``HULL_TOLERANCE`` of one plane become one slightly non-planar polygon, whose
    fan is not the exact hull's triangulation: hence 1e-8, not 1e-12."""
    rng = np.random.default_rng(2)
    points = rng.normal(size=(2000, 3))
    points /= np.linalg.norm(points, axis=1)[:, None]
    hull = convex_hull(points)
    assert_valid(hull, points)
    assert len(hull.vertices) == 2000
    assert hull_volume(hull) == pytest.approx(spatial.ConvexHull(points).volume, rel=1e-8)


def test_duplicate_and_interior_points_are_dropped():
    """Reduce cube corners given three times plus 500 interior points to the 8 corners."""
    rng = np.random.default_rng(3)
    points = np.concatenate([CUBE, rng.uniform(-0.99, 0.99, (500, 3)), CUBE[::-1], CUBE])
    hull = convex_hull(points)
    assert_valid(hull, points)
    assert {tuple(p) for p in hull.vertices} == {tuple(p) for p in CUBE}


def test_hull_is_deterministic_and_order_independent():
    """Return identical arrays for identical input, and the same vertex set for shuffled input."""
    rng = np.random.default_rng(4)
    points = np.concatenate([rng.normal(size=(3000, 3)), cylinder_points(16, 3)])
    first, second = convex_hull(points), convex_hull(points)
    assert np.array_equal(first.vertices, second.vertices) and np.array_equal(first.planes, second.planes)
    assert all(np.array_equal(a, b) for a, b in zip(first.faces, second.faces, strict=True))
    shuffled = convex_hull(points[rng.permutation(len(points))])
    assert {tuple(p) for p in shuffled.vertices} == {tuple(p) for p in first.vertices}
    assert hull_volume(shuffled) == pytest.approx(hull_volume(first), rel=1e-12)


@pytest.mark.parametrize(
    ("points", "words"),
    [
        (np.c_[np.random.default_rng(5).normal(size=(40, 2)), np.zeros(40)], "in one plane"),
        (
            np.c_[np.random.default_rng(5).normal(size=(40, 2)), np.zeros(40)]
            @ rotation_from_vector([1.0, 2.0, 0.5]).T,
            "plane",
        ),
        (np.outer(np.arange(10.0), [1.0, 2.0, 3.0]), "on one line"),
        (np.ones((12, 3)), "the same point"),
        (np.concatenate([OCTAHEDRON[:3]] * 3), "in one plane"),
        (OCTAHEDRON[:3], "too few"),
        (np.zeros((0, 3)), "too few"),
        (np.r_[CUBE, [[np.nan, 0.0, 0.0]]], "NaN"),
        (np.r_[CUBE, [[np.inf, 0.0, 0.0]]], "infinite"),
    ],
    ids=["coplanar", "coplanar-rotated", "collinear", "one-point", "duplicates-of-3", "three", "empty", "nan", "inf"],
)
def test_degenerate_input_names_the_label(points, words):
    """Raise ModelError naming the label and the problem for flat, thin, too few or non-finite points."""
    with pytest.raises(ModelError, match=f"Wedge.*{words}"):
        convex_hull(points, label="Wedge")


def test_pack_hulls_layout():
    """Pack two hulls into CSR arrays with global indices, each edge once, planes and faces matching."""
    hulls = [convex_hull(CUBE + 5.0), convex_hull(OCTAHEDRON)]
    packed = pack_hulls(hulls)
    assert packed.hull_vert_start.tolist() == [0, 8, 14]
    assert packed.hull_face_start.tolist() == [0, 6, 14]
    assert packed.hull_edge_start.tolist() == [0, 12, 24]
    assert packed.hull_face_vert_start[-1] == len(packed.hull_face_verts) == 6 * 4 + 8 * 3
    for array, empty in zip(packed, empty_hull_arrays(), strict=True):
        assert array.dtype == empty.dtype and array.ndim == empty.ndim
    for h, hull in enumerate(hulls):
        v0 = packed.hull_vert_start[h]
        edges = packed.hull_edges[packed.hull_edge_start[h] : packed.hull_edge_start[h + 1]]
        assert np.all((edges >= v0) & (edges < packed.hull_vert_start[h + 1]))
        assert len({tuple(sorted(e)) for e in edges.tolist()}) == len(edges)
        for i, face in enumerate(hull.faces):
            f = packed.hull_face_start[h] + i
            loop = packed.hull_face_verts[packed.hull_face_vert_start[f] : packed.hull_face_vert_start[f + 1]]
            assert np.array_equal(loop, face + v0)
            assert np.array_equal(packed.hull_face_plane[f], hull.planes[i])
    assert np.array_equal(packed.hull_verts[8:], hulls[1].vertices)
    assert pack_hulls([]).hull_verts.shape == (0, 3)
