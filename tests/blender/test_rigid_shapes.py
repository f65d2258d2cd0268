"""Any mesh as a rigid body through real Blender: scenes set up with Blender's own rigid body settings, imported
with ``contact_lab.import_rigid_body``, baked, and compared with analytic resting heights; bad input refused."""

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from contact_lab.addon.rigid import gather as rigid_export  # noqa: E402
from contact_lab.addon.rigid import shapes as rigid_shapes  # noqa: E402
from contact_lab.core import ModelBuilder  # noqa: E402
from mesh_readback import world_vertices  # noqa: E402

pytestmark = pytest.mark.blender

HAS_MESH_SHAPE = hasattr(ModelBuilder, "add_shape_mesh")
NEEDS_MESH_SHAPE = pytest.mark.skipif(
    not HAS_MESH_SHAPE, reason="the core's ModelBuilder has no add_shape_mesh yet (the rigid Mesh shape)"
)

FPS = 24
REST_TOLERANCE = 0.002
"""Resting height tolerance [m]: the solver leaves penetrations far below a millimetre."""


def blender_scene(lab, frame_end=36, with_pusher=True):
    """A thick passive ground (top at z = 0), a cylinder, a convex-hull Suzanne and an animated passive pusher,
    all set up with Blender's rigid body settings only."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frame_end
    scene.render.fps = FPS
    ground = lab.add_primitive("cube", "Ground", size=1.0, location=(0.0, 0.0, -0.25))
    ground.scale = (12.0, 12.0, 0.5)
    lab.with_rigid_body(ground, type="PASSIVE", collision_shape="BOX", friction=0.8)
    can = lab.add_primitive("cylinder", "Can", radius=0.3, depth=0.8, location=(0.0, 0.0, 0.45))
    lab.with_rigid_body(can, collision_shape="CYLINDER", mass=2.0, friction=0.7, restitution=0.1, angular_damping=0.3)
    monkey = lab.add_primitive("monkey", "Suzanne", size=1.0, location=(2.5, 0.0, 0.6))
    lab.with_rigid_body(monkey, collision_shape="CONVEX_HULL", mass=1.5, linear_damping=0.2)
    objects = {"Ground": ground, "Can": can, "Suzanne": monkey}
    if with_pusher:
        pusher = lab.add_primitive("cube", "Pusher", size=0.5, location=(-3.0, 3.0, 0.25))
        lab.with_rigid_body(pusher, kinematic=True, collision_shape="BOX")
        pusher.keyframe_insert("location", frame=1)
        pusher.location.x = -2.0
        pusher.keyframe_insert("location", frame=frame_end)
        objects["Pusher"] = pusher
    scene.rigidbody_world.substeps_per_frame = 4
    scene.frame_set(1)
    return scene, objects


def blender_settings(obj):
    rb = obj.rigid_body
    return (rb.collision_shape, rb.mass, rb.friction, rb.restitution, rb.linear_damping, rb.angular_damping)


def contact_settings(obj):
    s = obj.contact_lab
    return (s.shape, s.mass, s.friction, s.restitution, s.linear_damping, s.angular_damping)


def test_import_copies_blender_settings_and_mutes_its_world(factory_scene, lab):
    """Every Blender value lands unchanged in obj.contact_lab (Animated → Passive), the world's substeps and
    Bullet's combine rules are set, Blender's world is muted (kept), and what has no equivalent is reported."""
    scene, objs = blender_scene(lab)
    objs["Suzanne"].rigid_body.use_margin = True
    objs["Suzanne"].rigid_body.collision_margin = 0.02
    card = lab.add_primitive("plane", "Card", size=4.0, location=(0.0, -4.0, 0.0))
    lab.with_rigid_body(card, type="PASSIVE", collision_shape="CONVEX_HULL")
    expected = {name: blender_settings(obj) for name, obj in objs.items()}

    assert bpy.ops.contact_lab.import_rigid_body() == {"FINISHED"}

    for name, obj in objs.items():
        got = contact_settings(obj)
        assert got[0] == expected[name][0] and got[1:] == pytest.approx(expected[name][1:], rel=1e-6)
        assert blender_settings(obj) == expected[name]  # Blender's own settings are kept
    roles = {name: obj.contact_lab.role for name, obj in objs.items()}
    assert roles == {"Ground": "PASSIVE", "Can": "ACTIVE", "Suzanne": "ACTIVE", "Pusher": "PASSIVE"}
    assert (card.contact_lab.role, card.contact_lab.shape) == ("PASSIVE", "MESH")  # a flat hull has no inside
    settings = scene.contact_lab
    assert (settings.substeps, settings.iterations, settings.engine) == (4, 100, "RIGID")
    assert (settings.friction_combine, settings.restitution_combine) == ("PRODUCT", "PRODUCT")
    assert (settings.frame_start, settings.frame_end) == (scene.frame_start, scene.frame_end)
    assert scene.rigidbody_world is not None and not scene.rigidbody_world.enabled
    assert all(obj.rigid_body is not None for obj in objs.values())
    report = json.loads(settings.last_import_report)
    assert report["blender_world_muted"] is True
    assert report["objects"]["Suzanne"]["not_carried"] == [
        "Collision Margin 0.02 (Contact Lab collides with the exact shape)"
    ]
    assert all(report["objects"][name]["not_carried"] == [] for name in ("Ground", "Can", "Pusher"))


def test_imported_scene_bakes_and_comes_to_rest_on_the_ground(factory_scene, lab):
    """After the import, the bake keys the cylinder upright at half its height above the ground and the hull of
    Suzanne with its lowest vertex on the ground; the animated pusher keeps its own animation."""
    scene, objs = blender_scene(lab, frame_end=48)
    assert bpy.ops.contact_lab.import_rigid_body() == {"FINISHED"}
    export = rigid_export.export_scene(scene)
    by_name = {b.object_name: b for b in export.bodies}
    assert [b.shape for b in export.active_bodies] == ["CYLINDER", "CONVEX_HULL"]
    # the hull's centre of mass is the core's centroid of Blender's hull, not the bounding-box centre
    hull = rigid_shapes.read_shape_meshes(scene, [objs["Suzanne"]], 1)["Suzanne"]
    from contact_lab.core.rigid.mass_properties import mesh_mass_properties

    np.testing.assert_allclose(by_name["Suzanne"].centre_local, mesh_mass_properties(*hull).centroid, atol=1e-9)

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    scene.frame_set(scene.frame_end)
    can = objs["Can"]
    axis = np.array(can.matrix_world)[:3, 2]
    assert axis[2] > np.cos(np.radians(2.0))  # still upright
    assert abs(can.matrix_world.translation.z - 0.4) < REST_TOLERANCE  # half its height above z = 0
    assert scene.frame_end - 1 > 0
    lowest = world_vertices(objs["Suzanne"])[:, 2].min()
    assert abs(lowest) < REST_TOLERANCE  # the hull rests on a vertex of the mesh
    assert objs["Suzanne"].matrix_world.translation.z < 0.6 - 0.05  # it fell
    scene.frame_set(scene.frame_end - 2)
    before = np.array(objs["Suzanne"].matrix_world.translation)
    scene.frame_set(scene.frame_end)
    assert np.linalg.norm(np.array(objs["Suzanne"].matrix_world.translation) - before) * FPS / 2 < 0.05  # at rest
    assert objs["Pusher"].contact_lab.baked_action is None
    assert objs["Pusher"].matrix_world.translation.x == pytest.approx(-2.0, abs=1e-6)
    report = json.loads(scene.contact_lab.last_report)
    assert report["status"] == "FINISHED" and sorted(report["bodies"]["active"]) == ["Can", "Suzanne"]


def test_cone_and_compound_centres_of_mass(factory_scene, lab):
    """An active cone's body origin is a quarter of its height above the base; a compound's is the volume-weighted
    centroid of its parts, which are no bodies of their own, are not keyed, and come to rest with the parent."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 36
    lab.add_ground()
    cone = lab.add_primitive("cone", "Cone", radius1=0.5, depth=1.0, location=(3.0, 0.0, 0.6))
    cone.contact_lab.role, cone.contact_lab.shape = "ACTIVE", "CONE"
    bpy.ops.object.empty_add(location=(0.0, 0.0, 1.0))
    table = bpy.context.object
    table.name = "Table"
    table.contact_lab.role, table.contact_lab.shape, table.contact_lab.mass = "ACTIVE", "COMPOUND", 3.0
    big = lab.add_cube("Big", (0.5, 0.0, 1.0), size=1.0, role="PASSIVE")
    small = lab.add_cube("Small", (-0.5, 0.0, 0.75), size=0.5, role="ACTIVE")
    deco = lab.add_cube("Deco", (0.0, 0.0, 2.0), size=0.2, role="NONE")
    for child in (big, small, deco):
        child.parent = table
        child.matrix_parent_inverse = table.matrix_world.inverted()
    scene.frame_set(1)

    export = rigid_export.export_scene(scene)
    by_name = {b.object_name: b for b in export.bodies}
    assert sorted(b.object_name for b in export.active_bodies) == ["Cone", "Table"]
    np.testing.assert_allclose(by_name["Cone"].centre_local, (0.0, 0.0, -0.5 + 0.25), atol=1e-6)
    assert by_name["Table"].parts == ["Big", "Small"]
    v_big, v_small = 1.0, 0.125
    expected = (v_big * np.array([0.5, 0.0, 0.0]) + v_small * np.array([-0.5, 0.0, -0.25])) / (v_big + v_small)
    np.testing.assert_allclose(by_name["Table"].centre_local, expected, atol=1e-6)
    index = by_name["Table"].body_index
    assert export.model.body_mass[index] == pytest.approx(3.0)
    np.testing.assert_allclose(export.model.initial_state.body_pos[index], expected + (0.0, 0.0, 1.0), atol=1e-6)

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert json.loads(scene.contact_lab.last_report)["bodies"]["compound_parts"] == {"Table": ["Big", "Small"]}
    assert table.contact_lab.baked_action is not None
    assert all(c.contact_lab.baked_action is None and c.animation_data is None for c in (big, small, deco))
    scene.frame_set(scene.frame_end)
    corners = np.concatenate([world_vertices(c) for c in (big, small)])
    assert abs(corners[:, 2].min()) < REST_TOLERANCE  # the big cube's bottom rests on the plane
    assert abs(world_vertices(cone)[:, 2].min()) < REST_TOLERANCE


@NEEDS_MESH_SHAPE
def test_ball_rests_on_an_imported_flat_ground(factory_scene, lab):
    """A flat passive Box from Blender (a ground plane) becomes a Mesh; a sphere dropped on it rests at its radius."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 36
    plane = lab.add_primitive("plane", "Floor", size=6.0)
    lab.with_rigid_body(plane, type="PASSIVE", collision_shape="BOX")
    ball = lab.add_primitive("uv_sphere", "Ball", radius=0.4, location=(0.0, 0.0, 0.8))
    lab.with_rigid_body(ball, collision_shape="SPHERE")
    scene.rigidbody_world.substeps_per_frame = 4
    assert bpy.ops.contact_lab.import_rigid_body() == {"FINISHED"}
    assert plane.contact_lab.shape == "MESH"
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    scene.frame_set(scene.frame_end)
    assert abs(ball.matrix_world.translation.z - 0.4) < REST_TOLERANCE


@NEEDS_MESH_SHAPE
def test_active_closed_mesh_rests_on_its_lowest_vertex(factory_scene, lab):
    """An active Mesh (a closed torus, simulated through its distance field) comes to rest on the ground plane."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 36
    lab.add_ground()
    torus = lab.add_primitive("torus", "Ring", major_radius=0.5, minor_radius=0.15, location=(0.0, 0.0, 0.4))
    torus.contact_lab.role, torus.contact_lab.shape = "ACTIVE", "MESH"
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    scene.frame_set(scene.frame_end)
    assert abs(world_vertices(torus)[:, 2].min()) < REST_TOLERANCE


# bad input -----------------------------------------------------------------------------------------------


def _shaped(obj, role, shape):
    """``obj`` with Contact Lab's ``role`` and ``shape``."""
    obj.contact_lab.role, obj.contact_lab.shape = role, shape
    return obj


def _shaped_empty(name, role, shape, z=2.0):
    """A new Empty named ``name`` at height ``z`` [m] with Contact Lab's ``role`` and ``shape``."""
    bpy.ops.object.empty_add(location=(0.0, 0.0, z))
    empty = bpy.context.object
    empty.name = name
    return _shaped(empty, role, shape)


def _flat_hull(lab):
    _shaped(lab.add_primitive("plane", "Card", size=1.0, location=(0.0, 0.0, 2.0)), "ACTIVE", "CONVEX_HULL")
    return "'Card': a Convex Hull needs at least 4 vertices that are not all in one plane"


def _lonely_compound(lab):
    _shaped_empty("Lonely", "ACTIVE", "COMPOUND")
    return "'Lonely': a Compound Parent needs parts"


def _open_active_mesh(lab):
    tube = lab.add_primitive(
        "cylinder", "Tube", radius=0.3, depth=1.0, end_fill_type="NOTHING", location=(0.0, 0.0, 2.0)
    )
    _shaped(tube, "ACTIVE", "MESH")
    return "'Tube': an active Mesh must be closed"


def _hull_on_empty(lab):
    _shaped_empty("Marker", "ACTIVE", "CONVEX_HULL")
    return "'Marker': the Convex Hull shape is made from a mesh, and this is not a mesh object (Empty)"


def _moving_part(lab):
    shelf = _shaped_empty("Shelf", "PASSIVE", "COMPOUND", z=0.5)
    arm = lab.add_cube("Arm", (1.0, 0.0, 0.5), size=0.3, role="PASSIVE")
    arm.parent = shelf
    arm.keyframe_insert("location", frame=1)
    arm.location.x += 1.0
    arm.keyframe_insert("location", frame=8)
    return "'Arm' moves relative to its Compound Parent 'Shelf'"


@pytest.mark.parametrize("breaker", [_flat_hull, _lonely_compound, _open_active_mesh, _hull_on_empty, _moving_part])
def test_bad_shapes_are_refused_and_change_nothing(factory_scene, lab, breaker):
    """Each bad input is refused by the bake with a message naming the object and what to change; the scene, an
    earlier bake and the report are untouched."""
    scene, objs = lab.build_drop_scene(frame_end=8)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    message = breaker(lab)
    scene.frame_set(2)
    bpy.context.view_layer.update()
    before = lab.snapshot(scene)
    report_before = scene.contact_lab.last_report
    with pytest.raises(RuntimeError) as info:
        bpy.ops.contact_lab.bake()
    assert message in str(info.value)
    assert lab.snapshot(scene) == before
    assert scene.contact_lab.last_report == report_before


def test_core_hull_error_reaches_the_user(factory_scene, lab, monkeypatch):
    """With the bridge's own check out of the way, the core's refusal of a flat hull (a ModelError naming the body)
    reaches the user as the bake's error, naming the object."""
    scene, _ = lab.build_drop_scene(frame_end=4)
    card = lab.add_primitive("plane", "Card", size=1.0, location=(5.0, 0.0, 0.5))
    card.contact_lab.role, card.contact_lab.shape = "PASSIVE", "CONVEX_HULL"
    monkeypatch.setattr(rigid_shapes, "hull_problem", lambda *args: None)
    before = lab.snapshot(scene)
    with pytest.raises(rigid_export.BakeError) as info:
        rigid_export.export_scene(scene)
    assert (
        str(info.value).startswith("'Card': a convex hull needs at least 4 points") and info.value.object_name == "Card"
    )
    with pytest.raises(RuntimeError, match="'Card': a convex hull needs at least 4 points"):
        bpy.ops.contact_lab.bake()
    assert lab.snapshot(scene) == before


def test_import_refuses_a_scene_without_rigid_bodies(factory_scene, lab):
    """Without Blender rigid bodies the operator cannot run, and the scene is unchanged."""
    scene, _ = lab.build_drop_scene(frame_end=4)
    before = (lab.snapshot(scene), scene.contact_lab.substeps, scene.contact_lab.friction_combine)
    assert not bpy.ops.contact_lab.import_rigid_body.poll()
    with pytest.raises(RuntimeError):
        bpy.ops.contact_lab.import_rigid_body()
    assert (lab.snapshot(scene), scene.contact_lab.substeps, scene.contact_lab.friction_combine) == before


def test_panels_show_parts_damping_and_the_import_button(factory_scene, lab):
    """The body panel shows damping, a compound's parts and, on a part, whose part it is (without mass); the bake
    panel offers the import while Blender's rigid body world exists and warns while it is on."""
    import types

    from contact_lab.panels import physics

    def draw(panel, obj=None):
        if obj is not None:
            bpy.context.view_layer.objects.active = obj
        layout = lab.FakeLayout()
        panel.draw(types.SimpleNamespace(layout=layout), bpy.context)
        operators = [args[0] for name, args, _ in layout.log if name == "operator"]
        return layout.props(), layout.labels(), operators

    bpy.ops.object.empty_add()
    table = bpy.context.object
    table.name = "Table"
    table.contact_lab.role, table.contact_lab.shape = "ACTIVE", "COMPOUND"
    leg = lab.add_cube("Leg", role="PASSIVE", shape="CYLINDER")
    leg.parent = table
    props, labels, _ = draw(physics.CONTACT_LAB_PT_object, table)
    assert {"shape", "mass", "linear_damping", "angular_damping"} <= set(props)
    assert "1 part(s): Leg" in labels and not any("needs" in text for text in labels)
    props, labels, _ = draw(physics.CONTACT_LAB_PT_object, leg)
    assert "shape" in props and "mass" not in props and "Part of the Compound Parent 'Table'" in labels
    table.contact_lab.shape = "CONVEX_HULL"
    _, labels, _ = draw(physics.CONTACT_LAB_PT_object, table)
    assert "The Convex Hull shape needs a mesh object" in labels

    _, labels, operators = draw(physics.CONTACT_LAB_PT_scene)
    assert "contact_lab.import_rigid_body" not in operators  # no rigid body world yet
    lab.with_rigid_body(leg)
    _, labels, operators = draw(physics.CONTACT_LAB_PT_scene)
    assert "contact_lab.import_rigid_body" in operators
    assert "Blender's rigid body world is on: it also simulates its objects" in labels
    bpy.context.scene.rigidbody_world.enabled = False
    _, labels, _ = draw(physics.CONTACT_LAB_PT_scene)
    assert not any("rigid body world is on" in text for text in labels)
