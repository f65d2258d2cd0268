"""Frame loop of the soft engine: substeps, pin and kinematic-collider tracks, divergence check.

:func:`iter_simulate` has the shape of every engine's frame loop (:func:`contact_lab.core.rigid.iter_simulate`
for rigid scenes): it yields ``(frame, trajectory)`` after every frame, the :class:`SoftTrajectory` filled in
place; the Blender bake and the headless tools call it. :func:`iter_simulate_soft` is the loop itself and
yields the live :class:`SoftWorldState` (for callers that inspect the state, e.g. the tests).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import numpy as np

from ..errors import DivergenceError
from ..math.quat import quat_slerp
from ..stop import StopRequest, check_stop
from .trajectory import SoftTrajectory
from .world import ColliderKind, SoftWorld, SoftWorldState
from .world_solver import SoftSettings, SoftWorldSolver, SoftWorldStats, rotations

__all__ = [
    "SoftSettings",
    "SoftTrajectory",
    "SoftWorldStats",
    "iter_simulate",
    "iter_simulate_soft",
    "simulate",
    "simulate_soft",
]


def pin_frames(world: SoftWorld, pin_tracks, frame_count: int) -> dict[int, np.ndarray]:
    """Per soft body: pinned-node positions (frame_count, P_b, 3) [m] following ``T(t) T(0)^-1``."""
    out = {}
    for body, matrices in (pin_tracks or {}).items():
        m = np.asarray(matrices, dtype=float)
        if m.shape[0] < frame_count or m.shape[1:] != (4, 4):
            raise ValueError(f"pin track of {world.body_names[body]} must be (>= {frame_count}, 4, 4), got {m.shape}")
        s, e = int(world.body_node_start[body]), int(world.body_node_start[body + 1])
        nodes = s + np.flatnonzero(world.node_pinned[s:e])
        rel = m[:frame_count] @ np.linalg.inv(m[0])
        rest = world.node_rest[nodes]
        out[body] = (nodes, np.einsum("fij,pj->fpi", rel[:, :3, :3], rest) + rel[:, None, :3, 3])
    return out


def collider_frames(world, collider_tracks, frame_count: int) -> tuple[np.ndarray, np.ndarray]:
    """Every collider's pose per frame: ``(positions (F, C, 3) [m], unit quaternions wxyz (F, C, 4))``.

    ``world`` has ``collider_position``, ``collider_orientation``, ``collider_kind`` and ``collider_names``
    (a soft or an IPC world); ``collider_tracks`` maps KINEMATIC colliders to ``(positions (>= F, 3),
    quaternions (>= F, 4))``; the others keep their initial pose.
    """
    pos = np.repeat(world.collider_position[None], frame_count, axis=0)
    quat = np.repeat(world.collider_orientation[None], frame_count, axis=0)
    for c, (p, q) in (collider_tracks or {}).items():
        if world.collider_kind[c] != ColliderKind.KINEMATIC:
            raise ValueError(f"{world.collider_names[c]} has a track but is not KINEMATIC")
        p = np.asarray(p, dtype=float)
        q = np.asarray(q, dtype=float)
        if p.shape[0] < frame_count or q.shape[0] < frame_count:
            raise ValueError(f"the track of {world.collider_names[c]} is shorter than {frame_count} frames")
        pos[:, c] = p[:frame_count]
        quat[:, c] = q[:frame_count] / np.linalg.norm(q[:frame_count], axis=1, keepdims=True)
    return pos, quat


def start_run(world, soft_world: SoftWorld, state, *, frame_count, fps, substeps, pin_tracks, collider_tracks):
    """Check a run's arguments and put ``state`` at frame 0 (colliders at their first pose, pins on target).

    ``world`` owns the colliders (a soft or an IPC world), ``soft_world`` the pinned nodes. Returns the
    collider poses per frame and the pin targets: ``(positions (F, C, 3) [m], quaternions (F, C, 4), pins)``
    as :func:`collider_frames` and :func:`pin_frames` give them.
    """
    if frame_count < 1:
        raise ValueError("frame_count must be at least 1")
    if substeps < 1 or fps <= 0.0:
        raise ValueError("substeps must be >= 1 and fps > 0")
    pos, quat = collider_frames(world, collider_tracks, frame_count)
    pins = pin_frames(soft_world, pin_tracks, frame_count)
    state.collider_position = pos[0].copy()
    state.collider_orientation = quat[0].copy()
    for nodes, targets in pins.values():
        state.x[nodes] = targets[0]
    return pos, quat, pins


def substep_targets(pos, quat, pins, frame: int, alpha: float, out_targets) -> tuple[np.ndarray, np.ndarray]:
    """Targets at ``frame + alpha`` (0 < alpha <= 1): pinned nodes into ``out_targets`` (linear between
    frames); returns the colliders' ``(positions (C, 3) [m], quaternions)`` (linear and slerp; the
    quaternions as ``np.array`` of the C slerps)."""
    end_pos = (1.0 - alpha) * pos[frame] + alpha * pos[frame + 1]
    end_quat = np.array([quat_slerp(quat[frame, c], quat[frame + 1, c], alpha) for c in range(pos.shape[1])])
    for nodes, targets in pins.values():
        out_targets[nodes] = (1.0 - alpha) * targets[frame] + alpha * targets[frame + 1]
    return end_pos, end_quat


def check_finite(soft_world: SoftWorld, state, frame: int) -> None:
    """Raise :class:`DivergenceError` for ``frame`` naming the bodies with a non-finite node position.

    Checks every unknown of ``state`` (positions and velocities); names the soft bodies (or "dynamic box")
    that own the first ``soft_world.node_count`` unknowns with a non-finite position.
    """
    if np.isfinite(state.x).all() and np.isfinite(state.v).all():
        return
    bad_nodes = np.flatnonzero(~np.isfinite(state.x[: soft_world.node_count]).all(axis=1))
    bad = sorted({int(soft_world.node_body[i]) for i in bad_nodes})
    raise DivergenceError(frame, bad, [soft_world.body_names[b] if b >= 0 else "dynamic box" for b in bad])


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
    is available as ``state.stats``, its ``converged`` set to whether every step of the frame converged.
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
        converged = True
        for sub in range(settings.substeps):
            check_stop(stop)
            alpha = (sub + 1) / settings.substeps
            end_pos, end_quat = substep_targets(pos, quat, pins, frame, alpha, pin_targets)
            rot_end = rotations(end_quat).reshape(C, 3, 3)
            solver.set_collider_poses(state.collider_position, rot_start, end_pos, rot_end)
            state.stats = solver.step(state, state, dt, pin_targets)
            converged = converged and state.stats.converged
            state.collider_position = end_pos
            state.collider_orientation = end_quat.reshape(C, 4)
            rot_start = rot_end
            check_finite(world, state, frame + 1)
        state.stats.converged = converged  # the frame's verdict, not only its last step's
        yield frame + 1, state


def simulate_soft(world: SoftWorld, **kwargs) -> list[np.ndarray]:
    """Run :func:`iter_simulate_soft` to the end; return the node positions of every frame."""
    return [state.x.copy() for _, state in iter_simulate_soft(world, **kwargs)]


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
