"""Preview Friction: colour the active mesh by the friction its surface gives in one sliding direction.

``bpy.ops.contact_lab.preview_friction(direction=(x, y, z))`` calls one bridge function,
:func:`..addon.friction.preview.preview_friction`, which writes the colour ramp (blue = low, red = high) into
a POINT / FLOAT_COLOR attribute (default ``contact_lab_friction``): Solid viewport ▸ Color ▸ Attribute
shows it. ``direction`` is the direction in which the *other* surface slides over this one, in the
object's local axes.
"""

# Blender declares an operator's properties as class annotations holding a call (``name: BoolProperty(...)``) and
# reads them at registration; a call is no type, so the checker's rule for type expressions is off in this file.
# pyright: reportInvalidTypeForm=false

from typing import TYPE_CHECKING

import bpy

from ..addon.friction.preview import ATTRIBUTE_NAME, friction_colors

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems  # in the stubs only, never at run time

__all__ = ["ATTRIBUTE_NAME", "CLASSES", "CONTACT_LAB_OT_preview_friction", "friction_colors"]
"""``friction_colors`` stays importable here: scripts and tests map values to the preview's colours."""


class CONTACT_LAB_OT_preview_friction(bpy.types.Operator):
    """Colour the active mesh by the friction its surface gives when something slides over it in one direction
    (blue = low, red = high; view with Solid shading ▸ Color ▸ Attribute)"""

    bl_idname = "contact_lab.preview_friction"
    bl_label = "Preview Friction"
    bl_options = {"REGISTER", "UNDO"}

    direction: bpy.props.FloatVectorProperty(
        name="Direction",
        description=(
            "Direction in which the other surface slides over this one, in the object's local axes; "
            "projected onto the surface at every point"
        ),
        size=3,
        default=(1.0, 0.0, 0.0),
        subtype="XYZ",
    )
    attribute_name: bpy.props.StringProperty(
        name="Attribute",
        description="Name of the colour attribute (point domain, float colour) that receives the preview",
        default=ATTRIBUTE_NAME,
    )

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "MESH" or not hasattr(obj, "contact_lab"):
            cls.poll_message_set("Needs an active mesh object")
            return False
        if obj.mode != "OBJECT":
            cls.poll_message_set("Leave Edit Mode first")
            return False
        return True

    def execute(self, context) -> "set[OperatorReturnItems]":
        from ..addon import units
        from ..addon.friction import preview as friction_preview

        obj = context.active_object
        assert obj is not None  # poll() requires an active mesh
        try:
            lo, hi = friction_preview.preview_friction(
                obj,
                self.direction,
                context.evaluated_depsgraph_get(),
                units.length_scale(context.scene),
                self.attribute_name,
            )
        except ImportError:
            self.report({"ERROR"}, "The core's friction lookup is not available in this build")
            return {"CANCELLED"}
        except ValueError as exc:
            self.report({"ERROR"}, f"'{obj.name}': {exc}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Friction of '{obj.name}': μ {lo:.3g} (blue) to {hi:.3g} (red)")
        return {"FINISHED"}


CLASSES = (CONTACT_LAB_OT_preview_friction,)
