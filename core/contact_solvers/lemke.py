"""Lemke's complementary pivoting, and the polyhedral-cone LCP of friction it solves (seed 000 §1.6, §3.1).

Lemke's method solves ``w = M z + q``, ``0 <= w ⊥ z >= 0`` for matrices that need be neither symmetric nor
positive definite (the polyhedral friction LCP has a zero block on its diagonal, so neither splitting nor Baraff's
pivoting applies to it). An artificial variable ``z0`` with the covering vector ``e`` (all ones) makes
``w = M z + q + e z0`` feasible at ``z = 0, z0 = -min q``; each pivot then brings in the complement of the variable
that just left the basis, until ``z0`` leaves (a solution) or no row bounds the entering column (a ray: the
method found no solution). Ties of the ratio test are broken lexicographically, which rules out cycling on
degenerate problems.

The **polyhedral cone** (Stewart and Trinkle 1996, Anitescu and Potra 1997) replaces each contact's Coulomb cone by
the positive span of ``k`` unit tangent directions at equal angles (every one with its opposite), which lies
inside the true cone: friction ``r_T = D λ_t`` with ``λ_t >= 0`` (k,), and per contact (eq. 34 of the course)

    0 <= u_n                    ⊥ λ_n >= 0
    0 <= β e + D^T u_T          ⊥ λ_t >= 0
    0 <= μ λ_n − e^T λ_t        ⊥ β   >= 0

``β`` is the largest sliding speed along the directions: ``β = 0`` holds the contact (static friction anywhere in
the polygon), ``β > 0`` puts friction on the polygon's edge against the sliding, in the direction of maximal
dissipation among the ``k``. With ``u = W r + q`` of FCLIB's local problem this is one LCP of size ``m (k + 2)``.

Set-up code for small problems (the study and the FCLIB command): NumPy only, dense, ``O(n^2)`` per pivot.
"""

from __future__ import annotations

import numpy as np

SOLVED, RAY, PIVOT_LIMIT, TOO_LARGE, INACCURATE = 0, 1, 2, 3, 4
"""Statuses of :func:`lemke`: a solution; ray termination (no solution found); the pivot limit; the problem is
larger than ``MAX_VARIABLES``; a complementary basis whose answer does not meet the LCP (``ACCEPT``): on a singular,
degenerate ``M`` (a stack's redundant contacts) a pivot on an entry that is round-off leaves the basis infeasible."""
ACCEPT = 1e-8
"""An answer is accepted when ``-w``, ``-z`` and ``|z_i w_i|`` all stay below this times the largest ``|q_i|`` (times
the largest ``z_i`` too, when that is above 1)."""
MAX_VARIABLES = 2000
"""Largest LCP :func:`lemke` takes: its basis inverse is dense, ``n^2`` numbers, and each pivot costs ``n^2``."""
POLYHEDRAL_DIRECTIONS = 8
"""Tangent directions of the polyhedral cone: an octagon, whose edges fall at most 1 − cos(22.5°) = 7.6 % inside
the Coulomb cone (the four-sided pyramid's fall 29 % inside)."""
_PIVOT = 1e-10
"""Entries of the entering column below this (relative to its largest) do not bound the step."""


def _ratio_row(column: np.ndarray, rhs: np.ndarray, inverse: np.ndarray, z0_row: int) -> int:
    """The leaving row of the ratio test: the smallest ``rhs_i / column_i`` over rows with ``column_i > 0``, ties
    broken lexicographically by the rows of the basis inverse (over the same pivot), ``z0``'s row first among ties;
    -1 when no row bounds the column."""
    limit = _PIVOT * max(float(np.abs(column).max()), 1.0)
    rows = np.flatnonzero(column > limit)
    if rows.size == 0:
        return -1
    ratio = rhs[rows] / column[rows]
    best = ratio.min()
    rows = rows[ratio <= best + 1e-9 * max(abs(best), 1.0)]
    if z0_row in rows:
        return z0_row
    for k in range(inverse.shape[1]):
        if rows.size == 1:
            break
        lex = inverse[rows, k] / column[rows]
        rows = rows[lex <= lex.min() + 1e-9 * max(abs(lex.min()), 1.0)]
    return int(rows[0])


def _violation(M: np.ndarray, q: np.ndarray, z: np.ndarray) -> float:
    """How far ``z`` is from solving the LCP: the largest of ``-w``, ``-z`` and ``|z_i w_i|`` (``w = M z + q``)."""
    w = M @ z + q
    return float(max(-w.min(), -z.min(), np.abs(z * w).max(), 0.0))


def _answer(M: np.ndarray, q: np.ndarray, basis: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``z`` of the final basis: the tableau's values, or one direct solve of ``[I, -M]`` restricted to the basic
    columns when that meets the LCP better (the updated inverse gathers rounding over many pivots; on a singular
    ``M`` the basis may be singular too and the tableau's values are the ones to keep)."""
    n = q.shape[0]
    z = np.zeros(n)
    columns = np.zeros((n, n))
    for row, var in enumerate(basis):
        if var < n:
            columns[var, row] = 1.0
        else:
            columns[:, row] = -M[:, var - n]
            z[var - n] = max(rhs[row], 0.0)
    try:
        values = np.linalg.solve(columns, q)
    except np.linalg.LinAlgError:
        return z
    polished = np.zeros(n)
    for row, var in enumerate(basis):
        if var >= n:
            polished[var - n] = max(values[row], 0.0)
    if np.all(np.isfinite(polished)) and _violation(M, q, polished) < _violation(M, q, z):
        return polished
    return z


def lemke(M: np.ndarray, q: np.ndarray, max_pivots: int) -> tuple[np.ndarray, int, int]:
    """Solve ``0 <= M z + q ⊥ z >= 0`` by Lemke's method (module docstring). ``M`` (n, n), ``q`` (n,).

    Returns ``(z (n,), pivots, status)`` with status :data:`SOLVED`, :data:`INACCURATE` (``z`` is the final basis's
    answer, which does not meet the LCP), :data:`RAY`, :data:`PIVOT_LIMIT` or :data:`TOO_LARGE` (``z`` zero).
    Variables: ``w_i`` is ``i``, ``z_i`` is ``n + i``, ``z0`` is ``2n``.
    """
    n = q.shape[0]
    if n == 0 or q.min() >= 0.0:
        return np.zeros(n), 0, SOLVED
    if n > MAX_VARIABLES:
        return np.zeros(n), 0, TOO_LARGE
    inverse = np.eye(n)
    rhs = q.astype(np.float64).copy()
    basis = np.arange(n)  # every w basic
    lowest = rhs.min()  # z0 enters and the most negative w leaves: the last of equal ones, so that every row of
    ties = np.flatnonzero(rhs <= lowest + 1e-12 * abs(lowest))  # [rhs, inverse] starts lexicographically positive
    row = int(ties[-1])
    column = -np.ones(n)
    entering = 2 * n
    for pivots in range(1, max_pivots + 1):
        leaving = basis[row]
        pivot = column[row]
        inverse[row] /= pivot
        rhs[row] /= pivot
        others = np.arange(n) != row
        inverse[others] -= np.outer(column[others], inverse[row])
        rhs[others] -= column[others] * rhs[row]
        basis[row] = entering
        if leaving == 2 * n:  # z0 left: a complementary basis
            z = _answer(M, q, basis, rhs)
            scale = max(float(np.abs(q).max()), 1e-300)
            accepted = _violation(M, q, z) <= ACCEPT * scale * max(1.0, float(z.max()))
            return z, pivots, SOLVED if accepted else INACCURATE
        entering = leaving + n if leaving < n else leaving - n  # the complement of the leaving variable
        column = inverse[:, entering].copy() if entering < n else -(inverse @ M[:, entering - n])
        z0_rows = np.flatnonzero(basis == 2 * n)
        row = _ratio_row(column, rhs, inverse, int(z0_rows[0]) if z0_rows.size else -1)
        if row < 0:
            return np.zeros(n), pivots, RAY
    return np.zeros(n), max_pivots, PIVOT_LIMIT


def polyhedral_directions(k: int) -> np.ndarray:
    """``D`` (2, k): ``k`` unit tangent directions at equal angles from the first tangent (k even: each with its
    opposite)."""
    angle = 2.0 * np.pi * np.arange(k) / k
    return np.stack([np.cos(angle), np.sin(angle)])


def polyhedral_lcp(W: np.ndarray, q: np.ndarray, mu: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The polyhedral-cone LCP of FCLIB's local problem ``u = W r + q`` (module docstring, the course's eq. 37 with
    the velocities eliminated): ``(A (N, N), b (N,), B (3m, m (k + 1)))`` with ``N = m (k + 2)`` and the unknowns
    ``z = [λ_n (m), λ_t (m k, contact by contact), β (m)]``; ``B`` maps ``[λ_n, λ_t]`` to the impulses ``r``."""
    m = mu.shape[0]
    D = polyhedral_directions(k)
    B = np.zeros((3 * m, m * (k + 1)))
    for c in range(m):
        B[3 * c, c] = 1.0
        B[3 * c + 1 : 3 * c + 3, m + c * k : m + (c + 1) * k] = D
    size = m * (k + 1)
    A = np.zeros((size + m, size + m))
    A[:size, :size] = B.T @ W @ B
    for c in range(m):
        tangents = slice(m + c * k, m + (c + 1) * k)
        A[tangents, size + c] = 1.0  # β e
        A[size + c, c] = mu[c]  # μ λ_n
        A[size + c, tangents] = -1.0  # − e^T λ_t
    b = np.concatenate([B.T @ q, np.zeros(m)])
    return A, b, B


def solve_polyhedral_lemke(W: np.ndarray, q: np.ndarray, mu: np.ndarray, max_pivots: int,
                           k: int = POLYHEDRAL_DIRECTIONS) -> tuple[np.ndarray, int, int]:  # fmt: skip
    """FCLIB's local problem with each cone replaced by its ``k``-sided polyhedral cone, solved by :func:`lemke`:
    ``(r (3m,), pivots, status)``."""
    A, b, B = polyhedral_lcp(W, q, mu, k)
    z, pivots, status = lemke(A, b, max_pivots)
    return B @ z[: B.shape[1]], pivots, status


def solve_frictionless_lemke(W: np.ndarray, q: np.ndarray, max_pivots: int) -> tuple[np.ndarray, int, int]:
    """The normals alone (every μ taken as zero): ``LCP(W_nn, q_n)`` by :func:`lemke`: ``(r (3m,), pivots,
    status)``, the tangent impulses zero."""
    normals = slice(0, None, 3)
    z, pivots, status = lemke(W[normals, normals], q[normals], max_pivots)
    r = np.zeros(q.shape[0])
    r[normals] = z
    return r, pivots, status
