"""The pile: Contact Lab's rigid engine side by side with Blender's own rigid body world, in one process run.

Scene and figures as ``shared/spec/pile_benchmark.md`` fixes them (built by ``pile_scene.py``, shared with the
core-only ``bench_pile_core.py``): 1000 cubes (edge 0.2 m, 1 kg, a 10 x 10 x 10 grid of pitch 0.25 m, each turned
by a seeded random XYZ Euler rotation of up to 5 degrees) dropped into a 3 m container of five static boxes;
24 fps x 10 substeps (240 Hz), 20 solver iterations, frames 1-121 (5 s), friction 0.5, restitution 0, damping
0.04 linear / 0.1 angular on the bodies, no sleeping. ``--shape rock`` replaces the cubes by rocks (perturbed
icospheres of radius 0.1 m, 1 kg, ``pile_scene.Rock``): Blender's Convex Hull shape on Bullet's side, ours on
Contact Lab's, both built from the same mesh (the hull's vertices and triangles, centroid at the object origin).

Collision margins. Ours: none; the exact shape collides, contacts are generated up to 1 cm apart (speculative,
``config.DEFAULT_CONTACT_MARGIN``) and 0.5 mm of penetration is left uncorrected (``DEFAULT_PENETRATION_SLOP``).
Bullet: the walls use no margin (custom margin 0); boxes keep Blender's default (Box shape: the 0.04 m margin is
embedded, the box keeps its size); rocks follow ``--bullet-margin``: a number M sets Blender's custom margin M
(``use_margin``: Bullet grows the exact hull by M; default 0, the same surface as ours) and ``embedded`` keeps
Blender's default for a Convex Hull (no custom margin: Blender shrinks the hull by 0.04 m and Bullet rounds it
back out by 0.04 m, so the rock keeps its extent but gets 4 cm-radius edges and corners). Bullet's Convex Hull
inertia is that of the hull's bounding box (``btPolyhedralConvexShape::calculateLocalInertia``), ours the solid
hull's; the kinetic-energy figure uses the solid hull's for both.

Run: ``python tests/benchmarks/bench_pile.py`` (``make bench``). Options: ``--bodies N`` (``pile_scene``: same
pile height, footprint and container scaled with sqrt(N)), ``--seconds S`` (frames 1 to 1 + 24 S), ``--shape
box|rock``, ``--solvers PGS PROX``, ``--sides blender ours tuned keyframes`` (which rows to run), ``--bullet-margin
M|embedded``, ``--no-warm-up``, ``--json PATH``.

Printed: the stack (bpy, Python, numpy, numba, llvmlite, NUMBA_NUM_THREADS) and the load average before every
row; per engine: bake time and time per substep (and the ratio to Bullet's), the deepest penetration of any cube
corner (rock vertex) into the floor at any frame and at the last frame [mm], bodies whose centre ends below the
floor, the kinetic energy at the end from the last two frames (translational + rotational) [J], and scene ->
keyframes (Blender: bake + ``bake_to_keyframes``; ours: the whole ``bake_scene``: export, simulation, keys).
Ours also reports its cold start (the first bake in this process: Numba compile or cache load) separately.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pile_scene as ps  # noqa: E402
from contact_lab.core.config import RESTING_PILE_SETTINGS  # noqa: E402
from pile_scene import FPS, ITERATIONS, MU, SUBSTEPS  # noqa: E402

FRAME_START = 1
SIDES = ("blender", "ours", "tuned", "keyframes")

TUNED = RESTING_PILE_SETTINGS
"""The core's resting-pile preset (split impulse, Bullet's order and warm-start factor, no slop)."""


@contextlib.contextmanager
def quiet_stdout():
    """Silence the C-level stdout (Blender's point-cache bake prints a line per frame)."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


# ---- scene ---------------------------------------------------------------------------------------------------


def _box_mesh(name: str, size) -> object:
    import bmesh
    import bpy

    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=size, verts=bm.verts)
    bm.to_mesh(mesh)
    bm.free()
    return mesh


def _rock_mesh(name: str, rock: ps.Rock) -> object:
    import bpy

    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(rock.vertices.tolist(), [], rock.triangles.tolist())
    mesh.update()
    return mesh


def build_scene(bodies: int, shape: str, frame_end: int, bullet_margin: str = "0"):
    """Container and bodies with both engines' settings; returns (scene, active objects, rocks or None)."""
    import bpy
    from mathutils import Euler

    bpy.ops.wm.read_factory_settings(use_empty=True)
    import contact_lab

    contact_lab.register()
    scene = bpy.context.scene
    scene.render.fps = FPS
    scene.frame_start, scene.frame_end = FRAME_START, frame_end
    collection = scene.collection
    static = []
    for name, loc, size in ps.container_boxes(bodies):
        obj = bpy.data.objects.new(name, _box_mesh(name, size))
        obj.location = loc
        collection.objects.link(obj)
        static.append(obj)
    cube_mesh = _box_mesh("Cube", (ps.EDGE,) * 3) if shape == "box" else None
    rock_list = ps.rocks(bodies) if shape == "rock" else None
    centres, angles = ps.drop_poses(bodies)
    active = []
    for n in range(bodies):
        mesh = cube_mesh if shape == "box" else _rock_mesh(f"Rock{n:05d}", rock_list[n])
        obj = bpy.data.objects.new(f"Body{n:05d}", mesh)
        obj.location = centres[n]
        obj.rotation_euler = Euler(angles[n], "XYZ")
        collection.objects.link(obj)
        active.append(obj)
    _blender_rigid_bodies(scene, static, active, shape, frame_end, bullet_margin)
    _contact_lab_settings(scene, static, active, shape)
    return scene, active, rock_list


def _blender_rigid_bodies(scene, static, active, shape, frame_end, bullet_margin) -> None:
    import bpy

    bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    world.substeps_per_frame = SUBSTEPS
    world.solver_iterations = ITERATIONS
    world.use_split_impulse = False
    world.point_cache.frame_start, world.point_cache.frame_end = FRAME_START, frame_end
    view_layer = bpy.context.view_layer
    for objs, kind in ((static, "PASSIVE"), (active, "ACTIVE")):
        for o in view_layer.objects:
            o.select_set(False)
        for o in objs:
            o.select_set(True)
        view_layer.objects.active = objs[0]
        bpy.ops.rigidbody.objects_add(type=kind)
    for o in static:
        rb = o.rigid_body
        rb.collision_shape = "BOX"
        rb.friction, rb.restitution = MU, 0.0
        rb.use_margin, rb.collision_margin = True, 0.0
    for o in active:
        rb = o.rigid_body
        rb.collision_shape = "BOX" if shape == "box" else "CONVEX_HULL"
        rb.mass, rb.friction, rb.restitution = 1.0, MU, 0.0
        rb.linear_damping, rb.angular_damping = ps.LINEAR_DAMPING, ps.ANGULAR_DAMPING
        rb.use_deactivation = False
        if shape == "rock" and bullet_margin != "embedded":
            rb.use_margin, rb.collision_margin = True, float(bullet_margin)


def _contact_lab_settings(scene, static, active, shape) -> None:
    settings = scene.contact_lab
    settings.engine = "RIGID"
    settings.substeps = SUBSTEPS
    settings.iterations = ITERATIONS
    settings.tolerance = ps.TOLERANCE
    for o in static:
        s = o.contact_lab
        s.role, s.shape, s.friction, s.restitution = "PASSIVE", "BOX", MU, 0.0
    for o in active:
        s = o.contact_lab
        s.role, s.shape = "ACTIVE", "BOX" if shape == "box" else "CONVEX_HULL"
        s.mass, s.friction, s.restitution = 1.0, MU, 0.0
        s.linear_damping, s.angular_damping = ps.LINEAR_DAMPING, ps.ANGULAR_DAMPING


# ---- figures -------------------------------------------------------------------------------------------------


def sample_blender(scene, active) -> np.ndarray:
    """World matrices of every body at every frame, (F, N, 4, 4), read back through ``frame_set``."""
    frames = range(scene.frame_start, scene.frame_end + 1)
    out = np.zeros((len(frames), len(active), 4, 4))
    for f_index, f in enumerate(frames):
        scene.frame_set(f)
        for k, o in enumerate(active):
            out[f_index, k] = np.array(o.matrix_world)
    return out


def substep_count(scene) -> int:
    return (scene.frame_end - scene.frame_start) * SUBSTEPS


# ---- engines -------------------------------------------------------------------------------------------------


def run_blender(scene, active, geometry) -> dict:
    import bpy

    load = ps.load_line()
    t0 = time.perf_counter()
    with quiet_stdout():
        bpy.ops.ptcache.bake_all(bake=True)
    bake = time.perf_counter() - t0
    matrices = sample_blender(scene, active)
    out = dict(engine="Blender (Bullet)", bake_s=bake, substep_ms=1e3 * bake / substep_count(scene), load=load)
    out["bullet_margin"] = float(active[0].rigid_body.collision_margin)
    out.update(ps.figures(matrices, *geometry))
    return out


def run_blender_keyframes(scene, active) -> float:
    """Blender's scene -> keyframes: a fresh bake plus ``bake_to_keyframes`` [s]. Removes the rigid bodies."""
    import bpy

    bpy.ops.ptcache.free_bake_all()
    view_layer = bpy.context.view_layer
    chosen = set(active)
    for o in view_layer.objects:
        o.select_set(o in chosen)
    view_layer.objects.active = active[0]
    t0 = time.perf_counter()
    with quiet_stdout():
        bpy.ops.ptcache.bake_all(bake=True)
    # the operator inserts keys through a keying-set operator that needs an area (headless bpy has a window)
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type == "VIEW_3D")
    with bpy.context.temp_override(window=window, area=area, region=area.regions[-1]), quiet_stdout():
        bpy.ops.rigidbody.bake_to_keyframes(frame_start=scene.frame_start, frame_end=scene.frame_end)
    return time.perf_counter() - t0


def run_ours(scene, active, geometry, solver: str) -> dict:
    from contact_lab.addon.bake import driver as bake

    scene.contact_lab.solver = solver
    load = ps.load_line()
    t0 = time.perf_counter()
    report = bake.bake_scene(scene)
    total = time.perf_counter() - t0
    timings = report["timings"]
    simulate = float(timings["simulate"])
    matrices = sample_blender(scene, active)
    out = dict(
        engine=f"Contact Lab {solver}",
        bake_s=simulate,
        substep_ms=1e3 * simulate / substep_count(scene),
        keyframes_s=total,
        export_s=float(timings.get("export", 0.0)),
        write_s=float(timings.get("write", 0.0)),
        max_contacts=report["stats"]["max_contacts"],
        load=load,
    )
    out.update(ps.figures(matrices, *geometry))
    bake.clear_bake(scene)
    return out


def run_core_tuned(scene, active, geometry, solver: str, options: dict) -> dict:
    """The same exported model through ``core.simulate`` with solver ``options`` the panel does not expose."""
    from contact_lab.addon.bake import driver as bake
    from contact_lab.core import simulate
    from mathutils import Matrix, Quaternion

    scene.contact_lab.solver = solver
    job = bake.start_bake(scene)
    job.build()  # start_bake only gathers; the core model is built here, outside the timing
    load = ps.load_line()
    t0 = time.perf_counter()
    kwargs = job.export.simulate_kwargs()
    kwargs["settings"] = replace(kwargs["settings"], solver_options=options)
    traj = simulate(job.export.model, **kwargs)
    seconds = time.perf_counter() - t0
    job.close()
    transforms = job.export.object_transforms(traj)
    matrices = np.zeros((traj.body_pos.shape[0], len(active), 4, 4))
    for k, o in enumerate(active):
        location, quat = transforms[o.name]
        for f in range(matrices.shape[0]):
            matrices[f, k] = np.array(Matrix.LocRotScale(location[f], Quaternion(quat[f]), o.scale))
    label = ", ".join(f"{k} {v:g}" for k, v in options.items())
    out = dict(engine=f"{solver} ({label})", bake_s=seconds, keyframes_s=float("nan"), load=load,
               substep_ms=1e3 * seconds / substep_count(scene))  # fmt: skip
    out.update(ps.figures(matrices, *geometry))
    return out


WARM_UP_FRAMES = 13
"""The warm-up bakes frames 1-13 (0.5 s): its bodies land (they start 0.1 m above the floor), so the contact kernels
compile or load here. The earlier 3-frame warm-up found no contact and left their compilation inside the timed
bake of ours whenever the Numba cache was empty."""


def warm_up(shape: str) -> float:
    """Cold start: the first bakes in this process (20 bodies, 0.5 s, PGS and PROX) compile or load the kernels [s]."""
    import bpy
    from contact_lab.addon.bake import driver as bake

    scene, _, _ = build_scene(20, shape, WARM_UP_FRAMES)
    scene.rigidbody_world.enabled = False
    t0 = time.perf_counter()
    for solver in ("PGS", "PROX"):
        scene.contact_lab.solver = solver
        bake.bake_scene(scene, frame_start=1, frame_end=WARM_UP_FRAMES)
    cold = time.perf_counter() - t0
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return cold


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--shape", choices=("box", "rock"), default="box")
    parser.add_argument("--solvers", nargs="+", default=["PGS", "PROX"])
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    parser.add_argument("--bullet-margin", default="0", help="rocks, Bullet's side: custom margin [m] or 'embedded'")
    parser.add_argument("--skip-blender", action="store_true", help="the same as leaving 'blender' out of --sides")
    parser.add_argument("--no-warm-up", action="store_true", help="no cold-start bake first (its time is then in ours)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    sides = set(args.sides) - ({"blender", "keyframes"} if args.skip_blender else set())
    try:
        import bpy
    except ImportError:
        print("bench_pile: bpy is not installed; nothing to measure (bench_pile_core.py runs without it)")
        return 0
    if args.bullet_margin != "embedded":
        float(args.bullet_margin)  # refuse anything else before building the scene
    end = ps.frame_end(args.seconds)
    versions = ps.versions()
    plural = "es" if args.shape == "box" else "s"
    print(f"pile: {args.bodies} {args.shape}{plural}, {FPS} fps x {SUBSTEPS} substeps, {ITERATIONS} iterations, "
          f"frames {FRAME_START}-{end} ({args.seconds:g} s); {ps.versions_line(versions)}")  # fmt: skip
    cold = float("nan")
    if not args.no_warm_up and sides & {"ours", "tuned"}:
        load = ps.load_line()
        cold = warm_up(args.shape)
        print(f"Contact Lab cold start (first bakes in this process: compile or cache load): {cold:.1f} s  [{load}]")
    t0 = time.perf_counter()
    scene, active, rock_list = build_scene(args.bodies, args.shape, end, args.bullet_margin)
    print(f"scene built in {time.perf_counter() - t0:.1f} s")
    geometry = ps.body_geometry(args.bodies, args.shape, rock_list)
    rows = []
    if "blender" in sides:
        rows.append(run_blender(scene, active, geometry))
        bpy.ops.ptcache.free_bake_all()
        if args.shape == "rock":
            m = rows[-1]["bullet_margin"]
            how = "embedded: hull shrunk by it, rounded back out" if args.bullet_margin == "embedded" else "custom"
            print(f"Bullet's collision margin on the rocks after the bake: {m:.3f} m ({how})")
    scene.rigidbody_world.enabled = False
    if "ours" in sides:
        rows += [run_ours(scene, active, geometry, solver) for solver in args.solvers]
    if "tuned" in sides:
        rows += [run_core_tuned(scene, active, geometry, solver, TUNED) for solver in args.solvers]
    if "keyframes" in sides and "blender" in sides:
        scene.rigidbody_world.enabled = True
        rows[0]["keyframes_s"] = run_blender_keyframes(scene, active)
    _print_table(rows, "blender" in sides)
    if args.json:
        result = dict(bodies=args.bodies, shape=args.shape, seconds=args.seconds, frame_end=end, cold_s=cold,
                      bullet_margin=args.bullet_margin, versions=versions, rows=rows)  # fmt: skip
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


def _print_table(rows: list[dict], with_blender: bool) -> None:
    ref = rows[0] if with_blender and rows else None
    print(f"{'engine':<52} {'bake s':>8} {'ms/substep':>10} {'ratio':>6} {'deepest mm':>10} {'at end mm':>9} "
          f"{'tunnelled':>9} {'KE end J':>9} {'→ keys s':>8} {'ratio':>6}  load before the row")  # fmt: skip
    for r in rows:
        ratio = r["bake_s"] / ref["bake_s"] if ref else float("nan")
        keys = r.get("keyframes_s", float("nan"))
        key_ratio = keys / ref.get("keyframes_s", float("nan")) if ref else float("nan")
        print(f"{r['engine']:<52} {r['bake_s']:8.2f} {r['substep_ms']:10.2f} {ratio:6.2f} {r['deepest_mm']:10.3f} "
              f"{r['resting_mm']:9.3f} {r['tunnelled']:9d} {r['kinetic_J']:9.4f} {keys:8.1f} {key_ratio:6.2f}  "
              f"{r['load']}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
