"""Pivoting methods on a dense contact problem ``u = W r + q`` (course §3.1): they find which rows are free and
which sit at a bound, then one direct solve gives the exact solution of those labels.

- :func:`incremental_pivoting`: Dantzig's method as Baraff (1994) uses it, on the frictionless LCP
  ``0 <= x ⊥ A x + b >= 0``, growing the solution one violated row at a time while every processed row stays
  complementary (the course's Algorithm 3, with its erratum applied).
- :func:`block_principal_pivoting`: Júdice and Pires' method on the box-friction BLCP (normals in ``[0, ∞)``,
  each tangent in ``[-μ r_n, μ r_n]``): every violating row changes label at once; when the labels repeat, one
  least-index pivot (Murty's rule) breaks the cycle (the course's Algorithm 4, with the friction bounds taken
  from the current normal impulses before each solve).

Plain NumPy: dense solves of the free block (``np.linalg.solve``), for small problems and study; never in a bake.
"""

from __future__ import annotations

import numpy as np

FREE, LOWER, UPPER = 0, 1, 2
"""Row labels: free (strictly inside its bounds, zero velocity), at its lower bound, at its upper bound."""


def incremental_pivoting(A: np.ndarray, b: np.ndarray, max_pivots: int = 0) -> tuple[np.ndarray, int, bool]:
    """``(x, pivots, solved)``: the LCP ``0 <= x ⊥ A x + b >= 0`` for symmetric positive (semi)definite ``A`` (n, n).

    Not ``solved`` (``x`` as far as it got) when a step is unbounded (no solution along it) or after ``max_pivots``
    pivots (default ``10 n``)."""
    n = b.shape[0]
    x, v = np.zeros(n), b.astype(np.float64).copy()
    free = np.zeros(n, np.bool_)
    lower = np.zeros(n, np.bool_)  # processed rows at x = 0 with v >= 0
    pivots, limit = 0, max_pivots or 10 * n
    tol = 1e-12 * max(1.0, float(np.abs(b).max(initial=0.0)))
    while True:
        candidates = np.flatnonzero(~free & ~lower & (v < -tol))
        if not candidates.size:
            return x, pivots, True
        j = int(candidates[np.argmin(v[candidates])])  # the most violated unprocessed row
        while True:
            pivots += 1
            if pivots > limit:
                return x, pivots - 1, False
            F = np.flatnonzero(free)
            dx = np.zeros(n)
            dx[j] = 1.0
            if F.size:
                dx[F] = np.linalg.solve(A[np.ix_(F, F)], -A[F, j])
            dv = A @ dx
            steps = [(-v[j] / dv[j] if dv[j] > 0.0 else np.inf, j)]
            steps += [(-x[i] / dx[i], i) for i in F if dx[i] < 0.0]
            steps += [(-v[i] / dv[i], i) for i in np.flatnonzero(lower) if dv[i] < 0.0]
            alpha, blocking = min(steps)
            if not np.isfinite(alpha):  # row j can grow without bound: no solution along it
                return x, pivots, False
            x += alpha * dx
            v += alpha * dv
            if blocking == j:
                v[j] = 0.0
                free[j] = True
                break
            if free[blocking]:  # its impulse reached zero
                x[blocking] = 0.0
                free[blocking], lower[blocking] = False, True
            else:  # its velocity reached zero
                v[blocking] = 0.0
                lower[blocking], free[blocking] = False, True


def _bounds(x: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box bounds (3m,) from the current normal impulses: normals ``[0, ∞)``, tangents ``±μ r_n``."""
    normal = np.repeat(np.maximum(x[0::3], 0.0), 3)
    scale = np.repeat(mu, 3)
    lo, hi = -scale * normal, scale * normal
    lo[0::3], hi[0::3] = 0.0, np.inf
    return lo, hi


def block_principal_pivoting(W: np.ndarray, q: np.ndarray, mu: np.ndarray, max_steps: int = 200):
    """``(r, steps, solved)``: the box-friction BLCP of ``u = W r + q`` (W (3m, 3m), q (3m,), mu (m,)); not
    ``solved`` after ``max_steps`` label updates without consistent labels, ``r`` then the labels' solution with the
    smallest min-map residual ``‖r − mid(lo, r − u, hi)‖`` met on the way (a cycling label sequence on a singular
    ``W`` can pass through huge least-squares solutions: the last one is no answer)."""
    n = q.shape[0]
    labels = np.full(n, FREE)
    labels[1::3] = labels[2::3] = LOWER  # no friction before the normals press
    x = np.zeros(n)
    seen: set[bytes] = set()
    tol = 1e-10 * max(1.0, float(np.abs(q).max(initial=0.0)))
    best, best_residual = x, np.inf
    for step in range(1, max_steps + 1):
        lo, hi = _bounds(x, mu)
        x = _solve_labels(W, q, labels, lo, hi)
        if not np.all(np.isfinite(x)):  # the labels' system overflowed: NaN would pass every test below
            return best, step, False
        lo, hi = _bounds(x, mu)
        v = W @ x + q
        residual = float(np.linalg.norm(x - np.clip(x - v, lo, hi)))
        if residual < best_residual:
            best, best_residual = x, residual
        wrong = (
            ((labels == FREE) & (x < lo - tol))
            | ((labels == FREE) & (x > hi + tol))
            | ((labels == LOWER) & (v < -tol))
            | ((labels == UPPER) & (v > tol))
        )
        drift = np.abs(np.where(labels == LOWER, x - lo, 0.0)) + np.abs(np.where(labels == UPPER, x - hi, 0.0))
        if not wrong.any():
            if float(np.nan_to_num(drift, posinf=0.0).max(initial=0.0)) <= tol:
                return x, step, True
            continue  # the labels hold; the tangents' bounds moved with the normals: solve again
        key = labels.tobytes()
        rows = np.flatnonzero(wrong)[:1] if key in seen else np.flatnonzero(wrong)  # Murty's rule on a repeat
        seen.add(key)
        for i in rows:
            if labels[i] == FREE:
                labels[i] = LOWER if x[i] < lo[i] - tol else UPPER
            else:
                labels[i] = FREE
    return best, max_steps, False


def _solve_labels(W, q, labels, lo, hi) -> np.ndarray:
    """The principal subproblem (course eq. 115): tight rows at their bounds, free rows with zero velocity."""
    x = np.where(labels == LOWER, lo, np.where(labels == UPPER, hi, 0.0))
    x = np.where(np.isfinite(x), x, 0.0)
    F = np.flatnonzero(labels == FREE)
    if F.size:
        T = np.flatnonzero(labels != FREE)
        x[F] = np.linalg.lstsq(W[np.ix_(F, F)], -q[F] - W[np.ix_(F, T)] @ x[T], rcond=None)[0]
    return x
