"""Panels in the Properties editor: bake settings and report in the Scene tab (shown with or without an active
object, as Blender's Rigid Body World), body settings in the Physics tab (the active object's). Draw only."""

import json
from typing import Literal

import bpy

from ..addon.properties import COMBINE_PHRASES, RIGID_ONLY_SHAPES
from ..addon.scene import compound_parent, shape_label
from ..addon.warmup import jitcache, warmup
from .joints import draw_body_joints, draw_report_joints, draw_scene_joints


class _PhysicsTab:
    """Where the object's Contact Lab panel sits: Properties editor ▸ Physics tab (a mixin, as Blender's own UI
    does). Blender shows that tab only while an object is active."""

    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"


class _ScenePanel:
    """A panel of the scene's Contact Lab settings: Properties editor ▸ Scene tab, which Blender shows with or
    without an active object (the Physics tab needs one); shown while the scene has the settings."""

    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "scene"

    @classmethod
    def poll(cls, context):
        return context.scene is not None and hasattr(context.scene, "contact_lab")


class CONTACT_LAB_PT_scene(_ScenePanel, bpy.types.Panel):
    """Bake settings, Bake / Clear Bake buttons, progress and the last report"""

    bl_label = "Contact Lab Bake"
    bl_idname = "CONTACT_LAB_PT_scene"

    def draw(self, context):
        layout = self.layout
        assert layout is not None  # Blender sets it while drawing
        layout.use_property_split = True
        layout.use_property_decorate = False
        # contact_lab is registered at run time (registration.py): the stubs do not know it
        settings = context.scene.contact_lab  # pyright: ignore[reportAttributeAccessIssue]

        col = layout.column(align=True)
        col.prop(settings, "use_scene_frame_range")
        sub = col.column(align=True)
        sub.active = not settings.use_scene_frame_range
        sub.prop(settings, "frame_start", text="Frame Start")
        sub.prop(settings, "frame_end", text="End")

        layout.prop(settings, "engine")
        col = layout.column()
        if settings.engine in ("SOFT", "IPC"):
            col.prop(settings, "soft_output")
            if settings.soft_output == "PC2":
                col.prop(settings, "soft_cache_dir")
                if settings.soft_cache_dir.startswith("//") and not bpy.data.filepath:
                    col.label(text="Save the .blend file first (relative folder)", icon="ERROR")
        if settings.engine == "IPC":
            col.prop(settings, "soft_substeps")
            box = col.box()
            box.label(text="IPC", icon="MOD_PHYSICS")
            sub = box.column()
            sub.prop(settings, "ipc_dhat")
            sub.prop(settings, "ipc_kappa", text="Barrier Stiffness (Pa/m)")
            sub.prop(settings, "ipc_eps_v", text="IPC Static Friction Speed (m/s)")
            sub.prop(settings, "ipc_tolerance")
            sub.prop(settings, "ipc_max_iterations")
            sub.prop(settings, "check_intersections")
        elif settings.engine == "SOFT":
            col.prop(settings, "soft_contact")
            if settings.soft_contact == "DUAL":
                col.prop(settings, "solver")
            else:
                col.prop(settings, "soft_integrator")
            col.prop(settings, "soft_substeps")
            col.prop(settings, "soft_contact_thickness")
            if settings.soft_contact != "DUAL":  # the DUAL formulation's Coulomb friction sticks exactly
                col.prop(settings, "soft_friction_velocity", text="Static Friction Speed (m/s)")
        else:
            col.prop(settings, "substeps")
            col.prop(settings, "solver")
            col.prop(settings, "iterations")
            col.prop(settings, "tolerance")
            col.prop(settings, "shock_propagation")
            col.prop(settings, "merit_history")
            col.prop(settings, "sleeping")
            if settings.sleeping:
                sub = col.column(align=True)
                sub.prop(settings, "sleep_time")
                sub.prop(settings, "sleep_linear_speed")
                sub.prop(settings, "sleep_angular_speed")
            col.prop(settings, "friction_combine")
            col.prop(settings, "restitution_combine")

        draw_scene_joints(layout, context.scene, settings)
        _draw_blender_world(layout, context.scene)

        row = layout.row(align=True)
        row.scale_y = 1.3
        row.enabled = not settings.is_baking
        row.operator("contact_lab.bake", text="Bake", icon="PHYSICS")
        row.operator("contact_lab.clear_bake", text="Clear Bake", icon="TRASH")

        if settings.is_baking:
            text = settings.bake_status or "Baking…"
            if hasattr(layout, "progress"):
                layout.progress(factor=settings.bake_progress, type="BAR", text=f"{text} — Esc to cancel")
            else:
                layout.label(text=f"{text} ({settings.bake_progress:.0%})")
        _draw_warmup(layout)
        _draw_report(layout, settings.last_report)


def _draw_warmup(layout) -> None:
    """The background compile of the solvers (:mod:`..addon.warmup.warmup`): its progress, a failure, or nothing."""
    state = warmup.status()
    if state.state == "running":
        text = state.text()
        if hasattr(layout, "progress") and state.total:
            layout.progress(factor=state.done / state.total, type="BAR", text=text)
        else:
            layout.label(text=text, icon="TIME")
    elif state.state == "failed":
        layout.label(text=state.text(), icon="ERROR")
        layout.operator("contact_lab.warm_up", text="Compile Solvers Again", icon="FILE_REFRESH")
    elif jitcache.configured_dir() and state.state == "idle" and warmup.stamp() is None:
        layout.operator("contact_lab.warm_up", text="Compile Solvers Now", icon="PREFERENCES")


def _draw_blender_world(layout, scene) -> None:
    """The Import button when the scene has Blender's rigid body world, and a warning while that world is on."""
    world = getattr(scene, "rigidbody_world", None)
    if world is None:
        return
    if world.enabled and world.collection is not None and len(world.collection.objects):
        layout.label(text="Blender's rigid body world is on: it also simulates its objects", icon="ERROR")
    layout.operator("contact_lab.import_rigid_body", icon="IMPORT")


def _json_object(text: str) -> dict | None:
    """The JSON object stored in a text property; None for an empty text, anything unreadable or any other JSON
    value (a list, a number, null: a .blend written by something else must not make every redraw raise)."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _draw_report(layout, text: str) -> None:
    if not text:
        return
    report = _json_object(text)
    try:
        if report is not None:
            _draw_report_box(layout, report)
            return
    except (AttributeError, TypeError, ValueError, KeyError, IndexError):  # fields of the wrong type
        pass
    layout.label(text="Last report is unreadable: bake again to replace it", icon="ERROR")


def _draw_report_box(layout, report: dict) -> None:
    box = layout.box()
    status = report.get("status", "?")
    icon = "CHECKMARK" if status == "FINISHED" else "ERROR"
    frames = report.get("frames", {})
    box.label(text=f"Last bake: {status.lower()}", icon=icon)
    if report.get("error"):
        box.label(text=report["error"])
    stats = report.get("stats", {})
    timings = report.get("timings", {})
    col = box.column(align=True)
    col.label(
        text=f"Frames: {frames.get('start', '?')}-{frames.get('end', '?')} ({frames.get('simulated', 0)} simulated)"
    )
    if report.get("engine") == "SOFT":
        col.label(
            text=f"Tets: {stats.get('tets', 0)}, lattice vertices: {stats.get('vertices', 0)}, "
            f"mesh vertices: {stats.get('render_vertices', 0)}"
        )
        col.label(
            text=f"Solver iterations per step: most {stats.get('max_newton_iterations', 0)}, "
            f"mean {stats.get('mean_newton_iterations', 0.0):.1f}"
        )
        col.label(text=f"Deepest overlap: {stats.get('max_penetration', 0.0) * 1000.0:.3g} mm")
        col.label(text=f"Time per frame: {stats.get('seconds_per_frame', 0.0):.2f} s")
        _draw_warnings(box, report)
    elif report.get("engine") == "IPC":
        _draw_ipc_report(box, col, report)
    else:
        col.label(text=f"Most contacts at once: {stats.get('max_contacts', 0)}")
        if stats.get("contact_overflow"):
            col.label(text=f"Contacts over the limit (ignored): {stats['contact_overflow']}", icon="ERROR")
        col.label(text=f"Most solver iterations in a step: {stats.get('max_iterations', 0)}")
        col.label(text=f"Largest impulse change left at a step's end: {stats.get('max_residual', 0.0):.3g} N·s")
        col.label(text=f"Deepest overlap: {stats.get('max_penetration', 0.0) * 1000.0:.3g} mm")
        if stats.get("sleeping_at_end"):
            col.label(text=f"Asleep at the end: {stats['sleeping_at_end']} bodies")
        draw_report_joints(col, report)
        _draw_warnings(box, report)
    total = timings.get("total", sum(timings.values()) if timings else 0.0)
    col.label(text=f"Time: {total:.2f} s")
    if report.get("compiled_kernels"):
        col.label(text=f"Solver kernels compiled: {report['compiled_kernels']} (first use only; later bakes skip it)")


BAKE_HINT = "Bake in Properties ▸ Scene ▸ Contact Lab Bake"
"""Where the Bake button is, under a body's settings (the bake panel is in another tab)."""


class CONTACT_LAB_PT_object(_PhysicsTab, bpy.types.Panel):
    """The active object's Contact Lab role, shape and material"""

    bl_label = "Contact Lab Body"
    bl_idname = "CONTACT_LAB_PT_object"

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and hasattr(obj, "contact_lab")

    def draw(self, context):
        layout = self.layout
        assert layout is not None  # Blender sets it while drawing
        layout.use_property_split = True
        layout.use_property_decorate = False
        obj = context.object
        assert obj is not None  # poll()
        # contact_lab is registered at run time (registration.py): the stubs do not know it
        settings = obj.contact_lab  # pyright: ignore[reportAttributeAccessIssue]
        scene_settings = context.scene.contact_lab  # pyright: ignore[reportAttributeAccessIssue]
        layout.prop(settings, "role")
        if settings.role == "SOFT":
            _draw_soft(layout, context, obj)
            layout.label(text=BAKE_HINT, icon="INFO")
            return
        parent = compound_parent(obj)
        if parent is not None:
            _draw_part(layout, obj, parent)
            return
        col = layout.column()
        col.active = settings.role != "NONE"
        col.prop(settings, "shape")
        if settings.shape == "COMPOUND":
            parts = [c for c in obj.children if compound_parent(c) is obj]
            if parts:
                col.label(text=f"{len(parts)} part(s): " + ", ".join(p.name for p in parts[:4]), icon="OUTLINER")
            elif settings.role != "NONE":
                col.label(text="No parts: give children a Role (Active or Passive)", icon="ERROR")
        sub = col.column()
        sub.active = settings.role == "ACTIVE"
        sub.prop(settings, "mass")
        col.prop(settings, "friction")
        col.prop(settings, "restitution")
        sub = col.column(align=True)
        sub.active = settings.role == "ACTIVE"
        sub.prop(settings, "linear_damping", text="Damping Translation")
        sub.prop(settings, "angular_damping", text="Rotation")
        sub = col.column()
        sub.active = settings.role == "ACTIVE"
        sub.prop(settings, "initial_velocity")
        rules = col.column(align=True)
        rules.label(
            text=f"Pair friction: {COMBINE_PHRASES[scene_settings.friction_combine]} (scene's Friction Combine)"
        )
        rules.label(
            text=f"Pair restitution: {COMBINE_PHRASES[scene_settings.restitution_combine]} "
            "(scene's Restitution Combine)"
        )
        for message in _shape_warnings(obj, scene_settings.engine):
            col.label(text=message, icon="ERROR")
        if settings.role == "ACTIVE" and settings.mass <= 0.0:
            col.label(text="Mass must be positive", icon="ERROR")
        if settings.baked_action is not None:
            col.label(text=f"Baked into '{settings.baked_action.name}'", icon="ACTION")
        draw_body_joints(layout, obj, context.scene, _json_object(scene_settings.last_report))
        _draw_friction(layout, context, obj)
        if settings.role != "NONE":
            layout.label(text=BAKE_HINT, icon="INFO")


def _draw_part(layout, obj, parent) -> None:
    """A part of a Compound Parent: only its Shape matters; everything else is the parent's."""
    settings = obj.contact_lab
    col = layout.column()
    col.prop(settings, "shape")
    col.label(text=f"Part of the Compound Parent '{parent.name}'", icon="OUTLINER")
    col.label(text="Mass, friction, bounciness and motion are the parent's")
    if settings.shape in ("PLANE", "MESH", "COMPOUND"):
        col.label(text=f"A part cannot be a {shape_label(settings.shape)}", icon="ERROR")
    elif settings.shape == "CONVEX_HULL" and obj.type != "MESH":
        col.label(text="A Convex Hull needs a mesh object", icon="ERROR")


def _shape_warnings(obj, engine: str) -> list[str]:
    """What the bake would refuse about the object's Shape, as short panel lines."""
    settings = obj.contact_lab
    shape, role = settings.shape, settings.role
    if role == "NONE":
        return []
    out = []
    label = shape_label(shape)
    if role == "ACTIVE" and shape == "PLANE":
        out.append("A plane can only be Passive")
    if shape in ("CONVEX_HULL", "MESH") and obj.type != "MESH":
        out.append(f"The {label} shape needs a mesh object")
    if shape in RIGID_ONLY_SHAPES and engine != "RIGID":
        out.append(f"The {label} shape needs the scene's Engine set to Rigid")
    if shape == "MESH" and engine == "SOFT":
        out.append("The Mesh shape needs the Rigid or IPC engine")
    elif shape == "MESH" and engine == "IPC" and role == "ACTIVE":
        out.append("An active Mesh needs the scene's Engine set to Rigid")
    return out


def _draw_ipc_report(box, col, report: dict) -> None:
    """Report lines of an IPC bake: sizes, Newton iterations, closest distance vs dhat, barrier, checker."""
    stats = report.get("stats", {})
    settings = report.get("settings", {})
    col.label(
        text=f"Tets: {stats.get('tets', 0)}, lattice vertices: {stats.get('vertices', 0)}, "
        f"mesh vertices: {stats.get('render_vertices', 0)}"
    )
    col.label(
        text=f"Solver iterations per step: most {stats.get('max_newton_iterations', 0)}, "
        f"mean {stats.get('mean_newton_iterations', 0.0):.1f} ({stats.get('unconverged_frames', 0)} frames not "
        "converged)"
    )
    dhat = settings.get("dhat", 0.0) * 1000.0
    closest = stats.get("min_distance")
    closest_text = "no contact" if closest is None else f"{closest * 1000.0:.3g} mm"
    automatic = " (automatic)" if settings.get("dhat_automatic") else ""
    col.label(text=f"Closest distance: {closest_text}, barrier distance {dhat:.3g} mm{automatic}")
    col.label(
        text=f"Most contacts at once: {stats.get('max_contacts', 0)}, stiffest barrier used: "
        f"{stats.get('max_kappa', 0.0):.3g} Pa/m"
    )
    if "intersections" in stats:
        found = stats["intersections"] + stats.get("inverted", 0)
        col.label(
            text=f"Intersection check: {stats['intersections']} surfaces passing through, "
            f"{stats.get('inverted', 0)} tets turned inside out, in {stats.get('checked_frames', 0)} frames",
            icon="ERROR" if found else "CHECKMARK",
        )
    col.label(text=f"Time per frame: {stats.get('seconds_per_frame', 0.0):.2f} s")
    _draw_warnings(box, report)


MAX_REPORT_WARNINGS = 3
"""Warnings of the last bake listed in the panel."""


def _draw_warnings(box, report: dict) -> None:
    """The report's first warnings (the validation's, the engine's, frames that did not converge)."""
    warnings = report.get("warnings", [])
    for warning in warnings[:MAX_REPORT_WARNINGS]:
        box.label(text=str(warning), icon="ERROR")
    if len(warnings) > MAX_REPORT_WARNINGS:
        box.label(text=f"and {len(warnings) - MAX_REPORT_WARNINGS} more warning(s) in the report")


def _draw_soft(layout, context, obj) -> None:
    """The Soft role: material preset, raw material values, pin group, lattice resolution, warnings."""
    settings = obj.contact_lab
    if context.scene.contact_lab.engine not in ("SOFT", "IPC"):
        layout.label(text="Set the scene's Engine to Soft or IPC to bake soft bodies", icon="INFO")
    if obj.type != "MESH":
        layout.label(text="A soft body must be a mesh object", icon="ERROR")
        return
    col = layout.column()
    col.prop(settings, "soft_preset")
    sub = col.column(align=True)
    sub.prop(settings, "youngs_modulus", text="Young's Modulus (Pa)")
    sub.prop(settings, "poisson_ratio")
    sub.prop(settings, "density", text="Density (kg/m³)")
    sub.prop(settings, "damping", text="Damping (s)")
    sub.prop(settings, "friction")
    if not 0.0 <= settings.poisson_ratio < 0.5:
        col.label(text="Poisson ratio must be in [0, 0.5)", icon="ERROR")
    if settings.youngs_modulus <= 0.0 or settings.density <= 0.0:
        col.label(text="Young's modulus and density must be positive", icon="ERROR")
    col.separator()
    col.prop_search(settings, "pin_group", obj, "vertex_groups")
    if settings.pin_group and obj.vertex_groups.get(settings.pin_group) is None:
        col.label(text=f"No vertex group '{settings.pin_group}'", icon="ERROR")
    col.prop(settings, "lattice_resolution")
    col.prop(settings, "lattice_fit")
    if context.scene.contact_lab.engine == "IPC":
        col.prop(settings, "ipc_surface")
    col.prop(settings, "initial_velocity")
    row = col.row(align=True)
    row.prop(settings, "volume_compressibility", text="Volume Compressibility (1/atm)")
    sub = row.row(align=True)
    sub.active = settings.volume_compressibility > 0.0
    sub.prop(settings, "volume_law", text="")
    from ..addon.output.deform import deform_output_kind

    baked = deform_output_kind(obj)
    if baked == "SHAPE_KEYS":
        col.label(text="Baked into shape keys", icon="SHAPEKEY_DATA")
    elif baked == "PC2":
        col.label(text="Baked into a PC2 cache (Mesh Cache modifier)", icon="MOD_MESHDEFORM")


def _draw_friction(layout, context, obj) -> None:
    """The "Friction" sub-section: model, coefficients, structure field, normal map, warnings, preview."""
    from ..addon.friction import export as friction_export

    settings = obj.contact_lab
    model = settings.friction_model
    box = layout.box()
    box.active = settings.role != "NONE"
    box.label(text="Friction", icon="MOD_PHYSICS")
    col = box.column()
    col.prop(settings, "friction_model")
    if model in {"ANISOTROPIC", "MATCHSTICK"}:
        sub = col.column(align=True)
        sub.prop(settings, "friction_t")
        sub.prop(settings, "friction_b")
    elif model == "TENSOR":
        sub = col.column(align=True)
        sub.prop(settings, "friction_kappa")
        sub.prop(settings, "friction_tensor", index=0, text="Q_tt")
        sub.prop(settings, "friction_tensor", index=1, text="Q_tb")
        sub.prop(settings, "friction_tensor", index=2, text="Q_bb")
    col.prop(settings, "friction_spin")

    if model in friction_export.STRUCTURE_MODELS:
        col.separator()
        col.prop(settings, "structure_source")
        source = settings.structure_source
        if source == "ATTRIBUTE":
            if obj.type == "MESH":
                col.prop_search(settings, "structure_attribute", obj.data, "attributes", text="Attribute")
            else:
                col.prop(settings, "structure_attribute")
        elif source == "IMAGE":
            col.template_ID(settings, "structure_image", open="image.open")
        elif source == "AXIS":
            col.row().prop(settings, "structure_axis", expand=True)

    if model == "TEXTURE":
        col.separator()
        col.template_ID(settings, "normal_map", open="image.open")
        found = friction_export.find_normal_map(obj) if settings.normal_map is None else None
        if found is not None:
            col.label(text=f"From material: {found.image.name} ({found.material})", icon="NODE_MATERIAL")
        col.prop(settings, "normal_map_directx")
        if found is not None:
            col.label(text=f"Strength: {found.strength:g} (Normal Map node '{found.node}')")
        else:
            col.prop(settings, "normal_map_strength")
        col.prop(settings, "texture_patch_size")
    if friction_export.needs_uv(settings):
        if obj.type == "MESH":
            col.prop_search(settings, "uv_map", obj.data, "uv_layers", text="UV Map")
        else:
            col.prop(settings, "uv_map")

    # the view layer's depsgraph as it is (no evaluation from a draw callback): attributes made by modifiers
    view_layer = getattr(context, "view_layer", None)
    depsgraph = getattr(view_layer, "depsgraph", None)
    for message in friction_export.friction_warnings(obj, depsgraph):
        box.label(text=message, icon="ERROR")
    box.operator("contact_lab.preview_friction", icon="COLOR")


class CONTACT_LAB_PT_check(_ScenePanel, bpy.types.Panel):
    """Check Scene: the last check's errors, warnings and notes, each naming the object and what to change"""

    bl_label = "Check Scene"
    bl_idname = "CONTACT_LAB_PT_check"
    bl_parent_id = "CONTACT_LAB_PT_scene"

    def draw_header(self, context):
        # contact_lab is registered at run time (registration.py): the stubs do not know it
        counts = _check_counts(context.scene.contact_lab.last_validation)  # pyright: ignore[reportAttributeAccessIssue]
        layout = self.layout
        assert layout is not None  # Blender sets it while drawing
        if counts:
            layout.label(icon=_check_icon(counts))

    def draw(self, context):
        # contact_lab is registered at run time (registration.py): the stubs do not know it
        draw_check(self.layout, context.scene.contact_lab)  # pyright: ignore[reportAttributeAccessIssue]


MAX_FINDING_LINES = 8
"""Findings listed in the panel; the rest are counted ("and N more")."""

FINDING_ICONS: dict[str, Literal["CANCEL", "ERROR", "INFO"]] = {"ERROR": "CANCEL", "WARNING": "ERROR", "INFO": "INFO"}


def _check_counts(text: str) -> dict:
    counts = (_json_object(text) or {}).get("counts", {})
    return counts if isinstance(counts, dict) else {}


def _check_icon(counts: dict) -> Literal["CANCEL", "ERROR", "INFO", "CHECKMARK"]:
    if counts.get("ERROR"):
        return FINDING_ICONS["ERROR"]
    return FINDING_ICONS["WARNING"] if counts.get("WARNING") else "CHECKMARK"


def draw_check(layout, settings) -> None:
    """The Check Scene button and the last check's findings: an icon per level, the message naming the object,
    the fix below it; at most :data:`MAX_FINDING_LINES`, then how many more."""
    from ..addon.checks import validate

    layout.operator("contact_lab.validate", text="Check Scene", icon="VIEWZOOM")
    text = settings.last_validation
    if not text:
        layout.label(text="Not checked yet (every bake checks first)")
        return
    data = _json_object(text)
    try:
        counts, findings = validate.from_json(text) if data is not None else ({}, [])
        counts = counts if isinstance(counts, dict) else {}
    except (AttributeError, TypeError, ValueError):  # findings of the wrong shape
        counts, findings = {}, []
    if data is None or (data.get("findings") and not findings):
        layout.label(text="The last check is unreadable: check again", icon="ERROR")
        return
    engine = _check_engine(text)
    if engine and engine != settings.engine:
        layout.label(text=f"Checked for the {engine.title()} engine: check again", icon="FILE_REFRESH")
    if not findings:
        layout.label(text="No problems found", icon="CHECKMARK")
        return
    parts = [f"{counts.get(level, 0)} {level.lower()}(s)" for level in validate.LEVELS if counts.get(level)]
    layout.label(text=", ".join(parts))
    col = layout.column(align=True)
    for finding in findings[:MAX_FINDING_LINES]:
        col.label(text=str(finding.message), icon=FINDING_ICONS.get(str(finding.level), "INFO"))
        if finding.fix:
            col.label(text=str(finding.fix), icon="BLANK1")
    if len(findings) > MAX_FINDING_LINES:
        col.label(text=f"and {len(findings) - MAX_FINDING_LINES} more")


def _check_engine(text: str) -> str:
    return str((_json_object(text) or {}).get("engine", ""))


CLASSES = (CONTACT_LAB_PT_scene, CONTACT_LAB_PT_check, CONTACT_LAB_PT_object)
