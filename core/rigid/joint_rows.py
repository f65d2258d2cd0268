"""Joint rows: per step, each unbroken joint's velocity rows, its effective mass and the equality block's factor.

Every joint has ``JOINT_ROWS`` fixed slots: 0–5 the constraint rows of its six axes (locked: an equality row;
limited: a one-sided row toward the nearer limit), 6–11 its springs, 12–13 its motors along and about X. A row's
Jacobian is stored as ``[lin, ang0, ang1]`` (3, 3): its velocity is ``u = lin·(v1 - v0) + ang1·w1 - ang0·w0`` in
the core's coordinate of :mod:`.joints` (times the axis sign). Linear rows use body0's frame axis ``a`` with the
arms ``p1 - x0`` and ``p1 - x1`` (``p1`` body1's anchor), which is the exact rate of ``(p1 - p0)·a`` when body0
turns; angular rows use the dual basis of the XYZ Euler axes (Bullet's generic 6-DOF axes), which is the exact
rate of each Euler angle of the relative rotation, so free, locked and limited angles mix on any axis. The
linear motor alone takes body0's arm to its own anchor, ``p0 - x0``, as Bullet does: a motor locks nothing, the
anchors may drift far apart, and an arm to ``p1`` would turn body0 instead of driving it.

Springs (GENERIC_SPRING, rest at the start pose, coordinate 0), the two laws of Blender's Bullet:

* SPRING2 (``btGeneric6DofSpring2Constraint``): the force ``-k x - c v``. The spring's part is explicit (the
  coordinate at the start of the step), the damping's implicit (the velocity at its end): a soft equality row
  ``u + k x / c + lambda / (h c) = 0``, that is ``lambda = -h (k x + c u)``; without damping a fixed impulse
  ``-h k x``. Frequency ``sqrt(k / m)`` and decay ``c / (2 m)`` to first order in ``h``, stable for any ``c`` and
  for ``h sqrt(k / m) < 2``. Bullet applies the same force explicitly but, on an angular row of a body far from
  the axis, its solver delivers only a share of it: the model's angular stiffness and damping already carry
  that share and Bullet's limits on ``k`` and ``c`` (:func:`.joints.spring2_gains`).
* SPRING1 (``btGeneric6DofSpringConstraint``, a motor per axis): a boxed row that drives the coordinate's rate
  toward ``-rate k x`` with an impulse of at most ``h k |x|``; ``rate`` (:func:`.joints.spring1_rate`, stored in
  the damping array) is ``(1 - d) / (h_B n_B)``. Far from that rate the row always saturates (the undamped
  explicit spring); with ``d = 1`` the target is rest, and the spring stops dead where its force first holds
  the load.

Motors drive the coordinate's rate to the target with an impulse of at most ``h`` times the maximum (a force).

The velocity rows carry no position bias for locked axes (the drift is removed after the step by
:func:`project_joints`); limit rows are speculative: ``u >= -(s - lower) / h`` while the limit is not reached.
"""

import math

import numpy as np

from ..contact_solvers.joint_block import (
    JOINT_ROWS,
    ROW_BOXED,
    ROW_EQUALITY,
    ROW_OFF,
    cholesky_factor,
)
from ..jit import njit_kernel
from ..math.quat import quat_to_matrix
from ..math.vec import cross_into
from .joints import AXIS_LIMITED, AXIS_LOCKED, AXIS_MOTOR, AXIS_SPRING, SPRING1


def joint_scratch(joint_count: int) -> dict:
    """The per-step row arrays of :func:`compute_joint_rows` for ``joint_count`` joints (allocated once)."""
    nj, r = joint_count, JOINT_ROWS
    return dict(
        row_kind=np.zeros((nj, r), np.int32),
        row_J=np.zeros((nj, r, 3, 3)),
        row_IJ=np.zeros((nj, r, 2, 3)),
        row_b=np.zeros((nj, r)),
        row_lo=np.zeros((nj, r)),
        row_hi=np.zeros((nj, r)),
        row_gamma=np.zeros((nj, r)),
        row_K=np.zeros((nj, r, r)),
        row_L=np.zeros((nj, r, r)),
        eq_index=np.zeros((nj, r), np.int64),
        eq_count=np.zeros(nj, np.int64),
        box_index=np.zeros((nj, r), np.int64),
        box_count=np.zeros(nj, np.int64),
    )


MOTOR_LINEAR_SLOT = 12
"""The slot of the motor along X (13: about X)."""


@njit_kernel
def _side_frame(b, body_pos, body_quat, frame_pos, frame_quat, Rb, Rf, out_axes, out_anchor, out_center):
    """One side's joint frame in the world: axes (3, 3) as columns, anchor (3,), body centre (3,)."""
    quat_to_matrix(frame_quat, Rf)
    if b < 0:
        for i in range(3):
            out_center[i] = 0.0
            out_anchor[i] = frame_pos[i]
            for k in range(3):
                out_axes[i, k] = Rf[i, k]
        return
    quat_to_matrix(body_quat[b], Rb)
    for i in range(3):
        out_center[i] = body_pos[b, i]
        out_anchor[i] = body_pos[b, i] + Rb[i, 0] * frame_pos[0] + Rb[i, 1] * frame_pos[1] + Rb[i, 2] * frame_pos[2]
        for k in range(3):
            out_axes[i, k] = Rb[i, 0] * Rf[0, k] + Rb[i, 1] * Rf[1, k] + Rb[i, 2] * Rf[2, k]


@njit_kernel
def joint_geometry(j, joint_body, joint_frame_pos, joint_frame_quat, joint_sign, body_pos, body_quat, g, out_s,
                   out_J):  # fmt: skip
    """Joint ``j``'s six coordinates ``out_s`` (6,) [m, rad] (Blender's sense) and their rows ``out_J`` (6, 3, 3).

    ``g``: scratch (10, 3, 3) from :func:`geometry_scratch`.
    """
    A, B, Rb, Rf, M, V = g[0], g[1], g[2], g[3], g[4], g[5]
    p0, p1, c0, c1 = V[0], V[1], V[2], g[6, 0]
    _side_frame(joint_body[j, 0], body_pos, body_quat, joint_frame_pos[j, 0], joint_frame_quat[j, 0], Rb, Rf, A, p0,
                c0)  # fmt: skip
    _side_frame(joint_body[j, 1], body_pos, body_quat, joint_frame_pos[j, 1], joint_frame_quat[j, 1], Rb, Rf, B, p1,
                c1)  # fmt: skip
    arm0, arm1, axis = g[7, 0], g[7, 1], g[7, 2]
    for i in range(3):
        arm0[i] = p1[i] - c0[i]
        arm1[i] = p1[i] - c1[i]
    for k in range(3):
        s = 0.0
        for i in range(3):
            axis[i] = A[i, k]
            s += (p1[i] - p0[i]) * A[i, k]
            out_J[k, 0, i] = A[i, k]
        out_s[k] = s
        cross_into(arm0, axis, out_J[k, 1])
        cross_into(arm1, axis, out_J[k, 2])
    for r in range(3):  # M = A^T B: body1's frame in body0's
        for c in range(3):
            M[r, c] = A[0, r] * B[0, c] + A[1, r] * B[1, c] + A[2, r] * B[2, c]
    out_s[3] = math.atan2(-M[1, 2], M[2, 2])
    out_s[4] = math.asin(min(max(M[0, 2], -1.0), 1.0))
    out_s[5] = math.atan2(-M[0, 1], M[0, 0])
    _euler_rate_rows(A, B, g[8], out_J)
    for k in range(6):
        out_s[k] *= joint_sign[j, k]
        for r in range(3):
            for i in range(3):
                out_J[k, r, i] *= joint_sign[j, k]


@njit_kernel
def _euler_rate_rows(A, B, E, out_J):
    """Rows 3–5 of ``out_J``: the dual basis of the XYZ Euler axes ``(A x, (B z × A x)/|·|, B z)`` (world)."""
    e1, e2, e3 = E[0], E[1], E[2]
    for i in range(3):
        e1[i] = A[i, 0]
        e3[i] = B[i, 2]
    cross_into(e3, e1, e2)
    n = math.sqrt(e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2])
    if n < 1e-9:  # gimbal lock (Y at ±90°): the Euler rates are undefined; keep body0's Y axis
        for i in range(3):
            e2[i] = A[i, 1]
    else:
        for i in range(3):
            e2[i] /= n
    cross_into(e2, e3, out_J[3, 1])
    cross_into(e3, e1, out_J[4, 1])
    cross_into(e1, e2, out_J[5, 1])
    vol = e1[0] * out_J[3, 1, 0] + e1[1] * out_J[3, 1, 1] + e1[2] * out_J[3, 1, 2]
    vol = vol if abs(vol) > 1e-9 else 1e-9
    for k in range(3, 6):
        for i in range(3):
            out_J[k, 1, i] /= vol
            out_J[k, 2, i] = out_J[k, 1, i]
            out_J[k, 0, i] = 0.0


@njit_kernel
def geometry_scratch():
    """Scratch of :func:`joint_geometry`: (10, 3, 3) plus the coordinates (6,) and rows (6, 3, 3)."""
    return np.zeros((10, 3, 3)), np.zeros(6), np.zeros((6, 3, 3))


@njit_kernel
def _inv_inertia_row(b, I_world, ang, out):
    for i in range(3):
        out[i] = 0.0
        if b >= 0:
            out[i] = I_world[b, i, 0] * ang[0] + I_world[b, i, 1] * ang[1] + I_world[b, i, 2] * ang[2]


@njit_kernel
def row_coupling(Ja, IJb, b0, b1, body_inv_mass, Jb):
    """``J_a M^-1 J_b^T`` of two rows of one joint [1/kg]; ``IJb`` (2, 3): ``I^-1`` times ``J_b``'s angular parts."""
    m0 = body_inv_mass[b0] if b0 >= 0 else 0.0
    m1 = body_inv_mass[b1] if b1 >= 0 else 0.0
    k = 0.0
    for i in range(3):
        k += (m0 + m1) * Ja[0, i] * Jb[0, i] + Ja[1, i] * IJb[0, i] + Ja[2, i] * IJb[1, i]
    return k


@njit_kernel
def _slot_rows(j, flags, s, lower, upper, k, c, spring1, target, max_force, dt, slot, kind, b, lo, hi, gamma):
    """Kind, bias and bounds of slot ``slot`` of joint ``j`` (axis ``slot % 6``; slots 12/13 are axes 0/3).

    ``c``: SPRING2's damping [N·s/m] or SPRING1's rate [1/s]; ``max_force`` [N | N·m].
    """
    inf = math.inf
    kind[j, slot], b[j, slot], lo[j, slot], hi[j, slot], gamma[j, slot] = ROW_OFF, 0.0, 0.0, 0.0, 0.0
    if slot < 6:
        if flags & AXIS_LOCKED:
            kind[j, slot] = ROW_EQUALITY
        elif flags & AXIS_LIMITED:
            kind[j, slot] = ROW_BOXED
            if s - lower <= upper - s:  # the nearer limit: lower, pushes the coordinate up
                b[j, slot], lo[j, slot], hi[j, slot] = max(s - lower, 0.0) / dt, 0.0, inf
            else:
                b[j, slot], lo[j, slot], hi[j, slot] = -max(upper - s, 0.0) / dt, -inf, 0.0
    elif slot < 12:
        if not flags & AXIS_SPRING:
            return
        if spring1:
            if k > 0.0:  # drive toward the rate -c k s, the force at most k |s|
                kind[j, slot], b[j, slot], hi[j, slot] = ROW_BOXED, c * k * s, dt * k * abs(s)
                lo[j, slot] = -hi[j, slot]
        elif c > 0.0:  # lambda = -h (k s + c u_end)
            kind[j, slot], b[j, slot], gamma[j, slot] = ROW_EQUALITY, k * s / c, 1.0 / (dt * c)
        elif k > 0.0:
            kind[j, slot] = ROW_BOXED
            lo[j, slot] = hi[j, slot] = -dt * k * s
    elif flags & AXIS_MOTOR:
        kind[j, slot], b[j, slot] = ROW_BOXED, -target
        lo[j, slot], hi[j, slot] = -max_force * dt, max_force * dt


@njit_kernel
def _own_anchor_arm(g, sign, out):
    """The linear motor's angular part on body0, ``sign (p0 - x0) × a`` (into ``out`` (3,)), from the scratch
    :func:`joint_geometry` left in ``g``: a motor locks nothing, so the bodies may drift far apart along other
    axes, and it drives each body at its own anchor as Bullet does (an arm to body1's anchor would turn body0)."""
    p0, c0, arm, axis = g[5, 0], g[5, 2], g[7, 0], g[7, 2]
    for i in range(3):
        arm[i] = p0[i] - c0[i]
        axis[i] = g[0, i, 0]
    cross_into(arm, axis, out)
    for i in range(3):
        out[i] *= sign


@njit_kernel
def compute_joint_rows(joints, body_pos, body_quat, body_vel, body_omega, body_inv_mass, inv_inertia_world,
                       vel_free, omega_free, joint_broken, dt, out):  # fmt: skip
    """This step's rows of every unbroken joint at the start poses (see the module docstring).

    ``joints``: the model's tuple of :func:`joint_model_arrays`; ``out``: the tuple of :func:`joint_scratch`'s
    arrays in :func:`joint_row_arrays` order. ``row_b`` (nj, R) [m/s] receives ``J u_free + bias`` so a row's
    velocity is ``row_b + J (dv, dw)``; ``row_K`` (nj, R, R) [1/kg] the effective mass with the soft rows'
    ``gamma`` on the diagonal, ``row_L`` the Cholesky factor of its equality rows.
    """
    joint_body, frame_pos, frame_quat, flags, lower, upper, sign, stiff, damp, spring_type, target, max_imp = joints
    kind, J, IJ, b, lo, hi, gamma, K, L, eq_index, eq_count, box_index, box_count = out
    g, s, Jg = geometry_scratch()
    for j in range(joint_body.shape[0]):
        eq_count[j] = 0
        box_count[j] = 0
        if joint_broken[j]:
            for r in range(JOINT_ROWS):
                kind[j, r] = ROW_OFF
            continue
        b0, b1 = joint_body[j, 0], joint_body[j, 1]
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, body_pos, body_quat, g, s, Jg)
        for r in range(JOINT_ROWS):
            axis = r % 6 if r < 12 else 3 * (r - 12)
            for p in range(3):
                for i in range(3):
                    J[j, r, p, i] = Jg[axis, p, i]
            _slot_rows(j, flags[j, axis], s[axis], lower[j, axis], upper[j, axis], stiff[j, axis], damp[j, axis],
                       spring_type[j] == SPRING1, target[j, axis], max_imp[j, axis], dt, r, kind, b, lo, hi,
                       gamma)  # fmt: skip
            if kind[j, r] == ROW_OFF:
                continue
            if r == MOTOR_LINEAR_SLOT:
                _own_anchor_arm(g, sign[j, 0], J[j, r, 1])
            _inv_inertia_row(b0, inv_inertia_world, J[j, r, 1], IJ[j, r, 0])
            _inv_inertia_row(b1, inv_inertia_world, J[j, r, 2], IJ[j, r, 1])
            b[j, r] += _row_speed_single(J[j, r], b0, b1, vel_free, omega_free)
        _joint_block(j, b0, b1, body_inv_mass, kind, J, IJ, gamma, K, L, eq_index, eq_count, box_index, box_count)


@njit_kernel
def _row_speed_single(J, b0, b1, vel, omega):
    """``lin·(v1 - v0) + ang1·w1 - ang0·w0`` with one velocity array per kind (the world at rest)."""
    u = 0.0
    for i in range(3):
        if b1 >= 0:
            u += J[0, i] * vel[b1, i] + J[2, i] * omega[b1, i]
        if b0 >= 0:
            u -= J[0, i] * vel[b0, i] + J[1, i] * omega[b0, i]
    return u


@njit_kernel
def _joint_block(j, b0, b1, body_inv_mass, kind, J, IJ, gamma, K, L, eq_index, eq_count, box_index, box_count):
    """Effective mass of joint ``j``'s active rows and the factor of its equality block; rows without mass go off."""
    for r in range(JOINT_ROWS):
        if kind[j, r] == ROW_OFF:
            continue
        diag = row_coupling(J[j, r], IJ[j, r], b0, b1, body_inv_mass, J[j, r]) + gamma[j, r]
        if not diag > 1e-300:  # both sides immovable: nothing to solve
            kind[j, r] = ROW_OFF
            continue
        if kind[j, r] == ROW_EQUALITY:
            eq_index[j, eq_count[j]] = r
            eq_count[j] += 1
        else:
            box_index[j, box_count[j]] = r
            box_count[j] += 1
    m = (body_inv_mass[b0] if b0 >= 0 else 0.0) + (body_inv_mass[b1] if b1 >= 0 else 0.0)
    for r in range(JOINT_ROWS):
        if kind[j, r] == ROW_OFF:
            continue
        for c in range(r + 1):  # K is symmetric: J_r M^-1 J_c^T (row_coupling, written out for the step's speed)
            if kind[j, c] != ROW_OFF:
                k = 0.0
                for i in range(3):
                    k += m * J[j, r, 0, i] * J[j, c, 0, i] + J[j, r, 1, i] * IJ[j, c, 0, i] \
                        + J[j, r, 2, i] * IJ[j, c, 1, i]  # fmt: skip
                K[j, r, c] = k
                K[j, c, r] = k
        K[j, r, r] += gamma[j, r]
    cholesky_factor(eq_count[j], eq_index[j], K[j], L[j])


def joint_model_arrays(m) -> tuple:
    """The model's joint arrays as the one tuple the joint kernels take (fixed order, no copy)."""
    return (
        m.joint_body, m.joint_frame_pos, m.joint_frame_quat, m.joint_axis_flags, m.joint_lower, m.joint_upper,
        m.joint_sign, m.joint_spring_stiffness, m.joint_spring_damping, m.joint_spring_type, m.joint_motor_target,
        m.joint_motor_max_impulse,
    )  # fmt: skip


def joint_row_arrays(scratch: dict) -> tuple:
    """:func:`joint_scratch`'s arrays as the tuple :func:`compute_joint_rows` and the sweep take."""
    keys = ("row_kind", "row_J", "row_IJ", "row_b", "row_lo", "row_hi", "row_gamma", "row_K", "row_L", "eq_index",
            "eq_count", "box_index", "box_count")  # fmt: skip
    return tuple(scratch[k] for k in keys)


@njit_kernel
def _position_rows(j, flags, lower, upper, s, C, index):
    """Rows of joint ``j`` the projection corrects: locked axes and violated limits; their errors into ``C``."""
    n = 0
    for k in range(6):
        f = flags[j, k]
        err = 0.0
        if f & AXIS_LOCKED:
            err = s[k] - lower[j, k]
        elif f & AXIS_LIMITED:
            if s[k] < lower[j, k]:
                err = s[k] - lower[j, k]
            elif s[k] > upper[j, k]:
                err = s[k] - upper[j, k]
            else:
                continue
        else:
            continue
        C[k] = err
        index[n] = k
        n += 1
    return n


@njit_kernel
def joint_errors(joints, joint_broken, pos, quat, out_error):
    """Largest error of the unbroken joints' locked axes and violated limits: ``out_error`` (2,) = [m, rad]."""
    joint_body, frame_pos, frame_quat, flags, lower, upper, sign = joints[:7]
    g, s, Jg = geometry_scratch()
    C = np.zeros(JOINT_ROWS)
    index = np.zeros(JOINT_ROWS, np.int64)
    out_error[0] = 0.0
    out_error[1] = 0.0
    for j in range(joint_body.shape[0]):
        if joint_broken[j]:
            continue
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, g, s, Jg)
        n = _position_rows(j, flags, lower, upper, s, C, index)
        for a in range(n):
            k = index[a]
            side = 0 if k < 3 else 1
            out_error[side] = max(out_error[side], abs(C[k]))


@njit_kernel
def drop_joined_pairs(pairs, count, shape_body, body_count, joined):
    """Remove in place, keeping the order, the candidate shape pairs ``pairs[:count]`` whose bodies a joint with
    Disable Collisions joins; ``joined`` (k,) int64: sorted keys ``min(b0, b1) * body_count + max(b0, b1)``.
    Returns the new count."""
    n = 0
    for p in range(count):
        a, b = shape_body[pairs[p, 0]], shape_body[pairs[p, 1]]
        key = min(a, b) * body_count + max(a, b)
        i = np.searchsorted(joined, key)
        if i < joined.shape[0] and joined[i] == key:
            continue
        pairs[n, 0] = pairs[p, 0]
        pairs[n, 1] = pairs[p, 1]
        n += 1
    return n
