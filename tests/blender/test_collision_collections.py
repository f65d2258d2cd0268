"""Blender's Collision Collections in a Contact Lab bake: each body's mask is read from its Blender rigid body.

References: the collections ticked in Blender (the mask's bits), and the scene's geometry (a box in a collection
the other shares not falls through it onto the ground, as in Blender).
"""

from __future__ import annotations

import pytest

bpy = pytest.importorskip("bpy")

from conftest import add_cube, add_ground  # noqa: E402
from contact_lab.addon.rigid import gather  # noqa: E402

pytestmark = pytest.mark.blender


def test_collision_collections_are_read_as_masks():
    """Blender's Collision Collections of each body → its 20-bit mask; no Blender rigid body → collection 1."""
    s = bpy.context.scene.contact_lab
    s.engine, s.frame_start, s.frame_end = "RIGID", 1, 3
    add_ground()
    a = add_cube("A", (0.0, 0.0, 2.0))
    add_cube("B", (3.0, 0.0, 2.0))
    bpy.ops.rigidbody.world_add()
    bpy.context.view_layer.objects.active = a
    bpy.ops.rigidbody.object_add()
    a.rigid_body.collision_collections = [k in (1, 4, 19) for k in range(20)]
    bodies = {b.object_name: b for b in gather.gather_scene(bpy.context.scene).bodies}
    assert bodies["A"].collision_collections == (1 << 1) | (1 << 4) | (1 << 19)
    assert bodies["B"].collision_collections == 1 and bodies["Ground"].collision_collections == 1


def _stack_in_two_collections():
    """Ground (collections 1 and 2), 'Lower' box resting on it (collection 1) and 'Upper' just above it
    (collection 2), with Blender rigid bodies and Contact Lab roles alike; 30 frames."""
    scene = bpy.context.scene
    s = scene.contact_lab
    s.engine, s.frame_start, s.frame_end = "RIGID", 1, 30
    scene.frame_start, scene.frame_end = 1, 30
    ground = add_ground()
    ground.scale = (1.0, 1.0, 1.0)
    lower = add_cube("Lower", (0.0, 0.0, 0.5))
    upper = add_cube("Upper", (0.0, 0.0, 1.6))
    bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    world.point_cache.frame_start, world.point_cache.frame_end = 1, 30
    for obj, kind, collections in ((ground, "PASSIVE", (0, 1)), (lower, "ACTIVE", (0,)), (upper, "ACTIVE", (1,))):
        bpy.context.view_layer.objects.active = obj
        bpy.ops.rigidbody.object_add(type=kind)
        obj.rigid_body.collision_shape = "BOX"
        obj.rigid_body.collision_collections = [k in collections for k in range(20)]
    return scene, lower, upper


def test_a_box_falls_through_a_box_it_shares_no_collection_with_as_in_blender():
    """Blender's own simulation (Bullet) is the reference: 'Upper' falls through 'Lower' onto the ground; the
    Contact Lab bake of the same scene ends with 'Upper' on the ground too (within 2 cm), 'Lower' unmoved."""
    from contact_lab.addon.bake import driver as bake

    scene, lower, upper = _stack_in_two_collections()
    bpy.ops.ptcache.bake_all(bake=True)
    scene.frame_set(30)
    bullet = (lower.matrix_world.translation.z, upper.matrix_world.translation.z)
    bpy.ops.ptcache.free_bake_all()
    scene.rigidbody_world.enabled = False
    scene.frame_set(1)
    assert bullet[1] < 0.6  # Bullet: through the lower box, on the ground
    bake.bake_scene(scene)
    scene.frame_set(30)
    ours = (lower.matrix_world.translation.z, upper.matrix_world.translation.z)
    assert abs(ours[0] - 0.5) < 0.01 and abs(ours[1] - bullet[1]) < 0.02, (ours, bullet)
