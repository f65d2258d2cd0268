"""Global non-smooth Newton methods on dense contact problems (course §3.3), each with an Armijo line search on its
merit ``½‖Φ‖²``: the min-map reformulation of the box-friction problem ``u = W r + q``
(:func:`solve_min_map_newton`), and the Fischer–Burmeister reformulation of the frictionless LCP
(:func:`solve_fischer_burmeister_newton`).

Each row's residual is ``Φ_i = r_i − mid(lo_i, r_i − u_i, hi_i)``, zero exactly at a solution of the box-friction
BLCP: a normal row ``min(r_n, u_n)``; a tangent row's bounds ``∓μ r_n`` follow the contact's normal impulse, so its
generalized Jacobian row is ``W``'s row where the tangent is inside its box and ``e_t ± μ e_n`` where it sits at a
bound. Newton converges in a few steps once the active rows are found (quadratically on a regular solution); the
line search keeps ``½‖Φ‖²`` decreasing on the way. Plain NumPy (dense solves), for small problems and study.
"""

from __future__ import annotations

import numpy as np

ARMIJO = 1e-4
"""Sufficient decrease of the line search: ``f(x + t Δ) <= (1 − 2 ARMIJO t) f(x)``."""
BACKTRACK = 0.5
"""Step reduction per rejected trial."""
SMALLEST_STEP = 1e-10
"""The line search gives up below this step (a stalled Newton direction)."""


def min_map_residual(W, q, mu, r) -> tuple[np.ndarray, np.ndarray]:
    """``(Φ (3m,), branch (3m,))``: the min-map residual and each row's branch (0 inside, 1 at the lower bound,
    2 at the upper bound; a normal row: 1 where ``min`` takes ``r_n``)."""
    u = W @ r + q
    z = r - u
    normal = np.repeat(np.maximum(r[0::3], 0.0), 3)
    bound = np.repeat(mu, 3) * normal
    lo, hi = -bound, bound
    lo[0::3], hi[0::3] = 0.0, np.inf
    branch = np.where(z <= lo, 1, np.where(z >= hi, 2, 0))
    return r - np.clip(z, lo, hi), branch


def _jacobian(W, mu, branch) -> np.ndarray:
    """A generalized Jacobian of :func:`min_map_residual` for the rows' branches."""
    n = W.shape[0]
    J = W.copy()
    for i in np.flatnonzero(branch != 0):
        J[i] = 0.0
        J[i, i] = 1.0
        if i % 3:  # a tangent at its bound ±μ r_n
            J[i, i - i % 3] = mu[i // 3] * (1.0 if branch[i] == 1 else -1.0)
    return J[:n]


def _damped_newton(residual, jacobian, x, iterations: int, target: float):
    """Newton's method with an Armijo backtracking line search on ``½‖Φ‖²``: ``residual(x) -> (Φ, state)``,
    ``jacobian(x, state)`` a generalized Jacobian at ``x``. Returns ``(x, steps, solved)`` with ``solved`` once
    ``‖Φ‖ <= target``; a line search that falls below :data:`SMALLEST_STEP` stops the method unsolved."""
    phi, state = residual(x)
    for step in range(1, iterations + 1):
        f = 0.5 * float(phi @ phi)
        if np.sqrt(2.0 * f) <= target:
            return x, step - 1, True
        delta = np.linalg.lstsq(jacobian(x, state), -phi, rcond=None)[0]
        t = 1.0
        while True:
            trial = x + t * delta
            trial_phi, trial_state = residual(trial)
            if 0.5 * float(trial_phi @ trial_phi) <= (1.0 - 2.0 * ARMIJO * t) * f:
                break
            t *= BACKTRACK
            if t < SMALLEST_STEP:
                return x, step, False
        x, phi, state = trial, trial_phi, trial_state
    return x, iterations, bool(np.linalg.norm(phi) <= target)


def solve_min_map_newton(W, q, mu, iterations: int = 100, tolerance: float = 1e-12):
    """``(r, steps, solved)``: the box-friction BLCP of ``u = W r + q`` by Newton on the min-map, from ``r = 0``;
    ``solved`` once ``‖Φ‖ <= tolerance (1 + ‖q‖)``."""
    target = tolerance * (1.0 + float(np.linalg.norm(q)))
    return _damped_newton(
        lambda r: min_map_residual(W, q, mu, r), lambda r, branch: _jacobian(W, mu, branch), np.zeros(q.shape[0]),
        iterations, target,
    )  # fmt: skip


def fischer_burmeister(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``φ(a, b) = a + b − √(a² + b²)``, zero exactly where ``a >= 0, b >= 0, a b = 0`` (elementwise)."""
    return a + b - np.hypot(a, b)


def solve_fischer_burmeister_newton(A, b, iterations: int = 100, tolerance: float = 1e-12):
    """``(x, steps, solved)``: the LCP ``0 <= x ⊥ A x + b >= 0`` by Newton on ``Φ(x) = φ(x, A x + b)`` (course
    §3.3.2) with an Armijo line search on ``½‖Φ‖²``, from ``x = 0``; the generalized Jacobian is
    ``diag(1 − x/ρ) + diag(1 − y/ρ) A`` with ``ρ = √(x² + y²)``, and ``1 − 1/√2`` on both sides where ``ρ = 0``."""
    target = tolerance * (1.0 + float(np.linalg.norm(b)))

    def residual(x):
        y = A @ x + b
        return fischer_burmeister(x, y), y

    def jacobian(x, y):
        rho = np.hypot(x, y)
        safe = np.where(rho > 0.0, rho, 1.0)
        da = np.where(rho > 0.0, 1.0 - x / safe, 1.0 - np.sqrt(0.5))
        db = np.where(rho > 0.0, 1.0 - y / safe, 1.0 - np.sqrt(0.5))
        return np.diag(da) + db[:, None] * A

    return _damped_newton(residual, jacobian, np.zeros(b.shape[0]), iterations, target)
