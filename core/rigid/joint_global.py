"""One direct solve over the equality rows of all joints together (a sparse Cholesky on the rows' envelope).

Gauss–Seidel over joint blocks passes a load down a chain one link per sweep: a 20-link chain needs hundreds of
sweeps and still stretches. The rigid step instead assembles the whole effective mass ``K = J M^-1 J^T`` of the
joints' equality rows (coupled through shared bodies) and factors it once per step: the equality rows are then
exact in one solve, for the velocity rows and for the position projection (:mod:`.joint_projection`) alike.
Boxed rows (limits, motors) stay Gauss–Seidel around it.

The rows are ordered by joint, and row ``a`` couples only with the rows of joints sharing a body with its own; so
``K``'s lower triangle lives in an envelope (skyline): row ``a`` from column ``first[a]``, the first row of the
earliest joint that shares a body with its joint, to ``a``. Cholesky fills nothing outside the envelope, so a
chain of ``n`` links costs ``O(n)``. A scene whose envelope is too large (a wide wall: every row reaches back a
whole course of bricks) keeps Gauss–Seidel over the blocks (``ENVELOPE_MAX_WORK``).
"""

import numpy as np

from ..contact_solvers.joint_block import JOINT_ROWS, ROW_EQUALITY, envelope_cholesky, envelope_layout
from ..jit import njit_kernel

ENVELOPE_MAX_WORK = 2e7
"""The envelope solve is used when its factorization costs at most this many multiply-adds per step."""
ENVELOPE_MAX_ENTRIES = 4_000_000
"""... and its envelope holds at most this many entries (32 MB per factor)."""


def potential_rows(model) -> np.ndarray:
    """Upper bound of each joint's rows in a step, shape (joint_count,): its used axes plus springs and motors."""
    flags = model.joint_axis_flags
    return (flags != 0).sum(axis=1) + ((flags & 4) != 0).sum(axis=1) + ((flags & 8) != 0).sum(axis=1)


def envelope_capacity(model) -> tuple[int, int]:
    """``(rows, entries)`` the envelope scratch needs at most, or ``(0, 0)`` when the solve would cost more than
    ``ENVELOPE_MAX_WORK`` or ``ENVELOPE_MAX_ENTRIES`` (the scene then keeps Gauss–Seidel over the blocks)."""
    rows = potential_rows(model)
    start = np.concatenate([[0], np.cumsum(rows)])
    first_joint = np.arange(model.joint_count)
    earliest: dict[int, int] = {}
    for j, (b0, b1) in enumerate(model.joint_body.tolist()):
        for b in (b0, b1):
            if b >= 0:
                first_joint[j] = min(first_joint[j], earliest.setdefault(b, j))
    entries, work = 0, 0.0
    for j in range(model.joint_count):
        for a in range(start[j], start[j + 1]):
            width = a - start[first_joint[j]] + 1
            entries += width
            work += float(width) * width
    if work > ENVELOPE_MAX_WORK or entries > ENVELOPE_MAX_ENTRIES:
        return 0, 0
    return int(start[-1]), int(entries)


def global_scratch(rows: int, entries: int) -> tuple:
    """``(row_joint (n,), row_slot (n,), layout (2, n + 1) [first; start], K (e,), L (e,), rhs (n,), x (n,),
    count (1,))`` for ``n`` rows and ``e`` envelope entries."""
    n = rows
    return (np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros((2, n + 1), np.int64), np.zeros(entries),
            np.zeros(entries), np.zeros(n), np.zeros(n), np.zeros(1, np.int64))  # fmt: skip


@njit_kernel
def row_pair_coupling(ja, ra, jb, rb, joint_body, J, IJ, body_inv_mass):
    """``J_a M^-1 J_b^T`` [1/kg] of row ``ra`` of joint ``ja`` and row ``rb`` of joint ``jb`` (shared bodies)."""
    k = 0.0
    for sa in range(2):
        x = joint_body[ja, sa]
        if x < 0:
            continue
        for sb in range(2):
            if joint_body[jb, sb] != x:
                continue
            sgn = (1.0 if sa == 1 else -1.0) * (1.0 if sb == 1 else -1.0)
            for i in range(3):
                k += sgn * (
                    body_inv_mass[x] * J[ja, ra, 0, i] * J[jb, rb, 0, i] + J[ja, ra, 1 + sa, i] * IJ[jb, rb, sb, i]
                )
    return k


@njit_kernel
def factor_global(joint_body, rows, body_inv_mass, row_joint, row_slot, count, K, L, layout, relative):
    """Assemble ``K + diag(gamma)`` over the ``count`` rows ``(row_joint, row_slot)`` in their envelope and factor
    it with each diagonal raised by ``relative`` of itself; False (nothing factored) when the envelope does not fit
    ``K``."""
    J, IJ, gamma = rows[1], rows[2], rows[6]
    if envelope_layout(joint_body, body_inv_mass.shape[0], row_joint, count, layout) > K.shape[0]:
        return False
    first, start = layout[0], layout[1]
    for a in range(count):
        ja, ra = row_joint[a], row_slot[a]
        for c in range(first[a], a + 1):
            K[start[a] + c - first[a]] = row_pair_coupling(ja, ra, row_joint[c], row_slot[c], joint_body, J, IJ,
                                                          body_inv_mass)  # fmt: skip
        K[start[a] + a - first[a]] += gamma[ja, ra]
    envelope_cholesky(count, layout, K, L, relative)
    return True


@njit_kernel
def collect_equality_rows(rows, row_joint, row_slot):
    """The equality rows of this step (``kind == ROW_EQUALITY``) in joint order; returns their count (or -1 when
    more than the scratch holds)."""
    kind = rows[0]
    n = 0
    for j in range(kind.shape[0]):
        for r in range(JOINT_ROWS):
            if kind[j, r] == ROW_EQUALITY:
                if n == row_joint.shape[0]:
                    return -1
                row_joint[n] = j
                row_slot[n] = r
                n += 1
    return n
