"""State: the time-varying arrays of a simulation."""

import numpy as np


class State:
    """Poses and velocities of every body at one instant."""

    def __init__(self, body_count: int):
        self.body_count = body_count
        self.body_pos = np.zeros((body_count, 3))
        """Centre-of-mass position x [m], shape (body_count, 3), float64."""
        self.body_quat = np.zeros((body_count, 4))
        """Orientation Q (w, x, y, z) [unit quaternion], shape (body_count, 4), float64."""
        self.body_quat[:, 0] = 1.0
        self.body_vel = np.zeros((body_count, 3))
        """Linear velocity v of the centre of mass [m/s], shape (body_count, 3), float64."""
        self.body_omega = np.zeros((body_count, 3))
        """World-frame angular velocity w [rad/s], shape (body_count, 3), float64."""

    def copy_from(self, other: "State") -> None:
        """Copy every array of ``other`` into this state (no reallocation)."""
        self.body_pos[:] = other.body_pos
        self.body_quat[:] = other.body_quat
        self.body_vel[:] = other.body_vel
        self.body_omega[:] = other.body_omega

    def copy(self) -> "State":
        """An independent copy."""
        s = State(self.body_count)
        s.copy_from(self)
        return s
