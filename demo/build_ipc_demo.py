"""Contact Lab IPC demo: three scenes that only a contact model which never lets surfaces cross can bake.

Run with the project's virtual environment (``make demo`` runs it after the rigid, friction and soft demos)::

    .venv/bin/python demo/build_ipc_demo.py [--out out] [--docs] [--no-render] [--samples 12] [--only bowl,wall,knives]

Three scenes, each in its own .blend (Z up, metres, 24 fps, IPC engine, intersection checker on, baked to shape
keys). The scenes are small (4- to 6-cell lattices, 1-2 s) so the whole script runs in a few minutes:

a. **Cubes into a bowl** (``out/ipc_demo_bowl.blend``): three 7 cm Flesh cubes, stacked with gaps, drop into a
   hemispherical bowl whose collision shape is its own mesh (a Mesh collider: concave, open at the top). They
   land on each other and on the curved wall, slide to the bottom and settle inside, below the rim.
b. **Ball at a wall** (``out/ipc_demo_wall.blend``): a 5 cm rubber ball thrown at 50 m/s against a 1.5 cm wall
   (a passive box). It covers 1 m per substep, 67 times the wall's thickness: a solver that only looks at where
   things end up would let it tunnel through. IPC's continuous collision detection stops every step at the wall.
c. **Mat on knives** (``out/ipc_demo_knives.blend``): a soft gel mat (30 × 30 × 2 cm) dropped on three upright
   knife blades (thin wedges as Mesh colliders, sharp top edges). It lands on the edges and sags between them
   without ever being cut.

Each scene prints its bake report, a summary line (frames, tets, s/frame, Newton iterations, closest distance,
intersections) and its self-check numbers; the script exits 1 when a check fails.

Outputs: ``out/ipc_demo_{bowl,wall,knives}.blend``, ``out/ipc_frames/*.png``, ``out/ipc_demo_contact_sheet.png``
(one row per scene, three frames each); with ``--docs`` (``make pictures``) also a copy in
``docs/ipc_demo_contact_sheet.png``.

The scenes use public scripting names only: ``scene.contact_lab.engine/soft_output/soft_substeps/
check_intersections/last_report``, ``obj.contact_lab.role/shape/soft_preset/lattice_resolution/initial_velocity``
and ``bpy.ops.contact_lab.bake()``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402  (materials, meshes, titled scenes, bake, read-back, render, sheet and checks)
from common import FPS, Checks, TitledScene, ground, subdivided_box_mesh, trajectory  # noqa: E402

# a. cubes into a bowl -----------------------------------------------------------------------------
BOWL_RADIUS = 0.2  # inner radius of the hemisphere [m]; its bottom is at z = 0, its rim at z = BOWL_RADIUS
CUBE = 0.07
CUBE_STARTS = ((0.01, 0.0, 0.07, 0.0), (-0.015, 0.01, 0.17, 0.5), (0.02, -0.01, 0.27, 1.0))  # x, y, z [m], turn
BOWL_FRAMES = 30

# b. ball at a wall --------------------------------------------------------------------------------
BALL_RADIUS = 0.05
BALL_SPEED = 50.0  # [m/s] along +X
WALL_THICKNESS, WALL_WIDTH, WALL_HEIGHT = 0.015, 0.5, 0.6
BALL_START = (-0.6, 0.0, 0.3)
WALL_FRAMES = 24

# c. mat on knives --------------------------------------------------------------------------------
MAT_SIZE = (0.3, 0.3, 0.02)
BLADE_X = (-0.12, 0.0, 0.12)
BLADE_HEIGHT, BLADE_BASE, BLADE_LENGTH = 0.06, 0.012, 0.4  # wedge height, width at its foot, length [m]
MAT_DROP = 0.03  # gap between the mat's lattice and the blade edges [m]
KNIVES_FRAMES = 30
MAT_RESOLUTION = 12  # cells of 2.5 cm: one layer through the mat's thickness, which bends

SHEET_FRAMES = {"bowl": (1, 6, BOWL_FRAMES), "wall": (1, 2, WALL_FRAMES), "knives": (1, 6, KNIVES_FRAMES)}

# ---------------------------------------------------------------------------------------------
# geometry


def hemisphere_mesh(name: str, radius: float, segments: int = 32, rings: int = 8) -> bpy.types.Mesh:
    """Open hemispherical bowl of ``radius`` around the origin: pole at z = -radius, rim on z = 0."""
    verts = [(0.0, 0.0, -radius)]
    for i in range(1, rings + 1):
        phi = -0.5 * math.pi * (1.0 - i / rings)
        for j in range(segments):
            theta = 2.0 * math.pi * j / segments
            verts.append((radius * math.cos(phi) * math.cos(theta), radius * math.cos(phi) * math.sin(theta),
                          radius * math.sin(phi)))  # fmt: skip
    faces = [(0, 1 + (j + 1) % segments, 1 + j) for j in range(segments)]
    for i in range(rings - 1):
        a, b = 1 + i * segments, 1 + (i + 1) * segments
        faces += [(a + j, a + (j + 1) % segments, b + (j + 1) % segments, b + j) for j in range(segments)]
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts, [], faces)
    me.polygons.foreach_set("use_smooth", np.ones(len(me.polygons), dtype=bool))
    me.update()
    return me


def wedge_mesh(name: str, height: float, base_width: float, length: float) -> bpy.types.Mesh:
    """A closed triangular prism along Y: foot of ``base_width`` on z = 0, a sharp edge at z = ``height``."""
    w, l2 = 0.5 * base_width, 0.5 * length
    profile = [(-w, 0.0), (w, 0.0), (0.0, height)]
    verts = [(x, y, z) for y in (-l2, l2) for x, z in profile]
    faces = [(0, 1, 2), (3, 5, 4), (0, 3, 4, 1), (1, 4, 5, 2), (2, 5, 3, 0)]
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts, [], faces)
    me.update()
    return me


# ---------------------------------------------------------------------------------------------
# scenes


class IpcScene(TitledScene):
    """One scene of the demo: the demos' titled scene (light, camera with title and clock), IPC engine."""

    def __init__(self, key: str, title: str, frame_end: int):
        super().__init__(key, title, frame_end, f"IPC demo {key}", f"Contact Lab IPC Demo {key}")

    def configure(self, substeps: int) -> None:
        s = self.scene.contact_lab
        s.engine = "IPC"
        s.soft_output = "SHAPE_KEYS"
        s.soft_substeps = substeps
        s.check_intersections = True


def build_bowl() -> IpcScene:
    d = IpcScene("bowl", "a  Three soft cubes dropped into a bowl (Mesh collider)", BOWL_FRAMES)
    ground(d, mu=0.5)
    bowl = d.add(
        "Bowl",
        hemisphere_mesh("Bowl", BOWL_RADIUS),
        common.make_material("Bowl", "#c9d6df", roughness=0.25),
        (0.0, 0.0, BOWL_RADIUS),
        role="PASSIVE",
        shape="MESH",
        friction=0.4,
    )
    colours = ("#f25f5c", "#ffe066", "#247ba0")
    cubes = []
    for k, ((x, y, z, turn), colour) in enumerate(zip(CUBE_STARTS, colours, strict=True)):
        cubes.append(
            d.add(
                f"Cube {k + 1}",
                subdivided_box_mesh(f"Cube {k + 1}", (CUBE,) * 3, 3),
                common.make_material(f"Cube {k + 1}", colour, roughness=0.4),
                (x, y, z),
                (0.0, 0.0, turn),
                role="SOFT",
                soft_preset="FLESH",
                lattice_resolution=4,
            )
        )
    d.camera((0.0, -0.55, 0.75), (0.0, 0.0, 0.07), lens=38.0)
    d.configure(substeps=1)
    d.checked = {"bowl": bowl, "cubes": cubes}
    return d


def build_wall() -> IpcScene:
    d = IpcScene("wall", f"b  Rubber ball thrown at {BALL_SPEED:g} m/s against a 1.5 cm wall", WALL_FRAMES)
    ground(d, mu=0.5)
    wall = d.add(
        "Wall",
        common.box_mesh("Wall", (WALL_THICKNESS, WALL_WIDTH, WALL_HEIGHT)),
        common.make_material("Wall", "#3e4a5a", roughness=0.6),
        (0.0, 0.0, 0.5 * WALL_HEIGHT),
        role="PASSIVE",
        shape="BOX",
        friction=0.5,
    )
    ball = d.add(
        "Ball",
        common.sphere_mesh("Ball", BALL_RADIUS),
        common.make_material("Ball", "#f25f5c", checker="#fdfdfd", scale=12.0),
        BALL_START,
        role="SOFT",
        soft_preset="RUBBER",
        lattice_resolution=5,
        initial_velocity=(BALL_SPEED, 0.0, 0.0),
    )
    d.camera((-0.35, -1.9, 0.45), (-0.35, 0.0, 0.25))
    d.configure(substeps=2)
    d.checked = {"ball": ball, "wall": wall}
    return d


def build_knives() -> IpcScene:
    d = IpcScene("knives", "c  Gel mat dropped on three knife blades (Mesh colliders)", KNIVES_FRAMES)
    ground(d, mu=0.5)
    m_blade = common.make_material("Blade", "#aab4be", roughness=0.2)
    blades = [
        d.add(
            f"Blade {k + 1}",
            wedge_mesh(f"Blade {k + 1}", BLADE_HEIGHT, BLADE_BASE, BLADE_LENGTH),
            m_blade,
            (x, 0.0, 0.0),
            role="PASSIVE",
            shape="MESH",
            friction=0.3,
        )
        for k, x in enumerate(BLADE_X)
    ]
    cell = (
        max(MAT_SIZE) / MAT_RESOLUTION
    )  # the lattice's cell: the mat's contact surface lies up to a cell outside its mesh
    mat = d.add(
        "Mat",
        subdivided_box_mesh("Mat", MAT_SIZE, 7),
        common.make_material("Mat", "#8cc63f", roughness=0.3),
        (0.0, 0.0, BLADE_HEIGHT + MAT_DROP + cell),
        role="SOFT",
        soft_preset="GEL",
        lattice_resolution=MAT_RESOLUTION,
    )
    d.camera((0.12, -0.75, 0.24), (0.0, 0.0, 0.05), lens=40.0)
    d.configure(substeps=1)
    d.checked = {"mat": mat, "blades": blades, "cell": cell}
    return d


BUILDERS = {"bowl": build_bowl, "wall": build_wall, "knives": build_knives}

# ---------------------------------------------------------------------------------------------
# checks


def summary(key: str, report: dict) -> str:
    st = report["stats"]
    return (
        f"IPC demo {key}: {report['frames']['count']} frames, {st['tets']} tets, "
        f"{st['seconds_per_frame']:.3f} s/frame, max Newton {st['max_newton_iterations']}, "
        f"min distance {st['min_distance']:.2e} m, {st['intersections']} intersections"
    )


def check_ipc(key: str, report: dict, checks: Checks) -> None:
    """What every IPC scene must show: the checker ran on every frame and found nothing; every step converged."""
    st = report["stats"]
    count = report["frames"]["count"]
    checks.expect(
        f"{key}: every frame checked, no intersection, no inverted tet",
        (st["intersections"], st["inverted"], st["checked_frames"]) == (0, 0, count),
        f"{st['intersections']} intersections, {st['inverted']} inverted in {st['checked_frames']}/{count} frames",
    )
    checks.expect(f"{key}: every frame converged", st["unconverged_frames"] == 0, f"{st['unconverged_frames']}")
    dhat = report["settings"]["dhat"]
    checks.expect(
        f"{key}: surfaces came within dhat and stayed apart (0 < min distance < dhat)",
        st["min_distance"] is not None and 0.0 < st["min_distance"] < dhat,
        f"min distance {st['min_distance']:.2e} m, dhat {dhat:.2e} m",
    )


def check_bowl(d: IpcScene, report: dict, checks: Checks) -> None:
    cubes = d.checked["cubes"]
    xs = [trajectory(c, BOWL_FRAMES) for c in cubes]  # (F, V, 3) each
    rim = BOWL_RADIUS
    top = max(float(x[-1, :, 2].max()) for x in xs)
    # inside the sphere of the bowl: the distance from its centre never exceeds the radius (the bowl is the wall)
    reach = max(float(np.linalg.norm(x - np.array([0.0, 0.0, rim]), axis=-1).max()) for x in xs)
    below = [x[:, :, 2] <= rim for x in xs]
    inside = max(
        float(np.linalg.norm(x[below[k]] - np.array([0.0, 0.0, rim]), axis=-1).max()) for k, x in enumerate(xs)
    )
    speed = max(float(np.linalg.norm(x[-1].mean(axis=0) - x[-2].mean(axis=0)) * FPS) for x in xs)
    path = ", ".join(
        f"{f}: " + "/".join(f"{x[f - 1, :, 2].mean():.3f}" for x in xs) for f in range(1, BOWL_FRAMES + 1, 5)
    )
    print(f"a. Bowl: {len(cubes)} cubes of {CUBE * 100:g} cm, bowl radius {BOWL_RADIUS:g} m, rim at z {rim:.2f} m")
    print(f"   cube centres z [m] at frames {path}")
    print(f"   farthest vertex from the bowl's centre (below the rim) {inside:.6f} m (all: {reach:.6f} m)")
    checks.expect("a: the cubes end inside the bowl, below its rim", top < rim, f"highest vertex {top:.3f} m")
    checks.expect(
        "a: no vertex below the rim ever outside the bowl's sphere",
        inside < BOWL_RADIUS,
        f"{inside:.6f} m < {BOWL_RADIUS:g} m",
    )
    checks.expect("a: nearly at rest at the end (every centre < 0.1 m/s)", speed < 0.1, f"fastest {speed:.3f} m/s")


def check_wall(d: IpcScene, report: dict, checks: Checks) -> None:
    ball = d.checked["ball"]
    x = trajectory(ball, WALL_FRAMES)
    near = -0.5 * WALL_THICKNESS
    front = float(x[..., 0].max())
    centre = x.mean(axis=1)
    vx = np.diff(centre[:, 0]) * FPS
    first = int(np.argmax(x[..., 0].max(axis=1) > near - 0.01)) + 1
    path = ", ".join(f"{f}: ({centre[f - 1, 0]:.3f}, {centre[f - 1, 2]:.3f})" for f in range(1, WALL_FRAMES + 1, 4))
    print(f"b. Wall: {BALL_RADIUS * 100:g} cm rubber ball at {BALL_SPEED:g} m/s, wall near face at x {near:.4f} m")
    print(f"   centre (x, z) [m] at frames {path}")
    print(
        f"   reaches the wall by frame {first}; frontmost vertex ever x {front:.6f} m; centre vx at the end "
        f"{vx[-1]:+.2f} m/s, peak squash {2 * BALL_RADIUS - float(np.ptp(x[..., 0], axis=1).min()):.4f} m"
    )
    checks.expect("b: the ball reaches the wall", x[..., 0].max() > near - 0.01, f"frontmost vertex {front:.4f} m")
    checks.expect(
        "b: no tunnelling: no vertex ever beyond the wall's near face (1 µm: float32 shape keys)",
        front < near + 1e-6,
        f"frontmost vertex {1e6 * (front - near):+.3f} µm past it (float32 rounding of its contact gap)",
    )
    checks.expect(
        "b: the ball rebounds or stops in front of the wall",
        vx[-1] <= 0.5 and centre[-1, 0] < near,
        f"end centre x {centre[-1, 0]:.3f} m, vx {vx[-1]:+.2f} m/s",
    )


def check_knives(d: IpcScene, report: dict, checks: Checks) -> None:
    mat, cell = d.checked["mat"], d.checked["cell"]
    x = trajectory(mat, KNIVES_FRAMES)
    end = x[-1]
    lowest = float(x[..., 2].min())
    rest = np.empty(3 * len(mat.data.vertices))
    mat.data.vertices.foreach_get("co", rest)
    bottom = rest.reshape(-1, 3)[:, 2] < 1e-6 - 0.5 * MAT_SIZE[2]
    bx = end[bottom]
    inner = np.abs(bx[:, 0]) < BLADE_X[-1]  # between the outer blades
    on_edge = np.min(np.abs(bx[:, 0, None] - np.array(BLADE_X)), axis=1) < 0.01
    between = np.min(np.abs(bx[:, 0, None] - np.array(BLADE_X)), axis=1) > 0.03
    z_edge = float(bx[inner & on_edge, 2].mean())
    z_between = float(bx[inner & between, 2].mean())
    speed = float(np.linalg.norm(x[-1].mean(axis=0) - x[-2].mean(axis=0)) * FPS)
    path = ", ".join(f"{f}: {x[f - 1, :, 2].min():.4f}" for f in range(1, KNIVES_FRAMES + 1, 5))
    print(f"c. Knives: {len(BLADE_X)} blades {BLADE_HEIGHT * 100:g} cm tall, gel mat {MAT_SIZE} m, cell {cell:.3f} m")
    print(f"   mat's lowest vertex z [m] at frames {path}")
    print(
        f"   last frame: bottom face over the edges z {z_edge:.4f} m, between the blades {z_between:.4f} m "
        f"(sag {1000 * (z_edge - z_between):.1f} mm); centre speed {speed:.3f} m/s"
    )
    checks.expect(
        "c: the mat never falls through (lowest vertex above the blades' base)", lowest > 0.0, f"{lowest:.4f} m"
    )
    checks.expect(
        "c: it rests on the blade edges (its bottom within a lattice cell of the edges)",
        BLADE_HEIGHT - 0.005 < z_edge < BLADE_HEIGHT + cell,
        f"bottom over the edges {z_edge:.4f} m, edges at {BLADE_HEIGHT:g} m",
    )
    checks.expect(
        "c: it drapes between the blades (sags ≥ 2 mm)",
        z_edge - z_between >= 0.002,
        f"sag {1000 * (z_edge - z_between):.1f} mm",
    )


CHECKERS = {"bowl": check_bowl, "wall": check_wall, "knives": check_knives}

# ---------------------------------------------------------------------------------------------
# render


# ---------------------------------------------------------------------------------------------


def after_bake(key: str, d: IpcScene, report: dict, checks: Checks) -> str:
    """Print the bake's numbers, check the scene (the IPC guarantees, then its own checks); the summary line."""
    st, s = report["stats"], report["settings"]
    common.print_lattice_bake(
        key,
        report,
        f" × {s['substeps']} substeps, dhat {s['dhat']:.2e} m",
        f"up to {st['max_contacts']} contacts, κ up to {st['max_kappa']:.3g} Pa/m; {st['solver_steps']} steps "
        f"({st['halved_steps']} halved for fast contacts)",
    )
    line = summary(key, report)
    check_ipc(key, report, checks)
    CHECKERS[key](d, report, checks)
    return line


def main(argv: list[str]) -> int:
    return common.run_scenes(argv, __doc__, "IPC", BUILDERS, SHEET_FRAMES, after_bake)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
