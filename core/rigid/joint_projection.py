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
    PACK_KINV,
    PACK_ROWS,
    envelope_refined_solve,
    joint_cholesky_factor,
    joint_cholesky_solve,
)
from ..jit import njit_kernel
from ..math.quat import quat_step
from .joint_global import factor_global
from .joint_rows import _position_rows, axis_error, geometry_scratch, joint_errors, joint_geometry, uses_angles


@njit_kernel
def _clamp_factor(c0, c1, c2, c3, c4, c5, max_move, max_turn):
    """The largest scale ``<= 1`` of a body's move ``(dx [m], dtheta [rad])`` within ``max_move`` and ``max_turn``."""
    lin = math.sqrt(c0**2 + c1**2 + c2**2)
    ang = math.sqrt(c3**2 + c4**2 + c5**2)
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
def _apply_change(b, change, at, scale, dt, pos, quat, vel, omega):
    """Move body ``b`` by ``scale * change[at]`` (``change`` (k, 6): dx [m], dtheta [rad]) and add the same over
    ``dt`` to its velocity (SHAKE), the velocity's share clamped to ``SHAKE_MOVE``, ``SHAKE_TURN``. The row is
    indexed in place: a view per call would cost reference-count updates in a per-joint loop."""
    w0, w1, w2 = scale * change[at, 3], scale * change[at, 4], scale * change[at, 5]
    limit = max(scale, 1e-300)
    follow = scale * _clamp_factor(change[at, 0], change[at, 1], change[at, 2], change[at, 3], change[at, 4],
                                   change[at, 5], SHAKE_MOVE / limit, SHAKE_TURN / limit)  # fmt: skip
    for i in range(3):
        pos[b, i] += scale * change[at, i]
        vel[b, i] += follow * change[at, i] / dt
        omega[b, i] += follow * change[at, 3 + i] / dt
    quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3] = quat_step(
        quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3], w0, w1, w2, 1.0
    )  # the turn (w0, w1, w2) [rad] applied as one unit step


@njit_kernel
def _progressed(now, before, tolerance, stall, settled):
    """Whether an error [m | rad] still needs passes: above ``tolerance``, and either above ``settled`` or fallen
    by more than ``1 - stall`` since the last pass."""
    return now > tolerance and (now > settled or now < stall * before)


@njit_kernel
def _projection_pass(joint_body, frame_pos, frame_quat, flags, lower, upper, sign, kind, J, IJ, row_K, packed,
                     body_inv_mass, joint_broken, tolerance, max_move, max_turn, dt, pos, quat, vel, omega, g, s, Jg,
                     rhs, delta, index, change, factors, factored, rows_of, seen):  # fmt: skip
    """One Gauss–Seidel pass of :func:`project_joints`: each unbroken joint's errors measured at the current poses
    (folded into ``seen`` (2,) [m, rad]) and, where one exceeds ``tolerance``, its bodies moved by
    ``M^-1 J^T K^-1 (-C)`` (module docstring). Returns whether a body moved.

    ``packed``: the rows' ``(eq_index, eq_count, box_count, row_pack)``: a joint whose projected rows are its packed
    equality rows (a glued joint's six) takes its block's stored ``K^-1`` (:func:`..contact_solvers.joint_block.
    pack_equalities`) instead of a factor and two triangular solves. The joint's block is written out in the loop
    with every array indexed in place: a helper that takes arrays costs two atomic reference-count updates per
    array per call (the architecture page's rule for per-item loops); only the other joints' solve is a call.
    """
    eq_index, eq_count, box_count, pack = packed
    moved = False
    for j in range(joint_body.shape[0]):
        if joint_broken[j]:
            continue
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), g, s, Jg)
        n, axes, worst = 0, 0, 0.0
        for k in range(6):
            err, corrected = axis_error(flags[j, k], s[k], lower[j, k], upper[j, k])
            if not corrected:
                continue
            seen[0 if k < 3 else 1] = max(seen[0 if k < 3 else 1], abs(err))
            worst = max(worst, abs(err))
            if kind[j, k] != 0:  # rows without mass (both sides immovable) stay off
                index[n] = k
                rhs[k] = -err
                axes |= 1 << k
                n += 1
        if n == 0 or worst <= tolerance:
            continue
        packed_rows = box_count[j] == 0 and eq_count[j] == n
        for a in range(n if packed_rows else 0):
            packed_rows = packed_rows and eq_index[j, a] == index[a]
        if packed_rows:  # delta = K^-1 rhs, the block's stored inverse
            for a in range(n):
                t = 0.0
                for c in range(n):
                    t += pack[j, PACK_KINV + PACK_ROWS * a + c] * rhs[index[c]]
                delta[index[a]] = t
        else:
            for a in range(n):
                rows_of[j, a] = index[a]
            if factored[j] != axes:
                joint_cholesky_factor(j, n, rows_of, row_K, factors)
                factored[j] = axes
            joint_cholesky_solve(j, n, rows_of, factors, rhs, delta)  # the rarer joints: limits, springs, motors
        f = 1.0
        for side in range(2):  # each body's move M^-1 J^T delta, with its side's sign
            b = joint_body[j, side]
            if b < 0:
                continue
            for i in range(6):
                change[side, i] = 0.0
            for a in range(n):
                r = index[a]
                for i in range(3):
                    change[side, i] += body_inv_mass[b] * J[j, r, 0, i] * delta[r]
                    change[side, 3 + i] += IJ[j, r, side, i] * delta[r]
            sgn = 1.0 if side == 1 else -1.0
            for i in range(6):
                change[side, i] *= sgn
            f = min(f, _clamp_factor(change[side, 0], change[side, 1], change[side, 2], change[side, 3],
                                     change[side, 4], change[side, 5], max_move, max_turn))  # fmt: skip
        for side in range(2):
            if joint_body[j, side] >= 0:
                _apply_change(joint_body[j, side], change, side, f, dt, pos, quat, vel, omega)
        moved = True
    return moved


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
    joint_body, frame_pos, frame_quat, flags, lower, upper, sign = joints[:7]
    kind, J, IJ, row_K = rows[0], rows[1], rows[2], rows[7]
    packed = (rows[9], rows[10], rows[12], rows[13])
    nj = joint_body.shape[0]
    if passes <= 0:
        joint_errors(joints, joint_broken, pos, quat, out_error)
        return 0
    g, s, Jg = geometry_scratch()
    rhs, delta, index = np.zeros(JOINT_ROWS), np.zeros(JOINT_ROWS), np.zeros(JOINT_ROWS, np.int64)
    change = np.zeros((2, 6))
    factors = np.zeros((nj, 6, 6))
    factored = np.full(nj, -1, np.int64)  # the bit set of axes each joint's factor holds
    rows_of = np.zeros((nj, 6), np.int64)  # each joint's projected rows, as the factor's kernels index them
    seen = np.zeros(2)
    before = np.full(2, np.inf)
    done = 0
    for _ in range(passes + 1):
        seen[:] = 0.0
        moved = _projection_pass(joint_body, frame_pos, frame_quat, flags, lower, upper, sign, kind, J, IJ, row_K,
                                 packed, body_inv_mass, joint_broken, tolerance, max_move, max_turn, dt, pos, quat,
                                 vel, omega, g, s, Jg, rhs, delta, index, change, factors, factored, rows_of,
                                 seen)  # fmt: skip
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
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), g, s, Jg)
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
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), g, s, Jg)
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
                f = _clamp_factor(change[b, 0], change[b, 1], change[b, 2], change[b, 3], change[b, 4], change[b, 5],
                                  max_move, max_turn)  # fmt: skip
                _apply_change(b, change, b, f, dt, pos, quat, vel, omega)
        _errors_and_rhs(joints, joint_broken, pos, quat, row_joint, row_slot, row_target, n, rhs, out_error)
    return done
