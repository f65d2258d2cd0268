"""The joints' part of a rigid step: rows, the coupled solve with the contacts, breaking and the projection.

The joints keep their own accumulators ``(dv_j, dw_j)`` (:mod:`...contact_solvers.joint_sweep`); a step with
contacts alternates rounds of joint sweeps (the contacts' share held) and the scene's contact solver (the joints'
share folded into the contacts' constant velocity), warm-started from each other, until a round's joint sweep no
longer moves (block Gauss–Seidel between the two groups). Without joints none of this runs.
"""

from __future__ import annotations

import numpy as np

from ...contact_solvers.joint_block import JOINT_ROWS
from ...contact_solvers.joint_sweep import (
    break_joints,
    shift_contact_rhs,
    solve_joint_sweeps,
    warm_start_joints,
)
from ..joint_global import collect_equality_rows, envelope_capacity, factor_global, global_scratch
from ..joint_projection import project_joints, project_joints_global
from ..joint_rows import (
    compute_joint_rows,
    joint_model_arrays,
    joint_row_arrays,
    joint_scratch,
)

DIRECT_SOLVE = True
"""Solve the joints' equality rows all at once when the envelope allows (:mod:`..joint_global`); False keeps
Gauss–Seidel over the blocks (tests compare the two)."""
VELOCITY_REGULARIZATION = 1e-13
"""Each diagonal of the velocity rows' scene-wide ``K`` is raised by this fraction of itself before factoring."""
MAX_ROUNDS = 8
"""Joint/contact rounds per step at most."""
PROJECTION_PASSES = 50
"""Nonlinear Gauss–Seidel passes of the post-step projection at most."""
PROJECTION_TOLERANCE = 1e-7
"""The projection stops once no joint is off by more than this [m | rad]."""
MAX_MOVE = 0.2
"""Largest move of a body in one projection pass [m]."""
MAX_TURN = 0.5
"""Largest turn of a body in one projection pass [rad]."""


class JointStep:
    """Per-solver joint state: this step's rows, impulses, accumulators and which joints broke."""

    def __init__(self, model):
        nj, nb = model.joint_count, model.body_count
        self.model_arrays = joint_model_arrays(model)
        self.scratch = joint_scratch(nj)
        self.rows = joint_row_arrays(self.scratch)
        self.impulse = np.zeros((nj, JOINT_ROWS))
        """Row impulses of the last step [N·s | N·m·s], shape (joint_count, JOINT_ROWS)."""
        self.dv = np.zeros((nb, 3))
        self.dw = np.zeros((nb, 3))
        self.broken = np.zeros(nj, np.bool_)
        """Joints broken so far, shape (joint_count,)."""
        self.last_broken: list[int] = []
        """Joints that broke in the last step."""
        self.error = np.zeros(2)
        """Largest joint error after the last step's projection: [m, rad]."""
        capacity, entries = envelope_capacity(model) if DIRECT_SOLVE else (0, 0)
        self.glob = global_scratch(capacity, entries)
        """The equality rows' one sparse solve (:mod:`...joint_global`); no capacity: Gauss–Seidel per block."""
        self.glob_position = global_scratch(capacity, entries)
        self._target = np.zeros(capacity)
        self._vec = np.zeros(JOINT_ROWS)
        self._delta = np.zeros(JOINT_ROWS)
        self.last_sweeps = 0
        self.last_projection_passes = 0
        """Passes of the last step's projection."""

    def begin(self, model, state_in, inv_inertia_world, vel_free, omega_free, dt, warm_factor) -> None:
        """Rows at the start poses and the warm start (``dv``, ``dw`` then hold the joints' start impulses)."""
        compute_joint_rows(
            self.model_arrays, state_in.body_pos, state_in.body_quat, state_in.body_vel, state_in.body_omega,
            model.body_inv_mass, inv_inertia_world, vel_free, omega_free, self.broken, dt, self.rows,
        )  # fmt: skip
        count = self.glob[7]
        count[0] = 0
        if self.glob[0].shape[0]:
            n = collect_equality_rows(self.rows, self.glob[0], self.glob[1])
            row_joint, row_slot, layout, K, L = self.glob[:5]
            args = (model.joint_body, self.rows, model.body_inv_mass, row_joint, row_slot, n, K, L, layout)
            if n > 0 and not factor_global(*args, VELOCITY_REGULARIZATION):
                n = 0
            count[0] = max(n, 0)
        warm_start_joints(model.joint_body, model.body_inv_mass, self.rows, warm_factor, self.impulse, self.dv, self.dw)

    def sweeps(self, model, dv_c, dw_c, sweeps: int, tolerance: float) -> tuple[int, float]:
        """Joint sweeps with the contacts' accumulators held (:func:`solve_joint_sweeps`)."""
        done, first = solve_joint_sweeps(
            model.joint_body, model.joint_passes, model.body_inv_mass, self.rows, sweeps, tolerance, self.impulse,
            dv_c, dw_c, self.dv, self.dw, self._vec, self._delta, self.glob,
        )  # fmt: skip
        self.last_sweeps += int(done)
        return int(done), float(first)

    def coupled(self, solver, contacts, n: int) -> None:
        """Rounds of joint sweeps and the contact solver (module docstring); ``solver._result`` sums the sweeps."""
        m = solver.model
        base_b = solver._b[:n].copy()
        rows = solver._rows(contacts)
        contact_sweeps, rejections = 0, 0
        for round_index in range(MAX_ROUNDS):
            _, first = self.sweeps(m, solver._dv, solver._dw, solver.iterations, solver.tolerance)
            largest = max(float(np.abs(self.impulse).max()), 1e-300)
            if round_index > 0 and first <= solver.tolerance * largest:
                break
            shift_contact_rhs(rows, n, base_b, self.dv, self.dw, solver._b)
            solver._solve(contacts)
            contact_sweeps += int(solver._result[0])
            rejections += int(solver._result[2])
        solver._b[:n] = base_b
        solver._result[0] = contact_sweeps
        solver._result[2] = rejections

    def finish(self, model, threshold) -> None:
        """Breaking after the step's solve (Bullet's rule, :func:`break_joints`)."""
        before = self.broken.copy()
        if break_joints(self.rows, self.impulse, threshold, self.broken):
            self.last_broken = [int(j) for j in np.flatnonzero(self.broken & ~before)]
        else:
            self.last_broken = []

    def project(self, model, state_out, dt: float) -> None:
        """The post-step projection of the new poses (:func:`project_joints`); fills :attr:`error`."""
        kept = 0
        if self.glob_position[0].shape[0]:
            done = project_joints_global(
                self.model_arrays, self.rows, model.body_inv_mass, self.broken, PROJECTION_PASSES,
                PROJECTION_TOLERANCE, MAX_MOVE, MAX_TURN, dt, self.glob_position, self._target, state_out.body_pos,
                state_out.body_quat, state_out.body_vel, state_out.body_omega, self.error,
            )  # fmt: skip
            if done >= 0:
                self.last_projection_passes = done
                return
            kept = -1 - done
        self.last_projection_passes = kept + project_joints(
            self.model_arrays, self.rows, model.body_inv_mass, self.broken, PROJECTION_PASSES, PROJECTION_TOLERANCE,
            MAX_MOVE, MAX_TURN, dt, state_out.body_pos, state_out.body_quat, state_out.body_vel, state_out.body_omega,
            self.error,
        )  # fmt: skip
