"""Joint passes on every core: coloured chunks of joints, the packed blocks' inverse, the projection's reported error.

References: brute force over the chunks (no two chunks of one colour share a body of finite mass); the same bake
on one thread (bit for bit); a serial emulation of the coloured pass; numpy's inverse of the block ``K = J M^-1 J^T``
assembled from the rows; the joints' errors measured after the projection.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from contact_lab.core.contact_solvers import joint_sweep
from contact_lab.core.contact_solvers.joint_block import PACK_IJ, PACK_J, PACK_KINV, PACK_ROWS
from contact_lab.core.contact_solvers.joint_colouring import JOINT_CHUNK, MAX_COLOURS, chunk_count, colour_chunks
from contact_lab.core.rigid.joint_projection import project_joints
from contact_lab.core.rigid.joint_rows import joint_errors
from contact_lab.core.rigid.solvers import make_solver
from scenes import glued_wall


def _chunk_bodies(order, start, end, joint_body, inv_mass, c):
    first, last = start + c * JOINT_CHUNK, min(start + (c + 1) * JOINT_CHUNK, end)
    bodies = joint_body[order[first:last]].ravel()
    return {int(b) for b in bodies if b >= 0 and inv_mass[b] > 0.0}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chunks_of_one_colour_share_no_body_of_finite_mass(seed):
    """A random joint graph (900 joints over 300 bodies, a few of infinite mass, some joints to the world) in a
    shuffled order: every pair of chunks with one colour touches disjoint sets of movable bodies (brute force)."""
    rng = np.random.default_rng(seed)
    nb, nj = 300, 900
    joint_body = rng.integers(-1, nb, size=(nj, 2))
    inv_mass = np.where(rng.random(nb) < 0.05, 0.0, 1.0)
    order = rng.permutation(nj)
    start, end = 7, nj - 5
    chunk_colour = np.full(nj, -1, np.int64)
    colours = colour_chunks(order, start, end, joint_body, inv_mass, np.zeros(nb, np.int64), chunk_colour)
    chunks = chunk_count(start, end)
    assert 1 <= colours <= MAX_COLOURS
    assert set(chunk_colour[start : start + chunks]) == set(range(colours))
    bodies = [_chunk_bodies(order, start, end, joint_body, inv_mass, c) for c in range(chunks)]
    for a in range(chunks):
        for b in range(a + 1, chunks):
            if chunk_colour[start + a] == chunk_colour[start + b]:
                assert not bodies[a] & bodies[b], (a, b)


def test_a_hub_body_in_every_chunk_asks_for_the_plain_pass():
    """One body in a joint of every chunk: no two chunks may share a colour, and past ``MAX_COLOURS`` chunks the
    colouring gives up (0: the caller runs the plain pass) instead of overflowing its bit masks."""
    nj = JOINT_CHUNK * (MAX_COLOURS + 1)
    joint_body = np.stack([np.zeros(nj, np.int64), np.arange(1, nj + 1)], axis=1)
    inv_mass = np.ones(nj + 1)
    chunk_colour = np.zeros(nj, np.int64)
    assert colour_chunks(np.arange(nj), 0, nj, joint_body, inv_mass, np.zeros(nj + 1, np.int64), chunk_colour) == 0
    inv_mass[0] = 0.0  # a passive hub adds nothing to anyone's accumulators: it ties no chunks
    assert colour_chunks(np.arange(nj), 0, nj, joint_body, inv_mass, np.zeros(nj + 1, np.int64), chunk_colour) == 1


_TWO_THREADS = """
import sys

import numba
import numpy as np

sys.path.insert(0, sys.argv[1])
from scenes import glued_wall
from contact_lab.core.rigid.frame_loop import simulate
from contact_lab.core.rigid.settings import RigidSettings

names = ("body_pos", "body_quat", "body_vel", "body_omega", "joint_error_linear", "joint_impulse", "joint_broken_frame")
for model in (glued_wall(16, 8, drop=True), glued_wall(16, 8, lift=2.0, spin=3.0)):
    bakes = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        print("threads", numba.get_num_threads())
        bakes.append(simulate(model, frame_count=9, fps=24, settings=RigidSettings(substeps=10, iterations=10)))
    one, two = bakes
    print("joints", model.joint_count, "broken", int((one.joint_broken_frame >= 0).sum()), "contacts",
          int(one.contact_count.max()), "impulse", float(one.joint_impulse.max()))
    print("differ", [name for name in names if not np.array_equal(getattr(one, name), getattr(two, name))])
"""


def test_a_glued_wall_bakes_bit_for_bit_alike_on_one_thread_and_on_two():
    """A 16 × 8 glued wall (442 FIXED joints: four chunks, coloured), a heavy box dropped on one corner so joints
    break (the joints swept inside the contact solver), and the same wall spinning in the air (no contact: the
    joints' own sweeps): the bake on two threads equals the bake on one, every pose, velocity and joint statistic.
    In a process of its own with two numba threads (the test run may have one)."""
    run = subprocess.run(
        [sys.executable, "-c", _TWO_THREADS, str(Path(__file__).resolve().parents[1])],
        env={**os.environ, "NUMBA_NUM_THREADS": "2"}, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    assert lines[0::4] == ["threads 1", "threads 1"] and lines[1::4] == ["threads 2", "threads 2"]
    dropped, spinning = lines[2].split(), lines[6].split()
    assert int(dropped[1]) > 2 * JOINT_CHUNK
    assert int(dropped[3]) > 0  # the drop breaks joints: the break test sees the coloured impulses
    assert int(spinning[5]) == 0 and float(spinning[7]) > 1e-3  # in the air, its joints loaded
    assert lines[3] == lines[7] == "differ []"


def _wall_step_rows(model):
    """A PGS solver on ``model`` with this step's joint rows built at the start state (its ``joints`` holds them)."""
    solver = make_solver(model, "PGS", iterations=10, tolerance=1e-6)
    state, control = model.state(), model.control()
    contacts = model.contacts()
    solver.step(state, model.state(), control, contacts, 1.0 / 240.0)
    return solver


def test_the_coloured_joint_pass_is_the_plain_pass_over_its_chunks_in_colour_order():
    """One forward and one backward joint pass on the wall's rows, coloured (the kernel, on every thread), against a
    serial emulation: the plain block pass over each chunk, colour by colour (backward: last colour first, each
    chunk back to front). Impulses and accumulators agree bit for bit."""
    model = glued_wall(16, 8)
    solver = _wall_step_rows(model)
    bundle = solver.joints.bundle
    joint_body, joint_passes, inv_mass, rows, lam = bundle[:5]
    nj, nb = model.joint_count, model.body_count
    order = np.arange(nj)
    chunk_colour = np.zeros(nj, np.int64)
    colours = colour_chunks(order, 0, nj, joint_body, inv_mass, np.zeros(nb, np.int64), chunk_colour)
    assert colours >= 2
    rng = np.random.default_rng(3)
    start_lam = lam + rng.normal(0.0, 0.1, lam.shape) * (rows[0] != 0)
    dv0, dw0 = rng.normal(0.0, 0.1, (nb, 3)), rng.normal(0.0, 0.1, (nb, 3))
    dv0[inv_mass == 0.0] = 0.0
    dw0[inv_mass == 0.0] = 0.0
    zero = np.zeros((nb, 3))
    for backward in (False, True):
        got_lam, got_dv, got_dw = start_lam.copy(), dv0.copy(), dw0.copy()
        joint_sweep._coloured_pass(colours, order, 0, nj, backward, joint_body, joint_passes, inv_mass, rows,
                                   got_lam, zero, zero, got_dv, got_dw, False, chunk_colour,
                                   np.zeros((2, nj)))  # fmt: skip
        want_lam, want_dv, want_dw = start_lam.copy(), dv0.copy(), dw0.copy()
        sequence = range(colours - 1, -1, -1) if backward else range(colours)
        for colour in sequence:
            for c in range(chunk_count(0, nj)):
                if chunk_colour[c] == colour:
                    first = c * JOINT_CHUNK
                    joint_sweep._blocks_pass(order, first, min(first + JOINT_CHUNK, nj), backward, joint_body,
                                             joint_passes, inv_mass, rows, want_lam, zero, zero, want_dv, want_dw,
                                             np.zeros(14), np.zeros(14), False)  # fmt: skip
        assert np.array_equal(got_lam, want_lam)
        assert np.array_equal(got_dv, want_dv) and np.array_equal(got_dw, want_dw)


def test_a_packed_block_holds_the_inverse_of_its_effective_mass():
    """Each glued joint's packed ``K^-1`` (Gauss–Jordan on its six rows) times ``K = J M^-1 J^T`` assembled in numpy
    from its packed rows and its bodies' masses and inertias, with the factors' regularization (each diagonal raised
    by 1e-10 of the largest), is the identity to 1e-12."""
    model = glued_wall(6, 4)
    solver = _wall_step_rows(model)
    rows = solver.joints.rows
    eq_count, pack = rows[10], rows[13]
    inv_inertia = solver._inv_inertia_world
    checked = 0
    for j in range(model.joint_count):
        n = eq_count[j]
        assert n == PACK_ROWS
        b0, b1 = model.joint_body[j]
        J = pack[j, PACK_J : PACK_J + 9 * n].reshape(n, 3, 3)  # [lin, ang0, ang1] per row
        K = np.zeros((n, n))
        for side, b in ((0, b0), (1, b1)):
            if b < 0 or model.body_inv_mass[b] == 0.0:
                continue
            lin = J[:, 0] * (1.0 if side else -1.0)
            ang = J[:, 2] if side else -J[:, 1]
            K += model.body_inv_mass[b] * lin @ lin.T + ang @ inv_inertia[b] @ ang.T
        K += (1e-10 * K.diagonal().max() + 1e-300) * np.eye(n)
        inverse = pack[j, PACK_KINV : PACK_KINV + PACK_ROWS * n].reshape(n, PACK_ROWS)[:, :n]
        assert np.abs(inverse @ K - np.eye(n)).max() < 1e-12
        ij = pack[j, PACK_IJ : PACK_IJ + 6 * n].reshape(n, 2, 3)
        assert np.allclose(ij[:, 1], J[:, 2] @ inv_inertia[b1].T, rtol=1e-12, atol=1e-15)
        checked += 1
    assert checked == model.joint_count


def test_the_projection_reports_an_upper_bound_of_the_error_it_leaves():
    """A glued wall's pieces knocked off their joints by up to 2 mm, projected with 2 passes (the passes run out
    before the tolerance): the linear error the projection reports, its last pass's, lies between the largest error
    measured afterwards from the poses and the one it started from; the angular one (the moves turn the pieces) is
    above the one measured afterwards."""
    model = glued_wall(12, 8)
    solver = _wall_step_rows(model)
    joints = solver.joints
    rng = np.random.default_rng(5)
    state = model.state()
    moved = model.body_inv_mass > 0.0
    state.body_pos[moved] += rng.uniform(-2e-3, 2e-3, (int(moved.sum()), 3))
    before = np.zeros(2)
    joint_errors(joints.model_arrays, joints.broken, state.body_pos, state.body_quat, before)
    reported = np.zeros(2)
    passes = project_joints(joints.model_arrays, joints.rows, model.body_inv_mass, joints.broken, 2, 1e-7, 0.95, 1e-5,
                            0.2, 0.5, 1.0 / 240.0, state.body_pos, state.body_quat, state.body_vel, state.body_omega,
                            reported)  # fmt: skip
    after = np.zeros(2)
    joint_errors(joints.model_arrays, joints.broken, state.body_pos, state.body_quat, after)
    assert passes == 2
    assert after[0] <= reported[0] <= before[0]
    assert after[0] < 0.5 * before[0]  # the passes did correct
    assert after[1] <= reported[1]  # the moves turn the pieces, and the last pass saw more of that than is left
