"""A dense symmetric matrix as the arguments of the IPC Newton system's PCG (tests only)."""

import numpy as np
from contact_lab.core.linalg.block_sparse import BlockPattern, add_element_matrices


def ipc_operator(dense: np.ndarray) -> tuple:
    """``(row_start, column, blocks, pairs, surface_nodes, surface_weights, inv)`` for ``ipc_pcg``: ``dense`` (3n, 3n)
    stored as one element over all n nodes (no contact pairs, no surface map) and its 3x3 Jacobi blocks inverted."""
    n = dense.shape[0] // 3
    pattern = BlockPattern.from_element_groups([np.arange(n)[None, :]], n)
    blocks = pattern.zeros()
    add_element_matrices(dense[None], pattern.element_index[0], 1.0, blocks)
    inv = np.array([np.linalg.inv(dense[3 * i : 3 * i + 3, 3 * i : 3 * i + 3]) for i in range(n)])
    empty_q, empty_b = np.zeros((0, 4), np.int64), np.zeros((0, 12, 12))
    pairs = (0, empty_q, empty_b, 0, empty_q, empty_b)
    return pattern.row_start, pattern.column, blocks, pairs, np.zeros((0, 4), np.int64), np.zeros((0, 4)), inv
