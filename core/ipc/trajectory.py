"""IpcTrajectory: the soft engine's per-frame record plus what IPC measures (distances, stiffness, checks)."""

from __future__ import annotations

import numpy as np

from ..fem.trajectory import SoftTrajectory


class IpcTrajectory(SoftTrajectory):
    """Per-frame positions and statistics of :func:`~.frame_loop.iter_simulate` (IPC)."""

    def __init__(self, frame_count: int, node_count: int):
        super().__init__(frame_count, node_count)
        self.friction_count = np.zeros(frame_count, dtype=np.int64)
        """Friction pairs at the end of the frame's last step, shape (frame_count,)."""
        self.min_distance = np.full(frame_count, np.inf)
        """Smallest surface distance within dhat at the end of each frame [m] (inf: no pair within dhat)."""
        self.kappa = np.zeros(frame_count)
        """Barrier stiffness used at the end of each frame [Pa/m]."""
        self.intersections = np.zeros(frame_count, dtype=np.int64)
        """Intersecting triangle pairs found by the independent checker per frame (``check_intersections``)."""
        self.inverted = np.zeros(frame_count, dtype=np.int64)
        """Inverted tets found by the independent checker per frame (``check_intersections``)."""
        self.steps = np.zeros(frame_count, dtype=np.int64)
        """Solver steps per frame: the substeps, more where a step was halved (its motion was not collision-free)."""
        self.splits = np.zeros(frame_count, dtype=np.int64)
        """Halvings per frame (a step's straight-line motion was not collision-free), shape (frame_count,)."""
        self.solves = np.zeros(frame_count, dtype=np.int64)
        """Newton solves per frame: the steps plus one thrown away per halving, shape (frame_count,)."""
        self.newton_total = np.zeros(frame_count, dtype=np.int64)
        """Newton iterations of all the frame's solves (``newton_iterations`` holds only its last step's)."""
        self.newton_max = np.zeros(frame_count, dtype=np.int64)
        """Most Newton iterations of one solve in the frame, shape (frame_count,) (as ``solver_iterations``)."""
        self.pcg_total = np.zeros(frame_count, dtype=np.int64)
        """PCG iterations of all the frame's solves, shape (frame_count,)."""

    def _record_stats(self, frame: int, stats) -> None:
        if frame > 0:
            self.solver_iterations[frame] = stats.newton_max  # thrown-away solves of a halving count too
            self.newton_iterations[frame] = stats.newton_iterations
            self.pcg_iterations[frame] = stats.pcg_iterations
            self.contact_count[frame] = stats.contact_count
            self.friction_count[frame] = stats.friction_count
            self.min_distance[frame] = stats.min_distance
            self.kappa[frame] = stats.kappa
            self.converged[frame] = stats.converged
            self.steps[frame] = stats.steps
            self.splits[frame] = stats.splits
            self.solves[frame] = stats.solves
            self.newton_total[frame] = stats.newton_total
            self.newton_max[frame] = stats.newton_max
            self.pcg_total[frame] = stats.pcg_total
        self.intersections[frame] = stats.intersections  # the checker also checks the start (frame 0)
        self.inverted[frame] = stats.inverted
