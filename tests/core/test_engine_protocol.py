"""The three engines look alike from outside, and each result records exactly what its frame loop computed.

Every engine package exposes a builder that finalizes a model, ``iter_simulate`` (a generator yielding
``(frame, result)`` after every frame), ``simulate`` (runs it out) and a result type with per-frame
statistics. The soft and IPC results are checked against their frame loops' own states, bit for bit.
"""

import numpy as np
import pytest
from contact_lab.core import ipc, rigid, soft
from contact_lab.core.enums import ShapeType
from contact_lab.core.errors import DivergenceError
from contact_lab.core.fem.primitives import box_tet_mesh
from contact_lab.core.soft.frame_loop import check_finite


def _dropped_cube(gap):
    b = soft.SoftWorldBuilder()
    V, T = box_tet_mesh((2, 2, 2), np.array([-0.05, -0.05, gap]), np.array([0.05, 0.05, 0.1 + gap]))
    b.add_soft_body(V, T, youngs_modulus=1e5, density=800)
    b.add_collider(ShapeType.PLANE, friction=0.5)
    return b.finalize()


@pytest.mark.parametrize(
    ("engine", "builder", "result"),
    [
        (rigid, rigid.ModelBuilder, rigid.Trajectory),
        (soft, soft.SoftWorldBuilder, soft.SoftTrajectory),
        (ipc, soft.SoftWorldBuilder, ipc.IpcTrajectory),
    ],
)
def test_every_engine_has_the_same_outside_shape(engine, builder, result):
    """Builder with finalize, iter_simulate and simulate, and a result that counts its frames."""
    assert callable(builder.finalize)
    assert callable(engine.iter_simulate) and callable(engine.simulate)
    record = result(3, 2)
    assert record.frame_count == 3 and record.frames_done == 0


def test_soft_trajectory_records_the_frame_loop_bit_for_bit():
    """soft.iter_simulate's trajectory equals the states and step statistics of iter_simulate_soft."""
    world = _dropped_cube(gap=0.004)
    settings = soft.SoftSettings(substeps=2)
    expected = [
        (state.x.copy(), state.stats)
        for _, state in soft.iter_simulate_soft(world, frame_count=7, fps=30, settings=settings)
    ]
    seen = []
    for frame, traj in soft.iter_simulate(world, frame_count=7, fps=30, settings=settings):
        assert traj.frames_done == frame + 1
        seen.append(frame)
    assert seen == list(range(7))
    for f, (x, stats) in enumerate(expected):
        assert np.array_equal(traj.node_pos[f], x)
        if f > 0:
            assert traj.newton_iterations[f] == stats.newton_iterations
            assert traj.pcg_iterations[f] == stats.pcg_iterations
            assert traj.contact_count[f] == stats.contact_count
            assert traj.max_penetration[f] == stats.max_penetration
            assert traj.converged[f] == stats.converged
    assert traj.contact_count[-1] > 0  # the cube landed: the statistics are not trivially zero
    assert np.array_equal(soft.simulate(world, frame_count=7, fps=30, settings=settings).node_pos, traj.node_pos)


def test_ipc_trajectory_records_the_frame_loop_bit_for_bit():
    """ipc.iter_simulate's trajectory equals the states, statistics and checker counts of iter_simulate_ipc."""
    world = ipc.IpcWorld(_dropped_cube(gap=0.002))
    settings = ipc.IpcSettings(check_intersections=True)
    expected = [
        (s.x.copy(), s.stats) for _, s in ipc.iter_simulate_ipc(world, frame_count=6, fps=30, settings=settings)
    ]
    traj = ipc.simulate(world, frame_count=6, fps=30, settings=settings)
    assert traj.frames_done == 6
    for f, (x, stats) in enumerate(expected):
        assert np.array_equal(traj.node_pos[f], x)
        assert traj.intersections[f] == stats.intersections and traj.inverted[f] == stats.inverted
        if f > 0:
            assert traj.newton_iterations[f] == stats.newton_iterations
            assert traj.contact_count[f] == stats.contact_count
            assert traj.friction_count[f] == stats.friction_count
            assert traj.min_distance[f] == stats.min_distance
            assert traj.kappa[f] == stats.kappa
    assert np.isfinite(traj.min_distance[1:]).any()  # the cube came within dhat of the plane


def test_divergence_names_the_body_whose_node_stopped_being_finite():
    """A non-finite node of the second of two bodies names that body, in a soft and in an IPC state.

    Regression: the IPC frame loop looked up bodies by flat (node, axis) indices, so it named the wrong body
    or failed with an IndexError; both loops now share ``check_finite``.
    """
    b = soft.SoftWorldBuilder()
    for k, name in enumerate(("left", "right")):
        V, T = box_tet_mesh((2, 2, 2), np.array([0.3 * k, 0.0, 0.01]), np.array([0.3 * k + 0.1, 0.1, 0.11]))
        b.add_soft_body(V, T, name=name)
    world = b.finalize()
    for state in (world.state(), ipc.IpcWorld(world).state()):
        last = int(world.body_node_start[2]) - 1  # the right cube's last node: its flat z index is far past the nodes
        state.x[last, 2] = np.nan
        with pytest.raises(DivergenceError) as info:
            check_finite(world, state, 3)
        assert info.value.frame == 3 and info.value.body_label == ["right"] and info.value.body_index == [1]
