"""Right-preconditioned BiCGSTAB on CSR matrices (van der Vorst 1992; Saad, *Iterative Methods for
Sparse Linear Systems*, Alg. 7.7 with right preconditioning). For **non-symmetric** ``A`` such as
the Jacobian of the fully implicit friction residual (seed 003 sec. 3.4, Algorithm 2).

Right preconditioning ``A K^-1 (K x) = b`` keeps the monitored residual the unpreconditioned
``b - A x``::

    r = b - A x,  r_hat = r,  rho = alpha = omega = 1,  v = p = 0
    repeat:  rho_new = r_hat.r,  beta = (rho_new/rho)(alpha/omega)
             p = r + beta (p - omega v),  y = K^-1 p,  v = A y,  alpha = rho_new / (r_hat.v)
             s = r - alpha v          (stop here with x += alpha y if ||s|| small)
             z = K^-1 s,  t = A z,  omega = (t.s)/(t.t)
             x += alpha y + omega z,  r = s - omega t

``K^-1`` is Jacobi (``inv_diag``) or 3x3 block Jacobi (``inv_blocks``, see
:func:`contact_lab.core.linalg.pcg.block3_jacobi_inverse`), or the identity when both are empty.
When the recurrence residual passes the test the true residual is recomputed and, if it fails,
the iteration restarts from it (new shadow vector ``r_hat``); a breakdown (``rho = 0``,
``r_hat.v = 0`` or ``omega = 0``) also restarts once from the true residual and otherwise stops.
Serial dot products: bitwise reproducible. No allocation: all scratch is caller-owned.

Returns ``(iterations, residual)``: matvecs spent / 2 (one iteration = two matvecs) and the true
relative residual ``||b - A x|| / ||b||``; **converged iff residual <= tolerance**.
"""

import math

import numpy as np

from ..jit import njit_kernel
from .csr import csr_matvec
from .pcg import (
    _apply_preconditioner,
    block3_jacobi_inverse,
    jacobi_inverse_diagonal,
    serial_dot,
    start_krylov,
    true_residual,
)


@njit_kernel
def _precondition(inv_diag, inv_blocks, r, out_z):
    if inv_blocks.shape[0] == 0 and inv_diag.shape[0] == 0:
        for i in range(r.shape[0]):
            out_z[i] = r[i]
    else:
        _apply_preconditioner(inv_diag, inv_blocks, r, out_z)


@njit_kernel
def _bicgstab_cycle(indptr, indices, data, inv_diag, inv_blocks, target, iterations, max_iterations, r, r_hat, p,
                    v, y, z, t, out_x):  # fmt: skip
    """One BiCGSTAB cycle from the current residual ``r`` with shadow ``r_hat = r`` (module docstring recurrence).

    Runs until the recurrence residual is ``<= target`` or ``max_iterations``; updates ``out_x`` and ``r`` in
    place. Returns ``(iterations, breakdown)``, the count carried on from ``iterations``; ``breakdown`` when
    ``rho = 0``, ``r_hat.v = 0`` or ``omega = 0`` (or one is not finite).
    """
    n = r.shape[0]
    for i in range(n):
        r_hat[i] = r[i]
        p[i] = 0.0
        v[i] = 0.0
    rho = 1.0
    alpha = 1.0
    omega = 1.0
    while iterations < max_iterations:
        iterations += 1
        rho_new = serial_dot(r_hat, r)
        if rho_new == 0.0 or not math.isfinite(rho_new):
            return iterations, True
        beta = (rho_new / rho) * (alpha / omega)
        rho = rho_new
        for i in range(n):
            p[i] = r[i] + beta * (p[i] - omega * v[i])
        _precondition(inv_diag, inv_blocks, p, y)
        csr_matvec(indptr, indices, data, y, v)
        rv = serial_dot(r_hat, v)
        if rv == 0.0 or not math.isfinite(rv):
            return iterations, True
        alpha = rho / rv
        for i in range(n):
            r[i] -= alpha * v[i]  # r now holds s
        if math.sqrt(serial_dot(r, r)) <= target:
            for i in range(n):
                out_x[i] += alpha * y[i]
            return iterations, False
        _precondition(inv_diag, inv_blocks, r, z)
        csr_matvec(indptr, indices, data, z, t)
        tt = serial_dot(t, t)
        omega = serial_dot(t, r) / tt if tt > 0.0 else 0.0
        for i in range(n):
            out_x[i] += alpha * y[i] + omega * z[i]
            r[i] -= omega * t[i]
        if math.sqrt(serial_dot(r, r)) <= target:
            return iterations, False
        if omega == 0.0 or not math.isfinite(omega):
            return iterations, True
    return iterations, False


@njit_kernel
def bicgstab_solve_preconditioned(
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
    r_hat,
    p,
    v,
    y,
    z,
    t,
    # output
    out_x,
):
    """BiCGSTAB with a caller-built preconditioner and caller-owned scratch.

    Args:
        indptr, indices, data: CSR ``A`` (n, n), any non-singular matrix.
        b: (n,) right-hand side. x0: (n,) initial guess (may alias ``out_x``).
        inv_diag: (n,) Jacobi inverse diagonal, or (0,). inv_blocks: (n/3, 3, 3) or (0, 3, 3).
        tolerance: relative residual target ``||b - A x|| / ||b||``. max_iterations: cap.
        r, r_hat, p, v, y, z, t: scratch (n,). out_x: (n,) solution.

    Returns:
        ``(iterations, residual)``; converged iff ``residual <= tolerance``.
    """
    b_norm, r_norm = start_krylov(indptr, indices, data, b, x0, t, r, out_x)
    if b_norm == 0.0:
        return 0, 0.0
    target = tolerance * b_norm
    iterations = np.int64(0)  # not the literal 0: _bicgstab_cycle would be compiled for Literal[int](0) too
    restarts = 0
    while r_norm > target and iterations < max_iterations:
        iterations, breakdown = _bicgstab_cycle(
            indptr, indices, data, inv_diag, inv_blocks, target, iterations, max_iterations,
            r, r_hat, p, v, y, z, t, out_x,
        )  # fmt: skip
        # True residual (the recurrence drifts in floating point).
        r_norm = true_residual(indptr, indices, data, b, out_x, t, r)
        if breakdown:
            restarts += 1
            if restarts > 1:
                break
    return iterations, r_norm / b_norm


@njit_kernel
def bicgstab_solve(indptr, indices, data, b, x0, tolerance, max_iterations, block3, out_x):
    """Convenience wrapper: builds the (block-)Jacobi preconditioner and scratch, then solves.

    ``block3`` selects the 3x3 block Jacobi preconditioner (n % 3 == 0), else plain Jacobi.
    Allocates its scratch once per call (solver loops use :func:`bicgstab_solve_preconditioned`).
    """
    n = b.shape[0]
    if block3:
        inv_blocks = np.empty((n // 3, 3, 3))
        block3_jacobi_inverse(indptr, indices, data, inv_blocks)
        inv_diag = np.empty(0)
    else:
        inv_blocks = np.empty((0, 3, 3))
        inv_diag = np.empty(n)
        jacobi_inverse_diagonal(indptr, indices, data, inv_diag)
    r = np.empty(n)
    r_hat = np.empty(n)
    p = np.empty(n)
    v = np.empty(n)
    y = np.empty(n)
    z = np.empty(n)
    t = np.empty(n)
    return bicgstab_solve_preconditioned(
        indptr, indices, data, b, x0, inv_diag, inv_blocks, tolerance, max_iterations, r, r_hat, p, v, y, z, t, out_x
    )
