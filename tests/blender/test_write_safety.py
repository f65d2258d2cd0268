"""Nothing lost: a failure at any point of a bake's write leaves the scene and the cache files bit-identical.

A finished job's write phase (:meth:`BakeJob.finish`) is re-run with a failure injected at every step of its
transaction (``Transaction.step``: every change of Blender data, every file written or renamed), at every F-curve
written while building (``keyframes.write_fcurve``: inside the new actions and shape keys), and after each
object's shape keys or PC2 file were built, cycling through MemoryError, RuntimeError, OSError and
KeyboardInterrupt. After each failure, a fingerprint of the whole file (every object's transform, settings,
custom properties, modifiers with every setting and animation data; every action with its keyframes; every mesh
with its shape keys; the data-block names) and of every file under the test folder (hidden ones too) equals
the one taken before, and the stored report says FAILED and why. The last run, with nothing injected, bakes.

The simulation runs once per scenario (3 frames, lattice resolution 2); only the write is repeated.
"""

import itertools
import json
import os
import re

import numpy as np
import pytest
from scene_fingerprint import assert_same, fingerprint

bpy = pytest.importorskip("bpy")

from contact_lab.addon.bake import driver as bake  # noqa: E402
from contact_lab.addon.output import actions, keyframes  # noqa: E402
from contact_lab.addon.output import deform as deform_output  # noqa: E402
from contact_lab.addon.output.caches import cache_file_name  # noqa: E402
from contact_lab.addon.output.transaction import Transaction  # noqa: E402
from contact_lab.core.formats import pc2  # noqa: E402

pytestmark = pytest.mark.blender

FRAMES = np.arange(1.0, 4.0)
INJECTED = (MemoryError, RuntimeError, OSError, KeyboardInterrupt)
PREPARE_STEPS = (
    "build the keyframes of",
    "write the shape keys of",
    "remove the previous shape keys of",
    "write the PC2",
)
COMMIT_STEPS = ("give", "add the cache modifier", "set up the cache modifier", "disable the", "put the new PC2")


def _counting(real, index, exc_type, hit, what, *, after=False):
    calls = itertools.count(1)

    def wrapper(*args, **kwargs):
        n = next(calls)
        if n == index and not after:
            hit.append(what(args, n))
            raise exc_type(f"injected at {what(args, n)}")
        result = real(*args, **kwargs)
        if n == index:
            hit.append(what(args, n))
            raise exc_type(f"injected after {what(args, n)}")
        return result

    return wrapper


def at_step(mp, index, exc_type, hit):
    """Fail the ``index``-th transaction step, before it changes anything."""
    real = Transaction.step
    calls = itertools.count(1)

    def step(self, label, do, **kwargs):
        if next(calls) == index:
            hit.append(label)

            def do():
                raise exc_type(f"injected at {label}")

        return real(self, label, do, **kwargs)

    mp.setattr(Transaction, "step", step)


def at_fcurve(mp, index, exc_type, hit):
    """Fail the ``index``-th F-curve written (inside new actions and shape keys)."""
    real = keyframes.write_fcurve
    mp.setattr(keyframes, "write_fcurve", _counting(real, index, exc_type, hit, lambda a, n: f"F-curve {n}"))


def after_shape_keys(mp, index, exc_type, hit):
    """Fail right after the ``index``-th object's shape keys were completely built (on the mesh copy)."""
    real = deform_output.write_shape_keys
    what = lambda a, n: f"shape keys of object {n} built"  # noqa: E731
    mp.setattr(deform_output, "write_shape_keys", _counting(real, index, exc_type, hit, what, after=True))


def half_written_pc2(mp, index, exc_type, hit):
    """The ``index``-th PC2 file write dies half-way (e.g. a full disk), leaving a partial file behind."""
    real = pc2.write_pc2
    calls = itertools.count(1)

    def write(path, positions, **kwargs):
        n = next(calls)
        if n != index:
            return real(path, positions, **kwargs)
        real(path, positions, **kwargs)
        with open(path, "r+b") as fh:
            fh.truncate(40)
        hit.append(f"PC2 file {n}")
        raise exc_type(28, "No space left on device") if exc_type is OSError else exc_type("injected")

    mp.setattr(pc2, "write_pc2", write)


def at_discard(mp, index, exc_type, hit):
    """Fail the ``index``-th clean-up registered to run after the commit (removing what was replaced)."""
    real = Transaction.on_commit
    calls = itertools.count(1)

    def on_commit(self, label, discard):
        if next(calls) == index:
            hit.append(label)

            def discard():
                raise exc_type(f"injected at {label}")

        return real(self, label, discard)

    mp.setattr(Transaction, "on_commit", on_commit)


def inject_everywhere(job, scene, root, patch, monkeypatch, *, first_bake=True):
    """Re-run ``job.finish()`` with ``patch`` failing injection point 1, 2, … until a run goes through.

    After every failure the fingerprint equals the one before, and the stored report says FAILED, names the
    exception type and (for transaction steps) the step. The run that goes through changes the fingerprint when
    it replaces the scene's previous state (``first_bake``). Returns the labels of the failures and the report.
    """
    before = fingerprint(root)
    labels = []
    for index in itertools.count(1):
        exc_type = INJECTED[index % len(INJECTED)]
        hit = []
        with monkeypatch.context() as mp:
            patch(mp, index, exc_type, hit)
            try:
                report = job.finish()
            except (bake.BakeError, KeyboardInterrupt) as exc:
                assert hit, f"the write failed without an injected failure: {exc!r}"
                assert isinstance(exc, KeyboardInterrupt) == (exc_type is KeyboardInterrupt)
                assert_same(before, fingerprint(root), f"failure at {hit[0]!r} ({exc_type.__name__})")
                stored = json.loads(scene.contact_lab.last_report)
                assert stored["status"] == "FAILED", hit
                assert exc_type.__name__ in stored["error"] and "nothing was changed" in stored["error"]
                if patch is at_step and exc_type is not KeyboardInterrupt:  # (that one propagates as it is)
                    assert f"while trying to {hit[0]}" in stored["error"]
                labels.append(hit[0])
                continue
        assert not hit and report["status"] == "FINISHED"
        assert json.loads(scene.contact_lab.last_report)["status"] == "FINISHED"
        if first_bake:  # the write really changes something: the checks above can fail
            assert fingerprint(root) != before
        return labels, report
    raise AssertionError("unreachable")


# scenes --------------------------------------------------------------------------------------------------------


def add_soft_cube(name, location):
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=location)
    obj = bpy.context.object
    obj.name = obj.data.name = name
    obj.contact_lab.role = "SOFT"
    obj.contact_lab.soft_preset = "GEL"
    obj.contact_lab.lattice_resolution = 2
    return obj


def rest_positions(obj):
    co = np.empty(3 * len(obj.data.vertices), np.float32)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def wobble(obj, amount=0.05):
    """A made-up previous bake: the rest shape swelling over the frames, (F, V, 3)."""
    rest = rest_positions(obj)
    return np.stack([rest * (1.0 + amount * k) for k in range(len(FRAMES))])


def build_soft_scene(lab, tmp_path, output):
    """Three soft cubes and an active box with every kind of previous state a bake must keep or replace.

    Jelly.A: a previous Contact Lab shape-key bake, plus the user's key "Smile" keyed in the same Key action.
    Jelly.B: a previous PC2 bake (file + Contact Lab Cache modifier) and the user's "Wobble" modifier after it.
    Jelly.C: the user's own shape keys keyed in the user's own Key action "PinchAction", and a Smooth modifier.
    Crate (active box): a previous keyframe bake. The cache folder holds an unrelated file.
    """
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, len(FRAMES)
    settings = scene.contact_lab
    settings.engine, settings.soft_output, settings.soft_cache_dir = "SOFT", output, "//contact_lab_cache/"
    lab.add_ground(size=10.0)
    jelly_a = add_soft_cube("Jelly.A", (0.0, 0.0, 0.25))
    jelly_b = add_soft_cube("Jelly.B", (1.0, 0.0, 0.25))
    jelly_c = add_soft_cube("Jelly.C", (2.0, 0.0, 0.25))
    crate = lab.add_cube("Crate", (0.0, 1.5, 0.5), size=0.4, mass=2.0)
    scene.frame_set(1)

    deform_output.write_shape_keys(jelly_a, FRAMES, wobble(jelly_a), hold_ends=True)
    smile = jelly_a.shape_key_add(name="Smile", from_mix=False)
    smile.value = 0.25
    smile.keyframe_insert("value", frame=2)
    jelly_a["asset_id"] = 7

    cache = tmp_path / "contact_lab_cache"
    cache.mkdir()
    (cache / "notes.txt").write_text("not Contact Lab's")
    previous = cache / cache_file_name(str(tmp_path / "shot.blend"), "Scene", "Jelly.B")
    pc2.write_pc2(previous, wobble(jelly_b, 0.1), start_frame=1.0)
    deform_output.attach_pc2(jelly_b, str(previous), frame_start=1)
    jelly_b.modifiers.new("Wobble", "DISPLACE").strength = 0.0

    jelly_c.shape_key_add(name="Basis", from_mix=False)
    pinch = jelly_c.shape_key_add(name="Pinch", from_mix=False)
    pinch.data[0].co = (0.3, 0.3, 0.3)
    pinch.keyframe_insert("value", frame=1)
    jelly_c.data.shape_keys.animation_data.action.name = "PinchAction"
    jelly_c.modifiers.new("Smooth", "SMOOTH").factor = 0.0  # the active modifier, until a cache modifier is added

    location = np.array([[0.0, 1.5, 0.5 - 0.01 * k] for k in range(len(FRAMES))])
    quaternion = np.tile([1.0, 0.0, 0.0, 0.0], (len(FRAMES), 1))
    actions.key_transforms([crate], FRAMES, [(location, quaternion)])
    scene.frame_set(1)
    return scene, [jelly_a, jelly_b, jelly_c], crate


def build_rigid_scene(lab):
    """Three active boxes: Box.A with a previous bake, Box.B with the user's action (Euler; its slot renamed),
    Box.C in Axis Angle with a custom property, unanimated (4.4+: its action unassigned, its slot remembered)."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, len(FRAMES)
    lab.add_ground()
    box_a = lab.add_cube("Box.A", (0.0, 0.0, 1.0))
    box_b = lab.add_cube("Box.B", (3.0, 0.0, 1.0))
    box_c = lab.add_cube("Box.C", (6.0, 0.0, 1.0))
    location = np.array([[0.0, 0.0, 1.0 + 0.01 * k] for k in range(len(FRAMES))])
    actions.key_transforms([box_a], FRAMES, [(location, np.tile([1.0, 0.0, 0.0, 0.0], (len(FRAMES), 1)))])
    box_b.rotation_euler = (0.1, 0.2, 0.3)
    box_b.keyframe_insert("location", frame=1)
    box_b.keyframe_insert("rotation_euler", frame=1)
    if keyframes.uses_layered_actions():  # a slot named unlike the bake's: the last-used slot must come back too
        box_b.animation_data.action_slot.name_display = "Legacy"
    box_c.rotation_mode = "AXIS_ANGLE"
    box_c.rotation_axis_angle = (0.4, 0.0, 0.6, 0.8)
    box_c["note"] = "keep"
    if keyframes.uses_layered_actions():  # animation data without an action: Blender remembers the last slot
        box_c.keyframe_insert("location", frame=1)
        box_c.animation_data.action_slot.name_display = "Unassigned"
        box_c.animation_data.action.use_fake_user = True
        box_c.animation_data.action = None
    scene.frame_set(1)
    return scene, [box_a, box_b, box_c]


# checks of a successful write -------------------------------------------------------------------------------------


def check_soft_result(job, output, tmp_path, *, leftovers=False):
    """The baked output is complete: shape keys or PC2 files equal to the job's positions, user data kept; no
    orphan data-block and no hidden file is left (unless ``leftovers``: a failed clean-up)."""
    ex = job.export
    positions = {
        b.object_name: b.local_positions(t, ex.length_scale)
        for b, t in zip(ex.bodies, job.tet_positions(), strict=True)
    }
    cache = tmp_path / "contact_lab_cache"
    for name, local in positions.items():
        obj = bpy.data.objects[name]
        key = obj.data.shape_keys
        if output == "SHAPE_KEYS":
            blocks = [b for b in key.key_blocks if b.name.startswith("contact_lab_")]
            assert [b.name for b in blocks] == [f"contact_lab_{f:05d}" for f in range(1, len(FRAMES) + 1)]
            for block, expected in zip(blocks, local, strict=True):
                co = np.empty(3 * len(block.data), np.float32)
                block.data.foreach_get("co", co)
                np.testing.assert_array_equal(co.reshape(-1, 3), expected.astype(np.float32))
            assert not any(m.type == "MESH_CACHE" and m.show_viewport for m in obj.modifiers)
        else:
            assert key is None or not any(b.name.startswith("contact_lab_") for b in key.key_blocks)
            data, _, _ = pc2.read_pc2(cache / cache_file_name(str(tmp_path / "shot.blend"), "Scene", name))
            np.testing.assert_array_equal(data, local.astype(np.float32))
            modifier = obj.modifiers[0]
            assert modifier.name == deform_output.CACHE_MODIFIER_NAME and modifier.show_viewport
    assert "Smile" in bpy.data.objects["Jelly.A"].data.shape_keys.key_blocks
    assert "Pinch" in bpy.data.objects["Jelly.C"].data.shape_keys.key_blocks
    assert bpy.data.objects["Jelly.A"]["asset_id"] == 7
    assert "Wobble" in bpy.data.objects["Jelly.B"].modifiers
    assert (cache / "notes.txt").read_text() == "not Contact Lab's"
    crate = bpy.data.objects["Crate"]
    assert crate.animation_data.action == crate.contact_lab.baked_action
    if leftovers:
        return
    # no orphan left behind by the swap (a leftover of the replaced data would be saved or linger)
    assert not any(name.startswith(".") for name in os.listdir(cache))
    assert all(k.user is not None for k in bpy.data.shape_keys)
    assert not [m.name for m in bpy.data.meshes if not m.users] and not [
        a.name for a in bpy.data.actions if not a.users
    ]


# tests ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("output", ["SHAPE_KEYS", "PC2"])
def test_soft_write_failure_at_any_step_changes_nothing(lab, tmp_path, monkeypatch, output):
    """3 soft objects and a box: a failure at every write step, every F-curve and after every object's build
    leaves the scene and the cache files bit-identical with a FAILED report; then the write goes through."""
    scene, jellies, _ = build_soft_scene(lab, tmp_path, output)
    job = bake.start_bake(scene)
    job.run()

    labels, report = inject_everywhere(job, scene, tmp_path, at_step, monkeypatch)
    # every object index was hit in the prepare phase (building beside the old data) and in the commit phase
    for name in ("Jelly.A", "Jelly.B", "Jelly.C", "Crate"):
        mine = [label for label in labels if f"'{name}'" in label]
        assert any(label.startswith(PREPARE_STEPS) for label in mine), (name, labels)
        assert any(label.startswith(COMMIT_STEPS) for label in mine), (name, labels)
    if output == "PC2":
        assert any("keep the previous file" in label and "Jelly.B" in label for label in labels)
        assert all(any(f"new PC2 cache of '{j.name}' in place" in label for label in labels) for j in jellies)
        assert sorted(report["files"]) == [
            str(tmp_path / "contact_lab_cache" / cache_file_name(str(tmp_path / "shot.blend"), "Scene", j.name))
            for j in jellies
        ]
    else:
        assert any("disable the previous cache modifier of 'Jelly.B'" in label for label in labels)
    check_soft_result(job, output, tmp_path)
    assert sorted(m.name for m in bpy.data.meshes if m.name.startswith("Jelly")) == ["Jelly.A", "Jelly.B", "Jelly.C"]

    # failures inside the builders: every F-curve (the box's action, each shape key's value) and every object's
    # build (shape keys complete on the mesh copy, or a PC2 file written half-way)
    labels, _ = inject_everywhere(job, scene, tmp_path, at_fcurve, monkeypatch, first_bake=False)
    assert len(labels) == 7 + (3 * len(FRAMES) if output == "SHAPE_KEYS" else 0)
    check_soft_result(job, output, tmp_path)
    partial = after_shape_keys if output == "SHAPE_KEYS" else half_written_pc2
    labels, _ = inject_everywhere(job, scene, tmp_path, partial, monkeypatch, first_bake=False)
    assert len(labels) == 3
    check_soft_result(job, output, tmp_path)

    # a failure while removing what was replaced (after the commit): the bake stands, the leftover is reported
    for index in itertools.count(1):
        hit = []
        with monkeypatch.context() as mp:
            at_discard(mp, index, INJECTED[index % 3], hit)
            report = job.finish()
        if not hit:
            break
        assert report["status"] == "FINISHED"
        assert any(w.startswith(f"could not {hit[0]}") and "leftover" in w for w in report["warnings"]), hit
        check_soft_result(job, output, tmp_path, leftovers=True)
    assert index > 4  # replaced meshes, the disabled modifier or the cache backups, the crate's action


def test_rigid_write_failure_at_any_step_changes_nothing(lab, tmp_path, monkeypatch):
    """3 active boxes (a previous bake, a user action in Euler, Axis Angle without animation): a failure at every
    write step and every F-curve leaves everything bit-identical with a FAILED report; then the write goes through."""
    scene, boxes = build_rigid_scene(lab)
    job = bake.start_bake(scene)
    job.run()

    labels, report = inject_everywhere(job, scene, tmp_path, at_step, monkeypatch)
    for box in boxes:
        for verb in ("build the keyframes of", "give", "set the rotation mode of", "record the new bake of"):
            assert any(verb in label and f"'{box.name}'" in label for label in labels), (verb, box.name, labels)
    fcurve_labels, _ = inject_everywhere(job, scene, tmp_path, at_fcurve, monkeypatch, first_bake=False)
    assert len(fcurve_labels) == 7 * len(boxes)

    for box in boxes:
        assert box.animation_data.action.name == f"{box.name}{actions.ACTION_SUFFIX}"
        assert box.rotation_mode == "QUATERNION" and box.contact_lab.baked_action == box.animation_data.action
    assert len([a for a in bpy.data.actions if a.name.startswith("Box.A")]) == 1  # the replaced bake was removed
    assert boxes[1].contact_lab.previous_action.name == "Box.BAction" and report["warnings"] == []
    # Clear Bake still gives every box back what it had before its first bake
    bake.clear_bake(scene)
    assert boxes[1].animation_data.action.name == "Box.BAction" and boxes[1].rotation_mode == "XYZ"
    # (Clear Bake keeps no axis-angle copy: it comes back through the quaternion, to round-off)
    assert boxes[2].rotation_mode == "AXIS_ANGLE"
    assert tuple(boxes[2].rotation_axis_angle) == pytest.approx((0.4, 0.0, 0.6, 0.8), abs=1e-6)


@pytest.mark.parametrize("exc_type", [MemoryError, RuntimeError])
def test_any_exception_in_the_simulation_is_a_message_and_a_failed_report(lab, tmp_path, monkeypatch, exc_type):
    """A MemoryError or RuntimeError from the core at frame 3 is a BakeError naming the frame and the type (the
    operator reports it, no traceback), with a stored FAILED report; nothing changes."""
    from contact_lab.addon.rigid import job as rigid_job

    scene, _ = build_rigid_scene(lab)
    before = fingerprint(tmp_path)
    real = rigid_job.iter_simulate

    def failing(*args, **kwargs):
        for n, item in enumerate(real(*args, **kwargs)):
            if n == 2:
                raise exc_type("the core gave up")
            yield item

    monkeypatch.setattr(rigid_job, "iter_simulate", failing)
    expected = rf"Simulation failed at frame 3 \({exc_type.__name__}: the core gave up\).*nothing was changed"
    with pytest.raises(bake.BakeError, match=expected):
        bake.bake_scene(scene)
    stored = json.loads(scene.contact_lab.last_report)
    assert stored["status"] == "FAILED" and stored["frames"]["simulated"] == 2
    assert re.search(expected, stored["error"])
    if exc_type is MemoryError:
        assert "out of memory" in stored["error"]
    with pytest.raises(RuntimeError, match=expected):  # the operator: a report, not a traceback
        bpy.ops.contact_lab.bake()
    assert_same(before, fingerprint(tmp_path), "a failed simulation")


def test_a_failed_write_through_bake_scene_stores_a_failed_report(lab, tmp_path, monkeypatch):
    """bake_scene: the write phase fails (a RuntimeError inside Blender data): FAILED report naming the step."""
    scene, _ = build_rigid_scene(lab)
    before = fingerprint(tmp_path)
    hit = []
    at_step(monkeypatch, 5, RuntimeError, hit)
    with pytest.raises(bake.BakeError, match="while trying to"):
        bake.bake_scene(scene)
    stored = json.loads(scene.contact_lab.last_report)
    assert stored["status"] == "FAILED" and hit[0] in stored["error"] and "RuntimeError" in stored["error"]
    assert stored["frames"]["simulated"] == len(FRAMES)
    assert_same(before, fingerprint(tmp_path), "a failed write")


def test_linked_duplicates_bake_to_pc2_and_refuse_shape_keys(lab, tmp_path):
    """Two soft cubes sharing one mesh (Alt+D) with a previous shape-key bake on it: PC2 gives each its own file
    and modifier and drops the old keys from the shared mesh once; shape keys are refused, naming both."""
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, len(FRAMES)
    scene.contact_lab.engine, scene.contact_lab.soft_output = "SOFT", "PC2"
    lab.add_ground(size=10.0)
    first = add_soft_cube("Jelly.A", (0.0, 0.0, 0.25))
    second = first.copy()  # a linked duplicate: same mesh
    second.name = "Jelly.B"
    second.location.x = 1.0
    scene.collection.objects.link(second)
    deform_output.write_shape_keys(first, FRAMES, wobble(first), hold_ends=True)
    scene.frame_set(1)
    assert first.data == second.data and first.data.shape_keys is not None

    report = bake.bake_scene(scene)

    assert first.data == second.data and first.data.shape_keys is None  # one mesh, the old bake removed once
    assert not [m.name for m in bpy.data.meshes if not m.users] and report["warnings"] == []
    paths = [
        tmp_path / "contact_lab_cache" / cache_file_name(str(tmp_path / "shot.blend"), "Scene", f"Jelly.{n}")
        for n in "AB"
    ]
    assert sorted(report["files"]) == sorted(str(p) for p in paths)
    for obj in (first, second):
        assert obj.modifiers[0].name == deform_output.CACHE_MODIFIER_NAME
    a, _, _ = pc2.read_pc2(paths[0])
    b, _, _ = pc2.read_pc2(paths[1])
    assert np.abs(a - b).max() < 1e-6 and a.shape == (len(FRAMES), 8, 3)  # same local motion, side by side

    scene.contact_lab.soft_output = "SHAPE_KEYS"
    before = fingerprint(tmp_path)
    with pytest.raises(bake.BakeError, match="'Jelly.A' and 'Jelly.B' share the mesh .*Make Single User"):
        bake.bake_scene(scene)
    assert_same(before, fingerprint(tmp_path), "refused shape keys on a shared mesh")
