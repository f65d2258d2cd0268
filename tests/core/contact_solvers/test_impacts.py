"""Impacts with restitution (core/contact_solvers/impacts.py) against closed forms: a two-body collision (velocities,
momentum, the energy lost), Newton's cradle (simultaneous: (−1/3, 2/3, 2/3) v₀ at ε = 1 and (1/3, 1/3, 1/3) v₀
at ε = 0; sequential and generalized reflections: (0, 0, v₀)), and a symmetric hit (mirror-symmetric to 1e-12 for
the simultaneous and reflection methods, not for the sequential one)."""

import numpy as np
import pytest
from contact_lab.core.contact_solvers.impacts import generalized_reflections, sequential, simultaneous

METHODS = {"simultaneous": simultaneous, "sequential": sequential, "reflections": generalized_reflections}


def _line(masses):
    """Balls on a line touching in order: J rows (v_{i+1} − v_i), inverse masses."""
    n = len(masses)
    J = np.zeros((n - 1, n))
    for i in range(n - 1):
        J[i, i], J[i, i + 1] = -1.0, 1.0
    return J, 1.0 / np.asarray(masses, float)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("eps", [0.0, 0.4, 1.0])
def test_two_bodies_collide_as_the_closed_form_says(method, eps):
    m1, m2, v1, v2 = 2.0, 3.0, 1.5, -0.5
    J, inv_mass = _line([m1, m2])
    v, _ = METHODS[method](J, inv_mass, np.array([v1, v2]), eps)
    expected1 = (m1 * v1 + m2 * v2 + m2 * eps * (v2 - v1)) / (m1 + m2)
    expected2 = (m1 * v1 + m2 * v2 + m1 * eps * (v1 - v2)) / (m1 + m2)
    np.testing.assert_allclose(v, [expected1, expected2], rtol=1e-14, atol=1e-14)
    assert m1 * v[0] + m2 * v[1] == pytest.approx(m1 * v1 + m2 * v2, rel=1e-14)
    reduced = m1 * m2 / (m1 + m2)
    lost = 0.5 * (m1 * v1**2 + m2 * v2**2) - 0.5 * (m1 * v[0] ** 2 + m2 * v[1] ** 2)
    assert lost == pytest.approx(0.5 * reduced * (1.0 - eps**2) * (v1 - v2) ** 2, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize(
    ("method", "eps", "expected"),
    [
        ("simultaneous", 1.0, [-1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0]),
        ("simultaneous", 0.0, [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]),
        ("sequential", 1.0, [0.0, 0.0, 1.0]),
        ("reflections", 1.0, [0.0, 0.0, 1.0]),
    ],
)
def test_newtons_cradle(method, eps, expected):
    J, inv_mass = _line([1.0, 1.0, 1.0])
    v0 = 2.0
    v, j = METHODS[method](J, inv_mass, np.array([v0, 0.0, 0.0]), eps)
    np.testing.assert_allclose(v, np.array(expected) * v0, atol=1e-14)
    if method == "simultaneous" and eps == 1.0:
        np.testing.assert_allclose(j, [4.0 / 3.0 * v0, 2.0 / 3.0 * v0], rtol=1e-14)  # A = [[2, -1], [-1, 2]]


def _symmetric_hit():
    """A ball moving along +x hits two equal balls touching it at ±30° (2D, velocities (x, y) per ball)."""
    normals = [np.array([np.cos(a), np.sin(a)]) for a in (np.radians(30.0), -np.radians(30.0))]
    J = np.zeros((2, 6))
    for row, n in enumerate(normals):
        J[row, 0:2] = -n
        J[row, 2 + 2 * row : 4 + 2 * row] = n
    return J, np.ones(6), np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("method", METHODS)
def test_a_symmetric_hit_stays_symmetric_except_one_at_a_time(method):
    J, inv_mass, v = _symmetric_hit()
    after, _ = METHODS[method](J, inv_mass, v, 1.0)
    mirror = np.array([after[0], -after[1], after[4], -after[5], after[2], -after[3]])  # y → −y swaps balls 2 and 3
    gap = np.abs(after - mirror).max()
    if method == "sequential":
        assert gap > 1e-3  # the first collision taken breaks the symmetry
    else:
        assert gap < 1e-12
    assert np.all(J @ after >= -1e-12)  # nothing approaches afterwards
