"""Check Scene's share of the joints: the Rigid Body Constraints the bake refuses (ERROR, the export's own
messages from :func:`..rigid.joints.joint_problems`) and what it does with the constraints Blender would treat
otherwise (WARNING: :func:`..rigid.joints.constraint_warnings`; INFO: :func:`..rigid.joints.joint_notes`).
Rigid engine only: the other engines have no joints."""

from __future__ import annotations

from ..rigid import joints as rigid_joints
from .findings import Finding, SceneView

SETTING = "rigid_body_constraint"
"""The property a joint finding points at (Properties ▸ Physics ▸ Rigid Body Constraint)."""


def findings(view: SceneView) -> list[Finding]:
    """ERROR findings for every constraint the bake refuses, then INFO notes; [] unless the engine is Rigid."""
    if view.engine != "RIGID":
        return []
    out = [Finding("ERROR", name, SETTING, message, "") for name, message in rigid_joints.joint_problems(view.scene)]
    for obj in rigid_joints.constraint_objects(view.scene):
        if obj.rigid_body_constraint.enabled:
            out += [Finding("WARNING", obj.name, SETTING, m, "") for m in rigid_joints.constraint_warnings(obj)]
    out += [Finding("INFO", name, SETTING, message, "") for name, message in rigid_joints.joint_notes(view.scene)]
    return out
