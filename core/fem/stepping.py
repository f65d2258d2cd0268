"""What the frame loops of the soft and the IPC engines share: a run's set-up (arguments checked, colliders at
their first pose, pins on target), the pin and kinematic-collider targets of every substep and the divergence
check.

Poses per frame: positions (F, C, 3) [m] and unit quaternions wxyz (F, C, 4); pins: per soft body the pinned
node indices and their positions per frame (F, P_b, 3) [m].
"""

from __future__ import annotations

import numpy as np

from ..errors import DivergenceError
from ..math.quat import quat_slerp
from .world import ColliderKind, SoftWorld


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
