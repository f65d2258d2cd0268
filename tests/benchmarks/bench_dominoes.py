"""Dominoes toppling along a spiral: Contact Lab's rigid engine beside Blender's rigid body world, in one process run.

Scene: N dominoes (default 1 000) of 48 x 24 x 7.5 mm and 10 g, friction 0.5, restitution 0, Blender's default
damping (0.04 / 0.1), standing 0.7 heights apart (centre to centre) along an Archimedean spiral whose arms lie
2.5 heights apart, on a passive box floor. The innermost domino starts leaning 20 degrees towards the next one and
gravity does the rest. Each engine runs with its own defaults, as an artist meets them: ours 4 substeps, 100
iterations, PROX; Blender's 10 substeps, 10 iterations. Bullet's collision margin on the dominoes is 0.5 mm (a
Box keeps Blender's 4 cm default margin inside its extents, more than half the domino's thickness).

Printed per engine: bake time and time per substep (and its ratio to Bullet's), how many dominoes fell (tilted by
more than 60 degrees at the end), the frame the last one fell, and the largest motion of a standing domino before
the wave reached it: the largest displacement of any of its corners [mm] from the start, over the frames before its
predecessor leans by 10 degrees (it touches the domino at about 33).

Run: ``python tests/benchmarks/bench_dominoes.py`` (``make bench``); ``--dominoes N``, ``--seconds S`` (default:
enough for the wave, 1 s + 55 ms a domino), ``--sides blender ours``, ``--json PATH``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pile_scene as ps  # noqa: E402
from bench_pile import _box_mesh, quiet_stdout, sample_blender  # noqa: E402

FPS = 24
HEIGHT, WIDTH, THICKNESS = 0.048, 0.024, 0.0075
"""A domino's extents [m]: along its local z (up), y (across the path) and x (along the path)."""
MASS, MU = 0.01, 0.5
SPACING = 0.7 * HEIGHT
"""Centre to centre along the spiral [m]."""
ARM_PITCH = 2.5 * HEIGHT
"""Distance between the spiral's arms [m]."""
INNER_RADIUS = 0.3
LEAN = np.radians(20.0)
BULLET_MARGIN = 0.0005
FALLEN = np.radians(60.0)
WAVE_ARRIVES = np.radians(10.0)


def spiral_poses(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Centres (N, 3) [m] and headings (N,) [rad] of the dominoes along the spiral ``r = r0 + pitch theta / 2 pi``,
    the first one leaning ``LEAN`` towards the second about its front bottom edge."""
    theta, centres, headings = 0.0, [], []
    for _ in range(count):
        r = INNER_RADIUS + ARM_PITCH * theta / (2 * np.pi)
        point = np.array([r * np.cos(theta), r * np.sin(theta), 0.5 * HEIGHT])
        tangent = np.array([-np.sin(theta) * r + ARM_PITCH / (2 * np.pi) * np.cos(theta),
                            np.cos(theta) * r + ARM_PITCH / (2 * np.pi) * np.sin(theta)])  # fmt: skip
        centres.append(point)
        headings.append(np.arctan2(tangent[1], tangent[0]))
        theta += SPACING / np.hypot(r, ARM_PITCH / (2 * np.pi))
    centres = np.array(centres)
    # the first leans forward: its centre turns about the front bottom edge (local x = +T/2, z = 0)
    local = np.array([0.5 * THICKNESS * (1 - np.cos(LEAN)) + 0.5 * HEIGHT * np.sin(LEAN), 0.0,
                      0.5 * THICKNESS * np.sin(LEAN) + 0.5 * HEIGHT * np.cos(LEAN)])  # fmt: skip
    c, s = np.cos(headings[0]), np.sin(headings[0])
    centres[0] = centres[0] + np.array([c * local[0], s * local[0], local[2] - 0.5 * HEIGHT])
    return centres, np.array(headings)


def build_scene(count: int, frame_end: int):
    """Floor and dominoes with both engines' settings; returns (scene, dominoes)."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    import contact_lab

    contact_lab.register()
    scene = bpy.context.scene
    scene.render.fps = FPS
    scene.frame_start, scene.frame_end = 1, frame_end
    floor = bpy.data.objects.new("Floor", _box_mesh("Floor", (60.0, 60.0, 1.0)))
    floor.location = (0.0, 0.0, -0.5)
    scene.collection.objects.link(floor)
    mesh = _box_mesh("Domino", (THICKNESS, WIDTH, HEIGHT))
    centres, headings = spiral_poses(count)
    dominoes = []
    for k in range(count):
        obj = bpy.data.objects.new(f"Domino{k:05d}", mesh)
        obj.location = centres[k]
        obj.rotation_euler = (0.0, LEAN if k == 0 else 0.0, headings[k])  # XYZ: the lean about its own y first
        scene.collection.objects.link(obj)
        dominoes.append(obj)
    _blender_world(scene, floor, dominoes, frame_end)
    settings = scene.contact_lab
    settings.engine = "RIGID"
    floor.contact_lab.role, floor.contact_lab.shape, floor.contact_lab.friction = "PASSIVE", "BOX", MU
    for obj in dominoes:
        s = obj.contact_lab
        s.role, s.shape, s.mass, s.friction, s.restitution = "ACTIVE", "BOX", MASS, MU, 0.0
    return scene, dominoes


def _blender_world(scene, floor, dominoes, frame_end) -> None:
    import bpy

    bpy.ops.rigidbody.world_add()
    scene.rigidbody_world.point_cache.frame_start, scene.rigidbody_world.point_cache.frame_end = 1, frame_end
    view_layer = bpy.context.view_layer
    for objs, kind in (([floor], "PASSIVE"), (dominoes, "ACTIVE")):
        for o in view_layer.objects:
            o.select_set(o in objs)
        view_layer.objects.active = objs[0]
        bpy.ops.rigidbody.objects_add(type=kind)
    floor.rigid_body.collision_shape, floor.rigid_body.friction = "BOX", MU
    floor.rigid_body.use_margin, floor.rigid_body.collision_margin = True, 0.0
    for o in dominoes:
        rb = o.rigid_body
        rb.collision_shape, rb.mass, rb.friction, rb.restitution = "BOX", MASS, MU, 0.0
        rb.use_margin, rb.collision_margin = True, BULLET_MARGIN
        rb.use_deactivation = False


def figures(matrices: np.ndarray) -> dict:
    """Fallen dominoes, the frame the last one fell, and standing dominoes' largest motion before the wave."""
    up = matrices[:, :, :3, 2]  # the local z axis in the world, (F, N, 3)
    tilt = np.arccos(np.clip(up[..., 2], -1.0, 1.0))
    fallen = tilt[-1] > FALLEN
    last = int(np.argmax(tilt[:, -1] > FALLEN)) + 1 if fallen[-1] else -1
    corners = 0.5 * np.array([[x, y, z] for x in (-THICKNESS, THICKNESS) for y in (-WIDTH, WIDTH)
                              for z in (-HEIGHT, HEIGHT)])  # fmt: skip
    world = np.einsum("fnij,cj->fnci", matrices[:, :, :3, :3], corners) + matrices[:, :, None, :3, 3]
    before = 0.0
    for k in range(2, matrices.shape[1]):
        arrives = np.flatnonzero(tilt[:, k - 1] > WAVE_ARRIVES)
        frames = arrives[0] if arrives.size else matrices.shape[0]
        if frames > 1:
            before = max(before, float(np.abs(world[:frames, k] - world[0, k]).max()))
    return dict(fallen=int(fallen.sum()), last_fell_frame=last, standing_motion_mm=1e3 * before)


def run(scene, dominoes, engine: str) -> dict:
    import bpy
    from contact_lab.addon.bake import driver as bake

    load = ps.load_line()
    if engine == "blender":
        scene.rigidbody_world.enabled = True
        t0 = time.perf_counter()
        with quiet_stdout():
            bpy.ops.ptcache.bake_all(bake=True)
        seconds = time.perf_counter() - t0
        substeps = scene.rigidbody_world.substeps_per_frame
        row = dict(engine=f"Blender (Bullet), {substeps} substeps, {scene.rigidbody_world.solver_iterations} its")
    else:
        scene.rigidbody_world.enabled = False
        report = bake.bake_scene(scene)
        seconds = float(report["timings"]["simulate"])
        s = scene.contact_lab
        substeps = s.substeps
        row = dict(engine=f"Contact Lab {s.solver}, {substeps} substeps, {s.iterations} its (defaults)")
    matrices = sample_blender(scene, dominoes)
    if engine == "blender":
        bpy.ops.ptcache.free_bake_all()
    else:
        bake.clear_bake(scene)
    row.update(bake_s=seconds, substep_ms=1e3 * seconds / ((scene.frame_end - 1) * substeps), load=load)
    row.update(figures(matrices))
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dominoes", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--sides", nargs="+", choices=("blender", "ours"), default=["blender", "ours"])
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    try:
        import bpy  # noqa: F401
    except ImportError:
        print("bench_dominoes: bpy is not installed; nothing to measure")
        return 0
    seconds = args.seconds if args.seconds is not None else 1.0 + 0.055 * args.dominoes
    end = 1 + round(seconds * FPS)
    print(f"dominoes: {args.dominoes} along a spiral, {FPS} fps, frames 1-{end} ({seconds:g} s); {ps.versions_line()}")
    if "ours" in args.sides:  # cold start: compile or load the kernels on a short line first
        scene, _ = build_scene(20, 13)
        scene.rigidbody_world.enabled = False
        from contact_lab.addon.bake import driver as bake

        t0 = time.perf_counter()
        bake.bake_scene(scene)
        print(f"Contact Lab cold start (first bake in this process: compile or cache load): "
              f"{time.perf_counter() - t0:.1f} s")  # fmt: skip
    scene, dominoes = build_scene(args.dominoes, end)
    rows = [run(scene, dominoes, engine) for engine in ("blender", "ours") if engine in args.sides]
    ref = rows[0] if args.sides[0] == "blender" and "blender" in args.sides else None
    print(f"{'engine':<58} {'bake s':>8} {'ms/substep':>10} {'ratio':>6} {'fallen':>7} {'last fell':>9} "
          f"{'standing moved mm':>17}  load before the row")  # fmt: skip
    for r in rows:
        ratio = r["substep_ms"] / ref["substep_ms"] if ref else float("nan")
        print(f"{r['engine']:<58} {r['bake_s']:8.2f} {r['substep_ms']:10.3f} {ratio:6.2f} "
              f"{r['fallen']:>4d}/{args.dominoes:<4d} {r['last_fell_frame']:9d} {r['standing_motion_mm']:17.4f}  "
              f"{r['load']}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(dict(dominoes=args.dominoes, seconds=seconds, rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
