"""The IPC Newton system: exact neo-Hookean Hessian, node-block matrix, truncated PCG, per-stencil PSD projection,
and the convergence they buy on a soft cube pressed onto its corners (issue 13).

References: the soft engine's generic per-tet tangent chain rule (another derivation of the same Hessian) and
central differences of the elastic gradient; dense NumPy assembly and solves; NumPy's LAPACK eigen-decomposition
for the PSD projection.
"""

import numpy as np
import pytest
from block_systems import ipc_operator
from contact_lab.core.enums import ShapeType
from contact_lab.core.fem.kernels_elastic import world_elastic_gradient
from contact_lab.core.fem.materials import MaterialModel, tet_hessian_block, tet_workspace
from contact_lab.core.fem.primitives import box_tet_mesh
from contact_lab.core.fem.tet_mesh import compute_rest_shape, deformation_gradient
from contact_lab.core.fem.world import SoftWorldBuilder
from contact_lab.core.ipc import distance as dist
from contact_lab.core.ipc.barrier import barrier_first_derivative, barrier_second_derivative
from contact_lab.core.ipc.elasticity import elastic_gradient_and_hessian
from contact_lab.core.ipc.frame_loop import iter_simulate_ipc
from contact_lab.core.ipc.ipc_solver import IpcSettings, IpcSolver
from contact_lab.core.ipc.ipc_world import BOX_TRIANGLES, IpcWorld
from contact_lab.core.ipc.kernels import PAIR_PT, barrier_assemble
from contact_lab.core.ipc.newton_system import NEGATIVE_CURVATURE, SOLVED, ipc_pcg
from contact_lab.core.linalg.block_sparse import BlockPattern, add_element_matrices, block_matvec, block_to_dense

# --------------------------------------------------------------------------- elasticity


def _deformed_lattice(seed, materials):
    """A 2x2x2-cell box (48 tets), every node moved at random by up to 15 % of a cell (all tets stay upright)."""
    rng = np.random.default_rng(seed)
    X, T = box_tet_mesh((2, 2, 2), (0.0, 0.0, 0.0), (0.2, 0.2, 0.2))
    Dm_inv, volume = compute_rest_shape(X, T)
    x = X + rng.uniform(-0.015, 0.015, X.shape) + 0.3 * X @ rng.normal(size=(3, 3)).T * 0.3
    mu = rng.uniform(1e4, 1e5, len(T))
    lam = rng.uniform(1e4, 1e6, len(T))
    material = rng.choice(np.array([int(m) for m in materials]), len(T))
    return x, T, Dm_inv, volume, mu, lam, material


def _generic_dense(x, T, Dm_inv, volume, mu, lam, material, project):
    """Dense Hessian (3V, 3V) from the soft engine's per-tet kernel (9x9 tangent, chain rule), assembled by NumPy."""
    n = x.shape[0]
    H = np.zeros((3 * n, 3 * n))
    F = np.empty((3, 3))
    out = np.empty((12, 12))
    for t in range(len(T)):
        deformation_gradient(x, T[t], Dm_inv[t], F)
        scratch = (np.empty((4, 3)), np.empty((9, 9)), np.empty(9), np.empty(9), np.empty((9, 12)))
        tet_hessian_block(F, mu[t], lam[t], material[t], project, Dm_inv[t], volume[t], tet_workspace(), *scratch, out)
        dofs = (3 * T[t][:, None] + np.arange(3)).ravel()
        H[np.ix_(dofs, dofs)] += out
    return H


@pytest.mark.parametrize("project", [False, True])
def test_elastic_hessian_equals_the_generic_tangent_chain_rule(project):
    """Assemble the node blocks (closed-form neo-Hookean when exact, eigensystem when projected, the generic
    kernel for corotated tets) and compare with the soft engine's per-tet kernel assembled densely (1e-10)."""
    x, T, Dm_inv, volume, mu, lam, material = _deformed_lattice(
        1, [MaterialModel.NEOHOOKEAN, MaterialModel.NEOHOOKEAN, MaterialModel.COROTATED]
    )
    pattern = BlockPattern.from_element_groups([T], x.shape[0])
    blocks = pattern.zeros()
    grad = np.zeros_like(x)
    elastic_gradient_and_hessian(x, T, Dm_inv, volume, mu, lam, material, 2.5, project, pattern.element_index[0],
                                 grad, blocks)  # fmt: skip
    reference = 2.5 * _generic_dense(x, T, Dm_inv, volume, mu, lam, material, project)
    ours = block_to_dense(pattern, blocks)
    assert np.abs(reference).max() > 0.0
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-10 * np.abs(reference).max())
    expected_grad = np.zeros_like(x)
    world_elastic_gradient(x, T, Dm_inv, volume, mu, lam, material, expected_grad)
    np.testing.assert_allclose(grad, 2.5 * expected_grad, rtol=0, atol=1e-12 * np.abs(expected_grad).max())
    if not project:  # the exact one has negative curvature here (compressed tets), the projected one none
        assert np.linalg.eigvalsh(ours).min() < -1e-6 * np.abs(ours).max()
    else:
        assert np.linalg.eigvalsh(ours).min() > -1e-9 * np.abs(ours).max()


def test_exact_neo_hookean_hessian_matches_central_differences():
    """The closed-form blocks are the derivative of the elastic gradient (central differences, 1e-6 relative)."""
    x, T, Dm_inv, volume, mu, lam, material = _deformed_lattice(2, [MaterialModel.NEOHOOKEAN])
    pattern = BlockPattern.from_element_groups([T], x.shape[0])
    blocks = pattern.zeros()
    elastic_gradient_and_hessian(x, T, Dm_inv, volume, mu, lam, material, 1.0, False, pattern.element_index[0],
                                 np.zeros_like(x), blocks)  # fmt: skip
    ours = block_to_dense(pattern, blocks)
    h = 1e-7
    fd = np.zeros_like(ours)
    for k in range(x.size):
        gp, gm = np.zeros_like(x), np.zeros_like(x)
        xp, xm = x.copy(), x.copy()
        xp.flat[k] += h
        xm.flat[k] -= h
        world_elastic_gradient(xp, T, Dm_inv, volume, mu, lam, material, gp)
        world_elastic_gradient(xm, T, Dm_inv, volume, mu, lam, material, gm)
        fd[:, k] = (gp - gm).ravel() / (2 * h)
    assert np.abs(ours - fd).max() < 1e-6 * np.abs(fd).max()


# --------------------------------------------------------------------------- block matrix and PCG


def test_block_pattern_assembly_and_product_equal_dense():
    """Element matrices scattered through the block pattern (two groups, one node in no element) give the dense
    sum of ``P_e^T A_e P_e`` and its product with a vector."""
    rng = np.random.default_rng(3)
    nodes = 9
    tets = rng.permuted(np.tile(np.arange(8), (5, 1)), axis=1)[:, :4]
    pairs = np.array([[0, 8], [3, 8]])
    pattern = BlockPattern.from_element_groups([tets, pairs], nodes)
    blocks = pattern.zeros()
    A = rng.normal(size=(len(tets), 12, 12))
    B = rng.normal(size=(len(pairs), 6, 6))
    add_element_matrices(A, pattern.element_index[0], 1.0, blocks)
    add_element_matrices(B, pattern.element_index[1], -2.0, blocks)
    dense = np.zeros((3 * nodes, 3 * nodes))
    for group, mats, scale in ((tets, A, 1.0), (pairs, B, -2.0)):
        for e, element in enumerate(group):
            dofs = (3 * element[:, None] + np.arange(3)).ravel()
            dense[np.ix_(dofs, dofs)] += scale * mats[e]
    np.testing.assert_allclose(block_to_dense(pattern, blocks), dense, rtol=0, atol=1e-12)
    assert (pattern.column[pattern.diagonal] == np.arange(nodes)).all()
    p = rng.normal(size=3 * nodes)
    out = np.empty_like(p)
    block_matvec(pattern.row_start, pattern.column, blocks, p, out)
    np.testing.assert_allclose(out, dense @ p, rtol=0, atol=1e-12)


def _pcg(dense, rhs, tolerance):
    """ipc_pcg on a dense symmetric matrix stored as one block row per node (no pairs, Jacobi blocks inverted)."""
    n = dense.shape[0] // 3
    x = np.full(3 * n, 7.0)  # overwritten: the solve starts at 0
    it, res, outcome = ipc_pcg(*ipc_operator(dense), rhs, x, tolerance, 500, np.zeros((4, 3 * n)))
    return x, it, res, outcome


def test_pcg_reaches_its_relative_residual_on_an_spd_system():
    """On an SPD system the result's true relative residual is the reported one, below the tolerance, and tighter
    tolerances approach NumPy's solve."""
    rng = np.random.default_rng(4)
    Q = rng.normal(size=(30, 30))
    A = Q @ Q.T + 30 * np.eye(30)
    b = rng.normal(size=30)
    exact = np.linalg.solve(A, b)
    for tolerance in (1e-2, 1e-8):
        x, it, res, outcome = _pcg(A, b, tolerance)
        assert outcome == SOLVED and 0 < it <= 30
        true = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
        assert true <= tolerance and true == pytest.approx(res, rel=1e-6, abs=1e-14)
    assert np.abs(x - exact).max() < 1e-6 * np.abs(exact).max()


def test_pcg_stops_at_negative_curvature_with_a_descent_direction():
    """An indefinite system is reported (NEGATIVE_CURVATURE), and the iterate returned still descends along the
    objective whose gradient is ``-rhs`` (``x . rhs > 0``)."""
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.normal(size=(30, 30)))
    A = Q @ np.diag(np.r_[np.linspace(1.0, 10.0, 27), -1.0, -2.0, -3.0]) @ Q.T
    found = 0
    for seed in range(20):
        b = np.random.default_rng(seed).normal(size=30)
        x, it, _, outcome = _pcg(A, b, 1e-10)
        if outcome == NEGATIVE_CURVATURE:
            found += 1
            assert it == 0 or x @ b > 0.0
    assert found > 0


# --------------------------------------------------------------------------- barrier projection


def test_barrier_blocks_are_projected_on_the_stencil_of_moving_vertices():
    """A pair block is the PSD clamp of the exact barrier Hessian restricted to the vertices that move: all four
    (point against a soft triangle) or only the point (against a static triangle, whose rows are zero)."""
    rng = np.random.default_rng(6)
    checked = 0
    for _ in range(40):
        xs = rng.normal(size=(4, 3))
        d2 = dist.point_triangle_distance2(*xs)
        dhat2 = d2 / rng.uniform(0.2, 0.9)
        kappa = 10.0 ** rng.uniform(0, 3)
        g, H = np.empty(12), np.empty((12, 12))
        dist.point_triangle_distance2_derivatives(*xs, g, H)
        exact = kappa * (
            barrier_second_derivative(d2, dhat2) * np.outer(g, g) + barrier_first_derivative(d2, dhat2) * H
        )
        quads = np.array([[0, 1, 2, 3]], np.int64)
        kinds = np.array([PAIR_PT], np.int64)
        for free in (np.ones(4, bool), np.array([True, False, False, False])):
            rows = np.flatnonzero(np.repeat(free, 3))
            sub = exact[np.ix_(rows, rows)]
            w, V = np.linalg.eigh(sub)
            expected = np.zeros((12, 12))
            expected[np.ix_(rows, rows)] = (V * np.maximum(w, 0.0)) @ V.T
            blocks = np.empty((1, 12, 12))
            count, _ = barrier_assemble(xs, quads, kinds, xs, free, dhat2, kappa, np.zeros((4, 3)),
                                        np.empty((1, 4), np.int64), blocks)  # fmt: skip
            assert count == 1
            np.testing.assert_allclose(blocks[0], expected, rtol=0, atol=1e-9 * np.abs(exact).max())
            checked += (w < 0).any()
    assert checked > 0  # some of them needed the clamp


def test_near_pairs_keeps_every_pair_that_comes_within_dhat():
    """Candidates dropped by ``near_pairs`` stay farther than dhat all along the motion (distances sampled at 201
    points of the segment, brute force over all pairs); with no motion, the kept pairs are exactly those within
    dhat."""
    from contact_lab.core.ipc.broad_phase import build_edges
    from contact_lab.core.ipc.kernels import near_pairs

    rng = np.random.default_rng(7)
    faces = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [2, 9, 10]], np.int64)
    edges = build_edges(faces)
    vf = np.array([(v, f) for v in range(11) for f in range(len(faces)) if v not in faces[f]], np.int64)
    ee = np.array([(a, b) for a in range(len(edges)) for b in range(a + 1, len(edges))
                   if not set(edges[a]) & set(edges[b])], np.int64)  # fmt: skip
    dropped = kept_static = 0
    for _ in range(30):
        xs0 = rng.uniform(0.0, 1.0, (11, 3))
        xs1 = xs0 + rng.normal(0.0, 0.2, (11, 3))
        dhat = rng.uniform(0.05, 0.3)
        kvf, kee = near_pairs(xs0, xs1, vf, ee, faces, edges, dhat)
        kept = {("vf", *r) for r in kvf.tolist()} | {("ee", *r) for r in kee.tolist()}
        for t in np.linspace(0.0, 1.0, 201):
            x = xs0 + t * (xs1 - xs0)
            for v, f in vf.tolist():
                if dist.point_triangle_distance2(x[v], *x[faces[f]]) < dhat * dhat:
                    assert ("vf", v, f) in kept
            for a, b in ee.tolist():
                if dist.edge_edge_distance2(*x[edges[a]], *x[edges[b]]) < dhat * dhat:
                    assert ("ee", a, b) in kept
        dropped += len(vf) + len(ee) - len(kept)
        svf, see = near_pairs(xs0, xs0, vf, ee, faces, edges, dhat)
        near_vf = [r for r in vf.tolist() if dist.point_triangle_distance2(xs0[r[0]], *xs0[faces[r[1]]]) < dhat**2]
        near_ee = [r for r in ee.tolist() if dist.edge_edge_distance2(*xs0[edges[r[0]]], *xs0[edges[r[1]]]) < dhat**2]
        assert svf.tolist() == near_vf and see.tolist() == near_ee
        kept_static += len(near_vf) + len(near_ee)
    assert dropped > 0 and kept_static > 0


# --------------------------------------------------------------------------- convergence (issue 13)


def _corner_cube_world(cells=8, size=2.0):
    """The default cube's situation: a 2 m Flesh lattice whose contact surface is its 8 corners and 12 triangles
    (an embedded 8-vertex render cube), 10 cm above a plane. The lattice between the corners carries the weight."""
    lo = np.full(3, -size / 2)
    V, T = box_tet_mesh((cells,) * 3, lo, lo + size)
    corners = [int(np.argmin(np.linalg.norm(V - (lo + size * np.array(s)), axis=1))) for s in np.ndindex(2, 2, 2)]
    tet_of = np.array([np.flatnonzero((T == n).any(axis=1))[0] for n in corners])
    weights = (T[tet_of] == np.array(corners)[:, None]).astype(float)
    b = SoftWorldBuilder()
    b.add_soft_body(V, T, youngs_modulus=1e5, poisson_ratio=0.45, density=1050, friction=0.5,
                    contact_points=(tet_of, weights), contact_triangles=BOX_TRIANGLES)  # fmt: skip
    b.add_collider(ShapeType.PLANE, position=(0.0, 0.0, lo[2] - 0.1))
    return IpcWorld(b.finalize())


def test_corner_loaded_cube_converges_in_few_newton_iterations_per_step():
    """Newton with the exact elastic Hessian (projected only on negative curvature) needs at most 6 iterations per
    step on average over 1 s of a soft cube landing on its corners, every step and halving counted; projecting
    every tet's Hessian needed 8.2 (and 19.5 on the 14-cell default cube), its steps accepted whole but shrinking
    ~5 % per iteration. Every frame stays intersection-free and the objective decreases at every iterate."""
    world = _corner_cube_world()
    settings = IpcSettings(substeps=2, check_intersections=True)
    total = solves = 0
    for frame, state in iter_simulate_ipc(world, frame_count=25, fps=24, settings=settings):
        assert state.stats.intersections == 0 and state.stats.inverted == 0
        assert np.all(np.diff(state.stats.energy_history) <= 0.0)
        if frame:
            total += state.stats.newton_total
            solves += state.stats.solves
            assert state.stats.converged
    assert solves == 48
    assert total / solves <= 6.0, total / solves


def test_solver_uses_one_thread_on_small_surfaces():
    """The corner cube's 12-triangle surface runs the broad phase and CCD serially (threads restored after)."""
    import numba

    solver = IpcSolver(_corner_cube_world(cells=2))
    assert solver.serial
    before = numba.get_num_threads()
    with solver.thread_policy():
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == before


def test_frame_statistics_count_every_solve_halvings_included(monkeypatch):
    """Each frame's ``newton_total``, ``newton_max``, ``pcg_total`` and ``solves`` are the sum, maximum and count
    over every solver step of the frame, the solves a halving threw away included (recorded one by one from
    ``IpcSolver.step``); the trajectory keeps them per frame."""
    from contact_lab.core.ipc import frame_loop

    calls = []
    step = IpcSolver.step

    def recording_step(self, *args):
        stats = step(self, *args)
        calls.append((stats.newton_iterations, stats.pcg_iterations))
        return stats

    monkeypatch.setattr(IpcSolver, "step", recording_step)
    b = SoftWorldBuilder(gravity=(0.0, 0.0, 0.0))
    for x in (-0.15, 0.15):  # two 5 cm cubes thrown head-on at 5 m/s each: the steps are halved
        V, T = box_tet_mesh((2, 2, 2), (x - 0.025, -0.025, -0.025), (x + 0.025, 0.025, 0.025))
        b.add_soft_body(V, T, youngs_modulus=1e6, poisson_ratio=0.45, density=1100, friction=0.0)
    world = IpcWorld(b.finalize())
    start = world.state()
    half = world.soft.node_count // 2
    start.v[:half, 0], start.v[half:, 0] = 5.0, -5.0
    settings = IpcSettings(dhat=1e-3, substeps=2)
    expected, seen = [], 0
    for frame, state in frame_loop.iter_simulate_ipc(world, frame_count=3, fps=24, settings=settings, state=start):
        if frame:
            mine = calls[seen:]
            seen = len(calls)
            st = state.stats
            assert st.solves == len(mine) == st.steps + st.splits
            assert st.newton_total == sum(n for n, _ in mine) and st.newton_max == max(n for n, _ in mine)
            assert st.pcg_total == sum(p for _, p in mine)
            expected.append((st.solves, st.newton_total, st.newton_max, st.pcg_total))
    assert sum(s for s, *_ in expected) > 4  # halved: 2 substeps x 2 frames is 4
    start = world.state()
    start.v[:half, 0], start.v[half:, 0] = 5.0, -5.0
    traj = frame_loop.simulate(world, frame_count=3, fps=24, settings=settings, state=start)
    recorded = list(zip(traj.solves[1:], traj.newton_total[1:], traj.newton_max[1:], traj.pcg_total[1:], strict=True))
    assert recorded == expected
