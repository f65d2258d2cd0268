"""Frame loop of the soft engine: substeps, pin and kinematic-collider tracks, divergence check.

:func:`iter_simulate` has the shape of every engine's frame loop (:func:`contact_lab.core.rigid.iter_simulate`
for rigid scenes): it yields ``(frame, trajectory)`` after every frame, the :class:`SoftTrajectory` filled in
place; the Blender bake and the headless tools call it. :func:`iter_simulate_soft` is the loop itself and
yields the live :class:`SoftWorldState` (for callers that inspect the state, e.g. the tests).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

from ..fem.stepping import check_finite, start_run, substep_targets
from ..fem.trajectory import SoftTrajectory
from ..fem.world import SoftWorld, SoftWorldState
from ..stop import StopRequest, check_stop
from .world_solver import SoftSettings, SoftWorldSolver, SoftWorldStats, rotations

__all__ = [
    "SoftSettings",
    "SoftTrajectory",
    "SoftWorldStats",
    "iter_simulate",
    "iter_simulate_soft",
    "simulate",
]


def iter_simulate_soft(
    world: SoftWorld,
    *,
    frame_count: int,
    fps: float = 24.0,
    settings: SoftSettings | None = None,
    pin_tracks: dict | None = None,
    collider_tracks: dict | None = None,
    state: SoftWorldState | None = None,
    stop: StopRequest | None = None,
) -> Iterator[tuple[int, SoftWorldState]]:
    """Simulate ``frame_count - 1`` frames after the initial one; yield ``(frame, state)`` per frame.

    Args:
        world: the scene.
        frame_count: output frames including the initial state (frame 0, yielded first).
        fps: output frame rate [1/s]; the step is ``1 / (fps * settings.substeps)`` [s].
        settings: solver settings.
        pin_tracks: ``{body: world matrices (>= frame_count, 4, 4)}``; that body's pinned nodes follow
            ``T(t) T(0)^-1`` (linear between frames). Bodies without a track keep their pins still.
        collider_tracks: ``{collider: (positions (>= frame_count, 3) [m], quaternions wxyz (>= frame_count,
            4))}`` for KINEMATIC colliders (slerp between frames).
        state: start state (default: ``world.state()``).
        stop: checked before every substep and Newton iteration; once set, the loop raises
            :class:`~contact_lab.core.stop.SimulationStoppedError` (the state is then mid-step).

    Yields the same state object every frame (copy what you keep). ``solver.stats`` of the last step
    is available as ``state.stats``, its ``converged`` set to whether every step of the frame converged,
    ``contact_count`` to the most contacts of one step of the frame and ``newton_max`` to the most Newton
    iterations of one step of the frame.
    Raises :class:`~contact_lab.core.errors.DivergenceError` when positions stop being finite.
    """
    settings = settings or SoftSettings()
    state = state or world.state()
    pos, quat, pins = start_run(
        world, world, state, frame_count=frame_count, fps=fps, substeps=settings.substeps,
        pin_tracks=pin_tracks, collider_tracks=collider_tracks,
    )  # fmt: skip
    solver = SoftWorldSolver(world, settings)
    solver.stop = stop
    C = world.collider_count
    state.stats = SoftWorldStats()
    yield 0, state
    dt = 1.0 / (fps * settings.substeps)
    pin_targets = state.x.copy()
    rot_start = rotations(quat[0])
    for frame in range(frame_count - 1):
        converged, newton_max, contact_max = True, 0, 0
        for sub in range(settings.substeps):
            check_stop(stop)
            alpha = (sub + 1) / settings.substeps
            end_pos, end_quat = substep_targets(pos, quat, pins, frame, alpha, pin_targets)
            rot_end = rotations(end_quat).reshape(C, 3, 3)
            solver.set_collider_poses(state.collider_position, rot_start, end_pos, rot_end)
            state.stats = solver.step(state, state, dt, pin_targets)
            converged = converged and state.stats.converged
            newton_max = max(newton_max, state.stats.newton_iterations)
            contact_max = max(contact_max, state.stats.contact_count)
            state.collider_position = end_pos
            state.collider_orientation = end_quat.reshape(C, 4)
            rot_start = rot_end
            check_finite(world, state, frame + 1)
        # the frame's verdicts and maxima, not only its last step's (the statistics every engine records alike)
        state.stats.converged, state.stats.newton_max, state.stats.contact_count = converged, newton_max, contact_max
        yield frame + 1, state


def iter_simulate(world: SoftWorld, *, frame_count: int, **kwargs) -> Generator[tuple[int, SoftTrajectory], None, None]:
    """:func:`iter_simulate_soft` recorded frame by frame: yield ``(frame, trajectory)`` after every frame.

    Takes the arguments of :func:`iter_simulate_soft`. The trajectory is filled in place; after the last
    yield it is complete (``trajectory.state`` is the final state).
    """
    trajectory = SoftTrajectory(frame_count, world.node_count)
    for frame, state in iter_simulate_soft(world, frame_count=frame_count, **kwargs):
        trajectory.record(frame, state)
        yield frame, trajectory


def simulate(world: SoftWorld, **kwargs) -> SoftTrajectory:
    """Run :func:`iter_simulate` to the end and return the complete trajectory."""
    result = None
    for _, result in iter_simulate(world, **kwargs):  # noqa: B007 (the last yield is the result)
        pass
    return result
