"""Bullet-style velocity damping (``v *= (1 - d) ** dt`` after gravity) and its bit-identical zero case."""

import sys
from pathlib import Path

import numpy as np
import pytest
from contact_lab.core import ModelBuilder, ModelError, simulate

DATA = Path(__file__).resolve().parents[2] / "data"
sys.path.insert(0, str(DATA))
import make_rigid_reference  # noqa: E402  (the recorder of the reference trajectories)

FPS, SUBSTEPS, FRAMES = 30, 4, 61


def free_ball(gravity=(0.0, 0.0, 0.0), linear=0.0, angular=0.0):
    """One dynamic sphere in empty space moving along x and spinning about z."""
    b = ModelBuilder(gravity=gravity)
    ball = b.add_body(vel=(2.0, 0.0, 0.0), omega=(0.0, 0.0, 5.0), linear_damping=linear, angular_damping=angular)
    b.add_shape_sphere(ball, 0.2)
    return b.finalize()


@pytest.mark.parametrize("damping", [0.1, 0.5, 0.9])
def test_free_body_decays_as_one_minus_d_to_the_time(damping):
    """Scale v and w by (1 - d)^t after t seconds (1e-12), and move x by the geometric sum of the steps."""
    traj = simulate(free_ball(linear=damping, angular=damping), frame_count=FRAMES, fps=FPS, substeps=SUBSTEPS)
    t = np.arange(FRAMES) / FPS
    decay = (1.0 - damping) ** t
    assert np.allclose(traj.body_vel[:, 0, 0], 2.0 * decay, rtol=1e-12, atol=0.0)
    assert np.allclose(traj.body_omega[:, 0, 2], 5.0 * decay, rtol=1e-12, atol=0.0)
    assert np.all(traj.body_vel[:, 0, 1:] == 0.0) and np.all(traj.body_omega[:, 0, :2] == 0.0)
    h = 1.0 / (FPS * SUBSTEPS)
    f = (1.0 - damping) ** h
    n = np.arange(FRAMES) * SUBSTEPS
    assert np.allclose(traj.body_pos[:, 0, 0], 2.0 * h * f * (1.0 - f**n) / (1.0 - f), rtol=1e-10, atol=1e-15)


def test_damping_applies_after_gravity():
    """Follow v_n = f (v_(n-1) + g h) under gravity: v_N = f^N v0 + g h f (1 - f^N) / (1 - f) (1e-12)."""
    g, damping = -9.81, 0.3
    traj = simulate(free_ball(gravity=(0.0, 0.0, g), linear=damping), frame_count=FRAMES, fps=FPS, substeps=SUBSTEPS)
    h = 1.0 / (FPS * SUBSTEPS)
    f = (1.0 - damping) ** h
    n = np.arange(FRAMES) * SUBSTEPS
    assert np.allclose(traj.body_vel[:, 0, 2], g * h * f * (1.0 - f**n) / (1.0 - f), rtol=1e-12, atol=1e-15)
    assert np.allclose(traj.body_omega[:, 0, 2], 5.0)  # angular damping 0: spin untouched


def test_full_damping_stops_a_body_in_one_step():
    """Stop a body with damping 1 after its first step (0 ** dt = 0)."""
    traj = simulate(free_ball(linear=1.0, angular=1.0), frame_count=3, fps=FPS, substeps=SUBSTEPS)
    assert np.all(traj.body_vel[1:] == 0.0) and np.all(traj.body_omega[1:] == 0.0)


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan")])
@pytest.mark.parametrize("key", ["linear_damping", "angular_damping"])
def test_damping_outside_zero_one_names_the_body(key, value):
    """Reject damping outside [0, 1] (or NaN) with a ModelError naming the body."""
    b = ModelBuilder()
    body = b.add_body(label="Anvil", **{key: value})
    b.add_shape_sphere(body, 0.1)
    with pytest.raises(ModelError, match=f"Anvil.*{key.replace('_', ' ')}.*\\[0, 1\\]"):
        b.finalize()


def test_model_carries_damping_per_body():
    """Store each body's damping in Model.body_linear_damping / body_angular_damping, shape (body_count,)."""
    b = ModelBuilder()
    for i in range(3):
        body = b.add_body(linear_damping=0.1 * i, angular_damping=0.2 * i)
        b.add_shape_sphere(body, 0.1)
    model = b.finalize()
    assert model.body_linear_damping.dtype == np.float64 and model.body_linear_damping.tolist() == [0.0, 0.1, 0.2]
    assert model.body_angular_damping.tolist() == [0.0, 0.2, 0.4]


def test_zero_damping_is_bit_identical_to_the_recorded_reference():
    """Reproduce, bit for bit, the inertia and trajectories recorded before damping and new shapes existed.

    Like the demo hashes, a same-machine check: re-record with tests/data/make_rigid_reference.py only on purpose.
    """
    reference = np.load(DATA / "rigid_reference.npz")
    now = make_rigid_reference.scenes()
    assert sorted(now) == sorted(reference.files)
    for key in reference.files:
        assert now[key].tobytes() == reference[key].tobytes(), key
