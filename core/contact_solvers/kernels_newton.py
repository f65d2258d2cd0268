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
from .rows import apply_block_impulse, row_velocity

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


W_MU = 0
"""Workspace of one contact block's local solve (a float64 array; every helper below takes it and scalars, so a
per-contact call costs one array's reference count, not a dozen): ``[+t, +b, -t, -b]`` coefficients from here."""
W_D = 4
"""... the 3x3 Delassus block, row-major (entry ``(i, j)`` at ``W_D + 3 i + j``) [1/kg]."""
W_C = 13
"""... the constant velocity ``c`` (3) [m/s]."""
W_R = 16
"""... the scale factors ``(r_n, r_t, r_b, r_f)`` (4)."""
W_X = 20
"""... the unknowns ``x`` (4)."""
W_XT = 24
"""... the trial unknowns (4)."""
W_DX = 28
"""... the Newton direction (4)."""
W_PHI = 32
"""... the residual at ``x`` (4)."""
W_PHIT = 36
"""... the residual at the trial point (4)."""
W_JAC = 40
"""... the generalized Jacobian, row-major 4x4 (entry ``(i, j)`` at ``W_JAC + 4 i + j``)."""
W_V = 56
"""... the velocity ``v = D lambda + c`` of the last residual (3) [m/s]."""
W_LT = 59
"""... the impulse of the last residual (3) [N·s]."""
W_LAM = 62
"""... the block's impulse: the start on entry to :func:`_solve_block`, the solution on exit (3) [N·s]."""
W_HISTORY = 65
"""... ``|Phi|_inf`` per Newton iteration of the last start, to the end of the workspace [m/s]."""


@njit_kernel
def local_workspace(max_iterations):
    """A workspace for blocks solved with up to ``max_iterations`` Newton iterations per start."""
    return np.zeros(W_HISTORY + max_iterations + 1)


@njit_kernel
def _solve_direction(w, n):
    """Solve ``jac dx = rhs`` (``rhs`` in ``W_DX``, the solution into ``W_XT``) for ``n <= 4`` by Gaussian
    elimination with partial pivoting, in place. Returns False (and leaves the solution undefined) when a pivot is
    below ``1e-14`` times the largest entry of ``jac`` (numerically singular)."""
    scale = 0.0
    for i in range(n):
        for j in range(n):
            scale = max(scale, abs(w[W_JAC + 4 * i + j]))
    if not scale > 0.0:
        return False
    for col in range(n):
        p = col
        for i in range(col + 1, n):
            if abs(w[W_JAC + 4 * i + col]) > abs(w[W_JAC + 4 * p + col]):
                p = i
        if not abs(w[W_JAC + 4 * p + col]) > 1e-14 * scale:
            return False
        if p != col:
            for j in range(n):
                w[W_JAC + 4 * col + j], w[W_JAC + 4 * p + j] = w[W_JAC + 4 * p + j], w[W_JAC + 4 * col + j]
            w[W_DX + col], w[W_DX + p] = w[W_DX + p], w[W_DX + col]
        for i in range(col + 1, n):
            f = w[W_JAC + 4 * i + col] / w[W_JAC + 4 * col + col]
            if f != 0.0:
                for j in range(col, n):
                    w[W_JAC + 4 * i + j] -= f * w[W_JAC + 4 * col + j]
                w[W_DX + i] -= f * w[W_DX + col]
    for i in range(n - 1, -1, -1):
        t = w[W_DX + i]
        for j in range(i + 1, n):
            t -= w[W_JAC + 4 * i + j] * w[W_XT + j]
        w[W_XT + i] = t / w[W_JAC + 4 * i + i]
    return True


@njit_kernel
def _impulse_from_unknowns(w, mode, x_at, lam_at):
    """The impulse of the unknowns ``w[x_at:]`` into ``w[lam_at:]``. ``mode`` 0: ``x = (lambda_n)``; 1 (box):
    ``x = lambda``; 2 (disk/ellipse): ``x = (lambda_n, u_t, u_b, gamma)``."""
    w[lam_at] = w[x_at]
    if mode == 0:
        w[lam_at + 1] = 0.0
        w[lam_at + 2] = 0.0
    elif mode == 1:
        w[lam_at + 1] = w[x_at + 1]
        w[lam_at + 2] = w[x_at + 2]
    else:
        w[lam_at + 1] = w[W_MU] * w[x_at] * w[x_at + 1]
        w[lam_at + 2] = w[W_MU + 1] * w[x_at] * w[x_at + 2]


@njit_kernel
def _block_velocity(w, i, lam_at):
    """Row ``i`` of ``v = D lambda + c`` with ``lambda = w[lam_at:lam_at + 3]`` [m/s]."""
    return (w[W_D + 3 * i] * w[lam_at] + w[W_D + 3 * i + 1] * w[lam_at + 1] + w[W_D + 3 * i + 2] * w[lam_at + 2]
            + w[W_C + i])  # fmt: skip


@njit_kernel
def _residual(w, mode, x_at, phi_at):
    """FB residual ``Phi(x)`` of the block (module docstring) at ``x = w[x_at:]`` into ``w[phi_at:]`` [m/s]; its
    impulse into ``W_LT`` and velocity into ``W_V``. Returns ``theta = |Phi|^2 / 2``."""
    mu_t, mu_b = w[W_MU], w[W_MU + 1]
    _impulse_from_unknowns(w, mode, x_at, np.int64(W_LT))
    for i in range(3):
        w[W_V + i] = _block_velocity(w, i, np.int64(W_LT))
    w[phi_at] = fischer_burmeister(w[W_V], w[W_R] * w[W_LT])
    theta = 0.5 * w[phi_at] * w[phi_at]
    if mode == 1:
        for d in (1, 2):
            lo = -w[W_MU + d + 1] * w[W_LT]
            hi = w[W_MU + d - 1] * w[W_LT]
            inner = fischer_burmeister(w[W_R + d] * (hi - w[W_LT + d]), -w[W_V + d])
            w[phi_at + d] = fischer_burmeister(w[W_R + d] * (w[W_LT + d] - lo), -inner)
            theta += 0.5 * w[phi_at + d] * w[phi_at + d]
    elif mode == 2:
        gamma = w[x_at + 3]
        w[phi_at + 1] = mu_t * w[W_V + 1] + gamma * w[x_at + 1]
        w[phi_at + 2] = mu_b * w[W_V + 2] + gamma * w[x_at + 2]
        w[phi_at + 3] = fischer_burmeister(gamma, w[W_R + 3] * 0.5 * (1.0 - w[x_at + 1] * w[x_at + 1]
                                                                          - w[x_at + 2] * w[x_at + 2]))  # fmt: skip
        for i in (1, 2, 3):
            theta += 0.5 * w[phi_at + i] * w[phi_at + i]
    return theta


@njit_kernel
def _jacobian(w, mode):
    """An element of the generalized Jacobian ``dPhi/dx`` at ``x = w[W_X:]`` into ``W_JAC`` (eq. 185–191,
    316–319); ``W_LT`` and ``W_V`` must hold the values of :func:`_residual` at the same ``x``."""
    mu_t, mu_b = w[W_MU], w[W_MU + 1]
    for i in range(16):
        w[W_JAC + i] = 0.0
    a0, b0 = fischer_burmeister_gradient(w[W_V], w[W_R] * w[W_LT])
    if mode == 0:
        w[W_JAC] = a0 * w[W_D] + b0 * w[W_R]
        return
    if mode == 1:  # x = lambda, dv/dx = D
        for j in range(3):
            w[W_JAC + j] = a0 * w[W_D + j]
        w[W_JAC] += b0 * w[W_R]
        for d in (1, 2):
            mlo = w[W_MU + d + 1]
            mhi = w[W_MU + d - 1]
            a2, b2 = w[W_R + d] * (mhi * w[W_LT] - w[W_LT + d]), -w[W_V + d]
            p = fischer_burmeister(a2, b2)
            al2, be2 = fischer_burmeister_gradient(a2, b2)
            al1, be1 = fischer_burmeister_gradient(w[W_R + d] * (w[W_LT + d] + mlo * w[W_LT]), -p)
            for j in range(3):
                # d(a1) = r (e_d + mu_- e_n); d(a2) = r (mu_+ e_n - e_d); d(b2) = -D[d, :]
                da1 = 0.0
                da2 = 0.0
                if j == d:
                    da1 += w[W_R + d]
                    da2 -= w[W_R + d]
                if j == 0:
                    da1 += w[W_R + d] * mlo
                    da2 += w[W_R + d] * mhi
                dp = al2 * da2 - be2 * w[W_D + 3 * d + j]
                w[W_JAC + 4 * d + j] = al1 * da1 - be1 * dp
        return
    _jacobian_disk(w, mu_t, mu_b, a0, b0)


@njit_kernel
def _jacobian_disk(w, mu_t, mu_b, a0, b0):
    """:func:`_jacobian` of a disk or ellipse block: ``x = (lambda_n, u_t, u_b, gamma)``, ``dlambda/dx = L``
    (3x4), ``dv/dx = D L``."""
    ut, ub, gamma = w[W_X + 1], w[W_X + 2], w[W_X + 3]
    ln = w[W_X]
    for i in range(3):
        g0 = w[W_D + 3 * i] + w[W_D + 3 * i + 1] * mu_t * ut + w[W_D + 3 * i + 2] * mu_b * ub
        g1 = w[W_D + 3 * i + 1] * mu_t * ln
        g2 = w[W_D + 3 * i + 2] * mu_b * ln
        if i == 0:
            w[W_JAC] = a0 * g0 + b0 * w[W_R]
            w[W_JAC + 1] = a0 * g1
            w[W_JAC + 2] = a0 * g2
        else:
            s = mu_t if i == 1 else mu_b
            w[W_JAC + 4 * i] = s * g0
            w[W_JAC + 4 * i + 1] = s * g1
            w[W_JAC + 4 * i + 2] = s * g2
    # Phi_t = v~_t + gamma u_t, Phi_b = v~_b + gamma u_b
    w[W_JAC + 5] += gamma
    w[W_JAC + 7] = ut
    w[W_JAC + 10] += gamma
    w[W_JAC + 11] = ub
    # Phi_gamma = psi(gamma, r_f (1 - |u|^2) / 2): d/du = beta r_f (-u)
    a3, b3 = fischer_burmeister_gradient(gamma, w[W_R + 3] * 0.5 * (1.0 - ut * ut - ub * ub))
    w[W_JAC + 13] = -b3 * w[W_R + 3] * ut
    w[W_JAC + 14] = -b3 * w[W_R + 3] * ub
    w[W_JAC + 15] = a3


def _workspace_of(mu4, D, c, r=None, x=None, size=W_HISTORY + 1):
    """A workspace filled from separate arrays (the public single-block entries below; Python, tests only)."""
    w = np.zeros(size)
    w[W_MU : W_MU + 4] = mu4
    w[W_D : W_D + 9] = np.asarray(D, dtype=np.float64).reshape(9)
    w[W_C : W_C + 3] = c
    if r is not None:
        w[W_R : W_R + 4] = r
    if x is not None:
        w[W_X : W_X + len(x)] = x
    return w


def contact_fb_residual(mode, mu4, D, c, r, x, lam, v, out_phi):
    """FB residual ``Phi(x)`` of one contact block (see the module docstring), in [m/s].

    Args:
        mode: 0 normal only (frictionless), 1 box, 2 disk/ellipse in scaled variables.
        mu4: ``[+t, +b, -t, -b]`` coefficients. D: 3x3 Delassus block. c: constant velocity (3,).
        r: scale factors ``(r_n, r_t, r_b, r_f)`` (4,). x: unknowns (1, 3 or 4 used).
        lam, v: (3,) receiving the impulse and ``v = D lambda + c``.
        out_phi: residual (4,), the first 1 / 3 / 4 entries used.
    Returns:
        ``theta = |Phi|^2 / 2``.
    """
    w = _workspace_of(mu4, D, c, r, x)
    theta = _residual(w, int(mode), W_X, W_PHI)
    lam[:3] = w[W_LT : W_LT + 3]
    v[:3] = w[W_V : W_V + 3]
    out_phi[:4] = w[W_PHI : W_PHI + 4]
    return theta


def contact_fb_jacobian(mode, mu4, D, c, r, x, lam, v, out_jac):
    """An element of the generalized Jacobian ``dPhi/dx`` of :func:`contact_fb_residual` (eq. 185–191, 316–319)
    into ``out_jac`` (4, 4). ``lam`` and ``v`` must hold the values of the residual evaluation at the same ``x``."""
    w = _workspace_of(mu4, D, c, r, x)
    w[W_LT : W_LT + 3] = lam[:3]
    w[W_V : W_V + 3] = v[:3]
    _jacobian(w, int(mode))
    out_jac[:4, :4] = w[W_JAC : W_JAC + 16].reshape(4, 4)


@njit_kernel
def _local_prox(w, friction_set, max_iterations):
    """Fallback: PROX on the block's impulse ``W_LAM`` (eq. 201, 214) with ``r = 1 / (Gershgorin bound of
    lambda_max(D))``, a contraction for the normal row and the convex friction set."""
    g = 0.0
    for i in range(3):
        g = max(g, abs(w[W_D + 3 * i]) + abs(w[W_D + 3 * i + 1]) + abs(w[W_D + 3 * i + 2]))
    r = 1.0 / g
    for _ in range(max_iterations):
        v0 = _block_velocity(w, np.int64(0), np.int64(W_LAM))  # typed ints: a literal compiles a specialization
        v1 = _block_velocity(w, np.int64(1), np.int64(W_LAM))
        v2 = _block_velocity(w, np.int64(2), np.int64(W_LAM))
        ln = max(w[W_LAM] - r * v0, 0.0)
        lt, lb = project_friction(friction_set, w[W_MU], w[W_MU + 1], w[W_MU + 2], w[W_MU + 3], ln,
                                  w[W_LAM + 1] - r * v1, w[W_LAM + 2] - r * v2)  # fmt: skip
        change = max(abs(ln - w[W_LAM]), abs(lt - w[W_LAM + 1]), abs(lb - w[W_LAM + 2]))
        w[W_LAM], w[W_LAM + 1], w[W_LAM + 2] = ln, lt, lb
        if change <= 1e-15 * max(abs(ln), abs(lt), abs(lb), 1e-300):
            break


@njit_kernel
def _unknowns_from_impulse(w, mode, slide):
    """Starting unknowns ``W_X`` from the impulse ``W_LAM`` (its velocity into ``W_V``). For the disk/ellipse:
    ``u = lambda_t / (mu lambda_n)`` (clipped to the unit disk) and the slack ``gamma = |v~|``, the scaled sliding
    speed (eq. 197). With ``slide`` (or no friction direction yet) ``u`` starts at maximal dissipation
    ``-v~ / |v~|``."""
    mu_t, mu_b = w[W_MU], w[W_MU + 1]
    for i in range(3):
        w[W_V + i] = _block_velocity(w, i, np.int64(W_LAM))
    w[W_X] = max(w[W_LAM], 0.0)
    w[W_X + 1] = w[W_LAM + 1]
    w[W_X + 2] = w[W_LAM + 2]
    w[W_X + 3] = 0.0
    if mode != 2:
        return
    ut = w[W_LAM + 1] / (mu_t * w[W_X]) if w[W_X] > 0.0 and mu_t > 0.0 else 0.0
    ub = w[W_LAM + 2] / (mu_b * w[W_X]) if w[W_X] > 0.0 and mu_b > 0.0 else 0.0
    norm = math.sqrt(ut * ut + ub * ub)
    if norm > 1.0:
        ut /= norm
        ub /= norm
    gamma = math.sqrt((mu_t * w[W_V + 1]) ** 2 + (mu_b * w[W_V + 2]) ** 2)
    if (slide or norm == 0.0) and gamma > 0.0:
        ut = -mu_t * w[W_V + 1] / gamma
        ub = -mu_b * w[W_V + 2] / gamma
    w[W_X + 1] = ut
    w[W_X + 2] = ub
    w[W_X + 3] = gamma


@njit_kernel
def _line_search(w, mode, n, theta):
    """Armijo backtracking on ``theta = |Phi|^2 / 2`` along ``W_DX`` from ``W_X`` (``grad theta . dx = -2
    theta``): the trial point projected onto ``lambda_n, gamma >= 0`` first, the plain one when that gives no
    sufficient decrease. Returns ``(accepted, theta at the trial point)``; the trial in ``W_XT``, ``W_PHIT``."""
    t = 1.0
    while t >= MIN_STEP:
        for projected in (True, False):
            for i in range(n):
                w[W_XT + i] = w[W_X + i] + t * w[W_DX + i]
            if projected:
                w[W_XT] = max(w[W_XT], 0.0)
                if mode == 2:
                    w[W_XT + 3] = max(w[W_XT + 3], 0.0)
            theta_trial = _residual(w, mode, np.int64(W_XT), np.int64(W_PHIT))
            if theta_trial <= (1.0 - 2.0 * ARMIJO_SIGMA * t) * theta:
                return True, theta_trial
        t *= 0.5
    return False, theta


@njit_kernel
def _newton_iterations(w, mode, n, max_iterations, threshold):
    """Damped semismooth Newton from ``W_X``; returns ``(status, iterations)``. The trial points are projected
    onto ``lambda_n >= 0`` and ``gamma >= 0``, which hold at every root: for ``gamma < 0`` the block ``mu^2
    lambda_n D_tt + gamma I`` of the Jacobian can be singular and ``theta`` has non-root stationary points."""
    theta = _residual(w, mode, np.int64(W_X), np.int64(W_PHI))
    for it in range(max_iterations + 1):
        norm_inf = 0.0
        for i in range(n):
            norm_inf = max(norm_inf, abs(w[W_PHI + i]))
        w[W_HISTORY + it] = norm_inf
        if norm_inf <= threshold:
            return LOCAL_OK, it
        if it == max_iterations:
            return LOCAL_MAX_ITERATIONS, it
        _jacobian(w, mode)
        for i in range(n):
            w[W_DX + i] = -w[W_PHI + i]
        if not _solve_direction(w, n):
            return LOCAL_SINGULAR, it
        for i in range(n):
            w[W_DX + i] = w[W_XT + i]
        accepted, theta_trial = _line_search(w, mode, n, theta)
        if not accepted:
            _residual(w, mode, np.int64(W_X), np.int64(W_PHI))  # the impulse and velocity of x, for the caller
            return LOCAL_LINE_SEARCH, it
        for i in range(n):
            w[W_X + i] = w[W_XT + i]
            w[W_PHI + i] = w[W_PHIT + i]
        theta = theta_trial
    return LOCAL_MAX_ITERATIONS, max_iterations


@njit_kernel
def _block_mode(w, friction_set):
    """``(mode, unknown count)``: 0 frictionless (lambda_n), 2 disk/ellipse (lambda_n, u_t, u_b, gamma), 1 box
    (lambda)."""
    if w[W_MU] == 0.0 and w[W_MU + 1] == 0.0 and w[W_MU + 2] == 0.0 and w[W_MU + 3] == 0.0:
        return 0, 1
    if friction_set == 2 or friction_set == 3:
        return 2, 4
    return 1, 3


@njit_kernel
def _block_velocity_scale(w):
    """Velocity scale ``max(|c|_inf, |D lam + c|_inf)`` [m/s] of the block at its impulse ``W_LAM``."""
    scale = 0.0
    for i in range(3):
        scale = max(scale, abs(w[W_C + i]), abs(_block_velocity(w, i, np.int64(W_LAM))))
    return scale


@njit_kernel
def _start_unknowns(w, attempt, friction_set, mode):
    """Newton's start for attempt 0 (the warm impulse), 1 (the sliding guess from ``lambda = 0``), 2 (after 50 PROX
    projections)."""
    if attempt == 0:
        _unknowns_from_impulse(w, mode, np.bool_(False))
    elif attempt == 1:
        w[W_LAM] = 0.0
        w[W_LAM + 1] = 0.0
        w[W_LAM + 2] = 0.0
        _unknowns_from_impulse(w, mode, np.bool_(True))
    else:
        _local_prox(w, friction_set, np.int64(50))
        _unknowns_from_impulse(w, mode, np.bool_(False))


@njit_kernel
def _converged_impulse(w, friction_set, mode):
    """The impulse ``W_LAM`` of a converged root ``W_X``, with the round-off outside the set (a change below the
    tolerance) removed."""
    _impulse_from_unknowns(w, mode, np.int64(W_X), np.int64(W_LAM))
    w[W_LAM] = max(w[W_LAM], 0.0)
    if mode == 0:
        w[W_LAM + 1] = 0.0
        w[W_LAM + 2] = 0.0
    else:
        w[W_LAM + 1], w[W_LAM + 2] = project_friction(friction_set, w[W_MU], w[W_MU + 1], w[W_MU + 2], w[W_MU + 3],
                                                      w[W_LAM], w[W_LAM + 1], w[W_LAM + 2])  # fmt: skip


@njit_kernel
def _solve_block(w, friction_set, max_iterations, tolerance):
    """Semismooth Newton on the block ``v = D lambda + c`` held in the workspace ``w`` (``W_MU``, ``W_D``,
    ``W_C``; the warm impulse in ``W_LAM`` on entry, the solution on exit, always feasible). Newton starts from the
    warm impulse; if it fails (iteration cap, singular Jacobian, failed line search) it restarts from the sliding
    guess ``lambda = 0, u = -v~/|v~|``, then from the end point of 50 PROX projections (close to the root, where
    Newton converges quadratically). If all three fail, the block keeps the PROX iterate after 500 more
    projections. Stops when ``|Phi|_inf <= tolerance * s``, ``s`` the block's velocity scale ``max(|c|_inf,
    |D lambda_0 + c|_inf)``. Returns ``(status, iterations over all starts, starts used)``."""
    mode, n = _block_mode(w, friction_set)
    scale = _block_velocity_scale(w)  # the r-factors of the FB arguments (§3.3.5) and the stopping threshold
    threshold = tolerance * scale
    w[W_R] = w[W_D]
    w[W_R + 1] = w[W_D + 4]
    w[W_R + 2] = w[W_D + 8]
    w[W_R + 3] = max(scale, 1e-300)
    status = LOCAL_MAX_ITERATIONS
    total = 0
    starts = 0
    for attempt in range(3):
        starts = attempt + 1
        _start_unknowns(w, attempt, friction_set, mode)
        status, count = _newton_iterations(w, mode, n, max_iterations, threshold)
        total += count
        if status == LOCAL_OK:
            break
    if status == LOCAL_OK:
        _converged_impulse(w, friction_set, mode)
    else:
        _local_prox(w, friction_set, np.int64(500))
    return status, total, starts


def solve_contact_local(friction_set, mu4, D, c, lam0, max_iterations, tolerance, out_lam, out_history):
    """One contact block ``v = D lambda + c`` solved from ``lam0`` (:func:`_solve_block`, module docstring).

    Args:
        friction_set: :class:`FrictionSet` value (2 disk, 3 ellipse, else box). mu4: ``[+t, +b, -t, -b]``.
        D: 3x3 SPD Delassus block [1/kg]. c: constant velocity (3,) [m/s]. lam0: the start impulse (3,) [N·s].
        max_iterations: Newton iteration cap per start. tolerance: relative to the block's velocity scale.
        out_lam: the solution (3,) [N·s]. out_history: ``|Phi|_inf`` per iteration of the last start (length >=
        max_iterations + 1) [m/s].

    Returns:
        ``(status, iterations, starts)``: LOCAL_OK or the last failure reason, Newton iterations over all starts,
        and the number of starts used (1 = the warm start converged).
    """
    w = _workspace_of(mu4, D, c, size=W_HISTORY + int(max_iterations) + 1)
    w[W_LAM : W_LAM + 3] = lam0[:3]
    # int32 like the engine's contact_friction_set entries: one compiled _solve_block for both
    status, count, starts = _solve_block(w, np.int32(friction_set), np.int64(max_iterations), float(tolerance))
    out_lam[:3] = w[W_LAM : W_LAM + 3]
    out_history[: int(max_iterations) + 1] = w[W_HISTORY:]
    return status, count, starts


@njit_kernel
def _newton_sweep(rows, contact_count, it, contact_friction_set, contact_mu4, row_D, local_iterations, local_tolerance,
                  w, impulse, dv, dw):  # fmt: skip
    """Sweep ``it`` of :func:`solve_newton_gs` over the contacts (order :func:`.kernels.sweep_index`). Per contact
    ``k``: ``c = v - D_k lambda_k`` with the current velocity ``v`` of the accumulators, the block solved by
    :func:`_solve_block` in the workspace ``w``, the accumulators take the change. The block is written out in the
    loop and the local solve works in one array: each array handed to a call per contact costs an atomic
    reference count up and down. Returns ``(merit [N·s], failures, restarts, Newton iterations, most in a
    block)``."""
    body0, body1, inv_mass, frame, rc0, rc1, irc0, irc1, row_b = rows
    merit = 0.0
    failures = restarts = total = largest = 0
    for i in range(contact_count):
        k = sweep_index(i, it, contact_count)
        b0 = body0[k]
        b1 = body1[k]
        for a in range(4):
            w[W_MU + a] = contact_mu4[k, a]
        for a in range(3):
            for b in range(3):
                w[W_D + 3 * a + b] = row_D[k, a, b]
            w[W_LAM + a] = impulse[k, a]
        for d in range(3):
            v = row_velocity(k, np.int64(d), b0, b1, frame, rc0, rc1, row_b, dv, dw)
            w[W_C + d] = v - (row_D[k, d, 0] * w[W_LAM] + row_D[k, d, 1] * w[W_LAM + 1] + row_D[k, d, 2] * w[W_LAM + 2])
        status, count, starts = _solve_block(w, contact_friction_set[k], local_iterations, local_tolerance)
        d0 = w[W_LAM] - impulse[k, 0]
        d1 = w[W_LAM + 1] - impulse[k, 1]
        d2 = w[W_LAM + 2] - impulse[k, 2]
        impulse[k, 0] = w[W_LAM]
        impulse[k, 1] = w[W_LAM + 1]
        impulse[k, 2] = w[W_LAM + 2]
        merit = max(merit, abs(d0), abs(d1), abs(d2))
        apply_block_impulse(k, b0, b1, d0, d1, d2, inv_mass, frame, irc0, irc1, dv, dw)
        if status != LOCAL_OK:
            failures += 1
        restarts += starts - 1
        total += count
        largest = max(largest, count)
    return merit, failures, restarts, total, largest


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
    current velocity ``v`` of the accumulators, ``lambda_k <- _solve_block(D_k, c)``, then the
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
    w = local_workspace(local_iterations)
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
        merit, sweep_failures, sweep_restarts, sweep_total, sweep_largest = _newton_sweep(
            rows, contact_count, it, contact_friction_set, contact_mu4, row_D, local_iterations, local_tolerance, w,
            impulse, dv, dw,
        )  # fmt: skip
        failures += sweep_failures
        restarts += sweep_restarts
        total += sweep_total
        largest = max(largest, sweep_largest)
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
