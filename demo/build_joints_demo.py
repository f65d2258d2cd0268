"""Contact Lab joints demo: a door, a chain, a cart and a wall, held together by Blender's rigid body constraints.

Run with the project's virtual environment (``make demo`` runs it after the rigid mesh demo)::

    .venv/bin/python demo/build_joints_demo.py [--out out] [--docs] [--no-render] [--samples 12] [--only door,...]

Four scenes (Z up, metres, 24 fps, 120 frames, Rigid engine), each made the way an artist makes it: bodies with
Blender's Physics tab (``bpy.ops.rigidbody.object_add``), constraints with Object ▸ Rigid Body ▸ Connect
(``bpy.ops.rigidbody.connect`` on the selected bodies), converted by ``bpy.ops.contact_lab.import_rigid_body()``
and baked by ``bpy.ops.contact_lab.bake()``, which reads the constraints themselves:

* **door**: a door on a Hinge (angular limits 0–100°) to a passive post; a ball rolls down a ramp into it and
  pushes it open until the limit stops it;
* **chain**: a lamp hanging from a passive beam by 20 links joined point to point (Connect, Chain by Distance),
  let go from 35° off the vertical: it swings;
* **cart**: a cart on a Slider along a passive rail, driven by a linear Motor (target 1 m/s);
* **wall**: a slab cut by the script into 51 bricks in a running bond (``bmesh.ops.bisect_plane``), every
  touching pair and the bottom course to the ground joined by breakable Fixed constraints (Breaking Threshold
  8 N·s; the bottom course's 400, as if set in the foundation); a 90 kg wrecking ball on a rod, on a Point
  joint 3 m above the third course, swings down into it: the joints near the impact break and those bricks
  fall, the far ones stay. The wall answers a blow as one rigid frame: with the bottom course as weak as the
  rest, the whole wall would snap off along its lowest joints instead.

Each scene checks its own outcome (the door ends at its limit, every chain joint stays closed, the cart's speed,
which joints broke and where the bricks went); the script exits 1 and names the failed check otherwise.

Outputs: ``out/joints_demo_<scene>.blend`` (baked), ``out/joints_frames/*.png``,
``out/joints_demo_contact_sheet.png`` (one row of three frames per scene); with ``--docs`` (``make pictures``) also
a copy in ``docs/joints_demo_contact_sheet.png``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import bpy
import numpy as np
from mathutils import Matrix

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402  (materials, meshes, titled scene, bake, render, sheet and checks)
from common import FPS, Checks, TitledScene, with_rigid_body  # noqa: E402

bmesh = common.bmesh

FRAME_END = 120  # 5 s
SUBSTEPS = 10  # Blender's Substeps per Frame (its default), carried over by the import: 240 Hz

# door -------------------------------------------------------------------------------------------------------------
DOOR_SIZE = (1.0, 0.06, 2.0)  # width along X from the hinge, thickness, height [m]
DOOR_LIMIT_DEG = 100.0  # the hinge's upper angular limit; the lower is 0
DOOR_TOLERANCE_DEG = 2.0
RAMP_DEG = 15.0

# chain ------------------------------------------------------------------------------------------------------------
LINKS = 20
LINK_PITCH = 0.13  # centre to centre [m]
LINK_RADIUS, LINK_LENGTH = 0.022, 0.12  # capsule [m]
CHAIN_TILT_DEG = 35.0  # from the vertical, toward -X, at the first frame
BEAM_Z = 4.2
JOINT_GAP = 1e-3  # [m] largest allowed distance between a joint's two pivots
LAMP_SWING = 0.5  # [m] smallest x range of the lamp's centre

# cart -------------------------------------------------------------------------------------------------------------
CART_SPEED = 1.0  # the motor's target [m/s]
CART_FORCE = 300.0  # the motor's Max Impulse: Blender's bound on the force [N]
CART_SPEED_TOLERANCE = 0.1  # relative

# wall -------------------------------------------------------------------------------------------------------------
WALL_WIDTH, WALL_THICKNESS = 4.0, 0.2  # along Y, along X [m]
BRICK_LENGTH, BRICK_HEIGHT, ROWS = 0.5, 0.25, 6
BRICK_GAP = 0.002  # [m] between neighbouring bricks (each shrunk by half of it)
BRICK_MASS = 4.0
WALL_X = 0.32  # the wall's front face [m]
BREAKING = 8.0  # the Fixed constraints' Breaking Threshold (Blender's impulse per substep) [N·s]
BALL_RADIUS, BALL_MASS = 0.3, 90.0
RELEASE_DEG = 90.0  # the ball's start, from the vertical (level with the pivot)
PIVOT_Z = 3.55  # the wrecking ball's pivot: 3 m above where it meets the wall, low in the third course
FOOTING_BREAKING = 400.0  # the bottom course's joints (to the ground and from it): set in the foundation
IMPACT = np.array([WALL_X, 0.0, PIVOT_Z - 3.0])  # where the ball meets the wall at the bottom of its swing [m]
NEAR, FAR = 0.8, 1.6  # [m] from the impact, in the wall's plane
BROKEN_REACH = 1.25  # [m] from the impact, in the wall's plane: no joint farther breaks
FELL, STAYED = 0.15, 0.02  # [m] a near brick's drop / a far brick's largest displacement

SHEET_FRAMES = {"door": (1, 54, FRAME_END), "chain": (1, 22, 43), "cart": (1, 60, FRAME_END), "wall": (1, 28, 60)}

# ---------------------------------------------------------------------------------------------
# Blender's own tools: rigid bodies and Connect


def connect(active, selected: list, kind: str, pattern: str = "SELECTED_TO_ACTIVE", pivot: str = "CENTER") -> list:
    """Object ▸ Rigid Body ▸ Connect with ``active`` active and ``selected`` selected: the new constraint Empties
    (Object 1 is the earlier body of each pair, the active one for Selected to Active)."""
    before = set(bpy.data.objects)
    view_layer = bpy.context.view_layer
    view_layer.objects.active = active  # the operator's poll asks the active object for a rigid body
    with bpy.context.temp_override(selected_objects=[active, *selected]):
        result = bpy.ops.rigidbody.connect(con_type=kind, pivot_type=pivot, connection_pattern=pattern)
    if result != {"FINISHED"}:
        raise RuntimeError(f"rigidbody.connect({kind}) returned {result}")
    for obj in view_layer.objects.selected:
        obj.select_set(False)
    made = [o for o in bpy.data.objects if o not in before]
    for obj in made:
        obj.empty_display_size = 0.15
    return sorted(made, key=lambda o: o.name)


def rename(obj, name: str):
    obj.name = name
    return obj


def new_scene(key: str, title: str) -> TitledScene:
    d = TitledScene(key, title, FRAME_END, f"Contact Lab joints demo: {key}", "Contact Lab Joints Demo")
    bpy.ops.rigidbody.world_add()
    d.scene.rigidbody_world.substeps_per_frame = SUBSTEPS
    return d


def ground(d: TitledScene, friction: float = 0.8):
    mat = common.make_material("Ground", "#d6d1c8", roughness=0.8, checker="#c5bfb5", scale=1.0)
    obj = d.add("Ground", common.box_mesh("Ground", (16.0, 16.0, 0.5)), mat, (0.0, 0.0, -0.25))
    with_rigid_body(obj, type="PASSIVE", collision_shape="BOX", friction=friction)
    return obj


def finish(d: TitledScene) -> TitledScene:
    """Convert Blender's rigid bodies (the constraints stay as they are: the bake reads them)."""
    d.scene.frame_set(1)
    result = bpy.ops.contact_lab.import_rigid_body()
    if result != {"FINISHED"}:
        raise RuntimeError(f"bpy.ops.contact_lab.import_rigid_body() returned {result}")
    report = json.loads(d.scene.contact_lab.last_import_report)
    kinds = sorted({e["type"] for e in report.get("constraints", {}).values() if "type" in e})
    print(
        f"Scene '{d.key}': {len(report['objects'])} rigid bodies and {len(report.get('constraints', {}))} "
        f"constraints ({', '.join(kinds)}) imported"
    )
    return d


def rotation_z(m: np.ndarray) -> np.ndarray:
    """Angle [rad] about world Z of each rotation in the matrices (F, 4, 4), unwrapped over the frames."""
    return np.unwrap(np.arctan2(m[:, 1, 0], m[:, 0, 0]))


def pivot_gaps(constraints: list, frames: np.ndarray) -> np.ndarray:
    """Per constraint, the largest distance [m] over ``frames`` between its pivot carried by Object 1 and by
    Object 2 (each body keeps the pivot where it was at the first frame, in its own frame); shape (C,)."""
    cache: dict = {}

    def matrices(obj):
        if obj.name not in cache:
            cache[obj.name] = common.world_matrices(obj, frames)
        return cache[obj.name]

    gaps = []
    for empty in constraints:
        c = empty.rigid_body_constraint
        p = np.append(np.array(empty.matrix_world.translation), 1.0)
        m1, m2 = matrices(c.object1), matrices(c.object2)
        a = np.einsum("fij,j->fi", m1, np.linalg.solve(m1[0], p))
        b = np.einsum("fij,j->fi", m2, np.linalg.solve(m2[0], p))
        gaps.append(float(np.linalg.norm(a - b, axis=1).max()))
    bpy.context.scene.frame_set(1)
    return np.array(gaps)


# ---------------------------------------------------------------------------------------------
# (a) door


def build_door() -> TitledScene:
    d = new_scene("door", "Hinge with limits 0–100°, pushed open")
    ground(d)
    wood = common.make_material("Door", "#b5651d", roughness=0.6)
    grey = common.make_material("Post", "#5c6770", roughness=0.5)
    # the post stands behind the hinge, clear of the door over its whole swing
    post = d.add("Post", common.box_mesh("Post", (0.08, 0.08, 2.3)), grey, (-0.06, -0.04, 1.15))
    with_rigid_body(post, type="PASSIVE", collision_shape="BOX")
    w, t, h = DOOR_SIZE
    door = d.add("Door", common.box_mesh("Door", DOOR_SIZE), wood, (0.01 + 0.5 * w, 0.0, 0.05 + 0.5 * h))
    with_rigid_body(door, collision_shape="BOX", mass=4.0, friction=0.4)
    # object 1 the door, object 2 the post: Blender's hinge angle counts the door against the post about the
    # Empty's Z, so 0–100° lets the door's free end (+X) swing toward +Y
    (hinge,) = connect(door, [post], "HINGE", pivot="ACTIVE")
    rename(hinge, "Door Hinge")
    hinge.location = (0.0, 0.5 * t, 0.05 + 0.5 * h)  # the door's edge on the side it opens toward
    c = hinge.rigid_body_constraint
    c.use_limit_ang_z = True
    c.limit_ang_z_lower, c.limit_ang_z_upper = 0.0, math.radians(DOOR_LIMIT_DEG)
    # a ramp descending toward +Y, its low end short of the door, a ball at its top
    a = math.radians(RAMP_DEG)
    length = 3.0
    ramp_y = -1.1 - 0.5 * length * math.cos(a)
    ramp_z = 0.5 * length * math.sin(a) - 0.1 * math.cos(a) + 0.02
    slab = common.make_material("Ramp", "#8fa3b0", roughness=0.6)
    ramp = d.add("Ramp", common.box_mesh("Ramp", (1.2, length, 0.2)), slab, (0.75, ramp_y, ramp_z), (-a, 0, 0))
    with_rigid_body(ramp, type="PASSIVE", collision_shape="BOX", friction=0.8)
    r = 0.2
    top = np.array([0.75, ramp_y - 0.4 * length * math.cos(a), ramp_z + 0.4 * length * math.sin(a)])
    up = np.array([0.0, math.sin(a), math.cos(a)])  # the ramp's top face normal
    ball_mat = common.make_material("Ball", "#f25f5c", roughness=0.4, checker="#ffffff", scale=3.0)
    ball = d.add("Ball", common.sphere_mesh("Ball", r), ball_mat, tuple(top + (0.1 + r + 0.003) * up))
    with_rigid_body(ball, collision_shape="SPHERE", mass=3.0, friction=0.8)
    d.camera((3.2, -4.6, 2.6), (0.3, -0.6, 0.8), lens=28.0)
    d.checked = {"door": door, "ball": ball}
    return finish(d)


def check_door(d: TitledScene, report: dict, checks: Checks) -> str:
    m = common.world_matrices(d.checked["door"], np.arange(1, FRAME_END + 1))
    angle = np.degrees(rotation_z(m) - rotation_z(m)[:1])
    bpy.context.scene.frame_set(1)
    final, widest = float(angle[-1]), float(angle.max())
    checks.expect(
        "door: the ball pushed it open (it turned more than 45°)", widest > 45.0, f"widest {widest:.1f}° at frame "
        f"{int(np.argmax(angle)) + 1}"
    )  # fmt: skip
    checks.expect(
        f"door: it ends at its {DOOR_LIMIT_DEG:g}° limit (within {DOOR_TOLERANCE_DEG:g}°) and never passes it by more",
        abs(final - DOOR_LIMIT_DEG) < DOOR_TOLERANCE_DEG and widest < DOOR_LIMIT_DEG + DOOR_TOLERANCE_DEG,
        f"final {final:.2f}°, widest {widest:.2f}°",
    )
    return f"Door: opened to {widest:.2f}°, ends at {final:.2f}° (limit {DOOR_LIMIT_DEG:g}°)"


# ---------------------------------------------------------------------------------------------
# (b) chain and lamp


def lamp_mesh(name: str) -> bpy.types.Mesh:
    """A conical shade, open side down, with a bulb; its origin at the top of the shade."""
    bm = bmesh.new()
    bmesh.ops.create_cone(
        bm, cap_ends=True, segments=32, radius1=0.28, radius2=0.06, depth=0.3, matrix=Matrix.Translation((0, 0, -0.15))
    )
    bmesh.ops.create_uvsphere(bm, u_segments=16, v_segments=8, radius=0.08, matrix=Matrix.Translation((0, 0, -0.3)))
    return common.mesh_from_bmesh(name, bm, smooth=True)


def build_chain() -> TitledScene:
    d = new_scene("chain", "20 links (Connect: Chain by Distance)")
    ground(d)
    steel = common.make_material("Link", "#7d8a96", roughness=0.3)
    beam_mat = common.make_material("Beam", "#3d4a57", roughness=0.5)
    beam = d.add("Beam", common.box_mesh("Beam", (0.3, 1.2, 0.16)), beam_mat, (0.0, 0.0, BEAM_Z + 0.08))
    with_rigid_body(beam, type="PASSIVE", collision_shape="BOX")
    tilt = math.radians(CHAIN_TILT_DEG)
    down = np.array([-math.sin(tilt), 0.0, -math.cos(tilt)])  # along the chain, from the beam
    hang = np.array([0.0, 0.0, BEAM_Z])
    links = []
    mesh = common.capsule_mesh("Link", LINK_RADIUS, LINK_LENGTH)
    for i in range(LINKS):
        centre = hang + (0.5 + i) * LINK_PITCH * down
        link = d.add(f"Link {i + 1:02d}", mesh.copy(), steel, tuple(centre), (0.0, tilt, 0.0))  # Z along the chain
        with_rigid_body(link, collision_shape="CAPSULE", mass=0.1, friction=0.5)
        links.append(link)
    shade = common.make_material("Lamp", "#ffb400", roughness=0.35)
    lamp_top = hang + LINKS * LINK_PITCH * down
    lamp = d.add("Lamp", lamp_mesh("Lamp"), shade, tuple(lamp_top + 0.02 * down), (0.0, tilt, 0.0))
    with_rigid_body(lamp, collision_shape="CONVEX_HULL", mass=1.5, friction=0.5)
    # Chain by Distance from the beam: beam-link 1, link 1-link 2, ..., link 20-lamp, each pivot halfway
    joints = connect(beam, [*links, lamp], "POINT", pattern="CHAIN_DISTANCE")
    # the beam's pivot halfway between its centre and the first link's would sit inside the beam: move it to
    # the chain's top end, where the link hangs from
    first = next(j for j in joints if beam in (j.rigid_body_constraint.object1, j.rigid_body_constraint.object2))
    first.location = tuple(hang)
    d.camera((0.2, -7.2, 2.4), (-0.5, 0.0, 2.3), lens=32.0)
    d.checked = {"joints": joints, "lamp": lamp}
    return finish(d)


def check_chain(d: TitledScene, report: dict, checks: Checks) -> str:
    frames = np.arange(1, FRAME_END + 1)
    joints = d.checked["joints"]
    gaps = pivot_gaps(joints, frames)
    lamp = common.world_matrices(d.checked["lamp"], frames)[:, :3, 3]
    bpy.context.scene.frame_set(1)
    swing = float(np.ptp(lamp[:, 0]))
    worst = int(np.argmax(gaps))
    checks.expect(
        f"chain: {len(joints)} joints made by Connect ({LINKS} links, the beam and the lamp)",
        len(joints) == LINKS + 1,
        f"{len(joints)}",
    )
    checks.expect(
        f"chain: every link stays attached (largest joint gap < {1000 * JOINT_GAP:g} mm over the bake)",
        gaps.max() < JOINT_GAP,
        f"largest {1000 * gaps.max():.3f} mm at '{joints[worst].name}'",
    )
    checks.expect(
        f"chain: the lamp swings (its x range > {LAMP_SWING:g} m)", swing > LAMP_SWING, f"x range {swing:.2f} m"
    )
    return f"Chain: largest joint gap {1000 * gaps.max():.3f} mm over {len(joints)} joints; lamp x range {swing:.2f} m"


# ---------------------------------------------------------------------------------------------
# (c) motor-driven cart


def cart_mesh(name: str) -> bpy.types.Mesh:
    """A box body on four wheels (one mesh), its origin at the body's centre."""
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0, matrix=Matrix.Diagonal((0.8, 0.5, 0.25, 1.0)))
    for x in (-0.26, 0.26):
        for y in (-0.27, 0.27):
            place = Matrix.Translation((x, y, -0.125)) @ Matrix.Rotation(math.pi / 2, 4, "X")
            bmesh.ops.create_cone(bm, cap_ends=True, segments=20, radius1=0.1, radius2=0.1, depth=0.04, matrix=place)
    return common.mesh_from_bmesh(name, bm)


def build_cart() -> TitledScene:
    d = new_scene("cart", "Slider + Motor (target 1 m/s)")
    ground(d)
    rail_mat = common.make_material("Rail", "#5c6770", roughness=0.4)
    rail = d.add("Rail", common.box_mesh("Rail", (9.0, 0.7, 0.06)), rail_mat, (0.5, 0.0, 0.03))
    with_rigid_body(rail, type="PASSIVE", collision_shape="BOX", friction=0.3)
    body = common.make_material("Cart", "#247ba0", roughness=0.45)
    cart = d.add("Cart", cart_mesh("Cart"), body, (-3.0, 0.0, 0.06 + 0.225 + 0.001))
    with_rigid_body(cart, collision_shape="BOX", mass=10.0, friction=0.3)
    # object 1 the cart, object 2 the (passive) rail: a Slider keeps the cart on the rail's line (the Empty's X),
    # a Motor drives it; Blender's motor moves object 2 at -target relative to object 1, so the cart goes +X
    (slider,) = connect(cart, [rail], "SLIDER", pivot="ACTIVE")
    (motor,) = connect(cart, [rail], "MOTOR", pivot="ACTIVE")
    rename(slider, "Cart Slider")
    rename(motor, "Cart Motor")
    c = motor.rigid_body_constraint
    c.use_motor_lin = True
    c.motor_lin_target_velocity = CART_SPEED
    c.motor_lin_max_impulse = CART_FORCE
    d.camera((0.0, -6.8, 2.2), (-0.3, 0.0, 0.4), lens=30.0)
    d.checked = {"cart": cart}
    return finish(d)


def check_cart(d: TitledScene, report: dict, checks: Checks) -> str:
    m = common.world_matrices(d.checked["cart"], np.arange(1, FRAME_END + 1))
    bpy.context.scene.frame_set(1)
    x = m[:, :3, 3]
    last = x[-1] - x[-FPS - 1]  # over the last second
    speed = float(last[0])
    drift = float(np.abs(x[:, 1:] - x[:1, 1:]).max())
    turn = float(np.degrees(np.abs(rotation_z(m) - rotation_z(m)[:1]).max()))
    checks.expect(
        f"cart: it reaches the motor's {CART_SPEED:g} m/s along +X (within {100 * CART_SPEED_TOLERANCE:g} %)",
        abs(speed - CART_SPEED) < CART_SPEED_TOLERANCE * CART_SPEED,
        f"{speed:.3f} m/s over the last second",
    )
    checks.expect(
        "cart: the slider keeps it on the rail's line (sideways and vertical drift < 1 cm, turn < 1°)",
        drift < 0.01 and turn < 1.0,
        f"drift {1000 * drift:.2f} mm, turn {turn:.3f}°",
    )
    return f"Cart: {speed:.3f} m/s over the last second (target {CART_SPEED:g}), drift {1000 * drift:.2f} mm"


# ---------------------------------------------------------------------------------------------
# (d) the wall and the wrecking ball


def cut_slab(size, lo, hi) -> bmesh.types.BMesh:
    """A box ``size`` centred on the origin cut by the six planes of the box ``lo``–``hi`` (3,) [m] with
    ``bisect_plane`` (what lies outside dropped, the cuts closed): the piece, in the slab's coordinates."""
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=size, verts=bm.verts)
    for axis in range(3):
        for value, sign in ((lo[axis], -1.0), (hi[axis], 1.0)):
            if abs(value) >= 0.5 * size[axis] - 1e-9:
                continue  # the slab's own face
            normal = np.zeros(3)
            normal[axis] = sign
            point = np.zeros(3)
            point[axis] = value
            geom = bm.verts[:] + bm.edges[:] + bm.faces[:]
            bmesh.ops.bisect_plane(bm, geom=geom, dist=1e-7, plane_co=point, plane_no=normal, clear_outer=True)
            bmesh.ops.holes_fill(bm, edges=[e for e in bm.edges if e.is_boundary], sides=0)
    return bm


def brick_boxes() -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(lower corner, upper corner, row) of every brick of the wall in a running bond (odd rows start with a half
    brick), in the slab's coordinates (centred on the origin) [m]."""
    boxes = []
    half_w, half_h = 0.5 * WALL_WIDTH, 0.5 * ROWS * BRICK_HEIGHT
    for row in range(ROWS):
        joints = np.arange(-half_w, half_w + 1e-9, BRICK_LENGTH) + (0.5 * BRICK_LENGTH if row % 2 else 0.0)
        edges = np.unique(np.clip(np.concatenate([[-half_w], joints, [half_w]]), -half_w, half_w))
        z0 = -half_h + row * BRICK_HEIGHT
        for y0, y1 in zip(edges[:-1], edges[1:], strict=True):
            if y1 - y0 > 1e-6:
                lo = np.array([-0.5 * WALL_THICKNESS, y0, z0])
                hi = np.array([0.5 * WALL_THICKNESS, y1, z0 + BRICK_HEIGHT])
                boxes.append((lo, hi, row))
    return boxes


def touching(a, b) -> bool:
    """Whether two bricks (lower, upper corners) share a face of non-zero area."""
    (lo_a, hi_a, _), (lo_b, hi_b, _) = a, b
    overlap = np.minimum(hi_a, hi_b) - np.maximum(lo_a, lo_b)
    return int((overlap > 1e-6).sum()) == 2 and int((np.abs(overlap) <= 1e-6).sum()) == 1


def build_wall() -> TitledScene:
    d = new_scene("wall", "51 bricks, breakable Fixed joints")
    floor = ground(d)
    size = (WALL_THICKNESS, WALL_WIDTH, ROWS * BRICK_HEIGHT)
    centre = np.array([WALL_X + 0.5 * WALL_THICKNESS, 0.0, 0.5 * size[2]])
    mats = [common.make_material(f"Brick {c}", c, roughness=0.85) for c in ("#b5533c", "#a4472f", "#c2674b")]
    boxes = brick_boxes()
    bricks = []
    for k, (lo, hi, row) in enumerate(boxes):
        bm = cut_slab(size, lo, hi)
        mid = 0.5 * (lo + hi)
        shrink = 1.0 - BRICK_GAP / (hi - lo)
        bmesh.ops.translate(bm, vec=-mid, verts=bm.verts)  # the brick's origin at its centre
        bmesh.ops.scale(bm, vec=shrink, verts=bm.verts)
        name = f"Brick {row + 1}.{k:02d}"
        brick = d.add(name, common.mesh_from_bmesh(name, bm), mats[k % 3], tuple(centre + mid))
        with_rigid_body(brick, collision_shape="BOX", mass=BRICK_MASS, friction=0.7)
        bricks.append(brick)
    joints, footing = [], []
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            if touching(boxes[i], boxes[j]):
                made = connect(bricks[i], [bricks[j]], "FIXED")
                joints += made
                footing += made if boxes[i][2] == 0 else []  # the bottom course's joints
    bottom = [b for b, box in zip(bricks, boxes, strict=True) if box[2] == 0]
    made = connect(floor, bottom, "FIXED", pivot="SELECTED")
    joints += made
    footing += made
    for empty in joints:
        c = empty.rigid_body_constraint
        c.use_breaking = True
        c.breaking_threshold = FOOTING_BREAKING if empty in footing else BREAKING
    # the wrecking ball: a passive pivot, a light rod on a Point joint there, the ball fixed to the rod's end
    iron = common.make_material("Iron", "#2f3336", roughness=0.35)
    length = PIVOT_Z - IMPACT[2]
    pivot = d.add("Pivot", common.sphere_mesh("Pivot", 0.06), iron, (0.0, 0.0, PIVOT_Z))
    with_rigid_body(pivot, type="PASSIVE", collision_shape="SPHERE")
    a = math.radians(RELEASE_DEG)
    out = np.array([-math.sin(a), 0.0, -math.cos(a)])  # from the pivot toward the ball
    start = np.array([0.0, 0.0, PIVOT_Z]) + length * out
    rod_ends = (0.1, length - BALL_RADIUS - 0.01)  # from the pivot, clear of the pivot's sphere and the ball
    rod_mid = np.array([0.0, 0.0, PIVOT_Z]) + 0.5 * sum(rod_ends) * out
    rod_mesh = common.box_mesh("Rod", (0.03, 0.03, rod_ends[1] - rod_ends[0]))
    rod = d.add("Rod", rod_mesh, iron, tuple(rod_mid), (0.0, a, 0.0))
    with_rigid_body(rod, collision_shape="BOX", mass=2.0)
    ball = d.add("Wrecking Ball", common.sphere_mesh("Wrecking Ball", BALL_RADIUS), iron, tuple(start))
    with_rigid_body(ball, collision_shape="SPHERE", mass=BALL_MASS, friction=0.5)
    (swing,) = connect(pivot, [rod], "POINT", pivot="ACTIVE")
    (weld,) = connect(rod, [ball], "FIXED")
    rename(swing, "Ball Pivot")
    rename(weld, "Ball Weld")
    d.camera((-4.6, -6.4, 2.6), (0.2, 0.0, 0.9), lens=30.0)
    d.checked = {"bricks": bricks, "joints": joints}
    return finish(d)


def check_wall(d: TitledScene, report: dict, checks: Checks) -> str:
    bricks, joints = d.checked["bricks"], d.checked["joints"]
    frames = np.array([1, FRAME_END])
    start = np.array([common.world_matrices(b, frames)[:, :3, 3] for b in bricks])  # (B, 2, 3)
    bpy.context.scene.frame_set(1)
    moved = np.linalg.norm(start[:, 1] - start[:, 0], axis=1)
    drop = start[:, 0, 2] - start[:, 1, 2]
    dist = np.linalg.norm((start[:, 0] - IMPACT)[:, 1:], axis=1)  # in the wall's plane (Y, Z)
    near, far = dist < NEAR, dist > FAR
    listed = report.get("joints", {})
    broken_names = {entry["name"] for entry in listed.get("broken", [])}
    wall_names = {j.name for j in joints}
    broken = broken_names & wall_names
    held = [j for j in joints if j.name not in broken]
    checks.expect(
        f"wall: at least 50 bricks cut from the slab, {len(joints)} breakable Fixed joints",
        len(bricks) >= 50 and len(joints) > len(bricks),
        f"{len(bricks)} bricks, {len(joints)} joints",
    )
    checks.expect(
        "wall: the bake report lists the wall's broken joints, some but not all",
        "broken" in listed and 0 < len(broken) < len(joints),
        f"{len(broken)} of {len(joints)} broke" if "broken" in listed else "the report has no joints' 'broken' list",
    )
    checks.expect(
        f"wall: bricks near the impact (within {NEAR:g} m) broke loose and fell (at least 2, > {FELL:g} m down)",
        int((drop[near] > FELL).sum()) >= 2,
        f"{int((drop[near] > FELL).sum())} of {int(near.sum())} fell",
    )
    checks.expect(
        f"wall: the bricks far from it (beyond {FAR:g} m) stayed put (moved < {100 * STAYED:g} cm)",
        far.sum() >= 10 and bool(np.all(moved[far] < STAYED)),
        f"{int((moved[far] < STAYED).sum())} of {int(far.sum())} stayed; most moved {100 * moved[far].max():.2f} cm",
    )
    reach = [float(np.linalg.norm((np.array(j.matrix_world.translation) - IMPACT)[1:])) for j in joints]
    broken_reach = [r for j, r in zip(joints, reach, strict=True) if j.name in broken]
    far_broken = [j.name for j, r in zip(joints, reach, strict=True) if j.name in broken and r > BROKEN_REACH]
    checks.expect(
        f"wall: every joint that broke lies within {BROKEN_REACH:g} m of the impact (the wall broke locally)",
        not far_broken,
        f"farthest broken joint {max(broken_reach, default=0.0):.2f} m from the impact"
        + (f"; beyond: {', '.join(far_broken[:5])}" if far_broken else ""),
    )
    if held:
        gaps = pivot_gaps(held, frames)
        checks.expect(
            "wall: the joints the report says held still hold their two pieces together (gap < 5 mm)",
            gaps.max() < 5e-3,
            f"largest {1000 * gaps.max():.2f} mm over {len(held)} joints",
        )
    return (
        f"Wall: {len(broken)} of {len(joints)} joints broke; near the impact {int((drop[near] > FELL).sum())} of "
        f"{int(near.sum())} bricks fell; far from it {int((moved[far] < STAYED).sum())} of {int(far.sum())} stayed"
    )


# ---------------------------------------------------------------------------------------------

BUILDERS = {"door": build_door, "chain": build_chain, "cart": build_cart, "wall": build_wall}
CHECKS = {"door": check_door, "chain": check_chain, "cart": check_cart, "wall": check_wall}


def after_bake(key: str, d: TitledScene, report: dict, checks: Checks) -> str:
    s = report["settings"]
    joints = report.get("joints", {})
    print(
        f"Bake '{key}' ({report['frames']['count']} frames × {s['substeps']} substeps, {s['solver']}): "
        f"{len(report['bodies']['active'])} active bodies, {joints.get('count', '?')} joints "
        f"{joints.get('by_type', '')}; {report['wall_seconds']:.1f} s"
    )
    if report.get("warnings"):
        print("  warnings: " + "; ".join(report["warnings"]))
    return CHECKS[key](d, report, checks)


def main(argv: list[str]) -> int:
    return common.run_scenes(argv, __doc__, "Joints", BUILDERS, SHEET_FRAMES, after_bake)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
