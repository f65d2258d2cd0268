"""Validate before simulating: every problem of a scene that can be found without simulating, as findings.

:func:`validate_scene` reads the scene (bpy data only: no Numba, nothing simulated; the start frame is evaluated
and the current frame restored, as the exports do) and returns :class:`Finding` s:

- **ERROR**: the bake would fail or produce garbage; :func:`raise_errors` turns them into one
  :class:`~.errors.BakeError` and :func:`..bake.driver.start_bake` calls it before every export, so an invalid scene is
  refused before anything runs or changes.
- **WARNING**: the bake runs but the result may not look right (a mass ratio the solver cannot resolve, bodies that
  start inside each other, a body so large that it moves in slow motion); they go into the bake's report.
- **INFO**: worth knowing (the estimated size and time of a soft body's lattice).

What is checked (the checks of each engine's own export are reused, not repeated; :mod:`.physics` has
the geometric ones):

- the scene: frame range (one frame, outside Blender's range), frame rate, Unit Scale, gravity, and every number of
  ``scene.contact_lab`` for NaN or infinity (Blender stores infinity as 3.4e38: anything from
  :data:`STORED_INFINITY` on counts as infinite, from :data:`HUGE` on as far too large unless a range of
  :mod:`.ranges` judges it); the ranges of every setting (:mod:`.ranges`);
- every object with a Role: the engine's role, shape and material checks, not-a-mesh objects, empty or flat meshes,
  NaN or infinite location, rotation, scale and settings, scale zero on an axis;
- what the exports refuse once they sample frames or read evaluated meshes, by the exports' own functions
  (:mod:`.refusals`): scales over the sampled frames (zero, negative, a non-uniform sphere or capsule,
  shear, a soft object flattened at a later frame; these run once everything above is fine, as in the exports),
  Convex Hulls and Mesh shapes, Mesh colliders without faces;
- sizes, mass ratios, bodies overlapping at the start frame, lattice sizes with a memory and time estimate and a
  hard cap (:mod:`.physics`); these run once everything above is fine (they need valid shapes, and a bake
  that is refused anyway needs no more), so a scene with errors shows its warnings after the errors are fixed;
- friction inputs (UV maps, images, attributes) of the Rigid engine's surfaces, and the PC2 Cache Folder.

Every finding names its object (or the scene setting) and says what to change.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Literal

import numpy as np

from .. import units
from ..errors import BakeError
from ..friction import export as friction_export
from ..scene import (
    compound_parts,
    contact_objects,
    engine_shape_problems,
    frame_range,
    mesh_shape_problems,
    nonfinite_vertices,
    object_problems,
    sample_world_matrices,
)
from .findings import BLENDER_MAX_FRAME, LEVELS, Finding, SceneView, error, info, warning  # noqa: F401  (info: for callers)
from .library import library_problems

HUGE = 1.0e30
"""Magnitude from which a number counts as infinite: Blender clamps an infinite float property to 3.4e38 (the
largest single-precision float), so ``isfinite`` alone lets it through."""

STORED_INFINITY = 3.0e38
"""Magnitude from which a number is Blender's infinity (3.4e38); from :data:`HUGE` up to it, "far too large"."""

STRONG_GRAVITY = 1000.0
"""Gravity [m/s²] (about 100 g) above which it is almost certainly a typo or a unit mistake (a warning)."""

MAX_LISTED_ERRORS = 6
"""Errors spelled out in one :class:`BakeError` message; the rest are counted."""

SKIPPED_SETTINGS = frozenset({"bake_progress"})
"""Numbers of the settings that are status, not input (and the ``previous_*`` bookkeeping of a bake)."""

AXES = "XYZ"


# entry points ----------------------------------------------------------------------------------------


def validate_scene(
    scene, *, engine: str | None = None, frame_start: int | None = None, frame_end: int | None = None
) -> list[Finding]:
    """Every problem of ``scene`` for ``engine`` (default: the scene's), most severe first.

    Reads bpy data only; evaluates the start frame for world matrices and restores the current frame (as the
    exports do). Never raises for bad input: everything it finds is a :class:`Finding`.

    Args:
        scene: a bpy Scene with ``contact_lab`` settings.
        engine: 'RIGID', 'SOFT' or 'IPC'.
        frame_start, frame_end: override the scene's bake range (as :func:`..bake.driver.bake_scene` does).
    """
    from . import ignored_joints
    from . import joints as validate_joints
    from . import physics as validate_physics
    from . import ranges as validate_ranges
    from . import refusals as validate_refusals

    engine = str(engine or getattr(scene.contact_lab, "engine", "RIGID"))
    start, end = frame_range(scene, frame_start, frame_end)
    view = _collect(scene, engine, start, end)
    findings = _scene_findings(scene, start, end)
    findings += _engine_findings(view)
    findings += validate_joints.findings(view)  # Blender's Rigid Body Constraints
    findings += ignored_joints.findings(view)  # ... which the Soft and IPC engines do not simulate
    findings += validate_ranges.setting_findings(view)
    findings += _object_findings(view)
    findings += [
        error(*p) for p in library_problems(view.active, view.soft, getattr(scene.contact_lab, "soft_output", ""))
    ]
    findings += validate_refusals.mesh_findings(view)  # the exports' own checks of evaluated meshes
    # the geometric checks need valid shapes (and a bake refused anyway needs no more)
    if not any(f.level == "ERROR" for f in findings):
        view.metres = units.length_scale(scene)
        geometric = [obj for obj in view.objects if obj.name not in view.broken]
        matrices = sample_world_matrices(scene, geometric, np.array([start]))[0] if geometric else []
        view.matrices = {obj.name: np.asarray(m, dtype=np.float64) for obj, m in zip(geometric, matrices, strict=True)}
        findings += _world_scale_findings(view)
        refused = validate_refusals.frame_findings(view)  # the exports' own checks over the frames they sample
        findings += refused
        if not refused:  # a shape the bake cannot build would show false sizes and overlaps
            findings += validate_physics.findings(view) + validate_ranges.physics_findings(view)
    findings += _output_findings(view)
    findings = list(dict.fromkeys(findings))  # an engine's check and a general one may say the same
    return sorted(findings, key=lambda f: LEVELS.index(f.level))


def raise_errors(findings: list[Finding]) -> None:
    """Raise one :class:`BakeError` for the ERROR findings (the first names the object; all are listed up to
    :data:`MAX_LISTED_ERRORS`); a no-op without errors."""
    errors = [f for f in findings if f.level == "ERROR"]
    if not errors:
        return
    text = "; ".join(f.text for f in errors[:MAX_LISTED_ERRORS])
    if len(errors) > MAX_LISTED_ERRORS:
        text += f"; and {len(errors) - MAX_LISTED_ERRORS} more problem(s)"
    first = next((f.object_name for f in errors if f.object_name is not None), None)
    raise BakeError(text[0].upper() + text[1:], object_name=first)


def check_before_bake(scene, engine: str, *, frame_start: int | None = None, frame_end: int | None = None) -> list[str]:
    """What :func:`..bake.driver.start_bake` runs first: validate, refuse errors, return the warnings' texts.

    Raises:
        BakeError: the scene has errors; nothing was changed.
    """
    findings = validate_scene(scene, engine=engine, frame_start=frame_start, frame_end=frame_end)
    raise_errors(findings)
    return [f.text for f in findings if f.level == "WARNING"]


def counts(findings: list[Finding]) -> dict[str, int]:
    """``{level: number of findings}`` for every level."""
    return {level: sum(f.level == level for f in findings) for level in LEVELS}


def summary(findings: list[Finding]) -> tuple[Literal["INFO", "WARNING"], str]:
    """``(report level, one line)`` for the operator: 'INFO' when nothing is wrong, else 'WARNING' (an ERROR report
    would make ``bpy.ops`` raise in scripts, and the check itself succeeded)."""
    n = counts(findings)
    if not n["ERROR"] and not n["WARNING"]:
        notes = f" ({n['INFO']} note(s))" if n["INFO"] else ""
        return "INFO", f"Check Scene: no problems found{notes}"
    parts = [f"{n[level]} {level.lower()}{'s' if n[level] != 1 else ''}" for level in LEVELS[:2] if n[level]]
    first = next(f for f in findings if f.level in ("ERROR", "WARNING"))
    verdict = "the bake will refuse to run" if n["ERROR"] else "the bake will run"
    return "WARNING", f"Check Scene: {', '.join(parts)} ({verdict}); {first.text}"


def to_json(findings: list[Finding], engine: str) -> str:
    """The findings as the JSON stored in ``scene.contact_lab.last_validation``."""
    return json.dumps({"engine": engine, "counts": counts(findings), "findings": [asdict(f) for f in findings]})


def from_json(text: str) -> tuple[dict, list[Finding]]:
    """``(counts, findings)`` back from :func:`to_json`'s text; empty for an empty or unreadable text."""
    try:
        data = json.loads(text) if text else {}
        return data.get("counts", {}), [Finding(**f) for f in data.get("findings", [])]
    except (ValueError, TypeError, AttributeError):
        return {}, []


def store(scene, findings: list[Finding], engine: str) -> None:
    """Keep the findings as JSON on ``scene.contact_lab.last_validation`` for the panel."""
    scene.contact_lab.last_validation = to_json(findings, engine)


# gathering -------------------------------------------------------------------------------------------


def _collect(scene, engine: str, start: int, end: int) -> SceneView:
    active, passive = contact_objects(scene)
    soft = sorted((o for o in scene.objects if getattr(o.contact_lab, "role", None) == "SOFT"), key=_key)
    meshes, parts, soft_in_rigid = [], {}, []
    if engine == "RIGID":
        all_parts = compound_parts(scene)
        parts = {o.name: all_parts.get(o.name, []) for o in active + passive if o.contact_lab.shape == "COMPOUND"}
        soft, soft_in_rigid = [], soft
    elif engine == "IPC":
        meshes = [o for o in passive if o.contact_lab.shape == "MESH"]
        passive = [o for o in passive if o.contact_lab.shape != "MESH"]
    return SceneView(scene, engine, start, end, active, passive, soft, meshes, parts, set(), soft_in_rigid)


def _key(obj) -> str:
    return obj.name


# scene settings --------------------------------------------------------------------------------------


def _bad_number(values) -> str | None:
    """'is not a number (NaN)', 'is infinite' or None for a number or a vector of them."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if np.isnan(v).any():
        return "is not a number (NaN)"
    if (np.abs(v) >= STORED_INFINITY).any():
        return "is infinite"
    if (np.abs(v) >= HUGE).any():
        return "is far too large for the solver"
    return None


def _infinity_note(values) -> str:
    v = np.abs(np.asarray(values, dtype=np.float64).ravel())
    return " (3.4e38 is how Blender stores infinity)" if np.any((v >= 3.0e38) & np.isfinite(v)) else ""


def _fmt(values) -> str:
    v = np.asarray(values, dtype=np.float64).ravel()
    return f"{v[0]:.4g}" if v.size == 1 else "(" + ", ".join(f"{x:.4g}" for x in v) + ")"


_FLOAT_PROPERTIES: dict[str, list[tuple[str, str, bool]]] = {}
"""``{PropertyGroup identifier: [(identifier, UI name, is a vector)]}``: the float properties to check, per type."""


def _float_properties(settings) -> list[tuple[str, str, bool]]:
    rna = getattr(settings, "bl_rna", None)
    if rna is None:  # a stand-in without RNA (tests)
        return []
    key = rna.identifier
    if key not in _FLOAT_PROPERTIES:
        _FLOAT_PROPERTIES[key] = [
            (p.identifier, p.name, bool(getattr(p, "array_length", 0)))
            for p in rna.properties
            if p.type == "FLOAT" and p.identifier not in SKIPPED_SETTINGS and not p.identifier.startswith("previous_")
        ]
    return _FLOAT_PROPERTIES[key]


def numeric_settings(settings):
    """``(identifier, UI name, value)`` of every float property of a PropertyGroup (vectors as tuples), except
    status and bookkeeping fields; nothing for a stand-in without ``bl_rna``."""
    for ident, label, vector in _float_properties(settings):
        value = getattr(settings, ident)
        yield ident, label, tuple(value) if vector else value


def _all_finite(values) -> bool:
    """Every number below :data:`HUGE` in magnitude (NaN fails the comparison); plain Python, for many objects."""
    return all(abs(v) < HUGE for v in values)


def _judged_by_range() -> frozenset:
    from .ranges import JUDGED_BY_RANGE

    return JUDGED_BY_RANGE


def _setting_findings(obj, settings, where: str) -> list[Finding]:
    """NaN or infinite numbers among ``settings``' float properties (``obj`` None: the scene's)."""
    values = list(numeric_settings(settings))
    if _all_finite(x for _, _, v in values for x in (v if isinstance(v, tuple) else (v,))):
        return []
    out = []
    owner = "the scene's" if obj is None else f"'{obj.name}':"
    for ident, label, value in values:
        bad = _bad_number(value)
        judged = ident in _judged_by_range() and (
            ident != "initial_velocity" or getattr(settings, "role", "") == "SOFT"
        )
        if bad == "is far too large for the solver" and judged:
            continue  # a finite 1e30 of these is judged by its physics range (checks/ranges.py; soft speeds only)
        if bad:
            out.append(
                error(
                    obj,
                    f"{owner} {label} {bad}, got {_fmt(value)}{_infinity_note(value)}",
                    f"type a finite value in {where} ▸ {label}",
                    setting=f"{'scene.' if obj is None else ''}contact_lab.{ident}",
                )
            )
    return out


def _scene_findings(scene, start: int, end: int) -> list[Finding]:
    """Frame range, frame rate, Unit Scale, gravity and the scene's Contact Lab numbers."""
    out = []
    for which, frame in (("Start", start), ("End", end)):
        if not -BLENDER_MAX_FRAME <= frame <= BLENDER_MAX_FRAME:
            out.append(
                error(
                    None,
                    f"the bake's {which} frame {frame} is outside Blender's frame range (±{BLENDER_MAX_FRAME})",
                    f"set Scene ▸ Contact Lab Bake ▸ Frame {which}",
                    "scene.contact_lab.frame_" + which.lower(),
                )
            )
    gravity = np.asarray(tuple(scene.gravity), dtype=np.float64)
    bad = _bad_number(gravity) if scene.use_gravity else None
    if bad:
        out.append(
            error(
                None,
                f"Scene gravity {bad}, got {_fmt(gravity)} m/s²{_infinity_note(gravity)}",
                "set Scene Properties ▸ Gravity to finite values (Earth: 0, 0, -9.81)",
                "scene.gravity",
            )
        )
    elif scene.use_gravity and np.linalg.norm(gravity) > STRONG_GRAVITY:
        out.append(
            warning(
                None,
                f"Scene gravity is {np.linalg.norm(gravity):.3g} m/s², {np.linalg.norm(gravity) / 9.81:.3g} times "
                "Earth's: bodies accelerate so fast that the solver needs far more substeps",
                "check Scene Properties ▸ Gravity (Earth: 0, 0, -9.81 m/s²)",
                "scene.gravity",
            )
        )
    for label, value, where in (
        ("Unit Scale", scene.unit_settings.scale_length, "Scene Properties ▸ Units ▸ Unit Scale"),
        ("frame rate", units.scene_fps(scene), "Output Properties ▸ Frame Rate"),
    ):
        bad = _bad_number(value)
        if bad:
            out.append(error(None, f"the scene's {label} {bad}, got {_fmt(value)}", f"set {where}"))
    out += _setting_findings(None, scene.contact_lab, "Scene ▸ Contact Lab Bake")
    return out


# the engines' own checks -------------------------------------------------------------------------------


def _engine_findings(view: SceneView) -> list[Finding]:
    """The checks each engine's export runs before reading meshes, as ERROR findings (same messages)."""
    from ..ipc import gather as ipc_gather
    from ..rigid import shapes as rigid_shapes
    from ..soft import gather as soft_gather

    problems: list[tuple[str | None, str]] = []
    scene, start, end = view.scene, view.start, view.end
    if view.engine == "RIGID":
        for obj in view.soft_in_rigid:
            problems.append(
                (
                    obj.name,
                    f"'{obj.name}' is a Soft body but the scene's Engine is Rigid: set Scene ▸ Contact Lab Bake ▸ "
                    "Engine to Soft or IPC, or change its Role",
                )
            )
        problems += object_problems(scene, view.active, view.passive, start, end)
        problems += rigid_shapes.shape_problems(view.active, view.passive, view.parts)
    else:
        label = "IPC" if view.engine == "IPC" else "Soft"
        bodies = view.rigid + view.mesh_colliders
        problems += engine_shape_problems(bodies, frozenset({"BOX", "SPHERE", "CAPSULE", "PLANE", "MESH"}), label)
        if view.engine == "IPC":
            problems += ipc_gather._settings_problems(view.scene.contact_lab)
        problems += object_problems(scene, view.active, view.passive, start, end, require_active=False)
        problems += soft_gather.soft_problems(view.soft, view.active)
        if view.engine == "IPC":
            problems += ipc_gather._mesh_object_problems(view.mesh_colliders)
        else:
            problems += mesh_shape_problems([o for o in view.passive if o.contact_lab.shape == "MESH"], "Soft")
    seen, out = set(), []
    for name, message in problems:
        if message not in seen:  # the engine-shape and the engine's own checks can say the same thing
            seen.add(message)
            out.append(Finding("ERROR", name, None, message[0].upper() + message[1:] if name is None else message, ""))
    return out


# objects: numbers and transforms ----------------------------------------------------------------------


def _rotation(obj) -> tuple[str, str, tuple]:
    """``(property, channel names, values)`` of the rotation ``obj.rotation_mode`` uses."""
    mode = getattr(obj, "rotation_mode", "XYZ")
    if mode == "QUATERNION":
        return "rotation_quaternion", "WXYZ", tuple(obj.rotation_quaternion)
    if mode == "AXIS_ANGLE":
        return "rotation_axis_angle", "WXYZ", tuple(obj.rotation_axis_angle)
    return "rotation_euler", AXES, tuple(obj.rotation_euler)


def _transform_findings(obj) -> list[Finding]:
    """NaN or infinite location, rotation, scale and delta transforms; scale zero on an axis."""
    name = obj.name
    out = []
    rotation_prop, channels, rotation = _rotation(obj)
    checks = [
        ("location", "location", AXES, tuple(obj.location), "Object Properties ▸ Transform ▸ Location"),
        (rotation_prop, "rotation", channels, rotation, "Object Properties ▸ Transform ▸ Rotation (or Alt R)"),
        ("scale", "scale", AXES, tuple(obj.scale), "Object Properties ▸ Transform ▸ Scale"),
        ("delta_location", "delta location", AXES, tuple(obj.delta_location), "Transform ▸ Delta Transform"),
        ("delta_scale", "delta scale", AXES, tuple(obj.delta_scale), "Transform ▸ Delta Transform"),
    ]
    if _all_finite(x for check in checks for x in check[3]) and all(v != 0.0 for v in (*obj.scale, *obj.delta_scale)):
        return out
    for prop, label, names, values, where in checks:
        v = np.asarray(values, dtype=np.float64)
        bad = _bad_number(v)
        if bad:
            axis = names[int(np.flatnonzero(~(np.abs(v) < HUGE))[0])]
            out.append(
                error(
                    obj,
                    f"'{name}': its {label} {bad} on {axis}{_infinity_note(v)}",
                    f"type a finite value in {where}",
                    prop,
                )
            )
    for prop, label, values in (("scale", "scale", obj.scale), ("delta_scale", "delta scale", obj.delta_scale)):
        v = np.asarray(tuple(values), dtype=np.float64)
        zero = np.flatnonzero(v == 0.0)
        if zero.size:
            axes = ", ".join(AXES[k] for k in zero)
            out.append(
                error(
                    obj,
                    f"'{name}': its {label} is zero on axis {axes}: it has no size along {axes}",
                    f"set {label.title()} {AXES[zero[0]]} to a positive value (Object Properties ▸ Transform)",
                    prop,
                )
            )
    return out


def _vertices(mesh) -> np.ndarray:
    """A mesh's own vertex coordinates (V, 3) float32 [BU] (no triangulation: this runs for every object)."""
    co = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def _object_findings(view: SceneView) -> list[Finding]:
    """Per object: transforms and settings (NaN, infinite, zero scale); marks such objects broken."""
    out = []
    for obj in view.objects:
        found = _transform_findings(obj) + _setting_findings(obj, obj.contact_lab, "Physics ▸ Contact Lab Body")
        if obj.type == "MESH" and getattr(obj, "data", None) is not None:
            message = nonfinite_vertices(obj.name, _vertices(obj.data))
            if message is not None:
                found.append(error(obj, message, "", "data"))
        if found:
            view.broken.add(obj.name)
        out += found
    return out


def _world_scale_findings(view: SceneView) -> list[Finding]:
    """World matrices that are not finite, or scaled to zero on an axis, though the object's own transform is
    fine (a parent, a constraint or a driver): named, not reported as a shear."""
    out = []
    if not view.matrices:
        return out
    objects = {obj.name: obj for obj in view.objects}
    names = list(view.matrices)
    stack = np.stack([view.matrices[name] for name in names])
    finite = np.all(np.abs(stack) < HUGE, axis=(1, 2))  # NaN fails the comparison
    flat = np.any(np.linalg.norm(stack[:, :3, :3], axis=1) <= 0.0, axis=1)
    for k in np.flatnonzero(~finite | flat):
        name, matrix = names[k], stack[k]
        bad = _bad_number(matrix)
        if bad:
            view.broken.add(name)
            parent = getattr(objects[name], "parent", None)
            source = f"its parent '{parent.name}'" if parent is not None else "a constraint or driver"
            out.append(
                error(
                    name,
                    f"'{name}': its world transform {bad} at frame {view.start} (its own transform is finite: it "
                    f"comes from {source})",
                    "fix the transform of the parent, or the constraint or driver",
                    "matrix_world",
                )
            )
            continue
        scale = np.linalg.norm(matrix[:3, :3], axis=0)
        zero = np.flatnonzero(scale <= 0.0)
        if zero.size:
            view.broken.add(name)
            axes = ", ".join(AXES[a] for a in zero)
            out.append(
                error(
                    name,
                    f"'{name}': its scale in the world is zero on axis {axes} (its own scale is not: a parent or "
                    "constraint scales it to zero)",
                    "give the parent a positive scale, or clear the parent",
                    "matrix_world",
                )
            )
    return out


# output ------------------------------------------------------------------------------------------------


def _output_findings(view: SceneView) -> list[Finding]:
    """Friction inputs of the Rigid engine's surfaces; the PC2 Cache Folder of the Soft and IPC engines."""
    out = []
    if view.engine == "RIGID":
        out += _friction_findings(view)
    elif view.soft and view.scene.contact_lab.soft_output == "PC2":
        out += _cache_folder_findings(view.scene, view.soft)
    return out


def _friction_findings(view: SceneView) -> list[Finding]:
    """Missing UV maps, images, attributes (errors) and colour-space or node quirks (warnings)."""
    from ..scene import evaluated_depsgraph

    todo = [
        o
        for o in view.rigid
        if o.name not in view.broken
        and (o.contact_lab.friction_model != "COULOMB" or o.contact_lab.friction_spin > 0.0)
    ]
    if not todo:
        return []
    depsgraph = evaluated_depsgraph(view.scene)
    out = []
    for obj in todo:
        for issue in friction_export.friction_issues(obj, depsgraph):
            make = error if issue.fatal else warning
            out.append(make(obj, f"'{obj.name}': {issue.message}", "", "contact_lab.friction_model"))
    return out


def _cache_folder_findings(scene, soft: list) -> list[Finding]:
    """The PC2 Cache Folder must be usable and writable or creatable, and every soft object gets its own cache
    (:func:`..output.caches.cache_folder_problems`)."""
    from ..output.caches import cache_folder_problems

    return [error(*problem) for problem in cache_folder_problems(scene, [obj.name for obj in soft])]
