"""SolverBase: what every rigid contact solver shares (free motion, contact rows, warm start, integration)."""

from __future__ import annotations

import math

import numpy as np

from ... import config
from ...contact_solvers.kernels import solve_pgs
from ...contact_solvers.merit_history import merit_squared
from ...contact_solvers.rows import accumulate_impulses, accumulate_spin_impulses, assemble_delassus, row_operator
from ...contact_solvers.shock_propagation import shock_propagation
from ...enums import FrictionSet, SolverStatus
from ..contact_rows import (
    SPIN_COLUMNS,
    compute_contact_rows,
    compute_spin_rows,
    match_previous_contacts,
    store_spin_impulses,
    store_world_impulses,
    warm_start_impulses,
    warm_start_spin,
)
from ..contacts import Contacts
from ..control import Control
from ..integrate import compute_free_velocities, finish_step, integrate_positions
from ..model import Model
from ..position_correction import position_correction_targets
from ..state import State
from .joint_step import JointStep

JOINTED_SPLIT_IMPULSE = True
"""The split impulse's default in a scene with joints. With a Baumgarte bias a body the joints' projection pulled
into the ground (the bottom course of a glued wall as the wall above settles) is pushed out with real velocity,
which the joints pass on to their neighbours: a 500-piece wall hit by a ball came apart at 10 sweeps (475 pieces
loose against 16 with the split impulse, Bullet's 21)."""


class SolverBase:
    """Semi-implicit Newton–Euler step with velocity-level contact impulses.

    ``step`` writes only ``state_out``, ``contacts.contact_impulse``/``contact_frame`` and the
    solver's own scratch (allocated once here).
    """

    friction_set = FrictionSet.NONE
    """BOX: the solver enforces every contact's set as its box (BLCP); NONE: each contact's own set."""
    supports_spin = False
    """Whether the solver enforces torsional (Coulomb–Contensou) friction rows."""
    sweeps_contacts = True
    """Whether the solve sweeps the contacts' impulses (and can record their merit after each sweep)."""

    def __init__(
        self,
        model: Model,
        *,
        iterations: int = 100,
        tolerance: float = 1e-6,
        erp: float = config.DEFAULT_ERP,
        penetration_slop: float = config.DEFAULT_PENETRATION_SLOP,
        restitution_threshold: float = config.DEFAULT_RESTITUTION_THRESHOLD,
        warm_start: bool = True,
        warm_start_factor: float = config.DEFAULT_WARM_START_FACTOR,
        split_impulse: bool | None = None,
        normals_first: bool = config.DEFAULT_NORMALS_FIRST,
        accelerate: bool = config.DEFAULT_ACCELERATE,
        shock_propagation: bool = config.DEFAULT_SHOCK_PROPAGATION,
    ):
        """Args:
        iterations: maximum sweeps per step (rejected PROX sweeps included).
        tolerance: stop when the largest impulse change of a sweep is below ``tolerance`` times
            the largest impulse [dimensionless].
        erp: Baumgarte error-reduction parameter in [0, 1] (course eq. 59).
        penetration_slop: penetration left uncorrected [m].
        restitution_threshold: approach speed below which contacts do not bounce [m/s].
        warm_start: start from the previous step's impulses of matching contacts.
        warm_start_factor: fraction of those impulses to start from, in [0, 1].
        split_impulse: remove penetration with pseudo velocities that move positions only
            (:mod:`..position_correction`) instead of a Baumgarte bias in the velocity solve. None: on in a scene
            with joints (:data:`JOINTED_SPLIT_IMPULSE`), else ``config.DEFAULT_SPLIT_IMPULSE``.
        normals_first: Gauss–Seidel sweeps (PGS and the split impulse's) update every normal row before any
            friction row.
        accelerate: projected Gauss–Seidel sweeps (PGS and the split impulse's) take conjugate-gradient steps
            (:func:`...contact_solvers.kernels.solve_pgs`).
        shock_propagation: after each solve, sweep the contacts again layer by layer from the ground up, each
            layer resting on a frozen layer below (:mod:`...contact_solvers.shock_propagation`): tall stacks stand
            at few sweeps. Contacts only: joints keep their own solve.
        """
        if iterations < 1:
            raise ValueError("iterations must be at least 1")
        if not tolerance >= 0.0:
            raise ValueError("tolerance must be >= 0")
        self.model = model
        self.iterations = int(iterations)
        self.tolerance = float(tolerance)
        self.erp = float(erp)
        self.penetration_slop = float(penetration_slop)
        self.restitution_threshold = float(restitution_threshold)
        if not 0.0 <= warm_start_factor <= 1.0:
            raise ValueError("warm_start_factor must lie in [0, 1]")
        self.warm_start = bool(warm_start)
        self.warm_start_factor = float(warm_start_factor)
        if split_impulse is None:
            split_impulse = JOINTED_SPLIT_IMPULSE if model.joint_count else config.DEFAULT_SPLIT_IMPULSE
        self.split_impulse = bool(split_impulse)
        self.normals_first = bool(normals_first)
        self.accelerate = bool(accelerate)
        self.shock_propagation = bool(shock_propagation)
        self.last_shock_layers = 0
        """Layers the last step's shock-propagation pass swept (0 without the pass)."""
        self._allocate(model.body_count, model.contact_max)
        self.has_spin = bool(model.has_spin_friction and self.supports_spin)
        """True when this solve enforces torsional friction (the model has it and the solver supports it)."""
        self._result = np.zeros(3)
        self.last_iterations = 0
        """Sweeps used by the last step."""
        self.last_residual = 0.0
        """Final merit (largest impulse change of the last sweep) of the last step [N·s]."""
        self.last_rejections = 0
        """Rejected sweeps (PROX r-factor back-offs) in the last step."""
        self.last_status = SolverStatus.NONE
        """Why the last solve stopped."""
        self.last_correction_sweeps = 0
        """Sweeps of the last step's split-impulse position correction."""
        self.record_merit_history = False
        """Set before a step to have it record FCLIB's merit after every sweep (:attr:`last_merit_history`)."""
        self.last_merit_history = np.zeros(0)
        """FCLIB's merit after each sweep of the last step's contact solve (its :meth:`contact_merit` had the
        solve stopped there), shape (sweeps,); empty unless :attr:`record_merit_history` was set or without
        contacts. The shock-propagation pass after the solve is not in it."""
        self._merit_history = np.zeros(self.iterations)
        self._no_merit_history = np.zeros(0)
        self.joints = JointStep(model) if model.joint_count else None
        """The joints' rows, impulses and breaks (:mod:`.joint_step`); None for a scene without joints."""
        self._joint_bundle = None if self.joints is None else self.joints.bundle
        """What the contact kernels solve in their sweeps besides the contacts: this scene's joints, or None (the
        kernels' specialization for None carries no joint code, so a scene without joints compiles none)."""

    def _allocate(self, nb: int, nc: int) -> None:
        """The step's scratch, once: per body (``nb``) and per contact slot (``nc``); never resized."""
        self._inv_inertia_world = np.zeros((nb, 3, 3))
        self._vel_free = np.zeros((nb, 3))
        self._omega_free = np.zeros((nb, 3))
        self._dv = np.zeros((nb, 3))
        self._dw = np.zeros((nb, 3))
        self._pseudo_vel = np.zeros((nb, 3))
        self._pseudo_omega = np.zeros((nb, 3))
        self._pseudo_impulse = np.zeros((nc, 3))
        self._pseudo_b = np.zeros((nc, 3))
        self._pseudo_result = np.zeros(3)
        self._conjugate = np.zeros((2, nc if self.accelerate else 0, 3))
        self._conjugate_body = np.zeros((4, nb, 3))
        self._rc0 = np.zeros((nc, 3, 3))
        self._rc1 = np.zeros((nc, 3, 3))
        self._irc0 = np.zeros((nc, 3, 3))
        self._irc1 = np.zeros((nc, 3, 3))
        self._D = np.zeros((nc, 3, 3))
        self._b = np.zeros((nc, 3))
        self._prev_key = np.zeros(nc, np.int64)
        self._prev_impulse_world = np.zeros((nc, 3))
        self._prev_point = np.zeros((nc, 3))
        self._prev_count = 0
        self._prev_used = np.zeros(nc, np.bool_)
        self._match = np.full(nc, -1, np.int64)
        self._row_spin = np.zeros((nc, SPIN_COLUMNS))
        self._prev_torque_world = np.zeros((nc, 3))
        self._saved_spin = np.zeros(nc)
        self._body_layer = np.zeros(nb, np.int64)
        self._contact_layer = np.zeros(nc, np.int64)
        self._layer_order = np.zeros(nc, np.int64)

    def _solve(self, contacts: Contacts) -> None:
        raise NotImplementedError

    def _rows(self, contacts: Contacts, rhs: np.ndarray | None = None) -> tuple:
        """This step's matrix-free Delassus operator (:func:`row_operator`) for the row solvers.

        ``rhs`` (c, 3) [m/s]: the constant velocity term, this step's ``b`` unless given (the split impulse's targets).
        """
        return row_operator(
            contacts.contact_body0, contacts.contact_body1, self.model.body_inv_mass,
            contacts.contact_frame, self._rc0, self._rc1, self._irc0, self._irc1, self._b if rhs is None else rhs,
        )  # fmt: skip

    def _correct_positions(self, contacts: Contacts, dt: float) -> None:
        """Split impulse (:mod:`..position_correction`): pseudo velocities by a box-friction PGS on this step's rows."""
        n = contacts.contact_count
        position_correction_targets(contacts.contact_gap, n, self.erp, self.penetration_slop, dt, self._pseudo_b)
        rows = self._rows(contacts, self._pseudo_b)
        self._pseudo_impulse[:n] = 0.0
        self._pseudo_vel[:] = 0.0
        self._pseudo_omega[:] = 0.0
        solve_pgs(
            rows, n, contacts.contact_mu4, self._D, self._row_spin, False, self.normals_first, self.iterations,
            self.tolerance,
            self._pseudo_impulse, contacts.contact_spin_impulse, self._pseudo_vel, self._pseudo_omega,
            self._pseudo_result, self._conjugate, self._conjugate_body, None, self._no_merit_history,
        )  # fmt: skip
        self.last_correction_sweeps = int(self._pseudo_result[0])

    def _solve_contacts(self, state_in: State, contacts: Contacts, n: int, horizon: float) -> None:
        """The ``n`` contacts' rows, warm start, solve and split-impulse correction of one step; ``horizon`` [s]: how
        long the new velocities move the poses (:meth:`step`), the time the rows' bias closes a gap in."""
        m = self.model
        compute_contact_rows(
            m.body_inv_mass, state_in.body_pos, state_in.body_vel, state_in.body_omega,
            self._inv_inertia_world, self._vel_free, self._omega_free,
            contacts.contact_body0, contacts.contact_body1, contacts.contact_point, contacts.contact_normal,
            contacts.contact_gap, contacts.contact_restitution,
            contacts.contact_tangent_fixed, contacts.contact_tangent_hint, n, m.contact_margin,
            0.0 if self.split_impulse else self.erp, self.penetration_slop, self.restitution_threshold, horizon,
            contacts.contact_frame, self._rc0, self._rc1, self._irc0, self._irc1, self._D, self._b,
        )  # fmt: skip
        if self.warm_start:
            match_previous_contacts(
                contacts.contact_key, contacts.contact_point, n, self._prev_key, self._prev_point,
                self._prev_count, m.contact_margin, self._prev_used, self._match,
            )  # fmt: skip
            warm_start_impulses(
                self._match, n, contacts.contact_frame, contacts.contact_friction_set, contacts.contact_mu4,
                self._prev_impulse_world, self.friction_set == FrictionSet.BOX, self.warm_start_factor,
                contacts.contact_impulse,
            )  # fmt: skip
        else:
            contacts.contact_impulse[:n] = 0.0
        accumulate_impulses(
            contacts.contact_body0, contacts.contact_body1, n, contacts.contact_impulse, m.body_inv_mass,
            contacts.contact_frame, self._irc0, self._irc1, self._dv, self._dw,
        )  # fmt: skip
        contacts.contact_spin_impulse[:n] = 0.0
        if self.has_spin:
            compute_spin_rows(
                self._inv_inertia_world, self._omega_free, contacts.contact_body0, contacts.contact_body1,
                contacts.contact_frame, contacts.contact_mu_spin, self._D, n, self._row_spin,
            )  # fmt: skip
            if self.warm_start:
                warm_start_spin(
                    self._match, contacts.contact_key, n, contacts.contact_frame, contacts.contact_impulse,
                    self._row_spin, self._prev_key, self._prev_torque_world, contacts.contact_spin_impulse,
                )  # fmt: skip
                accumulate_spin_impulses(
                    contacts.contact_body0, contacts.contact_body1, n, contacts.contact_spin_impulse,
                    self._row_spin, self._dw,
                )  # fmt: skip
        if self.joints is not None:  # the joints' warm start joins the contacts' in the shared accumulators
            self._dv += self.joints.dv
            self._dw += self.joints.dw
        self._solve(contacts)
        if self.shock_propagation:
            self.last_shock_layers = shock_propagation(
                self._rows(contacts), n, contacts.contact_friction_set, contacts.contact_mu4,
                self.friction_set == FrictionSet.BOX, config.SHOCK_PROPAGATION_SWEEPS,
                self._body_layer, self._contact_layer, self._layer_order, contacts.contact_impulse, self._dv, self._dw,
            )  # fmt: skip
        self.last_iterations = int(self._result[0])
        self.last_residual = float(self._result[1])
        self.last_rejections = int(self._result[2])
        self.last_merit_history = self._finish_merit_history(n)
        reached = self.last_iterations < self.iterations or self.last_residual <= self.tolerance * max(
            float(np.abs(contacts.contact_impulse[:n]).max()), 1e-300
        )
        self.last_status = SolverStatus.ABSOLUTE if reached else SolverStatus.MAX_ITERATIONS
        store_world_impulses(
            contacts.contact_key, contacts.contact_point, n, contacts.contact_frame, contacts.contact_impulse,
            self._prev_key, self._prev_point, self._prev_impulse_world,
        )  # fmt: skip
        if self.has_spin:
            store_spin_impulses(n, contacts.contact_frame, contacts.contact_spin_impulse, self._prev_torque_world)
        if self.split_impulse:
            self._correct_positions(contacts, horizon)

    def _merit_history_out(self) -> np.ndarray:
        """The array the kernels write the per-sweep merit into: room for every sweep when this step records it,
        none otherwise (the kernels then skip it)."""
        return self._merit_history if self.record_merit_history else self._no_merit_history

    def _finish_merit_history(self, n: int) -> np.ndarray:
        """The kernels' sums of squared natural-map errors as FCLIB's merit per sweep (:mod:`...contact_solvers.
        merit_history`): root, over ``1 + sqrt(|q|)`` as :meth:`contact_merit` scales it."""
        if not (self.record_merit_history and self.sweeps_contacts):
            return np.zeros(0)
        return np.sqrt(self._merit_history[: self.last_iterations]) / self._fclib_scale(n)

    def _fclib_scale(self, n: int) -> float:
        """FCLIB's ``1 + sqrt(|q|)`` of this step's ``n`` contacts, the merit's denominator."""
        q = self._b[:n]
        return 1.0 + float(np.sqrt(np.sqrt((q * q).sum())))

    def contact_merit(self, contacts: Contacts) -> float:
        """FCLIB's merit of the last step's contact solve, read after :meth:`step`: the natural-map error of the
        impulses ``r`` and the contact velocities ``u = W r + q`` they leave, over ``1 + sqrt(|q|)`` (as
        :func:`...contact_solvers.fclib.local_merit` judges :meth:`local_problem`, without assembling ``W``: ``u``
        is read from the body accumulators, so the joints' and the shock propagation's impulses count). Zero
        without contacts; the Coulomb cone of each contact's first coefficient, whatever the friction set."""
        n = contacts.contact_count
        if n == 0:
            return 0.0
        squared = merit_squared(
            self._rows(contacts), n, contacts.contact_mu4, contacts.contact_impulse, self._dv, self._dw
        )  # the kernel that records the per-sweep history (PROX sums it island by island: equal to rounding)
        return math.sqrt(squared) / self._fclib_scale(n)

    def local_problem(self, contacts: Contacts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The last step's contact problem as FCLIB's local formulation ``u = W r + q``, read after :meth:`step`:
        ``(W (3m, 3m) [m/(N·s)], q (3m,) [m/s], mu (m,))``, each contact's rows ``[normal, tangent 1, tangent 2]``.
        ``q`` holds the step's free contact velocity with its bias (Baumgarte or restitution); ``mu`` the first
        coefficient of each contact's friction (isotropic Coulomb, as FCLIB states the problem)."""
        n = contacts.contact_count
        W, q = np.zeros((3 * n, 3 * n)), np.zeros(3 * n)
        nb = self.model.body_count
        assemble_delassus(self._rows(contacts), n, np.zeros((nb, 3)), np.zeros((nb, 3)), W, q)
        return W, q, contacts.contact_mu4[:n, 0].copy()

    def _no_contacts(self) -> None:
        """A step without contacts: no impulses, no pseudo velocities, and the statistics say so."""
        self._dv[:] = 0.0
        self._dw[:] = 0.0
        self.last_iterations = 0
        self.last_residual = 0.0
        self.last_rejections = 0
        self.last_status = SolverStatus.NO_CONTACTS
        self.last_merit_history = np.zeros(0)
        self._pseudo_vel[:] = 0.0
        self._pseudo_omega[:] = 0.0

    def _joints_alone(self) -> None:
        """A step with joints and no contacts: joint sweeps to the tolerance; the statistics count them."""
        joints = self.joints
        assert joints is not None
        sweeps, _ = joints.sweeps(self.model, self._dv, self._dw, self.iterations, self.tolerance)
        self._dv += joints.dv
        self._dw += joints.dw
        self.last_merit_history = np.zeros(0)
        self.last_iterations = sweeps
        self.last_status = SolverStatus.ABSOLUTE if sweeps < self.iterations else SolverStatus.MAX_ITERATIONS

    def step(self, state_in: State, state_out: State, control: Control, contacts: Contacts, dt: float,
             horizon: float | None = None) -> None:  # fmt: skip
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` using ``contacts`` found at ``state_in``.

        ``horizon`` [s]: how long the new velocities move the poses, ``dt`` (semi-implicit Euler, the default) or
        ``dt / 2`` when ``state_in`` holds the poses of the Moreau mid-point (:func:`..integrate.drift_to_midpoint`,
        course eq. 246–247): the positions end at ``q^{t+1/2} + (h/2) u^{t+1}``, and the contacts' bias and the
        joints' projection close their gaps in that time."""
        m = self.model
        horizon = dt if horizon is None else float(horizon)
        compute_free_velocities(
            m.body_kind, m.body_inv_mass, m.body_inertia_local, m.body_inv_inertia_local,
            m.body_linear_damping, m.body_angular_damping, state_in.body_quat, state_in.body_vel, state_in.body_omega,
            control.body_target_pos, control.body_target_quat, state_in.body_pos, m.gravity, dt, horizon,
            self._inv_inertia_world, self._vel_free, self._omega_free,
        )  # fmt: skip
        n = contacts.contact_count
        if self.joints is not None:
            self.joints.begin(m, state_in, self._inv_inertia_world, self._vel_free, self._omega_free, dt,
                              self.warm_start_factor if self.warm_start else 0.0)  # fmt: skip
        if n:
            self._solve_contacts(state_in, contacts, n, horizon)
        else:
            self._no_contacts()
            if self.joints is not None:
                self._joints_alone()
        self._prev_count = n
        if self.joints is not None:
            self.joints.finish(m, m.joint_break_threshold)
        finish_step(
            m.body_kind, self._vel_free, self._omega_free, self._dv, self._dw, state_out.body_vel, state_out.body_omega
        )
        integrate_positions(
            m.body_kind, state_in.body_pos, state_in.body_quat, state_out.body_vel, state_out.body_omega,
            control.body_target_pos, control.body_target_quat, self._pseudo_vel, self._pseudo_omega, horizon,
            state_out.body_pos, state_out.body_quat,
        )  # fmt: skip
        if self.joints is not None:
            self.joints.project(m, state_out, control, horizon, self.iterations)
