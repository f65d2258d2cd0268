"""The pure parts of the pre-bake validation against references: the overlap geometry against brute force, the
lattice estimate against the real lattice builder, the thresholds against the engines' own constants, findings."""

import json
import types

import numpy as np
import pytest
from contact_lab.addon import units
from contact_lab.addon.checks import overlap, validate
from contact_lab.addon.checks import physics as validate_physics
from contact_lab.addon.errors import BakeError
from contact_lab.core import config
from contact_lab.core.fem.lattice import tetrahedralize_lattice
from contact_lab.core.ipc import ipc_solver
from contact_lab.core.soft.world_solver import SoftSettings, resolved_contact_thickness

RNG_SEED = 20260612


def random_rotation(rng):
    q = rng.normal(size=4)
    return units.quat_to_matrix(q / np.linalg.norm(q))


def box(owner, centre, half, rotation=None):
    rotation = np.eye(3) if rotation is None else rotation
    return overlap.Solid(owner, "BOX", np.asarray(centre, float), rotation, np.asarray(half, float))


def sphere(owner, centre, radius):
    return overlap.Solid(owner, "SPHERE", np.asarray(centre, float), np.eye(3), np.full(3, radius), radius=radius)


def round_solid(owner, kind, centre, radius, half_height, rotation=None):
    """A capsule, cylinder or cone along the rotation's Z axis, with its enclosing box."""
    rotation = np.eye(3) if rotation is None else rotation
    extent_z = half_height + (radius if kind == "CAPSULE" else 0.0)
    half = np.array([radius, radius, extent_z])
    return overlap.Solid(owner, kind, np.asarray(centre, float), rotation, half, radius, half_height)


# exact support functions: the brute-force reference -----------------------------------------------------------


def support(solid, directions):
    """max over the solid of n·x for each direction n (N, 3), in closed form per shape: the reference, written
    independently of the code under test."""
    n = np.asarray(directions, float).reshape(-1, 3)
    c, r, hh = n @ solid.centre, solid.radius, solid.half_height
    along = n @ solid.rotation[:, 2]
    across = np.sqrt(np.clip(1.0 - along**2, 0.0, None))
    if solid.kind == "BOX":
        return c + np.abs(n @ solid.rotation) @ solid.half_extents
    if solid.kind == "SPHERE":
        return c + r
    if solid.kind == "CAPSULE":
        return c + np.abs(along) * hh + r
    if solid.kind == "CYLINDER":
        return c + np.abs(along) * hh + r * across
    assert solid.kind == "CONE"  # tip at +hh, base circle at -hh
    return np.maximum(c + along * hh, c - along * hh + r * across)


def sampled_depth(a, b, directions):
    """min over sampled directions of the projections' overlap: for convex solids an upper bound of the
    penetration depth that converges to it (the depth is the minimum over all directions) when they overlap, and
    of minus their distance when they do not (< 0: a separating direction was found)."""
    return float(np.min(support(a, directions) + support(b, -directions) - 0.0))


def fibonacci_directions(count):
    k = np.arange(count) + 0.5
    polar = np.arccos(1.0 - 2.0 * k / count)
    azimuth = np.pi * (1.0 + 5**0.5) * k
    return np.stack([np.cos(azimuth) * np.sin(polar), np.sin(azimuth) * np.sin(polar), np.cos(polar)], axis=1)


DIRECTIONS = fibonacci_directions(20000)


# broad phase ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, 1, 2, 50, 400])
def test_sort_and_sweep_finds_exactly_the_brute_force_pairs(count):
    """candidate_pairs returns the same pairs as testing every pair of boxes (touching counts)."""
    rng = np.random.default_rng(RNG_SEED + count)
    lower = rng.uniform(0.0, 10.0, size=(count, 3))
    upper = lower + rng.uniform(0.0, 1.5, size=(count, 3))
    upper[: count // 4, 2] = 10.0  # some tall boxes: many pairs along one axis
    if count > 3:
        lower[3] = [upper[2, 0], lower[2, 1], lower[2, 2]]  # exactly touching along x
        upper[3] = lower[3] + 1.0
    expected = sorted(
        (i, j)
        for i in range(count)
        for j in range(i + 1, count)
        if np.all(lower[i] <= upper[j]) and np.all(lower[j] <= upper[i])
    )
    got = [tuple(p) for p in overlap.candidate_pairs(lower, upper)]
    assert got == expected
    if count >= 50:
        assert len(expected) > count // 5  # the test exercises real pairs


# oriented boxes ---------------------------------------------------------------------------------------------


def test_box_depth_is_the_minimum_projection_overlap_over_all_directions():
    """obb_depth of random overlapping boxes equals the penetration depth found by brute force over 20,000
    directions (it is the exact minimum, so never above the sampled one and within the sampling's resolution of
    it); for separated boxes it is negative, no more than their distance."""
    rng = np.random.default_rng(RNG_SEED)
    overlapping = separated = 0
    for _ in range(60):
        a = box(0, rng.normal(scale=0.4, size=3), rng.uniform(0.1, 0.8, 3), random_rotation(rng))
        b = box(1, rng.normal(scale=0.4, size=3), rng.uniform(0.1, 0.8, 3), random_rotation(rng))
        depth = overlap.pair_depth(a, b)
        reference = sampled_depth(a, b, DIRECTIONS)
        if reference > 0.0:  # overlapping: the exact depth, never above the best sampled direction's
            assert depth <= reference + 1e-12
            assert depth == pytest.approx(reference, abs=0.06)
            overlapping += 1
        elif reference < -0.06:  # apart: the best axis separates them too (by no more than their distance)
            assert reference - 0.06 <= depth < 0.0
            separated += 1
    assert overlapping > 10 and separated > 5


def test_box_overlap_sign_matches_point_sampling():
    """Where obb_depth says two boxes overlap by more than the sampling step, a grid of points of one box has
    points inside the other; where it says they are apart, none of them is inside."""
    rng = np.random.default_rng(RNG_SEED + 1)
    grid = np.stack(np.meshgrid(*[np.linspace(-1, 1, 21)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    for _ in range(40):
        a = box(0, rng.normal(scale=0.5, size=3), rng.uniform(0.2, 0.7, 3), random_rotation(rng))
        b = box(1, rng.normal(scale=0.5, size=3), rng.uniform(0.2, 0.7, 3), random_rotation(rng))
        points = (grid * a.half_extents) @ a.rotation.T + a.centre
        local = (points - b.centre) @ b.rotation
        inside = np.all(np.abs(local) <= b.half_extents, axis=1).any()
        depth = overlap.pair_depth(a, b)
        if depth > 0.1:
            assert inside
        if depth < 0.0:
            assert not inside


# exact-enough pairs -------------------------------------------------------------------------------------------


def test_sphere_pairs_are_exact():
    """Sphere–sphere and sphere–box depths equal the closed forms (centre distances, the closest box point)."""
    assert overlap.pair_depth(sphere(0, [0, 0, 0], 0.5), sphere(1, [0.8, 0, 0], 0.4)) == pytest.approx(0.1)
    assert overlap.pair_depth(sphere(0, [0, 0, 0], 0.5), sphere(1, [2.0, 0, 0], 0.4)) == pytest.approx(-1.1)
    cube = box(1, [0, 0, 0], [0.5, 0.5, 0.5])
    assert overlap.pair_depth(sphere(0, [0, 0, 0.8], 0.5), cube) == pytest.approx(0.2)  # through a face
    corner = np.array([0.5, 0.5, 0.5]) + 0.3 / np.sqrt(3.0)
    assert overlap.pair_depth(cube, sphere(0, corner, 0.4)) == pytest.approx(0.1)  # at a corner
    assert overlap.pair_depth(sphere(0, [0.1, 0, 0], 0.2), cube) == pytest.approx(0.6)  # centre inside


ROUND_CASES = [
    # (solid a, solid b, exact depth): a round shape's deepest point pokes into the other along one axis
    (round_solid(0, "CAPSULE", [0, 0, 1.2], 0.3, 0.4), box(1, [0, 0, 0], [0.5, 0.5, 0.5]), 0.0),  # touching
    (round_solid(0, "CAPSULE", [0, 0, 1.1], 0.3, 0.4), box(1, [0, 0, 0], [0.5, 0.5, 0.5]), 0.1),
    (round_solid(0, "CONE", [0, 0, -0.8], 0.4, 0.4), box(1, [0, 0, 0], [0.5, 0.5, 0.5]), 0.1),  # tip up into it
    (round_solid(0, "CYLINDER", [0.75, 0, 0], 0.3, 0.5), box(1, [0, 0, 0], [0.5, 0.5, 0.5]), 0.05),
    (round_solid(0, "CAPSULE", [0.5, 0, 0], 0.3, 0.5), round_solid(1, "CYLINDER", [0, 0, 0], 0.3, 0.5), 0.1),
    (sphere(0, [0, 0, 0.95], 0.5), round_solid(1, "CONE", [0, 0, 0], 0.5, 0.5), 0.05),  # on the tip
]


@pytest.mark.parametrize(("a", "b", "exact"), ROUND_CASES)
def test_round_shapes_give_the_depth_within_the_tessellation_sag(a, b, exact):
    """The sample-point test finds the depth of a round shape poking into another to within the tessellation's
    sag (1.9 % of the radius), and never more than the exact depth."""
    depth = overlap.pair_depth(a, b)
    assert exact - 0.02 * max(a.radius, b.radius, 0.3) - 1e-9 <= depth <= exact + 1e-9


def test_sample_test_never_reports_separated_solids():
    """Random separated convex pairs (a separating direction exists, brute force) give no overlap: the round shapes
    are tessellated inside their true surface."""
    rng = np.random.default_rng(RNG_SEED + 2)
    kinds = ["CAPSULE", "CYLINDER", "CONE"]
    checked = 0
    for k in range(120):
        a = round_solid(0, kinds[k % 3], rng.normal(scale=0.3, size=3), rng.uniform(0.1, 0.4), rng.uniform(0.05, 0.5),
                        random_rotation(rng))  # fmt: skip
        b = (
            box(1, rng.normal(scale=0.3, size=3), rng.uniform(0.1, 0.5, 3), random_rotation(rng))
            if k % 2
            else round_solid(1, kinds[(k + 1) % 3], rng.normal(scale=0.3, size=3), 0.3, 0.3, random_rotation(rng))
        )
        reference = sampled_depth(a, b, DIRECTIONS)
        depth = overlap.pair_depth(a, b)
        if reference < 0.0:
            checked += 1
            assert depth <= 0.0
        else:  # overlapping: the sample test gives a lower bound of the (sampled) depth
            assert depth <= reference + 1e-9
    assert checked > 20


def test_face_to_face_meshes_are_found():
    """Two cube meshes overlapping face to face (every vertex of each on the other's boundary) are found through
    their edge midpoints and face centres."""
    a, b = box(0, [0, 0, 0], [0.1, 0.1, 0.1]), box(1, [0.1, 0, 0], [0.1, 0.1, 0.1])
    meshes = []
    for solid in (a, b):
        overlap.surface(solid)
        meshes.append(overlap.Solid(solid.owner, "MESH", solid.centre, solid.rotation, solid.half_extents,
                                    vertices=solid.vertices, triangles=solid.triangles))  # fmt: skip
    assert overlap.pair_depth(*meshes) == pytest.approx(0.1)


def test_planes_and_owners():
    """Anything below a plane overlaps it by its lowest point's depth (exact); solids of one body and pairs of
    two fixed bodies are never reported; the deepest pair comes first."""
    plane = overlap.Solid(9, "PLANE", np.zeros(3), np.eye(3), np.zeros(3))
    tilted = random_rotation(np.random.default_rng(RNG_SEED + 3))
    cone = round_solid(1, "CONE", [0, 0, 0.3], 0.5, 0.5, tilted)
    axis = tilted[:, 2]
    tip = cone.centre[2] + 0.5 * axis[2]
    rim = cone.centre[2] - 0.5 * axis[2] - 0.5 * np.sqrt(1.0 - axis[2] ** 2)  # the base circle's lowest point
    assert overlap.plane_depth(plane, cone) == pytest.approx(-min(tip, rim))
    solids = [plane, box(1, [0, 0, 0.4], [0.5, 0.5, 0.5]), box(1, [0.2, 0, 0.4], [0.5, 0.5, 0.5]),
              box(2, [0.9, 0, 0.45], [0.5, 0.5, 0.5]), box(7, [5, 0, -1], [0.5, 0.5, 0.5])]  # fmt: skip
    movable = np.array([False, True, True, True, False])
    found = overlap.overlapping_pairs(solids, tolerance=1e-3, movable=movable)
    pairs = [(i, j) for i, j, _ in found]
    assert (1, 2) not in pairs  # one body's two boxes
    assert (0, 4) not in pairs  # the plane and a fixed box below it
    assert [d for _, _, d in found] == sorted((d for _, _, d in found), reverse=True)
    assert {(0, 1), (0, 2), (0, 3), (1, 3), (2, 3)} == set(pairs)
    np.testing.assert_allclose(dict(((i, j), d) for i, j, d in found)[(0, 1)], 0.1)


# point queries --------------------------------------------------------------------------------------------


def test_winding_numbers_and_surface_distances_against_brute_force():
    """Winding numbers of a closed tessellated capsule are 1 inside and 0 outside (analytic inside test); distances
    to its surface equal the minimum over a dense sampling of its triangles."""
    capsule = overlap.surface(
        round_solid(0, "CAPSULE", [0.1, -0.2, 0.3], 0.4, 0.5, random_rotation(np.random.default_rng(5)))
    )
    rng = np.random.default_rng(RNG_SEED + 4)
    points = capsule.centre + rng.uniform(-1.2, 1.2, size=(300, 3))
    winding = overlap.winding_numbers(points, capsule.vertices, capsule.triangles)
    local = (points - capsule.centre) @ capsule.rotation
    axis_distance = np.linalg.norm(local - np.clip(local[:, 2], -0.5, 0.5)[:, None] * [0, 0, 1], axis=1)
    clear = np.abs(axis_distance - 0.4) > 0.02  # away from the sag between the true and the tessellated surface
    np.testing.assert_allclose(winding[clear], (axis_distance[clear] < 0.4).astype(float), atol=1e-9)
    corners = capsule.vertices[capsule.triangles]
    u, v = np.meshgrid(np.linspace(0, 1, 25), np.linspace(0, 1, 25))
    keep = (u + v) <= 1.0
    bary = np.stack([1 - u[keep] - v[keep], u[keep], v[keep]], axis=1)
    dense = np.einsum("sk,tkc->tsc", bary, corners).reshape(-1, 3)
    reference = np.linalg.norm(points[:40, None] - dense[None], axis=2).min(axis=1)
    got = overlap.surface_distances(points[:40], capsule.vertices, capsule.triangles)
    assert np.all(got <= reference + 1e-12)
    np.testing.assert_allclose(got, reference, atol=0.01)


# lattice estimate ---------------------------------------------------------------------------------------------


def _cube_mesh():
    solid = overlap.surface(box(0, [0, 0, 0], [0.5, 0.5, 0.5]))
    return solid.vertices, solid.triangles


def _sphere_mesh():
    solid = overlap.surface(sphere(0, [0, 0, 0], 0.5))
    return solid.vertices, solid.triangles


def _torus_mesh(major=0.5, minor=0.15, n=24, m=12):
    u, w = np.meshgrid(np.linspace(0, 2 * np.pi, n, endpoint=False), np.linspace(0, 2 * np.pi, m, endpoint=False),
                       indexing="ij")  # fmt: skip
    ring = major + minor * np.cos(w)
    vertices = np.stack([ring * np.cos(u), ring * np.sin(u), minor * np.sin(w)], axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    a, b = i * m + j, ((i + 1) % n) * m + j
    c, d = ((i + 1) % n) * m + (j + 1) % m, i * m + (j + 1) % m
    return vertices, np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])


@pytest.mark.parametrize(
    ("mesh", "scale"),
    [
        (_cube_mesh, (1, 1, 1)),
        (_cube_mesh, (1, 1, 0.1)),
        (_sphere_mesh, (1, 1, 1)),
        (_sphere_mesh, (1, 1, 0.3)),
        (_torus_mesh, (1, 1, 1)),
    ],  # fmt: skip
)
@pytest.mark.parametrize("resolution", [8, 16, 24])
def test_lattice_estimate_against_the_builder(mesh, scale, resolution):
    """The estimated tet count is within −15 % / +120 % of the tets the real lattice builder makes, and never above
    the grid; the grid's cell size is the builder's."""
    vertices, triangles = mesh()
    vertices = vertices * np.asarray(scale, float)
    built = tetrahedralize_lattice(vertices, triangles, resolution=resolution)
    estimate = validate_physics.estimate_lattice(vertices, triangles, resolution)
    assert estimate.cell_size == pytest.approx(built.cell_size)
    assert estimate.grid_cells == int(np.prod(built.grid_shape))
    assert 0.85 * built.tet_count <= estimate.tets <= 2.2 * built.tet_count
    assert estimate.cells <= estimate.grid_cells


def test_lattice_estimate_of_the_hang():
    """The issue's hang, resolution 64 on a cube, is far above the hard cap; the default resolution 12 is far below
    the warning."""
    vertices, triangles = _cube_mesh()
    assert validate_physics.estimate_lattice(0.2 * vertices, triangles, 64).tets > validate_physics.LATTICE_TET_LIMIT
    assert validate_physics.estimate_lattice(0.2 * vertices, triangles, 12).tets < validate_physics.LATTICE_TET_WARNING


# thresholds come from the engines --------------------------------------------------------------------------------


def test_thresholds_follow_the_engines_constants():
    """Tiny-body and overlap thresholds derive from the rigid slop and margin; the soft and IPC layers are computed
    as the engines compute them."""
    assert validate_physics.TINY_ERROR == config.DEFAULT_PENETRATION_SLOP
    assert validate_physics.TINY_WARNING == 10.0 * config.DEFAULT_PENETRATION_SLOP
    assert validate_physics.OVERLAP_TOLERANCE == 2.0 * config.DEFAULT_PENETRATION_SLOP
    assert validate_physics.MARGIN == config.DEFAULT_CONTACT_MARGIN
    assert validate_physics.IPC_DHAT_FRACTION == ipc_solver.AUTOMATIC_DHAT_FRACTION
    for extent in (1e-6, 1e-3, 0.05, 2.0):
        world = types.SimpleNamespace(length_scale=extent)
        expected = max(validate_physics.SOFT_MIN_THICKNESS, validate_physics.SOFT_THICKNESS_FRACTION * extent)
        assert resolved_contact_thickness(world, SoftSettings()) == pytest.approx(expected)
    assert validate_physics.FAR == pytest.approx(2.0**23 * config.DEFAULT_PENETRATION_SLOP)
    # single-precision spacing reaches the slop between FAR and twice FAR
    assert (
        np.spacing(np.float32(validate_physics.FAR))
        <= validate_physics.SLOP
        < np.spacing(np.float32(2.0 * validate_physics.FAR))
    )


# findings ----------------------------------------------------------------------------------------------------


def test_raise_errors_names_the_first_object_and_lists_the_rest():
    """Errors become one BakeError (first object named, up to six listed, the rest counted); warnings alone pass."""
    findings = [validate.warning("W", "'W': heavy", "lighten it")]
    validate.raise_errors(findings)
    findings += [validate.error(None, "the scene's Unit Scale is infinite", "set it")]
    findings += [validate.error(f"B{k}", f"'B{k}': its scale is zero on axis X", "scale it") for k in range(7)]
    with pytest.raises(BakeError) as info:
        validate.raise_errors(findings)
    text = str(info.value)
    assert text.startswith("The scene's Unit Scale is infinite: set it; 'B0': its scale is zero on axis X: scale it")
    assert info.value.object_name == "B0"
    assert "'B4'" in text and "'B5'" not in text and text.endswith("and 2 more problem(s)")


def test_summary_and_json_round_trip():
    """The one-line summary counts by level (WARNING level when anything is wrong, never ERROR); the stored JSON
    reads back to the same findings."""
    assert validate.summary([]) == ("INFO", "Check Scene: no problems found")
    findings = [
        validate.error("Box", "'Box': its rotation is not a number (NaN) on Y", "type a value"),
        validate.warning("A", "'A' and 'B' overlap by 5 cm at frame 1", "move them apart"),
        validate.info("Jelly", "'Jelly': lattice resolution 12 gives about 15,000 tets"),
    ]
    level, text = validate.summary(findings)
    assert level == "WARNING"
    assert text.startswith("Check Scene: 1 error, 1 warning (the bake will refuse to run); 'Box': its rotation")
    counts, back = validate.from_json(validate.to_json(findings, "RIGID"))
    assert back == findings and counts == {"ERROR": 1, "WARNING": 1, "INFO": 1}
    assert json.loads(validate.to_json(findings, "SOFT"))["engine"] == "SOFT"
    assert validate.from_json("not json") == ({}, [])
