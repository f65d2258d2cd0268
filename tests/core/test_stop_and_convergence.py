"""A stop request reaches inside a frame of every engine, and a frame's ``converged`` covers all its steps.

The slow frame is the issue's: two 5 cm IPC cubes thrown at each other at 1e6 m/s, whose first frame halves its step
up to 1024 times with a Newton solve per half (minutes). A thread sets the stop a second into that frame; the loop
must raise :class:`SimulationStoppedError` within a few seconds, without yielding the frame. The references are the
clock and the frame counter: the same frame yields nothing within that second (it is really slow), and a run without
a stop yields every frame.
"""

import threading
import time

import numpy as np
import pytest
from contact_lab.core import ModelBuilder
from contact_lab.core import iter_simulate as iter_simulate_rigid
from contact_lab.core.fem.primitives import box_tet_mesh
from contact_lab.core.fem.world import SoftWorldBuilder
from contact_lab.core.ipc.frame_loop import iter_simulate_ipc
from contact_lab.core.ipc.ipc_solver import IpcSettings, IpcSolver
from contact_lab.core.ipc.ipc_world import IpcWorld
from contact_lab.core.soft.frame_loop import iter_simulate_soft
from contact_lab.core.soft.world_solver import SoftSettings, SoftWorldSolver
from contact_lab.core.stop import SimulationStoppedError, StopRequest

SIZE = 0.05
"""Cube edge [m]."""


def _cubes(gravity=(0.0, 0.0, 0.0), youngs_modulus=1e6):
    """Two soft cubes (2 cells a side) 30 cm apart along x; the soft world's builder."""
    b = SoftWorldBuilder(gravity=gravity)
    for x in (-0.15, 0.15):
        lo = np.array([x - SIZE / 2, -SIZE / 2, -SIZE / 2])
        V, T = box_tet_mesh((2, 2, 2), lo, lo + SIZE)
        b.add_soft_body(V, T, youngs_modulus=youngs_modulus, poisson_ratio=0.45, density=1100, friction=0.0)
    return b


def _thrown(world, speed):
    start = world.state()
    s = world.soft.body_node_start
    start.v[s[0] : s[1], 0], start.v[s[1] : s[2], 0] = speed, -speed
    return start


def test_a_stop_from_another_thread_ends_a_slow_ipc_frame_within_seconds():
    world = IpcWorld(_cubes().finalize())
    settings = IpcSettings(dhat=1e-3, substeps=2)
    # warm the kernels (and check the ordinary throw runs through: every frame yielded)
    frames = [f for f, _ in iter_simulate_ipc(world, frame_count=3, settings=settings, state=_thrown(world, 5.0))]
    assert frames == [0, 1, 2]

    stop = StopRequest()
    loop = iter_simulate_ipc(world, frame_count=3, settings=settings, state=_thrown(world, 1e6), stop=stop)
    assert next(loop)[0] == 0
    yielded, stopped_at = [], []

    def stop_later():
        time.sleep(1.0)
        assert not yielded  # frame 1 has run a second and is not done: a slow frame (the reference)
        stopped_at.append(time.perf_counter())
        stop.set("test")

    thread = threading.Thread(target=stop_later)
    thread.start()
    with pytest.raises(SimulationStoppedError, match="test"):
        for frame, _ in loop:
            yielded.append(frame)
    returned = time.perf_counter()
    thread.join()
    assert stopped_at and not yielded
    assert returned - stopped_at[0] < 3.0


def test_a_stop_between_steps_ends_the_ipc_frame_before_its_next_step():
    """Set by the first solver step's callback: the frame (4 substeps) ends there, after exactly one step."""
    world = IpcWorld(_cubes().finalize())
    stop = StopRequest()
    steps = []

    def on_step(x0, x1):
        steps.append(1)
        stop.set()

    loop = iter_simulate_ipc(world, frame_count=3, settings=IpcSettings(dhat=1e-3, substeps=4), on_step=on_step,
                             stop=stop)  # fmt: skip
    next(loop)
    with pytest.raises(SimulationStoppedError):
        next(loop)
    assert len(steps) == 1


def test_a_stop_reaches_the_soft_and_rigid_loops():
    """Set after frame 1 of 3: the next frame raises, frame 1 was the last one yielded (soft and rigid)."""
    world = _cubes(gravity=(0.0, 0.0, -9.81)).finalize()
    stop = StopRequest()
    loop = iter_simulate_soft(world, frame_count=4, settings=SoftSettings(substeps=2), stop=stop)
    assert [next(loop)[0], next(loop)[0]] == [0, 1]
    stop.set()
    with pytest.raises(SimulationStoppedError):
        next(loop)

    b = ModelBuilder()
    b.add_shape_sphere(b.add_body(pos=(0.0, 0.0, 1.0)), 0.5)
    stop = StopRequest()
    loop = iter_simulate_rigid(b.finalize(), frame_count=4, stop=stop)
    assert [next(loop)[0], next(loop)[0]] == [0, 1]
    stop.set()
    with pytest.raises(SimulationStoppedError):
        next(loop)


def test_an_ipc_frame_converged_only_when_every_step_did(monkeypatch):
    """One Newton iteration per step cannot converge a throw (the issue's case): every frame is marked; with the
    default cap every frame converges. Then the first of each frame's two steps is made to report no convergence
    (its last converges): the frame must still be marked (the last step alone used to decide)."""
    world = IpcWorld(_cubes(gravity=(0.0, 0.0, -9.81)).finalize())
    for cap, expected in ((1, False), (100, True)):
        settings = IpcSettings(dhat=1e-3, substeps=2, max_iterations=cap)
        loop = iter_simulate_ipc(world, frame_count=4, settings=settings, state=_thrown(world, 2.0))
        assert [state.stats.converged for f, state in loop if f > 0] == [expected] * 3, cap

    _first_step_of_each_frame_unconverged(monkeypatch, IpcSolver)
    loop = iter_simulate_ipc(world, frame_count=4, settings=IpcSettings(dhat=1e-3, substeps=2),
                             state=_thrown(world, 0.5))  # fmt: skip
    frames = [(state.stats.steps, state.stats.converged) for f, state in loop if f > 0]
    assert frames == [(2, False)] * 3  # two steps a frame (no halving: the cubes stay 20 cm apart)


def test_a_soft_frame_converged_only_when_every_substep_did(monkeypatch):
    world = _cubes(gravity=(0.0, 0.0, -9.81)).finalize()
    settings = SoftSettings(substeps=2)
    assert [state.stats.converged for f, state in iter_simulate_soft(world, frame_count=4, settings=settings)
            if f > 0] == [True] * 3  # fmt: skip
    _first_step_of_each_frame_unconverged(monkeypatch, SoftWorldSolver)
    assert [state.stats.converged for f, state in iter_simulate_soft(world, frame_count=4, settings=settings)
            if f > 0] == [False] * 3  # fmt: skip


def _first_step_of_each_frame_unconverged(monkeypatch, solver_class):
    """Every other solver step (the first of each frame at 2 substeps) reports that it did not converge."""
    real = solver_class.step
    calls = []

    def step(self, *args, **kwargs):
        stats = real(self, *args, **kwargs)
        calls.append(1)
        if len(calls) % 2 == 1:
            stats.converged = False
        return stats

    monkeypatch.setattr(solver_class, "step", step)
