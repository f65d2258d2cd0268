"""Independent numpy references for the convex narrow phase (no Numba, no code shared with ``core.rigid.collision``).

Shapes come in batches of one ``ShapeType``, one pose per row: ``Batch(type, params (P, 3), pos (P, 3), rot (P, 3, 3),
verts (P, V, 3) or None, hull (P,))``; hull vertices are in the shape frame, padded by repeating a vertex.

- ``support_value(batch, d)``: ``h(d) = max_{x in S} x . d - pos . d`` for directions d (P, K, 3), closed forms.
- ``support_point(batch, d)``: a maximiser (P, K, 3) [m], world.
- ``boundary_value(batch, x)``: a Lipschitz-1 function of points x (P, 3) that is 0 exactly on the surface
  (max of the shape's constraint functions: face planes, |z| - h, rho - r, ...).
- ``signed_distance(a, b)``: ``phi = -min_{|d| = 1} f(d)`` with ``f(d) = h_A(d) + h_B(-d) + (pos_A - pos_B) . d``
  (how far B must move along d to separate): the distance when apart, minus the penetration depth when
  overlapping, and the minimising d is the normal from A to B. Minimised by dense Fibonacci sampling, then the
  ellipsoid method (Shor; Yudin-Nemirovski) in the tangent plane of each start with the subgradient
  ``s_A(d) - s_B(-d)``: it only needs cutting planes, so it converges at the kinks (faces, creases) of polytope
  support functions where descent methods and pattern search stall.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from contact_lab.core.fem import primitives

SPHERE, BOX, CAPSULE, PLANE, CYLINDER, CONE, CONVEX = 1, 2, 3, 4, 5, 6, 7
NAMES = {SPHERE: "sphere", BOX: "box", CAPSULE: "capsule", PLANE: "plane", CYLINDER: "cylinder", CONE: "cone",
         CONVEX: "hull"}  # fmt: skip


class Batch(NamedTuple):
    type: int
    params: np.ndarray
    pos: np.ndarray
    rot: np.ndarray
    verts: np.ndarray | None
    hull: np.ndarray


def random_rotations(rng: np.random.Generator, count: int) -> np.ndarray:
    """Uniform random rotation matrices (count, 3, 3) from normalised Gaussian quaternions (w, x, y, z)."""
    q = rng.normal(size=(count, 4))
    w, x, y, z = (q / np.linalg.norm(q, axis=1, keepdims=True)).T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=1,
    )


def fibonacci_sphere(count: int) -> np.ndarray:
    """Nearly uniform unit directions (count, 3)."""
    i = np.arange(count) + 0.5
    phi = np.arccos(1 - 2 * i / count)
    theta = np.pi * (1 + 5**0.5) * i
    return np.stack([np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)], axis=1)


def icosphere(subdivisions: int = 1) -> np.ndarray:
    """Unit icosphere vertices (12 -> 42 -> 162 ...): the core's midpoint-subdivided primitive."""
    return primitives.icosphere(1.0, subdivisions)[0]


# ---------------------------------------------------------------------------------------------------------------
# Support functions and boundaries
# ---------------------------------------------------------------------------------------------------------------


def _local(batch: Batch, d: np.ndarray) -> np.ndarray:
    """Directions d (P, K, 3) in each shape's frame."""
    return np.einsum("pij,pki->pkj", batch.rot, d)


def support_value(batch: Batch, d: np.ndarray) -> np.ndarray:
    """``max_x x . d - pos . d`` (P, K) [m] for directions d (P, K, 3) (any length)."""
    dl = _local(batch, d)
    p = batch.params[:, None, :]
    if batch.type == SPHERE:
        return p[..., 0] * np.linalg.norm(dl, axis=-1)
    if batch.type == BOX:
        return np.sum(p * np.abs(dl), axis=-1)
    if batch.type == CAPSULE:
        return p[..., 1] * np.abs(dl[..., 2]) + p[..., 0] * np.linalg.norm(dl, axis=-1)
    rho = np.hypot(dl[..., 0], dl[..., 1])
    if batch.type == CYLINDER:
        return p[..., 1] * np.abs(dl[..., 2]) + p[..., 0] * rho
    if batch.type == CONE:
        return np.maximum(p[..., 1] * dl[..., 2], p[..., 0] * rho - p[..., 1] * dl[..., 2])
    return np.max(np.einsum("pvj,pkj->pkv", batch.verts, dl), axis=-1)


def support_point(batch: Batch, d: np.ndarray) -> np.ndarray:
    """A point (P, K, 3) [m, world] of each shape maximising ``x . d``."""
    dl = _local(batch, d)
    p = batch.params[:, None, :]
    r, h = p[..., 0:1], p[..., 1:2]
    z_sign = np.where(dl[..., 2:3] >= 0, 1.0, -1.0)
    rho = np.hypot(dl[..., 0:1], dl[..., 1:2])
    radial = np.concatenate([dl[..., :2] / np.maximum(rho, 1e-300), np.zeros_like(rho)], axis=-1)
    radial[..., 0] = np.where(rho[..., 0] > 0, radial[..., 0], 1.0)
    axis = np.zeros_like(dl)
    axis[..., 2] = 1.0
    if batch.type == SPHERE:
        local = r * dl / np.linalg.norm(dl, axis=-1, keepdims=True)
    elif batch.type == BOX:
        local = p * np.where(dl >= 0, 1.0, -1.0)
    elif batch.type == CAPSULE:
        local = h * z_sign * axis + r * dl / np.linalg.norm(dl, axis=-1, keepdims=True)
    elif batch.type == CYLINDER:
        local = h * z_sign * axis + r * radial
    elif batch.type == CONE:
        apex = h * dl[..., 2:3] >= r * rho - h * dl[..., 2:3]
        local = np.where(apex, h * axis, r * radial - h * axis)
    else:
        best = np.argmax(np.einsum("pvj,pkj->pkv", batch.verts, dl), axis=-1)
        local = np.take_along_axis(batch.verts[:, None, :, :], best[..., None, None], axis=2)[:, :, 0, :]
    return batch.pos[:, None, :] + np.einsum("pij,pkj->pki", batch.rot, local)


def boundary_value(batch: Batch, x: np.ndarray, planes: list | None = None) -> np.ndarray:
    """0 on the surface, < 0 inside, > 0 outside (P,) for points x (P, 3); ``planes``: hull face planes per pose."""
    xl = np.einsum("pij,pi->pj", batch.rot, x - batch.pos)
    r, h = batch.params[:, 0], batch.params[:, 1]
    if batch.type == SPHERE:
        return np.linalg.norm(xl, axis=1) - r
    if batch.type == BOX:
        return np.max(np.abs(xl) - batch.params, axis=1)
    if batch.type == CAPSULE:
        t = np.clip(xl[:, 2], -h, h)
        return np.linalg.norm(xl - np.stack([0 * t, 0 * t, t], axis=1), axis=1) - r
    rho = np.hypot(xl[:, 0], xl[:, 1])
    if batch.type == CYLINDER:
        return np.maximum(rho - r, np.abs(xl[:, 2]) - h)
    if batch.type == CONE:
        # Slant constraint rho <= r (h - z) / (2h), scaled to metres by the slant's unit normal (2h, r) / L.
        slant = (2 * h * rho - r * (h - xl[:, 2])) / np.hypot(2 * h, r)
        return np.maximum.reduce([slant, -h - xl[:, 2], xl[:, 2] - h])
    return np.array([np.max(pl[:, :3] @ q - pl[:, 3]) for pl, q in zip(planes, xl, strict=True)])


# ---------------------------------------------------------------------------------------------------------------
# Signed distance by direction optimisation
# ---------------------------------------------------------------------------------------------------------------


def overlap(a: Batch, b: Batch, d: np.ndarray) -> np.ndarray:
    """``f(d) = h_A(d) + h_B(-d)`` (P, K) [m] with B's position relative to A's: how far B must move along d."""
    rel = np.einsum("pi,pki->pk", a.pos - b.pos, d)
    return support_value(a, d) + support_value(b, -d) + rel


def _tangent_basis(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors (P, 3) perpendicular to unit d (P, 3) and to each other."""
    helper = np.where(np.abs(d[:, :1]) < 0.6, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    t1 = np.cross(d, helper)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return t1, np.cross(d, t1)


def _refine(a: Batch, b: Batch, d0: np.ndarray, radius: float, iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """Ellipsoid method on ``F(u) = f((d0 + u) / |d0 + u|)`` over the tangent plane of d0 (P, 3).

    Subgradient: ``dF/du_i ~ t_i . g - (d . t_i)(d . g)`` with ``g = s_A(d) - s_B(-d)``. The ellipse
    ``{c + L x : |x| <= 1}`` is cut through its centre (2-D): ``p = L^T g / |L^T g|``, ``c -= L p / 3``,
    ``L = 2/sqrt(3) (L - (1 - 1/sqrt(3)) L p p^T)`` (factored, so it stays positive definite when thin).
    Returns the best value (P,) and its unit direction (P, 3).
    """
    t1, t2 = _tangent_basis(d0)
    count = d0.shape[0]
    c = np.zeros((count, 2))
    L = np.tile(np.eye(2) * radius, (count, 1, 1))
    best = overlap(a, b, d0[:, None, :])[:, 0]
    best_d = d0.copy()
    gamma = 1 - 1 / np.sqrt(3)
    for _ in range(iterations):
        raw = d0 + c[:, :1] * t1 + c[:, 1:] * t2
        d = raw / np.linalg.norm(raw, axis=1, keepdims=True)
        value = overlap(a, b, d[:, None, :])[:, 0]
        better = value < best
        best = np.where(better, value, best)
        best_d = np.where(better[:, None], d, best_d)
        g = support_point(a, d[:, None, :])[:, 0] - support_point(b, -d[:, None, :])[:, 0]
        dg = np.sum(d * g, axis=1)
        grad = np.stack([np.sum(t * g, axis=1) - np.sum(d * t, axis=1) * dg for t in (t1, t2)], axis=1)
        q = np.einsum("pji,pj->pi", L, grad)
        size = np.linalg.norm(q, axis=1, keepdims=True)
        ok = size[:, 0] > 0
        p = np.where(ok[:, None], q / np.where(ok[:, None], size, 1.0), 0.0)
        Lp = np.einsum("pij,pj->pi", L, p)
        c = c - Lp / 3.0
        L = np.where(ok[:, None, None], 2 / np.sqrt(3) * (L - gamma * Lp[:, :, None] * p[:, None, :]), L)
    return best, best_d


def signed_distance(a: Batch, b: Batch, extra: np.ndarray | None = None, starts: int = 3,
                    iterations: int = 150) -> tuple[np.ndarray, np.ndarray, list]:  # fmt: skip
    """Reference signed distance phi (P,) [m], normal (P, 3) from A to B (module docstring) and every run's
    (value, direction).

    Global: the best of 500 Fibonacci directions and the shapes' axes, then ``starts`` more starts each outside
    0.3 rad of the previous ones, refined from a 0.15 rad disc. Local: each ``extra`` (P, M, 3) direction (other
    solvers' normals) refined from a 2e-3 rad disc; a refinement only ever lowers f, so a start can only help.
    """
    count = a.pos.shape[0]
    dirs = np.broadcast_to(fibonacci_sphere(500), (count, 500, 3))
    axes = np.concatenate([a.rot.transpose(0, 2, 1), b.rot.transpose(0, 2, 1)], axis=1)
    cands = np.concatenate([dirs, axes, -axes], axis=1)
    values = overlap(a, b, cands)
    best = np.full(count, np.inf)
    best_d = np.zeros_like(a.pos)
    runs = []
    for _ in range(starts):
        # Best remaining sample, then exclude its neighbourhood: the next start lies in another basin.
        d0 = np.take_along_axis(cands, np.argmin(values, axis=1)[:, None, None], axis=1)[:, 0]
        values = np.where(np.einsum("pki,pi->pk", cands, d0) > np.cos(0.3), np.inf, values)
        runs.append((d0, 0.15))
    if extra is not None:
        runs += [(e / np.linalg.norm(e, axis=-1, keepdims=True), 2e-3) for e in np.moveaxis(extra, 1, 0)]
    results = [_refine(a, b, d0, radius, iterations) for d0, radius in runs]
    for value, d in results:
        better = value < best
        best = np.where(better, value, best)
        best_d = np.where(better[:, None], d, best_d)
    return -best, best_d, results


def direction_spread(results, best: np.ndarray, best_d: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Largest angle (P,) [rad] between the best direction and any run that ended within ``tol`` (P,) [m] of the
    best value ``best = min f``: large when several directions are optimal to that tolerance (the normal is not
    determined at that level)."""
    spread = np.zeros(best.shape)
    for value, d in results:
        near = value <= best + tol
        spread = np.maximum(spread, np.where(near, np.linalg.norm(d - best_d, axis=1), 0.0))
    return spread


def ring_rise(a: Batch, b: Batch, d: np.ndarray, angle: float = 1e-3, count: int = 64) -> np.ndarray:
    """Smallest rise of f (P,) [m] over ``count`` directions at ``angle`` [rad] around d (P, 3): ~0 in a flat
    valley, where the deepest (or closest) direction is not well defined."""
    t1, t2 = _tangent_basis(d)
    phase = 2 * np.pi * np.arange(count) / count
    ring = np.cos(angle) * d[:, None] + np.sin(angle) * (np.cos(phase)[:, None] * t1[:, None]
                                                         + np.sin(phase)[:, None] * t2[:, None])  # fmt: skip
    return overlap(a, b, ring).min(axis=1) - overlap(a, b, d[:, None])[:, 0]
