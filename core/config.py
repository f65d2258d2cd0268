"""Numeric types and default settings shared by the core."""

import numpy as np

FLOAT = np.float64
"""Every physical quantity inside the core is float64 in SI units."""

INDEX = np.int32
"""Index arrays (bodies, shapes, pairs)."""

DEFAULT_CONTACT_MARGIN = 0.01
"""Contacts are generated up to this separation [m] (speculative contacts, course eq. 12)."""

DEFAULT_CONTACTS_PER_BODY = 16
"""Capacity heuristic: ``contact_max = max(64, DEFAULT_CONTACTS_PER_BODY * body_count)``."""

DEFAULT_ERP = 0.2
"""Baumgarte error-reduction parameter ``upsilon`` (course eq. 59) [dimensionless]."""

DEFAULT_PENETRATION_SLOP = 5.0e-4
"""Penetration left uncorrected so resting contacts do not jitter [m]."""

DEFAULT_RESTITUTION_THRESHOLD = 0.2
"""Approach speeds below this [m/s] do not bounce, so resting contacts stay at rest."""
