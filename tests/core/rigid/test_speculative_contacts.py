"""Fast bodies do not tunnel: speculative contacts up to the distance a pair can close in one step (issue 11).

Reference: geometry. A 2 cm bullet at 50 m/s moves 0.52 m per step at 24 fps x 4 substeps, fifty times the 1 cm
wall it is fired at; with contacts only within the 1 cm contact margin it would be past the wall after two steps.
"""

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, simulate
from contact_lab.core.rigid.collision.pipeline import CollisionPipeline

SPEED = 50.0
WALL_HALF = 0.005  # a 1 cm wall
BULLET = 0.01  # a 2 cm bullet (radius / half-extent)


def _range(shape, *, start=-1.0, omega=(0.0, 0.0, 0.0), gravity=(0.0, 0.0, 0.0)):
    """A kinematic 1 cm wall at x = 0 and a bullet fired at it along +x from ``start`` [m]; gravity [m/s²]."""
    b = ModelBuilder(gravity=gravity)
    wall = b.add_body(kind=BodyKind.KINEMATIC, label="wall")
    b.add_shape_box(wall, (WALL_HALF, 0.5, 0.5), mu=0.3)
    bullet = b.add_body(pos=(start, 0.0, 0.0), vel=(SPEED, 0.0, 0.0), omega=omega, mass=0.01, label="bullet")
    if shape == "sphere":
        b.add_shape_sphere(bullet, BULLET, mu=0.3)
    elif shape == "box":
        b.add_shape_box(bullet, (BULLET,) * 3, mu=0.3)
    elif shape == "hull":
        octahedron = BULLET * np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
        b.add_shape_convex(bullet, octahedron, mu=0.3)
    elif shape == "rod":  # a spinning 30 cm rod: its tips move faster than its centre
        b.add_shape_box(bullet, (0.15, 0.02, 0.02), mu=0.3)
    return b.finalize()


@pytest.mark.parametrize("shape", ["sphere", "box", "hull"])
def test_bullet_at_fifty_metres_per_second_stops_at_a_one_centimetre_wall(shape):
    """The bullet ends on the near side of the wall, touching it, at rest along x (restitution 0)."""
    model = _range(shape)
    traj = simulate(model, frame_count=13, fps=24, substeps=4, solver="PGS", iterations=20)
    x = traj.body_pos[:, 1, 0]
    near_face = -WALL_HALF - BULLET
    assert x.max() <= near_face + 1e-3  # never through, never deeper than 1 mm
    assert x[-1] == pytest.approx(near_face, abs=1e-3)
    assert abs(traj.body_vel[-1, 1, 0]) < 0.1


@pytest.mark.parametrize("shape", ["sphere", "box", "hull"])
def test_default_solver_stops_the_bullet_at_the_wall(shape):
    """The same with the default settings (PROX, 100 sweeps) and gravity pressing the bullet against the wall: it
    never passes the near face by more than 1 mm and rests on it. Before each body's lever arm ended on its own
    surface, PROX let every bullet through."""
    model = _range(shape, gravity=(9.81, 0.0, 0.0))
    traj = simulate(model, frame_count=13, fps=24, substeps=4)
    x = traj.body_pos[:, 1, 0]
    near_face = -WALL_HALF - BULLET
    assert x.max() <= near_face + 1e-3
    assert x[-1] == pytest.approx(near_face, abs=1e-3)


def test_spinning_rod_tip_does_not_pass_the_wall():
    """The sweep bound includes rotation (|w| times the reach): a rod turning 0.3 rad per step stays on its side."""
    model = _range("rod", start=-0.4, omega=(0.0, 0.0, 30.0))
    pipeline = CollisionPipeline(model)
    pipeline.collide(model.state(), model.contacts(), 1.0 / 96.0)
    reach = np.linalg.norm([0.15, 0.02, 0.02])  # the rod's corner, from its centre
    np.testing.assert_allclose(pipeline.shape_sweep[1], (SPEED + 30.0 * reach) / 96.0, rtol=1e-12)
    traj = simulate(model, frame_count=13, fps=24, substeps=4, solver="PGS", iterations=20)
    assert np.all(np.isfinite(traj.body_pos))
    assert traj.body_pos[:, 1, 0].max() < -WALL_HALF


def test_slow_pairs_keep_the_contact_margin():
    """A body whose step is shorter than the margin gets exactly the contacts it had before (no new pairs)."""
    model = _range("sphere", start=-WALL_HALF - BULLET - 0.02, gravity=(0.0, 0.0, -9.81))
    state = model.state()
    state.body_vel[1] = (0.5, 0.0, 0.0)  # 2 mm per step at 240 Hz: less than the 1 cm margin
    pipeline = CollisionPipeline(model)
    contacts = model.contacts()
    pipeline.collide(state, contacts, 1.0 / 240.0)
    assert contacts.contact_count == 0  # 2 cm apart: outside the margin
    state.body_vel[1] = (SPEED, 0.0, 0.0)
    pipeline.collide(state, contacts, 1.0 / 240.0)
    assert contacts.contact_count == 1
    assert contacts.contact_gap[0] == pytest.approx(0.02, abs=1e-12)
    np.testing.assert_allclose(pipeline.shape_sweep[1], (SPEED + 9.81 / 240.0) / 240.0, rtol=1e-12)


def test_speculative_friction_rows_reach_the_bodies_own_surfaces():
    """A sphere 30 cm in front of the wall: its friction rows' Delassus entry is the analytic ``1/m + R^2/I`` of a
    point on its surface (the lever arm R, not the 30 cm to the middle of the gap, whose 180-fold entry made PROX
    crawl and the bullet pass the wall), and one step stops it at the wall."""
    model = _range("sphere", start=-WALL_HALF - BULLET - 0.3)
    seen = []

    def on_step(frame, substep, solver, contacts):
        if frame == 0 and substep == 0:
            seen.append((contacts.contact_gap[0], solver._D[0].copy(), contacts.contact_impulse[0, 0]))

    traj = simulate(model, frame_count=2, fps=24, substeps=4, solver="PROX", on_step=on_step)
    gap, D, normal_impulse = seen[0]
    assert gap == pytest.approx(0.3, abs=1e-12)
    mass, inertia = 0.01, 0.4 * 0.01 * BULLET**2  # a solid sphere
    arm = BULLET
    np.testing.assert_allclose(np.diag(D), [1 / mass, 1 / mass + arm**2 / inertia, 1 / mass + arm**2 / inertia])
    step = 1.0 / 96.0
    assert normal_impulse == pytest.approx(mass * (SPEED - gap / step), rel=1e-4)  # closes the gap exactly
    assert traj.body_pos[-1, 1, 0] == pytest.approx(-WALL_HALF - BULLET, abs=1e-5)
