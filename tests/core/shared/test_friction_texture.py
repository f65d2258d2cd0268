"""Texture (plowing) friction (core/friction/texture.py) against closed forms and a numpy reference (spec G.7)."""

from __future__ import annotations

import numpy as np
import pytest
from contact_lab.core.friction.lookup import pack_surfaces
from contact_lab.core.friction.surface import (
    StructureSource,
    SurfaceFriction,
    SurfaceFrictionModel,
    SurfaceMesh,
    TextureImage,
)
from contact_lab.core.friction.texture import (
    PLOWING_TAN,
    PLOWING_THETA,
    plowing_value,
    surface_friction_map,
    texture_coefficients,
)
from reference_geometry import random_rotation, rotation_about

THETA = np.radians(30.0)
EYE = np.eye(3)
ZERO = np.zeros(3)
X, Y, Z = EYE
CENTRE = np.array([0.5, 0.5, 0.0])
# 64 x 64 texels on a 1 m quad, patch 0.25 m at 16 x 16 centred on (0.5, 0.5): every sample is a texel centre
ALIGNED = {"patch_size": 0.25, "resolution": 16}
F32 = 2e-7  # float32 texel quantisation of a unit normal


def phi(theta, law):
    return np.tan(theta) if law == PLOWING_TAN else theta


def quad_mesh(x0=0.0, x1=1.0, y0=0.0, y1=1.0, z=0.0, up=True, sub=4, uv_fn=None):
    """Subdivided quad at height z, outward normal +z (``up``) or -z; UV = xy unless ``uv_fn(xy)`` is given."""
    xs = np.linspace(x0, x1, sub + 1)
    ys = np.linspace(y0, y1, sub + 1)
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    verts = np.stack([gx, gy, np.full_like(gx, z)], -1).reshape(-1, 3)
    tris = []
    for i in range(sub):
        for j in range(sub):
            a, b, c, d = i * (sub + 1) + j, (i + 1) * (sub + 1) + j, (i + 1) * (sub + 1) + j + 1, i * (sub + 1) + j + 1
            tris += [(a, b, c), (a, c, d)] if up else [(a, c, b), (a, d, c)]
    tris = np.array(tris, np.int32)
    xy = verts[tris][:, :, :2]
    return SurfaceMesh(verts, tris, xy.copy() if uv_fn is None else uv_fn(xy))


def encode(normals):
    """Tangent-space unit normals (H, W, 3) -> RGBA float32 texels (2 rgb - 1 = n)."""
    n = normals / np.linalg.norm(normals, axis=-1, keepdims=True)
    out = np.ones(n.shape[:2] + (4,), np.float32)
    out[..., :3] = (n + 1) / 2
    return TextureImage(out)


def tilt(theta, beta):
    """Unit normal tilted by theta toward tangent-space direction beta."""
    return np.array([np.sin(theta) * np.cos(beta), np.sin(theta) * np.sin(beta), np.cos(theta)])


def constant_map(theta, beta, size=64):
    return encode(np.broadcast_to(tilt(theta, beta), (size, size, 3)).copy())


def column_map(column_normal, size=64):
    """Each texel column j gets the tangent-space normal column_normal(j)."""
    cols = np.array([column_normal(j) for j in range(size)])
    return encode(np.broadcast_to(cols[None, :, :], (size, size, 3)).copy())


def random_map(seed, size=64, max_tilt=np.radians(40)):
    rng = np.random.default_rng(seed)
    th = rng.uniform(0, max_tilt, (size, size))
    be = rng.uniform(0, 2 * np.pi, (size, size))
    return encode(np.stack([np.sin(th) * np.cos(be), np.sin(th) * np.sin(be), np.cos(th)], -1))


def textured(mesh, image, **kw):
    return SurfaceFriction(model=SurfaceFrictionModel.TEXTURE, mesh=mesh, normal_map=image, **kw)


def mu_pair(surfaces, a=0, b=1, point=CENTRE, t=X, bt=Y, n=Z, **kw):
    """Coefficients (mu_t, mu_b, mu_-t, mu_-b) and overlap count for shapes a, b at identity pose."""
    pool = pack_surfaces(surfaces)
    return texture_coefficients(pool, a, EYE, ZERO, b, EYE, ZERO, point, n, t, bt, **kw)


# ---------------------------------------------------------------------------------------------
# reference: the patch pipeline in numpy for coplanar quads with affine UVs (full overlap)
# ---------------------------------------------------------------------------------------------


def ref_bilinear(pixels, u, v):
    h, w, _ = pixels.shape
    x = u * w - 0.5
    y = v * h - 0.5
    j0 = np.floor(x).astype(int)
    i0 = np.floor(y).astype(int)
    ax = (x - j0)[:, None]
    ay = (y - i0)[:, None]
    p = pixels.astype(np.float64)

    def at(i, j):
        return p[i % h, j % w]

    return (
        (1 - ax) * (1 - ay) * at(i0, j0)
        + ax * (1 - ay) * at(i0, j0 + 1)
        + (1 - ax) * ay * at(i0 + 1, j0)
        + ax * ay * at(i0 + 1, j0 + 1)
    )


def ref_patch(maps, frames, uv_maps, signs, point, t, b, dirs, size, res, law, strength=(1, 1), directx=(0, 0)):
    """Mean over pixels of sum_S max(0, m'_S . sign_S d) (2/pi) phi(theta_S), surfaces at z = 0 (n = +z)."""
    cell = size / res
    c = (np.arange(res) + 0.5) * cell - size / 2
    gx, gy = np.meshgrid(c, c, indexing="ij")
    g = point + gx.reshape(-1, 1) * t + gy.reshape(-1, 1) * b
    d = dirs[:, :1] * t + dirs[:, 1:] * b
    total = np.zeros(len(dirs))
    for image, (T, B, N), uv_map, sign, s, dx in zip(maps, frames, uv_maps, signs, strength, directx, strict=True):
        if image is None:
            continue
        uv = uv_map(g[:, :2])
        nt = 2 * ref_bilinear(image.pixels, uv[:, 0], uv[:, 1])[:, :3] - 1
        nt[:, 1] *= -1 if dx else 1
        nt[:, :2] *= s
        m = nt[:, :1] * T + nt[:, 1:2] * B + nt[:, 2:3] * N
        m /= np.linalg.norm(m, axis=1)[:, None]
        theta = np.arccos(np.clip(m @ N, -1, 1))
        mp = m - (m @ Z)[:, None] * Z
        mp /= np.linalg.norm(mp, axis=1)[:, None]
        values = np.maximum(0.0, sign * (mp @ d.T)) * (2 / np.pi) * phi(theta, law)[:, None]
        total += values.mean(axis=0)
    return total


# ---------------------------------------------------------------------------------------------
# one facet
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("law", [PLOWING_THETA, PLOWING_TAN])
def test_plowing_value_matches_closed_form(law):
    """Give max(0, cos(angle(d, tilt))) (2/pi) phi(theta) for a facet tilted by theta, any rotated frame."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        rot = random_rotation(rng)
        theta, beta, psi = rng.uniform(0, 1.2), rng.uniform(0, 2 * np.pi), rng.uniform(0, 2 * np.pi)
        m = rot @ tilt(theta, beta) * rng.uniform(0.5, 2)  # any length
        d = rot @ np.array([np.cos(psi), np.sin(psi), 0.0])
        value = plowing_value(m, rot @ Z, rot @ Z, d, law)
        expected = max(0.0, np.cos(psi - beta)) * 2 / np.pi * phi(theta, law)
        assert abs(value - expected) < 1e-12
    assert plowing_value(Z.copy(), Z.copy(), Z.copy(), X.copy(), law) == 0.0


# ---------------------------------------------------------------------------------------------
# G.7 closed forms
# ---------------------------------------------------------------------------------------------


def test_flat_maps_give_zero():
    """Give 0 in every direction when both normal maps are flat."""
    flat = encode(np.broadcast_to(Z, (64, 64, 3)).copy())
    mu, overlap = mu_pair([textured(quad_mesh(), flat), textured(quad_mesh(up=False), flat)])
    assert overlap == 16 * 16
    np.testing.assert_array_equal(mu, np.zeros(4))


@pytest.mark.parametrize(("law", "expected"), [(PLOWING_THETA, 0.3333), (PLOWING_TAN, 0.3676)])
def test_constant_tilt_resists_only_one_direction(law, expected):
    """Give mu_-t = (2/pi) phi(30 deg) (0.3333 theta / 0.3676 tan) for facets tilted toward -t, others 0."""
    mu, overlap = mu_pair([textured(quad_mesh(), constant_map(THETA, np.pi)), None], law=law)
    assert overlap == 256
    np.testing.assert_allclose(mu, [0, 0, 2 / np.pi * phi(THETA, law), 0], atol=F32)
    assert round(mu[2], 4) == expected


def test_constant_tilt_on_b_is_mirrored():
    """Resist +t when B's facets tilt toward -t (B plows along -d, erratum K#22)."""
    mu, _ = mu_pair([None, textured(quad_mesh(up=False), constant_map(THETA, np.pi))])
    np.testing.assert_allclose(mu, [2 / np.pi * THETA, 0, 0, 0], atol=F32)


def test_strength_follows_blender_normal_map_node():
    """Scale the tangent-space xy by the strength: theta_s = atan(s tan theta); strength 0 gives 0."""
    for s in (0.0, 0.5, 2.0):
        mu, _ = mu_pair([textured(quad_mesh(), constant_map(THETA, np.pi), normal_map_strength=s), None])
        expected = 2 / np.pi * np.arctan(s * np.tan(THETA))
        np.testing.assert_allclose(mu, [0, 0, expected, 0], atol=F32)
    assert mu_pair([textured(quad_mesh(), random_map(3), normal_map_strength=0.0), None])[0].max() == 0.0


def test_triangle_wave_is_symmetric():
    """Give mu_t = mu_-t = (1/2)(2/pi) theta and mu_b = mu_-b = 0 for alternating +-t stripes."""
    image = column_map(lambda j: tilt(THETA, 0.0 if (j // 2) % 2 == 0 else np.pi))
    mu, _ = mu_pair([textured(quad_mesh(), image), None], **ALIGNED)
    half = 0.5 * 2 / np.pi * THETA
    np.testing.assert_allclose(mu, [half, 0, half, 0], atol=F32)


@pytest.mark.parametrize("law", [PLOWING_THETA, PLOWING_TAN])
def test_ratchet_is_asymmetric(law):
    """Give mu_-t = 3/4 (2/pi) phi(15 deg) and mu_t = 1/4 (2/pi) phi(70 deg) for a 3:1 sawtooth."""
    shallow, steep = np.radians(15), np.radians(70)
    image = column_map(lambda j: tilt(steep, 0.0) if j % 4 == 3 else tilt(shallow, np.pi))
    mu, _ = mu_pair([textured(quad_mesh(), image), None], law=law, **ALIGNED)
    expected = [0.25 * 2 / np.pi * phi(steep, law), 0, 0.75 * 2 / np.pi * phi(shallow, law), 0]
    np.testing.assert_allclose(mu, expected, atol=1e-6)
    assert abs(mu[0] - mu[2]) > 0.02


def test_overlap_only_aggregation():
    """Average over the pixels where both surfaces are present: B covers half the patch."""
    image = column_map(lambda j: tilt(THETA, 0.0 if j < 32 else np.pi))  # left half +t, right half -t
    half_b = SurfaceFriction(model=SurfaceFrictionModel.TEXTURE, mesh=quad_mesh(x0=0.5, x1=1.5, up=False))
    mu, overlap = mu_pair([textured(quad_mesh(), image), half_b], **ALIGNED)
    assert overlap == 16 * 8
    np.testing.assert_allclose(mu, [0, 0, 2 / np.pi * THETA, 0], atol=F32)  # full-patch mean would be half


def test_no_overlap_outside_depth_window():
    """Give 0 and no overlap pixel when B lies beyond the depth window."""
    far_b = textured(quad_mesh(z=0.5, up=False), constant_map(THETA, 0.0))
    mu, overlap = mu_pair([textured(quad_mesh(), constant_map(THETA, np.pi)), far_b], depth_window=0.25)
    assert overlap == 0 and np.all(mu == 0)
    mu, overlap = mu_pair([textured(quad_mesh(), constant_map(THETA, np.pi)), far_b], depth_window=0.6)
    # A's facets (toward -t) and B's (toward +t, B plows along -d) both resist -t
    assert overlap == 256
    np.testing.assert_allclose(mu, [0, 0, 2 * 2 / np.pi * THETA, 0], atol=F32)


def test_rotating_the_texture_by_90_degrees_permutes_coefficients():
    """Map (mu_t, mu_b, mu_-t, mu_-b) to (mu_-b, mu_t, mu_b, mu_-t) when the texture turns +90 deg about n.

    The UV map u = y, v = -x shows the image rotated by +90 deg about n (T = +b, B = -t): a facet tilted toward
    t then tilts toward b, and mu_new(d) = mu_old(R^T d).
    """
    centred = {"x0": -0.5, "x1": 0.5, "y0": -0.5, "y1": 0.5}

    def turn(xy):
        return np.stack([xy[..., 1], -xy[..., 0]], -1)

    a_map, b_map = random_map(4), random_map(9)
    # A alone (B without surface data), then both surfaces turned together
    base, _ = mu_pair([textured(quad_mesh(**centred), a_map), None], point=ZERO)
    rot, _ = mu_pair([textured(quad_mesh(**centred, uv_fn=turn), a_map), None], point=ZERO)
    assert base.min() > 1e-3 and np.ptp(base) > 0.05  # four distinct values: the permutation is visible
    np.testing.assert_allclose(rot, base[[3, 0, 1, 2]], atol=1e-9)
    pair = [textured(quad_mesh(**centred), a_map), textured(quad_mesh(**centred, up=False), b_map)]
    pair_turned = [
        textured(quad_mesh(**centred, uv_fn=turn), a_map),
        textured(quad_mesh(**centred, up=False, uv_fn=turn), b_map),
    ]
    base, _ = mu_pair(pair, point=ZERO)
    rot, _ = mu_pair(pair_turned, point=ZERO)
    np.testing.assert_allclose(rot, base[[3, 0, 1, 2]], atol=1e-9)


def test_additivity_of_two_textured_surfaces():
    """Give the sum of the one-sided values (each with the other surface flat) for two textured surfaces."""
    a_map, b_map = random_map(1), random_map(2)
    a_mesh, b_mesh = quad_mesh(), quad_mesh(up=False)
    plain_a = SurfaceFriction(model=SurfaceFrictionModel.TEXTURE, mesh=a_mesh)
    plain_b = SurfaceFriction(model=SurfaceFrictionModel.TEXTURE, mesh=b_mesh)
    both, _ = mu_pair([textured(a_mesh, a_map), textured(b_mesh, b_map)])
    only_a, _ = mu_pair([textured(a_mesh, a_map), plain_b])
    only_b, _ = mu_pair([plain_a, textured(b_mesh, b_map)])
    assert only_a.min() > 0.01 and only_b.min() > 0.01
    np.testing.assert_allclose(both, only_a + only_b, atol=1e-12)


def test_swapping_a_and_b_mirrors_directions():
    """Give mu for B sliding +d relative to A (swapped call) = mu for A sliding -d relative to B."""
    surfaces = [textured(quad_mesh(), random_map(5)), textured(quad_mesh(up=False), random_map(6))]
    angles = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    dirs = np.stack([np.cos(angles), np.sin(angles)], -1)
    # swapped frame: n' = -n, t' = t, b' = n' x t' = -b; direction (c, s) in (t', b') is c t - s b,
    # its opposite is (-c, s) in the original (t, b) basis
    swapped, _ = mu_pair(surfaces, a=1, b=0, n=-Z, t=X, bt=-Y, directions=dirs)
    original, _ = mu_pair(surfaces, directions=dirs * np.array([-1.0, 1.0]))
    assert original.max() > 0.05
    np.testing.assert_allclose(swapped, original, atol=1e-12)


def test_directx_flag_swaps_b_coefficients():
    """Flip G for DirectX maps: mu_b and mu_-b swap, mu_t and mu_-t stay."""
    image = random_map(7)
    ogl, _ = mu_pair([textured(quad_mesh(), image), None])
    dx, _ = mu_pair([textured(quad_mesh(), image, normal_map_directx=True), None])
    assert abs(ogl[1] - ogl[3]) > 1e-3
    np.testing.assert_allclose(dx, ogl[[0, 3, 2, 1]], atol=1e-12)


@pytest.mark.parametrize("law", [PLOWING_THETA, PLOWING_TAN])
def test_matches_numpy_pipeline_on_random_maps(law):
    """Match a numpy re-implementation of the patch pipeline (random maps, rotated frame, 8 directions)."""
    a_map, b_map = random_map(11), random_map(12)
    psi = 0.4
    t = np.array([np.cos(psi), np.sin(psi), 0.0])
    b = np.cross(Z, t)
    angles = np.linspace(0, 2 * np.pi, 8, endpoint=False) + 0.1
    dirs = np.stack([np.cos(angles), np.sin(angles)], -1)
    point = np.array([0.43, 0.61, 0.0])

    def b_uv(xy):
        return np.stack([0.7 * xy[..., 0] + 0.2 * xy[..., 1] + 0.1, -0.3 * xy[..., 0] + 0.9 * xy[..., 1]], -1)

    a_surface = textured(quad_mesh(), a_map, normal_map_strength=0.8)
    b_surface = textured(quad_mesh(up=False, uv_fn=b_uv), b_map, normal_map_directx=True)
    mu, overlap = mu_pair([a_surface, b_surface], point=point, t=t, bt=b, directions=dirs, law=law, **ALIGNED)
    # B = CW quad, N = -z; T = normalized dP/du, B = sign (N x T) from dP/dv
    jac = np.linalg.inv(np.array([[0.7, 0.2], [-0.3, 0.9]]))  # columns: dP/du, dP/dv
    dpdu = np.array([jac[0, 0], jac[1, 0], 0.0])
    dpdv = np.array([jac[0, 1], jac[1, 1], 0.0])
    tb = dpdu / np.linalg.norm(dpdu)
    nb = -Z
    bb = np.cross(nb, tb) * np.sign(np.cross(nb, tb) @ dpdv)
    expected = ref_patch(
        [a_map, b_map],
        [(X, Y, Z), (tb, bb, nb)],
        [lambda xy: xy, b_uv],
        [1.0, -1.0],
        point,
        t,
        b,
        dirs,
        ALIGNED["patch_size"],
        ALIGNED["resolution"],
        law,
        strength=(0.8, 1.0),
        directx=(0, 1),
    )
    assert overlap == 256 and expected.min() > 0.01
    np.testing.assert_allclose(mu, expected, atol=1e-9)


def test_rotated_body_and_tilted_mesh():
    """Give the closed form for a rotated, translated body and a patch frame rotated about n (frame invariance)."""
    rng = np.random.default_rng(8)
    rot = random_rotation(rng)
    pos = rng.normal(size=3)
    pool = pack_surfaces([textured(quad_mesh(sub=6), constant_map(THETA, np.pi)), None])
    n = rot @ Z
    tilt_dir = rot @ -X
    for psi in (0.0, 0.3, 1.9):
        t = rot @ rotation_about(Z, psi) @ X
        b = np.cross(n, t)
        angles = np.linspace(0, 2 * np.pi, 12, endpoint=False)
        dirs = np.stack([np.cos(angles), np.sin(angles)], -1)
        mu, overlap = texture_coefficients(
            pool, 0, rot, pos, 1, EYE, ZERO, pos + rot @ [0.4, 0.55, 0.0], n, t, b, directions=dirs
        )
        d = dirs[:, :1] * t + dirs[:, 1:] * b
        expected = np.maximum(0, d @ tilt_dir) * 2 / np.pi * THETA
        assert overlap == 256
        np.testing.assert_allclose(mu, expected, atol=1e-6)


def test_contact_normal_not_aligned_with_surface():
    """Hit a mesh tilted 20 deg to the contact plane along n; measure theta against its own normal."""
    tilt_rot = rotation_about(Y, np.radians(20))
    beta = np.pi / 2  # facets tilted toward +b (tangent-space +v)
    pool = pack_surfaces([textured(quad_mesh(-0.5, 0.5, -0.5, 0.5, sub=8), constant_map(THETA, beta)), None])
    mu, overlap = texture_coefficients(
        pool, 0, tilt_rot, ZERO, 1, EYE, ZERO, ZERO, Z, X, Y, patch_size=0.2, resolution=8
    )
    assert overlap == 64
    m = tilt_rot @ tilt(THETA, beta)
    expected = [plowing_value(m, Z.copy(), tilt_rot @ Z, d.copy(), PLOWING_THETA) for d in (X, Y, -X, -Y)]
    np.testing.assert_allclose(mu, expected, atol=1e-6)
    assert mu[1] > 0.2


# ---------------------------------------------------------------------------------------------
# preview map
# ---------------------------------------------------------------------------------------------


def test_surface_friction_map_models():
    """Give mu (Coulomb), the ellipse value (anisotropic axis field) and the one-sided plowing value (texture)."""
    mesh = quad_mesh()
    aniso = SurfaceFriction(
        model=SurfaceFrictionModel.ANISOTROPIC,
        mu_t=0.2,
        mu_b=0.8,
        structure_source=StructureSource.AXIS,
        structure_axis=np.array([1.0, 0.0, 0.0]),
        mesh=mesh,
    )
    surfaces = [SurfaceFriction(mu=0.37), aniso, textured(mesh, constant_map(THETA, np.pi)), None]
    pool = pack_surfaces(surfaces)
    points = np.array([[0.3, 0.3, 0.0], [0.6, 0.7, 0.01]])
    np.testing.assert_allclose(surface_friction_map(pool, 0, points, X), 0.37)
    assert np.all(surface_friction_map(pool, 3, points, X) == 0.0)
    for phi_deg in (0.0, 30.0, 90.0):
        c, s = np.cos(np.radians(phi_deg)), np.sin(np.radians(phi_deg))
        expected = 1 / np.sqrt(c**2 / 0.2**2 + s**2 / 0.8**2)
        np.testing.assert_allclose(surface_friction_map(pool, 1, points, [c, s, 0.0]), expected, rtol=1e-12)
    # a slider moving +x runs into faces tilted toward -x: (2/pi) theta; moving -x or along y: 0
    np.testing.assert_allclose(surface_friction_map(pool, 2, points, X), 2 / np.pi * THETA, atol=F32)
    for direction in (-X, Y, -Y):
        np.testing.assert_allclose(surface_friction_map(pool, 2, points, direction), 0.0, atol=F32)
