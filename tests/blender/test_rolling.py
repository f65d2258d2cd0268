"""Rolling through Blender at the default settings (damping off, as the closed form has none): an Ico Sphere of 5
subdivisions (5 120 faces) with the Convex Hull shape and a Cylinder roll down a 20° ground Plane at
``g sin θ / (1 + I / (m r²))`` within 3 % (``5/7 g sin θ`` for the ball the icosphere approximates, ``2/3 g sin θ``
for the cylinder); the core's own test is ``tests/core/rigid/test_rolling.py``.
"""

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

pytestmark = pytest.mark.blender

FPS = 24
SLOPE = math.radians(20.0)
RADIUS = 0.1


def test_an_icosphere_hull_and_a_cylinder_roll_down_a_slope_at_their_analytic_acceleration(factory_scene, lab):
    scene = factory_scene
    scene.render.fps = FPS
    scene.frame_start, scene.frame_end = 1, 2 * FPS + 1
    ground = lab.add_ground()
    ground.rotation_euler = (0.0, SLOPE, 0.0)  # downhill is +x
    ground.contact_lab.friction = 0.8
    downhill = np.array([math.cos(SLOPE), 0.0, -math.sin(SLOPE)])
    normal = np.array([math.sin(SLOPE), 0.0, math.cos(SLOPE)])
    bodies = {}
    for name, y, inertia in (("Ico", -0.5, 2.0 / 5.0), ("Wheel", 0.5, 1.0 / 2.0)):
        at = tuple(-5.0 * downhill + (RADIUS + 1e-4) * normal + (0.0, y, 0.0))
        if name == "Ico":
            obj = lab.add_primitive("ico_sphere", name, subdivisions=5, radius=RADIUS, location=at)
            obj.contact_lab.shape = "CONVEX_HULL"
        else:  # its axis along y, across the slope
            obj = lab.add_primitive("cylinder", name, radius=RADIUS, depth=0.03, location=at,
                                    rotation=(math.pi / 2, 0.0, 0.0))  # fmt: skip
            obj.contact_lab.shape = "CYLINDER"
        obj.contact_lab.role = "ACTIVE"
        obj.contact_lab.friction = 0.8
        obj.contact_lab.linear_damping = obj.contact_lab.angular_damping = 0.0  # the closed form has none
        bodies[name] = (obj, inertia)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}

    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    t = (frames - frames[0]) / FPS
    for name, (obj, inertia) in bodies.items():
        centres = []
        for frame in frames:
            scene.frame_set(int(frame))
            centres.append(np.array(obj.matrix_world.translation))
        s = (np.array(centres) - centres[0]) @ downhill
        measured = 2.0 * np.polyfit(t[2:], s[2:], 2)[0]
        analytic = 9.81 * math.sin(SLOPE) / (1.0 + inertia)
        assert measured == pytest.approx(analytic, rel=0.03), name
