"""Lattice tetrahedralization: positive tets, exact embedding, robust occupancy, conformity, determinism."""

from collections import Counter

import numpy as np
import pytest
from contact_lab.core.fem import primitives
from contact_lab.core.fem.lattice import compute_winding_numbers, extract_surface_triangles, tetrahedralize_lattice
from contact_lab.core.soft.contact_samples import embed_in_lattice
from reference_geometry import xyz_rotation

# ---------------------------------------------------------------------------------------------- meshes


def cube_mesh(center=(0.0, 0.0, 0.0), size=1.0):
    """Closed, outward-oriented cube: 8 vertices, 12 triangles."""
    v = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], float) - 0.5
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    tris = [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]
    return v * size + np.asarray(center, float), np.array(tris, np.int64)


def rotated(vertices, angles=(0.3, 0.5, 0.7)):
    return vertices.dot(xyz_rotation(angles).T)


def icosphere(subdivisions=2, radius=1.0):
    """Closed, outward-oriented icosphere (``contact_lab.core.fem.primitives.icosphere``)."""
    return primitives.icosphere(radius, subdivisions)


def enclosed_volume(vertices, triangles):
    """Divergence theorem: sum of det[a, b, c] / 6 over outward triangles."""
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def surface_area(vertices, triangles):
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return float(0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1).sum())


def tet_volumes(mesh):
    x = mesh.tet_vertices[mesh.tet_indices]
    e = x[:, 1:] - x[:, :1]
    return np.linalg.det(e) / 6.0


def embedding_error(mesh, vertices):
    x = mesh.tet_vertices[mesh.tet_indices[mesh.embed_tet]]  # (V, 4, 3)
    rebuilt = np.einsum("vj,vjk->vk", mesh.embed_weights, x)
    return float(np.abs(rebuilt - vertices).max())


def check_embedding(mesh, vertices):
    assert mesh.embed_tet.dtype == np.int32 and mesh.embed_tet.shape == (len(vertices),)
    assert np.all((mesh.embed_tet >= 0) & (mesh.embed_tet < len(mesh.tet_indices)))
    assert embedding_error(mesh, vertices) < 1e-9
    np.testing.assert_allclose(mesh.embed_weights.sum(axis=1), 1.0, atol=1e-12)
    assert mesh.embed_weights.min() >= -1e-9


def open_icosphere():
    v, f = icosphere(2)
    return v, np.delete(f, [0, 1, 2, 40, 41, 100], axis=0)


def non_manifold_mesh():
    """Two cubes sharing an edge (x = 0.5, y = 0.5) plus a dangling triangle sticking out."""
    v0, f0 = cube_mesh((0.0, 0.0, 0.0))
    v1, f1 = cube_mesh((1.0, 1.0, 0.0))
    dangling = np.array([[1.5, -0.5, 0.0], [2.5, -0.5, 0.2], [1.8, -1.4, 0.9]])
    v = np.vstack([v0, v1, dangling])
    f = np.vstack([f0, f1 + 8, [[16, 17, 18]]])
    return v, f


CLOSED = {
    "cube": lambda: cube_mesh(),
    "rotated_cube": lambda: (rotated(cube_mesh()[0]), cube_mesh()[1]),
    "icosphere": lambda: icosphere(2),
}


# ---------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_closed_mesh_volume_and_embedding(name):
    """Closed meshes: positive tets, enclosed volume <= tet volume <= enclosed + area x cell diagonal."""
    v, f = CLOSED[name]()
    mesh = tetrahedralize_lattice(v, f, resolution=16)
    assert mesh.tet_indices.dtype == np.int32 and mesh.tet_vertices.dtype == np.float64
    vol = tet_volumes(mesh)
    h = mesh.cell_size
    np.testing.assert_allclose(vol, h**3 / 6.0, rtol=1e-9)  # all positive, all equal
    total = float(vol.sum())
    inside = enclosed_volume(v, f)
    band = surface_area(v, f) * np.sqrt(3.0) * h
    assert inside <= total <= inside + band, (total, inside, band)
    assert mesh.winding_cell_count > 0
    check_embedding(mesh, v)


@pytest.mark.parametrize("maker", [open_icosphere, non_manifold_mesh], ids=["open", "non_manifold"])
def test_open_and_non_manifold_meshes_embed_exactly(maker):
    v, f = maker()
    mesh = tetrahedralize_lattice(v, f, resolution=12)
    assert np.all(tet_volumes(mesh) > 0.0)
    check_embedding(mesh, v)


def test_open_sphere_keeps_its_interior():
    """A few missing faces leave the winding number near 1 inside: the volume is still filled."""
    v, f = open_icosphere()
    closed = tetrahedralize_lattice(*icosphere(2), resolution=12)
    opened = tetrahedralize_lattice(v, f, resolution=12)
    assert opened.tet_count >= 0.95 * closed.tet_count


def test_degenerate_inputs_do_not_fail():
    """A flat plane, a single point and a point cloud without triangles all give an embedded lattice."""
    plane = np.array([[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0], [1.0, 1.0, 0.0], [-1.0, 1.0, 0.0]])
    for v, f in [
        (plane, np.array([[0, 1, 2], [0, 2, 3]])),
        (np.array([[0.3, 0.2, 0.1]]), np.zeros((0, 3), np.int64)),
        (np.random.default_rng(1).normal(size=(20, 3)), np.zeros((0, 3), np.int64)),
    ]:
        mesh = tetrahedralize_lattice(v, f, resolution=6)
        assert np.all(tet_volumes(mesh) > 0.0)
        check_embedding(mesh, v)


def test_winding_number_of_a_cube_matches_analytic_values():
    """1 far inside and 0 far outside; one face seen from the centre subtends 4 pi / 6 (w = 1/6)."""
    v, f = cube_mesh(size=2.0)
    inside = np.array([[0.0, 0.0, 0.0], [0.3, -0.2, 0.1], [-0.5, 0.5, 0.5]])
    outside = np.array([[3.0, 0.0, 0.0], [0.0, -5.0, 2.0], [10.0, 10.0, 10.0]])
    w = np.empty(6)
    compute_winding_numbers(np.vstack([inside, outside]), v, f, w)
    np.testing.assert_allclose(w[:3], 1.0, atol=1e-9)
    np.testing.assert_allclose(w[3:], 0.0, atol=1e-9)
    one_face = np.empty(1)
    compute_winding_numbers(np.zeros((1, 3)), v, f[:2], one_face)
    assert abs(one_face[0] - 1.0 / 6.0) < 1e-12
    flipped = np.empty(1)
    compute_winding_numbers(np.zeros((1, 3)), v, f[:, ::-1].copy(), flipped)
    assert abs(flipped[0] + 1.0) < 1e-9


@pytest.mark.parametrize("maker", [lambda: icosphere(2), non_manifold_mesh], ids=["icosphere", "non_manifold"])
def test_deterministic(maker):
    v, f = maker()
    a = tetrahedralize_lattice(v, f, resolution=10)
    b = tetrahedralize_lattice(v.copy(), f.copy(), resolution=10)
    for field in ("tet_vertices", "tet_indices", "embed_tet", "embed_weights", "surface_triangles"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


@pytest.mark.parametrize("maker", [lambda: icosphere(2), lambda: (rotated(cube_mesh()[0]), cube_mesh()[1])])
def test_conforming_tets_and_closed_boundary(maker):
    """Every face is used by one tet (boundary) or two (interior); the boundary is closed, outward and
    encloses exactly the tet volume."""
    v, f = maker()
    mesh = tetrahedralize_lattice(v, f, resolution=8)
    faces = Counter()
    for tet in mesh.tet_indices.tolist():
        for a, b, c in ((1, 2, 3), (0, 3, 2), (0, 1, 3), (0, 2, 1)):
            faces[tuple(sorted((tet[a], tet[b], tet[c])))] += 1
    assert set(faces.values()) <= {1, 2}
    boundary = {key for key, n in faces.items() if n == 1}
    surf = mesh.surface_triangles
    assert surf.dtype == np.int32
    assert {tuple(sorted(t)) for t in surf.tolist()} == boundary and len(surf) == len(boundary)
    # closed and consistently oriented: every directed edge has its reverse, once
    directed = Counter((int(t[i]), int(t[(i + 1) % 3])) for t in surf for i in range(3))
    assert all(n == 1 and directed[(b, a)] == 1 for (a, b), n in directed.items())
    edges = Counter(tuple(sorted(e)) for e in directed)
    assert set(edges.values()) == {2}
    total = float(tet_volumes(mesh).sum())
    assert abs(enclosed_volume(mesh.tet_vertices, surf) - total) < 1e-9


def test_extract_surface_of_single_tet():
    surf = extract_surface_triangles(np.array([[0, 1, 2, 3]]))
    x = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert abs(enclosed_volume(x, surf) - 1.0 / 6.0) < 1e-15


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        tetrahedralize_lattice(np.zeros((0, 3)), np.zeros((0, 3), int))
    with pytest.raises(ValueError):
        tetrahedralize_lattice(np.zeros((3, 3)), np.array([[0, 1, 5]]))
    with pytest.raises(ValueError):
        tetrahedralize_lattice(np.array([[np.nan, 0, 0]]), np.zeros((0, 3), int))


def reference_winding_numbers(points, vertices, triangles):
    """One arctan2 per (point, triangle) pair, numpy."""
    out = np.zeros(len(points))
    for k, p in enumerate(points):
        a, b, c = (vertices[triangles[:, i]] - p for i in range(3))
        la, lb, lc = (np.linalg.norm(x, axis=1) for x in (a, b, c))
        det = np.einsum("ij,ij->i", a, np.cross(b, c))
        den = la * lb * lc + (a * b).sum(1) * lc + (b * c).sum(1) * la + (c * a).sum(1) * lb
        out[k] = 2.0 * np.arctan2(det, den).sum() / (4.0 * np.pi)
    return out


def test_winding_number_matches_arctan_reference_on_a_random_soup():
    """The complex-product accumulation (branch-cut turn counting) equals the sum of arctan2 terms, also
    for large |w| of a self-overlapping random soup."""
    rng = np.random.default_rng(7)
    vertices = rng.normal(size=(300, 3))
    triangles = rng.integers(0, 300, size=(2000, 3))
    points = rng.normal(size=(200, 3)) * 0.7
    w = np.empty(len(points))
    compute_winding_numbers(points, vertices, triangles, w)
    ref = reference_winding_numbers(points, vertices, triangles)
    assert np.abs(ref).max() > 2.0  # several turns: the branch-cut bookkeeping is exercised
    np.testing.assert_allclose(w, ref, atol=1e-10)


@pytest.mark.parametrize(
    "maker", [open_icosphere, non_manifold_mesh, lambda: (rotated(cube_mesh()[0]), cube_mesh()[1])]
)
def test_render_surface_lies_in_occupied_cells(maker):
    """Points sampled on every input triangle fall in occupied cells (the triangle/box test is conservative)."""
    v, f = maker()
    mesh = tetrahedralize_lattice(v, f, resolution=9)
    h, origin, shape = mesh.cell_size, mesh.grid_origin, np.array(mesh.grid_shape)
    corner = mesh.tet_vertices[mesh.tet_indices[::6, 0]]  # every Kuhn tet starts at its cell's corner 000
    occupied = {tuple(c) for c in np.rint((corner - origin) / h).astype(int).tolist()}
    assert len(occupied) == len(mesh.tet_indices) // 6
    bary = np.random.default_rng(3).dirichlet(np.ones(3), size=200)
    samples = np.einsum("sk,tkd->tsd", bary, v[f]).reshape(-1, 3)
    cells = np.clip(np.floor((samples - origin) / h).astype(int), 0, shape - 1)
    assert all(tuple(c) in occupied for c in cells.tolist())


@pytest.mark.parametrize("resolution", [4, 8])
def test_fitted_lattice_of_a_cube_is_the_cube(resolution):
    """A closed cube whose faces lie on cell planes: the fitted lattice fills exactly the cube's cells (the padded
    one adds a layer beyond every face), every tet full, every vertex and a point on every face embedded with
    weights >= 0; an open mesh keeps the padded lattice (a triangle lying on a cell plane has no inside cell)."""
    v, f = cube_mesh()
    fitted = tetrahedralize_lattice(v, f, resolution=resolution)
    padded = tetrahedralize_lattice(v, f, resolution=resolution, fitted=False)
    assert fitted.tet_count == 6 * resolution**3
    assert padded.tet_count == 6 * (resolution + 2) ** 3
    np.testing.assert_allclose(fitted.tet_volume_fraction, 1.0, atol=1e-12)
    np.testing.assert_allclose(fitted.tet_vertices.min(axis=0), v.min(axis=0), atol=1e-12)
    np.testing.assert_allclose(fitted.tet_vertices.max(axis=0), v.max(axis=0), atol=1e-12)
    assert fitted.embed_weights.min() > -1e-12
    centres = v[f].mean(axis=1)  # a point on every face
    tet, weights = embed_in_lattice(fitted, centres)
    assert tet.shape[0] == centres.shape[0] and weights.min() > -1e-12
    np.testing.assert_allclose(np.einsum("pk,pkd->pd", weights, fitted.tet_vertices[fitted.tet_indices[tet]]), centres,
                               atol=1e-12)  # fmt: skip
    open_fitted = tetrahedralize_lattice(v, f[1:], resolution=resolution)
    open_padded = tetrahedralize_lattice(v, f[1:], resolution=resolution, fitted=False)
    np.testing.assert_array_equal(open_fitted.tet_indices, open_padded.tet_indices)
