"""Global non-smooth Newton methods on dense contact problems (course §3.3), each with an Armijo line search on its
merit ``½‖Φ‖²``: the min-map reformulation of the box-friction problem ``u = W r + q``
(:func:`solve_min_map_newton`), the Fischer–Burmeister reformulation of the frictionless LCP
(:func:`solve_fischer_burmeister_newton`) and of the Coulomb cone (:func:`solve_fischer_burmeister_cone_newton`),
and PROX's own fixed-point equation (:func:`solve_prox_newton`).

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


def min_map_residual(W, q, mu, r, scale=None) -> tuple[np.ndarray, np.ndarray]:
    """``(Φ (3m,), branch (3m,))``: the min-map residual ``Φ_i = r_i − mid(lo_i, r_i − ρ_i u_i, hi_i)`` and each row's
    branch (0 inside, 1 at the lower bound, 2 at the upper bound; a normal row: 1 where ``min`` takes ``r_n``).
    ``scale`` (3m,): the r-factors ``ρ`` (course §3.3.5: ``ψ(a, ρ b)`` has the roots of ``ψ(a, b)`` for any
    ``ρ > 0``); None is 1."""
    u = W @ r + q
    z = r - (u if scale is None else scale * u)
    normal = np.repeat(np.maximum(r[0::3], 0.0), 3)
    bound = np.repeat(mu, 3) * normal
    lo, hi = -bound, bound
    lo[0::3], hi[0::3] = 0.0, np.inf
    branch = np.where(z <= lo, 1, np.where(z >= hi, 2, 0))
    return r - np.clip(z, lo, hi), branch


def _jacobian(W, mu, branch, scale=None) -> np.ndarray:
    """A generalized Jacobian of :func:`min_map_residual` for the rows' branches (its rows inside: ``ρ_i W_i``)."""
    n = W.shape[0]
    J = W.copy() if scale is None else scale[:, None] * W
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


def solve_min_map_newton(W, q, mu, iterations: int = 100, tolerance: float = 1e-12, *, precondition: bool = True,
                         start=None):  # fmt: skip
    """``(r, steps, solved)``: the box-friction BLCP of ``u = W r + q`` by Newton on the min-map, from ``start``
    (default ``r = 0``); ``solved`` once ``‖Φ‖ <= tolerance (1 + ‖q‖)``.

    ``precondition``: scale each contact's velocities by ``ρ = 1 / W_nn`` inside the min-map (the course's r-scaling,
    §3.3.5), so both arguments carry impulses: where the two branches of a row's ``min`` then run parallel (the
    course's Figure 23, ``c(λ) = λ/4 − 1/8``) the residual is a straight line and one step solves it from any
    start. False takes ``ρ = 1``, the min-map as written."""
    m = mu.shape[0]
    scale = np.repeat(_scales(W, m), 3)[: q.shape[0]] if precondition else None
    target = tolerance * (1.0 + float(np.linalg.norm(q)))
    x0 = np.zeros(q.shape[0]) if start is None else np.array(start, np.float64)
    return _damped_newton(
        lambda r: min_map_residual(W, q, mu, r, scale), lambda r, branch: _jacobian(W, mu, branch, scale), x0,
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


def _scales(W, m: int) -> np.ndarray:
    """Per contact ``1 / W_nn`` (m,) [N·s/m]: turns velocities into impulses, so both
    arguments of a complementarity function carry one unit (a contact without mass gets the largest scale)."""
    diag = np.diag(W)[0::3][:m]
    floor = 1e-12 * max(float(diag.max()), 1e-300) if diag.size else 1.0
    return 1.0 / np.maximum(diag, floor)


def _arrow(a: np.ndarray) -> np.ndarray:
    """Jordan product matrices ``L_a`` (m, 3, 3) of the second-order cone, ``L_a b = a ∘ b`` with
    ``a ∘ b = (aᵀb, a_0 b_T + b_0 a_T)``."""
    L = np.zeros((a.shape[0], 3, 3))
    L[:, 0, :] = a
    L[:, :, 0] = a
    L[:, 1, 1] = L[:, 2, 2] = a[:, 0]
    return L


def _soc_sqrt(w: np.ndarray) -> np.ndarray:
    """The Jordan square root (m, 3) of ``w`` (m, 3) in the cone ``{‖w_T‖ <= w_0}``, by its spectral decomposition
    ``w = λ₁ c₁ + λ₂ c₂``, ``λ = w_0 ∓ ‖w_T‖``, ``c = ½(1, ∓ w_T/‖w_T‖)``."""
    norm = np.linalg.norm(w[:, 1:], axis=1)
    direction = np.where(norm[:, None] > 0.0, w[:, 1:] / np.where(norm > 0.0, norm, 1.0)[:, None], [1.0, 0.0])
    s1 = np.sqrt(np.maximum(w[:, 0] - norm, 0.0))
    s2 = np.sqrt(w[:, 0] + norm)
    return np.column_stack([0.5 * (s1 + s2), 0.5 * (s2 - s1)[:, None] * direction])


def soc_fischer_burmeister(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(φ, ∂φ/∂x, ∂φ/∂y)`` of the cone Fischer–Burmeister function ``φ(x, y) = x + y − (x∘x + y∘y)^½`` per row of
    ``x``, ``y`` (m, 3) (Fukushima, Luo and Tseng 2002): ``φ = 0`` exactly where ``x`` and ``y`` lie in the cone
    ``{‖v_T‖ <= v_0}`` and ``xᵀy = 0``. With ``z = (x∘x + y∘y)^½`` the derivatives are ``I − L_z⁻¹ L_x`` and
    ``I − L_z⁻¹ L_y`` (m, 3, 3); where ``z`` lies on the cone's boundary they are taken at ``x∘x + y∘y`` nudged
    into its interior (a limit of such Jacobians, an element of the B-subdifferential)."""
    w = np.column_stack([(x * x).sum(1) + (y * y).sum(1), 2.0 * (x[:, :1] * x[:, 1:] + y[:, :1] * y[:, 1:])])
    phi = x + y - _soc_sqrt(w)
    nudged = w.copy()
    nudged[:, 0] += 1e-14 * w[:, 0] + 1e-300
    Lz = _arrow(_soc_sqrt(nudged))
    identity = np.eye(3)
    return phi, identity - np.linalg.solve(Lz, _arrow(x)), identity - np.linalg.solve(Lz, _arrow(y))


def solve_fischer_burmeister_cone_newton(W, q, mu, iterations: int = 100, tolerance: float = 1e-12, r0=None):
    """``(r, steps, solved)``: the Coulomb problem of ``u = W r + q`` (``r`` in the cone ``‖r_T‖ <= μ r_n``, the
    De Saxcé velocity ``û = u + μ‖u_T‖ e_n`` in its dual, ``rᵀû = 0``) by Newton on the cone Fischer–Burmeister
    function with an Armijo line search (course §3.3.2; Acary, Brémond and Huber 2018's FB Newton).

    Per contact ``x = (μ r_n, r_T)`` and ``y = s (û_n, μ u_T)`` (``s = 1/W_nn``) map both cones onto the unit cone,
    so ``Φ_c = φ(x, y)`` (:func:`soc_fischer_burmeister`) is zero exactly at a solution; a frictionless contact
    (μ = 0) uses the scalar ``φ(r_n, s u_n)`` and ``r_T = 0``. The Jacobian follows by the chain rule through
    ``u = W r + q`` (``∂‖u_T‖`` taken as 0 where ``u_T = 0``); directions come from least squares, so a singular
    ``W`` (redundant contacts) is allowed. From ``r0`` (zero by default); ``solved`` once ``‖Φ‖ <= tolerance
    (1 + ‖s q‖)``.
    """
    m = mu.shape[0]
    n = 3 * m
    s = _scales(W, m)
    frictionless = mu == 0.0
    D1 = np.zeros((m, 3, 3))
    D1[:, 0, 0] = np.where(frictionless, 1.0, mu)
    D1[:, 1, 1] = D1[:, 2, 2] = 1.0

    def residual(r):
        U = (W @ r + q).reshape(m, 3)
        R = r.reshape(m, 3)
        slip = np.linalg.norm(U[:, 1:], axis=1)
        x = np.einsum("kij,kj->ki", D1, R)
        y = s[:, None] * np.column_stack([U[:, 0] + mu * slip, mu[:, None] * U[:, 1:]])
        phi, dx, dy = soc_fischer_burmeister(x, y)
        if frictionless.any():
            a, b = R[frictionless, 0], s[frictionless] * U[frictionless, 0]
            rho = np.hypot(a, b)
            safe = np.where(rho > 0.0, rho, 1.0)
            phi[frictionless] = np.column_stack([a + b - rho, R[frictionless, 1:]])
            dx[frictionless], dy[frictionless] = np.eye(3), 0.0
            dx[frictionless, 0, 0] = np.where(rho > 0.0, 1.0 - a / safe, 1.0 - np.sqrt(0.5))
            dy[frictionless, 0, 0] = np.where(rho > 0.0, 1.0 - b / safe, 1.0 - np.sqrt(0.5))
        return phi.reshape(-1), (U, slip, dx, dy)

    def jacobian(r, state):
        U, slip, dx, dy = state
        G = np.zeros((m, 3, 3))  # ∂y/∂u per contact
        G[:, 0, 0] = 1.0
        G[:, 0, 1:] = np.where(slip[:, None] > 0.0, mu[:, None] * U[:, 1:] / np.maximum(slip, 1e-300)[:, None], 0.0)
        G[:, 1, 1] = G[:, 2, 2] = mu
        G *= s[:, None, None]
        J = np.einsum("kij,kjn->kin", dy @ G, W.reshape(m, 3, n)).reshape(n, n)
        blocks = dx @ D1
        for k in range(m):
            J[3 * k : 3 * k + 3, 3 * k : 3 * k + 3] += blocks[k]
        return J

    start = np.zeros(n) if r0 is None else np.array(r0, dtype=np.float64)
    target = tolerance * (1.0 + float(np.linalg.norm(np.repeat(s, 3) * q)))
    return _damped_newton(residual, jacobian, start, iterations, target)


def solve_prox_newton(W, q, mu, iterations: int = 100, tolerance: float = 1e-12, r0=None):
    """``(r, steps, solved)``: PROX's fixed-point equation ``r = prox(r − ρ u)`` solved by semismooth Newton (the
    Alart–Curnier form; course §3.3, seed 001's proximal map) instead of by sweeps, with an Armijo line search.

    Per contact ``z = r − ρ u`` with ``ρ = 1/W_nn``: ``Φ_n = r_n − max(z_n, 0)`` and ``Φ_T = r_T − P(z_T)``, ``P`` the
    projection onto the disk of radius ``μ max(z_n, 0)``. Its generalized Jacobian is ``I − D (I − ρ W)`` with
    ``D = ∂prox/∂z`` per contact (inside the disk the identity, outside it ``(a/‖z_T‖)(I − ẑẑᵀ)`` and ``μ ẑ`` for
    the radius). Where PROX's sweeps crawl on a singular ``W`` (a rigid stack's redundant contacts), this converges
    in tens of steps. From ``r0`` (zero by default); ``solved`` once ``‖Φ‖ <= tolerance (1 + ‖ρ q‖)``.
    """
    m = mu.shape[0]
    n = 3 * m
    rho = np.repeat(_scales(W, m), 3)
    step = np.eye(n) - rho[:, None] * W  # ∂z/∂r

    def residual(r):
        Z = (r - rho * (W @ r + q)).reshape(m, 3)
        normal = np.maximum(Z[:, 0], 0.0)
        radius = mu * normal
        length = np.linalg.norm(Z[:, 1:], axis=1)
        inside = length <= radius
        shrink = np.where(inside, 1.0, radius / np.where(length > 0.0, length, 1.0))
        proximal = np.column_stack([normal, Z[:, 1:] * shrink[:, None]])
        return r - proximal.reshape(-1), (Z, radius, length, inside)

    def jacobian(r, state):
        Z, radius, length, inside = state
        D = np.zeros((m, 3, 3))
        D[:, 0, 0] = Z[:, 0] > 0.0
        unit = Z[:, 1:] / np.where(length > 0.0, length, 1.0)[:, None]
        outside = (radius / np.where(length > 0.0, length, 1.0))[:, None, None] * (
            np.eye(2) - unit[:, :, None] * unit[:, None, :]
        )
        D[:, 1:, 1:] = np.where(inside[:, None, None], np.eye(2), outside)
        D[:, 1:, 0] = np.where(inside[:, None], 0.0, (mu * D[:, 0, 0])[:, None] * unit)
        return np.eye(n) - np.einsum("kij,kjn->kin", D, step.reshape(m, 3, n)).reshape(n, n)

    start = np.zeros(n) if r0 is None else np.array(r0, dtype=np.float64)
    target = tolerance * (1.0 + float(np.linalg.norm(rho * q)))
    return _damped_newton(residual, jacobian, start, iterations, target)
