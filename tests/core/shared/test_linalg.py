"""CSR pattern, assembly, matvec and PCG, each checked against dense numpy."""

import itertools
import time

import numpy as np
import pytest
from contact_lab.core.linalg import (
    CsrPattern,
    assemble_blocks,
    assemble_scaled_blocks,
    csr_add_diagonal,
    csr_add_scaled_identity,
    csr_combine,
    csr_diagonal,
    csr_diagonal_index,
    csr_matvec,
    csr_to_dense,
    dense_to_csr,
    pcg_solve,
    pcg_solve_block3,
)
from contact_lab.core.linalg.csr import (
    csr_matvec_node_blocks,
    csr_matvec_node_blocks_parallel,
    csr_matvec_serial,
)


def random_tets(rng, node_count, tet_count):
    """Random tets with four distinct nodes each, (tet_count, 4) int64."""
    return np.array([rng.permutation(node_count)[:4] for _ in range(tet_count)], dtype=np.int64)


def grid_tets(nx, ny, nz):
    """Kuhn split of an nx x ny x nz node grid: 6 tets per cell; returns (tets (T, 4), edges (E, 2), node_count)."""
    node = np.arange(nx * ny * nz).reshape(nx, ny, nz)
    tets = []
    for perm in itertools.permutations(range(3)):
        corners = [np.zeros(3, dtype=int)]
        for axis in perm:
            c = corners[-1].copy()
            c[axis] = 1
            corners.append(c)
        tets.append(
            np.stack(
                [node[c[0] : nx - 1 + c[0], c[1] : ny - 1 + c[1], c[2] : nz - 1 + c[2]].ravel() for c in corners],
                axis=1,
            )
        )
    edges = [
        np.stack([node[:-1, :, :].ravel(), node[1:, :, :].ravel()], 1),
        np.stack([node[:, :-1, :].ravel(), node[:, 1:, :].ravel()], 1),
        np.stack([node[:, :, :-1].ravel(), node[:, :, 1:].ravel()], 1),
    ]
    return np.concatenate(tets).astype(np.int64), np.concatenate(edges).astype(np.int64), nx * ny * nz


def dense_assemble(element_nodes, blocks, node_count, bs=3, out=None):
    """Reference: ``sum_e P_e^T A_e P_e`` with numpy fancy indexing, element by element."""
    n = node_count * bs
    dense = np.zeros((n, n)) if out is None else out
    for nodes, block in zip(element_nodes, blocks, strict=True):
        dofs = (nodes[:, None] * bs + np.arange(bs)).ravel()
        dense[np.ix_(dofs, dofs)] += block
    return dense


def random_spd_blocks(rng, count, size, rank, bs=3):
    """Random symmetric PSD element matrices ``G G^T`` (count, size, size) that, like elastic
    stiffness, vanish on rigid translations (each column of G sums to zero per axis)."""
    G = rng.standard_normal((count, size // bs, bs, rank))
    G -= G.mean(axis=1, keepdims=True)
    G = G.reshape(count, size, rank)
    return np.einsum("eik,ejk->eij", G, G)


def spd_system(rng, nx, ny, nz, mass=1.0e-3):
    """``A = m I + L (x) I3 + sum_e P_e^T H_e P_e`` on a tet grid: (pattern, data). SPD."""
    tets, edges, node_count = grid_tets(nx, ny, nz)
    pattern = CsrPattern.from_element_groups([tets, edges], node_count, 3)
    data = pattern.zeros()
    assemble_blocks(random_spd_blocks(rng, len(tets), 12, 6), pattern.scatter_index[0], data)
    edge_block = np.kron(np.array([[1.0, -1.0], [-1.0, 1.0]]), np.eye(3))
    assemble_blocks(np.broadcast_to(edge_block, (len(edges), 6, 6)).copy(), pattern.scatter_index[1], data)
    csr_add_scaled_identity(pattern.diag_index, mass, data)
    return pattern, data


def test_assemble_blocks_matches_dense_assembly_exactly():
    """Scatter random tet and edge blocks into CSR and match a dense numpy assembly bit for bit."""
    rng = np.random.default_rng(1)
    node_count = 40
    tets = random_tets(rng, node_count, 60)
    edges = random_tets(rng, node_count, 30)[:, :2]
    pattern = CsrPattern.from_element_groups([tets, edges], node_count, 3)
    assert pattern.scatter_index[0].shape == (60, 12, 12)
    assert pattern.scatter_index[1].shape == (30, 6, 6)
    tet_blocks = rng.standard_normal((60, 12, 12))
    edge_blocks = rng.standard_normal((30, 6, 6))
    data = pattern.zeros()
    assemble_blocks(tet_blocks, pattern.scatter_index[0], data)
    assemble_blocks(edge_blocks, pattern.scatter_index[1], data)
    reference = dense_assemble(tets, tet_blocks, node_count)
    dense_assemble(edges, edge_blocks, node_count, out=reference)
    assert np.array_equal(csr_to_dense(pattern.indptr, pattern.indices, data), reference)
    # The pattern holds exactly the structural nonzeros plus the full diagonal.
    structure = dense_assemble(tets, np.ones((60, 12, 12)), node_count) + np.eye(pattern.n)
    dense_assemble(edges, np.ones((30, 6, 6)), node_count, out=structure)
    assert pattern.nnz == np.count_nonzero(structure)


def test_pattern_and_assembly_are_deterministic():
    """Build the pattern twice and assemble twice: identical arrays, sorted rows, valid diagonal index."""
    rng = np.random.default_rng(2)
    tets = random_tets(rng, 50, 80)
    p1 = CsrPattern.from_elements(tets, 50)
    p2 = CsrPattern.from_elements([tuple(t) for t in tets], 50)
    for a, b in [(p1.indptr, p2.indptr), (p1.indices, p2.indices), (p1.diag_index, p2.diag_index)]:
        assert np.array_equal(a, b)
    assert np.array_equal(p1.scatter_index[0], p2.scatter_index[0])
    for i in range(p1.n):
        row = p1.indices[p1.indptr[i] : p1.indptr[i + 1]]
        assert np.all(np.diff(row) > 0)
    assert np.array_equal(p1.indices[p1.diag_index], np.arange(p1.n))
    diag_index = np.empty(p1.n, dtype=np.int64)
    csr_diagonal_index(p1.indptr, p1.indices, diag_index)
    assert np.array_equal(diag_index, p1.diag_index)
    blocks = rng.standard_normal((80, 12, 12))
    d1, d2 = p1.zeros(), p1.zeros()
    assemble_blocks(blocks, p1.scatter_index[0], d1)
    assemble_blocks(blocks, p2.scatter_index[0], d2)
    assert d1.tobytes() == d2.tobytes()


def test_an_empty_element_group_adds_nothing_to_the_pattern():
    """A group without elements (e.g. no springs in a world) leaves the pattern of the other groups as it is and
    gets an empty scatter index of its own shape, (0, k * bs, k * bs), for block sizes 3 and 1 (node blocks)."""
    tets = random_tets(np.random.default_rng(3), 20, 15)
    for bs in (3, 1):
        alone = CsrPattern.from_element_groups([tets], 20, bs)
        both = CsrPattern.from_element_groups([tets, np.zeros((0, 2), dtype=np.int64)], 20, bs)
        for a, b in [(alone.indptr, both.indptr), (alone.indices, both.indices), (alone.diag_index, both.diag_index)]:
            assert np.array_equal(a, b)
        assert np.array_equal(alone.scatter_index[0], both.scatter_index[0])
        assert both.scatter_index[1].shape == (0, 2 * bs, 2 * bs)


def test_csr_matvec_matches_dense():
    """Compare csr_matvec with the dense product on an assembled matrix and on a dense_to_csr matrix."""
    rng = np.random.default_rng(3)
    tets = random_tets(rng, 100, 150)
    pattern = CsrPattern.from_elements(tets, 100)
    data = pattern.zeros()
    assemble_blocks(rng.standard_normal((150, 12, 12)), pattern.scatter_index[0], data)
    dense = csr_to_dense(pattern.indptr, pattern.indices, data)
    x = rng.standard_normal(pattern.n)
    out = np.empty(pattern.n)
    csr_matvec(pattern.indptr, pattern.indices, data, x, out)
    np.testing.assert_allclose(out, dense @ x, rtol=1e-13, atol=1e-13 * np.abs(dense).sum(1).max())
    rect = rng.standard_normal((7, 5)) * (rng.random((7, 5)) < 0.5)
    indptr, indices, rdata = dense_to_csr(rect)
    out = np.empty(7)
    y = rng.standard_normal(5)
    csr_matvec(indptr, indices, rdata, y, out)
    np.testing.assert_allclose(out, rect @ y, rtol=1e-14, atol=1e-14)


def test_node_block_matvec_is_the_row_matvec_bit_for_bit():
    """The 3x3-node-block matvec (serial and parallel) returns the bits of the row-by-row CSR matvec on patterns
    of tets, edges and single nodes, and matches the dense product."""
    rng = np.random.default_rng(7)
    tets, edges, node_count = grid_tets(4, 3, 5)
    singles = np.arange(node_count, dtype=np.int64)[:, None]
    for groups in ([tets], [tets, edges], [edges, singles], [random_tets(rng, node_count, 40), singles]):
        pattern = CsrPattern.from_element_groups(groups, node_count, 3)
        data = rng.standard_normal(pattern.nnz)
        x = rng.standard_normal(pattern.n)
        rows, blocks, parallel = (np.empty(pattern.n) for _ in range(3))
        csr_matvec_serial(pattern.indptr, pattern.indices, data, x, rows)
        csr_matvec_node_blocks(pattern.indptr, pattern.indices, data, x, blocks)
        csr_matvec_node_blocks_parallel(pattern.indptr, pattern.indices, data, x, parallel)
        assert blocks.tobytes() == rows.tobytes() and parallel.tobytes() == rows.tobytes()
        dense = csr_to_dense(pattern.indptr, pattern.indices, data)
        np.testing.assert_allclose(blocks, dense @ x, rtol=1e-13, atol=1e-13 * np.abs(dense).sum(1).max())


def test_scaled_assembly_matches_dense_assembly():
    """``assemble_scaled_blocks`` adds ``s_e A_e`` (elements with ``s_e = 0`` contribute nothing), as a dense
    assembly of the scaled blocks does."""
    rng = np.random.default_rng(8)
    tets = random_tets(rng, 30, 50)
    pattern = CsrPattern.from_elements(tets, 30)
    blocks = rng.standard_normal((50, 12, 12))
    scale = rng.uniform(0.5, 2.0, 50)
    scale[::7] = 0.0
    data = pattern.zeros()
    assemble_scaled_blocks(blocks, scale, pattern.scatter_index[0], data)
    reference = dense_assemble(tets, scale[:, None, None] * blocks, 30)
    np.testing.assert_allclose(csr_to_dense(pattern.indptr, pattern.indices, data), reference, rtol=1e-14, atol=1e-14)


def test_diagonal_shift_and_combine_match_dense():
    """Check csr_diagonal, A + a I, A + a diag(m) and a A + b B against dense numpy."""
    rng = np.random.default_rng(4)
    pattern = CsrPattern.from_elements(random_tets(rng, 30, 40), 30)
    K = pattern.zeros()
    assemble_blocks(rng.standard_normal((40, 12, 12)), pattern.scatter_index[0], K)
    Kd = csr_to_dense(pattern.indptr, pattern.indices, K)
    diag = np.empty(pattern.n)
    csr_diagonal(pattern.indptr, pattern.indices, K, diag)
    assert np.array_equal(diag, np.diag(Kd))
    lumped_mass = rng.random(pattern.n) + 0.5
    M = pattern.zeros()
    csr_add_diagonal(pattern.diag_index, lumped_mass, 1.0, M)
    h = 0.01
    A = np.empty_like(K)
    csr_combine(1.0, M, h * h, K, A)
    np.testing.assert_allclose(
        csr_to_dense(pattern.indptr, pattern.indices, A), np.diag(lumped_mass) + h * h * Kd, rtol=1e-15, atol=0
    )
    csr_add_scaled_identity(pattern.diag_index, 2.5, K)
    np.testing.assert_array_equal(csr_to_dense(pattern.indptr, pattern.indices, K), Kd + 2.5 * np.eye(pattern.n))


@pytest.mark.parametrize("solver", [pcg_solve, pcg_solve_block3], ids=["jacobi", "block3"])
def test_pcg_matches_numpy_solve_small(solver):
    """Solve a small SPD tet system and match numpy.linalg.solve to 1e-8 relative."""
    rng = np.random.default_rng(5)
    pattern, data = spd_system(rng, 4, 4, 3)
    A = csr_to_dense(pattern.indptr, pattern.indices, data)
    b = rng.standard_normal(pattern.n)
    x = np.empty(pattern.n)
    iterations, residual = solver(pattern.indptr, pattern.indices, data, b, np.zeros(pattern.n), 1e-12, 10_000, x)
    reference = np.linalg.solve(A, b)
    error = np.linalg.norm(x - reference) / np.linalg.norm(reference)
    print(
        f"\n[pcg small {solver.__name__}] n={pattern.n} iterations={iterations} "
        f"residual={residual:.2e} error={error:.2e}"
    )
    assert residual <= 1e-12
    assert np.linalg.norm(b - A @ x) / np.linalg.norm(b) <= 1e-11  # BLAS sums in another order
    assert error <= 1e-8


def test_pcg_large_sparse_system():
    """Solve a 30k-dof Laplacian + random SPD tet system to relative residual 1e-10 with both preconditioners."""
    rng = np.random.default_rng(6)
    pattern, data = spd_system(rng, 22, 22, 21)
    assert pattern.n >= 30_000
    x_true = rng.standard_normal(pattern.n)
    b = np.empty(pattern.n)
    csr_matvec(pattern.indptr, pattern.indices, data, x_true, b)
    results = {}
    for solver in (pcg_solve, pcg_solve_block3):
        x = np.empty(pattern.n)
        solver(pattern.indptr, pattern.indices, data, b, np.zeros(pattern.n), 1e-10, 1, x)  # compile / load cache
        start = time.perf_counter()
        iterations, residual = solver(pattern.indptr, pattern.indices, data, b, np.zeros(pattern.n), 1e-10, 5_000, x)
        elapsed = time.perf_counter() - start
        r = np.empty(pattern.n)
        csr_matvec(pattern.indptr, pattern.indices, data, x, r)
        true_residual = np.linalg.norm(b - r) / np.linalg.norm(b)
        results[solver.__name__] = iterations
        print(
            f"\n[pcg large {solver.__name__}] n={pattern.n} nnz={pattern.nnz} iterations={iterations} "
            f"residual={residual:.2e} true={true_residual:.2e} x_err={np.abs(x - x_true).max():.2e} time={elapsed:.3f}s"
        )
        assert residual <= 1e-10
        assert true_residual <= 1e-10
        assert iterations < 5_000
        # Same input, same bits: dot products are serial and the matvec sums rows in order.
        x1, x2 = np.empty(pattern.n), np.empty(pattern.n)
        solver(pattern.indptr, pattern.indices, data, b, np.zeros(pattern.n), 1e-10, 40, x1)
        solver(pattern.indptr, pattern.indices, data, b, np.zeros(pattern.n), 1e-10, 40, x2)
        assert x1.tobytes() == x2.tobytes()
    assert results["pcg_solve_block3"] <= results["pcg_solve"] * 1.1


@pytest.mark.parametrize("solver", [pcg_solve, pcg_solve_block3], ids=["jacobi", "block3"])
def test_pcg_zero_rhs_returns_zero(solver):
    """Return x = 0 after 0 iterations when b = 0, whatever the initial guess."""
    rng = np.random.default_rng(7)
    pattern, data = spd_system(rng, 3, 3, 3)
    x = np.full(pattern.n, 7.0)
    iterations, residual = solver(
        pattern.indptr, pattern.indices, data, np.zeros(pattern.n), rng.standard_normal(pattern.n), 1e-10, 100, x
    )
    assert iterations == 0 and residual == 0.0
    assert np.all(x == 0.0)


def test_pcg_warm_start_at_solution_takes_no_iteration():
    """Return immediately when the initial guess already meets the tolerance."""
    rng = np.random.default_rng(8)
    pattern, data = spd_system(rng, 3, 3, 3)
    x_true = rng.standard_normal(pattern.n)
    b = np.empty(pattern.n)
    csr_matvec(pattern.indptr, pattern.indices, data, x_true, b)
    x = np.empty(pattern.n)
    iterations, residual = pcg_solve(pattern.indptr, pattern.indices, data, b, x_true, 1e-10, 100, x)
    assert iterations == 0 and residual <= 1e-10
    assert np.array_equal(x, x_true)


def test_pcg_reports_non_convergence():
    """Report residual > tolerance when capped by max_iterations or when A is indefinite."""
    rng = np.random.default_rng(9)
    pattern, data = spd_system(rng, 8, 8, 8)
    b = rng.standard_normal(pattern.n)
    x = np.empty(pattern.n)
    iterations, residual = pcg_solve(pattern.indptr, pattern.indices, data, b, np.zeros(pattern.n), 1e-10, 3, x)
    assert iterations == 3 and residual > 1e-10
    # Symmetric indefinite: eigenvalues of both signs; CG breaks down or stalls.
    Q, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    A = (Q * np.linspace(-1.0, 1.0, 40)) @ Q.T
    indptr, indices, adata = dense_to_csr(A)
    iterations, residual = pcg_solve(
        indptr, indices, adata, rng.standard_normal(40), np.zeros(40), 1e-10, 200, np.empty(40)
    )
    print(f"\n[pcg indefinite] iterations={iterations} residual={residual:.2e}")
    assert not residual <= 1e-10
    # The textbook breakdown p^T A p = 0 on diag(1, -1).
    indptr, indices, adata = dense_to_csr(np.diag([1.0, -1.0]))
    iterations, residual = pcg_solve(indptr, indices, adata, np.ones(2), np.zeros(2), 1e-10, 50, np.empty(2))
    assert iterations == 1 and residual == pytest.approx(1.0)
