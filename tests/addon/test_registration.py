"""Registration, properties and the bake operator against the mocked bpy."""

import gc
import sys
import threading
import types

import pytest
from contact_lab import registration
from contact_lab.addon import properties
from contact_lab.addon.warmup import jitcache
from contact_lab.core.stop import StopRequest
from contact_lab.operators import bake as op_bake
from contact_lab.operators import preview
from contact_lab.operators import rigid_body_import as op_import
from contact_lab.operators import validate as op_validate
from contact_lab.operators import warmup as op_warmup
from contact_lab.panels import physics


@pytest.fixture
def clean_registration(mock_bpy):
    registration.unregister()
    mock_bpy.utils.calls.clear()
    yield mock_bpy
    registration.unregister()


def test_mock_is_the_bpy_in_use():
    """The add-on imported the stand-in, never Blender's module."""
    assert getattr(sys.modules["bpy"], "__contact_lab_mock__", False)
    assert getattr(sys.modules["bpy"], "__file__", None) is None
    with pytest.raises(ImportError):
        __import__("mathutils")


def test_register_is_idempotent_and_unregister_reverses(clean_registration):
    """register() twice registers every class once; unregister() removes them in reverse order."""
    bpy = clean_registration
    expected = (
        properties.CLASSES
        + op_bake.CLASSES
        + preview.CLASSES
        + op_import.CLASSES
        + op_validate.CLASSES
        + op_warmup.CLASSES
        + physics.CLASSES
    )
    registration.register()
    registration.register()
    assert [cls for kind, cls in bpy.utils.calls] == list(expected)
    assert bpy.types.Scene.contact_lab.keywords["type"] is properties.CONTACT_LAB_SceneSettings
    assert bpy.types.Object.contact_lab.keywords["type"] is properties.CONTACT_LAB_ObjectSettings

    bpy.utils.calls.clear()
    registration.unregister()
    registration.unregister()
    assert bpy.utils.calls == [("unregister", cls) for cls in reversed(expected)]
    assert not hasattr(bpy.types.Scene, "contact_lab") and not hasattr(bpy.types.Object, "contact_lab")
    assert bpy.utils.registered == []

    registration.register()  # and again after a full cycle
    assert bpy.utils.registered == list(expected)


def test_register_is_loud_and_leaves_nothing_half_done(clean_registration, monkeypatch):
    """A failing register_class propagates and rolls back the classes already registered."""
    bpy = clean_registration

    def failing(cls):
        if cls is op_bake.CONTACT_LAB_OT_clear_bake:
            raise ValueError("boom")
        bpy.utils.registered.append(cls)

    monkeypatch.setattr(bpy.utils, "register_class", failing)
    with pytest.raises(ValueError, match="boom"):
        registration.register()
    assert bpy.utils.registered == [] and not registration.is_registered()


def test_class_names_and_ids():
    """Public names of the scripting API."""
    assert op_bake.CONTACT_LAB_OT_bake.bl_idname == "contact_lab.bake"
    assert op_bake.CONTACT_LAB_OT_clear_bake.bl_idname == "contact_lab.clear_bake"
    assert op_bake.CONTACT_LAB_OT_bake.bl_options == {"REGISTER", "UNDO"}
    # the bake settings in the Scene tab (shown with or without an active object), the body's in the Physics tab
    tabs = {"CONTACT_LAB_PT_scene": "scene", "CONTACT_LAB_PT_check": "scene", "CONTACT_LAB_PT_object": "physics"}
    for panel in physics.CLASSES:
        assert (panel.bl_space_type, panel.bl_region_type, panel.bl_context) == (
            "PROPERTIES",
            "WINDOW",
            tabs[panel.__name__],
        )
    assert {p.__name__ for p in physics.CLASSES} == {
        "CONTACT_LAB_PT_scene",
        "CONTACT_LAB_PT_check",
        "CONTACT_LAB_PT_object",
    }
    assert physics.CONTACT_LAB_PT_check.bl_parent_id == physics.CONTACT_LAB_PT_scene.bl_idname
    assert op_validate.CONTACT_LAB_OT_validate.bl_idname == "contact_lab.validate"


def _props(cls):
    return cls.__annotations__


def _items(marker):
    return [item[0] for item in marker.keywords["items"]]


def test_object_settings_names_and_defaults():
    """Object settings: role, shape, mass, friction, restitution with the documented defaults."""
    p = _props(properties.CONTACT_LAB_ObjectSettings)
    assert _items(p["role"]) == ["NONE", "ACTIVE", "PASSIVE", "SOFT"]
    assert p["role"].keywords.get("default", "NONE") == "NONE"
    # Blender saves an enum by position: the first five keep theirs, new shapes are appended
    assert _items(p["shape"]) == [
        "BOX",
        "SPHERE",
        "CAPSULE",
        "PLANE",
        "MESH",
        "CYLINDER",
        "CONE",
        "CONVEX_HULL",
        "COMPOUND",
    ]
    assert p["shape"].keywords["default"] == "BOX"
    assert p["mass"].kind == "FloatProperty" and p["mass"].keywords["default"] == 1.0
    assert "min" not in p["mass"].keywords  # zero/negative can be typed, validation reports it
    assert p["friction"].keywords["default"] == 0.5 and p["restitution"].keywords["default"] == 0.0
    assert "combine" in p["friction"].keywords["description"].lower()
    assert "combine" in p["restitution"].keywords["description"].lower()


def test_shape_names_and_damping_match_blenders_rigid_body():
    """New shapes carry the names of Blender's Rigid Body panel; damping defaults are Blender's, in [0, 1]."""
    p = _props(properties.CONTACT_LAB_ObjectSettings)
    names = {item[0]: item[1] for item in p["shape"].keywords["items"]}
    assert [names[k] for k in ("CYLINDER", "CONE", "CONVEX_HULL", "MESH", "COMPOUND")] == [
        "Cylinder",
        "Cone",
        "Convex Hull",
        "Mesh",
        "Compound Parent",
    ]
    assert all(len(item) == 3 and item[2] for item in p["shape"].keywords["items"])  # every item is described
    for name, default in (("linear_damping", 0.04), ("angular_damping", 0.1)):
        marker = p[name]
        assert marker.kind == "FloatProperty" and marker.keywords["default"] == default
        assert (marker.keywords["min"], marker.keywords["max"]) == (0.0, 1.0)
    assert properties.RIGID_ONLY_SHAPES == {"CYLINDER", "CONE", "CONVEX_HULL", "COMPOUND"}


def test_scene_settings_names_and_defaults():
    """Scene settings: range, substeps, solver, iterations, tolerance, combine rules, last report."""
    p = _props(properties.CONTACT_LAB_SceneSettings)
    assert p["substeps"].keywords["default"] == 4
    assert _items(p["solver"]) == ["PROX", "PGS", "NEWTON"]
    from contact_lab.core import SOLVER_NAMES

    assert set(_items(p["solver"])) == set(SOLVER_NAMES)
    assert p["solver"].keywords["default"] == "PROX"
    assert p["iterations"].keywords["default"] == 100
    assert p["tolerance"].keywords["default"] == 1e-6
    combine = ["GEOMETRIC", "AVERAGE", "MINIMUM", "MAXIMUM", "PRODUCT"]
    assert _items(p["friction_combine"]) == combine and p["friction_combine"].keywords["default"] == "GEOMETRIC"
    assert _items(p["restitution_combine"]) == combine and p["restitution_combine"].keywords["default"] == "MAXIMUM"
    assert p["last_report"].kind == "StringProperty"
    assert "get" in p["frame_start"].keywords and "set" in p["frame_end"].keywords


def test_frame_range_follows_scene_until_set():
    """frame_start/frame_end read the scene's range until set, then the stored value."""
    scene = types.SimpleNamespace(frame_start=10, frame_end=50)
    s = types.SimpleNamespace(use_scene_frame_range=True, frame_start_custom=1, frame_end_custom=250, id_data=scene)
    p = _props(properties.CONTACT_LAB_SceneSettings)
    get_start, get_end = p["frame_start"].keywords["get"], p["frame_end"].keywords["get"]
    assert (get_start(s), get_end(s)) == (10, 50)
    p["frame_end"].keywords["set"](s, 30)
    scene.frame_start, scene.frame_end = 1, 100
    assert (get_start(s), get_end(s)) == (10, 30) and s.use_scene_frame_range is False


def _operator(cls):
    op = cls.__new__(cls)
    cls.__bases__[0].__init__(op)
    for name, marker in getattr(cls, "__annotations__", {}).items():  # operator properties: their defaults
        setattr(op, name, marker.keywords.get("default"))
    return op


def test_bake_execute_calls_addon_bake(monkeypatch, mock_bpy):
    """execute() hands the scene to addon.bake.bake_scene and finishes."""
    from contact_lab.addon.bake import driver as bake

    calls = []
    report = {
        "frames": {"start": 1, "end": 10},
        "stats": {"max_contacts": 3},
        "timings": {"total": 0.5},
        "bodies": {"active": ["Cube"]},
    }
    monkeypatch.setattr(bake, "bake_scene", lambda scene, **kw: calls.append((scene, kw)) or report)
    scene = object()
    op = _operator(op_bake.CONTACT_LAB_OT_bake)
    assert op.execute(types.SimpleNamespace(scene=scene)) == {"FINISHED"}
    assert calls and calls[0][0] is scene and callable(calls[0][1]["progress"])
    assert op.reports[0][0] == {"INFO"}


def test_bake_execute_reports_validation_error(monkeypatch, mock_bpy):
    """A BakeError becomes report({'ERROR'}, message) and CANCELLED."""
    from contact_lab.addon.bake import driver as bake

    def failing(scene, **kw):
        raise bake.BakeError("'Cube': mass must be positive, got 0 kg", object_name="Cube")

    monkeypatch.setattr(bake, "bake_scene", failing)
    op = _operator(op_bake.CONTACT_LAB_OT_bake)
    assert op.execute(types.SimpleNamespace(scene=object())) == {"CANCELLED"}
    assert op.reports == [({"ERROR"}, "'Cube': mass must be positive, got 0 kg")]


def test_bake_invoke_without_window_runs_execute(monkeypatch, mock_bpy):
    """In background mode invoke() is the blocking execute()."""
    from contact_lab.addon.bake import driver as bake

    monkeypatch.setattr(bake, "bake_scene", lambda scene, **kw: (_ for _ in ()).throw(bake.BakeError("no active")))
    op = _operator(op_bake.CONTACT_LAB_OT_bake)
    assert op.invoke(types.SimpleNamespace(scene=object(), window=None), None) == {"CANCELLED"}


def test_clear_execute_calls_addon_clear(monkeypatch, mock_bpy):
    """clear_bake's execute() calls addon.bake.clear_bake."""
    from contact_lab.addon.bake import driver as bake

    monkeypatch.setattr(bake, "clear_bake", lambda scene: ["Cube"])
    op = _operator(op_bake.CONTACT_LAB_OT_clear_bake)
    assert op.execute(types.SimpleNamespace(scene=object())) == {"FINISHED"}


def test_jit_cache_left_alone_in_development():
    """Imported as plain contact_lab, numba keeps its default cache."""
    assert jitcache.root_package() == "contact_lab"
    assert not jitcache.is_installed_extension()
    assert jitcache.configure() is None


class FakeJob:
    """Stands in for addon.bake.job.BakeJob on the worker thread: each frame waits for the test to open its gate."""

    engine = "RIGID"

    def __init__(self, steps=2):
        self.steps, self.frame_count, self.frames_done = steps, 10, 0
        self.scene_name = "Scene"
        self.cancelled = self.finished = self.closed = False
        self.current_frame = 1
        self.gate = threading.Semaphore(0)
        """Released by the test once per frame it lets the worker simulate."""
        self.stepped = threading.Semaphore(0)
        """Released by the worker after each frame."""
        self.stop = StopRequest()
        """The engines' stop request, which a cancel sets (the real job passes it to the simulation)."""
        self.threads = 1
        """The numba threads the worker runs the frames on (the real job reads Blender's Threads setting)."""

    def status_text(self):
        return f"Frame {self.frames_done}"

    def solver_note(self):
        return ""

    def build(self):
        pass

    def step(self, *, max_frames=1, time_budget=None):
        assert self.gate.acquire(timeout=10), "the test never opened the gate"
        self.steps -= 1
        self.frames_done += 5
        self.stepped.release()
        return self.steps <= 0

    def close(self):
        self.closed = True

    def finish(self):
        self.finished = True
        return {
            "frames": {"start": 1, "end": 10},
            "stats": {"max_contacts": 1},
            "timings": {"total": 0.1},
            "bodies": {"active": ["Cube"]},
        }

    def report(self, status, *, error=None):
        return {"status": status, "error": error}

    def cancel(self, reason="cancelled by the user", *, close=True):
        self.cancelled = True
        return self.report("CANCELLED", error=reason)


class FakeWindowManager:
    def __init__(self):
        self.log = []

    def event_timer_add(self, interval, window=None):
        self.log.append("timer_add")
        return "timer"

    def event_timer_remove(self, timer):
        self.log.append("timer_remove")

    def modal_handler_add(self, op):
        self.log.append("modal")

    def progress_begin(self, a, b):
        self.log.append("progress_begin")

    def progress_update(self, v):
        self.log.append(("progress", v))

    def progress_end(self):
        self.log.append("progress_end")


def _ui_context():
    settings = types.SimpleNamespace(is_baking=False, bake_progress=0.0, bake_status="")
    return types.SimpleNamespace(
        scene=types.SimpleNamespace(contact_lab=settings),
        window=object(),
        window_manager=FakeWindowManager(),
        workspace=types.SimpleNamespace(status_text_set=lambda text: None),
        screen=types.SimpleNamespace(areas=[]),
    )


@pytest.mark.parametrize("cancel", [False, True])
def test_modal_bake_runs_in_a_worker_and_cancels_on_esc(monkeypatch, mock_bpy, cancel):
    """invoke() hands the job to a worker thread; TIMER only reads its progress and finishes it on this thread once
    the worker is done; Esc cancels at once (the worker stops after its frame and closes the simulation itself);
    both clean up."""
    from contact_lab.addon.bake import driver as bake

    mock_bpy.app.background = False
    job = FakeJob()
    monkeypatch.setattr(bake, "start_bake", lambda scene, **kw: job)
    context = _ui_context()
    op = _operator(op_bake.CONTACT_LAB_OT_bake)
    assert op.invoke(context, None) == {"RUNNING_MODAL"}
    running = op_bake._running["job"]
    assert context.scene.contact_lab.is_baking and not op_bake.CONTACT_LAB_OT_bake.poll(context)
    timer = types.SimpleNamespace(type="TIMER", value="NOTHING")
    assert op.modal(context, types.SimpleNamespace(type="A", value="PRESS")) == {"RUNNING_MODAL"}
    assert op.modal(context, timer) == {"RUNNING_MODAL"} and job.frames_done == 0  # nothing simulated on a tick
    job.gate.release()
    assert job.stepped.acquire(timeout=10)
    assert op.modal(context, timer) == {"RUNNING_MODAL"}
    assert context.scene.contact_lab.bake_progress == 0.5
    if cancel:
        assert op.modal(context, types.SimpleNamespace(type="ESC", value="PRESS")) == {"CANCELLED"}
        assert job.cancelled and not job.finished
        job.gate.release()  # the worker finishes its frame, sees the cancel and stops
        assert running.worker.wait(10) and job.closed and job.steps == 0 and not job.finished
    else:
        job.gate.release()
        assert running.worker.wait(10)
        assert op.modal(context, timer) == {"FINISHED"}
        assert job.finished and not job.cancelled and not job.closed
    wm_log = context.window_manager.log
    assert wm_log[0] == "timer_add" and "timer_remove" in wm_log and wm_log[-1] == "progress_end"
    assert not context.scene.contact_lab.is_baking and op_bake.CONTACT_LAB_OT_bake.poll(context)
    assert gc.isenabled()  # the collector guard gave the collector back


def test_core_fingerprint_changes_with_any_core_source(tmp_path):
    """Give a new kernel-cache directory name whenever any core source changes (stale numba caches)."""
    import shutil

    core = tmp_path / "core"
    shutil.copytree(jitcache.CORE_DIR, core, ignore=shutil.ignore_patterns("__pycache__"))
    first = jitcache.core_source_fingerprint(core)
    assert first == jitcache.core_source_fingerprint(core) and len(first) == 16
    assert first == jitcache.core_source_fingerprint()  # the copy has the same sources
    helper = core / "friction" / "models.py"
    helper.write_text(helper.read_text() + "\n# changed\n")
    assert jitcache.core_source_fingerprint(core) != first
