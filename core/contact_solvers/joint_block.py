"""Joint rows as the row solvers see them: slot layout, kinds, a row's velocity and the small dense factor.

The rigid engine builds the rows (:mod:`..rigid.joint_rows`); :mod:`.joint_sweep` solves them. A row's Jacobian is
``[lin, ang0, ang1]`` (3, 3): its velocity is ``lin·(v1 - v0) + ang1·w1 - ang0·w0``; a negative body index is
the world.
"""

import math

import numpy as np

from ..jit import njit_kernel

JOINT_ROWS = 14
"""Row slots per joint: 6 constraint rows, 6 spring rows, 2 motor rows."""
ROW_OFF = 0
"""Row kind: unused this step."""
ROW_EQUALITY = 1
"""Row kind: solved directly with the joint's other equality rows (locked axes, SPRING2)."""
ROW_BOXED = 2
"""Row kind: projected onto ``[lo, hi]`` (limits, motors, SPRING1's fixed impulse)."""


CONSTRAINT_SLOTS = 6
"""Slots ``0 .. CONSTRAINT_SLOTS - 1`` of a joint hold its constraint rows (locked and limited axes); springs and
motors follow."""

PACK_ROWS = 6
"""Equality rows a joint's packed block holds (:func:`pack_equalities`): the locked axes of every joint type."""
PACK_J = 0
"""Packed block: each row's Jacobian ``[lin, ang0, ang1]`` (9 values per row) from here."""
PACK_IJ = PACK_J + 9 * PACK_ROWS
"""... each row's ``[I0^-1 ang0, I1^-1 ang1]`` (6 per row)."""
PACK_KINV = PACK_IJ + 6 * PACK_ROWS
"""... the inverse of the block's effective mass, ``K^-1`` (row ``a`` from ``PACK_KINV + PACK_ROWS a``): the sweep's
solve is then independent dot products, where two triangular solves chained a division through every row."""
PACK_B = PACK_KINV + PACK_ROWS * PACK_ROWS
"""... each row's constant term ``row_b`` [m/s | rad/s]."""
PACK_GAMMA = PACK_B + PACK_ROWS
"""... each row's softness ``gamma`` [1/kg]."""
PACK_SIZE = 144
"""Values per joint of the packed blocks (eighteen cache lines, read front to back)."""


@njit_kernel
def is_packed(equalities, boxed):
    """Whether a joint with ``equalities`` equality rows and ``boxed`` boxed rows is one packed block
    (:func:`pack_equalities`): equality rows only, one to ``PACK_ROWS`` of them. Every pass that treats packed
    joints apart asks this, so they agree on which joints those are."""
    return boxed == 0 and 0 < equalities <= PACK_ROWS


@njit_kernel
def is_plain(equalities, boxed, last_slot):
    """Whether the joint is packed (:func:`is_packed`) and its rows are constraint rows only, its last equality row
    in slot ``last_slot < CONSTRAINT_SLOTS`` (no spring rows): the post-step projection then corrects exactly its
    packed rows, by their stored inverse."""
    return is_packed(equalities, boxed) and last_slot < CONSTRAINT_SLOTS


@njit_kernel
def pack_equalities(first, end, joint_body, body_inv_mass, joint_broken, eq_index, eq_count, box_count, row_J, row_IJ,
                    row_b, row_gamma, pack):  # fmt: skip
    """Pack every unbroken joint ``first <= j < end`` whose rows are ``n <= PACK_ROWS`` equality rows and nothing else
    (a glued joint's, the sweep's fast path): its rows, in ``eq_index`` order, into ``pack[j]`` (layout ``PACK_*``)
    with the inverse ``K^-1`` of their effective mass ``K = J M^-1 J^T + diag(gamma)``, each diagonal raised by the
    same tiny relative regularization as :func:`joint_cholesky_factor`. A glued wall's sweep then reads each joint's
    block from one contiguous stretch instead of sixty scattered cache lines, three times faster.

    ``K`` is built here, in ``work``, and inverted in place by Gauss–Jordan elimination without pivoting (``K`` is
    symmetric positive definite), with the six rows of a glued joint as a constant the compiler unrolls; it is not
    stored per joint (the rows' build then writes a third less memory). The loop holds no call: a call in a loop,
    even one not taken, makes it reload every array's address and strides at each step."""
    work = np.zeros((PACK_ROWS, PACK_ROWS))
    for j in range(first, end):
        n = eq_count[j]
        if joint_broken[j] or not is_packed(n, box_count[j]):
            continue
        b0, b1 = joint_body[j, 0], joint_body[j, 1]
        m = (body_inv_mass[b0] if b0 >= 0 else 0.0) + (body_inv_mass[b1] if b1 >= 0 else 0.0)
        scale = 0.0
        for a in range(n):
            r = eq_index[j, a]
            for p in range(3):
                for i in range(3):
                    pack[j, PACK_J + 9 * a + 3 * p + i] = row_J[j, r, p, i]
            for p in range(2):
                for i in range(3):
                    pack[j, PACK_IJ + 6 * a + 3 * p + i] = row_IJ[j, r, p, i]
            pack[j, PACK_B + a] = row_b[j, r]
            pack[j, PACK_GAMMA + a] = row_gamma[j, r]
            for e in range(a + 1):  # J_r M^-1 J_c^T, symmetric
                c = eq_index[j, e]
                k = 0.0
                for i in range(3):
                    k += m * row_J[j, r, 0, i] * row_J[j, c, 0, i] + row_J[j, r, 1, i] * row_IJ[j, c, 0, i] \
                        + row_J[j, r, 2, i] * row_IJ[j, c, 1, i]  # fmt: skip
                work[a, e] = k
                work[e, a] = k
            work[a, a] += row_gamma[j, r]
            scale = max(scale, work[a, a])
        eps = 1e-10 * scale + 1e-300
        for a in range(n):
            work[a, a] += eps
        if n == PACK_ROWS:
            _gauss_jordan(work, PACK_ROWS, eps)
        else:
            _gauss_jordan(work, n, eps)
        for a in range(n):
            for c in range(n):
                pack[j, PACK_KINV + PACK_ROWS * a + c] = 0.5 * (work[a, c] + work[c, a])  # symmetric to rounding


@njit_kernel(inline="always")
def _gauss_jordan(work, n, eps):
    """``work[:n, :n]`` replaced by its inverse (symmetric positive definite, no pivoting; pivots below ``eps`` are
    raised to it): one division per row, the rest independent multiply-adds."""
    for k in range(n):
        inv = 1.0 / max(work[k, k], eps)
        for c in range(n):
            work[k, c] *= inv
        work[k, k] = inv
        for a in range(n):
            if a != k:
                f = work[a, k]
                work[a, k] = 0.0
                for c in range(n):
                    work[a, c] -= f * work[k, c]


@njit_kernel
def row_speed(row_J, j, r, b0, b1, vel0, omega0, vel1, omega1):
    """``lin·(v1 - v0) + ang1·w1 - ang0·w0`` of row ``r`` of joint ``j`` (``row_J`` (nj, R, 3, 3)); a negative body
    index is the world (at rest).

    ``vel*/omega*``: two (nb, 3) arrays per side whose sum is the velocity (pass the same array twice with zeros
    for a single one). The row is read in place: a view ``row_J[j, r]`` per call costs a reference count
    update, which in a glued wall's sweep took as long as the arithmetic.
    """
    u = 0.0
    for i in range(3):
        if b1 >= 0:
            u += row_J[j, r, 0, i] * (vel0[b1, i] + vel1[b1, i]) + row_J[j, r, 2, i] * (omega0[b1, i] + omega1[b1, i])
        if b0 >= 0:
            u -= row_J[j, r, 0, i] * (vel0[b0, i] + vel1[b0, i]) + row_J[j, r, 1, i] * (omega0[b0, i] + omega1[b0, i])
    return u


@njit_kernel
def joint_cholesky_factor(j, n, eq_index, row_K, row_L):
    """``row_L[j]`` (lower, packed by position) of joint ``j``'s rows ``eq_index[j, :n]`` of ``row_K[j]`` (``row_K``
    (nj, R, R)), each diagonal raised by a tiny relative regularization; indexed in place (a view per joint costs a
    reference count update)."""
    scale = 0.0
    for a in range(n):
        scale = max(scale, row_K[j, eq_index[j, a], eq_index[j, a]])
    eps = 1e-10 * scale + 1e-300
    for a in range(n):
        for c in range(a + 1):
            s = row_K[j, eq_index[j, a], eq_index[j, c]] + (eps if a == c else 0.0)
            for k in range(c):
                s -= row_L[j, a, k] * row_L[j, c, k]
            if a == c:
                row_L[j, a, a] = math.sqrt(max(s, eps))
            else:
                row_L[j, a, c] = s / row_L[j, c, c]


@njit_kernel
def joint_cholesky_solve(j, n, eq_index, row_L, rhs, out):
    """Solve ``L L^T out = rhs`` for joint ``j``'s rows ``eq_index[j, :n]`` (``L = row_L[j]`` from
    :func:`joint_cholesky_factor`; ``rhs``, ``out`` indexed by row slot), indexed in place."""
    for a in range(n):
        s = rhs[eq_index[j, a]]
        for c in range(a):
            s -= row_L[j, a, c] * out[eq_index[j, c]]
        out[eq_index[j, a]] = s / row_L[j, a, a]
    for a in range(n - 1, -1, -1):
        s = out[eq_index[j, a]]
        for c in range(a + 1, n):
            s -= row_L[j, c, a] * out[eq_index[j, c]]
        out[eq_index[j, a]] = s / row_L[j, a, a]


@njit_kernel
def envelope_layout(joint_body, body_count, row_joint, count, layout):
    """``layout[0, a]`` = first column of row ``a``'s envelope, ``layout[1]`` the offsets of the rows; returns the
    number of entries."""
    joint_count = joint_body.shape[0]
    earliest = np.full(body_count, joint_count, np.int64)
    joint_first_row = np.full(joint_count, -1, np.int64)
    for a in range(count):
        j = row_joint[a]
        if joint_first_row[j] < 0:
            joint_first_row[j] = a
        for side in range(2):
            b = joint_body[j, side]
            if b >= 0 and earliest[b] > j:
                earliest[b] = j
    layout[1, 0] = 0
    for a in range(count):
        j = row_joint[a]
        first_joint = j
        for side in range(2):
            b = joint_body[j, side]
            if b >= 0:
                first_joint = min(first_joint, earliest[b])
        layout[0, a] = joint_first_row[first_joint]
        layout[1, a + 1] = layout[1, a] + a - layout[0, a] + 1
    return layout[1, count]


@njit_kernel
def envelope_cholesky(count, layout, K, L, relative):
    """``L`` of ``K`` (both in the envelope layout), each diagonal raised by ``relative`` of itself: a regularization
    relative to the row's own scale (a floor set by the largest diagonal would swamp a long chain's softest mode,
    whose eigenvalue falls as ``1 / n^2`` below the rows' own, and angular rows' diagonals are far above the
    linear ones')."""
    first, start = layout[0], layout[1]
    for a in range(count):
        fa = first[a]
        for c in range(fa, a + 1):
            fc = first[c]
            s = K[start[a] + c - fa]
            for k in range(max(fa, fc), c):
                s -= L[start[a] + k - fa] * L[start[c] + k - fc]
            if c == a:
                eps = relative * K[start[a] + a - fa] + 1e-300
                L[start[a] + a - fa] = math.sqrt(max(s + eps, eps))
            else:
                L[start[a] + c - fa] = s / L[start[c] + c - fc]


@njit_kernel
def envelope_solve(count, layout, L, rhs, x):
    """``x = (L L^T)^-1 rhs`` in the envelope layout (``rhs`` is left unchanged)."""
    first, start = layout[0], layout[1]
    for a in range(count):
        s = rhs[a]
        for k in range(first[a], a):
            s -= L[start[a] + k - first[a]] * x[k]
        x[a] = s / L[start[a] + a - first[a]]
    for a in range(count - 1, -1, -1):
        x[a] /= L[start[a] + a - first[a]]
        for k in range(first[a], a):
            x[k] -= L[start[a] + k - first[a]] * x[a]


@njit_kernel
def envelope_refined_solve(count, layout, K, L, rhs, x, residual, correction, refinements):
    """:func:`envelope_solve` followed by ``refinements`` steps of iterative refinement with ``K`` itself (the
    factor of a long chain's ill-conditioned ``K`` is only accurate to some percent in its softest modes).
    ``residual``, ``correction`` (count,): scratch."""
    first, start = layout[0], layout[1]
    envelope_solve(count, layout, L, rhs, x)
    for _ in range(refinements):
        for a in range(count):
            residual[a] = rhs[a]
        for a in range(count):  # residual -= K x, K symmetric in its lower envelope
            fa = first[a]
            for c in range(fa, a):
                k = K[start[a] + c - fa]
                residual[a] -= k * x[c]
                residual[c] -= k * x[a]
            residual[a] -= K[start[a] + a - fa] * x[a]
        envelope_solve(count, layout, L, residual, correction)
        for a in range(count):
            x[a] += correction[a]
