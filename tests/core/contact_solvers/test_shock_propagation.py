"""Shock propagation (core/contact_solvers/shock_propagation.py, seed 004): the body layers against a breadth-first
search; a 10-box stack at 60 Hz and 5 sweeps, which topples without the pass, stays within 1 mm of where it was
built over 1 000 steps with it (the slides' test); and where a solve has already converged the pass changes
nothing."""

from collections import deque

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, simulate
from contact_lab.core.contact_solvers.shock_propagation import UNREACHED, body_layers
from contact_lab.core.rigid.settings import RigidSettings


def _breadth_first_layers(fixed, edges, count):
    layers = [0 if b in fixed else UNREACHED for b in range(count)]
    queue = deque(sorted(fixed))
    while queue:
        a = queue.popleft()
        for x, y in edges:
            for near, far in ((x, y), (y, x)):
                if near == a and layers[far] > layers[a] + 1:
                    layers[far] = layers[a] + 1
                    queue.append(far)
    return layers


@pytest.mark.parametrize("seed", range(5))
def test_body_layers_equal_a_breadth_first_search_from_the_fixed_bodies(seed):
    rng = np.random.default_rng(seed)
    count = 30
    inv_mass = np.where(rng.random(count) < 0.1, 0.0, 1.0)
    inv_mass[0] = 0.0
    pairs = rng.integers(0, count, size=(40, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    layers = np.zeros(count, np.int64)
    body_layers(inv_mass, pairs[:, 0].copy(), pairs[:, 1].copy(), pairs.shape[0], layers)
    fixed = {b for b in range(count) if inv_mass[b] == 0.0}
    assert layers.tolist() == _breadth_first_layers(fixed, pairs.tolist(), count)


def _stack(count=10):
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="ground")
    b.add_shape_plane(ground, mu=0.6)
    for i in range(count):
        body = b.add_body(pos=(0.0, 0.0, 0.5 + 1.0 * i), mass=1.0, label=f"box{i}")
        b.add_shape_box(body, (0.5, 0.5, 0.5), mu=0.6)
    return b.finalize()


def _run_stack(solver, shock):
    settings = RigidSettings(substeps=1, solver=solver, iterations=5, solver_options={"shock_propagation": shock})
    return simulate(_stack(), frame_count=1001, fps=60.0, settings=settings)


@pytest.mark.parametrize("solver", ["PGS", "PROX"])
def test_a_ten_box_stack_stands_with_shock_propagation_and_topples_without(solver):
    """1 m boxes, 60 Hz, 5 sweeps, 1 000 steps. Reference: the stack as built (every box at rest on the one below)."""
    held = _run_stack(solver, True)
    moved = np.abs(held.body_pos[:, 1:] - held.body_pos[0, 1:]).max()
    assert moved < 1e-3, f"drift {moved * 1e3:.3f} mm"
    assert np.abs(held.body_vel[-100:, 1:]).max() < 1e-3
    fell = _run_stack(solver, False)
    assert np.abs(fell.body_pos[:, 1:] - fell.body_pos[0, 1:]).max() > 0.5  # boxes slid off: the stack fell


def test_the_pass_changes_nothing_where_the_solve_has_converged():
    """Two boxes resting side by side and one on top, 200 sweeps to 1e-12: the pass finds nothing left to do."""
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="ground")
    b.add_shape_plane(ground, mu=0.5)
    for pos in ((-0.3, 0.0, 0.25), (0.3, 0.0, 0.25), (0.0, 0.0, 0.75)):
        body = b.add_body(pos=pos, mass=1.0)
        b.add_shape_box(body, (0.25, 0.25, 0.25), mu=0.5)
    model = b.finalize()
    runs = [
        simulate(model, frame_count=25, fps=24.0,
                 settings=RigidSettings(substeps=4, solver="PGS", iterations=200, tolerance=1e-12,
                                        solver_options={"shock_propagation": shock, "accelerate": False}))
        for shock in (False, True)
    ]  # fmt: skip
    np.testing.assert_allclose(runs[1].body_pos, runs[0].body_pos, atol=1e-9)
