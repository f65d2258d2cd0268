"""Shock propagation (Erleben 2004; lecture slides, seed 004): a stack solved from the ground up, each layer of
bodies resting on a frozen layer below.

After a step's contact solve, bodies are put in layers by their contact distance from the bodies that do not move
(static and kinematic: layer 0); a body touching layer ``L - 1`` is in layer ``L``. The contacts are then swept
again, layer by layer upwards: a contact of layer ``L`` (its higher body's layer) moves only the bodies of layer
``L``, as if the bodies below had infinite mass. An upper box can then no longer push a lower one down, which is
what makes a few Gauss–Seidel sweeps leave a tall stack sinking and toppling. Bodies that touch nothing fixed form
one last group in which nothing is frozen.

The sweeps are projected Gauss–Seidel on the step's matrix-free rows (:mod:`.rows`), starting from the solve's
impulses: the normal row first (``r_n >= 0``), then the two friction rows projected together on the contact's
friction set (every set as its box for a box-friction solve). Shapes: ``rows`` as :func:`.rows.row_operator`,
``n`` contacts, impulses (c, 3) [N·s], accumulators ``dv``, ``dw`` (nb, 3) [m/s, rad/s].
"""

import numpy as np

from ..friction.models import project_friction
from ..jit import njit_kernel
from .rows import row_velocity

UNREACHED = np.iinfo(np.int64).max // 2
"""The layer of a body that touches nothing fixed, directly or through other bodies."""


@njit_kernel
def body_layers(body_inv_mass, body0, body1, n, out_layer):
    """Each body's layer (nb,) into ``out_layer``: 0 for a body of zero inverse mass, else one more than its lowest
    neighbour through the first ``n`` contacts, :data:`UNREACHED` without a path to a fixed body. Relaxed until no
    layer changes (at most one pass per layer, each O(n))."""
    for b in range(out_layer.shape[0]):
        out_layer[b] = 0 if body_inv_mass[b] == 0.0 else UNREACHED
    changed = True
    while changed:
        changed = False
        for k in range(n):
            a, b = body0[k], body1[k]
            if out_layer[a] + 1 < out_layer[b]:
                out_layer[b] = out_layer[a] + 1
                changed = True
            elif out_layer[b] + 1 < out_layer[a]:
                out_layer[a] = out_layer[b] + 1
                changed = True


@njit_kernel
def _row_mass(k, d, b0, b1, w0, w1, inv_mass, frame, rc0, rc1, irc0, irc1):
    """Row ``d`` of contact ``k``'s diagonal ``J M⁻¹ Jᵀ`` with body ``b`` counted only where ``w_b = 1``."""
    s0 = inv_mass[b0]  # the frame's rows are unit vectors
    s1 = inv_mass[b1]
    for j in range(3):
        s0 += rc0[k, d, j] * irc0[k, d, j]
        s1 += rc1[k, d, j] * irc1[k, d, j]
    return w0 * s0 + w1 * s1


@njit_kernel
def _push(k, d, b0, b1, w0, w1, delta, inv_mass, frame, irc0, irc1, dv, dw):
    """Add row ``d``'s impulse change ``delta`` to the bodies that move (``w = 1``)."""
    m0 = w0 * inv_mass[b0] * delta
    m1 = w1 * inv_mass[b1] * delta
    for j in range(3):
        c = frame[k, d, j]
        dv[b1, j] += m1 * c
        dv[b0, j] -= m0 * c
        dw[b1, j] += w1 * delta * irc1[k, d, j]
        dw[b0, j] -= w0 * delta * irc0[k, d, j]


@njit_kernel
def _row_update(rows, k, d, w0, w1, impulse, dv, dw):
    """Row ``d``'s unconstrained Gauss–Seidel value (the impulse that zeroes its velocity) [N·s]."""
    body0, body1, inv_mass, frame, rc0, rc1, irc0, irc1, row_b = rows
    b0, b1 = body0[k], body1[k]
    mass = _row_mass(k, d, b0, b1, w0, w1, inv_mass, frame, rc0, rc1, irc0, irc1)
    if not mass > 0.0:
        return impulse[k, d]
    return impulse[k, d] - row_velocity(k, d, b0, b1, frame, rc0, rc1, row_b, dv, dw) / mass


@njit_kernel
def _sweep_contact(rows, k, level, layer, friction_set, mu4, impulse, dv, dw):
    """One Gauss–Seidel update of contact ``k`` in the layer-``level`` pass: normal row, then both friction rows
    projected on the friction set; bodies below ``level`` stay frozen."""
    body0, body1, inv_mass, frame, irc0, irc1 = rows[0], rows[1], rows[2], rows[3], rows[6], rows[7]
    b0, b1 = body0[k], body1[k]
    w0 = 1.0 if layer[b0] >= level else 0.0
    w1 = 1.0 if layer[b1] >= level else 0.0
    normal = max(_row_update(rows, k, 0, w0, w1, impulse, dv, dw), 0.0)
    _push(k, 0, b0, b1, w0, w1, normal - impulse[k, 0], inv_mass, frame, irc0, irc1, dv, dw)
    impulse[k, 0] = normal
    zt = _row_update(rows, k, 1, w0, w1, impulse, dv, dw)
    zb = _row_update(rows, k, 2, w0, w1, impulse, dv, dw)
    lt, lb = project_friction(friction_set, mu4[k, 0], mu4[k, 1], mu4[k, 2], mu4[k, 3], normal, zt, zb)
    _push(k, 1, b0, b1, w0, w1, lt - impulse[k, 1], inv_mass, frame, irc0, irc1, dv, dw)
    _push(k, 2, b0, b1, w0, w1, lb - impulse[k, 2], inv_mass, frame, irc0, irc1, dv, dw)
    impulse[k, 1] = lt
    impulse[k, 2] = lb


@njit_kernel
def shock_propagation(rows, n, contact_friction_set, mu4, box, sweeps, layer, contact_layer, order, impulse, dv, dw):
    """The layered pass over the first ``n`` contacts after a solve (module docstring).

    Args:
        rows: :func:`.rows.row_operator`'s tuple. contact_friction_set (c,), mu4 (c, 4): each contact's friction.
        box: True for a box-friction solve (every set clamped as its box). sweeps: Gauss–Seidel sweeps per layer.
        layer (nb,), contact_layer (c,), order (c,): int64 scratch. impulse (c, 3), dv, dw (nb, 3): updated.

    Returns the number of layers swept.
    """
    body0, body1, inv_mass = rows[0], rows[1], rows[2]
    body_layers(inv_mass, body0, body1, n, layer)
    for k in range(n):
        contact_layer[k] = max(layer[body0[k]], layer[body1[k]])
    order[:n] = np.argsort(contact_layer[:n], kind="mergesort")
    levels = 0
    start = 0
    while start < n:
        level = contact_layer[order[start]]
        end = start
        while end < n and contact_layer[order[end]] == level:
            end += 1
        for _ in range(sweeps):
            for j in range(start, end):
                k = order[j]
                friction_set = 1 if box else contact_friction_set[k]
                _sweep_contact(rows, k, level, layer, friction_set, mu4, impulse, dv, dw)
        levels += 1
        start = end
    return levels
