"""Per-surface friction inputs: the data contract between Blender (addon/) and the core.

Everything here is plain numpy in the *shape's* local frame and SI units. The add-on fills a
:class:`SurfaceFriction` per collision shape from Blender data (mesh, UVs, attributes, images,
material node tree); the core turns the two surfaces of every contact into a friction set
(course ch. 6: a cone generator per contact, frame ``C = [n t b]`` + limit surface).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class SurfaceFrictionModel(IntEnum):
    """Friction model of a surface (``obj.contact_lab.friction_model``)."""

    NONE = 0
    COULOMB = 1
    """Isotropic Coulomb, coefficient ``mu``."""
    ANISOTROPIC = 2
    """Elliptic Coulomb: ``mu_t`` along the structure direction, ``mu_b`` across (frame fixed to the surface)."""
    MATCHSTICK = 3
    """Course Alg. 21: interpolates ``mu`` (isotropic) and ``(mu_t, mu_b)`` by the angle between the two
    surfaces' structure directions."""
    TENSOR = 4
    """Friction tensor (Pabst et al. 2009): ``kappa`` and a 2x2 SPD tensor in the structure frame."""
    TEXTURE = 5
    """Texture (plowing) friction from the surface's normal map (Andrews et al. 2021)."""


class StructureSource(IntEnum):
    """Where the structure direction field comes from (``obj.contact_lab.structure_source``)."""

    NONE = 0
    """No field: the surface is isotropic."""
    ATTRIBUTE = 1
    """A FLOAT_VECTOR mesh attribute, given here per triangle corner (``SurfaceMesh.corner_structure``)."""
    IMAGE = 2
    """A direction image in UV space: RGB = tangent-space direction, ``2 rgb - 1`` (x along U, y along V)."""
    UV_TANGENT = 3
    """The direction of increasing U of the UV map (``dP/du``)."""
    AXIS = 4
    """A fixed axis of the shape frame (``SurfaceFriction.structure_axis``)."""


@dataclass
class TextureImage:
    """An image as float values, rows bottom to top (Blender's ``pixels`` order).

    ``pixels`` has shape (height, width, channels) with channels >= 3, float32, values as stored
    (a normal map or direction image must be Non-Color data: no colour-space conversion).
    Sampling is bilinear with repeat (wrap) addressing, texel centres at ``(i + 0.5) / size``.
    """

    pixels: np.ndarray
    name: str = ""


@dataclass
class SurfaceMesh:
    """The render mesh of a surface in the shape's local frame (used for lookups, not for collision)."""

    vertices: np.ndarray
    """Vertex positions [m], shape (V, 3), float64, shape-local frame."""
    triangles: np.ndarray
    """Vertex indices, shape (T, 3), int32, counter-clockwise seen from outside (outward normals)."""
    corner_uv: np.ndarray | None = None
    """UV coordinates per triangle corner, shape (T, 3, 2), float64 (the UV map that textures use)."""
    corner_structure: np.ndarray | None = None
    """Structure vectors per triangle corner in the shape frame, shape (T, 3, 3), float64 (ATTRIBUTE source;
    point-domain attributes are copied to the corners of each vertex, face-domain ones to the face's corners).
    Need not be unit length nor tangent: the core projects onto the contact plane."""


@dataclass
class SurfaceFriction:
    """Everything one surface contributes to friction. Coefficients are dimensionless."""

    model: SurfaceFrictionModel = SurfaceFrictionModel.COULOMB
    mu: float = 0.5
    """Isotropic coefficient (COULOMB; the isotropic end of MATCHSTICK; fallback when a field is missing)."""
    mu_t: float = 0.5
    """Coefficient along the structure direction (ANISOTROPIC, MATCHSTICK: ``mu_t^A``)."""
    mu_b: float = 0.5
    """Coefficient across the structure direction (ANISOTROPIC, MATCHSTICK: ``mu_b^A``)."""
    contensou: float = 0.0
    """Torsional (Coulomb–Contensou) coefficient [m]: spin torque limit per unit normal force; 0 = off."""
    tensor: np.ndarray = field(default_factory=lambda: np.eye(2))
    """Friction tensor Q (2, 2) in the structure frame (t = structure direction, b = n x t) (TENSOR)."""
    kappa: float = 0.5
    """Friction tensor scale kappa (TENSOR): isotropic mu equals ``2 kappa`` when both tensors are I."""
    structure_source: StructureSource = StructureSource.NONE
    structure_axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    """Structure direction in the shape frame (AXIS source), shape (3,)."""
    structure_image: TextureImage | None = None
    """Direction image in UV space (IMAGE source)."""
    normal_map: TextureImage | None = None
    """Tangent-space normal map (TEXTURE model)."""
    normal_map_strength: float = 1.0
    """Blender Normal Map node strength: 0 = flat, 1 = as painted."""
    normal_map_directx: bool = False
    """Green channel points down (DirectX convention): flip G before decoding."""
    patch_size: float = 0.05
    """Side length [m] of the square contact patch sampled for texture friction."""
    patch_resolution: int = 16
    """Samples per patch side for texture friction."""
    mesh: SurfaceMesh | None = None
    """Render mesh for UV / attribute lookups (IMAGE, ATTRIBUTE, UV_TANGENT sources and TEXTURE)."""
