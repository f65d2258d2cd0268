"""The one preconditioned CG of core/linalg and its two engine adapters (soft world, IPC).

References: ``numpy.linalg.solve`` on random SPD systems, the soft world's transformed operator against the dense
``C^-1 A C^-T`` it stands for, a block-Jacobi CG in numpy on a lattice's matrix, and golden fingerprints of the soft
and IPC solves (bit for bit: the iterate, the iteration count, the residual and the outcome; IPC's recorded from
its engine's own CG loop before it became an adapter of the shared kernel).
"""

import hashlib

import numpy as np
import pytest
from block_systems import ipc_operator
from contact_lab.core.ipc.newton_system import ipc_pcg
from contact_lab.core.linalg.pcg import ITERATION_LIMIT, NEGATIVE_CURVATURE, SOLVED, preconditioned_cg
from contact_lab.core.soft.contact_elements import ELEMENT_NODES
from contact_lab.core.soft.kernels_operator import build_group_preconditioner, operator_apply
from contact_lab.core.soft.kernels_sgs import (
    _apply_transformed,
    coupling_pattern,
    gather_coupling,
    group_layout,
    world_pcg,
)


def _spd(rng, n, shift):
    """A dense symmetric (n, n) matrix ``Q Q^T + shift I`` (indefinite for a negative enough shift)."""
    Q = rng.normal(size=(n, n))
    return Q @ Q.T + shift * np.eye(n)


def soft_system(seed, nodes=8, elements=5, shift=None):
    """Arguments of ``world_pcg`` for a dense CSR matrix plus random contact, friction and volume terms, with one
    4-node group (a dynamic box) and single-node groups: ``(csr, terms, h2, precond, dense A)``."""
    rng = np.random.default_rng(seed)
    n = 3 * nodes
    A = _spd(rng, n, n if shift is None else shift)
    indptr = np.arange(0, n * n + 1, n, dtype=np.int64)
    indices = np.tile(np.arange(n, dtype=np.int64), n)
    csr = (indptr, indices, A.ravel().copy())
    el_nodes = np.full((elements, ELEMENT_NODES), -1, np.int64)
    el_nodes[:, :3] = rng.integers(0, nodes, (elements, 3))
    el_coef = np.zeros((elements, ELEMENT_NODES))
    el_coef[:, :3] = rng.normal(size=(elements, 3))
    el_fcoef = np.zeros((elements, ELEMENT_NODES))
    el_fcoef[:, :3] = rng.normal(size=(elements, 3))
    g = rng.normal(size=(elements, 3))
    el_g = g / np.linalg.norm(g, axis=1)[:, None]
    el_stiff = rng.uniform(0.5, 2.0, elements)
    el_tangent = rng.normal(size=(elements, 3, 2))
    M = rng.normal(size=(elements, 2, 2))
    el_h2 = M @ M.transpose(0, 2, 1)
    node_free = np.ones(nodes, bool)
    node_body = np.zeros(nodes, np.int64)
    vol_grad = rng.normal(size=(nodes, 3))
    vol_curv = np.array([0.7])
    terms = (np.array([elements], np.int64), el_nodes, el_coef, el_g, el_stiff, el_fcoef, el_tangent, el_h2,
             node_free, node_body, vol_grad, vol_curv)  # fmt: skip
    node_group = np.r_[np.zeros(4, np.int64), np.arange(1, nodes - 3, dtype=np.int64)]
    group_nodes = np.full((nodes - 3, 4), -1, np.int64)
    group_nodes[0] = np.arange(4)
    group_nodes[1:, 0] = np.arange(4, nodes)
    group_size = np.r_[4, np.ones(nodes - 4, np.int64)]
    h2 = 0.3
    return (csr, terms, h2, group_preconditioner(csr, terms, h2, node_group, group_nodes, group_size), A)


def group_preconditioner(csr, terms, h2, node_group, group_nodes, group_size):
    """``world_pcg``'s preconditioner data for the CSR ``csr`` with the matrix-free ``terms``."""
    n = csr[0].shape[0] - 1
    dofs, width, offset = group_layout(group_nodes, group_size)
    packed = np.zeros((4, offset[-1]))
    build_group_preconditioner(csr, terms, h2, node_group, group_nodes, group_size, offset, packed)
    low, up = coupling_pattern(csr[0], csr[1], node_group, group_nodes, group_size)
    for coupling in (low, up):
        gather_coupling(csr[2], coupling[3], coupling[4])
    return dofs, width, offset, packed, low, up, np.zeros((5, n))


def ipc_system(seed, nodes=10, shift=None):
    """Arguments of ``ipc_pcg`` for a dense matrix stored as node blocks (no pairs), block-Jacobi inverses."""
    rng = np.random.default_rng(seed)
    A = _spd(rng, 3 * nodes, 3 * nodes if shift is None else shift)
    return ipc_operator(A), A


def run_soft(seed, start, tolerance, max_iterations, shift=None):
    """``(x, iterations, residual, indefinite)`` of ``world_pcg`` from the start ``start`` ('zero' or 'random')."""
    csr, terms, h2, precond, A = soft_system(seed, shift=shift)
    rng = np.random.default_rng(100 + seed)
    rhs = rng.normal(size=A.shape[0])
    x = rng.normal(size=A.shape[0]) if start == "random" else np.zeros(A.shape[0])
    it, res, indefinite = world_pcg(terms, h2, precond, rhs, x, tolerance, max_iterations,
                                    np.zeros((4, A.shape[0])))  # fmt: skip
    return x, it, res, indefinite


def run_ipc(seed, tolerance, max_iterations, shift=None):
    """``(x, iterations, residual, outcome)`` of ``ipc_pcg`` (which starts at 0 whatever ``x`` holds)."""
    args, A = ipc_system(seed, shift=shift)
    rhs = np.random.default_rng(200 + seed).normal(size=A.shape[0])
    x = np.full(A.shape[0], 7.0)
    it, res, outcome = ipc_pcg(*args, rhs, x, tolerance, max_iterations, np.zeros((4, A.shape[0])))
    return x, it, res, outcome


def fingerprint(x, it, res, flag):
    """sha256 (first 16 hex digits) of the iterate's bytes, the iteration count, the residual's bits and the flag."""
    h = hashlib.sha256(np.ascontiguousarray(x).tobytes())
    h.update(f"{int(it)} {float(res).hex()} {int(flag)}".encode())
    return h.hexdigest()[:16]


def soft_dense_operator(csr, terms, h2, n):
    """The soft world's whole operator (CSR plus the matrix-free terms) as a dense (n, n) matrix, column by column."""
    dense = np.empty((n, n))
    unit = np.zeros(n)
    column = np.empty(n)  # contiguous, like the engine's vectors (a strided column would compile another kernel)
    for j in range(n):
        unit[j] = 1.0
        operator_apply(csr, terms, h2, unit, column)
        dense[:, j] = column
        unit[j] = 0.0
    return dense


SOFT_CASES = {
    "zero start, tight": (1, "zero", 1e-10, 200, None),
    "given start, tight": (2, "random", 1e-10, 200, None),
    "given start, loose": (3, "random", 1e-2, 200, None),
    "iteration cap": (4, "random", 1e-12, 3, None),
    "indefinite": (5, "random", 1e-10, 200, -12.0),
}
IPC_CASES = {
    "tight": (1, 1e-10, 200, None),
    "loose": (2, 1e-2, 200, None),
    "iteration cap": (3, 1e-12, 4, None),
    "indefinite": (4, 1e-10, 200, -12.0),
}
SOFT_GOLDEN = {
    "zero start, tight": "cae77cf632a223f4",
    "given start, tight": "f0a8c66f42ce3557",
    "given start, loose": "c6f5ba8a2412eba6",
    "iteration cap": "755e968cfd9eb94b",
    "indefinite": "c39f7c9e293dc6da",
}
IPC_GOLDEN = {
    "tight": "3de3955d6baa616b",
    "loose": "b099aa779b709016",
    "iteration cap": "ea9f764427e0479f",
    "indefinite": "595bff02d41b5aa3",
}


@pytest.mark.parametrize("case", list(SOFT_CASES))
def test_soft_pcg_repeats_its_recorded_results(case):
    """world_pcg repeats, bit for bit, its recorded iterate, iteration count, residual and outcome."""
    assert fingerprint(*run_soft(*SOFT_CASES[case])) == SOFT_GOLDEN[case]


@pytest.mark.parametrize("case", list(IPC_CASES))
def test_ipc_pcg_is_bit_identical_to_its_recorded_loop(case):
    """ipc_pcg on the shared kernel repeats, bit for bit, what the IPC engine's own CG loop returned."""
    assert fingerprint(*run_ipc(*IPC_CASES[case])) == IPC_GOLDEN[case]


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_soft_adapter_solves_an_spd_system_like_numpy(seed):
    """The shared CG with the soft world's operator (CSR, contact, friction and volume terms) and group
    preconditioner, from a random start, agrees with numpy.linalg.solve on the dense operator."""
    csr, terms, h2, precond, A = soft_system(seed)
    n = A.shape[0]
    dense = soft_dense_operator(csr, terms, h2, n)
    assert np.allclose(dense, dense.T, rtol=0, atol=1e-12) and np.linalg.eigvalsh(dense).min() > 0.0
    rng = np.random.default_rng(seed)
    rhs = rng.normal(size=n)
    x = rng.normal(size=n)
    it, res, indefinite = world_pcg(terms, h2, precond, rhs, x, 1e-12, 500, np.zeros((4, n)))
    exact = np.linalg.solve(dense, rhs)
    assert not indefinite and 0 < it < 500 and res <= 1e-12
    assert np.abs(x - exact).max() <= 1e-9 * np.abs(exact).max()


def _group_of_dof(dofs, width, n):
    """The preconditioner group of every dof, (n,)."""
    out = np.empty(n, np.int64)
    for grp in range(dofs.shape[0]):
        out[dofs[grp, : width[grp]]] = grp
    return out


@pytest.mark.parametrize("seed", [31, 32])
def test_soft_transformed_operator_is_the_split_preconditioned_matrix(seed):
    """The product CG runs on (Eisenstat's form) is ``C^-1 A C^-T`` with ``C = (D + L) R^-T``, built densely from
    the whole operator ``A`` (CSR, contact, friction and volume terms): ``D = R R^T`` the groups' blocks as factored,
    ``L`` the CSR's blocks below them in group order."""
    csr, terms, h2, precond, A = soft_system(seed)
    n = A.shape[0]
    dense = soft_dense_operator(csr, terms, h2, n)
    dofs, width, offset, packed = precond[:4]
    group = _group_of_dof(dofs, width, n)
    R = np.zeros((n, n))
    for grp in range(dofs.shape[0]):
        own = dofs[grp, : width[grp]]
        R[np.ix_(own, own)] = packed[0, offset[grp] : offset[grp + 1]].reshape(own.size, own.size)
    D = R @ R.T
    L = np.where(group[:, None] > group[None, :], A, 0.0)
    C = (D + L) @ np.linalg.inv(R.T)
    expected = np.linalg.solve(C, np.linalg.solve(C, dense.T).T)
    got = np.empty((n, n))
    unit, column = np.zeros(n), np.empty(n)
    for j in range(n):
        unit[j] = 1.0
        _apply_transformed((terms, h2, precond), unit, column)
        got[:, j] = column
        unit[j] = 0.0
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10 * np.abs(expected).max())


def _lattice_system(side):
    """``M + K`` of a ``side^3`` lattice of nodes, unit masses, springs of stiffness 40 along the lattice's edges
    in every direction (a Laplacian times the 3x3 identity): a mesh's coupling, as a dense CSR of node blocks."""
    nodes = side**3
    K = np.zeros((nodes, nodes))
    index = np.arange(nodes).reshape(side, side, side)
    for axis in range(3):
        a = np.take(index, range(side - 1), axis=axis).ravel()
        b = np.take(index, range(1, side), axis=axis).ravel()
        K[a, a] += 40.0
        K[b, b] += 40.0
        K[a, b] -= 40.0
        K[b, a] -= 40.0
    A = np.kron(np.eye(nodes) + K, np.eye(3))
    n = 3 * nodes
    csr = (np.arange(0, n * n + 1, n, dtype=np.int64), np.tile(np.arange(n, dtype=np.int64), n), A.ravel().copy())
    empty = np.zeros((0, ELEMENT_NODES))
    terms = (np.zeros(1, np.int64), np.zeros((0, ELEMENT_NODES), np.int64), empty, np.zeros((0, 3)), np.zeros(0),
             empty, np.zeros((0, 3, 2)), np.zeros((0, 2, 2)), np.ones(nodes, bool), np.zeros(nodes, np.int64),
             np.zeros((nodes, 3)), np.zeros(0))  # fmt: skip
    group_nodes = np.full((nodes, 4), -1, np.int64)
    group_nodes[:, 0] = np.arange(nodes)
    precond = group_preconditioner(csr, terms, 1.0, np.arange(nodes), group_nodes, np.ones(nodes, np.int64))
    return terms, precond, A


def _block_jacobi_iterations(A, rhs, target):
    """Iterations a CG preconditioned by the inverse 3x3 diagonal blocks (numpy) needs to bring ``||rhs - A x||``
    to ``target``."""
    n = A.shape[0]
    inv = np.zeros_like(A)
    for i in range(0, n, 3):
        inv[i : i + 3, i : i + 3] = np.linalg.inv(A[i : i + 3, i : i + 3])
    x = np.zeros(n)
    r = rhs.copy()
    z = inv @ r
    p = z.copy()
    for it in range(1, 10 * n):
        q = A @ p
        alpha = (r @ z) / (p @ q)
        x += alpha * p
        r_new = r - alpha * q
        if np.linalg.norm(rhs - A @ x) <= target:
            return it
        z_new = inv @ r_new
        p = z_new + (r_new @ z_new) / (r @ z) * p
        r, z = r_new, z_new
    raise AssertionError("block Jacobi CG did not converge")


def test_symmetric_gauss_seidel_halves_block_jacobi_iterations_on_a_lattice():
    """On the coupling a mesh gives (a 6^3 lattice of springs), the soft world's CG reaches the residual it stops
    at in about half the iterations a block-Jacobi CG (numpy) needs for the same residual (19 against 37)."""
    terms, precond, A = _lattice_system(6)
    n = A.shape[0]
    rhs = np.random.default_rng(5).normal(size=n)
    x = np.zeros(n)
    it, _, indefinite = world_pcg(terms, 1.0, precond, rhs, x, 1e-8, 500, np.zeros((4, n)))
    reached = np.linalg.norm(rhs - A @ x)
    assert not indefinite and np.abs(x - np.linalg.solve(A, rhs)).max() <= 1e-6 * np.abs(x).max()
    jacobi = _block_jacobi_iterations(A, rhs, reached)
    assert it <= 0.55 * jacobi, (it, jacobi)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_ipc_adapter_solves_an_spd_system_like_numpy(seed):
    """The shared CG with the IPC node-block operator and block-Jacobi preconditioner, from 0, agrees with
    numpy.linalg.solve."""
    args, A = ipc_system(seed)
    n = A.shape[0]
    rhs = np.random.default_rng(seed).normal(size=n)
    x = np.empty(n)
    it, res, outcome = ipc_pcg(*args, rhs, x, 1e-12, 500, np.zeros((4, n)))
    exact = np.linalg.solve(A, rhs)
    assert outcome == SOLVED and 0 < it < 500 and res <= 1e-12
    assert np.abs(x - exact).max() <= 1e-9 * np.abs(exact).max()


def test_zero_rhs_gives_zero_without_iterating():
    """``A x = 0`` has the solution 0: both adapters return it, whatever the start, with no iteration."""
    csr, terms, h2, precond, A = soft_system(21)
    n = A.shape[0]
    x = np.ones(n)
    assert world_pcg(terms, h2, precond, np.zeros(n), x, 1e-10, 50, np.zeros((4, n))) == (0, 0.0, False)
    assert not x.any()
    args, A = ipc_system(21)
    x = np.ones(A.shape[0])
    assert ipc_pcg(*args, np.zeros(A.shape[0]), x, 1e-10, 50, np.zeros((4, A.shape[0]))) == (0, 0.0, SOLVED)
    assert not x.any()


def test_outcomes_of_the_recorded_cases():
    """The cap and the indefinite matrix give the outcome codes (the golden cases above fix their bits)."""
    assert run_ipc(*IPC_CASES["iteration cap"])[3] == ITERATION_LIMIT
    assert run_ipc(*IPC_CASES["indefinite"])[3] == NEGATIVE_CURVATURE
    assert run_soft(*SOFT_CASES["indefinite"])[3]
    assert not run_soft(*SOFT_CASES["iteration cap"])[3]


def test_one_compiled_cg_per_engine_and_cacheable():
    """The shared CG is inlined into each engine's solve (never compiled on its own), and the engines' solves
    hold no process-specific address, so numba caches them: a bake compiles no more than before."""
    run_soft(*SOFT_CASES["zero start, tight"])
    run_ipc(*IPC_CASES["tight"])
    for kernel in (world_pcg, ipc_pcg):
        assert not any(result.library.has_dynamic_globals for result in kernel.overloads.values())
        assert len(kernel.signatures) == 1
    assert preconditioned_cg.signatures == []


if __name__ == "__main__":
    # Print the fingerprints of the current code (used once to record the golden values above).
    for name, case in SOFT_CASES.items():
        out = run_soft(*case)
        print("soft", repr(name), fingerprint(*out), out[1:])
    for name, case in IPC_CASES.items():
        out = run_ipc(*case)
        print("ipc", repr(name), fingerprint(*out), out[1:])
