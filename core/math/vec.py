"""3-vector and 3x3-matrix kernels.

Numba implements ``np.dot`` and ``@`` through SciPy's BLAS, which Blender does not ship, so
kernels use these small loops instead.
"""

import numpy as np

from ..jit import njit_kernel


@njit_kernel
def dot3(a, b):
    """``a . b`` for 3-vectors."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit_kernel
def cross_into(a, b, out):
    """``out = a x b`` for 3-vectors, no allocation (``out`` must not alias ``a`` or ``b``)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit_kernel
def mat3_vec_into(A, x, out):
    """``out = A x`` for a 3x3 matrix and a 3-vector, no allocation."""
    for i in range(3):
        out[i] = A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2]


@njit_kernel
def point_velocity_into(vel, omega, r, out):
    """``out = v + w x r``: velocity [m/s] of the point at arm ``r`` of a rigid body."""
    out[0] = vel[0] + omega[1] * r[2] - omega[2] * r[1]
    out[1] = vel[1] + omega[2] * r[0] - omega[0] * r[2]
    out[2] = vel[2] + omega[0] * r[1] - omega[1] * r[0]


@njit_kernel
def mat3_vec(A, x):
    """``A x`` for a 3x3 matrix and a 3-vector, new array (3,)."""
    out = np.empty(3)
    for i in range(3):
        out[i] = A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2]
    return out


@njit_kernel
def mat3_mul(A, B, out):
    """``out = A B`` for 3x3 matrices (``out`` must not alias ``A`` or ``B``)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


@njit_kernel
def mat3_sandwich(R, A, out):
    """``out = R A R^T`` for 3x3 matrices (inertia to world frame, course eq. 66)."""
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                for m in range(3):
                    s += R[i, k] * A[k, m] * R[j, m]
            out[i, j] = s
