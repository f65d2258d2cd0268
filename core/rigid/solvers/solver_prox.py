"""SolverProx: PROX blocked Gauss–Seidel on the Coulomb cone (course §3.4, seed 001)."""

import numpy as np

from ...contact_solvers.kernels import compute_r_factors, solve_prox_gs
from ...enums import FrictionSet, RFactorStrategy
from ..contacts import Contacts
from ..model import Model
from .base import SolverBase


class SolverProx(SolverBase):
    """Proximal-map blocked Gauss–Seidel with the isotropic Coulomb disk and an adaptive r-factor."""

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
        r_strategy: GLOBAL (default, one r for all rows) or LOCAL (``1/A_ii``).
        nu: r back-off factor after a rejected sweep; default 0.5 (GLOBAL) / 0.9 (LOCAL), seed 001 §1.4.
        kwargs: see :class:`SolverBase`.
        """
        super().__init__(model, **kwargs)
        self.r_strategy = RFactorStrategy(r_strategy)
        if nu is None:
            nu = 0.5 if self.r_strategy == RFactorStrategy.GLOBAL else 0.9
        if not 0.0 < nu < 1.0:
            raise ValueError("nu must lie in (0, 1)")
        self.nu = float(nu)
        self._r_row = np.zeros((model.contact_max, 3))
        self._saved_impulse = np.zeros((model.contact_max, 3))

    def _solve(self, contacts: Contacts) -> None:
        n = contacts.contact_count
        compute_r_factors(self._D, n, int(self.r_strategy), self._r_row)
        solve_prox_gs(
            self._rows(contacts), n, contacts.contact_friction_set, contacts.contact_mu4, self._r_row,
            self._row_spin, self.has_spin, self.iterations, self.tolerance, self.nu,
            self._saved_impulse, self._saved_spin,
            contacts.contact_impulse, contacts.contact_spin_impulse, self._dv, self._dw, self._result,
        )  # fmt: skip
