"""The warm-up's scenes: tiny bakes that make numba compile what an artist's first bakes need.

Run inside the warm-up process (:mod:`.child`), never in the artist's Blender. Each scene is a few frames
with contact from the first step (a kernel compiles only when it is called), baked through the same
:func:`..bake.driver.bake_scene` an artist's bake uses, so every kernel compiles for the argument types a real bake
passes:

- rigid: the primitives on a plane with an animated (kinematic) box, with each solver of the panel and with
  Sleeping; cylinders, cones, convex hulls, a compound and active and passive meshes; every friction model of the
  panel, Texture friction on a generated normal map;
- soft: a soft cube with a pin group and a ball with the volume penalty among passive boxes (one animated),
  spheres, capsules and an active box, with each integrator and contact formulation of the panel;
- IPC: soft cubes falling on each other and on a passive mesh beside an animated box, with and without the
  intersection checker.

Progress goes to stdout as ``[contact_lab warm-up] scene k/n label`` lines, errors as ``... error <text>``,
the end as ``... done <kernels compiled>``; the stamp (:data:`.warmup.STAMP`) is written when every scene baked.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import bmesh
import bpy
import numpy as np

from . import jitcache
from .warmup import PREFIX, STAMP

FRAMES = 4
"""Frames per scene: the first steps already touch (everything starts in contact or falls a few mm)."""


# building blocks ---------------------------------------------------------------------------------------------


def _settings(owner):
    """``owner.contact_lab`` (an object's or a scene's): registered at run time, so the stubs do not know it."""
    return owner.contact_lab  # pyright: ignore[reportAttributeAccessIssue]


def _object(scene, name: str, build, location=(0.0, 0.0, 0.0), *, uv: bool = False, **settings):
    """A mesh object made by ``build(bm)`` (with a UV map if ``uv``), linked to ``scene``, with ``contact_lab``
    settings."""
    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    build(bm)
    bm.to_mesh(mesh)
    bm.free()
    if uv:
        mesh.uv_layers.new(name="UVMap")
    obj = bpy.data.objects.new(name, mesh)
    obj.location = location
    scene.collection.objects.link(obj)
    lab = _settings(obj)
    for key, value in settings.items():
        setattr(lab, key, value)
    return obj


def _cube(size: float):
    return lambda bm: bmesh.ops.create_cube(bm, size=size)


def _sphere(radius: float):
    return lambda bm: bmesh.ops.create_icosphere(bm, subdivisions=1, radius=radius)


def _cylinder(radius: float, depth: float, tip: float | None = None):
    top = radius if tip is None else tip
    return lambda bm: bmesh.ops.create_cone(bm, cap_ends=True, segments=12, radius1=radius, radius2=top, depth=depth)


def _grid(size: float):
    return lambda bm: bmesh.ops.create_grid(bm, x_segments=4, y_segments=4, size=size / 2.0)


def _ground(scene, shape: str = "PLANE"):
    return _object(scene, "Ground", _grid(6.0), role="PASSIVE", shape=shape)


def _scene(engine: str, **settings):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.data.scenes[0]  # the empty factory file's only scene
    lab = _settings(scene)
    lab.engine = engine
    lab.use_frame_range = True
    lab.frame_start, lab.frame_end = 1, FRAMES
    for key, value in settings.items():
        setattr(lab, key, value)
    return scene


# rigid ------------------------------------------------------------------------------------------------------


def _animate(obj, axis: int, distance: float):
    """Key ``obj`` moving ``distance`` along ``axis`` over the scene's frames (a kinematic collider)."""
    obj.keyframe_insert("location", frame=1)
    obj.location[axis] += distance
    obj.keyframe_insert("location", frame=FRAMES)


def rigid_primitives(solver: str, **settings):
    def build():
        scene = _scene("RIGID", solver=solver, **settings)
        _ground(scene)
        _object(scene, "Box", _cube(0.2), (0.0, 0.0, 0.099), role="ACTIVE", shape="BOX")
        _object(scene, "Ball", _sphere(0.1), (0.4, 0.0, 0.099), role="ACTIVE", shape="SPHERE")
        _object(scene, "Pill", _cylinder(0.05, 0.3), (-0.4, 0.0, 0.149), role="ACTIVE", shape="CAPSULE")
        _object(scene, "Stack", _cube(0.2), (0.0, 0.0, 0.298), role="ACTIVE", shape="BOX")
        _animate(_object(scene, "Pusher", _cube(0.2), (0.0, 0.5, 0.1), role="PASSIVE", shape="BOX"), 1, -0.2)
        return scene

    return build


def rigid_shapes():
    scene = _scene("RIGID")
    _ground(scene, "MESH")
    _object(scene, "Can", _cylinder(0.1, 0.2), (0.0, 0.0, 0.099), role="ACTIVE", shape="CYLINDER")
    _object(scene, "Cone", _cylinder(0.1, 0.2, 0.0), (0.4, 0.0, 0.099), role="ACTIVE", shape="CONE")
    _object(scene, "Rock", _sphere(0.1), (-0.4, 0.0, 0.099), role="ACTIVE", shape="CONVEX_HULL")
    _object(scene, "Block", _cube(0.2), (0.0, 0.4, 0.099), role="ACTIVE", shape="MESH")
    table = _object(scene, "Table", _cube(0.1), (0.0, -0.5, 0.25), role="ACTIVE", shape="COMPOUND")
    leg = _object(scene, "Leg", _cylinder(0.03, 0.2), (0.0, -0.5, 0.1), role="ACTIVE", shape="CYLINDER")
    leg.parent = table
    leg.matrix_parent_inverse = table.matrix_world.inverted()
    return scene


def _normal_map():
    """A small sawtooth tangent-space normal map, Non-Color."""
    width, height = 16, 4
    ramp = np.tile(np.linspace(-0.5, 0.5, width, dtype=np.float32), (height, 1))
    pixels = np.stack([0.5 + 0.5 * ramp, np.full_like(ramp, 0.5), np.full_like(ramp, 0.85), np.ones_like(ramp)], -1)
    image = bpy.data.images.new("Warm-up normal map", width, height, alpha=True, float_buffer=True)
    # fake-bpy-module types the colour space settings as optional, their name as an enum without 'Non-Color', and
    # the pixels as one float
    image.colorspace_settings.name = "Non-Color"  # pyright: ignore[reportAttributeAccessIssue, reportOptionalMemberAccess]
    image.pixels.foreach_set(pixels.ravel())  # pyright: ignore[reportAttributeAccessIssue]
    return image


def rigid_friction():
    scene = _scene("RIGID")
    image = _normal_map()
    _object(scene, "Ground", _grid(6.0), uv=True, role="PASSIVE", shape="PLANE", friction_model="TEXTURE",
            normal_map=image)  # fmt: skip
    extra = {
        "TEXTURE": {"normal_map": image},
        "ANISOTROPIC": {"structure_source": "AXIS"},
        "MATCHSTICK": {"structure_source": "AXIS"},
        "TENSOR": {"structure_source": "AXIS"},
        "COULOMB": {"friction_spin": 0.01},
    }
    for k, (model, settings) in enumerate(extra.items()):
        _object(scene, f"Box {model}", _cube(0.2), (0.3 * k, 0.0, 0.099), uv=True, role="ACTIVE", shape="BOX",
                friction_model=model, **settings)  # fmt: skip
    return scene


# soft -------------------------------------------------------------------------------------------------------


def soft(**settings):
    def build():
        scene = _scene("SOFT", **settings)
        _ground(scene)
        jelly = _object(scene, "Jelly", _cube(0.4), (0.0, 0.0, 0.205), role="SOFT", lattice_resolution=4)
        group = jelly.vertex_groups.new(name="Pins")
        group.add([0], 1.0, "REPLACE")
        _settings(jelly).pin_group = "Pins"
        _object(scene, "Ball", _sphere(0.1), (0.5, 0.0, 0.1), role="SOFT", lattice_resolution=3,
                volume_compressibility=0.01)  # fmt: skip
        _object(scene, "Box", _cube(0.2), (0.0, 0.6, 0.1), role="ACTIVE", shape="BOX")
        _animate(_object(scene, "Post", _cube(0.2), (-0.6, 0.0, 0.1), role="PASSIVE", shape="BOX"), 0, 0.1)
        _object(scene, "Dome", _sphere(0.1), (0.0, -0.6, 0.1), role="PASSIVE", shape="SPHERE")
        _object(scene, "Rail", _cylinder(0.05, 0.3), (0.6, 0.6, 0.15), role="PASSIVE", shape="CAPSULE")
        return scene

    return build


# IPC --------------------------------------------------------------------------------------------------------


def ipc(**settings):
    def build():
        scene = _scene("IPC", **settings)
        _ground(scene, "MESH")
        _object(scene, "Jelly", _cube(0.2), (0.0, 0.0, 0.102), role="SOFT", lattice_resolution=3)
        _object(scene, "Top", _cube(0.2), (0.0, 0.0, 0.31), role="SOFT", lattice_resolution=3)
        _animate(_object(scene, "Wall", _cube(0.2), (0.3, 0.0, 0.1), role="PASSIVE", shape="BOX"), 0, -0.05)
        _object(scene, "Box", _cube(0.1), (-0.3, 0.0, 0.051), role="ACTIVE", shape="BOX")
        return scene

    return build


SCENES = (
    ("rigid: primitives, PROX", rigid_primitives("PROX")),
    ("rigid: primitives, PGS", rigid_primitives("PGS")),
    ("rigid: primitives, Newton", rigid_primitives("NEWTON")),
    ("rigid: primitives, PROX, sleeping", rigid_primitives("PROX", sleeping=True)),
    ("rigid: hulls, meshes, a compound", rigid_shapes),
    ("rigid: friction models", rigid_friction),
    ("soft: implicit, backward Euler", soft()),
    ("soft: implicit, BDF2", soft(soft_integrator="BDF2")),
    ("soft: dual, PROX", soft(soft_contact="DUAL")),
    ("soft: dual, PGS", soft(soft_contact="DUAL", solver="PGS")),
    ("IPC", ipc()),
    ("IPC with the intersection checker", ipc(check_intersections=True)),
)
"""``(label, build)``: ``build()`` returns a scene ready to bake."""


def run(package) -> int:
    """Bake every scene (the add-on registered as ``package``); print progress; write the stamp. 0 when all baked."""
    from numba.core import event

    cache_dir = jitcache.configure()  # before the core is imported: its kernels' cache location is fixed then
    from ..bake import driver as bake

    compiled = [0]

    class _Count(event.Listener):
        def on_start(self, event):
            pass

        def on_end(self, event):
            compiled[0] += 1

    t0 = time.perf_counter()
    errors = []
    with event.install_listener("numba:compile", _Count()):
        for k, (label, build) in enumerate(SCENES):
            print(f"{PREFIX} scene {k + 1}/{len(SCENES)} {label}", flush=True)
            try:
                bpy.ops.wm.read_factory_settings(use_empty=True)
                package.register()
                try:
                    bake.bake_scene(build())
                finally:
                    package.unregister()
            except Exception as exc:  # report and go on: the other scenes still warm their kernels
                errors.append(f"{label}: {type(exc).__name__}: {exc}")
                print(f"{PREFIX} error {errors[-1]}", flush=True)
                traceback.print_exc()
    seconds = time.perf_counter() - t0
    if cache_dir and not errors:
        stamp = {
            "core": os.path.basename(cache_dir),
            "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "package": package.__name__,
            "scenes": [label for label, _ in SCENES],
            "compiled": compiled[0],
            "seconds": round(seconds, 1),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        with open(os.path.join(cache_dir, STAMP), "w", encoding="utf-8") as fh:
            json.dump(stamp, fh, indent=2)
    print(f"{PREFIX} done {compiled[0]}", flush=True)
    return 1 if errors else 0
