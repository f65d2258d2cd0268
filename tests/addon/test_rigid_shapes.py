"""Rigid shapes in the body frame, compounds and shape validation, with stand-in objects (no Blender)."""

import types

import numpy as np
import pytest
from contact_lab.addon import properties, units
from contact_lab.addon.rigid import build as rigid_build
from contact_lab.addon.rigid import shapes
from contact_lab.addon.scene import compound_parent, compound_parts, contact_objects, engine_shape_problems
from contact_lab.core import ShapeType

CUBE = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
CUBE_TRIANGLES = np.array(
    [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4]]
    + [[1, 5, 7], [1, 7, 3]]
)


def settings(**overrides):
    annotations = properties.CONTACT_LAB_ObjectSettings.__annotations__
    values = {n: m.keywords["default"] for n, m in annotations.items() if "default" in m.keywords}
    values.update(role="ACTIVE")
    values.update(overrides)
    return types.SimpleNamespace(**values)


def fake_object(name, *, centre=(0.0, 0.0, 0.0), size=(1.0, 1.0, 1.0), parent=None, kind="MESH", **overrides):
    lo = np.asarray(centre) - 0.5 * np.asarray(size)
    hi = np.asarray(centre) + 0.5 * np.asarray(size)
    corners = [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    return types.SimpleNamespace(
        name=name, type=kind, parent=parent, bound_box=corners, contact_lab=settings(**overrides)
    )


def matrix(translation=(0.0, 0.0, 0.0), angle_z=0.0, scale=(1.0, 1.0, 1.0)):
    c, s = np.cos(angle_z), np.sin(angle_z)
    m = np.eye(4)
    m[:3, :3] = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ np.diag(scale)
    m[:3, 3] = translation
    return m


@pytest.mark.parametrize("shape", ["CYLINDER", "CONE"])
def test_cylinder_and_cone_are_sized_like_blender(shape):
    """radius = max(dim X, dim Y)/2, half height = dim Z/2 (Blender's Cylinder and Cone collision shapes)."""
    spec = shapes.primitive_shape(shape, np.array([0.6, 0.4, 2.0]))
    assert spec.shape_type == ShapeType[shape]
    np.testing.assert_allclose(spec.params, (0.3, 1.0, 0.0))
    np.testing.assert_allclose(np.concatenate([spec.pos, spec.quat]), (0, 0, 0, 1, 0, 0, 0))


def test_active_cone_body_sits_at_its_centroid():
    """The cone's centre of mass is a quarter of its height above the base: the body origin moves there (object
    space, through the object's scale and the scene's unit scale) and the cone shape sits above it."""
    obj = fake_object("Cone", centre=(0.1, 0.2, 0.3), size=(1.0, 1.0, 2.0), shape="CONE")
    scale, metres = np.array([2.0, 2.0, 3.0]), 0.01
    specs, ref = shapes.object_shapes(obj, scale, metres)
    geometry = shapes.body_geometry(specs, ref, scale, metres, active=True)
    height_local = 2.0  # local dim Z; the base at z = 0.3 - 1, the tip at 0.3 + 1
    np.testing.assert_allclose(geometry.centre_local, (0.1, 0.2, 0.3 - height_local / 4.0), atol=1e-12)
    half_height_m = 0.5 * height_local * 3.0 * metres
    np.testing.assert_allclose(geometry.shapes[0].pos, (0.0, 0.0, half_height_m / 2.0), atol=1e-12)
    np.testing.assert_allclose(geometry.surface_centre, (0.1, 0.2, 0.3), atol=1e-12)  # the cone's own origin
    np.testing.assert_allclose(geometry.mass_properties.volume, np.pi * (0.5 * 2 * metres) ** 2 * 2 * half_height_m / 3)


def test_passive_cone_keeps_the_bounding_box_centre():
    """A passive body needs no centre of mass: its origin stays the bounding-box centre."""
    obj = fake_object("Cone", centre=(0.0, 0.0, 1.0), size=(1.0, 1.0, 2.0), shape="CONE", role="PASSIVE")
    specs, ref = shapes.object_shapes(obj, np.ones(3), 1.0)
    geometry = shapes.body_geometry(specs, ref, np.ones(3), 1.0, active=False)
    np.testing.assert_allclose(geometry.centre_local, (0.0, 0.0, 1.0))
    assert geometry.mass_properties is None and np.allclose(geometry.shapes[0].pos, 0.0)


def test_convex_hull_body_origin_is_the_hull_centroid():
    """A hull's vertices are scaled into metres and centred on the solid's centroid (a wedge: not its box centre)."""
    wedge = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [0, 0, 2]], dtype=float)  # tetrahedron, centroid (0.5,)*3
    tris = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    obj = fake_object("Wedge", centre=(1.0, 1.0, 1.0), size=(2.0, 2.0, 2.0), shape="CONVEX_HULL")
    scale, metres = np.array([1.0, 2.0, 1.0]), 0.5
    specs, ref = shapes.object_shapes(obj, scale, metres, (wedge, tris))
    geometry = shapes.body_geometry(specs, ref, scale, metres, active=True)
    np.testing.assert_allclose(geometry.centre_local, (0.5, 0.5, 0.5), atol=1e-12)
    body_vertices = geometry.shapes[0].vertices
    np.testing.assert_allclose(body_vertices, (wedge - 0.5) * scale * metres, atol=1e-12)
    assert geometry.shapes[0].shape_type == ShapeType.CONVEX and np.allclose(geometry.shapes[0].pos, 0.0)
    np.testing.assert_allclose(geometry.surface_centre, geometry.centre_local)


def test_compound_parts_are_posed_in_the_parent_frame_around_their_centroid():
    """Two parts of a rotated, scaled parent: the body origin is the volume-weighted centroid, each part's box
    sits where it is in the world, turned with the part."""
    parent = fake_object("Table", kind="EMPTY", size=(0.0, 0.0, 0.0), shape="COMPOUND")
    big = fake_object("Big", size=(2.0, 2.0, 2.0), parent=parent)  # volume 8 (× parent scale³)
    small = fake_object("Small", size=(1.0, 1.0, 1.0), parent=parent, shape="SPHERE")
    parent_m = matrix((1.0, 2.0, 3.0), np.pi / 2, (2.0, 2.0, 2.0))
    big_m = parent_m @ matrix((1.0, 0.0, 0.0), np.pi / 4)
    small_m = parent_m @ matrix((-2.0, 0.0, 0.0))
    metres = 1.0
    specs, ref = shapes.compound_shapes(parent_m, [big, small], np.stack([big_m, small_m]), metres, {})
    geometry = shapes.body_geometry(specs, ref, np.full(3, 2.0), metres, active=True)
    v_big, v_small = 4.0**3, 4.0 / 3.0 * np.pi * 1.0**3  # world sizes: the box 4 m, the sphere radius 1 m
    centroid_parent_axes = (v_big * np.array([2.0, 0, 0]) + v_small * np.array([-4.0, 0, 0])) / (v_big + v_small)
    np.testing.assert_allclose(geometry.centre_local, centroid_parent_axes / 2.0, atol=1e-12)  # object space
    box, ball = geometry.shapes
    np.testing.assert_allclose(box.params, (2.0, 2.0, 2.0))
    np.testing.assert_allclose(ball.params, (1.0, 0.0, 0.0))
    np.testing.assert_allclose(box.pos, np.array([2.0, 0, 0]) - centroid_parent_axes, atol=1e-12)
    np.testing.assert_allclose(ball.pos, np.array([-4.0, 0, 0]) - centroid_parent_axes, atol=1e-12)
    np.testing.assert_allclose(units.quat_to_matrix(box.quat), matrix(angle_z=np.pi / 4)[:3, :3], atol=1e-12)
    # the world position of the box's centre is the part's world origin
    world_centre = parent_m[:3, 3] + parent_m[:3, :3] @ geometry.centre_local
    rotation = parent_m[:3, :3] / 2.0
    np.testing.assert_allclose(world_centre + rotation @ box.pos, big_m[:3, 3], atol=1e-12)


def test_shape_spec_moves_vertices_not_its_pose():
    """Vertex shapes keep the identity pose; their vertices move."""
    spec = shapes.ShapeSpec(ShapeType.CONVEX, np.zeros(3), np.zeros(3), np.array([1.0, 0, 0, 0]), CUBE.copy())
    rotation = matrix(angle_z=np.pi / 2)[:3, :3]
    moved = spec.moved(rotation, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(moved.vertices, CUBE @ rotation.T + (1, 2, 3))
    np.testing.assert_allclose(np.concatenate([moved.pos, moved.quat]), (0, 0, 0, 1, 0, 0, 0))


def test_hull_without_volume_is_explained():
    """Fewer than 4 vertices, or all in one plane: refused with what to change; a tetrahedron passes."""
    flat = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=float)
    two_sided = np.array([[0, 1, 2], [1, 3, 2], [0, 2, 1], [1, 2, 3]])
    assert "all lie in one plane" in shapes.hull_problem("Card", flat, two_sided)
    assert "'Card': a Convex Hull needs at least 4 vertices" in shapes.hull_problem("Card", flat[:3], two_sided[:1])
    tetra = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    assert shapes.hull_problem("Tet", tetra, np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])) is None


def test_mesh_problems_for_active_and_passive_meshes():
    """An active Mesh must be closed, have a volume and face outwards; a passive one only needs faces."""
    assert shapes.mesh_problem("Cube", CUBE, CUBE_TRIANGLES, active=True) is None
    assert "open edge" in shapes.mesh_problem("Bowl", CUBE, CUBE_TRIANGLES[2:], active=True)
    assert shapes.mesh_problem("Bowl", CUBE, CUBE_TRIANGLES[2:], active=False) is None
    assert "point inwards" in shapes.mesh_problem("Cube", CUBE, CUBE_TRIANGLES[:, ::-1], active=True)
    quad = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=float)
    both_sides = np.array([[0, 1, 2], [1, 3, 2], [0, 2, 1], [1, 2, 3]])
    assert shapes.open_edge_count(both_sides) == 0
    assert "is flat" in shapes.mesh_problem("Card", quad, both_sides, active=True)
    assert "needs faces" in shapes.mesh_problem("Dots", quad, np.zeros((0, 3), np.int64), active=False)
    assert shapes.signed_volume(CUBE, CUBE_TRIANGLES) == pytest.approx(8.0)


def test_shape_problems_name_the_object_and_the_fix():
    """Mesh-made shapes on non-meshes, compounds without parts or with non-Coulomb friction, bad parts."""
    curve = fake_object("Curve", kind="CURVE", shape="CONVEX_HULL")
    empty = fake_object("Lonely", kind="EMPTY", size=(0.0, 0.0, 0.0), shape="COMPOUND", friction_model="TEXTURE")
    table = fake_object("Table", kind="EMPTY", size=(0.0, 0.0, 0.0), shape="COMPOUND", role="PASSIVE")
    bad = fake_object("Bowl", shape="MESH", parent=table)
    text = fake_object("Label", kind="FONT", shape="CONVEX_HULL", parent=table)
    good = fake_object("Leg", shape="CYLINDER", parent=table)
    problems = shapes.shape_problems([curve, empty], [table], {"Table": [bad, good, text]})
    by_object = {}
    for name, message in problems:
        by_object.setdefault(name, []).append(message)
    assert set(by_object) == {"Curve", "Lonely", "Bowl", "Label"}
    assert "Convex Hull shape is made from a mesh, and this is not a mesh object (Curve)" in by_object["Curve"][0]
    assert any("needs parts" in m for m in by_object["Lonely"]) and any("Coulomb" in m for m in by_object["Lonely"])
    assert (
        "a part's Shape must be Box, Sphere, Capsule, Cylinder, Cone or Convex Hull, not Mesh" in by_object["Bowl"][0]
    )
    assert "not a mesh object (Font)" in by_object["Label"][0]


def test_compound_parts_are_marked_by_their_role():
    """Direct children with Role Active/Passive of an Active/Passive Compound Parent are its parts and no bodies
    of their own; Role None children are decoration; a compound with Role None has no parts."""
    table = fake_object("Table", shape="COMPOUND")
    leg = fake_object("Leg", parent=table, role="PASSIVE")
    top = fake_object("Top", parent=table)
    lamp = fake_object("Lamp", parent=table, role="NONE")
    idle = fake_object("Idle", shape="COMPOUND", role="NONE")
    own = fake_object("Own", parent=idle, role="PASSIVE")
    floor = fake_object("Floor", role="PASSIVE", shape="PLANE")
    scene = types.SimpleNamespace(objects=[top, lamp, floor, table, own, leg, idle])
    assert compound_parts(scene) == {"Table": [leg, top]}
    assert [compound_parent(o) for o in (leg, top, lamp, own, table)] == [table, table, None, None, None]
    active, passive = contact_objects(scene)
    assert [o.name for o in active] == ["Table"] and [o.name for o in passive] == ["Floor", "Own"]


def test_other_engines_name_the_rigid_only_shapes():
    """engine_shape_problems names each object whose shape the engine cannot use, and the fix."""
    objects = [fake_object("Can", shape="CYLINDER"), fake_object("Box"), fake_object("Rock", shape="CONVEX_HULL")]
    problems = engine_shape_problems(objects, {"BOX", "SPHERE", "CAPSULE", "PLANE"}, "Soft")
    assert [name for name, _ in problems] == ["Can", "Rock"]
    assert "'Rock': the Soft engine cannot use the Convex Hull shape" in problems[1][1]


def test_core_errors_are_blamed_on_the_labelled_object():
    """A core ModelError ('<label>: ...') is turned into a BakeError naming the longest matching object."""
    names = ["Cube", "Cube.001", "Ball"]
    assert rigid_build._culprit("Cube.001: convex hull spans no volume", names) == "Cube.001"
    assert rigid_build._culprit("Cube: mass must be positive", names) == "Cube"
    assert rigid_build._culprit("the scene has no bodies", names) is None
