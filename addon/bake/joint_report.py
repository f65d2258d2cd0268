"""The joints' part of a rigid bake's report: what was baked (by type) and what the joints did (which broke, in
which frame, the largest joint error and impulse). Read from the gathered :class:`~...core.rigid.joints.JointSpec`
records and the trajectory's joint statistics (:class:`~...core.rigid.trajectory.Trajectory`); JSON-compatible.

Frames in the report are Blender's frame numbers (the trajectory counts output frames from 0 at the start frame).
"""

from __future__ import annotations

import numpy as np

JOINT_TYPE_ORDER = ("FIXED", "POINT", "HINGE", "SLIDER", "PISTON", "GENERIC", "GENERIC_SPRING", "MOTOR")
"""Blender's Rigid Body Constraint types, in the order of its Type menu (reports and panels list them so)."""


def type_counts(kinds) -> dict[str, int]:
    """``{type name: count}`` of ``kinds`` (type names or enums with ``.name``), in :data:`JOINT_TYPE_ORDER`,
    types without a joint left out."""
    names = [getattr(k, "name", str(k)) for k in kinds]
    return {t: names.count(t) for t in JOINT_TYPE_ORDER if t in names}


def joint_report(joints, trajectory, frames: np.ndarray, done: int) -> dict:
    """The report's ``joints`` field.

    Args:
        joints: the bake's JointSpec records, in the model's joint order (length J).
        trajectory: the Trajectory (``joint_broken_frame`` shape (J,), per-frame ``joint_error_linear`` [m],
            ``joint_error_angular`` [rad], ``joint_impulse`` [N·s | N·m·s]), or None before the simulation ran.
        frames: Blender frame of each output frame, shape (F,). done: output frames simulated so far.

    Returns:
        ``{"count", "by_type", "broken": [{"name", "frame"}] (by frame, then name), "max_error_linear",
        "max_error_angular", "max_impulse", "max_error_frame"}``; the maxima are over the simulated frames after the
        first (0 before any).
    """
    out: dict = {"count": len(joints), "by_type": type_counts(j.kind for j in joints), "broken": []}
    out.update(max_error_linear=0.0, max_error_angular=0.0, max_impulse=0.0, max_error_frame=None)
    if trajectory is None or done <= 1 or not len(joints):
        return out
    broken_at = np.asarray(trajectory.joint_broken_frame)
    broken = [(int(frames[f]), joints[j].name) for j, f in enumerate(broken_at) if 0 <= f < done]
    out["broken"] = [{"name": name, "frame": frame} for frame, name in sorted(broken)]
    error = np.asarray(trajectory.joint_error_linear[1:done])
    out["max_error_linear"] = float(error.max())
    out["max_error_angular"] = float(np.max(trajectory.joint_error_angular[1:done]))
    out["max_impulse"] = float(np.max(trajectory.joint_impulse[1:done]))
    out["max_error_frame"] = int(frames[1 + int(np.argmax(error))])
    return out


def per_frame_joint_stats(trajectory, done: int) -> dict:
    """Per-frame joint statistics (lists) for the detailed report: ``joint_error_linear`` [m],
    ``joint_error_angular`` [rad], ``joint_impulse`` [N·s | N·m·s], each of length ``done``."""
    return {
        "joint_error_linear": trajectory.joint_error_linear[:done].tolist(),
        "joint_error_angular": trajectory.joint_error_angular[:done].tolist(),
        "joint_impulse": trajectory.joint_impulse[:done].tolist(),
    }
