"""The joints' part of a rigid step: rows, the warm start, breaking and the projection.

A step with contacts solves the joints inside the contact solver's own iteration: the solver's kernel takes
:attr:`JointStep.bundle` and ends each of its sweeps with one joint pass on the same body accumulators
(:func:`...contact_solvers.joint_sweep.joint_pass`), so contacts and joints converge together under one test
(blocked Gauss–Seidel with each joint a block, or the equality rows of all joints at once by the scene-wide
factor). A step without contacts runs joint sweeps alone. A scene without joints hands the kernels None: their
specialization for None carries no joint code (numba prunes the joint branches), so it compiles as before.
"""

from __future__ import annotations

import numpy as np

from ...contact_solvers.joint_block import JOINT_ROWS
from ...contact_solvers.joint_sweep import break_joints, solve_joint_sweeps, warm_start_joints
from ..integrate import compute_free_velocities
from ..joint_global import collect_equality_rows, envelope_capacity, factor_global, global_scratch
from ..joint_projection import project_joints, project_joints_global
from ..joint_rows import (
    compute_joint_rows,
    joint_errors,
    joint_model_arrays,
    joint_row_arrays,
    joint_scratch,
)
from ..joint_stiffness import stiffen_inertias

RELINEARIZE = True
"""When the projection along the step's directions diverges, rebuild the rows at the new poses and project again
(:meth:`JointStep.project`)."""
SHAKE_MOVE_RATIO = 1.5
"""A projection along the step's own directions (SHAKE) is kept when no body moved by more than this many times
the largest joint error it corrected; else the rows are rebuilt at the new poses (:meth:`JointStep.project`)."""
DIRECT_SOLVE = True
"""Solve the joints' equality rows all at once when the envelope allows (:mod:`..joint_global`); False keeps
Gauss–Seidel over the blocks (tests compare the two)."""
VELOCITY_REGULARIZATION = 1e-13
"""Each diagonal of the velocity rows' scene-wide ``K`` is raised by this fraction of itself before factoring."""
GEOMETRIC_STIFFNESS = True
"""Raise the inertia of bodies whose joints carry large loads by the step's geometric stiffness
(:meth:`JointStep._stiffen`); False leaves the inertias alone (tests compare the two)."""
PROJECTION_PASSES = 50
"""Nonlinear Gauss–Seidel passes of the post-step projection at most."""
SWEEPS_PER_PROJECTION_PASS = 5
"""The joint-by-joint projection runs at most one pass per this many sweeps the scene gives its velocity solve (at
least one, at most ``PROJECTION_PASSES``): its passes are Gauss–Seidel over the same joint graph, and on a wide,
redundant one (a glued wall) neither converges in a few. With 50 passes whatever the sweeps, the benchmark's
500-piece wall at Bullet's 10 sweeps spent five times the step's cost in them; 2 passes hold its joints within
0.5 mm while it stands (Bullet's: 4 mm). The scene-wide direct projection (chains) converges in a few passes and
keeps ``PROJECTION_PASSES``."""
PROJECTION_TOLERANCE = 1e-7
"""The projection stops once no joint is off by more than this [m | rad]."""
PROJECTION_STALL = 0.95
"""The joint-by-joint projection also stops once the largest errors are below ``PROJECTION_SETTLED`` and a pass
leaves them above this fraction of the last pass's: on a wide graph of redundant joints (a glued wall at rest)
Gauss–Seidel takes off a few percent per pass (another 45 passes for a tenfold cut), and the next step goes on from
where this one stops."""
PROJECTION_SETTLED = 1e-5
"""Errors [m | rad] below which a stalled projection may stop; larger ones (a wall hit by a ball) get every pass
the scene's sweeps allow (``SWEEPS_PER_PROJECTION_PASS``)."""
MAX_MOVE = 0.2
"""Largest move of a body in one projection pass [m]."""
MAX_TURN = 0.5
"""Largest turn of a body in one projection pass [rad]."""


def _bundle(model, step_scratch, rows, lam, glob, nj: int, islands: int) -> tuple:
    """The joint bundle the contact kernels take (layout in :mod:`...contact_solvers.joint_sweep`)."""
    nb = model.body_count
    return (
        model.joint_body, model.joint_passes, model.body_inv_mass, rows, lam, np.zeros((2, nb, 3)),
        step_scratch[0], step_scratch[1], glob, np.arange(nj, dtype=np.int64), np.zeros(islands, np.int64),
        np.zeros((nj, JOINT_ROWS)), np.zeros((2, nj, JOINT_ROWS)), np.zeros(nj, np.int64), np.zeros(nj + 1, np.int64),
        np.zeros(nj, np.int64), np.zeros(nb, np.int64), np.zeros(islands + 1, np.int64), np.zeros((2, nj)),
    )  # fmt: skip


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
        self.bundle = _bundle(model, (self._vec, self._delta), self.rows, self.impulse, self.glob, nj,
                              model.contact_max + 2)  # fmt: skip
        """What the contact kernels take to solve the joints in their sweeps (:mod:`...contact_solvers.joint_sweep`)."""
        self.island_joint = self.bundle[13]
        """Each joint's contact island (:func:`...contact_solvers.islands.contact_joint_islands`)."""
        self._joint_index = np.arange(nj + 1)
        nb = model.body_count
        self._inv_inertia_end = np.zeros((nb, 3, 3))
        self._vel_end = np.zeros((nb, 3))
        self._omega_end = np.zeros((nb, 3))
        self._error_before = np.zeros(2)
        self._saved = (np.zeros((nb, 3)), np.zeros((nb, 4)), np.zeros((nb, 3)), np.zeros((nb, 3)))
        self._stiffness_scratch = (np.zeros(nb), np.zeros(nb), np.zeros((nb, 3, 3)))
        self.last_sweeps = 0
        self.last_projection_passes = 0
        """Passes of the last step's projection."""

    def begin(self, model, state_in, inv_inertia_world, vel_free, omega_free, dt, warm_factor) -> None:
        """Rows at the start poses and the warm start (``dv``, ``dw`` then hold the joints' start impulses)."""
        if GEOMETRIC_STIFFNESS:
            self._stiffen(model, inv_inertia_world, dt)
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
            self.bundle[14][:] = np.searchsorted(self.glob[0][: count[0]], self._joint_index)
        warm_start_joints(model.joint_body, model.body_inv_mass, self.rows, warm_factor, self.impulse, self.dv, self.dw)

    def _stiffen(self, model, inv_inertia_world, dt) -> None:
        """Raise each jointed body's inertia by ``h^2 k_g`` for the step (the geometric stiffness of its joints under
        the last step's loads, :mod:`..joint_stiffness`), in place in ``inv_inertia_world`` (nb, 3, 3)."""
        stiffen_inertias(
            model.joint_body, model.joint_frame_pos, self.broken, self.impulse, model.body_inv_mass, dt,
            inv_inertia_world, *self._stiffness_scratch,
        )  # fmt: skip

    def sweeps(self, model, dv_c, dw_c, sweeps: int, tolerance: float) -> tuple[int, float]:
        """Joint sweeps with the contacts' accumulators held (:func:`solve_joint_sweeps`)."""
        done, first = solve_joint_sweeps(
            model.joint_body, model.joint_passes, model.body_inv_mass, self.rows, sweeps, tolerance, self.impulse,
            dv_c, dw_c, self.dv, self.dw, self._vec, self._delta, self.glob,
            (self.bundle[15], self.bundle[16], self.bundle[18]),
        )  # fmt: skip
        self.last_sweeps += int(done)
        return int(done), float(first)

    def finish(self, model, threshold) -> None:
        """Breaking after the step's solve (Bullet's rule, :func:`break_joints`)."""
        before = self.broken.copy()
        if break_joints(self.rows, self.impulse, threshold, self.broken):
            self.last_broken = [int(j) for j in np.flatnonzero(self.broken & ~before)]
        else:
            self.last_broken = []

    def relinearize(self, model, state_out, control, dt: float) -> None:
        """The rows' directions and effective masses again, at the step's new poses, for the projection.

        The projection's passes are chord Newton iterations on ``C(x) = 0`` with a fixed ``K = J M^-1 J^T``; with
        the start-of-step ``J`` the error of that fixed ``K`` grows with the links' turn in the step, and the condition
        number of ``K`` (which grows as the square of a chain's length) amplifies it: a 300-link chain swinging
        at 240 Hz diverges. At the new poses the first pass is a Newton step and the rest contract fast.
        """
        compute_free_velocities(
            model.body_kind, model.body_inv_mass, model.body_inertia_local, model.body_inv_inertia_local,
            model.body_linear_damping, model.body_angular_damping, state_out.body_quat, state_out.body_vel,
            state_out.body_omega, control.body_target_pos, control.body_target_quat, state_out.body_pos,
            model.gravity, dt, dt, self._inv_inertia_end, self._vel_end, self._omega_end,
        )  # fmt: skip
        compute_joint_rows(
            self.model_arrays, state_out.body_pos, state_out.body_quat, state_out.body_vel, state_out.body_omega,
            model.body_inv_mass, self._inv_inertia_end, self._vel_end, self._omega_end, self.broken, dt, self.rows,
        )  # fmt: skip

    def _project_global(self, model, state_out, dt: float, passes: int) -> int:
        """:func:`project_joints_global` with this step's rows: passes done, or ``-1 - passes kept`` on failure."""
        return project_joints_global(
            self.model_arrays, self.rows, model.body_inv_mass, self.broken, passes, PROJECTION_TOLERANCE,
            MAX_MOVE, MAX_TURN, dt, self.glob_position, self._target, state_out.body_pos, state_out.body_quat,
            state_out.body_vel, state_out.body_omega, self.error,
        )  # fmt: skip

    def _moves_in_proportion(self, state_out) -> bool:
        """Whether no body moved in the projection by more than ``SHAKE_MOVE_RATIO`` times the error it started
        from (the largest anchor gap [m] of the poses saved before it)."""
        joint_errors(self.model_arrays, self.broken, self._saved[0], self._saved[1], self._error_before)
        moved = float(np.abs(state_out.body_pos - self._saved[0]).max())
        return moved <= SHAKE_MOVE_RATIO * float(self._error_before[0]) + 1e-12

    def project(self, model, state_out, control, dt: float, sweeps: int) -> None:
        """The post-step projection of the new poses; fills :attr:`error`. ``sweeps``: the scene's sweeps per solve,
        which bound the joint-by-joint passes (``SWEEPS_PER_PROJECTION_PASS``).

        First all rows at once along the step's own directions (SHAKE, :func:`project_joints_global`). When those
        passes diverge, or converge only by moving some body more than ``SHAKE_MOVE_RATIO`` times the largest
        anchor gap they close (a long chain's soft mode, excited step after step until the chain blows up), the
        poses go back to the unprojected ones and the rows are rebuilt there (:meth:`relinearize`, Gauss–Newton),
        all at once again, then joint by joint (:func:`project_joints`). The second try's velocity share follows the
        new directions, which is no longer SHAKE and loses a little energy: it only runs where the first fails.
        """
        kept = 0
        if self.glob_position[0].shape[0]:
            if RELINEARIZE:
                self._saved[0][:] = state_out.body_pos
                self._saved[1][:] = state_out.body_quat
                self._saved[2][:] = state_out.body_vel
                self._saved[3][:] = state_out.body_omega
            done = self._project_global(model, state_out, dt, PROJECTION_PASSES)
            if done > 0 and RELINEARIZE and not self._moves_in_proportion(state_out):
                done = -1 - done  # SHAKE went along a soft mode: a large move for a small error
            if done >= 0:
                self.last_projection_passes = done
                return
            kept = -1 - done
            if RELINEARIZE:  # from the unprojected poses: the failed passes' moves may lie along a soft mode
                state_out.body_pos[:] = self._saved[0]
                state_out.body_quat[:] = self._saved[1]
                state_out.body_vel[:] = self._saved[2]
                state_out.body_omega[:] = self._saved[3]
                self.relinearize(model, state_out, control, dt)
                done = self._project_global(model, state_out, dt, PROJECTION_PASSES)
                if done >= 0:
                    self.last_projection_passes = kept + done
                    return
                kept += -1 - done
        passes = min(max(sweeps // SWEEPS_PER_PROJECTION_PASS, 1), PROJECTION_PASSES)
        self.last_projection_passes = kept + project_joints(
            self.model_arrays, self.rows, model.body_inv_mass, self.broken, passes, PROJECTION_TOLERANCE,
            PROJECTION_STALL, PROJECTION_SETTLED, MAX_MOVE, MAX_TURN, dt, state_out.body_pos, state_out.body_quat,
            state_out.body_vel, state_out.body_omega, self.error,
        )  # fmt: skip
