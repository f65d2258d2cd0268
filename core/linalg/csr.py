"""Compressed sparse row (CSR) matrices for the FEM engine: pattern, assembly, matvec, diagonal.

Blender ships no SciPy, so the soft-body engine keeps its own sparse storage. A matrix of
size ``n x n`` is three arrays (SciPy's names):

- ``indptr`` (n + 1,) int64: row ``i`` owns ``data[indptr[i]:indptr[i+1]]``;
- ``indices`` (nnz,) int64: column of each stored entry, strictly increasing inside a row;
- ``data`` (nnz,) float64: the values.

The *pattern* (``indptr``, ``indices``) is built once from element connectivity by
:class:`CsrPattern`; per step only ``data`` changes. Every element-local matrix entry has a
precomputed index into ``data`` (``scatter_index``), so assembly is a serial scatter-add in a
fixed order (element, then local row, then local column): bitwise reproducible whatever the
thread count. Every node's diagonal block is always stored, so ``M + h^2 K`` and Jacobi
preconditioning work for nodes that belong to no element.
"""

from dataclasses import dataclass, field

import numpy as np

from ..jit import njit_kernel, njit_parallel, prange


@dataclass(frozen=True)
class CsrPattern:
    """Sparsity pattern of a block matrix assembled from element stencils.

    Build with :meth:`from_elements` (one element group, e.g. tets) or
    :meth:`from_element_groups` (several groups, e.g. tets and springs, sharing one matrix).
    """

    n: int
    """Number of scalar rows and columns, ``node_count * block_size``."""
    block_size: int
    """Degrees of freedom per node (3 for 3D positions)."""
    indptr: np.ndarray
    """Row offsets, shape (n + 1,), int64."""
    indices: np.ndarray
    """Column indices, shape (nnz,), int64, sorted within each row."""
    diag_index: np.ndarray
    """Position of entry (i, i) in ``data`` for every row, shape (n,), int64."""
    scatter_index: list = field(default_factory=list)
    """Per element group ``g``: shape (E_g, k_g * block_size, k_g * block_size), int64. Entry
    ``[e, a*bs + i, b*bs + j]`` is where the element matrix entry for (node a, dof i) x (node b,
    dof j) of element ``e`` lands in ``data``."""

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return int(self.indices.shape[0])

    def zeros(self) -> np.ndarray:
        """A fresh ``data`` array of zeros, shape (nnz,), float64."""
        return np.zeros(self.nnz, dtype=np.float64)

    @classmethod
    def from_elements(cls, element_nodes, node_count: int, block_size: int = 3) -> "CsrPattern":
        """Pattern of ``sum_e P_e^T A_e P_e`` for elements ``element_nodes`` (E, k) int.

        A list of equal-length node tuples is accepted too. ``scatter_index[0]`` has shape
        (E, k*block_size, k*block_size).
        """
        return cls.from_element_groups([element_nodes], node_count, block_size)

    @classmethod
    def from_element_groups(cls, groups, node_count: int, block_size: int = 3) -> "CsrPattern":
        """Pattern shared by several element groups, each (E_g, k_g) int (k_g may differ per group)."""
        bs = int(block_size)
        n = int(node_count) * bs
        # Global dof of each element-local dof: dof[e, a*bs + i] = node[e, a]*bs + i.
        dofs = []
        for nodes in groups:
            nodes = np.asarray(nodes, dtype=np.int64)
            if nodes.ndim != 2:
                raise ValueError(f"element group must be (E, k), got shape {nodes.shape}")
            if nodes.size and (nodes.min() < 0 or nodes.max() >= node_count):
                raise ValueError("element node index out of range")
            d = (nodes[:, :, None] * bs + np.arange(bs, dtype=np.int64)[None, None, :]).reshape(
                nodes.shape[0], nodes.shape[1] * bs
            )
            dofs.append(d)
        # Keys row*n + col of all entries, plus the full diagonal; unique() sorts them row-major.
        keys = [np.arange(n, dtype=np.int64) * (n + 1)]
        for d in dofs:
            keys.append((d[:, :, None] * n + d[:, None, :]).ravel())
        unique_keys = np.unique(np.concatenate(keys))
        rows = unique_keys // n
        indices = unique_keys % n
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        diag_index = np.searchsorted(unique_keys, np.arange(n, dtype=np.int64) * (n + 1))
        scatter = []
        for d in dofs:
            k = d.shape[1]
            s = np.searchsorted(unique_keys, (d[:, :, None] * n + d[:, None, :]).ravel())
            scatter.append(s.reshape(d.shape[0], k, k).astype(np.int64))
        return cls(n, bs, indptr, indices.astype(np.int64), diag_index.astype(np.int64), scatter)


@njit_kernel
def assemble_blocks(element_blocks, scatter_index, out_data):
    """Scatter-add element matrices into CSR ``data``: ``A += sum_e P_e^T A_e P_e``.

    Args:
        element_blocks: (E, m, m) float64 element matrices (e.g. tet Hessians, m = 12).
        scatter_index: (E, m, m) int64 positions in ``out_data`` (``CsrPattern.scatter_index[g]``).
        out_data: (nnz,) float64, accumulated in place (zero it first for a fresh matrix).

    Serial on purpose: two elements sharing a node write the same entry, and a fixed order
    (element, local row, local column) makes the float sums reproducible.
    """
    for e in range(element_blocks.shape[0]):
        for a in range(element_blocks.shape[1]):
            for b in range(element_blocks.shape[2]):
                out_data[scatter_index[e, a, b]] += element_blocks[e, a, b]


@njit_kernel
def assemble_scaled_blocks(element_blocks, element_scale, scatter_index, out_data):
    """Scatter-add scaled element matrices into CSR ``data``: ``A += sum_e s_e P_e^T A_e P_e``.

    Args:
        element_blocks: (E, m, m) float64 element matrices.
        element_scale: (E,) float64 factor of each element (e.g. the Rayleigh damping ``beta / h`` of a tet's
            stiffness block).
        scatter_index: (E, m, m) int64 positions in ``out_data``.
        out_data: (nnz,) float64, accumulated in place.

    Serial in the fixed order of :func:`assemble_blocks` (reproducible sums); elements with ``s_e = 0`` are
    skipped.
    """
    for e in range(element_blocks.shape[0]):
        s = element_scale[e]
        if s == 0.0:
            continue
        for a in range(element_blocks.shape[1]):
            for b in range(element_blocks.shape[2]):
                out_data[scatter_index[e, a, b]] += s * element_blocks[e, a, b]


@njit_kernel
def csr_row_dot(indptr, indices, data, x, i):
    """``(A x)_i``: row ``i`` of CSR ``A`` times ``x``, summed in stored column order (deterministic)."""
    s = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        s += data[p] * x[indices[p]]
    return s


@njit_parallel
def csr_matvec(indptr, indices, data, x, out):
    """``out = A x`` for CSR ``A`` (n, n_cols); ``x`` (n_cols,), ``out`` (n,) float64.

    Rows are independent (each writes only ``out[i]``), so the row loop is parallel and still
    deterministic: each row sums its entries in column order.
    """
    for i in prange(indptr.shape[0] - 1):
        out[i] = csr_row_dot(indptr, indices, data, x, np.int64(i))  # int64 like the serial loop's (one compile)


@njit_kernel
def csr_matvec_serial(indptr, indices, data, x, out):
    """``out = A x`` like :func:`csr_matvec`, on one thread (cheaper than a parallel region for small A)."""
    for i in range(indptr.shape[0] - 1):
        out[i] = csr_row_dot(indptr, indices, data, x, i)


@njit_kernel
def _node_block_rows(indptr, indices, data, x, node, out):
    """Rows ``3 node .. 3 node + 2`` of ``A x`` for :func:`csr_matvec_node_blocks` (sums in stored order)."""
    r = 3 * node
    p0 = indptr[r]
    p1 = indptr[r + 1]
    p2 = indptr[r + 2]
    acc0 = 0.0
    acc1 = 0.0
    acc2 = 0.0
    for k in range(0, p1 - p0, 3):
        j = indices[p0 + k]
        x0 = x[j]
        x1 = x[j + 1]
        x2 = x[j + 2]
        acc0 += data[p0 + k] * x0
        acc0 += data[p0 + k + 1] * x1
        acc0 += data[p0 + k + 2] * x2
        acc1 += data[p1 + k] * x0
        acc1 += data[p1 + k + 1] * x1
        acc1 += data[p1 + k + 2] * x2
        acc2 += data[p2 + k] * x0
        acc2 += data[p2 + k + 1] * x1
        acc2 += data[p2 + k + 2] * x2
    out[r] = acc0
    out[r + 1] = acc1
    out[r + 2] = acc2


@njit_kernel
def csr_matvec_node_blocks(indptr, indices, data, x, out):
    """``out = A x`` like :func:`csr_matvec_serial` (bit for bit: every row sums in stored order) for a matrix
    made of full 3x3 node blocks, as :class:`CsrPattern` builds with ``block_size`` 3: rows ``3i, 3i+1, 3i+2``
    store the same columns, in runs ``3j, 3j+1, 3j+2``. Each node's three rows are done together, so every
    column index and every ``x`` entry is read once per node instead of once per row (about 1.5x faster).
    """
    for node in range((indptr.shape[0] - 1) // 3):
        _node_block_rows(indptr, indices, data, x, node, out)


@njit_parallel
def csr_matvec_node_blocks_parallel(indptr, indices, data, x, out):
    """:func:`csr_matvec_node_blocks`, parallel over nodes (each writes only its own three rows: deterministic)."""
    for node in prange((indptr.shape[0] - 1) // 3):
        # the prange index is unsigned: as int64 it shares the serial loop's compiled kernel
        _node_block_rows(indptr, indices, data, x, np.int64(node), out)


@njit_kernel
def csr_diagonal_index(indptr, indices, out_index):
    """Position of entry (i, i) in ``data`` for each row, or -1 if not stored; ``out_index`` (n,) int64."""
    for i in range(indptr.shape[0] - 1):
        out_index[i] = -1
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] == i:
                out_index[i] = p
                break


@njit_kernel
def csr_diagonal_entry(indptr, indices, data, i):
    """``A[i, i]`` of CSR ``A``, 0 when not stored."""
    for p in range(indptr[i], indptr[i + 1]):
        if indices[p] == i:
            return data[p]
    return 0.0


@njit_kernel
def csr_diagonal(indptr, indices, data, out):
    """Diagonal ``out[i] = A[i, i]`` (0 when not stored); ``out`` (n,) float64."""
    for i in range(indptr.shape[0] - 1):
        out[i] = csr_diagonal_entry(indptr, indices, data, i)


@njit_kernel
def csr_add_scaled_identity(diag_index, alpha, data):
    """``A += alpha I`` in place, using ``diag_index`` (n,) from :class:`CsrPattern`."""
    for i in range(diag_index.shape[0]):
        data[diag_index[i]] += alpha


@njit_kernel
def csr_add_diagonal(diag_index, diagonal, alpha, data):
    """``A += alpha diag(diagonal)`` in place, e.g. a lumped mass ``M`` (n,) [kg] into ``h^2 K``."""
    for i in range(diag_index.shape[0]):
        data[diag_index[i]] += alpha * diagonal[i]


@njit_kernel
def csr_combine(alpha, data_a, beta, data_b, out_data):
    """``C = alpha A + beta B`` for matrices sharing one pattern (e.g. ``M + h^2 K``); all (nnz,)."""
    for p in range(out_data.shape[0]):
        out_data[p] = alpha * data_a[p] + beta * data_b[p]


def csr_to_dense(indptr, indices, data, n_cols=None) -> np.ndarray:
    """Dense copy (n, n_cols) float64, for tests and debugging only."""
    n = indptr.shape[0] - 1
    n_cols = n if n_cols is None else n_cols
    dense = np.zeros((n, n_cols))
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            dense[i, indices[p]] += data[p]
    return dense


def dense_to_csr(dense, drop_zeros: bool = True):
    """CSR arrays ``(indptr, indices, data)`` of a dense (n, m) matrix, for tests and small systems."""
    dense = np.asarray(dense, dtype=np.float64)
    mask = dense != 0.0 if drop_zeros else np.ones(dense.shape, dtype=bool)
    rows, cols = np.nonzero(mask)
    indptr = np.zeros(dense.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=dense.shape[0]), out=indptr[1:])
    return indptr, cols.astype(np.int64), dense[rows, cols].copy()
