"""Joint drift: the post-step projection of the new poses back onto every joint (seed §1.9).

The velocity rows (:mod:`.joint_rows`) hold each joint's coordinates still to first order only: a pendulum's bob
leaves its circle by ``(h v)^2 / (2 L)`` per step, a chain drifts. After the positions are integrated, a few
nonlinear Gauss–Seidel passes (Box2D's position iterations) move each joint's two bodies by
``M^-1 J^T K^-1 (-C)`` on its locked and violated-limit axes, ``C`` at the current poses. The direction is the
step's Jacobian ``J`` (the rows the velocity solve used), and the velocities take the same change divided by
``h``: together with the velocity rows this is SHAKE (Ryckaert, Ciccotti and Berendsen 1977) on the symplectic
Euler step, whose energy does not drift, where a projection that leaves the velocities alone loses a little of
the motion in every step (a 60° pendulum's swing visibly shrinks). The move of a body is clamped per pass, so a
joint violated by far is brought back over several steps instead of exploding.
"""

import math

import numpy as np

from ..contact_solvers.joint_block import (
    JOINT_ROWS,
    envelope_refined_solve,
    joint_cholesky_factor,
    joint_cholesky_solve,
)
from ..jit import njit_kernel
from .joint_global import factor_global
from .joint_rows import _position_rows, geometry_scratch, joint_errors, uses_angles
from .joint_rows import joint_geometry as _geometry


@njit_kernel
def _body_change(b, side, inv_mass, J, IJ, j, delta, index, n, out):
    """A body's move ``out`` (6,) = ``(M^-1 J^T delta)`` for one side: (dx [m], dtheta [rad])."""
    for i in range(6):
        out[i] = 0.0
    for a in range(n):
        r = index[a]
        for i in range(3):
            out[i] += inv_mass[b] * J[j, r, 0, i] * delta[r]
            out[3 + i] += IJ[j, r, side, i] * delta[r]
    sgn = 1.0 if side == 1 else -1.0
    for i in range(6):
        out[i] *= sgn


@njit_kernel
def _clamp_factor(change, max_move, max_turn):
    lin = math.sqrt(change[0] ** 2 + change[1] ** 2 + change[2] ** 2)
    ang = math.sqrt(change[3] ** 2 + change[4] ** 2 + change[5] ** 2)
    f = 1.0
    if lin > max_move:
        f = min(f, max_move / lin)
    if ang > max_turn:
        f = min(f, max_turn / ang)
    return f


REFINEMENTS = 0
"""Iterative-refinement steps of each pass's scene-wide solve."""
PROJECTION_DAMPING = 1e-6
"""Each diagonal of the projection's ``K`` is raised by this fraction of itself (Levenberg–Marquardt): a long
chain's softest modes, where the linearization is worst, move a little less per pass."""
SHAKE_MOVE = 1e-3
"""Largest move [m] of a body in one pass whose velocity follows it (SHAKE); larger corrections move the pose
only (a joint pulled apart by a collision or a bad start is mended without launching the bodies)."""
SHAKE_TURN = 1e-2
"""Largest turn [rad] whose angular velocity follows it."""


@njit_kernel
def _apply_change(b, change, scale, dt, pos, quat, vel, omega):
    """Move body ``b`` by ``scale * change`` and add the same over ``dt`` to its velocity (SHAKE), the velocity's
    share clamped to ``SHAKE_MOVE``, ``SHAKE_TURN``."""
    w0, w1, w2 = scale * change[3], scale * change[4], scale * change[5]
    follow = scale * _clamp_factor(change, SHAKE_MOVE / max(scale, 1e-300), SHAKE_TURN / max(scale, 1e-300))
    for i in range(3):
        pos[b, i] += scale * change[i]
        vel[b, i] += follow * change[i] / dt
        omega[b, i] += follow * change[3 + i] / dt
    qw, qx, qy, qz = quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3]
    quat[b, 0] = qw + 0.5 * (-w0 * qx - w1 * qy - w2 * qz)
    quat[b, 1] = qx + 0.5 * (w0 * qw + w1 * qz - w2 * qy)
    quat[b, 2] = qy + 0.5 * (-w0 * qz + w1 * qw + w2 * qx)
    quat[b, 3] = qz + 0.5 * (w0 * qy - w1 * qx + w2 * qw)
    n = math.sqrt(quat[b, 0] ** 2 + quat[b, 1] ** 2 + quat[b, 2] ** 2 + quat[b, 3] ** 2)
    for i in range(4):
        quat[b, i] /= n


@njit_kernel
def _progressed(now, before, tolerance, stall, settled):
    """Whether an error [m | rad] still needs passes: above ``tolerance``, and either above ``settled`` or fallen
    by more than ``1 - stall`` since the last pass."""
    return now > tolerance and (now > settled or now < stall * before)


@njit_kernel(inline="always")
def _project_joint(j, joints, rows, body_inv_mass, tolerance, max_move, max_turn, dt, pos, quat, vel, omega, scratch,
                   factors, factored, rows_of, seen):  # fmt: skip
    """One joint's correction in a pass (module docstring), its errors before it folded into ``seen`` (2,) [m, rad];
    a joint within ``tolerance`` on every axis is left alone. Returns whether it moved its bodies."""
    joint_body, frame_pos, frame_quat, flags, lower, upper, sign = joints[:7]
    kind, J, IJ, row_K = rows[0], rows[1], rows[2], rows[7]
    g, s, Jg, C, rhs, delta, index, change0, change1 = scratch
    b0, b1 = joint_body[j, 0], joint_body[j, 1]
    _geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), g, s, Jg)
    n, axes, worst = 0, 0, 0.0
    for a in range(_position_rows(j, flags, lower, upper, s, C, index)):
        k = index[a]
        seen[0 if k < 3 else 1] = max(seen[0 if k < 3 else 1], abs(C[k]))
        worst = max(worst, abs(C[k]))
        if kind[j, k] != 0:  # rows without mass (both sides immovable) stay off
            index[n] = k
            rhs[k] = -C[k]
            axes |= 1 << k
            n += 1
    if n == 0 or worst <= tolerance:
        return False
    for a in range(n):
        rows_of[j, a] = index[a]
    if factored[j] != axes:
        joint_cholesky_factor(j, n, rows_of, row_K, factors)
        factored[j] = axes
    joint_cholesky_solve(j, n, rows_of, factors, rhs, delta)
    f = 1.0
    if b0 >= 0:
        _body_change(b0, np.int64(0), body_inv_mass, J, IJ, j, delta, index, np.int64(n), change0)
        f = min(f, _clamp_factor(change0, max_move, max_turn))
    if b1 >= 0:
        _body_change(b1, np.int64(1), body_inv_mass, J, IJ, j, delta, index, np.int64(n), change1)
        f = min(f, _clamp_factor(change1, max_move, max_turn))
    if b0 >= 0:
        _apply_change(b0, change0, f, dt, pos, quat, vel, omega)
    if b1 >= 0:
        _apply_change(b1, change1, f, dt, pos, quat, vel, omega)
    return True


@njit_kernel
def project_joints(joints, rows, body_inv_mass, joint_broken, passes, tolerance, stall, settled, max_move, max_turn,
                   dt, pos, quat, vel, omega, out_error):  # fmt: skip
    """Up to ``passes`` projection passes (module docstring), stopping once no joint's error exceeds
    ``tolerance`` [m | rad], or once the largest errors are below ``settled`` and a pass no longer cuts them below
    ``stall`` times the last (Gauss–Seidel over a wide, redundant joint graph, a glued wall at rest, takes off a few
    percent per pass there: the next step goes on from here instead). ``joints``: the model's joint tuple;
    ``rows``: this step's :func:`.joint_rows.joint_row_arrays` (the directions and effective masses: each joint's
    block is factored once per call, again only when its set of projected rows changes). ``pos`` (nb, 3),
    ``quat`` (nb, 4), ``vel``, ``omega`` (nb, 3): the new state, changed in place. ``out_error`` (2,): the largest
    error left, [m, rad]. Returns the passes that moved a body.

    A pass measures each joint's errors as it comes to it (Gauss–Seidel's own order), so the errors that decide the
    next pass cost no pass of their own; the pass that finds every joint within the tolerance moves nothing and its
    errors are the final ones.
    """
    nj = joints[0].shape[0]
    if passes <= 0:
        joint_errors(joints, joint_broken, pos, quat, out_error)
        return 0
    g, s, Jg = geometry_scratch()
    scratch = (g, s, Jg, np.zeros(JOINT_ROWS), np.zeros(JOINT_ROWS), np.zeros(JOINT_ROWS),
               np.zeros(JOINT_ROWS, np.int64), np.zeros(6), np.zeros(6))  # fmt: skip
    factors = np.zeros((nj, 6, 6))
    factored = np.full(nj, -1, np.int64)  # the bit set of axes each joint's factor holds
    rows_of = np.zeros((nj, 6), np.int64)  # each joint's projected rows, as the factor's kernels index them
    seen = np.zeros(2)
    before = np.full(2, np.inf)
    done = 0
    for _ in range(passes + 1):
        seen[:] = 0.0
        moved = False
        for j in range(nj):
            if not joint_broken[j]:
                moved |= _project_joint(j, joints, rows, body_inv_mass, tolerance, max_move, max_turn, dt, pos, quat,
                                        vel, omega, scratch, factors, factored, rows_of, seen)  # fmt: skip
        out_error[:] = seen
        if not moved:
            return done  # nothing moved: ``seen`` are the errors left
        done += 1
        if done == passes or not (_progressed(seen[0], before[0], tolerance, stall, settled)
                                  or _progressed(seen[1], before[1], tolerance, stall, settled)):  # fmt: skip
            break
        before[:] = seen
    joint_errors(joints, joint_broken, pos, quat, out_error)
    return done


@njit_kernel
def _save(saved, pos, quat, vel, omega):
    for b in range(pos.shape[0]):
        for i in range(3):
            saved[b, i] = pos[b, i]
            saved[b, 7 + i] = vel[b, i]
            saved[b, 10 + i] = omega[b, i]
        for i in range(4):
            saved[b, 3 + i] = quat[b, i]


@njit_kernel
def _restore(saved, pos, quat, vel, omega):
    for b in range(pos.shape[0]):
        for i in range(3):
            pos[b, i] = saved[b, i]
            vel[b, i] = saved[b, 7 + i]
            omega[b, i] = saved[b, 10 + i]
        for i in range(4):
            quat[b, i] = saved[b, 3 + i]


@njit_kernel
def _collect_position_rows(joints, rows, joint_broken, pos, quat, row_joint, row_slot, row_target, rhs, out_error):
    """The projection's rows: every locked axis and violated limit at the poses given, with the value each is
    brought to (``row_target`` [m | rad]) and its first right-hand side ``rhs = -(s - target)``; ``out_error``
    (2,): the joints' largest errors there (:func:`.joint_rows.joint_errors`, from the same geometry). Returns the
    rows' count, -1 when more than the scratch holds."""
    joint_body, frame_pos, frame_quat, flags, lower, upper, sign = joints[:7]
    kind = rows[0]
    g, s, Jg = geometry_scratch()
    C = np.zeros(JOINT_ROWS)
    index = np.zeros(JOINT_ROWS, np.int64)
    out_error[0] = 0.0
    out_error[1] = 0.0
    n = 0
    for j in range(joint_body.shape[0]):
        if joint_broken[j]:
            continue
        _geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), g, s, Jg)
        for a in range(_position_rows(j, flags, lower, upper, s, C, index)):
            r = index[a]
            side = 0 if r < 3 else 1
            out_error[side] = max(out_error[side], abs(C[r]))
            if kind[j, r] == 0:
                continue
            if n == row_joint.shape[0]:
                return -1
            row_joint[n], row_slot[n], row_target[n] = j, r, s[r] - C[r]
            rhs[n] = -(s[r] - row_target[n])
            n += 1
    return n


@njit_kernel
def _errors_and_rhs(joints, joint_broken, pos, quat, row_joint, row_slot, row_target, n, rhs, out_error):
    """At the poses given, in one geometry pass: the joints' largest errors ``out_error`` (2,) [m, rad]
    (:func:`.joint_rows.joint_errors`) and the right-hand sides ``rhs = -(s - target)`` of the ``n`` projected rows
    (ordered by joint)."""
    joint_body, frame_pos, frame_quat, flags, lower, upper, sign = joints[:7]
    g, s, Jg = geometry_scratch()
    C = np.zeros(JOINT_ROWS)
    index = np.zeros(JOINT_ROWS, np.int64)
    out_error[0] = 0.0
    out_error[1] = 0.0
    a = 0
    for j in range(joint_body.shape[0]):
        if joint_broken[j]:
            continue
        _geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), g, s, Jg)
        for k in range(_position_rows(j, flags, lower, upper, s, C, index)):
            r = index[k]
            side = 0 if r < 3 else 1
            out_error[side] = max(out_error[side], abs(C[r]))
        while a < n and row_joint[a] == j:
            rhs[a] = -(s[row_slot[a]] - row_target[a])
            a += 1


@njit_kernel
def project_joints_global(joints, rows, body_inv_mass, joint_broken, passes, tolerance, max_move, max_turn, dt,
                          glob, row_target, pos, quat, vel, omega, out_error):  # fmt: skip
    """:func:`project_joints` with every projected row solved at once (:mod:`.joint_global`): the rows are chosen
    and ``K`` factored at the first pass, each pass solves ``K d = -C`` over all of them and moves every body by
    its summed ``M^-1 J^T d`` (clamped per body). Returns the passes done; ``-1 - passes kept`` when the rows do
    not fit ``glob`` or a pass raised the largest error (that pass is undone): :func:`project_joints` goes on.
    """
    joint_body = joints[0]
    row_joint, row_slot, layout, K, L, rhs, x, count = glob
    J, IJ = rows[1], rows[2]
    n = _collect_position_rows(joints, rows, joint_broken, pos, quat, row_joint, row_slot, row_target, rhs, out_error)
    if out_error[0] <= tolerance and out_error[1] <= tolerance:
        return 0  # already within the tolerance: no factor is needed
    if n < 0:
        return -1
    change = np.zeros((pos.shape[0], 6))
    done = 0
    if n > 0:
        damping = PROJECTION_DAMPING
        if not factor_global(joint_body, rows, body_inv_mass, row_joint, row_slot, n, K, L, layout, damping):
            return -1
    saved = np.empty((pos.shape[0], 13))
    residual, correction = np.empty(n), np.empty(n)
    previous = np.inf
    for _ in range(passes if n > 0 else 0):  # out_error and rhs: at the poses this pass starts from
        worst = max(out_error[0], out_error[1])
        if worst > previous:  # the last pass made things worse (an ill-conditioned K): undo it and hand over
            _restore(saved, pos, quat, vel, omega)
            return -1 - done
        if worst <= tolerance:
            break
        previous = worst
        _save(saved, pos, quat, vel, omega)
        done += 1
        envelope_refined_solve(n, layout, K, L, rhs, x, residual, correction, REFINEMENTS)
        change[:] = 0.0
        for a in range(n):
            j, r = row_joint[a], row_slot[a]
            for side in range(2):
                b = joint_body[j, side]
                if b < 0:
                    continue
                sgn = 1.0 if side == 1 else -1.0
                for i in range(3):
                    change[b, i] += sgn * body_inv_mass[b] * J[j, r, 0, i] * x[a]
                    change[b, 3 + i] += sgn * IJ[j, r, side, i] * x[a]
        for b in range(pos.shape[0]):
            if change[b, 0] != 0.0 or change[b, 3] != 0.0 or change[b, 1] != 0.0 or change[b, 4] != 0.0 \
                    or change[b, 2] != 0.0 or change[b, 5] != 0.0:  # fmt: skip
                _apply_change(b, change[b], _clamp_factor(change[b], max_move, max_turn), dt, pos, quat, vel, omega)
        _errors_and_rhs(joints, joint_broken, pos, quat, row_joint, row_slot, row_target, n, rhs, out_error)
    return done
