"""SolverPenalty: penalty springs at the contacts instead of a solve (seed 000 §5.1); for study, not for baking."""

import numpy as np

from ...contact_solvers.penalty import penalty_impulses
from ...contact_solvers.rows import accumulate_impulses
from ...enums import FrictionSet
from ..contacts import Contacts
from ..model import Model
from .base import SolverBase


class SolverPenalty(SolverBase):
    """Closed-form contact impulses from a spring–damper per penetrating contact and an anchor spring for friction
    (:mod:`...contact_solvers.penalty`). Joints stay constraints: their sweeps run with the contacts' impulses
    held, as in a step without contacts (a hybrid of the two approaches, which the seed names as common).

    Bodies sink into each other by their weight over the stiffness, and a stiff spring needs small steps: the
    method shows what the constraint solvers avoid. The isotropic Coulomb disk of each contact's first coefficient.
    """

    friction_set = FrictionSet.NONE
    sweeps_contacts = False  # the springs' impulses are explicit: no sweeps, no merit history

    def __init__(
        self,
        model: Model,
        *,
        stiffness: float = 0.0,
        friction_stiffness: float = 0.0,
        damping_ratio: float = 0.5,
        **kwargs,
    ):
        """Args:
        stiffness: normal spring of every contact [N/m]; 0 gives each contact a spring that rings in 20 steps
            for its effective mass (:data:`...contact_solvers.penalty.PERIOD_STEPS`).
        friction_stiffness: the anchor spring [N/m]; 0 takes the normal one.
        damping_ratio: ``zeta`` of both springs' dampers, ``c = 2 zeta sqrt(k m)`` (1: critically damped).
        kwargs: see :class:`SolverBase` (the iteration cap and tolerance bound the joints' sweeps only).

        Raises:
            ValueError: a negative or non-finite stiffness or damping ratio.
        """
        super().__init__(model, **kwargs)
        for name, value in (("stiffness", stiffness), ("friction_stiffness", friction_stiffness),
                            ("damping_ratio", damping_ratio)):  # fmt: skip
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
        self.stiffness = float(stiffness)
        self.friction_stiffness = float(friction_stiffness)
        self.damping_ratio = float(damping_ratio)
        self.warm_start = True  # nothing is warm-started: the contact match carries each contact's anchor
        self.split_impulse = False  # the springs are the position correction
        self.shock_propagation = False
        nc = model.contact_max
        self._slip_before = np.zeros((nc, 3))
        self._slip = np.zeros((nc, 3))
        self._zero_b = np.zeros((nc, 3))  # the rows' constant term: their velocity is then J u
        self._dt = 0.0
        self._state_in = model.state()

    def step(self, state_in, state_out, control, contacts: Contacts, dt: float, horizon: float | None = None) -> None:
        self._dt = float(dt)  # the springs' impulses are forces over the step
        self._state_in = state_in  # their dampers act on the velocities at its start (explicit)
        super().step(state_in, state_out, control, contacts, dt, horizon)

    def _solve(self, contacts: Contacts) -> None:
        n = contacts.contact_count
        rows = self._rows(contacts, self._zero_b)
        penalty_impulses(
            rows, n, self._D, contacts.contact_gap, contacts.contact_mu4[:, 0], self._state_in.body_vel,
            self._state_in.body_omega, self._match, self._slip_before, self.stiffness, self.friction_stiffness,
            self.damping_ratio, self._dt, contacts.contact_impulse, self._slip,
        )  # fmt: skip
        self._slip_before[:n] = self._slip[:n]
        m = self.model
        accumulate_impulses(
            contacts.contact_body0, contacts.contact_body1, n, contacts.contact_impulse, m.body_inv_mass,
            contacts.contact_frame, self._irc0, self._irc1, self._dv, self._dw,
        )  # fmt: skip
        sweeps = 1
        if self.joints is not None:  # the joints' sweeps with the springs' impulses held, as in a step without contacts
            self._joints_alone()
            sweeps = self.last_iterations
        self._result[:] = (sweeps, 0.0, 0.0)
