"""Joint rows in a dense contact problem: folded into FC(W, q, μ) so that every dense method takes them.

A step with joints poses ``u = W r + q`` over ``3m`` contact rows followed by ``p`` joint rows (seed 000 §1.2:
bilateral rows next to the contacts). Each joint row's impulse ``λ`` lies in a box ``[lo, hi]`` with the box's
complementarity on its velocity ``w``: ``w = 0`` inside, ``w >= 0`` at ``lo``, ``w <= 0`` at ``hi``. The dense
methods (:mod:`.local_solvers`) solve FCLIB's contacts-only problem, so the rows are brought into that form first,
each kind the way its own model allows:

- **equality** (``lo = -inf, hi = +inf``: locked axes, SPRING2): eliminated. Their velocity is zero whatever the
  contacts do, so ``λ_E = -K⁻¹ (q_E + W_Ec r_c)`` with ``K = W_EE``, and the contacts see the Schur complement
  ``W' = W_cc - W_cE K⁻¹ W_Ec``, ``q' = q_c - W_cE K⁻¹ q_E``: Baraff's (1994) equality rows, in the clamped set
  from the start, solved by the same linear algebra as the clamped contacts;
- **fixed** (``lo = hi``: SPRING1 or an undamped SPRING2 step's known impulse): a known impulse, moved into ``q``;
- **one-sided** (one bound finite: a limit): a frictionless contact. ``λ = lo + x`` (or ``hi - x``) with
  ``0 <= x ⊥ ±w >= 0`` is a normal row; its two tangent rows are decoupled and unloaded, ``μ = 0``;
- **two-sided** (both bounds finite: a motor): a friction row. ``λ = c + t``, ``|t| <= h`` (``c`` the box's centre,
  ``h`` its half width) is the first tangent of a contact whose decoupled normal row ``d r_n - d h`` pins
  ``r_n = h`` and whose ``μ = 1``: Coulomb's law then reads ``|t| <= h`` with ``t`` opposing ``w`` when it slides,
  which is the box (the second tangent, decoupled and unloaded, stays zero in the cone and in the box). Methods
  that solve the normals alone (:data:`.local_solvers.NORMALS_ONLY`) have no friction row for it.

Set-up code for the study's small problems (dense ``W``, numpy's solve); the dense methods' kernels are elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fclib import LocalProblem

EQUALITY_REGULARIZATION = 1e-13
"""Each diagonal of the equality rows' ``K`` is raised by this fraction of the largest before the solve (as the
engine's scene-wide factor): redundant rows (a glued wall) make ``K`` singular."""


@dataclass(frozen=True)
class MixedProblem:
    """``u = W r + q`` over ``3m`` contact rows then ``p`` joint rows: ``W`` (3m + p, 3m + p) [m/(N·s)] with each
    soft row's compliance on its diagonal, ``q`` (3m + p,) [m/s], ``mu`` (m,) the contacts' friction, ``lo``, ``hi``
    (p,) [N·s] the joint rows' bounds (``-inf, +inf`` for an equality row)."""

    W: np.ndarray
    q: np.ndarray
    mu: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @property
    def contact_count(self) -> int:
        return int(self.mu.shape[0])


@dataclass(frozen=True)
class Reduction:
    """A :class:`MixedProblem` as FCLIB's local problem :attr:`local` and the way back (:meth:`recover`)."""

    local: LocalProblem
    """The contacts, then one contact per limit row and per motor row: FC(W', q', μ')."""
    contact_rows: int
    """``3m``: the contact rows, first in both problems."""
    kept: np.ndarray
    """(k,) joint rows (indices into ``lo``) that became contacts, in their order."""
    kept_row: np.ndarray
    """(k,) each one's row in :attr:`local` (the normal of a limit, the first tangent of a motor)."""
    kept_sign: np.ndarray
    """(k,) ``λ = offset + sign x`` of each, ``x`` its impulse in :attr:`local`."""
    offset: np.ndarray
    """(p,) every joint row's known part: the fixed impulse, a limit's bound, a motor box's centre, 0 otherwise."""
    equality: np.ndarray
    """(e,) the eliminated rows."""
    solve_equality: np.ndarray
    """(e, 3m + k + 1) ``K⁻¹ [W_E,kept, q_E]``: ``λ_E = -(this) [y; 1]`` with ``y`` the kept rows' impulses."""

    def recover(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(r_c (3m,), λ (p,))``: the contact impulses and every joint row's impulse from a solution ``r`` of
        :attr:`local`."""
        r_c = np.array(r[: self.contact_rows])
        lam = self.offset.copy()
        x = self.kept_sign * r[self.kept_row]
        lam[self.kept] += x
        y = np.concatenate((r_c, x, [1.0]))
        lam[self.equality] = -(self.solve_equality @ y)
        return r_c, lam


def _row_kinds(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, ...]:
    """Masks of the equality, fixed, one-sided and two-sided rows; raises on an empty or NaN box."""
    if np.isnan(lo).any() or np.isnan(hi).any() or (lo > hi).any():
        raise ValueError("every joint row needs bounds lo <= hi, none NaN")
    low, high = np.isfinite(lo), np.isfinite(hi)
    fixed = low & high & (lo == hi)
    return ~low & ~high, fixed, low ^ high, low & high & ~fixed


def _offsets(lo, hi, fixed, one_sided, two_sided) -> tuple[np.ndarray, np.ndarray]:
    """Each row's known part and the sign of its unknown (see :class:`Reduction`)."""
    offset, sign = np.zeros(lo.shape[0]), np.ones(lo.shape[0])
    offset[fixed] = lo[fixed]
    lower = one_sided & np.isfinite(lo)
    upper = one_sided & np.isfinite(hi)
    offset[lower], offset[upper], sign[upper] = lo[lower], hi[upper], -1.0
    offset[two_sided] = 0.5 * (lo[two_sided] + hi[two_sided])
    return offset, sign


def reduce_bilateral(problem: MixedProblem) -> Reduction:
    """FCLIB's local problem of ``problem`` (the module docstring's rules) and what :meth:`Reduction.recover`
    needs. The limits' contacts follow the real ones, then the motors'."""
    nc = 3 * problem.contact_count
    lo, hi = np.asarray(problem.lo, np.float64), np.asarray(problem.hi, np.float64)
    equality, fixed, one_sided, two_sided = _row_kinds(lo, hi)
    offset, sign = _offsets(lo, hi, fixed, one_sided, two_sided)
    q = problem.q + problem.W[:, nc:] @ offset  # the known parts' velocity
    limits, motors = np.flatnonzero(one_sided), np.flatnonzero(two_sided)
    kept = np.concatenate((limits, motors))
    keep = np.concatenate((np.arange(nc), nc + kept))
    flip = np.concatenate((np.ones(nc), sign[kept]))
    E = nc + np.flatnonzero(equality)
    W_kk, W_kE = problem.W[np.ix_(keep, keep)], problem.W[np.ix_(keep, E)]
    solve_equality = np.zeros((E.shape[0], keep.shape[0] + 1))
    if E.shape[0]:
        K = problem.W[np.ix_(E, E)].copy()
        K[np.diag_indices_from(K)] += EQUALITY_REGULARIZATION * max(float(np.diag(K).max()), 1e-300)
        right = np.column_stack((problem.W[np.ix_(E, keep)], q[E]))
        try:
            solve_equality = np.linalg.solve(K, right)
        except np.linalg.LinAlgError:  # singular beyond the regularization: the least-norm impulses
            solve_equality = np.linalg.lstsq(K, right, rcond=None)[0]
    W_red = (W_kk - W_kE @ solve_equality[:, :-1]) * flip[:, None] * flip[None, :]
    q_red = (q[keep] - W_kE @ solve_equality[:, -1]) * flip
    W_red = 0.5 * (W_red + W_red.T)  # the solve's rounding aside, the Schur complement is symmetric
    local, kept_row = _as_contacts(W_red, q_red, problem.mu, nc, limits.shape[0], 0.5 * (hi - lo)[motors])
    return Reduction(local, nc, kept, kept_row, sign[kept], offset, np.flatnonzero(equality), solve_equality)


def _as_contacts(W_red, q_red, mu, nc, limit_count, half_widths) -> tuple[LocalProblem, np.ndarray]:
    """The kept rows as contacts: each limit a normal with two unloaded tangents, each motor the first tangent of a
    contact pinned to ``r_n = h`` with ``μ = 1``; returns the local problem and each kept row's place in it."""
    k = W_red.shape[0] - nc
    m = nc // 3 + k
    row = np.zeros(nc + k, np.int64)
    row[:nc] = np.arange(nc)
    row[nc : nc + limit_count] = nc + 3 * np.arange(limit_count)
    row[nc + limit_count :] = nc + 3 * np.arange(limit_count, k) + 1
    W, q = np.zeros((3 * m, 3 * m)), np.zeros(3 * m)
    W[np.ix_(row, row)] = W_red
    q[row] = q_red
    scale = np.maximum(np.diag(W_red)[nc:], 1e-300)  # the decoupled rows keep the row's own scale
    for i in range(k):
        base = nc + 3 * i
        for d in range(3):
            if base + d != row[nc + i]:
                W[base + d, base + d] = scale[i]
        if i >= limit_count:
            q[base] = -scale[i] * half_widths[i - limit_count]
    mu_all = np.concatenate((np.asarray(mu, np.float64), np.zeros(limit_count), np.ones(k - limit_count)))
    return LocalProblem(W, q, mu_all), row[nc:]
