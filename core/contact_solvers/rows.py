"""The matrix-free Delassus operator on contact rows: what every row-based contact solver applies.

A contact problem in row form is, per contact k between bodies ``b0`` and ``b1`` with frame
``C = [n t b]`` (course eq. 22/43): the free contact velocity ``row_b`` (3,), the arm rows
``row_rc0/1 = r x c`` and their inertia-weighted forms ``row_irc0/1 = I^-1 (r x c)``, and the bodies'
inverse masses. The solvers never assemble ``A = J M^-1 J^T``: they keep the body-space accumulator
``(dv, dw) = M^-1 J^T lambda`` (course eq. 230–231), read a contact's velocity
``v = b + J (dv, dw)`` and add ``M^-1 J^T d_lambda`` after each local update. Torsional (spin) rows
follow the same pattern with ``row_spin`` (see :mod:`..rigid.contact_rows` for its columns).

The rows are built by the rigid engine (:func:`..rigid.contact_rows.compute_contact_rows`); the PGS,
PROX and Newton kernels of this package only apply them.
"""

from ..jit import njit_kernel


def row_operator(
    contact_body0, contact_body1, body_inv_mass, contact_frame, row_rc0, row_rc1, row_irc0, row_irc1, row_b
):
    """Bundle the arrays of the matrix-free Delassus operator into the ``rows`` tuple the row solvers take.

    contact_body0/1 (c,) int; body_inv_mass (nb,) [1/kg]; contact_frame, row_rc0/1, row_irc0/1 (c, 3, 3);
    row_b (c, 3) [m/s]. A plain tuple (no copy): Numba passes it as one argument of fixed type.
    """
    return contact_body0, contact_body1, body_inv_mass, contact_frame, row_rc0, row_rc1, row_irc0, row_irc1, row_b


@njit_kernel
def contact_velocity(k, b0, b1, contact_frame, row_rc0, row_rc1, row_b, dv, dw, out_v):
    """Current contact-space velocity ``v = b + J (dv, dw)`` of contact ``k`` into ``out_v`` (3,)."""
    for d in range(3):
        out_v[d] = row_velocity(k, d, b0, b1, contact_frame, row_rc0, row_rc1, row_b, dv, dw)


@njit_kernel
def apply_contact_impulse(k, b0, b1, d_lambda, body_inv_mass, contact_frame, row_irc0, row_irc1, dv, dw):
    """Add ``M^-1 J_k^T d_lambda`` to the body accumulators (course eq. 231)."""
    apply_block_impulse(
        k, b0, b1, d_lambda[0], d_lambda[1], d_lambda[2], body_inv_mass, contact_frame, row_irc0, row_irc1, dv, dw
    )


@njit_kernel
def apply_block_impulse(k, b0, b1, d0, d1, d2, body_inv_mass, contact_frame, row_irc0, row_irc1, dv, dw):
    """:func:`apply_contact_impulse` with the change ``(d0, d1, d2)`` given as scalars (kept in registers)."""
    for j in range(3):
        P = d0 * contact_frame[k, 0, j] + d1 * contact_frame[k, 1, j] + d2 * contact_frame[k, 2, j]
        dv[b1, j] += body_inv_mass[b1] * P
        dv[b0, j] -= body_inv_mass[b0] * P
        dw[b1, j] += d0 * row_irc1[k, 0, j] + d1 * row_irc1[k, 1, j] + d2 * row_irc1[k, 2, j]
        dw[b0, j] -= d0 * row_irc0[k, 0, j] + d1 * row_irc0[k, 1, j] + d2 * row_irc0[k, 2, j]


@njit_kernel
def row_velocity(k, d, b0, b1, contact_frame, row_rc0, row_rc1, row_b, dv, dw):
    """Row ``d`` of :func:`contact_velocity` as a scalar [m/s] (same sums, same order)."""
    s = row_b[k, d]
    for j in range(3):
        s += (
            contact_frame[k, d, j] * (dv[b1, j] - dv[b0, j])
            + row_rc1[k, d, j] * dw[b1, j]
            - row_rc0[k, d, j] * dw[b0, j]
        )
    return s


@njit_kernel
def apply_row_impulse(k, d, b0, b1, delta, body_inv_mass, contact_frame, row_irc0, row_irc1, dv, dw):
    """Add ``M^-1 J_kd^T delta`` for a change ``delta`` of row ``d`` alone (a Gauss–Seidel row update).

    The same sums as :func:`apply_contact_impulse` with the other two rows' changes zero, a third of the work.
    """
    m0 = body_inv_mass[b0] * delta
    m1 = body_inv_mass[b1] * delta
    for j in range(3):
        c = contact_frame[k, d, j]
        dv[b1, j] += m1 * c
        dv[b0, j] -= m0 * c
        dw[b1, j] += delta * row_irc1[k, d, j]
        dw[b0, j] -= delta * row_irc0[k, d, j]


@njit_kernel
def accumulate_impulses(
    contact_body0,
    contact_body1,
    contact_count,
    impulse,
    body_inv_mass,
    contact_frame,
    row_irc0,
    row_irc1,
    # outputs
    dv,
    dw,
):
    """``(dv, dw) = M^-1 J^T lambda`` from scratch (start of a solve or after a rollback)."""
    dv[:] = 0.0
    dw[:] = 0.0
    for k in range(contact_count):
        apply_contact_impulse(
            k, contact_body0[k], contact_body1[k], impulse[k], body_inv_mass, contact_frame, row_irc0, row_irc1, dv, dw
        )


@njit_kernel
def spin_velocity(k, b0, b1, contact_frame, row_spin, dw):
    """Current relative spin velocity ``n . (w_1 - w_0)`` [rad/s] of contact ``k``."""
    n = contact_frame[k, 0]
    return (
        row_spin[k, 2]
        + n[0] * (dw[b1, 0] - dw[b0, 0])
        + n[1] * (dw[b1, 1] - dw[b0, 1])
        + n[2] * (dw[b1, 2] - dw[b0, 2])
    )


@njit_kernel
def apply_spin_impulse(k, b0, b1, delta, row_spin, dw):
    """Add ``M^-1 J_tau^T delta`` (a torque impulse ``delta n``) to the angular accumulators."""
    for j in range(3):
        dw[b1, j] += delta * row_spin[k, 7 + j]
        dw[b0, j] -= delta * row_spin[k, 4 + j]


@njit_kernel
def accumulate_spin_impulses(contact_body0, contact_body1, contact_count, spin_impulse, row_spin, dw):
    """Add every contact's spin impulse to ``dw`` (after :func:`accumulate_impulses`)."""
    for k in range(contact_count):
        if spin_impulse[k] != 0.0:
            apply_spin_impulse(k, contact_body0[k], contact_body1[k], spin_impulse[k], row_spin, dw)


@njit_kernel
def assemble_delassus(rows, n, dv, dw, out_W, out_q):
    """The dense local problem ``u = W r + q`` of the first ``n`` contacts of ``rows`` (:func:`row_operator`).

    Column ``3k + d`` of ``W = J M^-1 J^T`` is the change of every contact row's velocity under a unit impulse on
    row ``d`` of contact ``k``: the same operator the sweeps apply, so a solve of ``(W, q)`` is the solve of this
    step's rows. ``q`` is the rows' free velocity ``b`` (bias included). ``dv``, ``dw`` (nb, 3): zeroed scratch,
    left zero. ``out_W`` (3n, 3n), ``out_q`` (3n,). O(n²): for export and study, never inside a step.
    """
    body0, body1, inv_mass, frame, rc0, rc1, irc0, irc1, row_b = rows
    for k in range(n):
        b0, b1 = body0[k], body1[k]
        for e in range(3):
            out_q[3 * k + e] = row_b[k, e]
        for d in range(3):
            apply_row_impulse(k, d, b0, b1, 1.0, inv_mass, frame, irc0, irc1, dv, dw)
            for i in range(n):
                for e in range(3):
                    out_W[3 * i + e, 3 * k + d] = row_velocity(i, e, body0[i], body1[i], frame, rc0, rc1, row_b, dv,
                                                               dw) - row_b[i, e]  # fmt: skip
            for j in range(3):
                dv[b0, j] = dv[b1, j] = dw[b0, j] = dw[b1, j] = 0.0
