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

With ``cone=True`` (in space, ``stride = 3``) static friction keeps Coulomb's cone ``|f_T| <= μ f_n`` itself, as the
seed's 3D algorithm does: a contact's friction rows are established one after the other (``x``, then ``y``), each
*sticking* (``a = 0``) until the pair ``f_T`` reaches the cone, found as the smallest positive root of
``|f_T + s df_T|² = μ² (f_n + s df_n)²``; the contact then *saturates* along the direction ``d̂ = f_T / |f_T|`` it
reached the cone in, recorded on entry (``f_T = μ f_n d̂`` from then on), while ``a_T · d̂ <= 0`` (eq. 21). When that
product would turn positive the contact leaves the cone, and its friction is driven back to zero (never zeroed at a
jump, as the seed asks of friction given up) and established again. The answer meets eqs. 15, 16 and 21 but
depends on the tangent frame: the friction is only partly opposed to the acceleration, which is weaker than maximal
dissipation (the seed's own remark).

A step is as long as it can be before some row's state must change (Baraff's ``maxstep``); the row that limits it
changes state and the drive goes on. With sliding friction ``A`` turns unsymmetric and may admit no solution
(Painlevé's paradox): the drive's step is then unbounded, and the method says there is no solution, as the seed
does. A row that would step straight back into the state it just left after a step of zero length is given up
(its value frozen until it is driven again), the seed's remedy against zero-step cycling. Plain NumPy with one
least-squares solve per step (no incremental factorization): for study and reference, never in a bake.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

UNSET, CLAMPED, UNCLAMPED, STICKING, UPPER, LOWER, SLIDING, SATURATED, RELEASED = range(9)
"""Row states (see the module docstring); UNSET: not processed yet, its value kept fixed; SATURATED: a friction
row of a contact on the cone (``cone=True``), ``f_T = μ f_n d̂``; RELEASED: not a state but the event of an unset row's
value driven back to zero."""

SOLVED, NO_SOLUTION, PIVOT_LIMIT, SINGULAR = "solved", "no solution", "pivot limit", "singular direction"
CONE_UNMET = "cone not met"
"""``cone=True``: every row's state holds, yet a contact's friction lies outside its cone or helps its acceleration
(eq. 21 fails): the seed proves neither termination nor success of its 3D rule, and this is where it falls short."""


@dataclass
class FrictionPivotingResult:
    """``f`` (n,) forces or impulses, ``a`` (n,) = A f + b, ``pivots`` (steps taken), ``status``: SOLVED,
    NO_SOLUTION (an unbounded drive: the seed's inconsistent configuration), PIVOT_LIMIT, SINGULAR (LAPACK's
    least-squares solve of a direction failed to converge) or CONE_UNMET."""

    f: np.ndarray
    a: np.ndarray
    pivots: int
    status: str


class _Problem:
    """The problem and its working state: ``f``, ``a``, the row states, the normal row of each row."""

    def __init__(self, A, b, mu, stride, slip, cone=False):
        self.A, self.stride, self.cone = np.asarray(A, np.float64), int(stride), bool(cone)
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
        bound = (self.state == UPPER) | (self.state == LOWER) | (self.state == SLIDING) | (self.state == SATURATED)
        for p in np.flatnonzero(bound):  # a saturated row's slip is -d̂: df_p = μ d̂_p df_n
            factor = {UPPER: -1.0, LOWER: 1.0}.get(int(self.state[p]), self.slip[p])
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

    def _cone_step(self, q, df):
        """Smallest ``s >= 0`` at which contact ``q``'s (its normal row) friction ``f_T + s df_T`` leaves the cone
        ``|f_T| <= μ (f_n + s df_n)`` on its upper nappe, or None: the root of ``h(s) = α s² + β s + γ`` where ``h``
        turns positive (``γ`` less a round-off slack)."""
        f, mu = self.f, self.mu[q]
        ft, dft = f[q + 1 : q + 3], df[q + 1 : q + 3]
        alpha = dft @ dft - mu * mu * df[q] * df[q]
        beta = 2.0 * (ft @ dft - mu * mu * f[q] * df[q])
        # the cone widened by round-off, so that a contact on it (μ = 0: on its axis) is inside until it moves out
        slack = self.tol * self.tol + 1e-12 * (ft @ ft + mu * mu * f[q] * f[q])
        gamma = ft @ ft - mu * mu * f[q] * f[q] - slack
        if gamma >= 0.0 and (beta > 0.0 or (beta == 0.0 and alpha > 0.0)):
            return 0.0  # outside even that, and leaving further
        if abs(alpha) <= 1e-14 * (dft @ dft + mu * mu * df[q] * df[q]):
            roots = [-gamma / beta] if beta > 0.0 else []
        else:
            disc = beta * beta - 4.0 * alpha * gamma
            if disc < 0.0:
                return None
            root = math.sqrt(disc)
            roots = sorted(((-beta - root) / (2.0 * alpha), (-beta + root) / (2.0 * alpha)))
        for s in roots:  # rising through zero, ahead, on the nappe of positive normal force
            if 2.0 * alpha * s + beta > 0.0 and s >= -1e-12 and f[q] + max(s, 0.0) * df[q] > 0.0:
                return max(s, 0.0)
        return None

    def _cone_steps(self, driver, sign, df, da):
        """``cone=True``: the steps at which a contact with a sticking or driven friction row reaches the cone
        (its rows saturate), and at which a saturated contact's ``a_T · d̂`` turns positive (it leaves)."""
        steps = []
        for q in np.flatnonzero(self.is_normal):
            rows = self.state[q + 1 : q + 3]
            if rows[0] == SATURATED:
                heading = -self.slip[q + 1 : q + 3]
                rate = da[q + 1 : q + 3] @ heading
                if rate > 0.0:
                    steps.append((max(-(self.a[q + 1 : q + 3] @ heading) / rate, 0.0), q + 1, UNSET))
            elif self.state[q] == CLAMPED and (STICKING in rows or q + 1 <= driver <= q + 2):
                s = self._cone_step(q, df)
                if s is None:
                    continue
                if q + 1 <= driver <= q + 2:  # the driver's own contact saturating ends the drive, if it got there
                    if sign * (self.f[driver] + s * df[driver]) >= 0.0:  # by pushing against its acceleration
                        steps.append((s, driver, SATURATED))
                else:
                    steps.append((s, q + 1, SATURATED))
        return steps

    def max_step(self, driver, sign, df, da):
        """Baraff's ``maxstep``: ``(s, row, new state)`` of the first state change along ``(df, da)``, or None."""
        f, a, steps = self.f, self.a, []
        if self.is_normal[driver]:
            if da[driver] > 0.0:
                steps.append((max(-a[driver] / da[driver], 0.0), driver, CLAMPED))
        else:
            if a[driver] * da[driver] < 0.0:
                steps.append((max(-a[driver] / da[driver], 0.0), driver, STICKING))
            if not self.cone:
                steps += self._bound_steps(driver, df, [(sign, UPPER if sign > 0 else LOWER)])
            elif abs(f[driver]) > self.tol and f[driver] * df[driver] < 0.0:  # a release: done at zero
                steps.append((max(-f[driver] / df[driver], 0.0), driver, RELEASED))
        for i in np.flatnonzero(self.state == CLAMPED):
            if df[i] < 0.0:
                steps.append((max(-f[i] / df[i], 0.0), i, UNCLAMPED))
        for i in np.flatnonzero(self.state == UNCLAMPED):
            if da[i] < 0.0:
                steps.append((max(-a[i] / da[i], 0.0), i, CLAMPED))
        if self.cone:
            steps += self._cone_steps(driver, sign, df, da)
        else:
            for p in np.flatnonzero(self.state == STICKING):
                steps += self._bound_steps(p, df, [(1.0, UPPER), (-1.0, LOWER)])
        for p in np.flatnonzero(((self.state == UPPER) & (da > 0.0)) | ((self.state == LOWER) & (da < 0.0))):
            steps.append((max(-a[p] / da[p], 0.0), p, STICKING))
        return min(steps, key=lambda step: (step[0], step[1])) if steps else None

    def _set(self, rows: slice, value) -> None:
        """``f[rows] = value`` with ``a`` kept equal to ``A f + b``."""
        change = value - self.f[rows]
        self.f[rows] += change
        self.a += self.A[:, rows] @ np.atleast_1d(change)

    def settle(self, row: int, state: int) -> None:
        """Row ``row`` enters ``state``; its defining equation is made exact (round-off of the step). A friction
        row of a cone contact saturating or leaving the cone takes its contact's other row along."""
        if self.cone and not self.is_normal[row] and (state == SATURATED or self.state[row] == SATURATED):
            q = self.normal[row]
            if state == SATURATED:  # onto the cone exactly, ``a`` following
                ft = self.f[q + 1 : q + 3].copy()
                heading = ft / max(float(np.linalg.norm(ft)), 1e-300)
                self.slip[q + 1 : q + 3] = -heading
                self._set(slice(q + 1, q + 3), self.mu[row] * self.f[q] * heading)
            self.state[q + 1 : q + 3] = state
            return
        if state == RELEASED:
            self._set(slice(row, row + 1), 0.0)
            return
        self.state[row] = state
        if state in (CLAMPED, STICKING):
            self.a[row] = 0.0
        elif state == UNCLAMPED:
            self.f[row] = 0.0
        elif state in (UPPER, LOWER):
            self.f[row] = (1.0 if state == UPPER else -1.0) * self.mu[row] * self.f[self.normal[row]]

    def cone_holds(self) -> bool:
        """The seed's conditions at every contact, to round-off: normal complementarity (eq. 15), the friction inside
        its cone and on it wherever the contact accelerates along the ground, never along that acceleration (eqs. 16
        and 21)."""
        F, acc = self.f.reshape(-1, 3), self.a.reshape(-1, 3)
        mu, tol = self.mu[0::3], 1e-9 * max(1.0, float(np.abs(self.f).max()), float(np.abs(self.a).max()))
        size = np.linalg.norm(F[:, 1:], axis=1)
        normal = (F[:, 0] >= -tol) & (acc[:, 0] >= -tol) & (np.abs(F[:, 0] * acc[:, 0]) <= tol * tol + tol)
        inside = size <= mu * F[:, 0] + tol
        moving = np.linalg.norm(acc[:, 1:], axis=1) > tol
        saturated = ~moving | (np.abs(size - mu * F[:, 0]) <= tol)
        opposed = np.einsum("ij,ij->i", F[:, 1:], acc[:, 1:]) <= tol
        return bool(np.all(normal & inside & saturated & opposed))

    def violated(self) -> tuple[int, float] | None:
        """The next row to drive ``(row, sign)``, or None when every condition holds. Unprocessed normal rows that
        already separate are settled as unclamped on the way."""
        tol = self.tol
        for i in np.flatnonzero(self.is_normal & (self.state == UNSET)):
            if self.a[i] < -tol:
                return int(i), 1.0
            self.state[i] = UNCLAMPED
        unset = np.flatnonzero(~self.is_normal & (self.state == UNSET))
        if self.cone:  # a contact that left the cone: every row back to zero first, then established
            pressed = unset[(self.state[self.normal[unset]] == CLAMPED) & (self.f[self.normal[unset]] > tol)]
            for p in pressed[np.abs(self.f[pressed]) > tol]:
                return int(p), -float(np.sign(self.f[p]))
        for p in unset:
            q = self.normal[p]
            if self.state[q] != CLAMPED or self.f[q] <= tol:
                continue  # no normal force: f = 0 is the friction's answer (its value stays as it is)
            if abs(self.a[p]) <= tol:
                self.state[p] = STICKING
                continue
            return int(p), -float(np.sign(self.a[p]))
        return None


def friction_pivoting(
    A, b, mu, stride: int = 2, slip=None, max_pivots: int = 0, cone: bool = False
) -> FrictionPivotingResult:
    """Forces ``f`` with ``a = A f + b`` meeting the normal and Coulomb friction conditions row by row (module
    docstring). ``A`` (n, n), ``b`` (n,), ``n = m stride``, rows ``[normal, friction 1, ...]`` per contact; ``mu``
    (m,); ``slip`` (m, stride − 1): each sliding contact's unit slip direction (zeros: static friction), None: all
    static. ``max_pivots``: default ``20 n``. ``cone``: static friction in Coulomb's cone, the seed's 3D method
    (``stride`` 3), instead of a box per tangent."""
    if cone and stride != 3:
        raise ValueError("the friction cone needs stride 3 (a normal and two tangent rows per contact)")
    problem = _Problem(A, b, mu, stride, slip, cone)
    limit, pivots = max_pivots or 20 * problem.n, 0
    last_zero_step: tuple[int, int] | None = None  # (row, state it left) of the last step of zero length
    while True:
        drive = problem.violated()
        if drive is None:
            status = SOLVED if not cone or problem.cone_holds() else CONE_UNMET
            return FrictionPivotingResult(problem.f, problem.a, pivots, status)
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
