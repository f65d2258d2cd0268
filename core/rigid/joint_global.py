"""One direct solve over the equality rows of all joints together, for scenes with few such rows.

Gauss–Seidel over joint blocks passes a load down a chain one link per sweep: a 20-link chain needs hundreds of
sweeps and still stretches. When the joints' equality rows are few (``GLOBAL_MAX_ROWS``), the rigid step instead
assembles their whole effective mass ``K = J M^-1 J^T`` (dense, coupled through shared bodies) and factors it once
per step: the equality rows are then exact in one solve, for the velocity rows and for the position projection
(:mod:`.joint_projection`) alike. Boxed rows (limits, motors) stay Gauss–Seidel around it.
"""

import numpy as np

from ..contact_solvers.joint_block import JOINT_ROWS, ROW_EQUALITY, cholesky_factor
from ..jit import njit_kernel

GLOBAL_MAX_ROWS = 360
"""At most this many equality rows are solved as one dense system (a 60-link chain of hinges)."""


def global_scratch(capacity: int) -> tuple:
    """``(row_joint (n,), row_slot (n,), identity (n,), K (n, n), L (n, n), rhs (n,), x (n,), count (1,))``."""
    n = capacity
    return (np.zeros(n, np.int64), np.zeros(n, np.int64), np.arange(n, dtype=np.int64), np.zeros((n, n)),
            np.zeros((n, n)), np.zeros(n), np.zeros(n), np.zeros(1, np.int64))  # fmt: skip


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
def factor_global(joint_body, rows, body_inv_mass, row_joint, row_slot, count, K, L, identity):
    """Assemble and factor ``K + diag(gamma)`` over the ``count`` rows ``(row_joint, row_slot)``."""
    J, IJ, gamma = rows[1], rows[2], rows[6]
    for a in range(count):
        for b in range(a + 1):
            k = row_pair_coupling(row_joint[a], row_slot[a], row_joint[b], row_slot[b], joint_body, J, IJ,
                                  body_inv_mass)  # fmt: skip
            K[a, b] = k
            K[b, a] = k
        K[a, a] += gamma[row_joint[a], row_slot[a]]
    cholesky_factor(count, identity, K, L)


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
