"""Contact samples on a soft mesh's faces (``core/soft/contact_samples.py``), against brute force.

References: the distance from every sample to the mesh (zero: on a triangle), the largest gap between a dense
random sampling of the surface and the nearest contact point (vertices and samples), the embedding's
reconstruction of each sample from its tet, and closed-form counts on a box.
"""

import numpy as np
import pytest
from contact_lab.core.fem.lattice import tetrahedralize_lattice
from contact_lab.core.fem.primitives import icosphere
from contact_lab.core.soft.contact_samples import MAX_SPLITS, embed_in_lattice, face_sample_points, refined_surface


def _box(size=(2.0, 2.0, 2.0)):
    s = np.asarray(size) / 2.0
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * s
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    f = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])
    return v, f


def _point_triangle_distance(p, a, b, c):
    """Exact distance from points p (P, 3) to the triangle abc: the plane's if the projection is inside,
    else the nearest of the three edges."""

    def segment(q, u, w):
        t = np.clip(((q - u) @ (w - u)) / ((w - u) @ (w - u)), 0.0, 1.0)
        return np.linalg.norm(q - (u + t[:, None] * (w - u)), axis=1)

    n = np.cross(b - a, c - a)
    n = n / np.linalg.norm(n)
    height = (p - a) @ n
    foot = p - height[:, None] * n
    inside = np.ones(len(p), dtype=bool)
    for u, w in ((a, b), (b, c), (c, a)):
        inside &= np.cross(w - u, foot - u) @ n >= -1e-12
    edges = np.minimum(np.minimum(segment(p, a, b), segment(p, b, c)), segment(p, c, a))
    return np.where(inside, np.abs(height), edges)


def _surface_points(v, f, count, rng):
    """Uniform random points on the surface (area-weighted)."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    k = rng.choice(len(f), size=count, p=area / area.sum())
    r1, r2 = rng.random(count), rng.random(count)
    s = np.sqrt(r1)
    return a[k] * (1 - s)[:, None] + b[k] * (s * (1 - r2))[:, None] + c[k] * (s * r2)[:, None]


@pytest.mark.parametrize("mesh", ["box", "stretched_box", "icosphere"])
def test_samples_lie_on_the_mesh_and_cover_it_within_the_spacing(mesh):
    rng = np.random.default_rng(7)
    v, f = {"box": _box(), "stretched_box": _box((3.0, 1.0, 0.5)), "icosphere": icosphere(0.05, 1)}[mesh]
    spacing = {"box": 0.25, "stretched_box": 0.2, "icosphere": 0.1 / 6}[mesh]
    s = face_sample_points(v, f, spacing)
    assert s.shape[0] > 0
    # on the surface: each sample lies on some triangle (brute force)
    d = np.full(len(s), np.inf)
    for a, b, c in f:
        d = np.minimum(d, _point_triangle_distance(s, v[a], v[b], v[c]))
    assert d.max() < 1e-12
    # no sample repeats a vertex or another sample
    points = np.concatenate([v, s])
    gaps = np.linalg.norm(points[:, None] - points[None], axis=2) + np.eye(len(points)) * 1e9
    assert gaps.min() > 1e-9
    # coverage: every surface point is within one spacing of a contact point (vertices and samples)
    probe = _surface_points(v, f, 4000, rng)
    nearest = np.linalg.norm(probe[:, None] - points[None], axis=2).min(axis=1)
    assert nearest.max() <= spacing


def test_box_counts_match_the_closed_form():
    # 2 m cube, spacing 0.25: each of the 12 box edges has 7 interior points, each of the 6 face diagonals
    # (2.83 m) 11, and each triangle (longest edge 2.83 m: n = 12) (n - 1)(n - 2) / 2 = 55 interior points.
    v, f = _box()
    s = face_sample_points(v, f, 0.25)
    assert s.shape == (12 * 7 + 6 * 11 + 12 * 55, 3)
    # a mesh finer than the spacing gets none
    assert face_sample_points(v, f, 3.0).shape == (0, 3)


def test_embedding_reproduces_every_sample():
    v, f = icosphere(0.05, 1)
    lattice = tetrahedralize_lattice(v, f, resolution=6)
    s = face_sample_points(v, f, lattice.cell_size)
    tet, weights = embed_in_lattice(lattice, s)
    assert tet.shape == (len(s),)  # every point on a triangle lies in an occupied cell
    assert weights.min() >= -1e-12 and np.allclose(weights.sum(axis=1), 1.0)
    corners = lattice.tet_vertices[lattice.tet_indices[tet]]
    assert np.abs(np.einsum("pj,pjk->pk", weights, corners) - s).max() < 1e-12
    # and the same tets the lattice's own embedding finds for the vertices
    t_v, w_v = embed_in_lattice(lattice, v)
    assert np.array_equal(t_v, lattice.embed_tet) and np.allclose(w_v, lattice.embed_weights)


def test_bad_spacing_is_refused():
    v, f = _box()
    with pytest.raises(ValueError, match="spacing"):
        face_sample_points(v, f, 0.0)
    with pytest.raises(ValueError, match="spacing"):
        refined_surface(v, f, float("nan"))


def _signed_volume(v, f):
    return float(np.einsum("ij,ij->i", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]])).sum() / 6.0)


def _area(v, f):
    return float(0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1).sum())


def test_a_refined_box_is_the_same_closed_surface_split_to_the_spacing():
    """The default cube split for a 0.25 m lattice: its 8 vertices first, every new point on one of its triangles
    (brute-force distance 0), 12 × 12² triangles with no edge above the spacing, closed (each edge once each way),
    with the box's area and signed volume; every point embeds in the cube's fitted lattice."""
    v, f = _box()
    p, t = refined_surface(v, f, 0.25)
    assert np.array_equal(p[:8], v) and t.shape == (12 * 12**2, 3)
    distance = np.min([_point_triangle_distance(p, *v[tri]) for tri in f], axis=0)
    assert distance.max() < 1e-12
    edges = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    directed = {tuple(e) for e in edges.tolist()}
    assert len(directed) == len(edges) and {(b, a) for a, b in directed} == directed
    assert np.linalg.norm(p[edges[:, 1]] - p[edges[:, 0]], axis=1).max() <= 0.25
    assert _area(p, t) == pytest.approx(_area(v, f), rel=1e-12)
    assert _signed_volume(p, t) == pytest.approx(_signed_volume(v, f), rel=1e-12)
    lattice = tetrahedralize_lattice(v, f, resolution=8)
    tet, _ = embed_in_lattice(lattice, p)
    assert tet.shape == (len(p),)


def test_a_mesh_finer_than_the_spacing_comes_back_as_it_is_and_the_split_is_capped():
    v, f = icosphere(0.05, 2)
    p, t = refined_surface(v, f, 0.05)
    assert np.array_equal(p, v) and np.array_equal(t, f)
    box, faces = _box()
    _, capped = refined_surface(box, faces, 1e-6)
    assert capped.shape == (12 * MAX_SPLITS**2, 3)
