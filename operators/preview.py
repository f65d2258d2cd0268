"""Preview Friction: colour the active mesh by the friction its surface gives in one sliding direction.

``bpy.ops.contact_lab.preview_friction(direction=(x, y, z))`` evaluates the object's friction inputs (exactly
what a bake exports, :mod:`..addon.friction_export`) with the core's map
(``core.friction.texture.surface_friction_map``) at every vertex of the object's base mesh and writes the
coefficients as a colour ramp into a POINT / FLOAT_COLOR attribute (default ``contact_lab_friction``),
made the active colour attribute: Solid viewport ▸ Color ▸ Attribute shows it. Blue = the lowest
coefficient on the mesh, red = the highest; the range is reported.

``direction`` is the direction in which the *other* surface slides over this one, in the object's local
axes; at every point the core projects it onto the surface's tangent plane.
"""

import bpy
import numpy as np

ATTRIBUTE_NAME = "contact_lab_friction"
"""Default name of the colour attribute written by the preview."""

RAMP = np.array(
    [
        (0.0, 0.0, 1.0),  # low: blue
        (0.0, 1.0, 1.0),
        (0.0, 1.0, 0.0),
        (1.0, 1.0, 0.0),
        (1.0, 0.0, 0.0),  # high: red
    ]
)
"""Colour stops (linear RGB) from the lowest to the highest coefficient."""


def friction_colors(values: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Map coefficients (N,) to RGBA (N, 4) on the blue → red ramp; returns ``(rgba, min, max)``.

    A constant map (max = min) is drawn in the middle of the ramp (green).
    """
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 0.0
    t = np.full(values.shape, 0.5) if hi <= lo else (values - lo) / (hi - lo)
    t = np.clip(np.nan_to_num(t, nan=0.0), 0.0, 1.0)
    stops = np.linspace(0.0, 1.0, len(RAMP))
    rgba = np.ones((values.shape[0], 4))
    for c in range(3):
        rgba[:, c] = np.interp(t, stops, RAMP[:, c])
    return rgba, lo, hi


def write_color_attribute(mesh, name: str, rgba: np.ndarray):
    """Write RGBA (V, 4) into a POINT / FLOAT_COLOR attribute ``name`` (replacing another of that name) and
    make it the active colour attribute. Returns the attribute."""
    attr = mesh.attributes.get(name)
    if attr is not None and (attr.data_type != "FLOAT_COLOR" or attr.domain != "POINT"):
        mesh.attributes.remove(attr)
        attr = None
    if attr is None:
        attr = mesh.color_attributes.new(name, "FLOAT_COLOR", "POINT")
    attr.data.foreach_set("color", np.ascontiguousarray(rgba, dtype=np.float32).ravel())
    mesh.color_attributes.active_color = attr
    mesh.update()
    return attr


def preview_values(obj, direction, depsgraph, length_scale: float) -> np.ndarray:
    """Friction coefficient (V,) at every vertex of ``obj``'s base mesh for sliding along ``direction``.

    Args:
        direction: sliding direction of the other surface, object axes (3,).
        depsgraph: evaluated depsgraph (the surface is read from the evaluated mesh, as in a bake).
        length_scale: metres per Blender unit.

    Raises:
        ValueError: fatal friction-input problems (message lists them). ImportError: the core lookup is missing.
    """
    from ..addon import friction_export
    from ..core.friction import lookup, texture

    fatal = [i.message for i in friction_export.friction_issues(obj, depsgraph) if i.fatal]
    if fatal:
        raise ValueError("; ".join(fatal))
    centre, scale = friction_export.shape_frame(obj)
    surface = friction_export.surface_friction(
        obj, depsgraph=depsgraph, centre_local=centre, scale=scale, length_scale=length_scale
    )
    pool = lookup.pack_surfaces([surface])
    mesh = obj.data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    points = scale * (co.reshape(-1, 3).astype(np.float64) - centre) * length_scale
    d = scale * np.asarray(direction, dtype=np.float64)
    norm = np.linalg.norm(d)
    if not norm > 0.0:
        raise ValueError("the direction must not be zero")
    return np.asarray(texture.surface_friction_map(pool, 0, points, d / norm), dtype=np.float64)


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

    def execute(self, context):
        from ..addon import units

        obj = context.active_object
        try:
            values = preview_values(
                obj, self.direction, context.evaluated_depsgraph_get(), units.length_scale(context.scene)
            )
        except ImportError:
            self.report({"ERROR"}, "The core's friction lookup is not available in this build")
            return {"CANCELLED"}
        except ValueError as exc:
            self.report({"ERROR"}, f"'{obj.name}': {exc}")
            return {"CANCELLED"}
        rgba, lo, hi = friction_colors(values)
        write_color_attribute(obj.data, self.attribute_name, rgba)
        self.report({"INFO"}, f"Friction of '{obj.name}': μ {lo:.3g} (blue) to {hi:.3g} (red)")
        return {"FINISHED"}


CLASSES = (CONTACT_LAB_OT_preview_friction,)
