"""PROX building blocks against the course's worked numbers, FCLIB, and the matrix-free solver."""

import math
from pathlib import Path

import numpy as np
import pytest
from contact_lab.core import CollisionPipeline, RFactorStrategy, make_solver
from contact_lab.core.contact_solvers import fclib
from contact_lab.core.contact_solvers.dense import solve_prox_dense
from contact_lab.core.contact_solvers.kernels import CYCLE_MARGIN, is_sweep_rejected
from contact_lab.core.friction.models import project_disk

FCLIB = Path(__file__).resolve().parents[2] / "data" / "fclib" / "local_problem_test.hdf5"
"""The FCLIB collection's 'Boxes Stack' local problem (W, q, μ, with its stored solution), shipped with the tests."""


def _prox_disk_iteration(A, b, lam0, r0, nu, adaptive, iterations=2000):
    """Course Fig. 30 iteration on the unit disk with the project's projection and divergence test."""
    lam = np.array(lam0, float)
    r = r0
    last = np.inf
    for _ in range(iterations):
        z = lam - r * (A @ lam + b)
        new = np.array(project_disk(z[0], z[1], 1.0))
        merit = np.abs(new - lam).max()
        if merit < 1e-12:
            return new, r
        if adaptive and is_sweep_rejected(merit, last, 0.0):
            r *= nu
            continue
        lam, last = new, merit
    return lam, r


def test_disk_prox_converges_to_maximal_dissipation_faster_for_larger_r():
    """Reach λ* = (0, -1) opposite to v = (0, 1) (course D1); larger r needs fewer iterations."""
    counts = []
    for r in (0.5, 1.0, 2.0, 10.0):
        lam = np.array([1.0, 0.0])
        for it in range(1, 500):  # noqa: B007 (the count is the result)
            z = lam - r * np.array([0.0, 1.0])
            new = np.array(project_disk(z[0], z[1], 1.0))
            if np.abs(new - lam).max() < 1e-10:
                break
            lam = new
        np.testing.assert_allclose(lam, [0.0, -1.0], atol=1e-9)
        counts.append(it)
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_divergence_test_catches_exact_two_cycle_erratum_e20():
    """Recover from the exact 2-cycle of course D2 at r = 1 (strict '>' would never back off)."""
    A = np.array([[2.0, 1.0], [1.0, 2.0]])
    b = np.array([-1.0, 1.0])
    expected = np.array([1.0, -1.0]) / math.sqrt(2.0)
    stuck, _ = _prox_disk_iteration(A, b, [0.0, 1.0], 1.0, 0.5, adaptive=False, iterations=101)
    assert np.abs(stuck - expected).max() > 0.1  # fixed r = 1 cycles between [0,-1] and [1,0]
    lam, r = _prox_disk_iteration(A, b, [0.0, 1.0], 1.0, 0.5, adaptive=True)
    np.testing.assert_allclose(lam, expected, atol=1e-9)
    assert r == pytest.approx(0.5)
    assert is_sweep_rejected(1.0, 1.0, 0.0) and not is_sweep_rejected(0.5, 1.0, 0.0)
    # a cycle whose merit drifts down in the last bits: caught with the dense kernels' margin, not without
    assert is_sweep_rejected(1.0 - 1e-13, 1.0, CYCLE_MARGIN) and not is_sweep_rejected(1.0 - 1e-13, 1.0, 0.0)


@pytest.mark.parametrize("strategy", [RFactorStrategy.GLOBAL, RFactorStrategy.LOCAL])
def test_dense_prox_solves_fclib_box_stack(strategy):
    """Solve the FCLIB 'Boxes Stack' local problem (48 contacts, μ = 0.7) to its stored velocities.

    The Delassus matrix is singular (redundant contacts, eigenvalues 0 … 2.7e3), where single-prox
    Gauss–Seidel sweeps stall near 3e-6 m/s (|q| ≈ 5e-3 m/s); the reference came from Siconos'
    NSGS with exact local solves at tol 1e-8.
    """
    problem = fclib.read_local(FCLIB)
    W, q, mu, n = problem.W, problem.q, problem.mu, problem.W.shape[0]
    u_ref = fclib.read_solution(FCLIB)[0].u
    r = np.zeros(n)
    result = np.zeros(3)
    solve_prox_dense(W, q, mu, int(strategy), 20000, 1e-12, 0.5 if strategy == 1 else 0.9, np.zeros(n), r, result)
    assert result[0] > 10
    u = W @ r + q
    R, U = r.reshape(-1, 3), u.reshape(-1, 3)
    assert R[:, 0].max() > 1e-4  # the stack is loaded
    np.testing.assert_allclose(u, u_ref, atol=5e-6)  # 0.1 % of |q|: the boxes come to rest
    assert np.all(np.linalg.norm(R[:, 1:], axis=1) <= mu * R[:, 0] + 1e-12)
    assert np.abs(R[:, 0] * U[:, 0]).max() < 1e-9
    assert U[:, 0].min() > -5e-6


def _coupled_groups(W):
    """Contact index sets of the diagonal blocks of ``W`` (3m x 3m) after permutation: contacts whose 3x3 block of
    ``W`` is non-zero share a finite-mass body; each group is an independent contact problem."""
    m = W.shape[0] // 3
    coupled = np.abs(W).reshape(m, 3, m, 3).max(axis=(1, 3)) > 0.0
    groups, seen = [], set()
    for k in range(m):
        if k not in seen:
            group, frontier = {k}, [k]
            while frontier:
                new = set(np.flatnonzero(coupled[frontier.pop()]).tolist()) - group
                group |= new
                frontier += sorted(new)
            seen |= group
            groups.append(sorted(group))
    return groups


@pytest.mark.parametrize("strategy", [RFactorStrategy.GLOBAL, RFactorStrategy.LOCAL])
def test_matrix_free_prox_matches_dense_prox(strategy):
    """Give the same impulses matrix-free as the dense PROX on the assembled Delassus matrix.

    The matrix-free PROX solves each contact island as a problem of its own (its own r), so the dense PROX solves
    each diagonal block of ``W`` on its own too: the scene's box and ball are two islands, and the sliding box's four
    contacts share the load in more than one exact Coulomb solution (natural-map residuals below 1e-13), so the box's
    r of a solve over both (set by the ball) ends at another one, 5e-4 m/s away.
    """
    from contact_solvers.test_against_dense_lcp import _dense_system, _scene

    model = _scene(0.35, 5)
    state_in, state_out = model.state(), model.state()
    contacts = model.contacts()
    CollisionPipeline(model).collide(state_in, contacts)
    solver = make_solver(model, "PROX", r_strategy=strategy, tolerance=1e-14, iterations=5000, warm_start=False)
    dt = 1.0 / 240.0
    solver.step(state_in, state_out, model.control(), contacts, dt)
    m = contacts.contact_count
    J, Minv, u_free = _dense_system(model, state_in, contacts, dt)
    W = J @ Minv @ J.T
    q = solver._b[:m].ravel()  # J u_free plus the stabilisation bias
    np.testing.assert_allclose(q[1::3], (J @ u_free)[1::3], atol=1e-12)
    r = np.zeros(3 * m)
    groups = _coupled_groups(W)
    assert len(groups) == 2 and solver.last_islands == 2
    for group in groups:
        rows = np.array([3 * k + d for k in group for d in range(3)])
        part = np.zeros(rows.size)
        solve_prox_dense(
            W[np.ix_(rows, rows)], q[rows], contacts.contact_mu[group].copy(), int(strategy), 5000, 1e-14, solver.nu,
            np.zeros(rows.size), part, np.zeros(3),
        )  # fmt: skip
        r[rows] = part
    # impulses are unique up to the redundant-contact null space; velocities are unique
    np.testing.assert_allclose(J @ (Minv @ J.T @ contacts.contact_impulse[:m].ravel()), J @ (Minv @ J.T @ r), atol=1e-8)
