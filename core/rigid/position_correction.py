"""Split-impulse position correction: penetration is removed by pseudo velocities that never enter the momenta.

With Baumgarte stabilisation (course eq. 59) the velocity solve is asked for ``v_n >= -erp phi / h`` at a
penetrating contact, so the push-out becomes real velocity: resting bodies gain kinetic energy every step, piles
sway, and a warm-started bias overshoots. The split impulse (Catto 2006; Bullet's ``splitImpulse``) solves the
contact rows a second time on separate pseudo velocities ``(dv_p, dw_p)`` with the Baumgarte target and integrates
positions with ``u+ + (dv_p, dw_p)``, while the velocity solve only asks for ``v_n >= 0``. The pseudo impulses are
not warm started and are not kept: the next step starts from zero pseudo velocity, so no energy is stored.

The pseudo solve keeps the friction rows (target: no tangential pseudo velocity, bounded by ``mu`` times the pseudo
normal impulse): without them a push-out along a slanted contact normal moves a resting body sideways every step,
and a pile creeps.
"""

from ..jit import njit_kernel


@njit_kernel
def position_correction_targets(contact_gap, contact_count, erp, penetration_slop, dt, row_b):
    """Right-hand side of the pseudo-velocity rows, ``row_b`` (c, 3) [m/s]: ``v = J (dv_p, dw_p) + row_b``.

    Normal: ``-erp * max(-(phi + slop), 0) / h`` (eq. 59's target; 0 for gaps within the slop and for speculative
    contacts, which then only block pseudo motion towards them). Friction rows: 0.
    """
    for k in range(contact_count):
        row_b[k, 0] = -erp * max(-(contact_gap[k] + penetration_slop), 0.0) / dt
        row_b[k, 1] = 0.0
        row_b[k, 2] = 0.0
