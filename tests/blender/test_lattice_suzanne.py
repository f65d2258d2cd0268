"""Real-bpy tier: the lattice tetrahedralization of Suzanne (open, non-manifold, self-intersecting eyes)."""

import time

import numpy as np
import pytest

pytestmark = pytest.mark.blender


def suzanne_arrays():
    """Vertices (V, 3) float64 and loop triangles (T, 3) int64 of a fresh Suzanne, read with foreach_get."""
    import bpy

    bpy.ops.mesh.primitive_monkey_add()
    mesh = bpy.context.object.data
    mesh.calc_loop_triangles()
    co = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.vertices.foreach_get("co", co)
    tris = np.empty(3 * len(mesh.loop_triangles), np.int32)
    mesh.loop_triangles.foreach_get("vertices", tris)
    return co.reshape(-1, 3).astype(np.float64), tris.reshape(-1, 3).astype(np.int64)


def test_suzanne_tetrahedralizes_and_embeds_exactly(factory_scene):
    from contact_lab.core.fem.lattice import compute_winding_numbers, tetrahedralize_lattice

    vertices, triangles = suzanne_arrays()
    assert vertices.shape == (507, 3) and len(triangles) == 968

    tetrahedralize_lattice(vertices[:4], triangles[:1] * 0, resolution=2)  # JIT compile / cache load
    start = time.perf_counter()
    mesh = tetrahedralize_lattice(vertices, triangles, resolution=12)
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, elapsed
    print(f"suzanne: {mesh.tet_count} tets, cells {mesh.grid_shape}, {elapsed * 1e3:.1f} ms")

    x = mesh.tet_vertices[mesh.tet_indices]
    volumes = np.linalg.det(x[:, 1:] - x[:, :1]) / 6.0
    assert np.all(volumes > 0.0)
    np.testing.assert_allclose(volumes, mesh.cell_size**3 / 6.0, rtol=1e-9)

    rebuilt = np.einsum("vj,vjk->vk", mesh.embed_weights, x[mesh.embed_tet])
    print("embedding error", np.abs(rebuilt - vertices).max(), "volume", volumes.sum(), mesh.winding_cell_count)
    assert np.abs(rebuilt - vertices).max() < 1e-9
    np.testing.assert_allclose(mesh.embed_weights.sum(axis=1), 1.0, atol=1e-12)
    assert mesh.embed_weights.min() >= -1e-9

    # The winding number fills the head: interior cells exist, and the head's centre is inside.
    assert mesh.winding_cell_count > 0
    w = np.empty(1)
    compute_winding_numbers(np.array([[0.0, 0.0, 0.15]]), vertices, triangles, w)
    assert w[0] > 0.5
    # Every Suzanne vertex lies in (the closure of) its tet, and the tet mesh's bounding box covers Suzanne.
    assert np.all(mesh.tet_vertices.min(axis=0) <= vertices.min(axis=0))
    assert np.all(mesh.tet_vertices.max(axis=0) >= vertices.max(axis=0))
    # The boundary surface encloses the tet volume (divergence theorem).
    s = mesh.tet_vertices[mesh.surface_triangles]
    enclosed = np.einsum("ij,ij->i", s[:, 0], np.cross(s[:, 1], s[:, 2])).sum() / 6.0
    assert abs(enclosed - volumes.sum()) < 1e-9
