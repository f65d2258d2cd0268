"""Projected Gauss–Seidel with subspace minimization (PGS-SM, Silcowitz, Abel and Erleben 2010; seed 000 §3.2.6,
Algorithm 9) on the box-friction BLCP of FCLIB's local problem ``u = W r + q``.

PGS finds which rows sit at a bound long before it finds their values: a stack's impulses still creep after the
active set has settled. So each outer iteration runs a few PGS sweeps to estimate the set, then solves the rows
that are free exactly: a normal row is free while its impulse is positive, a tangent row while it lies strictly
inside ``±μ r_n``. Rows at a bound keep it, and a tangent at its bound follows its contact's normal, ``r_t = ±μ r_n``,
so the reduced system (eq. 165 with the box's bounds written as functions of the free normals) is

    (W T)_FF y = −q_F,        r = T y,

where ``T`` maps the free unknowns ``y`` to every row. The answer is projected back onto the box (eq. 167), which
keeps the active set or shrinks it, and kept only if it lowers the BLCP's natural-map residual; the next PGS sweeps
start from it. Once the active set is the solution's, one subspace solve is exact.

Set-up code for small problems (the study and the FCLIB command): NumPy around the dense PGS kernel.
"""

from __future__ import annotations

import numpy as np

from .dense import solve_pgs_dense
from .global_newton import min_map_residual

PGS_SWEEPS = 5
"""PGS sweeps of each outer iteration (Algorithm 9's ``k_pgs``)."""
SUBSPACE_SOLVES = 3
"""Subspace solves of each outer iteration (``k_sm``)."""


def box_residual(W: np.ndarray, q: np.ndarray, mu: np.ndarray, r: np.ndarray) -> float:
    """The box-friction BLCP's natural-map residual ``|r − Π(r − u)|`` (``u = W r + q``; normals onto ``r_n >= 0``,
    tangents onto ``[−μ r_n, μ r_n]``): the norm of the global Newton's min-map
    (:func:`.global_newton.min_map_residual`), zero exactly at a solution [N·s]."""
    return float(np.linalg.norm(min_map_residual(W, q, mu, r)[0]))


def _subspace_map(r: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(T (3m, f), free (f,))``: the free rows of ``r``'s active set and the map from their values to every row
    (a tangent at its bound is ``±μ`` times its contact's free normal; a contact whose normal is zero is all zero)."""
    R = r.reshape(-1, 3)
    rows: list[int] = []
    for k in range(R.shape[0]):
        if R[k, 0] <= 0.0:
            continue
        rows.append(3 * k)
        for d in (1, 2):
            if abs(R[k, d]) < mu[k] * R[k, 0]:
                rows.append(3 * k + d)
    free = np.array(rows, np.int64)
    column = {row: c for c, row in enumerate(rows)}
    T = np.zeros((r.shape[0], free.shape[0]))
    for row, c in column.items():
        T[row, c] = 1.0
    for k in range(R.shape[0]):
        if R[k, 0] <= 0.0:
            continue
        for d in (1, 2):
            if 3 * k + d not in column:  # at its bound: follows the normal
                T[3 * k + d, column[3 * k]] = np.sign(R[k, d]) * mu[k]
    return T, free


def _project(r: np.ndarray, mu: np.ndarray) -> None:
    """Onto the box in place (eq. 167): normals non-negative, then tangents within ``±μ r_n``."""
    R = r.reshape(-1, 3)
    R[:, 0] = np.maximum(R[:, 0], 0.0)
    bound = (mu * R[:, 0])[:, None]
    R[:, 1:] = np.clip(R[:, 1:], -bound, bound)


def solve_pgs_subspace(W: np.ndarray, q: np.ndarray, mu: np.ndarray, iterations: int, tolerance: float,
                       r: np.ndarray) -> tuple[int, float]:  # fmt: skip
    """Algorithm 9 from the impulses ``r`` (3m,), changed in place, until the box residual (:func:`box_residual`) is
    at most ``tolerance`` times ``1 + |q|`` or ``iterations`` PGS sweeps are spent. Returns ``(sweeps, residual)``
    (each subspace solve counts as a sweep)."""
    goal = tolerance * (1.0 + float(np.linalg.norm(q)))
    result = np.zeros(2)
    sweeps = 0
    residual = box_residual(W, q, mu, r)
    while sweeps < iterations and residual > goal:
        solve_pgs_dense(W, q, mu, min(PGS_SWEEPS, iterations - sweeps), 0.0, r, result)
        sweeps += int(result[0])
        residual = box_residual(W, q, mu, r)
        for _ in range(SUBSPACE_SOLVES):
            if residual <= goal or sweeps >= iterations:
                break
            T, free = _subspace_map(r, mu)
            if free.size == 0:
                break
            y = np.linalg.lstsq((W @ T)[free], -q[free], rcond=None)[0]
            trial = T @ y
            _project(trial, mu)
            sweeps += 1
            trial_residual = box_residual(W, q, mu, trial)
            if not trial_residual < residual:
                break  # the estimated set was wrong: back to PGS from the better point
            r[:] = trial
            residual = trial_residual
    return sweeps, residual
