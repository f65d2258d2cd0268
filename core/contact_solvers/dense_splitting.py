"""Splitting methods on a dense BLCP ``u = W r + q`` (course §3.2): projected Jacobi, Gauss–Seidel swept forward,
backward or both ways (symmetric), each with over- or under-relaxation ω (PSOR).

The friction model is the box of :func:`.dense.solve_pgs_dense` (``0 <= u_n ⊥ r_n >= 0``, each tangential impulse in
``[-μ r_n, μ r_n]``). With ``A = W`` split as ``M − N`` (the course's Table 3, corrected: Jacobi ``M = D``, PGS
``M = L + D``, PSOR ``M = D + ωL``), every row's update is ``r_i ← proj(r_i − ω u_i / W_ii)``: Gauss–Seidel reads
each ``u_i`` with the rows updated before it in the sweep, Jacobi reads every ``u_i`` at the sweep's start. Forward
Gauss–Seidel at ``ω = 1`` is :func:`.dense.solve_pgs_dense`, bit for bit. A sweep updates a contact's normal row
before its tangents in every order (the tangents' box needs the normal impulse). Dense: for study and FCLIB
problems, never inside a bake.
"""

import numpy as np

from ..jit import njit_kernel
from .dense import _add_column_change, _contact_velocity, _largest_abs

FORWARD = 0
"""Gauss–Seidel over the contacts in order."""
BACKWARD = 1
"""Gauss–Seidel over the contacts in reverse order (course eq. 148–149)."""
SYMMETRIC = 2
"""A forward sweep then a backward one, counted as two sweeps."""
JACOBI = 3
"""Every row from the velocities at the sweep's start."""


@njit_kernel
def _box_update(W, mu, row, k, d, omega, u_row, normal, r):
    """Row ``row`` (contact ``k``, direction ``d``) relaxed toward its box: the new impulse (``normal``: the
    contact's normal impulse that bounds a tangent)."""
    diag = W[row, row]
    if not diag > 0.0:
        return r[row]
    new = r[row] - omega * u_row / diag
    if d == 0:
        return max(new, 0.0)
    bound = mu[k] * normal
    return min(max(new, -bound), bound)


@njit_kernel
def _gauss_seidel_sweep(W, mu, omega, backward, u, r):
    """One Gauss–Seidel sweep, ``u`` kept equal to ``W r + q``; the largest impulse change."""
    m = mu.shape[0]
    change = 0.0
    for step in range(m):
        k = m - 1 - step if backward else step
        for d in range(3):
            row = 3 * k + d
            old = r[row]
            new = _box_update(W, mu, row, k, d, omega, u[row], r[3 * k], r)
            delta = new - old
            if delta != 0.0:
                r[row] = new
                change = max(change, abs(delta))
                _add_column_change(W, row, delta, u)
    return change


@njit_kernel
def _jacobi_sweep(W, q, mu, omega, u, start, r):
    """One projected Jacobi sweep from the impulses ``start`` (a copy of ``r`` at the sweep's start, whose
    velocities ``u`` hold); ``u`` is recomputed for the new ``r``; the largest impulse change."""
    m = mu.shape[0]
    change = 0.0
    for i in range(3 * m):
        start[i] = r[i]
    for k in range(m):
        for d in range(3):
            row = 3 * k + d
            r[row] = _box_update(W, mu, row, k, d, omega, u[row], start[3 * k], start)
            change = max(change, abs(r[row] - start[row]))
    _contact_velocity(W, q, r, u)
    return change


@njit_kernel
def solve_splitting_dense(W, q, mu, method, omega, iterations, tolerance, out_r, result):
    """A splitting method on ``u = W r + q`` with the box friction model.

    Args:
        W (3m, 3m), q (3m,), mu (m,): the problem. method: :data:`FORWARD`, :data:`BACKWARD`, :data:`SYMMETRIC`
        or :data:`JACOBI`. omega: relaxation, in (0, 2). iterations: sweep cap. tolerance: stop when a sweep's
        largest impulse change is at most this times the largest impulse. out_r (3m,): the start and the solution.
        result: ``[sweeps, largest impulse change of the last sweep]``.
    """
    m = mu.shape[0]
    u = np.empty(3 * m)
    start = np.empty(3 * m)
    _contact_velocity(W, q, out_r, u)
    sweeps = 0
    change = 0.0
    while sweeps < iterations:
        if method == JACOBI:
            change = _jacobi_sweep(W, q, mu, omega, u, start, out_r)
            sweeps += 1
        else:
            change = _gauss_seidel_sweep(W, mu, omega, method == BACKWARD, u, out_r)
            sweeps += 1
            if method == SYMMETRIC and sweeps < iterations:
                change = max(change, _gauss_seidel_sweep(W, mu, omega, True, u, out_r))
                sweeps += 1
        if change <= tolerance * max(_largest_abs(out_r), 1e-300):
            break
    result[0] = sweeps
    result[1] = change
