"""Surface pool lookups (core/friction/lookup.py) against brute-force numpy references."""

from __future__ import annotations

import numpy as np
import pytest
from contact_lab.core.friction.lookup import pack_surfaces
from contact_lab.core.friction.surface import (
    StructureSource,
    SurfaceFriction,
    SurfaceFrictionModel,
    SurfaceMesh,
    TextureImage,
)

# ---------------------------------------------------------------------------------------------
# references (plain numpy, no code shared with the core)
# ---------------------------------------------------------------------------------------------


def ref_closest_on_segment(p, a, b):
    """Closest points of segments (a_i, b_i) to p, shape (T, 3)."""
    ab = b - a
    t = np.clip(np.sum((p - a) * ab, axis=1) / np.maximum(np.sum(ab * ab, axis=1), 1e-300), 0.0, 1.0)
    return a + t[:, None] * ab


def ref_closest_points(p, corners):
    """Closest point of every triangle (T, 3, 3) to p: projection if inside, else best of the 3 edges."""
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    proj = p - np.sum((p - a) * normal, axis=1)[:, None] * normal
    inside = np.ones(len(corners), bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.sum(np.cross(v - u, proj - u) * normal, axis=1) >= 0
    candidates = [ref_closest_on_segment(p, u, v) for u, v in ((a, b), (b, c), (c, a))]
    best = candidates[0]
    for cand in candidates[1:]:
        closer = np.linalg.norm(cand - p, axis=1) < np.linalg.norm(best - p, axis=1)
        best = np.where(closer[:, None], cand, best)
    return np.where(inside[:, None], proj, best)


def ref_closest(p, corners):
    """(triangle, point, distance) of the closest triangle by brute force."""
    pts = ref_closest_points(p, corners)
    dist = np.linalg.norm(pts - p, axis=1)
    i = int(np.argmin(dist))
    return i, pts[i], dist[i]


def ref_bilinear(pixels, u, v):
    """Repeat-addressed bilinear sample as a sum of tent weights over every texel (rows bottom to top)."""
    h, w, _ = pixels.shape

    def weights(x, size):
        centres = (np.arange(size) + 0.5) / size
        delta = (x - centres + 0.5) % 1.0 - 0.5  # wrapped distance
        return np.maximum(0.0, 1.0 - np.abs(delta) * size)

    return np.einsum("i,j,ijc->c", weights(v, h), weights(u, w), pixels.astype(np.float64))


def torus_mesh(major=0.5, minor=0.2, nu=25, nv=20, bumps=0.03, seed=0):
    """Bumpy torus with nu * nv * 2 triangles, outward CCW winding; UV = (i/nu, j/nv)."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(nu), np.arange(nv), indexing="ij")
    a = 2 * np.pi * i / nu
    b = 2 * np.pi * j / nv
    r = minor + bumps * rng.uniform(-1, 1, size=a.shape)
    verts = np.stack([(major + r * np.cos(b)) * np.cos(a), (major + r * np.cos(b)) * np.sin(a), r * np.sin(b)], -1)
    verts = verts.reshape(-1, 3)

    def idx(ii, jj):
        return (ii % nu) * nv + (jj % nv)

    tris = []
    for ii in range(nu):
        for jj in range(nv):
            q = (idx(ii, jj), idx(ii + 1, jj), idx(ii + 1, jj + 1), idx(ii, jj + 1))
            tris += [(q[0], q[1], q[2]), (q[0], q[2], q[3])]
    return verts, np.array(tris, np.int32)


def grid_mesh(nx=4, ny=3, size=(1.0, 1.0), z=None):
    """Flat (or height-field) grid mesh over [0, sx] x [0, sy], CCW seen from +z."""
    xs = np.linspace(0, size[0], nx + 1)
    ys = np.linspace(0, size[1], ny + 1)
    x, y = np.meshgrid(xs, ys, indexing="ij")
    zz = np.zeros_like(x) if z is None else z(x, y)
    verts = np.stack([x, y, zz], -1).reshape(-1, 3)
    tris = []
    for i in range(nx):
        for j in range(ny):
            a, b, c, d = i * (ny + 1) + j, (i + 1) * (ny + 1) + j, (i + 1) * (ny + 1) + j + 1, i * (ny + 1) + j + 1
            tris += [(a, b, c), (a, c, d)]
    return verts, np.array(tris, np.int32)


# ---------------------------------------------------------------------------------------------
# closest point
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closest_point_matches_brute_force_on_random_meshes(seed):
    """Match the brute-force closest point (distance, point) on random soups and height fields."""
    rng = np.random.default_rng(seed)
    soup_verts = rng.normal(size=(60, 3))
    soup_tris = rng.choice(60, size=(40, 3), replace=True).astype(np.int32)
    soup_tris = soup_tris[(soup_tris[:, 0] != soup_tris[:, 1]) & (soup_tris[:, 1] != soup_tris[:, 2])]
    soup_tris = soup_tris[soup_tris[:, 0] != soup_tris[:, 2]]
    field_verts, field_tris = grid_mesh(8, 7, z=lambda x, y: 0.2 * np.sin(3 * x + seed) * np.cos(2 * y))
    meshes = [(soup_verts, soup_tris), (field_verts, field_tris)]
    pool = pack_surfaces([SurfaceFriction(mesh=SurfaceMesh(v, t)) for v, t in meshes])
    worst = 0.0
    for shape, (verts, tris) in enumerate(meshes):
        corners = verts[tris]
        for _ in range(100):
            p = rng.normal(size=3) * 1.5
            tri, b0, b1, b2, dist = pool.closest_point(shape, p)
            ref_tri, ref_point, ref_dist = ref_closest(p, corners)
            assert tri >= 0
            local = tri - pool.shape_tri_start[shape]
            point = b0 * corners[local, 0] + b1 * corners[local, 1] + b2 * corners[local, 2]
            assert min(b0, b1, b2) >= -1e-12 and abs(b0 + b1 + b2 - 1) < 1e-12
            assert abs(dist - ref_dist) <= 1e-10 * max(1.0, ref_dist)
            assert abs(np.linalg.norm(point - p) - dist) < 1e-10  # barycentrics reproduce the point
            np.testing.assert_allclose(point, ref_point, atol=1e-8)
            worst = max(worst, abs(dist - ref_dist))
    assert worst < 1e-10


def test_grid_search_matches_brute_force_on_1000_triangles():
    """Return the same distance through the grid as brute force on a 1000-triangle torus."""
    verts, tris = torus_mesh()
    assert len(tris) == 1000
    surface = SurfaceFriction(mesh=SurfaceMesh(verts, tris))
    grid_pool = pack_surfaces([None, surface])
    brute_pool = pack_surfaces([None, surface], grid_min_triangles=10**9)
    assert grid_pool.grid_dims[1].prod() > 1 and brute_pool.grid_dims[1].prod() == 0
    rng = np.random.default_rng(7)
    corners = verts[tris]
    queries = np.concatenate([rng.uniform(-1.2, 1.2, size=(300, 3)), verts[rng.choice(len(verts), 100)] * 1.01])
    for p in queries:
        g = grid_pool.closest_point(1, p)
        bf = brute_pool.closest_point(1, p)
        assert g[0] >= 0 and bf[0] >= 0
        assert abs(g[4] - bf[4]) <= 1e-12
    for p in queries[:50]:
        assert abs(grid_pool.closest_point(1, p)[4] - ref_closest(p, corners)[2]) < 1e-10
    # a bounded search finds nothing beyond its radius and the exact answer within it
    far = np.array([3.0, 0.0, 0.0])
    assert grid_pool.closest_point(1, far, max_distance=0.5)[0] == -1
    assert abs(grid_pool.closest_point(1, far, max_distance=3.0)[4] - ref_closest(far, corners)[2]) < 1e-10


def test_missing_mesh_returns_sentinel():
    """Report triangle -1 for a shape without surface data or without mesh."""
    pool = pack_surfaces([None, SurfaceFriction()])
    assert pool.closest_point(0, np.zeros(3))[0] == -1
    assert pool.closest_point(1, np.zeros(3))[0] == -1
    assert pool.surface_normal_image[0] == -1 and pool.shape_tri_start.tolist() == [0, 0, 0]


def test_uv_interpolation_is_affine_on_flat_mesh():
    """Interpolate corner UVs to the closest point: UV = A xy + c exactly on a flat mesh."""
    verts, tris = grid_mesh(5, 4, size=(2.0, 1.0))
    a = np.array([[0.3, -0.7], [1.1, 0.4]])
    c = np.array([0.25, -0.5])
    corner_uv = verts[tris][:, :, :2] @ a.T + c
    pool = pack_surfaces([SurfaceFriction(mesh=SurfaceMesh(verts, tris, corner_uv))])
    rng = np.random.default_rng(3)
    for _ in range(50):
        xy = rng.uniform([0, 0], [2, 1])
        tri, b0, b1, b2, dist = pool.closest_point(0, np.array([xy[0], xy[1], 0.3]))
        assert abs(dist - 0.3) < 1e-12
        np.testing.assert_allclose(pool.uv_at(tri, b0, b1, b2), a @ xy + c, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# image sampling
# ---------------------------------------------------------------------------------------------


def test_bilinear_sampling_matches_naive_with_wraparound():
    """Match a tent-weight sum over all texels, including repeat addressing across every border."""
    rng = np.random.default_rng(5)
    pixels = rng.uniform(size=(5, 7, 4)).astype(np.float32)
    pool = pack_surfaces([SurfaceFriction(normal_map=TextureImage(pixels))])
    image = int(pool.surface_normal_image[0])
    uvs = np.concatenate(
        [rng.uniform(-2, 3, size=(200, 2)), [[0.0, 0.0], [1.0, 1.0], [0.01, 0.99], [0.999, 0.001], [-0.05, 1.05]]]
    )
    err = max(np.abs(pool.sample_image(image, u, v) - ref_bilinear(pixels, u, v)).max() for u, v in uvs)
    assert err < 1e-6


def test_texel_centres_return_texels_rows_bottom_to_top():
    """Return pixels[i, j] exactly at UV ((j + 0.5)/w, (i + 0.5)/h): row 0 is v = 0 (bottom)."""
    pixels = np.zeros((4, 3, 3), np.float32)
    pixels[..., 0] = np.arange(4)[:, None]  # row index in R
    pixels[..., 1] = np.arange(3)[None, :]  # column index in G
    pool = pack_surfaces([SurfaceFriction(structure_image=TextureImage(pixels))])
    image = int(pool.surface_structure_image[0])
    for i in range(4):
        for j in range(3):
            np.testing.assert_allclose(pool.sample_image(image, (j + 0.5) / 3, (i + 0.5) / 4), [i, j, 0], atol=1e-12)
    # halfway between the top row and (wrapped) bottom row
    np.testing.assert_allclose(pool.sample_image(image, 0.5 / 3, 1.0)[0], 1.5, atol=1e-12)


def test_images_are_shared_between_shapes():
    """Store an image used by several shapes once."""
    img = TextureImage(np.ones((2, 2, 3), np.float32))
    pool = pack_surfaces([SurfaceFriction(normal_map=img), SurfaceFriction(normal_map=img), None])
    assert pool.surface_normal_image.tolist() == [0, 0, -1] and len(pool.image_width) == 1


# ---------------------------------------------------------------------------------------------
# structure directions
# ---------------------------------------------------------------------------------------------


def _random_points_on_mesh(rng, verts, tris, count):
    tri = rng.integers(len(tris), size=count)
    bary = rng.dirichlet(np.ones(3), size=count)
    return tri, bary, np.einsum("ti,tik->tk", bary, verts[tris[tri]])


def test_attribute_directions_point_face_and_corner_domains():
    """Interpolate point (linear field), face (constant) and corner (barycentric) attributes exactly."""
    verts, tris = grid_mesh(3, 3)
    rng = np.random.default_rng(11)

    def field(p):  # linear field: point-domain values reproduce it exactly
        return np.stack([p[..., 0] + 0.5, 2 * p[..., 1] - 0.1, np.full(p.shape[:-1], 0.2)], -1)

    point_domain = field(verts)[tris]
    face_values = rng.normal(size=(len(tris), 3))
    face_domain = np.repeat(face_values[:, None, :], 3, axis=1)
    corner_domain = rng.normal(size=(len(tris), 3, 3))
    surfaces = [
        SurfaceFriction(structure_source=StructureSource.ATTRIBUTE, mesh=SurfaceMesh(verts, tris, None, attr))
        for attr in (point_domain, face_domain, corner_domain)
    ]
    pool = pack_surfaces(surfaces)
    tri, bary, pts = _random_points_on_mesh(rng, verts, tris, 40)
    for k in range(40):
        p = pts[k] + np.array([0, 0, 0.05])
        np.testing.assert_allclose(pool.structure_direction(0, p), field(pts[k]), atol=1e-12)
        # points strictly inside a face (dirichlet samples): the face value
        np.testing.assert_allclose(pool.structure_direction(1, p), face_values[tri[k]], atol=1e-12)
        np.testing.assert_allclose(pool.structure_direction(2, p), bary[k] @ corner_domain[tri[k]], atol=1e-12)


def test_image_direction_maps_tangent_space_to_uv_frame():
    """Decode a direction image as 2 rgb - 1 along (T, B); rotated UVs rotate the decoded direction."""
    alpha = np.radians(25.0)
    direction = np.array([np.cos(alpha), np.sin(alpha)])
    pixels = np.ones((8, 8, 4), np.float32)
    pixels[..., :2] = (direction + 1) / 2
    verts, tris = grid_mesh(2, 2)
    uv_plain = verts[tris][:, :, :2]
    # UV rotated by -90 deg: u = y, v = -x  ->  T = dP/du = +y, B = dP/dv = -x
    uv_rot = np.stack([uv_plain[..., 1], -uv_plain[..., 0]], -1)
    image = TextureImage(pixels)
    pool = pack_surfaces(
        [
            SurfaceFriction(
                structure_source=StructureSource.IMAGE, structure_image=image, mesh=SurfaceMesh(verts, tris, uv)
            )
            for uv in (uv_plain, uv_rot)
        ]
    )
    p = np.array([0.3, 0.6, 0.01])
    quant = 1e-6  # float32 texels
    np.testing.assert_allclose(pool.structure_direction(0, p), [direction[0], direction[1], 0], atol=quant)
    np.testing.assert_allclose(pool.structure_direction(1, p), [-direction[1], direction[0], 0], atol=quant)


def test_uv_tangent_matches_analytic_dpdu():
    """Return T = normalized dP/du: exact on a skewed planar map, O(h) on a cylinder (R cos u/R, R sin u/R, v)."""
    # planar: P = u a + v c (a, c not orthogonal)
    a = np.array([1.0, 0.5, 0.0])
    c = np.array([0.2, 1.0, 0.0])
    uv_verts, tris = grid_mesh(3, 3)
    verts = uv_verts[:, :1] * a + uv_verts[:, 1:2] * c
    planar = SurfaceMesh(verts, tris, uv_verts[tris][:, :, :2])
    # cylinder, outward normals
    radius, nu, nv = 0.5, 64, 4
    us = np.linspace(0, np.pi * radius, nu + 1)
    grid_uv, cyl_tris = grid_mesh(nu, nv, size=(np.pi * radius, 1.0))
    u, v = grid_uv[:, 0], grid_uv[:, 1]
    cyl_verts = np.stack([radius * np.cos(u / radius), radius * np.sin(u / radius), v], -1)
    cylinder = SurfaceMesh(cyl_verts, cyl_tris, grid_uv[cyl_tris][:, :, :2])  # (u, v) CCW -> outward
    pool = pack_surfaces(
        [SurfaceFriction(structure_source=StructureSource.UV_TANGENT, mesh=m) for m in (planar, cylinder)]
    )
    np.testing.assert_allclose(
        pool.structure_direction(0, np.array([0.5, 0.5, 0.1])), a / np.linalg.norm(a), atol=1e-12
    )
    np.testing.assert_allclose(pool.tri_normal[: len(tris), 2], 1.0)
    worst = 0.0
    for uu in np.linspace(0.1, np.pi * radius - 0.1, 9):
        p = 1.02 * np.array([radius * np.cos(uu / radius), radius * np.sin(uu / radius), 0.0]) + [0, 0, 0.4]
        analytic = np.array([-np.sin(uu / radius), np.cos(uu / radius), 0.0])
        worst = max(worst, np.linalg.norm(pool.structure_direction(1, p) - analytic))
    h = us[1] - us[0]
    assert worst < h / radius  # chord direction differs from the tangent by at most half the segment angle
    centroids = cyl_verts[cyl_tris].mean(axis=1)
    assert np.all(np.sum(pool.tri_normal[len(tris) :, :2] * centroids[:, :2], axis=1) > 0)  # outward


def test_axis_and_missing_sources():
    """Return the axis for AXIS, zero for NONE and for sources whose data is missing."""
    verts, tris = grid_mesh(1, 1)
    axis = np.array([0.0, 0.6, 0.8])
    pool = pack_surfaces(
        [
            SurfaceFriction(structure_source=StructureSource.AXIS, structure_axis=axis),
            SurfaceFriction(structure_source=StructureSource.NONE, mesh=SurfaceMesh(verts, tris)),
            SurfaceFriction(structure_source=StructureSource.UV_TANGENT, mesh=SurfaceMesh(verts, tris)),
            SurfaceFriction(structure_source=StructureSource.ATTRIBUTE, mesh=SurfaceMesh(verts, tris)),
            SurfaceFriction(structure_source=StructureSource.IMAGE, mesh=SurfaceMesh(verts, tris)),
            None,
        ]
    )
    p = np.array([0.5, 0.5, 0.0])
    np.testing.assert_allclose(pool.structure_direction(0, p), axis)
    for shape in range(1, 6):
        assert np.all(pool.structure_direction(shape, p) == 0.0)
    assert pool.surface_model.tolist()[:5] == [int(SurfaceFrictionModel.COULOMB)] * 5
