"""The global Newtons of the Coulomb cone (core/contact_solvers/global_newton.py): the cone Fischer–Burmeister
function against its definition and finite differences; the FB Newton and the Newton on PROX's equation against a
fully converged PROX on random problems with SPD matrices; and on FCLIB's Boxes Stack, where PROX's sweeps stall
near 1e-5, both reach FCLIB's merit 1e-8 and agree with each other and with the file's stored velocities."""

from pathlib import Path

import numpy as np
import pytest
from contact_lab.core.contact_solvers import fclib
from contact_lab.core.contact_solvers.dense import solve_prox_dense
from contact_lab.core.contact_solvers.global_newton import (
    soc_fischer_burmeister,
    solve_fischer_burmeister_cone_newton,
    solve_prox_newton,
)
from contact_lab.core.contact_solvers.local_solvers import solve_local

BOX_STACK = Path(__file__).resolve().parents[2] / "data" / "fclib" / "local_problem_test.hdf5"
CONE_NEWTONS = {"newton-fb-cone": solve_fischer_burmeister_cone_newton, "prox-newton": solve_prox_newton}


def _in_friction_cone(r, mu):
    R = r.reshape(-1, 3)
    return bool(np.all(np.linalg.norm(R[:, 1:], axis=1) <= mu * R[:, 0] + 1e-12))


def test_the_cone_fischer_burmeister_function_vanishes_exactly_at_complementary_pairs():
    """φ(x, y) = 0 for x, y on the cone's boundary along opposite rays (xᵀy = 0) or one of them zero, and not for
    pairs outside the cone or not orthogonal."""
    rng = np.random.default_rng(3)
    d = rng.normal(size=(50, 2))
    d /= np.linalg.norm(d, axis=1)[:, None]
    a, b = rng.uniform(0.1, 2.0, 50), rng.uniform(0.1, 2.0, 50)
    x = np.column_stack([a, a[:, None] * d])  # on the boundary, direction d
    y = np.column_stack([b, -b[:, None] * d])  # on the boundary, direction -d: xᵀy = ab - ab = 0
    assert np.abs(soc_fischer_burmeister(x, y)[0]).max() < 1e-12
    inside = np.column_stack([a + 1.0, 0.5 * a[:, None] * d])
    assert np.abs(soc_fischer_burmeister(inside, np.zeros_like(inside))[0]).max() < 1e-12
    assert np.linalg.norm(soc_fischer_burmeister(inside, inside)[0], axis=1).min() > 1e-3  # both inside: xᵀy > 0
    outside = np.column_stack([0.5 * a, a[:, None] * d])
    assert np.linalg.norm(soc_fischer_burmeister(outside, np.zeros_like(outside))[0], axis=1).min() > 1e-3


def test_the_cone_fischer_burmeister_derivatives_match_finite_differences():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
    _, dx, dy = soc_fischer_burmeister(x, y)
    h = 1e-6
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        fd_x = (soc_fischer_burmeister(x + e, y)[0] - soc_fischer_burmeister(x - e, y)[0]) / (2 * h)
        fd_y = (soc_fischer_burmeister(x, y + e)[0] - soc_fischer_burmeister(x, y - e)[0]) / (2 * h)
        np.testing.assert_allclose(dx[:, :, j], fd_x, atol=1e-6)
        np.testing.assert_allclose(dy[:, :, j], fd_y, atol=1e-6)


def _cone_problem(seed):
    rng = np.random.default_rng(seed)
    m = 1 + seed % 3
    J = rng.normal(size=(3 * m, 3 * m + 3))
    W = J @ J.T / J.shape[1] + 0.1 * np.eye(3 * m)
    q = rng.normal(size=3 * m)
    q[1::3] *= 3.0
    return fclib.LocalProblem(W, q, np.array([0.2, 0.6, 1.0])[rng.integers(0, 3, m)])


@pytest.mark.parametrize("name", sorted(CONE_NEWTONS))
def test_cone_newtons_equal_fully_converged_prox_on_random_problems(name):
    """100 problems of 1–3 contacts (μ 0.2, 0.6 or 1.0, SPD W): the Newton's impulses equal those of 100 000 PROX
    sweeps, to 1e-8 (both at FCLIB's merit below 1e-12)."""
    for seed in range(100):
        problem = _cone_problem(seed)
        n = problem.W.shape[0]
        reference, result = np.zeros(n), np.zeros(3)
        solve_prox_dense(problem.W, problem.q, problem.mu, 2, 100000, 1e-15, 0.5, np.zeros(n), reference, result)
        assert fclib.local_merit(problem, reference) < 1e-12, f"the reference did not converge, problem {seed}"
        r, steps, solved = CONE_NEWTONS[name](problem.W, problem.q, problem.mu, 100, 1e-13)
        assert solved and fclib.local_merit(problem, r) < 1e-12, (name, seed, steps)
        np.testing.assert_allclose(r, reference, atol=1e-8, err_msg=f"{name}, problem {seed}")
        assert _in_friction_cone(r, problem.mu)


def test_both_cone_newtons_solve_the_fclib_box_stack_to_its_stored_velocities():
    """FCLIB's Boxes Stack (48 contacts, μ = 0.7, W of rank 72 out of 144): PROX's sweeps end near merit 1e-5 (their
    r-factor collapses under rejected sweeps), both Newtons reach 1e-12 from zero.

    Their impulses differ (a singular W leaves r free along its null space) but their velocities agree to 1e-14 m/s. The
    file's stored solution is Siconos' to its tolerance 1e-8 (FCLIB's merit of its stored pair: 1.7e-8): its
    velocities differ from the exact ones by up to 7.1e-8 m/s, 7e-6 of |q|."""
    problem = fclib.read_local(BOX_STACK)
    stored = fclib.read_solution(BOX_STACK)[0]
    stored_merit = fclib.natural_map_error(stored.r, stored.u, problem.mu) / (1 + np.sqrt(np.linalg.norm(problem.q)))
    assert 1e-8 < stored_merit < 2e-8
    swept = solve_local(problem, "prox-local", tolerance=1e-8, max_iterations=20000)
    results = {name: solve_local(problem, name, tolerance=1e-8, max_iterations=100) for name in sorted(CONE_NEWTONS)}
    assert swept.merit > 1e-6
    for name, result in results.items():
        assert result.converged and result.merit < 1e-12 and result.iterations < 60, (name, result.merit)
        assert _in_friction_cone(result.r, problem.mu)
        np.testing.assert_allclose(result.u, stored.u, atol=1e-7, err_msg=name)
    fb, prox = results["newton-fb-cone"], results["prox-newton"]
    np.testing.assert_allclose(fb.u, prox.u, rtol=0, atol=1e-14)
    assert np.abs(fb.r - prox.r).max() > 1e-5  # not the same impulses: the velocities are what is unique
