"""Output paths from a .blend (``addon.paths``), the write transaction (``addon.output.transaction``) and the bake
operator's confirmation when a path leads outside, against real folders and the mocked bpy.

References: the file system itself (``os.walk`` listings before/after, files' bytes), and hand-built expectations.
"""

import os
import types

import pytest
from contact_lab.addon import paths
from contact_lab.addon.errors import BakeError
from contact_lab.addon.output.transaction import RollbackError, Transaction, WriteError
from contact_lab.operators import bake as op_bake


def listing(root):
    """Every path under ``root`` with its bytes (None for folders), hidden files included."""
    out = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(folder, name), root)] = None
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = fh.read()
    return out


@pytest.fixture
def shot(tmp_path):
    """``tmp/shots/shot.blend`` with a sibling folder ``tmp/elsewhere`` and a look-alike ``tmp/shots2``."""
    (tmp_path / "shots").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "shots2").mkdir()
    blend = tmp_path / "shots" / "shot.blend"
    blend.write_bytes(b"BLENDER")
    return tmp_path, str(blend)


def check(folder, blend, **kwargs):
    return paths.check_inside(
        str(folder), setting="PC2 Cache Folder of scene 'Scene'", raw="//x/", blend_path=blend, **kwargs
    )


# paths -------------------------------------------------------------------------------------------------------


def test_folders_inside_the_blend_folder_are_allowed(shot):
    """The .blend's folder, a missing sub-folder and a '..' that comes back inside resolve inside: allowed."""
    root, blend = shot
    for folder in ("shots", "shots/cache", "shots/a/b/../../cache/new"):
        resolved = check(os.path.normpath(root / folder), blend)
        assert resolved == os.path.realpath(root / folder)


@pytest.mark.parametrize("escape", ["dotdot", "absolute", "symlink", "lookalike"])
def test_folders_leading_outside_are_refused_with_a_clear_message(shot, escape):
    """'..' out, an absolute folder, a symlink out and a look-alike prefix ('shots2') are refused; the error names
    the setting, the stored path, where it leads and how to allow it."""
    root, blend = shot
    if escape == "symlink":
        os.symlink(root / "elsewhere", root / "shots" / "link")
    folder = {
        "dotdot": os.path.normpath(root / "shots" / ".." / "elsewhere" / "cache"),
        "absolute": str(root / "elsewhere" / "abs"),
        "symlink": str(root / "shots" / "link" / "cache"),
        "lookalike": str(root / "shots2" / "cache"),
    }[escape]
    with pytest.raises(paths.UnsafePathError) as info:
        check(folder, blend)
    exc = info.value
    assert isinstance(exc, BakeError)
    target = os.path.realpath(folder)
    assert exc.resolved == target and exc.path == "//x/" and exc.roots == [os.path.realpath(root / "shots")]
    message = str(exc)
    for part in ("PC2 Cache Folder of scene 'Scene'", "'//x/'", target, "--allow-outside-paths", "confirm"):
        assert part in message, part
    assert "elsewhere" in target or "shots2" in target  # the symlink resolved to where it really writes


def test_the_refusal_names_each_folder_once(shot):
    """The allowed folder is named once; an absolute setting that is already where it leads is named once too."""
    root, blend = shot
    shots = f"'{os.path.realpath(root / 'shots')}'"
    with pytest.raises(paths.UnsafePathError) as info:
        check(root / "elsewhere" / "cache", blend)
    assert str(info.value).count(shots) == 1
    absolute = os.path.realpath(root / "elsewhere" / "abs")
    with pytest.raises(paths.UnsafePathError) as info:
        paths.check_inside(absolute, setting="PC2 Cache Folder", raw=absolute, blend_path=blend)
    message = str(info.value)
    assert message.count(f"'{absolute}'") == 1 and message.count(shots) == 1


def test_a_trusted_folder_or_the_users_permission_allows_outside(shot):
    """The CLI's output folder is trusted like the .blend's; allow_outside and an unsaved file skip the check."""
    root, blend = shot
    outside = root / "elsewhere" / "cache"
    assert check(outside, blend, trusted=[str(root / "elsewhere")]) == os.path.realpath(outside)
    assert check(outside, blend, allow_outside=True) == os.path.realpath(outside)
    assert check(outside, "") == os.path.realpath(outside)
    with pytest.raises(paths.UnsafePathError, match="the chosen output folder"):
        check(outside, blend, trusted=[str(root / "shots2")])


def test_writable_check_creates_nothing_and_names_the_problem(shot):
    """A missing nested folder under a writable one passes without being created; a file in the way fails."""
    root, _ = shot
    before = listing(root)
    paths.check_writable(str(root / "shots" / "new" / "deeper"), setting="PC2 Cache Folder")
    assert listing(root) == before
    (root / "shots" / "file").write_text("x")
    with pytest.raises(BakeError, match=r"PC2 Cache Folder '.*file' is a file"):
        paths.check_writable(str(root / "shots" / "file"), setting="PC2 Cache Folder")
    with pytest.raises(BakeError, match=r"cannot be created: '.*file' is a file, not a folder"):
        paths.check_writable(str(root / "shots" / "file" / "cache"), setting="PC2 Cache Folder")


# transaction ---------------------------------------------------------------------------------------------------


class Box:
    """A mutable object whose changes the transaction undoes."""

    def __init__(self):
        self.value = 0


@pytest.mark.parametrize("exc_type", [MemoryError, RuntimeError, KeyboardInterrupt])
def test_a_failing_step_undoes_every_earlier_step_in_reverse(exc_type):
    """Steps 1 and 2 changed things, step 3 fails: their inverses run last-first; non-BakeErrors become a
    WriteError naming the failed step (KeyboardInterrupt passes through), discards never run."""
    box, log = Box(), []

    def change(value):
        def do():
            previous, box.value = box.value, value
            log.append(("do", value))
            return previous

        return do

    def undo(previous):
        log.append(("undo", box.value))
        box.value = previous

    expected = KeyboardInterrupt if exc_type is KeyboardInterrupt else WriteError
    with pytest.raises(expected) as info:
        with Transaction("test") as txn:
            txn.step("set 1", change(1), undo=undo)
            txn.step("set 2", change(2), undo=undo)
            txn.on_commit("discard", lambda: log.append("discarded"))
            txn.step("fail", lambda: (_ for _ in ()).throw(exc_type("boom")))
    assert box.value == 0 and txn.state == "rolled back"
    assert log == [("do", 1), ("do", 2), ("undo", 2), ("undo", 1)]
    if expected is WriteError:
        assert info.value.step == "fail" and "while trying to fail" in str(info.value)
        assert f"{exc_type.__name__}: boom" in str(info.value) and isinstance(info.value.__cause__, exc_type)


def test_a_failing_undo_does_not_stop_the_others_and_is_named():
    """An inverse that fails is listed in a RollbackError; the other inverses still ran."""
    box = Box()
    with pytest.raises(RollbackError) as info:
        with Transaction("test") as txn:
            txn.step("set", lambda: setattr(box, "value", 5), undo=lambda _: setattr(box, "value", 0))
            txn.step("stuck", lambda: None, undo=lambda _: (_ for _ in ()).throw(OSError(13, "Permission denied")))
            raise RuntimeError("late")
    assert box.value == 0 and info.value.unrestored == ["stuck (PermissionError: [Errno 13] Permission denied)"]
    assert "could not be undone" in str(info.value)


def test_discard_failures_become_warnings_after_the_commit():
    """Once every step succeeded the discards run in order; one that fails is a warning, the rest still run."""
    log = []
    with Transaction("test") as txn:
        txn.step("set", lambda: None, undo=lambda _: log.append("undone"))
        txn.on_commit("remove the old thing", lambda: (_ for _ in ()).throw(OSError("busy")))
        txn.on_commit("remove the other thing", lambda: log.append("removed"))
    assert txn.state == "committed" and log == ["removed"]
    assert txn.warnings == ["could not remove the old thing (OSError: busy); it is a leftover, safe to delete"]


def _write(data):
    def write(path):
        with open(path, "wb") as fh:
            fh.write(data)

    return write


@pytest.mark.parametrize("fail_at", range(6))
def test_files_are_replaced_together_or_not_at_all(tmp_path, monkeypatch, fail_at):
    """Two caches, one existing, in a folder to create: a failure at any file step leaves the disk as it was
    (new folder removed, the previous file back); without a failure both files are new and nothing hidden is left."""
    (tmp_path / "cache").mkdir()
    old = tmp_path / "cache" / "a.pc2"
    old.write_bytes(b"old a")
    before = listing(tmp_path)
    targets = [str(old), str(tmp_path / "cache" / "new" / "b.pc2")]
    steps = []
    real = Transaction.step

    def step(self, label, do, **kwargs):
        steps.append(label)
        if len(steps) == fail_at + 1:
            raise OSError(28, "No space left on device")
        return real(self, label, do, **kwargs)

    monkeypatch.setattr(Transaction, "step", step)
    with pytest.raises(WriteError, match="No space left on device"):
        with Transaction("caches") as txn:
            txn.make_folder(str(tmp_path / "cache" / "new"), label="create the folder")
            staged = [txn.stage_file(t, _write(f"new {k}".encode()), label=f"write {k}") for k, t in enumerate(targets)]
            for k, (path, target) in enumerate(zip(staged, targets, strict=True)):
                txn.replace_file(path, target, label=f"put {k} in place")
    assert listing(tmp_path) == before


def test_files_swap_without_leftovers(tmp_path):
    """The reference run of the test above: both targets hold the new bytes, no hidden file remains."""
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "a.pc2").write_bytes(b"old a")
    with Transaction("caches") as txn:
        txn.make_folder(str(tmp_path / "cache" / "new"), label="create the folder")
        a = txn.stage_file(str(tmp_path / "cache" / "a.pc2"), _write(b"new a"), label="write a")
        b = txn.stage_file(str(tmp_path / "cache" / "new" / "b.pc2"), _write(b"new b"), label="write b")
        txn.replace_file(a, str(tmp_path / "cache" / "a.pc2"), label="put a")
        txn.replace_file(b, str(tmp_path / "cache" / "new" / "b.pc2"), label="put b")
    assert listing(tmp_path) == {"cache": None, "cache/new": None, "cache/a.pc2": b"new a", "cache/new/b.pc2": b"new b"}
    assert len(txn.steps) == 6  # folder, 2 writes, backup of a, 2 renames: the failure test above covers them all


def test_a_half_written_staged_file_is_removed(tmp_path):
    """A write that dies half-way (disk full) leaves neither its partial file nor anything else."""

    def dies(path):
        with open(path, "wb") as fh:
            fh.write(b"partial")
        raise OSError(28, "No space left on device")

    with pytest.raises(WriteError, match="while trying to write a"):
        with Transaction("caches") as txn:
            txn.stage_file(str(tmp_path / "a.pc2"), dies, label="write a")
    assert listing(tmp_path) == {}


# the operator's confirmation -------------------------------------------------------------------------------------


class ConfirmingWindowManager:
    def __init__(self):
        self.log = []

    def invoke_confirm(self, op, event, **kwargs):
        self.log.append(("confirm", kwargs))
        return {"RUNNING_MODAL"}

    def __getattr__(self, name):  # timers, progress, modal handler
        return lambda *args, **kwargs: self.log.append(name)


def test_bake_asks_before_writing_outside_and_continues_modally_when_confirmed(monkeypatch, mock_bpy):
    """invoke(): an UnsafePathError opens Blender's confirmation naming the folder; execute() after the
    confirmation (same operator, is_invoke) starts the modal bake with allow_outside_paths."""
    from contact_lab.addon.bake import driver as bake
    from contact_lab.addon.bake import worker

    mock_bpy.app.background = False
    calls = []
    job = types.SimpleNamespace(
        scene_name="Scene", engine="RIGID", frame_count=3, frames_done=0, status_text=lambda: "Frame 1", solver_note=str
    )
    monkeypatch.setattr(worker.BakeWorker, "start", lambda self: None)  # the gather is what this test is about

    def start_bake(scene, **kwargs):
        calls.append(kwargs)
        if not kwargs.get("allow_outside_paths"):
            raise paths.UnsafePathError(
                "outside", setting="PC2 Cache Folder", path="//../x/", resolved="/tmp/x", roots=["/tmp/shots"]
            )
        return job

    monkeypatch.setattr(bake, "start_bake", start_bake)
    settings = types.SimpleNamespace(is_baking=False, bake_progress=0.0, bake_status="")
    context = types.SimpleNamespace(
        scene=types.SimpleNamespace(contact_lab=settings),
        window=object(),
        window_manager=ConfirmingWindowManager(),
        workspace=None,
        screen=None,
    )
    op = op_bake.CONTACT_LAB_OT_bake.__new__(op_bake.CONTACT_LAB_OT_bake)
    op_bake.CONTACT_LAB_OT_bake.__bases__[0].__init__(op)
    op.allow_outside_paths = False
    op.options = types.SimpleNamespace(is_invoke=True)
    try:
        assert op.invoke(context, object()) == {"RUNNING_MODAL"}
        kind, kwargs = context.window_manager.log[0]
        assert kind == "confirm" and "'//../x/'" in kwargs["message"] and "/tmp/x" in kwargs["message"]
        assert op.allow_outside_paths and calls == [{"allow_outside_paths": False}]
        assert op.execute(context) == {"RUNNING_MODAL"}  # the user confirmed
        assert calls[-1] == {"allow_outside_paths": True} and op_bake._running["job"].job is job
        assert settings.is_baking and settings.bake_status.startswith("Frame 1")
    finally:
        if op_bake._running["job"] is not None:
            op_bake._running["job"].guard.release()
        op_bake._running["job"] = None
