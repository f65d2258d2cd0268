"""Texture friction in whole simulations: a cube on a sawtooth-textured incline (course Fig. 40)."""

import math

import numpy as np
import pytest
from contact_lab.core import BodyKind, CollisionPipeline, FrictionSet, ModelBuilder, simulate
from contact_lab.core.friction.surface import SurfaceFriction, SurfaceFrictionModel, SurfaceMesh, TextureImage
from scenes import G

BASE_MU = 0.3
TILT = math.radians(30.0)
RIDGE_FRACTION = 0.8
PLOW = RIDGE_FRACTION * (2 / math.pi) * TILT  # θ-law plowing against the ridges: 0.2667


def sawtooth_map(size=64):
    """Tangent-space normal map: 80 % of each period tilted 30° toward +U, 20 % flat (a one-sided ratchet)."""
    nt = np.zeros((size, size, 3))
    u = (np.arange(size) + 0.5) / size
    tilted = u < RIDGE_FRACTION
    nt[:, tilted] = [math.sin(TILT), 0.0, math.cos(TILT)]
    nt[:, ~tilted] = [0.0, 0.0, 1.0]
    rgba = np.ones((size, size, 4), np.float32)
    rgba[..., :3] = 0.5 * (nt + 1.0)
    return TextureImage(rgba)


def textured_floor_quad(period=0.05, half=3.0):
    """A 6 m × 6 m quad (shape frame, z = 0) whose UVs repeat the texture every ``period`` metres."""
    v = np.array([[-half, -half, 0], [half, -half, 0], [half, half, 0], [-half, half, 0]], float)
    tris = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    uv = v[tris][..., :2] / period
    return SurfaceMesh(vertices=v, triangles=tris, corner_uv=uv)


def cube_on_textured_incline(theta, psi):
    """A cube on an incline tilted by θ; the texture's U axis is at ψ from downhill (about the plane normal)."""
    qz = np.array([math.cos(psi / 2), 0, 0, math.sin(psi / 2)])
    qy = np.array([math.cos(theta / 2), 0, math.sin(theta / 2), 0])
    w1, x1, y1, z1 = qy
    w2, x2, y2, z2 = qz
    q = np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )
    normal = np.array([math.sin(theta), 0.0, math.cos(theta)])
    b = ModelBuilder(gravity=(0, 0, -G))
    floor = b.add_body(kind=BodyKind.KINEMATIC, quat=q)
    plane = b.add_shape_plane(floor)
    b.set_shape_friction(
        plane,
        SurfaceFriction(model=SurfaceFrictionModel.TEXTURE, mu=BASE_MU, normal_map=sawtooth_map(),
                        mesh=textured_floor_quad(), patch_size=0.05, patch_resolution=16),
    )  # fmt: skip
    half = 0.2
    cube = b.add_body(pos=normal * half, quat=qy, mass=1.0)
    b.add_shape_box(cube, (half, half, half), mu=BASE_MU)
    return b.finalize()


def test_sawtooth_contacts_get_directional_coefficients():
    """Give box sets with μ_base + plowing against the ridges and μ_base along them (flat incline)."""
    model = cube_on_textured_incline(0.0, 0.0)
    contacts = model.contacts()
    CollisionPipeline(model).collide(model.state(), contacts)
    n = contacts.contact_count
    assert n == 4
    assert np.all(contacts.contact_friction_set[:n] == int(FrictionSet.BOX))
    # A = the floor (shape 0), B = the cube: mu4 = [A slides +t, +b, -t, -b] relative to B, t = U
    expected = np.array([BASE_MU + PLOW, BASE_MU, BASE_MU, BASE_MU])
    # 16 samples per 5 cm period and bilinear texel blending at the ridge edges: within 5e-3
    np.testing.assert_allclose(contacts.contact_mu4[:n], np.tile(expected, (n, 1)), atol=5e-3)
    np.testing.assert_allclose(np.abs(contacts.contact_tangent_hint[:n, 0]), 1.0, atol=1e-12)


@pytest.mark.parametrize("solver", ["PROX", "PGS"])
@pytest.mark.parametrize(
    ("psi_deg", "slides"),
    [(0.0, True), (180.0, False), (90.0, True)],
    ids=["down-U-slides", "against-ridges-sticks", "along-ridges-slides"],
)
def test_cube_on_sawtooth_incline(solver, psi_deg, slides):
    """Slide along the ridges and with the ratchet; stick against it (tan θ between μ and μ + plowing)."""
    theta = math.atan(BASE_MU + 0.5 * PLOW)  # 22.9°
    model = cube_on_textured_incline(theta, math.radians(psi_deg))
    traj = simulate(model, frame_count=61, fps=60, substeps=4, solver=solver, tolerance=1e-9, iterations=200)
    moved = np.linalg.norm(traj.body_pos[-1, 1] - traj.body_pos[0, 1])
    if slides:
        # a = g (sin θ − μ_base cos θ) over 1 s
        expected = 0.5 * G * (math.sin(theta) - BASE_MU * math.cos(theta))
        assert moved == pytest.approx(expected, rel=0.05)
    else:
        assert moved < 1e-3
