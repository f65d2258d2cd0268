"""Import Blender Rigid Bodies in real Blender: scenes set up with Blender's own rigid body world only
(``bpy.ops.rigidbody.object_add``), converted by ``bpy.ops.contact_lab.import_rigid_body()``, baked, and compared
with closed-form motion; what has no equivalent is reported with Blender's real property names; bad input is
refused by the bake before anything changes, naming the object and the fix.

``test_rigid_shapes.py`` has the cylinder/hull/pusher import, the cone and compound centres of mass and the bad
shapes set up through Contact Lab's own settings; this file adds boxes, spheres, a Compound Parent, a passive Mesh,
animated passives, restitution and damping, all from Blender's settings.
"""

import json
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")
bmesh = pytest.importorskip("bmesh")

from contact_lab.core import ModelBuilder  # noqa: E402
from mesh_readback import world_matrices  # noqa: E402

pytestmark = pytest.mark.blender

NEEDS_MESH_SHAPE = pytest.mark.skipif(
    not hasattr(ModelBuilder, "add_shape_mesh"),
    reason="the core's ModelBuilder has no add_shape_mesh yet (the rigid Mesh shape)",
)

FPS = 24
G = 9.81
REST_TOLERANCE = 0.002
"""[m]: resting heights (the solver leaves penetrations far below a millimetre)."""

INCLINE_DEG = 30.0


def start(scene, frame_end: int) -> None:
    scene.frame_start, scene.frame_end = 1, frame_end
    scene.render.fps = FPS


def slab(lab, name: str, size, location, rotation=(0.0, 0.0, 0.0), **settings):
    """A passive box of full ``size`` made with Blender's rigid body settings."""
    obj = lab.add_primitive("cube", name, size=1.0, location=location, rotation=rotation)
    obj.scale = size
    return lab.with_rigid_body(obj, type="PASSIVE", collision_shape="BOX", **settings)


def finish_world(scene, substeps: int = 8) -> None:
    scene.rigidbody_world.substeps_per_frame = substeps
    scene.frame_set(1)


def import_rigid_body(scene) -> dict:
    assert bpy.ops.contact_lab.import_rigid_body() == {"FINISHED"}
    return json.loads(scene.contact_lab.last_import_report)


def blender_settings(obj) -> tuple:
    rb = obj.rigid_body
    return (rb.collision_shape, rb.mass, rb.friction, rb.restitution, rb.linear_damping, rb.angular_damping)


def imported_settings(obj) -> tuple:
    s = obj.contact_lab
    return (s.shape, s.mass, s.friction, s.restitution, s.linear_damping, s.angular_damping)


def assert_imported_as_in_blender(objects) -> None:
    for obj in objects:
        got, want = imported_settings(obj), blender_settings(obj)
        assert got[0] == want[0], obj.name
        assert got[1:] == pytest.approx(want[1:], rel=1e-6), obj.name


def track(obj, frames) -> np.ndarray:
    """World matrices (F, 4, 4) at ``frames``; the scene back at frame 1."""
    out = world_matrices(obj, frames)
    bpy.context.scene.frame_set(1)
    return out


def world_vertices(obj) -> np.ndarray:
    co = np.empty(3 * len(obj.data.vertices))
    obj.data.vertices.foreach_get("co", co)
    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]


# what carries over ------------------------------------------------------------------------------------------------


def test_box_ball_and_animated_lift_bake_to_their_closed_form_heights(factory_scene, lab):
    """Blender-made scene on a thick passive ground: a tilted box settles flat at half its height, a ball with
    Bounciness 0.8 on a ground of 1.0 (Product: e = 0.8) rebounds to e² of its drop, and a box on an Animated lift
    rises with it; each imported value equals Blender's, damping 0 included."""
    scene = factory_scene
    start(scene, frame_end=36)
    ground = slab(lab, "Ground", (12.0, 6.0, 0.4), (0.0, 0.0, -0.2), friction=0.8, restitution=1.0)
    box = lab.add_primitive("cube", "Crate", size=0.5, location=(-2.0, 0.0, 0.6), rotation=(0.2, 0.1, 0.4))
    lab.with_rigid_body(box, collision_shape="BOX", mass=4.0, friction=0.9, restitution=0.0, angular_damping=0.5)
    drop = 1.0  # the ball's lowest point above the ground [m]
    ball = lab.add_primitive("uv_sphere", "Ball", radius=0.2, location=(0.0, 0.0, 0.2 + drop))
    lab.with_rigid_body(ball, collision_shape="SPHERE", mass=0.5, restitution=0.8, linear_damping=0.0)
    lift = lab.add_primitive("cube", "Lift", size=1.0, location=(2.5, 0.0, 0.1))
    lift.scale = (1.0, 1.0, 0.2)
    lab.with_rigid_body(lift, collision_shape="BOX", kinematic=True, friction=0.9)
    rise = 0.6
    lift.keyframe_insert("location", frame=6)
    lift.location.z += rise
    lift.keyframe_insert("location", frame=30)
    rider = lab.add_primitive("cube", "Rider", size=0.3, location=(2.5, 0.0, 0.2 + 0.15 + 0.002))
    lab.with_rigid_body(rider, collision_shape="BOX", mass=1.0, friction=0.9)
    finish_world(scene)

    report = import_rigid_body(scene)
    assert_imported_as_in_blender([ground, box, ball, lift, rider])
    roles = {o.name: o.contact_lab.role for o in (ground, box, ball, lift, rider)}
    assert roles == {"Ground": "PASSIVE", "Crate": "ACTIVE", "Ball": "ACTIVE", "Lift": "PASSIVE", "Rider": "ACTIVE"}
    assert any("Animated" in note for note in report["objects"]["Lift"]["notes"])
    assert (scene.contact_lab.substeps, scene.contact_lab.restitution_combine) == (8, "PRODUCT")

    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    frames = np.arange(1, 37)
    crate = track(box, frames)
    assert abs(crate[-1, 2, 3] - 0.25) < REST_TOLERANCE  # half its height above z = 0
    assert abs(crate[-1, 2, :3]).max() > 1.0 - 1e-4  # one face flat on the ground
    # the ball: first impact after sqrt(2 h / g), then a rebound apex of e² h
    z = track(ball, frames)[:, 2, 3] - 0.2
    impact = int(np.argmin(z[:20]))
    apex = float(z[impact : impact + 20].max())
    assert apex == pytest.approx(0.8**2 * drop, rel=0.02)
    # the animated lift keeps its own keys and carries the rider up
    assert lift.contact_lab.baked_action is None
    top = track(lift, frames)[:, 2, 3] + 0.1
    riding = track(rider, frames)[:, 2, 3]
    assert top[-1] == pytest.approx(0.2 + rise, abs=1e-6)
    assert np.abs(riding[3:] - (top[3:] + 0.15)).max() < REST_TOLERANCE


def test_spheres_roll_and_slide_down_an_incline_as_in_closed_form(factory_scene, lab):
    """On a 30° passive Box: μ 0.8 × 1.0 rolls without slipping at a = 5/7 g sin θ (ω r = v); μ 0.08 × 1.0 slides
    at g (sin θ − μ cos θ) while spinning up at 5/2 μ g cos θ / r. Damping 0 (Blender's field, carried over)."""
    scene = factory_scene
    start(scene, frame_end=25)
    a = math.radians(INCLINE_DEG)
    down = np.array([math.cos(a), 0.0, -math.sin(a)])
    normal = np.array([math.sin(a), 0.0, math.cos(a)])
    centre = np.array([0.0, 0.0, 2.0])
    slab(lab, "Incline", (7.0, 3.0, 0.2), tuple(centre), (0.0, a, 0.0), friction=1.0)
    r = 0.25
    spheres = {}
    for name, mu, y in (("Roller", 0.8, -0.6), ("Slider", 0.08, 0.6)):
        p = centre - 2.5 * down + (0.1 + r + 0.0005) * normal + (0.0, y, 0.0)
        obj = lab.add_primitive("uv_sphere", name, radius=r, location=tuple(p))
        lab.with_rigid_body(
            obj, collision_shape="SPHERE", mass=1.0, friction=mu, linear_damping=0.0, angular_damping=0.0
        )
        spheres[name] = (obj, mu)
    finish_world(scene)
    import_rigid_body(scene)
    assert_imported_as_in_blender([o for o, _ in spheres.values()])
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    frames = np.arange(1, 26)
    t = (frames - 1) / FPS
    for name, (obj, mu) in spheres.items():
        m = track(obj, frames)
        s = (m[:, :3, 3] - m[0, :3, 3]) @ down
        off = (m[:, :3, 3] - m[0, :3, 3]) @ normal
        accel = 2.0 * np.polyfit(t[2:], s[2:], 2)[0]
        # spin about the incline's axis (+Y for rolling down +X) per frame, from consecutive rotations
        rel = np.einsum("fij,fkj->fik", m[1:, :3, :3], m[:-1, :3, :3])
        spin = np.array([math.acos(np.clip(0.5 * (np.trace(q) - 1.0), -1.0, 1.0)) for q in rel]) * FPS
        speed = np.diff(s) * FPS
        assert np.abs(off).max() < REST_TOLERANCE, name  # stays on the surface
        if name == "Roller":
            assert accel == pytest.approx(5.0 / 7.0 * G * math.sin(a), rel=0.01)
            np.testing.assert_allclose(spin[2:] * r, speed[2:], rtol=0.02, atol=0.02)
        else:
            assert accel == pytest.approx(G * (math.sin(a) - mu * math.cos(a)), rel=0.01)
            alpha = np.polyfit(t[3:], spin[2:], 1)[0]  # spin sampled between frames
            assert alpha == pytest.approx(2.5 * mu * G * math.cos(a) / r, rel=0.05)


def test_compound_parent_made_in_blender_rests_on_its_legs(factory_scene, lab):
    """A Blender Compound Parent (a mesh with collision shape Compound) and its rigid-body children (a Box top and
    four Cylinder legs) import as one compound body: only the parent is keyed, and it comes to rest level, on its
    legs (their feet on the ground), the top at its height above them."""
    scene = factory_scene
    start(scene, frame_end=30)
    slab(lab, "Ground", (8.0, 8.0, 0.4), (0.0, 0.0, -0.2), friction=0.8)
    table = lab.add_primitive("cube", "Table", size=0.2, location=(0.0, 0.0, 1.0))
    lab.with_rigid_body(table, collision_shape="COMPOUND", mass=6.0, friction=0.7, linear_damping=0.1)
    top = lab.add_primitive("cube", "Top", size=1.0, location=(0.0, 0.0, 1.3))
    top.scale = (1.2, 0.8, 0.08)
    parts = [top]
    for i, (x, y) in enumerate(((-0.5, -0.3), (0.5, -0.3), (-0.5, 0.3), (0.5, 0.3))):
        parts.append(lab.add_primitive("cylinder", f"Leg {i + 1}", radius=0.05, depth=0.6, location=(x, y, 0.96)))
    bpy.context.view_layer.update()
    for part, shape in zip(parts, ["BOX"] + ["CYLINDER"] * 4, strict=True):
        lab.with_rigid_body(part, collision_shape=shape)
        part.parent = table
        part.matrix_parent_inverse = table.matrix_world.inverted()
    table.rotation_euler = (0.05, -0.03, 0.3)  # lands on one leg first
    finish_world(scene)

    report = import_rigid_body(scene)
    assert (table.contact_lab.role, table.contact_lab.shape, table.contact_lab.mass) == ("ACTIVE", "COMPOUND", 6.0)
    assert table.contact_lab.linear_damping == pytest.approx(0.1)
    assert [report["objects"][p.name].get("part_of") for p in parts] == ["Table"] * 5
    assert [p.contact_lab.shape for p in parts] == ["BOX"] + ["CYLINDER"] * 4
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    compound_parts = json.loads(scene.contact_lab.last_report)["bodies"]["compound_parts"]
    assert {k: sorted(v) for k, v in compound_parts.items()} == {"Table": sorted(p.name for p in parts)}
    assert table.contact_lab.baked_action is not None
    assert all(p.animation_data is None for p in parts)

    scene.frame_set(scene.frame_end)
    feet = np.concatenate([world_vertices(p)[:, 2] for p in parts[1:]])
    assert abs(feet.min()) < REST_TOLERANCE
    lowest = [world_vertices(p)[:, 2].min() for p in parts[1:]]
    assert max(lowest) < REST_TOLERANCE  # all four legs stand on the ground
    assert np.array(top.matrix_world)[2, 2] > 0.0 and abs(world_vertices(top)[:, 2].min() - 0.6) < 2 * REST_TOLERANCE
    scene.frame_set(1)


@NEEDS_MESH_SHAPE
def test_ball_settles_at_the_bottom_of_a_blender_mesh_bowl(factory_scene, lab):
    """A passive Mesh (an open hemispherical shell, concave) from Blender's settings: a ball dropped into it comes to
    rest at the bottom, its centre R − r below the sphere's centre (within the facets' 2 mm)."""
    scene = factory_scene
    start(scene, frame_end=36)
    bowl_radius, r = 1.0, 0.2
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=64, v_segments=48, radius=bowl_radius)
    bmesh.ops.delete(bm, geom=[v for v in bm.verts if v.co.z > 1e-6], context="VERTS")  # keep the lower half
    me = bpy.data.meshes.new("Bowl")
    bm.to_mesh(me)
    bm.free()
    bowl = bpy.data.objects.new("Bowl", me)
    bowl.location.z = bowl_radius
    scene.collection.objects.link(bowl)
    lab.with_rigid_body(bowl, type="PASSIVE", collision_shape="MESH", friction=0.8)
    ball = lab.add_primitive("uv_sphere", "Ball", radius=r, location=(0.03, 0.0, 0.6))
    lab.with_rigid_body(ball, collision_shape="SPHERE", friction=0.8, linear_damping=0.5, angular_damping=0.5)
    finish_world(scene)
    import_rigid_body(scene)
    assert (bowl.contact_lab.role, bowl.contact_lab.shape) == ("PASSIVE", "MESH")
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    scene.frame_set(scene.frame_end)
    end = np.array(ball.matrix_world.translation)
    scene.frame_set(1)
    assert np.hypot(end[0], end[1]) < 0.05
    assert end[2] == pytest.approx(bowl_radius - (bowl_radius - r), abs=0.002)


def test_settings_without_equivalent_are_named_with_blenders_properties(factory_scene, lab):
    """Real RNA, not stand-ins: margin, deactivation, mesh source with a modifier, Deforming, and the world's Speed,
    Split Impulse and gravity weight are each reported; collision collections and a constraint are carried (the
    bake reads them) and said; nothing is lost silently for an object left at Blender's defaults."""
    scene = factory_scene
    start(scene, frame_end=10)
    plain = lab.add_primitive("cube", "Plain", size=0.5, location=(-2.0, 0.0, 1.0))
    lab.with_rigid_body(plain, collision_shape="BOX")
    rock = lab.add_primitive("ico_sphere", "Rock", radius=0.3, location=(0.0, 0.0, 1.0))
    rock.modifiers.new("Smooth", "SUBSURF")
    lab.with_rigid_body(
        rock,
        collision_shape="CONVEX_HULL",
        mesh_source="BASE",
        use_margin=True,
        collision_margin=0.01,
        use_deactivation=True,
        use_deform=True,
    )
    rock.rigid_body.collision_collections[1] = True
    bpy.context.view_layer.objects.active = rock
    bpy.ops.rigidbody.constraint_add(type="HINGE")
    rock.rigid_body_constraint.object1, rock.rigid_body_constraint.object2 = rock, plain
    world = scene.rigidbody_world
    world.time_scale, world.use_split_impulse = 0.5, True
    world.effector_weights.gravity = 0.5
    finish_world(scene)

    report = import_rigid_body(scene)
    assert report["objects"]["Plain"]["not_carried"] == []
    lost = " | ".join(report["objects"]["Rock"]["not_carried"])
    for fragment in ("Collision Margin 0.01", "Source Base", "Deforming"):
        assert fragment in lost
    assert any("Collision Collections (1, 2): the bake reads them" in n for n in report["objects"]["Rock"]["notes"])
    assert report["constraints"] == {
        "Rock": {"type": "HINGE", "between": ["Rock", "Plain"], "notes": [], "not_carried": []}
    }
    lost_world = " | ".join(report["world"]["not_carried"])
    assert "Speed 0.5" in lost_world and "Split Impulse" in lost_world and "gravity (0.5" in lost_world
    assert "Deactivation on 1 of 2 active bodies" in lost_world and not scene.contact_lab.sleeping
    assert world.time_scale == 0.5 and world.use_split_impulse and not world.enabled  # kept, muted


# bad input --------------------------------------------------------------------------------------------------------


def _rigid_mesh_object(lab, name, vertices, faces, collision_shape):
    """A new mesh object ``name`` of ``faces`` over ``vertices`` at (1.5, 0, 1), with a Blender rigid body."""
    me = bpy.data.meshes.new(name)
    me.from_pydata(vertices, [], faces)
    obj = bpy.data.objects.new(name, me)
    obj.location = (1.5, 0.0, 1.0)
    bpy.context.scene.collection.objects.link(obj)
    lab.with_rigid_body(obj, collision_shape=collision_shape)


def _triangle_hull(lab):
    _rigid_mesh_object(lab, "Shard", [(0.0, 0.0, 0.0), (0.4, 0.0, 0.0), (0.0, 0.3, 0.2)], [(0, 1, 2)], "CONVEX_HULL")
    return "'Shard': a Convex Hull needs at least 4 vertices", "its evaluated mesh has only 3", "thickness (Solidify)"


def _tilted_coplanar_hull(lab):
    # five vertices on a tilted plane: the bounding box has a volume, the hull has none
    ring = [(math.cos(t), math.sin(t)) for t in np.linspace(0.0, 2.0 * math.pi, 5, endpoint=False)]
    vertices = [(0.3 * u, 0.3 * v, 0.2 * u + 0.1 * v) for u, v in ring]
    _rigid_mesh_object(lab, "Sheet", vertices, [tuple(range(5))], "CONVEX_HULL")
    return "'Sheet': a Convex Hull needs at least 4 vertices", "vertices that all lie in one plane", "choose the Mesh"


def _childless_compound(lab):
    obj = lab.add_primitive("cube", "Crate", size=0.5, location=(1.5, 0.0, 1.0))
    lab.with_rigid_body(obj, collision_shape="COMPOUND")
    return "'Crate': a Compound Parent needs parts", "parent the parts to it and give them a Role", "another Shape"


def _flat_closed_mesh(lab):
    # a closed cube whose top and bottom coincide: no open edge, no volume
    verts = [(x, y, 0.0) for z in (0, 1) for y in (-0.3, 0.3) for x in (-0.3, 0.3)]
    faces = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (1, 3, 7, 5), (3, 2, 6, 7), (2, 0, 4, 6)]
    _rigid_mesh_object(lab, "Lid", verts, faces, "MESH")
    return "'Lid': an active Mesh needs a volume", "make it Passive or give it thickness (Solidify)", "flat"


def scene_state(scene, lab) -> tuple:
    """The transforms, actions and keys (``lab.snapshot``) plus every Contact Lab and Blender physics setting."""
    names = ("role", "shape", "mass", "friction", "restitution", "linear_damping", "angular_damping")
    objects = {
        o.name: (
            tuple(getattr(o.contact_lab, n) for n in names),
            None if o.rigid_body is None else blender_settings(o) + (o.rigid_body.type, o.rigid_body.kinematic),
            o.contact_lab.baked_action.name if o.contact_lab.baked_action else None,
        )
        for o in scene.objects
    }
    s = scene.contact_lab
    world = (s.engine, s.substeps, s.frame_start, s.frame_end, s.last_report, scene.rigidbody_world.enabled)
    return lab.snapshot(scene), objects, world, len(bpy.data.actions)


@pytest.mark.parametrize("breaker", [_triangle_hull, _tilted_coplanar_hull, _childless_compound, _flat_closed_mesh])
def test_bad_blender_rigid_bodies_are_refused_before_anything_changes(factory_scene, lab, breaker):
    """After a good import and bake, a bad body set up in Blender and imported is refused by the next bake: the
    error names the object and says what to change; keys, actions, transforms and every setting are untouched."""
    scene = factory_scene
    start(scene, frame_end=6)
    slab(lab, "Ground", (6.0, 6.0, 0.4), (0.0, 0.0, -0.2))
    crate = lab.add_primitive("cube", "Box", size=0.5, location=(-1.0, 0.0, 0.5))
    lab.with_rigid_body(crate, collision_shape="BOX")
    finish_world(scene)
    import_rigid_body(scene)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    fragments = breaker(lab)
    import_rigid_body(scene)
    scene.frame_set(3)
    before = scene_state(scene, lab)
    assert before[1]["Box"][2] is not None  # the earlier bake's action

    with pytest.raises(RuntimeError) as info:
        bpy.ops.contact_lab.bake()
    for fragment in fragments:
        assert fragment in str(info.value)
    assert scene_state(scene, lab) == before
