"""Volume, centroid and inertia of solids at density 1: closed triangle meshes, primitives, hulls, unions.

Mesh integrals use the divergence theorem on signed tetrahedra: a closed, outward-wound surface is the sum of
the tetrahedra ``(r, a, b, c)`` joining a reference point r to each triangle, counted with the sign of
``det[a - r, b - r, c - r]``, so the solid's polynomial integrals are sums of closed-form tetrahedron integrals.
With r the vertex mean the terms stay small, which keeps the sums accurate far from the origin.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..enums import ShapeType
from .hull import Hull


class MassProperties(NamedTuple):
    """Mass properties of a uniform solid of density 1 (multiply by a density [kg/m³] for kg and kg·m²)."""

    volume: float
    """Volume [m³]."""
    centroid: np.ndarray
    """Centre of volume [m], shape (3,)."""
    inertia: np.ndarray
    """Inertia tensor about the centroid, axes of the input frame [m⁵], shape (3, 3)."""


def _about_centroid(volume: float, moment: np.ndarray, second: np.ndarray, origin: np.ndarray) -> MassProperties:
    """Mass properties from ``∫ 1``, ``∫ x`` (3,) and ``∫ x xᵀ`` (3, 3) taken about ``origin`` (3,) [m]."""
    c = moment / volume
    covariance = second - volume * np.outer(c, c)  # ∫ (x - c)(x - c)ᵀ
    inertia = np.trace(covariance) * np.eye(3) - covariance  # I = ∫ (|y|² E - y yᵀ)
    return MassProperties(float(volume), c + origin, 0.5 * (inertia + inertia.T))


def mesh_mass_properties(vertices, triangles) -> MassProperties:
    """Mass properties of the solid bounded by a closed, outward-wound triangle mesh.

    Args:
        vertices: (V, 3) [m]. triangles: (T, 3) vertex indices, counter-clockwise seen from outside
            (check with :func:`is_closed_mesh`).

    For the tetrahedron ``(0, a, b, c)`` with ``D = det[a, b, c]`` (6 times its signed volume) and
    ``s = a + b + c``: ``∫ 1 = D / 6``, ``∫ x = D s / 24`` and ``∫ x xᵀ = D (a aᵀ + b bᵀ + c cᵀ + s sᵀ) / 120``
    (the last from ``∫ λ_i λ_j = D (1 + δ_ij) / 120`` over barycentric coordinates).

    Raises:
        ValueError: the enclosed volume is not positive (an open or inward-wound mesh).
    """
    vertices = np.asarray(vertices, np.float64).reshape(-1, 3)
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    origin = vertices.mean(axis=0)
    a, b, c = (vertices[triangles[:, k]] - origin for k in range(3))
    det = np.einsum("ij,ij->i", a, np.cross(b, c))
    s = a + b + c
    volume = float(det.sum()) / 6.0
    if not volume > 0.0:
        raise ValueError(f"the mesh encloses no positive volume ({volume} m³); is it closed and wound outward?")
    moment = np.einsum("i,ij->j", det, s) / 24.0
    outer = sum(np.einsum("i,ij,ik->jk", det, p, p) for p in (a, b, c, s))
    return _about_centroid(volume, moment, outer / 120.0, origin)


def is_closed_mesh(triangles) -> bool:
    """True when every edge of ``triangles`` (T, 3) is used by exactly two triangles with opposite orientation.

    Equivalently every directed edge ``(u, v)`` occurs once and its reverse ``(v, u)`` occurs once too.
    """
    tri = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(tri) == 0:
        return False
    directed = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    if np.any(directed[:, 0] == directed[:, 1]):
        return False
    key = np.unique(directed, axis=0)
    if len(key) != len(directed):
        return False  # a directed edge used twice: three or more triangles on it, or two wound alike
    reverse = np.unique(directed[:, ::-1], axis=0)
    return bool(np.array_equal(key, reverse))


def hull_triangles(hull: Hull) -> np.ndarray:
    """Fan triangulation (T, 3) int64 of a hull's polygons, wound like them (outward)."""
    fans = [np.stack([np.full(len(f) - 2, f[0]), f[1:-1], f[2:]], axis=1) for f in hull.faces]
    return np.concatenate(fans).astype(np.int64)


def shape_volume(shape_type: int, params, hull: Hull | None = None, mesh=None) -> float:
    """Volume [m³] of a solid shape (0 for planes); CONVEX needs its ``hull``, MESH its ``mesh`` (anything with
    ``vertices`` and ``triangles``, e.g. :class:`~.mesh.TriangleMesh`; 0 without it)."""
    a, b, c = (float(p) for p in params)
    if shape_type == ShapeType.SPHERE:
        return 4.0 / 3.0 * math.pi * a**3
    if shape_type == ShapeType.BOX:
        return 8.0 * a * b * c
    if shape_type == ShapeType.CAPSULE:
        return math.pi * a * a * 2.0 * b + 4.0 / 3.0 * math.pi * a**3
    if shape_type == ShapeType.CYLINDER:
        return math.pi * a * a * 2.0 * b
    if shape_type == ShapeType.CONE:
        return math.pi * a * a * 2.0 * b / 3.0
    if shape_type == ShapeType.CONVEX and hull is not None:
        return mesh_mass_properties(hull.vertices, hull_triangles(hull)).volume
    if shape_type == ShapeType.MESH and mesh is not None:
        return mesh_mass_properties(mesh.vertices, mesh.triangles).volume
    return 0.0


def shape_inertia(shape_type: int, params, mass: float, hull: Hull | None = None) -> np.ndarray:
    """Inertia tensor [kg·m²] of a solid shape of ``mass`` [kg] about its centroid, in its own frame.

    The centroid is the shape origin except for the CONE (``z = -half_height / 2``) and CONVEX shapes (see
    :func:`primitive_mass_properties`). Cylinder (radius r, height H = 2 half_height): axial ``m r²/2``,
    transverse ``m (r²/4 + H²/12)``; cone: axial ``3 m r²/10``, transverse ``m (3 r²/20 + 3 H²/80)``.
    Zero for planes and meshes.
    """
    a, b, c = (float(p) for p in params)
    if shape_type == ShapeType.SPHERE:
        return np.eye(3) * (0.4 * mass * a * a)
    if shape_type == ShapeType.BOX:
        # full edge lengths 2a, 2b, 2c: I_xx = m/12 ((2b)^2 + (2c)^2) = m/3 (b^2 + c^2)
        return np.diag([mass / 3.0 * (b * b + c * c), mass / 3.0 * (a * a + c * c), mass / 3.0 * (a * a + b * b)])
    if shape_type == ShapeType.CAPSULE:
        r, height = a, 2.0 * b
        v_cyl = math.pi * r * r * height
        v_sph = 4.0 / 3.0 * math.pi * r**3
        m_cyl = mass * v_cyl / (v_cyl + v_sph)
        m_sph = mass - m_cyl
        i_axis = m_cyl * r * r / 2.0 + m_sph * 0.4 * r * r
        # two hemispheres offset by height/2 plus their own centroid offset 3r/8
        i_perp = m_cyl * (r * r / 4.0 + height * height / 12.0) + m_sph * (
            0.4 * r * r + height * height / 4.0 + 3.0 * height * r / 8.0
        )
        return np.diag([i_perp, i_perp, i_axis])
    if shape_type == ShapeType.CYLINDER:
        i_perp = mass * (a * a / 4.0 + b * b / 3.0)  # H²/12 = (2b)²/12
        return np.diag([i_perp, i_perp, 0.5 * mass * a * a])
    if shape_type == ShapeType.CONE:
        i_perp = mass * (3.0 * a * a / 20.0 + 3.0 * b * b / 20.0)  # 3 H²/80 = 3 (2b)²/80
        return np.diag([i_perp, i_perp, 0.3 * mass * a * a])
    if shape_type == ShapeType.CONVEX and hull is not None:
        unit = mesh_mass_properties(hull.vertices, hull_triangles(hull))
        return unit.inertia * (mass / unit.volume)
    return np.zeros((3, 3))


def primitive_mass_properties(shape_type: int, params, hull: Hull | None = None, mesh=None) -> MassProperties:
    """Mass properties at density 1 of one solid shape in its own frame (``shape_params`` per :class:`ShapeType`).

    SPHERE, BOX, CAPSULE and CYLINDER are centred on their origin; the CONE's centroid is at
    ``z = -half_height / 2`` (a quarter of the height above its base); CONVEX integrates ``hull``, MESH its closed
    ``mesh`` (``vertices``, ``triangles``).

    Raises:
        ValueError: a shape without a finite volume (PLANE, a MESH without its mesh or not closed) or a CONVEX
            shape without its hull.
    """
    shape_type = ShapeType(shape_type)
    if shape_type == ShapeType.CONVEX:
        if hull is None:
            raise ValueError("a CONVEX shape needs its hull")
        return mesh_mass_properties(hull.vertices, hull_triangles(hull))
    if shape_type == ShapeType.MESH and mesh is not None:
        return mesh_mass_properties(mesh.vertices, mesh.triangles)
    if shape_type not in (ShapeType.SPHERE, ShapeType.BOX, ShapeType.CAPSULE, ShapeType.CYLINDER, ShapeType.CONE):
        raise ValueError(f"{shape_type.name} shapes have no finite volume")
    params = np.asarray(params, np.float64).reshape(3)
    volume = shape_volume(shape_type, params)
    centroid = np.array([0.0, 0.0, -0.5 * params[1] if shape_type == ShapeType.CONE else 0.0])
    return MassProperties(volume, centroid, shape_inertia(shape_type, params, volume))


def combine_mass_properties(parts: list) -> MassProperties:
    """Mass properties of the union of solids of one density (no overlap assumed).

    Args:
        parts: ``(properties, pos (3,) [m], rotation (3, 3))`` per part; the part's frame maps to the common
            frame by ``x = rotation · x_part + pos``. A bare :class:`MassProperties` is a part already in the
            common frame (identity pose).

    Returns the total volume, the common centroid and the inertia about it, using the parallel-axis theorem
    ``I = Σ R I_i Rᵀ + V_i (|d_i|² E - d_i d_iᵀ)`` with ``d_i`` the part centroid's offset from the common one.
    """
    if not parts:
        raise ValueError("no parts to combine")
    posed = [(p, np.zeros(3), np.eye(3)) if isinstance(p, MassProperties) else p for p in parts]
    volumes = np.array([float(p.volume) for p, _, _ in posed])
    centroids, inertias = np.zeros((len(posed), 3)), np.zeros((len(posed), 3, 3))
    for i, (p, pos, rotation) in enumerate(posed):
        r = np.asarray(rotation, np.float64).reshape(3, 3)
        centroids[i] = np.einsum("ij,j->i", r, p.centroid) + np.asarray(pos, np.float64).reshape(3)
        inertias[i] = np.einsum("ij,jk,lk->il", r, p.inertia, r)
    volume = float(volumes.sum())
    centroid = np.einsum("i,ij->j", volumes, centroids) / volume
    d = centroids - centroid
    shift = np.einsum("i,ij,ij->i", volumes, d, d)[:, None, None] * np.eye(3) - np.einsum("i,ij,ik->ijk", volumes, d, d)
    inertia = np.sum(inertias + shift, axis=0)
    return MassProperties(volume, centroid, 0.5 * (inertia + inertia.T))
