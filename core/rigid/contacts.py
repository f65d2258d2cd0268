"""Contacts: fixed-capacity per-contact buffers plus a count.

Conventions (course §0.3): the normal points from shape/body 0 to shape/body 1;
the gap ``phi`` is positive when apart; the frame is ``C = [n t b]``, right-handed
(``t x b = n``); impulses are ordered ``[lambda_n, lambda_t, lambda_b]`` [N·s].
"""

import numpy as np


class Contacts:
    """Contact buffers with capacity ``contact_max``; overflow is counted, never hidden."""

    def __init__(self, contact_max: int):
        self.contact_max = int(contact_max)
        """Capacity of every buffer."""
        n = self.contact_max
        self.contact_count = 0
        """Number of valid entries (the first ``contact_count`` rows)."""
        self.contact_overflow = 0
        """Contacts the narrow phase found but could not store in the last collide()."""
        self.contact_shape0 = np.zeros(n, np.int32)
        """First shape of the pair (lower index), shape (contact_max,)."""
        self.contact_shape1 = np.zeros(n, np.int32)
        """Second shape of the pair, shape (contact_max,)."""
        self.contact_body0 = np.zeros(n, np.int32)
        """Body of shape0, shape (contact_max,)."""
        self.contact_body1 = np.zeros(n, np.int32)
        """Body of shape1, shape (contact_max,)."""
        self.contact_point = np.zeros((n, 3))
        """World contact point p (midpoint between the two surfaces) [m], shape (contact_max, 3)."""
        self.contact_normal = np.zeros((n, 3))
        """Unit normal n from body0 to body1, shape (contact_max, 3)."""
        self.contact_gap = np.zeros(n)
        """Gap phi [m] (negative: penetration), shape (contact_max,)."""
        self.contact_feature = np.zeros(n, np.int32)
        """Feature id within the pair (stable while the touching features stay the same), shape (contact_max,)."""
        self.contact_key = np.zeros(n, np.int64)
        """Sort/match key ``(shape0, shape1, feature)`` packed into an int64, shape (contact_max,)."""
        self.contact_mu = np.zeros(n)
        """Combined friction coefficient of the pair, shape (contact_max,)."""
        self.contact_friction_set = np.full(n, 2, np.int32)
        """:class:`FrictionSet` of each contact's limit surface, shape (contact_max,)."""
        self.contact_mu4 = np.zeros((n, 4))
        """Friction coefficients along ``[+t, +b, -t, -b]`` of the contact frame, shape (contact_max, 4):
        all equal ``contact_mu`` for CONE; ``(mu_t, mu_b, mu_t, mu_b)`` for ELLIPSE; directional for BOX."""
        self.contact_tangent_fixed = np.zeros(n, np.bool_)
        """True where the friction model fixes the tangent ``t`` (structure direction), shape (contact_max,)."""
        self.contact_tangent_hint = np.zeros((n, 3))
        """The fixed tangent direction (projected onto the contact plane by the solver), shape (contact_max, 3)."""
        self.contact_mu_spin = np.zeros(n)
        """Torsional (Coulomb–Contensou) coefficient of the pair [m]: spin torque limit per unit normal force."""
        self.contact_spin_impulse = np.zeros(n)
        """Solved spin (torsion) impulse about the normal [N·m·s], shape (contact_max,)."""
        self.contact_restitution = np.zeros(n)
        """Combined restitution coefficient of the pair, shape (contact_max,)."""
        self.contact_impulse = np.zeros((n, 3))
        """Solved impulses [lambda_n, lambda_t, lambda_b] [N·s] of the last step, shape (contact_max, 3)."""
        self.contact_frame = np.zeros((n, 3, 3))
        """Contact frame per contact, rows (n, t, b) in world coordinates, shape (contact_max, 3, 3)."""
