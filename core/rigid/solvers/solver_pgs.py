"""SolverPGS: projected Gauss–Seidel on the box-friction BLCP (course §1.7, §3.2)."""

from ..contacts import Contacts
from ..enums import FrictionSet
from .base import SolverBase
from .kernels import solve_pgs


class SolverPGS(SolverBase):
    """Matrix-free projected Gauss–Seidel with box friction ``|lambda_t|, |lambda_b| <= mu lambda_n``."""

    friction_set = FrictionSet.BOX
    supports_spin = True

    def _solve(self, contacts: Contacts) -> None:
        n = contacts.contact_count
        solve_pgs(
            contacts.contact_body0, contacts.contact_body1, n, contacts.contact_mu4, self.model.body_inv_mass,
            contacts.contact_frame, self._rc0, self._rc1, self._irc0, self._irc1, self._D, self._b,
            self._row_spin, self.has_spin, self.iterations, self.tolerance,
            contacts.contact_impulse, contacts.contact_spin_impulse, self._dv, self._dw, self._result,
        )  # fmt: skip
