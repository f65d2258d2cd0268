"""SolverPGS: projected Gauss–Seidel on the box-friction BLCP (course §1.7, §3.2)."""

from ...contact_solvers.kernels import solve_pgs
from ...enums import FrictionSet
from ..contacts import Contacts
from .base import SolverBase


class SolverPGS(SolverBase):
    """Matrix-free projected Gauss–Seidel with box friction ``|lambda_t|, |lambda_b| <= mu lambda_n``."""

    friction_set = FrictionSet.BOX
    supports_spin = True

    def _solve(self, contacts: Contacts) -> None:
        n = contacts.contact_count
        solve_pgs(
            self._rows(contacts), n, contacts.contact_mu4, self._D, self._row_spin, self.has_spin, self.normals_first,
            self.iterations, self.tolerance,
            contacts.contact_impulse, contacts.contact_spin_impulse, self._dv, self._dw, self._result,
            self._conjugate, self._conjugate_body, self._joint_bundle, self._merit_history_out(),
        )  # fmt: skip
