"""SoftTrajectory: what a soft-engine (or IPC) simulation recorded, one entry per output frame.

The deforming counterpart of :class:`~..rigid.trajectory.Trajectory`: every unknown's position per frame
and the statistics of each frame. Frame 0 is the initial state (its statistics stay at their "nothing happened"
values). The statistics every engine's result has, by the same names and meanings: ``solver_iterations`` (the
most iterations one step of the frame took; here Newton iterations), ``contact_count`` (the most contacts of one
step of the frame) and ``converged`` (every step of the frame met its tolerance).
"""

from __future__ import annotations

from typing import Self

import numpy as np


class SoftTrajectory:
    """Per-frame node positions and solver statistics of :func:`~.frame_loop.iter_simulate`."""

    def __init__(self, frame_count: int, node_count: int):
        self.frame_count = int(frame_count)
        """Number of recorded frames (including the initial one)."""
        self.frames_done = 0
        """Frames filled so far (equals ``frame_count`` once the simulation finished)."""
        self.node_pos = np.zeros((frame_count, node_count, 3))
        """Positions of every unknown [m], shape (frame_count, node_count, 3): the world's nodes (soft bodies'
        tet vertices, then the dynamic boxes' virtual nodes; under IPC also the kinematic collider vertices)."""
        self.solver_iterations = np.zeros(frame_count, dtype=np.int64)
        """Most Newton iterations of one step of the frame, shape (frame_count,) (common statistic)."""
        self.newton_iterations = np.zeros(frame_count, dtype=np.int64)
        """Newton iterations of the frame's last step, shape (frame_count,)."""
        self.pcg_iterations = np.zeros(frame_count, dtype=np.int64)
        """PCG iterations of the frame's last step, shape (frame_count,)."""
        self.contact_count = np.zeros(frame_count, dtype=np.int64)
        """Most contacts at the end of one step of the frame, shape (frame_count,) (common statistic)."""
        self.max_penetration = np.zeros(frame_count)
        """Deepest contact penetration at the end of the frame's last step [m], shape (frame_count,)."""
        self.converged = np.ones(frame_count, dtype=bool)
        """Whether every step of the frame converged, shape (frame_count,) (common statistic)."""
        self.state = None
        """The simulation's current state (the generator's own object, updated in place every frame)."""

    def record(self, frame: int, state) -> None:
        """Store ``state`` (positions, and ``state.stats`` of its last step) as frame ``frame``."""
        self.node_pos[frame] = state.x
        self.state = state
        stats = getattr(state, "stats", None)
        if stats is not None:
            self._record_stats(frame, stats)
        self.frames_done = max(self.frames_done, frame + 1)

    def save_npz(self, path) -> None:
        """Write every array to an ``.npz`` file; :meth:`load_npz` reads it back exactly (not ``state``)."""
        np.savez_compressed(path, **{k: v for k, v in vars(self).items() if isinstance(v, np.ndarray)})

    @classmethod
    def load_npz(cls, path) -> Self:
        """Read a trajectory written by :meth:`save_npz` (of this class); its ``state`` is None."""
        with np.load(path) as data:
            traj = cls(data["node_pos"].shape[0], data["node_pos"].shape[1])
            for key in data.files:
                setattr(traj, key, data[key])
        traj.frames_done = traj.frame_count
        return traj

    def _record_stats(self, frame: int, stats) -> None:
        if frame > 0:
            self.solver_iterations[frame] = stats.newton_max
            self.newton_iterations[frame] = stats.newton_iterations
            self.pcg_iterations[frame] = stats.pcg_iterations
            self.contact_count[frame] = stats.contact_count
            self.max_penetration[frame] = stats.max_penetration
            self.converged[frame] = stats.converged
