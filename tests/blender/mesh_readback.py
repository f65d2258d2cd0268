"""Reading a bake back from Blender (meshes, world matrices), for the tests that compare it with the core or check
its geometry, and for the demos' checks (demo/common.py)."""

import bpy
import numpy as np


def mesh_arrays(obj):
    """(local vertices (V, 3) float64, triangles (T, 3)) of the object's mesh as modelled."""
    mesh = obj.data
    co = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.vertices.foreach_get("co", co)
    tri = np.empty(3 * len(mesh.loop_triangles), np.int32)
    mesh.loop_triangles.foreach_get("vertices", tri)
    return co.reshape(-1, 3).astype(np.float64), tri.reshape(-1, 3)


def world_vertices(obj) -> np.ndarray:
    """World positions of ``obj``'s evaluated mesh vertices at the current frame, shape (V, 3) float64 [BU]."""
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    try:
        co = np.empty(3 * len(mesh.vertices), np.float32)
        mesh.vertices.foreach_get("co", co)
    finally:
        ev.to_mesh_clear()
    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def evaluated_world(obj, frame):
    """World positions of ``obj``'s evaluated mesh vertices at ``frame``, shape (V, 3) [BU]: shape keys, the Mesh
    Cache and every other modifier applied, as Blender shows the frame."""
    bpy.context.scene.frame_set(int(frame))
    return world_vertices(obj)


def scene_state(scene, key_blocks: bool = False) -> dict:
    """Everything a failed bake must not change: actions, shape keys, each object's world matrix (9 decimals),
    modifiers and mesh vertices; with ``key_blocks`` also every shape key's coordinates."""
    state = {"actions": sorted(a.name for a in bpy.data.actions), "keys": sorted(k.name for k in bpy.data.shape_keys)}
    for obj in scene.objects:
        entry = [tuple(np.round(np.array(obj.matrix_world), 9).ravel()), [m.name for m in obj.modifiers]]
        if obj.type == "MESH":
            co = np.empty(3 * len(obj.data.vertices), np.float32)
            obj.data.vertices.foreach_get("co", co)
            entry.append(co.tobytes())
            key = obj.data.shape_keys
            if key_blocks and key is not None:
                for block in key.key_blocks:
                    block.data.foreach_get("co", co)
                    entry.append((block.name, co.tobytes()))
        state[obj.name] = entry
    return state


def world_matrices(obj, frames) -> np.ndarray:
    """World matrices (F, 4, 4) of ``obj`` at ``frames`` (the scene is left at the last one)."""
    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(int(f))
        out.append(np.array(obj.matrix_world))
    return np.stack(out)
