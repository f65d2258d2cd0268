"""Lemke's method and the polyhedral-cone friction LCP (seed 000 §1.6): every answer checked against the model's
own conditions written out here from the course's eq. 34 (not from the solver's assembly), against brute-force
enumeration of index sets, and against the analytic answer of one sliding or sticking contact."""

import math

import numpy as np
import pytest
from contact_lab.core.contact_solvers.fclib import LocalProblem
from contact_lab.core.contact_solvers.lemke import (
    PIVOT_LIMIT,
    RAY,
    SOLVED,
    TOO_LARGE,
    lemke,
    polyhedral_lcp,
    solve_polyhedral_lemke,
)
from contact_lab.core.contact_solvers.local_solvers import solve_local
from lcp_reference import brute_force_lcp


def _problem(seed, contacts, mu=0.5):
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(3 * contacts, 3 * contacts + 3))
    W = J @ J.T / J.shape[1] + 0.1 * np.eye(3 * contacts)
    q = rng.normal(size=3 * contacts)
    q[1::3] *= 3.0
    return W, q, np.full(contacts, mu)


def test_lemke_agrees_with_brute_force_on_random_lcps_with_unsymmetric_p_matrices():
    """100 LCPs whose matrix is a P-matrix but not symmetric (SPD plus a skew part: one solution each), 1 to 8
    unknowns: Lemke's answer is the enumeration's to 1e-9."""
    for seed in range(100):
        rng = np.random.default_rng(seed)
        n = 1 + seed % 8
        J = rng.normal(size=(n, n + 2))
        S = rng.normal(size=(n, n))
        A = J @ J.T / n + 0.1 * np.eye(n) + 0.5 * (S - S.T)
        b = rng.normal(size=n)
        x, _ = brute_force_lcp(A, b)
        z, pivots, status = lemke(A, b, 1000)
        assert status == SOLVED and pivots <= 3 * n + 1, seed
        np.testing.assert_allclose(z, x, atol=1e-9, err_msg=f"problem {seed}")


def _check_polyhedral_conditions(W, q, mu, k, z):
    """Eq. 34 of the course per contact, with ``D`` built here: ``0 <= u_n ⊥ λ_n >= 0``, ``0 <= β + d_j·u_T ⊥
    λ_tj >= 0`` and ``0 <= μ λ_n − Σ λ_tj ⊥ β >= 0``, to 1e-9; returns the impulses ``r``."""
    m = mu.shape[0]
    lam_n, lam_t, beta = z[:m], z[m : m + m * k].reshape(m, k), z[m + m * k :]
    angles = [2.0 * math.pi * j / k for j in range(k)]
    directions = np.array([[math.cos(a), math.sin(a)] for a in angles])  # (k, 2)
    r = np.zeros(3 * m)
    for c in range(m):
        r[3 * c] = lam_n[c]
        r[3 * c + 1 : 3 * c + 3] = directions.T @ lam_t[c]
    u = W @ r + q
    tol = 1e-9
    for c in range(m):
        slack_t = beta[c] + directions @ u[3 * c + 1 : 3 * c + 3]
        slack_cone = mu[c] * lam_n[c] - lam_t[c].sum()
        pairs = [(lam_n[c], u[3 * c])] + list(zip(lam_t[c], slack_t, strict=True)) + [(beta[c], slack_cone)]
        for value, slack in pairs:
            assert value >= -tol and slack >= -tol and abs(value * slack) <= tol
    return r


@pytest.mark.parametrize("k", [4, 8])
def test_polyhedral_answers_meet_the_models_conditions_on_200_random_problems(k):
    """1 to 3 contacts with SPD W: Lemke solves every one and its answer meets eq. 34 written out independently;
    the friction lies in the Coulomb cone (the polygon is inside it)."""
    for seed in range(200):
        W, q, mu = _problem(seed, 1 + seed % 3)
        A, b, _ = polyhedral_lcp(W, q, mu, k)
        z, _, status = lemke(A, b, 2000)
        assert status == SOLVED, seed
        r = _check_polyhedral_conditions(W, q, mu, k, z)
        R = r.reshape(-1, 3)
        assert np.all(np.linalg.norm(R[:, 1:], axis=1) <= mu * R[:, 0] + 1e-9)


def test_polyhedral_lemke_finds_the_enumerated_solution_of_single_contacts():
    """One contact, the four-sided pyramid (6 unknowns): the velocities Lemke leaves are those of the solution
    brute-force enumeration of the same LCP finds (the pyramid's impulses are unique up to the balanced pairs)."""
    for seed in range(100):
        W, q, mu = _problem(500 + seed, 1)
        A, b, B = polyhedral_lcp(W, q, mu, 4)
        x, _ = brute_force_lcp(A, b)
        z, _, status = lemke(A, b, 100)
        assert status == SOLVED
        np.testing.assert_allclose(W @ (B @ z[: B.shape[1]]) + q, W @ (B @ x[: B.shape[1]]) + q, atol=1e-8)


@pytest.mark.parametrize("degrees", [0.0, 10.0, 22.5, 45.0, 67.5, 90.0])
def test_one_sliding_contact_gets_the_polygons_friction(degrees):
    """A unit mass (W = I) pressed in at 1 m/s and sliding at 3 m/s at angle φ: the normal impulse is 1; the
    Coulomb cone gives friction μ against the sliding; the octagon gives the friction of its edge the sliding
    selects: at a direction (0°, 45°, 90°) exactly the cone's, between two directions at least cos(22.5°) of it,
    and the contact still slides (β > 0) against the friction (dissipative)."""
    mu, phi = 0.5, math.radians(degrees)
    W, q = np.eye(3), np.array([-1.0, 3.0 * math.cos(phi), 3.0 * math.sin(phi)])
    r, _, status = solve_polyhedral_lemke(W, q, np.array([mu]), 100)
    assert status == SOLVED
    assert r[0] == pytest.approx(1.0, abs=1e-12)
    friction = np.linalg.norm(r[1:])
    u_t = r[1:] + q[1:]
    assert np.dot(r[1:], u_t) < 0.0 and np.linalg.norm(u_t) > 0.0
    assert math.cos(math.pi / 8) * mu - 1e-12 <= friction <= mu + 1e-12
    if degrees % 45.0 == 0.0:
        np.testing.assert_allclose(r[1:], -mu * q[1:] / np.linalg.norm(q[1:]), atol=1e-12)


def test_one_sticking_contact_is_held_as_by_the_cone():
    """Sliding at 0.3 m/s with μ = 0.5 and a unit normal impulse: the friction inside the polygon stops it, as the
    cone and every other method do (u_T = 0, r_T = −q_T)."""
    W, q, mu = np.eye(3), np.array([-1.0, 0.2, -0.1]), np.array([0.5])
    r, _, status = solve_polyhedral_lemke(W, q, mu, 100)
    assert status == SOLVED
    np.testing.assert_allclose(r, [1.0, -0.2, 0.1], atol=1e-12)
    cone = solve_local(LocalProblem(W, q, mu), "newton-fb-cone")
    np.testing.assert_allclose(r, cone.r, atol=1e-9)


def test_friction_orders_polygon_cone_box_on_a_sliding_contact():
    """Between two directions the octagon (inside the cone) brakes least, the cone more, the box (around the
    cone) most: the magnitudes of the three methods' friction on one contact sliding at 22.5°."""
    mu, phi = 0.5, math.radians(22.5)
    W, q = np.eye(3), np.array([-1.0, 3.0 * math.cos(phi), 3.0 * math.sin(phi)])
    problem = LocalProblem(W, q, np.array([mu]))
    polygon, cone, box = (np.linalg.norm(solve_local(problem, name).r[1:])
                          for name in ("lemke-polyhedral", "newton-fb-cone", "pivoting-box"))  # fmt: skip
    assert polygon < cone - 1e-3 < box - 2e-3


def test_the_limits_say_so():
    """A ray (the classic unsolvable LCP ``w = -z - 1``), the pivot limit and the size limit are reported, not
    returned as answers."""
    z, _, status = lemke(-np.eye(2), -np.ones(2), 100)
    assert status == RAY and not z.any()
    W, q, mu = _problem(7, 3)
    A, b, _ = polyhedral_lcp(W, q, mu, 8)
    assert lemke(A, b, 1)[2] == PIVOT_LIMIT
    big = 2001
    assert lemke(np.eye(big), -np.ones(big), 10)[2] == TOO_LARGE
