"""Active Mesh bodies keep their holes and hollows, baked through Blender with the default settings.

Reference: geometry. Blender's torus (major radius 0.5 m, minor 0.15 m) leaves a hole of radius 0.35 m: a sphere,
a box and a convex hull 0.2 m across dropped down its axis land on the ground inside it, at their resting heights.
A ball set rolling inside an active bowl (half a UV sphere of radius 0.5 m made solid by a Solidify modifier, 5 cm
thick) stays in the hollow, below the rim. Before the fix the sphere came to rest on top of the torus's hole, as
on its convex hull.
"""

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

pytestmark = pytest.mark.blender

FRAMES = 36


def _active_mesh(obj):
    obj.contact_lab.role = "ACTIVE"
    obj.contact_lab.shape = "MESH"
    obj.contact_lab.mass = 5.0
    return obj


def _bake(lab, objects):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    scene.frame_set(1)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert json.loads(scene.contact_lab.last_report)["status"] == "FINISHED"
    return {obj.name: lab.keyed_transform(obj)[1] for obj in objects}


def test_a_sphere_a_box_and_a_hull_fall_through_the_hole_of_an_active_torus(lab):
    """Three tori on the ground, one shape dropped down the axis of each: every shape ends on the ground inside its
    torus's hole, and the tori lie still."""
    lab.add_ground(size=20.0)
    droppers = []
    for k, kind in enumerate(("sphere", "box", "hull")):
        x = 2.0 * (k - 1)
        bpy.ops.mesh.primitive_torus_add(location=(x, 0.0, 0.15), major_radius=0.5, minor_radius=0.15)
        ring = _active_mesh(bpy.context.object)
        ring.name = f"Ring_{kind}"
        droppers.append(ring)
        if kind == "sphere":
            body = lab.add_sphere("Ball", (x, 0.0, 0.8), radius=0.1, mass=0.2)
        elif kind == "box":
            body = lab.add_cube("Box", (x, 0.0, 0.8), size=0.16, mass=0.2)
        else:
            bpy.ops.mesh.primitive_cylinder_add(vertices=6, radius=0.1, depth=0.12, location=(x, 0.0, 0.8))
            body = bpy.context.object
            body.name = "Prism"
            body.contact_lab.role = "ACTIVE"
            body.contact_lab.shape = "CONVEX_HULL"
            body.contact_lab.mass = 0.2
        droppers.append(body)
    keyed = _bake(lab, droppers)
    for kind, name, rest in (("sphere", "Ball", 0.1), ("box", "Box", 0.08), ("hull", "Prism", 0.06)):
        x = 2.0 * (("sphere", "box", "hull").index(kind) - 1)
        end = keyed[name][-1]
        assert np.hypot(end[0] - x, end[1]) < 0.25, f"'{name}' left the hole: {end}"
        assert end[2] == pytest.approx(rest, abs=3e-3), f"'{name}' rests at {end[2]:.3f} m, not on the ground"
        ring = keyed[f"Ring_{kind}"]
        assert np.abs(ring[:, 2] - 0.15).max() < 3e-3


def _bowl(location):
    """Half a UV sphere (radius 0.5 m, opening up) with a 5 cm Solidify inwards: a closed shell."""
    import bmesh

    mesh = bpy.data.meshes.new("Bowl")
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=0.5)
    bmesh.ops.delete(bm, geom=[v for v in bm.verts if v.co.z > 1e-6], context="VERTS")
    bm.to_mesh(mesh)
    bm.free()
    bowl = bpy.data.objects.new("Bowl", mesh)
    bpy.context.collection.objects.link(bowl)
    bowl.location = location
    solid = bowl.modifiers.new("Solidify", "SOLIDIFY")
    solid.thickness = 0.05
    solid.offset = -1.0
    return _active_mesh(bowl)


def test_a_ball_rolling_in_an_active_bowl_stays_inside(lab):
    """A ball thrown sideways along the inside of an active bowl resting on the ground stays in the hollow."""
    lab.add_ground(size=20.0)
    bowl = _bowl((0.0, 0.0, 0.5))
    ball = lab.add_sphere("Ball", (0.25, 0.0, 0.5 - np.sqrt(0.35**2 - 0.25**2)), radius=0.1, mass=0.2)
    ball.contact_lab.initial_velocity = (0.0, 1.0, 0.0)
    keyed = _bake(lab, [bowl, ball])
    rel = keyed["Ball"] - keyed["Bowl"]  # from the rim's centre (the bowl's origin)
    assert np.all(np.linalg.norm(rel, axis=1) < 0.45 - 0.1 + 3e-3), "the ball went into the shell"
    assert np.all(rel[:, 2] < 0.0), "the ball rose above the rim"
