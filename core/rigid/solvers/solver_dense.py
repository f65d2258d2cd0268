"""SolverDense: each step's contact and joint problem assembled densely and solved by one of the study's dense
methods by name; for study, not for baking."""

from __future__ import annotations

import numpy as np

from ...contact_solvers.bilateral import MixedProblem, reduce_bilateral
from ...contact_solvers.joint_block import ROW_EQUALITY, ROW_OFF
from ...contact_solvers.joint_sweep import warm_start_joints
from ...contact_solvers.local_solvers import NORMALS_ONLY, SOLVERS, solve_local
from ...contact_solvers.rows import accumulate_impulses
from ...enums import FrictionSet, SolverStatus
from ..contacts import Contacts
from ..joints import AXIS_MOTOR, AXIS_SPRING, SPRING1
from ..model import Model
from .base import SolverBase

MAX_ROWS = 3000
"""Most contact and joint rows a step may have: ``W`` is dense (3 000 rows: 72 MB)."""


def _jacobian(model: Model, contacts: Contacts | None, n: int, rc0, rc1, joint_rows, active) -> np.ndarray:
    """``G`` (3n + p, nb, 6): each row's Jacobian on every body ``[linear, angular]`` (the contacts' rows
    ``[normal, tangent, tangent]``, then the active joint rows ``active = (joints, slots)``); the world is left out."""
    jj, rr = active
    G = np.zeros((3 * n + jj.shape[0], model.body_count, 6))
    if n:
        k, rows = np.repeat(np.arange(n), 3), np.arange(3 * n)
        d = np.tile(np.arange(3), n)
        frame = contacts.contact_frame[k, d]
        b0, b1 = contacts.contact_body0[k], contacts.contact_body1[k]
        G[rows, b1, :3] += frame
        G[rows, b1, 3:] += rc1[k, d]
        G[rows, b0, :3] -= frame
        G[rows, b0, 3:] -= rc0[k, d]
    if not jj.shape[0]:  # a scene without joints (``joint_rows`` None) or a step with none active
        return G
    J = joint_rows[1][jj, rr]  # (p, 3, 3): [linear, angular on body0, angular on body1]
    rows = 3 * n + np.arange(jj.shape[0])
    for side, sign, part in ((1, 1.0, 2), (0, -1.0, 1)):
        b = model.joint_body[jj, side]
        on = b >= 0
        G[rows[on], b[on], :3] += sign * J[on, 0]
        G[rows[on], b[on], 3:] += sign * J[on, part]
    return G


def delassus(G: np.ndarray, inv_mass: np.ndarray, inv_inertia_world: np.ndarray) -> np.ndarray:
    """``W = G M⁻¹ Gᵀ`` (rows, rows) [m/(N·s)] of :func:`_jacobian`'s ``G`` with the bodies' inverse masses (nb,)
    and world inverse inertias (nb, 3, 3), zero for kinematic bodies."""
    moved = G.copy()
    moved[:, :, :3] *= inv_mass[None, :, None]
    moved[:, :, 3:] = np.einsum("rbi,bji->rbj", G[:, :, 3:], inv_inertia_world)
    rows = G.shape[0]
    return moved.reshape(rows, -1) @ G.reshape(rows, -1).T


class SolverDense(SolverBase):
    """Every step's contacts and joints as one dense problem (``W = J M⁻¹ Jᵀ``, :func:`delassus`), its joint rows
    folded into FCLIB's local form (:mod:`...contact_solvers.bilateral`: locked axes eliminated, limits as
    frictionless contacts, motors as friction rows) and solved from zero by the named dense method of
    :data:`...contact_solvers.local_solvers.SOLVERS` to the tolerance on FCLIB's merit.

    This is how the study's methods (pivoting, Lemke, the global Newtons, the splittings) run a scene with joints.
    ``W`` is dense: at most :data:`MAX_ROWS` rows a step. No warm start (each method starts from zero, as on a
    file), no shock propagation; the joints' post-step projection is the engine's.
    """

    friction_set = FrictionSet.NONE
    sweeps_contacts = False  # the dense methods keep no per-sweep record the bake reports

    def __init__(self, model: Model, *, method: str = "prox-global", **kwargs):
        """Args:
        method: a name of :data:`...contact_solvers.local_solvers.SOLVERS`.
        kwargs: see :class:`SolverBase` (``iterations`` caps the method's iterations, ``tolerance`` is its FCLIB
            merit to reach).

        Raises:
            ValueError: an unknown method, or a motor or SPRING1 axis for a method that solves the normals alone.
        """
        super().__init__(model, **kwargs)
        if method not in SOLVERS:
            raise ValueError(f"unknown dense method {method!r}: one of {', '.join(SOLVERS)}")
        self.method = method
        self._refuse_bounded_rows()
        self.shock_propagation = False
        self.last_merit = 0.0
        """FCLIB's merit of the last step's folded problem, as the method left it."""

    def _solve(self, contacts: Contacts) -> None:
        self._solve_dense(contacts, contacts.contact_count)

    def _joints_alone(self) -> None:
        """A step without contacts: with locked rows alone the fold leaves the method nothing to solve, and the
        engine's own solve of those rows (the scene-wide factor, the same linear solve) does the step; limits and
        motors go to the method."""
        jj, rr = self._active_joint_rows()
        if (self.joints.rows[0][jj, rr] == ROW_EQUALITY).all():
            super()._joints_alone()
            return
        self._solve_dense(None, 0)
        self.last_iterations = int(self._result[0])
        self.last_residual = float(self._result[1])
        reached = self.last_residual <= self.tolerance
        self.last_status = SolverStatus.ABSOLUTE if reached else SolverStatus.MAX_ITERATIONS
        self.last_merit_history = np.zeros(0)

    def _active_joint_rows(self) -> tuple[np.ndarray, np.ndarray]:
        if self.joints is None:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.nonzero(self.joints.rows[0] != ROW_OFF)

    def _solve_dense(self, contacts: Contacts | None, n: int) -> None:
        """Assemble, fold, solve and hand the impulses back to the contacts, the joints and the body accumulators."""
        m = self.model
        jj, rr = active = self._active_joint_rows()
        rows = self.joints.rows if self.joints is not None else None
        if 3 * n + jj.shape[0] > MAX_ROWS:
            raise ValueError(f"{3 * n + jj.shape[0]} contact and joint rows in a step: the dense methods take at most "
                             f"{MAX_ROWS}; use the PGS, PROX or NEWTON solver for this scene")  # fmt: skip
        W = delassus(_jacobian(m, contacts, n, self._rc0, self._rc1, rows, active), m.body_inv_mass,
                     self._inv_inertia_world)  # fmt: skip
        q = np.zeros(W.shape[0])
        lo, hi = np.full(jj.shape[0], -np.inf), np.full(jj.shape[0], np.inf)
        if n:
            q[: 3 * n] = self._b[:n].ravel()
        if jj.shape[0]:
            kind, _, _, row_b, row_lo, row_hi, row_gamma = rows[:7]
            q[3 * n :] = row_b[jj, rr]
            W[3 * n + np.arange(jj.shape[0]), 3 * n + np.arange(jj.shape[0])] += row_gamma[jj, rr]
            boxed = kind[jj, rr] != ROW_EQUALITY
            lo[boxed], hi[boxed] = row_lo[jj, rr][boxed], row_hi[jj, rr][boxed]
        mu = contacts.contact_mu4[:n, 0] if n else np.zeros(0)
        reduction = reduce_bilateral(MixedProblem(W, q, mu, lo, hi))
        iterations, merit = 0, 0.0
        r = np.zeros(reduction.local.W.shape[0])
        if r.shape[0]:
            result = solve_local(reduction.local, self.method, self.tolerance, self.iterations)
            r, iterations, merit = result.r, result.iterations, result.merit
        r_c, lam = reduction.recover(r)
        if n:
            contacts.contact_impulse[:n] = r_c.reshape(n, 3)
            accumulate_impulses(
                contacts.contact_body0, contacts.contact_body1, n, contacts.contact_impulse, m.body_inv_mass,
                contacts.contact_frame, self._irc0, self._irc1, self._dv, self._dw,
            )  # fmt: skip
        else:
            self._dv[:] = 0.0
            self._dw[:] = 0.0
        if self.joints is not None:
            self.joints.impulse[:] = 0.0
            self.joints.impulse[jj, rr] = lam
            warm_start_joints(m.joint_body, m.body_inv_mass, rows, 1.0, self.joints.impulse, self.joints.dv,
                              self.joints.dw)  # fmt: skip
            self._dv += self.joints.dv
            self._dw += self.joints.dw
        self.last_merit = merit
        self._result[:] = (iterations, merit, 0.0)

    def _refuse_bounded_rows(self) -> None:
        """A bounded row (a motor, SPRING1) is a friction row here: a method of the normals alone cannot take it."""
        if self.method not in NORMALS_ONLY or self.joints is None:
            return
        m = self.model
        flags = m.joint_axis_flags
        spring1 = (m.joint_spring_type == SPRING1)[:, None] & ((flags & AXIS_SPRING) != 0)
        bounded = np.flatnonzero(((flags & AXIS_MOTOR) != 0).any(axis=1) | spring1.any(axis=1))
        if bounded.shape[0]:
            name = m.joint_label[int(bounded[0])]
            raise ValueError(f"joint {name!r} has a motor or a SPRING1 axis, a bounded row that the dense problem "
                             f"holds as friction, and {self.method!r} solves the normals alone: choose a method "
                             "with friction")  # fmt: skip
