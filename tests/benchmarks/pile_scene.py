"""The pile scene of ``shared/spec/pile_benchmark.md`` without Blender: poses, rocks, the core model and the figures.

Shared by ``bench_pile.py`` (Blender's rigid body world against ours, inside bpy), ``bench_pile_core.py`` (the core
alone, any interpreter with numpy + numba) and ``bench_pile_scaling.py``. Imports neither bpy nor mathutils, so the
same bodies, rocks and figures are used with and without Blender.

Scene (the spec's at 1000 bodies): bodies on a grid of pitch 0.25 m, ``side x side`` per layer and
``layers = ceil(N / side²)`` layers, ``side = round(sqrt(N / 10))`` (10 x 10 x 10 for 1000; 3 x 3 x 12 for 100,
32 x 32 x 10 for 10 000, the last layer filled in grid order), so every size makes a pile about as tall as the
spec's; the container's inner half width is ``0.15 * side`` m (1.5 m for the spec's 10, the same gap between the
grid and the walls relative to the grid) and its walls are 3 m high. Each body is turned by a seeded random
Euler XYZ rotation, uniform in ±5° per axis.

Rocks (``shape="rock"``): the 42 vertices of a once-subdivided icosahedron on a sphere of radius 0.1 m (the
cube's half edge), each vertex's radius scaled by a seeded uniform factor in [0.8, 1.2] (so no two rocks of the
grid touch at the start, 0.24 m < 0.25 m), reduced to its convex hull and moved so that the hull's centroid is the
origin: Blender's rigid body world puts a Convex Hull body's centre of mass at the object origin, ours at the
hull's centroid, and this way both are the same point. Mass 1 kg like the cubes.
"""

from __future__ import annotations

import math
import platform
import sys

import numpy as np

FPS = 24
SUBSTEPS = 10
ITERATIONS = 20
TOLERANCE = 1e-6
"""``scene.contact_lab.tolerance``'s default (the bake uses it; the core-only runs too)."""
EDGE = 0.2
PITCH = 0.25
MU = 0.5
LINEAR_DAMPING, ANGULAR_DAMPING = 0.04, 0.1
SEED = 12345
GRAVITY = (0.0, 0.0, -9.81)
ROCK_RADIUS = 0.5 * EDGE
ROCK_JITTER = 0.2
"""Vertex radii are scaled by a factor uniform in [1 - ROCK_JITTER, 1 + ROCK_JITTER]."""
WALL_HEIGHT = 3.0


def frame_end(seconds: float) -> int:
    """Last frame of a bake from frame 1 that simulates ``seconds`` (5 s: frame 121, the spec's)."""
    return 1 + round(seconds * FPS)


def grid_shape(bodies: int) -> tuple[int, int, int]:
    """(nx, ny, nz) of the drop grid: ``side = round(sqrt(N / 10))`` per row, as many layers as needed."""
    side = max(1, round(math.sqrt(bodies / 10.0)))
    return side, side, max(1, math.ceil(bodies / (side * side)))


def container_half_width(bodies: int) -> float:
    """Inner half width of the container [m]: 0.15 m per grid column (1.5 m for the spec's 10)."""
    return 0.15 * grid_shape(bodies)[0]


def container_boxes(bodies: int) -> list[tuple[str, tuple, tuple]]:
    """The five static boxes as ``(name, centre (3,) [m], full size (3,) [m])``; floor top at z = 0."""
    half, h = container_half_width(bodies), WALL_HEIGHT
    return [
        ("Floor", (0.0, 0.0, -0.1), (2 * half + 0.4, 2 * half + 0.4, 0.2)),
        ("WallX+", (half + 0.1, 0.0, 0.5 * h), (0.2, 2 * half + 0.4, h)),
        ("WallX-", (-half - 0.1, 0.0, 0.5 * h), (0.2, 2 * half + 0.4, h)),
        ("WallY+", (0.0, half + 0.1, 0.5 * h), (2 * half, 0.2, h)),
        ("WallY-", (0.0, -half - 0.1, 0.5 * h), (2 * half, 0.2, h)),
    ]


def drop_poses(bodies: int) -> tuple[np.ndarray, np.ndarray]:
    """Grid centres (N, 3) [m] (x fastest, then y, then z) and Euler XYZ angles (N, 3) [rad], uniform in ±5°."""
    nx, ny, nz = grid_shape(bodies)
    k, j, i = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    x, y, z = (i - (nx - 1) / 2) * PITCH, (j - (ny - 1) / 2) * PITCH, 0.2 + PITCH * k
    centres = np.stack([x, y, z], axis=-1).reshape(-1, 3)[:bodies]
    r = math.radians(5.0)
    angles = np.random.default_rng(SEED).uniform(-r, r, size=(bodies, 3))
    return centres, angles


def euler_xyz_to_quat(angles: np.ndarray) -> np.ndarray:
    """Quaternions (N, 4) wxyz of Blender's 'XYZ' Euler angles (N, 3) [rad]: X applied first, ``q = qz qy qx``."""
    half = 0.5 * np.asarray(angles, np.float64)
    c, s = np.cos(half), np.sin(half)
    cx, cy, cz, sx, sy, sz = c[:, 0], c[:, 1], c[:, 2], s[:, 0], s[:, 1], s[:, 2]
    return np.stack(
        [
            cx * cy * cz + sx * sy * sz,
            sx * cy * cz - cx * sy * sz,
            cx * sy * cz + sx * cy * sz,
            cx * cy * sz - sx * sy * cz,
        ],
        axis=1,
    )


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4) wxyz."""
    w, x, y, z = np.moveaxis(np.asarray(q, np.float64), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=-2,
    )


def icosphere_directions() -> np.ndarray:
    """The 42 unit vectors of a once-subdivided icosahedron (12 corners, then the 30 edge midpoints)."""
    phi = 0.5 * (1.0 + math.sqrt(5.0))
    corners = []
    for a in (-1.0, 1.0):
        for b in (-phi, phi):
            corners += [(0.0, a, b), (a, b, 0.0), (b, 0.0, a)]
    corners = np.array(corners)
    distance = np.linalg.norm(corners[:, None] - corners[None], axis=2)
    i, j = np.nonzero(np.triu(np.isclose(distance, 2.0)))  # the 30 edges have length 2
    points = np.concatenate([corners, 0.5 * (corners[i] + corners[j])])
    return points / np.linalg.norm(points, axis=1, keepdims=True)


class Rock:
    """One rock: hull vertices and triangles about its centroid, and its mass properties at 1 kg."""

    def __init__(self, index: int):
        from contact_lab.core.rigid.hull import convex_hull
        from contact_lab.core.rigid.mass_properties import hull_triangles, mesh_mass_properties

        radii = np.random.default_rng(SEED + 1 + index).uniform(1.0 - ROCK_JITTER, 1.0 + ROCK_JITTER, size=(42, 1))
        hull = convex_hull(icosphere_directions() * ROCK_RADIUS * radii, label=f"rock {index}")
        triangles = hull_triangles(hull)
        props = mesh_mass_properties(hull.vertices, triangles)
        self.vertices = np.asarray(hull.vertices) - props.centroid
        """Hull vertices about the centroid [m], (V, 3): the mesh on Blender's side, the hull points on ours."""
        self.triangles = triangles
        """Outward triangles (T, 3) of the hull (the Blender mesh's faces)."""
        self.inertia = props.inertia / props.volume
        """Inertia about the centroid at 1 kg [kg·m²], (3, 3) (uniform solid)."""


def rocks(bodies: int) -> list[Rock]:
    return [Rock(n) for n in range(bodies)]


def box_corners() -> np.ndarray:
    """The 8 corners (8, 3) [m] of a cube of edge ``EDGE`` about its centre."""
    h = 0.5 * EDGE
    return np.array([(x, y, z) for x in (-h, h) for y in (-h, h) for z in (-h, h)])


def body_geometry(bodies: int, shape: str, rock_list: list[Rock] | None = None):
    """Local vertices per body (corners or hull vertices), masses (N,) and inertias (N, 3, 3) about the centroid."""
    if shape == "box":
        inertia = np.eye(3) * (EDGE * EDGE / 6.0)
        return [box_corners()] * bodies, np.ones(bodies), np.tile(inertia, (bodies, 1, 1))
    rock_list = rock_list if rock_list is not None else rocks(bodies)
    return [r.vertices for r in rock_list], np.ones(bodies), np.array([r.inertia for r in rock_list])


def build_core_model(bodies: int, shape: str, rock_list: list[Rock] | None = None):
    """The pile as the bridge exports it: the bodies (dynamic, in grid order), then the five static boxes."""
    from contact_lab.core import BodyKind, ModelBuilder

    builder = ModelBuilder(gravity=GRAVITY)
    centres, angles = drop_poses(bodies)
    quats = euler_xyz_to_quat(angles)
    if shape == "rock" and rock_list is None:
        rock_list = rocks(bodies)
    for n in range(bodies):
        b = builder.add_body(
            pos=centres[n], quat=quats[n], mass=1.0, label=f"Body{n:05d}",
            linear_damping=LINEAR_DAMPING, angular_damping=ANGULAR_DAMPING,
        )  # fmt: skip
        if shape == "box":
            builder.add_shape_box(b, (0.5 * EDGE,) * 3, mu=MU, restitution=0.0)
        else:
            builder.add_shape_convex(b, rock_list[n].vertices, mu=MU, restitution=0.0)
    for name, centre, size in container_boxes(bodies):
        b = builder.add_body(pos=centre, kind=BodyKind.KINEMATIC, label=name)
        builder.add_shape_box(b, 0.5 * np.asarray(size), mu=MU, restitution=0.0)
    return builder.finalize()


def core_matrices(body_pos: np.ndarray, body_quat: np.ndarray, bodies: int) -> np.ndarray:
    """World matrices (F, N, 4, 4) of the first ``bodies`` bodies of a core trajectory (body frame = object frame)."""
    frames = body_pos.shape[0]
    out = np.zeros((frames, bodies, 4, 4))
    out[..., :3, :3] = quat_to_matrix(body_quat[:, :bodies])
    out[..., :3, 3] = body_pos[:, :bodies]
    out[..., 3, 3] = 1.0
    return out


def figures(matrices: np.ndarray, local_vertices: list[np.ndarray], masses: np.ndarray, inertias) -> dict:
    """Deepest floor penetration [mm], tunnelled bodies and kinetic energy at the end [J] from world matrices.

    ``matrices`` (F, N, 4, 4) at every frame; the same formula for every engine. Kinetic energy from the last two
    frames: translational from the centre's displacement, rotational from the relative rotation's axis-angle.
    """
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


def versions() -> dict:
    """Interpreter, numpy, numba, llvmlite (and bpy when importable without side effects: already imported)."""
    import numba

    try:
        import llvmlite

        llvm = llvmlite.__version__
    except ImportError:  # pragma: no cover - numba needs it
        llvm = "?"
    out = dict(python=sys.version.split()[0], numpy=np.__version__, numba=numba.__version__, llvmlite=llvm)
    bpy = sys.modules.get("bpy")
    if bpy is not None:
        out["bpy"] = ".".join(map(str, bpy.app.version))
    out["threads"] = int(numba.config.NUMBA_NUM_THREADS)
    out["threading_layer"] = _threading_layer()
    out["cpu"] = platform.processor() or platform.machine()
    return out


def _threading_layer() -> str:
    import numba

    try:
        return str(numba.threading_layer())
    except ValueError:  # no parallel kernel has run yet in this process
        return f"unset (config {numba.config.THREADING_LAYER})"


def versions_line(v: dict | None = None) -> str:
    v = v or versions()
    bpy = f"bpy {v['bpy']}, " if "bpy" in v else ""
    return (
        f"{bpy}Python {v['python']}, numpy {v['numpy']}, numba {v['numba']}, llvmlite {v['llvmlite']}, "
        f"NUMBA_NUM_THREADS {v['threads']}"
    )


def load_line() -> str:
    """``uptime``'s load averages (1, 5, 15 min) and the core count, to print next to every timing."""
    import os

    try:
        one, five, fifteen = os.getloadavg()
    except OSError:  # pragma: no cover - not on this platform
        return "load n/a"
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"
