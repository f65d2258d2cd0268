"""Control: per-substep inputs from outside the simulation."""

import numpy as np


class Control:
    """Prescribed end-of-substep poses of kinematic bodies (ignored for dynamic bodies)."""

    def __init__(self, body_count: int):
        self.body_target_pos = np.zeros((body_count, 3))
        """Kinematic target position at the end of the substep [m], shape (body_count, 3)."""
        self.body_target_quat = np.zeros((body_count, 4))
        """Kinematic target orientation (wxyz) at the end of the substep, shape (body_count, 4)."""
        self.body_target_quat[:, 0] = 1.0
