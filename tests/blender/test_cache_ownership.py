"""PC2 caches belong to one output file and one object; objects from a library are refused where a bake would be
lost; Clear Bake leaves no empty animation data; the Cache Folder setting is blend-relative without a warning.

References: the caches read back from disk against the mesh each reopened file plays (vertex counts, evaluated
positions, frame counts), the objects' names in the messages, and the state before the bake (animation data).
"""

import os
import warnings

import numpy as np
import pytest
from cli_tools import file_tree

bpy = pytest.importorskip("bpy")

from contact_lab import __main__ as cli  # noqa: E402
from contact_lab.addon.bake import driver as bake  # noqa: E402
from contact_lab.addon.checks import validate  # noqa: E402
from contact_lab.addon.errors import BakeError  # noqa: E402
from contact_lab.addon.output import caches  # noqa: E402
from contact_lab.addon.output import deform as deform_output  # noqa: E402
from contact_lab.core.formats import pc2  # noqa: E402
from mesh_readback import evaluated_world  # noqa: E402

pytestmark = pytest.mark.blender


def soft_scene(frames=2, output="PC2"):
    """Soft engine, PC2 output into ``//contact_lab_cache/``, a ground plane, frames 1..``frames``."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    settings = scene.contact_lab
    settings.engine, settings.soft_output, settings.soft_cache_dir = "SOFT", output, "//contact_lab_cache/"
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    bpy.context.object.name = "Ground"
    bpy.context.object.contact_lab.role, bpy.context.object.contact_lab.shape = "PASSIVE", "PLANE"
    return scene


def add_soft(name, x=0.0, *, sphere=False):
    """A small soft cube (8 vertices) or icosphere (12 vertices) resting just above the ground, lattice 2."""
    if sphere:
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1, radius=0.2, location=(x, 0.0, 0.25))
    else:
        bpy.ops.mesh.primitive_cube_add(size=0.4, location=(x, 0.0, 0.25))
    obj = bpy.context.object
    obj.name = name
    obj.contact_lab.role, obj.contact_lab.lattice_resolution = "SOFT", 2
    return obj


def played_cache(obj):
    """The cache ``obj``'s modifier reads, checked against what the object shows: ``(path, positions (F, V, 3))``."""
    modifier = obj.modifiers[deform_output.CACHE_MODIFIER_NAME]
    path = os.path.normpath(bpy.path.abspath(modifier.filepath))
    positions, start, _rate = pc2.read_pc2(path)
    assert positions.shape[1] == len(obj.data.vertices), f"{obj.name} plays a cache of another mesh: {path}"
    last = int(start) + positions.shape[0] - 1
    world = np.array(obj.matrix_world)
    expected = positions[-1] @ world[:3, :3].T + world[:3, 3]
    np.testing.assert_allclose(evaluated_world(obj, last), expected, atol=1e-5)
    return path, positions


def test_files_whose_names_clean_alike_keep_their_own_caches(tmp_path):
    """'shot 1.blend' and 'shot_1.blend' in one folder, each with a soft 'Cube' (8 and 12 vertices): baking both
    keeps both caches, and each reopened file plays its own."""
    files = {"shot 1.blend": False, "shot_1.blend": True}
    for name, sphere in files.items():
        bpy.ops.wm.read_factory_settings(use_empty=True)
        scene = soft_scene()
        add_soft("Cube", sphere=sphere)
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / name))
        assert bake.bake_scene(scene)["status"] == "FINISHED"
        bpy.ops.wm.save_mainfile()
    played = set()
    for name, sphere in files.items():
        bpy.ops.wm.open_mainfile(filepath=str(tmp_path / name))
        path, positions = played_cache(bpy.data.objects["Cube"])
        assert positions.shape[1] == (12 if sphere else 8)
        played.add(path)
    assert len(played) == 2


def test_one_input_baked_to_two_outputs_keeps_both(tmp_path):
    """The CLI bakes one input to a/v1.blend (frames 1-2), then b/v2.blend (frames 1-3): each output plays its own
    cache, next to it; the input and its folder are unchanged."""
    (tmp_path / "in").mkdir()
    soft_scene()
    add_soft("Jelly")
    source = tmp_path / "in" / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source))
    before = file_tree(tmp_path / "in")
    outputs = {"a/v1.blend": "1-2", "b/v2.blend": "1-3"}
    for output, frames in outputs.items():
        (tmp_path / output).parent.mkdir()
        code = cli.main(["bake", str(source), "-o", str(tmp_path / output), "--frames", frames])
        assert code == cli.EXIT_OK
    assert file_tree(tmp_path / "in") == before
    for output, frames in outputs.items():
        bpy.ops.wm.open_mainfile(filepath=str(tmp_path / output))
        path, positions = played_cache(bpy.data.objects["Jelly"])
        assert positions.shape[0] == int(frames[-1])
        assert os.path.dirname(path) == str((tmp_path / output).parent / "contact_lab_cache")


def test_object_names_that_clean_or_fold_alike_get_their_own_caches(tmp_path):
    """Objects 'a/b' and 'a_b', 'Cube' and 'cube' in one scene bake into four caches, each played by its object."""
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    scene = soft_scene()
    names = ["a/b", "a_b", "Cube", "cube"]
    for k, name in enumerate(names):
        add_soft(name, x=0.6 * k, sphere=k % 2 == 1)
    report = bake.bake_scene(scene)
    assert len({p.casefold() for p in report["files"]}) == 4
    assert {played_cache(bpy.data.objects[name])[0] for name in names} == set(report["files"])


def test_a_cache_collision_is_refused_before_simulating(tmp_path, monkeypatch):
    """Two objects given the same cache file (the name function forced to collide) are a Check Scene error naming
    both; the bake refuses before simulating and writes nothing."""
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    scene = soft_scene()
    add_soft("Left")
    add_soft("Right", x=1.0)
    monkeypatch.setattr(caches, "cache_file_name", lambda owner, scene_name, object_name: "same.pc2")
    errors = [f for f in validate.validate_scene(scene) if f.level == "ERROR"]
    assert len(errors) == 1 and "'Left' and 'Right'" in errors[0].message and errors[0].fix == "rename one of them"
    with pytest.raises(BakeError, match="'Left' and 'Right' would write the same PC2 cache"):
        bake.bake_scene(scene)
    assert not (tmp_path / "contact_lab_cache").exists() and scene.contact_lab.last_report == ""


def test_cache_folder_errors_state_their_fix_once(tmp_path):
    """A Cache Folder under a file: the finding's message says what is wrong, its fix says what to do, once."""
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    (tmp_path / "blocker").write_text("x")
    scene = soft_scene()
    scene.contact_lab.soft_cache_dir = "//blocker/cache/"
    add_soft("Jelly")
    (finding,) = [f for f in validate.validate_scene(scene) if f.level == "ERROR"]
    assert "cannot be created" in finding.message and "choose" not in finding.message
    assert finding.fix.startswith("choose a folder") and finding.text.count("choose") == 1


def write_library(tmp_path, obj) -> str:
    """Move ``obj`` into a library .blend and link it back into the scene; returns the linked object."""
    path = str(tmp_path / "lib.blend")
    name = obj.name
    bpy.data.libraries.write(path, {obj}, fake_user=True)
    bpy.data.objects.remove(obj)
    with bpy.data.libraries.load(path, link=True) as (_src, dst):
        dst.objects = [name]
    linked = dst.objects[0]
    bpy.context.scene.collection.objects.link(linked)
    return linked


def test_a_linked_active_object_is_refused(lab, tmp_path):
    """An active box linked from a library would lose its keyframes on saving: Check Scene names it and the fix,
    the bake refuses before simulating."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    lab.add_ground()
    linked = write_library(tmp_path, lab.add_cube("Box", (0.0, 0.0, 2.0), size=1.0))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    (finding,) = [f for f in validate.validate_scene(scene) if f.level == "ERROR"]
    assert finding.object_name == "Box" and "linked from the library 'lib.blend'" in finding.message
    assert "Make Local" in finding.fix and "Library Override" in finding.fix
    with pytest.raises(BakeError, match="'Box' is linked"):
        bake.bake_scene(scene)
    assert linked.animation_data is None and scene.contact_lab.last_report == ""


def test_a_library_override_keeps_its_bake_after_reopening(lab, tmp_path):
    """An active box with a library override: baked, saved and reopened, it still plays its keyframes (measured:
    the override stores the action); a soft override with shape-key output is refused (its mesh would revert)."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    lab.add_ground()
    box = write_library(tmp_path, lab.add_cube("Box", (0.0, 0.0, 2.0), size=1.0)).override_create(
        remap_local_usages=True
    )
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    assert bake.bake_scene(scene)["status"] == "FINISHED"
    scene.frame_set(3)
    baked_z = box.matrix_world.translation.z
    assert baked_z < 2.0 - 1e-3  # it fell
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "shot.blend"))
    box = next(o for o in bpy.data.objects if o.name == "Box" and o.library is None)
    assert box.override_library is not None and box.animation_data.action is not None
    bpy.context.scene.frame_set(3)
    assert box.matrix_world.translation.z == pytest.approx(baked_z, abs=1e-6)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = soft_scene(output="SHAPE_KEYS")
    jelly = write_library(tmp_path, add_soft("Jelly")).override_create(remap_local_usages=True)
    (finding,) = [f for f in validate.validate_scene(scene) if f.level == "ERROR"]
    assert finding.object_name == "Jelly" and "library override" in finding.message and "PC2" in finding.fix
    scene.contact_lab.soft_output = "PC2"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "soft.blend"))
    assert not [f for f in validate.validate_scene(scene) if f.level == "ERROR"] and jelly.library is None


def test_clear_bake_leaves_a_never_animated_object_without_animation_data(lab):
    """A box without animation: bake, then Clear Bake, gives it back exactly that (no animation data, no slot)."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    lab.add_ground()
    box = lab.add_cube("Box", (0.0, 0.0, 2.0), size=1.0)
    assert box.animation_data is None
    bake.bake_scene(scene)
    assert box.animation_data is not None and box.animation_data.action is not None
    assert bake.clear_bake(scene) == ["Box"]
    assert box.animation_data is None


def test_the_cache_folder_setting_is_blend_relative_without_a_warning():
    """Registering and a '//' value of the Cache Folder raise no warning; Blender 4.5+ flags it blend-relative."""
    import contact_lab

    contact_lab.unregister()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        contact_lab.register()
        settings = bpy.context.scene.contact_lab
        assert settings.soft_cache_dir == "//contact_lab_cache/"
        settings.soft_cache_dir = "//other/"
    prop = settings.bl_rna.properties["soft_cache_dir"]
    if "is_path_supports_blend_relative" in bpy.types.Property.bl_rna.properties:
        assert prop.is_path_supports_blend_relative


def test_an_ipc_bake_writes_the_cache_its_file_owns(tmp_path):
    """The IPC engine shares the soft engine's caches: the file named after its owner, scene and object, played."""
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    scene = soft_scene()
    scene.contact_lab.engine = "IPC"
    jelly = add_soft("Jelly")
    report = bake.bake_scene(scene)
    expected = tmp_path / "contact_lab_cache" / caches.cache_file_name(str(tmp_path / "shot.blend"), "Scene", "Jelly")
    assert report["files"] == [str(expected)] and played_cache(jelly)[0] == str(expected)
