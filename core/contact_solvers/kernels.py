"""Contact solver kernels: projected Gauss–Seidel on the BLCP and PROX blocked Gauss–Seidel.

Both work matrix-free on contact rows (:mod:`.rows`): the current contact velocity
is ``v = b + J (dv, dw)`` with the body accumulators ``(dv, dw) = M^-1 J^T lambda``.
Convergence is measured by the merit ``e = ||lambda^{k+1} - lambda^k||_inf`` of a sweep
(course eq. 232) relative to the largest impulse.
"""

import math

import numpy as np

from ..friction.models import project_ellipsoid, project_friction
from ..jit import njit_kernel
from .joint_sweep import (
    joint_conjugate_start,
    joint_conjugate_step,
    joint_pass,
    joint_sweep_residual,
    restore_joint_impulses,
    save_joint_impulses,
    uses_global_factor,
    zero_joint_bodies,
)
from .merit_history import island_merit_squared, merit_squared
from .rows import (
    apply_block_impulse,
    apply_row_impulse,
    apply_spin_impulse,
    row_velocity,
    spin_velocity,
)


@njit_kernel
def sweep_index(i, sweep, count):
    """Contact visited at position ``i`` of sweep ``sweep``: forward on even sweeps, backward on odd.

    Symmetric Gauss–Seidel (course §3.2.1, eq. 148–149) removes the bias a fixed order puts on
    statically indeterminate contacts (a tall stack rocks when one side is always solved first).
    """
    if sweep % 2 == 0:
        return i
    return count - 1 - i


@njit_kernel
def _max_abs(impulse, contact_count):
    m = 0.0
    for k in range(contact_count):
        for d in range(3):
            m = max(m, abs(impulse[k, d]))
    return m


@njit_kernel
def store_result(result, sweeps, merit, third):
    """``result[:] = [sweeps, merit, third]``: the (3,) summary every contact solver returns."""
    result[0] = sweeps
    result[1] = merit
    result[2] = third


@njit_kernel
def _conjugate_start(contact_count, impulse, dv, dw, conjugate, conjugate_body):
    """Accelerated PGS's scratch before the first sweep: the start impulses and body accumulators, no direction."""
    for k in range(contact_count):
        for d in range(3):
            conjugate[0, k, d] = impulse[k, d]  # impulses at the start of the sweep
            conjugate[1, k, d] = 0.0  # direction p
    for b in range(dv.shape[0]):
        for j in range(3):
            conjugate_body[0, b, j] = dv[b, j]  # accumulators at the start of the sweep
            conjugate_body[1, b, j] = dw[b, j]
            conjugate_body[2, b, j] = 0.0  # M^-1 J^T p
            conjugate_body[3, b, j] = 0.0


@njit_kernel
def _conjugate_step(beta, contact_count, impulse, dv, dw, conjugate, conjugate_body):
    """Accelerated PGS after a sweep: move on by ``beta p`` and make ``beta p + r`` the new direction, on the
    impulses (c, 3) and on their body-space image ``(dv, dw)`` (b, 3)."""
    for k in range(contact_count):
        for d in range(3):
            step = beta * conjugate[1, k, d]
            conjugate[1, k, d] = step + impulse[k, d] - conjugate[0, k, d]
            impulse[k, d] += step
            conjugate[0, k, d] = impulse[k, d]
    for b in range(dv.shape[0]):
        for j in range(3):
            step_v = beta * conjugate_body[2, b, j]
            step_w = beta * conjugate_body[3, b, j]
            conjugate_body[2, b, j] = step_v + dv[b, j] - conjugate_body[0, b, j]
            conjugate_body[3, b, j] = step_w + dw[b, j] - conjugate_body[1, b, j]
            dv[b, j] += step_v
            dw[b, j] += step_w
            conjugate_body[0, b, j] = dv[b, j]
            conjugate_body[1, b, j] = dw[b, j]


@njit_kernel
def _normal_rows_sweep(rows, contact_count, it, row_D, impulse, dv, dw):
    """PGS sweep ``it`` over the normal rows only (``normals_first``): ``lambda_n <- max(0, lambda_n - v_n / A_nn)``.
    Returns the sweep's ``(merit, largest, residual)`` so far (largest change, largest impulse, squared change)."""
    contact_body0, contact_body1, body_inv_mass, contact_frame, row_rc0, row_rc1, row_irc0, row_irc1, row_b = rows
    merit = 0.0
    largest = 0.0
    residual = 0.0
    for i in range(contact_count):
        k = sweep_index(i, it, contact_count)
        b0 = contact_body0[k]
        b1 = contact_body1[k]
        v = row_velocity(k, np.int64(0), b0, b1, contact_frame, row_rc0, row_rc1, row_b, dv, dw)
        old = impulse[k, 0]
        new = max(old - v / row_D[k, 0, 0], 0.0)
        if new != old:
            impulse[k, 0] = new
            apply_row_impulse(
                k, np.int64(0), b0, b1, new - old, body_inv_mass, contact_frame, row_irc0, row_irc1, dv, dw
            )
            merit = max(merit, abs(new - old))
            residual += (new - old) * (new - old)
        largest = max(largest, new)
    return merit, largest, residual


@njit_kernel
def solve_pgs(rows, contact_count, contact_mu4, row_D, row_spin, has_spin, normals_first, iterations, tolerance,
              impulse, spin_impulse, dv, dw, result, conjugate, conjugate_body, joints, merit_history):  # fmt: skip
    """Projected Gauss–Seidel for the box-friction BLCP (course Alg. 6 with eq. 159 bounds), optionally accelerated.

    Row by row: ``lambda_n <- max(0, lambda_n - v_n / A_nn)``, then each friction row
    ``lambda_f <- clamp(lambda_f - v_f / A_ff, -mu_-f lambda_n, mu_+f lambda_n)`` with the newest normal impulse
    (Poulsen's affine bounds, §3.2.2). Every friction set is enforced as its box: the disk and the ellipse by their
    axes ``mu_t, mu_b`` (the BLCP model), texture friction by its four directional coefficients
    ``contact_mu4 = [+t, +b, -t, -b]``. With ``has_spin``, contacts with a torsional coefficient get a fourth row
    ``|lambda_tau| <= mu_spin lambda_n`` (Contensou as a box). ``normals_first``: each sweep updates every normal row
    before any friction row (Bullet's order), else contact by contact (n, t, b, tau). ``rows`` is the operator bundle
    of :func:`.rows.row_operator`, ``row_D`` (c, 3, 3) the Delassus blocks. ``result`` receives ``[sweeps, merit, 0]``.

    Acceleration (when ``conjugate`` has rows): the nonsmooth nonlinear conjugate gradient of Silcowitz, Niebe and
    Erleben (2010). A sweep's change ``r = lambda_end - lambda_start`` is a residual direction; with
    ``beta = |r_k|^2 / |r_k-1|^2`` the impulses move on by ``beta p`` along the previous direction ``p``, which
    becomes ``beta p + r``; ``beta > 1`` (a growing residual) restarts with ``p = 0``. The next sweep projects what
    the step puts outside the friction box, and the last sweep is always a plain one, so the result is feasible.
    The body-space image of ``p`` is kept per body (the sweep's change of ``(dv, dw)`` is ``M^-1 J^T r``), so the
    step costs one pass over the contacts and one over the bodies, not a scatter per contact. On a stack or a pile
    at 20 sweeps this removes most of what plain PGS leaves unconverged (the wobble that keeps a pile moving).
    With spin rows the sweeps stay plain (their change would enter ``dw`` without a contact-space image).
    Outputs: ``impulse`` (c, 3) [N·s], ``spin_impulse`` (c,), ``dv``, ``dw`` (b, 3) [m/s, rad/s], ``result`` (3,).
    Scratch: ``conjugate`` (2, c, 3), or (2, 0, 3) for plain PGS; ``conjugate_body`` (4, b, 3).

    Joints (``joints``: the bundle of :mod:`.joint_sweep`, or None without joints: numba then prunes every joint
    branch, so a scene without joints compiles no joint code): every sweep ends with one
    joint pass (:func:`.joint_sweep.joint_pass`) on the same accumulators, and the sweep's merit and largest impulse
    cover both, so one convergence test stops both. The conjugate-gradient step acts on the combined iterate
    (contact and joint impulses): the per-body image of the direction is the change of ``(dv, dw)`` over the whole
    sweep, joints included, so only by moving the joint impulses along their own change with the same ``beta``
    do the accumulators stay ``M^-1 J^T lambda`` for contacts and joints together; the alternative, accelerating
    the contacts alone with the joint pass inside the map, would need the contacts' share of the body change kept
    apart in every sweep. Extrapolated limit or motor impulses leave their box only until the next pass projects
    them, and the last sweep is a plain one.

    ``merit_history`` (iterations,) or (0,): when it has room, ``merit_history[s]`` receives the sum of the squared
    natural-map errors the impulses leave after sweep ``s`` (:mod:`.merit_history`; before the conjugate-gradient
    step, so it is what a solve stopped after ``s + 1`` sweeps returns).
    """
    contact_body0, contact_body1, body_inv_mass, contact_frame, row_rc0, row_rc1, row_irc0, row_irc1, row_b = rows
    first_row = 1 if normals_first else 0
    accelerate = conjugate.shape[1] >= contact_count and contact_count > 0 and not has_spin
    joint_count, use_global = 0, False
    if joints is not None:  # None: numba prunes every joint branch, so a scene without joints compiles none
        joint_count = joints[0].shape[0]
        use_global = joint_count > 0 and uses_global_factor(joints)
    merit = 0.0
    sweeps = 0
    residual_prev = 0.0
    if accelerate:
        _conjugate_start(contact_count, impulse, dv, dw, conjugate, conjugate_body)
        if joints is not None and joint_count > 0:
            joint_conjugate_start(joints)
    for it in range(iterations):
        merit = 0.0
        largest = 0.0  # max |lambda| after the sweep (every row is visited once per sweep)
        residual = 0.0  # |lambda_end - lambda_start|^2 of the sweep
        if normals_first:
            merit, largest, residual = _normal_rows_sweep(rows, contact_count, it, row_D, impulse, dv, dw)
        for i in range(contact_count):
            k = sweep_index(i, it, contact_count)
            b0 = contact_body0[k]
            b1 = contact_body1[k]
            for d in range(first_row, 3):
                v = row_velocity(k, d, b0, b1, contact_frame, row_rc0, row_rc1, row_b, dv, dw)
                old = impulse[k, d]
                new = old - v / row_D[k, d, d]
                if d == 0:
                    new = max(new, 0.0)
                else:
                    # directional bounds [-mu_-d lambda_n, mu_+d lambda_n] (course eq. 337–338)
                    ln = impulse[k, 0]
                    new = min(max(new, -contact_mu4[k, d + 1] * ln), contact_mu4[k, d - 1] * ln)
                delta = new - old
                if delta != 0.0:
                    impulse[k, d] = new
                    apply_row_impulse(k, d, b0, b1, delta, body_inv_mass, contact_frame, row_irc0, row_irc1, dv, dw)
                    merit = max(merit, abs(delta))
                    residual += delta * delta
                largest = max(largest, abs(new))
            if has_spin and row_spin[k, 0] > 0.0:
                v_tau = spin_velocity(k, b0, b1, contact_frame, row_spin, dw)
                limit = row_spin[k, 0] * impulse[k, 0]
                old = spin_impulse[k]
                new = min(max(old - v_tau / row_spin[k, 1], -limit), limit)
                if new != old:
                    spin_impulse[k] = new
                    apply_spin_impulse(k, b0, b1, new - old, row_spin, dw)
                    merit = max(merit, abs(new - old) / row_spin[k, 3])  # in force-impulse units
        if joints is not None and joint_count > 0:
            # typed ints, not literals: a literal argument compiles a specialization of its own
            joint_merit, joint_largest = joint_pass(
                joints, np.int64(0), joint_count, it, use_global, np.int64(-1), dv, dw
            )
            merit = max(merit, joint_merit)
            largest = max(largest, joint_largest)
            if accelerate:
                residual += joint_sweep_residual(joints)
        sweeps = it + 1
        if it < merit_history.shape[0]:
            merit_history[it] = merit_squared(rows, contact_count, contact_mu4, impulse, dv, dw)
        if merit <= tolerance * max(largest, 1e-300):
            break
        if accelerate and it + 1 < iterations:
            beta = residual / residual_prev if residual_prev > 0.0 else 0.0
            if beta > 1.0:
                beta = 0.0  # the residual grew: restart along the plain sweep
            residual_prev = residual
            _conjugate_step(beta, contact_count, impulse, dv, dw, conjugate, conjugate_body)
            if joints is not None and joint_count > 0:
                joint_conjugate_step(beta, joints)
    store_result(result, sweeps, merit, np.int64(0))


@njit_kernel
def _block_lambda_max(D):
    """Largest eigenvalue of the 3x3 SPD Delassus block ``D`` [1/kg] by a few power iterations (no allocation)."""
    x0, x1, x2 = 1.0, 1.0, 1.0
    lam = 0.0
    for _ in range(12):
        y0 = D[0, 0] * x0 + D[0, 1] * x1 + D[0, 2] * x2
        y1 = D[1, 0] * x0 + D[1, 1] * x1 + D[1, 2] * x2
        y2 = D[2, 0] * x0 + D[2, 1] * x1 + D[2, 2] * x2
        lam = math.sqrt(y0 * y0 + y1 * y1 + y2 * y2)
        if lam == 0.0:
            break
        x0, x1, x2 = y0 / lam, y1 / lam, y2 / lam
    return lam


@njit_kernel
def _local_r_factors(row_D, k, out_r):
    # LOCAL: r_n = 1 / A_nn and one r for the whole friction block: with r_t != r_b the fixed point of
    # lambda_f = prox(lambda_f - R v_f) puts lambda_f along -R v_f, not -v_f (no maximal dissipation)
    out_r[k, 0] = 1.0 / row_D[k, 0, 0]
    r_friction = 1.0 / max(row_D[k, 1, 1], row_D[k, 2, 2])
    out_r[k, 1] = r_friction
    out_r[k, 2] = r_friction


@njit_kernel
def compute_r_factors(row_D, contact_count, strategy, out_r):
    """Initial r-factors per row, shape (c, 3) [1/(kg^-1)] (course §3.4.4), all contacts one problem.

    GLOBAL (1): one value ``1 / max_k lambda_max(D_k)`` for every row: each blocked update then
    is a contraction of its own block, which is the Gauss–Seidel stability condition.
    LOCAL (2): ``r_n = 1 / A_nn`` and one ``r_f = 1 / max(A_tt, A_bb)`` for both friction rows (the seed
    uses "one r for both": only a scalar r on the friction block keeps maximal dissipation at the fixed point).
    A matrix of several independent islands takes :func:`compute_island_r_factors`.
    """
    if strategy == 2:
        for k in range(contact_count):
            _local_r_factors(row_D, k, out_r)
        return
    lam_max = 0.0
    for k in range(contact_count):
        lam_max = max(lam_max, _block_lambda_max(row_D[k]))
    r = 1.0 / lam_max if lam_max > 0.0 else 1.0
    for k in range(contact_count):
        for d in range(3):
            out_r[k, d] = r


@njit_kernel
def compute_island_r_factors(row_D, island_contacts, island_start, island_count, strategy, out_r):
    """:func:`compute_r_factors` per contact island (:func:`.islands.contact_islands`): out_r (c, 3).

    GLOBAL takes ``1 / max lambda_max(D_k)`` over the island's own contacts: a light body's large inverse mass
    bounds the steps of the contacts it is part of, not those of a heavy body it never touches (whose rows would
    otherwise move by ``r A ~ m_light / m_heavy`` of their error per sweep and never converge).
    """
    for i in range(island_count):
        start, end = island_start[i], island_start[i + 1]
        if strategy == 2:
            for j in range(start, end):
                _local_r_factors(row_D, island_contacts[j], out_r)
            continue
        lam_max = 0.0
        for j in range(start, end):
            lam_max = max(lam_max, _block_lambda_max(row_D[island_contacts[j]]))
        r = 1.0 / lam_max if lam_max > 0.0 else 1.0
        for j in range(start, end):
            for d in range(3):
                out_r[island_contacts[j], d] = r


CYCLE_MARGIN = 1e-9
"""Relative decrease of the merit that the dense PROX kernels' divergence test counts as none (rounding in a
cycle, :func:`is_sweep_rejected`)."""
MERIT_WINDOW = 4
"""Accepted sweeps whose largest merit a new sweep must beat (non-monotone divergence test)."""


@njit_kernel
def is_sweep_rejected(merit, reference_merit, margin):
    """PROX divergence test (course Alg. 11/12 with erratum E20).

    A sweep is rejected when its merit did not decrease by more than ``margin`` of the reference: ``merit >= (1 -
    margin) reference``. The seed's strict ``>`` never fires on an exact 2-cycle, whose merit stays constant, and
    ``>=`` alone (``margin`` 0) misses one whose merit drifts down in the last bits: two contacts sharing a body's one
    free motion (a hinged plank's two feet) cycle between zero and twice their impulse under PROX Jacobi, the merit
    losing 1e-13 of itself a sweep. The dense kernels allow for that (:data:`CYCLE_MARGIN`); the engine's
    Gauss–Seidel keeps ``margin`` 0, under which its bakes were recorded.
    """
    return merit >= (1.0 - margin) * reference_merit


@njit_kernel
def accept_merit(window, count, merit):
    """Record an accepted merit in the ring ``window``; return the new reference (window maximum).

    Comparing with the largest of the last ``MERIT_WINDOW`` accepted merits instead of the last
    one tolerates the non-monotone (but converging) merit of Gauss–Seidel sweeps, which otherwise
    triggers back-offs until r is so small that the iteration stalls; a constant-merit cycle is
    still rejected because its merit equals the window maximum.
    """
    window[count % window.shape[0]] = merit
    reference = 0.0
    for i in range(min(count + 1, window.shape[0])):
        reference = max(reference, window[i])
    return reference


@njit_kernel
def merit_window():
    """A fresh merit window: ``(window (MERIT_WINDOW,), accepted count 0, reference merit inf)``."""
    return np.empty(MERIT_WINDOW), 0, np.inf


@njit_kernel
def judge_sweep(window, accepted, merit, last_merit, margin):
    """Divergence test of a finished PROX sweep and the merit-window update (course Alg. 12, erratum E20).

    Returns ``(rejected, accepted, last_merit)``: a rejected sweep (:func:`is_sweep_rejected` with ``margin``) leaves
    the window and the reference merit alone; an accepted one is recorded (:func:`accept_merit`), which gives the
    new reference. The caller rolls back and shrinks r on rejection.
    """
    if is_sweep_rejected(merit, last_merit, margin):
        return True, accepted, last_merit
    return False, accepted + 1, accept_merit(window, accepted, merit)


@njit_kernel
def _island_max_abs(impulse, island_contacts, start, end):
    # Largest impulse component [N·s] of the island's contacts island_contacts[start:end].
    m = 0.0
    for j in range(start, end):
        k = island_contacts[j]
        for d in range(3):
            m = max(m, abs(impulse[k, d]))
    return m


@njit_kernel
def _copy_impulses(island_contacts, start, end, src_impulse, src_spin, out_impulse, out_spin):
    # Save (before a sweep) or restore (after a rejected one) the island's impulses (c, 3) and spin impulses (c,).
    for j in range(start, end):
        k = island_contacts[j]
        for d in range(3):
            out_impulse[k, d] = src_impulse[k, d]
        out_spin[k] = src_spin[k]


@njit_kernel
def _prox_torsion_friction(k, b0, b1, friction_set, mu4, ln, zt, zb, r_f, scale, contact_frame, row_spin,
                           spin_impulse, dw):  # fmt: skip
    """Friction part of a PROX block with a torsional row, with the new normal impulse ``ln`` [N·s]: ``(lambda_t,
    lambda_b, d_tau)``, ``d_tau`` the spin impulse change [N·m·s].

    ``(zt, zb)`` is the tangential prox argument ``lambda_f - s r_f v_f``. The disk and the ellipse become the
    Coulomb–Contensou ellipsoid with semi-axes ``(mu_t, mu_b, mu_spin / ell) lambda_n`` on ``(t, b, tau / ell)``
    (course Alg. 13); texture boxes clamp the spin impulse on its own.
    """
    ell = row_spin[k, 3]
    v_tau = spin_velocity(k, b0, b1, contact_frame, row_spin, dw)
    if friction_set != 1:
        z_tau = spin_impulse[k] / ell - scale * r_f * ell * v_tau
        mu_b = mu4[0] if friction_set == 2 else mu4[1]
        lt, lb, l_tau = project_ellipsoid(zt, zb, z_tau, mu4[0] * ln, mu_b * ln, row_spin[k, 0] * ln / ell)
        return lt, lb, l_tau * ell - spin_impulse[k]
    lt, lb = project_friction(friction_set, mu4[0], mu4[1], mu4[2], mu4[3], ln, zt, zb)
    limit = row_spin[k, 0] * ln
    z_tau = spin_impulse[k] - scale * r_f * ell * ell * v_tau
    return lt, lb, min(max(z_tau, -limit), limit) - spin_impulse[k]


@njit_kernel
def _prox_sweep(rows, island_contacts, start, count, it, contact_friction_set, contact_mu4, r_row, row_spin, has_spin,
                scale, impulse, spin_impulse, dv, dw):  # fmt: skip
    """One PROX sweep over the island ``island_contacts[start:start + count]`` (its order by :func:`sweep_index`);
    returns its merit, the largest change of an impulse [N·s].

    Per contact ``k``: ``z = lambda - s R v`` with the current velocity ``v = b + J (dv, dw)``; ``lambda_n =
    max(0, z_n)``, then the friction block is projected with the NEW normal impulse and the accumulators take the
    change. The block is written out in the loop, with scalars only in its common calls: an array handed to a
    call or to an inlined helper takes an atomic reference count up and down, which in a helper per contact was
    more than half of the sweep's time.
    """
    body0, body1, inv_mass, frame, rc0, rc1, irc0, irc1, row_b = rows
    merit = 0.0
    for i in range(count):
        k = island_contacts[start + sweep_index(i, it, count)]
        b0 = body0[k]
        b1 = body1[k]
        zn = impulse[k, 0] - scale * r_row[k, 0] * row_velocity(k, np.int64(0), b0, b1, frame, rc0, rc1, row_b, dv, dw)
        zt = impulse[k, 1] - scale * r_row[k, 1] * row_velocity(k, np.int64(1), b0, b1, frame, rc0, rc1, row_b, dv, dw)
        zb = impulse[k, 2] - scale * r_row[k, 2] * row_velocity(k, np.int64(2), b0, b1, frame, rc0, rc1, row_b, dv, dw)
        ln = max(zn, 0.0)
        friction_set = contact_friction_set[k]
        if has_spin and row_spin[k, 0] > 0.0:
            lt, lb, d_tau = _prox_torsion_friction(k, b0, b1, friction_set, contact_mu4[k], ln, zt, zb, r_row[k, 1],
                                                   scale, frame, row_spin, spin_impulse, dw)  # fmt: skip
            if d_tau != 0.0:
                spin_impulse[k] += d_tau
                apply_spin_impulse(k, b0, b1, d_tau, row_spin, dw)
                merit = max(merit, abs(d_tau) / row_spin[k, 3])
        else:
            lt, lb = project_friction(friction_set, contact_mu4[k, 0], contact_mu4[k, 1], contact_mu4[k, 2],
                                      contact_mu4[k, 3], ln, zt, zb)  # fmt: skip
        d0 = ln - impulse[k, 0]
        d1 = lt - impulse[k, 1]
        d2 = lb - impulse[k, 2]
        impulse[k, 0] = ln
        impulse[k, 1] = lt
        impulse[k, 2] = lb
        apply_block_impulse(k, b0, b1, d0, d1, d2, inv_mass, frame, irc0, irc1, dv, dw)
        merit = max(merit, abs(d0), abs(d1), abs(d2))
    return merit


@njit_kernel
def _roll_back(rows, island_contacts, start, end, row_spin, has_spin, saved_impulse, saved_spin, impulse, spin_impulse,
               dv, dw):  # fmt: skip
    """Rejected sweep of an island: restore its saved impulses and rebuild its bodies' accumulators (Alg. 12).

    Only the island's bodies are rebuilt (zeroed, then its contacts added in order, as
    :func:`.rows.accumulate_impulses` does for all): other islands keep their state. Its infinite-mass bodies are
    zeroed too; their accumulators stay zero whoever touches them (``M^-1 = 0``).
    """
    contact_body0, contact_body1, body_inv_mass, contact_frame, _, _, row_irc0, row_irc1, _ = rows
    _copy_impulses(island_contacts, start, end, saved_impulse, saved_spin, impulse, spin_impulse)
    for j in range(start, end):
        k = island_contacts[j]
        for b in (contact_body0[k], contact_body1[k]):
            for d in range(3):
                dv[b, d] = 0.0
                dw[b, d] = 0.0
    for j in range(start, end):
        k = island_contacts[j]
        apply_block_impulse(
            k, contact_body0[k], contact_body1[k], impulse[k, 0], impulse[k, 1], impulse[k, 2], body_inv_mass,
            contact_frame, row_irc0, row_irc1, dv, dw,
        )  # fmt: skip
    if has_spin:
        for j in range(start, end):
            k = island_contacts[j]
            if spin_impulse[k] != 0.0:
                apply_spin_impulse(k, contact_body0[k], contact_body1[k], spin_impulse[k], row_spin, dw)


@njit_kernel
def _solve_prox_island(rows, island_contacts, start, end, contact_friction_set, contact_mu4, r_row, row_spin,
                       has_spin, iterations, tolerance, nu, saved_impulse, saved_spin, impulse, spin_impulse, dv, dw,
                       joints, island, joint_start, joint_end, merit_history):  # fmt: skip
    """PROX on the island ``island_contacts[start:end]`` alone; returns ``(sweeps, merit, rejections)``.

    Its r back-off ``scale``, its merit window and its convergence test are its own, so a hard island (a heavy
    body on a light one) backs off without slowing an easy one, and an easy one stops without waiting. The island's
    joints (``order[joint_start:joint_end]`` of the bundle ``joints``, island number ``island``) take one joint pass
    after each sweep over its contacts, their equality rows by the scene-wide factor restricted to the island when
    the step has one (:func:`.joint_sweep.solve_global_island`: a chain in the island then does not stretch under
    Gauss–Seidel, whose slow, non-monotone merit would also trigger back-offs); a rejected sweep rolls them back
    with the contacts. ``merit_history``: as :func:`solve_prox_gs` fills it, this island's share (after a rejected
    sweep, the rolled-back impulses'; after the island's last sweep, its final share for every later sweep).
    """
    count = end - start
    has_joints, use_global = False, False
    if joints is not None:  # None: compiled without the joint code (see solve_pgs)
        has_joints = joint_end > joint_start
        use_global = has_joints and uses_global_factor(joints)
    window, accepted, last_merit = merit_window()
    merit, scale, rejections, sweeps = 0.0, 1.0, 0, 0
    for it in range(iterations):
        sweeps = it + 1
        _copy_impulses(island_contacts, start, end, impulse, spin_impulse, saved_impulse, saved_spin)
        if joints is not None and has_joints:
            save_joint_impulses(joints, joint_start, joint_end)
        merit = _prox_sweep(rows, island_contacts, start, count, it, contact_friction_set, contact_mu4, r_row, row_spin,
                            has_spin, scale, impulse, spin_impulse, dv, dw)  # fmt: skip
        largest = _island_max_abs(impulse, island_contacts, start, end)
        if joints is not None and has_joints:
            joint_merit, joint_largest = joint_pass(joints, joint_start, joint_end, it, use_global, island, dv, dw)
            merit = max(merit, joint_merit)
            largest = max(largest, joint_largest)
        # Convergence is judged on the step normalised by the r back-off: after many rejections a
        # tiny r makes every step tiny, which is not convergence (seed 001 §1.2 pitfall 2).
        converged = merit <= tolerance * scale * max(largest, 1e-300)
        if not converged:
            rejected, accepted, last_merit = judge_sweep(window, accepted, merit, last_merit, 0.0)
            if rejected:
                # divergence detected: reject the sweep, roll back, shrink r (Alg. 12)
                rejections += 1
                if joints is not None and has_joints:
                    zero_joint_bodies(joints, joint_start, joint_end, dv, dw)
                _roll_back(
                    rows, island_contacts, start, end, row_spin, has_spin, saved_impulse, saved_spin, impulse,
                    spin_impulse, dv, dw,
                )  # fmt: skip
                if joints is not None and has_joints:
                    restore_joint_impulses(joints, joint_start, joint_end, dv, dw)
                scale *= nu
                merit = last_merit
        if it < merit_history.shape[0]:
            share = island_merit_squared(rows, island_contacts, start, end, contact_mu4, impulse, dv, dw)
            for later in range(it, merit_history.shape[0] if converged or it + 1 == iterations else it + 1):
                merit_history[later] += share  # after its last sweep the island's share stays as it is
        if converged:
            break
    return sweeps, merit, rejections


@njit_kernel
def _solve_free_joints(joints, island, start, end, iterations, tolerance, dv, dw):
    """Joints of no contact island (``order[start:end]``, labelled ``island``): passes to the tolerance, their
    equality rows by the scene-wide factor when this step has one."""
    use_global = uses_global_factor(joints)
    sweeps, merit = 0, 0.0
    for it in range(iterations):
        sweeps = it + 1
        merit, largest = joint_pass(joints, start, end, it, use_global, island, dv, dw)
        if merit <= tolerance * max(largest, 1e-300):
            break
    return sweeps, merit


@njit_kernel
def solve_prox_gs(
    rows,
    island_contacts,
    island_start,
    island_count,
    contact_friction_set,
    contact_mu4,
    r_row,
    row_spin,
    has_spin,
    iterations,
    tolerance,
    nu,
    # scratch
    saved_impulse,
    saved_spin,
    # outputs
    impulse,
    spin_impulse,
    dv,
    dw,
    result,
    joints,
    merit_history,
):
    """PROX blocked Gauss–Seidel with adaptive r-factor (course Alg. 12, seed 001 Alg. 2), island by island.

    Per contact block: ``z = lambda - R (v)``; ``lambda_n = max(0, z_n)``;
    ``lambda_t = prox_disk(mu lambda_n)(z_t)`` with the NEW normal impulse. After each sweep the
    merit ``e = ||lambda^{k+1} - lambda^k||_inf`` is compared with the last accepted one; if it did
    not decrease (``>=``, erratum E20: strict ``>`` misses exact 2-cycles) the sweep is rejected,
    ``lambda`` and the accumulators roll back and every r shrinks by ``nu``. The iteration cap
    counts rejected sweeps too.

    Islands (:func:`.islands.contact_islands`: ``island_contacts`` (c,), ``island_start`` (islands + 1,)) share no
    body of finite mass, so each is solved to the end on its own (:func:`_solve_prox_island`): the back-off, the
    merit test and the convergence test are per island, as the r-factors of :func:`compute_island_r_factors`
    are; one island gives the sweeps of a solve over all contacts. ``result`` receives ``[sweeps, merit,
    rejections]``: the most sweeps and the largest final merit of an island, the rejections of all.

    ``rows`` is the operator bundle of :func:`.rows.row_operator`; ``r_row`` (c, 3) the r-factors.
    Torsion (``has_spin``, seed 001 eq. 16): the friction block becomes ``(lambda_t, lambda_b, lambda_tau)`` and
    is projected onto the Coulomb–Contensou ellipsoid with semi-axes ``(mu_t, mu_b, mu_spin) lambda_n`` (one
    r for the block, spin rescaled by ``ell``); texture boxes clamp the spin impulse on its own.

    Joints (``joints``: the bundle of :mod:`.joint_sweep`, or None without joints): a joint unites its bodies'
    islands (:func:`.islands.contact_joint_islands` fills the bundle's ``order``, ``order_start``), each island's
    joints are solved inside its sweeps, and the joints of no island (no contact in their component) after all
    islands (:func:`_solve_free_joints`).

    ``merit_history`` (iterations,) or (0,): when it has room, ``merit_history[s]`` receives the sum of the squared
    natural-map errors the contacts' impulses leave after sweep ``s`` (:mod:`.merit_history`), each island's share
    after its own sweep ``s`` (an island that stopped earlier adds its final share); zeroed here.
    """
    merit_history[:] = 0.0
    sweeps, merit, rejections = 0, 0.0, 0
    for i in range(island_count):
        first, last = 0, 0
        if joints is not None and joints[0].shape[0] > 0:  # None: compiled without the joint code (see solve_pgs)
            first, last = joints[10][i], joints[10][i + 1]
        island_sweeps, island_merit, island_rejections = _solve_prox_island(
            rows, island_contacts, island_start[i], island_start[i + 1], contact_friction_set, contact_mu4, r_row,
            row_spin, has_spin, iterations, tolerance, nu, saved_impulse, saved_spin, impulse, spin_impulse, dv, dw,
            joints, i, first, last, merit_history,
        )  # fmt: skip
        sweeps = max(sweeps, island_sweeps)
        merit = max(merit, island_merit)
        rejections += island_rejections
    if joints is not None and joints[0].shape[0] > 0:
        joint_start = joints[10]
        if joint_start[island_count + 1] > joint_start[island_count]:
            free_sweeps, free_merit = _solve_free_joints(
                joints, island_count, joint_start[island_count], joint_start[island_count + 1], iterations,
                tolerance, dv, dw,
            )  # fmt: skip
            sweeps = max(sweeps, free_sweeps)
            merit = max(merit, free_merit)
    store_result(result, sweeps, merit, rejections)
