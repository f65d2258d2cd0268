"""Joints: Blender's Rigid Body Constraints in the rigid core's terms, and the per-axis table each kind implies.

A joint ties two bodies (or a body and the world) at a frame: the constraint object's pose at the start, kept in
each body's local frame. Six coordinates describe how body1's frame sits in body0's (Bullet's ``rbA`` is Blender's
``object1`` = ``body0``): three linear ones (body1's anchor minus body0's, along body0's frame axes [m]) and three
angles, the XYZ Euler angles of body1's frame relative to body0's [rad] (Bullet's ``btGeneric6DofConstraint``
convention, ``R = Rx Ry Rz``). Each axis is free, locked, limited, sprung or motor-driven; which ones a kind uses
follows Bullet as Blender sets it up (``rigidbody_constraint_init`` with ``rb_bullet_api``):

* FIXED: all six locked (``btFixedConstraint``). POINT: the three linear axes locked (``btPoint2PointConstraint``).
* HINGE: everything locked but the angle about Z (``btHingeConstraint`` turns about the frame's Z); its limit is
  ``limit_ang_z``. Bullet measures the hinge angle of body0 relative to body1, the opposite sense of the core's
  angle, so the hinge's Z axis carries the sign -1.
* SLIDER: moves along X (``limit_lin_x``), the rest locked. PISTON: moves along and turns about X (``limit_lin_x``,
  ``limit_ang_x``); its angle counts body1 relative to body0 (sign +1).
* GENERIC, GENERIC_SPRING: per axis; ``use_limit_*`` off is free, a limit whose lower equals its upper locks the
  axis at that value, otherwise the axis is limited. GENERIC_SPRING adds a spring on each ``use_spring_*`` axis.
  Their angles count as the hinge's, body0 relative to body1 (sign -1 on the three angles; for one free angle
  exact, for several to first order).
* MOTOR: every axis free, a velocity motor along and about X (``btGeneric6DofConstraint`` with all limits open).
  Bullet's motor rows drive body0 relative to body1 along and about X, hence :data:`MOTOR_SIGN`.

:class:`JointSpec` lists every sense and unit; each is checked against Blender's own simulation of the same
scene (``tests/blender/test_joint_conventions.py``).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, fields

import numpy as np

from ..errors import ModelError


class JointKind(enum.IntEnum):
    """Blender's rigid body constraint types."""

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
    """One Blender Rigid Body Constraint, in the core's terms (field names as Blender's RigidBodyConstraint).

    Object 1 is ``body0`` (A), Object 2 ``body1`` (B); the joint frame is the constraint object's pose at the start.
    Senses and units, as Blender's own simulation (Bullet) moves (``tests/data/joint_conventions.json``):

    * Linear limits [m] count B's offset from A along the frame's axis (SLIDER, PISTON, GENERIC).
    * Angular limits [rad] of HINGE (about Z) and GENERIC count A's turn relative to B (B turns by minus the
      angle); a PISTON's angular limit (about X) counts B relative to A.
    * MOTOR locks no axis; target ``+v`` moves B at ``-v`` [m/s] along and ``-v`` [rad/s] about X relative to A.
      ``motor_*_max_impulse`` bounds a force [N] (torque [N·m]): each step's impulse is at most ``max × h``, so
      the motor pushes as hard per second whatever the substeps.
    * Springs rest at the start pose; stiffness ``k`` [N/m, N·m/rad] for both types. SPRING2: force ``-k x - c v``
      with ``c`` [N·s/m, N·m·s/rad] a viscous damping. SPRING1 (Bullet's motor-driven spring): a drive toward the
      relative velocity ``-(1 - d) k x / (h_B n_B)`` whose force is at most ``k |x|``, with ``d`` the damping
      factor (clamped to [0, 1]), ``h_B`` = ``blender_substep`` and ``n_B`` = ``blender_iterations``: for ``d``
      up to about 0.9 an undamped spring, near 1 a strong damper, at 1 the spring holds wherever it stops.
      An angular SPRING2 acts with the share of ``k`` and ``c`` that Bullet's solver applies to a body turning
      about an axis away from its centre, and Bullet's limits on ``k`` and ``c`` apply (:func:`spring2_gains`).
    * ``breaking_threshold`` is one row's impulse in one core step [N·s]: Blender's threshold (an impulse per
      Blender substep) times ``h / h_B`` (the bridge converts), so a joint breaks at the same load.
    """

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
    spring_damping_lin: tuple[float, float, float] = (0.5, 0.5, 0.5)  # SPRING2 [N·s/m]; SPRING1: a factor d
    spring_damping_ang: tuple[float, float, float] = (0.5, 0.5, 0.5)  # SPRING2 [N·m·s/rad]; SPRING1: d
    use_motor_lin: bool = False
    use_motor_ang: bool = False
    motor_lin_target_velocity: float = 1.0  # [m/s]: object2 moves at -target along X relative to object1
    motor_ang_target_velocity: float = 1.0  # [rad/s]: object2 turns at -target about X relative to object1
    motor_lin_max_impulse: float = 1.0  # a force bound [N] (Blender's Max Impulse: per step at most this × h)
    motor_ang_max_impulse: float = 1.0  # a torque bound [N·m]
    breaking_threshold: float = math.inf  # [N·s] per core step (one row's impulse); use_breaking False -> inf
    disable_collisions: bool = True
    solver_iterations: int = 0  # 0: the scene's; Blender's use_override_solver_iterations
    name: str = ""  # the constraint object's name, for messages and reports
    blender_substep: float = 1.0 / 600.0  # [s] Blender's substep 1 / (fps × substeps per frame): SPRING1's rate
    blender_iterations: int = 10  # Blender's solver iterations (the world's): SPRING1's rate
    world_body: int = -1  # the kinematic body on the world side (Blender's Passive object), for Disable Collisions


AXIS_FREE = 0
"""Axis flag: no row."""
AXIS_LOCKED = 1
"""Axis flag: held at ``lower`` (= ``upper``) by an equality row."""
AXIS_LIMITED = 2
"""Axis flag: kept within ``[lower, upper]`` by a one-sided row."""
AXIS_SPRING = 4
"""Axis flag: a spring–damper pulls the coordinate back to its start value (0)."""
AXIS_MOTOR = 8
"""Axis flag: a velocity motor with a bounded impulse."""

SPRING1 = 1
"""Spring law code: Bullet's first spring, a bounded drive toward ``-rate k x`` (:mod:`.joint_rows`)."""
SPRING2 = 2
"""Spring law code: force ``-k x - c v``, the spring at the start pose, the damping implicit (:mod:`.joint_rows`)."""

_LOCKED_BY_KIND = {
    JointKind.FIXED: (0, 1, 2, 3, 4, 5),
    JointKind.POINT: (0, 1, 2),
    JointKind.HINGE: (0, 1, 2, 3, 4),
    JointKind.SLIDER: (1, 2, 3, 4, 5),
    JointKind.PISTON: (1, 2, 4, 5),
}
"""Axes (lin x, y, z, ang x, y, z) a kind locks; the remaining ones of these kinds are free or limited."""
_LIMIT_BY_KIND = {JointKind.HINGE: (5,), JointKind.SLIDER: (0,), JointKind.PISTON: (0, 3)}
"""The axes whose limit a kind honours (GENERIC and GENERIC_SPRING: all six)."""


def _finite(name: str, field: str, values) -> None:
    for v in np.atleast_1d(np.asarray(values, np.float64)):
        if math.isnan(v):
            raise ModelError(f"constraint '{name}': {field} is not a number; set it to a finite value")


def validate_joint(spec: JointSpec, body_count: int) -> None:
    """Refuse a spec the core cannot honour; the ModelError names the constraint and the field.

    Raises:
        ModelError: unknown kind or body, the same body twice, both sides the world, NaN or infinity in a pose,
            NaN anywhere, lower above upper on a used limit, a negative threshold, stiffness, damping or
            maximum impulse, an unknown spring type.
    """
    name = spec.name or "(unnamed)"
    try:
        JointKind(spec.kind)
    except ValueError:
        raise ModelError(f"constraint '{name}': unknown kind {spec.kind!r}") from None
    for field in ("body0", "body1", "world_body"):
        b = getattr(spec, field)
        if not -1 <= int(b) < body_count:
            raise ModelError(f"constraint '{name}': {field} {b} is not a body of the scene")
    if spec.body0 == spec.body1:
        what = "both sides are the world" if spec.body0 == -1 else "object1 and object2 are the same body"
        raise ModelError(f"constraint '{name}': {what}; connect two different objects")
    for f in fields(spec):
        if f.name in ("kind", "body0", "body1", "world_body", "spring_type", "name", "disable_collisions"):
            continue
        _finite(name, f.name, getattr(spec, f.name))
    for field in ("position", "rotation"):
        if not np.all(np.isfinite(np.asarray(getattr(spec, field), np.float64))):
            raise ModelError(f"constraint '{name}': {field} must be finite")
    if not np.linalg.norm(np.asarray(spec.rotation, np.float64)) > 1e-12:
        raise ModelError(f"constraint '{name}': rotation is a zero quaternion")
    for part in ("lin", "ang"):
        use = getattr(spec, f"use_limit_{part}")
        lower, upper = getattr(spec, f"limit_{part}_lower"), getattr(spec, f"limit_{part}_upper")
        for i, axis in enumerate("xyz"):
            if use[i] and lower[i] > upper[i]:
                raise ModelError(
                    f"constraint '{name}': limit_{part}_{axis}_lower ({lower[i]}) is above limit_{part}_{axis}_upper"
                    f" ({upper[i]}); swap them or lower the lower limit"
                )
    for field in ("spring_stiffness_lin", "spring_stiffness_ang", "spring_damping_lin", "spring_damping_ang",
                  "motor_lin_max_impulse", "motor_ang_max_impulse", "breaking_threshold"):  # fmt: skip
        if np.any(np.asarray(getattr(spec, field), np.float64) < 0.0):
            raise ModelError(f"constraint '{name}': {field} must not be negative")
    if spec.spring_type not in ("SPRING1", "SPRING2"):
        raise ModelError(f"constraint '{name}': spring_type must be SPRING1 or SPRING2, got {spec.spring_type!r}")
    if int(spec.solver_iterations) < 0:
        raise ModelError(f"constraint '{name}': solver_iterations must not be negative")
    if not (math.isfinite(spec.blender_substep) and spec.blender_substep > 0.0) or int(spec.blender_iterations) < 1:
        raise ModelError(f"constraint '{name}': blender_substep must be positive and blender_iterations at least 1")


def axis_table(spec: JointSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The per-axis description of a valid spec: ``(flags (6,) int32, lower (6,), upper (6,), sign (6,))``.

    Axes: lin x, y, z [m], ang x, y, z [rad]. ``flags`` combine ``AXIS_*``; ``lower``/``upper`` are the limit or
    the locked value in Blender's sense, ``sign`` converts the core's coordinate (body1 relative to body0) into
    Blender's for that kind (-1 on a hinge's Z and a generic joint's angles, see the module docstring).
    """
    kind = JointKind(spec.kind)
    flags = np.zeros(6, np.int32)
    lower = np.zeros(6)
    upper = np.zeros(6)
    sign = np.ones(6)
    use = tuple(spec.use_limit_lin) + tuple(spec.use_limit_ang)
    lo = tuple(spec.limit_lin_lower) + tuple(spec.limit_ang_lower)
    hi = tuple(spec.limit_lin_upper) + tuple(spec.limit_ang_upper)
    if kind == JointKind.HINGE:
        sign[5] = -1.0
    if kind in (JointKind.GENERIC, JointKind.GENERIC_SPRING):
        sign[3:] = -1.0
    for i in _LOCKED_BY_KIND.get(kind, ()):
        flags[i] = AXIS_LOCKED
    limited = range(6) if kind in (JointKind.GENERIC, JointKind.GENERIC_SPRING) else _LIMIT_BY_KIND.get(kind, ())
    for i in limited:
        if use[i]:
            lower[i], upper[i] = float(lo[i]), float(hi[i])
            flags[i] = AXIS_LOCKED if lo[i] == hi[i] else AXIS_LIMITED
    if kind == JointKind.GENERIC_SPRING:
        springs = tuple(spec.use_spring_lin) + tuple(spec.use_spring_ang)
        for i in range(6):
            if springs[i] and flags[i] != AXIS_LOCKED:
                flags[i] |= AXIS_SPRING
    if kind == JointKind.MOTOR:
        if spec.use_motor_lin:
            flags[0] |= AXIS_MOTOR
        if spec.use_motor_ang:
            flags[3] |= AXIS_MOTOR
    return flags, lower, upper, sign


MOTOR_SIGN = (-1.0, -1.0)
"""Sign of the motor's target in the core's coordinate (body1 relative to body0), linear then angular: Bullet's
motor row drives A relative to B, so B moves at minus the target along and about X (measured in Blender)."""


def spring1_rate(damping, blender_substep: float, blender_iterations: int) -> np.ndarray:
    """SPRING1's drive rate ``(1 - d) / (h_B n_B)`` [1/s] per axis for Blender's damping factors ``d``: the
    relative velocity the spring drives toward is ``-rate k x`` (Bullet's ``btGeneric6DofSpringConstraint`` with
    Blender's ``1 - d``); ``d`` at or above 1 gives 0 (the spring then only holds)."""
    d = np.asarray(damping, np.float64)
    return np.clip(1.0 - d, 0.0, 1.0) / (float(blender_substep) * int(blender_iterations))


def _frame_in_body(pos, quat, body_pos, body_quat) -> tuple[np.ndarray, np.ndarray]:
    """The world frame ``(pos (3,), quat (4,))`` expressed in a body's local frame at its start pose."""
    from ..math.quat import quat_conjugate, quat_mul, rotation_matrix

    R = rotation_matrix(body_quat)
    local_pos = R.T @ (np.asarray(pos, np.float64) - body_pos)
    local_quat = np.asarray(quat_mul(quat_conjugate(body_quat), quat), np.float64)
    return local_pos, local_quat / np.linalg.norm(local_quat)


def _bullet_row_masses(m, spec: JointSpec, body_pos, body_quat) -> tuple[np.ndarray, np.ndarray]:
    """Bullet's estimate ``m_B`` (6,) of each SPRING2 row's mass [kg | kg·m²] and the angular rows' own
    ``m_a`` (3,) (see :func:`spring2_gains`); ``inf`` where no side moves."""
    from ..math.quat import rotation_matrix

    frame = rotation_matrix(np.asarray(spec.rotation, np.float64) / np.linalg.norm(spec.rotation))
    inv_mass, inv_inertia, estimates = 0.0, np.zeros((3, 3)), []
    for b in (int(spec.body0), int(spec.body1)):
        if b < 0 or not m.body_inv_mass[b] > 0.0:
            continue
        R = rotation_matrix(body_quat[b])
        inv_world = R @ m.body_inv_inertia_local[b] @ R.T
        inv_mass += m.body_inv_mass[b]
        inv_inertia += inv_world
        rr = float(np.sum((np.asarray(spec.position, np.float64) - body_pos[b]) ** 2))
        estimates.append([rr / m.body_inv_mass[b] + 1.0 / max(np.linalg.norm(inv_world @ frame[:, i]), 1e-300)
                          for i in range(3)])  # fmt: skip
    if not estimates:
        return np.full(6, np.inf), np.full(3, np.inf)
    angular = np.array(estimates[0]) if len(estimates) == 1 else np.prod(estimates, 0) / np.sum(estimates, 0)
    own = np.array([1.0 / max(float(frame[:, i] @ inv_inertia @ frame[:, i]), 1e-300) for i in range(3)])
    return np.concatenate([np.full(3, 1.0 / inv_mass), angular]), own


def spring2_gains(m, spec: JointSpec, body_pos: np.ndarray, body_quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SPRING2's stiffness and damping (6,) as Blender's Bullet applies them (lin x, y, z, ang x, y, z).

    Bullet's ``btGeneric6DofSpring2Constraint`` estimates each row's mass ``m_B`` (the bodies' masses in series;
    about an axis ``a``, ``mass r² + 1 / |I⁻¹ a|`` with ``r`` the centre's distance from the frame) and limits
    a spring to ``k <= m_B / (16 h_B²)`` and ``c <= m_B / h_B`` (Blender asks for these limits). Each substep it
    aims at the velocity change ``f / m_B`` (``f`` the spring's impulse) and bounds the impulse by ``f``. Turning
    a body alone about ``a`` takes only ``m_a = 1 / (a · I⁻¹ a)``, so an angular row stops at ``f m_a / m_B``;
    when the joint locks the three linear axes, each of the ``n`` solver iterations hands part of the turn on to
    the pivot rows and the row's impulse reaches ``f (1 - (1 - m_a / m_B)^n)``. A 1 kg, 0.1 m cube 0.5 m from the
    axis: 6.4 % of ``k`` and ``c`` at 10 iterations (Blender: 6.5 %); all of them about the body's own centre.
    From the start pose (Bullet reevaluates it each substep).
    """
    stiffness = np.array(tuple(spec.spring_stiffness_lin) + tuple(spec.spring_stiffness_ang), np.float64)
    damping = np.array(tuple(spec.spring_damping_lin) + tuple(spec.spring_damping_ang), np.float64)
    estimate, own = _bullet_row_masses(m, spec, body_pos, body_quat)
    h = float(spec.blender_substep)
    stiffness = np.minimum(stiffness, estimate / (16.0 * h * h))
    damping = np.minimum(damping, estimate / h)
    iterations = int(spec.solver_iterations) if spec.solver_iterations > 0 else int(spec.blender_iterations)
    pivot = all(spec.use_limit_lin) and tuple(spec.limit_lin_lower) == tuple(spec.limit_lin_upper)
    ratio = np.minimum(own / estimate[3:], 1.0)
    share = 1.0 - (1.0 - ratio) ** iterations if pivot else ratio
    share[~np.isfinite(estimate[3:])] = 1.0
    stiffness[3:] *= share
    damping[3:] *= share
    return stiffness, damping


def pack_joints(m, specs: list[JointSpec], body_pos: np.ndarray, body_quat: np.ndarray) -> None:
    """Fill the model's joint arrays (see :meth:`.model.Model._declare_joints`) from validated ``specs``.

    ``body_pos`` (nb, 3) [m], ``body_quat`` (nb, 4): the bodies' start poses, in which the frames are expressed.
    """
    nj = len(specs)
    m.joint_count = nj
    m.joint_body = np.full((nj, 2), -1, np.int64)
    m.joint_frame_pos = np.zeros((nj, 2, 3))
    m.joint_frame_quat = np.zeros((nj, 2, 4))
    m.joint_axis_flags = np.zeros((nj, 6), np.int32)
    m.joint_lower = np.zeros((nj, 6))
    m.joint_upper = np.zeros((nj, 6))
    m.joint_sign = np.ones((nj, 6))
    m.joint_spring_stiffness = np.zeros((nj, 6))
    m.joint_spring_damping = np.zeros((nj, 6))
    m.joint_spring_type = np.full(nj, SPRING2, np.int32)
    m.joint_motor_target = np.zeros((nj, 6))
    m.joint_motor_max_impulse = np.zeros((nj, 6))
    m.joint_break_threshold = np.full(nj, np.inf)
    m.joint_passes = np.zeros(nj, np.int32)
    m.joint_disable_collisions = np.zeros(nj, np.bool_)
    m.joint_label = []
    for j, spec in enumerate(specs):
        rotation = np.asarray(spec.rotation, np.float64)
        rotation = rotation / np.linalg.norm(rotation)
        for side, b in enumerate((int(spec.body0), int(spec.body1))):
            m.joint_body[j, side] = b
            if b < 0:  # the world keeps the frame in world coordinates
                m.joint_frame_pos[j, side] = spec.position
                m.joint_frame_quat[j, side] = rotation
            else:
                m.joint_frame_pos[j, side], m.joint_frame_quat[j, side] = _frame_in_body(
                    spec.position, rotation, body_pos[b], body_quat[b]
                )
        flags, lower, upper, sign = axis_table(spec)
        m.joint_axis_flags[j], m.joint_lower[j], m.joint_upper[j], m.joint_sign[j] = flags, lower, upper, sign
        stiffness = np.array(tuple(spec.spring_stiffness_lin) + tuple(spec.spring_stiffness_ang))
        damping = np.array(tuple(spec.spring_damping_lin) + tuple(spec.spring_damping_ang))
        if spec.spring_type == "SPRING1":  # the damping array holds SPRING1's drive rate [1/s]
            damping = spring1_rate(damping, spec.blender_substep, spec.blender_iterations)
        elif JointKind(spec.kind) == JointKind.GENERIC_SPRING:  # as Blender's Bullet applies them
            stiffness, damping = spring2_gains(m, spec, body_pos, body_quat)
        m.joint_spring_stiffness[j] = stiffness
        m.joint_spring_damping[j] = damping
        m.joint_spring_type[j] = SPRING1 if spec.spring_type == "SPRING1" else SPRING2
        m.joint_motor_target[j, 0] = MOTOR_SIGN[0] * spec.motor_lin_target_velocity
        m.joint_motor_target[j, 3] = MOTOR_SIGN[1] * spec.motor_ang_target_velocity
        m.joint_motor_max_impulse[j, 0] = spec.motor_lin_max_impulse
        m.joint_motor_max_impulse[j, 3] = spec.motor_ang_max_impulse
        m.joint_break_threshold[j] = spec.breaking_threshold
        m.joint_passes[j] = int(spec.solver_iterations)
        m.joint_disable_collisions[j] = bool(spec.disable_collisions)
        m.joint_label.append(spec.name or f"joint{j}")
    nb = body_pos.shape[0]
    keys = set()
    for spec in specs:  # a Passive side is the world to the solver but still collides: its pair is joined too
        other = spec.body1 if spec.body1 >= 0 else spec.world_body
        if spec.disable_collisions and spec.body0 >= 0 and other >= 0 and other != spec.body0:
            keys.add(min(spec.body0, other) * nb + max(spec.body0, other))
    m.joint_joined_pairs = np.array(sorted(keys), np.int64)
