"""Contact Lab demo: build a scene in real Blender (bpy module), bake it, save it, render a contact sheet.

Run with the project's virtual environment (``make demo``)::

    .venv/bin/python demo/build_demo.py [--out out] [--docs] [--no-render] [--no-bake] [--samples 16]

Scene (Z up, metres, 24 fps):

* a 5-4-3-2-1 pyramid of 15 boxes on a passive ground plane;
* three spheres and two capsules rolling down a tilted passive ramp toward a backstop wall;
* two boxes on 30° lanes: μ = 0.5 slides (tan 30° ≈ 0.577 > μ), μ = 0.7 sticks.
  Each lane has the same friction as its box, so every friction-combine rule except Product gives
  exactly that μ for the pair.

Outputs: ``out/demo.blend`` (baked), ``out/frames/frame_####.png``, ``out/demo_contact_sheet.png``
(3 × 2 frames); with ``--docs`` (``make pictures``) also a copy of the sheet in ``docs/demo_contact_sheet.png``.

Only public scripting names of the add-on are used: ``obj.contact_lab.role/shape/mass/friction/
restitution``, ``scene.contact_lab.frame_start/frame_end/substeps/solver/iterations/tolerance``,
``bpy.ops.contact_lab.bake()`` and ``scene.contact_lab.last_report``.
"""

from __future__ import annotations

import json
import math
import sys
import time
import traceback
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402  (materials, meshes, scene builder, light, bake, render and sheet helpers)
from common import FPS, SceneBuilder, box_mesh, capsule_mesh, make_material, plane_mesh, sphere_mesh  # noqa: E402

FRAME_START = 1
FRAME_END = 108  # 4.5 s
SHEET_FRAMES = (1, 22, 43, 64, 86, 108)

INCLINE_DEG = 30.0
RAMP_DEG = 15.0

# ---------------------------------------------------------------------------------------------
# scene


def _on_slope(center, angle_deg: float, half_thickness: float, u: float, y: float, clearance: float):
    """Point ``clearance`` above the top face of a slab rotated by ``angle_deg`` about +Y.

    ``u`` is the distance along the slab's long axis from its centre (negative = uphill end).
    """
    a = math.radians(angle_deg)
    along = np.array([math.cos(a), 0.0, -math.sin(a)])
    normal = np.array([math.sin(a), 0.0, math.cos(a)])
    p = np.asarray(center, float) + u * along + (half_thickness + clearance) * normal
    p[1] = y
    return tuple(p)


def build_scene() -> SceneBuilder:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.name = "Contact Lab Demo"
    scene.render.fps = FPS
    scene.frame_start, scene.frame_end = FRAME_START, FRAME_END
    scene.frame_set(FRAME_START)
    b = SceneBuilder(scene)

    m_ground = make_material("Ground", "#d6d1c8", roughness=0.8, checker="#c5bfb5", scale=1.0)
    m_slab = make_material("Slab", "#3e4a5a", roughness=0.6)
    m_pyramid = [
        make_material(f"Pyramid row {i}", c)
        for i, c in enumerate(("#e4572e", "#f3a712", "#e9d758", "#76b041", "#2e86ab"))
    ]
    m_balls = [
        make_material("Ball A", "#f25f5c", checker="#fdfdfd", scale=3.0),
        make_material("Ball B", "#247ba0", checker="#fdfdfd", scale=3.0),
        make_material("Ball C", "#70c1b3", checker="#fdfdfd", scale=3.0),
    ]
    m_capsule = make_material("Capsule", "#9b5de5", checker="#fdfdfd", scale=3.0)
    m_slides = make_material("Slides mu 0.5", "#d62828")
    m_sticks = make_material("Sticks mu 0.7", "#2a9d8f")

    # ground: infinite plane through the origin
    b.add("Ground", plane_mesh("Ground", 60.0), m_ground, (0, 0, 0), role="PASSIVE", shape="PLANE", friction=0.6)
    add_pyramid(b, m_pyramid)
    add_ramp(b, m_slab, m_balls, m_capsule)
    add_lanes(b, m_slab, ((m_slides, 0.5, 0.3), (m_sticks, 0.7, 2.7)))
    add_camera_and_light(scene)
    return b


def add_pyramid(b: SceneBuilder, m_rows) -> None:
    """A 5-4-3-2-1 pyramid of 15 boxes of 0.5 m and 10 kg; ``m_rows`` a material per row."""
    s, gap = 0.5, 0.01
    for row, count in enumerate((5, 4, 3, 2, 1)):
        for i in range(count):
            x = (i - 0.5 * (count - 1)) * (s + gap)
            z = 0.5 * s + row * (s + 0.002)
            b.add(
                f"Pyramid r{row} b{i}",
                box_mesh(f"Pyramid r{row} b{i}", (s, s, s)),
                m_rows[row],
                (x, 2.6, z + 0.001),
                role="ACTIVE",
                shape="BOX",
                mass=10.0,
                friction=0.6,
                restitution=0.05,
            )


def add_ramp(b: SceneBuilder, m_slab, m_ball, m_capsule) -> None:
    """A 15° ramp descending toward +X with three spheres and two capsules rolling down, and a backstop wall."""
    ramp_size = (3.6, 1.8, 0.2)
    a = math.radians(RAMP_DEG)
    ramp_low_top = 0.04  # top face of the low end just above the ground
    ramp_z = ramp_low_top + 0.5 * ramp_size[0] * math.sin(a) - 0.5 * ramp_size[2] * math.cos(a)
    ramp_c = (-4.8, -1.0, ramp_z)
    b.add("Ramp", box_mesh("Ramp", ramp_size), m_slab, ramp_c, (0.0, a, 0.0), role="PASSIVE", shape="BOX", friction=0.8)
    r_ball = 0.2
    for k, (u, y) in enumerate(((-1.45, -1.45), (-1.45, -0.55), (-0.05, -1.0))):
        b.add(
            f"Sphere {k}",
            sphere_mesh(f"Sphere {k}", r_ball),
            m_ball[k],
            _on_slope(ramp_c, RAMP_DEG, 0.1, u, y, r_ball + 0.005),
            role="ACTIVE",
            shape="SPHERE",
            mass=2.0,
            friction=0.8,
            restitution=0.3,
        )
    r_cap, h_cap = 0.15, 1.0
    for k, u in enumerate((-0.75, 0.65)):
        # local Z (capsule axis) along world Y, so it rolls down the slope (+X)
        b.add(
            f"Capsule {k}",
            capsule_mesh(f"Capsule {k}", r_cap, h_cap),
            m_capsule,
            _on_slope(ramp_c, RAMP_DEG, 0.1, u, -1.0, r_cap + 0.005),
            (math.radians(90.0), 0.0, 0.0),
            role="ACTIVE",
            shape="CAPSULE",
            mass=3.0,
            friction=0.8,
            restitution=0.2,
        )
    b.add(
        "Backstop",
        box_mesh("Backstop", (0.3, 2.0, 0.6)),
        m_slab,
        (2.6, -1.1, 0.3),
        role="PASSIVE",
        shape="BOX",
        friction=0.5,
        restitution=0.2,
    )


def add_lanes(b: SceneBuilder, m_slab, lanes) -> None:
    """The friction threshold: 30° lanes, each with a box of its friction; ``lanes`` (material, μ, y [m]) per
    lane, μ = 0.5 (slides) in front, μ = 0.7 (sticks) behind."""
    lane_size = (4.0, 0.9, 0.2)
    a = math.radians(INCLINE_DEG)
    lane_z = 0.03 + 0.5 * lane_size[0] * math.sin(a) - 0.5 * lane_size[2] * math.cos(a)
    box = 0.4
    for (mat, mu, y), name in zip(lanes, ("Slides", "Sticks"), strict=True):
        lane_c = (5.4, y, lane_z)
        b.add(
            f"Lane mu {mu}",
            box_mesh(f"Lane mu {mu}", lane_size),
            m_slab,
            lane_c,
            (0.0, a, 0.0),
            role="PASSIVE",
            shape="BOX",
            friction=mu,
        )
        b.add(
            f"{name} mu {mu}",
            box_mesh(f"{name} mu {mu}", (box, box, box)),
            mat,
            _on_slope(lane_c, INCLINE_DEG, 0.1, -1.3, y, 0.5 * box + 0.002),
            (0.0, a, 0.0),
            role="ACTIVE",
            shape="BOX",
            mass=5.0,
            friction=mu,
            restitution=0.0,
        )
        add_label(b, f"μ = {mu}", (3.35, y - 0.1, 0.01), mat)


def add_label(b: SceneBuilder, text: str, location, material) -> None:
    curve = bpy.data.curves.new(f"Label {text}", type="FONT")
    curve.body = text
    curve.size = 0.5
    curve.align_x = "RIGHT"
    curve.extrude = 0.01
    obj = bpy.data.objects.new(f"Label {text}", curve)
    obj.location = location
    obj.rotation_euler = (math.radians(35.0), 0.0, 0.0)
    curve.materials.append(material)
    b.collection.objects.link(obj)


def add_camera_and_light(scene: bpy.types.Scene) -> None:
    cam_data = bpy.data.cameras.new("Camera")
    cam_data.lens = 30.0
    cam = bpy.data.objects.new("Camera", cam_data)
    cam.location = (0.6, -11.0, 9.0)
    target = np.array((0.6, 0.7, 0.3))
    d = target - np.array(cam.location)
    # aim -Z at the target, keep +Y up
    yaw = math.atan2(d[1], d[0]) - math.pi / 2
    pitch = math.atan2(math.hypot(d[0], d[1]), -d[2])
    cam.rotation_euler = (pitch, 0.0, yaw)
    scene.collection.objects.link(cam)
    scene.camera = cam
    common.add_light_and_world(scene)


# ---------------------------------------------------------------------------------------------
# add-on and bake


def bake(scene: bpy.types.Scene, substeps: int, solver: str) -> dict:
    settings = scene.contact_lab
    settings.frame_start = FRAME_START
    settings.frame_end = FRAME_END
    settings.substeps = substeps
    settings.solver = solver
    settings.iterations = 100
    settings.tolerance = 1e-6
    t0 = time.perf_counter()
    result = bpy.ops.contact_lab.bake()
    wall = time.perf_counter() - t0
    if result != {"FINISHED"}:
        raise RuntimeError(f"bpy.ops.contact_lab.bake() returned {result}")
    report = {}
    if getattr(settings, "last_report", ""):
        try:
            report = json.loads(settings.last_report)
        except json.JSONDecodeError:
            report = {"raw": settings.last_report}
    return {"wall_seconds": wall, "report": report}


def print_report(bake_info: dict, builder: SceneBuilder) -> None:
    active = sum(1 for p in builder.physics.values() if p.get("role") == "ACTIVE")
    passive = sum(1 for p in builder.physics.values() if p.get("role") == "PASSIVE")
    frames = FRAME_END - FRAME_START + 1
    print(
        f"Bake: {active} active + {passive} passive bodies, {frames} frames at {FPS} fps, "
        f"wall time {bake_info['wall_seconds']:.1f} s (a first run includes the Numba compile)"
    )
    report = bake_info["report"]
    if report:
        print("Bake report (scene.contact_lab.last_report):")
        print(json.dumps(report, indent=2, sort_keys=True, default=str))
    else:
        print("Bake report: (scene.contact_lab.last_report is empty)")


def check_friction_threshold() -> None:
    """Print how far the two incline boxes moved: μ = 0.5 must slide, μ = 0.7 must stick (tan 30° ≈ 0.577)."""
    scene = bpy.context.scene
    tan = math.tan(math.radians(INCLINE_DEG))
    print(f"Friction threshold on the {INCLINE_DEG:g}° lanes (tan = {tan:.3f}):")
    for name, mu in (("Slides mu 0.5", 0.5), ("Sticks mu 0.7", 0.7)):
        obj = bpy.data.objects[name]
        scene.frame_set(FRAME_START)
        p0 = np.array(obj.matrix_world.translation)
        scene.frame_set(FRAME_END)
        p1 = np.array(obj.matrix_world.translation)
        moved = float(np.linalg.norm(p1 - p0))
        expect_slide = mu < tan
        ok = moved > 0.5 if expect_slide else moved < 0.02
        verdict = "as expected" if ok else "UNEXPECTED"
        print(
            f"  μ = {mu}: moved {moved:.3f} m in frames {FRAME_START}-{FRAME_END}; "
            f"expected to {'slide' if expect_slide else 'stick'}: {verdict}"
        )
    scene.frame_set(FRAME_START)


# ---------------------------------------------------------------------------------------------
# rendering (the first engine that works: Cycles, EEVEE, Workbench)


def render_frames(scene: bpy.types.Scene, frames_dir: Path, samples: int) -> tuple[str, list[Path]]:
    frames_dir.mkdir(parents=True, exist_ok=True)
    errors = []
    for engine in common.configure_render(scene, samples):
        scene.render.engine = engine
        paths = []
        try:
            for f in SHEET_FRAMES:
                t0 = time.perf_counter()
                scene.frame_set(f)
                paths.append(common.render_still(scene, frames_dir / f"frame_{f:04d}.png", engine, f"frame {f}", t0))
            return engine, paths
        except Exception as exc:  # try the next engine: EEVEE/Workbench need a GPU context headless
            errors.append(f"{engine}: {exc}")
            print(f"  NOTICE: render engine {engine} failed ({exc}); trying the next one")
    raise RuntimeError("no render engine worked: " + "; ".join(errors))


# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    ap = common.arguments(__doc__.splitlines()[0], samples=16)
    ap.add_argument("--substeps", type=int, default=8, help="solver substeps per frame (default 8)")
    ap.add_argument("--solver", default="PROX", choices=("PROX", "PGS"))
    ap.add_argument("--no-bake", action="store_true", help="build and render the scene only")
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    print(f"Contact Lab demo: Blender {bpy.app.version_string} (bpy module), numpy {np.__version__}")
    args.out.mkdir(parents=True, exist_ok=True)

    builder = build_scene()
    scene = bpy.context.scene
    n_bodies = len(builder.physics)
    print(f"Scene built: {len(builder.collection.objects)} objects, {n_bodies} with Contact Lab settings")

    registered = common.register_addon()
    if registered:
        builder.apply_physics()
    baked = False
    if registered and not args.no_bake:
        try:
            info = bake(scene, args.substeps, args.solver)
        except Exception:
            traceback.print_exc()
            return common.save_unbaked(args.out, "demo", "the bake")
        print_report(info, builder)
        check_friction_threshold()
        baked = True

    scene.frame_set(FRAME_START)
    common.save(args.out, "demo", "" if baked else " (NOT baked)")

    if not args.no_render:
        t0 = time.perf_counter()
        engine, paths = render_frames(scene, args.out / "frames", args.samples)
        sheet = args.out / "demo_contact_sheet.png"
        written = common.publish_sheet(paths, sheet, args.docs)
        print(
            f"Contact sheet ({engine}, frames {', '.join(map(str, SHEET_FRAMES))}, "
            f"{time.perf_counter() - t0:.1f} s): {written}"
        )

    print(f"Demo finished in {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
