"""PROX blocked Gauss–Seidel on an assembled Delassus matrix (small problems, FCLIB, reference).

Solves the Coulomb contact problem in the local form of FCLIB: find impulses ``r`` (blocks
``[r_n, r_t, r_b]`` per contact) with ``u = W r + q`` such that ``0 <= u_n ⊥ r_n >= 0`` and
``r_T = prox_{disk(mu r_n)}(r_T - rho u_T)`` (maximal dissipation). This is the same iteration as
:func:`.kernels.solve_prox_gs`, written on a dense ``W`` instead of body accumulators, so the two
can check each other.
"""

import math

import numpy as np

from ..enums import RFactorStrategy
from ..friction.models import project_disk, project_ellipse
from ..jit import njit_kernel
from .kernels import CYCLE_MARGIN, compute_r_factors, judge_sweep, merit_window, store_result, sweep_index

LOCAL, BLOCKED = int(RFactorStrategy.LOCAL), int(RFactorStrategy.BLOCKED)


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
    compute_r_factors(blocks, m, LOCAL if strategy == BLOCKED else strategy, rho)  # BLOCKED: the normals' 1 / A_nn
    _copy_into(r_init, out_r)
    u = np.empty(3 * m)
    _contact_velocity(W, q, out_r, u)
    return rho, u


@njit_kernel
def _prox_step(W, r, u, rho, k, scale, mu_k, strategy):
    """Contact ``k``'s proximal step ``prox(r_k − scale R_k u_k)`` onto ``{r_n >= 0, ‖r_T‖ <= μ r_n}``:
    ``(r_n, r_t, r_b)``. BLOCKED steps the friction by the inverse of its 2 × 2 block of ``W``
    (:func:`_blocked_friction_step`)."""
    i0 = 3 * k
    rn = max(r[i0] - scale * rho[k, 0] * u[i0], 0.0)
    if strategy == BLOCKED:
        rt, rb = _blocked_friction_step(W, r, u, i0, scale, mu_k * rn)
        if not math.isnan(rt):
            return rn, rt, rb
    rt, rb = project_disk(
        r[i0 + 1] - scale * rho[k, 1] * u[i0 + 1],
        r[i0 + 2] - scale * rho[k, 2] * u[i0 + 2],
        mu_k * rn,
    )
    return rn, rt, rb


@njit_kernel
def _blocked_friction_step(W, r, u, i0, scale, radius):
    """The blocked r-factor's friction step (seed 001 §1.4, ``R_T = (W_TT)⁻¹``): ``y = r_T − scale W_TT⁻¹ u_T``,
    projected onto the disk of ``radius`` in ``W_TT``'s metric, ``argmin_{|x| <= radius} (x − y)ᵀ W_TT (x − y)``.

    The seed's Euclidean projection would move the fixed point off Coulomb's law wherever ``W_TT`` is not a
    multiple of the identity (sliding would satisfy ``W_TT⁻¹ u_T ∥ −r_T`` instead of ``u_T ∥ −r_T``); in the
    block's own metric the proximal step keeps it (any r-factor leaves the solution alone). In ``W_TT``'s
    eigenbasis (eigenvalues ``l1 >= l2``) the metric projection is the Euclidean one of ``√l_i y_i`` onto the
    ellipse of semi-axes ``radius √l_i``. Returns NaN for a block without a positive definite inverse (the caller
    then takes the local step)."""
    a00, a01, a11 = W[i0 + 1, i0 + 1], W[i0 + 1, i0 + 2], W[i0 + 2, i0 + 2]
    det = a00 * a11 - a01 * a01
    if not det > 1e-12 * max(a00 * a11, 1e-300):
        return math.nan, math.nan
    ut, ub = u[i0 + 1], u[i0 + 2]
    yt = r[i0 + 1] - scale * (a11 * ut - a01 * ub) / det
    yb = r[i0 + 2] - scale * (a00 * ub - a01 * ut) / det
    if yt * yt + yb * yb <= radius * radius:
        return yt, yb
    mean, half = 0.5 * (a00 + a11), math.sqrt((0.5 * (a00 - a11)) ** 2 + a01 * a01)
    s1, s2 = math.sqrt(mean + half), math.sqrt(max(mean - half, 1e-300))
    angle = 0.5 * math.atan2(2.0 * a01, a00 - a11)  # the first eigenvector's direction
    c, s = math.cos(angle), math.sin(angle)
    z1, z2 = project_ellipse(s1 * (c * yt + s * yb), s2 * (c * yb - s * yt), radius * s1, radius * s2)
    x1, x2 = z1 / s1, z2 / s2
    return c * x1 - s * x2, s * x1 + c * x2


@njit_kernel
def solve_prox_dense(W, q, mu, strategy, iterations, tolerance, nu, r_init, out_r, result):
    """PROX GS with adaptive r on ``u = W r + q``.

    Args:
        W: Delassus matrix, shape (3m, 3m). q: free velocity, shape (3m,). mu: shape (m,).
        strategy: :class:`RFactorStrategy` value (1 global, 2 local, 3 blocked).
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
            rn, rt, rb = _prox_step(W, out_r, u, rho, k, scale, mu[k], strategy)
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
        rejected, accepted, last_merit = judge_sweep(window, accepted, merit, last_merit, CYCLE_MARGIN)
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
            rn, rt, rb = _prox_step(W, saved_r, u, rho, k, scale, mu[k], strategy)
            out_r[i0], out_r[i0 + 1], out_r[i0 + 2] = rn, rt, rb
            for d in range(3):
                merit = max(merit, abs(out_r[i0 + d] - saved_r[i0 + d]))
        if merit <= tolerance * scale * max(_largest_abs(out_r), 1e-300):
            break
        rejected, accepted, last_merit = judge_sweep(window, accepted, merit, last_merit, CYCLE_MARGIN)
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
