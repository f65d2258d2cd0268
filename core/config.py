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
"""Fraction of the penetration removed per step ``upsilon`` (course eq. 59) [dimensionless]."""

DEFAULT_PENETRATION_SLOP = 5.0e-4
"""Penetration left uncorrected so resting contacts do not jitter [m]."""

DEFAULT_WARM_START_FACTOR = 1.0
"""Fraction of the previous step's impulse a matching contact starts from [dimensionless]."""

DEFAULT_SPLIT_IMPULSE = False
"""Whether rigid solvers remove penetration with position-only pseudo velocities (:mod:`.rigid.position_correction`)
instead of a Baumgarte bias in the velocity solve."""

DEFAULT_NORMALS_FIRST = False
"""Whether a PGS sweep updates every normal row before any friction row (Bullet's order) instead of contact by
contact."""

DEFAULT_SHOCK_PROPAGATION = False
"""Whether rigid solvers follow each contact solve with a shock-propagation pass
(:mod:`.contact_solvers.shock_propagation`): the stack's layers swept again from the ground up, each resting on a
frozen layer below."""

SHOCK_PROPAGATION_SWEEPS = 10
"""Gauss–Seidel sweeps per layer of the shock-propagation pass. A 10-box stack at 60 Hz and 5 PGS sweeps moves
2.7 mm sideways in its first second with 4 sweeps per layer (a box's four corners settle unevenly and it tilts),
0.03 mm with 10 and nothing measurable with 25."""

DEFAULT_ACCELERATE = True
"""Whether projected Gauss–Seidel sweeps take nonsmooth conjugate-gradient steps (Silcowitz et al. 2010;
:func:`.contact_solvers.kernels.solve_pgs`). At 20 sweeps a 1000-box pile keeps 0.03 J of kinetic energy after 5 s
instead of 2.6 J, at about the same cost per substep."""

RESTING_PILE_SETTINGS = {
    "split_impulse": True,
    "normals_first": True,
    "warm_start_factor": 0.85,
    "penetration_slop": 0.0,
    "erp": 0.4,
}
"""Solver options (PGS) that bring a 1000-box pile at 20 sweeps to rest as deep as Bullet does: Bullet's order,
warm-start factor and zero slop, with the push-out in a split impulse. In ``tests/benchmarks/bench_pile.py`` they
leave 0.015 J of kinetic energy and 0.10 mm of penetration after 5 s (Bullet 0.006 J, 0.18 mm; the defaults 0.021 J,
0.50 mm: their slop) at 1.7x the defaults' time (a second solve). Not the defaults, because a damped warm start holds
tall stacks worse: a 20-box stack at 50 sweeps leans 4 mm and keeps 2e-4 of its released energy."""

DEFAULT_RESTITUTION_THRESHOLD = 0.2
"""Approach speeds below this [m/s] do not bounce, so resting contacts stay at rest."""
