"""SolverNewton: blocked Gauss–Seidel with a Fischer–Burmeister Newton solve per contact (course §3.3, E.1.5)."""

import numpy as np

from ...contact_solvers.kernels_newton import solve_newton_gs
from ...enums import FrictionSet
from ..contacts import Contacts
from ..model import Model
from .base import SolverBase


class SolverNewton(SolverBase):
    """Non-smooth Newton on the contact law with each contact's own (parametric) friction set.

    Every contact block ``v = D_k lambda + c`` is solved by a damped semismooth Newton method on the
    FB reformulation of :mod:`.kernels_newton` (disk and ellipse in scaled variables, the box by its
    box-MCP FB function); the blocks are swept symmetrically as in PROX. ``last_rejections`` holds the
    number of blocks whose local Newton failed and fell back to PROX projections.
    """

    friction_set = FrictionSet.NONE

    def __init__(
        self,
        model: Model,
        *,
        local_iterations: int = 30,
        local_tolerance: float = 1e-12,
        **kwargs,
    ):
        """Args:
        local_iterations: Newton iteration cap per contact block.
        local_tolerance: stop a block when ``|Phi|_inf`` is below this times its velocity scale
            [dimensionless].
        kwargs: see :class:`SolverBase`.
        """
        super().__init__(model, **kwargs)
        if local_iterations < 1:
            raise ValueError("local_iterations must be at least 1")
        if not local_tolerance > 0.0:
            raise ValueError("local_tolerance must be > 0")
        self.local_iterations = int(local_iterations)
        self.local_tolerance = float(local_tolerance)
        self._stats = np.zeros(3)
        self.last_local_iterations = 0
        """Local Newton iterations summed over all blocks and sweeps of the last step."""
        self.last_local_max_iterations = 0
        """Largest local Newton iteration count of one block in the last step."""
        self.last_local_restarts = 0
        """Local Newton restarts (sliding guess, PROX-preconditioned start) in the last step."""

    @property
    def last_local_failures(self) -> int:
        """Blocks whose local Newton fell back to PROX in the last step (= ``last_rejections``)."""
        return self.last_rejections

    def _solve(self, contacts: Contacts) -> None:
        n = contacts.contact_count
        solve_newton_gs(
            self._rows(contacts), n, contacts.contact_friction_set, contacts.contact_mu4, self._D,
            self.iterations, self.tolerance, self.local_iterations, self.local_tolerance,
            contacts.contact_impulse, self._dv, self._dw, self._result, self._stats, self._joint_bundle,
            self._merit_history_out(),
        )  # fmt: skip
        self.last_local_iterations = int(self._stats[0])
        self.last_local_max_iterations = int(self._stats[1])
        self.last_local_restarts = int(self._stats[2])
