"""Pivoting methods (core/contact_solvers/pivoting.py) and the global min-map Newton (global_newton.py) against
references: incremental pivoting equals the brute-force LCP solution; block principal pivoting equals a fully
converged projected Gauss–Seidel on box-friction problems, and the min-map Newton equals both; on FCLIB's Boxes
Stack block pivoting reaches an exact solution where every splitting sweep stalls."""

from pathlib import Path

import numpy as np
import pytest
from contact_lab.core.contact_solvers import fclib
from contact_lab.core.contact_solvers.dense_splitting import FORWARD, solve_splitting_dense
from contact_lab.core.contact_solvers.global_newton import (
    min_map_residual,
    solve_fischer_burmeister_newton,
    solve_min_map_newton,
)
from contact_lab.core.contact_solvers.local_solvers import solve_local
from contact_lab.core.contact_solvers.pivoting import block_principal_pivoting, incremental_pivoting
from lcp_reference import brute_force_lcp

BOX_STACK = Path(__file__).resolve().parents[2] / "data" / "fclib" / "local_problem_test.hdf5"


def _spd(seed, n):
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(n, n + 2))
    return J @ J.T / J.shape[1] + 0.05 * np.eye(n), rng


@pytest.mark.parametrize("seed", range(6))
def test_incremental_pivoting_finds_the_brute_force_solution(seed):
    A, rng = _spd(seed, 7)
    b = rng.normal(size=7)
    x, pivots, solved = incremental_pivoting(A, b)
    assert solved and pivots >= 1
    np.testing.assert_allclose(x, brute_force_lcp(A, b)[0], atol=1e-12)


def test_incremental_pivoting_says_when_there_is_no_solution():
    """A row that nothing can make non-negative (A = 0, b < 0): the step is unbounded."""
    x, _, solved = incremental_pivoting(np.zeros((1, 1)), np.array([-1.0]))
    assert not solved


def _friction_problem(seed):
    W, rng = _spd(seed, 9)
    q = rng.normal(size=9)
    q[0::3], q[1::3] = -np.abs(q[0::3]) * np.array([1.0, -1.0, 1.0]), 5.0 * q[1::3]
    return W, q, np.full(3, 0.6)


@pytest.mark.parametrize("seed", range(8))
def test_block_principal_pivoting_equals_converged_gauss_seidel(seed):
    W, q, mu = _friction_problem(seed)
    r, steps, solved = block_principal_pivoting(W, q, mu)
    reference, result = np.zeros(9), np.zeros(2)
    solve_splitting_dense(W, q, mu, FORWARD, 1.0, 200000, 1e-15, reference, result)
    assert solved and steps < 50
    np.testing.assert_allclose(r, reference, atol=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_min_map_newton_equals_block_pivoting_in_a_few_steps(seed):
    W, q, mu = _friction_problem(seed)
    r, steps, solved = solve_min_map_newton(W, q, mu)
    assert solved and steps <= 20
    np.testing.assert_allclose(r, block_principal_pivoting(W, q, mu)[0], atol=1e-9)
    assert np.linalg.norm(min_map_residual(W, q, mu, r)[0]) < 1e-11


@pytest.mark.parametrize("start", [-5.0, -1.0, 0.0, 0.3, 5.0])
def test_the_preconditioned_min_map_solves_figure_23_in_one_newton_step_from_anywhere(start):
    """The course's Figure 23 (§3.3.5): one normal row with ``u = λ/4 − 1/8``, solution ``λ = 1/2``. Scaled by ``ρ =
    1 / W_nn = 4`` the min-map's two branches run parallel and its residual is the line ``λ − 1/2``: one Newton step
    from any start. Unscaled, a start below ``−1/6`` lies on the other branch and takes a second step."""
    W, q, mu = np.diag([0.25, 1.0, 1.0]), np.array([-0.125, 0.0, 0.0]), np.zeros(1)
    x0 = np.array([start, 0.0, 0.0])
    r, steps, solved = solve_min_map_newton(W, q, mu, start=x0)
    assert solved and steps == 1 and r[0] == pytest.approx(0.5, abs=1e-15)
    _, plain_steps, plain_solved = solve_min_map_newton(W, q, mu, precondition=False, start=x0)
    print(f"from {start}: preconditioned {steps} step, plain {plain_steps}")
    assert plain_solved and plain_steps == (2 if start < -1.0 / 6.0 else 1)


def test_pivoting_solves_the_box_stack_where_sweeps_stall():
    """The course's claim for pivoting (high accuracy) on FCLIB's singular Boxes Stack: block principal pivoting
    reaches FCLIB's merit 1e-8, which no splitting method reaches in 20 000 sweeps."""
    problem = fclib.read_local(BOX_STACK)
    pivoted = solve_local(problem, "bpp-box", tolerance=1e-8, max_iterations=1000)
    swept = solve_local(problem, "pgs-box", tolerance=1e-8, max_iterations=20000)
    assert pivoted.converged and pivoted.merit < 1e-8 < swept.merit


@pytest.mark.parametrize("seed", range(6))
def test_fischer_burmeister_newton_finds_the_brute_force_solution(seed):
    A, rng = _spd(seed, 7)
    b = rng.normal(size=7)
    x, steps, solved = solve_fischer_burmeister_newton(A, b)
    assert solved and steps <= 30
    np.testing.assert_allclose(x, brute_force_lcp(A, b)[0], atol=1e-10)
