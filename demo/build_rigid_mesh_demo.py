"""Contact Lab rigid mesh demo: Suzannes and rocks fall into a concave bowl, set up with Blender's rigid body world.

Run with the project's virtual environment (``make demo`` runs it after the IPC demo)::

    .venv/bin/python demo/build_rigid_mesh_demo.py [--out out] [--docs] [--no-render] [--samples 12]

Scene (Z up, metres, 24 fps, Rigid engine, baked to location/rotation keyframes):

* a ceramic **bowl**, a lathed solid (a spherical inside of radius 1 m, a 6 cm wall, a rounded rim and a foot),
  whose collision shape is its own mesh: a passive Mesh, concave, which no convex shape could stand in for;
* six **Suzannes** (Convex Hull) and twelve **rocks** (icospheres with jittered vertices, Convex Hull) dropped
  into it in four staggered rings; they land on each other and on the curved wall, slide down and settle in a
  pile at the bottom;
* a thick passive slab under the bowl (Box) as the ground.

Every physical setting is made with Blender's own rigid body panel (``bpy.ops.rigidbody.object_add``: type,
collision shape, mass, friction, bounciness, the world's substeps), then converted in one call by
``bpy.ops.contact_lab.import_rigid_body()`` (Blender's world is muted, its settings kept) and baked by
``bpy.ops.contact_lab.bake()``. The script prints the import's and the bake's reports and checks the outcome:
every body ends inside the bowl, below its rim, at rest, and no vertex ever sinks behind the bowl's surface by
more than a few millimetres; it exits 1 when a check fails.

Outputs: ``out/rigid_mesh_demo.blend`` (baked), ``out/rigid_mesh_frames/*.png``,
``out/rigid_mesh_demo_contact_sheet.png`` (3 × 2 frames); with ``--docs`` (``make pictures``) also a copy in
``docs/rigid_mesh_demo_contact_sheet.png``.
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
from mathutils import Matrix
from mathutils.bvhtree import BVHTree

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402  (materials, meshes, titled scene, bake, render, sheet and checks)
from common import FPS, Checks, TitledScene, with_rigid_body  # noqa: E402

bmesh = common.bmesh

FRAME_END = 120  # 5 s
SHEET_FRAMES = (1, 12, 18, 24, 36, FRAME_END)
SUBSTEPS = 8  # Blender's Substeps per Frame, carried over by the import

# bowl: a lathed solid, its inside a sphere of BOWL_RADIUS around (0, 0, BOWL_CENTRE_Z) ---------------------------
BOWL_RADIUS = 1.0
BOWL_WALL = 0.06
BOWL_RIM_DEG = 12.0  # the rim lies this far below the sphere's equator
BOWL_FOOT_RADIUS, BOWL_FOOT_HEIGHT = 0.42, 0.06
BOWL_SEGMENTS = 64
BOWL_CENTRE_Z = math.sqrt((BOWL_RADIUS + BOWL_WALL) ** 2 - BOWL_FOOT_RADIUS**2) + BOWL_FOOT_HEIGHT
RIM_RADIUS = BOWL_RADIUS * math.cos(math.radians(BOWL_RIM_DEG))  # inner edge of the rim [m]
RIM_Z = BOWL_CENTRE_Z - BOWL_RADIUS * math.sin(math.radians(BOWL_RIM_DEG))  # height of the rim's inner edge [m]

# bodies ----------------------------------------------------------------------------------------------------------
SUZANNES, ROCKS = 6, 12
SUZANNE_WIDTH = 0.45  # ear to ear [m]
ROCK_RADIUS = (0.1, 0.16)  # range of the rocks' mean radius [m]
RINGS = ((5, 0.5, 1.25), (4, 0.42, 1.65), (5, 0.5, 2.05), (4, 0.42, 2.45))  # (bodies, radius, height) per ring
SEED = 11

# checks ----------------------------------------------------------------------------------------------------------
REST_SPEED = 0.05  # [m/s] centre speed over the last frame
REST_SPIN = 0.5  # [rad/s]
DEPTH_TOLERANCE = 0.004  # [m] deepest any vertex may be behind the bowl's surface (inside its wall)

# ---------------------------------------------------------------------------------------------
# geometry


def bowl_profile() -> list[tuple[float, float]]:
    """(radius, height) from the inside's lowest point over the rim and down the outside to the foot's centre."""
    r_in, r_out, zc = BOWL_RADIUS, BOWL_RADIUS + BOWL_WALL, BOWL_CENTRE_Z
    rim = -math.radians(BOWL_RIM_DEG)
    inside = [(r_in * math.cos(a), zc + r_in * math.sin(a)) for a in np.linspace(-0.5 * math.pi, rim, 25)]
    # the rim: a half circle over the wall's thickness
    mid = (0.5 * (r_in + r_out) * math.cos(rim), zc + 0.5 * (r_in + r_out) * math.sin(rim))
    outward = (math.cos(rim), math.sin(rim))
    up = (-outward[1], outward[0])
    half = 0.5 * BOWL_WALL
    lip = [
        (mid[0] - half * math.cos(t) * outward[0] + half * math.sin(t) * up[0],
         mid[1] - half * math.cos(t) * outward[1] + half * math.sin(t) * up[1])
        for t in np.linspace(0.0, math.pi, 9)[1:-1]
    ]  # fmt: skip
    foot = -math.acos(BOWL_FOOT_RADIUS / r_out)
    outside = [(r_out * math.cos(a), zc + r_out * math.sin(a)) for a in np.linspace(rim, foot, 20)]
    return inside + lip + outside + [(BOWL_FOOT_RADIUS, 0.0), (0.0, 0.0)]


def bowl_mesh(name: str) -> bpy.types.Mesh:
    """The profile turned about Z: a closed solid, faces pointing out (the inside's faces point into the bowl)."""
    profile = bowl_profile()
    n = BOWL_SEGMENTS
    phi = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    verts = [(r * math.cos(p), r * math.sin(p), z) for r, z in profile for p in phi]
    faces = [
        (i * n + j, i * n + (j + 1) % n, (i + 1) * n + (j + 1) % n, (i + 1) * n + j)
        for i in range(len(profile) - 1)
        for j in range(n)
    ]
    bm = common.welded_bmesh(name, verts, faces)
    bmesh.ops.dissolve_degenerate(bm, edges=bm.edges[:], dist=1e-7)
    bmesh.ops.recalc_face_normals(bm, faces=bm.faces[:])
    return common.mesh_from_bmesh(name, bm, smooth=True)


def suzanne_mesh(name: str) -> bpy.types.Mesh:
    bm = bmesh.new()
    bmesh.ops.create_monkey(bm, matrix=Matrix.Scale(SUZANNE_WIDTH / 2.734375, 4))
    return common.mesh_from_bmesh(name, bm, smooth=True)


def rock_mesh(name: str, rng: np.random.Generator) -> bpy.types.Mesh:
    """A low-poly rock: an icosphere whose vertices are pushed in and out, squashed along random axes."""
    bm = bmesh.new()
    bmesh.ops.create_icosphere(bm, subdivisions=2, radius=1.0)
    radius = rng.uniform(*ROCK_RADIUS)
    stretch = rng.uniform(0.7, 1.25, size=3)
    for v in bm.verts:
        v.co *= radius * rng.uniform(0.8, 1.15)
        v.co.x *= stretch[0]
        v.co.y *= stretch[1]
        v.co.z *= stretch[2]
    return common.mesh_from_bmesh(name, bm)


# ---------------------------------------------------------------------------------------------
# scene


def drop_poses(rng: np.random.Generator) -> list[tuple[tuple, tuple]]:
    """(location, rotation) of every body: evenly round each ring, the rings turned against each other."""
    poses = []
    for k, (count, radius, z) in enumerate(RINGS):
        turn = 0.5 * k * 2.0 * math.pi / count
        for i in range(count):
            a = turn + 2.0 * math.pi * i / count + rng.uniform(-0.15, 0.15)
            poses.append(((radius * math.cos(a), radius * math.sin(a), z), tuple(rng.uniform(0.0, 2.0 * math.pi, 3))))
    return poses


def build_scene() -> TitledScene:
    d = TitledScene(
        "rigid_mesh",
        "Into a bowl (a passive Mesh)",
        FRAME_END,
        "Contact Lab rigid mesh demo",
        "Contact Lab Rigid Mesh Demo",
    )
    scene = d.scene
    rng = np.random.default_rng(SEED)

    ground = d.add(
        "Ground",
        common.box_mesh("Ground", (14.0, 14.0, 0.5)),
        common.make_material("Ground", "#d6d1c8", roughness=0.8, checker="#c5bfb5", scale=1.0),
        (0.0, 0.0, -0.25),
    )
    with_rigid_body(ground, type="PASSIVE", collision_shape="BOX", friction=0.8)
    bowl = d.add("Bowl", bowl_mesh("Bowl"), common.make_material("Bowl", "#c9d6df", roughness=0.25), (0.0, 0.0, 0.0))
    with_rigid_body(bowl, type="PASSIVE", collision_shape="MESH", friction=0.8, restitution=0.3)

    m_suzanne = [common.make_material(f"Suzanne {c}", c, roughness=0.4) for c in ("#f25f5c", "#ffb400", "#247ba0")]
    m_rock = [common.make_material(f"Rock {c}", c, roughness=0.9) for c in ("#6b6259", "#8a7f72", "#4f4a45")]
    poses = drop_poses(rng)
    kinds = ["Suzanne"] * SUZANNES + ["Rock"] * ROCKS
    order = rng.permutation(len(kinds))  # Suzannes and rocks mixed over the rings
    bodies = []
    counts = {"Suzanne": 0, "Rock": 0}
    for slot in range(len(kinds)):
        kind = kinds[order[slot]]
        counts[kind] += 1
        name = f"{kind} {counts[kind]}"
        location, rotation = poses[slot]
        if kind == "Suzanne":
            obj = d.add(name, suzanne_mesh(name), m_suzanne[counts[kind] % 3], location, rotation)
            with_rigid_body(obj, collision_shape="CONVEX_HULL", mass=2.0, friction=0.8, restitution=0.3)
        else:
            obj = d.add(name, rock_mesh(name, rng), m_rock[counts[kind] % 3], location, rotation)
            with_rigid_body(obj, collision_shape="CONVEX_HULL", mass=3.0, friction=0.8, restitution=0.2)
        bodies.append(obj)

    scene.rigidbody_world.substeps_per_frame = SUBSTEPS
    d.camera((0.0, -4.3, 3.9), (0.0, 0.0, 1.1), lens=30.0)
    d.checked = {"bowl": bowl, "bodies": bodies}
    scene.frame_set(1)
    return d


# ---------------------------------------------------------------------------------------------
# import, bake and checks


def import_rigid_body(scene) -> dict:
    result = bpy.ops.contact_lab.import_rigid_body()
    if result != {"FINISHED"}:
        raise RuntimeError(f"bpy.ops.contact_lab.import_rigid_body() returned {result}")
    report = json.loads(scene.contact_lab.last_import_report)
    kinds = {}
    for name, entry in report["objects"].items():
        s = entry["settings"]
        kinds.setdefault(f"{s['role'].title()} {s['shape'].replace('_', ' ').title()}", []).append(name)
    print("Import of Blender's rigid bodies (scene.contact_lab.last_import_report):")
    for kind, names in sorted(kinds.items()):
        print(f"  {kind}: {len(names)} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})")
    print(f"  world: {report['world']['settings']}; Blender's world muted: {report['blender_world_muted']}")
    lost = {n: e["not_carried"] for n, e in report["objects"].items() if e["not_carried"]}
    lost_world = report["world"]["not_carried"]
    print(f"  not carried over: {lost or 'nothing'}" + (f"; world: {lost_world}" if lost_world else ""))
    return report


def local_vertices(obj) -> np.ndarray:
    co = np.empty(3 * len(obj.data.vertices))
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def depth_behind(tree: BVHTree, points: np.ndarray) -> float:
    """Deepest of ``points`` behind the surface in ``tree`` (inside the solid its faces point out of), or 0."""
    deepest = 0.0
    for p in points:
        location, normal, _, distance = tree.find_nearest(p)
        if location is not None and (p - np.array(location)) @ np.array(normal) < 0.0:
            deepest = max(deepest, distance)
    return deepest


def check(d: TitledScene, report: dict, checks: Checks) -> None:
    bowl, bodies = d.checked["bowl"], d.checked["bodies"]
    frames = np.arange(1, FRAME_END + 1)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    tree = BVHTree.FromObject(bowl, depsgraph)  # the bowl is static at the origin: its world is its object space
    centre = np.array([0.0, 0.0, BOWL_CENTRE_Z])
    rows = []
    for obj in bodies:
        m = common.world_matrices(obj, frames)  # (F, 4, 4)
        verts = local_vertices(obj)
        world = np.einsum("fij,vj->fvi", m[:, :3, :3], verts) + m[:, None, :3, 3]  # (F, V, 3)
        c = world.mean(axis=1)  # (F, 3): the vertices' mean as the body's centre
        speed = float(np.linalg.norm(c[-1] - c[-2]) * FPS)
        r = m[-1, :3, :3] @ m[-2, :3, :3].T
        spin = float(math.acos(max(-1.0, min(1.0, 0.5 * (np.trace(r) - 1.0)))) * FPS)
        depth = max(depth_behind(tree, world[f]) for f in range(0, len(frames), 2))
        end = c[-1]
        rows.append(
            {
                "name": obj.name,
                "radial": float(np.hypot(end[0], end[1])),
                "z": float(end[2]),
                "top": float(world[-1, :, 2].max()),
                "reach": float(np.linalg.norm(world[-1] - centre, axis=1).max()),
                "speed": speed,
                "spin": spin,
                "depth": depth,
                "fall": float(c[0, 2] - end[2]),
            }
        )
    bpy.context.scene.frame_set(1)
    st = report["stats"]
    print(
        f"Bowl: inside radius {BOWL_RADIUS:g} m, rim (inner edge) at radius {RIM_RADIUS:.3f} m, height {RIM_Z:.3f} m;"
        f" the inside's lowest point at z {BOWL_CENTRE_Z - BOWL_RADIUS:.3f} m"
    )
    print("   body        centre r / z [m]   top z [m]   speed [m/s]   spin [rad/s]   deepest behind the bowl [mm]")
    for row in rows:
        print(
            f"   {row['name']:<11} {row['radial']:6.3f} / {row['z']:6.3f}   {row['top']:8.3f}   {row['speed']:10.4f}"
            f"   {row['spin']:11.4f}   {1000 * row['depth']:10.2f}"
        )
    worst = {k: max(rows, key=lambda row, k=k: row[k]) for k in ("radial", "z", "top", "speed", "spin", "depth")}
    checks.expect(
        "every body fell into the bowl (its centre inside the rim, below the rim's height)",
        all(row["radial"] < RIM_RADIUS and row["z"] < RIM_Z for row in rows),
        f"farthest from the axis {worst['radial']['name']} at {worst['radial']['radial']:.3f} m "
        f"(rim {RIM_RADIUS:.3f} m); highest centre {worst['z']['name']} at {worst['z']['z']:.3f} m "
        f"(rim {RIM_Z:.3f} m)",
    )
    checks.expect(
        "every vertex ends inside the bowl's sphere (nothing rests on the rim or outside)",
        all(row["reach"] < BOWL_RADIUS + DEPTH_TOLERANCE for row in rows),
        f"farthest vertex from the sphere's centre {max(row['reach'] for row in rows):.4f} m "
        f"(radius {BOWL_RADIUS:g} m + {1000 * DEPTH_TOLERANCE:g} mm)",
    )
    checks.expect(
        f"at rest at the end (every centre < {REST_SPEED:g} m/s, every spin < {REST_SPIN:g} rad/s)",
        worst["speed"]["speed"] < REST_SPEED and worst["spin"]["spin"] < REST_SPIN,
        f"fastest {worst['speed']['name']} {worst['speed']['speed']:.4f} m/s, "
        f"{worst['spin']['name']} {worst['spin']['spin']:.4f} rad/s",
    )
    checks.expect(
        f"no vertex ever behind the bowl's surface by more than {DEPTH_TOLERANCE * 1000:g} mm (every other frame)",
        worst["depth"]["depth"] <= DEPTH_TOLERANCE,
        f"deepest {worst['depth']['name']} {1000 * worst['depth']['depth']:.2f} mm; solver's largest penetration "
        f"{1000 * st['max_penetration']:.2f} mm",
    )
    checks.expect("no contact buffer overflow", st["contact_overflow"] == 0, f"{st['contact_overflow']}")


# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    args = common.arguments(__doc__.splitlines()[0]).parse_args(argv)

    t_start = time.perf_counter()
    print(f"Contact Lab rigid mesh demo: Blender {bpy.app.version_string} (bpy module), numpy {np.__version__}")
    args.out.mkdir(parents=True, exist_ok=True)
    if not common.register_addon():
        print("ERROR: the Contact Lab add-on could not be registered")
        return 1
    d = build_scene()
    scene = d.scene
    print(
        f"Scene built: {SUZANNES} Suzannes and {ROCKS} rocks (Convex Hull) over a bowl (passive Mesh, "
        f"{len(d.checked['bowl'].data.polygons)} faces), set up with Blender's rigid body settings"
    )
    try:
        import_rigid_body(scene)
        report = common.run_bake(scene)
    except Exception:
        traceback.print_exc()
        return common.save_unbaked(args.out, "rigid_mesh_demo", "the import or the bake")
    st, s = report["stats"], report["settings"]
    print(
        f"Bake ({report['frames']['count']} frames × {s['substeps']} substeps, {s['solver']}, friction "
        f"{s['friction_combine'].title()}): {len(report['bodies']['active'])} active and "
        f"{len(report['bodies']['passive'])} passive bodies; up to {st['max_contacts']} contacts, "
        f"{st['max_iterations']} iterations, largest penetration {1000 * st['max_penetration']:.2f} mm; "
        f"{report['wall_seconds']:.1f} s (a first run includes the Numba compile)"
    )
    checks = Checks()
    check(d, report, checks)
    common.save(args.out, "rigid_mesh_demo")
    if not args.no_render:
        engine, paths = common.render_scene(d, args.out / "rigid_mesh_frames", args.samples, SHEET_FRAMES)
        path = args.out / "rigid_mesh_demo_contact_sheet.png"
        written = common.publish_sheet(paths, path, args.docs)
        frames = ", ".join(map(str, SHEET_FRAMES))
        print(f"Contact sheet ({engine}, frames {frames}): {written}")
    return checks.report(
        f"Rigid mesh demo finished in {time.perf_counter() - t_start:.1f} s ({report['wall_seconds']:.1f} s baking)"
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
