"""Frame loop of the IPC engine: substeps, pin and kinematic-collider tracks, the admissibility checks.

:func:`iter_simulate` has the shape of every engine's frame loop: it yields ``(frame, trajectory)`` after
every frame (an :class:`IpcTrajectory` filled in place). :func:`iter_simulate_ipc` is the loop itself and
mirrors :func:`contact_lab.core.soft.frame_loop.iter_simulate_soft` (same state type, same pin tracks), so the
Blender bake records both engines the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator

import numpy as np

from ..errors import IpcInputError
from ..fem.stepping import check_finite, start_run, substep_targets
from ..fem.world import SoftWorldState
from ..stop import StopRequest, check_stop
from .intersection import check_frame
from .ipc_solver import IpcSettings, IpcSolver, IpcStats
from .ipc_world import IpcWorld
from .kernels import barrier_energy
from .trajectory import IpcTrajectory

__all__ = [
    "IpcInputError",
    "IpcSettings",
    "IpcStats",
    "IpcTrajectory",
    "check_state",
    "iter_simulate",
    "iter_simulate_ipc",
    "simulate",
]


MAX_STEP_SPLITS = 10
"""A substep is halved at most this many times (1024 steps) to make every step's straight-line motion free."""


def check_state(world: IpcWorld, x: np.ndarray):
    """The independent exact check of one configuration (``intersection.check_frame``) on the whole surface."""
    sw = world.soft
    return check_frame(
        world.surface_positions(x),
        world.faces,
        tet_positions=x[: sw.node_count],
        tets=sw.tet_indices[: sw.soft_tet_count],
        rest_tet_positions=sw.node_rest,
        groups=world.surface_group,
    )


def _kinematic_targets(world: IpcWorld, positions, orientations, out) -> None:
    for k in range(world.collider_count):
        s = world.collider_node_start[k]
        if s >= 0:
            v = world.collider_vertices(k, positions[k], orientations[k])
            out[s : s + len(v)] = v


def iter_simulate_ipc(
    world: IpcWorld,
    *,
    frame_count: int,
    fps: float = 24.0,
    settings: IpcSettings | None = None,
    pin_tracks: dict | None = None,
    collider_tracks: dict | None = None,
    state: SoftWorldState | None = None,
    on_step: Callable[[np.ndarray, np.ndarray], None] | None = None,
    stop: StopRequest | None = None,
) -> Iterator[tuple[int, SoftWorldState]]:
    """Simulate ``frame_count - 1`` frames after the initial one; yield ``(frame, state)`` per frame.

    Args:
        world: the scene.
        frame_count: output frames including the initial state (frame 0, yielded first).
        fps: frame rate [1/s]; the step is ``1 / (fps * settings.substeps)`` [s].
        settings: IPC settings.
        pin_tracks: ``{soft body: world matrices (>= frame_count, 4, 4)}`` as in ``iter_simulate_soft``.
        collider_tracks: ``{IPC collider index: (positions (>= frame_count, 3) [m], quaternions wxyz
            (>= frame_count, 4))}`` for KINEMATIC colliders (slerp between frames); see
            ``IpcWorld.collider_names`` / ``collider_soft_index`` for the indices.
        state: start state (default ``world.state()``).
        on_step: called as ``on_step(x_before, x_after)`` (unknowns (N, 3) [m]) after every solver step, the
            halved ones included: the straight lines between them are the motion (audits, motion blur).
        stop: checked before every solver step (halved ones included) and Newton iteration; once set, the loop
            raises :class:`~contact_lab.core.stop.SimulationStoppedError` (the state is then mid-step).

    The state's ``x``/``v`` hold all unknowns (soft-world nodes first, then kinematic collider vertices);
    ``state.stats`` is the :class:`IpcStats` of the frame's last step, with the frame's totals over all its
    solves (``steps``, ``splits``, ``solves``, ``newton_total``, ``newton_max``, ``pcg_total``; ``converged``:
    every accepted step of the frame converged; ``contact_count``: the most contacts of an accepted step) and the
    checker's counts when ``settings.check_intersections``. Raises :class:`IpcInputError` if the start is not
    intersection-free with a positive gap, :class:`DivergenceError` if positions stop being finite.
    """
    settings = settings or IpcSettings()
    state = state or world.state()
    pos, quat, pins = start_run(
        world, world.soft, state, frame_count=frame_count, fps=fps, substeps=settings.substeps,
        pin_tracks=pin_tracks, collider_tracks=collider_tracks,
    )  # fmt: skip
    solver = IpcSolver(world, settings)
    solver.stop = stop
    K = world.collider_count
    _kinematic_targets(world, pos[0], quat[0], state.x)
    _check_start(world, solver, state.x)
    state.stats = IpcStats()
    if settings.check_intersections:
        _record_check(world, state)
    yield 0, state
    target = state.x.copy()
    for frame in range(frame_count - 1):
        splits = steps = newton_total = newton_max = pcg_total = contact_max = 0
        converged = True
        for sub in range(settings.substeps):
            # the substep [sub, sub + 1] / substeps of the frame, halved while a step's motion is not free
            pending = [(sub / settings.substeps, (sub + 1) / settings.substeps, 0)]
            while pending:
                check_stop(stop)
                a0, a1, depth = pending.pop()
                saved = (state.x.copy(), state.v.copy(), state.collider_position, state.collider_orientation)
                end_pos, end_quat = substep_targets(pos, quat, pins, frame, a1, target)
                end_quat = end_quat.reshape(K, 4)
                _kinematic_targets(world, end_pos, end_quat, target)
                solver.set_collider_axes(state.collider_orientation)
                stats = solver.step(state, (a1 - a0) / fps, target)
                newton_total += stats.newton_iterations
                newton_max = max(newton_max, stats.newton_iterations)
                pcg_total += stats.pcg_iterations
                if depth < MAX_STEP_SPLITS and not solver.motion_is_free(saved[0], state.x):
                    state.x[:], state.v[:] = saved[0], saved[1]
                    state.collider_position, state.collider_orientation = saved[2], saved[3]
                    middle = 0.5 * (a0 + a1)
                    pending += [(middle, a1, depth + 1), (a0, middle, depth + 1)]  # the first half is popped first
                    splits += 1
                    continue
                if on_step is not None:
                    on_step(saved[0], state.x.copy())
                state.stats = stats
                converged = converged and stats.converged  # a step thrown away by a halving does not count
                contact_max = max(contact_max, stats.contact_count)
                state.collider_position = end_pos
                state.collider_orientation = end_quat
                steps += 1
                check_finite(world.soft, state, frame + 1)
        st = state.stats
        st.splits, st.steps, st.solves = splits, steps, steps + splits
        st.newton_total, st.newton_max, st.pcg_total = newton_total, newton_max, pcg_total
        st.converged, st.contact_count = converged, contact_max
        if settings.check_intersections:
            _record_check(world, state)
        yield frame + 1, state


def _record_check(world: IpcWorld, state: SoftWorldState) -> None:
    report = check_state(world, state.x)
    state.stats.intersections = len(report.intersecting_pairs)
    state.stats.inverted = len(report.inverted_tets)


def _check_start(world: IpcWorld, solver: IpcSolver, x: np.ndarray) -> None:
    """Reject a start state that IPC cannot handle: touching or intersecting surfaces (d = 0)."""
    xs = world.surface_positions(x)
    with solver.thread_policy():
        _, _, quads, kinds = solver._candidates(xs, xs)
    _, dmin = barrier_energy(xs, quads, kinds, world.surface_rest, solver.dhat2)
    report = check_state(world, x)
    if dmin <= 0.0 or not report.ok:
        pairs = report.intersecting_pairs
        groups = sorted({int(world.surface_group[v]) for pair in pairs for t in pair for v in world.faces[t]})
        names = [world.soft.body_names[g] for g in groups if 0 <= g < world.soft.body_count]
        if any(g < 0 or g >= world.soft.body_count for g in groups):
            names.append("a collider or active box")
        what = "surfaces intersect" if not report.ok else f"surfaces touch (distance {np.sqrt(max(dmin, 0.0)):.3g} m)"
        inverted = f", {len(report.inverted_tets)} inverted tets" if len(report.inverted_tets) else ""
        raise IpcInputError(
            f"IPC needs a start without contact or intersection: {what}{inverted}"
            + (f" (involving {', '.join(names)})" if names else "")
        )


def iter_simulate(world: IpcWorld, *, frame_count: int, **kwargs) -> Generator[tuple[int, IpcTrajectory], None, None]:
    """:func:`iter_simulate_ipc` recorded frame by frame: yield ``(frame, trajectory)`` after every frame.

    Takes the arguments of :func:`iter_simulate_ipc`. The trajectory is filled in place; after the last
    yield it is complete (``trajectory.state`` is the final state).
    """
    trajectory = None
    for frame, state in iter_simulate_ipc(world, frame_count=frame_count, **kwargs):
        if trajectory is None:  # every unknown: the soft world's nodes and the kinematic collider vertices
            trajectory = IpcTrajectory(frame_count, state.x.shape[0])
        trajectory.record(frame, state)
        yield frame, trajectory


def simulate(world: IpcWorld, **kwargs) -> IpcTrajectory:
    """Run :func:`iter_simulate` to the end and return the complete trajectory."""
    result = None
    for _, result in iter_simulate(world, **kwargs):  # noqa: B007 (the last yield is the result)
        pass
    return result
