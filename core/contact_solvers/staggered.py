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
converge; the solver study records where they do here. Set-up code for small problems around the friction's
kernel (:func:`.dense.friction_qp_sweeps`).
"""

from __future__ import annotations

import math

import numpy as np

from .dense import friction_qp_sweeps
from .fclib import natural_map_error
from .pivoting import incremental_pivoting

FRICTION_SWEEPS = 100
"""Most sweeps of one friction QP. Each starts from the last alternation's friction, so the alternations finish
what one leaves (on the shipped FCLIB problems 10 000 sweeps cost nine times as long and converged on the same
problems)."""
FRICTION_TOLERANCE = 1e-13
"""A friction QP stops when a sweep moves no tangent impulse by more than this times the largest bound."""


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
