"""Non-smooth Newton kernels: Fischer–Burmeister reformulation of the contact law with parametric cones.

The global solver is a blocked (non-smooth) Gauss–Seidel over contacts on the same matrix-free
rows and body accumulators as PROX (:mod:`.kernels`). Each block is the 3-variable contact problem
``v = D_k lambda + c`` (``D_k`` the 3x3 Delassus block, ``c`` the velocity due to everything else),
solved to high accuracy by a damped semismooth Newton method on an FB reformulation (course §3.3,
eq. 175–191; parametric cones E.1.5, eq. 311–319):

* normal (eq. 189 with the velocity form of §3.3.4 and the r-scaling of §3.3.5)::

      Phi_n = psi_fb(v_n, r_n lambda_n),   r_n = D_nn

* disk / ellipse (CONE, ELLIPSE). With ``lambda_t = mu_t lambda_n u_t``, ``lambda_b = mu_b lambda_n u_b``
  (the scaling ``lambda~ = (lambda_t / mu_t, lambda_b / mu_b)``, ``v~ = (mu_t v_t, mu_b v_b)`` keeps the
  power ``lambda . v`` and maps the ellipse onto the disk of radius ``lambda_n``) maximal dissipation
  (eq. 192) is the KKT system of ``min v~ . u  s.t.  eta(u) = (|u|^2 - 1) / 2 <= 0`` — the course's
  eq. 312–314 with the quadratic limit-surface function ``eta``, but with the multiplier on ``grad eta``
  (``v~ + gamma grad eta = 0``, which is square and regular) instead of eq. 313/315::

      Phi_t = v~_t + gamma u_t,   Phi_b = v~_b + gamma u_b,   Phi_gamma = psi_fb(gamma, r_f (1 - |u|^2) / 2)

  ``gamma >= 0`` is the sliding speed ``|v~|`` (the slack of eq. 193–197). The unknowns are
  ``x = (lambda_n, u_t, u_b, gamma)``. Parametrising the friction by ``lambda_n u`` keeps the system
  regular where the seed's ``lambda_t / |lambda_t|`` (eq. 194) is undefined and where Slater fails
  (``lambda_n = 0``: ``u`` still solves ``v~ + gamma u = 0``, ``lambda_t = 0`` follows).
  ``r_f`` is the block's velocity scale, so every component of ``Phi`` is a velocity [m/s].

* four-bound box (BOX, texture friction, eq. 337–338), per tangent row ``d`` with bounds
  ``l = -mu_-d lambda_n``, ``h = mu_+d lambda_n``: the box-MCP (Billups) FB function::

      Phi_d = psi_fb(r_d (lambda_d - l), -psi_fb(r_d (h - lambda_d), -v_d)),   r_d = D_dd

  (lambda_d = l => v_d >= 0;  lambda_d = h => v_d <= 0;  in between => v_d = 0).

Newton direction ``J dx = -Phi`` with ``J`` an element of the generalized Jacobian (subgradient
convention ``alpha(0,0) = 0``, ``beta(0,0) = 1``, eq. 187–188), solved by Gaussian elimination with
partial pivoting (no BLAS), globalised by Armijo backtracking on ``theta = |Phi|^2 / 2``
(``grad theta . dx = -|Phi|^2``) along a path projected onto ``lambda_n, gamma >= 0``. If Newton
does not reach its tolerance, meets a singular Jacobian or a failed line search, it restarts (sliding
guess, then the end point of 50 PROX projections); if that fails too the block keeps iterated PROX
projections (eq. 201, 214) so the sweep still makes progress, and is counted as a failure.
"""

import math

import numpy as np

from ..friction.models import project_friction
from ..jit import njit_kernel
from .joint_sweep import joint_pass, uses_global_factor
from .kernels import _max_abs, store_result, sweep_index
from .merit_history import merit_squared
from .rows import apply_contact_impulse, contact_velocity

LOCAL_OK = 0
"""Local Newton status: converged."""
LOCAL_MAX_ITERATIONS = 1
"""Local Newton status: iteration cap reached."""
LOCAL_SINGULAR = 2
"""Local Newton status: singular generalized Jacobian."""
LOCAL_LINE_SEARCH = 3
"""Local Newton status: Armijo backtracking found no decrease."""

ARMIJO_SIGMA = 1e-4
"""Sufficient-decrease constant of the Armijo rule [dimensionless]."""
MIN_STEP = 1e-10
"""Smallest line-search step before the local Newton gives up [dimensionless]."""


@njit_kernel
def fischer_burmeister(a, b):
    """``psi_fb(a, b) = a + b - sqrt(a^2 + b^2)`` (course eq. 184); zero iff ``0 <= a _|_ b >= 0``."""
    s = math.sqrt(a * a + b * b)
    if a + b > 0.0:
        # a + b - s = ((a + b)^2 - s^2) / (a + b + s) = 2ab / (a + b + s): no cancellation for a, b > 0
        return 2.0 * a * b / (a + b + s)
    return a + b - s


@njit_kernel
def fischer_burmeister_gradient(a, b):
    """Partials ``(alpha, beta) = (dpsi/da, dpsi/db)`` of :func:`fischer_burmeister` (course eq. 185–188).

    Away from the origin ``alpha = 1 - a / |(a, b)|``, ``beta = 1 - b / |(a, b)|``. At ``(0, 0)`` the
    function is not differentiable; the seed's subgradient ``alpha = 0``, ``beta = 1`` is returned.
    """
    s = math.sqrt(a * a + b * b)
    if s == 0.0:
        return 0.0, 1.0
    return 1.0 - a / s, 1.0 - b / s


@njit_kernel
def solve_fb_affine_scalar(slope, offset, r, x0, iterations, out_history):
    """Plain Newton on ``psi_fb(slope x + offset, r x) = 0`` (course §3.3.5, worked example D3).

    Writes the iterates ``x_0 .. x_k`` into ``out_history`` (length >= iterations + 1) and returns
    ``k``, the number of Newton steps taken (stops when the residual is exactly zero).
    """
    x = x0
    out_history[0] = x
    for it in range(iterations):
        a = slope * x + offset
        f = fischer_burmeister(a, r * x)
        if f == 0.0:
            return it
        alpha, beta = fischer_burmeister_gradient(a, r * x)
        # d/dx psi(c(x), r x) = alpha c'(x) + beta r (eq. 190–191)
        x = x - f / (alpha * slope + beta * r)
        out_history[it + 1] = x
    return iterations


@njit_kernel
def solve_small_linear(n, A, rhs, out_x):
    """Solve ``A x = rhs`` for ``n <= 4`` by Gaussian elimination with partial pivoting, in place.

    ``A`` and ``rhs`` are overwritten. Returns False (and leaves ``out_x`` undefined) when a pivot is
    below ``1e-14`` times the largest entry of ``A`` (numerically singular).
    """
    scale = 0.0
    for i in range(n):
        for j in range(n):
            scale = max(scale, abs(A[i, j]))
    if not scale > 0.0:
        return False
    for col in range(n):
        p = col
        for i in range(col + 1, n):
            if abs(A[i, col]) > abs(A[p, col]):
                p = i
        if not abs(A[p, col]) > 1e-14 * scale:
            return False
        if p != col:
            for j in range(n):
                A[col, j], A[p, j] = A[p, j], A[col, j]
            rhs[col], rhs[p] = rhs[p], rhs[col]
        for i in range(col + 1, n):
            f = A[i, col] / A[col, col]
            if f != 0.0:
                for j in range(col, n):
                    A[i, j] -= f * A[col, j]
                rhs[i] -= f * rhs[col]
    for i in range(n - 1, -1, -1):
        s = rhs[i]
        for j in range(i + 1, n):
            s -= A[i, j] * out_x[j]
        out_x[i] = s / A[i, i]
    return True


@njit_kernel
def _impulse_from_unknowns(mode, mu_t, mu_b, x, out_lam):
    # mode 0: x = (lambda_n); 1 (box): x = lambda; 2 (disk/ellipse): x = (lambda_n, u_t, u_b, gamma)
    out_lam[0] = x[0]
    if mode == 0:
        out_lam[1] = 0.0
        out_lam[2] = 0.0
    elif mode == 1:
        out_lam[1] = x[1]
        out_lam[2] = x[2]
    else:
        out_lam[1] = mu_t * x[0] * x[1]
        out_lam[2] = mu_b * x[0] * x[2]


@njit_kernel
def contact_fb_residual(mode, mu4, D, c, r, x, lam, v, out_phi):
    """FB residual ``Phi(x)`` of one contact block (see the module docstring), in [m/s].

    Args:
        mode: 0 normal only (frictionless), 1 box, 2 disk/ellipse in scaled variables.
        mu4: ``[+t, +b, -t, -b]`` coefficients. D: 3x3 Delassus block. c: constant velocity (3,).
        r: scale factors ``(r_n, r_t, r_b, r_f)`` (4,). x: unknowns (1, 3 or 4 used).
        lam, v: scratch (3,) receiving the impulse and ``v = D lambda + c``.
        out_phi: residual (4,), the first 1 / 3 / 4 entries used.
    Returns:
        ``theta = |Phi|^2 / 2``.
    """
    mu_t, mu_b = mu4[0], mu4[1]
    _impulse_from_unknowns(mode, mu_t, mu_b, x, lam)
    for i in range(3):
        v[i] = D[i, 0] * lam[0] + D[i, 1] * lam[1] + D[i, 2] * lam[2] + c[i]
    out_phi[0] = fischer_burmeister(v[0], r[0] * lam[0])
    theta = 0.5 * out_phi[0] * out_phi[0]
    if mode == 1:
        for d in (1, 2):
            lo = -mu4[d + 1] * lam[0]
            hi = mu4[d - 1] * lam[0]
            inner = fischer_burmeister(r[d] * (hi - lam[d]), -v[d])
            out_phi[d] = fischer_burmeister(r[d] * (lam[d] - lo), -inner)
            theta += 0.5 * out_phi[d] * out_phi[d]
    elif mode == 2:
        gamma = x[3]
        out_phi[1] = mu_t * v[1] + gamma * x[1]
        out_phi[2] = mu_b * v[2] + gamma * x[2]
        out_phi[3] = fischer_burmeister(gamma, r[3] * 0.5 * (1.0 - x[1] * x[1] - x[2] * x[2]))
        for i in (1, 2, 3):
            theta += 0.5 * out_phi[i] * out_phi[i]
    return theta


@njit_kernel
def contact_fb_jacobian(mode, mu4, D, c, r, x, lam, v, out_jac):
    """An element of the generalized Jacobian ``dPhi/dx`` of :func:`contact_fb_residual` (eq. 185–191, 316–319).

    ``lam`` and ``v`` must hold the values of the residual evaluation at the same ``x``.
    """
    mu_t, mu_b = mu4[0], mu4[1]
    for i in range(4):
        for j in range(4):
            out_jac[i, j] = 0.0
    a0, b0 = fischer_burmeister_gradient(v[0], r[0] * lam[0])
    if mode == 0:
        out_jac[0, 0] = a0 * D[0, 0] + b0 * r[0]
        return
    if mode == 1:
        # x = lambda, dv/dx = D
        for j in range(3):
            out_jac[0, j] = a0 * D[0, j]
        out_jac[0, 0] += b0 * r[0]
        for d in (1, 2):
            mlo = mu4[d + 1]
            mhi = mu4[d - 1]
            a2, b2 = r[d] * (mhi * lam[0] - lam[d]), -v[d]
            p = fischer_burmeister(a2, b2)
            al2, be2 = fischer_burmeister_gradient(a2, b2)
            al1, be1 = fischer_burmeister_gradient(r[d] * (lam[d] + mlo * lam[0]), -p)
            for j in range(3):
                # d(a1) = r (e_d + mu_- e_n); d(a2) = r (mu_+ e_n - e_d); d(b2) = -D[d, :]
                da1 = 0.0
                da2 = 0.0
                if j == d:
                    da1 += r[d]
                    da2 -= r[d]
                if j == 0:
                    da1 += r[d] * mlo
                    da2 += r[d] * mhi
                dp = al2 * da2 - be2 * D[d, j]
                out_jac[d, j] = al1 * da1 - be1 * dp
        return
    # mode 2: x = (lambda_n, u_t, u_b, gamma); dlambda/dx = L (3x4), dv/dx = D L
    ut, ub, gamma = x[1], x[2], x[3]
    ln = x[0]
    for i in range(3):
        g0 = D[i, 0] + D[i, 1] * mu_t * ut + D[i, 2] * mu_b * ub
        g1 = D[i, 1] * mu_t * ln
        g2 = D[i, 2] * mu_b * ln
        if i == 0:
            out_jac[0, 0] = a0 * g0 + b0 * r[0]
            out_jac[0, 1] = a0 * g1
            out_jac[0, 2] = a0 * g2
        else:
            s = mu_t if i == 1 else mu_b
            out_jac[i, 0] = s * g0
            out_jac[i, 1] = s * g1
            out_jac[i, 2] = s * g2
    # Phi_t = v~_t + gamma u_t, Phi_b = v~_b + gamma u_b
    out_jac[1, 1] += gamma
    out_jac[1, 3] = ut
    out_jac[2, 2] += gamma
    out_jac[2, 3] = ub
    # Phi_gamma = psi(gamma, r_f (1 - |u|^2) / 2): d/du = beta r_f (-u)
    a3, b3 = fischer_burmeister_gradient(gamma, r[3] * 0.5 * (1.0 - ut * ut - ub * ub))
    out_jac[3, 1] = -b3 * r[3] * ut
    out_jac[3, 2] = -b3 * r[3] * ub
    out_jac[3, 3] = a3


@njit_kernel
def _local_prox(friction_set, mu4, D, c, max_iterations, lam):
    # Fallback: PROX on the block (eq. 201, 214) with r = 1 / (Gershgorin bound of lambda_max(D)),
    # a contraction for the normal row and the convex friction set.
    g = 0.0
    for i in range(3):
        g = max(g, abs(D[i, 0]) + abs(D[i, 1]) + abs(D[i, 2]))
    r = 1.0 / g
    for _ in range(max_iterations):
        v0 = D[0, 0] * lam[0] + D[0, 1] * lam[1] + D[0, 2] * lam[2] + c[0]
        v1 = D[1, 0] * lam[0] + D[1, 1] * lam[1] + D[1, 2] * lam[2] + c[1]
        v2 = D[2, 0] * lam[0] + D[2, 1] * lam[1] + D[2, 2] * lam[2] + c[2]
        ln = max(lam[0] - r * v0, 0.0)
        lt, lb = project_friction(friction_set, mu4[0], mu4[1], mu4[2], mu4[3], ln, lam[1] - r * v1, lam[2] - r * v2)
        change = max(abs(ln - lam[0]), abs(lt - lam[1]), abs(lb - lam[2]))
        lam[0], lam[1], lam[2] = ln, lt, lb
        if change <= 1e-15 * max(abs(ln), abs(lt), abs(lb), 1e-300):
            break


@njit_kernel
def _unknowns_from_impulse(mode, mu4, D, c, lam, slide, out_x, v):
    # Starting unknowns from an impulse. For the disk/ellipse: u = lambda_t / (mu lambda_n) (clipped to
    # the unit disk) and the slack gamma = |v~|, the scaled sliding speed (eq. 197). With ``slide`` (or
    # no friction direction yet) u starts at maximal dissipation -v~ / |v~|.
    mu_t, mu_b = mu4[0], mu4[1]
    for i in range(3):
        v[i] = D[i, 0] * lam[0] + D[i, 1] * lam[1] + D[i, 2] * lam[2] + c[i]
    out_x[0] = max(lam[0], 0.0)
    out_x[1] = lam[1]
    out_x[2] = lam[2]
    out_x[3] = 0.0
    if mode != 2:
        return
    ut = lam[1] / (mu_t * out_x[0]) if out_x[0] > 0.0 and mu_t > 0.0 else 0.0
    ub = lam[2] / (mu_b * out_x[0]) if out_x[0] > 0.0 and mu_b > 0.0 else 0.0
    norm = math.sqrt(ut * ut + ub * ub)
    if norm > 1.0:
        ut /= norm
        ub /= norm
    gamma = math.sqrt((mu_t * v[1]) ** 2 + (mu_b * v[2]) ** 2)
    if (slide or norm == 0.0) and gamma > 0.0:
        ut = -mu_t * v[1] / gamma
        ub = -mu_b * v[2] / gamma
    out_x[1] = ut
    out_x[2] = ub
    out_x[3] = gamma


@njit_kernel
def _newton_iterations(
    mode, n, mu4, D, c, r, max_iterations, threshold, x, x_trial, dx, phi, phi_trial, jac, v, lam_trial, out_history
):
    # Damped semismooth Newton from x; returns (status, iterations). The trial points are projected
    # onto lambda_n >= 0 and gamma >= 0, which hold at every root: for gamma < 0 the block
    # mu^2 lambda_n D_tt + gamma I of the Jacobian can be singular and theta has non-root stationary
    # points. When the projected step gives no sufficient decrease the plain step is tried.
    theta = contact_fb_residual(mode, mu4, D, c, r, x, lam_trial, v, phi)
    for it in range(max_iterations + 1):
        norm_inf = 0.0
        for i in range(n):
            norm_inf = max(norm_inf, abs(phi[i]))
        out_history[it] = norm_inf
        if norm_inf <= threshold:
            return LOCAL_OK, it
        if it == max_iterations:
            return LOCAL_MAX_ITERATIONS, it
        contact_fb_jacobian(mode, mu4, D, c, r, x, lam_trial, v, jac)
        for i in range(n):
            dx[i] = -phi[i]
        if not solve_small_linear(n, jac, dx, x_trial):
            return LOCAL_SINGULAR, it
        for i in range(n):
            dx[i] = x_trial[i]
        # Armijo backtracking on theta = |Phi|^2 / 2: grad theta . dx = -|Phi|^2 = -2 theta
        t = 1.0
        accepted = False
        while t >= MIN_STEP and not accepted:
            for projected in (True, False):
                for i in range(n):
                    x_trial[i] = x[i] + t * dx[i]
                if projected:
                    x_trial[0] = max(x_trial[0], 0.0)
                    if mode == 2:
                        x_trial[3] = max(x_trial[3], 0.0)
                theta_trial = contact_fb_residual(mode, mu4, D, c, r, x_trial, lam_trial, v, phi_trial)
                if theta_trial <= (1.0 - 2.0 * ARMIJO_SIGMA * t) * theta:
                    accepted = True
                    break
            t *= 0.5
        if not accepted:
            # leave lam_trial / v consistent with x for the caller
            contact_fb_residual(mode, mu4, D, c, r, x, lam_trial, v, phi)
            return LOCAL_LINE_SEARCH, it
        for i in range(n):
            x[i] = x_trial[i]
            phi[i] = phi_trial[i]
        theta = theta_trial
    return LOCAL_MAX_ITERATIONS, max_iterations


@njit_kernel
def newton_scratch():
    """Scratch of :func:`solve_contact_newton`, allocated once per solve (never per contact).

    ``(r, x, x_trial, dx, phi, phi_trial)`` (4,) each, ``jac`` (4, 4), ``(v, lam_trial)`` (3,) each.
    """
    return (
        np.empty(4), np.empty(4), np.empty(4), np.empty(4), np.zeros(4), np.zeros(4),
        np.empty((4, 4)), np.empty(3), np.empty(3),
    )  # fmt: skip


@njit_kernel
def _block_mode(friction_set, mu4):
    # (mode, unknown count): 0 frictionless (lambda_n), 2 disk/ellipse (lambda_n, u_t, u_b, gamma), 1 box (lambda).
    frictionless = mu4[0] == 0.0 and mu4[1] == 0.0 and mu4[2] == 0.0 and mu4[3] == 0.0
    if frictionless:
        return 0, 1
    if friction_set == 2 or friction_set == 3:
        return 2, 4
    return 1, 3


@njit_kernel
def _block_velocity_scale(D, c, lam):
    """Velocity scale ``max(|c|_inf, |D lam + c|_inf)`` [m/s] of a block at the impulse ``lam`` (3,)."""
    scale = 0.0
    for i in range(3):
        vi = D[i, 0] * lam[0] + D[i, 1] * lam[1] + D[i, 2] * lam[2] + c[i]
        scale = max(scale, abs(c[i]), abs(vi))
    return scale


@njit_kernel
def _start_unknowns(attempt, friction_set, mode, mu4, D, c, lam, x, v):
    # Newton start of attempt 0 (warm impulse), 1 (sliding guess from lambda = 0), 2 (after 50 PROX projections).
    if attempt == 0:
        _unknowns_from_impulse(mode, mu4, D, c, lam, np.bool_(False), x, v)
    elif attempt == 1:
        lam[0] = 0.0
        lam[1] = 0.0
        lam[2] = 0.0
        _unknowns_from_impulse(mode, mu4, D, c, lam, np.bool_(True), x, v)
    else:
        _local_prox(friction_set, mu4, D, c, np.int64(50), lam)
        _unknowns_from_impulse(mode, mu4, D, c, lam, np.bool_(False), x, v)


@njit_kernel
def _converged_impulse(friction_set, mode, mu4, x, lam):
    # Impulse of a converged root x, with the round-off outside the set (a change below the tolerance) removed.
    _impulse_from_unknowns(mode, mu4[0], mu4[1], x, lam)
    lam[0] = max(lam[0], 0.0)
    if mode == 0:
        lam[1] = 0.0
        lam[2] = 0.0
    else:
        lam[1], lam[2] = project_friction(friction_set, mu4[0], mu4[1], mu4[2], mu4[3], lam[0], lam[1], lam[2])


@njit_kernel
def solve_contact_newton(friction_set, mu4, D, c, max_iterations, tolerance, scratch, lam, out_history):
    """Semismooth Newton on one contact block ``v = D lambda + c`` (module docstring formulation).

    Newton starts from the warm impulse; if it fails (iteration cap, singular Jacobian, failed line
    search) it restarts from the sliding guess ``lambda = 0, u = -v~/|v~|``, then from the end point
    of 50 PROX projections (close to the root, where Newton converges quadratically). If all three
    fail, the block keeps the PROX iterate after 500 more projections.

    Args:
        friction_set: :class:`FrictionSet` value (2 disk, 3 ellipse, else box). mu4: ``[+t, +b, -t, -b]``.
        D: 3x3 SPD Delassus block [1/kg]. c: constant velocity (3,) [m/s].
        max_iterations: Newton iteration cap per start. tolerance: stop when ``|Phi|_inf <= tolerance * s``
            with ``s`` the block's velocity scale ``max(|c|_inf, |D lambda_0 + c|_inf)`` [dimensionless].
        scratch: :func:`newton_scratch`.
        lam: start (warm) impulse on entry, solution on exit (3,) [N·s]; always feasible on exit.
        out_history: ``|Phi|_inf`` per iteration of the last start (length >= max_iterations + 1) [m/s].

    Returns:
        ``(status, iterations, starts)``: status LOCAL_OK or the last failure reason, Newton iterations
        over all starts, and the number of starts used (1 = the warm start converged).
    """
    r, x, x_trial, dx, phi, phi_trial, jac, v, lam_trial = scratch
    mode, n = _block_mode(friction_set, mu4)
    # velocity scale of the block: r-factors of the FB arguments (§3.3.5) and the stopping threshold
    scale = _block_velocity_scale(D, c, lam)
    threshold = tolerance * scale
    r[0] = D[0, 0]
    r[1] = D[1, 1]
    r[2] = D[2, 2]
    r[3] = max(scale, 1e-300)
    status = LOCAL_MAX_ITERATIONS
    total = 0
    starts = 0
    for attempt in range(3):
        starts = attempt + 1
        _start_unknowns(attempt, friction_set, mode, mu4, D, c, lam, x, v)
        status, count = _newton_iterations(
            mode, n, mu4, D, c, r, max_iterations, threshold,
            x, x_trial, dx, phi, phi_trial, jac, v, lam_trial, out_history,
        )  # fmt: skip
        total += count
        if status == LOCAL_OK:
            break
    if status == LOCAL_OK:
        _converged_impulse(friction_set, mode, mu4, x, lam)
    else:
        _local_prox(friction_set, mu4, D, c, np.int64(500), lam)
    return status, total, starts


@njit_kernel
def solve_contact_local(friction_set, mu4, D, c, lam0, max_iterations, tolerance, out_lam, out_history):
    """Convenience entry for one block: allocates the scratch and calls :func:`solve_contact_newton`."""
    for i in range(3):
        out_lam[i] = lam0[i]
    # int32 like the engine's contact_friction_set entries: one compiled solve_contact_newton for both
    return solve_contact_newton(np.int32(friction_set), mu4, D, c, max_iterations, tolerance, newton_scratch(),
                                out_lam, out_history)  # fmt: skip


@njit_kernel
def _newton_block(rows, k, friction_set, mu4, D, local_iterations, local_tolerance, scratch, c, lam, d_lambda,
                  history, impulse, dv, dw, merit):  # fmt: skip
    """One blocked Gauss–Seidel update of contact ``k`` by :func:`solve_contact_newton`.

    ``c = v - D_k lambda_k`` with the current velocity ``v`` of the accumulators (course §3.3); the accumulators
    take the impulse change. Returns ``(merit, status, iterations, starts)`` with the sweep merit updated [N·s].
    ``c``, ``lam``, ``d_lambda`` (3,) and ``history`` (local_iterations + 1,): scratch.
    """
    contact_body0, contact_body1, body_inv_mass, contact_frame, row_rc0, row_rc1, row_irc0, row_irc1, row_b = rows
    b0 = contact_body0[k]
    b1 = contact_body1[k]
    v = scratch[7]
    contact_velocity(k, b0, b1, contact_frame, row_rc0, row_rc1, row_b, dv, dw, v)
    for d in range(3):
        lam[d] = impulse[k, d]
    for d in range(3):
        c[d] = v[d] - (D[d, 0] * lam[0] + D[d, 1] * lam[1] + D[d, 2] * lam[2])
    status, count, starts = solve_contact_newton(
        friction_set, mu4, D, c, local_iterations, local_tolerance, scratch, lam, history
    )
    for d in range(3):
        d_lambda[d] = lam[d] - impulse[k, d]
        impulse[k, d] = lam[d]
        merit = max(merit, abs(d_lambda[d]))
    apply_contact_impulse(k, b0, b1, d_lambda, body_inv_mass, contact_frame, row_irc0, row_irc1, dv, dw)
    return merit, status, count, starts


@njit_kernel
def solve_newton_gs(
    rows,
    contact_count,
    contact_friction_set,
    contact_mu4,
    row_D,
    iterations,
    tolerance,
    local_iterations,
    local_tolerance,
    # outputs
    impulse,
    dv,
    dw,
    result,
    stats,
    joints,
    merit_history,
):
    """Blocked non-smooth Gauss–Seidel with an FB Newton solve per contact (course §3.3, E.1.5).

    Per contact ``k`` (symmetric sweeps, :func:`.kernels.sweep_index`): ``c = v - D_k lambda_k`` with the
    current velocity ``v`` of the accumulators, ``lambda_k <- solve_contact_newton(D_k, c)``, then the
    accumulators take the change. Stops when the sweep merit ``||lambda^{k+1} - lambda^k||_inf`` is at
    most ``tolerance * max|lambda|`` (as PGS/PROX). ``rows`` is the operator bundle of
    :func:`.rows.row_operator`, ``row_D`` (c, 3, 3) the Delassus blocks. ``result`` receives ``[sweeps, merit,
    local failures]``; ``stats`` (3,) receives ``[total local Newton iterations, largest local count, restarts]``.

    Joints (``joints``: the bundle of :mod:`.joint_sweep`, or None without joints): every sweep over the
    contacts is followed by one joint pass (:func:`.joint_sweep.joint_pass`) on the same accumulators; the merit
    and the largest impulse of the convergence test cover both.

    ``merit_history`` (iterations,) or (0,): when it has room, ``merit_history[s]`` receives the sum of the squared
    natural-map errors the impulses leave after sweep ``s`` (:mod:`.merit_history`).
    """
    scratch = newton_scratch()
    c = np.empty(3)
    lam = np.empty(3)
    d_lambda = np.empty(3)
    history = np.empty(local_iterations + 1)
    failures = 0
    restarts = 0
    total = 0
    largest = 0
    merit = 0.0
    sweeps = 0
    joint_count, use_global = 0, False
    if joints is not None:  # None: compiled without the joint code (see solve_pgs)
        joint_count = joints[0].shape[0]
        use_global = joint_count > 0 and uses_global_factor(joints)
    for it in range(iterations):
        sweeps = it + 1
        merit = 0.0
        for i in range(contact_count):
            k = sweep_index(i, it, contact_count)
            merit, status, count, starts = _newton_block(
                rows, k, contact_friction_set[k], contact_mu4[k], row_D[k], local_iterations, local_tolerance,
                scratch, c, lam, d_lambda, history, impulse, dv, dw, merit,
            )  # fmt: skip
            if status != LOCAL_OK:
                failures += 1
            restarts += starts - 1
            total += count
            largest = max(largest, count)
        if joints is not None and joint_count > 0:
            # typed ints, not literals: a literal argument compiles a specialization of its own
            joint_merit, joint_largest = joint_pass(
                joints, np.int64(0), joint_count, it, use_global, np.int64(-1), dv, dw
            )
            merit = max(merit, joint_merit)
        if it < merit_history.shape[0]:
            merit_history[it] = merit_squared(rows, contact_count, contact_mu4, impulse, dv, dw)
        if joints is not None and joint_count > 0:
            if merit <= tolerance * max(_max_abs(impulse, contact_count), joint_largest, 1e-300):
                break
        elif merit <= tolerance * max(_max_abs(impulse, contact_count), 1e-300):
            break
    store_result(result, sweeps, merit, failures)
    stats[0] = total
    stats[1] = largest
    stats[2] = restarts
