"""The pile: Contact Lab's rigid engine side by side with Blender's own rigid body world, in one process run.

Scene and figures as ``shared/spec/pile_benchmark.md`` fixes them: 1000 cubes (edge 0.2 m, 1 kg, a 10 x 10 x 10
grid of pitch 0.25 m, each turned by a seeded random XYZ Euler rotation of up to 5 degrees) dropped into a 3 m
container of five static boxes; 24 fps x 10 substeps (240 Hz), 20 solver iterations, frames 1-121 (5 s), friction
0.5, restitution 0, damping 0.04 linear / 0.1 angular on the cubes, no sleeping. ``--shape rock`` replaces the
cubes by rocks (perturbed icospheres of the same size) with Blender's Convex Hull shape.

Run: ``python tests/benchmarks/bench_pile.py`` (``make bench``). Options: ``--bodies N`` (a cube number of the
grid's side, e.g. 100 or 10000 use a 5 x 5 x 4 / 22 x 22 x 21-ish grid in the same container, widened for
10 000), ``--solvers PGS PROX``, ``--shape box|rock``, ``--skip-blender``, ``--json PATH``.

Printed per engine: bake time and time per substep (and the ratio to Bullet's), the deepest penetration of any
cube corner (rock vertex) into the floor at any frame and at the last frame [mm], bodies whose centre ends below
the floor, the kinetic energy at 5 s from the last two frames (translational + rotational) [J], and scene →
keyframes (Blender: bake + ``bake_to_keyframes``; ours: the whole ``bake_scene``: export, simulation, keys).
Ours also reports its cold start (the first bake in this process: Numba compile or cache load) separately.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

FPS = 24
SUBSTEPS = 10
ITERATIONS = 20
FRAME_START, FRAME_END = 1, 121
EDGE = 0.2
PITCH = 0.25
MU = 0.5
LINEAR_DAMPING, ANGULAR_DAMPING = 0.04, 0.1
SEED = 12345


def grid_shape(bodies: int) -> tuple[int, int, int]:
    """(nx, ny, nz) of the drop grid: 10 x 10 x 10 for 1000, the same square footprint rule otherwise."""
    side = max(1, round(bodies ** (1.0 / 3.0)))
    nz = max(1, math.ceil(bodies / (side * side)))
    return side, side, nz


def container_half_width(bodies: int) -> float:
    """Inner half width of the container [m]: 1.5 for the spec's grid of 10, grown with the grid side."""
    nx, _, _ = grid_shape(bodies)
    return max(1.5, 0.5 * nx * PITCH + 0.25)


def drop_poses(bodies: int) -> tuple[np.ndarray, np.ndarray]:
    """Grid centres (N, 3) [m] (x fastest, then y, then z) and Euler XYZ angles (N, 3) [rad], uniform in +-5°."""
    nx, ny, nz = grid_shape(bodies)
    k, j, i = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    centres = np.stack([(i - (nx - 1) / 2) * PITCH, (j - (ny - 1) / 2) * PITCH, 0.2 + PITCH * k], axis=-1).reshape(
        -1, 3
    )[:bodies]
    r = math.radians(5.0)
    angles = np.random.default_rng(SEED).uniform(-r, r, size=(bodies, 3))
    return centres, angles


def rock_vertices(index: int) -> np.ndarray:
    """A rock: an icosphere (1 subdivision, 42 vertices) of radius 0.1 m with radii perturbed by up to ±25 %."""
    import bmesh

    bm = bmesh.new()
    bmesh.ops.create_icosphere(bm, subdivisions=1, radius=0.5 * EDGE)
    verts = np.array([v.co[:] for v in bm.verts])
    bm.free()
    scale = np.random.default_rng(SEED + 1 + index).uniform(0.75, 1.25, size=(len(verts), 1))
    return verts * scale


# ---- scene ---------------------------------------------------------------------------------------------------


def build_scene(bodies: int, shape: str):
    """Container and bodies with both engines' settings; returns (scene, bodies list, floor top z)."""
    import bmesh
    import bpy
    from mathutils import Euler

    bpy.ops.wm.read_factory_settings(use_empty=True)
    import contact_lab

    contact_lab.register()
    scene = bpy.context.scene
    scene.render.fps = FPS
    scene.frame_start, scene.frame_end = FRAME_START, FRAME_END
    half = container_half_width(bodies)
    walls = [
        ("Floor", (0.0, 0.0, -0.1), (2 * half + 0.4, 2 * half + 0.4, 0.2)),
        ("WallX+", (half + 0.1, 0.0, 1.5), (0.2, 2 * half + 0.4, 3.0)),
        ("WallX-", (-half - 0.1, 0.0, 1.5), (0.2, 2 * half + 0.4, 3.0)),
        ("WallY+", (0.0, half + 0.1, 1.5), (2 * half, 0.2, 3.0)),
        ("WallY-", (0.0, -half - 0.1, 1.5), (2 * half, 0.2, 3.0)),
    ]
    collection = scene.collection
    static = []
    for name, loc, size in walls:
        mesh = bpy.data.meshes.new(name)
        bm = bmesh.new()
        bmesh.ops.create_cube(bm, size=1.0)
        bmesh.ops.scale(bm, vec=size, verts=bm.verts)
        bm.to_mesh(mesh)
        bm.free()
        obj = bpy.data.objects.new(name, mesh)
        obj.location = loc
        collection.objects.link(obj)
        static.append(obj)
    cube_mesh = None
    if shape == "box":
        cube_mesh = bpy.data.meshes.new("Cube")
        bm = bmesh.new()
        bmesh.ops.create_cube(bm, size=EDGE)
        bm.to_mesh(cube_mesh)
        bm.free()
    centres, angles = drop_poses(bodies)
    active = []
    for n in range(bodies):
        if shape == "box":
            mesh = cube_mesh
        else:
            mesh = bpy.data.meshes.new(f"Rock{n:05d}")
            verts = rock_vertices(n)
            bm = bmesh.new()
            for v in verts:
                bm.verts.new(v)
            bmesh.ops.convex_hull(bm, input=bm.verts)
            bm.to_mesh(mesh)
            bm.free()
        obj = bpy.data.objects.new(f"Body{n:05d}", mesh)
        obj.location = centres[n]
        obj.rotation_euler = Euler(angles[n], "XYZ")
        collection.objects.link(obj)
        active.append(obj)
    _blender_rigid_bodies(scene, static, active, shape)
    _contact_lab_settings(scene, static, active, shape)
    return scene, active


def _blender_rigid_bodies(scene, static, active, shape) -> None:
    import bpy

    bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    world.substeps_per_frame = SUBSTEPS
    world.solver_iterations = ITERATIONS
    world.use_split_impulse = False
    world.point_cache.frame_start, world.point_cache.frame_end = FRAME_START, FRAME_END
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
        rb.linear_damping, rb.angular_damping = LINEAR_DAMPING, ANGULAR_DAMPING
        rb.use_deactivation = False


def _contact_lab_settings(scene, static, active, shape) -> None:
    settings = scene.contact_lab
    settings.engine = "RIGID"
    settings.substeps = SUBSTEPS
    settings.iterations = ITERATIONS
    for o in static:
        s = o.contact_lab
        s.role, s.shape, s.friction, s.restitution = "PASSIVE", "BOX", MU, 0.0
    for o in active:
        s = o.contact_lab
        s.role, s.shape = "ACTIVE", "BOX" if shape == "box" else "CONVEX_HULL"
        s.mass, s.friction, s.restitution = 1.0, MU, 0.0
        if hasattr(s, "linear_damping"):
            s.linear_damping, s.angular_damping = LINEAR_DAMPING, ANGULAR_DAMPING


# ---- figures -------------------------------------------------------------------------------------------------


def sample_blender(scene, active) -> tuple[np.ndarray, np.ndarray]:
    """World matrices of every body at every frame, (F, N, 4, 4), read back through ``frame_set``."""
    frames = range(FRAME_START, FRAME_END + 1)
    out = np.zeros((len(frames), len(active), 4, 4))
    for f_index, f in enumerate(frames):
        scene.frame_set(f)
        for k, o in enumerate(active):
            out[f_index, k] = np.array(o.matrix_world)
    return out


def figures(matrices: np.ndarray, local_vertices: list[np.ndarray], masses: np.ndarray, inertias) -> dict:
    """Deepest floor penetration [mm], tunnelled bodies and kinetic energy at the end [J] from world matrices."""
    deepest = resting = 0.0
    for k, verts in enumerate(local_vertices):
        world = np.einsum("fij,vj->fvi", matrices[:, k, :3, :3], verts) + matrices[:, k, None, :3, 3]
        deepest = max(deepest, -float(world[..., 2].min()))
        resting = max(resting, -float(world[-1, :, 2].min()))
    dt = 1.0 / FPS
    p0, p1 = matrices[-2, :, :3, 3], matrices[-1, :, :3, 3]
    r0, r1 = matrices[-2, :, :3, :3], matrices[-1, :, :3, :3]
    v = (p1 - p0) / dt
    rel = np.einsum("nij,nkj->nik", r1, r0)  # R1 R0^T
    cos = np.clip((np.trace(rel, axis1=1, axis2=2) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos)
    axis = np.stack([rel[:, 2, 1] - rel[:, 1, 2], rel[:, 0, 2] - rel[:, 2, 0], rel[:, 1, 0] - rel[:, 0, 1]], axis=1)
    sin = np.sin(angle)
    scale = np.where(sin > 1e-12, angle / np.maximum(2.0 * sin, 1e-300), 0.5)
    omega = axis * scale[:, None] / dt
    inertia_world = np.einsum("nij,njk,nlk->nil", r1, inertias, r1)
    rot = 0.5 * np.einsum("ni,nij,nj->n", omega, inertia_world, omega)
    kinetic = float((0.5 * masses * (v * v).sum(axis=1)).sum() + rot.sum())
    return dict(
        deepest_mm=1e3 * max(deepest, 0.0),
        resting_mm=1e3 * max(resting, 0.0),
        tunnelled=int((p1[:, 2] < 0.0).sum()),
        kinetic_J=kinetic,
    )


def body_geometry(active, shape) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Local vertices (object space, corners or rock vertices), masses and body-frame inertias about the origin."""
    verts, inertias = [], []
    for o in active:
        v = np.array([p.co[:] for p in o.data.vertices])
        verts.append(v)
        if shape == "box":
            inertias.append(np.eye(3) * (EDGE * EDGE / 6.0))
        else:  # a point cloud's second moment is close enough for a kinetic-energy figure of a rock
            c = v - v.mean(axis=0)
            inertias.append(np.eye(3) * (0.4 * float((c * c).sum(axis=1).mean())))
    return verts, np.ones(len(active)), np.array(inertias)


# ---- engines -------------------------------------------------------------------------------------------------


def run_blender(scene, active, shape) -> dict:
    import bpy

    t0 = time.perf_counter()
    bpy.ops.ptcache.bake_all(bake=True)
    bake = time.perf_counter() - t0
    matrices = sample_blender(scene, active)
    out = dict(engine="Blender (Bullet)", bake_s=bake, substep_ms=1e3 * bake / ((FRAME_END - FRAME_START) * SUBSTEPS))
    out.update(figures(matrices, *body_geometry(active, shape)))
    return out


def run_blender_keyframes(scene, active) -> float:
    """Blender's scene → keyframes: a fresh bake plus ``bake_to_keyframes`` [s]. Removes the rigid bodies."""
    import bpy

    bpy.ops.ptcache.free_bake_all()
    view_layer = bpy.context.view_layer
    for o in view_layer.objects:
        o.select_set(o in set(active))
    view_layer.objects.active = active[0]
    t0 = time.perf_counter()
    bpy.ops.ptcache.bake_all(bake=True)
    # the operator inserts keys through a keying-set operator that needs an area (headless bpy has a window)
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type == "VIEW_3D")
    with bpy.context.temp_override(window=window, area=area, region=area.regions[-1]):
        bpy.ops.rigidbody.bake_to_keyframes(frame_start=FRAME_START, frame_end=FRAME_END)
    return time.perf_counter() - t0


def run_ours(scene, active, shape, solver: str) -> dict:
    from contact_lab.addon import bake

    scene.contact_lab.solver = solver
    t0 = time.perf_counter()
    report = bake.bake_scene(scene)
    total = time.perf_counter() - t0
    timings = report["timings"]
    simulate = float(timings["simulate"])
    matrices = sample_blender(scene, active)
    out = dict(
        engine=f"Contact Lab {solver}",
        bake_s=simulate,
        substep_ms=1e3 * simulate / ((FRAME_END - FRAME_START) * SUBSTEPS),
        keyframes_s=total,
        export_s=float(timings.get("export", 0.0)),
        write_s=float(timings.get("write", 0.0)),
        max_contacts=report["stats"]["max_contacts"],
    )
    out.update(figures(matrices, *body_geometry(active, shape)))
    bake.clear_bake(scene)
    return out


def run_core_tuned(scene, active, shape, solver: str, options: dict) -> dict:
    """The same exported model through ``core.simulate`` with solver ``options`` the panel does not expose."""
    from contact_lab.addon import bake
    from contact_lab.core import simulate
    from mathutils import Matrix, Quaternion

    scene.contact_lab.solver = solver
    job = bake.start_bake(scene)
    t0 = time.perf_counter()
    traj = simulate(job.export.model, **job.export.simulate_kwargs(), **options)
    seconds = time.perf_counter() - t0
    transforms = job.export.object_transforms(traj)
    matrices = np.zeros((traj.body_pos.shape[0], len(active), 4, 4))
    for k, o in enumerate(active):
        location, quat = transforms[o.name]
        for f in range(matrices.shape[0]):
            matrices[f, k] = np.array(Matrix.LocRotScale(location[f], Quaternion(quat[f]), o.scale))
    label = ", ".join(f"{k} {v:g}" for k, v in options.items())
    out = dict(engine=f"{solver} ({label})", bake_s=seconds, keyframes_s=float("nan"),
               substep_ms=1e3 * seconds / ((FRAME_END - FRAME_START) * SUBSTEPS))  # fmt: skip
    out.update(figures(matrices, *body_geometry(active, shape)))
    return out


TUNED = {"warm_start_factor": 0.85, "penetration_slop": 5e-5}
"""Bullet's warm-start factor and a 0.05 mm slop: the settings the README's pile row compares (core option)."""


def warm_up(shape: str) -> float:
    """Cold start: the first bake in this process (a 20-body pile, 3 frames) compiles or loads the kernels [s]."""
    import bpy
    from contact_lab.addon import bake

    scene, _ = build_scene(20, shape)
    scene.rigidbody_world.enabled = False
    t0 = time.perf_counter()
    for solver in ("PGS", "PROX"):
        scene.contact_lab.solver = solver
        bake.bake_scene(scene, frame_start=1, frame_end=3)
    cold = time.perf_counter() - t0
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return cold


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=1000)
    parser.add_argument("--shape", choices=("box", "rock"), default="box")
    parser.add_argument("--solvers", nargs="+", default=["PGS", "PROX"])
    parser.add_argument("--skip-blender", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    try:
        import bpy
    except ImportError:
        print("bench_pile: bpy is not installed; nothing to measure")
        return 0
    version = ".".join(map(str, bpy.app.version))
    stack = f"bpy {version}, Python {sys.version.split()[0]}, numpy {np.__version__}"
    print(f"pile: {args.bodies} {args.shape}es, {FPS} fps x {SUBSTEPS} substeps, {ITERATIONS} iterations, "
          f"frames {FRAME_START}-{FRAME_END}; {stack}")  # fmt: skip
    cold = warm_up(args.shape)
    print(f"Contact Lab cold start (first bakes in this process: compile or cache load): {cold:.1f} s")
    scene, active = build_scene(args.bodies, args.shape)
    rows = []
    if not args.skip_blender:
        rows.append(run_blender(scene, active, args.shape))
        bpy.ops.ptcache.free_bake_all()
    scene.rigidbody_world.enabled = False
    for solver in args.solvers:
        rows.append(run_ours(scene, active, args.shape, solver))
    for solver in args.solvers:
        rows.append(run_core_tuned(scene, active, args.shape, solver, TUNED))
    if not args.skip_blender:
        scene.rigidbody_world.enabled = True
        rows[0]["keyframes_s"] = run_blender_keyframes(scene, active)
    _print_table(rows, args.skip_blender)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(bodies=args.bodies, shape=args.shape, bpy=version, rows=rows), f, indent=1)
    return 0


def _print_table(rows: list[dict], skip_blender: bool) -> None:
    ref = None if skip_blender else rows[0]
    print(f"{'engine':<48} {'bake s':>8} {'ms/substep':>10} {'ratio':>6} {'deepest mm':>10} {'at 5 s mm':>9} "
          f"{'tunnelled':>9} {'KE at 5 s J':>11} {'→ keys s':>8} {'ratio':>6}")  # fmt: skip
    for r in rows:
        ratio = r["bake_s"] / ref["bake_s"] if ref else float("nan")
        key_ratio = r["keyframes_s"] / ref["keyframes_s"] if ref else float("nan")
        print(f"{r['engine']:<48} {r['bake_s']:8.2f} {r['substep_ms']:10.2f} {ratio:6.2f} {r['deepest_mm']:10.3f} "
              f"{r['resting_mm']:9.3f} {r['tunnelled']:9d} {r['kinetic_J']:11.4f} {r['keyframes_s']:8.1f} "
              f"{key_ratio:6.2f}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
