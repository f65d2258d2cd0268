"""Impacts with restitution: three ways to resolve several collisions at one instant (the lecture slides on
impulse methods; Baraff 1994; Smith et al. 2012), on a dense system.

The collisions are the rows of ``J`` (k, d) acting on the velocities ``v`` (d,) of bodies with inverse masses
``inv_mass`` (d,) (a diagonal ``M⁻¹``; a row's relative normal velocity is ``J v``, approaching where negative).
Each method returns the velocities after the impact and the impulses ``j`` (k,) it applied:

- :func:`simultaneous`: one LCP over every collision with Newton's restitution on the approaching ones,
  ``0 <= A j + u⁻ + ε min(u⁻, 0) ⊥ j >= 0`` (``A = J M⁻¹ Jᵀ``, ``u⁻ = J v``), solved exactly by incremental
  pivoting.
  Momentum and energy (ε = 1) are kept, but a Newton's cradle of three balls ends at ``(−1/3, 2/3, 2/3) v₀``.
- :func:`sequential`: one collision at a time (the most approaching), each a two-body impulse that reverses its
  own relative velocity times ε, until none approaches: propagation, so the cradle ends at ``(0, 0, v₀)``; the
  order can break a symmetric scene's symmetry.
- :func:`generalized_reflections`: one LCP at a time over the collisions approaching at that moment only
  (Smith et al. 2012): the cradle propagates like the sequential method and a symmetric hit stays symmetric.

Plain NumPy, for study and reference (the bakes resolve contacts by the solvers' sweeps).
"""

from __future__ import annotations

import numpy as np

from .pivoting import incremental_pivoting


def _apply(J, inv_mass, v, j) -> np.ndarray:
    return v + inv_mass * (J.T @ j)


def _lcp_impulse(A, u, eps, rows) -> np.ndarray:
    """Impulses on ``rows`` from the restitution LCP ``0 <= A j + u + ε min(u, 0) ⊥ j >= 0`` restricted to them
    (a touching, not approaching row keeps ``u⁺ >= 0`` with no bounce)."""
    j = np.zeros(u.shape[0])
    if rows.size:
        b = u[rows] + eps * np.minimum(u[rows], 0.0)
        x, _, solved = incremental_pivoting(A[np.ix_(rows, rows)], b)
        if not solved:
            raise ValueError("the impact LCP has no solution (a collision no impulse can separate)")
        j[rows] = x
    return j


def simultaneous(J, inv_mass, v, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Every collision (all rows touch at this instant) in one LCP: ``(v⁺, j)``."""
    A = J @ (inv_mass[:, None] * J.T)
    u = J @ v
    j = _lcp_impulse(A, u, eps, np.arange(u.shape[0]))
    return _apply(J, inv_mass, v, j), j


def sequential(J, inv_mass, v, eps: float, max_impulses: int = 10000, tolerance: float = 1e-12):
    """The most approaching collision first, one at a time, until none approaches: ``(v⁺, j)``."""
    A = J @ (inv_mass[:, None] * J.T)
    v, total = v.astype(np.float64).copy(), np.zeros(J.shape[0])
    for _ in range(max_impulses):
        u = J @ v
        i = int(np.argmin(u))
        if u[i] >= -tolerance * max(1.0, float(np.abs(u).max())):
            return v, total
        j = np.zeros(J.shape[0])
        j[i] = -(1.0 + eps) * u[i] / A[i, i]
        v, total = _apply(J, inv_mass, v, j), total + j
    raise ValueError(f"sequential impulses: collisions still approaching after {max_impulses} impulses")


def generalized_reflections(J, inv_mass, v, eps: float, max_rounds: int = 1000, tolerance: float = 1e-12):
    """One LCP per round over the collisions approaching then, until none does: ``(v⁺, j)``."""
    A = J @ (inv_mass[:, None] * J.T)
    v, total = v.astype(np.float64).copy(), np.zeros(J.shape[0])
    for _ in range(max_rounds):
        u = J @ v
        rows = np.flatnonzero(u < -tolerance * max(1.0, float(np.abs(u).max())))
        if not rows.size:
            return v, total
        j = _lcp_impulse(A, u, eps, rows)
        v, total = _apply(J, inv_mass, v, j), total + j
    raise ValueError(f"generalized reflections: collisions still approaching after {max_rounds} rounds")
