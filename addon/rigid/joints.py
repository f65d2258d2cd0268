"""Blender's Rigid Body Constraints → the core's :class:`~...core.rigid.joints.JointSpec` records (main thread,
reads bpy, never writes it).

Where joints come from: every object of the scene with a ``rigid_body_constraint`` (an Empty or a mesh), whether
or not the scene has a Rigid Body World and whether or not the world's Constraints collection lists it (Blender
simulates only the listed ones; Contact Lab bakes every constraint object of the scene and says which it took
that Blender would not, :func:`joint_notes`).

Conventions:
- Blender's Object 1 is the core's ``body0``, Object 2 its ``body1``. A Passive body or an empty slot is the world
  (``-1``). When Object 1 is the world side and Object 2 a body, the two swap: ``body0`` is Object 2's body, and
  every quantity that counts Object 2 relative to Object 1 changes sign (limits swap and negate, motor targets
  negate), so that the joint moves as Blender's. For one free axis (Hinge, Slider, Piston, Motor) this is exact;
  for a Generic joint with several free angles it holds to first order in the angles.
- The joint frame is the constraint object's world location and rotation at the start frame (its scale is
  ignored, as Blender does); the frame's axes count the limits, springs and motors.
- Units: lengths × metres per BU; linear stiffness [N/m] = Blender's / metres, angular stiffness and every
  angular impulse × metres², linear impulses and velocities × metres (Blender's numbers are per Blender unit);
  SPRING2's damping is a viscous coefficient (linear / metres, angular × metres²), SPRING1's a factor kept as it is
  (tests/data/joint_conventions.json has what each means, measured in Blender's simulation).
- Steps: Blender counts the Breaking Threshold per Bullet substep ``h_B`` = 1 / (fps × the Rigid Body World's
  Substeps Per Frame); the core counts it per its own step ``h`` = 1 / (fps × Contact Lab's Substeps), so the
  threshold is scaled by ``h / h_B`` (the same load breaks the joint whatever the substeps). The Motor's Max
  Impulse is a force in Blender's simulation and the core's (no conversion). ``h_B`` and the world's Solver
  Iterations go with each joint (SPRING1's drive rate depends on them); without a world, Blender's defaults.
- Refusals (:func:`joint_problems`) name the constraint object and the fix; the bake raises them, Check Scene
  lists them (:mod:`..checks.joints`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import units
from ..output.keyframes import fcurves_of
from ..scene import compound_parent

if TYPE_CHECKING:  # the core is imported where it is used: register() sets numba's cache before any kernel
    from ...core.rigid.joints import JointSpec

PANEL = "Properties ▸ Physics ▸ Rigid Body Constraint"
"""Where a constraint's settings are, for messages."""

AXES = ("x", "y", "z")

LIMIT_AXES = {
    "HINGE": ((), ("z",)),
    "SLIDER": (("x",), ()),
    "PISTON": (("x",), ("x",)),
    "GENERIC": (AXES, AXES),
    "GENERIC_SPRING": (AXES, AXES),
}
"""Per constraint type, ``(linear axes, angular axes)`` whose limits Blender uses; the other types have none."""

TRANSFORM_PATHS = ("location", "rotation", "scale", "delta_", "matrix")
"""F-curve data paths (prefixes) that move an object."""


def constraint_objects(scene) -> list:
    """Objects of ``scene`` with a Rigid Body Constraint, sorted by name (deterministic joint order)."""
    return sorted(
        (o for o in scene.objects if getattr(o, "rigid_body_constraint", None) is not None), key=lambda o: o.name
    )


def _float_settings(c) -> list[tuple[str, float]]:
    """Every number of constraint ``c`` that reaches the core, as ``(property name, value)``."""
    names = [f"limit_{kind}_{axis}_{end}" for kind in ("lin", "ang") for axis in AXES for end in ("lower", "upper")]
    names += [
        f"spring_{what}{ang}{axis}" for what in ("stiffness_", "damping_") for ang in ("", "ang_") for axis in AXES
    ]
    names += ["motor_lin_target_velocity", "motor_ang_target_velocity", "motor_lin_max_impulse"]
    names += ["motor_ang_max_impulse", "breaking_threshold"]
    return [(name, float(getattr(c, name))) for name in names]


def _label(c, name: str) -> str:
    """The name Blender's panel shows for setting ``name`` of constraint ``c``, with the property's own name:
    ``'Y Angle Stiffness (spring_stiffness_ang_y)'``."""
    prop = c.bl_rna.properties.get(name) if hasattr(c, "bl_rna") else None
    return f"{prop.name} ({name})" if prop is not None else name


def _side(obj, scene_names: set) -> str:
    """What one end of a constraint is: 'NONE' (empty slot), 'MISSING' (not in the scene), 'PART' (of a Compound
    Parent), 'ACTIVE', 'PASSIVE', or 'NONE_ROLE' / 'SOFT' (no rigid body)."""
    if obj is None:
        return "NONE"
    if obj.name not in scene_names:
        return "MISSING"
    if compound_parent(obj) is not None:
        return "PART"
    role = str(getattr(getattr(obj, "contact_lab", None), "role", "NONE"))
    return role if role in ("ACTIVE", "PASSIVE") else ("SOFT" if role == "SOFT" else "NONE_ROLE")


def _end_problems(obj, scene, names: set[str]) -> list[str]:
    """Messages about the objects a constraint joins (both missing, the same, missing from the scene, no body);
    ``names``: the names of the scene's objects."""
    c = obj.rigid_body_constraint
    ends = (c.object1, c.object2)
    sides = [_side(o, names) for o in ends]
    where = f"{PANEL} ▸ Objects"
    if ends[0] is None and ends[1] is None:
        return [f"'{obj.name}' joins no objects: set Object 1 and Object 2 in {where}, or remove its constraint"]
    if ends[0] is not None and ends[0] == ends[1]:
        return [f"'{obj.name}' joins '{ends[0].name}' to itself: set Object 2 to another body in {where}"]
    out = []
    for k, (end, side) in enumerate(zip(ends, sides, strict=True)):
        slot = f"Object {k + 1}"
        if side == "MISSING":
            out.append(
                f"'{obj.name}': its {slot} '{end.name}' is not in the scene '{scene.name}': link it into the scene "
                f"or pick another object in {where}"
            )
        elif side == "PART":
            parent = getattr(compound_parent(end), "name", "")
            out.append(
                f"'{obj.name}': its {slot} '{end.name}' is a part of the Compound Parent '{parent}', not a body of "
                f"its own: join the parent instead in {where}"
            )
        elif side in ("NONE_ROLE", "SOFT"):
            role = "a Soft body" if side == "SOFT" else "not a Contact Lab body (Role None)"
            out.append(
                f"'{obj.name}': its {slot} '{end.name}' is {role}: set its Role to Active or Passive in Properties "
                f"▸ Physics ▸ Contact Lab, or pick another object in {where}"
            )
    if not out and all(s in ("PASSIVE", "NONE") for s in sides):
        out.append(
            f"'{obj.name}' joins no active body (both sides are Passive or empty), so it can move nothing: make one "
            f"of its objects Active or remove the constraint"
        )
    return out


def _setting_problems(obj) -> list[str]:
    """Messages about a constraint's numbers: NaN, negative values, crossed limits, a spring on no axis."""
    c = obj.rigid_body_constraint
    out = []
    for name, value in _float_settings(c):
        if math.isnan(value):
            out.append(f"'{obj.name}': its {_label(c, name)} is not a number: type a value in {PANEL}")
    negative = [
        name for name, value in _float_settings(c) if name.startswith(("spring_", "motor_lin_max", "motor_ang_max"))
    ]
    negative.append("breaking_threshold")
    for name in negative:
        value = float(getattr(c, name))
        if value < 0.0:
            out.append(f"'{obj.name}': its {_label(c, name)} is {value:g}: set it to 0 or more in {PANEL}")
    linear, angular = LIMIT_AXES.get(str(c.type), ((), ()))
    for kind, axes in (("lin", linear), ("ang", angular)):
        for axis in axes:
            lower, upper = (
                float(getattr(c, f"limit_{kind}_{axis}_lower")),
                float(getattr(c, f"limit_{kind}_{axis}_upper")),
            )
            if getattr(c, f"use_limit_{kind}_{axis}") and lower > upper:
                what = "angular" if kind == "ang" else "linear"
                out.append(
                    f"'{obj.name}': its {what} {axis.upper()} limit has lower {lower:g} above upper {upper:g}: swap "
                    f"them in {PANEL} ▸ Limits"
                )
    if c.type == "GENERIC_SPRING" and not any(
        getattr(c, f"use_spring_{ang}{axis}") for ang in ("", "ang_") for axis in AXES
    ):
        out.append(
            f"'{obj.name}' is a Generic Spring with a spring on no axis: tick at least one axis in {PANEL} ▸ Springs, "
            "or make it a Generic constraint"
        )
    return out


def _animation_problems(obj) -> list[str]:
    """Messages about a constraint object that moves or whose settings are animated (read once, at the start)."""
    paths = [curve.data_path for curve in fcurves_of(obj)]
    drivers = getattr(getattr(obj, "animation_data", None), "drivers", None) or ()
    paths += [d.data_path for d in drivers]
    out = []
    moved = sorted({p for p in paths if p.startswith(TRANSFORM_PATHS)})
    keyed = sorted({p.split(".", 1)[1] for p in paths if p.startswith("rigid_body_constraint.")})
    if moved:
        out.append(
            f"'{obj.name}' is a constraint object with animated {moved[0]}: a joint's frame is read once, at the "
            "start frame; clear its keyframes and drivers (Object ▸ Animation ▸ Clear Keyframes), or bake the frames "
            "before and after the change as two bakes"
        )
    if keyed:
        out.append(
            f"'{obj.name}': its constraint's {keyed[0].replace('_', ' ')} is animated: constraint settings are read "
            f"once, at the start frame; clear the keyframes in {PANEL}, or bake the frames before and after the "
            "change as two bakes"
        )
    return out


def constraint_problems(obj, scene, names: set[str] | None = None) -> list[str]:
    """Why the bake refuses the constraint of ``obj`` (an enabled one), one message per problem; [] if none.
    ``names``: the names of the scene's objects, when the caller checks many constraints (read once, not per
    constraint: a wall of thousands of joints)."""
    if names is None:
        names = {o.name for o in scene.objects}
    return _end_problems(obj, scene, names) + _setting_problems(obj) + _animation_problems(obj)


def joint_problems(scene) -> list[tuple[str, str]]:
    """Every constraint the bake refuses, as ``(constraint object name, message)``; disabled constraints are
    skipped (not read, not refused). The one source of these refusals: :func:`gather_joints` raises them, Check
    Scene lists them."""
    out = []
    names = {o.name for o in scene.objects}
    for obj in constraint_objects(scene):
        if obj.rigid_body_constraint.enabled:
            out += [(obj.name, message) for message in constraint_problems(obj, scene, names)]
    return out


def _moves(obj) -> bool:
    """True when ``obj`` may move during the bake: keyframes or drivers on its transform, a parent, or Blender's
    Animated checkbox."""
    paths = [curve.data_path for curve in fcurves_of(obj)]
    paths += [d.data_path for d in (getattr(getattr(obj, "animation_data", None), "drivers", None) or ())]
    rigid_body = getattr(obj, "rigid_body", None)
    return (
        any(p.startswith(TRANSFORM_PATHS) for p in paths)
        or getattr(obj, "parent", None) is not None
        or bool(getattr(rigid_body, "kinematic", False))
    )


def constraint_warnings(obj) -> list[str]:
    """What the bake does otherwise than Blender with the constraint of ``obj``: a Passive side that moves is held
    as the world, fixed where it is at the start frame."""
    c = obj.rigid_body_constraint
    out = []
    for k, end in enumerate((c.object1, c.object2)):
        role = getattr(getattr(end, "contact_lab", None), "role", None)
        if end is not None and role == "PASSIVE" and _moves(end):
            out.append(
                f"'{obj.name}': its Object {k + 1} '{end.name}' is Passive and moves, but a joint holds to a Passive "
                "body's pose at the start frame (the world): make it Active, or keep it still"
            )
    return out


def constraint_note(obj, listed: set | None) -> str | None:
    """A disabled constraint (skipped) or one missing from the world's Constraints collection ``listed`` (baked);
    None otherwise."""
    if not obj.rigid_body_constraint.enabled:
        return f"'{obj.name}': its constraint is disabled ({PANEL} ▸ Enabled): not baked"
    if listed is not None and obj.name not in listed:
        return (
            f"'{obj.name}' is not in the Rigid Body World's Constraints collection (Blender does not simulate it): "
            "Contact Lab bakes it"
        )
    return None


def world_constraint_names(scene) -> set | None:
    """Names of the objects in the Rigid Body World's Constraints collection (empty when the world has none); None
    without a world (or one whose settings say nothing of constraints)."""
    world = getattr(scene, "rigidbody_world", None)
    if world is None or not hasattr(world, "constraints"):
        return None
    collection = world.constraints
    return set() if collection is None else {o.name for o in collection.objects}


def joint_notes(scene) -> list[tuple[str | None, str]]:
    """What the bake does with the constraints that Blender would treat otherwise, as ``(name, message)``:
    disabled ones skipped, ones missing from the Rigid Body World's Constraints collection baked, a scene without
    a rigid body world whose constraints are read from the objects."""
    objects = constraint_objects(scene)
    out: list[tuple[str | None, str]] = []
    if objects and getattr(scene, "rigidbody_world", None) is None:
        out.append(
            (
                None,
                f"the scene has no Rigid Body World: its {len(objects)} constraint object(s) are read from the "
                "objects and baked",
            )  # fmt: skip
        )
    listed = world_constraint_names(scene)
    for obj in objects:
        note = constraint_note(obj, listed)
        if note is not None:
            out.append((obj.name, note))
    return out


def _triple(c, template: str, scale: float = 1.0) -> tuple[float, float, float]:
    x, y, z = (float(getattr(c, template.format(axis))) * scale for axis in AXES)
    return (x, y, z)


def _flags(c, template: str) -> tuple[bool, bool, bool]:
    x, y, z = (bool(getattr(c, template.format(axis))) for axis in AXES)
    return (x, y, z)


BLENDER_SUBSTEPS = 10
"""Blender's default Substeps Per Frame and Solver Iterations (a scene without a Rigid Body World)."""


def blender_step(scene) -> tuple[float, int]:
    """Blender's substep ``h_B`` [s] and solver iterations of ``scene``'s Rigid Body World (its defaults without
    one): the step that Blender's per-substep numbers (Breaking Threshold, SPRING1's damping) count in."""
    world = getattr(scene, "rigidbody_world", None)
    substeps = int(getattr(world, "substeps_per_frame", BLENDER_SUBSTEPS)) if world is not None else BLENDER_SUBSTEPS
    iterations = int(getattr(world, "solver_iterations", BLENDER_SUBSTEPS)) if world is not None else BLENDER_SUBSTEPS
    return 1.0 / (units.scene_fps(scene) * max(substeps, 1)), max(iterations, 1)


def core_step(scene) -> float:
    """Contact Lab's step ``h`` [s] for ``scene``: 1 / (fps × the Substeps of Contact Lab's Rigid settings)."""
    return 1.0 / (units.scene_fps(scene) * max(int(scene.contact_lab.substeps), 1))


def _spec_settings(c, metres: float, threshold_scale: float = 1.0) -> dict:
    """Every setting of constraint ``c`` as :class:`JointSpec` keyword arguments, in metres (see the module);
    ``threshold_scale``: ``h / h_B``, the Breaking Threshold's conversion to one core step."""
    from ...core.rigid.joints import JointKind

    m2 = metres * metres
    viscous = c.spring_type == "SPRING2"  # a damping coefficient [N·s/BU]; SPRING1's is a factor without unit
    return dict(
        kind=JointKind[str(c.type)],
        use_limit_lin=_flags(c, "use_limit_lin_{}"),
        limit_lin_lower=_triple(c, "limit_lin_{}_lower", metres),
        limit_lin_upper=_triple(c, "limit_lin_{}_upper", metres),
        use_limit_ang=_flags(c, "use_limit_ang_{}"),
        limit_ang_lower=_triple(c, "limit_ang_{}_lower"),
        limit_ang_upper=_triple(c, "limit_ang_{}_upper"),
        spring_type=str(c.spring_type),
        use_spring_lin=_flags(c, "use_spring_{}"),
        use_spring_ang=_flags(c, "use_spring_ang_{}"),
        spring_stiffness_lin=_triple(c, "spring_stiffness_{}", 1.0 / metres),
        spring_stiffness_ang=_triple(c, "spring_stiffness_ang_{}", m2),
        spring_damping_lin=_triple(c, "spring_damping_{}", 1.0 / metres if viscous else 1.0),
        spring_damping_ang=_triple(c, "spring_damping_ang_{}", m2 if viscous else 1.0),
        use_motor_lin=bool(c.use_motor_lin),
        use_motor_ang=bool(c.use_motor_ang),
        motor_lin_target_velocity=float(c.motor_lin_target_velocity) * metres,
        motor_ang_target_velocity=float(c.motor_ang_target_velocity),
        motor_lin_max_impulse=float(c.motor_lin_max_impulse) * metres,
        motor_ang_max_impulse=float(c.motor_ang_max_impulse) * m2,
        breaking_threshold=float(c.breaking_threshold) * metres * threshold_scale if c.use_breaking else math.inf,
        disable_collisions=bool(c.disable_collisions),
        solver_iterations=int(c.solver_iterations) if c.use_override_solver_iterations else 0,
    )


def swap_sides(settings: dict) -> dict:
    """``settings`` (:func:`_spec_settings`) seen from the other body: every limit ``[lo, hi]`` becomes
    ``[-hi, -lo]`` and the motor targets change sign (the joint's relative motion reverses)."""
    out = dict(settings)
    for kind in ("lin", "ang"):
        lower, upper = settings[f"limit_{kind}_lower"], settings[f"limit_{kind}_upper"]
        out[f"limit_{kind}_lower"] = tuple(-v for v in upper)
        out[f"limit_{kind}_upper"] = tuple(-v for v in lower)
    out["motor_lin_target_velocity"] = -settings["motor_lin_target_velocity"]
    out["motor_ang_target_velocity"] = -settings["motor_ang_target_velocity"]
    return out


def gather_joints(
    scene, body_index: dict[str, int], metres: float, frame: int, passive_index: dict[str, int] | None = None
) -> list[JointSpec]:
    """One :class:`JointSpec` per enabled constraint object of ``scene``, by name.

    Args:
        body_index: ``{object name: builder body index}`` of the active bodies (passive ones are the world side).
        passive_index: the same for the passive bodies: a joint's Passive side becomes its ``world_body``, so
            Disable Collisions also stops the joined body colliding with it.
        metres: metres per BU. frame: the start frame (the constraint objects' matrices are read there).

    Call :func:`joint_problems` first: this assumes every constraint passed it.
    """
    from ...core.rigid.joints import JointSpec
    from ..scene import sample_world_matrices

    objects = [o for o in constraint_objects(scene) if o.rigid_body_constraint.enabled]
    if not objects:
        return []
    h_blender, iterations = blender_step(scene)
    threshold_scale = core_step(scene) / h_blender
    matrices = sample_world_matrices(scene, objects, np.array([frame], dtype=np.int64))[0]  # (J, 4, 4) [BU]
    translation, rotation, _, _ = units.decompose_matrices(matrices[None])
    quats = units.matrix_to_quat(rotation[0])  # (J, 4) wxyz
    out = []
    for k, obj in enumerate(objects):
        c = obj.rigid_body_constraint
        ends = [body_index.get(o.name, -1) if o is not None else -1 for o in (c.object1, c.object2)]
        settings = _spec_settings(c, metres, threshold_scale)
        settings.update(blender_substep=h_blender, blender_iterations=iterations)
        world = [(passive_index or {}).get(o.name, -1) if o is not None else -1 for o in (c.object1, c.object2)]
        if ends[0] < 0:  # the world is Object 1: the body is body0, its motion counted the other way round
            ends.reverse()
            world.reverse()
            settings = swap_sides(settings)
        settings.update(world_body=world[1] if ends[1] < 0 else -1)
        x, y, z = (float(v) * metres for v in translation[0, k])
        w, qx, qy, qz = (float(v) for v in quats[k])
        out.append(
            JointSpec(
                body0=ends[0], body1=ends[1], position=(x, y, z), rotation=(w, qx, qy, qz), name=obj.name, **settings
            )
        )
    return out
