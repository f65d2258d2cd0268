"""What the five demo scripts share: materials, meshes, the scene builder, light and titled cameras, the bake
operator and its report, reading the baked result back, rendering, the contact sheet and the pass/fail checks.

Only public scripting names of the add-on are used (``obj.contact_lab``, ``scene.contact_lab``,
``bpy.ops.contact_lab.bake()``, ``scene.contact_lab.last_report``). Units: metres, seconds; colours are
'#rrggbb' sRGB strings as a colour picker shows them.
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
from collections.abc import Callable
from pathlib import Path

import bpy
import numpy as np
from mathutils import Vector

bmesh = importlib.import_module("bmesh")  # importable only once bpy is imported

REPO = Path(__file__).resolve().parent.parent
# The contact sheets the README shows. A demo writes here only with --docs (`make pictures`): every other file it
# writes goes under --out (out/, which git ignores), so `make demo` leaves the checkout as it was.
DOCS = REPO / "docs"
# the read-back of a baked mesh is the one the Blender tests use (demos and tests stay in the repository)
sys.path.insert(0, str(REPO / "tests" / "blender"))
from mesh_readback import evaluated_world, world_matrices  # noqa: E402, F401  (world_matrices: the demos use it)

FPS = 24
FRAME_W, FRAME_H = 480, 270  # rendered frame [px]
SHEET_COLUMNS = 3
SHEET_BORDER = 6  # px of white between and around the frames

# ---------------------------------------------------------------------------------------------
# materials


def _srgb_to_linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def hex_color(rgb_hex: str) -> tuple[float, float, float, float]:
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
    bsdf.inputs["Base Color"].default_value = hex_color(color)
    bsdf.inputs["Roughness"].default_value = roughness
    mat.diffuse_color = hex_color(color)  # viewport / Workbench colour
    if checker is not None:
        coords = nodes.new("ShaderNodeTexCoord")
        tex = nodes.new("ShaderNodeTexChecker")
        tex.inputs["Color1"].default_value = hex_color(color)
        tex.inputs["Color2"].default_value = hex_color(checker)
        tex.inputs["Scale"].default_value = scale
        links.new(coords.outputs["Object"], tex.inputs["Vector"])
        links.new(tex.outputs["Color"], bsdf.inputs["Base Color"])
    return mat


# ---------------------------------------------------------------------------------------------
# geometry (bmesh + data API only: no operators, no context needed)


def mesh_from_bmesh(name: str, bm: bmesh.types.BMesh, smooth: bool = False) -> bpy.types.Mesh:
    me = bpy.data.meshes.new(name)
    bm.to_mesh(me)
    bm.free()
    if smooth:
        me.polygons.foreach_set("use_smooth", np.ones(len(me.polygons), dtype=bool))
    me.update()
    return me


def welded_bmesh(name: str, verts, faces) -> bmesh.types.BMesh:
    """A BMesh of the polygons ``faces`` over ``verts`` (V, 3) [m], vertices closer than 1e-7 m merged (the rings
    of a profile turned about an axis collapse to a point there)."""
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts, [], faces)
    bm = bmesh.new()
    bm.from_mesh(me)
    bpy.data.meshes.remove(me)
    bmesh.ops.remove_doubles(bm, verts=bm.verts[:], dist=1e-7)
    return bm


def box_mesh(name: str, size: tuple[float, float, float]) -> bpy.types.Mesh:
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=size, verts=bm.verts)
    return mesh_from_bmesh(name, bm)


def sphere_mesh(name: str, radius: float) -> bpy.types.Mesh:
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=radius)
    return mesh_from_bmesh(name, bm, smooth=True)


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
    return mesh_from_bmesh(name, bm, smooth=True)


def plane_mesh(name: str, size: float) -> bpy.types.Mesh:
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=0.5 * size)
    return mesh_from_bmesh(name, bm)


# ---------------------------------------------------------------------------------------------
# geometry shared beyond the rigid demo


def icosphere_mesh(name: str, radius: float, subdivisions: int) -> bpy.types.Mesh:
    bm = bmesh.new()
    bmesh.ops.create_icosphere(bm, subdivisions=subdivisions, radius=radius)
    return mesh_from_bmesh(name, bm, smooth=True)


def subdivided_box_mesh(name: str, size, cuts: int) -> bpy.types.Mesh:
    """Box of ``size`` centred on the origin, every edge cut ``cuts`` times (the vertices are the contact points)."""
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.subdivide_edges(bm, edges=bm.edges[:], cuts=cuts, use_grid_fill=True)
    bmesh.ops.scale(bm, vec=size, verts=bm.verts)
    return mesh_from_bmesh(name, bm)


# ---------------------------------------------------------------------------------------------
# scenes


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


def with_rigid_body(obj, **settings) -> None:
    """Give ``obj`` a Blender rigid body as the Physics tab does (``rigidbody.object_add``), then set it."""
    view_layer = bpy.context.view_layer
    for other in view_layer.objects.selected:
        other.select_set(False)
    view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.rigidbody.object_add()
    obj.select_set(False)
    for key, value in settings.items():
        setattr(obj.rigid_body, key, value)


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
        bg.inputs["Color"].default_value = hex_color("#dfe6ee")
        bg.inputs["Strength"].default_value = 0.6
    world.color = hex_color("#dfe6ee")[:3]
    scene.world = world


class TitledScene:
    """One scene of a demo (the soft, IPC and rigid mesh demos): a fresh factory file named ``scene_name``, its
    objects in the collection ``collection_name``, a light, a camera with a title and a clock, frames 1 to
    ``frame_end`` at :data:`FPS`."""

    def __init__(self, key: str, title: str, frame_end: int, scene_name: str, collection_name: str):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        self.key = key
        self.title = title
        self.scene = scene = bpy.context.scene
        scene.name = scene_name
        scene.render.fps = FPS
        scene.frame_start, scene.frame_end = 1, frame_end
        scene.frame_set(1)
        self.builder = SceneBuilder(scene, collection_name)
        self.checked: dict = {}
        """What the scene's check needs (objects, directions)."""
        self.clock = None
        add_light_and_world(scene)

    def add(self, *args, **kwargs):
        return self.builder.add(*args, **kwargs)

    def camera(self, location, target, lens: float = 35.0) -> None:
        """The scene camera, with the title (top left) and a clock (bottom right) parented to it."""
        data = bpy.data.cameras.new("Camera")
        data.lens = lens
        data.clip_start = 0.01
        cam = bpy.data.objects.new("Camera", data)
        cam.location = location
        cam.rotation_euler = (Vector(target) - Vector(location)).to_track_quat("-Z", "Y").to_euler()
        self.scene.collection.objects.link(cam)
        self.scene.camera = cam
        m_text = make_material("Caption", "#1d2733", roughness=0.9)
        depth = 0.05  # nearer than anything in the scene
        half_w = depth * 18.0 / lens  # sensor 36 mm wide
        half_h = half_w * FRAME_H / FRAME_W
        for text, local, align in (
            (self.title, (-half_w * 0.95, half_h * 0.80, -depth), "LEFT"),
            ("t = 0.00 s", (half_w * 0.95, -half_h * 0.90, -depth), "RIGHT"),
        ):
            curve = bpy.data.curves.new(f"Caption {text}", type="FONT")
            curve.body = text
            curve.size = 0.075 * half_w
            curve.align_x = align
            obj = bpy.data.objects.new(f"Caption {text}", curve)
            obj.parent = cam
            obj.location = local
            curve.materials.append(m_text)
            self.builder.collection.objects.link(obj)
        self.clock = curve


def ground(d: TitledScene, mu: float) -> None:
    """A passive infinite plane through the origin with friction ``mu``, in the demos' checker."""
    mat = make_material("Ground", "#d6d1c8", roughness=0.8, checker="#c5bfb5", scale=1.0)
    d.add("Ground", plane_mesh("Ground", 20.0), mat, (0, 0, 0), role="PASSIVE", shape="PLANE", friction=mu)


# ---------------------------------------------------------------------------------------------
# add-on, bake, reading the result back


def register_addon() -> bool:
    """Register Contact Lab in-process; False (with a notice) while the bridge does not exist yet."""
    if importlib.util.find_spec("contact_lab.registration") is None:
        print("NOTICE: contact_lab.registration not found: building and rendering the scene without a bake")
        return False
    import contact_lab

    contact_lab.register()
    return True


def run_bake(scene: bpy.types.Scene) -> dict:
    """Run ``bpy.ops.contact_lab.bake()``; its report (``scene.contact_lab.last_report``) with ``wall_seconds``."""
    t0 = time.perf_counter()
    result = bpy.ops.contact_lab.bake()
    wall = time.perf_counter() - t0
    if result != {"FINISHED"}:
        raise RuntimeError(f"bpy.ops.contact_lab.bake() returned {result}")
    report = json.loads(scene.contact_lab.last_report)
    report["wall_seconds"] = wall
    return report


def bake_scene(d: TitledScene) -> dict:
    """Write the scene's deferred Contact Lab settings, then bake it (:func:`run_bake`)."""
    d.builder.apply_physics()
    return run_bake(d.scene)


def trajectory(obj, frame_count: int) -> np.ndarray:
    """(F, V, 3) world positions of the evaluated mesh at frames 1..frame_count."""
    out = np.stack([evaluated_world(obj, f) for f in range(1, frame_count + 1)])
    bpy.context.scene.frame_set(1)
    return out


# ---------------------------------------------------------------------------------------------
# rendering, contact sheet, checks


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


def print_lattice_bake(key: str, report: dict, setup: str, details: str) -> None:
    """Print a soft or IPC bake's numbers from its report (``setup`` follows the frame count, ``details`` the
    Newton iterations), then its warnings."""
    st = report["stats"]
    print(
        f"Bake '{key}' ({report['frames']['count']} frames{setup}): {st['tets']} tets, {st['vertices']} lattice and "
        f"{st['render_vertices']} mesh vertices; Newton iterations max {st['max_newton_iterations']}, mean "
        f"{st['mean_newton_iterations']:.1f}; {details}; {report['wall_seconds']:.1f} s"
    )
    if report.get("warnings"):
        print("  warnings: " + "; ".join(report["warnings"]))


def render_still(scene: bpy.types.Scene, path: Path, engine: str, what: str, started: float) -> Path:
    """Render the scene's current frame with ``engine`` to the PNG ``path`` and print the seconds since
    ``started`` (a ``time.perf_counter()``); ``what`` names the image in the messages."""
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    if not path.is_file():
        raise RuntimeError(f"{engine} wrote no image for {what}")
    print(f"  rendered {what} with {engine} in {time.perf_counter() - started:.1f} s")
    return path


def render_scene(d: TitledScene, frames_dir: Path, samples: int, sheet_frames) -> tuple[str, list[Path]]:
    """Render ``sheet_frames`` of the scene with the demos' render settings (Cycles on the CPU, else the next
    engine), its clock showing each frame's time; the engine and the image paths."""
    scene = d.scene
    frames_dir.mkdir(parents=True, exist_ok=True)
    engine = configure_render(scene, samples)[0]
    scene.render.engine = engine
    paths = []
    for f in sheet_frames:
        t0 = time.perf_counter()
        d.clock.body = f"t = {(f - 1) / FPS:.2f} s"
        scene.frame_set(f)
        paths.append(render_still(scene, frames_dir / f"{d.key}_{f:04d}.png", engine, f"{d.key}, frame {f}", t0))
    d.clock.body = "t = 0.00 s"
    scene.frame_set(1)
    return engine, paths


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


class Checks:
    """The demo's expected behaviours: each a name, pass or fail and the measured value."""

    def __init__(self):
        self.rows: list[tuple[str, bool, str]] = []

    def expect(self, what: str, ok: bool, detail: str) -> None:
        self.rows.append((what, bool(ok), detail))

    @property
    def failed(self) -> list[str]:
        return [w for w, ok, _ in self.rows if not ok]

    def report(self, summary: str) -> int:
        """Print every expectation and ``summary``; return the process exit code (1 if any failed)."""
        print("Expected behaviours:")
        for what, ok, detail in self.rows:
            print(f"  [{'pass' if ok else 'FAIL'}] {what}: {detail}")
        print(summary)
        if self.failed:
            print(f"ERROR: {len(self.failed)} expected behaviour(s) failed: {'; '.join(self.failed)}")
            return 1
        return 0


# ---------------------------------------------------------------------------------------------
# the scripts' common skeleton


def arguments(description: str, samples: int = 12) -> argparse.ArgumentParser:
    """The options every demo takes: ``--out`` (default out/), ``--docs`` (also copy the contact sheet into docs/),
    ``--samples`` (default ``samples``), ``--no-render``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", type=Path, default=REPO / "out", help="output folder (default: out/)")
    ap.add_argument("--docs", action="store_true", help="also copy the contact sheet into docs/ (the README's)")
    ap.add_argument("--samples", type=int, default=samples, help=f"Cycles samples per pixel (default {samples})")
    ap.add_argument("--no-render", action="store_true", help="skip the contact sheet")
    return ap


def scene_keys(ap: argparse.ArgumentParser, argv: list[str], builders: dict) -> tuple[argparse.Namespace, list[str]]:
    """Parse ``argv`` with an ``--only`` option choosing among ``builders``' scenes; the arguments and the keys."""
    ap.add_argument("--only", default=",".join(builders), help="comma-separated scenes (the sheet needs all)")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.only.split(",") if k.strip()]
    unknown = sorted(set(keys) - set(builders))
    if unknown:
        ap.error(f"unknown scene(s) {', '.join(unknown)}; choose from {', '.join(builders)}")
    return args, keys


def save_unbaked(out: Path, stem: str, what: str) -> int:
    """After a failed bake (its traceback already printed): save ``<stem>_unbaked.blend``; the exit code, 1."""
    blend = out / f"{stem}_unbaked.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    print(f"ERROR: {what} failed (traceback above); the unbaked scene is in {blend}")
    return 1


def save(out: Path, stem: str, note: str = "") -> None:
    """Save the open file as ``out/<stem>.blend``."""
    blend = out / f"{stem}.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    print(f"Saved {blend}{note}")


def publish_sheet(paths: list[Path], sheet: Path, to_docs: bool) -> str:
    """Compose the contact sheet of ``paths`` into ``sheet``; with ``to_docs`` (``--docs``) also copy it into docs/
    for the README. The files written, as a phrase for the log ("out/x.png and docs/x.png")."""
    compose_sheet(paths, sheet)
    if not to_docs:
        return str(sheet)
    copy = DOCS / sheet.name
    if copy.resolve() != sheet.resolve():
        shutil.copyfile(sheet, copy)
    return f"{sheet} and {copy}"


def run_scenes(argv: list[str], doc: str, title: str, builders: dict, sheet_frames: dict, after_bake: Callable) -> int:
    """The soft and IPC demos' run: build, bake, check and save every scene chosen with ``--only``, render its
    ``sheet_frames[key]``, compose the contact sheet (one row per scene) when all were baked; the exit code.

    ``builders[key]()`` returns a :class:`TitledScene`; ``after_bake(key, scene, report, checks)`` prints the
    bake's numbers, adds the scene's expectations to ``checks`` and returns a summary line to repeat at the end
    (or None). ``title`` names the demo ("soft", "IPC"): its files are ``<title>_demo_<key>.blend``.
    """
    args, keys = scene_keys(arguments(doc.splitlines()[0]), argv, builders)
    stem = f"{title.lower()}_demo"
    t_start = time.perf_counter()
    print(f"Contact Lab {title} demo: Blender {bpy.app.version_string} (bpy module), numpy {np.__version__}")
    args.out.mkdir(parents=True, exist_ok=True)
    if not register_addon():
        print("ERROR: the Contact Lab add-on could not be registered")
        return 1
    checks = Checks()
    sheet: list[Path] = []
    lines: list[str] = []
    bake_seconds = 0.0
    engine = ""
    for key in keys:
        d = builders[key]()
        try:
            report = bake_scene(d)
        except Exception:
            traceback.print_exc()
            return save_unbaked(args.out, f"{stem}_{key}", f"the bake of '{key}'")
        bake_seconds += report["wall_seconds"]
        line = after_bake(key, d, report, checks)
        if line is not None:
            lines.append(line)
            print(line)
        save(args.out, f"{stem}_{key}")
        if not args.no_render:
            engine, paths = render_scene(d, args.out / f"{title.lower()}_frames", args.samples, sheet_frames[key])
            sheet += paths
    if sheet and len(keys) == len(builders):
        path = args.out / f"{stem}_contact_sheet.png"
        written = publish_sheet(sheet, path, args.docs)  # three columns: the three frames of a scene per row
        print(f"Contact sheet ({engine}): {written}")
    if lines:
        print("\n".join(lines))
    name = title[:1].upper() + title[1:]
    return checks.report(f"{name} demo finished in {time.perf_counter() - t_start:.1f} s ({bake_seconds:.1f} s baking)")
