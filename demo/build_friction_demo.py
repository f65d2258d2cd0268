"""Contact Lab friction demo: texture, structure-field and Matchstick friction, built and baked in real Blender.

Run with the project's virtual environment (``make demo`` runs it after ``demo/build_demo.py``)::

    .venv/bin/python demo/build_friction_demo.py [--out out] [--docs] [--no-render] [--samples 12]

Three scenes side by side in one .blend, one bake (PROX), one camera each (Z up, metres, 24 fps):

a. **Sawtooth** (course §6.3, Fig. 40): a 19.8° ramp whose material carries a procedural ratchet normal map
   (Image Texture, Non-Color → Normal Map node → Principled BSDF Normal; a ridge period of 4 cm). The ramp
   is split into three lanes whose UVs are turned so the cube on each lane slides *along the ridges* (no
   plowing: slides), *into the steep faces* (μ + plowing ≈ 0.57 > tan 19.8° = 0.36: sticks) and *with the
   gentle faces* (μ + plowing ≈ 0.32 < 0.36: slides, a little slower than along the ridges).
b. **Logs steered by a structure field** (course Fig. 37): a slope with a FLOAT_VECTOR point attribute
   ``grain`` that turns from the fall line by up to 60° toward +Y; ANISOTROPIC friction, μ 0.08 along the
   grain, 0.9 across. Logs (capsules lying along the fall line) and a box curve away from the fall line;
   on a second, isotropic (Coulomb μ 0.08) slope the same bodies run straight down.
c. **Matchstick** (course §6.1.2, Alg. 21): a 22.8° incline with MATCHSTICK friction (μ 0.6, μ along 0.2,
   μ across 0.8) and its structure along the fall line; three boxes with the same settings whose
   structure axis (local X) is turned 0°, 45° and 90° about their normal: parallel slides fast
   (μ = 0.2), 45° slides slowly (ellipse 0.35 / 0.65 around the bisector), orthogonal is isotropic
   (μ = 0.6 > tan 22.8° = 0.42) and sticks.

The script prints the bake time, per-object displacements and a pass/fail line per expected behaviour,
and exits 1 when one fails (so ``make demo`` catches friction regressions).

Outputs: ``out/friction_demo.blend`` (baked), ``out/friction_frames/*.png``,
``out/friction_demo_contact_sheet.png`` (3 × 2: one column per scene, first frame on top, last frame
below); with ``--docs`` (``make pictures``) also a copy in ``docs/friction_demo_contact_sheet.png``.

Only public scripting names of the add-on are used: ``obj.contact_lab.role/shape/mass/friction/
friction_model/friction_t/friction_b/structure_source/structure_attribute/structure_axis/texture_patch_size``,
``scene.contact_lab.frame_start/frame_end/substeps/solver/iterations/tolerance/last_report`` and
``bpy.ops.contact_lab.bake()``.
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
from mathutils import Matrix, Vector

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402  (materials, meshes, scene builder, light, render, sheet and checks)
from common import FPS, FRAME_H, FRAME_W, Checks  # noqa: E402

FRAME_START = 1
FRAME_END = 73  # 3 s
SHEET_FRAMES = (FRAME_START, FRAME_END)

# a. sawtooth -------------------------------------------------------------------------------------
SAW_ORIGIN = np.array([-14.0, 0.0, 0.0])
SAW_DEG = 19.8  # tan = 0.360
SAW_MU = 0.3
SAW_PERIOD = 0.04  # [m] one ridge period in UV space = 1
SAW_PATCH = 0.08  # [m] two periods per patch
SAW_STEEP_FRACTION = 0.7  # of each period: faces tilted SAW_STEEP_DEG toward +U
SAW_STEEP_DEG = 35.0
SAW_GENTLE_DEG = 6.0  # the rest: tilted toward -U
# (2/pi) theta plowing: into the steep faces (moving -U) 0.7 * 0.389 = 0.272, into the gentle ones 0.020

# b. logs ------------------------------------------------------------------------------------------
LOGS_ORIGIN = np.array([0.0, 0.0, 0.0])
LOGS_DEG = 11.0  # tan = 0.194
LOGS_MU_ALONG, LOGS_MU_ACROSS = 0.1, 0.9
LOGS_TURN_DEG = 55.0
LOGS_SIZE = (6.5, 5.0, 0.2)
LOGS_LANES = (-1.8, -0.9, 0.0)  # y of the bodies on each slope (slope frame)
LOGS_SLOPE_Y = (2.8, -2.8)  # field slope, isotropic slope
LOG_BODIES = (  # (size [m], name, mass [kg], material) per lane
    ((1.2, 0.26, 0.26), "log long", 30.0, "log"),
    ((0.4, 0.4, 0.4), "crate", 8.0, "box"),
    ((0.8, 0.22, 0.22), "log short", 15.0, "log"),
)

# c. matchstick -----------------------------------------------------------------------------------
MATCH_ORIGIN = np.array([14.0, 0.0, 0.0])
MATCH_DEG = 23.75  # tan = 0.440
MATCH_MU, MATCH_MU_T, MATCH_MU_B = 0.5, 0.25, 0.8
MATCH_ANGLES = (0.0, 45.0, 90.0)

# ---------------------------------------------------------------------------------------------
# geometry


def slab_mesh(name: str, size, nx: int, ny: int) -> bpy.types.Mesh:
    """Box of ``size`` centred on the origin; its top face is an ``nx`` × ``ny`` grid of quads."""
    lx, ly, lz = size
    xs = np.linspace(-lx / 2, lx / 2, nx + 1)
    ys = np.linspace(-ly / 2, ly / 2, ny + 1)
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    top = np.stack([gx, gy, np.full_like(gx, lz / 2)], -1).reshape(-1, 3)
    bot = top.copy()
    bot[:, 2] = -lz / 2
    verts = np.concatenate([top, bot])
    nt = len(top)

    def vid(i, j, bottom=False):
        return i * (ny + 1) + j + (nt if bottom else 0)

    faces = []
    for i in range(nx):
        for j in range(ny):
            faces.append((vid(i, j), vid(i + 1, j), vid(i + 1, j + 1), vid(i, j + 1)))  # +Z up
            faces.append((vid(i, j, 1), vid(i, j + 1, 1), vid(i + 1, j + 1, 1), vid(i + 1, j, 1)))
    for i in range(nx):  # sides along X (y = -ly/2 faces -Y, y = +ly/2 faces +Y)
        faces.append((vid(i, 0), vid(i, 0, 1), vid(i + 1, 0, 1), vid(i + 1, 0)))
        faces.append((vid(i, ny), vid(i + 1, ny), vid(i + 1, ny, 1), vid(i, ny, 1)))
    for j in range(ny):  # sides along Y
        faces.append((vid(0, j), vid(0, j + 1), vid(0, j + 1, 1), vid(0, j, 1)))
        faces.append((vid(nx, j), vid(nx, j, 1), vid(nx, j + 1, 1), vid(nx, j + 1)))
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts.tolist(), [], faces)
    me.update()
    return me


def corner_positions(me: bpy.types.Mesh) -> tuple[np.ndarray, np.ndarray]:
    """Object-space position of every face corner (loop) and the index of its face."""
    co = np.empty(len(me.vertices) * 3)
    me.vertices.foreach_get("co", co)
    loop_v = np.empty(len(me.loops), np.int32)
    me.loops.foreach_get("vertex_index", loop_v)
    loop_face = np.empty(len(me.loops), np.int32)
    starts = np.empty(len(me.polygons), np.int32)
    totals = np.empty(len(me.polygons), np.int32)
    me.polygons.foreach_get("loop_start", starts)
    me.polygons.foreach_get("loop_total", totals)
    for f, (s, t) in enumerate(zip(starts, totals, strict=True)):
        loop_face[s : s + t] = f
    return co.reshape(-1, 3)[loop_v], loop_face


def slope_matrix(origin, angle_deg: float, yaw_deg: float = 0.0) -> Matrix:
    """World matrix of a slab at ``origin`` tilted ``angle_deg`` about +Y (downhill = local +X), then ``yaw_deg``."""
    return Matrix.Translation(Vector(origin)) @ Matrix.Rotation(math.radians(angle_deg), 4, "Y")


def on_slope(m_slope: Matrix, half_thickness: float, x: float, y: float, clearance: float, yaw_deg: float = 0.0):
    """(location, euler) ``clearance`` above the slab's top at slab-local (x, y), yawed about its normal."""
    m = (
        m_slope
        @ Matrix.Translation((x, y, half_thickness + clearance))
        @ Matrix.Rotation(math.radians(yaw_deg), 4, "Z")
    )
    return tuple(m.translation), tuple(m.to_euler())


def slab_location(origin, angle_deg: float, size, low_top: float = 0.04):
    """Centre of a tilted slab whose low end's top edge sits ``low_top`` above the ground."""
    a = math.radians(angle_deg)
    z = low_top + 0.5 * size[0] * math.sin(a) - 0.5 * size[2] * math.cos(a)
    return np.array([origin[0], origin[1], z])


# ---------------------------------------------------------------------------------------------
# images and materials


def sawtooth_pixels(width: int = 64, height: int = 4) -> np.ndarray:
    """Tangent-space ratchet normal map (RGBA float, bottom row first), constant along V (ridges run along V)."""
    u = (np.arange(width) + 0.5) / width
    steep = u < SAW_STEEP_FRACTION
    n = np.zeros((width, 3))
    ts, tg = math.radians(SAW_STEEP_DEG), math.radians(SAW_GENTLE_DEG)
    n[steep] = (math.sin(ts), 0.0, math.cos(ts))  # faces toward +U: resist motion toward -U
    n[~steep] = (-math.sin(tg), 0.0, math.cos(tg))
    rgba = np.ones((height, width, 4), np.float32)
    rgba[..., :3] = 0.5 * (n[None] + 1.0)
    return rgba


def sawtooth_image() -> bpy.types.Image:
    px = sawtooth_pixels()
    h, w = px.shape[:2]
    img = bpy.data.images.new("Sawtooth normal map", w, h, alpha=True, float_buffer=True)
    img.colorspace_settings.name = "Non-Color"
    img.pixels.foreach_set(px.ravel())
    img.update()
    try:
        img.pack()  # keep the generated pixels in the saved .blend
    except RuntimeError as exc:
        print(f"  NOTICE: could not pack the normal map ({exc})")
    return img


def sawtooth_material(image: bpy.types.Image) -> bpy.types.Material:
    """Normal map on UVs (what the physics reads) + coarse stripes every 8 ridges so the ridge direction shows."""
    mat = common.make_material("Sawtooth ramp", "#5b6b7c", roughness=0.5)
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = next(n for n in nodes if n.type == "BSDF_PRINCIPLED")
    uv = nodes.new("ShaderNodeUVMap")
    uv.uv_map = "UVMap"
    tex = nodes.new("ShaderNodeTexImage")
    tex.image = image
    tex.interpolation = "Closest"
    nmap = nodes.new("ShaderNodeNormalMap")
    nmap.space = "TANGENT"
    nmap.uv_map = "UVMap"
    links.new(uv.outputs["UV"], tex.inputs["Vector"])
    links.new(tex.outputs["Color"], nmap.inputs["Color"])
    links.new(nmap.outputs["Normal"], bsdf.inputs["Normal"])
    # stripes: fract(U / 8) < 0.5 -> two tones
    sep = nodes.new("ShaderNodeSeparateXYZ")
    links.new(uv.outputs["UV"], sep.inputs["Vector"])
    mul = nodes.new("ShaderNodeMath")
    mul.operation = "MULTIPLY"
    mul.inputs[1].default_value = 1.0 / 8.0
    links.new(sep.outputs["X"], mul.inputs[0])
    frac = nodes.new("ShaderNodeMath")
    frac.operation = "FRACT"
    links.new(mul.outputs[0], frac.inputs[0])
    lt = nodes.new("ShaderNodeMath")
    lt.operation = "LESS_THAN"
    lt.inputs[1].default_value = 0.5
    links.new(frac.outputs[0], lt.inputs[0])
    mix = nodes.new("ShaderNodeMix")
    mix.data_type = "RGBA"
    mix.inputs["A"].default_value = common.hex_color("#5b6b7c")
    mix.inputs["B"].default_value = common.hex_color("#8fa3b8")
    links.new(lt.outputs[0], mix.inputs["Factor"])
    links.new(mix.outputs["Result"], bsdf.inputs["Base Color"])
    return mat


def grain_material(name: str, color: str, stripe: str, scale: float = 6.0) -> bpy.types.Material:
    """Wood-like stripes along the object's local X (its structure axis), so the grain direction shows."""
    mat = common.make_material(name, color, roughness=0.6)
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = next(n for n in nodes if n.type == "BSDF_PRINCIPLED")
    coords = nodes.new("ShaderNodeTexCoord")
    wave = nodes.new("ShaderNodeTexWave")
    wave.wave_type = "BANDS"
    wave.bands_direction = "Y"  # bands vary along Y: stripes run along X
    wave.inputs["Scale"].default_value = scale
    wave.inputs["Distortion"].default_value = 1.5
    wave.inputs["Detail"].default_value = 1.0
    ramp = nodes.new("ShaderNodeValToRGB")
    ramp.color_ramp.elements[0].color = common.hex_color(color)
    ramp.color_ramp.elements[1].color = common.hex_color(stripe)
    links.new(coords.outputs["Object"], wave.inputs["Vector"])
    links.new(wave.outputs["Fac"], ramp.inputs["Fac"])
    links.new(ramp.outputs["Color"], bsdf.inputs["Base Color"])
    return mat


# ---------------------------------------------------------------------------------------------
# scene


class Demo:
    """Objects, deferred Contact Lab settings, cameras and the bodies whose motion is checked."""

    def __init__(self):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        self.scene = bpy.context.scene
        self.scene.name = "Contact Lab Friction Demo"
        self.scene.render.fps = FPS
        self.scene.frame_start, self.scene.frame_end = FRAME_START, FRAME_END
        self.scene.frame_set(FRAME_START)
        self.builder = common.SceneBuilder(self.scene, "Contact Lab Friction Demo")
        self.cameras: list[bpy.types.Object] = []
        self.m_label = common.make_material("Label", "#1d2733", roughness=0.9)
        self.m_marker = common.make_material("Start marker", "#1d2733", roughness=0.9)

    def add(self, *args, **kwargs):
        return self.builder.add(*args, **kwargs)

    def marker(self, name: str, location, rotation) -> None:
        """A thin dark square where a body starts (visible once it has moved)."""
        m = Matrix.LocRotScale(Vector(location), Matrix(base_rot(rotation)), None)
        self.add(
            f"Start {name}",
            common.box_mesh(f"Start {name}", (0.12, 0.12, 0.004)),
            self.m_marker,
            m.translation,
            tuple(m.to_euler()),
        )

    def camera(self, name: str, location, target, lens: float = 32.0) -> bpy.types.Object:
        data = bpy.data.cameras.new(name)
        data.lens = lens
        cam = bpy.data.objects.new(name, data)
        cam.location = location
        d = Vector(target) - Vector(location)
        cam.rotation_euler = d.to_track_quat("-Z", "Y").to_euler()
        self.scene.collection.objects.link(cam)
        self.cameras.append(cam)
        return cam

    def label(self, text: str, location, camera: bpy.types.Object, size: float = 0.3, align: str = "CENTER"):
        """Text facing ``camera`` (parallel to its image plane)."""
        curve = bpy.data.curves.new(f"Label {text}", type="FONT")
        curve.body = text
        curve.size = size
        curve.align_x = align
        curve.extrude = 0.005
        obj = bpy.data.objects.new(f"Label {text}", curve)
        obj.location = location
        obj.rotation_euler = camera.rotation_euler
        curve.materials.append(self.m_label)
        self.builder.collection.objects.link(obj)
        return obj

    def hud(self, camera: bpy.types.Object, title: str) -> None:
        """Title in the top-left corner of ``camera``'s view, plus 't = 0 s' / 't = 3 s' switched per frame."""
        depth = 2.0
        half_w = depth * 18.0 / camera.data.lens  # sensor 36 mm wide
        half_h = half_w * FRAME_H / FRAME_W
        for text, local, shown in (
            (title, (-half_w * 0.95, half_h * 0.80, -depth), None),
            ("t = 0 s", (half_w * 0.95, -half_h * 0.90, -depth), FRAME_START),
            (f"t = {(FRAME_END - FRAME_START) / FPS:g} s", (half_w * 0.95, -half_h * 0.90, -depth), FRAME_END),
        ):
            curve = bpy.data.curves.new(f"HUD {camera.name} {text}", type="FONT")
            curve.body = text
            curve.size = 0.075 if shown is None else 0.07
            curve.align_x = "LEFT" if shown is None else "RIGHT"
            obj = bpy.data.objects.new(f"HUD {camera.name} {text}", curve)
            obj.parent = camera
            obj.location = local
            curve.materials.append(self.m_label)
            self.builder.collection.objects.link(obj)
            if shown is not None:
                for f in (FRAME_START, FRAME_END):
                    obj.hide_render = f != shown
                    obj.keyframe_insert("hide_render", frame=f)
                for fc in _fcurves(obj):
                    for kp in fc.keyframe_points:
                        kp.interpolation = "CONSTANT"


def _fcurves(obj):
    """F-curves of an object's action (layered actions in Blender 5: through the channelbag)."""
    action = obj.animation_data.action
    if hasattr(action, "fcurves"):
        return list(action.fcurves)
    out = []
    for layer in action.layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                out.extend(bag.fcurves)
    return out


def base_rot(euler) -> Matrix:
    from mathutils import Euler

    return Euler(euler).to_matrix()


def build_sawtooth(d: Demo, ground_mu: float) -> dict:
    size = (3.4, 2.4, 0.12)
    c = slab_location(SAW_ORIGIN, SAW_DEG, size)
    m_slope = slope_matrix(c, SAW_DEG)
    me = slab_mesh("Sawtooth ramp", size, 4, 3)
    # three lanes along Y with their own UV orientation: (U axis, V axis) in object space
    lanes = (
        ("Along ridges", size[1] / 3, (0.0, 1.0), (-1.0, 0.0)),  # V downhill: slides along the ridges
        ("Into steep faces", 0.0, (-1.0, 0.0), (0.0, -1.0)),  # U uphill: moving -U into the steep faces
        ("With gentle faces", -size[1] / 3, (1.0, 0.0), (0.0, 1.0)),  # U downhill: into the gentle faces
    )
    pos, face = corner_positions(me)
    centre_y = np.array([p.center.y for p in me.polygons])[face]
    uv = np.empty((len(pos), 2))
    for _, y_lane, u_axis, v_axis in lanes:
        sel = np.abs(centre_y - y_lane) < size[1] / 6 + 1e-6
        uv[sel, 0] = pos[sel, :2] @ np.array(u_axis) / SAW_PERIOD
        uv[sel, 1] = pos[sel, :2] @ np.array(v_axis) / SAW_PERIOD
    side = np.abs(np.array([p.normal.z for p in me.polygons])[face]) < 0.5  # sides: any non-degenerate UVs
    uv[side, 0] = (pos[side, 0] + pos[side, 2]) / SAW_PERIOD
    uv[side, 1] = (pos[side, 1] + pos[side, 2]) / SAW_PERIOD
    layer = me.uv_layers.new(name="UVMap")
    layer.uv.foreach_set("vector", uv.ravel())
    ramp = d.add(
        "Sawtooth ramp",
        me,
        sawtooth_material(sawtooth_image()),
        tuple(c),
        (0.0, math.radians(SAW_DEG), 0.0),
        role="PASSIVE",
        shape="BOX",
        friction=SAW_MU,
        friction_model="TEXTURE",
        texture_patch_size=SAW_PATCH,
    )
    cam = d.camera("Camera a Sawtooth", SAW_ORIGIN + (-0.3, -4.6, 3.1), SAW_ORIGIN + (-0.45, 0.1, 0.55), lens=30)
    d.hud(cam, "a  Texture friction: sawtooth normal map, ramp 19.8°")
    colors = ("#2a9d8f", "#d62828", "#f3a712")
    half = 0.15
    bodies = {}
    for (name, y_lane, _, _), color in zip(lanes, colors, strict=True):
        loc, rot = on_slope(m_slope, size[2] / 2, -1.2, y_lane, half + 0.002)
        obj = d.add(
            f"Cube {name.lower()}",
            common.box_mesh(f"Cube {name}", (2 * half,) * 3),
            common.make_material(f"Cube {name}", color),
            loc,
            rot,
            role="ACTIVE",
            shape="BOX",
            mass=1.0,
            friction=SAW_MU,
        )
        d.marker(obj.name, on_slope(m_slope, size[2] / 2, -1.2, y_lane, 0.002)[0], rot)
        lab_loc, _ = on_slope(m_slope, size[2] / 2, -size[0] / 2 - 0.12, y_lane, 0.0)
        d.label(name.lower(), lab_loc, cam, size=0.17 + 0.03 * y_lane / 0.8, align="RIGHT")
        bodies[name] = obj
    _ = ramp
    return bodies


def grain_direction(x_local: np.ndarray, length: float) -> np.ndarray:
    """Structure field in the slope frame: the fall line (+X) turning toward +Y by up to LOGS_TURN_DEG downhill."""
    s = np.clip((x_local / length + 0.5 - 0.1) / 0.6, 0.0, 1.0)
    phi = math.radians(LOGS_TURN_DEG) * s * s * (3 - 2 * s)  # smoothstep
    return np.stack([np.cos(phi), np.sin(phi), np.zeros_like(phi)], -1)


def build_logs(d: Demo) -> dict:
    size = LOGS_SIZE
    m_field = common.make_material("Field slope", "#7c8b6f", roughness=0.8)
    m_iso = common.make_material("Isotropic slope", "#8c8478", roughness=0.8)
    m_dash = common.make_material("Grain dash", "#f4f1de", roughness=0.7)
    m_log = grain_material("Log", "#8d5a3b", "#b07a4f", scale=14.0)
    m_box = common.make_material("Log box", "#3d5a80")
    cam = d.camera("Camera b Logs", LOGS_ORIGIN + (-7.5, 0.0, 8.0), LOGS_ORIGIN + (0.9, 0.0, 0.0), lens=28)
    d.hud(cam, "b  Structure field steers sliding logs (Fig. 37)")
    bodies = {}
    for slope_name, y0 in zip(("Field", "Isotropic"), LOGS_SLOPE_Y, strict=True):
        origin = LOGS_ORIGIN + (0.0, y0, 0.0)
        c = slab_location(origin, LOGS_DEG, size)
        m_slope = slope_matrix(c, LOGS_DEG)
        me = slab_mesh(f"{slope_name} slope", size, 24, 8)
        physics = dict(role="PASSIVE", shape="BOX", friction=LOGS_MU_ALONG)
        if slope_name == "Field":
            co = np.empty(len(me.vertices) * 3)
            me.vertices.foreach_get("co", co)
            grain = grain_direction(co.reshape(-1, 3)[:, 0], size[0])
            attr = me.attributes.new("grain", "FLOAT_VECTOR", "POINT")
            attr.data.foreach_set("vector", grain.ravel())
            physics.update(
                friction_model="ANISOTROPIC",
                friction_t=LOGS_MU_ALONG,
                friction_b=LOGS_MU_ACROSS,
                structure_source="ATTRIBUTE",
                structure_attribute="grain",
            )
        d.add(
            f"{slope_name} slope",
            me,
            m_field if slope_name == "Field" else m_iso,
            tuple(c),
            (0.0, math.radians(LOGS_DEG), 0.0),
            **physics,
        )
        if slope_name == "Field":  # dashes along the field
            for x in np.linspace(-size[0] / 2 + 0.4, size[0] / 2 - 0.4, 9):
                phi = math.degrees(math.atan2(*grain_direction(np.array([x]), size[0])[0, [1, 0]]))
                for y in np.linspace(-size[1] / 2 + 0.3, size[1] / 2 - 0.3, 6):
                    loc, rot = on_slope(m_slope, size[2] / 2, x, y, 0.003, yaw_deg=phi)
                    d.add(
                        f"Grain dash {x:.1f} {y:.1f}",
                        common.box_mesh("Grain dash", (0.3, 0.035, 0.006)),
                        m_dash,
                        loc,
                        rot,
                    )
        lab_loc, _ = on_slope(m_slope, size[2] / 2, size[0] / 2 - 0.2, 0.0, 0.25)
        text = (
            f"grain field: μ {LOGS_MU_ALONG:g} along, {LOGS_MU_ACROSS:g} across"
            if slope_name == "Field"
            else (f"isotropic: μ {LOGS_MU_ALONG:g}")
        )
        d.label(text, lab_loc, cam, size=0.42)
        for k, y in enumerate(LOGS_LANES):
            x = -size[0] / 2 + 0.75
            # square-section logs (beams) and a crate: they slide. (A round capsule log lying along the fall
            # line is not steered: it spins about its axis so its contact slips along the grain, and rolls.)
            dims, label, mass, mat = LOG_BODIES[k]
            loc, rot = on_slope(m_slope, size[2] / 2, x + 0.5 * dims[0] - 0.2, y, 0.5 * dims[2] + 0.002)
            obj = d.add(
                f"{slope_name} {label}",
                common.box_mesh(f"{slope_name} {label}", dims),
                m_box if mat == "box" else m_log,
                loc,
                rot,
                role="ACTIVE",
                shape="BOX",
                mass=mass,
                friction=LOGS_MU_ALONG,
            )
            d.marker(obj.name, on_slope(m_slope, size[2] / 2, x + 0.5 * dims[0] - 0.2, y, 0.002)[0], rot)
            bodies[obj.name] = (obj, slope_name)
    return bodies


def build_matchstick(d: Demo) -> dict:
    size = (3.6, 2.6, 0.12)
    c = slab_location(MATCH_ORIGIN, MATCH_DEG, size)
    m_slope = slope_matrix(c, MATCH_DEG)
    structure = dict(
        friction_model="MATCHSTICK",
        friction=MATCH_MU,
        friction_t=MATCH_MU_T,
        friction_b=MATCH_MU_B,
        structure_source="AXIS",
        structure_axis="X",
    )
    d.add(
        "Matchstick incline",
        common.box_mesh("Matchstick incline", size),
        grain_material("Matchstick incline", "#c8a97e", "#a8865a", scale=5.0),
        tuple(c),
        (0.0, math.radians(MATCH_DEG), 0.0),
        role="PASSIVE",
        shape="BOX",
        **structure,
    )
    x_low = c[0] + 0.5 * size[0] * math.cos(math.radians(MATCH_DEG)) + 0.3
    d.add(
        "Matchstick bumper",
        common.box_mesh("Matchstick bumper", (0.25, size[1], 0.35)),
        common.make_material("Bumper", "#3e4a5a"),
        (x_low, c[1], 0.175),
        role="PASSIVE",
        shape="BOX",
        friction=0.6,
    )
    cam = d.camera("Camera c Matchstick", MATCH_ORIGIN + (-0.2, -4.9, 3.2), MATCH_ORIGIN + (-0.1, 0.1, 0.5), lens=30)
    d.hud(cam, "c  Matchstick: grain angle between the surfaces")
    bodies = {}
    colors = ("#e76f51", "#2a9d8f", "#264653")
    half = 0.17
    for angle, y, color in zip(MATCH_ANGLES, (0.85, 0.0, -0.85), colors, strict=True):
        loc, rot = on_slope(m_slope, size[2] / 2, -1.25, y, half + 0.002, yaw_deg=angle)
        obj = d.add(
            f"Matchstick box {angle:g} deg",
            common.box_mesh(f"Matchstick box {angle:g}", (2 * half,) * 3),
            grain_material(f"Matchstick box {angle:g}", color, "#f4f1de", scale=9.0),
            loc,
            rot,
            role="ACTIVE",
            shape="BOX",
            mass=1.0,
            **structure,
        )
        d.marker(obj.name, on_slope(m_slope, size[2] / 2, -1.25, y, 0.002)[0], rot)
        lab_loc, _ = on_slope(m_slope, size[2] / 2, -size[0] / 2 - 0.12, y, 0.0)
        d.label(f"grain {angle:g}°", lab_loc, cam, size=0.18 + 0.03 * y / 0.85, align="RIGHT")
        bodies[angle] = obj
    return bodies


def build_scene() -> tuple[Demo, dict]:
    d = Demo()
    ground = common.make_material("Ground", "#d6d1c8", roughness=0.8, checker="#c5bfb5", scale=1.0)
    d.add("Ground", common.plane_mesh("Ground", 80.0), ground, (0, 0, 0), role="PASSIVE", shape="PLANE", friction=0.6)
    parts = {
        "sawtooth": build_sawtooth(d, 0.6),
        "logs": build_logs(d),
        "matchstick": build_matchstick(d),
    }
    common.add_light_and_world(d.scene)
    return d, parts


# ---------------------------------------------------------------------------------------------
# bake and checks


def bake(scene: bpy.types.Scene, substeps: int, solver: str) -> dict:
    s = scene.contact_lab
    s.frame_start, s.frame_end = FRAME_START, FRAME_END
    s.substeps, s.solver, s.iterations, s.tolerance = substeps, solver, 100, 1e-6
    t0 = time.perf_counter()
    result = bpy.ops.contact_lab.bake()
    wall = time.perf_counter() - t0
    if result != {"FINISHED"}:
        raise RuntimeError(f"bpy.ops.contact_lab.bake() returned {result}")
    try:
        report = json.loads(s.last_report) if s.last_report else {}
    except json.JSONDecodeError:
        report = {"raw": s.last_report}
    return {"wall_seconds": wall, "report": report}


def poses(obj, frames) -> np.ndarray:
    """World matrices (F, 4, 4) of ``obj`` at ``frames``; the scene back at the first frame."""
    out = common.world_matrices(obj, frames)
    bpy.context.scene.frame_set(FRAME_START)
    return out


def slope_axes(angle_deg: float) -> tuple[np.ndarray, np.ndarray]:
    a = math.radians(angle_deg)
    return np.array([math.cos(a), 0.0, -math.sin(a)]), np.array([0.0, 1.0, 0.0])


def check(parts: dict, checks: Checks) -> None:
    mid = FRAME_START + (FRAME_END - FRAME_START) // 2
    # a. sawtooth ----------------------------------------------------------------------------------
    down, _ = slope_axes(SAW_DEG)
    tan = math.tan(math.radians(SAW_DEG))
    g = 9.81
    t_end = (FRAME_END - FRAME_START) / FPS
    print(f"a. Sawtooth ramp {SAW_DEG}° (tan {tan:.3f}), μ {SAW_MU}, plowing from a {SAW_PERIOD * 100:g} cm ratchet:")
    moved = {}
    for name, obj in parts["sawtooth"].items():
        p0, pm, p1 = (m[:3, 3] for m in poses(obj, (FRAME_START, mid, FRAME_END)))
        moved[name] = float((p1 - p0) @ down)
        print(
            f"   {name:<18} moved {moved[name]:6.3f} m downhill in {t_end:g} s ({float((pm - p0) @ down):.3f} m at "
            f"frame {mid}); |Δ| {np.linalg.norm(p1 - p0):.3f} m"
        )
    free = 0.5 * g * (math.sin(math.radians(SAW_DEG)) - SAW_MU * math.cos(math.radians(SAW_DEG))) * t_end**2
    checks.expect(
        "a: along the ridges slides (μ only)",
        abs(moved["Along ridges"] - free) < 0.1 * free,
        f"{moved['Along ridges']:.3f} m vs {free:.3f} m for μ = {SAW_MU}",
    )
    checks.expect(
        "a: into the steep faces sticks", abs(moved["Into steep faces"]) < 0.02, f"{moved['Into steep faces']:.4f} m"
    )
    checks.expect(
        "a: with the gentle faces slides, slower than along",
        0.3 < moved["With gentle faces"] < moved["Along ridges"],
        f"{moved['With gentle faces']:.3f} m",
    )
    # b. logs ----------------------------------------------------------------------------------------
    down, lateral = slope_axes(LOGS_DEG)
    print(
        f"b. Logs on {LOGS_DEG}° slopes: grain field (μ {LOGS_MU_ALONG} along, {LOGS_MU_ACROSS} across, turning up "
        f"to {LOGS_TURN_DEG:g}°) vs isotropic μ {LOGS_MU_ALONG}:"
    )
    for name, (obj, slope) in parts["logs"].items():
        p0, p1 = (m[:3, 3] for m in poses(obj, (FRAME_START, FRAME_END)))
        dz, dy = float((p1 - p0) @ down), float((p1 - p0) @ lateral)
        print(f"   {name:<18} downhill {dz:6.3f} m, lateral deflection {dy:+6.3f} m")
        if slope == "Field":
            checks.expect(f"b: {name} curves to +Y", dy > 0.5 and dz > 1.0, f"lateral {dy:+.3f} m, downhill {dz:.3f} m")
        else:
            checks.expect(
                f"b: {name} runs straight", abs(dy) < 0.1 and dz > 2.0, f"lateral {dy:+.3f} m, downhill {dz:.3f} m"
            )
    # c. matchstick ----------------------------------------------------------------------------------
    down, lateral = slope_axes(MATCH_DEG)
    tan = math.tan(math.radians(MATCH_DEG))
    print(
        f"c. Matchstick incline {MATCH_DEG}° (tan {tan:.3f}), μ {MATCH_MU}, μ along {MATCH_MU_T}, "
        f"μ across {MATCH_MU_B}:"
    )
    moved = {}
    for angle, obj in parts["matchstick"].items():
        p0, pm, p1 = (m[:3, 3] for m in poses(obj, (FRAME_START, mid, FRAME_END)))
        moved[angle] = float((pm - p0) @ down)
        print(
            f"   grain at {angle:>3g}°: {moved[angle]:6.3f} m downhill at frame {mid}, "
            f"{float((p1 - p0) @ down):6.3f} m at frame {FRAME_END}, lateral {float((p1 - p0) @ lateral):+.3f} m"
        )
    checks.expect("c: parallel grain slides", moved[0.0] > 0.5, f"{moved[0.0]:.3f} m by frame {mid}")
    checks.expect(
        "c: 45° slides, slower than parallel",
        0.02 < moved[45.0] < 0.7 * moved[0.0],
        f"{moved[45.0]:.3f} m by frame {mid}",
    )
    checks.expect("c: orthogonal grain sticks (isotropic μ)", abs(moved[90.0]) < 0.02, f"{moved[90.0]:.4f} m")


# ---------------------------------------------------------------------------------------------
# render


def render(d: Demo, out: Path, samples: int) -> tuple[str, list[Path]]:
    scene = d.scene
    frames_dir = out / "friction_frames"
    frames_dir.mkdir(parents=True, exist_ok=True)
    engines = common.configure_render(scene, samples)
    engine = engines[0]
    scene.render.engine = engine
    paths = []
    for f in SHEET_FRAMES:  # rows of the sheet
        scene.frame_set(f)
        for cam in d.cameras:  # columns
            t0 = time.perf_counter()
            scene.camera = cam
            path = frames_dir / f"{cam.name.split()[1]}_{f:04d}.png"
            paths.append(common.render_still(scene, path, engine, f"{cam.name}, frame {f}", t0))
    scene.frame_set(FRAME_START)
    scene.camera = d.cameras[0]
    return engine, paths


# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    ap = common.arguments(__doc__.splitlines()[0])
    ap.add_argument("--substeps", type=int, default=8, help="solver substeps per frame (default 8)")
    ap.add_argument("--solver", default="PROX", choices=("PROX", "PGS"))
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    print(f"Contact Lab friction demo: Blender {bpy.app.version_string} (bpy module), numpy {np.__version__}")
    args.out.mkdir(parents=True, exist_ok=True)
    d, parts = build_scene()
    scene = d.scene
    if not common.register_addon():
        print("ERROR: the Contact Lab add-on could not be registered")
        return 1
    d.builder.apply_physics()
    n_active = sum(1 for p in d.builder.physics.values() if p.get("role") == "ACTIVE")
    n_passive = sum(1 for p in d.builder.physics.values() if p.get("role") == "PASSIVE")
    print(f"Scene built: {len(d.builder.collection.objects)} objects, {n_active} active, {n_passive} passive")
    try:
        info = bake(scene, args.substeps, args.solver)
    except Exception:
        traceback.print_exc()
        return common.save_unbaked(args.out, "friction_demo", "the bake")
    frames = FRAME_END - FRAME_START + 1
    rep = info["report"]
    print(
        f"Bake ({args.solver}, {args.substeps} substeps): {frames} frames at {FPS} fps, "
        f"wall time {info['wall_seconds']:.1f} s (a first run includes the Numba compile)"
    )
    summary = {k: rep[k] for k in ("status", "frames", "bodies", "timings", "warnings") if k in rep}
    if summary:
        print("  report: " + json.dumps(summary, default=str))
    checks = Checks()
    check(parts, checks)

    scene.frame_set(FRAME_START)
    common.save(args.out, "friction_demo")

    if not args.no_render:
        t0 = time.perf_counter()
        engine, paths = render(d, args.out, args.samples)
        sheet = args.out / "friction_demo_contact_sheet.png"
        written = common.publish_sheet(paths, sheet, args.docs)
        print(f"Contact sheet ({engine}, {time.perf_counter() - t0:.1f} s): {written}")

    return checks.report(f"Friction demo finished in {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
