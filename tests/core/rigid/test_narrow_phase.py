"""Narrow phase against independent numpy references (tests/core/reference_geometry.py) and seed §2.1 examples."""

import numpy as np
import pytest
import reference_geometry as ref
from contact_lab.core.rigid.collision.narrow_phase import FEATURE_MAX, generate_contacts
from contact_lab.core.rigid.hull import empty_hull_arrays
from contact_lab.core.rigid.mesh import empty_mesh_arrays

Shape = ref.Shape
SPHERE, BOX, CAPSULE, PLANE = ref.SPHERE, ref.BOX, ref.CAPSULE, ref.PLANE
MARGIN = 0.05
EDGE_FEATURE = 144
I3 = np.eye(3)
LYING = ref.rotation_about((0, 1, 0), np.pi / 2)  # capsule axis along world x


def make(shape_type, params, pos=(0, 0, 0), rot=I3) -> Shape:
    return Shape(shape_type, np.array(params, float), np.array(pos, float), np.array(rot, float))


def generate(types, params, pos, rot, pairs, margin, out, counts):
    """``generate_contacts`` for primitive shapes (no hulls, no meshes, no sweep) into ``out`` and ``counts``."""
    n = len(types)
    generate_contacts(types, params, pos, rot, empty_hull_arrays(), np.full(n, -1, np.int32), empty_mesh_arrays(),
                      np.full(n, -1, np.int32), pairs, pairs.shape[0], margin, np.zeros(n), *out, counts)  # fmt: skip


def collide(shapes, pairs, margin=MARGIN, cap=64):
    """Run ``generate_contacts``; returns (pair, point, normal, gap, feature) of the stored contacts and counts."""
    types = np.array([s.type for s in shapes], np.int32)
    params = np.array([s.params for s in shapes], float)
    pos = np.array([s.pos for s in shapes], float)
    rot = np.array([s.rot for s in shapes], float)
    pairs = np.array(pairs, np.int32).reshape(-1, 2)
    out = (np.zeros(cap, np.int32), np.zeros((cap, 3)), np.zeros((cap, 3)), np.zeros(cap), np.zeros(cap, np.int32))
    counts = np.zeros(2, np.int64)
    generate(types, params, pos, rot, pairs, margin, out, counts)
    n = int(counts[0])
    return tuple(o[:n] for o in out), counts


def collide_pair(a: Shape, b: Shape, margin=MARGIN):
    """Contacts (point, normal, gap, feature) of (a, b), checked against the swapped pair (b, a)."""
    (pair, point, normal, gap, feature), counts = collide([a, b], [[0, 1], [1, 0]], margin)
    assert counts[1] == 0
    ab, ba = pair == 0, pair == 1
    assert ab.sum() == ba.sum(), "swapping the pair changed the number of contacts"
    oa, ob = np.argsort(feature[ab]), np.argsort(feature[ba])
    np.testing.assert_array_equal(feature[ab][oa], feature[ba][ob])
    assert len(set(feature[ab].tolist())) == ab.sum(), "feature ids must be unique within a pair"
    assert np.all((feature >= 0) & (feature < FEATURE_MAX))
    np.testing.assert_allclose(gap[ab][oa], gap[ba][ob], atol=1e-12)
    np.testing.assert_allclose(normal[ab][oa], -normal[ba][ob], atol=1e-12)
    np.testing.assert_allclose(point[ab][oa], point[ba][ob], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0, atol=1e-12)
    assert np.all(gap <= margin)
    return point[ab], normal[ab], gap[ab], feature[ab]


def moved(shape: Shape, offset) -> Shape:
    return shape._replace(pos=shape.pos + np.asarray(offset, float))


def place_at_distance(rng, a: Shape, b: Shape, target: float, direction=None) -> Shape:
    """Translate ``b`` (far from ``a`` along ``direction``) so the reference distance becomes ``target`` [m]."""
    direction = rng.normal(size=3) if direction is None else direction
    b = moved(b, 3.0 * direction / np.linalg.norm(direction) - b.pos + a.pos)
    dist, xa, xb = ref.distance(a, b)
    return moved(b, (target - dist) * (xb - xa) / dist)


PAIR_TYPES = [(SPHERE, SPHERE), (SPHERE, BOX), (SPHERE, CAPSULE), (BOX, BOX), (BOX, CAPSULE), (CAPSULE, CAPSULE)]
PAIR_IDS = ["sphere-sphere", "sphere-box", "sphere-capsule", "box-box", "box-capsule", "capsule-capsule"]


def random_pair(rng, type_a, type_b, index):
    """Random shapes and a direction from a to b; odd ``index``: nearly aligned frames, b off a face of a."""
    a = ref.random_shape(rng, type_a)
    b = ref.random_shape(rng, type_b)
    direction = rng.normal(size=3)
    if index % 2 == 1:
        # Face-face, parallel-capsule and capsule-on-face configurations.
        b = b._replace(rot=a.rot @ ref.rotation_about(rng.normal(size=3), rng.uniform(0.0, 0.05)))
        direction = a.rot[:, index % 3] * rng.choice([-1.0, 1.0]) + 0.1 * direction
    return a, b, direction


@pytest.mark.parametrize(("type_a", "type_b"), PAIR_TYPES, ids=PAIR_IDS)
def test_separated_gap_matches_reference_distance(type_a, type_b):
    """Match the smallest gap and its normal with the alternating-projection distance for separated shapes."""
    rng = np.random.default_rng(100 + 10 * type_a + type_b)
    exact = 0
    for index in range(12):
        a, b, direction = random_pair(rng, type_a, type_b, index)
        b = place_at_distance(rng, a, b, rng.uniform(0.1, 0.9) * MARGIN, direction)
        dist, xa, xb = ref.distance(a, b)
        point, normal, gap, _ = collide_pair(a, b)
        if type_a == BOX and type_b == BOX:
            # SAT is exact when the closest features lie along one of the 15 axes (face-*, crossing edges);
            # otherwise (vertex-vertex, vertex-edge) speculative box-box contacts are approximate (see module doc).
            sat = ref.sat_max_separation(a, b)
            assert sat <= dist + 1e-9
            if gap.size:
                assert gap.min() >= sat - 1e-3
            if dist - sat > 1e-7:
                continue
        assert gap.size > 0
        i = np.argmin(gap)
        assert abs(gap[i] - dist) < 2e-5, (index, gap[i], dist)
        # Separation of the support projections along the returned normal is the distance (exact test) ...
        # (box-box: up to the edge-axis bias, 1e-3 x largest half-extent, that keeps face manifolds.)
        assert abs(-ref.overlap_along(a, b, normal[i])[0] - dist) < (1e-3 if type_a == type_b == BOX else 2e-5)
        # ... and the normal is the closest-point direction (loosely: the reference points converge slowly).
        np.testing.assert_allclose(normal[i], (xb - xa) / dist, atol=1e-2)
        exact += 1
    assert exact >= 6


@pytest.mark.parametrize(("type_a", "type_b"), PAIR_TYPES, ids=PAIR_IDS)
def test_penetrating_gap_matches_reference_depth(type_a, type_b):
    """Match the deepest gap with the minimum translation distance; moving b by -gap along n makes them touch."""
    rng = np.random.default_rng(200 + 10 * type_a + type_b)
    has_box = BOX in (type_a, type_b)
    tol = 1.2e-3 if has_box else 5e-5  # face bias of the SAT (1e-3 x largest half-extent)
    for index in range(10):
        a, b, direction = random_pair(rng, type_a, type_b, index)
        b = place_at_distance(rng, a, b, -rng.uniform(0.02, 0.15), direction)
        depth, _ = ref.penetration_depth(a, b)
        assert depth > 0.0
        point, normal, gap, _ = collide_pair(a, b)
        assert gap.size > 0
        i = np.argmin(gap)
        n = normal[i]
        assert abs(-gap[i] - depth) < tol, (index, -gap[i], depth)
        # The gap is the translation along the returned normal that separates the projections ...
        assert abs(-gap[i] - ref.overlap_along(a, b, n)[0]) < (1e-6 if not has_box else tol)
        # ... and after it the shapes just touch (zero minimum translation distance).
        touching, _ = ref.penetration_depth(a, moved(b, -gap[i] * n))
        assert abs(touching) < tol, (index, touching)


@pytest.mark.parametrize("shape_type", [SPHERE, BOX, CAPSULE], ids=["sphere", "box", "capsule"])
def test_plane_contacts_match_vertex_heights(shape_type):
    """Match plane contacts with the heights of the box vertices / capsule end spheres / sphere above the plane."""
    rng = np.random.default_rng(300 + shape_type)
    total = 0
    for _ in range(20):
        plane = Shape(PLANE, np.zeros(3), rng.normal(size=3), ref.random_rotation(rng))
        n = plane.rot[:, 2]
        shape = ref.random_shape(rng, shape_type)
        lowest = -ref.support(shape, -n)[0] - shape.pos @ n  # lowest point relative to the centre along n
        height = rng.uniform(-0.2, 0.1)
        shape = shape._replace(pos=plane.pos + (height - lowest) * n)
        if shape_type == SPHERE:
            expected = np.array([(shape.pos - plane.pos) @ n - shape.params[0]])
            surface = np.array([shape.pos - shape.params[0] * n])
        elif shape_type == BOX:
            surface = ref.box_vertices(shape)
            expected = (surface - plane.pos) @ n
        else:
            ends = shape.pos + np.outer([-1.0, 1.0], shape.params[1] * shape.rot[:, 2])
            expected = (ends - plane.pos) @ n - shape.params[0]
            surface = ends - shape.params[0] * n
        keep = expected <= MARGIN
        point, normal, gap, _ = collide_pair(shape, plane)
        np.testing.assert_allclose(np.sort(gap), np.sort(expected[keep]), atol=1e-12)
        np.testing.assert_allclose(normal, np.tile(-n, (gap.size, 1)), atol=1e-12)
        # Points lie midway between the surface point and the plane.
        np.testing.assert_allclose((point - plane.pos) @ n, 0.5 * gap, atol=1e-12)
        for p, g in zip(point, gap, strict=True):
            assert np.min(np.linalg.norm(surface - (p + 0.5 * g * n), axis=1)) < 1e-12
        total += gap.size
    assert total > 10


def test_sphere_sphere_matches_seed_example():
    """Reproduce seed §2.1.1: r = 1 spheres 1.5 apart give phi = -0.5, n = x, p = (0.75, 0, 0)."""
    point, normal, gap, _ = collide_pair(make(SPHERE, [1, 0, 0]), make(SPHERE, [1, 0, 0], (1.5, 0, 0)))
    np.testing.assert_allclose(gap, [-0.5])
    np.testing.assert_allclose(normal, [[1, 0, 0]])
    np.testing.assert_allclose(point, [[0.75, 0, 0]])
    _, normal, _, _ = collide_pair(make(SPHERE, [1, 0, 0]), make(SPHERE, [0.5, 0, 0]))
    np.testing.assert_allclose(np.linalg.norm(normal), 1.0)  # coincident centres: a fixed axis


def test_sphere_box_shallow_matches_seed_example():
    """Give phi = -0.2 and the face normal for a r = 0.5 sphere at x = 1.3 against the unit box (seed §2.1.2)."""
    box = make(BOX, [1, 1, 1])
    sphere = make(SPHERE, [0.5, 0, 0], (1.3, 0, 0))
    point, normal, gap, _ = collide_pair(box, sphere)
    np.testing.assert_allclose(gap, [-0.2])
    np.testing.assert_allclose(normal, [[1, 0, 0]], atol=1e-15)
    assert 0.8 <= point[0, 0] <= 1.0 and abs(point[0, 1]) < 1e-15 and abs(point[0, 2]) < 1e-15


def test_sphere_box_deep_uses_nearest_face_and_radius():
    """Use the nearest of 6 faces and phi = -(d + r) when the centre is inside (erratum E15), continuous at the face."""
    box = make(BOX, [1, 1, 1])
    _, normal, gap, _ = collide_pair(make(SPHERE, [0.1, 0, 0], (-0.7, 0.1, 0.2)), box)
    np.testing.assert_allclose(gap, [-(0.3 + 0.1)])
    np.testing.assert_allclose(normal, [[1, 0, 0]])  # sphere -> box: the sphere leaves through the -x face
    inside = collide_pair(make(SPHERE, [0.1, 0, 0], (-0.999, 0.1, 0.2)), box)
    outside = collide_pair(make(SPHERE, [0.1, 0, 0], (-1.001, 0.1, 0.2)), box)
    np.testing.assert_allclose(inside[1], outside[1])
    np.testing.assert_allclose(inside[2], outside[2] - 0.002, atol=1e-12)


def test_box_stack_gives_four_face_contacts():
    """Give 4 contacts with n = +z, phi = -0.1 for h = 0.5 boxes overlapping by 0.1 (seed §2.1.3)."""
    lower, upper = make(BOX, [0.5, 0.5, 0.5]), make(BOX, [0.5, 0.5, 0.5], (0.1, 0.05, 0.9))
    point, normal, gap, _ = collide_pair(lower, upper)
    assert gap.size == 4
    np.testing.assert_allclose(gap, -0.1)
    np.testing.assert_allclose(normal, np.tile([0, 0, 1.0], (4, 1)), atol=1e-15)
    np.testing.assert_allclose(point[:, 2], 0.45)
    # Clipped at the side planes x = 0.5 (widened by the 1e-3 relative clip slop).
    np.testing.assert_allclose(np.sort(point[:, 0]), [-0.4, -0.4, 0.5, 0.5], atol=0.5e-3 + 1e-12)


def test_speculative_box_contacts_before_touching():
    """Give 4 contacts with gap 0.005 for boxes 5 mm apart and a 10 mm margin."""
    point, normal, gap, _ = collide_pair(make(BOX, [0.5, 0.5, 0.5]), make(BOX, [0.3, 0.3, 0.3], (0, 0, 0.805)), 0.01)
    assert gap.size == 4
    np.testing.assert_allclose(gap, 0.005)
    np.testing.assert_allclose(normal, np.tile([0, 0, 1.0], (4, 1)), atol=1e-15)
    _, _, gap, _ = collide_pair(make(BOX, [0.5, 0.5, 0.5]), make(BOX, [0.3, 0.3, 0.3], (0, 0, 0.815)), 0.01)
    assert gap.size == 0


def test_box_stack_top_manifold_is_stable():
    """Keep 4 contacts with the same feature ids on the top pair of a jittered 10-box stack."""
    rng = np.random.default_rng(5)
    features = None
    for _ in range(20):
        boxes = []
        for level in range(10):
            rot = ref.rotation_about(rng.normal(size=3), 2e-4 * rng.uniform())
            boxes.append(make(BOX, [0.5, 0.5, 0.5], (*rng.normal(scale=5e-5, size=2), 0.999 * level + 0.5), rot))
        pairs = [[k, k + 1] for k in range(9)]
        (pair, point, normal, gap, feature), counts = collide(boxes, pairs, margin=0.01)
        assert counts[0] == 36 and counts[1] == 0
        top = pair == 8
        np.testing.assert_allclose(normal[top] @ [0, 0, 1.0], 1.0, atol=1e-6)
        np.testing.assert_allclose(gap[top], -0.001, atol=2e-4)
        if features is None:
            features = np.sort(feature[top])
        np.testing.assert_array_equal(np.sort(feature[top]), features)


def test_box_box_crossed_edges_give_one_edge_contact():
    """Give one edge-edge contact (eq. 87) at the crossing of two 45-degree-rolled boxes."""
    a = make(BOX, [0.5, 0.5, 0.5], rot=ref.rotation_about((1, 0, 0), np.pi / 4))
    b = make(BOX, [0.5, 0.5, 0.5], (0, 0, np.sqrt(2) - 0.01), ref.rotation_about((0, 1, 0), np.pi / 4))
    point, normal, gap, feature = collide_pair(a, b)
    assert gap.size == 1 and feature[0] >= EDGE_FEATURE
    np.testing.assert_allclose(gap, [-0.01], atol=1e-12)
    np.testing.assert_allclose(normal, [[0, 0, 1]], atol=1e-12)
    np.testing.assert_allclose(point, [[0, 0, np.sqrt(0.5) - 0.005]], atol=1e-12)


def test_rotated_box_on_plane():
    """Give 4 contacts for a box yawed 45 degrees resting on a plane, 2 on an edge, 1 on a corner."""
    plane = make(PLANE, [0, 0, 0])
    yawed = make(BOX, [0.5, 0.3, 0.2], (0, 0, 0.199), ref.rotation_about((0, 0, 1), np.pi / 4))
    _, normal, gap, feature = collide_pair(yawed, plane)
    assert gap.size == 4 and len(set(feature)) == 4
    np.testing.assert_allclose(gap, -0.001, atol=1e-12)
    np.testing.assert_allclose(normal, np.tile([0, 0, -1.0], (4, 1)))
    on_edge = make(BOX, [0.5, 0.5, 0.5], (0, 0, np.sqrt(0.5) - 0.002), ref.rotation_about((1, 0, 0), np.pi / 4))
    np.testing.assert_allclose(collide_pair(plane, on_edge)[2], [-0.002, -0.002], atol=1e-12)
    corner = ref.rotation_about((1, 1, 0), np.arctan(np.sqrt(2)))  # body diagonal vertical
    on_corner = make(BOX, [0.5, 0.5, 0.5], (0, 0, np.sqrt(0.75) - 0.003), corner)
    np.testing.assert_allclose(collide_pair(plane, on_corner)[2], [-0.003], atol=1e-12)


def test_capsule_lying_on_plane_gives_two_contacts():
    """Give one contact per end sphere for a capsule lying on a plane."""
    capsule = make(CAPSULE, [0.2, 0.5, 0], (0.3, 0.1, 0.19), LYING)
    point, normal, gap, _ = collide_pair(capsule, make(PLANE, [0, 0, 0]))
    np.testing.assert_allclose(gap, [-0.01, -0.01], atol=1e-12)
    np.testing.assert_allclose(np.sort(point[:, 0]), [-0.2, 0.8], atol=1e-12)
    np.testing.assert_allclose(normal, np.tile([0, 0, -1.0], (2, 1)), atol=1e-12)


def test_capsule_on_box_face_and_edge():
    """Give 2 contacts for a capsule lying on a box face (also hanging over it), 1 when it crosses an edge."""
    box = make(BOX, [1, 1, 1])
    point, normal, gap, _ = collide_pair(box, make(CAPSULE, [0.2, 0.5, 0], (0, 0.3, 1.19), LYING))
    np.testing.assert_allclose(gap, [-0.01, -0.01], atol=1e-12)
    np.testing.assert_allclose(np.sort(point[:, 0]), [-0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(normal, np.tile([0, 0, 1.0], (2, 1)), atol=1e-12)
    point, _, gap, _ = collide_pair(box, make(CAPSULE, [0.2, 0.5, 0], (1.2, 0.3, 1.21), LYING))
    np.testing.assert_allclose(gap, [0.01, 0.01], atol=1e-12)  # speculative, over the face up to its edge
    np.testing.assert_allclose(np.sort(point[:, 0]), [0.7, 1.0], atol=1e-12)
    # Axis along (1, 0, -1): across the edge x = z = 1, touching it at one point.
    diagonal = np.array([1.0, 0.0, 1.0]) / np.sqrt(2)
    crossing = make(
        CAPSULE, [0.2, 0.5, 0], np.array([1, 0.3, 1]) + 0.19 * diagonal, ref.rotation_about((0, 1, 0), -np.pi / 4)
    )
    point, normal, gap, _ = collide_pair(box, crossing)
    np.testing.assert_allclose(gap, [-0.01], atol=1e-9)
    np.testing.assert_allclose(normal, [diagonal], atol=1e-9)
    # Segment through the box: SAT picks the exit through the nearest face, two contacts along it.
    through = make(CAPSULE, [0.1, 0.5, 0], (0, 0.2, 0.9), LYING)
    _, normal, gap, _ = collide_pair(box, through)
    np.testing.assert_allclose(gap, [-0.2, -0.2], atol=1e-12)
    np.testing.assert_allclose(normal, np.tile([0, 0, 1.0], (2, 1)), atol=1e-12)


def test_parallel_capsules_give_two_contacts():
    """Give 2 contacts at the ends of the overlap for a capsule lying on a parallel capsule."""
    a = make(CAPSULE, [0.2, 0.5, 0], (0, 0, 0), LYING)
    b = make(CAPSULE, [0.1, 0.5, 0], (0.6, 0, 0.29), LYING)
    point, normal, gap, _ = collide_pair(a, b)
    np.testing.assert_allclose(gap, [-0.01, -0.01], atol=1e-12)
    np.testing.assert_allclose(np.sort(point[:, 0]), [0.1, 0.5], atol=1e-12)
    np.testing.assert_allclose(normal, np.tile([0, 0, 1.0], (2, 1)), atol=1e-12)
    crossed = make(CAPSULE, [0.1, 0.5, 0], (0.2, 0, 0.29), ref.rotation_about((1, 0, 0), np.pi / 2))
    np.testing.assert_allclose(collide_pair(a, crossed)[2], [-0.01], atol=1e-12)


def test_plane_plane_gives_no_contacts():
    """Give no contacts between two planes."""
    (_, _, _, gap, _), counts = collide([make(PLANE, [0, 0, 0]), make(PLANE, [0, 0, 0], (0, 0, -1))], [[0, 1]])
    assert gap.size == 0 and counts[1] == 0


def test_contact_overflow_is_counted_without_writing_past_the_end():
    """Count contacts that do not fit and leave memory past the output arrays untouched."""
    shapes = [make(BOX, [0.5, 0.5, 0.5]), make(BOX, [0.5, 0.5, 0.5], (0, 0, 0.9)), make(PLANE, [0, 0, 0], (0, 0, 0.6))]
    pairs = np.array([[0, 1], [0, 2], [1, 2]], np.int32)
    types = np.array([s.type for s in shapes], np.int32)
    params = np.array([s.params for s in shapes])
    pos = np.array([s.pos for s in shapes])
    rot = np.array([s.rot for s in shapes])
    full = (np.zeros(64, np.int32), np.zeros((64, 3)), np.zeros((64, 3)), np.zeros(64), np.zeros(64, np.int32))
    counts = np.zeros(2, np.int64)
    generate(types, params, pos, rot, pairs, 0.01, full, counts)
    total = int(counts[0])
    assert counts[1] == 0 and total == 4 + 8 + 4  # stack 4, lower box all 8 vertices, upper box bottom 4
    for cap in (0, 1, 3):
        buffers = (np.full(8, -7, np.int32), np.full((8, 3), 7.0), np.full((8, 3), 7.0), np.full(8, 7.0))
        buffers += (np.full(8, -7, np.int32),)
        views = tuple(b[:cap] for b in buffers)
        generate(types, params, pos, rot, pairs, 0.01, views, counts)
        assert counts[0] == cap and counts[1] == total - cap
        for b in buffers:
            assert np.all(b[cap:] == b.flat[-1]), "written past the end"
        np.testing.assert_array_equal(buffers[3][:cap], full[3][:cap])


def test_only_the_passes_the_shapes_need_are_run():
    """A pass (a compiled kernel family) runs only when pairs of its family can exist: two closed-form shapes for the
    closed forms, a cylinder, cone or hull for GJK/EPA, a triangle mesh for the mesh kernels."""
    from contact_lab.core.rigid.collision.narrow_phase import _passes

    CYLINDER, CONVEX, MESH = 5, 7, 8
    assert _passes(np.array([PLANE, BOX, BOX], np.int32)) == ("primitive",)
    assert _passes(np.array([PLANE, BOX, CONVEX], np.int32)) == ("primitive", "convex")
    assert _passes(np.array([BOX, CONVEX], np.int32)) == ("convex",)  # one closed-form shape: no closed-form pair
    assert _passes(np.array([CYLINDER, MESH], np.int32)) == ("convex", "mesh")
    assert _passes(np.array([MESH], np.int32)) == ("mesh",)
