"""Blender's rigid body world → Contact Lab settings, in one call (``bpy.ops.contact_lab.import_rigid_body``).

Carried over, for every object of the scene with ``obj.rigid_body``:

- Type → Role: Active → Active; Passive, Animated (``kinematic``) or Dynamic off (``enabled``) → Passive.
- Collision Shape → Shape, same names. A Compound Parent stays one: its children with rigid bodies are its parts
  under Contact Lab's rule too (children with a Role). A flat passive Box or Convex Hull (a ground plane, which
  Blender pads with its collision margin) becomes a Mesh: Contact Lab collides with exact shapes, and a flat box or
  hull has no inside. A Mesh part of a compound becomes a Convex Hull (parts must be convex).
- Mass, Friction, Bounciness → Restitution, Linear and Angular Damping.
- World: Substeps per Frame → Substeps; Solver Iterations → Iterations, only when higher (Blender's is a fixed
  count, Contact Lab's an upper limit that stops at the Tolerance); the part of the cache's frame range inside the
  scene's → the bake range;
  the combine rules → Product for friction and restitution (Bullet multiplies both); the Engine → Rigid. Gravity
  needs nothing: both use the scene's gravity.

- Deactivation → the scene's Sleeping when every active body has it, with the lowest of their speed thresholds
  and Bullet's 2 s deactivation time (Contact Lab sleeps scene-wide, so a mix is reported and Sleeping stays off).
- Collision Collections and Rigid Body Constraints need nothing: the bake reads both from Blender's own settings
  (the constraint objects stay as they are, :mod:`.joints`). Per constraint, the report says what the bake would
  refuse or do otherwise than Blender (a disabled constraint, one outside the world's Constraints collection, a
  Passive side that moves).

Reported as not carried over (per object, and for the world): collision margin, Start Deactivated, the mesh
source when modifiers make it matter, Deforming, animated Dynamic/Animated switches, the world's Speed (time
scale), Split Impulse and effector weights on gravity.

Blender's own settings are left as they were (nothing is removed): its rigid body world is *muted*
(``rigidbody_world.enabled = False``, the checkbox of Scene ▸ Rigid Body World) so that the baked keyframes are
not simulated a second time by Blender; ticking it again brings Blender's simulation back.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .. import units
from ..errors import BakeError
from ..output.keyframes import fcurves_of
from ..scene import local_box, shape_label
from . import joints as rigid_joints

FLAT_TOLERANCE = 1e-6
"""An object whose bounding box is thinner than this fraction of its largest side counts as flat."""

DEFAULT_COLLISION_COLLECTIONS = (True,) + (False,) * 19
"""Blender's default: every rigid body in the first collision collection (all of them collide)."""

ANIMATED_SWITCHES = {"rigid_body.enabled": "Dynamic", "rigid_body.kinematic": "Animated"}

MESH_SOURCES = {"BASE": "Base", "DEFORM": "Deform", "FINAL": "Final"}


def rigid_body_objects(scene) -> list:
    """Objects of ``scene`` with a Blender rigid body, sorted by name."""
    return sorted((o for o in scene.objects if getattr(o, "rigid_body", None) is not None), key=lambda o: o.name)


def import_rigid_body(scene, *, mute_blender_world: bool = True) -> dict:
    """Convert every Blender rigid body of ``scene`` into Contact Lab settings; mute Blender's world.

    Returns:
        A JSON-ready report: ``{"objects": {name: {"settings": {...}, "notes": [...], "not_carried": [...]}},
        "world": {"settings": {...}, "notes": [...], "not_carried": [...]}, "blender_world_muted": bool}``.
        ``settings`` hold the values written; ``notes`` say how something was translated; ``not_carried`` what
        Contact Lab has no equivalent for.

    Raises:
        BakeError: no object has a rigid body (nothing is changed).
    """
    objects = rigid_body_objects(scene)
    if not objects:
        raise BakeError("No object in the scene has a Blender rigid body (Properties ▸ Physics ▸ Rigid Body)")
    compounds = {o.name for o in objects if o.rigid_body.collision_shape == "COMPOUND"}
    report = {"objects": {}, "constraints": {}, "world": None, "blender_world_muted": False}
    for obj in objects:
        report["objects"][obj.name] = _import_object(obj, compounds)
    report["constraints"] = _import_constraints(scene)
    report["world"], report["blender_world_muted"] = _import_world(scene, objects, mute_blender_world)
    return report


def report_messages(report: dict) -> list[tuple[Literal["INFO", "WARNING"], str]]:
    """``(level, text)`` lines for the operator: one summary (INFO), then what could not be carried over (WARNING)."""
    objects = report["objects"]
    parts = [e for e in objects.values() if e.get("part_of")]
    bodies = [e["settings"]["role"] for e in objects.values() if not e.get("part_of")]
    counts = f"{bodies.count('ACTIVE')} active, {bodies.count('PASSIVE')} passive"
    if parts:
        counts += f", {len(parts)} compound part(s)"
    world = "Blender's rigid body world is muted" if report["blender_world_muted"] else "Blender's world left as it was"
    constraints = report.get("constraints", {})
    lost = sum(1 for entry in objects.values() if entry["not_carried"]) + bool(report["world"]["not_carried"])
    lost += sum(1 for entry in constraints.values() if entry["not_carried"])
    summary = f"Imported {len(objects)} Blender rigid bodies ({counts}); {world}"
    if constraints:
        summary += f"; {len(constraints)} rigid body constraint(s) are baked as joints"
    if lost:
        summary += f"; some settings have no Contact Lab equivalent (see the {lost} warning(s))"
    out: list[tuple[Literal["INFO", "WARNING"], str]] = [("INFO", summary)]
    for name, entry in objects.items():
        for note in entry["notes"]:
            out.append(("INFO", f"'{name}': {note}"))
        if entry["not_carried"]:
            out.append(("WARNING", f"'{name}': not carried over: " + "; ".join(entry["not_carried"])))
    for name, entry in constraints.items():
        out.extend(("INFO", note) for note in entry["notes"])
        if entry["not_carried"]:
            out.append(("WARNING", f"'{name}': not carried over: " + "; ".join(entry["not_carried"])))
    out.extend(("INFO", note) for note in report["world"]["notes"])
    if report["world"]["not_carried"]:
        out.append(("WARNING", "Rigid body world: not carried over: " + "; ".join(report["world"]["not_carried"])))
    return out


# objects --------------------------------------------------------------------------------------------


def _import_object(obj, compounds: set) -> dict:
    rb = obj.rigid_body
    s = obj.contact_lab
    notes: list[str] = []
    lost: list[str] = []
    parent = getattr(obj, "parent", None)
    part_of = parent.name if parent is not None and parent.name in compounds else None

    role = "ACTIVE"
    if rb.type == "PASSIVE":
        role = "PASSIVE"
    elif rb.kinematic:
        role = "PASSIVE"
        notes.append("Animated: imported as Passive (it follows its animation and pushes the active bodies)")
    elif not rb.enabled:
        role = "PASSIVE"
        notes.append("Dynamic is off: imported as Passive (it follows its animation)")
    for curve in fcurves_of(obj):
        switch = ANIMATED_SWITCHES.get(curve.data_path)
        if switch is not None and len(curve.keyframe_points) > 1:
            lost.append(
                f"its {switch} checkbox is animated (Contact Lab cannot hand a body from animation to simulation "
                "during a bake); imported as it is at the current frame"
            )

    shape = rb.collision_shape
    _, size = local_box(obj)
    flat = size.max() > 0.0 and size.min() <= FLAT_TOLERANCE * size.max()
    if part_of is not None:
        if shape == "MESH":
            shape = "CONVEX_HULL"
            notes.append("a Mesh part of a compound: imported as Convex Hull (a compound's parts must be convex)")
        elif shape == "COMPOUND":
            lost.append("a compound inside a compound (the bake refuses it: un-nest it)")
        notes.append(
            f"a part of the Compound Parent '{part_of}': it collides with its own shape; mass, friction, "
            "bounciness and damping are the parent's (as in Blender)"
        )
    elif flat and shape in ("BOX", "CONVEX_HULL"):
        if role == "PASSIVE":
            notes.append(
                f"flat {shape_label(shape)}: imported as Mesh (Blender pads it with its collision margin; Contact "
                "Lab collides with the exact surface)"
            )
            shape = "MESH"
        else:
            lost.append(
                f"it is flat, and an active {shape_label(shape)} needs a volume (the bake refuses it): give it "
                "thickness or make it Passive"
            )
    if role == "ACTIVE" and parent is not None and part_of is None:
        lost.append(
            f"it is parented to '{parent.name}' and Contact Lab simulates only unparented active bodies (the bake "
            "refuses it): clear the parent and keep the transform"
        )

    settings = {
        "role": role,
        "shape": shape,
        "mass": float(rb.mass),
        "friction": float(rb.friction),
        "restitution": float(rb.restitution),
        "linear_damping": float(rb.linear_damping),
        "angular_damping": float(rb.angular_damping),
    }
    for key, value in settings.items():
        setattr(s, key, value)
    lost += _lost_object_settings(obj, rb)
    collections = tuple(bool(v) for v in rb.collision_collections)
    if collections != DEFAULT_COLLISION_COLLECTIONS:
        used = ", ".join(str(i + 1) for i, v in enumerate(collections) if v) or "none"
        notes.append(f"Collision Collections ({used}): the bake reads them, it collides only with bodies sharing one")
    entry = {"settings": settings, "notes": notes, "not_carried": lost}
    if part_of is not None:
        entry["part_of"] = part_of
    return entry


def _lost_object_settings(obj, rb) -> list[str]:
    lost = []
    if rb.use_margin:
        lost.append(f"Collision Margin {rb.collision_margin:g} (Contact Lab collides with the exact shape)")
    if rb.use_deactivation and rb.use_start_deactivated:
        lost.append("Start Deactivated (Contact Lab bodies are awake at the first frame)")
    if rb.collision_shape in ("MESH", "CONVEX_HULL") and rb.mesh_source != "FINAL" and _has_mesh_changes(obj):
        lost.append(
            f"Source {MESH_SOURCES.get(rb.mesh_source, rb.mesh_source)} (Contact Lab reads the mesh with all its "
            "modifiers, Final)"
        )
    if rb.use_deform:
        lost.append("Deforming (Contact Lab reads the mesh once, at the start frame)")
    return lost


def _has_mesh_changes(obj) -> bool:
    """True when the object's modifiers or shape keys make its base, deformed and final meshes differ."""
    if len(getattr(obj, "modifiers", ())):
        return True
    data = getattr(obj, "data", None)
    return getattr(data, "shape_keys", None) is not None


def _import_constraints(scene) -> dict:
    """Per constraint object: its type, the objects it joins, notes and what the bake would refuse or do
    otherwise than Blender (nothing is written: the bake reads the constraints themselves)."""
    out = {}
    listed = rigid_joints.world_constraint_names(scene)
    names = {o.name for o in scene.objects}
    for obj in rigid_joints.constraint_objects(scene):
        c = obj.rigid_body_constraint
        notes, lost = [], []
        note = rigid_joints.constraint_note(obj, listed)
        if note is not None:
            notes.append(note)
        if c.enabled:
            refused = rigid_joints.constraint_problems(obj, scene, names)
            lost += [f"the bake refuses it: {m}" for m in refused]
            lost += rigid_joints.constraint_warnings(obj)
        ends = [o.name for o in (c.object1, c.object2) if o is not None]
        out[obj.name] = {"type": str(c.type), "between": ends, "notes": notes, "not_carried": lost}
    return out


# world ----------------------------------------------------------------------------------------------


BULLET_DEACTIVATION_TIME = 2.0
"""Bullet's ``gDeactivationTime`` [s]: how long a body must stay below its thresholds before it sleeps."""


def _import_deactivation(scene, objects: list, written: dict, notes: list[str], lost: list[str]) -> None:
    """Blender's per-object Deactivation → the scene's Sleeping (all active bodies have it) or a report (a mix)."""
    active = [o for o in objects if o.rigid_body.type == "ACTIVE" and o.rigid_body.enabled]
    sleepers = [o for o in active if o.rigid_body.use_deactivation]
    if not sleepers:
        return
    if len(sleepers) < len(active):
        awake = next(o.name for o in active if not o.rigid_body.use_deactivation)
        lost.append(
            f"Deactivation on {len(sleepers)} of {len(active)} active bodies: Contact Lab's Sleeping is for the whole "
            f"scene and stays off because '{awake}' never deactivates (tick Sleeping to let every body sleep)"
        )
        return
    settings = scene.contact_lab
    metres = units.length_scale(scene)
    settings.sleeping = written["sleeping"] = True
    settings.sleep_time = written["sleep_time"] = BULLET_DEACTIVATION_TIME
    linear = min(float(o.rigid_body.deactivate_linear_velocity) for o in sleepers) * metres
    angular = min(float(o.rigid_body.deactivate_angular_velocity) for o in sleepers)
    settings.sleep_linear_speed = written["sleep_linear_speed"] = linear
    settings.sleep_angular_speed = written["sleep_angular_speed"] = angular
    notes.append(
        f"Deactivation → Sleeping: bodies at rest for {BULLET_DEACTIVATION_TIME:g} s (Bullet's time) below "
        f"{linear:g} m/s and {angular:g} rad/s keep still until touched"
    )


def _import_world(scene, objects: list, mute: bool) -> tuple[dict, bool]:
    settings = scene.contact_lab
    written: dict = {}
    notes: list[str] = []
    lost: list[str] = []
    if settings.engine != "RIGID":
        soft = [o.name for o in scene.objects if getattr(getattr(o, "contact_lab", None), "role", None) == "SOFT"]
        if soft:
            lost.append(f"the Engine stays {settings.engine.title()}: the scene has soft bodies ('{soft[0]}')")
        else:
            settings.engine = written["engine"] = "RIGID"
    settings.friction_combine = settings.restitution_combine = "PRODUCT"
    written["friction_combine"] = written["restitution_combine"] = "PRODUCT"
    notes.append("friction and restitution of a touching pair combine by Product, as in Blender (Bullet)")
    if scene.use_gravity:
        notes.append("gravity: the scene's, as in Blender")
    else:
        notes.append("the scene's gravity is off: nothing falls, as in Blender")

    _import_deactivation(scene, objects, written, notes, lost)
    world = getattr(scene, "rigidbody_world", None)
    if world is None:
        notes.append("the scene has no rigid body world: only the objects' settings were imported")
        return {"settings": written, "notes": notes, "not_carried": lost}, False

    settings.substeps = written["substeps"] = int(world.substeps_per_frame)
    iterations = int(world.solver_iterations)
    if iterations > settings.iterations:
        settings.iterations = written["iterations"] = iterations
    else:
        notes.append(
            f"Solver Iterations {iterations}: Contact Lab keeps its limit of {settings.iterations} (it stops earlier "
            "once the Tolerance is reached)"
        )
    # Blender simulates over its cache's range and plays the scene's: the bake covers what both include
    cache = world.point_cache
    scene_range = (int(scene.frame_start), int(scene.frame_end))
    bake_range = (max(int(cache.frame_start), scene_range[0]), min(int(cache.frame_end), scene_range[1]))
    if bake_range == scene_range or bake_range[1] <= bake_range[0]:
        settings.use_scene_frame_range = True
    else:
        settings.frame_start, settings.frame_end = bake_range
        written["frame_start"], written["frame_end"] = bake_range
        notes.append(
            f"the bake range is frames {bake_range[0]}-{bake_range[1]}, where the rigid body cache "
            f"({int(cache.frame_start)}-{int(cache.frame_end)}) and the scene's range overlap"
        )
    if not np.isclose(world.time_scale, 1.0):
        lost.append(f"Speed {world.time_scale:g} (Contact Lab simulates in real time)")
    if world.use_split_impulse:
        lost.append("Split Impulse")
    weights = world.effector_weights
    if not (np.isclose(weights.gravity, 1.0) and np.isclose(weights.all, 1.0)):
        lost.append(
            f"the field weights of gravity ({weights.gravity:g} × all {weights.all:g}): Contact Lab uses the "
            "scene's gravity in full"
        )

    muted = False
    if world.enabled and mute:
        world.enabled = False
        muted = True
        notes.append(
            "Blender's rigid body world is muted (Scene ▸ Rigid Body World is unticked) so that it does not simulate "
            "the baked objects a second time; nothing was deleted, tick it to use Blender's simulation again"
        )
    elif world.enabled:
        notes.append(
            "Blender's rigid body world is still on: it will also simulate these objects (untick Scene ▸ Rigid Body "
            "World before baking)"
        )
    else:
        notes.append("Blender's rigid body world was already off")
    if getattr(cache, "is_baked", False):
        notes.append("Blender's baked rigid body cache is kept (free it in Scene ▸ Rigid Body World ▸ Cache)")
    return {"settings": written, "notes": notes, "not_carried": lost}, muted
