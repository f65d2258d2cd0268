"""Naive numpy references for the collision tests (no Numba, no code shared with ``core.collision``).

Shapes are ``Shape(type, params, pos, rot)`` with the ``ShapeType`` conventions of ``core/enums.py``.
The references are deliberately brute force:

- ``support``: support function ``h_S(d) = max_{x in S} x . d`` of sphere, box, capsule (closed forms).
- ``penetration_depth``: ``min_d h_A(d) + h_B(-d)`` over a dense direction set refined by random search. For
  convex shapes this is the minimum translation distance when they overlap and minus the distance when apart.
- ``distance``: dense surface samples of one shape, exact projection onto the other, then alternating
  projections (von Neumann) from the best sample pair; an upper bound converging to the true distance.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

SPHERE, BOX, CAPSULE, PLANE = 1, 2, 3, 4


class Shape(NamedTuple):
    type: int
    params: np.ndarray
    pos: np.ndarray
    rot: np.ndarray


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """Uniform random rotation matrix (3, 3) from a normalised Gaussian quaternion."""
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def xyz_rotation(angles=(0.3, 0.5, 0.7)) -> np.ndarray:
    """Rotation matrix (3, 3) turning by ``angles`` [rad] about x, then y, then z."""
    rot = np.eye(3)
    for axis, angle in enumerate(angles):
        c, s = np.cos(angle), np.sin(angle)
        r = np.eye(3)
        i, j = [k for k in range(3) if k != axis]
        r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
        rot = r @ rot
    return rot


def quat_matrix(q) -> np.ndarray:
    """Rotation matrix of a unit quaternion (w, x, y, z), written out independently of the core."""
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def rotation_about(axis, angle: float) -> np.ndarray:
    """Rodrigues rotation matrix (3, 3) about ``axis`` by ``angle`` [rad]."""
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def rotation_from_vector(rotvec) -> np.ndarray:
    """Rotation matrix (3, 3) of a rotation vector (axis times angle [rad])."""
    return rotation_about(rotvec, float(np.linalg.norm(rotvec)))


def random_shape(rng: np.random.Generator, shape_type: int, pos=(0.0, 0.0, 0.0)) -> Shape:
    """Shape of the given type with random size (0.2..1 m) and orientation."""
    if shape_type == SPHERE:
        params = np.array([rng.uniform(0.2, 0.8), 0.0, 0.0])
    elif shape_type == BOX:
        params = rng.uniform(0.2, 0.8, size=3)
    elif shape_type == CAPSULE:
        params = np.array([rng.uniform(0.1, 0.4), rng.uniform(0.2, 0.8), 0.0])
    else:
        params = np.zeros(3)
    return Shape(shape_type, params, np.asarray(pos, float), random_rotation(rng))


def support(shape: Shape, dirs: np.ndarray) -> np.ndarray:
    """``max_{x in S} x . d`` for unit directions ``dirs`` (m, 3) [m]."""
    dirs = np.atleast_2d(dirs)
    base = dirs @ shape.pos
    if shape.type == SPHERE:
        return base + shape.params[0] * np.linalg.norm(dirs, axis=1)
    if shape.type == BOX:
        return base + np.abs(dirs @ shape.rot) @ shape.params
    if shape.type == CAPSULE:
        return base + shape.params[1] * np.abs(dirs @ shape.rot[:, 2]) + shape.params[0] * np.linalg.norm(dirs, axis=1)
    raise ValueError("support of a plane is unbounded")


def overlap_along(a: Shape, b: Shape, dirs: np.ndarray) -> np.ndarray:
    """How far [m] ``b`` must move along each unit ``dirs`` row for the projections to separate (negative: apart)."""
    return support(a, dirs) + support(b, -np.atleast_2d(dirs))


def fibonacci_sphere(count: int) -> np.ndarray:
    """Nearly uniform unit directions (count, 3)."""
    i = np.arange(count) + 0.5
    phi = np.arccos(1 - 2 * i / count)
    theta = np.pi * (1 + 5**0.5) * i
    return np.stack([np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)], axis=1)


def penetration_depth(a: Shape, b: Shape, rng: np.random.Generator | None = None) -> tuple[float, np.ndarray]:
    """``min_d overlap_along(a, b, d)`` [m] and its direction: depth if overlapping, -distance if apart."""
    rng = np.random.default_rng(0) if rng is None else rng
    dirs = fibonacci_sphere(6000)
    # Candidate axes of the shapes themselves and their cross products (where minima of polytopes live).
    axes = [a.rot[:, i] for i in range(3)] + [b.rot[:, i] for i in range(3)]
    cross = [np.cross(u, v) for u in axes[:3] for v in axes[3:]]
    cross = [c / np.linalg.norm(c) for c in cross if np.linalg.norm(c) > 1e-9]
    extra = np.array(axes + cross)
    dirs = np.vstack([dirs, extra, -extra])
    values = overlap_along(a, b, dirs)
    best_value = np.inf
    best_dir = dirs[0]
    for start in np.argsort(values)[:6]:
        d = dirs[start]
        v = values[start]
        sigma = 0.05
        for _ in range(150):
            trial = d + sigma * rng.normal(size=(32, 3))
            trial /= np.linalg.norm(trial, axis=1)[:, None]
            tv = overlap_along(a, b, trial)
            j = np.argmin(tv)
            if tv[j] < v:
                v, d = tv[j], trial[j]
            else:
                sigma *= 0.7
        if v < best_value:
            best_value, best_dir = v, d
    return float(best_value), best_dir


def project(shape: Shape, x: np.ndarray) -> np.ndarray:
    """Closest points of the solid ``shape`` to points ``x`` (m, 3) [m]."""
    x = np.atleast_2d(x)
    if shape.type == SPHERE:
        d = x - shape.pos
        dist = np.linalg.norm(d, axis=1)
        scale = np.minimum(1.0, shape.params[0] / np.maximum(dist, 1e-300))
        return shape.pos + d * scale[:, None]
    if shape.type == BOX:
        local = (x - shape.pos) @ shape.rot
        local = np.clip(local, -shape.params, shape.params)
        return shape.pos + local @ shape.rot.T
    if shape.type == CAPSULE:
        u = shape.rot[:, 2]
        t = np.clip((x - shape.pos) @ u, -shape.params[1], shape.params[1])
        axis_point = shape.pos + t[:, None] * u
        return project(Shape(SPHERE, shape.params, np.zeros(3), shape.rot), x - axis_point) + axis_point
    if shape.type == PLANE:
        n = shape.rot[:, 2]
        h = (x - shape.pos) @ n
        return x - np.maximum(h, 0.0)[:, None] * n
    raise ValueError(shape.type)


def surface_samples(shape: Shape, resolution: int = 24) -> np.ndarray:
    """Points on the surface of a sphere, box or capsule, about ``resolution`` per unit edge (m, 3) [m]."""
    if shape.type == SPHERE:
        return shape.pos + shape.params[0] * fibonacci_sphere(4 * resolution * resolution)
    if shape.type == BOX:
        g = np.linspace(-1.0, 1.0, resolution + 1)
        u, v = np.meshgrid(g, g)
        u, v = u.ravel(), v.ravel()
        local = []
        for k in range(3):
            for s in (-1.0, 1.0):
                p = np.zeros((u.size, 3))
                p[:, k] = s
                p[:, (k + 1) % 3] = u
                p[:, (k + 2) % 3] = v
                local.append(p)
        local = np.vstack(local) * shape.params
        return shape.pos + local @ shape.rot.T
    if shape.type == CAPSULE:
        r, h = shape.params[0], shape.params[1]
        ball = r * fibonacci_sphere(4 * resolution * resolution)
        ends = np.vstack([ball + [0, 0, h], ball - [0, 0, h]])
        ends = ends[np.abs(ends[:, 2]) >= h]
        theta = np.linspace(0, 2 * np.pi, 4 * resolution, endpoint=False)
        z = np.linspace(-h, h, resolution + 1)
        tt, zz = np.meshgrid(theta, z)
        tube = np.stack([r * np.cos(tt.ravel()), r * np.sin(tt.ravel()), zz.ravel()], axis=1)
        return shape.pos + np.vstack([ends, tube]) @ shape.rot.T
    raise ValueError(shape.type)


def distance(a: Shape, b: Shape, iterations: int = 400) -> tuple[float, np.ndarray, np.ndarray]:
    """Distance [m] between separated convex shapes and a closest-point pair (xa, xb)."""
    best = (np.inf, None, None)
    for first, second in ((a, b), (b, a)):
        samples = surface_samples(first)
        proj = project(second, samples)
        dist = np.linalg.norm(samples - proj, axis=1)
        i = np.argmin(dist)
        x1, x2 = samples[i], proj[i]
        for _ in range(iterations):  # alternating projections only decrease |x1 - x2|
            x1 = project(first, x2)[0]
            x2 = project(second, x1)[0]
        d = float(np.linalg.norm(x1 - x2))
        if d < best[0]:
            best = (d, x1, x2) if first is a else (d, x2, x1)
    return best


def aabb(shape: Shape, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """World AABB (lower, upper) of a bounded shape from its support function, expanded by ``margin`` [m]."""
    e = np.eye(3)
    return -support(shape, -e) - margin, support(shape, e) + margin


def brute_force_pairs(lower, upper, shape_body, body_kind) -> list[tuple[int, int]]:
    """Sorted candidate pairs by the O(n^2) overlap test (closed intervals)."""
    n = lower.shape[0]
    result = []
    for a in range(n):
        b = np.arange(a + 1, n)
        ok = np.all((lower[a] <= upper[b]) & (lower[b] <= upper[a]), axis=1)
        ok &= shape_body[b] != shape_body[a]
        ok &= (body_kind[shape_body[b]] == 1) | (body_kind[shape_body[a]] == 1)
        result.extend((a, int(j)) for j in b[ok])
    return result


def box_vertices(shape: Shape) -> np.ndarray:
    """The 8 world vertices (8, 3) [m] of a box."""
    signs = np.array([[sx, sy, sz] for sz in (-1, 1) for sy in (-1, 1) for sx in (-1, 1)], float)
    return shape.pos + (signs * shape.params) @ shape.rot.T


def sat_max_separation(a: Shape, b: Shape) -> float:
    """Largest separation over the 15 SAT axes of two boxes (independent numpy version) [m]."""
    axes = [a.rot[:, i] for i in range(3)] + [b.rot[:, i] for i in range(3)]
    for i in range(3):
        for j in range(3):
            c = np.cross(a.rot[:, i], b.rot[:, j])
            if np.linalg.norm(c) > 1e-6:
                axes.append(c / np.linalg.norm(c))
    va, vb = box_vertices(a), box_vertices(b)
    best = -np.inf
    for axis in axes:
        pa, pb = va @ axis, vb @ axis
        best = max(best, pb.min() - pa.max(), pa.min() - pb.max())
    return best
