"""The Moreau mid-point time stepping (course §3.4.5, eq. 246–247) against analytic motion."""

import math

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, simulate
from contact_lab.core.rigid.frame_loop import KinematicTrack
from contact_lab.core.rigid.settings import RigidSettings

G = 9.81


def _thrown_ball():
    b = ModelBuilder(gravity=(0.0, 0.0, -G))
    ball = b.add_body(pos=(0.0, 0.0, 10.0), vel=(3.0, 0.0, 4.0), omega=(0.0, 2.0, 0.0), mass=1.0)
    b.add_shape_sphere(ball, 0.1)
    return b.finalize()


def test_a_thrown_ball_follows_its_parabola_exactly_where_semi_implicit_euler_lags():
    """In free flight the mid-point scheme is the trapezoidal rule on ``q``: exact for constant gravity (1e-12 m at
    every frame). Semi-implicit Euler's ``q + h u+`` falls below the parabola by exactly ``g h t / 2``."""
    fps, substeps = 24, 4
    h = 1.0 / (fps * substeps)
    t = np.arange(25) / fps
    exact = np.stack([3.0 * t, 0.0 * t, 10.0 + 4.0 * t - 0.5 * G * t**2], axis=1)
    for scheme, offset in (("MOREAU", 0.0), ("SEMI_IMPLICIT", -0.5 * G * h)):
        settings = RigidSettings(substeps=substeps, time_stepping=scheme)
        traj = simulate(_thrown_ball(), frame_count=25, fps=fps, settings=settings)
        expected = exact + np.outer(t, [0.0, 0.0, offset])
        np.testing.assert_allclose(traj.body_pos[:, 0], expected, atol=1e-12, err_msg=scheme)


def test_a_ball_rolls_down_a_slope_at_five_sevenths_of_g_sin_theta():
    """A sphere on a 20° slope (mu 0.8) with contacts found at the mid-point of each step accelerates at
    ``5/7 g sin theta`` within 1 % (rolling, the contact's friction holding it)."""
    theta = math.radians(20.0)
    b = ModelBuilder(gravity=(0.0, 0.0, -G))
    q = (math.cos(-theta / 2), 0.0, math.sin(-theta / 2), 0.0)
    slope = b.add_body(kind=BodyKind.KINEMATIC, quat=q)
    b.add_shape_plane(slope, mu=0.8)
    normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    ball = b.add_body(pos=tuple(0.1 * normal), mass=1.0)
    b.add_shape_sphere(ball, 0.1, mu=0.8)
    fps = 24
    traj = simulate(b.finalize(), frame_count=49, fps=fps, settings=RigidSettings(time_stepping="MOREAU"))
    downhill = np.array([-math.cos(theta), 0.0, -math.sin(theta)])
    s = (traj.body_pos[:, 1] - traj.body_pos[0, 1]) @ downhill
    t = np.arange(s.size) / fps
    a = 2.0 * np.polyfit(t[6:], s[6:], 2)[0]
    print(f"a {a:.4f} m/s^2, 5/7 g sin theta {5 / 7 * G * math.sin(theta):.4f}")
    assert a == pytest.approx(5.0 / 7.0 * G * math.sin(theta), rel=0.01)
    assert np.abs(traj.body_pos[:, 1] @ normal - 0.1).max() < 1e-3  # on the slope, not in it


def test_a_box_rides_a_rising_platform_without_sinking_into_it():
    """A kinematic platform rises at 0.5 m/s carrying a box: at the mid-point the platform is half way to its
    target, and its velocity is what it moves in the rest of the step, so the box rises with it at 0.5 m/s (within
    1e-3) and stays on its top (within 1 mm)."""
    fps, frames = 24, 49
    b = ModelBuilder(gravity=(0.0, 0.0, -G))
    platform = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_box(platform, (1.0, 1.0, 0.1))
    box = b.add_body(pos=(0.0, 0.0, 0.2), mass=1.0)
    b.add_shape_box(box, (0.1, 0.1, 0.1))
    t = np.arange(frames) / fps
    pos = np.zeros((frames, 1, 3))
    pos[:, 0, 2] = 0.5 * t
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (frames, 1, 1))
    traj = simulate(b.finalize(), frame_count=frames, fps=fps, settings=RigidSettings(time_stepping="MOREAU"),
                    kinematic_track=KinematicTrack(np.array([0]), pos, quat))  # fmt: skip
    gap = traj.body_pos[:, 1, 2] - traj.body_pos[:, 0, 2] - 0.2
    print(f"gap from {gap.min():.2e} to {gap.max():.2e} m, box speed at 2 s {traj.body_vel[-1, 1, 2]:.5f} m/s")
    assert np.abs(gap).max() < 1e-3
    assert traj.body_vel[-1, 1, 2] == pytest.approx(0.5, abs=1e-3)


def test_an_unknown_scheme_is_refused():
    with pytest.raises(ValueError, match="time_stepping"):
        RigidSettings(time_stepping="RK4")
