"""PROX blocked Gauss–Seidel on an assembled Delassus matrix (small problems, FCLIB, reference).

Solves the Coulomb contact problem in the local form of FCLIB: find impulses ``r`` (blocks
``[r_n, r_t, r_b]`` per contact) with ``u = W r + q`` such that ``0 <= u_n ⊥ r_n >= 0`` and
``r_T = prox_{disk(mu r_n)}(r_T - rho u_T)`` (maximal dissipation). This is the same iteration as
:func:`.kernels.solve_prox_gs`, written on a dense ``W`` instead of body accumulators, so the two
can check each other.
"""

import math

import numpy as np

from ..friction.models import project_disk
from ..jit import njit_kernel
from .kernels import compute_r_factors, judge_sweep, merit_window, store_result, sweep_index


@njit_kernel
def _copy_into(src, dst):
    """``dst[:] = src`` for (n,) vectors, element by element: the slice form compiles numba's shape-mismatch error
    formatting (seconds of a cold compile)."""
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@njit_kernel
def _contact_velocity(W, q, r, out):
    """``out = W r + q`` (serial)."""
    for i in range(q.shape[0]):
        s = q[i]
        for j in range(q.shape[0]):
            s += W[i, j] * r[j]
        out[i] = s


@njit_kernel
def _largest_abs(r):
    """``||r||_inf`` (serial) of the impulses (3m,) [N·s]."""
    largest = 0.0
    for i in range(r.shape[0]):
        largest = max(largest, abs(r[i]))
    return largest


@njit_kernel
def _add_column_change(W, col, delta, u):
    """``u += W[:, col] delta``: the velocity (3m,) after impulse ``col`` changed by ``delta``."""
    for j in range(u.shape[0]):
        u[j] += W[j, col] * delta


@njit_kernel
def _prox_start(W, q, m, strategy, r_init, out_r):
    """PROX's start on a dense ``W``: the r-factors ``rho`` (m, 3) of its diagonal blocks, ``out_r = r_init`` and the
    velocities ``u = W r + q`` (3m,)."""
    blocks = np.empty((m, 3, 3))
    for k in range(m):
        for i in range(3):
            for j in range(3):
                blocks[k, i, j] = W[3 * k + i, 3 * k + j]
    rho = np.empty((m, 3))
    compute_r_factors(blocks, m, strategy, rho)
    _copy_into(r_init, out_r)
    u = np.empty(3 * m)
    _contact_velocity(W, q, out_r, u)
    return rho, u


@njit_kernel
def _prox_step(r, u, rho, k, scale, mu_k):
    """Contact ``k``'s proximal step ``prox(r_k − scale R_k u_k)`` onto ``{r_n >= 0, ‖r_T‖ <= μ r_n}``:
    ``(r_n, r_t, r_b)``."""
    i0 = 3 * k
    rn = max(r[i0] - scale * rho[k, 0] * u[i0], 0.0)
    rt, rb = project_disk(
        r[i0 + 1] - scale * rho[k, 1] * u[i0 + 1],
        r[i0 + 2] - scale * rho[k, 2] * u[i0 + 2],
        mu_k * rn,
    )
    return rn, rt, rb


@njit_kernel
def solve_prox_dense(W, q, mu, strategy, iterations, tolerance, nu, r_init, out_r, result):
    """PROX GS with adaptive r on ``u = W r + q``.

    Args:
        W: Delassus matrix, shape (3m, 3m). q: free velocity, shape (3m,). mu: shape (m,).
        strategy: :class:`RFactorStrategy` value (1 global, 2 local).
        iterations: sweep cap (rejected sweeps count). tolerance: relative merit threshold.
        nu: r back-off factor. r_init: starting impulses, shape (3m,).
        out_r: solution, shape (3m,). result: ``[sweeps, merit, rejections]``.
    """
    m = mu.shape[0]
    rho, u = _prox_start(W, q, m, strategy, r_init, out_r)
    saved_r = out_r.copy()
    saved_u = u.copy()
    delta = np.empty(3)
    window, accepted, last_merit = merit_window()
    merit, scale, rejections, sweeps = 0.0, 1.0, 0, 0
    for it in range(iterations):
        sweeps = it + 1
        _copy_into(out_r, saved_r)
        _copy_into(u, saved_u)
        merit = 0.0
        for i in range(m):
            k = sweep_index(i, it, m)
            i0 = 3 * k
            rn, rt, rb = _prox_step(out_r, u, rho, k, scale, mu[k])
            delta[0] = rn - out_r[i0]
            delta[1] = rt - out_r[i0 + 1]
            delta[2] = rb - out_r[i0 + 2]
            out_r[i0] = rn
            out_r[i0 + 1] = rt
            out_r[i0 + 2] = rb
            for d in range(3):
                if delta[d] != 0.0:
                    merit = max(merit, abs(delta[d]))
                    _add_column_change(W, i0 + d, delta[d], u)
        if merit <= tolerance * scale * max(_largest_abs(out_r), 1e-300):
            break
        rejected, accepted, last_merit = judge_sweep(window, accepted, merit, last_merit)
        if rejected:
            rejections += 1
            _copy_into(saved_r, out_r)
            _copy_into(saved_u, u)
            scale *= nu
            merit = last_merit
    store_result(result, sweeps, merit, rejections)


@njit_kernel
def solve_pgs_dense(W, q, mu, iterations, tolerance, out_r, result):
    """Projected Gauss–Seidel on ``u = W r + q`` with the box friction model (BLCP, course §3.2):
    ``0 <= u_n ⊥ r_n >= 0`` and each tangential impulse clamped to ``[-mu r_n, mu r_n]``.

    Args: as :func:`solve_prox_dense` (no r-factor); ``out_r`` holds the start and the solution.
    ``result``: ``[sweeps, largest impulse change of the last sweep]``.
    """
    m = mu.shape[0]
    u = np.empty(3 * m)
    _contact_velocity(W, q, out_r, u)
    sweeps = 0
    change = 0.0
    for it in range(iterations):
        sweeps = it + 1
        change = 0.0
        for k in range(m):
            for d in range(3):
                row = 3 * k + d
                diag = W[row, row]
                if not diag > 0.0:
                    continue
                old = out_r[row]
                new = old - u[row] / diag
                if d == 0:
                    new = max(new, 0.0)
                else:
                    bound = mu[k] * out_r[3 * k]
                    new = min(max(new, -bound), bound)
                delta = new - old
                if delta != 0.0:
                    out_r[row] = new
                    change = max(change, abs(delta))
                    _add_column_change(W, row, delta, u)
        if change <= tolerance * max(_largest_abs(out_r), 1e-300):
            break
    result[0] = sweeps
    result[1] = change


@njit_kernel
def solve_prox_jacobi_dense(W, q, mu, strategy, iterations, tolerance, nu, r_init, out_r, result):
    """PROX Jacobi with adaptive r on ``u = W r + q`` (course Algorithm 11): every contact's proximal step from the
    velocities at the sweep's start, ``r ← prox(r − R (W r + q))``, then ``u`` again; a sweep whose merit the
    divergence test rejects is undone and ``R`` shrinks by ``nu``. Arguments and ``result`` as
    :func:`solve_prox_dense`."""
    m = mu.shape[0]
    rho, u = _prox_start(W, q, m, strategy, r_init, out_r)
    saved_r = out_r.copy()
    window, accepted, last_merit = merit_window()
    merit, scale, rejections, sweeps = 0.0, 1.0, 0, 0
    for it in range(iterations):
        sweeps = it + 1
        _copy_into(out_r, saved_r)
        merit = 0.0
        for k in range(m):
            i0 = 3 * k
            rn, rt, rb = _prox_step(saved_r, u, rho, k, scale, mu[k])
            out_r[i0], out_r[i0 + 1], out_r[i0 + 2] = rn, rt, rb
            for d in range(3):
                merit = max(merit, abs(out_r[i0 + d] - saved_r[i0 + d]))
        if merit <= tolerance * scale * max(_largest_abs(out_r), 1e-300):
            break
        rejected, accepted, last_merit = judge_sweep(window, accepted, merit, last_merit)
        if rejected:
            rejections += 1
            _copy_into(saved_r, out_r)
            scale *= nu
            merit = last_merit
        else:
            _contact_velocity(W, q, out_r, u)
    store_result(result, sweeps, merit, rejections)


@njit_kernel
def friction_qp_sweeps(W, c, bound, r, sweeps, tolerance):
    """Projected block Gauss–Seidel on ``min ½ r_tᵀ W_tt r_t + c_tᵀ r_t`` over ``|r_t,k| <= bound[k]``, the
    friction half of staggered projections (:mod:`.staggered`): per contact a gradient step of ``1 / λ_max`` of its
    2 × 2 block, projected onto its disk (a descent step of the convex QP). ``W`` (3m, 3m), ``c`` (3m,) (its tangent
    rows are read), ``bound`` (m,) [N·s], ``r`` (3m,): its tangent rows updated in place. Returns the sweeps done."""
    m = bound.shape[0]
    scale = max(bound.max(), 1e-300)
    for sweep in range(sweeps):
        change = 0.0
        for k in range(m):
            i, j = 3 * k + 1, 3 * k + 2
            g1, g2 = c[i], c[j]
            for col in range(m):
                a, b = 3 * col + 1, 3 * col + 2
                g1 += W[i, a] * r[a] + W[i, b] * r[b]
                g2 += W[j, a] * r[a] + W[j, b] * r[b]
            half = 0.5 * (W[i, i] - W[j, j])
            top = 0.5 * (W[i, i] + W[j, j]) + math.sqrt(half * half + W[i, j] * W[i, j])
            x1, x2 = r[i] - g1 / top, r[j] - g2 / top
            size = math.sqrt(x1 * x1 + x2 * x2)
            if size > bound[k]:
                x1, x2 = x1 * bound[k] / size, x2 * bound[k] / size
            change = max(change, abs(x1 - r[i]), abs(x2 - r[j]))
            r[i], r[j] = x1, x2
        if change <= tolerance * scale:
            return sweep + 1
    return sweeps
