"""The contact problem of one rigid step as FCLIB's local formulation (core/rigid/contact_problem.py): a cube
resting on the ground against the closed forms (each corner's normal entry of W is 4/m; the four normal impulses
carry the weight over one step), and the problem's solution against the step's own impulses."""

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder
from contact_lab.core.contact_solvers import fclib
from contact_lab.core.contact_solvers.local_solvers import solve_local
from contact_lab.core.rigid.contact_problem import NoContactsError, local_problem_at
from contact_lab.core.rigid.settings import RigidSettings

MASS, HALF, FPS, SUBSTEPS = 2.0, 0.25, 24.0, 4


def _cube_on_ground(height=HALF):
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="ground")
    b.add_shape_plane(ground, mu=0.5)
    cube = b.add_body(pos=(0.0, 0.0, height), mass=MASS, label="cube")
    b.add_shape_box(cube, (HALF, HALF, HALF), mu=0.5)
    return b.finalize()


def test_a_resting_cube_gives_the_closed_form_problem():
    settings = RigidSettings(substeps=SUBSTEPS, solver="PROX", iterations=200, tolerance=1e-10)
    W, q, mu, r = local_problem_at(_cube_on_ground(), 5, fps=FPS, settings=settings)
    h = 1.0 / (FPS * SUBSTEPS)
    assert mu.shape == (4,) and np.all(mu == 0.5)
    np.testing.assert_allclose(np.diag(W)[0::3], 4.0 / MASS, rtol=1e-12)  # 1/m + |r x n|^2 / I at a corner
    np.testing.assert_allclose(W, W.T, atol=1e-12)
    assert np.linalg.eigvalsh(W).min() > -1e-12
    assert r[0::3].sum() == pytest.approx(MASS * 9.81 * h, rel=1e-6)  # the weight over one step
    problem = fclib.LocalProblem(W, q, mu)
    assert fclib.local_merit(problem, r) < 1e-8  # the step's impulses solve the written problem
    again = solve_local(problem, "prox-global", tolerance=1e-10, max_iterations=5000)
    assert again.r[0::3].sum() == pytest.approx(MASS * 9.81 * h, rel=1e-6)


def test_a_step_without_contacts_and_frames_outside_the_run_are_refused():
    high = _cube_on_ground(height=5.0)  # falling, nowhere near the ground for the first frames
    with pytest.raises(NoContactsError, match="no contacts"):
        local_problem_at(high, 0, fps=FPS, settings=RigidSettings(substeps=SUBSTEPS))
    with pytest.raises(ValueError, match="outside"):
        local_problem_at(high, 3, frame_count=3, fps=FPS)
    with pytest.raises(ValueError, match="substep 9"):
        local_problem_at(high, 0, substep=9, fps=FPS, settings=RigidSettings(substeps=SUBSTEPS))
