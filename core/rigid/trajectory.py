"""Trajectory: what a simulation recorded, one entry per output frame.

The statistics every engine's result has, by the same names and meanings: ``solver_iterations`` (the most
iterations one step of the frame took; here contact-solver sweeps), ``contact_count`` (the most contacts of one
step of the frame) and ``converged`` (every step of the frame met its tolerance). Frame 0 is the initial state.
"""

from __future__ import annotations

import numpy as np


class Trajectory:
    """Per-frame body poses and solver statistics; frame 0 is the initial state."""

    def __init__(self, frame_count: int, body_count: int, joint_count: int = 0, sweeps: int = 0):
        self.frame_count = int(frame_count)
        """Number of recorded frames (including the initial one)."""
        self.frames_done = 0
        """Frames filled so far (equals ``frame_count`` once the simulation finished)."""
        self.body_pos = np.zeros((frame_count, body_count, 3))
        """Centre-of-mass positions [m], shape (frame_count, body_count, 3)."""
        self.body_quat = np.zeros((frame_count, body_count, 4))
        """Orientations (wxyz), hemisphere-continuous over time, shape (frame_count, body_count, 4)."""
        self.body_vel = np.zeros((frame_count, body_count, 3))
        """Linear velocities [m/s], shape (frame_count, body_count, 3)."""
        self.body_omega = np.zeros((frame_count, body_count, 3))
        """Angular velocities [rad/s], shape (frame_count, body_count, 3)."""
        self.contact_count = np.zeros(frame_count, np.int64)
        """Largest contact count over the frame's substeps, shape (frame_count,) (common statistic)."""
        self.contact_overflow = np.zeros(frame_count, np.int64)
        """Contacts dropped for lack of capacity over the frame's substeps, shape (frame_count,)."""
        self.solver_iterations = np.zeros(frame_count, np.int64)
        """Most contact-solver sweeps of one substep of the frame, shape (frame_count,) (common statistic)."""
        self.solver_residual = np.zeros(frame_count)
        """Largest final solver residual over the frame's substeps [N·s], shape (frame_count,)."""
        self.solver_merit = np.zeros(frame_count)
        """FCLIB's merit of the frame's last contact solve (natural-map error, one scale for every solver,
        :meth:`.solvers.base.SolverBase.contact_merit`), shape (frame_count,); 0 without contacts."""
        self.solver_merit_history = np.full((frame_count, sweeps), np.nan)
        """FCLIB's merit after each sweep of the frame's last contact solve (each value what the solve would have
        returned had it stopped after that sweep; NaN past its last sweep), shape (frame_count, sweeps): ``sweeps``
        is the iteration cap when the settings ask for it (``RigidSettings.merit_history``), else 0."""
        self.solver_rejections = np.zeros(frame_count, np.int64)
        """Rejections over the frame's substeps (PROX: sweeps rolled back; NEWTON: blocks handed to PROX), shape
        (frame_count,); 0 for PGS."""
        self.solver_capped = np.zeros(frame_count, np.int64)
        """Substeps of the frame whose contact solve stopped at its iteration cap above the tolerance."""
        self.converged = np.ones(frame_count, dtype=bool)
        """Whether every substep's contact solve of the frame met its tolerance (no ``solver_capped``), shape
        (frame_count,) (common statistic)."""
        self.max_penetration = np.zeros(frame_count)
        """Deepest penetration (-min gap, 0 if none) over the frame's substeps [m], shape (frame_count,)."""
        self.sleeping_bodies = np.zeros(frame_count, np.int64)
        """Bodies asleep in the frame's last substep (:mod:`.sleeping`), shape (frame_count,)."""
        self.joint_error_linear = np.zeros(frame_count)
        """Largest joint position error (locked axes, violated limits) over the frame's substeps after the
        projection [m], shape (frame_count,); 0 without joints."""
        self.joint_error_angular = np.zeros(frame_count)
        """Largest joint angle error over the frame's substeps [rad], shape (frame_count,)."""
        self.joint_impulse = np.zeros(frame_count)
        """Largest impulse of one joint row over the frame's substeps [N·s | N·m·s], shape (frame_count,)."""
        self.joint_broken_frame = np.full(joint_count, -1, np.int64)
        """Output frame in which each joint broke (its last substep of action lies in it), -1 if it held,
        shape (joint_count,)."""

    def record(self, frame: int, state) -> None:
        """Store ``state`` as frame ``frame``; keeps each quaternion in the previous one's hemisphere."""
        self.body_pos[frame] = state.body_pos
        q = state.body_quat.copy()
        if frame > 0:
            flip = np.einsum("ij,ij->i", q, self.body_quat[frame - 1]) < 0.0
            q[flip] *= -1.0
        self.body_quat[frame] = q
        self.body_vel[frame] = state.body_vel
        self.body_omega[frame] = state.body_omega
        self.frames_done = max(self.frames_done, frame + 1)

    def save_npz(self, path) -> None:
        """Write every array to an ``.npz`` file (golden files, reports); :meth:`load_npz` reads it back exactly."""
        np.savez_compressed(path, **{k: v for k, v in vars(self).items() if isinstance(v, np.ndarray)})

    @classmethod
    def load_npz(cls, path) -> Trajectory:
        """Read a trajectory written by :meth:`save_npz`."""
        data = np.load(path)
        joints = data["joint_broken_frame"].shape[0] if "joint_broken_frame" in data.files else 0
        traj = cls(data["body_pos"].shape[0], data["body_pos"].shape[1], joints)
        for key in data.files:
            setattr(traj, key, data[key])
        traj.frames_done = traj.frame_count
        return traj
