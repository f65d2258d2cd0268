"""Issue 13's throw through the bake operator: two soft rubber balls thrown at each other never pass through.

The scene as reported: engine IPC at 24 fps with 2 substeps, two icospheres (radius 5 cm, 42 vertices, the Rubber
preset, lattice resolution 6) 30 cm apart, thrown at each other with ``initial_velocity`` ±20 m/s, 9 frames. Before the
fix each ball ended on the other's side (the Newton solve walked them round each other within a step, every iterate
collision-free, every frame clean). The reference is the same throw at ±2 m/s, where the balls meet, squash and come
apart slowly with their centres about ±4.8 cm from the middle, and the geometry: at any speed a ball may not be on
the other's side of the middle at any frame. The baked frames are checked by the bake's own checker (the report) and,
where the IPC Toolkit is installed (the bpy 5.0 tier), by ``ipctk.has_intersections`` on the baked surfaces.
"""

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from mesh_readback import evaluated_world  # noqa: E402

try:
    import ipctk
except ImportError:  # the bpy 4.2 and 5.2 tiers install no test peers: the report's checker still audits
    ipctk = None

pytestmark = pytest.mark.blender

FRAMES = 9
RADIUS = 0.05
"""Ball radius [m] (1 BU = 1 m)."""


def add_ball(name, x, speed):
    """A Rubber icosphere (42 vertices: Blender's level 2 is one split of the icosahedron) thrown along x."""
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=RADIUS, location=(x, 0.0, 1.0))
    obj = bpy.context.object
    obj.name = name
    assert len(obj.data.vertices) == 42
    s = obj.contact_lab
    s.role = "SOFT"
    s.soft_preset = "RUBBER"
    s.lattice_resolution = 6
    s.initial_velocity = (speed, 0.0, 0.0)
    return obj


def throw(speed):
    """Bake the throw at ±``speed`` [m/s]; (baked vertices per frame of both balls (F, 2, V, 3), bake report)."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    scene.render.fps, scene.render.fps_base = 24, 1.0
    s = scene.contact_lab
    s.engine = "IPC"
    s.soft_substeps = 2
    s.check_intersections = True
    balls = [add_ball("Left", -0.15, speed), add_ball("Right", 0.15, -speed)]
    scene.frame_set(1)
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    baked = np.array([[evaluated_world(ball, f) for ball in balls] for f in range(1, FRAMES + 1)])
    triangles = []
    for ball in balls:
        tri = np.empty(3 * len(ball.data.loop_triangles), np.int32)
        ball.data.loop_triangles.foreach_get("vertices", tri)
        triangles.append(tri.reshape(-1, 3))
    if ipctk is not None:  # the baked surfaces of both balls as one collision mesh
        faces = np.concatenate([triangles[0], triangles[1] + baked.shape[2]])
        surface = baked.reshape(FRAMES, -1, 3)
        mesh = ipctk.CollisionMesh(surface[0], ipctk.edges(faces), faces)
        assert not any(ipctk.has_intersections(mesh, x) for x in surface)
    return baked, json.loads(scene.contact_lab.last_report)


@pytest.mark.parametrize("speed", [2.0, 20.0])
def test_thrown_balls_stay_on_their_own_sides(speed):
    baked, report = throw(speed)
    assert report["status"] == "FINISHED" and report["engine"] == "IPC"
    stats = report["stats"]
    assert (stats["intersections"], stats["inverted"], stats["checked_frames"]) == (0, 0, FRAMES)
    centre_x = baked.mean(axis=2)[..., 0]  # (F, 2)
    # each on its own side of the middle at every frame: a ball's centre never crosses x = 0, its surface only
    # reaches it while the two are squashed together
    assert (centre_x[:, 0] < 0.0).all() and (centre_x[:, 1] > 0.0).all()
    assert (baked[:, 0, :, 0].max(axis=1) < 0.01).all() and (baked[:, 1, :, 0].min(axis=1) > -0.01).all()
    if speed == 2.0:  # the reference: they meet at frame 3 and part slowly, centres about ±4.8 cm at the end
        assert 0.0 < stats["min_distance"] < report["settings"]["dhat"]  # resting on each other's barrier
        np.testing.assert_allclose(centre_x[-1], [-0.048, 0.048], atol=0.004)
    else:  # met within the first frame (ballistic, they would be 68 cm past the middle) and bounced back apart
        assert centre_x[1, 0] < -0.1 < 0.1 < centre_x[1, 1]
        assert (np.diff(centre_x[1:, 0]) < 0.0).all() and (np.diff(centre_x[1:, 1]) > 0.0).all()
        assert stats["halved_steps"] > 0  # the motion check had to halve steps
