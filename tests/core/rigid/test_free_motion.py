"""Free motion: semi-implicit Euler positions, quaternion kinematics, gyroscopic term, quaternion helpers."""

import math

import numpy as np
import pytest
from contact_lab.core import BodyKind, KinematicTrack, ModelBuilder, simulate
from contact_lab.core.math.quat import quat_angular_velocity, quat_integrate, quat_mul, quat_rotate, quat_slerp
from reference_geometry import quat_matrix


def _axis_angle(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


def test_projectile_follows_discrete_semi_implicit_euler():
    """Match x_N = x0 + N h v0 + h² g N (N+1) / 2 exactly (semi-implicit Euler, course §1.2)."""
    b = ModelBuilder(gravity=(0, 0, -9.81))
    body = b.add_body(pos=(1, 2, 3), vel=(2, -1, 5), mass=1.0)
    b.add_shape_sphere(body, 0.1)
    model = b.finalize()
    fps, substeps, frames = 30, 3, 31
    traj = simulate(model, frame_count=frames, fps=fps, substeps=substeps)
    h = 1.0 / (fps * substeps)
    n = np.arange(frames) * substeps
    expected = (
        np.array([1, 2, 3.0])[None]
        + (n * h)[:, None] * np.array([2, -1, 5.0])[None]
        + (h * h * n * (n + 1) / 2)[:, None] * np.array([0, 0, -9.81])[None]
    )
    np.testing.assert_allclose(traj.body_pos[:, 0], expected, rtol=0, atol=1e-12)


def test_spin_about_principal_axis_rotates_at_constant_rate():
    """Rotate a torque-free body spinning about a principal axis by |ω| t (error < 1e-4 rad)."""
    b = ModelBuilder(gravity=(0, 0, 0))
    omega = np.array([0.0, 0.0, 3.0])
    body = b.add_body(omega=omega, mass=2.0)
    b.add_shape_box(body, (0.3, 0.2, 0.1))
    model = b.finalize()
    traj = simulate(model, frame_count=25, fps=24, substeps=10)
    q_end = traj.body_quat[-1, 0]
    expected = _axis_angle((0, 0, 1), 3.0)
    assert min(np.linalg.norm(q_end - expected), np.linalg.norm(q_end + expected)) < 1e-4
    np.testing.assert_allclose(traj.body_omega[-1, 0], omega, atol=1e-12)


def test_gyroscopic_term_conserves_angular_momentum():
    """Keep the world angular momentum of a free asymmetric body within 1 % over 2 s."""
    b = ModelBuilder(gravity=(0, 0, 0))
    body = b.add_body(omega=(2.0, 0.2, 0.5), mass=1.0)
    b.add_shape_box(body, (0.5, 0.2, 0.1))
    model = b.finalize()
    traj = simulate(model, frame_count=49, fps=24, substeps=20)

    def momentum(f):
        R = quat_matrix(traj.body_quat[f, 0])
        return R @ model.body_inertia_local[0] @ R.T @ traj.body_omega[f, 0]

    L0 = momentum(0)
    for f in range(traj.frame_count):
        assert np.linalg.norm(momentum(f) - L0) < 0.01 * np.linalg.norm(L0)
    # the body really tumbles: the spin axis moves in the body frame
    assert np.linalg.norm(traj.body_omega[-1, 0] - traj.body_omega[0, 0]) > 0.05


def test_kinematic_body_follows_its_track():
    """Move a kinematic body exactly along its per-frame track."""
    b = ModelBuilder()
    body = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_box(body, (1, 1, 0.1))
    model = b.finalize()
    frames = 5
    pos = np.zeros((frames, 1, 3))
    pos[:, 0, 0] = np.linspace(0, 2, frames)
    quat = np.array([_axis_angle((0, 0, 1), a) for a in np.linspace(0, 1.0, frames)])[:, None, :]
    traj = simulate(
        model, frame_count=frames, fps=10, substeps=3, kinematic_track=KinematicTrack(np.array([0]), pos, quat)
    )
    np.testing.assert_allclose(traj.body_pos[:, 0], pos[:, 0], atol=1e-12)
    np.testing.assert_allclose(np.abs(np.einsum("fi,fi->f", traj.body_quat[:, 0], quat[:, 0])), 1.0, atol=1e-12)
    np.testing.assert_allclose(traj.body_vel[-1, 0], [0.5 / 0.1, 0, 0], atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_quaternion_helpers_match_rotation_matrices(seed):
    """Match quat_mul / quat_rotate / quat_slerp / quat_angular_velocity with matrix algebra."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=4)
    a /= np.linalg.norm(a)
    bq = rng.normal(size=4)
    bq /= np.linalg.norm(bq)
    v = rng.normal(size=3)
    np.testing.assert_allclose(quat_matrix(quat_mul(a, bq)), quat_matrix(a) @ quat_matrix(bq), atol=1e-12)
    np.testing.assert_allclose(quat_rotate(a, v), quat_matrix(a) @ v, atol=1e-12)
    omega = rng.normal(size=3)
    h = 1e-3
    q1 = quat_integrate(a, omega, h)
    np.testing.assert_allclose(quat_angular_velocity(a, q1, h), omega, rtol=1e-5, atol=1e-6)
    mid = quat_slerp(a, bq, 0.5)
    d = np.abs(a @ bq)
    angle = 2 * math.acos(min(d, 1.0))
    assert abs(2 * math.acos(min(abs(mid @ a), 1.0)) - angle / 2) < 1e-9


def test_divergence_names_frame_and_body():
    """Raise DivergenceError with the frame and body when a state becomes non-finite."""
    from contact_lab.core import DivergenceError

    b = ModelBuilder(gravity=(0, 0, 0))
    body = b.add_body(pos=(0, 0, 0), vel=(1e308, 0, 0), mass=1.0, label="runaway")
    b.add_shape_sphere(body, 0.1)
    model = b.finalize()
    with pytest.raises(DivergenceError) as info:
        simulate(model, frame_count=5, fps=1.0, substeps=2)
    # x = 0.5e308 k after substep k (dt = 0.5 s): the 4th substep overflows, i.e. output frame 2
    assert info.value.frame == 2 and info.value.body_label == ["runaway"] and info.value.body_index == [0]
