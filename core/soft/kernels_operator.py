"""The soft world's Newton operator, applied matrix-free, its group block-Jacobi preconditioner and PCG.

``A = CSR + h^2 (contact + friction + volume rank-one)``. The CSR holds ``M + h^2 (K_elastic + K_damping)``
and the dynamic boxes' consistent mass; the contact (:mod:`.kernels_penalty`), friction
(:mod:`.kernels_friction`) and volume terms are applied matrix-free. Rows of pinned nodes are identity (the
coefficients of pinned nodes are zeroed). Vectors are flat (3N,).
"""

import numpy as np

from ..jit import njit_kernel
from ..linalg.csr import csr_matvec_node_blocks, csr_matvec_node_blocks_parallel
from ..linalg.pcg import NEGATIVE_CURVATURE, preconditioned_cg
from .contact_elements import ELEMENT_NODES

PARALLEL_MATVEC_ROWS = 30000
"""Below this many rows the operator's CSR product runs serially: a parallel region costs more than it
saves on small systems (and much more when the cores are busy)."""


@njit_kernel
def operator_apply(csr, terms, h2, p, out):
    """``out = A p`` with ``csr = (indptr, indices, data)`` and ``terms = (el_count (1,), el_nodes,
    el_coef, el_g, el_stiff, el_fcoef, el_tangent, el_h2, node_free, node_body, vol_grad, vol_curv)``.

    ``vol_grad`` (N, 3) is the gradient of each body's enclosed volume at its nodes and ``vol_curv``
    (B,) the penalty's ``W''(V)`` (0 without penalty): the rank-one term ``W'' g g^T``.
    """
    indptr, indices, data = csr
    el_count_arr, el_nodes, el_coef, el_g, el_stiff, el_fcoef, el_tangent, el_h2, node_free, node_body, vg, vc = terms
    if indptr.shape[0] > PARALLEL_MATVEC_ROWS:
        csr_matvec_node_blocks_parallel(indptr, indices, data, p, out)
    else:
        csr_matvec_node_blocks(indptr, indices, data, p, out)
    for e in range(el_count_arr[0]):
        s = el_stiff[e]
        if s > 0.0:
            acc = 0.0
            for k in range(ELEMENT_NODES):
                node = el_nodes[e, k]
                if node >= 0:
                    acc += el_coef[e, k] * (el_g[e, 0] * p[3 * node] + el_g[e, 1] * p[3 * node + 1]
                                            + el_g[e, 2] * p[3 * node + 2])  # fmt: skip
            acc *= h2 * s
            for k in range(ELEMENT_NODES):
                node = el_nodes[e, k]
                if node >= 0 and el_coef[e, k] != 0.0:
                    for i in range(3):
                        out[3 * node + i] += acc * el_coef[e, k] * el_g[e, i]
        if el_h2[e, 0, 0] > 0.0 or el_h2[e, 1, 1] > 0.0:
            t0 = 0.0
            t1 = 0.0
            for k in range(ELEMENT_NODES):
                node = el_nodes[e, k]
                if node >= 0:
                    f = el_fcoef[e, k]
                    for i in range(3):
                        t0 += f * el_tangent[e, i, 0] * p[3 * node + i]
                        t1 += f * el_tangent[e, i, 1] * p[3 * node + i]
            w0 = h2 * (el_h2[e, 0, 0] * t0 + el_h2[e, 0, 1] * t1)
            w1 = h2 * (el_h2[e, 1, 0] * t0 + el_h2[e, 1, 1] * t1)
            for k in range(ELEMENT_NODES):
                node = el_nodes[e, k]
                if node >= 0 and el_fcoef[e, k] != 0.0:
                    f = el_fcoef[e, k]
                    for i in range(3):
                        out[3 * node + i] += f * (el_tangent[e, i, 0] * w0 + el_tangent[e, i, 1] * w1)
    if vc.shape[0] > 0:
        dots = np.zeros(vc.shape[0])
        for n in range(vg.shape[0]):
            b = node_body[n]
            if b >= 0 and vc[b] > 0.0 and node_free[n]:
                dots[b] += vg[n, 0] * p[3 * n] + vg[n, 1] * p[3 * n + 1] + vg[n, 2] * p[3 * n + 2]
        for n in range(vg.shape[0]):
            b = node_body[n]
            if b >= 0 and vc[b] > 0.0 and node_free[n]:
                for i in range(3):
                    out[3 * n + i] += h2 * vc[b] * dots[b] * vg[n, i]


@njit_kernel
def _invert_spd_block(B, size, out):
    """Gauss–Jordan inverse of the leading ``size x size`` block of ``B`` into ``out``; falls back to
    the inverse diagonal when a pivot is not positive. ``B`` is destroyed."""
    for i in range(size):
        for j in range(size):
            out[i, j] = 1.0 if i == j else 0.0
    diag = np.empty(size)
    for i in range(size):
        diag[i] = B[i, i]
    for col in range(size):
        piv = B[col, col]
        if not piv > 0.0:
            for i in range(size):
                for j in range(size):
                    out[i, j] = (1.0 / diag[i] if diag[i] > 0.0 else 1.0) if i == j else 0.0
            return
        inv = 1.0 / piv
        for j in range(size):
            B[col, j] *= inv
            out[col, j] *= inv
        for r in range(size):
            if r != col:
                f = B[r, col]
                if f != 0.0:
                    for j in range(size):
                        B[r, j] -= f * B[col, j]
                        out[r, j] -= f * out[col, j]


@njit_kernel
def _group_local_index(node_group, group_nodes, group_size):
    """Position (0..3) of every node inside its preconditioner group, (N,) int64."""
    local = np.full(node_group.shape[0], -1, dtype=np.int64)
    for grp in range(group_nodes.shape[0]):
        for k in range(group_size[grp]):
            local[group_nodes[grp, k]] = k
    return local


@njit_kernel
def group_matrix_blocks(csr, node_group, group_nodes, group_size, out_blocks):
    """Each group's diagonal block of the CSR part of ``A`` (leading ``3 size x 3 size`` of ``out_blocks``
    (G, 12, 12)): the part of the preconditioner that changes only when the CSR matrix does."""
    indptr, indices, data = csr
    local = _group_local_index(node_group, group_nodes, group_size)
    for grp in range(group_nodes.shape[0]):
        size = 3 * group_size[grp]
        for i in range(size):
            for j in range(size):
                out_blocks[grp, i, j] = 0.0
    for row in range(indptr.shape[0] - 1):
        n = row // 3
        grp = node_group[n]
        for q in range(indptr[row], indptr[row + 1]):
            m = indices[q] // 3
            if node_group[m] == grp:
                out_blocks[grp, 3 * local[n] + row % 3, 3 * local[m] + indices[q] % 3] += data[q]


@njit_kernel
def _add_terms_and_invert(blocks, terms, h2, node_group, group_nodes, group_size, local, out_inv):
    """Add the contact/friction/volume terms whose two nodes share a group to ``blocks`` (destroyed) and
    invert every group's block into ``out_inv``."""
    el_count_arr, el_nodes, el_coef, el_g, el_stiff, el_fcoef, el_tangent, el_h2, node_free, node_body, vg, vc = terms
    for e in range(el_count_arr[0]):
        for k in range(ELEMENT_NODES):
            nk = el_nodes[e, k]
            if nk < 0:
                continue
            for j in range(ELEMENT_NODES):
                nl = el_nodes[e, j]
                if nl < 0 or node_group[nl] != node_group[nk]:
                    continue
                grp = node_group[nk]
                ck = el_coef[e, k] * el_coef[e, j] * el_stiff[e] * h2
                fk = el_fcoef[e, k] * el_fcoef[e, j] * h2
                for i in range(3):
                    for c in range(3):
                        val = ck * el_g[e, i] * el_g[e, c]
                        for a in range(2):
                            for b in range(2):
                                val += fk * el_tangent[e, i, a] * el_h2[e, a, b] * el_tangent[e, c, b]
                        blocks[grp, 3 * local[nk] + i, 3 * local[nl] + c] += val
    if vc.shape[0] > 0:
        for n in range(vg.shape[0]):
            b = node_body[n]
            if b >= 0 and vc[b] > 0.0 and node_free[n]:
                grp = node_group[n]
                for i in range(3):
                    for j in range(3):
                        blocks[grp, 3 * local[n] + i, 3 * local[n] + j] += h2 * vc[b] * vg[n, i] * vg[n, j]
    for grp in range(group_nodes.shape[0]):
        _invert_spd_block(blocks[grp], 3 * group_size[grp], out_inv[grp])


@njit_kernel
def build_group_preconditioner(csr, terms, h2, node_group, group_nodes, group_size, out_inv):
    """Inverse of each group's diagonal block of ``A`` into ``out_inv`` (G, 12, 12).

    A group is one soft node (3x3) or the four nodes of a dynamic box (12x12). The block gathers the
    CSR entries and the contact/friction/volume terms whose two nodes are in the same group.
    """
    blocks = np.empty((group_nodes.shape[0], 12, 12))
    group_matrix_blocks(csr, node_group, group_nodes, group_size, blocks)
    local = _group_local_index(node_group, group_nodes, group_size)
    _add_terms_and_invert(blocks, terms, h2, node_group, group_nodes, group_size, local, out_inv)


@njit_kernel
def build_group_preconditioner_from(matrix_blocks, terms, h2, node_group, group_nodes, group_size, work, out_inv):
    """:func:`build_group_preconditioner` from the CSR part's blocks (``matrix_blocks`` (G, 12, 12), from
    :func:`group_matrix_blocks`, kept while the CSR matrix is): only the matrix-free terms are added anew.
    ``work`` (G, 12, 12) is scratch."""
    for grp in range(group_nodes.shape[0]):
        size = 3 * group_size[grp]
        for i in range(size):
            for j in range(size):
                work[grp, i, j] = matrix_blocks[grp, i, j]
    local = _group_local_index(node_group, group_nodes, group_size)
    _add_terms_and_invert(work, terms, h2, node_group, group_nodes, group_size, local, out_inv)


@njit_kernel
def apply_group_preconditioner(node_group, group_nodes, group_size, inv, r, out):
    """``out = P^-1 r`` with the group inverses of :func:`build_group_preconditioner`."""
    for grp in range(group_nodes.shape[0]):
        size = 3 * group_size[grp]
        for i in range(size):
            acc = 0.0
            for j in range(size):
                acc += inv[grp, i, j] * r[3 * group_nodes[grp, j // 3] + j % 3]
            out[3 * group_nodes[grp, i // 3] + i % 3] = acc


@njit_kernel
def _apply_world_operator(operator_data, v, out):
    # The operator of the shared PCG: operator_data = (csr, terms, h2).
    csr, terms, h2 = operator_data
    operator_apply(csr, terms, h2, v, out)


@njit_kernel
def _apply_world_preconditioner(precond, r, out):
    # The preconditioner of the shared PCG: precond = (node_group, group_nodes, group_size, inv).
    node_group, group_nodes, group_size, inv = precond
    apply_group_preconditioner(node_group, group_nodes, group_size, inv, r, out)


@njit_kernel
def world_pcg(csr, terms, h2, precond, rhs, x, tolerance, max_iterations, work):
    """Preconditioned CG (:func:`~..linalg.pcg.preconditioned_cg`) for ``A x = rhs`` (``x`` holds the start and
    the result; ``work`` (4, n)).

    ``precond = (node_group, group_nodes, group_size, inv)``. Returns ``(iterations, relative residual,
    indefinite)``; stops at ``||rhs - A x|| <= tolerance ||rhs||`` or when ``p^T A p <= 0`` (then
    ``indefinite`` is True and ``x`` holds the last iterate, still a descent direction if A is SPD on
    the explored subspace).
    """
    it, res, outcome = preconditioned_cg(_apply_world_operator, (csr, terms, h2), _apply_world_preconditioner,
                                         precond, rhs, x, False, tolerance, max_iterations, work)  # fmt: skip
    return it, res, outcome == NEGATIVE_CURVATURE
