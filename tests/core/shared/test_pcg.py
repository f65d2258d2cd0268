"""The one preconditioned CG of core/linalg and its two engine adapters (soft world, IPC).

References: ``numpy.linalg.solve`` on random SPD systems, and golden fingerprints of the soft and IPC solves
recorded from the engines' own CG loops before they became adapters of the shared kernel (bit for bit: the
iterate, the iteration count, the residual and the outcome).
"""

import hashlib

import numpy as np
import pytest
from block_systems import ipc_operator
from contact_lab.core.ipc.newton_system import ipc_pcg
from contact_lab.core.linalg.pcg import ITERATION_LIMIT, NEGATIVE_CURVATURE, SOLVED, preconditioned_cg
from contact_lab.core.soft.contact_elements import ELEMENT_NODES
from contact_lab.core.soft.kernels_operator import build_group_preconditioner, operator_apply, world_pcg


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
    inv = np.empty((nodes - 3, 12, 12))
    build_group_preconditioner(csr, terms, h2, node_group, group_nodes, group_size, inv)
    return csr, terms, h2, (node_group, group_nodes, group_size, inv), A


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
    it, res, indefinite = world_pcg(csr, terms, h2, precond, rhs, x, tolerance, max_iterations,
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
    "zero start, tight": "54b34c3fbdd32a38",
    "given start, tight": "0fb343ef3f058331",
    "given start, loose": "c17b07997052b5c0",
    "iteration cap": "2e2c3726acf7f6ce",
    "indefinite": "ec424b107d51dc06",
}
IPC_GOLDEN = {
    "tight": "3de3955d6baa616b",
    "loose": "b099aa779b709016",
    "iteration cap": "ea9f764427e0479f",
    "indefinite": "595bff02d41b5aa3",
}


@pytest.mark.parametrize("case", list(SOFT_CASES))
def test_soft_pcg_is_bit_identical_to_its_recorded_loop(case):
    """world_pcg on the shared kernel repeats, bit for bit, what the soft world's own CG loop returned."""
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
    it, res, indefinite = world_pcg(csr, terms, h2, precond, rhs, x, 1e-12, 500, np.zeros((4, n)))
    exact = np.linalg.solve(dense, rhs)
    assert not indefinite and 0 < it < 500 and res <= 1e-12
    assert np.abs(x - exact).max() <= 1e-9 * np.abs(exact).max()


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
    assert world_pcg(csr, terms, h2, precond, np.zeros(n), x, 1e-10, 50, np.zeros((4, n))) == (0, 0.0, False)
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
