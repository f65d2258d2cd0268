"""IPC swept-AABB broad phase (core/ipc/broad_phase.py) against brute force over all primitive pairs."""

import time

import numpy as np
import pytest
from contact_lab.core.fem import primitives
from contact_lab.core.ipc.broad_phase import build_edges, collision_candidates
from contact_lab.core.jit import njit_kernel

# --------------------------------------------------------------------------------------------
# Meshes and scenes (also used by tests/benchmarks/bench_ipc_broad_phase.py)
# --------------------------------------------------------------------------------------------


def icosphere(level, radius=1.0, center=(0.0, 0.0, 0.0)):
    """Vertices (V, 3) and faces (20 * 4^level, 3) int64 of a subdivided icosahedron (the core's primitive)."""
    vertices, faces = primitives.icosphere(radius, level, center)
    return vertices, faces.astype(np.int64)


def grid(n, size, center, rng, wave=0.05):
    """A wavy, randomly rotated n x n quad grid: vertices ((n+1)^2, 3), faces (2 n^2, 3) int64."""
    u = np.linspace(-0.5, 0.5, n + 1) * size
    X, Y = np.meshgrid(u, u, indexing="ij")
    Z = wave * size * np.sin(3 * X / size) * np.cos(2 * Y / size)
    verts = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    idx = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    faces = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    return verts @ q.T + center, faces.astype(np.int64)


def assemble(bodies):
    """Stack (verts, faces, group) bodies into one surface: x (V, 3), faces (F, 3), vertex_group (V,)."""
    xs, fs, gs, base = [], [], [], 0
    for verts, faces, group in bodies:
        xs.append(verts)
        fs.append(faces + base)
        gs.append(np.full(len(verts), group, np.int64))
        base += len(verts)
    return np.concatenate(xs), np.concatenate(fs), np.concatenate(gs)


def small_scene(rng, fast=True):
    """~500 triangles: three dynamic wavy grids, a dynamic sphere, a static grid and a static 2-triangle ground."""
    bodies = [grid(8, 1.0, rng.uniform(-0.3, 0.3, 3), rng) + (b,) for b in range(3)]
    bodies.append(icosphere(1, 0.4, rng.uniform(-0.3, 0.3, 3)) + (3,))
    bodies.append(grid(6, 1.2, rng.uniform(-0.3, 0.3, 3), rng) + (-1,))
    ground = np.array([[-5.0, -5.0, -0.6], [5.0, -5.0, -0.6], [5.0, 5.0, -0.6], [-5.0, 5.0, -0.6]])
    bodies.append((ground, np.array([[0, 1, 2], [0, 2, 3]], np.int64), -1))
    x0, faces, group = assemble(bodies)
    velocity = np.where(group[:, None] >= 0, rng.normal(scale=0.1, size=(4, 3))[np.maximum(group, 0)], 0.0)
    x1 = x0 + velocity + 0.01 * rng.normal(size=x0.shape) * (group[:, None] >= 0)
    if fast:
        x1[group == 3] += [2.0, 0.0, 0.0]  # a fast body: its swept boxes span many cells
    return x0, x1, faces, group


def sphere_pile(count, level, rng, gap=0.02):
    """``count`` icospheres (20 * 4^level triangles each) on a jittered lattice, neighbours ~``gap`` apart."""
    side = int(np.ceil(count ** (1 / 3)))
    bodies = []
    for i in range(count):
        c = np.array([i % side, (i // side) % side, i // side**2], float) * (2.0 + gap)
        bodies.append(icosphere(level, 1.0, c + rng.uniform(-gap, gap, 3)) + (i if i % 5 else -1,))
    x0, faces, group = assemble(bodies)
    x1 = x0 + 0.01 * rng.normal(size=x0.shape) * (group[:, None] >= 0)
    return x0, x1, faces, group


# --------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------


def boxes(x0, x1, prims, inflation):
    lo = np.minimum(x0, x1) - inflation
    hi = np.maximum(x0, x1) + inflation
    return lo[prims].min(axis=1), hi[prims].max(axis=1)


def brute_force(x0, x1, faces, edges, group, inflation):
    """All pairs with overlapping closed boxes, minus shared vertices and all-static pairs (O(n^2) NumPy)."""
    vertices = np.arange(len(x0))[:, None]
    vlo, vhi = boxes(x0, x1, vertices, inflation)
    flo, fhi = boxes(x0, x1, faces, inflation)
    elo, ehi = boxes(x0, x1, edges, inflation)
    static = group == -1

    overlap = np.all((vlo[:, None] <= fhi[None]) & (flo[None] <= vhi[:, None]), axis=2)
    overlap &= ~np.any(faces[None] == vertices[:, :, None], axis=2)
    overlap &= ~(static[:, None] & static[faces].all(axis=1)[None])
    vf = np.argwhere(overlap)

    overlap = np.all((elo[:, None] <= ehi[None]) & (elo[None] <= ehi[:, None]), axis=2)
    overlap &= np.triu(np.ones_like(overlap), 1)
    shared = (edges[:, None, :, None] == edges[None, :, None, :]).any(axis=(2, 3))
    overlap &= ~shared
    estatic = static[edges].all(axis=1)
    overlap &= ~(estatic[:, None] & estatic[None])
    ee = np.argwhere(overlap)
    return vf.astype(np.int64), ee.astype(np.int64)


@njit_kernel
def _sweep_count(alo, ahi, blo, bhi, a_prims, b_prims, group, edge_edge):
    """Independent reference count: for each a, boxes b with lo_x in [lo_x(a) - widest, hi_x(a)], sorted by lo_x."""
    order = np.argsort(blo[:, 0])
    keys = blo[order, 0]
    widest = (bhi[:, 0] - blo[:, 0]).max()
    count = 0
    for a in range(alo.shape[0]):
        i = np.searchsorted(keys, alo[a, 0] - widest)
        while i < keys.shape[0] and keys[i] <= ahi[a, 0]:
            b = order[i]
            i += 1
            if edge_edge and b <= a:
                continue
            if not np.all((alo[a] <= bhi[b]) & (blo[b] <= ahi[a])):
                continue
            va = a_prims[a]
            vb = b_prims[b]
            if np.any(va[:, None] == vb[None, :]):
                continue
            if np.all(group[va] == -1) and np.all(group[vb] == -1):
                continue
            count += 1
    return count


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def test_build_edges_matches_numpy_unique():
    """Return each undirected edge once, rows (a < b) sorted, for a closed sphere (E = 3F/2) and a grid."""
    _, faces = icosphere(2)
    edges = build_edges(faces)
    expected = np.unique(np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1), axis=0)
    np.testing.assert_array_equal(edges, expected)
    assert edges.dtype == np.int64 and len(edges) == 3 * len(faces) // 2
    _, faces = grid(5, 1.0, np.zeros(3), np.random.default_rng(0))
    assert len(build_edges(faces)) == 2 * 5 * 6 + 5 * 5  # rows + columns + diagonals
    assert build_edges(np.zeros((0, 3), np.int64)).shape == (0, 2)


@pytest.mark.parametrize("seed", range(6))
def test_candidates_equal_brute_force(seed):
    """Return exactly the brute-force pair sets, sorted, for swept and static queries on ~500-triangle scenes."""
    rng = np.random.default_rng(seed)
    x0, x1, faces, group = small_scene(rng, fast=seed % 2 == 0)
    edges = build_edges(faces)
    for moving in (True, False):
        end = x1 if moving else x0
        inflation = [0.0, 1e-3, 0.03][seed % 3]
        vf, ee = collision_candidates(x0, end, faces, edges, group, inflation)
        vf_ref, ee_ref = brute_force(x0, end, faces, edges, group, inflation)
        assert len(vf_ref) > 0 and len(ee_ref) > 0
        np.testing.assert_array_equal(vf, vf_ref)
        np.testing.assert_array_equal(ee, ee_ref)


def test_static_pairs_and_shared_vertices_excluded():
    """Drop pairs among static vertices and pairs sharing a vertex; keep soft self-contact."""
    rng = np.random.default_rng(1)
    verts, faces = grid(4, 1.0, np.zeros(3), rng, wave=0.0)
    x = np.concatenate([verts, verts + [0.0, 0.0, 0.01]])
    faces = np.concatenate([faces, faces + len(verts)])
    edges = build_edges(faces)
    everything_static = np.full(len(x), -1, np.int64)
    vf, ee = collision_candidates(x, x, faces, edges, everything_static, 0.02)
    assert len(vf) == 0 and len(ee) == 0
    one_soft_body = np.zeros(len(x), np.int64)  # self-contact of one body (two layers)
    vf, ee = collision_candidates(x, x, faces, edges, one_soft_body, 0.02)
    assert len(vf) > 0 and len(ee) > 0
    assert not np.any(faces[vf[:, 1]] == vf[:, :1])
    assert not np.any(edges[ee[:, 0]][:, :, None] == edges[ee[:, 1]][:, None, :])
    assert np.all(ee[:, 0] < ee[:, 1])


def test_twenty_thousand_triangles_against_sweep_reference():
    """Match an independent sort-along-x count on a 20 480-triangle sphere pile and print the timing."""
    rng = np.random.default_rng(5)
    x0, x1, faces, group = sphere_pile(16, 3, rng)
    edges = build_edges(faces)
    inflation = 1e-3
    collision_candidates(x0, x1, faces, edges, group, inflation)  # compile / load
    start = time.perf_counter()
    vf, ee = collision_candidates(x0, x1, faces, edges, group, inflation)
    seconds = time.perf_counter() - start
    vertices = np.arange(len(x0))[:, None]
    vlo, vhi = boxes(x0, x1, vertices, inflation)
    flo, fhi = boxes(x0, x1, faces, inflation)
    elo, ehi = boxes(x0, x1, edges, inflation)
    assert len(vf) == _sweep_count(vlo, vhi, flo, fhi, vertices, faces, group, False)
    assert len(ee) == _sweep_count(elo, ehi, elo, ehi, edges, edges, group, True)
    assert len(vf) > 0 and len(ee) > 0
    # sorted, unique rows
    for pairs in (vf, ee):
        keys = pairs[:, 0] * (len(edges) + 1) + pairs[:, 1]
        assert np.all(np.diff(keys) > 0)
    print(f"\n{len(faces)} triangles, {len(edges)} edges: {len(vf)} VF + {len(ee)} EE candidates in {seconds:.3f} s")


def test_small_scene_with_one_wide_ground_triangle_terminates_and_is_exact():
    """Regression: a cube (12 faces) over one ground triangle about 7 cells wide. The hash table is sized from
    the 13 primitives (32 slots) and the triangle alone covers 49 cells; the load check ran only after
    each primitive, so probing the full table never ended."""
    corners = np.array([[sx, sy, sz] for sx in (0, 1) for sy in (0, 1) for sz in (0, 1)], dtype=float) * 0.1
    cube = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                     [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]])  # fmt: skip
    angles = np.radians([90.0, 210.0, 330.0])  # the IPC world's ground: one triangle around the scene
    ground = np.stack([7.4 * np.cos(angles), 7.4 * np.sin(angles), np.full(3, -1e-3)], axis=1)
    x0 = np.vstack([corners, ground])
    faces = np.vstack([cube, [[8, 9, 10]]]).astype(np.int64)
    group = np.array([0] * 8 + [-1] * 3, dtype=np.int64)
    edges = build_edges(faces)
    vf, ee = collision_candidates(x0, x0, faces, edges, group, 2e-3)
    vf_ref, ee_ref = brute_force(x0, x0, faces, edges, group, 2e-3)
    assert {tuple(r) for r in vf_ref if r[1] == 12} == {(0, 12), (2, 12), (4, 12), (6, 12)}  # bottom corners
    np.testing.assert_array_equal(vf, vf_ref)
    np.testing.assert_array_equal(ee, ee_ref)
