"""Direction-dependent friction: ellipse projection, Matchstick, friction tensors, anisotropic physics."""

import math

import numpy as np
import pytest
from contact_lab.core import BodyKind, CollisionPipeline, FrictionSet, ModelBuilder, RFactorStrategy, simulate
from contact_lab.core.friction.models import (
    ellipse_coefficient,
    matchstick_coefficients,
    project_ellipse,
    project_ellipsoid,
    tensor_ellipse,
    tensor_force,
)
from contact_lab.core.friction.surface import StructureSource, SurfaceFriction, SurfaceFrictionModel
from scenes import G, quat_about_y

MU_S, MU_T = 0.3, 0.6


def critical_angle(phi):
    """tan θ_c = 1 / sqrt(cos²φ / μ_S² + sin²φ / μ_T²) (seed 001 §1.10 test 7)."""
    return math.atan(1.0 / math.sqrt(math.cos(phi) ** 2 / MU_S**2 + math.sin(phi) ** 2 / MU_T**2))


@pytest.mark.parametrize(
    ("z", "expected"),
    [
        ((3, 0), (2, 0)),
        ((0, 3), (0, 1)),
        ((2, 2), (1.38564, 0.72111)),
        ((0.5, 0.2), (0.5, 0.2)),
        ((-3, 1), (-1.90577, 0.30334)),
    ],
)
def test_ellipse_projection_matches_course_values(z, expected):
    """Project onto the ellipse a = 2, b = 1 as in course §6.1.3 (values to 1e-5)."""
    # floats, as the engine passes: integer arguments would compile the kernel again for int64
    np.testing.assert_allclose(project_ellipse(float(z[0]), float(z[1]), 2.0, 1.0), expected, atol=1e-5)


def test_ellipse_projection_is_the_closest_point():
    """Beat every sampled boundary point and satisfy the projection inequality (brute force)."""
    rng = np.random.default_rng(0)
    angles = np.linspace(0, 2 * np.pi, 20001)
    for _ in range(50):
        a, b = rng.uniform(0.05, 3.0, 2)
        z = rng.normal(0, 3, 2)
        x = np.array(project_ellipse(z[0], z[1], a, b))
        boundary = np.stack([a * np.cos(angles), b * np.sin(angles)], axis=1)
        best = np.linalg.norm(boundary - z, axis=1).min()
        if (z[0] / a) ** 2 + (z[1] / b) ** 2 <= 1:
            np.testing.assert_allclose(x, z)
            continue
        assert (x[0] / a) ** 2 + (x[1] / b) ** 2 == pytest.approx(1.0, abs=1e-9)
        assert np.linalg.norm(x - z) <= best + 1e-9
        inside = rng.uniform(-1, 1, (200, 2)) * (a, b)
        inside = inside[(inside[:, 0] / a) ** 2 + (inside[:, 1] / b) ** 2 <= 1]
        assert np.all((z - x) @ (inside - x).T <= 1e-9)


@pytest.mark.parametrize(
    ("angle_deg", "expected"),
    [(0, (0.2, 0.8)), (30, (0.3, 0.7)), (45, (0.35, 0.65)), (60, (0.4, 0.6)), (90, (0.5, 0.5))],
)
def test_matchstick_generator_table(angle_deg, expected):
    """Reproduce the Matchstick table (μ = 0.5, μ_t^A = 0.2, μ_b^A = 0.8); flipping s changes nothing."""
    a = math.radians(angle_deg)
    sa = (1.0, 0.0, 0.0)
    sb = (math.cos(a), math.sin(a), 0.0)
    mu_t, mu_b, *t = matchstick_coefficients(*sa, *sb, 0.5, 0.2, 0.8)
    np.testing.assert_allclose((mu_t, mu_b), expected, atol=1e-12)
    flipped = matchstick_coefficients(*sa, *(-np.array(sb)), 0.5, 0.2, 0.8)
    np.testing.assert_allclose(flipped[:2], expected, atol=1e-12)
    np.testing.assert_allclose(np.abs(flipped[2:]), np.abs(t), atol=1e-12)  # same axis up to sign
    bisector = np.array([1 + math.cos(a), math.sin(a), 0.0])
    np.testing.assert_allclose(np.abs(t), np.abs(bisector / np.linalg.norm(bisector)), atol=1e-12)


def _two_boxes(model0, model1, angle0, angle1, **kw):
    """A box resting on a kinematic box; both with a structure axis at the given angles about z."""
    b = ModelBuilder()
    lower = b.add_body(kind=BodyKind.KINEMATIC)
    s0 = b.add_shape_box(lower, (1, 1, 0.5))
    upper = b.add_body(pos=(0, 0, 0.75), mass=1.0)
    s1 = b.add_shape_box(upper, (0.25, 0.25, 0.25))
    for shape, model, angle in ((s0, model0, angle0), (s1, model1, angle1)):
        if model is None:
            continue
        axis = (math.cos(angle), math.sin(angle), 0.0)
        b.set_shape_friction(
            shape, SurfaceFriction(model=model, structure_source=StructureSource.AXIS, structure_axis=axis, **kw)
        )
    model = b.finalize()
    contacts = model.contacts()
    CollisionPipeline(model).collide(model.state(), contacts)
    assert contacts.contact_count == 4
    return contacts


@pytest.mark.parametrize(("angle_deg", "expected"), [(0, (0.2, 0.8)), (60, (0.4, 0.6)), (90, (0.5, 0.5))])
def test_matchstick_pair_through_the_pipeline(angle_deg, expected):
    """Generate the Matchstick ellipse for two boxes whose structure axes differ by the angle."""
    MATCH = SurfaceFrictionModel.MATCHSTICK
    contacts = _two_boxes(MATCH, MATCH, 0.0, math.radians(angle_deg), mu=0.5, mu_t=0.2, mu_b=0.8)
    n = contacts.contact_count
    assert np.all(contacts.contact_friction_set[:n] == int(FrictionSet.ELLIPSE))
    np.testing.assert_allclose(contacts.contact_mu4[:n, :2], np.tile(expected, (n, 1)), atol=1e-12)
    assert np.all(contacts.contact_tangent_fixed[:n])


def test_one_sided_anisotropy_uses_the_structured_surface():
    """Use the anisotropic surface's ellipse and direction when the other surface is plain Coulomb."""
    contacts = _two_boxes(None, SurfaceFrictionModel.ANISOTROPIC, 0.0, math.radians(30), mu_t=MU_S, mu_b=MU_T)
    n = contacts.contact_count
    np.testing.assert_allclose(contacts.contact_mu4[:n], np.tile([MU_S, MU_T, MU_S, MU_T], (n, 1)))
    hint = contacts.contact_tangent_hint[:n]
    np.testing.assert_allclose(np.abs(hint @ [math.cos(math.radians(30)), math.sin(math.radians(30)), 0]), 1.0)


def _random_spd(rng):
    A = rng.normal(size=(2, 2))
    return A @ A.T + 0.2 * np.eye(2)


def _rot2(angle):
    return np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])


def test_friction_tensor_force_matches_formula_and_dissipates():
    """Give f = −λ_n κ (Q_A + R Q_B Rᵀ) v̂ (course eq. 320) for random SPD tensors; v·f < 0."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        qa, qb = _random_spd(rng), _random_spd(rng)
        kappa, lam, angle = rng.uniform(0.1, 1.0), rng.uniform(0.1, 5.0), rng.uniform(-np.pi, np.pi)
        v = rng.normal(size=2)
        R = _rot2(angle)
        expected = -lam * kappa * (qa + R @ qb @ R.T) @ (v / np.linalg.norm(v))
        f = np.array(tensor_force(lam, kappa, qa, qb, math.cos(angle), math.sin(angle), v[0], v[1]))
        np.testing.assert_allclose(f, expected, rtol=1e-12, atol=1e-12)
        assert v @ f < 0.0
        # the force lies on the tensor's elliptic cone f^T (L^-T L^-1) f = λ_n² (eq. 321–325)
        L = kappa * (qa + R @ qb @ R.T)
        mu_t, mu_b, c, s = tensor_ellipse(L[0, 0], L[0, 1], L[1, 0], L[1, 1])
        ft = c * f[0] + s * f[1]
        fb = -s * f[0] + c * f[1]
        assert (ft / mu_t) ** 2 + (fb / mu_b) ** 2 == pytest.approx(lam**2, rel=1e-9)


def test_identity_tensors_give_isotropic_coulomb():
    """Reduce to isotropic Coulomb μ for Q_A = Q_B = I and κ = μ / 2 (course G.6)."""
    mu = 0.7
    mu_t, mu_b, _, _ = tensor_ellipse(mu, 0.0, 0.0, mu)
    assert (mu_t, mu_b) == pytest.approx((mu, mu))
    contacts = _two_boxes(SurfaceFrictionModel.TENSOR, SurfaceFrictionModel.TENSOR, 0.3, 1.1, kappa=mu / 2)
    np.testing.assert_allclose(contacts.contact_mu4[: contacts.contact_count], mu, rtol=1e-12)


def _anisotropic_incline(theta, phi):
    """A box with elliptic friction (μ_S along s at angle φ from downhill, μ_T across) on an incline θ."""
    q = quat_about_y(theta)
    normal = np.array([math.sin(theta), 0.0, math.cos(theta)])
    downhill = np.array([math.cos(theta), 0.0, -math.sin(theta)])
    half = 0.25
    b = ModelBuilder(gravity=(0, 0, -G))
    ground = b.add_body(kind=BodyKind.KINEMATIC, quat=q)
    b.add_shape_plane(ground, mu=0.9)
    box = b.add_body(pos=normal * half, quat=q, mass=2.0)
    shape = b.add_shape_box(box, (half, half, half))
    b.set_shape_friction(
        shape,
        SurfaceFriction(
            model=SurfaceFrictionModel.ANISOTROPIC,
            mu_t=MU_S,
            mu_b=MU_T,
            structure_source=StructureSource.AXIS,
            structure_axis=(math.cos(phi), math.sin(phi), 0.0),
        ),
    )
    return b.finalize(), downhill


def sticks_below_and_slides_above(theta_c, phi, solver):
    """On the incline 0.3° below ``theta_c`` the box moves under 0.1 mm in one second, 0.3° above over 5 mm."""
    for offset, slides in ((-0.3, False), (0.3, True)):
        model, _ = _anisotropic_incline(theta_c + math.radians(offset), phi)
        traj = simulate(model, frame_count=61, fps=60, substeps=4, solver=solver, tolerance=1e-9, iterations=300)
        moved = np.linalg.norm(traj.body_pos[-1, 1] - traj.body_pos[0, 1])
        if slides:
            assert moved > 5e-3, moved
        else:
            assert moved < 1e-4, moved


@pytest.mark.parametrize("phi_deg", [0.0, 45.0, 90.0])
def test_anisotropic_incline_threshold(phi_deg):
    """Stick 0.3° below and slide 0.3° above tan θ_c = 1/sqrt(cos²φ/μ_S² + sin²φ/μ_T²) (PROX)."""
    phi = math.radians(phi_deg)
    theta_c = critical_angle(phi)
    assert math.degrees(theta_c) == pytest.approx({0.0: 16.70, 45.0: 20.78, 90.0: 30.96}[phi_deg], abs=0.005)
    sticks_below_and_slides_above(theta_c, phi, "PROX")


def _anisotropic_slide_velocity_change(psi, half_extents, strategy):
    """Velocity change (2,) over one 1/480 s step of a box sliding at 2 m/s at ψ from its structure axis."""
    b = ModelBuilder(gravity=(0, 0, -G))
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(floor)
    v0 = 2.0 * np.array([math.cos(psi), math.sin(psi), 0.0])
    box = b.add_body(pos=(0, 0, half_extents[2]), vel=v0, mass=1.0)
    shape = b.add_shape_box(box, half_extents)
    friction = SurfaceFriction(model=SurfaceFrictionModel.ANISOTROPIC, mu_t=MU_S, mu_b=MU_T,
                               structure_source=StructureSource.AXIS, structure_axis=(1, 0, 0))  # fmt: skip
    b.set_shape_friction(shape, friction)
    traj = simulate(
        b.finalize(), frame_count=2, fps=480, substeps=1, solver="PROX", tolerance=1e-13, iterations=5000,
        r_strategy=strategy,
    )  # fmt: skip
    return traj.body_vel[1, 1, :2] - v0[:2]


@pytest.mark.parametrize("psi_deg", [20.0, 45.0, 70.0])
def test_r_factor_strategy_does_not_change_anisotropic_friction(psi_deg):
    """Give the same step for GLOBAL and LOCAL r-factors (the fixed point is r-independent, seed 001 §1.4).

    Regression: LOCAL once used r_t = 1/A_tt ≠ r_b = 1/A_bb, which tilts the converged friction of a long box
    by up to 37° (its corners have different effective masses along t and b).
    """
    half_extents = (0.75, 0.125, 0.25)
    dv_global = _anisotropic_slide_velocity_change(math.radians(psi_deg), half_extents, RFactorStrategy.GLOBAL)
    dv_local = _anisotropic_slide_velocity_change(math.radians(psi_deg), half_extents, RFactorStrategy.LOCAL)
    np.testing.assert_allclose(dv_local, dv_global, atol=1e-6 * np.linalg.norm(dv_global))


@pytest.mark.parametrize("strategy", [RFactorStrategy.GLOBAL, RFactorStrategy.LOCAL])
@pytest.mark.parametrize("psi_deg", [20.0, 45.0, 70.0])
def test_anisotropic_sliding_follows_maximal_dissipation(psi_deg, strategy):
    """Decelerate along the max-dissipation direction −(a² cos ψ, b² sin ψ), not −v (within 1°)."""
    psi = math.radians(psi_deg)
    v0 = 2.0 * np.array([math.cos(psi), math.sin(psi)])
    dv = _anisotropic_slide_velocity_change(psi, (0.25, 0.25, 0.25), strategy)
    expected = -np.array([MU_S**2 * math.cos(psi), MU_T**2 * math.sin(psi)])
    angle = math.degrees(math.acos(dv @ expected / np.linalg.norm(dv) / np.linalg.norm(expected)))
    assert angle < 1.0
    anti_velocity = math.degrees(math.acos(-dv @ v0 / np.linalg.norm(dv) / np.linalg.norm(v0)))
    assert anti_velocity > 5.0  # the deceleration is really not opposite to the velocity
    # magnitude: |f| = λ_n sqrt(a⁴c² + b⁴s²) / sqrt(a²c² + b²s²) with λ_n / m = g h
    magnitude = np.linalg.norm(expected) / math.hypot(MU_S * math.cos(psi), MU_T * math.sin(psi))
    assert np.linalg.norm(dv) == pytest.approx(G / 480 * magnitude, rel=0.02)


def test_ellipse_coefficient_is_where_the_ray_meets_the_ellipse():
    """Give μ(φ) with (μ cos φ / μ_t)² + (μ sin φ / μ_b)² = 1 (course Fig. 27)."""
    for phi in np.linspace(0, 2 * np.pi, 37):
        mu = ellipse_coefficient(math.cos(phi), math.sin(phi), MU_S, MU_T)
        assert (mu * math.cos(phi) / MU_S) ** 2 + (mu * math.sin(phi) / MU_T) ** 2 == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("axes", "z", "expected"),
    [
        ((1, 1, 1), (2, 0, 0), (1, 0, 0)),
        ((2, 1, 0.5), (3, 1, 1), (1.87415896, 0.29386941, 0.09423749)),
        ((1, 2, 3), (0.1, 0.1, 0.1), (0.1, 0.1, 0.1)),
        ((1, 1, 1e-3), (1, 1, 1), (0.70710472, 0.70710472, 2.41e-6)),
    ],
)
def test_ellipsoid_projection_matches_course_values(axes, z, expected):
    """Reproduce the closest points of course worked example D4 (Alg. 13)."""
    x = project_ellipsoid(*map(float, z), *map(float, axes))  # floats, as the engine passes (one compile)
    np.testing.assert_allclose(x, expected, rtol=1e-6, atol=1e-8)
    if np.linalg.norm(np.array(z) - expected) > 0:
        assert sum((xi / ai) ** 2 for xi, ai in zip(x, axes, strict=True)) == pytest.approx(1.0, abs=1e-9)
