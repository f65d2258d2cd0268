"""Matrix-free contact rows: frames, Jacobian blocks, Delassus diagonal blocks and right-hand sides.

For contact k between body0 (A) and body1 (B) with frame ``C = [n t b]`` and arms
``r0 = p - x0``, ``r1 = p - x1`` the Jacobian row of direction ``c`` (course eq. 22/43) is::

    J0(c) = [ -c^T, -(r0 x c)^T ],   J1(c) = [ c^T, (r1 x c)^T ]

so the contact-space velocity is ``v_c = c.(v1 - v0) + (r1 x c).w1 - (r0 x c).w0``. The
solvers never assemble ``A = J M^-1 J^T``; they keep the body-space accumulator
``(dv, dw) = M^-1 J^T lambda`` (course eq. 230–231) and the 3x3 diagonal blocks ``D_k``.
"""

import math

import numpy as np

from ..friction.models import project_friction
from ..jit import njit_kernel
from ..math.vec import cross_into, dot3, mat3_vec_into, point_velocity_into
from .collision.contact_common import FEATURE_MAX


@njit_kernel
def _tangent_fallback(n, out_t):
    # Deterministic tangent: cross n with the world axis least aligned with it.
    ax, ay, az = abs(n[0]), abs(n[1]), abs(n[2])
    # t = n x e for the unit axis e least aligned with n
    if ax <= ay and ax <= az:
        out_t[0], out_t[1], out_t[2] = 0.0, n[2], -n[1]
    elif ay <= az:
        out_t[0], out_t[1], out_t[2] = -n[2], 0.0, n[0]
    else:
        out_t[0], out_t[1], out_t[2] = n[1], -n[0], 0.0
    norm = math.sqrt(dot3(out_t, out_t))
    for j in range(3):
        out_t[j] /= norm


@njit_kernel
def _contact_frame_into(n, dv_free, tangent_fixed, hint, frame):
    """Contact frame rows ``(n, t, b)`` (3, 3) into ``frame``; ``dv_free`` (3,) is the free relative velocity [m/s].

    ``t`` is the structure direction ``hint`` projected onto the contact plane where ``tangent_fixed``, else the
    tangential part of ``dv_free`` (the sliding direction); below 1e-9 a deterministic fallback; ``b = n x t``.
    """
    vn_free = dot3(dv_free, n)
    if tangent_fixed:
        # the friction model fixes the frame (structure direction): project it onto the contact plane
        hn = dot3(hint, n)
        for j in range(3):
            frame[0, j] = n[j]
            frame[1, j] = hint[j] - hn * n[j]
    else:
        for j in range(3):
            frame[0, j] = n[j]
            frame[1, j] = dv_free[j] - vn_free * n[j]
    vt_norm = math.sqrt(dot3(frame[1], frame[1]))
    if vt_norm > 1e-9:
        for j in range(3):
            frame[1, j] /= vt_norm
    else:
        _tangent_fallback(n, frame[1])
    cross_into(frame[0], frame[1], frame[2])


@njit_kernel
def _jacobian_rows_into(k, m_sum, frame, r0, r1, inv_inertia0, inv_inertia1, dv_free, row_rc0, row_rc1, row_irc0,
                        row_irc1, row_D, row_b):  # fmt: skip
    """Rows ``r x c_d`` and ``I^-1 (r x c_d)`` of contact ``k``, its Delassus block and free velocity.

    ``D_ij = (m_0^-1 + m_1^-1) c_i.c_j + (r0 x c_i).I_0^-1 (r0 x c_j) + (r1 x c_i).I_1^-1 (r1 x c_j)``
    [1/kg] (course eq. 230) and ``b_i = c_i . dv_free`` [m/s] (without the normal bias).
    """
    for d in range(3):
        cross_into(r0, frame[d], row_rc0[k, d])
        cross_into(r1, frame[d], row_rc1[k, d])
        mat3_vec_into(inv_inertia0, row_rc0[k, d], row_irc0[k, d])
        mat3_vec_into(inv_inertia1, row_rc1[k, d], row_irc1[k, d])
    for i in range(3):
        for j in range(3):
            row_D[k, i, j] = (
                m_sum * dot3(frame[i], frame[j])
                + dot3(row_rc0[k, i], row_irc0[k, j])
                + dot3(row_rc1[k, i], row_irc1[k, j])
            )
        row_b[k, i] = dot3(frame[i], dv_free)


@njit_kernel
def _normal_bias(phi, e, vn_pre, erp, penetration_slop, restitution_threshold, dt):
    """Velocity bias [m/s] of the normal row (see :func:`compute_contact_rows`); ``vn_pre`` used only if e > 0."""
    if phi > 0.0:
        bias = phi / dt
    else:
        bias = erp * min(phi + penetration_slop, 0.0) / dt
    if e > 0.0 and vn_pre < -restitution_threshold and phi + dt * vn_pre <= 0.0:
        bias = min(e * vn_pre, min(bias, 0.0))
    return bias


@njit_kernel
def _lever_arms_into(point, n, gap, margin, x0, x1, r0, r1):
    """The contact's lever arms ``r0 = p - s n - x0`` and ``r1 = p + s n - x1`` (3,) [m], in place.

    ``p`` lies midway across the gap ``phi`` and ``n`` points from body 0 to body 1. Beyond the contact margin
    ``s = phi / 2``: a speculative contact acts on each body on its own surface, where it will be struck (from the
    midpoint, far outside a small fast body, the arm inflated the friction rows' Delassus block: a 1 cm ball 30 cm
    from a slab got a 180-fold one, and PROX's r-factor with it). Within the margin ``s = 0``: equal and opposite
    friction on one line of action. The normal rows are the same for any point along ``n``.
    """
    s = 0.5 * gap if gap > margin else 0.0
    for j in range(3):
        r0[j] = point[j] - s * n[j] - x0[j]
        r1[j] = point[j] + s * n[j] - x1[j]


@njit_kernel
def compute_contact_rows(
    body_inv_mass,
    body_pos,
    body_vel,
    body_omega,
    inv_inertia_world,
    vel_free,
    omega_free,
    contact_body0,
    contact_body1,
    contact_point,
    contact_normal,
    contact_gap,
    contact_restitution,
    contact_tangent_fixed,
    contact_tangent_hint,
    contact_count,
    contact_margin,
    erp,
    penetration_slop,
    restitution_threshold,
    dt,
    # outputs
    contact_frame,
    row_rc0,
    row_rc1,
    row_irc0,
    row_irc1,
    row_D,
    row_b,
):
    """Per-contact frame, Jacobian cross terms, Delassus block and constant velocity term.

    The tangent ``t`` is the model's structure direction where ``contact_tangent_fixed`` (anisotropic
    cones have a material frame, course §6.1.6), else it follows the free relative sliding direction
    (so the box friction model of PGS is exact for straight sliding, course §1.10.1: "t in the
    direction of sliding"), else a deterministic fallback; ``b = n x t`` makes ``(t, b, n)`` right-handed.

    Normal right-hand side (``v = J u_free + bias``; the solver enforces ``v_n + A lambda >= 0``):
      * gap > 0 (speculative, course eq. 12): ``bias = phi / h`` lets the bodies close the gap exactly;
      * gap <= 0 (Baumgarte, eq. 59 with CFM 0): ``bias = erp * min(phi + slop, 0) / h``;
      * restitution (Newton impact law, seed 001 eq. 19) when the approach speed ``-v_n^-`` exceeds
        the threshold and the gap closes within the step: ``bias = min(e v_n^-, baumgarte)``.

    Lever arms: :func:`_lever_arms_into` (beyond the contact margin, each body's own surface).

    Shapes: contact_frame (c, 3, 3) rows n, t, b; row_rc0/row_rc1 (c, 3, 3) rows ``r x c_d``;
    row_irc0/row_irc1 (c, 3, 3) rows ``I_w^-1 (r x c_d)``; row_D (c, 3, 3); row_b (c, 3) [m/s].
    """
    # per-contact scratch, allocated once
    r0 = np.empty(3)
    r1 = np.empty(3)
    vel0 = np.empty(3)
    vel1 = np.empty(3)
    dv_free = np.empty(3)
    for k in range(contact_count):
        b0 = contact_body0[k]
        b1 = contact_body1[k]
        n = contact_normal[k]
        _lever_arms_into(contact_point[k], n, contact_gap[k], contact_margin, body_pos[b0], body_pos[b1], r0, r1)
        # free relative velocity at the contact point
        point_velocity_into(vel_free[b0], omega_free[b0], r0, vel0)
        point_velocity_into(vel_free[b1], omega_free[b1], r1, vel1)
        for j in range(3):
            dv_free[j] = vel1[j] - vel0[j]
        frame = contact_frame[k]
        _contact_frame_into(n, dv_free, contact_tangent_fixed[k], contact_tangent_hint[k], frame)
        m_sum = body_inv_mass[b0] + body_inv_mass[b1]
        _jacobian_rows_into(k, m_sum, frame, r0, r1, inv_inertia_world[b0], inv_inertia_world[b1], dv_free,
                            row_rc0, row_rc1, row_irc0, row_irc1, row_D, row_b)  # fmt: skip
        # normal bias; the pre-step approach speed only matters with restitution
        e = contact_restitution[k]
        vn_pre = 0.0
        if e > 0.0:
            point_velocity_into(body_vel[b0], body_omega[b0], r0, vel0)
            point_velocity_into(body_vel[b1], body_omega[b1], r1, vel1)
            vn_pre = (vel1[0] - vel0[0]) * n[0] + (vel1[1] - vel0[1]) * n[1] + (vel1[2] - vel0[2]) * n[2]
        row_b[k, 0] += _normal_bias(contact_gap[k], e, vn_pre, erp, penetration_slop, restitution_threshold, dt)


@njit_kernel
def _nearest_unused(k, contact_point, first, prev_key, prev_point, prev_count, prev_used, radius):
    """Nearest previous contact of contact ``k``'s pair within ``radius`` [m] not yet continued, or -1.

    ``first``: the first previous contact whose pair is not below this contact's (keys sorted by pair, feature).
    """
    pair_key = prev_key[first] // FEATURE_MAX if first < prev_count else -1
    best, best_d2 = -1, radius * radius
    j = first
    while j < prev_count and prev_key[j] // FEATURE_MAX == pair_key:
        if not prev_used[j]:
            d2 = 0.0
            for a in range(3):
                d2 += (contact_point[k, a] - prev_point[j, a]) ** 2
            if d2 < best_d2:
                best, best_d2 = j, d2
        j += 1
    return best


@njit_kernel
def match_previous_contacts(contact_key, contact_point, contact_count, prev_key, prev_point, prev_count, radius,
                            prev_used, match):  # fmt: skip
    """``match[k]``: the previous step's contact that contact ``k`` continues, or -1; each continued at most once.

    The same key (same pair, same touching features) wins; the contacts left take the nearest unclaimed previous
    contact of the same pair within ``radius`` [m]. Features are not stable where a patch's points are chosen among
    near-equals (a face clip reduced to four points, a reference face between two equal faces): matching by
    position keeps those contacts warm, as a persistent manifold does. One-to-one, because two new points that
    both took one old point's impulse would start the pair at twice its load and pop it apart. Keys are sorted
    (pair, then feature) in both steps, so pairs are found by a merge. ``prev_used`` (>= prev_count,) bool scratch.
    """
    prev_used[:prev_count] = False
    first = 0
    for k in range(contact_count):  # pass 1: same key
        match[k] = -1
        while first < prev_count and prev_key[first] < contact_key[k]:
            first += 1
        if first < prev_count and prev_key[first] == contact_key[k]:
            match[k] = first
            prev_used[first] = True
    first = 0
    for k in range(contact_count):  # pass 2: by position within the pair
        pair = contact_key[k] // FEATURE_MAX
        while first < prev_count and prev_key[first] // FEATURE_MAX < pair:
            first += 1
        if match[k] < 0 and first < prev_count and prev_key[first] // FEATURE_MAX == pair:
            j = _nearest_unused(k, contact_point, first, prev_key, prev_point, prev_count, prev_used, radius)
            if j >= 0:
                match[k] = j
                prev_used[j] = True


@njit_kernel
def warm_start_impulses(
    match,
    contact_count,
    contact_frame,
    contact_friction_set,
    contact_mu4,
    prev_impulse_world,
    box_only,
    factor,
    # outputs
    impulse,
):
    """Initial impulses: ``factor`` times the previous step's world impulse of the contact this one continues.

    ``match`` (c,) from :func:`match_previous_contacts`. The warm start is projected onto the current frame and
    friction set (``lambda_n >= 0``; the contact's set, or its box when ``box_only`` — the BLCP of PGS).
    """
    for k in range(contact_count):
        j = match[k]
        if j >= 0:
            P = prev_impulse_world[j]
            ln = factor * max(dot3(contact_frame[k, 0], P), 0.0)
            lt = factor * dot3(contact_frame[k, 1], P)
            lb = factor * dot3(contact_frame[k, 2], P)
            friction_set = np.int32(1) if box_only else contact_friction_set[k]
            lt, lb = project_friction(friction_set, contact_mu4[k, 0], contact_mu4[k, 1], contact_mu4[k, 2],
                                      contact_mu4[k, 3], ln, lt, lb)  # fmt: skip
            impulse[k, 0] = ln
            impulse[k, 1] = lt
            impulse[k, 2] = lb
        else:
            impulse[k, 0] = 0.0
            impulse[k, 1] = 0.0
            impulse[k, 2] = 0.0


@njit_kernel
def store_world_impulses(
    contact_key, contact_point, contact_count, contact_frame, impulse, out_key, out_point, out_impulse_world
):
    """Save keys, points [m] and world-space impulses ``C lambda`` [N·s] for the next step's warm start."""
    for k in range(contact_count):
        out_key[k] = contact_key[k]
        for j in range(3):
            out_point[k, j] = contact_point[k, j]
            out_impulse_world[k, j] = (
                impulse[k, 0] * contact_frame[k, 0, j]
                + impulse[k, 1] * contact_frame[k, 1, j]
                + impulse[k, 2] * contact_frame[k, 2, j]
            )


# Torsional (Coulomb–Contensou) rows ---------------------------------------------------------------
# row_spin columns: 0 mu_spin [m], 1 D_tau [1/(kg m^2)], 2 free spin velocity b_tau [rad/s],
# 3 scaling length ell [m] (spin impulse in force units is lambda_tau / ell), 4:7 I_0^-1 n, 7:10 I_1^-1 n.
SPIN_COLUMNS = 10


@njit_kernel
def compute_spin_rows(
    inv_inertia_world,
    omega_free,
    contact_body0,
    contact_body1,
    contact_frame,
    contact_mu_spin,
    row_D,
    contact_count,
    # outputs
    row_spin,
):
    """Rows of the spin (torsion) constraint ``v_tau = n . (w_1 - w_0)`` (course eq. 61, seed 001 eq. 12–16).

    ``J_0 = [0, -n]``, ``J_1 = [0, n]``; ``D_tau = n.I_0^-1 n + n.I_1^-1 n``. The length
    ``ell = sqrt(max(A_tt, A_bb) / D_tau)`` rescales the spin impulse so one r-factor serves the whole
    friction block (t, b, tau) without mixing units; power is kept:
    ``lambda_tau v_tau = (lambda_tau / ell) (ell v_tau)``.
    """
    for k in range(contact_count):
        b0 = contact_body0[k]
        b1 = contact_body1[k]
        n = contact_frame[k, 0]
        row_spin[k, 0] = contact_mu_spin[k]
        d_tau = 0.0
        b_tau = 0.0
        for j in range(3):
            i0 = (
                inv_inertia_world[b0, j, 0] * n[0]
                + inv_inertia_world[b0, j, 1] * n[1]
                + inv_inertia_world[b0, j, 2] * n[2]
            )
            i1 = (
                inv_inertia_world[b1, j, 0] * n[0]
                + inv_inertia_world[b1, j, 1] * n[1]
                + inv_inertia_world[b1, j, 2] * n[2]
            )
            row_spin[k, 4 + j] = i0
            row_spin[k, 7 + j] = i1
            d_tau += n[j] * (i0 + i1)
            b_tau += n[j] * (omega_free[b1, j] - omega_free[b0, j])
        row_spin[k, 1] = d_tau
        row_spin[k, 2] = b_tau
        row_spin[k, 3] = math.sqrt(max(row_D[k, 1, 1], row_D[k, 2, 2]) / d_tau) if d_tau > 0.0 else 1.0


@njit_kernel
def warm_start_spin(
    match, contact_key, contact_count, contact_frame, impulse, row_spin, prev_key, prev_torque_world,
    # outputs
    spin_impulse,
):  # fmt: skip
    """Spin impulses from the previous step's torque impulse (world) of the same contact (same key).

    ``match`` (c,) from :func:`match_previous_contacts`; only continued contacts with the same key are warm started.
    Clamped to ``|lambda_tau| <= mu_spin lambda_n`` with the warm-started normal impulse.
    """
    for k in range(contact_count):
        spin_impulse[k] = 0.0
        j = match[k]
        if j >= 0 and prev_key[j] == contact_key[k] and row_spin[k, 0] > 0.0:
            limit = row_spin[k, 0] * impulse[k, 0]
            spin_impulse[k] = min(max(dot3(contact_frame[k, 0], prev_torque_world[j]), -limit), limit)


@njit_kernel
def store_spin_impulses(contact_count, contact_frame, spin_impulse, out_torque_world):
    """Save ``lambda_tau n`` per contact for the next step's warm start."""
    for k in range(contact_count):
        for j in range(3):
            out_torque_world[k, j] = spin_impulse[k] * contact_frame[k, 0, j]
