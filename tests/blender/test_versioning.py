"""Files saved before a default changed open with the old default (``addon/versioning.py``), in real Blender.

Reference: the value each file was made with. A soft object saved by a version whose default Lattice Resolution
was 12 (the setting left unset, so the file stores nothing) must bake at 12 after the default became 8, and one
saved before Lattice Fit existed keeps the padded lattice, one saved before IPC split a mesh's faces keeps IPC on the
mesh's own faces; a file saved now keeps following today's defaults;
values set by hand never change.
"""

import pytest

bpy = pytest.importorskip("bpy")

from contact_lab.addon import versioning  # noqa: E402


def _soft_cubes(lab):
    unset = lab.add_cube("Unset", location=(0.0, 0.0, 1.0), role="SOFT")
    manual = lab.add_cube("Manual", location=(3.0, 0.0, 1.0), role="SOFT")
    manual.contact_lab.lattice_resolution = 5
    return unset, manual


def _reopened_from_version(lab, tmp_path, version: int) -> str:
    """The two soft cubes saved as Contact Lab's settings ``version`` did (no newer version stamped), then opened
    again in a fresh Blender session; returns the file's path."""
    path = str(tmp_path / f"made_with_version_{version}.blend")
    versioning.unregister()
    try:
        _soft_cubes(lab)
        bpy.context.scene.contact_lab.settings_version = version
        bpy.ops.wm.save_as_mainfile(filepath=path)
    finally:
        versioning.register()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    return path


def test_a_file_saved_before_the_changes_keeps_lattice_resolution_12_and_the_padded_lattice(lab, tmp_path):
    path = _reopened_from_version(lab, tmp_path, 0)
    unset, manual = bpy.data.objects["Unset"], bpy.data.objects["Manual"]
    assert unset.contact_lab.lattice_resolution == 12 and unset.contact_lab.is_property_set("lattice_resolution")
    assert manual.contact_lab.lattice_resolution == 5
    assert unset.contact_lab.lattice_fit == "PADDED" and manual.contact_lab.lattice_fit == "PADDED"
    assert bpy.context.scene.contact_lab.settings_version == versioning.SETTINGS_VERSION
    # saved again, it stays at 12 (now stored) and no longer counts as old
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    assert bpy.data.objects["Unset"].contact_lab.lattice_resolution == 12


def test_a_file_saved_at_version_2_keeps_ipcs_mesh_surface_and_nothing_else_changes(lab, tmp_path):
    """Saved after Lattice Fit came and before IPC's split surface: IPC keeps colliding the mesh's own faces (on the
    padded lattice it then needs), while the Lattice Fit it was saved with stays."""
    _reopened_from_version(lab, tmp_path, 2)
    unset = bpy.data.objects["Unset"]
    assert unset.contact_lab.ipc_surface == "MESH" and unset.contact_lab.is_property_set("ipc_surface")
    assert unset.contact_lab.lattice_fit == "FITTED" and not unset.contact_lab.is_property_set("lattice_fit")
    assert unset.contact_lab.lattice_resolution == 8


def test_a_file_saved_now_follows_todays_default(lab, tmp_path):
    path = str(tmp_path / "made_now.blend")
    _soft_cubes(lab)
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert bpy.context.scene.contact_lab.settings_version == versioning.SETTINGS_VERSION  # stamped on save
    bpy.ops.wm.open_mainfile(filepath=path)
    unset = bpy.data.objects["Unset"]
    assert unset.contact_lab.lattice_resolution == 8 and not unset.contact_lab.is_property_set("lattice_resolution")
    assert unset.contact_lab.lattice_fit == "FITTED" and not unset.contact_lab.is_property_set("lattice_fit")
    assert unset.contact_lab.ipc_surface == "REFINED" and not unset.contact_lab.is_property_set("ipc_surface")
    assert bpy.data.objects["Manual"].contact_lab.lattice_resolution == 5


def test_an_old_file_open_when_the_extension_is_updated_is_upgraded(lab, tmp_path):
    # The extension is re-registered while the file stays open: no load event, the registration's timer upgrades.
    path = str(tmp_path / "open_during_update.blend")
    versioning.unregister()
    try:
        _soft_cubes(lab)
        bpy.context.scene.contact_lab.settings_version = 0
        bpy.ops.wm.save_as_mainfile(filepath=path)
        # what the timer calls (bpy's module runs no timers): both get the padded lattice, Unset resolution 12 too
        assert versioning.upgrade_file() == ["Manual", "Unset"]
    finally:
        versioning.register()
    assert bpy.data.objects["Unset"].contact_lab.lattice_resolution == 12
    assert versioning.upgrade_file() == []  # once
