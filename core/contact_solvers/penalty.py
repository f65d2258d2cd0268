"""Penalty contact (seed 000 §5.1): a spring and a damper at every penetrating contact instead of a solve.

Per contact ``k`` with gap ``phi < 0`` (penetration), normal velocity ``u_n`` (positive separating, the rows'
convention of :mod:`.rows`) and effective mass ``m = 1 / D_nn`` (the Delassus block's normal diagonal, course
eq. 230), the normal force is closed form (§5.1.1, eq. 273 with the erratum's signs):

    f_n = max(0, -k phi - c u_n),   c = 2 zeta sqrt(k m)

clamped at zero so the damper never pulls a separating pair together. Friction is the anchor spring of §5.1.4
(eq. 276–277) with the same damping ratio: the tangential slip ``s`` (3,) [m] since the contact began, a world
vector carried from step to step by the contact's match, pulls back with ``f_t = -k_t s - c_t u_t``; when
``|f_t|`` exceeds ``mu f_n`` the anchor slides along (``s`` is shortened until the force is on the Coulomb disk) and
the contact slips. ``zeta = 0`` is the seed's undamped anchor.

The forces are explicit: the step's impulse is ``h f`` from the gap and the velocities at the start of the step,
so the step is stable while ``h sqrt(k / m)`` stays well below 2. Without a stiffness the contact's own is taken
from its effective mass, ``k = m (2 pi / (n_p h))^2``: a contact that rings with a period of ``n_p`` steps,
whatever the body's mass. A body resting on such springs sinks by ``m g / k``, the method's compliance.

Shapes: ``rows`` as :func:`.rows.row_operator` with a zero constant term ``row_b`` (so :func:`.rows.contact_velocity`
of the bodies' velocities is the contact's relative velocity ``u``), ``D`` (c, 3, 3) [1/kg],
``gap`` (c,) [m], ``mu`` (c,), ``vel``, ``omega`` (nb, 3) [m/s, rad/s] the velocities at the start of the step,
``match`` (c,) the previous step's contact each one continues (-1: new), ``slip_before`` (c_prev, 3) [m], outputs
``impulse`` (c, 3) [N·s] in the contact frame and ``slip`` (c, 3) [m].
"""

import math

import numpy as np

from ..jit import njit_kernel
from .rows import contact_velocity

PERIOD_STEPS = 20.0
"""Steps per period of a contact's own spring when no stiffness is given (``h sqrt(k / m) = 2 pi / 20``)."""


@njit_kernel
def penalty_gains(k_given, zeta, effective_mass, dt):
    """``(k [N/m], c [N·s/m])`` of one contact: ``k_given`` or the contact's own stiffness, and the damper."""
    k = k_given
    if not k > 0.0:
        omega = 2.0 * math.pi / (PERIOD_STEPS * dt)
        k = effective_mass * omega * omega
    return k, 2.0 * zeta * math.sqrt(k * effective_mass)


@njit_kernel
def penalty_impulses(rows, n, D, gap, mu, vel, omega, match, slip_before, stiffness, friction_stiffness, zeta, dt,
                     impulse, slip):  # fmt: skip
    """The step's penalty impulses of the first ``n`` contacts and their new slips (module docstring).

    ``stiffness``, ``friction_stiffness`` [N/m]: 0 takes each contact's own (``friction_stiffness`` 0: the normal
    one); ``zeta``: damping ratio of both springs.
    """
    frame = rows[3]
    u = np.empty(3)  # the contact's relative velocity, (normal, tangent 1, tangent 2)
    for k in range(n):
        for d in range(3):
            impulse[k, d] = 0.0
            slip[k, d] = 0.0
        if not gap[k] < 0.0:
            continue  # touching only within the margin: no force, and a new anchor when it presses again
        m_eff = 1.0 / max(D[k, 0, 0], 1e-300)
        kn, cn = penalty_gains(stiffness, zeta, m_eff, dt)
        contact_velocity(k, rows[0][k], rows[1][k], frame, rows[4], rows[5], rows[8], vel, omega, u)
        fn = max(0.0, -kn * gap[k] - cn * u[0])
        kt, ct = penalty_gains(friction_stiffness if friction_stiffness > 0.0 else kn, zeta, m_eff, dt)
        j = match[k]
        for i in range(3):  # the carried slip on this step's tangent plane, then this step's tangential motion
            s = slip_before[j, i] if j >= 0 else 0.0
            slip[k, i] = s
        sn = slip[k, 0] * frame[k, 0, 0] + slip[k, 1] * frame[k, 0, 1] + slip[k, 2] * frame[k, 0, 2]
        for i in range(3):
            slip[k, i] += -sn * frame[k, 0, i] + dt * (u[1] * frame[k, 1, i] + u[2] * frame[k, 2, i])
        s1 = slip[k, 0] * frame[k, 1, 0] + slip[k, 1] * frame[k, 1, 1] + slip[k, 2] * frame[k, 1, 2]
        s2 = slip[k, 0] * frame[k, 2, 0] + slip[k, 1] * frame[k, 2, 1] + slip[k, 2] * frame[k, 2, 2]
        f1, f2 = -kt * s1 - ct * u[1], -kt * s2 - ct * u[2]
        limit = mu[k] * fn
        size = math.sqrt(f1 * f1 + f2 * f2)
        if size > limit:  # sliding: the force on the disk, the anchor dragged to where the spring alone gives it
            f1, f2 = f1 * limit / size, f2 * limit / size
            for i in range(3):
                slip[k, i] = -(f1 * frame[k, 1, i] + f2 * frame[k, 2, i]) / kt
        impulse[k, 0], impulse[k, 1], impulse[k, 2] = dt * fn, dt * f1, dt * f2
