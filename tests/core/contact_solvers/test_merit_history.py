"""FCLIB's merit after every sweep (``RigidSettings(merit_history=True)``, the solvers' ``record_merit_history``).

Reference: brute force. The merit recorded after sweep ``s`` must be the merit (``contact_merit``, FCLIB's
natural-map error of the whole step) of the same step solved again with an iteration cap of ``s + 1``: every
solver's first ``s + 1`` sweeps do not depend on the cap. The scene has two islands (a stack, and a ball whose
lone contact meets the tolerance within a few sweeps), so PROX's island-by-island bookkeeping is checked too: an
island that stopped keeps its share in every later sweep's merit.
"""

import numpy as np
import pytest
from contact_lab.core import BodyKind, CollisionPipeline, ModelBuilder, make_solver, simulate
from contact_lab.core.rigid.settings import RigidSettings

SWEEPS = 12
TOLERANCE = 1e-4
"""Met by the ball's island within a few sweeps, not by the stack's within ``SWEEPS``."""


def _scene():
    """Three boxes stacked off-centre and a ball, all touching, with sideways velocities (friction at work)."""
    rng = np.random.default_rng(3)
    b = ModelBuilder(gravity=(0, 0, -9.81))
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(floor, mu=0.6)
    for level in range(3):
        box = b.add_body(pos=(0.03 * level, 0.0, 0.1 + 0.2 * level), vel=rng.normal(0, 0.2, 3), mass=1.0 + level)
        b.add_shape_box(box, (0.1, 0.1, 0.1), mu=0.6)
    ball = b.add_body(pos=(1.0, 0.0, 0.1), vel=(0.3, 0.0, -0.2), mass=0.5)
    b.add_shape_sphere(ball, 0.1, mu=0.6)
    return b.finalize(contact_margin=0.0)


def _step(model, solver_name, iterations, record=False):
    """One step from the initial state: ``(merit after it, its merit history)``."""
    state_in, state_out = model.state(), model.state()
    contacts = model.contacts()
    CollisionPipeline(model).collide(state_in, contacts)
    assert contacts.contact_count > 4
    solver = make_solver(model, solver_name, iterations=iterations, tolerance=TOLERANCE)
    solver.record_merit_history = record
    solver.step(state_in, state_out, model.control(), contacts, 1.0 / 240.0)
    return solver.contact_merit(contacts), solver.last_merit_history.copy(), solver.last_iterations


@pytest.mark.parametrize("solver_name", ["PGS", "PROX", "NEWTON"])
def test_each_sweeps_merit_is_the_merit_of_the_solve_stopped_after_it(solver_name):
    model = _scene()
    final, history, sweeps = _step(model, solver_name, SWEEPS, record=True)
    assert history.shape == (sweeps,) and sweeps >= 6, sweeps
    brute = [_step(model, solver_name, s)[0] for s in range(1, sweeps + 1)]
    np.testing.assert_allclose(history, brute, rtol=1e-11)
    assert history[-1] == pytest.approx(final, rel=1e-11)
    assert history[-1] < history[0]  # it converges: the history is not a constant


@pytest.mark.parametrize("solver_name", ["PGS", "PROX"])
def test_the_bake_records_each_frames_history_and_moves_as_without_it(solver_name):
    settings = RigidSettings(solver=solver_name, iterations=30)
    plain = simulate(_scene(), frame_count=6, fps=24, settings=settings)
    recorded = simulate(
        _scene(), frame_count=6, fps=24, settings=RigidSettings(**{**vars(settings), "merit_history": True})
    )
    np.testing.assert_array_equal(recorded.body_pos, plain.body_pos)
    np.testing.assert_array_equal(recorded.solver_merit, plain.solver_merit)
    history = recorded.solver_merit_history
    assert history.shape == (6, 30) and plain.solver_merit_history.shape == (6, 0)
    assert np.all(np.isnan(history[0]))  # the initial state: no solve
    for frame in range(1, 6):
        done = history[frame][np.isfinite(history[frame])]
        assert 1 <= done.size <= 30 and np.all(np.isnan(history[frame, done.size :]))
        assert done[-1] == pytest.approx(recorded.solver_merit[frame], rel=1e-11)


def test_penalty_contacts_have_no_sweeps_and_no_history():
    traj = simulate(_scene(), frame_count=3, fps=24, settings=RigidSettings(solver="PENALTY", merit_history=True))
    assert traj.solver_merit_history.shape == (3, 0)
