"""The IPC Newton system ``H dx = -g``: operator, block-Jacobi preconditioner and a truncated PCG.

``H`` is a node-block matrix (:mod:`..linalg.block_sparse`: mass, springs, elasticity) plus the contact and friction
pairs' 12x12 blocks, applied matrix-free through the surface map (``x_s = sum_j w_sj x[n_sj]``): a pair's block
acts on its four surface vertices, each a weighted sum of up to four nodes.

The solve is inexact on purpose (truncated Newton, Dembo, Eisenstat and Steihaug 1982): Newton needs the step's
direction and rough length, not its last digits, and the outer stopping rule is on the step itself
(``||dx||_inf / h``), so a relative residual of ``1e-2`` costs a third of the PCG iterations of ``1e-6`` for the
same Newton iterations (measured on the default cube, README). CG also reports negative curvature (``p.Hp <= 0``:
``H`` is not positive definite, which happens when the elastic Hessian is used unprojected): every iterate
before it is still a descent direction, and the caller decides whether to project and solve again.
"""

import numpy as np

from ..jit import njit_kernel
from ..linalg.block_sparse import block_matvec
from ..linalg.pcg import ITERATION_LIMIT, NEGATIVE_CURVATURE, SOLVED, apply_block3_inverse, preconditioned_cg
from ..math.small_linalg import inverse3

__all__ = [
    "ITERATION_LIMIT",
    "NEGATIVE_CURVATURE",
    "SOLVED",
    "add_affine_mass",
    "build_preconditioner",
    "ipc_pcg",
    "operator_apply",
]


@njit_kernel
def _pairs_apply(count, quads, blocks, surface_nodes, surface_weights, p, out):
    """``out += W^T (sum_k P_k^T B_k P_k) W p`` for flat node vectors p, out (3N,)."""
    u = np.empty(12)
    for k in range(count):
        q = quads[k]
        for a in range(4):
            s = q[a]
            for i in range(3):
                acc = 0.0
                for j in range(4):
                    n = surface_nodes[s, j]
                    if n >= 0:
                        acc += surface_weights[s, j] * p[3 * n + i]
                u[3 * a + i] = acc
        B = blocks[k]
        for a in range(4):
            s = q[a]
            for i in range(3):
                r = 3 * a + i
                acc = 0.0
                for c in range(12):
                    acc += B[r, c] * u[c]
                for j in range(4):
                    n = surface_nodes[s, j]
                    if n >= 0:
                        out[3 * n + i] += surface_weights[s, j] * acc


@njit_kernel
def operator_apply(row_start, column, blocks, pairs, surface_nodes, surface_weights, p, out):
    """``out = (A + contact and friction blocks) p``; A node blocks, ``pairs = (bc, bq, bb, fc, fq, fb)``."""
    bc, bq, bb, fc, fq, fb = pairs
    block_matvec(row_start, column, blocks, p, out)
    _pairs_apply(bc, bq, bb, surface_nodes, surface_weights, p, out)
    _pairs_apply(fc, fq, fb, surface_nodes, surface_weights, p, out)


@njit_kernel
def _add_pair_diagonal(count, quads, blocks, surface_nodes, surface_weights, out_blocks):
    for k in range(count):
        q = quads[k]
        for a in range(4):
            s = q[a]
            for j in range(4):
                n = surface_nodes[s, j]
                if n < 0:
                    continue
                w2 = surface_weights[s, j] * surface_weights[s, j]
                for r in range(3):
                    for c in range(3):
                        out_blocks[n, r, c] += w2 * blocks[k, 3 * a + r, 3 * a + c]


@njit_kernel
def build_preconditioner(diagonal, blocks, pairs, surface_nodes, surface_weights, work, out_inv):
    """Inverse 3x3 diagonal node blocks ``out_inv`` (N, 3, 3) of the operator (block Jacobi).

    ``diagonal`` (N,) indexes the node blocks (i, i) in ``blocks``; ``work`` (N, 3, 3) scratch. Pair blocks
    contribute ``w^2 B_aa`` to each node of each vertex (cross terms between the nodes of an embedded vertex are
    left out: it is a preconditioner). A block that is not safely positive definite (possible with the exact,
    unprojected elastic Hessian) falls back to the inverse of its diagonal, or to 1 where that is not positive.
    """
    bc, bq, bb, fc, fq, fb = pairs
    N = out_inv.shape[0]
    for n in range(N):
        work[n] = blocks[diagonal[n]]
    _add_pair_diagonal(bc, bq, bb, surface_nodes, surface_weights, work)
    _add_pair_diagonal(fc, fq, fb, surface_nodes, surface_weights, work)
    for n in range(N):
        B = work[n]
        det = inverse3(B, out_inv[n])
        scale = B[0, 0] * B[1, 1] * B[2, 2]
        if not (det > 1e-12 * scale and scale > 0.0):
            for r in range(3):
                for c in range(3):
                    out_inv[n, r, c] = 0.0
                out_inv[n, r, r] = 1.0 / B[r, r] if B[r, r] > 0.0 else 1.0


@njit_kernel
def _apply_operator(operator_data, p, out):
    # The operator of the shared PCG: operator_data = (row_start, column, blocks, pairs, surface_nodes, weights).
    row_start, column, blocks, pairs, surface_nodes, surface_weights = operator_data
    operator_apply(row_start, column, blocks, pairs, surface_nodes, surface_weights, p, out)


@njit_kernel
def ipc_pcg(row_start, column, blocks, pairs, surface_nodes, surface_weights, inv, rhs, x, tolerance, max_iterations,
            work):  # fmt: skip
    """Block-Jacobi preconditioned CG (:func:`~..linalg.pcg.preconditioned_cg`) for ``A x = rhs``, started at
    ``x = 0``.

    ``x`` (3N,) is overwritten with the result; ``work`` (4, 3N). Stops at ``||r|| <= tolerance ||rhs||``, after
    ``max_iterations``, or at a direction of non-positive curvature (``A`` not positive definite), keeping the
    last iterate: as long as every direction so far had positive curvature, ``x . rhs = x^T A x > 0``, so ``x``
    is a descent direction of the objective whose gradient is ``-rhs`` (zero if the very first direction fails).
    Returns ``(iterations, relative residual, outcome)`` (``SOLVED``, ``NEGATIVE_CURVATURE``, ``ITERATION_LIMIT``).
    """
    operator_data = (row_start, column, blocks, pairs, surface_nodes, surface_weights)
    return preconditioned_cg(_apply_operator, operator_data, apply_block3_inverse, inv, rhs, x, True, tolerance,
                             max_iterations, work)  # fmt: skip


@njit_kernel
def add_affine_mass(aff_mass, element_index, blocks):
    """Add ``M_a ⊗ I3`` (A, 4, 4) into the node blocks of each dynamic box's four affine nodes
    (``element_index`` (A, 4, 4) of the affine node group)."""
    for a in range(aff_mass.shape[0]):
        for p in range(4):
            for q in range(4):
                blk = blocks[element_index[a, p, q]]
                for i in range(3):
                    blk[i, i] += aff_mass[a, p, q]
