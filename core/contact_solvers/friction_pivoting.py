"""Baraff's friction pivoting (1994; seed 002 §2.3–2.4): Dantzig's incremental method grown to static and dynamic
(sliding) Coulomb friction, on a dense problem ``a = A f + b``.

Each contact has a normal row and ``k`` friction rows (``stride = k + 1``: 2 in the plane, 3 in space, each
friction row bounded on its own: in space that is the box model). Every row carries a state that fixes one linear
equation of the search direction, and the method drives one violated row at a time until its condition holds while
every row already processed keeps its own:

- normal rows: *clamped* (``a = 0``, ``f >= 0``) or *unclamped* (``f = 0``, ``a >= 0``);
- static friction rows: *sticking* (``a = 0``, ``|f| <= μ f_n``), *at the upper bound* (``f = μ f_n``, ``a <= 0``)
  or *at the lower bound* (``f = −μ f_n``, ``a >= 0``); rows not yet established keep ``f`` fixed;
- sliding contacts (dynamic friction): ``f_T = −μ f_n v̂`` along the given slip direction ``v̂``, always.

A step is as long as it can be before some row's state must change (Baraff's ``maxstep``); the row that limits it
changes state and the drive goes on. With sliding friction ``A`` turns unsymmetric and may admit no solution
(Painlevé's paradox): the drive's step is then unbounded, and the method says there is no solution, as the seed
does. A row that would step straight back into the state it just left after a step of zero length is given up
(its value frozen until it is driven again), the seed's remedy against zero-step cycling. Plain NumPy with one
least-squares solve per step (no incremental factorization): for study and reference, never in a bake.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

UNSET, CLAMPED, UNCLAMPED, STICKING, UPPER, LOWER, SLIDING = range(7)
"""Row states (see the module docstring); UNSET: not processed yet, its value kept fixed."""

SOLVED, NO_SOLUTION, PIVOT_LIMIT, SINGULAR = "solved", "no solution", "pivot limit", "singular direction"


@dataclass
class FrictionPivotingResult:
    """``f`` (n,) forces or impulses, ``a`` (n,) = A f + b, ``pivots`` (steps taken), ``status``: SOLVED,
    NO_SOLUTION (an unbounded drive: the seed's inconsistent configuration), PIVOT_LIMIT, or SINGULAR (LAPACK's
    least-squares solve of a direction failed to converge)."""

    f: np.ndarray
    a: np.ndarray
    pivots: int
    status: str


class _Problem:
    """The problem and its working state: ``f``, ``a``, the row states, the normal row of each row."""

    def __init__(self, A, b, mu, stride, slip):
        self.A, self.stride = np.asarray(A, np.float64), int(stride)
        self.n = b.shape[0]
        self.mu = np.repeat(np.asarray(mu, np.float64), self.stride)
        self.normal = np.repeat(np.arange(0, self.n, self.stride), self.stride)
        self.is_normal = np.arange(self.n) % self.stride == 0
        self.f, self.a = np.zeros(self.n), np.asarray(b, np.float64).copy()
        self.state = np.full(self.n, UNSET)
        self.slip = np.zeros(self.n)
        if slip is not None:
            direction = np.asarray(slip, np.float64).reshape(-1, self.stride - 1)
            self.slip.reshape(-1, self.stride)[:, 1:] = direction
            sliding = np.repeat(np.abs(direction).sum(axis=1) > 0.0, self.stride) & ~self.is_normal
            self.state[sliding] = SLIDING
        self.tol = 1e-12 * max(1.0, float(np.abs(b).max(initial=0.0)))

    def direction(self, driver: int, sign: float) -> tuple[np.ndarray, np.ndarray]:
        """``(df, da)``: the change that keeps every row's state equation with the driver's value changing by
        ``sign`` (Baraff's ``fdirection``)."""
        n, A = self.n, self.A
        M, rhs = np.eye(n), np.zeros(n)
        keeps_a = (self.state == CLAMPED) | (self.state == STICKING)
        M[keeps_a] = A[keeps_a]
        for p in np.flatnonzero((self.state == UPPER) | (self.state == LOWER) | (self.state == SLIDING)):
            factor = {UPPER: -1.0, LOWER: 1.0, SLIDING: self.slip[p]}[int(self.state[p])]
            M[p, self.normal[p]] = factor * self.mu[p]
        M[driver] = 0.0
        M[driver, driver] = 1.0
        rhs[driver] = sign
        df = np.linalg.lstsq(M, rhs, rcond=None)[0]
        return df, A @ df

    def _bound_steps(self, p, df, targets):
        """Steps at which friction row ``p`` meets ``± μ f_n``: ``(s, p, state)`` for each bound in ``targets``."""
        q, mu, out = self.normal[p], self.mu[p], []
        for bound, state in targets:
            rate = df[p] - bound * mu * df[q]
            if bound * rate > 0.0:
                out.append((max((bound * mu * self.f[q] - self.f[p]) / rate, 0.0), p, state))
        return out

    def max_step(self, driver, sign, df, da):
        """Baraff's ``maxstep``: ``(s, row, new state)`` of the first state change along ``(df, da)``, or None."""
        f, a, steps = self.f, self.a, []
        if self.is_normal[driver]:
            if da[driver] > 0.0:
                steps.append((max(-a[driver] / da[driver], 0.0), driver, CLAMPED))
        else:
            if a[driver] * da[driver] < 0.0:
                steps.append((max(-a[driver] / da[driver], 0.0), driver, STICKING))
            steps += self._bound_steps(driver, df, [(sign, UPPER if sign > 0 else LOWER)])
        for i in np.flatnonzero(self.state == CLAMPED):
            if df[i] < 0.0:
                steps.append((max(-f[i] / df[i], 0.0), i, UNCLAMPED))
        for i in np.flatnonzero(self.state == UNCLAMPED):
            if da[i] < 0.0:
                steps.append((max(-a[i] / da[i], 0.0), i, CLAMPED))
        for p in np.flatnonzero(self.state == STICKING):
            steps += self._bound_steps(p, df, [(1.0, UPPER), (-1.0, LOWER)])
        for p in np.flatnonzero(((self.state == UPPER) & (da > 0.0)) | ((self.state == LOWER) & (da < 0.0))):
            steps.append((max(-a[p] / da[p], 0.0), p, STICKING))
        return min(steps, key=lambda step: (step[0], step[1])) if steps else None

    def settle(self, row: int, state: int) -> None:
        """Row ``row`` enters ``state``; its defining equation is made exact (round-off of the step)."""
        self.state[row] = state
        if state in (CLAMPED, STICKING):
            self.a[row] = 0.0
        elif state == UNCLAMPED:
            self.f[row] = 0.0
        elif state in (UPPER, LOWER):
            self.f[row] = (1.0 if state == UPPER else -1.0) * self.mu[row] * self.f[self.normal[row]]

    def violated(self) -> tuple[int, float] | None:
        """The next row to drive ``(row, sign)``, or None when every condition holds. Unprocessed normal rows that
        already separate are settled as unclamped on the way."""
        tol = self.tol
        for i in np.flatnonzero(self.is_normal & (self.state == UNSET)):
            if self.a[i] < -tol:
                return int(i), 1.0
            self.state[i] = UNCLAMPED
        for p in np.flatnonzero(~self.is_normal & (self.state == UNSET)):
            q = self.normal[p]
            if self.state[q] != CLAMPED or self.f[q] <= tol:
                continue  # no normal force: f = 0 is the friction's answer (its value stays as it is)
            if abs(self.a[p]) <= tol:
                self.state[p] = STICKING
                continue
            return int(p), -float(np.sign(self.a[p]))
        return None


def friction_pivoting(A, b, mu, stride: int = 2, slip=None, max_pivots: int = 0) -> FrictionPivotingResult:
    """Forces ``f`` with ``a = A f + b`` meeting the normal and Coulomb friction conditions row by row (module
    docstring). ``A`` (n, n), ``b`` (n,), ``n = m stride``, rows ``[normal, friction 1, ...]`` per contact; ``mu``
    (m,); ``slip`` (m, stride − 1): each sliding contact's unit slip direction (zeros: static friction), None: all
    static. ``max_pivots``: default ``20 n``."""
    problem = _Problem(A, b, mu, stride, slip)
    limit, pivots = max_pivots or 20 * problem.n, 0
    last_zero_step: tuple[int, int] | None = None  # (row, state it left) of the last step of zero length
    while True:
        drive = problem.violated()
        if drive is None:
            return FrictionPivotingResult(problem.f, problem.a, pivots, SOLVED)
        driver, sign = drive
        while True:
            if pivots >= limit:
                return FrictionPivotingResult(problem.f, problem.a, pivots, PIVOT_LIMIT)
            pivots += 1
            try:
                df, da = problem.direction(driver, sign)
            except np.linalg.LinAlgError:
                return FrictionPivotingResult(problem.f, problem.a, pivots, SINGULAR)
            step = problem.max_step(driver, sign, df, da)
            if step is None:  # nothing stops the drive: no solution (the seed's unbounded ray)
                return FrictionPivotingResult(problem.f, problem.a, pivots, NO_SOLUTION)
            s, row, state = step
            problem.f += s * df
            problem.a += s * da
            if s == 0.0 and last_zero_step == (row, state) and row != driver:
                problem.state[row] = UNSET  # zero-step cycling: give the row up until it is driven again
                last_zero_step = None
                continue
            last_zero_step = (row, int(problem.state[row])) if s == 0.0 else None
            problem.settle(row, state)
            if row == driver:
                break
