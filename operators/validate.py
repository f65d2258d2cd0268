"""Check Scene: ``bpy.ops.contact_lab.validate()`` runs :func:`..addon.checks.validate.validate_scene`.

The findings are stored as JSON on ``scene.contact_lab.last_validation`` (the panel lists them) and summed up in
one line. The operator reports WARNING when something is wrong and INFO otherwise, never ERROR: the check itself
succeeded, and an ERROR report would make ``bpy.ops`` raise in scripts. Scripts read the JSON (or call
``validate_scene`` directly) for the details.
"""

from typing import TYPE_CHECKING

import bpy

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems  # in the stubs only, never at run time


class CONTACT_LAB_OT_validate(bpy.types.Operator):
    """Check the scene before baking: errors that would stop the bake and warnings about results that would look
    wrong, each naming the object and what to change"""

    bl_idname = "contact_lab.validate"
    bl_label = "Check Scene"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and hasattr(context.scene, "contact_lab")

    def execute(self, context) -> "set[OperatorReturnItems]":
        from ..addon.checks import validate

        scene = context.scene
        findings = validate.validate_scene(scene)
        # Scene.contact_lab is registered at run time (registration.py), so the stubs do not know it
        validate.store(scene, findings, str(scene.contact_lab.engine))  # pyright: ignore[reportAttributeAccessIssue]
        level, text = validate.summary(findings)
        self.report({level}, text)
        return {"FINISHED"}


CLASSES = (CONTACT_LAB_OT_validate,)
