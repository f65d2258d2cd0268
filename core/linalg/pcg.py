"""Preconditioned conjugate gradient: one CG recurrence for the engines, and restarted CSR solvers.

:func:`preconditioned_cg` is the CG both FEM engines run (the soft world and IPC): the operator and the
preconditioner are numba functions passed in with their data, so each engine's matrix-free product and
preconditioner are inlined into one compiled loop (one specialization per engine). It reports an outcome
(:data:`SOLVED`, :data:`NEGATIVE_CURVATURE`, :data:`ITERATION_LIMIT`) and stops on the recurrence residual.

The CSR solvers below (Blender ships no SciPy) solve ``A x = b`` for symmetric positive definite ``A`` (e.g.
the Newton matrix ``M + h^2 K`` of an implicit FEM step) with the same recurrence, but restart from the true
residual and test ``||r|| <= tolerance ||b||`` (a product, not a quotient): their own cycle keeps that rounding.
Two preconditioners:

- Jacobi: ``P^-1 = diag(A)^-1`` (:func:`pcg_solve`);
- block Jacobi: the inverse of each node's 3x3 diagonal block (:func:`pcg_solve_block3`),
  which is exact for a decoupled node and captures the per-node anisotropy of elastic stiffness.

Algorithm (Saad, *Iterative Methods for Sparse Linear Systems*, Alg. 9.1)::

    r = b - A x,  z = P^-1 r,  p = z
    repeat:  q = A p,  alpha = (r.z)/(p.q),  x += alpha p,  r -= alpha q
             z = P^-1 r,  beta = (r.z)_new/(r.z)_old,  p = z + beta p

Convergence is ``||b - A x|| <= tolerance ||b||`` (2-norms). When the recurrence residual
passes the test, the true residual is recomputed; if it does not pass, the iteration restarts
from it, so the reported residual is always the true one. Dot products are serial, so results
are bitwise reproducible; the matvec is parallel over rows (also deterministic).

Return value of the solvers: ``(iterations, residual)`` with ``residual`` the true relative
residual. The solve **converged iff residual <= tolerance**; otherwise it hit
``max_iterations`` or broke down (``p.A p <= 0``: ``A`` is not positive definite).
"""

import math

import numpy as np

from ..jit import njit_kernel
from .csr import csr_diagonal_entry, csr_matvec

SOLVED = 0
"""PCG outcome: the relative residual reached the tolerance."""
NEGATIVE_CURVATURE = 1
"""PCG outcome: a search direction had ``p.Ap <= 0`` (``A`` indefinite); the iterate before it is returned."""
ITERATION_LIMIT = 2
"""PCG outcome: ``max_iterations`` reached."""


@njit_kernel
def serial_dot(a, b):
    """``a . b`` of two (n,) vectors summed in index order (bitwise reproducible, unlike a BLAS dot)."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


# Inlined into each engine's solve at numba IR level: compiled on its own, the function arguments would be passed
# as process-specific object addresses, and numba refuses to cache the engine's solve (it would compile per bake).
@njit_kernel(inline="always")
def preconditioned_cg(apply_operator, operator_data, apply_preconditioner, preconditioner_data, rhs, x, zero_start,
                      tolerance, max_iterations, work):  # fmt: skip
    """Preconditioned CG for ``A x = rhs`` (Saad Alg. 9.1) with a caller-supplied operator and preconditioner.

    Args:
        apply_operator: numba function ``(operator_data, v, out)``: ``out = A v``, v and out (n,).
        operator_data: the operator's arrays (a tuple), passed through unchanged.
        apply_preconditioner: numba function ``(preconditioner_data, r, z)``: ``z = P^-1 r``, r and z (n,).
        preconditioner_data: the preconditioner's arrays, passed through unchanged.
        rhs: (n,) right-hand side.
        x: (n,) the start when ``zero_start`` is False, else overwritten with 0 first; receives the result.
        zero_start: start at ``x = 0`` (no operator product, the first relative residual is exactly 1).
        tolerance: relative residual target ``||r|| / ||rhs||`` [dimensionless], on the recurrence residual.
        max_iterations: iteration cap (one operator product each).
        work: (4, n) scratch: residual, preconditioned residual, direction, ``A`` times the direction.

    Returns:
        ``(iterations, relative residual, outcome)``. At a direction of non-positive curvature
        (``NEGATIVE_CURVATURE``) ``x`` keeps the last iterate: while every direction so far had positive
        curvature, ``x`` is a descent direction of the quadratic whose gradient at 0 is ``-rhs``. For
        ``rhs = 0`` the result is ``x = 0``, ``(0, 0.0, SOLVED)``.
    """
    r = work[0]
    z = work[1]
    p = work[2]
    q = work[3]
    # (vectors are copied element by element: an array-to-slice assignment compiles numba's shape-mismatch error
    # formatting, seconds of every cold compile)
    if zero_start:
        x[:] = 0.0
        for i in range(r.shape[0]):
            r[i] = rhs[i]
    else:
        apply_operator(operator_data, x, q)
        for i in range(r.shape[0]):
            r[i] = rhs[i] - q[i]
    b_norm = math.sqrt(serial_dot(rhs, rhs))
    if b_norm == 0.0:
        x[:] = 0.0
        return 0, 0.0, SOLVED
    apply_preconditioner(preconditioner_data, r, z)
    for i in range(p.shape[0]):
        p[i] = z[i]
    rz = serial_dot(r, z)
    # From x = 0 the residual is rhs itself: 1 exactly (also when ||rhs|| is not finite).
    res = 1.0 if zero_start else math.sqrt(serial_dot(r, r)) / b_norm
    it = 0
    while res > tolerance:
        if it >= max_iterations:
            return it, res, ITERATION_LIMIT
        apply_operator(operator_data, p, q)
        pq = serial_dot(p, q)
        if not pq > 0.0:
            return it, res, NEGATIVE_CURVATURE
        alpha = rz / pq
        for i in range(x.shape[0]):
            x[i] += alpha * p[i]
            r[i] -= alpha * q[i]
        it += 1
        res = math.sqrt(serial_dot(r, r)) / b_norm
        apply_preconditioner(preconditioner_data, r, z)
        rz_new = serial_dot(r, z)
        beta = rz_new / rz
        rz = rz_new
        for i in range(x.shape[0]):
            p[i] = z[i] + beta * p[i]
    return it, res, SOLVED


@njit_kernel
def jacobi_inverse_diagonal(indptr, indices, data, out_inv_diag):
    """``out_inv_diag[i] = 1 / A[i, i]``; rows with a non-positive diagonal get 1 (no scaling)."""
    for i in range(indptr.shape[0] - 1):
        d = csr_diagonal_entry(indptr, indices, data, i)
        out_inv_diag[i] = 1.0 / d if d > 0.0 else 1.0


@njit_kernel
def block3_jacobi_inverse(indptr, indices, data, out_inv_blocks):
    """Inverses of the 3x3 diagonal blocks of ``A``; ``out_inv_blocks`` (n/3, 3, 3) float64.

    Closed-form inverse ``B^-1 = adj(B)/det(B)``. A singular or indefinite-looking block
    (``det <= 0`` or non-positive diagonal) falls back to plain Jacobi on that node.
    """
    B = np.zeros((3, 3))
    for node in range(out_inv_blocks.shape[0]):
        B[:, :] = 0.0
        for i in range(3):
            row = 3 * node + i
            for p in range(indptr[row], indptr[row + 1]):
                c = indices[p] - 3 * node
                if 0 <= c < 3:
                    B[i, c] = data[p]
        c00 = B[1, 1] * B[2, 2] - B[1, 2] * B[2, 1]
        c01 = B[1, 2] * B[2, 0] - B[1, 0] * B[2, 2]
        c02 = B[1, 0] * B[2, 1] - B[1, 1] * B[2, 0]
        det = B[0, 0] * c00 + B[0, 1] * c01 + B[0, 2] * c02
        if det > 0.0 and B[0, 0] > 0.0 and B[1, 1] > 0.0 and B[2, 2] > 0.0:
            inv = 1.0 / det
            out_inv_blocks[node, 0, 0] = c00 * inv
            out_inv_blocks[node, 1, 0] = c01 * inv
            out_inv_blocks[node, 2, 0] = c02 * inv
            out_inv_blocks[node, 0, 1] = (B[0, 2] * B[2, 1] - B[0, 1] * B[2, 2]) * inv
            out_inv_blocks[node, 1, 1] = (B[0, 0] * B[2, 2] - B[0, 2] * B[2, 0]) * inv
            out_inv_blocks[node, 2, 1] = (B[0, 1] * B[2, 0] - B[0, 0] * B[2, 1]) * inv
            out_inv_blocks[node, 0, 2] = (B[0, 1] * B[1, 2] - B[0, 2] * B[1, 1]) * inv
            out_inv_blocks[node, 1, 2] = (B[0, 2] * B[1, 0] - B[0, 0] * B[1, 2]) * inv
            out_inv_blocks[node, 2, 2] = (B[0, 0] * B[1, 1] - B[0, 1] * B[1, 0]) * inv
        else:
            out_inv_blocks[node, :, :] = 0.0
            for i in range(3):
                out_inv_blocks[node, i, i] = 1.0 / B[i, i] if B[i, i] > 0.0 else 1.0


@njit_kernel
def apply_block3_inverse(inv_blocks, r, out_z):
    """``out_z = blockdiag(inv_blocks) r``: each node's 3x3 inverse (n/3, 3, 3) times its 3 entries of r (n,)."""
    for node in range(inv_blocks.shape[0]):
        for i in range(3):
            s = 0.0
            for j in range(3):
                s += inv_blocks[node, i, j] * r[3 * node + j]
            out_z[3 * node + i] = s


@njit_kernel
def _apply_preconditioner(inv_diag, inv_blocks, r, out_z):
    # z = P^-1 r: block Jacobi when inv_blocks has nodes, else diagonal Jacobi.
    if inv_blocks.shape[0] > 0:
        apply_block3_inverse(inv_blocks, r, out_z)
    else:
        for i in range(r.shape[0]):
            out_z[i] = inv_diag[i] * r[i]


@njit_kernel
def true_residual(indptr, indices, data, b, x, scratch, out_r):
    """``out_r = b - A x`` (``scratch`` (n,) receives ``A x``); returns ``||out_r||_2``.

    The Krylov recurrences update r in floating point and drift from ``b - A x``; every solver here starts,
    restarts and reports from this true residual.
    """
    csr_matvec(indptr, indices, data, x, scratch)
    for i in range(b.shape[0]):
        out_r[i] = b[i] - scratch[i]
    return math.sqrt(serial_dot(out_r, out_r))


@njit_kernel
def start_krylov(indptr, indices, data, b, x0, scratch, out_r, out_x):
    """Common start of the Krylov solvers: ``out_x = x0``, ``out_r = b - A x0``; returns ``(||b||, ||out_r||)``.

    For ``b = 0`` it returns ``(0, 0)`` with ``out_x = 0``, the unique solution of ``A x = 0`` for non-singular
    ``A`` (``out_r`` untouched). ``x0`` may alias ``out_x``; ``scratch`` (n,) receives ``A x0``.
    """
    b_norm = math.sqrt(serial_dot(b, b))
    if b_norm == 0.0:
        out_x[:] = 0.0
        return 0.0, 0.0
    for i in range(b.shape[0]):
        out_x[i] = x0[i]
    return b_norm, true_residual(indptr, indices, data, b, out_x, scratch, out_r)


@njit_kernel
def _cg_cycle(indptr, indices, data, inv_diag, inv_blocks, target, iterations, max_iterations, r, z, p, q, out_x):
    """One CG cycle from the current residual ``r`` (Saad Alg. 9.1) until ``||r|| <= target`` by the recurrence.

    Updates ``out_x`` and ``r`` in place; returns ``(iterations, breakdown)`` with the matvec count carried on
    from ``iterations`` and ``breakdown`` set when ``p.A p <= 0`` (or NaN): A is not positive definite.
    """
    _apply_preconditioner(inv_diag, inv_blocks, r, z)
    for i in range(r.shape[0]):
        p[i] = z[i]
    rz = serial_dot(r, z)
    while iterations < max_iterations:
        csr_matvec(indptr, indices, data, p, q)
        iterations += 1
        pq = serial_dot(p, q)
        if not pq > 0.0:
            return iterations, True
        alpha = rz / pq
        for i in range(r.shape[0]):
            out_x[i] += alpha * p[i]
            r[i] -= alpha * q[i]
        if math.sqrt(serial_dot(r, r)) <= target:
            break
        _apply_preconditioner(inv_diag, inv_blocks, r, z)
        rz_new = serial_dot(r, z)
        beta = rz_new / rz
        rz = rz_new
        for i in range(r.shape[0]):
            p[i] = z[i] + beta * p[i]
    return iterations, False


@njit_kernel
def pcg_solve_preconditioned(
    indptr,
    indices,
    data,
    b,
    x0,
    inv_diag,
    inv_blocks,
    tolerance,
    max_iterations,
    # scratch, each (n,) float64
    r,
    z,
    p,
    q,
    # outputs
    out_x,
):
    """PCG with a caller-built preconditioner and caller-owned scratch (no allocation at all).

    Args:
        indptr, indices, data: CSR ``A`` (n, n), symmetric positive definite.
        b: (n,) right-hand side. x0: (n,) initial guess (may alias ``out_x``).
        inv_diag: (n,) Jacobi inverse diagonal; used when ``inv_blocks`` is empty.
        inv_blocks: (n/3, 3, 3) block-Jacobi inverses, or shape (0, 3, 3) for plain Jacobi.
        tolerance: relative residual target ``||b - A x|| / ||b||`` [dimensionless].
        max_iterations: iteration cap (one matvec each).
        r, z, p, q: scratch vectors (n,).
        out_x: (n,) solution.

    Returns:
        ``(iterations, residual)``: matvecs spent in the iteration and the true relative residual;
        converged iff ``residual <= tolerance``.
    """
    b_norm, r_norm = start_krylov(indptr, indices, data, b, x0, q, r, out_x)
    if b_norm == 0.0:
        return 0, 0.0
    target = tolerance * b_norm
    iterations = np.int64(0)  # not the literal 0: _cg_cycle would be compiled for Literal[int](0) too
    while r_norm > target and iterations < max_iterations:
        # (Re)start from the current true residual.
        iterations, breakdown = _cg_cycle(
            indptr, indices, data, inv_diag, inv_blocks, target, iterations, max_iterations, r, z, p, q, out_x
        )
        r_norm = true_residual(indptr, indices, data, b, out_x, q, r)
        if breakdown:
            break
    return iterations, r_norm / b_norm


@njit_kernel
def _pcg_with_scratch(indptr, indices, data, b, x0, inv_diag, inv_blocks, tolerance, max_iterations, out_x):
    # Allocate the 4 scratch vectors once per call and solve.
    n = b.shape[0]
    r = np.empty(n)
    z = np.empty(n)
    p = np.empty(n)
    q = np.empty(n)
    return pcg_solve_preconditioned(
        indptr, indices, data, b, x0, inv_diag, inv_blocks, tolerance, max_iterations, r, z, p, q, out_x
    )


@njit_kernel
def pcg_solve(indptr, indices, data, b, x0, tolerance, max_iterations, out_x):
    """Jacobi-preconditioned CG for SPD CSR ``A``: ``A out_x = b``.

    Args:
        indptr, indices, data: CSR ``A`` (n, n). b, x0, out_x: (n,) float64.
        tolerance: relative residual target [dimensionless]. max_iterations: iteration cap.

    Returns:
        ``(iterations, residual)``; converged iff ``residual <= tolerance``. Scratch (5 vectors
        of n) is allocated once per call, never inside the loop.
    """
    inv_diag = np.empty(b.shape[0])
    jacobi_inverse_diagonal(indptr, indices, data, inv_diag)
    return _pcg_with_scratch(indptr, indices, data, b, x0, inv_diag, np.empty((0, 3, 3)), tolerance, max_iterations,
                             out_x)  # fmt: skip


@njit_kernel
def pcg_solve_block3(indptr, indices, data, b, x0, tolerance, max_iterations, out_x):
    """Block-Jacobi (3x3 per node) preconditioned CG; same contract as :func:`pcg_solve`, n % 3 == 0."""
    inv_blocks = np.empty((b.shape[0] // 3, 3, 3))
    block3_jacobi_inverse(indptr, indices, data, inv_blocks)
    return _pcg_with_scratch(indptr, indices, data, b, x0, np.empty(0), inv_blocks, tolerance, max_iterations, out_x)
