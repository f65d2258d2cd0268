"""Analytic rigid-body physics: incline stick/slip, sliding to rest, rolling, stacking, impacts."""

import math

import numpy as np
import pytest
from contact_lab.core import simulate
from scenes import G, box_stack, floor_box, floor_sphere, head_on_spheres, incline_box

SOLVERS = ["PGS", "PROX"]


def _fit_acceleration(t, x):
    """Least-squares ``x = x0 + v0 t + a t^2 / 2``; returns a."""
    A = np.stack([np.ones_like(t), t, 0.5 * t * t], axis=1)
    return np.linalg.lstsq(A, x, rcond=None)[0][2]


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("theta_deg", [15.0, 30.0])
def test_incline_sticks_above_threshold(solver, theta_deg):
    """Keep a box at rest (drift < 1 mm over 2 s) when mu = tan(theta) + 0.05."""
    theta = math.radians(theta_deg)
    model, downhill = incline_box(theta, math.tan(theta) + 0.05)
    traj = simulate(model, frame_count=121, fps=60, substeps=4, solver=solver, tolerance=1e-8, iterations=200)
    drift = np.linalg.norm(traj.body_pos[-1, 1] - traj.body_pos[0, 1])
    assert drift < 1e-3


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("theta_deg", [15.0, 30.0])
def test_incline_slides_with_analytic_acceleration(solver, theta_deg):
    """Slide down at g (sin θ − μ cos θ) within 2 % when mu = tan(theta) − 0.1."""
    theta = math.radians(theta_deg)
    mu = math.tan(theta) - 0.1
    model, downhill = incline_box(theta, mu)
    fps = 60
    traj = simulate(model, frame_count=91, fps=fps, substeps=4, solver=solver, tolerance=1e-8, iterations=200)
    t = np.arange(traj.frame_count) / fps
    s = (traj.body_pos[:, 1] - traj.body_pos[0, 1]) @ downhill
    a = _fit_acceleration(t[10:], s[10:])
    expected = G * (math.sin(theta) - mu * math.cos(theta))
    assert a == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("solver", SOLVERS)
def test_box_slides_to_rest_after_analytic_distance(solver):
    """Stop a box sliding at v0 on the floor after v0² / (2 μ g) within 2 %."""
    v0, mu = 3.0, 0.4
    model = floor_box(v0, mu)
    traj = simulate(model, frame_count=121, fps=60, substeps=4, solver=solver, tolerance=1e-8, iterations=200)
    distance = traj.body_pos[-1, 1, 0] - traj.body_pos[0, 1, 0]
    assert np.linalg.norm(traj.body_vel[-1, 1]) < 1e-3
    assert distance == pytest.approx(v0 * v0 / (2 * mu * G), rel=0.02)


@pytest.mark.parametrize("solver", SOLVERS)
def test_sliding_sphere_ends_rolling_at_five_sevenths(solver):
    """Leave a sphere sliding without spin rolling at 5/7 v0 (within 2 %), with ω r = v."""
    v0, mu, radius = 4.0, 0.3, 0.3
    model = floor_sphere(v0, mu, radius=radius)
    traj = simulate(model, frame_count=121, fps=60, substeps=4, solver=solver, tolerance=1e-8, iterations=200)
    v_end = traj.body_vel[-1, 1, 0]
    assert v_end == pytest.approx(5.0 / 7.0 * v0, rel=0.02)
    assert traj.body_omega[-1, 1, 1] * radius == pytest.approx(v_end, rel=0.01)


@pytest.mark.parametrize("solver", SOLVERS)
def test_stack_of_ten_boxes_rests(solver):
    """Keep the top of a 10-box stack within 1 mm over 5 s at 60 Hz with 4 substeps."""
    model = box_stack(10)
    traj = simulate(model, frame_count=301, fps=60, substeps=4, solver=solver)
    top = model.body_count - 1
    drift = np.linalg.norm(traj.body_pos[:, top] - traj.body_pos[0, top], axis=1).max()
    assert drift < 1e-3
    assert traj.contact_count.max() >= 40


@pytest.mark.parametrize("solver", SOLVERS)
def test_elastic_head_on_spheres_exchange_velocities(solver):
    """Exchange velocities of equal spheres with restitution 1; conserve momentum to 1e-9."""
    model = head_on_spheres(2.0, 1.0)
    traj = simulate(model, frame_count=31, fps=60, substeps=4, solver=solver, tolerance=1e-12, iterations=200)
    momentum = traj.body_vel[:, 0] * 1.0 + traj.body_vel[:, 1] * 1.0
    assert np.abs(momentum - momentum[0]).max() < 1e-9
    np.testing.assert_allclose(traj.body_vel[-1, 0], [-2.0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(traj.body_vel[-1, 1], [2.0, 0, 0], atol=1e-6)


@pytest.mark.parametrize("solver", SOLVERS)
def test_inelastic_head_on_spheres_move_together(solver):
    """Give both spheres the common velocity m1 v1 / (m1 + m2) with restitution 0 (course D7)."""
    model = head_on_spheres(1.0, 0.0, masses=(1.0, 3.0))
    traj = simulate(model, frame_count=31, fps=60, substeps=4, solver=solver, tolerance=1e-12, iterations=200)
    # momentum 1*1 + 3*(-1) = -2 shared by total mass 4
    np.testing.assert_allclose(traj.body_vel[-1, 0], [-0.5, 0, 0], atol=1e-6)
    np.testing.assert_allclose(traj.body_vel[-1, 1], [-0.5, 0, 0], atol=1e-6)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("restitution", [0.3, 0.8])
def test_dropped_ball_bounces_with_restitution(solver, restitution):
    """Leave the floor at e times the impact speed (Newton impact law, seed 001 eq. 14)."""
    from contact_lab.core import BodyKind, ModelBuilder

    height, radius = 1.0, 0.2
    b = ModelBuilder(gravity=(0, 0, -G))
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(floor, mu=0.5, restitution=restitution)
    ball = b.add_body(pos=(0, 0, radius + height), mass=0.5)
    b.add_shape_sphere(ball, radius, mu=0.5, restitution=0.0)  # pair restitution = max(e, 0)
    model = b.finalize()
    fps, substeps = 120, 4
    traj = simulate(model, frame_count=fps + 1, fps=fps, substeps=substeps, solver=solver, tolerance=1e-10)
    vz = traj.body_vel[:, 1, 2]
    impact = np.argmax(vz > 0)  # first frame moving up
    assert impact > 0
    v_impact = math.sqrt(2 * G * height)
    # velocity one frame after the bounce, corrected for gravity over that part of the frame
    v_up = vz[impact] + G * (1.0 / fps)
    assert v_up == pytest.approx(restitution * v_impact, rel=0.03)
    assert np.abs(traj.body_vel[:, 1, :2]).max() < 1e-9  # no spurious sideways motion


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("with_sliding", [False, True])
def test_spin_friction_stops_a_spinning_sphere(solver, with_sliding):
    """Brake a sphere spinning about the normal at μ_τ m g / I: it stops at t = ω0 I / (μ_τ m g) (seed 001 §1.10.8)."""
    from contact_lab.core import BodyKind, ModelBuilder
    from contact_lab.core.friction.surface import SurfaceFriction

    radius, mass, omega0, mu_spin = 0.3, 2.0, 6.0, 0.02
    inertia = 0.4 * mass * radius**2
    b = ModelBuilder(gravity=(0, 0, -G))
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(floor, mu=0.5)
    vel = (1.0, 0.0, 0.0) if with_sliding else (0.0, 0.0, 0.0)
    ball = b.add_body(pos=(0, 0, radius), vel=vel, omega=(0, 0, omega0), mass=mass)
    shape = b.add_shape_sphere(ball, radius, mu=0.5)
    b.set_shape_friction(shape, SurfaceFriction(mu=0.5, contensou=mu_spin))
    model = b.finalize()
    fps = 60
    traj = simulate(model, frame_count=fps * 3 + 1, fps=fps, substeps=4, solver=solver, tolerance=1e-10)
    t = np.arange(traj.frame_count) / fps
    spin = traj.body_omega[:, 1, 2]
    rate = mu_spin * mass * G / inertia
    t_stop = omega0 / rate
    assert 0.5 < t_stop < 2.5
    if not with_sliding:
        # pure spin: the torsion limit alone decides the deceleration
        early = t < 0.8 * t_stop
        np.testing.assert_allclose(spin[early], omega0 - rate * t[early], atol=0.02 * omega0)
    assert np.abs(spin[t > 1.1 * t_stop]).max() < 1e-3
    assert spin[t < 0.5 * t_stop].min() > 0.2 * omega0  # it really spins for a while


def test_sphere_keeps_spinning_without_spin_friction():
    """Keep spinning about the normal forever with point Coulomb friction only (no torque about n)."""
    from contact_lab.core import BodyKind, ModelBuilder

    b = ModelBuilder(gravity=(0, 0, -G))
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(floor, mu=0.5)
    ball = b.add_body(pos=(0, 0, 0.3), omega=(0, 0, 6.0), mass=2.0)
    b.add_shape_sphere(ball, 0.3, mu=0.5)
    traj = simulate(b.finalize(), frame_count=61, fps=60, substeps=4, solver="PROX")
    np.testing.assert_allclose(traj.body_omega[:, 1, 2], 6.0, rtol=1e-9)
