"""The first bake of each engine in a fresh process, as an artist would click it: time and numba compilations.

Run by ``test_warmup.py`` and ``test_install_zip.py`` after the warm-up: every engine's default scene is baked
through the operator (its blocking path) and the report's ``compiled_kernels`` says how many kernels had to be
compiled (0 when the warm-up covered them). Writes ``{engine: {"compiled_kernels", "seconds", "status"}}`` to the
JSON file named by the first argument; the second, if given, is the add-on's package name (default
``contact_lab``; an installed extension is ``bl_ext.<repo>.contact_lab``).

The scenes use every default of the panels: a rigid pile of boxes and spheres (PROX), the default cube (2 m) as a
Soft body, the same cube with the IPC engine; three frames each, all falling onto a plane.
"""

import importlib
import json
import sys
import time

import bpy


def _scene(engine: str):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.register()
    scene = bpy.context.scene
    scene.contact_lab.engine = engine
    scene.contact_lab.use_frame_range = True
    scene.contact_lab.frame_start, scene.contact_lab.frame_end = 1, 3
    bpy.ops.mesh.primitive_plane_add(size=20.0)
    ground = bpy.context.object
    ground.contact_lab.role, ground.contact_lab.shape = "PASSIVE", "PLANE"
    return scene


def rigid():
    scene = _scene("RIGID")
    for k in range(5):
        bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0.0, 0.0, 0.3 + 0.55 * k))
        bpy.context.object.contact_lab.role = "ACTIVE"
        bpy.ops.mesh.primitive_uv_sphere_add(radius=0.25, location=(1.0, 0.0, 0.3 + 0.55 * k))
        bpy.context.object.contact_lab.role, bpy.context.object.contact_lab.shape = "ACTIVE", "SPHERE"
    return scene


def soft(engine="SOFT"):
    scene = _scene(engine)
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=(0.0, 0.0, 1.1))
    bpy.context.object.contact_lab.role = "SOFT"
    return scene


SCENES = {"RIGID": rigid, "SOFT": soft, "IPC": lambda: soft("IPC")}


def main(out_path: str, package: str = "contact_lab") -> None:
    global addon
    addon = importlib.import_module(package)
    result = {}
    for engine, build in SCENES.items():
        build()
        t0 = time.perf_counter()
        outcome = bpy.ops.contact_lab.bake()
        report = json.loads(bpy.context.scene.contact_lab.last_report)
        result[engine] = {
            "status": sorted(outcome)[0],
            "compiled_kernels": report.get("compiled_kernels"),
            "seconds": time.perf_counter() - t0,
            "report_status": report["status"],
        }
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main(*sys.argv[1:3])
    sys.stdout.flush()
    if tuple(bpy.app.version) < (4, 3, 0):  # bpy 4.2 (module) crashes at teardown after registering panels
        import os

        os._exit(0)
