"""Deform output writers on real bpy: shape keys and PC2 + Mesh Cache play back the baked positions exactly."""

import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from contact_lab.addon.output import deform as deform_output  # noqa: E402
from contact_lab.addon.output import keyframes  # noqa: E402
from contact_lab.core.formats import pc2  # noqa: E402

pytestmark = pytest.mark.blender

FRAMES = np.arange(5, 15, dtype=np.float64)  # F = 10 baked frames starting at 5
TOL = 1e-5


def _subdivided_cube(name="Soft"):
    import bmesh

    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=2.0)
    bmesh.ops.subdivide_edges(bm, edges=bm.edges[:], cuts=3, use_grid_fill=True)
    bm.to_mesh(mesh)
    bm.free()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = (1.0, -2.0, 0.5)  # positions are object-local: the transform must not matter
    return obj


def _rest(obj):
    co = np.empty(len(obj.data.vertices) * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def _deformation(rest, frames):
    """Twist about z, squash and sway: a known, frame-dependent, non-affine-in-time deformation."""
    t = (frames - frames[0])[:, None]
    x, y, z = rest[None, :, 0], rest[None, :, 1], rest[None, :, 2]
    angle = 0.08 * t * z
    c, s = np.cos(angle), np.sin(angle)
    squash = 1.0 - 0.03 * t
    out = np.empty((frames.shape[0], rest.shape[0], 3))
    out[..., 0] = (c * x - s * y) / np.sqrt(squash) + 0.05 * t
    out[..., 1] = (s * x + c * y) / np.sqrt(squash)
    out[..., 2] = z * squash + 0.02 * t * x * x
    return out


def _evaluated(obj, frame, subframe=0.0):
    scene = bpy.context.scene
    scene.frame_set(int(frame), subframe=subframe)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        co = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
    finally:
        ev.to_mesh_clear()
    return co.reshape(-1, 3).astype(np.float64)


def _assert_plays_back(obj, positions):
    for f, expected in zip(FRAMES, positions, strict=True):
        got = _evaluated(obj, f)
        np.testing.assert_allclose(got, expected, atol=TOL, rtol=0, err_msg=f"frame {f}")


def _add_user_key(obj):
    if obj.data.shape_keys is None:
        obj.shape_key_add(name="Basis", from_mix=False)
    user = obj.shape_key_add(name="UserBulge", from_mix=False)
    co = np.empty(len(obj.data.vertices) * 3, np.float32)
    user.data.foreach_get("co", co)
    user.data.foreach_set("co", co * 1.5)
    user.value = 0.0
    return user


# ---------------------------------------------------------------- shape keys


def test_shape_keys_play_back_every_frame():
    obj = _subdivided_cube()
    rest = _rest(obj)
    positions = _deformation(rest, FRAMES)
    key = deform_output.write_shape_keys(obj, FRAMES, positions)

    assert key == obj.data.shape_keys
    names = [b.name for b in key.key_blocks]
    assert names[0] == "Basis" and len(names) == 1 + len(FRAMES)
    assert names[1] == "contact_lab_00005"
    _assert_plays_back(obj, positions)

    # the Key ID has its own action (slot id_type 'KEY' on 4.4+), one value curve per block, 3 keys each
    action = key.animation_data.action
    assert action is not None and obj.animation_data is None
    if keyframes.uses_layered_actions():
        slot = key.animation_data.action_slot
        assert slot is not None and slot.target_id_type == "KEY"
        curves = action.layers[0].strips[0].channelbag(slot).fcurves
    else:
        assert action.id_root == "KEY"
        curves = action.fcurves
    assert len(curves) == len(FRAMES)
    assert all(len(fc.keyframe_points) == 3 for fc in curves)
    assert all(kp.interpolation == "LINEAR" for fc in curves for kp in fc.keyframe_points)

    # exactly one baked block is 1 at each baked frame
    for i, f in enumerate(FRAMES):
        bpy.context.scene.frame_set(int(f))
        values = np.array([b.value for b in key.key_blocks[1:]])
        expected = np.zeros(len(FRAMES))
        expected[i] = 1.0
        np.testing.assert_allclose(values, expected, atol=1e-7)

    # outside the baked range the Basis shows (0 keys at f0-1 and f_last+1)
    np.testing.assert_allclose(_evaluated(obj, FRAMES[0] - 1), rest, atol=TOL)
    np.testing.assert_allclose(_evaluated(obj, FRAMES[-1] + 1), rest, atol=TOL)


@pytest.mark.parametrize("interpolation", ["LINEAR", "CONSTANT"])
def test_shape_keys_between_frames(interpolation):
    obj = _subdivided_cube()
    positions = _deformation(_rest(obj), FRAMES)
    deform_output.write_shape_keys(obj, FRAMES, positions, interpolation=interpolation)
    got = _evaluated(obj, FRAMES[3], subframe=0.5)
    expected = 0.5 * (positions[3] + positions[4]) if interpolation == "LINEAR" else positions[3]
    np.testing.assert_allclose(got, expected, atol=TOL)


def test_shape_keys_hold_ends():
    obj = _subdivided_cube()
    positions = _deformation(_rest(obj), FRAMES)
    deform_output.write_shape_keys(obj, FRAMES, positions, hold_ends=True)
    np.testing.assert_allclose(_evaluated(obj, FRAMES[-1] + 5), positions[-1], atol=TOL)
    np.testing.assert_allclose(_evaluated(obj, FRAMES[0] - 3), positions[0], atol=TOL)


def test_shape_keys_rewrite_replaces_previous_output():
    obj = _subdivided_cube()
    rest = _rest(obj)
    deform_output.write_shape_keys(obj, FRAMES, _deformation(rest, FRAMES))
    positions = _deformation(rest, FRAMES)[::-1].copy()
    deform_output.write_shape_keys(obj, FRAMES, positions)
    assert len(obj.data.shape_keys.key_blocks) == 1 + len(FRAMES)
    assert len(bpy.data.actions) == 1
    _assert_plays_back(obj, positions)


def test_shape_keys_reject_bad_input_without_changes():
    obj = _subdivided_cube()
    positions = _deformation(_rest(obj), FRAMES)
    with pytest.raises(ValueError):
        deform_output.write_shape_keys(obj, FRAMES, positions[:, :-1])
    with pytest.raises(ValueError):
        deform_output.write_shape_keys(obj, FRAMES[::-1], positions)
    bad = positions.copy()
    bad[2, 3, 1] = np.nan
    with pytest.raises(ValueError):
        deform_output.write_shape_keys(obj, FRAMES, bad)
    assert obj.data.shape_keys is None and len(bpy.data.actions) == 0


def test_remove_shape_keys_restores_mesh_and_keeps_user_key():
    obj = _subdivided_cube()
    rest = _rest(obj)
    user = _add_user_key(obj)
    user.value = 0.0
    deform_output.write_shape_keys(obj, FRAMES, _deformation(rest, FRAMES))
    assert len(obj.data.shape_keys.key_blocks) == 2 + len(FRAMES)

    assert deform_output.remove_deform_output(obj)
    key = obj.data.shape_keys
    assert [b.name for b in key.key_blocks] == ["Basis", "UserBulge"]
    assert key.animation_data is None and len(bpy.data.actions) == 0
    for f in (FRAMES[0], FRAMES[5]):
        np.testing.assert_allclose(_evaluated(obj, f), rest, atol=TOL)
    key.key_blocks["UserBulge"].value = 1.0
    np.testing.assert_allclose(_evaluated(obj, FRAMES[0]), 1.5 * rest, atol=TOL)
    assert not deform_output.remove_deform_output(obj)


def test_remove_shape_keys_without_user_keys_clears_key():
    obj = _subdivided_cube()
    rest = _rest(obj)
    deform_output.write_shape_keys(obj, FRAMES, _deformation(rest, FRAMES))
    deform_output.remove_deform_output(obj)
    assert obj.data.shape_keys is None and len(bpy.data.actions) == 0
    np.testing.assert_allclose(_evaluated(obj, FRAMES[4]), rest, atol=TOL)


def test_user_action_on_key_is_kept():
    obj = _subdivided_cube()
    rest = _rest(obj)
    user = _add_user_key(obj)
    user.keyframe_insert("value", frame=1)
    user_action = obj.data.shape_keys.animation_data.action
    deform_output.write_shape_keys(obj, FRAMES, _deformation(rest, FRAMES))
    assert obj.data.shape_keys.animation_data.action == user_action
    _assert_plays_back(obj, _deformation(rest, FRAMES))
    deform_output.remove_deform_output(obj)
    key = obj.data.shape_keys
    assert key.animation_data.action == user_action and user_action.name in bpy.data.actions
    paths = [fc.data_path for fc in _key_fcurves(key)]
    assert paths == ['key_blocks["UserBulge"].value']


def _key_fcurves(key):
    action = key.animation_data.action
    if not keyframes.uses_layered_actions():
        return list(action.fcurves)
    return list(action.layers[0].strips[0].channelbag(key.animation_data.action_slot).fcurves)


# ---------------------------------------------------------------- PC2 + Mesh Cache


def test_pc2_mesh_cache_plays_back_every_frame(tmp_path):
    obj = _subdivided_cube()
    positions = _deformation(_rest(obj), FRAMES)
    path = tmp_path / "soft.pc2"
    pc2.write_pc2(path, positions, start_frame=FRAMES[0])
    mod = deform_output.attach_pc2(obj, str(path), frame_start=FRAMES[0])

    assert mod.name == "Contact Lab Cache" and mod.type == "MESH_CACHE"
    assert mod.cache_format == "PC2" and mod.frame_start == FRAMES[0]
    assert (mod.forward_axis, mod.up_axis) == ("POS_Y", "POS_Z")
    assert os.path.isabs(mod.filepath)  # unsaved .blend: absolute
    # frame_start maps sample 0 to the first baked frame, sample i to frame_start + i
    _assert_plays_back(obj, positions)
    # linear interpolation between samples
    got = _evaluated(obj, FRAMES[2], subframe=0.5)
    np.testing.assert_allclose(got, 0.5 * (positions[2] + positions[3]), atol=TOL)


def test_pc2_relative_path_when_saved_and_first_in_stack(tmp_path):
    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    obj = _subdivided_cube()
    obj.modifiers.new("Subsurf", "SUBSURF")
    positions = _deformation(_rest(obj), FRAMES)
    (tmp_path / "cache").mkdir()
    path = tmp_path / "cache" / "soft.pc2"
    pc2.write_pc2(path, positions, start_frame=FRAMES[0])
    mod = deform_output.attach_pc2(obj, path, frame_start=FRAMES[0])
    assert mod.filepath.replace("\\", "/") == "//cache/soft.pc2"
    assert obj.modifiers[0] == mod
    obj.modifiers.remove(obj.modifiers["Subsurf"])
    _assert_plays_back(obj, positions)
    # re-attaching reuses the modifier
    assert deform_output.attach_pc2(obj, path, frame_start=FRAMES[0] + 1) == mod
    assert len(obj.modifiers) == 1
    np.testing.assert_allclose(_evaluated(obj, FRAMES[1]), positions[0], atol=TOL)


def test_pc2_vertex_count_mismatch(tmp_path):
    obj = _subdivided_cube()
    path = tmp_path / "bad.pc2"
    pc2.write_pc2(path, np.zeros((3, 5, 3)), start_frame=1)
    with pytest.raises(ValueError, match="vertices"):
        deform_output.attach_pc2(obj, path, frame_start=1)
    assert len(obj.modifiers) == 0


def test_remove_pc2_restores_mesh_and_keeps_user_key(tmp_path):
    obj = _subdivided_cube()
    rest = _rest(obj)
    _add_user_key(obj)
    other = obj.modifiers.new("UserDisplace", "DISPLACE")
    other.strength = 0.0
    positions = _deformation(rest, FRAMES)
    path = tmp_path / "soft.pc2"
    pc2.write_pc2(path, positions, start_frame=FRAMES[0])
    deform_output.attach_pc2(obj, path, frame_start=FRAMES[0])
    _assert_plays_back(obj, positions)

    assert deform_output.remove_deform_output(obj)
    assert [m.name for m in obj.modifiers] == ["UserDisplace"]
    assert [b.name for b in obj.data.shape_keys.key_blocks] == ["Basis", "UserBulge"]
    assert path.exists()
    for f in FRAMES[::3]:
        np.testing.assert_allclose(_evaluated(obj, f), rest, atol=TOL)
