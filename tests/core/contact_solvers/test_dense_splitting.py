"""Splitting methods on a dense box-friction problem (core/contact_solvers/dense_splitting.py) against references:
forward Gauss–Seidel at ω = 1 is the existing PGS kernel bit for bit; every method reaches the brute-force solution
of frictionless problems and the box conditions with friction; Gauss–Seidel needs fewer sweeps than Jacobi."""

from pathlib import Path

import numpy as np
import pytest
from contact_lab.core.contact_solvers import fclib
from contact_lab.core.contact_solvers.dense import solve_pgs_dense
from contact_lab.core.contact_solvers.dense_splitting import BACKWARD, FORWARD, JACOBI, SYMMETRIC, solve_splitting_dense
from contact_lab.core.contact_solvers.local_solvers import jacobi_step
from lcp_reference import brute_force_lcp

BOX_STACK = Path(__file__).resolve().parents[2] / "data" / "fclib" / "local_problem_test.hdf5"
METHODS = {"forward": FORWARD, "backward": BACKWARD, "symmetric": SYMMETRIC, "jacobi": JACOBI}


def _random_problem(seed, contacts=3, mu=0.0):
    """A random SPD W (3m, 3m) with coupled contacts and a q pushing some of them together."""
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(3 * contacts, 3 * contacts + 2))
    W = J @ J.T / J.shape[1] + 0.05 * np.eye(3 * contacts)
    q = rng.normal(size=3 * contacts)
    q[0::3] = -np.abs(q[0::3]) * np.array([1.0, -1.0, 1.0][:contacts])  # some approach, some separate
    return W, q, np.full(contacts, mu)


def _solve(W, q, mu, method, omega=None, iterations=20000, tolerance=1e-13):
    r, result = np.zeros(q.shape[0]), np.zeros(2)
    step = jacobi_step(W) if omega is None else omega
    solve_splitting_dense(W, q, mu, method, step, iterations, tolerance, r, result)
    return r, int(result[0])


def test_forward_gauss_seidel_at_omega_one_is_pgs_bit_for_bit():
    problem = fclib.read_local(BOX_STACK)
    pgs, result = np.zeros(144), np.zeros(2)
    solve_pgs_dense(problem.W, problem.q, problem.mu, 300, 0.0, pgs, result)
    ours, sweeps = _solve(problem.W, problem.q, problem.mu, FORWARD, omega=1.0, iterations=300, tolerance=0.0)
    assert sweeps == 300 and np.array_equal(ours, pgs)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_method_reaches_the_brute_force_frictionless_solution(method, seed):
    W, q, mu = _random_problem(seed)
    normals = np.arange(9) % 3 == 0
    x, _ = brute_force_lcp(W[np.ix_(normals, normals)], q[normals])  # frictionless: the tangents stay zero
    omega = None if method == "jacobi" else (1.3 if method == "forward" else 1.0)
    r, _ = _solve(W, q, mu, METHODS[method], omega)
    np.testing.assert_allclose(r[normals], x, atol=1e-8)
    np.testing.assert_array_equal(r[~normals], 0.0)


@pytest.mark.parametrize("method", METHODS)
def test_with_friction_every_method_meets_the_box_conditions(method):
    """Each row at the result: a normal impulse with its velocity complementary, a tangent inside its box with zero
    velocity or at a bound with the velocity pushing against it, none on a separating contact."""
    W, q, mu = _random_problem(7, mu=0.6)
    q[1::3] *= 5.0  # sliding is likely on some contacts
    r, sweeps = _solve(W, q, mu, METHODS[method], None if method == "jacobi" else 1.0)
    assert sweeps < 20000
    u = W @ r + q
    R, U = r.reshape(-1, 3), u.reshape(-1, 3)
    assert R[:, 0].min() >= 0.0 and U[:, 0].min() > -1e-9 and np.abs(R[:, 0] * U[:, 0]).max() < 1e-9
    for k in range(3):
        bound = mu[k] * R[k, 0]
        for d in (1, 2):
            if bound == 0.0:  # a separating contact carries no friction
                assert R[k, d] == 0.0
            elif abs(R[k, d]) < bound - 1e-9:
                assert abs(U[k, d]) < 1e-8
            else:
                assert abs(R[k, d]) <= bound + 1e-12 and np.sign(U[k, d]) == -np.sign(R[k, d])
    assert R[:, 1:].any()  # friction did act


def test_gauss_seidel_needs_fewer_sweeps_than_jacobi():
    """The course's ordering (§3.2): on the same coupled problem Gauss–Seidel reaches the tolerance in fewer sweeps
    than projected Jacobi with its safe damping."""
    W, q, mu = _random_problem(3, contacts=3, mu=0.5)
    _, gauss_seidel = _solve(W, q, mu, FORWARD, 1.0, tolerance=1e-10)
    _, jacobi = _solve(W, q, mu, JACOBI, None, tolerance=1e-10)
    assert gauss_seidel < jacobi < 20000


@pytest.mark.parametrize("seed", range(4))
def test_prox_jacobi_reaches_prox_gauss_seidels_solution_in_more_sweeps(seed):
    """The cone problem: PROX Jacobi (course Algorithm 11) and PROX Gauss–Seidel (Algorithm 12) end at the same
    impulses (FCLIB's merit near zero for both), Jacobi after no fewer sweeps (the PROX paper's ordering)."""
    from contact_lab.core.contact_solvers.local_solvers import solve_local

    W, q, mu = _random_problem(seed, mu=0.3)
    problem = fclib.LocalProblem(W, q, mu)
    gauss_seidel = solve_local(problem, "prox-global", tolerance=1e-11, max_iterations=100000)
    jacobi = solve_local(problem, "prox-jacobi-global", tolerance=1e-11, max_iterations=100000)
    assert gauss_seidel.merit < 1e-9 and jacobi.merit < 1e-9
    np.testing.assert_allclose(jacobi.r, gauss_seidel.r, atol=1e-8)
    assert gauss_seidel.iterations <= jacobi.iterations


def test_on_the_box_stack_prox_jacobi_needs_more_sweeps_than_gauss_seidel():
    from contact_lab.core.contact_solvers.local_solvers import solve_local

    problem = fclib.read_local(BOX_STACK)
    gauss_seidel = solve_local(problem, "prox-global", tolerance=1e-6, max_iterations=20000)
    jacobi = solve_local(problem, "prox-jacobi-global", tolerance=1e-6, max_iterations=20000)
    assert gauss_seidel.iterations < jacobi.iterations < 20000
    assert max(gauss_seidel.merit, jacobi.merit) < 1e-5
