"""A global non-smooth Newton method on a dense box-friction problem ``u = W r + q`` (course §3.3): the min-map
reformulation solved for all rows at once, with an Armijo line search on its merit ``½‖Φ‖²``.

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


def solve_min_map_newton(W, q, mu, iterations: int = 100, tolerance: float = 1e-12):
    """``(r, steps, solved)``: the box-friction BLCP of ``u = W r + q`` by Newton on the min-map, from ``r = 0``;
    ``solved`` once ``‖Φ‖ <= tolerance (1 + ‖q‖)``."""
    r = np.zeros(q.shape[0])
    phi, branch = min_map_residual(W, q, mu, r)
    target = tolerance * (1.0 + float(np.linalg.norm(q)))
    for step in range(1, iterations + 1):
        f = 0.5 * float(phi @ phi)
        if np.sqrt(2.0 * f) <= target:
            return r, step - 1, True
        delta = np.linalg.lstsq(_jacobian(W, mu, branch), -phi, rcond=None)[0]
        t = 1.0
        while True:
            trial = r + t * delta
            trial_phi, trial_branch = min_map_residual(W, q, mu, trial)
            if 0.5 * float(trial_phi @ trial_phi) <= (1.0 - 2.0 * ARMIJO * t) * f:
                break
            t *= BACKTRACK
            if t < SMALLEST_STEP:
                return r, step, False
        r, phi, branch = trial, trial_phi, trial_branch
    return r, iterations, bool(np.linalg.norm(phi) <= target)
