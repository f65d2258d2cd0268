"""Import Blender Rigid Bodies against stand-in objects (mocked bpy): what is carried over, what is reported."""

import json
import types

import pytest
from contact_lab.addon import properties
from contact_lab.addon.errors import BakeError
from contact_lab.addon.rigid import rigid_body_import as rbi
from contact_lab.operators import rigid_body_import as op_import


def settings_defaults(cls):
    annotations = cls.__annotations__
    return {n: m.keywords["default"] for n, m in annotations.items() if "default" in m.keywords}


def contact_settings(**overrides):
    values = settings_defaults(properties.CONTACT_LAB_ObjectSettings)
    values.update(role="NONE")
    values.update(overrides)
    return types.SimpleNamespace(**values)


def rigid_body(**overrides):
    """A Blender rigid body with Blender's defaults (as ``rigidbody.object_add`` makes it)."""
    values = dict(
        type="ACTIVE",
        mesh_source="DEFORM",
        enabled=True,
        collision_shape="CONVEX_HULL",
        kinematic=False,
        use_deform=False,
        mass=1.0,
        use_deactivation=False,
        use_start_deactivated=False,
        deactivate_linear_velocity=0.4,
        deactivate_angular_velocity=0.5,
        linear_damping=0.04,
        angular_damping=0.1,
        friction=0.5,
        restitution=0.0,
        use_margin=False,
        collision_margin=0.04,
        collision_collections=[True] + [False] * 19,
    )
    values.update(overrides)
    return types.SimpleNamespace(**values)


def fake_constraint(**overrides):
    """A Blender Rigid Body Constraint with Blender's defaults (as ``rigidbody.constraint_add`` makes it)."""
    values = dict(
        type="HINGE", enabled=True, object1=None, object2=None, disable_collisions=True, use_breaking=False,
        breaking_threshold=10.0, use_override_solver_iterations=False, solver_iterations=10, spring_type="SPRING2",
        use_motor_lin=False, use_motor_ang=False, motor_lin_target_velocity=1.0, motor_ang_target_velocity=1.0,
        motor_lin_max_impulse=1.0, motor_ang_max_impulse=1.0,
    )  # fmt: skip
    for axis in "xyz":
        for kind, (lower, upper) in (("lin", (-1.0, 1.0)), ("ang", (-0.785398, 0.785398))):
            values[f"use_limit_{kind}_{axis}"] = False
            values[f"limit_{kind}_{axis}_lower"], values[f"limit_{kind}_{axis}_upper"] = lower, upper
        for ang in ("", "ang_"):
            values[f"use_spring_{ang}{axis}"] = False
            values[f"spring_stiffness_{ang}{axis}"], values[f"spring_damping_{ang}{axis}"] = 10.0, 0.5
    values.update(overrides)
    return types.SimpleNamespace(**values)


def box_corners(size=(1.0, 1.0, 1.0)):
    h = [0.5 * s for s in size]
    return [(x, y, z) for x in (-h[0], h[0]) for y in (-h[1], h[1]) for z in (-h[2], h[2])]


def fake_object(name, rb=None, *, size=(1.0, 1.0, 1.0), parent=None, modifiers=(), **settings):
    return types.SimpleNamespace(
        name=name,
        type="MESH",
        rigid_body=rb,
        rigid_body_constraint=None,
        contact_lab=contact_settings(**settings),
        parent=parent,
        modifiers=list(modifiers),
        data=types.SimpleNamespace(shape_keys=None),
        animation_data=None,
        bound_box=box_corners(size),
    )


def fake_world(**overrides):
    values = dict(
        enabled=True,
        substeps_per_frame=10,
        solver_iterations=10,
        time_scale=1.0,
        use_split_impulse=False,
        point_cache=types.SimpleNamespace(frame_start=1, frame_end=250, is_baked=False),
        effector_weights=types.SimpleNamespace(gravity=1.0, all=1.0),
        collection=None,
    )
    values.update(overrides)
    return types.SimpleNamespace(**values)


def fake_scene(objects, world="default", **scene_overrides):
    settings = settings_defaults(properties.CONTACT_LAB_SceneSettings)
    settings.update(frame_start=1, frame_end=250)
    scene = types.SimpleNamespace(
        objects=list(objects),
        rigidbody_world=fake_world() if world == "default" else world,
        use_gravity=True,
        unit_settings=types.SimpleNamespace(scale_length=1.0),
        frame_start=1,
        frame_end=250,
        contact_lab=types.SimpleNamespace(**settings),
    )
    for key, value in scene_overrides.items():
        setattr(scene, key, value)
    return scene


def test_settings_are_copied_from_blender():
    """Type, shape, mass, friction, bounciness and both dampings land unchanged in obj.contact_lab."""
    rb = rigid_body(
        collision_shape="CYLINDER", mass=2.5, friction=0.8, restitution=0.3, linear_damping=0.2, angular_damping=0.7
    )
    obj = fake_object("Can", rb)
    report = rbi.import_rigid_body(fake_scene([obj]))
    s = obj.contact_lab
    got = (s.role, s.shape, s.mass, s.friction, s.restitution, s.linear_damping, s.angular_damping)
    assert got == ("ACTIVE", "CYLINDER", rb.mass, rb.friction, rb.restitution, rb.linear_damping, rb.angular_damping)
    assert report["objects"]["Can"]["settings"] == {
        "role": "ACTIVE",
        "shape": "CYLINDER",
        "mass": 2.5,
        "friction": 0.8,
        "restitution": 0.3,
        "linear_damping": 0.2,
        "angular_damping": 0.7,
    }
    assert report["objects"]["Can"]["not_carried"] == []  # Blender's defaults lose nothing


@pytest.mark.parametrize("shape", ["BOX", "SPHERE", "CAPSULE", "CYLINDER", "CONE", "CONVEX_HULL", "MESH"])
def test_every_collision_shape_maps_to_the_same_shape(shape):
    """Each Blender collision shape becomes the Contact Lab shape of the same name (a solid object)."""
    obj = fake_object("Body", rigid_body(collision_shape=shape))
    rbi.import_rigid_body(fake_scene([obj]))
    assert obj.contact_lab.shape == shape
    assert set(properties.RIGID_ONLY_SHAPES) | {"BOX", "SPHERE", "CAPSULE", "MESH", "PLANE"} == {
        item[0] for item in properties.SHAPE_ITEMS
    }


@pytest.mark.parametrize(
    ("rb", "role", "note"),
    [
        (rigid_body(type="PASSIVE"), "PASSIVE", None),
        (rigid_body(kinematic=True), "PASSIVE", "Animated"),
        (rigid_body(type="PASSIVE", kinematic=True), "PASSIVE", None),
        (rigid_body(enabled=False), "PASSIVE", "Dynamic is off"),
        (rigid_body(), "ACTIVE", None),
    ],
)
def test_type_animated_and_dynamic_decide_the_role(rb, role, note):
    """Passive, Animated (kinematic) and Dynamic off all become Passive; only a dynamic Active stays Active."""
    obj = fake_object("Body", rb)
    report = rbi.import_rigid_body(fake_scene([obj]))
    assert obj.contact_lab.role == role
    notes = report["objects"]["Body"]["notes"]
    assert (note is None and notes == []) or any(note in n for n in notes)


def test_flat_passive_ground_becomes_a_mesh_and_flat_active_is_reported():
    """A flat passive Box/Convex Hull becomes Mesh (Contact Lab has no margin); a flat active one is a warning."""
    ground = fake_object("Ground", rigid_body(type="PASSIVE", collision_shape="BOX"), size=(10.0, 10.0, 0.0))
    card = fake_object("Card", rigid_body(collision_shape="CONVEX_HULL"), size=(1.0, 1.0, 0.0))
    report = rbi.import_rigid_body(fake_scene([ground, card]))
    assert ground.contact_lab.shape == "MESH"
    assert any("imported as Mesh" in n for n in report["objects"]["Ground"]["notes"])
    assert card.contact_lab.shape == "CONVEX_HULL"
    assert any("flat" in n and "needs a volume" in n for n in report["objects"]["Card"]["not_carried"])


def test_compound_children_become_parts():
    """A Compound Parent's children with rigid bodies are its parts; a Mesh part becomes a Convex Hull."""
    table = fake_object("Table", rigid_body(collision_shape="COMPOUND", mass=5.0))
    leg = fake_object("Leg", rigid_body(collision_shape="CYLINDER"), parent=table)
    top = fake_object("Top", rigid_body(collision_shape="MESH", type="PASSIVE"), parent=table)
    report = rbi.import_rigid_body(fake_scene([table, leg, top]))
    assert (table.contact_lab.role, table.contact_lab.shape, table.contact_lab.mass) == ("ACTIVE", "COMPOUND", 5.0)
    assert (leg.contact_lab.role, leg.contact_lab.shape) == ("ACTIVE", "CYLINDER")
    assert (top.contact_lab.role, top.contact_lab.shape) == ("PASSIVE", "CONVEX_HULL")
    assert report["objects"]["Leg"]["part_of"] == "Table" and report["objects"]["Top"]["part_of"] == "Table"
    from contact_lab.addon.scene import compound_parent

    assert compound_parent(leg) is table and compound_parent(top) is table and compound_parent(table) is None
    summary = rbi.report_messages(report)[0]
    assert summary[0] == "INFO" and summary[1].startswith(
        "Imported 3 Blender rigid bodies (1 active, 0 passive, 2 comp"
    )


def test_settings_without_equivalent_are_reported_per_object():
    """Margin, sleeping, mesh source (with modifiers), Deforming and parenting are each named in the object's
    not-carried list; collision collections and a constraint are carried (the bake reads them) and said."""
    rb = rigid_body(
        use_margin=True,
        collision_margin=0.1,
        use_deactivation=True,
        use_start_deactivated=True,
        collision_collections=[True, False, True] + [False] * 17,
        mesh_source="BASE",
        use_deform=True,
    )
    holder = fake_object("Holder")
    obj = fake_object("Rock", rb, parent=holder, modifiers=["Subdivision"])
    other = fake_object("Other", rigid_body())
    obj.rigid_body_constraint = fake_constraint(type="HINGE", object1=obj, object2=other)
    report = rbi.import_rigid_body(fake_scene([obj, other, holder]))
    lost = " | ".join(report["objects"]["Rock"]["not_carried"])
    for fragment in ("Collision Margin 0.1", "Start Deactivated", "Source Base", "Deforming", "parented to 'Holder'"):
        assert fragment in lost
    assert "Collision Collections" not in lost and "constraint" not in lost
    assert any("Collision Collections (1, 3): the bake reads them" in n for n in report["objects"]["Rock"]["notes"])
    assert report["constraints"] == {
        "Rock": {"type": "HINGE", "between": ["Rock", "Other"], "notes": [], "not_carried": []}
    }
    assert report["objects"]["Other"]["not_carried"] == []
    world_lost = " | ".join(report["world"]["not_carried"])
    assert "Deactivation on 1 of 2 active bodies" in world_lost and "'Other' never deactivates" in world_lost
    assert report["world"]["settings"].get("sleeping") is None
    warnings = [text for level, text in rbi.report_messages(report) if level == "WARNING"]
    assert len(warnings) == 2 and warnings[0].startswith("'Rock': not carried over: it is parented to 'Holder'")
    assert "Deactivation on 1 of 2" in warnings[1]


def test_mesh_source_without_modifiers_is_not_reported():
    """Base/Deform/Final give the same mesh when there are no modifiers or shape keys: nothing to report."""
    obj = fake_object("Rock", rigid_body(mesh_source="BASE"))
    assert rbi.import_rigid_body(fake_scene([obj]))["objects"]["Rock"]["not_carried"] == []


def test_animated_dynamic_switch_is_reported(mock_bpy):
    """A keyed Animated/Dynamic checkbox cannot be carried over (legacy-action F-curves, Blender 4.2)."""
    mock_bpy.app.version = (4, 2, 0)
    curve = types.SimpleNamespace(data_path="rigid_body.kinematic", keyframe_points=[0, 1])
    obj = fake_object("Drop", rigid_body(kinematic=True))
    obj.animation_data = types.SimpleNamespace(action=types.SimpleNamespace(fcurves=[curve]))
    report = rbi.import_rigid_body(fake_scene([obj]))
    assert any("Animated checkbox is animated" in text for text in report["objects"]["Drop"]["not_carried"])


def test_world_settings_are_carried_and_blender_is_muted():
    """Substeps, a higher iteration count, the cache range within the scene's, Bullet's combine rules and the Rigid
    engine are set;
    Blender's world is muted, not removed."""
    world = fake_world(substeps_per_frame=7, solver_iterations=150)
    world.point_cache.frame_start, world.point_cache.frame_end = 5, 300  # the scene plays 1-80
    scene = fake_scene([fake_object("Cube", rigid_body())], world=world, frame_end=80)
    scene.contact_lab.engine = "SOFT"
    report = rbi.import_rigid_body(scene)
    s = scene.contact_lab
    assert (s.substeps, s.iterations, s.frame_start, s.frame_end) == (7, 150, 5, 80)
    assert (s.friction_combine, s.restitution_combine, s.engine) == ("PRODUCT", "PRODUCT", "RIGID")
    assert world.enabled is False and scene.rigidbody_world is world
    assert report["blender_world_muted"] is True
    assert report["world"]["settings"] == {
        "engine": "RIGID",
        "friction_combine": "PRODUCT",
        "restitution_combine": "PRODUCT",
        "substeps": 7,
        "iterations": 150,
        "frame_start": 5,
        "frame_end": 80,
    }
    assert report["world"]["not_carried"] == []


def test_lower_blender_iterations_keep_ours_and_the_world_can_stay_on():
    """Blender's 10 iterations do not lower Contact Lab's limit; mute_blender_world=False leaves the world on."""
    world = fake_world()
    scene = fake_scene([fake_object("Cube", rigid_body())], world=world)
    scene.contact_lab.use_scene_frame_range = False
    report = rbi.import_rigid_body(scene, mute_blender_world=False)
    assert scene.contact_lab.iterations == 100 and "iterations" not in report["world"]["settings"]
    assert scene.contact_lab.use_scene_frame_range is True  # the cache covers the scene's range
    assert world.enabled is True and report["blender_world_muted"] is False
    assert any("still on" in n for n in report["world"]["notes"])


def test_world_settings_without_equivalent_are_reported():
    """Speed, Split Impulse and gravity field weights are named for the world; a constraint-only empty is carried
    (the bake reads it) and reported as a constraint, not as lost."""
    world = fake_world(time_scale=0.5, use_split_impulse=True)
    world.effector_weights.gravity = 0.25
    a, b = fake_object("A", rigid_body()), fake_object("B", rigid_body())
    hinge = fake_object("Hinge")
    hinge.rigid_body_constraint = fake_constraint(type="HINGE", object1=a, object2=b)
    report = rbi.import_rigid_body(fake_scene([a, b, hinge], world=world))
    lost = " | ".join(report["world"]["not_carried"])
    assert "Speed 0.5" in lost and "Split Impulse" in lost and "gravity (0.25" in lost
    assert "Hinge" not in lost
    assert report["constraints"]["Hinge"] == {"type": "HINGE", "between": ["A", "B"], "notes": [], "not_carried": []}
    assert "1 rigid body constraint(s) are baked as joints" in rbi.report_messages(report)[0][1]
    assert hinge.contact_lab.role == "NONE"  # not a rigid body: untouched


def test_what_a_constraint_cannot_carry_is_said_per_constraint():
    """Crossed limits (the bake refuses them), a disabled constraint (skipped, as Blender does) and an Animated
    passive side (held at its start pose): each named under its constraint object, with a warning line."""
    a, b = fake_object("A", rigid_body()), fake_object("B", rigid_body(type="PASSIVE", kinematic=True))
    crossed = fake_object("Crossed")
    crossed.rigid_body_constraint = fake_constraint(
        object1=a, object2=b, use_limit_ang_z=True, limit_ang_z_lower=0.5, limit_ang_z_upper=-0.5
    )
    off = fake_object("Off")
    off.rigid_body_constraint = fake_constraint(enabled=False, object1=a, object2=None)
    report = rbi.import_rigid_body(fake_scene([a, b, crossed, off]))
    lost = " | ".join(report["constraints"]["Crossed"]["not_carried"])
    assert "the bake refuses it: 'Crossed': its angular Z limit has lower 0.5 above upper -0.5" in lost
    assert "'B' is Passive and moves" in lost
    assert report["constraints"]["Off"]["not_carried"] == [] and "disabled" in report["constraints"]["Off"]["notes"][0]
    warnings = [text for level, text in rbi.report_messages(report) if level == "WARNING"]
    assert any(text.startswith("'Crossed': not carried over: the bake refuses it") for text in warnings)


def test_soft_bodies_keep_the_engine():
    """A scene with soft bodies keeps its engine, and says so."""
    jelly = fake_object("Jelly", role="SOFT")
    scene = fake_scene([fake_object("Cube", rigid_body()), jelly])
    scene.contact_lab.engine = "SOFT"
    report = rbi.import_rigid_body(scene)
    assert scene.contact_lab.engine == "SOFT" and jelly.contact_lab.role == "SOFT"
    assert any("Engine stays Soft" in text for text in report["world"]["not_carried"])


def test_without_rigid_bodies_nothing_changes():
    """No rigid body: BakeError, and neither the objects nor the scene settings change."""
    obj = fake_object("Cube", role="PASSIVE")
    scene = fake_scene([obj])
    before = (dict(vars(obj.contact_lab)), dict(vars(scene.contact_lab)), scene.rigidbody_world.enabled)
    with pytest.raises(BakeError, match="No object in the scene has a Blender rigid body"):
        rbi.import_rigid_body(scene)
    assert (dict(vars(obj.contact_lab)), dict(vars(scene.contact_lab)), scene.rigidbody_world.enabled) == before


def test_operator_reports_and_stores_the_report(mock_bpy):
    """execute() reports the summary as INFO, lost settings as WARNING, and keeps the JSON report on the scene."""
    obj = fake_object("Rock", rigid_body(use_margin=True))
    scene = fake_scene([obj])
    op = op_import.CONTACT_LAB_OT_import_rigid_body.__new__(op_import.CONTACT_LAB_OT_import_rigid_body)
    mock_bpy.types.Operator.__init__(op)
    op.mute_blender_world = True
    assert op.execute(types.SimpleNamespace(scene=scene)) == {"FINISHED"}
    stored = json.loads(scene.contact_lab.last_import_report)
    assert stored["objects"]["Rock"]["settings"]["role"] == "ACTIVE" and stored["blender_world_muted"] is True
    levels = [next(iter(level)) for level, _ in op.reports]
    assert levels[0] == "INFO" and op.reports[0][1].startswith("Imported 1 Blender rigid bodies (1 active, 0 passive)")
    assert [text for level, text in op.reports if level == {"WARNING"}] == [
        "'Rock': not carried over: Collision Margin 0.04 (Contact Lab collides with the exact shape)"
    ]
    assert op_import.CONTACT_LAB_OT_import_rigid_body.bl_options == {"REGISTER", "UNDO"}
    assert op_import.CONTACT_LAB_OT_import_rigid_body.bl_idname == "contact_lab.import_rigid_body"


def test_operator_cancels_without_rigid_bodies(mock_bpy):
    """No rigid body in the scene: CANCELLED with an ERROR, nothing stored."""
    scene = fake_scene([fake_object("Cube")])
    op = op_import.CONTACT_LAB_OT_import_rigid_body.__new__(op_import.CONTACT_LAB_OT_import_rigid_body)
    mock_bpy.types.Operator.__init__(op)
    op.mute_blender_world = True
    assert op.execute(types.SimpleNamespace(scene=scene)) == {"CANCELLED"}
    assert op.reports == [
        (
            {"ERROR"},
            str(BakeError("No object in the scene has a Blender rigid body (Properties ▸ Physics ▸ Rigid Body)")),
        )
    ]
    assert scene.contact_lab.last_import_report == ""


def test_deactivation_on_every_active_body_becomes_sleeping():
    """Every active body deactivates → the scene sleeps with Bullet's 2 s and the lowest thresholds, in metres."""
    a = fake_object("A", rigid_body(use_deactivation=True, deactivate_linear_velocity=0.4))
    b = fake_object(
        "B", rigid_body(use_deactivation=True, deactivate_linear_velocity=0.25, deactivate_angular_velocity=0.3)
    )
    floor = fake_object("Floor", rigid_body(type="PASSIVE"))
    scene = fake_scene([a, b, floor], unit_settings=types.SimpleNamespace(scale_length=0.01))
    report = rbi.import_rigid_body(scene)
    s = scene.contact_lab
    assert (s.sleeping, s.sleep_time) == (True, rbi.BULLET_DEACTIVATION_TIME)
    assert s.sleep_linear_speed == pytest.approx(0.25 * 0.01) and s.sleep_angular_speed == pytest.approx(0.3)
    assert report["world"]["settings"]["sleeping"] is True
    assert not any("Deactivation" in t for t in report["world"]["not_carried"])
    assert all(entry["not_carried"] == [] for entry in report["objects"].values())
