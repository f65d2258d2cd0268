"""Fast bodies stop at thin slabs, baked through Blender with the default settings (the Rigid engine, PROX).

Reference: geometry. Spheres 1, 2, 4, 10 and 20 cm across are thrown (Initial Velocity) at 20, 50 and 100 m/s at a
passive 1 cm box slab lying flat, standing upright and tilted 30°, 24 fps x 4 substeps, with gravity along the
throw. At 100 m/s a sphere moves 1.04 m per substep, over a hundred times the slab's thickness: without
speculative contacts it would be behind the slab after one step. Each starts at one of three phases of the
substep (its distance to the slab shifted by a third of a substep's travel), so the slab is met early, midway or
late in a step. Every keyed frame must have the sphere in front of the slab's face (at most 2 mm in), and at the
end it rests on the face (restitution 0).

Before the fix the default solver let every sphere through: the narrow phase put a speculative contact's point
midway across the gap, tens of centimetres outside a small sphere, and that lever arm inflated the contact's
Delassus block (and so PROX's r-factor) until the solve crawled.
"""

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

pytestmark = pytest.mark.blender

SLAB_HALF = 0.005
"""Half the slab's thickness [m]: a 1 cm slab."""
DIAMETERS = (0.01, 0.02, 0.04, 0.1, 0.2)
"""[m]: spheres of 1, 2 and 10 cm, read as diameters and as radii."""
SPEEDS = (20.0, 50.0, 100.0)
PHASES = (0.0, 1.0 / 3.0, 2.0 / 3.0)
FPS, SUBSTEPS, FRAMES = 24, 4, 24
INTO_FACE = 0.002
"""Deepest a sphere may reach into the slab's face at a keyed frame [m] (speculative contacts stop it at it)."""


def _throw_scene(lab, tilt_degrees):
    """A passive 1 cm slab through the origin, its face normal tilted from +z towards +x, and 45 spheres thrown
    at it along -normal with gravity along the throw; returns ``(normal, {name: (sphere, radius)})``."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    scene.render.fps = FPS
    scene.contact_lab.substeps = SUBSTEPS
    tilt = np.radians(tilt_degrees)
    normal = np.array([np.sin(tilt), 0.0, np.cos(tilt)])
    scene.gravity = tuple(-9.81 * normal)
    slab = lab.add_cube("Slab", (0.0, 0.0, 0.0), size=1.0, role="PASSIVE")
    slab.scale = (20.0, 20.0, 2.0 * SLAB_HALF)
    slab.rotation_euler = (0.0, tilt, 0.0)
    in_plane = (np.array([np.cos(tilt), 0.0, -np.sin(tilt)]), np.array([0.0, 1.0, 0.0]))
    spheres = {}
    step = 1.0 / (FPS * SUBSTEPS)
    for i, diameter in enumerate(DIAMETERS):
        for j, speed in enumerate(SPEEDS):
            for k, phase in enumerate(PHASES):
                radius = 0.5 * diameter
                lateral = 1.5 * (i - 2) * in_plane[0] + 1.5 * (3 * j + k - 4) * in_plane[1]
                distance = SLAB_HALF + radius + 0.3 + phase * speed * step
                name = f"Ball_{diameter * 100:g}cm_{speed:g}mps_phase{k}"
                ball = lab.add_sphere(name, tuple(lateral + distance * normal), radius=radius, mass=0.1)
                ball.contact_lab.initial_velocity = tuple(-speed * normal)
                spheres[name] = (ball, radius)
    scene.frame_set(1)
    return normal, spheres


@pytest.mark.parametrize("tilt", [0.0, 90.0, 30.0], ids=["flat", "upright", "tilted"])
def test_spheres_up_to_a_hundred_metres_per_second_stop_in_front_of_a_one_centimetre_slab(lab, tilt):
    """Every keyed frame in front of the slab's face, and each sphere resting on it at the end."""
    normal, spheres = _throw_scene(lab, tilt)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert json.loads(bpy.context.scene.contact_lab.last_report)["status"] == "FINISHED"
    through, not_resting, not_thrown = [], [], []
    for name, (ball, radius) in spheres.items():
        _, loc, _ = lab.keyed_transform(ball)
        height = loc @ normal - (SLAB_HALF + radius)  # centre above where it touches the face [m]
        if abs(height[1]) > INTO_FACE:  # thrown at 20 m/s or more, it reaches the slab within the first frame
            not_thrown.append(f"{name}: {height[1] * 1000:.1f} mm")
        if height.min() < -INTO_FACE:
            through.append(f"{name}: {height.min() * 1000:.1f} mm")
        if abs(height[-1]) > INTO_FACE or abs(height[-1] - height[-2]) > 1e-4:
            not_resting.append(f"{name}: {height[-2] * 1000:.2f} -> {height[-1] * 1000:.2f} mm")
    assert not not_thrown, f"not at the slab at the second frame (Initial Velocity lost?): {not_thrown}"
    assert not through, f"into or through the slab: {through}"
    assert not not_resting, f"not resting on the slab at the end: {not_resting}"
