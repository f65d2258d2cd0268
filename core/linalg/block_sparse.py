"""Symmetric matrices of 3x3 node blocks (the IPC Newton system): pattern, assembly, product.

The IPC objective's Hessian couples the three coordinates of every pair of nodes that share an element, so it
is stored as 3x3 blocks (block compressed rows, SciPy's ``bsr`` with ``blocksize=(3, 3)``) rather than scalar
CSR entries: one column index per nine values, a product that streams whole blocks, and an element's 4x4 node
pairs found through 16 block indices instead of 144 scalar positions. Both triangles are stored, so a row's
product needs no transposed access and rows are independent.

- ``row_start`` (N + 1,) int64: node row ``i`` owns blocks ``row_start[i] : row_start[i + 1]``;
- ``column`` (B,) int64: the block column (node) of each stored block, increasing inside a row;
- ``blocks`` (B, 3, 3) float64: the values, ``blocks[k, r, c]`` = entry (3 i + r, 3 column[k] + c).

The pattern is built once from the element connectivity (:class:`BlockPattern`): it is the scalar CSR pattern
of :mod:`.csr` with one degree of freedom per node, read as blocks. Per Newton iteration only ``blocks``
changes, accumulated serially in a fixed element order (bitwise reproducible).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..jit import njit_kernel
from .csr import CsrPattern


@dataclass(frozen=True)
class BlockPattern:
    """Sparsity of a node-block matrix assembled from element stencils (:meth:`from_element_groups`)."""

    node_count: int
    row_start: np.ndarray
    """Block offsets of each node row, shape (N + 1,), int64."""
    column: np.ndarray
    """Block column (node index) of each stored block, shape (B,), int64, increasing inside each row."""
    diagonal: np.ndarray
    """Index of block (i, i) for every node, shape (N,), int64 (always stored)."""
    element_index: list = field(default_factory=list)
    """Per element group: shape (E, k, k), int64; entry ``[e, a, b]`` is the block of (node a, node b) of
    element ``e``."""

    @property
    def block_count(self) -> int:
        return int(self.column.shape[0])

    def zeros(self) -> np.ndarray:
        """Fresh blocks of zeros, shape (B, 3, 3), float64."""
        return np.zeros((self.block_count, 3, 3))

    @classmethod
    def from_element_groups(cls, groups, node_count: int) -> BlockPattern:
        """Pattern of ``sum_e P_e^T A_e P_e`` over element groups (each (E_g, k_g) int node indices), plus the
        full block diagonal."""
        nodes = CsrPattern.from_element_groups(groups, node_count, block_size=1)  # a node's row is a block row
        return cls(int(node_count), nodes.indptr, nodes.indices, nodes.diag_index, nodes.scatter_index)


@njit_kernel
def add_element_matrices(matrices, element_index, scale, blocks):
    """``blocks += scale sum_e P_e^T A_e P_e`` for element matrices ``matrices`` (E, 3k, 3k) and their block
    indices ``element_index`` (E, k, k) (:attr:`BlockPattern.element_index`); serial, in element order."""
    k = element_index.shape[1]
    for e in range(matrices.shape[0]):
        for a in range(k):
            for b in range(k):
                blk = blocks[element_index[e, a, b]]
                for r in range(3):
                    for c in range(3):
                        blk[r, c] += scale * matrices[e, 3 * a + r, 3 * b + c]


@njit_kernel
def add_block_diagonal(diagonal, values, blocks):
    """``blocks[diagonal[i]] += values[i] I3`` for every node (a lumped mass or spring stiffness, (N,))."""
    for i in range(diagonal.shape[0]):
        blk = blocks[diagonal[i]]
        v = values[i]
        for r in range(3):
            blk[r, r] += v


@njit_kernel
def block_matvec(row_start, column, blocks, p, out):
    """``out = A p`` for flat vectors ``p``, ``out`` (3N,); each row sums its blocks in stored order."""
    for i in range(row_start.shape[0] - 1):
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        for k in range(row_start[i], row_start[i + 1]):
            j = 3 * column[k]
            p0 = p[j]
            p1 = p[j + 1]
            p2 = p[j + 2]
            B = blocks[k]
            a0 += B[0, 0] * p0 + B[0, 1] * p1 + B[0, 2] * p2
            a1 += B[1, 0] * p0 + B[1, 1] * p1 + B[1, 2] * p2
            a2 += B[2, 0] * p0 + B[2, 1] * p1 + B[2, 2] * p2
        out[3 * i] = a0
        out[3 * i + 1] = a1
        out[3 * i + 2] = a2


def block_to_dense(pattern: BlockPattern, blocks: np.ndarray) -> np.ndarray:
    """Dense copy (3N, 3N) of ``blocks``, for tests and debugging only."""
    n = pattern.node_count
    dense = np.zeros((3 * n, 3 * n))
    for i in range(n):
        for k in range(pattern.row_start[i], pattern.row_start[i + 1]):
            j = pattern.column[k]
            dense[3 * i : 3 * i + 3, 3 * j : 3 * j + 3] += blocks[k]
    return dense
