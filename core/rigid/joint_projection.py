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
    PACK_IJ,
    PACK_J,
    PACK_KINV,
    PACK_ROWS,
    envelope_refined_solve,
    is_plain,
    joint_cholesky_factor,
    joint_cholesky_solve,
)
from ..contact_solvers.joint_colouring import JOINT_CHUNK, chunk_count, colour_chunks
from ..jit import njit_kernel, njit_parallel, prange
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
    """:func:`_move_body` by the row ``change[at]`` of ``change`` (k, 6): dx [m], dtheta [rad]."""
    _move_body(b, change[at, 0], change[at, 1], change[at, 2], change[at, 3], change[at, 4], change[at, 5], scale, dt,
               pos, quat, vel, omega)  # fmt: skip


@njit_kernel
def _move_body(b, c0, c1, c2, c3, c4, c5, scale, dt, pos, quat, vel, omega):
    """Move body ``b`` by ``scale`` times ``(c0, c1, c2)`` [m] and turn it by ``scale`` times ``(c3, c4, c5)`` [rad],
    and add the same over ``dt`` to its velocity (SHAKE), the velocity's share clamped to ``SHAKE_MOVE``,
    ``SHAKE_TURN``."""
    limit = max(scale, 1e-300)
    follow = scale * _clamp_factor(c0, c1, c2, c3, c4, c5, SHAKE_MOVE / limit, SHAKE_TURN / limit)
    pos[b, 0] += scale * c0
    pos[b, 1] += scale * c1
    pos[b, 2] += scale * c2
    vel[b, 0] += follow * c0 / dt
    vel[b, 1] += follow * c1 / dt
    vel[b, 2] += follow * c2 / dt
    omega[b, 0] += follow * c3 / dt
    omega[b, 1] += follow * c4 / dt
    omega[b, 2] += follow * c5 / dt
    quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3] = quat_step(
        quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3], scale * c3, scale * c4, scale * c5, 1.0
    )  # the turn [rad] applied as one unit step


@njit_kernel
def _progressed(now, before, tolerance, stall, settled):
    """Whether an error [m | rad] still needs passes: above ``tolerance``, and either above ``settled`` or fallen
    by more than ``1 - stall`` since the last pass."""
    return now > tolerance and (now > settled or now < stall * before)


@njit_kernel
def _projection_pass(first, end, joint_body, frame_pos, frame_quat, flags, lower, upper, sign, kind, J, IJ, row_K,
                     packed, body_inv_mass, joint_broken, tolerance, max_move, max_turn, dt, pos, quat, vel, omega, g,
                     s, Jg, rhs, delta, index, change, factors, factored, rows_of, seen):  # fmt: skip
    """One Gauss–Seidel pass of :func:`project_joints` over the joints ``first <= j < end``: each unbroken joint's
    errors measured at the current poses (folded into ``seen`` (2,) [m, rad]) and, where one exceeds
    ``tolerance``, its bodies moved by ``M^-1 J^T K^-1 (-C)`` (module docstring). Returns whether a body moved.

    ``packed``: the rows' ``(eq_index, eq_count, box_count, row_pack)``. Runs of plain joints, whose projected rows
    are their packed equality rows (a glued joint's six), go to :func:`_plain_run`, which takes each block's stored
    ``K^-1`` (:func:`..contact_solvers.joint_block.pack_equalities`) in a loop with no call but the geometry; the
    others, one by one, to :func:`_project_joint` (a factor and two triangular solves), in the same order.
    """
    moved = False
    i = first
    while i < end:
        i, ran = _plain_run(i, end, joint_body, frame_pos, frame_quat, flags, lower, upper, sign, packed, body_inv_mass,
                            joint_broken, tolerance, max_move, max_turn, dt, pos, quat, vel, omega, g, s, Jg, rhs,
                            delta, seen)  # fmt: skip
        moved = moved or ran
        if i == end:
            break
        ran = _project_joint(i, joint_body, frame_pos, frame_quat, flags, lower, upper, sign, kind, J, IJ, row_K,
                             body_inv_mass, tolerance, max_move, max_turn, dt, pos, quat, vel, omega, g, s, Jg,
                             rhs, delta, index, change, factors, factored, rows_of, seen)  # fmt: skip
        moved = moved or ran
        i += 1
    return moved


@njit_kernel
def _plain_run(first, end, joint_body, frame_pos, frame_quat, flags, lower, upper, sign, packed, body_inv_mass,
               joint_broken, tolerance, max_move, max_turn, dt, pos, quat, vel, omega, g, s, Jg, rhs, delta,
               seen):  # fmt: skip
    """The joints of :func:`_projection_pass` from the ``first``-th up to the next that is not plain
    (:func:`..contact_solvers.joint_block.is_plain`), broken ones skipped: ``(where it stopped, whether a body moved)``.

    A plain joint's projected rows are exactly its packed equality rows (its locked axes with mass, in order), so
    ``delta = K^-1 (-C)`` by the stored inverse and each body's move ``M^-1 J^T delta`` from the packed rows, in
    scalars: the same arithmetic, in the same order, as :func:`_project_joint`."""
    eq_index, eq_count, box_count, pack = packed
    moved = False
    i = first
    while i < end:
        j = i
        if joint_broken[j]:
            i += 1
            continue
        n = eq_count[j]
        if not is_plain(n, box_count[j], eq_index[j, max(n - 1, 0)]):
            break
        i += 1
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), False, g, s, Jg)
        worst = 0.0
        for k in range(6):
            err, corrected = axis_error(flags[j, k], s[k], lower[j, k], upper[j, k])
            if corrected:
                seen[0 if k < 3 else 1] = max(seen[0 if k < 3 else 1], abs(err))
                worst = max(worst, abs(err))
                rhs[k] = -err
        if worst <= tolerance:
            continue
        for a in range(n):  # delta = K^-1 rhs, the block's stored inverse
            t = 0.0
            for c in range(n):
                t += pack[j, PACK_KINV + PACK_ROWS * a + c] * rhs[eq_index[j, c]]
            delta[a] = t
        b0, b1 = joint_body[j, 0], joint_body[j, 1]
        m0 = body_inv_mass[b0] if b0 >= 0 else 0.0
        m1 = body_inv_mass[b1] if b1 >= 0 else 0.0
        x0 = y0 = z0 = p0 = q0 = r0 = x1 = y1 = z1 = p1 = q1 = r1 = 0.0
        for a in range(n):  # each body's move M^-1 J^T delta (body 0 takes it with a minus)
            d = delta[a]
            o = PACK_J + 9 * a
            u = PACK_IJ + 6 * a
            x0, y0, z0 = x0 + m0 * pack[j, o] * d, y0 + m0 * pack[j, o + 1] * d, z0 + m0 * pack[j, o + 2] * d
            p0, q0, r0 = p0 + pack[j, u] * d, q0 + pack[j, u + 1] * d, r0 + pack[j, u + 2] * d
            x1, y1, z1 = x1 + m1 * pack[j, o] * d, y1 + m1 * pack[j, o + 1] * d, z1 + m1 * pack[j, o + 2] * d
            p1, q1, r1 = p1 + pack[j, u + 3] * d, q1 + pack[j, u + 4] * d, r1 + pack[j, u + 5] * d
        x0, y0, z0, p0, q0, r0 = -x0, -y0, -z0, -p0, -q0, -r0
        f = 1.0
        if b0 >= 0:
            f = min(f, _clamp_factor(x0, y0, z0, p0, q0, r0, max_move, max_turn))
        if b1 >= 0:
            f = min(f, _clamp_factor(x1, y1, z1, p1, q1, r1, max_move, max_turn))
        if m0 > 0.0:  # a body of infinite mass does not move (a chunk running beside this one may share it)
            _move_body(b0, x0, y0, z0, p0, q0, r0, f, dt, pos, quat, vel, omega)
        if m1 > 0.0:
            _move_body(b1, x1, y1, z1, p1, q1, r1, f, dt, pos, quat, vel, omega)
        moved = True
    return i, moved


@njit_parallel
def _coloured_projection(colours, chunk_colour, chunk_result, joint_body, frame_pos, frame_quat, flags, lower, upper,
                         sign, kind, J, IJ, row_K, packed, body_inv_mass, joint_broken, tolerance, max_move, max_turn,
                         dt, pos, quat, vel, omega, factors, factored, rows_of, seen):  # fmt: skip
    """:func:`_projection_pass` over every joint, colour by colour, the chunks of a colour on every thread
    (:mod:`..contact_solvers.joint_colouring`: they share no body of finite mass, so the result is the same whatever
    the thread count), each chunk with scratch of its own; folds the errors into ``seen`` and returns whether a body
    moved. ``chunk_result`` (3, nj): each chunk's errors and whether it moved."""
    nj = joint_body.shape[0]
    chunks = chunk_count(0, nj)
    for colour in range(colours):
        for c in prange(chunks):
            if chunk_colour[c] == colour:
                g, s, Jg = geometry_scratch()
                local = np.zeros((2, JOINT_ROWS))
                index = np.zeros(JOINT_ROWS, np.int64)
                change = np.zeros((2, 6))
                out = np.zeros(2)
                first = c * JOINT_CHUNK
                moved = _projection_pass(first, min(first + JOINT_CHUNK, nj), joint_body, frame_pos, frame_quat, flags,
                                         lower, upper, sign, kind, J, IJ, row_K, packed, body_inv_mass, joint_broken,
                                         tolerance, max_move, max_turn, dt, pos, quat, vel, omega, g, s, Jg, local[0],
                                         local[1], index, change, factors, factored, rows_of, out)  # fmt: skip
                chunk_result[0, c], chunk_result[1, c] = out[0], out[1]
                chunk_result[2, c] = 1.0 if moved else 0.0
    moved = False
    for c in range(chunks):
        seen[0] = max(seen[0], chunk_result[0, c])
        seen[1] = max(seen[1], chunk_result[1, c])
        moved = moved or chunk_result[2, c] > 0.0
    return moved


@njit_kernel
def _any_general(eq_index, eq_count, box_count, joint_broken):
    """Whether an unbroken joint is not plain (:func:`_plain_run`): only those keep a factor in the projection."""
    for j in range(eq_count.shape[0]):
        n = eq_count[j]
        if not joint_broken[j] and not is_plain(n, box_count[j], eq_index[j, max(n - 1, 0)]):
            return True
    return False


@njit_kernel
def _project_joint(j, joint_body, frame_pos, frame_quat, flags, lower, upper, sign, kind, J, IJ, row_K,
                   body_inv_mass, tolerance, max_move, max_turn, dt, pos, quat, vel, omega, g, s, Jg, rhs, delta, index,
                   change, factors, factored, rows_of, seen):  # fmt: skip
    """One unbroken joint of :func:`_projection_pass` that is not plain: its errors measured and, where one exceeds
    ``tolerance``, its bodies moved by its own factor (built once per call, again when its set of projected rows
    changes); returns whether they moved."""
    joint_geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), False, g, s, Jg)
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
        return False
    for a in range(n):
        rows_of[j, a] = index[a]
    if factored[j] != axes:
        joint_cholesky_factor(j, n, rows_of, row_K, factors)
        factored[j] = axes
    joint_cholesky_solve(j, n, rows_of, factors, rhs, delta)
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
        b = joint_body[j, side]
        if b >= 0 and body_inv_mass[b] > 0.0:  # a body of infinite mass does not move
            _apply_change(b, change, side, f, dt, pos, quat, vel, omega)
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
    errors [m, rad] the last pass measured. Returns the passes that moved a body.

    A pass measures each joint's errors as it comes to it (Gauss–Seidel's own order), so the errors that decide the
    next pass cost no pass of their own; the pass that finds every joint within the tolerance moves nothing and its
    errors are the final ones. When the passes run out first, ``out_error`` keeps what the last pass measured, each
    joint's error before that pass corrected it (more than is left while the passes converge): measuring again
    would cost another pass over the joints' geometry (on a glued wall at Bullet's 10 sweeps, a seventh of the
    step). Over more than ``JOINT_CHUNK`` joints the passes run coloured, on every thread
    (:func:`_coloured_projection`).
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
    general = nj if _any_general(packed[0], packed[1], packed[2], joint_broken) else 0  # none: no factor to keep
    factors = np.zeros((general, 6, 6))
    factored = np.full(general, -1, np.int64)  # the bit set of axes each joint's factor holds
    rows_of = np.zeros((general, 6), np.int64)  # each joint's projected rows, as the factor's kernels index them
    seen = np.zeros(2)
    before = np.full(2, np.inf)
    chunk_colour, chunk_result = np.zeros(nj, np.int64), np.zeros((3, nj))
    colours = 0
    if nj > JOINT_CHUNK:
        colours = colour_chunks(np.arange(nj), 0, nj, joint_body, body_inv_mass, np.zeros(pos.shape[0], np.int64),
                                chunk_colour)  # fmt: skip
    done = 0
    for _ in range(passes):
        seen[:] = 0.0
        if colours > 0:
            moved = _coloured_projection(colours, chunk_colour, chunk_result, joint_body, frame_pos, frame_quat, flags,
                                         lower, upper, sign, kind, J, IJ, row_K, packed, body_inv_mass, joint_broken,
                                         tolerance, max_move, max_turn, dt, pos, quat, vel, omega, factors, factored,
                                         rows_of, seen)  # fmt: skip
        else:
            moved = _projection_pass(0, nj, joint_body, frame_pos, frame_quat, flags, lower, upper, sign, kind, J, IJ,
                                     row_K, packed, body_inv_mass, joint_broken, tolerance, max_move, max_turn, dt, pos,
                                     quat, vel, omega, g, s, Jg, rhs, delta, index, change, factors, factored, rows_of,
                                     seen)  # fmt: skip
        out_error[:] = seen
        if not moved:
            return done  # nothing moved: ``seen`` are the errors left
        done += 1
        if not (_progressed(seen[0], before[0], tolerance, stall, settled)
                or _progressed(seen[1], before[1], tolerance, stall, settled)):  # fmt: skip
            break
        before[:] = seen
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
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), False, g, s, Jg)
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
        joint_geometry(j, joint_body, frame_pos, frame_quat, sign, pos, quat, uses_angles(flags, j), False, g, s, Jg)
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
