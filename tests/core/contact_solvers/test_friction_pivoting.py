"""Baraff's friction pivoting (core/contact_solvers/friction_pivoting.py, seed 002) against the seed's cases: random
problems meet every normal and static-friction condition (and equal brute-force enumeration in space); a block on
an incline sticks below tan θ = μ and slides with a = g (sin θ − μ cos θ) above it; Painlevé's sliding rod has a
solution at every angle for μ < 4/3 and none where (1 + 3 cos²θ) / (3 sin θ cos θ) < μ, which the method reports."""

import math

import numpy as np
import pytest
from contact_lab.core.contact_solvers.friction_pivoting import NO_SOLUTION, SOLVED, friction_pivoting
from lcp_reference import brute_force_box_friction

G = 9.81


def _conditions_hold(f, a, mu, stride, tol=1e-8):
    normal_f, normal_a = f[0::stride], a[0::stride]
    ok = normal_a.min() > -tol and normal_f.min() > -tol and np.abs(normal_f * normal_a).max() < tol
    for j in range(1, stride):
        ft, at = f[j::stride], a[j::stride]
        ok &= bool(np.all(np.abs(ft) <= mu * normal_f + tol) and np.all(at * ft <= tol))
        ok &= bool(np.all(np.abs(at * (mu * normal_f - np.abs(ft))) < tol))  # sliding only at the bound
    return ok


@pytest.mark.parametrize("stride", [2, 3])
def test_random_problems_meet_every_condition_in_few_pivots(stride):
    """150 problems of 1–4 contacts (SPD A, μ = 0.5): solved, every condition to 1e-8, at most 6 pivots per row;
    in space (box friction per tangent) the forces of 1–2 contacts equal brute-force enumeration of the index sets."""
    for seed in range(150):
        rng = np.random.default_rng(seed)
        m = 1 + seed % 4
        n = m * stride
        J = rng.normal(size=(n, n + 3))
        A = J @ J.T / J.shape[1] + 0.1 * np.eye(n)
        b = rng.normal(size=n)
        b[1::stride] *= 3.0
        mu = np.full(m, 0.5)
        result = friction_pivoting(A, b, mu, stride)
        assert result.status == SOLVED and result.pivots <= 6 * n, (seed, result.status, result.pivots)
        np.testing.assert_allclose(result.a, A @ result.f + b, atol=1e-10)
        assert _conditions_hold(result.f, result.a, mu, stride), seed
        if stride == 3 and m <= 2:  # enumeration grows as 3^(3m)
            np.testing.assert_allclose(result.f, brute_force_box_friction(A, b, mu), atol=1e-8, err_msg=str(seed))


def _block_on_incline(theta, mass=2.0, half_width=0.3, half_height=0.1):
    """A 2D block resting on an incline by its two lower corners, in the incline's frame (x down the slope):
    ``A = J M⁻¹ Jᵀ`` (4, 4) for rows [normal, friction] per corner, ``b = J M⁻¹ F_gravity``."""
    inertia = mass * ((2 * half_width) ** 2 + (2 * half_height) ** 2) / 12.0
    inv_m = np.diag([1 / mass, 1 / mass, 1 / inertia])
    rows = []
    for x in (-half_width, half_width):  # corner at (x, -h): point velocity (v_x + ω h, v_y + ω x)
        rows += [[0.0, 1.0, x], [1.0, 0.0, half_height]]
    J = np.array(rows)
    gravity = mass * G * np.array([math.sin(theta), -math.cos(theta), 0.0])
    return J @ inv_m @ J.T, J @ inv_m @ gravity, mass


@pytest.mark.parametrize("degrees", [10.0, 25.0, 30.0, 40.0])
def test_a_block_on_an_incline_sticks_or_slides_as_coulomb_says(degrees):
    mu = 0.6
    theta = math.radians(degrees)
    A, b, mass = _block_on_incline(theta)
    result = friction_pivoting(A, b, np.full(2, mu), 2)
    assert result.status == SOLVED
    f, a = result.f, result.a
    assert f[0::2].sum() == pytest.approx(mass * G * math.cos(theta), rel=1e-10)
    np.testing.assert_allclose(a[0::2], 0.0, atol=1e-10)  # resting on the slope
    if math.tan(theta) <= mu:
        assert -f[1::2].sum() == pytest.approx(mass * G * math.sin(theta), rel=1e-10)
        np.testing.assert_allclose(a[1::2], 0.0, atol=1e-10)
    else:
        np.testing.assert_allclose(f[1::2], -mu * f[0::2], rtol=1e-10)  # at the bound, up the slope
        np.testing.assert_allclose(a[1::2], G * (math.sin(theta) - mu * math.cos(theta)), rtol=1e-10)


def _painleve_rod(theta, mu, slip, mass=1.0, half_length=0.5):
    """A rod at angle θ to the ground, its lower end sliding along ``slip`` (±1): one contact, rows [normal,
    friction]. With ``f_T = −μ slip f_N`` the normal row reads
    ``a_N = (1 + 3cos²θ + 3μ slip sinθ cosθ) f_N / m − g``."""
    inertia = mass * (2 * half_length) ** 2 / 12.0
    s, c = math.sin(theta), math.cos(theta)
    J = np.array([[0.0, 1.0, -half_length * c], [1.0, 0.0, half_length * s]])  # end at centre − l (cos θ, sin θ)
    inv_m = np.diag([1 / mass, 1 / mass, 1 / inertia])
    A = J @ inv_m @ J.T
    b = J @ inv_m @ np.array([0.0, -mass * G, 0.0])
    return friction_pivoting(A, b, np.array([mu]), 2, slip=np.array([[slip]]))


def test_painleve_rod_has_a_solution_below_four_thirds_and_none_where_the_seed_says():
    for degrees in np.linspace(5.0, 85.0, 33):
        theta = math.radians(degrees)
        for slip in (-1.0, 1.0):
            result = _painleve_rod(theta, 1.3, slip)
            assert result.status == SOLVED, (degrees, slip)
            assert result.a[0] == pytest.approx(0.0, abs=1e-10) and result.f[0] > 0.0  # the end stays on the ground
            assert result.f[1] == pytest.approx(-1.3 * slip * result.f[0], rel=1e-12)  # against the slip
    theta = math.radians(63.0)
    critical = (1 + 3 * math.cos(theta) ** 2) / (3 * math.sin(theta) * math.cos(theta))
    assert critical < 2.0
    assert _painleve_rod(theta, 2.0, -1.0).status == NO_SOLUTION  # inconsistent: no force keeps the end up
    assert _painleve_rod(theta, 2.0, 1.0).status == SOLVED  # sliding the other way is consistent
    assert _painleve_rod(theta, critical * 0.99, -1.0).status == SOLVED
    assert _painleve_rod(theta, critical * 1.01, -1.0).status == NO_SOLUTION
