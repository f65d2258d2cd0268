"""Check Scene's numpy test of intersecting IPC surfaces (``addon/checks/ipc_start.py``) against the bake's own
exact checker (``core.ipc.intersection.find_surface_intersections``, Numba) on the same triangles."""

import time

import numpy as np
import pytest

pytest.importorskip("bpy")

from contact_lab.addon.checks import ipc_start as start_check  # noqa: E402
from contact_lab.core.fem import primitives  # noqa: E402
from contact_lab.core.ipc.intersection import find_surface_intersections  # noqa: E402

pytestmark = pytest.mark.blender


def icosphere(subdivisions: int) -> tuple[np.ndarray, np.ndarray]:
    """A unit icosphere (the core's): vertices (V, 3), outward triangles (T, 3) int64 (20 * 4**subdivisions)."""
    vertices, faces = primitives.icosphere(1.0, subdivisions)
    return vertices, faces.astype(np.int64)


def test_random_icosphere_pairs_agree_with_the_cores_exact_checker():
    """24 random pairs of icospheres (radii 0.3–1, centres 0.2–2.2 radii-sums apart: inside, through, apart):
    the same intersecting triangle pairs as the core's checker, both outcomes seen."""
    rng = np.random.default_rng(21)
    vertices, faces = icosphere(2)
    outcomes = set()
    for _ in range(24):
        r1, r2 = rng.uniform(0.3, 1.0, 2)
        centre = rng.normal(size=3)
        centre *= rng.uniform(0.2, 2.2) * (r1 + r2) / np.linalg.norm(centre)
        points = np.vstack([vertices * r1, vertices * r2 + centre])
        triangles = np.vstack([faces, faces + len(vertices)])
        mine = start_check.intersecting_pairs(points, triangles)
        reference = find_surface_intersections(points, triangles, max_pairs=10**6)
        np.testing.assert_array_equal(mine, reference)
        outcomes.add(len(reference) > 0)
    assert outcomes == {True, False}


def test_self_intersection_and_shared_features_agree_with_the_core():
    """One mesh made of two cubes (overlapping, with coplanar overlapping faces; then apart), a fold-over of a
    neighbour and a duplicated face: the core's rules on shared vertices and edges, pair for pair."""
    corners = np.array([(x, y, z) for z in (0, 1) for y in (0, 1) for x in (0, 1)], float)
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    cube = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.int64)
    for shift, hit in (((0.5, 0.0, 0.0), True), ((0.5, 0.3, 0.2), True), ((1.0, 0.0, 0.0), True),
                       ((1.001, 0.0, 0.0), False)):  # fmt: skip
        points = np.vstack([corners, corners + shift])
        triangles = np.vstack([cube, cube + 8])
        mine = start_check.intersecting_pairs(points, triangles)
        np.testing.assert_array_equal(mine, find_surface_intersections(points, triangles, max_pairs=10**6))
        assert (len(mine) > 0) == hit, shift
    # a strip folded flat onto itself (shared edge, same side), a flat hinge, a duplicated face
    points = np.array([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0.5, 0.5, 0), (1, -1, 0)], float)
    for triangles in ([(0, 1, 2), (0, 1, 3)], [(0, 1, 2), (0, 1, 4)], [(0, 1, 2), (2, 0, 1)]):
        triangles = np.array(triangles, np.int64)
        np.testing.assert_array_equal(
            start_check.intersecting_pairs(points, triangles),
            find_surface_intersections(points, triangles, max_pairs=10),
        )


def test_colliders_may_overlap_each_other():
    """Pairs of two skipped triangles (two Mesh colliders) are not reported, as the core skips static pairs."""
    vertices, faces = icosphere(1)
    points = np.vstack([vertices, vertices + 0.5])
    triangles = np.vstack([faces, faces + len(vertices)])
    assert len(start_check.intersecting_pairs(points, triangles)) > 0
    skip = np.ones(len(triangles), bool)
    assert len(start_check.intersecting_pairs(points, triangles, skip=skip)) == 0


def test_meshes_of_any_size_are_checked():
    """Two overlapping 20,480-triangle icospheres in one mesh (twice the size Check Scene once stopped at): the same
    pairs as the core's checker. Prints the cost per triangle of the self-test of one sphere (docs/troubleshooting.md
    names this test)."""
    vertices, faces = icosphere(5)
    start = time.perf_counter()
    assert len(start_check.conflicting_pairs(vertices, faces)) == 0
    seconds = time.perf_counter() - start
    print(f"\nCheck Scene's IPC mesh test: {len(faces)} triangles in {seconds:.2f} s, "
          f"{1e6 * seconds / len(faces):.0f} µs per triangle")  # fmt: skip
    points = np.vstack([vertices, vertices + (0.5, 0.0, 0.0)])
    triangles = np.vstack([faces, faces + len(vertices)])
    mine = start_check.intersecting_pairs(points, triangles)
    np.testing.assert_array_equal(mine, find_surface_intersections(points, triangles, max_pairs=10**6))
    assert len(mine) > 0
    # a flat mesh: a cube of 6 x 29 x 29 quads, turned, whose coplanar neighbours need exact arithmetic
    vertices, faces = grid_cube(29)
    turn = np.linalg.qr(np.random.default_rng(5).normal(size=(3, 3)))[0]
    vertices = vertices @ turn.T + (0.02, -0.01, 0.27)
    start = time.perf_counter()
    assert len(start_check.conflicting_pairs(vertices, faces)) == 0
    seconds = time.perf_counter() - start
    print(f"flat: {len(faces)} triangles in {seconds:.2f} s, {1e6 * seconds / len(faces):.0f} µs per triangle")
    assert len(find_surface_intersections(vertices, faces, max_pairs=10**6)) == 0


def grid_cube(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A unit cube of 6 x n x n quads (two triangles each), welded: vertices (V, 3), outward triangles (T, 3)."""
    steps = np.linspace(-0.5, 0.5, n + 1)
    index: dict[tuple, int] = {}
    triangles = []
    for axis in range(3):
        for side in (-0.5, 0.5):
            for i in range(n):
                for j in range(n):
                    quad = []
                    for di, dj in ((0, 0), (1, 0), (1, 1), (0, 1)):
                        point = [0.0, 0.0, 0.0]
                        point[axis], point[(axis + 1) % 3], point[(axis + 2) % 3] = side, steps[i + di], steps[j + dj]
                        quad.append(index.setdefault(tuple(point), len(index)))
                    a, b, c, d = quad if side > 0 else quad[::-1]
                    triangles += [(a, b, c), (a, c, d)]
    return np.array(list(index), float), np.array(triangles, np.int64)


def test_exact_signs_match_rational_arithmetic():
    """Orientation signs of nearly and exactly coplanar points (a turned grid, where float determinants are
    rounding noise) equal the signs computed with fractions, which are exact."""
    from fractions import Fraction

    rng = np.random.default_rng(3)
    turn = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    grid = np.array([(x, y, 0.0) for x in range(4) for y in range(4)], float) * 0.013
    exact_plane = rng.integers(-8, 8, size=(200, 4, 3)).astype(float) * np.array([1.0, 1.0, 0.0])
    points = np.concatenate([(grid @ turn.T)[rng.integers(0, 16, size=(400, 4))], exact_plane + 0.125])

    def reference(a, b, c, d):
        u, v, w = ([Fraction(float(x)) - Fraction(float(y)) for x, y in zip(p, a, strict=True)] for p in (b, c, d))
        det = (
            u[0] * (v[1] * w[2] - v[2] * w[1]) + u[1] * (v[2] * w[0] - v[0] * w[2]) + u[2] * (v[0] * w[1] - v[1] * w[0])
        )
        return (det > 0) - (det < 0)

    signs = start_check._orient3d(points[:, 0], points[:, 1], points[:, 2], points[:, 3])
    expected = [reference(*row) for row in points]
    np.testing.assert_array_equal(signs, expected)
    assert {-1, 0, 1} <= set(expected)  # both sides and exactly coplanar seen
    flat = points[:, :3, :2]
    expected_2d = []
    for a, b, c in flat:
        det = (Fraction(b[0]) - Fraction(a[0])) * (Fraction(c[1]) - Fraction(a[1])) - (
            Fraction(b[1]) - Fraction(a[1])
        ) * (Fraction(c[0]) - Fraction(a[0]))
        expected_2d.append((det > 0) - (det < 0))
    np.testing.assert_array_equal(start_check._orient2d(flat[:, 0], flat[:, 1], flat[:, 2]), expected_2d)


def test_touching_features_match_the_cores_distances():
    """Random triangle pairs at gaps of 0 to 1e-6 of their size (vertex on face, edge on edge, face on face):
    a pair is named as touching iff a pair of its features sharing no vertex is within ``TOUCH_FRACTION`` of the
    pair's size by the core's own distance kernels (the barrier's), brute force over all 15 feature pairs."""
    from contact_lab.core.ipc.distance import edge_edge_distance2, point_triangle_distance2

    rng = np.random.default_rng(8)
    named = []
    for case in range(300):
        a = rng.normal(size=(3, 3))
        n = np.cross(a[1] - a[0], a[2] - a[0])
        n /= np.linalg.norm(n)
        gap = [0.0, 1e-13, 1e-11, 1e-6][case % 4]
        # B: a vertex (or an edge's middle) of it at ``gap`` over a point of A, the rest above A's plane
        inner = a.T @ rng.dirichlet(np.ones(3))
        b = inner + gap * n + np.abs(rng.normal(size=(3, 1))) * n + rng.normal(size=(3, 3)) * 0.7
        b[0] = inner + gap * n
        if case % 3 == 1:  # an edge of B across A's edge instead
            mid = 0.5 * (a[0] + a[1])
            b[0], b[1] = mid + gap * n + (a[2] - a[0]) * 0.3, mid + gap * n - (a[2] - a[0]) * 0.3
        points = np.vstack([a, b])
        triangles = np.array([(0, 1, 2), (3, 4, 5)], np.int64)
        size = np.ptp(points, axis=0).max()
        d2 = [point_triangle_distance2(points[v], *points[list(t)]) for v, t in ((3, (0, 1, 2)), (4, (0, 1, 2)),
              (5, (0, 1, 2)), (0, (3, 4, 5)), (1, (3, 4, 5)), (2, (3, 4, 5)))]  # fmt: skip
        d2 += [edge_edge_distance2(points[i], points[(i + 1) % 3], points[3 + j], points[3 + (j + 1) % 3])
               for i in range(3) for j in range(3)]  # fmt: skip
        touching = min(d2) <= (start_check.TOUCH_FRACTION * size) ** 2
        crossing = len(find_surface_intersections(points, triangles, max_pairs=10)) > 0
        found = len(start_check.conflicting_pairs(points, triangles)) > 0
        assert found == (touching or crossing), (case, gap, min(d2) ** 0.5 / size, crossing)
        named.append(found)
    assert 0 < sum(named) < len(named)


def test_a_coarse_ground_under_fine_meshes_is_paired_by_brute_force():
    """A two-triangle 100 m ground (a Mesh collider) with a 1 mm-triangle icosphere resting through it and another
    above: found exactly as the core finds it, quickly (the ground is not spread over millions of grid cells)."""
    vertices, faces = icosphere(3)
    ground = np.array([(-50, -50, 0), (50, -50, 0), (50, 50, 0), (-50, 50, 0)], float)
    points = np.vstack([ground, vertices * 0.01 + (0, 0, 0.005), vertices * 0.01 + (1, 0, 0.0101)])
    triangles = np.vstack([[(0, 1, 2), (0, 2, 3)], faces + 4, faces + 4 + len(vertices)])
    start = time.perf_counter()
    mine = start_check.intersecting_pairs(points, triangles)
    assert time.perf_counter() - start < 1.0
    np.testing.assert_array_equal(mine, find_surface_intersections(points, triangles, max_pairs=10**6))
    assert len(mine) > 0 and mine.max() < 2 + len(faces)  # the first sphere only


def test_a_turned_subdivided_cube_is_not_named_as_intersecting_itself():
    """The IPC demo's third cube (7 cm, every edge cut 3 times, turned 1 rad about Z, lifted 27 cm): its flat faces'
    neighbouring triangles have float determinants of rounding noise, which read as intersecting (a false
    refusal of the demo) before Check Scene kept only crossings beyond rounding. The core's exact checker is the
    reference: it finds none."""
    import bmesh
    import bpy
    from contact_lab.addon.checks import validate

    scene = bpy.context.scene
    scene.contact_lab.engine = "IPC"
    scene.frame_start, scene.frame_end = 1, 2
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.subdivide_edges(bm, edges=bm.edges[:], cuts=3, use_grid_fill=True)
    bmesh.ops.scale(bm, vec=(0.07, 0.07, 0.07), verts=bm.verts)
    mesh = bpy.data.meshes.new("Cube 3")
    bm.to_mesh(mesh)
    bm.free()
    obj = bpy.data.objects.new("Cube 3", mesh)
    scene.collection.objects.link(obj)
    obj.location, obj.rotation_euler = (0.02, -0.01, 0.27), (0.0, 0.0, 1.0)
    obj.contact_lab.role, obj.contact_lab.soft_preset, obj.contact_lab.lattice_resolution = "SOFT", "FLESH", 4
    scene.frame_set(1)
    world = np.array(obj.matrix_world)
    vertices = np.array([world[:3, :3] @ v.co + world[:3, 3] for v in mesh.vertices])
    triangles = np.array([t.vertices[:] for t in mesh.loop_triangles] if mesh.loop_triangles else [], np.int64)
    if not len(triangles):
        mesh.calc_loop_triangles()
        triangles = np.array([t.vertices[:] for t in mesh.loop_triangles], np.int64)
    assert len(find_surface_intersections(vertices, triangles, max_pairs=10**6)) == 0
    findings = validate.validate_scene(scene)
    assert not [f for f in findings if f.level == "ERROR"], [f.text for f in findings]
