"""Staggered projections against the global Fischer–Burmeister Newton on random cone problems and an analytic
sliding contact."""

from pathlib import Path

import numpy as np
from contact_lab.core.contact_solvers import fclib
from contact_lab.core.contact_solvers.local_solvers import solve_local
from contact_lab.core.contact_solvers.staggered import solve_staggered
from lcp_reference import random_local_problem


def test_a_sliding_contact_takes_its_full_friction_against_the_slip():
    """W = I, q = (-1, 2, 0), mu 0.5: the normal takes 1 (u_n = 0), the friction its bound 0.5 against the slip,
    which goes on at 1.5 m/s: r = (1, -0.5, 0), found in one alternation."""
    r, alternations, merit = solve_staggered(np.eye(3), np.array([-1.0, 2.0, 0.0]), np.array([0.5]), 10, 1e-12)
    np.testing.assert_allclose(r, [1.0, -0.5, 0.0], atol=1e-12)
    assert alternations == 1 and merit < 1e-12


def test_random_cone_problems_agree_with_the_cone_newton():
    """100 random problems (1 to 4 contacts, SPD W, mu 0.2, 0.5, 1): every one converges to FCLIB's merit 1e-10 and
    its impulses agree with newton-fb-cone's to 1e-6 of the largest."""
    alternations = []
    for seed in range(100):
        problem = random_local_problem(5000 + seed, 1 + seed % 4, [0.2, 0.5, 1.0][seed % 3])
        staggered = solve_local(problem, "staggered-cone", 1e-10, 1000)
        newton = solve_local(problem, "newton-fb-cone", 1e-10, 1000)
        assert staggered.converged and newton.converged, seed
        scale = np.abs(newton.r).max()
        np.testing.assert_allclose(staggered.r, newton.r, atol=1e-6 * scale, err_msg=f"problem {5000 + seed}")
        alternations.append(staggered.iterations)
    print(f"alternations: median {np.median(alternations)}, most {max(alternations)}")


def test_without_friction_one_alternation_is_the_lcp():
    problem = random_local_problem(77, 3, 0.0)
    result = solve_local(problem, "staggered-cone", 1e-12, 10)
    normals = slice(0, None, 3)
    x = solve_local(fclib.LocalProblem(problem.W, problem.q, problem.mu), "pivoting-frictionless", 1e-12, 100).r
    np.testing.assert_allclose(result.r[normals], x[normals], atol=1e-12)
    assert result.iterations == 1


def test_fclib_s_boxes_stack_in_one_alternation():
    """FCLIB's Boxes Stack (48 contacts, singular W) sticks: pivoting finds the normals and the friction's QP
    finishes the cone's solution in the first alternation, to FCLIB's merit 1e-8."""
    problem = fclib.read_local(Path(__file__).resolve().parents[2] / "data" / "fclib" / "local_problem_test.hdf5")
    result = solve_local(problem, "staggered-cone", 1e-8, 1000)
    print(f"Boxes Stack: merit {result.merit:.1e} in {result.iterations} alternation(s)")
    assert result.converged and result.iterations == 1
