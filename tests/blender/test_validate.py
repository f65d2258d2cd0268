"""Validate before simulating, in real Blender: every case of issue 12's "Silent garbage" and "Unclear messages"
lists has a scene that triggers its error or warning, naming the object and the fix. Where the issue called the
result garbage, the same scene is also baked with the validation switched off, to show what it prevents."""

import json
import math
import time
import types

import pytest

bpy = pytest.importorskip("bpy")

from contact_lab.addon.bake import driver as addon_bake  # noqa: E402
from contact_lab.addon.checks import physics as validate_physics  # noqa: E402
from contact_lab.addon.checks import validate  # noqa: E402
from contact_lab.addon.rigid import gather as rigid_export  # noqa: E402

pytestmark = pytest.mark.blender


def findings_of(scene, **kwargs):
    start = time.perf_counter()
    found = validate.validate_scene(scene, **kwargs)
    assert time.perf_counter() - start < 5.0  # small scenes: well under a second (see the 1000-body test)
    return found


def the_finding(findings, level, name, *words):
    """The one finding of ``level`` about ``name`` whose text has all ``words``; its message names the object."""
    matches = [f for f in findings if f.level == level and f.object_name == name and all(w in f.text for w in words)]
    assert matches, f"no {level} about {name!r} with {words}: {[f.text for f in findings]}"
    if name is not None:
        assert f"'{name}'" in matches[0].message
    return matches[0]


def bake_refused(scene, lab, *words):
    """The operator refuses the bake with a message holding ``words``; nothing changed, no report stored."""
    scene.frame_set(scene.frame_start)
    before, report = repr(lab.snapshot(scene)), scene.contact_lab.last_report  # repr: NaN equals NaN
    with pytest.raises(RuntimeError) as info:
        bpy.ops.contact_lab.bake()
    for word in words:
        assert word in str(info.value)
    assert repr(lab.snapshot(scene)) == before and scene.contact_lab.last_report == report
    return str(info.value)


def unvalidated(monkeypatch):
    """Bake as before this change: switch the validation before the bake off (``monkeypatch.undo()`` restores)."""
    monkeypatch.setattr(addon_bake, "check_before_bake", lambda *args, **kwargs: [])


def rigid_scene(frame_end=24):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frame_end
    return scene


def height_at(obj, scene, frame):
    scene.frame_set(frame)
    return float(obj.matrix_world.translation.z)


# silent garbage -------------------------------------------------------------------------------------------------


def test_tiny_box_is_refused_and_would_fall_through_the_ground(lab, monkeypatch):
    """The issue's default cube at scale 1e-6 (1 µm) dropped on the ground: an error naming it, its thickness and
    the slop; without the validation it ends inside the ground."""
    scene = rigid_scene(frame_end=36)
    lab.add_ground()
    box = lab.add_cube("Box", (0.0, 0.0, 1.0))
    box.scale = (1e-6,) * 3
    finding = the_finding(findings_of(scene), "ERROR", "Box", "1 µm thick", "0.5 mm of overlap", "Unit Scale")
    assert finding.setting == "scale"
    bake_refused(scene, lab, "'Box' is only 1 µm thick")

    unvalidated(monkeypatch)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert height_at(box, scene, 36) < 0.0  # its centre below the ground: it fell into it


def test_small_box_is_a_warning_and_a_millimetre_box_rests(lab):
    """A 3 mm box is a warning (it can sink by a tenth), and bakes; resting on the ground it stays within the slop."""
    scene = rigid_scene(frame_end=24)
    lab.add_ground()
    box = lab.add_cube("Pebble", (0.0, 0.0, 0.0015), size=0.003)
    the_finding(findings_of(scene), "WARNING", "Pebble", "3 mm thick", "a tenth")
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert height_at(box, scene, 24) == pytest.approx(0.0015, abs=validate_physics.SLOP)
    assert any("'Pebble' is only 3 mm thick" in w for w in json.loads(scene.contact_lab.last_report)["warnings"])


def test_tiny_soft_body_is_refused_and_would_hover(lab, monkeypatch):
    """A 0.5 mm soft cube: the soft engine's contact thickness (0.1 mm at least) is 20 % of it, an error; baked
    without the validation it rests that far above the ground."""
    scene = rigid_scene(frame_end=12)
    scene.contact_lab.engine = "SOFT"
    lab.add_ground()
    size = 5e-4
    jelly = lab.add_cube("Jelly", (0.0, 0.0, 0.6 * size), size=size, role="SOFT")
    jelly.contact_lab.lattice_resolution = 2
    the_finding(findings_of(scene), "ERROR", "Jelly", "contact thickness", "20%", "hover")
    bake_refused(scene, lab, "'Jelly' is 0.5 mm across")
    unvalidated(monkeypatch)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    scene.frame_set(12)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    mesh = jelly.evaluated_get(depsgraph).to_mesh()
    lowest = min((jelly.matrix_world @ v.co).z for v in mesh.vertices)
    jelly.evaluated_get(depsgraph).to_mesh_clear()
    assert lowest > 0.1 * size  # it floats a tenth of its size (and more) above the ground


def test_a_contact_thickness_the_user_set_is_only_flagged_when_absurd(lab):
    """A 3 cm soft finger with a 1 mm Contact Thickness set by hand (the grasp demo): no finding; with 5 mm (17 %):
    an error naming the setting (over 10 % of the body: it floats, and from a few times its size the bake takes
    minutes)."""
    scene = rigid_scene(frame_end=3)
    scene.contact_lab.engine = "SOFT"
    lab.add_ground()
    lab.add_cube("Finger", (0.0, 0.0, 0.1), size=0.03, role="SOFT").contact_lab.lattice_resolution = 2
    scene.contact_lab.soft_contact_thickness = 0.001
    assert [f.level for f in findings_of(scene)] == ["INFO"]
    scene.contact_lab.soft_contact_thickness = 0.005
    finding = the_finding(findings_of(scene), "ERROR", "Finger", "Contact Thickness set in Scene", "17%")
    assert finding.setting == "scene.contact_lab.soft_contact_thickness" and "below 0.3 mm" in finding.fix


def test_huge_body_warns_slow_motion_and_the_issues_cube_is_flung(lab):
    """The issue's default cube at scale 1e6 starts deep inside the ground: warnings for its size (slow motion,
    with the Unit Scale fix) and for the overlap with the ground; it bakes, the report carries both warnings, and
    it really is thrown up."""
    scene = rigid_scene(frame_end=6)
    lab.add_ground()
    box = lab.add_cube("Box", (0.0, 0.0, 1.0))
    box.scale = (1e6,) * 3
    found = findings_of(scene)
    the_finding(found, "WARNING", "Box", "1,000 km across", "slow motion", "Unit Scale to 0.01 or 0.001")
    the_finding(found, "WARNING", "Box", "'Ground'", "overlap by 500 km")
    assert not [f for f in found if f.level == "ERROR"]
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    warnings = json.loads(scene.contact_lab.last_report)["warnings"]
    assert any("slow motion" in w for w in warnings) and any("overlap by 500 km" in w for w in warnings)
    assert height_at(box, scene, 6) - height_at(box, scene, 1) > 1.0  # pushed out of the ground


def test_mass_ratio_of_touching_boxes_is_refused_and_would_collapse(lab, monkeypatch):
    """A 10⁵ kg box resting on a 1 kg box: an error naming both and the ratio; baked without the validation the
    heavy box does not stay on the light one (it sinks into it or is thrown off)."""
    scene = rigid_scene(frame_end=24)
    lab.add_ground()
    light = lab.add_cube("Light", (0.0, 0.0, 0.5), mass=1.0)
    heavy = lab.add_cube("Heavy", (0.0, 0.0, 1.5), mass=1e5)
    finding = the_finding(findings_of(scene), "ERROR", "Heavy", "'Light'", "1e+05:1", "within 100:1")
    assert finding.setting == "contact_lab.mass"
    bake_refused(scene, lab, "'Heavy' (1e+05 kg) and 'Light' (1 kg) touch")
    unvalidated(monkeypatch)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    moved = abs(height_at(heavy, scene, 24) - 1.5), abs(height_at(light, scene, 24) - 0.5)
    assert max(moved) > 0.1  # a correct stack stays put (it does at 1:1 to 1e-6 m)


def test_mass_ratio_of_distant_boxes_is_a_warning(lab):
    """The issue's 1e9 ratio between boxes that do not touch: a warning naming both and the measured error, the bake
    runs and the report carries it."""
    scene = rigid_scene(frame_end=3)
    lab.add_ground()
    lab.add_cube("Heavy", (0.0, 0.0, 0.5), mass=1e9)
    lab.add_cube("Light", (5.0, 0.0, 5.0), mass=1.0)
    the_finding(findings_of(scene), "WARNING", "Heavy", "'Light'", "1e+09 times as heavy", "PGS")
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert any("1e+09 times as heavy" in w for w in json.loads(scene.contact_lab.last_report)["warnings"])


def _location_x(objs, scene):
    objs["Box"].location.x = math.inf


def _mass(objs, scene):
    objs["Box"].contact_lab.mass = math.inf


def _friction(objs, scene):
    objs["Ball"].contact_lab.friction = math.inf


def _scale(objs, scene):
    objs["Ball"].scale.z = math.inf


def _tolerance(objs, scene):
    scene.contact_lab.tolerance = math.inf


def _gravity(objs, scene):
    scene.gravity = (0.0, 0.0, -math.inf)


NUMPY_ON_INFINITY = pytest.mark.filterwarnings("ignore::RuntimeWarning")
"""NaN and 3.4e38 transforms: numpy warns while snapshots and the bare export compute with them (expected)."""


@NUMPY_ON_INFINITY
@pytest.mark.parametrize(
    ("breaker", "name", "words"),
    [
        (_location_x, "Box", ("location is infinite on X", "3.4e38")),
        (_mass, "Box", ("Mass is infinite", "3.4e38", "Physics ▸ Contact Lab Body ▸ Mass")),
        (_friction, "Ball", ("Friction is infinite",)),
        (_scale, "Ball", ("scale is infinite on Z",)),
        (_tolerance, None, ("scene's Tolerance is infinite",)),
        (_gravity, None, ("Scene gravity is infinite", "Gravity to finite values")),
    ],
)
def test_infinite_values_are_refused(lab, monkeypatch, breaker, name, words):
    """Blender stores infinity as 3.4e38, which passes a finiteness check: every such value is an error naming the
    object (or the scene setting); before, an infinite mass or friction baked without a word."""
    scene, objs = lab.build_drop_scene(frame_end=3)
    breaker(objs, scene)
    scene.frame_set(1)
    the_finding(findings_of(scene), "ERROR", name, *words)
    bake_refused(scene, lab, words[0])
    if breaker in (_mass, _friction):
        unvalidated(monkeypatch)
        assert bpy.ops.contact_lab.bake() == {"FINISHED"}  # before: no word at all


def test_overlapping_boxes_warn_and_are_thrown_apart(lab):
    """Two active boxes overlapping by 20 cm: a warning naming both and the depth; the bake runs, its report and the
    operator's message carry the warning, and the boxes do fly apart."""
    scene = rigid_scene(frame_end=6)
    scene.use_gravity = False
    lab.add_cube("A", (0.0, 0.0, 0.0))
    b = lab.add_cube("B", (0.8, 0.0, 0.0))
    the_finding(findings_of(scene), "WARNING", "A", "'B'", "overlap by 20 cm at frame 1", "move them apart")
    reports = []
    op = types.SimpleNamespace(report=lambda level, text: reports.append((level, text)), allow_outside_paths=False)
    from contact_lab.operators.bake import CONTACT_LAB_OT_bake

    assert CONTACT_LAB_OT_bake.execute(op, bpy.context) == {"FINISHED"}
    (level, text), = reports  # fmt: skip
    assert level == {"WARNING"} and "1 warning(s): 'A' and 'B' overlap by 20 cm" in text
    assert json.loads(scene.contact_lab.last_report)["warnings"][0].startswith("'A' and 'B' overlap by 20 cm")
    scene.frame_set(6)
    assert b.matrix_world.translation.x - 0.8 > 0.1  # thrown apart (a correct start leaves it still)


@pytest.mark.parametrize("apart", ["no shared collision collection", "joined, Disable Collisions"])
def test_bodies_the_engine_keeps_apart_are_no_overlap_and_no_mass_ratio(lab, apart):
    """Bodies that never collide (no shared Collision Collection, or joined by a constraint with Disable Collisions,
    as Blender keeps them) may overlap and differ in mass: neither is reported. Reference: the same pairs are
    reported once they collide again (Disable Collisions off, or a shared collection)."""
    from conftest import add_constraint

    scene = rigid_scene(frame_end=3)
    scene.use_gravity = False
    a = lab.add_cube("A", (0.0, 0.0, 0.0))
    b = lab.add_cube("B", (0.8, 0.0, 0.0))
    light = lab.add_cube("Light", (0.0, 0.0, 3.0), mass=1.0)
    heavy = lab.add_cube("Heavy", (0.0, 0.0, 4.0), mass=1e5)
    if apart == "joined, Disable Collisions":
        pairs = [add_constraint(f"Joint {k}", "FIXED", *pair, (0.0, 0.0, 0.0)) for k, pair in enumerate(
            [(a, b), (light, heavy)])]  # fmt: skip
        assert all(joint.rigid_body_constraint.disable_collisions for joint in pairs)  # Blender's default
    else:
        for obj in (a, light, b, heavy):
            obj.select_set(obj in (a, light, b, heavy))
        bpy.context.view_layer.objects.active = a
        bpy.ops.rigidbody.objects_add(type="ACTIVE")
        for obj in (b, heavy):
            obj.rigid_body.collision_collections = [k == 1 for k in range(20)]
    assert not [f.text for f in findings_of(scene) if "overlap by" in f.text or "touch at the start with" in f.text]
    if apart == "joined, Disable Collisions":
        for joint in pairs:
            joint.rigid_body_constraint.disable_collisions = False
    else:
        for obj in (b, heavy):
            obj.rigid_body.collision_collections = [k < 2 for k in range(20)]
    found = findings_of(scene)
    the_finding(found, "WARNING", "A", "'B'", "overlap by 20 cm at frame 1")
    the_finding(found, "ERROR", "Heavy", "'Light'", "touch at the start")


def test_touching_boxes_are_no_overlap(lab):
    """Boxes stacked exactly face to face, or within the 1 mm tolerance, are not reported."""
    scene = rigid_scene(frame_end=3)
    lab.add_ground()
    lab.add_cube("Low", (0.0, 0.0, 0.5))
    lab.add_cube("High", (0.3, 0.0, 1.5 - 0.0008))
    lab.add_sphere("Ball", (3.0, 0.0, 0.5))
    assert findings_of(scene) == []


def test_intersecting_soft_bodies_are_an_ipc_error(lab):
    """IPC cannot start from intersecting surfaces: two soft cubes overlapping are an error naming both."""
    scene = rigid_scene(frame_end=3)
    scene.contact_lab.engine = "IPC"
    lab.add_ground()
    for name, x in (("Jelly", 0.0), ("Jam", 0.15)):
        cube = lab.add_cube(name, (x, 0.0, 0.2), size=0.2, role="SOFT")
        cube.contact_lab.lattice_resolution = 3
    the_finding(findings_of(scene), "ERROR", "Jam", "'Jelly'", "overlap by 5 cm", "IPC cannot start")


# unclear messages ----------------------------------------------------------------------------------------------


def test_zero_scale_names_the_axis_not_a_shear(lab, monkeypatch):
    """Scale 0 on X: "scale is zero on axis X", from the validation and from the export alike, never "sheared"."""
    scene, objs = lab.build_drop_scene(frame_end=3)
    objs["Box"].scale.x = 0.0
    scene.frame_set(1)
    finding = the_finding(findings_of(scene), "ERROR", "Box", "scale is zero on axis X", "Scale X")
    assert "shear" not in finding.text
    with pytest.raises(rigid_export.BakeError, match="'Box': its scale is zero on axis X at frame 1") as info:
        rigid_export.export_scene(scene)
    assert "shear" not in str(info.value)
    assert "shear" not in bake_refused(scene, lab, "'Box': its scale is zero on axis X")
    unvalidated(monkeypatch)
    assert "shear" not in bake_refused(scene, lab, "'Box': its scale is zero on axis X at frame 1")


def test_parent_scaled_to_zero_is_named(lab):
    """A passive box whose parent is scaled to zero: its world scale is zero, and the message says where from."""
    scene = rigid_scene(frame_end=3)
    lab.add_sphere("Ball", (0.0, 0.0, 3.0))
    bpy.ops.object.empty_add(location=(0.0, 0.0, 0.0))
    holder = bpy.context.object
    holder.name = "Holder"
    shelf = lab.add_cube("Shelf", (0.0, 0.0, 0.0), role="PASSIVE")
    shelf.parent = holder
    holder.scale.z = 0.0
    the_finding(findings_of(scene), "ERROR", "Shelf", "scale in the world is zero on axis Z", "parent")


@NUMPY_ON_INFINITY
def test_nan_rotation_says_rotation_is_not_a_number(lab, monkeypatch):
    """A NaN rotation: "rotation is not a number" naming the axis, not "non-finite shape size or offset"; the
    export alone (no validation) now names the object and the transform too."""
    scene, objs = lab.build_drop_scene(frame_end=3)
    objs["Box"].rotation_euler.y = math.nan
    scene.frame_set(1)
    the_finding(findings_of(scene), "ERROR", "Box", "rotation is not a number (NaN) on Y", "Rotation")
    assert "shape size" not in bake_refused(scene, lab, "'Box': its rotation is not a number (NaN) on Y")
    unvalidated(monkeypatch)
    assert "shape size" not in bake_refused(scene, lab, "'Box': its transform is not a number")


def test_nan_gravity_names_scene_gravity(lab):
    """NaN gravity: an error about "Scene gravity" (no object), saying how to fix it."""
    scene, _ = lab.build_drop_scene(frame_end=3)
    scene.gravity = (0.0, math.nan, -9.81)
    the_finding(findings_of(scene), "ERROR", None, "Scene gravity is not a number (NaN)", "Scene Properties ▸ Gravity")
    bake_refused(scene, lab, "Scene gravity is not a number")


def test_one_frame_range_has_nothing_to_simulate(lab):
    """Start == End: "a single frame, nothing to simulate", from the validation and the export."""
    scene, _ = lab.build_drop_scene(frame_end=3)
    scene.frame_end = 1
    the_finding(findings_of(scene), "ERROR", None, "frame range 1-1 is a single frame, nothing to simulate")
    with pytest.raises(rigid_export.BakeError, match="single frame, nothing to simulate"):
        rigid_export.export_scene(scene)
    bake_refused(scene, lab, "single frame, nothing to simulate")


def _empty():
    bpy.ops.object.empty_add(location=(3.0, 0.0, 1.0))


def _curve():
    bpy.ops.curve.primitive_bezier_curve_add(location=(3.0, 0.0, 1.0))


def _text():
    bpy.ops.object.text_add(location=(3.0, 0.0, 1.0))


@pytest.mark.parametrize(("add", "kind"), [(_empty, "Empty"), (_curve, "Curve"), (_text, "Font")])
def test_active_non_mesh_says_it_is_not_a_mesh(lab, add, kind):
    """An active Empty, Curve or Text: "is not a mesh ... only mesh objects can be Active or Soft; set its Role to
    None, or convert it", not "the box has zero size"."""
    scene, _ = lab.build_drop_scene(frame_end=3)
    add()
    thing = bpy.context.object
    thing.name = "Thing"
    thing.contact_lab.role = "ACTIVE"
    words = (f"'Thing' is not a mesh ({kind})", "only mesh objects can be Active or Soft", "set its Role to None")
    finding = the_finding(findings_of(scene), "ERROR", "Thing", *words)
    assert "zero size" not in finding.text
    assert "zero size" not in bake_refused(scene, lab, *words)


# lattices, outputs, meshes -----------------------------------------------------------------------------------


def test_huge_lattice_is_refused_at_once(lab):
    """The issue's hang, lattice resolution 64 on a 0.2 m cube: refused within seconds with the tet count, memory
    and time estimate naming the object; the slider's soft maximum is 32 and its hard one 256."""
    scene = rigid_scene(frame_end=24)
    scene.contact_lab.engine = "SOFT"
    lab.add_ground()
    jelly = lab.add_cube("Jelly", (0.0, 0.0, 0.2), size=0.2, role="SOFT")
    jelly.contact_lab.lattice_resolution = 64
    finding = the_finding(findings_of(scene), "ERROR", "Jelly", "1,572,864 tets", "GB of memory", "per frame")
    assert "Lower Lattice Resolution" in finding.fix[0].upper() + finding.fix[1:]
    start = time.perf_counter()
    bake_refused(scene, lab, "'Jelly' at lattice resolution 64", "1,000,000 tets")
    assert time.perf_counter() - start < 5.0
    prop = jelly.contact_lab.bl_rna.properties["lattice_resolution"]
    assert (prop.soft_max, prop.hard_max) == (32, 256)
    jelly.contact_lab.lattice_resolution = 1000
    assert jelly.contact_lab.lattice_resolution == 256
    jelly.contact_lab.lattice_resolution = 12
    info = the_finding(findings_of(scene), "INFO", "Jelly", "lattice resolution 12 gives about")
    assert "tets" in info.text and not [f for f in findings_of(scene) if f.level != "INFO"]


def test_a_beam_thinner_than_two_lattice_cells_is_warned_about(lab):
    """A 1 × 0.1 × 0.1 m soft beam at lattice resolution 8 is 0.8 cells thick: one layer of tets, which locks in
    bending. A warning names it and asks for resolution 40 (4 cells across); at 24 (2.4 cells) nothing is said."""
    scene = rigid_scene(frame_end=24)
    scene.contact_lab.engine = "SOFT"
    lab.add_ground()
    beam = lab.add_cube("Beam", (0.0, 0.0, 0.5), size=1.0, role="SOFT")
    beam.scale = (1.0, 0.1, 0.1)
    beam.contact_lab.lattice_resolution = 8
    bpy.context.view_layer.update()
    finding = the_finding(findings_of(scene), "WARNING", "Beam", "0.8 lattice cells thick", "locks in bending")
    assert "about 40 " in finding.fix
    beam.contact_lab.lattice_resolution = 24
    assert not [f for f in findings_of(scene) if "cells thick" in f.text]


def test_unwritable_cache_folder_is_refused_before_simulating(lab, tmp_path):
    """A PC2 Cache Folder that cannot be created (a file is in the way) is an error about the folder, found before
    the simulation."""
    scene = rigid_scene(frame_end=3)
    scene.contact_lab.engine = "SOFT"
    scene.contact_lab.soft_output = "PC2"
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    scene.contact_lab.soft_cache_dir = str(blocker / "cache")
    lab.add_ground()
    lab.add_cube("Jelly", (0.0, 0.0, 0.2), size=0.2, role="SOFT").contact_lab.lattice_resolution = 2
    the_finding(findings_of(scene), "ERROR", None, "PC2 Cache Folder", "cannot be created", "is a file")
    bake_refused(scene, lab, "PC2 Cache Folder")


def test_missing_uvs_and_unreadable_images_are_refused(lab):
    """Texture friction on a mesh without UVs and a normal map whose file is missing: errors naming the object."""
    scene, objs = lab.build_drop_scene(frame_end=3)
    box = objs["Box"]
    while box.data.uv_layers:
        box.data.uv_layers.remove(box.data.uv_layers[0])
    box.data.update()  # tag it, so the evaluated mesh loses its UVs too
    box.contact_lab.friction_model = "TEXTURE"
    image = bpy.data.images.new("bumps", 4, 4)
    image.source, image.filepath = "FILE", "/nonexistent/bumps.png"  # a file that went missing
    box.contact_lab.normal_map = image
    found = findings_of(scene)
    the_finding(found, "ERROR", "Box", "needs a UV map")
    the_finding(found, "ERROR", "Box", "has no pixel data", "missing or unreadable")
    bake_refused(scene, lab, "'Box'")


def test_flat_and_empty_meshes_are_refused(lab):
    """A flat plane as a soft body, a flat active Mesh and a box on an empty mesh: errors naming each and why."""
    scene = rigid_scene(frame_end=3)
    scene.contact_lab.engine = "SOFT"
    lab.add_ground()
    sheet = lab.add_primitive("plane", "Sheet", size=1.0, location=(0.0, 0.0, 1.0))
    sheet.contact_lab.role = "SOFT"
    the_finding(findings_of(scene), "ERROR", "Sheet", "no volume")

    scene.contact_lab.engine = "RIGID"
    sheet.contact_lab.role, sheet.contact_lab.shape = "ACTIVE", "MESH"
    mesh = bpy.data.meshes.new("Nothing")
    hollow = bpy.data.objects.new("Hollow", mesh)
    scene.collection.objects.link(hollow)
    hollow.contact_lab.role = "ACTIVE"
    found = findings_of(scene)
    the_finding(found, "ERROR", "Sheet", "an active Mesh must be closed")
    the_finding(found, "ERROR", "Hollow", "its mesh is empty (no vertices)")


# the operator and the panel ------------------------------------------------------------------------------------


def test_check_scene_operator_stores_findings_and_the_panel_lists_them(lab):
    """Check Scene stores the findings as JSON and never fails; the panel lists at most 8 with icons per level,
    then "and N more"."""
    from contact_lab.panels import physics

    scene = rigid_scene(frame_end=3)
    lab.add_ground()
    for k in range(10):
        lab.add_cube(f"Box{k}", (3.0 * k, 0.0, 1.0)).scale = (0.0, 1.0, 1.0)
    assert bpy.ops.contact_lab.validate() == {"FINISHED"}
    stored = json.loads(scene.contact_lab.last_validation)
    assert stored["engine"] == "RIGID" and stored["counts"]["ERROR"] == 10
    assert all(f["object_name"] == f"Box{k}" for k, f in enumerate(stored["findings"]))

    layout = lab.FakeLayout()
    physics.draw_check(layout, scene.contact_lab)
    labels = [(kw.get("text", ""), kw.get("icon")) for name, _, kw in layout.log if name == "label"]
    errors = [text for text, icon in labels if icon == physics.FINDING_ICONS["ERROR"]]
    assert len(errors) == physics.MAX_FINDING_LINES and errors[0].startswith("'Box0': its scale is zero on axis X")
    assert ("and 2 more", None) in labels
    assert any(name == "operator" and args[0] == "contact_lab.validate" for name, args, _ in layout.log)

    for k in range(10):
        scene.objects[f"Box{k}"].scale = (1.0, 1.0, 1.0)
    assert bpy.ops.contact_lab.validate() == {"FINISHED"}
    layout = lab.FakeLayout()
    physics.draw_check(layout, scene.contact_lab)
    assert "No problems found" in layout.labels()


def test_a_thousand_bodies_validate_in_well_under_a_second(lab):
    """1000 active boxes and spheres over a ground: the validation (broad phase included) takes under a second and
    finds the two overlapping ones among them."""
    scene = rigid_scene(frame_end=10)
    lab.add_ground(size=200.0)
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.object.data
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5)
    ball = bpy.context.object.data
    for obj in list(scene.objects):
        if obj.name != "Ground":
            bpy.data.objects.remove(obj)
    for i in range(1000):
        obj = bpy.data.objects.new(f"B{i:04d}", ball if i % 2 == 0 else cube)
        obj.location = (3.0 * (i % 32), 3.0 * (i // 32), 1.0 + i % 3)
        scene.collection.objects.link(obj)
        obj.contact_lab.role = "ACTIVE"
        obj.contact_lab.shape = "SPHERE" if i % 2 == 0 else "BOX"
    first = scene.objects["B0000"].location
    scene.objects["B0001"].location = (first.x + 0.5, first.y, first.z)  # the cube's face through the ball's centre
    validate.validate_scene(scene)  # the first call imports modules
    start = time.perf_counter()
    found = validate.validate_scene(scene)
    seconds = time.perf_counter() - start
    print(f"validate_scene on 1001 objects: {seconds * 1000:.0f} ms")
    assert seconds < 1.0
    assert [(f.level, f.object_name) for f in found] == [("WARNING", "B0000")]
