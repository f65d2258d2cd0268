"""Unit-quaternion kernels. Quaternions are ``(w, x, y, z)``, scalar first, as in Blender.

All functions take and return plain float64 arrays of shape (4,) or (3,) / (3, 3).
"""

import math

import numpy as np

from ..jit import njit_kernel


@njit_kernel
def quat_mul(a, b):
    """Hamilton product ``a ⊗ b``, shape (4,)."""
    aw, ax, ay, az = a[0], a[1], a[2], a[3]
    bw, bx, by, bz = b[0], b[1], b[2], b[3]
    out = np.empty(4)
    out[0] = aw * bw - ax * bx - ay * by - az * bz
    out[1] = aw * bx + ax * bw + ay * bz - az * by
    out[2] = aw * by - ax * bz + ay * bw + az * bx
    out[3] = aw * bz + ax * by - ay * bx + az * bw
    return out


@njit_kernel
def quat_conjugate(q):
    """Conjugate (inverse of a unit quaternion), shape (4,)."""
    out = np.empty(4)
    out[0] = q[0]
    out[1] = -q[1]
    out[2] = -q[2]
    out[3] = -q[3]
    return out


@njit_kernel
def quat_to_matrix(q, out):
    """Write the rotation matrix of unit quaternion ``q`` into ``out`` (3, 3)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    out[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[0, 1] = 2.0 * (x * y - w * z)
    out[0, 2] = 2.0 * (x * z + w * y)
    out[1, 0] = 2.0 * (x * y + w * z)
    out[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[1, 2] = 2.0 * (y * z - w * x)
    out[2, 0] = 2.0 * (x * z - w * y)
    out[2, 1] = 2.0 * (y * z + w * x)
    out[2, 2] = 1.0 - 2.0 * (x * x + y * y)


def rotation_matrix(q) -> np.ndarray:
    """The rotation matrix (3, 3) of unit quaternion ``q`` (4,) wxyz as a new array (set-up code, not kernels)."""
    R = np.empty((3, 3))
    quat_to_matrix(np.asarray(q, dtype=np.float64), R)
    return R


@njit_kernel
def quat_rotate(q, v):
    """Rotate 3-vector ``v`` by unit quaternion ``q``: ``R(q) v``."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    # t = 2 (q_vec x v); v' = v + w t + q_vec x t
    tx = 2.0 * (y * v[2] - z * v[1])
    ty = 2.0 * (z * v[0] - x * v[2])
    tz = 2.0 * (x * v[1] - y * v[0])
    out = np.empty(3)
    out[0] = v[0] + w * tx + (y * tz - z * ty)
    out[1] = v[1] + w * ty + (z * tx - x * tz)
    out[2] = v[2] + w * tz + (x * ty - y * tx)
    return out


@njit_kernel
def quat_normalize(q):
    """Return ``q / |q|``; the identity for a zero quaternion."""
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    out = np.empty(4)
    if n == 0.0:
        out[0] = 1.0
        out[1] = 0.0
        out[2] = 0.0
        out[3] = 0.0
        return out
    for i in range(4):
        out[i] = q[i] / n
    return out


@njit_kernel
def quat_integrate(q, omega, h):
    """One explicit step of ``Q' = Q + h H(Q) omega`` followed by normalisation.

    ``omega`` is the world-frame angular velocity [rad/s]; ``H`` is the 4x3
    kinematic map of course eq. 73, i.e. ``Qdot = 1/2 (0, omega) ⊗ Q``; eq. 75
    says to renormalise after every update.
    """
    w, x, y, z = quat_step(q[0], q[1], q[2], q[3], omega[0], omega[1], omega[2], h)
    out = np.empty(4)
    out[0], out[1], out[2], out[3] = w, x, y, z
    return out


@njit_kernel
def quat_step(w, x, y, z, ox, oy, oz, h):
    """:func:`quat_integrate` in scalars: ``(w, x, y, z)`` stepped by the world-frame ``(ox, oy, oz)`` [rad/s] over
    ``h`` [s] and normalised (the identity for a zero result). A per-body loop calls this one: it allocates
    nothing and takes no array, so it costs no reference-count updates."""
    dw = 0.5 * (-x * ox - y * oy - z * oz)
    dx = 0.5 * (w * ox + z * oy - y * oz)
    dy = 0.5 * (-z * ox + w * oy + x * oz)
    dz = 0.5 * (y * ox - x * oy + w * oz)
    w, x, y, z = w + h * dw, x + h * dx, y + h * dy, z + h * dz
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if n == 0.0:
        return 1.0, 0.0, 0.0, 0.0
    return w / n, x / n, y / n, z / n


@njit_kernel
def quat_slerp(a, b, t):
    """Spherical interpolation from ``a`` (t=0) to ``b`` (t=1) along the shorter arc."""
    d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
    sign = 1.0
    if d < 0.0:
        d = -d
        sign = -1.0
    out = np.empty(4)
    if d > 0.9995:
        for i in range(4):
            out[i] = (1.0 - t) * a[i] + t * sign * b[i]
        return quat_normalize(out)
    theta = math.acos(d)
    s = math.sin(theta)
    wa = math.sin((1.0 - t) * theta) / s
    wb = sign * math.sin(t * theta) / s
    for i in range(4):
        out[i] = wa * a[i] + wb * b[i]
    return quat_normalize(out)


@njit_kernel
def quat_angular_velocity(a, b, h):
    """World angular velocity [rad/s] that rotates ``a`` into ``b`` in time ``h`` (shorter arc)."""
    # b = exp(h omega / 2) ⊗ a  =>  delta = b ⊗ conj(a) = (cos(|phi|/2), sin(|phi|/2) axis)
    d = quat_mul(b, quat_conjugate(a))
    if d[0] < 0.0:
        for i in range(4):
            d[i] = -d[i]
    s = math.sqrt(d[1] * d[1] + d[2] * d[2] + d[3] * d[3])
    out = np.zeros(3)
    if s < 1e-15:
        return out
    angle = 2.0 * math.atan2(s, d[0])
    for i in range(3):
        out[i] = d[i + 1] / s * angle / h
    return out
