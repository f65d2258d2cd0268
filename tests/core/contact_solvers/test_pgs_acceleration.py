"""Conjugate-gradient steps in projected Gauss–Seidel (:func:`contact_lab.core.contact_solvers.kernels.solve_pgs`).

Reference: the same step solved by plain PGS to its fixed point (4000 sweeps). The accelerated sweeps must reach
the same impulses (the acceleration changes the path, not the problem) and be closer to them after the same number of
sweeps. What it buys on a pile is measured in ``tests/benchmarks/bench_pile.py``.
"""

import numpy as np
from contact_lab.core import BodyKind, ModelBuilder
from contact_lab.core.rigid.collision.pipeline import CollisionPipeline
from contact_lab.core.rigid.solvers import make_solver

G = 9.81


def _stack_step(iterations, accelerate):
    """Impulses of one cold-started step of a column of 10 balls falling onto the floor at 0.2 m/s (masses 1-10 kg up
    the column, one contact per pair: the impulses are unique, unlike a box stack's four corners)."""
    b = ModelBuilder(gravity=(0, 0, -G))
    floor = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(floor, mu=0.5)
    for i in range(10):
        body = b.add_body(pos=(0.0, 0.0, 0.1 + 0.2 * i - 1e-4), mass=1.0 + i, vel=(0.0, 0.0, -0.2))
        b.add_shape_sphere(body, 0.1, mu=0.5)
    model = b.finalize()
    state, out = model.state(), model.state()
    contacts = model.contacts()
    CollisionPipeline(model).collide(state, contacts, 1 / 240)
    solver = make_solver(model, "PGS", iterations=iterations, tolerance=0.0, warm_start=False, accelerate=accelerate)
    solver.step(state, out, model.control(), contacts, 1 / 240)
    return contacts.contact_impulse[: contacts.contact_count].copy()


def test_accelerated_pgs_reaches_plain_pgs_fixed_point_and_gets_there_sooner():
    reference = _stack_step(4000, accelerate=False)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(_stack_step(4000, accelerate=True), reference, atol=1e-9 * scale)
    # measured: 0.129 (plain) and 0.046 (accelerated) of the largest impulse after 320 sweeps
    plain = np.abs(_stack_step(320, accelerate=False) - reference).max()
    accelerated = np.abs(_stack_step(320, accelerate=True) - reference).max()
    assert accelerated < 0.5 * plain
