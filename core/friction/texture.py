"""Texture (plowing) friction from normal maps (course Sec. 6.3, Andrews et al. 2021), CPU patch sampler.

Plowing law (course Eq.333-336), one facet with unit normal m, surface mean normal n_S, unit sliding direction d::

    theta = acos(m . n_S)                       angle between facet and the surface's own geometric normal
    m'    = normalize(m - (m . n) n)            facet tilt projected onto the contact plane (n = contact normal)
    mu_d  = max(0, m' . d) (2/pi) phi(theta)    (Eq.335)   phi = theta (PLOWING_THETA, Eq.334-336, default)
                                                                   or tan (PLOWING_TAN, Eq.333)

Sign convention (erratum K#22): the contact normal n points from A to B and ``mu_d`` is the coefficient for
"A slides along d relative to B". A's facets tilted toward +d resist (``max(0, m'_A . d)``); B moves along -d
relative to A, so B's facets tilted toward -d resist (``max(0, m'_B . (-d))``), all in world coordinates.

Patch aggregation (Sec. 6.3.2 and Fig.39, erratum K#23): a resolution x resolution grid of cell centres over the
square patch of side ``patch_size`` centred at the contact point in the contact plane (axes t, b). A surface is
present at a pixel when the line through the pixel centre along n meets its render mesh within
``+-depth_window`` (the shallow orthographic view volume); the coefficient is the mean of A's values plus the
mean of B's values over the pixels where BOTH are present. A shape without mesh is present everywhere; a surface
without normal map (or without UV map) is present where its mesh is and contributes 0. No overlap: 0.

These are plowing coefficients only (a flat normal map gives 0); the pair's base Coulomb mu is added elsewhere.

Normal map decoding follows Blender's Normal Map node in tangent space (EEVEE's ``node_normal_map``):
``nt = 2 rgb - 1`` (G negated for DirectX maps), ``nt.xy *= max(strength, 0)``,
``m = normalize(nt.x T + nt.y B + nt.z N)`` with the per-triangle UV frame of :mod:`.lookup`
(T = dP/du orthogonalised against N, B = sign (N x T), N = outward geometric normal of the triangle).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit_kernel
from ..math.vec import dot3
from .lookup import (
    SurfaceArrays,
    bilinear_sample,
    closest_surface_point,
    image_layout,
    triangle_uv,
)
from .surface import SurfaceFrictionModel

PLOWING_THETA = 0
"""``plowing_law`` flag: ``(2/pi) theta`` (Eq.334-336), the default."""
PLOWING_TAN = 1
"""``plowing_law`` flag: ``(2/pi) tan(theta)`` (Eq.333)."""

DEPTH_WINDOW_MIN = 0.02
"""Smallest half-depth [m] of the patch view volume; the default window is ``max(patch_size, DEPTH_WINDOW_MIN)``."""

STANDARD_DIRECTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
"""The four BLCP directions ``{+t, +b, -t, -b}`` as (cos, sin) in the (t, b) basis, shape (4, 2)."""

_TWO_OVER_PI = 2.0 / np.pi


@njit_kernel
def plowing_value(m_world, n_contact, surface_normal, d_world, law):
    """One-sided plowing coefficient of one facet for one direction (course Eq.335) [dimensionless].

    Args:
        m_world: facet normal (3,), need not be unit.
        n_contact: unit contact normal (3,).
        surface_normal: unit outward geometric normal of the facet's surface (3,) (theta is measured against it).
        d_world: unit direction (3,) in which this surface plows: ``+d`` for A and ``-d`` for B when A slides
            along d relative to B (erratum K#22).
        law: ``PLOWING_THETA`` (0) or ``PLOWING_TAN`` (1).
    """
    m_len = np.sqrt(dot3(m_world, m_world))
    if m_len <= 0.0:
        return 0.0
    c = dot3(m_world, surface_normal) / m_len
    theta = np.arccos(min(1.0, max(-1.0, c)))
    mn = dot3(m_world, n_contact)
    p0 = m_world[0] - mn * n_contact[0]
    p1 = m_world[1] - mn * n_contact[1]
    p2 = m_world[2] - mn * n_contact[2]
    p_len = np.sqrt(p0 * p0 + p1 * p1 + p2 * p2)
    if p_len <= 1e-12 * m_len:
        return 0.0
    along = (p0 * d_world[0] + p1 * d_world[1] + p2 * d_world[2]) / p_len
    if along <= 0.0:
        return 0.0
    # mu_d = max(0, m'.d) (2/pi) phi(theta)
    return along * _TWO_OVER_PI * (np.tan(theta) if law == 1 else theta)


@njit_kernel
def _line_triangle(tri_vertices, tri_normal, tri, q, line_dir, window, x):
    """Intersect the line ``q + s line_dir`` with the plane of triangle ``tri``; the point goes to ``x`` (3,).

    ``tri_vertices`` (T, 3, 3) and ``tri_normal`` (T, 3) are the :class:`~.lookup.SurfaceArrays` fields.
    Returns ``(code, b0, b1, b2)``: code 1 = inside the triangle (barycentrics of the hit), 0 = in the plane
    but outside the triangle, -1 = line nearly parallel to the plane or ``|s| > window``.
    """
    cos_n = dot3(tri_normal[tri], line_dir)
    if abs(cos_n) < 0.05:
        return -1, 0.0, 0.0, 0.0
    a = tri_vertices[tri, 0]
    s = (
        (a[0] - q[0]) * tri_normal[tri, 0] + (a[1] - q[1]) * tri_normal[tri, 1] + (a[2] - q[2]) * tri_normal[tri, 2]
    ) / cos_n
    if abs(s) > window:
        return -1, 0.0, 0.0, 0.0
    for k in range(3):
        x[k] = q[k] + s * line_dir[k]
    # barycentrics of the in-plane point x (Ericson Sec. 3.4)
    v00 = v01 = v11 = v20 = v21 = 0.0
    for k in range(3):
        e0 = tri_vertices[tri, 1, k] - a[k]
        e1 = tri_vertices[tri, 2, k] - a[k]
        e2 = x[k] - a[k]
        v00 += e0 * e0
        v01 += e0 * e1
        v11 += e1 * e1
        v20 += e2 * e0
        v21 += e2 * e1
    denom = v00 * v11 - v01 * v01
    if denom > 0.0:
        c1 = (v11 * v20 - v01 * v21) / denom
        c2 = (v00 * v21 - v01 * v20) / denom
        c0 = 1.0 - c1 - c2
        if c0 >= -1e-9 and c1 >= -1e-9 and c2 >= -1e-9:
            return 1, c0, c1, c2
    return 0, 0.0, 0.0, 0.0


@njit_kernel
def _mesh_point_along_line(surfaces, shape, q, line_dir, window, on_surface_tol, x):
    """Where the line ``q + s line_dir`` (shape frame) meets the mesh with ``|s| <= window``.

    Start from the closest triangle to ``q``, intersect the line with its plane, and accept when the
    intersection lies inside that triangle; otherwise move to the triangle closest to the intersection
    (accepting it when the intersection is within ``on_surface_tol`` of the mesh) and repeat (at most 4 times).
    Exact for planar regions, a close approximation on curved meshes. ``x`` (3,) is scratch.

    Returns ``(triangle, b0, b1, b2)``; ``triangle = -1`` when there is no hit.
    """
    tri_vertices = surfaces.tri_vertices
    tri_normal = surfaces.tri_normal
    # one exit only (break, not return): lets Numba prune the struct's per-call reference counting (see lookup)
    tri, r0, r1, r2 = -1, 0.0, 0.0, 0.0
    reach = np.sqrt(window * window + 4.0 * window * window)
    cur, b0, b1, b2, _ = closest_surface_point(surfaces, shape, q, reach)
    if cur >= 0:
        for _ in range(4):
            hit, c0, c1, c2 = _line_triangle(tri_vertices, tri_normal, cur, q, line_dir, window, x)
            if hit == 1:
                tri, r0, r1, r2 = cur, c0, c1, c2
                break
            if hit < 0:
                break
            nxt, b0, b1, b2, dist = closest_surface_point(surfaces, shape, x, reach)
            if nxt < 0:
                break
            if dist <= on_surface_tol:
                tri, r0, r1, r2 = nxt, b0, b1, b2
                break
            cur = nxt
    return tri, r0, r1, r2


@njit_kernel
def _pixel_in_shape_frame(rot, pos, point, t, b, x, y, q):
    """Pixel centre ``g = point + x t + y b`` [m] (world) into the shape frame: ``q = R^T (g - pos)`` (3,)."""
    d0 = point[0] + x * t[0] + y * b[0] - pos[0]
    d1 = point[1] + x * t[1] + y * b[1] - pos[1]
    d2 = point[2] + x * t[2] + y * b[2] - pos[2]
    for k in range(3):
        q[k] = rot[0, k] * d0 + rot[1, k] * d1 + rot[2, k] * d2


@njit_kernel
def _facet_normal_local(rgb, strength, directx, tri_tangent, tri_bitangent, tri_normal, tri):
    """Facet normal ``l = nx T + ny B + nz N`` (shape frame, not unit) from a normal-map sample ``rgb`` (>= 3,).

    Blender Normal Map node in tangent space: ``nt = 2 rgb - 1``, ``nt.xy *= strength`` (G negated for DirectX);
    (T, B, N) is the UV frame of triangle ``tri`` (the ``SurfaceArrays`` fields ``tri_tangent`` etc., (T, 3)).
    """
    nx = (2.0 * rgb[0] - 1.0) * strength
    ny = (2.0 * rgb[1] - 1.0) * strength
    nz = 2.0 * rgb[2] - 1.0
    if directx:
        ny = -ny
    l0 = nx * tri_tangent[tri, 0] + ny * tri_bitangent[tri, 0] + nz * tri_normal[tri, 0]
    l1 = nx * tri_tangent[tri, 1] + ny * tri_bitangent[tri, 1] + nz * tri_normal[tri, 1]
    l2 = nx * tri_tangent[tri, 2] + ny * tri_bitangent[tri, 2] + nz * tri_normal[tri, 2]
    return l0, l1, l2


@njit_kernel
def _facet_plowing(l0, l1, l2, tri_normal, tri, rot, n, sign, law, work, values, p):
    """Eq.335 for one facet and every direction: ``values[p, k] = max(0, m' . sign d_k) (2/pi) phi(theta)``.

    ``(l0, l1, l2)`` is the facet normal in the shape frame, ``tri_normal[tri]`` the triangle's outward normal N
    (shape frame), ``rot`` the shape-to-world rotation; ``work[4 + k]`` holds the world direction d_k.
    Directions the facet does not resist keep their value.
    """
    count = values.shape[1] - 1
    # world facet normal m = R l
    m0 = rot[0, 0] * l0 + rot[0, 1] * l1 + rot[0, 2] * l2
    m1 = rot[1, 0] * l0 + rot[1, 1] * l1 + rot[1, 2] * l2
    m2 = rot[2, 0] * l0 + rot[2, 1] * l1 + rot[2, 2] * l2
    m_len = np.sqrt(m0 * m0 + m1 * m1 + m2 * m2)
    if m_len <= 0.0:
        return
    # m . ng = (R l) . (R N) = l . N  (ng = R N, the surface's world normal)
    mg = l0 * tri_normal[tri, 0] + l1 * tri_normal[tri, 1] + l2 * tri_normal[tri, 2]
    theta = np.arccos(min(1.0, max(-1.0, mg / m_len)))
    factor = _TWO_OVER_PI * (np.tan(theta) if law == 1 else theta)
    # m' = normalize(m - (m.n) n); value_k = max(0, m'. sign d_k) (2/pi) phi(theta)
    mn = m0 * n[0] + m1 * n[1] + m2 * n[2]
    p0 = m0 - mn * n[0]
    p1 = m1 - mn * n[1]
    p2 = m2 - mn * n[2]
    p_len = np.sqrt(p0 * p0 + p1 * p1 + p2 * p2)
    if p_len <= 1e-12 * m_len:
        return
    for k in range(count):
        along = sign * (p0 * work[4 + k, 0] + p1 * work[4 + k, 1] + p2 * work[4 + k, 2])
        if along > 0.0:
            values[p, k] = along * factor / p_len


@njit_kernel
def _surface_patch_values(
    surfaces, shape, rot, pos, point, n, t, b, patch_size, resolution, sign, law, window, values, work
):
    """Evaluate one surface at every pixel of the patch (course Eq.335 per pixel, the "fragment shader").

    Writes ``values[p, k]`` (pixel p = ix + resolution iy, direction k) and ``values[p, K] = 1`` where the surface
    is present (0 absent). ``sign`` = +1 for A, -1 for B (B plows along -d); ``work[4:4+K]`` hold the world
    directions d_k, ``work[0:4]`` is scratch. Consecutive pixels first try the previous pixel's triangle.
    """
    count = values.shape[1] - 1
    pixels = resolution * resolution
    has_mesh = shape >= 0 and surfaces.shape_tri_start[shape] < surfaces.shape_tri_start[shape + 1]
    image = surfaces.surface_normal_image[shape] if shape >= 0 else -1
    textured = has_mesh and image >= 0 and surfaces.surface_has_uv[shape] != 0
    for p in range(pixels):
        for k in range(count):
            values[p, k] = 0.0
        values[p, count] = 1.0
    if not has_mesh:
        return  # no mesh: present everywhere, no texture
    strength = max(surfaces.surface_normal_strength[shape], 0.0)
    directx = surfaces.surface_normal_directx[shape] != 0
    cell = patch_size / resolution
    on_surface_tol = 1e-6 * cell
    # Per pixel, the helpers get only the arrays they read (not the struct): a call receiving the struct may pay a
    # reference-count update per field, and array views per pixel cost the same; either would be slower than the
    # pixel's arithmetic (measured: a patch took 4x as long when the per-pixel helpers received the struct).
    tri_vertices = surfaces.tri_vertices
    tri_normal = surfaces.tri_normal
    tri_tangent = surfaces.tri_tangent
    tri_bitangent = surfaces.tri_bitangent
    tri_uv = surfaces.tri_uv
    image_pixels = surfaces.image_pixels
    base, width, height, channels = image_layout(surfaces, image)
    # line direction in the shape frame: R^T n
    for k in range(3):
        work[1, k] = rot[0, k] * n[0] + rot[1, k] * n[1] + rot[2, k] * n[2]
    q = work[0]
    line_dir = work[1]
    x_scratch = work[2]
    rgb = work[3]
    hint = np.int64(-1)  # not the literal -1: _line_triangle would be compiled for Literal[int](-1) too
    for iy in range(resolution):
        y = (iy + 0.5) * cell - 0.5 * patch_size
        for ix in range(resolution):
            x = (ix + 0.5) * cell - 0.5 * patch_size
            p = ix + resolution * iy
            _pixel_in_shape_frame(rot, pos, point, t, b, x, y, q)
            # the previous pixel's triangle first: neighbouring pixels mostly hit the same triangle
            hit = 0
            if hint >= 0:
                hit, b0, b1, b2 = _line_triangle(tri_vertices, tri_normal, hint, q, line_dir, window, x_scratch)
            if hit == 1:
                tri = hint
            else:
                tri, b0, b1, b2 = _mesh_point_along_line(
                    surfaces, shape, q, line_dir, window, on_surface_tol, x_scratch
                )
            if tri < 0:
                values[p, count] = 0.0
                continue
            hint = tri
            if not textured:
                continue
            u, v = triangle_uv(tri_uv, tri, b0, b1, b2)
            bilinear_sample(image_pixels, base, width, height, channels, u, v, rgb)
            l0, l1, l2 = _facet_normal_local(rgb, strength, directx, tri_tangent, tri_bitangent, tri_normal, tri)
            _facet_plowing(l0, l1, l2, tri_normal, tri, rot, n, sign, law, work, values, p)


@njit_kernel
def texture_patch_coefficients(
    surfaces,
    shape_a,
    rot_a,
    pos_a,
    shape_b,
    rot_b,
    pos_b,
    point,
    n,
    t,
    b,
    directions,
    patch_size,
    resolution,
    law,
    depth_window,
    # outputs
    out,
    scratch,
    work,
):
    """Directional plowing coefficients of one contact from both surfaces' normal maps (course Sec. 6.3.2).

    Args:
        surfaces: :class:`~.lookup.SurfaceArrays` (meshes, grids, UV frames, images, normal-map settings).
        shape_a, shape_b: shape indices (``-1``: no surface data, present everywhere, contributes 0).
        rot_a, rot_b: shape-to-world rotations, shape (3, 3); pos_a, pos_b: shape origins [m], shape (3,).
        point: contact point [m], shape (3,); n: unit normal from A to B; t, b: unit tangents (C = [n t b]).
        directions: K sliding directions of A relative to B as (cos, sin) in the (t, b) basis, shape (K, 2)
            (:data:`STANDARD_DIRECTIONS` = {+t, +b, -t, -b}).
        patch_size: patch side [m]; resolution: R samples per side.
        law: ``PLOWING_THETA`` or ``PLOWING_TAN``.
        depth_window: half-depth [m] of the view volume (``max(patch_size, DEPTH_WINDOW_MIN)`` by default).
        out: coefficients mu_{d_k} [dimensionless], shape (K,).
        scratch: per-pixel values of A and B, shape (2, >= R*R, K + 1), float64.
        work: shape (4 + K, 3), float64.

    Returns:
        Number of overlap pixels (0: ``out`` is all zero).

    ``mu_k = mean_P I_A^k + mean_P I_B^k`` over the overlap set P (pixels where both surfaces are present).
    Cost O(K R^2) plus one or two mesh lookups per pixel and surface; allocates nothing.
    """
    count = directions.shape[0]
    for k in range(count):
        for j in range(3):
            work[4 + k, j] = directions[k, 0] * t[j] + directions[k, 1] * b[j]
        out[k] = 0.0
    values_a = scratch[0]
    values_b = scratch[1]
    # A slides along +d relative to B: A's facets plow along +d, B's along -d (erratum K#22)
    _surface_patch_values(
        surfaces, shape_a, rot_a, pos_a, point, n, t, b, patch_size, resolution, 1.0, law, depth_window, values_a, work
    )
    _surface_patch_values(
        surfaces, shape_b, rot_b, pos_b, point, n, t, b, patch_size, resolution, -1.0, law, depth_window, values_b, work
    )
    overlap = 0
    for p in range(resolution * resolution):
        if values_a[p, count] > 0.0 and values_b[p, count] > 0.0:
            overlap += 1
            for k in range(count):
                out[k] += values_a[p, k] + values_b[p, k]
    # mu_k = mean_P I_A^k + mean_P I_B^k over the overlap set P (Sec. 6.3.2 step 3, Fig.39)
    if overlap > 0:
        for k in range(count):
            out[k] /= overlap
    return overlap


# -------------------------------------------------------------------------------------------------
# Python helpers (tests, preview operator)
# -------------------------------------------------------------------------------------------------


def _patch_settings(pool: SurfaceArrays, shapes) -> tuple[float, int]:
    """Patch side and resolution of a pair: the largest among the shapes that have a normal map (default 5 cm, 16)."""
    textured = [s for s in shapes if s >= 0 and pool.surface_normal_image[s] >= 0]
    if not textured:
        return 0.05, 16
    return max(float(pool.surface_patch_size[s]) for s in textured), max(
        int(pool.surface_patch_resolution[s]) for s in textured
    )


def texture_coefficients(
    pool: SurfaceArrays,
    shape_a: int,
    rot_a,
    pos_a,
    shape_b: int,
    rot_b,
    pos_b,
    point,
    n,
    t,
    b,
    *,
    directions=STANDARD_DIRECTIONS,
    patch_size: float | None = None,
    resolution: int | None = None,
    law: int = PLOWING_THETA,
    depth_window: float | None = None,
) -> tuple[np.ndarray, int]:
    """Python wrapper of :func:`texture_patch_coefficients`: returns ``(mu (K,), overlap pixel count)``.

    ``patch_size`` / ``resolution`` default to the largest of the textured surfaces' settings.
    """
    size, res = _patch_settings(pool, (shape_a, shape_b))
    patch_size = size if patch_size is None else float(patch_size)
    resolution = res if resolution is None else int(resolution)
    window = max(patch_size, DEPTH_WINDOW_MIN) if depth_window is None else float(depth_window)
    directions = np.ascontiguousarray(directions, dtype=np.float64).reshape(-1, 2)
    out = np.zeros(directions.shape[0])
    scratch = np.zeros((2, resolution * resolution, directions.shape[0] + 1))
    work = np.zeros((4 + directions.shape[0], 3))

    def f(x, shp):
        return np.ascontiguousarray(x, dtype=np.float64).reshape(shp)

    overlap = texture_patch_coefficients(
        pool,
        np.int32(shape_a),  # int32 like the engine's contact_shape0/1: one compiled kernel for both
        f(rot_a, (3, 3)),
        f(pos_a, 3),
        np.int32(shape_b),
        f(rot_b, (3, 3)),
        f(pos_b, 3),
        f(point, 3),
        f(n, 3),
        f(t, 3),
        f(b, 3),
        directions,
        patch_size,
        resolution,
        int(law),
        window,
        out,
        scratch,
        work,
    )
    return out, int(overlap)


def surface_friction_map(
    pool: SurfaceArrays, shape: int, points_local, direction_local, *, law: int = PLOWING_THETA
) -> np.ndarray:
    """Friction coefficient the surface alone adds when something slides over each point along a direction.

    For previews (``contact_lab.preview_friction``). ``points_local`` (N, 3) [m] and ``direction_local`` (3,) are
    in the shape frame; the direction is projected onto the tangent plane of the closest triangle at each point
    (onto the plane normal to the structure-free direction itself when there is no mesh).

    - TEXTURE: plowing value of a patch around the point against a flat counter-surface that slides along the
      direction: the surface is B with n = -N (into it), the slider A moves along +d, so the surface's facets
      tilted toward -d resist (the patch settings of the surface, the ``law`` given).
    - ANISOTROPIC / MATCHSTICK with a structure field: ``1 / sqrt(cos^2 phi / mu_t^2 + sin^2 phi / mu_b^2)``,
      phi = angle between the direction and the projected structure direction (E.1.2, "map of coefficients");
      without a field: ``mu``.
    - TENSOR: ``kappa (d^T Q d + 1)`` with d in the structure frame (the counter-surface taken as Q = I), without
      a field ``kappa (tr(Q)/2 + 1)``.
    - COULOMB: ``mu``; NONE: 0.

    Returns an array (N,) [dimensionless].
    """
    points = np.ascontiguousarray(points_local, dtype=np.float64).reshape(-1, 3)
    direction = np.asarray(direction_local, dtype=np.float64).reshape(3)
    model = int(pool.surface_model[shape]) if shape >= 0 else 0
    result = np.zeros(points.shape[0])
    has_mesh = shape >= 0 and pool.shape_tri_start[shape] < pool.shape_tri_start[shape + 1]
    size, res = _patch_settings(pool, (shape,))
    structured = (SurfaceFrictionModel.ANISOTROPIC, SurfaceFrictionModel.MATCHSTICK, SurfaceFrictionModel.TENSOR)
    for i, p in enumerate(points):
        normal = None
        if has_mesh:
            tri, b0, b1, b2, _ = pool.closest_point(shape, p)
            if tri >= 0:
                normal = pool.tri_normal[tri]
                p = b0 * pool.tri_vertices[tri, 0] + b1 * pool.tri_vertices[tri, 1] + b2 * pool.tri_vertices[tri, 2]
        d = direction if normal is None else direction - np.sum(direction * normal) * normal
        d_len = float(np.sqrt(np.sum(d * d)))
        if model == SurfaceFrictionModel.COULOMB:
            result[i] = pool.surface_mu[shape]
        elif model == SurfaceFrictionModel.TEXTURE:
            if normal is not None and d_len != 0.0:
                result[i] = _texture_map_value(pool, shape, p, normal, d / d_len, size, res, law)
        elif model in structured:
            s = pool.structure_direction(shape, p)
            if normal is not None:
                s = s - np.sum(s * normal) * normal
            s_len = float(np.sqrt(np.sum(s * s)))
            if model == SurfaceFrictionModel.TENSOR:
                result[i] = _tensor_map_value(pool, shape, d, d_len, s, s_len, normal)
            else:
                result[i] = _elliptic_map_value(pool, shape, d, d_len, s, s_len)
    return result


def _texture_map_value(pool: SurfaceArrays, shape: int, p, normal, d, size: float, res: int, law: int) -> float:
    """Plowing of ``shape`` (as B, n = -N into it) under a flat slider A moving along unit ``d`` at ``p`` [m]."""
    eye = np.eye(3)
    zero = np.zeros(3)
    n = -normal  # from the slider (A) into this surface (B)
    b = np.cross(n, d)
    mu, _ = texture_coefficients(
        pool, -1, eye, zero, shape, eye, zero, p, n, d, b,
        directions=STANDARD_DIRECTIONS[:1], patch_size=size, resolution=res, law=law,
    )  # fmt: skip
    return mu[0]


def _tensor_map_value(pool: SurfaceArrays, shape: int, d, d_len: float, s, s_len: float, normal) -> float:
    """``kappa (d^T Q d + 1)`` with the unit direction in the structure frame (``kappa (tr(Q)/2 + 1)`` without one)."""
    q = pool.surface_tensor[shape]
    kappa = pool.surface_kappa[shape]
    if s_len == 0.0 or d_len == 0.0 or normal is None:
        return kappa * (0.5 * (q[0, 0] + q[1, 1]) + 1.0)
    s_hat = s / s_len
    c = float(np.sum(d * s_hat)) / d_len
    sn = float(np.sum(np.cross(s_hat, d) * normal)) / d_len
    quad = c * c * q[0, 0] + c * sn * (q[0, 1] + q[1, 0]) + sn * sn * q[1, 1]
    return kappa * (quad + 1.0)


def _elliptic_map_value(pool: SurfaceArrays, shape: int, d, d_len: float, s, s_len: float) -> float:
    """Elliptic coefficient at angle phi between ``d`` and the structure ``s`` (``mu`` without a field)."""
    if s_len == 0.0 or d_len == 0.0:
        return pool.surface_mu[shape]
    cos_phi = float(np.sum(d * s)) / (d_len * s_len)
    sin2 = max(0.0, 1.0 - cos_phi * cos_phi)
    mu_t = pool.surface_mu_t[shape]
    mu_b = pool.surface_mu_b[shape]
    # mu(phi) = 1 / sqrt(cos^2 phi / mu_t^2 + sin^2 phi / mu_b^2)
    return 1.0 / np.sqrt(cos_phi * cos_phi / mu_t**2 + sin2 / mu_b**2)


__all__ = [
    "DEPTH_WINDOW_MIN",
    "PLOWING_TAN",
    "PLOWING_THETA",
    "STANDARD_DIRECTIONS",
    "plowing_value",
    "surface_friction_map",
    "texture_coefficients",
    "texture_patch_coefficients",
]
