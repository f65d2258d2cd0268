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
    PACK_SIZE,
    ROW_BOXED,
    ROW_EQUALITY,
    ROW_OFF,
    is_packed,
    is_plain,
    joint_cholesky_factor,
    pack_equalities,
)
from ..jit import njit_kernel, njit_parallel, prange
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
        row_pack=np.zeros((nj, PACK_SIZE)),
    )


MOTOR_LINEAR_SLOT = 12
"""The slot of the motor along X (13: about X)."""
_SLOT_FLAGS = np.array([AXIS_LOCKED | AXIS_LIMITED, AXIS_SPRING, AXIS_MOTOR], np.int64)
"""The axis flags that give slots 0–5, 6–11 and 12–13 a row (:func:`_slot_row`)."""


@njit_kernel(inline="always")
def _rotation9(w, x, y, z):
    """The rotation matrix of the unit quaternion ``(w, x, y, z)`` as a row-major 9-tuple
    (:func:`...math.quat.quat_to_matrix`'s entries, kept in registers)."""
    return (
        1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y),
        2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x),
        2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y),
    )  # fmt: skip


@njit_kernel(inline="always")
def _product9(a, b):
    """``a b`` of two row-major 9-tuples."""
    return (
        a[0] * b[0] + a[1] * b[3] + a[2] * b[6], a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
        a[0] * b[2] + a[1] * b[5] + a[2] * b[8], a[3] * b[0] + a[4] * b[3] + a[5] * b[6],
        a[3] * b[1] + a[4] * b[4] + a[5] * b[7], a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
        a[6] * b[0] + a[7] * b[3] + a[8] * b[6], a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
        a[6] * b[2] + a[7] * b[5] + a[8] * b[8],
    )  # fmt: skip


@njit_kernel
def uses_angles(flags, j):
    """Whether joint ``j`` locks, limits, springs or drives any of its angles (``flags`` (nj, 6))."""
    return (flags[j, 3] | flags[j, 4] | flags[j, 5]) != 0


@njit_kernel
def joint_geometry(j, joint_body, joint_frame_pos, joint_frame_quat, joint_sign, body_pos, body_quat, angular, rows,
                   g, out_s, out_J):  # fmt: skip
    """Joint ``j``'s six coordinates ``out_s`` (6,) [m, rad] (Blender's sense) and, with ``rows``, their rows
    ``out_J`` (6, 3, 3); without ``angular`` (:func:`uses_angles`) only the three linear ones (a chain's POINT
    joints: the angles' rows and their inverse trigonometry are half of the work). The projection and the error
    measurements need the coordinates only (their rows are the step's): the rows are a third of the work.

    ``g``: scratch (7, 3, 3) from :func:`geometry_scratch`; afterwards ``g[0]``, ``g[1]`` hold the two frames' axes
    (columns), ``g[4]`` body1's axes in body0's frame (with angles), ``g[5, 0]``, ``g[5, 1]`` the anchors and
    ``g[5, 2]``, ``g[6, 0]`` the bodies' centres.

    The arithmetic stays in scalars and tuples, and the arrays are indexed in place: a helper that takes an array
    or a view costs two atomic reference-count updates per array per call, and the joint passes of a glued wall
    once spent more time in those than in the arithmetic.
    """
    for side in range(2):
        f = _rotation9(joint_frame_quat[j, side, 0], joint_frame_quat[j, side, 1], joint_frame_quat[j, side, 2],
                       joint_frame_quat[j, side, 3])  # fmt: skip
        fx, fy, fz = joint_frame_pos[j, side, 0], joint_frame_pos[j, side, 1], joint_frame_pos[j, side, 2]
        b = joint_body[j, side]
        if b < 0:  # the world: the frame is already in world coordinates
            axes, cx, cy, cz, px, py, pz = f, 0.0, 0.0, 0.0, fx, fy, fz
        else:
            r = _rotation9(body_quat[b, 0], body_quat[b, 1], body_quat[b, 2], body_quat[b, 3])
            axes = _product9(r, f)
            cx, cy, cz = body_pos[b, 0], body_pos[b, 1], body_pos[b, 2]
            px = cx + r[0] * fx + r[1] * fy + r[2] * fz
            py = cy + r[3] * fx + r[4] * fy + r[5] * fz
            pz = cz + r[6] * fx + r[7] * fy + r[8] * fz
        for i in range(3):
            for k in range(3):
                g[side, i, k] = axes[3 * i + k]
        g[5, side, 0], g[5, side, 1], g[5, side, 2] = px, py, pz
        c = 2 if side == 0 else 0
        g[5 + side, c, 0], g[5 + side, c, 1], g[5 + side, c, 2] = cx, cy, cz
    a0x, a0y, a0z = g[5, 1, 0] - g[5, 2, 0], g[5, 1, 1] - g[5, 2, 1], g[5, 1, 2] - g[5, 2, 2]  # p1 - c0
    a1x, a1y, a1z = g[5, 1, 0] - g[6, 0, 0], g[5, 1, 1] - g[6, 0, 1], g[5, 1, 2] - g[6, 0, 2]  # p1 - c1
    for k in range(3):  # linear rows: body0's axis k with the arms to body1's anchor
        bx, by, bz = g[0, 0, k], g[0, 1, k], g[0, 2, k]
        s = 0.0
        for i in range(3):
            s += (g[5, 1, i] - g[5, 0, i]) * g[0, i, k]
        out_s[k] = s
        if rows:
            J = out_J
            J[k, 0, 0], J[k, 0, 1], J[k, 0, 2] = bx, by, bz
            J[k, 1, 0], J[k, 1, 1], J[k, 1, 2] = a0y * bz - a0z * by, a0z * bx - a0x * bz, a0x * by - a0y * bx
            J[k, 2, 0], J[k, 2, 1], J[k, 2, 2] = a1y * bz - a1z * by, a1z * bx - a1x * bz, a1x * by - a1y * bx
    if angular:
        _euler_angles(g, out_s)
        if rows:
            _euler_rows(g, out_J)
    for k in range(6 if angular else 3):
        out_s[k] *= joint_sign[j, k]
        if rows:
            for r in range(3):
                for i in range(3):
                    out_J[k, r, i] *= joint_sign[j, k]


@njit_kernel(inline="always")
def _euler_angles(g, out_s):
    """Coordinates 3–5 of ``out_s``: the XYZ Euler angles of body1's frame in body0's, ``M = A^T B`` (into
    ``g[4]``), ``A``, ``B`` the frames' axes in ``g[0]``, ``g[1]``."""
    for r in range(3):
        for c in range(3):
            g[4, r, c] = g[0, 0, r] * g[1, 0, c] + g[0, 1, r] * g[1, 1, c] + g[0, 2, r] * g[1, 2, c]
    out_s[3] = math.atan2(-g[4, 1, 2], g[4, 2, 2])
    out_s[4] = math.asin(min(max(g[4, 0, 2], -1.0), 1.0))
    out_s[5] = math.atan2(-g[4, 0, 1], g[4, 0, 0])


@njit_kernel(inline="always")
def _euler_rows(g, out_J):
    """Rows 3–5 of ``out_J``: the dual basis of the Euler axes ``(A x, (B z × A x)/|·|, B z)`` (world), ``A``,
    ``B`` the frames' axes in ``g[0]``, ``g[1]``."""
    e1x, e1y, e1z = g[0, 0, 0], g[0, 1, 0], g[0, 2, 0]
    e3x, e3y, e3z = g[1, 0, 2], g[1, 1, 2], g[1, 2, 2]
    e2x, e2y, e2z = e3y * e1z - e3z * e1y, e3z * e1x - e3x * e1z, e3x * e1y - e3y * e1x
    n = math.sqrt(e2x * e2x + e2y * e2y + e2z * e2z)
    if n < 1e-9:  # gimbal lock (Y at ±90°): the Euler rates are undefined; keep body0's Y axis
        e2x, e2y, e2z = g[0, 0, 1], g[0, 1, 1], g[0, 2, 1]
    else:
        e2x, e2y, e2z = e2x / n, e2y / n, e2z / n
    out_J[3, 1, 0], out_J[3, 1, 1], out_J[3, 1, 2] = e2y * e3z - e2z * e3y, e2z * e3x - e2x * e3z, e2x * e3y - e2y * e3x
    out_J[4, 1, 0], out_J[4, 1, 1], out_J[4, 1, 2] = e3y * e1z - e3z * e1y, e3z * e1x - e3x * e1z, e3x * e1y - e3y * e1x
    out_J[5, 1, 0], out_J[5, 1, 1], out_J[5, 1, 2] = e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x
    vol = e1x * out_J[3, 1, 0] + e1y * out_J[3, 1, 1] + e1z * out_J[3, 1, 2]
    vol = vol if abs(vol) > 1e-9 else 1e-9
    for k in range(3, 6):
        for i in range(3):
            out_J[k, 1, i] /= vol
            out_J[k, 2, i] = out_J[k, 1, i]
            out_J[k, 0, i] = 0.0


@njit_kernel
def geometry_scratch():
    """Scratch of :func:`joint_geometry`: (7, 3, 3) plus the coordinates (6,) and rows (6, 3, 3)."""
    return np.zeros((7, 3, 3)), np.zeros(6), np.zeros((6, 3, 3))


@njit_kernel
def _slot_row(flags, s, lower, upper, k, c, spring1, target, max_force, dt, slot):
    """``(kind, b, lo, hi, gamma)`` of a joint's slot ``slot`` (axis ``slot % 6``; slots 12/13 are axes 0/3):
    ``flags`` the axis's flags, ``s`` its coordinate [m | rad], ``k`` its stiffness, ``c`` SPRING2's damping
    [N·s/m] or SPRING1's rate [1/s], ``max_force`` [N | N·m]."""
    inf = math.inf
    if slot < 6:
        if flags & AXIS_LOCKED:
            return ROW_EQUALITY, 0.0, 0.0, 0.0, 0.0
        if flags & AXIS_LIMITED:
            if s - lower <= upper - s:  # the nearer limit: lower, pushes the coordinate up
                return ROW_BOXED, max(s - lower, 0.0) / dt, 0.0, inf, 0.0
            return ROW_BOXED, -max(upper - s, 0.0) / dt, -inf, 0.0, 0.0
    elif slot < 12:
        if not flags & AXIS_SPRING:
            return ROW_OFF, 0.0, 0.0, 0.0, 0.0
        if spring1:
            if k > 0.0:  # drive toward the rate -c k s, the force at most k |s|
                hi = dt * k * abs(s)
                return ROW_BOXED, c * k * s, -hi, hi, 0.0
        elif c > 0.0:  # lambda = -h (k s + c u_end)
            return ROW_EQUALITY, k * s / c, 0.0, 0.0, 1.0 / (dt * c)
        elif k > 0.0:
            return ROW_BOXED, 0.0, -dt * k * s, -dt * k * s, 0.0
    elif flags & AXIS_MOTOR:
        return ROW_BOXED, -target, -max_force * dt, max_force * dt, 0.0
    return ROW_OFF, 0.0, 0.0, 0.0, 0.0


@njit_kernel
def _own_anchor_arm(g, sign, J, j, r):
    """The linear motor's angular part on body0, ``J[j, r, 1] = sign (p0 - x0) × a``, from the scratch
    :func:`joint_geometry` left in ``g``: a motor locks nothing, so the bodies may drift far apart along other
    axes, and it drives each body at its own anchor as Bullet does (an arm to body1's anchor would turn body0)."""
    rx, ry, rz = g[5, 0, 0] - g[5, 2, 0], g[5, 0, 1] - g[5, 2, 1], g[5, 0, 2] - g[5, 2, 2]
    ax, ay, az = g[0, 0, 0], g[0, 1, 0], g[0, 2, 0]
    J[j, r, 1, 0] = (ry * az - rz * ay) * sign
    J[j, r, 1, 1] = (rz * ax - rx * az) * sign
    J[j, r, 1, 2] = (rx * ay - ry * ax) * sign


ROW_CHUNKS = 16
"""The joints' rows are built in this many contiguous chunks, spread over the threads (:func:`compute_joint_rows`)."""


@njit_parallel
def compute_joint_rows(joints, body_pos, body_quat, body_vel, body_omega, body_inv_mass, inv_inertia_world,
                       vel_free, omega_free, joint_broken, dt, out):  # fmt: skip
    """This step's rows of every unbroken joint at the start poses (see the module docstring).

    Each joint's rows depend on its own bodies only, so contiguous chunks of joints are built on as many threads as
    numba runs, each chunk by serial kernels (one call per chunk: no reference counts shared per joint), and the
    result is the same, bit for bit, whatever the thread count.

    ``joints``: the model's tuple of :func:`joint_model_arrays`; ``out``: the tuple of :func:`joint_scratch`'s
    arrays in :func:`joint_row_arrays` order. ``row_b`` (nj, R) [m/s] receives ``J u_free + bias`` so a row's
    velocity is ``row_b + J (dv, dw)``; ``row_K`` (nj, R, R) [1/kg] the effective mass with the soft rows'
    ``gamma`` on the diagonal, ``row_L`` the Cholesky factor of its equality rows.
    """
    joint_body, frame_pos, frame_quat, flags, lower, upper, sign, stiff, damp, spring_type, target, max_imp = joints
    kind, J, IJ, b, lo, hi, gamma, K, L, eq_index, eq_count, box_index, box_count, pack = out
    nj = joint_body.shape[0]
    chunks = min(nj, ROW_CHUNKS)
    for c in prange(chunks):
        first, end = c * nj // chunks, (c + 1) * nj // chunks
        _slot_pass(first, end, joint_body, frame_pos, frame_quat, flags, lower, upper, sign, stiff, damp, spring_type,
                   target, max_imp, body_pos, body_quat, inv_inertia_world, vel_free, omega_free, joint_broken, dt,
                   kind, J, IJ, b, lo, hi, gamma)  # fmt: skip
        _block_pass(first, end, joint_body, body_inv_mass, joint_broken, kind, J, IJ, b, gamma, K, L, eq_index,
                    eq_count, box_index, box_count, pack)  # fmt: skip


@njit_kernel
def _slot_pass(first, end, joint_body, frame_pos, frame_quat, flags, lower, upper, sign, stiff, damp, spring_type,
               target, max_imp, body_pos, body_quat, inv_inertia_world, vel_free, omega_free, joint_broken, dt, kind, J,
               IJ, b, lo, hi, gamma):  # fmt: skip
    """The slots of every unbroken joint ``first <= j < end`` (:func:`compute_joint_rows`): kind, bounds and softness,
    the rows ``J`` and ``IJ = I^-1 ang`` per side, and ``b = J u_free + bias``. Written out in the loop, every array
    indexed in place (a helper that takes arrays costs reference-count updates per call)."""
    g, s, Jg = geometry_scratch()
    for j in range(first, end):
        if joint_broken[j]:
            for r in range(JOINT_ROWS):
                kind[j, r] = ROW_OFF
            continue
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, body_pos, body_quat, uses_angles(flags, j), True,
                       g, s, Jg)  # fmt: skip
        for r in range(JOINT_ROWS):
            axis = r % 6 if r < 12 else 3 * (r - 12)
            kind[j, r], b[j, r], lo[j, r], hi[j, r], gamma[j, r] = ROW_OFF, 0.0, 0.0, 0.0, 0.0
            if not flags[j, axis] & _SLOT_FLAGS[r // 6]:  # a slot the axis does not use (most of a joint's)
                continue
            kind[j, r], b[j, r], lo[j, r], hi[j, r], gamma[j, r] = _slot_row(
                flags[j, axis], s[axis], lower[j, axis], upper[j, axis], stiff[j, axis], damp[j, axis],
                spring_type[j] == SPRING1, target[j, axis], max_imp[j, axis], dt, r)  # fmt: skip
            if kind[j, r] == ROW_OFF:
                continue
            for p in range(3):
                for i in range(3):
                    J[j, r, p, i] = Jg[axis, p, i]
            if r == MOTOR_LINEAR_SLOT:
                _own_anchor_arm(g, sign[j, 0], J, j, r)
            u = 0.0  # J u_free: lin·(v1 - v0) + ang1·w1 - ang0·w0, the world at rest
            for side in range(2):
                bb = joint_body[j, side]
                for i in range(3):  # IJ = I_b^-1 J_ang (zero for the world)
                    IJ[j, r, side, i] = 0.0
                    if bb >= 0:
                        IJ[j, r, side, i] = inv_inertia_world[bb, i, 0] * J[j, r, 1 + side, 0] \
                            + inv_inertia_world[bb, i, 1] * J[j, r, 1 + side, 1] \
                            + inv_inertia_world[bb, i, 2] * J[j, r, 1 + side, 2]  # fmt: skip
            b0, b1 = joint_body[j, 0], joint_body[j, 1]
            for i in range(3):
                if b1 >= 0:
                    u += J[j, r, 0, i] * vel_free[b1, i] + J[j, r, 2, i] * omega_free[b1, i]
                if b0 >= 0:
                    u -= J[j, r, 0, i] * vel_free[b0, i] + J[j, r, 1, i] * omega_free[b0, i]
            b[j, r] += u


@njit_kernel
def _block_pass(first, end, joint_body, body_inv_mass, joint_broken, kind, J, IJ, b, gamma, K, L, eq_index, eq_count,
                box_index, box_count, pack):  # fmt: skip
    """For the joints ``first <= j < end``: every unbroken one's active rows sorted (:func:`_sort_rows`); the packed
    joints' blocks with their inverse (:func:`pack_equalities`); the others' effective mass ``K = J M^-1 J^T +
    diag(gamma)`` over their active rows and the factor of their equality block, and also ``K`` of packed joints with
    spring rows (their projection factors it). A plain glued joint's ``K`` lives in its pack only.

    The loops over every joint hold no call (a call in a loop, even one not taken, makes the loop reload every array's
    address and strides at each step); this one visits the rarer joints."""
    _sort_rows(first, end, joint_body, body_inv_mass, joint_broken, kind, J, IJ, gamma, eq_index, eq_count, box_index,
               box_count)  # fmt: skip
    for j in range(first, end):
        n = eq_count[j]
        if joint_broken[j] or is_plain(n, box_count[j], eq_index[j, max(n - 1, 0)]):
            continue  # broken, or plain: packed below
        b0, b1 = joint_body[j, 0], joint_body[j, 1]
        m = (body_inv_mass[b0] if b0 >= 0 else 0.0) + (body_inv_mass[b1] if b1 >= 0 else 0.0)
        _effective_mass(j, m, kind, J, IJ, gamma, K)
        if not is_packed(n, box_count[j]):
            joint_cholesky_factor(j, n, eq_index, K, L)
    pack_equalities(first, end, joint_body, body_inv_mass, joint_broken, eq_index, eq_count, box_count, J, IJ, b,
                    gamma, pack)  # fmt: skip


@njit_kernel
def _sort_rows(first, end, joint_body, body_inv_mass, joint_broken, kind, J, IJ, gamma, eq_index, eq_count, box_index,
               box_count):  # fmt: skip
    """Each unbroken joint's (``first <= j < end``) active rows sorted into equality rows (``eq_index``, ``eq_count``)
    and boxed ones (``box_index``, ``box_count``); rows without mass (both sides immovable) go off."""
    for j in range(first, end):
        eq_count[j] = 0
        box_count[j] = 0
        if joint_broken[j]:
            continue
        b0, b1 = joint_body[j, 0], joint_body[j, 1]
        m0 = body_inv_mass[b0] if b0 >= 0 else 0.0
        m1 = body_inv_mass[b1] if b1 >= 0 else 0.0
        for r in range(JOINT_ROWS):
            if kind[j, r] == ROW_OFF:
                continue
            diag = 0.0  # the row's coupling with itself
            for i in range(3):
                diag += (m0 + m1) * J[j, r, 0, i] * J[j, r, 0, i] + J[j, r, 1, i] * IJ[j, r, 0, i] \
                    + J[j, r, 2, i] * IJ[j, r, 1, i]  # fmt: skip
            diag += gamma[j, r]
            if not diag > 1e-300:  # both sides immovable: nothing to solve
                kind[j, r] = ROW_OFF
            elif kind[j, r] == ROW_EQUALITY:
                eq_index[j, eq_count[j]] = r
                eq_count[j] += 1
            else:
                box_index[j, box_count[j]] = r
                box_count[j] += 1


@njit_kernel
def _effective_mass(j, m, kind, J, IJ, gamma, K):
    """``K[j] = J M^-1 J^T + diag(gamma)`` over joint ``j``'s active rows (``m``: the bodies' summed inverse mass)."""
    for r in range(JOINT_ROWS):
        if kind[j, r] == ROW_OFF:
            continue
        for c in range(r + 1):  # K is symmetric: J_r M^-1 J_c^T
            if kind[j, c] != ROW_OFF:
                k = 0.0
                for i in range(3):
                    k += m * J[j, r, 0, i] * J[j, c, 0, i] + J[j, r, 1, i] * IJ[j, c, 0, i] \
                        + J[j, r, 2, i] * IJ[j, c, 1, i]  # fmt: skip
                K[j, r, c] = k
                K[j, c, r] = k
        K[j, r, r] += gamma[j, r]


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
            "eq_count", "box_index", "box_count", "row_pack")  # fmt: skip
    return tuple(scratch[k] for k in keys)


@njit_kernel
def axis_error(f, s, lower, upper):
    """The error [m | rad] of one axis at coordinate ``s`` with flags ``f``, and whether the projection corrects it:
    a locked axis always (``s - lower``), a limited one outside its limits (the distance past the limit)."""
    if f & AXIS_LOCKED:
        return s - lower, True
    if f & AXIS_LIMITED:
        if s < lower:
            return s - lower, True
        if s > upper:
            return s - upper, True
    return 0.0, False


@njit_kernel
def _position_rows(j, flags, lower, upper, s, C, index):
    """Rows of joint ``j`` the projection corrects (:func:`axis_error`): locked axes and violated limits; their
    errors into ``C``."""
    n = 0
    for k in range(6):
        err, corrected = axis_error(flags[j, k], s[k], lower[j, k], upper[j, k])
        if not corrected:
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
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), False, g, s, Jg)
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
