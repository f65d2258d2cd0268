"""Real-bpy tier: Blender as a Python module. Skipped without bpy; refuses to run on the mocked bpy."""

import os
import sys

import numpy as np
import pytest

# --import-mode=importlib keeps test folders off sys.path: put this one on it for the tier's helper modules
# (``cli_tools``), imported by the test modules collected after this conftest.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_bpy = sys.modules.get("bpy")
if _bpy is not None and getattr(_bpy, "__contact_lab_mock__", False):
    raise RuntimeError("tests/blender must not run in the same process as tests/addon (mocked bpy)")

try:
    import bpy
except ImportError:  # no Blender module: the test modules skip themselves
    bpy = None


_session = {}


def pytest_sessionfinish(session, exitstatus):
    _session["exitstatus"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """bpy 4.2 segfaults at interpreter teardown once a Panel was registered: keep pytest's exit status."""
    if bpy is not None and tuple(bpy.app.version) < (4, 3, 0) and "exitstatus" in _session:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_session["exitstatus"])


@pytest.fixture(autouse=True)
def factory_scene():
    """Start every test from an empty factory scene with the add-on registered."""
    if bpy is None:
        pytest.skip("bpy (Blender as a Python module) is not installed")
    import contact_lab

    bpy.ops.wm.read_factory_settings(use_empty=True)
    contact_lab.register()
    yield bpy.context.scene
    contact_lab.unregister()


def add_cube(name, location=(0.0, 0.0, 0.0), size=1.0, *, role="ACTIVE", shape="BOX", mass=1.0):
    bpy.ops.mesh.primitive_cube_add(size=size, location=location)
    obj = bpy.context.object
    obj.name = name
    obj.contact_lab.role = role
    obj.contact_lab.shape = shape
    obj.contact_lab.mass = mass
    return obj


def add_sphere(name, location=(0.0, 0.0, 0.0), radius=0.5, *, role="ACTIVE", mass=1.0):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=radius, location=location)
    obj = bpy.context.object
    obj.name = name
    obj.contact_lab.role = role
    obj.contact_lab.shape = "SPHERE"
    obj.contact_lab.mass = mass
    return obj


def add_ground(name="Ground", size=20.0):
    bpy.ops.mesh.primitive_plane_add(size=size, location=(0.0, 0.0, 0.0))
    obj = bpy.context.object
    obj.name = name
    obj.contact_lab.role = "PASSIVE"
    obj.contact_lab.shape = "PLANE"
    return obj


def add_primitive(primitive, name, **kwargs):
    """``bpy.ops.mesh.primitive_<primitive>_add(**kwargs)``, named ``name``."""
    getattr(bpy.ops.mesh, f"primitive_{primitive}_add")(**kwargs)
    obj = bpy.context.object
    obj.name = name
    return obj


def with_rigid_body(obj, **settings):
    """Give ``obj`` a Blender rigid body (``rigidbody.object_add``, as the Physics tab does) and set it."""
    for other in bpy.context.view_layer.objects.selected:
        other.select_set(False)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.rigidbody.object_add()
    for key, value in settings.items():
        setattr(obj.rigid_body, key, value)
    return obj


def build_drop_scene(unit=1.0, frame_end=24):
    """Box and sphere dropping on a ground plane next to an animated (kinematic) passive box.

    ``unit`` is Blender units per metre; the scene's unit scale is set to ``1/unit`` so the physical
    scene is the same for every ``unit``.
    """
    scene = bpy.context.scene
    scene.unit_settings.scale_length = 1.0 / unit
    scene.frame_start, scene.frame_end = 1, frame_end
    add_ground(size=20.0 * unit)
    box = add_cube("Box", (0.0, 0.0, 1.0 * unit), size=1.0 * unit, mass=2.0)
    box.rotation_euler = (0.0, 0.0, 0.3)
    sphere = add_sphere("Ball", (1.6 * unit, 0.0, 0.8 * unit), radius=0.5 * unit, mass=1.0)
    pusher = add_cube("Pusher", (4.0 * unit, 0.0, 0.5 * unit), size=1.0 * unit, role="PASSIVE")
    pusher.keyframe_insert("location", frame=1)
    pusher.location.x = 2.2 * unit
    pusher.keyframe_insert("location", frame=frame_end)
    scene.frame_set(scene.frame_start)  # evaluate the animation: properties show the current frame
    return scene, {"Box": box, "Ball": sphere, "Pusher": pusher}


def keyed_transform(obj):
    """(frames (F,), location (F, 3), quaternion (F, 4)) read back from the object's F-curves."""
    from contact_lab.addon.output import keyframes

    curves = {(fc.data_path, fc.array_index): fc for fc in keyframes.fcurves_of(obj)}
    assert set(curves) == {("location", i) for i in range(3)} | {("rotation_quaternion", i) for i in range(4)}
    n = len(curves[("location", 0)].keyframe_points)
    co = {}
    for key, fc in curves.items():
        assert len(fc.keyframe_points) == n
        buf = np.empty(2 * n, np.float32)
        fc.keyframe_points.foreach_get("co", buf)
        co[key] = buf.reshape(n, 2).astype(np.float64)
    frames = co[("location", 0)][:, 0]
    loc = np.stack([co[("location", i)][:, 1] for i in range(3)], axis=1)
    quat = np.stack([co[("rotation_quaternion", i)][:, 1] for i in range(4)], axis=1)
    return frames, loc, quat


def snapshot(scene):
    """Everything a failed bake must not change: transforms, actions, key counts, data-block counts."""
    from contact_lab.addon.output import keyframes

    state = {"actions": sorted(a.name for a in bpy.data.actions), "frame": scene.frame_current}
    for obj in scene.objects:
        ad = obj.animation_data
        state[obj.name] = (
            tuple(np.round(np.array(obj.matrix_world), 9).ravel()),
            tuple(obj.location),
            tuple(obj.rotation_quaternion),
            tuple(obj.rotation_euler),
            obj.rotation_mode,
            None if ad is None or ad.action is None else ad.action.name,
            tuple((fc.data_path, fc.array_index, len(fc.keyframe_points)) for fc in keyframes.fcurves_of(obj)),
        )
    return state


class FakeLayout:
    """Records what a panel draws (labels, props, operators); every sub-layout is itself."""

    def __init__(self):
        self.log = []

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.log.append((name, args, kwargs))
            return self

        return call

    def labels(self):
        return [kw.get("text", "") for name, _, kw in self.log if name == "label"]

    def props(self):
        return [args[1] for name, args, _ in self.log if name in {"prop", "prop_search", "template_ID"}]


@pytest.fixture
def lab():
    """Scene-building and read-back helpers of this tier."""
    import types

    return types.SimpleNamespace(
        add_cube=add_cube,
        add_sphere=add_sphere,
        add_ground=add_ground,
        add_primitive=add_primitive,
        with_rigid_body=with_rigid_body,
        build_drop_scene=build_drop_scene,
        keyed_transform=keyed_transform,
        snapshot=snapshot,
        FakeLayout=FakeLayout,
    )


def add_constraint(name, kind, object1, object2, location=(0.0, 0.0, 2.0), rotation=(0.0, 0.0, 0.0), *,
                   blender_simulates=True):  # fmt: skip
    """An Empty with a Rigid Body Constraint of ``kind`` between ``object1`` and ``object2``, made by Blender's
    operator (which needs a rigid body world: one is added if the scene has none, and ``blender_simulates=False``
    switches that new world off so Blender's own simulation stays out of the way)."""
    scene = bpy.context.scene
    if scene.rigidbody_world is None:
        bpy.ops.rigidbody.world_add()
        scene.rigidbody_world.enabled = blender_simulates
    obj = bpy.data.objects.new(name, None)
    scene.collection.objects.link(obj)
    obj.location, obj.rotation_euler = location, rotation
    for other in bpy.context.view_layer.objects:
        other.select_set(False)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.rigidbody.constraint_add(type=kind)
    obj.rigid_body_constraint.object1, obj.rigid_body_constraint.object2 = object1, object2
    return obj
