"""Contact Lab soft demo: three soft-body scenes built, baked and checked in real Blender, one contact sheet.

Run with the project's virtual environment (``make demo`` runs it after the rigid and friction demos)::

    .venv/bin/python demo/build_soft_demo.py [--out out] [--docs] [--no-render] [--samples 12] [--only ball,grasp,jelly]

Three scenes, each in its own .blend (Z up, metres, 24 fps, Soft engine, Implicit contact, baked to shape keys):

a. **Ball on steps** (``out/soft_demo_ball.blend``): a rubber icosphere (642 vertices, the contact points) is
   dropped on the front edge of the top step of a staircase of four passive boxes. The edge kicks it forward; it
   bounces down the steps to the ground. BDF2 with 4 substeps: with backward Euler at 2 substeps the numerical
   damping eats the bounces and the ball stops on a step.
b. **Grasp** (``out/soft_demo_grasp.blend``, after Fig. 1 of Larionov et al.): an upside-down bowl whose collision
   shape is the box fitted to its bounds (an active 0.5 kg body) rests on a passive ground; three soft pads, pinned
   on their outer face through a vertex group, are keyed to squeeze, lift by 10 cm and hold. A box only takes normal
   forces along its face normals, so three pads at 120° cannot press on it in balance (and three faces leave one
   push unbalanced); the pads grip like a thumb and two fingers instead: one pad on the +X face, two side by side on
   the -X face. The squeeze then cancels, the two sides press with the same N, and friction holds the bowl iff 2 μ N
   > W. The bowl's outline is a slightly squared circle, so the pads touch the bowl where they touch its box. Two
   grasps side by side: μ 0.5 lifts the bowl, μ 0.03 slides off it.
c. **Jelly on an incline** (``out/soft_demo_jelly.blend``): a gel cube starts at rest on a passive plane tilted
   25° (pair μ 0.37 < tan 25° = 0.47), rocks forward, settles into a lean and slides down at the Coulomb rate.

Each scene prints its bake report and its self-check numbers; the script exits 1 when a check fails.

Outputs: ``out/soft_demo_{ball,grasp,jelly}.blend``, ``out/soft_frames/*.png``, ``out/soft_demo_contact_sheet.png``
(one row per scene, three frames each); with ``--docs`` (``make pictures``) also a copy in
``docs/soft_demo_contact_sheet.png``.

The scenes use public scripting names only: ``scene.contact_lab.engine/soft_output/soft_contact/soft_integrator/
soft_substeps/soft_contact_thickness/last_report``, ``obj.contact_lab.role/shape/mass/friction/soft_preset/
pin_group/lattice_resolution`` and ``bpy.ops.contact_lab.bake()``. The grasp check alone also reads the pads'
squeeze force from the core (:func:`squeeze_forces`): the bake report has no contact forces.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402  (materials, meshes, titled scenes, bake, read-back, render, sheet and checks)
from common import (  # noqa: E402
    FPS,
    Checks,
    TitledScene,
    ground,
    icosphere_mesh,
    subdivided_box_mesh,
    trajectory,
)

bmesh = common.bmesh

G = 9.81

# a. ball on steps ----------------------------------------------------------------------------------
BALL_RADIUS = 0.12
BALL_FRAMES = 72  # 3 s
BALL_INTEGRATOR, BALL_SUBSTEPS = "BDF2", 4
STEP_RISE, STEP_TREAD, STEP_COUNT, STEP_WIDTH = 0.16, 0.26, 4, 0.8
BALL_OVERHANG = 0.06  # ball centre beyond the top step's front edge [m]: the edge kicks it forward
BALL_DROP = 0.3  # gap between the ball and the top step [m]
BALL_THICKNESS = 0.0012  # contact layer [m] (0.5 % of the ball, the automatic value)

# b. grasp -------------------------------------------------------------------------------------------
BOWL_R, BOWL_H, BOWL_BAND = 0.09, 0.08, 0.035  # rim half-width, height, vertical band above the rim [m]
BOWL_MASS = 0.5
PAD_SIZE = (0.03, 0.03, 0.028)  # thickness (normal to the bowl), width, height [m]
PAD_Z = 0.018  # pad centre height [m]
PAD_GAP = 0.002  # initial gap between a pad and the bowl's box [m]
FINGER_GAP = 0.016  # between the two fingers [m]: wider than the contact search margin while they move together
SQUEEZE = 0.003  # inward travel of each pad's pinned face after it touches [m]
LIFT = 0.10
GRASPS = (("Grip", 0.5, -0.2), ("Slip", 0.03, 0.2))  # (name, μ of the pads and the bowl, x of the bowl [m])
GRASP_KEYS = (1, 13, 17, 41, 49)  # start, squeezed, lift starts, lifted, end of the hold
GRASP_FRAMES = GRASP_KEYS[-1]
GRASP_THICKNESS = 0.001

# c. jelly ------------------------------------------------------------------------------------------
INCLINE_DEG = 25.0
INCLINE_LEN, INCLINE_WIDTH = 2.4, 0.8
JELLY_SIZE = 0.2
JELLY_GAP = 0.002  # starts at rest just above the incline (dropped from 3 cm, a 25 cm gel cube tumbled down)
JELLY_MU, INCLINE_MU = 0.3, 0.45  # the pair's μ: sqrt(0.3 · 0.45) = 0.37 < tan 25° = 0.47
JELLY_FRAMES = 48  # 2 s
JELLY_THICKNESS = 0.001

SHEET_FRAMES = {  # frames rendered per scene: one row of the contact sheet each
    "ball": (1, 22, BALL_FRAMES),
    "grasp": (1, (GRASP_KEYS[2] + GRASP_KEYS[3]) // 2, GRASP_FRAMES),
    "jelly": (1, 10, JELLY_FRAMES),
}

# ---------------------------------------------------------------------------------------------
# geometry


def rectangle_mesh(name: str, size_x: float, size_y: float) -> bpy.types.Mesh:
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=0.5)
    bmesh.ops.scale(bm, vec=(size_x, size_y, 1.0), verts=bm.verts)
    return common.mesh_from_bmesh(name, bm)


def bowl_mesh(name: str, segments: int = 64) -> bpy.types.Mesh:
    """Upside-down bowl with its rim on z = 0: a vertical band, a shoulder and a foot ring on top, 5 mm walls.

    The outline is the superellipse |x|³ + |y|³ = r³ (a slightly squared circle): over the pads' width its sides
    stay within 2.5 mm of the bounding box, which is the bowl's collision shape.
    """
    wall, foot_r, foot_h = 0.005, 0.45 * BOWL_R, 0.007
    top = BOWL_H - foot_h
    q = 2.0 / 1.4  # shoulder: a quarter superellipse of exponent 1.4 (between a cone and an ellipse)

    def shoulder(k: int, inset: float) -> tuple[float, float]:
        u = 0.5 * math.pi * k / 10
        return (
            foot_r - inset + (BOWL_R - foot_r) * math.cos(u) ** q,
            BOWL_BAND + (top - inset - BOWL_BAND) * math.sin(u) ** q,
        )

    outer = [(BOWL_R, 0.0)] + [shoulder(k, 0.0) for k in range(11)] + [(foot_r, BOWL_H), (0.0, BOWL_H)]
    inner = [(0.0, top - wall)] + [shoulder(k, wall) for k in range(10, -1, -1)] + [(BOWL_R - wall, 0.0)]
    profile = outer + inner  # a closed loop: up the outside, down the inside, back to the rim
    phi = np.linspace(0.0, 2.0 * math.pi, segments, endpoint=False)
    c, s = np.cos(phi), np.sin(phi)
    radius = 1.0 / np.cbrt(np.abs(c) ** 3 + np.abs(s) ** 3)
    verts = [(r * radius[j] * c[j], r * radius[j] * s[j], z) for r, z in profile for j in range(segments)]
    ring = [(i * segments, ((i + 1) % len(profile)) * segments) for i in range(len(profile))]
    faces = [(a + j, a + (j + 1) % segments, b + (j + 1) % segments, b + j) for a, b in ring for j in range(segments)]
    return common.mesh_from_bmesh(name, common.welded_bmesh(name, verts, faces), smooth=True)


# ---------------------------------------------------------------------------------------------
# scenes


class SoftScene(TitledScene):
    """One scene of the demo: the demos' titled scene, Soft engine."""

    def __init__(self, key: str, title: str, frame_end: int):
        super().__init__(key, title, frame_end, f"Soft demo {key}", f"Contact Lab Soft Demo {key}")

    def configure(self, substeps: int, thickness: float, integrator: str = "BE") -> None:
        s = self.scene.contact_lab
        s.engine = "SOFT"
        s.soft_output = "SHAPE_KEYS"
        s.soft_contact = "IMPLICIT"
        s.soft_integrator = integrator
        s.soft_substeps = substeps
        s.soft_contact_thickness = thickness


def build_ball() -> SoftScene:
    d = SoftScene("ball", "a  Rubber ball dropped on steps", BALL_FRAMES)
    ground(d, mu=0.8)
    m_step = common.make_material("Step", "#3e4a5a", roughness=0.6)
    steps = []
    for k in range(STEP_COUNT):
        top = STEP_RISE * (STEP_COUNT - k)
        size = (STEP_TREAD, STEP_WIDTH, top)
        loc = ((k + 0.5) * STEP_TREAD, 0.0, 0.5 * top)
        mesh = common.box_mesh(f"Step {k + 1}", size)
        steps.append(d.add(f"Step {k + 1}", mesh, m_step, loc, role="PASSIVE", shape="BOX", friction=0.8))
    ball = d.add(
        "Ball",
        icosphere_mesh("Ball", BALL_RADIUS, 4),  # 642 vertices
        common.make_material("Ball", "#f25f5c", checker="#fdfdfd", scale=6.0),
        (STEP_TREAD + BALL_OVERHANG, 0.0, STEP_RISE * STEP_COUNT + BALL_RADIUS + BALL_DROP),
        role="SOFT",
        soft_preset="RUBBER",
        lattice_resolution=8,
    )
    d.camera((0.72, -2.9, 1.3), (0.72, 0.0, 0.6))
    d.configure(substeps=BALL_SUBSTEPS, thickness=BALL_THICKNESS, integrator=BALL_INTEGRATOR)
    d.checked = {"ball": ball, "steps": steps}
    return d


def add_grasp(d: SoftScene, name: str, mu: float, x0: float) -> dict:
    """A bowl on the ground and three pads (thumb on +X, two fingers on -X) keyed to squeeze, lift and hold it."""
    bowl = d.add(
        f"{name} bowl",
        bowl_mesh(f"{name} bowl"),
        common.make_material(f"{name} bowl", "#e07a5f" if mu > 0.2 else "#81b29a", roughness=0.2),
        (x0, 0.0, 0.0005),
        role="ACTIVE",
        shape="BOX",
        mass=BOWL_MASS,
        friction=mu,
    )
    m_pad = common.make_material(f"{name} pad", "#3d5a80", roughness=0.7)
    thickness, width, _ = PAD_SIZE
    finger_y = 0.5 * (width + FINGER_GAP)
    pads = {}
    for role, side, y in (("thumb", 1.0, 0.0), ("finger 1", -1.0, -finger_y), ("finger 2", -1.0, finger_y)):
        x = x0 + side * (BOWL_R + PAD_GAP + 0.5 * thickness)
        mesh = subdivided_box_mesh(f"{name} {role}", PAD_SIZE, 5)
        pad = d.add(
            f"{name} {role}",
            mesh,
            m_pad,
            (x, y, PAD_Z),
            role="SOFT",
            soft_preset="FLESH",
            friction=mu,
            lattice_resolution=4,
            pin_group="Pinned",
        )
        co = np.empty(3 * len(mesh.vertices))
        mesh.vertices.foreach_get("co", co)
        outer = np.flatnonzero(side * co.reshape(-1, 3)[:, 0] > 0.5 * thickness - 1e-6)  # the face away from the bowl
        pad.vertex_groups.new(name="Pinned").add(outer.tolist(), 1.0, "REPLACE")
        for frame, squeeze, lift in zip(GRASP_KEYS, (0, 1, 1, 1, 1), (0, 0, 0, 1, 1), strict=True):
            pad.location = (x - side * squeeze * (PAD_GAP + SQUEEZE), y, PAD_Z + lift * LIFT)
            pad.keyframe_insert("location", frame=frame)  # Bézier keys: each move eases in and out
        pads[role] = pad
    return {"bowl": bowl, "pads": pads, "mu": mu}


def build_grasp() -> SoftScene:
    (_, mu_grip, _), (_, mu_slip, _) = GRASPS
    title = f"b  Three soft pads lift a {BOWL_MASS:g} kg bowl: μ {mu_grip:g} grips, μ {mu_slip:g} slips"
    d = SoftScene("grasp", title, GRASP_FRAMES)
    ground(d, mu=0.6)
    d.checked = {name: add_grasp(d, name, mu, x0) for name, mu, x0 in GRASPS}
    d.camera((0.0, -0.75, 0.5), (0.0, 0.0, 0.1))
    d.configure(substeps=2, thickness=GRASP_THICKNESS)
    return d


def build_jelly() -> SoftScene:
    d = SoftScene("jelly", f"c  Jelly cube sliding on a {INCLINE_DEG:g}° incline", JELLY_FRAMES)
    ground(d, mu=0.6)
    a = math.radians(INCLINE_DEG)
    down = np.array([math.cos(a), 0.0, -math.sin(a)])
    normal = np.array([math.sin(a), 0.0, math.cos(a)])
    centre = np.array([0.0, 0.0, 0.5 * INCLINE_LEN * math.sin(a) + 0.05])
    d.add(
        "Incline",
        rectangle_mesh("Incline", INCLINE_LEN, INCLINE_WIDTH),
        common.make_material("Incline", "#7c8b6f", roughness=0.7, checker="#6d7b61", scale=6.0),
        tuple(centre),
        (0.0, a, 0.0),
        role="PASSIVE",
        shape="PLANE",
        friction=INCLINE_MU,
    )
    start = centre + (0.2 - 0.5 * INCLINE_LEN) * down + (0.5 * JELLY_SIZE + JELLY_GAP) * normal
    jelly = d.add(
        "Jelly",
        subdivided_box_mesh("Jelly", (JELLY_SIZE,) * 3, 7),
        common.make_material("Jelly", "#8cc63f", roughness=0.15),
        tuple(start),
        (0.0, a, 0.0),
        role="SOFT",
        soft_preset="GEL",
        lattice_resolution=6,
    )
    d.camera((0.0, -3.1, 1.45), (0.0, 0.0, 0.62))
    d.configure(substeps=2, thickness=JELLY_THICKNESS)
    d.checked = {"jelly": jelly, "down": down, "normal": normal, "centre": centre}
    return d


BUILDERS = {"ball": build_ball, "grasp": build_grasp, "jelly": build_jelly}

# ---------------------------------------------------------------------------------------------
# bake and checks


def box_distance(points: np.ndarray, obj) -> np.ndarray:
    """Signed distance of world points to an unrotated box object's bounds (negative inside)."""
    m = np.array(obj.matrix_world)
    corners = np.array(obj.bound_box) @ m[:3, :3].T + m[:3, 3]
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    q = np.abs(points - 0.5 * (lo + hi)) - 0.5 * (hi - lo)
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(axis=-1), 0.0)


def check_ball(d: SoftScene, report: dict, checks: Checks) -> None:
    ball, steps = d.checked["ball"], d.checked["steps"]
    delta = report["settings"]["contact_thickness"]
    x = trajectory(ball, BALL_FRAMES)
    centre = x.mean(axis=1)
    gap = np.stack([box_distance(x, s) for s in steps]).min(axis=2)  # (steps, F): the nearest vertex
    depth = float(max(0.0, -gap.min(), -x[..., 2].min()))  # deepest vertex inside a step or the ground
    top = STEP_RISE * STEP_COUNT
    landed = [
        (s.name, int(np.argmax(g < 2 * delta)) + 1) for s, g in zip(steps, gap, strict=True) if g.min() < 2 * delta
    ]
    path = ", ".join(f"{f}: ({centre[f - 1, 0]:.2f}, {centre[f - 1, 2]:.2f})" for f in range(1, BALL_FRAMES + 1, 8))
    print(f"a. Ball on steps: {BALL_RADIUS:g} m rubber ball, contact layer {delta * 1000:.2f} mm")
    print(f"   centre (x, z) [m] at frames {path}")
    print(
        "   touching a step at a whole frame (within twice the layer): "
        + (", ".join(f"{name} (first at frame {f})" for name, f in landed) or "none")
        + f"; deepest vertex inside a step or the ground: {depth * 1000:.3f} mm"
    )
    end, end_top = centre[-1], float(x[-1, :, 2].max())
    checks.expect(
        "a: the ball ends lower than it started",
        end[2] < centre[0, 2] - 0.5,
        f"centre z {centre[0, 2]:.3f} → {end[2]:.3f} m",
    )
    checks.expect("a: the ball ends below the top step", end_top < top, f"its top {end_top:.3f} m, step {top:.3f} m")
    checks.expect(
        "a: never inside a step (or the ground) by more than the contact layer",
        depth <= delta,
        f"{depth * 1000:.3f} mm ≤ {delta * 1000:.2f} mm",
    )
    lower = [name for name, _ in landed if name != steps[0].name]
    checks.expect(
        "a: it went down the steps to the ground (touched a lower step, ends on the ground past the last one)",
        len(lower) >= 1 and end[2] < BALL_RADIUS + 0.01 and end[0] > STEP_COUNT * STEP_TREAD,
        f"touched {', '.join(lower) or 'no lower step'}; ends at x {end[0]:.2f} m, z {end[2]:.3f} m",
    )


def squeeze_forces(scene) -> dict[tuple[str, str], float]:
    """Normal force [N] each soft body presses on each active box at the end of the squeeze (before the lift).

    The bake report has no contact forces, so this runs the squeeze phase again with the core on the bake's own
    export (the same world, pin tracks and settings) and reads the solver's per-pair penalty forces.

    Returns:
        ``{(soft object name, box object name): |force|}``.
    """
    from contact_lab.addon.soft.gather import export_soft_scene
    from contact_lab.core.soft.frame_loop import iter_simulate_soft

    ex = export_soft_scene(scene, frame_end=GRASP_KEYS[2])
    settings = ex.solver_settings()
    frames = iter_simulate_soft(
        ex.world,
        frame_count=ex.frame_count,
        fps=ex.fps,
        settings=settings,
        pin_tracks=ex.pin_tracks,
        collider_tracks=ex.collider_tracks,
    )
    _, state = deque(frames, maxlen=1)[0]
    force = state.stats.contact_force  # (soft bodies, colliders, 3)
    return {
        (b.object_name, c.object_name): float(np.linalg.norm(force[b.body_index, c.collider_index]))
        for b in ex.bodies
        for c in ex.dynamic_colliders
    }


def check_grasp(d: SoftScene, report: dict, checks: Checks) -> None:
    scene = d.scene
    k = GRASP_KEYS
    weight = BOWL_MASS * G
    forces = squeeze_forces(scene)
    print(f"b. Grasp: bowls of {BOWL_MASS:g} kg (W = {weight:.2f} N), pads lift {LIFT * 100:g} cm")
    for name, grasp in d.checked.items():
        bowl, pads, mu = grasp["bowl"], grasp["pads"], grasp["mu"]
        z = []
        for f in range(1, GRASP_FRAMES + 1):
            scene.frame_set(f)
            z.append(bowl.matrix_world.translation.z)
        scene.frame_set(1)
        z = np.array(z) - z[0]
        n = {role: forces[(pad.name, bowl.name)] for role, pad in pads.items()}
        thumb, fingers = n["thumb"], n["finger 1"] + n["finger 2"]
        ratio = 2.0 * mu * thumb / weight
        rise, hold = float(z[-1]), float(z[-1] - z[k[3] - 1])
        heights = ", ".join(f"{f}: {1000 * z[f - 1]:+.1f}" for f in (k[1], k[2], (k[2] + k[3]) // 2, k[3], k[4]))
        print(
            f"   {name} (μ {mu:g}): at frame {k[2]} thumb N = {thumb:.2f} N, fingers {n['finger 1']:.2f} + "
            f"{n['finger 2']:.2f} = {fingers:.2f} N, 2 μ N / W = {ratio:.2f}; bowl z [mm] at frames {heights}"
        )
        # The bowl settles between the pads until the squeezes balance, up to what static friction on the ground
        # holds: with the smoothed friction's stick speed at 1 mm/s it crept on to within 3 %; with 0.05 mm/s (a
        # resting contact that truly sticks, issue 13) it stops 7-8 % short.
        checks.expect(
            f"b: {name}: the squeeze is balanced (thumb = both fingers ± 10 %)",
            abs(thumb - fingers) < 0.10 * thumb,
            f"{thumb:.2f} N vs {fingers:.2f} N",
        )
        if mu > 0.2:
            checks.expect(
                f"b: {name}: friction holds the weight with margin (2 μ N / W ≥ 1.5)", ratio >= 1.5, f"{ratio:.2f}"
            )
            checks.expect(
                f"b: {name}: the bowl rises by ≥ 80 % of the pads' lift",
                rise >= 0.8 * LIFT,
                f"{1000 * rise:.1f} mm of {1000 * LIFT:g} mm ({100 * rise / LIFT:.0f} %)",
            )
            checks.expect(f"b: {name}: no slip during the hold", abs(hold) < 0.01 * LIFT, f"{1000 * hold:+.2f} mm")
        else:
            checks.expect(f"b: {name}: friction cannot hold the weight (2 μ N / W < 0.8)", ratio < 0.8, f"{ratio:.2f}")
            checks.expect(
                f"b: {name}: the pads slide off, the bowl stays (rise < 20 % of the lift)",
                rise < 0.2 * LIFT,
                f"{1000 * rise:.1f} mm",
            )


def check_jelly(d: SoftScene, report: dict, checks: Checks) -> None:
    jelly = d.checked["jelly"]
    down, normal, centre = d.checked["down"], d.checked["normal"], d.checked["centre"]
    delta = report["settings"]["contact_thickness"]
    rest = np.empty(3 * len(jelly.data.vertices))
    jelly.data.vertices.foreach_get("co", rest)
    local_z = rest.reshape(-1, 3)[:, 2]
    top, bottom = local_z > 0.5 * JELLY_SIZE - 1e-6, local_z < 1e-6 - 0.5 * JELLY_SIZE
    x = trajectory(jelly, JELLY_FRAMES) - centre  # relative to the incline's centre
    along, height, lateral = x @ down, x @ normal, x[..., 1]
    c_along = along.mean(axis=1) - along[0].mean()
    axis = x[:, top].mean(axis=1) - x[:, bottom].mean(axis=1)  # bottom face -> top face
    lean = np.degrees(np.arctan2(axis @ down, axis @ normal))  # forward lean [°]
    a = math.radians(INCLINE_DEG)
    mu = math.sqrt(JELLY_MU * INCLINE_MU)
    expected = G * (math.sin(a) - mu * math.cos(a))
    fit = slice(JELLY_FRAMES // 3, JELLY_FRAMES)  # after the start-up wobble
    accel = 2.0 * float(np.polyfit(np.arange(JELLY_FRAMES)[fit] / FPS, c_along[fit], 2)[0])
    settled = float(np.median(lean[fit]))
    path = ", ".join(f"{f}: {c_along[f - 1]:.2f} / {lean[f - 1]:.1f}" for f in range(1, JELLY_FRAMES + 1, 6))
    print(
        f"c. Jelly: {INCLINE_DEG:g}° incline (tan {math.tan(a):.3f}), μ {mu:.3f}, contact layer {delta * 1000:.2f} mm"
    )
    print(f"   down-slope [m] / lean [°] at frames {path}")
    print(
        f"   acceleration from frame {fit.start + 1}: {accel:.3f} m/s² (g (sin θ − μ cos θ) = {expected:.3f}); "
        f"lean peaks at {lean.max():.1f}°, slides at {settled:.1f}°"
    )
    checks.expect(
        "c: slides down-slope at the Coulomb rate (± 5 %)",
        c_along[-1] > 0.5 and abs(accel / expected - 1.0) < 0.05,
        f"{c_along[-1]:.2f} m in {(JELLY_FRAMES - 1) / FPS:.2f} s, a = {accel:.3f} vs {expected:.3f} m/s²",
    )
    # The overshoot scales with the lean itself: the gel cube weighing its mesh (issue 13) leans 10° where its
    # over-filled lattice leaned 14°, and overshoots by 37 % where it overshot by 48 %.
    checks.expect(
        "c: wobbles (the lean overshoots its sliding value by ≥ 25 % and ≥ 2°)",
        lean.max() >= 1.25 * settled and lean.max() - settled >= 2.0,
        f"peak {lean.max():.1f}° vs {settled:.1f}°",
    )
    checks.expect(
        "c: never below the plane by more than the contact layer",
        height.min() >= -delta,
        f"lowest vertex {height.min() * 1000:+.3f} mm",
    )
    inside = bool(((np.abs(along[-1]) < 0.5 * INCLINE_LEN) & (np.abs(lateral[-1]) < 0.5 * INCLINE_WIDTH)).all())
    checks.expect(
        "c: stays on the plane (in contact, inside its edges)",
        inside and height[-1].min() < delta,
        f"last frame: lowest vertex {height[-1].min() * 1000:+.2f} mm, inside the edges: {inside}",
    )


CHECKERS = {"ball": check_ball, "grasp": check_grasp, "jelly": check_jelly}

# ---------------------------------------------------------------------------------------------


def after_bake(key: str, d: SoftScene, report: dict, checks: Checks) -> None:
    """Print the bake's numbers and check the scene (every frame converged, then the scene's own checks)."""
    st, s = report["stats"], report["settings"]
    steps = f"{s.get('integrator', d.scene.contact_lab.soft_integrator)} × {s['substeps']} substeps"
    details = f"unconverged frames {st['unconverged_frames']}; up to {st['max_contacts']} contacts"
    common.print_lattice_bake(key, report, f", {steps}", details)
    checks.expect(f"{key}: every frame converged", st["unconverged_frames"] == 0, f"{st['unconverged_frames']}")
    CHECKERS[key](d, report, checks)


def main(argv: list[str]) -> int:
    return common.run_scenes(argv, __doc__, "soft", BUILDERS, SHEET_FRAMES, after_bake)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
