"""MESH shape data (core/rigid/mesh.py, mesh_sdf.py, mesh_queries.py) against brute-force numpy references.

Signed distance fields against the brute-force point-triangle distance signed by the generalised winding number
(tests/core/mesh_reference.py: a different algorithm from the core's scan-line crossing counts), BVH queries
against testing every triangle, edge neighbours, surface samples, and the builder's validation and mass
properties of MESH shapes.
"""

import functools

import mesh_reference as mr
import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder
from contact_lab.core.errors import ModelError
from contact_lab.core.rigid.mesh import (
    BVH_LEAF_MAX,
    SAMPLE_CELLS,
    empty_mesh_arrays,
    pack_meshes,
    surface_samples,
    validated_mesh,
)
from contact_lab.core.rigid.mesh_queries import bvh_nearest_triangle, bvh_query_box, closest_point_triangle, sdf_eval
from contact_lab.core.rigid.mesh_sdf import SDF_BAND_CELLS, SDF_CELLS

MARGIN = 0.01
MESHES = {
    "box": lambda: mr.box_mesh([0.5, 0.3, 0.2]),
    "torus": lambda: mr.torus_mesh(0.4, 0.15),
    "suzanne": mr.suzanne,
}


def packed(vertices, triangles, solid=True, margin=MARGIN):
    """MeshArrays of one mesh."""
    return pack_meshes([validated_mesh(vertices, triangles, solid=solid)], margin)


def grid_of(meshes, m=0):
    """The ``sdf_eval`` layout tuple of mesh m."""
    o, d = meshes.mesh_sdf_origin[m], meshes.mesh_sdf_dims[m]
    return (int(meshes.mesh_sdf_start[m]), *map(float, o), float(meshes.mesh_sdf_cell[m]), *map(int, d),
            float(meshes.mesh_sdf_band[m]))  # fmt: skip


def field(meshes, points, m=0):
    """``sdf_eval`` at each point: (phi (P,), gradient (P, 3))."""
    grid = grid_of(meshes, m)
    out = [sdf_eval(meshes.mesh_sdf_values, grid, tuple(map(float, p))) for p in points]
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


def bvh_arrays(meshes):
    return (meshes.mesh_node_lower, meshes.mesh_node_upper, meshes.mesh_node_right, meshes.mesh_node_first,
            meshes.mesh_node_count, meshes.mesh_leaf_tris)  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# Signed distance field
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MESHES)
def test_sdf_grid_values_equal_brute_force_signed_distance(name):
    """Equal the brute-force signed distance (winding-number sign) at grid points to 1e-12, sign included."""
    v, t = MESHES[name]()
    meshes = packed(v, t)
    dims = meshes.mesh_sdf_dims[0]
    values = meshes.mesh_sdf_values.reshape(dims)
    idx = np.random.default_rng(1).integers(0, dims, size=(3000, 3))
    points = meshes.mesh_sdf_origin[0] + idx * meshes.mesh_sdf_cell[0]
    expected = mr.signed_distances(points, v, t)
    got = values[idx[:, 0], idx[:, 1], idx[:, 2]]
    np.testing.assert_allclose(np.abs(got), np.abs(expected), atol=1e-12)
    decided = np.abs(expected) > 1e-9
    np.testing.assert_array_equal(np.sign(got[decided]), np.sign(expected[decided]))
    assert (expected < -1e-9).sum() > 100 and (expected > 1e-9).sum() > 100  # both sides sampled


@pytest.mark.parametrize("name", MESHES)
def test_sdf_interpolates_within_half_a_cell_and_has_unit_gradient(name):
    """Interpolated values within half a cell of the brute force anywhere in the grid; unit gradients that follow
    the brute-force gradient a cell or more outside the surface (median within 2 degrees, 90 % within 10; near
    edges and thin parts the trilinear gradient turns, which ``field_distance`` corrects at contacts)."""
    v, t = MESHES[name]()
    meshes = packed(v, t)
    cell = meshes.mesh_sdf_cell[0]
    rng = np.random.default_rng(2)
    points = rng.uniform(v.min(0) - 2 * cell, v.max(0) + 2 * cell, size=(1500, 3))
    phi, grad = field(meshes, points)
    expected = mr.signed_distances(points, v, t)
    assert np.abs(phi - expected).max() < 0.5 * cell
    np.testing.assert_allclose(np.linalg.norm(grad, axis=1), 1.0, atol=1e-12)
    h = 1e-4 * cell
    outside = expected > cell  # a cell or more outside: the brute force's sign is + at every neighbour +-h
    far = points[outside]
    unsigned = functools.partial(mr.point_triangle_distances, vertices=v, triangles=t)
    fd = np.stack([(unsigned(far + h * e) - unsigned(far - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    off = np.linalg.norm(fd, axis=1) > 0.99  # off the medial axis
    angle = np.degrees(np.arccos(np.clip(np.einsum("ij,ij->i", grad[outside][off], fd[off])
                                         / np.linalg.norm(fd[off], axis=1), -1, 1)))  # fmt: skip
    assert off.sum() > 200 and np.median(angle) < 2.0 and np.percentile(angle, 90) < 10.0


def test_sdf_is_exact_near_flat_faces():
    """Reproduce the plane distance exactly (1e-12) within a box face's slab, away from its edges."""
    v, t = mr.box_mesh([0.5, 0.3, 0.2])
    meshes = packed(v, t)
    rng = np.random.default_rng(3)
    points = np.c_[rng.uniform(-0.3, 0.3, 200), rng.uniform(-0.1, 0.1, 200), rng.uniform(0.15, 0.25, 200)]
    phi, grad = field(meshes, points)
    np.testing.assert_allclose(phi, points[:, 2] - 0.2, atol=1e-12)
    np.testing.assert_allclose(grad, np.tile([0, 0, 1.0], (200, 1)), atol=1e-12)


def test_sdf_layout_covers_the_margin_and_far_points_are_lower_bounds():
    """Use SDF_CELLS cells on the longest side and a band of max(3 cells, margin + cell); outside the grid return a
    lower bound of the true distance that grows with it."""
    v, t = mr.box_mesh([0.5, 0.3, 0.2])
    for margin in (0.01, 0.2):
        meshes = packed(v, t, margin=margin)
        cell, band = meshes.mesh_sdf_cell[0], meshes.mesh_sdf_band[0]
        assert cell == pytest.approx(1.0 / SDF_CELLS)
        assert band == pytest.approx(max(SDF_BAND_CELLS * cell, margin + cell))
        lo = meshes.mesh_sdf_origin[0]
        hi = lo + (meshes.mesh_sdf_dims[0] - 1) * cell
        assert np.all(lo <= v.min(0) - band + 1e-12) and np.all(hi >= v.max(0) + band - 1e-12)
    far = np.array([[3.0, 0.0, 0.0], [0.0, -2.0, 1.0], [4.0, 4.0, 4.0]])
    phi, grad = field(meshes, far)
    true = mr.signed_distances(far, v, t)
    assert np.all(phi <= true + 1e-12) and np.all(phi > band)
    np.testing.assert_allclose(np.linalg.norm(grad, axis=1), 1.0)


def test_sdf_sign_survives_grid_lines_through_edges_and_corners():
    """Sign a cube whose faces, edges and corners lie exactly on grid lines (the scan-line tie rules) and two
    overlapping cubes (winding 2 inside both) plus a cavity (an inward-wound inner cube) like the reference."""
    v, t = mr.box_mesh([0.48, 0.48, 0.48], subdivisions=3)  # cell 0.02, band 0.06: vertices on grid points
    meshes = packed(v, t)
    assert meshes.mesh_sdf_cell[0] == pytest.approx(0.02)
    values = meshes.mesh_sdf_values.reshape(meshes.mesh_sdf_dims[0])
    points = meshes.mesh_sdf_origin[0] + np.stack(np.indices(values.shape), -1).reshape(-1, 3) * 0.02
    inside = np.all(np.abs(points) < 0.48 - 1e-9, axis=1)
    outside = np.any(np.abs(points) > 0.48 + 1e-9, axis=1)
    flat = values.reshape(-1)
    assert np.all(flat[inside] < 0) and np.all(flat[outside] > 0)
    # two overlapping cubes, and a cube with an inward-wound cavity
    a, ta = mr.box_mesh([0.3, 0.3, 0.3])
    b, tb = mr.box_mesh([0.3, 0.3, 0.3])
    cavity, tc = mr.box_mesh([0.15, 0.15, 0.15])
    for verts, tris in (
        (np.vstack([a, b + [0.2, 0.1, 0.05]]), np.vstack([ta, tb + len(a)])),
        (np.vstack([a, cavity]), np.vstack([ta, tc[:, ::-1] + len(a)])),
    ):
        meshes = packed(verts, tris)
        idx = np.random.default_rng(4).integers(0, meshes.mesh_sdf_dims[0], size=(2000, 3))
        points = meshes.mesh_sdf_origin[0] + idx * meshes.mesh_sdf_cell[0]
        got = meshes.mesh_sdf_values.reshape(meshes.mesh_sdf_dims[0])[idx[:, 0], idx[:, 1], idx[:, 2]]
        winding = mr.winding_numbers(points, verts, tris)
        decided = np.abs(got) > 1e-9
        np.testing.assert_array_equal(got[decided] < 0, winding[decided] > 0.5)
        assert (winding > 1.5).any() or (np.abs(winding) < 0.5).sum() > 0


# ---------------------------------------------------------------------------------------------------------------
# BVH and closest points
# ---------------------------------------------------------------------------------------------------------------


def terrain(n=24, seed=5):
    """Open height-field mesh over [-1, 1]^2 with 2 n^2 triangles."""
    rng = np.random.default_rng(seed)
    x, y = np.meshgrid(np.linspace(-1, 1, n + 1), np.linspace(-1, 1, n + 1), indexing="ij")
    z = 0.1 * np.sin(3 * x) * np.cos(2 * y) + 0.01 * rng.normal(size=x.shape)
    v = np.stack([x, y, z], -1).reshape(-1, 3)
    return v, mr.grid_triangles(n)


def test_bvh_is_a_valid_deterministic_tree():
    """Hold every triangle exactly once, at most BVH_LEAF_MAX per leaf, every box containing its children; the
    same input gives the same arrays."""
    v, t = mr.suzanne()
    meshes = packed(v, t, solid=False)
    again = packed(v, t, solid=False)
    for a, b in zip(meshes, again, strict=True):
        np.testing.assert_array_equal(a, b)
    right, first, count = meshes.mesh_node_right, meshes.mesh_node_first, meshes.mesh_node_count
    lower, upper = meshes.mesh_node_lower, meshes.mesh_node_upper
    leaves = right < 0
    assert np.all(count[leaves] >= 1) and np.all(count[leaves] <= BVH_LEAF_MAX) and np.all(count[~leaves] == 0)
    pairs = zip(first[leaves], count[leaves], strict=True)
    owned = np.concatenate([meshes.mesh_leaf_tris[f : f + c] for f, c in pairs])
    np.testing.assert_array_equal(np.sort(owned), np.arange(len(meshes.mesh_tris)))
    corners = meshes.mesh_verts[meshes.mesh_tris]
    for n in np.flatnonzero(~leaves):
        for child in (n + 1, right[n]):
            assert np.all(lower[n] <= lower[child]) and np.all(upper[child] <= upper[n])
    for n in np.flatnonzero(leaves):
        tris = corners[meshes.mesh_leaf_tris[first[n] : first[n] + count[n]]]
        assert np.all(lower[n] <= tris.min(axis=(0, 1))) and np.all(tris.max(axis=(0, 1)) <= upper[n])


@pytest.mark.parametrize("mesh", ["suzanne", "terrain"])
def test_bvh_box_query_finds_exactly_the_overlapping_triangles(mesh):
    """Return (in batches through a small buffer) a superset of the triangles whose box overlaps the query box,
    and only triangles from overlapping leaves; filtered by triangle boxes it equals the brute-force set."""
    v, t = mr.suzanne() if mesh == "suzanne" else terrain()
    meshes = packed(v, t, solid=False)
    corners = meshes.mesh_verts[meshes.mesh_tris]
    tri_lo, tri_hi = corners.min(axis=1), corners.max(axis=1)
    leaf_of = np.zeros(len(t), int)
    for n in np.flatnonzero(meshes.mesh_node_right < 0):
        first, count = meshes.mesh_node_first[n], meshes.mesh_node_count[n]
        leaf_of[meshes.mesh_leaf_tris[first : first + count]] = n
    rng = np.random.default_rng(6)
    stack, out = np.zeros(128, np.int32), np.zeros(7, np.int32)
    for _ in range(200):
        centre = rng.uniform(v.min(0), v.max(0))
        half = rng.uniform(0.01, 0.4, 3)
        lo, hi = tuple(centre - half), tuple(centre + half)
        found, top = [], 1
        stack[0] = 0
        while top > 0:
            count, top = bvh_query_box(*bvh_arrays(meshes), stack, top, lo, hi, out)
            found += out[:count].tolist()
        assert len(found) == len(set(found))
        brute = np.flatnonzero(np.all(tri_lo <= hi, axis=1) & np.all(tri_hi >= lo, axis=1))
        found = np.array(sorted(found), int)
        overlapping = found[np.all(tri_lo[found] <= hi, axis=1) & np.all(tri_hi[found] >= lo, axis=1)]
        np.testing.assert_array_equal(overlapping, brute)
        leaves = leaf_of[found]
        assert np.all(meshes.mesh_node_lower[leaves] <= hi) and np.all(meshes.mesh_node_upper[leaves] >= lo)


@pytest.mark.parametrize("mesh", ["suzanne", "terrain"])
def test_bvh_nearest_triangle_matches_brute_force(mesh):
    """Find the brute-force nearest distance (1e-12) with a closest point on that triangle; nothing beyond the
    radius."""
    v, t = mr.suzanne() if mesh == "suzanne" else terrain()
    meshes = packed(v, t, solid=False)
    rng = np.random.default_rng(7)
    points = rng.uniform(v.min(0) - 0.3, v.max(0) + 0.3, size=(400, 3))
    expected = mr.point_triangle_distances(points, v, t)
    stack = np.zeros(128, np.int32)
    for p, d in zip(points, expected, strict=True):
        args = (*bvh_arrays(meshes), meshes.mesh_verts, meshes.mesh_tris, meshes.mesh_tri_normal, np.int32(0))
        tri, q, feature, dist = bvh_nearest_triangle(*args, tuple(p), 1e30, stack)
        assert dist == pytest.approx(d, abs=1e-12)
        assert np.linalg.norm(p - np.array(q)) == pytest.approx(d, abs=1e-12)
        a, b, c = meshes.mesh_verts[meshes.mesh_tris[tri]]
        q2, _ = closest_point_triangle(tuple(p), tuple(a), tuple(b), tuple(c))
        np.testing.assert_allclose(q, q2, atol=1e-12)
        none = bvh_nearest_triangle(*args, tuple(p), 0.999 * d, stack)
        assert none[0] == -1


def test_closest_point_features():
    """Report the face, each edge and each corner region of Ericson's closest point with its code."""
    a, b, c = (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)
    cases = {
        (0.2, 0.2, 1.0): ((0.2, 0.2, 0.0), 0),
        (0.5, -1.0, 0.3): ((0.5, 0.0, 0.0), 1),
        (1.0, 1.0, -0.2): ((0.5, 0.5, 0.0), 2),
        (-1.0, 0.5, 0.0): ((0.0, 0.5, 0.0), 3),
        (-1.0, -1.0, 0.5): (a, 4),
        (2.0, -0.5, 0.0): (b, 5),
        (-0.5, 2.0, 0.0): (c, 6),
    }
    for p, (q, feature) in cases.items():
        got_q, got_feature = closest_point_triangle(p, a, b, c)
        np.testing.assert_allclose(got_q, q, atol=1e-15)
        assert got_feature == feature


# ---------------------------------------------------------------------------------------------------------------
# Neighbours, closedness, samples
# ---------------------------------------------------------------------------------------------------------------


def test_edge_neighbours_and_closedness():
    """Give every edge of a closed box its neighbour's normal (turned for a flipped neighbour); zero on the open
    bowl's rim; flag closed outward meshes only."""
    v, t = mr.box_mesh([0.5, 0.3, 0.2])
    meshes = packed(v, t, solid=False)
    normals = meshes.mesh_tri_normal
    corners = meshes.mesh_verts[meshes.mesh_tris]
    for tri in range(len(t)):
        for k in range(3):
            m = meshes.mesh_tri_edge_normal[tri, k]
            assert np.linalg.norm(m) == pytest.approx(1.0)
            # the neighbour shares the edge: some other triangle with that normal has both corners
            e = {tuple(corners[tri, k]), tuple(corners[tri, (k + 1) % 3])}
            others = [o for o in range(len(t)) if o != tri and e <= set(map(tuple, corners[o]))]
            assert len(others) == 1 and np.allclose(normals[others[0]], m)
    assert meshes.mesh_closed[0] == 1
    flipped = t.copy()
    flipped[0] = flipped[0, ::-1]
    meshes = packed(v, flipped, solid=False)
    assert meshes.mesh_closed[0] == 0
    # every neighbour of the flipped triangle is now wound the other way: its normal is stored negated, and the
    # coplanar one (same face of the box) then points to the flipped triangle's side
    corners = meshes.mesh_verts[meshes.mesh_tris]
    for k in range(3):
        e = {tuple(corners[0, k]), tuple(corners[0, (k + 1) % 3])}
        other = [o for o in range(1, len(t)) if e <= set(map(tuple, corners[o]))][0]
        np.testing.assert_allclose(meshes.mesh_tri_edge_normal[0, k], -meshes.mesh_tri_normal[other])
    assert np.sum(np.einsum("kj,j->k", meshes.mesh_tri_edge_normal[0], meshes.mesh_tri_normal[0]) > 0.999) == 1
    bv, bt = mr.bowl_mesh(0.5)
    bowl = packed(bv, bt, solid=False)
    rim = np.linalg.norm(bowl.mesh_tri_edge_normal, axis=2) == 0
    assert bowl.mesh_closed[0] == 0 and rim.sum() == 48  # one free edge per rim triangle
    assert packed(v, t[:, ::-1], solid=False).mesh_closed[0] == 0  # inward-wound


def test_surface_samples_cover_the_surface():
    """Put every vertex and only surface points in the samples, every surface point within one spacing of one."""
    v, t = mr.box_mesh([0.5, 0.3, 0.2])
    samples = surface_samples(v, t)
    np.testing.assert_allclose(mr.point_triangle_distances(samples, v, t), 0.0, atol=1e-12)
    assert {tuple(p) for p in v} <= {tuple(p) for p in samples}
    spacing = 1.0 / SAMPLE_CELLS
    rng = np.random.default_rng(8)
    tri = rng.integers(0, len(t), 2000)
    w = rng.dirichlet(np.ones(3), 2000)
    surface = np.einsum("ij,ijk->ik", w, v[t[tri]])
    nearest = np.min(np.linalg.norm(surface[:, None] - samples[None], axis=2), axis=1)
    assert nearest.max() < spacing
    assert len(surface_samples(*mr.suzanne())) < 2 * len(mr.suzanne()[0])  # a fine mesh: mostly its vertices


def test_empty_mesh_arrays_have_kernel_dtypes():
    """Keep one Numba specialization: an empty model's arrays have the dtypes of a packed one."""
    empty = empty_mesh_arrays()
    full = packed(*mr.box_mesh([0.1, 0.1, 0.1]))
    for a, b in zip(empty, full, strict=True):
        assert a.dtype == b.dtype and a.ndim == b.ndim and a.flags.c_contiguous


# ---------------------------------------------------------------------------------------------------------------
# Builder
# ---------------------------------------------------------------------------------------------------------------


def test_builder_accepts_soups_on_passive_bodies_and_rejects_open_or_inward_active_meshes():
    """Accept an open bowl on a kinematic body; refuse an open or inward-wound mesh on a dynamic body, naming it."""
    bv, bt = mr.bowl_mesh(0.5)
    b = ModelBuilder()
    b.add_shape_mesh(b.add_body(kind=BodyKind.KINEMATIC, label="bowl"), bv, bt)
    with pytest.raises(ModelError, match="cup.*closed"):
        b.add_shape_mesh(b.add_body(label="cup"), bv, bt)
    v, t = mr.box_mesh([0.1, 0.1, 0.1])
    with pytest.raises(ModelError, match="inside out.*volume|volume"):
        b.add_shape_mesh(b.add_body(label="inside out"), v, t[:, ::-1])
    with pytest.raises(ModelError, match="outside"):
        b.add_shape_mesh(b.add_body(label="bad"), v, t + 100)
    with pytest.raises(ModelError, match="NaN"):
        b.add_shape_mesh(b.add_body(label="nan", kind=BodyKind.KINEMATIC), v * np.nan, t)


def test_builder_packs_meshes_and_derives_inertia_by_volume_integration():
    """Index MESH shapes into Model.meshes (fields only for dynamic ones) and give a mesh cube the inertia of the
    BOX; an explicit inertia is kept."""
    v, t = mr.box_mesh([0.2, 0.3, 0.4])
    b = ModelBuilder()
    ground = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(ground)
    cube = b.add_body(pos=(0, 0, 1), mass=3.0)
    b.add_shape_mesh(cube, v, t)
    box = b.add_body(pos=(2, 0, 1), mass=3.0)
    b.add_shape_box(box, (0.2, 0.3, 0.4))
    given = b.add_body(pos=(4, 0, 1), mass=3.0, inertia=np.diag([1.0, 2.0, 3.0]))
    b.add_shape_mesh(given, v, t)
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_mesh(floor, *terrain(4))
    m = b.finalize()
    np.testing.assert_allclose(m.body_inertia_local[cube], m.body_inertia_local[box], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(m.body_inertia_local[given], np.diag([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(m.shape_mesh, [-1, 0, -1, 1, 2])
    assert m.shape_type[1] == 8 and m.shape_params[1, 0] == pytest.approx(np.sqrt(0.04 + 0.09 + 0.16))
    assert np.all(m.meshes.mesh_sdf_dims[:2] > 0) and np.all(m.meshes.mesh_sdf_dims[2] == 0)
    assert np.diff(m.meshes.mesh_sample_start).tolist()[2] == 0 and m.meshes.mesh_closed.tolist() == [1, 1, 0]
