"""Islands and sleeping: bodies that have rested long enough stop moving until something touches them.

A settled pile or stack solved by a fixed number of Gauss–Seidel sweeps is never exactly at rest: what the sweeps
leave unconverged shows as a jitter of a few mm/s (a 20-box stack rocks inside the penetration slop). Sleeping,
as Bullet's deactivation and Box2D's islands do it, ends that: a body whose speed stays below the thresholds for
``sleep_time`` is *resting*; an island (dynamic bodies joined by contacts, speculative ones included) sleeps when
all its bodies rest, and a sleeping body keeps its pose exactly, with zero velocity. An island wakes the step a
body that does not rest joins it (a contact, even a speculative one, reaches it before the impact) or a moving
kinematic body touches one of its bodies. Kinematic bodies join no island: a floor does not make every box on it
one island.

The solver still solves sleeping islands (their contacts keep their warm start, so a woken pile does not sag);
:func:`freeze_sleeping` then restores their poses. Deterministic: islands come from the contact order by
union–find with fixed roots.
"""

import math

import numpy as np

from ..enums import BodyKind
from ..jit import njit_kernel
from ..math.union_find import union_find_root

DEFAULT_SLEEP_TIME = 0.5
"""Seconds a body must rest before its island may sleep [s] (Box2D's time to sleep)."""
DEFAULT_SLEEP_LINEAR_SPEED = 0.05
"""A body rests below this centre-of-mass speed [m/s]."""
DEFAULT_SLEEP_ANGULAR_SPEED = 0.05
"""A body rests below this angular speed [rad/s]."""


@njit_kernel
def update_sleep(
    body_kind,
    body_vel,
    body_omega,
    contact_body0,
    contact_body1,
    contact_count,
    linear_speed,
    angular_speed,
    sleep_time,
    dt,
    # state and outputs
    rest_time,
    island,
    island_rest,
    asleep,
):
    """Advance the resting clocks by ``dt`` [s] and decide which bodies sleep during the coming step.

    Args:
        body_kind (nb,): :class:`BodyKind`; body_vel, body_omega (nb, 3): the velocities the step starts from.
        contact_body0, contact_body1 (c,): the step's contacts (first ``contact_count``).
        linear_speed [m/s], angular_speed [rad/s]: a body rests below both.
        sleep_time [s]: how long every body of an island must have rested for the island to sleep.
        rest_time (nb,) [s]: each body's resting clock, kept between steps (0 at the start).
        island (nb,) int, island_rest (nb,): scratch (the island's root, its shortest resting clock).
        asleep (nb,) bool: out, True for the bodies of sleeping islands.

    Returns:
        The number of sleeping bodies.
    """
    nb = body_kind.shape[0]
    for b in range(nb):
        island[b] = b
        if body_kind[b] != BodyKind.DYNAMIC:
            continue
        v = math.sqrt(body_vel[b, 0] ** 2 + body_vel[b, 1] ** 2 + body_vel[b, 2] ** 2)
        w = math.sqrt(body_omega[b, 0] ** 2 + body_omega[b, 1] ** 2 + body_omega[b, 2] ** 2)
        rest_time[b] = rest_time[b] + dt if v < linear_speed and w < angular_speed else 0.0
    for k in range(contact_count):
        b0 = contact_body0[k]
        b1 = contact_body1[k]
        dynamic0 = body_kind[b0] == BodyKind.DYNAMIC
        dynamic1 = body_kind[b1] == BodyKind.DYNAMIC
        if dynamic0 and dynamic1:
            r0 = union_find_root(island, np.int64(b0))
            r1 = union_find_root(island, np.int64(b1))
            if r0 != r1:
                island[max(r0, r1)] = min(r0, r1)  # the smaller index is the root: independent of visit order
        else:
            # a kinematic body that moves wakes what it touches
            kin, dyn = (b1, b0) if dynamic0 else (b0, b1)
            if body_kind[dyn] == BodyKind.DYNAMIC:
                v = math.sqrt(body_vel[kin, 0] ** 2 + body_vel[kin, 1] ** 2 + body_vel[kin, 2] ** 2)
                w = math.sqrt(body_omega[kin, 0] ** 2 + body_omega[kin, 1] ** 2 + body_omega[kin, 2] ** 2)
                if v >= linear_speed or w >= angular_speed:
                    rest_time[dyn] = 0.0
    for b in range(nb):
        island_rest[b] = math.inf
    for b in range(nb):
        if body_kind[b] == BodyKind.DYNAMIC:
            r = union_find_root(island, b)
            island_rest[r] = min(island_rest[r], rest_time[b])
    sleeping = 0
    for b in range(nb):
        asleep[b] = body_kind[b] == BodyKind.DYNAMIC and island_rest[union_find_root(island, b)] >= sleep_time
        if asleep[b]:
            sleeping += 1
    return sleeping


@njit_kernel
def freeze_sleeping(asleep, pos_in, quat_in, pos_out, quat_out, vel_out, omega_out):
    """Sleeping bodies end the step where they began it, at rest: ``pos_out, quat_out = pos_in, quat_in``, zero
    velocities (all (nb, 3) or (nb, 4))."""
    for b in range(asleep.shape[0]):
        if asleep[b]:
            for j in range(3):
                pos_out[b, j] = pos_in[b, j]
                vel_out[b, j] = 0.0
                omega_out[b, j] = 0.0
            for j in range(4):
                quat_out[b, j] = quat_in[b, j]
