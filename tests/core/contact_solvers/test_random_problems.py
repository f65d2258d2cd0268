"""Every dense method against brute-force enumeration of index sets on random small problems with SPD matrices:
100 frictionless LCPs (every method: the normals alone, or μ = 0) and 100 box-friction BLCPs (every method that
solves the box model), each to 1e-8."""

import numpy as np
import pytest
from contact_lab.core.contact_solvers.local_solvers import SOLVERS, solve_local
from lcp_reference import brute_force_box_friction, brute_force_lcp, random_local_problem

BOX_METHODS = sorted(n for n in SOLVERS if "box" in n)
"""The methods of the box-friction model (the PROX methods solve the cone; the frictionless ones, the normals)."""


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_frictionless_problems_every_method(name):
    for seed in range(100):
        problem = random_local_problem(seed, 1 + seed % 3, 0.0)
        normals = slice(0, None, 3)
        x, _ = brute_force_lcp(problem.W[normals, normals], problem.q[normals])
        result = solve_local(problem, name, tolerance=1e-14, max_iterations=100000)
        np.testing.assert_allclose(result.r[normals], x, atol=1e-8, err_msg=f"{name}, problem {seed}")
        np.testing.assert_allclose(result.r[1::3], 0.0, atol=1e-8)
        np.testing.assert_allclose(result.r[2::3], 0.0, atol=1e-8)


@pytest.mark.parametrize("name", BOX_METHODS)
def test_box_friction_problems_every_box_method(name):
    for seed in range(100):
        problem = random_local_problem(1000 + seed, 1 + seed % 2, 0.5)
        r = brute_force_box_friction(problem.W, problem.q, problem.mu)
        result = solve_local(problem, name, tolerance=1e-14, max_iterations=100000)
        np.testing.assert_allclose(result.r, r, atol=1e-8, err_msg=f"{name}, problem {1000 + seed}")
