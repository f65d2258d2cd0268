"""Sparse linear algebra for the FEM engine (Blender ships no SciPy): CSR storage and PCG."""

from .csr import (
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
)
from .pcg import (
    block3_jacobi_inverse,
    jacobi_inverse_diagonal,
    pcg_solve,
    pcg_solve_block3,
    pcg_solve_preconditioned,
)

__all__ = [
    "assemble_blocks",
    "assemble_scaled_blocks",
    "block3_jacobi_inverse",
    "CsrPattern",
    "csr_add_diagonal",
    "csr_add_scaled_identity",
    "csr_combine",
    "csr_diagonal",
    "csr_diagonal_index",
    "csr_matvec",
    "csr_to_dense",
    "dense_to_csr",
    "jacobi_inverse_diagonal",
    "pcg_solve",
    "pcg_solve_block3",
    "pcg_solve_preconditioned",
]
