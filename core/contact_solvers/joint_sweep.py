"""The joint block update: each joint's rows solved as one block against the body accumulators.

A joint's rows (:mod:`..rigid.joint_rows`) read the velocity ``u = row_b + J (dv, dw)`` from the accumulators
the contact solvers keep, as a contact does, and add ``M^-1 J^T d_lambda`` back. Inside a contact solver's sweep
(:func:`joint_pass`) the joints and the contacts share one pair of accumulators; a step without contacts solves the
joints alone (:func:`solve_joint_sweeps`, which reads a second, held pair beside its own).

Per joint (seed §3.2, blocked Gauss–Seidel with the joint blocks solved directly): the equality rows (locked axes,
implicit springs) at once by the joint's Cholesky factor, ``d = -(K_EE)^-1 (u_E + gamma lambda_E)``, then the
boxed rows (limits one-sided, motors ``|lambda| <= max impulse``) row by row projected, alternated a few passes
so the two couple inside the block. Without boxed rows one direct solve is exact. When the scene's equality rows
are few, the rigid engine factors all of them together (``..rigid.joint_global``) and each pass solves them at
once (:func:`solve_global_equalities`, or one contact island's by :func:`solve_global_island`): a long chain is
then exact in one solve instead of stretching under Gauss–Seidel. A pass over more than ``JOINT_CHUNK`` joints
runs their chunks coloured (:mod:`.joint_colouring`, :func:`_coloured_pass`): on every thread, and the same
result on one.
"""

import numpy as np

from ..jit import njit_kernel, njit_parallel, prange
from .joint_block import (
    JOINT_ROWS,
    PACK_B,
    PACK_GAMMA,
    PACK_IJ,
    PACK_J,
    PACK_KINV,
    PACK_ROWS,
    envelope_solve,
    is_packed,
    joint_cholesky_solve,
    row_speed,
)
from .joint_colouring import JOINT_CHUNK, chunk_count, colour_chunks

DEFAULT_BLOCK_PASSES = 4
"""Passes inside a joint block with boxed rows (Blender's per-joint solver iterations replace it)."""


@njit_kernel
def _apply_row(j, r, b0, b1, delta, body_inv_mass, row_J, row_IJ, dv, dw):
    """``(dv, dw) += M^-1 J_r^T delta`` for row ``r`` of joint ``j`` (the world takes nothing)."""
    for i in range(3):
        if b1 >= 0:
            dv[b1, i] += body_inv_mass[b1] * row_J[j, r, 0, i] * delta
            dw[b1, i] += row_IJ[j, r, 1, i] * delta
        if b0 >= 0:
            dv[b0, i] -= body_inv_mass[b0] * row_J[j, r, 0, i] * delta
            dw[b0, i] -= row_IJ[j, r, 0, i] * delta


@njit_kernel
def warm_start_joints(joint_body, body_inv_mass, rows, factor, lam, dv, dw):
    """Start every active row from ``factor`` times its last impulse (boxed rows clamped to this step's box) and
    add it to ``(dv, dw)`` (nb, 3), which are zeroed first. ``lam`` (nj, R) [N·s]; inactive rows are zeroed. The
    packed joints (:func:`.joint_block.pack_equalities`) go first, each block's impulse summed and added once, in a
    loop without calls (:func:`_warm_start_packed`); the others row by row."""
    kind, row_J, row_IJ, _, row_lo, row_hi = rows[:6]
    eq_count, box_count = rows[10], rows[12]
    dv[:] = 0.0
    dw[:] = 0.0
    _warm_start_packed(joint_body, body_inv_mass, rows, factor, lam, dv, dw)
    for j in range(joint_body.shape[0]):
        if is_packed(eq_count[j], box_count[j]):
            continue
        b0, b1 = joint_body[j, 0], joint_body[j, 1]
        for r in range(JOINT_ROWS):
            if kind[j, r] == 0:
                lam[j, r] = 0.0
                continue
            x = factor * lam[j, r]
            if kind[j, r] == 2:
                x = min(max(x, row_lo[j, r]), row_hi[j, r])
            lam[j, r] = x
            if x != 0.0:
                _apply_row(j, r, b0, b1, x, body_inv_mass, row_J, row_IJ, dv, dw)


@njit_kernel
def _warm_start_packed(joint_body, body_inv_mass, rows, factor, lam, dv, dw):
    """:func:`warm_start_joints` of the packed joints: their rows' impulses scaled, the inactive ones zeroed, and
    each block's ``M^-1 J^T lambda`` from its packed rows added to its bodies."""
    kind, eq_index, eq_count, box_count, pack = rows[0], rows[9], rows[10], rows[12], rows[13]
    for j in range(joint_body.shape[0]):
        neq = eq_count[j]
        if not is_packed(neq, box_count[j]):
            continue
        for r in range(JOINT_ROWS):
            if kind[j, r] == 0:
                lam[j, r] = 0.0
        lx = ly = lz = a0x = a0y = a0z = a1x = a1y = a1z = 0.0
        for a in range(neq):
            r = eq_index[j, a]
            d = factor * lam[j, r]
            lam[j, r] = d
            o = PACK_J + 9 * a
            q = PACK_IJ + 6 * a
            lx, ly, lz = lx + pack[j, o] * d, ly + pack[j, o + 1] * d, lz + pack[j, o + 2] * d
            a0x, a0y, a0z = a0x + pack[j, q] * d, a0y + pack[j, q + 1] * d, a0z + pack[j, q + 2] * d
            a1x, a1y, a1z = a1x + pack[j, q + 3] * d, a1y + pack[j, q + 4] * d, a1z + pack[j, q + 5] * d
        _add_block_impulse(joint_body[j, 0], joint_body[j, 1], body_inv_mass, lx, ly, lz, a0x, a0y, a0z, a1x, a1y,
                           a1z, dv, dw)  # fmt: skip


@njit_kernel
def _block_velocities(b0, b1, dv_c, dw_c, dv, dw):
    """The velocity changes of a joint's two bodies, ``(v0, w0, v1, w1)`` as twelve numbers [m/s, rad/s]: the sums of
    the held ``(dv_c, dw_c)`` and the joints' own ``(dv, dw)`` (nb, 3); the world's are zero."""
    v0x = v0y = v0z = w0x = w0y = w0z = 0.0
    v1x = v1y = v1z = w1x = w1y = w1z = 0.0
    if b0 >= 0:
        v0x, v0y, v0z = dv_c[b0, 0] + dv[b0, 0], dv_c[b0, 1] + dv[b0, 1], dv_c[b0, 2] + dv[b0, 2]
        w0x, w0y, w0z = dw_c[b0, 0] + dw[b0, 0], dw_c[b0, 1] + dw[b0, 1], dw_c[b0, 2] + dw[b0, 2]
    if b1 >= 0:
        v1x, v1y, v1z = dv_c[b1, 0] + dv[b1, 0], dv_c[b1, 1] + dv[b1, 1], dv_c[b1, 2] + dv[b1, 2]
        w1x, w1y, w1z = dw_c[b1, 0] + dw[b1, 0], dw_c[b1, 1] + dw[b1, 1], dw_c[b1, 2] + dw[b1, 2]
    return v0x, v0y, v0z, w0x, w0y, w0z, v1x, v1y, v1z, w1x, w1y, w1z


@njit_kernel
def _add_block_impulse(b0, b1, body_inv_mass, lx, ly, lz, a0x, a0y, a0z, a1x, a1y, a1z, dv, dw):
    """Add a joint block's summed impulse to its bodies' accumulators ``(dv, dw)`` (nb, 3): ``l`` = ``sum J_lin d``
    [N·s], ``a0``, ``a1`` = ``sum I^-1 J_ang d`` of each side [rad/s]; body 1 takes ``+``, body 0 ``-``, the world
    (a negative index) nothing."""
    if b1 >= 0:
        m1 = body_inv_mass[b1]
        dv[b1, 0] += m1 * lx
        dv[b1, 1] += m1 * ly
        dv[b1, 2] += m1 * lz
        dw[b1, 0] += a1x
        dw[b1, 1] += a1y
        dw[b1, 2] += a1z
    if b0 >= 0:
        m0 = body_inv_mass[b0]
        dv[b0, 0] -= m0 * lx
        dv[b0, 1] -= m0 * ly
        dv[b0, 2] -= m0 * lz
        dw[b0, 0] -= a0x
        dw[b0, 1] -= a0y
        dw[b0, 2] -= a0z


@njit_kernel
def _solve_equalities(j, b0, b1, neq, body_inv_mass, rows, lam, dv_c, dw_c, dv, dw, scratch, delta):
    """Joint ``j``'s ``neq`` equality rows at once by its factor, ``d = -(K_EE)^-1 (u_E + gamma lambda_E)``, reading
    each body's velocity change once and writing it once (a glued wall's sweep is mostly this); returns the largest
    impulse change [N·s]."""
    row_J, row_IJ, row_b, row_gamma, row_L, eq_index = rows[1], rows[2], rows[3], rows[6], rows[8], rows[9]
    v0x, v0y, v0z, w0x, w0y, w0z, v1x, v1y, v1z, w1x, w1y, w1z = _block_velocities(b0, b1, dv_c, dw_c, dv, dw)
    for a in range(neq):
        r = eq_index[j, a]
        u = (
            row_J[j, r, 0, 0] * (v1x - v0x)
            + row_J[j, r, 0, 1] * (v1y - v0y)
            + row_J[j, r, 0, 2] * (v1z - v0z)
            + row_J[j, r, 2, 0] * w1x
            + row_J[j, r, 2, 1] * w1y
            + row_J[j, r, 2, 2] * w1z
            - row_J[j, r, 1, 0] * w0x
            - row_J[j, r, 1, 1] * w0y
            - row_J[j, r, 1, 2] * w0z
        )
        scratch[r] = -(row_b[j, r] + u + row_gamma[j, r] * lam[j, r])
    joint_cholesky_solve(j, neq, eq_index, row_L, scratch, delta)
    merit = 0.0
    lx = ly = lz = a0x = a0y = a0z = a1x = a1y = a1z = 0.0
    for a in range(neq):
        r = eq_index[j, a]
        d = delta[r]
        lam[j, r] += d
        merit = max(merit, abs(d))
        lx += row_J[j, r, 0, 0] * d
        ly += row_J[j, r, 0, 1] * d
        lz += row_J[j, r, 0, 2] * d
        a0x += row_IJ[j, r, 0, 0] * d
        a0y += row_IJ[j, r, 0, 1] * d
        a0z += row_IJ[j, r, 0, 2] * d
        a1x += row_IJ[j, r, 1, 0] * d
        a1y += row_IJ[j, r, 1, 1] * d
        a1z += row_IJ[j, r, 1, 2] * d
    _add_block_impulse(b0, b1, body_inv_mass, lx, ly, lz, a0x, a0y, a0z, a1x, a1y, a1z, dv, dw)
    return merit


@njit_kernel
def _update_block(j, joint_body, joint_passes, body_inv_mass, rows, lam, dv_c, dw_c, dv, dw, scratch, delta,
                  use_global):  # fmt: skip
    """Joint ``j``'s update in a Gauss–Seidel pass when it is not one packed equality block (those are solved in
    :func:`_blocks_pass`): it has boxed rows (:func:`_solve_block`) or more than ``PACK_ROWS`` equality rows.
    Returns ``(largest change, largest impulse)`` [N·s]."""
    b0, b1 = joint_body[j, 0], joint_body[j, 1]
    largest = 0.0
    passes = joint_passes[j] if joint_passes[j] > 0 else DEFAULT_BLOCK_PASSES
    merit = _solve_block(j, b0, b1, passes, body_inv_mass, rows, lam, dv_c, dw_c, dv, dw, scratch, delta, use_global)
    for r in range(JOINT_ROWS):
        largest = max(largest, abs(lam[j, r]))
    return merit, largest


@njit_kernel
def _solve_block(j, b0, b1, passes, body_inv_mass, rows, lam, dv_c, dw_c, dv, dw, scratch, delta, boxed_only):
    """One joint's block update (module docstring); returns its largest impulse change [N·s]. ``boxed_only``: the
    equality rows are solved elsewhere (:mod:`..rigid.joint_global`)."""
    neq, nbox = rows[10][j], rows[12][j]
    if boxed_only:
        neq = 0
    row_J, row_IJ, row_b, row_lo, row_hi = rows[1], rows[2], rows[3], rows[4], rows[5]
    row_K, box_index = rows[7], rows[11]
    merit = 0.0
    for _ in range(passes if nbox > 0 else 1):  # without boxed rows one direct solve is exact
        if neq > 0:
            merit = max(merit, _solve_equalities(j, b0, b1, neq, body_inv_mass, rows, lam, dv_c, dw_c, dv, dw,
                                                 scratch, delta))  # fmt: skip
        for a in range(nbox):
            r = box_index[j, a]
            u = row_b[j, r] + row_speed(row_J, j, r, b0, b1, dv_c, dw_c, dv, dw)
            new = min(max(lam[j, r] - u / row_K[j, r, r], row_lo[j, r]), row_hi[j, r])
            d = new - lam[j, r]
            if d != 0.0:
                lam[j, r] = new
                merit = max(merit, abs(d))
                _apply_row(j, r, b0, b1, d, body_inv_mass, row_J, row_IJ, dv, dw)
    return merit


@njit_kernel
def _blocks_pass(order, start, end, backward, joint_body, joint_passes, body_inv_mass, rows, lam, dv_c, dw_c, dv, dw,
                 scratch, delta, use_global):  # fmt: skip
    """One Gauss–Seidel pass over the joint blocks ``order[start:end]`` (backward when asked); returns ``(largest
    change, largest impulse)`` [N·s]. Runs of pure equality blocks (a glued wall's) go to :func:`_packed_run`; the
    others, one by one, to :func:`_update_block`, in the same order.

    The packed blocks run in a loop of their own because a call inside a loop costs the loop even when it is not
    taken: each array the call receives escapes, and the loop then reloads every array's address and strides at
    each step. With the other blocks' call in the same loop, a glued wall's pass took twice as long."""
    merit = 0.0
    largest = 0.0
    i = 0
    count = end - start
    while i < count:
        i, change, big = _packed_run(order, start, end, backward, i, joint_body, body_inv_mass, rows, lam, dv_c, dw_c,
                                     dv, dw, delta, use_global)  # fmt: skip
        merit = max(merit, change)
        largest = max(largest, big)
        if i == count:
            break
        j = order[end - 1 - i] if backward else order[start + i]
        change, big = _update_block(j, joint_body, joint_passes, body_inv_mass, rows, lam, dv_c, dw_c, dv, dw, scratch,
                                    delta, use_global)  # fmt: skip
        merit = max(merit, change)
        largest = max(largest, big)
        i += 1
    return merit, largest


@njit_kernel
def _packed_run(order, start, end, backward, first, joint_body, body_inv_mass, rows, lam, dv_c, dw_c, dv, dw, delta,
                use_global):  # fmt: skip
    """The pure equality blocks of :func:`_blocks_pass` from its ``first``-th joint up to the next other one;
    returns ``(where it stopped, largest change, largest impulse)``. Each block is solved from its packed rows
    (:func:`.joint_block.pack_equalities`, one contiguous stretch): ``K delta = -(b + J v + gamma lambda)`` by the
    stored inverse ``K^-1``, then the bodies take ``M^-1 J^T delta``. With ``use_global`` their rows were solved
    by the scene-wide factor, and only their impulses are read. Written out: the only calls in the loop are the
    two small helpers the compiler inlines."""
    eq_index, eq_count, box_count, pack = rows[9], rows[10], rows[12], rows[13]
    merit = 0.0
    largest = 0.0
    count = end - start
    i = first
    while i < count:
        j = order[end - 1 - i] if backward else order[start + i]
        neq = eq_count[j]
        if neq > PACK_ROWS or box_count[j] != 0:
            break
        i += 1
        if use_global:  # a chain's: the scene-wide solve's rows
            for a in range(neq):
                largest = max(largest, abs(lam[j, eq_index[j, a]]))
            continue
        b0, b1 = joint_body[j, 0], joint_body[j, 1]
        v0x, v0y, v0z, w0x, w0y, w0z, v1x, v1y, v1z, w1x, w1y, w1z = _block_velocities(b0, b1, dv_c, dw_c, dv, dw)
        for a in range(neq):
            o = PACK_J + 9 * a
            u = (
                pack[j, o] * (v1x - v0x) + pack[j, o + 1] * (v1y - v0y) + pack[j, o + 2] * (v1z - v0z)
                + pack[j, o + 6] * w1x + pack[j, o + 7] * w1y + pack[j, o + 8] * w1z
                - pack[j, o + 3] * w0x - pack[j, o + 4] * w0y - pack[j, o + 5] * w0z
            )  # fmt: skip
            delta[a] = -(pack[j, PACK_B + a] + u + pack[j, PACK_GAMMA + a] * lam[j, eq_index[j, a]])
        for a in range(neq):  # delta = K^-1 rhs, the solution after the right-hand sides
            t = 0.0
            for c in range(neq):
                t += pack[j, PACK_KINV + PACK_ROWS * a + c] * delta[c]
            delta[PACK_ROWS + a] = t
        lx = ly = lz = a0x = a0y = a0z = a1x = a1y = a1z = 0.0
        for a in range(neq):
            d = delta[PACK_ROWS + a]
            r = eq_index[j, a]
            lam[j, r] += d
            merit = max(merit, abs(d))
            largest = max(largest, abs(lam[j, r]))
            o = PACK_J + 9 * a
            q = PACK_IJ + 6 * a
            lx, ly, lz = lx + pack[j, o] * d, ly + pack[j, o + 1] * d, lz + pack[j, o + 2] * d
            a0x, a0y, a0z = a0x + pack[j, q] * d, a0y + pack[j, q + 1] * d, a0z + pack[j, q + 2] * d
            a1x, a1y, a1z = a1x + pack[j, q + 3] * d, a1y + pack[j, q + 4] * d, a1z + pack[j, q + 5] * d
        _add_block_impulse(b0, b1, body_inv_mass, lx, ly, lz, a0x, a0y, a0z, a1x, a1y, a1z, dv, dw)
    return i, merit, largest


@njit_kernel
def solve_joint_sweeps(joint_body, joint_passes, body_inv_mass, rows, sweeps, tolerance, lam, dv_c, dw_c, dv, dw,
                       scratch, delta, glob, chunks):  # fmt: skip
    """Up to ``sweeps`` symmetric Gauss–Seidel sweeps over the joint blocks with the contacts' ``(dv_c, dw_c)``
    held; stops when a sweep changes no impulse by more than ``tolerance`` times the largest one.

    ``rows``: :func:`..rigid.joint_rows.joint_row_arrays`; ``lam`` (nj, R) [N·s]; ``dv``, ``dw`` (nb, 3): the joints'
    accumulators (updated); ``scratch``, ``delta`` (R,). ``glob``: the dense solve's scratch
    (``..rigid.joint_global.global_scratch``: rows, factor, count); when it holds rows, each sweep solves every
    equality row at once (:func:`solve_global_equalities`) and the blocks only their boxed rows. ``chunks``: the
    bundle's ``(chunk_colour, body_mask, chunk_result)``; more than ``JOINT_CHUNK`` joints sweep coloured
    (:func:`_coloured_pass`), as inside a contact solver's sweeps. A step whose rows are all equality rows solved
    at once stops after that one exact sweep (a second would only confirm it). Returns ``(sweeps done, merit of the
    first sweep)`` (the first sweep's merit says whether the contacts' last change moved the joints at all).
    """
    nj = joint_body.shape[0]
    order = np.arange(nj)
    chunk_colour, body_mask, chunk_result = chunks
    colours = 0
    if nj > JOINT_CHUNK:
        colours = colour_chunks(order, np.int64(0), nj, joint_body, body_inv_mass, body_mask, chunk_colour)
    first = 0.0
    done = 0
    use_global = glob[7][0] > 0
    exact = use_global  # every row an equality row, all solved at once: the first sweep is exact
    if use_global:
        for j in range(nj):
            if rows[12][j] > 0:
                exact = False
                break
    for it in range(sweeps):
        merit = 0.0
        largest = 0.0
        if use_global:
            merit = solve_global_equalities(joint_body, rows, body_inv_mass, glob, lam, dv_c, dw_c, dv, dw)
        if colours > 0:
            change, big = _coloured_pass(colours, order, np.int64(0), nj, it % 2 == 1, joint_body, joint_passes,
                                         body_inv_mass, rows, lam, dv_c, dw_c, dv, dw, use_global, chunk_colour,
                                         chunk_result)  # fmt: skip
        else:
            change, big = _blocks_pass(order, np.int64(0), nj, it % 2 == 1, joint_body, joint_passes, body_inv_mass,
                                       rows, lam, dv_c, dw_c, dv, dw, scratch, delta, use_global)  # fmt: skip
        merit = max(merit, change)
        largest = max(largest, big)
        if it == 0:
            first = merit
        done = it + 1
        if exact or merit <= tolerance * max(largest, 1e-300):
            break
    return done, first


@njit_kernel
def break_joints(rows, lam, threshold, joint_broken):
    """Bullet's rule after a step's solve: a joint any of whose rows carried ``|lambda| >= threshold`` [N·s] breaks
    (it acted in this step; it is gone from the next). Returns how many broke now."""
    kind = rows[0]
    count = 0
    for j in range(lam.shape[0]):
        if joint_broken[j]:
            continue
        for r in range(JOINT_ROWS):
            if kind[j, r] != 0 and abs(lam[j, r]) >= threshold[j]:
                joint_broken[j] = True
                count += 1
                break
    return count


@njit_kernel
def solve_global_equalities(joint_body, rows, body_inv_mass, scratch, lam, dv_c, dw_c, dv, dw):
    """One direct solve of every equality row at once: ``d = -K^-1 (u + gamma lambda)``; the accumulators
    ``(dv, dw)`` take ``M^-1 J^T d``. Returns the largest change [N·s]."""
    row_joint, row_slot, layout, _, L, rhs, x, count = scratch
    J, IJ, row_b, gamma = rows[1], rows[2], rows[3], rows[6]
    n = count[0]
    for a in range(n):
        j, r = row_joint[a], row_slot[a]
        u = row_b[j, r] + row_speed(J, j, r, joint_body[j, 0], joint_body[j, 1], dv_c, dw_c, dv, dw)
        rhs[a] = -(u + gamma[j, r] * lam[j, r])
    envelope_solve(n, layout, L, rhs, x)
    merit = 0.0
    for a in range(n):
        j, r = row_joint[a], row_slot[a]
        lam[j, r] += x[a]
        merit = max(merit, abs(x[a]))
        b0, b1 = joint_body[j, 0], joint_body[j, 1]
        for i in range(3):
            if b1 >= 0:
                dv[b1, i] += body_inv_mass[b1] * J[j, r, 0, i] * x[a]
                dw[b1, i] += IJ[j, r, 1, i] * x[a]
            if b0 >= 0:
                dv[b0, i] -= body_inv_mass[b0] * J[j, r, 0, i] * x[a]
                dw[b0, i] -= IJ[j, r, 0, i] * x[a]
    return merit


# --- Joints inside a contact solver's sweep -------------------------------------------------------------------
# The contact kernels take a joint bundle (:func:`..rigid.solvers.joint_step.JointStep.bundle`):
#   (joint_body (nj, 2), joint_passes (nj,), body_inv_mass (nb,), rows, lam (nj, R), zero (2, nb, 3),
#    scratch (R,), delta (R,), glob, order (nj,), order_start (c + 2,), saved (nj, R), conjugate (2, nj, R),
#    joint_island (nj,), row_start (nj + 1,), chunk_colour (nj,), body_mask (nb,), colour_count (c + 3,),
#    chunk_result (2, nj))
# ``order``/``order_start``/``joint_island``: the joints grouped by contact island (PROX); ``row_start``: joint j's
# equality rows in the scene-wide solve are ``row_start[j]:row_start[j + 1]``; ``chunk_colour``, ``body_mask``,
# ``colour_count`` (per island + 1) and ``chunk_result``: the coloured passes' chunks (:mod:`.joint_colouring`).
# A scene without joints passes zero-length arrays of the same dtypes (one specialization per kernel). In a sweep
# the joints act on the SAME accumulators (dv, dw) as the contacts: a contact row then sees every joint impulse and
# a joint row every contact impulse without any shifted right-hand side.


@njit_kernel
def joint_pass(joints, start, end, it, use_global, island, dv, dw):
    """One Gauss–Seidel pass over the joints ``order[start:end]`` on the shared accumulators ``dv``, ``dw`` (nb, 3).

    ``use_global``: the equality rows first, all at once by the scene-wide factor (every joint's when ``island`` is
    negative, else only those of the joints of that island, :func:`solve_global_island`), then each block's boxed
    rows; otherwise each joint's block solved directly (its equality rows by its own factor, then its boxed rows).
    Odd passes visit the joints backwards (symmetric Gauss–Seidel, as the contacts). More than one chunk of joints
    (:mod:`.joint_colouring`) run coloured, on every thread (:func:`_coloured_pass`); the colouring is made on the
    first pass (``it == 0``) and kept for the step's others. Returns ``(merit, largest)``: the largest impulse
    change and the largest impulse of the pass [N·s].
    """
    joint_body, joint_passes, body_inv_mass, rows, lam, zero, scratch, delta, glob, order = joints[:10]
    merit = 0.0
    largest = 0.0
    if use_global and island < 0:
        merit = solve_global_equalities(joint_body, rows, body_inv_mass, glob, lam, zero[0], zero[1], dv, dw)
    elif use_global:
        merit = solve_global_island(joints, start, end, island, dv, dw)
    colours = 0
    if end - start > JOINT_CHUNK:
        colour_count = joints[17]
        if it == 0:
            colour_count[island + 1] = colour_chunks(order, start, end, joint_body, body_inv_mass, joints[16],
                                                     joints[15])  # fmt: skip
        colours = colour_count[island + 1]
    if colours > 0:
        change, big = _coloured_pass(colours, order, start, end, it % 2 == 1, joint_body, joint_passes, body_inv_mass,
                                     rows, lam, zero[0], zero[1], dv, dw, use_global, joints[15],
                                     joints[18])  # fmt: skip
    else:
        change, big = _blocks_pass(order, start, end, it % 2 == 1, joint_body, joint_passes, body_inv_mass, rows, lam,
                                   zero[0], zero[1], dv, dw, scratch, delta, use_global)  # fmt: skip
    merit = max(merit, change)
    largest = max(largest, big)
    return merit, largest


@njit_parallel
def _coloured_pass(colours, order, start, end, backward, joint_body, joint_passes, body_inv_mass, rows, lam, dv_c,
                   dw_c, dv, dw, use_global, chunk_colour, chunk_result):  # fmt: skip
    """:func:`_blocks_pass` over ``order[start:end]`` colour by colour (backward: the last colour first), the chunks
    of a colour on every thread, each front to back (backward: back to front) with scratch of its own; returns
    ``(largest change, largest impulse)`` [N·s]. Chunks of one colour share no body of finite mass
    (:func:`.joint_colouring.colour_chunks`), so the result is the same whatever the thread count."""
    chunks = chunk_count(start, end)
    for step in range(colours):
        colour = colours - 1 - step if backward else step
        for c in prange(chunks):
            if chunk_colour[start + c] == colour:
                first = start + c * JOINT_CHUNK
                local = np.zeros((2, JOINT_ROWS))
                change, big = _blocks_pass(order, first, min(first + JOINT_CHUNK, end), backward, joint_body,
                                           joint_passes, body_inv_mass, rows, lam, dv_c, dw_c, dv, dw, local[0],
                                           local[1], use_global)  # fmt: skip
                chunk_result[0, start + c] = change
                chunk_result[1, start + c] = big
    merit = 0.0
    largest = 0.0
    for c in range(chunks):
        merit = max(merit, chunk_result[0, start + c])
        largest = max(largest, chunk_result[1, start + c])
    return merit, largest


@njit_kernel
def uses_global_factor(joints):
    """Whether this step factored the scene's equality rows all at once (:mod:`..rigid.joint_global`)."""
    return joints[8][7][0] > 0


@njit_kernel
def save_joint_impulses(joints, start, end):
    """Copy the impulses of the joints ``order[start:end]`` into ``saved`` (before a PROX sweep)."""
    lam, order, saved = joints[4], joints[9], joints[11]
    for i in range(start, end):
        j = order[i]
        for r in range(JOINT_ROWS):
            saved[j, r] = lam[j, r]


@njit_kernel
def zero_joint_bodies(joints, start, end, dv, dw):
    """Zero the accumulators of the bodies of the joints ``order[start:end]`` (a PROX rollback rebuilds them)."""
    joint_body, order = joints[0], joints[9]
    for i in range(start, end):
        for side in range(2):
            b = joint_body[order[i], side]
            if b >= 0:
                for d in range(3):
                    dv[b, d] = 0.0
                    dw[b, d] = 0.0


@njit_kernel
def restore_joint_impulses(joints, start, end, dv, dw):
    """A rejected PROX sweep, joint side: the saved impulses back, and each added to ``(dv, dw)`` (whose bodies the
    caller zeroed with :func:`zero_joint_bodies` and refilled with the island's contacts)."""
    joint_body, body_inv_mass, rows, lam = joints[0], joints[2], joints[3], joints[4]
    order, saved = joints[9], joints[11]
    row_J, row_IJ = rows[1], rows[2]
    for i in range(start, end):
        j = order[i]
        for r in range(JOINT_ROWS):
            lam[j, r] = saved[j, r]
            if lam[j, r] != 0.0:
                _apply_row(j, r, joint_body[j, 0], joint_body[j, 1], lam[j, r], body_inv_mass, row_J, row_IJ, dv, dw)


@njit_kernel
def joint_conjugate_start(joints):
    """Accelerated PGS, joint side: the impulses at the start of the first sweep, no direction yet."""
    lam, conjugate = joints[4], joints[12]
    for j in range(lam.shape[0]):
        for r in range(JOINT_ROWS):
            conjugate[0, j, r] = lam[j, r]
            conjugate[1, j, r] = 0.0


@njit_kernel
def joint_sweep_residual(joints):
    """``|lambda_end - lambda_start|^2`` of the joints over the last sweep [N²·s²]."""
    lam, conjugate = joints[4], joints[12]
    s = 0.0
    for j in range(lam.shape[0]):
        for r in range(JOINT_ROWS):
            d = lam[j, r] - conjugate[0, j, r]
            s += d * d
    return s


@njit_kernel
def joint_conjugate_step(beta, joints):
    """Accelerated PGS, joint side: the joint impulses move on by ``beta p`` and ``beta p + r`` becomes the joints'
    direction (their body-space image is already in the contacts' per-body step, which sees the whole sweep)."""
    lam, conjugate = joints[4], joints[12]
    for j in range(lam.shape[0]):
        for r in range(JOINT_ROWS):
            step = beta * conjugate[1, j, r]
            conjugate[1, j, r] = step + lam[j, r] - conjugate[0, j, r]
            lam[j, r] += step
            conjugate[0, j, r] = lam[j, r]


@njit_kernel
def solve_global_island(joints, start, end, island, dv, dw):
    """The equality rows of the joints ``order[start:end]`` (all of contact island ``island``) at once by the
    scene-wide factor; the other rows' right-hand sides are zero, so their changes are exactly zero.

    Why exact: joints of different islands share no body of finite mass, so ``K`` is block diagonal across islands
    (up to the order of its rows) and its Cholesky factor has exact zeros between them; the triangular solves
    therefore only need the row span ``[lo, hi)`` of the island's rows. Returns the largest change [N·s].
    """
    joint_body, body_inv_mass, rows, lam, zero, glob, order = (
        joints[0], joints[2], joints[3], joints[4], joints[5], joints[8], joints[9]
    )  # fmt: skip
    joint_island, row_start = joints[13], joints[14]
    row_joint, row_slot, layout, _, L, rhs, x, _ = glob
    J, IJ, row_b, gamma = rows[1], rows[2], rows[3], rows[6]
    first, offset = layout[0], layout[1]
    lo, hi = row_start[-1], 0
    for i in range(start, end):
        j = order[i]
        if row_start[j + 1] > row_start[j]:
            lo = min(lo, row_start[j])
            hi = max(hi, row_start[j + 1])
    merit = 0.0
    for a in range(lo, hi):
        j, r = row_joint[a], row_slot[a]
        rhs[a] = 0.0
        if joint_island[j] == island:
            u = row_b[j, r] + row_speed(J, j, r, joint_body[j, 0], joint_body[j, 1], zero[0], zero[1], dv, dw)
            rhs[a] = -(u + gamma[j, r] * lam[j, r])
    for a in range(lo, hi):  # envelope_solve on rows [lo, hi): x is exactly zero before lo
        v = rhs[a]
        for k in range(max(first[a], lo), a):
            v -= L[offset[a] + k - first[a]] * x[k]
        x[a] = v / L[offset[a] + a - first[a]]
    for a in range(hi - 1, lo - 1, -1):
        x[a] /= L[offset[a] + a - first[a]]
        for k in range(max(first[a], lo), a):
            x[k] -= L[offset[a] + k - first[a]] * x[a]
    for a in range(lo, hi):
        j, r = row_joint[a], row_slot[a]
        if joint_island[j] != island or x[a] == 0.0:
            continue
        lam[j, r] += x[a]
        merit = max(merit, abs(x[a]))
        _apply_row(j, r, joint_body[j, 0], joint_body[j, 1], x[a], body_inv_mass, J, IJ, dv, dw)
    return merit
