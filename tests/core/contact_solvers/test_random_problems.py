"""Every dense method against brute-force enumeration of index sets on random small problems with SPD matrices:
100 frictionless LCPs (every method: the normals alone, or μ = 0) and 100 box-friction BLCPs (every method that
solves the box model), each to 1e-8."""

import numpy as np
import pytest
from contact_lab.core.contact_solvers.fclib import local_merit
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


@pytest.mark.parametrize("name", ["prox-blocked", "prox-jacobi-blocked"])
def test_the_blocked_r_factor_reaches_coulombs_law_where_the_seeds_euclidean_step_does_not(name):
    """PROX with the blocked r-factor (per contact the inverse of the friction's 2 × 2 block) on 100 random cone
    problems (μ 0.6): FCLIB's merit, zero exactly at Coulomb's solutions, reaches 1e-10 on at least 95. The seed's
    literal step, a Euclidean projection after the blocked step (numpy here), stalls away from Coulomb's law on the
    first ten of them wherever a contact slides on a block that is not isotropic: its proximal map changes the fixed
    point."""
    solved = sum(solve_local(random_local_problem(2000 + s, 1 + s % 4, 0.6), name, 1e-10, 5000).converged
                 for s in range(100))  # fmt: skip
    stalled = [_euclidean_blocked_prox(random_local_problem(2000 + s, 1 + s % 4, 0.6), 500) for s in range(10)]
    print(f"{name}: {solved} of 100 at merit 1e-10; the Euclidean step's merits {[f'{m:.1e}' for m in stalled]}")
    assert solved >= 95
    assert sum(m > 1e-4 for m in stalled) >= 5  # the others' contacts stick or part: no friction direction to miss


def _euclidean_blocked_prox(problem, sweeps):
    """FCLIB's merit after ``sweeps`` Gauss–Seidel sweeps of PROX with the blocked r-factor and a Euclidean
    projection onto each friction disk (the seed's formula taken literally)."""
    W, q, mu = problem.W, problem.q, problem.mu
    r = np.zeros(q.shape[0])
    for _ in range(sweeps):
        for k in range(mu.shape[0]):
            i, u = 3 * k, W @ r + q
            r[i] = max(r[i] - u[i] / W[i, i], 0.0)
            y = r[i + 1 : i + 3] - np.linalg.solve(W[i + 1 : i + 3, i + 1 : i + 3], u[i + 1 : i + 3])
            norm, radius = float(np.linalg.norm(y)), mu[k] * r[i]
            r[i + 1 : i + 3] = y if norm <= radius else y * radius / norm
    return local_merit(problem, r)
