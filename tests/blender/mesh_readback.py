"""Reading a baked mesh back from Blender, for the tests that compare it with the core or check its geometry."""

import bpy
import numpy as np


def evaluated_world(obj, frame):
    """World positions of ``obj``'s evaluated mesh vertices at ``frame``, shape (V, 3) [BU]: shape keys, the Mesh
    Cache and every other modifier applied, as Blender shows the frame."""
    scene = bpy.context.scene
    scene.frame_set(int(frame))
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    try:
        co = np.empty(3 * len(mesh.vertices), np.float32)
        mesh.vertices.foreach_get("co", co)
    finally:
        ev.to_mesh_clear()
    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
