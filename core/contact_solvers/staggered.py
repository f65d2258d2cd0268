"""Staggered projections (Kaufman, Sueda, James and Pai 2008; the splitting family of seed 000 §3.2) on FCLIB's
local problem ``u = W r + q`` with the Coulomb disk.

The friction law couples the normal and the friction impulses both ways: the normals bound the friction
(``|r_t| <= μ r_n``), and the friction's impulses change the normal velocities. Staggering splits the two and
alternates two convex problems, each solved to the end, until neither moves the other:

1. *contact*: the normals with the friction held, the LCP ``0 <= r_n ⊥ W_nn r_n + (q_n + W_nt r_t) >= 0``
   (incremental pivoting, exact, :mod:`.pivoting`);
2. *friction*: the tangents with the normals held, the maximal-dissipation QP
   ``min ½ r_tᵀ W_tt r_t + (q_t + W_tn r_n)ᵀ r_t`` over the disks ``|r_t,k| <= μ_k r_n,k`` (projected block
   Gauss–Seidel: per contact a gradient step of ``1 / λ_max`` of its 2 × 2 block, projected onto its disk; on a
   convex QP each step descends).

At a fixed point the normals are complementary and the friction dissipates the most its disks allow: a solution of
the coupled problem. Kaufman et al. found a few alternations enough on their scenes without a proof that they
converge; the solver study records where they do here. Set-up code for small problems around one kernel.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import njit_kernel
from .fclib import natural_map_error
from .pivoting import incremental_pivoting

FRICTION_SWEEPS = 100
"""Most sweeps of one friction QP. Each starts from the last alternation's friction, so the alternations finish
what one leaves (on the shipped FCLIB problems 10 000 sweeps cost nine times as long and converged on the same
problems)."""
FRICTION_TOLERANCE = 1e-13
"""A friction QP stops when a sweep moves no tangent impulse by more than this times the largest bound."""


@njit_kernel
def friction_qp_sweeps(W, c, bound, r, sweeps, tolerance):
    """Projected block Gauss–Seidel on ``min ½ r_tᵀ W_tt r_t + c_tᵀ r_t`` over ``|r_t,k| <= bound[k]`` (module
    docstring). ``W`` (3m, 3m), ``c`` (3m,) (its tangent rows are read), ``bound`` (m,) [N·s], ``r`` (3m,): its
    tangent rows updated in place. Returns the sweeps done."""
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


def solve_staggered(W: np.ndarray, q: np.ndarray, mu: np.ndarray, iterations: int, tolerance: float):
    """``(r (3m,), alternations, merit)``: contact and friction problems in turn (module docstring) from zero
    impulses, until FCLIB's merit (the natural-map error over ``1 + sqrt(|q|)``) is at most ``tolerance`` or after
    ``iterations`` alternations. ``W`` (3m, 3m) symmetric positive definite, ``q`` (3m,), ``mu`` (m,)."""
    m = mu.shape[0]
    n, t = np.arange(m) * 3, np.sort(np.concatenate([np.arange(m) * 3 + 1, np.arange(m) * 3 + 2]))
    W_nn, W_nt = W[np.ix_(n, n)], W[np.ix_(n, t)]
    r = np.zeros(3 * m)
    scale = 1.0 + math.sqrt(float(np.linalg.norm(q)))
    merit = math.inf
    for alternation in range(1, iterations + 1):
        r[n], _, solved = incremental_pivoting(W_nn, q[n] + W_nt @ r[t])
        c = q + W[:, n] @ r[n]
        friction_qp_sweeps(W, c, mu * r[n], r, FRICTION_SWEEPS, FRICTION_TOLERANCE)
        merit = natural_map_error(r, W @ r + q, mu) / scale
        if merit <= tolerance or not solved:
            return r, alternation, merit
    return r, iterations, merit
