"""The joints in the panels: what the bake will do with the scene's Rigid Body Constraints (Bake panel), what the
last bake's joints did (its report), and the active object's joints (Body panel). Draw only; everything drawn
comes from the scene's constraint objects, the last Check Scene and the last report (no check runs on a redraw:
a wall of thousands of constraints would make every redraw slow)."""

from __future__ import annotations

import json
import math

from ..addon.bake.joint_report import JOINT_TYPE_ORDER, type_counts

MAX_BROKEN_LINES = 4
"""Broken joints listed by name in a panel; the rest are counted."""

CHECK_HINT = "Check Scene (below) lists the constraints the bake refuses"


def type_label(name: str) -> str:
    """Blender's label of a constraint type: ``'GENERIC_SPRING'`` → ``'Generic Spring'``."""
    return name.replace("_", " ").title()


def types_text(counts: dict) -> str:
    """``{'HINGE': 2, 'POINT': 19}`` → ``'2 Hinge, 19 Point'`` (Blender's Type menu order)."""
    return ", ".join(f"{counts[t]} {type_label(t)}" for t in JOINT_TYPE_ORDER if counts.get(t))


def constraint_objects(scene) -> list:
    """The scene's objects with a Rigid Body Constraint (the ones a Rigid bake reads)."""
    return [o for o in scene.objects if getattr(o, "rigid_body_constraint", None) is not None]


def refused_names(settings) -> set | None:
    """Constraint objects the last Check Scene refused (ERROR findings of the joint checks), or None when the
    last check is missing, unreadable or was for another engine."""
    from ..addon.checks import validate  # not at import: the checks import the core, whose kernels must be
    from ..addon.checks.joints import SETTING as JOINT_SETTING  # declared after register() set numba's cache

    text = getattr(settings, "last_validation", "")
    try:
        data = json.loads(text) if text else None
        if not isinstance(data, dict) or data.get("engine") != settings.engine:
            return None
        _, findings = validate.from_json(text)
    except (AttributeError, TypeError, ValueError, RecursionError):
        return None
    return {str(f.object_name) for f in findings if f.level == "ERROR" and f.setting == JOINT_SETTING}


def draw_scene_joints(layout, scene, settings) -> None:
    """Bake panel: how many constraints the bake honours, by type; how many it refuses (from the last Check
    Scene) or ignores (disabled ones; all of them with the Soft and IPC engines). Nothing without constraints."""
    objects = constraint_objects(scene)
    if not objects:
        return
    enabled = [o for o in objects if o.rigid_body_constraint.enabled]
    disabled = len(objects) - len(enabled)
    col = layout.column(align=True)
    if settings.engine != "RIGID":
        if not enabled:
            return
        col.label(
            text=f"{len(enabled)} rigid body constraint(s) ignored: the {type_label(settings.engine)} engine has no "
            "joints (bake with the Rigid engine)",
            icon="ERROR",
        )
        return
    refused = refused_names(settings)
    honoured = [o for o in enabled if refused is None or o.name not in refused]
    counts = type_counts(str(o.rigid_body_constraint.type) for o in honoured)
    col.label(text=f"Joints: {len(honoured)} ({types_text(counts)})" if honoured else "Joints: none", icon="CONSTRAINT")
    if refused:
        col.label(text=f"{len(refused)} refused: see Check Scene below for each and its fix", icon="CANCEL")
    elif refused is None:
        col.label(text=CHECK_HINT, icon="INFO")
    if disabled:
        col.label(text=f"{disabled} disabled (Rigid Body Constraint ▸ Enabled off): not baked", icon="INFO")


def _number(value, default: float = 0.0) -> float:
    """A report number as a float (anything else, or NaN, gives ``default``)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return default
    return out if math.isfinite(out) else default


def broken_lines(broken: list, limit: int = MAX_BROKEN_LINES) -> list[str]:
    """Panel lines for the report's broken joints: ``"'Joint.003' broke at frame 37"``, then how many more."""
    shown = [b for b in broken[:limit] if isinstance(b, dict)]
    out = [f"'{b.get('name', '?')}' broke at frame {b.get('frame', '?')}" for b in shown]
    if len(broken) > limit:
        out.append(f"and {len(broken) - limit} more broken joint(s) in the report")
    return out


def draw_report_joints(col, report: dict) -> None:
    """The report's ``joints`` field (a Rigid bake with joints): count by type, largest error, broken ones."""
    joints = report.get("joints")
    if not isinstance(joints, dict):
        return
    by_type = joints.get("by_type", {})
    by_type = by_type if isinstance(by_type, dict) else {}
    col.label(text=f"Joints: {joints.get('count', 0)} ({types_text(by_type)})")
    error = _number(joints.get("max_error_linear")) * 1000.0
    angle = math.degrees(_number(joints.get("max_error_angular")))
    col.label(text=f"Largest joint error: {error:.3g} mm, {angle:.3g}° (frame {joints.get('max_error_frame', '?')})")
    broken = joints.get("broken", [])
    broken = broken if isinstance(broken, list) else []
    col.label(text=f"Broken joints: {len(broken)}", icon="ERROR" if broken else "NONE")
    for line in broken_lines(broken):
        col.label(text=line, icon="BLANK1")


def body_joints(obj, scene) -> list:
    """The constraint objects of ``scene`` that join ``obj`` (as Object 1 or Object 2), by name."""
    out = []
    for c_obj in constraint_objects(scene):
        c = c_obj.rigid_body_constraint
        if obj in (c.object1, c.object2):
            out.append(c_obj)
    return sorted(out, key=lambda o: o.name)


def draw_body_joints(layout, obj, scene, report: dict | None) -> None:
    """Body panel: how many joints ``obj`` has, by type, and which of them broke in the last bake."""
    joints = body_joints(obj, scene)
    if not joints:
        return
    counts = type_counts(str(j.rigid_body_constraint.type) for j in joints)
    col = layout.column(align=True)
    col.label(text=f"Joints: {len(joints)} ({types_text(counts)})", icon="CONSTRAINT")
    entries = (report or {}).get("joints", {})
    broken = entries.get("broken", []) if isinstance(entries, dict) else []
    names = {j.name for j in joints}
    mine = [b for b in broken if isinstance(b, dict) and b.get("name") in names] if isinstance(broken, list) else []
    for line in broken_lines(mine):
        col.label(text=f"Last bake: {line}", icon="ERROR")
