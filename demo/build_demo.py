"""Contact Lab demo: build a scene in real Blender (bpy module), bake it, save it, render a contact sheet.

Run with the project's virtual environment (``make demo``)::

    .venv/bin/python demo/build_demo.py [--out out] [--no-render] [--no-bake] [--samples 16]

Scene (Z up, metres, 24 fps):

* a 5-4-3-2-1 pyramid of 15 boxes on a passive ground plane;
* three spheres and two capsules rolling down a tilted passive ramp toward a backstop wall;
* two boxes on 30° lanes: μ = 0.5 slides (tan 30° ≈ 0.577 > μ), μ = 0.7 sticks.
  Each lane has the same friction as its box, so every friction-combine rule except Product gives
  exactly that μ for the pair.

Outputs: ``out/demo.blend`` (baked), ``out/frames/frame_####.png``, ``out/demo_contact_sheet.png``
(3 × 2 frames) and a copy of the sheet in ``docs/demo_contact_sheet.png``.

Only public scripting names of the add-on are used: ``obj.contact_lab.role/shape/mass/friction/
restitution``, ``scene.contact_lab.frame_start/frame_end/substeps/solver/iterations/tolerance``,
``bpy.ops.contact_lab.bake()`` and ``scene.contact_lab.last_report``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import shutil
import sys
import time
import traceback
from pathlib import Path

import bpy
import numpy as np

bmesh = importlib.import_module("bmesh")  # importable only once bpy is imported

REPO = Path(__file__).resolve().parent.parent

FPS = 24
FRAME_START = 1
FRAME_END = 108  # 4.5 s
SHEET_FRAMES = (1, 22, 43, 64, 86, 108)
SHEET_COLUMNS = 3
FRAME_W, FRAME_H = 480, 270
SHEET_BORDER = 6  # px of white between and around the frames

INCLINE_DEG = 30.0
RAMP_DEG = 15.0

# ---------------------------------------------------------------------------------------------
# materials


def _srgb_to_linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _hex(rgb_hex: str) -> tuple[float, float, float, float]:
    """'#rrggbb' (sRGB, as a colour picker shows it) -> linear RGBA for a shader socket."""
    h = rgb_hex.lstrip("#")
    return (*(_srgb_to_linear(int(h[i : i + 2], 16) / 255.0) for i in (0, 2, 4)), 1.0)


def make_material(name: str, color: str, roughness: float = 0.55, checker: str | None = None, scale: float = 4.0):
    """Principled material; with ``checker`` a two-tone procedural checker so rolling reads in stills."""
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):
        mat.use_nodes = True  # always on (and deprecated) from 5.0
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = next(n for n in nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = _hex(color)
    bsdf.inputs["Roughness"].default_value = roughness
    mat.diffuse_color = _hex(color)  # viewport / Workbench colour
    if checker is not None:
        coords = nodes.new("ShaderNodeTexCoord")
        tex = nodes.new("ShaderNodeTexChecker")
        tex.inputs["Color1"].default_value = _hex(color)
        tex.inputs["Color2"].default_value = _hex(checker)
        tex.inputs["Scale"].default_value = scale
        links.new(coords.outputs["Object"], tex.inputs["Vector"])
        links.new(tex.outputs["Color"], bsdf.inputs["Base Color"])
    return mat


# ---------------------------------------------------------------------------------------------
# geometry (bmesh + data API only: no operators, no context needed)


def _mesh_from_bmesh(name: str, bm: bmesh.types.BMesh, smooth: bool = False) -> bpy.types.Mesh:
    me = bpy.data.meshes.new(name)
    bm.to_mesh(me)
    bm.free()
    if smooth:
        me.polygons.foreach_set("use_smooth", np.ones(len(me.polygons), dtype=bool))
    me.update()
    return me


def box_mesh(name: str, size: tuple[float, float, float]) -> bpy.types.Mesh:
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=size, verts=bm.verts)
    return _mesh_from_bmesh(name, bm)


def sphere_mesh(name: str, radius: float) -> bpy.types.Mesh:
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=radius)
    return _mesh_from_bmesh(name, bm, smooth=True)


def capsule_mesh(name: str, radius: float, height: float) -> bpy.types.Mesh:
    """Capsule along local Z with total height ``height`` (hemispheres included)."""
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=radius)
    half = 0.5 * (height - 2.0 * radius)
    for v in bm.verts:
        if v.co.z > 1e-6:
            v.co.z += half
        elif v.co.z < -1e-6:
            v.co.z -= half
    return _mesh_from_bmesh(name, bm, smooth=True)


def plane_mesh(name: str, size: float) -> bpy.types.Mesh:
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=0.5 * size)
    return _mesh_from_bmesh(name, bm)


# ---------------------------------------------------------------------------------------------
# scene


class SceneBuilder:
    """Creates objects and remembers the Contact Lab settings to apply once the add-on is registered."""

    def __init__(self, scene: bpy.types.Scene, collection_name: str = "Contact Lab Demo"):
        self.scene = scene
        self.collection = bpy.data.collections.new(collection_name)
        scene.collection.children.link(self.collection)
        self.physics: dict[str, dict] = {}

    def add(self, name, mesh, material, location, rotation=(0.0, 0.0, 0.0), **physics):
        obj = bpy.data.objects.new(name, mesh)
        obj.location = location
        obj.rotation_euler = rotation
        mesh.materials.append(material)
        self.collection.objects.link(obj)
        if physics:
            self.physics[obj.name] = physics
        return obj

    def apply_physics(self) -> int:
        """Write the remembered settings to ``obj.contact_lab`` (needs the registered add-on)."""
        for name, settings in self.physics.items():
            props = bpy.data.objects[name].contact_lab
            for key, value in settings.items():
                setattr(props, key, value)
        return len(self.physics)


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
    m_rows = [
        make_material(f"Pyramid row {i}", c)
        for i, c in enumerate(("#e4572e", "#f3a712", "#e9d758", "#76b041", "#2e86ab"))
    ]
    m_ball = [
        make_material("Ball A", "#f25f5c", checker="#fdfdfd", scale=3.0),
        make_material("Ball B", "#247ba0", checker="#fdfdfd", scale=3.0),
        make_material("Ball C", "#70c1b3", checker="#fdfdfd", scale=3.0),
    ]
    m_capsule = make_material("Capsule", "#9b5de5", checker="#fdfdfd", scale=3.0)
    m_slides = make_material("Slides mu 0.5", "#d62828")
    m_sticks = make_material("Sticks mu 0.7", "#2a9d8f")

    # ground: infinite plane through the origin
    b.add("Ground", plane_mesh("Ground", 60.0), m_ground, (0, 0, 0), role="PASSIVE", shape="PLANE", friction=0.6)

    # box pyramid 5-4-3-2-1 (15 boxes of 0.5 m, 10 kg) ------------------------------------------
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

    # ramp (15°, descending toward +X), rolling spheres and capsules, backstop wall --------------
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

    # friction threshold: two 30° lanes, μ = 0.5 (slides) in front, μ = 0.7 (sticks) behind -------
    lane_size = (4.0, 0.9, 0.2)
    a = math.radians(INCLINE_DEG)
    lane_z = 0.03 + 0.5 * lane_size[0] * math.sin(a) - 0.5 * lane_size[2] * math.cos(a)
    box = 0.4
    for name, mu, y, mat in (("Slides", 0.5, 0.3, m_slides), ("Sticks", 0.7, 2.7, m_sticks)):
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

    add_camera_and_light(scene)
    return b


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
    add_light_and_world(scene)


def add_light_and_world(scene: bpy.types.Scene) -> None:
    """A soft sun and a pale sky shared by the demo scenes."""
    sun_data = bpy.data.lights.new("Sun", type="SUN")
    sun_data.energy = 3.5
    sun_data.angle = math.radians(8.0)
    sun = bpy.data.objects.new("Sun", sun_data)
    sun.rotation_euler = (math.radians(40.0), math.radians(15.0), math.radians(-35.0))
    scene.collection.objects.link(sun)

    world = bpy.data.worlds.new("World")
    if bpy.app.version < (5, 0, 0):
        world.use_nodes = True
    bg = world.node_tree.nodes.get("Background")
    if bg is not None:
        bg.inputs["Color"].default_value = _hex("#dfe6ee")
        bg.inputs["Strength"].default_value = 0.6
    world.color = _hex("#dfe6ee")[:3]
    scene.world = world


# ---------------------------------------------------------------------------------------------
# add-on and bake


def register_addon() -> bool:
    """Register Contact Lab in-process; False (with a notice) while the bridge does not exist yet."""
    if importlib.util.find_spec("contact_lab.registration") is None:
        print("NOTICE: contact_lab.registration not found: building and rendering the scene without a bake")
        return False
    import contact_lab

    contact_lab.register()
    return True


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
# rendering


def configure_render(scene: bpy.types.Scene, samples: int) -> list[str]:
    r = scene.render
    r.resolution_x, r.resolution_y, r.resolution_percentage = FRAME_W, FRAME_H, 100
    r.image_settings.file_format = "PNG"
    r.image_settings.color_mode = "RGB"
    r.film_transparent = False
    try:
        scene.view_settings.view_transform = "AgX"
    except TypeError:
        pass
    # the engine enum is dynamic (add-on engines): probe by assignment. Cycles is an add-on.
    try:
        import addon_utils

        addon_utils.enable("cycles", default_set=True)
    except Exception as exc:
        print(f"  NOTICE: could not enable Cycles ({exc})")
    order = []
    for engine in ("CYCLES", "BLENDER_EEVEE_NEXT", "BLENDER_EEVEE", "BLENDER_WORKBENCH"):
        try:
            scene.render.engine = engine
            order.append(engine)
        except TypeError:
            pass
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "MATERIAL"
    scene.display.shading.show_shadows = True
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.cycles.use_adaptive_sampling = True
    scene.cycles.max_bounces = 4
    scene.cycles.seed = 0
    r.threads_mode = "AUTO"
    return order


def render_frames(scene: bpy.types.Scene, frames_dir: Path, samples: int) -> tuple[str, list[Path]]:
    frames_dir.mkdir(parents=True, exist_ok=True)
    errors = []
    for engine in configure_render(scene, samples):
        scene.render.engine = engine
        paths = []
        try:
            for f in SHEET_FRAMES:
                t0 = time.perf_counter()
                scene.frame_set(f)
                path = frames_dir / f"frame_{f:04d}.png"
                scene.render.filepath = str(path)
                bpy.ops.render.render(write_still=True)
                if not path.is_file():
                    raise RuntimeError(f"{engine} wrote no image for frame {f}")
                paths.append(path)
                print(f"  rendered frame {f:4d} with {engine} in {time.perf_counter() - t0:.1f} s")
            return engine, paths
        except Exception as exc:  # try the next engine: EEVEE/Workbench need a GPU context headless
            errors.append(f"{engine}: {exc}")
            print(f"  NOTICE: render engine {engine} failed ({exc}); trying the next one")
    raise RuntimeError("no render engine worked: " + "; ".join(errors))


def load_rgb(path: Path) -> np.ndarray:
    """(H, W, 3) float32 in [0, 1] as stored in the file (display-referred), rows top first."""
    img = bpy.data.images.load(str(path), check_existing=False)
    w, h = img.size
    px = np.empty(w * h * img.channels, dtype=np.float32)
    img.pixels.foreach_get(px)
    rgb = px.reshape(h, w, img.channels)[::-1, :, :3].copy()
    bpy.data.images.remove(img)
    return rgb


def compose_sheet(paths: list[Path], out_path: Path) -> None:
    tiles = [load_rgb(p) for p in paths]
    h, w = tiles[0].shape[:2]
    cols = SHEET_COLUMNS
    rows = math.ceil(len(tiles) / cols)
    bd = SHEET_BORDER
    sheet = np.ones((rows * h + (rows + 1) * bd, cols * w + (cols + 1) * bd, 3), np.float32)
    for k, tile in enumerate(tiles):
        r, c = divmod(k, cols)
        y0, x0 = bd + r * (h + bd), bd + c * (w + bd)
        sheet[y0 : y0 + h, x0 : x0 + w] = tile
    H, W = sheet.shape[:2]
    rgba = np.ones((H, W, 4), np.float32)
    rgba[..., :3] = sheet[::-1]  # Blender images start at the bottom row
    img = bpy.data.images.new("Contact sheet", W, H, alpha=False, float_buffer=False)
    img.pixels.foreach_set(rgba.ravel())
    img.filepath_raw = str(out_path)
    img.file_format = "PNG"
    img.save()
    bpy.data.images.remove(img)


# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "out", help="output folder (default: out/)")
    ap.add_argument("--docs", type=Path, default=REPO / "docs", help="where the README's sheet copy goes")
    ap.add_argument("--samples", type=int, default=16, help="Cycles samples per pixel (default 16)")
    ap.add_argument("--substeps", type=int, default=8, help="solver substeps per frame (default 8)")
    ap.add_argument("--solver", default="PROX", choices=("PROX", "PGS"))
    ap.add_argument("--no-bake", action="store_true", help="build and render the scene only")
    ap.add_argument("--no-render", action="store_true", help="skip the contact sheet")
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    print(f"Contact Lab demo: Blender {bpy.app.version_string} (bpy module), numpy {np.__version__}")
    args.out.mkdir(parents=True, exist_ok=True)

    builder = build_scene()
    scene = bpy.context.scene
    n_bodies = len(builder.physics)
    print(f"Scene built: {len(builder.collection.objects)} objects, {n_bodies} with Contact Lab settings")

    registered = register_addon()
    if registered:
        builder.apply_physics()
    baked = False
    if registered and not args.no_bake:
        try:
            info = bake(scene, args.substeps, args.solver)
        except Exception:
            traceback.print_exc()
            blend = args.out / "demo_unbaked.blend"
            bpy.ops.wm.save_as_mainfile(filepath=str(blend))
            print(f"ERROR: the bake failed (traceback above); the unbaked scene is in {blend}")
            return 1
        print_report(info, builder)
        check_friction_threshold()
        baked = True

    blend = args.out / "demo.blend"
    scene.frame_set(FRAME_START)
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    print(f"Saved {blend}{'' if baked else ' (NOT baked)'}")

    if not args.no_render:
        t0 = time.perf_counter()
        engine, paths = render_frames(scene, args.out / "frames", args.samples)
        sheet = args.out / "demo_contact_sheet.png"
        compose_sheet(paths, sheet)
        args.docs.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sheet, args.docs / sheet.name)
        print(
            f"Contact sheet ({engine}, frames {', '.join(map(str, SHEET_FRAMES))}, "
            f"{time.perf_counter() - t0:.1f} s): {sheet} and {args.docs / sheet.name}"
        )

    print(f"Demo finished in {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
