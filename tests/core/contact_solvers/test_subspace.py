"""PGS with subspace minimization (seed 000 §3.2.6, Algorithm 9) on stacks, where plain PGS creeps: the active
set PGS guesses in a few sweeps, finished by one solve, against the box model's own residual, Baraff's exact
friction pivoting and FCLIB's merit. (Random problems against enumeration: test_random_problems.py.)"""

from pathlib import Path

import numpy as np
import pytest
from contact_lab.core.contact_solvers import fclib
from contact_lab.core.contact_solvers.local_solvers import solve_local
from contact_lab.core.contact_solvers.subspace import box_residual, solve_pgs_subspace

DATA = Path(__file__).resolve().parents[2] / "data" / "fclib"


@pytest.mark.parametrize("name", ["tower_10_boxes", "heavy_on_light"])
def test_a_stack_is_solved_in_a_few_sweeps_where_pgs_creeps(name):
    """From zero impulses: PGS-SM meets the box BLCP to rounding (its natural-map residual, zero only at a solution,
    below 1e-12 of |q|) within 10 sweeps, where 1 000 PGS sweeps leave a residual above 1e-8 of |q|."""
    problem = fclib.read_local(DATA / f"{name}.hdf5")
    W, q, mu = problem.W, problem.q, problem.mu
    scale = 1.0 + np.linalg.norm(q)
    r = np.zeros_like(q)
    sweeps, residual = solve_pgs_subspace(W, q, mu, 1000, 1e-13, r)
    assert sweeps <= 10 and residual <= 1e-12 * scale
    assert residual == pytest.approx(box_residual(W, q, mu, r))
    pgs = solve_local(problem, "pgs-box", 0.0, 1000)
    assert box_residual(W, q, mu, pgs.r) > 1e-8 * scale


def test_the_towers_velocities_are_friction_pivotings():
    """The tower's answer leaves the velocities of Baraff's exact friction pivoting, to 1e-9 of |q|."""
    problem = fclib.read_local(DATA / "tower_10_boxes.hdf5")
    W, q = problem.W, problem.q
    r = np.zeros_like(q)
    solve_pgs_subspace(W, q, problem.mu, 1000, 1e-13, r)
    exact = solve_local(problem, "pivoting-box", 1e-12, 10000)
    np.testing.assert_allclose(W @ r + q, W @ exact.r + q, atol=1e-9 * (1.0 + np.linalg.norm(q)))


def test_fclibs_boxes_stack_reaches_the_merit_1e8_in_a_few_sweeps():
    """FCLIB's own Boxes Stack (48 contacts, a singular W), from zero: FCLIB's merit at most 1e-8 within 10 sweeps
    (the stack sticks, so its box solution is the cone's); plain PGS stays above 1e-6 after 1 000."""
    problem = fclib.read_local(DATA / "local_problem_test.hdf5")
    result = solve_local(problem, "pgs-sm-box", 1e-8, 1000)
    assert result.iterations <= 10 and result.merit <= 1e-8
    assert solve_local(problem, "pgs-box", 0.0, 1000).merit > 1e-6
