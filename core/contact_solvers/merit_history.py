"""FCLIB's merit after every sweep of a row solver: the convergence history the bake report shows.

One job: the natural-map error of the impulses a sweep leaves, read from the same accumulators the sweeps use,
so PGS, PROX and the per-contact Newton report their progress on one scale (FCLIB's ``fclib_merit_local``, as
:meth:`..rigid.solvers.base.SolverBase.contact_merit` judges a finished solve). Per contact ``k`` with impulse
``r`` (3,) [N·s], velocity ``u = b + J (dv, dw)`` (3,) [m/s] and the first friction coefficient ``μ``:

    e_k = r − Π_K(r − û),   û = u + μ ‖u_T‖ e_N,   K = {‖r_T‖ ≤ μ r_N}

and the merit is ``sqrt(Σ_k ‖e_k‖²) / (1 + sqrt(‖b‖))``. The kernels here return the sum of squares: a
solver that works island by island adds each island's share (islands share no body of finite mass, so an
island's contacts see only its own sweeps), and the caller takes the root and the scale once.
"""

import math

import numpy as np

from ..jit import njit_kernel
from .rows import row_velocity


@njit_kernel
def natural_map_squared(rows, k, impulse, mu, dv, dw):
    """``‖e_k‖²`` of contact ``k`` (see the module): impulse ``impulse[k]`` [N·s], coefficient ``mu``; ``rows``
    the operator bundle of :func:`.rows.row_operator`, ``dv``, ``dw`` (b, 3) the body accumulators."""
    body0, body1, frame, rc0, rc1, row_b = rows[0], rows[1], rows[3], rows[4], rows[5], rows[8]
    b0, b1 = body0[k], body1[k]
    u0 = row_velocity(k, np.int64(0), b0, b1, frame, rc0, rc1, row_b, dv, dw)
    u1 = row_velocity(k, np.int64(1), b0, b1, frame, rc0, rc1, row_b, dv, dw)
    u2 = row_velocity(k, np.int64(2), b0, b1, frame, rc0, rc1, row_b, dv, dw)
    r0, r1, r2 = impulse[k, 0], impulse[k, 1], impulse[k, 2]
    x0 = r0 - (u0 + mu * math.sqrt(u1 * u1 + u2 * u2))
    x1, x2 = r1 - u1, r2 - u2
    t = math.sqrt(x1 * x1 + x2 * x2)
    if mu * t <= -x0:  # inside the polar cone: the apex
        p0, p1, p2 = 0.0, 0.0, 0.0
    elif t > mu * x0:  # outside both cones: onto the cone's surface
        p0 = (x0 + mu * t) / (1.0 + mu * mu)
        scale = mu * p0 / max(t, 1e-300)
        p1, p2 = scale * x1, scale * x2
    else:
        p0, p1, p2 = x0, x1, x2
    e0, e1, e2 = r0 - p0, r1 - p1, r2 - p2
    return e0 * e0 + e1 * e1 + e2 * e2


@njit_kernel
def merit_squared(rows, contact_count, contact_mu4, impulse, dv, dw):
    """``Σ_k ‖e_k‖²`` over contacts ``0 .. contact_count - 1``."""
    total = 0.0
    for k in range(contact_count):
        total += natural_map_squared(rows, k, impulse, contact_mu4[k, 0], dv, dw)
    return total


@njit_kernel
def island_merit_squared(rows, island_contacts, start, end, contact_mu4, impulse, dv, dw):
    """``Σ_k ‖e_k‖²`` over the island's contacts ``island_contacts[start:end]``."""
    total = 0.0
    for i in range(start, end):
        k = island_contacts[i]
        total += natural_map_squared(rows, k, impulse, contact_mu4[k, 0], dv, dw)
    return total
