"""Check Scene (and so every bake's report) for the Soft and IPC engines: they have no joints, so Blender's Rigid
Body Constraints in the scene do nothing in their bakes. One WARNING names the constraint objects and the fix (bake
with the Rigid engine); disabled constraints are left out, as the Rigid engine leaves them out."""

from __future__ import annotations

from ..rigid.joints import constraint_objects
from .findings import Finding, SceneView, warning

MAX_NAMED = 5
"""Constraint objects named in the warning; the rest are counted."""

SETTING = "scene.contact_lab.engine"
"""The setting the fix changes (Properties ▸ Scene ▸ Contact Lab Bake ▸ Engine)."""


def findings(view: SceneView) -> list[Finding]:
    """One WARNING when the engine is Soft or IPC and the scene has enabled Rigid Body Constraints; else []."""
    if view.engine not in ("SOFT", "IPC"):
        return []
    names = [o.name for o in constraint_objects(view.scene) if o.rigid_body_constraint.enabled]
    if not names:
        return []
    listed = ", ".join(f"'{n}'" for n in names[:MAX_NAMED])
    more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
    engine = view.engine.title() if view.engine == "SOFT" else view.engine
    message = (
        f"{len(names)} rigid body constraint(s) ({listed}{more}) are ignored: the {engine} engine has no joints, "
        "so the objects they join move as if unjoined"
    )
    fix = "bake with the Rigid engine (Properties ▸ Scene ▸ Contact Lab Bake ▸ Engine) to honour them"
    return [warning(names[0], message, fix, SETTING)]
