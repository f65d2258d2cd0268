"""Joints side by side: Blender's own rigid body world (Bullet) and Contact Lab's rigid engine on the same scenes, in
one process, each scene built once with Blender's Rigid Body Constraints (which our bake reads), plus MuJoCo's
chain in generalized coordinates when ``mujoco`` is installed.

Scenes (every body a box or sphere, no damping, never deactivated, the same substeps on both sides):

- **pendulum**: a 0.1 m cube on a POINT constraint 1 m below a Passive anchor, released at 10°, 5 s at 60 fps with
  1 and 4 substeps (60 and 240 Hz). Figure: the period from the bob's upward crossings of the vertical against the
  physical pendulum's elliptic-integral period; the joint's largest stretch.
- **chain20**: 20 links (0.1 × 0.02 × 0.02 m, 0.1 kg) on POINT constraints, laid out horizontally from a Passive
  anchor and let fall, 5 s at 24 fps × 10 substeps. Each link in its own Collision Collection, so links meet only
  through their joints (the same mechanism as MuJoCo's, which has no contacts here). Figures: the largest joint
  stretch over all frames; the tip's distance from MuJoCo's tip (RMS over the first second and over 5 s; a
  falling chain is chaotic, so the second figure grows for every engine).
- **door**: a 5 kg door on a HINGE (limits ±40°) to a Passive post, hit by a 3 kg ball rolling down a ramp, 4 s.
  Figures: the door's largest and final opening angle against the 40° limit, the hinge's largest stretch.
- **wall**: a wall of 25 × 20 pieces (0.2 m cubes, 1 kg) on a floor, each joined to its neighbours (sides, above
  and both diagonals: 1 867 breakable FIXED constraints, threshold 2 N·s) hit from above by a 50 kg ball, 2 s at
  24 fps × 10 substeps. Figures: time per substep and its ratio to Bullet's; pieces that broke loose (moved more
  than 5 cm); the joints' largest stretch while the wall stands, before the ball arrives; over the joints that
  every run keeps (pivots less than 1 cm apart at the end, and none of ours reports it broken), the median and 99th
  percentile of each one's largest stretch over the run; ours also the largest stretch of its unbroken joints
  (the report lists the broken ones; Blender does not say which of Bullet's broke). Ours runs twice: with the
  scene's default iterations and with Bullet's (the world's Solver Iterations, 10), the same sweeps on both sides.
- **chain1000**: a 1 000-link chain (0.05 m links) hanging from a Passive anchor, released 10° off the vertical,
  1 s at 24 fps × 10 substeps. Figures: time per substep and the largest joint stretch.

Every figure is computed the same way from the world matrices of both engines' results (read back through
``frame_set``): a joint's stretch is the distance between its pivot carried by either body from the start frame.
Times: Bullet's is its point-cache bake (``ptcache.bake_all``); ours is the simulation phase of the bake
(``timings.simulate`` of the report; ``bake_seconds`` adds reading the scene and writing keyframes). Ours runs each
scene twice: the first (cold: Numba compile or cache load, ``compiled_kernels`` from the report) and the second
(warm) times are printed apart; ratios use the warm time. The timed scenes (the wall at Bullet's iterations, the
1 000-link chain) are baked by both engines five times, one after the other, and each time is the fastest of its
rounds (all printed).

Run: ``python tests/benchmarks/bench_joints.py`` (``make bench``). Options: ``--scenes pendulum chain20 door wall
chain1000``, ``--once`` (ours bakes each scene once), ``--wall-seconds S``, ``--chain-substeps N``, ``--rounds N``,
``--json PATH``.
Needs Blender as a Python module (``bpy``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

G = 9.81
SCENES = ("pendulum", "chain20", "door", "wall", "chain1000")


# ---- scene building (both engines' settings on the same objects) --------------------------------------------


def new_scene(fps: int, substeps: int, frames: int, iterations: int = 10):
    """An empty scene with a Blender rigid body world and Contact Lab's Rigid engine, frames 1 to ``frames``."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    _MESHES.clear()
    PENDING_BODIES.clear()
    PENDING_JOINTS.clear()
    import contact_lab

    contact_lab.register()
    scene = bpy.context.scene
    scene.render.fps = fps
    scene.frame_start, scene.frame_end = 1, frames
    bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    world.substeps_per_frame, world.solver_iterations = substeps, iterations
    world.point_cache.frame_start, world.point_cache.frame_end = 1, frames
    s = scene.contact_lab
    s.engine, s.use_scene_frame_range, s.substeps = "RIGID", True, substeps
    return scene


PENDING_BODIES: list = []
"""(object, kind) made by :func:`body` and not yet given Blender's rigid body (:func:`finish`)."""
PENDING_JOINTS: list = []
"""(Empty, type, object1, object2, threshold) made by :func:`joint` and not yet constraints (:func:`finish`)."""


def _mesh(size, sphere: bool):
    """A new box mesh of edge lengths ``size`` or a UV sphere of radius ``size[0]`` (24 × 12)."""
    import bmesh
    import bpy

    mesh = bpy.data.meshes.new("Sphere" if sphere else "Box")
    bm = bmesh.new()
    if sphere:
        bmesh.ops.create_uvsphere(bm, u_segments=24, v_segments=12, radius=size[0])
    else:
        bmesh.ops.create_cube(bm, size=1.0)
        bmesh.ops.scale(bm, vec=size, verts=bm.verts)
    bm.to_mesh(mesh)
    bm.free()
    return mesh


_MESHES: dict = {}


def body(
    name, location, size, *, kind="ACTIVE", mass=1.0, sphere=False, rotation=(0.0, 0.0, 0.0), friction=0.5, layers=None
):
    """A box of edge lengths ``size`` (or a sphere of radius ``size[0]``) with Contact Lab's settings (no damping);
    Blender's rigid body (the same settings, never asleep, Collision Collections ``layers``: 20 bools or None for
    the default) follows in :func:`finish`. Bodies of one size share a
    mesh; no operator runs here (one call per object rebuilds the depsgraph: quadratic in the object count)."""
    import bpy

    key = (tuple(float(x) for x in size), sphere)
    if key not in _MESHES:
        _MESHES[key] = _mesh(size, sphere)
    obj = bpy.data.objects.new(name, _MESHES[key])
    obj.location, obj.rotation_euler = location, rotation
    bpy.context.scene.collection.objects.link(obj)
    s = obj.contact_lab
    s.role, s.shape = kind, "SPHERE" if sphere else "BOX"
    s.mass, s.friction, s.restitution = mass, friction, 0.0
    s.linear_damping = s.angular_damping = 0.0
    PENDING_BODIES.append((obj, kind, mass, friction, sphere, layers))
    return obj


def joint(name, kind, object1, object2, location, *, threshold=None):
    """An Empty that :func:`finish` makes a Rigid Body Constraint of type ``kind`` between the two objects."""
    import bpy

    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    PENDING_JOINTS.append((obj, kind, object1, object2, threshold))
    return obj


def finish(scene) -> None:
    """Blender's rigid bodies for every pending body, one ``rigidbody.objects_add`` call per kind over the selection,
    and every pending Empty made a constraint at once: linked into a new collection that becomes the world's
    Constraints collection (Blender gives each object in it a FIXED constraint, as Connect's operator does one at
    a time), then each one's type, objects and breaking threshold set."""
    import bpy

    view_layer = bpy.context.view_layer
    for kind in ("PASSIVE", "ACTIVE"):
        chosen = [entry[0] for entry in PENDING_BODIES if entry[1] == kind]
        if not chosen:
            continue
        for o in view_layer.objects.selected:
            o.select_set(False)
        for o in chosen:
            o.select_set(True)
        view_layer.objects.active = chosen[0]
        bpy.ops.rigidbody.objects_add(type=kind)
    for obj, _kind, mass, friction, sphere, layers in PENDING_BODIES:
        rb = obj.rigid_body
        rb.collision_shape = "SPHERE" if sphere else "BOX"
        rb.mass, rb.friction, rb.restitution = mass, friction, 0.0
        rb.linear_damping = rb.angular_damping = 0.0
        rb.use_deactivation = False
        if layers is not None:
            rb.collision_collections = layers
    PENDING_BODIES.clear()
    if PENDING_JOINTS:
        collection = bpy.data.collections.new("RigidBodyConstraints")
        for entry in PENDING_JOINTS:
            collection.objects.link(entry[0])
        scene.rigidbody_world.constraints = collection
        for obj, kind, object1, object2, threshold in PENDING_JOINTS:
            c = obj.rigid_body_constraint
            c.type, c.object1, c.object2 = kind, object1, object2
            if threshold is not None:
                c.use_breaking, c.breaking_threshold = True, threshold
    PENDING_JOINTS.clear()


# ---- running -------------------------------------------------------------------------------------------------


def sample(scene, objects) -> np.ndarray:
    """World matrices (F, N, 4, 4) of ``objects`` at every frame of the scene."""
    frames = range(scene.frame_start, scene.frame_end + 1)
    out = np.zeros((len(frames), len(objects), 4, 4))
    for i, f in enumerate(frames):
        scene.frame_set(f)
        for k, o in enumerate(objects):
            out[i, k] = np.array(o.matrix_world)
    return out


def run_bullet(scene, objects) -> dict:
    import bpy

    t0 = time.perf_counter()
    bpy.ops.ptcache.bake_all(bake=True)
    seconds = time.perf_counter() - t0
    matrices = sample(scene, objects)
    bpy.ops.ptcache.free_bake_all()
    return {"seconds": seconds, "matrices": matrices}


REPEAT = 2
"""Bakes of each scene by ours: the first cold, the last warm (``--once``: 1, the cold time is the warm one)."""


def run_ours(scene, objects) -> dict:
    """Bake :data:`REPEAT` times (cold, then warm) with Blender's world switched off; matrices of the last. A bake
    that fails (diverges) is reported by its message, its time and NaN matrices, and not repeated."""
    from contact_lab.addon.bake import driver as bake
    from contact_lab.addon.errors import BakeError

    scene.rigidbody_world.enabled = False
    totals, simulate, kernels, report = [], [], [], {}
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        try:
            report = bake.bake_scene(scene)
        except BakeError as exc:
            scene.rigidbody_world.enabled = True
            print(f"ours failed: {exc}", flush=True)
            shape = (scene.frame_end - scene.frame_start + 1, len(objects), 4, 4)
            seconds = time.perf_counter() - t0
            return {"cold": seconds, "seconds": seconds, "bake_seconds": seconds, "kernels": 0,
                    "matrices": np.full(shape, np.nan), "report": {}, "failed": str(exc)}  # fmt: skip
        totals.append(time.perf_counter() - t0)
        simulate.append(float(report["timings"]["simulate"]))
        kernels.append(int(report.get("compiled_kernels", 0)))
    matrices = sample(scene, objects)
    scene.rigidbody_world.enabled = True
    bake.clear_bake(scene)
    return {
        "cold": simulate[0],
        "seconds": simulate[-1],
        "bake_seconds": totals[-1],
        "kernels": kernels[0],
        "matrices": matrices,
        "report": report,
    }


ROUNDS = 5
"""Timed scenes (the wall at Bullet's iterations, the 1 000-link chain): Bullet's and ours' bakes alternate this
many times and each side's time is its fastest round (``--rounds``): on a shared machine a bake runs up to half
again as long as it can when the other tenants are busy, so the fastest round measures the code, and alternating
runs give both engines the same chances."""


def alternate_seconds(scene, objects, bullet: dict, ours: dict) -> None:
    """Bake Bullet's and ours' ``ROUNDS - 1`` more times, one after the other, and set each result's ``seconds`` to
    the fastest of its rounds (the first round being ``bullet`` and ``ours`` themselves); ``rounds`` lists them."""
    times = {"bullet": [bullet["seconds"]], "ours": [ours["seconds"]]}
    for _ in range(ROUNDS - 1):
        times["bullet"].append(run_bullet(scene, objects)["seconds"])
        times["ours"].append(run_ours(scene, objects)["seconds"])
    for result, key in ((bullet, "bullet"), (ours, "ours")):
        result["rounds"] = times[key]
        result["seconds"] = float(min(times[key]))


def substep_count(scene) -> int:
    return (scene.frame_end - scene.frame_start) * scene.rigidbody_world.substeps_per_frame


# ---- figures -------------------------------------------------------------------------------------------------


def joint_stretch(matrices: np.ndarray, pairs, pivots) -> np.ndarray:
    """Largest pivot separation [m] per frame, (F,): ``pairs`` (J, 2) object indices into ``matrices`` (F, N, 4, 4),
    ``pivots`` (J, 3) the joints' world positions at the first frame."""
    return joint_stretches(matrices, pairs, pivots).max(axis=1)


def joint_stretches(matrices: np.ndarray, pairs, pivots) -> np.ndarray:
    """Each joint's pivot separation [m] per frame, (F, J) (arguments as :func:`joint_stretch`)."""
    pairs, pivots = np.asarray(pairs), np.asarray(pivots, dtype=float)
    out = np.zeros((matrices.shape[0], pairs.shape[0]))
    ends = []
    for side in (0, 1):
        m0 = matrices[0, pairs[:, side]]
        local = np.einsum("jki,jk->ji", m0[:, :3, :3], pivots - m0[:, :3, 3])  # pivot in the body's frame
        ends.append(local)
    for f in range(matrices.shape[0]):
        world = [
            np.einsum("jik,jk->ji", matrices[f, pairs[:, s], :3, :3], ends[s]) + matrices[f, pairs[:, s], :3, 3]
            for s in (0, 1)
        ]
        out[f] = np.linalg.norm(world[0] - world[1], axis=1)
    return out


def ellipk(m: float) -> float:
    """Complete elliptic integral of the first kind K(m), m = k², by the arithmetic-geometric mean."""
    a, b = 1.0, math.sqrt(1.0 - m)
    for _ in range(30):
        a, b = 0.5 * (a + b), math.sqrt(a * b)
    return math.pi / (2.0 * a)


def pendulum_period(length: float, size: float, amplitude: float) -> float:
    """Period [s] of a cube of edge ``size`` whose centre swings ``length`` from a frictionless point, from
    ``amplitude`` [rad]: the physical pendulum's small-amplitude period times 2 K(sin²(a/2)) / π."""
    inertia = length**2 + size**2 / 6.0  # per unit mass, about the pivot
    small = 2.0 * math.pi * math.sqrt(inertia / (G * length))
    return small * 2.0 / math.pi * ellipk(math.sin(amplitude / 2.0) ** 2)


def measured_period(x: np.ndarray, fps: int) -> float:
    """Mean period [s] from the upward zero crossings of ``x`` (F,) sampled at ``fps`` (linear interpolation)."""
    t = np.arange(x.size) / fps
    up = np.nonzero((x[:-1] < 0.0) & (x[1:] >= 0.0))[0]
    times = t[up] - x[up] * (t[up + 1] - t[up]) / (x[up + 1] - x[up])
    return float(np.mean(np.diff(times))) if times.size > 1 else float("nan")


def row(scene_name: str, engine: str, **figures) -> dict:
    return {"scene": scene_name, "engine": engine, **figures}


def timing(scene, result: dict) -> dict:
    steps = substep_count(scene)
    out = {"seconds": result["seconds"], "ms_per_substep": 1000.0 * result["seconds"] / steps}
    if "rounds" in result:
        out["rounds_ms_per_substep"] = ", ".join(f"{1000.0 * t / steps:.2f}" for t in result["rounds"])
    if "failed" in result:
        out["failed"] = result["failed"]
    if "cold" in result:
        out.update(cold_seconds=result["cold"], compiled_kernels=result["kernels"], bake_seconds=result["bake_seconds"])
    return out


# ---- scenes --------------------------------------------------------------------------------------------------


def bench_pendulum(rows: list) -> None:
    length, size, amplitude = 1.0, 0.1, math.radians(10.0)
    reference = pendulum_period(length, size, amplitude)
    for substeps in (1, 4):
        scene = new_scene(60, substeps, 301)
        pivot = np.array([0.0, 0.0, 3.0])
        anchor = body("Anchor", pivot + (0.0, 0.0, 0.3), (0.1, 0.1, 0.1), kind="PASSIVE")
        bob_at = pivot + length * np.array([math.sin(amplitude), 0.0, -math.cos(amplitude)])
        bob = body("Bob", bob_at, (size,) * 3)
        joint("Point", "POINT", anchor, bob, pivot)
        finish(scene)
        for engine, result in (("Bullet", run_bullet(scene, [anchor, bob])), ("ours", run_ours(scene, [anchor, bob]))):
            m = result["matrices"]
            period = measured_period(m[:, 1, 0, 3], 60)
            stretch = joint_stretch(m, [(0, 1)], [pivot]).max()
            rows.append(
                row(
                    f"pendulum {60 * substeps} Hz",
                    engine,
                    period_error=period / reference - 1.0,
                    stretch_mm=1000.0 * stretch,
                    **timing(scene, result),
                )
            )


def chain20_scene(links: int = 20, link: float = 0.1, width: float = 0.02):
    """The 20-link chain; returns (scene, objects: anchor then links, joint pairs, pivots)."""
    scene = new_scene(24, 10, 121)
    top = np.array([0.0, 0.0, 5.0])
    anchor = body("Anchor", top - (link / 2, 0.0, 0.0), (link, width, width), kind="PASSIVE", layers=[False] * 20)
    objects, pairs, pivots = [anchor], [], []
    for k in range(links):
        layers = [i == k % 20 for i in range(20)]
        obj = body(f"Link{k:02d}", top + ((k + 0.5) * link, 0.0, 0.0), (link, width, width), mass=0.1, layers=layers)
        pivot = top + (k * link, 0.0, 0.0)
        joint(f"Joint{k:02d}", "POINT", objects[-1], obj, pivot)
        objects.append(obj)
        pairs.append((k, k + 1))
        pivots.append(pivot)
    finish(scene)
    return scene, objects, pairs, pivots


def mujoco_chain(links: int, link: float, seconds: float, fps: int) -> np.ndarray | None:
    """Tip (last link's centre) positions (F, 3) of the same chain in MuJoCo (ball joints, generalized
    coordinates, no contacts, RK4 at 1/4800 s), or None without ``mujoco``."""
    try:
        import mujoco
    except ImportError:
        return None
    inner = ""
    for k in reversed(range(links)):
        pos = "0 0 5" if k == 0 else f"{link} 0 0"
        inner = (
            f'<body pos="{pos}"><joint type="ball" damping="0"/>'
            f'<geom type="box" size="{link / 2} 0.01 0.01" pos="{link / 2} 0 0" mass="0.1" contype="0" '
            f'conaffinity="0"/>{inner}</body>'
        )
    xml = (
        '<mujoco><option timestep="0.00020833333" integrator="RK4" gravity="0 0 -9.81"/>'
        f"<worldbody>{inner}</worldbody></mujoco>"
    )
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    per_frame = round(1.0 / (fps * model.opt.timestep))
    frames = round(seconds * fps) + 1
    out = np.zeros((frames, 3))
    mujoco.mj_forward(model, data)
    for f in range(frames):
        out[f] = data.geom_xpos[links - 1]
        for _ in range(per_frame):
            mujoco.mj_step(model, data)
    return out


def bench_chain20(rows: list) -> None:
    scene, objects, pairs, pivots = chain20_scene()
    reference = mujoco_chain(20, 0.1, 5.0, 24)
    results = [("Bullet", run_bullet(scene, objects)), ("ours", run_ours(scene, objects))]
    if reference is not None:
        rows.append(row("chain20", "MuJoCo", stretch_mm=0.0, tip_rms_1s_mm=0.0, tip_rms_5s_mm=0.0))
    for engine, result in results:
        m = result["matrices"]
        figures = {"stretch_mm": 1000.0 * joint_stretch(m, pairs, pivots).max()}
        if reference is not None:
            distance = np.linalg.norm(m[:, -1, :3, 3] - reference, axis=1)
            figures["tip_rms_1s_mm"] = 1000.0 * float(np.sqrt(np.mean(distance[:25] ** 2)))
            figures["tip_rms_5s_mm"] = 1000.0 * float(np.sqrt(np.mean(distance**2)))
        rows.append(row("chain20", engine, **figures, **timing(scene, result)))


def bench_door(rows: list) -> None:
    limit = math.radians(40.0)
    scene = new_scene(24, 10, 97)
    body("Floor", (0.0, 0.0, -0.1), (10.0, 10.0, 0.2), kind="PASSIVE")
    a, length, thick, radius = math.radians(15.0), 3.0, 0.2, 0.2
    n = np.array([0.0, math.sin(a), math.cos(a)])  # the ramp's top normal (it falls towards +y)
    d = np.array([0.0, math.cos(a), -math.sin(a)])  # down the ramp
    centre = np.array([0.7, -1.0 - math.cos(a) * length / 2, math.sin(a) * length / 2 - math.cos(a) * thick / 2])
    body("Ramp", centre, (1.2, length, thick), kind="PASSIVE", rotation=(-a, 0.0, 0.0))
    ball = body("Ball", centre + n * (thick / 2 + radius) - d * (length / 2 - 0.3), (radius,), mass=3.0, sphere=True)
    post = body("Post", (-0.07, 0.05, 0.8), (0.1, 0.1, 1.6), kind="PASSIVE")
    door = body("Door", (0.5, 0.05, 0.8), (1.0, 0.05, 1.5), mass=5.0)
    hinge = joint("Hinge", "HINGE", post, door, (0.0, 0.05, 0.8))
    finish(scene)
    c = hinge.rigid_body_constraint
    c.use_limit_ang_z, c.limit_ang_z_lower, c.limit_ang_z_upper = True, -limit, limit
    objects = [post, door, ball]
    for engine, result in (("Bullet", run_bullet(scene, objects)), ("ours", run_ours(scene, objects))):
        m = result["matrices"]
        angle = np.degrees(np.arctan2(m[:, 1, 1, 0], m[:, 1, 0, 0]))
        rows.append(
            row(
                "door",
                engine,
                max_angle_deg=float(np.abs(angle).max()),
                final_angle_deg=float(angle[-1]),
                limit_deg=40.0,
                stretch_mm=1000.0 * joint_stretch(m, [(0, 1)], [(0.0, 0.05, 0.8)]).max(),
                **timing(scene, result),
            )
        )


WALL_SECONDS = 2.0
"""The wall's bake length (``--wall-seconds``); the ball reaches the wall at about 0.57 s."""


WALL_BALL_DROP, WALL_BALL_RADIUS = 2.0, 0.4
"""Height of the wrecking ball's centre above the wall's top and its radius [m]: it hits after 0.57 s."""
KEPT = 0.01
"""A wall joint counts as kept when its pivots end less than this apart [m] in every run and none of ours reports it
broken (a broken joint's pieces part by centimetres or more, though a few fall back side by side, and Blender does
not say which of Bullet's broke: the stretch figures over kept joints are percentiles)."""


def wall_scene(columns: int = 25, rows_: int = 20, piece: float = 0.2):
    """The wall: (scene, pieces, pairs (J, 2) of indices into pieces, pivots (J, 3))."""
    scene = new_scene(24, 10, 1 + round(24 * WALL_SECONDS))
    body("Floor", (0.0, 0.0, -0.1), (12.0, 6.0, 0.2), kind="PASSIVE")
    pieces = {}
    for i in range(columns):
        for k in range(rows_):
            at = ((i - (columns - 1) / 2) * piece, 0.0, (k + 0.5) * piece)
            pieces[i, k] = body(f"Piece{i:02d}_{k:02d}", at, (piece,) * 3)
    index = {key: n for n, key in enumerate(pieces)}
    pairs, pivots = [], []
    for (i, k), obj in pieces.items():
        for di, dk in ((1, 0), (0, 1), (1, 1), (-1, 1)):
            other = pieces.get((i + di, k + dk))
            if other is None:
                continue
            mid = (np.array(obj.location) + np.array(other.location)) / 2
            joint(f"Glue{len(pairs):05d}", "FIXED", obj, other, mid, threshold=2.0)
            pairs.append((index[i, k], index[i + di, k + dk]))
            pivots.append(mid)
    top = rows_ * piece
    body("Wrecking Ball", (0.0, 0.0, top + WALL_BALL_DROP), (WALL_BALL_RADIUS,), mass=50.0, sphere=True)
    finish(scene)
    return scene, list(pieces.values()), pairs, pivots


def bench_wall(rows: list) -> None:
    t0 = time.perf_counter()
    scene, pieces, pairs, pivots = wall_scene()
    count = len(pairs)
    print(f"wall built in {time.perf_counter() - t0:.1f} s: {len(pieces)} pieces, {count} constraints", flush=True)
    impact = int(24 * math.sqrt(2.0 * (WALL_BALL_DROP - WALL_BALL_RADIUS) / G))  # the last frame before the hit
    results = {"Bullet": run_bullet(scene, pieces), "ours": run_ours(scene, pieces)}
    default_iterations = scene.contact_lab.iterations
    scene.contact_lab.iterations = scene.rigidbody_world.solver_iterations  # the same sweeps as Bullet's
    results["ours, Bullet's iterations"] = run_ours(scene, pieces)
    alternate_seconds(scene, pieces, results["Bullet"], results["ours, Bullet's iterations"])
    scene.contact_lab.iterations = default_iterations
    stretches = {engine: joint_stretches(result["matrices"], pairs, pivots) for engine, result in results.items()}
    kept = np.logical_and.reduce([s[-1] < KEPT for s in stretches.values()])  # kept by both engines ...
    for result in results.values():  # ... and reported whole by ours (its broken pieces may rest side by side)
        kept &= ~np.isin(np.arange(count), broken_indices(result))
    for engine, result in results.items():
        m, stretch = result["matrices"], stretches[engine]
        moved = np.linalg.norm(m[-1, :, :3, 3] - m[0, :, :3, 3], axis=1)
        worst = stretch[:, kept].max(axis=0) if kept.any() else np.full(1, np.nan)  # each kept joint's largest
        figures = {"pieces": len(pieces), "joints": count, "loose_pieces": int((moved > 0.05).sum())}
        figures["standing_stretch_mm"] = 1000.0 * float(stretch[: impact + 1].max())
        figures["kept_joints"] = int(kept.sum())
        figures["kept_median_mm"], figures["kept_p99_mm"] = (1000.0 * np.percentile(worst, [50, 99])).tolist()
        if engine.startswith("ours"):
            broken = broken_indices(result)
            whole = ~np.isin(np.arange(count), broken)
            figures["broken_joints"] = len(broken)
            figures["unbroken_max_mm"] = 1000.0 * float(stretch[:, whole].max()) if whole.any() else float("nan")
        rows.append(row("wall", engine, **figures, **timing(scene, result)))


def broken_indices(result: dict) -> np.ndarray:
    """The wall joints (``Glue<index>``) our bake reports broken; none for Bullet's (Blender does not say)."""
    names = [entry["name"] for entry in result.get("report", {}).get("joints", {}).get("broken", [])]
    return np.array(sorted(int(name[len("Glue") :]) for name in names if name.startswith("Glue")), np.int64)


CHAIN_SUBSTEPS = 10
"""Substeps per frame of the 1 000-link chain on both sides (``--chain-substeps``)."""


def bench_chain1000(rows: list, links: int = 1000, link: float = 0.05) -> None:
    t0 = time.perf_counter()
    scene = new_scene(24, CHAIN_SUBSTEPS, 25)
    tilt = math.radians(10.0)
    down = np.array([math.sin(tilt), 0.0, -math.cos(tilt)])
    top = np.array([0.0, 0.0, links * link + 1.0])
    anchor = body("Anchor", top + (0.0, 0.0, link / 2), (link,) * 3, kind="PASSIVE")
    objects, pairs, pivots = [anchor], [], []
    for k in range(links):
        at = top + down * (k + 0.5) * link
        layers = [i == k % 2 for i in range(20)]  # neighbours never touch
        obj = body(f"Link{k:04d}", at, (0.01, 0.01, link), mass=0.05, rotation=(0.0, -tilt, 0.0), layers=layers)
        joint(f"Joint{k:04d}", "POINT", objects[-1], obj, top + down * k * link)
        objects.append(obj)
        pairs.append((k, k + 1))
        pivots.append(top + down * k * link)
    finish(scene)
    print(f"chain1000 built in {time.perf_counter() - t0:.1f} s", flush=True)
    results = {"Bullet": run_bullet(scene, objects), "ours": run_ours(scene, objects)}
    alternate_seconds(scene, objects, results["Bullet"], results["ours"])
    for engine, result in results.items():
        stretch = joint_stretch(result["matrices"], pairs, pivots).max()
        name = f"chain1000 {24 * CHAIN_SUBSTEPS} Hz"
        rows.append(row(name, engine, stretch_mm=1000.0 * stretch, **timing(scene, result)))


# ---- output --------------------------------------------------------------------------------------------------


def print_rows(rows: list) -> None:
    """One line per scene and engine, then each figure's ratio ours / Bullet."""
    skip = {"scene", "engine"}
    for r in rows:
        shown = [(k, v) for k, v in r.items() if k not in skip]
        figures = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in shown)
        print(f"{r['scene']:<18} {r['engine']:<26} {figures}")
    print("ratios ours / Bullet (warm time per substep; joint stretch):")
    for scene_name in dict.fromkeys(r["scene"] for r in rows):
        pair = {r["engine"]: r for r in rows if r["scene"] == scene_name}
        if "Bullet" not in pair:
            continue
        b = pair["Bullet"]
        for engine in (e for e in pair if e.startswith("ours")):
            o = pair[engine]
            time_ratio = o["ms_per_substep"] / max(b["ms_per_substep"], 1e-12)
            stretches = [k for k in o if k.endswith("_mm") and k in b and k != "unbroken_max_mm"]
            ratios = "  ".join(f"{k[:-3]} {o[k] / max(b[k], 1e-12):.3g}x" for k in stretches)
            print(f"{scene_name:<18} {engine:<26} time {time_ratio:.3g}x  {ratios}")


def stack() -> str:
    import bpy
    import numba

    threads = os.environ.get("NUMBA_NUM_THREADS", "default")
    return f"bpy {bpy.app.version_string}, Python {sys.version.split()[0]}, numpy {np.__version__}, numba " + (
        f"{numba.__version__}, NUMBA_NUM_THREADS {threads}, load {os.getloadavg()[0]:.2f}"
    )


def main(argv=None) -> int:
    global REPEAT, ROUNDS, WALL_SECONDS, CHAIN_SUBSTEPS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", nargs="+", choices=SCENES, default=list(SCENES))
    parser.add_argument("--json", help="write the rows as JSON to this path")
    parser.add_argument("--once", action="store_true", help="ours bakes each scene once (its cold time only)")
    parser.add_argument("--wall-seconds", type=float, default=WALL_SECONDS, help="the wall's bake length [s]")
    parser.add_argument("--chain-substeps", type=int, default=CHAIN_SUBSTEPS, help="the 1 000-link chain's substeps")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="alternating timed bakes of the wall and chain")
    args = parser.parse_args(argv)
    REPEAT, WALL_SECONDS, CHAIN_SUBSTEPS = (1 if args.once else 2), args.wall_seconds, args.chain_substeps
    ROUNDS = max(args.rounds, 1)
    try:
        import bpy  # noqa: F401
    except ImportError:
        print("bench_joints: needs Blender as a Python module (bpy); skipped")
        return 0
    print(stack(), flush=True)
    rows: list = []
    runners = {
        "pendulum": bench_pendulum,
        "chain20": bench_chain20,
        "door": bench_door,
        "wall": bench_wall,
        "chain1000": bench_chain1000,
    }
    for name in args.scenes:
        t0 = time.perf_counter()
        runners[name](rows)
        print(f"[{name} done in {time.perf_counter() - t0:.1f} s, load {os.getloadavg()[0]:.2f}]", flush=True)
    print_rows(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{k: v for k, v in r.items()} for r in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
