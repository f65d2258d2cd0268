"""3-vector and 3x3-matrix kernels.

Numba implements ``np.dot`` and ``@`` through SciPy's BLAS, which Blender does not ship, so
kernels use these small loops instead.

Two flavours: ``*_into`` kernels write into a caller's array; the tuple kernels (``vec3``,
``add3``, ``sub3``, ``scale3``, ``axpy3``, ``cross3``, ``norm3``, ``midpoint3``, ``column3``,
``rotate3``, ``rotate_t3``) return tuples of three floats, which Numba keeps in registers (no heap
allocation). Inputs may be tuples or (3,) array views; units are whatever the caller's are.
"""

import math

import numpy as np

from ..jit import njit_kernel


@njit_kernel
def dot3(a, b):
    """``a . b`` for 3-vectors."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit_kernel
def vec3(a):
    """``(a[0], a[1], a[2])``: a (3,) array as a tuple."""
    return (a[0], a[1], a[2])


@njit_kernel
def add3(a, b):
    """``a + b`` as a tuple."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit_kernel
def sub3(a, b):
    """``a - b`` as a tuple."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit_kernel
def scale3(a, s):
    """``s a`` as a tuple (each component ``a_i * s``)."""
    return (a[0] * s, a[1] * s, a[2] * s)


@njit_kernel
def axpy3(s, a, b):
    """``s * a + b`` as a tuple."""
    return (s * a[0] + b[0], s * a[1] + b[1], s * a[2] + b[2])


@njit_kernel
def cross3(a, b):
    """``a x b`` as a tuple."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit_kernel
def norm3(a):
    """``|a|`` (no scaling against overflow)."""
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit_kernel
def midpoint3(a, b):
    """``(a + b) / 2`` as a tuple (each component ``0.5 (a_i + b_i)``)."""
    return (0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2]))


@njit_kernel
def column3(R, j):
    """Column ``j`` of a 3x3 matrix as a tuple (for a rotation: local axis ``j`` in world)."""
    return (R[0, j], R[1, j], R[2, j])


@njit_kernel
def rotate3(R, v):
    """``R v`` for a 3x3 matrix as a tuple (for a rotation: local vector to world)."""
    return (
        R[0, 0] * v[0] + R[0, 1] * v[1] + R[0, 2] * v[2],
        R[1, 0] * v[0] + R[1, 1] * v[1] + R[1, 2] * v[2],
        R[2, 0] * v[0] + R[2, 1] * v[1] + R[2, 2] * v[2],
    )


@njit_kernel
def rotate_t3(R, v):
    """``R^T v`` for a 3x3 matrix as a tuple (for a rotation: world vector to local)."""
    return (
        R[0, 0] * v[0] + R[1, 0] * v[1] + R[2, 0] * v[2],
        R[0, 1] * v[0] + R[1, 1] * v[1] + R[2, 1] * v[2],
        R[0, 2] * v[0] + R[1, 2] * v[1] + R[2, 2] * v[2],
    )


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
