"""SolverProx: PROX blocked Gauss–Seidel on the Coulomb cone (course §3.4, seed 001)."""

import numpy as np

from ...contact_solvers.islands import contact_islands, contact_joint_islands
from ...contact_solvers.kernels import compute_island_r_factors, solve_prox_gs
from ...enums import FrictionSet, RFactorStrategy
from ..contacts import Contacts
from ..model import Model
from .base import SolverBase


class SolverProx(SolverBase):
    """Proximal-map blocked Gauss–Seidel with the isotropic Coulomb disk and an adaptive r-factor.

    Every contact island (:mod:`...contact_solvers.islands`) is solved as if alone: its r-factors, back-off and
    convergence test are its own, so a body's mass changes nothing in islands it does not touch.
    """

    friction_set = FrictionSet.NONE
    supports_spin = True

    def __init__(
        self,
        model: Model,
        *,
        r_strategy: RFactorStrategy = RFactorStrategy.GLOBAL,
        nu: float | None = None,
        **kwargs,
    ):
        """Args:
        r_strategy: GLOBAL (default, one r for all rows of an island) or LOCAL (``1/A_ii``).
        nu: r back-off factor after a rejected sweep; default 0.5 (GLOBAL) / 0.9 (LOCAL), seed 001 §1.4.
        kwargs: see :class:`SolverBase`.
        """
        super().__init__(model, **kwargs)
        self.r_strategy = RFactorStrategy(r_strategy)
        if self.r_strategy not in (RFactorStrategy.GLOBAL, RFactorStrategy.LOCAL):
            raise ValueError(f"r_strategy {self.r_strategy.name}: the engine's PROX takes GLOBAL or LOCAL (BLOCKED is "
                             "the study's, 'prox-blocked' of the DENSE solver)")  # fmt: skip
        if nu is None:
            nu = 0.5 if self.r_strategy == RFactorStrategy.GLOBAL else 0.9
        if not 0.0 < nu < 1.0:
            raise ValueError("nu must lie in (0, 1)")
        self.nu = float(nu)
        self._r_row = np.zeros((model.contact_max, 3))
        self._saved_impulse = np.zeros((model.contact_max, 3))
        self._island_parent = np.zeros(model.body_count, np.int64)
        self._island_label = np.zeros(model.body_count, np.int64)
        self._contact_island = np.zeros(model.contact_max, np.int64)
        self._island_contacts = np.zeros(model.contact_max, np.int64)
        self._island_start = np.zeros(model.contact_max + 1, np.int64)
        self.last_islands = 0
        """Contact islands of the last step's solve."""

    def _solve(self, contacts: Contacts) -> None:
        n = contacts.contact_count
        if self.joints is None:
            islands = contact_islands(
                contacts.contact_body0, contacts.contact_body1, n, self.model.body_inv_mass,
                self._island_parent, self._island_label, self._contact_island, self._island_contacts,
                self._island_start,
            )  # fmt: skip
        else:  # a joint unites its bodies' islands; the bundle's order lists each island's joints
            bundle = self.joints.bundle
            islands = contact_joint_islands(
                contacts.contact_body0, contacts.contact_body1, n, self.model.body_inv_mass, self.model.joint_body,
                self._island_parent, self._island_label, self._contact_island, self._island_contacts,
                self._island_start, self.joints.island_joint, bundle[9], bundle[10],
            )  # fmt: skip
        self.last_islands = int(islands)
        compute_island_r_factors(
            self._D, self._island_contacts, self._island_start, islands, int(self.r_strategy), self._r_row
        )
        solve_prox_gs(
            self._rows(contacts), self._island_contacts, self._island_start, islands,
            contacts.contact_friction_set, contacts.contact_mu4, self._r_row, self._row_spin, self.has_spin,
            self.iterations, self.tolerance, self.nu,
            self._saved_impulse, self._saved_spin,
            contacts.contact_impulse, contacts.contact_spin_impulse, self._dv, self._dw, self._result,
            self._joint_bundle, self._merit_history_out(),
        )  # fmt: skip
