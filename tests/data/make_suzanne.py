"""Write suzanne.npz: Blender's Suzanne (monkey) mesh, its holes filled (Suzanne's head is open where the eyes
sit) and triangulated, as ``vertices`` (V, 3) float64 and ``triangles`` (T, 3) int32 (counter-clockwise seen
from outside): three closed surfaces (head and eyes), for tests/core/rigid/test_mass_properties.py.

    .venv/bin/python tests/data/make_suzanne.py

Needs bpy (Blender as a Python module); the core tests only read the .npz and never import bpy.
"""

from pathlib import Path

import bpy
import numpy as np

OUT = Path(__file__).with_name("suzanne.npz")


def suzanne() -> tuple[np.ndarray, np.ndarray]:
    """Suzanne's vertices [BU] and triangles, from ``primitive_monkey_add`` in a fresh scene."""
    import bmesh  # only importable once bpy is

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_monkey_add()
    mesh = bpy.context.active_object.data
    bm = bmesh.new()
    bm.from_mesh(mesh)
    bmesh.ops.holes_fill(bm, edges=bm.edges[:], sides=0)
    bmesh.ops.recalc_face_normals(bm, faces=bm.faces[:])
    bm.to_mesh(mesh)
    bm.free()
    mesh.calc_loop_triangles()  # Blender's triangulation, wound like the polygons
    vertices = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.vertices.foreach_get("co", vertices)
    triangles = np.empty(3 * len(mesh.loop_triangles), np.int32)
    mesh.loop_triangles.foreach_get("vertices", triangles)
    return vertices.reshape(-1, 3).astype(np.float64), triangles.reshape(-1, 3)


if __name__ == "__main__":
    v, t = suzanne()
    np.savez_compressed(OUT, vertices=v, triangles=t)
    print(f"wrote {OUT}: {len(v)} vertices, {len(t)} triangles")
