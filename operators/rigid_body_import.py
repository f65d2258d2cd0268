"""Import Blender Rigid Bodies: a thin wrapper around :func:`..addon.rigid.rigid_body_import.import_rigid_body`.

``bpy.ops.contact_lab.import_rigid_body()`` converts every object's Blender rigid body into Contact Lab settings,
mutes Blender's rigid body world (nothing is deleted) and reports what could not be carried over: the summary as
INFO, every object's lost settings as a WARNING, and the whole report as JSON in
``scene.contact_lab.last_import_report`` for scripts. One undo step undoes it.
"""

# Blender declares an operator's properties as class annotations holding a call (``name: BoolProperty(...)``) and
# reads them at registration; a call is no type, so the checker's rule for type expressions is off in this file.
# pyright: reportInvalidTypeForm=false

import json
from typing import TYPE_CHECKING

import bpy

from ..addon.errors import BakeError
from ..addon.rigid.rigid_body_import import import_rigid_body, report_messages

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems  # in the stubs only, never at run time


class CONTACT_LAB_OT_import_rigid_body(bpy.types.Operator):
    """Convert the scene's Blender rigid bodies (type, shape, mass, friction, bounciness, damping, world steps) into
    Contact Lab settings and mute Blender's rigid body world so it does not simulate them too"""

    bl_idname = "contact_lab.import_rigid_body"
    bl_label = "Import Blender Rigid Bodies"
    bl_options = {"REGISTER", "UNDO"}

    mute_blender_world: bpy.props.BoolProperty(
        name="Mute Blender's World",
        description=(
            "Untick Scene ▸ Rigid Body World so Blender does not simulate the objects a second time over the "
            "baked keyframes (its settings are kept; tick it again to go back)"
        ),
        default=True,
    )

    @classmethod
    def poll(cls, context):
        scene = context.scene
        if scene is None or not hasattr(scene, "contact_lab"):
            return False
        world = getattr(scene, "rigidbody_world", None)  # Blender keeps every rigid body in its world's collection
        if world is None or world.collection is None or not len(world.collection.objects):
            cls.poll_message_set("No object in the scene has a Blender rigid body")
            return False
        return True

    def execute(self, context) -> "set[OperatorReturnItems]":
        scene = context.scene
        try:
            report = import_rigid_body(scene, mute_blender_world=self.mute_blender_world)
        except BakeError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        # Scene.contact_lab is registered at run time (registration.py), so the stubs do not know it
        scene.contact_lab.last_import_report = json.dumps(report)  # pyright: ignore[reportAttributeAccessIssue]
        for level, text in report_messages(report):
            self.report({level}, text)
        return {"FINISHED"}


CLASSES = (CONTACT_LAB_OT_import_rigid_body,)
