"""The soft world's Newton operator, applied matrix-free, and the diagonal group blocks its preconditioner uses.

``A = CSR + h^2 (contact + friction + volume rank-one)``. The CSR holds ``M + h^2 (K_elastic + K_damping)``
and the dynamic boxes' consistent mass; the contact (:mod:`.kernels_penalty`), friction
(:mod:`.kernels_friction`) and volume terms are applied matrix-free. Rows of pinned nodes are identity (the
coefficients of pinned nodes are zeroed). Vectors are flat (3N,).

The preconditioner's groups are one soft node (3x3) or the four nodes of a dynamic box (12x12); each group's
diagonal block is factored here, and :mod:`.kernels_sgs` solves with them.
"""

import math

import numpy as np

from ..jit import njit_kernel
from ..linalg.csr import csr_matvec_node_blocks, csr_matvec_node_blocks_parallel
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
    if indptr.shape[0] > PARALLEL_MATVEC_ROWS:
        csr_matvec_node_blocks_parallel(indptr, indices, data, p, out)
    else:
        csr_matvec_node_blocks(indptr, indices, data, p, out)
    add_matrix_free(terms, h2, p, out)


@njit_kernel
def add_matrix_free(terms, h2, p, out):
    """``out += h^2 (contact + friction + volume rank-one) p``: the part of ``A`` outside the CSR (``terms`` as
    :func:`operator_apply` takes them)."""
    el_count_arr, el_nodes, el_coef, el_g, el_stiff, el_fcoef, el_tangent, el_h2, node_free, node_body, vg, vc = terms
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
def _factor_block(B, csr_block, size, scratch, out, o):
    """Group block ``B`` (its leading ``size x size``) factored into the packed rows of ``out`` (4, total) from
    ``o``, each ``size x size`` row-major: ``R``, the lower Cholesky factor (``B = R R^T``), ``R^-1``, ``B^-1 =
    R^-T R^-1`` and ``csr_block - 2 R R^T`` (what the solve of :mod:`.kernels_sgs` adds per group). A block that is
    not positive definite (a Newton matrix before its PSD projection can have one) takes its diagonal instead, a
    non-positive entry 1. ``scratch`` (2, 12, 12) holds ``R`` and ``R^-1`` on the way."""
    R, inv = scratch[0], scratch[1]
    for i in range(size):
        for j in range(size):
            R[i, j] = 0.0
            inv[i, j] = 0.0
    definite = True
    for j in range(size):
        d = B[j, j]
        for k in range(j):
            d -= R[j, k] * R[j, k]
        if not d > 0.0:
            definite = False
            break
        R[j, j] = math.sqrt(d)
        for i in range(j + 1, size):
            t = B[i, j]
            for k in range(j):
                t -= R[i, k] * R[j, k]
            R[i, j] = t / R[j, j]
    if not definite:
        for i in range(size):
            for j in range(size):
                R[i, j] = 0.0
            R[i, i] = math.sqrt(B[i, i]) if B[i, i] > 0.0 else 1.0
    for j in range(size):  # R^-1 column by column (lower triangular)
        inv[j, j] = 1.0 / R[j, j]
        for i in range(j + 1, size):
            t = 0.0
            for k in range(j, i):
                t -= R[i, k] * inv[k, j]
            inv[i, j] = t / R[i, i]
    for i in range(size):
        for j in range(size):
            at = o + i * size + j
            out[0, at] = R[i, j]
            out[1, at] = inv[i, j]
            t = 0.0
            for k in range(max(i, j), size):
                t += inv[k, i] * inv[k, j]
            out[2, at] = t
            t = 0.0
            for k in range(min(i, j) + 1):
                t += R[i, k] * R[j, k]
            out[3, at] = csr_block[i, j] - 2.0 * t


@njit_kernel
def _add_terms_and_factor(csr_blocks, blocks, terms, h2, node_group, group_nodes, group_size, local, offset, out):
    """Add the contact/friction/volume terms whose two nodes share a group to ``blocks`` (a copy of the CSR's
    ``csr_blocks``) and factor every group's block into the packed ``out`` (:func:`_factor_block`; group ``g``'s
    entries from ``offset[g]``)."""
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
    scratch = np.zeros((2, 12, 12))
    for grp in range(group_nodes.shape[0]):
        _factor_block(blocks[grp], csr_blocks[grp], 3 * group_size[grp], scratch, out, offset[grp])


@njit_kernel
def build_group_preconditioner(csr, terms, h2, node_group, group_nodes, group_size, offset, out):
    """Each group's diagonal block ``D_g`` of ``A``, factored into ``out`` (4, offset[-1]), packed group after group
    from ``offset[g]``: ``R_g``, ``R_g^-1``, ``D_g^-1`` with ``D_g = R_g R_g^T``, and the CSR's own block minus
    ``2 D_g`` (:func:`_factor_block`).

    A group is one soft node (3x3) or the four nodes of a dynamic box (12x12). The block gathers the
    CSR entries and the contact/friction/volume terms whose two nodes are in the same group.
    """
    csr_blocks = np.empty((group_nodes.shape[0], 12, 12))
    group_matrix_blocks(csr, node_group, group_nodes, group_size, csr_blocks)
    blocks = csr_blocks.copy()
    local = _group_local_index(node_group, group_nodes, group_size)
    _add_terms_and_factor(csr_blocks, blocks, terms, h2, node_group, group_nodes, group_size, local, offset, out)


@njit_kernel
def build_group_preconditioner_from(matrix_blocks, terms, h2, node_group, group_nodes, group_size, offset, work, out):
    """:func:`build_group_preconditioner` from the CSR part's blocks (``matrix_blocks`` (G, 12, 12), from
    :func:`group_matrix_blocks`, kept while the CSR matrix is): only the matrix-free terms are added anew.
    ``work`` (G, 12, 12) is scratch."""
    for grp in range(group_nodes.shape[0]):
        size = 3 * group_size[grp]
        for i in range(size):
            for j in range(size):
                work[grp, i, j] = matrix_blocks[grp, i, j]
    local = _group_local_index(node_group, group_nodes, group_size)
    _add_terms_and_factor(matrix_blocks, work, terms, h2, node_group, group_nodes, group_size, local, offset, out)
