"""Islands and sleeping (:mod:`contact_lab.core.rigid.sleeping`).

References: momentum conservation (a sleeping box struck on a frictionless floor must take its share), the
prescribed motion of a kinematic platform (a box asleep on it must ride along), the same scene without sleeping
(identical until the first body sleeps) and energy (a sleeping stack keeps exactly none).
"""

import numpy as np
import pytest
from contact_lab.core import BodyKind, KinematicTrack, ModelBuilder, simulate
from contact_lab.core.rigid.sleeping import update_sleep

G = 9.81
HALF = 0.1
FPS = 60


def _floor(b, mu):
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(floor, mu=mu)
    return floor


def test_struck_sleeping_box_takes_half_the_momentum():
    """Box A sleeps on a frictionless floor; box B slides into it at 1 m/s: with restitution 0 both leave at 0.5 m/s.

    A frozen A would stop B dead (momentum 0 afterwards): the speculative contact must wake A's island first.
    """
    b = ModelBuilder(gravity=(0, 0, -G))
    _floor(b, mu=0.0)
    a = b.add_body(pos=(0.0, 0.0, HALF), mass=1.0)
    b.add_shape_box(a, (HALF,) * 3, mu=0.0)
    striker = b.add_body(pos=(-1.2, 0.0, HALF), vel=(1.0, 0.0, 0.0), mass=1.0)
    b.add_shape_box(striker, (HALF,) * 3, mu=0.0)
    model = b.finalize()
    traj = simulate(model, frame_count=FPS * 2 + 1, fps=FPS, substeps=4, solver="PGS", sleeping=True)
    hit = int(np.argmax(traj.body_vel[:, a, 0] > 0.1))
    assert hit > 0.5 * FPS and traj.sleeping_bodies[hit - 2] == 1  # A was asleep just before the hit
    momentum = traj.body_vel[-1, a, 0] + traj.body_vel[-1, striker, 0]
    assert momentum == pytest.approx(1.0, abs=1e-6)
    assert traj.body_vel[-1, a, 0] == pytest.approx(0.5, abs=1e-3)


def test_box_asleep_on_a_platform_rides_along_when_it_moves():
    """A box sleeps on a kinematic platform that starts moving at 0.5 m/s after 1 s; it must follow (slip
    ``v^2 / (2 mu g)`` = 16 mm while friction accelerates it), not stay behind in the air."""
    b = ModelBuilder(gravity=(0, 0, -G))
    platform = b.add_body(pos=(0.0, 0.0, -0.05), kind=BodyKind.KINEMATIC)
    b.add_shape_box(platform, (1.0, 0.5, 0.05), mu=0.8)
    box = b.add_body(pos=(0.0, 0.0, HALF), mass=1.0)
    b.add_shape_box(box, (HALF,) * 3, mu=0.8)
    model = b.finalize()
    frames, speed = 3 * FPS + 1, 0.5
    t = np.arange(frames) / FPS
    x = speed * np.maximum(t - 1.0, 0.0)
    track = KinematicTrack(
        body_index=np.array([platform]),
        pos=np.stack([x, np.zeros(frames), np.full(frames, -0.05)], axis=1)[:, None, :],
        quat=np.tile([1.0, 0.0, 0.0, 0.0], (frames, 1, 1)),
    )
    traj = simulate(model, frame_count=frames, fps=FPS, substeps=4, solver="PGS", kinematic_track=track,
                    sleeping=True)  # fmt: skip
    assert traj.sleeping_bodies[FPS] == 1  # asleep before the platform moves
    slip = speed**2 / (2 * 0.8 * G)
    assert traj.body_pos[-1, box, 0] == pytest.approx(x[-1] - slip, abs=3e-3)
    assert traj.body_vel[-1, box, 0] == pytest.approx(speed, abs=1e-3)


def test_sleeping_changes_nothing_until_a_body_sleeps_and_then_freezes_it_exactly():
    """Against the same drop without sleeping: bit-identical until the first sleeping frame, then the pose holds
    exactly and the velocity is zero."""
    b = ModelBuilder(gravity=(0, 0, -G))
    _floor(b, mu=0.6)
    box = b.add_body(pos=(0.0, 0.0, 0.5), quat=(0.96, 0.2, 0.1, 0.17), mass=1.0, linear_damping=0.04,
                     angular_damping=0.1)  # fmt: skip
    b.add_shape_box(box, (HALF, 0.15, 0.05), mu=0.6)
    model = b.finalize()
    kwargs = dict(frame_count=3 * FPS + 1, fps=FPS, substeps=4, solver="PROX")
    awake = simulate(model, **kwargs)
    asleep = simulate(model, sleeping=True, **kwargs)
    first = int(np.argmax(asleep.sleeping_bodies > 0))
    assert first > 0
    np.testing.assert_array_equal(asleep.body_pos[:first], awake.body_pos[:first])
    assert (asleep.body_pos[first:] == asleep.body_pos[first]).all()
    assert (asleep.body_vel[first:] == 0.0).all() and (asleep.body_omega[first:] == 0.0).all()
    # and it slept where the awake run comes to rest
    np.testing.assert_allclose(asleep.body_pos[-1], awake.body_pos[-1], atol=1e-3)


def test_islands_sleep_together_and_kinematic_bodies_join_none():
    """Brute force on a hand-made contact list: bodies 1-2-3 form one island through contacts, 4 is alone on the
    kinematic body 0; an island sleeps only when every one of its bodies has rested long enough."""
    kind = np.array([BodyKind.KINEMATIC, 1, 1, 1, 1], np.int32)
    vel, omega = np.zeros((5, 3)), np.zeros((5, 3))
    c0 = np.array([0, 1, 2, 0], np.int32)
    c1 = np.array([1, 2, 3, 4], np.int32)
    rest = np.array([0.0, 1.0, 1.0, 0.2, 1.0])
    island, island_rest, asleep = np.zeros(5, np.int64), np.zeros(5), np.zeros(5, np.bool_)
    count = update_sleep(kind, vel, omega, c0, c1, 4, 0.05, 0.05, 0.5, 0.1, rest, island, island_rest, asleep)
    assert count == 1 and asleep.tolist() == [False, False, False, False, True]  # body 3 rested only 0.3 s
    vel[3, 0] = 0.06  # body 3 moves: its clock restarts, the island stays awake
    count = update_sleep(kind, vel, omega, c0, c1, 4, 0.05, 0.05, 0.5, 0.1, rest, island, island_rest, asleep)
    assert rest[3] == 0.0 and count == 1
    vel[0, 0] = 0.2  # the kinematic body moves: body 4 on it wakes
    vel[3, 0] = 0.0
    count = update_sleep(kind, vel, omega, c0, c1, 4, 0.05, 0.05, 0.5, 0.1, rest, island, island_rest, asleep)
    assert count == 0 and rest[4] == 0.0 and rest[1] == 0.0 and rest[2] == pytest.approx(1.3)
