"""Joints between rigid bodies: one record per Blender Rigid Body Constraint (the builder's input).

A minimal stand-in with the agreed :class:`JointKind` and :class:`JointSpec` only; the solver side of joints
lives beside it.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass


class JointKind(enum.IntEnum):
    """Blender's constraint types (``RigidBodyConstraint.type``)."""

    FIXED = 0
    POINT = 1
    HINGE = 2
    SLIDER = 3
    PISTON = 4
    GENERIC = 5
    GENERIC_SPRING = 6
    MOTOR = 7


@dataclass(frozen=True)
class JointSpec:
    """One Blender Rigid Body Constraint, in the core's terms (field names as Blender's RigidBodyConstraint)."""

    kind: JointKind
    body0: int  # Blender's object1; a body index of the ModelBuilder
    body1: int  # Blender's object2; -1: the world (a passive or missing side is the world)
    position: tuple[float, float, float]  # the constraint object's world location at the start [m]
    rotation: tuple[float, float, float, float]  # its world rotation at the start, quaternion (w, x, y, z)
    use_limit_lin: tuple[bool, bool, bool] = (False, False, False)  # x, y, z of the constraint's frame
    limit_lin_lower: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [m]
    limit_lin_upper: tuple[float, float, float] = (0.0, 0.0, 0.0)
    use_limit_ang: tuple[bool, bool, bool] = (False, False, False)
    limit_ang_lower: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [rad]
    limit_ang_upper: tuple[float, float, float] = (0.0, 0.0, 0.0)
    spring_type: str = "SPRING2"  # "SPRING1" | "SPRING2"
    use_spring_lin: tuple[bool, bool, bool] = (False, False, False)
    use_spring_ang: tuple[bool, bool, bool] = (False, False, False)
    spring_stiffness_lin: tuple[float, float, float] = (10.0, 10.0, 10.0)  # [N/m]
    spring_stiffness_ang: tuple[float, float, float] = (10.0, 10.0, 10.0)  # [N·m/rad]
    spring_damping_lin: tuple[float, float, float] = (0.5, 0.5, 0.5)  # Blender's meaning (measure it)
    spring_damping_ang: tuple[float, float, float] = (0.5, 0.5, 0.5)
    use_motor_lin: bool = False
    use_motor_ang: bool = False
    motor_lin_target_velocity: float = 1.0  # [m/s] along the frame's x
    motor_ang_target_velocity: float = 1.0  # [rad/s] about the frame's x
    motor_lin_max_impulse: float = 1.0  # [N·s] per solver step (Blender's meaning: measure it)
    motor_ang_max_impulse: float = 1.0
    breaking_threshold: float = math.inf  # [N·s]; Blender's use_breaking False -> inf
    disable_collisions: bool = True
    solver_iterations: int = 0  # 0: the scene's; Blender's use_override_solver_iterations
    name: str = ""  # the constraint object's name, for messages and reports
